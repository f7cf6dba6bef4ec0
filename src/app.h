/*
 * app.h - the process: start order, the signal-driven drain, and stop/join in reverse order.
 *
 * Owns:    the hub, every worker and the control port, and therefore every thread livegate
 *          starts. Nothing outlives lg_app_run().
 * Threads: lg_app_run() runs on the main thread, which also handles SIGINT/SIGTERM/SIGHUP
 *          (blocked in every other thread), the SIGHUP reload (app.c's "Reload" DESIGN note:
 *          what it builds, publishes and frees) and the hub's periodic history expiry.
 * Order:   start hub -> workers -> control -> ready; on a signal (drain(), stop() in app.c):
 *          publishes refused (control drains) -> workers drain (refuse new subscribers, stop
 *          accepting, send what is queued, end every client cleanly) -> not ready
 *          (readyz 503) -> wait until drained or drain_timeout_ms -> the Redis store stops
 *          (its waiting publishes answered) -> held publishes answered (pacer stops) ->
 *          workers stop and are joined -> the store's thread is joined where it served the
 *          control port -> control stops -> everything is freed.
 */
#ifndef LG_APP_H
#define LG_APP_H

#include "cli.h"
#include "config.h"

/* Run the gateway with cfg (built from cli) until SIGINT or SIGTERM; SIGHUP rebuilds the
 * config from cli and applies what can change live. cfg and cli are borrowed for the run.
 * Return value: the process exit code (0 clean shutdown, 1 failure to start). */
int lg_app_run(const struct lg_config *cfg, const struct lg_cli *cli);

#endif
