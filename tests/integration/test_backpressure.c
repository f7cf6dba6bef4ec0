/*
 * test_backpressure.c - slow-consumer policies, publisher backpressure, bounded memory and
 * isolation, end to end with real sockets that stop reading (issue 4).
 *
 * A "stalled" client (tests/support/lg_stall.c) shrinks its receive buffer before connect(),
 * sends its request and reads nothing, and the server's send buffer is made small
 * (socket_send_buffer_bytes), so after a few KiB the server's socket is not writable and the
 * events pile up in the client's ring, where the policy of the topic must act. Later the test
 * resumes reading and checks every byte the client got.
 *
 * Invariant checked on every drop-oldest stream: the events received plus the ranges of the
 * gap notices cover the published sequence numbers exactly once and in order (no silent loss,
 * no duplicate), each gap's `to` + 1 is the seq of the item after it, and the sizes of all
 * gaps add up to the server's drop counters.
 *
 * Waits are bounded and on observable conditions (/v1/stats, stream bytes); no bare sleeps.
 */
#include <check.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "lg_test.h"

#include "check_main.h"

/* Under ASan (freed memory in quarantine) and TSan (its own allocator and shadow memory) the
 * server's RSS says nothing about what livegate holds: the bounded-memory RSS check is made in
 * the plain build only. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define LG_BP_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define LG_BP_ASAN 1
#endif
#endif
#ifndef LG_BP_ASAN
#define LG_BP_ASAN 0
#endif

#define RCVBUF 4096  /* SO_RCVBUF of a stalled client */
#define DATA_1K 1024 /* bytes of data of a "1 KB" event */
#define READ_TIMEOUT_MS 20000

/* Settings shared by the policy tests: small socket buffers and write batches so a stalled
 * client fills fast, history large enough to resume from, a short drain at stop. */
#define BASE_CONFIG                                                                                \
    "\"workers\":2,\"socket_send_buffer_bytes\":4096,\"write_batch_bytes\":4096,"                  \
    "\"drain_timeout_ms\":1000,\"history\":{\"max_events\":100000,\"max_bytes\":268435456}"

/* size-1 bytes: prefix then 'x' padding, NUL-terminated. */
static void fill_data(char *buf, size_t size, const char *prefix)
{
    size_t n = strlen(prefix);
    ck_assert_uint_lt(n, size);
    memcpy(buf, prefix, n);
    memset(buf + n, 'x', size - 1 - n);
    buf[size - 1] = '\0';
}

/* The seq of an id "topic@epoch:seq" whose "topic@epoch:" part must equal prefix. */
static uint64_t id_seq(const char *id, const char *prefix)
{
    size_t pl = strlen(prefix);
    ck_assert_msg(strncmp(id, prefix, pl) == 0, "id \"%s\" does not start with \"%s\"", id, prefix);
    char *end;
    unsigned long long seq = strtoull(id + pl, &end, 10);
    ck_assert_msg(end != id + pl && *end == '\0', "id \"%s\": bad seq", id);
    return seq;
}

/* POST one event on a kept-alive control connection. Returns the status; a 201 sets *seq and
 * (when id is not NULL) the id; a 503 must say Retry-After: 1. */
static int publish_ka(struct lg_stall_ka *k, const char *topic, const char *query, const char *data,
                      uint64_t *seq, char *id, size_t id_cap)
{
    char path[1200];
    snprintf(path, sizeof path, "/v1/topics/%s/events%s%s", topic, query ? "?" : "",
             query ? query : "");
    struct lg_http_response r;
    int rc = lg_stall_ka_request(k, "POST", path, "Content-Type: text/plain\r\n", data,
                                 strlen(data), &r, 10000);
    ck_assert_msg(rc == 0, "publish to %s: no answer", topic);
    int status = r.status;
    if (status == 201) {
        json_t *root = json_loadb(r.body, r.body_len, 0, NULL);
        json_t *s = json_object_get(root, "seq");
        const char *i = json_string_value(json_object_get(root, "id"));
        ck_assert_msg(json_is_integer(s) && i, "201 body: %s", r.body);
        if (seq)
            *seq = (uint64_t)json_integer_value(s);
        if (id)
            snprintf(id, id_cap, "%s", i);
        json_decref(root);
    } else if (status == 503) {
        char ra[32];
        ck_assert_msg(lg_http_header(&r, "Retry-After", ra, sizeof ra), "503 without Retry-After");
        ck_assert_str_eq(ra, "1");
    } else {
        ck_abort_msg("publish to %s answered %d: %s", topic, status, r.body);
    }
    lg_http_response_free(&r);
    return status;
}

/* Publish and require 201; returns the seq. */
static uint64_t publish_ok(struct lg_stall_ka *k, const char *topic, const char *query,
                           const char *data, char *id, size_t id_cap)
{
    uint64_t seq = 0;
    int st = publish_ka(k, topic, query, data, &seq, id, id_cap);
    ck_assert_msg(st == 201, "publish to %s answered %d", topic, st);
    return seq;
}

/* "topic@epoch:" of an id "topic@epoch:seq". */
static void id_prefix(const char *id, char *out, size_t cap)
{
    const char *colon = strrchr(id, ':');
    ck_assert_ptr_nonnull(colon);
    snprintf(out, cap, "%.*s", (int)(colon - id + 1), id);
}

/* ---- The no-silent-loss ledger --------------------------------------------------------------- */

struct ledger {
    uint64_t next;        /* seq the next item must start at */
    uint64_t events;      /* events received */
    uint64_t gaps;        /* gap notices received */
    uint64_t gap_seqs;    /* seqs covered by gap notices */
    bool event_after_gap; /* some gap was followed by an event (to + 1 == its seq) */
    bool last_was_gap;
};

static void ledger_event(struct ledger *l, uint64_t seq)
{
    ck_assert_msg(seq == l->next, "event seq %" PRIu64 " where %" PRIu64 " was due", seq, l->next);
    if (l->last_was_gap)
        l->event_after_gap = true;
    l->last_was_gap = false;
    l->next = seq + 1;
    l->events++;
}

static void ledger_gap(struct ledger *l, uint64_t from, uint64_t to)
{
    ck_assert_msg(from == l->next && to >= from,
                  "gap %" PRIu64 "..%" PRIu64 " where %" PRIu64 " was due", from, to, l->next);
    l->next = to + 1;
    l->gaps++;
    l->gap_seqs += to - from + 1;
    l->last_was_gap = true;
}

