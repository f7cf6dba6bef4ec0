/*
 * ws_publish.c - see ws_publish.h. The checks run in this order, so a client learns the first
 * thing to change: the op itself, its rate, its right to the topic, the data's size, the
 * worker draining, answers outstanding; then the hub decides.
 */
#include "ws_publish.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "client_publish.h"
#include "clock.h"
#include "config.h"
#include "conn.h"
#include "hub.h"
#include "log.h"
#include "rate.h"
#include "stats.h"

_Static_assert(LG_CLIENT_PUBLISH_REF_MAX >= 6 * LG_WS_REF_MAX + 2,
               "a ref's JSON text fits in a client publish");

struct lg_ws_publisher {
    struct lg_conn *conn;
    lg_ws_reply_proc *reply;
    struct lg_rate rate;           /* websocket.max_publishes_per_s */
    struct lg_dlist outstanding;   /* struct lg_client_publish, by link: answers to come */
};

/* ---- Answers ------------------------------------------------------------------------------ */

static json_t *answer_head(const char *type)
{
    return json_pack("{s:s,s:i}", "type", type, "v", 1);
}

static int refuse(struct lg_ws_publisher *pub, json_t *ref, const char *code, const char *text)
{
    json_t *obj = answer_head("error");
    json_object_set_new(obj, "code", json_string(code));
    json_object_set_new(obj, "message", json_string(text));
    json_object_set_new(obj, "op", json_string("publish"));
    if (ref)
        json_object_set(obj, "ref", ref);
    return pub->reply(pub->conn, obj);
}

static int published(struct lg_ws_publisher *pub, json_t *ref, const char *topic,
                     const struct lg_publish_result *res)
{
    LG_STAT_ADD(client_publishes_accepted, 1);
    json_t *obj = answer_head("published");
    if (ref)
        json_object_set(obj, "ref", ref);
    json_object_set_new(obj, "topic", json_string(topic));
    json_object_set_new(obj, "id", json_string(res->id));
    json_object_set_new(obj, "seq", json_integer((json_int_t)res->seq));
    if (res->duplicate)
        json_object_set_new(obj, "duplicate", json_true());
    return pub->reply(pub->conn, obj);
}

/* The hub refused: say why, counted by reason. */
static int refuse_status(struct lg_ws_publisher *pub, json_t *ref, enum lg_publish_status s)
{
    const struct lg_conn_home *home = pub->conn->home;
    static struct lg_ratelimit rl;
    char text[256];
    switch (s) {
    case LG_PUBLISH_WORKERS_BEHIND:
        LG_STAT_ADD(client_publishes_refused_overload, 1);
        lg_log_ratelimited(&rl, 1000, LG_LOG_WARN,
                           "client publish refused: subscribers' workers are behind");
        return refuse(pub, ref, "overloaded",
                      "subscribers' workers are behind (limits.worker_inbox_events): not "
                      "published; retry later or publish more slowly");
    case LG_PUBLISH_BAD_TOPIC:
    case LG_PUBLISH_RESERVED_TOPIC:
    case LG_PUBLISH_BAD_DATA:
        LG_STAT_ADD(client_publishes_refused_invalid, 1);
        return refuse(pub, ref, "bad_message", lg_publish_status_message(s));
    case LG_PUBLISH_TOO_MANY_TOPICS:
        snprintf(text, sizeof text, "the topic cannot be created: the gateway holds %u topics, "
                 "the limit (limits.max_topics): not published",
                 lg_live(&home->live->max_topics));
        break;
    case LG_PUBLISH_MEMORY_FULL:
        snprintf(text, sizeof text, "live events hold limits.max_retained_bytes: not "
                 "published; retry once subscribers catch up or history expires");
        break;
    case LG_PUBLISH_STORE_UNAVAILABLE:
        snprintf(text, sizeof text, "the store (Redis) is unreachable or its queue "
                 "(redis.queue_max) is full: not published, or not known to be; retry with the "
                 "same idempotency_key");
        break;
    default:
        snprintf(text, sizeof text, "the gateway is out of memory: not published; retry");
        break;
    }
    LG_STAT_ADD(client_publishes_refused_unavailable, 1);
    lg_log_ratelimited(&rl, 1000, LG_LOG_WARN, "client publish refused: %s", text);
    return refuse(pub, ref, "unavailable", text);
}

