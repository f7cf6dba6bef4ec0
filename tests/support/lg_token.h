/*
 * lg_token.h - minting JWTs for the tests (test-only code): well-formed tokens with libjwt,
 * and the hostile ones libjwt will not make (alg "none", a forged signature, HS256 keyed with
 * the RSA public key's PEM) by hand with OpenSSL. Header-only, so the unit tests (which do not
 * link lg_test_support) and the integration tests share it.
 *
 * Owns:    every returned string and key is the caller's (free(), EVP_PKEY_free()).
 * Threads: any. Bounds: claims texts are small JSON objects written by the tests.
 */
#ifndef LG_TOKEN_H
#define LG_TOKEN_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jwt.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/bn.h>

#define LG_TOKEN_UNUSED __attribute__((unused))

/* A fresh 2048-bit RSA key; its public half written as PEM to pub_path, and the private half
 * to priv_path when not NULL. */
static LG_TOKEN_UNUSED EVP_PKEY *lg_token_rsa_key(const char *pub_path, const char *priv_path)
{
    EVP_PKEY *key = EVP_RSA_gen(2048);
    FILE *f = key ? fopen(pub_path, "w") : NULL;
    if (!f || PEM_write_PUBKEY(f, key) != 1) {
        fprintf(stderr, "lg_token: cannot write %s\n", pub_path);
        abort();
    }
    fclose(f);
    if (priv_path) {
        f = fopen(priv_path, "w");
        if (!f || PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL, NULL) != 1)
            abort();
        fclose(f);
    }
    return key;
}

/* The PEM text of key's public half (malloc'd). */
static LG_TOKEN_UNUSED char *lg_token_public_pem(EVP_PKEY *key)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    PEM_write_PUBKEY(f, key);
    fclose(f);
    return text;
}

static LG_TOKEN_UNUSED char *lg_token_b64url(const unsigned char *in, size_t len)
{
    char *out = malloc(len * 4 / 3 + 8);
    int n = EVP_EncodeBlock((unsigned char *)out, in, (int)len);
    int w = 0;
    for (int i = 0; i < n; i++) {
        char c = out[i];
        if (c == '=')
            continue;
        out[w++] = c == '+' ? '-' : c == '/' ? '_' : c;
    }
    out[w] = '\0';
    return out;
}

enum lg_token_sign { LG_SIGN_HMAC, LG_SIGN_RSA, LG_SIGN_NONE, LG_SIGN_FORGED };

/*
 * header.claims.signature by hand: header and claims are JSON texts; the signature is
 * HMAC-SHA256 with secret (LG_SIGN_HMAC: secret is any bytes, e.g. a PEM), RSA-SHA256 with
 * rsa (LG_SIGN_RSA), empty (LG_SIGN_NONE), or 32 bytes nobody signed (LG_SIGN_FORGED).
 */
static LG_TOKEN_UNUSED char *lg_token_raw(const char *header, const char *claims,
                                          enum lg_token_sign how, const char *secret,
                                          EVP_PKEY *rsa)
{
    char *h = lg_token_b64url((const unsigned char *)header, strlen(header));
    char *c = lg_token_b64url((const unsigned char *)claims, strlen(claims));
    size_t signed_len = strlen(h) + 1 + strlen(c);
    char *signed_part = malloc(signed_len + 1);
    snprintf(signed_part, signed_len + 1, "%s.%s", h, c);
    unsigned char sig[512];
    size_t sig_len = 0;
    if (how == LG_SIGN_HMAC) {
        unsigned n = 0;
        HMAC(EVP_sha256(), secret, (int)strlen(secret), (unsigned char *)signed_part, signed_len,
             sig, &n);
        sig_len = n;
    } else if (how == LG_SIGN_RSA) {
        EVP_MD_CTX *ctx = EVP_MD_CTX_new();
        sig_len = sizeof sig;
        if (EVP_DigestSignInit(ctx, NULL, EVP_sha256(), NULL, rsa) != 1 ||
            EVP_DigestSign(ctx, sig, &sig_len, (unsigned char *)signed_part, signed_len) != 1)
            abort();
        EVP_MD_CTX_free(ctx);
    } else if (how == LG_SIGN_FORGED) {
        memset(sig, 0x5a, 32);
        sig_len = 32;
    }
    char *s = lg_token_b64url(sig, sig_len);
    size_t total = signed_len + 1 + strlen(s) + 1;
    char *token = malloc(total);
    snprintf(token, total, "%s.%s", signed_part, s);
    free(h), free(c), free(s), free(signed_part);
    return token;
}

/* Claims {"exp": now + exp_in, ["nbf": now + nbf_in,] "livegate": {...}} (livegate: the text
 * of its object, e.g. {"subscribe":["news"]}). */
