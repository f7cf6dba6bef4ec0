/*
 * test_filter.c - tag filters per subscription (docs/semantics.md, "Filters"): events
 * published with tags (?tags= and a batch's "tags") reach a filtered subscriber only when
 * they match, on SSE (exact bytes), WebSocket (query and subscribe message) and long-poll
 * (exact ids and cursors), with the memory store and with the Redis store (published on one
 * node, subscribed on another: the tags survive the store). Filtered events advance the
 * cursor: the next delivered event's id and the cursor a client holds after a filtered stretch
 * resume with no gap and no duplicate; a held poll whose only new events are filtered keeps
 * waiting. Malformed filters and tags are refused with 400 (WebSocket: an error message)
 * naming what was wrong.
 *
 * The fixture: topic f carries events 1..8 ("f-d<seq>") tagged
 *   1 kind:a,region:us  2 kind:b,region:us  3 kind:a,region:us  4 kind:b,region:eu
 *   5 kind:a,region:eu  6 kind:c            7 (none)            8 kind:a,region:us
 * 7 and 8 by one batch publish, the others one by one.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "lg_redis.h"
#include "lg_test.h"

#include "check_main.h"

#define WAIT_MS 5000
#define RETRY "retry: 3000\n\n"

static struct lg_redis redis;
static struct lg_server server, publisher;
static uint16_t cport; /* where events are published */
static char ep[16];    /* the epoch of f */

/* Publish event seq of f with tags (NULL: none) and check its id. */
static void publish_tagged(int seq, const char *tags)
{
    char query[128], data[32], id[128];
    snprintf(query, sizeof query, "tags=%s", tags ? tags : "");
    snprintf(data, sizeof data, "f-d%d", seq);
    ck_assert_int_eq(lg_publish_ex(cport, "f", tags ? query : NULL, NULL, data, strlen(data), id,
                                   sizeof id),
                     201);
    ck_assert_uint_eq(lg_seq_of(id), (uint64_t)seq);
    lg_epoch_of(id, ep, sizeof ep);
}

static void publish_batch_7_8(void)
{
    const char *body = "[{\"topic\":\"f\",\"data\":\"f-d7\"},"
                       "{\"topic\":\"f\",\"data\":\"f-d8\","
                       "\"tags\":{\"region\":\"us\",\"kind\":\"a\"}}]";
    struct lg_http_response r;
    ck_assert_int_eq(lg_http_request(cport, "POST", "/v1/publish",
                                     "Content-Type: application/json\r\n", body, strlen(body), &r,
                                     WAIT_MS),
                     0);
    ck_assert_msg(r.status == 201 || r.status == 200, "batch: %d %s", r.status, r.body);
    lg_http_response_free(&r);
}

/* _i 0: the memory store; 1: the Redis store, published on one node, subscribed on another. */
static void start_fixture(int store)
{
    if (store == 0) {
        lg_server_must_start(&server, "{}");
        cport = server.control_port;
    } else {
        char cfg[512];
        ck_assert_int_eq(lg_redis_start(&redis, false), 0);
        snprintf(cfg, sizeof cfg, "{\"workers\":2,\"redis\":{\"url\":\"%s\"}}", redis.url);
        lg_server_must_start(&publisher, cfg);
        lg_server_must_be_ready(&publisher, WAIT_MS);
        lg_server_must_start(&server, cfg);
        lg_server_must_be_ready(&server, WAIT_MS);
        cport = publisher.control_port;
    }
    publish_tagged(1, "kind:a,region:us");
    publish_tagged(2, "region:us,kind:b");
    publish_tagged(3, "kind:a,region:us");
    publish_tagged(4, "kind:b,region:eu");
    publish_tagged(5, "kind:a,region:eu");
    publish_tagged(6, "kind:c");
    publish_batch_7_8();
}

static void stop_fixture(int store)
{
    lg_server_must_stop(&server);
    if (store == 1) {
        lg_server_must_stop(&publisher);
        lg_redis_stop(&redis);
    }
}

/* The subscribers' node holds event seq of f (with Redis it arrives from the store a moment
 * after the publish answered): a plain poll from seq - 1 returns it. */
static void sync_node(int seq)
{
    char path[128], want[64];
    snprintf(path, sizeof path, "/poll?topic=f&since=f@%s:%d&timeout=5", ep, seq - 1);
    struct lg_http_response r;
    ck_assert_int_eq(
        lg_http_request(server.public_port, "GET", path, NULL, NULL, 0, &r, WAIT_MS + 1000), 0);
    snprintf(want, sizeof want, "\"seq\":%d,", seq);
    ck_assert_msg(r.status == 200 && strstr(r.body, want), "%s: %d %s", path, r.status, r.body);
    lg_http_response_free(&r);
}

