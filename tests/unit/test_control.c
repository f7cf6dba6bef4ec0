/*
 * test_control.c - the control port over real HTTP: a hub with one worker that nobody
 * subscribes on (publishes land in history only), its daemon served by a test thread, lg_control_start() on 127.0.0.1:0, and raw HTTP/1.1 requests over TCP.
 * Every answer is checked for its exact status and exact JSON body.
 */
#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "auth.h"
#include "config.h"
#include "control.h"
#include "event.h"
#include "hub.h"
#include "loop_guest.h"
#include "publish_pacer.h"
#include "log.h"
#include "topic.h"

#include "check_main.h"

#define IO_TIMEOUT_MS 5000

static struct lg_config cfg;
static struct lg_live_limits live; /* the control port reads its body limits here */
static struct lg_hub *hub;
static struct lg_control *ctl;
static _Atomic int lifecycle;
static uint16_t port;
static struct lg_pacer *pacer;

/* The control port has no thread of its own: this one serves its daemon, as a worker's loop
 * does (loop_guest.h), looking every 20 ms instead of being woken (its host has no wake()). */
static pthread_t host;
static struct lg_auth *auth; /* the control port borrows it */
static _Atomic bool host_stop;

static void *host_main(void *arg)
{
    const struct lg_loop_guest *guest = arg;
    guest->hosted(guest->arg, &(struct lg_loop_host){.wake = NULL});
    bool again = false;
    while (!atomic_load(&host_stop)) {
        struct pollfd p = {.fd = guest->fd, .events = POLLIN};
        poll(&p, 1, again ? 0 : 20);
        again = guest->serve(guest->arg);
    }
    return NULL;
}

static void start(uint32_t max_topics)
{
    char err[256];
    lg_log_set_level(LG_LOG_ERROR);
    lg_config_init_defaults(&cfg);
    snprintf(cfg.control_addr.host, sizeof cfg.control_addr.host, "127.0.0.1");
    cfg.control_addr.port = 0;
    cfg.limits.max_event_bytes = 65536;
    cfg.limits.max_batch_bytes = 1 << 20;
    cfg.limits.max_topics = max_topics;
    atomic_store(&lifecycle, LG_LIFECYCLE_READY);
    hub = lg_hub_create(&cfg, 1); /* one daemon; no worker is attached, nobody subscribes */
    ck_assert_ptr_nonnull(hub);
    pacer = lg_pacer_start(cfg.limits.control_max_connections);
    ck_assert_ptr_nonnull(pacer);
    lg_hub_on_room(hub, lg_pacer_room, pacer);
    auth = lg_auth_create(&cfg, err, sizeof err);
    ck_assert_msg(auth != NULL, "lg_auth_create: %s", err);
    lg_live_limits_store(&live, &cfg);
    ctl = lg_control_start(&cfg, &live, hub, pacer, auth, &lifecycle, &port, err, sizeof err);
    ck_assert_msg(ctl != NULL, "lg_control_start: %s", err);
    ck_assert_uint_ne(port, 0);
    atomic_store(&host_stop, false);
    ck_assert_int_eq(pthread_create(&host, NULL, host_main, (void *)lg_control_guest(ctl, 0)), 0);
}

static void setup(void) { start(1000); }
static void setup_two_topics(void) { start(2); }

static void teardown(void)
{
    lg_pacer_stop(pacer); /* held requests are answered while the daemon is still served */
    atomic_store(&host_stop, true);
    pthread_join(host, NULL);
    lg_control_stop(ctl);
    lg_pacer_destroy(pacer);
    lg_auth_destroy(auth);
    lg_hub_destroy(hub);
    lg_config_release(&cfg);
}

/* ---- A tiny HTTP client: one request per connection, read until the server closes ---- */

struct reply {
    int status;
    char head[16384 + 2]; /* status line and headers, each ending in "\r\n" */
    char body[16384];
    char raw[16384]; /* every byte received (several responses when pipelined) */
};

