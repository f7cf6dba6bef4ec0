/* store_redis.c - see store_redis.h. */
#include "store_redis.h"

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
#define KEY_MAX 1024

/* KEYS: stream, counter, epoch[, idempotency]; ARGV: epoch if new, maxlen, window ms, fields */
static const char append_script[] =
    "redis.call('SET', KEYS[3], ARGV[1], 'NX') "
    "local e = redis.call('GET', KEYS[3]) "
    "if #KEYS == 4 then local old = redis.call('GET', KEYS[4]) "
    "  if old then return {e, old, 1} end end "
    "local n = redis.call('INCR', KEYS[2]) "
    "redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[2], '0-' .. n, unpack(ARGV, 4)) "
    "if #KEYS == 4 then redis.call('SET', KEYS[4], n, 'PX', ARGV[3], 'NX') end "
    "return {e, tostring(n), 0}";

/* KEYS: stream, counter, epoch; ARGV: epoch if new, how many of the newest entries */
static const char sync_script[] =
    "redis.call('SET', KEYS[3], ARGV[1], 'NX') "
    "return {redis.call('GET', KEYS[3]), redis.call('GET', KEYS[2]) or '0', "
    "        redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', ARGV[2])}";

/* KEYS: epoch; ARGV: epoch if new. After a reconnect: is it still the stream's life we
 * mirror? (Redis restarted without its data, or the keys were deleted: a new epoch.) */
static const char check_script[] =
    "redis.call('SET', KEYS[1], ARGV[1], 'NX') return redis.call('GET', KEYS[1])";

struct redis_store;

struct redis_stream {
    struct lg_stream base;
    struct redis_store *store;
    char *name;                 /* immutable */
    size_t name_len;
    char *key_stream, *key_counter, *key_epoch; /* immutable */
    size_t prefix_len;          /* of key_stream before ":s": the idempotency keys' start */
    struct lg_history_bounds bounds;
    pthread_mutex_t lock;       /* the mirror */
    void *owner;                /* {lock} the hooks' name for it */
    uint32_t epoch;             /* {lock} */
    uint64_t newest;            /* {lock} */
    bool ready;                 /* {lock} */
    struct lg_history history;  /* {lock} */
    /* Bridge thread only. */
    bool syncing;
    bool stalled;               /* the last delivery found no room: retried */
    bool checking;              /* its epoch is being checked after a reconnect: not tailed */
    uint64_t id;                /* {store->streams_lock} what a load in flight names it by */
    struct redis_stream *next;  /* {store->streams_lock} */
};

struct redis_store {
    struct lg_store base;
    struct lg_redis_options opts;
    char *url, *prefix;         /* copies opts point at */
    struct lg_redis_hooks hooks;
    bool has_hooks;
    struct lg_redis_bridge *bridge;
    pthread_mutex_t streams_lock;
    struct redis_stream *streams; /* {streams_lock} every open stream */
    struct lg_redis_job kick;     /* sync what is not synced, (re)start the tail */
    _Atomic bool kick_queued;
    bool tail_reading;            /* bridge thread: an XREAD is outstanding */
    uint64_t next_id;             /* {streams_lock} */
};

static struct redis_stream *rs(const struct lg_stream *s)
{
    return (struct redis_stream *)s;
}

static uint32_t random_epoch(void)
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

