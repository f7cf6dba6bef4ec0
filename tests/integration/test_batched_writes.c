/*
 * test_batched_writes.c - the sweep's writes through one io_uring submission per batch
 * (batched_writes, src/public/send_batch.h), end to end: every SSE and WebSocket subscriber
 * of a fan-out gets exactly the published events, in order, with batching on and off; a
 * subscriber whose socket is full takes the rest of its batch later (lws keeps it), while the
 * others go on; held long-polls are answered in the batches too, and their keep-alive
 * connections go on to the next poll; the counters say which path ran.
 *
 * A kernel that refuses io_uring (a seccomp filter, an old kernel) runs the gateway with a send()
 * per socket: then the gateway must have said so in its log, and the counters stay 0.
 */
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "lg_test.h"

#include "check_main.h"

#define SSE_SUBS 40
#define WS_SUBS 40
#define EVENTS 30
#define WAIT_MS 10000
#define REFUSED_LOG "the kernel refused io_uring"

/* The next event on an SSE stream must be topic's seq with data "d<seq>". */
static void expect_sse_event(struct lg_sse_client *c, const char *prefix, int seq)
{
    struct lg_sse_event ev;
    ck_assert_int_eq(lg_sse_next(c, &ev, WAIT_MS), 1);
    char id[192], data[32];
    snprintf(id, sizeof id, "%s%d", prefix, seq);
    snprintf(data, sizeof data, "d%d", seq);
    ck_assert_str_eq(ev.id, id);
    ck_assert_str_eq(ev.data, data);
    lg_sse_event_free(&ev);
}

/* The next message on a WebSocket must be the event topic's seq with data "d<seq>". */
static void expect_ws_event(struct lg_ws_client *c, const char *prefix, int seq)
{
    char *m = NULL;
    ck_assert_int_eq(lg_ws_next(c, &m, WAIT_MS), 1);
    json_t *j = json_loads(m, 0, NULL);
    ck_assert_msg(j != NULL, "not JSON: %s", m);
    char id[192], data[32];
    snprintf(id, sizeof id, "%s%d", prefix, seq);
    snprintf(data, sizeof data, "d%d", seq);
    ck_assert_str_eq(json_string_value(json_object_get(j, "type")), "event");
    ck_assert_str_eq(json_string_value(json_object_get(j, "id")), id);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "seq")), seq);
    ck_assert_str_eq(json_string_value(json_object_get(j, "data")), data);
    json_decref(j);
    free(m);
}

/* "topic@epoch:" of the events published to topic, from the id of the last one. */
static void id_prefix(const char *topic, const char *last_id, char *out, size_t cap)
{
    char epoch[16];
    lg_epoch_of(last_id, epoch, sizeof epoch);
    snprintf(out, cap, "%s@%s:", topic, epoch);
}

/* SSE_SUBS SSE and WS_SUBS WebSocket subscribers of one topic, EVENTS events: each gets every
 * event, once, in order. Return value: the server's writes_batched. */
static long long fan_out(struct lg_server *s, const char *topic)
{
    static struct lg_sse_client sse[SSE_SUBS];
    static struct lg_ws_client ws[WS_SUBS];
    char path[128];
    snprintf(path, sizeof path, "/sse?topic=%s", topic);
    for (int i = 0; i < SSE_SUBS; i++)
        lg_sse_must_open(&sse[i], s->public_port, path, NULL);
    snprintf(path, sizeof path, "/ws?topic=%s", topic);
    for (int i = 0; i < WS_SUBS; i++)
        lg_ws_must_subscribe(&ws[i], s->public_port, path, NULL, NULL, 0);

    char last[256], prefix[160];
    lg_publish_n(s->control_port, topic, 1, EVENTS, last, sizeof last);
    id_prefix(topic, last, prefix, sizeof prefix);
    for (int i = 0; i < SSE_SUBS; i++) {
        for (int seq = 1; seq <= EVENTS; seq++)
            expect_sse_event(&sse[i], prefix, seq);
        lg_sse_expect_no_event(&sse[i], 0);
        lg_sse_close(&sse[i]);
    }
    for (int i = 0; i < WS_SUBS; i++) {
        for (int seq = 1; seq <= EVENTS; seq++)
            expect_ws_event(&ws[i], prefix, seq);
        lg_ws_close(&ws[i]);
    }
    ck_assert_int_eq(lg_server_stat(s, "events_delivered"), (SSE_SUBS + WS_SUBS) * EVENTS);
    return lg_server_stat(s, "writes_batched");
}

/* The answer to the poll sent on fd: exactly one event, topic's seq with data "d<seq>", and
 * the cursor at it. */
