/* acceptor.c - see acceptor.h. */
#include "acceptor.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "auth.h"
#include "clock.h"
#include "dlist.h"
#include "encode.h"
#include "http_response.h"
#include "log.h"
#include "sse_refusal.h"
#include "accounting.h"
#include "stats.h"
#include "subscribe_params.h"

#define ACCEPTS_PER_WAKE 64
#define ACCEPT_PAUSE_MS 100   /* out of descriptors and no spare: how long to stop accepting */
#define WEBSOCKET_HEAD_MAX 2048 /* lws re-parses the head of an upgrade from this copy */
#define LG_WS_SUBPROTOCOL "livegate.v1" /* transport_ws.c's lws protocol name */

/* A socket accepted but not yet classified: its request head is being read. */
struct lg_pending {
    int fd;
    uint64_t deadline_ms;               /* monotonic: 408 after this (lingering: close) */
    struct lg_dlink link;               /* pending or over_limit list: accept order =
                                           deadline order, or lingering list: refusal order =
                                           deadline order */
    bool lingering;                     /* answered and half-closed: discarding what comes */
    bool watched;                       /* in heads_fd's set */
    bool over_limit;                    /* accepted past limits.max_connections: its head is
                                           read only to word the 503 (sse_refusal.h) */
    uint32_t discarded;
    struct lg_client_address peer;      /* from accept4() */
    bool peer_known;                    /* false: not IP (a test over a socketpair) */
    struct lg_http_request req;
    uint32_t len;
    char buf[];                         /* limits.max_request_head_bytes */
};

struct lg_acceptor {
    const struct lg_config *cfg;        /* borrowed, immutable */
    const struct lg_acceptor_ops *ops;
    void *owner;
    int listen_fd;
    int heads_fd;                       /* epoll set of pending sockets */
    bool fds_taken;                     /* the owner closes listen_fd and heads_fd */
    int spare_fd;                       /* /dev/null, given up to refuse at EMFILE */
    const struct lg_client_address *trusted; /* borrowed, immutable: trusted proxies */
    const struct lg_auth *auth;         /* borrowed: allowed_origins in force (auth.h) */
    size_t trusted_count;
    struct lg_dlist pending;            /* struct lg_pending, oldest first */
    struct lg_dlist lingering;          /* refused struct lg_pending, oldest first */
    struct lg_dlist over_limit;         /* struct lg_pending past limits.max_connections, oldest
                                           first: their head is awaited LG_LINGER_MS at most */
};

/* ---- Listening socket ------------------------------------------------------------------- */

/*
 * A bound TCP socket on addr's host and port: with reuse_port a listener the workers share
 * (SO_REUSEPORT, non-blocking, listening), else a plain bound socket. Return value: the fd, or
 * -1 with err filled.
 */
static int bind_public(const struct lg_listen_addr *addr, uint16_t port, bool reuse_port,
                       char *err, size_t errlen)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *res;
    char port_text[8];
    snprintf(port_text, sizeof port_text, "%u", port);
    int rc = getaddrinfo(addr->host, port_text, &hints, &res);
    if (rc != 0) {
        snprintf(err, errlen, "public address %s: %s", addr->host, gai_strerror(rc));
        return -1;
    }
    int fd = socket(res->ai_family,
                    SOCK_STREAM | SOCK_CLOEXEC | (reuse_port ? SOCK_NONBLOCK : 0), 0);
    int one = 1;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        (reuse_port && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0) ||
        bind(fd, res->ai_addr, res->ai_addrlen) != 0 || (reuse_port && listen(fd, 4096) != 0)) {
        snprintf(err, errlen, "cannot listen on public address %s:%u: %s", addr->host, port,
                 strerror(errno));
        if (fd >= 0)
            close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    return fd;
}

/*
 * The workers' listeners share their port through SO_REUSEPORT, which would also let a second
 * gateway (same user) bind it and silently take half the connections with another epoch. A
 * socket bound without SO_REUSEPORT cannot share the port with anyone: binding one first (and
 * closing it) proves nobody else listens there.
 */
