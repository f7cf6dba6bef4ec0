/*
 * hub.c - topic registry, publish path and subscription bookkeeping.
 *
 * DESIGN
 * A publish takes the registry lock (read) to find its topic, then the topic's lock. Under the
 * topic lock it looks the idempotency key up in the topic's stream, then admits the event
 * before the store sees it (lg_hub__admit, the same for every store): one slot reserved in the
 * inbox of every worker that has subscribers for the topic, then room for the event's size
 * (lg_event_size, exact before it is encoded; a document topic's delta form, shorter than
 * the event's JSON, comes on top) in limits.max_retained_bytes, the topic's own
 * history giving way first. Only then does it append to the stream (store.h): the store
 * assigns the position and encodes the event once, and its completion, still under the lock,
 * pushes the event into each reserved inbox. Doing all of that under one lock is what makes
 * per-topic order identical in the stream and in every inbox. Admitting before the position
 * is assigned is what makes refusal clean: an event is either on its way to every interested
 * worker or it never existed. Workers are woken after every lock is dropped. The hub keeps
 * the registry and the fan-out; retention, replay, epochs and idempotency are the store's.
 *
 * The once-a-second sweep (lg_hub_expire) visits a bounded slice of the table per call and
 * goes on where the last one stopped, as Redis' active expiry does: its cost per second is
 * bounded however many topics exist. Exactness does not depend on it: an append ages out its
 * own topic's history, and a replay ages it out before reading, so no replay reads an event
 * older than max_age_ms; the sweep only returns the memory of topics nobody touches.
 */
#include "hub.h"
#include "hub_internal.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "accounting.h"
#include "clock.h"
#include "encode.h"
#include "event.h"
#include "inbox.h"
#include "log.h"
#include "stats.h"
#include "store_memory.h"
#include "store_redis.h"
#include "topic.h"

/* A remote topic nobody here wants is let go after this (Redis keeps its stream); longer
 * than the store's linger on its channel, so a client that reconnects finds both warm. */
#define LG_HUB_REMOTE_IDLE_NS (10ull * 1000000000ull)
#define LG_HUB_SWEEP_BUCKETS 8192u /* per lg_hub_expire(), once a second: a bounded slice of */
#define LG_HUB_SWEEP_TOPICS 2048u  /* the table, and no more topics than this */

uint32_t lg_hub_hash_name(const char *s, size_t len)
{
    uint32_t h = 2166136261u; /* FNV-1a: short keys, no adversarial concern behind the grammar */
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)s[i];
        h *= 16777619u;
    }
    return h;
}

/* A topic and what the hub gave it beside its stream. */
static void destroy_topic(struct lg_topic *t)
{
    lg_presence_destroy(t->presence);
    lg_topic_destroy(t);
}

struct lg_hub *lg_hub_create(const struct lg_config *cfg, uint32_t workers)
{
    struct lg_hub *hub = calloc(1, sizeof *hub);
    if (!hub)
        return NULL;
    hub->cfg = cfg;
    hub->rules = cfg;
    hub->workers = workers;
    bool remote = (cfg->redis.url && cfg->redis.url[0]) || cfg->redis.shards.count > 0 ||
                  cfg->redis.sentinels.count > 0;
    hub->store = remote ? lg_hub__remote_store(hub) : lg_memory_store_create();
    hub->local = remote ? lg_memory_store_create() : hub->store;
    size_t buckets = 64;
    while (buckets < cfg->limits.max_topics / 2 && buckets < (1u << 20))
        buckets <<= 1;
    hub->bucket_mask = buckets - 1;
    hub->buckets = calloc(buckets, sizeof *hub->buckets);
    hub->links = calloc(workers ? workers : 1, sizeof *hub->links);
    if (!hub->store || !hub->local || !hub->buckets || !hub->links ||
        pthread_rwlock_init(&hub->registry_lock, NULL) != 0)
        goto err;
    if (pthread_mutex_init(&hub->presence_lock, NULL) != 0)
        abort(); /* a mutex with default attributes does not fail to initialise */
    for (uint32_t w = 0; w < workers; w++)
        if (lg_mailbox_init(&hub->links[w].calls) != 0 ||
            lg_client_publish_queue_init(&hub->links[w].published) != 0)
            abort(); /* a mutex with default attributes does not fail to initialise */
    return hub;
err:
    if (hub->local && hub->local != hub->store)
        hub->local->ops->destroy(hub->local);
    if (hub->store)
        hub->store->ops->destroy(hub->store);
    free(hub->buckets);
    free(hub->links);
    free(hub);
    return NULL;
}

