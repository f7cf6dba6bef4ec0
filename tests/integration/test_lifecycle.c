/*
 * test_lifecycle.c - the process around the protocol, against the real binary: health and
 * readiness, SIGTERM with connected subscribers (a final retry: then end of stream, exit 0),
 * readiness 503 while draining, --check-config / --print-config / --version and their exit
 * statuses and messages.
 */
#include <check.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "lg_test.h"

#include "check_main.h"

#define WAIT_MS 5000
#define RETRY "retry: 3000\n\n"

static void expect_body(uint16_t port, const char *path, int status, const char *body)
{
    struct lg_http_response r;
    ck_assert_int_eq(lg_http_request(port, "GET", path, NULL, NULL, 0, &r, WAIT_MS), 0);
    ck_assert_msg(r.status == status, "%s: %d %s", path, r.status, r.body);
    ck_assert_str_eq(r.body, body);
    char ct[64];
    ck_assert(lg_http_header(&r, "Content-Type", ct, sizeof ct));
    ck_assert_str_eq(ct, "application/json");
    lg_http_response_free(&r);
}

/* Write text to a new temporary file; path receives its name. */
static void temp_file(char *path, size_t cap, const char *text)
{
    snprintf(path, cap, "/tmp/lg_lifecycle_XXXXXX.json");
    int fd = mkstemps(path, 5);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
}

/* ---- Signals ------------------------------------------------------------------------------ */

START_TEST(test_lifecycle_health_and_sigterm)
{
    struct lg_server s;
    lg_server_must_start(&s, NULL);
    expect_body(s.control_port, "/healthz", 200, "{\"status\":\"ok\"}");
    expect_body(s.control_port, "/readyz", 200, "{\"status\":\"ready\"}");

    struct lg_sse_client a, b;
    lg_sse_must_open(&a, s.public_port, "/sse?topic=life", NULL);
    lg_sse_must_open(&b, s.public_port, "/sse?topic=life&topic=other", NULL);
    char id[256];
    ck_assert_int_eq(lg_publish(s.control_port, "life", "x", id, sizeof id), 201);
    struct lg_sse_event ev;
    ck_assert_int_eq(lg_sse_next(&a, &ev, WAIT_MS), 1);
    lg_sse_event_free(&ev);
    size_t before = a.raw_len;

    /* stop: exit 0; both streams end with a retry: hint and a clean EOF */
    int64_t t0 = lg_now_ms();
    ck_assert_int_eq(lg_server_stop(&s, 10000), 0);
    ck_assert_msg(lg_now_ms() - t0 < 5000, "shutdown took %lld ms", (long long)(lg_now_ms() - t0));
    ck_assert_msg(lg_server_wait_log(&s, "stopped cleanly", 0), "log:\n%s", s.log);
    ck_assert(lg_sse_wait_eof(&a, WAIT_MS));
    ck_assert(lg_sse_wait_eof(&b, WAIT_MS));
    ck_assert_msg(strcmp(a.raw + before, RETRY) == 0, "after the last event: \"%s\"",
                  a.raw + before);
    char ep[16], want[512];
    ck_assert_int_eq(lg_id_parse(id, NULL, 0, ep, sizeof ep, NULL), 0);
    snprintf(want, sizeof want,
             RETRY "id: life@%1$s:0,other@%1$s:0\n\n"
                   "id: life@%1$s:1,other@%1$s:0\ndata: x\n\n" RETRY,
             ep);
    ck_assert_str_eq(b.raw, want);
    lg_sse_close(&a);
    lg_sse_close(&b);

    /* the port is closed now */
    ck_assert_int_lt(lg_tcp_connect(s.public_port), 0);
}
END_TEST

START_TEST(test_lifecycle_sigint)
{
    struct lg_server s;
    struct lg_sse_client a;
    lg_server_must_start(&s, NULL);
    lg_sse_must_open(&a, s.public_port, "/sse?topic=i", NULL);
    ck_assert_int_eq(kill(s.pid, SIGINT), 0);
    ck_assert(lg_sse_wait_eof(&a, WAIT_MS));
    /* the stream's cursor (topic "i" at seq 0, epoch unknown here), then the shutdown hint */
    static const char head[] = RETRY "id: i@", tail[] = ":0\n\n" RETRY;
    size_t len = strlen(a.raw);
    ck_assert_msg(strncmp(a.raw, head, strlen(head)) == 0 && len > strlen(head) + strlen(tail) &&
                      strcmp(a.raw + len - strlen(tail), tail) == 0,
                  "stream: %s", a.raw);
    lg_sse_close(&a);
    ck_assert_msg(lg_server_wait_log(&s, "stopped cleanly", WAIT_MS), "log:\n%s", s.log);
    lg_server_must_stop(&s);
}
END_TEST

