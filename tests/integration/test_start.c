/*
 * test_start.c - where a new subscription starts (docs/semantics.md (c)): since=latest,
 * rewind=N within and beyond history, a topic rule's default, and a cursor that none of them
 * changes, on SSE (exact bytes), WebSocket (query and subscribe message) and long-poll and
 * plain poll (exact ids), with the memory store and with the Redis store (a real
 * redis-server, on a node whose copy of the topic is not loaded yet). Every refusal answers
 * 400 (WebSocket: an error message) naming what was wrong.
 *
 * The fixture: history.max_events 5; topics s, rw/a (rule: rewind 2) and lt/a (rule: start
 * latest) each carry events 1..8 ("<topic>-d<seq>"), so 4..8 are retained.
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
#define RULES                                                                                      \
    "\"history\":{\"max_events\":5},\"topic_rules\":[{\"match\":\"rw/*\",\"rewind\":2},"          \
    "{\"match\":\"lt/*\",\"start\":\"latest\"}]"

static struct lg_redis redis;
static struct lg_server server;
static char ep[16]; /* the epoch of s (each topic has its own with Redis) */

/* _i 0: the memory store; 1: the Redis store, and the subscribers on a second node that
 * has never seen the topics (their streams load when the first subscriber arrives). */
static uint16_t start_fixture(int store, struct lg_server *publisher)
{
    char cfg[1024];
    if (store == 0) {
        snprintf(cfg, sizeof cfg, "{" RULES "}");
        lg_server_must_start(&server, cfg);
    } else {
        ck_assert_int_eq(lg_redis_start(&redis, false), 0);
        snprintf(cfg, sizeof cfg, "{\"workers\":2,\"redis\":{\"url\":\"%s\"}," RULES "}",
                 redis.url);
        lg_server_must_start(publisher, cfg);
        lg_server_must_be_ready(publisher, WAIT_MS);
        lg_server_must_start(&server, cfg);
        lg_server_must_be_ready(&server, WAIT_MS);
    }
    uint16_t cport = store == 0 ? server.control_port : publisher->control_port;
    lg_publish_n_tagged_epoch(cport, "s", 1, 8, ep, sizeof ep);
    lg_publish_n_tagged(cport, "rw/a", 1, 8, NULL, 0);
    lg_publish_n_tagged(cport, "lt/a", 1, 8, NULL, 0);
    return cport;
}

static void stop_fixture(int store, struct lg_server *publisher)
{
    lg_server_must_stop(&server);
    if (store == 1) {
        lg_server_must_stop(publisher);
        lg_redis_stop(&redis);
    }
}

/* The epoch of topic (publish nothing: read it from a plain poll's cursor). */
static void epoch_of_topic(const char *topic, char *out, size_t cap)
{
    char path[256];
    snprintf(path, sizeof path, "/poll?topic=%s&timeout=0", topic);
    struct lg_http_response r;
    ck_assert_int_eq(lg_http_request(server.public_port, "GET", path, NULL, NULL, 0, &r, WAIT_MS),
                     0);
    ck_assert_int_eq(r.status, 200);
    json_t *o = json_loadb(r.body, r.body_len, 0, NULL);
    lg_epoch_of(json_string_value(json_object_get(o, "cursor")), out, cap);
    json_decref(o);
    lg_http_response_free(&r);
}

/* ---- SSE: exact bytes ---------------------------------------------------------------------- */

/* The stream of path (with headers) is exactly want once tail arrived, and nothing more
 * arrives within 100 ms. A stream whose topic's Redis stream was still loading has no id-only
 * block after its retry: line (its position was not known yet): want without it. */
static void sse_expect(struct lg_sse_client *c, const char *path, const char *headers,
                       const char *tail, const char *want)
{
    lg_sse_must_open(c, server.public_port, path, headers);
    ck_assert_msg(lg_sse_wait_raw(c, 0, tail, WAIT_MS), "%s: no %s; got: %s", path, tail,
                  c->raw);
    char loading[4096];
    const char *id_block = want + strlen(RETRY);
    snprintf(loading, sizeof loading, RETRY "%s", strstr(id_block, "\n\n") + 2);
    bool exact = strcmp(c->raw, want) == 0 ||
                 (strncmp(id_block, "id: ", 4) == 0 && strcmp(c->raw, loading) == 0 &&
                  redis.pid != 0);
    ck_assert_msg(exact, "%s:\n%s\nwant\n%s", path, c->raw, want);
    size_t had = c->raw_len;
    ck_assert_msg(!lg_sse_wait_raw(c, had, "\n", 100), "%s: more arrived: %s", path,
                  c->raw + had);
}

