/*
 * test_authorization.c - authorization over real sockets (docs/security.md), table-driven: every token
 * kind (valid, missing, malformed, expired, not yet valid, forged, alg "none", the wrong
 * algorithm, algorithm confusion) from every source (header, access_token, cookie, the
 * WebSocket's first message) on every transport (SSE, long-poll, WebSocket), topics inside
 * and outside the claims and anonymous_subscribe; tokens expiring mid-stream on SSE, WebSocket
 * (with and without refresh) and a held poll; allowed, unlisted and absent origins for the
 * WebSocket upgrade and for CORS with its preflight; the control port's token, publish claims
 * and its refusal to start off loopback without a control token. Through the HTTP table a
 * healthy subscriber receives every event published between the rows, in order.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lg_test.h"
#include "support/lg_token.h"

#include "check_main.h"

#define WAIT_MS 5000
#define SECRET "it-secret"
#define HS "{\"alg\":\"HS256\",\"typ\":\"JWT\"}"
#define RS "{\"alg\":\"RS256\",\"typ\":\"JWT\"}"
#define NEWS "{\"subscribe\":[\"news/*\"],\"publish\":[\"*\"]}"
#define ORIGIN "https://app.example"

/* Server A: HS256, anonymous demo/..., one allowed origin, no control token (stats stay readable
 * on loopback; publishing takes a token with a publish claim). */
#define CONFIG_A                                                                                   \
    "{\"auth\":{\"hs256_secret\":\"" SECRET "\",\"anonymous_subscribe\":[\"demo/*\"]},"        \
    "\"allowed_origins\":[\"" ORIGIN "\"],\"sse\":{\"heartbeat_ms\":60000}}"

static struct lg_server srv;
static char publisher[2048]; /* a token that may publish anywhere */

enum kind {
    T_NONE, T_VALID, T_SHORT, T_EXPIRED, T_NBF, T_FORGED, T_ALG_NONE, T_RS_ON_HS, T_MALFORMED,
    T_BASIC, T_SCRIPT,
};

static EVP_PKEY *other_rsa;

/* A token of kind k (NULL for T_NONE), malloc'd. */
static char *token(enum kind k)
{
    long far = 3600;
    char *claims = lg_token_claims(3600, NULL, NEWS), *t = NULL;
    switch (k) {
    case T_NONE: break;
    case T_VALID: t = lg_token_libjwt(SECRET, NULL, 3600, NEWS); break;
    case T_SHORT: t = lg_token_libjwt(SECRET, NULL, 2, NEWS); break;
    case T_EXPIRED: t = lg_token_libjwt(SECRET, NULL, -30, NEWS); break;
    case T_NBF:
        free(claims);
        claims = lg_token_claims(7200, &far, NEWS);
        t = lg_token_raw(HS, claims, LG_SIGN_HMAC, SECRET, NULL);
        break;
    case T_FORGED: t = lg_token_raw(HS, claims, LG_SIGN_FORGED, NULL, NULL); break;
    case T_ALG_NONE: t = lg_token_raw("{\"alg\":\"none\"}", claims, LG_SIGN_NONE, NULL, NULL); break;
    case T_RS_ON_HS: t = lg_token_raw(RS, claims, LG_SIGN_RSA, NULL, other_rsa); break;
    case T_MALFORMED: t = strdup("not.a.token"); break;
    case T_BASIC: t = strdup("Basic dXNlcjpwYXNz"); break;
    case T_SCRIPT: {
        /* the one-line command of docs/security.md */
        char cmd[512];
        snprintf(cmd, sizeof cmd, "%s/scripts/mint_token.sh -s " SECRET " -S 'news/*' -t 600",
                 getenv("LG_SOURCE_DIR") ? getenv("LG_SOURCE_DIR") : ".");
        FILE *p = popen(cmd, "r");
        char line[2048] = "";
        ck_assert_ptr_nonnull(p);
        ck_assert_ptr_nonnull(fgets(line, sizeof line, p));
        ck_assert_int_eq(pclose(p), 0);
        line[strcspn(line, "\n")] = '\0';
        t = strdup(line);
        break;
    }
    }
    free(claims);
    return t;
}

static void setup(void)
{
    other_rsa = EVP_RSA_gen(2048);
    lg_server_must_start(&srv, CONFIG_A);
    char *t = lg_token_libjwt(SECRET, NULL, 3600, "{\"publish\":[\"*\"]}");
    snprintf(publisher, sizeof publisher, "%s", t);
    free(t);
}

static void teardown(void)
{
    lg_server_must_stop(&srv);
    EVP_PKEY_free(other_rsa);
}

