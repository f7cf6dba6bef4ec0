/*
 * test_control_api.c - the control port through the real binary: single publishes (201 with
 * consecutive seqs), every documented error status with its JSON body, and batch publishing
 * (JSON array and NDJSON) that is all-or-nothing when an item is invalid, and publishes
 * pipelined on one connection. What was published is
 * read back over the public port with a poll.
 */
#include <check.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <jansson.h>

#include "lg_test.h"

#include "check_main.h"

#define WAIT_MS 5000
/* An error answer here: application/json, no member but error, message and (batches) index. */
#define ERROR_CHECKS (LG_ERROR_JSON_TYPE | LG_ERROR_INDEX_OK)

/* The server of the tests in the "control_api" test case: the default config, started before
 * each test and stopped (it must exit 0) after it. */
static struct lg_server srv;

static void server_setup(void) { lg_server_must_start(&srv, NULL); }

static void server_teardown(void) { lg_server_must_stop(&srv); }

static void request(uint16_t port, const char *method, const char *path, const char *headers,
                    const void *body, size_t len, struct lg_http_response *r)
{
    ck_assert_int_eq(lg_http_request(port, method, path, headers, body, len, r, WAIT_MS), 0);
}

/* A poll from the given cursor (timeout 0): its body. Caller frees. */
static char *poll_body(uint16_t port, const char *topics_query, const char *since)
{
    char path[1024];
    snprintf(path, sizeof path, "/poll?%s&since=%s&timeout=0", topics_query, since);
    struct lg_http_response r;
    request(port, "GET", path, NULL, NULL, 0, &r);
    ck_assert_msg(r.status == 200, "%s: %d %s", path, r.status, r.body);
    return r.body;
}

/* Strip every "time":N member so bodies can be compared exactly. */
static void strip_times(char *s)
{
    char *p;
    while ((p = strstr(s, ",\"time\":")) != NULL) {
        char *e = p + 8;
        while (*e >= '0' && *e <= '9')
            e++;
        memmove(p, e, strlen(e) + 1);
    }
}

/* events_published of the server is exactly n. */
static void expect_published(uint16_t cport, long long n)
{
    long long got = lg_stat(cport, "events_published");
    ck_assert_msg(got == n, "events_published is %lld, want %lld", got, n);
}

START_TEST(test_control_publish_201)
{
    char ep[16] = "", want[256];
    for (int i = 1; i <= 5; i++) {
        struct lg_http_response r;
        request(srv.control_port, "POST", "/v1/topics/orders/events",
                "Content-Type: text/plain\r\n", "o", 1, &r);
        ck_assert_int_eq(r.status, 201);
        char ct[64];
        ck_assert(lg_http_header(&r, "Content-Type", ct, sizeof ct));
        ck_assert_str_eq(ct, "application/json");
        if (!ep[0]) {
            json_t *o = json_loads(r.body, 0, NULL);
            lg_epoch_of(json_string_value(json_object_get(o, "id")), ep, sizeof ep);
            json_decref(o);
        }
        snprintf(want, sizeof want, "{\"topic\":\"orders\",\"id\":\"orders@%s:%d\",\"seq\":%d}",
                 ep, i, i);
        ck_assert_str_eq(r.body, want);
        lg_http_response_free(&r);
        /* another topic counts on its own */
        if (i % 2 == 0) {
            char id[256];
            ck_assert_int_eq(lg_publish(srv.control_port, "a.b/c:d~e_f-g", "x", id, sizeof id),
                             201);
            snprintf(want, sizeof want, "a.b/c:d~e_f-g@%s:%d", ep, i / 2);
            ck_assert_str_eq(id, want);
        }
    }
    /* a 128-byte name is the longest allowed */
    char topic[129], path[256];
    memset(topic, 'n', 128);
    topic[128] = '\0';
    snprintf(path, sizeof path, "/v1/topics/%s/events", topic);
    struct lg_http_response r;
    request(srv.control_port, "POST", path, NULL, "x", 1, &r);
    ck_assert_int_eq(r.status, 201);
    lg_http_response_free(&r);
    expect_published(srv.control_port, 8);
}
END_TEST

