/*
 * live_limits.h - the limits a SIGHUP reload changes while the gateway runs: each only bounds
 * work that starts after it is read (a request, a subscribe, a connection), so a new value
 * needs no structure rebuilt. The other limits size something built at start and need a
 * restart (config_table.c says why, row by row).
 *
 * Each field is one relaxed atomic, read where the work starts (lg_live() is a plain load on
 * the hot paths, no lock): a reader sees the old value or the new one, never a torn one. No
 * reader needs two fields to agree: a batch's body is bounded by max_batch_bytes and each of
 * its events by max_event_bytes, each read once; the loader checks event <= batch.
 *
 * Owns:    nothing allocated; the struct is embedded in the app (src/app.c).
 * Frees:   nothing. It outlives every thread that reads it (the app joins them first).
 * Threads: written by the main thread only (at start, and by an applied reload); read by the
 *          workers and the control port's daemons.
 * Bounds:  the fields below.
 */
#ifndef LG_LIVE_LIMITS_H
#define LG_LIVE_LIMITS_H

#include <stdatomic.h>
#include <stdint.h>

#include "config.h"

struct lg_live_limits {
    _Atomic uint32_t max_event_bytes;         /* limits.*: the control port, per request */
    _Atomic uint32_t max_batch_bytes;
    _Atomic uint32_t max_topics;              /* for messages: the hub holds its own copy */
    _Atomic uint32_t publish_wait_ms;
    _Atomic uint32_t max_topics_per_client;   /* the public port, per subscribe */
    _Atomic uint32_t topic_creations_per_s;   /* per connection, when it opens */
    _Atomic uint32_t keepalive_timeout_ms;    /* per idle keep-alive wait */
    _Atomic uint32_t poll_default_timeout_ms; /* poll.*: per long-poll request */
    _Atomic uint32_t poll_max_timeout_ms;
};

/* Publish cfg's values (main thread). */
void lg_live_limits_store(struct lg_live_limits *l, const struct lg_config *cfg);

/* One limit's value now. */
static inline uint32_t lg_live(const _Atomic uint32_t *field)
{
    return atomic_load_explicit(field, memory_order_relaxed);
}

#endif
