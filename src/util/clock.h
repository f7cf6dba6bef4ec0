/*
 * clock.h - the two clocks livegate reads: monotonic for ages and deadlines, realtime only
 * for the publish timestamp shown to clients. Ids and cursors never depend on either.
 *
 * Owns: nothing. Frees: nothing. Threads: any. Bounds: none (reads the clocks).
 */
#ifndef LG_CLOCK_H
#define LG_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t lg_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t lg_mono_ms(void) { return lg_mono_ns() / 1000000u; }

static inline int64_t lg_unix_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

#endif
