/*
 * conn_hook.h - a subscribe that waits for the backend's subscribe hook (hooks.h): the
 * pending state of a connection, its completion when the worker takes the answer, and its
 * end when the client goes away first; and the disconnect webhook of a client.
 *
 * DESIGN
 * A transport asks (lg_conn_hook_wait()) after its own checks (parameters, token, claims) and
 * before it subscribes. When the answer is not known at once, the connection waits: an SSE or
 * long-poll connection takes the table lg_transport_hook_wait (it buffers what the client
 * sends and answers nothing) and a WebSocket keeps its own (it holds later messages itself);
 * the parsed subscribe waits with it. The worker, woken by the backend thread, hands each
 * answer to lg_conn_hook_answered(), which gives the connection back its table and calls the
 * transport's done() with the verdict, on the worker's thread, outside any lws callback. A
 * connection released while it waits drops its wait; the answer, when it comes, finds no
 * waiter and is freed.
 *
 * Owns:    a connection's wait (struct lg_hook_wait: the check's waiter link and the parsed
 *          subscribe), freed when answered or when the connection is released.
 * Frees:   lg_conn_hook_answered() frees the answered check and the wait; done() must not keep
 *          p.
 * Threads: the connection's worker thread.
 * Bounds:  one wait per connection (a WebSocket holds later messages until it is answered);
 *          waits per worker: subscribe_hook.max_pending (hooks.h).
 */
#ifndef LG_CONN_HOOK_H
#define LG_CONN_HOOK_H

#include <stdbool.h>

#include "hooks.h"

struct lg_conn;
struct lg_subscribe_params;

/* The answer to a waiting subscribe: ALLOW (subscribe now), DENY (the backend refused: 403,
 * WS error hook_denied), or DOWN (no answer and subscribe_hook.when_down is deny, or the
 * gateway is draining: 503, WS error hook_unavailable); reason says why for the client. */
typedef void lg_conn_hook_done(struct lg_conn *c, struct lg_subscribe_params *p,
                               enum lg_hook_verdict v, const char *reason);

/*
 * Ask the subscribe hook about *p's topics (call only when c->home->hooks is set).
 * Return value: true when c waits: *p is the wait's (set to NULL here) and done(c, p, ...)
 * runs later. false: the answer is known now, in *v and *reason (no topic hooked: ALLOW).
 */
bool lg_conn_hook_wait(struct lg_conn *c, struct lg_subscribe_params **p,
                       lg_conn_hook_done *done, enum lg_hook_verdict *v, const char **reason);
/* Whether c waits for an answer (a WebSocket holds its next messages meanwhile). */
bool lg_conn_hook_waiting(const struct lg_conn *c);
/* The HTTP refusal of v (DENY: 403 hook_denied; DOWN: 503 hook_unavailable). */
void lg_conn_hook_refuse_http(struct lg_conn *c, enum lg_hook_verdict v, const char *reason);
/* The worker took check back from the backend thread: finish its wait (if its connection is
 * still there) and free it. */
void lg_conn_hook_answered(struct lg_hooks *h, struct lg_hook_check *check);
/* c is released: its wait is dropped, and a client's disconnect webhook queued. */
void lg_conn_hook_release(struct lg_conn *c);

#endif