/* The exact data of a gap notice (SSE data line; WS adds "type" and "v" in front). */
static void gap_json(char *out, size_t cap, const char *ws, const char *topic, const char *prefix,
                     uint64_t from, uint64_t to)
{
    snprintf(out, cap,
             "{%s\"topic\":\"%s\",\"from\":%" PRIu64 ",\"to\":%" PRIu64 ",\"id\":\"%s%" PRIu64
             "\"}",
             ws, topic, from, to, prefix, to);
}

/* Parse {"topic","from","to","id"} of a gap notice and check it byte for byte. */
static void check_gap(const char *data, bool ws, const char *topic, const char *prefix,
                      uint64_t *from, uint64_t *to)
{
    json_t *root = json_loads(data, 0, NULL);
    json_t *f = json_object_get(root, "from"), *t = json_object_get(root, "to");
    ck_assert_msg(json_is_integer(f) && json_is_integer(t), "gap notice: %s", data);
    *from = (uint64_t)json_integer_value(f);
    *to = (uint64_t)json_integer_value(t);
    json_decref(root);
    char want[512];
    gap_json(want, sizeof want, ws ? "\"type\":\"gap\",\"v\":1," : "", topic, prefix, *from, *to);
    ck_assert_str_eq(data, want);
}

/* Read an SSE stream until seq `last` is covered (an event with that seq, or a gap ending
 * there), entering every item into the ledger. */
static void sse_read_through(struct lg_sse_client *c, const char *topic, const char *prefix,
                             uint64_t last, struct ledger *l)
{
    int64_t deadline = lg_now_ms() + READ_TIMEOUT_MS;
    while (l->next <= last) {
        struct lg_sse_event ev;
        int rc = lg_sse_next(c, &ev, lg_left_ms(deadline));
        ck_assert_msg(rc == 1, "stream %s before seq %" PRIu64 " (at %" PRIu64 ")",
                      rc == 0 ? "timed out" : "ended", last, l->next);
        ck_assert_msg(strcmp(ev.event, "message") == 0 || strcmp(ev.event, "gap") == 0,
                      "unexpected \"%s\" event at seq %" PRIu64 " (before %" PRIu64 "): %s",
                      ev.event, l->next, last, ev.data);
        uint64_t seq = id_seq(ev.id, prefix);
        if (strcmp(ev.event, "gap") == 0) {
            uint64_t from, to;
            check_gap(ev.data, false, topic, prefix, &from, &to);
            ck_assert_msg(seq == to, "gap id %s does not end at its range's end", ev.id);
            ledger_gap(l, from, to);
        } else {
            ck_assert_msg(strcmp(ev.event, "message") == 0, "unexpected event: %s: %s", ev.event,
                          ev.data);
            ledger_event(l, seq);
        }
        lg_sse_event_free(&ev);
    }
}

/* The same over WebSocket. A `subscribed` message may come first. */
static void ws_read_through(struct lg_ws_client *c, const char *topic, const char *prefix,
                            uint64_t last, struct ledger *l)
{
    int64_t deadline = lg_now_ms() + READ_TIMEOUT_MS;
    bool first = true;
    while (l->next <= last) {
        char *msg = NULL;
        int rc = lg_ws_next(c, &msg, lg_left_ms(deadline));
        ck_assert_msg(rc == 1, "ws %s before seq %" PRIu64 " (at %" PRIu64 ", close %d %s)",
                      rc == 0 ? "timed out" : "closed", last, l->next, c->close_code,
                      c->close_reason);
        json_t *root = json_loads(msg, 0, NULL);
        const char *type = json_string_value(json_object_get(root, "type"));
        ck_assert_msg(type != NULL, "ws message without type: %s", msg);
        if (strcmp(type, "subscribed") == 0) {
            ck_assert_msg(first, "late subscribed message: %s", msg);
        } else if (strcmp(type, "gap") == 0) {
            uint64_t from, to;
            check_gap(msg, true, topic, prefix, &from, &to);
            ledger_gap(l, from, to);
        } else {
            ck_assert_msg(strcmp(type, "event") == 0, "unexpected ws message: %s", msg);
            const char *id = json_string_value(json_object_get(root, "id"));
            json_t *seq = json_object_get(root, "seq");
            ck_assert_msg(id && json_is_integer(seq), "event: %s", msg);
            ck_assert_str_eq(json_string_value(json_object_get(root, "topic")), topic);
            ck_assert_uint_eq(id_seq(id, prefix), (uint64_t)json_integer_value(seq));
            ledger_event(l, (uint64_t)json_integer_value(seq));
        }
        first = false;
        json_decref(root);
        free(msg);
    }
}

/* Wait (<= timeout_ms) until counter >= value; fail with the last value otherwise. */
static long long wait_stat_ge(const struct lg_server *s, const char *name, long long value,
                              int timeout_ms)
{
    long long v = lg_stat_wait(s->control_port, name, 1, value, timeout_ms);
    ck_assert_msg(v >= value, "%s is %lld after %d ms, expected >= %lld", name, v, timeout_ms,
                  value);
    return v;
}

static void wait_stat_eq(const struct lg_server *s, const char *name, long long value,
                         int timeout_ms)
{
    long long v = lg_stat_wait(s->control_port, name, 0, value, timeout_ms);
    ck_assert_msg(v == value, "%s is %lld after %d ms, expected %lld", name, v, timeout_ms, value);
}

/* ---- 1. drop-oldest -------------------------------------------------------------------------- */

#define DROP_N 2000

/* Publish the warm-up event (seq 1) that gives the topic an epoch; the subscriber then starts
 * from its id, so no event it must get can fall before its subscription. */
static void warm_up(struct lg_stall_ka *k, const char *topic, char *id, size_t cap, char *prefix,
                    size_t pcap)
{
    ck_assert_uint_eq(publish_ok(k, topic, NULL, "warm-up", id, cap), 1);
    id_prefix(id, prefix, pcap);
}

static void flood(struct lg_stall_ka *k, const char *topic, uint64_t first_seq, int n)
{
    char data[DATA_1K + 1], prefix[32];
    for (int i = 0; i < n; i++) {
        snprintf(prefix, sizeof prefix, "%d:", i);
        fill_data(data, sizeof data, prefix);
        ck_assert_uint_eq(publish_ok(k, topic, NULL, data, NULL, 0), first_seq + (uint64_t)i);
    }
}

/* What the stalled-subscriber tests share: the server, a keep-alive publisher, and the id of
 * the warm-up event (seq 1) of their topic. */