/* ---- Checks before the hub ---------------------------------------------------------------- */

/* Whether c may publish to topic: its token's publish claim, or a topic rule that opens the
 * topic to whoever may subscribe to it. */
static bool may_publish(const struct lg_conn *c, const char *topic)
{
    return lg_grant_may_publish(c->grant, topic) ||
           (lg_hub_client_publish_open(c->home->hub, topic) &&
            lg_auth_may_subscribe(c->home->auth, c->grant, topic));
}

/* The first reason op is refused before the hub sees it, answered; or 1 when it may go on.
 * Return value: 1, or what the refusal's reply returned. */
static int check(struct lg_ws_publisher *pub, const struct lg_ws_publish *op, const char *topic)
{
    const struct lg_conn *c = pub->conn;
    const struct lg_config *cfg = c->home->cfg;
    char text[320];
    if (!lg_rate_take(&pub->rate, lg_mono_ms())) {
        LG_STAT_ADD(client_publishes_refused_rate, 1);
        static struct lg_ratelimit rl;
        lg_log_ratelimited(&rl, 1000, LG_LOG_INFO,
                           "client publish refused: faster than websocket.max_publishes_per_s");
        snprintf(text, sizeof text, "publishes faster than websocket.max_publishes_per_s (%u a "
                 "second): not published; publish more slowly",
                 cfg->websocket.max_publishes_per_s);
        return refuse(pub, op->ref, "rate_limited", text);
    }
    if (!may_publish(c, topic)) {
        LG_STAT_ADD(client_publishes_refused_forbidden, 1);
        snprintf(text, sizeof text, "topic %s: a client may publish only where its token's "
                 "livegate.publish claim allows, or to a topic a rule opens with "
                 "\"client_publish\": true that it may subscribe to", topic);
        return refuse(pub, op->ref, "forbidden", text);
    }
    uint32_t max = lg_live(&c->home->live->max_event_bytes);
    if (op->data_len > max) {
        LG_STAT_ADD(client_publishes_refused_too_large, 1);
        snprintf(text, sizeof text, "data is %zu bytes; the limit is %u (limits.max_event_bytes): "
                 "not published", op->data_len, max);
        return refuse(pub, op->ref, "payload_too_large", text);
    }
    if (lg_conn_home_draining(c->home)) {
        LG_STAT_ADD(client_publishes_refused_draining, 1);
        return refuse(pub, op->ref, "draining",
                      "the gateway is shutting down: not published; publish again once "
                      "reconnected");
    }
    if (pub->outstanding.count >= LG_WS_PUBLISHES_PENDING_MAX) {
        LG_STAT_ADD(client_publishes_refused_pending, 1);
        snprintf(text, sizeof text, "%d publishes of this connection await their answer: not "
                 "published; wait for an answer first", LG_WS_PUBLISHES_PENDING_MAX);
        return refuse(pub, op->ref, "too_many_pending", text);
    }
    return 1;
}

/* ---- The remote store: answered when it comes back ---------------------------------------- */

/* The worker took p back from its queue, pub's connection still there (client_publish.h). */
static void answer_outstanding(void *waiting, struct lg_client_publish *p)
{
    struct lg_ws_publisher *pub = waiting;
    struct lg_conn *c = pub->conn;
    lg_dlist_remove(&pub->outstanding, &p->link);
    if (c->closing)
        return;
    json_t *ref = p->ref[0] ? json_loads(p->ref, JSON_DECODE_ANY, NULL) : NULL;
    int rc = p->status == LG_PUBLISH_OK ? published(pub, ref, p->topic, &p->res)
                                        : refuse_status(pub, ref, p->status);
    json_decref(ref);
    if (rc != 0)
        lg_conn_close_soon(c); /* outside lws' callbacks: it cannot be told by a return */
}

