/* auth.c - see auth.h. */
#include "auth.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/core_names.h>
#include <openssl/pem.h>

#include "config.h"
#include "stats.h"
#include "topic_glob.h"

enum lg_auth_alg { LG_ALG_NONE_CONFIGURED, LG_ALG_HS256, LG_ALG_RS256 };

struct lg_auth {
    bool enabled;
    enum lg_auth_alg alg;
    unsigned char *secret;         /* HS256 */
    size_t secret_len;
    EVP_PKEY *public_key;          /* RS256, parsed once */
    /* Set up once: OpenSSL 3 fetches algorithms from its providers at every init, which
     * costs more than the HMAC itself; each verification copies these instead. Only read
     * after lg_auth_create(), so threads may copy them at once. */
    EVP_MAC_CTX *hmac_template;    /* HS256: HMAC-SHA256 keyed with the secret */
    EVP_MD_CTX *verify_template;   /* RS256: DigestVerify initialised with the key */
    EVP_MD *sha256;
    int64_t leeway_s;
    char **anonymous;              /* auth.anonymous_subscribe, copied */
    size_t anonymous_count;
    char *control_token;           /* NULL = none */
    char *cookie;
};

/* ---- Building ------------------------------------------------------------------------------ */

static EVP_PKEY *read_public_key(const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "auth.rs256_public_key_file %s: cannot open: %s", path,
                 strerror(errno));
        return NULL;
    }
    EVP_PKEY *key = PEM_read_PUBKEY(f, NULL, NULL, NULL);
    fclose(f);
    if (!key || EVP_PKEY_base_id(key) != EVP_PKEY_RSA || EVP_PKEY_bits(key) < 2048) {
        snprintf(err, errlen, "auth.rs256_public_key_file %s: not a PEM RSA public key "
                 "(BEGIN PUBLIC KEY) of at least 2048 bits", path);
        EVP_PKEY_free(key);
        return NULL;
    }
    return key;
}

static int prepare_templates(struct lg_auth *a)
{
    a->sha256 = EVP_MD_fetch(NULL, "SHA256", NULL);
    if (!a->sha256)
        return -1;
    if (a->alg == LG_ALG_RS256) {
        a->verify_template = EVP_MD_CTX_new();
        return a->verify_template &&
                       EVP_DigestVerifyInit(a->verify_template, NULL, a->sha256, NULL,
                                            a->public_key) == 1
                   ? 0
                   : -1;
    }
    EVP_MAC *mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
    a->hmac_template = mac ? EVP_MAC_CTX_new(mac) : NULL;
    EVP_MAC_free(mac);
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, "SHA256", 0),
        OSSL_PARAM_construct_end(),
    };
    return a->hmac_template &&
                   EVP_MAC_init(a->hmac_template, a->secret, a->secret_len, params) == 1
               ? 0
               : -1;
}

struct lg_auth *lg_auth_create(const struct lg_config *cfg, char *err, size_t errlen)
{
    struct lg_auth *a = calloc(1, sizeof *a);
    if (!a) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    a->enabled = lg_config_auth_enabled(cfg);
    a->leeway_s = cfg->auth.leeway_s;
    a->cookie = strdup(cfg->auth.cookie ? cfg->auth.cookie : "livegate_token");
    const struct lg_string_list *anon = &cfg->auth.anonymous_subscribe;
    a->anonymous = calloc(anon->count ? anon->count : 1, sizeof(char *));
    bool oom = !a->cookie || !a->anonymous;
    for (size_t i = 0; !oom && i < anon->count; i++, a->anonymous_count++)
        oom = (a->anonymous[i] = strdup(anon->items[i])) == NULL;
    if (cfg->auth.control_token && cfg->auth.control_token[0])
        oom = oom || (a->control_token = strdup(cfg->auth.control_token)) == NULL;
    if (cfg->auth.hs256_secret && cfg->auth.hs256_secret[0]) {
        a->alg = LG_ALG_HS256;
        a->secret_len = strlen(cfg->auth.hs256_secret);
        oom = oom || (a->secret = (unsigned char *)strdup(cfg->auth.hs256_secret)) == NULL;
    }
    if (oom) {
        snprintf(err, errlen, "out of memory");
        lg_auth_destroy(a);
        return NULL;
    }
    if (cfg->auth.rs256_public_key_file && cfg->auth.rs256_public_key_file[0]) {
        a->alg = LG_ALG_RS256;
        a->public_key = read_public_key(cfg->auth.rs256_public_key_file, err, errlen);
        if (!a->public_key) {
            lg_auth_destroy(a);
            return NULL;
        }
    }
    if (a->alg != LG_ALG_NONE_CONFIGURED && prepare_templates(a) != 0) {
        snprintf(err, errlen, "cannot set up the %s verifier in OpenSSL",
                 a->alg == LG_ALG_HS256 ? "HS256" : "RS256");
        lg_auth_destroy(a);
        return NULL;
    }
    return a;
}

