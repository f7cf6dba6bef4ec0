/*
 * conn.h - one public-port client connection, shared by the worker and the transports: its
 * state and the helpers every transport uses (conn.c). What a connection does differently per
 * transport is in its table (transport.h), which `transport` points at.
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

#include "acceptor.h"
#include "client_address.h"
#include "dlist.h"
#include "encode.h"
#include "http_request.h"
#include "http_response.h"
#include "min_heap.h"
#include "rate.h"
#include "subscriber.h"
#include "transport.h"

struct lg_worker;
struct lg_subscribe_params;
struct lg_grant;

/* A request head being read on a keep-alive connection. */
struct lg_rx {
    struct lg_http_request req;
    uint32_t len;
    bool timed;       /* the request timer runs for the head at buf[0] */
    char buf[];       /* limits.max_request_head_bytes */
};

struct lg_conn {
    struct lws *wsi;
    struct lg_worker *worker;
    /* What it is now: NULL until set up (lws allocated it), &lg_transport_http for plain
     * answers and between keep-alive requests, then a stream's or a held poll's table. */
    const struct lg_transport_ops *transport;
    bool released;            /* lg_conn_release() ran */
    bool client_counted;      /* holds one of `client`'s connections (client_addresses.h) */
    struct lg_rate topic_creations; /* new topics it may create (limits.topic_creations_per_s) */
    struct lg_rate ws_messages;     /* WebSocket control messages (websocket.max_messages_per_s) */
    struct lg_client_address client;
    bool closing;             /* send what is in `out`, then close */
    bool ending;              /* kicked or slow-disconnected: closed hard at its deadline
                                 (LG_END_NOTICE_MS) if the notice has not gone out by then */
    bool draining;            /* SSE/WS at shutdown: send what is queued, then end cleanly */
    bool drain_fired;         /* its drain ran (a windowed drain fires each at its moment) */
    uint64_t drain_at_ms;     /* windowed drain (drain_window_ms): its random moment */
    uint32_t drain_retry_ms;  /* windowed drain, SSE: the jittered retry: sent (0 = sse.retry_ms) */
    bool drain_restart;       /* windowed drain, WebSocket: close 1012 (service restart) */
    bool keep_alive;          /* after `out` is sent, read the next request */
    bool sse_request;         /* its request is GET /sse: a retryable refusal is an SSE event
                                 (sse_refusal.h) */
    bool heartbeat_owed;      /* a heartbeat transport (SSE): send a comment line */
    bool lingering;           /* answered and half-closed: reading and discarding until the
                                 peer closes, LG_LINGER_MS or LG_LINGER_BYTES */
    uint32_t linger_bytes;    /* discarded while lingering */
    struct lg_subscriber sub; /* SSE, WS, POLL */
    struct lg_buf out;        /* bytes to send before any event (heads, replies) */
    size_t out_sent;
    struct lg_rx *rx;         /* keep-alive: the next request head, allocated on demand */
    uint64_t last_write_ms;   /* monotonic */
    uint32_t poll_max_batch;
    uint32_t ws_bad_messages; /* malformed control messages in a row */
    uint16_t ws_close_code;   /* when closing: the code to send (1001 at shutdown) */
    bool ws_close_sent;       /* WebSocket: the close frame is queued; nothing more is written */
    struct lg_buf ws_msg;     /* a WebSocket message being reassembled */
    struct lg_grant *grant;   /* its verified token (auth.h), NULL = none; conn_auth.c */
    char *cors;               /* CORS header lines for its answers (malloc'd), NULL = none */
    struct lg_heap_node expiry; /* in the worker's heap of streams whose token expires */
    struct lg_heap_node timer;  /* its deadline, in the worker's heap (worker_timers.c) */
    const char *ws_close_reason; /* with ws_close_code (a literal); NULL = "server shutting down" */
    struct lg_dlink conn_link;   /* the worker's list of every connection */
    struct lg_dlink dirty_link;  /* the worker's queue of connections given events to write */
    struct lg_dlink quiet_link;  /* heartbeat streams (SSE), in order of their last write */
    struct lg_dlink keepalive_link; /* WebSocket streams, in order of what was last heard */
    uint64_t ws_heard_ms;     /* WebSocket, monotonic: the peer's last frame, or our ping once
                                 ws_pinged (worker.c, send_pings) */
    bool ws_pinged;           /* WebSocket: pinged after ping_interval_ms of silence */
    struct lg_dlink backlog_link;/* the worker's connections holding events their socket did
                                    not take yet (checked against max_lag_ms each tick) */
    /* What the admin API and the access log line show (conn_report.c). */
    uint64_t id;              /* unique in the process, increasing in open order */
    int64_t opened_unix_ms;
    uint64_t opened_mono_ms;
    char peer[48];            /* the socket's peer address, read at open ("" = unknown) */
    const char *close_reason; /* static: "policy", "error", ...; NULL = decided at release */
};