/* "id: T@E:n\ndata: T-dn\n\n" for n in from..to, appended to out. */
static void sse_events(char *out, size_t cap, const char *topic, const char *e, int from, int to)
{
    for (int n = from; n <= to; n++)
        snprintf(out + strlen(out), cap - strlen(out),
                 "id: %1$s@%2$s:%3$d\ndata: %1$s-d%3$d\n\n", topic, e, n);
}

static void sse_case(const char *path, const char *headers, const char *topic, const char *e,
                     int cursor, int gap_to, int from, int to)
{
    char want[4096], tail[128];
    snprintf(want, sizeof want, RETRY "id: %s@%s:%d\n\n", topic, e, cursor);
    snprintf(tail, sizeof tail, "id: %s@%s:%d\n\n", topic, e, cursor);
    if (gap_to)
        snprintf(want + strlen(want), sizeof want - strlen(want),
                 "id: %1$s@%2$s:%4$d\nevent: gap\ndata: {\"topic\":\"%1$s\",\"from\":%3$d,"
                 "\"to\":%4$d,\"id\":\"%1$s@%2$s:%4$d\"}\n\n",
                 topic, e, cursor + 1, gap_to);
    sse_events(want, sizeof want, topic, e, from, to);
    if (to)
        snprintf(tail, sizeof tail, "data: %s-d%d\n\n", topic, to);
    struct lg_sse_client c;
    sse_expect(&c, path, headers, tail, want);
    lg_sse_close(&c);
}

START_TEST(sse_starts)
{
    struct lg_server publisher;
    uint16_t cport = start_fixture(_i, &publisher);
    char rw[16], lt[16], path[256], hdr[128], want[2048];
    epoch_of_topic("rw/a", rw, sizeof rw);
    epoch_of_topic("lt/a", lt, sizeof lt);

    /* latest: the newest event, then live ones */
    struct lg_sse_client c;
    snprintf(want, sizeof want, RETRY "id: s@%s:7\n\n", ep);
    sse_events(want, sizeof want, "s", ep, 8, 8);
    sse_expect(&c, "/sse?topic=s&since=latest", NULL, "data: s-d8\n\n", want);
    size_t had = c.raw_len;
    lg_publish_n_tagged(cport, "s", 9, 9, NULL, 0);
    want[0] = '\0';
    sse_events(want, sizeof want, "s", ep, 9, 9);
    ck_assert(lg_sse_wait_raw(&c, had, "data: s-d9\n\n", WAIT_MS));
    ck_assert_str_eq(c.raw + had, want);
    lg_sse_close(&c);

    /* rewind within history; beyond it (a gap, then what is retained); beyond the topic */
    sse_case("/sse?topic=s&rewind=3", NULL, "s", ep, 6, 0, 7, 9);
    sse_case("/sse?topic=s&rewind=7", NULL, "s", ep, 2, 4, 5, 9);
    sse_case("/sse?topic=s&rewind=50", NULL, "s", ep, 0, 4, 5, 9);
    sse_case("/sse?topic=s&rewind=0", NULL, "s", ep, 9, 0, 1, 0); /* none */
    /* a browser's reconnection: Last-Event-ID wins over the URL's start */
    snprintf(hdr, sizeof hdr, "Last-Event-ID: s@%s:6\r\n", ep);
    sse_case("/sse?topic=s&since=latest", hdr, "s", ep, 6, 0, 7, 9);
    /* the rules' defaults, an explicit start over them, a cursor unaffected */
    sse_case("/sse?topic=rw/a", NULL, "rw/a", rw, 6, 0, 7, 8);
    sse_case("/sse?topic=lt/a", NULL, "lt/a", lt, 7, 0, 8, 8);
    sse_case("/sse?topic=rw/a&since=latest", NULL, "rw/a", rw, 7, 0, 8, 8);
    snprintf(path, sizeof path, "/sse?topic=rw/a&last_event_id=rw/a@%s:4", rw);
    sse_case(path, NULL, "rw/a", rw, 4, 0, 5, 8);
    stop_fixture(_i, &publisher);
}
END_TEST

/* ---- WebSocket and poll: exact ids ---------------------------------------------------------- */

/* Append to out what one message or poll item is: "N" for event N of topic (its id, seq and
 * data checked), "gap:F-T" for a gap notice (all of it checked). */