/* POST one event with the publisher token; it must be accepted. */
static void publish(uint16_t cport, const char *auth_header, const char *topic, const char *data)
{
    char path[256], headers[2200];
    snprintf(path, sizeof path, "/v1/topics/%s/events", topic);
    snprintf(headers, sizeof headers, "Authorization: Bearer %s\r\n", auth_header);
    struct lg_http_response r;
    ck_assert_int_eq(lg_http_request(cport, "POST", path, headers, data, strlen(data), &r, WAIT_MS),
                     0);
    ck_assert_msg(r.status == 201, "publish to %s: %d %s", topic, r.status, r.body);
    lg_http_response_free(&r);
}

/* ---- SSE and long-poll: the table ---------------------------------------------------------- */

enum source { S_HEADER, S_QUERY, S_COOKIE };
enum origin { O_ABSENT, O_ALLOWED, O_UNLISTED };

/* How a request is answered: 200, or refused with its status, error and challenge. */
enum answer {
    A_OK,
    A_MISSING,
    A_MALFORMED,
    A_EXPIRED,
    A_NOT_YET_VALID,
    A_BAD_SIGNATURE,
    A_WRONG_ALGORITHM,
    A_FORBIDDEN,
    A_ORIGIN
};

static const struct expected {
    int status;
    const char *code;      /* the error of a refusal */
    const char *challenge; /* a substring of WWW-Authenticate, or NULL: none */
} answers[] = {
    [A_OK] = {200, NULL, NULL},
    [A_MISSING] = {401, "token_missing", "error=\"invalid_request\""},
    [A_MALFORMED] = {401, "token_malformed", "error=\"invalid_token\""},
    [A_EXPIRED] = {401, "token_expired", "error_description=\"token expired\""},
    [A_NOT_YET_VALID] = {401, "token_not_yet_valid", "error=\"invalid_token\""},
    [A_BAD_SIGNATURE] = {401, "token_bad_signature", "error=\"invalid_token\""},
    [A_WRONG_ALGORITHM] = {401, "token_wrong_algorithm", "error=\"invalid_token\""},
    [A_FORBIDDEN] = {403, "forbidden", "error=\"insufficient_scope\""},
    [A_ORIGIN] = {403, "origin_not_allowed", NULL},
};

static const struct http_case {
    const char *what;
    enum kind kind;
    enum source source;
    const char *topics; /* query: "topic=..&topic=.." */
    enum origin origin;
    enum answer answer;
} http_cases[] = {
    {"valid, header", T_VALID, S_HEADER, "topic=news/a", O_ABSENT, A_OK},
    {"valid, access_token", T_VALID, S_QUERY, "topic=news/a", O_ABSENT, A_OK},
    {"valid, cookie", T_VALID, S_COOKIE, "topic=news/a", O_ABSENT, A_OK},
    {"mint_token.sh, access_token", T_SCRIPT, S_QUERY, "topic=news/a", O_ABSENT, A_OK},
    {"missing", T_NONE, S_HEADER, "topic=news/a", O_ABSENT, A_MISSING},
    {"missing, anonymous topic", T_NONE, S_HEADER, "topic=demo/x", O_ABSENT, A_OK},
    {"malformed, header", T_MALFORMED, S_HEADER, "topic=news/a", O_ABSENT, A_MALFORMED},
    {"malformed, cookie", T_MALFORMED, S_COOKIE, "topic=news/a", O_ABSENT, A_MALFORMED},
    {"Basic credentials", T_BASIC, S_HEADER, "topic=news/a", O_ABSENT, A_MALFORMED},
    {"expired", T_EXPIRED, S_HEADER, "topic=news/a", O_ABSENT, A_EXPIRED},
    {"expired, query", T_EXPIRED, S_QUERY, "topic=news/a", O_ABSENT, A_EXPIRED},
    {"not yet valid", T_NBF, S_HEADER, "topic=news/a", O_ABSENT, A_NOT_YET_VALID},
    {"forged signature", T_FORGED, S_HEADER, "topic=news/a", O_ABSENT, A_BAD_SIGNATURE},
    {"alg none", T_ALG_NONE, S_HEADER, "topic=news/a", O_ABSENT, A_WRONG_ALGORITHM},
    {"RS256 on an HS256 gateway", T_RS_ON_HS, S_COOKIE, "topic=news/a", O_ABSENT,
     A_WRONG_ALGORITHM},
    {"topic outside the claims", T_VALID, S_HEADER, "topic=sports", O_ABSENT, A_FORBIDDEN},
    {"one of two topics outside", T_VALID, S_QUERY, "topic=news/a&topic=sports", O_ABSENT,
     A_FORBIDDEN},
    {"allowed origin", T_VALID, S_COOKIE, "topic=news/a", O_ALLOWED, A_OK},
    {"unlisted origin", T_VALID, S_COOKIE, "topic=news/a", O_UNLISTED, A_ORIGIN},
};

