/*
 * test_presence_api.c - occupancy and presence through the real binary: join, leave and occupancy
 * notices, exact, on SSE, WebSocket and long-poll; a member with two connections listed once;
 * the member bound (presence_max_members: counted, not listed); the member list on the
 * control port (GET /v1/topics/{t}/presence, paged) and in-band ({"op":"presence"}); the
 * subscriber count in GET /v1/topics/{t}; a topic without a rule sends none of it; the in-band
 * question per credential (a token for the topic, one for another, none).
 * Presence is reported by the main thread's one-second tick: every wait below is on an event.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "lg_test.h"
#include "support/lg_token.h"

#include "check_main.h"

#define WAIT_MS 6000 /* a leave takes two ticks after the last subscription ends */
#define SECRET "presence-test-secret-presence-test-secret"
#define HS "{\"alg\":\"HS256\",\"typ\":\"JWT\"}"

#define CONFIG                                                                                     \
    "{\"workers\":2,\"auth\":{\"hs256_secret\":\"" SECRET "\",\"anonymous_subscribe\":[\"*\"]},"  \
    "\"sse\":{\"heartbeat_ms\":60000},"                                                            \
    "\"topic_rules\":[{\"match\":\"room/*\",\"presence\":true,\"occupancy_events\":true,"          \
    "\"presence_max_members\":3},"                                                                 \
    "{\"match\":\"count/*\",\"occupancy_events\":true}]}"

static struct lg_server srv;

static void server_setup(void) { lg_server_must_start(&srv, CONFIG); }
static void server_teardown(void) { lg_server_must_stop(&srv); }

/* A token whose "sub" is sub, allowed to subscribe anywhere (malloc'd). */
static char *token_for(const char *sub)
{
    char claims[256];
    snprintf(claims, sizeof claims,
             "{\"exp\":%ld,\"sub\":\"%s\",\"livegate\":{\"subscribe\":[\"*\"]}}",
             (long)time(NULL) + 3600, sub);
    return lg_token_raw(HS, claims, LG_SIGN_HMAC, SECRET, NULL);
}

/* "/<transport>?topic=<topic>&access_token=<sub's token>" into out. */
static void path_for(char *out, size_t cap, const char *transport, const char *topic,
                     const char *sub, const char *more)
{
    char *tok = token_for(sub);
    snprintf(out, cap, "/%s?topic=%s&access_token=%s%s", transport, topic, tok, more ? more : "");
    free(tok);
}

/* The next SSE event must be `event: type` with exactly data. */
static void sse_expect(struct lg_sse_client *c, const char *type, const char *data)
{
    struct lg_sse_event ev;
    ck_assert_msg(lg_sse_next(c, &ev, WAIT_MS) == 1, "SSE: no %s notice (%s)", type, data);
    ck_assert_msg(strcmp(ev.event, type) == 0 && strcmp(ev.data, data) == 0,
                  "SSE: want %s %s, got %s %s", type, data, ev.event, ev.data);
    lg_sse_event_free(&ev);
}

/* The next WebSocket message must be exactly want. */
static void ws_expect(struct lg_ws_client *c, const char *want)
{
    char *msg = NULL;
    ck_assert_msg(lg_ws_next(c, &msg, WAIT_MS) == 1, "WebSocket: nothing, want %s", want);
    ck_assert_msg(strcmp(msg, want) == 0, "WebSocket: want %s, got %s", want, msg);
    free(msg);
}

/* GET path on the control port: status want, body exactly body (when not NULL). */
static void control_expect(const char *path, int want, const char *body)
{
    struct lg_http_response r;
    ck_assert_int_eq(lg_http_request(srv.control_port, "GET", path, NULL, NULL, 0, &r, WAIT_MS), 0);
    ck_assert_msg(r.status == want, "GET %s: %d %s", path, r.status, r.body);
    if (body)
        ck_assert_msg(strcmp(r.body, body) == 0, "GET %s: want %s, got %s", path, body, r.body);
    lg_http_response_free(&r);
}

