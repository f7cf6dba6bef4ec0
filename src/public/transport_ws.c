/*
 * transport_ws.c - the WebSocket subscriber protocol "livegate.v1" on lws' ws role.
 *
 * lws does the handshake, framing of inbound messages, answers to client pings and close
 * frames. The keepalive (server pings, the pong timeout) is ours, driven by the worker's tick
 * (send_pings()).
 * Outbound events are written as frames pre-encoded once per event (event->ws_frame, or its
 * compressed form when the connection negotiated permessage-deflate: ws_compression.h) and
 * coalesced into one LWS_WRITE_RAW write, which lws sends unframed on a ws connection.
 * This protocol is protocols[0], so it also receives LWS_CALLBACK_WSI_DESTROY for every
 * connection of the worker: the one close notification lws never skips.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "clock.h"
#include "conn.h"
#include "conn_auth.h"
#include "conn_hook.h"
#include "encode.h"
#include "event.h"
#include "hub.h"
#include "log.h"
#include "config.h"
#include "protocols.h"
#include "stats.h"
#include "subscribe_params.h"
#include "topic.h"
#include "transport.h"
#include "ws_compression.h"
#include "ws_deflate.h"
#include "ws_message.h"
#include "ws_publish.h"

#define WS_REPLY_BACKLOG_FACTOR 16 /* replies not yet written, in max_message_bytes */
#define WS_PRESENCE_PAGE 100       /* members in one presence answer (ids of at most 128
                                      bytes: well within websocket.max_message_bytes' minimum
                                      times the backlog factor) */
#define WS_HELD_FACTOR 4 /* messages held while a subscribe waits, in max_message_bytes */
/* lws allocates this much receive buffer for every WebSocket connection and hands longer
 * messages over in pieces of it (on_receive reassembles them up to max_message_bytes). Control
 * frames (at most 125 bytes of payload) fit whole. 128 instead of 512 keeps 384 bytes off
 * every idle connection; a subscribe message costs a callback per 128 bytes. */
#define LG_WS_RX_PIECE 128
_Static_assert(LG_WS_RX_PIECE >= 128, "lws' permessage-deflate needs a receive buffer of 128 bytes");

/* A WebSocket connection's own state. */
struct ws_state {
    struct lg_rate messages;  /* control messages it may send (websocket.max_messages_per_s) */
    struct lg_buf msg;        /* a message being reassembled */
    struct lg_buf held;       /* messages that came while a subscribe waits for the backend
                                 (conn_hook.h), each a uint32_t length and its bytes */
    uint64_t heard_ms;        /* monotonic: the peer's last frame, or our ping once pinged */
    const char *close_reason; /* with close_code (a literal); NULL = "server shutting down" */
    uint32_t bad_messages;    /* malformed control messages in a row */
    uint16_t close_code;      /* when closing: the code to send (1001 at shutdown) */
    bool close_sent;          /* the close frame is queued; nothing more is written */
    bool pinged;              /* pinged after ping_interval_ms of silence */
    bool drain_restart;       /* windowed drain: close 1012 (service restart) */
    struct lg_ws_publisher *publisher; /* its publishes (ws_publish.h); NULL until the first */
    struct {                  /* compressed frames rendered, counted into the stats per write */
        uint64_t frames, before, after;
    } deflated;
};

static struct ws_state *ws_of(struct lg_conn *c) { return lg_conn_state(c, struct ws_state); }

/* What a connection that negotiated permessage-deflate renders through (below). */
static const struct lg_render_ops ws_compressed_render;

/* The peer sent a frame (a message, a pong): c is alive, its keepalive starts over (the first
 * call, at the handshake, puts it in the keep-alive order). */
static void heard(struct lg_conn *c)
{
    ws_of(c)->heard_ms = lg_mono_ms();
    ws_of(c)->pinged = false;
    lg_conn_keepalive_reset(c);
}

/* ---- Replies ------------------------------------------------------------------------------ */

/* Queue the close frame (lws sends it once the callback returns -1): the replies already
 * queued go before it, and nothing is written after it (RFC 6455 5.5.1). Return value: -1. */
static int close_with(struct lg_conn *c, uint16_t code, const char *reason)
{
    if (c->out.len && !c->out.oom) {
        struct lg_buf *scratch = lg_conn_scratch(c->home);
        lg_buf_append(scratch, c->out.data, c->out.len);
        if (!scratch->oom)
            (void)lws_write(c->wsi, (unsigned char *)scratch->data + LWS_PRE, c->out.len,
                            LWS_WRITE_RAW); /* a failed socket is being closed anyway */
    }
    lg_buf_reset(&c->out);
    c->closing = true;
    ws_of(c)->close_sent = true;
    lws_close_reason(c->wsi, (enum lws_close_status)code, (unsigned char *)reason, strlen(reason));
    return -1;
}

/* Close now with code and reason (from a receive callback), and say so in the log. */
static int close_now(struct lg_conn *c, enum lws_close_status code, const char *reason)
{
    static struct lg_ratelimit rl;
    lg_log_ratelimited(&rl, 1000, LG_LOG_INFO, "closing a WebSocket client with %d: %s",
                       (int)code, reason);
    return close_with(c, (uint16_t)code, reason);
}

