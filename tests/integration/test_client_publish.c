/*
 * test_client_publish.c - a WebSocket client's publish ({"op":"publish"}, docs/protocol.md)
 * against the real binary: allowed by the token's livegate.publish claim and by a topic
 * rule's "client_publish"; refused with its exact error (no claim, a topic outside it, the
 * rate, a malformed op, data over limits.max_event_bytes); answered with the event's id and
 * delivered once, in order, with those ids, to SSE and WebSocket subscribers; idempotency
 * keys; the counters; and over two nodes sharing Redis, a publish on node A reaching
 * subscribers on node B.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "lg_redis.h"
#include "lg_test.h"
#include "support/lg_token.h"

#include "check_main.h"

#define WAIT_MS 5000
#define SECRET "client-publish-test-secret-32-bytes!"
#define AUTH_CONFIG(extra)                                                                         \
    "{\"workers\":2,\"auth\":{\"hs256_secret\":\"" SECRET "\",\"anonymous_subscribe\":"           \
    "[\"chat/*\"]}" extra "}"
/* Room in the workers' inboxes: a client's publish finding them behind is refused at once
 * (overloaded), and a loaded machine must not make the tests that are not about that fail. */
#define ROOMY ",\"limits\":{\"worker_inbox_events\":1024}"
#define FORBIDDEN(topic)                                                                           \
    "topic " topic ": a client may publish only where its token's livegate.publish claim "      \
    "allows, or to a topic a rule opens with \"client_publish\": true that it may subscribe to"

/* ---- Helpers ------------------------------------------------------------------------------ */

static char *next_msg(struct lg_ws_client *c)
{
    char *m = NULL;
    int rc = lg_ws_next(c, &m, WAIT_MS);
    ck_assert_msg(rc == 1, "no message (rc %d, close %d %s)", rc, c->close_code, c->close_reason);
    return m;
}

static void send_text(struct lg_ws_client *c, const char *text)
{
    ck_assert_int_eq(lg_ws_send_text(c, text, strlen(text)), 0);
}

/* Open a WebSocket on port, with a bearer token when token is not NULL. */
static void open_ws(struct lg_ws_client *c, uint16_t port, const char *path, const char *token)
{
    char headers[2048] = "";
    if (token)
        snprintf(headers, sizeof headers, "Authorization: Bearer %s\r\n", token);
    ck_assert_int_eq(lg_ws_open_with(c, port, path, "livegate.v1", headers), 0);
    ck_assert_int_eq(c->status, 101);
}

/* A token of SECRET for an hour with these livegate claims (malloc'd). */
static char *token(const char *claims) { return lg_token_libjwt(SECRET, NULL, 3600, claims); }

/* Send a publish of data (JSON text) to topic with ref; the next message must be its
 * "published" answer (exactly). Its id goes to id (ID cap 256). Return value: its seq. */
static unsigned long long publish_ok(struct lg_ws_client *c, const char *topic, const char *data,
                                     int ref, char *id)
{
    char msg[1024];
    snprintf(msg, sizeof msg, "{\"op\":\"publish\",\"ref\":%d,\"topic\":\"%s\",\"data\":%s}", ref,
             topic, data);
    send_text(c, msg);
    char *m = next_msg(c);
    json_t *got = json_loads(m, 0, NULL);
    ck_assert_msg(got != NULL, "not JSON: %s", m);
    const char *gid = json_string_value(json_object_get(got, "id"));
    ck_assert_msg(gid != NULL, "no id in %s", m);
    unsigned long long seq = lg_seq_of(gid);
    char want[1024];
    snprintf(want, sizeof want,
             "{\"type\":\"published\",\"v\":1,\"ref\":%d,\"topic\":\"%s\",\"id\":\"%s\","
             "\"seq\":%llu}", ref, topic, gid, seq);
    ck_assert_msg(strcmp(m, want) == 0, "answer\n  %s\nwant\n  %s", m, want);
    ck_assert_uint_eq(strlen(gid) < 256, 1);
    strcpy(id, gid);
    json_decref(got);
    free(m);
    return seq;
}

/* Send msg; the next message must be exactly the error of a publish with this code, message
 * and ref (ref_json: the JSON of the ref, or NULL for none). */
