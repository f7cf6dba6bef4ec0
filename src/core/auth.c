/* auth.c - see auth.h. */
#include "auth.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/core_names.h>
#include <openssl/pem.h>
#include <openssl/bn.h>
#include <openssl/ec.h>

#include "auth_internal.h"
#include "config.h"
#include "stats.h"
#include "topic_glob.h"

/*
 * One generation of the "auth" settings: built whole on the main thread (at start and at each
 * reload), immutable from then on, and shared by reference. Freed by whichever thread drops
 * the last reference: the main thread when it swaps in the next one and no reader holds it,
 * else the reader (worker or control thread) whose release is the last. Freeing does no I/O.
 */
struct lg_auth_set {
    _Atomic unsigned refs;
    bool enabled;
    int64_t leeway_s;
    struct lg_auth_key *keys;      /* [key_count]: the unnamed key first, then the JWKS's */
    size_t key_count;
    bool named;                    /* some key has a kid (a JWKS is configured) */
    char **anonymous;              /* auth.anonymous_subscribe, copied */
    size_t anonymous_count;
    char *control_token;           /* NULL = none */
    struct lg_string_list origins; /* allowed_origins, copied */
};

struct lg_auth {
    /* Guards `current` only: the swap, and a reader's load-and-reference. Held for a few
     * instructions, never across I/O or verification. */
    pthread_mutex_t lock;
    struct lg_auth_set *current;
    char *cookie;                  /* auth.cookie: fixed at start (workers keep the pointer) */
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

int lg_auth__prepare_key(struct lg_auth_key *k)
{
    if (k->alg != LG_ALG_HS256) {
        k->verify_template = EVP_MD_CTX_new();
        return k->verify_template &&
                       EVP_DigestVerifyInit_ex(k->verify_template, NULL, "SHA256", NULL, NULL,
                                               k->public_key, NULL) == 1
                   ? 0
                   : -1;
    }
    EVP_MAC *mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
    k->hmac_template = mac ? EVP_MAC_CTX_new(mac) : NULL;
    EVP_MAC_free(mac);
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, "SHA256", 0),
        OSSL_PARAM_construct_end(),
    };
    return k->hmac_template &&
                   EVP_MAC_init(k->hmac_template, k->secret, k->secret_len, params) == 1
               ? 0
               : -1;
}

void lg_auth__key_release(struct lg_auth_key *k)
{
    if (k->secret)
        OPENSSL_cleanse(k->secret, k->secret_len);
    free(k->secret);
    free(k->kid);
    EVP_MAC_CTX_free(k->hmac_template);
    EVP_MD_CTX_free(k->verify_template);
    EVP_PKEY_free(k->public_key);
}

static void set_free(struct lg_auth_set *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->key_count; i++)
        lg_auth__key_release(&s->keys[i]);
    free(s->keys);
    for (size_t i = 0; i < s->anonymous_count; i++)
        free(s->anonymous[i]);
    free(s->anonymous);
    if (s->control_token)
        OPENSSL_cleanse(s->control_token, strlen(s->control_token));
    free(s->control_token);
    for (size_t i = 0; i < s->origins.count; i++)
        free(s->origins.items[i]);
    free(s->origins.items);
    free(s);
}

/* The unnamed key of auth.hs256_secret or auth.rs256_public_key_file into k. Return value:
 * 0, or -1 with err filled. */
static int unnamed_key(const struct lg_config *cfg, struct lg_auth_key *k, char *err,
                       size_t errlen)
{
    if (cfg->auth.hs256_secret && cfg->auth.hs256_secret[0]) {
        k->alg = LG_ALG_HS256;
        k->secret_len = strlen(cfg->auth.hs256_secret);
        if ((k->secret = (unsigned char *)strdup(cfg->auth.hs256_secret)) == NULL) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
    } else {
        k->alg = LG_ALG_RS256;
        if ((k->public_key = read_public_key(cfg->auth.rs256_public_key_file, err, errlen)) == NULL)
            return -1;
    }
    if (lg_auth__prepare_key(k) != 0) {
        snprintf(err, errlen, "cannot set up the %s verifier in OpenSSL",
                 k->alg == LG_ALG_HS256 ? "HS256" : "RS256");
        return -1;
    }
    return 0;
}

/* Build one generation from cfg, reading the key files now. Return value: the set with one
 * reference (the caller's), or NULL with err filled. */
