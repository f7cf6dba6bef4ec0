/*
 * test_event_loop.c - a worker's wake-up only schedules: a publish made on the worker's own
 * control daemon (a loop callback of that worker) and publishes while thousands of idle
 * streams are open each reach the subscriber, in order, none lost. What the loop costs is
 * timed by bench/event_loop_cost.c (a bench smoke, outside ctest).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "lg_test.h"

#include "check_main.h"

#define IDLE 5000
#define PUBLISHES 200

/* One gateway with one worker, a subscriber of topic on it and a keep-alive publisher. */
struct one_topic {
    struct lg_server server;
    struct lg_sse_client sub;
    struct lg_stall_ka publisher;
    char path[64];
};

static void one_topic_start(struct one_topic *o, const char *topic)
{
    ck_assert_int_eq(lg_server_start(&o->server, "{\"workers\":1}", NULL), 0);
    char sse[64];
    snprintf(sse, sizeof sse, "/sse?topic=%s", topic);
    snprintf(o->path, sizeof o->path, "/v1/topics/%s/events", topic);
    ck_assert_int_eq(lg_sse_open(&o->sub, o->server.public_port, sse, NULL), 0);
    lg_stall_ka_init(&o->publisher, o->server.control_port);
}

static void one_topic_stop(struct one_topic *o)
{
    lg_stall_ka_close(&o->publisher);
    lg_sse_close(&o->sub);
    ck_assert_int_eq(lg_server_stop(&o->server, 10000), 0);
}

static void publish_one(struct one_topic *o)
{
    struct lg_http_response r;
    ck_assert_int_eq(lg_stall_ka_request(&o->publisher, "POST", o->path, NULL, "x", 1, &r, 10000),
                     0);
    ck_assert_int_eq(r.status, 201);
    lg_http_response_free(&r);
}

static void receive_seq(struct one_topic *o, uint64_t seq)
{
    struct lg_sse_event ev;
    ck_assert_int_eq(lg_sse_next(&o->sub, &ev, 10000), 1);
    ck_assert_uint_eq(lg_seq_of(ev.id), seq);
    lg_sse_event_free(&ev);
}

/* Publish n events, each read by the subscriber before the next is sent: every publish wakes
 * the worker on its own, as at the low per-topic rates of per-user topics. */
static void publish_and_receive(struct one_topic *o, int n, int *next_seq)
{
    for (int i = 0; i < n; i++) {
        publish_one(o);
        receive_seq(o, (uint64_t)(*next_seq)++);
    }
}


/* Publishes on the worker's own daemon, each read before the next is sent: every one wakes the
 * worker from inside its own loop, and each is delivered. */
START_TEST(test_publishes_on_the_workers_own_daemon_are_delivered)
{
    struct one_topic o;
    one_topic_start(&o, "own");
    int next_seq = 1;
    publish_and_receive(&o, PUBLISHES, &next_seq);
    one_topic_stop(&o);
}
END_TEST

/* With IDLE streams open on other topics, the active topic's publishes still arrive, in
 * order: a wake-up serves what is ready, whatever else is open. */
START_TEST(test_publishes_arrive_with_idle_streams_open)
{
    struct rlimit rl;
    ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
    ck_assert_msg(rl.rlim_max >= IDLE + 200, "needs %d descriptors, the hard limit is %llu",
                  IDLE + 200, (unsigned long long)rl.rlim_max);
    rl.rlim_cur = rl.rlim_max; /* the server inherits it */
    ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);

    struct one_topic o;
    one_topic_start(&o, "active");
    static int idle[IDLE];
    for (int i = 0; i < IDLE; i++) {
        idle[i] = lg_tcp_connect(o.server.public_port);
        ck_assert_int_ge(idle[i], 0);
        char req[128];
        int n = snprintf(req, sizeof req,
                         "GET /sse?topic=idle-%d HTTP/1.1\r\nHost: t\r\n\r\n", i);
        ck_assert_int_eq(lg_send_all(idle[i], req, (size_t)n), 0);
    }
    ck_assert(lg_wait_stat(o.server.control_port, "clients_sse", IDLE + 1, 60000));
    int next_seq = 1;
    publish_and_receive(&o, PUBLISHES, &next_seq);
    for (int i = 0; i < IDLE; i++)
        close(idle[i]);
    one_topic_stop(&o);
}
END_TEST

LG_CHECK_MAIN_TCASE("event_loop", "wake", 180,
                    test_publishes_on_the_workers_own_daemon_are_delivered,
                    test_publishes_arrive_with_idle_streams_open)
