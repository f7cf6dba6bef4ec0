/*
 * store_redis.h - the Redis store (store.h), for several nodes sharing topics: a stream per
 * topic for ids, history and resume, a Pub/Sub channel per topic for the live path.
 *
 * Keys, per topic T, all with the hash tag {T} so one topic's keys share a cluster slot:
 *   <prefix>{T}:s    the stream; entry id 0-<seq>, fields y (type), k (key), d (data),
 *                    j (1 = JSON), u (published, unix ms), i (idempotency key)
 *   <prefix>{T}:n    the counter INCRed for each append (the newest position ever)
 *   <prefix>{T}:e    the epoch: the topic's life (gone = a new life begins)
 *   <prefix>{T}:i:K  idempotency key K -> its position, expiring after the window
 *   <prefix>{T}:p    the channel each append is published on, with its epoch and position
 *   <prefix>{T}:b    set (with an expiry) while a node that delivers T is behind: appends wait
 *   <prefix>{T}:m    presence: a sorted set of "<node>|<member>" scored by expiry (unix ms,
 *                    Redis' clock); each node, once a tick, refreshes its own members, removes
 *                    the ones that left it and the expired ones, and reads the others'
 *                    (redis_presence.c: one script per topic, pipelined, per shard)
 * One Lua script per append (EVALSHA) assigns the position (INCR), appends it (XADD MAXLEN ~
 * the history bound), records the idempotency key (SET NX PX window) and publishes it, so ids
 * are the same on every node and depend on no clock; a retry of a key still in the window
 * answers the original position (LG_APPEND_DUPLICATE).
 * With opts.wait_replicas N > 0 a WAIT N follows each script on the same connection
 * (pipelined) and an append is answered only when it saw N replicas; fewer complete it as
 * LG_APPEND_UNAVAILABLE (appended, not known to be replicated).
 *
 * A stream local subscribers want (listen()) is followed: its channel subscribed and its
 * mirror (the retained events, epoch, newest position) loaded, then kept current from the
 * channel, with reads of the stream to join the two (redis_feed.c says how). Every event goes
 * through the hooks (on the bridge thread, under the owner's lock) in position order, exactly
 * once per node - also the node's own appends: the append completion only answers the
 * publisher. Reads (read_after, oldest, newest, epoch) are the mirror's; a stream nobody wants
 * has none (ready() is false) and costs nothing but its keys' names.
 *
 * Owns:    one bridge (redis_bridge.h) per shard, and every stream's mirror.
 * Frees:   stop() joins the bridges; destroy() frees the store after every stream was closed.
 *          A stream may be closed while the bridge runs, but not with an append pending.
 * Threads: the store.h rules, except: append(), listen() and refresh() from any thread; the
 *          mirror has its own lock (order: the owner's lock, then the mirror's); hooks run on
 *          the stream's shard's bridge thread.
 * Bounds:  each mirror holds the stream's history bounds, and exists only while the topic is
 *          wanted (and LINGER_MS after); each bridge queue holds queue_max appends (past it
 *          append completes at once as LG_APPEND_UNAVAILABLE); reads in flight per shard
 *          are bounded (redis_feed.c). Streams are not collected while the store runs (the hub
 *          keeps Redis topics).
 */
#ifndef LG_STORE_REDIS_H
#define LG_STORE_REDIS_H

#include <stdbool.h>
#include <stddef.h>

#include "redis_bridge.h"
#include "store.h"

struct lg_event;

/* The hub's side of the live path, called on the bridge thread for the stream bound to owner. */
struct lg_redis_hooks {
    void *arg;
    void (*lock)(void *arg, void *owner);
    /* A new event of owner's stream, in position order. Return value: false when it cannot be
     * delivered now (no inbox room): the store retries it later and does not retain it yet. */
    bool (*deliver)(void *arg, void *owner, struct lg_event *ev);
    void (*unlock)(void *arg, void *owner);
    /* Presence (share_presence): the members other nodes list now for owner's topic,
     * ids[0..n) of lens[i] bytes each (borrowed for the call), without the lock held. */
    void (*presence)(void *arg, void *owner, const char *const *ids, const size_t *lens,
                     size_t n);
};

/* Start one bridge per Redis of urls[0..url_count) (opts.url is not read): each topic lives on
 * one of them, urls[hash(topic) % url_count] (FNV-1a of its name), for the life of the
 * deployment. hooks may be NULL (the store is read through its streams only).
 * Return value: the store, or NULL with err filled. */
struct lg_store *lg_redis_store_create(const struct lg_redis_options *opts,
                                       const char *const *urls, uint32_t url_count,
                                       const struct lg_redis_hooks *hooks, char *err,
                                       size_t err_cap);

#endif
