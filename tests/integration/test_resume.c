/*
 * test_resume.c - the one cursor across transports: switching WS -> long-poll -> SSE loses and
 * repeats nothing; a resume past the retained history gets a gap with the exact missing range;
 * a restarted server (new epoch) gets a reset; concurrent publishers on several topics never
 * break per-topic order on any transport.
 */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "lg_test.h"

#include "check_main.h"

#define WAIT_MS 5000
#define RETRY "retry: 3000\n\n"

static void copy(char *dst, size_t cap, const char *src)
{
    size_t n = strlen(src) < cap - 1 ? strlen(src) : cap - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

/* Replace or add topic's entry in a cursor string ("a@E:1,b@E:2"), keeping entry order. */
static void cursor_set(char *cursor, size_t cap, const char *id)
{
    char topic[128];
    ck_assert_int_eq(lg_id_parse(id, topic, sizeof topic, NULL, 0, NULL), 0);
    char out[2048] = "";
    bool done = false;
    char *save = NULL, *copy_of = strdup(cursor);
    for (char *e = strtok_r(copy_of, ",", &save); e; e = strtok_r(NULL, ",", &save)) {
        char et[128];
        ck_assert_int_eq(lg_id_parse(e, et, sizeof et, NULL, 0, NULL), 0);
        const char *use = strcmp(et, topic) == 0 ? (done = true, id) : e;
        if (out[0])
            strcat(out, ",");
        strncat(out, use, sizeof out - strlen(out) - 1);
    }
    if (!done) {
        if (out[0])
            strcat(out, ",");
        strncat(out, id, sizeof out - strlen(out) - 1);
    }
    free(copy_of);
    copy(cursor, cap, out);
}

/* ---- What one client has seen, per topic -------------------------------------------------- */

#define MAX_TOPICS 4
#define MAX_SEQ 512

struct seen {
    const char *topics[MAX_TOPICS];
    int ntopics;
    int count[MAX_TOPICS][MAX_SEQ + 1]; /* how often each seq arrived */
    unsigned long long last[MAX_TOPICS]; /* newest seq per topic */
    char epoch[16];
};

static int topic_index(struct seen *s, const char *topic)
{
    for (int i = 0; i < s->ntopics; i++)
        if (strcmp(s->topics[i], topic) == 0)
            return i;
    ck_abort_msg("event from a topic not subscribed: %s", topic);
    return -1;
}

/* Record an event: per-topic seq must be exactly the next one, data "<topic>-d<seq>". */
static void record(struct seen *s, const char *via, const char *topic, unsigned long long seq,
                   const char *data)
{
    int t = topic_index(s, topic);
    ck_assert_msg(seq >= 1 && seq <= MAX_SEQ, "%s: seq %llu", via, seq);
    s->count[t][seq]++;
    ck_assert_msg(seq == s->last[t] + 1, "%s: %s seq %llu after %llu (%s)", via, topic, seq,
                  s->last[t], seq <= s->last[t] ? "duplicate or reordered" : "gap");
    s->last[t] = seq;
    char want[160];
    snprintf(want, sizeof want, "%s-d%llu", topic, seq);
    ck_assert_msg(strcmp(data, want) == 0, "%s: %s seq %llu carries %s", via, topic, seq, data);
}

/* Every topic has exactly seqs 1..n, each once. */
static void expect_exactly(const struct seen *s, const unsigned long long *n)
{
    for (int t = 0; t < s->ntopics; t++) {
        ck_assert_msg(s->last[t] == n[t], "%s ends at %llu, want %llu", s->topics[t], s->last[t],
                      n[t]);
        for (unsigned long long q = 1; q <= n[t]; q++)
            ck_assert_msg(s->count[t][q] == 1, "%s seq %llu arrived %d times", s->topics[t], q,
                          s->count[t][q]);
    }
}

/* The SSE id must be the cursor of the stream after this event. */
static void expect_sse_cursor(const struct seen *s, const char *id)
{
    char want[1024] = "";
    for (int t = 0; t < s->ntopics; t++) {
        char e[160];
        snprintf(e, sizeof e, "%s%s@%s:%llu", t ? "," : "", s->topics[t], s->epoch, s->last[t]);
        strcat(want, e);
    }
    ck_assert_msg(strcmp(id, want) == 0, "SSE id %s, want the cursor %s", id, want);
}

/* The next WS message must arrive and be the subscribed answer; returns it (caller frees). */
static char *next_subscribed(struct lg_ws_client *ws)
{
    char *m = NULL;
    ck_assert_int_eq(lg_ws_next(ws, &m, WAIT_MS), 1);
    ck_assert_ptr_nonnull(strstr(m, "\"type\":\"subscribed\""));
    return m;
}

/* Read one WS event message into the record; returns its id in id_out. */
static void ws_take(struct lg_ws_client *c, struct seen *s, char *id_out, size_t cap)
{
    char *m = NULL;
    int rc = lg_ws_next(c, &m, WAIT_MS);
    ck_assert_msg(rc == 1, "ws: no event (rc %d, close %d)", rc, c->close_code);
    json_t *o = json_loads(m, 0, NULL);
    ck_assert_msg(o && strcmp(json_string_value(json_object_get(o, "type")), "event") == 0,
                  "ws: not an event: %s", m);
    const char *topic = json_string_value(json_object_get(o, "topic"));
    const char *id = json_string_value(json_object_get(o, "id"));
    unsigned long long seq = (unsigned long long)json_integer_value(json_object_get(o, "seq"));
    char want_id[256];
    snprintf(want_id, sizeof want_id, "%s@%s:%llu", topic, s->epoch, seq);
    ck_assert_str_eq(id, want_id);
    record(s, "ws", topic, seq, json_string_value(json_object_get(o, "data")));
    copy(id_out, cap, id);
    json_decref(o);
    free(m);
}

/* Resume path over SSE with Last-Event-ID: from (it answers 200 and sends its retry: line). */
static void sse_resume(struct lg_sse_client *sse, uint16_t port, const char *path,
                       const char *from)
{
    char hdr[1100];
    snprintf(hdr, sizeof hdr, "Last-Event-ID: %s\r\n", from);
    lg_sse_must_open(sse, port, path, hdr);
}

/* One SSE event into the record: its id must be the cursor after it; the event is freed. */
static void sse_take(struct seen *s, struct lg_sse_event *ev, const char *topic,
                     unsigned long long seq)
{
    record(s, "sse", topic, seq, ev->data);
    expect_sse_cursor(s, ev->id);
    lg_sse_event_free(ev);
}

/* Nothing more arrives on the stream within 200 ms; then it is closed. */
static void sse_expect_quiet_then_close(struct lg_sse_client *sse)
{
    struct lg_sse_event ev;
    ck_assert_int_eq(lg_sse_next(sse, &ev, 200), 0);
    lg_sse_close(sse);
}

/* One poll: record its events, return how many, and put its cursor in cursor. */
static size_t poll_take(uint16_t port, struct seen *s, const char *topics_query, char *cursor,
                        size_t cap, int timeout_s)
{
    char path[2048];
    snprintf(path, sizeof path, "/poll?%s&since=%s&timeout=%d", topics_query, cursor, timeout_s);
    struct lg_http_response r;
    ck_assert_int_eq(lg_http_request(port, "GET", path, NULL, NULL, 0, &r, 15000), 0);
    ck_assert_msg(r.status == 200, "poll %s: %d %s", path, r.status, r.body);
    json_t *o = json_loadb(r.body, r.body_len, 0, NULL);
    json_t *evs = json_object_get(o, "events");
    ck_assert(json_is_array(evs));
    size_t i;
    json_t *ev;
    json_array_foreach(evs, i, ev) {
        ck_assert_str_eq(json_string_value(json_object_get(ev, "type")), "event");
        record(s, "poll", json_string_value(json_object_get(ev, "topic")),
               (unsigned long long)json_integer_value(json_object_get(ev, "seq")),
               json_string_value(json_object_get(ev, "data")));
    }
    copy(cursor, cap, json_string_value(json_object_get(o, "cursor")));
    size_t n = json_array_size(evs);
    json_decref(o);
    lg_http_response_free(&r);
    return n;
}

/* ---- Cross-transport ------------------------------------------------------------------------ */

START_TEST(test_resume_ws_poll_sse_one_topic)
{
    struct lg_server s;
    lg_server_must_start(&s, "{\"poll\":{\"max_batch\":10}}");
    char path[512], cursor[1024];
    struct seen seen = {.topics = {"x"}, .ntopics = 1};
    lg_publish_n_tagged_epoch(s.control_port, "x", 1, 30, seen.epoch, sizeof seen.epoch);

    /* 1..10 over WebSocket, from the very start */
    struct lg_ws_client ws;
    snprintf(path, sizeof path, "/ws?topic=x&since=x@%s:0", seen.epoch);
    lg_ws_must_subscribe(&ws, s.public_port, path, NULL, NULL, 0);
    char last[256] = "";
    for (int i = 0; i < 10; i++)
        ws_take(&ws, &seen, last, sizeof last);
    lg_ws_close(&ws);

    /* 11..20 by long-poll from the last WS id */
    copy(cursor, sizeof cursor, last);
    ck_assert_uint_eq(poll_take(s.public_port, &seen, "topic=x", cursor, sizeof cursor, 5), 10);
    char want[256];
    snprintf(want, sizeof want, "x@%s:20", seen.epoch);
    ck_assert_str_eq(cursor, want);

    /* 21..30 over SSE with Last-Event-ID = the poll cursor, then one live event */
    struct lg_sse_client sse;
    sse_resume(&sse, s.public_port, "/sse?topic=x", cursor);
    for (int i = 0; i < 11; i++) {
        if (i == 10)
            lg_publish_n_tagged(s.control_port, "x", 31, 31, NULL, 0);
        struct lg_sse_event ev;
        ck_assert_int_eq(lg_sse_next(&sse, &ev, WAIT_MS), 1);
        ck_assert_str_eq(ev.event, "message");
        char topic[64];
        unsigned long long seq;
        ck_assert_int_eq(lg_id_parse(ev.id, topic, sizeof topic, NULL, 0, &seq), 0);
        sse_take(&seen, &ev, topic, seq);
    }
    sse_expect_quiet_then_close(&sse);
    unsigned long long n[] = {31};
    expect_exactly(&seen, n);
    ck_assert_int_eq(lg_server_stop(&s, 10000), 0);
}
END_TEST

/* The same with two interleaved topics: the client merges WS ids into one cursor. */
START_TEST(test_resume_ws_poll_sse_two_topics)
{
    struct lg_server s;
    lg_server_must_start(&s, "{\"poll\":{\"max_batch\":10}}");
    char id[256], cursor[1024];
    struct seen seen = {.topics = {"x", "y"}, .ntopics = 2};
    for (int i = 1; i <= 15; i++) {
        lg_publish_n_tagged(s.control_port, "x", i, i, id, sizeof id);
        lg_publish_n_tagged(s.control_port, "y", i, i, NULL, 0);
    }
    lg_epoch_of(id, seen.epoch, sizeof seen.epoch);

    struct lg_ws_client ws;
    ck_assert_int_eq(lg_ws_open(&ws, s.public_port, "/ws", "livegate.v1"), 0);
    char sub[512];
    snprintf(sub, sizeof sub,
             "{\"op\":\"subscribe\",\"topics\":[\"x\",\"y\"],\"since\":\"x@%1$s:0,y@%1$s:0\"}",
             seen.epoch);
    ck_assert_int_eq(lg_ws_send_text(&ws, sub, strlen(sub)), 0);
    char *m = next_subscribed(&ws);
    free(m);
    snprintf(cursor, sizeof cursor, "x@%1$s:0,y@%1$s:0", seen.epoch);
    for (int i = 0; i < 10; i++) {
        char last[256];
        ws_take(&ws, &seen, last, sizeof last);
        cursor_set(cursor, sizeof cursor, last);
    }
    lg_ws_close(&ws);

    ck_assert_uint_eq(poll_take(s.public_port, &seen, "topic=x&topic=y", cursor, sizeof cursor,
                                5),
                      10);
    char want[256];
    snprintf(want, sizeof want, "x@%1$s:%2$llu,y@%1$s:%3$llu", seen.epoch, seen.last[0],
             seen.last[1]);
    ck_assert_str_eq(cursor, want);

    struct lg_sse_client sse;
    sse_resume(&sse, s.public_port, "/sse?topic=x&topic=y", cursor);
    for (int i = 0; i < 10; i++) {
        struct lg_sse_event ev;
        ck_assert_int_eq(lg_sse_next(&sse, &ev, WAIT_MS), 1);
        /* the SSE id is the whole cursor; the data names the event */
        char topic[64];
        unsigned long long seq;
        ck_assert(sscanf(ev.data, "%63[^-]-d%llu", topic, &seq) == 2);
        sse_take(&seen, &ev, topic, seq);
    }
    sse_expect_quiet_then_close(&sse);
    unsigned long long n[] = {15, 15};
    expect_exactly(&seen, n);
    ck_assert_int_eq(lg_server_stop(&s, 10000), 0);
}
END_TEST

/* ---- Gap and reset: one resume per transport ------------------------------------------------ */

/* The stream's bytes, once tail arrived, are exactly want. */
static void expect_stream(struct lg_sse_client *sse, const char *tail, const char *want)
{
    ck_assert_msg(lg_sse_wait_raw(sse, 0, tail, WAIT_MS), "no %s; got: %s", tail, sse->raw);
    ck_assert_str_eq(sse->raw, want);
}

/* Resume topic over WebSocket from since (/ws?topic=...&since=...): the subscribed answer, then
 * exactly the notice `want` (the gap or reset message). */
static void ws_resume(struct lg_ws_client *ws, uint16_t port, const char *topic, const char *since,
                      const char *want)
{
    char path[512];
    snprintf(path, sizeof path, "/ws?topic=%s&since=%s", topic, since);
    lg_ws_must_subscribe(ws, port, path, NULL, NULL, 0);
    char *m = NULL;
    ck_assert_msg(lg_ws_next(ws, &m, WAIT_MS) == 1, "%s: no message after subscribed", path);
    ck_assert_msg(strcmp(m, want) == 0, "%s: message\n  %s\nwant\n  %s", path, m, want);
    free(m);
}

/* GET path (a poll) on port: it must answer 200; the answer is left in r (free it). */
static void poll_get(uint16_t port, const char *path, struct lg_http_response *r)
{
    ck_assert_msg(lg_http_request(port, "GET", path, NULL, NULL, 0, r, WAIT_MS) == 0,
                  "%s: no answer", path);
    ck_assert_msg(r->status == 200, "%s answered %d: %s", path, r->status, r->body);
}

/* ---- Gap ---------------------------------------------------------------------------------- */

START_TEST(test_resume_gap_all_transports)
{
    struct lg_server s;
    lg_server_must_start(&s, "{\"history\":{\"max_events\":3}}");
    char ep[16], want[4096], path[512], from[64];
    lg_publish_n_tagged_epoch(s.control_port, "g", 1, 10, ep, sizeof ep);
    snprintf(from, sizeof from, "g@%s:2", ep);

    /* SSE: exact bytes */
    struct lg_sse_client sse;
    sse_resume(&sse, s.public_port, "/sse?topic=g", from);
    snprintf(want, sizeof want,
             RETRY "id: g@%1$s:2\n\nid: g@%1$s:7\nevent: gap\n"
                   "data: {\"topic\":\"g\",\"from\":3,\"to\":7,\"id\":\"g@%1$s:7\"}\n\n"
                   "id: g@%1$s:8\ndata: g-d8\n\n"
                   "id: g@%1$s:9\ndata: g-d9\n\n"
                   "id: g@%1$s:10\ndata: g-d10\n\n",
             ep);
    expect_stream(&sse, "data: g-d10\n\n", want);
    lg_sse_close(&sse);

    /* WebSocket: the gap message, then 8, 9, 10 */
    struct lg_ws_client ws;
    snprintf(want, sizeof want,
             "{\"type\":\"gap\",\"v\":1,\"topic\":\"g\",\"from\":3,\"to\":7,\"id\":\"g@%s:7\"}", ep);
    ws_resume(&ws, s.public_port, "g", from, want);
    char *m = NULL;
    for (int q = 8; q <= 10; q++) {
        ck_assert_int_eq(lg_ws_next(&ws, &m, WAIT_MS), 1);
        char frag[128];
        snprintf(frag, sizeof frag, "\"id\":\"g@%s:%d\",\"seq\":%d,", ep, q, q);
        ck_assert_msg(strstr(m, frag) != NULL, "want seq %d: %s", q, m);
        free(m);
    }
    lg_ws_close(&ws);

    /* long-poll: the gap notice is the first item, the cursor the newest seq */
    snprintf(path, sizeof path, "/poll?topic=g&since=%s&timeout=0", from);
    struct lg_http_response r;
    poll_get(s.public_port, path, &r);
    json_t *o = json_loadb(r.body, r.body_len, 0, NULL);
    json_t *evs = json_object_get(o, "events");
    ck_assert_msg(json_array_size(evs) == 4, "want gap + 3 events: %s", r.body);
    char *gap = json_dumps(json_array_get(evs, 0), JSON_COMPACT | JSON_PRESERVE_ORDER);
    ck_assert_str_eq(gap, want);
    free(gap);
    for (size_t i = 1; i < 4; i++)
        ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(evs, i), "seq")),
                         (json_int_t)(7 + i));
    char cur[64];
    snprintf(cur, sizeof cur, "g@%s:10", ep);
    ck_assert_str_eq(json_string_value(json_object_get(o, "cursor")), cur);
    json_decref(o);
    lg_http_response_free(&r);

    /* the gap's id resumes without a second gap */
    snprintf(path, sizeof path, "/poll?topic=g&since=g@%s:7&timeout=0", ep);
    poll_get(s.public_port, path, &r);
    ck_assert_ptr_null(strstr(r.body, "\"gap\""));
    o = json_loadb(r.body, r.body_len, 0, NULL);
    ck_assert_uint_eq(json_array_size(json_object_get(o, "events")), 3);
    json_decref(o);
    lg_http_response_free(&r);

    ck_assert(lg_wait_stat(s.control_port, "gaps_sent", 3, WAIT_MS));
    lg_server_must_stop(&s);
}
END_TEST

