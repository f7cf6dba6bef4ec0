/*
 * loadgen.c - lg_loadgen, the livegate benchmark client.
 *
 * One single-threaded epoll loop drives N subscribers (SSE, WebSocket or long-poll) over T
 * topics and a publisher (P keep-alive HTTP/1.1 connections, closed loop with a pipeline depth
 * or paced at a fixed rate). It speaks to livegate (docs/protocol.md) or to nginx + Nchan with
 * the config that bench/nchan/gen-conf.sh writes. Every published event carries
 * "<seq> <send_time_ns>" (seq 1..M per topic, CLOCK_MONOTONIC), so each subscriber counts
 * deliveries, losses, duplicates and reorderings per topic and the latency of each delivery.
 * Prints one JSON object on stdout (see bench/README.md for the fields).
 * --transport mixed spreads the subscribers over all three transports (per-transport figures
 * in "per_transport"); --stalled N adds N subscribers that never read (isolation runs);
 * --idle N adds N SSE subscribers on topics of their own that nobody publishes to (a server
 * holding many idle connections while a few are active). Several --sub-port ports spread the
 * subscribers over nodes by topic (a cluster's nodes; bench/scaleout.sh).
 * --reconnect-storm K (SSE): after the first --events are delivered, every subscriber closes at
 * once, K more events per topic are published while they are away, then all of them reconnect
 * at once with the last SSE id they saw in Last-Event-ID; the run reports the time from the
 * start of that reconnect to each client's first event and checks that each one gets exactly
 * what it missed (the storm_* fields).
 * --ws-deflate makes WebSocket subscribers offer permessage-deflate with
 * server_no_context_takeover (--ws-deflate-offer browser: exactly what browsers offer) and
 * inflate what arrives compressed (ws_inflate.h: through a cache shared by the connections
 * whose server promised no context takeover, else with each connection's own inflater; every
 * message is still parsed for its event; ws_deflate_* and ws_inflate_* fields);
 * --payload-bytes N pads every event with compressible JSON text to N bytes (bytes_rx /
 * deliveries is then the wire cost of an event).
 *
 * Why no client library: the generator must stay far cheaper than the server at 20k
 * connections on one core. libwebsockets' client side uses poll() (O(n) per wakeup, see
 * /work/shared/notes/platform-facts.md) and adds per-connection state we do not need; the
 * subset of HTTP/1.1 and RFC 6455 a subscriber needs (one request, a response head, a chunked
 * or length-delimited or EOF-delimited body, unmasked server frames, masked pong/close) is
 * small and is implemented here, reading up to 64 KiB per recv.
 *
 * Bounds: every phase has a deadline (connect, settle, idle, publish, drain, storm) and
 * --max-runtime caps the whole run; event counts are capped per topic (--events). Only
 * 127.0.0.0/8 addresses are accepted as targets or sources.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <zlib.h>

#include "lg_util.h"
#include "ws_inflate.h"

#ifndef IP_BIND_ADDRESS_NO_PORT
#define IP_BIND_ADDRESS_NO_PORT 24
#endif

#define RECV_CHUNK (64 * 1024)
#define MAX_HEAD 16384
#define MAX_CARRY (32u * 1024 * 1024)
#define MAX_TOPIC_NAME 96
#define MAX_SSE_ID 128 /* livegate: "<topic>@<epoch>:<seq>"; Nchan: "<time>:<tag>" */

enum target { T_LIVEGATE, T_NCHAN };
enum transport { X_SSE, X_WS, X_POLL, X_MIXED }; /* X_MIXED: the run only, never a conn */
static const char *const xport_name[] = {"sse", "ws", "poll", "mixed"};
/* R_STALL: a --stalled subscriber (never reads events); R_IDLE: an --idle subscriber (own topic,
 * never published to; reads and discards whatever the server sends) */
enum role { R_SUB, R_PUB, R_STALL, R_IDLE };
enum cstate { CS_NONE, CS_CONNECTING, CS_HEAD, CS_BODY, CS_WS, CS_CLOSED };
enum bmode { BM_NONE, BM_LEN, BM_CHUNK, BM_EOF };
enum ckstate { CK_SIZE, CK_EXT, CK_DATA, CK_DATA_END, CK_TR_BOL, CK_TR_LINE };
enum sse_type { SSE_MSG, SSE_GAP, SSE_ERR, SSE_RESET, SSE_OTHER };
enum phase { PH_INIT, PH_CONNECT, PH_SETTLE, PH_PUBLISH, PH_DRAIN, PH_STORM, PH_DONE };
/* A subscriber's part in --reconnect-storm: closed with the others (AWAY), reconnecting
 * (handshake in flight), BACK (200 received, no event yet), then RESUMED at its first event, or
 * FAILED (not re-established, or closed before its first event). */
enum storm_state { SM_NONE, SM_AWAY, SM_RECONNECTING, SM_BACK, SM_RESUMED, SM_FAILED };

struct pubreq {
    uint64_t ev0;   /* first event index (per publisher connection) in this request */
    uint32_t nev;   /* events in this request */
    uint64_t t_send;
};

struct conn {
    int fd;
    uint8_t role, state, body_mode, ck_state;
    uint8_t ready, conn_close, sse_type, sse_has;
    uint8_t ws_frag_op, upgraded, closing, dead;
    uint8_t xport;  /* subscriber's transport (X_SSE, X_WS or X_POLL) */
    uint8_t storm;  /* enum storm_state */
    uint32_t idx;   /* subscriber index, or publisher connection index */
    uint32_t topic; /* subscriber's topic */
    uint64_t body_left;
    uint64_t t_mark; /* connect start; WS upgrade time */
    uint64_t t_connect; /* connect start of a subscriber (connect_lat) */
    uint64_t t_sent;    /* its request sent (answer_lat) */
    char *rb;        /* carry: partial head, partial SSE line, partial WS frame, poll body */
    uint32_t rlen, rcap;
    char *ob;        /* pending output */
    uint32_t olen, ooff, ocap;
    char *cursor;    /* long-poll cursor (livegate), or "Last-Modified\nEtag" (nchan) */
    /* SSE ids (--reconnect-storm only), as EventSource keeps them: the id buffer set by each
     * "id:" line, copied to last_id when a block is dispatched; last_id goes in Last-Event-ID */
    char *id_buf, *last_id;
    /* subscriber accounting */
    uint8_t *seen;
    uint32_t max_seen, unique, dups, reord;
    uint32_t sse_seq;
    uint64_t sse_ns;
    char *frag;
    uint32_t fraglen;
    uint8_t pmd;              /* --ws-deflate: the server agreed on permessage-deflate */
    uint8_t pmd_no_takeover;  /* ... and answered server_no_context_takeover: each message
                                 inflates on its own, so through the shared cache */
    uint8_t frag_rsv1;        /* the message being reassembled is compressed */
    z_stream *inflater;       /* without pmd_no_takeover: made at the first compressed message,
                                 kept, as the server may take over context between messages */
    /* head values kept for the body */
    int status;
    /* publisher */
    uint64_t ev_next, ev_cap;
    uint32_t ntopics;         /* topics this publisher connection owns */
    struct pubreq *q;         /* FIFO of in-flight requests, depth --pipeline */
    uint32_t qhead, qlen;
    uint32_t reconnects;
};

static struct {
    /* options */
    enum target target;
    enum transport transport;
    char host[64];
    int sub_ports[8]; /* --sub-port P[,P..]: a subscriber on topic t connects to sub_ports[t % n] */
    uint32_t nsub_ports;
    int pub_port;
    uint32_t nsubs, ntopics;
    uint32_t nstalled; /* --stalled: extra subscribers that never read their events */
    uint32_t nidle;    /* --idle: extra SSE subscribers, each on its own unpublished topic */
    double rate; /* events/s in total; 0 = as fast as possible */
    uint64_t events_per_topic;
    bool events_given;
    double duration_s;
    uint32_t pub_conns, pipeline, batch;
    bool pipeline_given;
    int server_pids[16];
    int nserver_pids;
    uint32_t src_addrs, src_base;
    uint32_t connect_conc;
    double connect_timeout_s, settle_ms, idle_ms, drain_ms, max_runtime_s;
    int poll_timeout_s;
    double ws_sub_grace_ms;
    char label[128];
    bool quiet;
    char topic_prefix[48];
    char sub_query[1536]; /* --sub-query: "&<it>" appended to livegate subscribe requests */
    char ready_file[256]; /* --ready-file: created once the connect phase is over */
    uint64_t storm_events; /* --reconnect-storm K: events per topic published while away */
    bool ws_deflate;       /* --ws-deflate: WebSocket subscribers offer permessage-deflate */
    bool ws_offer_browser; /* --ws-deflate-offer browser: without server_no_context_takeover */
    uint32_t payload_bytes;/* --payload-bytes: events padded with compressible JSON to this */
    uint32_t nonce;

    /* runtime */
    int ep, tfd;
    int pub_ep; /* the publisher connections and the pacing timer, registered in ep; -1 in a
                   run without subscribers (they then share ep: nothing to wait behind) */
    struct conn *subs;
    struct conn *pubs;
    struct conn *stalled;
    struct conn *idlec;
    uint32_t next_sub, next_stall, next_idle, connecting;
    bool any_ws;
    enum phase phase;
    uint64_t t_start, t_deadline_all;
    char *buf; /* RECV_CHUNK + slack */

    /* per topic */
    uint32_t *ready_on_topic;
    uint64_t *acked;

    /* counters */
    uint64_t conns_made, conns_failed, fail_connect, fail_http, fail_closed, fail_timeout,
        fail_socket, sub_disconnects, ws_subscribed, server_closes, poll_requests, poll_reconnects,
        poll_errors;
    uint64_t unique_total, unique_dead, dups_total, reord_total, invalid_total, gaps, resets,
        sse_errors, ws_errors, pings;
    uint64_t published, pub_failed, pub_requests, pub_conn_failed, pub_reconnects, pub_late,
        pub_status_other;
    uint64_t events_issued;
    uint64_t t_first_pub, t_last_pub_ack, t_last_delivery, t_pub_end;
    uint64_t bytes_rx;
    uint64_t ws_deflate_negotiated, ws_deflate_no_takeover, ws_compressed_messages;
    struct lgb_inflate inflate; /* the inflation of every compressed message (ws_inflate.h) */
    struct lg_hist lat, publat;
    struct lg_hist lat_x[3]; /* latency per transport (X_SSE, X_WS, X_POLL) */
    struct lg_hist lat_tenth[10]; /* latency by tenth of the run (event seq), start to end */
    uint64_t stalled_made, stalled_failed, stalled_closed;
    uint64_t idle_made, idle_failed, idle_closed, idle_bytes_rx;
    bool aborted;
    const char *abort_reason;

    /* --reconnect-storm */
    uint32_t storm_clients, storm_next, storm_settled;
    uint64_t storm_reconnected, t_storm0;
    double storm_server_cpu_s; /* server CPU from the storm's start until every client settled */
    double storm_loadgen_cpu_pct; /* this process's CPU over the same window, % of one core */
    struct lg_hist storm_first; /* storm start -> each client's first event after it, us */
    struct lg_hist connect_lat; /* a subscriber's connect() -> ready (subscribed), us */
    struct lg_hist answer_lat;  /* its request sent -> ready, us */
} G;

static volatile sig_atomic_t g_stop;
static void on_signal(int s) { (void)s; g_stop = 1; }

/* ------------------------------------------------------------------ small helpers */

__attribute__((format(printf, 1, 2), noreturn)) static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "lg_loadgen: ");
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(2);
}

static void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n);
    if (!q && n) { fprintf(stderr, "lg_loadgen: out of memory\n"); exit(3); }
    return q;
}

static void carry_append(struct conn *c, const char *p, size_t n)
{
    if ((uint64_t)c->rlen + n > c->rcap) {
        size_t cap = c->rcap ? c->rcap : 256;
        while (cap < c->rlen + n) cap *= 2;
        c->rb = xrealloc(c->rb, cap);
        c->rcap = (uint32_t)cap;
    }
    memcpy(c->rb + c->rlen, p, n);
    c->rlen += (uint32_t)n;
}

static void carry_shift(struct conn *c, size_t used)
{
    if (used >= c->rlen) { c->rlen = 0; }
    else { memmove(c->rb, c->rb + used, c->rlen - used); c->rlen -= (uint32_t)used; }
    if (c->rlen == 0 && c->rcap > 65536) { free(c->rb); c->rb = NULL; c->rcap = 0; }
}

static void topic_name(uint32_t t, char *out, size_t n)
{
    snprintf(out, n, "%s%" PRIu32, G.topic_prefix, t);
}

/* The port a subscriber connects to: topics (an idle subscriber's own topic too) are spread
 * over the --sub-port list, so topic t always lands on the same node. */
static int sub_port_of(const struct conn *c)
{
    return G.sub_ports[c->topic % G.nsub_ports];
}

static bool is_loopback(const char *ip)
{
    struct in_addr a;
    if (inet_pton(AF_INET, ip, &a) != 1) return false;
    return (ntohl(a.s_addr) >> 24) == 127;
}

static const char *memmem_s(const char *h, size_t hl, const char *needle)
{
    return memmem(h, hl, needle, strlen(needle));
}

static int ci_prefix(const char *line, size_t ll, const char *name)
{
    size_t nl = strlen(name);
    return ll >= nl && strncasecmp(line, name, nl) == 0;
}

/* "<seq> <ns>" -> true */
static bool parse_payload(const char *p, const char *end, uint32_t *seq, uint64_t *ns)
{
    uint64_t s = 0, t = 0;
    const char *q = p;
    while (q < end && *q >= '0' && *q <= '9') s = s * 10 + (uint64_t)(*q++ - '0');
    if (q == p || q >= end || *q != ' ') return false;
    const char *r = ++q;
    while (q < end && *q >= '0' && *q <= '9') t = t * 10 + (uint64_t)(*q++ - '0');
    if (q == r || s > UINT32_MAX) return false;
    *seq = (uint32_t)s;
    *ns = t;
    return true;
}

/* ------------------------------------------------------------------ epoll plumbing */

/* The publisher's sockets and the pacing timer live in an epoll set of their own (see
 * pub_service), so that a thousand readable subscriber sockets never stand in line before
 * its answers; without subscribers they share the main set. */
static int pub_set(void) { return G.pub_ep >= 0 ? G.pub_ep : G.ep; }
static int ep_of(const struct conn *c) { return c->role == R_PUB ? pub_set() : G.ep; }

/* The pacing timer fired: the ticks themselves are not counted (pub_drive works from time). */
static void take_timer_tick(void)
{
    uint64_t x;
    if (read(G.tfd, &x, sizeof x) < 0) { /* spurious */ }
}

