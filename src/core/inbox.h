/*
 * inbox.h - one worker's hand-off of events from publishers (any thread) to the worker thread.
 *
 * Owns:    one reference to every queued event, and two arrays of `capacity` slots.
 * Frees:   lg_inbox_release() unrefs whatever is still queued (worker already joined).
 * Threads: multi-producer (control-port handlers on any worker, the Redis bridge, via the hub), single consumer (its worker).
 *          `items`/`count` are guarded by `lock`; `spare` belongs to the consumer alone.
 *          `occupancy` is atomic so a producer can reserve room before it assigns a sequence
 *          number: an event is either accepted with room guaranteed on every inbox it needs, or
 *          refused (503) before anything happened. Nothing is ever dropped here.
 * Wake-up: a push into an empty inbox tells the caller to wake the worker (ev_async_send),
 *          which it does after dropping its locks. Wake-ups coalesce: the worker takes what
 *          is queued (swap under the lock, process outside it), a few events at a time while
 *          it writes, and wakes itself if it leaves any behind.
 * Bounds:  `capacity` events (limits.worker_inbox_events), reserved or queued.
 */
#ifndef LG_INBOX_H
#define LG_INBOX_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

struct lg_event;

struct lg_inbox {
    pthread_mutex_t lock;
    struct lg_event **items;     /* {lock} queued events, oldest first */
    size_t count;                /* {lock} */
    struct lg_event **spare;     /* {consumer} the array handed back by the last take */
    size_t capacity;             /* immutable */
    _Atomic size_t occupancy;    /* reserved + queued + being processed */
};

int lg_inbox_init(struct lg_inbox *in, size_t capacity);
void lg_inbox_release(struct lg_inbox *in);

/* Reserve room for one event. Return value: true if reserved; false if the inbox is full. */
bool lg_inbox_reserve(struct lg_inbox *in);
/* Give back a reservation that will not be used. */
void lg_inbox_unreserve(struct lg_inbox *in);

/* Queue ev (steals the reference) into a slot reserved earlier.
 * Return value: true if the inbox was empty, so the caller must wake the consumer. */
bool lg_inbox_push_reserved(struct lg_inbox *in, struct lg_event *ev);

/* Consumer: take every queued event. *batch points to an array the consumer owns until
 * its next call to lg_inbox_take(); it must unref each event and then call lg_inbox_done(). */
size_t lg_inbox_take(struct lg_inbox *in, struct lg_event ***batch);
/* The same for at most max events, the oldest; the rest stay queued (and wake no one: the
 * consumer must come back for them). */
size_t lg_inbox_take_upto(struct lg_inbox *in, size_t max, struct lg_event ***batch);
/* Consumer: nothing is queued. */
bool lg_inbox_empty(struct lg_inbox *in);
void lg_inbox_done(struct lg_inbox *in, size_t n);

#endif
