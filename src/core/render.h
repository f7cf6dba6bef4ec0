/*
 * render.h - what a subscriber renders through: one const table of functions per wire format
 * (SSE frames, long-poll JSON batches, WebSocket text frames), after Nchan's subscriber
 * functions. The subscriber (subscriber.c) renders what it owes through its table; the tables
 * are filled by public/'s transports (transport.h there), each in its own file, which is where
 * every wire format lives. Nothing here knows a connection.
 *
 * Owns:    nothing. The tables are const and static; subscribers borrow a pointer to one for
 *          their lifetime.
 * Frees:   nothing to free.
 * Threads: any thread may read a table. The functions run on the worker thread that owns the
 *          subscriber they are given; they touch only `out` and read only what they are given.
 * Bounds:  a render function appends one item (an event or a notice) or a batch's framing; the
 *          caller decides how many items (write_batch_bytes, poll.max_batch). Events are
 *          rendered from the wire forms precomputed in struct lg_event: no per-event formatting
 *          beyond an SSE "id:" line when a stream has several topics.
 */
#ifndef LG_RENDER_H
#define LG_RENDER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct lg_buf;
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
 * included. Shared by every wire format (render.c). */
void lg_notice_json_fields(struct lg_buf *out, const struct lg_notice *n);

struct lg_render_ops {
    const char *name;              /* in log lines: "SSE", "WebSocket", "long-poll" */
    _Atomic uint64_t *delivered;   /* the lg_stats counter of events written to it, or NULL */
    /* Bytes ev takes on this wire (checked against the batch budget before it is rendered). */
    size_t (*event_bytes)(const struct lg_event *ev);
    void (*render_begin)(struct lg_buf *out);                               /* NULL: none */
    /* item: how many items this batch already holds (long-poll separates them with commas). */
    void (*render_notice)(struct lg_buf *out, const struct lg_subscriber *s,
                          const struct lg_notice *n, size_t item);
    void (*render_event)(struct lg_buf *out, const struct lg_subscriber *s,
                         const struct lg_event *ev, size_t item);
    /* ev's delta form (ev->delta_frame), for a client that has the event before it; NULL:
     * this wire sends every event whole. */
    void (*render_delta)(struct lg_buf *out, const struct lg_subscriber *s,
                         const struct lg_event *ev, size_t item);
    void (*render_end)(struct lg_buf *out, const struct lg_subscriber *s);  /* NULL: none */
    /* The slow-consumer disconnect, written before the close; NULL: the close says it. */
    void (*render_slow)(struct lg_buf *out, const char *code, const char *reason,
                        uint32_t retry_ms); /* code: "slow_consumer", or "kicked" (admin) */
};

#endif