/*
 * A request the control port refuses: name (for the failure messages), the request (body of
 * len bytes, may be NULL), the status and error code (ERROR_CHECKS) it must answer, and, when
 * allow is not NULL, its Allow header: exactly allow, or containing it when allow_has.
 */
struct refusal {
    const char *name, *method, *path, *headers;
    const char *body;
    size_t len;
    int status;
    const char *code, *allow;
    bool allow_has;
};

static void expect_refused(uint16_t cport, const struct refusal *q)
{
    struct lg_http_response r;
    ck_assert_msg(lg_http_request(cport, q->method, q->path, q->headers, q->body, q->len, &r,
                                  WAIT_MS) == 0,
                  "%s: no answer", q->name);
    ck_assert_msg(r.status == q->status, "%s: %s %.80s answered %d, want %d: %s", q->name,
                  q->method, q->path, r.status, q->status, r.body);
    lg_expect_error_named(q->name, &r, q->status, q->code, ERROR_CHECKS);
    if (q->allow) {
        char allow[64];
        ck_assert_msg(lg_http_header(&r, "Allow", allow, sizeof allow), "%s: no Allow", q->name);
        ck_assert_msg(q->allow_has ? strstr(allow, q->allow) != NULL : strcmp(allow, q->allow) == 0,
                      "%s: Allow: %s, want %s%s", q->name, allow, q->allow_has ? "one with " : "",
                      q->allow);
    }
    lg_http_response_free(&r);
}

#define JSON_CT "Content-Type: application/json\r\n"
#define TEXT_CT "Content-Type: text/plain\r\n"

START_TEST(test_control_errors)
{
    struct lg_server s;
    lg_server_must_start(&s, "{\"limits\":{\"max_event_bytes\":1024,\"max_batch_bytes\":4096}}");
    static const struct refusal fixed[] = {
        {"JSON that does not parse", "POST", "/v1/topics/e/events", JSON_CT, "{\"a\":", 5, 400,
         "bad_request", NULL, false},
        {"text that is not UTF-8", "POST", "/v1/topics/e/events", TEXT_CT, "\xff\xfe", 2, 400,
         "bad_request", NULL, false},
        {"unknown path", "GET", "/v1/nothing", NULL, NULL, 0, 404, "not_found", NULL, false},
        {"topic without /events", "POST", "/v1/topics/e", NULL, "x", 1, 405, "method_not_allowed",
         "GET, HEAD, DELETE", false},
        {"PUT on events", "PUT", "/v1/topics/e/events", NULL, "x", 1, 405, "method_not_allowed",
         "GET, HEAD, POST", false},
        {"PUT on publish", "PUT", "/v1/publish", NULL, "[]", 2, 405, "method_not_allowed", "POST",
         false},
        {"POST on healthz", "POST", "/healthz", NULL, "x", 1, 405, "method_not_allowed", "GET",
         true},
        /* 422: grammar, reserved */
        {"topic with a blank", "POST", "/v1/topics/bad%20topic/events", NULL, "x", 1, 422,
         "invalid_topic", NULL, false},
        {"topic with *", "POST", "/v1/topics/a*b/events", NULL, "x", 1, 422, "invalid_topic", NULL,
         false},
        {"topic with a comma", "POST", "/v1/topics/a,b/events", NULL, "x", 1, 422, "invalid_topic",
         NULL, false},
        {"reserved topic $sys", "POST", "/v1/topics/$sys/events", NULL, "x", 1, 422,
         "invalid_topic", NULL, false},
        {"topic with @", "POST", "/v1/topics/a%40b/events", NULL, "x", 1, 422, "invalid_topic",
         NULL, false},
    };
    for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++)
        expect_refused(s.control_port, &fixed[i]);

    /* 413: one byte over limits.max_event_bytes; exactly the limit is fine */
    char body[1025];
    memset(body, 'b', sizeof body);
    expect_refused(s.control_port, &(struct refusal){"event one byte over max_event_bytes", "POST",
                                                     "/v1/topics/e/events", NULL, body, 1025, 413,
                                                     "payload_too_large", NULL, false});
    struct lg_http_response r;
    request(s.control_port, "POST", "/v1/topics/e/events", NULL, body, 1024, &r);
    ck_assert_int_eq(r.status, 201);
    lg_http_response_free(&r);
    size_t blen = 5000;
    char *batch = malloc(blen);
    memset(batch, ' ', blen);
    memcpy(batch, "[{\"topic\":\"e\",\"data\":\"x\"}", 25);
    batch[blen - 1] = ']';
    expect_refused(s.control_port,
                   &(struct refusal){"batch over max_batch_bytes", "POST", "/v1/publish", NULL,
                                     batch, blen, 413, "payload_too_large", NULL, false});
    free(batch);

    /* 422: a 129-byte name is one too long */
    char path[300] = "/v1/topics/";
    memset(path + strlen(path), 'n', 129);
    strcat(path, "/events");
    expect_refused(s.control_port, &(struct refusal){"129-byte topic", "POST", path, NULL, "x", 1,
                                                     422, "invalid_topic", NULL, false});

    /* only the one good publish happened */
    expect_published(s.control_port, 1);
    lg_server_must_stop(&s);
}
END_TEST

