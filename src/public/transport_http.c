/*
 * transport_http.c - the raw HTTP role: requests on lws' RAW socket role, routed to SSE
 * (transport_sse.c), long-poll (transport_poll.c) or static files (static_files.c), and the
 * table of a connection answering plainly (lg_transport_http: static files, errors, and a
 * keep-alive connection between requests).
 *
 * We write our own status lines and headers because lws 4.1.6's HTTP role never reads a socket
 * whose response is in progress, so it cannot see an SSE or long-poll client leave (it spins on
 * the dead socket instead). On the RAW role a peer's FIN arrives at once as RAW_CLOSE.
 * One connection serves requests one at a time (HTTP/1.1 keep-alive, no pipelining).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "http_routes.h"
#include "protocols.h"
#include "transport.h"
#include "worker_services.h"

/* ---- Routing ------------------------------------------------------------------------------ */

static bool path_is(const char *buf, const struct lg_http_request *req, const char *want)
{
    return req->path.len == strlen(want) && memcmp(buf + req->path.off, want, req->path.len) == 0;
}

static void http_serve(struct lg_conn *c, const char *buf, const struct lg_http_request *req)
{
    c->keep_alive = req->keep_alive;
    bool get = req->method == LG_HTTP_GET;
    if (lg_worker_is_draining(c->worker))
        lg_conn_http_error(c, 503, "unavailable", "the gateway is shutting down",
                           "Retry-After: 1\r\n");
    else if (path_is(buf, req, "/sse"))
        get ? lg_sse_serve(c, buf, req)
            : lg_conn_http_error(c, 405, "method_not_allowed", "use GET for /sse", "Allow: GET\r\n");
    else if (path_is(buf, req, "/poll"))
        get ? lg_poll_serve(c, buf, req)
            : lg_conn_http_error(c, 405, "method_not_allowed", "use GET for /poll",
                                 "Allow: GET\r\n");
    else if (path_is(buf, req, "/ws"))
        lg_conn_http_error(c, 426, "upgrade_required",
                           "/ws is a WebSocket endpoint: send Upgrade: websocket",
                           "Upgrade: websocket\r\n");
    else if (get || req->method == LG_HTTP_HEAD)
        lg_static_serve(c, buf, req);
    else
        lg_conn_http_error(c, 405, "method_not_allowed", "static files are served with GET",
                           "Allow: GET, HEAD\r\n");
}

/* ---- lws callbacks ------------------------------------------------------------------------ */

/* Bytes from the client on a keep-alive connection: the next request. */
static int on_rx(struct lg_conn *c, const char *in, size_t len)
{
    if (c->transport != &lg_transport_http || c->closing)
        return 0; /* SSE and held polls expect nothing from the client; ignore it */
    uint32_t cap = lg_worker_config(c->worker)->limits.max_request_head_bytes;
    if (!c->rx) {
        c->rx = malloc(sizeof *c->rx + cap);
        if (!c->rx)
            return -1;
        lg_http_request_init(&c->rx->req);
        c->rx->len = 0;
    }
    if (len > cap - c->rx->len) {
        lg_conn_http_error(c, 431, "headers_too_large",
                           "request head exceeds limits.max_request_head_bytes", NULL);
        return 0;
    }
    memcpy(c->rx->buf + c->rx->len, in, len);
    c->rx->len += (uint32_t)len;
    const char *problem = NULL;
    int rc = lg_http_request_feed(&c->rx->req, c->rx->buf, c->rx->len, &problem);
    if (rc < 0) {
        char msg[160];
        snprintf(msg, sizeof msg, "malformed HTTP request: %s", problem);
        lg_conn_http_error(c, 400, "bad_request", msg, NULL);
    } else if (rc == 1) {
        if (c->rx->req.upgrade)
            lg_conn_http_error(c, 400, "bad_request",
                               "a WebSocket upgrade must be the first request on a connection",
                               NULL);
        else
            http_serve(c, c->rx->buf, &c->rx->req);
        free(c->rx); /* no pipelining: one request at a time */
        c->rx = NULL;
    }
    return 0;
}

/* The socket can take more: what `out` holds goes first, then the transport's own output. */
static int on_writable(struct lg_conn *c)
{
    if (c->out.len) {
        if (lg_conn_flush_out(c) != 0)
            return -1;
        /* Come back once lws has sent it all: then close, or go on with events. */
        if (c->closing || lg_subscriber_has_output(&c->sub) || c->heartbeat_owed)
            lg_conn_want_write(c);
        return 0;
    }
    if (c->closing)
        return -1;
    return c->transport && c->transport->writable ? c->transport->writable(c) : 0;
}

/* A plain connection at shutdown: close once its answer is out (now if it has none). */
static void http_drain(struct lg_conn *c)
{
    if (!c->out.len)
        c->closing = true;
    c->keep_alive = false;
    lg_conn_want_write(c);
}

const struct lg_transport_ops lg_transport_http = {
    .name = "HTTP",
    .drain = http_drain,
};

static int http_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                         size_t len)
{
    struct lg_conn *c = user;
    switch (reason) {
    case LWS_CALLBACK_RAW_ADOPT: {
        const struct lg_handoff *h = lws_get_opaque_user_data(wsi);
        lws_set_opaque_user_data(wsi, NULL);
        if (!h)
            return -1;
        lg_conn_init(c, wsi, lws_context_user(lws_get_context(wsi)), &lg_transport_http);
        http_serve(c, h->buf, h->req);
        return 0;
    }
    case LWS_CALLBACK_RAW_RX:
        return on_rx(c, in, len);
    case LWS_CALLBACK_RAW_WRITEABLE:
        return on_writable(c);
    case LWS_CALLBACK_TIMER:
        if (c->transport && c->transport->timer)
            c->transport->timer(c);
        return 0;
    case LWS_CALLBACK_RAW_CLOSE:
        lg_conn_release(c);
        return 0;
    default:
        return 0;
    }
}

const struct lws_protocols lg_protocol_http = {
    .name = "lg-http",
    .callback = http_callback,
    .per_session_data_size = sizeof(struct lg_conn),
    .rx_buffer_size = 2048,
};
