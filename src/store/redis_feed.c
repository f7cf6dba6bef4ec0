/*
 * redis_feed.c - the Redis store's reading side (store_redis.h): a stream's live feed while
 * local subscribers want it, its mirror, and the reads that join the two without a gap or a
 * duplicate. Everything here runs on the bridge thread, but lg_redis__kick() and
 * lg_redis__refresh().
 *
 * DESIGN
 * The append script publishes every event, with its position, on the topic's channel, in
 * position order. A node subscribes to the channels of the topics its subscribers want, so
 * what an event costs Redis and a node follows interest, not the number of topics open
 * anywhere. Joining the feed and the stream: SUBSCRIBE first; once Redis confirmed it, every
 * later append reaches this node, and a read of the stream (the load, or a catch-up from the
 * mirror's newest) covers everything before. A message applies only when its position is the
 * mirror's newest + 1; one past a hole, or one that arrives while a read is in flight, only
 * notes the position heard, and a catch-up read fetches what is missing from the stream (the
 * feed and the reads use two connections, so their order is not one). Reads carry the epoch:
 * a different one is a new life (the keys were lost), loaded afresh, and subscribers get a
 * reset. After the last local subscriber leaves, the subscription lingers LINGER_MS (a
 * reconnecting client finds the mirror warm), then it and the mirror go.
 */
#include "store_redis_internal.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <hiredis/hiredis.h>

#include "clock.h"
#include "event.h"
#include "history.h"
#include "log.h"
#include "stats.h"

#define READS_IN_FLIGHT_MAX 32 /* loads and catch-ups sent at once, over every stream */
#define STALL_RETRY_MS 5       /* an inbox was full: read again from newest after this */
#define LINGER_MS 3000         /* subscribed this long after the last local subscriber left */
#define SWEEP_MS 1000          /* how often lingering subscriptions are looked at */
#define INDEX_BUCKETS_MIN 64
#define BEHIND_TTL_MS 1000     /* a node that dies behind stops holding publishers after this */
#define BEHIND_HELD 256        /* events held for room past which publishers are paced ... */
#define BEHIND_AFTER_MS 50     /* ... or a topic stalled this long */

/* A candidate epoch for a life that may start now: drawn from a generator seeded once, since
 * every append offers one (a getrandom call each was a system call per publish). splitmix64. */
uint32_t lg_redis__random_epoch(struct redis_shard *sh)
{
    if (sh->epoch_rng == 0 &&
        getrandom(&sh->epoch_rng, sizeof sh->epoch_rng, 0) != (ssize_t)sizeof sh->epoch_rng)
        sh->epoch_rng = lg_mono_ns();
    for (;;) {
        uint64_t z = (sh->epoch_rng += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        uint32_t e = (uint32_t)((z ^ (z >> 31)) >> 32);
        if (e != 0)
            return e;
    }
}

/* ---- The channel index ------------------------------------------------------------------ */

uint32_t lg_redis__hash(const char *s, size_t len)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}

static struct redis_stream **bucket_of(struct redis_shard *sh, const char *ch, size_t len)
{
    return &sh->by_channel[lg_redis__hash(ch, len) & sh->by_channel_mask];
}

static int index_grow(struct redis_shard *sh)
{
    size_t buckets = sh->by_channel ? (sh->by_channel_mask + 1) * 2 : INDEX_BUCKETS_MIN;
    struct redis_stream **fresh = calloc(buckets, sizeof *fresh);
    if (!fresh)
        return -1;
    struct redis_stream **old = sh->by_channel;
    size_t old_buckets = old ? sh->by_channel_mask + 1 : 0;
    sh->by_channel = fresh;
    sh->by_channel_mask = buckets - 1;
    for (size_t b = 0; b < old_buckets; b++) {
        for (struct redis_stream *s = old[b], *next; s; s = next) {
            next = s->next_by_channel;
            struct redis_stream **head = bucket_of(sh, s->key_channel, strlen(s->key_channel));
            s->next_by_channel = *head;
            *head = s;
        }
    }
    free(old);
    return 0;
}

int lg_redis__index_add(struct redis_shard *sh, struct redis_stream *s)
{
    if ((!sh->by_channel || sh->stream_count >= 2 * (sh->by_channel_mask + 1)) &&
        index_grow(sh) != 0 && !sh->by_channel)
        return -1; /* a failed growth leaves longer chains, not a failure */
    struct redis_stream **head = bucket_of(sh, s->key_channel, strlen(s->key_channel));
    s->next_by_channel = *head;
    *head = s;
    sh->stream_count++;
    return 0;
}

void lg_redis__index_remove(struct redis_shard *sh, struct redis_stream *s)
{
    for (struct redis_stream **pp = bucket_of(sh, s->key_channel, strlen(s->key_channel)); *pp;
         pp = &(*pp)->next_by_channel) {
        if (*pp == s) {
            *pp = s->next_by_channel;
            sh->stream_count--;
            return;
        }
    }
}

static struct redis_stream *stream_by_channel(struct redis_shard *sh, const redisReply *ch)
{
    if (ch->type != REDIS_REPLY_STRING || !sh->by_channel)
        return NULL;
    for (struct redis_stream *s = *bucket_of(sh, ch->str, ch->len); s; s = s->next_by_channel)
        if (strlen(s->key_channel) == ch->len && memcmp(s->key_channel, ch->str, ch->len) == 0)
            return s;
    return NULL;
}

static struct redis_stream *stream_by_id(struct redis_shard *sh, uint64_t id)
{
    for (struct lg_dlink *l = sh->streams.first; l; l = l->next) {
        struct redis_stream *s = lg_redis__stream_of(l);
        if (s->id == id)
            return s;
    }
    return NULL;
}

/* ---- Events ------------------------------------------------------------------------------ */

