/* presence.c - see presence.h. */
#include "presence.h"

#include <stdlib.h>
#include <string.h>

#include "encode.h"
#include "topic.h"

/* One member: a token's subject or an anonymous client, with its listening subscriptions. */
struct member {
    struct member *next_in_bucket;
    struct member *next_changed;  /* on p->changed while `changed` */
    bool changed;
    bool reported;                /* subscribers were told it joined (a batch listed it) */
    bool gone_once;               /* a batch found it not present: leaves at the next */
    bool remote;                  /* another node lists it (lg_presence_set_remote) */
    bool named;                   /* lg_presence_set_remote()'s mark, inside the call */
    uint32_t conns;               /* its listening subscriptions here */
    size_t len;
    char id[];
};

struct lg_presence {
    bool members_on;              /* immutable: list members, send join and leave */
    bool occupancy_events;        /* immutable */
    uint32_t max_members;         /* immutable */
    struct member **buckets;      /* chained hash table, mask + 1 buckets */
    size_t mask;
    uint32_t listed;              /* members present: conns > 0, or remote */
    uint32_t local;               /* members with conns > 0 */
    uint32_t shared;              /* local members at the last lg_presence_copy_local() */
    uint32_t entries;             /* members in the table (listed, or gone and not reported) */
    uint64_t unlisted;            /* subscriptions beyond max_members */
    struct member *changed;       /* members to look at in the next batch */
    bool occupancy_changed;       /* the subscriber count moved since the last batch */
    bool occupancy_sent;          /* an occupancy notice was sent ... */
    uint32_t occupancy_last;      /* ... with this count */
    _Atomic bool in_flight;       /* a batch is on its way to the workers */
    uint64_t batches_made;        /* numbers the batches (lg_presence_batches_made) */
};

/* A member is listed while it listens here or another node lists it. */
static bool present(const struct member *m)
{
    return m->conns > 0 || m->remote;
}

static size_t hash_id(const char *id, size_t len)
{
    size_t h = 2166136261u;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)id[i]) * 16777619u;
    return h;
}

struct lg_presence *lg_presence_create(const struct lg_presence_rule *rule)
{
    struct lg_presence *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->members_on = rule->members;
    p->occupancy_events = rule->occupancy_events;
    p->max_members = rule->max_members;
    atomic_init(&p->in_flight, false);
    if (!p->members_on)
        return p;
    size_t buckets = 16;
    while (buckets < rule->max_members && buckets < 65536)
        buckets *= 2;
    p->buckets = calloc(buckets, sizeof *p->buckets);
    if (!p->buckets) {
        free(p);
        return NULL;
    }
    p->mask = buckets - 1;
    return p;
}

void lg_presence_destroy(struct lg_presence *p)
{
    if (!p)
        return;
    for (size_t b = 0; p->buckets && b <= p->mask; b++) {
        struct member *m = p->buckets[b];
        while (m) {
            struct member *next = m->next_in_bucket;
            free(m);
            m = next;
        }
    }
    free(p->buckets);
    free(p);
}

static struct member **find_slot(struct lg_presence *p, const char *id, size_t len)
{
    struct member **mp = &p->buckets[hash_id(id, len) & p->mask];
    while (*mp && ((*mp)->len != len || memcmp((*mp)->id, id, len) != 0))
        mp = &(*mp)->next_in_bucket;
    return mp;
}

static void mark_changed(struct lg_presence *p, struct member *m)
{
    if (m->changed)
        return;
    m->changed = true;
    m->next_changed = p->changed;
    p->changed = m;
}

bool lg_presence_join(struct lg_presence *p, const char *id, size_t len)
{
    if (!p->members_on)
        return false;
    struct member **mp = find_slot(p, id, len);
    struct member *m = *mp;
    if (m && (present(m) || p->listed < p->max_members)) {
        if (m->conns++ == 0) {
            p->listed += !m->remote;
            p->local++;
            m->gone_once = false;
        }
        return true;
    }
    if (m) { /* gone, its leave not reported yet, and no room: it stays gone */
        p->unlisted++;
        return false;
    }
    if (p->listed >= p->max_members || p->entries >= 2 * p->max_members ||
        !(m = calloc(1, sizeof *m + len + 1))) {
        p->unlisted++;
        return false;
    }
    memcpy(m->id, id, len);
    m->len = len;
    m->conns = 1;
    *mp = m;
    p->listed++;
    p->local++;
    p->entries++;
    mark_changed(p, m);
    return true;
}

void lg_presence_leave(struct lg_presence *p, const char *id, size_t len)
{
    struct member *m = *find_slot(p, id, len);
    if (!m || m->conns == 0)
        return;
    if (--m->conns == 0) {
        p->listed -= !m->remote;
        p->local--;
        mark_changed(p, m);
    }
}

