/*
 * conn.h - the connection base: what every public-port connection has, whatever its transport
 * (its socket, its worker's side, its table, its subscriber, its output buffer, its places in
 * the worker's lists and what it reports), and the helpers every transport uses (conn.c). What a
 * transport does and keeps of its own is in its table (transport.h) and in its state, the
 * bytes at the end of the connection that only its file reads (lg_conn_state()).
 *
 * DESIGN
 * The worker drives connections through this base and their tables only, and the base reaches
 * the worker only through struct lg_conn_home, the part of the worker its connections share
 * (data, and two callbacks the worker fills). So the calls in public/ form a tree: worker ->
 * transports (through their tables, and lws' protocol callbacks) -> this base.
 *
 * Owns:    its subscriber (subscriptions and queued events), a buffer of response bytes not yet
 *          written, its token's grant, and, on raw HTTP connections, the next request's head
 *          buffer and the CORS lines of its answers; what its transport's state owns (its
 *          table's release()).
 * Frees:   lg_conn_release(), called exactly once from the lws close path
 *          (LWS_CALLBACK_RAW_CLOSE / LWS_CALLBACK_CLOSED, or WSI_DESTROY if neither ran).
 *          The struct itself is lws' per-session data: lws frees it after the close callbacks.
 *          The home is the worker's and outlives every connection of it.
 * Threads: its worker thread only (the home's drain_requested is also set by the app thread).
 * Bounds:  `out` holds at most one response (head + a long-poll batch, a static file, or
 *          WebSocket control replies, limited by websocket.max_message_bytes per reply and
 *          16 replies); the request buffer is limits.max_request_head_bytes; a transport's
 *          state is at most lg_transport_state_max() bytes.
 */
#ifndef LG_CONN_H
#define LG_CONN_H

#include <libwebsockets.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "client_address.h"
#include "conn_report.h"
#include "dlist.h"
#include "encode.h"
#include "http_request.h"
#include "http_response.h"
#include "live_limits.h"
#include "min_heap.h"
#include "rate.h"
#include "send_batch.h"
#include "subscriber.h"
#include "transport.h"
#include "ws_deflate.h"

struct lg_auth;
struct lg_client_addresses;
struct lg_config;
struct lg_grant;
struct lg_hooks;
struct lg_hook_wait;
struct lg_hub;
struct lg_subscribe_params;

/* What a WebSocket upgrade brings to its connection once lws has established it. */
struct lg_ws_upgrade {
    char *query;                        /* the raw query string; NULL = none in flight */
    char *token;                        /* its token (conn_auth.h), NULL = none */
    struct lg_client_address client;
    bool counted;
    struct lg_client_address peer;      /* the socket's peer (accept4) */
    bool peer_known;                    /* false: not IP */
    /* permessage-deflate (ws_compression.h) */
    uint8_t deflate_offers;             /* offers lws asked about so far */
    int8_t deflate_offer;               /* the one to accept, -1 none (set at the first) */
    bool deflate;                       /* negotiated */
};

/*
 * The part of a worker its connections share, embedded in the worker (worker_internal.h).
 * Every field is the worker thread's but drain_requested, which the app thread sets.
 */
