/*
 * hub_internal.h - the hub's state, shared by the two files that implement it: hub.c (the
 * registry, publishing, subscribing, expiry) and hub_admin.c (the admin API's listing,
 * deletion and worker calls). No other file includes it.
 *
 * Owns/Frees/Threads/Bounds: as hub.h says. The graveyard holds deleted topics (unlinked from
 * the registry) until only its own reference is left; lg_hub_expire() then frees them.
 */
#ifndef LG_HUB_INTERNAL_H
#define LG_HUB_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "hub.h"
#include "worker_call.h"

struct lg_worker_link {
    struct lg_inbox *inbox;
    lg_wake_proc *wake;
    void *wake_arg;
    struct lg_mailbox calls;        /* the admin API's calls to this worker (worker_call.h) */
};

struct lg_hub {
    const struct lg_config *cfg;
    uint32_t workers;
    struct lg_worker_link *links;   /* [workers], set before publishing starts */
    lg_room_proc *room;             /* set before publishing starts */
    void *room_arg;
    struct lg_store *store;         /* where every topic's stream is kept */
    pthread_rwlock_t registry_lock;
    struct lg_topic **buckets;      /* {registry_lock} chained hash table */
    size_t bucket_mask;
    size_t topic_count;             /* {registry_lock} */
    struct lg_topic *graveyard;     /* {registry_lock} deleted topics, via next_in_bucket */
};

uint32_t lg_hub_hash_name(const char *s, size_t len);

#endif