void lg_presence_leave_unlisted(struct lg_presence *p)
{
    if (p->unlisted > 0)
        p->unlisted--;
}

bool lg_presence_changed(struct lg_presence *p)
{
    if (p->occupancy_events)
        p->occupancy_changed = true;
    return lg_presence_pending(p);
}

bool lg_presence_pending(const struct lg_presence *p)
{
    return p->changed != NULL || p->occupancy_changed;
}

bool lg_presence_in_flight(const struct lg_presence *p)
{
    return atomic_load_explicit(&p->in_flight, memory_order_acquire);
}

void lg_presence_delivered(struct lg_presence *p)
{
    atomic_store_explicit(&p->in_flight, false, memory_order_release);
}

bool lg_presence_lists_members(const struct lg_presence *p) { return p->members_on; }

uint32_t lg_presence_max_members(const struct lg_presence *p) { return p->max_members; }

/* ---- Batches ------------------------------------------------------------------------------ */

static void forget(struct lg_presence *p, struct member *m)
{
    struct member **mp = find_slot(p, m->id, m->len);
    *mp = m->next_in_bucket;
    p->entries--;
    free(m);
}

/* Sort out the changed members into the join and leave lists (JSON arrays' items). */
static void settle_members(struct lg_presence *p, struct lg_buf *joins, struct lg_buf *leaves)
{
    struct member *m = p->changed, *keep = NULL;
    p->changed = NULL;
    while (m) {
        struct member *next = m->next_changed;
        m->changed = false;
        if (present(m) && !m->reported) {
            lg_buf_append_str(joins, joins->len ? "," : "");
            lg_encode_json_string(joins, m->id, m->len);
            m->reported = true;
        } else if (!present(m) && !m->reported) {
            forget(p, m);
        } else if (!present(m) && !m->gone_once) {
            m->gone_once = true; /* a connection replaced within a tick is no leave */
            m->changed = true;
            m->next_changed = keep;
            keep = m;
        } else if (!present(m)) {
            lg_buf_append_str(leaves, leaves->len ? "," : "");
            lg_encode_json_string(leaves, m->id, m->len);
            forget(p, m);
        }
        m = next;
    }
    p->changed = keep;
}

/* A batch being made: its notices' types and where their fields start in text. */
struct draft {
    struct lg_buf text;
    size_t count;
    const char *types[LG_PRESENCE_BATCH_NOTICES];
    size_t starts[LG_PRESENCE_BATCH_NOTICES + 1];
};

/* Start a notice of type: its fields begin with the topic. */
static void begin_notice(struct draft *d, const struct lg_topic *t, const char *type)
{
    d->types[d->count] = type;
    d->starts[d->count++] = d->text.len;
    lg_buf_append_str(&d->text, "\"topic\":");
    lg_encode_json_string(&d->text, t->name, t->name_len);
}

static void add_members_notice(struct draft *d, const struct lg_topic *t, const char *type,
                               const struct lg_buf *ids)
{
    if (ids->len == 0)
        return;
    begin_notice(d, t, type);
    lg_buf_append_str(&d->text, ",\"members\":[");
    lg_buf_append(&d->text, ids->data, ids->len);
    lg_buf_append_str(&d->text, "]}");
}

static struct lg_presence_batch *finish_batch(struct draft *d, struct lg_topic *t, bool *lost)
{
    struct lg_presence_batch *b = d->count && !d->text.oom ? calloc(1, sizeof *b) : NULL;
    *lost = d->count && !b;
    if (!b) {
        lg_buf_release(&d->text);
        return NULL;
    }
    b->text = d->text.data;
    b->count = d->count;
    d->starts[d->count] = d->text.len;
    for (size_t i = 0; i < d->count; i++)
        b->notices[i] = (struct lg_presence_notice){
            .type = d->types[i], .fields = b->text + d->starts[i],
            .fields_len = d->starts[i + 1] - d->starts[i]};
    atomic_init(&b->refs, 1);
    lg_topic_ref(t);
    b->topic = t;
    return b;
}

struct lg_presence_batch *lg_presence_take_batch(struct lg_presence *p, struct lg_topic *t,
                                                 uint32_t subscribers, bool *lost)
{
    struct draft d = {.count = 0};
    struct lg_buf joins, leaves;
    lg_buf_init(&d.text);
    lg_buf_init(&joins);
    lg_buf_init(&leaves);
    settle_members(p, &joins, &leaves);
    if (joins.oom || leaves.oom)
        d.text.oom = true;
    add_members_notice(&d, t, "join", &joins);
    add_members_notice(&d, t, "leave", &leaves);
    lg_buf_release(&joins);
    lg_buf_release(&leaves);
    if (p->occupancy_changed && (!p->occupancy_sent || p->occupancy_last != subscribers)) {
        begin_notice(&d, t, "occupancy");
        lg_buf_appendf(&d.text, ",\"subscribers\":%u}", subscribers);
        p->occupancy_sent = true;
        p->occupancy_last = subscribers;
    }
    p->occupancy_changed = false;
    struct lg_presence_batch *b = finish_batch(&d, t, lost);
    if (b) {
        b->number = ++p->batches_made;
        atomic_store_explicit(&p->in_flight, true, memory_order_relaxed);
    }
    return b;
}

