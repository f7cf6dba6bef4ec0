/*
 * transport_http.c - SSE, long-poll and static files on lws' RAW socket role.
 *
 * We write our own status lines and headers because lws 4.1.6's HTTP role never reads a socket
 * whose response is in progress, so it cannot see an SSE or long-poll client leave (it spins on
 * the dead socket instead). On the RAW role a peer's FIN arrives at once as RAW_CLOSE.
 * One connection serves requests one at a time (HTTP/1.1 keep-alive, no pipelining).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "conn.h"
#include "cursor.h"
#include "hub.h"
#include "log.h"
#include "stats.h"
#include "subscribe_params.h"
#include "topic.h"
#include "transport.h"

#define STATIC_FILE_MAX (4u << 20)

/* ---- Subscribing from a request --------------------------------------------------------- */

/* Subscribe c to every topic in p. Return value: 0, or -1 after queueing the error answer. */
static int subscribe_all(struct lg_conn *c, const struct lg_subscribe_params *p, bool listen,
                         size_t max_replay)
{
    struct lg_hub *hub = lg_worker_hub(c->worker);
    for (size_t i = 0; i < p->topic_count; i++) {
        const char *problem = NULL;
        struct lg_topic *t = lg_hub_topic(hub, p->topics[i], strlen(p->topics[i]), true, &problem);
        if (!t) {
            lg_conn_http_error(c, 503, "unavailable", problem, "Retry-After: 1\r\n");
            return -1;
        }
        const struct lg_cursor_entry *since = p->has_cursor ? lg_cursor_find(&p->cursor, t->name)
                                                            : NULL;
        if (lg_subscriber_add(&c->sub, hub, t, since, listen, max_replay, &problem) < 0) {
            lg_subscriber_release(&c->sub, hub);
            lg_conn_http_error(c, 400, "invalid_cursor", problem, NULL);
            return -1;
        }
    }
    return 0;
}

