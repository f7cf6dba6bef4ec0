/*
 * test_request_head.c - request heads on the public port that RFC 9112 says to refuse, or that
 * RFC 9110 says to serve, over raw sockets: the exact status and body of each answer, that the
 * connection ends after a refusal, and that no second answer follows (a request hidden behind a
 * bare CR must not be served). docs/protocol.md, "Errors on the public port".
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "lg_test.h"

#include "check_main.h"

#define WAIT_MS 5000
#define POLL_A "GET /poll?topic=a&timeout=0 HTTP/1.1\r\n"
#define SMUGGLED "GET /poll?topic=smuggled&timeout=0 HTTP/1.1\r\nHost: x\r\n\r\n"

/* Everything the server sends on a fresh connection after `raw`, until it closes (bounded). */
static char *exchange_to_eof(uint16_t port, const char *raw, size_t *len)
{
    int fd = lg_tcp_connect(port);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(lg_send_all(fd, raw, strlen(raw)), 0);
    size_t cap = 65536;
    char *buf = malloc(cap);
    ck_assert_ptr_nonnull(buf);
    *len = 0;
    ck_assert_msg(lg_recv_until(fd, buf, cap, len, "\r\n\r\n", WAIT_MS) >= 0,
                  "no answer to %s", raw);
    int64_t deadline = lg_now_ms() + WAIT_MS;
    for (;;) {
        struct timeval tv = {.tv_usec = 100 * 1000};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        ssize_t n = recv(fd, buf + *len, cap - 1 - *len, 0);
        if (n == 0)
            break;
        if (n > 0)
            *len += (size_t)n;
        ck_assert_msg(lg_now_ms() < deadline, "the connection stayed open after:\n%.*s",
                      (int)*len, buf);
    }
    buf[*len] = '\0';
    close(fd);
    return buf;
}

/* Status lines: "HTTP/1.x NNN " (a body may say "HTTP/1.1" too, but not with a status). */
static int count_answers(const char *got)
{
    int n = 0;
    for (const char *at = got; (at = strstr(at, "HTTP/1.")); at++)
        n += at[7] && at[8] == ' ' && at[9] >= '1' && at[9] <= '5' && at[10] && at[11] &&
             at[12] == ' ';
    return n;
}

static int count_of(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *at = hay; (at = strstr(at, needle)); at += strlen(needle))
        n++;
    return n;
}

/* raw gets exactly one answer, `status_line`, with body `body`, and the connection ends. */
static void expect_only_answer(uint16_t port, const char *what, const char *raw,
                               const char *status_line, const char *body, const char *header)
{
    size_t len;
    char *got = exchange_to_eof(port, raw, &len);
    ck_assert_msg(strncmp(got, status_line, strlen(status_line)) == 0, "%s: got\n%s\nwant %s",
                  what, got, status_line);
    ck_assert_msg(count_answers(got) == 1, "%s: more than one answer:\n%s", what, got);
    const char *at = strstr(got, "\r\n\r\n");
    ck_assert_msg(at && strcmp(at + 4, body) == 0, "%s: body\n%s\nwant\n%s", what,
                  at ? at + 4 : got, body);
    ck_assert_msg(!header || strstr(got, header), "%s: no %s in\n%s", what, header, got);
    free(got);
}

#define BAD(msg) "{\"error\":\"bad_request\",\"message\":\"malformed HTTP request: " msg "\"}\n"
#define BARE_CR BAD("a bare CR in the request head (a line ends with CRLF)")

