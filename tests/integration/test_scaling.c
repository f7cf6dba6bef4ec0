/*
 * test_scaling.c - several livegate nodes over one real redis-server (issue 14): the same ids
 * in the same order on every node and transport, one total order for publishers on different
 * nodes, a node killed with SIGKILL (its clients resume on another with nothing lost or
 * repeated), Redis restarted mid-stream (503 meanwhile, nothing acknowledged lost), an
 * idempotent retry on the other node, and a drained node moving its clients over a window.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lg_redis.h"
#include "lg_test.h"

#include "check_main.h"

#define WAIT_MS 5000
#define ID_MAX 96

static struct lg_redis redis;

/* Start a node on the test's Redis; extra: more top-level settings, extra_redis: more of the
 * redis section (either NULL). */
static void node_start_with(struct lg_server *s, const char *extra, const char *extra_redis)
{
    char cfg[1024];
    snprintf(cfg, sizeof cfg,
             "{\"workers\": 2, \"redis\": {\"url\": \"%s\", \"reconnect_min_ms\": 20, "
             "\"reconnect_max_ms\": 200%s%s}%s%s}",
             redis.url, extra_redis ? ", " : "", extra_redis ? extra_redis : "",
             extra ? ", " : "", extra ? extra : "");
    lg_server_must_start(s, cfg);
    lg_server_must_be_ready(s, WAIT_MS);
}

static void node_start(struct lg_server *s, const char *extra)
{
    node_start_with(s, extra, NULL);
}

/* Start a node (no extra settings) and open one SSE subscriber on it at path. */
static void node_start_subscribed(struct lg_server *s, struct lg_sse_client *c, const char *path)
{
    node_start(s, NULL);
    lg_sse_must_open(c, s->public_port, path, NULL);
}

static void setup(void)
{
    ck_assert_int_eq(lg_redis_start(&redis, true), 0);
}

static void teardown(void)
{
    lg_redis_stop(&redis);
}

/* Publish data on a node; the answer's id into id (may be NULL). Return value: the status. */
static int publish(const struct lg_server *s, const char *topic, const char *data, char *id)
{
    return lg_publish(s->control_port, topic, data, id, ID_MAX);
}

/* Publish data on a node, again every 20 ms while it answers 503 (its bridge is reconnecting
 * to Redis) until deadline: the publish must be accepted. */
static void publish_once_up(const struct lg_server *s, const char *topic, const char *data,
                            char *id, int64_t deadline)
{
    int status;
    while ((status = publish(s, topic, data, id)) == 503 && lg_now_ms() < deadline)
        usleep(20000);
    ck_assert_int_eq(status, 201);
}

/* ---- Collecting what clients saw ---------------------------------------------------------- */

struct seen {
    int n;
    char id[256][ID_MAX];
    char data[256][32];
};

static void seen_add(struct seen *v, const char *id, const char *data, size_t len)
{
    ck_assert_int_lt(v->n, 256);
    snprintf(v->id[v->n], ID_MAX, "%.*s", ID_MAX - 1, id);
    snprintf(v->data[v->n], sizeof v->data[0], "%.*s", (int)len, data);
    v->n++;
}

/* Read SSE events into v until it holds want of them. */
static void sse_collect(struct lg_sse_client *c, struct seen *v, int want)
{
    int64_t deadline = lg_now_ms() + WAIT_MS;
    while (v->n < want) {
        struct lg_sse_event ev;
        int rc = lg_sse_next(c, &ev, lg_left_ms(deadline));
        ck_assert_msg(rc == 1, "SSE: %d of %d events, then %s", v->n, want,
                      rc == 0 ? "timeout" : "end of stream");
        if (strcmp(ev.event, "message") == 0)
            seen_add(v, ev.id, ev.data, ev.data_len);
        lg_sse_event_free(&ev);
    }
}

/* The value of "key":"..." in a JSON text, into out. */
static bool json_str(const char *json, const char *key, char *out, size_t cap)
{
    char needle[64];
    snprintf(needle, sizeof needle, "\"%s\":\"", key);
    const char *p = strstr(json, needle);
    if (!p)
        return false;
    p += strlen(needle);
    size_t n = strcspn(p, "\"");
    snprintf(out, cap, "%.*s", (int)(n < cap ? n : cap - 1), p);
    return true;
}

static void ws_collect(struct lg_ws_client *c, struct seen *v, int want)
{
    int64_t deadline = lg_now_ms() + WAIT_MS;
    while (v->n < want) {
        char *m = NULL;
        int rc = lg_ws_next(c, &m, lg_left_ms(deadline));
        ck_assert_msg(rc == 1, "WS: %d of %d events, then %d", v->n, want, rc);
        char id[ID_MAX], data[32];
        if (strstr(m, "\"type\":\"event\"") && json_str(m, "id", id, sizeof id) &&
            json_str(m, "data", data, sizeof data))
            seen_add(v, id, data, strlen(data));
        free(m);
    }
}

/* Long-poll topic on port from cursor since ("" = now) until v holds want events. */
static void poll_collect(uint16_t port, const char *topic, const char *since, struct seen *v,
                         int want)
{
    char cursor[ID_MAX * 2];
    snprintf(cursor, sizeof cursor, "%s", since);
    int64_t deadline = lg_now_ms() + WAIT_MS;
    while (v->n < want && lg_now_ms() < deadline) {
        char path[512];
        snprintf(path, sizeof path, "/poll?topic=%s&timeout=2%s%s", topic,
                 cursor[0] ? "&since=" : "", cursor);
        struct lg_http_response r;
        ck_assert_int_eq(lg_http_request(port, "GET", path, NULL, NULL, 0, &r, 4000), 0);
        ck_assert_int_eq(r.status, 200);
        for (const char *p = strstr(r.body, "{\"type\":\"event\""); p;
             p = strstr(p + 1, "{\"type\":\"event\"")) {
            char id[ID_MAX], data[32];
            ck_assert(json_str(p, "id", id, sizeof id) && json_str(p, "data", data, sizeof data));
            seen_add(v, id, data, strlen(data));
        }
        ck_assert(json_str(r.body, "cursor", cursor, sizeof cursor));
        lg_http_response_free(&r);
    }
    ck_assert_int_eq(v->n, want);
}

/* v saw exactly the ids of acked[0..n), in that order. */
static void expect_ids(const char *who, const struct seen *v, char acked[][ID_MAX], int n)
{
    ck_assert_msg(v->n == n, "%s saw %d events, %d were acknowledged", who, v->n, n);
    for (int i = 0; i < n; i++)
        ck_assert_msg(strcmp(v->id[i], acked[i]) == 0, "%s: event %d is %s, want %s", who, i,
                      v->id[i], acked[i]);
}

/* ---- Same ids, same order, every node and transport ---------------------------------------- */

START_TEST(two_nodes_same_ids_over_sse_ws_poll)
{
    struct lg_server a, b;
    node_start(&a, NULL);
    node_start(&b, NULL);
    struct lg_sse_client sse_a, sse_b;
    struct lg_ws_client ws_a, ws_b;
    lg_sse_must_open(&sse_a, a.public_port, "/sse?topic=news", NULL);
    lg_sse_must_open(&sse_b, b.public_port, "/sse?topic=news", NULL);
    lg_ws_must_subscribe(&ws_a, a.public_port, "/ws?topic=news", NULL, NULL, 0);
    lg_ws_must_subscribe(&ws_b, b.public_port, "/ws?topic=news", NULL, NULL, 0);
    static char acked[20][ID_MAX];
    for (int i = 0; i < 20; i++) {
        char data[16];
        snprintf(data, sizeof data, "n%d", i);
        ck_assert_int_eq(publish(&a, "news", data, acked[i]), 201);
        ck_assert_uint_eq(lg_seq_of(acked[i]), (uint64_t)i + 1);
    }
    static struct seen v[5];
    memset(v, 0, sizeof v);
    sse_collect(&sse_a, &v[0], 20);
    sse_collect(&sse_b, &v[1], 20);
    ws_collect(&ws_a, &v[2], 20);
    ws_collect(&ws_b, &v[3], 20);
    /* a poller on B that starts from before the first event: B serves A's cursor */
    char epoch[16], since[ID_MAX];
    lg_epoch_of(acked[0], epoch, sizeof epoch);
    snprintf(since, sizeof since, "news@%s:0", epoch);
    poll_collect(b.public_port, "news", since, &v[4], 20);
    const char *who[] = {"SSE on A", "SSE on B", "WS on A", "WS on B", "poll on B"};
    for (int k = 0; k < 5; k++) {
        expect_ids(who[k], &v[k], acked, 20);
        for (int i = 0; i < 20; i++) {
            char data[16];
            snprintf(data, sizeof data, "n%d", i);
            ck_assert_str_eq(v[k].data[i], data);
        }
    }
    lg_sse_close(&sse_a), lg_sse_close(&sse_b), lg_ws_close(&ws_a), lg_ws_close(&ws_b);
    lg_server_must_stop(&a);
    lg_server_must_stop(&b);
}
END_TEST

