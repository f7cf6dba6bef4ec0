/*
 * test_auth.c - unit tests for src/core/auth.c: one table row per token (valid HS256 and RS256,
 * minted by libjwt and by hand; missing, malformed, expired, not yet valid, forged, alg "none",
 * algorithm confusion, leeway), the claims' patterns against topics, anonymous_subscribe,
 * the control token, where a token is read from (Bearer, cookie), and the Origin verdicts.
 */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "auth.h"
#include "config.h"

#include "check_main.h"
#include "support/lg_token.h"

#define SECRET "unit-test-secret"
#define HS "{\"alg\":\"HS256\",\"typ\":\"JWT\"}"
#define RS "{\"alg\":\"RS256\",\"typ\":\"JWT\"}"
#define CLAIMS "{\"subscribe\":[\"news/*\",\"chat/??\"],\"publish\":[\"news/eu\"]}"

static char pub_path[64];
static EVP_PKEY *rsa;

static void keys_setup(void)
{
    snprintf(pub_path, sizeof pub_path, "/tmp/lg-auth-unit-%d.pem", (int)getpid());
    rsa = lg_token_rsa_key(pub_path, NULL);
}

static void keys_teardown(void)
{
    unlink(pub_path);
    EVP_PKEY_free(rsa);
}

/* A verifier over the given config text. */
static struct lg_auth *auth_of(const char *json)
{
    struct lg_config cfg;
    char err[LG_CONFIG_ERR_MAX];
    lg_config_init_defaults(&cfg);
    ck_assert_msg(lg_config_load_string(&cfg, json, err) == 0, "%s", err);
    char aerr[256];
    struct lg_auth *a = lg_auth_create(&cfg, aerr, sizeof aerr);
    ck_assert_msg(a != NULL, "%s", aerr);
    lg_config_release(&cfg);
    return a;
}

static struct lg_auth *hs_auth(void)
{
    return auth_of("{\"auth\":{\"hs256_secret\":\"" SECRET "\",\"leeway_s\":5}}");
}

static struct lg_auth *rs_auth(void)
{
    char json[256];
    snprintf(json, sizeof json, "{\"auth\":{\"rs256_public_key_file\":\"%s\"}}", pub_path);
    return auth_of(json);
}

enum verifier { HS_VERIFIER, RS_VERIFIER };
enum kind {
    K_LIBJWT_HS, K_LIBJWT_RS, K_HAND_HS, K_HAND_RS, K_NONE, K_FORGED, K_CONFUSED, K_HS_FOR_RS,
    K_EXPIRED, K_EXPIRED_IN_LEEWAY, K_NBF_FUTURE, K_NBF_IN_LEEWAY, K_NO_EXP, K_TWO_PARTS,
    K_FOUR_PARTS, K_BAD_BASE64, K_HEADER_NOT_JSON, K_NO_ALG, K_CRIT, K_BAD_PATTERN,
    K_LIVEGATE_NOT_OBJECT, K_EMPTY, K_TOO_LONG, K_RS_WRONG_KEY,
};

