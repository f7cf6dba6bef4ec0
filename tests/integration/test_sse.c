/*
 * test_sse.c - Server-Sent Events on the public port against the real binary: exact response
 * head and body bytes, multi-topic cursors as ids, heartbeats, Last-Event-ID resume, bad
 * requests, static files, and dead subscribers that must not cost CPU.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "lg_test.h"

#include "check_main.h"

#define RETRY "retry: 3000\n\n"
#define WAIT_MS 5000
/* An error answer here: application/json, exactly the members error and message. */
#define ERROR_CHECKS (LG_ERROR_JSON_TYPE | LG_ERROR_ONLY_KEYS)

static const char HEAD[] = "HTTP/1.1 200 OK\r\n"
                           "Content-Type: text/event-stream\r\n"
                           "Cache-Control: no-cache\r\n"
                           "X-Accel-Buffering: no\r\n"
                           "Connection: close\r\n";

/* The server of the tests in the "sse" test case: the default config, started before each test
 * and stopped (it must exit 0) after it. */
static struct lg_server srv;

static void server_setup(void) { lg_server_must_start(&srv, NULL); }

static void server_teardown(void) { lg_server_must_stop(&srv); }

/* Publish text and return its seq; id_out receives the id. */
static unsigned long long pub(uint16_t cport, const char *topic, const char *data, char *id_out,
                              size_t cap)
{
    char id[512];
    ck_assert_int_eq(lg_publish(cport, topic, data, id, sizeof id), 201);
    unsigned long long seq = 0;
    ck_assert_int_eq(lg_id_parse(id, NULL, 0, NULL, 0, &seq), 0);
    if (id_out) {
        size_t n = strlen(id) < cap - 1 ? strlen(id) : cap - 1;
        memcpy(id_out, id, n);
        id_out[n] = '\0';
    }
    return seq;
}

/* Wait until the stream holds exactly `want` body bytes (bounded), then compare them. */
static void expect_raw(struct lg_sse_client *c, const char *want)
{
    size_t wl = strlen(want);
    /* the tail of what we expect is unique enough to wait on */
    const char *tail = wl > 64 ? want + wl - 64 : want;
    ck_assert_msg(lg_sse_wait_raw(c, 0, tail, WAIT_MS), "stream incomplete; got %zu bytes:\n%s",
                  c->raw_len, c->raw);
    ck_assert_msg(c->raw_len == wl && memcmp(c->raw, want, wl) == 0,
                  "stream bytes differ.\nwant (%zu):\n%s\ngot (%zu):\n%s", wl, want, c->raw_len,
                  c->raw);
}

static void expect_event(struct lg_sse_client *c, const char *id, const char *type,
                         const char *data)
{
    struct lg_sse_event ev;
    int rc = lg_sse_next(c, &ev, WAIT_MS);
    ck_assert_msg(rc == 1, "no event (rc %d) where %s was expected", rc, id);
    ck_assert_str_eq(ev.id, id);
    ck_assert_str_eq(ev.event, type);
    ck_assert_str_eq(ev.data, data);
    lg_sse_event_free(&ev);
}

static void get(uint16_t port, const char *path, const char *headers, struct lg_http_response *r)
{
    ck_assert_int_eq(lg_http_request(port, "GET", path, headers, NULL, 0, r, WAIT_MS), 0);
}

/*
 * A request the public port refuses: method path (with headers and body, both may be NULL)
 * answers status with the error code (ERROR_CHECKS), and, when header is not NULL, that header
 * with exactly the value. Every failure names the request.
 */
struct refusal {
    const char *method, *path, *headers, *body;
    int status;
    const char *code;
    const char *header, *value;
};

