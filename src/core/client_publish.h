/*
 * client_publish.h - a publish a client sent on its connection (the WebSocket "publish" op)
 * whose answer comes from another thread: with the remote store (Redis) the append completes
 * on the store's thread, while the connection, and its answer, belong to its worker.
 *
 * DESIGN
 * The store's completion only records the result, posts the publish to the queue of the
 * worker that owns the connection (one queue per worker, in the hub) and wakes that worker,
 * which only schedules it. On its next pass the worker takes the queue
 * (lg_hub_take_published()) and finishes each publish (lg_client_publish_finish()): answered
 * through `answer` when its connection is still there, then freed. The connection may have
 * gone in between: when it is released it clears `waiting` of each publish it still waits
 * for, so the answer goes nowhere and nothing points at freed memory. With the memory store
 * the publish completes inside the call on the worker's own thread and none of this is used.
 *
 * Owns:    one malloc'd struct per publish in flight; its request's bytes are the store's
 *          copy (the store copies what it appends), so nothing of the message is kept.
 * Frees:   the worker that owns it, in lg_client_publish_finish(), once it took it from its
 *          queue: a publish always comes back to its queue, also when its connection went.
 *          A refusal at hand-over (the store never took it) is freed by the caller at once.
 *          What is still queued when the hub is destroyed (after every worker was joined) is
 *          freed by lg_client_publish_queue_release().
 * Threads: created by the connection's worker. `status` and `res` are written by the store's
 *          thread before it posts (the queue lock orders them before the worker's read);
 *          `waiting`, `answer` and `link` are the worker's only; `next` is under the lock.
 * Bounds:  a connection has at most LG_WS_PUBLISHES_PENDING_MAX publishes in flight (its
 *          transport refuses more), so a worker's queue holds at most that many per
 *          connection it serves; each is also one entry of the store's bounded queue
 *          (redis.queue_max), which refuses past it.
 */
#ifndef LG_CLIENT_PUBLISH_H
#define LG_CLIENT_PUBLISH_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

#include "dlist.h"
#include "hub.h"

/* The client's correlation value as compact JSON text: an integer, or a string of at most 64
 * bytes (ws_message.h) with every byte escaped (\u00XX) and its quotes. */
#define LG_CLIENT_PUBLISH_REF_MAX (6 * 64 + 2)

struct lg_client_publish;

/* Answer p to whoever waits for it (worker thread, `waiting` set). */
typedef void lg_client_publish_answer(void *waiting, struct lg_client_publish *p);

struct lg_client_publish {
    struct lg_hub *hub;              /* set at hand-over, read by the completion */
    uint32_t worker;                 /* the worker owning the connection: its queue and wake */
    void *waiting;                   /* worker only: the connection, NULL once it went */
    lg_client_publish_answer *answer;/* worker only */
    struct lg_dlink link;            /* worker only: on the connection's list of publishes */
    char topic[LG_TOPIC_NAME_MAX + 1];
    char ref[LG_CLIENT_PUBLISH_REF_MAX + 1]; /* "" = the client sent none */
    enum lg_publish_status status;   /* written by the store's thread before the post */
    struct lg_publish_result res;    /* likewise, when status is LG_PUBLISH_OK */
    struct lg_client_publish *next;  /* {queue lock} */
};

/* One worker's completed publishes, oldest first. */
struct lg_client_publish_queue {
    pthread_mutex_t lock;
    struct lg_client_publish *head, *tail; /* {lock} */
    _Atomic size_t count;  /* written under lock; read without it, so a worker's wake-up pays
                              one atomic load (no lock) when no client publishes */
};

int lg_client_publish_queue_init(struct lg_client_publish_queue *q);
/* Free what is still queued (its worker is gone) and the lock. */
void lg_client_publish_queue_release(struct lg_client_publish_queue *q);
void lg_client_publish_queue_push(struct lg_client_publish_queue *q, struct lg_client_publish *p);
/* The oldest completed publish, or NULL. */
struct lg_client_publish *lg_client_publish_queue_pop(struct lg_client_publish_queue *q);

/* Answer p if its connection still waits, and free it (its worker's thread). */
void lg_client_publish_finish(struct lg_client_publish *p);

#endif
