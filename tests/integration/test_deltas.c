/*
 * test_deltas.c - deltas on document topics (docs/protocol.md "Deltas", docs/semantics.md):
 * a WebSocket client that asked for them (delta=fossil) gets an event as a delta when it was
 * sent the event before it on this connection, and the full event on subscribe, on resume,
 * after a gap (the drop-oldest policy) and after a reset (Redis lost the topic); each delta
 * applied (tests/support/lg_delta.c) to the previous full message gives exactly the full
 * message a client without deltas gets. Topics without the rule, clients that did not ask,
 * SSE and long-poll get full events only. With Redis, every node makes the same deltas.
 *
 * Documents: doc(n) is a JSON object of about 600 bytes whose "version" is n; its "body" is
 * the same for n and n + 1 when n is odd (so a delta is much shorter than the event) and new
 * when n is even (a delta would not be shorter: the full event goes).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "delta.h"
#include "encode.h"
#include "lg_redis.h"
#include "lg_test.h"

#include "check_main.h"

#define WAIT_MS 5000
#define RULES "\"topic_rules\":[{\"match\":\"doc/*\",\"document\":true}]"
#define DOC_MAX 1024

/* The document of version n (see the file comment) into out. Half of its body's characters
 * are quotes: a delta's inserted bytes are escaped once more inside the delta message, so a
 * delta that inserts a new body is longer than the event. */
static void doc(char *out, size_t cap, int n)
{
    char body[600];
    size_t len = 0;
    unsigned x = 2654435761u * (unsigned)((n + 1) / 2) + 12345u;
    while (len < 400) {
        x = x * 1103515245u + 12345u;
        if ((x >> 16) % 2) {
            body[len++] = '\\';
            body[len++] = '"';
        } else {
            body[len++] = "abcdefghijklmnopqrstuvwxyz"[(x >> 17) % 26];
        }
    }
    body[len] = '\0';
    snprintf(out, cap, "{\"title\":\"Quarterly report\",\"version\":%d,\"body\":\"%s\"}", n, body);
}

static void publish_doc(uint16_t cport, const char *topic, int n, char *id, size_t cap)
{
    char data[DOC_MAX];
    doc(data, sizeof data, n);
    ck_assert_int_eq(lg_publish_ex(cport, topic, NULL, "application/json", data, strlen(data), id,
                                   cap),
                     201);
}

/* The next message of c, which must be of this type ("event", "delta", "gap", ...). */
static char *next_of_type(struct lg_ws_client *c, const char *type)
{
    char *msg = NULL;
    ck_assert_int_eq(lg_ws_next(c, &msg, WAIT_MS), 1);
    json_t *o = json_loads(msg, 0, NULL);
    ck_assert_msg(o && strcmp(json_string_value(json_object_get(o, "type")), type) == 0,
                  "want a %s message, got %s", type, msg);
    json_decref(o);
    return msg;
}

/* The delta frame the gateway must send for the step from full message `from` to `to` (the
 * event `id` of topic): its delta is the encoder's, and it rebuilds `to` exactly. */
static char *delta_message(const char *topic, const char *id, const char *from, const char *to)
{
    struct lg_buf delta, msg;
    lg_buf_init(&delta);
    lg_buf_init(&msg);
    ck_assert_int_eq(lg_delta_encode(from, strlen(from), to, strlen(to), &delta), 0);
    size_t len;
    char *rebuilt = lg_delta_apply(from, strlen(from), delta.data, delta.len, &len);
    ck_assert_ptr_nonnull(rebuilt);
    ck_assert_str_eq(rebuilt, to);
    free(rebuilt);
    lg_buf_appendf(&msg, "{\"type\":\"delta\",\"v\":1,\"topic\":\"%s\",\"id\":\"%s\",\"delta\":",
                   topic, id);
    lg_encode_json_string(&msg, delta.data, delta.len);
    lg_buf_append(&msg, "}", 1);
    lg_buf_append(&msg, "", 1);
    lg_buf_release(&delta);
    return msg.data;
}

