/*
 * delta.c - the Fossil delta encoder (delta.h).
 *
 * DESIGN
 * The source is cut into blocks of BLOCK bytes at multiples of BLOCK, each indexed by a hash
 * of its bytes. A hash of the BLOCK bytes at each target position, rolled one byte at a time,
 * finds source blocks that may match there; a real match is grown forwards and backwards (into
 * the bytes not yet encoded) and the longest one wins. The bytes between matches are inserted
 * as they are. A copy is written only when its command is shorter than the bytes it replaces
 * plus the insert command it splits, so the delta is never longer than inserting everything.
 */
#include "delta.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "encode.h"

#define BLOCK 16           /* bytes per indexed source block: shorter matches are not sought */
#define CANDIDATES_MAX 64  /* source blocks compared per target position, at most */
#define HASH_FACTOR 0x01000193u
#define NUMBER_DIGITS_MAX 11 /* base-64 digits of a size_t */

static const char digits[] =
    "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz~";

size_t lg_delta_max_len(size_t target_len)
{
    /* the length line, one insert command, the checksum and its ';' */
    return target_len + 2 * (NUMBER_DIGITS_MAX + 1) + 6 + 1;
}

static size_t number_len(size_t v)
{
    size_t n = 1;
    while (v >>= 6)
        n++;
    return n;
}

static void put_number(struct lg_buf *out, size_t v)
{
    char text[NUMBER_DIGITS_MAX];
    size_t n = number_len(v);
    for (size_t i = n; i-- > 0; v >>= 6)
        text[i] = digits[v & 63];
    lg_buf_append(out, text, n);
}

/* The format's checksum: the bytes as big-endian 32-bit words, the last one zero-padded,
 * summed modulo 2^32. */
static uint32_t checksum(const unsigned char *p, size_t n)
{
    uint32_t sum = 0;
    size_t i = 0;
    for (; i + 4 <= n; i += 4)
        sum += (uint32_t)p[i] << 24 | (uint32_t)p[i + 1] << 16 | (uint32_t)p[i + 2] << 8 | p[i + 3];
    uint32_t last = 0;
    for (unsigned shift = 24; i < n; i++, shift -= 8)
        last |= (uint32_t)p[i] << shift;
    return sum + last;
}

static uint32_t block_hash(const unsigned char *p)
{
    uint32_t h = 0;
    for (size_t i = 0; i < BLOCK; i++)
        h = h * HASH_FACTOR + p[i];
    return h;
}

/* HASH_FACTOR^(BLOCK-1): the weight of the byte that leaves the window. */
static uint32_t leaving_weight(void)
{
    uint32_t w = 1;
    for (size_t i = 1; i < BLOCK; i++)
        w *= HASH_FACTOR;
    return w;
}

static bool continuation(unsigned char c) { return (c & 0xC0) == 0x80; }

/* The source blocks by hash: heads[hash & mask] is the first block, next[block] the one after
 * it with the same masked hash; -1 ends a chain. */
struct block_index {
    int32_t *heads;
    int32_t *next;
    uint32_t mask;
};

static int index_build(struct block_index *ix, const unsigned char *src, size_t len)
{
    size_t blocks = len / BLOCK;
    size_t buckets = 64;
    while (buckets < blocks * 2)
        buckets *= 2;
    ix->mask = (uint32_t)(buckets - 1);
    ix->heads = malloc(buckets * sizeof *ix->heads);
    ix->next = malloc((blocks ? blocks : 1) * sizeof *ix->next);
    if (!ix->heads || !ix->next)
        return -1;
    memset(ix->heads, 0xff, buckets * sizeof *ix->heads);
    /* Later blocks first in each chain: inserted from the end so chains run front to back. */
    for (size_t b = blocks; b-- > 0;) {
        uint32_t h = block_hash(src + b * BLOCK) & ix->mask;
        ix->next[b] = ix->heads[h];
        ix->heads[h] = (int32_t)b;
    }
    return 0;
}

