/*
 * auth_verify.c - lg_auth_verify_bench: the cost of one token verification in-process,
 * livegate's verifier (src/core/auth.c: OpenSSL with contexts set up once, jansson) against
 * libjwt 1.10.2's jwt_decode on the same HS256 and RS256 tokens (issue 12 asked which is
 * cheaper). Prints microseconds per verification. Tokens are minted with tests/support/lg_token.h;
 * the RSA key is made at start and its public PEM written to a temporary file.
 *   build/bench/lg_auth_verify_bench [iterations (20000)]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "auth.h"
#include "config.h"
#include "support/lg_token.h"

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static double livegate_us(const char *config, const char *token, int n)
{
    struct lg_config cfg;
    char err[LG_CONFIG_ERR_MAX];
    lg_config_init_defaults(&cfg);
    if (lg_config_load_string(&cfg, config, err) != 0) {
        fprintf(stderr, "%s\n", err);
        exit(1);
    }
    struct lg_auth *a = lg_auth_create(&cfg, err, sizeof err);
    lg_config_release(&cfg);
    if (!a) {
        fprintf(stderr, "%s\n", err);
        exit(1);
    }
    double t0 = now_s();
    for (int i = 0; i < n; i++) {
        struct lg_grant *g;
        if (lg_auth_verify(a, token, strlen(token), (int64_t)time(NULL), &g) != LG_AUTH_OK) {
            fprintf(stderr, "livegate refused its own test token\n");
            exit(1);
        }
        lg_grant_free(g);
    }
    double us = (now_s() - t0) / n * 1e6;
    lg_auth_destroy(a);
    return us;
}

static double libjwt_us(const char *token, const unsigned char *key, int key_len, int n)
{
    double t0 = now_s();
    for (int i = 0; i < n; i++) {
        jwt_t *j;
        if (jwt_decode(&j, token, key, key_len) != 0) {
            fprintf(stderr, "libjwt refused the test token\n");
            exit(1);
        }
        jwt_free(j);
    }
    return (now_s() - t0) / n * 1e6;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 20000;
    if (n < 1)
        n = 1;
    char pub_path[64], config[128];
    snprintf(pub_path, sizeof pub_path, "/tmp/lg-auth-verify-%d.pem", (int)getpid());
    EVP_PKEY *rsa = lg_token_rsa_key(pub_path, NULL);
    char *priv = lg_token_private_pem(rsa), *pub = lg_token_public_pem(rsa);
    const char *claims = "{\"subscribe\":[\"news/*\"]}";
    char *hs = lg_token_libjwt("bench-secret", NULL, 3600, claims);
    char *rs = lg_token_libjwt(NULL, priv, 3600, claims);
    printf("HS256 livegate %.2f us/verify\n",
           livegate_us("{\"auth\":{\"hs256_secret\":\"bench-secret\"}}", hs, n));
    printf("HS256 libjwt   %.2f us/verify\n",
           libjwt_us(hs, (const unsigned char *)"bench-secret", 12, n));
    snprintf(config, sizeof config, "{\"auth\":{\"rs256_public_key_file\":\"%s\"}}", pub_path);
    printf("RS256 livegate %.2f us/verify\n", livegate_us(config, rs, n));
    int rs_n = n / 10 > 0 ? n / 10 : 1; /* libjwt re-parses the PEM key: 1 ms a call */
    printf("RS256 libjwt   %.2f us/verify\n",
           libjwt_us(rs, (const unsigned char *)pub, (int)strlen(pub), rs_n));
    unlink(pub_path);
    free(priv), free(pub), free(hs), free(rs);
    EVP_PKEY_free(rsa);
    return 0;
}
