/*
 * policy.c - the names of the slow-consumer policies (one table for parsing and printing), and
 * where a start position puts a new subscription.
 */
#include "policy.h"

#include <stddef.h>

const char *const lg_slow_policy_names[] = {
    [LG_SLOW_DROP_OLDEST] = "drop-oldest", [LG_SLOW_DISCONNECT] = "disconnect",
    [LG_SLOW_CONFLATE] = "conflate", NULL,
};

const char *lg_slow_policy_name(enum lg_slow_policy p)
{
    /* The table's entries before its terminating NULL. */
    if ((unsigned)p < sizeof(lg_slow_policy_names) / sizeof(lg_slow_policy_names[0]) - 1)
        return lg_slow_policy_names[p];
    return "unknown";
}

uint64_t lg_start_position(struct lg_start start, uint64_t newest, uint64_t oldest)
{
    switch (start.kind) {
    case LG_START_LATEST:
        return oldest <= newest ? newest - 1 : newest;
    case LG_START_REWIND:
        return newest > start.rewind ? newest - start.rewind : 0;
    default:
        return newest;
    }
}