void lg_hub_destroy(struct lg_hub *hub)
{
    if (!hub)
        return;
    lg_hub_stop_store(hub); /* no tail delivery while topics go */
    /* Calls a stopped worker never took hold topic references: dropped while topics exist. */
    for (uint32_t w = 0; w < hub->workers; w++)
        lg_mailbox_release(&hub->links[w].calls, w);
    for (size_t b = 0; b <= hub->bucket_mask; b++) {
        struct lg_topic *t = hub->buckets[b];
        while (t) {
            struct lg_topic *next = t->next_in_bucket;
            destroy_topic(t);
            LG_STAT_SUB(topics, 1);
            t = next;
        }
    }
    for (struct lg_topic *t = hub->graveyard, *next; t; t = next) {
        next = t->next_in_bucket;
        destroy_topic(t);
    }
    for (uint32_t w = 0; w < hub->workers; w++)
        lg_client_publish_queue_release(&hub->links[w].published);
    pthread_rwlock_destroy(&hub->registry_lock);
    pthread_mutex_destroy(&hub->presence_lock);
    if (hub->local != hub->store)
        hub->local->ops->destroy(hub->local);
    hub->store->ops->destroy(hub->store); /* after every topic closed its stream */
    free(hub->buckets);
    free(hub->links);
    free(hub);
}

void lg_hub_attach_worker(struct lg_hub *hub, uint32_t w, struct lg_inbox *inbox,
                          lg_wake_proc *wake, void *wake_arg)
{
    hub->links[w].inbox = inbox;
    hub->links[w].wake = wake;
    hub->links[w].wake_arg = wake_arg;
}

void lg_hub_on_room(struct lg_hub *hub, lg_room_proc *room, void *arg)
{
    hub->room = room;
    hub->room_arg = arg;
}

void lg_hub_on_occupancy(struct lg_hub *hub, lg_occupancy_proc *occupancy, void *arg)
{
    hub->occupancy = occupancy;
    hub->occupancy_arg = arg;
}

void lg_hub_worker_done(struct lg_hub *hub, uint32_t w)
{
    (void)w; /* any worker's room may be what a held publish waits for */
    if (hub->room)
        hub->room(hub->room_arg);
    lg_store_room(hub->store); /* and what a remote store's paused topics wait for */
}

/* ---- Registry ------------------------------------------------------------------------- */

static struct lg_topic *find_locked(struct lg_hub *hub, const char *name, size_t len, uint32_t h)
{
    for (struct lg_topic *t = hub->buckets[h & hub->bucket_mask]; t; t = t->next_in_bucket)
        if (t->name_len == len && memcmp(t->name, name, len) == 0)
            return t;
    return NULL;
}

const char *lg_hub_status_message(enum lg_hub_status s)
{
    switch (s) {
    case LG_HUB_OK:
        return "ok";
    case LG_HUB_BAD_NAME:
        return "invalid topic name";
    case LG_HUB_TOO_MANY_TOPICS:
        return "the gateway holds limits.max_topics topics already";
    case LG_HUB_OOM:
        return "out of memory";
    case LG_HUB_TOPIC_DELETED:
        return "the topic was deleted while subscribing; retry";
    case LG_HUB_CURSOR_AHEAD:
        return "the cursor is ahead of the topic's newest event";
    }
    return "unknown";
}

/* The registered topic of a well-formed name, with a reference, or NULL. */
static struct lg_topic *find_ref(struct lg_hub *hub, const char *name, size_t len, uint32_t h)
{
    pthread_rwlock_rdlock(&hub->registry_lock);
    struct lg_topic *t = find_locked(hub, name, len, h);
    if (t)
        lg_topic_ref(t); /* under the lock: collection takes it for writing */
    pthread_rwlock_unlock(&hub->registry_lock);
    return t;
}