static void publish_refused(struct lg_ws_client *c, const char *msg, const char *code,
                            const char *text, const char *ref_json)
{
    send_text(c, msg);
    char *m = next_msg(c);
    json_t *message = json_string(text);
    char *quoted = json_dumps(message, JSON_ENCODE_ANY);
    char want[2048];
    snprintf(want, sizeof want,
             "{\"type\":\"error\",\"v\":1,\"code\":\"%s\",\"message\":%s,\"op\":\"publish\"%s%s}",
             code, quoted, ref_json ? ",\"ref\":" : "", ref_json ? ref_json : "");
    ck_assert_msg(strcmp(m, want) == 0, "answer\n  %s\nwant\n  %s", m, want);
    free(quoted);
    json_decref(message);
    free(m);
}

/* The connection still answers: a ping gets its pong. */
static void still_open(struct lg_ws_client *c)
{
    send_text(c, "{\"op\":\"ping\"}");
    char *m = next_msg(c);
    ck_assert_str_eq(m, "{\"type\":\"pong\",\"v\":1}");
    free(m);
}

/* The next WebSocket event must have this id and data (JSON text). */
static void ws_expect_event(struct lg_ws_client *c, const char *id, const char *data)
{
    char *m = next_msg(c);
    json_t *got = json_loads(m, 0, NULL), *want = json_loads(data, JSON_DECODE_ANY, NULL);
    const char *type = json_string_value(json_object_get(got, "type"));
    ck_assert_msg(type && strcmp(type, "event") == 0, "not an event: %s", m);
    ck_assert_str_eq(json_string_value(json_object_get(got, "id")), id);
    ck_assert_msg(json_equal(json_object_get(got, "data"), want), "data of %s, want %s", m, data);
    json_decref(got);
    json_decref(want);
    free(m);
}

/* The next SSE event must have this id (NULL: any) and data. */
static void sse_expect_event(struct lg_sse_client *c, const char *id, const char *data)
{
    struct lg_sse_event ev;
    ck_assert_int_eq(lg_sse_next(c, &ev, WAIT_MS), 1);
    ck_assert_str_eq(ev.event, "message");
    if (id)
        ck_assert_str_eq(ev.id, id);
    ck_assert_str_eq(ev.data, data);
    lg_sse_event_free(&ev);
}

/* ---- Allowed ------------------------------------------------------------------------------- */

START_TEST(a_publish_claim_allows_it_and_subscribers_get_each_event_once_in_order)
{
    struct lg_server s;
    lg_server_must_start(&s, AUTH_CONFIG(ROOMY));
    struct lg_sse_client sse;
    struct lg_ws_client sub, pub;
    lg_sse_must_open(&sse, s.public_port, "/sse?topic=chat/room", NULL);
    lg_ws_must_subscribe(&sub, s.public_port, "/ws?topic=chat/room", NULL, NULL, 0);
    char *t = token("{\"subscribe\":[\"chat/*\"],\"publish\":[\"chat/*\"]}");
    open_ws(&pub, s.public_port, "/ws", t);
    static char ids[10][256];
    for (int i = 0; i < 10; i++) {
        char data[32];
        snprintf(data, sizeof data, i == 9 ? "{\"n\": %d.50}" : "\"m%d\"", i);
        ck_assert_uint_eq(publish_ok(&pub, "chat/room", data, i, ids[i]), (unsigned)i + 1);
    }
    for (int i = 0; i < 10; i++) {
        char text[32], json[32];
        snprintf(text, sizeof text, i == 9 ? "{\"n\":%d.50}" : "m%d", i);
        snprintf(json, sizeof json, i == 9 ? "{\"n\":%d.50}" : "\"m%d\"", i);
        sse_expect_event(&sse, ids[i], text);
        ws_expect_event(&sub, ids[i], json);
    }
    lg_sse_expect_no_event(&sse, 200); /* once: nothing after the tenth */
    char *m = NULL;
    ck_assert_int_eq(lg_ws_next(&sub, &m, 200), 0);
    ck_assert_int_eq(lg_stat(s.control_port, "events_published"), 10);
    ck_assert(lg_metric(s.control_port, "livegate_client_publishes_accepted_total") == 10);
    free(t);
    lg_ws_close(&pub), lg_ws_close(&sub), lg_sse_close(&sse);
    lg_server_must_stop(&s);
}
END_TEST

