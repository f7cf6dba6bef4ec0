/*
 * ws_message.h - the control messages a WebSocket client sends (docs/protocol.md,
 * "WebSocket"): {"op":"subscribe","topics":[...],"since":"...","rewind":N}, {"op":"unsubscribe",
 * "topics":[...]}, {"op":"ping"}, {"op":"auth"|"refresh","token":"..."} (docs/security.md), and
 * {"op":"publish","topic":"...","data":...,"type","key","idempotency_key","ref"} (a client's
 * publish, ws_publish.h). Parsed and checked here as a pure function, so a fuzzer
 * reaches it; transport_ws.c applies the result to the live connection.
 *
 * Owns:    a parsed message holds a reference to its JSON document (unsubscribe topics and a
 *          publish's strings are borrowed from it) and a publish's JSON data as compact text
 *          (json_text.h: numbers and key order as sent); the subscribe parameters are written
 *          to the caller's struct.
 * Frees:   lg_ws_message_release() drops the document; call it after any parse, successful
 *          or not.
 * Threads: any; no state.
 * Bounds:  a subscribe names at most the caller's max_topics topics (each checked as in
 *          subscribe_params.h); the text itself is bounded by websocket.max_message_bytes
 *          before it gets here.
 */
#ifndef LG_WS_MESSAGE_H
#define LG_WS_MESSAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "subscribe_params.h"

enum lg_ws_op {
    LG_WS_OP_SUBSCRIBE,
    LG_WS_OP_UNSUBSCRIBE,
    LG_WS_OP_PING,
    LG_WS_OP_AUTH,
    LG_WS_OP_PUBLISH,
};

#define LG_WS_REF_MAX 64      /* a publish's "ref": a string of at most this many bytes */
#define LG_WS_TYPE_MAX 64     /* an event type: 1..64 bytes of A-Z a-z 0-9 _ . : / - */
#define LG_WS_KEY_MAX 256     /* a conflation or idempotency key: 1..256 bytes of UTF-8 */

/* A publish op: strings borrowed from the document, except JSON data (data_text). */
struct lg_ws_publish {
    const char *topic;         /* checked against the topic grammar; never '$...' */
    size_t topic_len;
    const char *data;          /* a string's text, or data_text */
    size_t data_len;
    bool data_is_json;         /* data was not a string: its compact JSON text */
    const char *type;          /* NULL = none ("message") */
    size_t type_len;
    const char *key;           /* NULL = none */
    size_t key_len;
    const char *idempotency_key; /* NULL = none */
    size_t idempotency_key_len;
    json_t *ref;               /* NULL = none: a string or an integer, echoed in the answer;
                                  set whenever valid, also when the rest is refused */
    char *data_text;           /* malloc'd, or NULL */
};

struct lg_ws_message {
    enum lg_ws_op op;
    json_t *doc;    /* the parsed message, or NULL */
    json_t *topics; /* unsubscribe: an array of strings, borrowed from doc */
    json_t *token;  /* auth (and refresh, the same): a string, borrowed from doc */
    struct lg_ws_publish publish; /* publish */
};

/*
 * Parse text[0..len). A subscribe fills *params (topics in order, deduplicated; the cursor
 * when "since" is a non-empty string: null and "" mean none, as an empty since= on /sse;
 * the start for "since":"latest" or "rewind":N, as subscribe_params.h).
 * A publish fills m->publish (its data's size is the caller's to bound).
 * Return value: NULL, or an error code ("bad_message", "unknown_op", "invalid_cursor", a
 * topic code of subscribe_params.h, or for a publish "invalid_topic") with a message in
 * problem. *malformed tells whether the
 * message itself is malformed (not a JSON object, no op, an unknown op: these count toward
 * websocket.max_bad_messages) or only its content was refused.
 */
const char *lg_ws_message_parse(const char *text, size_t len, uint32_t max_topics,
                                struct lg_ws_message *m, struct lg_subscribe_params *params,
                                bool *malformed, char *problem, size_t problem_cap);

void lg_ws_message_release(struct lg_ws_message *m);

#endif