struct lg_topic *lg_hub_find_topic(struct lg_hub *hub, const char *name, size_t len)
{
    if (lg_topic_name_problem(name, len))
        return NULL;
    return find_ref(hub, name, len, lg_hub_hash_name(name, len));
}

enum lg_hub_status lg_hub_topic(struct lg_hub *hub, const char *name, size_t len,
                                struct lg_topic **out)
{
    if (lg_topic_name_problem(name, len)) {
        *out = NULL;
        return LG_HUB_BAD_NAME;
    }
    uint32_t h = lg_hub_hash_name(name, len);
    struct lg_topic *t = find_ref(hub, name, len, h);
    if (t) {
        *out = t;
        return LG_HUB_OK;
    }
    enum lg_hub_status status = LG_HUB_OK;
    pthread_rwlock_wrlock(&hub->registry_lock);
    t = find_locked(hub, name, len, h); /* another thread may have created it meanwhile */
    if (t) {
        lg_topic_ref(t);
    } else {
        if (hub->topic_count >= hub->rules->limits.max_topics) {
            status = LG_HUB_TOO_MANY_TOPICS;
        } else {
            char copy[LG_TOPIC_NAME_MAX + 1];
            memcpy(copy, name, len);
            copy[len] = '\0';
            /* The gateway's own topics stay on this node: no other node publishes them. */
            struct lg_store *store = name[0] == '$' ? hub->local : hub->store;
            struct lg_stream *stream = store->ops->stream_open(
                store, name, len, lg_config_history_for(hub->rules, copy),
                lg_config_document_for(hub->rules, copy));
            t = stream ? lg_topic_create(name, len, lg_config_policy_for(hub->rules, copy), stream,
                                         hub->workers)
                       : NULL;
            if (t && lg_hub__give_presence(hub, t, copy) != 0) {
                destroy_topic(t);
                t = NULL;
            }
            if (t) {
                t->start = lg_config_start_for(hub->rules, copy);
                if (store->ops->bind)
                    store->ops->bind(stream, t);
                lg_topic_ref(t); /* the caller's, beside the registry's */
                t->next_in_bucket = hub->buckets[h & hub->bucket_mask];
                hub->buckets[h & hub->bucket_mask] = t;
                hub->topic_count++;
                LG_STAT_ADD(topics, 1);
            } else {
                status = LG_HUB_OOM;
            }
        }
    }
    pthread_rwlock_unlock(&hub->registry_lock);
    *out = t;
    return status;
}

void lg_hub_set_rules(struct lg_hub *hub, const struct lg_config *rules)
{
    pthread_rwlock_wrlock(&hub->registry_lock);
    hub->rules = rules;
    pthread_rwlock_unlock(&hub->registry_lock);
}

bool lg_hub_client_publish_open(struct lg_hub *hub, const char *topic)
{
    pthread_rwlock_rdlock(&hub->registry_lock);
    bool open = lg_config_client_publish_for(hub->rules, topic);
    pthread_rwlock_unlock(&hub->registry_lock);
    return open;
}

void lg_hub_topic_done(struct lg_hub *hub, struct lg_topic *t)
{
    (void)hub;
    if (t)
        lg_topic_unref(t);
}

/* ---- Publish -------------------------------------------------------------------------- */

const char *lg_publish_status_message(enum lg_publish_status s)
{
    switch (s) {
    case LG_PUBLISH_OK:
        return "ok";
    case LG_PUBLISH_BAD_TOPIC:
        return "invalid topic name";
    case LG_PUBLISH_RESERVED_TOPIC:
        return "topics starting with '$' are reserved for the gateway";
    case LG_PUBLISH_BAD_DATA:
        return "event data must be UTF-8 text or JSON";
    case LG_PUBLISH_TOO_MANY_TOPICS:
        return "the gateway holds limits.max_topics topics; retry later or raise the limit";
    case LG_PUBLISH_WORKERS_BEHIND:
        return "subscribers' workers are behind (limits.worker_inbox_events); retry shortly";
    case LG_PUBLISH_MEMORY_FULL:
        return "retained events reached limits.max_retained_bytes; retry shortly";
    case LG_PUBLISH_OOM:
        return "out of memory";
    case LG_PUBLISH_STORE_UNAVAILABLE:
        return "the store (Redis) is unreachable";
    }
    return "unknown";
}