static void exchange(const char *req, size_t len, struct reply *r)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    for (size_t off = 0; off < len;) {
        ssize_t n = send(fd, req + off, len - off, MSG_NOSIGNAL);
        ck_assert_msg(n > 0, "send failed");
        off += (size_t)n;
    }
    static char in[16384];
    size_t got = 0;
    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        ck_assert_msg(poll(&p, 1, IO_TIMEOUT_MS) == 1, "no answer within %d ms", IO_TIMEOUT_MS);
        ssize_t n = recv(fd, in + got, sizeof in - 1 - got, 0);
        ck_assert_msg(n >= 0, "recv failed");
        if (n == 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    in[got] = '\0';
    memcpy(r->raw, in, got + 1);
    char *end = strstr(in, "\r\n\r\n");
    ck_assert_msg(end != NULL, "no complete response head in: %s", in);
    *end = '\0';
    snprintf(r->head, sizeof r->head, "%s\r\n", in);
    snprintf(r->body, sizeof r->body, "%s", end + 4);
    ck_assert_int_eq(sscanf(in, "HTTP/1.1 %d", &r->status), 1);
}

/* method path, optional extra header lines, optional body (then Content-Length is sent). */
static void request(struct reply *r, const char *method, const char *path, const char *headers,
                    const char *body)
{
    size_t cap = 4096 + (body != NULL ? strlen(body) : 0);
    char *req = malloc(cap);
    ck_assert_ptr_nonnull(req);
    int n = snprintf(req, cap, "%s %s HTTP/1.1\r\nHost: t\r\nConnection: close\r\n%s", method,
                     path, headers != NULL ? headers : "");
    if (body != NULL)
        n += snprintf(req + n, cap - (size_t)n, "Content-Length: %zu\r\n\r\n%s", strlen(body),
                      body);
    else
        n += snprintf(req + n, cap - (size_t)n, "\r\n");
    ck_assert_int_lt(n, (int)cap);
    exchange(req, (size_t)n, r);
    free(req);
}

static void assert_reply(const struct reply *r, int status, const char *body)
{
    ck_assert_int_eq(r->status, status);
    ck_assert_str_eq(r->body, body);
    ck_assert_msg(strstr(r->head, "\r\nContent-Type: application/json\r\n") != NULL,
                  "no JSON Content-Type in:\n%s", r->head);
}

static void assert_header(const struct reply *r, const char *line)
{
    char want[256];
    snprintf(want, sizeof want, "\r\n%s\r\n", line);
    ck_assert_msg(strstr(r->head, want) != NULL, "no \"%s\" in:\n%s", line, r->head);
}

/* ---- Hub probes ---- */

static struct lg_topic *topic(const char *name)
{
    return lg_hub_find_topic(hub, name, strlen(name));
}

static char *id_of(char *out, size_t cap, const char *name, unsigned seq)
{
    struct lg_topic *t = topic(name);
    ck_assert_ptr_nonnull(t);
    snprintf(out, cap, "%s@%08x:%u", name, lg_stream_epoch(t->stream), seq);
    return out;
}

/* The reply to a publish of one event: 201 with exactly its topic, id and seq. */
static void assert_published(const struct reply *r, const char *name, unsigned seq)
{
    char id[160], want[512];
    snprintf(want, sizeof want, "{\"topic\":\"%s\",\"id\":\"%s\",\"seq\":%u}", name,
             id_of(id, sizeof id, name, seq), seq);
    assert_reply(r, 201, want);
}

static uint64_t last_seq(struct lg_topic *t)
{
    pthread_mutex_lock(&t->lock);
    uint64_t seq = lg_stream_newest(t->stream);
    pthread_mutex_unlock(&t->lock);
    return seq;
}

/* The newest event of a topic (borrowed: topics keep history until the hub is destroyed). */
static const struct lg_event *newest(const char *name)
{
    struct lg_topic *t = topic(name);
    ck_assert_ptr_nonnull(t);
    struct lg_store_page page;
    pthread_mutex_lock(&t->lock);
    ck_assert_int_eq(lg_stream_read_after(t->stream, lg_stream_newest(t->stream) - 1, 1,
                                          UINT64_MAX, &page), 0);
    pthread_mutex_unlock(&t->lock);
    ck_assert_uint_eq(page.count, 1);
    const struct lg_event *ev = page.events[0]; /* history keeps its own reference */
    lg_store_page_release(&page);
    return ev;
}

