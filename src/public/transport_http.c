/*
 * transport_http.c - the raw HTTP role: requests on lws' RAW socket role, routed to the
 * transport whose path they name (lg_transports[]: /sse, /poll; /ws is told to upgrade) or to
 * static files (static_files.c), and the table of a connection answering plainly
 * (lg_transport_http: static files, errors, and a keep-alive connection between requests).
 *
 * We write our own status lines and headers because lws 4.1.6's HTTP role never reads a socket
 * whose response is in progress, so it cannot see an SSE or long-poll client leave (it spins on
 * the dead socket instead). On the RAW role a peer's FIN arrives at once as RAW_CLOSE.
 * One connection serves requests one at a time (HTTP/1.1 keep-alive): pipelined requests are
 * buffered and each is served once the answer before it is out, so answers come in order.
 * An idle keep-alive connection is closed after limits.keepalive_timeout_ms, a next request
 * head that takes longer than limits.request_timeout_ms from its first byte gets 408, and a
 * connection closed after an answer while the client may still be sending lingers (half
 * closed, reading and discarding) so the close sends no reset that could destroy the answer.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "acceptor.h" /* LG_LINGER_MS, LG_LINGER_BYTES: one lingering close for both */
#include "client_addresses.h"
#include "config.h"
#include "conn.h"
#include "conn_auth.h"
#include "log.h"
#include "protocols.h"
#include "sse_refusal.h"
#include "static_files.h"
#include "stats.h"
#include "transport.h"

/* A plain connection's own state: its lingering close. */
struct http_state {
    bool lingering;           /* answered and half-closed: reading and discarding until the
                                 peer closes, LG_LINGER_MS or LG_LINGER_BYTES */
    uint32_t linger_bytes;    /* discarded while lingering */
};

static bool lingering(const struct lg_conn *c)
{
    return c->transport == &lg_transport_http &&
           lg_conn_state(c, const struct http_state)->lingering;
}

/* ---- Routing ------------------------------------------------------------------------------ */

static bool path_is(const char *buf, const struct lg_http_request *req, const char *want)
{
    return req->path.len == strlen(want) && memcmp(buf + req->path.off, want, req->path.len) == 0;
}

/* Whether req subscribes to SSE: then its retryable refusals are SSE events, with the CORS
 * lines of its Origin even before authorization (sse_refusal.h). */
static void note_sse_request(struct lg_conn *c, const char *buf, const struct lg_http_request *req)
{
    c->http.sse_request = lg_sse_refusal_applies(buf, req);
    if (c->http.sse_request)
        lg_conn_cors(c, buf, req);
}

/* The transport whose route req's path is, or NULL. */
static const struct lg_transport *route_of(const char *buf, const struct lg_http_request *req)
{
    for (size_t i = 0; i < lg_transport_count; i++)
        if (lg_transports[i]->path && path_is(buf, req, lg_transports[i]->path))
            return lg_transports[i];
    return NULL;
}

/* A request for a transport's route: its GET is served by it; an upgrade-only route (no
 * serve()) is told to upgrade. */
static void serve_route(struct lg_conn *c, const struct lg_transport *t, const char *buf,
                        const struct lg_http_request *req)
{
    char msg[96];
    if (!t->serve) {
        snprintf(msg, sizeof msg, "%s is a WebSocket endpoint: send Upgrade: websocket", t->path);
        lg_conn_http_error(c, 426, "upgrade_required", msg, "Upgrade: websocket\r\n");
    } else if (req->method == LG_HTTP_OPTIONS) {
        lg_conn_preflight(c, buf, req);
    } else if (req->method == LG_HTTP_GET) {
        t->serve(c, buf, req);
    } else {
        snprintf(msg, sizeof msg, "use GET for %s", t->path);
        lg_conn_http_error(c, 405, "method_not_allowed", msg, "Allow: GET\r\n");
    }
}

