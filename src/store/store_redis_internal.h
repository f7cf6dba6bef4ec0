/*
 * store_redis_internal.h - what the two files of the Redis store share: store_redis.c (the
 * store.h operations, appends, the mirror's reads, the scripts) and redis_feed.c (a stream's
 * live feed: its Pub/Sub subscription while local subscribers want it, loading its mirror,
 * catch-up reads from the stream). No other file includes it.
 *
 * Owns/Frees/Threads/Bounds: as store_redis.h says. Fields marked "bridge thread only" are
 * touched by redis_feed.c on the bridge thread alone.
 */
#ifndef LG_STORE_REDIS_INTERNAL_H
#define LG_STORE_REDIS_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "dlist.h"
#include "history.h"
#include "store_redis.h"

struct redis_store;
struct redis_shard;

/* Where a stream's Pub/Sub subscription stands (bridge thread). */
enum redis_sub {
    REDIS_SUB_NONE = 0,
    REDIS_SUB_ASKED,   /* SUBSCRIBE sent, not confirmed */
    REDIS_SUB_ON,      /* confirmed: every later append of the topic reaches this node */
    REDIS_SUB_LEAVING, /* UNSUBSCRIBE sent, not confirmed */
};

struct redis_stream {
    struct lg_stream base;
    struct redis_store *store;
    struct redis_shard *shard;  /* immutable: the Redis that holds it (a hash of its name) */
    char *name;                 /* immutable */
    size_t name_len;
    char *key_stream, *key_counter, *key_epoch, *key_channel, *key_behind; /* immutable */
    size_t prefix_len;          /* of key_stream before ":s": the idempotency keys' start */
    struct lg_history_bounds bounds;
    bool deltas;                /* immutable: a document topic (store.h, stream_open) */
    pthread_mutex_t lock;       /* the mirror */
    void *owner;                /* {lock} the hooks' name for it */
    uint32_t epoch;             /* {lock} */
    uint64_t newest;            /* {lock} */
    bool ready;                 /* {lock} the mirror is loaded and kept current */
    struct lg_history history;  /* {lock} */
    /* Interest, set by the hub (any thread) under the shard's interest lock. */
    bool wanted;                /* {interest_lock} local subscribers want its events */
    bool marked;                /* {interest_lock} on the store's list of changed interests */
    uint64_t last_wanted_ms;    /* {interest_lock} when it was last wanted (monotonic) */
    bool refresh_asked;         /* {interest_lock} a cursor was ahead of the mirror: read */
    struct redis_stream *marked_next; /* {interest_lock} */
    /* Bridge thread only. */
    enum redis_sub sub;
    bool loading;               /* the load script is in flight */
    bool catching;              /* a catch-up read is in flight */
    bool queued;                /* on the catch-up queue */
    bool stalled;               /* an inbox had no room: on the stalled list, read again later */
    uint64_t stalled_since_ms;  /* when it last stalled */
    bool said_behind;           /* this node set the topic's behind key and has not cleared it */
    uint64_t said_behind_ms;    /* ... when it last set it (it expires: refreshed while behind) */
    bool lingering;             /* on the linger list: subscribed, no longer wanted */
    uint64_t heard;             /* the newest position a message named that was not applied */
    uint32_t heard_epoch;       /* ... and its epoch */
    uint32_t empty_reads;       /* reads in a row that found nothing of what was heard */
    struct lg_event **held;     /* events not applied yet, in order: messages that came during
                                   a read, events an inbox had no room for */
    uint32_t held_count, held_cap;
    struct lg_event *delta_base;/* deltas: the newest event applied to the mirror (a reference;
                                   NULL when the mirror is dropped), the base of the next */
    bool held_overflow;         /* more came than LG_REDIS_HELD_MAX: the stream has them */
    struct redis_stream *queue_next, *linger_next, *stalled_next;
    struct redis_stream *taken_next; /* the marked list as the bridge took it */
    struct redis_stream *closing_next; /* {interest_lock} on the shard's closing list */
    uint64_t id;                /* {shard->streams_lock} what a read in flight names it by */
    struct lg_dlink link;       /* {shard->streams_lock} on its shard's list of open streams */
    struct redis_stream *next_by_channel; /* {shard->streams_lock} the channel index's chain */
};

/* The sha1 of a script (EVALSHA), and its text for SCRIPT LOAD. */
struct redis_script {
    const char *text;
    char sha[41];
};

