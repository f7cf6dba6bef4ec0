/*
 * test_hooks.c - the backend hooks over real sockets (docs/security.md "Backend hooks"), with
 * a real HTTP backend in the test (support/lg_backend.c): the subscribe hook allows, denies,
 * answers late (past subscribe_hook.timeout_ms), answers garbage, fails, and is down, on SSE,
 * long-poll and WebSocket; its cache (one question for two subscribes); a WebSocket's messages
 * sent while a subscribe waits are answered after it, in order; more than max_pending waiting
 * subscribes: the next answered as down, counted; the webhooks (occupied,
 * disconnect, vacated) as documented, signed, including after the receiver was down for a
 * while, with their sent, failed and dropped counters.
 */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lg_backend.h"
#include "lg_test.h"
#include "support/lg_token.h"

#include "check_main.h"

#define WAIT_MS 5000
#define SECRET "hooks-secret"
#define WEBHOOK_SECRET "webhook-secret"
#define TIMEOUT_MS 1500 /* generous: the gateway may run under valgrind (scripts/valgrind.sh) */
#define LATE_MS 3000

static struct lg_server srv;
static struct lg_backend *backend;
static char *user_token;       /* subscribe anywhere */

/* A gateway whose subscribe hook is hook_url (hooked topics: allow/ deny/ late/ garbage/
 * fail/), answers kept a minute, when_down and max_pending as given. */
static void start_gateway_pending(const char *hook_url, const char *when_down,
                                  unsigned max_pending)
{
    char cfg[2048];
    snprintf(cfg, sizeof cfg,
             "{\"workers\":1,\"auth\":{\"hs256_secret\":\"" SECRET "\"},"
             "\"subscribe_hook\":{\"url\":\"%s\",\"topics\":[\"allow/*\",\"deny/*\",\"late/*\","
             "\"garbage/*\",\"fail/*\"],\"timeout_ms\":%d,\"cache_ms\":60000,"
             "\"when_down\":\"%s\",\"max_pending\":%u}}",
             hook_url, TIMEOUT_MS, when_down, max_pending);
    lg_server_must_start(&srv, cfg);
    user_token = lg_token_libjwt(SECRET, NULL, 3600, "{\"subscribe\":[\"*\"]}");
}

static void start_gateway(const char *hook_url, const char *when_down)
{
    start_gateway_pending(hook_url, when_down, 256);
}

static void setup(void)
{
    backend = lg_backend_start(0, LATE_MS, 0);
    ck_assert_ptr_nonnull(backend);
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%u/hook", lg_backend_port(backend));
    start_gateway(url, "deny");
}

static void teardown(void)
{
    lg_server_must_stop(&srv);
    lg_backend_stop(backend);
    free(user_token);
}

/* The Authorization header of the test's token. */
static const char *bearer(void)
{
    static char h[4096];
    snprintf(h, sizeof h, "Authorization: Bearer %s\r\n", user_token);
    return h;
}

/* GET path with the token; the answer's status and its "error" code in the body. */
static void expect_http(const char *path, int status, const char *code)
{
    struct lg_http_response r;
    ck_assert_int_eq(lg_http_request(srv.public_port, "GET", path, bearer(), NULL, 0, &r,
                                     WAIT_MS), 0);
    ck_assert_msg(r.status == status, "%s: status %d, want %d: %s", path, r.status, status,
                  r.body);
    if (code) {
        char quoted[96];
        snprintf(quoted, sizeof quoted, "\"%s\"", code);
        ck_assert_msg(strstr(r.body, quoted) != NULL, "%s: %s not in %s", path, code, r.body);
    }
    lg_http_response_free(&r);
}

/* ---- SSE and long-poll ------------------------------------------------------------------ */

START_TEST(test_sse_allowed_after_hook)
{
    struct lg_sse_client c;
    lg_sse_must_open(&c, srv.public_port, "/sse?topic=allow/a", bearer());
    lg_sse_close(&c);
    ck_assert_int_eq(lg_backend_asks(backend, "allow/a"), 1);
    /* The backend was told the topic, the token's claims and the client's address. */
    char body[2048];
    ck_assert(lg_backend_last_ask(backend, "allow/a", body, sizeof body));
    ck_assert_msg(strstr(body, "\"topic\":\"allow/a\"") && strstr(body, "\"claims\":{") &&
                  strstr(body, "\"subscribe\":[\"*\"]") &&
                  strstr(body, "\"client\":{\"address\":\"127.0.0.1\"}"), "asked: %s", body);
    ck_assert_int_eq(lg_server_stat(&srv, "hook_answers_allow"), 1);
}
END_TEST

