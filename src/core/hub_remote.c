/*
 * hub_remote.c - the hub over a remote store (store_redis.h): the asynchronous publish path
 * and the fan-out of what the store delivers.
 *
 * DESIGN
 * With the memory store the publishing thread appends and fans out under the topic lock, so
 * order in the stream and in every inbox is one. With Redis the position is assigned by Redis
 * and several nodes append to one stream, so the only order every node can agree on is the
 * stream's: every node (the publishing one too) fans out exactly what the store delivers, in
 * position order, on the store's thread, under the topic lock - the same critical section a
 * subscriber's replay is computed in, so nothing falls between replay and live delivery. The
 * append completion only answers the publisher; an event is delivered once per node,
 * whichever node published it. A publish is admitted before the append as with the memory
 * store (lg_hub__admit: room in this node's inboxes and in its limits.max_retained_bytes);
 * the delivery cannot refuse what Redis holds, so it only makes room. No Redis call runs on
 * a worker or under a topic lock: the publisher hands its append to the store's bounded queue
 * (full or Redis down: 503, the publisher pays) and the store's reads block only its own
 * thread. A worker inbox with no room stops that topic's delivery briefly (the store reads it
 * again from the last delivered position), so the pressure goes back to Redis, which retains
 * the stream, not to other topics' memory. The store follows a topic only while its
 * subscribers on this node want it (lg_stream_listen, from lg_hub_subscribe and
 * lg_hub_unsubscribe).
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "event.h"
#include "hub_internal.h"
#include "inbox.h"
#include "log.h"
#include "stats.h"
#include "store_redis.h"
#include "topic.h"

/* ---- Delivery hooks (the store's thread) --------------------------------------------------- */

static void tail_lock(void *arg, void *owner)
{
    (void)arg;
    pthread_mutex_lock(&((struct lg_topic *)owner)->lock);
}

static bool tail_deliver(void *arg, void *owner, struct lg_event *ev)
{
    struct lg_hub *hub = arg;
    struct lg_topic *t = owner;
    uint64_t reserved;
    if (!lg_hub__reserve_inboxes(hub, t, &reserved))
        return false;
    /* Redis holds the event already (admitted where it was published): this node gives its
     * own history way, but cannot refuse */
    lg_hub__make_room(hub, t, 0);
    for (uint32_t w = 0; w < hub->workers; w++) {
        if (!(reserved & (UINT64_C(1) << w)))
            continue;
        if (lg_inbox_push_reserved(hub->links[w].inbox, t, ev))
            t->remote_wake |= UINT64_C(1) << w;
    }
    return true;
}

static void tail_unlock(void *arg, void *owner)
{
    struct lg_hub *hub = arg;
    struct lg_topic *t = owner;
    uint64_t wake = t->remote_wake; /* per topic: each shard's thread delivers its own topics */
    t->remote_wake = 0;
    pthread_mutex_unlock(&t->lock);
    lg_hub__wake_workers(hub, wake);
}

struct lg_store *lg_hub__remote_store(struct lg_hub *hub)
{
    const struct lg_config *cfg = hub->cfg;
    struct lg_redis_options opts = {
        .key_prefix = cfg->redis.key_prefix ? cfg->redis.key_prefix : "",
        .connect_timeout_ms = cfg->redis.connect_timeout_ms,
        .command_timeout_ms = cfg->redis.command_timeout_ms,
        .reconnect_min_ms = cfg->redis.reconnect_min_ms,
        .reconnect_max_ms = cfg->redis.reconnect_max_ms,
        .queue_max = cfg->redis.queue_max,
        .idempotency_window_ms = cfg->redis.idempotency_window_ms,
        .presence_ttl_ms = cfg->redis.presence_ttl_ms,
        .sentinels = (const char *const *)cfg->redis.sentinels.items,
        .sentinel_count = (uint32_t)cfg->redis.sentinels.count,
        .master_name = cfg->redis.master_name,
        .wait_replicas = cfg->redis.wait_replicas,
        .wait_timeout_ms = cfg->redis.wait_timeout_ms,
    };
    struct lg_redis_hooks hooks = {.arg = hub, .lock = tail_lock, .deliver = tail_deliver,
                                   .unlock = tail_unlock, .presence = lg_hub__presence_seen};
    const char *one[] = {cfg->redis.url};
    bool sharded = cfg->redis.shards.count > 0;
    const char *const *urls = sharded ? (const char *const *)cfg->redis.shards.items : one;
    uint32_t n = sharded ? (uint32_t)cfg->redis.shards.count : 1;
    char err[256];
    struct lg_store *store = lg_redis_store_create(&opts, urls, n, &hooks, err, sizeof err);
    if (!store)
        lg_err("redis store: %s", err);
    return store;
}