/* How long a kicked or slow-disconnected client has to take its notice (SSE error event,
 * WebSocket close, a held poll's 409) before its socket is closed without it: a peer that
 * does not read must not keep its connection, its per-address slot and its place in the
 * client list. */
#define LG_END_NOTICE_MS 1000

/* ---- shared connection helpers (conn.c) ----------------------------------------------- */
void lg_conn_init(struct lg_conn *c, struct lws *wsi, struct lg_worker *w,
                  const struct lg_transport_ops *transport);
/* Count c against client (NULL: a trusted proxy's own connection, counted against nobody).
 * Return value: true, or false when client already holds limits.max_connections_per_address
 * connections (the caller refuses c: 429, or close 1008). */
bool lg_conn_claim_client(struct lg_conn *c, const struct lg_client_address *client);
void lg_conn_release(struct lg_conn *c);
/* Ask lws for a writable callback once (dedup while one is pending is lws' job). */
void lg_conn_want_write(struct lg_conn *c);
/* Queue a complete HTTP response (status line, JSON body) and close after it. For an SSE
 * subscription (c->sse_request) a retryable refusal (429, 503, ...) is answered in the form
 * an EventSource survives instead: 200 with a `refused` event (sse_refusal.h). */
void lg_conn_http_error(struct lg_conn *c, int status, const char *code, const char *message,
                        const char *extra_headers);
/* Write pending `out` bytes. Return value: 0 sent (or partially, lws keeps the rest), -1 fail. */
int lg_conn_flush_out(struct lg_conn *c);

/* c becomes a connection of another transport (counted in its clients gauge). */
void lg_conn_set_transport(struct lg_conn *c, const struct lg_transport_ops *transport);
/*
 * Events were queued for c, or bytes added to its `out` (a WebSocket ping), by the worker,
 * outside any lws callback: write them to the socket now through c->transport->write_events,
 * as many write_batch_bytes-sized writes as it takes without blocking. Only a write that does
 * not go out whole (lws keeps the rest and asks for POLLOUT) leaves events queued, so a
 * client's queue grows only while its own socket is full. Anything but plain event output
 * (closing, draining, a held poll's answer) goes through the writable callback.
 */
void lg_conn_write_now(struct lg_conn *c);
/* Periodic tick of a connection with queued events: apply max_lag_ms. */
void lg_conn_check_lag(struct lg_conn *c);
/* Begin a clean end (c->transport->drain): SSE retry hint, WS 1001, held polls answered. */
void lg_conn_drain(struct lg_conn *c);
/* An operator disconnects c, a client (lg_conn_is_client(): DELETE /v1/clients/{id}): SSE
 * gets an error event "kicked" with the reason, WebSocket a close 4001 with it, a held poll a
 * 409 answer; then it is closed. */
void lg_conn_kick(struct lg_conn *c, const char *reason);
/* c's end deadline (`ending`) passed with c still open: close its socket now, discarding what
 * the peer did not take (counted: clients_closed_unread; logged). */
void lg_conn_end_now(struct lg_conn *c);

/* ---- raw HTTP requests that subscribe (SSE, long-poll) ------------------------------------ */
/* Parse the query of req (cursor_param: "last_event_id", which the Last-Event-ID header also
 * sets, or "since") into p. Return value: 0, or -1 after queueing the 400 answer. */
int lg_conn_http_params(struct lg_conn *c, const char *buf, const struct lg_http_request *req,
                        const char *cursor_param, struct lg_subscribe_params *p);
/* Subscribe c->sub to every topic of p. Return value: 0, or -1 after queueing the error answer
 * (503 when a topic cannot be created, 400 invalid_cursor: then nothing stays subscribed). */
int lg_conn_http_subscribe(struct lg_conn *c, const struct lg_subscribe_params *p, bool listen,
                           size_t max_replay);

#endif
