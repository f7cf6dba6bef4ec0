/*
 * worker_timers.c - the deadlines of a worker's connections: a held long-poll's timeout, a
 * keep-alive connection's idle and request-head limits. One per connection, in a min-heap
 * keyed by the monotonic clock, with one lws timer for the earliest. lws' per-connection timer
 * (lws_set_timer_usecs) has two faults in lws 4.1.6: every armed timer is in one sorted list
 * whose insert walks it (O(n) per re-armed held poll), and LWS_SET_TIMER_USEC_CANCEL does not
 * cancel: the macro adds it to the clock, so the timer fires at once and a keep-alive
 * connection whose timer was "cancelled" is closed as idle. Here arming costs O(log n) and
 * cancelling removes the deadline.
 *
 * Owns:    nothing beyond the worker's heap and timer (worker_internal.h); the nodes are the
 *          connections' (conn.h `timer`).
 * Threads: the worker's own thread.
 * Bounds:  one node per connection. A connection whose node cannot be pushed (the heap's
 *          array cannot grow) is closed: a deadline is never silently dropped.
 */
#include "clock.h"
#include "conn.h"
#include "log.h"
#include "min_heap.h"
#include "protocols.h"
#include "worker_internal.h"
#include "worker_services.h"

static void on_conn_timers(lws_sorted_usec_list_t *sul);

/* Point the worker's lws timer at the earliest deadline (a removed one makes it fire early,
 * find nothing due and come back here). */
static void schedule(struct lg_worker *w)
{
    struct lg_heap_node *top = lg_min_heap_top(&w->conn_timers);
    if (!top || top->key == w->conn_timer_at)
        return;
    w->conn_timer_at = top->key;
    int64_t in_ms = top->key - (int64_t)lg_mono_ms();
    lws_sul_schedule(w->ctx, 0, &w->conn_timer, on_conn_timers,
                     in_ms > 0 ? (lws_usec_t)in_ms * LWS_US_PER_MS : 1);
}

static void on_conn_timers(lws_sorted_usec_list_t *sul)
{
    struct lg_worker *w = lws_container_of(sul, struct lg_worker, conn_timer);
    w->conn_timer_at = 0;
    int64_t now = (int64_t)lg_mono_ms();
    struct lg_heap_node *n;
    while ((n = lg_min_heap_top(&w->conn_timers)) && n->key <= now) {
        lg_min_heap_remove(&w->conn_timers, n);
        lg_http_conn_timer(lws_container_of(n, struct lg_conn, timer)); /* may re-arm it */
    }
    schedule(w);
}

void lg_worker_conn_timer(struct lg_worker *w, struct lg_conn *c, uint32_t ms)
{
    if (lg_min_heap_set(&w->conn_timers, &c->timer, (int64_t)lg_mono_ms() + ms) != 0) {
        static struct lg_ratelimit rl;
        lg_log_ratelimited(&rl, 1000, LG_LOG_ERROR,
                           "out of memory arming a connection's deadline: closing it");
        c->close_reason = "error";
        lws_set_timeout(c->wsi, PENDING_TIMEOUT_CLOSE_SEND, LWS_TO_KILL_ASYNC);
        return;
    }
    schedule(w);
}

void lg_worker_conn_timer_cancel(struct lg_worker *w, struct lg_conn *c)
{
    lg_min_heap_remove(&w->conn_timers, &c->timer);
}
