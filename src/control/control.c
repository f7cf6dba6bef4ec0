/*
 * control.c - the control port's daemon: routing, body buffering, the MHD callbacks, start and
 * stop (see control.h for owns/frees/threads/bounds, control_internal.h for the other parts).
 *
 * Design. MHD calls on_request() several times per request:
 *   1. first call (*con_cls == NULL): route the path and method. Routes without a body (health)
 *      and every refusal that needs no body (404, 405, 413 by Content-Length) are answered
 *      right here. Body routes get a struct lg_ctl_request hung on *con_cls.
 *   2. upload calls (*upload_data_size > 0): append to the body buffer, up to the route's limit;
 *      past it the bytes are only counted and discarded (chunked or lying bodies).
 *   3. final call (*upload_data_size == 0): 413 if the count passed the limit, else the route's
 *      handler parses, validates and publishes, and queues exactly one response.
 * Every response is JSON; every error is {"error": CODE, "message": TEXT} (control_reply.h).
 * MHD_YES/MHD_NO appear only in on_request() and the MHD callbacks: everything below them
 * returns 0 or -1 (-1 = could not even queue a response; MHD then closes the connection).
 */
#include "control.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>

#include "auth.h"
#include "clock.h"
#include "control_deadline.h"
#include "control_internal.h"
#include "control_reply.h"
#include "hub.h"
#include "log.h"
#include "stats.h"
#include "worker_call.h"

#define LG_CTL_RUNS_PER_SERVE 4 /* MHD_run() calls per serve while work is ready */
/* libmicrohttpd's memory pool per connection: the request head, the first part of the body,
 * the answer's head. MHD zeroes all of it at every request (32 KiB by default): 16 KiB still
 * holds a head of more than 12 KiB, more than nginx forwards by default (8 KiB). */
#define LG_CTL_CONNECTION_MEMORY (16u << 10)

/* ---- Routing and the MHD callbacks ---------------------------------------------------------- */

static uint32_t limit_event(const struct lg_live_limits *live)
{
    return lg_live(&live->max_event_bytes);
}

static uint32_t limit_batch(const struct lg_live_limits *live)
{
    return lg_live(&live->max_batch_bytes);
}

/* Admin routes that wait for the workers keep per-request state, as body routes do: no body. */
static uint32_t limit_none(const struct lg_live_limits *live) { (void)live; return 0; }

static const struct lg_ctl_route routes[] = {
    {.access = LG_CTL_PUBLISH, .prefix = "/v1/topics/", .suffix = "/events", .method = "POST",
     .allow = "GET, HEAD, POST", .body_what = "event body", .limit_name = "limits.max_event_bytes",
     .limit_of = limit_event, .handle = lg_ctl_handle_topic_event},
    {.access = LG_CTL_PUBLISH, .prefix = "/v1/publish", .method = "POST", .allow = "POST",
     .body_what = "batch body", .limit_name = "limits.max_batch_bytes", .limit_of = limit_batch,
     .handle = lg_ctl_handle_batch},
    {.access = LG_CTL_OPEN, .prefix = "/healthz", .method = "GET", .allow = "GET, HEAD",
     .handle = lg_ctl_handle_healthz},
    {.access = LG_CTL_OPEN, .prefix = "/readyz", .method = "GET", .allow = "GET, HEAD",
     .handle = lg_ctl_handle_readyz},
    {.access = LG_CTL_ADMIN, .prefix = "/v1/stats", .method = "GET", .allow = "GET, HEAD",
     .handle = lg_ctl_handle_stats},
    {.access = LG_CTL_ADMIN, .prefix = "/metrics", .method = "GET", .allow = "GET, HEAD",
     .handle = lg_ctl_handle_metrics},
    {.access = LG_CTL_ADMIN, .prefix = "/v1/topics", .method = "GET", .allow = "GET, HEAD",
     .handle = lg_ctl_handle_topics},
    {.access = LG_CTL_ADMIN, .prefix = "/v1/topics/", .suffix = "/events", .method = "GET",
     .allow = "GET, HEAD, POST", .handle = lg_ctl_handle_topic_history},
    {.access = LG_CTL_ADMIN, .prefix = "/v1/topics/", .suffix = "/presence", .method = "GET",
     .allow = "GET, HEAD", .handle = lg_ctl_handle_topic_presence},
    {.access = LG_CTL_ADMIN, .prefix = "/v1/topics/", .suffix = "", .method = "GET",
     .allow = "GET, HEAD, DELETE", .handle = lg_ctl_handle_topic_get},
    {.access = LG_CTL_ADMIN, .prefix = "/v1/topics/", .suffix = "", .method = "DELETE",
     .allow = "GET, HEAD, DELETE", .body_what = "request body", .limit_name = "no body",
     .limit_of = limit_none, .handle = lg_ctl_handle_topic_delete},
    {.access = LG_CTL_ADMIN, .prefix = "/v1/clients", .method = "GET", .allow = "GET, HEAD",
     .body_what = "request body", .limit_name = "no body", .limit_of = limit_none,
     .handle = lg_ctl_handle_clients},
    {.access = LG_CTL_ADMIN, .prefix = "/v1/clients/", .suffix = "", .method = "DELETE",
     .allow = "DELETE", .body_what = "request body", .limit_name = "no body",
     .limit_of = limit_none, .handle = lg_ctl_handle_client_delete},
};