/* One field of an entry or a message into f. */
static void set_field(struct lg_event_fields *f, char name, const char *v, size_t len)
{
    switch (name) {
    case 'y': f->type = v, f->type_len = len; break;
    case 'k': f->key = v, f->key_len = len; break;
    case 'd': f->data = v, f->data_len = len; break;
    case 'j': f->data_is_json = len > 0 && v[0] == '1'; break;
    case 'u': f->published_unix_ms = strtoll(v, NULL, 10); break;
    case 'i': f->idempotency_key = v, f->idempotency_key_len = len; break;
    }
}

/* The event of f, aged from its publish time so history age bounds agree across nodes.
 * Return value: new reference, or NULL (no position, logged; or out of memory). */
static struct lg_event *event_of(struct redis_stream *s, struct lg_event_fields *f)
{
    if (f->seq == 0) {
        lg_warn("redis: topic %s: an event without a position; skipped", s->name);
        return NULL;
    }
    int64_t age_ms = lg_unix_ms() - f->published_unix_ms;
    uint64_t now = lg_mono_ns();
    f->published_mono_ns = age_ms > 0 && (uint64_t)age_ms * 1000000u < now
                               ? now - (uint64_t)age_ms * 1000000u : now;
    f->delta_base = s->delta_base; /* used only when it is this event's previous one */
    return lg_event_create(f);
}

static struct lg_event_fields fields_for(struct redis_stream *s, void *owner, uint32_t epoch)
{
    return (struct lg_event_fields){.topic_identity = owner, .topic_name = s->name,
                                    .topic_name_len = s->name_len, .epoch = epoch, .data = ""};
}

static uint64_t entry_seq(const redisReply *id)
{
    if (id->type != REDIS_REPLY_STRING)
        return 0;
    const char *dash = strchr(id->str, '-');
    return dash ? strtoull(dash + 1, NULL, 10) : 0;
}

/* The event of stream entry [id, [field, value, ...]]. */
static struct lg_event *entry_event(struct redis_stream *s, const redisReply *entry,
                                    uint32_t epoch, void *owner)
{
    if (entry->type != REDIS_REPLY_ARRAY || entry->elements != 2 ||
        entry->element[1]->type != REDIS_REPLY_ARRAY)
        return NULL;
    struct lg_event_fields f = fields_for(s, owner, epoch);
    f.seq = entry_seq(entry->element[0]);
    const redisReply *kv = entry->element[1];
    for (size_t i = 0; i + 1 < kv->elements; i += 2) {
        const redisReply *k = kv->element[i], *v = kv->element[i + 1];
        if (k->type == REDIS_REPLY_STRING && v->type == REDIS_REPLY_STRING && k->len == 1)
            set_field(&f, k->str[0], v->str, v->len);
    }
    return event_of(s, &f);
}

/* A decimal number ending at `end` (':'); *p moves past it. Return value: false if malformed. */
static bool take_number(const char **p, const char *end, uint64_t *out)
{
    char *stop;
    if (*p >= end || **p < '0' || **p > '9')
        return false;
    *out = strtoull(*p, &stop, 10);
    if (stop >= end || *stop != ':')
        return false;
    *p = stop + 1;
    return true;
}

/* A message of the append script: "<epoch>:<seq>:" then "<name><length>:<value>" per field.
 * Fields point into the payload. Return value: false if malformed. */
static bool parse_message(const char *p, size_t len, struct lg_event_fields *f)
{
    const char *end = p + len;
    uint64_t epoch, seq, n;
    if (!take_number(&p, end, &epoch) || !take_number(&p, end, &seq) || epoch > UINT32_MAX)
        return false;
    f->epoch = (uint32_t)epoch;
    f->seq = seq;
    while (p < end) {
        char name = *p++;
        if (!take_number(&p, end, &n) || n > (uint64_t)(end - p))
            return false;
        set_field(f, name, p, (size_t)n);
        p += n;
    }
    return true;
}

/* ---- Delivery into the hub and the mirror ---------------------------------------------------- */

static void deliver_lock(struct redis_shard *sh, void *owner)
{
    if (owner && sh->store->has_hooks)
        sh->store->hooks.lock(sh->store->hooks.arg, owner);
}

static void deliver_unlock(struct redis_shard *sh, void *owner)
{
    if (owner && sh->store->has_hooks)
        sh->store->hooks.unlock(sh->store->hooks.arg, owner);
}

/* Hand ev to the hub (nothing to do without an owner or hooks). Return value: false when it
 * had no room. */
static bool deliver(struct redis_shard *sh, void *owner, struct lg_event *ev)
{
    const struct redis_store *st = sh->store;
    return !owner || !st->has_hooks || st->hooks.deliver(st->hooks.arg, owner, ev);
}

static void *owner_of(struct redis_stream *s)
{
    pthread_mutex_lock(&s->lock);
    void *owner = s->owner;
    pthread_mutex_unlock(&s->lock);
    return owner;
}

/* A document topic's events are made against the newest one applied (bridge thread). */
static void keep_delta_base(struct redis_stream *s, struct lg_event *ev)
{
    if (!s->deltas)
        return;
    lg_event_unref(&s->delta_base);
    s->delta_base = lg_event_ref(ev);
}

/* Hand ev (the next position) to the hub, then keep it in the mirror. Owner's lock held.
 * Return value: false when the hub had no room (nothing kept: it is read again later). */
static bool offer(struct redis_stream *s, void *owner, struct lg_event *ev)
{
    struct redis_shard *sh = s->shard;
    if (!deliver(sh, owner, ev)) {
        LG_STAT_ADD(redis_tail_stalls, 1);
        return false;
    }
    pthread_mutex_lock(&s->lock);
    s->newest = ev->seq;
    if (lg_history_append(&s->history, lg_event_ref(ev), ev->published_mono_ns) != 0)
        lg_warn("redis: topic %s: event %" PRIu64 " not mirrored (out of memory)", s->name,
                ev->seq);
    pthread_mutex_unlock(&s->lock);
    keep_delta_base(s, ev);
    return true;
}

