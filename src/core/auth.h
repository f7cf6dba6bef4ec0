/*
 * auth.h - bearer tokens (JWT) and what they allow: the verifier built once from the "auth"
 * settings, a verified token's grant, the topic checks against it, and where a request
 * carries a token (Authorization header, access_token query parameter, cookie).
 *
 * DESIGN
 * The algorithm is pinned by the key, never taken from the token: a header naming another
 * algorithm ("none", HS256 against an RSA key) is refused before any signature check. Keys:
 * an unnamed one (auth.hs256_secret or auth.rs256_public_key_file) and the named ones of
 * auth.jwks_file (HS256, RS256, ES256), chosen by the token's "kid" (key_for() in auth.c
 * states the rule for tokens without one). The signature is
 * checked with OpenSSL (HMAC-SHA256 compared in constant time; EVP_DigestVerify on an
 * EVP_PKEY parsed once, here, at start); the claims are read with jansson. libjwt 1.10.2 is
 * not on this path: it re-parses the PEM key on every call (shared/notes/platform-facts.md)
 * and checks neither the algorithm nor exp/nbf.
 * Claims: "exp" (required), "nbf" (optional), both with auth.leeway_s of slack, and
 * "livegate": {"subscribe": [globs], "publish": [globs]} (topic_rules' glob grammar).
 *
 * RELOAD
 * struct lg_auth is a stable handle over the current generation of the "auth" settings (keys,
 * anonymous_subscribe, control_token, leeway_s, and allowed_origins, which the Origin checks
 * read here): an immutable, refcounted block. Each call
 * below takes a reference to the current generation (a mutex held for a pointer load and an
 * increment, never across I/O or a signature check), works on it, and drops it.
 * lg_auth_reload() (main thread, on SIGHUP) builds the next generation, key files read before
 * the lock, and swaps it in; the previous one is freed by whichever thread drops its last
 * reference. So a verification in flight finishes on the keys it started with, and the next
 * one sees the new keys. auth.cookie is fixed at start (restart to change it).
 *
 * Owns:    struct lg_auth: the current generation (keys: secret bytes or EVP_PKEYs, and copies
 *          of the settings it needs) and the cookie name; a struct lg_grant is one malloc'd
 *          block owned by whoever verify() gave it to.
 * Frees:   lg_auth_destroy() (after every thread using it stopped); a replaced generation:
 *          the thread dropping its last reference; lg_grant_free().
 * Threads: any thread may call every function at once, except lg_auth_reload() (main thread)
 *          and lg_auth_create()/lg_auth_destroy(). A grant belongs to one connection (or one
 *          control request) and its thread; it outlives a reload that removes its key (the
 *          connection ends at the token's exp, as before).
 * Bounds:  a token is at most LG_AUTH_TOKEN_MAX bytes; a grant holds at most
 *          LG_GRANT_PATTERNS_MAX patterns per list, each at most 128 bytes (a glob match costs
 *          at most len(pattern) * len(topic) steps). Verification does no I/O.
 */
#ifndef LG_AUTH_H
#define LG_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct lg_config;

#define LG_AUTH_TOKEN_MAX 4096
#define LG_GRANT_PATTERNS_MAX 64
#define LG_GRANT_SUB_MAX 128 /* a longer "sub" claim is not kept: the client is anonymous */
#define LG_AUTH_KEYS_MAX 64 /* keys of auth.jwks_file */
/* exp and nbf are clamped to +-this (9999-12-31T23:59:59Z): a later exp means "never expires"
 * and the times derived from it (plus auth.leeway_s, in milliseconds) stay in int64_t. */
#define LG_NUMERIC_DATE_MAX INT64_C(253402300799)

/* Why a token was refused (LG_AUTH_OK: it was not). Index of the counters in stats.h. */
enum lg_auth_result {
    LG_AUTH_OK = 0,
    LG_AUTH_MISSING,        /* no token where one is needed */
    LG_AUTH_MALFORMED,      /* not three base64url parts of JSON, or claims of the wrong shape */
    LG_AUTH_EXPIRED,        /* now >= exp + leeway */
    LG_AUTH_NOT_YET_VALID,  /* now < nbf - leeway */
    LG_AUTH_BAD_SIGNATURE,  /* the signature does not verify with the configured key */
    LG_AUTH_WRONG_ALGORITHM,/* the header's alg is not the configured one (none, confusion) */
    LG_AUTH_UNKNOWN_KEY,    /* the kid names no key, or no kid and several named keys */
    LG_AUTH_RESULT_COUNT_
};

/* What a verified token allows, until exp_s. */
struct lg_grant {
    int64_t exp_s;                 /* the token's exp (seconds since the epoch) */
    int64_t expires_at_s;          /* exp_s + auth.leeway_s: when connections must end */
    size_t subscribe_count, publish_count;
    const char **subscribe;        /* globs, inside this block */
    const char **publish;
    const char *sub;               /* the token's "sub" claim (1..LG_GRANT_SUB_MAX bytes, no
                                      NUL), inside this block; NULL when absent or longer */
    const char *claims_b64;        /* the token's claims part (base64url), inside this block:
                                      what the backend hooks are told (hooks.h) */
    size_t claims_b64_len;
};