/* The refusal's answer, left in r (free it) for more checks. */
static void request_refused(uint16_t port, const struct refusal *q, struct lg_http_response *r)
{
    char what[300]; /* the request, for the failure messages */
    snprintf(what, sizeof what, "%s %s%s%.200s", q->method, q->path, q->headers ? " with " : "",
             q->headers ? q->headers : "");
    ck_assert_msg(lg_http_request(port, q->method, q->path, q->headers, q->body,
                                  q->body ? strlen(q->body) : 0, r, WAIT_MS) == 0,
                  "%s: no answer", what);
    ck_assert_msg(r->status == q->status, "%s: %d, want %d: %s", what, r->status, q->status,
                  r->body);
    lg_expect_error(r, q->status, q->code, ERROR_CHECKS);
    if (q->header) {
        char v[128];
        ck_assert_msg(lg_http_header(r, q->header, v, sizeof v), "%s: no %s", what, q->header);
        ck_assert_msg(strcmp(v, q->value) == 0, "%s: %s: %s, want %s", what, q->header, v,
                      q->value);
    }
}

static void expect_refused(uint16_t port, const struct refusal *q)
{
    struct lg_http_response r;
    request_refused(port, q, &r);
    lg_http_response_free(&r);
}

/* GET path (with headers) on port answers status and the error code. */
static void expect_get_refused(uint16_t port, const char *path, const char *headers, int status,
                               const char *code)
{
    expect_refused(port, &(struct refusal){.method = "GET",
                                           .path = path,
                                           .headers = headers,
                                           .status = status,
                                           .code = code});
}

/* ---- Exact bytes -------------------------------------------------------------------------- */

START_TEST(test_sse_exact_head_and_frames)
{
    struct lg_sse_client c;
    lg_sse_must_open(&c, srv.public_port, "/sse?topic=frames", NULL);
    ck_assert_str_eq(c.headers, HEAD);
    ck_assert_int_eq(c.retry_ms, -1); /* not parsed yet: we only waited for raw bytes */

    char id[256], ep[16];
    pub(srv.control_port, "frames", "one line", id, sizeof id);
    lg_epoch_of(id, ep, sizeof ep);
    pub(srv.control_port, "frames", "a\nb", NULL, 0);          /* LF */
    pub(srv.control_port, "frames", "c\r\nd\r\ne", NULL, 0);   /* CRLF */
    pub(srv.control_port, "frames", "f\rg", NULL, 0);          /* CR */
    pub(srv.control_port, "frames", "", NULL, 0);              /* empty */
    pub(srv.control_port, "frames", "tail\n", NULL, 0);        /* trailing newline */
    pub(srv.control_port, "frames", "\n\nmid\r\r\n", NULL, 0); /* blank lines, mixed ends */
    static const char json_in[] = "{ \"k\" : [1, 2, {\"s\":\"x\\ny\"}], \"n\": null }";
    ck_assert_int_eq(lg_publish_ex(srv.control_port, "frames", NULL, "application/json", json_in,
                                   strlen(json_in), NULL, 0),
                     201);
    ck_assert_int_eq(
        lg_publish_ex(srv.control_port, "frames", "type=tick", "text/plain", "t", 1, NULL, 0), 201);
    ck_assert_int_eq(lg_publish_ex(srv.control_port, "frames", "type=price.update",
                                   "application/json", "1.07", 4, NULL, 0),
                     201);

    char want[8192];
    snprintf(want, sizeof want,
             RETRY "id: frames@%1$s:0\n\n" /* the stream's cursor before any event */
             "id: frames@%1$s:1\ndata: one line\n\n"
             "id: frames@%1$s:2\ndata: a\ndata: b\n\n"
             "id: frames@%1$s:3\ndata: c\ndata: d\ndata: e\n\n"
             "id: frames@%1$s:4\ndata: f\ndata: g\n\n"
             "id: frames@%1$s:5\ndata: \n\n"
             "id: frames@%1$s:6\ndata: tail\ndata: \n\n"
             "id: frames@%1$s:7\ndata: \ndata: \ndata: mid\ndata: \ndata: \n\n"
             "id: frames@%1$s:8\ndata: {\"k\":[1,2,{\"s\":\"x\\ny\"}],\"n\":null}\n\n"
             "id: frames@%1$s:9\nevent: tick\ndata: t\n\n"
             "id: frames@%1$s:10\nevent: price.update\ndata: 1.07\n\n",
             ep);
    expect_raw(&c, want);

    /* and an EventSource-style parse of the same bytes gives back what was published */
    static const char *const datas[] = {"one line", "a\nb",  "c\nd\ne",
                                        "f\ng",     "",      "tail\n",
                                        "\n\nmid\n\n", "{\"k\":[1,2,{\"s\":\"x\\ny\"}],\"n\":null}",
                                        "t",        "1.07"};
    for (int i = 0; i < 10; i++) {
        struct lg_sse_event ev;
        ck_assert_int_eq(lg_sse_next(&c, &ev, WAIT_MS), 1);
        char wid[64];
        snprintf(wid, sizeof wid, "frames@%s:%d", ep, i + 1);
        ck_assert_str_eq(ev.id, wid);
        ck_assert_str_eq(ev.data, datas[i]);
        ck_assert_str_eq(ev.event, i == 8 ? "tick" : i == 9 ? "price.update" : "message");
        lg_sse_event_free(&ev);
    }
    ck_assert_int_eq(c.retry_ms, 3000);
    lg_sse_close(&c);
}
END_TEST

