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
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

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

#define X64 "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
#define X1K X64 X64 X64 X64 X64 X64 X64 X64 X64 X64 X64 X64 X64 X64 X64 X64
#define LONG_LINE "GET /" X1K X1K X1K X1K X1K X1K X1K X1K X1K " HTTP/1.1\r\nHost: x\r\n\r\n"

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
    /* RFC 9112 5.1: libmicrohttpd ignores "Content-Length : 71", and would read the body as a
     * second request (a publish to "smuggled"); the answer closes the connection instead */
    {"whitespace before a header's colon (control port)", CONTROL,
     "POST /v1/topics/a/events HTTP/1.1\r\nHost: x\r\nContent-Length : 71\r\n\r\n"
     "POST /v1/topics/smuggled/events HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nx",
     400, "{\"error\":\"bad_request\",\"message\":\"the header name \\\"Content-Length \\\" is "
          "not a token (whitespace before the colon?); nothing was done\"}",
     true, NULL},
    /* RFC 9112 7.2: an HTTP/1.1 request has exactly one Host */
    {"no Host (control port)", CONTROL,
     "POST /v1/topics/a/events HTTP/1.1\r\nContent-Length: 1\r\n\r\nx"
     "POST /v1/topics/smuggled/events HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\ny",
     400, "{\"error\":\"bad_request\",\"message\":\"an HTTP/1.1 request needs exactly one Host "
          "header; this one has 0\"}",
     true, NULL},
    {"two Host headers (control port)", CONTROL,
     "POST /v1/topics/a/events HTTP/1.1\r\nHost: x\r\nHost: y\r\nContent-Length: 1\r\n\r\nx"
     "POST /v1/topics/smuggled/events HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\ny",
     400, "{\"error\":\"bad_request\",\"message\":\"an HTTP/1.1 request needs exactly one Host "
          "header; this one has 2\"}",
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
    {"HTTP/2.0 in a request line", PUBLIC, "GET /poll?topic=a&timeout=0 HTTP/2.0\r\nHost: x\r\n\r\n",
     505, "{\"error\":\"http_version_not_supported\",\"message\":\"this server speaks HTTP/1.0 "
          "and HTTP/1.1 only\"}\n",
     true, NULL},
    {"a request line over limits.max_request_head_bytes", PUBLIC, LONG_LINE, 414,
     "{\"error\":\"uri_too_long\",\"message\":\"request line exceeds "
     "limits.max_request_head_bytes\"}\n",
     true, NULL},
    {"invalid UTF-8 quoted in an error message", PUBLIC,
     "GET /sse?topic=%FF%FEab%E2%82 HTTP/1.1\r\nHost: x\r\n\r\n", 400,
     "{\"error\":\"invalid_topic\",\"message\":\"topic \\\"\xef\xbf\xbd\xef\xbf\xbd"
     "ab\xef\xbf\xbd\xef\xbf\xbd\\\": topic name contains a character outside A-Z a-z 0-9 _ - . / : ~ "
     "(at byte 1)\"}\n",
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
 * 200 streams and 503 refusals (in the event form an EventSource retries, docs/protocol.md, or
 * a plain 503 when the head had not arrived when it was refused for want of descriptors).
 * The fds stay open in fds[] for the caller to close. */
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
        ck_assert_int_ge(lg_recv_until(fds[i], buf, sizeof buf, &len, "\r\n\r\n", WAIT_MS), 0);
        if (strncmp(buf, "HTTP/1.1 503", 12) == 0 || strstr(buf, "X-Livegate-Refused: 503"))
            (*refused)++;
        else if (strncmp(buf, "HTTP/1.1 200", 12) == 0)
            (*streams)++;
    }
}

/* Flood with n SSE requests: every one is answered (200 or 503), some are refused, and the
 * gateway then uses under 0.2 s of CPU in 0.5 s (no accept() spin). Return value: refused. */