static const struct {
    const char *what;
    enum verifier verifier;
    enum kind kind;
    enum lg_auth_result want;
} cases[] = {
    {"libjwt HS256", HS_VERIFIER, K_LIBJWT_HS, LG_AUTH_OK},
    {"libjwt RS256", RS_VERIFIER, K_LIBJWT_RS, LG_AUTH_OK},
    {"hand-made HS256", HS_VERIFIER, K_HAND_HS, LG_AUTH_OK},
    {"hand-made RS256", RS_VERIFIER, K_HAND_RS, LG_AUTH_OK},
    {"alg none on HS256", HS_VERIFIER, K_NONE, LG_AUTH_WRONG_ALGORITHM},
    {"alg none on RS256", RS_VERIFIER, K_NONE, LG_AUTH_WRONG_ALGORITHM},
    {"forged HS256 signature", HS_VERIFIER, K_FORGED, LG_AUTH_BAD_SIGNATURE},
    {"HS256 keyed with the RSA public PEM (confusion)", RS_VERIFIER, K_CONFUSED,
     LG_AUTH_WRONG_ALGORITHM},
    {"HS256 token for an RS256 gateway", RS_VERIFIER, K_HS_FOR_RS, LG_AUTH_WRONG_ALGORITHM},
    {"RS256 token for an HS256 gateway", HS_VERIFIER, K_HAND_RS, LG_AUTH_WRONG_ALGORITHM},
    {"RS256 signed by another key", RS_VERIFIER, K_RS_WRONG_KEY, LG_AUTH_BAD_SIGNATURE},
    {"expired beyond the leeway", HS_VERIFIER, K_EXPIRED, LG_AUTH_EXPIRED},
    {"expired within the leeway", HS_VERIFIER, K_EXPIRED_IN_LEEWAY, LG_AUTH_OK},
    {"nbf in the future", HS_VERIFIER, K_NBF_FUTURE, LG_AUTH_NOT_YET_VALID},
    {"nbf within the leeway", HS_VERIFIER, K_NBF_IN_LEEWAY, LG_AUTH_OK},
    {"no exp", HS_VERIFIER, K_NO_EXP, LG_AUTH_MALFORMED},
    {"two parts", HS_VERIFIER, K_TWO_PARTS, LG_AUTH_MALFORMED},
    {"four parts", HS_VERIFIER, K_FOUR_PARTS, LG_AUTH_MALFORMED},
    {"bad base64url", HS_VERIFIER, K_BAD_BASE64, LG_AUTH_MALFORMED},
    {"header not JSON", HS_VERIFIER, K_HEADER_NOT_JSON, LG_AUTH_MALFORMED},
    {"header without alg", HS_VERIFIER, K_NO_ALG, LG_AUTH_MALFORMED},
    {"header with crit", HS_VERIFIER, K_CRIT, LG_AUTH_MALFORMED},
    {"a claim pattern outside the grammar", HS_VERIFIER, K_BAD_PATTERN, LG_AUTH_MALFORMED},
    {"livegate claim not an object", HS_VERIFIER, K_LIVEGATE_NOT_OBJECT, LG_AUTH_MALFORMED},
    {"empty", HS_VERIFIER, K_EMPTY, LG_AUTH_MISSING},
    {"over LG_AUTH_TOKEN_MAX", HS_VERIFIER, K_TOO_LONG, LG_AUTH_MALFORMED},
};

