/*
 * filter_table.c - see filter_table.h. A chained hash table on the canonical text (FNV-1a),
 * allocated on the heap by the first intern on a thread and freed with its last entry. Each
 * entry names its table, so the last reference may be dropped on another thread once the
 * owner has been joined (a worker's connections are closed by lws_context_destroy() on the
 * main thread). The cached verdict names its event by pointer and by (topic, epoch, seq), so
 * an event freed and another allocated at the same address is never mistaken for it.
 */
#include "filter_table.h"

#include <stdlib.h>
#include <string.h>

#include "event.h"

#define INITIAL_BUCKETS 16

struct filter_table;

struct lg_interned_filter {
    struct filter_table *table;      /* the table it is in */
    struct lg_interned_filter *next; /* the bucket's chain */
    uint64_t hash;
    uint32_t refs;                   /* subscriptions holding it */
    uint64_t evaluations;
    const struct lg_event *seen;     /* the event of the cached verdict, or NULL */
    const void *seen_topic;
    uint32_t seen_epoch;
    uint64_t seen_seq;
    bool seen_admits;
    struct lg_filter filter;
};

struct filter_table {
    struct lg_interned_filter **buckets;
    uint32_t bucket_count;           /* a power of two, or 0 before the first intern */
    uint32_t count;
};

static _Thread_local struct filter_table *current; /* this thread's table, or NULL */

static uint64_t hash_text(const char *s, size_t len)
{
    uint64_t h = 1469598103934665603u;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211u;
    return h;
}

static struct lg_interned_filter **bucket_of(struct filter_table *t, uint64_t hash)
{
    return &t->buckets[hash & (t->bucket_count - 1)];
}

/* Double the buckets (or make the first ones). Return value: false when out of memory (the
 * table stays as it was: longer chains, still correct). */
static bool grow(struct filter_table *t)
{
    uint32_t count = t->bucket_count ? 2 * t->bucket_count : INITIAL_BUCKETS;
    struct lg_interned_filter **buckets = calloc(count, sizeof *buckets);
    if (!buckets)
        return t->bucket_count != 0;
    for (uint32_t i = 0; i < t->bucket_count; i++) {
        struct lg_interned_filter *e = t->buckets[i], *next;
        for (; e; e = next) {
            next = e->next;
            e->next = buckets[e->hash & (count - 1)];
            buckets[e->hash & (count - 1)] = e;
        }
    }
    free(t->buckets);
    t->buckets = buckets;
    t->bucket_count = count;
    return true;
}

/* Free t once it holds no entry (and forget it, if it is this thread's). */
static void free_if_empty(struct filter_table *t)
{
    if (t->count > 0)
        return;
    if (current == t)
        current = NULL;
    free(t->buckets);
    free(t);
}

struct lg_interned_filter *lg_filter_table_intern(const struct lg_filter *f)
{
    if (!current && !(current = calloc(1, sizeof *current)))
        return NULL;
    struct filter_table *t = current;
    uint64_t hash = hash_text(f->text, f->text_len);
    if (t->bucket_count) {
        for (struct lg_interned_filter *e = *bucket_of(t, hash); e; e = e->next)
            if (e->hash == hash && e->filter.text_len == f->text_len &&
                memcmp(e->filter.text, f->text, f->text_len) == 0) {
                e->refs++;
                return e;
            }
    }
    struct lg_interned_filter *e = NULL;
    char why[8];
    /* Parsing the canonical text again points the spans into the entry's own copy. */
    if ((t->count < t->bucket_count || grow(t)) && (e = calloc(1, sizeof *e)) &&
        lg_filter_parse(f->text, f->text_len, &e->filter, why, sizeof why) == 0) {
        e->table = t;
        e->hash = hash;
        e->refs = 1;
        e->next = *bucket_of(t, hash);
        *bucket_of(t, hash) = e;
        t->count++;
        return e;
    }
    free(e);
    free_if_empty(t);
    return NULL;
}

void lg_filter_table_unref(struct lg_interned_filter **fp)
{
    struct lg_interned_filter *f = *fp;
    if (!f)
        return;
    *fp = NULL;
    if (--f->refs > 0)
        return;
    struct filter_table *t = f->table;
    for (struct lg_interned_filter **pp = bucket_of(t, f->hash); *pp; pp = &(*pp)->next)
        if (*pp == f) {
            *pp = f->next;
            break;
        }
    free(f);
    t->count--;
    free_if_empty(t);
}

bool lg_filter_table_admits(struct lg_interned_filter *f, const struct lg_event *ev)
{
    if (f->seen == ev && f->seen_topic == ev->topic_identity && f->seen_epoch == ev->epoch &&
        f->seen_seq == ev->seq)
        return f->seen_admits;
    f->evaluations++;
    f->seen = ev;
    f->seen_topic = ev->topic_identity;
    f->seen_epoch = ev->epoch;
    f->seen_seq = ev->seq;
    f->seen_admits = lg_filter_match(&f->filter, lg_event_tags(ev), ev->tags_len);
    return f->seen_admits;
}

const char *lg_filter_table_text(const struct lg_interned_filter *f)
{
    return f->filter.text;
}

uint64_t lg_filter_table_evaluations(const struct lg_interned_filter *f)
{
    return f->evaluations;
}

uint32_t lg_filter_table_count(void)
{
    return current ? current->count : 0;
}