/* ---- Publishing ------------------------------------------------------------------------------ */

enum { CALL_SUBMITTING, CALL_HANDED, CALL_COMPLETED_EARLY };

struct remote_call {
    struct lg_hub *hub;
    struct lg_topic *t;        /* a lookup reference, given back on completion */
    lg_publish_done *done;
    void *arg;
    _Atomic int state;         /* did the completion run before append() returned? */
    enum lg_publish_status status;
    struct lg_publish_result res;
};

static enum lg_publish_status status_of(enum lg_append_status a)
{
    switch (a) {
    case LG_APPEND_OK:
    case LG_APPEND_DUPLICATE:
        return LG_PUBLISH_OK;
    case LG_APPEND_OOM:
        return LG_PUBLISH_OOM;
    case LG_APPEND_BEHIND:
        return LG_PUBLISH_WORKERS_BEHIND; /* held and retried, as on one node */
    case LG_APPEND_UNAVAILABLE:
        break;
    }
    return LG_PUBLISH_STORE_UNAVAILABLE;
}

static void on_remote_appended(void *arg, enum lg_append_status status, struct lg_event *ev)
{
    struct remote_call *call = arg;
    call->status = status_of(status);
    if (call->status == LG_PUBLISH_OK) {
        lg_hub__fill_result(&call->res, ev, status == LG_APPEND_DUPLICATE);
        if (status == LG_APPEND_DUPLICATE)
            LG_STAT_ADD(publishes_deduplicated, 1);
        else
            LG_STAT_ADD(events_published, 1);
    } else if (call->status != LG_PUBLISH_WORKERS_BEHIND) { /* not a refusal yet */
        lg_hub__refuse(call->status);
    }
    int expected = CALL_SUBMITTING;
    if (atomic_compare_exchange_strong(&call->state, &expected, CALL_COMPLETED_EARLY))
        return; /* lg_hub_publish_async() has not returned yet: it answers */
    call->done(call->arg, call->status, &call->res);
    lg_hub_topic_done(call->hub, call->t);
    free(call);
}

bool lg_hub_remote(const struct lg_hub *hub)
{
    return hub->store->ops->remote;
}

