/* rate.c - see rate.h. */
#include "rate.h"

void lg_rate_init(struct lg_rate *r, uint32_t per_s, uint32_t burst, uint64_t now_ms)
{
    *r = (struct lg_rate){.tokens_milli = (uint64_t)burst * 1000, .at_ms = now_ms,
                          .per_s = per_s, .burst = burst};
}

bool lg_rate_take(struct lg_rate *r, uint64_t now_ms)
{
    if (r->per_s == 0)
        return true;
    uint64_t full = (uint64_t)r->burst * 1000;
    if (now_ms > r->at_ms) {
        uint64_t add = (now_ms - r->at_ms) * r->per_s; /* ms x tokens/s = milli-tokens */
        r->tokens_milli = full - r->tokens_milli < add ? full : r->tokens_milli + add;
        r->at_ms = now_ms;
    }
    if (r->tokens_milli < 1000)
        return false;
    r->tokens_milli -= 1000;
    return true;
}
