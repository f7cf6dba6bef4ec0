/*
 * test_ws.c - the WebSocket transport (GET /ws, subprotocol livegate.v1) against the real
 * binary: handshake, subscribe in the query and with control messages, the exact event JSON,
 * replay with since, unsubscribe, ping/pong, malformed messages, close codes 1008, 1009 and
 * 1001, and the server's keepalive.
 */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "lg_test.h"

#include "check_main.h"

#define WAIT_MS 5000

/* The server of the tests in the "ws" test case: the default config, started before each test
 * and stopped (it must exit 0) after it. */
static struct lg_server srv;

static void server_setup(void) { lg_server_must_start(&srv, NULL); }

static void server_teardown(void) { lg_server_must_stop(&srv); }

/* The tests of "ws_own_config": start s with config and open c on /ws (livegate.v1). */
static void start_own(struct lg_server *s, const char *config, struct lg_ws_client *c)
{
    lg_server_must_start(s, config);
    lg_ws_must_open(c, s->public_port, "/ws", "livegate.v1");
}

/* Next message (must arrive), as a malloc'd string. */
static char *next_msg(struct lg_ws_client *c)
{
    char *m = NULL;
    int rc = lg_ws_next(c, &m, WAIT_MS);
    ck_assert_msg(rc == 1, "no message (rc %d, close %d %s)", rc, c->close_code, c->close_reason);
    return m;
}

/* The next message equals the JSON `want` (any key order). */
static void expect_json(struct lg_ws_client *c, const char *want)
{
    char *m = next_msg(c);
    json_t *got = json_loads(m, 0, NULL), *exp = json_loads(want, 0, NULL);
    ck_assert_msg(exp != NULL, "bad expectation %s", want);
    ck_assert_msg(got && json_equal(got, exp), "message\n  %s\nwant\n  %s", m, want);
    json_decref(got);
    json_decref(exp);
    free(m);
}

/* The next message is an error with this code and a non-empty message. */
static void expect_error(struct lg_ws_client *c, const char *code)
{
    char *m = next_msg(c);
    json_t *got = json_loads(m, 0, NULL);
    ck_assert_msg(got != NULL, "not JSON: %s", m);
    const char *type = json_string_value(json_object_get(got, "type"));
    ck_assert_msg(type && strcmp(type, "error") == 0 &&
                      json_integer_value(json_object_get(got, "v")) == 1,
                  "not an error message: %s", m);
    const char *gc = json_string_value(json_object_get(got, "code"));
    const char *gm = json_string_value(json_object_get(got, "message"));
    ck_assert_msg(gc && strcmp(gc, code) == 0, "error code in %s, want %s", m, code);
    ck_assert_msg(gm && *gm, "no message text in %s", m);
    ck_assert_uint_eq(json_object_size(got), 4);
    json_decref(got);
    free(m);
}

/* The value of the "time" field in the WebSocket event message m. */
static long long time_field_of(const char *m)
{
    size_t at = 0;
    while (m[at] && strncmp(m + at, "\"time\":", 7) != 0)
        at++;
    ck_assert_msg(m[at] != '\0', "no time in %s", m);
    return strtoll(m + at + 7, NULL, 10);
}

/*
 * The next message is exactly the event object with these fields, byte for byte, where
 * data_json is the JSON text of its data. time must lie within [t0, t1] (wall ms).
 */
static void expect_event(struct lg_ws_client *c, const char *topic, const char *id,
                         unsigned long long seq, const char *type, const char *data_json,
                         long long t0, long long t1)
{
    char *m = next_msg(c);
    long long t = time_field_of(m);
    size_t cap = strlen(data_json) + 1024;
    char *want = malloc(cap);
    snprintf(want, cap,
             "{\"type\":\"event\",\"v\":1,\"topic\":\"%s\",\"id\":\"%s\",\"seq\":%llu,"
             "\"event\":\"%s\",\"time\":%lld,\"data\":%s}",
             topic, id, seq, type, t, data_json);
    ck_assert_msg(strcmp(m, want) == 0, "event\n  %s\nwant\n  %s", m, want);
    if (t0 > 0)
        ck_assert_msg(t >= t0 - 50 && t <= t1 + 50, "time %lld outside [%lld, %lld]", t, t0, t1);
    free(want);
    free(m);
}