static void http_serve(struct lg_conn *c, const char *buf, const struct lg_http_request *req)
{
    c->http.keep_alive = req->keep_alive;
    free(c->http.cors); /* the previous request's (keep-alive); /sse and /poll set their own */
    c->http.cors = NULL;
    note_sse_request(c, buf, req);
    bool get = req->method == LG_HTTP_GET;
    const struct lg_transport *route = route_of(buf, req);
    if (req->http_major != 1)
        lg_conn_http_error(c, 505, "http_version_not_supported", LG_HTTP_VERSION_MESSAGE, NULL);
    else if (lg_conn_home_draining(c->home))
        lg_conn_http_error(c, 503, "unavailable", "the gateway is shutting down",
                           "Retry-After: 1\r\n");
    else if (route)
        serve_route(c, route, buf, req);
    else if (get || req->method == LG_HTTP_HEAD)
        lg_static_serve(c, buf, req);
    else
        lg_conn_http_error(c, 405, "method_not_allowed", "static files are served with GET",
                           "Allow: GET, HEAD\r\n");
}

/* ---- Keep-alive: the next request, its deadlines, pipelining ------------------------------ */

/* Whether c waits for its next request: a plain keep-alive connection with its last answer
 * handed to the socket (and taken by it: a client that does not read its answers gets no
 * more until it does, so pipelined requests never pile up answers in memory). */
static bool idle(const struct lg_conn *c)
{
    return c->transport == &lg_transport_http && c->http.keep_alive && !c->closing &&
           !lingering(c) && c->out.len == 0 && !lws_partial_buffered(c->wsi);
}

static void wait_or_serve_next(struct lg_conn *c);

/* Serve the request at rx->buf. An answer that goes out whole meanwhile is only noted: the
 * request's bytes are still in rx, and what comes after the answer waits until they are
 * consumed (else they would look like a pipelined request, and each poll cycle would cost a
 * writable callback and two epoll changes). */
static void serve_in_place(struct lg_conn *c, struct lg_rx *rx)
{
    rx->serving = true;
    if (rx->req.method == LG_HTTP_CONNECT)
        lg_conn_http_error(c, 405, "method_not_allowed", LG_CONNECT_MESSAGE, LG_CONNECT_ALLOW);
    else if (lg_http_request_is_websocket(rx->buf, &rx->req))
        lg_conn_http_error(c, 400, "bad_request",
                           "a WebSocket upgrade must be the first request on a connection", NULL);
    else
        http_serve(c, rx->buf, &rx->req);
    rx->serving = false;
}

/*
 * c is idle: serve the next request if its head is already buffered (pipelined), else wait
 * for it. Deadlines: limits.keepalive_timeout_ms while no byte of it has arrived (then close
 * quietly), limits.request_timeout_ms from its first byte (then 408).
 */
static void next_request(struct lg_conn *c)
{
    const struct lg_config *cfg = c->home->cfg;
    if (!c->http.rx || c->http.rx->len == 0) {
        lg_conn_deadline_in(c, lg_live(&c->home->live->keepalive_timeout_ms));
        return;
    }
    struct lg_rx *rx = c->http.rx;
    const char *problem = NULL;
    /* (feeding no new bytes would tell the parser the stream ended) */
    int rc = rx->req.fed < rx->len ? lg_http_request_feed(&rx->req, rx->buf, rx->len, &problem)
                                   : 0;
    if (rc < 0) {
        char msg[160];
        snprintf(msg, sizeof msg, "malformed HTTP request: %s", problem);
        lg_conn_http_error(c, 400, "bad_request", msg, NULL);
        return;
    }
    if (rc == 0) {
        if (rx->len == cfg->limits.max_request_head_bytes) {
            bool line = !memchr(rx->buf, '\n', rx->len);
            lg_conn_http_error(c, line ? 414 : 431, line ? "uri_too_long" : "headers_too_large",
                               line ? LG_URI_TOO_LONG_MESSAGE : LG_HEAD_TOO_LARGE_MESSAGE, NULL);
        } else if (!rx->timed) {
            rx->timed = true;
            lg_conn_deadline_in(c, cfg->limits.request_timeout_ms);
        }
        return;
    }
    lg_conn_deadline_cancel(c);
    serve_in_place(c, rx);
    /* What follows the request is the start of the next one: served once this one's answer
     * is out (in order), or ignored if c became a stream. */
    uint32_t used = rx->req.head_len;
    memmove(rx->buf, rx->buf + used, rx->len - used);
    rx->len -= used;
    lg_http_request_init(&rx->req);
    rx->timed = false;
    bool answered = rx->answered;
    rx->answered = false;
    if (rx->len == 0) {
        free(c->http.rx);
        c->http.rx = NULL;
    }
    if (answered)
        wait_or_serve_next(c);
}