struct lg_conn_home {
    const struct lg_config *cfg;
    const struct lg_live_limits *live;  /* the limits a reload changes (live_limits.h) */
    struct lg_hub *hub;
    uint32_t index;                     /* the worker's: its slot in every topic and the stats */
    const char *static_dir;             /* resolved absolute directory of static files */
    const struct lg_auth *auth;         /* the token verifier, shared by every worker */
    struct lg_hooks *hooks;             /* the backend hooks (hooks.h), NULL = none */
    struct lg_client_addresses *clients;/* connections per client address, every worker's */
    _Atomic bool drain_requested;       /* set by the app thread */
    bool draining;                      /* the worker has begun draining */
    struct lg_buf scratch;              /* one coalesced write, LWS_PRE headroom first */
    struct lg_dlist conns;              /* every connection, in open order */
    struct lg_dlist dirty;              /* connections given events, in the order to write them */
    struct lg_dlist backlogged;         /* connections whose socket has not taken their queue */
    struct lg_dlist keepalive[LG_TRANSPORT_MAX]; /* per transport (lg_transport_index()): its
                                                   keep-alive order, least recent first */
    struct lg_min_heap expiring;        /* streams by their token's expiry */
    struct lg_min_heap deadlines;       /* connections by their deadline */
    /* The earliest deadline may have moved: the worker re-aims its one lws timer at it. */
    void (*deadlines_moved)(struct lg_conn_home *home);
    /* The control port's turn: the worker serves the publishers waiting on its loop. Called
     * every LG_CALLBACKS_PER_CONTROL_TURN connection callbacks (lg_conn_callback_done()), so
     * a loop pass of thousands of subscriber requests (a long-poll cycle, a reconnect storm)
     * does not keep a publisher waiting for all of them: its events join the answers sooner. */
    void (*control_turn)(struct lg_conn_home *home);
    uint32_t callbacks_since_control_turn;
    struct lg_ws_upgrade *ws_upgrades;  /* [fd]: a WebSocket upgrade handed to lws, not yet
                                           established */
    size_t ws_upgrades_cap;
    struct lg_ws_deflater ws_deflater;  /* compresses events for permessage-deflate; not
                                           ready when websocket.compression is off */
    struct lg_send_batch send_batch;    /* the sweep's writes, one submission per batch
                                           (batched_writes; off: one send() each) */
};

/* A request head being read on a keep-alive connection. */
struct lg_rx {
    struct lg_http_request req;
    uint32_t len;
    bool timed;       /* the request timer runs for the head at buf[0] */
    bool serving;     /* the head at buf[0] is being served (transport_http.c) ... */
    bool answered;    /* ... and its answer went out whole meanwhile */
    char buf[];       /* limits.max_request_head_bytes */
};

/* What a raw HTTP connection keeps from one request to the next. */
struct lg_exchange {
    struct lg_rx *rx;         /* the next request head, allocated on demand */
    char *cors;               /* CORS header lines for its answers (malloc'd), NULL = none */
    bool keep_alive;          /* after `out` is sent, read the next request */
    bool sse_request;         /* its request is GET /sse: a retryable refusal is an SSE event
                                 (sse_refusal.h) */
};

/* Its places in the worker's lists and heaps (the home's). */
struct lg_conn_links {
    struct lg_dlink all;          /* home->conns */
    struct lg_dlink dirty;        /* home->dirty */
    struct lg_dlink backlog;      /* home->backlogged */
    struct lg_dlink keepalive;    /* home->keepalive[its transport] */
    struct lg_heap_node expiry;   /* home->expiring */
    struct lg_heap_node deadline; /* home->deadlines */
};

struct lg_conn {
    struct lws *wsi;
    struct lg_conn_home *home;
    /* What it is now: NULL until set up (lws allocated it), &lg_transport_http for plain
     * answers and between keep-alive requests, then a stream's or a held poll's table. */
    const struct lg_transport *transport;
    bool released;            /* lg_conn_release() ran */
    bool closing;             /* send what is in `out`, then close */
    bool ending;              /* kicked or slow-disconnected: closed hard at its deadline
                                 (LG_END_NOTICE_MS) if the notice has not gone out by then */
    bool draining;            /* at shutdown: send what is queued, then end cleanly */
    struct lg_subscriber sub; /* SSE, WS, POLL */
    struct lg_buf out;        /* bytes to send before any event (heads, replies) */
    struct lg_exchange http;  /* raw connections */
    struct lg_grant *grant;   /* its verified token (auth.h), NULL = none; conn_auth.c */
    struct lg_hook_wait *hook_wait; /* a subscribe waiting for the backend (conn_hook.h) */
    struct lg_rate topic_creations; /* new topics it may create (limits.topic_creations_per_s) */
    struct lg_conn_links links;
    struct lg_conn_report report;
    /* Its transport's own state: transport->state_size bytes, zeroed when it takes that
     * transport. lws allocates lg_conn_size() bytes per connection. */
    alignas(max_align_t) unsigned char state[];
};

/* The bytes lws must allocate per connection: the base and the largest transport state. */
size_t lg_conn_size(void);