uint64_t lg_presence_batches_made(const struct lg_presence *p)
{
    return p->batches_made;
}

void lg_presence_batch_ref(struct lg_presence_batch *b)
{
    atomic_fetch_add_explicit(&b->refs, 1, memory_order_relaxed);
}

void lg_presence_batch_unref(struct lg_presence_batch *b)
{
    if (!b || atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel) != 1)
        return;
    lg_topic_unref(b->topic);
    free(b->text);
    free(b);
}

/* ---- Listing ------------------------------------------------------------------------------ */

/* Copy the members that are present (local_only: that listen here) into l. */
static int copy_members(const struct lg_presence *p, struct lg_presence_list *l, bool local_only)
{
    memset(l, 0, sizeof *l);
    l->unlisted = p->unlisted;
    uint32_t n = local_only ? p->local : p->listed;
    if (!p->members_on || n == 0)
        return 0;
    size_t bytes = 0;
    for (size_t b = 0; b <= p->mask; b++)
        for (const struct member *m = p->buckets[b]; m; m = m->next_in_bucket)
            bytes += (local_only ? m->conns > 0 : present(m)) ? m->len + 1 : 0;
    l->ids = malloc(n * sizeof *l->ids);
    l->text = malloc(bytes);
    if (!l->ids || !l->text) {
        lg_presence_list_release(l);
        return -1;
    }
    char *at = l->text;
    for (size_t b = 0; b <= p->mask; b++) {
        for (const struct member *m = p->buckets[b]; m; m = m->next_in_bucket) {
            if (local_only ? m->conns == 0 : !present(m))
                continue;
            memcpy(at, m->id, m->len);
            at[m->len] = '\0';
            l->ids[l->count++] = at;
            at += m->len + 1;
        }
    }
    return 0;
}

int lg_presence_copy(const struct lg_presence *p, struct lg_presence_list *l)
{
    return copy_members(p, l, false);
}

int lg_presence_copy_local(struct lg_presence *p, struct lg_presence_list *l)
{
    int rc = copy_members(p, l, true);
    p->shared = rc == 0 ? (uint32_t)l->count : p->shared;
    return rc;
}

uint32_t lg_presence_shared(const struct lg_presence *p) { return p->shared; }

/* ---- Members of other nodes --------------------------------------------------------------- */

static void set_remote(struct lg_presence *p, struct member *m, bool remote)
{
    if (m->remote == remote)
        return;
    m->remote = remote;
    if (m->conns == 0) {
        p->listed += remote ? 1 : -1;
        m->gone_once = false;
        mark_changed(p, m);
    }
}

void lg_presence_set_remote(struct lg_presence *p, const char *const *ids, const size_t *lens,
                            size_t n)
{
    if (!p->members_on)
        return;
    /* Every member loses the flag but those named; the marks tell the two apart meanwhile. */
    for (size_t b = 0; b <= p->mask; b++)
        for (struct member *m = p->buckets[b]; m; m = m->next_in_bucket)
            m->named = false;
    for (size_t i = 0; i < n; i++) {
        struct member **mp = find_slot(p, ids[i], lens[i]);
        struct member *m = *mp;
        if (!m) {
            if (p->listed >= p->max_members || p->entries >= 2 * p->max_members ||
                !(m = calloc(1, sizeof *m + lens[i] + 1)))
                continue; /* beyond the bound: not listed here, as a subscription would be */
            memcpy(m->id, ids[i], lens[i]);
            m->len = lens[i];
            *mp = m;
            p->entries++;
        } else if (!present(m) && p->listed >= p->max_members) {
            continue;
        }
        m->named = true;
        set_remote(p, m, true);
    }
    for (size_t b = 0; b <= p->mask; b++)
        for (struct member *m = p->buckets[b]; m; m = m->next_in_bucket)
            if (!m->named)
                set_remote(p, m, false);
}

static int compare_ids(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

void lg_presence_list_sort(struct lg_presence_list *l)
{
    if (l->count > 1)
        qsort(l->ids, l->count, sizeof *l->ids, compare_ids);
}

size_t lg_presence_list_after(const struct lg_presence_list *l, const char *after)
{
    if (!after)
        return 0;
    size_t lo = 0, hi = l->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(l->ids[mid], after) <= 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

void lg_presence_list_release(struct lg_presence_list *l)
{
    free(l->ids);
    free(l->text);
    memset(l, 0, sizeof *l);
}
