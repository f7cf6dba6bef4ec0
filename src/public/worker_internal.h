/*
 * worker_internal.h - the worker's state, shared by the four files that implement a worker:
 * worker.c (the loop, the lws context, accepting, drain, tick, life cycle), worker_timers.c
 * (the lws timer of the connections' deadlines), worker_sweep.c (taking events from the
 * inbox, offering them to subscribers, writing connections out) and worker_admin.c
 * (answering the admin API's calls, worker_call.h). No other file includes it: everything else
 * sees a worker through worker.h, and its connections through their home (conn.h).
 *
 * Owns/Frees/Threads/Bounds: as worker.h says. Every field is the worker thread's, except the
 * atomics the app thread sets (home.drain_requested, stop_requested) and reads (drained).
 */
#ifndef LG_WORKER_INTERNAL_H
#define LG_WORKER_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include <ev.h>
#include <libwebsockets.h>

#include "conn.h"
#include "inbox.h"
#include "ev_host.h"
#include "min_heap.h"
#include "worker.h"

struct lg_worker {
    struct lg_worker_shared shared;
    struct lg_conn_home home;           /* what its connections share (conn.h); index, lists */
    struct lg_acceptor *acceptor;       /* listening socket and unclassified sockets */
    struct lws_protocols protocols[4];  /* ws, raw http, internal, terminator */
    struct ev_loop *loop;               /* this worker's epoll loop; lws runs on it (foreign) */
    ev_check after_events;              /* end of each loop iteration: drained? stop? */
    ev_async woken;                     /* the hub's and the app's wake-up (any thread) */
    _Atomic pthread_t loop_thread;      /* set by the worker thread before its loop runs */
    bool invoking;                      /* the loop is running callbacks (this thread only) */
    bool swept_this_pass;               /* a sweep ran since the loop last waited: a wake from
                                           this thread waits for the next pass */
    struct lg_ev_host guest;            /* the control port's daemon served here (ev_host.h;
                                           not started: none) */
    struct lws_context *ctx;
    struct lws_vhost *vhost;
    struct lws *listen_wsi;
    struct lws *classify_wsi;
    pthread_t thread;
    bool thread_started;
    struct lg_inbox inbox;
    _Atomic bool stop_requested;        /* set by the app thread */
    _Atomic bool drained;               /* set by this worker: no client left */
    size_t take_credit;                 /* events (x1024) the sweep may take from the inbox */
    bool long_round;                    /* the round under way is long: the inbox admits fewer */
    uint32_t fresh_writes_per_event;    /* writes the last take added to the dirty queue, per
                                           event taken */
    bool narrow_events;                 /* the last take's topics have few subscribers here */
    lws_sorted_usec_list_t conn_timer;  /* fires at the earliest of home.deadlines */
    int64_t conn_timer_at;              /* monotonic ms conn_timer is set for; 0 = none */
    lws_sorted_usec_list_t tick;
    lws_sorted_usec_list_t accept_resume; /* the listener paused at EMFILE comes back */
    ev_timer drain_step;                /* windowed drain: fires the connections due (an
                                           ev_timer: a lws sul scheduled outside lws' own
                                           callbacks waits for lws' next timer) */
    uint64_t drain_end_ms;              /* windowed drain: every connection fired by then */
    uint64_t drain_step_ms;             /* windowed drain: connections due up to here fired */
    uint64_t drain_seed;                /* windowed drain: the mix of each connection's moment */
    uint64_t jitter_state;              /* xorshift64 for drain moments (this thread only) */
};

/* Wake worker arg from any thread (the hub's wake function): schedule on_woken() on its
 * loop. It never runs the worker's work itself, whoever calls it: from another thread it is
 * an ev_async_send(); from the worker's own callbacks (a publish on its control-port daemon)
 * the watcher is fed to the callbacks running now, once a pass, so no system call is spent
 * on it (worker_sweep.c). */
void lg_worker_wake(void *arg);
/* Take events from the inbox and write the connections given output: one round of writes,
 * then it wakes itself if there is more (worker_sweep.c). */
void lg_worker_sweep(struct lg_worker *w);
/* Answer every call waiting in this worker's mailbox (worker_admin.c). */
void lg_worker_answer_calls(struct lg_worker *w);
/* Point the worker's lws timer at the earliest connection deadline (worker_timers.c; the
 * home's deadlines_moved). */
void lg_worker_deadlines_moved(struct lg_conn_home *home);
/* The worker whose home this is. */
struct lg_worker *lg_worker_of(struct lg_conn_home *home);

#endif
