/*
 * test_hardening.c - hostile input over real sockets (docs/security.md). One table row per bad
 * input: the exact status and JSON body it gets, whether the connection is closed after it,
 * and, through all of them, a healthy SSE subscriber that must receive every event published
 * between the rows, in order. Then the resource cases: a second gateway on the same port, a
 * descriptor limit below the connection limits, descriptors running out while serving, and
 * log lines that client bytes cannot forge.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "lg_test.h"

#include "check_main.h"

#define WAIT_MS 5000

enum port { PUBLIC, CONTROL };

struct bad_input {
    const char *what;
    enum port port;
    const char *request; /* raw bytes sent on a fresh connection */
    int status;
    const char *body;    /* exact body */
    bool closes;         /* the gateway closes the connection after its answer */
    const char *header;  /* a header line the answer must carry, or NULL */
};

#define WS_HEAD(extra) "GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\n" extra "\r\n"
#define WS_KEY "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"

#define NUL_BODY                                                                                   \
    "{\"error\":\"bad_request\",\"message\":\"malformed query string: a parameter holds a NUL "  \
    "byte (%00), which no name, topic, cursor or timeout may contain\"}\n"

static const struct bad_input bad_inputs[] = {
    {"Content-Length headers that disagree", CONTROL,
     "POST /v1/topics/a/events HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 4\r\n"
     "\r\nabcd",
     400, "{\"error\":\"bad_request\",\"message\":\"the request has Content-Length headers that "
          "disagree; send one\"}",
     true, NULL},
    {"Content-Length beside Transfer-Encoding", CONTROL,
     "POST /v1/topics/a/events HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n"
     "Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
     400, "{\"error\":\"bad_request\",\"message\":\"the request has both Content-Length and "
          "Transfer-Encoding; send one of them\"}",
     true, NULL},
    {"a NUL in a topic", PUBLIC, "GET /sse?topic=demo%00junk HTTP/1.1\r\nHost: x\r\n\r\n", 400,
     NUL_BODY, true, NULL},
    {"a NUL in a cursor", PUBLIC, "GET /poll?topic=demo&since=%00garbage HTTP/1.1\r\nHost: x\r\n\r\n",
     400, NUL_BODY, true, NULL},
    {"a NUL in a timeout", PUBLIC, "GET /poll?topic=demo&timeout=0%00abc HTTP/1.1\r\nHost: x\r\n\r\n",
     400, NUL_BODY, true, NULL},
    {"an upgrade to something else", PUBLIC,
     WS_HEAD("Upgrade: h2c\r\n" WS_KEY "Sec-WebSocket-Version: 13\r\n"), 400,
     "{\"error\":\"bad_request\",\"message\":\"/ws upgrades to websocket only (Upgrade: "
     "websocket)\"}\n",
     true, NULL},
    {"a WebSocket handshake without Sec-WebSocket-Key", PUBLIC,
     WS_HEAD("Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"), 400,
     "{\"error\":\"bad_request\",\"message\":\"the WebSocket handshake needs a "
     "Sec-WebSocket-Key of 16 bytes in base64 (24 characters)\"}\n",
     true, NULL},
    {"WebSocket version 7", PUBLIC, WS_HEAD("Upgrade: websocket\r\n" WS_KEY "Sec-WebSocket-Version: 7\r\n"),
     426,
     "{\"error\":\"upgrade_required\",\"message\":\"this server speaks WebSocket version 13 "
     "(RFC 6455)\"}\n",
     true, "Sec-WebSocket-Version: 13"},
    {"an unsupported subprotocol", PUBLIC,
     WS_HEAD("Upgrade: websocket\r\n" WS_KEY "Sec-WebSocket-Version: 13\r\n"
             "Sec-WebSocket-Protocol: chat, livegate.v2\r\n"),
     400,
     "{\"error\":\"unsupported_subprotocol\",\"message\":\"the subprotocol of /ws is "
     "livegate.v1 (or offer none); none of those offered is supported\"}\n",
     true, NULL},
};