struct lg_auth;

/* Build the verifier from cfg->auth: reads and parses the RS256 key file and the JWKS now.
 * Auth off (lg_config_auth_enabled() false) still gives a verifier: it allows every
 * subscription. Return value: the verifier, or NULL with err filled (unreadable key file, not
 * an RSA public key of at least 2048 bits, a JWKS entry refused, out of memory). */
struct lg_auth *lg_auth_create(const struct lg_config *cfg, char *err, size_t errlen);
/* Replace the keys and settings with cfg's (re-reading the key files). On failure nothing
 * changes. Main thread only. Return value: 0, or -1 with err filled as lg_auth_create(). */
int lg_auth_reload(struct lg_auth *a, const struct lg_config *cfg, char *err, size_t errlen);
void lg_auth_destroy(struct lg_auth *a);

/* Whether subscriptions are authorized at all (else every topic is open, as without auth). */
bool lg_auth_enabled(const struct lg_auth *a);
/* Whether a verification key is configured (tokens can be accepted). */
bool lg_auth_has_key(const struct lg_auth *a);
/* The cookie name that may carry a token. */
const char *lg_auth_cookie_name(const struct lg_auth *a);

/* Verify token[0..len) at now_s. Pure: no I/O, no global state. Return value: LG_AUTH_OK
 * with *grant set (the caller frees it), or why not (*grant NULL). */
enum lg_auth_result lg_auth_verify(const struct lg_auth *a, const char *token, size_t len,
                                   int64_t now_s, struct lg_grant **grant);
void lg_grant_free(struct lg_grant *g);
/* The claims of g as JSON text (malloc'd, the caller frees), or NULL (out of memory). */
char *lg_grant_claims_text(const struct lg_grant *g);

/* Whether the holder of g (NULL: no token) may subscribe to topic: auth off, a pattern of
 * auth.anonymous_subscribe, or one of g's subscribe patterns. */
bool lg_auth_may_subscribe(const struct lg_auth *a, const struct lg_grant *g, const char *topic);
/* Whether g's publish patterns cover topic (g NULL: no). */
bool lg_grant_may_publish(const struct lg_grant *g, const char *topic);
/* Whether a control token is configured, and whether token[0..len) is it (constant time). */
bool lg_auth_has_control_token(const struct lg_auth *a);
bool lg_auth_is_control_token(const struct lg_auth *a, const char *token, size_t len);

/* Count a refusal in its stats.h counter (auth_refused_<reason>). */
void lg_auth_count_refusal(enum lg_auth_result r);

/* The machine-readable code ("token_expired", ...) and a sentence for a refusal. */
const char *lg_auth_result_code(enum lg_auth_result r);
const char *lg_auth_result_message(enum lg_auth_result r);
/* The WWW-Authenticate header line (with CRLF) for a 401 of r (RFC 6750 section 3). */
const char *lg_auth_challenge(enum lg_auth_result r);

/* ---- Where a request carries its token (pure, over the caller's bytes) ---------------- */

/* The token of an "Authorization: Bearer <token>" value h[0..len) (scheme case-insensitive).
 * Return value: true with *tok, *tok_len inside h; false if h is not a Bearer credential. */
bool lg_auth_bearer(const char *h, size_t len, const char **tok, size_t *tok_len);
/* The value of cookie `name` in a Cookie header h[0..len). Same return convention. */
bool lg_auth_cookie(const char *h, size_t len, const char *name, const char **tok,
                    size_t *tok_len);

/* ---- Origins (allowed_origins) ----------------------------------------------------------- */

enum lg_origin_verdict {
    LG_ORIGIN_ABSENT,   /* no Origin header (curl, servers): never refused for that */
    LG_ORIGIN_UNCHECKED,/* allowed_origins is []: no check, no CORS headers */
    LG_ORIGIN_ANY,      /* allowed_origins is ["*"]: Access-Control-Allow-Origin: *, no credentials */
    LG_ORIGIN_LISTED,   /* echoed, with Access-Control-Allow-Credentials: true */
    LG_ORIGIN_REFUSED,  /* 403 */
};

struct lg_string_list;
/* The verdict for an Origin header value o[0..len) (len 0: absent) against allowed. Exact,
 * case-sensitive comparison (browsers send the serialized origin). */
enum lg_origin_verdict lg_origin_check(const struct lg_string_list *allowed, const char *o,
                                       size_t len);
/* The same against the allowed_origins in force (a reload may change them). */
enum lg_origin_verdict lg_auth_origin(const struct lg_auth *a, const char *o, size_t len);

#endif