int lg_acceptor_check_port_free(const struct lg_listen_addr *addr, char *err, size_t errlen)
{
    if (addr->port == 0)
        return 0; /* the kernel picks a port nobody has */
    int fd = bind_public(addr, addr->port, false, err, errlen);
    if (fd < 0)
        return -1;
    close(fd);
    return 0;
}

/* The workers' listener. Linux copies a listener's TCP_NODELAY and SO_SNDBUF to every socket
 * it accepts: set once here, they cost an accepted connection no system call. */
static int open_listener(const struct lg_config *cfg, uint16_t port, char *err, size_t errlen)
{
    int fd = bind_public(&cfg->public_addr, port, true, err, errlen);
    if (fd < 0)
        return -1;
    int one = 1;
    int sndbuf = (int)cfg->socket_send_buffer_bytes;
    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0 ||
        (sndbuf && setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf) != 0)) {
        snprintf(err, errlen, "cannot set the public listener's socket options: %s",
                 strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

static uint16_t bound_port(int fd)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &len) != 0)
        return 0;
    if (ss.ss_family == AF_INET6)
        return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

/* ---- Unclassified sockets --------------------------------------------------------------- */

static struct lg_pending *oldest_pending(const struct lg_acceptor *a)
{
    return a->pending.first ? lg_dlist_entry(a->pending.first, struct lg_pending, link) : NULL;
}

static struct lg_pending *oldest_over_limit(const struct lg_acceptor *a)
{
    return a->over_limit.first ? lg_dlist_entry(a->over_limit.first, struct lg_pending, link)
                               : NULL;
}

static struct lg_pending *oldest_lingering(const struct lg_acceptor *a)
{
    return a->lingering.first ? lg_dlist_entry(a->lingering.first, struct lg_pending, link)
                              : NULL;
}

/* Stop watching p (its socket stays open). */
static void pending_detach(struct lg_acceptor *a, struct lg_pending *p)
{
    if (p->watched)
        epoll_ctl(a->heads_fd, EPOLL_CTL_DEL, p->fd, NULL);
    lg_dlist_remove(p->lingering ? &a->lingering : p->over_limit ? &a->over_limit : &a->pending,
                    &p->link);
}

/* Forget p; close its socket unless it was handed on. */
static void pending_finish(struct lg_acceptor *a, struct lg_pending *p, bool close_fd)
{
    pending_detach(a, p);
    if (close_fd) {
        close(p->fd);
        lg_account_connection_closed();
    }
    free(p);
}

/*
 * The answer is sent: half-close p and read and discard what the client still sends until it
 * closes, LG_LINGER_MS or LG_LINGER_BYTES, then close. Closing at once with unread bytes would
 * send a reset, and a reset can destroy the answer before the client reads it.
 */
static void pending_linger(struct lg_acceptor *a, struct lg_pending *p)
{
    lg_dlist_remove(p->over_limit ? &a->over_limit : &a->pending, &p->link);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = p};
    if (shutdown(p->fd, SHUT_WR) != 0 ||
        epoll_ctl(a->heads_fd, p->watched ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, p->fd, &ev) != 0) {
        pending_finish(a, p, true);
        return;
    }
    p->watched = true;
    p->lingering = true;
    p->discarded = 0;
    p->deadline_ms = lg_mono_ms() + LG_LINGER_MS;
    lg_dlist_push_tail(&a->lingering, &p->link);
}

/* Send an unclassified socket the refusal in b (released here), then close it after
 * lingering. The answer is small and the socket fresh, so one non-blocking send() takes it;
 * if not, the client was not reading anyway. */