void lg_auth_destroy(struct lg_auth *a)
{
    if (!a)
        return;
    if (a->secret)
        OPENSSL_cleanse(a->secret, a->secret_len);
    free(a->secret);
    EVP_MAC_CTX_free(a->hmac_template);
    EVP_MD_CTX_free(a->verify_template);
    EVP_MD_free(a->sha256);
    EVP_PKEY_free(a->public_key);
    for (size_t i = 0; i < a->anonymous_count; i++)
        free(a->anonymous[i]);
    free(a->anonymous);
    if (a->control_token)
        OPENSSL_cleanse(a->control_token, strlen(a->control_token));
    free(a->control_token);
    free(a->cookie);
    free(a);
}

bool lg_auth_enabled(const struct lg_auth *a) { return a->enabled; }
bool lg_auth_has_key(const struct lg_auth *a) { return a->alg != LG_ALG_NONE_CONFIGURED; }
const char *lg_auth_cookie_name(const struct lg_auth *a) { return a->cookie; }
bool lg_auth_has_control_token(const struct lg_auth *a) { return a->control_token != NULL; }

bool lg_auth_is_control_token(const struct lg_auth *a, const char *token, size_t len)
{
    if (!a->control_token)
        return false;
    size_t want = strlen(a->control_token);
    /* The length is not secret; the bytes are compared in constant time. */
    return len == want && CRYPTO_memcmp(a->control_token, token, len) == 0;
}

/* ---- Decoding ------------------------------------------------------------------------------ */

static int b64url_value(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    return c == '-' ? 62 : c == '_' ? 63 : -1;
}

/* Unpadded base64url (RFC 7515 section 2) of in[0..len) into out (room for len * 3 / 4).
 * Return value: the decoded length, or -1 when a byte is not of the alphabet or the length
 * cannot be base64 (len % 4 == 1). */
static long b64url_decode(const char *in, size_t len, unsigned char *out)
{
    if (len % 4 == 1)
        return -1;
    size_t n = 0;
    uint32_t acc = 0;
    unsigned bits = 0;
    for (size_t i = 0; i < len; i++) {
        int v = b64url_value((unsigned char)in[i]);
        if (v < 0)
            return -1;
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[n++] = (unsigned char)(acc >> bits);
        }
    }
    return (long)n;
}

static json_t *decode_json_part(const char *in, size_t len)
{
    unsigned char buf[LG_AUTH_TOKEN_MAX];
    long n = b64url_decode(in, len, buf);
    if (n <= 0)
        return NULL;
    json_t *v = json_loadb((const char *)buf, (size_t)n, JSON_REJECT_DUPLICATES, NULL);
    if (v && !json_is_object(v)) {
        json_decref(v);
        return NULL;
    }
    return v;
}

/* ---- Signatures ---------------------------------------------------------------------------- */

static bool signature_ok(const struct lg_auth *a, const char *signed_part, size_t signed_len,
                         const unsigned char *sig, size_t sig_len)
{
    if (a->alg == LG_ALG_HS256) {
        unsigned char mac[EVP_MAX_MD_SIZE];
        size_t mac_len = 0;
        EVP_MAC_CTX *ctx = EVP_MAC_CTX_dup(a->hmac_template);
        bool ok = ctx && EVP_MAC_update(ctx, (const unsigned char *)signed_part, signed_len) == 1 &&
                  EVP_MAC_final(ctx, mac, &mac_len, sizeof mac) == 1;
        EVP_MAC_CTX_free(ctx);
        return ok && sig_len == mac_len && CRYPTO_memcmp(mac, sig, mac_len) == 0;
    }
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    bool ok = ctx && EVP_MD_CTX_copy_ex(ctx, a->verify_template) == 1 &&
              EVP_DigestVerifyUpdate(ctx, signed_part, signed_len) == 1 &&
              EVP_DigestVerifyFinal(ctx, sig, sig_len) == 1;
    EVP_MD_CTX_free(ctx);
    return ok;
}