START_TEST(test_sse_large_event)
{
    struct lg_sse_client c;
    lg_sse_must_open(&c, srv.public_port, "/sse?topic=big", NULL);

    const size_t n = 60 * 1024;
    char *data = malloc(n + 1);
    for (size_t i = 0; i < n; i++)
        data[i] = "0123456789abcdefghijklmnopqrstuvwxyz"[(i * 7 + i / 36) % 36];
    data[n] = '\0';
    char id[256];
    ck_assert_int_eq(lg_publish(srv.control_port, "big", data, id, sizeof id), 201);
    ck_assert_int_eq(lg_publish(srv.control_port, "big", "after", NULL, 0), 201);

    size_t cap = n + 1024;
    char *want = malloc(cap);
    char ep[16];
    lg_epoch_of(id, ep, sizeof ep);
    snprintf(want, cap, RETRY "id: big@%1$s:0\n\nid: big@%1$s:1\ndata: %2$s\n\n"
                              "id: big@%1$s:2\ndata: after\n\n",
             ep, data);
    expect_raw(&c, want);
    struct lg_sse_event ev;
    ck_assert_int_eq(lg_sse_next(&c, &ev, WAIT_MS), 1);
    ck_assert_uint_eq(ev.data_len, n);
    ck_assert(memcmp(ev.data, data, n) == 0);
    lg_sse_event_free(&ev);
    free(want);
    free(data);
    lg_sse_close(&c);
}
END_TEST

/* Each event's id is the cursor of the whole stream, one entry per topic in query order. */
START_TEST(test_sse_multi_topic_ids)
{
    char id[256], ep[16];
    pub(srv.control_port, "beta", "b-before", id, sizeof id); /* beta starts at seq 1 */
    lg_epoch_of(id, ep, sizeof ep);

    struct lg_sse_client c;
    lg_sse_must_open(&c, srv.public_port, "/sse?topic=alpha&topic=beta", NULL);
    pub(srv.control_port, "alpha", "a1", NULL, 0);
    pub(srv.control_port, "beta", "b2", NULL, 0);
    pub(srv.control_port, "alpha", "a2", NULL, 0);
    pub(srv.control_port, "alpha", "a3", NULL, 0);

    char want[2048];
    snprintf(want, sizeof want,
             RETRY "id: alpha@%1$s:0,beta@%1$s:1\n\n"
                   "id: alpha@%1$s:1,beta@%1$s:1\ndata: a1\n\n"
                   "id: alpha@%1$s:1,beta@%1$s:2\ndata: b2\n\n"
                   "id: alpha@%1$s:2,beta@%1$s:2\ndata: a2\n\n"
                   "id: alpha@%1$s:3,beta@%1$s:2\ndata: a3\n\n",
             ep);
    expect_raw(&c, want);
    lg_sse_close(&c);

    /* the last id resumes the two-topic stream exactly */
    pub(srv.control_port, "beta", "b3", NULL, 0);
    pub(srv.control_port, "alpha", "a4", NULL, 0);
    char hdr[256];
    snprintf(hdr, sizeof hdr, "Last-Event-ID: alpha@%1$s:2,beta@%1$s:2\r\n", ep);
    lg_sse_must_open(&c, srv.public_port, "/sse?topic=alpha&topic=beta", hdr);
    /* per-topic order is promised, the replay's cross-topic order is not: each id must be
     * the cursor after that event, and each topic's events must come in seq order */
    int a = 2, b = 2;
    for (int i = 0; i < 3; i++) {
        struct lg_sse_event ev;
        ck_assert_int_eq(lg_sse_next(&c, &ev, WAIT_MS), 1);
        if (strcmp(ev.data, "a3") == 0 && a == 2)
            a = 3;
        else if (strcmp(ev.data, "a4") == 0 && a == 3)
            a = 4;
        else if (strcmp(ev.data, "b3") == 0 && b == 2)
            b = 3;
        else
            ck_abort_msg("unexpected replayed event %s: %s (alpha at %d, beta at %d)", ev.id,
                         ev.data, a, b);
        char wid[128];
        snprintf(wid, sizeof wid, "alpha@%1$s:%2$d,beta@%1$s:%3$d", ep, a, b);
        ck_assert_str_eq(ev.id, wid);
        lg_sse_event_free(&ev);
    }
    ck_assert(a == 4 && b == 3);
    lg_sse_expect_quiet(&c, 300);
    lg_sse_close(&c);
}
END_TEST