const struct lg_ctl_route *lg_ctl_routes(size_t *count)
{
    *count = sizeof routes / sizeof routes[0];
    return routes;
}

int lg_ctl_routes_check(char *err, size_t errlen)
{
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
        enum lg_ctl_access a = routes[i].access;
        if (a != LG_CTL_OPEN && a != LG_CTL_PUBLISH && a != LG_CTL_ADMIN) {
            snprintf(err, errlen, "control route %s %s%s states no access (LG_CTL_OPEN, "
                     "LG_CTL_PUBLISH or LG_CTL_ADMIN)", routes[i].method, routes[i].prefix,
                     routes[i].suffix ? "{...}" : "");
            return -1;
        }
    }
    return 0;
}

static bool route_matches(const struct lg_ctl_route *rt, const char *url)
{
    size_t len = strlen(url), pre = strlen(rt->prefix);
    if (rt->suffix == NULL)
        return strcmp(url, rt->prefix) == 0;
    size_t suf = strlen(rt->suffix);
    /* A path ending in "/events" or "/presence" is those routes': the admin routes on
     * /v1/topics/{topic} reach such a topic with its slash encoded (%2Fevents). */
    if (suf == 0 && (len == pre || (len >= 7 && strcmp(url + len - 7, "/events") == 0) ||
                     (len >= 9 && strcmp(url + len - 9, "/presence") == 0)))
        return false;
    return len >= pre + suf && strncmp(url, rt->prefix, pre) == 0 &&
           strcmp(url + len - suf, rt->suffix) == 0;
}

static bool method_allowed(const struct lg_ctl_route *rt, const char *method)
{
    return strcmp(method, rt->method) == 0 ||
           (strcmp(rt->method, "GET") == 0 && strcmp(method, "HEAD") == 0);
}

/* The route for url and method; when only the method differs, the first route of the path
 * (so the caller answers 405 with its Allow). */
static const struct lg_ctl_route *route_find(const char *url, const char *method)
{
    const struct lg_ctl_route *path_only = NULL;
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
        if (!route_matches(&routes[i], url))
            continue;
        if (method_allowed(&routes[i], method))
            return &routes[i];
        if (!path_only)
            path_only = &routes[i];
    }
    return path_only;
}

static int too_large(struct MHD_Connection *conn, const struct lg_ctl_route *rt,
                     unsigned long long size, uint32_t limit)
{
    struct lg_ctl_error e = LG_CTL_ERROR_INIT;
    lg_ctl_fail(&e, 413, "payload_too_large", "%s is %llu bytes; the limit is %u (%s)", rt->body_what,
         size, limit, rt->limit_name);
    return lg_ctl_reply_error(conn, &e, NULL);
}