static long long topic_subscribers(const char *encoded)
{
    char path[256];
    snprintf(path, sizeof path, "/v1/topics/%s", encoded);
    struct lg_http_response r;
    ck_assert_int_eq(lg_http_request(srv.control_port, "GET", path, NULL, NULL, 0, &r, WAIT_MS), 0);
    ck_assert_msg(r.status == 200, "GET %s: %d %s", path, r.status, r.body);
    json_t *o = json_loads(r.body, 0, NULL);
    long long n = json_integer_value(json_object_get(o, "subscribers"));
    json_decref(o);
    lg_http_response_free(&r);
    return n;
}

#define J(t) "{\"topic\":\"room/a\"," t "}"
#define WS(type, t) "{\"type\":\"" type "\",\"v\":1,\"topic\":\"room/a\"," t "}"

START_TEST(test_presence_every_transport)
{
    char path[2048];
    /* alice on SSE: her own join and the first occupancy */
    struct lg_sse_client alice;
    path_for(path, sizeof path, "sse", "room/a", "alice", NULL);
    lg_sse_must_open(&alice, srv.public_port, path, NULL);
    sse_expect(&alice, "join", J("\"members\":[\"alice\"]"));
    sse_expect(&alice, "occupancy", J("\"subscribers\":1"));
    /* on the wire: no id line, so the stream's Last-Event-ID stays the last event's */
    ck_assert_msg(strstr(alice.raw, "\n\nevent: join\ndata: " J("\"members\":[\"alice\"]")
                                    "\n\nevent: occupancy\ndata: " J("\"subscribers\":1") "\n\n"),
                  "SSE bytes: %.*s", (int)alice.raw_len, alice.raw);

    /* bob on WebSocket: both see his join; he asks who is here in-band */
    struct lg_ws_client bob;
    path_for(path, sizeof path, "ws", "room/a", "bob", NULL);
    lg_ws_must_subscribe(&bob, srv.public_port, path, NULL, NULL, 0);
    sse_expect(&alice, "join", J("\"members\":[\"bob\"]"));
    sse_expect(&alice, "occupancy", J("\"subscribers\":2"));
    ws_expect(&bob, WS("join", "\"members\":[\"bob\"]"));
    ws_expect(&bob, WS("occupancy", "\"subscribers\":2"));
    const char *ask = "{\"op\":\"presence\",\"topic\":\"room/a\"}";
    ck_assert_int_eq(lg_ws_send_text(&bob, ask, strlen(ask)), 0);
    ws_expect(&bob, WS("presence", "\"members\":[\"alice\",\"bob\"],\"next\":null,\"total\":2,"
                                   "\"unlisted\":0"));
    control_expect("/v1/topics/room/a/presence", 200,
                   "{\"topic\":\"room/a\",\"members\":[\"alice\",\"bob\"],\"next\":null,"
                   "\"total\":2,\"unlisted\":0}");
    ck_assert_int_eq(topic_subscribers("room%2Fa"), 2);

    /* carol on long-poll: her held poll is answered with the notices of her join */
    struct lg_http_response r;
    path_for(path, sizeof path, "poll", "room/a", "carol", "&timeout=30");
    ck_assert_int_eq(lg_http_request(srv.public_port, "GET", path, NULL, NULL, 0, &r, WAIT_MS), 0);
    ck_assert_int_eq(r.status, 200);
    json_t *answer = json_loads(r.body, 0, NULL);
    json_t *events = json_object_get(answer, "events");
    char *text = json_dumps(events, JSON_COMPACT | JSON_PRESERVE_ORDER);
    ck_assert_msg(strcmp(text, "[" WS("join", "\"members\":[\"carol\"]") "," WS(
                                   "occupancy", "\"subscribers\":3") "]") == 0,
                  "poll: %s", r.body);
    free(text);
    json_decref(answer);
    lg_http_response_free(&r);
    sse_expect(&alice, "join", J("\"members\":[\"carol\"]"));
    sse_expect(&alice, "occupancy", J("\"subscribers\":3"));
    /* carol does not poll again: her subscription ended with the answer; she leaves a tick
     * after the count fell */
    sse_expect(&alice, "occupancy", J("\"subscribers\":2"));
    sse_expect(&alice, "leave", J("\"members\":[\"carol\"]"));
    ws_expect(&bob, WS("join", "\"members\":[\"carol\"]"));
    ws_expect(&bob, WS("occupancy", "\"subscribers\":3"));
    ws_expect(&bob, WS("occupancy", "\"subscribers\":2"));
    ws_expect(&bob, WS("leave", "\"members\":[\"carol\"]"));

    /* bob goes: alice sees the count fall, then his leave */
    lg_ws_close(&bob);
    sse_expect(&alice, "occupancy", J("\"subscribers\":1"));
    sse_expect(&alice, "leave", J("\"members\":[\"bob\"]"));
    control_expect("/v1/topics/room/a/presence", 200,
                   "{\"topic\":\"room/a\",\"members\":[\"alice\"],\"next\":null,\"total\":1,"
                   "\"unlisted\":0}");
    ck_assert_int_eq(topic_subscribers("room%2Fa"), 1);
    lg_sse_close(&alice);
}
END_TEST