static void pending_answer(struct lg_acceptor *a, struct lg_pending *p, struct lg_buf *b,
                           int status, const char *code, const char *message, bool as_event)
{
    bool sent = !b->oom && send(p->fd, b->data, b->len, MSG_NOSIGNAL | MSG_DONTWAIT) >= 0;
    if (!sent)
        lg_debug("error response not sent: %s", strerror(errno));
    lg_buf_release(b);
    LG_STAT_ADD(requests_rejected, 1);
    static struct lg_ratelimit rl;
    lg_log_ratelimited(&rl, 1000, status >= 500 ? LG_LOG_WARN : LG_LOG_INFO,
                       "public port answered %d %s%s: %s", status, code,
                       as_event ? " (as an SSE refused event)" : "", message);
    if (sent)
        pending_linger(a, p);
    else
        pending_finish(a, p, true);
}

/* Answer an unclassified socket with an error, then close it after lingering. */
static void pending_refuse(struct lg_acceptor *a, struct lg_pending *p, int status, const char *code,
                           const char *message, const char *extra_headers)
{
    struct lg_buf b;
    lg_buf_init(&b);
    lg_http_error_response(&b, status, code, message, extra_headers, false);
    pending_answer(a, p, &b, status, code, message, false);
}

/* A refusal a retry may cure: an SSE subscription's in the form an EventSource survives
 * (sse_refusal.h; with the CORS lines of its Origin once its head is complete; of an
 * incomplete head only the request line can tell), any other as pending_refuse(). */
static void pending_refuse_retryable(struct lg_acceptor *a, struct lg_pending *p, int status,
                                     const char *code, const char *message,
                                     const char *extra_headers)
{
    bool complete = p->req.complete;
    if (complete ? !lg_sse_refusal_applies(p->buf, &p->req)
                 : !lg_sse_refusal_head_applies(p->buf, p->len)) {
        pending_refuse(a, p, status, code, message, extra_headers);
        return;
    }
    char cors[LG_CORS_LINES_MAX] = "";
    const struct lg_slice *origin = &p->req.headers[LG_HDR_ORIGIN];
    if (complete)
        (void)lg_cors_lines_for(lg_auth_origin(a->auth, p->buf + origin->off, origin->len),
                                p->buf + origin->off, origin->len, cors);
    struct lg_buf b;
    lg_buf_init(&b);
    lg_sse_refusal(&b, a->cfg->sse.retry_ms, status, code, message, cors);
    pending_answer(a, p, &b, status, code, message, true);
}

/* p came past limits.max_connections (counted then): its head is in, or will not come. */
static void refuse_over_limit(struct lg_acceptor *a, struct lg_pending *p)
{
    pending_refuse_retryable(a, p, 503, "unavailable",
                             "the gateway is at limits.max_connections; retry later",
                             "Retry-After: 1\r\n");
}

static bool read_pending(struct lg_acceptor *a, struct lg_pending *p);

static void accept_one(struct lg_acceptor *a, int fd, const struct sockaddr *peer)
{
    const struct lg_config *cfg = a->cfg;
    struct lg_pending *p = malloc(sizeof *p + cfg->limits.max_request_head_bytes);
    if (!p) {
        close(fd);
        return;
    }
    int64_t open_now = lg_account_connection_opened();
    LG_STAT_ADD(connections_opened, 1);
    p->fd = fd;
    p->peer_known = lg_client_address_of(peer, &p->peer);
    if (!p->peer_known)
        memset(&p->peer, 0, sizeof p->peer); /* one key for every such socket */
    p->len = 0;
    p->deadline_ms = lg_mono_ms() + cfg->limits.request_timeout_ms;
    lg_http_request_init(&p->req);
    p->link = (struct lg_dlink){0};
    p->lingering = false;
    p->watched = false;
    p->discarded = 0;
    /* Refused, but only once its head says whether it is an SSE subscription, whose refusal
     * must be worded so a browser's EventSource retries (refuse_over_limit); held no longer
     * than a refusal lingers. */
    p->over_limit = open_now > (int64_t)cfg->limits.max_connections;
    if (p->over_limit) {
        LG_STAT_ADD(connections_refused, 1);
        p->deadline_ms = lg_mono_ms() + LG_LINGER_MS;
    }
    lg_dlist_push_tail(p->over_limit ? &a->over_limit : &a->pending, &p->link);
    /* A client sends its head right after connecting, so under a burst of connections it is
     * usually here by the time the socket is accepted: read it now, and watch the socket
     * only when it is not (the epoll set's add, wait and remove saved otherwise). */
    if (!read_pending(a, p))
        return;
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = p};
    if (epoll_ctl(a->heads_fd, EPOLL_CTL_ADD, fd, &ev) != 0)
        pending_finish(a, p, true);
    else
        p->watched = true;
}

