/*
 * test_ev_host.c - unit tests for src/util/ev_host.c: a guest on a pipe is served when its
 * descriptor is readable, and the busy poll after back-to-back requests (loop_guest.h) starts
 * only for a request that came within the window, keeps the loop from sleeping, and ends by
 * itself once the window is over.
 */
#include <check.h>
#include <ev.h>
#include <fcntl.h>
#include <stdbool.h>
#include <time.h>
#include <unistd.h>

#include "ev_host.h"

#include "check_main.h"

struct pipe_guest {
    int fds[2];
    int served;
    int requests; /* bytes read: one per request */
};

static bool serve_pipe(void *arg)
{
    struct pipe_guest *g = arg;
    char buf[64];
    ssize_t n;
    g->served++;
    while ((n = read(g->fds[0], buf, sizeof buf)) > 0)
        g->requests += (int)n;
    return false;
}

static void hosted_ignored(void *arg, const struct lg_loop_host *host)
{
    (void)arg, (void)host;
}

static struct ev_loop *start(struct lg_ev_host *h, struct pipe_guest *g, uint32_t busy_poll_us)
{
    ck_assert_int_eq(pipe2(g->fds, O_NONBLOCK | O_CLOEXEC), 0);
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    ck_assert_ptr_nonnull(loop);
    lg_ev_host_start(h, loop,
                     &(struct lg_loop_guest){.fd = g->fds[0], .hosted = hosted_ignored,
                                             .serve = serve_pipe, .arg = g,
                                             .busy_poll_us = busy_poll_us});
    return loop;
}

static void finish(struct lg_ev_host *h, struct pipe_guest *g, struct ev_loop *loop)
{
    lg_ev_host_stop(h);
    ev_loop_destroy(loop);
    close(g->fds[0]);
    close(g->fds[1]);
}

/* Send one request and run the loop until the guest has read it. */
static void request(struct ev_loop *loop, struct pipe_guest *g)
{
    int before = g->requests;
    ck_assert_int_eq(write(g->fds[1], "r", 1), 1);
    for (int i = 0; i < 100 && g->requests == before; i++)
        ev_run(loop, EVRUN_ONCE);
    ck_assert_int_eq(g->requests, before + 1);
}

START_TEST(test_a_readable_guest_is_served)
{
    struct lg_ev_host h = {0};
    struct pipe_guest g = {0};
    struct ev_loop *loop = start(&h, &g, 0);
    request(loop, &g);
    request(loop, &g);
    ck_assert_int_eq(g.requests, 2);
    ck_assert(!ev_is_active(&h.busy)); /* busy_poll_us 0: never */
    finish(&h, &g, loop);
}
END_TEST

START_TEST(test_a_first_request_does_not_busy_poll)
{
    struct lg_ev_host h = {0};
    struct pipe_guest g = {0};
    struct ev_loop *loop = start(&h, &g, 1000);
    request(loop, &g);
    ck_assert(!ev_is_active(&h.busy));
    finish(&h, &g, loop);
}
END_TEST

START_TEST(test_a_back_to_back_request_busy_polls_until_the_window_ends)
{
    struct lg_ev_host h = {0};
    struct pipe_guest g = {0};
    struct ev_loop *loop = start(&h, &g, 200000); /* a window far longer than one loop pass */
    request(loop, &g);
    request(loop, &g);
    ck_assert(ev_is_active(&h.busy));
    /* While it lasts, a pass with nothing to do does not sleep: it returns at once. */
    ev_tstamp before = ev_time();
    ev_run(loop, EVRUN_ONCE);
    ck_assert(ev_time() - before < 0.1);
    ck_assert(ev_is_active(&h.busy) || ev_time() >= h.busy_until);
    /* It ends by itself at the end of the window, and not before. */
    int passes = 0;
    while (ev_is_active(&h.busy) && passes++ < 10000000)
        ev_run(loop, EVRUN_ONCE);
    ck_assert(!ev_is_active(&h.busy));
    ck_assert(ev_time() >= h.busy_until);
    finish(&h, &g, loop);
}
END_TEST

START_TEST(test_a_request_after_a_gap_longer_than_the_window_does_not_busy_poll)
{
    struct lg_ev_host h = {0};
    struct pipe_guest g = {0};
    struct ev_loop *loop = start(&h, &g, 2000); /* 2 ms */
    request(loop, &g);
    /* The gap between the two requests is what is under test here, not a synchronisation. */
    nanosleep(&(struct timespec){.tv_nsec = 20 * 1000 * 1000}, NULL);
    request(loop, &g);
    ck_assert(!ev_is_active(&h.busy));
    finish(&h, &g, loop);
}
END_TEST

LG_CHECK_MAIN_TCASE("ev_host", "core", 30, test_a_readable_guest_is_served,
                    test_a_first_request_does_not_busy_poll,
                    test_a_back_to_back_request_busy_polls_until_the_window_ends,
                    test_a_request_after_a_gap_longer_than_the_window_does_not_busy_poll)