/* The request's path and headers for case c on transport path ("/sse" or "/poll"). */
static void build(const struct http_case *hc, const char *tok, const char *endpoint, char *path,
                  size_t path_cap, char *headers, size_t headers_cap)
{
    bool poll = strcmp(endpoint, "/poll") == 0;
    snprintf(path, path_cap, "%s?%s%s%s%s", endpoint, hc->topics, poll ? "&timeout=0" : "",
             tok && hc->source == S_QUERY ? "&access_token=" : "",
             tok && hc->source == S_QUERY ? tok : "");
    size_t n = 0;
    headers[0] = '\0';
    if (tok && hc->source == S_HEADER)
        n += (size_t)snprintf(headers + n, headers_cap - n, "Authorization: %s%s\r\n",
                              hc->kind == T_BASIC ? "" : "Bearer ", tok);
    if (tok && hc->source == S_COOKIE)
        n += (size_t)snprintf(headers + n, headers_cap - n, "Cookie: a=b; livegate_token=%s\r\n",
                              tok);
    if (hc->origin != O_ABSENT)
        snprintf(headers + n, headers_cap - n, "Origin: %s\r\n",
                 hc->origin == O_ALLOWED ? ORIGIN : "https://evil.example");
}

/* The CORS headers of an answer: present exactly for the allowed origin. */
static void expect_cors(const char *what, const char *head, enum origin o)
{
    bool acao = strstr(head, "Access-Control-Allow-Origin: " ORIGIN "\r\n") != NULL;
    bool creds = strstr(head, "Access-Control-Allow-Credentials: true\r\n") != NULL;
    ck_assert_msg(acao == (o == O_ALLOWED) && creds == (o == O_ALLOWED),
                  "%s: CORS headers %s expected:\n%s", what, o == O_ALLOWED ? "" : "not", head);
}

static void run_http_case(const struct http_case *hc, const char *endpoint)
{
    const struct expected *want = &answers[hc->answer];
    char what[160], path[3000], headers[3000];
    snprintf(what, sizeof what, "%s %s", endpoint, hc->what);
    char *tok = token(hc->kind);
    build(hc, tok, endpoint, path, sizeof path, headers, sizeof headers);
    if (want->status == 200 && strcmp(endpoint, "/sse") == 0) {
        struct lg_sse_client c;
        lg_sse_must_open(&c, srv.public_port, path, headers);
        expect_cors(what, c.headers, hc->origin);
        lg_sse_close(&c);
    } else {
        struct lg_http_response r;
        ck_assert_int_eq(lg_http_request(srv.public_port, "GET", path, headers, NULL, 0, &r,
                                         WAIT_MS), 0);
        if (want->status == 200) {
            ck_assert_msg(r.status == 200, "%s: %d %s", what, r.status, r.body);
            ck_assert_msg(strncmp(r.body, "{\"events\":[", 11) == 0, "%s: %s", what, r.body);
        } else {
            lg_expect_error_named(what, &r, want->status, want->code,
                                  LG_ERROR_JSON_TYPE | LG_ERROR_ONLY_KEYS);
        }
        char challenge[512] = "";
        bool has = lg_http_header(&r, "WWW-Authenticate", challenge, sizeof challenge);
        ck_assert_msg(has == (want->challenge != NULL), "%s: WWW-Authenticate %s", what, challenge);
        if (want->challenge)
            ck_assert_msg(strstr(challenge, want->challenge) && strstr(challenge, "Bearer "),
                          "%s: WWW-Authenticate: %s", what, challenge);
        if (tok && hc->kind != T_SCRIPT && strlen(tok) > 20)
            ck_assert_msg(!strstr(r.body, tok), "%s: the answer quotes the token", what);
        expect_cors(what, r.headers, hc->origin);
        lg_http_response_free(&r);
    }
    free(tok);
}

