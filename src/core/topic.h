/*
 * topic.h - one topic: its name, its stream in the store (epoch, positions, retained events:
 * store.h), its slow-consumer policy, and who listens on which worker.
 *
 * Owns:    its stream (closed with the topic), the per-worker slots and its presence state
 *          (destroyed by the hub before it destroys the topic).
 * Frees:   lg_topic_destroy() (called only by the hub: when it collects an idle topic, and at
 *          shutdown) closes the stream. A struct lg_topic * is held only with a reference
 *          (refs): from a lookup, a subscription or an event waiting in an inbox. Events
 *          retained by the stream or queued for a client hold none: a client's queue holds
 *          events only of topics it is subscribed to. Their number is bounded by
 *          limits.max_topics.
 * Threads: fields marked {lock} are read and written only with topic->lock held. Fields
 *          marked {worker w} belong to worker thread w alone. Lock order: hub registry lock,
 *          then topic->lock, then a worker inbox lock; never the other way.
 * Bounds:  what the stream retains is bounded by the topic's history bounds (store.h).
 */
#ifndef LG_TOPIC_H
#define LG_TOPIC_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy.h"
#include "store.h"
#include "topic_name.h"

struct lg_subscription;
struct lg_presence;

/* Per-worker view of a topic. */
struct lg_topic_slot {
    uint32_t subscribers;          /* {lock} subscriptions on worker w; > 0 = hand events to w */
    /* {worker w} that worker's subscriptions, in no particular order: an array, so a fan-out
     * can fetch the ones ahead without following pointers (subscriber.c). Freed when it
     * empties, or by lg_topic_destroy(). */
    struct lg_subscription **listeners;
    uint32_t listener_count;       /* {worker w} */
    uint32_t listener_room;        /* {worker w} slots allocated */
};

struct lg_topic {
    char *name;                    /* immutable */
    size_t name_len;               /* immutable */
    enum lg_slow_policy policy;    /* immutable: from topic_rules at creation */
    struct lg_start start;         /* immutable: from topic_rules at creation; where a
                                      subscription its cursor does not name starts */
    /* The registry's reference, one per subscription, one per inbox entry (inbox.h), one per
     * lookup in progress (lg_hub_find_topic() or lg_hub_topic() until lg_hub_topic_done()).
     * lg_topic_unref() never frees: the hub collects a topic once only the registry holds it
     * (hub.h). */
    _Atomic uint32_t refs;
    pthread_mutex_t lock;
    struct lg_stream *stream;      /* {lock} every call on it; the pointer is immutable */
    uint32_t listeners;            /* {lock} subscriptions over every worker: a remote store
                                      follows the topic's live feed while there are any */
    uint64_t unwanted_since_ns;    /* {lock} monotonic: when listeners last fell to 0 */
    uint64_t remote_wake;          /* {lock} workers a remote store's delivery gave events to,
                                      woken once it lets the topic go (hub_remote.c) */
    struct lg_topic *next_in_bucket; /* {hub registry lock} */
    uint32_t slot_count;           /* immutable: number of workers */
    uint64_t rate_mark;            /* {lock} newest seq when the expiry sweep last saw it */
    uint64_t rate_mark_ns;         /* {lock} ... and when (monotonic; 0 = never) */
    uint64_t publish_rate;         /* {lock} events per second between its last two sweeps */
    _Atomic bool deleted;          /* DELETE /v1/topics/{topic}: unlinked from the registry */
    struct lg_presence *presence;  /* {lock} its contents; the pointer is immutable: NULL
                                      unless a rule asks for presence or occupancy notices
                                      (presence.h) */
    struct lg_topic *next_reporting; /* {hub presence lock} the hub's list of topics with
                                        presence changes to report (hub_presence.c) */
    bool reporting;                /* {hub presence lock} on that list */
    struct lg_topic *next_sharing; /* {hub presence lock} the hub's list of topics whose
                                      members go to the remote store each tick */
    bool sharing;                  /* {hub presence lock} on that list */
    struct lg_topic_slot slots[];  /* one per worker */
};

static inline void lg_topic_ref(struct lg_topic *t)
{
    atomic_fetch_add_explicit(&t->refs, 1, memory_order_relaxed);
}

static inline void lg_topic_unref(struct lg_topic *t)
{
    atomic_fetch_sub_explicit(&t->refs, 1, memory_order_release);
}

/* Takes stream (closed with the topic, or at once when creation fails). refs starts at 1, the
 * registry's. */
struct lg_topic *lg_topic_create(const char *name, size_t len, enum lg_slow_policy policy,
                                 struct lg_stream *stream, uint32_t workers);
void lg_topic_destroy(struct lg_topic *t);

#endif