static void on_sync_reply(void *reply, void *priv)
{
    struct sync_call *call = priv;
    struct redis_store *st = call->st;
    redisReply *r = reply;
    pthread_mutex_lock(&st->streams_lock);
    struct redis_stream *s = stream_by_id(st, call->stream_id);
    free(call);
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
    snprintf(epoch, sizeof epoch, "%" PRIu32, random_epoch());
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
    struct sync_call *call = priv;
    struct redis_store *st = call->st;
    redisReply *r = reply;
    pthread_mutex_lock(&st->streams_lock);
    struct redis_stream *s = stream_by_id(st, call->stream_id);
    free(call);
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
    snprintf(epoch, sizeof epoch, "%" PRIu32, random_epoch());
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

static void run_kick(struct lg_redis_job *job, bool up)
{
    struct redis_store *st = (struct redis_store *)((char *)job - offsetof(struct redis_store, kick));
    atomic_store(&st->kick_queued, false);
    if (up)
        kick_all(st);
}

static void on_bridge_up(void *arg)
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

static void on_bridge_down(void *arg)
{
    struct redis_store *st = arg;
    st->tail_reading = false;
    pthread_mutex_lock(&st->streams_lock);
    for (struct redis_stream *s = st->streams; s; s = s->next)
        s->syncing = s->checking = false;
    pthread_mutex_unlock(&st->streams_lock);
}

static void kick(struct redis_store *st)
{
    if (!atomic_exchange(&st->kick_queued, true) && !lg_redis_bridge_post(st->bridge, &st->kick))
        atomic_store(&st->kick_queued, false); /* down: on_bridge_up() loads it */
}

/* ---- Appends ------------------------------------------------------------------------------- */

struct append_job {
    struct lg_redis_job job;
    struct redis_stream *s;
    struct lg_event_fields f;  /* strings point into text[] */
    lg_append_done *done;
    void *arg;
    char text[];
};

static void append_finish(struct append_job *a, enum lg_append_status status, uint32_t epoch,
                          uint64_t seq)
{
    struct lg_event *ev = NULL;
    if (status == LG_APPEND_OK || status == LG_APPEND_DUPLICATE) {
        a->f.epoch = epoch;
        a->f.seq = seq;
        ev = lg_event_create(&a->f);
        if (!ev)
            status = LG_APPEND_OOM;
    }
    a->done(a->arg, status, ev);
    if (ev)
        lg_event_unref(&ev);
    free(a);
}

static void on_append_reply(void *reply, void *priv)
{
    struct append_job *a = priv;
    redisReply *r = reply;
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 3 ||
        r->element[0]->type != REDIS_REPLY_STRING || r->element[1]->type != REDIS_REPLY_STRING) {
        if (r)
            lg_warn("redis: append to %s failed: %s", a->s->name,
                    r->type == REDIS_REPLY_ERROR ? r->str : "unexpected answer");
        append_finish(a, LG_APPEND_UNAVAILABLE, 0, 0);
        return;
    }
    bool duplicate = r->element[2]->type == REDIS_REPLY_INTEGER && r->element[2]->integer == 1;
    append_finish(a, duplicate ? LG_APPEND_DUPLICATE : LG_APPEND_OK,
                  (uint32_t)strtoul(r->element[0]->str, NULL, 10),
                  strtoull(r->element[1]->str, NULL, 10));
}

static void run_append(struct lg_redis_job *job, bool up)
{
    struct append_job *a = (struct append_job *)job;
    struct redis_stream *s = a->s;
    const struct lg_event_fields *f = &a->f;
    char epoch[16], maxlen[16], window[16], unix_ms[24], idem[KEY_MAX];
    snprintf(epoch, sizeof epoch, "%" PRIu32, random_epoch());
    snprintf(maxlen, sizeof maxlen, "%" PRIu32, s->bounds.max_events);
    snprintf(window, sizeof window, "%" PRIu32, s->store->opts.idempotency_window_ms);
    snprintf(unix_ms, sizeof unix_ms, "%" PRId64, f->published_unix_ms);
    const char *argv[24];
    size_t lens[24], n = 0;
#define ARG(p, l) (argv[n] = (p), lens[n] = (l), n++)
#define ARGS(p) ARG(p, strlen(p))
    ARGS("EVAL"), ARGS(append_script), ARGS(f->idempotency_key ? "4" : "3");
    ARGS(s->key_stream), ARGS(s->key_counter), ARGS(s->key_epoch);
    if (f->idempotency_key) {
        int l = snprintf(idem, sizeof idem, "%.*s:i:%.*s", (int)s->prefix_len, s->key_stream,
                         (int)f->idempotency_key_len, f->idempotency_key);
        ARG(idem, (size_t)l < sizeof idem ? (size_t)l : sizeof idem - 1);
    }
    ARGS(epoch), ARGS(maxlen), ARGS(window);
    if (f->type)
        ARGS("y"), ARG(f->type, f->type_len);
    if (f->key)
        ARGS("k"), ARG(f->key, f->key_len);
    ARGS("d"), ARG(f->data, f->data_len);
    ARGS("j"), ARGS(f->data_is_json ? "1" : "0");
    ARGS("u"), ARGS(unix_ms);
    if (f->idempotency_key)
        ARGS("i"), ARG(f->idempotency_key, f->idempotency_key_len);
#undef ARGS
#undef ARG
    if (!up || lg_redis_command(s->store->bridge, on_append_reply, a, (int)n, argv, lens) != 0)
        append_finish(a, LG_APPEND_UNAVAILABLE, 0, 0);
}

static char *copy_into(char **at, const char *p, size_t len)
{
    if (!p)
        return NULL;
    char *dst = *at;
    memcpy(dst, p, len);
    dst[len] = '\0';
    *at += len + 1;
    return dst;
}

