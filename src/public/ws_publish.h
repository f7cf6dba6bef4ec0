/*
 * ws_publish.h - a WebSocket client's publish ({"op":"publish"}, docs/protocol.md): who may,
 * how often, and its answer ({"type":"published"} with the event's id, or an error naming
 * why), through the hub's publish path (history, ids, idempotency keys, admission, the store).
 *
 * DESIGN
 * With the memory store the publish completes in the call, on the connection's worker, and is
 * answered at once. With the remote store (Redis) it completes on the store's thread; the
 * answer comes back to this worker through the hub's queue of completed client publishes
 * (client_publish.h) and a wake-up, and is given only if the connection is still there.
 * Pressure stays with the client that causes it: its own rate (websocket.max_publishes_per_s),
 * at most LG_WS_PUBLISHES_PENDING_MAX answers outstanding, and a publish that finds the
 * subscribers' workers behind is refused at once ("overloaded"), never held: a worker's loop
 * must not wait for room on behalf of one client.
 *
 * Owns:    a connection's publisher (allocated at its first publish, so a connection that
 *          never publishes carries one pointer): its rate bucket and the list of its
 *          publishes whose answer is outstanding (not owned: each is freed by the worker when
 *          it comes back, client_publish.h).
 * Frees:   lg_ws_publisher_release() from the transport's release: outstanding publishes are
 *          told their connection went (their answers are dropped when they come back).
 * Threads: the connection's worker only.
 * Bounds:  LG_WS_PUBLISHES_PENDING_MAX outstanding answers per connection; the data is at most
 *          limits.max_event_bytes (as compact JSON for JSON data).
 */
#ifndef LG_WS_PUBLISH_H
#define LG_WS_PUBLISH_H

#include <jansson.h>

#include "ws_message.h"

#define LG_WS_PUBLISHES_PENDING_MAX 32

struct lg_conn;
struct lg_ws_publisher;

/* The transport's reply: queue obj (stolen) for c. Return value: 0, or -1: c must close. */
typedef int lg_ws_reply_proc(struct lg_conn *c, json_t *obj);

/* Publish op of m (code: NULL, or the parse's refusal with its problem text), answering through
 * reply. *publisher is created at the first call. Return value: as reply's. */
int lg_ws_publish(struct lg_conn *c, struct lg_ws_publisher **publisher,
                  const struct lg_ws_publish *op, const char *code, const char *problem,
                  lg_ws_reply_proc *reply);

/* The connection goes: forget its outstanding publishes and free the publisher (NULL: none). */
void lg_ws_publisher_release(struct lg_ws_publisher **publisher);

#endif
