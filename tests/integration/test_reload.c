/*
 * test_reload.c - SIGHUP reload and key rotation on the real binary (docs/operations.md
 * "Reload" and "Key rotation"): a log level and format changed live; a key added to the JWKS
 * accepted after a reload while the old one still works, then the old one refused (401
 * token_unknown_key) once removed; an invalid file, and an invalid JWKS, refused with the
 * running configuration kept (old key still works, counter and log line); restart-only keys
 * refused by name with nothing applied; a control token kept off loopback; an origin added to
 * allowed_origins by a reload; limits.max_topics lowered to bound new topics, and history.*
 * the history of new ones; every other live limit (limits.max_event_bytes, max_batch_bytes,
 * max_topics_per_client, topic_creations_per_s, max_connections_per_address,
 * keepalive_timeout_ms, poll.default_timeout_ms, poll.max_timeout_ms; publish_wait_ms is in
 * test_overload.c, which can freeze a worker) enforced on new work after a reload while a
 * connection opened before it streams on, and an invalid limit refused with the running one
 * kept; a subscriber on each of SSE and WebSocket streaming across three reloads receiving
 * exactly every id; and every credential case of the kid rule (right kid for HS256, RS256 and
 * ES256, wrong kid, no kid with several keys and with one, kid on a single unnamed key,
 * expired, wrong alg). Each step waits on the reload counter of /metrics, never on a sleep.
 */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "lg_test.h"
#include "support/lg_token.h"

#include "check_main.h"

#define WAIT_MS 5000
#define NEWS "{\"subscribe\":[\"news/*\"],\"publish\":[\"*\"]}"
#define S1 "first-secret-of-at-least-32-bytes!!"
#define S2 "second-secret-of-at-least-32-bytes!"
#define APPLIED "livegate_config_reloads_total{result=\"applied\"}"
#define REFUSED "livegate_config_reloads_total{result=\"refused\"}"
#define FAILED "livegate_config_reloads_total{result=\"failed\"}"

static char cfg_path[64], jwks_path[64];

static void paths(void)
{
    snprintf(cfg_path, sizeof cfg_path, "/tmp/lg-reload-%d.json", (int)getpid());
    snprintf(jwks_path, sizeof jwks_path, "/tmp/lg-reload-%d.jwks", (int)getpid());
}

/* Write the config file whole (a rename, as a deploy tool would). */
static void write_config(const char *json)
{
    char tmp[80];
    snprintf(tmp, sizeof tmp, "%s.tmp", cfg_path);
    FILE *f = fopen(tmp, "w");
    ck_assert_ptr_nonnull(f);
    fputs(json, f);
    fclose(f);
    ck_assert_int_eq(rename(tmp, cfg_path), 0);
}

/* A config naming the JWKS file, with extra top-level members (may be ""). */
static void write_jwks_config(const char *extra)
{
    char json[1024];
    snprintf(json, sizeof json, "{%s\"workers\":1,\"auth\":{\"jwks_file\":\"%s\"}}", extra,
             jwks_path);
    write_config(json);
}

static void start(struct lg_server *s)
{
    const char *args[] = {"--config", cfg_path, NULL};
    ck_assert_msg(lg_server_start(s, NULL, args) == 0, "server did not start");
}

static void stop(struct lg_server *s)
{
    lg_server_must_stop(s);
    unlink(cfg_path);
    unlink(jwks_path);
}

/* SIGHUP, then wait until the reload counter `series` reaches want. */
static void hup(struct lg_server *s, const char *series, double want)
{
    ck_assert_int_eq(kill(s->pid, SIGHUP), 0);
    ck_assert_msg(lg_metric_wait(s->control_port, series, want, WAIT_MS), "%s never reached %g",
                  series, want);
}

/* The server started on a JWKS of k1 alone (the JWKs of k1 and k2 into jwk[], the caller's). */
static void start_k1(struct lg_server *s, char *jwk[2])
{
    paths();
    jwk[0] = lg_token_jwk(NULL, S1, "k1");
    jwk[1] = lg_token_jwk(NULL, S2, "k2");
    lg_token_write_jwks(jwks_path, (const char *const *)jwk, 1);
    write_jwks_config("");
    start(s);
}

static char *hs_token(const char *secret, const char *kid, long exp_in)
{
    return lg_token_kid(JWT_ALG_HS256, secret, strlen(secret), kid, exp_in, NEWS);
}

/* The token opens an SSE stream on news/a (200 and the retry: line). */
static void expect_accepted(const char *what, const struct lg_server *s, const char *token)
{
    char headers[3000];
    snprintf(headers, sizeof headers, "Authorization: Bearer %s\r\n", token);
    struct lg_sse_client c;
    ck_assert_int_eq(lg_sse_open(&c, s->public_port, "/sse?topic=news/a", headers), 0);
    ck_assert_msg(c.status == 200, "%s: status %d", what, c.status);
    lg_sse_close(&c);
}

