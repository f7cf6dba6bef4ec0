/*
 * test_smoke.c - the shortest end-to-end path through the real binary: health check on the
 * control port, one SSE subscriber, one publish, exact bytes on the stream, clean shutdown.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "lg_test.h"

#include "check_main.h"

#define RETRY_PREFIX "retry: 3000\n\n"

/* Wait (bounded) until the stream has sent at least n body bytes; no event is expected. */
static void wait_raw_bytes(struct lg_sse_client *c, size_t n, int timeout_ms)
{
    for (int waited = 0; c->raw_len < n && waited < timeout_ms; waited += 100) {
        struct lg_sse_event ev;
        int rc = lg_sse_next(c, &ev, 100);
        ck_assert_msg(rc == 0, "unexpected %s before the first publish",
                      rc > 0 ? "event" : "end of stream");
    }
}

START_TEST(test_smoke_publish_reaches_sse)
{
    struct lg_server s;
    ck_assert_int_eq(lg_server_start(&s, NULL, NULL), 0);

    struct lg_http_response r;
    ck_assert_int_eq(lg_http_request(s.control_port, "GET", "/healthz", NULL, NULL, 0, &r, 5000),
                     0);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(r.body, "{\"status\":\"ok\"}");
    lg_http_response_free(&r);

    struct lg_sse_client c;
    ck_assert_int_eq(lg_sse_open(&c, s.public_port, "/sse?topic=demo", NULL), 0);
    ck_assert_int_eq(c.status, 200);
    /* the stream's first bytes come after the subscription exists */
    wait_raw_bytes(&c, strlen(RETRY_PREFIX), 5000);

    char id[256];
    ck_assert_int_eq(lg_publish(s.control_port, "demo", "hello", id, sizeof id), 201);
    ck_assert_str_ne(id, "");

    struct lg_sse_event ev;
    ck_assert_int_eq(lg_sse_next(&c, &ev, 5000), 1);
    ck_assert_str_eq(ev.id, id);
    ck_assert_str_eq(ev.event, "message");
    ck_assert_str_eq(ev.data, "hello");
    ck_assert_uint_ge(c.raw_len, strlen(RETRY_PREFIX));
    ck_assert_mem_eq(c.raw, RETRY_PREFIX, strlen(RETRY_PREFIX));
    ck_assert_int_eq(c.retry_ms, 3000);
    lg_sse_event_free(&ev);
    lg_sse_close(&c);

    ck_assert_int_eq(lg_server_stop(&s, 10000), 0);
}
END_TEST

LG_CHECK_MAIN_TCASE("smoke", "publish_reaches_sse", 60, test_smoke_publish_reaches_sse)