/* Forget the mirror (a new life, or nobody wants it any more). */
static void drop_mirror(struct redis_stream *s)
{
    void *owner = owner_of(s);
    deliver_lock(s->shard, owner);
    pthread_mutex_lock(&s->lock);
    lg_history_release(&s->history);
    lg_history_init(&s->history, s->bounds);
    s->newest = 0;
    s->epoch = 0;
    s->ready = false;
    pthread_mutex_unlock(&s->lock);
    deliver_unlock(s->shard, owner);
    s->heard = 0;
    s->empty_reads = 0;
    lg_event_unref(&s->delta_base);
}

/* ---- Reads: the load and catch-ups, at most READS_IN_FLIGHT_MAX at once ------------------- */

static void pump(struct redis_shard *sh);
static void schedule_tick(struct redis_shard *sh, uint32_t ms);
/* A new life of s began: its epoch is now epoch (0: not known yet). */
static void new_life(struct redis_stream *s, uint32_t epoch);
static void settle(struct redis_stream *s, uint32_t read_epoch, size_t entries, bool read_done);
static void stall(struct redis_stream *s);
static void say_behind(struct redis_stream *s, bool behind);

/* s needs a read of the stream (a load when its mirror is not ready). Bridge thread,
 * streams_lock held. */
static void need_read(struct redis_stream *s)
{
    struct redis_shard *sh = s->shard;
    if (s->queued || s->loading || s->catching || s->stalled)
        return;
    s->queued = true;
    s->queue_next = NULL;
    if (sh->queue_tail)
        sh->queue_tail->queue_next = s;
    else
        sh->queue_head = s;
    sh->queue_tail = s;
}

/* A read in flight names its stream by id: the stream may be closed before the answer. */
struct read_call {
    struct redis_shard *sh;
    uint64_t stream_id;
};

/* A read's answer: free the call, count it, find its stream (NULL if closed meanwhile).
 * Returns with streams_lock held. */
static struct redis_stream *end_read(struct read_call *call, struct redis_shard **sh)
{
    *sh = call->sh;
    pthread_mutex_lock(&(*sh)->streams_lock);
    if ((*sh)->reads_in_flight)
        (*sh)->reads_in_flight--;
    struct redis_stream *s = stream_by_id(*sh, call->stream_id);
    free(call);
    return s;
}

static void end_read_unlock(struct redis_shard *sh)
{
    pump(sh);
    pthread_mutex_unlock(&sh->streams_lock);
}

/* Whether a read's answer r has its shape: an array of n, the epoch first, the entries last.
 * When not, the read is logged and asked again (a lost connection resubscribes, and reads
 * then); a flushed script cache is reloaded. */
static bool read_answered(struct redis_stream *s, const redisReply *r, size_t n)
{
    if (r && r->type == REDIS_REPLY_ARRAY && r->elements == n &&
        r->element[0]->type == REDIS_REPLY_STRING && r->element[n - 1]->type == REDIS_REPLY_ARRAY)
        return true;
    if (r)
        lg_warn("redis: topic %s: reading it failed: %s", s->name,
                r->type == REDIS_REPLY_ERROR ? r->str : "unexpected answer");
    if (r && r->type == REDIS_REPLY_ERROR && strncmp(r->str, "NOSCRIPT", 8) == 0)
        lg_redis__load_scripts(s->shard);
    if (r && s->sub == REDIS_SUB_ON)
        need_read(s);
    return false;
}

/* A message named a position that was not applied: the read in flight, or the next one,
 * brings it. */
static void note_heard(struct redis_stream *s, uint32_t epoch, uint64_t seq)
{
    if (!s->heard || seq > s->heard || epoch != s->heard_epoch) {
        s->heard = seq;
        s->heard_epoch = epoch;
    }
}

/* After a read that brought `entries`: read again while a message named a position past the
 * mirror. A message proves its entry was appended before the read that follows it was sent,
 * so one more read finds it, unless the stream lost it (its key deleted): then the next event
 * shows the hole as a gap. */
static void after_read(struct redis_stream *s, size_t entries)
{
    if (!s->heard)
        return;
    pthread_mutex_lock(&s->lock);
    uint32_t epoch = s->epoch;
    uint64_t newest = s->newest;
    pthread_mutex_unlock(&s->lock);
    if (s->heard_epoch != epoch) {
        new_life(s, s->heard_epoch); /* the message came from another life than the one read */
        return;
    }
    if (s->heard <= newest || (entries == 0 && s->empty_reads++ > 0)) {
        s->heard = 0;
        s->empty_reads = 0;
        return;
    }
    need_read(s);
}

/* A read's answer of n elements: its stream, no longer reading, with streams_lock held; NULL
 * (the lock released) when the stream was closed meanwhile or the answer has another shape. */
static struct redis_stream *answered_read(void *priv, const redisReply *r, size_t n,
                                          struct redis_shard **sh)
{
    struct redis_stream *s = end_read(priv, sh);
    if (s)
        s->loading = s->catching = false; /* one read in flight per stream */
    if (!s || !read_answered(s, r, n)) {
        end_read_unlock(*sh);
        return NULL;
    }
    return s;
}