/* Queue one reply, JSON text of len bytes. A client that floods requests without reading the
 * answers is closed rather than buffered without bound. */
static int reply_text(struct lg_conn *c, const char *text, size_t len)
{
    const struct lg_config *cfg = c->home->cfg;
    unsigned char header[10];
    lg_buf_append(&c->out, header, lg_ws_write_header(header, len, 0x1));
    lg_buf_append(&c->out, text, len);
    if (c->out.len > (size_t)cfg->websocket.max_message_bytes * WS_REPLY_BACKLOG_FACTOR) {
        lg_buf_reset(&c->out); /* it would not read them */
        return close_now(c, LWS_CLOSE_STATUS_POLICY_VIOLATION, "client does not read replies");
    }
    lg_conn_write_now(c); /* with any events owed after it: no POLLOUT round */
    return 0;
}

/* Queue one JSON reply (steals obj). */
static int reply(struct lg_conn *c, json_t *obj)
{
    char *text = json_dumps(obj, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(obj);
    if (!text)
        return -1;
    int rc = reply_text(c, text, strlen(text));
    free(text);
    return rc;
}

/* A new reply object with the envelope every server message starts with. */
static json_t *message(const char *type)
{
    return json_pack("{s:s,s:i}", "type", type, "v", 1);
}

static int reply_error(struct lg_conn *c, const char *code, const char *text)
{
    json_t *obj = message("error");
    json_object_set_new(obj, "code", json_string(code));
    json_object_set_new(obj, "message", json_string(text));
    return reply(c, obj);
}

/* The answer to every subscription, the first message of most connections: written with the
 * encoder events use (encode.h) rather than built as a jansson tree, the same bytes. */
static int reply_subscribed(struct lg_conn *c, const struct lg_subscribe_params *p)
{
    struct lg_buf b;
    lg_buf_init(&b);
    lg_buf_append_str(&b, "{\"type\":\"subscribed\",\"v\":1,\"topics\":[");
    for (size_t i = 0; i < p->topic_count; i++) {
        if (i)
            lg_buf_append(&b, ",", 1);
        lg_encode_json_string(&b, p->topics[i], strlen(p->topics[i]));
    }
    lg_buf_append_str(&b, "],\"cursor\":");
    struct lg_buf cursor;
    lg_buf_init(&cursor);
    lg_subscriber_cursor(&c->sub, &cursor);
    lg_encode_json_string(&b, cursor.data ? cursor.data : "", cursor.len);
    lg_buf_append(&b, "}", 1);
    int rc = b.oom || cursor.oom ? -1 : reply_text(c, b.data, b.len);
    lg_buf_release(&cursor);
    lg_buf_release(&b);
    return rc;
}

/* ---- Operations --------------------------------------------------------------------------- */

/* Undo a subscribe that failed part way: the topics it added (had[i] false) are removed, so a
 * refused subscribe leaves the connection's subscriptions as they were. */
static void unsubscribe_added(struct lg_conn *c, const struct lg_subscribe_params *p,
                              const bool *had)
{
    struct lg_hub *hub = c->home->hub;
    for (size_t i = 0; i < p->topic_count; i++) {
        if (had[i])
            continue;
        struct lg_topic *t = lg_hub_find_topic(hub, p->topics[i], strlen(p->topics[i]));
        if (t)
            lg_subscriber_remove(&c->sub, hub, t);
        lg_hub_topic_done(hub, t);
    }
}

static int subscribe_now(struct lg_conn *c, const struct lg_subscribe_params *p);
static int handle_message(struct lg_conn *c, const char *text, size_t len);

/* The messages held while the subscribe waited, in order, until one waits again. Return
 * value: 0, or -1 (c is to be closed). */
static int replay_held(struct lg_conn *c)
{
    struct lg_buf *held = &ws_of(c)->held;
    size_t at = 0;
    int rc = 0;
    while (rc == 0 && at < held->len && !lg_conn_hook_waiting(c) && !c->closing) {
        uint32_t len;
        memcpy(&len, held->data + at, sizeof len);
        at += sizeof len;
        rc = handle_message(c, held->data + at, len);
        at += len;
    }
    if (at) {
        memmove(held->data, held->data + at, held->len - at);
        held->len -= at;
    }
    return rc;
}

/* The subscribe hook answered (conn_hook.h), outside any lws callback. */
static void ws_hook_answered(struct lg_conn *c, struct lg_subscribe_params *p,
                             enum lg_hook_verdict v, const char *reason)
{
    int rc = v == LG_HOOK_ALLOW ? subscribe_now(c, p)
             : reply_error(c, v == LG_HOOK_DENY ? "hook_denied" : "hook_unavailable", reason);
    if (rc == 0)
        rc = replay_held(c);
    if (rc != 0)
        lg_conn_close_soon(c); /* the close frame, if any, is queued (close_with()) */
}

/* Subscribe to *p's topics from its cursor, answering `subscribed` or `error`, after the
 * subscribe hook when one of them is hooked (then *p is the wait's, set to NULL). */
static int subscribe(struct lg_conn *c, struct lg_subscribe_params **pp)
{
    const struct lg_subscribe_params *p = *pp;
    struct lg_hub *hub = c->home->hub;
    for (size_t i = 0; i < p->topic_count; i++) {
        if (lg_auth_may_subscribe(c->home->auth, c->grant, p->topics[i]))
            continue;
        char text[256];
        snprintf(text, sizeof text, "topic %s is outside %s", p->topics[i],
                 c->grant ? "the token's subscribe claim"
                          : "auth.anonymous_subscribe: send {\"op\":\"auth\",\"token\":...} first");
        if (c->grant)
            LG_STAT_ADD(auth_refused_topic, 1);
        else
            lg_auth_count_refusal(LG_AUTH_MISSING);
        return reply_error(c, c->grant ? "forbidden" : "token_missing", text);
    }
    size_t fresh = 0;
    bool had[LG_CURSOR_MAX_ENTRIES] = {false};
    for (size_t i = 0; i < p->topic_count; i++) {
        struct lg_topic *t = lg_hub_find_topic(hub, p->topics[i], strlen(p->topics[i]));
        had[i] = t && lg_subscriber_find(&c->sub, t) != NULL;
        fresh += !had[i];
        lg_hub_topic_done(hub, t);
    }
    uint32_t max_topics = lg_live(&c->home->live->max_topics_per_client);
    if (c->sub.sub_count + fresh > max_topics) {
        char text[128];
        snprintf(text, sizeof text, "at most %u topics per connection (limits.max_topics_per_client)",
                 max_topics);
        return reply_error(c, "too_many_topics", text);
    }
    if (c->home->hooks) {
        enum lg_hook_verdict v;
        const char *reason;
        if (lg_conn_hook_wait(c, pp, ws_hook_answered, &v, &reason))
            return 0; /* answered when the backend answers; later messages are held */
        if (v != LG_HOOK_ALLOW)
            return reply_error(c, v == LG_HOOK_DENY ? "hook_denied" : "hook_unavailable",
                               reason);
    }
    return subscribe_now(c, p);
}

/* Subscribe to p's topics (authorized) from p's cursor, answering `subscribed` or `error`.
 * All or nothing: when one topic is refused (a bad cursor, no room for a new topic), none of
 * them is added. */
static int subscribe_now(struct lg_conn *c, const struct lg_subscribe_params *p)
{
    struct lg_hub *hub = c->home->hub;
    bool had[LG_CURSOR_MAX_ENTRIES] = {false};
    for (size_t i = 0; i < p->topic_count; i++) {
        struct lg_topic *t = lg_hub_find_topic(hub, p->topics[i], strlen(p->topics[i]));
        had[i] = t && lg_subscriber_find(&c->sub, t) != NULL;
        lg_hub_topic_done(hub, t);
    }
    struct lg_subscribe_failure why;
    (void)lg_subscriber_set_member(&c->sub, c->grant ? c->grant->sub : NULL, c->report.id);
    switch (lg_subscriber_add_all(&c->sub, hub, p, true, SIZE_MAX, &c->topic_creations, &why)) {
    case LG_SUBSCRIBE_OK:
        break;
    case LG_SUBSCRIBE_UNAVAILABLE:
        unsubscribe_added(c, p, had);
        return reply_error(c, "unavailable", why.problem);
    case LG_SUBSCRIBE_TOO_MANY_NEW:
        unsubscribe_added(c, p, had);
        return reply_error(c, "too_many_new_topics", why.problem);
    default: {
        char text[256];
        snprintf(text, sizeof text, "topic %s: %s", why.topic, why.problem);
        unsubscribe_added(c, p, had);
        return reply_error(c, "invalid_cursor", text);
    }
    }
    return reply_subscribed(c, p);
}

static int op_unsubscribe(struct lg_conn *c, json_t *topics)
{
    struct lg_hub *hub = c->home->hub;
    size_t i;
    json_t *t;
    json_array_foreach(topics, i, t) {
        struct lg_topic *topic =
            lg_hub_find_topic(hub, json_string_value(t), json_string_length(t));
        if (topic)
            lg_subscriber_remove(&c->sub, hub, topic);
        lg_hub_topic_done(hub, topic);
    }
    json_t *obj = message("unsubscribed");
    json_object_set(obj, "topics", topics);
    return reply(c, obj);
}

/* {"op":"presence","topic":T,"after":M}: a page of at most WS_PRESENCE_PAGE of T's members
 * after M, for a client allowed to subscribe to T, answered in-band:
 * {"type":"presence","v":1,"topic":T,"members":[...],"next":M|null,"total":N,"unlisted":U}. */
static int op_presence(struct lg_conn *c, const struct lg_ws_message *m)
{
    struct lg_hub *hub = c->home->hub;
    const char *topic = json_string_value(m->topic);
    char text[LG_TOPIC_NAME_MAX + 160];
    if (!lg_auth_may_subscribe(c->home->auth, c->grant, topic)) {
        snprintf(text, sizeof text, "topic %s is outside %s", topic,
                 c->grant ? "the token's subscribe claim" : "auth.anonymous_subscribe");
        return reply_error(c, c->grant ? "forbidden" : "token_missing", text);
    }
    struct lg_topic *t = lg_hub_find_topic(hub, topic, json_string_length(m->topic));
    struct lg_presence_list list;
    bool on = t && lg_hub_presence_on(t);
    int rc = on ? lg_hub_presence_copy(hub, t, &list) : 0;
    lg_hub_topic_done(hub, t);
    if (!on) {
        snprintf(text, sizeof text, "topic %s keeps no presence (nobody subscribes to it, or no "
                 "topic rule asks for it)", topic);
        return reply_error(c, "no_presence", text);
    }
    if (rc != 0)
        return reply_error(c, "unavailable", "out of memory listing members; retry");
    lg_presence_list_sort(&list);
    size_t from = lg_presence_list_after(&list, m->after ? json_string_value(m->after) : NULL);
    size_t n = 0;
    json_t *members = json_array();
    for (; from + n < list.count && n < WS_PRESENCE_PAGE; n++)
        json_array_append_new(members, json_string(list.ids[from + n]));
    json_t *obj = message("presence");
    json_object_set_new(obj, "topic", json_string(topic));
    json_object_set_new(obj, "members", members);
    json_object_set_new(obj, "next", from + n < list.count ? json_string(list.ids[from + n - 1])
                                                           : json_null());
    json_object_set_new(obj, "total", json_integer((json_int_t)list.count));
    json_object_set_new(obj, "unlisted", json_integer((json_int_t)list.unlisted));
    lg_presence_list_release(&list);
    return reply(c, obj);
}

/* After a refresh: drop the subscriptions the new token no longer covers. Return value: the
 * array of their names (to tell the client), NULL when out of memory. */
static json_t *drop_uncovered(struct lg_conn *c)
{
    struct lg_hub *hub = c->home->hub;
    const struct lg_auth *auth = c->home->auth;
    struct lg_topic *gone[LG_CURSOR_MAX_ENTRIES];
    size_t n = 0;
    for (struct lg_subscription *s = c->sub.subs; s && n < LG_CURSOR_MAX_ENTRIES;
         s = s->next_of_owner)
        if (!lg_auth_may_subscribe(auth, c->grant, s->topic->name))
            gone[n++] = s->topic;
    json_t *names = json_array();
    for (size_t i = 0; i < n; i++) {
        json_array_append_new(names, json_string(gone[i]->name));
        lg_subscriber_remove(&c->sub, hub, gone[i]);
    }
    return names;
}

/* {"op":"auth"} or {"op":"refresh"}: the connection's token becomes this one (its claims for
 * every later subscribe, its exp for the connection's end). A refused token changes nothing. */
static int op_auth(struct lg_conn *c, const json_t *token)
{
    struct lg_grant *g;
    enum lg_auth_result r = lg_auth_verify(c->home->auth, json_string_value(token),
                                           json_string_length(token), lg_unix_ms() / 1000, &g);
    if (r != LG_AUTH_OK) {
        lg_auth_count_refusal(r);
        return reply_error(c, lg_auth_result_code(r), lg_auth_result_message(r));
    }
    lg_grant_free(c->grant);
    c->grant = g;
    LG_STAT_ADD(auth_refreshed, 1);
    lg_conn_arm_expiry(c);
    json_t *obj = message("authorized");
    json_object_set_new(obj, "exp", json_integer(g->exp_s));
    json_object_set_new(obj, "unsubscribed", drop_uncovered(c));
    return reply(c, obj);
}

/* The token's exp passed (the worker's tick, conn_auth.h): close with 4003 unless a refresh
 * moved it. */
static int ws_token_expired(struct lg_conn *c)
{
    if (!c->grant || c->closing)
        return 0;
    if (lg_conn_token_ms_left(c) > 0) {
        lg_conn_arm_expiry(c); /* refreshed, or the timer ran early */
        return 0;
    }
    LG_STAT_ADD(auth_streams_expired, 1);
    static struct lg_ratelimit rl;
    lg_log_ratelimited(&rl, 1000, LG_LOG_INFO, "closing a WebSocket client with 4003: token expired");
    c->closing = true;
    ws_of(c)->close_code = 4003;
    ws_of(c)->close_reason = "token expired";
    lg_conn_want_write(c);
    return 0;
}

/* A malformed message: answer it; close with 1008 after too many in a row. */
static int bad_message(struct lg_conn *c, const char *code, const char *text)
{
    const struct lg_config *cfg = c->home->cfg;
    if (++ws_of(c)->bad_messages >= cfg->websocket.max_bad_messages) {
        c->report.close_reason = "policy";
        return close_now(c, LWS_CLOSE_STATUS_POLICY_VIOLATION, "too many malformed messages");
    }
    return reply_error(c, code, text);
}

static int apply_message(struct lg_conn *c, const struct lg_ws_message *m,
                         struct lg_subscribe_params **p)
{
    switch (m->op) {
    case LG_WS_OP_SUBSCRIBE:
        return subscribe(c, p);
    case LG_WS_OP_UNSUBSCRIBE:
        return op_unsubscribe(c, m->topics);
    case LG_WS_OP_PING:
        return reply(c, message("pong"));
    case LG_WS_OP_AUTH:
        return op_auth(c, m->token);
    case LG_WS_OP_PRESENCE:
        return op_presence(c, m);
    case LG_WS_OP_PUBLISH:
        return lg_ws_publish(c, &ws_of(c)->publisher, &m->publish, NULL, NULL, reply);
    }
    return -1;
}

static int handle_message(struct lg_conn *c, const char *text, size_t len)
{
    struct lg_subscribe_params *p = malloc(sizeof *p);
    if (p == NULL)
        return -1;
    struct lg_ws_message m;
    bool malformed;
    char problem[256];
    const char *code = lg_ws_message_parse(text, len,
                                           lg_live(&c->home->live->max_topics_per_client), &m, p,
                                           &malformed, problem, sizeof problem);
    int rc;
    if (code != NULL && malformed) {
        rc = bad_message(c, code, problem);
    } else if (code != NULL && m.op == LG_WS_OP_PUBLISH) {
        rc = lg_ws_publish(c, &ws_of(c)->publisher, &m.publish, code, problem, reply);
        ws_of(c)->bad_messages = 0;
    } else {
        rc = code != NULL ? reply_error(c, code, problem) : apply_message(c, &m, &p);
        ws_of(c)->bad_messages = 0;
    }
    lg_ws_message_release(&m);
    free(p);
    return rc;
}

/* ---- lws callbacks ------------------------------------------------------------------------ */

/* The upgrade record of wsi's socket, NULL if none. */
static struct lg_ws_upgrade *upgrade_of(struct lg_conn_home *home, struct lws *wsi)
{
    int fd = lws_get_socket_fd(wsi);
    return fd >= 0 && (size_t)fd < home->ws_upgrades_cap ? &home->ws_upgrades[fd] : NULL;
}

/* What a WebSocket upgrade on fd brought, kept by the worker until lws reports it established:
 * its raw query (malloc'd, the caller frees it; NULL if none), its token (*token, malloc'd,
 * NULL if none), the client address it counts against (*counted false: nobody) and whether it
 * negotiated permessage-deflate (*deflate). */
static char *take_upgrade(struct lg_conn_home *home, struct lws *wsi, char **token,
                          struct lg_client_address *client, bool *counted, bool *deflate)
{
    *token = NULL;
    *counted = false;
    *deflate = false;
    struct lg_ws_upgrade *u = upgrade_of(home, wsi);
    if (!u)
        return NULL;
    char *query = u->query;
    *token = u->token;
    *client = u->client;
    *counted = u->counted;
    *deflate = u->deflate;
    *u = (struct lg_ws_upgrade){0};
    return query;
}

static int establish(struct lg_conn *c, struct lws *wsi)
{
    struct lg_conn_home *home = lws_context_user(lws_get_context(wsi));
    const struct lg_config *cfg = home->cfg;
    const struct lg_ws_upgrade *u = upgrade_of(home, wsi);
    lg_conn_init(c, wsi, home, &lg_transport_ws, u && u->peer_known ? &u->peer : NULL);
    lg_rate_init(&ws_of(c)->messages, cfg->websocket.max_messages_per_s,
                 cfg->websocket.max_messages_per_s, lg_mono_ms());
    lg_buf_init(&ws_of(c)->msg);
    lg_buf_init(&ws_of(c)->held);
    lg_subscriber_init(&c->sub, &lg_ws_render, home->index, &cfg->client_queue);
    heard(c);
    if (lg_conn_home_draining(home)) {
        c->closing = true;
        ws_of(c)->close_code = LWS_CLOSE_STATUS_GOINGAWAY;
        lg_conn_want_write(c);
        return 0;
    }
    struct lg_client_address client;
    bool counted;
    char *token;
    bool deflate;
    char *query = take_upgrade(home, wsi, &token, &client, &counted, &deflate);
    if (deflate)
        c->sub.ops = &ws_compressed_render; /* nothing is queued yet */
    enum lg_auth_result verdict = LG_AUTH_OK;
    if (token && lg_auth_enabled(home->auth))
        verdict = lg_auth_verify(home->auth, token, strlen(token), lg_unix_ms() / 1000,
                                 &c->grant);
    if (token && !token[0] && lg_auth_enabled(home->auth))
        verdict = LG_AUTH_MALFORMED; /* an Authorization header of another scheme */
    free(token);
    if (verdict != LG_AUTH_OK) {
        free(query);
        lg_auth_count_refusal(verdict);
        return close_now(c, LWS_CLOSE_STATUS_POLICY_VIOLATION, lg_auth_result_code(verdict));
    }
    lg_conn_arm_expiry(c);
    if (!lg_conn_claim_client(c, counted ? &client : NULL)) {
        free(query);
        LG_STAT_ADD(connections_refused_address, 1);
        c->report.close_reason = "policy";
        return close_now(c, LWS_CLOSE_STATUS_POLICY_VIOLATION,
                         "too many connections from your address "
                         "(limits.max_connections_per_address)");
    }
    struct lg_subscribe_params *p = malloc(sizeof *p);
    int rc = 0;
    if (query && p) {
        char problem[256];
        const char *code = lg_subscribe_params_parse(p, query, strlen(query), "since", NULL, 0,
                                                     lg_live(&c->home->live->max_topics_per_client),
                                                     problem,
                                                     sizeof problem);
        c->sub.deltas = !code && p->deltas; /* for the connection's every subscription */
        if (code)
            rc = reply_error(c, code, problem);
        else if (p->topic_count)
            rc = subscribe(c, &p);
    }
    free(p);
    free(query);
    return rc;
}

/* The worker corked the socket before lws answered the upgrade (protocols.h): the 101 and
 * what the connection's start queued (`subscribed`, an error, a close) leave together. */
static int on_established(struct lg_conn *c, struct lws *wsi)
{
    int rc = establish(c, wsi);
    lg_socket_uncork(lws_get_socket_fd(wsi));
    return rc;
}

/* A message that came while a subscribe waits for the backend: handled once it is answered,
 * in order. A client that sends more than WS_HELD_FACTOR messages' worth meanwhile is closed. */
static int hold_message(struct lg_conn *c, const char *text, size_t len)
{
    struct lg_buf *held = &ws_of(c)->held;
    if (held->len + sizeof(uint32_t) + len >
        (size_t)c->home->cfg->websocket.max_message_bytes * WS_HELD_FACTOR) {
        c->report.close_reason = "policy";
        return close_now(c, LWS_CLOSE_STATUS_POLICY_VIOLATION,
                         "too many messages while a subscribe waits for the backend");
    }
    uint32_t n = (uint32_t)len;
    lg_buf_append(held, &n, sizeof n);
    lg_buf_append(held, text, len);
    return held->oom ? -1 : 0;
}

static int on_receive(struct lg_conn *c, const char *in, size_t len)
{
    const struct lg_config *cfg = c->home->cfg;
    if (ws_of(c)->close_sent)
        return 0; /* the rest of a read that held the message which closed c: not answered */
    heard(c);
    if (ws_of(c)->msg.len + len > cfg->websocket.max_message_bytes) {
        char reason[96];
        snprintf(reason, sizeof reason,
                 "control message larger than %u bytes (websocket.max_message_bytes)",
                 cfg->websocket.max_message_bytes);
        return close_now(c, LWS_CLOSE_STATUS_MESSAGE_TOO_LARGE, reason);
    }
    lg_buf_append(&ws_of(c)->msg, in, len);
    if (!lws_is_final_fragment(c->wsi) || lws_remaining_packet_payload(c->wsi))
        return 0;
    if (!lg_rate_take(&ws_of(c)->messages, lg_mono_ms())) {
        LG_STAT_ADD(ws_closed_message_rate, 1);
        c->report.close_reason = "policy";
        return close_now(c, LWS_CLOSE_STATUS_POLICY_VIOLATION,
                         "control messages faster than websocket.max_messages_per_s");
    }
    bool binary = lws_frame_is_binary(c->wsi);
    int rc = binary ? bad_message(c, "bad_message", "control messages are JSON text frames")
             : lg_conn_hook_waiting(c) ? hold_message(c, ws_of(c)->msg.data, ws_of(c)->msg.len)
                                       : handle_message(c, ws_of(c)->msg.data, ws_of(c)->msg.len);
    lg_buf_reset(&ws_of(c)->msg);
    return rc;
}

/* The compressed frames rendered since the last call, into the stats (once per write rather
 * than three shared atomics per delivery). */
static void count_deflated(struct lg_conn *c)
{
    struct ws_state *st = ws_of(c);
    if (!st->deflated.frames)
        return;
    LG_STAT_ADD(ws_deflate_frames, st->deflated.frames);
    LG_STAT_ADD(ws_deflate_bytes_before, st->deflated.before);
    LG_STAT_ADD(ws_deflate_bytes_after, st->deflated.after);
    memset(&st->deflated, 0, sizeof st->deflated);
}

/* c's next write at the end of out: queued replies, then notices and events up to
 * write_batch_bytes; nothing once the close frame is queued. Return value: 0, or -1 if
 * memory ran out. */
static int render_batch(struct lg_conn *c, struct lg_buf *out)
{
    if (ws_of(c)->close_sent)
        return 0;
    size_t start = out->len;
    lg_buf_append(out, c->out.data, c->out.len);
    lg_buf_reset(&c->out);
    lg_subscriber_render_stream(&c->sub, out, start + c->home->cfg->write_batch_bytes, 0);
    count_deflated(c);
    return out->oom ? -1 : 0;
}

/* One coalesced write (render_batch()). Return value: 0, -1 if the socket failed, -2 if
 * memory ran out. */
static int write_batch(struct lg_conn *c)
{
    struct lg_buf *scratch = lg_conn_scratch(c->home);
    if (render_batch(c, scratch) != 0)
        return -2;
    if (scratch->len > LWS_PRE &&
        lws_write(c->wsi, (unsigned char *)scratch->data + LWS_PRE, scratch->len - LWS_PRE,
                  LWS_WRITE_RAW) < 0)
        return -1;
    return 0;
}

static int ws_write_events(struct lg_conn *c)
{
    while (!ws_of(c)->close_sent && !c->sub.slow_disconnect && !lws_partial_buffered(c->wsi) &&
           (c->out.len || lg_subscriber_has_output(&c->sub)))
        if (write_batch(c) != 0)
            return -1;
    return 0;
}

static int on_writable(struct lg_conn *c)
{
    if (ws_of(c)->close_sent)
        return 0;
    if (c->closing)
        return close_with(c, ws_of(c)->close_code,
                          ws_of(c)->close_reason ? ws_of(c)->close_reason : "server shutting down");
    if (c->sub.slow_disconnect)
        return close_with(c, c->sub.kicked ? 4001 : 4000,
                          lg_subscriber_disconnect_reason(&c->sub));
    int rc = write_batch(c);
    if (rc == -2)
        return close_with(c, LWS_CLOSE_STATUS_UNEXPECTED_CONDITION, "out of memory");
    if (rc != 0)
        return -1; /* the socket failed: nothing more can be sent on it */
    if (c->draining && !lg_subscriber_has_output(&c->sub)) {
        /* Everything accepted before the shutdown is out: close once lws has sent it. */
        c->closing = true;
        ws_of(c)->close_code = ws_of(c)->drain_restart ? 1012 /* service restart: reconnect elsewhere */
                                            : LWS_CLOSE_STATUS_GOINGAWAY;
    }
    if (c->closing || lg_subscriber_has_output(&c->sub))
        lg_conn_want_write(c);
    lg_conn_note_backlog(c);
    return 0;
}

static void ping(struct lg_conn *c)
{
    /* FIN, opcode 9, unmasked, 2 bytes of payload: lws 4.1.6 passes a pong to the protocol
     * (LWS_CALLBACK_RECEIVE_PONG) only when it carries some, so the pong echoes "lg". */
    static const unsigned char ping[4] = {0x89, 0x02, 'l', 'g'};
    if (ws_of(c)->close_sent)
        return;
    lg_buf_append(&c->out, ping, sizeof ping); /* goes before any queued event */
    lg_conn_write_now(c); /* straight to the socket when it has room: no POLLOUT round */
}

/* The peer answered nothing, not even the ping: it is gone (or its network is), so a close
 * handshake would only wait for it too. The socket is closed at lws' next pass. */
static void keepalive_timeout(struct lg_conn *c)
{
    static struct lg_ratelimit rl;
    const struct lg_config *cfg = c->home->cfg;
    lg_log_ratelimited(&rl, 1000, LG_LOG_INFO,
                       "closing a WebSocket client: no pong within %u ms of a ping "
                       "(websocket.pong_timeout_ms)",
                       cfg->websocket.pong_timeout_ms);
    c->report.close_reason = "keepalive";
    lg_conn_close_soon(c);
}

/*
 * Pings one tick may send: twice the steady rate (every WebSocket once per ping interval), at
 * least PINGS_PER_TICK_MIN. Connections opened together fall due together and each ping is a
 * send, so pinging them all in one tick would hold events back for that tick. Capped, the ones
 * left go out in the next ticks (a ping interval is a minimum silence, and the pong timeout
 * counts from the ping).
 */
#define PINGS_PER_TICK_MIN 256
#define TICK_MS 1000 /* the worker's tick */

static size_t pings_per_tick(size_t streams, uint32_t ping_interval_ms)
{
    uint64_t steady = (uint64_t)streams * TICK_MS / ping_interval_ms;
    return 2 * steady > PINGS_PER_TICK_MIN ? (size_t)(2 * steady) : PINGS_PER_TICK_MIN;
}

/* The keepalive. The order is the one peers were last heard from, so the walk stops at the
 * first one heard within websocket.ping_interval_ms: a tick costs the streams that are due or
 * awaiting a pong, not every connection. (lws' own keepalive, its retry_and_idle_policy, keeps
 * each connection's timer in a sorted list that every connect and every pong walks:
 * O(connections) each; docs/performance-history.md.) */
static void send_pings(struct lg_dlist *order, uint64_t now_ms)
{
    if (!order->first)
        return;
    const struct lg_config *cfg =
        lg_dlist_entry(order->first, struct lg_conn, links.keepalive)->home->cfg;
    size_t pings_left = pings_per_tick(order->count, cfg->websocket.ping_interval_ms);
    for (struct lg_dlink *link = order->first, *next; link; link = next) {
        next = link->next; /* a timed-out peer leaves the order */
        struct lg_conn *c = lg_dlist_entry(link, struct lg_conn, links.keepalive);
        struct ws_state *st = ws_of(c);
        if (st->pinged) {
            if (now_ms - st->heard_ms >= cfg->websocket.pong_timeout_ms) {
                lg_dlist_remove(order, link);
                keepalive_timeout(c);
            }
            continue;
        }
        if (now_ms - st->heard_ms < cfg->websocket.ping_interval_ms || pings_left-- == 0)
            break;
        st->pinged = true;
        st->heard_ms = now_ms; /* from here on: when the ping was queued */
        ping(c);
    }
}

static void ws_drain(struct lg_conn *c, const struct lg_drain *how)
{
    ws_of(c)->drain_restart = how->restart;
    c->draining = true; /* the writable callback sends what is queued, then closes with 1001 */
    lg_conn_want_write(c);
}

static void ws_release(struct lg_conn *c)
{
    lg_buf_release(&ws_of(c)->msg);
    lg_buf_release(&ws_of(c)->held);
    lg_ws_publisher_release(&ws_of(c)->publisher);
}

static int ws_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                       size_t len)
{
    struct lg_conn *c = user;
    switch (reason) {
    case LWS_CALLBACK_ESTABLISHED:
        return on_established(c, wsi);
    case LWS_CALLBACK_RECEIVE: {
        struct lg_conn_home *home = c->home;
        int rc = on_receive(c, in, len);
        lg_conn_callback_done(home);
        return rc;
    }
    case LWS_CALLBACK_RECEIVE_PONG:
        heard(c);
        return 0;
    case LWS_CALLBACK_SERVER_WRITEABLE: {
        struct lg_conn_home *home = c->home;
        int rc = on_writable(c);
        lg_conn_callback_done(home);
        return rc;
    }
    case LWS_CALLBACK_TIMER: /* conn_auth.c's fallback when the worker's heap is out of memory */
        return ws_token_expired(c);
    case LWS_CALLBACK_CLOSED:
        lg_conn_release(c);
        return 0;
    case LWS_CALLBACK_WSI_DESTROY:
        if (c)
            lg_conn_release(c); /* idempotent; covers connections whose close callback lws skipped */
        return 0;
    case LWS_CALLBACK_CONFIRM_EXTENSION_OKAY: {
        struct lg_conn_home *home = lws_context_user(lws_get_context(wsi));
        return lg_ws_compression_confirm(wsi, upgrade_of(home, wsi), home->cfg);
    }
    case LWS_CALLBACK_HTTP:
        return -1; /* only upgrades reach lws; anything else was answered by the classifier */
    default:
        return 0;
    }
}

