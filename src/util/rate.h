/*
 * rate.h - a token bucket: at most `burst` at once, refilled at `per_s` a second. Used for
 * what one client may do per second (new topics, WebSocket control messages).
 *
 * Owns: nothing (a value inside its user). Frees: nothing.
 * Threads: its owner's only (a connection's worker). Bounds: burst tokens.
 */
#ifndef LG_RATE_H
#define LG_RATE_H

#include <stdbool.h>
#include <stdint.h>

struct lg_rate {
    uint64_t tokens_milli; /* tokens x 1000 */
    uint64_t at_ms;        /* monotonic time of the last refill */
    uint32_t per_s;        /* 0 = no bound */
    uint32_t burst;
};

/* Start full. per_s 0: every take succeeds. */
void lg_rate_init(struct lg_rate *r, uint32_t per_s, uint32_t burst, uint64_t now_ms);
/* Take one token. Return value: false when the bucket is empty (nothing taken). */
bool lg_rate_take(struct lg_rate *r, uint64_t now_ms);

#endif
