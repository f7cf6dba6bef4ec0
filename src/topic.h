/*
 * topic.h - one topic: its name, epoch, sequence, bounded history, and who listens where.
 *
 * Owns:    the history ring (one reference per retained event) and the per-worker slots.
 * Frees:   lg_topic_destroy() (called only by the hub at shutdown) unrefs the history.
 *          Topics are never freed while the process serves, so a struct lg_topic * may be
 *          held and compared by any thread without a reference count. Their number is
 *          bounded by limits.max_topics.
 * Threads: fields marked {lock} are read and written only with topic->lock held. Fields
 *          marked {worker w} belong to worker thread w alone. Lock order: hub registry lock,
 *          then topic->lock, then a worker inbox lock; never the other way.
 * Bounds:  history holds at most max_events events, max_bytes bytes, none older than
 *          max_age_ms; the oldest is evicted first (counted in lg_stats.history_evicted).
 */
#ifndef LG_TOPIC_H
#define LG_TOPIC_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy.h"

#define LG_TOPIC_NAME_MAX 128

struct lg_event;
struct lg_subscription;

/* The bytes a topic name may hold anywhere, as messages list them. A '$' is also allowed, as
 * the first byte only (reserved names such as "$sys/stats"). */
#define LG_TOPIC_NAME_CHARS "A-Z a-z 0-9 _ - . / : ~"

/* True when c is one of LG_TOPIC_NAME_CHARS (ASCII ranges, whatever the locale). The one
 * definition of a topic name's bytes: topic_rules' patterns use it too, adding '*' and '?'. */
bool lg_topic_name_byte_ok(unsigned char c);

/* Check a topic name against the grammar in docs/protocol.md. Return value: NULL when valid,
 * otherwise a static message saying what is wrong. */
const char *lg_topic_name_problem(const char *name, size_t len);

/* A bounded FIFO of event references, oldest first. Single owner; callers lock. */
struct lg_history {
    struct lg_event **ring;   /* capacity slots, grown by doubling up to bounds.max_events */
    uint32_t capacity;
    uint32_t head;            /* index of the oldest event */
    uint32_t count;
    uint64_t bytes;           /* sum of event->size */
    struct lg_history_bounds bounds;
};

void lg_history_init(struct lg_history *h, struct lg_history_bounds bounds);
void lg_history_release(struct lg_history *h);
/* Append (steals the reference ev), then evict what the bounds no longer allow.
 * Return value: 0, or -1 on OOM (ev is then unref'd and not retained). */
int lg_history_append(struct lg_history *h, struct lg_event *ev, uint64_t now_mono_ns);
/* Evict the oldest event (the history must not be empty). */
void lg_history_evict_oldest(struct lg_history *h);
/* Evict events older than max_age_ms. Returns how many were evicted. */
uint32_t lg_history_expire(struct lg_history *h, uint64_t now_mono_ns);
/* Borrowed: the i-th oldest event (0 = oldest). */
struct lg_event *lg_history_at(const struct lg_history *h, uint32_t i);
/* Lowest retained seq, or 0 when empty. */
uint64_t lg_history_first_seq(const struct lg_history *h);

/* Per-worker view of a topic. */
struct lg_topic_slot {
    uint32_t subscribers;          /* {lock} subscriptions on worker w; > 0 = hand events to w */
    struct lg_subscription *head;  /* {worker w} that worker's subscriptions, intrusive list */
};

struct lg_topic {
    char *name;                    /* immutable */
    size_t name_len;               /* immutable */
    uint32_t epoch;                /* immutable: random per process (memory store) */
    enum lg_slow_policy policy;    /* immutable: from topic_rules at creation */
    pthread_mutex_t lock;
    uint64_t last_seq;             /* {lock} seq of the newest published event, 0 = none */
    struct lg_history history;     /* {lock} */
    struct lg_topic *next_in_bucket; /* {hub registry lock} */
    uint32_t slot_count;           /* immutable: number of workers */
    struct lg_topic_slot slots[];  /* one per worker */
};

struct lg_topic *lg_topic_create(const char *name, size_t len, uint32_t epoch,
                                 enum lg_slow_policy policy, struct lg_history_bounds bounds,
                                 uint32_t workers);
void lg_topic_destroy(struct lg_topic *t);

#endif