/* The next message is a plain-text event from `topic` with data "dNN"; returns its seq. */
static unsigned long long expect_seq(struct lg_ws_client *c, const char *topic, const char *ep,
                                     unsigned long long seq)
{
    char id[256], data[64];
    snprintf(id, sizeof id, "%s@%s:%llu", topic, ep, seq);
    snprintf(data, sizeof data, "\"d%llu\"", seq);
    expect_event(c, topic, id, seq, "message", data, 0, 0);
    return seq;
}

static void send_text(struct lg_ws_client *c, const char *text)
{
    ck_assert_int_eq(lg_ws_send_text(c, text, strlen(text)), 0);
}

static void expect_silence(struct lg_ws_client *c, int ms)
{
    char *m = NULL;
    int rc = lg_ws_next(c, &m, ms);
    ck_assert_msg(rc == 0, "unexpected %s: %s", rc > 0 ? "message" : "close", m ? m : "");
}

/* Nothing arrives within ms; then c is closed (how a test that read everything ends). */
static void expect_silence_then_close(struct lg_ws_client *c, int ms)
{
    expect_silence(c, ms);
    lg_ws_close(c);
}

static void ping_pong(struct lg_ws_client *c)
{
    send_text(c, "{\"op\":\"ping\"}");
    char *m = next_msg(c);
    ck_assert_str_eq(m, "{\"type\":\"pong\",\"v\":1}");
    free(m);
}

/* ---- Handshake ---------------------------------------------------------------------------- */

START_TEST(test_ws_subprotocol)
{
    struct lg_ws_client c;
    lg_ws_must_open(&c, srv.public_port, "/ws", "livegate.v1");
    ck_assert_str_eq(c.protocol, "livegate.v1");
    ping_pong(&c);
    lg_ws_close(&c);

    lg_ws_must_open(&c, srv.public_port, "/ws", NULL);
    ck_assert_str_eq(c.protocol, "");
    ping_pong(&c);
    ck_assert(lg_wait_stat(srv.control_port, "clients_ws", 1, WAIT_MS));
    lg_ws_close(&c);
    ck_assert(lg_wait_stat(srv.control_port, "clients_ws", 0, WAIT_MS));
}
END_TEST

/* ---- Query subscription and the event object ---------------------------------------------- */

/* The server's end of c has sent exactly `segments` segments of data and holds nothing back. */
static void expect_sent_in(const struct lg_ws_client *c, unsigned segments)
{
    struct lg_server_socket_state st;
    ck_assert_int_eq(lg_server_socket_state(&srv, c->fd, &st), 0);
    ck_assert_msg(!st.corked, "the server's socket is still corked");
    ck_assert_uint_eq(st.data_segments_out, segments);
}

/* The upgrade's 101 and the connection's first message leave in one segment; a connection
 * with nothing to say yet gets its 101 at once all the same (protocols.h). */
START_TEST(test_ws_answer_and_first_message_in_one_segment)
{
    struct lg_ws_client c;
    lg_ws_must_subscribe(&c, srv.public_port, "/ws?topic=seg", NULL, NULL, 0);
    expect_sent_in(&c, 1);
    lg_ws_close(&c);

    lg_ws_must_open(&c, srv.public_port, "/ws", "livegate.v1");
    expect_sent_in(&c, 1);
    lg_ws_close(&c);

    lg_ws_must_open(&c, srv.public_port, "/ws?topic=bad%20topic", "livegate.v1");
    expect_error(&c, "invalid_topic");
    expect_sent_in(&c, 1);
    lg_ws_close(&c);
}
END_TEST