START_TEST(a_client_publish_rule_opens_a_topic_to_its_subscribers)
{
    struct lg_server s;
    lg_server_must_start(&s, AUTH_CONFIG(ROOMY ",\"topic_rules\":[{\"match\":\"chat/*\","
                                         "\"client_publish\":true},{\"match\":\"closed/*\","
                                         "\"client_publish\":true}]"));
    struct lg_ws_client anon;
    open_ws(&anon, s.public_port, "/ws?topic=chat/lobby", NULL);
    char *m = next_msg(&anon); /* subscribed */
    free(m);
    char id[256];
    ck_assert_uint_eq(publish_ok(&anon, "chat/lobby", "\"hi\"", 1, id), 1);
    ws_expect_event(&anon, id, "\"hi\""); /* the publisher's own subscription gets it too */
    /* a rule, but the client may not subscribe to the topic */
    publish_refused(&anon, "{\"op\":\"publish\",\"ref\":2,\"topic\":\"closed/x\",\"data\":1}",
                    "forbidden", FORBIDDEN("closed/x"), "2");
    /* no rule for the topic, and no token */
    publish_refused(&anon, "{\"op\":\"publish\",\"ref\":\"r3\",\"topic\":\"news\",\"data\":1}",
                    "forbidden", FORBIDDEN("news"), "\"r3\"");
    still_open(&anon);
    ck_assert(lg_metric(s.control_port,
                        "livegate_client_publishes_refused_total{reason=\"forbidden\"}") == 2);
    lg_ws_close(&anon);
    lg_server_must_stop(&s);
}
END_TEST

/* ---- Refused ------------------------------------------------------------------------------ */

START_TEST(no_publish_claim_or_a_topic_outside_it_is_forbidden)
{
    struct lg_server s;
    lg_server_must_start(&s, AUTH_CONFIG(ROOMY));
    char *sub_only = token("{\"subscribe\":[\"chat/*\"]}");
    char *chat_only = token("{\"subscribe\":[\"chat/*\"],\"publish\":[\"chat/*\"]}");
    struct lg_ws_client a, b, anon;
    open_ws(&a, s.public_port, "/ws", sub_only);
    open_ws(&b, s.public_port, "/ws", chat_only);
    open_ws(&anon, s.public_port, "/ws", NULL);
    publish_refused(&a, "{\"op\":\"publish\",\"ref\":1,\"topic\":\"chat/room\",\"data\":\"x\"}",
                    "forbidden", FORBIDDEN("chat/room"), "1");
    publish_refused(&b, "{\"op\":\"publish\",\"topic\":\"news/x\",\"data\":\"x\"}", "forbidden",
                    FORBIDDEN("news/x"), NULL);
    publish_refused(&anon, "{\"op\":\"publish\",\"ref\":1,\"topic\":\"chat/room\",\"data\":\"x\"}",
                    "forbidden", FORBIDDEN("chat/room"), "1");
    ck_assert_int_eq(lg_stat(s.control_port, "events_published"), 0);
    free(sub_only), free(chat_only);
    lg_ws_close(&a), lg_ws_close(&b), lg_ws_close(&anon);
    lg_server_must_stop(&s);
}
END_TEST

START_TEST(past_its_rate_a_publish_is_refused_and_the_connection_stays)
{
    struct lg_server s;
    lg_server_must_start(&s, AUTH_CONFIG(ROOMY ",\"websocket\":{\"max_publishes_per_s\":1}"));
    char *t = token("{\"publish\":[\"chat/*\"]}");
    struct lg_ws_client pub;
    open_ws(&pub, s.public_port, "/ws", t);
    char id[256];
    publish_ok(&pub, "chat/a", "1", 1, id);
    publish_refused(&pub, "{\"op\":\"publish\",\"ref\":2,\"topic\":\"chat/a\",\"data\":2}",
                    "rate_limited",
                    "publishes faster than websocket.max_publishes_per_s (1 a second): not "
                    "published; publish more slowly", "2");
    still_open(&pub);
    ck_assert_int_eq(lg_stat(s.control_port, "events_published"), 1);
    ck_assert(lg_metric(s.control_port,
                        "livegate_client_publishes_refused_total{reason=\"rate_limited\"}") == 1);
    free(t);
    lg_ws_close(&pub);
    lg_server_must_stop(&s);
}
END_TEST