/* c's transport state, as the transport's file declares it. */
#define lg_conn_state(c, type) ((type *)(void *)(c)->state)

/* How long a kicked or slow-disconnected client has to take its notice (SSE error event,
 * WebSocket close, a held poll's 409) before its socket is closed without it: a peer that
 * does not read must not keep its connection, its per-address slot and its place in the
 * client list. */
#define LG_END_NOTICE_MS 1000

/* ---- the home ---------------------------------------------------------------------------- */
/* Set up home's lists and its batched send (home->cfg set; the rest is the worker's to fill);
 * release what they hold. Return value: 0, or -errno when batched_writes is on and the
 * kernel refused its io_uring (the home writes each socket itself). */
int lg_conn_home_init(struct lg_conn_home *home);
void lg_conn_home_release(struct lg_conn_home *home);
/* Whether the worker drains: no new request is served (the app's request counts at once). */
bool lg_conn_home_draining(const struct lg_conn_home *home);
/* The home's scratch buffer for one coalesced write: LWS_PRE bytes of headroom are kept. */
struct lg_buf *lg_conn_scratch(struct lg_conn_home *home);

/* Connection callbacks (requests read, answers written) between two turns of the control port
 * on the worker's loop: about as many as the worker writes between two looks at its inbox. */
#define LG_CALLBACKS_PER_CONTROL_TURN 32

/* A transport's lws callback for one of home's connections is over: count it toward the
 * control port's next turn (home->control_turn). Call it when the callback no longer touches
 * its connection: the turn may publish, which only schedules work on this loop. */
void lg_conn_callback_done(struct lg_conn_home *home);

/* ---- shared connection helpers (conn.c) ----------------------------------------------- */
/* peer: the socket's peer address from accept4() (NULL: not IP), kept as text for reports. */
void lg_conn_init(struct lg_conn *c, struct lws *wsi, struct lg_conn_home *home,
                  const struct lg_transport *transport, const struct lg_client_address *peer);
/* Count c against client (NULL: a trusted proxy's own connection, counted against nobody).
 * Return value: true, or false when client already holds limits.max_connections_per_address
 * connections (the caller refuses c: 429, or close 1008). */
bool lg_conn_claim_client(struct lg_conn *c, const struct lg_client_address *client);
void lg_conn_release(struct lg_conn *c);
/* Ask lws for a writable callback once (dedup while one is pending is lws' job). */
void lg_conn_want_write(struct lg_conn *c);
/* Queue a complete HTTP response (status line, JSON body) and close after it. For an SSE
 * subscription (c->http.sse_request) a retryable refusal (429, 503, ...) is answered in the
 * form an EventSource survives instead: 200 with a `refused` event (sse_refusal.h). */
void lg_conn_http_error(struct lg_conn *c, int status, const char *code, const char *message,
                        const char *extra_headers);
/* Write pending `out` bytes. Return value: 0 sent (or partially, lws keeps the rest), -1 fail. */
int lg_conn_flush_out(struct lg_conn *c);

/* c becomes a connection of another transport (counted in its clients gauge); its state is
 * the new transport's, zeroed. */
void lg_conn_set_transport(struct lg_conn *c, const struct lg_transport *transport);
/*
 * Events were queued for c, or bytes added to its `out` (a WebSocket ping), by the worker,
 * outside any lws callback: write them to the socket now through c->transport->write_events,
 * as many write_batch_bytes-sized writes as it takes without blocking. Only a write that does
 * not go out whole (lws keeps the rest and asks for POLLOUT) leaves events queued, so a
 * client's queue grows only while its own socket is full. Anything but plain event output
 * (closing, draining, a held poll's answer) goes through the writable callback.
 */
void lg_conn_write_now(struct lg_conn *c);
/*
 * The same from the sweep, through the home's batched send (send_batch.h) where it is on and
 * c qualifies for a direct write: c's next batch (c->transport->render_batch) joins the batch,
 * and its socket is written with the others at lg_conn_flush_batch(). What the socket does not
 * take then goes to lws, which keeps it and asks for POLLOUT, exactly as after a partial
 * write_events. Anything else is lg_conn_write_now(). The caller flushes before the loop runs
 * again (c is not written otherwise in between, so the order of its bytes holds).
 */