_Static_assert(LG_MAX_WORKERS <= 64, "the reservation and wake masks are 64-bit");

/* Reserve an inbox slot on every worker listening to t. Caller holds t->lock.
 * Return value: true with *reserved set, or false with nothing reserved. */
bool lg_hub__reserve_inboxes(struct lg_hub *hub, struct lg_topic *t, uint64_t *reserved)
{
    *reserved = 0;
    for (uint32_t w = 0; w < hub->workers; w++) {
        if (t->slots[w].subscribers == 0)
            continue;
        if (!lg_inbox_reserve(hub->links[w].inbox)) {
            for (uint32_t u = 0; u < w; u++)
                if (*reserved & (UINT64_C(1) << u))
                    lg_inbox_unreserve(hub->links[u].inbox);
            *reserved = 0;
            return false;
        }
        *reserved |= UINT64_C(1) << w;
    }
    return true;
}

void lg_hub__release_reservations(struct lg_hub *hub, uint64_t reserved)
{
    for (uint32_t w = 0; w < hub->workers; w++)
        if (reserved & (UINT64_C(1) << w))
            lg_inbox_unreserve(hub->links[w].inbox);
}

/*
 * Room in limits.max_retained_bytes for `incoming` more bytes (an event's size, encodings
 * included; 0 for one that counts in the accounting already): this topic's own history gives
 * way first, oldest first; only memory pinned elsewhere (other topics, client queues) leaves
 * no room. Caller holds t->lock. Return value: true if the bytes fit.
 */
bool lg_hub__make_room(struct lg_hub *hub, struct lg_topic *t, uint64_t incoming)
{
    int64_t limit = (int64_t)hub->cfg->limits.max_retained_bytes - (int64_t)incoming;
    while (lg_account_event_bytes() > limit && lg_stream_evict_oldest(t->stream))
        ;
    return lg_account_event_bytes() <= limit;
}

enum lg_publish_status lg_hub__admit(struct lg_hub *hub, struct lg_topic *t,
                                     const struct lg_event_fields *f, uint64_t *reserved)
{
    if (!lg_hub__reserve_inboxes(hub, t, reserved))
        return LG_PUBLISH_WORKERS_BEHIND;
    if (!lg_hub__make_room(hub, t, lg_event_size(f))) {
        lg_hub__release_reservations(hub, *reserved);
        *reserved = 0;
        return LG_PUBLISH_MEMORY_FULL;
    }
    return LG_PUBLISH_OK;
}

enum lg_publish_status lg_hub__refuse(enum lg_publish_status s)
{
    static struct lg_ratelimit rl;
    LG_STAT_ADD(publishes_refused, 1);
    if (s == LG_PUBLISH_TOO_MANY_TOPICS)
        LG_STAT_ADD(publishes_refused_topics, 1);
    else if (s == LG_PUBLISH_MEMORY_FULL)
        LG_STAT_ADD(publishes_refused_memory, 1);
    else if (s == LG_PUBLISH_STORE_UNAVAILABLE)
        LG_STAT_ADD(publishes_refused_store, 1);
    else
        LG_STAT_ADD(publishes_refused_oom, 1);
    lg_log_ratelimited(&rl, 1000, LG_LOG_WARN, "publish refused: %s", lg_publish_status_message(s));
    return s;
}

enum lg_publish_status lg_hub__publish_status(enum lg_hub_status s)
{
    switch (s) {
    case LG_HUB_BAD_NAME:
        return LG_PUBLISH_BAD_TOPIC;
    case LG_HUB_TOO_MANY_TOPICS:
        return LG_PUBLISH_TOO_MANY_TOPICS;
    default:
        return LG_PUBLISH_OOM;
    }
}

void lg_hub__fill_result(struct lg_publish_result *res, const struct lg_event *ev, bool duplicate)
{
    res->seq = ev->seq;
    res->epoch = ev->epoch;
    memcpy(res->id, ev->id, ev->id_len + 1);
    res->duplicate = duplicate;
}

