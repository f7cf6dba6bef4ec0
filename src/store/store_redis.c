/* store_redis.c - see store_redis.h. The reading side (live feed, loading, catch-up) is
 * redis_feed.c. */
#include "store_redis.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>
#include <openssl/evp.h>

#include "clock.h"
#include "event.h"
#include "history.h"
#include "log.h"
#include "stats.h"
#include "store_redis_internal.h"

#define KEY_MAX 1024

/*
 * The scripts. A topic's life is its epoch key: when it is missing (Redis lost its data, the
 * keys were flushed or deleted) whatever is left of the stream and its counter belongs to no
 * life, so it is deleted and a new epoch begins; every node then sees the new epoch on the
 * next message or read and sends its subscribers a reset.
 */
#define LIFE_PROLOGUE                                                                              \
    "local function life(stream, counter, epoch, fresh) "                                          \
    "  local e = redis.call('GET', epoch) "                                                        \
    "  if e then return e end "                                                                    \
    "  redis.call('DEL', stream, counter) "                                                        \
    "  redis.call('SET', epoch, fresh) "                                                           \
    "  return fresh "                                                                              \
    "end "

/*
 * KEYS: stream, counter, epoch, behind[, idempotency]; ARGV: epoch if new, maxlen, window ms,
 * channel, then the entry's field/value pairs. Assigns the position (INCR), appends (XADD),
 * remembers the idempotency key and publishes the event to the topic's channel, all at once,
 * so the channel carries every position in order. A counter behind the stream (its key alone
 * was lost) is moved past the stream's last entry once, here, instead of failing every append.
 * While a node that delivers the topic says it is behind (the behind key, which that node
 * sets with an expiry), nothing is appended and the answer says so (2): the publisher is
 * paced, wherever it publishes. A retry rewrites its key unchanged: a write, so a WAIT behind
 * it also covers the original append (WAIT counts replicas up to the connection's last write,
 * and the retry may come on another connection than the original). The message:
 * "<epoch>:<seq>:" then per field "<name><length>:<value>".
 */
static const char append_text[] =
    LIFE_PROLOGUE
    "local e = life(KEYS[1], KEYS[2], KEYS[3], ARGV[1]) "
    "if #KEYS == 5 then local old = redis.call('GET', KEYS[5]) "
    "  if old then redis.call('SET', KEYS[5], old, 'KEEPTTL') return {e, old, 1} end end "
    "if redis.call('EXISTS', KEYS[4]) == 1 then return {e, '0', 2} end "
    "local n = redis.call('INCR', KEYS[2]) "
    "local added = redis.pcall('XADD', KEYS[1], 'MAXLEN', '~', ARGV[2], '0-' .. n, "
    "                          unpack(ARGV, 5)) "
    "if type(added) == 'table' and added.err then "
    "  local info = redis.call('XINFO', 'STREAM', KEYS[1]) "
    "  for i = 1, #info, 2 do "
    "    if info[i] == 'last-generated-id' then "
    "      n = tonumber(string.match(info[i + 1], '%-(%d+)$')) + 1 end end "
    "  redis.call('SET', KEYS[2], n) "
    "  redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[2], '0-' .. n, unpack(ARGV, 5)) "
    "end "
    "if #KEYS == 5 then redis.call('SET', KEYS[5], n, 'PX', ARGV[3], 'NX') end "
    "local m = {e, ':', n, ':'} "
    "for i = 5, #ARGV, 2 do m[#m + 1] = ARGV[i] .. #ARGV[i + 1] .. ':' .. ARGV[i + 1] end "
    "redis.call('PUBLISH', ARGV[4], table.concat(m)) "
    "return {e, tostring(n), 0}";

/* KEYS: stream, counter, epoch; ARGV: epoch if new, how many of the newest entries. */
static const char load_text[] =
    LIFE_PROLOGUE
    "local e = life(KEYS[1], KEYS[2], KEYS[3], ARGV[1]) "
    "return {e, redis.call('GET', KEYS[2]) or '0', "
    "        redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', ARGV[2])}";

