/*
 * floor_server.c - lg_floor, the cheapest server the per-user benchmark can run against.
 *
 * Why it exists: the per-user scenarios (users_sse_15k, users_ws_15k) cost each server a few
 * tens of microseconds per publish, most of it in the kernel (two loopback sends, the wake-up
 * of the load generator, the server's own sleep and wake), and a paced fan-out (an event a
 * tenth of a second to 5,000 subscribers) costs a loopback send per subscriber. lg_floor does
 * only what such a publish must do, with no HTTP library, no queue, no history and no
 * allocation: one epoll loop, one recv per request, one send of the event per subscriber, the
 * answer's send. Its CPU and latency are the floor under any one-core server on this machine,
 * so a target such as "CPU <= 0.8x Nchan" can be checked against what is physically left
 * (docs/performance.md, "The floor"). It is a measuring tool, never a server to deploy: it
 * speaks just enough of Nchan's URL scheme for lg_loadgen --target nchan.
 *
 *   lg_floor SUB_PORT PUB_PORT [--batch W]   both listeners on 127.0.0.1; SIGTERM or SIGINT
 *                                            stops it
 *
 *   GET /sub/<topic> (WebSocket upgrade)  101, then each event as one unmasked text frame
 *   GET /sub/<topic> (anything else)      200 text/event-stream, then "data: <body>\n\n"
 *   POST /pub/<topic> with a body         the body to each of the topic's subscribers, in the
 *                                         order they subscribed, then 201 "{}"
 *
 * --batch W: the cheapest server that batches a fan-out, the floor under a fan-out at max rate
 * (a synchronous send per subscriber per event, as above, is Nchan's way and delivers what one
 * send per delivery allows). A publish appends the framed event to its topic's log (one per
 * framing), answers 201 at once and queues the topic's subscribers that are not queued yet;
 * between two looks at the sockets the loop writes the next W queued subscribers, each one
 * send of every byte of the log it has not had. A round of writes over N subscribers so
 * carries about N / W events per write: W sets the trade of deliveries for latency.
 *
 * Owns: every connection (a fixed table indexed by descriptor) and the topic table (each
 * topic's subscribers, a list threaded through their connections).
 * Threads: one. Bounds: a request head of HEAD_MAX bytes (431 and close past it), a body of
 * BODY_MAX bytes (413 and close), FD_MAX descriptors, TOPIC_SLOTS topics (a subscribe past that
 * is answered 503 and closed). Writes are not queued: a send that would block drops the event
 * (counted, printed at exit), which the per-user and paced loads, one small event per socket at
 * a time, never reach. With --batch a topic's log keeps what its slowest subscriber has not
 * had (trimmed once it passes LOG_TRIM bytes); a subscriber whose socket is full stays queued;
 * the write queue holds at most FD_MAX entries, and a subscriber that finds it full is not
 * queued (counted as a dropped write).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "lg_util.h"

#define FD_MAX 65536
#define HEAD_MAX 4096
#define BODY_MAX 125 /* one WebSocket frame with a 7-bit length */
#define TOPIC_SLOTS (1u << 16)
#define TOPIC_MAX 64
#define LOG_TRIM (1u << 20)

enum role { ROLE_SUBSCRIBER, ROLE_PUBLISHER };
enum stream { STREAM_NONE, STREAM_WS, STREAM_SSE };

struct conn {
    enum role role;
    enum stream stream; /* a subscriber's, once its head was answered */
    int32_t topic;      /* a subscriber's slot in topics[], or -1 */
    int next, prev;     /* its neighbours among the topic's subscribers, or -1 */
    uint64_t cursor;    /* --batch: the offset in its topic's log of the first byte not sent */
    bool queued;        /* --batch: in the write queue */
    size_t len;
    char buf[HEAD_MAX + BODY_MAX + 1];
};

/* --batch: a topic's events as one framing sends them, back to back */
struct topic_log {
    char *bytes;
    size_t len, cap;
    uint64_t base; /* the offset of bytes[0] since the topic began */
};

struct topic {
    char name[TOPIC_MAX];
    int first, last; /* its subscribers' list, or -1 */
    struct topic_log logs[2]; /* --batch: [0] WebSocket frames, [1] SSE events */
};

/* --batch: the subscribers with bytes to write, a ring of descriptors */
static struct {
    int fds[FD_MAX];
    uint32_t head, count;
} queue;
static uint32_t batch_writes; /* --batch W; 0: a synchronous send per subscriber */

static struct conn *conns[FD_MAX];
static struct topic topics[TOPIC_SLOTS];
static uint32_t topics_used;
static uint64_t events_dropped;
static volatile sig_atomic_t stopping;