static void describe(char *out, size_t cap, json_t *m, const char *topic, const char *e)
{
    const char *type = json_string_value(json_object_get(m, "type"));
    ck_assert_ptr_nonnull(type);
    char want[256];
    if (strcmp(type, "gap") == 0) {
        long long from = json_integer_value(json_object_get(m, "from"));
        long long to = json_integer_value(json_object_get(m, "to"));
        snprintf(want, sizeof want, "%s@%s:%lld", topic, e, to);
        ck_assert_str_eq(json_string_value(json_object_get(m, "id")), want);
        snprintf(out + strlen(out), cap - strlen(out), "%sgap:%lld-%lld", out[0] ? "," : "",
                 from, to);
        return;
    }
    ck_assert_str_eq(type, "event");
    long long seq = json_integer_value(json_object_get(m, "seq"));
    snprintf(want, sizeof want, "%s@%s:%lld", topic, e, seq);
    ck_assert_str_eq(json_string_value(json_object_get(m, "id")), want);
    snprintf(want, sizeof want, "%s-d%lld", topic, seq);
    ck_assert_str_eq(json_string_value(json_object_get(m, "data")), want);
    snprintf(out + strlen(out), cap - strlen(out), "%s%lld", out[0] ? "," : "", seq);
}

/* The next n messages of ws, described. */
static void ws_take(struct lg_ws_client *ws, int n, const char *topic, const char *e, char *out,
                    size_t cap)
{
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        char *m = NULL;
        ck_assert_msg(lg_ws_next(ws, &m, WAIT_MS) == 1, "ws: message %d of %d missing (%s)", i,
                      n, out);
        json_t *o = json_loads(m, 0, NULL);
        ck_assert_msg(o != NULL, "not JSON: %s", m);
        describe(out, cap, o, topic, e);
        json_decref(o);
        free(m);
    }
}

/* /ws?QUERY: the subscribed cursor is topic@e:cursor, then exactly `want` (n messages). */
static void ws_query_case(const char *query, const char *topic, const char *e, int cursor, int n,
                          const char *want)
{
    char path[256], got_cursor[256], want_cursor[256], got[512];
    snprintf(path, sizeof path, "/ws?%s", query);
    struct lg_ws_client ws;
    lg_ws_must_subscribe(&ws, server.public_port, path, NULL, got_cursor, sizeof got_cursor);
    snprintf(want_cursor, sizeof want_cursor, "%s@%s:%d", topic, e, cursor);
    ck_assert_str_eq(got_cursor, want_cursor);
    ws_take(&ws, n, topic, e, got, sizeof got);
    ck_assert_msg(strcmp(got, want) == 0, "%s: %s, want %s", path, got, want);
    char *m = NULL;
    ck_assert_int_eq(lg_ws_next(&ws, &m, 100), 0); /* and nothing more */
    lg_ws_close(&ws);
}

/* A subscribe message on an open connection: the subscribed answer (cursor checked), then
 * exactly `want` (n messages). */
static void ws_message_case(const char *msg, const char *topic, const char *e, int cursor, int n,
                            const char *want)
{
    struct lg_ws_client ws;
    lg_ws_must_open(&ws, server.public_port, "/ws", "livegate.v1");
    ck_assert_int_eq(lg_ws_send_text(&ws, msg, strlen(msg)), 0);
    char *m = NULL, want_cursor[256], got[512];
    ck_assert_int_eq(lg_ws_next(&ws, &m, WAIT_MS), 1);
    json_t *o = json_loads(m, 0, NULL);
    ck_assert_msg(strcmp(json_string_value(json_object_get(o, "type")), "subscribed") == 0,
                  "%s answered %s", msg, m);
    snprintf(want_cursor, sizeof want_cursor, "%s@%s:%d", topic, e, cursor);
    ck_assert_str_eq(json_string_value(json_object_get(o, "cursor")), want_cursor);
    json_decref(o);
    free(m);
    ws_take(&ws, n, topic, e, got, sizeof got);
    ck_assert_msg(strcmp(got, want) == 0, "%s: %s, want %s", msg, got, want);
    lg_ws_close(&ws);
}