/* KEYS: stream, epoch; ARGV: first position, count. The epoch beside the entries, so a new
 * life is never read as the continuation of the old one. */
static const char catch_up_text[] =
    "return {redis.call('GET', KEYS[2]) or '', "
    "        redis.call('XRANGE', KEYS[1], '0-' .. ARGV[1], '+', 'COUNT', ARGV[2])}";

static int script_init(struct redis_script *sc, const char *text)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    sc->text = text;
    if (EVP_Digest(text, strlen(text), md, &len, EVP_sha1(), NULL) != 1 || len != 20)
        return -1;
    for (unsigned i = 0; i < len; i++)
        snprintf(sc->sha + 2 * i, 3, "%02x", md[i]);
    return 0;
}

static struct redis_stream *rs(const struct lg_stream *s)
{
    return (struct redis_stream *)s;
}

/* ---- Appends ------------------------------------------------------------------------------- */

/* With redis.wait_replicas, a WAIT follows the script on the connection: the script's answer
 * is kept until the WAIT's. */
enum append_wait { WAIT_NONE = 0, WAIT_SENT, WAIT_UNSENT };

struct append_job {
    struct lg_redis_job job;
    struct redis_stream *s;
    struct lg_event_fields f;  /* strings point into text[] */
    lg_append_done *done;
    void *arg;
    enum append_wait wait;
    enum lg_append_status status; /* the script's answer, while the WAIT's is awaited */
    uint32_t epoch;
    uint64_t seq;
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

/* The script answered: finish, or keep its answer for the WAIT behind it. */
static void append_appended(struct append_job *a, enum lg_append_status status, uint32_t epoch,
                            uint64_t seq)
{
    if (a->wait == WAIT_UNSENT && status != LG_APPEND_OOM && status != LG_APPEND_BEHIND)
        status = LG_APPEND_UNAVAILABLE; /* not known to be replicated */
    if (a->wait != WAIT_SENT) {
        append_finish(a, status, epoch, seq);
        return;
    }
    a->status = status;
    a->epoch = epoch;
    a->seq = seq;
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
        if (r && r->type == REDIS_REPLY_ERROR && strncmp(r->str, "NOSCRIPT", 8) == 0)
            lg_redis__load_scripts(a->s->shard); /* flushed meanwhile: the next one finds it */
        append_appended(a, LG_APPEND_UNAVAILABLE, 0, 0);
        return;
    }
    long long answer = r->element[2]->type == REDIS_REPLY_INTEGER ? r->element[2]->integer : 0;
    if (answer == 2) {
        append_appended(a, LG_APPEND_BEHIND, 0, 0);
        return;
    }
    append_appended(a, answer == 1 ? LG_APPEND_DUPLICATE : LG_APPEND_OK,
                    (uint32_t)strtoul(r->element[0]->str, NULL, 10),
                    strtoull(r->element[1]->str, NULL, 10));
}

/* The WAIT's answer: the number of replicas that have every write of the connection so far,
 * the script's included. Fewer than asked: 503, and the event may be there (and may be lost
 * by a failover): a retry with the same Idempotency-Key answers it once replicated. */
static void on_wait_reply(void *reply, void *priv)
{
    struct append_job *a = priv;
    redisReply *r = reply;
    uint32_t want = a->s->store->opts.wait_replicas;
    long long got = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
    enum lg_append_status status = a->status;
    struct lg_redis_bridge *bridge = a->s->shard->bridge;
    bool short_wait = false;
    if ((status == LG_APPEND_OK || status == LG_APPEND_DUPLICATE) && got < (long long)want) {
        LG_STAT_ADD(redis_replicas_short, 1);
        static struct lg_ratelimit rl;
        lg_log_ratelimited(&rl, 1000, LG_LOG_WARN,
                           "redis: topic %s: event %" PRIu64 " reached %lld of %" PRIu32
                           " replicas (redis.wait_replicas) within redis.wait_timeout_ms: "
                           "answered 503", a->s->name, a->seq, got < 0 ? 0 : got, want);
        status = LG_APPEND_UNAVAILABLE;
        short_wait = r != NULL;
    }
    append_finish(a, status, a->epoch, a->seq);
    if (short_wait) /* the master may have lost its replicas to a failover */
        lg_redis_bridge_recheck_master(bridge);
}