static void append(struct lg_stream *base, struct lg_event_fields *f, lg_append_done *done,
                   void *arg)
{
    struct redis_stream *s = rs(base);
    size_t text = f->topic_name_len + f->type_len + f->key_len + f->data_len +
                  f->idempotency_key_len + 5;
    struct append_job *a = malloc(sizeof *a + text);
    if (!a) {
        done(arg, LG_APPEND_OOM, NULL);
        return;
    }
    *a = (struct append_job){.job = {.run = run_append}, .s = s, .f = *f, .done = done,
                             .arg = arg};
    char *at = a->text;
    a->f.topic_name = copy_into(&at, f->topic_name, f->topic_name_len);
    a->f.type = copy_into(&at, f->type, f->type_len);
    a->f.key = copy_into(&at, f->key, f->key_len);
    a->f.data = copy_into(&at, f->data, f->data_len);
    a->f.idempotency_key = copy_into(&at, f->idempotency_key, f->idempotency_key_len);
    if (!lg_redis_bridge_post(s->store->bridge, &a->job)) {
        free(a);
        done(arg, LG_APPEND_UNAVAILABLE, NULL);
    }
}

/* ---- Streams ------------------------------------------------------------------------------- */

static char *key_of(const struct redis_store *st, const char *name, size_t len, const char *what)
{
    size_t cap = strlen(st->prefix) + len + 8;
    char *k = malloc(cap);
    if (k)
        snprintf(k, cap, "%s{%.*s}:%s", st->prefix, (int)len, name, what);
    return k;
}

static void stream_free(struct redis_stream *s)
{
    lg_history_release(&s->history);
    pthread_mutex_destroy(&s->lock);
    free(s->name), free(s->key_stream), free(s->key_counter), free(s->key_epoch);
    free(s);
}

static struct lg_stream *stream_open(struct lg_store *store, const char *name, size_t len,
                                     struct lg_history_bounds bounds)
{
    struct redis_store *st = (struct redis_store *)store;
    struct redis_stream *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->base.store = store;
    s->store = st;
    s->name = strndup(name, len);
    s->name_len = len;
    s->bounds = bounds;
    s->key_stream = key_of(st, name, len, "s");
    s->key_counter = key_of(st, name, len, "n");
    s->key_epoch = key_of(st, name, len, "e");
    pthread_mutex_init(&s->lock, NULL);
    lg_history_init(&s->history, bounds);
    if (!s->name || !s->key_stream || !s->key_counter || !s->key_epoch) {
        stream_free(s);
        return NULL;
    }
    s->prefix_len = strlen(s->key_stream) - 2;
    pthread_mutex_lock(&st->streams_lock);
    s->id = ++st->next_id;
    s->next = st->streams;
    st->streams = s;
    pthread_mutex_unlock(&st->streams_lock);
    if (!st->has_hooks)
        kick(st); /* else once bound */
    return &s->base;
}

static void stream_close(struct lg_stream *base)
{
    struct redis_stream *s = rs(base);
    struct redis_store *st = s->store;
    /* Unlinked, nothing on the bridge can reach it (loads name it by id, the tail reads the
     * list under the lock). Appends must not be pending (the hub closes streams only after
     * the bridge stopped: it collects no Redis topic while it runs). */
    pthread_mutex_lock(&st->streams_lock);
    for (struct redis_stream **pp = &st->streams; *pp; pp = &(*pp)->next) {
        if (*pp == s) {
            *pp = s->next;
            break;
        }
    }
    pthread_mutex_unlock(&st->streams_lock);
    stream_free(s);
}

static void stream_bind(struct lg_stream *base, void *owner)
{
    struct redis_stream *s = rs(base);
    pthread_mutex_lock(&s->lock);
    s->owner = owner;
    pthread_mutex_unlock(&s->lock);
    kick(s->store); /* load it */
}

#define MIRROR_READ(type, expr)                                                                   \
    struct redis_stream *s = rs(base);                                                           \
    pthread_mutex_lock(&s->lock);                                                                \
    type v = (expr);                                                                             \
    pthread_mutex_unlock(&s->lock);                                                              \
    return v

static uint32_t epoch_of(const struct lg_stream *base) { MIRROR_READ(uint32_t, s->epoch); }
static uint64_t newest(const struct lg_stream *base) { MIRROR_READ(uint64_t, s->newest); }
static bool ready(const struct lg_stream *base) { MIRROR_READ(bool, s->ready); }
static uint64_t oldest(const struct lg_stream *base)
{
    MIRROR_READ(uint64_t, s->history.count ? lg_history_first_seq(&s->history) : s->newest + 1);
}

