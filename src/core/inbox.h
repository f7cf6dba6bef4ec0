/*
 * inbox.h - one worker's hand-off of events from publishers (any thread) to the worker thread.
 *
 * Owns:    every entry's two references, its event's and its topic's (the topic outlives
 *          the entry: the worker follows it to the topic's subscribers), taken by
 *          lg_inbox_push_reserved() and dropped by lg_inbox_done() or lg_inbox_release(); no
 *          one else takes or drops them. Two arrays of `capacity` entries.
 * Frees:   lg_inbox_release() drops whatever is still queued (worker already joined).
 * Threads: multi-producer (control-port handlers on any worker, the Redis bridge, via the hub), single consumer (its worker).
 *          `items`/`count` are guarded by `lock`; `spare` belongs to the consumer alone.
 *          `occupancy` is atomic so a producer can reserve room before it assigns a sequence
 *          number: an event is either accepted with room guaranteed on every inbox it needs, or
 *          refused (503) before anything happened. Nothing is ever dropped here.
 * Wake-up: a push into an empty inbox tells the caller to wake the worker (ev_async_send),
 *          which it does after dropping its locks. Wake-ups coalesce: the worker takes what
 *          is queued (swap under the lock, process outside it), a few events at a time while
 *          it writes, and wakes itself if it leaves any behind.
 * Bounds:  `capacity` events (limits.worker_inbox_events), reserved or queued; fewer while
 *          the consumer admits fewer (lg_inbox_admit()), never more.
 */
#ifndef LG_INBOX_H
#define LG_INBOX_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

struct lg_event;
struct lg_topic;

/* One queued event and the topic it was published to, each a reference of the inbox's. */
struct lg_inbox_entry {
    struct lg_topic *topic;
    struct lg_event *event;
};

struct lg_inbox {
    pthread_mutex_t lock;
    struct lg_inbox_entry *items; /* {lock} queued entries, oldest first */
    size_t count;                /* {lock} */
    struct lg_inbox_entry *spare; /* {consumer} the array handed back by the last take */
    size_t capacity;             /* immutable */
    _Atomic size_t occupancy;    /* reserved + queued + being processed */
    _Atomic size_t admit;        /* {consumer writes, producers read} occupancy a reservation
                                    may reach, 1..capacity */
};

int lg_inbox_init(struct lg_inbox *in, size_t capacity);
void lg_inbox_release(struct lg_inbox *in);

/* Reserve room for one event. Return value: true if reserved; false if the inbox is full (at
 * what its consumer admits). */
bool lg_inbox_reserve(struct lg_inbox *in);
/* Give back a reservation that will not be used. */
void lg_inbox_unreserve(struct lg_inbox *in);

/* Queue ev of topic t into a slot reserved earlier, with a reference of the inbox's to each
 * (the caller keeps its own). Return value: true if the inbox was empty, so the caller must
 * wake the consumer. */
bool lg_inbox_push_reserved(struct lg_inbox *in, struct lg_topic *t, struct lg_event *ev);

/* Consumer: take every queued entry. *batch points to an array the consumer borrows until it
 * hands the batch back with lg_inbox_done(), before its next take. */
size_t lg_inbox_take(struct lg_inbox *in, struct lg_inbox_entry **batch);
/* The same for at most max entries, the oldest; the rest stay queued (and wake no one: the
 * consumer must come back for them). */
size_t lg_inbox_take_upto(struct lg_inbox *in, size_t max, struct lg_inbox_entry **batch);
/* Consumer: nothing is queued. */
bool lg_inbox_empty(struct lg_inbox *in);
/* Consumer: how many events are queued or about to be (reserved), without the lock: a hint
 * that may already be out of date. */
size_t lg_inbox_backlog(struct lg_inbox *in);
/* Consumer: from now on admit at most n events (clamped to 1..capacity) reserved, queued or
 * being processed. Lowering it refuses reservations until the occupancy is below n again; what
 * is queued already stays. */
void lg_inbox_admit(struct lg_inbox *in, size_t n);
/* Consumer: the n entries of the last take are dealt with: drop their references (the topic's
 * after the event's) and give their room back to the producers. */
void lg_inbox_done(struct lg_inbox *in, struct lg_inbox_entry *batch, size_t n);

#endif