START_TEST(alternating_publishers_one_total_order)
{
    struct lg_server a, b;
    node_start(&a, NULL);
    node_start(&b, NULL);
    struct lg_sse_client sa, sb;
    lg_sse_must_open(&sa, a.public_port, "/sse?topic=alt", NULL);
    lg_sse_must_open(&sb, b.public_port, "/sse?topic=alt", NULL);
    static char acked[40][ID_MAX];
    for (int i = 0; i < 40; i++) {
        char data[16];
        snprintf(data, sizeof data, "%c%d", i % 2 ? 'B' : 'A', i);
        ck_assert_int_eq(publish(i % 2 ? &b : &a, "alt", data, acked[i]), 201);
        ck_assert_uint_eq(lg_seq_of(acked[i]), (uint64_t)i + 1); /* one counter for both */
    }
    static struct seen va, vb;
    memset(&va, 0, sizeof va), memset(&vb, 0, sizeof vb);
    sse_collect(&sa, &va, 40);
    sse_collect(&sb, &vb, 40);
    expect_ids("SSE on A", &va, acked, 40);
    expect_ids("SSE on B", &vb, acked, 40);
    for (int i = 0; i < 40; i++)
        ck_assert_str_eq(va.data[i], vb.data[i]);
    lg_sse_close(&sa), lg_sse_close(&sb);
    lg_server_must_stop(&a);
    lg_server_must_stop(&b);
}
END_TEST

/* ---- A node killed with SIGKILL ----------------------------------------------------------- */

#define KILL_SUBS 4

START_TEST(kill9_node_clients_resume_on_the_other)
{
    struct lg_server a, b;
    node_start(&a, NULL);
    node_start(&b, NULL);
    static struct lg_sse_client subs[KILL_SUBS];
    for (int k = 0; k < KILL_SUBS; k++)
        lg_sse_must_open(&subs[k], a.public_port, "/sse?topic=k9", NULL);
    static char acked[30][ID_MAX];
    for (int i = 0; i < 15; i++)
        ck_assert_int_eq(publish(&a, "k9", "x", acked[i]), 201);
    kill(a.pid, SIGKILL); /* mid-stream: its clients may not have everything yet */
    waitpid(a.pid, NULL, 0);
    for (int i = 15; i < 30; i++)
        ck_assert_int_eq(publish(&b, "k9", "x", acked[i]), 201);
    for (int k = 0; k < KILL_SUBS; k++) {
        static struct seen v;
        memset(&v, 0, sizeof v);
        for (;;) { /* what arrived before the node died */
            struct lg_sse_event ev;
            int rc = lg_sse_next(&subs[k], &ev, WAIT_MS);
            if (rc != 1)
                break;
            if (strcmp(ev.event, "message") == 0)
                seen_add(&v, ev.id, ev.data, ev.data_len);
            lg_sse_event_free(&ev);
        }
        lg_sse_close(&subs[k]);
        int before = v.n;
        char epoch[16], path[256];
        lg_epoch_of(acked[0], epoch, sizeof epoch);
        if (before) /* resume on B with its last id; nothing reached it: from before the first */
            snprintf(path, sizeof path, "/sse?topic=k9&last_event_id=%s", v.id[before - 1]);
        else
            snprintf(path, sizeof path, "/sse?topic=k9&last_event_id=k9@%s:0", epoch);
        struct lg_sse_client c;
        lg_server_pump_log(&b);
        ck_assert_msg(kill(b.pid, 0) == 0, "node B died: %s", b.log);
        lg_sse_must_open(&c, b.public_port, path, NULL);
        sse_collect(&c, &v, 30);
        char who[64];
        snprintf(who, sizeof who, "subscriber %d (%d before the kill)", k, before);
        expect_ids(who, &v, acked, 30); /* the union is the acknowledged sequence, once */
        lg_sse_close(&c);
    }
    ck_assert_int_eq(lg_redis_int(&redis, "XLEN livegate:{k9}:s"), 30);
    lg_server_must_stop(&b);
}
END_TEST

/* ---- Redis restarted mid-stream ----------------------------------------------------------- */

START_TEST(redis_restart_503_meanwhile_nothing_acknowledged_lost)
{
    struct lg_server a;
    struct lg_sse_client c;
    node_start_subscribed(&a, &c, "/sse?topic=rr");
    static char acked[10][ID_MAX];
    for (int i = 0; i < 5; i++)
        ck_assert_int_eq(publish(&a, "rr", "before", acked[i]), 201);
    lg_redis_halt(&redis, false);
    /* unreachable: readyz not ready, publishes 503 + Retry-After, nothing accepted */
    int64_t deadline = lg_now_ms() + WAIT_MS;
    struct lg_http_response r = {0};
    int ready = 200;
    while (ready == 200 && lg_now_ms() < deadline) {
        ck_assert_int_eq(lg_http_request(a.control_port, "GET", "/readyz", NULL, NULL, 0, &r,
                                         1000), 0);
        ready = r.status;
        lg_http_response_free(&r);
    }
    ck_assert_int_eq(ready, 503);
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(lg_http_request(a.control_port, "POST", "/v1/topics/rr/events", NULL,
                                         "during", 6, &r, 5000), 0);
        lg_expect_error(&r, 503, "unavailable", LG_ERROR_JSON_TYPE);
        char retry[16];
        ck_assert(lg_http_header(&r, "Retry-After", retry, sizeof retry));
        lg_http_response_free(&r);
    }
    /* counted as what they are: the store unreachable, not out of memory */
    ck_assert_int_eq(lg_http_request(a.control_port, "GET", "/metrics", NULL, NULL, 0, &r,
                                     WAIT_MS), 0);
    static const char *const refused[] = {
        "\nlivegate_publishes_refused_total{reason=\"store_unavailable\"} 3\n",
        "\nlivegate_publishes_refused_total{reason=\"out_of_memory\"} 0\n",
        "\nlivegate_publishes_refused_total{reason=\"max_retained_bytes\"} 0\n",
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
        ck_assert_msg(strstr(r.body, refused[i]), "no %s in /metrics; it has\n%.400s",
                      refused[i] + 1, strstr(r.body, "livegate_publishes_refused_total{"));
    lg_http_response_free(&r);
    ck_assert_int_eq(lg_stat(a.control_port, "publishes_refused_store"), 3);
    ck_assert_int_eq(lg_redis_restart(&redis), 0);
    deadline = lg_now_ms() + WAIT_MS;
    for (int i = 5; i < 10; i++)
        publish_once_up(&a, "rr", "after", acked[i], deadline);
    ck_assert_uint_eq(lg_seq_of(acked[9]), 10); /* the 503s used no position */
    static struct seen v;
    memset(&v, 0, sizeof v);
    sse_collect(&c, &v, 10); /* the same connection throughout */
    expect_ids("SSE across the outage", &v, acked, 10);
    lg_sse_close(&c);
    lg_server_must_stop(&a);
}
END_TEST

