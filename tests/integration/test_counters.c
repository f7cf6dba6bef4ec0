/*
 * test_counters.c - every reason of the refusal and close counters of GET /metrics, each caused
 * exactly once over real sockets: the series of that reason rises by one and every other
 * reason of its family stays where it was (docs/operations.md names each). Authorization:
 * missing, malformed, expired, not yet valid, forged, the wrong algorithm, a topic outside the
 * claim, an unlisted origin. Closes: the client's, an error answer, a policy refusal, the
 * operator's kick, the slow-consumer disconnect and the drain. Publish refusals are in
 * test_control_authz.c and test_scaling.c (both stores), keepalive closes in test_ws.c.
 */
#include <check.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "lg_test.h"
#include "support/lg_token.h"

#include "check_main.h"

#define WAIT_MS 5000
#define SECRET "counters-secret"
#define HS "{\"alg\":\"HS256\",\"typ\":\"JWT\"}"
#define NEWS "{\"subscribe\":[\"news/*\"]}"
#define ORIGIN "https://app.example"
#define CONFIG_AUTH                                                                                \
    "{\"auth\":{\"hs256_secret\":\"" SECRET "\"},\"allowed_origins\":[\"" ORIGIN "\"]}"
#define CONFIG_OPEN                                                                                \
    "{\"topic_rules\":[{\"match\":\"open/slow\",\"on_slow\":\"disconnect\"}],"                 \
    "\"client_queue\":{\"max_events\":8}}"

#define AUTH "livegate_auth_refused_total"
#define CLOSED "livegate_connections_closed_total"

static struct lg_server srv;

static void auth_server_setup(void) { lg_server_must_start(&srv, CONFIG_AUTH); }
static void open_server_setup(void) { lg_server_must_start(&srv, CONFIG_OPEN); }
static void server_teardown(void) { lg_server_must_stop(&srv); }

/* No public connection open: every close before now has been counted. */
static void settle(void)
{
    ck_assert(lg_wait_stat(srv.control_port, "connections_open", 0, WAIT_MS));
}

static char *bearer(const char *token)
{
    char *h = malloc(strlen(token) + 32);
    sprintf(h, "Authorization: Bearer %s\r\n", token);
    return h;
}

/* One refused subscription and the counter its reason names. */
struct auth_case {
    const char *reason;
    const char *topic;
    int status;
    char *(*headers)(void); /* malloc'd extra headers, NULL for none */
};

static char *no_headers(void) { return NULL; }
static char *malformed(void) { return bearer("not.a.token"); }

static char *signed_claims(const char *claims)
{
    char *t = lg_token_raw(HS, claims, LG_SIGN_HMAC, SECRET, NULL), *h = bearer(t);
    free(t);
    return h;
}

static char *expired(void)
{
    char *t = lg_token_libjwt(SECRET, NULL, -30, NEWS), *h = bearer(t);
    free(t);
    return h;
}

static char *not_yet_valid(void)
{
    long later = 3600;
    char *claims = lg_token_claims(7200, &later, NEWS), *h = signed_claims(claims);
    free(claims);
    return h;
}

static char *forged(void)
{
    char *claims = lg_token_claims(3600, NULL, NEWS);
    char *t = lg_token_raw(HS, claims, LG_SIGN_FORGED, NULL, NULL), *h = bearer(t);
    free(t);
    free(claims);
    return h;
}

static char *alg_none(void)
{
    char *claims = lg_token_claims(3600, NULL, NEWS);
    char *t = lg_token_raw("{\"alg\":\"none\"}", claims, LG_SIGN_NONE, NULL, NULL), *h = bearer(t);
    free(t);
    free(claims);
    return h;
}

static char *valid(void)
{
    char *t = lg_token_libjwt(SECRET, NULL, 3600, NEWS), *h = bearer(t);
    free(t);
    return h;
}

static char *valid_from_elsewhere(void)
{
    char *h = valid(), *both = malloc(strlen(h) + 64);
    sprintf(both, "%sOrigin: https://elsewhere.example\r\n", h);
    free(h);
    return both;
}