START_TEST(a_malformed_or_oversize_publish_gets_its_error)
{
    struct lg_server s;
    lg_server_must_start(&s, AUTH_CONFIG(",\"limits\":{\"max_event_bytes\":16,"
                                         "\"worker_inbox_events\":1024}"));
    char *t = token("{\"publish\":[\"*\"]}");
    struct lg_ws_client pub;
    open_ws(&pub, s.public_port, "/ws", t);
    publish_refused(&pub, "{\"op\":\"publish\",\"ref\":1}", "bad_message",
                    "publish needs \"topic\": a string", "1");
    publish_refused(&pub, "{\"op\":\"publish\",\"ref\":2,\"topic\":\"chat/a\"}", "bad_message",
                    "publish needs \"data\": any JSON value", "2");
    publish_refused(&pub, "{\"op\":\"publish\",\"ref\":3,\"topic\":\"$sys/x\",\"data\":1}",
                    "invalid_topic",
                    "topic \"$sys/x\": names starting with '$' are reserved for the gateway", "3");
    publish_refused(&pub, "{\"op\":\"publish\",\"topic\":\"a\",\"data\":1,\"ref\":{}}",
                    "bad_message",
                    "publish: \"ref\" must be an integer or a string of at most 64 bytes", NULL);
    /* 17 bytes of text; then JSON counted as its compact text (17 bytes) */
    publish_refused(&pub, "{\"op\":\"publish\",\"ref\":4,\"topic\":\"chat/a\",\"data\":"
                          "\"12345678901234567\"}", "payload_too_large",
                    "data is 17 bytes; the limit is 16 (limits.max_event_bytes): not published",
                    "4");
    publish_refused(&pub, "{\"op\":\"publish\",\"ref\":5,\"topic\":\"chat/a\",\"data\":"
                          "[1, 2, 3, 4, 5, 6, 7, 8, 9]}", "payload_too_large",
                    "data is 19 bytes; the limit is 16 (limits.max_event_bytes): not published",
                    "5");
    char id[256];
    publish_ok(&pub, "chat/a", "\"1234567890123456\"", 6, id); /* 16 bytes: at the limit */
    ck_assert_int_eq(lg_stat(s.control_port, "events_published"), 1);
    char *scrape = lg_metrics_scrape(s.control_port);
    ck_assert(lg_metrics_value(scrape,
                               "livegate_client_publishes_refused_total{reason=\"invalid\"}") == 4);
    ck_assert(lg_metrics_value(scrape,
                               "livegate_client_publishes_refused_total{reason=\"too_large\"}") ==
              2);
    free(scrape);
    free(t);
    lg_ws_close(&pub);
    lg_server_must_stop(&s);
}
END_TEST

START_TEST(an_idempotency_key_publishes_once)
{
    struct lg_server s;
    lg_server_must_start(&s, AUTH_CONFIG(ROOMY));
    char *t = token("{\"publish\":[\"chat/*\"]}");
    struct lg_ws_client pub;
    open_ws(&pub, s.public_port, "/ws", t);
    const char *msg = "{\"op\":\"publish\",\"topic\":\"chat/i\",\"data\":\"x\","
                      "\"idempotency_key\":\"k1\"}";
    send_text(&pub, msg);
    char *first = next_msg(&pub);
    send_text(&pub, msg);
    char *second = next_msg(&pub);
    json_t *a = json_loads(first, 0, NULL), *b = json_loads(second, 0, NULL);
    const char *id = json_string_value(json_object_get(a, "id"));
    ck_assert_msg(id != NULL, "no id in %s", first);
    char want[512];
    snprintf(want, sizeof want, "{\"type\":\"published\",\"v\":1,\"topic\":\"chat/i\","
             "\"id\":\"%s\",\"seq\":1}", id);
    ck_assert_str_eq(first, want);
    snprintf(want, sizeof want, "{\"type\":\"published\",\"v\":1,\"topic\":\"chat/i\","
             "\"id\":\"%s\",\"seq\":1,\"duplicate\":true}", id);
    ck_assert_str_eq(second, want);
    ck_assert_int_eq(lg_stat(s.control_port, "events_published"), 1);
    json_decref(a), json_decref(b);
    free(first), free(second);
    free(t);
    lg_ws_close(&pub);
    lg_server_must_stop(&s);
}
END_TEST