/* One publish in flight, between the store's append and its completion. */
struct publish_call {
    struct lg_hub *hub;
    struct lg_topic *t;
    uint64_t reserved;      /* inbox slots held for it, one bit per worker */
    uint64_t *wake_mask;    /* workers to wake once every lock is dropped */
    struct lg_publish_result *res;
    enum lg_publish_status status;
};

/* The store appended the admitted event (the topic lock is still held): hand it to every
 * reserved inbox and answer the publisher. */
static void on_appended(void *arg, enum lg_append_status status, struct lg_event *ev)
{
    struct publish_call *call = arg;
    struct lg_hub *hub = call->hub;
    if (status != LG_APPEND_OK) {
        call->status = LG_PUBLISH_OOM;
        return;
    }
    for (uint32_t w = 0; w < hub->workers; w++) {
        if (!(call->reserved & (UINT64_C(1) << w)))
            continue;
        if (lg_inbox_push_reserved(hub->links[w].inbox, call->t, ev))
            *call->wake_mask |= UINT64_C(1) << w;
    }
    lg_hub__fill_result(call->res, ev, false);
    call->status = LG_PUBLISH_OK;
}

struct lg_event_fields lg_hub__event_fields(struct lg_topic *t, const struct lg_publish_req *req)
{
    return (struct lg_event_fields){
        .topic_identity = t,
        .topic_name = t->name,
        .topic_name_len = t->name_len,
        .epoch = lg_stream_epoch(t->stream),
        .seq = lg_stream_newest(t->stream) + 1,
        .type = req->type,
        .type_len = req->type_len,
        .key = req->key,
        .key_len = req->key_len,
        .data = req->data,
        .data_len = req->data_len,
        .data_is_json = req->data_is_json,
        .idempotency_key = req->idempotency_key,
        .idempotency_key_len = req->idempotency_key_len,
        .tags = req->tags_len ? req->tags : NULL,
        .tags_len = req->tags_len,
        .published_unix_ms = lg_unix_ms(),
        .published_mono_ns = lg_mono_ns(),
    };
}

enum lg_publish_status lg_hub__check_request(const struct lg_publish_req *req)
{
    if (lg_topic_name_problem(req->topic, req->topic_len))
        return LG_PUBLISH_BAD_TOPIC;
    if (req->topic[0] == '$' && !req->gateway_own)
        return LG_PUBLISH_RESERVED_TOPIC;
    if (!req->data_is_json && !lg_utf8_valid(req->data, req->data_len))
        return LG_PUBLISH_BAD_DATA;
    return LG_PUBLISH_OK;
}

static enum lg_publish_status publish_one(struct lg_hub *hub, const struct lg_publish_req *req,
                                          struct lg_publish_result *res, uint64_t *wake_mask)
{
    enum lg_publish_status bad = lg_hub__check_request(req);
    if (bad != LG_PUBLISH_OK)
        return bad;
    /* A remote store's topics are published by lg_hub_publish_async(); only the gateway's
     * own topics, always local, come here in Redis mode. */
    if (hub->store->ops->remote && req->topic[0] != '$')
        return LG_PUBLISH_STORE_UNAVAILABLE;

    struct lg_topic *t;
    for (;;) {
        enum lg_hub_status found = lg_hub_topic(hub, req->topic, req->topic_len, &t);
        if (found != LG_HUB_OK)
            return lg_hub__refuse(lg_hub__publish_status(found));
        pthread_mutex_lock(&t->lock);
        if (!atomic_load_explicit(&t->deleted, memory_order_relaxed))
            break;
        /* Deleted since the lookup (DELETE /v1/topics/{topic}): the name's next life is the
         * registry's now, and the publish belongs to it. */
        pthread_mutex_unlock(&t->lock);
        lg_hub_topic_done(hub, t);
    }
    struct lg_event *original =
        req->idempotency_key
            ? lg_stream_find_key(t->stream, req->idempotency_key, req->idempotency_key_len)
            : NULL;
    if (original) {
        lg_hub__fill_result(res, original, true);
        pthread_mutex_unlock(&t->lock);
        lg_hub_topic_done(hub, t);
        LG_STAT_ADD(publishes_deduplicated, 1);
        return LG_PUBLISH_OK;
    }
    struct publish_call call = {.hub = hub, .t = t, .wake_mask = wake_mask, .res = res};
    struct lg_event_fields f = lg_hub__event_fields(t, req);
    call.status = lg_hub__admit(hub, t, &f, &call.reserved);
    if (call.status == LG_PUBLISH_OK) {
        lg_stream_append(t->stream, &f, on_appended, &call); /* the memory store completes here */
        if (call.status != LG_PUBLISH_OK)
            lg_hub__release_reservations(hub, call.reserved);
    }
    pthread_mutex_unlock(&t->lock);
    lg_hub_topic_done(hub, t);
    if (call.status == LG_PUBLISH_WORKERS_BEHIND)
        return call.status; /* not a refusal yet: the caller may wait */
    if (call.status != LG_PUBLISH_OK)
        return lg_hub__refuse(call.status);
    if (!req->gateway_own)
        LG_STAT_ADD(events_published, 1);
    return LG_PUBLISH_OK;
}

