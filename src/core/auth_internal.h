/*
 * auth_internal.h - what auth.c and auth_jwks.c share: one verification key, and reading a
 * JWKS file into keys. No other module includes it.
 *
 * Owns:    a struct lg_auth_key owns its secret, kid, EVP_PKEY and OpenSSL templates.
 * Frees:   lg_auth__key_release() (auth.c, when the generation holding the key is freed).
 * Threads: keys are built on the main thread (start, SIGHUP reload) and only read after, by
 *          any thread that holds a reference to their generation (auth.c).
 * Bounds:  LG_AUTH_KEYS_MAX keys in a JWKS; a kid is at most LG_AUTH_KID_MAX bytes.
 */
#ifndef LG_AUTH_INTERNAL_H
#define LG_AUTH_INTERNAL_H

#include <stddef.h>

#include <openssl/evp.h>

enum lg_auth_alg { LG_ALG_NONE_CONFIGURED, LG_ALG_HS256, LG_ALG_RS256, LG_ALG_ES256 };

#define LG_AUTH_KID_MAX 128

/* One verification key. The algorithm is the key's, never the token's. */
struct lg_auth_key {
    char *kid;                     /* NULL: the unnamed key (auth.hs256_secret or
                                      auth.rs256_public_key_file) */
    enum lg_auth_alg alg;
    unsigned char *secret;         /* HS256 */
    size_t secret_len;
    EVP_PKEY *public_key;          /* RS256, ES256: parsed once */
    /* Set up once: OpenSSL 3 fetches algorithms from its providers at every init, which
     * costs more than the HMAC itself; each verification copies these instead. */
    EVP_MAC_CTX *hmac_template;    /* HS256: HMAC-SHA256 keyed with the secret */
    EVP_MD_CTX *verify_template;   /* RS256, ES256: DigestVerify initialised with the key */
};

/* Unpadded base64url (RFC 7515 section 2) of in[0..len) into out (room for len * 3 / 4).
 * Return value: the decoded length, or -1 when a byte is not of the alphabet or the length
 * cannot be base64 (len % 4 == 1). */
long lg_auth__b64url_decode(const char *in, size_t len, unsigned char *out);

/* Set up k's template from its secret or public key. Return value: 0, or -1. */
int lg_auth__prepare_key(struct lg_auth_key *k);
void lg_auth__key_release(struct lg_auth_key *k);

/*
 * Read the JWKS (RFC 7517) at path and append its keys to keys[*count..] (room for
 * LG_AUTH_KEYS_MAX more). Each key needs a unique "kid"; "kty" oct (HS256, "k" at least 32
 * bytes), RSA (RS256, "n" of at least 2048 bits, "e") or EC (ES256, "crv" P-256, "x", "y");
 * an "alg" or "use" member, when present, must agree ("HS256"/"RS256"/"ES256", "sig").
 * Return value: 0, or -1 with err naming the file and the entry (keys added so far stay in
 * keys[] for the caller to release).
 */
int lg_auth__read_jwks(const char *path, struct lg_auth_key *keys, size_t *count, char *err,
                       size_t errlen);

#endif
