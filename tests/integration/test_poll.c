/*
 * test_poll.c - long-poll and polling (GET /poll) against the real binary: immediate answers,
 * held requests answered by a publish or by their timeout, cursors chained from one poll to the
 * next, max_batch, polls held at shutdown, and two polls on one keep-alive connection.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "lg_test.h"

#include "check_main.h"

#define WAIT_MS 5000
/* An error answer here: JSON with error and message (Content-Type and other members not checked). */
#define ERROR_CHECKS 0

/*
 * Check a poll answer: 200, JSON, and exactly the body
 * {"events":[<event topic seq "d<seq>">...],"cursor":cursor}, byte for byte. The events are
 * given as "topic:seq" strings (plain-text events published by publish_n). Failures name the
 * poll (what).
 */
static void expect_poll(const struct lg_http_response *r, const char *what, const char *ep,
                        const char *const *evs, size_t n, const char *cursor)
{
    ck_assert_msg(r->status == 200, "%s answered %d: %s", what, r->status, r->body);
    char ct[128];
    ck_assert_msg(lg_http_header(r, "Content-Type", ct, sizeof ct), "%s: no Content-Type", what);
    ck_assert_msg(strcmp(ct, "application/json") == 0, "%s: Content-Type %s", what, ct);
    json_t *root = json_loadb(r->body, r->body_len, 0, NULL);
    ck_assert_msg(root != NULL, "%s: not JSON: %s", what, r->body);
    json_t *events = json_object_get(root, "events");
    ck_assert_msg(json_is_array(events) && json_array_size(events) == n,
                  "%s: want %zu events in %s", what, n, r->body);

    size_t cap = 512 + n * 512;
    char *want = malloc(cap);
    size_t o = (size_t)snprintf(want, cap, "{\"events\":[");
    for (size_t i = 0; i < n; i++) {
        char topic[128];
        unsigned long long seq;
        const char *colon = strrchr(evs[i], ':');
        snprintf(topic, sizeof topic, "%.*s", (int)(colon - evs[i]), evs[i]);
        seq = strtoull(colon + 1, NULL, 10);
        long long t = (long long)json_integer_value(json_object_get(json_array_get(events, i),
                                                                    "time"));
        o += (size_t)snprintf(want + o, cap - o,
                              "%s{\"type\":\"event\",\"v\":1,\"topic\":\"%s\",\"id\":\"%s@%s:%llu\","
                              "\"seq\":%llu,\"event\":\"message\",\"time\":%lld,\"data\":\"d%llu\"}",
                              i ? "," : "", topic, topic, ep, seq, seq, t, seq);
    }
    snprintf(want + o, cap - o, "],\"cursor\":\"%s\"}", cursor);
    ck_assert_msg(strcmp(r->body, want) == 0, "%s: body\n  %s\nwant\n  %s", what, r->body, want);
    free(want);
    json_decref(root);
}

/* The server of the tests in the "poll" test case: the default config, started before each
 * test and stopped (it must exit 0) after it. */
static struct lg_server srv;

static void server_setup(void) { lg_server_must_start(&srv, NULL); }

static void server_teardown(void) { lg_server_must_stop(&srv); }

static void do_poll(uint16_t port, const char *path, struct lg_http_response *r)
{
    ck_assert_msg(lg_http_request(port, "GET", path, NULL, NULL, 0, r, 15000) == 0,
                  "%s: no answer", path);
}

/* Send a poll on a new connection without waiting for the answer, and wait until the server
 * holds `held` polls. Return value: the connection. */
static int hold_poll(const struct lg_server *s, const char *path, long long held)
{
    int fd = lg_tcp_connect(s->public_port);
    ck_assert_int_ge(fd, 0);
    char req[1024];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", path);
    ck_assert_int_eq(lg_send_all(fd, req, (size_t)n), 0);
    ck_assert_msg(lg_wait_stat(s->control_port, "clients_poll", held, WAIT_MS),
                  "%s: the server does not hold %lld polls", path, held);
    return fd;
}

/* The tests of "poll_own_config": start s with config, publish d1..d<n> to topic, the epoch. */
static void start_published(struct lg_server *s, const char *config, const char *topic, int n,
                            char *ep, size_t ep_size)
{
    lg_server_must_start(s, config);
    lg_publish_n_epoch(s->control_port, topic, 1, n, ep, ep_size);
}

