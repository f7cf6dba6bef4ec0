/*
 * worker.h - one subscriber-serving thread: its event loop, its listening socket, its clients.
 *
 * DESIGN
 * Each worker owns one lws_context (Debian builds lws with LWS_MAX_SMP 1: one service thread
 * per context) and its own SO_REUSEPORT listening socket on the public port, so the kernel
 * spreads connections over workers and no client ever moves between threads. The worker's
 * acceptor (acceptor.h) accepts, reads and parses each request head (a private epoll set of
 * unclassified sockets, watched by lws as a file descriptor) and refuses what is malformed;
 * the worker then adopts the rest into lws:
 *   - a WebSocket upgrade is handed to lws with the bytes already read;
 *   - SSE, long-poll and static files are served on lws' RAW socket role, where a client that
 *     goes away is seen at once (lws 4.1.6's HTTP role spins on such sockets; see
 *     shared/notes/platform-facts.md);
 *   - anything else is answered with a JSON error and closed.
 * The loop is libev's (epoll); lws runs on it as a foreign loop, so a wake-up costs the
 * descriptors that are ready, not the ones that are open.
 * Events reach the worker through its inbox: the hub pushes references and wakes the loop
 * with ev_async_send() on the worker's loop, which only schedules the worker's sweep, whoever
 * calls it (from the worker's own control-port daemon, below, the watcher is fed to the
 * callbacks libev is running, once a pass: no eventfd and no extra epoll_wait). The worker
 * offers each event to the subscriptions of its topic on this worker
 * (topic->slots[index].listeners) and queues the connections given output; it then writes them
 * round-robin, straight to each socket that has room (POLLOUT only for full ones), taking a
 * few more events from the inbox every WRITES_PER_TAKE writes (worker_sweep.c).
 * The worker also hosts a guest (loop_guest.h): one of the control port's libmicrohttpd
 * daemons, served when its epoll descriptor is readable, once a tick, and between slices of a
 * long round of writes, so a publisher is answered while the worker writes.
 *
 * Owns:    the libev loop and the lws context on it, the acceptor, every adopted
 *          connection (struct lg_conn) and the subscribers in them, the inbox, and the part
 *          of it its connections share (struct lg_conn_home, conn.h: the lists of connections
 *          to write, to lag-check and each transport's keep-alive order, the deadline and
 *          expiry heaps, a scratch buffer for coalesced writes).
 * Frees:   everything, in lg_worker_destroy(), after lg_worker_join().
 * Threads: lg_worker_start/drain/stop/join/destroy are called by the app (main thread).
 *          Everything else runs on the worker thread. lg_worker_drain() and lg_worker_stop()
 *          only set an atomic flag and call ev_async_send(), which libev allows from any
 *          thread.
 * Bounds:  connections (limits.max_connections, process-wide), unclassified sockets (same
 *          bound; each must send its head within limits.request_timeout_ms), the inbox
 *          (limits.worker_inbox_events; publishes wait above it), about EVENTS_PER_ROUND
 *          events taken per round of writes, one round of writes per loop iteration (then it
 *          wakes itself), writes of at most write_batch_bytes each.
 */
#ifndef LG_WORKER_H
#define LG_WORKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "live_limits.h"

struct lg_worker;
struct lg_hub;
struct lg_client_address;
struct lg_client_addresses;
struct lg_auth;
struct lg_hooks;
struct lg_loop_guest;

struct lg_worker_shared {
    const struct lg_config *cfg;
    const struct lg_live_limits *live; /* the limits a reload changes; outlives the workers */
    struct lg_hub *hub;
    const char *static_dir;  /* resolved absolute directory of static files */
    struct lg_client_addresses *clients; /* connections per client address (every worker) */
    const struct lg_client_address *trusted; /* trusted proxies, [trusted_count] */
    size_t trusted_count;
    const struct lg_auth *auth;  /* the token verifier (auth.h), immutable, shared */
    struct lg_hooks *hooks;      /* the backend hooks (hooks.h), NULL = none */
};

/*
 * Create worker `index` and bind its listening socket to cfg->public_addr. When the
 * configured port is 0, pass the port the first worker got in *port for the others.
 * Return value: the worker, or NULL with err filled.
 */
struct lg_worker *lg_worker_create(const struct lg_worker_shared *shared, uint32_t index,
                                   uint16_t *port, char *err, size_t errlen);
/* Serve guest on this worker's loop (loop_guest.h); call before lg_worker_start(). The guest
 * must stay valid until lg_worker_join() returned. */
void lg_worker_host(struct lg_worker *w, const struct lg_loop_guest *guest);
int lg_worker_start(struct lg_worker *w);          /* spawn its thread; 0 or -1 */
void lg_worker_drain(struct lg_worker *w);         /* stop accepting; end every client cleanly */
bool lg_worker_drained(const struct lg_worker *w); /* every client is gone */
void lg_worker_stop(struct lg_worker *w);          /* leave the loop now (after the drain timeout) */
void lg_worker_join(struct lg_worker *w);
void lg_worker_destroy(struct lg_worker *w);

#endif
