/*
 * control_deadline.h - a deadline for every control-port request, which libmicrohttpd lacks:
 * its idle timeout restarts on every byte, so a client that drips a byte now and then keeps a
 * connection (and, 512 times over, the whole port) for good.
 *
 * Each connection gets a deadline when it opens (its first head must be in within
 * limits.request_timeout_ms), a new one when its head is in (the body and any overload hold:
 * limits.request_timeout_ms + limits.publish_wait_ms; again each time a held batch makes
 * progress, so the bound is on each wait, not on the whole batch) and a new one when its
 * request is answered (idle for limits.control_idle_timeout_ms, then the next head as above).
 * A sweep once a second shuts down the socket of every connection past its deadline;
 * libmicrohttpd then reads end-of-file and closes the connection itself, through its usual
 * path.
 *
 * Owns:    one entry per open control connection (malloc'd at MHD's "started" notification,
 *          hung on its socket context, freed at its "closed" notification) on one list.
 * Frees:   lg_ctl_deadlines_destroy() frees the table; every daemon must be stopped first, so
 *          every entry has been closed (a leftover entry is freed too).
 * Threads: the daemons (on the workers' threads) open, move and close entries; the main
 *          thread sweeps. One mutex guards the list. shutdown(2) runs under it on purpose: MHD
 *          closes the descriptor only after the "closed" notification, which takes the same
 *          mutex, so a swept descriptor is never one the kernel has handed to a newer socket.
 *          shutdown() does not block.
 * Bounds:  entries: one per control connection (limits.control_max_connections). An entry
 *          that cannot be allocated leaves that connection without a deadline (logged).
 */
#ifndef LG_CONTROL_DEADLINE_H
#define LG_CONTROL_DEADLINE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct lg_ctl_deadlines;
struct lg_ctl_deadline;

struct lg_ctl_deadline_limits {
    uint32_t head_ms; /* a request head must be in this long after the connection is idle */
    /* the body, and an overload hold, head_ms + this long after the head: read at each head,
     * as a reload may change it (live_limits.h; it outlives the table) */
    const _Atomic uint32_t *publish_wait_ms;
    uint32_t idle_ms; /* a connection may sit idle this long between requests */
};

struct lg_ctl_deadlines *lg_ctl_deadlines_create(struct lg_ctl_deadline_limits limits);
void lg_ctl_deadlines_destroy(struct lg_ctl_deadlines *d);

/* A connection opened (fd is its socket): its first head is due. NULL when out of memory. */
struct lg_ctl_deadline *lg_ctl_deadline_open(struct lg_ctl_deadlines *d, int fd,
                                             uint64_t now_ms);
/* Its head is in: the body is due. */
void lg_ctl_deadline_head_in(struct lg_ctl_deadlines *d, struct lg_ctl_deadline *e,
                             uint64_t now_ms);
/* Its request was answered: idle, then the next head is due. */
void lg_ctl_deadline_answered(struct lg_ctl_deadlines *d, struct lg_ctl_deadline *e,
                              uint64_t now_ms);
/* The connection closed: forget and free e. */
void lg_ctl_deadline_close(struct lg_ctl_deadlines *d, struct lg_ctl_deadline *e);

/* Shut down every connection past its deadline (once each); returns how many were. */
size_t lg_ctl_deadlines_sweep(struct lg_ctl_deadlines *d, uint64_t now_ms);

#endif