START_TEST(test_ws_query_topics_and_event_json)
{
    char id[256], ep[16], want[1024];
    ck_assert_int_eq(lg_publish(srv.control_port, "a", "before", id, sizeof id), 201);
    lg_epoch_of(id, ep, sizeof ep);
    ck_assert_int_eq(lg_publish(srv.control_port, "b", "before", NULL, 0), 201);
    ck_assert_int_eq(lg_publish(srv.control_port, "b", "before", NULL, 0), 201);

    struct lg_ws_client c;
    snprintf(want, sizeof want,
             "{\"type\":\"subscribed\",\"v\":1,\"topics\":[\"a\",\"b\"],"
             "\"cursor\":\"a@%1$s:1,b@%1$s:2\"}",
             ep);
    lg_ws_must_subscribe(&c, srv.public_port, "/ws?topic=a&topic=b", want, NULL, 0);

    long long t0 = lg_wall_ms();
    ck_assert_int_eq(lg_publish(srv.control_port, "a", "hello", id, sizeof id), 201);
    long long t1 = lg_wall_ms();
    snprintf(want, sizeof want, "a@%s:2", ep);
    ck_assert_str_eq(id, want);
    expect_event(&c, "a", id, 2, "message", "\"hello\"", t0, t1);

    /* JSON data stays JSON (compact); the type comes from ?type= */
    static const char body[] = "{\"price\": 1.07, \"tags\": [\"x\", null, true]}";
    t0 = lg_wall_ms();
    ck_assert_int_eq(lg_publish_ex(srv.control_port, "b", "type=tick", "application/json", body,
                                   strlen(body), id, sizeof id),
                     201);
    t1 = lg_wall_ms();
    expect_event(&c, "b", id, 3, "tick", "{\"price\":1.07,\"tags\":[\"x\",null,true]}", t0, t1);

    /* text that needs escaping */
    t0 = lg_wall_ms();
    ck_assert_int_eq(
        lg_publish(srv.control_port, "a", "l1\nl2\t\"q\" \\ caf\xc3\xa9", id, sizeof id), 201);
    t1 = lg_wall_ms();
    expect_event(&c, "a", id, 3, "message", "\"l1\\nl2\\t\\\"q\\\" \\\\ caf\xc3\xa9\"", t0, t1);

    /* a JSON string body is a string; empty text is "" */
    ck_assert_int_eq(lg_publish_ex(srv.control_port, "a", NULL, "application/json", "\"s\"", 3, id,
                                   sizeof id),
                     201);
    expect_event(&c, "a", id, 4, "message", "\"s\"", 0, 0);
    ck_assert_int_eq(lg_publish(srv.control_port, "b", "", id, sizeof id), 201);
    expect_event(&c, "b", id, 4, "message", "\"\"", 0, 0);

    /* a topic nobody subscribed to is not delivered */
    ck_assert_int_eq(lg_publish(srv.control_port, "c", "other", NULL, 0), 201);
    ck_assert_int_eq(lg_publish(srv.control_port, "a", "last", id, sizeof id), 201);
    expect_event(&c, "a", id, 5, "message", "\"last\"", 0, 0);
    lg_ws_close(&c);
}
END_TEST

/* ---- Control messages ----------------------------------------------------------------------- */