START_TEST(a_bare_cr_ending_a_head_is_refused_and_hides_no_second_request)
{
    struct lg_server s;
    lg_server_must_start(&s, NULL);
    expect_only_answer(s.public_port, "bare CR after the last header",
                       POLL_A "Host: x\r\n\rX" SMUGGLED, "HTTP/1.1 400 Bad Request\r\n", BARE_CR,
                       NULL);
    expect_only_answer(s.public_port, "bare CR ending a header line",
                       POLL_A "Host: x\rX-A: b\r\n\r\n", "HTTP/1.1 400 Bad Request\r\n", BARE_CR,
                       NULL);
    /* The second request of a keep-alive connection: the first is answered, then 400. */
    size_t len;
    char *got = exchange_to_eof(s.public_port,
                                POLL_A "Host: x\r\n\r\n" POLL_A "Host: x\r\n\rX" SMUGGLED, &len);
    ck_assert_msg(strncmp(got, "HTTP/1.1 200 OK\r\n", 17) == 0, "%s", got);
    ck_assert_msg(count_of(got, "HTTP/1.1 200 OK\r\n") == 1, "%s", got);
    ck_assert_msg(count_of(got, "HTTP/1.1 400 Bad Request\r\n") == 1, "%s", got);
    ck_assert_msg(count_answers(got) == 2, "%s", got);
    ck_assert_msg(strstr(got, BARE_CR) != NULL, "%s", got);
    free(got);
    ck_assert_int_eq(lg_stat(s.control_port, "clients_poll"), 0);
    lg_server_must_stop(&s);
}
END_TEST

START_TEST(host_is_required_once_in_http_1_1)
{
    struct lg_server s;
    lg_server_must_start(&s, NULL);
    expect_only_answer(s.public_port, "no Host", POLL_A "\r\n", "HTTP/1.1 400 Bad Request\r\n",
                       BAD("an HTTP/1.1 request needs a Host header"), NULL);
    expect_only_answer(s.public_port, "two Host headers", POLL_A "Host: a\r\nHost: b\r\n\r\n",
                       "HTTP/1.1 400 Bad Request\r\n", BAD("more than one Host header"), NULL);
    expect_only_answer(s.public_port, "Host twice, HTTP/1.0",
                       "GET /poll?topic=a&timeout=0 HTTP/1.0\r\nHost: a\r\nhost: a\r\n\r\n",
                       "HTTP/1.1 400 Bad Request\r\n", BAD("more than one Host header"), NULL);
    /* The second request of a keep-alive connection is held to the same rule. */
    size_t len;
    char *got = exchange_to_eof(s.public_port, POLL_A "Host: x\r\n\r\n" POLL_A "\r\n", &len);
    ck_assert_msg(count_of(got, "HTTP/1.1 200 OK\r\n") == 1 &&
                      count_of(got, "HTTP/1.1 400 Bad Request\r\n") == 1 &&
                      strstr(got, BAD("an HTTP/1.1 request needs a Host header")),
                  "%s", got);
    free(got);
    /* HTTP/1.0 has no Host requirement. */
    got = exchange_to_eof(s.public_port, "GET /poll?topic=a&timeout=0 HTTP/1.0\r\n\r\n", &len);
    ck_assert_msg(strncmp(got, "HTTP/1.1 200 OK\r\n", 17) == 0, "%s", got);
    free(got);
    lg_server_must_stop(&s);
}
END_TEST

START_TEST(an_http_0_9_request_line_is_refused_at_once)
{
    struct lg_server s;
    /* A request timeout far above the test's wait: the answer must not be the 408. */
    lg_server_must_start(&s, "{\"limits\":{\"request_timeout_ms\":60000}}");
    int64_t start = lg_now_ms();
    expect_only_answer(s.public_port, "HTTP/0.9", "GET /\r\n", "HTTP/1.1 400 Bad Request\r\n",
                       BAD("a request line without an HTTP version (HTTP/0.9 is not supported)"),
                       NULL);
    ck_assert_int_lt(lg_now_ms() - start, WAIT_MS);
    lg_server_must_stop(&s);
}
END_TEST

START_TEST(connect_is_not_allowed)
{
    struct lg_server s;
    lg_server_must_start(&s, NULL);
    const char *body = "{\"error\":\"method_not_allowed\",\"message\":\"CONNECT is not supported: "
                       "this server is not a proxy\"}\n";
    expect_only_answer(s.public_port, "CONNECT",
                       "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n",
                       "HTTP/1.1 405 Method Not Allowed\r\n", body,
                       "Allow: GET, HEAD, OPTIONS\r\n");
    size_t len;
    char *got = exchange_to_eof(s.public_port,
                                POLL_A "Host: x\r\n\r\n"
                                       "CONNECT example.com:443 HTTP/1.1\r\nHost: x\r\n\r\n",
                                &len);
    ck_assert_msg(count_of(got, "HTTP/1.1 200 OK\r\n") == 1 &&
                      count_of(got, "HTTP/1.1 405 Method Not Allowed\r\n") == 1 &&
                      strstr(got, body),
                  "%s", got);
    free(got);
    lg_server_must_stop(&s);
}
END_TEST