/* ---- Claims -------------------------------------------------------------------------------- */

/* A NumericDate claim: absent (*present false), or an integer (a real is truncated). */
static bool numeric_date(const json_t *claims, const char *name, bool *present, int64_t *out)
{
    const json_t *v = json_object_get(claims, name);
    *present = v != NULL;
    if (!v)
        return true;
    double d;
    if (json_is_integer(v))
        *out = json_integer_value(v);
    else if (json_is_real(v) && (d = json_real_value(v)) > -9e15 && d < 9e15)
        *out = (int64_t)d;
    else
        return false;
    /* Clamped so that adding the leeway and scaling to milliseconds cannot overflow. */
    if (*out > LG_NUMERIC_DATE_MAX)
        *out = LG_NUMERIC_DATE_MAX;
    else if (*out < -LG_NUMERIC_DATE_MAX)
        *out = -LG_NUMERIC_DATE_MAX;
    return true;
}

/* A pattern list of the livegate claim: absent = none; else an array of globs. Adds the
 * bytes it needs to *bytes. Return value: false when it has the wrong shape. */
static bool pattern_list_ok(const json_t *list, size_t *bytes)
{
    if (!list)
        return true;
    if (!json_is_array(list) || json_array_size(list) > LG_GRANT_PATTERNS_MAX)
        return false;
    size_t i;
    const json_t *p;
    json_array_foreach(list, i, p) {
        if (!json_is_string(p) || !lg_topic_pattern_ok(json_string_value(p), json_string_length(p)))
            return false;
        *bytes += json_string_length(p) + 1 + sizeof(char *);
    }
    return true;
}

static void copy_patterns(const json_t *list, const char **dst, size_t *count, char **text)
{
    size_t i;
    const json_t *p;
    *count = 0;
    json_array_foreach(list, i, p) {
        size_t len = json_string_length(p);
        memcpy(*text, json_string_value(p), len + 1);
        dst[(*count)++] = *text;
        *text += len + 1;
    }
}

/* The grant of claims, or why not. */
static enum lg_auth_result grant_of(const struct lg_auth *a, const json_t *claims, int64_t now_s,
                                    struct lg_grant **out)
{
    bool has_exp, has_nbf;
    int64_t exp = 0, nbf = 0;
    if (!numeric_date(claims, "exp", &has_exp, &exp) || !has_exp ||
        !numeric_date(claims, "nbf", &has_nbf, &nbf))
        return LG_AUTH_MALFORMED;
    const json_t *lg = json_object_get(claims, "livegate");
    const json_t *sub = lg ? json_object_get(lg, "subscribe") : NULL;
    const json_t *pub = lg ? json_object_get(lg, "publish") : NULL;
    size_t bytes = 0;
    if ((lg && !json_is_object(lg)) || !pattern_list_ok(sub, &bytes) ||
        !pattern_list_ok(pub, &bytes))
        return LG_AUTH_MALFORMED;
    if (has_nbf && now_s < nbf - a->leeway_s)
        return LG_AUTH_NOT_YET_VALID;
    if (now_s >= exp + a->leeway_s)
        return LG_AUTH_EXPIRED;
    struct lg_grant *g = malloc(sizeof *g + bytes);
    if (!g)
        return LG_AUTH_MALFORMED; /* out of memory: refused, never allowed */
    size_t n_sub = sub ? json_array_size(sub) : 0;
    *g = (struct lg_grant){.exp_s = exp, .expires_at_s = exp + a->leeway_s};
    g->subscribe = (const char **)(g + 1);
    g->publish = g->subscribe + n_sub;
    char *text = (char *)(g->publish + (pub ? json_array_size(pub) : 0));
    if (sub)
        copy_patterns(sub, g->subscribe, &g->subscribe_count, &text);
    if (pub)
        copy_patterns(pub, g->publish, &g->publish_count, &text);
    *out = g;
    return LG_AUTH_OK;
}