static LG_TOKEN_UNUSED char *lg_token_claims(long exp_in, const long *nbf_in, const char *livegate)
{
    char *text = malloc(strlen(livegate) + 128);
    long now = (long)time(NULL);
    if (nbf_in)
        sprintf(text, "{\"exp\":%ld,\"nbf\":%ld,\"livegate\":%s}", now + exp_in, now + *nbf_in,
                livegate);
    else
        sprintf(text, "{\"exp\":%ld,\"livegate\":%s}", now + exp_in, livegate);
    return text;
}

/* A token minted by libjwt with a "kid" header (kid NULL: none): alg is JWT_ALG_HS256 with
 * key the secret, or JWT_ALG_RS256 / JWT_ALG_ES256 with key the private PEM text. */
static LG_TOKEN_UNUSED char *lg_token_kid(jwt_alg_t alg, const char *key, size_t key_len,
                                          const char *kid, long exp_in, const char *livegate)
{
    jwt_t *jwt = NULL;
    if (jwt_new(&jwt) != 0)
        abort();
    jwt_add_grant_int(jwt, "exp", (long)time(NULL) + exp_in);
    char claims[1024];
    snprintf(claims, sizeof claims, "{\"livegate\":%s}", livegate);
    if (jwt_add_grants_json(jwt, claims) != 0 || (kid && jwt_add_header(jwt, "kid", kid) != 0) ||
        jwt_set_alg(jwt, alg, (const unsigned char *)key, (int)key_len) != 0)
        abort();
    char *token = jwt_encode_str(jwt); /* malloc'd (libjwt 1.10 has no jwt_free_str) */
    jwt_free(jwt);
    if (!token)
        abort();
    return token;
}

/* A well-formed token minted by libjwt: HS256 with secret (rsa NULL) or RS256 with rsa's PEM
 * private key text (rsa_pem). exp = now + exp_in; livegate as above. */
static LG_TOKEN_UNUSED char *lg_token_libjwt(const char *secret, const char *rsa_pem,
                                             long exp_in, const char *livegate)
{
    const char *key = rsa_pem ? rsa_pem : secret;
    return lg_token_kid(rsa_pem ? JWT_ALG_RS256 : JWT_ALG_HS256, key, strlen(key), NULL, exp_in,
                        livegate);
}

/* The JWK (a JSON object text, malloc'd) of key's public half named kid: RSA (n, e) or EC
 * P-256 (x, y); or, key NULL, an oct key of secret (k). */
static LG_TOKEN_UNUSED char *lg_token_jwk(EVP_PKEY *key, const char *secret, const char *kid)
{
    char *out = malloc(4096);
    if (!key) {
        char *k = lg_token_b64url((const unsigned char *)secret, strlen(secret));
        snprintf(out, 4096, "{\"kty\":\"oct\",\"kid\":\"%s\",\"alg\":\"HS256\",\"k\":\"%s\"}",
                 kid, k);
        free(k);
    } else if (EVP_PKEY_base_id(key) == EVP_PKEY_RSA) {
        BIGNUM *n = NULL, *e = NULL;
        unsigned char nb[1024], eb[16];
        if (EVP_PKEY_get_bn_param(key, "n", &n) != 1 || EVP_PKEY_get_bn_param(key, "e", &e) != 1)
            abort();
        int nl = BN_bn2bin(n, nb), el = BN_bn2bin(e, eb);
        char *n64 = lg_token_b64url(nb, (size_t)nl), *e64 = lg_token_b64url(eb, (size_t)el);
        snprintf(out, 4096, "{\"kty\":\"RSA\",\"kid\":\"%s\",\"use\":\"sig\",\"n\":\"%s\","
                 "\"e\":\"%s\"}", kid, n64, e64);
        free(n64), free(e64);
        BN_free(n), BN_free(e);
    } else {
        unsigned char pt[65];
        size_t len = 0;
        if (EVP_PKEY_get_octet_string_param(key, "encoded-pub-key", pt, sizeof pt, &len) != 1 ||
            len != 65)
            abort();
        char *x = lg_token_b64url(pt + 1, 32), *y = lg_token_b64url(pt + 33, 32);
        snprintf(out, 4096, "{\"kty\":\"EC\",\"kid\":\"%s\",\"crv\":\"P-256\",\"x\":\"%s\","
                 "\"y\":\"%s\"}", kid, x, y);
        free(x), free(y);
    }
    return out;
}

/* Write {"keys":[jwks...]} (count JWK texts) to path. */
static LG_TOKEN_UNUSED void lg_token_write_jwks(const char *path, const char *const *jwks,
                                                size_t count)
{
    char tmp[256];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        abort();
    fputs("{\"keys\":[", f);
    for (size_t i = 0; i < count; i++)
        fprintf(f, "%s%s", i ? "," : "", jwks[i]);
    fputs("]}\n", f);
    fclose(f);
    if (rename(tmp, path) != 0) /* whole or not at all, as an operator's deploy would */
        abort();
}

/* The PEM text of key's private half (malloc'd), for lg_token_libjwt. */
static LG_TOKEN_UNUSED char *lg_token_private_pem(EVP_PKEY *key)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL, NULL);
    fclose(f);
    return text;
}

#endif
