/*
 * store_redis_internal.h - what the two files of the Redis store share: store_redis.c (the
 * store.h operations, appends, the mirror's reads) and redis_tail.c (loading a stream, the
 * tail, the epoch check after a reconnect). No other file includes it.
 *
 * Owns/Frees/Threads/Bounds: as store_redis.h says; fields marked "bridge thread only" are
 * touched by redis_tail.c on the bridge thread alone.
 */
#ifndef LG_STORE_REDIS_INTERNAL_H
#define LG_STORE_REDIS_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "history.h"
#include "store_redis.h"

struct redis_store;

struct redis_stream {
    struct lg_stream base;
    struct redis_store *store;
    char *name;                 /* immutable */
    size_t name_len;
    char *key_stream, *key_counter, *key_epoch; /* immutable */
    size_t prefix_len;          /* of key_stream before ":s": the idempotency keys' start */
    struct lg_history_bounds bounds;
    pthread_mutex_t lock;       /* the mirror */
    void *owner;                /* {lock} the hooks' name for it */
    uint32_t epoch;             /* {lock} */
    uint64_t newest;            /* {lock} */
    bool ready;                 /* {lock} */
    struct lg_history history;  /* {lock} */
    /* Bridge thread only. */
    bool syncing;
    bool stalled;               /* the last delivery found no room: retried */
    bool checking;              /* its epoch is being checked after a reconnect: not tailed */
    uint64_t id;                /* {store->streams_lock} what a load in flight names it by */
    struct redis_stream *next;  /* {store->streams_lock} */
};

struct redis_store {
    struct lg_store base;
    struct lg_redis_options opts;
    char *url, *prefix;         /* copies opts point at */
    struct lg_redis_hooks hooks;
    bool has_hooks;
    struct lg_redis_bridge *bridge;
    pthread_mutex_t streams_lock;
    struct redis_stream *streams; /* {streams_lock} every open stream */
    struct lg_redis_job kick;     /* sync what is not synced, (re)start the tail */
    _Atomic bool kick_queued;
    bool tail_reading;            /* bridge thread: an XREAD is outstanding */
    uint64_t next_id;             /* {streams_lock} */
};

/* redis_tail.c */
uint32_t lg_redis__random_epoch(void);
/* Ask the bridge to load the streams not loaded yet (any thread). */
void lg_redis__kick(struct redis_store *st);
void lg_redis__run_kick(struct lg_redis_job *job, bool up); /* the kick job's run */
void lg_redis__on_up(void *arg);   /* struct lg_redis_bridge_user callbacks */
void lg_redis__on_down(void *arg);

#endif