#define H2C "Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n"

START_TEST(an_upgrade_to_h2c_is_ignored)
{
    struct lg_server s;
    lg_server_must_start(&s, NULL);
    char id[256];
    ck_assert_int_eq(lg_publish(s.control_port, "a", "hello", id, sizeof id), 201);
    /* long-poll: the answer an HTTP/1.1 poll gets */
    size_t len;
    char *got = exchange_to_eof(
        s.public_port, "GET /poll?topic=a&since=a@00000000:0&timeout=0 HTTP/1.1\r\nHost: x\r\n" H2C
                       "Connection: close\r\n\r\n", &len);
    ck_assert_msg(strncmp(got, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n", 48) == 0,
                  "%s", got);
    free(got);
    /* SSE: the stream, with the event */
    int fd = lg_tcp_connect(s.public_port);
    ck_assert_int_ge(fd, 0);
    const char *sse = "GET /sse?topic=b HTTP/1.1\r\nHost: x\r\n" H2C "\r\n";
    ck_assert_int_eq(lg_send_all(fd, sse, strlen(sse)), 0);
    char buf[4096];
    len = 0;
    ck_assert_int_ge(lg_recv_until(fd, buf, sizeof buf, &len, "retry:", WAIT_MS), 0);
    ck_assert_msg(strncmp(buf, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n", 50) == 0,
                  "%s", buf);
    ck_assert_int_eq(lg_publish(s.control_port, "b", "over-h1", NULL, 0), 201);
    ck_assert_int_ge(lg_recv_until(fd, buf, sizeof buf, &len, "data: over-h1\n", WAIT_MS), 0);
    close(fd);
    /* A WebSocket upgrade to another path still says where WebSockets are. */
    expect_only_answer(s.public_port, "websocket to /sse",
                       "GET /sse?topic=a HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\n"
                       "Upgrade: websocket\r\n\r\n",
                       "HTTP/1.1 404 Not Found\r\n",
                       "{\"error\":\"not_found\",\"message\":\"WebSocket endpoint is /ws\"}\n", NULL);
    lg_server_must_stop(&s);
}
END_TEST

START_TEST(a_websocket_upgrade_with_an_undecodable_query_gets_400)
{
    struct lg_server s;
    lg_server_must_start(&s, NULL);
#define WS(query)                                                                                  \
    "GET /ws" query " HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"        \
    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    expect_only_answer(s.public_port, "%00 in a WebSocket query", WS("?topic=demo%00junk"),
                       "HTTP/1.1 400 Bad Request\r\n",
                       "{\"error\":\"bad_request\",\"message\":\"malformed query string: a "
                       "parameter holds a NUL byte (%00), which no name, topic, cursor or "
                       "timeout may contain\"}\n",
                       NULL);
    expect_only_answer(s.public_port, "a bad escape in a WebSocket query", WS("?topic=%zz"),
                       "HTTP/1.1 400 Bad Request\r\n",
                       "{\"error\":\"bad_request\",\"message\":\"malformed query string: bad "
                       "%-escape or a parameter over 8192 bytes\"}\n",
                       NULL);
    /* and a good one is still upgraded */
    struct lg_ws_client ws;
    lg_ws_must_subscribe(&ws, s.public_port, "/ws?topic=demo", NULL, NULL, 0);
    lg_ws_close(&ws);
    lg_server_must_stop(&s);
}
END_TEST

static Suite *request_head_suite(void)
{
    Suite *s = suite_create("request_head");
    TCase *tc = tcase_create("refusals");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, a_bare_cr_ending_a_head_is_refused_and_hides_no_second_request);
    tcase_add_test(tc, host_is_required_once_in_http_1_1);
    tcase_add_test(tc, an_http_0_9_request_line_is_refused_at_once);
    tcase_add_test(tc, connect_is_not_allowed);
    tcase_add_test(tc, an_upgrade_to_h2c_is_ignored);
    tcase_add_test(tc, a_websocket_upgrade_with_an_undecodable_query_gets_400);
    suite_add_tcase(s, tc);
    return s;
}

LG_CHECK_MAIN(request_head_suite)
