/* redis_tail.c - the Redis store's reading side (store_redis.h): loading a stream's mirror,
 * the XREAD tail that keeps every mirror current and delivers through the hooks, and the epoch
 * check after a reconnect. Everything here runs on the bridge thread, but lg_redis__kick(). */
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

#define TAIL_BLOCK_MS "100"  /* a new stream joins the tail within this */
#define TAIL_COUNT "512"     /* entries per stream per read */
#define STALL_RETRY_MS 5     /* an inbox was full: read again after this */

/* KEYS: stream, counter, epoch; ARGV: epoch if new, how many of the newest entries */
static const char sync_script[] =
    "redis.call('SET', KEYS[3], ARGV[1], 'NX') "
    "return {redis.call('GET', KEYS[3]), redis.call('GET', KEYS[2]) or '0', "
    "        redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', ARGV[2])}";

/* KEYS: epoch; ARGV: epoch if new. After a reconnect: is it still the stream's life we
 * mirror? (Redis restarted without its data, or the keys were deleted: a new epoch.) */
static const char check_script[] =
    "redis.call('SET', KEYS[1], ARGV[1], 'NX') return redis.call('GET', KEYS[1])";

uint32_t lg_redis__random_epoch(void)
{
    uint32_t e = 0;
    while (e == 0)
        if (getrandom(&e, sizeof e, 0) != (ssize_t)sizeof e)
            e = (uint32_t)lg_mono_ns();
    return e;
}

/* ---- Events from stream entries ----------------------------------------------------------- */

static uint64_t entry_seq(const redisReply *id)
{
    if (id->type != REDIS_REPLY_STRING)
        return 0;
    const char *dash = strchr(id->str, '-');
    return dash ? strtoull(dash + 1, NULL, 10) : 0;
}

/* The event of entry [id, [field, value, ...]] of stream s. Return value: new reference, or
 * NULL (malformed entry, logged; or out of memory). */
static struct lg_event *entry_event(struct redis_stream *s, const redisReply *entry,
                                    uint32_t epoch, void *owner)
{
    if (entry->type != REDIS_REPLY_ARRAY || entry->elements != 2 ||
        entry->element[1]->type != REDIS_REPLY_ARRAY)
        return NULL;
    struct lg_event_fields f = {.topic = owner, .topic_name = s->name,
                                .topic_name_len = s->name_len, .epoch = epoch,
                                .seq = entry_seq(entry->element[0]), .data = "", .data_len = 0};
    const redisReply *kv = entry->element[1];
    for (size_t i = 0; i + 1 < kv->elements; i += 2) {
        const redisReply *k = kv->element[i], *v = kv->element[i + 1];
        if (k->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING || k->len != 1)
            continue;
        switch (k->str[0]) {
        case 'y': f.type = v->str, f.type_len = v->len; break;
        case 'k': f.key = v->str, f.key_len = v->len; break;
        case 'd': f.data = v->str, f.data_len = v->len; break;
        case 'j': f.data_is_json = v->str[0] == '1'; break;
        case 'u': f.published_unix_ms = strtoll(v->str, NULL, 10); break;
        case 'i': f.idempotency_key = v->str, f.idempotency_key_len = v->len; break;
        }
    }
    if (f.seq == 0) {
        lg_warn("redis: topic %s: an entry without a position id; skipped", s->name);
        return NULL;
    }
    /* Age it from its publish time, so history age bounds agree across nodes. */
    int64_t age_ms = lg_unix_ms() - f.published_unix_ms;
    uint64_t now = lg_mono_ns();
    f.published_mono_ns = age_ms > 0 && (uint64_t)age_ms * 1000000u < now
                              ? now - (uint64_t)age_ms * 1000000u : now;
    return lg_event_create(&f);
}

/* ---- The tail ----------------------------------------------------------------------------- */

static void tail_read(struct redis_store *st);

static void tail_read_later(void *st)
{
    tail_read(st);
}

static void deliver_lock(struct redis_store *st, void *owner)
{
    if (owner && st->has_hooks)
        st->hooks.lock(st->hooks.arg, owner);
}

static void deliver_unlock(struct redis_store *st, void *owner)
{
    if (owner && st->has_hooks)
        st->hooks.unlock(st->hooks.arg, owner);
}

