/*
 * histogram.h - a fixed-bucket latency histogram for the Prometheus exposition (metrics.c):
 * cumulative counts per upper bound (seconds), a count and a sum.
 *
 * Owns:    its counters (embedded: no allocation).
 * Frees:   nothing.
 * Threads: lg_histogram_observe() from any thread (relaxed atomic adds: a histogram owned by
 *          one thread, as a worker's, never contends; a shared one costs one atomic add per
 *          bucket hit). lg_histogram_read() from any thread: each counter is read once, so a
 *          scrape racing an observation may see count and buckets one observation apart; the
 *          exposition derives count from the buckets so the two always agree.
 * Bounds:  LG_HISTOGRAM_BUCKETS buckets plus +Inf.
 */
#ifndef LG_HISTOGRAM_H
#define LG_HISTOGRAM_H

#include <stdatomic.h>
#include <stdint.h>

#define LG_HISTOGRAM_BUCKETS 16

/* The upper bounds of the buckets, in nanoseconds: 100 us .. 10 s. */
extern const uint64_t lg_histogram_bounds_ns[LG_HISTOGRAM_BUCKETS];

struct lg_histogram {
    _Atomic uint64_t buckets[LG_HISTOGRAM_BUCKETS + 1]; /* not cumulative; last = +Inf */
    _Atomic uint64_t sum_ns;
};

/* A plain copy, for merging and rendering. */
struct lg_histogram_snapshot {
    uint64_t buckets[LG_HISTOGRAM_BUCKETS + 1];
    uint64_t sum_ns;
};

void lg_histogram_observe(struct lg_histogram *h, uint64_t ns);
/* Add h's counts to *into. */
void lg_histogram_read(const struct lg_histogram *h, struct lg_histogram_snapshot *into);
uint64_t lg_histogram_snapshot_count(const struct lg_histogram_snapshot *s);

#endif