START_TEST(test_http_table)
{
    struct lg_sse_client healthy;
    char *tok = token(T_VALID), headers[2200];
    snprintf(headers, sizeof headers, "Authorization: Bearer %s\r\n", tok);
    lg_sse_must_open(&healthy, srv.public_port, "/sse?topic=news/healthy", headers);
    free(tok);
    long long refused_before = lg_server_stat(&srv, "auth_refused_expired");
    int n = 0;
    size_t count = sizeof http_cases / sizeof http_cases[0];
    for (size_t i = 0; i < count; i++) {
        run_http_case(&http_cases[i], "/sse");
        run_http_case(&http_cases[i], "/poll");
        char data[16];
        snprintf(data, sizeof data, "e%d", ++n);
        publish(srv.control_port, publisher, "news/healthy", data);
    }
    for (int i = 1; i <= n; i++) {
        struct lg_sse_event ev;
        char want[16];
        snprintf(want, sizeof want, "e%d", i);
        ck_assert_int_eq(lg_sse_next(&healthy, &ev, WAIT_MS), 1);
        ck_assert_str_eq(ev.data, want);
        lg_sse_event_free(&ev);
    }
    lg_sse_close(&healthy);
    /* two expired rows on two transports */
    ck_assert_int_eq(lg_server_stat(&srv, "auth_refused_expired") - refused_before, 4);
    ck_assert_int_ge(lg_server_stat(&srv, "auth_refused_origin"), 2);
    ck_assert_int_ge(lg_server_stat(&srv, "auth_refused_topic"), 4);
    /* no token in the log */
    lg_server_pump_log(&srv);
    ck_assert_msg(!strstr(srv.log, "eyJ"), "a token reached the log:\n%s", srv.log);
}
END_TEST

/* The CORS preflight: 204 with the headers for the allowed origin, 403 otherwise. */
START_TEST(test_preflight)
{
    static const struct {
        const char *path, *origin;
        int status;
    } rows[] = {
        {"/sse", ORIGIN, 204}, {"/poll", ORIGIN, 204}, {"/sse", "https://evil.example", 403},
        {"/poll", NULL, 403},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        char headers[256] = "Access-Control-Request-Method: GET\r\n"
                            "Access-Control-Request-Headers: authorization\r\n";
        if (rows[i].origin)
            snprintf(headers + strlen(headers), sizeof headers - strlen(headers),
                     "Origin: %s\r\n", rows[i].origin);
        struct lg_http_response r;
        ck_assert_int_eq(lg_http_request(srv.public_port, "OPTIONS", rows[i].path, headers, NULL,
                                         0, &r, WAIT_MS), 0);
        ck_assert_msg(r.status == rows[i].status, "%s %s: %d", rows[i].path, rows[i].origin,
                      r.status);
        if (r.status == 204) {
            ck_assert(strstr(r.headers, "Access-Control-Allow-Origin: " ORIGIN "\r\n"));
            ck_assert(strstr(r.headers, "Access-Control-Allow-Credentials: true\r\n"));
            ck_assert(strstr(r.headers, "Access-Control-Allow-Methods: GET, OPTIONS\r\n"));
            ck_assert(strstr(r.headers, "Access-Control-Allow-Headers: Authorization, "
                                        "Last-Event-ID\r\n"));
            ck_assert(strstr(r.headers, "Vary: Origin\r\n"));
        } else {
            lg_expect_error(&r, 403, "origin_not_allowed", LG_ERROR_ONLY_KEYS);
        }
        lg_http_response_free(&r);
    }
}
END_TEST

/* ---- WebSocket: the table ------------------------------------------------------------------ */

enum ws_outcome { W_SUBSCRIBED, W_ERROR, W_CLOSED, W_REFUSED };

static const struct ws_case {
    const char *what;
    enum kind kind;
    int source; /* enum source, or 3: the first message */
    const char *topic;
    enum origin origin;
    enum ws_outcome outcome;
    const char *code; /* error code, close reason, or refusal code */
} ws_cases[] = {
    {"valid, header", T_VALID, S_HEADER, "news/a", O_ABSENT, W_SUBSCRIBED, NULL},
    {"valid, access_token", T_VALID, S_QUERY, "news/a", O_ABSENT, W_SUBSCRIBED, NULL},
    {"valid, cookie", T_VALID, S_COOKIE, "news/a", O_ABSENT, W_SUBSCRIBED, NULL},
    {"valid, first message", T_VALID, 3, "news/a", O_ABSENT, W_SUBSCRIBED, NULL},
    {"missing, anonymous topic", T_NONE, S_HEADER, "demo/x", O_ABSENT, W_SUBSCRIBED, NULL},
    {"missing", T_NONE, S_HEADER, "news/a", O_ABSENT, W_ERROR, "token_missing"},
    {"outside the claims", T_VALID, S_HEADER, "sports", O_ABSENT, W_ERROR, "forbidden"},
    {"first message expired", T_EXPIRED, 3, "news/a", O_ABSENT, W_ERROR, "token_expired"},
    {"first message alg none", T_ALG_NONE, 3, "news/a", O_ABSENT, W_ERROR,
     "token_wrong_algorithm"},
    {"expired", T_EXPIRED, S_HEADER, "news/a", O_ABSENT, W_CLOSED, "token_expired"},
    {"not yet valid", T_NBF, S_QUERY, "news/a", O_ABSENT, W_CLOSED, "token_not_yet_valid"},
    {"malformed", T_MALFORMED, S_COOKIE, "news/a", O_ABSENT, W_CLOSED, "token_malformed"},
    {"forged", T_FORGED, S_HEADER, "news/a", O_ABSENT, W_CLOSED, "token_bad_signature"},
    {"alg none", T_ALG_NONE, S_HEADER, "news/a", O_ABSENT, W_CLOSED, "token_wrong_algorithm"},
    {"RS256 on an HS256 gateway", T_RS_ON_HS, S_HEADER, "news/a", O_ABSENT, W_CLOSED,
     "token_wrong_algorithm"},
    {"allowed origin", T_VALID, S_COOKIE, "news/a", O_ALLOWED, W_SUBSCRIBED, NULL},
    {"unlisted origin", T_VALID, S_COOKIE, "news/a", O_UNLISTED, W_REFUSED, NULL},
};