START_TEST(test_control_batch)
{
    char id[256], ep[16], want[2048], since[256];
    /* seq 1 of each topic exists before, so the batch must continue at 2 */
    ck_assert_int_eq(lg_publish(srv.control_port, "b1", "first", id, sizeof id), 201);
    lg_epoch_of(id, ep, sizeof ep);
    ck_assert_int_eq(lg_publish(srv.control_port, "b2", "first", NULL, 0), 201);

    static const char arr[] = "[{\"topic\":\"b1\",\"data\":\"x\"},"
                              " {\"topic\":\"b1\",\"data\":{\"k\":[1,2]},\"type\":\"t\"},"
                              " {\"topic\":\"b2\",\"data\":\"y\"}]";
    struct lg_http_response r;
    request(srv.control_port, "POST", "/v1/publish", "Content-Type: application/json\r\n", arr,
            strlen(arr), &r);
    ck_assert_int_eq(r.status, 200);
    snprintf(want, sizeof want,
             "{\"accepted\":3,\"results\":[{\"topic\":\"b1\",\"id\":\"b1@%1$s:2\",\"seq\":2},"
             "{\"topic\":\"b1\",\"id\":\"b1@%1$s:3\",\"seq\":3},"
             "{\"topic\":\"b2\",\"id\":\"b2@%1$s:2\",\"seq\":2}]}",
             ep);
    ck_assert_str_eq(r.body, want);
    lg_http_response_free(&r);

    /* NDJSON: LF and CRLF line ends, blank lines skipped, non-string data kept as JSON */
    static const char nd[] = "{\"topic\":\"b2\",\"data\":\"n1\"}\r\n\n"
                             "{\"topic\":\"b1\",\"data\":[true,null],\"type\":\"arr\"}\n";
    request(srv.control_port, "POST", "/v1/publish", "Content-Type: application/x-ndjson\r\n", nd,
            strlen(nd), &r);
    ck_assert_int_eq(r.status, 200);
    snprintf(want, sizeof want,
             "{\"accepted\":2,\"results\":[{\"topic\":\"b2\",\"id\":\"b2@%1$s:3\",\"seq\":3},"
             "{\"topic\":\"b1\",\"id\":\"b1@%1$s:4\",\"seq\":4}]}",
             ep);
    ck_assert_str_eq(r.body, want);
    lg_http_response_free(&r);

    /* what subscribers see: per topic in publish order (a replay promises no cross-topic
     * order), with types and JSON data intact */
    snprintf(since, sizeof since, "b1@%1$s:1,b2@%1$s:1", ep);
    char *body = poll_body(srv.public_port, "topic=b1&topic=b2", since);
    strip_times(body);
    json_t *o = json_loads(body, 0, NULL);
    ck_assert_msg(o != NULL, "%s", body);
    char per[2][1024] = {"", ""};
    size_t i;
    json_t *ev;
    json_array_foreach(json_object_get(o, "events"), i, ev) {
        char *one = json_dumps(ev, JSON_COMPACT | JSON_PRESERVE_ORDER);
        const char *t = json_string_value(json_object_get(ev, "topic"));
        int k = strcmp(t, "b1") == 0 ? 0 : 1;
        strncat(per[k], one, sizeof per[k] - strlen(per[k]) - 1);
        free(one);
    }
    ck_assert_uint_eq(json_array_size(json_object_get(o, "events")), 5);
    snprintf(want, sizeof want, "b1@%1$s:4,b2@%1$s:3", ep);
    ck_assert_str_eq(json_string_value(json_object_get(o, "cursor")), want);
    json_decref(o);
    snprintf(want, sizeof want,
             "{\"type\":\"event\",\"v\":1,\"topic\":\"b1\",\"id\":\"b1@%1$s:2\",\"seq\":2,"
             "\"event\":\"message\",\"data\":\"x\"}"
             "{\"type\":\"event\",\"v\":1,\"topic\":\"b1\",\"id\":\"b1@%1$s:3\",\"seq\":3,"
             "\"event\":\"t\",\"data\":{\"k\":[1,2]}}"
             "{\"type\":\"event\",\"v\":1,\"topic\":\"b1\",\"id\":\"b1@%1$s:4\",\"seq\":4,"
             "\"event\":\"arr\",\"data\":[true,null]}",
             ep);
    ck_assert_str_eq(per[0], want);
    snprintf(want, sizeof want,
             "{\"type\":\"event\",\"v\":1,\"topic\":\"b2\",\"id\":\"b2@%1$s:2\",\"seq\":2,"
             "\"event\":\"message\",\"data\":\"y\"}"
             "{\"type\":\"event\",\"v\":1,\"topic\":\"b2\",\"id\":\"b2@%1$s:3\",\"seq\":3,"
             "\"event\":\"message\",\"data\":\"n1\"}",
             ep);
    ck_assert_str_eq(per[1], want);
    free(body);

    /* invalid batches publish nothing */
    static const struct {
        const char *body;
        int status;
        const char *code;
    } bad[] = {
        {"[{\"topic\":\"b1\",\"data\":\"ok\"},{\"topic\":\"bad topic\",\"data\":\"no\"}]", 422,
         "invalid_topic"},
        {"[{\"topic\":\"b1\",\"data\":\"ok\"},{\"topic\":\"$sys\",\"data\":\"no\"}]", 422,
         "invalid_topic"},
        {"[{\"topic\":\"b1\",\"data\":\"ok\"},{\"topic\":\"b2\"}]", 400, "bad_request"},
        {"[{\"topic\":\"b1\",\"data\":\"ok\"},{\"data\":\"no\"}]", 400, "bad_request"},
        {"[{\"topic\":\"b1\",\"data\":\"ok\"},{\"topic\":\"b2\",\"data\":\"x\",\"extra\":1}]", 400,
         "bad_request"},
        {"[{\"topic\":\"b1\",\"data\":\"ok\"},42]", 400, "bad_request"},
        {"{\"topic\":\"b1\",\"data\":\"ok\"}\n{\"topic\":\"b2\",\"data\":", 400, "bad_request"},
        {"[{\"topic\":\"b1\",\"data\":\"ok\"}", 400, "bad_request"},
        {"[]", 400, "bad_request"},
        {"", 400, "bad_request"},
    };
    for (i = 0; i < sizeof bad / sizeof *bad; i++) {
        request(srv.control_port, "POST", "/v1/publish", NULL, bad[i].body, strlen(bad[i].body),
                &r);
        char what[32];
        snprintf(what, sizeof what, "bad batch %zu", i);
        ck_assert_msg(r.status == bad[i].status, "%s: %d %s", what, r.status, r.body);
        lg_expect_error_named(what, &r, bad[i].status, bad[i].code, ERROR_CHECKS);
        lg_http_response_free(&r);
    }
    snprintf(since, sizeof since, "b1@%1$s:4,b2@%1$s:3", ep);
    body = poll_body(srv.public_port, "topic=b1&topic=b2", since);
    snprintf(want, sizeof want, "{\"events\":[],\"cursor\":\"b1@%1$s:4,b2@%1$s:3\"}", ep);
    ck_assert_str_eq(body, want);
    free(body);
    expect_published(srv.control_port, 7);
}
END_TEST