/* ---- SSE: exact bytes ---------------------------------------------------------------------- */

/* "id: f@E:n\ndata: f-dn\n\n" for each n of seqs (0-terminated). */
static void sse_events(char *out, size_t cap, const int *seqs)
{
    for (; *seqs; seqs++)
        snprintf(out + strlen(out), cap - strlen(out),
                 "id: f@%1$s:%2$d\ndata: f-d%2$d\n\n", ep, *seqs);
}

/* The stream of path (with headers) is exactly: the retry line, the id-only block of cursor
 * (left out by a node whose copy of f was still loading: its position was not known yet),
 * the events seqs (0-terminated); nothing more within 100 ms. The stream stays open. */
static void sse_expect(struct lg_sse_client *c, const char *path, const char *headers,
                       int cursor, const int *seqs)
{
    char want[4096], loading[4096] = RETRY, tail[128];
    snprintf(want, sizeof want, RETRY "id: f@%s:%d\n\n", ep, cursor);
    sse_events(want, sizeof want, seqs);
    sse_events(loading, sizeof loading, seqs);
    const int *last = seqs;
    while (last[0] && last[1])
        last++;
    if (*last)
        snprintf(tail, sizeof tail, "data: f-d%d\n\n", *last);
    else
        snprintf(tail, sizeof tail, "id: f@%s:%d\n\n", ep, cursor);
    lg_sse_must_open(c, server.public_port, path, headers);
    ck_assert_msg(lg_sse_wait_raw(c, 0, tail, WAIT_MS), "%s: no %s; got: %s", path, tail, c->raw);
    bool exact = strcmp(c->raw, want) == 0 || (redis.pid != 0 && strcmp(c->raw, loading) == 0);
    ck_assert_msg(exact, "%s:\n%s\nwant\n%s", path, c->raw, want);
    size_t had = c->raw_len;
    ck_assert_msg(!lg_sse_wait_raw(c, had, "\n", 100), "%s: more arrived: %s", path, c->raw + had);
}

START_TEST(sse_filters)
{
    start_fixture(_i);
    char path[256], hdr[128];
    struct lg_sse_client c;
    /* from the start: only kind:a, in order, with their own ids */
    snprintf(path, sizeof path, "/sse?topic=f&filter=kind:a&last_event_id=f@%s:0", ep);
    sse_expect(&c, path, NULL, 0, (const int[]){1, 3, 5, 8, 0});
    /* live: 9 (kind:b) is passed, 10 (kind:a) arrives with its own id */
    size_t had = c.raw_len;
    publish_tagged(9, "kind:b");
    publish_tagged(10, "kind:a");
    ck_assert(lg_sse_wait_raw(&c, had, "data: f-d10\n\n", WAIT_MS));
    char want[512] = "";
    sse_events(want, sizeof want, (const int[]){10, 0});
    ck_assert_str_eq(c.raw + had, want);
    lg_sse_close(&c);

    /* a browser resuming from the last event it got, before a filtered stretch: no gap, no
     * duplicate */
    snprintf(hdr, sizeof hdr, "Last-Event-ID: f@%s:8\r\n", ep);
    sse_expect(&c, "/sse?topic=f&filter=kind:a", hdr, 9, (const int[]){10, 0});
    lg_sse_close(&c);
    /* resuming after a filtered stretch at the end: its position is passed at once */
    publish_tagged(11, "kind:b");
    publish_tagged(12, NULL);
    sync_node(12);
    snprintf(hdr, sizeof hdr, "Last-Event-ID: f@%s:10\r\n", ep);
    sse_expect(&c, "/sse?topic=f&filter=kind:a", hdr, 12, (const int[]){0});
    had = c.raw_len;
    publish_tagged(13, "kind:a,region:eu");
    ck_assert(lg_sse_wait_raw(&c, had, "data: f-d13\n\n", WAIT_MS));
    want[0] = '\0';
    sse_events(want, sizeof want, (const int[]){13, 0});
    ck_assert_str_eq(c.raw + had, want);
    lg_sse_close(&c);

    /* a set and a conjunction; order and repetition in the filter do not matter */
    snprintf(path, sizeof path,
             "/sse?topic=f&filter=region:eu,kind:c%%7Ca%%7Ca&last_event_id=f@%s:0", ep);
    sse_expect(&c, path, NULL, 4, (const int[]){5, 13, 0});
    lg_sse_close(&c);
    stop_fixture(_i);
}
END_TEST