START_TEST(test_sse_heartbeat)
{
    struct lg_server s;
    ck_assert_int_eq(lg_server_start(&s, "{\"sse\":{\"heartbeat_ms\":1000}}", NULL), 0);
    struct lg_sse_client c;
    int64_t t0 = lg_now_ms();
    lg_sse_must_open(&c, s.public_port, "/sse?topic=quiet", NULL);
    ck_assert_msg(lg_sse_wait_raw(&c, 0, ": hb\n", 3000), "no heartbeat within 3 s: %s", c.raw);
    int64_t took = lg_now_ms() - t0;
    ck_assert_msg(took >= 900 && took <= 2500, "first heartbeat after %lld ms (want ~1000)",
                  (long long)took);
    /* the stream's cursor (topic "quiet" at seq 0), then the comment */
    const char *hb = strstr(c.raw, ":0\n\n");
    ck_assert_msg(strncmp(c.raw, RETRY "id: quiet@", strlen(RETRY "id: quiet@")) == 0 && hb,
                  "stream start: %s", c.raw);
    hb += strlen(":0\n\n");
    ck_assert_str_eq(hb, ": hb\n\n");
    /* a second one after another second of silence */
    ck_assert(lg_sse_wait_raw(&c, (size_t)(hb - c.raw) + strlen(": hb\n\n"), ": hb\n", 3000));
    ck_assert_str_eq(c.raw + (hb - c.raw), ": hb\n\n: hb\n\n");
    /* events still parse around the comments */
    char id[256];
    pub(s.control_port, "quiet", "x", id, sizeof id);
    expect_event(&c, id, "message", "x");
    ck_assert_int_eq(c.comments, 2);
    lg_sse_close(&c);
    ck_assert_int_eq(lg_server_stop(&s, 10000), 0);
}
END_TEST

/* ---- Resume ------------------------------------------------------------------------------- */

/*
 * A stream of topic "r" (events m1.. with seqs 1..) resumed from a cursor in the query
 * (query_seq) and/or in a Last-Event-ID header (header_seq; 0 each: none), then, when publish
 * is not NULL, that published: its bytes are exactly the retry line, the comment id of the
 * cursor it resumed from (cursor) and the events cursor+1..last, nothing twice.
 */
struct resume {
    const char *name;
    int query_seq, header_seq;
    const char *publish;
    int cursor, last;
};

static const struct resume resumes[] = {
    {"header: exactly 3, 4, 5 from history, then 6 live", 0, 2, "m6", 2, 6},
    {"query parameter: from 3", 3, 0, NULL, 3, 6},
    {"header wins over query", 1, 5, NULL, 5, 6},
    {"the newest id: nothing replayed, the next publish arrives", 0, 6, "m7", 6, 7},
};

