/*
 * subscriber.h - the transport-independent half of a client: what it listens to, what it has
 * been sent, what is queued for it, and the slow-consumer policy that keeps its queue bounded.
 *
 * Owns:    its subscriptions (malloc'd, one per topic) and its client ring (event references).
 * Frees:   lg_subscriber_release() unlinks and frees every subscription, unregisters them in the
 *          hub and drops the queued references. The connection that embeds the subscriber calls
 *          it exactly once, from its close path.
 * Threads: created, used and released only on its worker thread (index `worker`). The
 *          `next`/`prev` links of a subscription belong to that worker's list in
 *          topic->slots[worker] and are touched by no other thread.
 * Replay:  events after a cursor are paged in from the topic's history as the ring drains,
 *          never pushed through the slow-consumer policy: a client that resumes is not slow.
 *          While a subscription pages, its live events are skipped (they are in history too);
 *          the page that reaches the newest event switches it to live delivery under the
 *          topic's lock, so nothing falls between. History evicted before it is paged in
 *          becomes a gap notice.
 * Filters: a subscription with a tag filter (tags.h) is offered every event of its topic; one
 *          its filter refuses is not queued but still advances the subscription's positions
 *          (queued_seq at once, sent_seq once what was queued before it is sent), so cursors,
 *          gaps and resets stay exact and a resume never gets it again nor reports it lost.
 * Renders: what is owed (notices, then events) through its render table (render.h):
 *          which notices and events, in which order and within which budget is decided here;
 *          every byte of wire format is the transport's.
 * Deltas:  a subscriber that asked for deltas (its transport renders them) gets an event of a
 *          document topic as a delta when the event this connection rendered last on that
 *          topic is the one before it (same epoch, seq - 1); otherwise - its first event after
 *          subscribing or resuming, after a gap, a reset, a conflation or anything not
 *          rendered - whole. The choice is one check per event: whether the event has a delta.
 * Bounds:  the ring never holds more than client_queue.max_events events or max_bytes bytes;
 *          a queued event older than max_lag_ms is "slow" too. Past a bound, the policy of the
 *          oldest queued event's topic decides: drop it and owe the client a gap notice
 *          (drop-oldest, conflate), or stop queueing and disconnect the client (disconnect).
 *          Conflate also replaces a queued event that has the same key as a new one.
 *          Every drop, conflation and disconnect is counted in lg_stats and logged (rate-limited).
 */
#ifndef LG_SUBSCRIBER_H
#define LG_SUBSCRIBER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "client_ring.h"
#include "rate.h"
#include "config.h"
#include "cursor.h"
#include "hub.h"
#include "render.h"

struct lg_hub;
struct lg_topic;
struct lg_event;
struct lg_event_ref_run;
struct lg_buf;
struct lg_subscribe_params;
struct lg_filter;
struct lg_interned_filter;

struct lg_subscription {
    /* What a live event's offer reads comes first: one cache line (lg_subscription_prefetch). */
    struct lg_topic *topic;
    struct lg_subscriber *owner;
    uint64_t queued_seq;      /* newest seq queued, dropped or replayed: live events <= it are
                                 duplicates of the replay and are ignored */
    uint64_t replay_next;     /* next seq to page in from history, 0 = caught up (live) */
    uint64_t pushed_seq;      /* newest seq pushed to the client ring */
    struct lg_interned_filter *filter; /* NULL: every event; else only those it admits (its
                                 worker's filter_table.h entry, one reference) */
    uint32_t epoch;           /* topic epoch the positions here refer to */
    bool pending;             /* the topic's remote stream was loading when it subscribed:
                                 the replay is computed on the topic's first event */
    bool pending_from_now;    /* ... and it subscribed without a cursor, */
    int64_t pending_since_ms; /* ... at this wall-clock time */
    struct lg_start pending_start; /* ... and from this start (policy.h) */
    uint32_t listener_index;  /* {worker} its place in topic->slots[worker].listeners */
    struct lg_subscription *next_of_owner;/* the owner's list, in subscribe order */
    uint64_t sent_seq;        /* newest seq the client has been sent (its cursor) */
    uint64_t gap_from;        /* owed gap notice, 0 = none */
    uint64_t gap_to;
    bool reset_owed;          /* owed a reset notice */
    bool listening;           /* registered in the hub (counts toward slots[].subscribers) */
    bool end_owed;            /* the topic was deleted: owed an end notice, then removed */
    uint64_t rendered_seq;    /* seq of the last event rendered on this connection in this
                                 epoch (0 = none): the base a delta needs */
    bool presence_listed;     /* the topic lists it among its members (lg_hub_presence_join) */
    bool presence_resync;     /* a presence batch was replaced before it was written */
    struct lg_presence_batch *presence_owed; /* a reference: the batch to write, NULL = none */
    uint64_t presence_after;  /* batches numbered up to this were made before it listened */
    uint64_t skipped_seq;     /* newest seq the filter kept out: sent_seq moves to it once
                                 nothing older of this topic is queued */
    uint64_t shown_seq;       /* the position the client last saw for this topic: its last
                                 item (event or notice), or the cursor it subscribed with */
};