/* The token is refused with 401 and error code `code`. */
static void expect_refused(const char *what, const struct lg_server *s, const char *token,
                           const char *code)
{
    char headers[3000];
    snprintf(headers, sizeof headers, "Authorization: Bearer %s\r\n", token);
    struct lg_http_response r;
    ck_assert_int_eq(lg_http_request(s->public_port, "GET", "/sse?topic=news/a", headers, NULL, 0,
                                     &r, WAIT_MS), 0);
    lg_expect_error_named(what, &r, 401, code, 0);
    lg_http_response_free(&r);
}

/* Publish data to topic with token (publish claim "*"); the 201's id into id. */
static void publish(uint16_t cport, const char *token, const char *topic, const char *data,
                    char *id, size_t cap)
{
    char path[256], headers[3000];
    snprintf(path, sizeof path, "/v1/topics/%s/events", topic);
    snprintf(headers, sizeof headers, "Authorization: Bearer %s\r\n", token);
    struct lg_http_response r;
    ck_assert_int_eq(lg_http_request(cport, "POST", path, headers, data, strlen(data), &r,
                                     WAIT_MS), 0);
    ck_assert_msg(r.status == 201, "publish to %s: %d %s", topic, r.status, r.body);
    const char *at = strstr(r.body, "\"id\":\"");
    ck_assert_ptr_nonnull(at);
    at += 6;
    size_t len = strcspn(at, "\"");
    ck_assert_uint_lt(len, cap);
    memcpy(id, at, len);
    id[len] = '\0';
    lg_http_response_free(&r);
}

START_TEST(test_log_level_and_format)
{
    paths();
    struct lg_server s;
    write_config("{\"workers\":1,\"log_level\":\"info\"}");
    start(&s);
    /* An unknown control route is answered 404 and logged at debug: not at info. */
    struct lg_http_response r;
    ck_assert_int_eq(lg_http_request(s.control_port, "GET", "/v1/nowhere", NULL, NULL, 0, &r,
                                     WAIT_MS), 0);
    ck_assert_int_eq(r.status, 404);
    lg_http_response_free(&r);
    lg_server_pump_log(&s);
    ck_assert_msg(strstr(s.log, "control: 404") == NULL, "%s", s.log);

    write_config("{\"workers\":1,\"log_level\":\"debug\",\"log_format\":\"json\"}");
    hup(&s, APPLIED, 1);
    ck_assert(lg_server_wait_log(&s, "\"msg\":\"reload applied: log_level, log_format\"",
                                 WAIT_MS));
    ck_assert_int_eq(lg_http_request(s.control_port, "GET", "/v1/nowhere", NULL, NULL, 0, &r,
                                     WAIT_MS), 0);
    lg_http_response_free(&r);
    ck_assert_msg(lg_server_wait_log(&s, "\"level\":\"debug\",\"msg\":\"control: 404", WAIT_MS),
                  "%s", s.log);
    ck_assert_double_eq(lg_metric(s.control_port, REFUSED), 0);
    ck_assert_double_eq(lg_metric(s.control_port, FAILED), 0);
    stop(&s);
}
END_TEST

/* A key added is accepted after the reload, the old one too until it is removed. */
START_TEST(test_key_rotation)
{
    struct lg_server s;
    char *jwk[2];
    start_k1(&s, jwk);
    char *t1 = hs_token(S1, "k1", 3600), *t2 = hs_token(S2, "k2", 3600);
    expect_accepted("k1 before rotation", &s, t1);
    expect_refused("k2 before it is added", &s, t2, "token_unknown_key");

    lg_token_write_jwks(jwks_path, (const char *[]){jwk[0], jwk[1]}, 2);
    hup(&s, APPLIED, 1); /* the config did not change: the JWKS is re-read anyway */
    ck_assert(lg_server_wait_log(&s, "reload applied: no setting changed (key files re-read)",
                                 WAIT_MS));
    expect_accepted("k2 once added", &s, t2);
    expect_accepted("k1 while both are listed", &s, t1);

    lg_token_write_jwks(jwks_path, (const char *[]){jwk[1]}, 1);
    hup(&s, APPLIED, 2);
    expect_refused("k1 once removed", &s, t1, "token_unknown_key");
    expect_accepted("k2 alone", &s, t2);
    ck_assert_double_eq(lg_metric(s.control_port,
                                  "livegate_auth_refused_total{reason=\"unknown_key\"}"), 2);
    free(t1), free(t2), free(jwk[0]), free(jwk[1]);
    stop(&s);
}
END_TEST

