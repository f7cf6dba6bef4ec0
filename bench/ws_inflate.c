/* ws_inflate.c - see ws_inflate.h. */
#include "ws_inflate.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const unsigned char sync_flush_tail[4] = {0x00, 0x00, 0xff, 0xff};

uint64_t lgb_inflate_hash(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
    for (; n >= 8; b += 8, n -= 8) {
        uint64_t word;
        memcpy(&word, b, 8);
        h = (h ^ word) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    uint64_t last = 0;
    memcpy(&last, b, n);
    h = (h ^ last) * 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 29);
}

int lgb_inflate_init(struct lgb_inflate *w)
{
    memset(w, 0, sizeof *w);
    if (inflateInit2(&w->fresh, -MAX_WBITS) != Z_OK)
        return -1;
    w->hash = lgb_inflate_hash;
    return 0;
}

void lgb_inflate_release(struct lgb_inflate *w)
{
    for (int s = 0; s < LGB_INFLATE_SETS; s++)
        for (int k = 0; k < LGB_INFLATE_WAYS; k++) {
            free(w->entries[s][k].bytes);
            w->entries[s][k] = (struct lgb_inflate_entry){0};
        }
    inflateEnd(&w->fresh);
    free(w->scratch);
    w->scratch = NULL;
    w->scratch_cap = 0;
}

/* Feeds n bytes to z, its output appended to the scratch buffer at *got.
 * Return value: false when the stream is invalid or its text would pass LGB_INFLATE_TEXT_MAX. */
static bool feed(struct lgb_inflate *w, z_stream *z, const void *in, size_t n, size_t *got)
{
    z->next_in = (Bytef *)(uintptr_t)in;
    z->avail_in = (uInt)n;
    for (;;) {
        if (w->scratch_cap - *got < 4096) {
            size_t cap = w->scratch_cap ? 2 * w->scratch_cap : 65536;
            if (cap > LGB_INFLATE_TEXT_MAX)
                return false;
            char *grown = realloc(w->scratch, cap);
            if (!grown)
                return false;
            w->scratch = grown;
            w->scratch_cap = cap;
        }
        z->next_out = (Bytef *)w->scratch + *got;
        z->avail_out = (uInt)(w->scratch_cap - *got);
        int rc = inflate(z, Z_SYNC_FLUSH);
        *got = w->scratch_cap - z->avail_out;
        if (rc == Z_BUF_ERROR && !z->avail_in)
            return true; /* everything taken, nothing more to give */
        if (rc != Z_OK)
            return false; /* Z_STREAM_END included: a message ends with the sync flush */
        if (!z->avail_in && z->avail_out)
            return true;
    }
}

/* One message through z: its payload, then the 00 00 ff ff the sender took off (RFC 7692
 * 7.2.2), after which the stream must stand between two blocks (zlib's data_type 128): a
 * message cut short stops inside a block. Return value: the text's length, or -1. */
static long inflate_message(struct lgb_inflate *w, z_stream *z, const void *msg, size_t n)
{
    size_t got = 0;
    if (n > UINT32_MAX || !feed(w, z, msg, n, &got) ||
        !feed(w, z, sync_flush_tail, sizeof sync_flush_tail, &got) || !(z->data_type & 128))
        return -1;
    w->text_bytes += got;
    return (long)got;
}

/* Keeps msg -> text in e (a victim of its set), unless it is too large to keep. */
static void remember(struct lgb_inflate_entry *e, uint64_t hash, uint64_t clock, const void *msg,
                     size_t n, const char *text, size_t tlen)
{
    if (n + tlen > LGB_INFLATE_ENTRY_MAX)
        return;
    if (e->cap < n + tlen) {
        char *grown = realloc(e->bytes, n + tlen);
        if (!grown)
            return;
        e->bytes = grown;
        e->cap = (uint32_t)(n + tlen);
    }
    memcpy(e->bytes, msg, n);
    memcpy(e->bytes + n, text, tlen);
    e->hash = hash;
    e->zlen = (uint32_t)n;
    e->tlen = (uint32_t)tlen;
    e->last_use = clock;
}

int lgb_inflate_no_takeover(struct lgb_inflate *w, const void *msg, size_t n, const char **text,
                            size_t *tlen)
{
    uint64_t hash = w->hash(msg, n);
    struct lgb_inflate_entry *set = w->entries[hash % LGB_INFLATE_SETS];
    struct lgb_inflate_entry *victim = &set[0];
    w->clock++;
    for (int k = 0; k < LGB_INFLATE_WAYS; k++) {
        struct lgb_inflate_entry *e = &set[k];
        if (e->last_use && e->hash == hash && e->zlen == n && !memcmp(e->bytes, msg, n)) {
            e->last_use = w->clock;
            w->cache_hits++;
            w->text_bytes += e->tlen;
            *text = e->bytes + e->zlen;
            *tlen = e->tlen;
            return 0;
        }
        if (e->last_use < victim->last_use)
            victim = e;
    }
    w->cache_misses++;
    inflateReset(&w->fresh); /* no context: the message is a stream of its own */
    long got = inflate_message(w, &w->fresh, msg, n);
    if (got < 0)
        return -1;
    remember(victim, hash, w->clock, msg, n, w->scratch, (size_t)got);
    *text = w->scratch;
    *tlen = (size_t)got;
    return 0;
}

int lgb_inflate_with_context(struct lgb_inflate *w, z_stream **conn_z, const void *msg, size_t n,
                             const char **text, size_t *tlen)
{
    if (!*conn_z) {
        *conn_z = calloc(1, sizeof **conn_z);
        if (!*conn_z || inflateInit2(*conn_z, -MAX_WBITS) != Z_OK) {
            fprintf(stderr, "lg_loadgen: out of memory (inflater)\n");
            exit(3);
        }
    }
    w->conn_inflated++;
    long got = inflate_message(w, *conn_z, msg, n);
    if (got < 0)
        return -1;
    *text = w->scratch;
    *tlen = (size_t)got;
    return 0;
}

void lgb_inflate_conn_end(z_stream **conn_z)
{
    if (!*conn_z)
        return;
    inflateEnd(*conn_z);
    free(*conn_z);
    *conn_z = NULL;
}