/* ---- Reset -------------------------------------------------------------------------------- */

START_TEST(test_resume_reset_after_restart)
{
    struct lg_server s;
    ck_assert_int_eq(lg_server_start(&s, NULL, NULL), 0);
    char id[256], old_ep[16], ep[16], old[256], want[1024], path[512];
    lg_publish_n_tagged(s.control_port, "r", 1, 2, old, sizeof old);
    lg_epoch_of(old, old_ep, sizeof old_ep);
    ck_assert_int_eq(lg_server_stop(&s, 10000), 0);

    /* a new process: a new epoch (retry in the 1 in 2^32 case of the same one) */
    for (int tries = 0;; tries++) {
        ck_assert_int_eq(lg_server_start(&s, NULL, NULL), 0);
        lg_publish_n_tagged(s.control_port, "r", 1, 1, id, sizeof id);
        lg_epoch_of(id, ep, sizeof ep);
        if (strcmp(ep, old_ep) != 0)
            break;
        ck_assert_int_lt(tries, 3);
        ck_assert_int_eq(lg_server_stop(&s, 10000), 0);
    }

    /* SSE: reset (its id is where delivery continues), then live events only */
    struct lg_sse_client sse;
    sse_resume(&sse, s.public_port, "/sse?topic=r", old);
    lg_publish_n_tagged(s.control_port, "r", 2, 2, NULL, 0);
    snprintf(want, sizeof want,
             RETRY "id: r@%1$s:1\n\nid: r@%1$s:1\nevent: reset\n"
                   "data: {\"topic\":\"r\",\"epoch\":\"%1$s\",\"id\":\"r@%1$s:1\"}\n\n"
                   "id: r@%1$s:2\ndata: r-d2\n\n",
             ep);
    expect_stream(&sse, "data: r-d2\n\n", want);
    lg_sse_close(&sse);

    /* WebSocket */
    struct lg_ws_client ws;
    snprintf(want, sizeof want,
             "{\"type\":\"reset\",\"v\":1,\"topic\":\"r\",\"epoch\":\"%1$s\",\"id\":\"r@%1$s:2\"}",
             ep);
    ws_resume(&ws, s.public_port, "r", old, want);
    lg_publish_n_tagged(s.control_port, "r", 3, 3, NULL, 0);
    char *m = NULL;
    ck_assert_int_eq(lg_ws_next(&ws, &m, WAIT_MS), 1);
    snprintf(want, sizeof want, "\"id\":\"r@%s:3\",\"seq\":3,", ep);
    ck_assert_msg(strstr(m, want) != NULL, "want seq 3 after the reset: %s", m);
    free(m);
    lg_ws_close(&ws);

    /* long-poll: [reset], cursor in the new epoch; the next poll continues from it */
    snprintf(path, sizeof path, "/poll?topic=r&since=%s&timeout=0", old);
    struct lg_http_response r;
    poll_get(s.public_port, path, &r);
    snprintf(want, sizeof want,
             "{\"events\":[{\"type\":\"reset\",\"v\":1,\"topic\":\"r\",\"epoch\":\"%1$s\","
             "\"id\":\"r@%1$s:3\"}],\"cursor\":\"r@%1$s:3\"}",
             ep);
    ck_assert_str_eq(r.body, want);
    lg_http_response_free(&r);
    lg_publish_n_tagged(s.control_port, "r", 4, 4, NULL, 0);
    snprintf(path, sizeof path, "/poll?topic=r&since=r@%s:3&timeout=5", ep);
    poll_get(s.public_port, path, &r);
    snprintf(want, sizeof want, "\"cursor\":\"r@%s:4\"}", ep);
    ck_assert_msg(strstr(r.body, want) && strstr(r.body, "\"data\":\"r-d4\"") &&
                      !strstr(r.body, "reset"),
                  "%s", r.body);
    lg_http_response_free(&r);
    ck_assert_int_eq(lg_server_stop(&s, 10000), 0);
}
END_TEST

