/*
 * test_logs.c - log_format and the access line: with "json" every line the gateway prints is
 * one JSON object with time, level, msg and fields; a client's disconnect is one info line
 * with its transport, topics, remote address, duration, events delivered, dropped, bytes and
 * reason; a burst of disconnects is rate-limited and the lines printed plus the suppressed
 * counts they carry add up to the disconnects. The text format keeps its shape. libwebsockets'
 * own lines reach the log only when the gateway starts at debug.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "lg_test.h"

#include "check_main.h"

#define WAIT_MS 5000
#define BURST 12

/* Every line of the log parses as a JSON object of the documented shape; the disconnect
 * lines' fields are summed into *lines and *suppressed. */
static void check_json_lines(const char *log, int *lines, long long *suppressed, json_t **last)
{
    const char *p = log;
    while (*p) {
        const char *end = strchr(p, '\n');
        ck_assert_msg(end, "log does not end with a newline: %s", p);
        json_error_t err;
        json_t *o = json_loadb(p, (size_t)(end - p), 0, &err);
        ck_assert_msg(json_is_object(o), "not a JSON object: %.*s (%s)", (int)(end - p), p,
                      err.text);
        ck_assert(json_is_string(json_object_get(o, "time")));
        ck_assert(json_is_string(json_object_get(o, "level")));
        ck_assert(json_is_string(json_object_get(o, "msg")));
        json_t *fields = json_object_get(o, "fields");
        ck_assert(json_is_object(fields));
        if (strcmp(json_string_value(json_object_get(o, "msg")), "client disconnected") == 0) {
            ck_assert_str_eq(json_string_value(json_object_get(o, "level")), "info");
            (*lines)++;
            *suppressed += json_integer_value(json_object_get(fields, "suppressed"));
            json_decref(*last);
            *last = json_incref(o);
        }
        json_decref(o);
        p = end + 1;
    }
}

START_TEST(test_logs_json_and_access_line)
{
    struct lg_server s;
    lg_server_must_start(&s, "{\"log_format\":\"json\",\"workers\":1}");
    struct lg_sse_client c;
    lg_sse_must_open(&c, s.public_port, "/sse?topic=a&topic=b", NULL);
    lg_publish_n(s.control_port, "a", 1, 3, NULL, 0);
    for (int i = 0; i < 3; i++) {
        struct lg_sse_event ev;
        ck_assert_int_eq(lg_sse_next(&c, &ev, WAIT_MS), 1);
        lg_sse_event_free(&ev);
    }
    lg_sse_close(&c);
    ck_assert(lg_server_wait_log(&s, "client disconnected", WAIT_MS));

    /* A burst: BURST streams closed at once, then one more after the interval. */
    struct lg_sse_client burst[BURST];
    for (int i = 0; i < BURST; i++)
        lg_sse_must_open(&burst[i], s.public_port, "/sse?topic=q", NULL);
    for (int i = 0; i < BURST; i++)
        lg_sse_close(&burst[i]);
    ck_assert(lg_wait_stat(s.control_port, "clients_sse", 0, WAIT_MS));
    struct timespec pause = {.tv_nsec = 250 * 1000 * 1000};
    nanosleep(&pause, NULL);
    struct lg_sse_client late;
    lg_sse_must_open(&late, s.public_port, "/sse?topic=late", NULL);
    lg_sse_close(&late);
    ck_assert(lg_server_wait_log(&s, "\"topics\":\"late\"", WAIT_MS));
    lg_server_must_stop(&s);

    int lines = 0;
    long long suppressed = 0;
    json_t *last = NULL;
    check_json_lines(s.log, &lines, &suppressed, &last);
    ck_assert_msg(lines + suppressed == 1 + BURST + 1,
                  "%d lines + %lld suppressed, want %d disconnects", lines, suppressed, BURST + 2);
    ck_assert_msg(suppressed > 0, "a burst of %d in one interval suppressed nothing", BURST);
    json_decref(last);

    /* The first disconnect line, field by field. */
    const char *first = strstr(s.log, "\"msg\":\"client disconnected\"");
    ck_assert_ptr_nonnull(first);
    const char *start = first;
    while (start > s.log && start[-1] != '\n')
        start--;
    json_t *o = json_loadb(start, (size_t)(strchr(first, '\n') - start), 0, NULL);
    json_t *f = json_object_get(o, "fields");
    ck_assert_str_eq(json_string_value(json_object_get(f, "transport")), "SSE");
    ck_assert_str_eq(json_string_value(json_object_get(f, "topics")), "a,b");
    ck_assert_str_eq(json_string_value(json_object_get(f, "remote")), "127.0.0.1");
    ck_assert_str_eq(json_string_value(json_object_get(f, "reason")), "client");
    ck_assert_int_eq(json_integer_value(json_object_get(f, "delivered")), 3);
    ck_assert_int_eq(json_integer_value(json_object_get(f, "dropped")), 0);
    ck_assert_int_gt(json_integer_value(json_object_get(f, "bytes")), 3 * 10);
    ck_assert(json_is_integer(json_object_get(f, "duration_ms")));
    ck_assert(json_is_integer(json_object_get(f, "id")));
    json_decref(o);
}
END_TEST

START_TEST(test_logs_text_access_line)
{
    struct lg_server s;
    lg_server_must_start(&s, NULL);
    struct lg_ws_client ws;
    lg_ws_must_subscribe(&ws, s.public_port, "/ws?topic=t", NULL, NULL, 0);
    lg_ws_close(&ws);
    ck_assert(lg_server_wait_log(&s, "client disconnected", WAIT_MS));
    const char *line = strstr(s.log, " INFO client disconnected id=");
    ck_assert_msg(line, "%s", s.log);
    ck_assert_msg(strstr(line, " transport=WebSocket remote=127.0.0.1 topics=t duration_ms="),
                  "%s", line);
    ck_assert_msg(strstr(line, " delivered=0 dropped=0 bytes=0 reason=client\n"), "%s", line);
    lg_server_must_stop(&s);
}
END_TEST

/* Debian's lws logs every WebSocket hand-over at error level; at the default level that line
 * (and every other of lws') stays out of the log, with two workers taking connections. */
START_TEST(test_logs_lws_lines_only_at_debug)
{
    const char *configs[] = {"{\"workers\":2}", "{\"workers\":2,\"log_level\":\"debug\"}"};
    for (int debug = 0; debug < 2; debug++) {
        struct lg_server s;
        lg_server_must_start(&s, configs[debug]);
        struct lg_ws_client ws[4];
        for (int i = 0; i < 4; i++)
            lg_ws_must_subscribe(&ws[i], s.public_port, "/ws?topic=t", NULL, NULL, 0);
        for (int i = 0; i < 4; i++)
            lg_ws_close(&ws[i]);
        ck_assert(lg_wait_stat(s.control_port, "clients_ws", 0, WAIT_MS));
        lg_server_must_stop(&s);
        const char *lws_line = strstr(s.log, " DEBUG lws error: ");
        if (debug)
            ck_assert_msg(lws_line, "no line of libwebsockets at debug: %s", s.log);
        else
            ck_assert_msg(!strstr(s.log, " lws "), "a line of libwebsockets at info: %s", s.log);
    }
}
END_TEST

static Suite *logs_suite(void)
{
    Suite *s = suite_create("logs");
    TCase *tc = LG_TCASE(s, "logs", NULL, NULL, test_logs_json_and_access_line,
                         test_logs_text_access_line, test_logs_lws_lines_only_at_debug);
    tcase_set_timeout(tc, 60);
    return s;
}

LG_CHECK_MAIN(logs_suite)