/* Apply entries (oldest first) of s past its newest. Bridge thread, streams_lock held. */
static void apply_entries(struct redis_stream *s, const redisReply *entries)
{
    struct redis_store *st = s->store;
    pthread_mutex_lock(&s->lock);
    void *owner = s->owner;
    uint32_t epoch = s->epoch;
    pthread_mutex_unlock(&s->lock);
    s->stalled = false;
    deliver_lock(st, owner);
    for (size_t i = 0; i < entries->elements; i++) {
        struct lg_event *ev = entry_event(s, entries->element[i], epoch, owner);
        if (!ev)
            continue;
        pthread_mutex_lock(&s->lock);
        bool seen = ev->seq <= s->newest;
        pthread_mutex_unlock(&s->lock);
        if (seen) {
            lg_event_unref(&ev);
            continue;
        }
        if (owner && st->has_hooks && !st->hooks.deliver(st->hooks.arg, owner, ev)) {
            s->stalled = true; /* read again from newest, after a while */
            LG_STAT_ADD(redis_tail_stalls, 1);
            lg_event_unref(&ev);
            break;
        }
        pthread_mutex_lock(&s->lock);
        s->newest = ev->seq;
        if (lg_history_append(&s->history, ev, ev->published_mono_ns) != 0)
            lg_warn("redis: topic %s: event %" PRIu64 " not mirrored (out of memory)", s->name,
                    s->newest);
        pthread_mutex_unlock(&s->lock);
    }
    deliver_unlock(st, owner);
}

static struct redis_stream *stream_by_key(struct redis_store *st, const redisReply *key)
{
    for (struct redis_stream *s = st->streams; s; s = s->next)
        if (key->type == REDIS_REPLY_STRING && strlen(s->key_stream) == key->len &&
            memcmp(s->key_stream, key->str, key->len) == 0)
            return s;
    return NULL;
}

static void on_tail_reply(void *reply, void *priv)
{
    struct redis_store *st = priv;
    redisReply *r = reply;
    st->tail_reading = false;
    if (!r)
        return; /* the connection failed: the bridge's up() restarts the tail */
    bool stalled = false;
    if (r->type == REDIS_REPLY_ARRAY) {
        pthread_mutex_lock(&st->streams_lock);
        for (size_t i = 0; i < r->elements; i++) {
            redisReply *pair = r->element[i];
            if (pair->type != REDIS_REPLY_ARRAY || pair->elements != 2)
                continue;
            struct redis_stream *s = stream_by_key(st, pair->element[0]);
            if (s && pair->element[1]->type == REDIS_REPLY_ARRAY)
                apply_entries(s, pair->element[1]);
            stalled |= s && s->stalled;
        }
        pthread_mutex_unlock(&st->streams_lock);
    } else if (r->type == REDIS_REPLY_ERROR) {
        lg_warn("redis: tail read failed: %s", r->str);
        stalled = true;
    }
    if (stalled)
        lg_redis_bridge_later(st->bridge, STALL_RETRY_MS, tail_read_later, st);
    else
        tail_read(st);
}

/* XREAD BLOCK over every ready stream from its newest position (bridge thread). */
static void tail_read(struct redis_store *st)
{
    if (st->tail_reading || !lg_redis_bridge_up(st->bridge))
        return;
    pthread_mutex_lock(&st->streams_lock);
    size_t n = 0;
    for (struct redis_stream *s = st->streams; s; s = s->next)
        n += s->ready && !s->checking;
    if (n == 0) {
        pthread_mutex_unlock(&st->streams_lock);
        return;
    }
    size_t argc = 6 + 2 * n;
    const char **argv = calloc(argc, sizeof *argv);
    size_t *lens = calloc(argc, sizeof *lens);
    char (*ids)[32] = calloc(n, sizeof *ids);
    if (!argv || !lens || !ids) {
        pthread_mutex_unlock(&st->streams_lock);
        free(argv), free(lens), free(ids);
        lg_redis_bridge_later(st->bridge, 100, tail_read_later, st);
        return;
    }
    const char *head[] = {"XREAD", "COUNT", TAIL_COUNT, "BLOCK", TAIL_BLOCK_MS, "STREAMS"};
    for (size_t i = 0; i < 6; i++)
        argv[i] = head[i];
    size_t k = 0;
    for (struct redis_stream *s = st->streams; s; s = s->next) {
        if (!s->ready || s->checking)
            continue;
        pthread_mutex_lock(&s->lock);
        snprintf(ids[k], sizeof ids[k], "0-%" PRIu64, s->newest);
        pthread_mutex_unlock(&s->lock);
        argv[6 + k] = s->key_stream;
        argv[6 + n + k] = ids[k];
        k++;
    }
    for (size_t i = 0; i < argc; i++)
        lens[i] = strlen(argv[i]);
    /* under the lock: the command copies the keys of streams a close may free */
    if (lg_redis_tail_command(st->bridge, on_tail_reply, st, (int)argc, argv, lens) == 0)
        st->tail_reading = true;
    pthread_mutex_unlock(&st->streams_lock);
    free(argv), free(lens), free(ids);
}

