/*
 * conn_auth.h - authorization of public-port connections: where a request's token comes
 * from, the Origin check and CORS headers of SSE and long-poll (with the OPTIONS preflight),
 * the 401/403 answers, and watching a stream's token expiry (the worker's heap and tick).
 * Verification itself is auth.h's (the worker's verifier, shared and immutable).
 *
 * Owns:    nothing of its own; it sets a connection's `grant` and `cors` (conn.h), which
 *          lg_conn_release() frees.
 * Frees:   lg_conn_request_token() returns a malloc'd string the caller frees.
 * Threads: the connection's worker thread.
 * Bounds:  a token is at most LG_AUTH_TOKEN_MAX bytes (longer: malformed); the CORS lines of
 *          one connection hold one origin (at most LG_LIST_ITEM_MAX bytes).
 */
#ifndef LG_CONN_AUTH_H
#define LG_CONN_AUTH_H

#include <stdbool.h>
#include <stdint.h>

struct lg_conn;
struct lg_http_request;
struct lg_subscribe_params;

/* The token a request head carries: Authorization: Bearer first, then the access_token query
 * parameter, then the cookie named cookie. Return value: a malloc'd copy, "" when the request
 * names a token source that cannot hold one (an undecodable query), or NULL when none. */
char *lg_conn_request_token(const char *buf, const struct lg_http_request *req,
                            const char *cookie);

/* SSE and long-poll: check Origin (403 origin_not_allowed outside allowed_origins; c->cors set
 * for allowed ones), then the token (401 with WWW-Authenticate) and every topic of p against
 * it (403 forbidden). c->grant is replaced by the request's. Return value: 0, or -1 after
 * queueing the refusal. */
int lg_conn_authorize_http(struct lg_conn *c, const char *buf, const struct lg_http_request *req,
                           const struct lg_subscribe_params *p);

/* Set c->cors for the Origin of req (none when allowed_origins refuses it: the request is
 * refused later, or its refusal needs no CORS), for an answer given before authorization. */
void lg_conn_cors(struct lg_conn *c, const char *buf, const struct lg_http_request *req);

/* Answer an OPTIONS request for /sse or /poll: 204 with the CORS preflight headers for an
 * allowed Origin, 403 otherwise. */
void lg_conn_preflight(struct lg_conn *c, const char *buf, const struct lg_http_request *req);

/* Milliseconds until c's token expires (0 if it has; UINT64_MAX without a token). */
uint64_t lg_conn_token_ms_left(const struct lg_conn *c);

/* Watch c's token expiry (nothing without a token): the worker's tick calls
 * c->transport->timer at expires_at (at most a second late). A stream (SSE, WS) only. */
void lg_conn_arm_expiry(struct lg_conn *c);

#endif
