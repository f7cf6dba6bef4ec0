/* transport.c - see transport.h: the list of transports. */
#include "transport.h"

const struct lg_transport *const lg_transports[] = {
    &lg_transport_http,
    &lg_transport_sse,
    &lg_transport_poll,
    &lg_transport_ws,
    &lg_transport_hook_wait,
};
const size_t lg_transport_count = sizeof lg_transports / sizeof lg_transports[0];

_Static_assert(sizeof lg_transports / sizeof lg_transports[0] <= LG_TRANSPORT_MAX,
               "LG_TRANSPORT_MAX covers every transport");

size_t lg_transport_index(const struct lg_transport *t)
{
    size_t i = 0;
    while (i + 1 < lg_transport_count && lg_transports[i] != t)
        i++;
    return i;
}

size_t lg_transport_state_max(void)
{
    size_t max = 0;
    for (size_t i = 0; i < lg_transport_count; i++)
        if (lg_transports[i]->state_size > max)
            max = lg_transports[i]->state_size;
    return max;
}
