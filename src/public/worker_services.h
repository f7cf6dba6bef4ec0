/*
 * worker_services.h - what a worker provides to the connections it serves: its config, hub,
 * index, static directory and scratch buffer, and the bookkeeping calls a connection makes
 * when it opens, writes, holds a backlog or closes. Implemented by worker.c; used by conn.c
 * and the transports, which never see struct lg_worker's layout (and worker.c's own needs
 * from them are in conn.h and protocols.h, so no header here includes another of these).
 *
 * Owns:    nothing; every pointer returned is borrowed from the worker, which outlives its
 *          connections (lws calls their close callbacks before lg_worker_destroy() frees it).
 * Frees:   nothing. lg_worker_take_ws_upgrade() hands over a malloc'd string: the caller frees it.
 * Threads: the worker's own thread (its lws callbacks and its sweep), except at shutdown, when
 *          lg_worker_destroy() runs the remaining close callbacks on the main thread after the
 *          join.
 * Bounds:  the scratch buffer holds one coalesced write (write_batch_bytes plus the last item
 *          and LWS_PRE); one WebSocket query is kept per descriptor until its upgrade completes.
 */
#ifndef LG_WORKER_SERVICES_H
#define LG_WORKER_SERVICES_H

#include <stdbool.h>
#include <stdint.h>

struct lg_auth;
struct lg_buf;
struct lg_client_address;
struct lg_client_addresses;
struct lg_config;
struct lg_conn;
struct lg_hub;
struct lg_worker;

const struct lg_config *lg_worker_config(const struct lg_worker *w);
struct lg_hub *lg_worker_hub(const struct lg_worker *w);
uint32_t lg_worker_index(const struct lg_worker *w);
const char *lg_worker_static_dir(const struct lg_worker *w);
bool lg_worker_is_draining(const struct lg_worker *w);
/* The worker's scratch buffer for one coalesced write: LWS_PRE bytes of headroom are kept. */
struct lg_buf *lg_worker_scratch(struct lg_worker *w);
void lg_worker_conn_opened(struct lg_worker *w, struct lg_conn *c);
void lg_worker_conn_closed(struct lg_worker *w, struct lg_conn *c);
/* c's token expires at unix_ms: the tick calls c->transport->timer then (an SSE or
 * WebSocket stream). Return value: 0, or -1 when out of memory (then not watched). */
int lg_worker_conn_expires(struct lg_worker *w, struct lg_conn *c, int64_t unix_ms);
/* c wrote to its socket now: a heartbeat stream moves to the end of the heartbeat order. */
void lg_worker_conn_wrote(struct lg_worker *w, struct lg_conn *c);
/* c's deadline, ms from now (a later call moves it): the worker then calls
 * lg_http_conn_timer(c). For the raw HTTP protocol's connections (keep-alive, long-poll). */
void lg_worker_conn_timer(struct lg_worker *w, struct lg_conn *c, uint32_t ms);
void lg_worker_conn_timer_cancel(struct lg_worker *w, struct lg_conn *c);
/* A WebSocket peer sent a frame (a message, a pong): c is alive, its keepalive starts over
 * (the first call, at the handshake, puts it on the worker's keepalive order). */
void lg_worker_ws_heard(struct lg_worker *w, struct lg_conn *c);
/* After a write: whether c still holds queued events (its socket is full). */
void lg_worker_conn_backlog(struct lg_worker *w, struct lg_conn *c);
/* What a WebSocket upgrade on fd brought, kept until lws reports it established: its raw query
 * (malloc'd, the caller frees it; NULL if none) and the client address it counts against
 * (*counted false: nobody). */
char *lg_worker_take_ws_upgrade(struct lg_worker *w, int fd, struct lg_client_address *client,
                                bool *counted);
/* The token verifier, shared by every worker (immutable). */
const struct lg_auth *lg_worker_auth(const struct lg_worker *w);
/* The token a WebSocket upgrade on fd carried (malloc'd, the caller frees it; NULL if none).
 * Take it before lg_worker_take_ws_upgrade(), which frees one nobody took. */
char *lg_worker_take_ws_token(struct lg_worker *w, int fd);
/* The connections held per client address, shared by every worker. */
struct lg_client_addresses *lg_worker_clients(struct lg_worker *w);

#endif
