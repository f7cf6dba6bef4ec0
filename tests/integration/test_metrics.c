/*
 * test_metrics.c - GET /metrics through the real binary: promtool accepts the exposition, and
 * after a scripted run of traffic every counter has the value the script makes exact:
 * connections, publishes, deliveries by transport, drops by reason (a stalled client: the
 * drops equal what its gap notices covered), refusals by reason, notices by kind, closes by
 * reason; the delivery-lag histogram counts exactly the events delivered; the per-worker
 * series have one sample per worker.
 */
#include <check.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lg_test.h"

#include "check_main.h"

#define WAIT_MS 5000
#define STALL_RCVBUF 4096
#define FLOOD_N 200

#define CONFIG                                                                                     \
    "{\"workers\":2,\"socket_send_buffer_bytes\":4096,\"write_batch_bytes\":4096,"                 \
    "\"drain_timeout_ms\":1000,\"client_queue\":{\"max_events\":8},"                              \
    "\"limits\":{\"max_topics\":3}}"

/* One sample the exposition must hold, with its exact value. */
struct sample {
    const char *series; /* name and labels exactly as exposed */
    double want;
};

static void expect(const char *body, const char *series, double want)
{
    double got = lg_metrics_value(body, series);
    ck_assert_msg(got == want, "%s is %.17g, want %.17g", series, got, want);
}

/* expect() for each of the n samples, in order. */
static void expect_samples(const char *body, const struct sample *samples, size_t n)
{
    for (size_t i = 0; i < n; i++)
        expect(body, samples[i].series, samples[i].want);
}

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* promtool check metrics accepts body. */
static void promtool_accepts(const char *body)
{
    char path[] = "/tmp/lg-metrics-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    FILE *in = fdopen(fd, "w");
    ck_assert_ptr_nonnull(in);
    ck_assert_uint_eq(fwrite(body, 1, strlen(body), in), strlen(body));
    ck_assert_int_eq(fclose(in), 0);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "promtool check metrics < %s > %s.out 2>&1", path, path);
    int rc = system(cmd);
    char out[4096] = "";
    snprintf(cmd, sizeof cmd, "%s.out", path);
    FILE *f = fopen(cmd, "r");
    if (f) {
        size_t got = fread(out, 1, sizeof out - 1, f);
        out[got] = '\0';
        fclose(f);
    }
    unlink(cmd);
    unlink(path);
    ck_assert_msg(rc == 0, "promtool check metrics failed (%d): %s", rc, out);
}

/* Read a resumed stalled stream through seq `last` (events or gaps, in order): how many
 * events and how many seqs the gaps covered. */
static void read_through(struct lg_sse_client *c, uint64_t first, uint64_t last, uint64_t *events,
                         uint64_t *gaps, uint64_t *gap_seqs)
{
    uint64_t next = first;
    int64_t deadline = lg_now_ms() + 20000;
    while (next <= last) {
        struct lg_sse_event ev;
        ck_assert_msg(lg_sse_next(c, &ev, lg_left_ms(deadline)) == 1, "stream ended at %" PRIu64,
                      next);
        if (strcmp(ev.event, "gap") == 0) {
            const char *from = strstr(ev.data, "\"from\":"), *to = strstr(ev.data, "\"to\":");
            ck_assert(from && to);
            uint64_t f = strtoull(from + 7, NULL, 10), t = strtoull(to + 5, NULL, 10);
            ck_assert_uint_eq(f, next);
            *gap_seqs += t - f + 1;
            (*gaps)++;
            next = t + 1;
        } else {
            ck_assert_str_eq(ev.event, "message");
            ck_assert_uint_eq(lg_seq_of(ev.id), next);
            (*events)++;
            next++;
        }
        lg_sse_event_free(&ev);
    }
}