/* SIGUSR1 and SIGUSR2 (whose default action kills) are logged and ignored, and SIGHUP reloads
 * (with no --config: the defaults again, nothing changed; test_reload.c has the rest): the
 * stream that was open before them gets the event published after them. */
START_TEST(test_lifecycle_ignored_signals)
{
    static const struct { int sig; const char *line; } sigs[] = {
        {SIGHUP, "reload applied: no setting changed"},
        {SIGUSR1, "received SIGUSR1: ignored"},
        {SIGUSR2, "received SIGUSR2: ignored"},
    };
    struct lg_server s;
    struct lg_sse_client a;
    lg_server_must_start(&s, NULL);
    lg_sse_must_open(&a, s.public_port, "/sse?topic=hup", NULL);
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        ck_assert_int_eq(kill(s.pid, sigs[i].sig), 0);
        ck_assert_msg(lg_server_wait_log(&s, sigs[i].line, WAIT_MS), "log:\n%s", s.log);
    }
    char id[128];
    ck_assert_int_eq(lg_publish(s.control_port, "hup", "after", id, sizeof id), 201);
    struct lg_sse_event ev;
    ck_assert_int_eq(lg_sse_next(&a, &ev, WAIT_MS), 1);
    ck_assert_str_eq(ev.id, id);
    ck_assert_str_eq(ev.data, "after");
    lg_sse_event_free(&ev);
    lg_sse_close(&a);
    lg_server_must_stop(&s);
}
END_TEST

/* A subscriber c that does not read, to keep the drain of s busy: its socket is full and its
 * queue holds more. */
static void open_stalled_subscriber(struct lg_server *s, struct lg_sse_client *c)
{
    lg_sse_must_open(c, s->public_port, "/sse?topic=slow", NULL);
    /* about 3.6 MB: far more than both socket buffers hold, so output stays queued */
    size_t n = 60000;
    char *data = malloc(n + 1);
    memset(data, 'z', n);
    data[n] = '\0';
    for (int i = 0; i < 60; i++)
        ck_assert_int_eq(lg_publish(s->control_port, "slow", data, NULL, 0), 201);
    free(data);
    /* wait until the worker has taken them all and the client's queue overflowed: then its
     * socket is full and the queue holds the rest (a 201 only means the hub took the event) */
    int64_t w0 = lg_now_ms();
    while (lg_stat(s->control_port, "events_dropped_overflow") < 1 && lg_now_ms() - w0 < WAIT_MS)
        poll(NULL, 0, 20);
    ck_assert_int_ge(lg_stat(s->control_port, "events_dropped_overflow"), 1);
}

/* SIGTERM s, then wait (<= 1.5 s) until readyz says 503 draining. */
static void sigterm_until_draining(struct lg_server *s)
{
    int64_t t0 = lg_now_ms();
    ck_assert_int_eq(kill(s->pid, SIGTERM), 0);
    bool draining = false;
    while (!draining && lg_now_ms() - t0 < 1500) {
        struct lg_http_response r;
        if (lg_http_request(s->control_port, "GET", "/readyz", NULL, NULL, 0, &r, 1000) == 0 &&
            r.status == 503) {
            ck_assert_str_eq(r.body, "{\"status\":\"draining\"}");
            draining = true;
        }
        lg_http_response_free(&r);
        if (!draining)
            poll(NULL, 0, 10);
    }
    ck_assert_msg(draining, "readyz never answered 503 draining");
}

/* A subscriber that does not read keeps the drain busy: readyz says 503 draining meanwhile,
 * and the process still exits 0 once drain_timeout_ms is over. */
START_TEST(test_lifecycle_readyz_draining)
{
    struct lg_server s;
    struct lg_sse_client c;
    lg_server_must_start(&s, "{\"drain_timeout_ms\":2000}");
    open_stalled_subscriber(&s, &c);
    int64_t t0 = lg_now_ms();
    sigterm_until_draining(&s);
    /* new subscribers are not taken while draining */
    int fd = lg_tcp_connect(s.public_port);
    if (fd >= 0) {
        static const char req[] = "GET /sse?topic=late HTTP/1.1\r\nHost: x\r\n\r\n";
        char buf[4096];
        size_t len = 0;
        lg_send_all(fd, req, sizeof req - 1);
        lg_recv_until(fd, buf, sizeof buf, &len, NULL, 3000);
        ck_assert_msg(strncmp(buf, "HTTP/1.1 200", 12) != 0 || strstr(buf, "event: refused\n"),
                      "a draining server accepted: %s", buf);
        close(fd);
    }
    ck_assert_int_eq(lg_server_stop(&s, 10000), 0);
    int64_t took = lg_now_ms() - t0;
    ck_assert_msg(took >= 1500 && took < 5000, "drain took %lld ms with drain_timeout_ms 2000",
                  (long long)took);
    lg_sse_close(&c);
}
END_TEST

