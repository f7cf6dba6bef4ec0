/*
 * history.h - a bounded FIFO of event references, oldest first: the memory store's retention.
 *
 * Owns:    one reference to every event it holds, and its ring (grown by doubling from 16 up
 *          to bounds.max_events, so a quiet topic never pays for a busy one's slots).
 * Frees:   lg_history_release() unrefs every event and frees the ring.
 * Threads: none of its own: a single owner, who serialises every call (the hub holds the
 *          topic's lock).
 * Bounds:  at most max_events events and max_bytes bytes (the newest event always stays),
 *          none older than max_age_ms; the oldest is evicted first, counted in
 *          lg_stats.history_evicted, and reported to on_evict (the store's indexes).
 */
#ifndef LG_HISTORY_H
#define LG_HISTORY_H

#include <stdint.h>

#include "policy.h"
#include "store.h"

struct lg_event;

struct lg_history {
    struct lg_event **ring;   /* capacity slots, grown by doubling up to bounds.max_events */
    uint32_t capacity;
    uint32_t head;            /* index of the oldest event */
    uint32_t count;
    uint64_t bytes;           /* sum of event->size */
    struct lg_history_bounds bounds;
    /* Told about every event evicted, just before its reference is dropped (may be NULL). */
    void (*on_evict)(void *arg, const struct lg_event *ev);
    void *on_evict_arg;
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
/* A store's page of the events from index i on: at most max events and max_bytes (one event
 * at least), each referenced once for the caller. Return value: 0, or -1 out of memory (an
 * empty page). */
int lg_history_page(const struct lg_history *h, uint32_t i, size_t max, uint64_t max_bytes,
                    struct lg_store_page *page);

#endif