void lg_conn_write_batched(struct lg_conn *c);
/* Write the batch made by lg_conn_write_batched() (nothing when it is empty). */
void lg_conn_flush_batch(struct lg_conn_home *home);

/* c's answer is in c->out (a long-poll's batch): hand it to the socket now unless lws still
 * holds earlier bytes; when it all went out, c's transport goes on at once (its answered()),
 * else the writable callback does. Saves a long-poll cycle the second POLLOUT round (the one
 * that learned the answer was out). Return value: 0, or -1 if the socket failed. */
int lg_conn_send_answer(struct lg_conn *c);
/* Periodic tick of a connection with queued events: apply max_lag_ms. */
void lg_conn_check_lag(struct lg_conn *c);
/* After a write: whether c still holds queued events (its socket is full): the worker's
 * backlogged list, lag-checked each tick. */
void lg_conn_note_backlog(struct lg_conn *c);
/* Begin a clean end (c->transport->drain): SSE retry hint, WS 1001, held polls answered. */
void lg_conn_drain(struct lg_conn *c, const struct lg_drain *how);
/* An operator disconnects c, a client (lg_conn_is_client(): DELETE /v1/clients/{id}): its
 * transport's notice (SSE error event "kicked", WebSocket close 4001, a held poll's 409);
 * then it is closed. */
void lg_conn_kick(struct lg_conn *c, const char *reason);
/* A stream's kick (SSE, WebSocket): its subscriber renders the notice, then the close. */
void lg_conn_kick_stream(struct lg_conn *c, const char *reason);
/* c's notice must go out within LG_END_NOTICE_MS, or its socket is closed (lg_conn_end_now). */
void lg_conn_arm_end(struct lg_conn *c);
/* c's end deadline (`ending`) passed with c still open: close its socket now, discarding what
 * the peer did not take (counted: clients_closed_unread; logged). */
void lg_conn_end_now(struct lg_conn *c);
/* Close c at lws' next pass (outside its callbacks, or for a socket that failed). */
void lg_conn_close_soon(struct lg_conn *c);

/* ---- deadlines and keep-alive orders (the home's heap and lists) -------------------------- */
/* c's deadline, ms from now (a later call moves it); the worker then calls lg_conn_deadline(). */
void lg_conn_deadline_in(struct lg_conn *c, uint32_t ms);
void lg_conn_deadline_cancel(struct lg_conn *c);
/* c's deadline passed: its end deadline if it is ending, else its transport's timer. */
void lg_conn_deadline(struct lg_conn *c);
/* c's token expires at unix_ms: the worker's tick calls c->transport->timer then.
 * Return value: 0, or -1 when out of memory (then not watched). */
int lg_conn_expires_at(struct lg_conn *c, int64_t unix_ms);
/* c did what its transport's keep-alive counts (an SSE write, a WebSocket frame heard): it
 * goes to the end of its transport's keep-alive order (the first call puts it there). */
void lg_conn_keepalive_reset(struct lg_conn *c);

/* ---- raw HTTP requests -------------------------------------------------------------------- */
/* Buffer bytes of c's next request(s) (c->http.rx, allocated on demand). Bytes past
 * limits.max_request_head_bytes are refused with 431 after the answers already owed.
 * Return value: true when they were buffered. */
bool lg_conn_take_input(struct lg_conn *c, const char *in, size_t len);
/* Parse the query of req (cursor_param: "last_event_id", which the Last-Event-ID header also
 * sets, or "since") into p. Return value: 0, or -1 after queueing the 400 answer. */
int lg_conn_http_params(struct lg_conn *c, const char *buf, const struct lg_http_request *req,
                        const char *cursor_param, struct lg_subscribe_params *p);
/* Subscribe c->sub to every topic of p. Return value: 0, or -1 after queueing the error answer
 * (503 when a topic cannot be created, 400 invalid_cursor: then nothing stays subscribed). */
int lg_conn_http_subscribe(struct lg_conn *c, const struct lg_subscribe_params *p, bool listen,
                           size_t max_replay);

#endif
