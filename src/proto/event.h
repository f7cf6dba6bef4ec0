/*
 * event.h - one published event: immutable, refcounted, encoded once for every transport.
 *
 * Owns:    the event's fields and its wire forms (SSE frame, WebSocket frame, JSON object),
 *          all in one allocation made at publish time.
 * Frees:   the last lg_event_unref() frees it. References are counted with an ATOMIC counter
 *          because an event is shared by the hub's history, every worker's inbox and every
 *          client queue, on different threads. Vocabulary (jansson's): a function returns a
 *          "new" reference the caller must unref, or a "borrowed" one it must not.
 * Threads: any thread may read an event it holds a reference to; nothing writes after create
 *          but the refcount and ws_compressed, which is set once (compare-and-swap from NULL).
 * Bounds:  an event's size is bounded by limits.max_event_bytes (checked by the publisher);
 *          the bytes of all live events are counted in accounting.h, which the hub
 *          compares with limits.max_retained_bytes before it accepts a publish.
 * Deltas:  an event of a document topic (topic_rules "document") may carry one more wire form,
 *          the delta message that rebuilds its JSON object from the previous event's (seq - 1,
 *          same epoch): computed once, when the event is made, by whoever holds that previous
 *          event (the store), and kept only when its frame is shorter than the full one.
 */
#ifndef LG_EVENT_H
#define LG_EVENT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* An event's WebSocket message compressed for permessage-deflate (ws_deflate.h). */
struct lg_ws_compressed {
    size_t size;            /* bytes this allocation accounts for */
    size_t frame_len;       /* 0: compressed it is no smaller, so the plain frame goes */
    unsigned char frame[];  /* a final text frame, RSV1 set */
};

struct lg_event {
    _Atomic uint32_t refcount;
    uint32_t epoch;             /* the topic's epoch when published (beside the refcount: no
                                   padding between them) */
    const void *topic_identity; /* which topic this is an event of, as its creator names it
                                   (the hub: its struct lg_topic *): only compared, to tell a
                                   multi-topic client's events apart, never followed; whoever
                                   needs the topic holds it (an inbox entry, a subscription) */
    const char *topic_name;     /* NUL-terminated copy inside this event */
    uint64_t seq;               /* per-topic sequence number, 1-based, no holes at publish */
    const char *id;             /* "<topic>@<epoch>:<seq>", NUL-terminated */
    size_t id_len;
    const char *type;           /* event type, "message" by default */
    const char *key;            /* conflation key, or NULL */
    const char *idempotency_key;/* the publisher's retry key, or NULL */
    const char *data;           /* the body as published (JSON re-encoded compactly) */
    size_t data_len;
    bool data_is_json;
    uint16_t tags_offset;       /* the canonical tags text (tags.h) is storage + this, */
    uint16_t tags_len;          /* ... this long (0: no tags); lg_event_tags(). Both sit in
                                   the padding after the bool: tags cost an event no field */
    int64_t published_unix_ms;  /* wall clock, for display only */
    uint64_t published_mono_ns; /* monotonic, for lag and latency */

    /* Wire forms, all pointing into storage[]. */
    const char *sse;            /* "id: <id>\nevent: <type>\ndata: ...\n\n" */
    size_t sse_len;
    size_t sse_body_offset;     /* sse + this = the frame without its "id:" line */
    const char *ws_frame;       /* complete unmasked WebSocket text frame of `json` */
    size_t ws_frame_len;
    const char *json;           /* {"type":"event","v":1,...}: WS payload and long-poll item */
    size_t json_len;
    /* Document topics only, else NULL: the WebSocket text frame of the delta message
     * {"type":"delta","v":1,"topic":..,"id":..,"delta":"<Fossil delta>"} whose delta turns the
     * previous event's `json` (seq - 1) into this one's (docs/protocol.md, "Deltas"). */
    const char *delta_frame;
    size_t delta_frame_len;

    /* The compressed form, set once by the first worker that needs it (ws_deflate.h) and
     * freed with the event: the one field written after create. */
    _Atomic(struct lg_ws_compressed *) ws_compressed;