static void index_release(struct block_index *ix)
{
    free(ix->heads);
    free(ix->next);
}

/* A region of the target that equals one of the source. */
struct match {
    size_t target;  /* where it starts in the target */
    size_t source;  /* where it starts in the source */
    size_t len;
};

/* The longest match covering target position at (whose hash is h), grown backwards no further
 * than floor (the first byte not yet encoded). len 0: none. */
static struct match best_match(const struct block_index *ix, const unsigned char *src,
                               size_t src_len, const unsigned char *tgt, size_t tgt_len,
                               size_t at, size_t floor, uint32_t h)
{
    struct match best = {0};
    int budget = CANDIDATES_MAX;
    for (int32_t b = ix->heads[h & ix->mask]; b >= 0 && budget-- > 0; b = ix->next[b]) {
        size_t off = (size_t)b * BLOCK;
        if (memcmp(src + off, tgt + at, BLOCK) != 0)
            continue;
        size_t fwd = BLOCK;
        while (off + fwd < src_len && at + fwd < tgt_len && src[off + fwd] == tgt[at + fwd])
            fwd++;
        size_t back = 0;
        while (back < at - floor && back < off && src[off - back - 1] == tgt[at - back - 1])
            back++;
        if (back + fwd > best.len)
            best = (struct match){at - back, off - back, back + fwd};
    }
    /* Whole characters only: a copy neither starts nor ends inside a UTF-8 sequence. */
    while (best.len > 0 && continuation(tgt[best.target]))
        best.target++, best.source++, best.len--;
    while (best.len > 0 && best.target + best.len < tgt_len &&
           continuation(tgt[best.target + best.len]))
        best.len--;
    return best;
}

/* A copy of m is shorter than the bytes it replaces plus the insert command it may split. */
static bool worth_copying(const struct match *m)
{
    size_t copy_cost = number_len(m->len) + 1 + number_len(m->source) + 1;
    return m->len > copy_cost + NUMBER_DIGITS_MAX + 1;
}

static void put_insert(struct lg_buf *out, const unsigned char *p, size_t n)
{
    if (n == 0)
        return;
    put_number(out, n);
    lg_buf_append(out, ":", 1);
    lg_buf_append(out, p, n);
}

int lg_delta_encode(const char *source, size_t source_len, const char *target, size_t target_len,
                    struct lg_buf *out)
{
    const unsigned char *src = (const unsigned char *)source;
    const unsigned char *tgt = (const unsigned char *)target;
    struct block_index ix = {0};
    lg_buf_reserve(out, lg_delta_max_len(target_len));
    put_number(out, target_len);
    lg_buf_append(out, "\n", 1);
    size_t pending = 0; /* first target byte not yet encoded */
    if (source_len >= BLOCK && target_len >= BLOCK) {
        if (index_build(&ix, src, source_len) != 0) {
            index_release(&ix);
            return -1;
        }
        const uint32_t leaving = leaving_weight();
        size_t at = 0;
        uint32_t h = block_hash(tgt);
        while (at + BLOCK <= target_len) {
            struct match m = best_match(&ix, src, source_len, tgt, target_len, at, pending, h);
            if (m.len > 0 && worth_copying(&m)) {
                put_insert(out, tgt + pending, m.target - pending);
                put_number(out, m.len);
                lg_buf_append(out, "@", 1);
                put_number(out, m.source);
                lg_buf_append(out, ",", 1);
                pending = at = m.target + m.len;
                if (at + BLOCK <= target_len)
                    h = block_hash(tgt + at);
                continue;
            }
            if (at + BLOCK < target_len)
                h = (h - tgt[at] * leaving) * HASH_FACTOR + tgt[at + BLOCK];
            at++;
        }
        index_release(&ix);
    }
    put_insert(out, tgt + pending, target_len - pending);
    put_number(out, checksum(tgt, target_len));
    lg_buf_append(out, ";", 1);
    return out->oom ? -1 : 0;
}