static int publish_remote(struct lg_ws_publisher *pub, const struct lg_ws_publish *op,
                          const struct lg_publish_req *req)
{
    struct lg_conn *c = pub->conn;
    struct lg_client_publish *p = calloc(1, sizeof *p);
    if (p == NULL)
        return refuse_status(pub, op->ref, LG_PUBLISH_OOM);
    p->worker = c->home->index;
    p->waiting = pub;
    p->answer = answer_outstanding;
    memcpy(p->topic, op->topic, op->topic_len);
    if (op->ref) {
        char *text = json_dumps(op->ref, JSON_ENCODE_ANY | JSON_COMPACT);
        if (text) /* fits: ws_message.c bounds a ref */
            snprintf(p->ref, sizeof p->ref, "%s", text);
        free(text);
    }
    lg_dlist_push_tail(&pub->outstanding, &p->link);
    enum lg_publish_status s = lg_hub_publish_for_client(c->home->hub, req, p);
    if (s == LG_PUBLISH_OK)
        return 0; /* answered when the worker takes it back */
    lg_dlist_remove(&pub->outstanding, &p->link);
    free(p);
    return refuse_status(pub, op->ref, s);
}

/* ---- The op ------------------------------------------------------------------------------- */

static struct lg_ws_publisher *publisher_of(struct lg_conn *c, struct lg_ws_publisher **slot,
                                            lg_ws_reply_proc *reply)
{
    if (*slot)
        return *slot;
    struct lg_ws_publisher *pub = calloc(1, sizeof *pub);
    if (pub == NULL)
        return NULL;
    uint32_t per_s = c->home->cfg->websocket.max_publishes_per_s;
    pub->conn = c;
    pub->reply = reply;
    lg_rate_init(&pub->rate, per_s, per_s, lg_mono_ms());
    return *slot = pub;
}

int lg_ws_publish(struct lg_conn *c, struct lg_ws_publisher **publisher,
                  const struct lg_ws_publish *op, const char *code, const char *problem,
                  lg_ws_reply_proc *reply)
{
    struct lg_ws_publisher *pub = publisher_of(c, publisher, reply);
    if (pub == NULL)
        return -1;
    if (code != NULL) {
        LG_STAT_ADD(client_publishes_refused_invalid, 1);
        return refuse(pub, op->ref, code, problem);
    }
    char topic[LG_TOPIC_NAME_MAX + 1];
    memcpy(topic, op->topic, op->topic_len); /* the grammar bounds it (ws_message.c) */
    topic[op->topic_len] = '\0';
    int rc = check(pub, op, topic);
    if (rc != 1)
        return rc;
    struct lg_publish_req req = {
        .topic = op->topic, .topic_len = op->topic_len,
        .type = op->type, .type_len = op->type_len,
        .key = op->key, .key_len = op->key_len,
        .data = op->data, .data_len = op->data_len, .data_is_json = op->data_is_json,
        .idempotency_key = op->idempotency_key,
        .idempotency_key_len = op->idempotency_key_len,
    };
    struct lg_hub *hub = c->home->hub;
    if (lg_hub_remote(hub))
        return publish_remote(pub, op, &req);
    struct lg_publish_result res;
    enum lg_publish_status s = lg_hub_publish(hub, &req, &res);
    return s == LG_PUBLISH_OK ? published(pub, op->ref, topic, &res)
                              : refuse_status(pub, op->ref, s);
}

void lg_ws_publisher_release(struct lg_ws_publisher **publisher)
{
    struct lg_ws_publisher *pub = *publisher;
    if (pub == NULL)
        return;
    struct lg_dlink *l;
    while ((l = pub->outstanding.first)) {
        struct lg_client_publish *p = lg_dlist_entry(l, struct lg_client_publish, link);
        lg_dlist_remove(&pub->outstanding, l);
        p->waiting = NULL; /* its answer goes nowhere when the worker takes it back */
    }
    free(pub);
    *publisher = NULL;
}
