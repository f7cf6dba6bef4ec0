/* history.c - see history.h. */
#include "history.h"

#include <stdlib.h>

#include "event.h"
#include "stats.h"

/* First capacity of a history ring; it doubles from here up to bounds.max_events, so a topic
 * with a few events never pays for the slots a busy one needs. */
#define HISTORY_MIN_CAPACITY 16

void lg_history_init(struct lg_history *h, struct lg_history_bounds bounds)
{
    *h = (struct lg_history){.bounds = bounds};
}

void lg_history_release(struct lg_history *h)
{
    for (uint32_t i = 0; i < h->count; i++)
        lg_event_unref(&h->ring[(h->head + i) % h->capacity]);
    free(h->ring);
    lg_history_init(h, h->bounds);
}

static bool history_too_old(const struct lg_history *h, const struct lg_event *ev,
                            uint64_t now_mono_ns)
{
    uint64_t max_age_ms = h->bounds.max_age_ms;
    if (max_age_ms == 0 || max_age_ms > UINT64_MAX / 1000000u)
        return false; /* no age bound, or one longer than the monotonic clock can count */
    if (now_mono_ns <= ev->published_mono_ns)
        return false;
    return now_mono_ns - ev->published_mono_ns > max_age_ms * 1000000u;
}

void lg_history_evict_oldest(struct lg_history *h)
{
    struct lg_event *ev = h->ring[h->head];
    h->ring[h->head] = NULL;
    h->head = (h->head + 1) % h->capacity;
    h->count--;
    h->bytes -= ev->size;
    if (h->on_evict)
        h->on_evict(h->on_evict_arg, ev);
    lg_event_unref(&ev);
    LG_STAT_ADD(history_evicted, 1);
}

/* Double the ring (up to max_events), unwrapping it so the oldest event is at index 0.
 * Return value: 0, or -1 on OOM with the ring untouched. */
static int history_grow(struct lg_history *h)
{
    uint32_t cap = HISTORY_MIN_CAPACITY;
    if (h->capacity)
        cap = h->capacity > UINT32_MAX / 2 ? UINT32_MAX : h->capacity * 2;
    if (cap > h->bounds.max_events)
        cap = h->bounds.max_events;
    struct lg_event **ring = malloc((size_t)cap * sizeof *ring);
    if (!ring)
        return -1;
    for (uint32_t i = 0; i < h->count; i++)
        ring[i] = h->ring[(h->head + i) % h->capacity];
    free(h->ring);
    h->ring = ring;
    h->capacity = cap;
    h->head = 0;
    return 0;
}

int lg_history_append(struct lg_history *h, struct lg_event *ev, uint64_t now_mono_ns)
{
    if (h->bounds.max_events == 0) {
        /* A topic configured to keep no history: the event is evicted as soon as it arrives. */
        lg_event_unref(&ev);
        LG_STAT_ADD(history_evicted, 1);
        return 0;
    }
    if (h->count == h->capacity) {
        if (h->capacity < h->bounds.max_events) {
            if (history_grow(h) < 0) {
                lg_event_unref(&ev);
                return -1;
            }
        } else {
            /* Full at max_events: the count bound would evict the oldest right after the
             * append anyway, and doing it first frees the slot the new event needs. */
            lg_history_evict_oldest(h);
        }
    }
    h->ring[(h->head + h->count) % h->capacity] = ev;
    h->count++;
    h->bytes += ev->size;

    /* The newest event always stays: a resume must find at least the last published event,
     * even when it alone is larger than max_bytes or was already old when appended. */
    while (h->count > 1 && (h->bytes > h->bounds.max_bytes ||
                            history_too_old(h, h->ring[h->head], now_mono_ns)))
        lg_history_evict_oldest(h);
    return 0;
}

uint32_t lg_history_expire(struct lg_history *h, uint64_t now_mono_ns)
{
    uint32_t evicted = 0;
    while (h->count > 0 && history_too_old(h, h->ring[h->head], now_mono_ns)) {
        lg_history_evict_oldest(h);
        evicted++;
    }
    return evicted;
}

struct lg_event *lg_history_at(const struct lg_history *h, uint32_t i)
{
    if (i >= h->count)
        return NULL;
    return h->ring[(h->head + i) % h->capacity];
}

uint64_t lg_history_first_seq(const struct lg_history *h)
{
    return h->count ? h->ring[h->head]->seq : 0;
}

int lg_history_page(const struct lg_history *h, uint32_t i, size_t max, uint64_t max_bytes,
                    struct lg_store_page *page)
{
    *page = (struct lg_store_page){0};
    size_t available = i < h->count ? h->count - i : 0;
    size_t n = 0;
    uint64_t bytes = 0;
    while (n < available && n < max) {
        bytes += lg_history_at(h, i + (uint32_t)n)->size;
        if (n > 0 && bytes > max_bytes)
            break;
        n++;
    }
    page->more = available > n;
    if (n == 0)
        return 0;
    page->events = malloc(n * sizeof *page->events);
    if (!page->events) {
        page->more = false;
        return -1;
    }
    for (size_t k = 0; k < n; k++)
        page->events[k] = lg_event_ref(lg_history_at(h, i + (uint32_t)k));
    page->count = n;
    return 0;
}
