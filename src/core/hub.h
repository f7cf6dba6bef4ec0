/*
 * hub.h - the topic registry: where publishers (control port) and workers (subscribers) meet.
 *
 * Owns:    every struct lg_topic (hash table, bounded by limits.max_topics), the store that
 *          keeps their streams (the memory store, store_memory.h), and the list of worker
 *          inboxes it hands events to.
 * Frees:   lg_hub_destroy() frees topics, their streams and the store; call it after every
 *          worker and the control port were joined. lg_hub_expire() (once a second, over a
 *          bounded slice of the table each time) also collects idle topics: those only the
 *          registry references (no subscription, no event waiting in an inbox, no lookup in
 *          progress) that were never published to, so a subscription to a name nobody
 *          publishes to is not a permanent registry entry. A topic that was published to keeps
 *          its stream (its position and epoch), so the cursors issued for it stay valid.
 * Threads: lg_hub_publish*() from any thread; lg_hub_subscribe/unsubscribe/replay only from the
 *          worker thread whose index is passed. Critical sections are short: registry lookups
 *          under `registry_lock`, sequence + history + inbox pushes under the topic's lock.
 *          No lock is held while a worker is woken, and nothing here does I/O.
 * Bounds:  topics (limits.max_topics), live event bytes (limits.max_retained_bytes), each
 *          inbox (limits.worker_inbox_events: events accepted for a worker and not yet
 *          taken by it). Over any of them a publish is refused, never accepted and then
 *          dropped; a full inbox is LG_PUBLISH_WORKERS_BEHIND, which the control port answers
 *          by holding the publisher until the worker has room (the pressure goes back to
 *          whoever publishes faster than the subscribers' workers write).
 */
#ifndef LG_HUB_H
#define LG_HUB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "cursor.h"
#include "presence.h"

struct lg_client_publish;
struct lg_hub;
struct lg_inbox;
struct lg_loop_guest;
struct lg_event;
struct lg_topic;

typedef void lg_wake_proc(void *arg);
typedef void lg_room_proc(void *arg);
typedef void lg_occupancy_proc(void *arg, const char *topic, bool occupied);

enum lg_publish_status {
    LG_PUBLISH_OK = 0,
    LG_PUBLISH_BAD_TOPIC,      /* name breaks the grammar (422) */
    LG_PUBLISH_RESERVED_TOPIC, /* "$..." topics are the gateway's own (422) */
    LG_PUBLISH_BAD_DATA,       /* not UTF-8 text (400) */
    LG_PUBLISH_TOO_MANY_TOPICS,/* limits.max_topics reached (503) */
    LG_PUBLISH_WORKERS_BEHIND, /* a worker holds limits.worker_inbox_events unprocessed events:
                                  nothing was published; the caller waits for room
                                  (lg_hub_on_room) or refuses (503) */
    LG_PUBLISH_MEMORY_FULL,    /* limits.max_retained_bytes reached (503) */
    LG_PUBLISH_OOM,            /* allocation failed (503) */
    LG_PUBLISH_STORE_UNAVAILABLE, /* the remote store (Redis) is unreachable or its bridge
                                     queue is full: not published, or not known to be (503;
                                     a retry with the same idempotency key is safe) */
};

struct lg_publish_req {
    const char *topic;
    size_t topic_len;
    const char *type;  /* NULL = "message" */
    size_t type_len;
    const char *key;   /* NULL = none */
    size_t key_len;
    const char *data;
    size_t data_len;
    bool data_is_json;
    const char *idempotency_key; /* NULL = none; see lg_hub_publish() */
    size_t idempotency_key_len;
    const char *tags;  /* canonical tags text (tags.h); NULL or "" = none */
    size_t tags_len;
    bool gateway_own;  /* the gateway's own figures (sys_stats.h): a '$' topic is allowed and
                          the event is not counted in events_published */
};

struct lg_publish_result {
    uint64_t seq;
    uint32_t epoch;
    char id[LG_CURSOR_ENTRY_MAX];
    bool duplicate; /* an event with this idempotency key is still in history: it is the answer */
};