/* The answer of the load script: {epoch, counter, newest entries first}. */
static void on_load_reply(void *reply, void *priv)
{
    struct redis_shard *sh;
    struct redis_stream *s = answered_read(priv, reply, 3, &sh);
    if (!s)
        return;
    redisReply *r = reply;
    uint32_t epoch = (uint32_t)strtoul(r->element[0]->str, NULL, 10);
    uint64_t counter = r->element[1]->type == REDIS_REPLY_STRING
                           ? strtoull(r->element[1]->str, NULL, 10) : 0;
    const redisReply *entries = r->element[2];
    void *owner = owner_of(s);
    deliver_lock(sh, owner);
    pthread_mutex_lock(&s->lock);
    s->epoch = epoch;
    struct lg_event *newest_ev = NULL;
    for (size_t i = entries->elements; i-- > 0;) {
        struct lg_event *ev = entry_event(s, entries->element[i], epoch, owner);
        if (!ev)
            continue;
        s->newest = ev->seq;
        if (lg_history_append(&s->history, lg_event_ref(ev), ev->published_mono_ns) != 0)
            lg_warn("redis: topic %s: event %" PRIu64 " not mirrored", s->name, ev->seq);
        keep_delta_base(s, ev);
        if (newest_ev)
            lg_event_unref(&newest_ev);
        newest_ev = ev;
    }
    if (counter > s->newest)
        s->newest = counter;
    s->ready = true;
    pthread_mutex_unlock(&s->lock);
    /* Subscribers that arrived while it loaded resolve their replay on an event of the
     * topic: offer them the newest (live subscribers have it already and skip it). */
    if (newest_ev && !deliver(sh, owner, newest_ev))
        lg_warn("redis: topic %s: no inbox room to tell waiting subscribers it loaded; they "
                "resolve on its next event", s->name);
    if (newest_ev)
        lg_event_unref(&newest_ev);
    deliver_unlock(sh, owner);
    settle(s, epoch, entries->elements, true);
    end_read_unlock(sh);
}

/* The mirror starts the new life empty and a catch-up reads it from its first position, so
 * live subscribers get every event of it in order, after a reset (lg_subscriber_offer sees the
 * new epoch on its first event). With the epoch unknown, the load learns it. */
static void begin_life(struct redis_stream *s, uint32_t epoch)
{
    lg_warn("redis: topic %s: the stream has a new epoch (Redis lost it, or its keys were "
            "deleted): its subscribers get a reset", s->name);
    drop_mirror(s);
    if (!epoch)
        return;
    void *owner = owner_of(s);
    deliver_lock(s->shard, owner);
    pthread_mutex_lock(&s->lock);
    s->epoch = epoch;
    s->ready = true;
    pthread_mutex_unlock(&s->lock);
    deliver_unlock(s->shard, owner);
}

static void new_life(struct redis_stream *s, uint32_t epoch)
{
    begin_life(s, epoch);
    need_read(s);
}

void lg_redis__release_held(struct redis_stream *s)
{
    for (uint32_t i = 0; i < s->held_count; i++)
        lg_event_unref(&s->held[i]);
    free(s->held);
    s->held = NULL;
    s->held_count = s->held_cap = 0;
    s->held_overflow = false;
}

/* Keep an event that cannot be applied now, in order: a message that came while a read was
 * in flight (applied after the read, so nothing depends on the stream still holding it: its
 * keys may be gone by then), or events an inbox had no room for (applied when a worker makes
 * room, without reading them again). Past LG_REDIS_HELD_MAX the stream is read for them. */
static void hold_event(struct redis_stream *s, struct lg_event *ev)
{
    if (s->held_overflow || s->held_count == LG_REDIS_HELD_MAX) {
        if (!s->held_overflow)
            lg_redis__release_held(s);
        s->held_overflow = true;
        note_heard(s, ev->epoch, ev->seq);
        return;
    }
    if (s->held_count == s->held_cap) {
        uint32_t cap = s->held_cap ? 2 * s->held_cap : 8;
        struct lg_event **grown = realloc(s->held, cap * sizeof *grown);
        if (!grown) {
            note_heard(s, ev->epoch, ev->seq);
            return;
        }
        s->held = grown;
        s->held_cap = cap;
    }
    s->held[s->held_count++] = lg_event_ref(ev);
}

/* The event of a message that cannot be applied now: kept in order behind what is held. */
static void hold(struct redis_stream *s, struct lg_event_fields *f)
{
    struct lg_event *ev = event_of(s, f);
    if (!ev) {
        note_heard(s, f->epoch, f->seq);
        return;
    }
    hold_event(s, ev);
    lg_event_unref(&ev);
}

static void keep_held_from(struct redis_stream *s, uint32_t from);

/*
 * The held events, in order, after the last read (read_done) or when a worker made room.
 * A read ran at one point among them: those of another life before any of the read's life
 * were published before it saw its life (that old life is gone from Redis and was replaced:
 * skipped); one of another life after them, or any other life without a read, is a newer
 * life, begun here. A hole leaves the rest to the stream; a full inbox keeps the rest held.
 */
static void apply_held(struct redis_stream *s, uint32_t read_epoch, bool read_done)
{
    void *owner = owner_of(s);
    bool read_life_seen = !read_done;
    for (uint32_t i = 0; i < s->held_count; i++) {
        struct lg_event *ev = s->held[i];
        pthread_mutex_lock(&s->lock);
        uint32_t epoch = s->epoch;
        uint64_t newest = s->newest;
        pthread_mutex_unlock(&s->lock);
        read_life_seen |= ev->epoch == read_epoch;
        if (ev->epoch != epoch) {
            if (!read_life_seen)
                continue;
            begin_life(s, ev->epoch);
            newest = 0;
        }
        if (ev->seq <= newest)
            continue;
        if (ev->seq != newest + 1) {
            note_heard(s, ev->epoch, ev->seq);
            need_read(s);
            break;
        }
        deliver_lock(s->shard, owner);
        bool taken = offer(s, owner, ev);
        deliver_unlock(s->shard, owner);
        if (!taken) {
            keep_held_from(s, i);
            stall(s);
            return;
        }
    }
    bool overflow = s->held_overflow;
    lg_redis__release_held(s);
    if (overflow)
        need_read(s); /* what was not held is in the stream */
}