static int flood_without_spinning(struct lg_server *s, int n)
{
    int fds[256], streams, refused;
    ck_assert_int_le(n, 256);
    flood(s->public_port, fds, n, &streams, &refused);
    ck_assert_int_eq(streams + refused, n);
    ck_assert_int_gt(refused, 0);
    double cpu0 = lg_server_cpu_seconds(s);
    usleep(500 * 1000);
    ck_assert_double_lt(lg_server_cpu_seconds(s) - cpu0, 0.2);
    for (int i = 0; i < n; i++)
        close(fds[i]);
    return refused;
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
    int refused = flood_without_spinning(&s, 150);
    ck_assert_int_eq(lg_stat(s.control_port, "connections_refused"), refused);
    lg_server_must_stop(&s);
}
END_TEST

/* The first number on the line of /proc/PID/<file> that starts with prefix. */
static unsigned long proc_number(pid_t pid, const char *file, const char *prefix)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, file);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    unsigned long n = 0;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, prefix, strlen(prefix)) == 0) {
            n = strtoul(line + strlen(prefix), NULL, 10);
            break;
        }
    fclose(f);
    return n;
}

/* Process pid's soft limit on open files. */
static unsigned long soft_descriptor_limit(pid_t pid)
{
    return proc_number(pid, "limits", "Max open files");
}

/* The size of process pid's descriptor table. */
static unsigned long descriptor_table_size(pid_t pid)
{
    return proc_number(pid, "status", "FDSize:");
}

/* The soft limit is what the limits need plus a quarter, well under this machine's hard limit:
 * 64 fixed + 8 per worker + public + control connections (+ hooks' transfers in flight). The
 * descriptor table already holds what they need when the gateway starts: growing it later
 * would stall an accept() for an RCU grace period each time it doubles. */
