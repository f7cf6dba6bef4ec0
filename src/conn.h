/*
 * conn.h - one public-port client connection, shared by the worker and its transports
 * (internal to worker.c, transport_http.c and transport_ws.c).
 *
 * Owns:    its subscriber (subscriptions and queued events), a buffer of response bytes not yet
 *          written, and, on keep-alive HTTP connections, the next request's head buffer.
 * Frees:   lg_conn_release(), called exactly once from the lws close path
 *          (LWS_CALLBACK_RAW_CLOSE / LWS_CALLBACK_CLOSED, or WSI_DESTROY if neither ran).
 *          The struct itself is lws' per-session data: lws frees it after the close callbacks.
 * Threads: its worker thread only.
 * Bounds:  `out` holds at most one response (head + a long-poll batch, a static file, or
 *          WebSocket control replies, limited by websocket.max_message_bytes per reply and
 *          16 replies); the request buffer is limits.max_request_head_bytes.
 */
#ifndef LG_CONN_H
#define LG_CONN_H

#include <libwebsockets.h>
#include <stdbool.h>
#include <stdint.h>

#include "dlist.h"
#include "encode.h"
#include "http_request.h"
#include "http_response.h"
#include "subscriber.h"

struct lg_worker;

enum lg_conn_kind {
    LG_CONN_NEW = 0,  /* lws allocated it; nothing set up yet */
    LG_CONN_HTTP,     /* raw HTTP/1.1: static files, errors, or between long-polls */
    LG_CONN_SSE,      /* raw: an event stream */
    LG_CONN_POLL,     /* raw: a long-poll held until events or its deadline */
    LG_CONN_WS,       /* lws WebSocket */
};

/* A request head being read on a keep-alive connection. */
struct lg_rx {
    struct lg_http_request req;
    uint32_t len;
    char buf[];       /* limits.max_request_head_bytes */
};

struct lg_conn {
    struct lws *wsi;
    struct lg_worker *worker;
    enum lg_conn_kind kind;
    bool released;            /* lg_conn_release() ran */
    bool closing;             /* send what is in `out`, then close */
    bool draining;            /* SSE/WS at shutdown: send what is queued, then end cleanly */
    bool keep_alive;          /* after `out` is sent, read the next request */
    bool heartbeat_owed;      /* SSE: send a comment line */
    struct lg_subscriber sub; /* SSE, WS, POLL */
    struct lg_buf out;        /* bytes to send before any event (heads, replies) */
    size_t out_sent;
    struct lg_rx *rx;         /* keep-alive: the next request head, allocated on demand */
    uint64_t last_write_ms;   /* monotonic */
    uint32_t poll_max_batch;
    uint32_t ws_bad_messages; /* malformed control messages in a row */
    uint16_t ws_close_code;   /* when closing: the code to send (1001 at shutdown) */
    struct lg_buf ws_msg;     /* a WebSocket message being reassembled */
    struct lg_dlink conn_link;   /* the worker's list of every connection */
    struct lg_dlink dirty_link;  /* the worker's queue of connections given events to write */
    struct lg_dlink quiet_link;  /* SSE: the worker's streams in order of their last write */
    struct lg_dlink backlog_link;/* the worker's connections holding events their socket did
                                    not take yet (checked against max_lag_ms each tick) */
};

/* What the classifier parsed, handed to the connection that serves it. */
struct lg_handoff {
    const char *buf;                 /* the request bytes */
    const struct lg_http_request *req;
};

/* ---- worker.c services for transports ------------------------------------------------ */
const struct lg_config *lg_worker_config(const struct lg_worker *w);
struct lg_hub *lg_worker_hub(const struct lg_worker *w);
uint32_t lg_worker_index(const struct lg_worker *w);
const char *lg_worker_static_dir(const struct lg_worker *w);
bool lg_worker_is_draining(const struct lg_worker *w);
/* The worker's scratch buffer for one coalesced write: LWS_PRE bytes of headroom are kept. */
struct lg_buf *lg_worker_scratch(struct lg_worker *w);
void lg_worker_conn_opened(struct lg_worker *w, struct lg_conn *c);
void lg_worker_conn_closed(struct lg_worker *w, struct lg_conn *c);
/* c wrote to its socket now: an SSE stream moves to the end of the heartbeat order. */
void lg_worker_conn_wrote(struct lg_worker *w, struct lg_conn *c);
/* After a write: whether c still holds queued events (its socket is full). */
void lg_worker_conn_backlog(struct lg_worker *w, struct lg_conn *c);
/* Keep the raw query of a WebSocket upgrade until lws reports the connection established. */
char *lg_worker_take_ws_query(struct lg_worker *w, int fd);

/* ---- shared connection helpers (conn.c) ----------------------------------------------- */
void lg_conn_init(struct lg_conn *c, struct lws *wsi, struct lg_worker *w, enum lg_conn_kind kind);
void lg_conn_release(struct lg_conn *c);
/* Ask lws for a writable callback once (dedup while one is pending is lws' job). */
void lg_conn_want_write(struct lg_conn *c);
/* Queue a complete HTTP response (status line, JSON body) and close after it. */
void lg_conn_http_error(struct lg_conn *c, int status, const char *code, const char *message,
                        const char *extra_headers);
/* Write pending `out` bytes. Return value: 0 sent (or partially, lws keeps the rest), -1 fail. */
int lg_conn_flush_out(struct lg_conn *c);

/* ---- transports ------------------------------------------------------------------------ */
extern const struct lws_protocols lg_protocol_http; /* raw SSE / long-poll / static */
extern const struct lws_protocols lg_protocol_ws;   /* "livegate.v1" */
/* Serve a parsed request on an adopted raw connection (first or keep-alive request). */
void lg_http_serve(struct lg_conn *c, const char *buf, const struct lg_http_request *req);
/*
 * Events were queued for c (called by the worker, outside any lws callback): write them to
 * the socket now, as many write_batch_bytes-sized writes as it takes without blocking. Only a
 * write that does not go out whole (lws keeps the rest and asks for POLLOUT) leaves events
 * queued, so a client's queue grows only while its own socket is full. Anything but plain
 * event output (closing, draining, a held poll's answer) goes through the writable callback.
 */
void lg_conn_write_now(struct lg_conn *c);
/* The transports' halves of lg_conn_write_now(): write queued events until the queue is empty
 * or the socket is full. Return value: 0, or -1 if the socket failed. */
int lg_http_write_events(struct lg_conn *c);
int lg_ws_write_events(struct lg_conn *c);
/* Periodic tick of a connection with queued events: apply max_lag_ms. */
void lg_conn_check_lag(struct lg_conn *c);
/* Begin a clean end: SSE retry hint, WS 1001, answer held polls, close idle ones. */
void lg_conn_drain(struct lg_conn *c);

#endif