static void ep_set(struct conn *c, uint32_t events, int op)
{
    struct epoll_event ev = {.events = events, .data.ptr = c};
    if (epoll_ctl(ep_of(c), op, c->fd, &ev) < 0 && op != EPOLL_CTL_DEL)
        perror("lg_loadgen: epoll_ctl");
}

static void sub_lost_accounting(struct conn *c)
{
    if (c->role == R_SUB && c->ready && !c->dead) {
        c->dead = 1;
        G.ready_on_topic[c->topic]--;
        G.unique_dead += c->unique;
    }
}

static void close_fd(struct conn *c, bool rst)
{
    if (c->fd < 0) return;
    if (rst) {
        struct linger lg = {1, 0}; /* RST: leaves no TIME_WAIT behind between runs */
        setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    }
    close(c->fd);
    c->fd = -1;
    c->state = CS_CLOSED;
    lgb_inflate_conn_end(&c->inflater);
    c->pmd = c->pmd_no_takeover = 0;
    c->olen = c->ooff = 0;
    c->rlen = 0;
}

/* Queue bytes on a connection; tries to send immediately. Returns false if the conn died. */
static bool conn_send(struct conn *c, const char *p, size_t n)
{
    if (c->fd < 0) return false;
    if (c->olen == c->ooff) {
        c->olen = c->ooff = 0;
        while (n) {
            ssize_t w = send(c->fd, p, n, MSG_NOSIGNAL);
            if (w > 0) { p += w; n -= (size_t)w; continue; }
            if (w < 0 && errno == EINTR) continue;
            if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
            return false;
        }
        if (!n) return true;
    }
    if ((uint64_t)c->olen + n > c->ocap) {
        size_t cap = c->ocap ? c->ocap : 1024;
        while (cap < c->olen + n) cap *= 2;
        c->ob = xrealloc(c->ob, cap);
        c->ocap = (uint32_t)cap;
    }
    memcpy(c->ob + c->olen, p, n);
    c->olen += (uint32_t)n;
    ep_set(c, EPOLLIN | EPOLLOUT, EPOLL_CTL_MOD);
    return true;
}

static bool conn_flush(struct conn *c)
{
    while (c->ooff < c->olen) {
        ssize_t w = send(c->fd, c->ob + c->ooff, c->olen - c->ooff, MSG_NOSIGNAL);
        if (w > 0) { c->ooff += (uint32_t)w; continue; }
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
        return false;
    }
    c->olen = c->ooff = 0;
    ep_set(c, EPOLLIN, EPOLL_CTL_MOD);
    return true;
}

static int open_socket(uint32_t src_octet_idx, bool bind_src)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (bind_src) {
        setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = 0};
        uint32_t octet = G.src_base + src_octet_idx % G.src_addrs;
        sa.sin_addr.s_addr = htonl((127u << 24) | (octet & 0xffffff));
        if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0) { close(fd); return -1; }
    }
    return fd;
}

static bool start_connect(struct conn *c, int port, bool bind_src)
{
    int fd = open_socket(c->idx, bind_src);
    if (fd < 0) return false;
    if (c->role == R_STALL) {
        /* a small receive window (set before connect, so the window scale follows) fills after
         * a few KiB: the server then sees a socket that is not writable */
        int rcv = 4096;
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof rcv);
    }
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, G.host, &sa.sin_addr);
    int r = connect(fd, (struct sockaddr *)&sa, sizeof sa);
    if (r < 0 && errno != EINPROGRESS) { close(fd); return false; }
    c->fd = fd;
    c->state = CS_CONNECTING;
    c->olen = c->ooff = 0;
    c->rlen = 0;
    ep_set(c, EPOLLIN | EPOLLOUT, EPOLL_CTL_ADD);
    return true;
}

/* ------------------------------------------------------------------ HTTP response heads */

struct head {
    int status;
    int64_t content_length;
    bool chunked, conn_close;
    const char *ws_accept; size_t ws_accept_len;
    bool pmd; /* Sec-WebSocket-Extensions: permessage-deflate... */
    bool pmd_no_takeover; /* ... with server_no_context_takeover */
    const char *last_mod; size_t last_mod_len;
    const char *etag; size_t etag_len;
};

/* Whether the first extension of a Sec-WebSocket-Extensions value (up to its ',') has the
 * parameter name among those after its ';'s. */
static bool ext_has_param(const char *v, size_t vl, const char *name)
{
    const char *comma = memchr(v, ',', vl);
    const char *end = comma ? comma : v + vl;
    size_t nl = strlen(name);
    for (const char *s = memchr(v, ';', (size_t)(end - v)); s;) {
        const char *a = s + 1;
        s = memchr(a, ';', (size_t)(end - a));
        const char *e = s ? s : end;
        while (a < e && (*a == ' ' || *a == '\t')) a++;
        while (e > a && (e[-1] == ' ' || e[-1] == '\t')) e--;
        if ((size_t)(e - a) == nl && !strncasecmp(a, name, nl)) return true;
    }
    return false;
}

static bool parse_head(const char *h, size_t n, struct head *out)
{
    memset(out, 0, sizeof *out);
    out->content_length = -1;
    const char *end = h + n;
    const char *eol = memchr(h, '\n', n);
    if (!eol || n < 12 || strncmp(h, "HTTP/1.", 7)) return false;
    out->status = atoi(h + 9);
    if (!strncmp(h, "HTTP/1.0", 8)) out->conn_close = true;
    const char *p = eol + 1;
    while (p < end) {
        const char *e = memchr(p, '\n', (size_t)(end - p));
        if (!e) e = end;
        size_t ll = (size_t)(e - p);
        if (ll && p[ll - 1] == '\r') ll--;
        if (!ll) break;
        const char *colon = memchr(p, ':', ll);
        if (colon) {
            const char *v = colon + 1;
            const char *ve = p + ll;
            while (v < ve && (*v == ' ' || *v == '\t')) v++;
            while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t')) ve--;
            size_t vl = (size_t)(ve - v);
            if (ci_prefix(p, ll, "content-length:")) out->content_length = strtoll(v, NULL, 10);
            else if (ci_prefix(p, ll, "transfer-encoding:")) out->chunked = memmem_s(v, vl, "chunked") != NULL;
            else if (ci_prefix(p, ll, "connection:")) {
                if (vl >= 5 && strncasecmp(v, "close", 5) == 0) out->conn_close = true;
            } else if (ci_prefix(p, ll, "sec-websocket-accept:")) { out->ws_accept = v; out->ws_accept_len = vl; }
            else if (ci_prefix(p, ll, "sec-websocket-extensions:")) {
                out->pmd = vl >= 18 && !strncasecmp(v, "permessage-deflate", 18);
                out->pmd_no_takeover = out->pmd && ext_has_param(v, vl, "server_no_context_takeover");
            } else if (ci_prefix(p, ll, "last-modified:")) { out->last_mod = v; out->last_mod_len = vl; }
            else if (ci_prefix(p, ll, "etag:")) { out->etag = v; out->etag_len = vl; }
        }
        p = e + 1;
    }
    return true;
}

static void set_body_mode(struct conn *c, const struct head *h, bool stream_default)
{
    c->conn_close = h->conn_close;
    if (h->status == 204 || h->status == 304 || h->status == 101 || (h->status >= 100 && h->status < 200)) {
        c->body_mode = BM_LEN; c->body_left = 0;
    } else if (h->chunked) {
        c->body_mode = BM_CHUNK; c->ck_state = CK_SIZE; c->body_left = 0;
    } else if (h->content_length >= 0) {
        c->body_mode = BM_LEN; c->body_left = (uint64_t)h->content_length;
    } else {
        c->body_mode = BM_EOF; (void)stream_default;
    }
}

/*
 * Decode body bytes in place (out <= in). *used = raw bytes taken (the rest belongs to the next
 * response), *done = the body ended. Returns the number of decoded bytes now at p.
 */
static size_t body_decode(struct conn *c, char *p, size_t n, size_t *used, bool *done)
{
    *done = false;
    if (c->body_mode == BM_EOF) { *used = n; return n; }
    if (c->body_mode == BM_LEN) {
        size_t take = n < c->body_left ? n : (size_t)c->body_left;
        c->body_left -= take;
        *used = take;
        *done = c->body_left == 0;
        return take;
    }
    size_t i = 0, o = 0;
    while (i < n && !*done) {
        char ch;
        switch (c->ck_state) {
        case CK_SIZE:
            ch = p[i++];
            if (ch >= '0' && ch <= '9') c->body_left = c->body_left * 16 + (uint64_t)(ch - '0');
            else if (ch >= 'a' && ch <= 'f') c->body_left = c->body_left * 16 + (uint64_t)(ch - 'a' + 10);
            else if (ch >= 'A' && ch <= 'F') c->body_left = c->body_left * 16 + (uint64_t)(ch - 'A' + 10);
            else if (ch == ';') c->ck_state = CK_EXT;
            else if (ch == '\n') c->ck_state = c->body_left ? CK_DATA : CK_TR_BOL;
            break;
        case CK_EXT:
            if (p[i++] == '\n') c->ck_state = c->body_left ? CK_DATA : CK_TR_BOL;
            break;
        case CK_DATA: {
            size_t take = n - i < c->body_left ? n - i : (size_t)c->body_left;
            if (o != i) memmove(p + o, p + i, take);
            o += take; i += take;
            c->body_left -= take;
            if (!c->body_left) c->ck_state = CK_DATA_END;
            break;
        }
        case CK_DATA_END:
            if (p[i++] == '\n') { c->ck_state = CK_SIZE; c->body_left = 0; }
            break;
        case CK_TR_BOL:
            ch = p[i++];
            if (ch == '\n') *done = true;
            else if (ch != '\r') c->ck_state = CK_TR_LINE;
            break;
        case CK_TR_LINE:
            if (p[i++] == '\n') c->ck_state = CK_TR_BOL;
            break;
        }
    }
    *used = i;
    return o;
}

/* ------------------------------------------------------------------ deliveries */

static void storm_settle(struct conn *c, enum storm_state how)
{
    c->storm = (uint8_t)how;
    G.storm_settled++;
}

/* the storm's figure: any valid event counts as the first one (a duplicate shows as such) */
static void storm_first_event(struct conn *c, uint64_t now)
{
    lgb_hist_add(&G.storm_first, (now - G.t_storm0) / 1000);
    storm_settle(c, SM_RESUMED);
}

static void deliver(struct conn *c, uint32_t seq, uint64_t ns, uint64_t now)
{
    if (seq == 0 || seq > G.events_per_topic) { G.invalid_total++; return; }
    if (c->storm == SM_BACK) storm_first_event(c, now);
    if (!c->seen) c->seen = calloc((size_t)(G.events_per_topic / 8 + 1), 1);
    if (!c->seen) { fprintf(stderr, "lg_loadgen: out of memory\n"); exit(3); }
    uint32_t bit = seq - 1;
    if (c->seen[bit >> 3] & (1u << (bit & 7))) { c->dups++; G.dups_total++; return; }
    c->seen[bit >> 3] |= (uint8_t)(1u << (bit & 7));
    c->unique++;
    G.unique_total++;
    if (seq < c->max_seen) { c->reord++; G.reord_total++; }
    else c->max_seen = seq;
    G.t_last_delivery = now;
    if (c->storm != SM_NONE) return; /* a replayed event's age is not a delivery latency */
    uint64_t us = now > ns ? (now - ns) / 1000 : 0;
    lgb_hist_add(&G.lat, us);
    lgb_hist_add(&G.lat_tenth[(uint64_t)(seq - 1) * 10 / G.events_per_topic], us);
    if (G.transport == X_MIXED) lgb_hist_add(&G.lat_x[c->xport], us);
}

static void sub_mark_ready(struct conn *c);

/* "key" (quotes included) in p..end. memchr for the key's first letter: far cheaper per call
 * than memmem on the ~100-byte stretches an event object has between two keys. */
static const char *find_key(const char *p, const char *end, const char *key, size_t kl)
{
    for (const char *q = p + 1; q + kl - 1 <= end;) {
        q = memchr(q, key[1], (size_t)(end - q) - (kl - 2));
        if (!q) return NULL;
        if (q[-1] == '"' && !memcmp(q, key + 1, kl - 1)) return q - 1;
        q++;
    }
    return NULL;
}

/* value of "key" in a flat JSON text: pointer to its first byte (the quote of a string) */
static const char *json_value(const char *p, const char *end, const char *key)
{
    const char *k = end - p >= 2 ? find_key(p, end, key, strlen(key)) : NULL;
    if (!k) return NULL;
    k += strlen(key);
    while (k < end && (*k == ' ' || *k == ':' || *k == '\t')) k++;
    return k < end ? k : NULL;
}

/* The same for the last "key" in the text: a long-poll answer's "cursor" follows its events, so
 * it is looked for from the end rather than past every event. */
static const char *json_value_last(const char *p, const char *end, const char *key)
{
    size_t kl = strlen(key);
    for (const char *k = end - kl; k >= p; k--) {
        if (*k != '"' || memcmp(k, key, kl) != 0) continue;
        return json_value(k, end, key);
    }
    return NULL;
}

static void livegate_json_events(struct conn *c, const char *p, const char *end, uint64_t now)
{
    /* one or more objects, each with "type"; an event object carries "data" after "type", and
     * the next object's "type" is looked for after that value: each byte is scanned once */
    while (p < end) {
        const char *t = json_value(p, end, "\"type\"");
        if (!t || *t != '"') return;
        p = ++t;
        if ((size_t)(end - t) >= 6 && !strncmp(t, "event\"", 6)) {
            const char *d = json_value(t, end, "\"data\"");
            uint32_t seq; uint64_t ns;
            if (d && *d == '"' && parse_payload(d + 1, end, &seq, &ns)) deliver(c, seq, ns, now);
            else G.invalid_total++;
            if (d) p = d + 1;
        } else if (!strncmp(t, "gap\"", 4)) G.gaps++;
        else if (!strncmp(t, "reset\"", 6)) G.resets++;
        else if (!strncmp(t, "subscribed\"", 11)) {
            G.ws_subscribed++;
            if (c->xport == X_WS && !c->dead) sub_mark_ready(c);
        } else if (!strncmp(t, "error\"", 6)) G.ws_errors++;
    }
}

/* ------------------------------------------------------------------ subscriber requests */

static void ws_key(uint32_t idx, char out[32])
{
    uint8_t raw[16];
    for (int i = 0; i < 16; i++) raw[i] = (uint8_t)((idx * 2654435761u + G.nonce) >> ((i % 4) * 8)) ^ (uint8_t)(i * 37);
    lgb_base64(raw, 16, out);
}