/* One member on two connections is listed once: the second is no join, closing one is no
 * leave (only the count moves). */
START_TEST(test_presence_member_listed_once)
{
    char path[2048];
    struct lg_sse_client a1, a2;
    path_for(path, sizeof path, "sse", "room/a", "alice", NULL);
    lg_sse_must_open(&a1, srv.public_port, path, NULL);
    sse_expect(&a1, "join", J("\"members\":[\"alice\"]"));
    sse_expect(&a1, "occupancy", J("\"subscribers\":1"));
    lg_sse_must_open(&a2, srv.public_port, path, NULL);
    sse_expect(&a1, "occupancy", J("\"subscribers\":2"));
    sse_expect(&a2, "occupancy", J("\"subscribers\":2"));
    lg_sse_close(&a2);
    sse_expect(&a1, "occupancy", J("\"subscribers\":1"));
    lg_sse_expect_no_event(&a1, 2500); /* two ticks: no leave */
    control_expect("/v1/topics/room/a/presence", 200,
                   "{\"topic\":\"room/a\",\"members\":[\"alice\"],\"next\":null,\"total\":1,"
                   "\"unlisted\":0}");
    lg_sse_close(&a1);
}
END_TEST

/* presence_max_members 3: a fourth member is subscribed and counted, not listed; the list
 * pages in id order. */
START_TEST(test_presence_member_bound_and_paging)
{
    const char *names[] = {"dan", "ann", "cat", "bea"};
    struct lg_ws_client c[4];
    char path[2048];
    for (int i = 0; i < 4; i++) {
        path_for(path, sizeof path, "ws", "room/a", names[i], NULL);
        lg_ws_must_subscribe(&c[i], srv.public_port, path, NULL, NULL, 0);
    }
    ck_assert(lg_stat_wait(srv.control_port, "presence_unlisted", 0, 1, WAIT_MS) == 1);
    control_expect("/v1/topics/room/a/presence?limit=2", 200,
                   "{\"topic\":\"room/a\",\"members\":[\"ann\",\"cat\"],\"next\":\"cat\","
                   "\"total\":3,\"unlisted\":1}");
    control_expect("/v1/topics/room/a/presence?limit=2&after=cat", 200,
                   "{\"topic\":\"room/a\",\"members\":[\"dan\"],\"next\":null,\"total\":3,"
                   "\"unlisted\":1}");
    ck_assert_int_eq(topic_subscribers("room%2Fa"), 4);
    for (int i = 0; i < 4; i++)
        lg_ws_close(&c[i]);
}
END_TEST

/* A topic without a rule: no notices, no member list (404 no_presence), the count still in
 * GET /v1/topics/{t}; an occupancy-only rule sends occupancy and no joins. */
