#include "stats.h"

struct lg_stats lg_stats;

void lg_stats_note_queue_depth(int64_t depth)
{
    int64_t seen = atomic_load_explicit(&lg_stats.max_queue_depth, memory_order_relaxed);
    while (depth > seen &&
           !atomic_compare_exchange_weak_explicit(&lg_stats.max_queue_depth, &seen, depth,
                                                  memory_order_relaxed, memory_order_relaxed)) {
    }
}