START_TEST(test_ws_subscribe_since_replays)
{
    char ep[16], msg[512], want[512];
    lg_publish_n_epoch(srv.control_port, "s", 1, 5, ep, sizeof ep);
    struct lg_ws_client c;
    lg_ws_must_open(&c, srv.public_port, "/ws", "livegate.v1");
    expect_silence(&c, 200); /* no topics: nothing said */

    /* malformed and foreign cursors: an error, the connection stays */
    send_text(&c, "{\"op\":\"subscribe\",\"topics\":[\"s\"],\"since\":\"s@nothex:1\"}");
    expect_error(&c, "invalid_cursor");
    snprintf(msg, sizeof msg, "{\"op\":\"subscribe\",\"topics\":[\"s\"],\"since\":\"s@%s:9\"}", ep);
    send_text(&c, msg); /* ahead of the topic */
    expect_error(&c, "invalid_cursor");
    send_text(&c, "{\"op\":\"subscribe\",\"topics\":[\"bad topic\"]}");
    expect_error(&c, "invalid_topic");
    send_text(&c, "{\"op\":\"subscribe\",\"topics\":[]}");
    expect_error(&c, "bad_message");

    /* all or nothing: a bad cursor for the second topic leaves the first unsubscribed */
    lg_publish_n(srv.control_port, "a", 1, 1, NULL, 0);
    snprintf(msg, sizeof msg,
             "{\"op\":\"subscribe\",\"topics\":[\"a\",\"s\"],\"since\":\"a@%1$s:1,s@%1$s:9\"}", ep);
    send_text(&c, msg);
    expect_error(&c, "invalid_cursor");
    lg_publish_n(srv.control_port, "a", 2, 2, NULL, 0);
    ping_pong(&c); /* the pong comes after anything the publish would have caused */
    expect_silence(&c, 200);

    /* an empty since is no cursor, as since= on /sse and /poll */
    send_text(&c, "{\"op\":\"subscribe\",\"topics\":[\"e\"],\"since\":\"\"}");
    char *sub = next_msg(&c);
    ck_assert_msg(strstr(sub, "\"type\":\"subscribed\"") && strstr(sub, "\"topics\":[\"e\"]"),
                  "got %s", sub);
    free(sub);
    send_text(&c, "{\"op\":\"unsubscribe\",\"topics\":[\"e\"]}");
    expect_json(&c, "{\"type\":\"unsubscribed\",\"v\":1,\"topics\":[\"e\"]}");

    snprintf(msg, sizeof msg, "{\"op\":\"subscribe\",\"topics\":[\"s\"],\"since\":\"s@%s:2\"}", ep);
    send_text(&c, msg);
    snprintf(want, sizeof want,
             "{\"type\":\"subscribed\",\"v\":1,\"topics\":[\"s\"],\"cursor\":\"s@%s:2\"}", ep);
    expect_json(&c, want);
    for (unsigned long long q = 3; q <= 5; q++)
        expect_seq(&c, "s", ep, q);
    lg_publish_n(srv.control_port, "s", 6, 6, NULL, 0);
    expect_seq(&c, "s", ep, 6);

    /* a second topic added later, from its start (seq 0), while s continues live */
    lg_publish_n(srv.control_port, "t", 1, 2, NULL, 0);
    snprintf(msg, sizeof msg, "{\"op\":\"subscribe\",\"topics\":[\"t\"],\"since\":\"t@%s:0\"}", ep);
    send_text(&c, msg);
    snprintf(want, sizeof want,
             "{\"type\":\"subscribed\",\"v\":1,\"topics\":[\"t\"],"
             "\"cursor\":\"s@%1$s:6,t@%1$s:0\"}",
             ep);
    expect_json(&c, want);
    expect_seq(&c, "t", ep, 1);
    expect_seq(&c, "t", ep, 2);
    lg_publish_n(srv.control_port, "s", 7, 7, NULL, 0);
    expect_seq(&c, "s", ep, 7);

    /* without since: nothing from history, only what comes next */
    lg_publish_n(srv.control_port, "u", 1, 3, NULL, 0);
    send_text(&c, "{\"op\":\"subscribe\",\"topics\":[\"u\"]}");
    snprintf(want, sizeof want,
             "{\"type\":\"subscribed\",\"v\":1,\"topics\":[\"u\"],"
             "\"cursor\":\"s@%1$s:7,t@%1$s:2,u@%1$s:3\"}",
             ep);
    expect_json(&c, want);
    lg_publish_n(srv.control_port, "u", 4, 4, NULL, 0);
    expect_seq(&c, "u", ep, 4);
    expect_silence_then_close(&c, 200);
}
END_TEST

START_TEST(test_ws_since_in_query)
{
    char ep[16], path[256], want[512];
    lg_publish_n_epoch(srv.control_port, "q", 1, 4, ep, sizeof ep);
    struct lg_ws_client c;
    snprintf(path, sizeof path, "/ws?topic=q&since=q@%s:1", ep);
    snprintf(want, sizeof want,
             "{\"type\":\"subscribed\",\"v\":1,\"topics\":[\"q\"],\"cursor\":\"q@%s:1\"}", ep);
    lg_ws_must_subscribe(&c, srv.public_port, path, want, NULL, 0);
    for (unsigned long long q = 2; q <= 4; q++)
        expect_seq(&c, "q", ep, q);
    lg_ws_close(&c);

    /* a bad cursor in the query: an error message, not a silent subscription */
    lg_ws_must_open(&c, srv.public_port, "/ws?topic=q&since=q@zz:1", NULL);
    expect_error(&c, "invalid_cursor");
    ping_pong(&c);
    lg_ws_close(&c);
}
END_TEST

