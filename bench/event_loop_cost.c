/*
 * event_loop_cost.c - a bench smoke, not a test: the worker's event loop costs what is ready,
 * not what is open. The same 2,000 publishes to a topic with one subscriber are measured
 * twice in one run, as the gateway's CPU time from /proc: with no other connection open, and
 * with 5,000 idle SSE streams open on other topics. A loop that scans every descriptor on
 * every wake-up (lws' poll() backend) is far off the bound; an epoll loop costs about the same
 * both times. It is a timing, so it runs from scripts/test.sh's bench smoke, outside ctest
 * (LG_BINARY names the gateway). The bound is a ratio, so the machine's speed does not matter.
 */
#include <check.h>
#include <inttypes.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "lg_test.h"

#include "check_main.h"

#define IDLE 5000
#define PUBLISHES 2000
#define MAX_RATIO 3.0

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

static double measured_publishes(struct one_topic *o, int *next_seq)
{
    double before = lg_server_cpu_seconds(&o->server);
    publish_and_receive(o, PUBLISHES, next_seq);
    return lg_server_cpu_seconds(&o->server) - before;
}

START_TEST(test_publish_cost_does_not_grow_with_idle_connections)
{
    struct rlimit rl;
    ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
    ck_assert_msg(rl.rlim_max >= IDLE + 200, "needs %d descriptors, the hard limit is %llu",
                  IDLE + 200, (unsigned long long)rl.rlim_max);
    rl.rlim_cur = rl.rlim_max; /* the server inherits it */
    ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);

    struct one_topic o;
    one_topic_start(&o, "active");
    int next_seq = 1;
    publish_and_receive(&o, 300, &next_seq); /* warm-up: allocations, caches */

    double alone = measured_publishes(&o, &next_seq);

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

    double crowded = measured_publishes(&o, &next_seq);
    double ratio = crowded / (alone > 0.01 ? alone : 0.01);
    fprintf(stderr, "CPU for %d publishes: %.3f s alone, %.3f s with %d idle streams (x%.2f)\n",
            PUBLISHES, alone, crowded, IDLE, ratio);
    ck_assert_msg(ratio <= MAX_RATIO,
                  "%d publishes cost %.3f s of CPU with %d idle connections open and %.3f s "
                  "without: x%.2f > x%.1f",
                  PUBLISHES, crowded, IDLE, alone, ratio, MAX_RATIO);

    for (int i = 0; i < IDLE; i++)
        close(idle[i]);
    one_topic_stop(&o);
}
END_TEST

LG_CHECK_MAIN_TCASE("event_loop_cost", "cost", 180,
                    test_publish_cost_does_not_grow_with_idle_connections)
