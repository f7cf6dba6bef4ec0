/*
 * transport.h - the transport table: one const struct of functions per way a client is served
 * (SSE, long-poll, WebSocket, plain HTTP answers), after lws' protocol tables and h2o's
 * connection callbacks. The worker and conn.c drive a connection only through its table:
 * nobody outside a transport's own file knows which transport a connection has, and every
 * wire format and every piece of a transport's own state lives in that file. A new transport
 * is one new file and one entry in lg_transports[] (transport.c).
 *
 *   table                 file              renders                    connection
 *   lg_transport_sse      transport_sse.c   SSE frames                 event stream (RAW role)
 *   lg_transport_poll     transport_poll.c  one JSON batch per answer  held poll (RAW role)
 *   lg_transport_ws       transport_ws.c    WebSocket text frames      lws ws role
 *   lg_transport_http     transport_http.c  nothing (no subscriber)    static files, errors,
 *                                                                      keep-alive between requests
 *   lg_transport_hook_wait conn_hook.c      nothing                    an SSE or poll subscribe
 *                                                                      waiting for the backend
 *
 * Owns:    nothing. The tables are const and static; connections borrow a pointer to one for
 *          as long as they serve that way (a raw connection switches between lg_transport_http
 *          and a stream or poll table as it serves requests).
 * Frees:   nothing to free.
 * Threads: any thread may read a table. The functions run on the worker thread that owns the
 *          connection they are given, inside one of its lws callbacks unless they say otherwise.
 * Bounds:  at most LG_TRANSPORT_MAX tables; a transport's state is at most state_size bytes,
 *          carried inline in every connection (lg_transport_state_max()).
 */
#ifndef LG_TRANSPORT_H
#define LG_TRANSPORT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "render.h"

struct lg_conn;
struct lg_dlist;
struct lg_http_request;

#define LG_TRANSPORT_MAX 8

/* How a drain ends a connection: at once, or at its moment of a windowed drain. */
struct lg_drain {
    bool restart;      /* windowed: say "service restart, reconnect elsewhere" (WS 1012) */
    uint32_t retry_ms; /* windowed, SSE: the jittered retry: to send (0 = sse.retry_ms) */
};

struct lg_transport {
    const char *name;              /* in log lines: "SSE", "WebSocket", "long-poll", "HTTP" */
    /* Its name in the admin API's client list and access line ("sse", "websocket", "poll"),
     * NULL when its connections are not clients (plain HTTP answers). */
    const char *report_name;
    _Atomic int64_t *clients;      /* the lg_stats gauge counting these connections, or NULL */
    const struct lg_render_ops *render; /* what its subscriber renders; NULL: no subscriber */
    bool stream;                   /* events are written as they arrive (SSE, WebSocket): queues
                                      are written straight from the sweep and lag-checked */
    size_t state_size;             /* bytes of its own state (conn.h lg_conn_state()), 0: none */
    /* The raw HTTP route it answers ("/sse"), or NULL; serve() answers a GET of it. */
    const char *path;
    void (*serve)(struct lg_conn *c, const char *buf, const struct lg_http_request *req);

    /* Bytes from the peer (raw role; the ws role reassembles messages itself). Return value:
     * 0, or -1 to close. NULL: ignored. */
    int (*receive)(struct lg_conn *c, const char *in, size_t len);
    /* stream: write queued events now (outside any lws callback), as many write_batch_bytes
     * writes as the socket takes without blocking. Return value: 0, or -1 if the socket failed. */
    int (*write_events)(struct lg_conn *c);
    /* Render c's next write at the end of out, for a write made elsewhere
     * (lg_conn_write_batched()). A stream: what write_events writes first (replies owed, then
     * events, up to write_batch_bytes). A held poll: its whole answer, after which c is a plain
     * connection (the write is an answer: lg_conn_send_answer()'s rules follow it). Return
     * value: 0, or -1 if memory ran out. NULL: only write_events, or the writable callback,
     * writes c. */
    int (*render_batch)(struct lg_conn *c, struct lg_buf *out);
    /* c's answer (lg_conn_send_answer()) went to the socket whole: go on now, not through the
     * writable callback (a plain connection waits for its next request). NULL: the writable
     * callback goes on. */
    void (*answered)(struct lg_conn *c);
    /* lws says the socket can take more (raw connections: after their pending `out` is sent).
     * Return value: 0, or -1 to close. NULL: nothing more to send. */
    int (*writable)(struct lg_conn *c);
    /* c's deadline passed (lg_conn_deadline()), or, for a stream, its token's expiry.
     * Return value: 0, or -1 to close c. NULL: none. */
    int (*timer)(struct lg_conn *c);
    /* An operator disconnects c (a client): its notice, then the close. */
    void (*kick)(struct lg_conn *c, const char *reason);
    /* c is released: free what its state owns. NULL: nothing. */
    void (*release)(struct lg_conn *c);
    /* Shutdown: begin a clean end of c. */
    void (*drain)(struct lg_conn *c, const struct lg_drain *how);
    /* The worker's tick: walk this transport's keep-alive order (lg_conn_keepalive_reset(), least
     * recently reset first) and act on the connections due (SSE heartbeats, WebSocket pings and
     * pong timeouts), stopping at the first that is not. NULL: no keep-alive. Any time outside
     * an lws callback of those connections. */
    void (*keepalive_tick)(struct lg_dlist *order, uint64_t now_ms);
};

extern const struct lg_transport lg_transport_sse;
extern const struct lg_transport lg_transport_poll;
extern const struct lg_transport lg_transport_ws;
extern const struct lg_transport lg_transport_http;
/* A raw connection whose subscribe waits for the backend's subscribe hook (conn_hook.c). */
extern const struct lg_transport lg_transport_hook_wait;

/* The render tables of the transports with a subscriber (their files). */
extern const struct lg_render_ops lg_sse_render;
extern const struct lg_render_ops lg_poll_render;
extern const struct lg_render_ops lg_ws_render;

/* Every transport, each once ([lg_transport_count]). */
extern const struct lg_transport *const lg_transports[];
extern const size_t lg_transport_count;

/* t's position in lg_transports[] (the worker's keep-alive order of its connections). */
size_t lg_transport_index(const struct lg_transport *t);
/* The largest state_size of any transport: what every connection carries. */
size_t lg_transport_state_max(void);

#endif