/* What the request head says about its own shape (one walk over its header lines). */
struct head_shape {
    unsigned content_lengths;
    bool lengths_differ;
    const char *first_length;
    bool chunked;
    unsigned hosts;
    const char *bad_name; /* the first header name that is not a token (RFC 9110 5.1) */
};

/* RFC 9110 5.6.2: tchar. A name with a space ("Content-Length : 71") is not one. */
static bool is_token(const char *s)
{
    if (*s == '\0')
        return false;
    for (; *s; s++)
        if (!(isalnum((unsigned char)*s) || strchr("!#$%&'*+-.^_`|~", *s)))
            return false;
    return true;
}

static enum MHD_Result note_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                   const char *value)
{
    struct head_shape *h = cls;
    (void)kind;
    if (!is_token(key)) {
        if (h->bad_name == NULL)
            h->bad_name = key;
    } else if (strcasecmp(key, MHD_HTTP_HEADER_HOST) == 0) {
        h->hosts++;
    } else if (strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) == 0) {
        if (h->content_lengths++ == 0)
            h->first_length = value;
        else if (strcmp(value ? value : "", h->first_length ? h->first_length : "") != 0)
            h->lengths_differ = true;
    } else if (strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING) == 0) {
        h->chunked = true;
    }
    return MHD_YES;
}

/*
 * A head whose meaning is a matter of opinion is refused with 400 and the connection closed,
 * whatever the route: libmicrohttpd takes the first of two lengths and ignores a header name
 * with a space before its colon, leaving the body on the connection to be read as a second
 * request (request smuggling, when a proxy in front reads it another way). RFC 9112 5.1
 * (whitespace before the colon), 6.3 (conflicting lengths, length beside Transfer-Encoding),
 * 7.2 (no Host in an HTTP/1.1 request, or more than one).
 * Return value: true when the request was refused (the answer is queued, or -1 in *rc).
 */
static bool ambiguous_head(struct MHD_Connection *conn, const char *version, int *rc)
{
    struct head_shape h = {0};
    MHD_get_connection_values(conn, MHD_HEADER_KIND, note_header, &h);
    struct lg_ctl_error e = LG_CTL_ERROR_INIT;
    if (h.bad_name != NULL)
        lg_ctl_fail(&e, 400, "bad_request", "the header name \"%.64s\" is not a token "
                    "(whitespace before the colon?); nothing was done", h.bad_name);
    else if (h.lengths_differ)
        lg_ctl_fail(&e, 400, "bad_request",
                    "the request has Content-Length headers that disagree; send one");
    else if (h.chunked && h.content_lengths > 0)
        lg_ctl_fail(&e, 400, "bad_request", "the request has both Content-Length and "
                    "Transfer-Encoding; send one of them");
    else if (h.hosts > 1 || (h.hosts == 0 && strcmp(version, MHD_HTTP_VERSION_1_1) == 0))
        lg_ctl_fail(&e, 400, "bad_request", "an HTTP/1.1 request needs exactly one Host header; "
                    "this one has %u", h.hosts);
    else
        return false;
    e.close = true;
    *rc = lg_ctl_reply_error(conn, &e, NULL);
    return true;
}

/* First call of a request: route it, answer what needs no body, else set up *con_cls. */
/* The loop serving the daemon conn came in on: the one to wake when conn is resumed. */
static const struct lg_loop_host *host_of(const struct lg_control *c, struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_DAEMON);
    for (uint32_t i = 0; ci && i < c->worker_count; i++)
        if (c->daemons[i].mhd == ci->daemon)
            return &c->daemons[i].host;
    return NULL;
}