START_TEST(test_metrics_exact_after_traffic)
{
    struct lg_server s;
    lg_server_must_start(&s, CONFIG);
    char *idle = lg_metrics_scrape(s.control_port);
    promtool_accepts(idle);
    free(idle);

    /* Two SSE and one WebSocket subscriber get 5 events; a poll reads them from history. */
    struct lg_sse_client a, b;
    lg_sse_must_open(&a, s.public_port, "/sse?topic=m", NULL);
    lg_sse_must_open(&b, s.public_port, "/sse?topic=m", NULL);
    struct lg_ws_client ws;
    lg_ws_must_subscribe(&ws, s.public_port, "/ws?topic=m", NULL, NULL, 0);
    char epoch[16];
    lg_publish_n_epoch(s.control_port, "m", 1, 5, epoch, sizeof epoch);
    for (int i = 0; i < 5; i++) {
        struct lg_sse_event ev;
        ck_assert_int_eq(lg_sse_next(&a, &ev, WAIT_MS), 1);
        lg_sse_event_free(&ev);
        ck_assert_int_eq(lg_sse_next(&b, &ev, WAIT_MS), 1);
        lg_sse_event_free(&ev);
        char *m = NULL;
        ck_assert_int_eq(lg_ws_next(&ws, &m, WAIT_MS), 1);
        free(m);
    }
    char path[512];
    snprintf(path, sizeof path, "/poll?topic=m&since=m@%s:0&timeout=0", epoch);
    struct lg_http_response r;
    ck_assert_int_eq(lg_http_request(s.public_port, "GET", path, NULL, NULL, 0, &r, WAIT_MS), 0);
    ck_assert_int_eq(r.status, 200);
    lg_http_response_free(&r);

    /* A stalled SSE subscriber on "s" with an 8-event queue: 200 events of 1 KiB overflow it. */
    char id1[256];
    ck_assert_int_eq(lg_publish(s.control_port, "s", "warm-up", id1, sizeof id1), 201);
    snprintf(path, sizeof path, "/sse?topic=s&last_event_id=%s", id1);
    int fd = lg_stall_sse_open(s.public_port, path, NULL, STALL_RCVBUF);
    ck_assert_int_ge(fd, 0);
    ck_assert(lg_wait_stat(s.control_port, "clients_sse", 3, WAIT_MS));
    char data[1025];
    memset(data, 'x', 1024);
    data[1024] = '\0';
    for (int i = 0; i < FLOOD_N; i++)
        ck_assert_int_eq(lg_publish(s.control_port, "s", data, NULL, 0), 201);
    struct lg_sse_client stalled;
    ck_assert_int_eq(lg_stall_sse_resume(&stalled, fd, WAIT_MS), 0);
    uint64_t events = 0, gaps = 0, gap_seqs = 0;
    read_through(&stalled, 2, 1 + FLOOD_N, &events, &gaps, &gap_seqs);
    ck_assert_uint_gt(gap_seqs, 0);

    /* Refusals: topics m and s exist, x is the third; y and z find limits.max_topics. */
    ck_assert_int_eq(lg_publish(s.control_port, "x", "1", NULL, 0), 201);
    ck_assert_int_eq(lg_publish(s.control_port, "y", "1", NULL, 0), 503);
    ck_assert_int_eq(lg_publish(s.control_port, "z", "1", NULL, 0), 503);

    /* The poll's connection is closed (and counted) once only the 4 streams are open. */
    ck_assert(lg_wait_stat(s.control_port, "connections_open", 4, WAIT_MS));
    char *body = lg_metrics_scrape(s.control_port);
    promtool_accepts(body);
    const struct sample after_traffic[] = {
        {"livegate_events_published_total", 5 + 1 + FLOOD_N + 1},
        {"livegate_events_delivered_total{transport=\"sse\"}", 10 + (double)events},
        {"livegate_events_delivered_total{transport=\"websocket\"}", 5},
        {"livegate_events_delivered_total{transport=\"poll\"}", 5},
        {"livegate_delivery_lag_seconds_count", 20 + (double)events},
        {"livegate_delivery_lag_seconds_bucket{le=\"+Inf\"}", 20 + (double)events},
        {"livegate_events_dropped_total{reason=\"overflow\"}", (double)gap_seqs},
        {"livegate_events_dropped_total{reason=\"lag\"}", 0},
        {"livegate_events_dropped_total{reason=\"conflated\"}", 0},
        {"livegate_notices_sent_total{kind=\"gap\"}", (double)gaps},
        {"livegate_notices_sent_total{kind=\"reset\"}", 0},
        {"livegate_publishes_refused_total{reason=\"max_topics\"}", 2},
        {"livegate_publishes_refused_total{reason=\"overload\"}", 0},
        {"livegate_publishes_refused_total{reason=\"max_retained_bytes\"}", 0},
        {"livegate_clients{transport=\"sse\"}", 3},
        {"livegate_clients{transport=\"websocket\"}", 1},
        {"livegate_clients{transport=\"poll\"}", 0},
        {"livegate_connections_opened_total", 5},
        {"livegate_connections_closed_total{reason=\"client\"}", 1}, /* the poll */
        {"livegate_topics", 3},
        {"livegate_publish_handling_seconds_count", 5 + 1 + FLOOD_N + 3},
    };
    expect_samples(body, after_traffic, COUNT(after_traffic));
    expect(body, "livegate_worker_busy_seconds_total{worker=\"1\"}",
           lg_metrics_value(body, "livegate_worker_busy_seconds_total{worker=\"1\"}"));
    ck_assert_ptr_null(strstr(body, "worker=\"2\""));
    ck_assert_msg(lg_metrics_value(body, "livegate_worker_busy_seconds_total{worker=\"0\"}") +
                          lg_metrics_value(body, "livegate_worker_busy_seconds_total{worker=\"1\"}") > 0,
                  "no worker was ever busy");
    expect(body, "livegate_build_info{version=\"" LG_VERSION "\"}", 1);
    free(body);

    /* Closing: a client close and a slow one are told apart. */
    lg_sse_close(&a);
    ck_assert(lg_wait_stat(s.control_port, "clients_sse", 2, WAIT_MS));
    body = lg_metrics_scrape(s.control_port);
    expect(body, "livegate_connections_closed_total{reason=\"client\"}", 2);
    expect(body, "livegate_connections_closed_total{reason=\"slow_consumer\"}", 0);
    free(body);

    lg_sse_close(&b);
    lg_sse_close(&stalled);
    lg_ws_close(&ws);
    lg_server_must_stop(&s);
}
END_TEST