/* msg, a delta message, applied to the full message base: the full message it stands for. */
static char *apply_message(const char *base, const char *msg)
{
    json_t *o = json_loads(msg, 0, NULL);
    ck_assert_ptr_nonnull(o);
    const char *delta = json_string_value(json_object_get(o, "delta"));
    ck_assert_ptr_nonnull(delta);
    size_t len;
    char *full = lg_delta_apply(base, strlen(base), delta, json_string_length(json_object_get(o,
                                                                                         "delta")),
                                &len);
    ck_assert_msg(full != NULL, "the delta %s does not apply to %s", msg, base);
    json_decref(o);
    return full;
}

/* ---- Exact frames -------------------------------------------------------------------------- */

START_TEST(deltas_are_exact_and_rebuild_the_full_events)
{
    struct lg_server s;
    lg_server_must_start(&s, "{" RULES "}");
    uint16_t port = s.public_port;
    struct lg_ws_client with, without, plain;
    lg_ws_must_subscribe(&with, port, "/ws?topic=doc/a&delta=fossil", NULL, NULL, 0);
    lg_ws_must_subscribe(&without, port, "/ws?topic=doc/a", NULL, NULL, 0);
    lg_ws_must_subscribe(&plain, port, "/ws?topic=notes&delta=fossil", NULL, NULL, 0);
    char id[4][256];
    for (int n = 1; n <= 3; n++)
        publish_doc(s.control_port, "doc/a", n, id[n], sizeof id[n]);

    char *full[4];
    for (int n = 1; n <= 3; n++)
        full[n] = next_of_type(&without, "event");
    /* The first event after subscribing is whole; 2 follows 1 (the same body): a delta; 3 has
     * a new body, so its delta would not be shorter: whole. */
    char *got = next_of_type(&with, "event");
    ck_assert_str_eq(got, full[1]);
    free(got);
    got = next_of_type(&with, "delta");
    char *want = delta_message("doc/a", id[2], full[1], full[2]);
    ck_assert_str_eq(got, want);
    ck_assert_uint_lt(strlen(got) * 3, strlen(full[2]));
    free(want);
    free(got);
    got = next_of_type(&with, "event");
    ck_assert_str_eq(got, full[3]);
    free(got);

    /* A topic without the rule: whole events. */
    ck_assert_int_eq(lg_publish(s.control_port, "notes", "one", NULL, 0), 201);
    ck_assert_int_eq(lg_publish(s.control_port, "notes", "one!", NULL, 0), 201);
    for (int i = 0; i < 2; i++)
        free(next_of_type(&plain, "event"));

    /* Resuming after 2: event 3 whole, then 4 (3's body) as a delta. */
    struct lg_ws_client resumed;
    char path[512];
    snprintf(path, sizeof path, "/ws?topic=doc/a&delta=fossil&since=%s", id[2]);
    lg_ws_must_subscribe(&resumed, port, path, NULL, NULL, 0);
    got = next_of_type(&resumed, "event");
    ck_assert_str_eq(got, full[3]);
    free(got);
    publish_doc(s.control_port, "doc/a", 4, id[0], sizeof id[0]);
    char *full4 = next_of_type(&without, "event");
    got = next_of_type(&resumed, "delta");
    char *rebuilt = apply_message(full[3], got);
    ck_assert_str_eq(rebuilt, full4);
    free(rebuilt);
    free(got);
    got = next_of_type(&with, "delta");
    want = delta_message("doc/a", id[0], full[3], full4);
    ck_assert_str_eq(got, want);
    free(want);
    free(got);

    ck_assert_int_eq(lg_server_stat(&s, "deltas_delivered"), 3);
    ck_assert_int_eq(lg_server_stat(&s, "events_delivered"), 4 + 4 + 2 + 2);

    /* SSE and long-poll: whole events, delta=fossil or not. */
    struct lg_http_response r;
    snprintf(path, sizeof path, "/poll?topic=doc/a&delta=fossil&timeout=0&since=%s", id[2]);
    ck_assert_int_eq(lg_http_request(port, "GET", path, NULL, NULL, 0, &r, WAIT_MS), 0);
    ck_assert_int_eq(r.status, 200);
    ck_assert_msg(strstr(r.body, full[3]) && strstr(r.body, full4) && !strstr(r.body, "delta"),
                  "poll: %s", r.body);
    lg_http_response_free(&r);
    struct lg_sse_client sse;
    snprintf(path, sizeof path, "/sse?topic=doc/a&delta=fossil&last_event_id=%s", id[2]);
    lg_sse_must_open(&sse, port, path, NULL);
    for (int n = 3; n <= 4; n++) {
        struct lg_sse_event ev;
        char data[DOC_MAX];
        ck_assert_int_eq(lg_sse_next(&sse, &ev, WAIT_MS), 1);
        doc(data, sizeof data, n);
        ck_assert_str_eq(ev.event, "message");
        ck_assert_str_eq(ev.data, data);
        lg_sse_event_free(&ev);
    }
    lg_sse_close(&sse);

    for (int n = 1; n <= 3; n++)
        free(full[n]);
    free(full4);
    lg_ws_close(&with);
    lg_ws_close(&without);
    lg_ws_close(&plain);
    lg_ws_close(&resumed);
    lg_server_must_stop(&s);
}
END_TEST

