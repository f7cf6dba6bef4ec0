/*
 * lg_delta.c - a Fossil delta decoder for the tests, written from the format description
 * (https://fossil-scm.org/home/doc/tip/www/delta_format.wiki), independent of the encoder in
 * src/proto/delta.c: what a client does with a delta the gateway sent.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lg_test.h"

static int digit_value(char c)
{
    static const char digits[] =
        "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz~";
    const char *p = c ? strchr(digits, c) : NULL;
    return p ? (int)(p - digits) : -1;
}

/* A base-64 number at *p (advanced past it). Return value: false when there is none. */
static bool read_number(const char **p, const char *end, size_t *v)
{
    *v = 0;
    const char *start = *p;
    int d;
    while (*p < end && (d = digit_value(**p)) >= 0)
        *v = (*v << 6) | (size_t)d, (*p)++;
    return *p > start;
}

static uint32_t sum_words(const unsigned char *p, size_t n)
{
    uint32_t sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += (uint32_t)p[i] << (24 - 8 * (i % 4));
    return sum;
}

char *lg_delta_apply(const char *src, size_t src_len, const char *delta, size_t delta_len,
                     size_t *out_len)
{
    const char *p = delta, *end = delta + delta_len;
    size_t want, n, off, len = 0;
    if (!read_number(&p, end, &want) || p == end || *p++ != '\n')
        return NULL;
    char *out = malloc(want + 1);
    while (out && p < end) {
        if (!read_number(&p, end, &n) || p == end)
            break;
        char op = *p++;
        if (op == '@') {
            if (!read_number(&p, end, &off) || p == end || *p++ != ',' || off > src_len ||
                n > src_len - off || n > want - len)
                break;
            memcpy(out + len, src + off, n);
            len += n;
        } else if (op == ':') {
            if (n > (size_t)(end - p) || n > want - len)
                break;
            memcpy(out + len, p, n);
            len += n;
            p += n;
        } else if (op == ';') {
            if (p != end || len != want || sum_words((const unsigned char *)out, len) != n)
                break;
            out[len] = '\0';
            *out_len = len;
            return out;
        } else {
            break;
        }
    }
    free(out);
    return NULL;
}