enum lg_publish_status lg_hub_publish_async(struct lg_hub *hub, const struct lg_publish_req *req,
                                            lg_publish_done *done, void *arg)
{
    enum lg_publish_status bad = lg_hub__check_request(req);
    if (bad != LG_PUBLISH_OK)
        return bad;
    struct lg_topic *t;
    enum lg_hub_status found = lg_hub_topic(hub, req->topic, req->topic_len, &t);
    if (found != LG_HUB_OK)
        return lg_hub__refuse(lg_hub__publish_status(found));
    /* Admitted as with the memory store: this node's workers with no room hold the publisher
     * (the tail that would deliver the event pauses on them anyway), and the event must fit
     * in this node's limits.max_retained_bytes. The reservations only pace: the tail reserves
     * its own when it delivers. */
    uint64_t reserved;
    pthread_mutex_lock(&t->lock);
    struct lg_event_fields f = lg_hub__event_fields(t, req);
    enum lg_publish_status admitted = lg_hub__admit(hub, t, &f, &reserved);
    lg_hub__release_reservations(hub, reserved);
    pthread_mutex_unlock(&t->lock);
    if (admitted != LG_PUBLISH_OK) {
        lg_hub_topic_done(hub, t);
        if (admitted == LG_PUBLISH_WORKERS_BEHIND)
            return admitted; /* not a refusal yet: the caller may wait */
        return lg_hub__refuse(admitted);
    }
    struct remote_call *call = calloc(1, sizeof *call);
    if (!call) {
        lg_hub_topic_done(hub, t);
        return lg_hub__refuse(LG_PUBLISH_OOM);
    }
    *call = (struct remote_call){.hub = hub, .t = t, .done = done, .arg = arg};
    lg_stream_append(t->stream, &f, on_remote_appended, call); /* no lock: the store's queue */
    int expected = CALL_SUBMITTING;
    if (atomic_compare_exchange_strong(&call->state, &expected, CALL_HANDED))
        return LG_PUBLISH_OK; /* done() comes later */
    /* Completed before append() returned: refused at once, or answered that fast */
    enum lg_publish_status s = call->status;
    if (s == LG_PUBLISH_OK)
        done(arg, s, &call->res);
    lg_hub_topic_done(hub, t);
    free(call);
    return s;
}

const char *lg_hub_store_state(const struct lg_hub *hub)
{
    return hub->store->ops->state ? hub->store->ops->state(hub->store) : "memory";
}

bool lg_hub_store_ready(const struct lg_hub *hub)
{
    return !hub->store->ops->remote || strcmp(lg_hub_store_state(hub), "up") == 0;
}

void lg_hub_stop_store(struct lg_hub *hub)
{
    if (hub->store->ops->stop)
        hub->store->ops->stop(hub->store);
}

bool lg_hub_host(struct lg_hub *hub, const struct lg_loop_guest *guests, uint32_t n)
{
    if (!hub->store->ops->host || hub->store->ops->host(hub->store, guests, n) != 0)
        return false;
    hub->hosting = true;
    return true;
}

void lg_hub_unhost(struct lg_hub *hub)
{
    if (hub->hosting)
        hub->store->ops->unhost(hub->store);
    hub->hosting = false;
}

void lg_hub_position_before(struct lg_hub *hub, struct lg_topic *t, int64_t unix_ms,
                            struct lg_cursor_entry *out)
{
    (void)hub;
    struct lg_store_page page = {0};
    pthread_mutex_lock(&t->lock);
    out->epoch = lg_stream_epoch(t->stream);
    out->seq = lg_stream_newest(t->stream);
    if (lg_stream_read_after(t->stream, 0, SIZE_MAX, UINT64_MAX, &page) == 0 && page.count) {
        out->seq = page.events[0]->seq - 1; /* every retained event is later: all of them */
        for (size_t i = 0; i < page.count && page.events[i]->published_unix_ms < unix_ms; i++)
            out->seq = page.events[i]->seq;
    }
    pthread_mutex_unlock(&t->lock);
    lg_store_page_release(&page);
}

/* ---- Client publishes: answered on the connection's worker ------------------------------- */

/* The store's thread (or the caller's, when it completed at once): record, post, wake. */
static void on_client_published(void *arg, enum lg_publish_status s,
                                const struct lg_publish_result *res)
{
    struct lg_client_publish *p = arg;
    struct lg_hub *hub = p->hub;
    p->status = s;
    if (s == LG_PUBLISH_OK)
        p->res = *res;
    uint32_t w = p->worker;
    lg_client_publish_queue_push(&hub->links[w].published, p); /* p is the worker's now */
    hub->links[w].wake(hub->links[w].wake_arg);
}

enum lg_publish_status lg_hub_publish_for_client(struct lg_hub *hub,
                                                 const struct lg_publish_req *req,
                                                 struct lg_client_publish *p)
{
    p->hub = hub;
    return lg_hub_publish_async(hub, req, on_client_published, p);
}

struct lg_client_publish *lg_hub_take_published(struct lg_hub *hub, uint32_t w)
{
    return lg_client_publish_queue_pop(&hub->links[w].published);
}