/* ---- Concurrent publishers ---------------------------------------------------------------- */

#define PUB_THREADS 4
#define PUB_EVENTS 200

struct publisher {
    uint16_t port;
    char topic[16];
    int failures;
};

static void *publisher_main(void *arg)
{
    struct publisher *p = arg;
    for (int i = 1; i <= PUB_EVENTS; i++) {
        char d[64];
        snprintf(d, sizeof d, "%s-d%d", p->topic, i);
        if (lg_publish(p->port, p->topic, d, NULL, 0) != 201)
            p->failures++;
    }
    return NULL;
}

START_TEST(test_resume_concurrent_publishers_order)
{
    struct lg_server s;
    ck_assert_int_eq(lg_server_start(&s, NULL, NULL), 0);
    static const char *const topics[] = {"t0", "t1", "t2", "t3"};
    struct lg_sse_client sse;
    lg_sse_must_open(&sse, s.public_port, "/sse?topic=t0&topic=t1&topic=t2&topic=t3", NULL);
    struct lg_ws_client ws;
    char poll_cursor[1024];
    lg_ws_must_subscribe(&ws, s.public_port, "/ws?topic=t0&topic=t1&topic=t2&topic=t3", NULL,
                         poll_cursor, sizeof poll_cursor);

    struct publisher pubs[PUB_THREADS];
    pthread_t th[PUB_THREADS];
    for (int i = 0; i < PUB_THREADS; i++) {
        pubs[i] = (struct publisher){.port = s.control_port};
        snprintf(pubs[i].topic, sizeof pubs[i].topic, "%s", topics[i]);
        ck_assert_int_eq(pthread_create(&th[i], NULL, publisher_main, &pubs[i]), 0);
    }

    /* SSE, read while the publishers run */
    struct seen ss = {.topics = {"t0", "t1", "t2", "t3"}, .ntopics = 4};
    for (int i = 0; i < PUB_THREADS * PUB_EVENTS; i++) {
        struct lg_sse_event ev;
        int rc = lg_sse_next(&sse, &ev, 10000);
        ck_assert_msg(rc == 1, "SSE: event %d of %d missing (rc %d)", i + 1,
                      PUB_THREADS * PUB_EVENTS, rc);
        char topic[64];
        unsigned long long seq;
        ck_assert(sscanf(ev.data, "%63[^-]-d%llu", topic, &seq) == 2);
        if (!ss.epoch[0]) {
            const char *at = strchr(ev.id, '@');
            ck_assert_ptr_nonnull(at);
            snprintf(ss.epoch, sizeof ss.epoch, "%.8s", at + 1);
        }
        record(&ss, "sse", topic, seq, ev.data);
        expect_sse_cursor(&ss, ev.id);
        lg_sse_event_free(&ev);
    }
    for (int i = 0; i < PUB_THREADS; i++) {
        pthread_join(th[i], NULL);
        ck_assert_int_eq(pubs[i].failures, 0);
    }
    unsigned long long n[] = {PUB_EVENTS, PUB_EVENTS, PUB_EVENTS, PUB_EVENTS};
    expect_exactly(&ss, n);
    struct lg_sse_event ev;
    ck_assert_int_eq(lg_sse_next(&sse, &ev, 100), 0);
    lg_sse_close(&sse);

    /* WebSocket: the same 800, queued meanwhile (the queue holds 1024) */
    struct seen ws_seen = {.topics = {"t0", "t1", "t2", "t3"}, .ntopics = 4};
    memcpy(ws_seen.epoch, ss.epoch, sizeof ws_seen.epoch);
    for (int i = 0; i < PUB_THREADS * PUB_EVENTS; i++) {
        char last[256];
        ws_take(&ws, &ws_seen, last, sizeof last);
    }
    expect_exactly(&ws_seen, n);
    lg_ws_close(&ws);

    /* long-poll: chained from the cursor the WS subscription started at */
    struct seen ps = {.topics = {"t0", "t1", "t2", "t3"}, .ntopics = 4};
    memcpy(ps.epoch, ss.epoch, sizeof ps.epoch);
    size_t total = 0;
    for (int i = 0; i < 20 && total < PUB_THREADS * PUB_EVENTS; i++)
        total += poll_take(s.public_port, &ps, "topic=t0&topic=t1&topic=t2&topic=t3",
                           poll_cursor, sizeof poll_cursor, 0);
    ck_assert_uint_eq(total, PUB_THREADS * PUB_EVENTS);
    expect_exactly(&ps, n);
    ck_assert_int_eq(lg_stat(s.control_port, "events_dropped_overflow"), 0);
    ck_assert_int_eq(lg_server_stop(&s, 10000), 0);
}
END_TEST

LG_CHECK_MAIN_TCASE("resume", "resume", 60, test_resume_ws_poll_sse_one_topic,
                    test_resume_ws_poll_sse_two_topics, test_resume_gap_all_transports,
                    test_resume_reset_after_restart, test_resume_concurrent_publishers_order)
