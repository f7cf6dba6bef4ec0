/*
 * transport_sse.c - Server-Sent Events on a raw HTTP connection: the response head, the
 * stream's wire format (events, gap/reset notices, the slow-consumer error, heartbeats, the
 * retry hint that ends a drained stream), the writes of its queue and its heartbeats.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "config.h"
#include "conn.h"
#include "conn_auth.h"
#include "conn_hook.h"
#include "encode.h"
#include "event.h"
#include "stats.h"
#include "subscribe_params.h"
#include "subscriber.h"
#include "transport.h"

/* A stream's own state. */
struct sse_state {
    uint64_t last_write_ms;   /* monotonic: its last write, or its last heartbeat's turn */
    uint32_t drain_retry_ms;  /* windowed drain: the jittered retry: to send (0 = sse.retry_ms) */
    bool heartbeat_owed;      /* quiet for sse.heartbeat_ms: send a comment line */
};

static struct sse_state *sse_of(struct lg_conn *c) { return lg_conn_state(c, struct sse_state); }

/* c wrote to its socket: its heartbeat waits another sse.heartbeat_ms. */
static void wrote(struct lg_conn *c)
{
    sse_of(c)->last_write_ms = lg_mono_ms();
    lg_conn_keepalive_reset(c);
}

/* ---- The request ------------------------------------------------------------------------ */

/* Subscribe c to p's topics (authorized) and start the stream. */
static void sse_start(struct lg_conn *c, const struct lg_subscribe_params *p)
{
    const struct lg_config *cfg = c->home->cfg;
    if (lg_conn_http_subscribe(c, p, true, SIZE_MAX) == 0) {
        lg_conn_set_transport(c, &lg_transport_sse);
        wrote(c); /* its first heartbeat is due sse.heartbeat_ms after its head */
        lg_conn_arm_expiry(c);
        lg_buf_appendf(&c->out,
                       "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                       "Cache-Control: no-cache\r\nX-Accel-Buffering: no\r\n%s"
                       "Connection: close\r\n\r\nretry: %u\n\n",
                       c->http.cors ? c->http.cors : "", cfg->sse.retry_ms);
        /* An id-only block sets the browser's Last-Event-ID without firing an event, so a
         * client that reconnects before its first event still resumes from here. Not while
         * a topic's Redis stream loads: its position is not known yet. */
        if (!lg_subscriber_pending(&c->sub)) {
            lg_buf_append_str(&c->out, "id: ");
            lg_subscriber_cursor(&c->sub, &c->out);
            lg_buf_append_str(&c->out, "\n\n");
        }
        lg_conn_write_now(c); /* the head (and any replay) now: no POLLOUT round for it */
    }
}

/* The subscribe hook answered (conn_hook.h). */
static void sse_hook_answered(struct lg_conn *c, struct lg_subscribe_params *p,
                              enum lg_hook_verdict v, const char *reason)
{
    if (v == LG_HOOK_ALLOW)
        sse_start(c, p);
    else
        lg_conn_hook_refuse_http(c, v, reason);
}

static void sse_serve(struct lg_conn *c, const char *buf, const struct lg_http_request *req)
{
    struct lg_subscribe_params *p = malloc(sizeof *p);
    if (!p) {
        lg_conn_http_error(c, 503, "unavailable", "out of memory", "Retry-After: 1\r\n");
        return;
    }
    lg_subscriber_init(&c->sub, &lg_sse_render, c->home->index, &c->home->cfg->client_queue);
    if (lg_conn_http_params(c, buf, req, "last_event_id", p) == 0 &&
        lg_conn_authorize_http(c, buf, req, p) == 0) {
        enum lg_hook_verdict v = LG_HOOK_ALLOW;
        const char *reason = NULL;
        if (c->home->hooks && lg_conn_hook_wait(c, &p, sse_hook_answered, &v, &reason))
            return; /* p is the wait's */
        sse_hook_answered(c, p, v, reason);
    }
    free(p);
}

/* ---- Writing the stream ------------------------------------------------------------------ */

/* c's next write at the end of out: what `out` holds, then events up to write_batch_bytes
 * (or the heartbeat owed when there are none). Return value: 0, or -1 if memory ran out. */
static int render_stream(struct lg_conn *c, struct lg_buf *out)
{
    const struct lg_config *cfg = c->home->cfg;
    size_t start = out->len;
    lg_buf_append(out, c->out.data, c->out.len);
    lg_buf_reset(&c->out);
    lg_subscriber_render_stream(&c->sub, out, start + cfg->write_batch_bytes, cfg->sse.retry_ms);
    if (c->sub.slow_disconnect)
        c->closing = true;
    if (out->len == start && sse_of(c)->heartbeat_owed)
        lg_buf_append_str(out, ": hb\n\n");
    sse_of(c)->heartbeat_owed = false;
    if (out->oom)
        return -1;
    if (out->len > start)
        wrote(c);
    return 0;
}

static int write_stream(struct lg_conn *c)
{
    struct lg_buf *scratch = lg_conn_scratch(c->home);
    if (render_stream(c, scratch) != 0)
        return -1;
    if (scratch->len > LWS_PRE &&
        lws_write(c->wsi, (unsigned char *)scratch->data + LWS_PRE, scratch->len - LWS_PRE,
                  LWS_WRITE_RAW) < 0)
        return -1;
    return 0;
}

