/*
 * control.h - the control port: libmicrohttpd serving the publish API and health checks
 * (docs/protocol.md, "Control port").
 *
 * Owns:    one listening socket and one MHD daemon per worker, each on a duplicate of it (as
 *          libmicrohttpd's own thread pool shares its socket), and per request a small state
 *          (the route, the request body buffer) hung on MHD's con_cls.
 * Frees:   lg_control_stop() stops every daemon (MHD_stop_daemon closes every connection and
 *          its duplicate of the socket) and frees the struct. Per-request state is freed by
 *          the MHD_OPTION_NOTIFY_COMPLETED callback, whatever way the request ended.
 * Threads: no thread of its own. Daemon i runs in external-epoll mode (MHD_USE_EPOLL) on
 *          worker i's loop, which serves it as a guest (lg_control_guest(), loop_guest.h): a
 *          publish for that worker's subscribers then needs no wake-up of another thread. The
 *          access handlers run ONLY on the workers' threads, several at once (one per daemon).
 *          They read the immutable config, atomically load *lifecycle, and call
 *          lg_hub_publish() / lg_hub_publish_many(), which are safe from any thread; they never
 *          touch subscribers, workers or topic internals. A connection resumed from another
 *          thread (the pacer, the Redis bridge) is resumed with lg_resume_served(), which also
 *          wakes the worker serving its daemon: libmicrohttpd 0.9.75 makes no inter-thread
 *          channel in external mode, so nothing else would. What it trades: a worker
 *          stuck in a long callback holds its daemon's connections with it (new connections go
 *          to the other daemons). MHD's own error messages go to lg_log (MHD_USE_ERROR_LOG +
 *          MHD_OPTION_EXTERNAL_LOGGER). lg_control_start() and lg_control_stop() are called
 *          from the main thread only: start before the workers start, stop after they were
 *          joined (no thread runs a daemon any more then).
 * Bounds:  connections: limits.control_max_connections (MHD_OPTION_CONNECTION_LIMIT, split
 *          evenly between the daemons, at least one each); a daemon at its share stops
 *          accepting and the others take new connections; with every daemon at its share,
 *          further connections wait in the kernel's listen backlog. A connection idle for
 *          limits.control_idle_timeout_ms is closed (MHD_OPTION_CONNECTION_TIMEOUT, checked at
 *          least once a tick), and every request has a deadline of its own
 *          (control_deadline.h), swept once a second. Request bodies are buffered up to
 *          limits.max_event_bytes (single event) or limits.max_batch_bytes (batch); a larger
 *          Content-Length is refused with 413 at once, and chunked or lying bodies are counted
 *          and discarded past the limit, then refused with 413. MHD bounds the request head
 *          by its memory pool per connection (16 KiB, control.c: a head of more than 12 KiB
 *          fits; a larger one gets MHD's 431). A serve runs MHD_run() at most 4 times.
 */
#ifndef LG_CONTROL_H
#define LG_CONTROL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "live_limits.h"

struct lg_hub;
struct lg_pacer;
struct lg_control;
struct lg_loop_guest;

/* What GET /readyz reports; app.c stores it, the control handlers only load it. */
enum lg_lifecycle {
    LG_LIFECYCLE_STARTING = 0, /* 503 {"status":"starting"} */
    LG_LIFECYCLE_READY,        /* 200 {"status":"ready"} */
    LG_LIFECYCLE_DRAINING,     /* 503 {"status":"draining"} */
};

/*
 * Start listening on cfg->control_addr (numeric IPv4, numeric IPv6 or "localhost"; port 0 = let
 * the kernel pick). cfg, live, hub, pacer, auth and lifecycle are borrowed and must outlive
 * the control port (auth is the app's verifier, whose keys a SIGHUP reload replaces: auth.h;
 * live the limits a reload changes, read per request: live_limits.h); pacer holds the publishes that find no room (publish_pacer.h; the caller has it
 * called by the hub with lg_hub_on_room()).
 * Return value: the running control port with *bound_port set to the real port, or NULL with
 * a message in err (nothing is left running).
 */
struct lg_auth;
struct lg_control *lg_control_start(const struct lg_config *cfg,
                                    const struct lg_live_limits *live, struct lg_hub *hub,
                                    struct lg_pacer *pacer, const struct lg_auth *auth,
                                    const _Atomic int *lifecycle,
                                    uint16_t *bound_port, char *err, size_t errlen);

/* Fail when cfg binds the control port off loopback without auth.control_token. Return value:
 * 0, or -1 with err filled. lg_control_start() checks it first. */
int lg_control_check_bind(const struct lg_config *cfg, char *err, size_t errlen);

/* What worker `worker` must serve on its loop (lg_worker_host()): its daemon. Valid until
 * lg_control_stop(). */
const struct lg_loop_guest *lg_control_guest(const struct lg_control *c, uint32_t worker);

/* Main thread, once a second: close the connections whose request is overdue
 * (control_deadline.h), counting control_connections_timed_out. */
void lg_control_sweep(struct lg_control *c);

/* Any thread, once, when the drain begins (before the streams end): from now on the publish
 * routes answer 503 `draining` and publish nothing, since an event accepted now would reach no
 * subscriber and die with the process; a publisher retries on another node. */
void lg_control_drain(struct lg_control *c);

/* Answer every held publish (lg_pacer_stop), stop every daemon and free c; the workers that
 * served them must have been joined. NULL is ignored. */
void lg_control_stop(struct lg_control *c);

#endif
