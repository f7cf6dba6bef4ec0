/*
 * worker_stats.h - the figures each worker thread keeps about itself for the metrics
 * endpoint: the delivery-lag histogram (publish accepted to written to the client), the time
 * its loop spent running callbacks (busy), and how many of its connections hold events their
 * socket has not taken. One slot per worker index, so a worker adds to its own cache lines and
 * a scrape merges them (no lock anywhere).
 *
 * Owns:    one static array of LG_WORKER_STATS_MAX slots.
 * Frees:   nothing.
 * Threads: slot w is written only by worker thread w (relaxed atomics); any thread reads.
 * Bounds:  LG_WORKER_STATS_MAX slots (config.h's LG_MAX_WORKERS is checked against it).
 */
#ifndef LG_WORKER_STATS_H
#define LG_WORKER_STATS_H

#include <stdatomic.h>
#include <stdint.h>

#include "histogram.h"

#define LG_WORKER_STATS_MAX 64

struct lg_worker_stats {
    struct lg_histogram delivery_lag;   /* seconds from publish accepted to written */
    _Atomic uint64_t busy_ns;           /* loop time spent in callbacks */
    _Atomic int64_t backlogged_conns;   /* gauge, refreshed every worker tick */
    _Atomic int64_t connections;        /* gauge: connections this worker serves */
} __attribute__((aligned(64)));

extern struct lg_worker_stats lg_worker_stats[LG_WORKER_STATS_MAX];

#endif
