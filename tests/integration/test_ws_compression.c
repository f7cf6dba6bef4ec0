/*
 * test_ws_compression.c - permessage-deflate on /ws (websocket.compression) against the real
 * binary: the exact Sec-WebSocket-Extensions answer to each RFC 7692 offer (accepted with its
 * parameters echoed, or declined and the connection served uncompressed), events that arrive
 * compressed and equal to what an uncompressed subscriber gets, each compressed once however
 * many connections and workers take it, small events sent plain, control messages the client
 * sent compressed answered, and no extension when compression is off.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "lg_test.h"

#include "check_main.h"

#define WAIT_MS 5000

/* Events of at least 200 bytes are compressed, with a 4 KB window (so offers that cap the
 * server's window below 12 bits are declined). */
#define CONFIG                                                                                     \
    "{\"workers\":2,\"websocket\":{\"compression\":{\"enabled\":true,\"min_bytes\":200,"          \
    "\"max_window_bits\":12}}}"

static struct lg_server srv;

static void server_setup(void) { lg_server_must_start(&srv, CONFIG); }
static void server_teardown(void) { lg_server_must_stop(&srv); }

static char *next_msg(struct lg_ws_client *c)
{
    char *m = NULL;
    int rc = lg_ws_next(c, &m, WAIT_MS);
    ck_assert_msg(rc == 1, "no message (rc %d, close %d %s)", rc, c->close_code, c->close_reason);
    return m;
}

/* Open /ws?topic=<topic> offering `offer` (NULL: no Sec-WebSocket-Extensions) and take the
 * subscribed answer. */
static void open_offering(struct lg_ws_client *c, const char *topic, const char *offer)
{
    char path[128], header[512] = "";
    snprintf(path, sizeof path, "/ws?topic=%s", topic);
    if (offer)
        snprintf(header, sizeof header, "Sec-WebSocket-Extensions: %s\r\n", offer);
    ck_assert_int_eq(lg_ws_open_with(c, srv.public_port, path, "livegate.v1", header), 0);
    free(next_msg(c));
}

/* A compressible JSON-ish event body of about 1 KB: the one of bench/ (compare.sh). */
static void compressible_body(char *out, size_t cap, int n)
{
    size_t len = (size_t)snprintf(out, cap, "{\"n\":%d,\"items\":[", n);
    for (int i = 0; len + 80 < cap && i < 14; i++)
        len += (size_t)snprintf(out + len, cap - len,
                                "%s{\"sku\":\"item-%04d\",\"price\":%d.99,\"stock\":%d}",
                                i ? "," : "", i, 10 + i, 100 - i);
    snprintf(out + len, cap - len, "]}");
}

struct offer_row {
    const char *offer;
    const char *answer; /* "" = declined */
};

static const struct offer_row offer_rows[] = {
    {"permessage-deflate; client_max_window_bits", "permessage-deflate"},
    {"permessage-deflate", "permessage-deflate"},
    {"permessage-deflate; client_max_window_bits=9", "permessage-deflate"},
    {"permessage-deflate; server_no_context_takeover",
     "permessage-deflate; server_no_context_takeover"},
    {"permessage-deflate; client_no_context_takeover",
     "permessage-deflate; client_no_context_takeover"},
    {"permessage-deflate; server_max_window_bits=12",
     "permessage-deflate; server_max_window_bits=12"},
    {"permessage-deflate; server_max_window_bits=15",
     "permessage-deflate; server_max_window_bits=15"},
    {"permessage-deflate; server_no_context_takeover; client_no_context_takeover; "
     "server_max_window_bits=13; client_max_window_bits",
     "permessage-deflate; server_no_context_takeover; client_no_context_takeover; "
     "server_max_window_bits=13"},
    {"permessage-deflate; server_max_window_bits=11", ""}, /* below our window */
    {"permessage-deflate; server_max_window_bits=16", ""}, /* not a window size */
    {"permessage-deflate; server_max_window_bits", ""},    /* needs a value */
    {"permessage-deflate; client_max_window_bits=20", ""},
    {"permessage-deflate; server_no_context_takeover=1", ""},
    {"permessage-deflate; x_unknown", ""},
    {"permessage-deflate; server_no_context_takeover; server_no_context_takeover", ""},
    {"permessage-deflate; server_max_window_bits=10, permessage-deflate; "
     "client_no_context_takeover",
     "permessage-deflate; client_no_context_takeover"},
    {"x-webkit-deflate-frame", ""},
};

/* Each offer gets its exact answer, and the connection then serves events: compressed when
 * the extension was agreed on, plain when it was declined, intact either way. */
START_TEST(each_offer_gets_its_answer_and_events_arrive_intact)
{
    const struct offer_row *r = &offer_rows[_i];
    struct lg_ws_client c;
    open_offering(&c, "t", r->offer);
    ck_assert_msg(strcmp(c.extensions, r->answer) == 0, "offer %s: answer \"%s\", want \"%s\"",
                  r->offer, c.extensions, r->answer);
    char body[1200];
    for (int i = 1; i <= 2; i++) {
        compressible_body(body, sizeof body, i);
        ck_assert_int_eq(lg_publish(srv.control_port, "t", body, NULL, 0), 201);
    }
    for (int i = 1; i <= 2; i++) {
        char *m = next_msg(&c);
        compressible_body(body, sizeof body, i);
        json_t *ev = json_loads(m, 0, NULL);
        const char *data = json_string_value(json_object_get(ev, "data"));
        ck_assert_msg(data && strcmp(data, body) == 0, "event %d: %s", i, m);
        json_decref(ev);
        free(m);
    }
    ck_assert_uint_eq(c.compressed, r->answer[0] ? 2 : 0);
    lg_ws_close(&c);
    ck_assert_int_eq(lg_stat(srv.control_port, "ws_deflate_negotiated"), r->answer[0] ? 1 : 0);
    ck_assert_int_eq(lg_stat(srv.control_port, "ws_deflate_declined"),
                     r->answer[0] || strncmp(r->offer, "x-", 2) == 0 ? 0 : 1);
}
END_TEST