static void expect_poll_answer(int fd, const char *prefix, int seq)
{
    struct lg_http_response r;
    ck_assert_int_eq(lg_http_read_response(fd, &r, WAIT_MS), 0);
    ck_assert_int_eq(r.status, 200);
    json_t *j = json_loadb(r.body, r.body_len, 0, NULL);
    ck_assert_msg(j != NULL, "not JSON: %s", r.body);
    json_t *events = json_object_get(j, "events");
    ck_assert_uint_eq(json_array_size(events), 1);
    json_t *ev = json_array_get(events, 0);
    char id[192], data[32];
    snprintf(id, sizeof id, "%s%d", prefix, seq);
    snprintf(data, sizeof data, "d%d", seq);
    ck_assert_str_eq(json_string_value(json_object_get(ev, "id")), id);
    ck_assert_str_eq(json_string_value(json_object_get(ev, "data")), data);
    ck_assert_str_eq(json_string_value(json_object_get(j, "cursor")), id);
    json_decref(j);
    lg_http_response_free(&r);
}

/* Send a poll of topic on fd: from now (cursor NULL) or after cursor, held up to 10 s. */
static void send_poll(int fd, const char *topic, const char *cursor)
{
    char req[512];
    int n = snprintf(req, sizeof req, "GET /poll?topic=%s%s%s&timeout=10 HTTP/1.1\r\nHost: x\r\n\r\n",
                     topic, cursor ? "&since=" : "", cursor ? cursor : "");
    ck_assert_int_eq(lg_send_all(fd, req, (size_t)n), 0);
}

/* POLLS held long-polls of one topic, answered by an event; on the same keep-alive
 * connections, POLLS more held from its cursor, answered by the next. Return value: the
 * server's writes_batched. */
static long long held_polls(struct lg_server *s, const char *topic)
{
    enum { POLLS = 30 };
    int fds[POLLS];
    long long delivered = lg_server_stat(s, "events_delivered");
    for (int i = 0; i < POLLS; i++) {
        fds[i] = lg_tcp_connect(s->public_port);
        ck_assert_int_ge(fds[i], 0);
        send_poll(fds[i], topic, NULL);
    }
    ck_assert(lg_wait_stat(s->control_port, "clients_poll", POLLS, WAIT_MS));
    char last[256], prefix[160];
    lg_publish_n(s->control_port, topic, 1, 1, last, sizeof last);
    id_prefix(topic, last, prefix, sizeof prefix);
    for (int i = 0; i < POLLS; i++) {
        expect_poll_answer(fds[i], prefix, 1);
        send_poll(fds[i], topic, last);
    }
    ck_assert(lg_wait_stat(s->control_port, "clients_poll", POLLS, WAIT_MS));
    lg_publish_n(s->control_port, topic, 2, 2, last, sizeof last);
    for (int i = 0; i < POLLS; i++) {
        expect_poll_answer(fds[i], prefix, 2);
        close(fds[i]);
    }
    ck_assert_int_eq(lg_server_stat(s, "events_delivered") - delivered, 2 * POLLS);
    ck_assert_int_eq(lg_server_stat(s, "requests_rejected"), 0);
    return lg_server_stat(s, "writes_batched");
}

START_TEST(test_fan_out_batched)
{
    struct lg_server s;
    lg_server_must_start(&s, "{\"workers\":1}");
    long long batched = fan_out(&s, "batched");
    long long batches = lg_server_stat(&s, "write_batches");
    lg_server_pump_log(&s);
    if (lg_server_wait_log(&s, REFUSED_LOG, 0)) {
        ck_assert_int_eq(batched, 0);
        ck_assert_int_eq(batches, 0);
    } else {
        /* Every subscriber was written at least once, and through the batches. */
        ck_assert_int_ge(batched, SSE_SUBS + WS_SUBS);
        ck_assert_int_ge(batches, 1);
        ck_assert_int_le(batches, batched);
    }
    lg_server_must_stop(&s);
}
END_TEST

START_TEST(test_fan_out_unbatched)
{
    struct lg_server s;
    lg_server_must_start(&s, "{\"workers\":1,\"batched_writes\":false}");
    ck_assert_int_eq(fan_out(&s, "unbatched"), 0);
    ck_assert_int_eq(held_polls(&s, "polled"), 0);
    ck_assert_int_eq(lg_server_stat(&s, "write_batches"), 0);
    lg_server_pump_log(&s);
    ck_assert(!lg_server_wait_log(&s, REFUSED_LOG, 0));
    lg_server_must_stop(&s);
}
END_TEST

/* A subscriber that stops reading while its batches go out: its socket takes part of a
 * batch, lws keeps the rest, and once it reads again it gets every event in order; a reading
 * subscriber of the same topic meanwhile gets every event at once. */