/* Drop the held events before index from (applied), keep the rest in order. */
static void keep_held_from(struct redis_stream *s, uint32_t from)
{
    for (uint32_t i = 0; i < from; i++)
        lg_event_unref(&s->held[i]);
    memmove(s->held, s->held + from, (s->held_count - from) * sizeof *s->held);
    s->held_count -= from;
}

/* A read's answer was applied: the held messages, then what was heard and not read. */
static void settle(struct redis_stream *s, uint32_t read_epoch, size_t entries, bool read_done)
{
    if (s->queued || s->loading || s->catching || s->stalled)
        return; /* another read follows, or room: keep holding */
    apply_held(s, read_epoch, read_done);
    if (s->stalled)
        return;
    after_read(s, entries);
    if (!s->queued && !s->stalled)
        say_behind(s, false); /* caught up */
}

/* Apply entries (oldest first) past the mirror's newest. Return value: false when an inbox
 * had no room (the rest is held, for when it has room). */
static bool apply_entries(struct redis_stream *s, const redisReply *entries)
{
    struct redis_shard *sh = s->shard;
    pthread_mutex_lock(&s->lock);
    void *owner = s->owner;
    uint32_t epoch = s->epoch;
    pthread_mutex_unlock(&s->lock);
    bool taken = true;
    deliver_lock(sh, owner);
    for (size_t i = 0; i < entries->elements; i++) {
        struct lg_event *ev = entry_event(s, entries->element[i], epoch, owner);
        if (!ev)
            continue;
        pthread_mutex_lock(&s->lock);
        bool seen = ev->seq <= s->newest;
        pthread_mutex_unlock(&s->lock);
        if (!seen && (!taken || !(taken = offer(s, owner, ev))))
            hold_event(s, ev); /* this one and every later one wait for room */
        lg_event_unref(&ev);
    }
    deliver_unlock(sh, owner);
    return taken;
}

static void on_behind_written(void *reply, void *priv)
{
    redisReply *r = reply;
    (void)priv;
    if (r && r->type == REDIS_REPLY_ERROR)
        lg_warn("redis: cannot mark a topic behind: %s", r->str);
}

/* Tell every publisher of s, on any node, that this node is behind it (set), or no more. */
static void say_behind(struct redis_stream *s, bool behind)
{
    if (behind) {
        uint64_t now = lg_mono_ms();
        if (s->said_behind && now - s->said_behind_ms < BEHIND_TTL_MS / 2)
            return;
        char ttl[16];
        snprintf(ttl, sizeof ttl, "%d", BEHIND_TTL_MS);
        const char *argv[] = {"SET", s->key_behind, "1", "PX", ttl};
        const size_t lens[] = {3, strlen(s->key_behind), 1, 2, strlen(ttl)};
        if (lg_redis_command(s->shard->bridge, on_behind_written, NULL, 5, argv, lens) == 0) {
            if (!s->said_behind)
                LG_STAT_ADD(redis_behind_marked, 1);
            s->said_behind = true;
            s->said_behind_ms = now;
        }
    } else if (s->said_behind) {
        const char *argv[] = {"DEL", s->key_behind};
        const size_t lens[] = {3, strlen(s->key_behind)};
        if (lg_redis_command(s->shard->bridge, on_behind_written, NULL, 2, argv, lens) == 0)
            s->said_behind = false;
    }
}

static void stall(struct redis_stream *s)
{
    struct redis_shard *sh = s->shard;
    if (s->stalled)
        return;
    s->stalled = true;
    s->stalled_since_ms = lg_mono_ms();
    s->stalled_next = sh->stalled;
    sh->stalled = s;
    atomic_store_explicit(&sh->any_stalled, true, memory_order_release);
    schedule_tick(sh, STALL_RETRY_MS); /* unless a worker's room comes first */
}

/* The answer of the catch-up script: {epoch, entries from newest + 1}. */
static void on_catch_up_reply(void *reply, void *priv)
{
    struct redis_shard *sh;
    struct redis_stream *s = answered_read(priv, reply, 2, &sh);
    if (!s)
        return;
    redisReply *r = reply;
    uint32_t epoch = (uint32_t)strtoul(r->element[0]->str, NULL, 10);
    pthread_mutex_lock(&s->lock);
    bool same_life = epoch == s->epoch;
    pthread_mutex_unlock(&s->lock);
    if (!same_life) {
        new_life(s, epoch);
        end_read_unlock(sh);
        return;
    }
    const redisReply *entries = r->element[1];
    bool more = entries->elements >= LG_REDIS_CATCH_UP_COUNT;
    const redisReply *last = more ? entries->element[entries->elements - 1] : NULL;
    if (last && last->type == REDIS_REPLY_ARRAY && last->elements == 2)
        note_heard(s, epoch, entry_seq(last->element[0]) + 1); /* read on from there */
    if (!apply_entries(s, entries))
        stall(s);
    else if (more)
        need_read(s);
    else
        settle(s, epoch, entries->elements, true);
    end_read_unlock(sh);
}

static int send_load(struct redis_stream *s, struct read_call *call)
{
    struct redis_shard *sh = s->shard;
    char epoch[16], count[16];
    snprintf(epoch, sizeof epoch, "%" PRIu32, lg_redis__random_epoch(sh));
    snprintf(count, sizeof count, "%" PRIu32, s->bounds.max_events);
    const char *argv[] = {"EVALSHA", sh->store->load_script.sha, "3", s->key_stream, s->key_counter,
                          s->key_epoch, epoch, count};
    size_t lens[8];
    for (size_t i = 0; i < 8; i++)
        lens[i] = strlen(argv[i]);
    int rc = lg_redis_command(sh->bridge, on_load_reply, call, 8, argv, lens);
    s->loading = rc == 0;
    return rc;
}