struct stalled {
    struct lg_server s;
    struct lg_stall_ka k;
    char id1[256], prefix[256]; /* the warm-up id and its "topic@epoch:" */
};

/* Start the server with config and the keep-alive publisher, and warm topic up. */
static void stalled_warm(struct stalled *t, const char *config, const char *topic)
{
    lg_server_must_start(&t->s, config);
    lg_stall_ka_init(&t->k, t->s.control_port);
    warm_up(&t->k, topic, t->id1, sizeof t->id1, t->prefix, sizeof t->prefix);
}

/* Close the publisher and stop the server (it must exit 0). */
static void stalled_stop(struct stalled *t)
{
    lg_stall_ka_close(&t->k);
    lg_server_must_stop(&t->s);
}

/* stalled_warm, then send a stalled subscriber's request from the warm-up id (SSE with
 * last_event_id when w is NULL, else WebSocket with since); wait until the server counts it.
 * Return value: the stalled SSE socket, or -1 with w filled. */
static int stalled_start(struct stalled *t, const char *config, const char *topic,
                         struct lg_stall_ws *w)
{
    stalled_warm(t, config, topic);
    char path[1200];
    int fd = -1;
    if (w) {
        snprintf(path, sizeof path, "/ws?topic=%s&since=%s", topic, t->id1);
        ck_assert_int_eq(lg_stall_ws_open(w, t->s.public_port, path, RCVBUF), 0);
    } else {
        snprintf(path, sizeof path, "/sse?topic=%s&last_event_id=%s", topic, t->id1);
        fd = lg_stall_sse_open(t->s.public_port, path, NULL, RCVBUF);
        ck_assert_int_ge(fd, 0);
    }
    wait_stat_eq(&t->s, w ? "clients_ws" : "clients_sse", 1, 5000);
    return fd;
}

/* The drop-oldest verdict on what a resumed client (via) read into l: everything from 2 to
 * 1 + DROP_N exactly once, as an event or inside a gap; some gap, an event after one, the
 * newest kept; and the server counted exactly what the gaps reported. */
static void expect_dropped_oldest(const struct stalled *t, const struct ledger *l, const char *via)
{
    ck_assert_msg(l->events + l->gap_seqs == DROP_N,
                  "%s: %" PRIu64 " events + %" PRIu64 " in gaps, want %d", via, l->events,
                  l->gap_seqs, DROP_N);
    ck_assert_msg(l->gaps >= 1, "%s: no gap", via);
    ck_assert_msg(l->event_after_gap, "%s: no event followed a gap", via);
    ck_assert_msg(!l->last_was_gap, "%s: the newest event was dropped; drop-oldest keeps it", via);
    long long dropped = lg_server_stat(&t->s, "events_dropped_overflow");
    ck_assert_msg(dropped == (long long)l->gap_seqs,
                  "%s: events_dropped_overflow %lld, the gaps covered %" PRIu64, via, dropped,
                  l->gap_seqs);
    long long gaps = lg_server_stat(&t->s, "gaps_sent");
    ck_assert_msg(gaps == (long long)l->gaps, "%s: gaps_sent %lld, %" PRIu64 " gaps read", via,
                  gaps, l->gaps);
}

START_TEST(test_drop_oldest_sse)
{
    struct stalled t;
    const char *topic = "drop/sse";
    int fd = stalled_start(&t, "{" BASE_CONFIG ",\"client_queue\":{\"max_events\":8}}", topic,
                           NULL);

    flood(&t.k, topic, 2, DROP_N);
    const uint64_t last = 1 + DROP_N;
    wait_stat_ge(&t.s, "events_dropped_overflow", 1, 5000);
    long long depth = lg_server_stat(&t.s, "max_queue_depth");
    ck_assert_msg(depth >= 1 && depth <= 8, "max_queue_depth %lld outside 1..8", depth);

    struct lg_sse_client c;
    ck_assert_int_eq(lg_stall_sse_resume(&c, fd, 10000), 0);
    ck_assert_int_eq(c.status, 200);
    struct ledger l = {.next = 2};
    sse_read_through(&c, topic, t.prefix, last, &l);
    ck_assert_uint_eq(c.retry_ms, 3000);

    expect_dropped_oldest(&t, &l, "drop-oldest SSE");
    ck_assert_int_eq(lg_server_stat(&t.s, "events_dropped_lag"), 0);
    ck_assert_int_eq(lg_server_stat(&t.s, "clients_disconnected_slow"), 0);
    fprintf(stderr,
            "drop-oldest SSE: %" PRIu64 " events received, %" PRIu64 " gap(s) covering %" PRIu64
            "\n",
            l.events, l.gaps, l.gap_seqs);

    lg_sse_close(&c);
    stalled_stop(&t);
}
END_TEST

START_TEST(test_drop_oldest_ws)
{
    struct stalled t;
    struct lg_stall_ws w;
    const char *topic = "drop/ws";
    stalled_start(&t, "{" BASE_CONFIG ",\"client_queue\":{\"max_events\":8}}", topic, &w);

    flood(&t.k, topic, 2, DROP_N);
    const uint64_t last = 1 + DROP_N;
    wait_stat_ge(&t.s, "events_dropped_overflow", 1, 5000);

    struct lg_ws_client c;
    ck_assert_int_eq(lg_stall_ws_resume(&c, &w, 10000), 0);
    ck_assert_str_eq(c.protocol, "livegate.v1");
    struct ledger l = {.next = 2};
    ws_read_through(&c, topic, t.prefix, last, &l);
    expect_dropped_oldest(&t, &l, "drop-oldest WS");
    fprintf(stderr,
            "drop-oldest WS: %" PRIu64 " events received, %" PRIu64 " gap(s) covering %" PRIu64
            "\n",
            l.events, l.gaps, l.gap_seqs);

    lg_ws_close(&c);
    stalled_stop(&t);
}
END_TEST

/* ---- 2. disconnect --------------------------------------------------------------------------- */

#define DISC_N 400
#define DISC_CONFIG                                                                                \
    "{" BASE_CONFIG ",\"client_queue\":{\"max_events\":8},"                                        \
    "\"topic_rules\":[{\"match\":\"orders/*\",\"on_slow\":\"disconnect\"}]}"

/* After the slow-consumer disconnect the cursor stays valid: a new connection from last_id
 * (t->id1 when nothing came), over WebSocket when ws, else SSE with Last-Event-ID, reads every
 * following event from history into l: no gap, each of the DISC_N events exactly once. ended_by
 * says for the log line how the first connection ended. */
