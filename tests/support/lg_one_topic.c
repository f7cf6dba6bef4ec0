/*
 * lg_one_topic.c - one gateway with one worker, one SSE subscriber of a topic on it and a
 * keep-alive publisher: the fixture of test_event_loop and of bench/event_loop_cost.c.
 *
 * Owns:    the server, the subscriber and the publisher in the struct it is given.
 * Threads: single-threaded test code.
 * Bounds:  every wait takes a timeout (10 s); a failure fails the check test case.
 */
#include <check.h>
#include <stdio.h>
#include <sys/resource.h>

#include "lg_test.h"

void lg_raise_fd_limit(int need)
{
    struct rlimit rl;
    ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
    ck_assert_msg(rl.rlim_max >= (rlim_t)need, "needs %d descriptors, the hard limit is %llu",
                  need, (unsigned long long)rl.rlim_max);
    rl.rlim_cur = rl.rlim_max; /* a server started later inherits it */
    ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
}

void lg_one_topic_start(struct lg_one_topic *o, const char *topic)
{
    ck_assert_int_eq(lg_server_start(&o->server, "{\"workers\":1}", NULL), 0);
    char sse[64];
    snprintf(sse, sizeof sse, "/sse?topic=%s", topic);
    snprintf(o->path, sizeof o->path, "/v1/topics/%s/events", topic);
    ck_assert_int_eq(lg_sse_open(&o->sub, o->server.public_port, sse, NULL), 0);
    lg_stall_ka_init(&o->publisher, o->server.control_port);
}

void lg_one_topic_stop(struct lg_one_topic *o)
{
    lg_stall_ka_close(&o->publisher);
    lg_sse_close(&o->sub);
    ck_assert_int_eq(lg_server_stop(&o->server, 10000), 0);
}

static void publish_one(struct lg_one_topic *o)
{
    struct lg_http_response r;
    ck_assert_int_eq(lg_stall_ka_request(&o->publisher, "POST", o->path, NULL, "x", 1, &r, 10000),
                     0);
    ck_assert_int_eq(r.status, 201);
    lg_http_response_free(&r);
}

static void receive_seq(struct lg_one_topic *o, uint64_t seq)
{
    struct lg_sse_event ev;
    ck_assert_int_eq(lg_sse_next(&o->sub, &ev, 10000), 1);
    ck_assert_uint_eq(lg_seq_of(ev.id), seq);
    lg_sse_event_free(&ev);
}

void lg_one_topic_publish_and_receive(struct lg_one_topic *o, int n, int *next_seq)
{
    for (int i = 0; i < n; i++) {
        publish_one(o);
        receive_seq(o, (uint64_t)(*next_seq)++);
    }
}

void lg_one_topic_open_idle(const struct lg_one_topic *o, int *fds, int n)
{
    for (int i = 0; i < n; i++) {
        fds[i] = lg_tcp_connect(o->server.public_port);
        ck_assert_int_ge(fds[i], 0);
        char req[128];
        int len = snprintf(req, sizeof req,
                           "GET /sse?topic=idle-%d HTTP/1.1\r\nHost: t\r\n\r\n", i);
        ck_assert_int_eq(lg_send_all(fds[i], req, (size_t)len), 0);
    }
    ck_assert(lg_wait_stat(o->server.control_port, "clients_sse", n + 1, 60000));
}
