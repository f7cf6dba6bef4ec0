/*
 * worker_timers.c - the one lws timer of a worker's connection deadlines (a held long-poll's
 * timeout, a keep-alive connection's idle and request-head limits, an end deadline): one per
 * connection, in the home's min-heap keyed by the monotonic clock (conn.c arms them), with
 * one lws timer for the earliest. lws' per-connection timer
 * (lws_set_timer_usecs) has two faults in lws 4.1.6: every armed timer is in one sorted list
 * whose insert walks it (O(n) per re-armed held poll), and LWS_SET_TIMER_USEC_CANCEL does not
 * cancel: the macro adds it to the clock, so the timer fires at once and a keep-alive
 * connection whose timer was "cancelled" is closed as idle. Here arming costs O(log n) and
 * cancelling removes the deadline.
 *
 * Owns:    nothing beyond the worker's timer (worker_internal.h); the heap is the home's and
 *          the nodes are the connections' (conn.h `links.deadline`).
 * Threads: the worker's own thread.
 * Bounds:  one node per connection. A connection whose node cannot be pushed (the heap's
 *          array cannot grow) is closed by conn.c: a deadline is never silently dropped.
 */
#include "clock.h"
#include "conn.h"
#include "min_heap.h"
#include "worker_internal.h"

static void on_conn_timers(lws_sorted_usec_list_t *sul);

void lg_worker_deadlines_moved(struct lg_conn_home *home)
{
    struct lg_worker *w = lg_worker_of(home);
    struct lg_heap_node *top = lg_min_heap_top(&home->deadlines);
    if (!top || top->key == w->conn_timer_at)
        return;
    w->conn_timer_at = top->key;
    int64_t in_ms = top->key - (int64_t)lg_mono_ms();
    lws_sul_schedule(w->ctx, 0, &w->conn_timer, on_conn_timers,
                     in_ms > 0 ? (lws_usec_t)in_ms * LWS_US_PER_MS : 1);
}

/* The earliest deadlines passed: each connection's is its own business (lg_conn_deadline()). */
static void on_conn_timers(lws_sorted_usec_list_t *sul)
{
    struct lg_worker *w = lws_container_of(sul, struct lg_worker, conn_timer);
    w->conn_timer_at = 0;
    int64_t now = (int64_t)lg_mono_ms();
    struct lg_heap_node *n;
    while ((n = lg_min_heap_top(&w->home.deadlines)) && n->key <= now) {
        lg_min_heap_remove(&w->home.deadlines, n);
        lg_conn_deadline(lws_container_of(n, struct lg_conn, links.deadline)); /* may re-arm it */
    }
    lg_worker_deadlines_moved(&w->home);
}