struct lg_hub *lg_hub_create(const struct lg_config *cfg, uint32_t workers);
void lg_hub_destroy(struct lg_hub *hub);

/* A SIGHUP reload's topic rules: topics created from now on take rules->topic_rules (and its
 * history and on_slow defaults), and rules->limits.max_topics bounds their creation; topics
 * that exist keep theirs (lowering the bound removes none). The hub reads rules only
 * under its registry lock, so once this returns it holds no pointer into the previous one:
 * the caller (app.c, main thread) may free that. rules must outlive the hub or the next
 * call. */
void lg_hub_set_rules(struct lg_hub *hub, const struct lg_config *rules);

/* Whether the topic rules in force (the last reload's) let any client that may subscribe to
 * topic publish to it from its connection ("client_publish": true). Any thread; a scan of the
 * rules under the registry's read lock, made per client publish, never per event. */
bool lg_hub_client_publish_open(struct lg_hub *hub, const char *topic);

/* Register worker w's inbox and how to wake it (before any publish). */
void lg_hub_attach_worker(struct lg_hub *hub, uint32_t w, struct lg_inbox *inbox,
                          lg_wake_proc *wake, void *wake_arg);

/* Call room(arg) from a worker thread each time that worker took events, so publishes
 * refused with LG_PUBLISH_WORKERS_BEHIND can be retried. Set before any publish; room must be
 * cheap and must not call back into the hub. */
void lg_hub_on_room(struct lg_hub *hub, lg_room_proc *room, void *arg);

/* Call occupancy(arg, name, true) when a topic gets its first subscriber on this node (any
 * worker), and (arg, name, false) when it loses its last; called under the topic's lock, so it
 * must only queue and must not call back into the hub. Set before the workers start. */
void lg_hub_on_occupancy(struct lg_hub *hub, lg_occupancy_proc *occupancy, void *arg);

/* Worker w dispatched events it took from its inbox: there is room (worker thread). */
void lg_hub_worker_done(struct lg_hub *hub, uint32_t w);

/* Publish one event. A request with an idempotency key that an event still in the topic's
 * history carries publishes nothing: res describes that event and res->duplicate is set, so a
 * publisher may retry a publish whose answer it lost without creating a duplicate.
 * Return value: LG_PUBLISH_OK with res filled, or the refusal. */
enum lg_publish_status lg_hub_publish(struct lg_hub *hub, const struct lg_publish_req *req,
                                      struct lg_publish_result *res);

/* Publish n events in order, waking each worker at most once. Stops at the first refusal.
 * Return value: how many were accepted (a prefix of reqs); *status says why it stopped. */
size_t lg_hub_publish_many(struct lg_hub *hub, const struct lg_publish_req *reqs, size_t n,
                           struct lg_publish_result *res, enum lg_publish_status *status);

const char *lg_publish_status_message(enum lg_publish_status s);

/*
 * The remote store (Redis, hub_remote.c). lg_hub_publish() and _many() refuse with
 * LG_PUBLISH_STORE_UNAVAILABLE there: publishes are asynchronous. lg_hub_publish_async()
 * hands one publish to the store's thread and returns at once: LG_PUBLISH_OK when it was
 * handed over (done is then called exactly once, later, on the store's thread, with the
 * result: the id Redis assigned, or the original one for an idempotency key Redis still
 * remembers; possibly before lg_hub_publish_async() returned), or a refusal (done is not
 * called). The fan-out of every event, the publisher's
 * own included, comes from the store's tail, in sequence order, not from this completion.
 */
typedef void lg_publish_done(void *arg, enum lg_publish_status s,
                             const struct lg_publish_result *res);
bool lg_hub_remote(const struct lg_hub *hub);
enum lg_publish_status lg_hub_publish_async(struct lg_hub *hub, const struct lg_publish_req *req,
                                            lg_publish_done *done, void *arg);
/* Hand a client's publish (client_publish.h) to the remote store: req as
 * lg_hub_publish_async(), answered through p on its worker p->worker: the completion posts p
 * to that worker's queue and wakes it (it only schedules). Return value: LG_PUBLISH_OK when
 * handed over (p is then the worker's to take back, lg_hub_take_published()), or the refusal
 * (p was not taken: the caller frees it). */