void lg_hub__wake_workers(struct lg_hub *hub, uint64_t mask)
{
    for (uint32_t w = 0; mask && w < hub->workers; w++)
        if (mask & (UINT64_C(1) << w))
            hub->links[w].wake(hub->links[w].wake_arg);
}

enum lg_publish_status lg_hub_publish(struct lg_hub *hub, const struct lg_publish_req *req,
                                      struct lg_publish_result *res)
{
    uint64_t wake_mask = 0;
    enum lg_publish_status s = publish_one(hub, req, res, &wake_mask);
    lg_hub__wake_workers(hub, wake_mask);
    return s;
}

size_t lg_hub_publish_many(struct lg_hub *hub, const struct lg_publish_req *reqs, size_t n,
                           struct lg_publish_result *res, enum lg_publish_status *status)
{
    uint64_t wake_mask = 0;
    size_t done = 0;
    *status = LG_PUBLISH_OK;
    for (; done < n; done++) {
        *status = publish_one(hub, &reqs[done], &res[done], &wake_mask);
        if (*status != LG_PUBLISH_OK)
            break;
    }
    lg_hub__wake_workers(hub, wake_mask);
    return done;
}

uint32_t lg_hub_workers(const struct lg_hub *hub) { return hub->workers; }

uint64_t lg_hub_worker_backlog(const struct lg_hub *hub, uint32_t w)
{
    const struct lg_inbox *in = hub->links[w].inbox;
    return in ? atomic_load_explicit(&in->occupancy, memory_order_relaxed) : 0;
}

uint64_t lg_hub_backlog(const struct lg_hub *hub)
{
    uint64_t sum = 0;
    for (uint32_t w = 0; w < hub->workers; w++)
        sum += lg_hub_worker_backlog(hub, w);
    return sum;
}

/* ---- Subscribe ------------------------------------------------------------------------ */

/* One more subscription of t on worker w; the first makes the store follow t (and is told to
 * the occupancy proc). t->lock held. */
static void add_listener(struct lg_hub *hub, struct lg_topic *t, uint32_t w, struct lg_replay *out)
{
    if (t->presence)
        out->presence_batches = lg_presence_batches_made(t->presence);
    t->slots[w].subscribers++;
    if (t->listeners++ == 0) {
        lg_stream_listen(t->stream, true);
        if (hub->occupancy)
            hub->occupancy(hub->occupancy_arg, t->name, true);
    }
    if (t->presence)
        lg_hub__presence_changed(hub, t);
}

/* A subscription that waits for t's remote stream to load or catch up: its replay is
 * computed on the topic's next event. One that does not stay (a poll that only reads) still
 * makes the store follow the topic a while, so that event comes. t->lock held. */
static void wait_for_stream(struct lg_hub *hub, struct lg_topic *t, uint32_t w, const struct lg_cursor_entry *since,
                            bool listen, struct lg_replay *out)
{
    out->pending = true;
    out->epoch = since ? since->epoch : 0;
    out->position = since ? since->seq : 0;
    if (listen) {
        add_listener(hub, t, w, out);
    } else if (t->listeners == 0) {
        lg_stream_listen(t->stream, true);
        lg_stream_listen(t->stream, false);
    }
}

