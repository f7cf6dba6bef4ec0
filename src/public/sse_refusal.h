/*
 * sse_refusal.h - refusals of an SSE subscription that a browser's EventSource survives.
 *
 * Any answer but 200 text/event-stream ends an EventSource for good (WHATWG HTML: "fail the
 * connection"; only a network error or the end of a stream makes it reconnect). So a refusal
 * of GET /sse that a retry can cure (429, and 5xx but 501 and 505: draining,
 * limits.max_connections, limits.max_connections_per_address, out of memory, a topic that
 * cannot be created now) is answered 200 with a jittered `retry:`, one `refused` event that
 * carries the status and the error, and the end of the stream (http_response.h renders it;
 * docs/protocol.md, "Refusals"). Refusals a retry cannot cure (400, 401, 403, ...) keep their
 * status, and /poll and /ws keep theirs. The CORS lines of an answer live here too, because
 * the acceptor's refusals (no connection yet) need them as much as conn_auth.c does.
 *
 * Owns:    nothing.
 * Frees:   nothing.
 * Threads: any; the retry jitter's state is one per thread.
 * Bounds:  CORS lines of at most LG_CORS_LINES_MAX bytes.
 */
#ifndef LG_SSE_REFUSAL_H
#define LG_SSE_REFUSAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "auth.h"   /* enum lg_origin_verdict */
#include "config.h"
#include "encode.h"
#include "http_request.h"

#define LG_CORS_LINES_MAX (LG_LIST_ITEM_MAX + 160)

/* Whether a complete request head is an SSE subscription (GET /sse). */
bool lg_sse_refusal_applies(const char *buf, const struct lg_http_request *req);
/* The same for the first len bytes of a head that may be incomplete: its request line starts
 * with "GET /sse" and then a '?' or a space. */
bool lg_sse_refusal_head_applies(const char *buf, size_t len);
/* Whether an SSE subscription refused with status gets the event form (a retry may cure it). */
bool lg_sse_refusal_retried(int status);

/* The `retry:` of one refusal: uniform in [mean_ms / 3, mean_ms * 5 / 3] (sse.retry_ms: 1 to
 * 5 s by default), from a per-thread xorshift64, so the clients a full or draining node turns
 * away come back spread over seconds, not at once. */
uint32_t lg_sse_refusal_retry_ms(uint32_t mean_ms);

/* Append the event form of a refusal to b (http_response.h), with a fresh jittered retry
 * around sse_retry_ms and the CORS lines cors (or NULL). */
void lg_sse_refusal(struct lg_buf *b, uint32_t sse_retry_ms, int status, const char *code,
                    const char *message, const char *cors);

/* The CORS header lines of an answer to a request whose Origin is origin[0..len) (len 0:
 * none), written to out (LG_CORS_LINES_MAX bytes; "" when no CORS header is due).
 * Return value: false when allowed_origins refuses the origin (out is "" then). */
bool lg_cors_lines(const struct lg_string_list *allowed, const char *origin, size_t len, char *out);
/* The same for a verdict already made (lg_auth_origin(): the allowed_origins in force). */
bool lg_cors_lines_for(enum lg_origin_verdict verdict, const char *origin, size_t len, char *out);

#endif