static int send_catch_up(struct redis_stream *s, struct read_call *call)
{
    struct redis_shard *sh = s->shard;
    char from[24], count[16];
    pthread_mutex_lock(&s->lock);
    snprintf(from, sizeof from, "%" PRIu64, s->newest + 1);
    pthread_mutex_unlock(&s->lock);
    snprintf(count, sizeof count, "%d", LG_REDIS_CATCH_UP_COUNT);
    const char *argv[] = {"EVALSHA", sh->store->catch_up_script.sha, "2", s->key_stream,
                          s->key_epoch, from, count};
    size_t lens[7];
    for (size_t i = 0; i < 7; i++)
        lens[i] = strlen(argv[i]);
    int rc = lg_redis_command(sh->bridge, on_catch_up_reply, call, 7, argv, lens);
    s->catching = rc == 0;
    return rc;
}

/* Send the queued reads, up to READS_IN_FLIGHT_MAX in flight. streams_lock held. */
static void pump(struct redis_shard *sh)
{
    while (sh->queue_head && sh->reads_in_flight < READS_IN_FLIGHT_MAX &&
           lg_redis_bridge_up(sh->bridge)) {
        struct redis_stream *s = sh->queue_head;
        sh->queue_head = s->queue_next;
        if (!sh->queue_head)
            sh->queue_tail = NULL;
        s->queued = false;
        if (s->sub != REDIS_SUB_ON)
            continue; /* read once its subscription is confirmed */
        struct read_call *call = malloc(sizeof *call);
        if (!call) {
            stall(s); /* tried again shortly */
            continue;
        }
        *call = (struct read_call){.sh = sh, .stream_id = s->id};
        pthread_mutex_lock(&s->lock);
        bool ready = s->ready;
        pthread_mutex_unlock(&s->lock);
        if ((ready ? send_catch_up(s, call) : send_load(s, call)) == 0)
            sh->reads_in_flight++;
        else
            free(call); /* not connected: everything is read again once it is */
    }
}

/* ---- The live feed ------------------------------------------------------------------------- */

/* A message of s's channel. streams_lock held. */
static void on_message(struct redis_stream *s, const redisReply *payload)
{
    void *owner = owner_of(s);
    struct lg_event_fields f = fields_for(s, owner, 0);
    if (payload->type != REDIS_REPLY_STRING || !parse_message(payload->str, payload->len, &f)) {
        lg_warn("redis: topic %s: a malformed message on its channel; read from the stream",
                s->name);
        need_read(s);
        return;
    }
    pthread_mutex_lock(&s->lock);
    bool ready = s->ready;
    uint32_t epoch = s->epoch;
    uint64_t newest = s->newest;
    pthread_mutex_unlock(&s->lock);
    if (s->loading || s->catching || s->queued || s->stalled || s->held_count) {
        hold(s, &f); /* in order behind the read, or behind what waits for room */
        if (s->stalled && s->held_count >= BEHIND_HELD)
            say_behind(s, true);
        return;
    }
    if (!ready) {
        note_heard(s, f.epoch, f.seq); /* read from the stream once it can be */
        return;
    }
    if (f.epoch != epoch) {
        new_life(s, f.epoch);
        hold(s, &f); /* its catch-up from the first position is queued */
        return;
    }
    if (f.seq <= newest)
        return;
    if (f.seq != newest + 1) {
        note_heard(s, f.epoch, f.seq); /* a hole: read what is missing from the stream */
        need_read(s);
        return;
    }
    struct lg_event *ev = event_of(s, &f);
    if (!ev) {
        need_read(s);
        return;
    }
    deliver_lock(s->shard, owner);
    bool taken = offer(s, owner, ev);
    deliver_unlock(s->shard, owner);
    if (!taken) {
        hold_event(s, ev);
        stall(s);
    }
    lg_event_unref(&ev);
}

static void subscribe(struct redis_stream *s)
{
    if (lg_redis_subscribe(s->shard->bridge, s->key_channel, strlen(s->key_channel)) == 0)
        s->sub = REDIS_SUB_ASKED;
}

static void on_subscribed(struct redis_stream *s)
{
    s->sub = REDIS_SUB_ON;
    need_read(s); /* the load, or a catch-up over what came before the subscription */
}

static void on_unsubscribed(struct redis_stream *s, bool listening)
{
    s->sub = REDIS_SUB_NONE;
    if (listening)
        subscribe(s); /* wanted again while it left */
}

/* Whether local subscribers want s, or did within LINGER_MS (interest_lock taken here). */
static bool listening(struct redis_stream *s, uint64_t now_ms)
{
    struct redis_shard *sh = s->shard;
    pthread_mutex_lock(&sh->interest_lock);
    bool on = s->wanted || now_ms - s->last_wanted_ms < LINGER_MS;
    pthread_mutex_unlock(&sh->interest_lock);
    return on;
}

void lg_redis__on_pubsub(void *arg, void *reply)
{
    struct redis_shard *sh = arg;
    redisReply *r = reply;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 3 ||
        r->element[0]->type != REDIS_REPLY_STRING)
        return;
    const char *kind = r->element[0]->str;
    pthread_mutex_lock(&sh->streams_lock);
    struct redis_stream *s = stream_by_channel(sh, r->element[1]);
    if (s && strcmp(kind, "message") == 0)
        on_message(s, r->element[2]);
    else if (s && strcmp(kind, "subscribe") == 0)
        on_subscribed(s);
    else if (s && strcmp(kind, "unsubscribe") == 0)
        on_unsubscribed(s, listening(s, lg_mono_ms()));
    pump(sh);
    pthread_mutex_unlock(&sh->streams_lock);
}