START_TEST(an_unknown_delta_format_is_refused)
{
    struct lg_server s;
    lg_server_must_start(&s, "{" RULES "}");
    struct lg_ws_client c;
    lg_ws_must_open(&c, s.public_port, "/ws?topic=doc/a&delta=vcdiff", "livegate.v1");
    char *got = next_of_type(&c, "error");
    ck_assert_msg(strstr(got, "\"code\":\"bad_request\"") &&
                      strstr(got, "delta takes only \\\"fossil\\\""),
                  "%s", got);
    free(got);
    lg_ws_close(&c);
    struct lg_http_response r;
    ck_assert_int_eq(lg_http_request(s.public_port, "GET", "/poll?topic=doc/a&delta=x", NULL,
                                     NULL, 0, &r, WAIT_MS),
                     0);
    lg_expect_error(&r, 400, "bad_request", LG_ERROR_JSON_TYPE);
    ck_assert_msg(strstr(r.body, "delta takes only \\\"fossil\\\""), "%s", r.body);
    lg_http_response_free(&r);
    lg_server_must_stop(&s);
}
END_TEST

/* ---- After a gap ------------------------------------------------------------------------------ */

#define RCVBUF 4096
#define FLOOD 3000

/* A stalled client (drop-oldest, a queue of 8) is flooded, then reads: every delta follows
 * the event before it and rebuilds the published document; after each gap comes a whole
 * event. */