static void expect_resume(const struct resume *q, const char *ep)
{
    char path[128] = "/sse?topic=r", hdr[128] = "", want[1024];
    if (q->query_seq)
        snprintf(path, sizeof path, "/sse?topic=r&last_event_id=r@%s:%d", ep, q->query_seq);
    if (q->header_seq)
        snprintf(hdr, sizeof hdr, "Last-Event-ID: r@%s:%d\r\n", ep, q->header_seq);
    struct lg_sse_client c;
    lg_sse_must_open(&c, srv.public_port, path, q->header_seq ? hdr : NULL);
    if (q->publish)
        pub(srv.control_port, "r", q->publish, NULL, 0);
    int n = snprintf(want, sizeof want, RETRY "id: r@%s:%d\n\n", ep, q->cursor);
    for (int seq = q->cursor + 1; seq <= q->last; seq++)
        n += snprintf(want + n, sizeof want - (size_t)n,
                      "id: r@%s:%d\ndata: m%d\n\n", ep, seq, seq);
    const char *tail = n > 64 ? want + n - 64 : want; /* as expect_raw waits */
    ck_assert_msg(lg_sse_wait_raw(&c, 0, tail, WAIT_MS), "%s: stream incomplete: %s", q->name,
                  c.raw);
    ck_assert_msg(c.raw_len == (size_t)n && memcmp(c.raw, want, (size_t)n) == 0,
                  "%s: stream bytes differ.\nwant (%d):\n%s\ngot (%zu):\n%s", q->name, n, want,
                  c.raw_len, c.raw);
    lg_sse_close(&c);
}

START_TEST(test_sse_resume_last_event_id)
{
    char id[256], ep[16];
    pub(srv.control_port, "r", "m1", id, sizeof id);
    lg_epoch_of(id, ep, sizeof ep);
    for (int i = 2; i <= 5; i++) {
        char d[16];
        snprintf(d, sizeof d, "m%d", i);
        ck_assert_uint_eq(pub(srv.control_port, "r", d, NULL, 0), (unsigned long long)i);
    }

    for (size_t i = 0; i < sizeof resumes / sizeof *resumes; i++)
        expect_resume(&resumes[i], ep);

    struct lg_sse_client c;
    char hdr[128];
    /* a cursor with seq 0 replays everything */
    snprintf(hdr, sizeof hdr, "Last-Event-ID: r@%s:0\r\n", ep);
    lg_sse_must_open(&c, srv.public_port, "/sse?topic=r", hdr);
    for (int i = 1; i <= 7; i++) {
        char wid[64], d[16];
        snprintf(wid, sizeof wid, "r@%s:%d", ep, i);
        snprintf(d, sizeof d, "m%d", i);
        expect_event(&c, wid, "message", d);
    }
    lg_sse_expect_quiet(&c, 200);
    lg_sse_close(&c);
}
END_TEST

/* ---- Bad requests ------------------------------------------------------------------------- */

/* The fixed requests the public port refuses; the ones built from the epoch follow in code. */
static const struct refusal bad_requests[] = {
    {"GET", "/sse", NULL, NULL, 400, "bad_request", NULL, NULL},
    {"GET", "/sse?foo=bar", NULL, NULL, 400, "bad_request", NULL, NULL},
    {"GET", "/sse?topic=a%20b", NULL, NULL, 400, "invalid_topic", NULL, NULL},
    {"GET", "/sse?topic=a*b", NULL, NULL, 400, "invalid_topic", NULL, NULL},
    {"GET", "/sse?topic=a,b", NULL, NULL, 400, "invalid_topic", NULL, NULL},
    {"GET", "/sse?topic=", NULL, NULL, 400, "invalid_topic", NULL, NULL},
    {"GET", "/sse?topic=a@b", NULL, NULL, 400, "invalid_topic", NULL, NULL},
    {"GET", "/sse?topic=%C3%A9", NULL, NULL, 400, "invalid_topic", NULL, NULL},
    {"GET", "/nowhere", NULL, NULL, 404, "not_found", NULL, NULL},
    {"GET", "/sse/extra?topic=a", NULL, NULL, 404, "not_found", NULL, NULL},
    {"POST", "/sse?topic=a", NULL, "x", 405, "method_not_allowed", "Allow", "GET"},
    {"DELETE", "/poll?topic=a", NULL, NULL, 405, "method_not_allowed", "Allow", "GET"},
    {"GET", "/ws?topic=a", NULL, NULL, 426, "upgrade_required", "Upgrade", "websocket"},
};