/* Every metric line is a sample of a metric whose TYPE came before it, and HEAD answers. */
START_TEST(test_metrics_shape)
{
    struct lg_server s;
    lg_server_must_start(&s, NULL);
    char *body = lg_metrics_scrape(s.control_port);
    size_t types = 0;
    for (char *line = body; *line;) {
        char *end = strchr(line, '\n');
        ck_assert_msg(end, "the exposition does not end with a newline");
        if (strncmp(line, "# TYPE livegate_", 16) == 0)
            types++;
        else if (line[0] != '#')
            ck_assert_msg(strncmp(line, "livegate_", 9) == 0, "sample %.*s", (int)(end - line),
                          line);
        line = end + 1;
    }
    ck_assert_uint_ge(types, 30);
    free(body);
    struct lg_http_response r;
    ck_assert_int_eq(lg_http_request(s.control_port, "GET", "/metrics", NULL, NULL, 0, &r, WAIT_MS),
                     0);
    char ct[128];
    ck_assert(lg_http_header(&r, "Content-Type", ct, sizeof ct));
    ck_assert_str_eq(ct, "text/plain; version=0.0.4; charset=utf-8");
    lg_http_response_free(&r);
    ck_assert_int_eq(lg_http_request(s.control_port, "POST", "/metrics", NULL, "", 0, &r, WAIT_MS),
                     0);
    lg_expect_error(&r, 405, "method_not_allowed", LG_ERROR_JSON_TYPE);
    lg_http_response_free(&r);
    lg_server_must_stop(&s);
}
END_TEST

/* Per-topic series only for the topics metrics.topics allows; a bad pattern, or the list as one
 * comma-separated string (its type before 2026-12-02), is refused with the entry named. */