/* Linear in the retained events: the hub asks Redis (the append script), not this. */
static struct lg_event *find_key(const struct lg_stream *base, const char *key, size_t len)
{
    struct redis_stream *s = rs(base);
    struct lg_event *found = NULL;
    pthread_mutex_lock(&s->lock);
    for (uint32_t i = 0; i < s->history.count && !found; i++) {
        struct lg_event *ev = lg_history_at(&s->history, i);
        if (ev->idempotency_key && strlen(ev->idempotency_key) == len &&
            memcmp(ev->idempotency_key, key, len) == 0)
            found = ev;
    }
    pthread_mutex_unlock(&s->lock);
    return found;
}

static int read_after(const struct lg_stream *base, uint64_t after, size_t max,
                      uint64_t max_bytes, struct lg_store_page *page)
{
    struct redis_stream *s = rs(base);
    *page = (struct lg_store_page){0};
    pthread_mutex_lock(&s->lock);
    const struct lg_history *h = &s->history;
    uint32_t index = 0;
    while (index < h->count && lg_history_at(h, index)->seq <= after)
        index++;
    size_t available = h->count - index, n = 0;
    uint64_t bytes = 0;
    while (n < available && n < max) {
        bytes += lg_history_at(h, index + (uint32_t)n)->size;
        if (n > 0 && bytes > max_bytes)
            break;
        n++;
    }
    page->more = available > n;
    int rc = 0;
    if (n > 0) {
        page->events = malloc(n * sizeof *page->events);
        if (page->events) {
            for (size_t i = 0; i < n; i++)
                page->events[i] = lg_event_ref(lg_history_at(h, index + (uint32_t)i));
            page->count = n;
        } else {
            page->more = false;
            rc = -1;
        }
    }
    pthread_mutex_unlock(&s->lock);
    return rc;
}

static bool evict_oldest(struct lg_stream *base)
{
    struct redis_stream *s = rs(base);
    pthread_mutex_lock(&s->lock);
    bool any = s->history.count > 0;
    if (any)
        lg_history_evict_oldest(&s->history);
    pthread_mutex_unlock(&s->lock);
    return any;
}

static uint32_t expire(struct lg_stream *base, uint64_t now_mono_ns)
{
    MIRROR_READ(uint32_t, lg_history_expire(&s->history, now_mono_ns));
}

static const char *state(const struct lg_store *store)
{
    return lg_redis_state_name(lg_redis_bridge_state(((const struct redis_store *)store)->bridge));
}

static void stop(struct lg_store *store)
{
    lg_redis_bridge_stop(((struct redis_store *)store)->bridge);
}

static void destroy(struct lg_store *store)
{
    struct redis_store *st = (struct redis_store *)store;
    lg_redis_bridge_destroy(st->bridge);
    pthread_mutex_destroy(&st->streams_lock);
    free(st->url), free(st->prefix);
    free(st);
}

static const struct lg_store_ops redis_ops = {
    .name = "redis",
    .stream_open = stream_open,
    .stream_close = stream_close,
    .epoch = epoch_of,
    .newest = newest,
    .oldest = oldest,
    .find_key = find_key,
    .append = append,
    .read_after = read_after,
    .evict_oldest = evict_oldest,
    .expire = expire,
    .destroy = destroy,
    .remote = true,
    .bind = stream_bind,
    .ready = ready,
    .state = state,
    .stop = stop,
};

struct lg_store *lg_redis_store_create(const struct lg_redis_options *opts,
                                       const struct lg_redis_hooks *hooks, char *err,
                                       size_t err_cap)
{
    struct redis_store *st = calloc(1, sizeof *st);
    if (!st) {
        snprintf(err, err_cap, "out of memory");
        return NULL;
    }
    st->base.ops = &redis_ops;
    st->opts = *opts;
    st->url = strdup(opts->url);
    st->prefix = strdup(opts->key_prefix);
    st->opts.url = st->url;
    st->opts.key_prefix = st->prefix;
    st->kick.run = run_kick;
    if (hooks) {
        st->hooks = *hooks;
        st->has_hooks = true;
    }
    pthread_mutex_init(&st->streams_lock, NULL);
    struct lg_redis_bridge_user user = {.arg = st, .up = on_bridge_up, .down = on_bridge_down};
    if (st->url && st->prefix)
        lg_redis_bridge_start(&st->opts, user, &st->bridge, err, err_cap);
    else
        snprintf(err, err_cap, "out of memory");
    if (!st->bridge) {
        pthread_mutex_destroy(&st->streams_lock);
        free(st->url), free(st->prefix);
        free(st);
        return NULL;
    }
    return &st->base;
}