/* ---- Verifying ----------------------------------------------------------------------------- */

static const char *alg_name(enum lg_auth_alg alg)
{
    return alg == LG_ALG_HS256 ? "HS256" : alg == LG_ALG_RS256 ? "RS256" : NULL;
}

enum lg_auth_result lg_auth_verify(const struct lg_auth *a, const char *token, size_t len,
                                   int64_t now_s, struct lg_grant **grant)
{
    *grant = NULL;
    if (len == 0)
        return LG_AUTH_MISSING;
    if (len > LG_AUTH_TOKEN_MAX)
        return LG_AUTH_MALFORMED;
    const char *dot1 = memchr(token, '.', len);
    const char *dot2 = dot1 ? memchr(dot1 + 1, '.', len - (size_t)(dot1 + 1 - token)) : NULL;
    if (!dot2 || memchr(dot2 + 1, '.', len - (size_t)(dot2 + 1 - token)))
        return LG_AUTH_MALFORMED;
    json_t *header = decode_json_part(token, (size_t)(dot1 - token));
    if (!header)
        return LG_AUTH_MALFORMED;
    const char *alg = json_string_value(json_object_get(header, "alg"));
    bool critical = json_object_get(header, "crit") != NULL; /* extensions we do not know */
    enum lg_auth_result r = !alg || critical                           ? LG_AUTH_MALFORMED
                            : !alg_name(a->alg) || strcmp(alg, alg_name(a->alg)) != 0
                                ? LG_AUTH_WRONG_ALGORITHM
                                : LG_AUTH_OK;
    json_decref(header);
    if (r != LG_AUTH_OK)
        return r;
    unsigned char sig[LG_AUTH_TOKEN_MAX];
    size_t sig_text = len - (size_t)(dot2 + 1 - token);
    long sig_len = b64url_decode(dot2 + 1, sig_text, sig);
    if (sig_len <= 0)
        return LG_AUTH_MALFORMED;
    if (!signature_ok(a, token, (size_t)(dot2 - token), sig, (size_t)sig_len))
        return LG_AUTH_BAD_SIGNATURE;
    json_t *claims = decode_json_part(dot1 + 1, (size_t)(dot2 - dot1 - 1));
    if (!claims)
        return LG_AUTH_MALFORMED;
    r = grant_of(a, claims, now_s, grant);
    json_decref(claims);
    return r;
}

void lg_grant_free(struct lg_grant *g) { free(g); }

bool lg_auth_may_subscribe(const struct lg_auth *a, const struct lg_grant *g, const char *topic)
{
    if (!a->enabled ||
        lg_glob_match_any((const char *const *)a->anonymous, a->anonymous_count, topic))
        return true;
    return g && lg_glob_match_any(g->subscribe, g->subscribe_count, topic);
}

bool lg_grant_may_publish(const struct lg_grant *g, const char *topic)
{
    return g && lg_glob_match_any(g->publish, g->publish_count, topic);
}

/* ---- Refusals ------------------------------------------------------------------------------ */