/*
 * Out of descriptors (EMFILE/ENFILE): the connection stays in the listen backlog and the
 * listener stays readable, so retrying would spin. Instead give up the spare descriptor kept
 * for this, take the connection with it, answer 503 and close it, then take the spare back
 * (libuv's and nginx's way). Return value: true if a connection was refused.
 */
static bool refuse_without_descriptors(struct lg_acceptor *a, int accept_errno)
{
    if (a->spare_fd < 0)
        a->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (a->spare_fd < 0) {
        a->ops->pause(a->owner, ACCEPT_PAUSE_MS);
        static struct lg_ratelimit rl;
        lg_log_ratelimited(&rl, 1000, LG_LOG_WARN,
                           "accept failed: %s and no spare descriptor; not accepting for %u ms",
                           strerror(accept_errno), ACCEPT_PAUSE_MS);
        return false;
    }
    close(a->spare_fd);
    int fd = accept4(a->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
        static const char why[] = "the gateway is out of file descriptors; retry later";
        struct lg_buf b;
        lg_buf_init(&b);
        /* No descriptor to wait for its head with: what already arrived tells an SSE
         * subscription (sse_refusal.h), or the plain 503 goes out. */
        char head[1024];
        ssize_t n = recv(fd, head, sizeof head, MSG_DONTWAIT);
        if (n > 0 && lg_sse_refusal_head_applies(head, (size_t)n))
            lg_sse_refusal(&b, a->cfg->sse.retry_ms, 503, "unavailable", why, NULL);
        else
            lg_http_error_response(&b, 503, "unavailable", why, "Retry-After: 1\r\n", false);
        if (!b.oom)
            (void)send(fd, b.data, b.len, MSG_NOSIGNAL | MSG_DONTWAIT);
        lg_buf_release(&b);
        close(fd);
        LG_STAT_ADD(connections_refused, 1);
    }
    a->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    static struct lg_ratelimit rl;
    lg_log_ratelimited(&rl, 1000, LG_LOG_WARN,
                       "accept failed: %s; refusing connections with 503 until descriptors "
                       "free up (limits.max_connections is above what ulimit -n allows?)",
                       strerror(accept_errno));
    return fd >= 0;
}

void lg_acceptor_accept_ready(struct lg_acceptor *a)
{
    for (int i = 0; i < ACCEPTS_PER_WAKE; i++) {
        struct sockaddr_storage peer;
        socklen_t peer_len = sizeof peer;
        int fd = accept4(a->listen_fd, (struct sockaddr *)&peer, &peer_len,
                         SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            int e = errno;
            if ((e == EMFILE || e == ENFILE) && refuse_without_descriptors(a, e))
                continue;
            if (e != EAGAIN && e != EWOULDBLOCK && e != EINTR && e != EMFILE && e != ENFILE) {
                static struct lg_ratelimit rl;
                lg_log_ratelimited(&rl, 1000, LG_LOG_WARN, "accept failed: %s", strerror(e));
            }
            return;
        }
        accept_one(a, fd, (const struct sockaddr *)&peer);
    }
}

static bool is_path(const char *buf, const struct lg_slice *path, const char *want)
{
    return path->len == strlen(want) && memcmp(buf + path->off, want, path->len) == 0;
}