/* Send texts as masked frames (mask key 0) in one write of at most 144 bytes: lws 4.1.6 reads a
 * WebSocket's bytes in reads of its receive buffer, LG_WS_RX_PIECE (128) + LWS_PRE (16)
 * (roles/ws/ops-ws.c), so the worker reads them in one pass and handles them one after the
 * other before its next sweep takes events from its inbox. */
static void send_frames_at_once(struct lg_ws_client *c, const char *const *texts, int n)
{
    unsigned char buf[2048];
    size_t len = 0;
    for (int i = 0; i < n; i++) {
        size_t tl = strlen(texts[i]);
        ck_assert_uint_lt(tl, 126);
        ck_assert_uint_le(len + tl + 6, 144);
        buf[len++] = 0x81;
        buf[len++] = (unsigned char)(0x80 | tl);
        memset(buf + len, 0, 4);
        len += 4;
        memcpy(buf + len, texts[i], tl);
        len += tl;
    }
    ck_assert_int_eq(lg_send_all(c->fd, buf, len), 0);
}

START_TEST(workers_behind_refuse_a_client_publish_at_once)
{
    struct lg_server s;
    lg_server_must_start(&s, "{\"workers\":1,\"limits\":{\"worker_inbox_events\":2},"
                             "\"topic_rules\":[{\"match\":\"f\",\"client_publish\":true}]}");
    struct lg_sse_client sse;
    lg_sse_must_open(&sse, s.public_port, "/sse?topic=f", NULL);
    struct lg_ws_client pub;
    open_ws(&pub, s.public_port, "/ws", NULL);
    static const char *const texts[] = {
        "{\"op\":\"publish\",\"topic\":\"f\",\"data\":1}",
        "{\"op\":\"publish\",\"topic\":\"f\",\"data\":2}",
        "{\"op\":\"publish\",\"topic\":\"f\",\"data\":3}",
    };
    send_frames_at_once(&pub, texts, 3);
    for (int i = 1; i <= 2; i++) {
        char *m = next_msg(&pub);
        ck_assert_msg(strstr(m, "\"type\":\"published\"") != NULL, "publish %d: %s", i, m);
        free(m);
    }
    char *m = next_msg(&pub);
    ck_assert_str_eq(m, "{\"type\":\"error\",\"v\":1,\"code\":\"overloaded\",\"message\":"
                        "\"subscribers' workers are behind (limits.worker_inbox_events): not "
                        "published; retry later or publish more slowly\",\"op\":\"publish\"}");
    free(m);
    /* nothing was held or published for it: the next publish is seq 3 */
    char id[256];
    ck_assert_uint_eq(publish_ok(&pub, "f", "4", 4, id), 3);
    for (int want = 1; want <= 3; want++) {
        struct lg_sse_event ev;
        ck_assert_int_eq(lg_sse_next(&sse, &ev, WAIT_MS), 1);
        ck_assert_uint_eq(lg_seq_of(ev.id), (uint64_t)want);
        lg_sse_event_free(&ev);
    }
    ck_assert(lg_metric(s.control_port,
                        "livegate_client_publishes_refused_total{reason=\"overloaded\"}") == 1);
    ck_assert_int_eq(lg_stat(s.control_port, "publishes_held"), 0);
    ck_assert(lg_server_wait_log(&s, "client publish refused: subscribers' workers are behind",
                                 2000));
    lg_ws_close(&pub);
    lg_sse_close(&sse);
    lg_server_must_stop(&s);
}
END_TEST

/* ---- Two nodes over Redis ------------------------------------------------------------------ */

static struct lg_redis redis;

static void redis_setup(void) { ck_assert_int_eq(lg_redis_start(&redis, false), 0); }
static void redis_teardown(void) { lg_redis_stop(&redis); }

static void node_start(struct lg_server *s)
{
    char cfg[512];
    snprintf(cfg, sizeof cfg,
             "{\"workers\":2,\"redis\":{\"url\":\"%s\"},\"topic_rules\":[{\"match\":\"room/*\","
             "\"client_publish\":true}]" ROOMY "}", redis.url);
    lg_server_must_start(s, cfg);
    lg_server_must_be_ready(s, WAIT_MS);
}