/* Redis stops answering (SIGSTOP; the kernel still accepts its connections): every publish
 * meanwhile is answered 503 once redis.command_timeout_ms passed with no answer (the bridge
 * drops the connection and reconnects); it recovers on SIGCONT. */
START_TEST(redis_hangs_publish_answers_503_after_the_command_timeout)
{
    struct lg_server a;
    node_start_with(&a, NULL, "\"command_timeout_ms\": 300");
    char id[ID_MAX];
    ck_assert_int_eq(publish(&a, "hang", "before", id), 201);
    kill(redis.pid, SIGSTOP);
    int64_t t0 = lg_now_ms();
    ck_assert_int_eq(publish(&a, "hang", "stuck", NULL), 503);
    ck_assert_int_lt(lg_now_ms() - t0, 3000); /* bounded by the timeout, not by Redis */
    ck_assert_int_eq(publish(&a, "hang", "meanwhile", NULL), 503);
    kill(redis.pid, SIGCONT);
    publish_once_up(&a, "hang", "after", id, lg_now_ms() + WAIT_MS);
    lg_server_must_stop(&a);
}
END_TEST

/* Redis restarted without its data: the topic begins a new life (a new epoch), and its
 * connected subscribers get a reset, then the new life's events. */
START_TEST(redis_loses_its_data_subscribers_get_a_reset)
{
    struct lg_server a;
    struct lg_sse_client c;
    node_start_subscribed(&a, &c, "/sse?topic=lost");
    char old_id[ID_MAX], new_id[ID_MAX];
    ck_assert_int_eq(publish(&a, "lost", "old", old_id), 201);
    lg_redis_halt(&redis, false);
    redis.persist = false; /* comes back empty */
    ck_assert_int_eq(lg_redis_restart(&redis), 0);
    publish_once_up(&a, "lost", "new", new_id, lg_now_ms() + WAIT_MS);
    char e1[16], e2[16];
    lg_epoch_of(old_id, e1, sizeof e1);
    lg_epoch_of(new_id, e2, sizeof e2);
    ck_assert_str_ne(e1, e2);
    ck_assert_uint_eq(lg_seq_of(new_id), 1);
    const char *want[] = {"message", "reset", "message"};
    const char *want_data[] = {"old", NULL, "new"};
    for (int i = 0; i < 3; i++) {
        struct lg_sse_event ev;
        ck_assert_int_eq(lg_sse_next(&c, &ev, WAIT_MS), 1);
        ck_assert_str_eq(ev.event, want[i]);
        if (want_data[i])
            ck_assert_str_eq(ev.data, want_data[i]);
        if (i == 2)
            ck_assert_str_eq(ev.id, new_id);
        lg_sse_event_free(&ev);
    }
    lg_sse_close(&c);
    lg_server_must_stop(&a);
}
END_TEST

/* ---- Keys lost while nodes are connected ---------------------------------------------------- */

/* How a test damages a topic's keys while subscribers stream from two nodes. */
enum key_loss { LOSE_ALL_KEYS, LOSE_TOPIC_KEYS, LOSE_EPOCH, LOSE_COUNTER };

static void lose_keys(enum key_loss how, const char *topic)
{
    switch (how) {
    case LOSE_ALL_KEYS: ck_assert_int_ge(lg_redis_int(&redis, "FLUSHALL"), -1); break;
    case LOSE_TOPIC_KEYS:
        ck_assert_int_eq(lg_redis_int(&redis, "DEL livegate:{%s}:s livegate:{%s}:n "
                                              "livegate:{%s}:e", topic, topic, topic), 3);
        break;
    case LOSE_EPOCH: ck_assert_int_eq(lg_redis_int(&redis, "DEL livegate:{%s}:e", topic), 1); break;
    case LOSE_COUNTER:
        ck_assert_int_eq(lg_redis_int(&redis, "DEL livegate:{%s}:n", topic), 1);
        break;
    }
}

/* 5 events, the loss, 5 more (published alternately on A and B): each subscriber (SSE on A
 * and on B) gets exactly the acknowledged ids, with a reset between the lives where the life
 * changed; where only the counter was lost the life goes on and positions continue. */
static void keys_lost_while_streaming(enum key_loss how, const char *topic)
{
    struct lg_server a, b;
    node_start(&a, NULL);
    node_start(&b, NULL);
    char path[64];
    snprintf(path, sizeof path, "/sse?topic=%s", topic);
    struct lg_sse_client sa, sb;
    lg_sse_must_open(&sa, a.public_port, path, NULL);
    lg_sse_must_open(&sb, b.public_port, path, NULL);
    static char acked[10][ID_MAX];
    for (int i = 0; i < 10; i++) {
        if (i == 5)
            lose_keys(how, topic);
        char data[16];
        snprintf(data, sizeof data, "e%d", i);
        ck_assert_int_eq(publish(i % 2 ? &b : &a, topic, data, acked[i]), 201);
    }
    bool new_life = how != LOSE_COUNTER;
    char e_old[16], e_new[16];
    lg_epoch_of(acked[4], e_old, sizeof e_old);
    lg_epoch_of(acked[5], e_new, sizeof e_new);
    ck_assert_msg((strcmp(e_old, e_new) != 0) == new_life, "epochs %s then %s", e_old, e_new);
    ck_assert_uint_eq(lg_seq_of(acked[5]), new_life ? 1 : 6);
    struct lg_sse_client *subs[] = {&sa, &sb};
    for (int k = 0; k < 2; k++) {
        int next = 0;
        bool reset_seen = false;
        while (next < 10) {
            struct lg_sse_event ev;
            ck_assert_msg(lg_sse_next(subs[k], &ev, WAIT_MS) == 1, "node %c: stopped before %d",
                          'A' + k, next);
            if (strcmp(ev.event, "reset") == 0) {
                ck_assert_msg(new_life && next == 5 && !reset_seen, "node %c: reset before %d",
                              'A' + k, next);
                reset_seen = true;
            } else {
                ck_assert_str_eq(ev.event, "message");
                ck_assert_str_eq(ev.id, acked[next]);
                next++;
            }
            lg_sse_event_free(&ev);
        }
        ck_assert_msg(reset_seen == new_life, "node %c: reset %s", 'A' + k,
                      reset_seen ? "without a new life" : "missing");
    }
    lg_sse_close(&sa), lg_sse_close(&sb);
    lg_server_must_stop(&a);
    lg_server_must_stop(&b);
}

START_TEST(keys_flushed_while_streaming)
{
    keys_lost_while_streaming(LOSE_ALL_KEYS, "flush");
}
END_TEST

START_TEST(topic_keys_deleted_while_streaming)
{
    keys_lost_while_streaming(LOSE_TOPIC_KEYS, "gone");
}
END_TEST

START_TEST(epoch_key_deleted_while_streaming)
{
    keys_lost_while_streaming(LOSE_EPOCH, "noepoch");
}
END_TEST

START_TEST(counter_key_deleted_while_streaming)
{
    keys_lost_while_streaming(LOSE_COUNTER, "nocount");
    /* repaired once, in the script: every later publish goes through */
}
END_TEST

/* The Pub/Sub connections alone are killed (CLIENT KILL TYPE pubsub) between publishes: the
 * command connections stay, publishes go on, and the subscribers on both nodes get every
 * acknowledged event once, in order (what came meanwhile is read from the stream). */