/* A draining node's streams are ending: a publish it accepted would reach nobody. Both publish
 * routes answer 503 draining with Retry-After, publish nothing, and the refusal is counted. */
START_TEST(test_lifecycle_no_publish_while_draining)
{
    struct lg_server s;
    struct lg_sse_client c;
    lg_server_must_start(&s, "{\"drain_timeout_ms\":3000}");
    open_stalled_subscriber(&s, &c);
    long long published = lg_stat(s.control_port, "events_published");
    sigterm_until_draining(&s);
    struct lg_http_response r;
    ck_assert_int_eq(lg_http_request(s.control_port, "POST", "/v1/topics/late/events", NULL, "x",
                                     1, &r, WAIT_MS), 0);
    lg_expect_error(&r, 503, "draining", LG_ERROR_JSON_TYPE | LG_ERROR_ONLY_KEYS);
    char retry[16];
    ck_assert(lg_http_header(&r, "Retry-After", retry, sizeof retry));
    ck_assert_str_eq(retry, "1");
    lg_http_response_free(&r);
    static const char batch[] = "[{\"topic\":\"late\",\"data\":\"1\"}]";
    ck_assert_int_eq(lg_http_request(s.control_port, "POST", "/v1/publish", NULL, batch,
                                     sizeof batch - 1, &r, WAIT_MS), 0);
    ck_assert_int_eq(r.status, 503);
    ck_assert(lg_http_header(&r, "Retry-After", retry, sizeof retry));
    ck_assert_msg(strstr(r.body, "{\"error\":\"draining\",") == r.body &&
                      strstr(r.body, "\"accepted\":0,\"results\":[]}"), "%s", r.body);
    lg_http_response_free(&r);
    ck_assert_int_eq(lg_stat(s.control_port, "publishes_refused_draining"), 2);
    ck_assert_int_eq(lg_stat(s.control_port, "events_published"), published);
    ck_assert_int_eq(lg_http_request(s.control_port, "GET", "/metrics", NULL, NULL, 0, &r,
                                     WAIT_MS), 0);
    ck_assert_msg(strstr(r.body, "\nlivegate_publishes_refused_total{reason=\"draining\"} 2\n"),
                  "%s", r.body);
    lg_http_response_free(&r);
    ck_assert(lg_server_wait_log(&s, "publish refused: the gateway is draining", WAIT_MS));
    ck_assert_int_eq(lg_server_stop(&s, 10000), 0);
    lg_sse_close(&c);
}
END_TEST

/* ---- Command line --------------------------------------------------------------------------- */

/* Run --check-config on a file holding text: status 2 and exactly one stderr line ending in
 * "<file>: <message>". */
static void expect_bad_config(const char *text, const char *message)
{
    char path[64];
    temp_file(path, sizeof path, text);
    struct lg_run_result r;
    const char *args[] = {"--config", path, "--check-config", NULL};
    ck_assert_int_eq(lg_run_binary(args, &r, 10000), 0);
    ck_assert_msg(r.status == 2, "%s: exit %d, stderr %s", text, r.status, r.err);
    char want[1024];
    snprintf(want, sizeof want, "%s: %s\n", path, message);
    size_t wl = strlen(want);
    ck_assert_msg(r.err_len >= wl && strcmp(r.err + r.err_len - wl, want) == 0,
                  "stderr\n  %s\nshould end with\n  %s", r.err, want);
    ck_assert_msg(strchr(r.err, '\n') == r.err + r.err_len - 1, "more than one line: %s", r.err);
    ck_assert_str_eq(r.out, "");
    lg_run_result_free(&r);

    /* a real start refuses the same file with the same status */
    const char *start[] = {"--config", path, "--public", "127.0.0.1:0", "--control",
                           "127.0.0.1:0", NULL};
    ck_assert_int_eq(lg_run_binary(start, &r, 10000), 0);
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(strstr(r.err, want));
    lg_run_result_free(&r);
    unlink(path);
}