static bool sub_send_request(struct conn *c)
{
    char tn[MAX_TOPIC_NAME + sizeof G.sub_query], req[4096];
    int port = sub_port_of(c);
    if (c->role == R_IDLE) /* "<prefix>idle-<i>": never one of the published topics */
        snprintf(tn, sizeof tn, "%sidle-%" PRIu32, G.topic_prefix, c->topic);
    else
        topic_name(c->topic, tn, sizeof tn);
    int n = 0;
    bool lg = G.target == T_LIVEGATE;
    if (lg && G.sub_query[0]) /* the topic is the last thing before the query's end */
        snprintf(tn + strlen(tn), sizeof tn - strlen(tn), "%s", G.sub_query);
    if (c->xport == X_SSE) {
        bool resume = c->storm == SM_RECONNECTING && c->last_id && c->last_id[0];
        n = snprintf(req, sizeof req,
                     "GET %s%s HTTP/1.1\r\nHost: %s:%d\r\nAccept: text/event-stream\r\n"
                     "Cache-Control: no-cache\r\n%s%s%s\r\n",
                     lg ? "/sse?topic=" : "/sub/", tn, G.host, port,
                     resume ? "Last-Event-ID: " : "", resume ? c->last_id : "",
                     resume ? "\r\n" : "");
    } else if (c->xport == X_WS) {
        char key[32];
        ws_key(c->idx, key);
        n = snprintf(req, sizeof req,
                     "GET %s%s HTTP/1.1\r\nHost: %s:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                     "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n%s%s\r\n",
                     lg ? "/ws?topic=" : "/sub/", tn, G.host, port, key,
                     lg ? "Sec-WebSocket-Protocol: livegate.v1\r\n" : "",
                     !G.ws_deflate ? ""
                     : G.ws_offer_browser ? "Sec-WebSocket-Extensions: permessage-deflate; "
                                            "client_max_window_bits\r\n"
                                          : "Sec-WebSocket-Extensions: permessage-deflate; "
                                            "server_no_context_takeover; client_max_window_bits\r\n");
    } else if (lg) {
        n = snprintf(req, sizeof req, "GET /poll?topic=%s&timeout=%d%s%s HTTP/1.1\r\nHost: %s:%d\r\n\r\n",
                     tn, G.poll_timeout_s, c->cursor ? "&since=" : "", c->cursor ? c->cursor : "",
                     G.host, port);
        G.poll_requests++;
    } else {
        const char *lm = NULL, *et = NULL;
        size_t lml = 0;
        if (c->cursor) {
            lm = c->cursor;
            et = strchr(c->cursor, '\n');
            lml = et ? (size_t)(et - lm) : strlen(lm);
            if (et) et++;
        }
        if (lm)
            n = snprintf(req, sizeof req,
                         "GET /sub/%s HTTP/1.1\r\nHost: %s:%d\r\nIf-Modified-Since: %.*s\r\n"
                         "If-None-Match: %s\r\n\r\n",
                         tn, G.host, port, (int)lml, lm, et ? et : "");
        else
            n = snprintf(req, sizeof req, "GET /sub/%s HTTP/1.1\r\nHost: %s:%d\r\n\r\n", tn, G.host,
                         port);
        G.poll_requests++;
    }
    if (n <= 0 || (size_t)n >= sizeof req) return false;
    c->state = CS_HEAD;
    c->rlen = 0;
    if (!c->ready) c->t_sent = lgb_now_ns();
    return conn_send(c, req, (size_t)n);
}

static void sub_fail(struct conn *c, uint64_t *reason)
{
    if (c->storm == SM_RECONNECTING) {
        /* not re-established: what it missed counts as lost */
        (*reason)++;
        if (G.connecting) G.connecting--;
        storm_settle(c, SM_FAILED);
        sub_lost_accounting(c);
    } else if (!c->ready) {
        (*reason)++;
        G.conns_failed++;
        if (G.connecting) G.connecting--;
        c->ready = 0;
        c->dead = 1;
    } else {
        if (c->storm == SM_BACK) storm_settle(c, SM_FAILED); /* closed before its first event */
        G.sub_disconnects++;
        sub_lost_accounting(c);
    }
    if (c->fd >= 0) epoll_ctl(G.ep, EPOLL_CTL_DEL, c->fd, NULL);
    close_fd(c, true);
}

static void sub_mark_ready(struct conn *c)
{
    if (c->storm == SM_RECONNECTING) { /* back: it stays counted as the subscriber it was */
        c->storm = SM_BACK;
        G.storm_reconnected++;
        if (G.connecting) G.connecting--;
        return;
    }
    if (c->ready) return;
    c->ready = 1;
    uint64_t t_ready = lgb_now_ns();
    lgb_hist_add(&G.connect_lat, (t_ready - c->t_connect) / 1000);
    lgb_hist_add(&G.answer_lat, (t_ready - c->t_sent) / 1000);
    G.ready_on_topic[c->topic]++;
    G.conns_made++;
    G.connecting--;
}

/* ------------------------------------------------------------------ SSE */

/* an "id:" line's value goes to the id buffer (an id longer than ours is not one we sent) */
static void sse_id_line(struct conn *c, const char *v, size_t vl)
{
    if (vl >= MAX_SSE_ID) { G.invalid_total++; return; }
    if (!c->id_buf) {
        c->id_buf = calloc(1, MAX_SSE_ID);
        c->last_id = calloc(1, MAX_SSE_ID);
        if (!c->id_buf || !c->last_id) { fprintf(stderr, "lg_loadgen: out of memory\n"); exit(3); }
    }
    memcpy(c->id_buf, v, vl);
    c->id_buf[vl] = '\0';
}

static size_t sse_parse(struct conn *c, char *b, size_t n, uint64_t now)
{
    size_t off = 0;
    while (off < n) {
        char *line = b + off;
        char *nl = memchr(line, '\n', n - off);
        if (!nl) break;
        size_t ll = (size_t)(nl - line);
        off += ll + 1;
        if (ll && line[ll - 1] == '\r') ll--;
        if (ll == 0) {
            /* a dispatched block sets the stream's last id, with or without data (HTML spec) */
            if (c->id_buf) memcpy(c->last_id, c->id_buf, MAX_SSE_ID);
            if (c->sse_type == SSE_MSG && c->sse_has == 1) deliver(c, c->sse_seq, c->sse_ns, now);
            else if (c->sse_type == SSE_MSG && c->sse_has == 2) G.invalid_total++;
            else if (c->sse_type == SSE_GAP) G.gaps++;
            else if (c->sse_type == SSE_ERR) G.sse_errors++;
            else if (c->sse_type == SSE_RESET) G.resets++;
            c->sse_type = SSE_MSG;
            c->sse_has = 0;
            continue;
        }
        if (line[0] == ':') continue;
        if (ll >= 5 && !memcmp(line, "data:", 5)) {
            const char *v = line + 5, *e = line + ll;
            if (v < e && *v == ' ') v++;
            if (c->sse_has) continue; /* multi-line data: not ours */
            c->sse_has = parse_payload(v, e, &c->sse_seq, &c->sse_ns) ? 1 : 2;
        } else if (ll >= 6 && !memcmp(line, "event:", 6)) {
            const char *v = line + 6, *e = line + ll;
            if (v < e && *v == ' ') v++;
            size_t vl = (size_t)(e - v);
            if (vl == 7 && !memcmp(v, "message", 7)) c->sse_type = SSE_MSG;
            else if (vl == 3 && !memcmp(v, "gap", 3)) c->sse_type = SSE_GAP;
            else if (vl == 5 && !memcmp(v, "error", 5)) c->sse_type = SSE_ERR;
            else if (vl == 5 && !memcmp(v, "reset", 5)) c->sse_type = SSE_RESET;
            else c->sse_type = SSE_OTHER;
        } else if (G.storm_events && ll >= 3 && !memcmp(line, "id:", 3)) {
            const char *v = line + 3, *e = line + ll;
            if (v < e && *v == ' ') v++;
            sse_id_line(c, v, (size_t)(e - v));
        }
    }
    return off;
}

/* ------------------------------------------------------------------ WebSocket */

static void ws_send_frame(struct conn *c, int op, const uint8_t *payload, size_t len)
{
    uint8_t f[8 + 125];
    if (len > 125) len = 125;
    f[0] = (uint8_t)(0x80 | op);
    f[1] = (uint8_t)(0x80 | len);
    uint32_t m = (uint32_t)lgb_now_ns() ^ 0x5bd1e995u;
    memcpy(f + 2, &m, 4);
    for (size_t i = 0; i < len; i++) f[6 + i] = payload[i] ^ f[2 + (i & 3)];
    conn_send(c, (const char *)f, 6 + len);
}

static void ws_message(struct conn *c, const char *p, size_t n, uint64_t now)
{
    if (G.target == T_LIVEGATE) {
        /* fast path: an event envelope, whose "data" follows a head of short fields (topic,
         * id, seq, event, time: JSON strings escape their quotes, so the first ,"data":" is
         * the key); anything else takes the general scan */
        static const char pre[] = "{\"type\":\"event\"", key[] = ",\"data\":\"";
        if (n > sizeof pre + 8 && !memcmp(p, pre, sizeof pre - 1)) {
            const char *lo = p + sizeof pre - 1;
            size_t head = n - (sizeof pre - 1) < 512 ? n - (sizeof pre - 1) : 512;
            const char *q = find_key(lo, lo + head, key + 1, sizeof key - 2);
            uint32_t seq; uint64_t ns;
            if (q && q[-1] == ',' && parse_payload(q + sizeof key - 2, p + n, &seq, &ns)) {
                deliver(c, seq, ns, now);
                return;
            }
        }
        livegate_json_events(c, p, p + n, now);
        return;
    }
    uint32_t seq; uint64_t ns;
    if (parse_payload(p, p + n, &seq, &ns)) deliver(c, seq, ns, now);
    else G.invalid_total++;
}

/* A complete data message, inflated first when compressed (RFC 7692 7.2.2): through the
 * shared cache when the server promised no context takeover, else with the connection's own
 * inflater. Every message's text is then parsed for its event. Returns false when a compressed
 * message does not inflate. */
static bool ws_data_message(struct conn *c, const char *p, size_t n, bool compressed, uint64_t now)
{
    if (!compressed) {
        ws_message(c, p, n, now);
        return true;
    }
    const char *text;
    size_t tlen;
    int rc = c->pmd_no_takeover ? lgb_inflate_no_takeover(&G.inflate, p, n, &text, &tlen)
                                : lgb_inflate_with_context(&G.inflate, &c->inflater, p, n, &text, &tlen);
    if (rc != 0) return false;
    G.ws_compressed_messages++;
    ws_message(c, text, tlen, now);
    return true;
}

/* returns bytes consumed; sets *closed when the connection must end */
static size_t ws_parse(struct conn *c, uint8_t *b, size_t n, uint64_t now, bool *closed)
{
    size_t off = 0;
    while (n - off >= 2) {
        uint8_t b0 = b[off], b1 = b[off + 1];
        int op = b0 & 0x0f;
        bool fin = b0 & 0x80, masked = b1 & 0x80, rsv1 = b0 & 0x40;
        if ((b0 & 0x70) && !(c->pmd && (b0 & 0x70) == 0x40 && (op == 0x1 || op == 0x2))) {
            G.ws_errors++; /* RSV bits no extension explains */
            *closed = true;
            return n;
        }
        uint64_t len = b1 & 0x7f;
        size_t hl = 2;
        if (len == 126) {
            if (n - off < 4) break;
            len = (uint64_t)b[off + 2] << 8 | b[off + 3];
            hl = 4;
        } else if (len == 127) {
            if (n - off < 10) break;
            len = 0;
            for (int i = 0; i < 8; i++) len = len << 8 | b[off + 2 + i];
            hl = 10;
        }
        if (masked) hl += 4;
        if (len > MAX_CARRY) { G.ws_errors++; *closed = true; return n; }
        if (n - off < hl + len) break;
        uint8_t *pl = b + off + hl;
        if (masked) {
            const uint8_t *mk = b + off + hl - 4;
            for (uint64_t i = 0; i < len; i++) pl[i] ^= mk[i & 3];
        }
        off += hl + (size_t)len;
        switch (op) {
        case 0x1: case 0x2:
            if (fin) {
                if (!ws_data_message(c, (const char *)pl, (size_t)len, rsv1, now)) G.ws_errors++;
            } else {
                free(c->frag);
                c->frag = malloc((size_t)len + 1);
                if (!c->frag) exit(3);
                memcpy(c->frag, pl, (size_t)len);
                c->fraglen = (uint32_t)len;
                c->ws_frag_op = (uint8_t)op;
                c->frag_rsv1 = rsv1;
            }
            break;
        case 0x0:
            if (!c->frag) { G.ws_errors++; break; }
            if (c->fraglen + len > MAX_CARRY) { G.ws_errors++; *closed = true; return n; }
            c->frag = xrealloc(c->frag, c->fraglen + (size_t)len + 1);
            memcpy(c->frag + c->fraglen, pl, (size_t)len);
            c->fraglen += (uint32_t)len;
            if (fin) {
                if (!ws_data_message(c, c->frag, c->fraglen, c->frag_rsv1, now)) G.ws_errors++;
                free(c->frag);
                c->frag = NULL;
                c->fraglen = 0;
            }
            break;
        case 0x8:
            G.server_closes++;
            ws_send_frame(c, 0x8, pl, len >= 2 ? 2 : 0);
            *closed = true;
            return off;
        case 0x9:
            G.pings++;
            ws_send_frame(c, 0xA, pl, (size_t)len);
            break;
        default:
            break;
        }
    }
    return off;
}

/* ------------------------------------------------------------------ long-poll */

static void poll_body_done(struct conn *c, uint64_t now)
{
    const char *p = c->rb, *end = c->rb + c->rlen;
    if (c->status == 200 && c->rlen) {
        if (G.target == T_LIVEGATE) {
            const char *cur = json_value_last(p, end, "\"cursor\"");
            const char *evs = json_value(p, end, "\"events\"");
            if (evs) livegate_json_events(c, evs, cur && cur > evs ? cur : end, now);
            if (cur && *cur == '"') {
                const char *ce = memchr(cur + 1, '"', (size_t)(end - cur - 1));
                if (ce) {
                    free(c->cursor);
                    c->cursor = strndup(cur + 1, (size_t)(ce - cur - 1));
                }
            }
        } else {
            /* nchan_longpoll_multipart_response raw: messages separated by '\n' */
            while (p < end) {
                const char *nl = memchr(p, '\n', (size_t)(end - p));
                const char *e = nl ? nl : end;
                uint32_t seq; uint64_t ns;
                if (parse_payload(p, e, &seq, &ns)) deliver(c, seq, ns, now);
                else if (e > p) G.invalid_total++;
                p = nl ? nl + 1 : end;
            }
        }
    }
    c->rlen = 0;
    if (c->rcap > 65536) { free(c->rb); c->rb = NULL; c->rcap = 0; }
}