/* ---- Rendering: one complete text frame per item --------------------------------------- */

static size_t ws_event_bytes(const struct lg_event *ev) { return ev->ws_frame_len; }

static void ws_render_notice(struct lg_buf *out, const struct lg_subscriber *s,
                             const struct lg_notice *n, size_t item)
{
    (void)s, (void)item;
    struct lg_buf json;
    lg_buf_init(&json);
    lg_buf_append_str(&json, "{\"type\":\"");
    lg_buf_append_str(&json, lg_notice_type(n));
    lg_buf_append_str(&json, "\",\"v\":1,");
    lg_notice_json_fields(&json, n);
    unsigned char header[10];
    lg_buf_append(out, header, lg_ws_write_header(header, json.len, 0x1));
    lg_buf_append(out, json.data, json.len);
    lg_buf_release(&json);
}

static void ws_render_event(struct lg_buf *out, const struct lg_subscriber *s,
                            const struct lg_event *ev, size_t item)
{
    (void)s, (void)item;
    lg_buf_append(out, ev->ws_frame, ev->ws_frame_len);
}

static void ws_render_delta(struct lg_buf *out, const struct lg_subscriber *s,
                            const struct lg_event *ev, size_t item)
{
    (void)s, (void)item;
    lg_buf_append(out, ev->delta_frame, ev->delta_frame_len);
    LG_STAT_ADD(deltas_delivered, 1);
}

