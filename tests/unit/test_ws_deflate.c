/*
 * test_ws_deflate.c - permessage-deflate (ws_deflate.h): which offer of a
 * Sec-WebSocket-Extensions value is accepted (one row per RFC 7692 case: the window sizes, the
 * context takeover parameters, unknown, repeated and malformed parameters, alternatives); a
 * compressed frame's exact header and that it inflates back to the message; an event
 * compressed once however often it is asked for, counted in the live event bytes and freed
 * with it; a message below min_bytes left plain.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "accounting.h"
#include "event.h"
#include "stats.h"
#include "ws_deflate.h"

#include "check_main.h"

struct offer_row {
    const char *value;
    unsigned window_bits; /* ours */
    int chosen;           /* the offer accepted, -1 none */
};

static const struct offer_row offer_rows[] = {
    {"permessage-deflate", 15, 0},
    {"permessage-deflate; client_max_window_bits", 15, 0}, /* what browsers offer */
    {"permessage-deflate; client_max_window_bits=10", 15, 0},
    {"permessage-deflate; client_max_window_bits=8", 15, 0},
    {"permessage-deflate; client_max_window_bits=16", 15, -1},
    {"permessage-deflate; client_max_window_bits=7", 15, -1},
    {"permessage-deflate; client_max_window_bits=010", 15, -1}, /* no leading zero */
    {"permessage-deflate; server_max_window_bits=15", 15, 0},
    {"permessage-deflate; server_max_window_bits=12", 12, 0},
    {"permessage-deflate; server_max_window_bits=12", 15, -1}, /* below our window */
    {"permessage-deflate; server_max_window_bits", 15, -1},    /* needs a value */
    {"permessage-deflate; server_max_window_bits=\"15\"", 15, -1}, /* quoted: declined */
    {"permessage-deflate; server_no_context_takeover", 15, 0},
    {"permessage-deflate; client_no_context_takeover", 15, 0},
    {"permessage-deflate; server_no_context_takeover=1", 15, -1},
    {"permessage-deflate; server_no_context_takeover; client_no_context_takeover; "
     "server_max_window_bits=15; client_max_window_bits",
     15, 0},
    {"permessage-deflate; x_unknown", 15, -1},
    {"permessage-deflate; server_no_context_takeover; server_no_context_takeover", 15, -1},
    {"permessage-deflate; client_max_window_bits; client_max_window_bits=9", 15, -1},
    {"permessage-deflate;", 15, -1},
    {"permessage-deflate; ; server_no_context_takeover", 15, -1},
    {"permessage-deflate; server_max_window_bits = 15", 15, -1},
    {"permessage-deflate;\tclient_max_window_bits", 15, -1},
    /* alternatives, in the client's order of preference */
    {"permessage-deflate; server_max_window_bits=10, permessage-deflate; "
     "client_max_window_bits",
     15, 1},
    {"permessage-deflate; x, permessage-deflate", 15, 1},
    {"permessage-deflate, permessage-deflate; client_max_window_bits", 15, 1},
    {"permessage-deflate, permessage-deflate; x", 15, -1},
    {"x-webkit-deflate-frame, permessage-deflate; client_max_window_bits", 15, 0},
    {"x-webkit-deflate-frame", 15, -1},
    {"permessage -deflate", 15, -1},
    {"", 15, -1},
};

START_TEST(each_offer_gets_its_answer)
{
    const struct offer_row *r = &offer_rows[_i];
    ck_assert_msg(lg_ws_deflate_choose(r->value, strlen(r->value), r->window_bits) == r->chosen,
                  "%s (window %u): want %d", r->value, r->window_bits, r->chosen);
}
END_TEST

/* The payload of the frame at f (the header's length in *hl), inflated as RFC 7692 7.2.2
 * says: the 00 00 ff ff put back. */
static char *inflate_frame(const unsigned char *f, size_t len, size_t *hl)
{
    size_t plen = f[1] & 0x7f;
    *hl = 2;
    if (plen == 126) {
        plen = (size_t)f[2] << 8 | f[3];
        *hl = 4;
    }
    ck_assert_uint_eq(*hl + plen, len);
    unsigned char *in = malloc(plen + 4);
    memcpy(in, f + *hl, plen);
    memcpy(in + plen, "\0\0\xff\xff", 4);
    z_stream z = {0};
    ck_assert_int_eq(inflateInit2(&z, -15), Z_OK);
    char *out = calloc(1, 1 << 16);
    z.next_in = in;
    z.avail_in = (uInt)plen + 4;
    z.next_out = (unsigned char *)out;
    z.avail_out = (1 << 16) - 1;
    ck_assert_int_eq(inflate(&z, Z_SYNC_FLUSH), Z_OK);
    inflateEnd(&z);
    free(in);
    return out;
}