static char *mint(enum kind k)
{
    long past = -10, soon = 3, far = 100;
    char *claims = lg_token_claims(3600, NULL, CLAIMS), *t = NULL, *pem;
    switch (k) {
    case K_LIBJWT_HS: t = lg_token_libjwt(SECRET, NULL, 3600, CLAIMS); break;
    case K_LIBJWT_RS:
        pem = lg_token_private_pem(rsa);
        t = lg_token_libjwt(NULL, pem, 3600, CLAIMS);
        free(pem);
        break;
    case K_HAND_HS: t = lg_token_raw(HS, claims, LG_SIGN_HMAC, SECRET, NULL); break;
    case K_HAND_RS: t = lg_token_raw(RS, claims, LG_SIGN_RSA, NULL, rsa); break;
    case K_NONE: t = lg_token_raw("{\"alg\":\"none\"}", claims, LG_SIGN_NONE, NULL, NULL); break;
    case K_FORGED: t = lg_token_raw(HS, claims, LG_SIGN_FORGED, NULL, NULL); break;
    case K_CONFUSED:
        pem = lg_token_public_pem(rsa);
        t = lg_token_raw(HS, claims, LG_SIGN_HMAC, pem, NULL);
        free(pem);
        break;
    case K_HS_FOR_RS: t = lg_token_raw(HS, claims, LG_SIGN_HMAC, SECRET, NULL); break;
    case K_RS_WRONG_KEY: {
        EVP_PKEY *other = EVP_RSA_gen(2048);
        t = lg_token_raw(RS, claims, LG_SIGN_RSA, NULL, other);
        EVP_PKEY_free(other);
        break;
    }
    case K_EXPIRED:
    case K_EXPIRED_IN_LEEWAY:
    case K_NBF_FUTURE:
    case K_NBF_IN_LEEWAY: {
        free(claims);
        claims = k == K_EXPIRED            ? lg_token_claims(-10, NULL, CLAIMS)
                 : k == K_EXPIRED_IN_LEEWAY ? lg_token_claims(-2, NULL, CLAIMS)
                 : k == K_NBF_FUTURE        ? lg_token_claims(3600, &far, CLAIMS)
                                            : lg_token_claims(3600, &soon, CLAIMS);
        t = lg_token_raw(HS, claims, LG_SIGN_HMAC, SECRET, NULL);
        break;
    }
    case K_NO_EXP: t = lg_token_raw(HS, "{\"livegate\":{}}", LG_SIGN_HMAC, SECRET, NULL); break;
    case K_TWO_PARTS: t = strdup("eyJhbGciOiJIUzI1NiJ9.eyJleHAiOjF9"); break;
    case K_FOUR_PARTS: {
        char *ok = lg_token_raw(HS, claims, LG_SIGN_HMAC, SECRET, NULL);
        t = malloc(strlen(ok) + 3);
        sprintf(t, "%s.x", ok);
        free(ok);
        break;
    }
    case K_BAD_BASE64: t = strdup("eyJhbGciOiJIUzI1NiJ9!.eyJleHAiOjF9.AAAA"); break;
    case K_HEADER_NOT_JSON: t = lg_token_raw("not json", claims, LG_SIGN_HMAC, SECRET, NULL); break;
    case K_NO_ALG: t = lg_token_raw("{\"typ\":\"JWT\"}", claims, LG_SIGN_HMAC, SECRET, NULL); break;
    case K_CRIT:
        t = lg_token_raw("{\"alg\":\"HS256\",\"crit\":[\"x\"]}", claims, LG_SIGN_HMAC, SECRET,
                         NULL);
        break;
    case K_BAD_PATTERN:
        free(claims);
        claims = lg_token_claims(3600, NULL, "{\"subscribe\":[\"a b\"]}");
        t = lg_token_raw(HS, claims, LG_SIGN_HMAC, SECRET, NULL);
        break;
    case K_LIVEGATE_NOT_OBJECT:
        free(claims);
        claims = lg_token_claims(3600, NULL, "[\"news/*\"]");
        t = lg_token_raw(HS, claims, LG_SIGN_HMAC, SECRET, NULL);
        break;
    case K_EMPTY: t = strdup(""); break;
    case K_TOO_LONG:
        t = malloc(LG_AUTH_TOKEN_MAX + 2);
        memset(t, 'a', LG_AUTH_TOKEN_MAX + 1);
        t[LG_AUTH_TOKEN_MAX + 1] = '\0';
        break;
    }
    (void)past;
    free(claims);
    return t;
}

START_TEST(test_verify_table)
{
    struct lg_auth *a = cases[_i].verifier == HS_VERIFIER ? hs_auth() : rs_auth();
    char *t = mint(cases[_i].kind);
    struct lg_grant *g = (struct lg_grant *)1;
    enum lg_auth_result r = lg_auth_verify(a, t, strlen(t), (int64_t)time(NULL), &g);
    ck_assert_msg(r == cases[_i].want, "%s: got %s, want %s", cases[_i].what,
                  lg_auth_result_code(r), lg_auth_result_code(cases[_i].want));
    if (r == LG_AUTH_OK) {
        ck_assert_ptr_nonnull(g);
        ck_assert_msg(lg_auth_may_subscribe(a, g, "news/eu"), "%s: news/eu", cases[_i].what);
        ck_assert(lg_auth_may_subscribe(a, g, "chat/ab"));
        ck_assert(!lg_auth_may_subscribe(a, g, "chat/abc"));
        ck_assert(!lg_auth_may_subscribe(a, g, "sports"));
        ck_assert(lg_grant_may_publish(g, "news/eu"));
        ck_assert(!lg_grant_may_publish(g, "news/us"));
    } else {
        ck_assert_ptr_null(g);
    }
    lg_grant_free(g == (struct lg_grant *)1 ? NULL : g);
    free(t);
    lg_auth_destroy(a);
}
END_TEST