/* The event's data is exactly text (compared by length: data need not be NUL-terminated). */
static void assert_data(const struct lg_event *ev, const char *text)
{
    ck_assert_msg(ev->data_len == strlen(text) && memcmp(ev->data, text, ev->data_len) == 0,
                  "data is \"%.*s\", want \"%s\"", (int)ev->data_len, ev->data, text);
}

/* ---- Single publish ---- */

START_TEST(publish_text)
{
    struct reply r;
    request(&r, "POST", "/v1/topics/demo/events", NULL, "hello");
    assert_published(&r, "demo", 1);
    const struct lg_event *ev = newest("demo");
    assert_data(ev, "hello");
    ck_assert(!ev->data_is_json);
    ck_assert_str_eq(ev->type, "message");
    ck_assert_ptr_null(ev->key);

    request(&r, "POST", "/v1/topics/demo/events", NULL, "again");
    assert_published(&r, "demo", 2);
}
END_TEST

START_TEST(publish_json_with_type_and_key)
{
    struct reply r;
    request(&r, "POST", "/v1/topics/prices/events?type=tick&key=EUR%2FUSD",
            "Content-Type: Application/JSON; charset=utf-8\r\n",
            "{ \"price\" : 1.07,\n \"name\": \"\xc3\xa9\", \"n\": [1, 2.5e3] }");
    assert_published(&r, "prices", 1);
    const struct lg_event *ev = newest("prices");
    assert_data(ev, "{\"price\":1.07,\"name\":\"\xc3\xa9\",\"n\":[1,2.5e3]}");
    ck_assert(ev->data_is_json);
    ck_assert_str_eq(ev->type, "tick");
    ck_assert_str_eq(ev->key, "EUR/USD");
}
END_TEST

START_TEST(publish_percent_encoded_topic)
{
    struct reply r;
    request(&r, "POST", "/v1/topics/a%2Fb/events", NULL, "x");
    assert_published(&r, "a/b", 1);
    request(&r, "POST", "/v1/topics/a/b/events", NULL, "y");
    assert_published(&r, "a/b", 2);
}
END_TEST

START_TEST(invalid_json)
{
    struct reply r;
    request(&r, "POST", "/v1/topics/demo/events", "Content-Type: application/json\r\n",
            "{\"a\":1,}");
    assert_reply(&r, 400,
                 "{\"error\":\"bad_request\",\"message\":\"body is not valid JSON (Content-Type "
                 "is application/json): parse error: invalid object key (must be a string) near "
                 "byte 8\"}");
    ck_assert_ptr_null(topic("demo"));
}
END_TEST

START_TEST(not_utf8)
{
    struct reply r;
    request(&r, "POST", "/v1/topics/demo/events", NULL, "caf\xe9");
    assert_reply(&r, 400,
                 "{\"error\":\"bad_request\",\"message\":\"event body is not valid UTF-8; send "
                 "UTF-8 text, or JSON with Content-Type: application/json\"}");
}
END_TEST

static const char too_large_body[] =
    "{\"error\":\"payload_too_large\",\"message\":\"event body is 70000 bytes; the limit is "
    "65536 (limits.max_event_bytes)\"}";

START_TEST(too_large_by_content_length)
{
    struct reply r;
    /* The head alone: the answer must come before any body byte is sent. */
    request(&r, "POST", "/v1/topics/demo/events", "Content-Length: 70000\r\n", NULL);
    assert_reply(&r, 413, too_large_body);
}
END_TEST