START_TEST(test_sse_bad_requests)
{
    char id[256], ep[16];
    pub(srv.control_port, "ok", "x", id, sizeof id);
    lg_epoch_of(id, ep, sizeof ep);
    char path[256], hdr[256];

    for (size_t i = 0; i < sizeof bad_requests / sizeof *bad_requests; i++)
        expect_refused(srv.public_port, &bad_requests[i]);

    /* 129 bytes is one over the limit */
    char longp[300] = "/sse?topic=";
    memset(longp + strlen(longp), 't', 129);
    expect_get_refused(srv.public_port, longp, NULL, 400, "invalid_topic");

    static const char *const bad_cursors[] = {"garbage", "ok@zz:1", "ok@12345678", "ok@1234567:1",
                                              "ok@12345678:x", "ok@12345678:-1"};
    for (size_t i = 0; i < sizeof bad_cursors / sizeof *bad_cursors; i++) {
        snprintf(path, sizeof path, "/sse?topic=ok&last_event_id=%s", bad_cursors[i]);
        expect_get_refused(srv.public_port, path, NULL, 400, "invalid_cursor");
        snprintf(hdr, sizeof hdr, "Last-Event-ID: %s\r\n", bad_cursors[i]);
        expect_get_refused(srv.public_port, "/sse?topic=ok", hdr, 400, "invalid_cursor");
    }
    /* ahead of the topic: seq 2 when only 1 exists */
    snprintf(hdr, sizeof hdr, "Last-Event-ID: ok@%s:2\r\n", ep);
    expect_get_refused(srv.public_port, "/sse?topic=ok", hdr, 400, "invalid_cursor");

    /* a head over limits.max_request_head_bytes (8192) */
    size_t big = 9000;
    char *hbig = malloc(big + 32);
    strcpy(hbig, "X-Filler: ");
    memset(hbig + 10, 'f', big);
    strcpy(hbig + 10 + big, "\r\n");
    expect_get_refused(srv.public_port, "/sse?topic=a", hbig, 431, "headers_too_large");
    free(hbig);

    /* the server still serves after all that */
    struct lg_sse_client c;
    lg_sse_must_open(&c, srv.public_port, "/sse?topic=ok", NULL);
    pub(srv.control_port, "ok", "still", id, sizeof id);
    expect_event(&c, id, "message", "still");
    lg_sse_close(&c);
}
END_TEST

START_TEST(test_sse_static_files)
{
    char path[4096];
    size_t flen;
    char *file = lg_slurp_source("static/index.html", path, sizeof path, &flen);

    struct lg_http_response r;
    static const char *const index_paths[] = {"/", "/index.html"};
    for (int i = 0; i < 2; i++) {
        get(srv.public_port, index_paths[i], NULL, &r);
        ck_assert_msg(r.status == 200, "%s: %d %s", index_paths[i], r.status, r.body);
        char ct[128];
        ck_assert(lg_http_header(&r, "Content-Type", ct, sizeof ct));
        ck_assert_str_eq(ct, "text/html; charset=utf-8");
        ck_assert_uint_eq(r.body_len, flen);
        ck_assert(memcmp(r.body, file, flen) == 0);
        lg_http_response_free(&r);
    }
    free(file);

    static const char *const refused[] = {
        "/../CMakeLists.txt",        "/%2e%2e/CMakeLists.txt",
        "/%2E%2E/CMakeLists.txt",    "/..%2fCMakeLists.txt",  "/static/../../CMakeLists.txt",
        "/./../CMakeLists.txt",      "/%2e%2e%2fCMakeLists.txt", "/..",
        "/../../../../etc/passwd",
    };
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
        get(srv.public_port, refused[i], NULL, &r);
        ck_assert_msg(r.status == 404 || r.status == 400, "%s answered %d: %.200s", refused[i],
                      r.status, r.body);
        ck_assert_msg(strstr(r.body, "cmake_minimum_required") == NULL &&
                          strstr(r.body, "root:") == NULL,
                      "%s leaked a file outside static/", refused[i]);
        lg_http_response_free(&r);
    }
    /* the plain traversal forms are refused with exactly 404 */
    expect_get_refused(srv.public_port, "/../CMakeLists.txt", NULL, 404, "not_found");
    expect_get_refused(srv.public_port, "/%2e%2e/CMakeLists.txt", NULL, 404, "not_found");
    expect_get_refused(srv.public_port, "/no-such-file.js", NULL, 404, "not_found");
}
END_TEST

