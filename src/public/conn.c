#include "conn.h"

#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "auth.h"
#include "client_addresses.h"
#include "clock.h"
#include "config.h"
#include "hub.h"
#include "log.h"
#include "sse_refusal.h"
#include "stats.h"
#include "subscribe_params.h"
#include "conn_report.h"
#include "worker_services.h"

static void count_client(const struct lg_transport_ops *t, int delta)
{
    if (t && t->clients)
        atomic_fetch_add_explicit(t->clients, delta, memory_order_relaxed);
}

/* The socket's peer address as text ("" when it cannot be read: a socketpair, or gone). */
static void peer_of(struct lws *wsi, char *out, size_t cap)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    struct lg_client_address a;
    out[0] = '\0';
    int fd = wsi ? lws_get_socket_fd(wsi) : -1;
    if (fd >= 0 && getpeername(fd, (struct sockaddr *)&ss, &len) == 0 &&
        lg_client_address_of((struct sockaddr *)&ss, &a))
        lg_client_address_format(&a, out, cap);
}

void lg_conn_init(struct lg_conn *c, struct lws *wsi, struct lg_worker *w,
                  const struct lg_transport_ops *transport)
{
    memset(c, 0, sizeof *c);
    c->wsi = wsi;
    c->worker = w;
    c->transport = transport;
    count_client(transport, 1);
    c->last_write_ms = lg_mono_ms();
    static _Atomic uint64_t last_id;
    c->id = atomic_fetch_add_explicit(&last_id, 1, memory_order_relaxed) + 1;
    c->opened_unix_ms = lg_unix_ms();
    c->opened_mono_ms = c->last_write_ms;
    peer_of(wsi, c->peer, sizeof c->peer);
    const struct lg_config *cfg = lg_worker_config(w);
    lg_rate_init(&c->topic_creations, cfg->limits.topic_creations_per_s,
                 cfg->limits.max_topics_per_client, c->last_write_ms);
    lg_rate_init(&c->ws_messages, cfg->websocket.max_messages_per_s,
                 cfg->websocket.max_messages_per_s, c->last_write_ms);
    lg_buf_init(&c->out);
    lg_buf_init(&c->ws_msg);
    lg_worker_conn_opened(w, c);
}

void lg_conn_set_transport(struct lg_conn *c, const struct lg_transport_ops *transport)
{
    count_client(c->transport, -1);
    c->transport = transport;
    count_client(transport, 1);
}

bool lg_conn_claim_client(struct lg_conn *c, const struct lg_client_address *client)
{
    if (!client)
        return true;
    if (!lg_client_addresses_acquire(lg_worker_clients(c->worker), client))
        return false;
    c->client = *client;
    c->client_counted = true;
    return true;
}

void lg_conn_release(struct lg_conn *c)
{
    if (c->released || !c->transport)
        return;
    c->released = true;
    lg_conn_report_closed(c);
    if (c->client_counted)
        lg_client_addresses_release(lg_worker_clients(c->worker), &c->client);
    count_client(c->transport, -1);
    lg_subscriber_release(&c->sub, lg_worker_hub(c->worker));
    lg_buf_release(&c->out);
    lg_buf_release(&c->ws_msg);
    lg_grant_free(c->grant);
    c->grant = NULL;
    free(c->cors);
    c->cors = NULL;
    free(c->rx);
    c->rx = NULL;
    lg_worker_conn_closed(c->worker, c);
}

void lg_conn_want_write(struct lg_conn *c)
{
    if (!c->released)
        lws_callback_on_writable(c->wsi);
}

