/*
 * test_sse_refusals.c - retryable refusals of GET /sse in the form a browser's EventSource
 * survives (docs/protocol.md, "Refusals"): 200 text/event-stream, X-Livegate-Refused, a
 * jittered retry: within [sse.retry_ms / 3, sse.retry_ms * 5 / 3] and one `refused` event,
 * byte for byte, at limits.max_connections, at limits.max_connections_per_address and while
 * draining; /poll and /ws keep their statuses; the refusal counters still rise.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lg_test.h"

#include "check_main.h"

#define WAIT_MS 5000
#define MAX_CONN_MSG "the gateway is at limits.max_connections; retry later"
#define DRAIN_MSG "the gateway is shutting down; retry on another node"
#define PER_ADDRESS_MSG                                                                            \
    "your address holds 1 connections, the limit (limits.max_connections_per_address); close "     \
    "one or retry later"

/* Send req on a new connection and read the whole answer into buf (the server closes). */
static void exchange(uint16_t port, const char *req, char *buf, size_t cap)
{
    int fd = lg_tcp_connect(port);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(lg_send_all(fd, req, strlen(req)), 0);
    size_t len = 0;
    ck_assert_int_ge(lg_recv_until(fd, buf, cap, &len, NULL, WAIT_MS), 0);
    close(fd);
}

/*
 * got must be the event form of a refusal with status, code, message and the extra header
 * lines extra, exactly; its retry within [lo, hi]. Return value: the retry.
 */
static unsigned expect_event_refusal(const char *got, int status, const char *code,
                                     const char *message, const char *extra, unsigned lo,
                                     unsigned hi)
{
    const char *retry = strstr(got, "\r\n\r\nretry: ");
    ck_assert_msg(retry, "no retry: in %s", got);
    unsigned ms = (unsigned)strtoul(retry + 11, NULL, 10);
    ck_assert_msg(ms >= lo && ms <= hi, "retry %u outside [%u, %u]", ms, lo, hi);
    char body[512], want[1024];
    snprintf(body, sizeof body,
             "retry: %u\nevent: refused\ndata: {\"status\":%d,\"error\":\"%s\",\"message\":\"%s\","
             "\"retry_ms\":%u}\n\n",
             ms, status, code, message, ms);
    snprintf(want, sizeof want,
             "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\n"
             "X-Livegate-Refused: %d %s\r\nContent-Length: %zu\r\n%sConnection: close\r\n\r\n%s",
             status, code, strlen(body), extra, body);
    ck_assert_str_eq(got, want);
    return ms;
}

static void expect_json_refusal(const char *got, int status, const char *reason, const char *code,
                                const char *message)
{
    char body[512], want[1024];
    snprintf(body, sizeof body, "{\"error\":\"%s\",\"message\":\"%s\"}\n", code, message);
    snprintf(want, sizeof want,
             "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nCache-Control: no-store\r\n"
             "Content-Length: %zu\r\nRetry-After: 1\r\nConnection: close\r\n\r\n%s",
             status, reason, strlen(body), body);
    ck_assert_str_eq(got, want);
}

START_TEST(at_max_connections_sse_gets_a_refused_event_and_poll_503)
{
    struct lg_server s;
    lg_server_must_start(&s, "{\"limits\":{\"max_connections\":1}}");
    struct lg_sse_client held;
    lg_sse_must_open(&held, s.public_port, "/sse?topic=a", NULL);
    long long rejected0 = lg_server_stat(&s, "requests_rejected");
    char buf[4096];
    unsigned first = 0;
    bool varied = false;
    for (int i = 0; i < 8; i++) {
        exchange(s.public_port, "GET /sse?topic=a HTTP/1.1\r\nHost: x\r\n\r\n", buf, sizeof buf);
        unsigned ms = expect_event_refusal(buf, 503, "unavailable", MAX_CONN_MSG, "", 1000, 5000);
        varied |= i > 0 && ms != first;
        if (i == 0)
            first = ms;
    }
    ck_assert_msg(varied, "8 refusals, one retry: %u", first);
    exchange(s.public_port, "GET /poll?topic=a&timeout=0 HTTP/1.1\r\nHost: x\r\n\r\n", buf,
             sizeof buf);
    expect_json_refusal(buf, 503, "Service Unavailable", "unavailable", MAX_CONN_MSG);
    struct lg_ws_client ws;
    ck_assert_int_eq(lg_ws_open(&ws, s.public_port, "/ws?topic=a", "livegate.v1"), -1);
    ck_assert_int_eq(ws.status, 503);
    /* one that sends no head is not held longer than a refusal lingers (2 s) */
    int silent = lg_tcp_connect(s.public_port);
    ck_assert_int_ge(silent, 0);
    int64_t t0 = lg_now_ms();
    size_t len = 0;
    ck_assert_int_ge(lg_recv_until(silent, buf, sizeof buf, &len, NULL, WAIT_MS), 0);
    int64_t waited = lg_now_ms() - t0;
    ck_assert_msg(waited >= 1500 && waited < 3500, "answered after %lld ms", (long long)waited);
    expect_json_refusal(buf, 503, "Service Unavailable", "unavailable", MAX_CONN_MSG);
    close(silent);
    ck_assert_int_eq(lg_server_stat(&s, "connections_refused"), 11);
    ck_assert_int_eq(lg_server_stat(&s, "requests_rejected") - rejected0, 11);
    /* room again: the same request subscribes */
    lg_sse_close(&held);
    ck_assert(lg_wait_stat(s.control_port, "connections_open", 0, WAIT_MS));
    lg_sse_must_open(&held, s.public_port, "/sse?topic=a", NULL);
    lg_sse_close(&held);
    lg_server_must_stop(&s);
}
END_TEST