START_TEST(test_sse_and_poll_refusals)
{
    /* SSE: a denial is final (403); a backend that cannot answer is a retryable refusal,
     * which an SSE subscription gets as a `refused` event (docs/protocol.md). */
    expect_http("/sse?topic=deny/a", 403, "hook_denied");
    expect_http("/sse?topic=late/a", 200, "hook_unavailable");
    expect_http("/sse?topic=garbage/a", 200, "hook_unavailable");
    expect_http("/poll?topic=deny/b&timeout=0", 403, "hook_denied");
    expect_http("/poll?topic=late/b&timeout=0", 503, "hook_unavailable");
    expect_http("/poll?topic=garbage/b&timeout=0", 503, "hook_unavailable");
    expect_http("/poll?topic=fail/b&timeout=0", 503, "hook_unavailable");
    expect_http("/poll?topic=allow/b&timeout=0", 200, NULL);
    /* Unhooked topics never ask. */
    expect_http("/poll?topic=open/b&timeout=0", 200, NULL);
    ck_assert_int_eq(lg_backend_asks(backend, "open/b"), 0);
    ck_assert_int_eq(lg_server_stat(&srv, "hook_answers_deny"), 2);
    ck_assert_int_eq(lg_server_stat(&srv, "hook_answers_down"), 5);
}
END_TEST

START_TEST(test_cache_asks_once)
{
    expect_http("/poll?topic=allow/c&timeout=0", 200, NULL);
    expect_http("/poll?topic=allow/c&timeout=0", 200, NULL);
    struct lg_sse_client c;
    lg_sse_must_open(&c, srv.public_port, "/sse?topic=allow/c", bearer());
    lg_sse_close(&c);
    ck_assert_int_eq(lg_backend_asks(backend, "allow/c"), 1);
    ck_assert_int_eq(lg_server_stat(&srv, "hook_cache_hits"), 2);
    /* A denial is cached too. */
    expect_http("/poll?topic=deny/c&timeout=0", 403, "hook_denied");
    expect_http("/poll?topic=deny/c&timeout=0", 403, "hook_denied");
    ck_assert_int_eq(lg_backend_asks(backend, "deny/c"), 1);
}
END_TEST

/* ---- WebSocket ---------------------------------------------------------------------------- */

static void ws_send(struct lg_ws_client *c, const char *text)
{
    ck_assert_int_eq(lg_ws_send_text(c, text, strlen(text)), 0);
}

/* The next message must contain each of the NULL-ended needles. */
static void ws_expect(struct lg_ws_client *c, ...)
{
    char *msg = NULL;
    ck_assert_int_eq(lg_ws_next(c, &msg, WAIT_MS), 1);
    va_list ap;
    va_start(ap, c);
    for (const char *n; (n = va_arg(ap, const char *)) != NULL;)
        ck_assert_msg(strstr(msg, n) != NULL, "%s not in %s", n, msg);
    va_end(ap);
    free(msg);
}