/* Three compressed subscribers and a plain one, over two workers: the same messages, in the
 * same order; each big event compressed once; the small one plain for everybody. */
START_TEST(every_subscriber_gets_the_same_events_each_compressed_once)
{
    struct lg_ws_client z[3], plain;
    for (int i = 0; i < 3; i++)
        open_offering(&z[i], "fan", "permessage-deflate; client_max_window_bits");
    open_offering(&plain, "fan", NULL);
    char body[1200];
    for (int i = 1; i <= 5; i++) {
        compressible_body(body, sizeof body, i);
        ck_assert_int_eq(lg_publish(srv.control_port, "fan", body, NULL, 0), 201);
    }
    ck_assert_int_eq(lg_publish(srv.control_port, "fan", "small", NULL, 0), 201);
    long long plain_frames = 0; /* the bytes of the big events' plain frames */
    for (int e = 0; e < 6; e++) {
        char *want = next_msg(&plain);
        size_t len = strlen(want);
        if (e < 5)
            plain_frames += (long long)(len + (len < 126 ? 2 : 4));
        for (int i = 0; i < 3; i++) {
            char *got = next_msg(&z[i]);
            ck_assert_str_eq(got, want);
            free(got);
        }
        free(want);
    }
    for (int i = 0; i < 3; i++) {
        ck_assert_uint_eq(z[i].compressed, 5);
        lg_ws_close(&z[i]);
    }
    ck_assert_uint_eq(plain.compressed, 0);
    lg_ws_close(&plain);
    ck_assert_int_eq(lg_stat(srv.control_port, "ws_deflate_events"), 5);
    ck_assert_int_eq(lg_stat(srv.control_port, "ws_deflate_frames"), 15);
    long long before = lg_stat(srv.control_port, "ws_deflate_bytes_before");
    long long after = lg_stat(srv.control_port, "ws_deflate_bytes_after");
    ck_assert_int_eq(before, 3 * plain_frames);
    ck_assert_msg(after * 3 < before, "compressed %lld of %lld bytes", after, before);
}
END_TEST

/* Control messages the client compressed are inflated and answered, one after another. */
START_TEST(compressed_control_messages_are_answered)
{
    struct lg_ws_client c;
    memset(&c, 0, sizeof c);
    ck_assert_int_eq(lg_ws_open_with(&c, srv.public_port, "/ws", "livegate.v1",
                                     "Sec-WebSocket-Extensions: permessage-deflate\r\n"),
                     0);
    ck_assert(c.deflate);
    const char *sub = "{\"op\":\"subscribe\",\"topics\":[\"ops-a\",\"ops-b\"]}";
    ck_assert_int_eq(lg_ws_send_deflated(&c, sub, strlen(sub)), 0);
    char *m = next_msg(&c);
    ck_assert_msg(strstr(m, "\"type\":\"subscribed\"") && strstr(m, "\"ops-b\""), "%s", m);
    free(m);
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(lg_ws_send_deflated(&c, "{\"op\":\"ping\"}", 13), 0);
        m = next_msg(&c);
        ck_assert_str_eq(m, "{\"type\":\"pong\",\"v\":1}");
        free(m);
    }
    ck_assert_int_eq(lg_publish(srv.control_port, "ops-b", "after the ops", NULL, 0), 201);
    m = next_msg(&c);
    ck_assert_msg(strstr(m, "\"data\":\"after the ops\""), "%s", m);
    free(m);
    lg_ws_close(&c);
}
END_TEST

/* Off (the default): no extension is agreed on whatever the client offers. */
START_TEST(off_by_default)
{
    struct lg_server plain_srv;
    lg_server_must_start(&plain_srv, NULL);
    struct lg_ws_client c;
    ck_assert_int_eq(lg_ws_open_with(&c, plain_srv.public_port, "/ws?topic=t", "livegate.v1",
                                     "Sec-WebSocket-Extensions: permessage-deflate; "
                                     "client_max_window_bits\r\n"),
                     0);
    ck_assert_str_eq(c.extensions, "");
    free(next_msg(&c));
    char body[1200];
    compressible_body(body, sizeof body, 1);
    ck_assert_int_eq(lg_publish(plain_srv.control_port, "t", body, NULL, 0), 201);
    free(next_msg(&c));
    ck_assert_uint_eq(c.compressed, 0);
    lg_ws_close(&c);
    ck_assert_int_eq(lg_stat(plain_srv.control_port, "ws_deflate_events"), 0);
    lg_server_must_stop(&plain_srv);
}
END_TEST

static Suite *ws_deflate_suite(void)
{
    Suite *s = suite_create("ws_compression");
    TCase *tc = tcase_create("offers");
    tcase_add_checked_fixture(tc, server_setup, server_teardown);
    tcase_add_loop_test(tc, each_offer_gets_its_answer_and_events_arrive_intact, 0,
                        sizeof offer_rows / sizeof offer_rows[0]);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    LG_TCASE(s, "traffic", server_setup, server_teardown,
             every_subscriber_gets_the_same_events_each_compressed_once,
             compressed_control_messages_are_answered);
    LG_TCASE(s, "off", NULL, NULL, off_by_default);
    return s;
}

int main(void) { return lg_check_run(ws_deflate_suite()); }
