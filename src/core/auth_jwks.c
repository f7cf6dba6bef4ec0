/*
 * auth_jwks.c - a JWKS file (RFC 7517) into verification keys: oct (HS256), RSA (RS256) and
 * EC P-256 (ES256) public keys, each named by its kid. See auth_internal.h.
 *
 * Owns: nothing past the call (keys go into the caller's array). Threads: main thread (start,
 * SIGHUP reload). Bounds: LG_AUTH_KEYS_MAX keys, LG_AUTH_KID_MAX bytes of kid, a file of at
 * most LG_JWKS_FILE_MAX bytes (jansson reads it; we read only the members named here).
 */
#include "auth_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <openssl/core_names.h>
#include <openssl/param_build.h>

#include "auth.h"

#define LG_JWKS_FILE_MAX (1u << 20)
#define LG_JWK_PART_MAX 1024 /* decoded bytes of one member: a 8192-bit modulus */
#define LG_HS256_SECRET_MIN 32 /* RFC 7518 section 3.2: a key of at least the hash's size */

/* Unpadded base64url of a string member into out. Return value: the length, or -1. */
static long member_b64(const json_t *jwk, const char *name, unsigned char *out)
{
    const json_t *v = json_object_get(jwk, name);
    const char *text = json_string_value(v);
    size_t len = json_string_length(v);
    if (!text || len == 0 || len > LG_JWK_PART_MAX * 4 / 3 + 4 || len % 4 == 1)
        return -1;
    return lg_auth__b64url_decode(text, len, out);
}

/* An EVP_PKEY of type name ("RSA", "EC") from params. */
static EVP_PKEY *pkey_from(const char *name, OSSL_PARAM_BLD *bld)
{
    OSSL_PARAM *params = bld ? OSSL_PARAM_BLD_to_param(bld) : NULL;
    EVP_PKEY_CTX *ctx = params ? EVP_PKEY_CTX_new_from_name(NULL, name, NULL) : NULL;
    EVP_PKEY *key = NULL;
    if (ctx && EVP_PKEY_fromdata_init(ctx) == 1 &&
        EVP_PKEY_fromdata(ctx, &key, EVP_PKEY_PUBLIC_KEY, params) != 1)
        key = NULL;
    EVP_PKEY_CTX_free(ctx);
    OSSL_PARAM_free(params);
    return key;
}

static const char *rsa_key(const json_t *jwk, struct lg_auth_key *k)
{
    unsigned char n[LG_JWK_PART_MAX], e[16];
    long n_len = member_b64(jwk, "n", n), e_len = member_b64(jwk, "e", e);
    if (n_len < 256 || e_len <= 0 || e_len > (long)sizeof e)
        return "an RSA key needs \"n\" (base64url, at least 2048 bits) and \"e\"";
    BIGNUM *bn_n = BN_bin2bn(n, (int)n_len, NULL), *bn_e = BN_bin2bn(e, (int)e_len, NULL);
    OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
    if (bn_n && bn_e && bld && OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, bn_n) == 1 &&
        OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, bn_e) == 1)
        k->public_key = pkey_from("RSA", bld);
    OSSL_PARAM_BLD_free(bld);
    BN_free(bn_n);
    BN_free(bn_e);
    k->alg = LG_ALG_RS256;
    return k->public_key && EVP_PKEY_bits(k->public_key) >= 2048
               ? NULL : "not an RSA public key of at least 2048 bits";
}

static const char *ec_key(const json_t *jwk, struct lg_auth_key *k)
{
    unsigned char point[1 + 64], x[64], y[64];
    long x_len = member_b64(jwk, "x", x), y_len = member_b64(jwk, "y", y);
    const char *crv = json_string_value(json_object_get(jwk, "crv"));
    if (!crv || strcmp(crv, "P-256") != 0 || x_len != 32 || y_len != 32)
        return "an EC key needs \"crv\": \"P-256\" and \"x\", \"y\" of 32 bytes each (ES256)";
    point[0] = 0x04; /* uncompressed: x || y */
    memcpy(point + 1, x, 32);
    memcpy(point + 33, y, 32);
    OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
    if (bld &&
        OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME, "prime256v1", 0) == 1 &&
        OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, point, sizeof point) == 1)
        k->public_key = pkey_from("EC", bld);
    OSSL_PARAM_BLD_free(bld);
    k->alg = LG_ALG_ES256;
    return k->public_key ? NULL : "not a point of P-256";
}

