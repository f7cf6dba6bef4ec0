/* histogram.c - see histogram.h. */
#include "histogram.h"

#define US 1000ull
#define MS 1000000ull
#define S 1000000000ull

const uint64_t lg_histogram_bounds_ns[LG_HISTOGRAM_BUCKETS] = {
    100 * US, 250 * US, 500 * US, 1 * MS, 2500 * US, 5 * MS, 10 * MS, 25 * MS,
    50 * MS,  100 * MS, 250 * MS, 500 * MS, 1 * S, 2500 * MS, 5 * S, 10 * S,
};

void lg_histogram_observe(struct lg_histogram *h, uint64_t ns)
{
    unsigned b = 0;
    while (b < LG_HISTOGRAM_BUCKETS && ns > lg_histogram_bounds_ns[b])
        b++;
    atomic_fetch_add_explicit(&h->buckets[b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->sum_ns, ns, memory_order_relaxed);
}

void lg_histogram_read(const struct lg_histogram *h, struct lg_histogram_snapshot *into)
{
    for (unsigned b = 0; b <= LG_HISTOGRAM_BUCKETS; b++)
        into->buckets[b] += atomic_load_explicit(&h->buckets[b], memory_order_relaxed);
    into->sum_ns += atomic_load_explicit(&h->sum_ns, memory_order_relaxed);
}

uint64_t lg_histogram_snapshot_count(const struct lg_histogram_snapshot *s)
{
    uint64_t n = 0;
    for (unsigned b = 0; b <= LG_HISTOGRAM_BUCKETS; b++)
        n += s->buckets[b];
    return n;
}
