#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "encode.h"

#include "check_main.h"

/*
 * A text encoder's case: which encoder, the input (len bytes, may hold NULs; NULL with len 0)
 * and exactly the bytes it must render into a fresh buffer. `name` says which case a failure is.
 */
struct text_case {
    const char *name;
    void (*encode)(struct lg_buf *, const char *, size_t);
    const char *in;
    size_t len;
    const char *want;
};

static void assert_text_case(const struct text_case *c)
{
    struct lg_buf b;
    lg_buf_init(&b);
    c->encode(&b, c->in, c->len);
    ck_assert_msg(!b.oom, "%s: out of memory", c->name);
    ck_assert_msg(b.data && strcmp(b.data, c->want) == 0, "%s: rendered \"%s\", want \"%s\"",
                  c->name, b.data ? b.data : "(null)", c->want);
    ck_assert_msg(b.len == strlen(c->want), "%s: length %zu, want %zu", c->name, b.len,
                  strlen(c->want));
    lg_buf_release(&b);
}

static void assert_ws_header(size_t payload_len, unsigned opcode, const unsigned char *want,
                             size_t want_len)
{
    unsigned char out[16];
    memset(out, 0xee, sizeof out);
    ck_assert_uint_eq(lg_ws_header_len(payload_len), want_len);
    ck_assert_uint_eq(lg_ws_write_header(out, payload_len, opcode), want_len);
    ck_assert_mem_eq(out, want, want_len);
    ck_assert_uint_eq(out[want_len], 0xee); /* nothing written past the header */
}

#define UTF8_OK(lit) ck_assert_msg(lg_utf8_valid(lit, sizeof(lit) - 1), "rejected %s", #lit)
#define UTF8_BAD(lit) ck_assert_msg(!lg_utf8_valid(lit, sizeof(lit) - 1), "accepted %s", #lit)

/* ---- struct lg_buf ------------------------------------------------------------------------ */

START_TEST(buf_appends_and_stays_nul_terminated)
{
    struct lg_buf b;
    lg_buf_init(&b);
    ck_assert_ptr_null(b.data);
    ck_assert_uint_eq(b.len, 0);
    lg_buf_append(&b, "abcXYZ", 3);
    lg_buf_append_str(&b, "def");
    lg_buf_append(&b, NULL, 0);
    ck_assert_uint_eq(b.len, 6);
    ck_assert_str_eq(b.data, "abcdef");
    ck_assert(!b.oom);
    lg_buf_release(&b);
    ck_assert_ptr_null(b.data);
    ck_assert_uint_eq(b.len, 0);
    ck_assert_uint_eq(b.cap, 0);
}
END_TEST

START_TEST(buf_grows_past_its_first_capacity)
{
    struct lg_buf b;
    lg_buf_init(&b);
    for (int i = 0; i < 10000; i++)
        lg_buf_append(&b, &"0123456789"[i % 10], 1);
    ck_assert_uint_eq(b.len, 10000);
    ck_assert_uint_gt(b.cap, b.len);
    for (int i = 0; i < 10000; i++)
        ck_assert_int_eq(b.data[i], '0' + i % 10);
    ck_assert_int_eq(b.data[10000], '\0');
    lg_buf_release(&b);
}
END_TEST

START_TEST(buf_append_of_null_reserves_room_to_fill_in)
{
    struct lg_buf b;
    lg_buf_init(&b);
    lg_buf_append_str(&b, "head:");
    size_t at = b.len;
    lg_buf_append(&b, NULL, 4);
    ck_assert(!b.oom);
    ck_assert_uint_eq(b.len, at + 4);
    memcpy(b.data + at, "body", 4);
    ck_assert_str_eq(b.data, "head:body");
    lg_buf_release(&b);
}
END_TEST

START_TEST(buf_appends_u64_in_decimal)
{
    struct lg_buf b;
    lg_buf_init(&b);
    lg_buf_append_u64(&b, 0);
    lg_buf_append(&b, ",", 1);
    lg_buf_append_u64(&b, 42);
    lg_buf_append(&b, ",", 1);
    lg_buf_append_u64(&b, UINT64_MAX);
    ck_assert_str_eq(b.data, "0,42,18446744073709551615");
    lg_buf_release(&b);
}
END_TEST

