/* Unit tests for http_request.c and subscribe_params.c: pure parsing over byte buffers. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "http_request.h"
#include "subscribe_params.h"

#include "check_main.h"

static const char sse_request[] = "GET /sse?topic=a&topic=b%2Fc HTTP/1.1\r\n"
                                  "Host: x\r\n"
                                  "Last-Event-ID: a@0000000f:3\r\n"
                                  "Accept: text/event-stream\r\n\r\n";

static char *slice(const char *buf, struct lg_slice s)
{
    static char out[512];
    memcpy(out, buf + s.off, s.len);
    out[s.len] = '\0';
    return out;
}

START_TEST(parses_a_whole_request)
{
    struct lg_http_request req;
    const char *problem = NULL;
    lg_http_request_init(&req);
    ck_assert_int_eq(lg_http_request_feed(&req, sse_request, strlen(sse_request), &problem), 1);
    ck_assert_int_eq(req.method, LG_HTTP_GET);
    ck_assert(req.keep_alive);
    ck_assert(!req.upgrade);
    ck_assert_uint_eq(req.head_len, strlen(sse_request));
    ck_assert_str_eq(slice(sse_request, req.path), "/sse");
    ck_assert_str_eq(slice(sse_request, req.query), "topic=a&topic=b%2Fc");
    ck_assert_str_eq(slice(sse_request, req.headers[LG_HDR_LAST_EVENT_ID]), "a@0000000f:3");
    ck_assert_uint_eq(req.headers[LG_HDR_UPGRADE].len, 0);
}
END_TEST

START_TEST(parses_byte_by_byte)
{
    struct lg_http_request req;
    const char *problem = NULL;
    lg_http_request_init(&req);
    size_t len = strlen(sse_request);
    for (size_t i = 1; i < len; i++)
        ck_assert_int_eq(lg_http_request_feed(&req, sse_request, i, &problem), 0);
    ck_assert_int_eq(lg_http_request_feed(&req, sse_request, len, &problem), 1);
    ck_assert_str_eq(slice(sse_request, req.headers[LG_HDR_LAST_EVENT_ID]), "a@0000000f:3");
    ck_assert_str_eq(slice(sse_request, req.target), "/sse?topic=a&topic=b%2Fc");
}
END_TEST

/* Feeding again with no new byte waits for more: it is not the end of the stream (http-parser
 * takes a length of 0 as that, and counted a byte past the buffer). */
START_TEST(feeding_nothing_new_waits)
{
    struct lg_http_request req;
    const char *problem = NULL;
    lg_http_request_init(&req);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(lg_http_request_feed(&req, sse_request, 1, &problem), 0);
    ck_assert_ptr_null(problem);
    ck_assert_int_eq(lg_http_request_feed(&req, sse_request, strlen(sse_request), &problem), 1);
    ck_assert_str_eq(slice(sse_request, req.target), "/sse?topic=a&topic=b%2Fc");
}
END_TEST

START_TEST(recognises_an_upgrade)
{
    const char text[] = "GET /ws?topic=a HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
                        "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                        "Sec-WebSocket-Version: 13\r\n\r\n";
    struct lg_http_request req;
    const char *problem = NULL;
    lg_http_request_init(&req);
    ck_assert_int_eq(lg_http_request_feed(&req, text, strlen(text), &problem), 1);
    ck_assert(req.upgrade);
    ck_assert_str_eq(slice(text, req.headers[LG_HDR_UPGRADE]), "websocket");
}
END_TEST

START_TEST(http10_without_keep_alive_closes)
{
    const char text[] = "GET /poll?topic=a HTTP/1.0\r\n\r\n";
    struct lg_http_request req;
    const char *problem = NULL;
    lg_http_request_init(&req);
    ck_assert_int_eq(lg_http_request_feed(&req, text, strlen(text), &problem), 1);
    ck_assert(!req.keep_alive);
}
END_TEST

START_TEST(rejects_garbage)
{
    const char *bad[] = {"HELLO\r\n\r\n", "GET / HTTP/1.1\r\nBad Header\r\n\r\n",
                         "GET /\x01 HTTP/1.1\r\n\r\n"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct lg_http_request req;
        const char *problem = NULL;
        lg_http_request_init(&req);
        ck_assert_int_eq(lg_http_request_feed(&req, bad[i], strlen(bad[i]), &problem), -1);
        ck_assert_ptr_nonnull(problem);
    }
}
END_TEST