/* The same for a connection that negotiated permessage-deflate: the event's compressed frame
 * (made once per event, ws_deflate.h), or the plain one when it goes uncompressed. Only such
 * connections render through it, so s is a connection's subscriber. */
static void ws_render_compressed_event(struct lg_buf *out, const struct lg_subscriber *s,
                                       const struct lg_event *ev, size_t item)
{
    (void)item;
    struct lg_conn *c = lws_container_of(s, struct lg_conn, sub);
    struct ws_state *st = ws_of(c);
    const struct lg_ws_compressed *z = lg_event_ws_compressed(ev, &c->home->ws_deflater);
    if (!z) {
        lg_buf_append(out, ev->ws_frame, ev->ws_frame_len);
        return;
    }
    lg_buf_append(out, z->frame, z->frame_len);
    st->deflated.frames++;
    st->deflated.before += ev->ws_frame_len;
    st->deflated.after += z->frame_len;
}

const struct lg_render_ops lg_ws_render = {
    .name = "WebSocket",
    .delivered = &lg_stats.events_delivered_ws,
    .event_bytes = ws_event_bytes,
    .render_notice = ws_render_notice,
    .render_event = ws_render_event,
    .render_delta = ws_render_delta,
};

static const struct lg_render_ops ws_compressed_render = {
    .name = "WebSocket",
    .delivered = &lg_stats.events_delivered_ws,
    .event_bytes = ws_event_bytes,
    .render_notice = ws_render_notice,
    .render_event = ws_render_compressed_event,
    .render_delta = ws_render_delta, /* deltas are short: sent uncompressed */
};

const struct lg_transport lg_transport_ws = {
    .name = "WebSocket",
    .report_name = "websocket",
    .clients = &lg_stats.clients_ws,
    .render = &lg_ws_render,
    .stream = true,
    .state_size = sizeof(struct ws_state),
    .path = "/ws", /* an upgrade only: a plain GET is told to upgrade */
    .write_events = ws_write_events,
    .render_batch = render_batch,
    .writable = on_writable,
    .timer = ws_token_expired,
    .kick = lg_conn_kick_stream,
    .release = ws_release,
    .drain = ws_drain,
    .keepalive_tick = send_pings,
};

const struct lws_protocols lg_protocol_ws = {
    .name = "livegate.v1",
    .callback = ws_callback,
    .per_session_data_size = sizeof(struct lg_conn), /* the worker adds the transports' state */
    .rx_buffer_size = LG_WS_RX_PIECE,
};