static void expect_resumed_from_history(struct stalled *t, const char *topic, const char *last_id,
                                        uint64_t last, struct ledger *l, bool ws,
                                        const char *ended_by)
{
    const char *from = last_id[0] ? last_id : t->id1;
    char path[1200];
    uint64_t resumed_from = l->next;
    if (ws) {
        struct lg_ws_client c;
        snprintf(path, sizeof path, "/ws?topic=%s&since=%s", topic, from);
        ck_assert_int_eq(lg_ws_open(&c, t->s.public_port, path, "livegate.v1"), 0);
        ws_read_through(&c, topic, t->prefix, last, l);
        lg_ws_close(&c);
    } else {
        struct lg_sse_client c;
        char hdr[1100];
        snprintf(hdr, sizeof hdr, "Last-Event-ID: %s\r\n", from);
        snprintf(path, sizeof path, "/sse?topic=%s", topic);
        ck_assert_int_eq(lg_sse_open(&c, t->s.public_port, path, hdr), 0);
        ck_assert_int_eq(c.status, 200);
        sse_read_through(&c, topic, t->prefix, last, l);
        lg_sse_close(&c);
    }
    ck_assert_uint_eq(l->gaps, 0);
    ck_assert_uint_eq(l->events, DISC_N);
    fprintf(stderr,
            "disconnect %s: %" PRIu64 " events before %s, %" PRIu64 " resumed from history\n",
            ws ? "WS" : "SSE", resumed_from - 2, ended_by, last + 1 - resumed_from);
}

START_TEST(test_disconnect_sse)
{
    struct stalled t;
    const char *topic = "orders/sse";
    int fd = stalled_start(&t, DISC_CONFIG, topic, NULL);

    flood(&t.k, topic, 2, DISC_N);
    const uint64_t last = 1 + DISC_N;
    wait_stat_eq(&t.s, "clients_disconnected_slow", 1, 5000);

    /* resume: events 2..K in order, then exactly the error notice, then the end */
    struct lg_sse_client c;
    ck_assert_int_eq(lg_stall_sse_resume(&c, fd, 10000), 0);
    ck_assert_int_eq(c.status, 200);
    struct ledger l = {.next = 2};
    char last_id[1024] = "";
    size_t error_at = 0;
    int64_t deadline = lg_now_ms() + READ_TIMEOUT_MS;
    for (;;) {
        struct lg_sse_event ev;
        size_t before = c.parsed;
        int rc = lg_sse_next(&c, &ev, lg_left_ms(deadline));
        ck_assert_msg(rc == 1, "stream %s before the error notice (at seq %" PRIu64 ")",
                      rc == 0 ? "timed out" : "ended", l.next);
        if (strcmp(ev.event, "error") == 0) {
            error_at = before;
            /* no id: line: the last id seen stays the stream's cursor */
            ck_assert_str_eq(ev.id, last_id);
            lg_sse_event_free(&ev);
            break;
        }
        ck_assert_str_eq(ev.event, "message");
        ledger_event(&l, id_seq(ev.id, t.prefix));
        snprintf(last_id, sizeof last_id, "%s", ev.id);
        lg_sse_event_free(&ev);
    }
    /* (a burst may fill the ring before the first write: then nothing came before it) */
    ck_assert_uint_lt(l.next - 1, last);
    /* the end of stream follows the notice */
    struct lg_sse_event ev;
    ck_assert_int_eq(lg_sse_next(&c, &ev, 5000), -1);
    ck_assert_msg(c.closed, "stream not closed after the error notice");
    static const char head[] = "event: error\ndata: {\"code\":\"slow_consumer\",\"message\":\"";
    static const char tail[] = "\"}\nretry: 3000\n\n";
    const char *notice = c.raw + error_at;
    size_t nlen = c.raw_len - error_at;
    ck_assert_msg(nlen > sizeof head + sizeof tail - 2 &&
                      memcmp(notice, head, sizeof head - 1) == 0 &&
                      memcmp(notice + nlen - (sizeof tail - 1), tail, sizeof tail - 1) == 0,
                  "the stream does not end with exactly the slow_consumer notice:\n%.*s",
                  (int)(nlen > 600 ? 600 : nlen), notice);
    ck_assert_msg(memmem(notice, nlen, "slow consumer", 13) != NULL, "reason: %.*s", (int)nlen,
                  notice);
    ck_assert_int_eq(c.retry_ms, 3000);
    lg_sse_close(&c);
    wait_stat_eq(&t.s, "clients_sse", 0, 5000);
    ck_assert_int_eq(lg_server_stat(&t.s, "clients_disconnected_slow"), 1);
    ck_assert_int_eq(lg_server_stat(&t.s, "gaps_sent"), 0);

    /* the cursor stays valid: Last-Event-ID gets every following event from history */
    expect_resumed_from_history(&t, topic, last_id, last, &l, false, "the notice");
    stalled_stop(&t);
}
END_TEST

START_TEST(test_disconnect_ws)
{
    struct stalled t;
    struct lg_stall_ws w;
    const char *topic = "orders/ws";
    stalled_start(&t, DISC_CONFIG, topic, &w);

    flood(&t.k, topic, 2, DISC_N);
    const uint64_t last = 1 + DISC_N;
    wait_stat_eq(&t.s, "clients_disconnected_slow", 1, 5000);

    struct lg_ws_client c;
    ck_assert_int_eq(lg_stall_ws_resume(&c, &w, 10000), 0);
    struct ledger l = {.next = 2};
    char last_id[1024] = "";
    int64_t deadline = lg_now_ms() + READ_TIMEOUT_MS;
    bool first = true;
    for (;;) {
        char *msg;
        int rc = lg_ws_next(&c, &msg, lg_left_ms(deadline));
        ck_assert_msg(rc != 0, "no close frame within %d ms (at seq %" PRIu64 ")", READ_TIMEOUT_MS,
                      l.next);
        if (rc < 0)
            break;
        json_t *root = json_loads(msg, 0, NULL);
        const char *type = json_string_value(json_object_get(root, "type"));
        ck_assert_ptr_nonnull(type);
        if (first && strcmp(type, "subscribed") == 0) {
            first = false;
        } else {
            ck_assert_msg(strcmp(type, "event") == 0, "unexpected ws message: %s", msg);
            const char *id = json_string_value(json_object_get(root, "id"));
            ck_assert_ptr_nonnull(id);
            ledger_event(&l, id_seq(id, t.prefix));
            snprintf(last_id, sizeof last_id, "%s", id);
        }
        json_decref(root);
        free(msg);
    }
    ck_assert_int_eq(c.close_code, 4000);
    ck_assert_msg(strstr(c.close_reason, "slow consumer") != NULL, "close reason: \"%s\"",
                  c.close_reason);
    ck_assert_uint_lt(l.next - 1, last);
    char ended_by[sizeof c.close_reason + 32];
    snprintf(ended_by, sizeof ended_by, "close 4000 (\"%s\")", c.close_reason);
    lg_ws_close(&c);
    wait_stat_eq(&t.s, "clients_ws", 0, 5000);
    ck_assert_int_eq(lg_server_stat(&t.s, "clients_disconnected_slow"), 1);

    /* resume with the last id received (or the one it started with) */
    expect_resumed_from_history(&t, topic, last_id, last, &l, true, ended_by);
    stalled_stop(&t);
}
END_TEST