START_TEST(test_ws_unsubscribe)
{
    char ep[16], want[512];
    lg_publish_n_epoch(srv.control_port, "u1", 1, 1, ep, sizeof ep);
    lg_publish_n(srv.control_port, "u2", 1, 1, NULL, 0);
    struct lg_ws_client c;
    snprintf(want, sizeof want,
             "{\"type\":\"subscribed\",\"v\":1,\"topics\":[\"u1\",\"u2\"],"
             "\"cursor\":\"u1@%1$s:1,u2@%1$s:1\"}",
             ep);
    lg_ws_must_subscribe(&c, srv.public_port, "/ws?topic=u1&topic=u2", want, NULL, 0);
    lg_publish_n(srv.control_port, "u2", 2, 2, NULL, 0);
    expect_seq(&c, "u2", ep, 2);

    send_text(&c, "{\"op\":\"unsubscribe\",\"topics\":[\"u2\"]}");
    expect_json(&c, "{\"type\":\"unsubscribed\",\"v\":1,\"topics\":[\"u2\"]}");
    /* u2 is published first: had it still been subscribed, it would arrive before u1 */
    lg_publish_n(srv.control_port, "u2", 3, 3, NULL, 0);
    lg_publish_n(srv.control_port, "u1", 2, 2, NULL, 0);
    expect_seq(&c, "u1", ep, 2);
    expect_silence(&c, 200);

    /* unsubscribing the last topic: nothing arrives, the connection stays usable */
    send_text(&c, "{\"op\":\"unsubscribe\",\"topics\":[\"u1\"]}");
    expect_json(&c, "{\"type\":\"unsubscribed\",\"v\":1,\"topics\":[\"u1\"]}");
    lg_publish_n(srv.control_port, "u1", 3, 3, NULL, 0);
    ping_pong(&c); /* the pong comes after anything the publish would have caused */
    expect_silence_then_close(&c, 200);
}
END_TEST

START_TEST(test_ws_malformed_messages)
{
    struct lg_server s;
    struct lg_ws_client c;
    start_own(&s, "{\"websocket\":{\"max_bad_messages\":3}}", &c);

    send_text(&c, "{not json");
    expect_error(&c, "bad_message");
    ping_pong(&c); /* usable, and resets the count */
    send_text(&c, "[1,2]");
    expect_error(&c, "bad_message");
    send_text(&c, "{\"op\":\"fly\"}");
    expect_error(&c, "unknown_op");
    ping_pong(&c);
    send_text(&c, "{\"topics\":[\"a\"]}");
    expect_error(&c, "bad_message");
    send_text(&c, "");
    expect_error(&c, "bad_message");
    ck_assert(lg_wait_stat(s.control_port, "clients_ws", 1, WAIT_MS));

    /* the third in a row closes with 1008 */
    send_text(&c, "{\"op\":");
    char *m = NULL;
    int rc = lg_ws_next(&c, &m, WAIT_MS);
    ck_assert_msg(rc == -1, "rc %d: %s", rc, m ? m : "");
    ck_assert_int_eq(c.close_code, 1008);
    lg_ws_close(&c);
    ck_assert(lg_wait_stat(s.control_port, "clients_ws", 0, WAIT_MS));
    lg_server_must_stop(&s);
}
END_TEST

/* Every frame the server sends from now until it closes the connection (bounded), as
 * "opcode:payload-length" items, space-separated; the handshake's leftover bytes first. */