void lg_conn_http_error(struct lg_conn *c, int status, const char *code, const char *message,
                        const char *extra_headers)
{
    static struct lg_ratelimit rl;
    LG_STAT_ADD(requests_rejected, 1);
    bool as_event = c->sse_request && lg_sse_refusal_retried(status);
    lg_log_ratelimited(&rl, 1000, status >= 500 ? LG_LOG_WARN : LG_LOG_INFO,
                       "public port answered %d %s%s: %s", status, code,
                       as_event ? " (as an SSE refused event)" : "", message);
    lg_buf_reset(&c->out);
    c->out_sent = 0;
    if (as_event) {
        lg_sse_refusal(&c->out, lg_worker_config(c->worker)->sse.retry_ms, status, code, message,
                       c->cors);
    } else {
        char headers[1024];
        snprintf(headers, sizeof headers, "%s%s", extra_headers ? extra_headers : "",
                 c->cors ? c->cors : "");
        lg_http_error_response(&c->out, status, code, message, headers, false);
    }
    if (!c->close_reason)
        c->close_reason = status == 429 || status == 401 || status == 403 ? "policy" : "error";
    c->closing = true;
    c->keep_alive = false;
    lg_conn_want_write(c);
}

/* Plain event output of a stream whose socket took everything written so far. */
static bool writes_directly(const struct lg_conn *c)
{
    return c->transport->stream && !c->closing && !c->draining && !c->sub.slow_disconnect &&
           !lws_partial_buffered(c->wsi);
}

/* c was kicked or the disconnect policy fired: its notice goes out when the socket has room,
 * and the socket closes after it, or at the deadline whatever the peer does. */
static void arm_end_deadline(struct lg_conn *c)
{
    if (c->ending || c->released)
        return;
    c->ending = true;
    lg_worker_conn_timer(c->worker, c, LG_END_NOTICE_MS);
}

void lg_conn_end_now(struct lg_conn *c)
{
    static struct lg_ratelimit rl;
    LG_STAT_ADD(clients_closed_unread, 1);
    lg_log_ratelimited(&rl, 1000, LG_LOG_WARN,
                       "closing a %s %s client that did not take its notice within %u ms",
                       strcmp(lg_conn_close_reason(c), "admin") == 0 ? "kicked" : "slow",
                       c->transport->name, LG_END_NOTICE_MS);
    /* Shut down, a close waiting to flush what the peer never reads fails at once; with no
     * linger the close sends a reset instead of keeping the unsent bytes. */
    int fd = lws_get_socket_fd(c->wsi);
    if (fd >= 0) {
        struct linger hard = {.l_onoff = 1, .l_linger = 0};
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
        shutdown(fd, SHUT_RDWR);
    }
    lws_set_timeout(c->wsi, PENDING_TIMEOUT_CLOSE_SEND, LWS_TO_KILL_ASYNC);
}

void lg_conn_write_now(struct lg_conn *c)
{
    if (c->released || (!lg_subscriber_has_output(&c->sub) && c->out.len == 0))
        return;
    if (c->sub.slow_disconnect)
        arm_end_deadline(c);
    if (!writes_directly(c)) {
        lg_conn_want_write(c);
        lg_worker_conn_backlog(c->worker, c); /* a full socket: its queue is lag-checked */
        return;
    }
    if (c->transport->write_events(c) != 0) {
        /* The socket failed outside any callback of this connection: lws closes it on its
         * next pass (its close path releases c). */
        if (!c->close_reason)
            c->close_reason = "error";
        lws_set_timeout(c->wsi, PENDING_TIMEOUT_CLOSE_SEND, LWS_TO_KILL_ASYNC);
        return;
    }
    /* Left over: a policy decision to send, or what a full socket did not take. lws asks for
     * POLLOUT itself after a partial write; asking again is harmless. */
    if (c->closing || lg_subscriber_has_output(&c->sub))
        lg_conn_want_write(c);
    lg_worker_conn_backlog(c->worker, c);
}

void lg_conn_check_lag(struct lg_conn *c)
{
    if (!c->transport->stream)
        return;
    lg_subscriber_check_lag(&c->sub, lg_mono_ns());
    if (c->sub.slow_disconnect) {
        arm_end_deadline(c);
        lg_conn_want_write(c);
    }
}