static void on_signal(int sig)
{
    (void)sig;
    stopping = 1;
}

static uint32_t fnv1a(const char *s, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 16777619u;
    return h;
}

/* the slot of topic name[0..n), made when create is set and there is room; -1 otherwise */
static int32_t topic_find(const char *name, size_t n, bool create)
{
    if (n == 0 || n >= TOPIC_MAX) return -1;
    for (uint32_t i = fnv1a(name, n) & (TOPIC_SLOTS - 1);; i = (i + 1) & (TOPIC_SLOTS - 1)) {
        struct topic *t = &topics[i];
        if (!t->name[0]) {
            /* keep one slot empty so that every probe ends */
            if (!create || topics_used + 1 >= TOPIC_SLOTS) return -1;
            memcpy(t->name, name, n);
            t->name[n] = '\0';
            t->first = t->last = -1;
            topics_used++;
            return (int32_t)i;
        }
        if (!strncmp(t->name, name, n) && t->name[n] == '\0') return (int32_t)i;
    }
}

static void send_all_or_count(int fd, const char *p, size_t n)
{
    if (send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)n) events_dropped++;
}

static struct topic_log *log_of(struct conn *c)
{
    return &topics[c->topic].logs[c->stream == STREAM_SSE];
}

static void topic_link(int32_t slot, int fd)
{
    struct topic *t = &topics[slot];
    struct conn *c = conns[fd];
    c->topic = slot;
    c->cursor = log_of(c)->base + log_of(c)->len; /* what comes from now on */
    c->next = -1;
    c->prev = t->last;
    if (t->last >= 0) conns[t->last]->next = fd;
    else t->first = fd;
    t->last = fd;
}

static void topic_unlink(int fd)
{
    struct conn *c = conns[fd];
    struct topic *t = &topics[c->topic];
    if (c->prev >= 0) conns[c->prev]->next = c->next;
    else t->first = c->next;
    if (c->next >= 0) conns[c->next]->prev = c->prev;
    else t->last = c->prev;
    c->topic = -1;
}

static void conn_close(int ep, int fd)
{
    struct conn *c = conns[fd];
    if (c->topic >= 0) topic_unlink(fd);
    epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
    free(c);
    conns[fd] = NULL;
    close(fd);
}

