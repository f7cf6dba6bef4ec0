/*
 * store.h - where a topic's events are kept: the store interface (after Nchan's store
 * modules). The hub keeps the registry and the fan-out; everything about a topic's stream of
 * events - its epoch, the positions it assigns, what it retains, replay after a position,
 * idempotency lookups, expiry - is the store's. Implementations: store_memory.c (the embedded
 * default); a Redis Streams store shares this table (docs/architecture.md, "Stores").
 *
 * Positions. A stream assigns each appended event a position (seq), strictly increasing, and
 * an id "<topic>@<epoch>:<seq>". Positions are dense (1, 2, 3, ...) in both stores (Redis
 * INCRs them in the script that appends), so a live event past a hole tells a subscriber that
 * the events between were lost before it could get them (a gap notice); everything else
 * compares positions and never counts them. The epoch belongs to
 * the stream: a stream recreated under the same name gets a new epoch, so a cursor into its
 * old life resolves to `reset`, while every node reading the same shared stream agrees on it.
 *
 * Append is asynchronous in the interface: the completion receives the new event (or why
 * not) once the store has assigned its position. The memory store completes before append()
 * returns; a remote store completes later, on its own thread, and its caller must not hold
 * locks across that wait. Admission (room in memory and downstream) is the caller's, decided
 * before append(): a store appends what it is given.
 *
 * Owns:    a store owns its streams; a stream owns one reference to every retained event.
 * Frees:   stream_close() frees a stream and unrefs what it retains; destroy() frees the
 *          store after every stream was closed.
 * Threads: a stream is not thread-safe: its caller serialises every call on it (the hub
 *          holds the topic's lock). Different streams may be used from different threads.
 * Bounds:  each stream retains at most its struct lg_history_bounds (events, bytes, age);
 *          the oldest goes first. evict_oldest() lets the caller give memory back sooner.
 */
#ifndef LG_STORE_H
#define LG_STORE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy.h"

struct lg_event;
struct lg_event_fields;
struct lg_loop_guest;
struct lg_store;
struct lg_stream;

enum lg_append_status {
    LG_APPEND_OK = 0,
    LG_APPEND_OOM,        /* the event could not be allocated */
    LG_APPEND_DUPLICATE,  /* remote stores: ev is the event its idempotency key names already
                             (the retry's fields with the original position) */
    LG_APPEND_UNAVAILABLE,/* remote stores: not appended, or not known to be (store down) */
    LG_APPEND_BEHIND,     /* remote stores: not appended: a node that delivers the topic is
                             behind it (backpressure across nodes); retry shortly */
};

/*
 * Completion of an append: ev is borrowed for the call (take a reference to keep it). It only
 * reports: the caller decided before append() whether the event is admitted (the hub's
 * limits), so a store never asks it, and the completion calls nothing on the stream.
 */
typedef void lg_append_done(void *arg, enum lg_append_status status, struct lg_event *ev);

/* A page of retained events, oldest first: references the caller unrefs. */
struct lg_store_page {
    struct lg_event **events; /* malloc'd [count] */
    size_t count;
    bool more;                /* more events after the last one were retained */
};

/* Presence across nodes (remote stores): this node's members of each presence topic, made by
 * the hub once a tick and handed to share_presence(), which owns it until it calls release
 * (once, on any thread). Immutable once handed over, but for `holders`. */
struct lg_presence_share_topic {
    const char *name;             /* the topic's, borrowed (the owner holds it) */
    size_t name_len;
    void *owner;                  /* what the store's presence hook names the topic by */
    uint32_t max_members;         /* the rule's bound: no more are read back */
    const char *const *ids;       /* count NUL-terminated member ids listening on this node */
    uint32_t count;
};
struct lg_presence_share {
    struct lg_presence_share_topic *topics;
    uint32_t count;
    _Atomic uint32_t holders;     /* the store's to use */
    void (*release)(struct lg_presence_share *share); /* the creator's: frees it */
};

struct lg_store_ops {
    const char *name; /* "memory", "redis" */

    /* Open the stream of topic name[0..len) with these retention bounds. deltas: a document
     * topic: each event is made against the one before it (lg_event_fields.delta_base), by
     * the memory store when it appends, by a remote store when it delivers (on every node).
     * Return value: the stream, or NULL (out of memory). */
    struct lg_stream *(*stream_open)(struct lg_store *store, const char *name, size_t len,
                                     struct lg_history_bounds bounds, bool deltas);
    void (*stream_close)(struct lg_stream *s);

    uint32_t (*epoch)(const struct lg_stream *s);
    /* Position of the newest event ever appended (0 = none). */
    uint64_t (*newest)(const struct lg_stream *s);
    /* Position of the oldest retained event, or newest + 1 when nothing is retained. */
    uint64_t (*oldest)(const struct lg_stream *s);

    /* The retained event carrying this idempotency key, borrowed, or NULL. O(1). */
    struct lg_event *(*find_key)(const struct lg_stream *s, const char *key, size_t len);

    /* Append an event with these fields (f->epoch and f->seq are the store's to fill). */
    void (*append)(struct lg_stream *s, struct lg_event_fields *f, lg_append_done *done,
                   void *arg);

    /* Retained events with position > after: at most max, and after the first at most
     * max_bytes. Return value: 0, or -1 (out of memory; page empty). */
    int (*read_after)(const struct lg_stream *s, uint64_t after, size_t max, uint64_t max_bytes,
                      struct lg_store_page *page);