/* next poll: on the same connection unless the server closes it */
static void poll_again(struct conn *c)
{
    if (G.phase == PH_DONE) return;
    if (c->conn_close || c->fd < 0) {
        if (c->fd >= 0) { epoll_ctl(G.ep, EPOLL_CTL_DEL, c->fd, NULL); close_fd(c, false); }
        G.poll_reconnects++;
        if (!start_connect(c, sub_port_of(c), true)) { sub_fail(c, &G.fail_connect); }
        return;
    }
    if (!sub_send_request(c)) sub_fail(c, &G.fail_closed);
}

/* ------------------------------------------------------------------ subscriber input */

static void sub_handle_head(struct conn *c, const struct head *h, uint64_t now, bool *closed)
{
    c->status = h->status;
    if (c->xport == X_SSE) {
        if (h->status != 200) { sub_fail(c, &G.fail_http); *closed = true; return; }
        set_body_mode(c, h, true);
        c->state = CS_BODY;
        c->sse_type = SSE_MSG;
        c->sse_has = 0;
        sub_mark_ready(c);
    } else if (c->xport == X_WS) {
        char key[32], cat[96], want[32];
        uint8_t dig[20];
        ws_key(c->idx, key);
        snprintf(cat, sizeof cat, "%s258EAFA5-E914-47DA-95CA-C5AB0DC85B11", key);
        lgb_sha1(cat, strlen(cat), dig);
        lgb_base64(dig, 20, want);
        if (h->status != 101 || !h->ws_accept || h->ws_accept_len != strlen(want) ||
            memcmp(h->ws_accept, want, h->ws_accept_len)) {
            sub_fail(c, &G.fail_http);
            *closed = true;
            return;
        }
        c->state = CS_WS;
        c->upgraded = 1;
        c->pmd = h->pmd;
        c->pmd_no_takeover = h->pmd_no_takeover;
        if (h->pmd) G.ws_deflate_negotiated++;
        if (h->pmd_no_takeover) G.ws_deflate_no_takeover++;
        c->t_mark = now;
        if (G.target == T_NCHAN) sub_mark_ready(c); /* livegate: on "subscribed" (or grace) */
    } else {
        if (h->status == 200 && G.target == T_NCHAN && h->last_mod) {
            free(c->cursor);
            c->cursor = malloc(h->last_mod_len + h->etag_len + 2);
            if (!c->cursor) exit(3);
            memcpy(c->cursor, h->last_mod, h->last_mod_len);
            c->cursor[h->last_mod_len] = '\n';
            if (h->etag) memcpy(c->cursor + h->last_mod_len + 1, h->etag, h->etag_len);
            c->cursor[h->last_mod_len + 1 + h->etag_len] = '\0';
        }
        if (h->status != 200 && h->status != 304 && h->status != 408 && h->status != 204) {
            G.poll_errors++;
            if (!c->ready) { sub_fail(c, &G.fail_http); *closed = true; return; }
        }
        set_body_mode(c, h, false);
        c->state = CS_BODY;
    }
}

static void sub_input(struct conn *c, char *p, size_t n, uint64_t now)
{
    bool closed = false;
    while (n && !closed && c->fd >= 0) {
        if (c->state == CS_HEAD) {
            size_t old = c->rlen;
            carry_append(c, p, n);
            size_t from = old > 3 ? old - 3 : 0;
            const char *e = memmem(c->rb + from, c->rlen - from, "\r\n\r\n", 4);
            if (!e) {
                if (c->rlen > MAX_HEAD) { sub_fail(c, &G.fail_http); return; }
                return;
            }
            size_t hl = (size_t)(e - c->rb) + 4;
            size_t extra = c->rlen - hl;
            struct head h;
            if (!parse_head(c->rb, hl, &h)) { sub_fail(c, &G.fail_http); return; }
            c->rlen = 0;
            p = p + n - extra;
            n = extra;
            sub_handle_head(c, &h, now, &closed);
            if (closed) return;
            if (c->state == CS_BODY && c->body_mode == BM_LEN && c->body_left == 0 && c->xport == X_POLL) {
                poll_body_done(c, now);
                poll_again(c);
                if (c->state != CS_HEAD) return;
            }
            continue;
        }
        if (c->state == CS_BODY) {
            size_t used;
            bool done;
            size_t dn = body_decode(c, p, n, &used, &done);
            if (c->xport == X_SSE) {
                if (c->rlen) {
                    carry_append(c, p, dn);
                    carry_shift(c, sse_parse(c, c->rb, c->rlen, now));
                } else {
                    size_t u = sse_parse(c, p, dn, now);
                    if (u < dn) carry_append(c, p + u, dn - u);
                }
                if (c->rlen > MAX_CARRY) { sub_fail(c, &G.fail_closed); return; }
                if (done) { G.server_closes++; sub_fail(c, &G.fail_closed); return; }
            } else {
                carry_append(c, p, dn);
                if (c->rlen > MAX_CARRY) { sub_fail(c, &G.fail_closed); return; }
                if (done) {
                    poll_body_done(c, now);
                    p += used; n -= used;
                    poll_again(c);
                    continue;
                }
            }
            p += used;
            n -= used;
            continue;
        }
        if (c->state == CS_WS) {
            if (c->rlen) {
                carry_append(c, p, n);
                carry_shift(c, ws_parse(c, (uint8_t *)c->rb, c->rlen, now, &closed));
            } else {
                size_t u = ws_parse(c, (uint8_t *)p, n, now, &closed);
                if (u < n && !closed) carry_append(c, p + u, n - u);
            }
            n = 0;
            if (closed) { sub_fail(c, &G.fail_closed); return; }
            continue;
        }
        return; /* unexpected bytes in another state */
    }
}

/* ------------------------------------------------------------------ publisher */

static uint32_t pub_topic_of(const struct conn *pc, uint64_t ev)
{
    return pc->idx + G.pub_conns * (uint32_t)(ev % pc->ntopics);
}
static uint32_t pub_seq_of(const struct conn *pc, uint64_t ev)
{
    return (uint32_t)(ev / pc->ntopics) + 1;
}

static char *g_reqbuf;
static size_t g_reqcap;

/* --payload-bytes: n bytes of JSON-looking text after "<seq> <ns>" (a catalogue of items: what
 * a live page's events look like, and as compressible), which parse_payload() skips. */
static size_t pad_payload(char *out, size_t n)
{
    size_t len = 0;
    for (uint32_t i = 0; len < n; i++) {
        char item[96];
        int il = snprintf(item, sizeof item, "%s{\"sku\":\"item-%04" PRIu32 "\",\"price\":%" PRIu32
                          ".99,\"stock\":%" PRIu32 "}", i ? "," : " [", i, 10 + i % 90, 100 - i % 100);
        size_t take = (size_t)il < n - len ? (size_t)il : n - len;
        memcpy(out + len, item, take);
        len += take;
    }
    out[len] = '\0';
    return len;
}

static bool pub_issue(struct conn *pc, uint64_t now)
{
    if (pc->state != CS_HEAD && pc->state != CS_BODY) return false;
    if (pc->qlen >= G.pipeline || pc->ev_next >= pc->ev_cap) return false;
    uint32_t nev = G.batch > 1 ? G.batch : 1;
    if (pc->ev_next + nev > pc->ev_cap) nev = (uint32_t)(pc->ev_cap - pc->ev_next);
    size_t need = 512 + (size_t)nev * (MAX_TOPIC_NAME + 64) + G.payload_bytes;
    if (need > g_reqcap) { g_reqcap = need; g_reqbuf = xrealloc(g_reqbuf, g_reqcap); }
    char *req = g_reqbuf;
    int n;
    char tn[MAX_TOPIC_NAME];
    if (G.batch > 1) {
        char *body = req + 256;
        size_t bl = 0;
        body[bl++] = '[';
        for (uint32_t i = 0; i < nev; i++) {
            uint64_t ev = pc->ev_next + i;
            topic_name(pub_topic_of(pc, ev), tn, sizeof tn);
            bl += (size_t)sprintf(body + bl, "%s{\"topic\":\"%s\",\"data\":\"%" PRIu32 " %" PRIu64 "\"}",
                                  i ? "," : "", tn, pub_seq_of(pc, ev), now);
        }
        body[bl++] = ']';
        char hdr[256];
        int hl = snprintf(hdr, sizeof hdr,
                          "POST /v1/publish HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: application/json\r\n"
                          "Content-Length: %zu\r\n\r\n",
                          G.host, G.pub_port, bl);
        memcpy(body - hl, hdr, (size_t)hl);
        req = body - hl;
        n = hl + (int)bl;
    } else {
        uint64_t ev = pc->ev_next;
        static char data[48 + 16384];
        int dl = snprintf(data, 48, "%" PRIu32 " %" PRIu64, pub_seq_of(pc, ev), now);
        dl += (int)pad_payload(data + dl, G.payload_bytes > (uint32_t)dl ? G.payload_bytes - (uint32_t)dl : 0);
        topic_name(pub_topic_of(pc, ev), tn, sizeof tn);
        if (G.target == T_LIVEGATE)
            n = snprintf(req, g_reqcap,
                         "POST /v1/topics/%s/events HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: text/plain\r\n"
                         "Content-Length: %d\r\n\r\n%s",
                         tn, G.host, G.pub_port, dl, data);
        else
            n = snprintf(req, g_reqcap,
                         "POST /pub/%s HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: text/plain\r\n"
                         "Content-Length: %d\r\n\r\n%s",
                         tn, G.host, G.pub_port, dl, data);
    }
    struct pubreq *r = &pc->q[(pc->qhead + pc->qlen) % G.pipeline];
    r->ev0 = pc->ev_next;
    r->nev = nev;
    r->t_send = now;
    pc->qlen++;
    pc->ev_next += nev;
    G.events_issued += nev;
    G.pub_requests++;
    if (!G.t_first_pub) G.t_first_pub = now;
    return conn_send(pc, req, (size_t)n);
}

static void pub_complete(struct conn *pc, int status, uint64_t now)
{
    if (!pc->qlen) return;
    struct pubreq *r = &pc->q[pc->qhead];
    pc->qhead = (pc->qhead + 1) % G.pipeline;
    pc->qlen--;
    if (status >= 200 && status < 300) {
        for (uint32_t i = 0; i < r->nev; i++) G.acked[pub_topic_of(pc, r->ev0 + i)]++;
        G.published += r->nev;
        lgb_hist_add(&G.publat, (now - r->t_send) / 1000);
        G.t_last_pub_ack = now;
    } else {
        G.pub_failed += r->nev;
        G.pub_status_other++;
    }
}

static void pub_connect(struct conn *pc);

static void pub_lost_conn(struct conn *pc)
{
    while (pc->qlen) pub_complete(pc, 0, 0);
    if (pc->fd >= 0) { epoll_ctl(ep_of(pc), EPOLL_CTL_DEL, pc->fd, NULL); close_fd(pc, false); }
    if (G.phase == PH_PUBLISH && pc->ev_next < pc->ev_cap && pc->reconnects < 100) {
        pc->reconnects++;
        G.pub_reconnects++;
        pub_connect(pc);
    }
}

static void pub_connect(struct conn *pc)
{
    if (!start_connect(pc, G.pub_port, false)) { G.pub_conn_failed++; pc->state = CS_CLOSED; }
}

static void pub_input(struct conn *pc, char *p, size_t n, uint64_t now)
{
    while (n && pc->fd >= 0) {
        if (pc->state == CS_HEAD) {
            size_t old = pc->rlen;
            carry_append(pc, p, n);
            size_t from = old > 3 ? old - 3 : 0;
            const char *e = memmem(pc->rb + from, pc->rlen - from, "\r\n\r\n", 4);
            if (!e) { if (pc->rlen > MAX_HEAD) pub_lost_conn(pc); return; }
            size_t hl = (size_t)(e - pc->rb) + 4;
            size_t extra = pc->rlen - hl;
            struct head h;
            if (!parse_head(pc->rb, hl, &h)) { pub_lost_conn(pc); return; }
            pc->rlen = 0;
            p = p + n - extra;
            n = extra;
            pc->status = h.status;
            set_body_mode(pc, &h, false);
            if (pc->body_mode == BM_EOF) { pc->body_mode = BM_LEN; pc->body_left = 0; pc->conn_close = 1; }
            pc->state = CS_BODY;
        }
        if (pc->state == CS_BODY) {
            size_t used;
            bool done;
            body_decode(pc, p, n, &used, &done);
            p += used;
            n -= used;
            if (!done && pc->body_mode == BM_LEN && pc->body_left == 0) done = true;
            if (done) {
                pub_complete(pc, pc->status, now);
                pc->state = CS_HEAD;
                if (pc->conn_close) { pub_lost_conn(pc); return; }
            }
        }
    }
    /* a zero-length body completes without more bytes */
    if (pc->fd >= 0 && pc->state == CS_BODY && pc->body_mode == BM_LEN && pc->body_left == 0) {
        pub_complete(pc, pc->status, now);
        pc->state = CS_HEAD;
        if (pc->conn_close) pub_lost_conn(pc);
    }
}

static bool pub_all_done(void)
{
    for (uint32_t i = 0; i < G.pub_conns; i++) {
        struct conn *pc = &G.pubs[i];
        if (pc->state == CS_CLOSED) continue;
        if (pc->ev_next < pc->ev_cap || pc->qlen) return false;
    }
    return true;
}

static void pub_drive(uint64_t now)
{
    bool stop_issuing = now >= G.t_pub_end;
    if (stop_issuing) return;
    if (G.rate <= 0) {
        for (uint32_t i = 0; i < G.pub_conns; i++) {
            struct conn *pc = &G.pubs[i];
            while (pc->fd >= 0 && pc->olen == pc->ooff && pub_issue(pc, now)) {}
        }
        return;
    }
    static uint64_t t0;
    static uint32_t rr;
    if (!t0) t0 = now;
    uint64_t due = (uint64_t)((double)(now - t0) * G.rate / 1e9) + 1;
    while (G.events_issued < due) {
        bool any = false;
        for (uint32_t k = 0; k < G.pub_conns; k++) {
            struct conn *pc = &G.pubs[(rr + k) % G.pub_conns];
            if (pc->fd >= 0 && pub_issue(pc, now)) { rr = (rr + k + 1) % G.pub_conns; any = true; break; }
        }
        if (!any) {
            if (!pub_all_done()) G.pub_late++; /* every connection busy: the schedule slips */
            break;
        }
    }
}