/* ---- Interest: subscribing, lingering, leaving ----------------------------------------------- */

static void linger(struct redis_stream *s)
{
    struct redis_shard *sh = s->shard;
    if (s->lingering)
        return;
    s->lingering = true;
    s->linger_next = sh->linger;
    sh->linger = s;
    schedule_tick(sh, SWEEP_MS);
}

/* Act on what the hub said of s (streams_lock held). */
static void follow_interest(struct redis_stream *s, uint64_t now_ms)
{
    pthread_mutex_lock(&s->shard->interest_lock);
    bool refresh = s->refresh_asked;
    s->refresh_asked = false;
    pthread_mutex_unlock(&s->shard->interest_lock);
    if (!listening(s, now_ms)) {
        if (s->sub == REDIS_SUB_ASKED || s->sub == REDIS_SUB_ON)
            linger(s);
        return;
    }
    pthread_mutex_lock(&s->shard->interest_lock);
    bool wanted = s->wanted;
    pthread_mutex_unlock(&s->shard->interest_lock);
    if (!wanted) /* touched (a subscribe that did not stay): lingers from now */
        linger(s);
    if (s->sub == REDIS_SUB_NONE)
        subscribe(s);
    else if (refresh && s->sub == REDIS_SUB_ON)
        need_read(s);
}

/* Unsubscribe the lingering streams nobody wanted for LINGER_MS. streams_lock held. */
static void sweep_linger(struct redis_shard *sh, uint64_t now_ms)
{
    for (struct redis_stream **pp = &sh->linger; *pp;) {
        struct redis_stream *s = *pp;
        bool on = listening(s, now_ms);
        pthread_mutex_lock(&sh->interest_lock);
        bool wanted = s->wanted;
        pthread_mutex_unlock(&sh->interest_lock);
        if (!wanted && on) {
            pp = &s->linger_next;
            continue;
        }
        *pp = s->linger_next;
        s->lingering = false;
        if (on || s->sub == REDIS_SUB_NONE || s->sub == REDIS_SUB_LEAVING)
            continue;
        if (lg_redis_unsubscribe(sh->bridge, s->key_channel, strlen(s->key_channel)) == 0)
            s->sub = REDIS_SUB_LEAVING;
        drop_mirror(s);
        lg_redis__release_held(s);
    }
}

static void retry_stalled(struct redis_shard *sh)
{
    struct redis_stream *s = sh->stalled;
    sh->stalled = NULL;
    atomic_store_explicit(&sh->any_stalled, false, memory_order_release);
    for (struct redis_stream *next; s; s = next) {
        next = s->stalled_next;
        s->stalled = false;
        pthread_mutex_lock(&s->lock);
        uint32_t epoch = s->epoch;
        pthread_mutex_unlock(&s->lock);
        settle(s, epoch, 1, false); /* the held events, then caught up or stalled again */
        if (s->stalled && (s->held_count >= BEHIND_HELD ||
                           lg_mono_ms() - s->stalled_since_ms >= BEHIND_AFTER_MS))
            say_behind(s, true);
    }
}

static void on_tick(void *arg)
{
    struct redis_shard *sh = arg;
    sh->tick_at_ms = 0;
    uint64_t now = lg_mono_ms();
    pthread_mutex_lock(&sh->streams_lock);
    retry_stalled(sh);
    sweep_linger(sh, now);
    if (sh->linger)
        schedule_tick(sh, SWEEP_MS);
    pump(sh);
    pthread_mutex_unlock(&sh->streams_lock);
}

/* Arm the bridge's timer for ms from now unless it fires sooner already. */
static void schedule_tick(struct redis_shard *sh, uint32_t ms)
{
    uint64_t at = lg_mono_ms() + ms;
    if (sh->tick_at_ms && sh->tick_at_ms <= at)
        return;
    sh->tick_at_ms = at;
    lg_redis_bridge_later(sh->bridge, ms, on_tick, sh);
}

/* Take s off the bridge's own lists (streams_lock held). */
static void unlist(struct redis_shard *sh, struct redis_stream *s)
{
    struct redis_stream **pp, *prev = NULL;
    for (pp = &sh->queue_head; s->queued && *pp && *pp != s; prev = *pp, pp = &(*pp)->queue_next)
        ;
    if (s->queued && *pp) {
        *pp = s->queue_next;
        if (sh->queue_tail == s)
            sh->queue_tail = prev;
    }
    for (pp = &sh->linger; s->lingering && *pp && *pp != s; pp = &(*pp)->linger_next)
        ;
    if (s->lingering && *pp)
        *pp = s->linger_next;
    for (pp = &sh->stalled; s->stalled && *pp && *pp != s; pp = &(*pp)->stalled_next)
        ;
    if (s->stalled && *pp)
        *pp = s->stalled_next;
}

/* The streams whose topic the hub let go (close_stream): leave their channels and free them.
 * A read still in flight finds no stream by its id, a message or an unsubscribe confirmation
 * no stream by its channel; a behind mark this node set expires (BEHIND_TTL_MS). */
static void take_closing(struct redis_shard *sh)
{
    pthread_mutex_lock(&sh->interest_lock);
    struct redis_stream *s = sh->closing;
    sh->closing = NULL;
    pthread_mutex_unlock(&sh->interest_lock);
    for (struct redis_stream *next; s; s = next) {
        next = s->closing_next;
        if (s->sub == REDIS_SUB_ASKED || s->sub == REDIS_SUB_ON)
            lg_redis_unsubscribe(sh->bridge, s->key_channel, strlen(s->key_channel));
        unlist(sh, s);
        lg_redis__stream_free(s);
    }
}