void lg_conn_drain(struct lg_conn *c)
{
    c->transport->drain(c);
}

void lg_conn_kick(struct lg_conn *c, const char *reason)
{
    if (c->released)
        return;
    c->close_reason = "admin";
    if (c->transport == &lg_transport_poll) {
        lg_subscriber_release(&c->sub, lg_worker_hub(c->worker));
        lg_worker_conn_timer_cancel(c->worker, c);
        lg_conn_set_transport(c, &lg_transport_http);
        lg_conn_http_error(c, 409, "kicked", reason, NULL);
        c->close_reason = "admin";
        arm_end_deadline(c);
        return;
    }
    lg_subscriber_kick(&c->sub, reason); /* a stream: SSE or WebSocket */
    arm_end_deadline(c);
    lg_conn_want_write(c);
}

int lg_conn_flush_out(struct lg_conn *c)
{
    size_t left = c->out.len - c->out_sent;
    if (left == 0)
        return 0;
    if (c->out.oom)
        return -1;
    struct lg_buf *scratch = lg_worker_scratch(c->worker);
    lg_buf_append(scratch, c->out.data + c->out_sent, left);
    if (scratch->oom)
        return -1;
    if (lws_write(c->wsi, (unsigned char *)scratch->data + LWS_PRE, left, LWS_WRITE_RAW) < 0)
        return -1;
    lg_worker_conn_wrote(c->worker, c);
    lg_buf_reset(&c->out);
    c->out_sent = 0;
    return 0;
}

/* ---- Raw HTTP requests that subscribe ------------------------------------------------------ */

int lg_conn_http_params(struct lg_conn *c, const char *buf, const struct lg_http_request *req,
                        const char *cursor_param, struct lg_subscribe_params *p)
{
    char problem[256];
    const struct lg_config *cfg = lg_worker_config(c->worker);
    const char *header = NULL;
    size_t header_len = 0;
    if (req && strcmp(cursor_param, "last_event_id") == 0 &&
        req->headers[LG_HDR_LAST_EVENT_ID].len) {
        header = buf + req->headers[LG_HDR_LAST_EVENT_ID].off;
        header_len = req->headers[LG_HDR_LAST_EVENT_ID].len;
    }
    const char *code = lg_subscribe_params_parse(p, buf + req->query.off, req->query.len,
                                                 cursor_param, header, header_len,
                                                 cfg->limits.max_topics_per_client, problem,
                                                 sizeof problem);
    if (!code && p->topic_count == 0) {
        snprintf(problem, sizeof problem, "at least one topic=NAME parameter is required");
        code = "bad_request";
    }
    if (code) {
        lg_conn_http_error(c, 400, code, problem, NULL);
        return -1;
    }
    return 0;
}

int lg_conn_http_subscribe(struct lg_conn *c, const struct lg_subscribe_params *p, bool listen,
                           size_t max_replay)
{
    struct lg_hub *hub = lg_worker_hub(c->worker);
    struct lg_subscribe_failure why;
    switch (lg_subscriber_add_all(&c->sub, hub, p, listen, max_replay, &c->topic_creations, &why)) {
    case LG_SUBSCRIBE_OK:
        return 0;
    case LG_SUBSCRIBE_UNAVAILABLE:
        lg_conn_http_error(c, 503, "unavailable", why.problem, "Retry-After: 1\r\n");
        return -1;
    case LG_SUBSCRIBE_TOO_MANY_NEW:
        lg_subscriber_release(&c->sub, hub);
        lg_conn_http_error(c, 429, "too_many_new_topics", why.problem, "Retry-After: 1\r\n");
        return -1;
    default:
        lg_subscriber_release(&c->sub, hub);
        lg_conn_http_error(c, 400, "invalid_cursor", why.problem, NULL);
        return -1;
    }
}