/* feed text whole and then byte by byte: the same verdict, and the same problem. */
static int feed_both_ways(const char *text, const char **problem)
{
    struct lg_http_request req;
    lg_http_request_init(&req);
    int whole = lg_http_request_feed(&req, text, strlen(text), problem);
    lg_http_request_init(&req);
    const char *bytewise_problem = NULL;
    int bytewise = 0;
    for (size_t i = 1; i <= strlen(text) && bytewise == 0; i++)
        bytewise = lg_http_request_feed(&req, text, i, &bytewise_problem);
    ck_assert_int_eq(bytewise, whole);
    if (whole < 0)
        ck_assert_str_eq(bytewise_problem, *problem);
    return whole;
}

START_TEST(refuses_what_rfc_9112_refuses)
{
    static const struct {
        const char *text, *problem;
    } bad[] = {
        {"GET /poll?topic=a HTTP/1.1\r\nHost: x\r\n\rXGET /poll?topic=b HTTP/1.1\r\n\r\n",
         "a bare CR in the request head (a line ends with CRLF)"},
        {"GET / HTTP/1.1\r\nHost: x\rY: z\r\n\r\n",
         "a bare CR in the request head (a line ends with CRLF)"},
        {"GET /\r\n", "a request line without an HTTP version (HTTP/0.9 is not supported)"},
        {"GET /\n", "a request line without an HTTP version (HTTP/0.9 is not supported)"},
        {"GET / HTTP/1.1\r\nHost: a\r\nHOST: a\r\n\r\n", "more than one Host header"},
        {"GET / HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n", "more than one Host header"},
        {"GET / HTTP/1.1\r\nX: y\r\n\r\n", "an HTTP/1.1 request needs a Host header"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *problem = NULL;
        ck_assert_msg(feed_both_ways(bad[i].text, &problem) == -1, "accepted: %s", bad[i].text);
        ck_assert_str_eq(problem, bad[i].problem);
    }
    const char *ok[] = {"GET / HTTP/1.0\r\n\r\n", "GET / HTTP/1.1\nHost: x\n\n",
                        "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\na\rb"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        const char *problem = NULL;
        ck_assert_msg(feed_both_ways(ok[i], &problem) == 1, "refused %s: %s", ok[i], problem);
    }
}
END_TEST

START_TEST(tells_a_websocket_upgrade_from_others)
{
    static const struct {
        const char *text;
        bool websocket;
        enum lg_http_method method;
    } cases[] = {
        {"GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: WebSocket\r\n\r\n",
         true, LG_HTTP_GET},
        {"GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: h2c, websocket\r\n\r\n",
         true, LG_HTTP_GET},
        {"GET /sse HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n", false,
         LG_HTTP_GET},
        {"GET /sse HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n\r\n", false, LG_HTTP_GET},
        {"CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\n\r\n", false, LG_HTTP_CONNECT},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct lg_http_request req;
        const char *problem = NULL;
        lg_http_request_init(&req);
        ck_assert_int_eq(
            lg_http_request_feed(&req, cases[i].text, strlen(cases[i].text), &problem), 1);
        ck_assert_int_eq(req.method, cases[i].method);
        ck_assert_msg(lg_http_request_is_websocket(cases[i].text, &req) == cases[i].websocket,
                      "%s", cases[i].text);
    }
}
END_TEST

START_TEST(decodes_query_pairs)
{
    const char q[] = "topic=a%2Fb&&x=1+2&flag&topic=%41";
    size_t pos = 0;
    char name[32], value[64];
    ck_assert_int_eq(lg_query_next(q, strlen(q), &pos, name, sizeof name, value, sizeof value), 1);
    ck_assert_str_eq(name, "topic");
    ck_assert_str_eq(value, "a/b");
    ck_assert_int_eq(lg_query_next(q, strlen(q), &pos, name, sizeof name, value, sizeof value), 1);
    ck_assert_str_eq(name, "x");
    ck_assert_str_eq(value, "1 2");
    ck_assert_int_eq(lg_query_next(q, strlen(q), &pos, name, sizeof name, value, sizeof value), 1);
    ck_assert_str_eq(name, "flag");
    ck_assert_str_eq(value, "");
    ck_assert_int_eq(lg_query_next(q, strlen(q), &pos, name, sizeof name, value, sizeof value), 1);
    ck_assert_str_eq(value, "A");
    ck_assert_int_eq(lg_query_next(q, strlen(q), &pos, name, sizeof name, value, sizeof value), 0);
}
END_TEST

START_TEST(rejects_bad_escapes)
{
    char out[16];
    size_t bad = 99;
    ck_assert_int_eq(lg_percent_decode("%4", 2, out, sizeof out, false, &bad), -1);
    ck_assert_uint_eq(bad, 0);
    ck_assert_int_eq(lg_percent_decode("ab%zz", 5, out, sizeof out, false, &bad), -1);
    ck_assert_uint_eq(bad, 2);
    ck_assert_int_eq(lg_percent_decode("abc%", 4, out, sizeof out, false, NULL), -1);
    ck_assert_int_eq(lg_percent_decode("0123456789abcdefgh", 18, out, sizeof out, false, NULL), -2);
    ck_assert_int_eq(lg_percent_decode("a+b%20c", 7, out, sizeof out, false, NULL), 5);
    ck_assert_str_eq(out, "a+b c");
}
END_TEST

START_TEST(subscribe_params_collect_topics_cursor_and_timeout)
{
    struct lg_subscribe_params *p = malloc(sizeof *p);
    char problem[256];
    const char q[] = "topic=a&topic=b&topic=a&since=a@0000000f:3&timeout=25&_=123";
    ck_assert_ptr_null(lg_subscribe_params_parse(p, q, strlen(q), "since", NULL, 0, 64, problem,
                                                 sizeof problem));
    ck_assert_uint_eq(p->topic_count, 2);
    ck_assert_str_eq(p->topics[0], "a");
    ck_assert_str_eq(p->topics[1], "b");
    ck_assert(p->has_cursor);
    ck_assert_uint_eq(p->cursor.entries[0].seq, 3);
    ck_assert(p->has_timeout);
    ck_assert_uint_eq(p->timeout_ms, 25000);
    free(p);
}
END_TEST

START_TEST(subscribe_params_header_wins_and_errors_are_named)
{
    struct lg_subscribe_params *p = malloc(sizeof *p);
    char problem[256];
    const char q[] = "topic=a&last_event_id=a@0000000f:3";
    const char hdr[] = "a@0000000f:9";
    ck_assert_ptr_null(lg_subscribe_params_parse(p, q, strlen(q), "last_event_id", hdr,
                                                 strlen(hdr), 64, problem, sizeof problem));
    ck_assert_uint_eq(p->cursor.entries[0].seq, 9);

    const char bad_topic[] = "topic=a%20b";
    ck_assert_str_eq(lg_subscribe_params_parse(p, bad_topic, strlen(bad_topic), "since", NULL, 0,
                                               64, problem, sizeof problem),
                     "invalid_topic");
    const char bad_cursor[] = "topic=a&since=nonsense";
    ck_assert_str_eq(lg_subscribe_params_parse(p, bad_cursor, strlen(bad_cursor), "since", NULL,
                                               0, 64, problem, sizeof problem),
                     "invalid_cursor");
    const char too_many[] = "topic=a&topic=b&topic=c";
    ck_assert_str_eq(lg_subscribe_params_parse(p, too_many, strlen(too_many), "since", NULL, 0, 2,
                                               problem, sizeof problem),
                     "bad_request");
    const char bad_timeout[] = "topic=a&timeout=-1";
    ck_assert_str_eq(lg_subscribe_params_parse(p, bad_timeout, strlen(bad_timeout), "since", NULL,
                                               0, 64, problem, sizeof problem),
                     "bad_request");
    ck_assert_ptr_nonnull(strstr(problem, "timeout"));
    free(p);
}
END_TEST

static Suite *http_request_suite(void)
{
    Suite *s = suite_create("http_request");
    TCase *head = tcase_create("request_head");
    tcase_add_test(head, parses_a_whole_request);
    tcase_add_test(head, parses_byte_by_byte);
    tcase_add_test(head, feeding_nothing_new_waits);
    tcase_add_test(head, recognises_an_upgrade);
    tcase_add_test(head, http10_without_keep_alive_closes);
    tcase_add_test(head, rejects_garbage);
    tcase_add_test(head, refuses_what_rfc_9112_refuses);
    tcase_add_test(head, tells_a_websocket_upgrade_from_others);
    suite_add_tcase(s, head);
    TCase *query = tcase_create("query");
    tcase_add_test(query, decodes_query_pairs);
    tcase_add_test(query, rejects_bad_escapes);
    tcase_add_test(query, subscribe_params_collect_topics_cursor_and_timeout);
    tcase_add_test(query, subscribe_params_header_wins_and_errors_are_named);
    suite_add_tcase(s, query);
    return s;
}

LG_CHECK_MAIN(http_request_suite)
