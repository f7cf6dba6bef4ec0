/*
 * lg_util.h - small helpers for the lg_loadgen benchmark client: SHA-1 and base64 (for the
 * WebSocket handshake), a log-linear latency histogram, the monotonic clock, and readers for
 * /proc figures (process RSS and CPU, kernel slab).
 *
 * Owns:    nothing global; a struct lg_hist is a plain value the caller owns.
 * Threads: every function is reentrant (the load generator is single-threaded anyway).
 */
#ifndef LG_BENCH_UTIL_H
#define LG_BENCH_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* SHA-1 of len bytes at data into out[20] (RFC 3174; only used for Sec-WebSocket-Accept). */
void lgb_sha1(const void *data, size_t len, uint8_t out[20]);

/* Standard base64 with padding of len bytes into out (NUL-terminated, 4*ceil(len/3)+1 bytes). */
void lgb_base64(const uint8_t *in, size_t len, char *out);

/* Nanoseconds of CLOCK_MONOTONIC (the payload clock: publisher and subscribers share it). */
uint64_t lgb_now_ns(void);

/*
 * Latency histogram in microseconds, HdrHistogram-like: exact below 128 us, then 64 linear
 * sub-buckets per power of two (relative error < 1.6 %), up to 2^40 us. The maximum is kept
 * exactly.
 */
#define LGB_HIST_BUCKETS (64 * 40)
struct lg_hist {
    uint64_t count;
    uint64_t max_us;
    uint64_t sum_us;
    uint64_t b[LGB_HIST_BUCKETS];
};

void lgb_hist_add(struct lg_hist *h, uint64_t us);
/* Value at quantile q in [0,1] (upper edge of its bucket, capped at the exact max); 0 if empty. */
uint64_t lgb_hist_quantile(const struct lg_hist *h, double q);

/* Sum of VmRSS over the pids (kB), or -1 when none could be read. */
long lgb_proc_rss_kb(const int *pids, int npids);
/* Sum of utime+stime over the pids in seconds, or -1 when none could be read. */
double lgb_proc_cpu_s(const int *pids, int npids);
/* "Slab:" from /proc/meminfo in kB, or -1. */
long lgb_slab_kb(void);
/* Busy CPU seconds of the whole host, all cores (from the "cpu" line of /proc/stat), or -1. */
double lgb_host_busy_s(void);
/* This process's user+system CPU seconds (getrusage). */
double lgb_self_cpu_s(void);

#endif