static void read_frames_to_eof(struct lg_ws_client *c, char *out, size_t cap)
{
    unsigned char buf[65536];
    size_t len = c->len < sizeof buf ? c->len : sizeof buf;
    memcpy(buf, c->buf, len);
    int64_t deadline = lg_now_ms() + 3 * WAIT_MS;
    for (;;) {
        struct timeval tv = {.tv_usec = 100 * 1000};
        setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        ssize_t n = recv(c->fd, buf + len, sizeof buf - len, 0);
        if (n == 0 || (n < 0 && errno == ECONNRESET))
            break;
        if (n > 0)
            len += (size_t)n;
        ck_assert_msg(lg_now_ms() < deadline, "the server did not close");
    }
    out[0] = '\0';
    for (size_t off = 0; off + 2 <= len;) {
        size_t plen = buf[off + 1] & 0x7f, hl = 2;
        if (plen == 126) {
            plen = (size_t)buf[off + 2] << 8 | buf[off + 3];
            hl = 4;
        }
        ck_assert_msg(plen < 126 * 256 && off + hl + plen <= len, "a cut frame at %zu", off);
        snprintf(out + strlen(out), cap - strlen(out), "%s%d:%zu", off ? " " : "",
                 buf[off] & 0x0f, plen);
        off += hl + plen;
    }
}

/* Five malformed messages in one read: four error replies, then the close 1008, then
 * nothing (RFC 6455 5.5.1), although the read held three more. */
START_TEST(test_ws_nothing_after_close)
{
    struct lg_server s;
    struct lg_ws_client c;
    start_own(&s, NULL, &c);
    unsigned char frames[8 * 16];
    size_t len = 0;
    for (int i = 0; i < 8; i++) { /* FIN text, masked (zero mask), "{not json" */
        static const unsigned char frame[] = {0x81, 0x89, 0, 0, 0, 0, '{', 'n', 'o', 't',
                                              ' ', 'j', 's', 'o', 'n'};
        memcpy(frames + len, frame, sizeof frame);
        len += sizeof frame;
    }
    ck_assert_int_eq(lg_send_all(c.fd, frames, len), 0);
    char seen[512];
    read_frames_to_eof(&c, seen, sizeof seen);
    /* 1: text (each error reply), 8: close (2 bytes of code + the reason) */
    const char *want = "1:115 1:115 1:115 1:115 8:29";
    ck_assert_msg(strcmp(seen, want) == 0, "frames: %s, want %s", seen, want);
    lg_ws_close(&c);
    lg_server_must_stop(&s);
}
END_TEST

START_TEST(test_ws_message_too_big)
{
    struct lg_server s;
    struct lg_ws_client c;
    start_own(&s, "{\"websocket\":{\"max_message_bytes\":1024}}", &c);

    /* exactly the limit is fine: a valid subscribe padded with blanks to 1024 bytes */
    char msg[2048];
    int n = snprintf(msg, sizeof msg, "{\"op\":\"subscribe\",\"topics\":[\"big\"]");
    memset(msg + n, ' ', 1023 - (size_t)n);
    msg[1023] = '}';
    ck_assert_int_eq(lg_ws_send_text(&c, msg, 1024), 0);
    char *m = next_msg(&c);
    ck_assert_ptr_nonnull(strstr(m, "\"subscribed\""));
    free(m);

    /* one byte more closes with 1009 */
    memset(msg, ' ', sizeof msg);
    memcpy(msg, "{\"op\":\"ping\"", 12);
    msg[1024] = '}';
    ck_assert_int_eq(lg_ws_send_text(&c, msg, 1025), 0);
    int rc = lg_ws_next(&c, &m, WAIT_MS);
    ck_assert_msg(rc == -1, "rc %d: %s", rc, m ? m : "");
    ck_assert_int_eq(c.close_code, 1009);
    lg_ws_close(&c);
    lg_server_must_stop(&s);
}
END_TEST

START_TEST(test_ws_shutdown_1001)
{
    struct lg_ws_client c;
    lg_ws_must_subscribe(&c, srv.public_port, "/ws?topic=z", NULL, NULL, 0);
    ck_assert_int_eq(kill(srv.pid, SIGTERM), 0);
    char *m = NULL;
    int rc = lg_ws_next(&c, &m, WAIT_MS);
    ck_assert_msg(rc == -1, "rc %d: %s", rc, m ? m : "");
    ck_assert_int_eq(c.close_code, 1001);
    lg_ws_close(&c);
}
END_TEST

