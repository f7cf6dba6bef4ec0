/*
 * test_sse_refusal.c - the refusals of GET /sse that an EventSource survives (sse_refusal.h):
 * which requests and statuses get the event form, the jittered retry's range and spread, the
 * exact answer, and the CORS lines of an Origin.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "check_main.h"
#include "http_response.h"
#include "sse_refusal.h"

/* Parse a complete request head. */
static void parse(const char *head, struct lg_http_request *req)
{
    const char *problem = NULL;
    lg_http_request_init(req);
    ck_assert_int_eq(lg_http_request_feed(req, head, strlen(head), &problem), 1);
}

START_TEST(only_get_sse_is_an_sse_subscription)
{
    struct lg_http_request req;
    const char *yes[] = {"GET /sse?topic=a HTTP/1.1\r\nHost: x\r\n\r\n",
                         "GET /sse HTTP/1.1\r\nHost: x\r\n\r\n"};
    const char *no[] = {"POST /sse?topic=a HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n",
                        "GET /poll?topic=a HTTP/1.1\r\nHost: x\r\n\r\n",
                        "GET /sse/x HTTP/1.1\r\nHost: x\r\n\r\n",
                        "GET /ssex HTTP/1.1\r\nHost: x\r\n\r\n"};
    for (size_t i = 0; i < sizeof yes / sizeof *yes; i++) {
        parse(yes[i], &req);
        ck_assert_msg(lg_sse_refusal_applies(yes[i], &req), "%s", yes[i]);
        ck_assert(lg_sse_refusal_head_applies(yes[i], strlen(yes[i])));
    }
    for (size_t i = 0; i < sizeof no / sizeof *no; i++) {
        parse(no[i], &req);
        ck_assert_msg(!lg_sse_refusal_applies(no[i], &req), "%s", no[i]);
        ck_assert_msg(!lg_sse_refusal_head_applies(no[i], strlen(no[i])), "%s", no[i]);
    }
    /* an incomplete head: only a request line that says so */
    ck_assert(lg_sse_refusal_head_applies("GET /sse?to", 11));
    ck_assert(!lg_sse_refusal_head_applies("GET /sse", 8)); /* /sse or /ssex: unknown yet */
    ck_assert(!lg_sse_refusal_head_applies("GET /s", 6));
}
END_TEST

START_TEST(only_refusals_a_retry_may_cure_get_the_event_form)
{
    const int retried[] = {429, 500, 502, 503, 504};
    const int kept[] = {400, 401, 403, 404, 405, 408, 409, 414, 426, 431, 501, 505};
    for (size_t i = 0; i < sizeof retried / sizeof *retried; i++)
        ck_assert_msg(lg_sse_refusal_retried(retried[i]), "%d", retried[i]);
    for (size_t i = 0; i < sizeof kept / sizeof *kept; i++)
        ck_assert_msg(!lg_sse_refusal_retried(kept[i]), "%d", kept[i]);
}
END_TEST

START_TEST(the_retry_is_spread_over_a_third_to_five_thirds_of_the_mean)
{
    unsigned low = 5000, high = 0, below_mean = 0;
    for (int i = 0; i < 10000; i++) {
        uint32_t ms = lg_sse_refusal_retry_ms(3000);
        ck_assert_uint_ge(ms, 1000);
        ck_assert_uint_le(ms, 5000);
        low = ms < low ? ms : low;
        high = ms > high ? ms : high;
        below_mean += ms < 3000;
    }
    ck_assert_uint_lt(low, 1100); /* the whole range is used */
    ck_assert_uint_gt(high, 4900);
    ck_assert_uint_gt(below_mean, 4500); /* about half below the mean */
    ck_assert_uint_lt(below_mean, 5500);
    ck_assert_uint_ge(lg_sse_refusal_retry_ms(100), 33); /* the smallest sse.retry_ms */
}
END_TEST

START_TEST(the_answer_is_a_200_stream_of_one_refused_event)
{
    struct lg_buf b;
    lg_buf_init(&b);
    lg_http_sse_refusal_response(&b, 429, "too_many_connections", "bad \xff byte", 1234,
                                 "Access-Control-Allow-Origin: *\r\n");
    static const char body[] =
        "retry: 1234\nevent: refused\ndata: {\"status\":429,\"error\":\"too_many_connections\","
        "\"message\":\"bad \xef\xbf\xbd byte\",\"retry_ms\":1234}\n\n";
    char want[1024];
    snprintf(want, sizeof want,
             "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\n"
             "X-Livegate-Refused: 429 too_many_connections\r\nContent-Length: %zu\r\n"
             "Access-Control-Allow-Origin: *\r\nConnection: close\r\n\r\n%s",
             sizeof body - 1, body);
    ck_assert_uint_eq(b.len, strlen(want));
    ck_assert_mem_eq(b.data, want, b.len);
    lg_buf_release(&b);
}
END_TEST

START_TEST(cors_lines_follow_allowed_origins)
{
    char out[LG_CORS_LINES_MAX];
    char *any_items[] = {"*"}, *listed_items[] = {"https://app.example"};
    struct lg_string_list none = {0}, any = {any_items, 1}, listed = {listed_items, 1};
    ck_assert(lg_cors_lines(&none, "https://a.example", 17, out));
    ck_assert_str_eq(out, "");
    ck_assert(lg_cors_lines(&any, "https://a.example", 17, out));
    ck_assert_str_eq(out, "Access-Control-Allow-Origin: *\r\n");
    ck_assert(lg_cors_lines(&listed, "https://app.example", 19, out));
    ck_assert_str_eq(out, "Access-Control-Allow-Origin: https://app.example\r\n"
                          "Access-Control-Allow-Credentials: true\r\nVary: Origin\r\n");
    ck_assert(!lg_cors_lines(&listed, "https://evil.example", 20, out));
    ck_assert_str_eq(out, "");
    ck_assert(lg_cors_lines(&listed, "", 0, out)); /* no Origin: no CORS, not refused */
    ck_assert_str_eq(out, "");
}
END_TEST

static Suite *sse_refusal_suite(void)
{
    Suite *s = suite_create("sse_refusal");
    LG_TCASE(s, "refusal", NULL, NULL, only_get_sse_is_an_sse_subscription,
             only_refusals_a_retry_may_cure_get_the_event_form,
             the_retry_is_spread_over_a_third_to_five_thirds_of_the_mean,
             the_answer_is_a_200_stream_of_one_refused_event, cors_lines_follow_allowed_origins);
    return s;
}

LG_CHECK_MAIN(sse_refusal_suite)