/* A topic on srv with d1..d<n> published, and a poll of it from its newest event (held up to
 * timeout_s): the epoch and the poll's path. */
struct held_poll {
    char ep[16];
    char path[256];
};

static void publish_for_held_poll(struct held_poll *h, const char *topic, int n, int timeout_s)
{
    lg_publish_n_epoch(srv.control_port, topic, 1, n, h->ep, sizeof h->ep);
    snprintf(h->path, sizeof h->path, "/poll?topic=%s&since=%s@%s:%d&timeout=%d", topic, topic,
             h->ep, n, timeout_s);
}

/* Read the answer to a poll sent on fd and expect exactly evs[0..n) and cursor (expect_poll). */
static void read_expect(int fd, const char *what, const char *ep, const char *const *evs,
                        size_t n, const char *cursor)
{
    struct lg_http_response r;
    ck_assert_msg(lg_http_read_response(fd, &r, WAIT_MS) == 0, "%s: no answer", what);
    expect_poll(&r, what, ep, evs, n, cursor);
    lg_http_response_free(&r);
}

/* GET path and expect exactly evs[0..n) and cursor (see expect_poll); the answer's time in ms. */
static int64_t poll_expect(uint16_t port, const char *path, const char *ep,
                           const char *const *evs, size_t n, const char *cursor)
{
    struct lg_http_response r;
    int64_t t0 = lg_now_ms();
    do_poll(port, path, &r);
    int64_t took = lg_now_ms() - t0;
    expect_poll(&r, path, ep, evs, n, cursor);
    lg_http_response_free(&r);
    return took;
}

/* As poll_expect with no events, answered by its timeout: within [900, 3000) ms. */
static void poll_expect_timeout(uint16_t port, const char *path, const char *ep,
                                const char *cursor, const char *what)
{
    int64_t took = poll_expect(port, path, ep, NULL, 0, cursor);
    ck_assert_msg(took >= 900 && took < 3000, "%s answered after %lld ms", what, (long long)took);
}

/* ---- Cases -------------------------------------------------------------------------------- */

START_TEST(test_poll_immediate_answer)
{
    char id[256], ep[16], path[256], cur[256];
    lg_publish_n_epoch(srv.control_port, "p", 1, 3, ep, sizeof ep);

    struct lg_http_response r;
    snprintf(path, sizeof path, "/poll?topic=p&since=p@%s:1&timeout=20", ep);
    int64_t t0 = lg_now_ms();
    do_poll(srv.public_port, path, &r);
    ck_assert_msg(lg_now_ms() - t0 < 2000, "events were available, yet the poll took %lld ms",
                  (long long)(lg_now_ms() - t0));
    static const char *const two[] = {"p:2", "p:3"};
    snprintf(cur, sizeof cur, "p@%s:3", ep);
    expect_poll(&r, path, ep, two, 2, cur);
    char cc[64];
    ck_assert(lg_http_header(&r, "Cache-Control", cc, sizeof cc));
    ck_assert_str_eq(cc, "no-store");
    lg_http_response_free(&r);

    /* data kept as JSON and a custom type come through as in the other transports */
    ck_assert_int_eq(lg_publish_ex(srv.control_port, "p", "type=tick", "application/json",
                                   "[1, {\"a\": \"b\"}]", 15, id, sizeof id),
                     201);
    snprintf(path, sizeof path, "/poll?topic=p&since=p@%s:3&timeout=0", ep);
    do_poll(srv.public_port, path, &r);
    json_t *root = json_loadb(r.body, r.body_len, 0, NULL);
    long long t = (long long)json_integer_value(
        json_object_get(json_array_get(json_object_get(root, "events"), 0), "time"));
    json_decref(root);
    char want[512];
    snprintf(want, sizeof want,
             "{\"events\":[{\"type\":\"event\",\"v\":1,\"topic\":\"p\",\"id\":\"p@%1$s:4\","
             "\"seq\":4,\"event\":\"tick\",\"time\":%2$lld,\"data\":[1,{\"a\":\"b\"}]}],"
             "\"cursor\":\"p@%1$s:4\"}",
             ep, t);
    ck_assert_str_eq(r.body, want);
    lg_http_response_free(&r);
}
END_TEST