static int begin_request(struct lg_control *c, struct MHD_Connection *conn, const char *url,
                         const char *method, const char *version, void **con_cls)
{
    struct lg_ctl_error e = LG_CTL_ERROR_INIT;
    int refused;
    if (ambiguous_head(conn, version, &refused))
        return refused;
    const struct lg_ctl_route *rt = route_find(url, method);
    if (rt == NULL) {
        lg_ctl_fail(&e, 404, "not_found",
             "no such path \"%.100s\"; the control port serves POST and GET "
             "/v1/topics/{topic}/events, "
             "POST /v1/publish, GET /v1/stats, GET /metrics, GET /v1/topics[/{topic}], "
             "GET /v1/topics/{topic}/presence, "
             "DELETE /v1/topics/{topic}, GET /v1/clients, DELETE /v1/clients/{id}, "
             "GET /healthz and GET /readyz", url);
        return lg_ctl_reply_error(conn, &e, NULL);
    }
    if (!method_allowed(rt, method)) {
        lg_ctl_fail(&e, 405, "method_not_allowed", "%.16s is not allowed on %.100s; use %s", method,
             url, rt->allow);
        return lg_ctl_reply_error(conn, &e, rt->allow);
    }
    struct lg_grant *grant = NULL;
    bool answered = false;
    int auth_rc = lg_ctl_authorize(c, conn, rt->access, &grant, &answered);
    if (answered)
        return auth_rc;
    if (rt->limit_of == NULL)
        return rt->handle(c, conn, url, NULL);

    uint32_t limit = rt->limit_of(c->live);
    const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                                 MHD_HTTP_HEADER_CONTENT_LENGTH);
    unsigned long long declared = cl != NULL ? strtoull(cl, NULL, 10) : 0;
    if (declared > limit) {
        lg_grant_free(grant);
        return too_large(conn, rt, declared, limit);
    }

    struct lg_ctl_request *r = calloc(1, sizeof *r);
    if (r == NULL) {
        lg_grant_free(grant);
        return -1;
    }
    r->grant = grant;
    r->host = host_of(c, conn);
    r->route = rt;
    r->limit = limit;
    *con_cls = r;
    return 0;
}

/* An upload call: keep up to r->limit bytes, count the rest. Always consumes everything. */
static void take_body(struct lg_ctl_request *r, const char *data, size_t *size)
{
    size_t n = *size;
    *size = 0;
    r->received += n;
    if (r->received > r->limit || r->oom) {
        free(r->body); /* will be refused: stop holding it */
        r->body = NULL;
        r->len = r->cap = 0;
        return;
    }
    if (r->len + n + 1 > r->cap) {
        size_t cap = r->cap != 0 ? r->cap : 4096;
        while (cap < r->len + n + 1)
            cap *= 2;
        if (cap > r->limit + 1)
            cap = r->limit + 1;
        char *grown = realloc(r->body, cap);
        if (grown == NULL) {
            r->oom = true;
            return;
        }
        r->body = grown;
        r->cap = cap;
    }
    memcpy(r->body + r->len, data, n);
    r->len += n;
    r->body[r->len] = '\0';
}

/* Last call: the whole body is in (or was counted past the limit). */
static int finish_request(struct lg_control *c, struct MHD_Connection *conn, const char *url,
                          struct lg_ctl_request *r)
{
    if (r->received > r->limit)
        return too_large(conn, r->route, r->received, (uint32_t)r->limit);
    if (r->oom) {
        struct lg_ctl_error e = LG_CTL_ERROR_INIT;
        lg_ctl_fail(&e, 503, "unavailable", "out of memory buffering the request body; retry");
        return lg_ctl_reply_error(conn, &e, NULL);
    }
    return r->route->handle(c, conn, url, r);
}

static struct lg_ctl_deadline *deadline_of(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info != NULL ? info->socket_context : NULL;
}