/* ------------------------------------------------------------------ event loop */

/* ------------------------------------------------------------------ stalled subscribers
 * --stalled N: N more subscribers on the same topics, over SSE (WebSocket when --transport ws),
 * with SO_RCVBUF 4096. Each reads exactly its response head (peeked, so not one byte of the
 * stream is taken) to know the subscription stands, then never reads again: epoll watches it
 * only for the server's close. They are not part of the delivery accounting. */

static void stall_fail(struct conn *c)
{
    if (!c->ready) {
        if (!c->dead) {
            G.stalled_failed++;
            if (G.connecting) G.connecting--;
        }
    } else if (!c->dead) {
        G.stalled_closed++;
    }
    c->dead = 1;
    if (c->fd >= 0) epoll_ctl(G.ep, EPOLL_CTL_DEL, c->fd, NULL);
    close_fd(c, true);
}

static void stall_event(struct conn *c, uint32_t evs)
{
    if (c->state == CS_CONNECTING) {
        if (!(evs & (EPOLLOUT | EPOLLERR | EPOLLHUP))) return;
        int err = 0;
        socklen_t el = sizeof err;
        getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &el);
        if (err || (evs & (EPOLLERR | EPOLLHUP))) { stall_fail(c); return; }
        ep_set(c, EPOLLIN, EPOLL_CTL_MOD);
        if (!sub_send_request(c)) stall_fail(c);
        return;
    }
    if (c->state == CS_HEAD) {
        if ((evs & EPOLLOUT) && !conn_flush(c)) { stall_fail(c); return; }
        if (!(evs & (EPOLLIN | EPOLLHUP | EPOLLERR))) return;
        char pk[4096];
        ssize_t r = recv(c->fd, pk, sizeof pk, MSG_PEEK);
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
        if (r <= 0) { stall_fail(c); return; }
        size_t old = c->rlen;
        carry_append(c, pk, (size_t)r);
        size_t from = old > 3 ? old - 3 : 0;
        const char *e = memmem(c->rb + from, c->rlen - from, "\r\n\r\n", 4);
        size_t hl = e ? (size_t)(e - c->rb) + 4 : c->rlen;
        size_t take = hl - old; /* consume the head only; the stream stays in the kernel */
        if (recv(c->fd, pk, take, 0) != (ssize_t)take) { stall_fail(c); return; }
        if (!e) {
            if (hl > MAX_HEAD) stall_fail(c);
            return;
        }
        struct head h;
        bool ok = parse_head(c->rb, hl, &h) && h.status == (c->xport == X_WS ? 101 : 200);
        free(c->rb);
        c->rb = NULL;
        c->rlen = c->rcap = 0;
        if (!ok) { stall_fail(c); return; }
        c->ready = 1;
        c->state = CS_BODY;
        G.stalled_made++;
        if (G.connecting) G.connecting--;
        ep_set(c, EPOLLRDHUP, EPOLL_CTL_MOD); /* never EPOLLIN again */
        return;
    }
    if (evs & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) stall_fail(c); /* the server closed it */
}

/* ------------------------------------------------------------------ idle subscribers
 * --idle N: N more SSE subscribers, connected before everyone else, each on a topic of its own
 * ("<prefix>idle-<i>") that nobody publishes to. They read their response head, then read and
 * discard whatever comes (heartbeats, comments) until the end of the run. They are not part of
 * the delivery accounting: idle_made/idle_failed count them, idle_closed counts those the server
 * closed during the run, idle_open_at_end the rest. */

static void idle_fail(struct conn *c)
{
    if (!c->dead) {
        if (!c->ready) {
            G.idle_failed++;
            if (G.connecting) G.connecting--;
        } else {
            G.idle_closed++;
        }
    }
    c->dead = 1;
    if (c->fd >= 0) epoll_ctl(G.ep, EPOLL_CTL_DEL, c->fd, NULL);
    free(c->rb);
    c->rb = NULL;
    c->rlen = c->rcap = 0;
    close_fd(c, true);
}

static void idle_event(struct conn *c, uint32_t evs)
{
    if (c->state == CS_CONNECTING) {
        if (!(evs & (EPOLLOUT | EPOLLERR | EPOLLHUP))) return;
        int err = 0;
        socklen_t el = sizeof err;
        getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &el);
        if (err || (evs & (EPOLLERR | EPOLLHUP))) { idle_fail(c); return; }
        ep_set(c, EPOLLIN, EPOLL_CTL_MOD);
        if (!sub_send_request(c)) idle_fail(c);
        return;
    }
    if ((evs & EPOLLOUT) && !conn_flush(c)) { idle_fail(c); return; }
    if (!(evs & (EPOLLIN | EPOLLHUP | EPOLLERR | EPOLLRDHUP))) return;
    for (int round = 0; round < 4 && c->fd >= 0; round++) {
        ssize_t r = recv(c->fd, G.buf, RECV_CHUNK, 0);
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
        if (r <= 0) { idle_fail(c); return; }
        G.idle_bytes_rx += (uint64_t)r;
        if (c->state == CS_HEAD) {
            size_t old = c->rlen;
            carry_append(c, G.buf, (size_t)r);
            size_t from = old > 3 ? old - 3 : 0;
            const char *e = memmem(c->rb + from, c->rlen - from, "\r\n\r\n", 4);
            if (!e) {
                if (c->rlen > MAX_HEAD) idle_fail(c);
                continue;
            }
            struct head h;
            bool ok = parse_head(c->rb, (size_t)(e - c->rb) + 4, &h) && h.status == 200;
            free(c->rb);
            c->rb = NULL;
            c->rlen = c->rcap = 0;
            if (!ok) { idle_fail(c); return; }
            c->ready = 1;
            c->state = CS_BODY;
            G.idle_made++;
            if (G.connecting) G.connecting--;
        }
        /* CS_BODY: the bytes (heartbeats, if any) are dropped */
        if (r < RECV_CHUNK) return;
    }
}

static void handle_event(struct conn *c, uint32_t evs, uint64_t now)
{
    if (c->fd < 0) return;
    if (c->role == R_STALL) { stall_event(c, evs); return; }
    if (c->role == R_IDLE) { idle_event(c, evs); return; }
    if (c->state == CS_CONNECTING) {
        if (!(evs & (EPOLLOUT | EPOLLERR | EPOLLHUP))) return;
        int err = 0;
        socklen_t el = sizeof err;
        getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &el);
        if (err || (evs & (EPOLLERR | EPOLLHUP))) {
            if (c->role == R_SUB) sub_fail(c, &G.fail_connect);
            else { G.pub_conn_failed++; pub_lost_conn(c); }
            return;
        }
        ep_set(c, EPOLLIN, EPOLL_CTL_MOD);
        if (c->role == R_SUB) {
            if (!sub_send_request(c)) { sub_fail(c, &G.fail_connect); return; }
            if (c->xport == X_POLL) sub_mark_ready(c); /* the poll is held: connected = ready */
        } else {
            c->state = CS_HEAD;
            c->rlen = 0;
        }
        return;
    }
    if (evs & EPOLLOUT) {
        if (!conn_flush(c)) {
            if (c->role == R_SUB) sub_fail(c, &G.fail_closed);
            else pub_lost_conn(c);
            return;
        }
    }
    if (evs & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
        for (int round = 0; round < 4 && c->fd >= 0; round++) {
            ssize_t r = recv(c->fd, G.buf, RECV_CHUNK, 0);
            if (r > 0) {
                G.bytes_rx += (uint64_t)r;
                if (c->role == R_SUB) sub_input(c, G.buf, (size_t)r, now);
                else pub_input(c, G.buf, (size_t)r, now);
                if (r < RECV_CHUNK) break;
                continue;
            }
            if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) break;
            /* EOF or error */
            if (c->role == R_SUB) {
                if (c->state == CS_BODY && c->body_mode == BM_EOF && c->xport == X_SSE) G.server_closes++;
                if (c->xport == X_POLL && c->ready && c->state == CS_BODY && c->body_mode == BM_EOF) {
                    /* a poll answer delimited by the end of the connection */
                    poll_body_done(c, now);
                    c->conn_close = 1;
                    epoll_ctl(G.ep, EPOLL_CTL_DEL, c->fd, NULL);
                    close_fd(c, false);
                    poll_again(c);
                } else if (c->xport == X_POLL && c->ready && c->state == CS_HEAD && c->rlen == 0) {
                    /* keep-alive poll connection closed between responses: reconnect */
                    c->conn_close = 1;
                    epoll_ctl(G.ep, EPOLL_CTL_DEL, c->fd, NULL);
                    close_fd(c, false);
                    poll_again(c);
                } else {
                    sub_fail(c, &G.fail_closed);
                }
            } else {
                pub_lost_conn(c);
            }
            break;
        }
    }
}

static void stall_fail(struct conn *c);

static void connect_drive(uint64_t now)
{
    /* idle subscribers first: the active ones join a server that already holds them */
    while (G.next_idle < G.nidle && G.connecting < G.connect_conc) {
        struct conn *c = &G.idlec[G.next_idle++];
        G.connecting++;
        c->t_mark = now;
        if (!start_connect(c, sub_port_of(c), true)) idle_fail(c);
    }
    if (G.next_idle < G.nidle || G.idle_made + G.idle_failed < G.nidle) return; /* all settled */
    /* then the stalled ones, so they are stalled while the healthy ones connect */
    while (G.next_stall < G.nstalled && G.connecting < G.connect_conc) {
        struct conn *c = &G.stalled[G.next_stall++];
        G.connecting++;
        c->t_mark = now;
        if (!start_connect(c, sub_port_of(c), true)) stall_fail(c);
    }
    while (G.next_sub < G.nsubs && G.connecting < G.connect_conc) {
        struct conn *c = &G.subs[G.next_sub++];
        G.connecting++;
        c->t_mark = c->t_connect = now;
        if (!start_connect(c, sub_port_of(c), true)) {
            if (errno == EMFILE || errno == ENFILE) sub_fail(c, &G.fail_socket);
            else sub_fail(c, &G.fail_connect);
        }
    }
}

/* ------------------------------------------------------------------ reconnect storm */

/* Every established subscriber closes at the same moment (RST, as at the end of a run: the
 * server sees each one go at once, and no TIME_WAIT is left behind). */
static void storm_disconnect_all(void)
{
    for (uint32_t i = 0; i < G.nsubs; i++) {
        struct conn *c = &G.subs[i];
        if (!c->ready || c->dead || c->fd < 0) continue;
        epoll_ctl(G.ep, EPOLL_CTL_DEL, c->fd, NULL);
        close_fd(c, true);
        c->sse_type = SSE_MSG; /* a block cut in half is dropped, as EventSource does */
        c->sse_has = 0;
        c->storm = SM_AWAY;
        G.storm_clients++;
    }
}

/* Reconnects the clients that are away, at most --connect-concurrency handshakes at a time. */
static void storm_drive(void)
{
    while (G.storm_next < G.nsubs && G.connecting < G.connect_conc) {
        struct conn *c = &G.subs[G.storm_next++];
        if (c->storm != SM_AWAY) continue;
        c->storm = SM_RECONNECTING;
        G.connecting++;
        if (!start_connect(c, sub_port_of(c), true))
            sub_fail(c, errno == EMFILE || errno == ENFILE ? &G.fail_socket : &G.fail_connect);
    }
}

/* What is still away or reconnecting at the storm's deadline has failed (timeout). */
static void storm_time_out_pending(void)
{
    for (uint32_t i = 0; i < G.nsubs; i++) {
        struct conn *c = &G.subs[i];
        if (c->storm == SM_RECONNECTING) {
            sub_fail(c, &G.fail_timeout);
        } else if (c->storm == SM_AWAY) {
            G.fail_timeout++;
            storm_settle(c, SM_FAILED);
            sub_lost_accounting(c);
        }
    }
    G.connecting = 0;
}

static bool over_budget(uint64_t now)
{
    if (g_stop) { G.aborted = true; G.abort_reason = "signal"; return true; }
    if (now >= G.t_deadline_all) { G.aborted = true; G.abort_reason = "max_runtime"; return true; }
    return false;
}

#define LOOP_EVENTS 1024
/* While publishing, the publisher's set is looked at after this many subscriber events: a
 * backend on a machine of its own is not paced by its browsers' reads, and one epoll_wait per
 * few reads costs the generator little. */
#define PUB_SERVICE_EVERY 8

/* Handles whatever is ready among the publisher's sockets and the pacing timer, without
 * waiting, then issues what is due. */
static void pub_service(void)
{
    struct epoll_event evs[16];
    int n = G.pub_ep >= 0 ? epoll_wait(G.pub_ep, evs, 16, 0) : 0;
    uint64_t now = lgb_now_ns();
    for (int i = 0; i < n; i++) {
        if (evs[i].data.ptr == NULL) take_timer_tick();
        else handle_event(evs[i].data.ptr, evs[i].events, now);
    }
    if (G.phase == PH_PUBLISH) pub_drive(lgb_now_ns());
}

/* Run the loop until cond() is true or until the deadline. Returns true if cond() was met. */
static bool loop_until(uint64_t deadline, bool (*cond)(uint64_t now))
{
    struct epoll_event evs[LOOP_EVENTS];
    for (;;) {
        uint64_t now = lgb_now_ns();
        if (G.phase == PH_CONNECT) connect_drive(now);
        if (G.phase == PH_PUBLISH) pub_service();
        if (G.phase == PH_STORM) storm_drive();
        if (cond && cond(now)) return true;
        if (now >= deadline || over_budget(now)) return false;
        uint64_t left_ms = (deadline - now) / 1000000 + 1;
        int to = left_ms > 20 ? 20 : (int)left_ms;
        int n = epoll_wait(G.ep, evs, LOOP_EVENTS, to);
        if (n < 0 && errno != EINTR) { perror("lg_loadgen: epoll_wait"); return false; }
        now = lgb_now_ns();
        for (int i = 0; i < n; i++) {
            if (evs[i].data.ptr == &G.pub_ep) { pub_service(); continue; }
            if (evs[i].data.ptr == NULL) { take_timer_tick(); continue; } /* no subscribers */
            struct conn *c = evs[i].data.ptr;
            handle_event(c, evs[i].events, now);
            if (G.phase == PH_PUBLISH && (c->role == R_PUB || (i + 1) % PUB_SERVICE_EVERY == 0)) {
                pub_service();
                now = lgb_now_ns();
            }
        }
    }
}