/* Start fetching what an offer reads of sn, for a caller about to offer it events: a hint.
 * Two lines: an allocation need not start one. */
static inline void lg_subscription_prefetch(const struct lg_subscription *sn)
{
    __builtin_prefetch(&sn->topic);
    __builtin_prefetch(&sn->pending);
}

struct lg_subscriber {
    const struct lg_render_ops *ops; /* renders what is owed (lg_sse_render, lg_ws_render, lg_poll_render) */
    uint32_t worker;
    const struct lg_queue_bounds *bounds;
    struct lg_hub *hub;             /* borrowed: where replay pages come from */
    struct lg_subscription *subs;   /* owner's list */
    uint32_t sub_count;
    struct lg_client_ring ring;
    uint32_t notices_owed;          /* subscriptions with a gap or reset to send */
    bool slow_disconnect;           /* the disconnect policy fired: send the reason, close */
    bool dropping;                  /* inside a drop episode (log once per episode) */
    uint64_t lag_origin_ns;         /* last replay page queued: replayed events age from here */
    uint32_t ends_owed;             /* subscriptions owed an end notice (topic deleted) */
    bool kicked;                    /* slow_disconnect was an operator's kick (admin API) */
    bool deltas;                    /* the client takes deltas (ops->render_delta is set) */
    uint64_t delivered;             /* events rendered for the client (the access line) */
    uint64_t dropped;               /* events dropped or conflated for it */
    uint64_t bytes_out;             /* bytes of events and notices rendered for it */
    char *disconnect_reason;        /* why slow_disconnect fired (malloc'd, freed by release;
                                       read it through lg_subscriber_disconnect_reason()) */
    uint32_t presence_owed;         /* subscriptions owed a presence batch */
    char *member;                   /* who it is in a presence topic: a copy of its token's
                                       "sub", or "client:<id>" (lg_subscriber_set_member);
                                       malloc'd, freed by release */
    size_t member_len;
};

void lg_subscriber_init(struct lg_subscriber *s, const struct lg_render_ops *ops,
                        uint32_t worker, const struct lg_queue_bounds *bounds);

/*
 * Subscribe to topic t from `since`, or when it is NULL from `start` (policy.h). The replay (events after the cursor still in
 * history, or a gap, or a reset) is queued as far as the ring has room and paged in later as
 * it drains. When `listen` is false the hub is not told: only the first page is computed.
 * max_replay caps the first page (a long-poll batch).
 * Return value: LG_HUB_OK (also when s already listens to t), or what lg_hub_subscribe()
 * refused with, or LG_HUB_OOM.
 */
enum lg_hub_status lg_subscriber_add(struct lg_subscriber *s, struct lg_hub *hub,
                                     struct lg_topic *t, const struct lg_cursor_entry *since,
                                     struct lg_start start, bool listen, size_t max_replay);

/* lg_subscriber_add() with a tag filter (NULL: none) for a new subscription, applied to its
 * replay and its live events (a topic s already listens to keeps its own). */
enum lg_hub_status lg_subscriber_add_filtered(struct lg_subscriber *s, struct lg_hub *hub,
                                              struct lg_topic *t,
                                              const struct lg_cursor_entry *since,
                                              struct lg_start start, bool listen,
                                              size_t max_replay, const struct lg_filter *filter);

/* The subscribe loop every transport shares: each topic of p (created if need be) from p's
 * cursor entry for it (none: from p's start, or else the topic's own, topic_rules), in order,
 * through lg_subscriber_add(). It stops at
 * the first failure; the topics before it stay subscribed. */
enum lg_subscribe_status {
    LG_SUBSCRIBE_OK = 0,
    LG_SUBSCRIBE_UNAVAILABLE,    /* a topic could not be created (limits.max_topics, OOM) */
    LG_SUBSCRIBE_INVALID_CURSOR, /* lg_subscriber_add() refused the cursor (or OOM) */
    LG_SUBSCRIBE_TOO_MANY_NEW,   /* the caller's creation budget is spent: no new topic now */
};
struct lg_subscribe_failure {
    const char *problem;          /* static text, for the client */
    const char *topic;            /* INVALID_CURSOR: the topic it happened on (in the params) */
};
/* Subscribe to every topic of p. A topic that does not exist yet takes a token from
 * creations (NULL = no bound), so one connection cannot create topics faster than its owner
 * allows. Stops at the first failure (topics added before it stay: the caller decides). */