void lg_ctl_request_progressed(struct lg_control *c, struct MHD_Connection *conn)
{
    lg_ctl_deadline_head_in(c->deadlines, deadline_of(conn), lg_mono_ms());
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **con_cls)
{
    struct lg_control *c = cls;
    struct lg_ctl_request *r = *con_cls;
    int rc = 0;
    if (r == NULL) {
        lg_ctl_deadline_head_in(c->deadlines, deadline_of(conn), lg_mono_ms());
        rc = begin_request(c, conn, url, method, version, con_cls);
    }
    else if (*upload_data_size != 0)
        take_body(r, upload_data, upload_data_size);
    else
        rc = finish_request(c, conn, url, r);
    return rc == 0 ? MHD_YES : MHD_NO;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct lg_control *c = cls;
    struct lg_ctl_request *r = *con_cls;
    (void)toe;
    lg_ctl_deadline_answered(c->deadlines, deadline_of(conn), lg_mono_ms());
    if (r != NULL) {
        lg_ctl_admin_forget(c, r);
        free(r->body);
        lg_ctl_publish_forget(r);
        lg_grant_free(r->grant);
        lg_call_unref(r->call);
        free(r);
        *con_cls = NULL;
    }
}

/* Every connection gets a deadline entry for its whole life (control_deadline.h). */
static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    struct lg_control *c = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *fd =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        *socket_context = fd != NULL ? lg_ctl_deadline_open(c->deadlines, fd->connect_fd,
                                                            lg_mono_ms())
                                     : NULL;
        if (*socket_context == NULL)
            lg_warn("control: a connection got no request deadline (out of memory)");
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
        lg_ctl_deadline_close(c->deadlines, *socket_context);
        *socket_context = NULL;
    }
}

/* MHD unescapes the path and query in place by default, turning %2F into '/' and leaving
 * malformed escapes as they are. We decode ourselves (strictly), so MHD must not. */
static size_t unescape_none(void *cls, struct MHD_Connection *conn, char *s)
{
    (void)cls, (void)conn;
    return strlen(s);
}

static void mhd_log(void *cls, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    struct lg_control *c = cls;
    char line[512];
    vsnprintf(line, sizeof line, fmt, ap);
    line[strcspn(line, "\r\n")] = '\0';
    pthread_mutex_lock(&c->err_lock);
    if (c->capturing)
        snprintf(c->start_err, sizeof c->start_err, "%s", line);
    pthread_mutex_unlock(&c->err_lock);
    /* At the descriptor limit MHD reports every failed accept: a million lines in seconds. */
    static struct lg_ratelimit rl;
    lg_log_ratelimited(&rl, 1000, LG_LOG_WARN, "control: %s", line);
}

/* ======================================================================================== */
/* Start and stop                                                                           */
/* ======================================================================================== */

static int resolve(const struct lg_listen_addr *a, struct sockaddr_storage *ss, char *err,
                   size_t errlen)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *ai = NULL;
    char port[8];
    snprintf(port, sizeof port, "%u", (unsigned)a->port);
    int rc = getaddrinfo(a->host, port, &hints, &ai);
    if (rc != 0 || ai == NULL || ai->ai_addrlen > sizeof *ss) {
        snprintf(err, errlen, "control address \"%s\" cannot be used: %s", a->host,
                 rc != 0 ? gai_strerror(rc) : "no usable address");
        if (ai != NULL)
            freeaddrinfo(ai);
        return -1;
    }
    memset(ss, 0, sizeof *ss);
    memcpy(ss, ai->ai_addr, ai->ai_addrlen);
    freeaddrinfo(ai);
    return 0;
}

/* The control port's one listening socket; every daemon watches a duplicate of it, as
 * libmicrohttpd's own thread pool does, so a stuck worker's daemon leaves new connections to
 * the others. Return value: the socket, or -1 with err filled. */
static int listen_on(const struct lg_listen_addr *a, const struct sockaddr_storage *ss,
                     char *err, size_t errlen)
{
    socklen_t len = ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                              : sizeof(struct sockaddr_in);
    int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int on = 1;
    if (fd >= 0 && setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) == 0 &&
        (ss->ss_family != AF_INET6 ||
         setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof on) == 0) &&
        bind(fd, (const struct sockaddr *)ss, len) == 0 && listen(fd, SOMAXCONN) == 0)
        return fd;
    snprintf(err, errlen, "cannot listen on the control address %s:%u: %s", a->host,
             (unsigned)a->port, strerror(errno));
    if (fd >= 0)
        close(fd);
    return -1;
}