/* ---- Loading a stream --------------------------------------------------------------------- */

/* A load in flight names its stream by id: the stream may be closed before the answer. */
struct sync_call {
    struct redis_store *st;
    uint64_t stream_id;
};

static struct redis_stream *stream_by_id(struct redis_store *st, uint64_t id)
{
    for (struct redis_stream *s = st->streams; s; s = s->next)
        if (s->id == id)
            return s;
    return NULL;
}

/* A reply's call ends here: free it and find its stream, which may have closed meanwhile.
 * Returns with streams_lock held, the stream or NULL. */
static struct redis_stream *end_call(struct sync_call *call, struct redis_store **st)
{
    *st = call->st;
    pthread_mutex_lock(&(*st)->streams_lock);
    struct redis_stream *s = stream_by_id(*st, call->stream_id);
    free(call);
    return s;
}

static void on_sync_reply(void *reply, void *priv)
{
    struct redis_store *st;
    struct redis_stream *s = end_call(priv, &st);
    redisReply *r = reply;
    if (!s) {
        pthread_mutex_unlock(&st->streams_lock);
        return; /* closed meanwhile */
    }
    s->syncing = false;
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 3 ||
        r->element[0]->type != REDIS_REPLY_STRING || r->element[2]->type != REDIS_REPLY_ARRAY) {
        if (r)
            lg_warn("redis: topic %s: loading failed: %s", s->name,
                    r->type == REDIS_REPLY_ERROR ? r->str : "unexpected answer");
        pthread_mutex_unlock(&st->streams_lock);
        return; /* retried when the connection is back (or at the next kick) */
    }
    uint32_t epoch = (uint32_t)strtoul(r->element[0]->str, NULL, 10);
    uint64_t counter = r->element[1]->type == REDIS_REPLY_STRING
                           ? strtoull(r->element[1]->str, NULL, 10) : 0;
    const redisReply *entries = r->element[2]; /* newest first */
    pthread_mutex_lock(&s->lock);
    void *owner = s->owner;
    pthread_mutex_unlock(&s->lock);
    deliver_lock(st, owner);
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
    if (newest_ev && owner && st->has_hooks && !st->hooks.deliver(st->hooks.arg, owner, newest_ev))
        lg_warn("redis: topic %s: no inbox room to tell waiting subscribers it loaded; they "
                "resolve on its next event", s->name);
    if (newest_ev)
        lg_event_unref(&newest_ev);
    deliver_unlock(st, owner);
    pthread_mutex_unlock(&st->streams_lock);
    tail_read(st);
}

static void sync_stream(struct redis_stream *s)
{
    char epoch[16], count[16];
    snprintf(epoch, sizeof epoch, "%" PRIu32, lg_redis__random_epoch());
    snprintf(count, sizeof count, "%" PRIu32, s->bounds.max_events);
    const char *argv[] = {"EVAL", sync_script, "3", s->key_stream, s->key_counter, s->key_epoch,
                          epoch, count};
    size_t lens[8];
    for (size_t i = 0; i < 8; i++)
        lens[i] = strlen(argv[i]);
    struct sync_call *call = malloc(sizeof *call);
    if (!call)
        return; /* retried at the next kick */
    *call = (struct sync_call){.st = s->store, .stream_id = s->id};
    if (lg_redis_command(s->store->bridge, on_sync_reply, call, 8, argv, lens) == 0)
        s->syncing = true;
    else
        free(call);
}

