/*
 * test_ws_inflate.c - the load generator's permessage-deflate inflation (bench/ws_inflate.h),
 * against livegate's own compressor (ws_deflate.h): every event's text given back exactly on
 * every connection, from the cache after its first miss; a hash under which everything
 * collides never gives one message another's text; messages compressed with context taken over
 * go through the connection's inflater, and the cached path refuses them rather than give a
 * wrong text; a message cut short, or not deflate at all, is refused; a message too large to
 * keep is still given back right.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "event.h"
#include "ws_deflate.h"
#include "ws_inflate.h"

#include "check_main.h"

/* The payload of a server frame (no mask) of len bytes, its length in *plen. */
static const unsigned char *payload_of(const unsigned char *f, size_t len, size_t *plen)
{
    size_t hl = 2;
    *plen = f[1] & 0x7f;
    if (*plen == 126) {
        *plen = (size_t)f[2] << 8 | f[3];
        hl = 4;
    }
    ck_assert_uint_eq(hl + *plen, len);
    return f + hl;
}

/* An event of about 1 KB of compressible JSON text, with seq in its data. */
static struct lg_event *event_of(uint64_t seq)
{
    char data[1024];
    int n = snprintf(data, sizeof data, "%llu 12345", (unsigned long long)seq);
    for (int i = 0; n < (int)sizeof data - 64; i++)
        n += snprintf(data + n, sizeof data - (size_t)n, " {\"sku\":\"item-%04d\",\"stock\":%d}", i,
                      100 - i);
    struct lg_event_fields f = {.topic_name = "t",
                                .topic_name_len = 1,
                                .epoch = 1,
                                .seq = seq,
                                .data = data,
                                .data_len = (size_t)n};
    struct lg_event *ev = lg_event_create(&f);
    ck_assert_ptr_nonnull(ev);
    return ev;
}

static void assert_text(int rc, const char *text, size_t tlen, const char *want, size_t want_len)
{
    ck_assert_int_eq(rc, 0);
    ck_assert_uint_eq(tlen, want_len);
    ck_assert_int_eq(memcmp(text, want, want_len), 0);
}

enum { EVENTS = 50, CONNS = 100 };

START_TEST(every_connection_gets_each_event_exactly_and_inflation_runs_once_per_event)
{
    struct lg_ws_deflater d;
    ck_assert_int_eq(lg_ws_deflater_init(&d, 6, 15, 8, 0), 0);
    struct lg_event *evs[EVENTS];
    const unsigned char *payload[EVENTS];
    size_t plen[EVENTS];
    for (int e = 0; e < EVENTS; e++) {
        evs[e] = event_of((uint64_t)e + 1);
        const struct lg_ws_compressed *z = lg_event_ws_compressed(evs[e], &d);
        ck_assert_ptr_nonnull(z);
        payload[e] = payload_of(z->frame, z->frame_len, &plen[e]);
    }
    struct lgb_inflate w;
    ck_assert_int_eq(lgb_inflate_init(&w), 0);
    for (int c = 0; c < CONNS; c++) /* each connection reads its backlog in turn */
        for (int e = 0; e < EVENTS; e++) {
            const char *text;
            size_t tlen;
            int rc = lgb_inflate_no_takeover(&w, payload[e], plen[e], &text, &tlen);
            assert_text(rc, text, tlen, evs[e]->json, evs[e]->json_len);
        }
    ck_assert_uint_eq(w.cache_misses, EVENTS);
    ck_assert_uint_eq(w.cache_hits, (uint64_t)EVENTS * (CONNS - 1));
    ck_assert_uint_eq(w.conn_inflated, 0);
    lgb_inflate_release(&w);
    for (int e = 0; e < EVENTS; e++)
        lg_event_unref(&evs[e]);
    lg_ws_deflater_release(&d);
}
END_TEST

static uint64_t one_hash_for_all(const void *p, size_t n)
{
    (void)p;
    (void)n;
    return 7;
}

/* text deflated on its own at level (0: stored blocks, so the payload holds the text as is) */
static size_t deflate_alone(const char *text, size_t len, int level, unsigned char *out, size_t cap)
{
    z_stream z = {0};
    ck_assert_int_eq(deflateInit2(&z, level, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY), Z_OK);
    z.next_in = (unsigned char *)(uintptr_t)text;
    z.avail_in = (uInt)len;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    ck_assert_int_eq(deflate(&z, Z_SYNC_FLUSH), Z_OK);
    size_t n = cap - z.avail_out;
    deflateEnd(&z);
    ck_assert_uint_ge(n, 4);
    ck_assert_int_eq(memcmp(out + n - 4, "\0\0\xff\xff", 4), 0);
    return n - 4;
}