/* What the silent peer of test_ws_keepalive sees, read without ever writing to its socket. */
struct silent_peer {
    unsigned char bytes[16];
    size_t len;
    int64_t ping_ms, closed_ms; /* when its first bytes arrived; when its socket ended (0: not) */
};

static void silent_peer_read(struct silent_peer *p, int fd)
{
    unsigned char b[16];
    ssize_t n;
    while (p->closed_ms == 0 && (n = recv(fd, b, sizeof b, MSG_DONTWAIT)) != 0) {
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (n < 0)
            break; /* reset: ended too */
        if (p->len == 0)
            p->ping_ms = lg_now_ms();
        size_t take = (size_t)n < sizeof p->bytes - p->len ? (size_t)n : sizeof p->bytes - p->len;
        memcpy(p->bytes + p->len, b, take);
        p->len += take;
    }
    p->closed_ms = lg_now_ms();
}

/* The server pings a peer silent for ping_interval_ms: one ping frame, nothing else. One
 * that answers it stays, and so does one that sends messages but never answers a ping (it is
 * not silent); one that stays silent for pong_timeout_ms after the ping is closed, counted
 * under reason "keepalive". */
START_TEST(test_ws_keepalive)
{
    struct lg_server s;
    struct lg_ws_client live, mute, talker;
    start_own(&s, "{\"websocket\":{\"ping_interval_ms\":1000,\"pong_timeout_ms\":1000}}", &live);
    lg_ws_must_open(&mute, s.public_port, "/ws", "livegate.v1");
    lg_ws_must_open(&talker, s.public_port, "/ws", "livegate.v1");
    ck_assert(lg_wait_stat(s.control_port, "clients_ws", 3, WAIT_MS));
    struct silent_peer quiet = {0};
    int64_t opened = lg_now_ms();
    /* 4.5 s: live answers pings (lg_ws_next does), talker sends a message every 250 ms and
     * reads nothing, mute neither reads frames nor writes */
    for (int64_t deadline = opened + 4500; lg_now_ms() < deadline;) {
        send_text(&talker, "{\"op\":\"ping\"}");
        expect_silence(&live, 250);
        silent_peer_read(&quiet, mute.fd);
    }
    ck_assert_msg(quiet.closed_ms > 0, "the silent peer was not closed");
    ck_assert_uint_eq(quiet.len, 4);
    ck_assert_int_eq(memcmp(quiet.bytes, "\x89\x02lg", 4), 0); /* FIN, ping; unmasked, "lg" */
    ck_assert_msg(quiet.ping_ms - opened >= 900, "pinged %lld ms after the handshake",
                  (long long)(quiet.ping_ms - opened));
    ck_assert_msg(quiet.closed_ms - quiet.ping_ms >= 900, "closed %lld ms after its ping",
                  (long long)(quiet.closed_ms - quiet.ping_ms));
    ck_assert_int_eq(lg_stat(s.control_port, "clients_ws"), 2);
    struct lg_http_response r;
    ck_assert_int_eq(
        lg_http_request(s.control_port, "GET", "/metrics", NULL, NULL, 0, &r, WAIT_MS), 0);
    ck_assert_msg(strstr(r.body, "\nlivegate_connections_closed_total{reason=\"keepalive\"} 1\n"),
                  "keepalive closes not counted:\n%s", r.body);
    lg_http_response_free(&r);
    ping_pong(&live);
    lg_ws_close(&live);
    lg_ws_close(&mute);
    lg_ws_close(&talker);
    lg_server_must_stop(&s);
}
END_TEST

LG_CHECK_MAIN_SHARED("ws", 30, server_setup, server_teardown,
                     LG_TESTS(test_ws_subprotocol, test_ws_answer_and_first_message_in_one_segment,
                              test_ws_query_topics_and_event_json,
                              test_ws_subscribe_since_replays, test_ws_since_in_query,
                              test_ws_unsubscribe, test_ws_shutdown_1001),
                     LG_TESTS(test_ws_malformed_messages, test_ws_nothing_after_close,
                              test_ws_message_too_big,
                              test_ws_keepalive))