enum lg_hub_status lg_hub_subscribe(struct lg_hub *hub, struct lg_topic *t, uint32_t w,
                                    const struct lg_cursor_entry *since, size_t max_events,
                                    uint64_t max_bytes, bool listen, struct lg_replay *out)
{
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&t->lock);
    if (atomic_load_explicit(&t->deleted, memory_order_relaxed)) {
        /* Deleted between the lookup and now: the workers were told already (hub_admin.h). */
        pthread_mutex_unlock(&t->lock);
        return LG_HUB_TOPIC_DELETED;
    }
    if (!lg_stream_ready(t->stream)) {
        /* A remote stream not loaded: the subscription waits for its first event */
        wait_for_stream(hub, t, w, since, listen, out);
        pthread_mutex_unlock(&t->lock);
        return LG_HUB_OK;
    }
    uint32_t epoch = lg_stream_epoch(t->stream);
    uint64_t newest = lg_stream_newest(t->stream);
    out->epoch = epoch;
    out->position = newest;
    if (since && since->epoch != epoch) {
        out->reset = true;
    } else if (since && since->seq > newest && t->stream->store->ops->remote) {
        /* This node's copy trails Redis by what is in flight: wait for it to catch up */
        lg_stream_refresh(t->stream);
        wait_for_stream(hub, t, w, since, listen, out);
        pthread_mutex_unlock(&t->lock);
        return LG_HUB_OK;
    } else if (since && since->seq > newest) {
        pthread_mutex_unlock(&t->lock);
        return LG_HUB_CURSOR_AHEAD;
    } else if (since) {
        lg_stream_expire(t->stream, lg_mono_ns()); /* the sweep may not have been by yet */
        uint64_t first = lg_stream_oldest(t->stream);
        if (since->seq + 1 < first) {
            out->gap_from = since->seq + 1;
            out->gap_to = first - 1;
        }
        struct lg_store_page page;
        if (lg_stream_read_after(t->stream, since->seq, max_events, max_bytes, &page) != 0) {
            pthread_mutex_unlock(&t->lock);
            return LG_HUB_OOM;
        }
        out->events = page.events;
        out->count = page.count;
        out->more = page.more;
        if (out->count)
            out->position = out->events[out->count - 1]->seq;
        else
            out->position = out->gap_to ? out->gap_to : since->seq;
    }
    if (listen)
        add_listener(hub, t, w, out);
    pthread_mutex_unlock(&t->lock);
    return LG_HUB_OK;
}

bool lg_hub_start_position(struct lg_hub *hub, struct lg_topic *t, struct lg_start start,
                           uint64_t at, struct lg_cursor_entry *out)
{
    (void)hub;
    pthread_mutex_lock(&t->lock);
    bool ready = lg_stream_ready(t->stream);
    if (ready) {
        lg_stream_expire(t->stream, lg_mono_ns()); /* what is retained, as a replay reads it */
        uint64_t newest = lg_stream_newest(t->stream);
        out->epoch = lg_stream_epoch(t->stream);
        out->seq = lg_start_position(start, newest < at ? newest : at,
                                     lg_stream_oldest(t->stream));
    }
    pthread_mutex_unlock(&t->lock);
    return ready;
}

void lg_replay_release(struct lg_replay *r)
{
    for (size_t i = 0; i < r->count; i++)
        lg_event_unref(&r->events[i]);
    free(r->events);
    r->events = NULL;
    r->count = 0;
}

void lg_hub_unsubscribe(struct lg_hub *hub, struct lg_topic *t, uint32_t w)
{
    pthread_mutex_lock(&t->lock);
    if (t->slots[w].subscribers > 0) {
        t->slots[w].subscribers--;
        if (--t->listeners == 0) {
            lg_stream_listen(t->stream, false);
            t->unwanted_since_ns = lg_mono_ns();
            if (hub->occupancy)
                hub->occupancy(hub->occupancy_arg, t->name, false);
        }
        if (t->presence)
            lg_hub__presence_changed(hub, t);
    }
    pthread_mutex_unlock(&t->lock);
}