START_TEST(after_a_gap_the_event_is_whole)
{
    struct lg_server s;
    lg_server_must_start(&s, "{" RULES ",\"client_queue\":{\"max_events\":8}}");
    char id1[256], path[512];
    publish_doc(s.control_port, "doc/g", 1, id1, sizeof id1);
    struct lg_stall_ws w;
    snprintf(path, sizeof path, "/ws?topic=doc/g&delta=fossil&since=%s", id1);
    ck_assert_int_eq(lg_stall_ws_open(&w, s.public_port, path, RCVBUF), 0);
    ck_assert_int_ge(lg_stat_wait(s.control_port, "clients_ws", 0, 1, WAIT_MS), 1);
    struct lg_stall_ka k;
    lg_stall_ka_init(&k, s.control_port);
    for (int n = 2; n <= 1 + FLOOD; n++) {
        char data[DOC_MAX];
        struct lg_http_response r;
        doc(data, sizeof data, n);
        ck_assert_int_eq(lg_stall_ka_request(&k, "POST", "/v1/topics/doc%2Fg/events",
                                             "Content-Type: application/json\r\n", data,
                                             strlen(data), &r, WAIT_MS),
                         0);
        ck_assert_msg(r.status == 201, "publish %d: %d %s", n, r.status, r.body);
        lg_http_response_free(&r);
    }
    lg_stall_ka_close(&k);
    ck_assert_int_ge(lg_stat_wait(s.control_port, "events_dropped_overflow", 1, 1, WAIT_MS), 1);

    struct lg_ws_client c;
    ck_assert_int_eq(lg_stall_ws_resume(&c, &w, WAIT_MS), 0);
    free(next_of_type(&c, "subscribed"));
    char *base = NULL;
    int next = 2, deltas = 0, gaps = 0, whole_after_gap = 0;
    bool after_gap = false;
    while (next <= 1 + FLOOD) {
        char *msg = NULL;
        ck_assert_int_eq(lg_ws_next(&c, &msg, WAIT_MS), 1);
        json_t *o = json_loads(msg, 0, NULL);
        const char *type = json_string_value(json_object_get(o, "type"));
        if (strcmp(type, "gap") == 0) {
            ck_assert_int_eq(json_integer_value(json_object_get(o, "from")), next);
            next = (int)json_integer_value(json_object_get(o, "to")) + 1;
            gaps++;
            after_gap = true;
            free(msg);
        } else {
            char *full = msg;
            if (strcmp(type, "delta") == 0) {
                ck_assert_msg(!after_gap && base, "a delta after a gap or first: %s", msg);
                full = apply_message(base, msg);
                free(msg);
                deltas++;
            } else {
                ck_assert_str_eq(type, "event");
                whole_after_gap += after_gap;
            }
            json_t *e = json_loads(full, 0, NULL);
            ck_assert_msg(e != NULL, "not JSON: %s", full);
            ck_assert_int_eq(json_integer_value(json_object_get(e, "seq")), next);
            char *data = json_dumps(json_object_get(e, "data"), JSON_COMPACT | JSON_PRESERVE_ORDER);
            char want[DOC_MAX];
            doc(want, sizeof want, next);
            ck_assert_str_eq(data, want);
            free(data);
            json_decref(e);
            free(base);
            base = full;
            after_gap = false;
            next++;
        }
        json_decref(o);
    }
    free(base);
    fprintf(stderr, "after a gap: %d deltas, %d gaps, %d whole events after a gap\n", deltas,
            gaps, whole_after_gap);
    ck_assert_int_ge(gaps, 1);
    ck_assert_int_ge(deltas, 1);
    ck_assert_int_ge(whole_after_gap, 1);
    ck_assert_int_eq(lg_server_stat(&s, "deltas_delivered"), deltas);
    lg_ws_close(&c);
    lg_server_must_stop(&s);
}
END_TEST

/* ---- Redis: two nodes, and a reset ------------------------------------------------------------ */

static struct lg_redis redis;

/* Nodes a (publishes) and b on one Redis: subscribers with deltas on both get the same delta
 * frames, each rebuilding what a subscriber without deltas on that node gets. Then Redis loses
 * the topic: a reset, the new life's first event whole, and deltas again once the node follows
 * the new life live. */