START_TEST(ws_starts)
{
    struct lg_server publisher;
    uint16_t cport = start_fixture(_i, &publisher);
    char rw[16], lt[16], msg[256];
    epoch_of_topic("rw/a", rw, sizeof rw);
    epoch_of_topic("lt/a", lt, sizeof lt);

    /* latest, then a live event */
    struct lg_ws_client ws;
    char cursor[256], got[256];
    lg_ws_must_subscribe(&ws, server.public_port, "/ws?topic=s&since=latest", NULL, cursor,
                         sizeof cursor);
    ws_take(&ws, 1, "s", ep, got, sizeof got);
    ck_assert_str_eq(got, "8");
    lg_publish_n_tagged(cport, "s", 9, 9, NULL, 0);
    ws_take(&ws, 1, "s", ep, got, sizeof got);
    ck_assert_str_eq(got, "9");
    lg_ws_close(&ws);

    ws_query_case("topic=s&rewind=2", "s", ep, 7, 2, "8,9");
    ws_query_case("topic=s&rewind=7", "s", ep, 2, 6, "gap:3-4,5,6,7,8,9");
    ws_message_case("{\"op\":\"subscribe\",\"topics\":[\"s\"],\"since\":\"latest\"}", "s", ep, 8,
                    1, "9");
    ws_message_case("{\"op\":\"subscribe\",\"topics\":[\"s\"],\"rewind\":100}", "s", ep, 0, 6,
                    "gap:1-4,5,6,7,8,9");
    ws_message_case("{\"op\":\"subscribe\",\"topics\":[\"rw/a\"]}", "rw/a", rw, 6, 2, "7,8");
    ws_message_case("{\"op\":\"subscribe\",\"topics\":[\"lt/a\"]}", "lt/a", lt, 7, 1, "8");
    ws_message_case("{\"op\":\"subscribe\",\"topics\":[\"lt/a\"],\"rewind\":3}", "lt/a", lt, 5, 3,
                    "6,7,8");
    snprintf(msg, sizeof msg, "{\"op\":\"subscribe\",\"topics\":[\"rw/a\"],\"since\":\"rw/a@%s:3\"}",
             rw);
    ws_message_case(msg, "rw/a", rw, 3, 5, "4,5,6,7,8");
    stop_fixture(_i, &publisher);
}
END_TEST

/* GET path: 200, its items described into got and its cursor into cursor. */
static void poll_case(const char *path, const char *topic, const char *e, const char *want,
                      int want_cursor)
{
    struct lg_http_response r;
    ck_assert_int_eq(lg_http_request(server.public_port, "GET", path, NULL, NULL, 0, &r, WAIT_MS),
                     0);
    ck_assert_msg(r.status == 200, "%s: %d %s", path, r.status, r.body);
    json_t *o = json_loadb(r.body, r.body_len, 0, NULL);
    char got[512] = "", cursor[256];
    size_t i;
    json_t *item;
    json_array_foreach(json_object_get(o, "events"), i, item)
        describe(got, sizeof got, item, topic, e);
    ck_assert_msg(strcmp(got, want) == 0, "%s: %s, want %s", path, got, want);
    snprintf(cursor, sizeof cursor, "%s@%s:%d", topic, e, want_cursor);
    ck_assert_str_eq(json_string_value(json_object_get(o, "cursor")), cursor);
    json_decref(o);
    lg_http_response_free(&r);
}

START_TEST(poll_starts)
{
    struct lg_server publisher;
    start_fixture(_i, &publisher);
    char rw[16], lt[16], path[256];
    epoch_of_topic("rw/a", rw, sizeof rw);
    epoch_of_topic("lt/a", lt, sizeof lt);

    poll_case("/poll?topic=s&since=latest&timeout=0", "s", ep, "8", 8);
    poll_case("/poll?topic=s&since=latest&timeout=5", "s", ep, "8", 8); /* held: at once */
    poll_case("/poll?topic=s&rewind=3&timeout=0", "s", ep, "6,7,8", 8);
    poll_case("/poll?topic=s&rewind=6&timeout=0", "s", ep, "gap:3-3,4,5,6,7,8", 8);
    poll_case("/poll?topic=s&rewind=1000000&timeout=0", "s", ep, "gap:1-3,4,5,6,7,8", 8);
    poll_case("/poll?topic=s&rewind=0&timeout=0", "s", ep, "", 8);
    poll_case("/poll?topic=rw/a&timeout=0", "rw/a", rw, "7,8", 8);
    poll_case("/poll?topic=lt/a&timeout=0", "lt/a", lt, "8", 8);
    poll_case("/poll?topic=lt/a&rewind=2&timeout=0", "lt/a", lt, "7,8", 8);
    snprintf(path, sizeof path, "/poll?topic=rw/a&since=rw/a@%s:4&timeout=0", rw);
    poll_case(path, "rw/a", rw, "5,6,7,8", 8);
    snprintf(path, sizeof path, "/poll?topic=lt/a&since=lt/a@%s:8&timeout=0", lt);
    poll_case(path, "lt/a", lt, "", 8);
    stop_fixture(_i, &publisher);
}
END_TEST

