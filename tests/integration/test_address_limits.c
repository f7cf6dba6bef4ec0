/*
 * test_address_limits.c - limits.max_connections_per_address behind a trusted proxy (the
 * tests' 127.0.0.1 is one by default): an X-Forwarded-For entry with a port counts against its
 * address, whatever the port, and IPv6 clients count per /64. Held long-polls hold the slots;
 * a poll with timeout=0 probes them (200, or 429 too_many_connections).
 */
#include <check.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "lg_test.h"

#include "check_main.h"

#define WAIT_MS 5000
#define CONFIG "{\"limits\":{\"max_connections_per_address\":2}}"

/* A long-poll held from `forwarded_for` (its socket, left open). */
static int hold_poll(uint16_t port, const char *forwarded_for)
{
    int fd = lg_tcp_connect(port);
    ck_assert_int_ge(fd, 0);
    char req[256];
    snprintf(req, sizeof req,
             "GET /poll?topic=held&timeout=30000 HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: %s\r\n\r\n",
             forwarded_for);
    ck_assert_int_eq(lg_send_all(fd, req, strlen(req)), 0);
    return fd;
}

static int probe(uint16_t port, const char *forwarded_for)
{
    char headers[128];
    snprintf(headers, sizeof headers, "X-Forwarded-For: %s\r\n", forwarded_for);
    struct lg_http_response r;
    ck_assert_int_eq(
        lg_http_request(port, "GET", "/poll?topic=p&timeout=0", headers, NULL, 0, &r, WAIT_MS), 0);
    int status = r.status;
    if (status == 429)
        lg_expect_error(&r, 429, "too_many_connections", LG_ERROR_JSON_TYPE);
    lg_http_response_free(&r);
    return status;
}

START_TEST(an_ipv6_client_counts_per_64)
{
    struct lg_server s;
    lg_server_must_start(&s, CONFIG);
    int fds[2] = {hold_poll(s.public_port, "2001:db8:1:2::a"),
                  hold_poll(s.public_port, "[2001:db8:1:2:ffff::b]:4711")};
    ck_assert(lg_wait_stat(s.control_port, "clients_poll", 2, WAIT_MS));
    ck_assert_int_eq(probe(s.public_port, "2001:db8:1:2::c"), 429); /* the same /64 */
    ck_assert_int_eq(probe(s.public_port, "2001:db8:1:3::a"), 200); /* the next one */
    close(fds[1]);
    ck_assert(lg_wait_stat(s.control_port, "clients_poll", 1, WAIT_MS));
    ck_assert_int_eq(probe(s.public_port, "2001:db8:1:2::c"), 200);
    close(fds[0]);
    lg_server_must_stop(&s);
}
END_TEST

START_TEST(an_ipv4_entry_with_a_port_counts_against_its_address)
{
    struct lg_server s;
    lg_server_must_start(&s, CONFIG);
    int fds[2] = {hold_poll(s.public_port, "203.0.113.9:1234"),
                  hold_poll(s.public_port, "198.51.100.1, 203.0.113.9:5678")};
    ck_assert(lg_wait_stat(s.control_port, "clients_poll", 2, WAIT_MS));
    ck_assert_int_eq(probe(s.public_port, "203.0.113.9:999"), 429);
    ck_assert_int_eq(probe(s.public_port, "203.0.113.9"), 429);
    ck_assert_int_eq(probe(s.public_port, "203.0.113.10:1234"), 200);
    ck_assert_int_eq(lg_stat(s.control_port, "connections_refused_address"), 2);
    close(fds[0]);
    close(fds[1]);
    lg_server_must_stop(&s);
}
END_TEST

LG_CHECK_MAIN_TCASE("address_limits", "behind_a_proxy", 60, an_ipv6_client_counts_per_64,
                    an_ipv4_entry_with_a_port_counts_against_its_address)