/* A publish reaches a live SSE subscriber and a held long-poll at the same time. */
START_TEST(test_control_publish_fans_out)
{
    char id[256], ep[16], path[256];
    ck_assert_int_eq(lg_publish(srv.control_port, "f", "zero", id, sizeof id), 201);
    lg_epoch_of(id, ep, sizeof ep);
    struct lg_sse_client c;
    lg_sse_must_open(&c, srv.public_port, "/sse?topic=f", NULL);
    int fd = lg_tcp_connect(srv.public_port);
    ck_assert_int_ge(fd, 0);
    int n = snprintf(path, sizeof path,
                     "GET /poll?topic=f&since=f@%s:1&timeout=10 HTTP/1.1\r\nHost: x\r\n\r\n", ep);
    ck_assert_int_eq(lg_send_all(fd, path, (size_t)n), 0);
    ck_assert(lg_wait_stat(srv.control_port, "clients_poll", 1, WAIT_MS));
    ck_assert(lg_wait_stat(srv.control_port, "clients_sse", 1, WAIT_MS));

    ck_assert_int_eq(lg_publish(srv.control_port, "f", "one", id, sizeof id), 201);
    struct lg_sse_event ev;
    ck_assert_int_eq(lg_sse_next(&c, &ev, WAIT_MS), 1);
    ck_assert_str_eq(ev.id, id);
    ck_assert_str_eq(ev.data, "one");
    lg_sse_event_free(&ev);
    struct lg_http_response r;
    ck_assert_int_eq(lg_http_read_response(fd, &r, WAIT_MS), 0);
    ck_assert_int_eq(r.status, 200);
    char frag[300];
    snprintf(frag, sizeof frag, "\"id\":\"%s\",", id);
    ck_assert_ptr_nonnull(strstr(r.body, frag));
    lg_http_response_free(&r);
    close(fd);
    lg_sse_close(&c);
    ck_assert(lg_wait_stat(srv.control_port, "events_delivered", 2, WAIT_MS));
}
END_TEST