/* The next message must be JSON with "type" type (and "code" code when not NULL). */
static void expect_message(struct lg_ws_client *c, const char *what, const char *type,
                           const char *code)
{
    char *msg = NULL;
    ck_assert_msg(lg_ws_next(c, &msg, WAIT_MS) == 1, "%s: no message (close %d %s)", what,
                  c->close_code, c->close_reason);
    char want[96];
    snprintf(want, sizeof want, "\"type\":\"%s\"", type);
    ck_assert_msg(strstr(msg, want), "%s: %s", what, msg);
    if (code) {
        snprintf(want, sizeof want, "\"code\":\"%s\"", code);
        ck_assert_msg(strstr(msg, want), "%s: %s", what, msg);
    }
    free(msg);
}

START_TEST(test_ws_table)
{
    const struct ws_case *wc = &ws_cases[_i];
    char *tok = token(wc->kind);
    char path[2600], headers[2600] = "", msg[2600];
    bool first_message = wc->source == 3;
    snprintf(path, sizeof path, "/ws%s%s", tok && wc->source == S_QUERY ? "?access_token=" : "",
             tok && wc->source == S_QUERY ? tok : "");
    if (tok && wc->source == S_HEADER)
        snprintf(headers, sizeof headers, "Authorization: Bearer %s\r\n", tok);
    if (tok && wc->source == S_COOKIE)
        snprintf(headers, sizeof headers, "Cookie: livegate_token=%s\r\n", tok);
    if (wc->origin != O_ABSENT)
        snprintf(headers + strlen(headers), sizeof headers - strlen(headers), "Origin: %s\r\n",
                 wc->origin == O_ALLOWED ? ORIGIN : "https://evil.example");
    struct lg_ws_client c;
    int rc = lg_ws_open_with(&c, srv.public_port, path, "livegate.v1", headers);
    if (wc->outcome == W_REFUSED) {
        ck_assert_msg(rc == -1 && c.status == 403, "%s: status %d", wc->what, c.status);
        free(tok);
        return;
    }
    ck_assert_msg(rc == 0, "%s: handshake %d", wc->what, c.status);
    if (wc->outcome == W_CLOSED) {
        char *m = NULL;
        ck_assert_int_eq(lg_ws_next(&c, &m, WAIT_MS), -1);
        ck_assert_msg(c.close_code == 1008 && strcmp(c.close_reason, wc->code) == 0,
                      "%s: close %d %s", wc->what, c.close_code, c.close_reason);
        lg_ws_close(&c);
        free(tok);
        return;
    }
    if (first_message) {
        snprintf(msg, sizeof msg, "{\"op\":\"auth\",\"token\":\"%s\"}", tok);
        ck_assert_int_eq(lg_ws_send_text(&c, msg, strlen(msg)), 0);
        expect_message(&c, wc->what, wc->outcome == W_ERROR ? "error" : "authorized", wc->code);
    }
    snprintf(msg, sizeof msg, "{\"op\":\"subscribe\",\"topics\":[\"%s\"]}", wc->topic);
    ck_assert_int_eq(lg_ws_send_text(&c, msg, strlen(msg)), 0);
    if (wc->outcome == W_SUBSCRIBED) {
        expect_message(&c, wc->what, "subscribed", NULL);
    } else if (!first_message) {
        expect_message(&c, wc->what, "error", wc->code);
    } else {
        expect_message(&c, wc->what, "error", "token_missing"); /* the refused token changed nothing */
    }
    lg_ws_close(&c);
    free(tok);
}
END_TEST

/* ---- Tokens expiring mid-stream ------------------------------------------------------------ */