/* The answer went out whole: with no next request buffered, wait for one now (only its
 * keep-alive deadline); a buffered one is served from the writable callback, in order. */
static void wait_or_serve_next(struct lg_conn *c)
{
    bool pipelined = c->http.rx && c->http.rx->len > 0;
    if (idle(c) && !pipelined)
        next_request(c);
    else
        lg_conn_want_write(c);
}

static void http_answered(struct lg_conn *c)
{
    if (c->http.rx && c->http.rx->serving)
        c->http.rx->answered = true;
    else
        wait_or_serve_next(c);
}

/* ---- Lingering close -------------------------------------------------------------------- */

/* Whether the client sent bytes nobody will read: closing now would answer them with a reset,
 * which can destroy our answer before the client reads it. */
static bool unread_input(const struct lg_conn *c)
{
    int fd = lws_get_socket_fd(c->wsi);
    int queued = 0;
    return (c->http.rx && c->http.rx->len > 0) || (fd >= 0 && ioctl(fd, FIONREAD, &queued) == 0 && queued > 0);
}

/* The answer is out (lws holds nothing more): close, lingering first if the client may still
 * be sending. Return value: -1 close now, 0 lingering. */
static int finish(struct lg_conn *c)
{
    if (c->transport != &lg_transport_http || !unread_input(c))
        return -1;
    int fd = lws_get_socket_fd(c->wsi);
    if (fd < 0 || shutdown(fd, SHUT_WR) != 0)
        return -1;
    lg_conn_state(c, struct http_state)->lingering = true;
    c->ending = false; /* its notice was taken: the linger deadline replaces the end deadline */
    free(c->http.rx);
    c->http.rx = NULL;
    lg_conn_deadline_in(c, LG_LINGER_MS);
    return 0;
}

/* ---- lws callbacks ------------------------------------------------------------------------ */

/* Bytes from the client: on a keep-alive connection the next request (or more), buffered until
 * the connection is idle so pipelined requests are answered one after the other, in order. */
static int http_receive(struct lg_conn *c, const char *in, size_t len)
{
    struct http_state *st = lg_conn_state(c, struct http_state);
    if (st->lingering) {
        st->linger_bytes += (uint32_t)(len < LG_LINGER_BYTES ? len : LG_LINGER_BYTES);
        return st->linger_bytes >= LG_LINGER_BYTES ? -1 : 0;
    }
    if (c->closing)
        return 0;
    bool was_empty = !c->http.rx || c->http.rx->len == 0;
    if (!lg_conn_take_input(c, in, len))
        return 0;
    if (!idle(c))
        return 0; /* an answer comes first */
    if (was_empty)
        lg_conn_deadline_cancel(c); /* no longer idle */
    next_request(c);
    return 0;
}

/* A deadline of a plain connection: lingering over, an idle keep-alive connection, or a
 * request head too slow. Return value: -1 to close. */