/* ---- WebSocket: exact ids ------------------------------------------------------------------- */

/* The next n messages of ws must be events of f with these seqs (ids and data checked). */
static void ws_expect(struct lg_ws_client *ws, const int *seqs)
{
    for (; *seqs; seqs++) {
        char *m = NULL, id[64], data[32];
        ck_assert_msg(lg_ws_next(ws, &m, WAIT_MS) == 1, "ws: event %d missing", *seqs);
        json_t *o = json_loads(m, 0, NULL);
        ck_assert_msg(o && strcmp(json_string_value(json_object_get(o, "type")), "event") == 0,
                      "not an event: %s", m);
        snprintf(id, sizeof id, "f@%s:%d", ep, *seqs);
        snprintf(data, sizeof data, "f-d%d", *seqs);
        ck_assert_str_eq(json_string_value(json_object_get(o, "id")), id);
        ck_assert_str_eq(json_string_value(json_object_get(o, "data")), data);
        json_decref(o);
        free(m);
    }
    char *m = NULL;
    ck_assert_msg(lg_ws_next(ws, &m, 100) == 0, "ws: more arrived: %s", m ? m : "");
}

/* Send a subscribe message; its answer must be subscribed with cursor f@E:cursor. */
static void ws_subscribe(struct lg_ws_client *ws, const char *msg, int cursor)
{
    ck_assert_int_eq(lg_ws_send_text(ws, msg, strlen(msg)), 0);
    char *m = NULL, want[64];
    ck_assert_int_eq(lg_ws_next(ws, &m, WAIT_MS), 1);
    json_t *o = json_loads(m, 0, NULL);
    ck_assert_msg(strcmp(json_string_value(json_object_get(o, "type")), "subscribed") == 0,
                  "%s answered %s", msg, m);
    snprintf(want, sizeof want, "f@%s:%d", ep, cursor);
    const char *got = json_string_value(json_object_get(o, "cursor"));
    /* a node whose copy of f is still loading answers before its position is known */
    ck_assert_msg(strcmp(got, want) == 0 || redis.pid != 0, "%s: cursor %s, want %s", msg, got,
                  want);
    json_decref(o);
    free(m);
}

START_TEST(ws_filters)
{
    start_fixture(_i);
    char path[256], cursor[128], msg[256];
    struct lg_ws_client ws;
    snprintf(path, sizeof path, "/ws?topic=f&filter=kind:a&since=f@%s:0", ep);
    lg_ws_must_subscribe(&ws, server.public_port, path, NULL, cursor, sizeof cursor);
    ws_expect(&ws, (const int[]){1, 3, 5, 8, 0});
    publish_tagged(9, "kind:b");
    publish_tagged(10, "kind:a");
    ws_expect(&ws, (const int[]){10, 0});
    lg_ws_close(&ws);

    /* a subscribe message with a filter: the cursor it answers covers the filtered events
     * before the first match */
    lg_ws_must_open(&ws, server.public_port, "/ws", "livegate.v1");
    snprintf(msg, sizeof msg,
             "{\"op\":\"subscribe\",\"topics\":[\"f\"],\"since\":\"f@%s:0\","
             "\"filter\":\"kind:a|c,region:eu\"}", ep);
    ws_subscribe(&ws, msg, 4);
    ws_expect(&ws, (const int[]){5, 0});
    lg_ws_close(&ws);

    /* resume from the last delivered id, across a filtered stretch: no gap, no duplicate */
    lg_ws_must_open(&ws, server.public_port, "/ws", "livegate.v1");
    snprintf(msg, sizeof msg,
             "{\"op\":\"subscribe\",\"topics\":[\"f\"],\"since\":\"f@%s:8\",\"filter\":\"kind:a\"}",
             ep);
    ws_subscribe(&ws, msg, 9); /* 9 is passed at once: nothing queued before it */
    ws_expect(&ws, (const int[]){10, 0});
    publish_tagged(11, "kind:c");
    publish_tagged(12, "kind:a");
    ws_expect(&ws, (const int[]){12, 0});
    lg_ws_close(&ws);
    stop_fixture(_i);
}
END_TEST

/* ---- Long-poll: exact ids and cursors -------------------------------------------------------- */

