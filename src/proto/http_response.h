/*
 * http_response.h - the public port's HTTP error answers, rendered into a caller's buffer:
 * a status line, Content-Type: application/json, Cache-Control: no-store, Content-Length,
 * the caller's extra headers, and {"error": CODE, "message": TEXT}. Malformed UTF-8 in CODE or
 * TEXT (request bytes quoted in a message) becomes U+FFFD: the body is always valid JSON.
 *
 * Owns: nothing. Frees: nothing. Threads: any (pure). Bounds: what the caller's lg_buf holds.
 */
#ifndef LG_HTTP_RESPONSE_H
#define LG_HTTP_RESPONSE_H

#include <stdbool.h>
#include <stdint.h>

#include "encode.h"

/* Append the error response to b. extra_headers: complete "Name: value\r\n" lines, or NULL.
 * Without keep_alive it says Connection: close. */
void lg_http_error_response(struct lg_buf *b, int status, const char *code, const char *message,
                            const char *extra_headers, bool keep_alive);

/*
 * Append a retryable refusal of an SSE subscription in the form a browser's EventSource
 * survives (any status but 200 ends one for good): 200 text/event-stream, the refusal in the
 * X-Livegate-Refused header ("503 unavailable"), Content-Length, Connection: close, and a body
 * of `retry: retry_ms` and one event
 *   event: refused
 *   data: {"status":STATUS,"error":CODE,"message":TEXT,"retry_ms":RETRY_MS}
 * extra_headers: complete "Name: value\r\n" lines (CORS), or NULL.
 */
void lg_http_sse_refusal_response(struct lg_buf *b, int status, const char *code,
                                  const char *message, uint32_t retry_ms,
                                  const char *extra_headers);

/* The reason phrase of the statuses the gateway answers ("Error" for others). */
const char *lg_http_reason(int status);

/* The refusals every reader of a request head makes the same way. */
#define LG_HTTP_VERSION_MESSAGE "this server speaks HTTP/1.0 and HTTP/1.1 only"
#define LG_URI_TOO_LONG_MESSAGE "request line exceeds limits.max_request_head_bytes"
#define LG_HEAD_TOO_LARGE_MESSAGE "request head exceeds limits.max_request_head_bytes"
/* CONNECT asks for a tunnel: this is not a proxy (405 with LG_CONNECT_ALLOW). */
#define LG_CONNECT_MESSAGE "CONNECT is not supported: this server is not a proxy"
#define LG_CONNECT_ALLOW "Allow: GET, HEAD, OPTIONS\r\n"

#endif
