/*
 * test_sd_notify.c - the Type=notify protocol of packaging/livegate.service, against the real
 * binary: with $NOTIFY_SOCKET naming a datagram socket (a path, or "@name" in the abstract
 * namespace) the gateway sends exactly "READY=1" once both ports answer and "STOPPING=1" when
 * SIGTERM starts the drain; a socket nobody listens on costs a warning, not the start.
 */
#include <check.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "lg_test.h"

#include "check_main.h"

#define WAIT_MS 5000

/* A datagram socket bound at `name` ("/path" or "@abstract"); the service manager's end. */
static int bind_notify_socket(const char *name)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    size_t len = strlen(name);
    ck_assert_uint_lt(len, sizeof addr.sun_path);
    memcpy(addr.sun_path, name, len);
    if (name[0] == '@')
        addr.sun_path[0] = '\0';
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    ck_assert_int_ge(fd, 0);
    socklen_t alen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + (name[0] == '/'));
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&addr, alen), 0);
    return fd;
}

/* The next datagram must arrive within WAIT_MS and be exactly `want`. */
static void expect_datagram(int fd, const char *want)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    ck_assert_msg(poll(&p, 1, WAIT_MS) == 1, "no %s within %d ms", want, WAIT_MS);
    char buf[256];
    ssize_t n = recv(fd, buf, sizeof buf - 1, 0);
    ck_assert_int_gt(n, 0);
    buf[n] = '\0';
    ck_assert_str_eq(buf, want);
}

static void expect_silence(int fd, int ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    ck_assert_int_eq(poll(&p, 1, ms), 0);
}

static void ready_then_stopping(const char *name)
{
    int fd = bind_notify_socket(name);
    ck_assert_int_eq(setenv("NOTIFY_SOCKET", name, 1), 0);
    struct lg_server s;
    lg_server_must_start(&s, NULL);
    expect_datagram(fd, "READY=1");
    /* READY means serving: a publish is taken at once. */
    char id[256];
    ck_assert_int_eq(lg_publish(s.control_port, "notify", "x", id, sizeof id), 201);
    expect_silence(fd, 200);
    ck_assert_int_eq(lg_server_stop(&s, 10000), 0);
    expect_datagram(fd, "STOPPING=1");
    expect_silence(fd, 100);
    close(fd);
}

START_TEST(test_sd_notify_path_socket)
{
    char name[64];
    snprintf(name, sizeof name, "/tmp/lg_notify_%d.sock", (int)getpid());
    unlink(name);
    ready_then_stopping(name);
    unlink(name);
}
END_TEST

START_TEST(test_sd_notify_abstract_socket)
{
    char name[64];
    snprintf(name, sizeof name, "@lg_notify_%d", (int)getpid());
    ready_then_stopping(name);
}
END_TEST

START_TEST(test_sd_notify_nobody_listening)
{
    ck_assert_int_eq(setenv("NOTIFY_SOCKET", "/nonexistent/notify.sock", 1), 0);
    struct lg_server s;
    lg_server_must_start(&s, NULL);
    ck_assert(lg_server_wait_log(&s, "NOTIFY_SOCKET READY=1: No such file or directory", WAIT_MS));
    char id[256];
    ck_assert_int_eq(lg_publish(s.control_port, "notify", "x", id, sizeof id), 201);
    ck_assert_int_eq(lg_server_stop(&s, 10000), 0);
}
END_TEST

LG_CHECK_MAIN_TCASE("sd_notify", "sd_notify", 60, test_sd_notify_path_socket,
                    test_sd_notify_abstract_socket, test_sd_notify_nobody_listening)