    size_t size;                /* bytes this event accounts for (allocation size) */
    char storage[];
};

struct lg_event_fields {
    const void *topic_identity;
    const char *topic_name;
    size_t topic_name_len;
    uint32_t epoch;
    uint64_t seq;
    const char *type;     /* NULL = "message" */
    size_t type_len;
    const char *key;      /* NULL = no key */
    size_t key_len;
    const char *idempotency_key; /* NULL = none */
    size_t idempotency_key_len;
    const char *tags;     /* canonical tags text (tags.h); NULL = no tags */
    size_t tags_len;
    const char *data;     /* must be valid UTF-8; JSON text when data_is_json */
    size_t data_len;
    bool data_is_json;
    int64_t published_unix_ms;
    uint64_t published_mono_ns;
    /* borrowed: the topic's previous event (epoch, seq - 1) when the topic is a document
     * topic, to make the delta frame against; NULL = none */
    const struct lg_event *delta_base;
};

/* The bytes lg_event_create(f) allocates and accounts (its event->size), counted without
 * encoding: what admission compares with limits.max_retained_bytes before the event exists.
 * A delta frame is not counted here (its size is known once encoded); it is shorter than the
 * event's full frame, so an event of a document topic accounts less than twice this. */
size_t lg_event_size(const struct lg_event_fields *f);

/* Encode and allocate an event. Returns a new reference (count 1), or NULL on OOM. */
struct lg_event *lg_event_create(const struct lg_event_fields *f);

/* The event's canonical tags text (tags_len bytes, NUL-terminated), or NULL without tags:
 * what filters match. */
static inline const char *lg_event_tags(const struct lg_event *ev)
{
    return ev->tags_len ? ev->storage + ev->tags_offset : NULL;
}

/* Take n more references. ev must already hold one (asserted). Returns ev. */
static inline struct lg_event *lg_event_ref_n(struct lg_event *ev, uint32_t n)
{
    uint32_t before = atomic_fetch_add_explicit(&ev->refcount, n, memory_order_relaxed);
    (void)before;
#ifndef NDEBUG
    if (before == 0)
        __builtin_trap();
#endif
    return ev;
}

/* Take another reference. ev must already hold one (asserted). Returns ev. */
static inline struct lg_event *lg_event_ref(struct lg_event *ev)
{
    return lg_event_ref_n(ev, 1);
}

/* Drop the reference *evp and clear the caller's pointer; frees on the last one. */
void lg_event_unref(struct lg_event **evp);

/*
 * References to one event handed out in a run (one event offered to many subscribers), paid
 * for in blocks: one atomic add per LG_EVENT_REF_BLOCK references instead of one each, since
 * a locked add per delivery is a full barrier that waits for every store before it. The
 * count is raised before a prepaid reference is handed out, so it never understates the
 * holders; lg_event_ref_run_end() gives back what was not handed out. The run's thread must
 * hold a reference of its own from begin to end (an inbox entry's, say).
 */
#define LG_EVENT_REF_BLOCK 64u

struct lg_event_ref_run {
    struct lg_event *ev;
    uint32_t prepaid; /* counted in ev->refcount, not handed out yet */
};

static inline struct lg_event_ref_run lg_event_ref_run_begin(struct lg_event *ev)
{
    return (struct lg_event_ref_run){.ev = ev, .prepaid = 0};
}

/* A new reference to run->ev. */
static inline struct lg_event *lg_event_ref_from_run(struct lg_event_ref_run *run)
{
    if (run->prepaid == 0) {
        lg_event_ref_n(run->ev, LG_EVENT_REF_BLOCK);
        run->prepaid = LG_EVENT_REF_BLOCK;
    }
    run->prepaid--;
    return run->ev;
}

/* Give back the references paid for and not handed out. */
static inline void lg_event_ref_run_end(struct lg_event_ref_run *run)
{
    if (run->prepaid)
        atomic_fetch_sub_explicit(&run->ev->refcount, run->prepaid, memory_order_relaxed);
    run->prepaid = 0;
}

#endif