START_TEST(pubsub_connection_lost_alone_nothing_lost)
{
    struct lg_server a, b;
    node_start(&a, NULL);
    node_start(&b, NULL);
    struct lg_sse_client sa, sb;
    lg_sse_must_open(&sa, a.public_port, "/sse?topic=feed", NULL);
    lg_sse_must_open(&sb, b.public_port, "/sse?topic=feed", NULL);
    static char acked[40][ID_MAX];
    for (int i = 0; i < 40; i++) {
        if (i == 10)
            ck_assert_int_eq(lg_redis_int(&redis, "CLIENT KILL TYPE pubsub"), 2);
        if (i == 25) { /* again, once a node subscribed anew */
            int64_t deadline = lg_now_ms() + WAIT_MS;
            while (lg_redis_int(&redis, "CLIENT KILL TYPE pubsub") < 1 && lg_now_ms() < deadline)
                usleep(10000);
            ck_assert_int_lt(lg_now_ms(), deadline);
        }
        ck_assert_int_eq(publish(i % 2 ? &b : &a, "feed", "x", acked[i]), 201);
    }
    static struct seen va, vb;
    memset(&va, 0, sizeof va), memset(&vb, 0, sizeof vb);
    sse_collect(&sa, &va, 40);
    sse_collect(&sb, &vb, 40);
    expect_ids("SSE on A", &va, acked, 40);
    expect_ids("SSE on B", &vb, acked, 40);
    ck_assert(lg_server_wait_log(&a, "Pub/Sub connection back", WAIT_MS));
    lg_sse_close(&sa), lg_sse_close(&sb);
    lg_server_must_stop(&a);
    lg_server_must_stop(&b);
}
END_TEST

/* A cursor one node gave is valid on the other at once: B may not have read the event yet
 * when the client arrives with it, and then waits for it instead of refusing the cursor. */
START_TEST(a_cursor_from_one_node_is_valid_on_the_other_at_once)
{
    struct lg_server a, b;
    node_start(&a, NULL);
    node_start(&b, NULL);
    struct lg_sse_client warm; /* B follows the topic */
    lg_sse_must_open(&warm, b.public_port, "/sse?topic=hop", NULL);
    for (int i = 0; i < 100; i++) {
        char id[ID_MAX], path[256];
        ck_assert_int_eq(publish(&a, "hop", "x", id), 201);
        snprintf(path, sizeof path, "/poll?topic=hop&since=%s&timeout=0", id);
        struct lg_http_response r;
        ck_assert_int_eq(lg_http_request(b.public_port, "GET", path, NULL, NULL, 0, &r, WAIT_MS),
                         0);
        ck_assert_msg(r.status == 200 && strstr(r.body, "\"events\":[]"), "%d: %d %s", i,
                      r.status, r.body);
        char want[ID_MAX + 16];
        snprintf(want, sizeof want, "\"cursor\":\"%s\"", id);
        ck_assert_msg(strstr(r.body, want), "%d: %s, want %s", i, r.body, want);
        lg_http_response_free(&r);
    }
    lg_sse_close(&warm);
    lg_server_must_stop(&a);
    lg_server_must_stop(&b);
}
END_TEST

/* ---- Clients moving both ways across a node killed and restarted ------------------------- */

#define MOVERS_PER_TRANSPORT 333
#define MOVERS (3 * MOVERS_PER_TRANSPORT)
#define MOVE_EVENTS 40

enum mover_kind { MOVER_SSE, MOVER_WS, MOVER_POLL };

/* One client that follows topic "move" from its cursor, on one node at a time. */
struct mover {
    enum mover_kind kind;
    const struct lg_server *node;
    bool open;                     /* SSE / WS: a stream is open on node */
    struct lg_sse_client sse;
    struct lg_ws_client ws;
    char cursor[ID_MAX];           /* the last event it got (the start before any) */
    int next;                      /* index into the acknowledged ids of the next one */
};

static char move_acked[MOVE_EVENTS][ID_MAX];

/* The next event of m is id: exactly the next acknowledged one. */
static void mover_got(struct mover *m, int i, const char *id)
{
    ck_assert_msg(m->next < MOVE_EVENTS && strcmp(id, move_acked[m->next]) == 0,
                  "client %d (%d): got %s, want %s", i, m->kind, id,
                  m->next < MOVE_EVENTS ? move_acked[m->next] : "nothing");
    size_t len = strlen(id);
    ck_assert_uint_lt(len, sizeof m->cursor);
    memcpy(m->cursor, id, len + 1);
    m->next++;
}

/* Open m's stream on its node from its cursor (SSE, WS); a poll client has none. */
static void mover_open(struct mover *m)
{
    char path[256];
    if (m->kind == MOVER_SSE) {
        snprintf(path, sizeof path, "/sse?topic=move&last_event_id=%s", m->cursor);
        lg_sse_must_open(&m->sse, m->node->public_port, path, NULL);
    } else if (m->kind == MOVER_WS) {
        snprintf(path, sizeof path, "/ws?topic=move&since=%s", m->cursor);
        lg_ws_must_subscribe(&m->ws, m->node->public_port, path, NULL, NULL, 0);
    }
    m->open = m->kind != MOVER_POLL;
}

static void mover_close(struct mover *m)
{
    if (m->open && m->kind == MOVER_SSE)
        lg_sse_close(&m->sse);
    else if (m->open && m->kind == MOVER_WS)
        lg_ws_close(&m->ws);
    m->open = false;
}

/* Move m to node with its cursor. */
static void mover_move(struct mover *m, const struct lg_server *node)
{
    mover_close(m);
    m->node = node;
    mover_open(m);
}

/* Read what m's open stream or a poll gives within ms; false once its node is gone. */
static bool mover_read(struct mover *m, int i, int ms)
{
    if (m->kind == MOVER_SSE) {
        struct lg_sse_event ev;
        int rc = lg_sse_next(&m->sse, &ev, ms);
        if (rc == 1) {
            ck_assert_msg(strcmp(ev.event, "message") == 0, "client %d: a %s notice: %s", i,
                          ev.event, ev.data);
            mover_got(m, i, ev.id);
            lg_sse_event_free(&ev);
        }
        return rc >= 0;
    }
    if (m->kind == MOVER_WS) {
        char *msg = NULL, id[ID_MAX];
        int rc = lg_ws_next(&m->ws, &msg, ms);
        if (rc == 1) {
            ck_assert_msg(strstr(msg, "\"type\":\"event\"") && json_str(msg, "id", id, sizeof id),
                          "client %d: %s", i, msg);
            mover_got(m, i, id);
            free(msg);
        }
        return rc >= 0;
    }
    char path[256];
    snprintf(path, sizeof path, "/poll?topic=move&since=%s&timeout=1", m->cursor);
    struct lg_http_response r;
    if (lg_http_request(m->node->public_port, "GET", path, NULL, NULL, 0, &r, 3000) != 0)
        return false;
    ck_assert_msg(r.status == 200, "client %d: poll %d %s", i, r.status, r.body);
    for (const char *p = strstr(r.body, "{\"type\":"); p; p = strstr(p + 1, "{\"type\":")) {
        char id[ID_MAX];
        ck_assert_msg(strncmp(p, "{\"type\":\"event\"", 15) == 0 && json_str(p, "id", id, sizeof id),
                      "client %d: %s", i, r.body);
        mover_got(m, i, id);
    }
    lg_http_response_free(&r);
    return true;
}

/* Every client on a live node gets events until it has upto of them. */
static void movers_collect(struct mover *v, int upto)
{
    int64_t deadline = lg_now_ms() + 20000;
    for (int i = 0; i < MOVERS; i++)
        while (v[i].next < upto) {
            ck_assert_msg(lg_now_ms() < deadline, "client %d: %d of %d events", i, v[i].next,
                          upto);
            ck_assert_msg(mover_read(&v[i], i, 1000), "client %d: its node went away", i);
        }
}

/* 999 clients (SSE, WS, long-poll) on two nodes; node A is killed with -9 mid-stream: its
 * clients take what reached them, then move to B with their cursors; A comes back, a hundred
 * of them move to it with the newest cursor B gave them, and a hundred of A's old ones stay
 * on B; then events are published on the new A. Every client gets every acknowledged event once,
 * in order: no refusal, no reset, no gap. */
