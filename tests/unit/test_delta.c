/*
 * test_delta.c - the Fossil delta encoder (src/proto/delta.c): exact bytes for known pairs,
 * round trips through the tests' decoder (tests/support/lg_delta.c), the size bound,
 * and whole UTF-8 characters in every copy.
 */
#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "delta.h"
#include "encode.h"
#include "lg_test.h"

#include "check_main.h"

/* Apply delta to source into out (lg_delta_apply(), tests/support). Return value: 0, or -1
 * for a malformed delta. */
static int delta_apply(const char *src, size_t src_len, const char *delta, size_t delta_len,
                       struct lg_buf *out)
{
    size_t len;
    char *target = lg_delta_apply(src, src_len, delta, delta_len, &len);
    if (!target)
        return -1;
    lg_buf_append(out, target, len);
    free(target);
    return 0;
}

/* ---- Helpers ------------------------------------------------------------------------------ */

static void encode(const char *src, size_t src_len, const char *tgt, size_t tgt_len,
                   struct lg_buf *delta)
{
    lg_buf_init(delta);
    ck_assert_int_eq(lg_delta_encode(src, src_len, tgt, tgt_len, delta), 0);
    ck_assert_uint_le(delta->len, lg_delta_max_len(tgt_len));
}

static void assert_round_trip(const char *src, size_t src_len, const char *tgt, size_t tgt_len)
{
    struct lg_buf delta, back;
    encode(src, src_len, tgt, tgt_len, &delta);
    lg_buf_init(&back);
    ck_assert_int_eq(delta_apply(src, src_len, delta.data, delta.len, &back), 0);
    ck_assert_uint_eq(back.len, tgt_len);
    ck_assert(tgt_len == 0 || memcmp(back.data, tgt, tgt_len) == 0);
    lg_buf_release(&delta);
    lg_buf_release(&back);
}

static void assert_delta(const char *src, const char *tgt, const char *want)
{
    struct lg_buf delta;
    encode(src, strlen(src), tgt, strlen(tgt), &delta);
    ck_assert_msg(delta.len == strlen(want) && memcmp(delta.data, want, delta.len) == 0,
                  "delta %.*s, want %s", (int)delta.len, delta.data, want);
    lg_buf_release(&delta);
}

/* ---- Known bytes -------------------------------------------------------------------------- */

/*
 * The vectors below were checked against the reference JS implementation, npm fossil-delta
 * 2.0.0 (the decoder Centrifugo's clients use): its applyDelta() turns each source into its
 * target with these deltas, and its own deltas for the same pairs decode here (last test).
 */
#define DOC1 "{\"title\":\"Quarterly report\",\"status\":\"draft\",\"pages\":12,\"owner\":\"ana\"}"
#define DOC2 "{\"title\":\"Quarterly report\",\"status\":\"final\",\"pages\":12,\"owner\":\"ana\"}"

START_TEST(one_changed_word_is_two_copies_around_an_insert)
{
    /* 70 bytes ("16" in base 64): copy 37 ("b") from 0, insert "final", copy 27 ("R") from 42
     * ("g"), then the checksum. The reference encoder writes the same bytes. */
    assert_delta(DOC1, DOC2, "16\nb@0,5:finalR@g,2xJtBb;");
}
END_TEST

START_TEST(short_or_unrelated_targets_are_inserted_whole)
{
    assert_delta("", "", "0\n0;");
    assert_delta("abc", "abc", "3\n3:abc1XObC0;");
    assert_delta(DOC1, "{\"x\":1}", "7\n7:{\"x\":1}2qK~KY;");
}
END_TEST

START_TEST(checksum_pads_the_last_word_with_zeros)
{
    /* "abcde": 0x61626364 + 0x65000000 = 0xC6626364, "36ObD_" in base 64 */
    assert_delta("", "abcde", "5\n5:abcde36ObD_;");
}
END_TEST

/* fossil-delta 2.0.0 createStringDelta(FOX, JUGS), as it printed it: a delta this encoder
 * would write differently (copies of the same source block more than once). */
#define FOX "The quick brown fox jumps over the lazy dog. The quick brown fox jumps over the " \
            "lazy dog. The quick brown fox jumps over the lazy dog. Pack my box with five " \
            "dozen liquor jugs."
#define JUGS "Pack my box with five dozen liquor jugs. The quick brown fox jumps over the " \
             "lazy cat. The quick brown fox jumps over the lazy cat. The quick brown fox jumps " \
             "over the lazy cat. "