enum lg_publish_status lg_hub_publish_for_client(struct lg_hub *hub,
                                                 const struct lg_publish_req *req,
                                                 struct lg_client_publish *p);
/* The oldest client publish completed for worker w, or NULL (worker w's thread). */
struct lg_client_publish *lg_hub_take_published(struct lg_hub *hub, uint32_t w);
/* The store's state: "memory", or the remote store's "up", "down", "connecting", "stopped"
 * (any thread; for /readyz and the metrics). */
const char *lg_hub_store_state(const struct lg_hub *hub);
/* Whether publishes can be accepted: the memory store always, a remote store when "up". */
bool lg_hub_store_ready(const struct lg_hub *hub);
/* Stop the remote store's thread (pending publishes complete as unavailable): before the
 * control port stops. Idempotent; nothing for the memory store. */
void lg_hub_stop_store(struct lg_hub *hub);
/* Have the store's own thread serve guests[0..n) (the control port's daemons), where it has
 * one: with a remote store a publish then hands its append to the thread it is served on.
 * Return value: true when hosted; false: the caller hosts them (on the workers). */
bool lg_hub_host(struct lg_hub *hub, const struct lg_loop_guest *guests, uint32_t n);
/* Take back what lg_hub_host() hosted and join the thread that served it (stops the store,
 * as lg_hub_stop_store()): before the control port stops. Nothing when it hosted nothing. */
void lg_hub_unhost(struct lg_hub *hub);

/* Why a call on the registry or a topic (lg_hub_topic(), lg_hub_subscribe()) did not do what
 * was asked; lg_hub_status_message() is the text for a person. */
enum lg_hub_status {
    LG_HUB_OK = 0,
    LG_HUB_BAD_NAME,        /* the name breaks the grammar (lg_topic_name_problem() says how) */
    LG_HUB_TOO_MANY_TOPICS, /* limits.max_topics reached: no new topic */
    LG_HUB_OOM,             /* allocation failed */
    LG_HUB_TOPIC_DELETED,   /* deleted while subscribing (DELETE /v1/topics/{topic}): retry */
    LG_HUB_CURSOR_AHEAD,    /* the cursor names a position past the topic's newest event */
};
const char *lg_hub_status_message(enum lg_hub_status s);

/* The topic of this name, if there is one. Return value: the topic with a reference the
 * caller gives back with lg_hub_topic_done() (a subscription takes its own), or NULL (none;
 * a name that breaks the grammar names none). */
struct lg_topic *lg_hub_find_topic(struct lg_hub *hub, const char *name, size_t len);
/* The topic of this name, created when there is none. Return value: LG_HUB_OK with *out set
 * to the topic and a reference as lg_hub_find_topic()'s; else LG_HUB_BAD_NAME,
 * LG_HUB_TOO_MANY_TOPICS or LG_HUB_OOM, with *out NULL. */
enum lg_hub_status lg_hub_topic(struct lg_hub *hub, const char *name, size_t len,
                                struct lg_topic **out);
void lg_hub_topic_done(struct lg_hub *hub, struct lg_topic *t);

/* What a subscriber must be sent first for one topic, computed under the topic's lock. */
struct lg_replay {
    uint64_t position;       /* seq the subscriber is at after the replay (cursor value) */
    uint32_t epoch;          /* the topic's epoch */
    bool reset;              /* the cursor's epoch is not the topic's: client must reload */
    uint64_t gap_from;       /* first seq no longer retained (0 = no gap) */
    uint64_t gap_to;         /* last seq no longer retained */
    bool more;               /* replay was cut at max_events/max_bytes; more is in history */
    bool pending;            /* a remote stream still loading: nothing computed yet; the
                                subscription resolves on the topic's first event
                                (lg_subscriber_offer) */
    struct lg_event **events;/* new references, oldest first; caller frees the array */
    size_t count;
    uint64_t presence_batches; /* when registered: the topic's presence batches made before
                                  (presence.h); the worker owes it only later ones */
};