/* The streams whose interest changed since the last kick (each once), in any order. */
static void take_marked(struct redis_shard *sh, uint64_t now_ms)
{
    pthread_mutex_lock(&sh->interest_lock);
    struct redis_stream *s = sh->marked;
    sh->marked = NULL;
    for (struct redis_stream *m = s; m; m = m->marked_next) {
        m->marked = false; /* from here the hub may mark it again (and relink marked_next) */
        m->taken_next = m->marked_next;
    }
    pthread_mutex_unlock(&sh->interest_lock);
    for (; s; s = s->taken_next)
        follow_interest(s, now_ms);
}

void lg_redis__run_kick(struct lg_redis_job *job, bool up)
{
    struct redis_shard *sh =
        (struct redis_shard *)((char *)job - offsetof(struct redis_shard, kick));
    atomic_store(&sh->kick_queued, false);
    if (!up)
        return; /* lg_redis__on_up() subscribes every wanted stream */
    pthread_mutex_lock(&sh->streams_lock);
    take_closing(sh); /* first: a topic made anew subscribes its channel after the old left */
    take_marked(sh, lg_mono_ms());
    pump(sh);
    pthread_mutex_unlock(&sh->streams_lock);
}

void lg_redis__run_unstall(struct lg_redis_job *job, bool up)
{
    struct redis_shard *sh =
        (struct redis_shard *)((char *)job - offsetof(struct redis_shard, unstall));
    atomic_store(&sh->unstall_queued, false);
    if (!up)
        return;
    pthread_mutex_lock(&sh->streams_lock);
    retry_stalled(sh);
    pump(sh);
    pthread_mutex_unlock(&sh->streams_lock);
}

void lg_redis__room(struct redis_shard *sh)
{
    if (!atomic_load_explicit(&sh->any_stalled, memory_order_acquire))
        return;
    if (!atomic_exchange(&sh->unstall_queued, true) &&
        !lg_redis_bridge_post(sh->bridge, &sh->unstall))
        atomic_store(&sh->unstall_queued, false); /* the timer retries */
}

void lg_redis__kick(struct redis_shard *sh)
{
    if (!atomic_exchange(&sh->kick_queued, true) && !lg_redis_bridge_post(sh->bridge, &sh->kick))
        atomic_store(&sh->kick_queued, false); /* down: lg_redis__on_up() takes them */
}

void lg_redis__mark(struct redis_stream *s, bool refresh)
{
    struct redis_shard *sh = s->shard;
    pthread_mutex_lock(&sh->interest_lock);
    s->refresh_asked |= refresh;
    bool first = !s->marked;
    if (first) {
        s->marked = true;
        s->marked_next = sh->marked;
        sh->marked = s;
    }
    pthread_mutex_unlock(&sh->interest_lock);
    if (first)
        lg_redis__kick(sh);
}

/* ---- Connection events ----------------------------------------------------------------------- */

static void on_script_loaded(void *reply, void *priv)
{
    redisReply *r = reply;
    (void)priv;
    if (r && r->type == REDIS_REPLY_ERROR)
        lg_warn("redis: SCRIPT LOAD failed: %s", r->str);
}

void lg_redis__load_scripts(struct redis_shard *sh)
{
    const struct redis_script *scripts[] = {&sh->store->append_script, &sh->store->load_script,
                                            &sh->store->catch_up_script};
    for (size_t i = 0; i < sizeof scripts / sizeof scripts[0]; i++) {
        const char *argv[] = {"SCRIPT", "LOAD", scripts[i]->text};
        const size_t lens[] = {6, 4, strlen(scripts[i]->text)};
        lg_redis_command(sh->bridge, on_script_loaded, NULL, 3, argv, lens);
    }
}

/* Subscribe every stream local subscribers want (the Pub/Sub connection is new). */
static void resubscribe(struct redis_shard *sh)
{
    uint64_t now = lg_mono_ms();
    pthread_mutex_lock(&sh->streams_lock);
    take_closing(sh);
    take_marked(sh, now);
    for (struct lg_dlink *l = sh->streams.first; l; l = l->next) {
        struct redis_stream *s = lg_redis__stream_of(l);
        if (s->sub == REDIS_SUB_NONE && listening(s, now))
            subscribe(s); /* then a catch-up (or the load) once Redis confirms it */
    }
    pthread_mutex_unlock(&sh->streams_lock);
}

void lg_redis__on_up(void *arg)
{
    struct redis_shard *sh = arg;
    lg_redis__load_scripts(sh); /* before any EVALSHA on this connection */
    resubscribe(sh);
}

void lg_redis__on_feed_lost(void *arg)
{
    struct redis_shard *sh = arg;
    pthread_mutex_lock(&sh->streams_lock);
    sh->linger = NULL;
    for (struct lg_dlink *l = sh->streams.first; l; l = l->next) {
        struct redis_stream *s = lg_redis__stream_of(l);
        s->sub = REDIS_SUB_NONE; /* reads in flight complete as usual */
        s->lingering = false;
    }
    pthread_mutex_unlock(&sh->streams_lock);
}

void lg_redis__on_feed_back(void *arg)
{
    resubscribe(arg);
}

void lg_redis__on_down(void *arg)
{
    struct redis_shard *sh = arg;
    uint64_t now = lg_mono_ms();
    pthread_mutex_lock(&sh->streams_lock);
    sh->queue_head = sh->queue_tail = NULL;
    sh->linger = sh->stalled = NULL;
    sh->reads_in_flight = 0;
    for (struct lg_dlink *l = sh->streams.first; l; l = l->next) {
        struct redis_stream *s = lg_redis__stream_of(l);
        s->sub = REDIS_SUB_NONE;
        s->loading = s->catching = s->queued = s->stalled = s->lingering = false;
        lg_redis__release_held(s); /* what the connection lost is read from the streams */
        if (!listening(s, now))
            drop_mirror(s); /* nobody wants it: not kept stale */
    }
    pthread_mutex_unlock(&sh->streams_lock);
}
