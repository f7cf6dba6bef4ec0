/*
 * test_history_api.c - history for backends on the control port (docs/protocol.md, "History"):
 * GET /v1/topics/{topic}/events paged to the end with exact ids and the exact event objects,
 * its gap and reset, its refusals, `last_id` in GET /v1/topics/{topic}, and the handoff: a
 * backend reads the history, hands `next` to a subscriber (SSE, WebSocket, poll), which then
 * gets exactly the events published after it, with no gap and no duplicate. With the memory
 * store and with the Redis store (a real redis-server: the history read on the node that
 * published, which loads the topic's stream on demand, the subscribers on another node).
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

static struct lg_redis redis;
static struct lg_server reader;     /* answers the history API */
static struct lg_server subscriber; /* where the handoff subscribes (reader itself: memory) */
static char ep[16];

/* store 0: memory, one node; 1: Redis, two nodes. h gets events 1..8 ("h-d<seq>"), 4..8
 * retained. */
static void start_fixture(int store)
{
    char cfg[512];
    if (store == 0) {
        lg_server_must_start(&reader, "{\"history\":{\"max_events\":5}}");
        subscriber = reader;
    } else {
        ck_assert_int_eq(lg_redis_start(&redis, false), 0);
        snprintf(cfg, sizeof cfg,
                 "{\"workers\":2,\"redis\":{\"url\":\"%s\"},\"history\":{\"max_events\":5}}",
                 redis.url);
        lg_server_must_start(&reader, cfg);
        lg_server_must_be_ready(&reader, WAIT_MS);
        lg_server_must_start(&subscriber, cfg);
        lg_server_must_be_ready(&subscriber, WAIT_MS);
    }
    lg_publish_n_tagged_epoch(reader.control_port, "h", 1, 8, ep, sizeof ep);
}

static void stop_fixture(int store)
{
    lg_server_must_stop(&reader);
    if (store == 1) {
        lg_server_must_stop(&subscriber);
        lg_redis_stop(&redis);
    }
}

/* GET path on the reader's control port: its status, the body parsed into *out (NULL: not
 * wanted). A 503 (the Redis stream loading on this node) is asked again, for at most 5 s. */
static int get(const char *path, json_t **out)
{
    int64_t deadline = lg_now_ms() + WAIT_MS;
    for (;;) {
        struct lg_http_response r;
        ck_assert_int_eq(lg_http_request(reader.control_port, "GET", path, NULL, NULL, 0, &r,
                                         WAIT_MS),
                         0);
        int status = r.status;
        if (status == 503 && lg_now_ms() < deadline) {
            lg_expect_error(&r, 503, "unavailable", LG_ERROR_ONLY_KEYS);
            lg_http_response_free(&r);
            usleep(20000);
            continue;
        }
        if (out) {
            *out = json_loadb(r.body, r.body_len, 0, NULL);
            ck_assert_msg(*out != NULL, "%s: not JSON: %s", path, r.body);
        }
        lg_http_response_free(&r);
        return status;
    }
}