/* ---- 2b. a replay is not a slow consumer ----------------------------------------------------- */

/*
 * docs/protocol.md: resuming from a cursor whose following events are still in history gives
 * "exactly those events, in order, then live ones". A backlog larger than client_queue.max_events
 * comes from history, not from a client that stopped reading, so it must not trigger the
 * slow-consumer policy (no gap for retained events, no slow_consumer disconnect). This is what
 * makes "resume with your cursor" after a disconnect (above) work at all.
 */
#define REPLAY_N 50

START_TEST(test_replay_backlog_beyond_queue)
{
    struct stalled t;
    const char *topic = "replay/x";
    char path[1200];
    stalled_warm(&t, "{" BASE_CONFIG ",\"client_queue\":{\"max_events\":8}}", topic);
    flood(&t.k, topic, 2, REPLAY_N);
    const uint64_t last = 1 + REPLAY_N;

    snprintf(path, sizeof path, "/sse?topic=%s&last_event_id=%s", topic, t.id1);
    struct lg_sse_client c;
    ck_assert_int_eq(lg_sse_open(&c, t.s.public_port, path, NULL), 0);
    ck_assert_int_eq(c.status, 200);
    struct ledger l = {.next = 2};
    sse_read_through(&c, topic, t.prefix, last, &l);
    ck_assert_msg(l.gaps == 0,
                  "resume from history got %" PRIu64 " gap(s) covering %" PRIu64
                  " retained event(s)",
                  l.gaps, l.gap_seqs);
    ck_assert_uint_eq(l.events, REPLAY_N);
    ck_assert_int_eq(lg_server_stat(&t.s, "events_dropped_overflow"), 0);
    lg_sse_close(&c);
    stalled_stop(&t);
}
END_TEST

/* ---- 3. conflate ----------------------------------------------------------------------------- */

#define CONF_ROUNDS 300

START_TEST(test_conflate)
{
    struct stalled t;
    const char *topic = "prices/x";
    static const char keys[3] = {'A', 'B', 'C'};
    char data[DATA_1K + 1], head[32], query[16];
    int fd = stalled_start(&t,
                           "{" BASE_CONFIG ",\"client_queue\":{\"max_events\":8},"
                           "\"topic_rules\":[{\"match\":\"prices/*\",\"on_slow\":\"conflate\"}]}",
                           topic, NULL);

    /* value = counter 1..900, keys round robin; event seq = counter + 1 */
    const int total = 3 * CONF_ROUNDS;
    for (int v = 1; v <= total; v++) {
        char key = keys[(v - 1) % 3];
        snprintf(head, sizeof head, "%c=%d;", key, v);
        snprintf(query, sizeof query, "key=%c", key);
        fill_data(data, sizeof data, head);
        ck_assert_uint_eq(publish_ok(&t.k, topic, query, data, NULL, 0), (uint64_t)v + 1);
    }
    wait_stat_ge(&t.s, "events_conflated", 1, 5000);

    struct lg_sse_client c;
    ck_assert_int_eq(lg_stall_sse_resume(&c, fd, 10000), 0);
    int lastv[3] = {0, 0, 0};
    uint64_t prev_seq = 1, received = 0;
    int64_t deadline = lg_now_ms() + READ_TIMEOUT_MS;
    while (prev_seq < (uint64_t)total + 1) {
        struct lg_sse_event ev;
        int rc = lg_sse_next(&c, &ev, lg_left_ms(deadline));
        ck_assert_msg(rc == 1, "stream %s at seq %" PRIu64, rc == 0 ? "timed out" : "ended",
                      prev_seq);
        ck_assert_msg(strcmp(ev.event, "message") == 0, "conflation sent a %s: %s", ev.event,
                      ev.data);
        uint64_t seq = id_seq(ev.id, t.prefix);
        char key;
        int v;
        ck_assert_msg(sscanf(ev.data, "%c=%d;", &key, &v) == 2, "data: %.40s", ev.data);
        ck_assert_msg(seq > prev_seq, "seq %" PRIu64 " after %" PRIu64, seq, prev_seq);
        ck_assert_uint_eq(seq, (uint64_t)v + 1);
        int ki = key - 'A';
        ck_assert_msg(ki >= 0 && ki < 3 && keys[(v - 1) % 3] == key, "value %d under key %c", v,
                      key);
        ck_assert_msg(v > lastv[ki], "key %c: value %d after %d", key, v, lastv[ki]);
        lastv[ki] = v;
        prev_seq = seq;
        received++;
        lg_sse_event_free(&ev);
    }
    /* every key's newest value arrived */
    ck_assert_int_eq(lastv[0], total - 2);
    ck_assert_int_eq(lastv[1], total - 1);
    ck_assert_int_eq(lastv[2], total);
    long long conflated = lg_server_stat(&t.s, "events_conflated");
    ck_assert_int_gt(conflated, 0);
    ck_assert_uint_lt(received, (uint64_t)total);
    /* only conflation removed events: none dropped, no gap */
    ck_assert_int_eq(lg_server_stat(&t.s, "events_dropped_overflow"), 0);
    ck_assert_int_eq(lg_server_stat(&t.s, "events_dropped_lag"), 0);
    ck_assert_int_eq(lg_server_stat(&t.s, "gaps_sent"), 0);
    ck_assert_int_eq((long long)received + conflated, total);
    fprintf(stderr, "conflate: %" PRIu64 " of %d events received, %lld conflated\n", received,
            total, conflated);
    lg_sse_close(&c);
    stalled_stop(&t);
}
END_TEST

/* ---- 4. lag bound ---------------------------------------------------------------------------- */