START_TEST(test_ws_answers_after_hook_in_order)
{
    struct lg_ws_client c;
    char path[4096];
    snprintf(path, sizeof path, "/ws?access_token=%s", user_token);
    lg_ws_must_open(&c, srv.public_port, path, "livegate.v1");
    /* The late subscribe waits; the ping and the next subscribes are held and answered after
     * it, in the order they were sent. */
    ws_send(&c, "{\"op\":\"subscribe\",\"topics\":[\"late/w\"]}");
    ws_send(&c, "{\"op\":\"ping\"}");
    ws_send(&c, "{\"op\":\"subscribe\",\"topics\":[\"deny/w\"]}");
    ws_send(&c, "{\"op\":\"subscribe\",\"topics\":[\"garbage/w\"]}");
    ws_send(&c, "{\"op\":\"subscribe\",\"topics\":[\"allow/w\",\"open/w\"]}");
    ws_expect(&c, "\"type\":\"error\"", "\"code\":\"hook_unavailable\"",
              "did not answer in time", NULL);
    ws_expect(&c, "\"type\":\"pong\"", NULL);
    ws_expect(&c, "\"type\":\"error\"", "\"code\":\"hook_denied\"", "not on the list", NULL);
    ws_expect(&c, "\"type\":\"error\"", "\"code\":\"hook_unavailable\"", NULL);
    ws_expect(&c, "\"type\":\"subscribed\"", "\"topics\":[\"allow/w\",\"open/w\"]", NULL);
    lg_ws_close(&c);
    /* The connection's own query subscribe waits the same way. */
    snprintf(path, sizeof path, "/ws?topic=deny/q&access_token=%s", user_token);
    lg_ws_must_open(&c, srv.public_port, path, "livegate.v1");
    ws_expect(&c, "\"code\":\"hook_denied\"", NULL);
    lg_ws_close(&c);
}
END_TEST

/* A client that goes away while its subscribe waits: the answer finds nobody, and the
 * gateway goes on serving. */
START_TEST(test_client_gone_while_waiting)
{
    struct lg_ws_client w;
    char path[4096];
    snprintf(path, sizeof path, "/ws?access_token=%s", user_token);
    lg_ws_must_open(&w, srv.public_port, path, "livegate.v1");
    ws_send(&w, "{\"op\":\"subscribe\",\"topics\":[\"late/gone\"]}");
    int fd = lg_tcp_connect(srv.public_port);
    char req[8192];
    snprintf(req, sizeof req, "GET /sse?topic=late/gone2 HTTP/1.1\r\nHost: t\r\n%s\r\n",
             bearer());
    ck_assert_int_eq(lg_send_all(fd, req, strlen(req)), 0);
    ck_assert(lg_backend_wait_asks(backend, "late/gone", 1, WAIT_MS));
    ck_assert(lg_backend_wait_asks(backend, "late/gone2", 1, WAIT_MS));
    close(fd);
    lg_ws_close(&w);
    ck_assert(lg_wait_stat(srv.control_port, "hook_answers_down", 2, WAIT_MS));
    expect_http("/poll?topic=allow/after&timeout=0", 200, NULL);
}
END_TEST

/* More than subscribe_hook.max_pending subscribes waiting on a worker: the next is answered at
 * once as if the backend were down, and counted. */
START_TEST(test_max_pending_overflow)
{
    lg_server_must_stop(&srv);
    free(user_token);
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%u/hook", lg_backend_port(backend));
    start_gateway_pending(url, "deny", 1);
    struct lg_ws_client w;
    char path[4096];
    snprintf(path, sizeof path, "/ws?access_token=%s", user_token);
    lg_ws_must_open(&w, srv.public_port, path, "livegate.v1");
    ws_send(&w, "{\"op\":\"subscribe\",\"topics\":[\"late/full\"]}");
    ck_assert(lg_backend_wait_asks(backend, "late/full", 1, WAIT_MS));
    expect_http("/poll?topic=allow/full&timeout=0", 503, "hook_unavailable");
    ck_assert_int_eq(lg_server_stat(&srv, "hook_overflow"), 1);
    ck_assert_int_eq(lg_backend_asks(backend, "allow/full"), 0);
    ws_expect(&w, "\"code\":\"hook_unavailable\"", NULL); /* the late one, in its time */
    expect_http("/poll?topic=allow/full&timeout=0", 200, NULL); /* room again */
    char *m = lg_metrics_scrape(srv.control_port);
    ck_assert(lg_metrics_value(m, "livegate_subscribe_hook_overflow_total") == 1);
    free(m);
    lg_ws_close(&w);
}
END_TEST

/* ---- The backend is down ------------------------------------------------------------------ */