/* Parse the query; on failure answer 400 and return -1. */
static int parse_params(struct lg_conn *c, const char *buf, const struct lg_http_request *req,
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

/* ---- SSE -------------------------------------------------------------------------------- */

static void serve_sse(struct lg_conn *c, const char *buf, const struct lg_http_request *req)
{
    const struct lg_config *cfg = lg_worker_config(c->worker);
    struct lg_subscribe_params *p = malloc(sizeof *p);
    if (!p) {
        lg_conn_http_error(c, 503, "unavailable", "out of memory", "Retry-After: 1\r\n");
        return;
    }
    lg_subscriber_init(&c->sub, &lg_transport_sse, lg_worker_index(c->worker),
                       &cfg->client_queue);
    if (parse_params(c, buf, req, "last_event_id", p) == 0 &&
        subscribe_all(c, p, true, SIZE_MAX) == 0) {
        c->kind = LG_CONN_SSE;
        LG_STAT_ADD(clients_sse, 1);
        lg_buf_appendf(&c->out,
                       "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                       "Cache-Control: no-cache\r\nX-Accel-Buffering: no\r\n"
                       "Connection: close\r\n\r\nretry: %u\n\nid: ",
                       cfg->sse.retry_ms);
        /* An id-only block sets the browser's Last-Event-ID without firing an event, so a
         * client that reconnects before its first event still resumes from here. */
        lg_subscriber_cursor(&c->sub, &c->out);
        lg_buf_append_str(&c->out, "\n\n");
        lg_conn_want_write(c);
    }
    free(p);
}

/* ---- Long-poll ---------------------------------------------------------------------------- */

static void answer_poll(struct lg_conn *c)
{
    struct lg_buf body;
    lg_buf_init(&body);
    lg_subscriber_render_poll(&c->sub, &body, c->poll_max_batch);
    lg_subscriber_release(&c->sub, lg_worker_hub(c->worker));
    if (c->kind == LG_CONN_POLL) {
        LG_STAT_SUB(clients_poll, 1);
        lws_set_timer_usecs(c->wsi, LWS_SET_TIMER_USEC_CANCEL);
    }
    c->kind = LG_CONN_HTTP;
    if (lg_worker_is_draining(c->worker))
        c->keep_alive = false;
    lg_buf_appendf(&c->out,
                   "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                   "Cache-Control: no-store\r\nContent-Length: %zu\r\n%s\r\n",
                   body.len, c->keep_alive ? "" : "Connection: close\r\n");
    lg_buf_append(&c->out, body.data, body.len);
    lg_buf_release(&body);
    c->closing = !c->keep_alive;
    lg_conn_want_write(c);
}

static void serve_poll(struct lg_conn *c, const char *buf, const struct lg_http_request *req)
{
    const struct lg_config *cfg = lg_worker_config(c->worker);
    struct lg_subscribe_params *p = malloc(sizeof *p);
    if (!p) {
        lg_conn_http_error(c, 503, "unavailable", "out of memory", "Retry-After: 1\r\n");
        return;
    }
    lg_subscriber_init(&c->sub, &lg_transport_poll, lg_worker_index(c->worker),
                       &cfg->client_queue);
    if (parse_params(c, buf, req, "since", p) != 0 ||
        subscribe_all(c, p, true, cfg->poll.max_batch) != 0) {
        free(p);
        return;
    }
    uint64_t timeout_ms = p->has_timeout ? p->timeout_ms : cfg->poll.default_timeout_ms;
    if (timeout_ms > cfg->poll.max_timeout_ms)
        timeout_ms = cfg->poll.max_timeout_ms;
    free(p);
    c->poll_max_batch = cfg->poll.max_batch;
    if (timeout_ms == 0 || lg_subscriber_has_output(&c->sub) || lg_worker_is_draining(c->worker)) {
        answer_poll(c);
        return;
    }
    c->kind = LG_CONN_POLL;
    LG_STAT_ADD(clients_poll, 1);
    lws_set_timer_usecs(c->wsi, (lws_usec_t)timeout_ms * LWS_US_PER_MS);
}

/* ---- Static files ------------------------------------------------------------------------- */

static const char *content_type(const char *path)
{
    static const struct {
        const char *ext, *type;
    } types[] = {
        {".html", "text/html; charset=utf-8"},
        {".js", "text/javascript; charset=utf-8"},
        {".mjs", "text/javascript; charset=utf-8"},
        {".css", "text/css; charset=utf-8"},
        {".json", "application/json"},
        {".svg", "image/svg+xml"},
        {".png", "image/png"},
        {".ico", "image/x-icon"},
        {".txt", "text/plain; charset=utf-8"},
        {".map", "application/json"},
        {".woff2", "font/woff2"},
    };
    const char *dot = strrchr(path, '.');
    for (size_t i = 0; dot && i < sizeof types / sizeof types[0]; i++)
        if (strcmp(dot, types[i].ext) == 0)
            return types[i].type;
    return "application/octet-stream";
}

/* A "." or ".." segment: refused outright rather than normalised, so no request can probe
 * what lies outside the static directory. */
static bool has_dot_segment(const char *path)
{
    for (const char *seg = path; seg; seg = strchr(seg + 1, '/')) {
        const char *s = seg[0] == '/' ? seg + 1 : seg;
        size_t len = strcspn(s, "/");
        if ((len == 1 && s[0] == '.') || (len == 2 && s[0] == '.' && s[1] == '.'))
            return true;
    }
    return false;
}

/* Resolve a request path inside the static directory. Return value: 0 with `resolved` set, or
 * -1 when the path escapes the directory or does not name a regular file. */
static int resolve_static(const char *dir, const char *decoded_path, char *resolved)
{
    char joined[PATH_MAX];
    if (has_dot_segment(decoded_path))
        return -1;
    const char *rel = strcmp(decoded_path, "/") == 0 ? "/index.html" : decoded_path;
    if (snprintf(joined, sizeof joined, "%s%s", dir, rel) >= (int)sizeof joined)
        return -1;
    if (!realpath(joined, resolved))
        return -1;
    size_t dlen = strlen(dir);
    if (strncmp(resolved, dir, dlen) != 0 || resolved[dlen] != '/')
        return -1; /* a symlink or ".." led outside static/ */
    return 0;
}

static void serve_static(struct lg_conn *c, const char *buf, const struct lg_http_request *req)
{
    char decoded[1024], resolved[PATH_MAX];
    int len = lg_percent_decode(buf + req->path.off, req->path.len, decoded, sizeof decoded, false,
                                NULL);
    if (len < 0 || memchr(decoded, '\0', (size_t)len) || decoded[0] != '/') {
        lg_conn_http_error(c, 400, "bad_request", "malformed request path", NULL);
        return;
    }
    int fd = -1;
    struct stat st;
    if (resolve_static(lg_worker_static_dir(c->worker), decoded, resolved) != 0 ||
        (fd = open(resolved, O_RDONLY | O_CLOEXEC)) < 0 || fstat(fd, &st) != 0 ||
        !S_ISREG(st.st_mode) || st.st_size > STATIC_FILE_MAX) {
        if (fd >= 0)
            close(fd);
        lg_conn_http_error(c, 404, "not_found",
                           "no such endpoint or file; endpoints are /sse, /ws and /poll", NULL);
        return;
    }
    lg_buf_appendf(&c->out,
                   "HTTP/1.1 200 OK\r\nContent-Type: %s\r\nContent-Length: %lld\r\n"
                   "Cache-Control: no-cache\r\n%s\r\n",
                   content_type(resolved), (long long)st.st_size,
                   c->keep_alive ? "" : "Connection: close\r\n");
    if (req->method == LG_HTTP_GET) {
        size_t at = c->out.len;
        lg_buf_append(&c->out, NULL, (size_t)st.st_size);
        if (!c->out.oom && read(fd, c->out.data + at, (size_t)st.st_size) != st.st_size) {
            close(fd);
            lg_conn_http_error(c, 500, "internal_error", "static file could not be read", NULL);
            return;
        }
    }
    close(fd);
    c->closing = !c->keep_alive;
    lg_conn_want_write(c);
}

/* ---- Routing ------------------------------------------------------------------------------ */

static bool path_is(const char *buf, const struct lg_http_request *req, const char *want)
{
    return req->path.len == strlen(want) && memcmp(buf + req->path.off, want, req->path.len) == 0;
}

void lg_http_serve(struct lg_conn *c, const char *buf, const struct lg_http_request *req)
{
    c->keep_alive = req->keep_alive;
    bool get = req->method == LG_HTTP_GET;
    if (lg_worker_is_draining(c->worker))
        lg_conn_http_error(c, 503, "unavailable", "the gateway is shutting down",
                           "Retry-After: 1\r\n");
    else if (path_is(buf, req, "/sse"))
        get ? serve_sse(c, buf, req)
            : lg_conn_http_error(c, 405, "method_not_allowed", "use GET for /sse", "Allow: GET\r\n");
    else if (path_is(buf, req, "/poll"))
        get ? serve_poll(c, buf, req)
            : lg_conn_http_error(c, 405, "method_not_allowed", "use GET for /poll",
                                 "Allow: GET\r\n");
    else if (path_is(buf, req, "/ws"))
        lg_conn_http_error(c, 426, "upgrade_required",
                           "/ws is a WebSocket endpoint: send Upgrade: websocket",
                           "Upgrade: websocket\r\n");
    else if (get || req->method == LG_HTTP_HEAD)
        serve_static(c, buf, req);
    else
        lg_conn_http_error(c, 405, "method_not_allowed", "static files are served with GET",
                           "Allow: GET, HEAD\r\n");
}

/* ---- lws callbacks ------------------------------------------------------------------------ */

/* Bytes from the client on a keep-alive connection: the next request. */
static int on_rx(struct lg_conn *c, const char *in, size_t len)
{
    if (c->kind != LG_CONN_HTTP || c->closing)
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
            lg_http_serve(c, c->rx->buf, &c->rx->req);
        free(c->rx); /* no pipelining: one request at a time */
        c->rx = NULL;
    }
    return 0;
}

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
    if (c->kind == LG_CONN_POLL) {
        if (lg_subscriber_has_output(&c->sub))
            answer_poll(c);
        return 0;
    }
    if (c->kind != LG_CONN_SSE)
        return 0;
    if (write_stream(c) != 0)
        return -1;
    if (c->draining && !lg_subscriber_has_output(&c->sub) && !c->closing) {
        /* Everything accepted before the shutdown is out: the retry hint ends the stream. */
        lg_buf_appendf(&c->out, "retry: %u\n\n", lg_worker_config(c->worker)->sse.retry_ms);
        c->closing = true;
    }
    if (c->closing || lg_subscriber_has_output(&c->sub))
        lg_conn_want_write(c);
    lg_worker_conn_backlog(c->worker, c);
    return 0;
}