/* Send raw, read the answer; fill its status and body and whether the server closed after it. */
static void exchange(uint16_t port, const char *raw, struct lg_http_response *r, bool *closed)
{
    int fd = lg_tcp_connect(port);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(lg_send_all(fd, raw, strlen(raw)), 0);
    ck_assert_int_eq(lg_http_read_response(fd, r, WAIT_MS), 0);
    char byte;
    struct timeval tv = {.tv_sec = 2};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    *closed = recv(fd, &byte, 1, 0) == 0;
    close(fd);
}

/* The healthy subscriber's next event has data "e<n>". */
static void expect_event(struct lg_sse_client *healthy, int n)
{
    struct lg_sse_event ev;
    char want[32];
    snprintf(want, sizeof want, "e%d", n);
    ck_assert_int_eq(lg_sse_next(healthy, &ev, WAIT_MS), 1);
    ck_assert_str_eq(ev.data, want);
    lg_sse_event_free(&ev);
}

START_TEST(every_bad_input_gets_its_answer_and_harms_nobody)
{
    struct lg_server s;
    lg_server_must_start(&s, NULL);
    struct lg_sse_client healthy;
    ck_assert_int_eq(lg_sse_open(&healthy, s.public_port, "/sse?topic=healthy", NULL), 0);
    ck_assert_int_eq(healthy.status, 200);
    int published = 0;
    for (size_t i = 0; i < sizeof bad_inputs / sizeof bad_inputs[0]; i++) {
        const struct bad_input *b = &bad_inputs[i];
        struct lg_http_response r;
        bool closed;
        exchange(b->port == PUBLIC ? s.public_port : s.control_port, b->request, &r, &closed);
        ck_assert_msg(r.status == b->status, "%s: status %d, want %d", b->what, r.status,
                      b->status);
        ck_assert_msg(strcmp(r.body, b->body) == 0, "%s: body\n  %s\nwant\n  %s", b->what,
                      r.body, b->body);
        ck_assert_msg(closed == b->closes, "%s: connection %s", b->what,
                      closed ? "closed" : "left open");
        ck_assert_msg(!b->header || strstr(r.headers, b->header), "%s: no %s in\n%s", b->what,
                      b->header, r.headers);
        lg_http_response_free(&r);
        char data[32];
        snprintf(data, sizeof data, "e%d", ++published);
        ck_assert_int_eq(lg_publish(s.control_port, "healthy", data, NULL, 0), 201);
        expect_event(&healthy, published);
    }
    ck_assert_int_eq(lg_stat(s.control_port, "events_published"), published);
    lg_sse_close(&healthy);
    lg_server_must_stop(&s);
}
END_TEST

START_TEST(a_second_gateway_cannot_take_the_same_port)
{
    struct lg_server s;
    lg_server_must_start(&s, NULL);
    char public[64];
    snprintf(public, sizeof public, "127.0.0.1:%u", s.public_port);
    const char *const args[] = {"--public", public, "--control", "127.0.0.1:0", NULL};
    struct lg_run_result r;
    ck_assert_int_eq(lg_run_binary(args, &r, WAIT_MS), 0);
    ck_assert_int_eq(r.status, 1);
    ck_assert_msg(strstr(r.err, "cannot listen on public address 127.0.0.1:") &&
                      strstr(r.err, "Address already in use"),
                  "stderr: %s", r.err);
    lg_run_result_free(&r);
    /* the first one still serves */
    ck_assert_int_eq(lg_publish(s.control_port, "t", "x", NULL, 0), 201);
    lg_server_must_stop(&s);
}
END_TEST

/* Open n connections to port and send each the head of an SSE request; count the answers:
 * 200 streams and 503 refusals. The fds stay open in fds[] for the caller to close. */