START_TEST(test_poll_held_until_publish)
{
    struct held_poll h;
    char cur[256];
    publish_for_held_poll(&h, "h", 2, 20);
    int fd = hold_poll(&srv, h.path, 1);
    int64_t t0 = lg_now_ms();
    lg_publish_n(srv.control_port, "other", 1, 1, NULL, 0); /* not ours: the poll stays held */
    lg_publish_n(srv.control_port, "h", 3, 3, NULL, 0);
    static const char *const one[] = {"h:3"};
    snprintf(cur, sizeof cur, "h@%s:3", h.ep);
    read_expect(fd, h.path, h.ep, one, 1, cur);
    ck_assert_msg(lg_now_ms() - t0 < 2000, "answer took %lld ms after the publish",
                  (long long)(lg_now_ms() - t0));
    close(fd);
    ck_assert(lg_wait_stat(srv.control_port, "clients_poll", 0, WAIT_MS));
}
END_TEST

START_TEST(test_poll_timeout_and_zero)
{
    struct lg_server s;
    char ep[16], path[256], cur[256];
    start_published(&s, NULL, "w", 1, ep, sizeof ep);
    snprintf(cur, sizeof cur, "w@%s:1", ep);

    snprintf(path, sizeof path, "/poll?topic=w&since=w@%s:1&timeout=1", ep);
    poll_expect_timeout(s.public_port, path, ep, cur, "timeout=1");

    snprintf(path, sizeof path, "/poll?topic=w&since=w@%s:1&timeout=0", ep);
    int64_t took = poll_expect(s.public_port, path, ep, NULL, 0, cur);
    ck_assert_msg(took < 500, "timeout=0 answered after %lld ms", (long long)took);

    /* a timeout over poll.max_timeout_ms is capped */
    lg_server_must_stop(&s);
    start_published(&s, "{\"poll\":{\"max_timeout_ms\":1000,\"default_timeout_ms\":1000}}", "w",
                    1, ep, sizeof ep);
    snprintf(cur, sizeof cur, "w@%s:1", ep);
    snprintf(path, sizeof path, "/poll?topic=w&since=w@%s:1&timeout=30", ep);
    poll_expect_timeout(s.public_port, path, ep, cur, "timeout=30 capped at 1 s");
    /* and no timeout parameter means poll.default_timeout_ms */
    snprintf(path, sizeof path, "/poll?topic=w&since=w@%s:1", ep);
    poll_expect_timeout(s.public_port, path, ep, cur, "default timeout");
    lg_server_must_stop(&s);
}
END_TEST

START_TEST(test_poll_no_since_starts_now)
{
    char ep[16], path[512], cur[256];
    lg_publish_n_epoch(srv.control_port, "n", 1, 3, ep, sizeof ep);
    snprintf(cur, sizeof cur, "n@%s:3", ep);
    poll_expect(srv.public_port, "/poll?topic=n&timeout=0", ep, NULL, 0, cur);

    /* a topic nobody published to yet: seq 0 */
    snprintf(cur, sizeof cur, "n@%1$s:3,fresh@%1$s:0", ep);
    poll_expect(srv.public_port, "/poll?topic=n&topic=fresh&timeout=0", ep, NULL, 0, cur);

    lg_publish_n(srv.control_port, "n", 4, 4, NULL, 0);
    lg_publish_n(srv.control_port, "fresh", 1, 1, NULL, 0);
    snprintf(path, sizeof path, "/poll?topic=n&topic=fresh&since=%s&timeout=5", cur);
    static const char *const two[] = {"n:4", "fresh:1"};
    snprintf(cur, sizeof cur, "n@%1$s:4,fresh@%1$s:1", ep);
    poll_expect(srv.public_port, path, ep, two, 2, cur);
}
END_TEST

