#include "publish_pacer.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include <microhttpd.h>

#include "clock.h"
#include "log.h"
#include "loop_guest.h"

struct lg_pacer {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t changed;          /* {lock} room made, a hold added, or stop */
    struct lg_dlist holds;           /* {lock} struct lg_pacer_hold, oldest first */
    uint32_t max_holds;              /* immutable */
    bool stopping;                   /* {lock} */
    uint64_t thread_wakes_at_ms;     /* {lock} when the sleeping thread wakes by itself; 0 =
                                        only when signalled */
    bool joined;                     /* the thread was joined (owner's thread only) */
    _Atomic uint64_t generation;     /* bumped by every room() */
    _Atomic uint32_t waiting;        /* holds on the list: room() skips the lock at 0 */
    struct lg_pacer_hold *resume;    /* [max_holds] the pacer thread's scratch: copies */
};

static void unlink_hold(struct lg_pacer *p, struct lg_pacer_hold *h)
{
    lg_dlist_remove(&p->holds, &h->link);
    atomic_fetch_sub(&p->waiting, 1);
}

/* When h is next due by itself: its retry time or its deadline, whichever comes first. */
static uint64_t wake_time(const struct lg_pacer_hold *h)
{
    return h->retry_at_ms && h->retry_at_ms < h->deadline_ms ? h->retry_at_ms : h->deadline_ms;
}

/* Take off the list, into out (at most max), the holds that room, their retry time or their
 * deadline released (caller holds the lock). Return value: how many; *next_deadline_ms is the
 * nearest wake time of those left (0 = none, or not all were looked at: out was full). */
static uint32_t collect_released(struct lg_pacer *p, struct lg_pacer_hold *out, uint32_t max,
                                 uint64_t *next_deadline_ms)
{
    uint64_t now = lg_mono_ms(), generation = atomic_load(&p->generation);
    uint32_t n = 0;
    *next_deadline_ms = 0;
    for (struct lg_dlink *l = p->holds.first, *next; l && n < max; l = next) {
        next = l->next;
        struct lg_pacer_hold *h = lg_dlist_entry(l, struct lg_pacer_hold, link);
        bool room = h->generation != generation;
        bool retry = h->retry_at_ms && now >= h->retry_at_ms;
        if (room || retry || p->stopping || now >= h->deadline_ms) {
            h->expired = !room && !retry;
            unlink_hold(p, h);
            out[n++] = *h; /* h may be freed as soon as its connection resumes */
        } else if (*next_deadline_ms == 0 || wake_time(h) < *next_deadline_ms) {
            *next_deadline_ms = wake_time(h);
        }
    }
    return n;
}

static void wait_until(struct lg_pacer *p, uint64_t deadline_ms)
{
    if (deadline_ms == 0) {
        pthread_cond_wait(&p->changed, &p->lock);
        return;
    }
    /* collect_released() left only later ones, but time passed since it looked */
    uint64_t now = lg_mono_ms();
    if (deadline_ms <= now)
        return;
    uint64_t left = deadline_ms - now;
    struct timespec at;
    clock_gettime(CLOCK_MONOTONIC, &at);
    at.tv_sec += (time_t)(left / 1000);
    at.tv_nsec += (long)(left % 1000) * 1000000L;
    if (at.tv_nsec >= 1000000000L) {
        at.tv_sec++;
        at.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&p->changed, &p->lock, &at);
}