/* The result codes and challenges every refusal answers with. */
START_TEST(test_refusal_texts)
{
    static const char *const codes[] = {"ok", "token_missing", "token_malformed", "token_expired",
                                        "token_not_yet_valid", "token_bad_signature",
                                        "token_wrong_algorithm", "token_unknown_key"};
    for (int r = 0; r < LG_AUTH_RESULT_COUNT_; r++) {
        ck_assert_str_eq(lg_auth_result_code((enum lg_auth_result)r), codes[r]);
        if (r)
            ck_assert(strncmp(lg_auth_challenge((enum lg_auth_result)r),
                              "WWW-Authenticate: Bearer realm=\"livegate\", error=\"", 50) == 0);
    }
}
END_TEST

/* exp and nbf at the edges of int64 (or past the leeway's reach) are clamped, not overflowed:
 * such a token is valid, and its end in milliseconds, with the leeway, is representable. */
START_TEST(test_numeric_date_extremes)
{
    static const char *const claims[] = {
        "{\"exp\":9300000000000000}",
        "{\"exp\":9223372036854775807}",
        "{\"exp\":9223372036854775807,\"nbf\":-9223372036854775808}",
        "{\"exp\":8.9e15,\"nbf\":-8.9e15}",
    };
    struct lg_auth *a = auth_of("{\"auth\":{\"hs256_secret\":\"" SECRET "\",\"leeway_s\":3600}}");
    for (size_t i = 0; i < sizeof claims / sizeof claims[0]; i++) {
        char *t = lg_token_raw(HS, claims[i], LG_SIGN_HMAC, SECRET, NULL);
        struct lg_grant *g = NULL;
        ck_assert_int_eq(lg_auth_verify(a, t, strlen(t), (int64_t)time(NULL), &g), LG_AUTH_OK);
        ck_assert_int_eq(g->exp_s, LG_NUMERIC_DATE_MAX);
        ck_assert_int_eq(g->expires_at_s, g->exp_s + 3600);
        ck_assert(g->expires_at_s <= INT64_MAX / 1000);
        lg_grant_free(g);
        free(t);
    }
    char *late = lg_token_raw(HS, "{\"exp\":9223372036854775807,\"nbf\":9223372036854775807}",
                              LG_SIGN_HMAC, SECRET, NULL);
    struct lg_grant *g = NULL;
    ck_assert_int_eq(lg_auth_verify(a, late, strlen(late), (int64_t)time(NULL), &g),
                     LG_AUTH_NOT_YET_VALID);
    free(late);
    lg_auth_destroy(a);
}
END_TEST

START_TEST(test_anonymous_and_off)
{
    struct lg_auth *off = auth_of("{}");
    ck_assert(!lg_auth_enabled(off));
    ck_assert(lg_auth_may_subscribe(off, NULL, "anything"));
    lg_auth_destroy(off);
    struct lg_auth *anon = auth_of("{\"auth\":{\"anonymous_subscribe\":[\"demo/*\"]}}");
    ck_assert(lg_auth_enabled(anon));
    ck_assert(!lg_auth_has_key(anon));
    ck_assert(lg_auth_may_subscribe(anon, NULL, "demo/x"));
    ck_assert(!lg_auth_may_subscribe(anon, NULL, "news/x"));
    struct lg_grant *g;
    char *t = mint(K_HAND_HS);
    ck_assert_int_eq(lg_auth_verify(anon, t, strlen(t), time(NULL), &g), LG_AUTH_WRONG_ALGORITHM);
    free(t);
    lg_auth_destroy(anon);
}
END_TEST

START_TEST(test_control_token)
{
    struct lg_auth *a = auth_of("{\"auth\":{\"control_token\":\"abc123\"}}");
    ck_assert(lg_auth_has_control_token(a));
    ck_assert(lg_auth_is_control_token(a, "abc123", 6));
    ck_assert(!lg_auth_is_control_token(a, "abc12", 5));
    ck_assert(!lg_auth_is_control_token(a, "abc124", 6));
    lg_auth_destroy(a);
    struct lg_auth *none = auth_of("{}");
    ck_assert(!lg_auth_has_control_token(none));
    ck_assert(!lg_auth_is_control_token(none, "", 0));
    lg_auth_destroy(none);
}
END_TEST

