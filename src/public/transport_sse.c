/*
 * transport_sse.c - Server-Sent Events on a raw HTTP connection: the response head, the
 * stream's wire format (events, gap/reset notices, the slow-consumer error, heartbeats, the
 * retry hint that ends a drained stream) and the writes of its queue.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "conn_auth.h"
#include "encode.h"
#include "event.h"
#include "http_routes.h"
#include "stats.h"
#include "subscribe_params.h"
#include "subscriber.h"
#include "transport.h"
#include "worker_services.h"

/* ---- The request ------------------------------------------------------------------------ */

void lg_sse_serve(struct lg_conn *c, const char *buf, const struct lg_http_request *req)
{
    const struct lg_config *cfg = lg_worker_config(c->worker);
    struct lg_subscribe_params *p = malloc(sizeof *p);
    if (!p) {
        lg_conn_http_error(c, 503, "unavailable", "out of memory", "Retry-After: 1\r\n");
        return;
    }
    lg_subscriber_init(&c->sub, &lg_transport_sse, lg_worker_index(c->worker),
                       &cfg->client_queue);
    if (lg_conn_http_params(c, buf, req, "last_event_id", p) == 0 &&
        lg_conn_authorize_http(c, buf, req, p) == 0 &&
        lg_conn_http_subscribe(c, p, true, SIZE_MAX) == 0) {
        lg_conn_set_transport(c, &lg_transport_sse);
        lg_conn_arm_expiry(c);
        lg_buf_appendf(&c->out,
                       "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                       "Cache-Control: no-cache\r\nX-Accel-Buffering: no\r\n%s"
                       "Connection: close\r\n\r\nretry: %u\n\n",
                       c->cors ? c->cors : "", cfg->sse.retry_ms);
        /* An id-only block sets the browser's Last-Event-ID without firing an event, so a
         * client that reconnects before its first event still resumes from here. Not while
         * a topic's Redis stream loads: its position is not known yet. */
        if (!lg_subscriber_pending(&c->sub)) {
            lg_buf_append_str(&c->out, "id: ");
            lg_subscriber_cursor(&c->sub, &c->out);
            lg_buf_append_str(&c->out, "\n\n");
        }
        lg_conn_want_write(c);
    }
    free(p);
}

/* ---- Writing the stream ------------------------------------------------------------------ */

static int write_stream(struct lg_conn *c)
{
    const struct lg_config *cfg = lg_worker_config(c->worker);
    struct lg_buf *scratch = lg_worker_scratch(c->worker);
    lg_subscriber_render_stream(&c->sub, scratch, LWS_PRE + cfg->write_batch_bytes,
                                cfg->sse.retry_ms);
    if (c->sub.slow_disconnect)
        c->closing = true;
    if (scratch->len == LWS_PRE && c->heartbeat_owed)
        lg_buf_append_str(scratch, ": hb\n\n");
    c->heartbeat_owed = false;
    if (scratch->oom)
        return -1;
    if (scratch->len == LWS_PRE)
        return 0;
    if (lws_write(c->wsi, (unsigned char *)scratch->data + LWS_PRE, scratch->len - LWS_PRE,
                  LWS_WRITE_RAW) < 0)
        return -1;
    lg_worker_conn_wrote(c->worker, c);
    return 0;
}

static int sse_writable(struct lg_conn *c)
{
    if (write_stream(c) != 0)
        return -1;
    if (c->draining && !lg_subscriber_has_output(&c->sub) && !c->closing) {
        /* Everything accepted before the shutdown is out: the retry hint ends the stream. */
        lg_buf_appendf(&c->out, "retry: %u\n\n", c->drain_retry_ms
                                                    ? c->drain_retry_ms
                                                    : lg_worker_config(c->worker)->sse.retry_ms);
        c->closing = true;
    }
    if (c->closing || lg_subscriber_has_output(&c->sub))
        lg_conn_want_write(c);
    lg_worker_conn_backlog(c->worker, c);
    return 0;
}

static int sse_write_events(struct lg_conn *c)
{
    if (lg_conn_flush_out(c) != 0)
        return -1;
    while (!c->closing && !lws_partial_buffered(c->wsi) && lg_subscriber_has_output(&c->sub))
        if (write_stream(c) != 0)
            return -1;
    return 0;
}

/* The lws timer: the token's exp. The stream ends with an error event that names the cursor
 * to resume from (what was written), and the client reconnects with a fresh token. */
static void sse_token_expired(struct lg_conn *c)
{
    if (c->closing || c->draining)
        return;
    if (lg_conn_token_ms_left(c) > 0) {
        lg_conn_arm_expiry(c); /* the timer ran early */
        return;
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
}

static void sse_drain(struct lg_conn *c)
{
    c->draining = true; /* the writable callback sends what is queued, then the retry hint */
    lg_conn_want_write(c);
}

/* ---- Rendering -------------------------------------------------------------------------- */

static size_t sse_event_bytes(const struct lg_event *ev) { return ev->sse_len; }

/* A notice is an SSE event of its own; its id is the whole cursor after it. */
static void sse_render_notice(struct lg_buf *out, const struct lg_subscriber *s,
                              const struct lg_notice *n, size_t item)
{
    (void)item;
    lg_buf_append_str(out, "id: ");
    lg_subscriber_cursor(s, out);
    lg_buf_append_str(out, n->end     ? "\nevent: end\ndata: {"
                           : n->reset ? "\nevent: reset\ndata: {"
                                      : "\nevent: gap\ndata: {");
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
        lg_subscriber_cursor(s, out);
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

const struct lg_transport_ops lg_transport_sse = {
    .name = "SSE",
    .clients = &lg_stats.clients_sse,
    .delivered = &lg_stats.events_delivered_sse,
    .stream = true,
    .heartbeat = true,
    .event_bytes = sse_event_bytes,
    .render_notice = sse_render_notice,
    .render_event = sse_render_event,
    .render_slow = sse_render_slow,
    .write_events = sse_write_events,
    .writable = sse_writable,
    .timer = sse_token_expired,
    .drain = sse_drain,
};
