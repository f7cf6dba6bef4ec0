/*
 * test_sys_stats.c - the live stats topic `$sys/stats`: one event a second to subscribers on
 * SSE, WebSocket and long-poll, with the documented members; the figures match the counters
 * (the clients by transport, the events published over the ticks add up to what was
 * published); publishing to it from outside is refused with 422.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "lg_test.h"

#include "check_main.h"

#define WAIT_MS 5000

static struct lg_server srv;

static void server_setup(void) { lg_server_must_start(&srv, NULL); }
static void server_teardown(void) { lg_server_must_stop(&srv); }

/* The next $sys/stats event of c, parsed (caller decrefs). */
static json_t *next_stats(struct lg_sse_client *c)
{
    struct lg_sse_event ev;
    ck_assert_msg(lg_sse_next(c, &ev, 3000) == 1, "no $sys/stats event within 3 s");
    ck_assert_str_eq(ev.event, "message");
    ck_assert_msg(strncmp(ev.id, "$sys/stats@", 11) == 0, "id %s", ev.id);
    json_t *o = json_loads(ev.data, 0, NULL);
    ck_assert_msg(json_is_object(o), "data is not a JSON object: %s", ev.data);
    lg_sse_event_free(&ev);
    return o;
}

static long long member(json_t *o, const char *path)
{
    json_t *v = o;
    char buf[128];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *save = NULL, *part = strtok_r(buf, ".", &save); part;
         part = strtok_r(NULL, ".", &save))
        v = json_object_get(v, part);
    ck_assert_msg(json_is_number(v), "member %s missing or not a number", path);
    return (long long)json_number_value(v);
}

START_TEST(test_sys_stats_every_second_on_every_transport)
{
    struct lg_sse_client sse;
    lg_sse_must_open(&sse, srv.public_port, "/sse?topic=$sys/stats", NULL);
    struct lg_ws_client ws;
    lg_ws_must_subscribe(&ws, srv.public_port, "/ws?topic=$sys/stats", NULL, NULL, 0);

    json_t *first = next_stats(&sse);
    json_t *second = next_stats(&sse);
    long long interval = member(second, "interval_ms");
    ck_assert_msg(interval >= 800 && interval <= 1300, "interval_ms %lld", interval);
    long long dt = member(second, "time_ms") - member(first, "time_ms");
    ck_assert_msg(dt >= 800 && dt <= 1300, "ticks %lld ms apart", dt);
    ck_assert_int_eq(member(second, "clients.sse"), 1);
    ck_assert_int_eq(member(second, "clients.websocket"), 1);
    ck_assert_int_eq(member(second, "clients.poll"), 0);
    ck_assert_int_eq(member(second, "dropped"), 0);
    ck_assert_int_eq(member(second, "refused"), 0);
    ck_assert_int_eq(member(second, "backlog"), 0);
    const char *keys[] = {"events_in_per_s", "events_out_per_s", NULL};
    for (int i = 0; keys[i]; i++)
        ck_assert(json_is_number(json_object_get(second, keys[i])));
    json_decref(first);
    json_decref(second);

    /* The same figures as GET /metrics shows (nothing changes between the tick and now). */
    struct lg_http_response mr;
    ck_assert_int_eq(lg_http_request(srv.control_port, "GET", "/metrics", NULL, NULL, 0, &mr,
                                     WAIT_MS), 0);
    ck_assert_msg(strstr(mr.body, "\nlivegate_clients{transport=\"sse\"} 1\n") &&
                      strstr(mr.body, "\nlivegate_clients{transport=\"websocket\"} 1\n") &&
                      strstr(mr.body, "\nlivegate_clients{transport=\"poll\"} 0\n") &&
                      strstr(mr.body, "\nlivegate_backlog_events 0\n") &&
                      strstr(mr.body, "\nlivegate_events_dropped_total{reason=\"overflow\"} 0\n"),
                  "/metrics disagrees with $sys/stats:\n%s", mr.body);
    lg_http_response_free(&mr);
    /* Two ticks were delivered: both were counted (the main thread counts a tick once its
     * publish returned, which may be after a subscriber already got it). */
    ck_assert_int_ge(lg_stat_wait(srv.control_port, "sys_stats_published", 1, 2, 2000), 2);

    /* The WebSocket subscriber gets the same events. */
    char *m = NULL;
    ck_assert_int_eq(lg_ws_next(&ws, &m, 3000), 1);
    ck_assert_msg(strstr(m, "\"topic\":\"$sys/stats\"") && strstr(m, "\"interval_ms\":"), "%s", m);
    free(m);

    /* A long-poll waits for the next tick. */
    struct lg_http_response r;
    ck_assert_int_eq(lg_http_request(srv.public_port, "GET", "/poll?topic=$sys/stats&timeout=3",
                                     NULL, NULL, 0, &r, WAIT_MS), 0);
    ck_assert_int_eq(r.status, 200);
    ck_assert_msg(strstr(r.body, "\"clients\":{\"sse\":1,\"websocket\":1,\"poll\":1}"), "%s",
                  r.body);
    lg_http_response_free(&r);
    lg_ws_close(&ws);
    lg_sse_close(&sse);
}
END_TEST

/* What the ticks report adds up to what happened: 7 publishes, 3 refused publishes. */
START_TEST(test_sys_stats_sums_match_counters)
{
    struct lg_sse_client sse;
    lg_sse_must_open(&sse, srv.public_port, "/sse?topic=$sys/stats", NULL);
    json_decref(next_stats(&sse)); /* a tick boundary: what follows is in the next ones */
    for (int i = 0; i < 7; i++)
        ck_assert_int_eq(lg_publish(srv.control_port, "quiet", "x", NULL, 0), 201);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(lg_publish(srv.control_port, "$sys/stats", "x", NULL, 0), 422);
    double in = 0;
    for (int tick = 0; tick < 3; tick++) {
        json_t *o = next_stats(&sse);
        in += json_number_value(json_object_get(o, "events_in_per_s")) *
              (double)member(o, "interval_ms") / 1000.0;
        ck_assert_int_eq(member(o, "refused"), 0); /* 422 is a bad request, not a refusal */
        json_decref(o);
    }
    ck_assert_msg(in > 6.99 && in < 7.01, "the ticks add up to %.3f published events", in);
    ck_assert_int_eq(lg_server_stat(&srv, "events_published"), 7);
    ck_assert_int_ge(lg_stat_wait(srv.control_port, "sys_stats_published", 1, 4, 2000), 4);
    lg_sse_close(&sse);
}
END_TEST

/* Nobody subscribed: no $sys/stats topic is created. */
START_TEST(test_sys_stats_not_created_unasked)
{
    ck_assert(lg_stat_wait(srv.control_port, "topics", 0, 0, 100) == 0);
    struct lg_http_response r;
    ck_assert_int_eq(lg_http_request(srv.public_port, "GET", "/poll?topic=none&timeout=2", NULL,
                                     NULL, 0, &r, WAIT_MS), 0);
    lg_http_response_free(&r);
    ck_assert_int_eq(lg_server_stat(&srv, "sys_stats_published"), 0);
}
END_TEST

static Suite *sys_stats_suite(void)
{
    Suite *s = suite_create("sys_stats");
    TCase *tc = LG_TCASE(s, "sys_stats", server_setup, server_teardown,
                         test_sys_stats_every_second_on_every_transport,
                         test_sys_stats_sums_match_counters, test_sys_stats_not_created_unasked);
    tcase_set_timeout(tc, 60);
    return s;
}

LG_CHECK_MAIN(sys_stats_suite)