static const struct auth_case auth_cases[] = {
    {"missing", "news/a", 401, no_headers},
    {"malformed", "news/a", 401, malformed},
    {"expired", "news/a", 401, expired},
    {"not_yet_valid", "news/a", 401, not_yet_valid},
    {"bad_signature", "news/a", 401, forged},
    {"wrong_algorithm", "news/a", 401, alg_none},
    {"topic", "sports", 403, valid},
    {"origin", "news/a", 403, valid_from_elsewhere},
};

START_TEST(test_counters_auth_refused)
{
    const struct auth_case *k = &auth_cases[_i];
    settle();
    char *before = lg_metrics_scrape(srv.control_port), path[64];
    char *headers = k->headers();
    snprintf(path, sizeof path, "/poll?topic=%s&timeout=0", k->topic);
    struct lg_http_response r;
    ck_assert_int_eq(lg_http_request(srv.public_port, "GET", path, headers, NULL, 0, &r, WAIT_MS),
                     0);
    ck_assert_msg(r.status == k->status, "%s: %d %s", k->reason, r.status, r.body);
    lg_http_response_free(&r);
    free(headers);
    settle();
    char *after = lg_metrics_scrape(srv.control_port);
    lg_metrics_expect_rise(before, after, AUTH, "reason", k->reason, 1);
    lg_metrics_expect_rise(before, after, CLOSED, "reason", "policy", 1);
    free(before);
    free(after);
}
END_TEST

/* Close reasons: the scrape before, the close, then its series and its siblings. */
static char *before_close(void)
{
    settle();
    return lg_metrics_scrape(srv.control_port);
}

static void expect_closed(char *before, const char *reason)
{
    settle();
    char *after = lg_metrics_scrape(srv.control_port);
    lg_metrics_expect_rise(before, after, CLOSED, "reason", reason, 1);
    free(before);
    free(after);
}

START_TEST(test_counters_closed_by_client)
{
    char *before = before_close();
    struct lg_sse_client c;
    lg_sse_must_open(&c, srv.public_port, "/sse?topic=open/a", NULL);
    ck_assert(lg_wait_stat(srv.control_port, "clients_sse", 1, WAIT_MS));
    lg_sse_close(&c);
    expect_closed(before, "client");
}
END_TEST

START_TEST(test_counters_closed_by_error_answer)
{
    char *before = before_close();
    struct lg_http_response r;
    ck_assert_int_eq(lg_http_request(srv.public_port, "GET", "/poll?topic=bad%20name&timeout=0",
                                     NULL, NULL, 0, &r, WAIT_MS), 0);
    ck_assert_int_eq(r.status / 100, 4);
    ck_assert_int_ne(r.status, 401);
    ck_assert_int_ne(r.status, 403);
    lg_http_response_free(&r);
    expect_closed(before, "error");
}
END_TEST

/* The id of the only client the admin API lists. */
static void only_client_id(char *id, size_t cap)
{
    struct lg_http_response r;
    ck_assert_int_eq(lg_http_request(srv.control_port, "GET", "/v1/clients", NULL, NULL, 0, &r,
                                     WAIT_MS), 0);
    ck_assert_int_eq(r.status, 200);
    json_t *root = json_loads(r.body, 0, NULL);
    json_t *clients = json_object_get(root, "clients");
    ck_assert_msg(json_array_size(clients) == 1, "%s", r.body);
    json_t *cid = json_object_get(json_array_get(clients, 0), "id");
    ck_assert_msg(json_is_string(cid) || json_is_integer(cid), "%s", r.body);
    if (json_is_string(cid))
        snprintf(id, cap, "%s", json_string_value(cid));
    else
        snprintf(id, cap, "%lld", (long long)json_integer_value(cid));
    json_decref(root);
    lg_http_response_free(&r);
}

START_TEST(test_counters_closed_by_admin)
{
    char *before = before_close();
    struct lg_sse_client c;
    lg_sse_must_open(&c, srv.public_port, "/sse?topic=open/k", NULL);
    ck_assert(lg_wait_stat(srv.control_port, "clients_sse", 1, WAIT_MS));
    char id[64], path[128];
    only_client_id(id, sizeof id);
    snprintf(path, sizeof path, "/v1/clients/%s", id);
    struct lg_http_response r;
    ck_assert_int_eq(lg_http_request(srv.control_port, "DELETE", path, NULL, NULL, 0, &r, WAIT_MS),
                     0);
    ck_assert_msg(r.status == 200, "%d %s", r.status, r.body);
    lg_http_response_free(&r);
    ck_assert(lg_sse_wait_eof(&c, WAIT_MS));
    lg_sse_close(&c);
    expect_closed(before, "admin");
}
END_TEST