/* Hand p's socket to the owner; a WebSocket the owner cannot take is answered 503. */
static void hand_on(struct lg_acceptor *a, struct lg_pending *p, bool websocket)
{
    struct lg_accepted acc = {.fd = p->fd, .head = p->buf, .len = p->len, .req = &p->req,
                              .peer = p->peer_known ? &p->peer : NULL};
    const struct lg_slice *xff = &p->req.headers[LG_HDR_X_FORWARDED_FOR];
    const struct lg_slice *fwd = &p->req.headers[LG_HDR_FORWARDED];
    acc.counted = lg_client_address_resolve(&p->peer, a->trusted, a->trusted_count,
                                            p->buf + xff->off, xff->len, p->buf + fwd->off,
                                            fwd->len, &acc.client);
    pending_detach(a, p); /* before the owner's loop may see the socket */
    if (!websocket) {
        a->ops->http(a->owner, &acc);
    } else {
        const char *refusal = a->ops->websocket(a->owner, &acc);
        if (refusal != NULL) {
            pending_refuse(a, p, 503, "unavailable", refusal, NULL);
            return;
        }
    }
    free(p);
}

static bool header_is(const char *buf, const struct lg_slice *h, const char *want)
{
    return h->len == strlen(want) && strncasecmp(buf + h->off, want, h->len) == 0;
}

/* Whether the comma-separated token list h holds token (RFC 6455 4.1: Sec-WebSocket-Protocol). */
static bool list_has(const char *buf, const struct lg_slice *h, const char *token)
{
    size_t n = strlen(token);
    for (uint32_t i = 0; i < h->len;) {
        while (i < h->len && (buf[h->off + i] == ' ' || buf[h->off + i] == '\t' ||
                              buf[h->off + i] == ','))
            i++;
        uint32_t start = i;
        while (i < h->len && buf[h->off + i] != ',' && buf[h->off + i] != ' ' &&
               buf[h->off + i] != '\t')
            i++;
        if (i - start == n && memcmp(buf + h->off + start, token, n) == 0)
            return true;
    }
    return false;
}

/*
 * The handshake checks RFC 6455 4.2.1 asks of a server, made before lws sees the request, so
 * each refusal says what was wrong (lws closes silently or accepts what it should not).
 * Return value: true when p was refused.
 */
static bool refuse_bad_handshake(struct lg_acceptor *a, struct lg_pending *p)
{
    const struct lg_http_request *req = &p->req;
    const struct lg_slice *key = &req->headers[LG_HDR_SEC_WEBSOCKET_KEY];
    const struct lg_slice *version = &req->headers[LG_HDR_SEC_WEBSOCKET_VERSION];
    const struct lg_slice *protocol = &req->headers[LG_HDR_SEC_WEBSOCKET_PROTOCOL];
    const struct lg_slice *origin = &req->headers[LG_HDR_ORIGIN];
    char problem[160];
    if (lg_auth_origin(a->auth, p->buf + origin->off, origin->len) == LG_ORIGIN_REFUSED) {
        /* A browser's cross-site upgrade (cross-site WebSocket hijacking): no frame is sent. */
        LG_STAT_ADD(auth_refused_origin, 1);
        pending_refuse(a, p, 403, "origin_not_allowed", "this Origin is not in allowed_origins",
                       NULL);
    } else if (!header_is(p->buf, &req->headers[LG_HDR_UPGRADE], "websocket"))
        pending_refuse(a, p, 400, "bad_request",
                       "/ws upgrades to websocket only (Upgrade: websocket)", NULL);
    else if (key->len != 24 || p->buf[key->off + 22] != '=' || p->buf[key->off + 23] != '=')
        pending_refuse(a, p, 400, "bad_request",
                       "the WebSocket handshake needs a Sec-WebSocket-Key of 16 bytes in "
                       "base64 (24 characters)", NULL);
    else if (!header_is(p->buf, version, "13"))
        pending_refuse(a, p, 426, "upgrade_required",
                       "this server speaks WebSocket version 13 (RFC 6455)",
                       "Sec-WebSocket-Version: 13\r\n");
    else if (protocol->len > 0 && !list_has(p->buf, protocol, LG_WS_SUBPROTOCOL))
        pending_refuse(a, p, 400, "unsupported_subprotocol",
                       "the subprotocol of /ws is " LG_WS_SUBPROTOCOL
                       " (or offer none); none of those offered is supported", NULL);
    else if (lg_subscribe_params_check_query(p->buf + req->query.off, req->query.len, problem,
                                             sizeof problem))
        pending_refuse(a, p, 400, "bad_request", problem, NULL); /* lws would close silently */
    else
        return false;
    return true;
}