START_TEST(the_descriptor_limit_is_sized_to_the_limits)
{
    struct lg_server s;
    lg_server_must_start(&s, "{\"workers\":1,\"limits\":{\"max_connections\":1000,"
                             "\"control_max_connections\":100}}");
    ck_assert_uint_eq(soft_descriptor_limit(s.pid), (64 + 8 + 1000 + 100) * 5 / 4);
    ck_assert(lg_server_wait_log(&s, "descriptor limit 1465 (was ", WAIT_MS));
    ck_assert_uint_ge(descriptor_table_size(s.pid), 64 + 8 + 1000 + 100);
    lg_server_must_stop(&s);

    /* a subscribe hook adds its pending checks per worker; the webhooks their 16 in flight */
    lg_server_must_start(&s, "{\"workers\":2,\"limits\":{\"max_connections\":1000,"
                             "\"control_max_connections\":100},\"subscribe_hook\":{"
                             "\"url\":\"http://127.0.0.1:9/hook\",\"topics\":[\"h/*\"],"
                             "\"max_pending\":40},\"webhooks\":{\"url\":"
                             "\"http://127.0.0.1:9/notices\",\"secret\":\"0123456789abcdef\"}}");
    ck_assert_uint_eq(soft_descriptor_limit(s.pid),
                      (64 + 2 * 8 + 1000 + 100 + 2 * 40 + 16) * 5 / 4);
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
    flood_without_spinning(&s, 40);
    lg_server_pump_log(&s);
    ck_assert_ptr_nonnull(strstr(s.log, "refusing connections with 503 until descriptors free up"));
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
    /* no creation rate here: this case is about the table, the next one about the rate */
    lg_server_must_start(&s, "{\"limits\":{\"max_topics\":100,\"topic_creations_per_s\":0}}");
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

/* ---- Keep-alive connections: deadlines, pipelining, lingering close -------------------- */

/* Every byte the server sends until it closes (or timeout_ms passes), NUL-terminated, in buf.
 * Return value: true if the server closed the connection. */
static bool read_to_close(int fd, char *buf, size_t cap, size_t *len, int timeout_ms)
{
    int64_t deadline = lg_now_ms() + timeout_ms;
    *len = 0;
    while (lg_left_ms(deadline) > 0) {
        struct timeval tv = {.tv_sec = 0, .tv_usec = 50 * 1000};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        ssize_t n = recv(fd, buf + *len, cap - 1 - *len, 0);
        if (n == 0) {
            buf[*len] = '\0';
            return true;
        }
        if (n > 0)
            *len += (size_t)n;
        else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            break;
        if (*len == cap - 1)
            break;
    }
    buf[*len] = '\0';
    return false;
}

static int count_of(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

#define POLL_NOW "GET /poll?topic=ka&timeout=0 HTTP/1.1\r\nHost: x\r\n\r\n"

/* A keep-alive connection that has had one long-poll answered (200): its first request done. */
static int keep_alive_after_one_poll(struct lg_server *s)
{
    int fd = lg_tcp_connect(s->public_port);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(lg_send_all(fd, POLL_NOW, strlen(POLL_NOW)), 0);
    struct lg_http_response r;
    ck_assert_int_eq(lg_http_read_response(fd, &r, WAIT_MS), 0);
    ck_assert_int_eq(r.status, 200);
    lg_http_response_free(&r);
    return fd;
}

START_TEST(an_idle_keep_alive_connection_is_closed)
{
    struct lg_server s;
    lg_server_must_start(&s, "{\"limits\":{\"keepalive_timeout_ms\":500}}");
    int fd = keep_alive_after_one_poll(&s);
    int64_t t0 = lg_now_ms();
    char buf[256];
    size_t len;
    ck_assert_msg(read_to_close(fd, buf, sizeof buf, &len, 3000),
                  "an idle keep-alive connection was left open");
    ck_assert_uint_eq(len, 0); /* closed quietly: no answer */
    ck_assert_int_ge(lg_now_ms() - t0, 400);
    close(fd);
    lg_server_must_stop(&s);
}
END_TEST

START_TEST(a_dripped_second_request_head_gets_408)
{
    struct lg_server s;
    lg_server_must_start(&s, "{\"limits\":{\"request_timeout_ms\":600}}");
    int fd = keep_alive_after_one_poll(&s);
    long long rejected = lg_stat(s.control_port, "requests_rejected");
    /* one byte every 100 ms: each keeps the connection busy, none completes the head */
    const char *drip = "GET /poll?topic=ka&timeout=0 HTTP/1.1\r\nHost: x\r\n";
    int64_t t0 = lg_now_ms();
    size_t i = 0;
    char buf[1024];
    size_t len = 0;
    for (; drip[i] && lg_now_ms() - t0 < 3000; i++) {
        if (send(fd, drip + i, 1, MSG_NOSIGNAL) != 1)
            break;
        ssize_t n = recv(fd, buf, sizeof buf - 1, MSG_DONTWAIT);
        if (n > 0) {
            len = (size_t)n;
            break;
        }
        usleep(100 * 1000);
    }
    if (len == 0) {
        bool closed = read_to_close(fd, buf, sizeof buf, &len, 2000);
        (void)closed;
    }
    buf[len] = '\0';
    ck_assert_msg(strncmp(buf, "HTTP/1.1 408 Request Timeout\r\n", 30) == 0,
                  "no 408 for a dripped head (sent %zu bytes): %s", i, buf);
    ck_assert_ptr_nonnull(strstr(buf, "{\"error\":\"request_timeout\",\"message\":\"the request "
                                      "head did not arrive within limits.request_timeout_ms\"}"));
    ck_assert_int_lt(lg_now_ms() - t0, 2500);
    ck_assert_int_eq(lg_stat(s.control_port, "requests_rejected"), rejected + 1);
    close(fd);
    lg_server_must_stop(&s);
}
END_TEST

START_TEST(pipelined_requests_are_answered_in_order)
{
    struct lg_server s;
    lg_server_must_start(&s, NULL);
    ck_assert_int_eq(lg_publish(s.control_port, "p1", "one", NULL, 0), 201);
    ck_assert_int_eq(lg_publish(s.control_port, "p2", "two", NULL, 0), 201);
    int fd = lg_tcp_connect(s.public_port);
    ck_assert_int_ge(fd, 0);
    /* three requests in one write; the last one asks to close after its answer */
    const char *three = "GET /poll?topic=p1&since=p1@00000000:0&timeout=0 HTTP/1.1\r\nHost: x\r\n\r\n"
                        "GET /poll?topic=p2&since=p2@00000000:0&timeout=0 HTTP/1.1\r\nHost: x\r\n\r\n"
                        "GET /poll?topic=p3&timeout=0 HTTP/1.1\r\nHost: x\r\n"
                        "Connection: close\r\n\r\n";
    ck_assert_int_eq(lg_send_all(fd, three, strlen(three)), 0);
    static char buf[16384];
    size_t len;
    ck_assert_msg(read_to_close(fd, buf, sizeof buf, &len, WAIT_MS), "not closed; got: %s", buf);
    const char *a = strstr(buf, "\"cursor\":\"p1@");
    const char *b = a ? strstr(a, "\"cursor\":\"p2@") : NULL;
    const char *c = b ? strstr(b, "\"cursor\":\"p3@") : NULL;
    ck_assert_msg(a && b && c, "three answers in order expected, got:\n%s", buf);
    ck_assert_int_eq(count_of(buf, "HTTP/1.1 200 OK\r\n"), 3);
    ck_assert_int_eq(count_of(buf, "Connection: close\r\n"), 1);
    close(fd);
    lg_server_must_stop(&s);
}
END_TEST

/* Keep sending `total` bytes of junk in 4 KiB pieces, 10 ms apart. Return value: 0, or the
 * errno of the first send that failed (the server reset the connection). */
static int keep_sending(int fd, size_t total)
{
    char junk[4096];
    memset(junk, 'x', sizeof junk);
    for (size_t sent = 0; sent < total; sent += sizeof junk) {
        if (send(fd, junk, sizeof junk, MSG_NOSIGNAL) < 0)
            return errno;
        usleep(10 * 1000);
    }
    return 0;
}

/* The client sends on after its refusal, then reads: the answer must still be there. */
static void expect_answer_survives(int fd, int status, const char *body)
{
    usleep(100 * 1000); /* the refusal is sent and the socket closed (or half-closed) by now */
    int err = keep_sending(fd, 32 * 1024);
    ck_assert_msg(err == 0, "the gateway reset the connection: %s", strerror(err));
    static char buf[16384];
    size_t len;
    read_to_close(fd, buf, sizeof buf, &len, 4000);
    char want[64];
    snprintf(want, sizeof want, "HTTP/1.1 %d ", status);
    const char *at = strstr(buf, want);
    ck_assert_msg(at != NULL, "no %d answer in:\n%s", status, buf);
    ck_assert_ptr_nonnull(strstr(at, body));
}

START_TEST(a_refusal_is_not_lost_to_a_reset)
{
    struct lg_server s;
    lg_server_must_start(&s, NULL);
    /* the acceptor: a head over limits.max_request_head_bytes (8192), and more behind it */
    int fd = lg_tcp_connect(s.public_port);
    ck_assert_int_ge(fd, 0);
    static char big[12000];
    memset(big, 'a', sizeof big);
    memcpy(big, "GET /sse?topic=x HTTP/1.1\r\nX-Pad: ", 35);
    ck_assert_int_eq(lg_send_all(fd, big, sizeof big), 0);
    expect_answer_survives(fd, 431, "{\"error\":\"headers_too_large\",\"message\":\"request head "
                                    "exceeds limits.max_request_head_bytes\"}");
    close(fd);
    /* an adopted keep-alive connection: its second request is malformed, and more follows */
    fd = keep_alive_after_one_poll(&s);
    const char *bad = "GET /poll HTTP/1.1\r\nBad Header\r\n\r\n";
    ck_assert_int_eq(lg_send_all(fd, bad, strlen(bad)), 0);
    expect_answer_survives(fd, 400, "\"error\":\"bad_request\"");
    close(fd);
    ck_assert_int_eq(lg_stat(s.control_port, "requests_rejected"), 2);
    lg_server_must_stop(&s);
}
END_TEST

START_TEST(a_fifo_in_the_static_directory_is_404_and_blocks_nothing)
{
    char dir[] = "/tmp/lg-hardening-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char path[128], conf[256];
    snprintf(path, sizeof path, "%s/pipe.txt", dir);
    ck_assert_int_eq(mkfifo(path, 0644), 0);
    snprintf(conf, sizeof conf, "{\"workers\":1,\"static_dir\":\"%s\"}", dir);
    struct lg_server s;
    lg_server_must_start(&s, conf);
    struct lg_http_response r;
    ck_assert_int_eq(lg_http_request(s.public_port, "GET", "/pipe.txt", NULL, NULL, 0, &r, 3000), 0);
    lg_expect_error(&r, 404, "not_found", LG_ERROR_JSON_TYPE);
    lg_http_response_free(&r);
    /* the one worker still serves */
    ck_assert_int_eq(lg_http_request(s.public_port, "GET", "/poll?topic=f&timeout=0", NULL, NULL,
                                     0, &r, 3000),
                     0);
    ck_assert_int_eq(r.status, 200);
    lg_http_response_free(&r);
    lg_server_must_stop(&s);
    unlink(path);
    rmdir(dir);
}
END_TEST

/* Open an SSE stream with extra headers (or NULL); return its status (200, or the refusal's,
 * which X-Livegate-Refused carries). */
static int sse_status(struct lg_server *s, struct lg_sse_client *c, const char *headers)
{
    ck_assert_int_eq(lg_sse_open(c, s->public_port, "/sse?topic=a", headers), 0);
    const char *refused = strstr(c->headers, "X-Livegate-Refused: ");
    return refused ? atoi(refused + 20) : c->status;
}

/* An SSE subscription's 429 is a refused event (test_sse_refusals.c has its bytes). */
#define PER_ADDRESS_429                                                                            \
    "event: refused\ndata: {\"status\":429,\"error\":\"too_many_connections\",\"message\":"    \
    "\"your address holds %d connections, the limit (limits.max_connections_per_address); "      \
    "close one or retry later\",\"retry_ms\":"

START_TEST(one_address_cannot_take_every_connection)
{
    struct lg_server s;
    /* Every test client is local: the client address comes from the trusted proxy's header. */
    lg_server_must_start(&s, "{\"trusted_proxies\":\"127.0.0.1\","
                             "\"limits\":{\"max_connections_per_address\":3}}");
    const char *client = "X-Forwarded-For: 203.0.113.7\r\n";
    struct lg_sse_client c[4];
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(sse_status(&s, &c[i], client), 200);
    ck_assert_int_eq(sse_status(&s, &c[3], client), 429);
    char want[256];
    snprintf(want, sizeof want, PER_ADDRESS_429, 3);
    ck_assert(lg_sse_wait_eof(&c[3], WAIT_MS));
    ck_assert_ptr_nonnull(strstr(c[3].raw, want));
    lg_sse_close(&c[3]);
    struct lg_ws_client ws;
    ck_assert_int_eq(lg_ws_open_with(&ws, s.public_port, "/ws", "livegate.v1", client), 0);
    char *m = NULL;
    ck_assert_int_eq(lg_ws_next(&ws, &m, WAIT_MS), -1);
    ck_assert_int_eq(ws.close_code, 1008);
    ck_assert_str_eq(ws.close_reason,
                     "too many connections from your address (limits.max_connections_per_address)");
    lg_ws_close(&ws);
    ck_assert_int_eq(lg_stat(s.control_port, "connections_refused_address"), 2);
    lg_sse_close(&c[0]); /* its count comes back */
    ck_assert(lg_wait_stat(s.control_port, "clients_sse", 2, WAIT_MS));
    ck_assert_int_eq(sse_status(&s, &c[0], client), 200);
    ck_assert_int_eq(sse_status(&s, &c[3], client), 429); /* full again */
    lg_sse_close(&c[3]);
    for (int i = 0; i < 3; i++)
        lg_sse_close(&c[i]);
    lg_server_must_stop(&s);
}
END_TEST

START_TEST(behind_a_trusted_proxy_the_forwarded_address_counts)
{
    struct lg_server s;
    lg_server_must_start(&s, "{\"trusted_proxies\":\"127.0.0.1\","
                             "\"limits\":{\"max_connections_per_address\":2}}");
    const char *client7 = "X-Forwarded-For: 198.51.100.1, 203.0.113.7\r\n";
    struct lg_sse_client c[6];
    ck_assert_int_eq(sse_status(&s, &c[0], client7), 200);
    ck_assert_int_eq(sse_status(&s, &c[1], client7), 200);
    ck_assert_int_eq(sse_status(&s, &c[2], client7), 429); /* 203.0.113.7 holds two */
    ck_assert_int_eq(sse_status(&s, &c[3], "X-Forwarded-For: 203.0.113.8\r\n"), 200);
    ck_assert_int_eq(sse_status(&s, &c[4], NULL), 200); /* the proxy's own: counted nowhere */
    ck_assert_int_eq(sse_status(&s, &c[5], NULL), 200);
    struct lg_ws_client ws;
    ck_assert_int_eq(lg_ws_open_with(&ws, s.public_port, "/ws", "livegate.v1", NULL), 0);
    /* Each client's remote is the address it counts against, else its socket's peer. */
    ck_assert(lg_wait_stat(s.control_port, "clients_ws", 1, WAIT_MS));
    struct lg_http_response r;
    ck_assert_int_eq(lg_http_request(s.control_port, "GET", "/v1/clients", NULL, NULL, 0, &r,
                                     WAIT_MS), 0);
    ck_assert_int_eq(r.status, 200);
    json_t *o = json_loadb(r.body, r.body_len, 0, NULL);
    lg_http_response_free(&r);
    ck_assert_ptr_nonnull(o);
    int forwarded7 = 0, forwarded8 = 0, peer_sse = 0, peer_ws = 0;
    size_t at;
    json_t *client;
    json_array_foreach(json_object_get(o, "clients"), at, client) {
        const char *remote = json_string_value(json_object_get(client, "remote"));
        const char *transport = json_string_value(json_object_get(client, "transport"));
        ck_assert_ptr_nonnull(remote);
        forwarded7 += strcmp(remote, "203.0.113.7") == 0;
        forwarded8 += strcmp(remote, "203.0.113.8") == 0;
        peer_sse += strcmp(remote, "127.0.0.1") == 0 && strcmp(transport, "sse") == 0;
        peer_ws += strcmp(remote, "127.0.0.1") == 0 && strcmp(transport, "websocket") == 0;
    }
    ck_assert_uint_eq(json_array_size(json_object_get(o, "clients")), 6);
    json_decref(o);
    ck_assert_int_eq(forwarded7, 2);
    ck_assert_int_eq(forwarded8, 1);
    ck_assert_int_eq(peer_sse, 2);
    ck_assert_int_eq(peer_ws, 1);
    lg_ws_close(&ws);
    for (int i = 0; i < 6; i++)
        lg_sse_close(&c[i]);
    lg_server_must_stop(&s);
}
END_TEST

/* {"op":"subscribe","topics":["<prefix>0",...,"<prefix>n-1"]} */
static void subscribe_names(char *out, size_t cap, const char *prefix, int n)
{
    snprintf(out, cap, "{\"op\":\"subscribe\",\"topics\":[");
    for (int i = 0; i < n; i++)
        snprintf(out + strlen(out), cap - strlen(out), "%s\"%s%d\"", i ? "," : "", prefix, i);
    snprintf(out + strlen(out), cap - strlen(out), "]}");
}

START_TEST(a_connection_creates_topics_at_a_bounded_rate)
{
    struct lg_server s;
    /* 2 a second: the two new topics below need a second of refill, so the refusal holds
     * however slowly the steps before it run (up to a second) */
    lg_server_must_start(&s, "{\"limits\":{\"topic_creations_per_s\":2,"
                             "\"max_topics_per_client\":20}}");
    ck_assert_int_eq(lg_publish(s.control_port, "old0", "x", NULL, 0), 201);
    struct lg_ws_client c;
    ck_assert_int_eq(lg_ws_open(&c, s.public_port, "/ws", "livegate.v1"), 0);
    char msg[2048];
    subscribe_names(msg, sizeof msg, "a", 20); /* the burst: 20 new topics at once */
    ws_roundtrip(&c, msg, "subscribed");
    char unsub[2048];
    snprintf(unsub, sizeof unsub, "{\"op\":\"unsubscribe\"%s", strchr(msg, ','));
    ws_roundtrip(&c, unsub, "unsubscribed"); /* room for topics again; the rate is spent */
    subscribe_names(msg, sizeof msg, "b", 2);  /* the bucket is empty: refused, all of it */
    ck_assert_int_eq(lg_ws_send_text(&c, msg, strlen(msg)), 0);
    char *m = NULL;
    ck_assert_int_eq(lg_ws_next(&c, &m, WAIT_MS), 1);
    ck_assert_str_eq(m, "{\"type\":\"error\",\"v\":1,\"code\":\"too_many_new_topics\","
                        "\"message\":\"this connection creates new topics faster than "
                        "limits.topic_creations_per_s allows; retry shortly\"}");
    free(m);
    ck_assert_int_eq(lg_stat(s.control_port, "topic_creations_refused"), 1);
    /* existing topics are not limited */
    ws_roundtrip(&c, "{\"op\":\"subscribe\",\"topics\":[\"old0\"]}", "subscribed");
    usleep(1100 * 1000); /* 2 a second: two more by now */
    ws_roundtrip(&c, msg, "subscribed");
    lg_ws_close(&c);
    /* an SSE request gets 429 the same way once its connection's bucket is spent: each new
     * connection starts with a full one, so that bound is the per-address one */
    lg_server_must_stop(&s);
}
END_TEST

START_TEST(websocket_control_messages_are_rate_limited)
{
    struct lg_server s;
    lg_server_must_start(&s, "{\"websocket\":{\"max_messages_per_s\":5}}");
    struct lg_ws_client c;
    ck_assert_int_eq(lg_ws_open(&c, s.public_port, "/ws", "livegate.v1"), 0);
    /* six at once, so the bucket has no time to refill whatever the machine's speed */
    for (int i = 0; i < 6; i++)
        ck_assert_int_eq(lg_ws_send_text(&c, "{\"op\":\"ping\"}", 13), 0);
    char *m = NULL;
    int pongs = 0, rc;
    while ((rc = lg_ws_next(&c, &m, WAIT_MS)) == 1) { /* pongs the close did not overtake */
        ck_assert_str_eq(m, "{\"type\":\"pong\",\"v\":1}");
        free(m);
        pongs++;
    }
    ck_assert_int_eq(rc, -1);
    ck_assert_int_le(pongs, 5);
    ck_assert_int_eq(c.close_code, 1008);
    ck_assert_str_eq(c.close_reason, "control messages faster than websocket.max_messages_per_s");
    lg_ws_close(&c);
    ck_assert_int_eq(lg_stat(s.control_port, "ws_closed_message_rate"), 1);
    lg_server_must_stop(&s);
}
END_TEST

LG_CHECK_MAIN_TCASE(
    "hardening", "bad_input", 60, every_bad_input_gets_its_answer_and_harms_nobody,
    a_second_gateway_cannot_take_the_same_port,
    connection_limits_are_capped_to_the_descriptor_limit, the_descriptor_limit_is_sized_to_the_limits,
    running_out_of_descriptors_refuses_instead_of_spinning, client_bytes_cannot_forge_a_log_line,
    topics_nobody_published_to_are_collected_once_idle, one_address_cannot_take_every_connection,
    a_connection_creates_topics_at_a_bounded_rate, websocket_control_messages_are_rate_limited,
    behind_a_trusted_proxy_the_forwarded_address_counts, an_idle_keep_alive_connection_is_closed,
    a_dripped_second_request_head_gets_408, pipelined_requests_are_answered_in_order,
    a_refusal_is_not_lost_to_a_reset, a_fifo_in_the_static_directory_is_404_and_blocks_nothing)