/* A subscriber that stops reading on a disconnect topic, then reads its notice and the end. */
START_TEST(test_counters_closed_slow_consumer)
{
    char *before = before_close();
    int fd = lg_stall_sse_open(srv.public_port, "/sse?topic=open/slow", NULL, 4096);
    ck_assert_int_ge(fd, 0);
    ck_assert(lg_wait_stat(srv.control_port, "clients_sse", 1, WAIT_MS));
    static char data[16385];
    memset(data, 's', sizeof data - 1);
    long long slow = lg_stat(srv.control_port, "clients_disconnected_slow");
    for (int i = 0; i < 400 && lg_stat(srv.control_port, "clients_disconnected_slow") == slow; i++)
        ck_assert_int_eq(lg_publish(srv.control_port, "open/slow", data, NULL, 0), 201);
    ck_assert_int_eq(lg_stat(srv.control_port, "clients_disconnected_slow"), slow + 1);
    struct lg_sse_client c;
    ck_assert_int_eq(lg_stall_sse_resume(&c, fd, WAIT_MS), 0);
    ck_assert(lg_sse_wait_eof(&c, WAIT_MS));
    lg_sse_close(&c);
    expect_closed(before, "slow_consumer");
}
END_TEST

/* During a drain held open by a subscriber that does not read, a reading one is ended: one close
 * counted as drain while the gateway still answers /metrics. */
START_TEST(test_counters_closed_by_drain)
{
    struct lg_server s;
    lg_server_must_start(&s, "{\"drain_timeout_ms\":8000}");
    struct lg_sse_client stalled, reading;
    lg_sse_must_open(&stalled, s.public_port, "/sse?topic=full", NULL);
    lg_sse_must_open(&reading, s.public_port, "/sse?topic=calm", NULL);
    size_t n = 60000;
    char *data = malloc(n + 1);
    memset(data, 'z', n);
    data[n] = '\0';
    for (int i = 0; i < 60; i++)
        ck_assert_int_eq(lg_publish(s.control_port, "full", data, NULL, 0), 201);
    free(data);
    ck_assert(lg_stat_wait(s.control_port, "events_dropped_overflow", 1, 1, WAIT_MS) >= 1);
    char *before = lg_metrics_scrape(s.control_port);
    ck_assert_int_eq(kill(s.pid, SIGTERM), 0);
    ck_assert(lg_sse_wait_eof(&reading, WAIT_MS));
    ck_assert(lg_metric_wait(s.control_port, CLOSED "{reason=\"drain\"}",
                             lg_metrics_value(before, CLOSED "{reason=\"drain\"}") + 1, WAIT_MS));
    char *after = lg_metrics_scrape(s.control_port);
    lg_metrics_expect_rise(before, after, CLOSED, "reason", "drain", 1);
    free(before);
    free(after);
    lg_sse_close(&reading);
    lg_sse_close(&stalled);
    lg_server_must_stop(&s);
}
END_TEST

static Suite *counters_suite(void)
{
    Suite *s = suite_create("counters");
    TCase *auth = tcase_create("auth"); /* a server per test (checked fixtures) */
    tcase_set_timeout(auth, 60);
    tcase_add_checked_fixture(auth, auth_server_setup, server_teardown);
    tcase_add_loop_test(auth, test_counters_auth_refused, 0,
                        (int)(sizeof auth_cases / sizeof auth_cases[0]));
    suite_add_tcase(s, auth);
    TCase *tc = tcase_create("closed");
    tcase_set_timeout(tc, 60);
    tcase_add_checked_fixture(tc, open_server_setup, server_teardown);
    tcase_add_test(tc, test_counters_closed_by_client);
    tcase_add_test(tc, test_counters_closed_by_error_answer);
    tcase_add_test(tc, test_counters_closed_by_admin);
    tcase_add_test(tc, test_counters_closed_slow_consumer);
    suite_add_tcase(s, tc);
    TCase *drain = tcase_create("drain");
    tcase_set_timeout(drain, 60);
    tcase_add_test(drain, test_counters_closed_by_drain);
    suite_add_tcase(s, drain);
    return s;
}

LG_CHECK_MAIN(counters_suite)