static void classify_complete(struct lg_acceptor *a, struct lg_pending *p)
{
    const struct lg_http_request *req = &p->req;
    if (req->http_major != 1) {
        pending_refuse(a, p, 505, "http_version_not_supported", LG_HTTP_VERSION_MESSAGE, NULL);
        return;
    }
    if (req->method == LG_HTTP_CONNECT) {
        pending_refuse(a, p, 405, "method_not_allowed", LG_CONNECT_MESSAGE, LG_CONNECT_ALLOW);
        return;
    }
    /* Upgrades other than to a WebSocket (h2c, ...) are ignored: served as HTTP/1.1. */
    if (req->upgrade && !is_path(p->buf, &req->path, "/ws") &&
        lg_http_request_is_websocket(p->buf, req)) {
        pending_refuse(a, p, 404, "not_found", "WebSocket endpoint is /ws", NULL);
        return;
    }
    if (req->upgrade && is_path(p->buf, &req->path, "/ws")) {
        if (req->method != LG_HTTP_GET)
            pending_refuse(a, p, 405, "method_not_allowed", "use GET for /ws", "Allow: GET\r\n");
        else if (p->len > WEBSOCKET_HEAD_MAX)
            pending_refuse(a, p, 431, "headers_too_large",
                           "a WebSocket upgrade request must fit in 2048 bytes", NULL);
        else if (!refuse_bad_handshake(a, p))
            hand_on(a, p, true);
        return;
    }
    hand_on(a, p, false);
}

/* A refused socket lingering: discard what arrives; close at its end or past the byte bound. */
static void read_lingering(struct lg_acceptor *a, struct lg_pending *p)
{
    ssize_t n = recv(p->fd, p->buf, a->cfg->limits.max_request_head_bytes, 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n > 0)
        p->discarded += (uint32_t)n;
    if (n <= 0 || p->discarded >= LG_LINGER_BYTES)
        pending_finish(a, p, true);
}

/* Read what came of p's head and act on it. Return value: true when p is still waiting for
 * the rest of its head (p is then untouched otherwise); false when p was handed on, refused
 * or closed (it may be freed). */
static bool read_pending(struct lg_acceptor *a, struct lg_pending *p)
{
    if (p->lingering) {
        read_lingering(a, p);
        return false;
    }
    uint32_t cap = a->cfg->limits.max_request_head_bytes;
    ssize_t n = recv(p->fd, p->buf + p->len, cap - p->len, 0);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
        pending_finish(a, p, true);
        return false;
    }
    if (n < 0)
        return true;
    p->len += (uint32_t)n;
    const char *problem = NULL;
    int rc = lg_http_request_feed(&p->req, p->buf, p->len, &problem);
    if (p->over_limit && (rc != 0 || p->len == cap)) {
        refuse_over_limit(a, p);
        return false;
    }
    if (rc == 1) {
        classify_complete(a, p);
    } else if (rc < 0) {
        char msg[160];
        snprintf(msg, sizeof msg, "malformed HTTP request: %s", problem);
        pending_refuse(a, p, 400, "bad_request", msg, NULL);
    } else if (p->len == cap && !memchr(p->buf, '\n', p->len)) {
        pending_refuse(a, p, 414, "uri_too_long", LG_URI_TOO_LONG_MESSAGE, NULL);
    } else if (p->len == cap) {
        pending_refuse(a, p, 431, "headers_too_large", LG_HEAD_TOO_LARGE_MESSAGE, NULL);
    } else {
        return true;
    }
    return false;
}