START_TEST(test_expiry_mid_stream)
{
    char *short_tok = token(T_SHORT), *long_tok = token(T_VALID), headers[2200], msg[2200];
    snprintf(headers, sizeof headers, "Authorization: Bearer %s\r\n", short_tok);
    int64_t start = lg_now_ms();
    struct lg_sse_client sse;
    lg_sse_must_open(&sse, srv.public_port, "/sse?topic=news/exp", headers);
    struct lg_ws_client ws_plain, ws_refreshed;
    ck_assert_int_eq(lg_ws_open_with(&ws_plain, srv.public_port, "/ws?topic=news/exp",
                                     "livegate.v1", headers), 0);
    expect_message(&ws_plain, "ws without refresh", "subscribed", NULL);
    ck_assert_int_eq(lg_ws_open_with(&ws_refreshed, srv.public_port, "/ws?topic=news/exp",
                                     "livegate.v1", headers), 0);
    expect_message(&ws_refreshed, "ws with refresh", "subscribed", NULL);
    snprintf(msg, sizeof msg, "{\"op\":\"refresh\",\"token\":\"%s\"}", long_tok);
    ck_assert_int_eq(lg_ws_send_text(&ws_refreshed, msg, strlen(msg)), 0);
    expect_message(&ws_refreshed, "refresh", "authorized", NULL);
    /* a held poll (30 s asked) is answered at the token's exp */
    int poll_fd = lg_tcp_connect(srv.public_port);
    char req[2600];
    snprintf(req, sizeof req, "GET /poll?topic=news/exp&timeout=30000 HTTP/1.1\r\nHost: x\r\n%s\r\n",
             headers);
    ck_assert_int_eq(lg_send_all(poll_fd, req, strlen(req)), 0);
    publish(srv.control_port, publisher, "news/exp", "before");

    /* SSE: the event, then the error event naming the expiry and the cursor, then the end */
    struct lg_sse_event ev;
    ck_assert_int_eq(lg_sse_next(&sse, &ev, WAIT_MS), 1);
    ck_assert_str_eq(ev.data, "before");
    char before_id[1024];
    snprintf(before_id, sizeof before_id, "%s", ev.id);
    lg_sse_event_free(&ev);
    ck_assert_int_eq(lg_sse_next(&sse, &ev, WAIT_MS), 1);
    ck_assert_str_eq(ev.event, "error");
    char want[1400];
    snprintf(want, sizeof want, "{\"code\":\"token_expired\",\"message\":\"the token expired: "
             "reconnect with a fresh token from this cursor\",\"cursor\":\"%s\"}", before_id);
    ck_assert_str_eq(ev.data, want);
    lg_sse_event_free(&ev);
    ck_assert(lg_sse_wait_eof(&sse, WAIT_MS));
    lg_sse_close(&sse);

    /* the poll is answered at the token's exp, long before its 30 s (with "before" or, when
     * its subscription began after that publish, nothing; the cursor says which) */
    struct lg_http_response r;
    ck_assert_int_eq(lg_http_read_response(poll_fd, &r, WAIT_MS), 0);
    ck_assert_int_eq(r.status, 200);
    ck_assert_msg(strncmp(r.body, "{\"events\":[", 11) == 0 && strstr(r.body, "news/exp@"),
                  "%s", r.body);
    lg_http_response_free(&r);
    close(poll_fd);

    /* WebSocket without refresh: the event, then 4003 */
    expect_message(&ws_plain, "ws event", "event", NULL);
    char *m = NULL;
    ck_assert_int_eq(lg_ws_next(&ws_plain, &m, WAIT_MS), -1);
    ck_assert_msg(ws_plain.close_code == 4003 && strcmp(ws_plain.close_reason, "token expired") == 0,
                  "close %d %s", ws_plain.close_code, ws_plain.close_reason);
    lg_ws_close(&ws_plain);
    int64_t took = lg_now_ms() - start;
    ck_assert_msg(took >= 900 && took < 4000, "expiry after %lld ms", (long long)took);

    /* WebSocket refreshed: still open past the first token's exp, and served */
    publish(srv.control_port, publisher, "news/exp", "after");
    expect_message(&ws_refreshed, "refreshed ws event", "event", NULL); /* "before" */
    expect_message(&ws_refreshed, "refreshed ws event", "event", NULL); /* "after" */
    lg_ws_close(&ws_refreshed);
    ck_assert_int_ge(lg_server_stat(&srv, "auth_streams_expired"), 2);
    ck_assert_int_ge(lg_server_stat(&srv, "auth_refreshed"), 1);
    free(short_tok);
    free(long_tok);
}
END_TEST