START_TEST(test_backend_down)
{
    lg_server_must_stop(&srv);
    free(user_token);
    uint16_t port = lg_backend_port(backend);
    lg_backend_stop(backend);
    backend = lg_backend_start(0, LATE_MS, 0); /* for teardown; not the hook's port */
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%u/hook", port);
    start_gateway(url, "deny");
    expect_http("/poll?topic=allow/d&timeout=0", 503, "hook_unavailable");
    struct lg_ws_client c;
    char path[4096];
    snprintf(path, sizeof path, "/ws?topic=allow/d&access_token=%s", user_token);
    lg_ws_must_open(&c, srv.public_port, path, "livegate.v1");
    ws_expect(&c, "\"code\":\"hook_unavailable\"", "cannot be reached", NULL);
    lg_ws_close(&c);
    /* when_down: allow lets the subscribe through. */
    lg_server_must_stop(&srv);
    free(user_token);
    start_gateway(url, "allow");
    expect_http("/poll?topic=allow/d&timeout=0", 200, NULL);
    struct lg_sse_client s;
    lg_sse_must_open(&s, srv.public_port, "/sse?topic=deny/d", bearer());
    lg_sse_close(&s);
}
END_TEST

/* ---- Webhooks ---------------------------------------------------------------------------- */

static struct lg_backend *receiver;

/* A gateway sending webhooks to port (the receiver may be down). */
static void start_webhooks(uint16_t port, unsigned queue_max, unsigned max_attempts)
{
    char cfg[1024];
    snprintf(cfg, sizeof cfg,
             "{\"workers\":2,\"webhooks\":{\"url\":\"http://127.0.0.1:%u/webhook\","
             "\"secret\":\"" WEBHOOK_SECRET "\",\"vacated_delay_ms\":300,\"queue_max\":%u,"
             "\"max_attempts\":%u,\"retry_min_ms\":100,\"retry_max_ms\":400,"
             "\"timeout_ms\":1000}}",
             port, queue_max, max_attempts);
    lg_server_must_start(&srv, cfg);
}

static void expect_notice(size_t index, const char *event, const char *more)
{
    struct lg_notice_seen n;
    ck_assert_msg(lg_backend_wait_notice(receiver, index, &n, WAIT_MS), "no webhook #%zu (%s)",
                  index, event);
    char quoted[64];
    snprintf(quoted, sizeof quoted, "\"event\":\"%s\"", event);
    ck_assert_msg(strstr(n.body, quoted) != NULL, "#%zu: want %s: %s", index, event, n.body);
    ck_assert_msg(!more || strstr(n.body, more) != NULL, "#%zu: %s not in %s", index, more,
                  n.body);
    ck_assert_msg(lg_notice_signed(&n, WEBHOOK_SECRET), "#%zu: bad signature %s", index,
                  n.signature);
    char id[80];
    snprintf(id, sizeof id, "\"id\":\"%s\"", n.id);
    ck_assert_msg(n.id[0] && strstr(n.body, id) != NULL, "#%zu: id %s not in %s", index, n.id,
                  n.body);
    ck_assert_msg(strstr(n.body, "\"time\":") != NULL, "#%zu: no time: %s", index, n.body);
}

START_TEST(test_webhooks_as_documented)
{
    receiver = lg_backend_start(0, 0, 0);
    ck_assert_ptr_nonnull(receiver);
    start_webhooks(lg_backend_port(receiver), 100, 3);
    struct lg_sse_client a, b;
    lg_sse_must_open(&a, srv.public_port, "/sse?topic=room/1", NULL);
    expect_notice(0, "occupied", "\"topic\":\"room/1\"");
    /* A second subscriber is no news. */
    lg_sse_must_open(&b, srv.public_port, "/sse?topic=room/1", NULL);
    lg_sse_close(&b);
    expect_notice(1, "disconnect", "\"topics\":[\"room/1\"]");
    lg_sse_close(&a);
    expect_notice(2, "disconnect", "\"transport\":\"sse\"");
    expect_notice(3, "vacated", "\"topic\":\"room/1\"");
    /* Back within vacated_delay_ms: neither vacated nor occupied. */
    lg_sse_must_open(&a, srv.public_port, "/sse?topic=room/2", NULL);
    expect_notice(4, "occupied", "\"topic\":\"room/2\"");
    lg_sse_close(&a);
    expect_notice(5, "disconnect", NULL);
    lg_sse_must_open(&a, srv.public_port, "/sse?topic=room/2", NULL);
    ck_assert(!lg_backend_wait_notice(receiver, 6, NULL, 600));
    ck_assert_int_eq(lg_server_stat(&srv, "webhooks_sent"), 6);
    ck_assert_int_eq(lg_server_stat(&srv, "webhooks_failed"), 0);
    lg_sse_close(&a);
    lg_server_must_stop(&srv);
    lg_backend_stop(receiver);
}
END_TEST

