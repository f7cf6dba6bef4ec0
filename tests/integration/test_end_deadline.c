/*
 * test_end_deadline.c - a kicked (DELETE /v1/clients/{id}) or slow-disconnected (on_slow
 * "disconnect") client that does not read is closed within a bound (LG_END_NOTICE_MS, 1 s)
 * although its notice cannot go out: it leaves the client list, the transport gauge and
 * connections_open, and gives back its per-address slot. Over real sockets, with clients that
 * never read (a small SO_RCVBUF, the server's socket full of events). (lws 4.1.6 ends the
 * WebSocket cases by itself here, the deadline is their backstop; the SSE cases stayed open.)
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "lg_test.h"

#include "check_main.h"

#define WAIT_MS 5000
#define RCVBUF 4096
#define EVENT_BYTES 8192
#define END_BOUND_MS 3000 /* LG_END_NOTICE_MS plus the timer's and the poll's grain */
#define XFF "X-Forwarded-For: 198.51.100.7\r\n"

/* Small buffers so a client that does not read fills its socket at once; one connection per
 * address (127.0.0.1, the clients here, is a trusted proxy: they count against XFF). */
#define CONFIG(on_slow)                                                                            \
    "{\"workers\":2,\"socket_send_buffer_bytes\":4096,\"write_batch_bytes\":4096,"                \
    "\"limits\":{\"max_connections_per_address\":1},"                                              \
    "\"client_queue\":{\"max_events\":64,\"max_bytes\":4194304,\"on_slow\":\"" on_slow "\"}}"

static json_t *clients(uint16_t cport)
{
    struct lg_http_response r;
    ck_assert_int_eq(lg_http_request(cport, "GET", "/v1/clients", NULL, NULL, 0, &r, WAIT_MS), 0);
    ck_assert_msg(r.status == 200, "GET /v1/clients: %d %s", r.status, r.body);
    json_t *o = json_loads(r.body, 0, NULL);
    ck_assert_msg(o, "not JSON: %s", r.body);
    lg_http_response_free(&r);
    json_t *list = json_incref(json_object_get(o, "clients"));
    json_decref(o);
    ck_assert_msg(json_is_array(list), "no clients array");
    return list;
}

/* Wait until the only client has queued events its socket did not take: its id. */
static long long wait_backlogged(uint16_t cport, int64_t deadline)
{
    for (;;) {
        json_t *list = clients(cport);
        json_t *c = json_array_get(list, 0);
        long long id = json_integer_value(json_object_get(c, "id"));
        long long queued = json_integer_value(json_object_get(c, "queue_depth"));
        json_decref(list);
        if (id > 0 && queued > 0)
            return id;
        ck_assert_msg(lg_now_ms() < deadline, "the client's socket never filled");
        usleep(10 * 1000);
    }
}

/* Publish EVENT_BYTES events to topic t until the client holds a backlog (or n events). */
static void publish_big(uint16_t cport, int n)
{
    static char data[EVENT_BYTES];
    memset(data, 'x', sizeof data - 1);
    for (int i = 0; i < n; i++)
        ck_assert_int_eq(lg_publish(cport, "t", data, NULL, 0), 201);
}

/* A poll from the address the stalled client counts against: 200 when its slot is free,
 * 429 while the stalled client holds it. */
static int poll_from_same_address(uint16_t port)
{
    struct lg_http_response r;
    ck_assert_int_eq(lg_http_request(port, "GET", "/poll?topic=other&timeout=0", XFF, NULL, 0, &r,
                                     WAIT_MS),
                     0);
    int status = r.status;
    lg_http_response_free(&r);
    return status;
}

/* The client is gone from every count within END_BOUND_MS. */
static void expect_gone_within_bound(struct lg_server *s, const char *gauge, int64_t from)
{
    for (;;) {
        json_t *list = clients(s->control_port);
        size_t n = json_array_size(list);
        json_decref(list);
        if (n == 0 && lg_stat(s->control_port, gauge) == 0 &&
            lg_stat(s->control_port, "connections_open") == 0)
            break;
        ck_assert_msg(lg_now_ms() - from < END_BOUND_MS,
                      "still listed (%zu) / counted (%s %lld, connections_open %lld) after %d ms",
                      n, gauge, lg_stat(s->control_port, gauge),
                      lg_stat(s->control_port, "connections_open"), END_BOUND_MS);
        usleep(10 * 1000);
    }
    ck_assert_int_eq(poll_from_same_address(s->public_port), 200); /* its slot is free */
}

static void kick(uint16_t cport, long long id)
{
    char path[96];
    snprintf(path, sizeof path, "/v1/clients/%lld?reason=bye", id);
    struct lg_http_response r;
    ck_assert_int_eq(lg_http_request(cport, "DELETE", path, NULL, NULL, 0, &r, WAIT_MS), 0);
    ck_assert_msg(r.status == 200 && strstr(r.body, "\"kicked\":true"), "%d %s", r.status, r.body);
    lg_http_response_free(&r);
}

