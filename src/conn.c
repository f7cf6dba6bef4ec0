#include "conn.h"

#include <string.h>

#include "clock.h"
#include "hub.h"
#include "log.h"
#include "stats.h"

void lg_conn_init(struct lg_conn *c, struct lws *wsi, struct lg_worker *w, enum lg_conn_kind kind)
{
    memset(c, 0, sizeof *c);
    c->wsi = wsi;
    c->worker = w;
    c->kind = kind;
    c->last_write_ms = lg_mono_ms();
    lg_buf_init(&c->out);
    lg_buf_init(&c->ws_msg);
    lg_worker_conn_opened(w, c);
}

static void count_client(enum lg_conn_kind kind, int delta)
{
    if (kind == LG_CONN_SSE)
        LG_STAT_ADD(clients_sse, delta);
    else if (kind == LG_CONN_WS)
        LG_STAT_ADD(clients_ws, delta);
    else if (kind == LG_CONN_POLL)
        LG_STAT_ADD(clients_poll, delta);
}

void lg_conn_release(struct lg_conn *c)
{
    if (c->released || c->kind == LG_CONN_NEW)
        return;
    c->released = true;
    count_client(c->kind, -1);
    lg_subscriber_release(&c->sub, lg_worker_hub(c->worker));
    lg_buf_release(&c->out);
    lg_buf_release(&c->ws_msg);
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
    lg_log_ratelimited(&rl, 1000, status >= 500 ? LG_LOG_WARN : LG_LOG_INFO,
                       "public port answered %d %s: %s", status, code, message);
    lg_buf_reset(&c->out);
    c->out_sent = 0;
    lg_http_error_response(&c->out, status, code, message, extra_headers, false);
    c->closing = true;
    c->keep_alive = false;
    lg_conn_want_write(c);
}

/* Plain event output of a stream whose socket took everything written so far. */
static bool writes_directly(const struct lg_conn *c)
{
    return (c->kind == LG_CONN_SSE || c->kind == LG_CONN_WS) && !c->closing && !c->draining &&
           !c->sub.slow_disconnect && !lws_partial_buffered(c->wsi);
}

void lg_conn_write_now(struct lg_conn *c)
{
    if (c->released || !lg_subscriber_has_output(&c->sub))
        return;
    if (!writes_directly(c)) {
        lg_conn_want_write(c);
        lg_worker_conn_backlog(c->worker, c); /* a full socket: its queue is lag-checked */
        return;
    }
    int rc = c->kind == LG_CONN_WS ? lg_ws_write_events(c) : lg_http_write_events(c);
    if (rc != 0) {
        /* The socket failed outside any callback of this connection: lws closes it on its
         * next pass (its close path releases c). */
        lws_set_timeout(c->wsi, PENDING_TIMEOUT_CLOSE_SEND, LWS_TO_KILL_ASYNC);
        return;
    }
    /* Left over: a policy decision to send, or what a full socket did not take. lws asks for
     * POLLOUT itself after a partial write; asking again is harmless. */
    if (c->closing || lg_subscriber_has_output(&c->sub))
        lg_conn_want_write(c);
    lg_worker_conn_backlog(c->worker, c);
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