START_TEST(test_lifecycle_check_config)
{
    expect_bad_config("{\"client_queue\":{\"max_evnts\":5}}",
                      "client_queue.max_evnts: unknown key; allowed keys in client_queue: "
                      "max_events, max_bytes, max_lag_ms, on_slow");
    expect_bad_config("{\"limits\":{\"max_topics_per_client\":65}}",
                      "limits.max_topics_per_client: 65 is out of range (allowed 1..64)");
    expect_bad_config("{\"client_queue\":{\"max_events\":0}}",
                      "client_queue.max_events: 0 is out of range (allowed 1..1000000)");
    expect_bad_config("{\"client_queue\":{\"max_events\":\"10\"}}",
                      "client_queue.max_events: expected an integer, got string");
    expect_bad_config("{\"client_queue\":{\"max_events\":10.0}}",
                      "client_queue.max_events: expected an integer, got real");
    expect_bad_config("{\"log_level\":\"verbose\"}",
                      "log_level: \"verbose\" is not one of error, warn, info, debug");
    expect_bad_config("{\"poll\":{\"default_timeout_ms\":70000}}",
                      "poll.default_timeout_ms (70000) must not exceed poll.max_timeout_ms "
                      "(60000)");

    /* valid files and flags: 0 */
    char path[64];
    temp_file(path, sizeof path, "{\"sse\":{\"heartbeat_ms\":1000},\"history\":{\"max_events\":3}}");
    struct lg_run_result r;
    const char *ok[] = {"--config", path, "--check-config", NULL};
    ck_assert_int_eq(lg_run_binary(ok, &r, 10000), 0);
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    lg_run_result_free(&r);
    unlink(path);
    const char *noconf[] = {"--check-config", NULL};
    ck_assert_int_eq(lg_run_binary(noconf, &r, 10000), 0);
    ck_assert_int_eq(r.status, 0);
    lg_run_result_free(&r);

    /* a bad flag names the flag */
    const char *flag[] = {"--workers", "65", "--check-config", NULL};
    ck_assert_int_eq(lg_run_binary(flag, &r, 10000), 0);
    ck_assert_int_eq(r.status, 2);
    ck_assert_msg(strstr(r.err, "--workers: 65 is out of range (allowed 0..64)\n") != NULL, "%s",
                  r.err);
    lg_run_result_free(&r);
    const char *missing[] = {"--config", "/nonexistent/livegate.json", "--check-config", NULL};
    ck_assert_int_eq(lg_run_binary(missing, &r, 10000), 0);
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "/nonexistent/livegate.json"));
    lg_run_result_free(&r);
}
END_TEST

START_TEST(test_lifecycle_print_config)
{
    char path[4096];
    size_t flen;
    char *file = lg_slurp_source("config/livegate.json", path, sizeof path, &flen);

    struct lg_run_result r;
    const char *args[] = {"--print-config", NULL};
    ck_assert_int_eq(lg_run_binary(args, &r, 10000), 0);
    ck_assert_int_eq(r.status, 0);
    ck_assert_msg(r.out_len == flen && memcmp(r.out, file, flen) == 0,
                  "--print-config differs from config/livegate.json:\n%s", r.out);
    lg_run_result_free(&r);

    /* the shipped file itself is valid and prints back to itself */
    const char *again[] = {"--config", path, "--print-config", NULL};
    ck_assert_int_eq(lg_run_binary(again, &r, 10000), 0);
    ck_assert_int_eq(r.status, 0);
    ck_assert(r.out_len == flen && memcmp(r.out, file, flen) == 0);
    lg_run_result_free(&r);

    /* a file and flags are merged in, and the output loads back */
    char conf[64], printed[64];
    temp_file(conf, sizeof conf, "{\"sse\":{\"retry_ms\":1234}}");
    const char *merged[] = {"--config", conf, "--workers", "3", "--print-config", NULL};
    ck_assert_int_eq(lg_run_binary(merged, &r, 10000), 0);
    ck_assert_int_eq(r.status, 0);
    json_t *o = json_loads(r.out, 0, NULL);
    ck_assert_ptr_nonnull(o);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(o, "sse"), "retry_ms")),
                     1234);
    ck_assert_int_eq(json_integer_value(json_object_get(o, "workers")), 3);
    json_decref(o);
    temp_file(printed, sizeof printed, r.out);
    lg_run_result_free(&r);
    const char *check[] = {"--config", printed, "--check-config", NULL};
    ck_assert_int_eq(lg_run_binary(check, &r, 10000), 0);
    ck_assert_msg(r.status == 0, "printed config does not load back: %s", r.err);
    lg_run_result_free(&r);
    unlink(conf);
    unlink(printed);
    free(file);

    const char *version[] = {"--version", NULL};
    ck_assert_int_eq(lg_run_binary(version, &r, 10000), 0);
    ck_assert_int_eq(r.status, 0);
    ck_assert_str_eq(r.out, "livegate 0.1.0\n");
    lg_run_result_free(&r);
    const char *bogus[] = {"--bogus", NULL};
    ck_assert_int_eq(lg_run_binary(bogus, &r, 10000), 0);
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "--bogus"));
    lg_run_result_free(&r);
}
END_TEST

LG_CHECK_MAIN_TCASE("lifecycle", "lifecycle", 30, test_lifecycle_health_and_sigterm,
                    test_lifecycle_sigint, test_lifecycle_ignored_signals,
                    test_lifecycle_readyz_draining, test_lifecycle_no_publish_while_draining,
                    test_lifecycle_check_config, test_lifecycle_print_config)