static struct lg_auth_set *set_create(const struct lg_config *cfg, char *err, size_t errlen)
{
    struct lg_auth_set *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    atomic_init(&s->refs, 1);
    s->enabled = lg_config_auth_enabled(cfg);
    s->leeway_s = cfg->auth.leeway_s;
    const struct lg_string_list *anon = &cfg->auth.anonymous_subscribe;
    s->anonymous = calloc(anon->count ? anon->count : 1, sizeof(char *));
    bool oom = !s->anonymous;
    for (size_t i = 0; !oom && i < anon->count; i++, s->anonymous_count++)
        oom = (s->anonymous[i] = strdup(anon->items[i])) == NULL;
    if (cfg->auth.control_token && cfg->auth.control_token[0])
        oom = oom || (s->control_token = strdup(cfg->auth.control_token)) == NULL;
    const struct lg_string_list *origins = &cfg->allowed_origins;
    s->origins.items = calloc(origins->count ? origins->count : 1, sizeof(char *));
    oom = oom || !s->origins.items;
    for (size_t i = 0; !oom && i < origins->count; i++, s->origins.count++)
        oom = (s->origins.items[i] = strdup(origins->items[i])) == NULL;
    bool unnamed = (cfg->auth.hs256_secret && cfg->auth.hs256_secret[0]) ||
                   (cfg->auth.rs256_public_key_file && cfg->auth.rs256_public_key_file[0]);
    s->keys = calloc(1 + LG_AUTH_KEYS_MAX, sizeof *s->keys);
    if (oom || !s->keys) {
        snprintf(err, errlen, "out of memory");
        set_free(s);
        return NULL;
    }
    if (unnamed && unnamed_key(cfg, &s->keys[s->key_count++], err, errlen) != 0) {
        set_free(s);
        return NULL;
    }
    if (cfg->auth.jwks_file && cfg->auth.jwks_file[0]) {
        size_t before = s->key_count;
        if (lg_auth__read_jwks(cfg->auth.jwks_file, s->keys, &s->key_count, err, errlen) != 0) {
            set_free(s);
            return NULL;
        }
        s->named = s->key_count > before;
    }
    return s;
}

struct lg_auth *lg_auth_create(const struct lg_config *cfg, char *err, size_t errlen)
{
    struct lg_auth *a = calloc(1, sizeof *a);
    if (!a || pthread_mutex_init(&a->lock, NULL) != 0) {
        free(a);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    a->cookie = strdup(cfg->auth.cookie ? cfg->auth.cookie : "livegate_token");
    a->current = a->cookie ? set_create(cfg, err, errlen) : NULL;
    if (!a->current) {
        if (!a->cookie)
            snprintf(err, errlen, "out of memory");
        lg_auth_destroy(a);
        return NULL;
    }
    return a;
}

int lg_auth_reload(struct lg_auth *a, const struct lg_config *cfg, char *err, size_t errlen)
{
    struct lg_auth_set *next = set_create(cfg, err, errlen); /* file reads: outside the lock */
    if (!next)
        return -1;
    pthread_mutex_lock(&a->lock);
    struct lg_auth_set *old = a->current;
    a->current = next;
    pthread_mutex_unlock(&a->lock);
    if (atomic_fetch_sub_explicit(&old->refs, 1, memory_order_acq_rel) == 1)
        set_free(old);
    return 0;
}

void lg_auth_destroy(struct lg_auth *a)
{
    if (!a)
        return;
    set_free(a->current); /* every thread that read it was joined */
    pthread_mutex_destroy(&a->lock);
    free(a->cookie);
    free(a);
}

/* The current generation, referenced: the caller releases it. */
static struct lg_auth_set *acquire(const struct lg_auth *a)
{
    struct lg_auth *m = (struct lg_auth *)a; /* the lock is not part of the verifier's value */
    pthread_mutex_lock(&m->lock);
    struct lg_auth_set *s = m->current;
    atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
    pthread_mutex_unlock(&m->lock);
    return s;
}

static void release(struct lg_auth_set *s)
{
    if (atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) == 1)
        set_free(s);
}

bool lg_auth_enabled(const struct lg_auth *a)
{
    struct lg_auth_set *s = acquire(a);
    bool on = s->enabled;
    release(s);
    return on;
}

bool lg_auth_has_key(const struct lg_auth *a)
{
    struct lg_auth_set *s = acquire(a);
    bool has = s->key_count > 0;
    release(s);
    return has;
}

const char *lg_auth_cookie_name(const struct lg_auth *a) { return a->cookie; }

bool lg_auth_has_control_token(const struct lg_auth *a)
{
    struct lg_auth_set *s = acquire(a);
    bool has = s->control_token != NULL;
    release(s);
    return has;
}

