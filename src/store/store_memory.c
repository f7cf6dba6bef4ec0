/* store_memory.c - see store_memory.h. */
#include "store_memory.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "clock.h"
#include "event.h"
#include "history.h"
#include "log.h"

#define KEY_INDEX_MIN_BUCKETS 16

struct key_node {
    struct lg_event *ev; /* borrowed: the history holds the reference */
    struct key_node *next;
};

/* Idempotency key -> retained event, chained; grows by doubling past one node per bucket. */
struct key_index {
    struct key_node **buckets;
    size_t mask;  /* buckets - 1; 0 with no buckets yet */
    size_t count;
};

struct memory_store {
    struct lg_store base;
    uint32_t epoch; /* the epoch of the streams opened now: drawn at creation, drawn again
                       after a drop() (both under the hub's registry write lock, as opens) */
};

struct memory_stream {
    struct lg_stream base;
    uint32_t epoch;
    uint64_t newest;
    struct lg_history history;
    struct key_index keys;
    bool deltas;              /* a document topic: events carry a delta against `last` */
    struct lg_event *last;    /* deltas: the newest event (a reference), or NULL */
};

static uint32_t random_epoch(void)
{
    uint32_t e = 0;
    while (e == 0) {
        if (getrandom(&e, sizeof e, 0) != (ssize_t)sizeof e)
            e = (uint32_t)lg_mono_ns() ^ (uint32_t)getpid();
    }
    return e;
}

/* ---- Key index ---------------------------------------------------------------------------- */

static size_t hash_key(const char *s, size_t len)
{
    size_t h = 2166136261u; /* FNV-1a */
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)s[i];
        h *= 16777619u;
    }
    return h;
}

static bool key_is(const struct lg_event *ev, const char *key, size_t len)
{
    return strlen(ev->idempotency_key) == len && memcmp(ev->idempotency_key, key, len) == 0;
}

static int key_index_grow(struct key_index *ix)
{
    size_t n = ix->buckets ? (ix->mask + 1) * 2 : KEY_INDEX_MIN_BUCKETS;
    struct key_node **b = calloc(n, sizeof *b);
    if (!b)
        return -1;
    for (size_t i = 0; ix->buckets && i <= ix->mask; i++) {
        for (struct key_node *k = ix->buckets[i], *next; k; k = next) {
            next = k->next;
            const char *key = k->ev->idempotency_key;
            struct key_node **head = &b[hash_key(key, strlen(key)) & (n - 1)];
            k->next = *head;
            *head = k;
        }
    }
    free(ix->buckets);
    ix->buckets = b;
    ix->mask = n - 1;
    return 0;
}

/* Index ev under its key. Return value: 0, or -1 (out of memory: not indexed). */
static int key_index_add(struct key_index *ix, struct lg_event *ev)
{
    if ((!ix->buckets || ix->count > ix->mask) && key_index_grow(ix) != 0 && !ix->buckets)
        return -1;
    struct key_node *k = malloc(sizeof *k);
    if (!k)
        return -1;
    const char *key = ev->idempotency_key;
    struct key_node **head = &ix->buckets[hash_key(key, strlen(key)) & ix->mask];
    *k = (struct key_node){.ev = ev, .next = *head};
    *head = k;
    ix->count++;
    return 0;
}

static void key_index_remove(struct key_index *ix, const struct lg_event *ev)
{
    if (!ix->buckets)
        return;
    const char *key = ev->idempotency_key;
    for (struct key_node **p = &ix->buckets[hash_key(key, strlen(key)) & ix->mask]; *p;
         p = &(*p)->next) {
        if ((*p)->ev == ev) {
            struct key_node *gone = *p;
            *p = gone->next;
            free(gone);
            ix->count--;
            return;
        }
    }
}

static struct lg_event *key_index_find(const struct key_index *ix, const char *key, size_t len)
{
    if (!ix->buckets)
        return NULL;
    for (struct key_node *k = ix->buckets[hash_key(key, len) & ix->mask]; k; k = k->next)
        if (key_is(k->ev, key, len))
            return k->ev;
    return NULL;
}

static void key_index_release(struct key_index *ix)
{
    for (size_t i = 0; ix->buckets && i <= ix->mask; i++) {
        for (struct key_node *k = ix->buckets[i], *next; k; k = next) {
            next = k->next;
            free(k);
        }
    }
    free(ix->buckets);
    *ix = (struct key_index){0};
}

/* ---- Streams ------------------------------------------------------------------------------ */

static struct memory_stream *mem(const struct lg_stream *s)
{
    return (struct memory_stream *)s;
}

static void forget_key(void *arg, const struct lg_event *ev)
{
    if (ev->idempotency_key)
        key_index_remove(arg, ev);
}

