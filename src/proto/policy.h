/*
 * policy.h - the bounds and the slow-consumer policy that topics and subscribers obey.
 *
 * Owns:    plain value types only: enum lg_slow_policy, struct lg_history_bounds (with its
 *          LG_HISTORY_GIVEN_* field bits), struct lg_queue_bounds and struct lg_start (where a
 *          subscription without a cursor starts). Nothing is allocated.
 * Frees:   nothing to free; every value is copied or embedded by whoever holds it (the config,
 *          a topic, a subscriber).
 * Threads: values, so any thread may read its own copy; the shared copies live in the config,
 *          immutable once the workers start.
 * Bounds:  none here; the ranges of every field are the settings' ranges in config.c
 *          (docs/configuration.md). This header includes nothing of livegate, so any layer,
 *          however low, may use these types without depending on the configuration.
 */
#ifndef LG_POLICY_H
#define LG_POLICY_H

#include <stdint.h>

/* What happens to a subscriber whose queue overflows or lags (see docs/semantics.md). */
enum lg_slow_policy {
    LG_SLOW_DROP_OLDEST = 0, /* skip ahead; the client gets a `gap` naming the lost range */
    LG_SLOW_DISCONNECT,      /* tell the client why and close; its cursor stays valid */
    LG_SLOW_CONFLATE,        /* keep only the newest queued event per key (unkeyed: drop-oldest) */
};

/* The policies' names as the config file and --print-config write them: NULL-terminated,
 * indexed by the enum value. */
extern const char *const lg_slow_policy_names[];

/* The name of p ("drop-oldest", ...), or "unknown" for a value outside the enum. */
const char *lg_slow_policy_name(enum lg_slow_policy p);

/* The most events a topic may retain (history.max_events), and so the largest rewind. */
#define LG_HISTORY_MAX_EVENTS_MAX 1000000u

struct lg_history_bounds {
    uint32_t max_events; /* events retained per topic for resume */
    uint64_t max_bytes;  /* payload+encoding bytes retained per topic */
    uint64_t max_age_ms; /* events older than this are evicted (0 = no age bound) */
};

/* One bit per field of struct lg_history_bounds, for saying which fields were given (a topic
 * rule's history_given, topic_rules.h). Kept so inheritance can be resolved after the whole
 * file is read: a rule may come before the "history" object it inherits from. */
#define LG_HISTORY_GIVEN_MAX_EVENTS 0x1u
#define LG_HISTORY_GIVEN_MAX_BYTES  0x2u
#define LG_HISTORY_GIVEN_MAX_AGE_MS 0x4u

struct lg_queue_bounds {
    uint32_t max_events;          /* events queued per client before the policy fires */
    uint64_t max_bytes;           /* bytes queued per client before the policy fires */
    uint64_t max_lag_ms;          /* oldest queued event older than this = slow (0 = off) */
    enum lg_slow_policy on_slow;  /* default policy for topics no rule matches */
};

/* Where a subscription starts on a topic its cursor does not name (docs/semantics.md (c)). */
enum lg_start_kind {
    LG_START_NOW = 0, /* with the next event published */
    LG_START_LATEST,  /* with the newest retained event, if any (never a gap) */
    LG_START_REWIND,  /* with the last `rewind` events; those not retained are a gap */
};

struct lg_start {
    enum lg_start_kind kind;
    uint32_t rewind; /* LG_START_REWIND: 0 .. LG_HISTORY_MAX_EVENTS_MAX events */
};

/* The position after which a subscription that starts at `start` is replayed, for a stream
 * whose newest event is `newest` and oldest retained one `oldest` (newest + 1: none). */
uint64_t lg_start_position(struct lg_start start, uint64_t newest, uint64_t oldest);

#endif
