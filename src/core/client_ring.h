/*
 * client_ring.h - one subscriber's bounded queue of event references, oldest first.
 *
 * Owns:    one reference to every live event in it.
 * Frees:   lg_client_ring_release() unrefs what is left.
 * Threads: single owner (the subscriber's worker thread); no locks.
 * Bounds:  the owner enforces max_events and max_bytes before each push (subscriber.c applies
 *          the slow-consumer policy; a push past max_events is refused all the same); physical
 *          slots, a power of two, grow by doubling up to the one at or above max_events, and an
 *          idle subscriber costs no slots at all. Conflation leaves holes (tombstones) that are
 *          compacted when the slots run out.
 */
#ifndef LG_CLIENT_RING_H
#define LG_CLIENT_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct lg_event;
struct lg_topic;

struct lg_client_ring {
    struct lg_event **slots; /* NULL entries are tombstones left by conflation */
    uint32_t capacity;       /* physical slots allocated: 0 or a power of two */
    uint32_t head;           /* physical index of the oldest slot */
    uint32_t used;           /* slots in use, tombstones included */
    uint32_t live;           /* events queued */
    uint64_t bytes;          /* sum of event->size of the queued events */
};

void lg_client_ring_init(struct lg_client_ring *r);
void lg_client_ring_release(struct lg_client_ring *r);

/* Queue ev (steals the reference). The caller has made room: live < max_events.
 * Return value: 0, or -1 on OOM (ev is then unref'd). */
int lg_client_ring_push(struct lg_client_ring *r, struct lg_event *ev, uint32_t max_events);

/* Start fetching the slot the next push fills (a hint: the ring's fields must be at hand). */
static inline void lg_client_ring_prefetch_tail(const struct lg_client_ring *r)
{
    if (r->used < r->capacity)
        __builtin_prefetch(&r->slots[(r->head + r->used) & (r->capacity - 1)], 1);
}

/* Borrowed: the oldest queued event, or NULL when empty. */
struct lg_event *lg_client_ring_oldest(struct lg_client_ring *r);

/* Remove the oldest queued event and return its reference (new to the caller), or NULL. */
struct lg_event *lg_client_ring_pop(struct lg_client_ring *r);

/* Conflation: drop the queued event of topic t with this key, if any. Return value: true if
 * one was dropped. */
bool lg_client_ring_remove_key(struct lg_client_ring *r, const struct lg_topic *t,
                               const char *key);

/* Drop every queued event of topic t (unsubscribe). Returns how many were dropped. */
uint32_t lg_client_ring_remove_topic(struct lg_client_ring *r, const struct lg_topic *t);

#endif