START_TEST(test_sources)
{
    const char *tok;
    size_t len;
    ck_assert(lg_auth_bearer("Bearer abc.def", 14, &tok, &len));
    ck_assert_int_eq((int)len, 7);
    ck_assert(strncmp(tok, "abc.def", len) == 0);
    ck_assert(lg_auth_bearer("bearer  x ", 10, &tok, &len) && len == 1 && *tok == 'x');
    ck_assert(!lg_auth_bearer("Basic abc", 9, &tok, &len));
    ck_assert(!lg_auth_bearer("Bearer ", 7, &tok, &len));
    const char *cookies = "a=1; livegate_token=t.o.k; b=2";
    ck_assert(lg_auth_cookie(cookies, strlen(cookies), "livegate_token", &tok, &len));
    ck_assert(len == 5 && strncmp(tok, "t.o.k", 5) == 0);
    ck_assert(!lg_auth_cookie(cookies, strlen(cookies), "livegate", &tok, &len));
    ck_assert(!lg_auth_cookie("xlivegate_token=1", 17, "livegate_token", &tok, &len));
}
END_TEST

START_TEST(test_origins)
{
    struct lg_string_list none = {0};
    char *star_items[] = {"*"};
    struct lg_string_list star = {star_items, 1};
    char *listed_items[] = {"https://app.example", "http://localhost:3000"};
    struct lg_string_list listed = {listed_items, 2};
    ck_assert_int_eq(lg_origin_check(&listed, "", 0), LG_ORIGIN_ABSENT);
    ck_assert_int_eq(lg_origin_check(&none, "https://x", 9), LG_ORIGIN_UNCHECKED);
    ck_assert_int_eq(lg_origin_check(&star, "https://x", 9), LG_ORIGIN_ANY);
    ck_assert_int_eq(lg_origin_check(&listed, "https://app.example", 19), LG_ORIGIN_LISTED);
    ck_assert_int_eq(lg_origin_check(&listed, "https://app.example.evil", 24), LG_ORIGIN_REFUSED);
    ck_assert_int_eq(lg_origin_check(&listed, "https://app.exampl", 18), LG_ORIGIN_REFUSED);
}
END_TEST

/* Config: the key file is read at start, with a clear error. */
START_TEST(test_bad_key_file)
{
    struct lg_config cfg;
    char err[LG_CONFIG_ERR_MAX], aerr[256];
    lg_config_init_defaults(&cfg);
    ck_assert_int_eq(lg_config_load_string(&cfg, "{\"auth\":{\"rs256_public_key_file\":"
                                                 "\"/nonexistent.pem\"}}", err), 0);
    ck_assert_ptr_null(lg_auth_create(&cfg, aerr, sizeof aerr));
    ck_assert_msg(strstr(aerr, "/nonexistent.pem: cannot open") != NULL, "%s", aerr);
    lg_config_release(&cfg);
    lg_config_init_defaults(&cfg);
    ck_assert_int_eq(lg_config_load_string(&cfg, "{\"auth\":{\"hs256_secret\":\"a\","
                                                 "\"rs256_public_key_file\":\"b\"}}", err), -1);
    ck_assert_msg(strstr(err, "set one, not both") != NULL, "%s", err);
    lg_config_release(&cfg);
    lg_config_init_defaults(&cfg);
    ck_assert_int_eq(lg_config_load_string(&cfg, "{\"allowed_origins\":[\"*\",\"https://a\"]}",
                                           err), -1);
    ck_assert_int_eq(lg_config_load_string(&cfg, "{\"allowed_origins\":[\"https://a/path\"]}",
                                           err), -1);
    ck_assert_msg(strstr(err, "allowed_origins[0]: an origin is") != NULL, "%s", err);
    ck_assert_int_eq(lg_config_load_string(&cfg, "{\"auth\":{\"anonymous_subscribe\":[\"a b\"]}}",
                                           err), -1);
    ck_assert_msg(strstr(err, "auth.anonymous_subscribe[0]: not a topic pattern") != NULL, "%s",
                  err);
    lg_config_release(&cfg);
}
END_TEST

/* One verifier, several threads at once (as the workers and the control port use it): every
 * verification of a good token succeeds and of a forged one fails. The OpenSSL contexts set
 * up once are only copied from. */