START_TEST(test_poll_cursor_chain_and_max_batch)
{
    struct lg_server s;
    char ep[16], path[512], cur[256];
    start_published(&s, "{\"poll\":{\"max_batch\":2}}", "c", 5, ep, sizeof ep);

    snprintf(cur, sizeof cur, "c@%s:0", ep);
    static const char *const want[][2] = {{"c:1", "c:2"}, {"c:3", "c:4"}, {"c:5", NULL}};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "/poll?topic=c&since=%s&timeout=5", cur);
        size_t n = want[i][1] ? 2 : 1;
        snprintf(cur, sizeof cur, "c@%s:%d", ep, i * 2 + (int)n);
        poll_expect(s.public_port, path, ep, want[i], n, cur);
    }
    /* the chain is at the end: nothing more, the same cursor back */
    snprintf(path, sizeof path, "/poll?topic=c&since=%s&timeout=0", cur);
    poll_expect(s.public_port, path, ep, NULL, 0, cur);
    /* and the next publish is the next answer */
    lg_publish_n(s.control_port, "c", 6, 6, NULL, 0);
    snprintf(path, sizeof path, "/poll?topic=c&since=%s&timeout=5", cur);
    static const char *const six[] = {"c:6"};
    snprintf(cur, sizeof cur, "c@%s:6", ep);
    poll_expect(s.public_port, path, ep, six, 1, cur);

    /* live events for a held poll are capped too: a batch of 5 arrives at once; the held
     * answer holds 1 or 2 of them, and the chain from its cursor yields the rest exactly */
    snprintf(path, sizeof path, "/poll?topic=c&since=%s&timeout=10", cur);
    int fd = hold_poll(&s, path, 1);
    static const char batch[] = "[{\"topic\":\"c\",\"data\":\"d7\"},{\"topic\":\"c\",\"data\":\"d8\"},"
                                "{\"topic\":\"c\",\"data\":\"d9\"},{\"topic\":\"c\",\"data\":\"d10\"},"
                                "{\"topic\":\"c\",\"data\":\"d11\"}]";
    struct lg_http_response br;
    ck_assert_int_eq(lg_http_request(s.control_port, "POST", "/v1/publish", NULL, batch,
                                     strlen(batch), &br, WAIT_MS),
                     0);
    ck_assert_int_eq(br.status, 200);
    lg_http_response_free(&br);
    struct lg_http_response r;
    ck_assert_int_eq(lg_http_read_response(fd, &r, WAIT_MS), 0);
    close(fd);
    json_t *o = json_loadb(r.body, r.body_len, 0, NULL);
    size_t got = json_array_size(json_object_get(o, "events"));
    json_decref(o);
    ck_assert_msg(got >= 1 && got <= 2, "held poll answered %zu events (max_batch 2): %s", got,
                  r.body);
    static const char *const live[] = {"c:7", "c:8", "c:9", "c:10", "c:11"};
    int at = 0; /* index into live of the next expected event */
    snprintf(cur, sizeof cur, "c@%s:%d", ep, 6 + (int)got);
    expect_poll(&r, path, ep, live, got, cur);
    at += (int)got;
    lg_http_response_free(&r);
    while (at < 5) {
        snprintf(path, sizeof path, "/poll?topic=c&since=%s&timeout=5", cur);
        size_t n = 5 - (size_t)at < 2 ? 5 - (size_t)at : 2;
        snprintf(cur, sizeof cur, "c@%s:%d", ep, 7 + at + (int)n - 1);
        poll_expect(s.public_port, path, ep, live + at, n, cur);
        at += (int)n;
    }
    lg_server_must_stop(&s);
}
END_TEST

START_TEST(test_poll_held_answered_at_shutdown)
{
    struct held_poll h;
    char cur[256];
    publish_for_held_poll(&h, "x", 1, 30);
    int fds[3];
    for (int i = 0; i < 3; i++)
        fds[i] = hold_poll(&srv, h.path, i + 1);
    int64_t t0 = lg_now_ms();
    ck_assert_int_eq(kill(srv.pid, SIGTERM), 0);
    snprintf(cur, sizeof cur, "x@%s:1", h.ep);
    for (int i = 0; i < 3; i++) {
        char what[64];
        snprintf(what, sizeof what, "held poll %d at SIGTERM", i + 1);
        read_expect(fds[i], what, h.ep, NULL, 0, cur);
        close(fds[i]);
    }
    ck_assert_msg(lg_now_ms() - t0 < 3000, "held polls answered %lld ms after SIGTERM",
                  (long long)(lg_now_ms() - t0));
}
END_TEST