static void *pacer_main(void *arg)
{
    struct lg_pacer *p = arg;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        uint64_t next_deadline;
        uint32_t n = collect_released(p, p->resume, p->max_holds, &next_deadline);
        if (n > 0) {
            pthread_mutex_unlock(&p->lock);
            for (uint32_t i = 0; i < n; i++)
                lg_resume_served(p->resume[i].conn, p->resume[i].host);
            pthread_mutex_lock(&p->lock);
            continue;
        }
        if (p->stopping)
            break;
        p->thread_wakes_at_ms = next_deadline;
        wait_until(p, next_deadline);
        p->thread_wakes_at_ms = 0;
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

struct lg_pacer *lg_pacer_start(uint32_t max_holds)
{
    struct lg_pacer *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->max_holds = max_holds;
    p->resume = calloc(max_holds ? max_holds : 1, sizeof *p->resume);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    bool ok = p->resume && pthread_mutex_init(&p->lock, NULL) == 0 &&
              pthread_cond_init(&p->changed, &attr) == 0;
    pthread_condattr_destroy(&attr);
    if (!ok || pthread_create(&p->thread, NULL, pacer_main, p) != 0) {
        free(p->resume);
        free(p);
        return NULL;
    }
    pthread_setname_np(p->thread, "lg-pacer");
    return p;
}

void lg_pacer_stop(struct lg_pacer *p)
{
    if (!p || p->joined)
        return;
    pthread_mutex_lock(&p->lock);
    p->stopping = true;
    pthread_cond_signal(&p->changed);
    pthread_mutex_unlock(&p->lock);
    pthread_join(p->thread, NULL); /* it resumed every hold on its way out */
    p->joined = true;
}

void lg_pacer_destroy(struct lg_pacer *p)
{
    if (!p)
        return;
    lg_pacer_stop(p);
    pthread_cond_destroy(&p->changed);
    pthread_mutex_destroy(&p->lock);
    free(p->resume);
    free(p);
}

uint64_t lg_pacer_generation(const struct lg_pacer *p) { return atomic_load(&p->generation); }

void lg_resume_served(struct MHD_Connection *conn, const struct lg_loop_host *host)
{
    MHD_resume_connection(conn);
    if (host != NULL && host->wake != NULL)
        host->wake(host->arg);
}

void lg_pacer_hold(struct lg_pacer *p, struct lg_pacer_hold *h, struct MHD_Connection *conn,
                   const struct lg_loop_host *host, uint64_t generation, uint32_t retry_ms,
                   uint64_t deadline_ms)
{
    h->conn = conn;
    h->host = host;
    h->generation = generation;
    h->deadline_ms = deadline_ms;
    h->retry_at_ms = retry_ms ? lg_mono_ms() + retry_ms : 0;
    h->expired = false;
    pthread_mutex_lock(&p->lock);
    bool refused = p->stopping || p->holds.count >= p->max_holds;
    bool room_since = false;
    if (!refused) {
        lg_dlist_push_tail(&p->holds, &h->link);
        atomic_fetch_add(&p->waiting, 1); /* before the generation is read again: see room() */
        room_since = atomic_load(&p->generation) != generation;
        if (room_since)
            unlink_hold(p, h); /* room came meanwhile: retry now */
        else if (p->thread_wakes_at_ms == 0 || wake_time(h) < p->thread_wakes_at_ms)
            pthread_cond_signal(&p->changed); /* the thread must wake for this one's time */
    }
    pthread_mutex_unlock(&p->lock);
    if (refused)
        h->expired = true;
    if (refused || room_since)
        lg_resume_served(conn, host);
}

/* Holds resumed at once per look at the list by the thread that made room. */
#define RESUMED_PER_PASS 16

void lg_pacer_room(void *pacer)
{
    struct lg_pacer *p = pacer;
    /* A hold counts itself in `waiting` before it reads the generation again, and room()
     * reads `waiting` after it bumped the generation: one of the two sees the other. */
    atomic_fetch_add(&p->generation, 1);
    if (atomic_load(&p->waiting) == 0)
        return;
    struct lg_pacer_hold released[RESUMED_PER_PASS];
    uint32_t n;
    do {
        uint64_t unused;
        pthread_mutex_lock(&p->lock);
        n = collect_released(p, released, RESUMED_PER_PASS, &unused);
        pthread_mutex_unlock(&p->lock);
        for (uint32_t i = 0; i < n; i++)
            lg_resume_served(released[i].conn, released[i].host);
    } while (n == RESUMED_PER_PASS);
}