enum lg_subscribe_status lg_subscriber_add_all(struct lg_subscriber *s, struct lg_hub *hub,
                                               const struct lg_subscribe_params *p, bool listen,
                                               size_t max_replay, struct lg_rate *creations,
                                               struct lg_subscribe_failure *why);

/* Who s is in presence topics: sub (copied), or when it is NULL "client:<client_id>". The
 * first call decides for the subscriber's life (a later token does not rename it: its
 * subscriptions leave as they joined). Called before subscribing. Return value: 0, or -1 when
 * out of memory. */
int lg_subscriber_set_member(struct lg_subscriber *s, const char *sub, uint64_t client_id);

/* Owe sn the presence batch b (a reference of sn's is taken), unless b was made before sn
 * listened. A batch still owed is replaced and the client is sent a resync notice before the
 * new one (it missed changes). Return value: whether sn now owes b. */
bool lg_subscriber_presence(struct lg_subscriber *s, struct lg_subscription *sn,
                            struct lg_presence_batch *b);

/* Stop listening to t (no-op if not subscribed); queued events of t are dropped. */
void lg_subscriber_remove(struct lg_subscriber *s, struct lg_hub *hub, struct lg_topic *t);

void lg_subscriber_release(struct lg_subscriber *s, struct lg_hub *hub);

/* Why the disconnect policy or a kick fired, for the client (at most 127 bytes; a fixed text
 * when the reason could not be kept). Only meaningful once slow_disconnect is set. */
const char *lg_subscriber_disconnect_reason(const struct lg_subscriber *s);

/* A live event, run->ev, for subscription sn: the subscriber takes the reference it keeps from
 * run (event.h), whose caller holds one of its own. */
void lg_subscriber_offer(struct lg_subscriber *s, struct lg_subscription *sn,
                         struct lg_event_ref_run *run, uint64_t now_ns);

/* Start fetching the fields an offer reads (from bounds to the ring's byte count), for a
 * caller about to offer s events: a hint. */
static inline void lg_subscriber_prefetch(const struct lg_subscriber *s)
{
    __builtin_prefetch(&s->bounds);
    __builtin_prefetch(&s->ring.bytes);
}

/* Whether the caller should write s's queue out before it offers ev to sn (where the socket
 * has room): queueing ev would make a bound fire, or ev begins a new life of sn's topic while
 * events of the old one are still queued, which the offer would void though they were
 * acknowledged before the life ended. */
bool lg_subscriber_should_write_first(const struct lg_subscriber *s,
                                      const struct lg_subscription *sn, const struct lg_event *ev);

/* The topic of sn was deleted: owe the client an end notice for it; once written, the
 * subscription is removed (queued events of that topic are not sent). */
void lg_subscriber_end(struct lg_subscriber *s, struct lg_subscription *sn);

/* An operator disconnects the client: like the slow-consumer disconnect, with this reason
 * (SSE error event "kicked", WebSocket close 4001). */
void lg_subscriber_kick(struct lg_subscriber *s, const char *reason);

/* Apply max_lag_ms to what is queued (called from the worker's periodic tick). */
void lg_subscriber_check_lag(struct lg_subscriber *s, uint64_t now_ns);

/* Some subscription waits for its topic's remote stream to load (its replay is not known). */
bool lg_subscriber_pending(const struct lg_subscriber *s);

/* Anything to send: events, notices, or the slow-consumer reason. */
bool lg_subscriber_has_output(const struct lg_subscriber *s);

struct lg_subscription *lg_subscriber_find(const struct lg_subscriber *s,
                                           const struct lg_topic *t);

/* Append the stream's cursor (one entry per subscription, subscribe order). */
void lg_subscriber_cursor(const struct lg_subscriber *s, struct lg_buf *out);

/* The same with each topic at the position its last item showed (shown_seq): what the id of
 * an item on a multi-topic SSE stream carries, so that only the item's own topic moves in it
 * (a client tells which topic an event is of by the entry that moved). Positions a filter
 * passed show with the topic's next item; resuming from it replays and filters them again. */
void lg_subscriber_shown_cursor(const struct lg_subscriber *s, struct lg_buf *out);

/*
 * Render what is owed, oldest first, through s->ops into out, stopping once out holds
 * max_bytes (at least one item is always rendered): notices, then events. After the
 * slow-consumer policy disconnected s, only ops->render_slow (with sse_retry_ms) is rendered.
 * Rendered events leave the ring and count as delivered; the replay pages in behind them.
 * Return value: number of events rendered.
 */
size_t lg_subscriber_render_stream(struct lg_subscriber *s, struct lg_buf *out, size_t max_bytes,
                                   uint32_t sse_retry_ms);

/* One batch of at most max_events events, framed by ops->render_begin/render_end (the
 * long-poll answer), with no byte budget and no paging behind it. */
size_t lg_subscriber_render_poll(struct lg_subscriber *s, struct lg_buf *out, size_t max_events);

#endif