START_TEST(test_metrics_topic_allow_list)
{
    struct lg_server s;
    lg_server_must_start(&s, "{\"metrics\":{\"topics\":[\"orders/*\",\"vip\"]}}");
    lg_publish_n(s.control_port, "orders/1", 1, 3, NULL, 0);
    lg_publish_n(s.control_port, "orders/2", 1, 1, NULL, 0);
    lg_publish_n(s.control_port, "other", 1, 2, NULL, 0);
    lg_publish_n(s.control_port, "vip", 1, 4, NULL, 0);
    struct lg_sse_client c;
    lg_sse_must_open(&c, s.public_port, "/sse?topic=vip", NULL);
    char *body = lg_metrics_scrape(s.control_port);
    promtool_accepts(body);
    static const struct sample allowed[] = {
        {"livegate_topic_last_seq{topic=\"orders/1\"}", 3},
        {"livegate_topic_last_seq{topic=\"orders/2\"}", 1},
        {"livegate_topic_last_seq{topic=\"vip\"}", 4},
        {"livegate_topic_retained_events{topic=\"vip\"}", 4},
        {"livegate_topic_subscribers{topic=\"vip\"}", 1},
        {"livegate_topic_subscribers{topic=\"orders/1\"}", 0},
    };
    expect_samples(body, allowed, COUNT(allowed));
    ck_assert_ptr_null(strstr(body, "topic=\"other\""));
    expect(body, "livegate_history_events", 3 + 1 + 2 + 4);
    free(body);
    lg_sse_close(&c);
    lg_server_must_stop(&s);

    struct lg_server none;
    lg_server_must_start(&none, NULL);
    lg_publish_n(none.control_port, "orders/1", 1, 1, NULL, 0);
    body = lg_metrics_scrape(none.control_port);
    ck_assert_ptr_null(strstr(body, "livegate_topic_last_seq"));
    free(body);
    lg_server_must_stop(&none);

    struct lg_run_result r;
    char path[] = "/tmp/lg-metrics-cfg-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    const char bad[] = "{\"metrics\":{\"topics\":[\"ok/*\",\"bad topic\"]}}";
    ck_assert_int_eq(write(fd, bad, sizeof bad - 1), (ssize_t)(sizeof bad - 1));
    close(fd);
    const char *check[] = {"--config", path, "--check-config", NULL};
    ck_assert_int_eq(lg_run_binary(check, &r, WAIT_MS), 0);
    ck_assert_int_eq(r.status, 2);
    ck_assert_msg(strstr(r.err, "metrics.topics[1]: not a topic pattern"), "%s", r.err);
    lg_run_result_free(&r);

    const char as_string[] = "{\"metrics\":{\"topics\":\"ok/*, vip\"}}";
    fd = open(path, O_WRONLY | O_TRUNC);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, as_string, sizeof as_string - 1), (ssize_t)(sizeof as_string - 1));
    close(fd);
    ck_assert_int_eq(lg_run_binary(check, &r, WAIT_MS), 0);
    unlink(path);
    ck_assert_int_eq(r.status, 2);
    ck_assert_msg(strstr(r.err, "metrics.topics"), "%s", r.err);
    lg_run_result_free(&r);
}
END_TEST

/* The publish refusals by reason, each of them exactly (max_topics and overload have tests of
 * their own: test_metrics_exact_after_traffic, test_overload). */
static void expect_refusals(const char *body, double memory, double oom, double store,
                            double draining)
{
    const struct sample refused[] = {
        {"livegate_publishes_refused_total{reason=\"max_retained_bytes\"}", memory},
        {"livegate_publishes_refused_total{reason=\"out_of_memory\"}", oom},
        {"livegate_publishes_refused_total{reason=\"store_unavailable\"}", store},
        {"livegate_publishes_refused_total{reason=\"draining\"}", draining},
    };
    expect_samples(body, refused, COUNT(refused));
}

/*
 * limits.max_retained_bytes reached (memory store): one topic's history holds nearly all of it
 * (it gave way to its own new events, so less than one more event fits), and a publish to
 * another topic, which has no history to give way, is refused 503. Counted as
 * max_retained_bytes, not as out of memory.
 */
START_TEST(test_metrics_retained_bytes_refusal)
{
    struct lg_server s;
    lg_server_must_start(&s, "{\"limits\":{\"max_retained_bytes\":1048576}}");
    enum { DATA = 60000 };
    char *data = malloc(DATA + 1);
    memset(data, 'm', DATA);
    data[DATA] = '\0';
    for (int i = 0; i < 12; i++)
        ck_assert_int_eq(lg_publish(s.control_port, "hoard", data, NULL, 0), 201);
    ck_assert_int_ge(lg_stat(s.control_port, "history_evicted"), 1);
    struct lg_http_response r;
    ck_assert_int_eq(lg_http_request(s.control_port, "POST", "/v1/topics/other/events", NULL,
                                     data, DATA, &r, WAIT_MS), 0);
    lg_expect_error(&r, 503, "unavailable", LG_ERROR_JSON_TYPE | LG_ERROR_ONLY_KEYS);
    ck_assert_msg(strstr(r.body, "limits.max_retained_bytes"), "%s", r.body);
    lg_http_response_free(&r);
    char *body = lg_metrics_scrape(s.control_port);
    expect_refusals(body, 1, 0, 0, 0);
    free(body);
    free(data);
    lg_server_must_stop(&s);
}
END_TEST

static Suite *metrics_suite(void)
{
    Suite *s = suite_create("metrics");
    TCase *tc = LG_TCASE(s, "metrics", NULL, NULL, test_metrics_exact_after_traffic,
                         test_metrics_shape, test_metrics_topic_allow_list,
                         test_metrics_retained_bytes_refusal);
    tcase_set_timeout(tc, 120);
    return s;
}

LG_CHECK_MAIN(metrics_suite)
