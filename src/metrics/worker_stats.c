/* worker_stats.c - see worker_stats.h. */
#include "worker_stats.h"

struct lg_worker_stats lg_worker_stats[LG_WORKER_STATS_MAX];