static const char *oct_key(const json_t *jwk, struct lg_auth_key *k)
{
    unsigned char secret[LG_JWK_PART_MAX];
    long len = member_b64(jwk, "k", secret);
    k->alg = LG_ALG_HS256;
    if (len < LG_HS256_SECRET_MIN)
        return "an oct key needs \"k\" (base64url) of at least 32 bytes (HS256)";
    k->secret = malloc((size_t)len);
    if (!k->secret)
        return "out of memory";
    memcpy(k->secret, secret, (size_t)len);
    k->secret_len = (size_t)len;
    OPENSSL_cleanse(secret, sizeof secret);
    return NULL;
}

/* One entry of "keys" into k. Return value: NULL, or why it is refused. */
static const char *jwk_key(const json_t *jwk, struct lg_auth_key *keys, size_t count,
                           struct lg_auth_key *k)
{
    if (!json_is_object(jwk))
        return "not an object";
    const char *kty = json_string_value(json_object_get(jwk, "kty"));
    const json_t *kid = json_object_get(jwk, "kid");
    const char *alg = json_string_value(json_object_get(jwk, "alg"));
    const char *use = json_string_value(json_object_get(jwk, "use"));
    if (!json_is_string(kid) || json_string_length(kid) == 0 ||
        json_string_length(kid) > LG_AUTH_KID_MAX ||
        strlen(json_string_value(kid)) != json_string_length(kid))
        return "\"kid\" is required: a string of 1 to 128 bytes";
    for (size_t i = 0; i < count; i++)
        if (keys[i].kid && strcmp(keys[i].kid, json_string_value(kid)) == 0)
            return "this \"kid\" is used twice";
    if (use && strcmp(use, "sig") != 0)
        return "\"use\" must be \"sig\"";
    const char *problem = !kty                     ? "\"kty\" is required"
                          : strcmp(kty, "oct") == 0 ? oct_key(jwk, k)
                          : strcmp(kty, "RSA") == 0 ? rsa_key(jwk, k)
                          : strcmp(kty, "EC") == 0  ? ec_key(jwk, k)
                                                    : "\"kty\" must be oct, RSA or EC";
    if (problem)
        return problem;
    static const char *const names[] = {[LG_ALG_HS256] = "HS256", [LG_ALG_RS256] = "RS256",
                                        [LG_ALG_ES256] = "ES256"};
    if (alg && strcmp(alg, names[k->alg]) != 0)
        return "\"alg\" does not match the key type (oct: HS256, RSA: RS256, EC P-256: ES256)";
    if ((k->kid = strdup(json_string_value(kid))) == NULL)
        return "out of memory";
    return lg_auth__prepare_key(k) == 0 ? NULL : "OpenSSL cannot set up a verifier for it";
}

int lg_auth__read_jwks(const char *path, struct lg_auth_key *keys, size_t *count, char *err,
                       size_t errlen)
{
    json_error_t jerr;
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "auth.jwks_file %s: cannot open: %m", path);
        return -1;
    }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    rewind(f);
    json_t *root = size >= 0 && size <= (long)LG_JWKS_FILE_MAX
                       ? json_loadf(f, JSON_REJECT_DUPLICATES, &jerr) : NULL;
    fclose(f);
    const json_t *list = json_object_get(root, "keys");
    if (!json_is_array(list) || json_array_size(list) == 0 ||
        json_array_size(list) > LG_AUTH_KEYS_MAX) {
        if (!root && size >= 0 && size <= (long)LG_JWKS_FILE_MAX)
            snprintf(err, errlen, "auth.jwks_file %s: line %d: %s", path, jerr.line, jerr.text);
        else
            snprintf(err, errlen, "auth.jwks_file %s: not a JWKS ({\"keys\": [1 to %d keys]}, "
                     "at most 1 MiB)", path, LG_AUTH_KEYS_MAX);
        json_decref(root);
        return -1;
    }
    size_t i;
    const json_t *jwk;
    json_array_foreach(list, i, jwk) {
        struct lg_auth_key *k = &keys[*count];
        const char *problem = jwk_key(jwk, keys, *count, k);
        (*count)++; /* released by the caller even when half built */
        if (problem) {
            snprintf(err, errlen, "auth.jwks_file %s: keys[%zu]: %s", path, i, problem);
            json_decref(root);
            return -1;
        }
    }
    json_decref(root);
    return 0;
}