/* One page: 200, its items described ("N" an event, "gap:F-T", "reset:E"), next and more. */
static void page(const char *path, const char *want, int want_next, bool want_more)
{
    json_t *o;
    ck_assert_int_eq(get(path, &o), 200);
    ck_assert_str_eq(json_string_value(json_object_get(o, "topic")), "h");
    char got[512] = "", id[128];
    size_t i;
    json_t *item;
    json_array_foreach(json_object_get(o, "events"), i, item) {
        const char *type = json_string_value(json_object_get(item, "type"));
        char *text = json_dumps(item, JSON_COMPACT | JSON_PRESERVE_ORDER);
        if (strcmp(type, "gap") == 0) {
            long long from = json_integer_value(json_object_get(item, "from"));
            long long to = json_integer_value(json_object_get(item, "to"));
            char w[256];
            snprintf(w, sizeof w,
                     "{\"type\":\"gap\",\"v\":1,\"topic\":\"h\",\"from\":%lld,\"to\":%lld,"
                     "\"id\":\"h@%s:%lld\"}",
                     from, to, ep, to);
            ck_assert_str_eq(text, w);
            snprintf(got + strlen(got), sizeof got - strlen(got), "%sgap:%lld-%lld",
                     got[0] ? "," : "", from, to);
        } else if (strcmp(type, "reset") == 0) {
            char w[256];
            snprintf(w, sizeof w,
                     "{\"type\":\"reset\",\"v\":1,\"topic\":\"h\",\"epoch\":\"%s\","
                     "\"id\":\"h@%s:8\"}",
                     ep, ep);
            ck_assert_str_eq(text, w);
            snprintf(got + strlen(got), sizeof got - strlen(got), "%sreset", got[0] ? "," : "");
        } else {
            /* the event object of WebSocket and long-poll, exactly, but its publish time */
            long long seq = json_integer_value(json_object_get(item, "seq"));
            long long time = json_integer_value(json_object_get(item, "time"));
            ck_assert_int_gt(time, 1700000000000LL);
            char w[256];
            snprintf(w, sizeof w,
                     "{\"type\":\"event\",\"v\":1,\"topic\":\"h\",\"id\":\"h@%s:%lld\","
                     "\"seq\":%lld,\"event\":\"message\",\"time\":%lld,\"data\":\"h-d%lld\"}",
                     ep, seq, seq, time, seq);
            ck_assert_str_eq(text, w);
            snprintf(got + strlen(got), sizeof got - strlen(got), "%s%lld", got[0] ? "," : "",
                     seq);
        }
        free(text);
    }
    ck_assert_msg(strcmp(got, want) == 0, "%s: %s, want %s", path, got, want);
    snprintf(id, sizeof id, "h@%s:%d", ep, want_next);
    ck_assert_str_eq(json_string_value(json_object_get(o, "next")), id);
    ck_assert(json_is_boolean(json_object_get(o, "more")));
    ck_assert_int_eq(json_is_true(json_object_get(o, "more")), want_more);
    json_decref(o);
}

static void refused(const char *path, int status, const char *code, const char *message)
{
    struct lg_http_response r;
    ck_assert_int_eq(
        lg_http_request(reader.control_port, "GET", path, NULL, NULL, 0, &r, WAIT_MS), 0);
    lg_expect_error_named(path, &r, status, code, LG_ERROR_ONLY_KEYS);
    if (message) {
        json_t *o = json_loadb(r.body, r.body_len, 0, NULL);
        ck_assert_msg(strcmp(json_string_value(json_object_get(o, "message")), message) == 0,
                      "%s: %s", path, r.body);
        json_decref(o);
    }
    lg_http_response_free(&r);
}

START_TEST(history_paged_to_the_end)
{
    start_fixture(_i);
    char path[256];
    if (_i == 1) { /* no subscriber on this node: its copy of the stream is not loaded */
        json_t *o;
        ck_assert_int_eq(get("/v1/topics/h", &o), 200);
        ck_assert(json_is_null(json_object_get(o, "last_id")));
        json_decref(o);
        /* the history asks for it, and answers once it is in */
        refused("/v1/topics/h/events", 503, "unavailable",
                "topic \"h\": this node is loading its history from Redis (or catching up to "
                "the cursor); retry");
    }
    /* without a cursor: from the oldest retained event */
    page("/v1/topics/h/events?limit=2", "4,5", 5, true);
    snprintf(path, sizeof path, "/v1/topics/h/events?limit=2&since=h@%s:5", ep);
    page(path, "6,7", 7, true);
    snprintf(path, sizeof path, "/v1/topics/h/events?limit=2&since=h@%s:7", ep);
    page(path, "8", 8, false);
    snprintf(path, sizeof path, "/v1/topics/h/events?since=h@%s:8", ep);
    page(path, "", 8, false);
    page("/v1/topics/h/events", "4,5,6,7,8", 8, false); /* limit: 100 */
    /* a cursor out of history: the gap, then what is retained */
    snprintf(path, sizeof path, "/v1/topics/h/events?limit=3&since=h@%s:1", ep);
    page(path, "gap:2-3,4,5,6", 6, true);
    /* a multi-topic cursor: its entry for the topic */
    snprintf(path, sizeof path, "/v1/topics/h/events?since=other@%1$s:1,h@%1$s:6", ep);
    page(path, "7,8", 8, false);
    /* a cursor from another life of the topic: a reset to its newest event */
    snprintf(path, sizeof path, "/v1/topics/h/events?since=h@%s:3",
             strcmp(ep, "00000000") ? "00000000" : "00000001");
    page(path, "reset", 8, false);

    /* the newest event's cursor in the topic */
    json_t *o;
    ck_assert_int_eq(get("/v1/topics/h", &o), 200);
    char want[64];
    snprintf(want, sizeof want, "h@%s:8", ep);
    ck_assert_str_eq(json_string_value(json_object_get(o, "last_id")), want); /* loaded above */
    json_decref(o);
    stop_fixture(_i);
}
END_TEST

