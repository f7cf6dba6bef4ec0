/*
 * sys_stats.h - the gateway's own figures, published once a second as one event on the
 * reserved topic `$sys/stats` (docs/protocol.md, "The live stats topic"), so a dashboard can
 * watch the gateway over any transport without polling the control port.
 *
 * The publisher is the main thread's once-a-second tick (app.c, beside lg_hub_expire()). The
 * event's data is a JSON object: time_ms, interval_ms (since the previous tick), clients by
 * transport, events_in_per_s / events_out_per_s (published / delivered over the interval),
 * dropped and refused since the previous tick (and their reasons), backlog (events accepted
 * for the workers and not yet taken), connections, topics.
 * The event goes out only while the topic exists (somebody subscribed): the gateway does not
 * create a topic nobody asked for. It is published like any event (history, cursors, resume)
 * but not counted in events_published; a tick that finds the workers' inboxes full is skipped
 * (counted in sys_stats_skipped), never waited for.
 *
 * Owns:    the previous tick's counter values (to compute what happened since).
 * Frees:   nothing allocated; the struct is the caller's (embedded in the app).
 * Threads: the main thread only (lg_sys_stats_tick); it reads lg_stats' atomics and publishes
 *          through the hub like any publisher (short topic and inbox locks).
 * Bounds:  one event a second, a few hundred bytes.
 */
#ifndef LG_SYS_STATS_H
#define LG_SYS_STATS_H

#include <stdint.h>

#include "encode.h"

struct lg_hub;

#define LG_SYS_STATS_TOPIC "$sys/stats"

struct lg_sys_stats {
    uint64_t last_mono_ms;   /* 0 = no tick yet */
    uint64_t published, delivered, dropped, refused;
    uint64_t dropped_overflow, dropped_lag, conflated;
    uint64_t refused_publish, refused_connection;
};

/* Start counting from now (before the first tick). */
void lg_sys_stats_init(struct lg_sys_stats *s);

/* Append the figures since the previous call as the JSON object described above, and remember
 * the counters for the next one. now_mono_ms: the tick's time. */
void lg_sys_stats_render(struct lg_sys_stats *s, const struct lg_hub *hub, uint64_t now_mono_ms,
                         struct lg_buf *out);

/* Render and publish to LG_SYS_STATS_TOPIC if it exists (counters are remembered either way,
 * so the next event covers only its own interval). */
void lg_sys_stats_tick(struct lg_sys_stats *s, struct lg_hub *hub);

#endif