/* An invalid file or JWKS is refused whole: the old key keeps working. */
START_TEST(test_invalid_config_kept)
{
    struct lg_server s;
    char *jwk[2], *k1;
    start_k1(&s, jwk);
    k1 = jwk[0];
    free(jwk[1]);
    char *t1 = hs_token(S1, "k1", 3600);

    write_config("{\"workers\":1,\"auth\":{\"jwks_file\":\"x\"},"); /* not JSON */
    hup(&s, FAILED, 1);
    ck_assert(lg_server_wait_log(&s, "reload failed: ", WAIT_MS));
    ck_assert(lg_server_wait_log(&s, "; the running configuration is kept", WAIT_MS));
    expect_accepted("k1 after an unparsable file", &s, t1);

    write_jwks_config("\"limits\":{\"max_topcs\":5},"); /* an unknown key */
    hup(&s, FAILED, 2);
    ck_assert(lg_server_wait_log(&s, "reload failed: ", WAIT_MS));
    ck_assert(lg_server_wait_log(&s, "limits.max_topcs: unknown key", WAIT_MS));
    expect_accepted("k1 after an invalid file", &s, t1);

    write_jwks_config("");
    char *dup[] = {k1, k1};
    lg_token_write_jwks(jwks_path, (const char *const *)dup, 2);
    hup(&s, FAILED, 3);
    ck_assert(lg_server_wait_log(&s, "keys[1]: this \"kid\" is used twice; the running "
                                     "configuration is kept", WAIT_MS));
    expect_accepted("k1 after an invalid JWKS", &s, t1);
    ck_assert_double_eq(lg_metric(s.control_port, APPLIED), 0);
    free(t1), free(k1);
    stop(&s);
}
END_TEST

/* A setting that needs a restart refuses the whole reload, naming it. */
START_TEST(test_restart_key_refused)
{
    paths();
    struct lg_server s;
    write_config("{\"workers\":1,\"log_level\":\"info\"}");
    start(&s);
    /* Live limits beside restart-only ones: none applied. */
    write_config("{\"workers\":1,\"log_level\":\"debug\",\"limits\":{\"max_connections\":5,"
                 "\"max_event_bytes\":1,\"worker_inbox_events\":4,\"request_timeout_ms\":500,"
                 "\"max_request_head_bytes\":2048},\"sse\":{\"retry_ms\":500}}");
    hup(&s, REFUSED, 1);
    ck_assert(lg_server_wait_log(&s, "reload refused: sse.retry_ms, limits.max_connections, "
                                     "limits.max_request_head_bytes, limits.request_timeout_ms, "
                                     "limits.worker_inbox_events changed, which needs a restart; "
                                     "nothing was applied (restore them, or restart)", WAIT_MS));
    ck_assert_int_eq(lg_publish(s.control_port, "r", "two bytes", NULL, 0), 201);
    /* Nothing applied: the level stayed info. */
    struct lg_http_response r;
    ck_assert_int_eq(lg_http_request(s.control_port, "GET", "/v1/nowhere", NULL, NULL, 0, &r,
                                     WAIT_MS), 0);
    lg_http_response_free(&r);
    lg_server_pump_log(&s);
    ck_assert_msg(strstr(s.log, "control: 404") == NULL, "%s", s.log);
    ck_assert_double_eq(lg_metric(s.control_port, APPLIED), 0);
    stop(&s);
}
END_TEST

/* A control port off loopback keeps its token: a reload that removes it fails, and the
 * token still opens the control port. */
START_TEST(test_control_token_kept_off_loopback)
{
    paths();
    struct lg_server s;
    write_config("{\"workers\":1,\"auth\":{\"control_token\":\"ctl-token\"}}");
    const char *args[] = {"--config", cfg_path, "--control", "0.0.0.0:0", NULL};
    ck_assert_msg(lg_server_start(&s, NULL, args) == 0, "server did not start");
    write_config("{\"workers\":1}");
    ck_assert_int_eq(kill(s.pid, SIGHUP), 0); /* (/metrics takes the token here: the log) */
    ck_assert(lg_server_wait_log(&s, "reload failed: listen.control 0.0.0.0 is not a loopback "
                                     "address: set auth.control_token", WAIT_MS));
    struct lg_http_response r;
    ck_assert_int_eq(lg_http_request(s.control_port, "GET", "/v1/stats", NULL, NULL, 0, &r,
                                     WAIT_MS), 0);
    ck_assert_int_eq(r.status, 401);
    lg_http_response_free(&r);
    ck_assert_int_eq(lg_http_request(s.control_port, "GET", "/v1/stats",
                                     "Authorization: Bearer ctl-token\r\n", NULL, 0, &r,
                                     WAIT_MS), 0);
    ck_assert_int_eq(r.status, 200);
    lg_http_response_free(&r);
    stop(&s);
}
END_TEST