/* One Redis (a shard): its bridge, and the streams of the topics it holds. */
struct redis_shard {
    struct redis_store *store;
    struct lg_redis_bridge *bridge;
    pthread_mutex_t streams_lock;
    struct lg_dlist streams;          /* {streams_lock} every open stream, by its link */
    struct redis_stream **by_channel; /* {streams_lock} index by key_channel, chained */
    size_t by_channel_mask;           /* {streams_lock} buckets - 1 (a power of two) */
    size_t stream_count;              /* {streams_lock} */
    uint64_t next_id;                 /* {streams_lock} */
    pthread_mutex_t interest_lock;    /* a leaf lock: the hub takes it under a topic lock */
    struct redis_stream *marked;      /* {interest_lock} streams whose interest changed */
    struct redis_stream *closing;     /* {interest_lock} streams whose topic went (each once,
                                         so at most the open streams): the bridge leaves their
                                         channels and frees them */
    struct lg_redis_job kick;         /* take the changed interests and closings, subscribe,
                                         load */
    _Atomic bool kick_queued;
    struct lg_redis_job unstall;      /* a worker made room: retry the stalled streams now */
    _Atomic bool unstall_queued;
    _Atomic bool any_stalled;         /* the stalled list is not empty (read by workers) */
    /* Bridge thread only. */
    struct redis_stream *queue_head, *queue_tail; /* streams waiting for a read */
    struct redis_stream *linger;                  /* subscribed streams no longer wanted */
    struct redis_stream *stalled;                 /* streams whose inbox had no room */
    uint32_t reads_in_flight;                     /* loads and catch-ups sent, unanswered */
    uint64_t tick_at_ms;                          /* the armed bridge timer (0 = none) */
    uint64_t epoch_rng;                           /* candidate epochs (seeded once) */
};

struct redis_store {
    struct lg_store base;
    struct lg_redis_options opts;     /* opts.url: unused (each shard has its own) */
    char *prefix;                     /* the copy opts.key_prefix points at */
    struct lg_redis_hooks hooks;
    bool has_hooks;
    struct redis_script append_script, load_script, catch_up_script; /* immutable */
    char node[24];                    /* immutable: "<this node's random id>|" (presence) */
    _Atomic bool presence_failing;    /* the last presence share failed (logged once) */
    uint32_t shard_count;             /* immutable */
    struct redis_shard shards[];      /* a topic's shard: a hash of its name, mod shard_count */
};

/* redis_feed.c */
uint32_t lg_redis__random_epoch(struct redis_shard *sh);
/* FNV-1a of s[0..len): the channel index's, and which shard holds a topic. */
uint32_t lg_redis__hash(const char *s, size_t len);
/* Ask the shard's bridge to act on changed interests (any thread). */
void lg_redis__kick(struct redis_shard *sh);
void lg_redis__run_kick(struct lg_redis_job *job, bool up); /* the kick job's run */
void lg_redis__run_unstall(struct lg_redis_job *job, bool up);
/* A worker took events: if any stream of sh waits for room, retry it now (any thread). */
void lg_redis__room(struct redis_shard *sh);
void lg_redis__on_up(void *arg);   /* struct lg_redis_bridge_user callbacks; arg: the shard */
void lg_redis__on_down(void *arg);
void lg_redis__on_pubsub(void *arg, void *reply);
void lg_redis__on_feed_lost(void *arg);
void lg_redis__on_feed_back(void *arg);
/* Index s by its channel (streams_lock held). Return value: 0, or -1 (out of memory). */
int lg_redis__index_add(struct redis_shard *sh, struct redis_stream *s);
void lg_redis__index_remove(struct redis_shard *sh, struct redis_stream *s);
/* s's interest changed, or (refresh) a cursor was ahead of its mirror: put it on its shard's
 * list and wake the bridge (any thread). */
void lg_redis__mark(struct redis_stream *s, bool refresh);
/* SCRIPT LOAD every script on the command connection (bridge thread), so the EVALSHAs sent
 * after it find them: at each connect, and after a NOSCRIPT (the cache was flushed). */
void lg_redis__load_scripts(struct redis_shard *sh);

/* redis_presence.c */
/* A random id for this node's presence entries, with its "|" (cap >= 18). */
void lg_redis__node_id(char *out, size_t cap);
void lg_redis__share_presence(struct lg_store *store, struct lg_presence_share *share);

/* store_redis.c: the scripts' shared prologue and the message format they publish. */
#define LG_REDIS_CATCH_UP_COUNT 512 /* entries per catch-up read */
#define LG_REDIS_HELD_MAX 1024      /* messages held per stream while a read is in flight */
/* Release what s holds (bridge thread; also when the stream is freed). */
void lg_redis__release_held(struct redis_stream *s);
/* Unlink s from its shard's list and channel index and free it (streams_lock held, and no
 * thread can reach s any more: the bridge thread, or the bridge stopped). */
void lg_redis__stream_free(struct redis_stream *s);
/* The stream linked by l on a shard's list. */
static inline struct redis_stream *lg_redis__stream_of(struct lg_dlink *l)
{
    return lg_dlist_entry(l, struct redis_stream, link);
}

#endif