static const struct {
    const char *code, *message, *challenge;
} refusals[LG_AUTH_RESULT_COUNT_] = {
    [LG_AUTH_OK] = {"ok", "the token is valid", ""},
    [LG_AUTH_MISSING] = {"token_missing",
                         "a token is required: Authorization: Bearer, access_token= or the cookie",
                         "WWW-Authenticate: Bearer realm=\"livegate\", error=\"invalid_request\", "
                         "error_description=\"token missing\"\r\n"},
    [LG_AUTH_MALFORMED] = {"token_malformed",
                           "the token is not a JWT with an exp claim and livegate claims of the "
                           "documented shape",
                           "WWW-Authenticate: Bearer realm=\"livegate\", error=\"invalid_token\", "
                           "error_description=\"token malformed\"\r\n"},
    [LG_AUTH_EXPIRED] = {"token_expired", "the token expired",
                         "WWW-Authenticate: Bearer realm=\"livegate\", error=\"invalid_token\", "
                         "error_description=\"token expired\"\r\n"},
    [LG_AUTH_NOT_YET_VALID] = {"token_not_yet_valid", "the token is not valid yet (nbf)",
                               "WWW-Authenticate: Bearer realm=\"livegate\", "
                               "error=\"invalid_token\", error_description=\"token not yet "
                               "valid\"\r\n"},
    [LG_AUTH_BAD_SIGNATURE] = {"token_bad_signature", "the token's signature does not verify",
                               "WWW-Authenticate: Bearer realm=\"livegate\", "
                               "error=\"invalid_token\", error_description=\"bad signature\"\r\n"},
    [LG_AUTH_WRONG_ALGORITHM] = {"token_wrong_algorithm",
                                 "the token's alg is not the algorithm this gateway is "
                                 "configured for",
                                 "WWW-Authenticate: Bearer realm=\"livegate\", "
                                 "error=\"invalid_token\", error_description=\"wrong "
                                 "algorithm\"\r\n"},
};

const char *lg_auth_result_code(enum lg_auth_result r) { return refusals[r].code; }
const char *lg_auth_result_message(enum lg_auth_result r) { return refusals[r].message; }
const char *lg_auth_challenge(enum lg_auth_result r) { return refusals[r].challenge; }

/* ---- Token sources ------------------------------------------------------------------------- */

bool lg_auth_bearer(const char *h, size_t len, const char **tok, size_t *tok_len)
{
    if (len < 7 || strncasecmp(h, "Bearer ", 7) != 0)
        return false;
    size_t i = 7;
    while (i < len && h[i] == ' ')
        i++;
    size_t end = len;
    while (end > i && (h[end - 1] == ' ' || h[end - 1] == '\t'))
        end--;
    *tok = h + i;
    *tok_len = end - i;
    return end > i;
}

bool lg_auth_cookie(const char *h, size_t len, const char *name, const char **tok,
                    size_t *tok_len)
{
    size_t name_len = strlen(name);
    for (size_t i = 0; i < len;) {
        while (i < len && (h[i] == ' ' || h[i] == ';'))
            i++;
        size_t start = i;
        while (i < len && h[i] != ';')
            i++;
        /* one cookie-pair at h[start..i) */
        if (i - start > name_len && memcmp(h + start, name, name_len) == 0 &&
            h[start + name_len] == '=') {
            *tok = h + start + name_len + 1;
            *tok_len = i - start - name_len - 1;
            return *tok_len > 0;
        }
    }
    return false;
}

void lg_auth_count_refusal(enum lg_auth_result r)
{
    switch (r) {
    case LG_AUTH_OK: break;
    case LG_AUTH_MISSING: LG_STAT_ADD(auth_refused_missing, 1); break;
    case LG_AUTH_MALFORMED: LG_STAT_ADD(auth_refused_malformed, 1); break;
    case LG_AUTH_EXPIRED: LG_STAT_ADD(auth_refused_expired, 1); break;
    case LG_AUTH_NOT_YET_VALID: LG_STAT_ADD(auth_refused_not_yet_valid, 1); break;
    case LG_AUTH_BAD_SIGNATURE: LG_STAT_ADD(auth_refused_bad_signature, 1); break;
    case LG_AUTH_WRONG_ALGORITHM: LG_STAT_ADD(auth_refused_wrong_algorithm, 1); break;
    case LG_AUTH_RESULT_COUNT_: break;
    }
}

enum lg_origin_verdict lg_origin_check(const struct lg_string_list *allowed, const char *o,
                                       size_t len)
{
    if (len == 0)
        return LG_ORIGIN_ABSENT;
    if (allowed->count == 0)
        return LG_ORIGIN_UNCHECKED;
    if (strcmp(allowed->items[0], "*") == 0)
        return LG_ORIGIN_ANY;
    for (size_t i = 0; i < allowed->count; i++)
        if (strlen(allowed->items[i]) == len && memcmp(allowed->items[i], o, len) == 0)
            return LG_ORIGIN_LISTED;
    return LG_ORIGIN_REFUSED;
}