START_TEST(buf_appendf_fits_and_regrows)
{
    struct lg_buf b;
    lg_buf_init(&b);
    lg_buf_appendf(&b, "%s=%d;", "n", 7);
    char big[300];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    lg_buf_appendf(&b, "[%s]", big); /* longer than the room left: formatted twice */
    ck_assert_uint_eq(b.len, 4 + 1 + 299 + 1);
    ck_assert_int_eq(memcmp(b.data, "n=7;[xxx", 8), 0);
    ck_assert_str_eq(b.data + b.len - 3, "xx]");
    lg_buf_release(&b);
}
END_TEST

START_TEST(buf_reset_keeps_the_allocation)
{
    struct lg_buf b;
    lg_buf_init(&b);
    lg_buf_append_str(&b, "hello");
    char *data = b.data;
    size_t cap = b.cap;
    lg_buf_reset(&b);
    ck_assert_uint_eq(b.len, 0);
    ck_assert_ptr_eq(b.data, data);
    ck_assert_uint_eq(b.cap, cap);
    ck_assert_str_eq(b.data, "");
    lg_buf_append_str(&b, "hi");
    ck_assert_str_eq(b.data, "hi");
    lg_buf_release(&b);
}
END_TEST

START_TEST(buf_impossible_size_sets_oom_until_reset)
{
    struct lg_buf b;
    lg_buf_init(&b);
    lg_buf_append_str(&b, "ok");
    lg_buf_append(&b, "x", SIZE_MAX); /* overflows the size computation: never read */
    ck_assert(b.oom);
    ck_assert_uint_eq(b.len, 2);
    lg_buf_append_str(&b, "more");
    lg_buf_appendf(&b, "%d", 1);
    lg_buf_append_u64(&b, 1);
    ck_assert_uint_eq(b.len, 2);
    ck_assert_str_eq(b.data, "ok");
    lg_buf_reset(&b);
    ck_assert(!b.oom);
    lg_buf_append_str(&b, "again");
    ck_assert_str_eq(b.data, "again");
    lg_buf_release(&b);
}
END_TEST

/* ---- SSE data lines and JSON strings ------------------------------------------------------ */

/*
 * The SSE data lines (lg_encode_sse_data: every line of the text, ended by LF, CR or CRLF,
 * becomes "data: <line>\n") and the JSON strings (lg_encode_json_string) of a text: one table,
 * a row per case, named after its encoder. That the three line ends end lines alike is
 * sse_line_ends_are_alike's, below.
 */
#define SSE lg_encode_sse_data
#define JSON lg_encode_json_string
static const struct text_case text_cases[] = {
    {"sse: empty data is one empty line", SSE, "", 0, "data: \n"},
    {"sse: empty data (NULL) is one empty line", SSE, NULL, 0, "data: \n"},
    {"sse: single line", SSE, "hello", 5, "data: hello\n"},
    {"sse: single line of JSON", SSE, "{\"a\":1}", 7, "data: {\"a\":1}\n"},
    {"sse: LF, CRLF and CR end lines", SSE, "one\ntwo\r\nthree\rfour", 19,
     "data: one\ndata: two\ndata: three\ndata: four\n"},
    {"sse: LF CR is two ends, not one", SSE, "a\n\rb", 4, "data: a\ndata: \ndata: b\n"},
    {"json: empty text is quoted", JSON, "", 0, "\"\""},
    {"json: plain text is quoted", JSON, "hello world", 11, "\"hello world\""},
    {"json: '/' needs no escape", JSON, "a/b", 3, "\"a/b\""},
    {"json: quote is escaped", JSON, "say \"hi\"", 8, "\"say \\\"hi\\\"\""},
    {"json: backslash is escaped", JSON, "C:\\dir", 6, "\"C:\\\\dir\""},
    {"json: control characters with a short escape", JSON, "\b\f\n\r\t", 5, "\"\\b\\f\\n\\r\\t\""},
    {"json: NUL is \\u0000", JSON, "a\0b", 3, "\"a\\u0000b\""},
    {"json: other control characters are \\u00XX", JSON, "\x01\x1f\x0b", 3,
     "\"\\u0001\\u001f\\u000b\""},
    {"json: DEL is not a JSON control character", JSON, "\x7f", 1, "\"\x7f\""},
    {"json: UTF-8 is kept as is", JSON, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 14,
     "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\""},
    {"json: U+2028 is left alone", JSON, "\xe2\x80\xa8", 3, "\"\xe2\x80\xa8\""},
};

#undef SSE
#undef JSON