#define LAG_N 200

START_TEST(test_lag)
{
    struct stalled t;
    /* max_events/max_bytes far above what is published: only the age bound can drop */
    const char *topic = "lag/x";
    int fd = stalled_start(&t,
                           "{" BASE_CONFIG ",\"client_queue\":{\"max_events\":100000,"
                           "\"max_bytes\":67108864,\"max_lag_ms\":500}}",
                           topic, NULL);

    int64_t t0 = lg_now_ms();
    flood(&t.k, topic, 2, LAG_N);
    const uint64_t last = 1 + LAG_N;
    /* no more publishes: the worker's tick alone must notice the age */
    wait_stat_ge(&t.s, "events_dropped_lag", 1, 5000);
    int64_t waited = lg_now_ms() - t0;
    ck_assert_msg(waited >= 500, "lag drop after %lld ms, before max_lag_ms (500)",
                  (long long)waited);
    ck_assert_int_eq(lg_server_stat(&t.s, "events_dropped_overflow"), 0);
    ck_assert_int_eq(lg_server_stat(&t.s, "clients_disconnected_slow"), 0);

    struct lg_sse_client c;
    ck_assert_int_eq(lg_stall_sse_resume(&c, fd, 10000), 0);
    struct ledger l = {.next = 2};
    sse_read_through(&c, topic, t.prefix, last, &l);
    ck_assert_uint_eq(l.events + l.gap_seqs, LAG_N);
    ck_assert_uint_ge(l.gaps, 1);
    ck_assert_int_eq(lg_server_stat(&t.s, "events_dropped_lag"), (long long)l.gap_seqs);
    ck_assert_int_eq(lg_server_stat(&t.s, "gaps_sent"), (long long)l.gaps);
    fprintf(stderr,
            "lag: first lag drop seen %lld ms after the first publish; %" PRIu64
            " events received, %" PRIu64 " dropped for lag\n",
            (long long)waited, l.events, l.gap_seqs);
    lg_sse_close(&c);
    stalled_stop(&t);
}
END_TEST

/* ---- 5. bounded memory under a publish flood ------------------------------------------------- */

#define MEM_SUBS 100
#define MEM_EVENTS 20000
#define MEM_PUBLISHERS 4
/* The flood's time bound: a sanitizer slows each publish several times over (TSan on a busy
 * 2-core machine took over 20 s for the 20,000). */
#define MEM_FLOOD_MS (LG_BP_ASAN ? 60000 : 20000)
#define MEM_MAX_RETAINED (1 << 20) /* limits.max_retained_bytes: its minimum */
#define MEM_QUEUE_BYTES 65536
#define MEM_QUEUE_EVENTS 1024
#define MEM_WRITE_BATCH 4096

START_TEST(test_bounded_memory)
{
    char config[1024];
    snprintf(config, sizeof config,
             "{\"workers\":2,\"socket_send_buffer_bytes\":4096,"
             "\"write_batch_bytes\":%d,\"drain_timeout_ms\":1000,"
             "\"client_queue\":{\"max_events\":%d,\"max_bytes\":%d},"
             "\"history\":{\"max_events\":100000,\"max_bytes\":1048576},"
             "\"limits\":{\"max_retained_bytes\":%d}}",
             MEM_WRITE_BATCH, MEM_QUEUE_EVENTS, MEM_QUEUE_BYTES, MEM_MAX_RETAINED);
    struct lg_server s;
    lg_server_must_start(&s, config);
    struct lg_stall_ka k[MEM_PUBLISHERS];
    for (int i = 0; i < MEM_PUBLISHERS; i++)
        lg_stall_ka_init(&k[i], s.control_port);
    char path[1200];

    /* One stalled subscriber per topic: each ring pins events no other ring shares, so the
     * rings together could hold 100 x client_queue.max_bytes, far over the retained limit. */
    int fds[MEM_SUBS];
    for (int i = 0; i < MEM_SUBS; i++) {
        snprintf(path, sizeof path, "/sse?topic=flood/%d", i);
        fds[i] = lg_stall_sse_open(s.public_port, path, NULL, RCVBUF);
        ck_assert_int_ge(fds[i], 0);
    }
    wait_stat_eq(&s, "clients_sse", MEM_SUBS, 10000);
    long base_kib = lg_server_rss_kib(&s);
    ck_assert_int_gt(base_kib, 0);

    /*
     * The bound, from the config: the base (process, libraries, 100 idle connections) plus
     *   - limits.max_retained_bytes of live events (history, rings and hand-offs share them),
     *   - per stalled connection: its ring's slots (max_events pointers), one write batch
     *     held by lws when the socket takes only part of it, and 16 KiB for the connection
     *     state and lws buffers,
     *   - 8 MiB for the allocator (per-thread arenas keep freed chunks) and the control
     *     port's request buffers.
     * Unbounded, the 20000 events alone (about 3.3 KB each with their encodings) would be
     * some 65 MiB in history, and 100 rings could reference all of them.
     */
    const long per_conn_kib = (MEM_QUEUE_EVENTS * 8 + MEM_WRITE_BATCH) / 1024 + 16;
    const long bound_kib = base_kib + MEM_MAX_RETAINED / 1024 + MEM_SUBS * per_conn_kib + 8192;

    /* Publishers round robin over a few kept-alive connections and over the topics; each
     * answer is 201 or 503. A topic's own history gives way to the limit first; what the
     * stalled rings pin cannot, so once they hold the budget publishes are refused. */
    char data[DATA_1K + 1], head[32], topic[32];
    uint64_t ok = 0, refused = 0, ok_topic0 = 0;
    static uint64_t next_seq[MEM_SUBS];
    for (int i = 0; i < MEM_SUBS; i++)
        next_seq[i] = 1;
    long peak_kib = base_kib;
    long long peak_live = 0;
    int64_t deadline = lg_now_ms() + MEM_FLOOD_MS;
    int sent = 0;
    for (; sent < MEM_EVENTS && lg_now_ms() < deadline; sent++) {
        snprintf(head, sizeof head, "%d:", sent);
        fill_data(data, sizeof data, head);
        int t = sent % MEM_SUBS;
        snprintf(topic, sizeof topic, "flood/%d", t);
        uint64_t seq = 0;
        int st = publish_ka(&k[sent % MEM_PUBLISHERS], topic, NULL, data, &seq, NULL, 0);
        if (st == 201) {
            /* accepted publishes are numbered without holes: a refusal takes no seq */
            ck_assert_uint_eq(seq, next_seq[t]);
            next_seq[t]++;
            ok++;
            ok_topic0 += t == 0;
        } else {
            refused++;
        }
        if (sent % 500 == 0) {
            long rss = lg_server_rss_kib(&s);
            if (rss > peak_kib)
                peak_kib = rss;
            long long live = lg_server_stat(&s, "event_bytes_live");
            if (live > peak_live)
                peak_live = live;
        }
    }
    long end_kib = lg_server_rss_kib(&s);
    if (end_kib > peak_kib)
        peak_kib = end_kib;
    fprintf(stderr,
            "bounded memory: %d publishes in %lld ms: %" PRIu64 " accepted, %" PRIu64
            " refused (503); RSS base %ld KiB, peak %ld KiB, end %ld KiB, bound %ld KiB%s; "
            "peak event_bytes_live %lld (limit %d)\n",
            sent, (long long)(lg_now_ms() - (deadline - MEM_FLOOD_MS)), ok, refused, base_kib,
            peak_kib, end_kib, bound_kib, LG_BP_ASAN ? " (not asserted under a sanitizer)" : "",
            peak_live, MEM_MAX_RETAINED);
    ck_assert_int_eq(sent, MEM_EVENTS);
    ck_assert_msg(refused > 0, "the publisher never saw a 503");
    ck_assert_msg(ok > 0, "no publish was accepted");
    if (!LG_BP_ASAN) /* a sanitizer's allocator: RSS says nothing there (above) */
        ck_assert_msg(peak_kib <= bound_kib, "RSS %ld KiB over the bound %ld KiB", peak_kib,
                      bound_kib);

    /* the counters agree with what the publishers saw */
    struct lg_stats st;
    ck_assert_int_eq(lg_stats_read(s.control_port, &st), 0);
    ck_assert_int_eq(lg_stats_value(&st, "events_published"), (long long)ok);
    ck_assert_int_eq(lg_stats_value(&st, "publishes_refused"), (long long)refused);
    long long live = lg_stats_value(&st, "event_bytes_live");
    if (live > peak_live)
        peak_live = live;
    /* an event is counted when created and freed at once if it does not fit: allow one in
     * flight per control thread over the limit */
    ck_assert_msg(peak_live <= MEM_MAX_RETAINED + 2 * 4 * DATA_1K,
                  "event_bytes_live %lld over limits.max_retained_bytes %d", peak_live,
                  MEM_MAX_RETAINED);
    ck_assert_int_le(lg_stats_value(&st, "max_queue_depth"), MEM_QUEUE_EVENTS);

    /* no silent loss: one stalled subscriber, resumed, accounts for every accepted event */
    struct lg_sse_client c;
    ck_assert_int_eq(lg_stall_sse_resume(&c, fds[0], 10000), 0);
    char id0[256], prefix[256];
    uint64_t seq0 = 0;
    ck_assert_int_eq(publish_ka(&k[0], "flood/0", NULL, "last", &seq0, id0, sizeof id0), 201);
    id_prefix(id0, prefix, sizeof prefix);
    struct ledger l = {.next = 1};
    sse_read_through(&c, "flood/0", prefix, seq0, &l);
    ck_assert_uint_eq(l.events + l.gap_seqs, ok_topic0 + 1);
    lg_sse_close(&c);
    for (int i = 1; i < MEM_SUBS; i++)
        close(fds[i]);
    for (int i = 0; i < MEM_PUBLISHERS; i++)
        lg_stall_ka_close(&k[i]);
    lg_server_must_stop(&s);
}
END_TEST

