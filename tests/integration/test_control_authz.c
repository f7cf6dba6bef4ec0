/*
 * test_control_authz.c - who may use which control route (docs/security.md, "The control port",
 * whose table this test is): every route of the control port x every credential (none, the
 * control token, a subscribe-only token minted by scripts/mint_token.sh, a publish token for
 * the topic, one for another topic, an expired one, a forged one), under the four setups (no
 * auth, a key alone, a key and a control token, a control token alone). Each cell's status and
 * error code are exact; a refused publish publishes nothing and a refused delete deletes
 * nothing. The route table itself (control.c) is walked: each route states its access, and a
 * route the table gains without a row here fails the test.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "control_internal.h"
#include "lg_test.h"
#include "support/lg_token.h"

#include "check_main.h"

#define WAIT_MS 5000
#define SECRET "authz-secret"
#define CONTROL "ctl-token"
#define HS "{\"alg\":\"HS256\",\"typ\":\"JWT\"}"
#define PUBLISH_NEWS "{\"publish\":[\"news/*\"]}"

enum setup { S_OPEN, S_KEY, S_KEY_CONTROL, S_CONTROL, S_COUNT };
static const char *const setup_name[S_COUNT] = {"no auth", "key only", "key + control token",
                                                 "control token only"};
static const char *const setup_config[S_COUNT] = {
    "{}",
    "{\"auth\":{\"hs256_secret\":\"" SECRET "\"}}",
    "{\"auth\":{\"hs256_secret\":\"" SECRET "\",\"control_token\":\"" CONTROL "\"}}",
    "{\"auth\":{\"control_token\":\"" CONTROL "\"}}",
};

enum cred { C_NONE, C_CONTROL, C_SUBSCRIBE, C_PUBLISH, C_PUBLISH_OTHER, C_EXPIRED, C_FORGED,
            C_COUNT };
static const char *const cred_name[C_COUNT] = {
    "no credential", "the control token", "a subscribe-only token", "a publish token for news/*",
    "a publish token for sports/*", "an expired publish token", "a forged publish token"};

/*
 * What each cell answers, by the route's access: NULL = served (the route's own answer),
 * else "STATUS code". docs/security.md has this table.
 */
#define SERVED_ALL {NULL, NULL, NULL, NULL, NULL, NULL, NULL}
static const char *const expected[S_COUNT][3][C_COUNT] = {
    [S_OPEN] = {SERVED_ALL, SERVED_ALL, SERVED_ALL},
    [S_KEY] =
        {
            SERVED_ALL, /* open */
            {"401 token_missing", "401 token_malformed", "403 forbidden", NULL, "403 forbidden",
             "401 token_expired", "401 token_bad_signature"}, /* publish */
            SERVED_ALL, /* admin: loopback-only, as without auth; credentials not looked at */
        },
    [S_KEY_CONTROL] =
        {
            SERVED_ALL,
            {"401 token_missing", NULL, "403 forbidden", NULL, "403 forbidden",
             "401 token_expired", "401 token_bad_signature"},
            {"401 token_missing", NULL, "403 control_token_required",
             "403 control_token_required", "403 control_token_required", "401 token_expired",
             "401 token_bad_signature"},
        },
    [S_CONTROL] =
        {
            SERVED_ALL,
            {"401 token_missing", NULL, "401 token_bad_signature", "401 token_bad_signature",
             "401 token_bad_signature", "401 token_bad_signature", "401 token_bad_signature"},
            {"401 token_missing", NULL, "401 token_bad_signature", "401 token_bad_signature",
             "401 token_bad_signature", "401 token_bad_signature", "401 token_bad_signature"},
        },
};