/* limits.max_topics bounds the topics created after a reload (it removes none). */
START_TEST(test_max_topics_live)
{
    paths();
    struct lg_server s;
    write_config("{\"workers\":1}");
    start(&s);
    lg_publish_n(s.control_port, "t1", 1, 1, NULL, 0);
    long long topics = lg_server_stat(&s, "topics");
    char json[128];
    snprintf(json, sizeof json, "{\"workers\":1,\"limits\":{\"max_topics\":%lld}}", topics + 1);
    write_config(json);
    hup(&s, APPLIED, 1);
    ck_assert(lg_server_wait_log(&s, "reload applied: limits.max_topics", WAIT_MS));
    ck_assert_int_eq(lg_publish(s.control_port, "t2", "d", NULL, 0), 201);
    struct lg_http_response r;
    ck_assert_int_eq(lg_http_request(s.control_port, "POST", "/v1/topics/t3/events", NULL, "d", 1,
                                     &r, WAIT_MS), 0);
    lg_expect_error(&r, 503, "unavailable", 0);
    char want[160]; /* the message names the limit in force, not the one of the start */
    snprintf(want, sizeof want, "the gateway holds %lld topics, the limit (limits.max_topics)",
             topics + 1);
    ck_assert_msg(strstr(r.body, want), "%s", r.body);
    lg_http_response_free(&r);
    ck_assert_int_eq(lg_publish(s.control_port, "t1", "d", NULL, 0), 201); /* it exists */
    ck_assert_int_eq(lg_server_stat(&s, "topics"), topics + 1);
    stop(&s);
}
END_TEST

/* The next event on c is a message carrying data (its id into id when not NULL). */
static void expect_event(struct lg_sse_client *c, const char *data, const char *id)
{
    struct lg_sse_event ev;
    ck_assert_int_eq(lg_sse_next(c, &ev, WAIT_MS), 1);
    ck_assert_str_eq(ev.data, data);
    if (id)
        ck_assert_str_eq(ev.id, id);
    lg_sse_event_free(&ev);
}

/* POST body to path on the control port: the answer must be status (and carry message). */
static void expect_publish(const struct lg_server *s, const char *path, const char *body,
                           size_t len, int status, const char *message)
{
    struct lg_http_response r;
    ck_assert_int_eq(lg_http_request(s->control_port, "POST", path, NULL, body, len, &r, WAIT_MS),
                     0);
    if (status == 201 || status == 200)
        ck_assert_msg(r.status == status, "%s: %d %s", path, r.status, r.body);
    else
        lg_expect_error_named(path, &r, status, "payload_too_large", LG_ERROR_ONLY_KEYS);
    if (message)
        ck_assert_msg(strstr(r.body, message), "%s: %s", path, r.body);
    lg_http_response_free(&r);
}

/* limits.max_event_bytes and max_batch_bytes bound the publishes after a reload; a stream
 * opened before it receives exactly what was accepted; an invalid limit is refused whole. */
START_TEST(test_publish_limits_live)
{
    paths();
    struct lg_server s;
    write_config("{\"workers\":1}");
    start(&s);
    struct lg_sse_client sub;
    lg_sse_must_open(&sub, s.public_port, "/sse?topic=lim", NULL);
    char big[201], small[101], id_big[128], id_small[128];
    memset(big, 'b', 200), big[200] = '\0';
    memset(small, 's', 100), small[100] = '\0';
    ck_assert_int_eq(lg_publish(s.control_port, "lim", big, id_big, sizeof id_big), 201);
    char batch[201];
    memset(batch, ' ', 200), batch[200] = '\0';
    memcpy(batch, "[{\"topic\":\"lim\",\"data\":\"x\"}", 27);
    batch[199] = ']';

    write_config("{\"workers\":1,\"limits\":{\"max_event_bytes\":100,\"max_batch_bytes\":150}}");
    hup(&s, APPLIED, 1);
    ck_assert(lg_server_wait_log(&s, "reload applied: limits.max_event_bytes, "
                                     "limits.max_batch_bytes", WAIT_MS));
    expect_publish(&s, "/v1/topics/lim/events", big, 200, 413,
                   "\"event body is 200 bytes; the limit is 100 (limits.max_event_bytes)\"");
    expect_publish(&s, "/v1/publish", batch, 200, 413,
                   "\"batch body is 200 bytes; the limit is 150 (limits.max_batch_bytes)\"");
    ck_assert_int_eq(lg_publish(s.control_port, "lim", small, id_small, sizeof id_small), 201);

    /* Out of range, and event > batch: refused whole, the limits of the reload above kept. */
    write_config("{\"workers\":1,\"limits\":{\"max_event_bytes\":0,\"max_batch_bytes\":150}}");
    hup(&s, FAILED, 1);
    ck_assert(lg_server_wait_log(&s, "limits.max_event_bytes: 0 is out of range (allowed "
                                     "1..16777216); the running configuration is kept", WAIT_MS));
    write_config("{\"workers\":1,\"limits\":{\"max_event_bytes\":1000,\"max_batch_bytes\":150}}");
    hup(&s, FAILED, 2);
    ck_assert(lg_server_wait_log(&s, "limits.max_event_bytes (1000) must not exceed "
                                     "limits.max_batch_bytes (150); the running configuration "
                                     "is kept", WAIT_MS));
    expect_publish(&s, "/v1/topics/lim/events", big, 200, 413,
                   "the limit is 100 (limits.max_event_bytes)");

    expect_event(&sub, big, id_big);
    expect_event(&sub, small, id_small);
    lg_sse_expect_quiet(&sub, 200);
    ck_assert_double_eq(lg_metric(s.control_port, APPLIED), 1);
    lg_sse_close(&sub);
    stop(&s);
}
END_TEST