START_TEST(a_publish_on_node_a_reaches_subscribers_on_node_b)
{
    struct lg_server a, b;
    node_start(&a);
    node_start(&b);
    struct lg_sse_client sse_b;
    struct lg_ws_client ws_b, pub;
    lg_sse_must_open(&sse_b, b.public_port, "/sse?topic=room/1", NULL);
    lg_ws_must_subscribe(&ws_b, b.public_port, "/ws?topic=room/1", NULL, NULL, 0);
    open_ws(&pub, a.public_port, "/ws", NULL);
    static char ids[8][256];
    for (int i = 0; i < 8; i++) {
        char data[16];
        snprintf(data, sizeof data, "\"r%d\"", i);
        ck_assert_uint_eq(publish_ok(&pub, "room/1", data, i, ids[i]), (unsigned)i + 1);
    }
    for (int i = 0; i < 8; i++) {
        char text[16], json[16];
        snprintf(text, sizeof text, "r%d", i);
        snprintf(json, sizeof json, "\"r%d\"", i);
        sse_expect_event(&sse_b, ids[i], text);
        ws_expect_event(&ws_b, ids[i], json);
    }
    /* a string ref comes back as sent, through the store's thread and the worker's queue */
    send_text(&pub,
              "{\"op\":\"publish\",\"ref\":\"q\\\"1\",\"topic\":\"room/1\",\"data\":\"r8\"}");
    const char *head = "{\"type\":\"published\",\"v\":1,\"ref\":\"q\\\"1\",\"topic\":\"room/1\","
                       "\"id\":\"room/1@";
    char *m = next_msg(&pub);
    ck_assert_msg(strncmp(m, head, strlen(head)) == 0, "answer %s", m);
    free(m);
    sse_expect_event(&sse_b, NULL, "r8");
    lg_sse_expect_no_event(&sse_b, 200);
    publish_refused(&pub, "{\"op\":\"publish\",\"ref\":9,\"topic\":\"hall\",\"data\":1}",
                    "forbidden", FORBIDDEN("hall"), "9");
    ck_assert(lg_metric(a.control_port, "livegate_client_publishes_accepted_total") == 9);
    lg_ws_close(&pub), lg_ws_close(&ws_b), lg_sse_close(&sse_b);
    lg_server_must_stop(&a);
    lg_server_must_stop(&b);
}
END_TEST

/* A publisher that leaves before Redis answered: the answer is dropped, nothing leaks (the
 * sanitizer and valgrind runs check), and the event is still delivered. */
START_TEST(a_publisher_gone_before_its_answer_leaves_the_event_delivered)
{
    struct lg_server a;
    node_start(&a);
    struct lg_sse_client sse;
    lg_sse_must_open(&sse, a.public_port, "/sse?topic=room/2", NULL);
    struct lg_ws_client pub;
    open_ws(&pub, a.public_port, "/ws", NULL);
    send_text(&pub, "{\"op\":\"publish\",\"topic\":\"room/2\",\"data\":\"bye\"}");
    lg_ws_close(&pub);
    struct lg_sse_event ev;
    ck_assert_int_eq(lg_sse_next(&sse, &ev, WAIT_MS), 1);
    ck_assert_str_eq(ev.data, "bye");
    ck_assert_uint_eq(lg_seq_of(ev.id), 1);
    lg_sse_event_free(&ev);
    lg_sse_close(&sse);
    lg_server_must_stop(&a);
}
END_TEST

static Suite *client_publish_suite(void)
{
    Suite *s = suite_create("client_publish");
    LG_TCASE_TIMEOUT(s, "memory", 30, NULL, NULL,
                     a_publish_claim_allows_it_and_subscribers_get_each_event_once_in_order,
                     a_client_publish_rule_opens_a_topic_to_its_subscribers,
                     no_publish_claim_or_a_topic_outside_it_is_forbidden,
                     past_its_rate_a_publish_is_refused_and_the_connection_stays,
                     a_malformed_or_oversize_publish_gets_its_error,
                     an_idempotency_key_publishes_once,
                     workers_behind_refuse_a_client_publish_at_once);
    LG_TCASE_TIMEOUT(s, "redis", 60, redis_setup, redis_teardown,
                     a_publish_on_node_a_reaches_subscribers_on_node_b,
                     a_publisher_gone_before_its_answer_leaves_the_event_delivered);
    return s;
}

LG_CHECK_MAIN(client_publish_suite)
