/*
 * lg_backend.h - a backend for the hook tests (test-only code): a real HTTP server
 * (libmicrohttpd, a thread per connection) on 127.0.0.1 that answers the subscribe hook at
 * POST /hook by the topic it is asked about, and records every webhook POSTed to /webhook.
 *
 *   topic            answer
 *   allow/...        200 {"allow":true}
 *   deny/...         200 {"allow":false,"reason":"not on the list"}
 *   late/...         200 {"allow":true}, after late_ms (set it past the gateway's timeout)
 *   garbage/...      200 "this is not json"
 *   fail/...         500
 *   anything else    200 {"allow":true}, after slow_ms (the benchmark's backend)
 *
 * Owns:    its daemon and what it recorded. Frees: lg_backend_stop().
 * Threads: its own (MHD's); every function is safe from the test's thread.
 * Bounds:  LG_BACKEND_MAX_NOTICES webhooks recorded; bodies up to 8 KiB.
 */
#ifndef LG_BACKEND_H
#define LG_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LG_BACKEND_MAX_NOTICES 256

struct lg_backend;

/* One webhook as received. */
struct lg_notice_seen {
    char body[8192];
    char signature[128];   /* the Livegate-Signature header */
    char id[64];           /* Livegate-Webhook-Id */
    int attempt;           /* Livegate-Attempt */
};

/* Start on port (0: any free one). Return value: the backend, or NULL. */
struct lg_backend *lg_backend_start(uint16_t port, int late_ms, int slow_ms);
uint16_t lg_backend_port(const struct lg_backend *b);
void lg_backend_stop(struct lg_backend *b);
/* Webhooks are answered 503 while refuse is set. */
void lg_backend_refuse_webhooks(struct lg_backend *b, bool refuse);
/* How many times the hook was asked about topic. */
int lg_backend_asks(struct lg_backend *b, const char *topic);
/* Wait (<= timeout_ms) until the hook was asked about topic n times. Return: it was. */
bool lg_backend_wait_asks(struct lg_backend *b, const char *topic, int n, int timeout_ms);
/* The body of the last hook question about topic (cap bytes into out). Return: found. */
bool lg_backend_last_ask(struct lg_backend *b, const char *topic, char *out, size_t cap);
/* Wait (<= timeout_ms) until webhook number index (0-based, in arrival order) arrived, and
 * copy it. Return value: true when it did. */
bool lg_backend_wait_notice(struct lg_backend *b, size_t index, struct lg_notice_seen *out,
                            int timeout_ms);
size_t lg_backend_notice_count(struct lg_backend *b);
/* Whether n's signature is "sha256=" + hex HMAC-SHA256(secret, body). */
bool lg_notice_signed(const struct lg_notice_seen *n, const char *secret);

#endif