/* ---- Refusals ------------------------------------------------------------------------------ */

static void expect_400(const char *path, const char *message)
{
    struct lg_http_response r;
    ck_assert_int_eq(lg_http_request(server.public_port, "GET", path, NULL, NULL, 0, &r, WAIT_MS),
                     0);
    lg_expect_error_named(path, &r, 400, "bad_request", LG_ERROR_ONLY_KEYS);
    json_t *o = json_loadb(r.body, r.body_len, 0, NULL);
    ck_assert_msg(strcmp(json_string_value(json_object_get(o, "message")), message) == 0,
                  "%s: %s", path, r.body);
    json_decref(o);
    lg_http_response_free(&r);
}

#define RANGE(v)                                                                                   \
    "rewind must be a whole number of events from 0 to 1000000 (the most a topic's "              \
    "history.max_events may retain), got \"" v "\""
#define TWICE "give one start position: since=latest or rewind=N, not both (nor one twice)"

START_TEST(bad_starts_are_refused)
{
    struct lg_server publisher;
    start_fixture(0, &publisher);
    const char *paths[] = {"/sse", "/poll"};
    char path[256];
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s?topic=s&rewind=-1", paths[i]);
        expect_400(path, RANGE("-1"));
        snprintf(path, sizeof path, "%s?topic=s&rewind=abc", paths[i]);
        expect_400(path, RANGE("abc"));
        snprintf(path, sizeof path, "%s?topic=s&rewind=1000001", paths[i]);
        expect_400(path, RANGE("1000001"));
        snprintf(path, sizeof path, "%s?topic=s&rewind=2&since=latest", paths[i]);
        expect_400(path, TWICE);
    }
    snprintf(path, sizeof path, "/sse?topic=s&since=latest&last_event_id=s@%s:3", ep);
    expect_400(path, "since=latest and a cursor (last_event_id) cannot be combined: the cursor "
                     "already says where to start");
    snprintf(path, sizeof path, "/poll?topic=s&rewind=1&since=s@%s:3", ep);
    expect_400(path, "rewind and a cursor (since) cannot be combined: the cursor already says "
                     "where to start");
    expect_400("/sse?topic=s&since=first",
               "since on this path takes only \"latest\"; a cursor goes in last_event_id");

    /* WebSocket: an error message naming it; the connection stays open */
    struct lg_ws_client ws;
    lg_ws_must_open(&ws, server.public_port, "/ws?topic=s&rewind=abc", "livegate.v1");
    char *m = NULL;
    ck_assert_int_eq(lg_ws_next(&ws, &m, WAIT_MS), 1);
    ck_assert_str_eq(m, "{\"type\":\"error\",\"v\":1,\"code\":\"bad_request\",\"message\":\""
                        "rewind must be a whole number of events from 0 to 1000000 (the most a "
                        "topic's history.max_events may retain), got \\\"abc\\\"\"}");
    free(m);
    const char *bad = "{\"op\":\"subscribe\",\"topics\":[\"s\"],\"rewind\":-1}";
    ck_assert_int_eq(lg_ws_send_text(&ws, bad, strlen(bad)), 0);
    ck_assert_int_eq(lg_ws_next(&ws, &m, WAIT_MS), 1);
    ck_assert_str_eq(m, "{\"type\":\"error\",\"v\":1,\"code\":\"bad_request\",\"message\":\""
                        "\\\"rewind\\\" must be a whole number of events from 0 to 1000000 (the "
                        "most a topic's history.max_events may retain)\"}");
    free(m);
    ck_assert_int_eq(lg_ws_send_text(&ws, "{\"op\":\"ping\"}", 13), 0);
    ck_assert_int_eq(lg_ws_next(&ws, &m, WAIT_MS), 1);
    ck_assert_ptr_nonnull(strstr(m, "\"pong\""));
    free(m);
    lg_ws_close(&ws);
    stop_fixture(0, &publisher);
}
END_TEST

static Suite *start_suite(void)
{
    Suite *s = suite_create("start");
    TCase *tc = tcase_create("transports");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, sse_starts, 0, 2);
    tcase_add_loop_test(tc, ws_starts, 0, 2);
    tcase_add_loop_test(tc, poll_starts, 0, 2);
    tcase_add_test(tc, bad_starts_are_refused);
    suite_add_tcase(s, tc);
    return s;
}

LG_CHECK_MAIN(start_suite)