/* Write a file (directories must exist). */
static void put_file(const char *dir, const char *name, const char *text)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    ck_assert_msg(f != NULL, "create %s: %s", path, strerror(errno));
    fputs(text, f);
    fclose(f);
}

/* The temporary static tree: made and removed by the parent process (unchecked fixture), so
 * a failing test, which ends its forked child at once, leaves nothing behind. */
static char static_root[64];

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void static_tree_setup(void)
{
    snprintf(static_root, sizeof static_root, "/tmp/lg_static_XXXXXX");
    if (!mkdtemp(static_root))
        static_root[0] = '\0';
}

static void static_tree_teardown(void)
{
    if (static_root[0])
        nftw(static_root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* static_dir from the config: content types by extension; a sibling directory whose name
 * starts with the static directory's name and a symlink out of it are both refused. */
START_TEST(test_sse_static_dir_config)
{
    ck_assert_msg(static_root[0] != '\0', "mkdtemp failed");
    const char *root = static_root;
    char www[256], www2[256], link[300], conf[512];
    snprintf(www, sizeof www, "%s/www", root);
    snprintf(www2, sizeof www2, "%s/www2", root);
    ck_assert_int_eq(mkdir(www, 0755), 0);
    ck_assert_int_eq(mkdir(www2, 0755), 0);
    put_file(www, "index.html", "<p>hi</p>");
    put_file(www, "app.js", "let a=1;");
    put_file(www, "site.css", "p{}");
    put_file(www, "d.json", "{}");
    put_file(www, "blob.bin", "BIN");
    put_file(www2, "secret.txt", "SECRET");
    snprintf(link, sizeof link, "%s/link.txt", www);
    ck_assert_int_eq(symlink("../www2/secret.txt", link), 0);
    snprintf(conf, sizeof conf, "{\"static_dir\":\"%s\"}", www);

    struct lg_server s;
    ck_assert_int_eq(lg_server_start(&s, conf, NULL), 0);
    static const struct {
        const char *path, *type, *body;
    } ok[] = {
        {"/", "text/html; charset=utf-8", "<p>hi</p>"},
        {"/app.js", "text/javascript; charset=utf-8", "let a=1;"},
        {"/site.css", "text/css; charset=utf-8", "p{}"},
        {"/d.json", "application/json", "{}"},
        {"/blob.bin", "application/octet-stream", "BIN"},
    };
    struct lg_http_response r;
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        get(s.public_port, ok[i].path, NULL, &r);
        ck_assert_msg(r.status == 200, "%s: %d", ok[i].path, r.status);
        char ct[128];
        ck_assert(lg_http_header(&r, "Content-Type", ct, sizeof ct));
        ck_assert_str_eq(ct, ok[i].type);
        ck_assert_str_eq(r.body, ok[i].body);
        lg_http_response_free(&r);
    }
    static const char *const refused[] = {"/../www2/secret.txt", "/%2e%2e/www2/secret.txt",
                                          "/link.txt", "/www2/secret.txt", "/nothing.html"};
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
        request_refused(s.public_port,
                        &(struct refusal){.method = "GET",
                                          .path = refused[i],
                                          .status = 404,
                                          .code = "not_found"},
                        &r);
        ck_assert_msg(strstr(r.body, "SECRET") == NULL, "%s answered %d: %s", refused[i], r.status,
                      r.body);
        lg_http_response_free(&r);
    }
    ck_assert_int_eq(lg_server_stop(&s, 10000), 0);
}
END_TEST

/*
 * A ".." segment is refused even when the file system path it makes lands back inside
 * static/: otherwise the answer (200 or 404) tells a client the names of directories outside
 * static/ ("/../static/index.html" is 200 only because the directory is called "static";
 * "/../../tests/../main/static/index.html" probes the tree above it).
 */