static uint16_t bound_port_of(int fd)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &len) != 0)
        return 0;
    return ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                          : ((struct sockaddr_in *)&ss)->sin_port);
}

/* The guest's serve(): run the daemon, and again at once while it has work ready (answers
 * to pipelined requests then leave together), at most LG_CTL_RUNS_PER_SERVE times. Return
 * value: work is still ready (a timeout of 0: resumed connections, or sockets libmicrohttpd
 * has not read to EAGAIN yet, which its edge-triggered epoll set will not report again). */
static bool serve_daemon(void *arg)
{
    const struct lg_ctl_daemon *d = arg;
    bool more = true;
    for (int i = 0; more && i < LG_CTL_RUNS_PER_SERVE; i++) {
        MHD_run(d->mhd);
        MHD_UNSIGNED_LONG_LONG ms;
        more = MHD_get_timeout(d->mhd, &ms) == MHD_YES && ms == 0;
    }
    return more;
}

static void daemon_hosted(void *arg, const struct lg_loop_host *host)
{
    struct lg_ctl_daemon *d = arg;
    d->host = *host;
}

/* Daemon i of n, on a duplicate of listen_fd. Return value: 0, or -1 with err filled. */
static int start_daemon(struct lg_control *c, uint32_t i, int listen_fd, bool ipv6, char *err,
                        size_t errlen)
{
    const struct lg_config *cfg = c->cfg;
    uint32_t n = c->worker_count, limit = cfg->limits.control_max_connections;
    unsigned int share = limit / n + (i < limit % n ? 1 : 0);
    int fd = fcntl(listen_fd, F_DUPFD_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(err, errlen, "cannot start the control port: %s", strerror(errno));
        return -1;
    }
    unsigned int flags = MHD_USE_EPOLL | MHD_USE_ERROR_LOG | MHD_ALLOW_SUSPEND_RESUME;
    if (ipv6)
        flags |= MHD_USE_IPv6;
    struct MHD_Daemon *d = MHD_start_daemon(
        flags, 0, NULL, NULL, on_request, c,
        MHD_OPTION_EXTERNAL_LOGGER, mhd_log, c, /* first, so startup errors are routed too */
        MHD_OPTION_LISTEN_SOCKET, fd,
        MHD_OPTION_CONNECTION_LIMIT, share ? share : 1u,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)LG_CTL_CONNECTION_MEMORY,
        MHD_OPTION_CONNECTION_TIMEOUT, (cfg->limits.control_idle_timeout_ms + 999) / 1000,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, c,
        MHD_OPTION_NOTIFY_CONNECTION, on_connection, c,
        MHD_OPTION_UNESCAPE_CALLBACK, unescape_none, NULL,
        MHD_OPTION_END);
    const union MHD_DaemonInfo *epoll =
        d != NULL ? MHD_get_daemon_info(d, MHD_DAEMON_INFO_EPOLL_FD) : NULL;
    if (epoll == NULL) {
        snprintf(err, errlen, "cannot start the control port on %s:%u: %s",
                 cfg->control_addr.host, (unsigned)cfg->control_addr.port,
                 c->start_err[0] != '\0' ? c->start_err : "libmicrohttpd failed to start");
        if (d != NULL)
            MHD_stop_daemon(d); /* closes fd */
        else
            close(fd);
        return -1;
    }
    struct lg_ctl_daemon *slot = &c->daemons[i];
    slot->mhd = d;
    slot->guest = (struct lg_loop_guest){.fd = epoll->epoll_fd, .hosted = daemon_hosted,
                                         .serve = serve_daemon, .arg = slot,
                                         .busy_poll_us = cfg->control_busy_poll_us};
    return 0;
}

