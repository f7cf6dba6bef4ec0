/*
 * publish_parse.h - the control port's publish bodies as pure functions: bytes in, publish
 * requests (hub.h) or one refusal (control_error.h) out. No MHD, no hub, no I/O, so unit tests
 * and fuzzers reach every validation rule directly.
 *
 *   POST /v1/topics/{topic}/events   lg_parse_event(): the path segment, ?type=, ?key=, ?tags=, the
 *                                    Idempotency-Key and Content-Type headers, and the body
 *                                    (UTF-8 text, or JSON made compact: json_text.h).
 *   POST /v1/publish                 lg_parse_batch(): a JSON array of items or NDJSON (one
 *                                    item per non-blank line); every item is validated before
 *                                    anything is published.
 *
 * Owns:    what the parsed structs hold: decoded topic/type/key buffers, compact JSON texts,
 *          the batch's yajl trees. Requests point into these and into the caller's input.
 * Frees:   lg_parsed_event_release() / lg_parsed_batch_release(), also after a failed parse.
 *          The input (body, header values) is borrowed and must outlive the parsed struct.
 * Threads: any; no shared state. A parsed struct must not be moved (requests point into it).
 * Bounds:  topic names LG_TOPIC_NAME_MAX bytes, event types LG_CTL_TYPE_MAX, keys and ids
 *          LG_CTL_KEY_MAX; tags LG_TAGS_MAX pairs (tags.h); data max_event_bytes (as compact
 *          JSON for JSON data). The body size itself is bounded by the caller
 *          (limits.max_event_bytes / max_batch_bytes).
 */
#ifndef LG_PUBLISH_PARSE_H
#define LG_PUBLISH_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "control_error.h"
#include "hub.h"
#include "json_text.h"
#include "tags.h"
#include "topic_name.h"

#define LG_CTL_TYPE_MAX 64  /* event type: 1..64 bytes of [A-Za-z0-9_.:/-] */
#define LG_CTL_KEY_MAX 256  /* conflation key and batch item id: 1..256 bytes of UTF-8 */


/* A query parameter as it arrived (percent-encoded). */
struct lg_raw_value {
    const char *text;
    size_t len;
    bool present;
};

/* What a single publish request carries. */
struct lg_event_input {
    const char *topic_segment;  /* the {topic} path segment, percent-encoded */
    size_t topic_segment_len;
    struct lg_raw_value type;   /* ?type= */
    struct lg_raw_value key;    /* ?key= (conflation key) */
    struct lg_raw_value tags;   /* ?tags=key:value,... (tags.h) */
    const char *idempotency_key; /* Idempotency-Key header (NUL-terminated), or NULL */
    const char *content_type;    /* Content-Type header (NUL-terminated), or NULL */
    const char *body;            /* body bytes (need not be NUL-terminated), or NULL */
    size_t body_len;
};

struct lg_parsed_event {
    struct lg_publish_req req; /* points into the buffers below and into the input */
    char topic[LG_TOPIC_NAME_MAX + 1];
    char type[LG_CTL_TYPE_MAX + 1];
    char key[LG_CTL_KEY_MAX + 1];
    char tags[LG_TAGS_TEXT_MAX + 1]; /* canonical tags text */
    char *json_text;           /* malloc'd compact JSON of a JSON body, else NULL */
};

struct lg_parsed_batch {
    yajl_val *roots;             /* root_count owned trees: the array, or one per NDJSON line */
    size_t root_count;
    yajl_val *items;             /* n item values, in order, borrowed from roots */
    size_t n;                    /* items */
    struct lg_publish_req *reqs; /* n requests pointing into items and texts */
    char **texts;                /* n compact JSON data texts (NULL where data is a string) */
    char **tags;                 /* n canonical tags texts (NULL where an item has none) */
};

/* Return value: 0 with out->req ready to publish, or -1 with e filled. Release out either way. */
int lg_parse_event(const struct lg_event_input *in, uint32_t max_event_bytes,
                   struct lg_parsed_event *out, struct lg_ctl_error *e);
void lg_parsed_event_release(struct lg_parsed_event *ev);

/* body[0..len) need not be NUL-terminated. Return value: 0 with b->reqs[0..n) ready, or -1
 * with e filled (e->index = the item at fault, when one is). Release b either way. */
int lg_parse_batch(const char *body, size_t len, uint32_t max_event_bytes,
                   struct lg_parsed_batch *b, struct lg_ctl_error *e);
void lg_parsed_batch_release(struct lg_parsed_batch *b);

#endif
