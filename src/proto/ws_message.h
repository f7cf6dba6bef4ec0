/*
 * ws_message.h - the control messages a WebSocket client sends (docs/protocol.md,
 * "WebSocket"): {"op":"subscribe","topics":[...],"since":"...","rewind":N,"filter":"..."}, {"op":"unsubscribe",
 * "topics":[...]}, {"op":"ping"}, and {"op":"auth"|"refresh","token":"..."} (docs/security.md). Parsed and checked here as a pure function, so a fuzzer
 * reaches it; transport_ws.c applies the result to the live connection.
 *
 * Owns:    a parsed message holds a reference to its JSON document (unsubscribe topics are
 *          borrowed from it); the subscribe parameters are written to the caller's struct.
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

enum lg_ws_op { LG_WS_OP_SUBSCRIBE, LG_WS_OP_UNSUBSCRIBE, LG_WS_OP_PING, LG_WS_OP_AUTH };

struct lg_ws_message {
    enum lg_ws_op op;
    json_t *doc;    /* the parsed message, or NULL */
    json_t *topics; /* unsubscribe: an array of strings, borrowed from doc */
    json_t *token;  /* auth (and refresh, the same): a string, borrowed from doc */
};

/*
 * Parse text[0..len). A subscribe fills *params (topics in order, deduplicated; the cursor
 * when "since" is a non-empty string: null and "" mean none, as an empty since= on /sse;
 * the start for "since":"latest" or "rewind":N, as subscribe_params.h).
 * Return value: NULL, or an error code ("bad_message", "unknown_op", "invalid_cursor",
 * "invalid_filter", or a
 * topic code of subscribe_params.h) with a message in problem. *malformed tells whether the
 * message itself is malformed (not a JSON object, no op, an unknown op: these count toward
 * websocket.max_bad_messages) or only its content was refused.
 */
const char *lg_ws_message_parse(const char *text, size_t len, uint32_t max_topics,
                                struct lg_ws_message *m, struct lg_subscribe_params *params,
                                bool *malformed, char *problem, size_t problem_cap);

void lg_ws_message_release(struct lg_ws_message *m);

#endif