static bool cond_connected(uint64_t now)
{
    if (G.any_ws && G.target == T_LIVEGATE) {
        /* livegate confirms a subscription with a "subscribed" message; accept the upgrade alone
         * after a grace period so an older server without it does not stall the run */
        static uint64_t last;
        if (now - last > 10000000) {
            last = now;
            for (uint32_t i = 0; i < G.next_sub; i++) {
                struct conn *c = &G.subs[i];
                if (c->xport == X_WS && c->upgraded && !c->ready && !c->dead && c->fd >= 0 &&
                    now - c->t_mark > (uint64_t)(G.ws_sub_grace_ms * 1e6))
                    sub_mark_ready(c);
            }
        }
    }
    return G.next_sub >= G.nsubs && G.next_stall >= G.nstalled && G.next_idle >= G.nidle && G.connecting == 0;
}

static bool cond_pub_done(uint64_t now)
{
    if (now >= G.t_pub_end) {
        /* stop issuing; wait only for in-flight answers */
        for (uint32_t i = 0; i < G.pub_conns; i++)
            if (G.pubs[i].fd >= 0 && G.pubs[i].qlen) return false;
        return true;
    }
    return pub_all_done();
}

static uint64_t expected_alive(void)
{
    uint64_t e = 0;
    for (uint32_t t = 0; t < G.ntopics; t++) e += G.acked[t] * G.ready_on_topic[t];
    return e;
}

static bool cond_drained(uint64_t now)
{
    static uint64_t last;
    if (now - last < 5000000) return false;
    last = now;
    uint64_t alive_unique = G.unique_total - G.unique_dead;
    return alive_unique >= expected_alive();
}

static bool cond_storm_settled(uint64_t now)
{
    (void)now;
    return G.storm_settled >= G.storm_clients;
}

/* every client that came back holds every acknowledged event of its topic */
static bool cond_storm_drained(uint64_t now)
{
    static uint64_t last;
    if (now - last < 5000000) return false;
    last = now;
    for (uint32_t i = 0; i < G.nsubs; i++) {
        const struct conn *c = &G.subs[i];
        bool back = c->storm == SM_BACK || c->storm == SM_RESUMED;
        if (back && !c->dead && c->unique < G.acked[c->topic]) return false;
    }
    return true;
}

/* The storm, after the first events are delivered: all close; K more events per topic are
 * published and acknowledged; after --settle-ms (the server has let the old connections go) all
 * reconnect at once with their Last-Event-ID; each one's first event is timed from the start of
 * the reconnect (until every client has one or failed, bounded by --connect-timeout); then
 * every event must arrive (--drain-ms). Returns false when the run ran out of time. */
static bool storm_run(void)
{
    storm_disconnect_all();
    for (uint32_t i = 0; i < G.pub_conns; i++)
        G.pubs[i].ev_cap += (uint64_t)G.pubs[i].ntopics * G.storm_events;
    G.phase = PH_PUBLISH;
    G.t_pub_end = lgb_now_ns() + (uint64_t)(G.duration_s * 1e9);
    loop_until(G.t_pub_end + 5000000000ull, cond_pub_done);
    G.phase = PH_SETTLE;
    loop_until(lgb_now_ns() + (uint64_t)(G.settle_ms * 1e6), NULL);
    if (G.aborted) return false;
    G.phase = PH_STORM;
    G.connecting = 0;
    double cpu0 = G.nserver_pids ? lgb_proc_cpu_s(G.server_pids, G.nserver_pids) : -1;
    double self0 = lgb_self_cpu_s();
    G.t_storm0 = lgb_now_ns();
    loop_until(G.t_storm0 + (uint64_t)(G.connect_timeout_s * 1e9), cond_storm_settled);
    double span_s = (double)(lgb_now_ns() - G.t_storm0) / 1e9;
    double cpu1 = G.nserver_pids ? lgb_proc_cpu_s(G.server_pids, G.nserver_pids) : -1;
    G.storm_server_cpu_s = cpu0 >= 0 && cpu1 >= 0 ? cpu1 - cpu0 : NAN;
    G.storm_loadgen_cpu_pct = span_s > 0 ? (lgb_self_cpu_s() - self0) / span_s * 100 : NAN;
    storm_time_out_pending();
    G.phase = PH_DRAIN;
    return loop_until(lgb_now_ns() + (uint64_t)(G.drain_ms * 1e6), cond_storm_drained);
}

/* ------------------------------------------------------------------ report */

/* srv_cpu sums every --server-pid; srv_cpu_each keeps each one (several nodes and their Redis) */
struct snap { double t, self_cpu, srv_cpu, srv_cpu_each[16], host_busy; long rss_kb, slab_kb; };

static void snap_take(struct snap *s)
{
    s->t = (double)lgb_now_ns() / 1e9;
    s->self_cpu = lgb_self_cpu_s();
    s->srv_cpu = G.nserver_pids ? lgb_proc_cpu_s(G.server_pids, G.nserver_pids) : -1;
    for (int i = 0; i < G.nserver_pids; i++) s->srv_cpu_each[i] = lgb_proc_cpu_s(&G.server_pids[i], 1);
    s->rss_kb = G.nserver_pids ? lgb_proc_rss_kb(G.server_pids, G.nserver_pids) : -1;
    s->slab_kb = lgb_slab_kb();
    s->host_busy = lgb_host_busy_s();
}

/* --ready-file: tells a script that this process holds its connections (made and failed
 * counts, one line), e.g. a second generator holding idle subscribers beside the measured one */
static void write_ready_file(void)
{
    FILE *f = fopen(G.ready_file, "w");
    if (!f) die("cannot write --ready-file %s", G.ready_file);
    fprintf(f, "made %" PRIu64 " failed %" PRIu64 "\n", G.conns_made + G.stalled_made + G.idle_made,
            G.conns_failed + G.stalled_failed + G.idle_failed);
    fclose(f);
}

static void jnum(const char *k, double v, int prec, bool valid)
{
    if (!valid || isnan(v) || isinf(v)) printf(",\"%s\":null", k);
    else printf(",\"%s\":%.*f", k, prec, v);
}
static void jint(const char *k, uint64_t v) { printf(",\"%s\":%" PRIu64, k, v); }

static void usage(void)
{
    fprintf(stderr,
            "usage: lg_loadgen --target livegate|nchan [--host 127.0.0.1] --sub-port P[,P..] --pub-port Q\n"
            "  --transport sse|ws|poll|mixed --subscribers N --topics T --rate R|max --events M\n"
            "  [--stalled N (extra subscribers that never read; SO_RCVBUF 4096)]\n"
            "  [--idle N (extra SSE subscribers on unpublished topics, connected first)]\n"
            "  [--duration S] [--pub-conns P] [--pipeline D] [--batch B (livegate)]\n"
            "  [--server-pid PID[,PID..]] [--src-addrs K] [--src-base X] [--connect-concurrency C]\n"
            "  [--connect-timeout S] [--settle-ms MS] [--idle-ms MS] [--drain-ms MS]\n"
            "  [--poll-timeout S] [--max-runtime S] [--label NAME] [--json] [--quiet]\n"
            "  [--sub-query K=V (appended to livegate's /sse, /ws and /poll queries, e.g. a token)]\n"
            "  [--ready-file PATH (created when the connect phase is over: \"made N failed M\")]\n"
            "  [--reconnect-storm K (SSE, --rate max: after --events, all close, K more events\n"
            "   per topic are published, all reconnect at once with Last-Event-ID)]\n"
            "  [--ws-deflate (WebSocket subscribers offer permessage-deflate with\n"
            "   server_no_context_takeover and inflate; the messages of connections whose answer\n"
            "   has it go through a cache shared by them: one inflation per distinct message)]\n"
            "  [--ws-deflate-offer browser|no-takeover (implies --ws-deflate; browser: the offer\n"
            "   browsers make, no promise asked, so every message is inflated by its connection)]\n"
            "  [--payload-bytes N (events padded to N bytes with compressible JSON text)]\n"
            "Prints one JSON object on stdout. --events is per topic; --rate is events/s in total.\n"
            "mixed: subscribers split evenly over sse, ws and poll (each topic gets all three).\n"
            "Several --sub-port ports (nodes, at most 8): a subscriber on topic t, or the idle one\n"
            "number t, connects to port number t mod K. With several --server-pid, each one's CPU\n"
            "is reported too (server_cpu_s_<k>, server_cpu_pct_<k>, k = 1.. in the given order).\n");
}