/* JSON data reaches subscribers as the publisher's text less the whitespace between tokens:
 * the SSE data line and the WebSocket event's "data" member, byte for byte. */
START_TEST(test_control_json_kept_as_text)
{
    static const char body[] = "{ \"n\": 123456789012345678901234567890,\n \"n\": 1e-400,"
                               " \"r\": 0.1234567890123456789, \"s\": \"\\u00e9\" }";
    static const char want[] = "{\"n\":123456789012345678901234567890,\"n\":1e-400,"
                               "\"r\":0.1234567890123456789,\"s\":\"\\u00e9\"}";
    struct lg_sse_client c;
    lg_sse_must_open(&c, srv.public_port, "/sse?topic=exact", NULL);
    struct lg_ws_client w;
    char cursor[256];
    lg_ws_must_subscribe(&w, srv.public_port, "/ws?topic=exact", NULL, cursor, sizeof cursor);
    char id[256];
    ck_assert_int_eq(lg_publish_ex(srv.control_port, "exact", NULL, "application/json", body,
                                   strlen(body), id, sizeof id), 201);
    struct lg_sse_event ev;
    ck_assert_int_eq(lg_sse_next(&c, &ev, WAIT_MS), 1);
    ck_assert_str_eq(ev.data, want);
    lg_sse_event_free(&ev);
    char *msg = NULL, frag[256];
    ck_assert_int_eq(lg_ws_next(&w, &msg, WAIT_MS), 1);
    snprintf(frag, sizeof frag, ",\"data\":%s}", want);
    size_t ml = strlen(msg), fl = strlen(frag);
    ck_assert_msg(ml > fl && strcmp(msg + ml - fl, frag) == 0, "message: %s", msg);
    free(msg);
    lg_ws_close(&w);
    lg_sse_close(&c);
}
END_TEST