/* A refresh whose token no longer covers a subscription drops it, and says so. */
START_TEST(test_refresh_drops_uncovered)
{
    char *news = token(T_VALID), headers[2200], msg[2200];
    char *other = lg_token_libjwt(SECRET, NULL, 3600, "{\"subscribe\":[\"other/*\"]}");
    snprintf(headers, sizeof headers, "Authorization: Bearer %s\r\n", news);
    struct lg_ws_client ws;
    ck_assert_int_eq(lg_ws_open_with(&ws, srv.public_port, "/ws?topic=news/a&topic=demo/x",
                                     "livegate.v1", headers), 0);
    expect_message(&ws, "subscribe", "subscribed", NULL);
    snprintf(msg, sizeof msg, "{\"op\":\"refresh\",\"token\":\"%s\"}", other);
    ck_assert_int_eq(lg_ws_send_text(&ws, msg, strlen(msg)), 0);
    char *m = NULL;
    ck_assert_int_eq(lg_ws_next(&ws, &m, WAIT_MS), 1);
    ck_assert_msg(strstr(m, "\"type\":\"authorized\"") && strstr(m, "\"unsubscribed\":[\"news/a\"]"),
                  "%s", m);
    free(m);
    /* news/a is gone, demo/x (anonymous) stays */
    publish(srv.control_port, publisher, "news/a", "dropped");
    publish(srv.control_port, publisher, "demo/x", "kept");
    ck_assert_int_eq(lg_ws_next(&ws, &m, WAIT_MS), 1);
    ck_assert_msg(strstr(m, "\"topic\":\"demo/x\"") && strstr(m, "kept"), "%s", m);
    free(m);
    lg_ws_close(&ws);
    free(news);
    free(other);
}
END_TEST

/* ---- The control port --------------------------------------------------------------------- */

START_TEST(test_control_port)
{
    char dir[] = "/tmp/lg-auth-XXXXXX", pub[96], config[512];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(pub, sizeof pub, "%s/rsa.pub", dir);
    EVP_PKEY *rsa = lg_token_rsa_key(pub, NULL);
    snprintf(config, sizeof config,
             "{\"auth\":{\"rs256_public_key_file\":\"%s\",\"control_token\":\"ctl-token\"}}", pub);
    struct lg_server b;
    lg_server_must_start(&b, config);
    char *claims = lg_token_claims(3600, NULL, "{\"subscribe\":[\"news/*\"],\"publish\":[\"news/*\"]}");
    char *rs = lg_token_raw(RS, claims, LG_SIGN_RSA, NULL, rsa);
    char *pem = lg_token_public_pem(rsa);
    char *confused = lg_token_raw(HS, claims, LG_SIGN_HMAC, pem, NULL);
    static const struct {
        const char *what, *method, *path, *bearer, *body;
        int status;
        const char *code;
    } rows[] = {
        {"publish without a token", "POST", "/v1/topics/news/a/events", NULL, "x", 401, "token_missing"},
        {"publish with the control token", "POST", "/v1/topics/news/a/events", "ctl-token", "x", 201, NULL},
        {"publish with another bearer", "POST", "/v1/topics/news/a/events", "nope", "x", 401, "token_malformed"},
        {"publish with a covering claim", "POST", "/v1/topics/news/a/events", "RS", "x", 201, NULL},
        {"publish outside the claim", "POST", "/v1/topics/sports/events", "RS", "x", 403, "forbidden"},
        {"confused token", "POST", "/v1/topics/news/a/events", "CONFUSED", "x", 401, "token_wrong_algorithm"},
        {"batch with one topic outside", "POST", "/v1/publish", "RS",
         "[{\"topic\":\"news/a\",\"data\":\"1\"},{\"topic\":\"sports\",\"data\":\"2\"}]",
         403, "forbidden"},
        {"stats without a token", "GET", "/v1/stats", NULL, NULL, 401, "token_missing"},
        {"stats with a publish token", "GET", "/v1/stats", "RS", NULL, 403, "control_token_required"},
        {"stats with the control token", "GET", "/v1/stats", "ctl-token", NULL, 200, NULL},
        {"healthz without a token", "GET", "/healthz", NULL, NULL, 200, NULL},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        char headers[3000] = "";
        const char *bearer = rows[i].bearer;
        if (bearer && strcmp(bearer, "RS") == 0)
            bearer = rs;
        else if (bearer && strcmp(bearer, "CONFUSED") == 0)
            bearer = confused;
        if (bearer)
            snprintf(headers, sizeof headers, "Authorization: Bearer %s\r\n", bearer);
        struct lg_http_response r;
        ck_assert_int_eq(lg_http_request(b.control_port, rows[i].method, rows[i].path, headers,
                                         rows[i].body, rows[i].body ? strlen(rows[i].body) : 0,
                                         &r, WAIT_MS), 0);
        if (rows[i].code) {
            lg_expect_error_named(rows[i].what, &r, rows[i].status, rows[i].code, 0);
            char challenge[256];
            ck_assert_msg(r.status != 401 || lg_http_header(&r, "WWW-Authenticate", challenge,
                                                            sizeof challenge),
                          "%s: no WWW-Authenticate", rows[i].what);
        } else {
            ck_assert_msg(r.status == rows[i].status, "%s: %d %s", rows[i].what, r.status, r.body);
        }
        lg_http_response_free(&r);
    }
    /* nothing of the refused batch was published: news/a holds the two single events */
    struct lg_http_response r;
    char headers[2200];
    snprintf(headers, sizeof headers, "Authorization: Bearer %s\r\n", rs);
    ck_assert_int_eq(lg_http_request(b.public_port, "GET", "/poll?topic=news/a&since=&timeout=0",
                                     headers, NULL, 0, &r, WAIT_MS), 0);
    ck_assert_int_eq(r.status, 200);
    ck_assert_msg(strstr(r.body, ":2\"") && !strstr(r.body, ":3\""), "%s", r.body);
    lg_http_response_free(&r);
    /* algorithm confusion on the public port too */
    snprintf(headers, sizeof headers, "Authorization: Bearer %s\r\n", confused);
    ck_assert_int_eq(lg_http_request(b.public_port, "GET", "/poll?topic=news/a&timeout=0",
                                     headers, NULL, 0, &r, WAIT_MS), 0);
    lg_expect_error(&r, 401, "token_wrong_algorithm", LG_ERROR_ONLY_KEYS);
    lg_http_response_free(&r);
    ck_assert_int_eq(lg_http_request(b.public_port, "GET", "/sse?topic=news/a", headers, NULL, 0,
                                     &r, WAIT_MS), 0);
    lg_expect_error(&r, 401, "token_wrong_algorithm", LG_ERROR_ONLY_KEYS);
    lg_http_response_free(&r);
    struct lg_ws_client ws;
    ck_assert_int_eq(lg_ws_open_with(&ws, b.public_port, "/ws?topic=news/a", "livegate.v1",
                                     headers), 0);
    char *m = NULL;
    ck_assert_int_eq(lg_ws_next(&ws, &m, WAIT_MS), -1);
    ck_assert_msg(ws.close_code == 1008 && strcmp(ws.close_reason, "token_wrong_algorithm") == 0,
                  "close %d %s", ws.close_code, ws.close_reason);
    lg_ws_close(&ws);
    /* and the RS256 token itself is good on every transport of this gateway */
    snprintf(headers, sizeof headers, "Authorization: Bearer %s\r\n", rs);
    struct lg_sse_client sse;
    lg_sse_must_open(&sse, b.public_port, "/sse?topic=news/a", headers);
    lg_sse_close(&sse);
    ck_assert_int_eq(lg_ws_open_with(&ws, b.public_port, "/ws?topic=news/a", "livegate.v1",
                                     headers), 0);
    expect_message(&ws, "RS256 ws", "subscribed", NULL);
    lg_ws_close(&ws);
    lg_server_must_stop(&b);
    free(claims), free(rs), free(pem), free(confused);
    EVP_PKEY_free(rsa);
    unlink(pub);
    rmdir(dir);
}
END_TEST