static void refuse(int ep, int fd, const char *status)
{
    char answer[128];
    int n = snprintf(answer, sizeof answer, "HTTP/1.1 %s\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                     status);
    send_all_or_count(fd, answer, (size_t)n);
    conn_close(ep, fd);
}

/* the value of header name (with its leading CRLF and colon) in a NUL-terminated head */
static bool header_value(const char *head, const char *name, const char **value, size_t *len)
{
    const char *p = strcasestr(head, name);
    if (!p) return false;
    p += strlen(name);
    while (*p == ' ' || *p == '\t') p++;
    const char *end = strstr(p, "\r\n");
    if (!end) return false;
    *value = p;
    *len = (size_t)(end - p);
    return true;
}

/* "<prefix><topic> " at the head's start: the topic's bytes, or NULL */
static const char *path_topic(const char *head, const char *prefix, size_t *len)
{
    size_t pl = strlen(prefix);
    if (strncmp(head, prefix, pl)) return NULL;
    const char *end = strchr(head + pl, ' ');
    if (!end) return NULL;
    *len = (size_t)(end - head - pl);
    return head + pl;
}

static bool answer_websocket(int fd, const char *key, size_t key_len)
{
    static const char guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
    char in[128], accept_value[32], answer[256];
    uint8_t digest[20];
    if (key_len + sizeof guid > sizeof in) return false;
    memcpy(in, key, key_len);
    memcpy(in + key_len, guid, sizeof guid - 1);
    lgb_sha1(in, key_len + sizeof guid - 1, digest);
    lgb_base64(digest, sizeof digest, accept_value);
    int n = snprintf(answer, sizeof answer,
                     "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                     "Sec-WebSocket-Accept: %s\r\n\r\n",
                     accept_value);
    return send(fd, answer, (size_t)n, MSG_NOSIGNAL) == n;
}

static void subscribe(int ep, int fd, struct conn *c)
{
    size_t name_len, key_len;
    const char *key, *name = path_topic(c->buf, "GET /sub/", &name_len);
    if (!name) { refuse(ep, fd, "404 Not Found"); return; }
    int32_t slot = topic_find(name, name_len, true);
    if (slot < 0) { refuse(ep, fd, "503 Service Unavailable"); return; }
    bool ok;
    if (header_value(c->buf, "\r\nSec-WebSocket-Key:", &key, &key_len)) {
        c->stream = STREAM_WS;
        ok = answer_websocket(fd, key, key_len);
    } else {
        static const char head[] = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                                   "Cache-Control: no-cache\r\n\r\n";
        c->stream = STREAM_SSE;
        ok = send(fd, head, sizeof head - 1, MSG_NOSIGNAL) == (ssize_t)(sizeof head - 1);
    }
    if (!ok) { conn_close(ep, fd); return; }
    topic_link(slot, fd);
}

/* the event as stream frames it: its length in frame */
static size_t frame_event(enum stream stream, const char *body, size_t len, char *frame)
{
    if (stream == STREAM_WS) {
        frame[0] = (char)0x81; /* FIN, text */
        frame[1] = (char)len;
        memcpy(frame + 2, body, len);
        return 2 + len;
    }
    memcpy(frame, "data: ", 6);
    memcpy(frame + 6, body, len);
    memcpy(frame + 6 + len, "\n\n", 2);
    return 8 + len;
}

static void deliver(int fd, const char *body, size_t len)
{
    char frame[sizeof "data: \n\n" + BODY_MAX];
    send_all_or_count(fd, frame, frame_event(conns[fd]->stream, body, len, frame));
}

static void enqueue(int fd)
{
    if (queue.count == FD_MAX) { events_dropped++; return; } /* stale entries of closed ones */
    conns[fd]->queued = true;
    queue.fds[(queue.head + queue.count++) % FD_MAX] = fd;
}

/* drop the bytes every subscriber of slot on this log has had */
static void log_trim(int32_t slot, struct topic_log *log)
{
    uint64_t keep_from = log->base + log->len;
    for (int sub = topics[slot].first; sub >= 0; sub = conns[sub]->next)
        if (log_of(conns[sub]) == log && conns[sub]->cursor < keep_from) keep_from = conns[sub]->cursor;
    size_t drop = (size_t)(keep_from - log->base);
    memmove(log->bytes, log->bytes + drop, log->len - drop);
    log->len -= drop;
    log->base = keep_from;
}

static void log_append(int32_t slot, struct topic_log *log, enum stream stream, const char *body,
                       size_t len)
{
    if (log->len > LOG_TRIM) log_trim(slot, log);
    if (log->cap - log->len < sizeof "data: \n\n" + BODY_MAX) {
        size_t cap = log->cap ? 2 * log->cap : 65536;
        char *bytes = realloc(log->bytes, cap);
        if (!bytes) { fprintf(stderr, "lg_floor: out of memory\n"); exit(1); }
        log->bytes = bytes;
        log->cap = cap;
    }
    log->len += frame_event(stream, body, len, log->bytes + log->len);
}

/* --batch: the event goes to the topic's logs and its subscribers to the write queue */
static void deliver_batched(int32_t slot, const char *body, size_t len)
{
    log_append(slot, &topics[slot].logs[0], STREAM_WS, body, len);
    log_append(slot, &topics[slot].logs[1], STREAM_SSE, body, len);
    for (int sub = topics[slot].first; sub >= 0; sub = conns[sub]->next)
        if (!conns[sub]->queued) enqueue(sub);
}

/* --batch: one send to each of the next `max` queued subscribers of what its log holds for it */
static void write_queued(int ep, uint32_t max)
{
    for (uint32_t done = 0; done < max && queue.count > 0;) {
        int fd = queue.fds[queue.head];
        queue.head = (queue.head + 1) % FD_MAX;
        queue.count--;
        struct conn *c = conns[fd];
        if (!c || !c->queued) continue; /* closed, or its descriptor's new connection */
        c->queued = false;
        done++;
        struct topic_log *log = log_of(c);
        size_t at = (size_t)(c->cursor - log->base), left = log->len - at;
        ssize_t sent = left ? send(fd, log->bytes + at, left, MSG_NOSIGNAL | MSG_DONTWAIT) : 0;
        if (sent < 0 && errno != EAGAIN && errno != EINTR) { conn_close(ep, fd); continue; }
        if (sent > 0) c->cursor += (uint64_t)sent;
        if (sent < (ssize_t)left) enqueue(fd);
    }
}

/* one complete request at the buffer's start: its length; 0 when incomplete; -1 when refused */
static ssize_t publish(int ep, int fd, struct conn *c)
{
    char *blank = memmem(c->buf, c->len, "\r\n\r\n", 4);
    if (!blank) {
        if (c->len >= HEAD_MAX) { refuse(ep, fd, "431 Request Header Fields Too Large"); return -1; }
        return 0;
    }
    char kept = blank[2];
    blank[2] = '\0'; /* the head with its last line's CRLF, for header_value() */
    const char *value, *name;
    size_t value_len, name_len, body_len = 0;
    if (header_value(c->buf, "\r\nContent-Length:", &value, &value_len)) body_len = strtoul(value, NULL, 10);
    name = path_topic(c->buf, "POST /pub/", &name_len);
    blank[2] = kept;
    if (body_len > BODY_MAX) { refuse(ep, fd, "413 Content Too Large"); return -1; }
    if (!name) { refuse(ep, fd, "404 Not Found"); return -1; }
    size_t total = (size_t)(blank + 4 - c->buf) + body_len;
    if (total > c->len) return 0;
    int32_t slot = topic_find(name, name_len, false);
    if (batch_writes && slot >= 0)
        deliver_batched(slot, blank + 4, body_len);
    for (int sub = slot >= 0 && !batch_writes ? topics[slot].first : -1; sub >= 0; sub = conns[sub]->next)
        deliver(sub, blank + 4, body_len);
    static const char answer[] = "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\n"
                                 "Content-Length: 2\r\n\r\n{}";
    send_all_or_count(fd, answer, sizeof answer - 1);
    return (ssize_t)total;
}

static void on_readable(int ep, int fd)
{
    struct conn *c = conns[fd];
    if (c->stream != STREAM_NONE) { /* pongs, closes: read and forgotten */
        char sink[512];
        ssize_t n = recv(fd, sink, sizeof sink, 0);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) conn_close(ep, fd);
        return;
    }
    ssize_t n = recv(fd, c->buf + c->len, sizeof c->buf - 1 - c->len, 0);
    if (n <= 0) {
        if (n == 0 || (errno != EAGAIN && errno != EINTR)) conn_close(ep, fd);
        return;
    }
    c->len += (size_t)n;
    c->buf[c->len] = '\0';
    if (c->role == ROLE_SUBSCRIBER) {
        if (strstr(c->buf, "\r\n\r\n")) subscribe(ep, fd, c);
        else if (c->len >= HEAD_MAX) refuse(ep, fd, "431 Request Header Fields Too Large");
        return;
    }
    for (;;) {
        ssize_t used = publish(ep, fd, c);
        if (used <= 0) return;
        memmove(c->buf, c->buf + used, c->len - (size_t)used);
        c->len -= (size_t)used;
        c->buf[c->len] = '\0';
    }
}