/* Send text on c; the answer must be exactly want, or start with {"type":"<want>" when want
 * is a bare type name. */
static void ws_expect(struct lg_ws_client *c, const char *text, const char *want)
{
    ck_assert_int_eq(lg_ws_send_text(c, text, strlen(text)), 0);
    char *m = NULL;
    ck_assert_int_eq(lg_ws_next(c, &m, WAIT_MS), 1);
    if (want[0] == '{') {
        ck_assert_str_eq(m, want);
    } else {
        char prefix[64];
        snprintf(prefix, sizeof prefix, "{\"type\":\"%s\"", want);
        ck_assert_msg(strncmp(m, prefix, strlen(prefix)) == 0, "answer %s, want %s", m, want);
    }
    free(m);
}

/* The next WebSocket message on c is the event of topic with id. */
static void ws_expect_event(struct lg_ws_client *c, const char *topic, const char *id)
{
    char *m = NULL;
    ck_assert_int_eq(lg_ws_next(c, &m, WAIT_MS), 1);
    char want_topic[160], want_id[160];
    snprintf(want_topic, sizeof want_topic, "\"topic\":\"%s\"", topic);
    snprintf(want_id, sizeof want_id, "\"id\":\"%s\"", id);
    ck_assert_msg(strstr(m, "\"type\":\"event\"") && strstr(m, want_topic) && strstr(m, want_id),
                  "%s", m);
    free(m);
}

#define SUB_LIMITS_BEFORE "{\"workers\":1,\"trusted_proxies\":\"127.0.0.1\"}"
#define SUB_LIMITS_AFTER                                                                           \
    "{\"workers\":1,\"trusted_proxies\":\"127.0.0.1\",\"limits\":{"                               \
    "\"max_topics_per_client\":2,\"topic_creations_per_s\":1,\"max_connections_per_address\":1}}"

/* limits.max_topics_per_client, topic_creations_per_s and max_connections_per_address bound
 * the subscriptions and connections after a reload; those opened before it keep what they
 * hold and stream on. */
START_TEST(test_subscribe_limits_live)
{
    paths();
    struct lg_server s;
    write_config(SUB_LIMITS_BEFORE);
    start(&s);
    const char *client = "X-Forwarded-For: 203.0.113.7\r\n";
    struct lg_sse_client held;
    lg_sse_must_open(&held, s.public_port, "/sse?topic=a", client);
    struct lg_ws_client ws;
    lg_ws_must_subscribe(&ws, s.public_port, "/ws?topic=a&topic=b&topic=c", NULL, NULL, 0);

    write_config(SUB_LIMITS_AFTER);
    hup(&s, APPLIED, 1);
    ck_assert(lg_server_wait_log(&s, "reload applied: limits.max_topics_per_client, "
                                     "limits.topic_creations_per_s, "
                                     "limits.max_connections_per_address", WAIT_MS));
    /* The address holds one connection already: a second is refused (SSE: a refused event). */
    struct lg_sse_client second;
    ck_assert_int_eq(lg_sse_open(&second, s.public_port, "/sse?topic=a", client), 0);
    ck_assert_msg(strstr(second.headers, "X-Livegate-Refused: 429 too_many_connections\r\n"),
                  "%s", second.headers);
    ck_assert(lg_sse_wait_eof(&second, WAIT_MS));
    ck_assert_msg(strstr(second.raw, "\"your address holds 1 connections, the limit "
                                     "(limits.max_connections_per_address); close one or retry "
                                     "later\""), "%s", second.raw);
    lg_sse_close(&second);

    /* The WebSocket holds three topics: it keeps them, and may add none. */
    ws_expect(&ws, "{\"op\":\"subscribe\",\"topics\":[\"d\"]}",
              "{\"type\":\"error\",\"v\":1,\"code\":\"too_many_topics\",\"message\":\"at most 2 "
              "topics per connection (limits.max_topics_per_client)\"}");
    struct lg_http_response r;
    ck_assert_int_eq(lg_http_request(s.public_port, "GET",
                                     "/poll?topic=a&topic=b&topic=c&timeout=0", NULL, NULL, 0,
                                     &r, WAIT_MS), 0);
    lg_expect_error_named("three topics in a poll", &r, 400, "bad_request", 0);
    ck_assert_msg(strstr(r.body, "\"at most 2 topics per subscription "
                                 "(limits.max_topics_per_client)\""), "%s", r.body);
    lg_http_response_free(&r);

    /* A new connection creates topics at 1 a second, after a burst of 2. */
    struct lg_ws_client fresh;
    lg_ws_must_open(&fresh, s.public_port, "/ws", "livegate.v1");
    ws_expect(&fresh, "{\"op\":\"subscribe\",\"topics\":[\"n0\",\"n1\"]}", "subscribed");
    ws_expect(&fresh, "{\"op\":\"unsubscribe\",\"topics\":[\"n0\",\"n1\"]}", "unsubscribed");
    ws_expect(&fresh, "{\"op\":\"subscribe\",\"topics\":[\"n2\",\"n3\"]}",
              "{\"type\":\"error\",\"v\":1,\"code\":\"too_many_new_topics\",\"message\":\"this "
              "connection creates new topics faster than limits.topic_creations_per_s allows; "
              "retry shortly\"}");
    lg_ws_close(&fresh);

    /* The connections of before stream on, every topic they held. */
    char id_a[128], id_c[128];
    ck_assert_int_eq(lg_publish(s.control_port, "a", "to-a", id_a, sizeof id_a), 201);
    ck_assert_int_eq(lg_publish(s.control_port, "c", "to-c", id_c, sizeof id_c), 201);
    expect_event(&held, "to-a", id_a);
    ws_expect_event(&ws, "a", id_a);
    ws_expect_event(&ws, "c", id_c);
    ck_assert_int_eq(lg_server_stat(&s, "clients_sse"), 1);
    ck_assert_int_eq(lg_server_stat(&s, "clients_ws"), 1);
    lg_sse_close(&held);
    lg_ws_close(&ws);
    stop(&s);
}
END_TEST