/* WAIT right behind the script on the same connection: pipelined, so the next append is sent
 * without waiting for either answer. */
static void send_wait(struct append_job *a)
{
    const struct lg_redis_options *o = &a->s->store->opts;
    char replicas[16], timeout[16];
    snprintf(replicas, sizeof replicas, "%" PRIu32, o->wait_replicas);
    snprintf(timeout, sizeof timeout, "%" PRIu32, o->wait_timeout_ms);
    const char *argv[] = {"WAIT", replicas, timeout};
    const size_t lens[] = {4, strlen(replicas), strlen(timeout)};
    a->wait = lg_redis_command(a->s->shard->bridge, on_wait_reply, a, 3, argv, lens) == 0
                  ? WAIT_SENT : WAIT_UNSENT;
}

static void run_append(struct lg_redis_job *job, bool up)
{
    struct append_job *a = (struct append_job *)job;
    struct redis_stream *s = a->s;
    const struct lg_event_fields *f = &a->f;
    char epoch[16], maxlen[16], window[16], unix_ms[24], idem[KEY_MAX];
    snprintf(epoch, sizeof epoch, "%" PRIu32, lg_redis__random_epoch(s->shard));
    snprintf(maxlen, sizeof maxlen, "%" PRIu32, s->bounds.max_events);
    snprintf(window, sizeof window, "%" PRIu32, s->store->opts.idempotency_window_ms);
    snprintf(unix_ms, sizeof unix_ms, "%" PRId64, f->published_unix_ms);
    const char *argv[28];
    size_t lens[28], n = 0;
#define ARG(p, l) (argv[n] = (p), lens[n] = (l), n++)
#define ARGS(p) ARG(p, strlen(p))
    ARGS("EVALSHA"), ARGS(s->store->append_script.sha), ARGS(f->idempotency_key ? "5" : "4");
    ARGS(s->key_stream), ARGS(s->key_counter), ARGS(s->key_epoch), ARGS(s->key_behind);
    if (f->idempotency_key) {
        int l = snprintf(idem, sizeof idem, "%.*s:i:%.*s", (int)s->prefix_len, s->key_stream,
                         (int)f->idempotency_key_len, f->idempotency_key);
        ARG(idem, (size_t)l < sizeof idem ? (size_t)l : sizeof idem - 1);
    }
    ARGS(epoch), ARGS(maxlen), ARGS(window), ARGS(s->key_channel);
    if (f->type)
        ARGS("y"), ARG(f->type, f->type_len);
    if (f->key)
        ARGS("k"), ARG(f->key, f->key_len);
    ARGS("d"), ARG(f->data, f->data_len);
    ARGS("j"), ARGS(f->data_is_json ? "1" : "0");
    ARGS("u"), ARGS(unix_ms);
    if (f->idempotency_key)
        ARGS("i"), ARG(f->idempotency_key, f->idempotency_key_len);
    if (f->tags)
        ARGS("t"), ARG(f->tags, f->tags_len);
#undef ARGS
#undef ARG
    if (!up || lg_redis_command(s->shard->bridge, on_append_reply, a, (int)n, argv, lens) != 0)
        append_finish(a, LG_APPEND_UNAVAILABLE, 0, 0);
    else if (s->store->opts.wait_replicas)
        send_wait(a);
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

static void append_by_script(struct lg_stream *base, struct lg_event_fields *f,
                             lg_append_done *done, void *arg)
{
    struct redis_stream *s = rs(base);
    size_t text = f->topic_name_len + f->type_len + f->key_len + f->data_len +
                  f->idempotency_key_len + f->tags_len + 6;
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
    a->f.tags = copy_into(&at, f->tags, f->tags_len);
    if (!lg_redis_bridge_post(s->shard->bridge, &a->job)) {
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
    lg_redis__release_held(s);
    lg_history_release(&s->history);
    lg_event_unref(&s->delta_base);
    pthread_mutex_destroy(&s->lock);
    free(s->name), free(s->key_stream), free(s->key_counter), free(s->key_epoch);
    free(s->key_channel), free(s->key_behind);
    free(s);
}

static struct lg_stream *open_stream(struct lg_store *store, const char *name, size_t len,
                                     struct lg_history_bounds bounds, bool deltas)
{
    struct redis_store *st = (struct redis_store *)store;
    struct redis_shard *sh = &st->shards[lg_redis__hash(name, len) % st->shard_count];
    struct redis_stream *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->base.store = store;
    s->store = st;
    s->shard = sh;
    s->name = strndup(name, len);
    s->name_len = len;
    s->bounds = bounds;
    s->deltas = deltas;
    s->key_stream = key_of(st, name, len, "s");
    s->key_counter = key_of(st, name, len, "n");
    s->key_epoch = key_of(st, name, len, "e");
    s->key_channel = key_of(st, name, len, "p");
    s->key_behind = key_of(st, name, len, "b");
    pthread_mutex_init(&s->lock, NULL);
    lg_history_init(&s->history, bounds);
    if (!s->name || !s->key_stream || !s->key_counter || !s->key_epoch || !s->key_channel ||
        !s->key_behind) {
        stream_free(s);
        return NULL;
    }
    s->prefix_len = strlen(s->key_stream) - 2;
    s->wanted = !st->has_hooks; /* a store read only through its streams keeps every one */
    pthread_mutex_lock(&sh->streams_lock);
    if (lg_redis__index_add(sh, s) != 0) {
        pthread_mutex_unlock(&sh->streams_lock);
        stream_free(s);
        return NULL;
    }
    s->id = ++sh->next_id;
    lg_dlist_push_tail(&sh->streams, &s->link);
    pthread_mutex_unlock(&sh->streams_lock);
    if (s->wanted)
        lg_redis__mark(s, false);
    return &s->base;
}

void lg_redis__stream_free(struct redis_stream *s)
{
    struct redis_shard *sh = s->shard;
    lg_dlist_remove(&sh->streams, &s->link);
    lg_redis__index_remove(sh, s);
    stream_free(s);
}

/*
 * The hub let the topic go (nothing local holds it: no subscriber, no append in flight). From
 * here nothing is delivered for it: every bridge path that reads the owner does so and uses it
 * under streams_lock, taken here. While the bridge runs, it is the one that leaves the
 * channel and frees the stream (its reads in flight find it by id, its lists link it); once it
 * stopped, nothing else can reach the stream.
 */
static void close_stream(struct lg_stream *base)
{
    struct redis_stream *s = rs(base);
    struct redis_shard *sh = s->shard;
    pthread_mutex_lock(&sh->streams_lock);
    pthread_mutex_lock(&s->lock);
    s->owner = NULL;
    pthread_mutex_unlock(&s->lock);
    pthread_mutex_lock(&sh->interest_lock);
    for (struct redis_stream **pp = &sh->marked; *pp; pp = &(*pp)->marked_next) {
        if (*pp == s) {
            *pp = s->marked_next;
            break;
        }
    }
    s->marked = false;
    bool later = lg_redis_bridge_state(sh->bridge) != LG_REDIS_STOPPED;
    if (later) {
        s->closing_next = sh->closing;
        sh->closing = s;
    }
    pthread_mutex_unlock(&sh->interest_lock);
    if (!later)
        lg_redis__stream_free(s);
    pthread_mutex_unlock(&sh->streams_lock);
    if (later)
        lg_redis__kick(sh);
}

static void stream_bind(struct lg_stream *base, void *owner)
{
    struct redis_stream *s = rs(base);
    pthread_mutex_lock(&s->lock);
    s->owner = owner;
    pthread_mutex_unlock(&s->lock);
}

static void stream_listen(struct lg_stream *base, bool on)
{
    struct redis_stream *s = rs(base);
    struct redis_shard *sh = s->shard;
    pthread_mutex_lock(&sh->interest_lock);
    s->wanted = on;
    s->last_wanted_ms = lg_mono_ms();
    pthread_mutex_unlock(&sh->interest_lock);
    lg_redis__mark(s, false);
}

static void stream_refresh(struct lg_stream *base)
{
    lg_redis__mark(rs(base), true);
}

static void room(struct lg_store *store)
{
    struct redis_store *st = (struct redis_store *)store;
    for (uint32_t i = 0; i < st->shard_count; i++)
        lg_redis__room(&st->shards[i]);
}

#define MIRROR_READ(type, expr)                                                                   \
    struct redis_stream *s = rs(base);                                                           \
    pthread_mutex_lock(&s->lock);                                                                \
    type v = (expr);                                                                             \
    pthread_mutex_unlock(&s->lock);                                                              \
    return v

static uint32_t mirror_epoch(const struct lg_stream *base) { MIRROR_READ(uint32_t, s->epoch); }
static uint64_t mirror_newest(const struct lg_stream *base)
{
    MIRROR_READ(uint64_t, s->newest);
}
static bool mirror_ready(const struct lg_stream *base) { MIRROR_READ(bool, s->ready); }
static uint64_t mirror_oldest(const struct lg_stream *base)
{
    MIRROR_READ(uint64_t, s->history.count ? lg_history_first_seq(&s->history) : s->newest + 1);
}

/* Linear in the retained events: the hub asks Redis (the append script), not this. */
static struct lg_event *mirror_find_key(const struct lg_stream *base, const char *key,
                                        size_t len)
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

static int mirror_read_after(const struct lg_stream *base, uint64_t after, size_t max,
                             uint64_t max_bytes, struct lg_store_page *page)
{
    struct redis_stream *s = rs(base);
    *page = (struct lg_store_page){0};
    pthread_mutex_lock(&s->lock);
    const struct lg_history *h = &s->history;
    uint32_t index = 0;
    while (index < h->count && lg_history_at(h, index)->seq <= after)
        index++;
    int rc = lg_history_page(h, index, max, max_bytes, page);
    pthread_mutex_unlock(&s->lock);
    return rc;
}

static bool mirror_evict_oldest(struct lg_stream *base)
{
    struct redis_stream *s = rs(base);
    pthread_mutex_lock(&s->lock);
    bool any = s->history.count > 0;
    if (any)
        lg_history_evict_oldest(&s->history);
    pthread_mutex_unlock(&s->lock);
    return any;
}

static uint32_t mirror_expire(struct lg_stream *base, uint64_t now_mono_ns)
{
    MIRROR_READ(uint32_t, lg_history_expire(&s->history, now_mono_ns));
}

/* The store's state is its worst shard's: a topic on a shard that is down cannot publish. */
static const char *state(const struct lg_store *store)
{
    const struct redis_store *st = (const struct redis_store *)store;
    static const enum lg_redis_state worst_first[] = {LG_REDIS_STOPPED, LG_REDIS_DOWN,
                                                      LG_REDIS_CONNECTING};
    for (size_t w = 0; w < sizeof worst_first / sizeof worst_first[0]; w++)
        for (uint32_t i = 0; i < st->shard_count; i++)
            if (lg_redis_bridge_state(st->shards[i].bridge) == worst_first[w])
                return lg_redis_state_name(worst_first[w]);
    return lg_redis_state_name(LG_REDIS_UP);
}

static void stop(struct lg_store *store)
{
    struct redis_store *st = (struct redis_store *)store;
    for (uint32_t i = 0; i < st->shard_count; i++)
        lg_redis_bridge_stop(st->shards[i].bridge);
}

/* The first shard's thread: a publish to its topics needs no other thread. */
static int host(struct lg_store *store, const struct lg_loop_guest *guests, uint32_t n)
{
    struct redis_store *st = (struct redis_store *)store;
    return lg_redis_bridge_host(st->shards[0].bridge, guests, n);
}

static void unhost(struct lg_store *store)
{
    struct redis_store *st = (struct redis_store *)store;
    stop(store);
    lg_redis_bridge_unhost(st->shards[0].bridge);
}

static void shard_release(struct redis_shard *sh)
{
    lg_redis_bridge_destroy(sh->bridge);
    pthread_mutex_lock(&sh->streams_lock); /* the closings the bridge never got to */
    for (struct redis_stream *s = sh->closing, *next; s; s = next) {
        next = s->closing_next;
        lg_redis__stream_free(s);
    }
    pthread_mutex_unlock(&sh->streams_lock);
    pthread_mutex_destroy(&sh->streams_lock);
    pthread_mutex_destroy(&sh->interest_lock);
    free(sh->by_channel);
}

static void destroy(struct lg_store *store)
{
    struct redis_store *st = (struct redis_store *)store;
    for (uint32_t i = 0; i < st->shard_count; i++)
        shard_release(&st->shards[i]);
    free(st->prefix);
    free(st);
}

static const struct lg_store_ops redis_ops = {
    .name = "redis",
    .stream_open = open_stream,
    .stream_close = close_stream,
    .epoch = mirror_epoch,
    .newest = mirror_newest,
    .oldest = mirror_oldest,
    .find_key = mirror_find_key,
    .append = append_by_script,
    .read_after = mirror_read_after,
    .evict_oldest = mirror_evict_oldest,
    .expire = mirror_expire,
    .destroy = destroy,
    .remote = true,
    .bind = stream_bind,
    .listen = stream_listen,
    .refresh = stream_refresh,
    .room = room,
    .ready = mirror_ready,
    .state = state,
    .stop = stop,
    .host = host,
    .unhost = unhost,
    .share_presence = lg_redis__share_presence,
};

/* Start shard sh on url. Return value: 0, or -1 with err filled. */
static int shard_start(struct redis_store *st, struct redis_shard *sh, const char *url, char *err,
                       size_t err_cap)
{
    sh->store = st;
    sh->kick.run = lg_redis__run_kick;
    sh->unstall.run = lg_redis__run_unstall;
    pthread_mutex_init(&sh->streams_lock, NULL);
    pthread_mutex_init(&sh->interest_lock, NULL);
    struct lg_redis_options opts = st->opts;
    opts.url = url;
    struct lg_redis_bridge_user user = {.arg = sh, .up = lg_redis__on_up,
                                        .down = lg_redis__on_down, .pubsub = lg_redis__on_pubsub,
                                        .feed_lost = lg_redis__on_feed_lost,
                                        .feed_back = lg_redis__on_feed_back};
    return lg_redis_bridge_start(&opts, user, &sh->bridge, err, err_cap);
}

struct lg_store *lg_redis_store_create(const struct lg_redis_options *opts,
                                       const char *const *urls, uint32_t url_count,
                                       const struct lg_redis_hooks *hooks, char *err,
                                       size_t err_cap)
{
    struct redis_store *st = calloc(1, sizeof *st + url_count * sizeof st->shards[0]);
    if (!st || url_count == 0) {
        snprintf(err, err_cap, url_count ? "out of memory" : "no Redis to use");
        free(st);
        return NULL;
    }
    st->base.ops = &redis_ops;
    st->opts = *opts;
    st->prefix = strdup(opts->key_prefix);
    st->opts.key_prefix = st->prefix;
    st->opts.url = NULL;
    lg_redis__node_id(st->node, sizeof st->node);
    if (hooks) {
        st->hooks = *hooks;
        st->has_hooks = true;
    }
    int rc = -1;
    if (!st->prefix)
        snprintf(err, err_cap, "out of memory");
    else if (script_init(&st->append_script, append_text) != 0 ||
             script_init(&st->load_script, load_text) != 0 ||
             script_init(&st->catch_up_script, catch_up_text) != 0)
        snprintf(err, err_cap, "cannot compute the scripts' SHA1 (libcrypto)");
    else
        rc = 0;
    for (uint32_t i = 0; rc == 0 && i < url_count; i++, st->shard_count++)
        rc = shard_start(st, &st->shards[i], urls[i], err, err_cap);
    if (rc != 0) {
        if (st->shard_count) /* the one that failed is counted: its bridge is NULL */
            destroy(&st->base);
        else
            free(st->prefix), free(st);
        return NULL;
    }
    return &st->base;
}