START_TEST(test_webhooks_after_receiver_down)
{
    receiver = lg_backend_start(0, 0, 0);
    ck_assert_ptr_nonnull(receiver);
    uint16_t port = lg_backend_port(receiver);
    lg_backend_refuse_webhooks(receiver, true); /* down: 503 to every attempt */
    start_webhooks(port, 100, 1000);
    struct lg_sse_client a;
    lg_sse_must_open(&a, srv.public_port, "/sse?topic=room/down", NULL);
    ck_assert(lg_wait_stat(srv.control_port, "webhooks_failed", 3, WAIT_MS));
    lg_backend_stop(receiver); /* and now not even listening */
    ck_assert(lg_stat_wait(srv.control_port, "webhooks_failed", 1, 5, WAIT_MS) >= 5);
    receiver = lg_backend_start(port, 0, 0);
    ck_assert_ptr_nonnull(receiver);
    struct lg_notice_seen n;
    ck_assert(lg_backend_wait_notice(receiver, 0, &n, WAIT_MS));
    ck_assert_msg(strstr(n.body, "\"event\":\"occupied\"") && n.attempt > 4, "%s attempt %d",
                  n.body, n.attempt);
    ck_assert(lg_notice_signed(&n, WEBHOOK_SECRET));
    ck_assert(lg_wait_stat(srv.control_port, "webhooks_sent", 1, WAIT_MS));
    lg_sse_close(&a);
    lg_server_must_stop(&srv);
    lg_backend_stop(receiver);
}
END_TEST

START_TEST(test_webhooks_dropped)
{
    /* A port nobody listens on. */
    receiver = lg_backend_start(0, 0, 0);
    uint16_t port = lg_backend_port(receiver);
    lg_backend_stop(receiver);
    /* Given up after max_attempts. */
    start_webhooks(port, 100, 2);
    struct lg_sse_client a;
    lg_sse_must_open(&a, srv.public_port, "/sse?topic=room/x", NULL);
    ck_assert(lg_wait_stat(srv.control_port, "webhooks_dropped_attempts", 1, WAIT_MS));
    ck_assert_int_eq(lg_server_stat(&srv, "webhooks_failed"), 2);
    lg_sse_close(&a);
    lg_server_must_stop(&srv);
    /* Past queue_max: the new notice is dropped at once. */
    start_webhooks(port, 1, 1000);
    struct lg_sse_client b;
    lg_sse_must_open(&a, srv.public_port, "/sse?topic=room/y", NULL);
    lg_sse_must_open(&b, srv.public_port, "/sse?topic=room/z", NULL);
    ck_assert(lg_wait_stat(srv.control_port, "webhooks_dropped_queue_full", 1, WAIT_MS));
    char *body = lg_metrics_scrape(srv.control_port);
    ck_assert(lg_metrics_value(body, "livegate_webhooks_dropped_total{reason=\"queue_full\"}") >= 1);
    free(body);
    lg_sse_close(&a);
    lg_sse_close(&b);
    lg_server_must_stop(&srv);
}
END_TEST

static void no_setup(void) {}

int main(void)
{
    Suite *s = suite_create("hooks");
    TCase *tc = LG_TCASE(s, "subscribe_hook", setup, teardown, test_sse_allowed_after_hook,
                         test_sse_and_poll_refusals, test_cache_asks_once,
                         test_ws_answers_after_hook_in_order, test_client_gone_while_waiting,
                         test_max_pending_overflow, test_backend_down);
    tcase_set_timeout(tc, 60);
    tc = LG_TCASE(s, "webhooks", no_setup, NULL, test_webhooks_as_documented,
                  test_webhooks_after_receiver_down, test_webhooks_dropped);
    tcase_set_timeout(tc, 60);
    return lg_check_run(s);
}