START_TEST(two_nodes_make_the_same_deltas_and_a_reset_sends_the_event_whole)
{
    ck_assert_int_eq(lg_redis_start(&redis, false), 0);
    char cfg[512];
    snprintf(cfg, sizeof cfg, "{\"workers\":2,\"redis\":{\"url\":\"%s\"}," RULES "}", redis.url);
    struct lg_server node[2];
    struct lg_ws_client with[2], without[2];
    for (int i = 0; i < 2; i++) {
        lg_server_must_start(&node[i], cfg);
        lg_server_must_be_ready(&node[i], WAIT_MS);
        lg_ws_must_subscribe(&with[i], node[i].public_port, "/ws?topic=doc/r&delta=fossil", NULL,
                             NULL, 0);
        lg_ws_must_subscribe(&without[i], node[i].public_port, "/ws?topic=doc/r", NULL, NULL, 0);
    }
    /* 1, then (once both nodes delivered it: they follow the topic live) 2, 1's body again */
    char id[8][256], *first[2];
    publish_doc(node[0].control_port, "doc/r", 1, id[1], sizeof id[1]);
    for (int i = 0; i < 2; i++) {
        first[i] = next_of_type(&without[i], "event");
        char *got = next_of_type(&with[i], "event");
        ck_assert_str_eq(got, first[i]);
        free(got);
    }
    publish_doc(node[0].control_port, "doc/r", 2, id[2], sizeof id[2]);
    char *delta[2];
    for (int i = 0; i < 2; i++) {
        char *full2 = next_of_type(&without[i], "event");
        delta[i] = next_of_type(&with[i], "delta");
        char *want = delta_message("doc/r", id[2], first[i], full2);
        ck_assert_str_eq(delta[i], want);
        free(want);
        free(first[i]);
        free(full2);
    }
    ck_assert_str_eq(delta[0], delta[1]);
    free(delta[0]);
    free(delta[1]);

    ck_assert_int_ge(lg_redis_int(&redis, "FLUSHALL"), -1);
    /* The new life: 1 and 2 again (2 has 1's body). The first publish may find the node's
     * view of Redis not caught up yet: it is retried until accepted. */
    int64_t deadline = lg_now_ms() + WAIT_MS;
    char data[DOC_MAX];
    doc(data, sizeof data, 1);
    while (lg_publish_ex(node[0].control_port, "doc/r", NULL, "application/json", data,
                         strlen(data), id[3], sizeof id[3]) != 201)
        ck_assert_msg(lg_left_ms(deadline) > 0, "no publish after FLUSHALL");
    ck_assert_uint_eq(lg_seq_of(id[3]), 1);
    publish_doc(node[0].control_port, "doc/r", 2, id[4], sizeof id[4]);
    char *last[2];
    for (int i = 0; i < 2; i++) {
        free(next_of_type(&without[i], "reset"));
        char *full1 = next_of_type(&without[i], "event");
        last[i] = next_of_type(&without[i], "event");
        free(next_of_type(&with[i], "reset"));
        char *got = next_of_type(&with[i], "event");
        ck_assert_str_eq(got, full1);
        free(got);
        /* 2 came while the node read the new life from the stream (a delta only when the
         * node applied 1 before it made 2): either form, the same message */
        char *msg = NULL;
        ck_assert_int_eq(lg_ws_next(&with[i], &msg, WAIT_MS), 1);
        char *full2 = strncmp(msg, "{\"type\":\"delta\"", 15) == 0 ? apply_message(full1, msg)
                                                                   : strdup(msg);
        ck_assert_str_eq(full2, last[i]);
        free(full2);
        free(msg);
        free(full1);
    }
    /* Live again: 3 (2's document once more) is a delta on both nodes. */
    publish_doc(node[0].control_port, "doc/r", 2, id[5], sizeof id[5]);
    for (int i = 0; i < 2; i++) {
        char *full3 = next_of_type(&without[i], "event");
        char *got = next_of_type(&with[i], "delta");
        char *want = delta_message("doc/r", id[5], last[i], full3);
        ck_assert_str_eq(got, want);
        free(want);
        free(got);
        free(full3);
        free(last[i]);
        lg_ws_close(&with[i]);
        lg_ws_close(&without[i]);
        lg_server_must_stop(&node[i]);
    }
    lg_redis_stop(&redis);
}
END_TEST

static Suite *deltas_suite(void)
{
    Suite *s = suite_create("deltas");
    TCase *tc = LG_TCASE(s, "memory", NULL, NULL, deltas_are_exact_and_rebuild_the_full_events,
                         an_unknown_delta_format_is_refused, after_a_gap_the_event_is_whole);
    tcase_set_timeout(tc, 60);
    tc = LG_TCASE(s, "redis", NULL, NULL,
                  two_nodes_make_the_same_deltas_and_a_reset_sends_the_event_whole);
    tcase_set_timeout(tc, 60);
    return s;
}

LG_CHECK_MAIN(deltas_suite)