static struct lg_stream *stream_open(struct lg_store *store, const char *name, size_t len,
                                     struct lg_history_bounds bounds, bool deltas)
{
    (void)name, (void)len; /* every name's first life shares the store's epoch */
    struct memory_stream *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->base.store = store;
    s->epoch = ((struct memory_store *)store)->epoch;
    s->deltas = deltas;
    lg_history_init(&s->history, bounds);
    s->history.on_evict = forget_key;
    s->history.on_evict_arg = &s->keys;
    return &s->base;
}

static void stream_close(struct lg_stream *base)
{
    struct memory_stream *s = mem(base);
    key_index_release(&s->keys);
    lg_history_release(&s->history);
    lg_event_unref(&s->last);
    free(s);
}

static uint32_t epoch(const struct lg_stream *s) { return mem(s)->epoch; }
static uint64_t newest(const struct lg_stream *s) { return mem(s)->newest; }

static uint64_t oldest(const struct lg_stream *base)
{
    const struct memory_stream *s = mem(base);
    return s->history.count ? lg_history_first_seq(&s->history) : s->newest + 1;
}

static struct lg_event *find_key(const struct lg_stream *s, const char *key, size_t len)
{
    return key_index_find(&mem(s)->keys, key, len);
}

static void append(struct lg_stream *base, struct lg_event_fields *f, lg_append_done *done,
                   void *arg)
{
    struct memory_stream *s = mem(base);
    f->epoch = s->epoch;
    f->seq = s->newest + 1;
    f->delta_base = s->last; /* only a document stream keeps one */
    struct lg_event *ev = lg_event_create(f);
    if (!ev) {
        done(arg, LG_APPEND_OOM, NULL);
        return;
    }
    s->newest = ev->seq;
    if (s->deltas) {
        lg_event_unref(&s->last);
        s->last = lg_event_ref(ev);
    }
    done(arg, LG_APPEND_OK, ev); /* before history takes our reference (and may drop it) */
    if (lg_history_append(&s->history, ev, f->published_mono_ns) != 0) {
        lg_warn("topic %s: event %" PRIu64 " not retained in history (out of memory)",
                f->topic_name, f->seq);
        return;
    }
    bool retained = s->history.count && lg_history_at(&s->history, s->history.count - 1) == ev;
    if (retained && ev->idempotency_key && key_index_add(&s->keys, ev) != 0)
        lg_warn("topic %s: event %" PRIu64 " has no idempotency entry (out of memory); a retry "
                "publishes it again", f->topic_name, f->seq);
}

static int read_after(const struct lg_stream *base, uint64_t after, size_t max,
                      uint64_t max_bytes, struct lg_store_page *page)
{
    const struct memory_stream *s = mem(base);
    const struct lg_history *h = &s->history;
    *page = (struct lg_store_page){0};
    if (h->count == 0 || after >= s->newest)
        return 0;
    uint64_t first = lg_history_first_seq(h);
    uint32_t index = after + 1 > first ? (uint32_t)(after + 1 - first) : 0;
    return lg_history_page(h, index, max, max_bytes, page);
}

static bool evict_oldest(struct lg_stream *base)
{
    struct memory_stream *s = mem(base);
    if (s->history.count == 0)
        return false;
    lg_history_evict_oldest(&s->history);
    return true;
}

static uint32_t expire(struct lg_stream *s, uint64_t now_mono_ns)
{
    return lg_history_expire(&mem(s)->history, now_mono_ns);
}

static void retained(const struct lg_stream *base, uint64_t *events, uint64_t *bytes)
{
    const struct memory_stream *s = mem(base);
    *events = s->history.count;
    *bytes = s->history.bytes;
}

/* A deleted name's next life needs an epoch of its own: the store draws a new one for every
 * stream opened from now on (a topic that was never published and is reopened may also see
 * it change, which tells its subscribers nothing new: there was nothing to resume). */
static void drop(struct lg_stream *base)
{
    struct memory_stream *s = mem(base);
    while (evict_oldest(base))
        ;
    lg_event_unref(&s->last);
    struct memory_store *m = (struct memory_store *)s->base.store;
    uint32_t old = m->epoch;
    while (m->epoch == old)
        m->epoch = random_epoch();
}

static void destroy(struct lg_store *store)
{
    free(store);
}

static const struct lg_store_ops memory_ops = {
    .name = "memory",
    .stream_open = stream_open,
    .stream_close = stream_close,
    .epoch = epoch,
    .newest = newest,
    .oldest = oldest,
    .find_key = find_key,
    .append = append,
    .read_after = read_after,
    .evict_oldest = evict_oldest,
    .expire = expire,
    .retained = retained,
    .drop = drop,
    .destroy = destroy,
};

struct lg_store *lg_memory_store_create(void)
{
    struct memory_store *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->base.ops = &memory_ops;
    m->epoch = random_epoch();
    return &m->base;
}

void lg_store_page_release(struct lg_store_page *page)
{
    for (size_t i = 0; i < page->count; i++)
        lg_event_unref(&page->events[i]);
    free(page->events);
    *page = (struct lg_store_page){0};
}
