/*
 * worker_sweep.c - a worker's fan-out: events taken from its inbox are offered to the
 * subscriptions of their topic on this worker, and the connections given output are written
 * round-robin, straight to each socket that has room (see worker.h, DESIGN).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "clock.h"
#include "conn.h"
#include "event.h"
#include "hub.h"
#include "stats.h"
#include "topic.h"
#include "worker_internal.h"

#define WRITES_PER_TAKE 32   /* connections written between two looks at the inbox */
#define EVENTS_PER_ROUND 32  /* events admitted per round of writes at saturation */
#define EVENTS_PER_TAKE 4    /* events taken at once while a round is under way and more wait */
/* A long round: more connections to write than this. A subscriber of one waits for the round,
 * and an event also waits for those ahead of it in the inbox: there the inbox admits one
 * take's worth (EVENTS_PER_TAKE), so an event waits for at most one take ahead of it. A short
 * round admits limits.worker_inbox_events: its waits are short, and publishers to many
 * topics need the room to stay ahead of the worker. */
#define LONG_ROUND_WRITES 2048
/* Writes kept due while events are narrow (their topics have fewer subscribers here than
 * this): one slice of writes, refilled by the take before each slice, so the writer does not
 * wait for events and an accepted event is written within about two slices. */
#define NARROW_BACKLOG WRITES_PER_TAKE
/* How many listeners ahead a fan-out fetches each thing a listener's offer touches: each
 * fetch reads what an earlier one brought, a few listeners before. */
#define FETCH_SUBSCRIPTION 8
#define FETCH_SUBSCRIBER 4
#define FETCH_QUEUE_SLOT 2

static struct lg_conn *conn_of(struct lg_subscriber *s)
{
    return (struct lg_conn *)((char *)s - offsetof(struct lg_conn, sub));
}

static void mark_dirty(struct lg_worker *w, struct lg_conn *c)
{
    if (!lg_dlist_contains(&w->home.dirty, &c->links.dirty))
        lg_dlist_push_tail(&w->home.dirty, &c->links.dirty);
}

/* Offer a run of events of one topic to this worker's subscribers of it, each subscriber
 * visited once for the whole run: a subscriber is a cache miss of its own, paid once per run
 * rather than once per event. A subscriber whose queue an event would overflow is written
 * out first when its socket has room: a client that keeps up is never judged slow because
 * events arrive faster than the worker reaches it. So is one with events of a topic's old
 * life still queued when the new life's first event comes: they were acknowledged, and the
 * offer would void them. */
static void dispatch_run(struct lg_worker *w, const struct lg_inbox_entry *run, size_t n,
                         uint64_t now_ns)
{
    struct lg_event_ref_run refs[EVENTS_PER_ROUND]; /* each entry holds its event meanwhile */
    for (size_t i = 0; i < n; i++)
        refs[i] = lg_event_ref_run_begin(run[i].event);
    /* Each subscriber is a few cache misses (its subscription, its fields and dirty link, its
     * queue's next slot): they are fetched ahead, each a step after what it is found from,
     * so no load waits for one just asked for. Nothing here unlinks a listener: a write that
     * fails closes its connection later (lg_conn_close_soon()). */
    const struct lg_topic_slot *slot = &run[0].topic->slots[w->home.index];
    struct lg_subscription *const *listeners = slot->listeners;
    uint32_t count = slot->listener_count;
    for (uint32_t k = 0; k < count; k++) {
        struct lg_subscription *const *at = &listeners[k];
        if (k + FETCH_SUBSCRIPTION < count)
            lg_subscription_prefetch(at[FETCH_SUBSCRIPTION]);
        if (k + FETCH_SUBSCRIBER < count) {
            struct lg_subscriber *ahead = at[FETCH_SUBSCRIBER]->owner;
            lg_subscriber_prefetch(ahead);
            __builtin_prefetch(&conn_of(ahead)->links.dirty); /* mark_dirty() */
        }
        if (k + FETCH_QUEUE_SLOT < count)
            lg_client_ring_prefetch_tail(&at[FETCH_QUEUE_SLOT]->owner->ring);
        struct lg_subscription *sn = *at;
        struct lg_subscriber *s = sn->owner;
        for (size_t i = 0; i < n; i++) {
            if (lg_subscriber_should_write_first(s, sn, refs[i].ev))
                lg_conn_write_now(conn_of(s));
            lg_subscriber_offer(s, sn, &refs[i], now_ns);
        }
        if (lg_subscriber_has_output(s))
            mark_dirty(w, conn_of(s));
    }
    for (size_t i = 0; i < n; i++)
        lg_event_ref_run_end(&refs[i]);
}