/* Every route of control.c's table, with a request that reaches it and its answer when served. */
static const struct route_case {
    enum lg_ctl_access access;
    const char *method, *prefix, *suffix; /* as in the table */
    const char *path, *body;
    int served;               /* status when served */
    const char *served_code;  /* its error code, when that status is an error */
    int published;            /* events a served request publishes */
    bool needs_topic;         /* news/a must exist first */
} routes[] = {
    {LG_CTL_PUBLISH, "POST", "/v1/topics/", "/events", "/v1/topics/news/a/events", "x", 201, NULL,
     1, false},
    {LG_CTL_PUBLISH, "POST", "/v1/publish", NULL, "/v1/publish",
     "[{\"topic\":\"news/a\",\"data\":\"1\"},{\"topic\":\"news/b\",\"data\":\"2\"}]", 200, NULL,
     2, false},
    {LG_CTL_OPEN, "GET", "/healthz", NULL, "/healthz", NULL, 200, NULL, 0, false},
    {LG_CTL_OPEN, "GET", "/readyz", NULL, "/readyz", NULL, 200, NULL, 0, false},
    {LG_CTL_ADMIN, "GET", "/v1/stats", NULL, "/v1/stats", NULL, 200, NULL, 0, false},
    {LG_CTL_ADMIN, "GET", "/metrics", NULL, "/metrics", NULL, 200, NULL, 0, false},
    {LG_CTL_ADMIN, "GET", "/v1/topics", NULL, "/v1/topics", NULL, 200, NULL, 0, false},
    {LG_CTL_ADMIN, "GET", "/v1/topics/", "", "/v1/topics/news/a", NULL, 200, NULL, 0, true},
    {LG_CTL_ADMIN, "GET", "/v1/topics/", "/events", "/v1/topics/news/a/events?limit=5", NULL,
     200, NULL, 0, true},
    {LG_CTL_ADMIN, "GET", "/v1/topics/", "/presence", "/v1/topics/news/a/presence", NULL, 404,
     "no_presence", 0, true},
    {LG_CTL_ADMIN, "DELETE", "/v1/topics/", "", "/v1/topics/news/a", NULL, 200, NULL, 0, true},
    {LG_CTL_ADMIN, "GET", "/v1/clients", NULL, "/v1/clients", NULL, 200, NULL, 0, false},
    {LG_CTL_ADMIN, "DELETE", "/v1/clients/", "", "/v1/clients/999999", NULL, 404, "not_found", 0,
     false},
};
#define ROUTE_COUNT (sizeof routes / sizeof routes[0])

static char *tokens[C_COUNT]; /* the bearer of each credential (NULL: none) */

/* The subscribe-only token as the reporter minted it: scripts/mint_token.sh -S. */
static char *minted_subscribe_only(void)
{
    char cmd[512], line[2048] = "";
    snprintf(cmd, sizeof cmd, "%s/scripts/mint_token.sh -s " SECRET " -S 'news/*' -t 600",
             getenv("LG_SOURCE_DIR") ? getenv("LG_SOURCE_DIR") : ".");
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    ck_assert_ptr_nonnull(fgets(line, sizeof line, p));
    ck_assert_int_eq(pclose(p), 0);
    line[strcspn(line, "\n")] = '\0';
    return strdup(line);
}

static void mint_tokens(void)
{
    char *claims = lg_token_claims(3600, NULL, PUBLISH_NEWS);
    tokens[C_NONE] = NULL;
    tokens[C_CONTROL] = strdup(CONTROL);
    tokens[C_SUBSCRIBE] = minted_subscribe_only();
    tokens[C_PUBLISH] = lg_token_libjwt(SECRET, NULL, 3600, PUBLISH_NEWS);
    tokens[C_PUBLISH_OTHER] = lg_token_libjwt(SECRET, NULL, 3600, "{\"publish\":[\"sports/*\"]}");
    tokens[C_EXPIRED] = lg_token_libjwt(SECRET, NULL, -600, PUBLISH_NEWS);
    tokens[C_FORGED] = lg_token_raw(HS, claims, LG_SIGN_FORGED, NULL, NULL);
    free(claims);
}

static void free_tokens(void)
{
    for (int i = 0; i < C_COUNT; i++)
        free(tokens[i]);
}

/* method path [body] with credential c; the answer in *r. */
static void request(uint16_t port, const char *method, const char *path, const char *body,
                    enum cred c, struct lg_http_response *r)
{
    char headers[3000] = "";
    if (tokens[c])
        snprintf(headers, sizeof headers, "Authorization: Bearer %s\r\n", tokens[c]);
    ck_assert_int_eq(lg_http_request(port, method, path, headers, body, body ? strlen(body) : 0,
                                     r, WAIT_MS), 0);
}

/* The credential that may do everything under setup s. */
static enum cred admin_cred(enum setup s)
{
    return s == S_KEY_CONTROL || s == S_CONTROL ? C_CONTROL : C_NONE;
}

/* Counter name of GET /v1/stats, read with the credential that may under setup s. */
static long long stat(uint16_t port, enum setup s, const char *name)
{
    struct lg_http_response r;
    request(port, "GET", "/v1/stats", NULL, admin_cred(s), &r);
    ck_assert_int_eq(r.status, 200);
    json_t *o = json_loads(r.body, 0, NULL);
    ck_assert_ptr_nonnull(o);
    json_t *v = json_object_get(o, name);
    ck_assert_msg(json_is_integer(v), "no %s in %s", name, r.body);
    long long n = json_integer_value(v);
    json_decref(o);
    lg_http_response_free(&r);
    return n;
}

/* news/a exists (published to with a credential that may, under s). */
static void ensure_topic(uint16_t port, enum setup s)
{
    struct lg_http_response r;
    request(port, "POST", "/v1/topics/news/a/events", "seed",
            s == S_KEY ? C_PUBLISH : admin_cred(s), &r);
    ck_assert_msg(r.status == 201, "seeding news/a: %d %s", r.status, r.body);
    lg_http_response_free(&r);
}