START_TEST(a_delta_of_the_reference_encoder_decodes)
{
    const char *reference = "2l\nd@27,1: d@0,5:cat. d@0,5:cat. d@0,5:cat. 1PsXp1;";
    struct lg_buf out;
    lg_buf_init(&out);
    ck_assert_int_eq(delta_apply(FOX, strlen(FOX), reference, strlen(reference), &out), 0);
    ck_assert_uint_eq(out.len, strlen(JUGS));
    ck_assert(memcmp(out.data, JUGS, out.len) == 0);
    lg_buf_release(&out);
    assert_round_trip(FOX, strlen(FOX), JUGS, strlen(JUGS));
}
END_TEST

/* ---- Round trips -------------------------------------------------------------------------- */

static uint32_t rng_state = 12345;
static uint32_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 17;
    rng_state ^= rng_state << 5;
    return rng_state;
}

/* Random edits (replace, insert, delete runs) of a random text, of many sizes. */
START_TEST(random_edits_round_trip)
{
    enum { MAX = 20000 };
    char *src = malloc(MAX), *tgt = malloc(2 * MAX);
    for (int round = 0; round < 300; round++) {
        size_t n = rng() % MAX;
        for (size_t i = 0; i < n; i++)
            src[i] = (char)(round % 2 ? rng() : 'a' + rng() % 4); /* binary, and repetitive */
        size_t m = 0, i = 0;
        while (i < n && m < 2 * MAX - 64) {
            uint32_t r = rng() % 100;
            size_t run = 1 + rng() % 40;
            if (r < 3) {
                for (size_t k = 0; k < run; k++)
                    tgt[m++] = (char)rng();
            } else if (r < 6) {
                i += run;
            } else {
                tgt[m++] = src[i++];
            }
        }
        assert_round_trip(src, n, tgt, m);
    }
    free(src);
    free(tgt);
}
END_TEST

START_TEST(identical_documents_are_one_copy)
{
    char doc[4096];
    for (size_t i = 0; i < sizeof doc; i++)
        doc[i] = (char)('a' + (i * 7 + i / 13) % 26);
    struct lg_buf delta;
    encode(doc, sizeof doc, doc, sizeof doc, &delta);
    ck_assert_uint_lt(delta.len, 20);
    lg_buf_release(&delta);
    assert_round_trip(doc, sizeof doc, doc, sizeof doc);
}
END_TEST

/* Every byte of the delta outside its commands is whole UTF-8 text. */
static bool valid_utf8(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n;) {
        size_t len = p[i] < 0x80 ? 1 : (p[i] & 0xE0) == 0xC0 ? 2 : (p[i] & 0xF0) == 0xE0 ? 3
                   : (p[i] & 0xF8) == 0xF0 ? 4 : 0;
        if (len == 0 || i + len > n)
            return false;
        for (size_t k = 1; k < len; k++)
            if ((p[i + k] & 0xC0) != 0x80)
                return false;
        i += len;
    }
    return true;
}

START_TEST(deltas_between_utf8_texts_are_utf8)
{
    static const char *const words[] = {"é", "€", "𝄞", "ab", "ü", " ", "\"x\":"};
    char src[8192], tgt[8192];
    for (int round = 0; round < 200; round++) {
        size_t n = 0, m = 0;
        while (n < sizeof src - 8) {
            const char *w = words[rng() % 7];
            memcpy(src + n, w, strlen(w));
            n += strlen(w);
        }
        /* the target: the source with some characters replaced by others */
        for (size_t i = 0; i < n && m < sizeof tgt - 8;) {
            size_t len = ((unsigned char)src[i] & 0xE0) == 0xC0 ? 2
                         : ((unsigned char)src[i] & 0xF0) == 0xE0 ? 3
                         : ((unsigned char)src[i] & 0xF8) == 0xF0 ? 4 : 1;
            const char *w = rng() % 50 == 0 ? words[rng() % 7] : NULL;
            memcpy(tgt + m, w ? w : src + i, w ? strlen(w) : len);
            m += w ? strlen(w) : len;
            i += len;
        }
        struct lg_buf delta;
        encode(src, n, tgt, m, &delta);
        ck_assert_msg(valid_utf8((const unsigned char *)delta.data, delta.len),
                      "round %d: the delta is not UTF-8", round);
        lg_buf_release(&delta);
        assert_round_trip(src, n, tgt, m);
    }
}
END_TEST

static Suite *delta_suite(void)
{
    Suite *s = suite_create("delta");
    LG_TCASE(s, "known", NULL, NULL, one_changed_word_is_two_copies_around_an_insert,
             short_or_unrelated_targets_are_inserted_whole, checksum_pads_the_last_word_with_zeros,
             a_delta_of_the_reference_encoder_decodes);
    TCase *tc = LG_TCASE(s, "round_trip", NULL, NULL, random_edits_round_trip,
                         identical_documents_are_one_copy, deltas_between_utf8_texts_are_utf8);
    tcase_set_timeout(tc, 60);
    return s;
}

LG_CHECK_MAIN(delta_suite)