START_TEST(a_hash_under_which_everything_collides_never_mixes_texts)
{
    struct lgb_inflate w;
    ck_assert_int_eq(lgb_inflate_init(&w), 0);
    w.hash = one_hash_for_all; /* one set for all: only the bytes tell messages apart */
    enum { MSGS = 3 * LGB_INFLATE_WAYS };
    char texts[MSGS][64];
    unsigned char z[MSGS][128];
    size_t zlen[MSGS];
    for (int i = 0; i < MSGS; i++) {
        /* equal lengths, one byte apart: stored, so the payloads are one byte apart too */
        snprintf(texts[i], sizeof texts[i], "%03d 1000 the same text for every message", i);
        zlen[i] = deflate_alone(texts[i], strlen(texts[i]), 0, z[i], sizeof z[i]);
        ck_assert_uint_eq(zlen[i], zlen[0]);
    }
    for (int round = 0; round < 3; round++)
        for (int i = 0; i < MSGS; i++) {
            int k = round == 1 ? MSGS - 1 - i : i; /* and backwards, to hit what is kept */
            const char *text;
            size_t tlen;
            int rc = lgb_inflate_no_takeover(&w, z[k], zlen[k], &text, &tlen);
            assert_text(rc, text, tlen, texts[k], strlen(texts[k]));
        }
    ck_assert_uint_gt(w.cache_hits, 0);
    ck_assert_uint_gt(w.cache_misses, MSGS); /* more messages than ways: some were evicted */
    lgb_inflate_release(&w);
}
END_TEST

/* Messages compressed as a server that takes context over does: one stream, no reset. */
START_TEST(context_taken_over_goes_through_the_connections_inflater)
{
    const char *texts[] = {"1 1000 {\"price\":10.99,\"stock\":100,\"sku\":\"item-0001\"}",
                           "1 1000 {\"price\":10.99,\"stock\":100,\"sku\":\"item-0001\"}",
                           "2 2000 {\"price\":11.99,\"stock\":99,\"sku\":\"item-0002\"}"};
    z_stream def = {0};
    ck_assert_int_eq(deflateInit2(&def, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY), Z_OK);
    struct lgb_inflate w;
    ck_assert_int_eq(lgb_inflate_init(&w), 0);
    z_stream *conn_z = NULL;
    for (int i = 0; i < 3; i++) {
        unsigned char out[256];
        def.next_in = (unsigned char *)(uintptr_t)texts[i];
        def.avail_in = (uInt)strlen(texts[i]);
        def.next_out = out;
        def.avail_out = sizeof out;
        ck_assert_int_eq(deflate(&def, Z_SYNC_FLUSH), Z_OK);
        size_t n = sizeof out - def.avail_out - 4;
        const char *text;
        size_t tlen;
        if (i > 0) { /* it refers back into the message before: refused on its own */
            ck_assert_int_eq(lgb_inflate_no_takeover(&w, out, n, &text, &tlen), -1);
        }
        int rc = lgb_inflate_with_context(&w, &conn_z, out, n, &text, &tlen);
        assert_text(rc, text, tlen, texts[i], strlen(texts[i]));
    }
    ck_assert_uint_eq(w.conn_inflated, 3);
    ck_assert_uint_eq(w.cache_hits, 0);
    ck_assert_ptr_nonnull(conn_z);
    lgb_inflate_conn_end(&conn_z);
    ck_assert_ptr_null(conn_z);
    deflateEnd(&def);
    lgb_inflate_release(&w);
}
END_TEST

START_TEST(what_does_not_inflate_is_refused)
{
    struct lgb_inflate w;
    ck_assert_int_eq(lgb_inflate_init(&w), 0);
    const char *text;
    size_t tlen;
    ck_assert_int_eq(lgb_inflate_no_takeover(&w, "\xff\xff\xff\xff", 4, &text, &tlen), -1);
    char msg[600];
    for (size_t i = 0; i < sizeof msg; i++)
        msg[i] = "0123456789 {\"a\":[1,2,3]} "[i % 25];
    unsigned char z[1024];
    size_t n = deflate_alone(msg, sizeof msg, 6, z, sizeof z);
    ck_assert_int_eq(lgb_inflate_no_takeover(&w, z, n / 2, &text, &tlen), -1); /* cut short */
    ck_assert_int_eq(lgb_inflate_no_takeover(&w, z, n, &text, &tlen), 0);
    ck_assert_uint_eq(tlen, sizeof msg);
    /* the refused ones were not kept: the whole message is not a hit */
    ck_assert_uint_eq(w.cache_hits, 0);
    lgb_inflate_release(&w);
}
END_TEST

START_TEST(a_message_too_large_to_keep_is_still_right)
{
    size_t len = LGB_INFLATE_ENTRY_MAX + 1;
    char *big = malloc(len);
    ck_assert_ptr_nonnull(big);
    for (size_t i = 0; i < len; i++)
        big[i] = "abc"[i % 3];
    unsigned char z[4096];
    size_t n = deflate_alone(big, len, 9, z, sizeof z);
    struct lgb_inflate w;
    ck_assert_int_eq(lgb_inflate_init(&w), 0);
    for (int i = 0; i < 2; i++) {
        const char *text;
        size_t tlen;
        int rc = lgb_inflate_no_takeover(&w, z, n, &text, &tlen);
        assert_text(rc, text, tlen, big, len);
    }
    ck_assert_uint_eq(w.cache_misses, 2);
    ck_assert_uint_eq(w.cache_hits, 0);
    lgb_inflate_release(&w);
    free(big);
}
END_TEST

static Suite *ws_inflate_suite(void)
{
    Suite *s = suite_create("ws_inflate");
    LG_TCASE(s, "inflate", NULL, NULL,
             every_connection_gets_each_event_exactly_and_inflation_runs_once_per_event,
             a_hash_under_which_everything_collides_never_mixes_texts,
             context_taken_over_goes_through_the_connections_inflater,
             what_does_not_inflate_is_refused, a_message_too_large_to_keep_is_still_right);
    return s;
}

int main(void) { return lg_check_run(ws_inflate_suite()); }