START_TEST(clients_move_both_ways_around_a_node_killed_and_restarted)
{
    static struct lg_server a, b;
    node_start(&a, NULL);
    node_start(&b, NULL);
    char start[ID_MAX];
    ck_assert_int_eq(publish(&b, "move", "start", start), 201);
    static struct mover v[MOVERS];
    for (int i = 0; i < MOVERS; i++) {
        v[i] = (struct mover){.kind = (enum mover_kind)(i % 3), .node = i % 2 ? &b : &a};
        snprintf(v[i].cursor, sizeof v[i].cursor, "%s", start);
        mover_open(&v[i]);
    }
    for (int e = 0; e < 20; e++)
        ck_assert_int_eq(publish(&b, "move", "x", move_acked[e]), 201);
    kill(a.pid, SIGKILL);
    waitpid(a.pid, NULL, 0);
    for (int i = 0; i < MOVERS; i++) { /* what reached A's clients, then to B */
        if (v[i].node != &a)
            continue;
        while (v[i].kind != MOVER_POLL && mover_read(&v[i], i, 1000))
            ;
        mover_move(&v[i], &b);
    }
    for (int e = 20; e < 30; e++)
        ck_assert_int_eq(publish(&b, "move", "x", move_acked[e]), 201);
    movers_collect(v, 30);
    lg_server_pump_log(&a);
    node_start(&a, NULL); /* the same node back, a new process */
    for (int i = 0, moved = 0; i < MOVERS && moved < 100; i++)
        if (i % 2 == 1) { /* one of B's own clients, with B's newest cursor */
            mover_move(&v[i], &a);
            moved++;
        }
    for (int e = 30; e < MOVE_EVENTS; e++)
        ck_assert_int_eq(publish(&a, "move", "x", move_acked[e]), 201);
    movers_collect(v, MOVE_EVENTS);
    for (int i = 0; i < MOVERS; i++)
        mover_close(&v[i]);
    lg_server_must_stop(&a);
    lg_server_must_stop(&b);
}
END_TEST

/* ---- Several Redis shards ------------------------------------------------------------------- */

#define SHARD_TOPICS 16

/* A node over the shards redis and r2 (in that order, as every node lists them). */
static void node_start_sharded(struct lg_server *s, const struct lg_redis *r2)
{
    char cfg[512];
    snprintf(cfg, sizeof cfg,
             "{\"workers\": 2, \"redis\": {\"shards\": [\"%s\", \"%s\"], \"url\": \"\", "
             "\"reconnect_min_ms\": 20, \"reconnect_max_ms\": 200}}", redis.url, r2->url);
    lg_server_must_start(s, cfg);
    ck_assert(lg_metric_wait(s->control_port, "livegate_store_ready", 1, WAIT_MS));
}

/* Topics land on both shards (a topic's keys on exactly one), and each node delivers the
 * events of topics of either shard, with the same ids, to its subscribers. */
START_TEST(two_shards_topics_land_on_both_each_node_delivers_both)
{
    struct lg_redis r2;
    ck_assert_int_eq(lg_redis_start(&r2, false), 0);
    struct lg_server a, b;
    node_start_sharded(&a, &r2);
    node_start_sharded(&b, &r2);
    static struct lg_sse_client on_b[SHARD_TOPICS];
    for (int t = 0; t < SHARD_TOPICS; t++) {
        char path[64];
        snprintf(path, sizeof path, "/sse?topic=shard%d", t);
        lg_sse_must_open(&on_b[t], b.public_port, path, NULL);
    }
    static char acked[SHARD_TOPICS][ID_MAX];
    for (int t = 0; t < SHARD_TOPICS; t++) {
        char topic[32];
        snprintf(topic, sizeof topic, "shard%d", t);
        ck_assert_int_eq(publish(&a, topic, "x", acked[t]), 201);
    }
    int on_first = 0, on_second = 0;
    for (int t = 0; t < SHARD_TOPICS; t++) {
        long long n1 = lg_redis_int(&redis, "XLEN livegate:{shard%d}:s", t);
        long long n2 = lg_redis_int(&r2, "XLEN livegate:{shard%d}:s", t);
        ck_assert_msg(n1 + n2 == 1 && n1 >= 0 && n2 >= 0, "shard%d: %lld + %lld entries", t, n1,
                      n2);
        on_first += n1 == 1;
        on_second += n2 == 1;
        struct lg_sse_event ev;
        ck_assert_int_eq(lg_sse_next(&on_b[t], &ev, WAIT_MS), 1);
        ck_assert_str_eq(ev.id, acked[t]);
        lg_sse_event_free(&ev);
        lg_sse_close(&on_b[t]);
    }
    ck_assert_msg(on_first > 0 && on_second > 0, "%d topics on the first shard, %d on the second",
                  on_first, on_second);
    lg_server_must_stop(&a);
    lg_server_must_stop(&b);
    lg_redis_stop(&r2);
}
END_TEST

/* A node that falls behind the stream's retention (stopped while another node publishes far
 * more than history.max_events, and its Pub/Sub connection dropped meanwhile, so what the
 * channel sent it is gone): its connected subscriber gets a gap naming exactly what Redis
 * trimmed before the node read it, then every event after. */
#define TRIM_EVENTS 400

START_TEST(a_tail_behind_retention_sends_a_gap)
{
    struct lg_server a, b;
    const char *small = "\"history\": {\"max_events\": 5}";
    node_start(&a, small);
    node_start(&b, small);
    struct lg_sse_client c;
    lg_sse_must_open(&c, a.public_port, "/sse?topic=trim", NULL);
    static char acked[TRIM_EVENTS][ID_MAX];
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(publish(&b, "trim", "x", acked[i]), 201);
    static struct seen v;
    memset(&v, 0, sizeof v);
    sse_collect(&c, &v, 3);
    kill(a.pid, SIGSTOP);
    /* A's channel connection dropped before the events: what it reads is the stream's */
    ck_assert_int_eq(lg_redis_int(&redis, "CLIENT KILL TYPE pubsub"), 1); /* A's, alone */
    for (int i = 3; i < TRIM_EVENTS; i++)
        ck_assert_int_eq(publish(&b, "trim", "x", acked[i]), 201);
    long long kept = lg_redis_int(&redis, "XLEN livegate:{trim}:s");
    ck_assert_int_lt(kept, 300); /* MAXLEN ~ 5 trimmed whole stream nodes */
    kill(a.pid, SIGCONT);
    /* What A had before it stopped, then the gap up to the oldest entry still retained, then
     * everything from there */
    uint64_t next = 4;
    bool gap_seen = false;
    while (next <= TRIM_EVENTS) {
        struct lg_sse_event ev;
        ck_assert_msg(lg_sse_next(&c, &ev, WAIT_MS) == 1, "stream stopped before %llu",
                      (unsigned long long)next);
        if (strcmp(ev.event, "gap") == 0) {
            ck_assert(!gap_seen);
            gap_seen = true;
            char want[64];
            snprintf(want, sizeof want, "\"from\":%llu,\"to\":%lld",
                     (unsigned long long)next, TRIM_EVENTS - kept);
            ck_assert_msg(strstr(ev.data, want) != NULL, "gap %s, want %s", ev.data, want);
            next = (uint64_t)(TRIM_EVENTS - kept) + 1;
        } else {
            ck_assert_str_eq(ev.event, "message");
            ck_assert_str_eq(ev.id, acked[next - 1]);
            next++;
        }
        lg_sse_event_free(&ev);
    }
    ck_assert_msg(gap_seen, "no gap: the tail read every event before they were trimmed");
    lg_sse_close(&c);
    lg_server_must_stop(&a);
    lg_server_must_stop(&b);
}
END_TEST

/* ---- Idempotency across nodes ------------------------------------------------------------- */

static int publish_keyed(const struct lg_server *s, const char *key, struct lg_http_response *r)
{
    char headers[128];
    snprintf(headers, sizeof headers, "Idempotency-Key: %s\r\n", key);
    ck_assert_int_eq(lg_http_request(s->control_port, "POST", "/v1/topics/idem/events", headers,
                                     "once", 4, r, 5000), 0);
    return r->status;
}

