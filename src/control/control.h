/*
 * control.h - the control port: libmicrohttpd serving the publish API and health checks
 * (docs/protocol.md, "Control port").
 *
 * Owns:    one MHD daemon, its listening socket and its threads, and per request a small state
 *          (the route, the request body buffer) hung on MHD's con_cls.
 * Frees:   lg_control_stop() stops the daemon (MHD_stop_daemon joins its threads and closes
 *          every connection) and frees the struct. Per-request state is freed by the
 *          MHD_OPTION_NOTIFY_COMPLETED callback, whatever way the request ended.
 * Threads: MHD_USE_EPOLL_INTERNAL_THREAD with MHD_OPTION_THREAD_POOL_SIZE 2: two MHD threads,
 *          each with its own epoll set, share the listening socket. Access handlers run ONLY on
 *          those threads. They read the immutable config, atomically load *lifecycle, and call
 *          lg_hub_publish() / lg_hub_publish_many(), which are safe from any thread; they never
 *          touch subscribers, workers or topic internals. MHD's own error messages go to lg_log
 *          (MHD_USE_ERROR_LOG + MHD_OPTION_EXTERNAL_LOGGER). lg_control_start()/stop() are
 *          called from the main thread only.
 * Bounds:  connections: limits.control_max_connections (MHD_OPTION_CONNECTION_LIMIT, split
 *          evenly between the pool threads); at the limit MHD stops accepting, so further
 *          connections wait in the kernel's listen backlog. A connection idle for
 *          limits.control_idle_timeout_ms is closed (MHD_OPTION_CONNECTION_TIMEOUT), and every
 *          request has a deadline of its own (control_deadline.h), swept once a second. Request bodies are buffered up to
 *          limits.max_event_bytes (single event) or limits.max_batch_bytes (batch); a larger
 *          Content-Length is refused with 413 at once, and chunked or lying bodies are counted
 *          and discarded past the limit, then refused with 413. MHD bounds the request head
 *          (its default per-connection memory limit, 32 KiB).
 */
#ifndef LG_CONTROL_H
#define LG_CONTROL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

struct lg_hub;
struct lg_pacer;
struct lg_control;

/* What GET /readyz reports; app.c stores it, the control threads only load it. */
enum lg_lifecycle {
    LG_LIFECYCLE_STARTING = 0, /* 503 {"status":"starting"} */
    LG_LIFECYCLE_READY,        /* 200 {"status":"ready"} */
    LG_LIFECYCLE_DRAINING,     /* 503 {"status":"draining"} */
};

/*
 * Start listening on cfg->control_addr (numeric IPv4, numeric IPv6 or "localhost"; port 0 = let
 * the kernel pick). cfg, hub, pacer and lifecycle are borrowed and must outlive the control
 * port; pacer holds the publishes that find no room (publish_pacer.h; the caller has it
 * called by the hub with lg_hub_on_room()).
 * Return value: the running control port with *bound_port set to the real port, or NULL with
 * a message in err (nothing is left running).
 */
struct lg_control *lg_control_start(const struct lg_config *cfg, struct lg_hub *hub,
                                    struct lg_pacer *pacer, const _Atomic int *lifecycle,
                                    uint16_t *bound_port, char *err, size_t errlen);

/* Fail when cfg binds the control port off loopback without auth.control_token. Return value:
 * 0, or -1 with err filled. lg_control_start() checks it first. */
int lg_control_check_bind(const struct lg_config *cfg, char *err, size_t errlen);

/* Answer every held publish (lg_pacer_stop), stop the daemon, join its threads and free c.
 * NULL is ignored. */
/* Main thread, once a second: close the connections whose request is overdue
 * (control_deadline.h), counting control_connections_timed_out. */
void lg_control_sweep(struct lg_control *c);

void lg_control_stop(struct lg_control *c);

#endif