void lg_acceptor_heads_ready(struct lg_acceptor *a)
{
    struct epoll_event evs[64];
    int n = epoll_wait(a->heads_fd, evs, 64, 0);
    for (int i = 0; i < n; i++)
        read_pending(a, evs[i].data.ptr);
}

void lg_acceptor_expire(struct lg_acceptor *a, uint64_t now_ms)
{
    struct lg_pending *p;
    while ((p = oldest_pending(a)) && p->deadline_ms <= now_ms)
        pending_refuse(a, p, 408, "request_timeout",
                       "the request head did not arrive within limits.request_timeout_ms", NULL);
    while ((p = oldest_over_limit(a)) && p->deadline_ms <= now_ms)
        refuse_over_limit(a, p);
    while ((p = oldest_lingering(a)) && p->deadline_ms <= now_ms)
        pending_finish(a, p, true);
}


/* ---- Life cycle ------------------------------------------------------------------------- */

struct lg_acceptor *lg_acceptor_create(const struct lg_config *cfg, uint16_t *port,
                                       const struct lg_acceptor_ops *ops, void *owner,
                                       const struct lg_client_address *trusted,
                                       size_t trusted_count, const struct lg_auth *auth,
                                       char *err, size_t errlen)
{
    struct lg_acceptor *a = calloc(1, sizeof *a);
    if (!a) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    *a = (struct lg_acceptor){.cfg = cfg, .ops = ops, .owner = owner, .trusted = trusted,
                              .trusted_count = trusted_count, .auth = auth, .listen_fd = -1,
                              .heads_fd = -1};
    a->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    a->listen_fd = open_listener(cfg, *port, err, errlen);
    if (a->listen_fd < 0) {
        lg_acceptor_destroy(a);
        return NULL;
    }
    *port = bound_port(a->listen_fd);
    a->heads_fd = epoll_create1(EPOLL_CLOEXEC);
    if (a->heads_fd < 0) {
        snprintf(err, errlen, "cannot create an epoll set: %s", strerror(errno));
        lg_acceptor_destroy(a);
        return NULL;
    }
    return a;
}

void lg_acceptor_destroy(struct lg_acceptor *a)
{
    if (!a)
        return;
    struct lg_pending *p;
    while ((p = oldest_pending(a)))
        pending_finish(a, p, true);
    while ((p = oldest_over_limit(a)))
        pending_finish(a, p, true);
    while ((p = oldest_lingering(a)))
        pending_finish(a, p, true);
    if (!a->fds_taken && a->listen_fd >= 0)
        close(a->listen_fd);
    if (!a->fds_taken && a->heads_fd >= 0)
        close(a->heads_fd);
    if (a->spare_fd >= 0)
        close(a->spare_fd);
    free(a);
}

int lg_acceptor_listen_fd(const struct lg_acceptor *a) { return a->listen_fd; }
int lg_acceptor_heads_fd(const struct lg_acceptor *a) { return a->heads_fd; }
void lg_acceptor_fds_taken(struct lg_acceptor *a) { a->fds_taken = true; }
size_t lg_acceptor_pending(const struct lg_acceptor *a)
{
    return a->pending.count + a->over_limit.count + a->lingering.count;
}

void lg_acceptor_refuse_all(struct lg_acceptor *a, const char *message)
{
    struct lg_pending *p;
    while ((p = oldest_pending(a)))
        pending_refuse_retryable(a, p, 503, "unavailable", message, "Retry-After: 1\r\n");
    while ((p = oldest_over_limit(a)))
        pending_refuse_retryable(a, p, 503, "unavailable", message, "Retry-After: 1\r\n");
}