/* ---- 5b. the retained-bytes limit counts what an event costs --------------------------------- */

/*
 * limits.max_retained_bytes bounds "bytes of all live events" (event_bytes_live). An event costs
 * its data plus its encodings (SSE frame, JSON object with escaping): for data of quotes, about
 * four times the body. A publish that fits by its body but not by its cost must be refused,
 * or the limit is not a limit.
 */
#define QUOTES_BYTES 65000

START_TEST(test_retained_limit_counts_encodings)
{
    struct lg_server s;
    lg_server_must_start(&s, "{\"drain_timeout_ms\":1000,\"limits\":{\"max_retained_bytes\":1048576}}");
    struct lg_stall_ka k;
    lg_stall_ka_init(&k, s.control_port);
    char *quotes = malloc(QUOTES_BYTES + 1), small[1001];
    ck_assert_ptr_nonnull(quotes);
    memset(quotes, '"', QUOTES_BYTES);
    quotes[QUOTES_BYTES] = '\0';
    fill_data(small, sizeof small, "s");
    const long long limit = 1048576;
    /* fill up to just under limit - QUOTES_BYTES, so the next quote event fits by its body */
    long long live = 0;
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(publish_ka(&k, "quotes", NULL, quotes, NULL, NULL, 0), 201);
        live = lg_server_stat(&s, "event_bytes_live");
        ck_assert_int_le(live, limit);
    }
    for (int i = 0; i < 1000 && live <= limit - QUOTES_BYTES - 10000; i++) {
        ck_assert_int_eq(publish_ka(&k, "quotes", NULL, small, NULL, NULL, 0), 201);
        live = lg_server_stat(&s, "event_bytes_live");
    }
    ck_assert_int_le(live, limit - QUOTES_BYTES);
    int st = publish_ka(&k, "quotes", NULL, quotes, NULL, NULL, 0);
    long long after = lg_server_stat(&s, "event_bytes_live");
    fprintf(stderr,
            "retained limit: live %lld before a %d-byte quote event, %d, live %lld after "
            "(limit %lld)\n",
            live, QUOTES_BYTES, st, after, limit);
    ck_assert_msg(after <= limit,
                  "publish answered %d and event_bytes_live is %lld, over "
                  "limits.max_retained_bytes %lld (it was %lld before)",
                  st, after, limit, live);
    free(quotes);
    lg_stall_ka_close(&k);
    lg_server_must_stop(&s);
}
END_TEST

/* ---- 6. isolation ---------------------------------------------------------------------------- */

#define ISO_STALLED 100
#define ISO_HEALTHY 100
#define ISO_EVENTS 2000
#define ISO_BATCH 100

/* Read what is available on healthy subscriber i without blocking; every item must be the
 * next event. Return value: false once the stream ended. */