/* Whether t may go, with t->lock held: only the registry holds it (no subscriber, no append
 * in flight, no inbox entry) and letting it go loses nothing. A memory stream is the only
 * copy of what was published, so only a topic never published to goes; a remote stream is
 * kept by the store, and the topic is made anew (loading from it) when wanted again. */
static bool idle_locked(const struct lg_topic *t, uint64_t now_ns)
{
    if (atomic_load_explicit(&t->refs, memory_order_acquire) != 1)
        return false;
    if (!t->stream->store->ops->remote)
        return lg_stream_newest(t->stream) == 0;
    /* unwanted for a while: a client that reconnects at once finds it warm */
    return t->listeners == 0 && now_ns - t->unwanted_since_ns >= LG_HUB_REMOTE_IDLE_NS;
}

/* Caller holds the registry write lock (no lookup can take a reference meanwhile). */
static bool collectable(struct lg_topic *t, uint64_t now_ns)
{
    pthread_mutex_lock(&t->lock);
    bool idle = idle_locked(t, now_ns);
    pthread_mutex_unlock(&t->lock);
    return idle;
}

/* Drop the deleted topics nobody holds any more and, when idle is true, the idle ones in
 * buckets [from, to). */
static size_t collect_idle(struct lg_hub *hub, bool idle, size_t from, size_t to,
                           uint64_t now_ns)
{
    size_t collected = 0;
    pthread_rwlock_wrlock(&hub->registry_lock);
    for (size_t b = from; idle && b < to; b++) {
        for (struct lg_topic **pp = &hub->buckets[b]; *pp;) {
            struct lg_topic *t = *pp;
            if (!collectable(t, now_ns)) {
                pp = &t->next_in_bucket;
                continue;
            }
            *pp = t->next_in_bucket;
            destroy_topic(t);
            hub->topic_count--;
            collected++;
        }
    }
    for (struct lg_topic **pp = &hub->graveyard; *pp;) {
        struct lg_topic *t = *pp;
        if (atomic_load_explicit(&t->refs, memory_order_acquire) != 1) {
            pp = &t->next_in_bucket;
            continue;
        }
        *pp = t->next_in_bucket;
        destroy_topic(t); /* deleted and let go by every subscriber and inbox */
    }
    pthread_rwlock_unlock(&hub->registry_lock);
    LG_STAT_SUB(topics, (int64_t)collected);
    LG_STAT_ADD(topics_collected, collected);
    return collected;
}

/* One topic's share of the sweep: age out its history, average its publish rate over the time
 * since the sweep last saw it. Return value: whether it may go (idle_locked). */
static bool sweep_topic(struct lg_topic *t, uint64_t now_ns)
{
    pthread_mutex_lock(&t->lock);
    lg_stream_expire(t->stream, now_ns);
    uint64_t newest = lg_stream_newest(t->stream);
    uint64_t elapsed_ms = (now_ns - t->rate_mark_ns) / 1000000u;
    if (t->rate_mark_ns != 0 && elapsed_ms > 0) /* a reset stream starts over: rate 0 */
        t->publish_rate = newest >= t->rate_mark ? (newest - t->rate_mark) * 1000u / elapsed_ms : 0;
    t->rate_mark = newest;
    t->rate_mark_ns = now_ns;
    bool idle = idle_locked(t, now_ns);
    pthread_mutex_unlock(&t->lock);
    return idle;
}

size_t lg_hub_expire(struct lg_hub *hub)
{
    uint64_t now = lg_mono_ns();
    size_t idle = 0, topics = 0;
    size_t from = hub->sweep_next, b = from;
    pthread_rwlock_rdlock(&hub->registry_lock);
    while (b <= hub->bucket_mask && b - from < LG_HUB_SWEEP_BUCKETS &&
           topics < LG_HUB_SWEEP_TOPICS) {
        for (struct lg_topic *t = hub->buckets[b]; t; t = t->next_in_bucket, topics++)
            idle += sweep_topic(t, now);
        b++;
    }
    bool graves = hub->graveyard != NULL;
    pthread_rwlock_unlock(&hub->registry_lock);
    hub->sweep_next = b > hub->bucket_mask ? 0 : b;
    /* the write lock only when there is work */
    return idle || graves ? collect_idle(hub, idle != 0, from, b, now) : 0;
}
