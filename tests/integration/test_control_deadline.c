/*
 * test_control_deadline.c - every control-port request has a deadline (control_deadline.h),
 * which libmicrohttpd's idle timeout alone does not give: it restarts on every byte. A client
 * dripping a head, a body, or a second head after an answered request is closed once its
 * deadline passes (the sweep runs once a second), is counted, and meanwhile publishing and
 * /healthz answer on other connections.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "lg_test.h"

#include "check_main.h"

#define CONFIG "{\"limits\":{\"request_timeout_ms\":800,\"publish_wait_ms\":0," \
               "\"control_idle_timeout_ms\":1000}}"

/* A keep-alive request (GET /healthz is answered with Connection: close). */
#define PUBLISH "POST /v1/topics/ka/events HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nx"

/* Send text one byte every 100 ms until the server closes the connection or 6 s pass.
 * Return value: milliseconds from the first byte until the close, or -1 if it stayed open. */
static int64_t drip_until_closed(int fd, const char *text, struct lg_server *s, int *published)
{
    int64_t t0 = lg_now_ms();
    for (size_t i = 0; lg_now_ms() - t0 < 6000; i++) {
        char c = text[i % strlen(text)];
        if (send(fd, &c, 1, MSG_NOSIGNAL) != 1)
            return lg_now_ms() - t0;
        char buf[256];
        ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK))
            return lg_now_ms() - t0;
        ck_assert_msg(n < 0, "the dripping client got an answer: %.*s", (int)n, buf);
        if (i % 5 == 0) { /* the port keeps serving everyone else */
            ck_assert_int_eq(lg_publish(s->control_port, "drip", "x", NULL, 0), 201);
            (*published)++;
        }
        usleep(100 * 1000);
    }
    return -1;
}

/* Return value: the events published on other connections meanwhile (all answered 201). */
static int expect_closed_in_time(int fd, const char *text, int64_t min_ms, int64_t max_ms,
                                  struct lg_server *s)
{
    long long before = lg_stat(s->control_port, "control_connections_timed_out");
    int published = 0;
    int64_t took = drip_until_closed(fd, text, s, &published);
    ck_assert_msg(took >= 0, "a dripping control connection stayed open for 6 s");
    ck_assert_msg(took >= min_ms && took <= max_ms, "closed after %lld ms, not within [%lld, %lld]",
                  (long long)took, (long long)min_ms, (long long)max_ms);
    ck_assert_int_gt(published, 0);
    ck_assert_int_eq(lg_stat(s->control_port, "control_connections_timed_out"), before + 1);
    close(fd);
    return published;
}

/* A gateway with short deadlines and one connection to its control port. */
static int start_and_connect(struct lg_server *s)
{
    lg_server_must_start(s, CONFIG);
    int fd = lg_tcp_connect(s->control_port);
    ck_assert_int_ge(fd, 0);
    return fd;
}

static void publish_on(int fd)
{
    ck_assert_int_eq(lg_send_all(fd, PUBLISH, strlen(PUBLISH)), 0);
    struct lg_http_response r;
    ck_assert_int_eq(lg_http_read_response(fd, &r, 3000), 0);
    ck_assert_int_eq(r.status, 201);
    lg_http_response_free(&r);
}

START_TEST(a_dripped_head_is_closed_after_the_request_timeout)
{
    struct lg_server s;
    int fd = start_and_connect(&s);
    /* deadline 800 ms after the connection opened, swept within a second after that */
    expect_closed_in_time(fd, "GET /healthz HTTP/1.1\r\nX-Pad: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 700,
                          2400, &s);
    ck_assert(lg_server_wait_log(&s, "control: closed 1 connection(s) whose request did not "
                                     "arrive in time", 2000));
    lg_server_must_stop(&s);
}
END_TEST

START_TEST(a_dripped_body_is_closed_after_the_request_timeout)
{
    struct lg_server s;
    int fd = start_and_connect(&s);
    const char *head = "POST /v1/topics/slow/events HTTP/1.1\r\nHost: x\r\n"
                       "Content-Length: 1000\r\n\r\n";
    ck_assert_int_eq(lg_send_all(fd, head, strlen(head)), 0);
    int published = expect_closed_in_time(fd, "b", 700, 2400, &s);
    /* the unfinished body published nothing */
    ck_assert_int_eq(lg_stat(s.control_port, "events_published"), published);
    lg_server_must_stop(&s);
}
END_TEST

START_TEST(a_dripped_second_head_is_closed_after_idle_plus_request_timeout)
{
    struct lg_server s;
    int fd = start_and_connect(&s);
    publish_on(fd);
    /* idle 1000 ms + head 800 ms after the answer, swept within a second after that */
    expect_closed_in_time(fd, "GET /healthz HTTP/1.1\r\nX-Pad: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
                          1700, 3400, &s);
    lg_server_must_stop(&s);
}
END_TEST

START_TEST(a_prompt_client_is_never_cut)
{
    struct lg_server s;
    int fd = start_and_connect(&s);
    /* keep-alive publishes every 300 ms for 3 s: each answered, the connection never closed */
    for (int i = 0; i < 10; i++) {
        publish_on(fd);
        usleep(300 * 1000);
    }
    close(fd);
    ck_assert_int_eq(lg_stat(s.control_port, "control_connections_timed_out"), 0);
    lg_server_must_stop(&s);
}
END_TEST

LG_CHECK_MAIN_TCASE("control_deadline", "deadlines", 60,
                    a_dripped_head_is_closed_after_the_request_timeout,
                    a_dripped_body_is_closed_after_the_request_timeout,
                    a_dripped_second_head_is_closed_after_idle_plus_request_timeout,
                    a_prompt_client_is_never_cut)