struct verify_job {
    struct lg_auth *auth;
    const char *good, *bad;
    int ok, refused;
};

static void *verify_many(void *arg)
{
    struct verify_job *j = arg;
    for (int i = 0; i < 400; i++) {
        struct lg_grant *g;
        j->ok += lg_auth_verify(j->auth, j->good, strlen(j->good), time(NULL), &g) == LG_AUTH_OK;
        lg_grant_free(g);
        j->refused += lg_auth_verify(j->auth, j->bad, strlen(j->bad), time(NULL), &g) ==
                      LG_AUTH_BAD_SIGNATURE;
    }
    return NULL;
}

START_TEST(test_concurrent_verify)
{
    for (int v = 0; v < 2; v++) {
        struct lg_auth *a = v ? rs_auth() : hs_auth();
        char *good = mint(v ? K_HAND_RS : K_HAND_HS), *bad = mint(v ? K_RS_WRONG_KEY : K_FORGED);
        pthread_t t[4];
        struct verify_job jobs[4];
        for (int i = 0; i < 4; i++) {
            jobs[i] = (struct verify_job){.auth = a, .good = good, .bad = bad};
            ck_assert_int_eq(pthread_create(&t[i], NULL, verify_many, &jobs[i]), 0);
        }
        for (int i = 0; i < 4; i++) {
            pthread_join(t[i], NULL);
            ck_assert_int_eq(jobs[i].ok, 400);
            ck_assert_int_eq(jobs[i].refused, 400);
        }
        free(good);
        free(bad);
        lg_auth_destroy(a);
    }
}
END_TEST

/* A verifier over {"auth":{"jwks_file": a file of these JWKS entries}}: NULL with the
 * message in err when it is refused. */
static struct lg_auth *jwks_auth(const char *entries, char *err, size_t cap)
{
    char path[64], json[256];
    snprintf(path, sizeof path, "/tmp/lg-auth-unit-%d.jwks", (int)getpid());
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "{\"keys\":[%s]}", entries);
    fclose(f);
    snprintf(json, sizeof json, "{\"auth\":{\"jwks_file\":\"%s\"}}", path);
    struct lg_config cfg;
    char cerr[LG_CONFIG_ERR_MAX];
    lg_config_init_defaults(&cfg);
    ck_assert_msg(lg_config_load_string(&cfg, json, cerr) == 0, "%s", cerr);
    struct lg_auth *a = lg_auth_create(&cfg, err, cap);
    lg_config_release(&cfg);
    unlink(path);
    return a;
}