struct lg_control *lg_control_start(const struct lg_config *cfg,
                                    const struct lg_live_limits *live, struct lg_hub *hub,
                                    struct lg_pacer *pacer, const struct lg_auth *auth,
                                    const _Atomic int *lifecycle,
                                    uint16_t *bound_port, char *err, size_t errlen)
{
    struct sockaddr_storage ss;
    if (lg_ctl_routes_check(err, errlen) != 0 || lg_control_check_bind(cfg, err, errlen) != 0 ||
        resolve(&cfg->control_addr, &ss, err, errlen) != 0)
        return NULL;
    struct lg_control *c = calloc(1, sizeof *c);
    if (c == NULL) {
        snprintf(err, errlen, "out of memory starting the control port");
        return NULL;
    }
    c->auth = auth;
    c->cfg = cfg;
    c->live = live;
    c->hub = hub;
    c->pacer = pacer;
    c->lifecycle = lifecycle;
    c->worker_count = lg_hub_workers(hub);
    c->started_unix_ms = lg_unix_ms();
    pthread_mutex_init(&c->err_lock, NULL);
    pthread_mutex_init(&c->admin_lock, NULL);
    c->deadlines = lg_ctl_deadlines_create((struct lg_ctl_deadline_limits){
        .head_ms = cfg->limits.request_timeout_ms,
        .publish_wait_ms = &live->publish_wait_ms,
        .idle_ms = cfg->limits.control_idle_timeout_ms});
    int listen_fd = c->deadlines != NULL ? listen_on(&cfg->control_addr, &ss, err, errlen) : -1;
    if (c->deadlines == NULL)
        snprintf(err, errlen, "out of memory starting the control port");
    if (listen_fd < 0) {
        lg_control_stop(c);
        return NULL;
    }
    c->capturing = true;
    int rc = 0;
    for (uint32_t i = 0; rc == 0 && i < c->worker_count; i++)
        rc = start_daemon(c, i, listen_fd, ss.ss_family == AF_INET6, err, errlen);
    pthread_mutex_lock(&c->err_lock);
    c->capturing = false;
    pthread_mutex_unlock(&c->err_lock);
    *bound_port = bound_port_of(listen_fd);
    close(listen_fd); /* each daemon has its duplicate */
    if (rc != 0) {
        lg_control_stop(c);
        return NULL;
    }
    return c;
}

const struct lg_loop_guest *lg_control_guest(const struct lg_control *c, uint32_t worker)
{
    return &c->daemons[worker].guest;
}

void lg_control_sweep(struct lg_control *c)
{
    lg_ctl_admin_sweep(c, lg_mono_ms());
    size_t swept = lg_ctl_deadlines_sweep(c->deadlines, lg_mono_ms());
    if (swept == 0)
        return;
    LG_STAT_ADD(control_connections_timed_out, swept);
    static struct lg_ratelimit rl;
    lg_log_ratelimited(&rl, 1000, LG_LOG_WARN,
                       "control: closed %zu connection(s) whose request did not arrive in time "
                       "(limits.request_timeout_ms %u, control_idle_timeout_ms %u)",
                       swept, c->cfg->limits.request_timeout_ms,
                       c->cfg->limits.control_idle_timeout_ms);
}

void lg_control_drain(struct lg_control *c)
{
    atomic_store_explicit(&c->draining, true, memory_order_release);
}

void lg_control_stop(struct lg_control *c)
{
    if (c == NULL)
        return;
    /* Held publishes are answered 503 (nothing was published) before the daemon stops. */
    if (c->pacer != NULL)
        lg_pacer_stop(c->pacer);
    lg_ctl_admin_release(c); /* admin requests too: MHD must not hold suspended connections */
    for (uint32_t i = 0; i < c->worker_count; i++)
        if (c->daemons[i].mhd != NULL)
            MHD_stop_daemon(c->daemons[i].mhd);
    lg_ctl_deadlines_destroy(c->deadlines);
    pthread_mutex_destroy(&c->err_lock);
    pthread_mutex_destroy(&c->admin_lock);
    free(c);
}
