/*
 * control_deadline.c - see control_deadline.h.
 */
#include "control_deadline.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "dlist.h"

struct lg_ctl_deadline {
    struct lg_dlink link; /* {d->lock} on d->open */
    int fd;               /* the connection's socket, owned by MHD */
    uint64_t due_ms;      /* {d->lock} monotonic */
    bool swept;           /* {d->lock} shut down already: counted once */
};

struct lg_ctl_deadlines {
    pthread_mutex_t lock;
    struct lg_dlist open; /* {lock} */
    struct lg_ctl_deadline_limits limits;
};

struct lg_ctl_deadlines *lg_ctl_deadlines_create(struct lg_ctl_deadline_limits limits)
{
    struct lg_ctl_deadlines *d = calloc(1, sizeof *d);
    if (d == NULL)
        return NULL;
    pthread_mutex_init(&d->lock, NULL);
    d->limits = limits;
    return d;
}

void lg_ctl_deadlines_destroy(struct lg_ctl_deadlines *d)
{
    if (d == NULL)
        return;
    while (d->open.first != NULL) {
        struct lg_ctl_deadline *e = lg_dlist_entry(d->open.first, struct lg_ctl_deadline, link);
        lg_dlist_remove(&d->open, &e->link);
        free(e);
    }
    pthread_mutex_destroy(&d->lock);
    free(d);
}

static void set_due(struct lg_ctl_deadlines *d, struct lg_ctl_deadline *e, uint64_t due_ms)
{
    pthread_mutex_lock(&d->lock);
    e->due_ms = due_ms;
    pthread_mutex_unlock(&d->lock);
}

struct lg_ctl_deadline *lg_ctl_deadline_open(struct lg_ctl_deadlines *d, int fd,
                                             uint64_t now_ms)
{
    struct lg_ctl_deadline *e = calloc(1, sizeof *e);
    if (e == NULL)
        return NULL;
    e->fd = fd;
    e->due_ms = now_ms + d->limits.head_ms;
    pthread_mutex_lock(&d->lock);
    lg_dlist_push_tail(&d->open, &e->link);
    pthread_mutex_unlock(&d->lock);
    return e;
}

void lg_ctl_deadline_head_in(struct lg_ctl_deadlines *d, struct lg_ctl_deadline *e,
                             uint64_t now_ms)
{
    if (e != NULL)
        set_due(d, e, now_ms + d->limits.head_ms +
                          atomic_load_explicit(d->limits.publish_wait_ms, memory_order_relaxed));
}

void lg_ctl_deadline_answered(struct lg_ctl_deadlines *d, struct lg_ctl_deadline *e,
                              uint64_t now_ms)
{
    if (e != NULL)
        set_due(d, e, now_ms + (uint64_t)d->limits.idle_ms + d->limits.head_ms);
}

void lg_ctl_deadline_close(struct lg_ctl_deadlines *d, struct lg_ctl_deadline *e)
{
    if (e == NULL)
        return;
    pthread_mutex_lock(&d->lock);
    lg_dlist_remove(&d->open, &e->link);
    pthread_mutex_unlock(&d->lock);
    free(e);
}

size_t lg_ctl_deadlines_sweep(struct lg_ctl_deadlines *d, uint64_t now_ms)
{
    size_t swept = 0;
    pthread_mutex_lock(&d->lock);
    for (struct lg_dlink *l = d->open.first; l != NULL; l = l->next) {
        struct lg_ctl_deadline *e = lg_dlist_entry(l, struct lg_ctl_deadline, link);
        if (e->swept || now_ms < e->due_ms)
            continue;
        shutdown(e->fd, SHUT_RDWR);
        e->swept = true;
        swept++;
    }
    pthread_mutex_unlock(&d->lock);
    return swept;
}