START_TEST(test_poll_keep_alive)
{
    char ep[16], req[512], cur[256];
    lg_publish_n_epoch(srv.control_port, "k", 1, 1, ep, sizeof ep);
    int fd = lg_tcp_connect(srv.public_port);
    ck_assert_int_ge(fd, 0);
    int n = snprintf(req, sizeof req,
                     "GET /poll?topic=k&timeout=0 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    ck_assert_int_eq(lg_send_all(fd, req, (size_t)n), 0);
    struct lg_http_response r;
    ck_assert_int_eq(lg_http_read_response(fd, &r, WAIT_MS), 0);
    snprintf(cur, sizeof cur, "k@%s:1", ep);
    expect_poll(&r, "the first poll", ep, NULL, 0, cur);
    char conn[64];
    ck_assert_msg(!lg_http_header(&r, "Connection", conn, sizeof conn) ||
                      strcasecmp(conn, "close") != 0,
                  "the server closes a keep-alive poll connection");
    lg_http_response_free(&r);

    /* second poll on the same connection, held, then answered by a publish */
    n = snprintf(req, sizeof req,
                 "GET /poll?topic=k&since=%s&timeout=10 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
                 cur);
    ck_assert_int_eq(lg_send_all(fd, req, (size_t)n), 0);
    ck_assert(lg_wait_stat(srv.control_port, "clients_poll", 1, WAIT_MS));
    lg_publish_n(srv.control_port, "k", 2, 2, NULL, 0);
    static const char *const two[] = {"k:2"};
    snprintf(cur, sizeof cur, "k@%s:2", ep);
    read_expect(fd, "the second poll (held)", ep, two, 1, cur);

    /* a third, immediate one: Connection: close is honoured */
    n = snprintf(req, sizeof req,
                 "GET /poll?topic=k&since=k@%s:1&timeout=0 HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                 "Connection: close\r\n\r\n",
                 ep);
    ck_assert_int_eq(lg_send_all(fd, req, (size_t)n), 0);
    read_expect(fd, "the third poll (Connection: close)", ep, two, 1, cur);
    char buf[64];
    size_t len = 0;
    ck_assert_int_eq(lg_recv_until(fd, buf, sizeof buf, &len, NULL, WAIT_MS), 0); /* EOF */
    close(fd);
}
END_TEST

START_TEST(test_poll_bad_requests)
{
    char ep[16], path[256];
    lg_publish_n_epoch(srv.control_port, "b", 1, 1, ep, sizeof ep);

    /* each bad poll and its error; a row with a tail is head + epoch + tail */
    static const struct {
        const char *head, *tail, *error;
    } bad[] = {
        {"/poll?timeout=0", NULL, "bad_request"},
        {"/poll?topic=b%20c&timeout=0", NULL, "invalid_topic"},
        {"/poll?topic=b&since=b@xyz:1&timeout=0", NULL, "invalid_cursor"},
        {"/poll?topic=b&since=b@", ":2&timeout=0", "invalid_cursor"},
        {"/poll?topic=b&timeout=abc", NULL, "bad_request"},
        {"/poll?topic=b&timeout=-1", NULL, "bad_request"},
        {"/poll?topic=b&timeout=1.5", NULL, "bad_request"},
        {"/poll?topic=b&timeout=", NULL, "bad_request"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        struct lg_http_response r;
        snprintf(path, sizeof path, "%s%s%s", bad[i].head, bad[i].tail ? ep : "",
                 bad[i].tail ? bad[i].tail : "");
        do_poll(srv.public_port, path, &r);
        ck_assert_msg(r.status == 400, "%s answered %d", path, r.status);
        lg_expect_error(&r, 400, bad[i].error, ERROR_CHECKS);
        lg_http_response_free(&r);
    }
}
END_TEST

LG_CHECK_MAIN_SHARED("poll", 30, server_setup, server_teardown,
                     LG_TESTS(test_poll_immediate_answer, test_poll_held_until_publish,
                              test_poll_no_since_starts_now, test_poll_held_answered_at_shutdown,
                              test_poll_keep_alive, test_poll_bad_requests),
                     LG_TESTS(test_poll_timeout_and_zero, test_poll_cursor_chain_and_max_batch))