/* A long-poll on p from the proxy's own address: its status, and how long it was held. */
static int64_t poll_held_ms(const struct lg_server *s, const char *query)
{
    char path[128];
    snprintf(path, sizeof path, "/poll?topic=p%s", query);
    struct lg_http_response r;
    int64_t t0 = lg_now_ms();
    ck_assert_int_eq(lg_http_request(s->public_port, "GET", path, NULL, NULL, 0, &r, WAIT_MS), 0);
    int64_t took = lg_now_ms() - t0;
    ck_assert_msg(r.status == 200, "%s: %d %s", path, r.status, r.body);
    lg_http_response_free(&r);
    return took;
}

/* The peer closes fd within timeout_ms without sending a byte. */
static void expect_quiet_close(int fd, int timeout_ms)
{
    int64_t deadline = lg_now_ms() + timeout_ms;
    struct timeval tv = {.tv_sec = 0, .tv_usec = 50 * 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char byte;
    ssize_t n = -1;
    while (lg_left_ms(deadline) > 0) {
        n = recv(fd, &byte, 1, 0);
        if (n >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
            break;
    }
    ck_assert_msg(n == 0, "the idle keep-alive connection was not closed quietly (%zd)", n);
}

/* limits.keepalive_timeout_ms and the poll hold times bound the requests after a reload. */
START_TEST(test_timeouts_live)
{
    paths();
    struct lg_server s;
    write_config("{\"workers\":1}");
    start(&s);
    struct lg_sse_client held;
    lg_sse_must_open(&held, s.public_port, "/sse?topic=p", NULL);
    write_config("{\"workers\":1,\"poll\":{\"default_timeout_ms\":300,\"max_timeout_ms\":400},"
                 "\"limits\":{\"keepalive_timeout_ms\":300}}");
    hup(&s, APPLIED, 1);
    ck_assert(lg_server_wait_log(&s, "reload applied: poll.default_timeout_ms, "
                                     "poll.max_timeout_ms, limits.keepalive_timeout_ms", WAIT_MS));
    /* 60 s asked, 400 ms held (WAIT_MS would fail it at the old cap of 60 s); none asked, 300. */
    int64_t capped = poll_held_ms(&s, "&timeout=60"), by_default = poll_held_ms(&s, "");
    ck_assert_msg(capped >= 380, "held %lld ms, under the new cap", (long long)capped);
    ck_assert_msg(by_default >= 280 && by_default < 2000, "held %lld ms", (long long)by_default);

    /* An idle keep-alive connection is closed after 300 ms, not the 10 s of before. */
    int fd = lg_tcp_connect(s.public_port);
    ck_assert_int_ge(fd, 0);
    const char *now = "GET /poll?topic=p&timeout=0 HTTP/1.1\r\nHost: x\r\n\r\n";
    ck_assert_int_eq(lg_send_all(fd, now, strlen(now)), 0);
    struct lg_http_response r;
    ck_assert_int_eq(lg_http_read_response(fd, &r, WAIT_MS), 0);
    ck_assert_int_eq(r.status, 200);
    lg_http_response_free(&r);
    expect_quiet_close(fd, 3000);
    close(fd);

    char id[128];
    ck_assert_int_eq(lg_publish(s.control_port, "p", "after", id, sizeof id), 201);
    expect_event(&held, "after", id);
    lg_sse_close(&held);
    stop(&s);
}
END_TEST

/* GET /v1/topics/{topic}: the body must hold "retained_events":want. */
static void expect_retained(const struct lg_server *s, const char *topic, int want)
{
    char path[128], needle[64];
    snprintf(path, sizeof path, "/v1/topics/%s", topic);
    snprintf(needle, sizeof needle, "\"retained_events\":%d,", want);
    struct lg_http_response r;
    ck_assert_int_eq(lg_http_request(s->control_port, "GET", path, NULL, NULL, 0, &r, WAIT_MS),
                     0);
    ck_assert_int_eq(r.status, 200);
    ck_assert_msg(strstr(r.body, needle), "%s: want %s in %s", topic, needle, r.body);
    lg_http_response_free(&r);
}

/* history.* bounds the topics created after a reload, as topic_rules do; a topic of before
 * keeps the bounds it was created with. */
START_TEST(test_history_live)
{
    paths();
    struct lg_server s;
    write_config("{\"workers\":1}");
    start(&s);
    lg_publish_n(s.control_port, "h-old", 1, 5, NULL, 0);
    write_config("{\"workers\":1,\"history\":{\"max_events\":2}}");
    hup(&s, APPLIED, 1);
    ck_assert(lg_server_wait_log(&s, "reload applied: history.max_events", WAIT_MS));
    lg_publish_n(s.control_port, "h-old", 6, 8, NULL, 0);
    lg_publish_n(s.control_port, "h-new", 1, 5, NULL, 0);
    expect_retained(&s, "h-old", 8);
    expect_retained(&s, "h-new", 2);
    stop(&s);
}
END_TEST

/* allowed_origins changes live: a WebSocket upgrade and a CORS answer from an origin added by
 * a reload, refused before it. */
START_TEST(test_origins_live)
{
    paths();
    struct lg_server s;
    write_config("{\"workers\":1,\"allowed_origins\":[\"https://a.example\"]}");
    start(&s);
    struct lg_ws_client ws;
    ck_assert_int_eq(lg_ws_open_with(&ws, s.public_port, "/ws?topic=o", NULL,
                                     "Origin: https://b.example\r\n"), -1);
    ck_assert_int_eq(ws.status, 403);
    lg_ws_close(&ws);
    write_config("{\"workers\":1,"
                 "\"allowed_origins\":[\"https://a.example\",\"https://b.example\"]}");
    hup(&s, APPLIED, 1);
    ck_assert(lg_server_wait_log(&s, "reload applied: allowed_origins", WAIT_MS));
    ck_assert_int_eq(lg_ws_open_with(&ws, s.public_port, "/ws?topic=o", NULL,
                                     "Origin: https://b.example\r\n"), 0);
    ck_assert_int_eq(ws.status, 101);
    lg_ws_close(&ws);
    struct lg_sse_client c;
    lg_sse_must_open(&c, s.public_port, "/sse?topic=o", "Origin: https://b.example\r\n");
    ck_assert_msg(strstr(c.headers, "Access-Control-Allow-Origin: https://b.example\r\n"), "%s",
                  c.headers);
    lg_sse_close(&c);
    stop(&s);
}
END_TEST

/* Connections and cursors are untouched: SSE and WebSocket subscribers receive exactly every
 * id across three reloads, on one connection each. */
START_TEST(test_stream_across_reloads)
{
    struct lg_server s;
    char *jwk[2];
    start_k1(&s, jwk);
    char *t1 = hs_token(S1, "k1", 3600);
    char headers[3000], path[3000];
    snprintf(headers, sizeof headers, "Authorization: Bearer %s\r\n", t1);
    struct lg_sse_client sse;
    lg_sse_must_open(&sse, s.public_port, "/sse?topic=news/r", headers);
    struct lg_ws_client ws;
    snprintf(path, sizeof path, "/ws?topic=news/r&access_token=%s", t1);
    lg_ws_must_subscribe(&ws, s.public_port, path, NULL, NULL, 0);

    char ids[40][128];
    int n = 0;
    const char *configs[] = {"\"log_level\":\"debug\",", "\"log_level\":\"warn\",", ""};
    for (int round = 0; round < 4; round++) {
        for (int i = 0; i < 10; i++, n++) {
            char data[16];
            snprintf(data, sizeof data, "d%d", n);
            publish(s.control_port, t1, "news/r", data, ids[n], sizeof ids[n]);
        }
        if (round == 3)
            break;
        /* Reload: a level change, and the JWKS rotated (k1 kept, k2 added, then both). */
        lg_token_write_jwks(jwks_path, (const char *[]){jwk[0], jwk[1]}, round == 0 ? 1 : 2);
        write_jwks_config(configs[round]);
        hup(&s, APPLIED, round + 1);
    }
    for (int i = 0; i < n; i++) {
        struct lg_sse_event ev;
        ck_assert_int_eq(lg_sse_next(&sse, &ev, WAIT_MS), 1);
        ck_assert_str_eq(ev.id, ids[i]);
        char data[16];
        snprintf(data, sizeof data, "d%d", i);
        ck_assert_str_eq(ev.data, data);
        lg_sse_event_free(&ev);
        char *m = NULL;
        ck_assert_int_eq(lg_ws_next(&ws, &m, WAIT_MS), 1);
        char want[256];
        snprintf(want, sizeof want, "\"id\":\"%s\"", ids[i]);
        ck_assert_msg(strstr(m, want) && strstr(m, "\"type\":\"event\""), "%s", m);
        free(m);
    }
    lg_sse_expect_quiet(&sse, 200); /* nothing doubled */
    char *m = NULL;
    ck_assert_int_eq(lg_ws_next(&ws, &m, 100), 0);
    ck_assert_int_eq(lg_server_stat(&s, "clients_sse"), 1);
    ck_assert_int_eq(lg_server_stat(&s, "clients_ws"), 1);
    lg_sse_close(&sse);
    lg_ws_close(&ws);
    free(t1), free(jwk[0]), free(jwk[1]);
    stop(&s);
}
END_TEST

/* Every credential case of the kid rule, on a JWKS of HS256, RS256 and ES256 keys. */
START_TEST(test_credentials)
{
    paths();
    EVP_PKEY *rsa = EVP_RSA_gen(2048), *ec = EVP_EC_gen("P-256");
    ck_assert(rsa && ec);
    char *jwk[] = {lg_token_jwk(NULL, S1, "hs"), lg_token_jwk(rsa, NULL, "rs"),
                   lg_token_jwk(ec, NULL, "es")};
    lg_token_write_jwks(jwks_path, (const char *const *)jwk, 3);
    write_jwks_config("");
    struct lg_server s;
    start(&s);
    char *rs_pem = lg_token_private_pem(rsa), *es_pem = lg_token_private_pem(ec);
    char *t;
    expect_accepted("right kid, HS256", &s, t = hs_token(S1, "hs", 3600));
    free(t);
    expect_accepted("right kid, RS256", &s,
                    t = lg_token_kid(JWT_ALG_RS256, rs_pem, strlen(rs_pem), "rs", 3600, NEWS));
    free(t);
    expect_accepted("right kid, ES256", &s,
                    t = lg_token_kid(JWT_ALG_ES256, es_pem, strlen(es_pem), "es", 3600, NEWS));
    free(t);
    expect_refused("wrong kid", &s, t = hs_token(S1, "nobody", 3600), "token_unknown_key");
    free(t);
    expect_refused("no kid, three keys", &s, t = hs_token(S1, NULL, 3600), "token_unknown_key");
    free(t);
    expect_refused("expired, right kid", &s, t = hs_token(S1, "hs", -30), "token_expired");
    free(t);
    /* HS256 keyed with the RSA key's kid: the key pins RS256. */
    expect_refused("wrong alg for the kid", &s, t = hs_token(S1, "rs", 3600),
                   "token_wrong_algorithm");
    free(t);
    expect_refused("ES256 token under an HS256 kid", &s,
                   t = lg_token_kid(JWT_ALG_ES256, es_pem, strlen(es_pem), "hs", 3600, NEWS),
                   "token_wrong_algorithm");
    free(t);

    /* One key in the JWKS: a token without kid uses it. */
    lg_token_write_jwks(jwks_path, (const char *const *)jwk, 1);
    hup(&s, APPLIED, 1);
    expect_accepted("no kid, one key", &s, t = hs_token(S1, NULL, 3600));
    free(t);

    /* The single unnamed key of before (auth.hs256_secret) beside the JWKS: it takes tokens
     * without kid; a kid picks from the JWKS. */
    char json[256];
    snprintf(json, sizeof json, "{\"workers\":1,\"auth\":{\"hs256_secret\":\"" S2
             "\",\"jwks_file\":\"%s\"}}", jwks_path);
    write_config(json);
    hup(&s, APPLIED, 2);
    expect_accepted("no kid, the unnamed key", &s, t = hs_token(S2, NULL, 3600));
    free(t);
    expect_accepted("kid of the JWKS beside the unnamed key", &s, t = hs_token(S1, "hs", 3600));
    free(t);
    expect_refused("unnamed key's secret under a JWKS kid", &s, t = hs_token(S2, "hs", 3600),
                   "token_bad_signature");
    free(t);

    /* Only the unnamed key: a kid is ignored, as before keys had names. */
    write_config("{\"workers\":1,\"auth\":{\"hs256_secret\":\"" S2 "\"}}");
    hup(&s, APPLIED, 3);
    expect_accepted("kid on a single unnamed key", &s, t = hs_token(S2, "anything", 3600));
    free(t);
    expect_refused("expired on a single unnamed key", &s, t = hs_token(S2, NULL, -30),
                   "token_expired");
    free(t);

    for (int i = 0; i < 3; i++)
        free(jwk[i]);
    free(rs_pem), free(es_pem);
    EVP_PKEY_free(rsa), EVP_PKEY_free(ec);
    stop(&s);
}
END_TEST

int main(void)
{
    Suite *suite = suite_create("reload");
    TCase *tc = LG_TCASE(suite, "reload", NULL, NULL, test_log_level_and_format,
                         test_key_rotation, test_invalid_config_kept, test_restart_key_refused,
                         test_stream_across_reloads, test_credentials, test_origins_live,
                         test_max_topics_live, test_control_token_kept_off_loopback,
                         test_publish_limits_live, test_subscribe_limits_live,
                         test_timeouts_live, test_history_live);
    tcase_set_timeout(tc, 60);
    return lg_check_run(suite);
}
