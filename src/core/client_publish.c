/* client_publish.c - see client_publish.h. */
#include "client_publish.h"

#include <stdlib.h>

int lg_client_publish_queue_init(struct lg_client_publish_queue *q)
{
    q->head = q->tail = NULL;
    atomic_init(&q->count, 0);
    return pthread_mutex_init(&q->lock, NULL) == 0 ? 0 : -1;
}

void lg_client_publish_queue_release(struct lg_client_publish_queue *q)
{
    struct lg_client_publish *p;
    while ((p = lg_client_publish_queue_pop(q)))
        free(p); /* its worker was joined: no connection waits */
    pthread_mutex_destroy(&q->lock);
}

void lg_client_publish_queue_push(struct lg_client_publish_queue *q, struct lg_client_publish *p)
{
    p->next = NULL;
    pthread_mutex_lock(&q->lock);
    if (q->tail)
        q->tail->next = p;
    else
        q->head = p;
    q->tail = p;
    atomic_store_explicit(&q->count, atomic_load_explicit(&q->count, memory_order_relaxed) + 1,
                          memory_order_release);
    pthread_mutex_unlock(&q->lock);
}

struct lg_client_publish *lg_client_publish_queue_pop(struct lg_client_publish_queue *q)
{
    if (atomic_load_explicit(&q->count, memory_order_acquire) == 0)
        return NULL; /* a push before the wake-up that brought the caller here is seen */
    pthread_mutex_lock(&q->lock);
    struct lg_client_publish *p = q->head;
    if (p) {
        q->head = p->next;
        if (!q->head)
            q->tail = NULL;
        atomic_store_explicit(&q->count,
                              atomic_load_explicit(&q->count, memory_order_relaxed) - 1,
                              memory_order_relaxed);
    }
    pthread_mutex_unlock(&q->lock);
    return p;
}

void lg_client_publish_finish(struct lg_client_publish *p)
{
    if (p->waiting)
        p->answer(p->waiting, p);
    free(p);
}