START_TEST(a_kicked_sse_client_that_does_not_read_is_closed_within_the_bound)
{
    struct lg_server s;
    lg_server_must_start(&s, CONFIG("drop-oldest"));
    int fd = lg_stall_sse_open(s.public_port, "/sse?topic=t", XFF, RCVBUF);
    ck_assert_int_ge(fd, 0);
    ck_assert(lg_stat_wait(s.control_port, "clients_sse", 0, 1, WAIT_MS) == 1);
    ck_assert_int_eq(poll_from_same_address(s.public_port), 429); /* it holds the slot */
    publish_big(s.control_port, 32);
    long long id = wait_backlogged(s.control_port, lg_now_ms() + WAIT_MS);
    int64_t kicked_at = lg_now_ms();
    kick(s.control_port, id);
    expect_gone_within_bound(&s, "clients_sse", kicked_at);
    ck_assert(lg_server_wait_log(&s, "closing a kicked SSE client that did not take its notice "
                                     "within 1000 ms", WAIT_MS));
    ck_assert(lg_metric(s.control_port, "livegate_clients_closed_unread_total") == 1);
    ck_assert_int_eq(lg_stat(s.control_port, "clients_closed_unread"), 1);
    close(fd);
    lg_server_must_stop(&s);
}
END_TEST

START_TEST(a_kicked_websocket_client_that_does_not_read_is_closed_within_the_bound)
{
    struct lg_server s;
    lg_server_must_start(&s, CONFIG("drop-oldest"));
    struct lg_stall_ws ws;
    ck_assert_int_eq(lg_stall_ws_open(&ws, s.public_port, "/ws?topic=t", RCVBUF), 0);
    ck_assert(lg_stat_wait(s.control_port, "clients_ws", 0, 1, WAIT_MS) == 1);
    publish_big(s.control_port, 32);
    long long id = wait_backlogged(s.control_port, lg_now_ms() + WAIT_MS);
    int64_t kicked_at = lg_now_ms();
    kick(s.control_port, id);
    expect_gone_within_bound(&s, "clients_ws", kicked_at);
    lg_stall_ws_close(&ws);
    lg_server_must_stop(&s);
}
END_TEST

START_TEST(a_slow_disconnected_sse_client_that_does_not_read_is_closed_within_the_bound)
{
    struct lg_server s;
    lg_server_must_start(&s, CONFIG("disconnect"));
    int fd = lg_stall_sse_open(s.public_port, "/sse?topic=t", XFF, RCVBUF);
    ck_assert_int_ge(fd, 0);
    ck_assert(lg_stat_wait(s.control_port, "clients_sse", 0, 1, WAIT_MS) == 1);
    publish_big(s.control_port, 16);
    wait_backlogged(s.control_port, lg_now_ms() + WAIT_MS);
    /* past client_queue.max_events: the policy fires with the socket full */
    int64_t start = lg_now_ms();
    publish_big(s.control_port, 80);
    ck_assert(lg_stat_wait(s.control_port, "clients_disconnected_slow", 0, 1, WAIT_MS) == 1);
    expect_gone_within_bound(&s, "clients_sse", start);
    ck_assert(lg_server_wait_log(&s, "closing a slow SSE client that did not take its notice "
                                     "within 1000 ms", WAIT_MS));
    ck_assert(lg_metric(s.control_port, "livegate_clients_closed_unread_total") == 1);
    ck_assert_int_eq(lg_stat(s.control_port, "clients_closed_unread"), 1);
    close(fd);
    lg_server_must_stop(&s);
}
END_TEST

START_TEST(a_slow_disconnected_websocket_client_that_does_not_read_is_closed_within_the_bound)
{
    struct lg_server s;
    lg_server_must_start(&s, CONFIG("disconnect"));
    struct lg_stall_ws ws;
    ck_assert_int_eq(lg_stall_ws_open(&ws, s.public_port, "/ws?topic=t", RCVBUF), 0);
    ck_assert(lg_stat_wait(s.control_port, "clients_ws", 0, 1, WAIT_MS) == 1);
    publish_big(s.control_port, 16);
    wait_backlogged(s.control_port, lg_now_ms() + WAIT_MS);
    int64_t start = lg_now_ms();
    publish_big(s.control_port, 80);
    ck_assert(lg_stat_wait(s.control_port, "clients_disconnected_slow", 0, 1, WAIT_MS) == 1);
    expect_gone_within_bound(&s, "clients_ws", start);
    lg_stall_ws_close(&ws);
    lg_server_must_stop(&s);
}
END_TEST

static Suite *end_deadline_suite(void)
{
    Suite *s = suite_create("end_deadline");
    TCase *tc = tcase_create("not_reading");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, a_kicked_sse_client_that_does_not_read_is_closed_within_the_bound);
    tcase_add_test(tc, a_kicked_websocket_client_that_does_not_read_is_closed_within_the_bound);
    tcase_add_test(tc, a_slow_disconnected_sse_client_that_does_not_read_is_closed_within_the_bound);
    tcase_add_test(tc,
                   a_slow_disconnected_websocket_client_that_does_not_read_is_closed_within_the_bound);
    suite_add_tcase(s, tc);
    return s;
}

LG_CHECK_MAIN(end_deadline_suite)