static int sse_writable(struct lg_conn *c)
{
    if (write_stream(c) != 0)
        return -1;
    if (c->draining && !lg_subscriber_has_output(&c->sub) && !c->closing) {
        /* Everything accepted before the shutdown is out: the retry hint ends the stream. */
        uint32_t retry_ms = sse_of(c)->drain_retry_ms;
        lg_buf_appendf(&c->out, "retry: %u\n\n", retry_ms ? retry_ms : c->home->cfg->sse.retry_ms);
        c->closing = true;
    }
    if (c->closing || lg_subscriber_has_output(&c->sub))
        lg_conn_want_write(c);
    lg_conn_note_backlog(c);
    return 0;
}

static int sse_write_events(struct lg_conn *c)
{
    if (c->out.len && lg_conn_flush_out(c) != 0)
        return -1;
    while (!c->closing && !lws_partial_buffered(c->wsi) && lg_subscriber_has_output(&c->sub))
        if (write_stream(c) != 0)
            return -1;
    return 0;
}

/* The lws timer: the token's exp. The stream ends with an error event that names the cursor
 * to resume from (what was written), and the client reconnects with a fresh token. */
static int sse_token_expired(struct lg_conn *c)
{
    if (c->closing || c->draining)
        return 0;
    if (lg_conn_token_ms_left(c) > 0) {
        lg_conn_arm_expiry(c); /* the timer ran early */
        return 0;
    }
    LG_STAT_ADD(auth_streams_expired, 1);
    lg_buf_append_str(&c->out, "event: error\ndata: {\"code\":\"token_expired\",\"message\":"
                               "\"the token expired: reconnect with a fresh token from this "
                               "cursor\",\"cursor\":");
    struct lg_buf cursor;
    lg_buf_init(&cursor);
    lg_subscriber_cursor(&c->sub, &cursor);
    lg_encode_json_string(&c->out, cursor.data ? cursor.data : "", cursor.len);
    lg_buf_release(&cursor);
    lg_buf_append_str(&c->out, "}\n\n");
    c->closing = true;
    lg_conn_want_write(c);
    return 0;
}

static void sse_drain(struct lg_conn *c, const struct lg_drain *how)
{
    sse_of(c)->drain_retry_ms = how->retry_ms;
    c->draining = true; /* the writable callback sends what is queued, then the retry hint */
    lg_conn_want_write(c);
}

/* Streams quiet for sse.heartbeat_ms get a comment line. The order is of their last write, so
 * the walk stops at the first stream that wrote recently: a tick costs the streams that need a
 * heartbeat, not every connection. */
static void send_heartbeats(struct lg_dlist *order, uint64_t now_ms)
{
    struct lg_dlink *link = order->first;
    while (link) {
        struct lg_dlink *next = link->next;
        struct lg_conn *c = lg_dlist_entry(link, struct lg_conn, links.keepalive);
        struct sse_state *st = sse_of(c);
        if (now_ms - st->last_write_ms < c->home->cfg->sse.heartbeat_ms)
            break;
        st->heartbeat_owed = true;
        st->last_write_ms = now_ms; /* one heartbeat per quiet interval */
        lg_dlist_move_tail(order, link);
        lg_conn_want_write(c);
        link = next;
    }
}

/* ---- Rendering -------------------------------------------------------------------------- */

static size_t sse_event_bytes(const struct lg_event *ev) { return ev->sse_len; }

/* A notice is an SSE event of its own; its id is the whole cursor after it. A presence
 * notice has no id line: the browser's Last-Event-ID stays the last event's. */
static void sse_render_notice(struct lg_buf *out, const struct lg_subscriber *s,
                              const struct lg_notice *n, size_t item)
{
    (void)item;
    if (!n->kind) {
        lg_buf_append_str(out, "id: ");
        lg_subscriber_shown_cursor(s, out);
        lg_buf_append_str(out, "\n");
    }
    lg_buf_append_str(out, "event: ");
    lg_buf_append_str(out, lg_notice_type(n));
    lg_buf_append_str(out, "\ndata: {");
    lg_notice_json_fields(out, n);
    lg_buf_append_str(out, "\n\n");
}

static void sse_render_event(struct lg_buf *out, const struct lg_subscriber *s,
                             const struct lg_event *ev, size_t item)
{
    (void)item;
    if (s->sub_count == 1) {
        lg_buf_append(out, ev->sse, ev->sse_len); /* its own id is the whole cursor */
    } else {
        lg_buf_append_str(out, "id: ");
        lg_subscriber_shown_cursor(s, out);
        lg_buf_append(out, "\n", 1);
        lg_buf_append(out, ev->sse + ev->sse_body_offset, ev->sse_len - ev->sse_body_offset);
    }
}

static void sse_render_slow(struct lg_buf *out, const char *code, const char *reason,
                            uint32_t retry_ms)
{
    lg_buf_append_str(out, "event: error\ndata: {\"code\":");
    lg_encode_json_string(out, code, strlen(code));
    lg_buf_append_str(out, ",\"message\":");
    lg_encode_json_string(out, reason, strlen(reason));
    lg_buf_appendf(out, "}\nretry: %u\n\n", retry_ms);
}

const struct lg_render_ops lg_sse_render = {
    .name = "SSE",
    .delivered = &lg_stats.events_delivered_sse,
    .event_bytes = sse_event_bytes,
    .render_notice = sse_render_notice,
    .render_event = sse_render_event,
    .render_slow = sse_render_slow,
};

const struct lg_transport lg_transport_sse = {
    .name = "SSE",
    .report_name = "sse",
    .clients = &lg_stats.clients_sse,
    .render = &lg_sse_render,
    .stream = true,
    .state_size = sizeof(struct sse_state),
    .path = "/sse",
    .serve = sse_serve,
    .write_events = sse_write_events,
    .render_batch = render_stream,
    .writable = sse_writable,
    .timer = sse_token_expired,
    .kick = lg_conn_kick_stream,
    .drain = sse_drain,
    .keepalive_tick = send_heartbeats,
};