int lg_http_write_events(struct lg_conn *c)
{
    if (lg_conn_flush_out(c) != 0)
        return -1;
    while (!c->closing && !lws_partial_buffered(c->wsi) && lg_subscriber_has_output(&c->sub))
        if (write_stream(c) != 0)
            return -1;
    return 0;
}

void lg_conn_check_lag(struct lg_conn *c)
{
    if (c->kind != LG_CONN_SSE && c->kind != LG_CONN_WS)
        return;
    lg_subscriber_check_lag(&c->sub, lg_mono_ns());
    if (c->sub.slow_disconnect)
        lg_conn_want_write(c);
}

void lg_conn_drain(struct lg_conn *c)
{
    switch (c->kind) {
    case LG_CONN_SSE:
        c->draining = true; /* on_writable sends what is queued, then the retry hint */
        break;
    case LG_CONN_POLL:
        c->keep_alive = false;
        answer_poll(c);
        return;
    case LG_CONN_WS:
        c->draining = true; /* the WS writable sends what is queued, then closes with 1001 */
        break;
    default:
        if (!c->out.len)
            c->closing = true;
        c->keep_alive = false;
        break;
    }
    lg_conn_want_write(c);
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
        lg_conn_init(c, wsi, lws_context_user(lws_get_context(wsi)), LG_CONN_HTTP);
        lg_http_serve(c, h->buf, h->req);
        return 0;
    }
    case LWS_CALLBACK_RAW_RX:
        return on_rx(c, in, len);
    case LWS_CALLBACK_RAW_WRITEABLE:
        return on_writable(c);
    case LWS_CALLBACK_TIMER:
        if (c->kind == LG_CONN_POLL)
            answer_poll(c);
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