bool lg_auth_is_control_token(const struct lg_auth *a, const char *token, size_t len)
{
    struct lg_auth_set *s = acquire(a);
    size_t want = s->control_token ? strlen(s->control_token) : 0;
    /* The length is not secret; the bytes are compared in constant time. */
    bool is = s->control_token && len == want && CRYPTO_memcmp(s->control_token, token, len) == 0;
    release(s);
    return is;
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

long lg_auth__b64url_decode(const char *in, size_t len, unsigned char *out)
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
    long n = lg_auth__b64url_decode(in, len, buf);
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

/* A JWS ES256 signature is r || s, 32 bytes each (RFC 7518 section 3.4); OpenSSL verifies
 * the DER of ECDSA-Sig-Value. Return value: the DER length in der, or 0. */
static size_t es256_der(const unsigned char *sig, size_t sig_len, unsigned char *der,
                        size_t cap)
{
    if (sig_len != 64)
        return 0;
    ECDSA_SIG *e = ECDSA_SIG_new();
    BIGNUM *r = BN_bin2bn(sig, 32, NULL), *s = BN_bin2bn(sig + 32, 32, NULL);
    if (!e || !r || !s || ECDSA_SIG_set0(e, r, s) != 1) {
        BN_free(r);
        BN_free(s);
        ECDSA_SIG_free(e);
        return 0;
    }
    int n = i2d_ECDSA_SIG(e, NULL);
    unsigned char *p = der;
    size_t len = n > 0 && (size_t)n <= cap && i2d_ECDSA_SIG(e, &p) == n ? (size_t)n : 0;
    ECDSA_SIG_free(e);
    return len;
}

static bool signature_ok(const struct lg_auth_key *k, const char *signed_part, size_t signed_len,
                         const unsigned char *sig, size_t sig_len)
{
    if (k->alg == LG_ALG_HS256) {
        unsigned char mac[EVP_MAX_MD_SIZE];
        size_t mac_len = 0;
        EVP_MAC_CTX *ctx = EVP_MAC_CTX_dup(k->hmac_template);
        bool ok = ctx && EVP_MAC_update(ctx, (const unsigned char *)signed_part, signed_len) == 1 &&
                  EVP_MAC_final(ctx, mac, &mac_len, sizeof mac) == 1;
        EVP_MAC_CTX_free(ctx);
        return ok && sig_len == mac_len && CRYPTO_memcmp(mac, sig, mac_len) == 0;
    }
    unsigned char der[80];
    if (k->alg == LG_ALG_ES256 && (sig_len = es256_der(sig, sig_len, der, sizeof der)) == 0)
        return false;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    bool ok = ctx && EVP_MD_CTX_copy_ex(ctx, k->verify_template) == 1 &&
              EVP_DigestVerifyUpdate(ctx, signed_part, signed_len) == 1 &&
              EVP_DigestVerifyFinal(ctx, k->alg == LG_ALG_ES256 ? der : sig, sig_len) == 1;
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

/* The length of the "sub" claim a grant keeps: 0 (none) unless it is a string that can name a
 * presence member (1..LG_GRANT_SUB_MAX bytes, no NUL). */
static size_t subject_kept(const json_t *subject)
{
    if (!json_is_string(subject))
        return 0;
    size_t len = json_string_length(subject);
    return len <= LG_GRANT_SUB_MAX && strlen(json_string_value(subject)) == len ? len : 0;
}

/* The grant of claims, or why not. */
static enum lg_auth_result grant_of(const struct lg_auth_set *a, const json_t *claims,
                                    const char *payload, size_t payload_len, int64_t now_s,
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
    const json_t *subject = json_object_get(claims, "sub");
    size_t subject_len = subject_kept(subject);
    if (subject_len)
        bytes += subject_len + 1;
    struct lg_grant *g = malloc(sizeof *g + bytes + payload_len + 1);
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
    if (subject_len) {
        memcpy(text, json_string_value(subject), subject_len + 1);
        g->sub = text;
        text += subject_len + 1;
    }
    memcpy(text, payload, payload_len);
    text[payload_len] = '\0';
    g->claims_b64 = text;
    g->claims_b64_len = payload_len;
    *out = g;
    return LG_AUTH_OK;
}

/* ---- Verifying ----------------------------------------------------------------------------- */

static const char *alg_name(enum lg_auth_alg alg)
{
    return alg == LG_ALG_HS256   ? "HS256"
           : alg == LG_ALG_RS256 ? "RS256"
           : alg == LG_ALG_ES256 ? "ES256"
                                 : NULL;
}

/*
 * The key a token's header selects (docs/security.md "Key rotation"):
 * - a kid, and some key is named: the key of that kid, else none;
 * - a kid, and no key is named (only auth.hs256_secret or rs256_public_key_file): the
 *   unnamed key, the kid ignored as before keys had names;
 * - no kid: the unnamed key, or the only key; with several named keys, none (trying each
 *   would multiply the cost of a bad token by the key count and hide which key signed).
 */
static const struct lg_auth_key *key_for(const struct lg_auth_set *s, const json_t *kid)
{
    if (s->key_count == 0)
        return NULL;
    if (kid && s->named) {
        for (size_t i = 0; i < s->key_count; i++)
            if (s->keys[i].kid && strlen(s->keys[i].kid) == json_string_length(kid) &&
                memcmp(s->keys[i].kid, json_string_value(kid), json_string_length(kid)) == 0)
                return &s->keys[i];
        return NULL;
    }
    if (!s->keys[0].kid || s->key_count == 1)
        return &s->keys[0]; /* the unnamed key is first */
    return NULL;
}

static enum lg_auth_result verify_with(const struct lg_auth_set *s, const char *token, size_t len,
                                       int64_t now_s, struct lg_grant **grant)
{
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
    const json_t *kid = json_object_get(header, "kid");
    bool critical = json_object_get(header, "crit") != NULL; /* extensions we do not know */
    const struct lg_auth_key *k = NULL;
    /* No key at all (anonymous_subscribe only): no algorithm is accepted, as before keys
     * had names. */
    enum lg_auth_result r = !alg || critical || (kid && !json_is_string(kid)) ? LG_AUTH_MALFORMED
                            : s->key_count == 0                           ? LG_AUTH_WRONG_ALGORITHM
                            : (k = key_for(s, kid)) == NULL                   ? LG_AUTH_UNKNOWN_KEY
                            : strcmp(alg, alg_name(k->alg)) != 0 ? LG_AUTH_WRONG_ALGORITHM
                                                                 : LG_AUTH_OK;
    json_decref(header);
    if (r != LG_AUTH_OK)
        return r;
    unsigned char sig[LG_AUTH_TOKEN_MAX];
    size_t sig_text = len - (size_t)(dot2 + 1 - token);
    long sig_len = lg_auth__b64url_decode(dot2 + 1, sig_text, sig);
    if (sig_len <= 0)
        return LG_AUTH_MALFORMED;
    if (!signature_ok(k, token, (size_t)(dot2 - token), sig, (size_t)sig_len))
        return LG_AUTH_BAD_SIGNATURE;
    json_t *claims = decode_json_part(dot1 + 1, (size_t)(dot2 - dot1 - 1));
    if (!claims)
        return LG_AUTH_MALFORMED;
    r = grant_of(s, claims, dot1 + 1, (size_t)(dot2 - dot1 - 1), now_s, grant);
    json_decref(claims);
    return r;
}

enum lg_auth_result lg_auth_verify(const struct lg_auth *a, const char *token, size_t len,
                                   int64_t now_s, struct lg_grant **grant)
{
    *grant = NULL;
    struct lg_auth_set *s = acquire(a);
    enum lg_auth_result r = verify_with(s, token, len, now_s, grant);
    release(s);
    return r;
}

void lg_grant_free(struct lg_grant *g) { free(g); }

char *lg_grant_claims_text(const struct lg_grant *g)
{
    unsigned char *buf = malloc(g->claims_b64_len + 1);
    long n = buf ? lg_auth__b64url_decode(g->claims_b64, g->claims_b64_len, buf) : -1;
    if (n <= 0) {
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    return (char *)buf;
}

bool lg_auth_may_subscribe(const struct lg_auth *a, const struct lg_grant *g, const char *topic)
{
    struct lg_auth_set *s = acquire(a);
    bool may = !s->enabled ||
               lg_glob_match_any((const char *const *)s->anonymous, s->anonymous_count, topic);
    release(s);
    return may || (g && lg_glob_match_any(g->subscribe, g->subscribe_count, topic));
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
    [LG_AUTH_UNKNOWN_KEY] = {"token_unknown_key",
                             "the token's kid names no configured key, or it has no kid and "
                             "several keys are configured",
                             "WWW-Authenticate: Bearer realm=\"livegate\", "
                             "error=\"invalid_token\", error_description=\"unknown key\"\r\n"},
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
    case LG_AUTH_UNKNOWN_KEY: LG_STAT_ADD(auth_refused_unknown_key, 1); break;
    case LG_AUTH_RESULT_COUNT_: break;
    }
}

enum lg_origin_verdict lg_auth_origin(const struct lg_auth *a, const char *o, size_t len)
{
    struct lg_auth_set *s = acquire(a);
    enum lg_origin_verdict v = lg_origin_check(&s->origins, o, len);
    release(s);
    return v;
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