START_TEST(history_refusals)
{
    start_fixture(0);
    char path[256];
    refused("/v1/topics/nope/events", 404, "not_found", "no topic \"nope\"");
    refused("/v1/topics/h/events?limit=1001", 400, "invalid_parameter",
            "query parameter limit must be an integer from 1 to 1000");
    refused("/v1/topics/h/events?limit=0", 400, "invalid_parameter",
            "query parameter limit must be an integer from 1 to 1000");
    refused("/v1/topics/h/events?limit=-1", 400, "invalid_parameter",
            "query parameter limit must be an integer from 1 to 1000");
    refused("/v1/topics/h/events?since=h@zz:1", 400, "invalid_cursor", NULL);
    snprintf(path, sizeof path, "/v1/topics/h/events?since=other@%s:1", ep);
    refused(path, 400, "invalid_cursor", "the cursor does not name topic \"h\"");
    snprintf(path, sizeof path, "/v1/topics/h/events?since=h@%s:9", ep);
    refused(path, 400, "invalid_cursor", "the cursor is ahead of the topic's newest event");
    stop_fixture(0);
}
END_TEST

/* ---- The handoff --------------------------------------------------------------------------- */

/* Read the whole history page by page (limit 2); return the last page's next. */
static void read_all(char *next, size_t cap)
{
    char path[256], got[256] = "";
    snprintf(path, sizeof path, "/v1/topics/h/events?limit=2");
    for (bool more = true; more;) {
        json_t *o;
        ck_assert_int_eq(get(path, &o), 200);
        size_t i;
        json_t *item;
        json_array_foreach(json_object_get(o, "events"), i, item)
            snprintf(got + strlen(got), sizeof got - strlen(got), "%s%lld", got[0] ? "," : "",
                     (long long)json_integer_value(json_object_get(item, "seq")));
        snprintf(next, cap, "%s", json_string_value(json_object_get(o, "next")));
        more = json_is_true(json_object_get(o, "more"));
        json_decref(o);
        snprintf(path, sizeof path, "/v1/topics/h/events?limit=2&since=%s", next);
    }
    ck_assert_str_eq(got, "4,5,6,7,8");
}