static void expect_cell(enum setup s, const struct route_case *rc, enum cred c,
                        const struct lg_http_response *r)
{
    char what[256];
    snprintf(what, sizeof what, "%s, %s %s with %s", setup_name[s], rc->method, rc->path,
             cred_name[c]);
    const char *want = expected[s][rc->access - LG_CTL_OPEN][c];
    if (want == NULL && rc->served_code == NULL) {
        ck_assert_msg(r->status == rc->served, "%s: %d %s (want %d)", what, r->status, r->body,
                      rc->served);
        return;
    }
    int status = want ? atoi(want) : rc->served;
    const char *code = want ? strchr(want, ' ') + 1 : rc->served_code;
    lg_expect_error_named(what, r, status, code, 0);
    char challenge[256] = "";
    bool has = lg_http_header(r, "WWW-Authenticate", challenge, sizeof challenge);
    if (status == 401)
        ck_assert_msg(has, "%s: 401 without WWW-Authenticate", what);
    if (want && strcmp(code, "control_token_required") == 0)
        ck_assert_msg(has && strstr(challenge, "error=\"insufficient_scope\""),
                      "%s: WWW-Authenticate \"%s\"", what, challenge);
}

static void run_setup(enum setup s)
{
    struct lg_server srv;
    lg_server_must_start(&srv, setup_config[s]);
    long long scope_refusals = 0; /* cells answered 403 control_token_required */
    for (size_t i = 0; i < ROUTE_COUNT; i++) {
        const struct route_case *rc = &routes[i];
        for (int c = 0; c < C_COUNT; c++) {
            const char *want = expected[s][rc->access - LG_CTL_OPEN][c];
            scope_refusals += want && strcmp(want, "403 control_token_required") == 0;
            if (rc->needs_topic)
                ensure_topic(srv.control_port, s);
            long long before = stat(srv.control_port, s, "events_published");
            struct lg_http_response r;
            request(srv.control_port, rc->method, rc->path, rc->body, (enum cred)c, &r);
            expect_cell(s, rc, (enum cred)c, &r);
            bool served = want == NULL;
            lg_http_response_free(&r);
            /* a refused publish published nothing; a served one all its events */
            long long after = stat(srv.control_port, s, "events_published");
            ck_assert_msg(after - before == (served ? rc->published : 0),
                          "%s, %s %s with %s: %lld events published", setup_name[s], rc->method,
                          rc->path, cred_name[c], after - before);
            /* a refused delete deleted nothing */
            if (strcmp(rc->method, "DELETE") == 0 && rc->needs_topic && !served) {
                request(srv.control_port, "GET", rc->path, NULL, admin_cred(s), &r);
                ck_assert_msg(r.status == 200, "%s: refused delete with %s: topic gone (%d)",
                              setup_name[s], cred_name[c], r.status);
                lg_http_response_free(&r);
            }
        }
    }
    /* each of them counted once, under its own reason */
    ck_assert_int_eq(stat(srv.control_port, s, "auth_refused_control_token"), scope_refusals);
    lg_server_must_stop(&srv);
}

START_TEST(test_control_authz_table)
{
    mint_tokens();
    run_setup((enum setup)_i);
    free_tokens();
}
END_TEST

static bool same(const char *a, const char *b)
{
    return (a == NULL && b == NULL) || (a && b && strcmp(a, b) == 0);
}

/* Every route of the real table has a row above with the same access, and every row a route:
 * a route added without its access, or without a row here, fails. */
START_TEST(test_control_route_table_walked)
{
    char err[256];
    ck_assert_msg(lg_ctl_routes_check(err, sizeof err) == 0, "%s", err);
    size_t n;
    const struct lg_ctl_route *table = lg_ctl_routes(&n);
    ck_assert_uint_eq(n, ROUTE_COUNT);
    for (size_t i = 0; i < n; i++) {
        const struct route_case *row = NULL;
        for (size_t k = 0; k < ROUTE_COUNT && !row; k++)
            if (same(table[i].method, routes[k].method) &&
                same(table[i].prefix, routes[k].prefix) && same(table[i].suffix, routes[k].suffix))
                row = &routes[k];
        ck_assert_msg(row, "route %s %s%s has no row in this test", table[i].method,
                      table[i].prefix, table[i].suffix ? "{...}" : "");
        ck_assert_msg(row->access == table[i].access, "route %s %s: access %d, the test says %d",
                      table[i].method, table[i].prefix, table[i].access, row->access);
    }
}
END_TEST

static Suite *authz_suite(void)
{
    Suite *s = suite_create("control_authz");
    TCase *tc = tcase_create("table");
    tcase_add_loop_test(tc, test_control_authz_table, 0, S_COUNT);
    tcase_add_test(tc, test_control_route_table_walked);
    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
    return s;
}

LG_CHECK_MAIN(authz_suite)
