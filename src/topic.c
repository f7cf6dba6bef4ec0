#include "topic.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "event.h"
#include "stats.h"

#define STR_(x) #x
#define STR(x) STR_(x)

/* First capacity of a history ring; it doubles from here up to bounds.max_events, so a topic
 * with a few events never pays for the slots a busy one needs. */
#define HISTORY_MIN_CAPACITY 16

/* ---- Topic names -------------------------------------------------------------------------- */

bool lg_topic_name_byte_ok(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '-' || c == '.' || c == '/' || c == ':' || c == '~';
}

/*
 * The messages for a bad byte name its position (1-based), so they are formatted into a
 * thread-local buffer: like a static message the caller never frees it, but it stays valid
 * only until this thread calls lg_topic_name_problem() again.
 */
const char *lg_topic_name_problem(const char *name, size_t len)
{
    static _Thread_local char msg[112];

    if (len == 0)
        return "topic name is empty";
    if (len > LG_TOPIC_NAME_MAX)
        return "topic name is longer than " STR(LG_TOPIC_NAME_MAX) " bytes";
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)name[i];
        if (lg_topic_name_byte_ok(c) || (c == '$' && i == 0))
            continue;
        if (c == '$')
            snprintf(msg, sizeof msg, "topic name has '$' after its first byte (at byte %zu)",
                     i + 1);
        else
            snprintf(msg, sizeof msg,
                     "topic name contains a character outside " LG_TOPIC_NAME_CHARS
                     " (at byte %zu)",
                     i + 1);
        return msg;
    }
    return NULL;
}

/* ---- History ring ------------------------------------------------------------------------- */

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

/* ---- Topic -------------------------------------------------------------------------------- */

struct lg_topic *lg_topic_create(const char *name, size_t len, uint32_t epoch,
                                 enum lg_slow_policy policy, struct lg_history_bounds bounds,
                                 uint32_t workers)
{
    struct lg_topic *t = calloc(1, sizeof *t + (size_t)workers * sizeof t->slots[0]);
    if (!t)
        return NULL;
    t->name = malloc(len + 1);
    if (!t->name)
        goto err;
    memcpy(t->name, name, len);
    t->name[len] = '\0';
    if (pthread_mutex_init(&t->lock, NULL) != 0)
        goto err;
    t->name_len = len;
    t->epoch = epoch;
    t->policy = policy;
    t->slot_count = workers;
    lg_history_init(&t->history, bounds);
    return t;

err:
    free(t->name);
    free(t);
    return NULL;
}

void lg_topic_destroy(struct lg_topic *t)
{
    if (!t)
        return;
    lg_history_release(&t->history);
    pthread_mutex_destroy(&t->lock);
    free(t->name);
    free(t);
}