START_TEST(test_sse_static_dotdot_never_served)
{
    /* by RFC 3986 dot-segment removal both name /static/index.html, which static/ lacks */
    expect_get_refused(srv.public_port, "/../static/index.html", NULL, 404, "not_found");
    expect_get_refused(srv.public_port, "/%2e%2e/static/index.html", NULL, 404, "not_found");
}
END_TEST

/* A NUL byte in the path is malformed (serve_static means to refuse it with 400); it must
 * never truncate the name so that "/index.html%00.txt" serves index.html. */
START_TEST(test_sse_static_nul_refused)
{
    expect_get_refused(srv.public_port, "/index.html%00.txt", NULL, 400, "bad_request");
}
END_TEST

/* ---- Dead subscribers --------------------------------------------------------------------- */

#define DEAD_CLIENTS 50

START_TEST(test_sse_dead_clients_cost_nothing)
{
    struct lg_sse_client cs[DEAD_CLIENTS];
    for (int i = 0; i < DEAD_CLIENTS; i++)
        lg_sse_must_open(&cs[i], srv.public_port,
                         i % 2 ? "/sse?topic=dead" : "/sse?topic=dead&topic=d2", NULL);
    ck_assert(lg_wait_stat(srv.control_port, "clients_sse", DEAD_CLIENTS, WAIT_MS));
    /* some events are queued or in flight when they go */
    ck_assert_int_eq(lg_publish(srv.control_port, "dead", "bye", NULL, 0), 201);
    for (int i = 0; i < DEAD_CLIENTS; i++) {
        if (i % 3 == 0) { /* abortive close: RST */
            struct linger lin = {.l_onoff = 1, .l_linger = 0};
            setsockopt(cs[i].fd, SOL_SOCKET, SO_LINGER, &lin, sizeof lin);
        } else if (i % 3 == 1) { /* half close first */
            shutdown(cs[i].fd, SHUT_WR);
        }
        lg_sse_close(&cs[i]);
    }
    ck_assert(lg_wait_stat(srv.control_port, "clients_sse", 0, 3000));
    ck_assert(lg_wait_stat(srv.control_port, "connections_open", 0, 3000));

    double cpu0 = lg_server_cpu_seconds(&srv);
    ck_assert(cpu0 >= 0);
    poll(NULL, 0, 2000); /* measuring idle CPU: the one deliberate sleep */
    double cpu1 = lg_server_cpu_seconds(&srv);
    ck_assert_msg(cpu1 - cpu0 < 0.2, "server used %.3f s CPU in 2 idle seconds", cpu1 - cpu0);

    /* still serving */
    struct lg_sse_client c;
    lg_sse_must_open(&c, srv.public_port, "/sse?topic=dead", NULL);
    char id[256];
    ck_assert_int_eq(lg_publish(srv.control_port, "dead", "alive", id, sizeof id), 201);
    expect_event(&c, id, "message", "alive");
    ck_assert(lg_wait_stat(srv.control_port, "clients_sse", 1, WAIT_MS));
    lg_sse_close(&c);
}
END_TEST

static Suite *sse_suite(void)
{
    Suite *s = suite_create("sse");
    LG_TCASE_TIMEOUT(s, "sse", 30, server_setup, server_teardown, test_sse_exact_head_and_frames,
                     test_sse_large_event, test_sse_multi_topic_ids, test_sse_resume_last_event_id,
                     test_sse_bad_requests, test_sse_static_files,
                     test_sse_static_dotdot_never_served, test_sse_static_nul_refused,
                     test_sse_dead_clients_cost_nothing);
    LG_TCASE_TIMEOUT(s, "sse_own_config", 30, NULL, NULL, test_sse_heartbeat);
    TCase *st = tcase_create("static_dir");
    tcase_set_timeout(st, 30);
    tcase_add_unchecked_fixture(st, static_tree_setup, static_tree_teardown);
    tcase_add_test(st, test_sse_static_dir_config);
    suite_add_tcase(s, st);
    return s;
}

LG_CHECK_MAIN(sse_suite)