START_TEST(idempotent_retry_on_the_other_node_is_one_event)
{
    struct lg_server a, b;
    struct lg_sse_client c;
    node_start(&a, NULL);
    node_start_subscribed(&b, &c, "/sse?topic=idem");
    struct lg_http_response first, retry;
    ck_assert_int_eq(publish_keyed(&a, "order-17", &first), 201);
    ck_assert_int_eq(publish_keyed(&b, "order-17", &retry), 201);
    char id1[ID_MAX], id2[ID_MAX];
    ck_assert(json_str(first.body, "id", id1, sizeof id1));
    ck_assert(json_str(retry.body, "id", id2, sizeof id2));
    ck_assert_str_eq(id1, id2);
    ck_assert_ptr_null(strstr(first.body, "duplicate"));
    ck_assert_ptr_nonnull(strstr(retry.body, "\"duplicate\":true"));
    lg_http_response_free(&first), lg_http_response_free(&retry);
    char marker[ID_MAX];
    ck_assert_int_eq(publish(&b, "idem", "marker", marker), 201);
    ck_assert_uint_eq(lg_seq_of(marker), 2);
    static struct seen v;
    memset(&v, 0, sizeof v);
    sse_collect(&c, &v, 2);
    ck_assert_str_eq(v.id[0], id1);
    ck_assert_str_eq(v.data[0], "once");
    ck_assert_str_eq(v.id[1], marker);
    ck_assert_int_eq(lg_redis_int(&redis, "XLEN livegate:{idem}:s"), 2);
    lg_sse_close(&c);
    lg_server_must_stop(&a);
    lg_server_must_stop(&b);
}
END_TEST

/* ---- Draining one of two nodes ------------------------------------------------------------ */

#define DRAIN_SUBS 200
#define DRAIN_WINDOW_MS 1500

START_TEST(drain_moves_200_clients_over_the_window_without_loss)
{
    struct lg_server a, b;
    node_start(&a, "\"drain_window_ms\": 1500, \"drain_timeout_ms\": 10000");
    node_start(&b, NULL);
    static struct lg_sse_client subs[DRAIN_SUBS];
    static struct seen v[DRAIN_SUBS];
    static int64_t ended_ms[DRAIN_SUBS];
    static bool moved[DRAIN_SUBS];
    memset(v, 0, sizeof v), memset(moved, 0, sizeof moved);
    for (int k = 0; k < DRAIN_SUBS; k++)
        lg_sse_must_open(&subs[k], a.public_port, "/sse?topic=dr", NULL);
    static char acked[10][ID_MAX];
    for (int i = 0; i < 5; i++)
        ck_assert_int_eq(publish(&a, "dr", "x", acked[i]), 201);
    char epoch[16];
    lg_epoch_of(acked[0], epoch, sizeof epoch);
    kill(a.pid, SIGTERM);
    int64_t start = lg_now_ms(), deadline = start + DRAIN_WINDOW_MS + 8000;
    int published = 5, left = DRAIN_SUBS;
    while (left > 0 && lg_now_ms() < deadline) {
        if (published < 10 && lg_now_ms() - start > (published - 4) * 200)
            ck_assert_int_eq(publish(&b, "dr", "x", acked[published++]), 201); /* meanwhile */
        for (int k = 0; k < DRAIN_SUBS; k++) {
            if (moved[k])
                continue;
            struct lg_sse_event ev;
            int rc;
            while ((rc = lg_sse_next(&subs[k], &ev, 0)) == 1) {
                if (strcmp(ev.event, "message") == 0)
                    seen_add(&v[k], ev.id, ev.data, ev.data_len);
                lg_sse_event_free(&ev);
            }
            if (rc != -1)
                continue;
            /* A ended the stream: the client reconnects to B with its last id */
            ck_assert_msg(subs[k].retry_ms >= 1500 && subs[k].retry_ms <= 3000,
                          "drained with retry: %d", subs[k].retry_ms);
            ended_ms[k] = lg_now_ms() - start;
            lg_sse_close(&subs[k]);
            char path[256];
            if (v[k].n)
                snprintf(path, sizeof path, "/sse?topic=dr&last_event_id=%s", v[k].id[v[k].n - 1]);
            else
                snprintf(path, sizeof path, "/sse?topic=dr&last_event_id=dr@%s:0", epoch);
            lg_sse_must_open(&subs[k], b.public_port, path, NULL);
            moved[k] = true;
            left--;
        }
        usleep(2000);
    }
    ck_assert_msg(left == 0, "%d clients were never moved", left);
    while (published < 10)
        ck_assert_int_eq(publish(&b, "dr", "x", acked[published++]), 201);
    for (int k = 0; k < DRAIN_SUBS; k++) {
        sse_collect(&subs[k], &v[k], 10);
        char who[48];
        snprintf(who, sizeof who, "client %d (moved at %lld ms)", k, (long long)ended_ms[k]);
        expect_ids(who, &v[k], acked, 10);
        lg_sse_close(&subs[k]);
    }
    /* The spread: the moves cover most of the window and no tenth of it holds a crowd. */
    int64_t first = ended_ms[0], last = ended_ms[0];
    int bucket[10] = {0};
    for (int k = 0; k < DRAIN_SUBS; k++) {
        first = ended_ms[k] < first ? ended_ms[k] : first;
        last = ended_ms[k] > last ? ended_ms[k] : last;
    }
    for (int k = 0; k < DRAIN_SUBS; k++) {
        int i = last > first ? (int)((ended_ms[k] - first) * 10 / (last - first + 1)) : 0;
        bucket[i]++;
    }
    for (int i = 0; i < 10; i++)
        ck_assert_msg(bucket[i] <= DRAIN_SUBS / 4, "tenth %d of the moves holds %d of %d clients",
                      i, bucket[i], DRAIN_SUBS);
    ck_assert_msg(last - first >= DRAIN_WINDOW_MS / 2, "moves spread over %lld ms only",
                  (long long)(last - first));
    int status;
    ck_assert_int_eq(waitpid(a.pid, &status, 0), a.pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "node A exited %d", status);
    lg_server_must_stop(&b);
}
END_TEST

/* ---- Redis Sentinel: a master, one replica, three sentinels -------------------------------- */

#define SENTINELS 3
#define MASTER_NAME "lgm"

static struct lg_redis replica, sentinels[SENTINELS];

/* Wait until cond() holds or WAIT_MS * 2 passed. Return value: whether it held. */
static bool until(bool (*cond)(void))
{
    int64_t deadline = lg_now_ms() + 2 * WAIT_MS;
    while (!cond() && lg_now_ms() < deadline)
        usleep(20000);
    return cond();
}

/* A write reaches the replica (after a diskless sync the master streams to it only from its
 * first acknowledgement, up to a second later). */
static bool replica_in_sync(void)
{
    return lg_redis_replicated(&redis, 1);
}

static bool sentinels_know_the_replica(void)
{
    for (int i = 0; i < SENTINELS; i++)
        if (lg_redis_int(&sentinels[i], "SENTINEL replicas %s", MASTER_NAME) < 1)
            return false;
    return true;
}

static void setup_sentinel(void)
{
    setup();
    ck_assert_int_eq(lg_redis_start_replica(&replica, &redis), 0);
    for (int i = 0; i < SENTINELS; i++)
        ck_assert_int_eq(lg_redis_start_sentinel(&sentinels[i], &redis, MASTER_NAME), 0);
    ck_assert_msg(until(replica_in_sync), "the replica never synced with the master");
    ck_assert_msg(until(sentinels_know_the_replica), "the sentinels never found the replica");
}

static void teardown_sentinel(void)
{
    for (int i = 0; i < SENTINELS; i++)
        lg_redis_stop(&sentinels[i]);
    lg_redis_stop(&replica);
    teardown();
}

/* A node that finds the master through the sentinels and answers a publish once one replica
 * has it (WAIT 1, at most 300 ms). */