START_TEST(handoff_no_gap_no_duplicate)
{
    start_fixture(_i);
    char next[128], want[128], path[256], raw[2048] = "";
    read_all(next, sizeof next);
    snprintf(want, sizeof want, "h@%s:8", ep);
    ck_assert_str_eq(next, want);

    /* the browser subscribes from next, on every transport, before and after new events */
    struct lg_sse_client sse;
    snprintf(path, sizeof path, "/sse?topic=h&last_event_id=%s", next);
    lg_sse_must_open(&sse, subscriber.public_port, path, NULL);
    struct lg_ws_client ws;
    char cursor[128];
    snprintf(path, sizeof path, "/ws?topic=h&since=%s", next);
    lg_ws_must_subscribe(&ws, subscriber.public_port, path, NULL, cursor, sizeof cursor);
    ck_assert_str_eq(cursor, next);
    lg_publish_n_tagged(reader.control_port, "h", 9, 10, NULL, 0);

    for (int q = 9; q <= 10; q++)
        snprintf(raw + strlen(raw), sizeof raw - strlen(raw),
                 "id: h@%1$s:%2$d\ndata: h-d%2$d\n\n", ep, q);
    char head[256];
    snprintf(head, sizeof head, "retry: 3000\n\nid: %s\n\n", next);
    ck_assert_msg(lg_sse_wait_raw(&sse, 0, "data: h-d10\n\n", WAIT_MS), "sse: %s", sse.raw);
    ck_assert_msg(strncmp(sse.raw, head, strlen(head)) == 0 || _i == 1, "sse: %s", sse.raw);
    ck_assert_ptr_nonnull(strstr(sse.raw, raw));
    ck_assert_uint_eq(strlen(strstr(sse.raw, raw)), strlen(raw)); /* nothing after */
    ck_assert_ptr_null(strstr(sse.raw, "h-d8")); /* nothing before */
    ck_assert_ptr_null(strstr(sse.raw, "gap"));
    lg_sse_close(&sse);

    for (int q = 9; q <= 10; q++) {
        char *m = NULL, frag[128];
        ck_assert_int_eq(lg_ws_next(&ws, &m, WAIT_MS), 1);
        snprintf(frag, sizeof frag, "{\"type\":\"event\",\"v\":1,\"topic\":\"h\",\"id\":\"h@%s:%d\","
                                    "\"seq\":%d,",
                 ep, q, q);
        ck_assert_msg(strncmp(m, frag, strlen(frag)) == 0, "ws: %s, want %s...", m, frag);
        free(m);
    }
    lg_ws_close(&ws);

    /* a poll from next: exactly 9 and 10 */
    snprintf(path, sizeof path, "/poll?topic=h&since=%s&timeout=5", next);
    struct lg_http_response r;
    ck_assert_int_eq(lg_http_request(subscriber.public_port, "GET", path, NULL, NULL, 0, &r,
                                     WAIT_MS),
                     0);
    ck_assert_int_eq(r.status, 200);
    json_t *o = json_loadb(r.body, r.body_len, 0, NULL);
    json_t *evs = json_object_get(o, "events");
    ck_assert_uint_eq(json_array_size(evs), 2);
    for (size_t i = 0; i < 2; i++)
        ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(evs, i), "seq")),
                         (json_int_t)(9 + i));
    snprintf(want, sizeof want, "h@%s:10", ep);
    ck_assert_str_eq(json_string_value(json_object_get(o, "cursor")), want);
    json_decref(o);
    lg_http_response_free(&r);

    /* the history API's next page is the same two (with Redis, once the reader's copy of the
     * stream has them: it trails a publish's answer by what is in flight) */
    snprintf(path, sizeof path, "/v1/topics/h/events?since=%s", next);
    snprintf(want, sizeof want, "h@%s:10", ep);
    for (int64_t deadline = lg_now_ms() + WAIT_MS; _i == 1;) {
        ck_assert_int_eq(get(path, &o), 200);
        bool caught_up = strcmp(json_string_value(json_object_get(o, "next")), want) == 0;
        json_decref(o);
        if (caught_up)
            break;
        ck_assert_msg(lg_now_ms() < deadline, "the reader's copy never reached %s", want);
        usleep(10000);
    }
    page(path, "9,10", 10, false);
    stop_fixture(_i);
}
END_TEST

static Suite *history_suite(void)
{
    Suite *s = suite_create("history");
    TCase *tc = tcase_create("control");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, history_paged_to_the_end, 0, 2);
    tcase_add_test(tc, history_refusals);
    tcase_add_loop_test(tc, handoff_no_gap_no_duplicate, 0, 2);
    suite_add_tcase(s, tc);
    return s;
}

LG_CHECK_MAIN(history_suite)
