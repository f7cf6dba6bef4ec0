#include "inbox.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "event.h"
#include "topic.h"

int lg_inbox_init(struct lg_inbox *in, size_t capacity)
{
    if (capacity == 0)
        return -EINVAL;
    int rc = -ENOMEM;
    struct lg_inbox_entry *items = calloc(capacity, sizeof *items);
    struct lg_inbox_entry *spare = calloc(capacity, sizeof *spare);
    if (!items || !spare)
        goto err;
    int e = pthread_mutex_init(&in->lock, NULL);
    if (e) {
        rc = -e;
        goto err;
    }
    in->items = items;
    in->count = 0;
    in->spare = spare;
    in->capacity = capacity;
    atomic_init(&in->occupancy, 0);
    atomic_init(&in->admit, capacity);
    return 0;

err:
    free(spare);
    free(items);
    return rc;
}

static void drop_entries(struct lg_inbox_entry *entries, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        lg_event_unref(&entries[i].event);
        lg_topic_unref(entries[i].topic);
    }
}

void lg_inbox_release(struct lg_inbox *in)
{
    drop_entries(in->items, in->count);
    free(in->items);
    free(in->spare);
    pthread_mutex_destroy(&in->lock);
    in->items = in->spare = NULL;
    in->count = in->capacity = 0;
}

/* The occupancy counter orders no other memory (the queued events are published under the
 * lock), so every operation on it is relaxed. */

bool lg_inbox_reserve(struct lg_inbox *in)
{
    size_t before = atomic_fetch_add_explicit(&in->occupancy, 1, memory_order_relaxed);
    if (before < atomic_load_explicit(&in->admit, memory_order_relaxed))
        return true;
    /* Full: undo. Meanwhile a racing reserve may also see a full inbox and refuse; that errs
     * on the side of a 503 and never lets occupancy exceed capacity for good. */
    atomic_fetch_sub_explicit(&in->occupancy, 1, memory_order_relaxed);
    return false;
}

void lg_inbox_unreserve(struct lg_inbox *in)
{
    atomic_fetch_sub_explicit(&in->occupancy, 1, memory_order_relaxed);
}

bool lg_inbox_push_reserved(struct lg_inbox *in, struct lg_topic *t, struct lg_event *ev)
{
    struct lg_inbox_entry entry = {.topic = t, .event = lg_event_ref(ev)};
    lg_topic_ref(t);
    pthread_mutex_lock(&in->lock);
    /* The reservation guarantees the slot: queued events never outnumber reservations. */
    if (in->count >= in->capacity)
        __builtin_trap();
    bool was_empty = in->count == 0;
    in->items[in->count++] = entry;
    pthread_mutex_unlock(&in->lock);
    return was_empty;
}

size_t lg_inbox_take_upto(struct lg_inbox *in, size_t max, struct lg_inbox_entry **batch)
{
    pthread_mutex_lock(&in->lock);
    size_t n = in->count < max ? in->count : max;
    struct lg_inbox_entry *taken;
    if (n == in->count) {
        taken = in->items; /* everything: swap the arrays */
        in->items = in->spare;
        in->spare = taken;
        in->count = 0;
    } else {
        taken = in->spare; /* the oldest n: copy them out, close up the rest */
        memcpy(taken, in->items, n * sizeof *taken);
        memmove(in->items, in->items + n, (in->count - n) * sizeof *taken);
        in->count -= n;
    }
    pthread_mutex_unlock(&in->lock);
    *batch = taken;
    return n;
}

size_t lg_inbox_take(struct lg_inbox *in, struct lg_inbox_entry **batch)
{
    return lg_inbox_take_upto(in, SIZE_MAX, batch);
}

bool lg_inbox_empty(struct lg_inbox *in)
{
    pthread_mutex_lock(&in->lock);
    bool empty = in->count == 0;
    pthread_mutex_unlock(&in->lock);
    return empty;
}

size_t lg_inbox_backlog(struct lg_inbox *in)
{
    return atomic_load_explicit(&in->occupancy, memory_order_relaxed);
}

void lg_inbox_admit(struct lg_inbox *in, size_t n)
{
    size_t admit = n < 1 ? 1 : n > in->capacity ? in->capacity : n;
    atomic_store_explicit(&in->admit, admit, memory_order_relaxed);
}

void lg_inbox_done(struct lg_inbox *in, struct lg_inbox_entry *batch, size_t n)
{
    drop_entries(batch, n);
    atomic_fetch_sub_explicit(&in->occupancy, n, memory_order_relaxed);
}
