/*
 * ev_host.h - the host side of loop_guest.h on a libev loop: watches the guest's descriptor,
 * serves it when it is readable, in the next pass when it said work is left, once a second
 * (its own timeouts) and soon after anyone called the host's wake(); after serving a request
 * that came back to back it keeps the loop from sleeping for the guest's busy_poll_us (an idle
 * watcher: the loop polls without blocking while it is active). The workers host the
 * control port's daemons this way (worker.h), or with Redis the store's thread does
 * (redis_bridge.h). A zeroed struct is a host not started.
 *
 * Owns:    nothing; a struct lg_ev_host is a value inside its owner.
 * Frees:   nothing; the owner stops it on the loop's thread before freeing it.
 * Threads: lg_ev_host_start() and lg_ev_host_stop() on the loop's thread (or before the loop
 *          runs); the wake() given to the guest from any thread.
 * Bounds:  one serve() per loop pass at most for work left over, so other watchers interleave;
 *          a busy poll lasts busy_poll_us after the last request served, then the loop sleeps.
 */
#ifndef LG_EV_HOST_H
#define LG_EV_HOST_H

#include <ev.h>
#include <pthread.h>
#include <stdatomic.h>

#include "loop_guest.h"

struct lg_ev_host {
    struct ev_loop *loop;  /* NULL: not started */
    struct lg_loop_guest guest;
    ev_io ready;     /* the guest's descriptor is readable */
    ev_timer again;  /* serve() said work is left: the next pass */
    ev_timer tick;   /* once a second: the guest's own timeouts */
    ev_async woken;  /* wake(): a connection resumed */
    ev_idle busy;    /* active: the loop polls without sleeping, until busy_until */
    ev_tstamp served_at;  /* when serve() last returned for a readable descriptor */
    ev_tstamp busy_until;
    _Atomic pthread_t thread; /* the loop's: set by lg_ev_host_start(), read by wake() */
};

/* Start serving guest on loop and tell the guest how to wake it (guest->hosted). On the loop's
 * thread. */
void lg_ev_host_start(struct lg_ev_host *h, struct ev_loop *loop,
                      const struct lg_loop_guest *guest);

/* Serve now, on the loop's thread, where the host has a moment of its own for it (a worker
 * between slices of a long round of writes, or on its way out). Nothing when not started. */
void lg_ev_host_serve(struct lg_ev_host *h);

/* Stop every watcher: serve() is not called again. Nothing when not started. */
void lg_ev_host_stop(struct lg_ev_host *h);

#endif