/* Bound to anything but loopback without a control token, the gateway does not start. */
START_TEST(test_control_off_loopback_needs_token)
{
    static const char *const args[] = {"--public", "127.0.0.1:0", "--control", "0.0.0.0:0", NULL};
    struct lg_run_result r;
    ck_assert_int_eq(lg_run_binary(args, &r, WAIT_MS), 0);
    ck_assert_int_ne(r.status, 0);
    ck_assert_msg(strstr(r.err, "listen.control 0.0.0.0 is not a loopback address: set "
                                "auth.control_token"), "%s", r.err);
    lg_run_result_free(&r);
}
END_TEST

/* Without an auth section the gateway is open, and says so at warn level. */
START_TEST(test_open_without_auth_warns)
{
    struct lg_server open;
    lg_server_must_start(&open, "{}");
    ck_assert(lg_server_wait_log(&open, "WARN no auth key or auth.anonymous_subscribe is "
                                        "configured", WAIT_MS));
    struct lg_sse_client c;
    lg_sse_must_open(&c, open.public_port, "/sse?topic=anything", NULL);
    lg_sse_close(&c);
    lg_server_must_stop(&open);
}
END_TEST

static Suite *auth_suite(void)
{
    Suite *s = suite_create("auth");
    TCase *tc = LG_TCASE(s, "public", setup, teardown, test_http_table, test_preflight,
                         test_expiry_mid_stream, test_refresh_drops_uncovered);
    tcase_add_loop_test(tc, test_ws_table, 0, (int)(sizeof ws_cases / sizeof ws_cases[0]));
    tcase_set_timeout(tc, 60);
    tc = LG_TCASE(s, "control", NULL, NULL, test_control_port,
                  test_control_off_loopback_needs_token, test_open_without_auth_warns);
    tcase_set_timeout(tc, 60);
    return s;
}

LG_CHECK_MAIN(auth_suite)
