/* ev_host.c - see ev_host.h. */
#include "ev_host.h"

#include <stdbool.h>

#define TICK_S 1.0

static void serve(struct lg_ev_host *h)
{
    if (h->guest.serve(h->guest.arg) && !ev_is_active(&h->again)) {
        ev_timer_set(&h->again, 0., 0.); /* the next pass, after the ready descriptors */
        ev_timer_start(h->loop, &h->again);
    }
}

void lg_ev_host_serve(struct lg_ev_host *h)
{
    if (h->loop)
        serve(h);
}

/* A request came: serve it, and if it came within the busy-poll window of the last one,
 * poll for the next one that long before the loop may sleep. */
static void on_ready(struct ev_loop *loop, ev_io *w, int revents)
{
    (void)revents;
    struct lg_ev_host *h = w->data;
    ev_tstamp window = h->guest.busy_poll_us * 1e-6;
    bool back_to_back = ev_time() - h->served_at < window;
    serve(h);
    h->served_at = ev_time();
    if (back_to_back) {
        h->busy_until = h->served_at + window;
        if (!ev_is_active(&h->busy))
            ev_idle_start(loop, &h->busy);
    }
}

static void on_busy(struct ev_loop *loop, ev_idle *w, int revents)
{
    (void)revents;
    struct lg_ev_host *h = w->data;
    if (ev_time() >= h->busy_until)
        ev_idle_stop(loop, w);
}

static void on_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop, (void)revents;
    serve(w->data);
}

static void on_woken(struct ev_loop *loop, ev_async *w, int revents)
{
    (void)loop, (void)revents;
    serve(w->data);
}

static void wake(void *arg)
{
    struct lg_ev_host *h = arg;
    if (pthread_equal(pthread_self(), atomic_load_explicit(&h->thread, memory_order_relaxed)))
        ev_feed_event(h->loop, &h->woken, EV_ASYNC);
    else
        ev_async_send(h->loop, &h->woken);
}

void lg_ev_host_start(struct lg_ev_host *h, struct ev_loop *loop,
                      const struct lg_loop_guest *guest)
{
    h->loop = loop;
    h->guest = *guest;
    ev_io_init(&h->ready, on_ready, guest->fd, EV_READ);
    ev_timer_init(&h->again, on_timer, 0., 0.);
    ev_timer_init(&h->tick, on_timer, TICK_S, TICK_S);
    ev_async_init(&h->woken, on_woken);
    ev_idle_init(&h->busy, on_busy);
    h->ready.data = h->again.data = h->tick.data = h->woken.data = h->busy.data = h;
    h->served_at = -1e9; /* the first request is never back to back */
    atomic_store_explicit(&h->thread, pthread_self(), memory_order_relaxed);
    ev_io_start(loop, &h->ready);
    ev_timer_start(loop, &h->tick);
    ev_async_start(loop, &h->woken);
    guest->hosted(guest->arg, &(struct lg_loop_host){.wake = wake, .arg = h});
}

void lg_ev_host_stop(struct lg_ev_host *h)
{
    if (!h->loop)
        return;
    ev_io_stop(h->loop, &h->ready);
    ev_timer_stop(h->loop, &h->again);
    ev_timer_stop(h->loop, &h->tick);
    ev_async_stop(h->loop, &h->woken);
    ev_idle_stop(h->loop, &h->busy);
    h->loop = NULL;
}