    /* Drop the oldest retained event. Return value: false when nothing was retained. */
    bool (*evict_oldest)(struct lg_stream *s);
    /* Drop events older than the stream's max_age_ms. Return value: how many. */
    uint32_t (*expire)(struct lg_stream *s, uint64_t now_mono_ns);

    /* The admin API's (both may be NULL: a store that cannot say or do it). */
    /* What the stream retains now: events and bytes (event->size summed). */
    void (*retained)(const struct lg_stream *s, uint64_t *events, uint64_t *bytes);
    /* The topic is deleted (DELETE /v1/topics/{topic}): drop every retained event, and make
     * the next stream_open() of the name start a new epoch (cursors into this life resolve to
     * reset). The caller holds the hub's registry lock for writing. */
    void (*drop)(struct lg_stream *s);

    void (*destroy)(struct lg_store *store);

    /* Remote stores only (NULL in the memory store). A remote store's append may be called
     * from any thread without the caller's lock; it completes later on the store's thread,
     * which also delivers every event of every open stream, in position order, through the
     * delivery hooks its creator gave it (store_redis.h). */
    bool remote;
    /* Name the owner (the hub's topic) the delivery hooks are called with for s. */
    void (*bind)(struct lg_stream *s, void *owner);
    /* Local subscribers want s's events (on: the first arrived; off: the last left). A remote
     * store follows the topic's live feed only while they do (and a short linger after), and
     * keeps its mirror only then: what it costs grows with interest, not with open topics.
     * Any thread, under the owner's lock; it only records the wish and wakes the store. */
    void (*listen)(struct lg_stream *s, bool on);
    /* A cursor names a position past the mirror's newest: read the stream again now (the
     * node's copy trails Redis by what is in flight). Any thread. */
    void (*refresh)(struct lg_stream *s);
    /* A worker took events from its inbox: deliveries that found no room may go on. Called
     * by every worker after each take: one atomic load when nothing waits. */
    void (*room)(struct lg_store *store);
    /* Whether epoch, positions and retained events are known yet (loaded from the remote
     * store). */
    bool (*ready)(const struct lg_stream *s);
    /* "up", "down", "connecting", "stopped": for readiness and metrics. */
    const char *(*state)(const struct lg_store *store);
    /* Stop the store's work: pending appends complete as LG_APPEND_UNAVAILABLE. */
    void (*stop)(struct lg_store *store);
    /* Serve guests[0..n) (the control port's daemons) on the store's own thread, so a
     * publish's append and its answer need no other thread (NULL: the store has none).
     * Return value: 0, or -1 (not hosted: the caller hosts them). */
    int (*host)(struct lg_store *store, const struct lg_loop_guest *guests, uint32_t n);
    /* Stop serving them and join that thread (stops the store too, as stop()). */
    void (*unhost)(struct lg_store *store);
    /* Publish this node's members of each topic in share and read every node's back, off the
     * caller's thread (store_redis.h says how); what other nodes list reaches the presence
     * hook. Any thread; never blocks. NULL: the store shares no presence. */
    void (*share_presence)(struct lg_store *store, struct lg_presence_share *share);
};

struct lg_store {
    const struct lg_store_ops *ops;
};

/* Every implementation's stream starts with this. */
struct lg_stream {
    struct lg_store *store;
};

void lg_store_page_release(struct lg_store_page *page);

/* The calls, through the stream's store. */
static inline uint32_t lg_stream_epoch(const struct lg_stream *s)
{
    return s->store->ops->epoch(s);
}
static inline uint64_t lg_stream_newest(const struct lg_stream *s)
{
    return s->store->ops->newest(s);
}
static inline uint64_t lg_stream_oldest(const struct lg_stream *s)
{
    return s->store->ops->oldest(s);
}
static inline struct lg_event *lg_stream_find_key(const struct lg_stream *s, const char *key,
                                                  size_t len)
{
    return s->store->ops->find_key(s, key, len);
}
static inline void lg_stream_append(struct lg_stream *s, struct lg_event_fields *f,
                                    lg_append_done *done, void *arg)
{
    s->store->ops->append(s, f, done, arg);
}
static inline int lg_stream_read_after(const struct lg_stream *s, uint64_t after, size_t max,
                                       uint64_t max_bytes, struct lg_store_page *page)
{
    return s->store->ops->read_after(s, after, max, max_bytes, page);
}
static inline bool lg_stream_evict_oldest(struct lg_stream *s)
{
    return s->store->ops->evict_oldest(s);
}
static inline uint32_t lg_stream_expire(struct lg_stream *s, uint64_t now_mono_ns)
{
    return s->store->ops->expire(s, now_mono_ns);
}
static inline void lg_stream_listen(struct lg_stream *s, bool on)
{
    if (s->store->ops->listen)
        s->store->ops->listen(s, on);
}
static inline void lg_stream_refresh(struct lg_stream *s)
{
    if (s->store->ops->refresh)
        s->store->ops->refresh(s);
}
static inline void lg_store_room(struct lg_store *store)
{
    if (store->ops->room)
        store->ops->room(store);
}
static inline bool lg_stream_ready(const struct lg_stream *s)
{
    return s->store->ops->ready == NULL || s->store->ops->ready(s);
}
static inline void lg_stream_close(struct lg_stream *s)
{
    if (s)
        s->store->ops->stream_close(s);
}

#endif