static bool iso_drain(struct lg_sse_client *c, const char *prefix, uint64_t *next, int i)
{
    for (;;) {
        struct lg_sse_event ev;
        int rc = lg_sse_next(c, &ev, 0);
        if (rc == 0)
            break;
        ck_assert_msg(rc == 1, "healthy subscriber %d: stream ended at seq %" PRIu64, i, *next);
        ck_assert_msg(strcmp(ev.event, "message") == 0,
                      "healthy subscriber %d got a %s at seq %" PRIu64 ": %s", i, ev.event, *next,
                      ev.data);
        uint64_t seq = id_seq(ev.id, prefix);
        ck_assert_msg(seq == *next,
                      "healthy subscriber %d: seq %" PRIu64 " where %" PRIu64 " was due", i, seq,
                      *next);
        (*next)++;
        lg_sse_event_free(&ev);
    }
    /* keep the buffer small: drop what has been parsed (every event has its own id: line) */
    if (c->parsed > 0 && c->parsed == c->raw_len) {
        c->raw_len = c->parsed = 0;
        c->raw[0] = '\0';
    }
    return true;
}

START_TEST(test_isolation)
{
    struct stalled t;
    const char *topic = "iso";
    char path[1200];
    /* a ring of 256 events: the stalled subscribers overflow it, the healthy ones (at most one
     * batch behind) never do */
    stalled_warm(&t,
                 "{\"workers\":2,\"socket_send_buffer_bytes\":4096,"
                 "\"drain_timeout_ms\":1000,\"client_queue\":{\"max_events\":256}}",
                 topic);
    snprintf(path, sizeof path, "/sse?topic=%s&last_event_id=%s", topic, t.id1);

    int stalled[ISO_STALLED];
    for (int i = 0; i < ISO_STALLED; i++) {
        stalled[i] = lg_stall_sse_open(t.s.public_port, path, NULL, RCVBUF);
        ck_assert_int_ge(stalled[i], 0);
    }
    static struct lg_sse_client healthy[ISO_HEALTHY];
    uint64_t next[ISO_HEALTHY];
    struct pollfd pfd[ISO_HEALTHY];
    for (int i = 0; i < ISO_HEALTHY; i++) {
        ck_assert_int_eq(lg_sse_open(&healthy[i], t.s.public_port, path, NULL), 0);
        ck_assert_int_eq(healthy[i].status, 200);
        next[i] = 2;
        pfd[i] = (struct pollfd){.fd = healthy[i].fd, .events = POLLIN};
    }
    wait_stat_eq(&t.s, "clients_sse", ISO_STALLED + ISO_HEALTHY, 10000);

    /* Publish in batches of ISO_BATCH; before each batch, wait until every healthy subscriber
     * has everything published so far. A server that let the stalled subscribers hold up the
     * others would never get there (bounded by the deadline). */
    char data[201], body_item[320];
    size_t cap = ISO_BATCH * sizeof body_item + 16;
    char *body = malloc(cap);
    ck_assert_ptr_nonnull(body);
    uint64_t published = 1;
    int64_t deadline = lg_now_ms() + 60000;
    while (published < 1 + ISO_EVENTS) {
        size_t len = 0;
        body[len++] = '[';
        for (int j = 0; j < ISO_BATCH; j++) {
            char head[32];
            snprintf(head, sizeof head, "%" PRIu64 ":", published + 1 + (uint64_t)j);
            fill_data(data, sizeof data, head);
            len += (size_t)snprintf(body + len, cap - len, "%s{\"topic\":\"%s\",\"data\":\"%s\"}",
                                    j ? "," : "", topic, data);
        }
        body[len++] = ']';
        struct lg_http_response r;
        ck_assert_int_eq(lg_stall_ka_request(&t.k, "POST", "/v1/publish",
                                             "Content-Type: application/json\r\n", body, len, &r,
                                             10000),
                         0);
        ck_assert_msg(r.status == 200, "batch answered %d: %s", r.status, r.body);
        lg_http_response_free(&r);
        published += ISO_BATCH;

        for (;;) {
            int behind = 0;
            for (int i = 0; i < ISO_HEALTHY; i++)
                behind += next[i] <= published;
            if (behind == 0)
                break;
            int64_t left = deadline - lg_now_ms();
            ck_assert_msg(left > 0, "%d healthy subscribers still behind seq %" PRIu64, behind,
                          published);
            int n = poll(pfd, ISO_HEALTHY, (int)(left < 1000 ? left : 1000));
            ck_assert_int_ge(n, 0);
            for (int i = 0; i < ISO_HEALTHY && n > 0; i++) {
                if (pfd[i].revents) {
                    iso_drain(&healthy[i], t.prefix, &next[i], i);
                    n--;
                }
            }
        }
    }
    free(body);
    for (int i = 0; i < ISO_HEALTHY; i++)
        ck_assert_uint_eq(next[i], 2 + ISO_EVENTS);
    /* the stalled ones really were stalled: their rings overflowed */
    long long dropped = lg_server_stat(&t.s, "events_dropped_overflow");
    ck_assert_int_gt(dropped, 0);
    ck_assert_int_eq(lg_server_stat(&t.s, "clients_sse"), ISO_STALLED + ISO_HEALTHY);
    fprintf(stderr,
            "isolation: %d healthy subscribers got all %d events in order; the %d "
            "stalled ones dropped %lld\n",
            ISO_HEALTHY, ISO_EVENTS, ISO_STALLED, dropped);
    for (int i = 0; i < ISO_HEALTHY; i++)
        lg_sse_close(&healthy[i]);
    for (int i = 0; i < ISO_STALLED; i++)
        close(stalled[i]);
    stalled_stop(&t);
}
END_TEST

static Suite *backpressure_suite(void)
{
    Suite *s = suite_create("backpressure");
    struct {
        const char *name;
        const TTest *test;
    } cases[] = {
        {"drop_oldest_sse", test_drop_oldest_sse},
        {"drop_oldest_ws", test_drop_oldest_ws},
        {"disconnect_sse", test_disconnect_sse},
        {"disconnect_ws", test_disconnect_ws},
        {"replay_backlog_beyond_queue", test_replay_backlog_beyond_queue},
        {"conflate", test_conflate},
        {"lag", test_lag},
        {"bounded_memory", test_bounded_memory},
        {"retained_limit_counts_encodings", test_retained_limit_counts_encodings},
        {"isolation", test_isolation},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_set_timeout(tc, 120); /* bounded_memory: a 60 s flood under a sanitizer */
        tcase_add_test(tc, cases[i].test);
        suite_add_tcase(s, tc);
    }
    return s;
}

LG_CHECK_MAIN(backpressure_suite)