START_TEST(too_large_by_chunked_body)
{
    struct reply r;
    static char req[80000];
    int n = snprintf(req, sizeof req,
                     "POST /v1/topics/demo/events HTTP/1.1\r\nHost: t\r\nConnection: close\r\n"
                     "Transfer-Encoding: chunked\r\n\r\n");
    for (int chunk = 0; chunk < 2; chunk++) {
        n += snprintf(req + n, sizeof req - (size_t)n, "%x\r\n", 35000);
        memset(req + n, 'a', 35000);
        n += 35000;
        n += snprintf(req + n, sizeof req - (size_t)n, "\r\n");
    }
    n += snprintf(req + n, sizeof req - (size_t)n, "0\r\n\r\n");
    exchange(req, (size_t)n, &r);
    assert_reply(&r, 413, too_large_body);
    ck_assert_ptr_null(topic("demo"));

    /* The limit itself is fine. */
    static char exact[65537];
    memset(exact, 'b', 65536);
    request(&r, "POST", "/v1/topics/demo/events", NULL, exact);
    ck_assert_int_eq(r.status, 201);
}
END_TEST

START_TEST(invalid_topic)
{
    struct reply r;
    request(&r, "POST", "/v1/topics/a%20b/events", NULL, "x");
    assert_reply(&r, 422,
                 "{\"error\":\"invalid_topic\",\"message\":\"invalid topic \\\"a b\\\": topic name "
                 "contains a character outside A-Z a-z 0-9 _ - . / : ~ (at byte 2)\"}");
    request(&r, "POST", "/v1/topics//events", NULL, "x");
    assert_reply(&r, 422,
                 "{\"error\":\"invalid_topic\",\"message\":\"invalid topic \\\"\\\": topic name "
                 "is empty\"}");
    request(&r, "POST", "/v1/topics/a%zz/events", NULL, "x");
    assert_reply(&r, 400,
                 "{\"error\":\"bad_request\",\"message\":\"the topic in the path has a malformed "
                 "percent-escape at byte 1; write '%' as %25\"}");
}
END_TEST

START_TEST(reserved_topic)
{
    struct reply r;
    request(&r, "POST", "/v1/topics/%24sys%2Fstats/events", NULL, "x");
    assert_reply(&r, 422,
                 "{\"error\":\"invalid_topic\",\"message\":\"topic \\\"$sys/stats\\\": names "
                 "starting with '$' are reserved for the gateway; publish to a name without "
                 "it\"}");
}
END_TEST

START_TEST(bad_type_param)
{
    struct reply r;
    request(&r, "POST", "/v1/topics/demo/events?type=no%20spaces", NULL, "x");
    assert_reply(&r, 400,
                 "{\"error\":\"bad_request\",\"message\":\"query parameter \\\"type\\\" may only "
                 "hold A-Z a-z 0-9 _ . : / -; an event type is 1..64 bytes of A-Z a-z 0-9 _ . : "
                 "/ -\"}");
    request(&r, "POST", "/v1/topics/demo/events?type=", NULL, "x");
    ck_assert_int_eq(r.status, 400);
    request(&r, "POST",
            "/v1/topics/demo/events?type=a123456789b123456789c123456789d123456789e123456789"
            "f123456789g12345",
            NULL, "x");
    assert_reply(&r, 400,
                 "{\"error\":\"bad_request\",\"message\":\"query parameter \\\"type\\\" is longer "
                 "than 64 bytes\"}");
    request(&r, "POST", "/v1/topics/demo/events?key=%ff", NULL, "x");
    assert_reply(&r, 400,
                 "{\"error\":\"bad_request\",\"message\":\"query parameter \\\"key\\\" is not "
                 "valid UTF-8; a key is 1..256 bytes of UTF-8\"}");
    ck_assert_ptr_null(topic("demo"));
}
END_TEST

/* ---- Routing and health ---- */

START_TEST(unknown_path)
{
    struct reply r;
    request(&r, "GET", "/nope", NULL, NULL);
    assert_reply(&r, 404,
                 "{\"error\":\"not_found\",\"message\":\"no such path \\\"/nope\\\"; the control "
                 "port serves POST and GET /v1/topics/{topic}/events, POST /v1/publish, GET /v1/stats, "
                 "GET /metrics, GET /v1/topics[/{topic}], GET /v1/topics/{topic}/presence, "
                 "DELETE /v1/topics/{topic}, "
                 "GET /v1/clients, DELETE /v1/clients/{id}, GET /healthz and GET /readyz\"}");
}
END_TEST