static void flood(uint16_t port, int *fds, int n, int *streams, int *refused)
{
    *streams = *refused = 0;
    for (int i = 0; i < n; i++) {
        fds[i] = lg_tcp_connect(port);
        ck_assert_int_ge(fds[i], 0);
        char req[128];
        snprintf(req, sizeof req, "GET /sse?topic=f%d HTTP/1.1\r\nHost: x\r\n\r\n", i);
        ck_assert_int_eq(lg_send_all(fds[i], req, strlen(req)), 0);
    }
    for (int i = 0; i < n; i++) {
        char buf[2048];
        size_t len = 0;
        ck_assert_int_ge(lg_recv_until(fds[i], buf, sizeof buf, &len, "\r\n", WAIT_MS), 0);
        if (strncmp(buf, "HTTP/1.1 200", 12) == 0)
            (*streams)++;
        else if (strncmp(buf, "HTTP/1.1 503", 12) == 0)
            (*refused)++;
    }
}

START_TEST(connection_limits_are_capped_to_the_descriptor_limit)
{
    /* This test's process (check forks one per test) and the gateway it starts: 200 each. */
    struct rlimit rl = {200, 200};
    ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
    struct lg_server s;
    lg_server_must_start(&s, NULL);
    ck_assert(lg_server_wait_log(&s, "the descriptor limit (200) cannot hold "
                                     "limits.max_connections (19400)", WAIT_MS));
    /* 200 - 64 - 8 per worker left; the control port keeps an eighth of it */
    int fds[150], streams, refused;
    flood(s.public_port, fds, 150, &streams, &refused);
    ck_assert_int_eq(streams + refused, 150);
    ck_assert_int_gt(refused, 0);
    double cpu0 = lg_server_cpu_seconds(&s);
    usleep(500 * 1000);
    ck_assert_double_lt(lg_server_cpu_seconds(&s) - cpu0, 0.2); /* no accept() spin */
    ck_assert_int_eq(lg_stat(s.control_port, "connections_refused"), refused);
    for (int i = 0; i < 150; i++)
        close(fds[i]);
    lg_server_must_stop(&s);
}
END_TEST

