/*
 * hub_internal.h - the hub's state, shared by the files that implement it: hub.c (the
 * registry, the in-memory publish path, subscribing, expiry), hub_admin.c (the admin API's
 * listing, deletion and worker calls), hub_presence.c (occupancy and presence, presence.h)
 * and hub_remote.c (the publish path and the fan-out of a remote store, store_redis.h). No
 * other file includes it.
 *
 * Owns/Frees/Threads/Bounds: as hub.h says. The graveyard holds deleted topics (unlinked from
 * the registry) until only its own reference is left; lg_hub_expire() then frees them.
 */
#ifndef LG_HUB_INTERNAL_H
#define LG_HUB_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "client_publish.h"
#include "hub.h"
#include "worker_call.h"

struct lg_event_fields;

struct lg_worker_link {
    struct lg_inbox *inbox;
    lg_wake_proc *wake;
    void *wake_arg;
    struct lg_mailbox calls;        /* the admin API's calls to this worker (worker_call.h) */
    struct lg_client_publish_queue published; /* its clients' publishes the remote store
                                                 completed (client_publish.h) */
};

struct lg_hub {
    const struct lg_config *cfg;
    const struct lg_config *rules;  /* {registry_lock} whose topic_rules (and history and
                                       on_slow defaults) a new topic takes, and whose
                                       limits.max_topics bounds creating one: cfg, or the
                                       config of the last reload (lg_hub_set_rules()) */
    uint32_t workers;
    struct lg_worker_link *links;   /* [workers], set before publishing starts */
    lg_room_proc *room;             /* set before publishing starts */
    void *room_arg;
    lg_occupancy_proc *occupancy;   /* set before the workers start; NULL = none */
    void *occupancy_arg;
    struct lg_store *store;
    bool hosting;                   /* the store's thread serves the control port (app thread) */
    struct lg_store *local;         /* the gateway's own topics ($sys/...): always a memory
                                       store, node-local even when store is remote; == store
                                       in memory mode */
    pthread_rwlock_t registry_lock;
    struct lg_topic **buckets;      /* {registry_lock} chained hash table */
    size_t bucket_mask;
    size_t topic_count;             /* {registry_lock} */
    struct lg_topic *graveyard;     /* {registry_lock} deleted topics, via next_in_bucket */
    size_t sweep_next;              /* {the thread calling lg_hub_expire} next bucket to sweep */
    pthread_mutex_t presence_lock;  /* the list below; taken after a topic's lock */
    struct lg_topic *reporting;     /* {presence_lock} topics with presence changes to report,
                                       each with a reference (hub_presence.c) */
    struct lg_topic *sharing;       /* {presence_lock} remote store: topics whose members this
                                       node shares each tick, each with a reference */
};

uint32_t lg_hub_hash_name(const char *s, size_t len);

/* hub.c's helpers, for hub_remote.c. Each needs t->lock held where it names t. */
bool lg_hub__reserve_inboxes(struct lg_hub *hub, struct lg_topic *t, uint64_t *reserved);
void lg_hub__release_reservations(struct lg_hub *hub, uint64_t reserved);
bool lg_hub__make_room(struct lg_hub *hub, struct lg_topic *t, uint64_t incoming);
/* Admission of the event of fields f (at the position t's stream assigns next) before the
 * store's append, the same for every store: room in the inbox of every worker listening to t
 * (reserved into *reserved; else LG_PUBLISH_WORKERS_BEHIND), then room for the event's size
 * in limits.max_retained_bytes, t's own history giving way first (else
 * LG_PUBLISH_MEMORY_FULL, nothing reserved). Return value: LG_PUBLISH_OK or the refusal. */
enum lg_publish_status lg_hub__admit(struct lg_hub *hub, struct lg_topic *t,
                                     const struct lg_event_fields *f, uint64_t *reserved);
enum lg_publish_status lg_hub__refuse(enum lg_publish_status s);
/* The publisher's answer when lg_hub_topic() found and made no topic. */
enum lg_publish_status lg_hub__publish_status(enum lg_hub_status s);
void lg_hub__fill_result(struct lg_publish_result *res, const struct lg_event *ev,
                         bool duplicate);
void lg_hub__wake_workers(struct lg_hub *hub, uint64_t mask);
/* The fields of the event req asks for on t, stamped now, at the position t's stream assigns
 * next (a remote store may assign a later one when other nodes publish). t->lock held. */
struct lg_event_fields lg_hub__event_fields(struct lg_topic *t, const struct lg_publish_req *req);
/* The validation every publish starts with. Return value: LG_PUBLISH_OK or the problem. */
enum lg_publish_status lg_hub__check_request(const struct lg_publish_req *req);

/* hub_presence.c: give t, made under the registry write lock, the presence state its rule
 * asks for (name: t's name, NUL-terminated). Return value: 0, or -1 when out of memory. */
int lg_hub__give_presence(struct lg_hub *hub, struct lg_topic *t, const char *name);
/* t's subscriber count or members changed: list it for the next report. t->lock held. */
void lg_hub__presence_changed(struct lg_hub *hub, struct lg_topic *t);
/* The remote store's presence hook (store_redis.h): arg is the hub, owner the topic (bridge
 * thread). */
void lg_hub__presence_seen(void *arg, void *owner, const char *const *ids, const size_t *lens,
                           size_t n);

/* hub_remote.c: the Redis store for cfg->redis, its tail delivering through hub. Return
 * value: the store, or NULL (logged why). */
struct lg_store *lg_hub__remote_store(struct lg_hub *hub);

#endif