START_TEST(wrong_method)
{
    struct reply r;
    request(&r, "GET", "/v1/publish", NULL, NULL);
    assert_reply(&r, 405,
                 "{\"error\":\"method_not_allowed\",\"message\":\"GET is not allowed on "
                 "/v1/publish; use POST\"}");
    assert_header(&r, "Allow: POST");
    request(&r, "POST", "/healthz", NULL, "x");
    ck_assert_int_eq(r.status, 405);
    assert_header(&r, "Allow: GET, HEAD");
}
END_TEST

START_TEST(healthz)
{
    struct reply r;
    request(&r, "GET", "/healthz", NULL, NULL);
    assert_reply(&r, 200, "{\"status\":\"ok\"}");
}
END_TEST

START_TEST(readyz_follows_lifecycle)
{
    struct reply r;
    atomic_store(&lifecycle, LG_LIFECYCLE_STARTING);
    request(&r, "GET", "/readyz", NULL, NULL);
    assert_reply(&r, 503, "{\"status\":\"starting\"}");
    atomic_store(&lifecycle, LG_LIFECYCLE_READY);
    request(&r, "GET", "/readyz", NULL, NULL);
    assert_reply(&r, 200, "{\"status\":\"ready\"}");
    atomic_store(&lifecycle, LG_LIFECYCLE_DRAINING);
    request(&r, "GET", "/readyz", NULL, NULL);
    assert_reply(&r, 503, "{\"status\":\"draining\"}");
}
END_TEST

/* ---- Batch ---- */

START_TEST(batch_array)
{
    struct reply r;
    char a[160], b[160], c[160], want[1024];
    request(&r, "POST", "/v1/publish", NULL,
            "  [{\"topic\":\"demo\",\"data\":\"a\"},"
            "{\"topic\":\"demo\",\"data\":{\"x\":1},\"type\":\"t\",\"key\":\"k\",\"id\":\"i1\"},"
            "{\"topic\":\"other\",\"data\":[1, 2]}]");
    snprintf(want, sizeof want,
             "{\"accepted\":3,\"results\":[{\"topic\":\"demo\",\"id\":\"%s\",\"seq\":1},"
             "{\"topic\":\"demo\",\"id\":\"%s\",\"seq\":2},"
             "{\"topic\":\"other\",\"id\":\"%s\",\"seq\":1}]}",
             id_of(a, sizeof a, "demo", 1), id_of(b, sizeof b, "demo", 2),
             id_of(c, sizeof c, "other", 1));
    assert_reply(&r, 200, want);
    const struct lg_event *ev = newest("demo");
    assert_data(ev, "{\"x\":1}");
    ck_assert(ev->data_is_json);
    ck_assert_str_eq(ev->type, "t");
    ck_assert_str_eq(ev->key, "k");
    assert_data(newest("other"), "[1,2]");
}
END_TEST

START_TEST(batch_ndjson)
{
    struct reply r;
    char a[160], b[160], want[1024];
    request(&r, "POST", "/v1/publish", NULL,
            "{\"topic\":\"demo\",\"data\":\"one\"}\n\n"
            "{\"topic\":\"demo\",\"data\":true}\r\n");
    snprintf(want, sizeof want,
             "{\"accepted\":2,\"results\":[{\"topic\":\"demo\",\"id\":\"%s\",\"seq\":1},"
             "{\"topic\":\"demo\",\"id\":\"%s\",\"seq\":2}]}",
             id_of(a, sizeof a, "demo", 1), id_of(b, sizeof b, "demo", 2));
    assert_reply(&r, 200, want);
    assert_data(newest("demo"), "true");
}
END_TEST