/* How many descriptors process pid holds (its /proc/PID/fd entries). */
static int open_descriptors(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
    DIR *d = opendir(path);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

START_TEST(running_out_of_descriptors_refuses_instead_of_spinning)
{
    struct lg_server s;
    /* One worker: with two, a sibling can take the slot a worker's spare frees, and that
     * worker then pauses accepting until a descriptor frees up (no answer, but no spin). */
    lg_server_must_start(&s, "{\"workers\":1}");
    /* Leave the running gateway a handful of descriptors above what it holds now. */
    int open_now = open_descriptors(s.pid);
    struct rlimit rl = {(rlim_t)open_now + 6, (rlim_t)open_now + 6};
    ck_assert_int_eq(prlimit(s.pid, RLIMIT_NOFILE, &rl, NULL), 0);
    int fds[40], streams, refused;
    flood(s.public_port, fds, 40, &streams, &refused);
    ck_assert_int_eq(streams + refused, 40);
    ck_assert_int_gt(refused, 0);
    double cpu0 = lg_server_cpu_seconds(&s);
    usleep(500 * 1000);
    ck_assert_double_lt(lg_server_cpu_seconds(&s) - cpu0, 0.2);
    lg_server_pump_log(&s);
    ck_assert_ptr_nonnull(strstr(s.log, "refusing connections with 503 until descriptors free up"));
    for (int i = 0; i < 40; i++)
        close(fds[i]);
    rl.rlim_cur = rl.rlim_max = 4096;
    prlimit(s.pid, RLIMIT_NOFILE, &rl, NULL); /* may fail without privilege: then stay low */
    lg_server_must_stop(&s);
}
END_TEST

START_TEST(client_bytes_cannot_forge_a_log_line)
{
    struct lg_server s;
    lg_server_must_start(&s, "{\"log_level\":\"debug\"}");
    struct lg_http_response r;
    ck_assert_int_eq(lg_http_request(s.public_port, "GET",
                                     "/sse?topic=x%0D%0A2026-01-01T00:00:00.000Z%20ERROR%20FORGED"
                                     "%1B%5B31m",
                                     NULL, NULL, 0, &r, WAIT_MS),
                     0);
    ck_assert_int_eq(r.status, 400); /* invalid_topic */
    lg_http_response_free(&r);
    ck_assert(lg_server_wait_log(&s, "FORGED", WAIT_MS));
    lg_server_pump_log(&s);
    ck_assert_ptr_null(strstr(s.log, "\nERROR FORGED"));
    ck_assert_ptr_null(strstr(s.log, "\n2026-01-01T00:00:00.000Z ERROR FORGED"));
    ck_assert_ptr_null(strchr(s.log, '\x1b'));
    lg_server_must_stop(&s);
}
END_TEST

/* Send a message and wait for the answer of the given type ("subscribed", "unsubscribed"). */
static void ws_roundtrip(struct lg_ws_client *c, const char *text, const char *want_type)
{
    ck_assert_int_eq(lg_ws_send_text(c, text, strlen(text)), 0);
    char *m = NULL;
    ck_assert_int_eq(lg_ws_next(c, &m, WAIT_MS), 1);
    char want[64];
    snprintf(want, sizeof want, "{\"type\":\"%s\"", want_type);
    ck_assert_msg(strncmp(m, want, strlen(want)) == 0, "answer %s, want %s", m, want_type);
    free(m);
}

START_TEST(topics_nobody_published_to_are_collected_once_idle)
{
    struct lg_server s;
    lg_server_must_start(&s, "{\"limits\":{\"max_topics\":100}}");
    ck_assert_int_eq(lg_publish(s.control_port, "kept", "x", NULL, 0), 201);
    struct lg_ws_client c;
    ck_assert_int_eq(lg_ws_open(&c, s.public_port, "/ws", "livegate.v1"), 0);
    /* Five rounds of 64 new names each: 320 creations against a table of 100 topics. */
    for (int round = 0; round < 5; round++) {
        char sub[4096] = "{\"op\":\"subscribe\",\"topics\":[", unsub[4096];
        for (int i = 0; i < 64; i++)
            snprintf(sub + strlen(sub), sizeof sub - strlen(sub), "%s\"r%d-%d\"", i ? "," : "",
                     round, i);
        snprintf(sub + strlen(sub), sizeof sub - strlen(sub), "]}");
        snprintf(unsub, sizeof unsub, "{\"op\":\"unsubscribe\"%s", strchr(sub, ','));
        ws_roundtrip(&c, sub, "subscribed");
        ck_assert_int_eq(lg_stat(s.control_port, "topics"), 65);
        ws_roundtrip(&c, unsub, "unsubscribed");
        ck_assert(lg_wait_stat(s.control_port, "topics", 1, WAIT_MS)); /* collected */
        ck_assert_int_eq(lg_stat(s.control_port, "topics_collected"), 64 * (round + 1));
    }
    /* The topic that was published to stays, with its position: its cursor still resumes. */
    char id[256];
    ck_assert_int_eq(lg_publish(s.control_port, "kept", "y", id, sizeof id), 201);
    ck_assert_uint_eq(lg_seq_of(id), 2);
    ck_assert_int_eq(lg_publish(s.control_port, "fresh", "z", NULL, 0), 201);
    lg_ws_close(&c);
    lg_server_must_stop(&s);
}
END_TEST

static Suite *hardening_suite(void)
{
    Suite *suite = suite_create("hardening");
    TCase *tc = tcase_create("bad_input");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, every_bad_input_gets_its_answer_and_harms_nobody);
    tcase_add_test(tc, a_second_gateway_cannot_take_the_same_port);
    tcase_add_test(tc, connection_limits_are_capped_to_the_descriptor_limit);
    tcase_add_test(tc, running_out_of_descriptors_refuses_instead_of_spinning);
    tcase_add_test(tc, client_bytes_cannot_forge_a_log_line);
    tcase_add_test(tc, topics_nobody_published_to_are_collected_once_idle);
    suite_add_tcase(suite, tc);
    return suite;
}

LG_CHECK_MAIN(hardening_suite)