/* The answer r: its events' seqs (comma-separated) are want, its cursor f@E:want_cursor. */
static void poll_check(const char *what, const struct lg_http_response *r, const char *want,
                       int want_cursor)
{
    ck_assert_msg(r->status == 200, "%s: %d %s", what, r->status, r->body);
    json_t *o = json_loadb(r->body, r->body_len, 0, NULL);
    char got[256] = "", cursor[64];
    size_t i;
    json_t *item;
    json_array_foreach(json_object_get(o, "events"), i, item) {
        ck_assert_str_eq(json_string_value(json_object_get(item, "type")), "event");
        snprintf(got + strlen(got), sizeof got - strlen(got), "%s%lld", got[0] ? "," : "",
                 json_integer_value(json_object_get(item, "seq")));
    }
    ck_assert_msg(strcmp(got, want) == 0, "%s: %s, want %s", what, got, want);
    snprintf(cursor, sizeof cursor, "f@%s:%d", ep, want_cursor);
    ck_assert_str_eq(json_string_value(json_object_get(o, "cursor")), cursor);
    json_decref(o);
}

static void poll_case(const char *query, const char *want, int want_cursor)
{
    char path[256];
    snprintf(path, sizeof path, "/poll?topic=f&%s", query);
    struct lg_http_response r;
    ck_assert_int_eq(lg_http_request(server.public_port, "GET", path, NULL, NULL, 0, &r, WAIT_MS),
                     0);
    poll_check(path, &r, want, want_cursor);
    lg_http_response_free(&r);
}

/* Send GET /poll?topic=f&query on a new connection (answered later). Return value: its fd. */
static int poll_send(const char *query)
{
    char req[512];
    snprintf(req, sizeof req, "GET /poll?topic=f&%s HTTP/1.1\r\nHost: t\r\n\r\n", query);
    int fd = lg_tcp_connect(server.public_port);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(lg_send_all(fd, req, strlen(req)), 0);
    return fd;
}

START_TEST(poll_filters)
{
    start_fixture(_i);
    char q[256];
    snprintf(q, sizeof q, "since=f@%s:0&filter=kind:a&timeout=0", ep);
    poll_case(q, "1,3,5,8", 8);
    snprintf(q, sizeof q, "since=f@%s:0&filter=kind:b&timeout=0", ep);
    poll_case(q, "2,4", 8); /* the cursor covers 5..8, which the filter kept out */
    snprintf(q, sizeof q, "since=f@%s:8&filter=kind:b&timeout=0", ep);
    poll_case(q, "", 8);
    snprintf(q, sizeof q, "since=f@%s:4&filter=kind:b&timeout=0", ep);
    poll_case(q, "", 8); /* only filtered events after the cursor: answered empty, past them */

    /* a held poll whose only new events are filtered keeps waiting; the match answers it */
    snprintf(q, sizeof q, "since=f@%s:8&filter=kind:b&timeout=20", ep);
    int fd = poll_send(q);
    publish_tagged(9, "kind:a");
    struct lg_http_response r;
    ck_assert_int_eq(lg_http_read_response(fd, &r, 300), -1); /* still held */
    lg_http_response_free(&r);
    publish_tagged(10, "kind:b");
    ck_assert_int_eq(lg_http_read_response(fd, &r, WAIT_MS), 0);
    poll_check("held poll", &r, "10", 10);
    lg_http_response_free(&r);
    close(fd);

    /* its deadline answers with no events and a cursor past the filtered ones */
    snprintf(q, sizeof q, "since=f@%s:10&filter=kind:b&timeout=3", ep);
    fd = poll_send(q);
    publish_tagged(11, "kind:a");
    sync_node(11); /* before the held poll's deadline */
    ck_assert_int_eq(lg_http_read_response(fd, &r, WAIT_MS), 0);
    poll_check("poll at its deadline", &r, "", 11);
    lg_http_response_free(&r);
    close(fd);
    /* and that cursor resumes with no gap and no duplicate */
    publish_tagged(12, "kind:b");
    sync_node(12);
    snprintf(q, sizeof q, "since=f@%s:11&filter=kind:b&timeout=0", ep);
    poll_case(q, "12", 12);
    stop_fixture(_i);
}
END_TEST

/* ---- Refusals ------------------------------------------------------------------------------ */

static void expect_400(uint16_t port, const char *method, const char *path, const char *code,
                       const char *message)
{
    struct lg_http_response r;
    ck_assert_int_eq(lg_http_request(port, method, path, NULL, method[0] == 'P' ? "x" : NULL,
                                     method[0] == 'P' ? 1 : 0, &r, WAIT_MS),
                     0);
    lg_expect_error_named(path, &r, 400, code, LG_ERROR_ONLY_KEYS);
    json_t *o = json_loadb(r.body, r.body_len, 0, NULL);
    ck_assert_msg(strcmp(json_string_value(json_object_get(o, "message")), message) == 0,
                  "%s: %s", path, r.body);
    json_decref(o);
    lg_http_response_free(&r);
}

