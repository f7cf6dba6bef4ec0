#include "client_ring.h"

#include <stdlib.h>
#include <string.h>

#include "event.h"

#define RING_FIRST_CAPACITY 8 /* a power of two, as every capacity */

void lg_client_ring_init(struct lg_client_ring *r) { memset(r, 0, sizeof *r); }

static struct lg_event **slot_at(struct lg_client_ring *r, uint32_t i)
{
    return &r->slots[(r->head + i) & (r->capacity - 1)];
}

/* The power of two at or above n: the slots are indexed with a mask, not a division (two per
 * delivery, on the fan-out's path). */
static uint32_t slots_for(uint32_t n)
{
    uint32_t c = 1;
    while (c < n)
        c *= 2;
    return c;
}

void lg_client_ring_release(struct lg_client_ring *r)
{
    for (uint32_t i = 0; i < r->used; i++)
        if (*slot_at(r, i))
            lg_event_unref(slot_at(r, i));
    free(r->slots);
    lg_client_ring_init(r);
}

/* Move live entries to a fresh array of new_capacity slots, dropping tombstones. */
static int relayout(struct lg_client_ring *r, uint32_t new_capacity)
{
    struct lg_event **slots = malloc((size_t)new_capacity * sizeof *slots);
    if (!slots)
        return -1;
    uint32_t n = 0;
    for (uint32_t i = 0; i < r->used; i++)
        if (*slot_at(r, i))
            slots[n++] = *slot_at(r, i);
    free(r->slots);
    r->slots = slots;
    r->capacity = new_capacity;
    r->head = 0;
    r->used = n;
    return 0;
}

int lg_client_ring_push(struct lg_client_ring *r, struct lg_event *ev, uint32_t max_events)
{
    if (r->live >= max_events) {
        lg_event_unref(&ev);
        return -1;
    }
    if (r->used == r->capacity) {
        uint32_t want = r->capacity ? r->capacity * 2 : RING_FIRST_CAPACITY;
        if (want > slots_for(max_events))
            want = slots_for(max_events);
        if (r->live < r->used && want <= r->capacity)
            want = r->capacity; /* full of tombstones: compacting is enough */
        if (want < r->live + 1 || relayout(r, want) != 0) {
            lg_event_unref(&ev);
            return -1;
        }
    }
    *slot_at(r, r->used) = ev;
    r->used++;
    r->live++;
    r->bytes += ev->size;
    return 0;
}

static void skip_tombstones(struct lg_client_ring *r)
{
    while (r->used && !r->slots[r->head]) {
        r->head = (r->head + 1) & (r->capacity - 1);
        r->used--;
    }
}

struct lg_event *lg_client_ring_oldest(struct lg_client_ring *r)
{
    skip_tombstones(r);
    return r->used ? r->slots[r->head] : NULL;
}

struct lg_event *lg_client_ring_pop(struct lg_client_ring *r)
{
    struct lg_event *ev = lg_client_ring_oldest(r);
    if (!ev)
        return NULL;
    r->slots[r->head] = NULL;
    r->head = (r->head + 1) & (r->capacity - 1);
    r->used--;
    r->live--;
    r->bytes -= ev->size;
    if (r->live == 0) {
        /* An idle subscriber gives its slots back: bytes per idle connection stay small. */
        free(r->slots);
        lg_client_ring_init(r);
    }
    return ev;
}

static void drop_at(struct lg_client_ring *r, uint32_t i)
{
    struct lg_event **slot = slot_at(r, i);
    r->live--;
    r->bytes -= (*slot)->size;
    lg_event_unref(slot);
}

bool lg_client_ring_remove_key(struct lg_client_ring *r, const struct lg_topic *t,
                               const char *key)
{
    for (uint32_t i = 0; i < r->used; i++) {
        struct lg_event *ev = *slot_at(r, i);
        if (ev && ev->topic_identity == t && ev->key && strcmp(ev->key, key) == 0) {
            drop_at(r, i);
            return true;
        }
    }
    return false;
}

uint32_t lg_client_ring_remove_topic(struct lg_client_ring *r, const struct lg_topic *t)
{
    uint32_t dropped = 0;
    for (uint32_t i = 0; i < r->used; i++) {
        struct lg_event *ev = *slot_at(r, i);
        if (ev && ev->topic_identity == t) {
            drop_at(r, i);
            dropped++;
        }
    }
    skip_tombstones(r);
    if (r->live == 0 && r->slots) {
        free(r->slots); /* idle now: give the slots back, as pop does */
        lg_client_ring_init(r);
    }
    return dropped;
}