START_TEST(test_full_socket_takes_the_rest_later)
{
    enum { N = 300, DATA = 1000 };
    struct lg_server s;
    lg_server_must_start(&s, "{\"workers\":1,\"socket_send_buffer_bytes\":4096,"
                             "\"write_batch_bytes\":16384,"
                             "\"client_queue\":{\"max_events\":1000}}");
    const char *topic = "full";
    int stalled = lg_stall_sse_open(s.public_port, "/sse?topic=full", NULL, 4096);
    ck_assert_int_ge(stalled, 0);
    struct lg_sse_client reader;
    lg_sse_must_open(&reader, s.public_port, "/sse?topic=full", NULL);
    ck_assert(lg_wait_stat(s.control_port, "clients_sse", 2, WAIT_MS));

    static char data[DATA + 16];
    char last[256], prefix[160];
    for (int seq = 1; seq <= N; seq++) {
        int n = snprintf(data, sizeof data, "d%d-", seq);
        memset(data + n, 'x', DATA - (size_t)n);
        data[DATA] = '\0';
        ck_assert_int_eq(lg_publish(s.control_port, topic, data, last, sizeof last), 201);
        /* the reader keeps up meanwhile: its events come while the stalled socket is full */
        struct lg_sse_event ev;
        ck_assert_int_eq(lg_sse_next(&reader, &ev, WAIT_MS), 1);
        ck_assert_uint_eq(lg_seq_of(ev.id), (uint64_t)seq);
        ck_assert_uint_eq(ev.data_len, DATA);
        ck_assert_mem_eq(ev.data, data, DATA);
        lg_sse_event_free(&ev);
    }
    id_prefix(topic, last, prefix, sizeof prefix);

    struct lg_sse_client late;
    ck_assert_int_eq(lg_stall_sse_resume(&late, stalled, WAIT_MS), 0);
    ck_assert_int_eq(late.status, 200);
    for (int seq = 1; seq <= N; seq++) {
        struct lg_sse_event ev;
        ck_assert_int_eq(lg_sse_next(&late, &ev, WAIT_MS), 1);
        char id[192];
        snprintf(id, sizeof id, "%s%d", prefix, seq);
        ck_assert_str_eq(ev.id, id);
        int n = snprintf(data, sizeof data, "d%d-", seq);
        ck_assert_uint_eq(ev.data_len, DATA);
        ck_assert_mem_eq(ev.data, data, (size_t)n);
        lg_sse_event_free(&ev);
    }
    ck_assert_int_eq(lg_server_stat(&s, "events_dropped_overflow"), 0);
    ck_assert_int_eq(lg_server_stat(&s, "clients_disconnected_slow"), 0);
    ck_assert_int_eq(lg_server_stat(&s, "events_delivered"), 2 * N);
    lg_server_pump_log(&s);
    if (!lg_server_wait_log(&s, REFUSED_LOG, 0))
        ck_assert_int_ge(lg_server_stat(&s, "writes_batched"), 1);
    lg_sse_close(&reader);
    lg_sse_close(&late);
    lg_server_must_stop(&s);
}
END_TEST

START_TEST(test_held_polls_answered_in_batches)
{
    struct lg_server s;
    lg_server_must_start(&s, "{\"workers\":1}");
    long long batched = held_polls(&s, "polled");
    lg_server_pump_log(&s);
    if (lg_server_wait_log(&s, REFUSED_LOG, 0))
        ck_assert_int_eq(batched, 0);
    else
        ck_assert_int_eq(batched, 2 * 30); /* every answer went in a batch */
    lg_server_must_stop(&s);
}
END_TEST

/* A subscriber alone on its topic, each event published once the last was delivered: every
 * pass writes one connection, a batch of one, which goes out as a plain send(). */
START_TEST(test_a_batch_of_one_is_sent_alone)
{
    enum { ONE_BY_ONE = 5 };
    struct lg_server s;
    lg_server_must_start(&s, "{\"workers\":1}");
    struct lg_sse_client c;
    lg_sse_must_open(&c, s.public_port, "/sse?topic=alone", NULL);
    char last[256], prefix[160];
    for (int seq = 1; seq <= ONE_BY_ONE; seq++) {
        lg_publish_n(s.control_port, "alone", seq, seq, last, sizeof last);
        id_prefix("alone", last, prefix, sizeof prefix);
        expect_sse_event(&c, prefix, seq);
    }
    lg_sse_expect_no_event(&c, 0);
    long long batched = lg_server_stat(&s, "writes_batched");
    long long batches = lg_server_stat(&s, "write_batches");
    lg_server_pump_log(&s);
    if (lg_server_wait_log(&s, REFUSED_LOG, 0)) {
        ck_assert_int_eq(batched, 0);
    } else {
        ck_assert_int_eq(batched, ONE_BY_ONE);
        ck_assert_int_eq(batches, ONE_BY_ONE); /* each its own batch */
    }
    lg_sse_close(&c);
    lg_server_must_stop(&s);
}
END_TEST


LG_CHECK_MAIN_TCASE("batched_writes", "batched_writes", 120, test_fan_out_batched,
                    test_fan_out_unbatched, test_full_socket_takes_the_rest_later,
                    test_held_polls_answered_in_batches, test_a_batch_of_one_is_sent_alone)