/* Read from fd until the server closes it (or timeout_ms). Return value: true if it closed. */
static bool read_to_close(int fd, char *buf, size_t cap, size_t *len, int timeout_ms)
{
    int64_t deadline = lg_now_ms() + timeout_ms;
    *len = 0;
    while (lg_left_ms(deadline) > 0 && *len < cap - 1) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, (int)lg_left_ms(deadline)) <= 0)
            continue;
        ssize_t n = recv(fd, buf + *len, cap - 1 - *len, 0);
        if (n <= 0) {
            buf[*len] = '\0';
            return n == 0;
        }
        *len += (size_t)n;
    }
    buf[*len] = '\0';
    return false;
}

#define PIPELINED 40

/* Publishes pipelined on one connection, in one write, are all answered, in order, at once:
 * the daemon takes a few requests per turn of its worker's loop and, with work left, gets the
 * next turn of that loop (not the next one-second tick, which would take ten seconds here). */
START_TEST(test_control_pipelined_publishes)
{
    static char out[PIPELINED * 160], in[PIPELINED * 400];
    size_t len = 0;
    for (int i = 1; i <= PIPELINED; i++)
        len += (size_t)snprintf(out + len, sizeof out - len,
                                "POST /v1/topics/piped/events HTTP/1.1\r\nHost: x\r\n"
                                "Content-Length: %d\r\n%s\r\n%d",
                                i < 10 ? 1 : 2, i == PIPELINED ? "Connection: close\r\n" : "", i);
    int fd = lg_tcp_connect(srv.control_port);
    ck_assert_int_ge(fd, 0);
    int64_t sent_at = lg_now_ms();
    ck_assert_int_eq(lg_send_all(fd, out, len), 0);
    size_t got;
    ck_assert_msg(read_to_close(fd, in, sizeof in, &got, 3000),
                  "%d pipelined publishes not all answered within 3 s (%" PRId64 " ms): %s",
                  PIPELINED, lg_now_ms() - sent_at, in);
    close(fd);
    const char *at = in;
    for (int i = 1; i <= PIPELINED; i++) {
        char seq[32];
        snprintf(seq, sizeof seq, "\"seq\":%d}", i);
        at = strstr(at, "HTTP/1.1 201 Created\r\n");
        ck_assert_msg(at != NULL, "answer %d is not a 201: %s", i, in);
        at = strstr(at, seq);
        ck_assert_msg(at != NULL, "answer %d does not carry seq %d: %s", i, i, in);
    }
    ck_assert_ptr_null(strstr(at, "HTTP/1.1"));
    expect_published(srv.control_port, PIPELINED);
}
END_TEST

/* The head is bounded by the per-connection memory of libmicrohttpd (16 KiB, control.c): a
 * head of 12 KiB is published, one of 20 KiB is refused with 431 and publishes nothing. */
static int publish_with_header_of(size_t n, long long *published)
{
    size_t cap = n + 64;
    char *headers = malloc(cap);
    ck_assert_ptr_nonnull(headers);
    int at = snprintf(headers, cap, "X-Padding: ");
    memset(headers + at, 'a', n);
    snprintf(headers + at + n, cap - (size_t)at - n, "\r\n");
    struct lg_http_response r;
    request(srv.control_port, "POST", "/v1/topics/big-head/events", headers, "x", 1, &r);
    free(headers);
    int status = r.status;
    lg_http_response_free(&r);
    *published = lg_stat(srv.control_port, "events_published");
    return status;
}

START_TEST(test_control_head_bound)
{
    long long before = lg_stat(srv.control_port, "events_published"), after;
    ck_assert_int_eq(publish_with_header_of(12 << 10, &after), 201);
    ck_assert_int_eq(after, before + 1);
    ck_assert_int_eq(publish_with_header_of(20 << 10, &after), 431);
    ck_assert_int_eq(after, before + 1);
}
END_TEST

LG_CHECK_MAIN_SHARED("control_api", 30, server_setup, server_teardown,
                     LG_TESTS(test_control_publish_201, test_control_batch,
                              test_control_publish_fans_out, test_control_json_kept_as_text,
                              test_control_pipelined_publishes,
                              test_control_head_bound),
                     LG_TESTS(test_control_errors))