int main(int argc, char **argv)
{
    /* defaults */
    G.target = T_LIVEGATE;
    G.transport = X_SSE;
    strcpy(G.host, "127.0.0.1");
    G.ntopics = 1;
    G.duration_s = 10;
    G.pub_conns = 1;
    G.pipeline = 1;
    G.batch = 1;
    G.src_addrs = 8;
    G.src_base = 2;
    G.connect_conc = 256;
    G.connect_timeout_s = 60;
    G.settle_ms = 300;
    G.idle_ms = 0;
    G.drain_ms = 15000;
    G.max_runtime_s = 300;
    G.poll_timeout_s = 30;
    G.ws_sub_grace_ms = 2000;

    static const struct option opts[] = {
        {"target", 1, 0, 'a'}, {"host", 1, 0, 'H'}, {"sub-port", 1, 0, 's'}, {"pub-port", 1, 0, 'p'},
        {"transport", 1, 0, 'x'}, {"subscribers", 1, 0, 'n'}, {"topics", 1, 0, 't'}, {"rate", 1, 0, 'r'},
        {"events", 1, 0, 'e'}, {"duration", 1, 0, 'd'}, {"pub-conns", 1, 0, 'P'}, {"pipeline", 1, 0, 'D'},
        {"batch", 1, 0, 'B'}, {"server-pid", 1, 0, 'S'}, {"src-addrs", 1, 0, 'k'}, {"src-base", 1, 0, 'K'},
        {"connect-concurrency", 1, 0, 'c'}, {"connect-timeout", 1, 0, 'C'}, {"settle-ms", 1, 0, 'w'},
        {"idle-ms", 1, 0, 'i'}, {"drain-ms", 1, 0, 'W'}, {"poll-timeout", 1, 0, 'T'},
        {"max-runtime", 1, 0, 'M'}, {"label", 1, 0, 'L'}, {"sub-query", 1, 0, 'Q'}, {"json", 0, 0, 'j'}, {"quiet", 0, 0, 'q'},
        {"stalled", 1, 0, 'z'}, {"idle", 1, 0, 'I'}, {"ready-file", 1, 0, 'R'}, {"help", 0, 0, 'h'},
        {"reconnect-storm", 1, 0, 'Y'}, {"ws-deflate", 0, 0, 'Z'}, {"payload-bytes", 1, 0, 'b'},
        {"ws-deflate-offer", 1, 0, 'O'},
        {0, 0, 0, 0}};
    int o;
    while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (o) {
        case 'a':
            if (!strcmp(optarg, "livegate")) G.target = T_LIVEGATE;
            else if (!strcmp(optarg, "nchan")) G.target = T_NCHAN;
            else die("unknown target %s", optarg);
            break;
        case 'H': snprintf(G.host, sizeof G.host, "%s", optarg); break;
        case 's': {
            char *s = optarg, *tok, *save = NULL;
            G.nsub_ports = 0;
            while ((tok = strtok_r(s, ",", &save))) {
                s = NULL;
                if (G.nsub_ports == 8) die("--sub-port takes at most 8 ports");
                G.sub_ports[G.nsub_ports++] = atoi(tok);
            }
            break;
        }
        case 'p': G.pub_port = atoi(optarg); break;
        case 'x':
            if (!strcmp(optarg, "sse")) G.transport = X_SSE;
            else if (!strcmp(optarg, "ws")) G.transport = X_WS;
            else if (!strcmp(optarg, "poll")) G.transport = X_POLL;
            else if (!strcmp(optarg, "mixed")) G.transport = X_MIXED;
            else die("unknown transport %s", optarg);
            break;
        case 'n': G.nsubs = (uint32_t)strtoul(optarg, NULL, 10); break;
        case 'z': G.nstalled = (uint32_t)strtoul(optarg, NULL, 10); break;
        case 'I': G.nidle = (uint32_t)strtoul(optarg, NULL, 10); break;
        case 't': G.ntopics = (uint32_t)strtoul(optarg, NULL, 10); break;
        case 'r': G.rate = !strcmp(optarg, "max") ? 0 : atof(optarg); break;
        case 'e': G.events_per_topic = strtoull(optarg, NULL, 10); G.events_given = true; break;
        case 'd': G.duration_s = atof(optarg); break;
        case 'P': G.pub_conns = (uint32_t)strtoul(optarg, NULL, 10); break;
        case 'D': G.pipeline = (uint32_t)strtoul(optarg, NULL, 10); G.pipeline_given = true; break;
        case 'B': G.batch = (uint32_t)strtoul(optarg, NULL, 10); break;
        case 'S': {
            char *s = optarg, *tok, *save = NULL;
            while ((tok = strtok_r(s, ",", &save)) && G.nserver_pids < 16) {
                s = NULL;
                G.server_pids[G.nserver_pids++] = atoi(tok);
            }
            break;
        }
        case 'k': G.src_addrs = (uint32_t)strtoul(optarg, NULL, 10); break;
        case 'K': G.src_base = (uint32_t)strtoul(optarg, NULL, 10); break;
        case 'c': G.connect_conc = (uint32_t)strtoul(optarg, NULL, 10); break;
        case 'C': G.connect_timeout_s = atof(optarg); break;
        case 'w': G.settle_ms = atof(optarg); break;
        case 'i': G.idle_ms = atof(optarg); break;
        case 'W': G.drain_ms = atof(optarg); break;
        case 'T': G.poll_timeout_s = atoi(optarg); break;
        case 'M': G.max_runtime_s = atof(optarg); break;
        case 'L': snprintf(G.label, sizeof G.label, "%s", optarg); break;
        case 'Q': snprintf(G.sub_query, sizeof G.sub_query, "&%s", optarg); break;
        case 'R': snprintf(G.ready_file, sizeof G.ready_file, "%s", optarg); break;
        case 'Y': G.storm_events = strtoull(optarg, NULL, 10); break;
        case 'Z': G.ws_deflate = true; break;
        case 'O':
            if (!strcmp(optarg, "browser")) G.ws_offer_browser = true;
            else if (!strcmp(optarg, "no-takeover")) G.ws_offer_browser = false;
            else die("--ws-deflate-offer: browser or no-takeover");
            G.ws_deflate = true;
            break;
        case 'b': G.payload_bytes = (uint32_t)strtoul(optarg, NULL, 10); break;
        case 'j': break;
        case 'q': G.quiet = true; break;
        default: usage(); return 2;
        }
    }
    /* validation */
    if (!is_loopback(G.host)) die("--host %s: only 127.0.0.0/8 targets are allowed", G.host);
    if (G.src_addrs < 1 || G.src_addrs > 250 || G.src_base < 1 || G.src_base + G.src_addrs > 255)
        die("--src-base/--src-addrs must stay within 127.0.0.1..127.0.0.254");
    if (G.ntopics < 1 || G.ntopics > 1000000) die("--topics must be 1..1000000");
    if (G.nsubs > 1000000) die("--subscribers must be <= 1000000");
    if (G.nstalled > 1000000) die("--stalled must be <= 1000000");
    if (G.nidle > 1000000) die("--idle must be <= 1000000");
    if (G.nsubs || G.nstalled || G.nidle) {
        if (!G.nsub_ports) die("--sub-port required");
        for (uint32_t i = 0; i < G.nsub_ports; i++)
            if (G.sub_ports[i] <= 0 || G.sub_ports[i] > 65535) die("bad --sub-port %d", G.sub_ports[i]);
    }
    if (G.pub_conns < 1 || G.pub_conns > 256) die("--pub-conns must be 1..256");
    if (G.pipeline < 1 || G.pipeline > 1024) die("--pipeline must be 1..1024");
    if (G.batch < 1 || G.batch > 10000) die("--batch must be 1..10000");
    if (G.payload_bytes > 16384) die("--payload-bytes must be at most 16384");
    if (G.payload_bytes && G.batch > 1) die("--payload-bytes needs --batch 1");
    if (G.batch > 1 && G.target == T_NCHAN) die("--batch: Nchan has no batch publish");
    if (G.duration_s <= 0 || G.duration_s > 3600) die("--duration must be in (0, 3600]");
    if (G.max_runtime_s <= 0 || G.max_runtime_s > 7200) die("--max-runtime must be in (0, 7200]");
    if (G.connect_conc < 1) G.connect_conc = 1;
    /* A paced publisher must keep its schedule even when the server answers slowly (otherwise
     * the run measures the server's pace, not the requested rate: coordinated omission), so
     * rate mode pipelines requests on its connection; "max" stays a closed loop of depth 1. */
    if (G.rate > 0 && !G.pipeline_given) G.pipeline = 64;
    if (!G.events_given) {
        if (G.rate > 0) G.events_per_topic = (uint64_t)ceil(G.rate * G.duration_s / G.ntopics);
        else G.events_per_topic = G.nsubs ? 1000 : 100000000;
    }
    if (G.storm_events) {
        if (G.transport != X_SSE) die("--reconnect-storm: SSE only (--transport sse)");
        if (G.rate > 0) die("--reconnect-storm publishes in a closed loop (--rate max)");
        if (!G.nsubs || !G.events_per_topic)
            die("--reconnect-storm needs --subscribers and --events >= 1");
        if (G.storm_events > 1000000) die("--reconnect-storm must be <= 1000000");
        G.events_per_topic += G.storm_events; /* the seq range: both phases */
    }
    if (G.events_per_topic > 4000000000ull) die("--events must be < 4e9 per topic");
    if (G.events_per_topic && (G.pub_port <= 0 || G.pub_port > 65535)) die("--pub-port required");
    if (G.pub_conns > G.ntopics) G.pub_conns = G.ntopics; /* each topic has exactly one publisher conn */
    double bitmap_bytes = (double)G.nsubs * (double)(G.events_per_topic / 8 + 1);
    if (bitmap_bytes > 2e9) die("--subscribers x --events too large for the per-subscriber bitmaps");

    /* fds: one per subscriber plus publisher, epoll, timerfd, stdio */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    signal(SIGPIPE, SIG_IGN);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);

    G.nonce = (uint32_t)(lgb_now_ns() ^ ((uint64_t)getpid() << 16));
    snprintf(G.topic_prefix, sizeof G.topic_prefix, "lgb%08x-", G.nonce);
    G.buf = malloc(RECV_CHUNK + 64);
    G.subs = calloc(G.nsubs ? G.nsubs : 1, sizeof *G.subs);
    G.pubs = calloc(G.pub_conns, sizeof *G.pubs);
    G.stalled = calloc(G.nstalled ? G.nstalled : 1, sizeof *G.stalled);
    G.idlec = calloc(G.nidle ? G.nidle : 1, sizeof *G.idlec);
    G.ready_on_topic = calloc(G.ntopics, sizeof *G.ready_on_topic);
    G.acked = calloc(G.ntopics, sizeof *G.acked);
    if (!G.buf || !G.subs || !G.pubs || !G.stalled || !G.idlec || !G.ready_on_topic || !G.acked) exit(3);
    for (uint32_t i = 0; i < G.nsubs; i++) {
        G.subs[i].fd = -1;
        G.subs[i].role = R_SUB;
        G.subs[i].idx = i;
        G.subs[i].topic = i % G.ntopics;
        /* mixed: row i / T of the topic table shifts the cycle, so every topic gets all three
         * transports and the totals are near-equal thirds */
        G.subs[i].xport = (uint8_t)(G.transport == X_MIXED ? (i % G.ntopics + i / G.ntopics) % 3 : G.transport);
        if (G.subs[i].xport == X_WS) G.any_ws = true;
    }
    for (uint32_t i = 0; i < G.nstalled; i++) {
        struct conn *c = &G.stalled[i];
        c->fd = -1;
        c->role = R_STALL;
        c->idx = G.nsubs + i; /* source address and WS key */
        c->topic = i % G.ntopics;
        c->xport = G.transport == X_WS ? X_WS : X_SSE;
    }
    for (uint32_t i = 0; i < G.nidle; i++) {
        struct conn *c = &G.idlec[i];
        c->fd = -1;
        c->role = R_IDLE;
        c->idx = G.nsubs + G.nstalled + i; /* source address */
        c->topic = i;                      /* "<prefix>idle-<i>" */
        c->xport = X_SSE;
    }
    if (lgb_inflate_init(&G.inflate) != 0) die("zlib: cannot set up an inflater");
    G.ep = epoll_create1(EPOLL_CLOEXEC);
    bool any_subscribers = G.nsubs + G.nstalled + G.nidle > 0;
    G.pub_ep = any_subscribers ? epoll_create1(EPOLL_CLOEXEC) : -1;
    G.tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (G.ep < 0 || (any_subscribers && G.pub_ep < 0) || G.tfd < 0) {
        perror("lg_loadgen: epoll/timerfd");
        return 3;
    }
    struct epoll_event nested = {.events = EPOLLIN, .data.ptr = &G.pub_ep};
    if (any_subscribers && epoll_ctl(G.ep, EPOLL_CTL_ADD, G.pub_ep, &nested) < 0) {
        perror("lg_loadgen: epoll");
        return 3;
    }
    G.t_start = lgb_now_ns();
    G.t_deadline_all = G.t_start + (uint64_t)(G.max_runtime_s * 1e9);

    struct snap s0, s1, s2, si, s3, s4;
    snap_take(&s0);

    /* ---- connect subscribers ---- */
    G.phase = PH_CONNECT;
    uint64_t tc0 = lgb_now_ns();
    loop_until(tc0 + (uint64_t)(G.connect_timeout_s * 1e9), cond_connected);
    uint64_t tc1 = lgb_now_ns();
    for (uint32_t i = 0; i < G.nsubs; i++) { /* whatever is still pending timed out */
        struct conn *c = &G.subs[i];
        if (i >= G.next_sub) { G.conns_failed++; G.fail_timeout++; continue; }
        if (!c->ready && !c->dead) sub_fail(c, &G.fail_timeout);
    }
    for (uint32_t i = 0; i < G.nstalled; i++) {
        struct conn *c = &G.stalled[i];
        if (i >= G.next_stall) { G.stalled_failed++; continue; }
        if (!c->ready && !c->dead) stall_fail(c);
    }
    for (uint32_t i = 0; i < G.nidle; i++) {
        struct conn *c = &G.idlec[i];
        if (i >= G.next_idle) { G.idle_failed++; continue; }
        if (!c->ready && !c->dead) idle_fail(c);
    }
    G.connecting = 0;
    snap_take(&s1);
    if (G.ready_file[0]) write_ready_file();

    /* ---- settle, then measure the idle footprint ---- */
    G.phase = PH_SETTLE;
    loop_until(lgb_now_ns() + (uint64_t)(G.settle_ms * 1e6), NULL);
    snap_take(&s2);
    if (G.idle_ms > 0) loop_until(lgb_now_ns() + (uint64_t)(G.idle_ms * 1e6), NULL);
    snap_take(&si);
    s3 = si;

    /* ---- publish ---- */
    uint64_t tp0 = 0, tp1 = 0, td1 = 0;
    bool drained = true;
    if (G.events_per_topic > 0 && !G.aborted) {
        G.phase = PH_PUBLISH;
        uint32_t per = G.ntopics / G.pub_conns, extra = G.ntopics % G.pub_conns;
        for (uint32_t i = 0; i < G.pub_conns; i++) {
            struct conn *pc = &G.pubs[i];
            pc->fd = -1;
            pc->role = R_PUB;
            pc->idx = i;
            pc->ntopics = per + (i < extra ? 1 : 0);
            /* with --reconnect-storm, the events before the storm (storm_run adds the rest) */
            pc->ev_cap = (uint64_t)pc->ntopics * (G.events_per_topic - G.storm_events);
            pc->q = calloc(G.pipeline, sizeof *pc->q);
            if (!pc->q) exit(3);
            pub_connect(pc);
        }
        /* wait for the publisher connections to be up (bounded) */
        G.phase = PH_SETTLE;
        struct epoll_event evs[64];
        uint64_t tw = lgb_now_ns() + 5000000000ull;
        for (;;) {
            bool up = true;
            for (uint32_t i = 0; i < G.pub_conns; i++)
                if (G.pubs[i].state == CS_CONNECTING) up = false;
            if (up || lgb_now_ns() > tw) break;
            int n = epoll_wait(pub_set(), evs, 64, 10);
            for (int i = 0; i < n; i++)
                if (evs[i].data.ptr) handle_event(evs[i].data.ptr, evs[i].events, lgb_now_ns());
        }
        if (G.rate > 0) {
            double iv = 1.0 / G.rate;
            if (iv < 0.001) iv = 0.001;
            struct itimerspec its;
            its.it_interval.tv_sec = (time_t)iv;
            its.it_interval.tv_nsec = (long)((iv - floor(iv)) * 1e9);
            its.it_value = its.it_interval;
            timerfd_settime(G.tfd, 0, &its, NULL);
            struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
            epoll_ctl(pub_set(), EPOLL_CTL_ADD, G.tfd, &ev);
        }
        snap_take(&s3);
        G.phase = PH_PUBLISH;
        tp0 = lgb_now_ns();
        G.t_pub_end = tp0 + (uint64_t)(G.duration_s * 1e9);
        loop_until(G.t_pub_end + 5000000000ull, cond_pub_done);
        tp1 = lgb_now_ns();
        G.phase = PH_DRAIN;
        if (G.rate > 0) { struct itimerspec z = {0}; timerfd_settime(G.tfd, 0, &z, NULL); }
        drained = G.nsubs == 0 || loop_until(tp1 + (uint64_t)(G.drain_ms * 1e6), cond_drained);
        if (G.storm_events && !G.aborted) drained = storm_run() && drained;
        td1 = lgb_now_ns();
    }
    snap_take(&s4);
    G.phase = PH_DONE;

    /* ---- accounting ---- */
    uint64_t expected = 0, received = 0;
    for (uint32_t i = 0; i < G.nsubs; i++) {
        struct conn *c = &G.subs[i];
        if (!c->ready) continue;
        expected += G.acked[c->topic];
        received += c->unique < G.acked[c->topic] ? c->unique : G.acked[c->topic];
    }
    uint64_t lost = expected - received;
    /* the same per transport (reported for --transport mixed) */
    struct { uint64_t subs, made, failed, disc, expected, received, unique, dups, reord; } px[3];
    memset(px, 0, sizeof px);
    for (uint32_t i = 0; i < G.nsubs; i++) {
        struct conn *c = &G.subs[i];
        uint8_t x = c->xport < 3 ? c->xport : 0;
        px[x].subs++;
        px[x].unique += c->unique;
        px[x].dups += c->dups;
        px[x].reord += c->reord;
        if (!c->ready) { px[x].failed++; continue; }
        px[x].made++;
        if (c->dead) px[x].disc++;
        px[x].expected += G.acked[c->topic];
        px[x].received += c->unique < G.acked[c->topic] ? c->unique : G.acked[c->topic];
    }

    /* ---- teardown (RST, no TIME_WAIT) ---- */
    for (uint32_t i = 0; i < G.nsubs; i++) {
        close_fd(&G.subs[i], true);
        free(G.subs[i].seen); free(G.subs[i].rb); free(G.subs[i].ob); free(G.subs[i].cursor); free(G.subs[i].frag);
        free(G.subs[i].id_buf); free(G.subs[i].last_id);
    }
    for (uint32_t i = 0; i < G.pub_conns; i++) close_fd(&G.pubs[i], true);
    lgb_inflate_release(&G.inflate); /* its counters are read below */
    uint64_t stalled_alive = 0;
    for (uint32_t i = 0; i < G.nstalled; i++) {
        if (G.stalled[i].ready && !G.stalled[i].dead) stalled_alive++;
        close_fd(&G.stalled[i], true);
        free(G.stalled[i].rb); free(G.stalled[i].ob);
    }
    uint64_t idle_alive = 0;
    for (uint32_t i = 0; i < G.nidle; i++) {
        if (G.idlec[i].ready && !G.idlec[i].dead) idle_alive++;
        close_fd(&G.idlec[i], true);
        free(G.idlec[i].rb); free(G.idlec[i].ob);
    }

    /* ---- report ---- */
    double connect_s = (double)(tc1 - tc0) / 1e9;
    double pub_s = tp1 > tp0 ? (double)(tp1 - tp0) / 1e9 : 0;
    double meas_s = td1 > tp0 ? (double)(td1 - tp0) / 1e9 : 0;
    double deliv_span = G.t_last_delivery > G.t_first_pub ? (double)(G.t_last_delivery - G.t_first_pub) / 1e9 : 0;
    double pub_span = G.t_last_pub_ack > G.t_first_pub ? (double)(G.t_last_pub_ack - G.t_first_pub) / 1e9 : 0;
    /* paced: N events sent on schedule span N-1 intervals (plus the last answer's latency), so
     * the span gets the one interval of the first event; a publisher on schedule then reports
     * the offered rate, a slow server less. A closed loop's span is N round trips already. */
    if (pub_span > 0 && G.rate > 0) pub_span += 1.0 / G.rate;
    double lg_cpu_connect = connect_s > 0 ? (s1.self_cpu - s0.self_cpu) / connect_s : 0;
    double lg_cpu_meas = meas_s > 0 ? (s4.self_cpu - s3.self_cpu) / meas_s : 0;
    bool srv = G.nserver_pids > 0 && s0.srv_cpu >= 0;
    double srv_cpu_meas = srv && meas_s > 0 ? (s4.srv_cpu - s3.srv_cpu) / meas_s : NAN;
    double idle_s = si.t - s2.t;
    double srv_cpu_idle = srv && G.idle_ms > 0 && idle_s > 0 ? (si.srv_cpu - s2.srv_cpu) / idle_s : NAN;
    /* every connection the server holds after the connect phase: subscribers, stalled, idle */
    uint64_t held = G.conns_made + G.stalled_made + G.idle_made;
    bool rss_ok = srv && s0.rss_kb >= 0 && s2.rss_kb >= 0 && held > 0;
    /* a figure is load-generator-bound when the generator used > 80 % of its core while the
     * figure was taken: publish+drain for delivery and ingest figures. Idle figures (RSS) are
     * read while the generator sleeps; a saturated connect phase is flagged on its own. */
    bool connect_measured = G.nsubs > 0 && connect_s > 0.05;
    bool lg_bound = meas_s > 0 && lg_cpu_meas > 0.8;
    bool lg_connect_bound = connect_measured && lg_cpu_connect > 0.8;

    printf("{\"label\":\"%s\",\"target\":\"%s\",\"transport\":\"%s\"", G.label,
           G.target == T_LIVEGATE ? "livegate" : "nchan", xport_name[G.transport]);
    jint("subscribers", G.nsubs);
    jint("stalled", G.nstalled);
    jint("idle", G.nidle);
    jint("topics", G.ntopics);
    if (G.rate > 0) jnum("rate", G.rate, 3, true); else printf(",\"rate\":\"max\"");
    /* the publish rate asked for (events/s in total), beside the achieved publish_per_s */
    if (G.rate > 0) jnum("offered_rate", G.rate, 3, true); else printf(",\"offered_rate\":\"max\"");
    jint("events_per_topic", G.events_per_topic);
    jint("pub_conns", G.pub_conns);
    jint("pipeline", G.pipeline);
    jint("batch", G.batch);
    jint("src_addrs", G.src_addrs);
    jint("conns_made", G.conns_made);
    jint("conns_failed", G.conns_failed);
    printf(",\"conn_fail\":{\"connect\":%" PRIu64 ",\"http\":%" PRIu64 ",\"closed\":%" PRIu64
           ",\"timeout\":%" PRIu64 ",\"fd_limit\":%" PRIu64 "}",
           G.fail_connect, G.fail_http, G.fail_closed, G.fail_timeout, G.fail_socket);
    jint("sub_disconnects", G.sub_disconnects);
    jnum("connect_s", connect_s, 3, true);
    jnum("connect_per_s", connect_s > 0 ? held / connect_s : 0, 1, true);
    jnum("connect_lat_p50_us", (double)lgb_hist_quantile(&G.connect_lat, 0.50), 0,
         G.connect_lat.count > 0);
    jnum("connect_lat_p99_us", (double)lgb_hist_quantile(&G.connect_lat, 0.99), 0,
         G.connect_lat.count > 0);
    jnum("answer_lat_p50_us", (double)lgb_hist_quantile(&G.answer_lat, 0.50), 0,
         G.answer_lat.count > 0);
    jnum("answer_lat_p99_us", (double)lgb_hist_quantile(&G.answer_lat, 0.99), 0,
         G.answer_lat.count > 0);
    jint("published", G.published);
    jint("publish_failed", G.pub_failed);
    jint("publish_requests", G.pub_requests);
    jint("pub_conn_failed", G.pub_conn_failed);
    jint("pub_reconnects", G.pub_reconnects);
    jint("pub_late", G.pub_late);
    jnum("publish_s", pub_s, 3, true);
    jnum("publish_per_s", pub_span > 0 ? G.published / pub_span : 0, 1, pub_span > 0);
    jnum("publish_req_per_s", pub_span > 0 ? G.pub_requests / pub_span : 0, 1, pub_span > 0);
    jint("pub_lat_p50_us", lgb_hist_quantile(&G.publat, 0.50));
    jint("pub_lat_p99_us", lgb_hist_quantile(&G.publat, 0.99));
    jint("pub_lat_max_us", G.publat.max_us);
    jint("expected_deliveries", expected);
    jint("deliveries", G.unique_total);
    jint("lost", lost);
    jint("duplicated", G.dups_total);
    jint("reordered", G.reord_total);
    jint("invalid", G.invalid_total);
    jint("gaps", G.gaps);
    jint("resets", G.resets);
    jint("stream_errors", G.sse_errors + G.ws_errors);
    jint("server_closes", G.server_closes);
    jint("ws_subscribed", G.ws_subscribed);
    jint("ws_pings", G.pings);
    jint("ws_deflate_negotiated", G.ws_deflate_negotiated);
    jint("ws_deflate_no_context_takeover", G.ws_deflate_no_takeover);
    jint("ws_compressed_messages", G.ws_compressed_messages);
    jint("ws_inflated_bytes", G.inflate.text_bytes);
    {
        /* how the compressed messages were verified: through the shared cache (connections
         * with server_no_context_takeover), with each connection's inflater, or both */
        const struct lgb_inflate *w = &G.inflate;
        bool cached = w->cache_hits + w->cache_misses > 0, own = w->conn_inflated > 0;
        jint("ws_inflate_cache_hits", w->cache_hits);
        jint("ws_inflate_cache_misses", w->cache_misses);
        jint("ws_inflated_per_connection", w->conn_inflated);
        jint("ws_inflated_messages", w->cache_misses + w->conn_inflated);
        printf(",\"ws_inflate_path\":\"%s\"",
               cached && own ? "both" : cached ? "cache" : own ? "per_connection" : "none");
    }
    jint("poll_requests", G.poll_requests);
    jint("poll_reconnects", G.poll_reconnects);
    jint("poll_errors", G.poll_errors);
    jnum("delivery_span_s", deliv_span, 3, true);
    jnum("deliveries_per_s", deliv_span > 0 ? G.unique_total / deliv_span : 0, 1, deliv_span > 0);
    jint("lat_p50_us", lgb_hist_quantile(&G.lat, 0.50));
    jint("lat_p90_us", lgb_hist_quantile(&G.lat, 0.90));
    jint("lat_p99_us", lgb_hist_quantile(&G.lat, 0.99));
    jint("lat_max_us", G.lat.max_us);
    jnum("lat_mean_us", G.lat.count ? (double)G.lat.sum_us / G.lat.count : 0, 1, true);
    printf(",\"lat_p99_by_tenth_us\":[");
    for (int i = 0; i < 10; i++) printf("%s%" PRIu64, i ? "," : "", lgb_hist_quantile(&G.lat_tenth[i], 0.99));
    printf("]");
    printf(",\"drained\":%s", drained ? "true" : "false");
    {
        /* --reconnect-storm: a client that failed has no first event; the quantiles and the
         * last first event are over those that had one */
        bool any = G.storm_first.count > 0;
        jint("storm_clients", G.storm_clients);
        jint("storm_events", G.storm_events);
        jint("storm_reconnected", G.storm_reconnected);
        jint("storm_reconnect_failed", G.storm_clients - G.storm_first.count);
        jnum("storm_first_event_p50_us", (double)lgb_hist_quantile(&G.storm_first, 0.50), 0, any);
        jnum("storm_first_event_p99_us", (double)lgb_hist_quantile(&G.storm_first, 0.99), 0, any);
        jnum("storm_last_first_event_us", (double)G.storm_first.max_us, 0, any);
        jnum("storm_server_cpu_s", G.storm_server_cpu_s, 3, G.storm_clients > 0);
        /* above 80 %, the storm figures may be the generator's limit, not the server's */
        jnum("storm_loadgen_cpu_pct", G.storm_loadgen_cpu_pct, 1, G.storm_clients > 0);
    }
    jnum("server_rss_start_kb", (double)s0.rss_kb, 0, srv && s0.rss_kb >= 0);
    jnum("server_rss_idle_kb", (double)s2.rss_kb, 0, srv && s2.rss_kb >= 0);
    jnum("server_rss_end_kb", (double)s4.rss_kb, 0, srv && s4.rss_kb >= 0);
    jnum("bytes_per_conn", rss_ok ? (double)(s2.rss_kb - s0.rss_kb) * 1024.0 / held : NAN, 0, rss_ok);
    jnum("slab_bytes_per_conn", held && s0.slab_kb >= 0 ? (double)(s2.slab_kb - s0.slab_kb) * 1024.0 / held : NAN,
         0, held && s0.slab_kb >= 0);
    jnum("server_cpu_idle_pct", srv_cpu_idle * 100, 2, !isnan(srv_cpu_idle));
    jnum("server_cpu_pct", srv_cpu_meas * 100, 1, !isnan(srv_cpu_meas));
    jnum("server_cpu_s", srv && meas_s > 0 ? s4.srv_cpu - s3.srv_cpu : NAN, 3, srv && meas_s > 0);
    for (int i = 0; G.nserver_pids > 1 && i < G.nserver_pids; i++) { /* each --server-pid, 1-based */
        char k[32];
        double d = s4.srv_cpu_each[i] - s3.srv_cpu_each[i];
        bool ok = srv && meas_s > 0 && s3.srv_cpu_each[i] >= 0 && s4.srv_cpu_each[i] >= 0;
        snprintf(k, sizeof k, "server_cpu_s_%d", i + 1);
        jnum(k, d, 3, ok);
        snprintf(k, sizeof k, "server_cpu_pct_%d", i + 1);
        jnum(k, ok ? d / meas_s * 100 : NAN, 1, ok);
    }
    {
        double work = G.unique_total ? (double)G.unique_total : (double)G.published;
        bool ok = srv && meas_s > 0 && work > 0;
        jnum(G.unique_total ? "server_cpu_us_per_delivery" : "server_cpu_us_per_publish",
             ok ? (s4.srv_cpu - s3.srv_cpu) * 1e6 / work : NAN, 2, ok);
    }
    jnum("server_cpu_connect_pct", srv && connect_measured ? (s1.srv_cpu - s0.srv_cpu) / connect_s * 100 : NAN, 1,
         srv && connect_measured);
    jnum("loadgen_cpu_pct", lg_cpu_meas * 100, 1, meas_s > 0);
    jnum("loadgen_connect_cpu_pct", lg_cpu_connect * 100, 1, connect_measured);
    printf(",\"loadgen_bound\":%s", lg_bound ? "true" : "false");
    printf(",\"loadgen_connect_bound\":%s", lg_connect_bound ? "true" : "false");
    {
        /* CPU used on this host by anything but the server and the generator while measuring:
         * a high figure means other work disturbed the run */
        const struct snap *a = meas_s > 0 ? &s3 : &s0, *b = meas_s > 0 ? &s4 : &s1;
        double span = b->t - a->t;
        bool ok = span > 0 && a->host_busy >= 0 && b->host_busy >= 0;
        double other = ok ? (b->host_busy - a->host_busy) - (b->self_cpu - a->self_cpu) -
                                (srv ? b->srv_cpu - a->srv_cpu : 0)
                          : NAN;
        jnum("other_cpu_pct", ok ? (other > 0 ? other : 0) / span * 100 : NAN, 1, ok);
    }
    jint("stalled_made", G.stalled_made);
    jint("stalled_failed", G.stalled_failed);
    jint("stalled_closed", G.stalled_closed);
    jint("stalled_open_at_end", stalled_alive);
    jint("idle_made", G.idle_made);
    jint("idle_failed", G.idle_failed);
    jint("idle_closed", G.idle_closed);
    jint("idle_open_at_end", idle_alive);
    jint("idle_bytes_rx", G.idle_bytes_rx);
    jint("bytes_rx", G.bytes_rx);
    /* the wire cost of one delivered event (heads and control frames are a rounding error) */
    jnum("bytes_rx_per_delivery", G.unique_total ? (double)G.bytes_rx / (double)G.unique_total : NAN,
         1, G.unique_total > 0);
    jnum("elapsed_s", (double)(lgb_now_ns() - G.t_start) / 1e9, 3, true);
    printf(",\"aborted\":%s", G.aborted ? "true" : "false");
    if (G.aborted) printf(",\"abort_reason\":\"%s\"", G.abort_reason);
    if (G.transport == X_MIXED) {
        /* last, so a flat reader (bench/lib.sh lgb_field) finds the totals above first */
        printf(",\"per_transport\":{");
        for (int x = 0; x < 3; x++) {
            printf("%s\"%s\":{\"subscribers\":%" PRIu64, x ? "," : "", xport_name[x], px[x].subs);
            jint("conns_made", px[x].made);
            jint("conns_failed", px[x].failed);
            jint("sub_disconnects", px[x].disc);
            jint("expected_deliveries", px[x].expected);
            jint("deliveries", px[x].unique);
            jint("lost", px[x].expected - px[x].received);
            jint("duplicated", px[x].dups);
            jint("reordered", px[x].reord);
            jint("lat_p50_us", lgb_hist_quantile(&G.lat_x[x], 0.50));
            jint("lat_p99_us", lgb_hist_quantile(&G.lat_x[x], 0.99));
            jint("lat_max_us", G.lat_x[x].max_us);
            printf("}");
        }
        printf("}");
    }
    printf("}\n");
    fflush(stdout);
    if (!G.quiet)
        fprintf(stderr,
                "lg_loadgen %s: made %" PRIu64 " failed %" PRIu64 " published %" PRIu64
                " deliveries %" PRIu64 "/%" PRIu64 " lost %" PRIu64 " dup %" PRIu64 " reord %" PRIu64
                " p50 %" PRIu64 "us p99 %" PRIu64 "us\n",
                G.label[0] ? G.label : "run", G.conns_made, G.conns_failed, G.published, G.unique_total,
                expected, lost, G.dups_total, G.reord_total, lgb_hist_quantile(&G.lat, 0.5),
                lgb_hist_quantile(&G.lat, 0.99));
    if (!G.quiet && G.storm_clients)
        fprintf(stderr,
                "lg_loadgen %s: storm of %" PRIu32 " clients: reconnected %" PRIu64
                " failed %" PRIu64 " first event p50 %" PRIu64 "us p99 %" PRIu64 "us last %" PRIu64
                "us\n",
                G.label[0] ? G.label : "run", G.storm_clients, G.storm_reconnected,
                G.storm_clients - G.storm_first.count, lgb_hist_quantile(&G.storm_first, 0.5),
                lgb_hist_quantile(&G.storm_first, 0.99), G.storm_first.max_us);
    return G.aborted ? 1 : 0;
}