START_TEST(at_the_per_address_limit_sse_gets_a_refused_event_with_cors_and_poll_429)
{
    struct lg_server s;
    lg_server_must_start(&s, "{\"trusted_proxies\":\"127.0.0.1\",\"allowed_origins\":[\"*\"],"
                             "\"limits\":{\"max_connections_per_address\":1}}");
    struct lg_sse_client held;
    lg_sse_must_open(&held, s.public_port, "/sse?topic=a", "X-Forwarded-For: 203.0.113.7\r\n");
    char buf[4096];
    exchange(s.public_port,
             "GET /sse?topic=a HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 203.0.113.7\r\n"
             "Origin: https://app.example\r\n\r\n",
             buf, sizeof buf);
    expect_event_refusal(buf, 429, "too_many_connections", PER_ADDRESS_MSG,
                         "Access-Control-Allow-Origin: *\r\n", 1000, 5000);
    exchange(s.public_port,
             "GET /poll?topic=a&timeout=0 HTTP/1.1\r\nHost: x\r\n"
             "X-Forwarded-For: 203.0.113.7\r\n\r\n",
             buf, sizeof buf);
    expect_json_refusal(buf, 429, "Too Many Requests", "too_many_connections", PER_ADDRESS_MSG);
    ck_assert_int_eq(lg_server_stat(&s, "connections_refused_address"), 2);
    /* refusals a retry cannot cure keep their status on /sse */
    exchange(s.public_port, "GET /sse HTTP/1.1\r\nHost: x\r\n\r\n", buf, sizeof buf);
    ck_assert_msg(strncmp(buf, "HTTP/1.1 400 Bad Request\r\n", 26) == 0, "%s", buf);
    lg_sse_close(&held);
    lg_server_must_stop(&s);
}
END_TEST

/* Sockets whose head is still coming when the drain begins are refused by it. */
START_TEST(while_draining_sse_gets_a_refused_event_and_poll_503)
{
    struct lg_server s;
    lg_server_must_start(&s, NULL);
    int sse = lg_tcp_connect(s.public_port), poll_fd = lg_tcp_connect(s.public_port);
    ck_assert_int_ge(sse, 0);
    ck_assert_int_ge(poll_fd, 0);
    static const char sse_line[] = "GET /sse?topic=a HTTP/1.1\r\n";
    static const char poll_line[] = "GET /poll?topic=a HTTP/1.1\r\n";
    ck_assert_int_eq(lg_send_all(sse, sse_line, sizeof sse_line - 1), 0);
    ck_assert_int_eq(lg_send_all(poll_fd, poll_line, sizeof poll_line - 1), 0);
    ck_assert(lg_wait_stat(s.control_port, "connections_open", 2, WAIT_MS));
    ck_assert_int_eq(kill(s.pid, SIGTERM), 0);
    char buf[4096];
    size_t len = 0;
    ck_assert_int_ge(lg_recv_until(sse, buf, sizeof buf, &len, NULL, WAIT_MS), 0);
    expect_event_refusal(buf, 503, "unavailable", DRAIN_MSG, "", 1000, 5000);
    len = 0;
    ck_assert_int_ge(lg_recv_until(poll_fd, buf, sizeof buf, &len, NULL, WAIT_MS), 0);
    expect_json_refusal(buf, 503, "Service Unavailable", "unavailable", DRAIN_MSG);
    close(sse);
    close(poll_fd);
    lg_server_must_stop(&s);
}
END_TEST

LG_CHECK_MAIN_TCASE("sse_refusals", "refusals", 60,
                    at_max_connections_sse_gets_a_refused_event_and_poll_503,
                    at_the_per_address_limit_sse_gets_a_refused_event_with_cors_and_poll_429,
                    while_draining_sse_gets_a_refused_event_and_poll_503)