static int http_timer(struct lg_conn *c)
{
    if (lingering(c))
        return -1;
    if (c->http.rx && c->http.rx->timed) {
        free(c->http.rx);
        c->http.rx = NULL;
        lg_conn_http_error(c, 408, "request_timeout",
                           "the request head did not arrive within limits.request_timeout_ms",
                           NULL);
        return 0;
    }
    if (!idle(c) && (c->out.len || lws_partial_buffered(c->wsi))) {
        /* its answer is still being sent: an idle connection only once it is out */
        lg_conn_deadline_in(c, lg_live(&c->home->live->keepalive_timeout_ms));
        return 0;
    }
    static struct lg_ratelimit rl;
    lg_log_ratelimited(&rl, 1000, LG_LOG_DEBUG,
                       "closing a keep-alive connection idle for limits.keepalive_timeout_ms");
    return -1;
}

/* The socket can take more: what `out` holds goes first, then the transport's own output. */
static int on_writable(struct lg_conn *c)
{
    if (lingering(c))
        return 0;
    if (c->out.len) {
        if (lg_conn_flush_out(c) != 0)
            return -1;
        /* Come back once lws has sent it all: then close, go on with events, or read the
         * next request. */
        if (c->closing || lg_subscriber_has_output(&c->sub) || c->transport == &lg_transport_http)
            lg_conn_want_write(c);
        return 0;
    }
    if (c->closing)
        return finish(c);
    if (idle(c)) {
        next_request(c);
        return 0;
    }
    return c->transport && c->transport->writable ? c->transport->writable(c) : 0;
}

/* A plain connection at shutdown: close once its answer is out (now if it has none). */
static void http_drain(struct lg_conn *c, const struct lg_drain *how)
{
    (void)how;
    if (!c->out.len)
        c->closing = true;
    c->http.keep_alive = false;
    lg_conn_want_write(c);
}

const struct lg_transport lg_transport_http = {
    .name = "HTTP",
    .state_size = sizeof(struct http_state),
    .receive = http_receive,
    .timer = http_timer,
    .answered = http_answered,
    .drain = http_drain,
};

/* The client address of c already holds limits.max_connections_per_address connections. */
static void refuse_per_address(struct lg_conn *c)
{
    char msg[160];
    snprintf(msg, sizeof msg,
             "your address holds %u connections, the limit (limits.max_connections_per_address); "
             "close one or retry later", lg_client_addresses_per_address(c->home->clients));
    LG_STAT_ADD(connections_refused_address, 1);
    lg_conn_http_error(c, 429, "too_many_connections", msg, "Retry-After: 1\r\n");
}

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
        lg_conn_init(c, wsi, lws_context_user(lws_get_context(wsi)), &lg_transport_http,
                     h->peer);
        if (!lg_conn_claim_client(c, h->client)) {
            note_sse_request(c, h->buf, h->req);
            refuse_per_address(c);
            return 0;
        }
        /* Bytes read after the first request (pipelined) wait for its answer. They fit: the
         * acceptor read at most limits.max_request_head_bytes. */
        if (h->len > h->req->head_len &&
            !lg_conn_take_input(c, h->buf + h->req->head_len, h->len - h->req->head_len))
            return -1;
        http_serve(c, h->buf, h->req);
        return 0;
    }
    case LWS_CALLBACK_RAW_RX: {
        struct lg_conn_home *home = c->home;
        int rc = c->transport->receive ? c->transport->receive(c, in, len) : 0;
        lg_conn_callback_done(home);
        return rc;
    }
    case LWS_CALLBACK_RAW_WRITEABLE: {
        struct lg_conn_home *home = c->home;
        int rc = on_writable(c);
        lg_conn_callback_done(home);
        return rc;
    }
    case LWS_CALLBACK_TIMER: /* conn_auth.c's fallback for a stream's token expiry */
        lg_conn_deadline(c);
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
    .per_session_data_size = sizeof(struct lg_conn), /* the worker adds the transports' state */
    .rx_buffer_size = 2048,
};