START_TEST(text_encodings) { assert_text_case(&text_cases[_i]); }
END_TEST

/*
 * LF, CR and CRLF each end an SSE data line, and alike: every shape of text below, with the
 * same one of the three at each '|', renders exactly its lines. A case is a (shape, end) pair.
 */
static const struct {
    const char *name, *end;
} sse_line_ends[] = {{"LF", "\n"}, {"CR", "\r"}, {"CRLF", "\r\n"}};

static const struct {
    const char *name, *text, *want;
} sse_end_shapes[] = {
    {"an end ends a line", "a|b", "data: a\ndata: b\n"},
    {"a trailing end gives an empty last line", "a|", "data: a\ndata: \n"},
    {"a lone end is two empty lines", "|", "data: \ndata: \n"},
    {"consecutive ends give an empty line", "a||b", "data: a\ndata: \ndata: b\n"},
};

#define SSE_ENDS (sizeof sse_line_ends / sizeof *sse_line_ends)
#define SSE_END_CASES (SSE_ENDS * (sizeof sse_end_shapes / sizeof *sse_end_shapes))

START_TEST(sse_line_ends_are_alike)
{
    const char *end_name = sse_line_ends[(size_t)_i % SSE_ENDS].name;
    const char *end = sse_line_ends[(size_t)_i % SSE_ENDS].end;
    const char *shape_name = sse_end_shapes[(size_t)_i / SSE_ENDS].name;
    const char *text = sse_end_shapes[(size_t)_i / SSE_ENDS].text;
    char in[16], name[96];
    size_t len = 0;
    for (const char *p = text; *p; p++) { /* each '|' of the shape becomes the end */
        size_t n = *p == '|' ? strlen(end) : 1;
        ck_assert_uint_lt(len + n, sizeof in);
        memcpy(in + len, *p == '|' ? end : p, n);
        len += n;
    }
    in[len] = '\0';
    snprintf(name, sizeof name, "sse, %s: %s", end_name, shape_name);
    struct text_case c = {name, lg_encode_sse_data, in, len,
                          sse_end_shapes[(size_t)_i / SSE_ENDS].want};
    assert_text_case(&c);
}
END_TEST

START_TEST(sse_appends_after_existing_content)
{
    struct lg_buf b;
    lg_buf_init(&b);
    lg_buf_append_str(&b, "event: x\n");
    lg_encode_sse_data(&b, "a\nb", 3);
    ck_assert_str_eq(b.data, "event: x\ndata: a\ndata: b\n");
    lg_buf_release(&b);
}
END_TEST

/* ---- WebSocket frame header --------------------------------------------------------------- */

START_TEST(ws_header_7_bit_length)
{
    assert_ws_header(0, 0x1, (const unsigned char[]){0x81, 0x00}, 2);
    assert_ws_header(125, 0x1, (const unsigned char[]){0x81, 0x7d}, 2);
}
END_TEST

START_TEST(ws_header_16_bit_length)
{
    assert_ws_header(126, 0x1, (const unsigned char[]){0x81, 0x7e, 0x00, 0x7e}, 4);
    assert_ws_header(300, 0x1, (const unsigned char[]){0x81, 0x7e, 0x01, 0x2c}, 4);
    assert_ws_header(65535, 0x1, (const unsigned char[]){0x81, 0x7e, 0xff, 0xff}, 4);
}
END_TEST

START_TEST(ws_header_64_bit_length)
{
    assert_ws_header(65536, 0x1,
                     (const unsigned char[]){0x81, 0x7f, 0, 0, 0, 0, 0, 0x01, 0x00, 0x00}, 10);
    assert_ws_header(0x0102030405ull, 0x1,
                     (const unsigned char[]){0x81, 0x7f, 0, 0, 0, 0x01, 0x02, 0x03, 0x04, 0x05},
                     10);
}
END_TEST

START_TEST(ws_header_carries_the_opcode)
{
    assert_ws_header(2, 0x2, (const unsigned char[]){0x82, 0x02}, 2);
    assert_ws_header(0, 0x9, (const unsigned char[]){0x89, 0x00}, 2);
    assert_ws_header(2, 0x8, (const unsigned char[]){0x88, 0x02}, 2);
}
END_TEST

/* ---- UTF-8 validation --------------------------------------------------------------------- */