/* Set the inbox's admission for the round under way (see LONG_ROUND_WRITES). */
static void admit_for_round(struct lg_worker *w)
{
    bool long_round = w->home.dirty.count > LONG_ROUND_WRITES;
    if (long_round != w->long_round) {
        w->long_round = long_round;
        lg_inbox_admit(&w->inbox, long_round ? EVENTS_PER_TAKE : SIZE_MAX);
    }
}

/*
 * Narrow events (a few subscribers each, as on per-user topics) gain little from a long round:
 * events of different topics share no write, and each new write queues behind every write
 * already due. So they are taken only while fewer than NARROW_BACKLOG writes are due, and only
 * as many as the writes they add leave room for (events of one topic add few once its
 * subscribers are due, and still share writes); the rest wait in the inbox, whose bound then
 * holds their publishers: the pressure goes to whoever causes it.
 */
static size_t narrow_allowance(struct lg_worker *w)
{
    size_t due = w->home.dirty.count;
    if (due >= NARROW_BACKLOG)
        return 0;
    size_t per_event = w->fresh_writes_per_event ? w->fresh_writes_per_event : 1;
    size_t room = (NARROW_BACKLOG - due) / per_event + 1;
    return room < EVENTS_PER_ROUND ? room : EVENTS_PER_ROUND;
}

/*
 * How many events to take from the inbox before the next WRITES_PER_TAKE writes. The worker
 * writes its dirty connections in turn; taking events a few at a time while it goes means an
 * event reaches every subscriber within one round of writes (a round-robin sweep), not after
 * the round in progress and then part of the next. EVENTS_PER_ROUND events are admitted per
 * round, spread over it in credits (1/1024 event units), so each write still carries about
 * that many events at saturation. A worker with nothing to write takes a round's worth at once.
 */
static size_t take_allowance(struct lg_worker *w)
{
    admit_for_round(w);
    if (w->narrow_events)
        return narrow_allowance(w);
    if (w->home.dirty.count == 0) {
        w->take_credit = 0;
        return EVENTS_PER_ROUND;
    }
    size_t round = w->home.dirty.count > WRITES_PER_TAKE ? w->home.dirty.count : WRITES_PER_TAKE;
    w->take_credit += EVENTS_PER_ROUND * WRITES_PER_TAKE * 1024 / round;
    if (w->take_credit > EVENTS_PER_ROUND * 1024)
        w->take_credit = EVENTS_PER_ROUND * 1024;
    size_t allowed = w->take_credit / 1024;
    /* Events are waiting (the publishers are ahead): take several at once when the credit
     * covers them, so each subscriber is visited once for all of them. */
    if (allowed < EVENTS_PER_TAKE && lg_inbox_backlog(&w->inbox) >= EVENTS_PER_TAKE)
        return 0;
    return allowed;
}

static void spend_credit(struct lg_worker *w, size_t taken)
{
    size_t cost = taken * 1024;
    w->take_credit = cost < w->take_credit ? w->take_credit - cost : 0;
}

/* What the last take was: `taken` events, `heard` runs of one topic each with subscribers
 * here, `listeners` of them in all, adding `fresh` writes to the dirty queue. A take of
 * events nobody here hears (the gateway's own figures, say) says nothing of the next. */
static void note_take(struct lg_worker *w, size_t taken, size_t heard, size_t listeners,
                      size_t fresh)
{
    w->fresh_writes_per_event = (uint32_t)((fresh + taken - 1) / taken);
    if (heard)
        w->narrow_events = listeners < heard * NARROW_BACKLOG;
}