START_TEST(idempotency_key_deduplicates_retries)
{
    struct reply r;
    char a[160], b[160], want[1024];
    request(&r, "POST", "/v1/topics/demo/events", "Idempotency-Key: order-17\r\n", "first");
    snprintf(want, sizeof want, "{\"topic\":\"demo\",\"id\":\"%s\",\"seq\":1}",
             id_of(a, sizeof a, "demo", 1));
    assert_reply(&r, 201, want);
    /* A retry with the same key publishes nothing and answers with the original event. */
    request(&r, "POST", "/v1/topics/demo/events", "Idempotency-Key: order-17\r\n", "retry");
    snprintf(want, sizeof want,
             "{\"topic\":\"demo\",\"id\":\"%s\",\"seq\":1,\"duplicate\":true}", a);
    assert_reply(&r, 201, want);
    assert_data(newest("demo"), "first");
    /* Batch items carry the key in "id"; a new key publishes, a known one does not. */
    request(&r, "POST", "/v1/publish", NULL,
            "[{\"topic\":\"demo\",\"data\":\"two\",\"id\":\"k2\"},"
            "{\"topic\":\"demo\",\"data\":\"again\",\"id\":\"order-17\"}]");
    snprintf(want, sizeof want,
             "{\"accepted\":2,\"results\":[{\"topic\":\"demo\",\"id\":\"%s\",\"seq\":2},"
             "{\"topic\":\"demo\",\"id\":\"%s\",\"seq\":1,\"duplicate\":true}]}",
             id_of(b, sizeof b, "demo", 2), a);
    assert_reply(&r, 200, want);
    assert_data(newest("demo"), "two");
}
END_TEST

START_TEST(batch_bad_item_publishes_nothing)
{
    struct reply r;
    struct lg_topic *t;
    ck_assert_int_eq(lg_hub_topic(hub, "demo", 4, &t), LG_HUB_OK);

    request(&r, "POST", "/v1/publish", NULL,
            "[{\"topic\":\"demo\",\"data\":\"a\"},{\"topic\":\"bad topic\",\"data\":\"b\"}]");
    assert_reply(&r, 422,
                 "{\"error\":\"invalid_topic\",\"message\":\"batch item 1: invalid topic \\\"bad "
                 "topic\\\": topic name contains a character outside A-Z a-z 0-9 _ - . / : ~ (at "
                 "byte 4)\",\"index\":1}");
    request(&r, "POST", "/v1/publish", NULL,
            "{\"topic\":\"demo\",\"data\":\"a\"}\n{\"topic\":\"demo\",\"data\":1,\"colour\":2}\n");
    assert_reply(&r, 400,
                 "{\"error\":\"bad_request\",\"message\":\"batch item 1 has an unknown key "
                 "\\\"colour\\\"; an item may hold topic, data, type, key, id and tags\",\"index\":1}");
    request(&r, "POST", "/v1/publish", NULL,
            "{\"topic\":\"demo\",\"data\":\"a\"}\n{\"topic\":\"demo\"}\n");
    assert_reply(&r, 400,
                 "{\"error\":\"bad_request\",\"message\":\"batch item 1 has no \\\"data\\\"\","
                 "\"index\":1}");
    request(&r, "POST", "/v1/publish", NULL,
            "{\"topic\":\"demo\",\"data\":\"a\"}\n{\"topic\":\"$sys\",\"data\":2}\n");
    ck_assert_int_eq(r.status, 422);
    request(&r, "POST", "/v1/publish", NULL, "{\"topic\":\"demo\",\"data\":\"a\"}\n{oops\n");
    assert_reply(&r, 400,
                 "{\"error\":\"bad_request\",\"message\":\"batch item 1 (line 2) is not valid "
                 "JSON: lexical error: invalid char in json text.\",\"index\":1}");
    char *big = malloc(70000 + 64);
    ck_assert_ptr_nonnull(big);
    int n = snprintf(big, 64, "[{\"topic\":\"demo\",\"data\":\"");
    memset(big + n, 'z', 65537);
    snprintf(big + n + 65537, 64, "\"}]");
    request(&r, "POST", "/v1/publish", NULL, big);
    free(big);
    assert_reply(&r, 413,
                 "{\"error\":\"payload_too_large\",\"message\":\"batch item 0: data is 65537 "
                 "bytes; the limit is 65536 (limits.max_event_bytes)\",\"index\":0}");
    ck_assert_uint_eq(last_seq(t), 0);
}
END_TEST