/*
 * Compute the replay for a subscriber of topic t on worker w from `since` (NULL = start now),
 * copying at most max_events history events and, beyond the first, at most max_bytes bytes
 * (event->size). When `listen` is set the subscriber is also
 * registered on worker w in the same critical section, so no event can fall between the replay
 * and live delivery (the worker drops live events whose seq <= replay position, and presence
 * batches numbered <= presence_batches).
 * Return value: LG_HUB_OK, LG_HUB_TOPIC_DELETED, LG_HUB_CURSOR_AHEAD or LG_HUB_OOM (nothing
 * registered, *out empty).
 */
enum lg_hub_status lg_hub_subscribe(struct lg_hub *hub, struct lg_topic *t, uint32_t w,
                                    const struct lg_cursor_entry *since, size_t max_events,
                                    uint64_t max_bytes, bool listen, struct lg_replay *out);
void lg_replay_release(struct lg_replay *r);

/* The position of t just before wall-clock time unix_ms: after its newest retained event
 * published before then (INT64_MAX: its newest). How a subscription made "from now" while a
 * remote stream loaded finds where "now" was (worker threads). */
void lg_hub_position_before(struct lg_hub *hub, struct lg_topic *t, int64_t unix_ms,
                            struct lg_cursor_entry *out);

/* Where a subscription of t that starts at `start` (policy.h) begins, as the cursor entry its
 * replay follows, counting `at` as the newest position (UINT64_MAX: the stream's newest now).
 * Return value: false when t's remote stream is not loaded yet (out untouched). */
bool lg_hub_start_position(struct lg_hub *hub, struct lg_topic *t, struct lg_start start,
                           uint64_t at, struct lg_cursor_entry *out);

/* Undo one listening subscription of worker w on topic t. */
void lg_hub_unsubscribe(struct lg_hub *hub, struct lg_topic *t, uint32_t w);

uint32_t lg_hub_workers(const struct lg_hub *hub);

/* Events accepted for the workers and not yet taken by them (every inbox's occupancy). */
uint64_t lg_hub_backlog(const struct lg_hub *hub);
/* Occupancy of worker w's inbox. */
uint64_t lg_hub_worker_backlog(const struct lg_hub *hub, uint32_t w);

/* ---- Occupancy and presence (hub_presence.c, presence.h) ---- */

/* t's listening subscriptions over every worker: its occupancy (any thread). */
uint32_t lg_hub_subscribers(struct lg_hub *hub, struct lg_topic *t);
/* Whether t lists its members (a "presence" rule; immutable). */
bool lg_hub_presence_on(const struct lg_topic *t);
/* A subscription of member id (len bytes) started listening to t (its worker's thread).
 * Return value: true when it is listed; false when t lists no members or the member is beyond
 * presence_max_members (counted, not listed). Pass it to lg_hub_presence_leave(). */
bool lg_hub_presence_join(struct lg_hub *hub, struct lg_topic *t, const char *id, size_t len);
/* That subscription stopped listening. */
void lg_hub_presence_leave(struct lg_hub *hub, struct lg_topic *t, const char *id, size_t len,
                           bool listed);
/* Copy t's listed members (none when t lists none). Return value: 0, or -1 out of memory. */
int lg_hub_presence_copy(struct lg_hub *hub, struct lg_topic *t, struct lg_presence_list *out);
/* Hand each topic's presence and occupancy changes since the last call, coalesced into one
 * batch, to the workers (worker_call.h). Called once a tick by one thread (the main thread).
 * Return value: batches posted. */
size_t lg_hub_presence_report(struct lg_hub *hub);

/* Evict history past its age bound and collect idle topics (see Frees above) in the next slice
 * of the table: at most 8,192 buckets and about 2,048 topics a call, so that every topic is
 * visited once per ceil(buckets / 8192) calls at the least, and a call costs the same however
 * many topics exist. Called once a second by one thread (the main thread).
 * Return value: how many topics were collected. */
size_t lg_hub_expire(struct lg_hub *hub);

#endif