/* Each JWKS entry the reader refuses, with the entry and the reason in the message. */
START_TEST(test_jwks_refused)
{
    static const struct {
        const char *entries, *message;
    } rows[] = {
        {"{\"kty\":\"oct\",\"k\":\"c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3JldA\"}",
         "keys[0]: \"kid\" is required"},
        {"{\"kty\":\"oct\",\"kid\":\"a\",\"k\":\"c2hvcnQ\"}", "keys[0]: an oct key needs"},
        {"{\"kty\":\"oct\",\"kid\":\"a\",\"k\":\"c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3JldA\"},"
         "{\"kty\":\"oct\",\"kid\":\"a\",\"k\":\"c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3JldA\"}",
         "keys[1]: this \"kid\" is used twice"},
        {"{\"kty\":\"oct\",\"kid\":\"a\",\"alg\":\"RS256\","
         "\"k\":\"c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3JldA\"}",
         "keys[0]: \"alg\" does not match"},
        {"{\"kty\":\"OKP\",\"kid\":\"a\"}", "keys[0]: \"kty\" must be oct, RSA or EC"},
        {"{\"kty\":\"RSA\",\"kid\":\"a\",\"n\":\"AQAB\",\"e\":\"AQAB\"}",
         "keys[0]: an RSA key needs"},
        {"{\"kty\":\"EC\",\"kid\":\"a\",\"crv\":\"P-384\",\"x\":\"AA\",\"y\":\"AA\"}",
         "keys[0]: an EC key needs"},
        {"{\"kty\":\"oct\",\"kid\":\"a\",\"use\":\"enc\"}", "keys[0]: \"use\" must be"},
        {"", "not a JWKS"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        char err[256] = "";
        struct lg_auth *a = jwks_auth(rows[i].entries, err, sizeof err);
        ck_assert_msg(a == NULL, "row %zu accepted", i);
        ck_assert_msg(strstr(err, rows[i].message) != NULL, "row %zu: %s", i, err);
    }
}
END_TEST

/* Reloads while threads verify (TSan runs this): a token of a key kept in every generation
 * always verifies; the refcounted generations are freed by whoever drops them last. */
struct reload_job {
    struct lg_auth *auth;
    const char *token;
    _Atomic bool *stop;
    int ok, other;
};

static void *verify_until_stopped(void *arg)
{
    struct reload_job *j = arg;
    while (!atomic_load(j->stop)) {
        struct lg_grant *g;
        if (lg_auth_verify(j->auth, j->token, strlen(j->token), time(NULL), &g) == LG_AUTH_OK)
            j->ok++;
        else
            j->other++;
        lg_grant_free(g);
        (void)lg_auth_may_subscribe(j->auth, NULL, "news/a");
    }
    return NULL;
}

START_TEST(test_reload_while_verifying)
{
    struct lg_auth *a = hs_auth();
    char *good = mint(K_HAND_HS);
    _Atomic bool stop = false;
    pthread_t t[3];
    struct reload_job jobs[3];
    for (int i = 0; i < 3; i++) {
        jobs[i] = (struct reload_job){.auth = a, .token = good, .stop = &stop};
        ck_assert_int_eq(pthread_create(&t[i], NULL, verify_until_stopped, &jobs[i]), 0);
    }
    for (int r = 0; r < 200; r++) {
        struct lg_config cfg;
        char err[LG_CONFIG_ERR_MAX], aerr[256];
        lg_config_init_defaults(&cfg);
        ck_assert(lg_config_load_string(&cfg, r % 2 ? "{\"auth\":{\"hs256_secret\":\"" SECRET
                                                      "\",\"leeway_s\":5}}"
                                                    : "{\"auth\":{\"hs256_secret\":\"" SECRET
                                                      "\",\"anonymous_subscribe\":[\"x\"]}}",
                                        err) == 0);
        ck_assert_msg(lg_auth_reload(a, &cfg, aerr, sizeof aerr) == 0, "%s", aerr);
        lg_config_release(&cfg);
    }
    /* A failed reload changes nothing. */
    struct lg_config cfg;
    char err[LG_CONFIG_ERR_MAX], aerr[256];
    lg_config_init_defaults(&cfg);
    ck_assert(lg_config_load_string(&cfg, "{\"auth\":{\"rs256_public_key_file\":\"/nonexistent\"}}",
                                    err) == 0);
    ck_assert_int_eq(lg_auth_reload(a, &cfg, aerr, sizeof aerr), -1);
    lg_config_release(&cfg);
    atomic_store(&stop, true);
    for (int i = 0; i < 3; i++) {
        pthread_join(t[i], NULL);
        ck_assert_int_eq(jobs[i].other, 0);
    }
    struct lg_grant *g;
    ck_assert_int_eq(lg_auth_verify(a, good, strlen(good), time(NULL), &g), LG_AUTH_OK);
    lg_grant_free(g);
    free(good);
    lg_auth_destroy(a);
}
END_TEST

static Suite *lg_auth_suite(void)
{
    Suite *s = suite_create("auth");
    TCase *tc = LG_TCASE(s, "verify", NULL, NULL, test_refusal_texts,
                         test_anonymous_and_off, test_control_token, test_sources, test_origins,
                         test_bad_key_file, test_concurrent_verify, test_jwks_refused,
                         test_reload_while_verifying);
    tcase_add_unchecked_fixture(tc, keys_setup, keys_teardown); /* one RSA key for all */
    tcase_add_loop_test(tc, test_verify_table, 0, (int)(sizeof cases / sizeof cases[0]));
    tcase_add_test(tc, test_numeric_date_extremes);
    tcase_set_timeout(tc, 60);
    return s;
}

LG_CHECK_MAIN(lg_auth_suite)
