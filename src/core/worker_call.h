/*
 * worker_call.h - a question the control port asks every worker (the admin API): list your
 * clients, disconnect client N, tell the subscribers of a deleted topic that it ended. The
 * data needed lives on the worker threads, so the control handler (on whichever worker serves
 * its daemon) never reads another worker's: it posts a call to each worker's mailbox
 * (hub_admin.h), each worker answers on its own thread into its own result slot, and the
 * handler reads the slots once every worker answered (or it gave up waiting: the call
 * outlives the request by reference count).
 *
 * Owns:    its parameters, one result per worker (a jansson array for LIST_CLIENTS, freed with
 *          the call) and, for END_TOPIC, a reference to the deleted topic; for PRESENCE
 *          (posted by the main thread's tick, not the control port), one to the batch.
 * Frees:   lg_call_unref(): the last of the caller's reference and each worker's frees it.
 * Threads: created and read by a control handler; slot w (results[w], found[w]) is written
 *          only by worker w before it decrements `pending` (release), and read by the handler
 *          only after it saw pending == 0 (acquire). Mailbox links are under the mailbox lock.
 * Bounds:  one call in flight per control connection (limits.control_max_connections), one
 *          PRESENCE call per presence topic (hub_presence.c); a
 *          LIST_CLIENTS result holds at most `limit` + 1 clients per worker.
 */
#ifndef LG_WORKER_CALL_H
#define LG_WORKER_CALL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "topic_name.h"

struct lg_topic;
struct lg_presence_batch;

enum lg_call_kind {
    LG_CALL_LIST_CLIENTS, /* clients with id > after_id (subscribed to topic, if set) */
    LG_CALL_KICK,         /* disconnect client_id with reason */
    LG_CALL_END_TOPIC,    /* subscribers of `ended` get an end notice and are unsubscribed */
    LG_CALL_PRESENCE,     /* subscribers of presence->topic are owed the batch (presence.h) */
};

#define LG_CALL_REASON_MAX 120

struct lg_call {
    enum lg_call_kind kind;
    _Atomic uint32_t refs;
    _Atomic uint32_t pending;       /* workers that have not answered yet */
    /* parameters: immutable once posted */
    char topic[LG_TOPIC_NAME_MAX + 1]; /* LIST_CLIENTS filter ("" = every client); END_TOPIC:
                                          the deleted topic's name */
    uint64_t after_id;
    uint32_t limit;
    uint64_t client_id;
    char reason[LG_CALL_REASON_MAX + 1];
    struct lg_topic *ended;          /* END_TOPIC: a reference, dropped when the call is freed */
    struct lg_presence_batch *presence; /* PRESENCE: a reference, dropped when it is freed */
    /* The asker's completion, run once by the worker whose answer was the last (on that
     * worker's thread, the call still alive): it resumes whoever waits for this call. */
    void (*answered)(void *arg, struct lg_call *call);
    void *answered_arg;
    /* answers: slot w is worker w's */
    void *results[LG_MAX_WORKERS];   /* LIST_CLIENTS: json_t * array (freed with the call) */
    uint32_t found[LG_MAX_WORKERS];  /* KICK: 1 if w had the client; END_TOPIC: subscribers told */
    struct lg_call *next[LG_MAX_WORKERS]; /* {mailbox lock of w} */
};

/* One worker's queue of calls. */
struct lg_mailbox {
    pthread_mutex_t lock;
    struct lg_call *head, *tail;     /* {lock} linked through call->next[w] */
};

/* Return value: a call with one reference (the caller's), or NULL (out of memory). */
struct lg_call *lg_call_new(enum lg_call_kind kind);
void lg_call_unref(struct lg_call *call); /* NULL is ignored */
/* Every worker answered. */
bool lg_call_complete(const struct lg_call *call);

int lg_mailbox_init(struct lg_mailbox *m);
/* Drop (unref) whatever is still queued: its worker is gone. */
void lg_mailbox_release(struct lg_mailbox *m, uint32_t w);
void lg_mailbox_push(struct lg_mailbox *m, uint32_t w, struct lg_call *call);
/* The oldest call, or NULL. */
struct lg_call *lg_mailbox_pop(struct lg_mailbox *m, uint32_t w);

#endif