static void on_check_reply(void *reply, void *priv)
{
    struct redis_store *st;
    struct redis_stream *s = end_call(priv, &st);
    redisReply *r = reply;
    if (!s || !r) {
        pthread_mutex_unlock(&st->streams_lock);
        return; /* closed, or the connection failed again: checked at the next up */
    }
    s->checking = false;
    uint32_t epoch = r->type == REDIS_REPLY_STRING ? (uint32_t)strtoul(r->str, NULL, 10) : 0;
    pthread_mutex_lock(&s->lock);
    void *owner = s->owner;
    bool same = epoch == s->epoch;
    pthread_mutex_unlock(&s->lock);
    if (!same && epoch) {
        /* A new life: forget the old one and load this one; subscribers get a reset on its
         * first event (lg_subscriber_offer) */
        lg_warn("redis: topic %s: the stream has a new epoch (Redis lost it, or it was "
                "deleted): its subscribers get a reset", s->name);
        deliver_lock(st, owner);
        pthread_mutex_lock(&s->lock);
        lg_history_release(&s->history);
        s->newest = 0;
        s->ready = false;
        pthread_mutex_unlock(&s->lock);
        deliver_unlock(st, owner);
        sync_stream(s);
    }
    pthread_mutex_unlock(&st->streams_lock);
    tail_read(st);
}

static void check_stream(struct redis_stream *s)
{
    char epoch[16];
    snprintf(epoch, sizeof epoch, "%" PRIu32, lg_redis__random_epoch());
    const char *argv[] = {"EVAL", check_script, "1", s->key_epoch, epoch};
    size_t lens[5];
    for (size_t i = 0; i < 5; i++)
        lens[i] = strlen(argv[i]);
    struct sync_call *call = malloc(sizeof *call);
    if (!call)
        return;
    *call = (struct sync_call){.st = s->store, .stream_id = s->id};
    if (lg_redis_command(s->store->bridge, on_check_reply, call, 5, argv, lens) == 0)
        s->checking = true;
    else
        free(call);
}

/* Bridge thread: load every stream not loaded yet, then (re)start the tail. */
static void kick_all(struct redis_store *st)
{
    if (!lg_redis_bridge_up(st->bridge))
        return;
    pthread_mutex_lock(&st->streams_lock);
    for (struct redis_stream *s = st->streams; s; s = s->next) {
        pthread_mutex_lock(&s->lock);
        bool ready = s->ready, bound = s->owner || !st->has_hooks;
        pthread_mutex_unlock(&s->lock);
        if (!ready && bound && !s->syncing) /* its events name their owner: bound first */
            sync_stream(s);
    }
    pthread_mutex_unlock(&st->streams_lock);
    tail_read(st);
}

void lg_redis__run_kick(struct lg_redis_job *job, bool up)
{
    struct redis_store *st =
        (struct redis_store *)((char *)job - offsetof(struct redis_store, kick));
    atomic_store(&st->kick_queued, false);
    if (up)
        kick_all(st);
}

void lg_redis__on_up(void *arg)
{
    struct redis_store *st = arg;
    st->tail_reading = false;
    /* Loaded streams are tailed again once their epoch is known to be the same */
    pthread_mutex_lock(&st->streams_lock);
    for (struct redis_stream *s = st->streams; s; s = s->next) {
        pthread_mutex_lock(&s->lock);
        bool ready = s->ready;
        pthread_mutex_unlock(&s->lock);
        if (ready)
            check_stream(s);
    }
    pthread_mutex_unlock(&st->streams_lock);
    kick_all(st);
}

void lg_redis__on_down(void *arg)
{
    struct redis_store *st = arg;
    st->tail_reading = false;
    pthread_mutex_lock(&st->streams_lock);
    for (struct redis_stream *s = st->streams; s; s = s->next)
        s->syncing = s->checking = false;
    pthread_mutex_unlock(&st->streams_lock);
}

void lg_redis__kick(struct redis_store *st)
{
    if (!atomic_exchange(&st->kick_queued, true) && !lg_redis_bridge_post(st->bridge, &st->kick))
        atomic_store(&st->kick_queued, false); /* down: lg_redis__on_up() loads it */
}