START_TEST(test_presence_off_and_occupancy_only)
{
    char path[2048];
    struct lg_sse_client plain, counted;
    path_for(path, sizeof path, "sse", "plain", "alice", NULL);
    lg_sse_must_open(&plain, srv.public_port, path, NULL);
    path_for(path, sizeof path, "sse", "count/a", "alice", NULL);
    lg_sse_must_open(&counted, srv.public_port, path, NULL);
    sse_expect(&counted, "occupancy", "{\"topic\":\"count/a\",\"subscribers\":1}");
    struct lg_http_response r;
    ck_assert_int_eq(lg_http_request(srv.control_port, "GET", "/v1/topics/plain/presence", NULL,
                                     NULL, 0, &r, WAIT_MS), 0);
    lg_expect_error(&r, 404, "no_presence", LG_ERROR_JSON_TYPE | LG_ERROR_ONLY_KEYS);
    lg_http_response_free(&r);
    ck_assert_int_eq(topic_subscribers("plain"), 1);
    lg_sse_expect_no_event(&plain, 1500);
    /* the in-band question is refused the same way */
    struct lg_ws_client ws;
    lg_ws_must_subscribe(&ws, srv.public_port, "/ws?topic=plain", NULL, NULL, 0);
    const char *ask = "{\"op\":\"presence\",\"topic\":\"plain\"}";
    ck_assert_int_eq(lg_ws_send_text(&ws, ask, strlen(ask)), 0);
    char *msg = NULL;
    ck_assert_int_eq(lg_ws_next(&ws, &msg, WAIT_MS), 1);
    ck_assert_msg(strstr(msg, "\"type\":\"error\"") && strstr(msg, "\"code\":\"no_presence\""),
                  "%s", msg);
    free(msg);
    lg_ws_close(&ws);
    lg_sse_close(&plain);
    lg_sse_close(&counted);
}
END_TEST

/* Who may ask a topic's members in-band: whoever may subscribe to it. A token whose subscribe
 * claim covers the topic is answered, one for another topic is refused `forbidden`, and with no
 * token where anonymous subscribing is off the question is refused `token_missing`. */
static void ask_presence(struct lg_ws_client *ws, const char *topic, const char *want)
{
    char ask[128];
    snprintf(ask, sizeof ask, "{\"op\":\"presence\",\"topic\":\"%s\"}", topic);
    ck_assert_int_eq(lg_ws_send_text(ws, ask, strlen(ask)), 0);
    char *msg = NULL;
    ck_assert_int_eq(lg_ws_next(ws, &msg, WAIT_MS), 1);
    ck_assert_msg(strstr(msg, want) != NULL, "want %s in %s", want, msg);
    free(msg);
}

START_TEST(test_presence_question_per_credential)
{
    struct lg_server own;
    lg_server_must_start(&own, "{\"auth\":{\"hs256_secret\":\"" SECRET "\"},"
                               "\"topic_rules\":[{\"match\":\"room/*\",\"presence\":true}]}");
    char claims[256], path[2048];
    snprintf(claims, sizeof claims,
             "{\"exp\":%ld,\"sub\":\"carol\",\"livegate\":{\"subscribe\":[\"room/a\"]}}",
             (long)time(NULL) + 3600);
    char *tok = lg_token_raw(HS, claims, LG_SIGN_HMAC, SECRET, NULL);
    snprintf(path, sizeof path, "/ws?topic=room/a&access_token=%s", tok);
    free(tok);
    struct lg_ws_client ws;
    lg_ws_must_subscribe(&ws, own.public_port, path, NULL, NULL, 0);
    ask_presence(&ws, "room/a", "\"type\":\"presence\"");
    ask_presence(&ws, "room/b", "\"code\":\"forbidden\"");
    lg_ws_close(&ws);

    /* no token at all: the upgrade itself carries none, so the question has no grant */
    struct lg_ws_client anon;
    ck_assert_int_eq(lg_ws_open(&anon, own.public_port, "/ws", "livegate.v1"), 0);
    ask_presence(&anon, "room/a", "\"code\":\"token_missing\"");
    lg_ws_close(&anon);
    lg_server_must_stop(&own);
}
END_TEST

static Suite *presence_suite(void)
{
    Suite *s = suite_create("presence");
    TCase *tc = LG_TCASE(s, "presence", server_setup, server_teardown,
                         test_presence_every_transport, test_presence_member_listed_once,
                         test_presence_member_bound_and_paging,
                         test_presence_off_and_occupancy_only,
                         test_presence_question_per_credential);
    tcase_set_timeout(tc, 90);
    return s;
}

LG_CHECK_MAIN(presence_suite)