/* Take and dispatch up to `max` (at most EVENTS_PER_ROUND) events. Return value: how many. */
static size_t take_events(struct lg_worker *w, size_t max)
{
    struct lg_inbox_entry *batch;
    size_t n = lg_inbox_take_upto(&w->inbox, max, &batch);
    if (n == 0)
        return 0;
    uint64_t now = lg_mono_ns();
    size_t due_before = w->home.dirty.count, heard = 0, listeners = 0;
    for (size_t i = 0, end; i < n; i = end) {
        for (end = i + 1; end < n && batch[end].topic == batch[i].topic; end++) {
        }
        uint32_t here = batch[i].topic->slots[w->home.index].listener_count;
        heard += here > 0;
        listeners += here;
        dispatch_run(w, &batch[i], end - i, now);
    }
    size_t due_after = w->home.dirty.count;
    note_take(w, n, heard, listeners, due_after > due_before ? due_after - due_before : 0);
    /* The events are in their subscribers' queues now: room for the publishers. The pace of
     * the takes is what paces them, and at most limits.worker_inbox_events events wait here. */
    lg_inbox_done(&w->inbox, batch, n);
    lg_hub_worker_done(w->shared.hub, w->home.index);
    return n;
}

/* Write the next `max` connections of the dirty queue, in one batch where batched_writes is
 * on. Return value: how many. */
static size_t write_dirty(struct lg_worker *w, size_t max)
{
    size_t n = 0;
    while (n < max && w->home.dirty.first) {
        struct lg_conn *c = lg_dlist_entry(w->home.dirty.first, struct lg_conn, links.dirty);
        lg_dlist_remove(&w->home.dirty, &c->links.dirty);
        lg_conn_write_batched(c);
        n++;
    }
    lg_conn_flush_batch(&w->home);
    return n;
}

/*
 * Wake the worker from any thread: it only schedules. From another thread libev's async
 * watcher is one eventfd write (none while a wake-up is already pending) and calls on_woken()
 * on the worker's thread: cheaper than lws_cancel_service(), whose wake-up passes through lws'
 * pipe handling, a callback to every protocol and an extra epoll_wait for lws' idle watcher.
 * From the worker's own callbacks (its control-port daemon publishing) an ev_async_send()
 * would cost an epoll_wait that returns at once and finds nothing; the watcher is fed to the
 * callbacks libev is running instead, which run it before the loop next waits. Once a pass:
 * a wake after a sweep of this pass (a publish answered between the slices of a round, or
 * after the round took events) goes to the next pass, so the loop still polls between rounds.
 */
void lg_worker_wake(void *arg)
{
    struct lg_worker *w = arg;
    bool own_thread =
        pthread_equal(pthread_self(), atomic_load_explicit(&w->loop_thread, memory_order_relaxed));
    if (own_thread && w->invoking && !w->swept_this_pass)
        ev_feed_event(w->loop, &w->woken, EV_ASYNC);
    else
        ev_async_send(w->loop, &w->woken);
}

/* Take events and write connections in turn until both are done, or one round of writes has
 * been made (then the worker wakes itself, so reads, accepts and timers get their turn). */
void lg_worker_sweep(struct lg_worker *w)
{
    size_t round = w->home.dirty.count + WRITES_PER_TAKE;
    size_t written = 0;
    for (;;) {
        size_t allowed = take_allowance(w);
        size_t taken = allowed ? take_events(w, allowed) : 0;
        spend_credit(w, taken);
        size_t wrote = write_dirty(w, WRITES_PER_TAKE);
        written += wrote;
        /* A long round: answer the publishers meanwhile, so their next events join this round
         * (a write then carries several) rather than wait for it to end. */
        if (wrote == WRITES_PER_TAKE && w->home.dirty.first)
            lg_ev_host_serve(&w->guest);
        if (taken == 0 && wrote == 0)
            return; /* nothing to write means a full allowance: the inbox is empty too */
        if (written >= round) {
            if (w->home.dirty.first || !lg_inbox_empty(&w->inbox))
                ev_async_send(w->loop, &w->woken); /* after the other descriptors' turn */
            return;
        }
    }
}