static void node_start_sentinel(struct lg_server *s)
{
    char list[256] = "", cfg[768];
    for (int i = 0; i < SENTINELS; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s\"%s\"", i ? ", " : "",
                 sentinels[i].url);
    snprintf(cfg, sizeof cfg,
             "{\"workers\": 2, \"redis\": {\"url\": \"\", \"sentinels\": [%s], "
             "\"master_name\": \"" MASTER_NAME "\", \"wait_replicas\": 1, "
             "\"wait_timeout_ms\": 300, \"connect_timeout_ms\": 500, "
             "\"reconnect_min_ms\": 20, \"reconnect_max_ms\": 200}}", list);
    lg_server_must_start(s, cfg);
    ck_assert(lg_metric_wait(s->control_port, "livegate_store_ready", 1, WAIT_MS));
}

static int publish_with_key(const struct lg_server *s, const char *topic, const char *key,
                            const char *data, struct lg_http_response *r)
{
    char headers[128], path[128];
    snprintf(headers, sizeof headers, "Idempotency-Key: %s\r\n", key);
    snprintf(path, sizeof path, "/v1/topics/%s/events", topic);
    ck_assert_int_eq(lg_http_request(s->control_port, "POST", path, headers, data, strlen(data),
                                     r, 5000), 0);
    return r->status;
}

/* Over the sentinels a node publishes and delivers, each publish answered only once the
 * replica has it; with the replica stopped, WAIT sees none: 503 + Retry-After (the event is
 * appended: a retry with its key, on the other node, answers it once replicated). */
START_TEST(sentinel_node_publishes_only_what_a_replica_has)
{
    struct lg_server a, b;
    node_start_sentinel(&a);
    node_start_sentinel(&b);
    struct lg_sse_client c;
    lg_sse_must_open(&c, b.public_port, "/sse?topic=sn", NULL);
    static char acked[7][ID_MAX];
    for (int i = 0; i < 5; i++) {
        ck_assert_int_eq(publish(&a, "sn", "x", acked[i]), 201);
        ck_assert_int_eq(lg_redis_int(&replica, "XLEN livegate:{sn}:s"), i + 1);
    }
    kill(replica.pid, SIGSTOP);
    struct lg_http_response r;
    ck_assert_int_eq(publish_with_key(&a, "sn", "held", "x", &r), 503);
    lg_expect_error(&r, 503, "unavailable", LG_ERROR_JSON_TYPE);
    char retry[16];
    ck_assert(lg_http_header(&r, "Retry-After", retry, sizeof retry));
    lg_http_response_free(&r);
    ck_assert_int_eq(lg_stat(a.control_port, "redis_replicas_short"), 1);
    ck_assert_int_eq(lg_stat(a.control_port, "publishes_refused_store"), 1);
    kill(replica.pid, SIGCONT);
    ck_assert_int_eq(publish_with_key(&b, "sn", "held", "x", &r), 201);
    ck_assert(json_str(r.body, "id", acked[5], ID_MAX));
    ck_assert_ptr_nonnull(strstr(r.body, "\"duplicate\":true"));
    lg_http_response_free(&r);
    ck_assert_uint_eq(lg_seq_of(acked[5]), 6);
    ck_assert_int_eq(publish(&b, "sn", "x", acked[6]), 201);
    static struct seen v;
    memset(&v, 0, sizeof v);
    sse_collect(&c, &v, 7);
    expect_ids("SSE on B", &v, acked, 7);
    lg_sse_close(&c);
    lg_server_must_stop(&a);
    lg_server_must_stop(&b);
}
END_TEST

#define FAILOVER_MAX 200
#define FAILOVER_AFTER 15 /* events acknowledged before the failover, and at least after it */

static bool replica_is_master(void)
{
    char role[16] = "";
    return lg_redis_str(&replica, role, sizeof role, "ROLE") == 0 && strcmp(role, "master") == 0;
}

/* Publish event i (key fo-i) on s, again while it answers 503, until deadline: its id. */
static void publish_until_acked(const struct lg_server *s, int i, char *id, int64_t deadline,
                                int *refused)
{
    char key[32], data[32];
    snprintf(key, sizeof key, "fo-%d", i);
    snprintf(data, sizeof data, "e%d", i);
    for (;;) {
        struct lg_http_response r;
        int status = publish_with_key(s, "fo", key, data, &r);
        if (status == 201)
            ck_assert(json_str(r.body, "id", id, ID_MAX));
        char retry[16];
        bool told_when = lg_http_header(&r, "Retry-After", retry, sizeof retry);
        lg_http_response_free(&r);
        if (status == 201)
            return;
        ck_assert_int_eq(status, 503);
        ck_assert(told_when);
        ck_assert_msg(lg_now_ms() < deadline, "event %d never acknowledged", i);
        (*refused)++;
        usleep(20000);
    }
}

/* Read what sub has now, without waiting, into v. */
static void sse_take_ready(struct lg_sse_client *sub, struct seen *v)
{
    struct lg_sse_event ev;
    while (lg_sse_next(sub, &ev, 0) == 1) {
        if (strcmp(ev.event, "message") == 0)
            seen_add(v, ev.id, ev.data, ev.data_len);
        lg_sse_event_free(&ev);
    }
}

/* Close sub and resume it on the node at port with its cursor (its last id, or the topic's
 * start in epoch). */
static void sse_move(struct lg_sse_client *sub, const struct seen *v, uint16_t port,
                     const char *epoch)
{
    lg_sse_close(sub);
    char path[256];
    if (v->n)
        snprintf(path, sizeof path, "/sse?topic=fo&last_event_id=%s", v->id[v->n - 1]);
    else
        snprintf(path, sizeof path, "/sse?topic=fo&last_event_id=fo@%s:0", epoch);
    lg_sse_must_open(sub, port, path, NULL);
}

/* A failover (SENTINEL failover on the last sentinel; the nodes ask the first, which may name
 * the demoted master a moment longer) while a publisher alternates between two nodes with
 * Idempotency-Keys, retrying 503s: every acknowledged event reaches subscribers exactly once,
 * in order, with the ids of the answers, also after each moved to the other node with its
 * cursor, and the new master holds them all. */
START_TEST(sentinel_failover_while_publishing_nothing_acknowledged_lost)
{
    struct lg_server a, b;
    node_start_sentinel(&a);
    node_start_sentinel(&b);
    struct lg_server *nodes[2] = {&a, &b};
    static struct lg_sse_client subs[2];
    static struct seen v[2];
    memset(v, 0, sizeof v);
    for (int k = 0; k < 2; k++)
        lg_sse_must_open(&subs[k], nodes[k]->public_port, "/sse?topic=fo", NULL);
    static char acked[FAILOVER_MAX][ID_MAX];
    int64_t deadline = lg_now_ms() + 40000;
    int n = 0, refused = 0, after = -1;
    for (; n < FAILOVER_AFTER; n++)
        publish_until_acked(nodes[n % 2], n, acked[n], deadline, &refused);
    char answer[64] = "";
    while (strcmp(answer, "OK") != 0) { /* until the sentinel has fresh news of the replica */
        lg_redis_str(&sentinels[SENTINELS - 1], answer, sizeof answer, "SENTINEL failover %s",
                     MASTER_NAME);
        ck_assert_msg(lg_now_ms() < deadline, "SENTINEL failover: %s", answer);
        if (strcmp(answer, "OK") != 0)
            usleep(100000);
    }
    char epoch[16];
    lg_epoch_of(acked[0], epoch, sizeof epoch);
    while (after < 0 || n < after + FAILOVER_AFTER) {
        ck_assert_int_lt(n, FAILOVER_MAX);
        publish_until_acked(nodes[n % 2], n, acked[n], deadline, &refused);
        ck_assert_uint_eq(lg_seq_of(acked[n]), (uint64_t)n + 1);
        n++;
        if (after < 0 && !replica_is_master()) {
            usleep(20000); /* about 50 publishes/s while Sentinel works (seconds) */
        } else if (after < 0) {
            after = n;
            for (int k = 0; k < 2; k++) { /* each subscriber moves to the other node */
                sse_take_ready(&subs[k], &v[k]);
                sse_move(&subs[k], &v[k], nodes[1 - k]->public_port, epoch);
            }
        }
    }
    for (int k = 0; k < 2; k++) {
        sse_collect(&subs[k], &v[k], n);
        char who[64];
        snprintf(who, sizeof who, "subscriber %d (moved to node %c)", k, k ? 'A' : 'B');
        expect_ids(who, &v[k], acked, n);
        for (int i = 0; i < n; i++) {
            char data[32];
            snprintf(data, sizeof data, "e%d", i);
            ck_assert_str_eq(v[k].data[i], data);
        }
        lg_sse_close(&subs[k]);
    }
    ck_assert_int_eq(lg_redis_int(&replica, "XLEN livegate:{fo}:s"), n);
    /* the new master had no replica until Sentinel turned the old one into one: 503s */
    ck_assert_int_gt(refused, 0);
    fprintf(stderr, "failover: %d events acknowledged, %d after it, %d publishes answered 503 "
            "meanwhile\n", n, n - after, refused);
    lg_server_must_stop(&a);
    lg_server_must_stop(&b);
}
END_TEST