START_TEST(bad_filters_and_tags_are_refused)
{
    start_fixture(0);
    const char *paths[] = {"/sse", "/poll"};
    char path[512], long_filter[300];
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s?topic=f&filter=kind", paths[i]);
        expect_400(server.public_port, "GET", path, "invalid_filter",
                   "malformed filter: filter clause \"kind\" has no ':'; a clause is key:value "
                   "or key:value1|value2");
        snprintf(path, sizeof path, "%s?topic=f&filter=kind:a,kind:b", paths[i]);
        expect_400(server.public_port, "GET", path, "invalid_filter",
                   "malformed filter: filter key \"kind\" appears twice; give its values in "
                   "one clause (key:a|b)");
    }
    memset(long_filter, 'a', 257);
    memcpy(long_filter, "k:", 2);
    long_filter[257] = '\0';
    snprintf(path, sizeof path, "/sse?topic=f&filter=%s", long_filter);
    expect_400(server.public_port, "GET", path, "invalid_filter",
               "malformed filter: the filter is 257 bytes; at most 256 are allowed");
    expect_400(server.control_port, "POST", "/v1/topics/f/events?tags=kind", "bad_request",
               "query parameter \"tags\": tags: \"kind\" is not key:value; write tags as "
               "key:value,key:value");

    /* WebSocket: an error message naming it; the connection stays open */
    struct lg_ws_client ws;
    lg_ws_must_open(&ws, server.public_port, "/ws?topic=f&filter=a:1%7C", "livegate.v1");
    char *m = NULL;
    ck_assert_int_eq(lg_ws_next(&ws, &m, WAIT_MS), 1);
    ck_assert_str_eq(m, "{\"type\":\"error\",\"v\":1,\"code\":\"invalid_filter\",\"message\":"
                        "\"malformed filter: filter clause \\\"a:1|\\\" ends with '|'\"}");
    free(m);
    const char *bad = "{\"op\":\"subscribe\",\"topics\":[\"f\"],\"filter\":7}";
    ck_assert_int_eq(lg_ws_send_text(&ws, bad, strlen(bad)), 0);
    ck_assert_int_eq(lg_ws_next(&ws, &m, WAIT_MS), 1);
    ck_assert_str_eq(m, "{\"type\":\"error\",\"v\":1,\"code\":\"invalid_filter\",\"message\":"
                        "\"\\\"filter\\\" must be a string such as \\\"region:eu,kind:a|b\\\"\"}");
    free(m);
    ck_assert_int_eq(lg_ws_send_text(&ws, "{\"op\":\"ping\"}", 13), 0);
    ck_assert_int_eq(lg_ws_next(&ws, &m, WAIT_MS), 1);
    ck_assert_ptr_nonnull(strstr(m, "\"pong\""));
    free(m);
    lg_ws_close(&ws);
    stop_fixture(0);
}
END_TEST

/* The gateway stops cleanly (exit 0, no sanitizer report) with filtered subscriptions open on
 * every transport, two sharing a filter: their references go with their connections. */
START_TEST(stops_with_filtered_subscriptions_open)
{
    start_fixture(0);
    struct lg_sse_client c;
    char path[128], cursor[128];
    snprintf(path, sizeof path, "/sse?topic=f&filter=kind:a&last_event_id=f@%s:8", ep);
    lg_sse_must_open(&c, server.public_port, path, NULL);
    struct lg_ws_client ws;
    lg_ws_must_subscribe(&ws, server.public_port, "/ws?topic=f&filter=kind:a", NULL, cursor,
                         sizeof cursor);
    int fd = poll_send("filter=region:eu&timeout=30");
    ck_assert(lg_wait_stat(server.control_port, "clients_poll", 1, WAIT_MS));
    lg_server_must_stop(&server);
    close(fd);
    lg_ws_close(&ws);
    lg_sse_close(&c);
}
END_TEST

static Suite *filter_suite(void)
{
    Suite *s = suite_create("filter");
    TCase *tc = tcase_create("transports");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, sse_filters, 0, 2);
    tcase_add_loop_test(tc, ws_filters, 0, 2);
    tcase_add_loop_test(tc, poll_filters, 0, 2);
    tcase_add_test(tc, bad_filters_and_tags_are_refused);
    tcase_add_test(tc, stops_with_filtered_subscriptions_open);
    suite_add_tcase(s, tc);
    return s;
}

LG_CHECK_MAIN(filter_suite)
