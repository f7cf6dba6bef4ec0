/*
 * transport.h - the transport table: one const struct of functions per way a client is served
 * (SSE, long-poll, WebSocket, plain HTTP answers), after lws' protocol tables and Nchan's
 * subscriber functions. The subscriber renders what it owes through its table and the worker,
 * conn.c and the lws role callbacks drive a connection through its table: nobody else knows
 * which transport a client uses, and every wire format lives in that transport's file.
 *
 *   table                 file              renders                    connection
 *   lg_transport_sse      transport_sse.c   SSE frames                 event stream (RAW role)
 *   lg_transport_poll     transport_poll.c  one JSON batch per answer  held poll (RAW role)
 *   lg_transport_ws       transport_ws.c    WebSocket text frames      lws ws role
 *   lg_transport_http     transport_http.c  nothing (no subscriber)    static files, errors,
 *                                                                      keep-alive between requests
 *
 * Owns:    nothing. The tables are const and static (one per transport file); subscribers and
 *          connections borrow a pointer to one for their lifetime (a raw connection switches
 *          between lg_transport_http and a stream or poll table as it serves requests).
 * Frees:   nothing to free.
 * Threads: any thread may read a table. The functions run on the worker thread that owns the
 *          subscriber or connection they are given; render functions touch only `out` and read
 *          only what they are given.
 * Bounds:  a render function appends one item (an event or a notice) or a batch's framing; the
 *          caller decides how many items (write_batch_bytes, poll.max_batch). Events are
 *          rendered from the wire forms precomputed in struct lg_event: no per-event formatting
 *          beyond an SSE "id:" line when a stream has several topics.
 */
#ifndef LG_TRANSPORT_H
#define LG_TRANSPORT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct lg_buf;
struct lg_conn;
struct lg_event;
struct lg_subscriber;

/* A gap or reset notice owed to a client, as the subscriber settled it (transport-neutral). */
struct lg_notice {
    bool reset;              /* reset: the topic's epoch changed; else gap: events were lost */
    bool end;                /* end: the topic was deleted (admin API); the client is
                                unsubscribed from it (reset is false) */
    const char *topic;       /* borrowed topic name */
    size_t topic_len;
    uint32_t epoch;
    uint64_t from, to;       /* gap: the first and last seq lost */
    uint64_t seq;            /* the position after the notice: its id is topic@epoch:seq */
};

/* The notice's JSON members after the opening brace and any "type"/"v" members:
 * "topic":"t","from":F,"to":T,"id":"..."} (or "epoch":"xxxxxxxx" for a reset), closing brace
 * included. Shared by every transport (transport.c). */
void lg_notice_json_fields(struct lg_buf *out, const struct lg_notice *n);

struct lg_transport_ops {
    const char *name;              /* in log lines: "SSE", "WebSocket", "long-poll", "HTTP" */
    _Atomic int64_t *clients;      /* the lg_stats gauge counting these connections, or NULL */
    _Atomic uint64_t *delivered;   /* the lg_stats counter of events written to them, or NULL */
    bool stream;                   /* events are written as they arrive (SSE, WebSocket): queues
                                      are written straight from the sweep and lag-checked */
    bool heartbeat;                /* quiet connections get a heartbeat (the worker's quiet list) */

    /* ---- Rendering, called by subscriber.c (NULL where the transport has no subscriber) ---- */
    /* Bytes ev takes on this wire (checked against the batch budget before it is rendered). */
    size_t (*event_bytes)(const struct lg_event *ev);
    void (*render_begin)(struct lg_buf *out);                               /* NULL: none */
    /* item: how many items this batch already holds (long-poll separates them with commas). */
    void (*render_notice)(struct lg_buf *out, const struct lg_subscriber *s,
                          const struct lg_notice *n, size_t item);
    void (*render_event)(struct lg_buf *out, const struct lg_subscriber *s,
                         const struct lg_event *ev, size_t item);
    void (*render_end)(struct lg_buf *out, const struct lg_subscriber *s);  /* NULL: none */
    /* The slow-consumer disconnect, written before the close; NULL: the close says it. */
    void (*render_slow)(struct lg_buf *out, const char *code, const char *reason,
                        uint32_t retry_ms); /* code: "slow_consumer", or "kicked" (admin) */

    /* ---- Connection, called by conn.c, the worker and the lws role callbacks ---- */
    /* stream: write queued events now (outside any lws callback), as many write_batch_bytes
     * writes as the socket takes without blocking. Return value: 0, or -1 if the socket failed. */
    int (*write_events)(struct lg_conn *c);
    /* lws says the socket can take more (raw connections: after their pending `out` is sent).
     * Return value: 0, or -1 to close. NULL: nothing more to send. */
    int (*writable)(struct lg_conn *c);
    void (*timer)(struct lg_conn *c);  /* the lws timer of c fired (a held poll's deadline) */
    void (*drain)(struct lg_conn *c);  /* shutdown: begin a clean end of c */
};

extern const struct lg_transport_ops lg_transport_sse;
extern const struct lg_transport_ops lg_transport_poll;
extern const struct lg_transport_ops lg_transport_ws;
extern const struct lg_transport_ops lg_transport_http;

#endif
