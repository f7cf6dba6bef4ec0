/*
 * loop_guest.h - a service that runs on another module's event loop: the control port's
 * libmicrohttpd daemons (control.h) are each served by one worker's loop (worker.h), or with
 * the Redis store by its thread (ev_host.h, redis_bridge.h), so a publish needs no second
 * thread, no cross-thread wake-up and no context switch before it is answered.
 *
 * The guest gives a descriptor that is readable when new work arrives (libmicrohttpd's epoll
 * descriptor: its connections and its listening socket) and a function that does the work
 * that is ready without blocking; the host gives back a wake-up for what the descriptor does
 * not announce (a connection resumed from another thread). The host watches the descriptor
 * and calls serve():
 *   - when the descriptor is readable;
 *   - once a tick (the guest's own timeouts);
 *   - between slices of a long round of writes, so a request that arrived meanwhile is not
 *     kept waiting for the whole round (worker_sweep.c);
 *   - in its next pass, after the other descriptors had their turn, when serve() said it has
 *     work left;
 *   - soon after anyone called the host's wake().
 *
 * A guest that serves request/response traffic may ask for a busy poll (busy_poll_us): a
 * request that arrives within that long of the last serve() is the next of a client sending
 * back to back, so after serving it the host polls the descriptor for that long before its
 * loop sleeps. The next request is then read without a sleep and a wake-up, which on a
 * virtual machine cost more than the request itself; traffic with gaps longer than the
 * window never triggers it, so it costs nothing there.
 *
 * Owns:    nothing; both structs are values, copied by the one that keeps them.
 * Frees:   the guest's owner frees what arg points to, after the host's thread was joined.
 * Threads: serve() runs on the host's thread only, never concurrently with itself.
 * Bounds:  serve() does a bounded amount of work per call (the guest says how much).
 */
#ifndef LG_LOOP_GUEST_H
#define LG_LOOP_GUEST_H

#include <stdbool.h>
#include <stdint.h>

/* The host's side: wake() makes the host call serve() soon, from any thread (the guest's
 * descriptor does not announce everything: libmicrohttpd 0.9.75 in external mode has no
 * channel of its own for a connection resumed from another thread). */
struct lg_loop_host {
    void (*wake)(void *arg);
    void *arg;
};

struct lg_loop_guest {
    int fd;                     /* readable = serve() has work; -1 = no guest */
    /* Called once by the host before its loop runs: how to wake it. */
    void (*hosted)(void *arg, const struct lg_loop_host *host);
    /* Non-blocking: do a bounded part of what is ready. Return value: true when work is left
     * that the descriptor may not announce again (libmicrohttpd keeps edge-triggered
     * readiness to itself); the host then calls serve() again in its next pass. */
    bool (*serve)(void *arg);
    void *arg;
    uint32_t busy_poll_us;      /* 0: never busy-poll (see above) */
};

#endif