/* Wait (bounded) until the node's livegate_topics_collected_total reaches at least want. */
static bool collected_at_least(const struct lg_server *s, double want, int timeout_ms)
{
    int64_t deadline = lg_now_ms() + timeout_ms;
    double got;
    while ((got = lg_metric(s->control_port, "livegate_topics_collected_total")) < want &&
           lg_now_ms() < deadline)
        usleep(20000);
    return got >= want;
}

/* A node lets go of the topics nobody there wants for 10 s (publish-only ones, and one whose
 * subscriber left): Redis keeps their streams, so limits.max_topics bounds what a node holds at
 * once, not how many topics it ever saw. A client that resumes on a topic let go gets exactly
 * what was published meanwhile. */
START_TEST(topics_nobody_wants_are_let_go_and_come_back_from_redis)
{
    struct lg_server a, b;
    node_start(&a, "\"limits\": {\"max_topics\": 40}");
    node_start(&b, NULL);
    struct lg_sse_client sub;
    lg_sse_must_open(&sub, a.public_port, "/sse?topic=kept", NULL);
    static char acked[4][ID_MAX];
    ck_assert_int_eq(publish(&b, "kept", "k0", acked[0]), 201);
    static struct seen v;
    memset(&v, 0, sizeof v);
    sse_collect(&sub, &v, 1);
    lg_sse_close(&sub);
    double collected = lg_metric(a.control_port, "livegate_topics_collected_total");
    for (int round = 0; round < 2; round++) { /* 60 topics through a node that holds 40 */
        for (int i = 0; i < 30; i++) {
            char topic[32];
            snprintf(topic, sizeof topic, "once-%d-%d", round, i);
            ck_assert_int_eq(publish(&a, topic, "x", NULL), 201);
        }
        if (round == 0) { /* these 30 and the one its subscriber left */
            collected += 31;
            ck_assert_msg(collected_at_least(&a, collected, 20000),
                          "the topics nobody wants were not let go");
        }
    }
    for (int i = 1; i < 4; i++) {
        char data[8];
        snprintf(data, sizeof data, "k%d", i);
        ck_assert_int_eq(publish(&b, "kept", data, acked[i]), 201);
    }
    char path[256];
    snprintf(path, sizeof path, "/sse?topic=kept&last_event_id=%s", acked[0]);
    lg_sse_must_open(&sub, a.public_port, path, NULL);
    memset(&v, 0, sizeof v);
    sse_collect(&sub, &v, 3);
    expect_ids("SSE resuming on A", &v, acked + 1, 3);
    ck_assert_str_eq(v.data[0], "k1");
    ck_assert_str_eq(v.data[2], "k3");
    lg_sse_expect_quiet(&sub, 200);
    lg_sse_close(&sub);
    lg_server_must_stop(&a);
    lg_server_must_stop(&b);
}
END_TEST

/*
 * A publish over Redis is admitted as on one node, before the append: a node whose live events
 * hold limits.max_retained_bytes (here one topic's copy of its history, which gave way to its
 * own new events, so less than one more event fits) refuses a publish to another topic, which
 * has no history to give way, with the memory store's 503, and Redis never sees it.
 */
START_TEST(a_node_full_of_live_events_refuses_a_publish_as_one_node_does)
{
    struct lg_server a;
    struct lg_sse_client hoarder;
    node_start(&a, "\"limits\": {\"max_retained_bytes\": 1048576}");
    lg_sse_must_open(&hoarder, a.public_port, "/sse?topic=hoard", NULL);
    enum { DATA = 60000, EVENTS = 12 };
    char *data = malloc(DATA + 1);
    memset(data, 'm', DATA);
    data[DATA] = '\0';
    static struct seen v;
    for (int i = 0; i < EVENTS; i++) { /* each read at once: no client queue pins memory */
        ck_assert_int_eq(publish(&a, "hoard", data, NULL), 201);
        sse_collect(&hoarder, &v, i + 1); /* delivered: in the node's copy of the history */
    }
    ck_assert_int_ge(lg_stat(a.control_port, "history_evicted"), 1);
    struct lg_http_response r;
    ck_assert_int_eq(lg_http_request(a.control_port, "POST", "/v1/topics/other/events", NULL,
                                     data, DATA, &r, WAIT_MS), 0);
    lg_expect_error(&r, 503, "unavailable", LG_ERROR_JSON_TYPE | LG_ERROR_ONLY_KEYS);
    ck_assert_msg(strstr(r.body, "limits.max_retained_bytes"), "%s", r.body);
    lg_http_response_free(&r);
    char *metrics = lg_metrics_scrape(a.control_port);
    ck_assert_msg(strstr(metrics,
                         "\nlivegate_publishes_refused_total{reason=\"max_retained_bytes\"} 1\n"),
                  "%.400s", strstr(metrics, "livegate_publishes_refused_total{"));
    free(metrics);
    ck_assert_int_eq(lg_redis_int(&redis, "XLEN livegate:{other}:s"), 0); /* nothing appended */
    free(data);
    lg_sse_close(&hoarder);
    lg_server_must_stop(&a);
}
END_TEST

static Suite *scaling_suite(void)
{
    Suite *s = suite_create("scaling");
    TCase *tc = LG_TCASE(s, "redis", setup, teardown, two_nodes_same_ids_over_sse_ws_poll,
                         alternating_publishers_one_total_order,
                         kill9_node_clients_resume_on_the_other,
                         redis_restart_503_meanwhile_nothing_acknowledged_lost,
                         redis_loses_its_data_subscribers_get_a_reset,
                         redis_hangs_publish_answers_503_after_the_command_timeout,
                         a_tail_behind_retention_sends_a_gap,
                         idempotent_retry_on_the_other_node_is_one_event,
                         drain_moves_200_clients_over_the_window_without_loss,
                         keys_flushed_while_streaming, topic_keys_deleted_while_streaming,
                         epoch_key_deleted_while_streaming, counter_key_deleted_while_streaming,
                         pubsub_connection_lost_alone_nothing_lost,
                         a_cursor_from_one_node_is_valid_on_the_other_at_once,
                         two_shards_topics_land_on_both_each_node_delivers_both,
                         clients_move_both_ways_around_a_node_killed_and_restarted,
                         topics_nobody_wants_are_let_go_and_come_back_from_redis,
                         a_node_full_of_live_events_refuses_a_publish_as_one_node_does);
    tcase_set_timeout(tc, 60);
    TCase *sentinel = LG_TCASE(s, "sentinel", setup_sentinel, teardown_sentinel,
                               sentinel_node_publishes_only_what_a_replica_has,
                               sentinel_failover_while_publishing_nothing_acknowledged_lost);
    tcase_set_timeout(sentinel, 60);
    return s;
}

LG_CHECK_MAIN(scaling_suite)