START_TEST(a_frame_is_final_text_rsv1_and_inflates_to_the_message)
{
    struct lg_ws_deflater d;
    ck_assert_int_eq(lg_ws_deflater_init(&d, 6, 15, 8, 0), 0);
    const char *msgs[] = {"{\"a\":1}", "", "abcabcabcabcabcabcabcabcabcabcabcabcabcabcabcabc"};
    for (size_t i = 0; i < 3; i++) {
        struct lg_buf out;
        lg_buf_init(&out);
        lg_buf_append(&out, "x", 1); /* appended after what is there */
        ck_assert_int_eq(lg_ws_deflate_frame(&d, msgs[i], strlen(msgs[i]), &out), 0);
        const unsigned char *f = (const unsigned char *)out.data + 1;
        ck_assert_uint_eq(f[0], 0xc1); /* FIN, RSV1, text */
        ck_assert_uint_eq(f[1] & 0x80, 0);
        size_t hl;
        char *text = inflate_frame(f, out.len - 1, &hl);
        ck_assert_str_eq(text, msgs[i]);
        free(text);
        lg_buf_release(&out);
    }
    lg_ws_deflater_release(&d);
}
END_TEST

static struct lg_event *event_of(const char *data)
{
    struct lg_event_fields f = {.topic_name = "t", .topic_name_len = 1, .epoch = 1, .seq = 1,
                                .data = data, .data_len = strlen(data)};
    struct lg_event *ev = lg_event_create(&f);
    ck_assert_ptr_nonnull(ev);
    return ev;
}

START_TEST(an_event_is_compressed_once_counted_and_freed_with_it)
{
    char data[1024];
    for (size_t i = 0; i < sizeof data - 1; i++)
        data[i] = "livegate "[i % 9];
    data[sizeof data - 1] = '\0';
    struct lg_ws_deflater a, b;
    ck_assert_int_eq(lg_ws_deflater_init(&a, 6, 15, 8, 64), 0);
    ck_assert_int_eq(lg_ws_deflater_init(&b, 1, 15, 8, 64), 0);
    int64_t before_event = lg_account_event_bytes();
    struct lg_event *ev = event_of(data);
    int64_t bytes = lg_account_event_bytes();
    uint64_t compressed_before = LG_STAT_GET(ws_deflate_events);
    const struct lg_ws_compressed *z = lg_event_ws_compressed(ev, &a);
    ck_assert_ptr_nonnull(z);
    ck_assert_ptr_eq(lg_event_ws_compressed(ev, &b), z); /* another worker: the same frame */
    ck_assert_uint_eq(LG_STAT_GET(ws_deflate_events), compressed_before + 1);
    ck_assert_int_eq(lg_account_event_bytes(), bytes + (int64_t)z->size);
    ck_assert_uint_lt(z->frame_len, ev->ws_frame_len / 10);
    size_t hl;
    char *text = inflate_frame(z->frame, z->frame_len, &hl);
    ck_assert_uint_eq(strlen(text), ev->json_len);
    ck_assert_int_eq(memcmp(text, ev->json, ev->json_len), 0);
    free(text);
    lg_event_unref(&ev);
    ck_assert_int_eq(lg_account_event_bytes(), before_event);
    lg_ws_deflater_release(&a);
    lg_ws_deflater_release(&b);
}
END_TEST

START_TEST(small_messages_go_plain)
{
    struct lg_ws_deflater d;
    ck_assert_int_eq(lg_ws_deflater_init(&d, 6, 15, 8, 200), 0);
    struct lg_event *small = event_of("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
    ck_assert_uint_lt(small->json_len, 200);
    ck_assert_ptr_null(lg_event_ws_compressed(small, &d));
    ck_assert_ptr_null(atomic_load(&small->ws_compressed)); /* not even tried */
    lg_event_unref(&small);
    lg_ws_deflater_release(&d);
}
END_TEST

static Suite *ws_deflate_suite(void)
{
    Suite *s = suite_create("ws_deflate");
    TCase *tc = tcase_create("negotiate");
    tcase_add_loop_test(tc, each_offer_gets_its_answer, 0,
                        sizeof offer_rows / sizeof offer_rows[0]);
    suite_add_tcase(s, tc);
    LG_TCASE(s, "compress", NULL, NULL, a_frame_is_final_text_rsv1_and_inflates_to_the_message,
             an_event_is_compressed_once_counted_and_freed_with_it,
             small_messages_go_plain);
    return s;
}

int main(void) { return lg_check_run(ws_deflate_suite()); }
