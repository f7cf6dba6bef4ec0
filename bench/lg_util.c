/* lg_util.c - see lg_util.h. */
#include "lg_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

/* ---- SHA-1 (RFC 3174), straightforward and only used once per WebSocket handshake ---- */

static uint32_t rol32(uint32_t x, int n) { return (x << n) | (x >> (32 - n)); }

static void sha1_block(uint32_t h[5], const uint8_t *p)
{
    uint32_t w[80];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
               (uint32_t)p[4 * i + 2] << 8 | (uint32_t)p[4 * i + 3];
    for (int i = 16; i < 80; i++)
        w[i] = rol32(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
    for (int i = 0; i < 80; i++) {
        uint32_t f, k;
        if (i < 20) { f = (b & c) | (~b & d); k = 0x5A827999u; }
        else if (i < 40) { f = b ^ c ^ d; k = 0x6ED9EBA1u; }
        else if (i < 60) { f = (b & c) | (b & d) | (c & d); k = 0x8F1BBCDCu; }
        else { f = b ^ c ^ d; k = 0xCA62C1D6u; }
        uint32_t t = rol32(a, 5) + f + e + k + w[i];
        e = d; d = c; c = rol32(b, 30); b = a; a = t;
    }
    h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e;
}

void lgb_sha1(const void *data, size_t len, uint8_t out[20])
{
    uint32_t h[5] = {0x67452301u, 0xEFCDAB89u, 0x98BADCFEu, 0x10325476u, 0xC3D2E1F0u};
    const uint8_t *p = data;
    size_t left = len;
    while (left >= 64) { sha1_block(h, p); p += 64; left -= 64; }
    uint8_t tail[128];
    memset(tail, 0, sizeof tail);
    memcpy(tail, p, left);
    tail[left] = 0x80;
    size_t tl = left + 1 + 8 <= 64 ? 64 : 128;
    uint64_t bits = (uint64_t)len * 8;
    for (int i = 0; i < 8; i++) tail[tl - 1 - i] = (uint8_t)(bits >> (8 * i));
    sha1_block(h, tail);
    if (tl == 128) sha1_block(h, tail + 64);
    for (int i = 0; i < 5; i++) {
        out[4 * i] = (uint8_t)(h[i] >> 24); out[4 * i + 1] = (uint8_t)(h[i] >> 16);
        out[4 * i + 2] = (uint8_t)(h[i] >> 8); out[4 * i + 3] = (uint8_t)h[i];
    }
}

void lgb_base64(const uint8_t *in, size_t len, char *out)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t o = 0;
    for (size_t i = 0; i < len; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16;
        if (i + 1 < len) v |= (uint32_t)in[i + 1] << 8;
        if (i + 2 < len) v |= in[i + 2];
        out[o++] = tab[(v >> 18) & 63];
        out[o++] = tab[(v >> 12) & 63];
        out[o++] = i + 1 < len ? tab[(v >> 6) & 63] : '=';
        out[o++] = i + 2 < len ? tab[v & 63] : '=';
    }
    out[o] = '\0';
}

uint64_t lgb_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- histogram ---- */

static unsigned hist_index(uint64_t v)
{
    if (v < 128) return (unsigned)v;
    unsigned msb = 63u - (unsigned)__builtin_clzll(v);
    unsigned shift = msb - 6;
    uint64_t i = (uint64_t)shift * 64 + (v >> shift);
    return i < LGB_HIST_BUCKETS ? (unsigned)i : LGB_HIST_BUCKETS - 1;
}

static uint64_t hist_upper(unsigned i)
{
    if (i < 128) return i;
    unsigned shift = i / 64 - 1;
    uint64_t mant = i % 64 + 64;
    return ((mant + 1) << shift) - 1;
}

void lgb_hist_add(struct lg_hist *h, uint64_t us)
{
    h->b[hist_index(us)]++;
    h->count++;
    h->sum_us += us;
    if (us > h->max_us) h->max_us = us;
}

uint64_t lgb_hist_quantile(const struct lg_hist *h, double q)
{
    if (!h->count) return 0;
    uint64_t want = (uint64_t)(q * (double)h->count + 0.999999);
    if (want < 1) want = 1;
    uint64_t cum = 0;
    for (unsigned i = 0; i < LGB_HIST_BUCKETS; i++) {
        cum += h->b[i];
        if (cum >= want) {
            uint64_t v = hist_upper(i);
            return v < h->max_us ? v : h->max_us;
        }
    }
    return h->max_us;
}

/* ---- /proc readers ---- */

long lgb_proc_rss_kb(const int *pids, int npids)
{
    long total = 0;
    int got = 0;
    for (int i = 0; i < npids; i++) {
        char path[64], line[256];
        snprintf(path, sizeof path, "/proc/%d/status", pids[i]);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        while (fgets(line, sizeof line, f)) {
            if (!strncmp(line, "VmRSS:", 6)) { total += strtol(line + 6, NULL, 10); got++; break; }
        }
        fclose(f);
    }
    return got ? total : -1;
}

double lgb_proc_cpu_s(const int *pids, int npids)
{
    static long tck;
    if (!tck) tck = sysconf(_SC_CLK_TCK);
    double total = 0;
    int got = 0;
    for (int i = 0; i < npids; i++) {
        char path[64], buf[1024];
        snprintf(path, sizeof path, "/proc/%d/stat", pids[i]);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = '\0';
        char *p = strrchr(buf, ')'); /* comm may contain spaces; fields restart after ')' */
        if (!p) continue;
        p++;
        /* after ')': field 3 (state) ... field 14 utime, 15 stime */
        unsigned long ut = 0, st = 0;
        char *save = NULL, *tok = strtok_r(p, " ", &save);
        for (int field = 3; tok; field++, tok = strtok_r(NULL, " ", &save)) {
            if (field == 14) ut = strtoul(tok, NULL, 10);
            if (field == 15) { st = strtoul(tok, NULL, 10); break; }
        }
        total += (double)(ut + st) / (double)tck;
        got++;
    }
    return got ? total : -1;
}

long lgb_slab_kb(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return -1;
    char line[256];
    long v = -1;
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, "Slab:", 5)) { v = strtol(line + 5, NULL, 10); break; }
    }
    fclose(f);
    return v;
}

double lgb_host_busy_s(void)
{
    static long tck;
    if (!tck) tck = sysconf(_SC_CLK_TCK);
    FILE *f = fopen("/proc/stat", "r");
    if (!f) return -1;
    unsigned long long v[8] = {0};
    int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4],
                   &v[5], &v[6], &v[7]);
    fclose(f);
    if (n < 4) return -1;
    /* user nice system idle iowait irq softirq steal: busy = all but idle and iowait */
    return (double)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / (double)tck;
}

double lgb_self_cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}
