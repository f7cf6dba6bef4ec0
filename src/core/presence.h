/*
 * presence.h - who listens to one topic, for the topics a rule asks it of (topic_rules.h:
 * "presence", "occupancy_events"): the members (a token's "sub", else "client:<id>"), and
 * the coalesced changes owed to the topic's subscribers as join, leave and occupancy notices.
 *
 * Owns:    the member table (each member's id, malloc'd, and how many of its subscriptions
 *          listen), the list of members changed since the last batch, and the figures last
 *          sent. A batch (struct lg_presence_batch) owns its notices' text and a reference to
 *          its topic.
 * Frees:   lg_presence_destroy() with the topic (topic.c). A batch: its last
 *          lg_presence_batch_unref() (the call that carried it to the workers, and each
 *          subscription it is owed to).
 * Threads: a struct lg_presence is the topic's, read and written only with topic->lock held
 *          (the workers join and leave through the hub; the main thread takes a batch once a
 *          tick, hub_presence.c). `in_flight` alone is atomic: the last worker to take a
 *          batch clears it. A batch is immutable once made and is read by every worker.
 * Across nodes (the Redis store, hub_presence.c): a member is listed while it listens here
 *          or another node lists it (lg_presence_set_remote, the bridge thread, with the lock
 *          held); a change either way is reported as a join or leave like any other.
 * Bounds:  at most max_members members are listed (a member beyond it is subscribed and
 *          counted in the occupancy, never listed: documented truncation); the table holds at
 *          most 2 * max_members entries (members listed, and members gone but not yet
 *          reported). A batch has at most three notices, a join or leave notice at most
 *          max_members ids of at most LG_GRANT_SUB_MAX bytes. One batch per topic is in
 *          flight at a time: changes made meanwhile wait for the next tick, coalesced.
 */
#ifndef LG_PRESENCE_H
#define LG_PRESENCE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "topic_rules.h"

struct lg_topic;
struct lg_presence;

/* One notice of a batch: its type ("join", "leave", "occupancy") and its JSON members after
 * the opening brace, closing brace included ("topic":"t","members":[...]}). */
struct lg_presence_notice {
    const char *type;
    const char *fields;
    size_t fields_len;
};

#define LG_PRESENCE_BATCH_NOTICES 3

struct lg_presence_batch {
    _Atomic uint32_t refs;
    uint64_t number;               /* the topic's batches made up to this one (1, 2, ...) */
    struct lg_topic *topic;        /* a reference, dropped with the batch */
    size_t count;                  /* notices, in order: join, leave, occupancy */
    struct lg_presence_notice notices[LG_PRESENCE_BATCH_NOTICES];
    char *text;                    /* every notice's fields */
};

/* Return value: the state for rule (members or occupancy_events set), or NULL (out of memory). */
struct lg_presence *lg_presence_create(const struct lg_presence_rule *rule);
void lg_presence_destroy(struct lg_presence *p);

/* A subscription of member id (len bytes) starts listening. Return value: true when the
 * member is listed (it counts until lg_presence_leave()); false when the topic lists no
 * members, max_members are listed already (then it must not call lg_presence_leave()), or
 * out of memory. */
bool lg_presence_join(struct lg_presence *p, const char *id, size_t len);
/* A listed subscription of member id stops listening. */
void lg_presence_leave(struct lg_presence *p, const char *id, size_t len);
/* A subscription lg_presence_join() did not list stops listening. */
void lg_presence_leave_unlisted(struct lg_presence *p);
/* The topic's subscriber count changed (occupancy notices). Return value: whether p now has
 * anything to report (the caller puts the topic on the hub's list of topics to report). */
bool lg_presence_changed(struct lg_presence *p);
/* Members joined or left since the last batch (the caller lists the topic for a batch). */
bool lg_presence_pending(const struct lg_presence *p);

/* How many batches p has made: a subscription that starts listening now is owed only later
 * ones (a batch made before may still be on its way to its worker). */
uint64_t lg_presence_batches_made(const struct lg_presence *p);
/* Whether a batch made before is still being handed to the workers. */
bool lg_presence_in_flight(const struct lg_presence *p);
/* The batch's last worker took it (any thread). */
void lg_presence_delivered(struct lg_presence *p);

/* The changes since the last batch, coalesced: members who joined and still listen, members
 * listed at the last batch who have not listened for a full tick since (a member whose
 * connection is replaced within a tick neither leaves nor joins), and the occupancy
 * `subscribers` when occupancy_events is set and it changed. Marks the batch in flight.
 * Return value: a new batch with a reference to t, or NULL: nothing to report, or out of
 * memory (*lost set: what it settled is not reported). Leaves p pending when a member's
 * leave is still to be reported at the next tick. */
struct lg_presence_batch *lg_presence_take_batch(struct lg_presence *p, struct lg_topic *t,
                                                 uint32_t subscribers, bool *lost);

void lg_presence_batch_ref(struct lg_presence_batch *b);
void lg_presence_batch_unref(struct lg_presence_batch *b); /* NULL is ignored */

/* A copy of the listed members, made under the topic's lock and sorted outside it. */
struct lg_presence_list {
    const char **ids;   /* count ids, pointing into text; sorted once lg_presence_list_sort() */
    size_t count;
    uint64_t unlisted;  /* subscriptions beyond max_members, listed nowhere */
    char *text;
};
/* Copy p's listed members into l (topic->lock held). Return value: 0, or -1 when out of
 * memory (l empty). */
int lg_presence_copy(const struct lg_presence *p, struct lg_presence_list *l);
/* Copy the members that listen on this node into l, and remember how many (topic->lock
 * held). Return value: 0, or -1 when out of memory (l empty). */
int lg_presence_copy_local(struct lg_presence *p, struct lg_presence_list *l);
/* How many members the last lg_presence_copy_local() copied. */
uint32_t lg_presence_shared(const struct lg_presence *p);
/* The members other nodes list now are ids[0..n) (lens[i] bytes each): they are listed here
 * too (within max_members), and members listed only because another node did, and not named
 * now, are no longer (topic->lock held). The caller lists the topic for a batch when p is
 * pending after it. */
void lg_presence_set_remote(struct lg_presence *p, const char *const *ids, const size_t *lens,
                            size_t n);
/* Sort l's ids bytewise (no lock needed). */
void lg_presence_list_sort(struct lg_presence_list *l);
/* The index of the first id after `after` in a sorted l (NULL: 0). */
size_t lg_presence_list_after(const struct lg_presence_list *l, const char *after);
void lg_presence_list_release(struct lg_presence_list *l);

/* Whether p lists members (a "presence" rule), and its bound. */
bool lg_presence_lists_members(const struct lg_presence *p);
uint32_t lg_presence_max_members(const struct lg_presence *p);

#endif
