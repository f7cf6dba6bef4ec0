/* worker_call.c - see worker_call.h. */
#include "worker_call.h"

#include <stdlib.h>

#include <jansson.h>

#include "presence.h"
#include "topic.h"

struct lg_call *lg_call_new(enum lg_call_kind kind)
{
    struct lg_call *call = calloc(1, sizeof *call);
    if (!call)
        return NULL;
    call->kind = kind;
    atomic_init(&call->refs, 1);
    return call;
}

void lg_call_unref(struct lg_call *call)
{
    if (!call || atomic_fetch_sub_explicit(&call->refs, 1, memory_order_acq_rel) != 1)
        return;
    for (uint32_t w = 0; w < LG_MAX_WORKERS; w++)
        json_decref(call->results[w]);
    if (call->ended)
        lg_topic_unref(call->ended);
    lg_presence_batch_unref(call->presence);
    free(call);
}

bool lg_call_complete(const struct lg_call *call)
{
    return atomic_load_explicit(&call->pending, memory_order_acquire) == 0;
}

int lg_mailbox_init(struct lg_mailbox *m)
{
    m->head = m->tail = NULL;
    return pthread_mutex_init(&m->lock, NULL) == 0 ? 0 : -1;
}

void lg_mailbox_release(struct lg_mailbox *m, uint32_t w)
{
    struct lg_call *call;
    while ((call = lg_mailbox_pop(m, w)))
        lg_call_unref(call);
    pthread_mutex_destroy(&m->lock);
}

void lg_mailbox_push(struct lg_mailbox *m, uint32_t w, struct lg_call *call)
{
    call->next[w] = NULL;
    pthread_mutex_lock(&m->lock);
    if (m->tail)
        m->tail->next[w] = call;
    else
        m->head = call;
    m->tail = call;
    pthread_mutex_unlock(&m->lock);
}

struct lg_call *lg_mailbox_pop(struct lg_mailbox *m, uint32_t w)
{
    pthread_mutex_lock(&m->lock);
    struct lg_call *call = m->head;
    if (call) {
        m->head = call->next[w];
        if (!m->head)
            m->tail = NULL;
    }
    pthread_mutex_unlock(&m->lock);
    return call;
}