static void on_acceptable(int ep, int listener, enum role role)
{
    for (int i = 0; i < 64; i++) {
        int one = 1, fd = accept4(listener, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) return;
        struct conn *c = fd < FD_MAX ? calloc(1, sizeof *c) : NULL;
        if (!c) { close(fd); continue; }
        c->role = role;
        c->topic = -1;
        conns[fd] = c;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
        if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev)) conn_close(ep, fd);
    }
}

static int listen_loopback(int ep, const char *port)
{
    int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(port))};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) || listen(fd, 4096)) {
        fprintf(stderr, "lg_floor: cannot listen on 127.0.0.1:%s: %s\n", port, strerror(errno));
        exit(1);
    }
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
    return fd;
}

int main(int argc, char **argv)
{
    if (argc == 5 && !strcmp(argv[3], "--batch")) batch_writes = (uint32_t)strtoul(argv[4], NULL, 10);
    if ((argc != 3 && argc != 5) || (argc == 5 && batch_writes == 0)) {
        fprintf(stderr, "usage: lg_floor SUB_PORT PUB_PORT [--batch WRITES]\n");
        return 2;
    }
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    int ep = epoll_create1(EPOLL_CLOEXEC);
    int sub_listener = listen_loopback(ep, argv[1]);
    int pub_listener = listen_loopback(ep, argv[2]);
    struct epoll_event ready[256];
    while (!stopping) {
        int n = epoll_wait(ep, ready, 256, queue.count ? 0 : 1000);
        for (int i = 0; i < n; i++) {
            int fd = ready[i].data.fd;
            if (fd == sub_listener) on_acceptable(ep, fd, ROLE_SUBSCRIBER);
            else if (fd == pub_listener) on_acceptable(ep, fd, ROLE_PUBLISHER);
            else if (conns[fd]) on_readable(ep, fd);
        }
        write_queued(ep, batch_writes);
    }
    for (int fd = 0; fd < FD_MAX; fd++)
        if (conns[fd]) conn_close(ep, fd);
    fprintf(stderr, "lg_floor: stopped; %" PRIu64 " writes dropped\n", events_dropped);
    return 0;
}