START_TEST(utf8_accepts_well_formed_text)
{
    ck_assert(lg_utf8_valid("", 0));
    ck_assert(lg_utf8_valid("a\0b", 3)); /* U+0000 is a valid code point */
    UTF8_OK("plain ascii");
    UTF8_OK("\xc2\x80");         /* U+0080, first 2-byte */
    UTF8_OK("\xdf\xbf");         /* U+07FF, last 2-byte */
    UTF8_OK("\xe0\xa0\x80");     /* U+0800, first 3-byte */
    UTF8_OK("\xed\x9f\xbf");     /* U+D7FF, just below the surrogates */
    UTF8_OK("\xee\x80\x80");     /* U+E000, just above them */
    UTF8_OK("\xef\xbf\xbf");     /* U+FFFF */
    UTF8_OK("\xf0\x90\x80\x80"); /* U+10000, first 4-byte */
    UTF8_OK("\xf4\x8f\xbf\xbf"); /* U+10FFFF, the last code point */
    UTF8_OK("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
}
END_TEST

START_TEST(utf8_rejects_overlong_forms)
{
    UTF8_BAD("\xc0\x80");
    UTF8_BAD("\xc1\xbf");
    UTF8_BAD("\xe0\x80\x80");
    UTF8_BAD("\xe0\x9f\xbf");
    UTF8_BAD("\xf0\x80\x80\x80");
    UTF8_BAD("\xf0\x8f\xbf\xbf");
}
END_TEST

START_TEST(utf8_rejects_surrogates)
{
    UTF8_BAD("\xed\xa0\x80"); /* U+D800 */
    UTF8_BAD("\xed\xbf\xbf"); /* U+DFFF */
    UTF8_BAD("\xed\xa0\xbd\xed\xb8\x80"); /* a CESU-8 surrogate pair */
}
END_TEST

START_TEST(utf8_rejects_code_points_above_10ffff)
{
    UTF8_BAD("\xf4\x90\x80\x80"); /* U+110000 */
    UTF8_BAD("\xf5\x80\x80\x80");
    UTF8_BAD("\xf7\xbf\xbf\xbf");
    UTF8_BAD("\xf8\x88\x80\x80\x80");
    UTF8_BAD("\xfe");
    UTF8_BAD("\xff");
}
END_TEST

START_TEST(utf8_rejects_truncated_and_broken_sequences)
{
    UTF8_BAD("\x80");           /* a continuation byte with no lead */
    UTF8_BAD("a\xbf");
    UTF8_BAD("\xc3");           /* cut at the end */
    UTF8_BAD("\xe2\x82");
    UTF8_BAD("\xf0\x9f\x98");
    UTF8_BAD("\xe2\x28\xa1");   /* second byte is not a continuation */
    UTF8_BAD("\xe2\x82\x28");   /* third byte is not a continuation */
    UTF8_BAD("\xf0\x9f\x98\x28");
    UTF8_BAD("\xc3\xa9\xc3");   /* good, then cut */
    ck_assert(!lg_utf8_valid("\xe2\x82\xac", 2)); /* len cuts a complete sequence */
}
END_TEST

static Suite *encode_suite(void)
{
    Suite *s = suite_create("encode");

    TCase *tc;
    LG_TCASE(s, "buf", NULL, NULL, buf_appends_and_stays_nul_terminated,
             buf_grows_past_its_first_capacity, buf_append_of_null_reserves_room_to_fill_in,
             buf_appends_u64_in_decimal, buf_appendf_fits_and_regrows,
             buf_reset_keeps_the_allocation, buf_impossible_size_sets_oom_until_reset);
    tc = LG_TCASE(s, "text", NULL, NULL, sse_appends_after_existing_content);
    tcase_add_loop_test(tc, text_encodings, 0, (int)(sizeof text_cases / sizeof *text_cases));
    tcase_add_loop_test(tc, sse_line_ends_are_alike, 0, (int)SSE_END_CASES);
    LG_TCASE(s, "ws_header", NULL, NULL, ws_header_7_bit_length, ws_header_16_bit_length,
             ws_header_64_bit_length, ws_header_carries_the_opcode);
    LG_TCASE(s, "utf8", NULL, NULL, utf8_accepts_well_formed_text, utf8_rejects_overlong_forms,
             utf8_rejects_surrogates, utf8_rejects_code_points_above_10ffff,
             utf8_rejects_truncated_and_broken_sequences);

    return s;
}

LG_CHECK_MAIN(encode_suite)
