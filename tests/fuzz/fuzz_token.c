/* fuzz_token.c - the token verifier (auth.h) and where tokens are read from:
 * flag byte, then the rest. Flag bit 0 clear: the rest is a token, verified as sent (the
 * signature almost never holds: this fuzzes splitting, base64url, the header and the
 * algorithm pin). Bit 0 set: the rest is `header\nclaims` JSON texts, encoded and signed with
 * the verifier's secret here, so the claims parser (exp, nbf, the livegate patterns) and the
 * grant it builds are reached. Bit 1: also parse the rest as an Authorization and a Cookie
 * header. A granted token is checked against a few topics. */
#include <openssl/hmac.h>

#include "auth.h"
#include "config.h"
#include "fuzz_support.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct lg_auth *verifier(void)
{
    static struct lg_auth *a;
    if (!a) {
        struct lg_config cfg;
        char err[LG_CONFIG_ERR_MAX];
        lg_config_init_defaults(&cfg);
        if (lg_config_load_string(&cfg, "{\"auth\":{\"hs256_secret\":\"fuzz\",\"leeway_s\":30,"
                                        "\"anonymous_subscribe\":[\"demo/*\"]}}", err) != 0)
            abort();
        a = lg_auth_create(&cfg, err, sizeof err);
        lg_config_release(&cfg);
        if (!a)
            abort();
    }
    return a;
}

static size_t b64url(const char *in, size_t len, char *out)
{
    static const char alphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    size_t n = 0;
    uint32_t acc = 0;
    unsigned bits = 0;
    for (size_t i = 0; i < len; i++) {
        acc = (acc << 8) | (unsigned char)in[i];
        bits += 8;
        while (bits >= 6) {
            bits -= 6;
            out[n++] = alphabet[(acc >> bits) & 63];
        }
    }
    if (bits)
        out[n++] = alphabet[(acc << (6 - bits)) & 63];
    return n;
}

/* header.claims.HMAC of the two fields, in a malloc'd buffer. */
static char *signed_token(const uint8_t *data, size_t size, size_t *len)
{
    const char *header;
    size_t header_len = lg_fuzz_field(&data, &size, &header);
    char *t = malloc((header_len + size) * 2 + 64);
    if (!t)
        return NULL;
    size_t n = b64url(header, header_len, t);
    t[n++] = '.';
    n += b64url((const char *)data, size, t + n);
    unsigned char mac[32];
    unsigned mac_len = 0;
    HMAC(EVP_sha256(), "fuzz", 4, (unsigned char *)t, n, mac, &mac_len);
    t[n++] = '.';
    n += b64url((const char *)mac, mac_len, t + n);
    *len = n;
    return t;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    uint8_t flags = data[0];
    data++, size--;
    struct lg_auth *a = verifier();
    size_t len = size;
    char *token = flags & 1 ? signed_token(data, size, &len) : lg_fuzz_cstring((const char *)data, size);
    if (!token)
        return 0;
    struct lg_grant *g = NULL;
    enum lg_auth_result r = lg_auth_verify(a, token, len, 1700000000, &g);
    if ((r == LG_AUTH_OK) != (g != NULL))
        abort();
    lg_auth_may_subscribe(a, g, "news/eu");
    lg_auth_may_subscribe(a, g, "demo/x");
    lg_grant_may_publish(g, "news/eu");
    lg_grant_free(g);
    if (flags & 2) {
        const char *tok;
        size_t tok_len;
        if (lg_auth_bearer((const char *)data, size, &tok, &tok_len) &&
            (tok < (const char *)data || tok + tok_len > (const char *)data + size))
            abort();
        if (lg_auth_cookie((const char *)data, size, "livegate_token", &tok, &tok_len) &&
            (tok < (const char *)data || tok + tok_len > (const char *)data + size))
            abort();
    }
    free(token);
    return 0;
}
