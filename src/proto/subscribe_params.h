/*
 * subscribe_params.h - the parameters every subscribe request carries (topics, cursor, start
 * position, timeout, deltas), parsed the same way for /sse, /poll and /ws query strings.
 *
 * Pure function over the caller's bytes; the result lives in the caller's struct.
 *
 * Owns: nothing. Frees: nothing. Threads: any. Bounds: at most the caller's max_topics
 * topics (LG_CURSOR_MAX_ENTRIES), each value at most 8192 bytes once decoded.
 */
#ifndef LG_SUBSCRIBE_PARAMS_H
#define LG_SUBSCRIBE_PARAMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cursor.h"
#include "policy.h"
#include "topic_name.h"

struct lg_subscribe_params {
    char topics[LG_CURSOR_MAX_ENTRIES][LG_TOPIC_NAME_MAX + 1]; /* distinct, in request order */
    size_t topic_count;
    struct lg_cursor cursor;
    bool has_cursor;
    struct lg_start start;    /* since=latest or rewind=N: for topics the cursor does not name */
    bool has_start;           /* false: each topic's own default (topic_rules) */
    uint64_t timeout_ms;
    bool has_timeout;
    bool deltas;              /* delta=fossil: the client applies deltas (WebSocket only) */
};

/*
 * Parse query q[0..len). `cursor_param` names the query parameter holding the cursor
 * ("last_event_id" or "since"); a non-NULL header (Last-Event-ID) takes precedence over it.
 * `since=latest` and `rewind=N` (0 .. LG_HISTORY_MAX_EVENTS_MAX) choose the start; one of
 * them at most, and not beside a cursor in the query. A non-empty header overrides them too
 * (a browser's reconnection resumes where it was). `delta=fossil` asks for deltas on
 * document topics (any other value is refused). Unknown parameters are ignored (cache
 * busters). At most max_topics topics; whether none is
 * acceptable is the caller's decision. Return value: NULL on success, or the error code ("bad_request",
 * "invalid_topic", "invalid_cursor") with a message in problem.
 */
const char *lg_subscribe_params_parse(struct lg_subscribe_params *p, const char *q, size_t len,
                                      const char *cursor_param, const char *header,
                                      size_t header_len, uint32_t max_topics, char *problem,
                                      size_t problem_cap);

/* Whether every parameter of query q[0..len) decodes (no bad %-escape, no %00, none too long),
 * whatever it means. Return value: NULL, or "bad_request" with the message
 * lg_subscribe_params_parse() would give in problem. */
const char *lg_subscribe_params_check_query(const char *q, size_t len, char *problem,
                                            size_t problem_cap);

/* Set the start from a `rewind` value text (decimal), refusing it beside another start.
 * Return value: NULL, or "bad_request" with a message in problem. */
const char *lg_subscribe_params_rewind(struct lg_subscribe_params *p, const char *text,
                                       char *problem, size_t problem_cap);

/* Set the start to the newest retained event (`since=latest`), refusing it beside another
 * start. Return value: NULL, or "bad_request" with a message in problem. */
const char *lg_subscribe_params_latest(struct lg_subscribe_params *p, char *problem,
                                       size_t problem_cap);

/* A cursor beside a start position is refused: the two say different things. Return value:
 * NULL, or "bad_request" with a message in problem. */
const char *lg_subscribe_params_check_start(const struct lg_subscribe_params *p,
                                            const char *cursor_name, char *problem,
                                            size_t problem_cap);

/* Add one topic (deduplicated). Return value: NULL or an error code as above. */
const char *lg_subscribe_params_add_topic(struct lg_subscribe_params *p, const char *topic,
                                          size_t len, uint32_t max_topics, char *problem,
                                          size_t problem_cap);

#endif