/* Per-request state must not leak from one request into the next on a kept-alive connection. */
START_TEST(keep_alive_pipelined)
{
    struct reply r;
    char a[160], b[160], want[512];
    static const char two[] =
        "POST /v1/topics/demo/events HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\n\r\na"
        "POST /v1/topics/demo/events HTTP/1.1\r\nHost: t\r\nConnection: close\r\n"
        "Content-Length: 1\r\n\r\nb";
    exchange(two, sizeof two - 1, &r);
    ck_assert_int_eq(r.status, 201);
    snprintf(want, sizeof want, "{\"topic\":\"demo\",\"id\":\"%s\",\"seq\":1}HTTP/1.1 201",
             id_of(a, sizeof a, "demo", 1));
    ck_assert_msg(strncmp(r.body, want, strlen(want)) == 0, "first answer wrong:\n%s", r.raw);
    snprintf(want, sizeof want, "{\"topic\":\"demo\",\"id\":\"%s\",\"seq\":2}",
             id_of(b, sizeof b, "demo", 2));
    ck_assert_msg(strstr(r.raw, want) != NULL, "no second answer in:\n%s", r.raw);
    assert_data(newest("demo"), "b");
}
END_TEST

/* ---- Hub refusals ---- */

START_TEST(max_topics_reached)
{
    struct reply r;
    char id[160], want[1024];
    request(&r, "POST", "/v1/topics/a/events", NULL, "1");
    ck_assert_int_eq(r.status, 201);
    request(&r, "POST", "/v1/topics/b/events", NULL, "2");
    ck_assert_int_eq(r.status, 201);
    request(&r, "POST", "/v1/topics/c/events", NULL, "3");
    assert_reply(&r, 503,
                 "{\"error\":\"unavailable\",\"message\":\"topic \\\"c\\\" cannot be created: the "
                 "gateway holds 2 topics, the limit (limits.max_topics); publish to an existing "
                 "topic or raise the limit\"}");
    assert_header(&r, "Retry-After: 1");
    ck_assert_ptr_null(topic("c"));

    /* A batch refused part-way says what went through. */
    request(&r, "POST", "/v1/publish", NULL,
            "[{\"topic\":\"a\",\"data\":\"x\"},{\"topic\":\"c\",\"data\":\"y\"}]");
    snprintf(want, sizeof want,
             "{\"error\":\"unavailable\",\"message\":\"topic \\\"c\\\" cannot be created: the "
             "gateway holds 2 topics, the limit (limits.max_topics); publish to an existing "
             "topic or raise the limit (at batch item 1; items 0..0 were published, see "
             "\\\"results\\\")\",\"accepted\":1,\"results\":[{\"topic\":\"a\",\"id\":\"%s\","
             "\"seq\":2}]}",
             id_of(id, sizeof id, "a", 2));
    assert_reply(&r, 503, want);
    assert_header(&r, "Retry-After: 1");
}
END_TEST

static Suite *control_suite(void)
{
    Suite *s = suite_create("control");
    struct {
        const char *name;
        const TTest *test;
    } cases[] = {
        {"publish_text", publish_text},
        {"publish_json", publish_json_with_type_and_key},
        {"publish_percent_encoded_topic", publish_percent_encoded_topic},
        {"invalid_json", invalid_json},
        {"not_utf8", not_utf8},
        {"too_large_by_content_length", too_large_by_content_length},
        {"too_large_by_chunked_body", too_large_by_chunked_body},
        {"invalid_topic", invalid_topic},
        {"reserved_topic", reserved_topic},
        {"bad_type_param", bad_type_param},
        {"unknown_path", unknown_path},
        {"wrong_method", wrong_method},
        {"healthz", healthz},
        {"readyz", readyz_follows_lifecycle},
        {"batch_array", batch_array},
        {"batch_ndjson", batch_ndjson},
        {"batch_bad_item", batch_bad_item_publishes_nothing},
        {"idempotency_key", idempotency_key_deduplicates_retries},
        {"keep_alive_pipelined", keep_alive_pipelined},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, cases[i].test);
        suite_add_tcase(s, tc);
    }
    TCase *tc = tcase_create("max_topics_reached");
    tcase_add_checked_fixture(tc, setup_two_topics, teardown);
    tcase_add_test(tc, max_topics_reached);
    suite_add_tcase(s, tc);
    return s;
}

LG_CHECK_MAIN(control_suite)
