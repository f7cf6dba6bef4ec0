/*
 * test_admin.c - the admin API of the control port through the real binary: topics listed and
 * paged in name order, one inspected, one deleted (its SSE, WebSocket and held long-poll
 * subscribers get `end`; a later publish starts a new epoch and a resuming client gets
 * `reset`); clients listed and paged in id order, one kicked (SSE sees an error event with
 * the reason, WebSocket a close 4001 with it); 404 for unknown names, 405 for other methods.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "lg_test.h"

#include "check_main.h"

#define WAIT_MS 5000

static struct lg_server srv;

static void server_setup(void) { lg_server_must_start(&srv, "{\"workers\":2}"); }
static void server_teardown(void) { lg_server_must_stop(&srv); }

/* method path on the control port: the status, and the body parsed (caller decrefs). */
static json_t *admin(const char *method, const char *path, int want_status)
{
    struct lg_http_response r;
    ck_assert_int_eq(lg_http_request(srv.control_port, method, path, NULL, NULL, 0, &r, WAIT_MS),
                     0);
    ck_assert_msg(r.status == want_status, "%s %s: %d %s", method, path, r.status, r.body);
    json_t *o = json_loads(r.body, 0, NULL);
    ck_assert_msg(o, "%s %s: not JSON: %s", method, path, r.body);
    lg_http_response_free(&r);
    return o;
}

static void expect_404(const char *method, const char *path)
{
    struct lg_http_response r;
    ck_assert_int_eq(lg_http_request(srv.control_port, method, path, NULL, NULL, 0, &r, WAIT_MS),
                     0);
    lg_expect_error_named(path, &r, 404, "not_found", LG_ERROR_JSON_TYPE | LG_ERROR_ONLY_KEYS);
    lg_http_response_free(&r);
}

static void expect_refusal(const char *method, const char *path, int status, const char *code)
{
    struct lg_http_response r;
    ck_assert_int_eq(lg_http_request(srv.control_port, method, path, NULL, NULL, 0, &r, WAIT_MS),
                     0);
    lg_expect_error_named(path, &r, status, code, LG_ERROR_JSON_TYPE | LG_ERROR_ONLY_KEYS);
    lg_http_response_free(&r);
}

/* The names of o[key] (an array of objects with "name"), comma-joined. */
static void names_of(json_t *o, const char *key, const char *member, char *out, size_t cap)
{
    size_t i, len = 0;
    json_t *item;
    out[0] = '\0';
    json_array_foreach(json_object_get(o, key), i, item) {
        json_t *v = json_object_get(item, member);
        char one[160];
        if (json_is_string(v))
            snprintf(one, sizeof one, "%s", json_string_value(v));
        else
            snprintf(one, sizeof one, "%lld", (long long)json_integer_value(v));
        len += (size_t)snprintf(out + len, cap - len, "%s%s", len ? "," : "", one);
    }
}

/* GET path (a page of the topic list): its names must be want_names, comma-joined; the page
 * is returned for its "next" (caller decrefs). */
static json_t *topics_page(const char *path, const char *want_names)
{
    char names[512];
    json_t *o = admin("GET", path, 200);
    names_of(o, "topics", "name", names, sizeof names);
    ck_assert_msg(strcmp(names, want_names) == 0, "GET %s: topics %s, want %s", path, names,
                  want_names);
    return o;
}

START_TEST(test_admin_topics_list_page_inspect)
{
    for (int i = 1; i <= 5; i++) {
        char topic[16];
        snprintf(topic, sizeof topic, "t%d", i);
        lg_publish_n(srv.control_port, topic, 1, i, NULL, 0);
    }
    lg_publish_n(srv.control_port, "other", 1, 1, NULL, 0);
    struct lg_sse_client c;
    lg_sse_must_open(&c, srv.public_port, "/sse?topic=t3", NULL);

    json_t *o = topics_page("/v1/topics?prefix=t&limit=2", "t1,t2");
    ck_assert_str_eq(json_string_value(json_object_get(o, "next")), "t2");
    json_decref(o);
    json_decref(topics_page("/v1/topics?prefix=t&limit=2&after=t2", "t3,t4"));
    o = topics_page("/v1/topics?prefix=t&limit=2&after=t4", "t5");
    ck_assert(json_is_null(json_object_get(o, "next")));
    json_decref(o);
    json_decref(topics_page("/v1/topics", "other,t1,t2,t3,t4,t5"));

    o = admin("GET", "/v1/topics/t3", 200);
    char epoch[16];
    lg_publish_n_epoch(srv.control_port, "t3", 4, 4, epoch, sizeof epoch);
    ck_assert_str_eq(json_string_value(json_object_get(o, "name")), "t3");
    ck_assert_str_eq(json_string_value(json_object_get(o, "epoch")), epoch);
    ck_assert_int_eq(json_integer_value(json_object_get(o, "last_seq")), 3);
    ck_assert_int_eq(json_integer_value(json_object_get(o, "retained_events")), 3);
    ck_assert_int_gt(json_integer_value(json_object_get(o, "retained_bytes")), 3 * 2);
    ck_assert_int_eq(json_integer_value(json_object_get(o, "subscribers")), 1);
    ck_assert(json_is_integer(json_object_get(o, "publish_rate")));
    json_decref(o);

    expect_404("GET", "/v1/topics/nope");
    expect_404("DELETE", "/v1/topics/nope");
    struct lg_http_response r;
    ck_assert_int_eq(lg_http_request(srv.control_port, "PUT", "/v1/topics/t1", NULL, NULL, 0, &r,
                                     WAIT_MS), 0);
    lg_expect_error(&r, 405, "method_not_allowed", LG_ERROR_JSON_TYPE);
    char allow[64];
    ck_assert(lg_http_header(&r, "Allow", allow, sizeof allow));
    ck_assert_str_eq(allow, "GET, HEAD, DELETE");
    lg_http_response_free(&r);
    o = admin("GET", "/v1/topics?limit=0", 400);
    json_decref(o);
    lg_sse_close(&c);
}
END_TEST

START_TEST(test_admin_delete_topic_ends_every_transport)
{
    char epoch[16], want[256];
    lg_publish_n_epoch(srv.control_port, "d", 1, 3, epoch, sizeof epoch);
    struct lg_sse_client sse;
    lg_sse_must_open(&sse, srv.public_port, "/sse?topic=d&topic=keep", NULL);
    struct lg_ws_client ws;
    lg_ws_must_subscribe(&ws, srv.public_port, "/ws?topic=d", NULL, NULL, 0);
    int poll = lg_tcp_connect(srv.public_port);
    ck_assert_int_ge(poll, 0);
    const char req[] = "GET /poll?topic=d&timeout=20 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    ck_assert_int_eq(lg_send_all(poll, req, sizeof req - 1), 0);
    ck_assert(lg_wait_stat(srv.control_port, "clients_poll", 1, WAIT_MS));

    json_t *o = admin("DELETE", "/v1/topics/d", 200);
    ck_assert_str_eq(json_string_value(json_object_get(o, "topic")), "d");
    ck_assert_int_eq(json_integer_value(json_object_get(o, "subscribers_ended")), 3);
    json_decref(o);

    struct lg_sse_event ev;
    ck_assert_int_eq(lg_sse_next(&sse, &ev, WAIT_MS), 1);
    ck_assert_str_eq(ev.event, "end");
    snprintf(want, sizeof want, "{\"topic\":\"d\",\"id\":\"d@%s:3\"}", epoch);
    ck_assert_str_eq(ev.data, want);
    lg_sse_event_free(&ev);
    char *m = NULL;
    ck_assert_int_eq(lg_ws_next(&ws, &m, WAIT_MS), 1);
    snprintf(want, sizeof want, "{\"type\":\"end\",\"v\":1,\"topic\":\"d\",\"id\":\"d@%s:3\"}",
             epoch);
    ck_assert_str_eq(m, want);
    free(m);
    char buf[4096];
    size_t len = 0;
    ck_assert_int_ge(lg_recv_until(poll, buf, sizeof buf, &len, "\"cursor\"", WAIT_MS), 0);
    snprintf(want, sizeof want, "{\"events\":[{\"type\":\"end\",\"v\":1,\"topic\":\"d\",\"id\":"
             "\"d@%s:3\"}]", epoch);
    ck_assert_msg(strstr(buf, want), "poll answer %s, want %s", buf, want);
    close(poll);

    /* The topic is gone; a publish creates it anew: new epoch, seq 1; the SSE stream, still
     * subscribed to "keep", gets nothing of it. */
    expect_404("GET", "/v1/topics/d");
    char id[256], new_epoch[16];
    ck_assert_int_eq(lg_publish(srv.control_port, "d", "again", id, sizeof id), 201);
    lg_epoch_of(id, new_epoch, sizeof new_epoch);
    ck_assert_str_ne(new_epoch, epoch);
    ck_assert_uint_eq(lg_seq_of(id), 1);
    lg_sse_expect_no_event(&sse, 300);
    lg_publish_n(srv.control_port, "keep", 1, 1, NULL, 0);
    ck_assert_int_eq(lg_sse_next(&sse, &ev, WAIT_MS), 1);
    ck_assert_str_eq(ev.event, "message");
    lg_sse_event_free(&ev);

    /* A client resuming from the old life gets reset. */
    struct lg_sse_client again;
    char path[300];
    snprintf(path, sizeof path, "/sse?topic=d&last_event_id=d@%s:3", epoch);
    lg_sse_must_open(&again, srv.public_port, path, NULL);
    ck_assert_int_eq(lg_sse_next(&again, &ev, WAIT_MS), 1);
    ck_assert_str_eq(ev.event, "reset");
    lg_sse_event_free(&ev);
    lg_sse_close(&again);
    lg_sse_close(&sse);
    lg_ws_close(&ws);
}
END_TEST

START_TEST(test_admin_clients_list_page_kick)
{
    struct lg_sse_client s[3];
    for (int i = 0; i < 3; i++)
        lg_sse_must_open(&s[i], srv.public_port, "/sse?topic=c", NULL);
    struct lg_ws_client ws;
    lg_ws_must_subscribe(&ws, srv.public_port, "/ws?topic=w1&topic=w2", NULL, NULL, 0);

    char ids[256], all[256];
    json_t *o = admin("GET", "/v1/clients?topic=c", 200);
    names_of(o, "clients", "id", all, sizeof all);
    ck_assert_uint_eq(json_array_size(json_object_get(o, "clients")), 3);
    json_t *first = json_array_get(json_object_get(o, "clients"), 0);
    ck_assert_str_eq(json_string_value(json_object_get(first, "transport")), "sse");
    ck_assert_str_eq(json_string_value(json_object_get(first, "remote")), "127.0.0.1");
    ck_assert_str_eq(json_string_value(json_array_get(json_object_get(first, "topics"), 0)), "c");
    ck_assert(json_is_integer(json_object_get(first, "queue_depth")));
    ck_assert(json_is_integer(json_object_get(first, "bytes_sent")));
    ck_assert_int_gt(json_integer_value(json_object_get(first, "connected_since_ms")),
                     lg_wall_ms() - 60000);
    json_decref(o);

    o = admin("GET", "/v1/clients?topic=c&limit=2", 200);
    names_of(o, "clients", "id", ids, sizeof ids);
    json_t *next = json_object_get(o, "next");
    ck_assert(json_is_integer(next));
    char path[128];
    snprintf(path, sizeof path, "/v1/clients?topic=c&limit=2&after=%lld",
             (long long)json_integer_value(next));
    json_decref(o);
    o = admin("GET", path, 200);
    char rest[128];
    names_of(o, "clients", "id", rest, sizeof rest);
    ck_assert(json_is_null(json_object_get(o, "next")));
    json_decref(o);
    char joined[600];
    snprintf(joined, sizeof joined, "%s,%s", ids, rest);
    ck_assert_str_eq(joined, all);

    o = admin("GET", "/v1/clients", 200);
    ck_assert_uint_eq(json_array_size(json_object_get(o, "clients")), 4);
    json_t *wsc = json_array_get(json_object_get(o, "clients"), 3);
    ck_assert_str_eq(json_string_value(json_object_get(wsc, "transport")), "websocket");
    long long ws_id = (long long)json_integer_value(json_object_get(wsc, "id"));
    long long sse_id = (long long)json_integer_value(
        json_object_get(json_array_get(json_object_get(o, "clients"), 0), "id"));
    json_decref(o);

    /* Kick the first SSE client and the WebSocket client: each sees the reason. */
    snprintf(path, sizeof path, "/v1/clients/%lld?reason=maintenance%%20window", sse_id);
    o = admin("DELETE", path, 200);
    ck_assert_str_eq(json_string_value(json_object_get(o, "reason")), "maintenance window");
    json_decref(o);
    struct lg_sse_event ev;
    ck_assert_int_eq(lg_sse_next(&s[0], &ev, WAIT_MS), 1);
    ck_assert_str_eq(ev.event, "error");
    ck_assert_str_eq(ev.data, "{\"code\":\"kicked\",\"message\":\"maintenance window\"}");
    lg_sse_event_free(&ev);
    ck_assert(lg_sse_wait_eof(&s[0], WAIT_MS));
    snprintf(path, sizeof path, "/v1/clients/%lld?reason=bye", ws_id);
    json_decref(admin("DELETE", path, 200));
    char *m = NULL;
    ck_assert_int_eq(lg_ws_next(&ws, &m, WAIT_MS), -1);
    ck_assert_int_eq(ws.close_code, 4001);
    ck_assert_str_eq(ws.close_reason, "bye");
    ck_assert(lg_wait_stat(srv.control_port, "clients_sse", 2, WAIT_MS));
    ck_assert(lg_wait_stat(srv.control_port, "clients_ws", 0, WAIT_MS));

    /* A held long-poll is answered 409 kicked with the reason. */
    int poll = lg_tcp_connect(srv.public_port);
    ck_assert_int_ge(poll, 0);
    const char req[] = "GET /poll?topic=pk&timeout=20 HTTP/1.1\r\nHost: x\r\n\r\n";
    ck_assert_int_eq(lg_send_all(poll, req, sizeof req - 1), 0);
    ck_assert(lg_wait_stat(srv.control_port, "clients_poll", 1, WAIT_MS));
    o = admin("GET", "/v1/clients?topic=pk", 200);
    json_t *pc = json_array_get(json_object_get(o, "clients"), 0);
    ck_assert_str_eq(json_string_value(json_object_get(pc, "transport")), "poll");
    snprintf(path, sizeof path, "/v1/clients/%lld?reason=later",
             (long long)json_integer_value(json_object_get(pc, "id")));
    json_decref(o);
    json_decref(admin("DELETE", path, 200));
    char buf[2048];
    size_t len = 0;
    ck_assert_int_ge(lg_recv_until(poll, buf, sizeof buf, &len, "}", WAIT_MS), 0);
    ck_assert_msg(strncmp(buf, "HTTP/1.1 409 ", 13) == 0, "%s", buf);
    ck_assert_msg(strstr(buf, "{\"error\":\"kicked\",\"message\":\"later\"}"), "%s", buf);
    close(poll);

    /* Gone now, and never existed: 404. */
    snprintf(path, sizeof path, "/v1/clients/%lld", sse_id);
    expect_404("DELETE", path);
    expect_404("DELETE", "/v1/clients/999999");
    expect_404("DELETE", "/v1/clients/abc");
    expect_refusal("GET", "/v1/clients?after=x", 400, "invalid_parameter");
    /* The three kicked connections are counted once their sockets are closed. */
    bool counted = false;
    for (int64_t deadline = lg_now_ms() + WAIT_MS; !counted && lg_left_ms(deadline) > 0;) {
        struct lg_http_response r;
        ck_assert_int_eq(lg_http_request(srv.control_port, "GET", "/metrics", NULL, NULL, 0, &r,
                                         WAIT_MS), 0);
        counted = strstr(r.body, "\nlivegate_connections_closed_total{reason=\"admin\"} 3\n");
        lg_http_response_free(&r);
    }
    ck_assert_msg(counted, "livegate_connections_closed_total{reason=\"admin\"} never reached 3");
    ck_assert(lg_server_wait_log(&srv, "client disconnected", WAIT_MS));
    ck_assert_ptr_nonnull(strstr(srv.log, "reason=admin"));
    for (int i = 0; i < 3; i++)
        lg_sse_close(&s[i]);
    lg_ws_close(&ws);
}
END_TEST

/* The id of the only client subscribed to topic. */
static long long only_client_of(const char *topic)
{
    char path[128];
    snprintf(path, sizeof path, "/v1/clients?topic=%s", topic);
    json_t *o = admin("GET", path, 200);
    ck_assert_uint_eq(json_array_size(json_object_get(o, "clients")), 1);
    long long id = (long long)json_integer_value(
        json_object_get(json_array_get(json_object_get(o, "clients"), 0), "id"));
    json_decref(o);
    return id;
}

/* A kick's reason that is not UTF-8 is answered (each bad byte becomes U+FFFD) and what the
 * client sees is that UTF-8 text, bounded to fit a WebSocket close reason (123 bytes). */
START_TEST(test_admin_kick_reason_not_utf8)
{
    struct lg_sse_client sse;
    lg_sse_must_open(&sse, srv.public_port, "/sse?topic=k8", NULL);
    char path[512];
    snprintf(path, sizeof path, "/v1/clients/%lld?reason=%%FF%%FEok%%C3%%A9%%C3",
             only_client_of("k8"));
    json_t *o = admin("DELETE", path, 200);
    ck_assert_str_eq(json_string_value(json_object_get(o, "reason")),
                     "\xEF\xBF\xBD\xEF\xBF\xBDok\xC3\xA9\xEF\xBF\xBD");
    json_decref(o);
    struct lg_sse_event ev;
    ck_assert_int_eq(lg_sse_next(&sse, &ev, WAIT_MS), 1);
    ck_assert_str_eq(ev.data, "{\"code\":\"kicked\",\"message\":"
                              "\"\xEF\xBF\xBD\xEF\xBF\xBDok\xC3\xA9\xEF\xBF\xBD\"}");
    lg_sse_event_free(&ev);
    lg_sse_close(&sse);

    /* 41 bad bytes: 41 U+FFFD would be 123 bytes; the reason is cut at 40 (120 bytes) */
    struct lg_ws_client ws;
    lg_ws_must_subscribe(&ws, srv.public_port, "/ws?topic=k9", NULL, NULL, 0);
    int at = snprintf(path, sizeof path, "/v1/clients/%lld?reason=", only_client_of("k9"));
    for (int i = 0; i < 41; i++)
        at += snprintf(path + at, sizeof path - (size_t)at, "%%FF");
    o = admin("DELETE", path, 200);
    char want[128] = "";
    for (int i = 0; i < 40; i++)
        strcat(want, "\xEF\xBF\xBD");
    ck_assert_str_eq(json_string_value(json_object_get(o, "reason")), want);
    json_decref(o);
    char *m = NULL;
    ck_assert_int_eq(lg_ws_next(&ws, &m, WAIT_MS), -1);
    ck_assert_int_eq(ws.close_code, 4001);
    ck_assert_str_eq(ws.close_reason, want);
    lg_ws_close(&ws);

    /* more than 120 bytes as sent: refused, nobody kicked */
    char longer[200];
    memset(longer, 'r', 121);
    longer[121] = '\0';
    snprintf(path, sizeof path, "/v1/clients/1?reason=%s", longer);
    expect_refusal("DELETE", path, 400, "bad_request");
}
END_TEST

/* The gateway's own topics cannot be deleted, as they cannot be published to: 422, and
 * $sys/stats goes on for its subscriber. */
START_TEST(test_admin_delete_reserved_topic)
{
    struct lg_sse_client c;
    lg_sse_must_open(&c, srv.public_port, "/sse?topic=$sys/stats", NULL);
    struct lg_sse_event ev;
    ck_assert_int_eq(lg_sse_next(&c, &ev, WAIT_MS), 1); /* it exists: it has ticked */
    lg_sse_event_free(&ev);
    expect_refusal("DELETE", "/v1/topics/$sys/stats", 422, "invalid_topic");
    expect_refusal("DELETE", "/v1/topics/%24sys%2Fstats", 422, "invalid_topic");
    struct lg_http_response r;
    ck_assert_int_eq(lg_http_request(srv.control_port, "POST", "/v1/topics/$sys/stats/events",
                                     NULL, "x", 1, &r, WAIT_MS), 0);
    lg_expect_error(&r, 422, "invalid_topic", LG_ERROR_ONLY_KEYS);
    lg_http_response_free(&r);
    ck_assert_int_eq(lg_sse_next(&c, &ev, WAIT_MS), 1);
    ck_assert_str_eq(ev.event, "message"); /* not `end` */
    lg_sse_event_free(&ev);
    lg_sse_close(&c);
}
END_TEST

/* Numeric query parameters are digits only, in range: 400 invalid_parameter otherwise. */
START_TEST(test_admin_numeric_parameters)
{
    static const char *const bad[] = {
        "/v1/clients?after=-1", "/v1/clients?after=+1", "/v1/clients?after=%201",
        "/v1/clients?after=1x", "/v1/clients?after=18446744073709551616",
        "/v1/clients?limit=-1", "/v1/clients?limit=+5", "/v1/clients?limit=0",
        "/v1/clients?limit=1001", "/v1/topics?limit=-1", "/v1/topics?limit=%2B5",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        expect_refusal("GET", bad[i], 400, "invalid_parameter");
    json_decref(admin("GET", "/v1/clients?after=0&limit=1000", 200));
    json_decref(admin("GET", "/v1/clients?after=18446744073709551615", 200));
}
END_TEST

static Suite *admin_suite(void)
{
    Suite *s = suite_create("admin");
    TCase *tc = LG_TCASE(s, "admin", server_setup, server_teardown,
                         test_admin_topics_list_page_inspect,
                         test_admin_delete_topic_ends_every_transport,
                         test_admin_clients_list_page_kick, test_admin_kick_reason_not_utf8,
                         test_admin_delete_reserved_topic, test_admin_numeric_parameters);
    tcase_set_timeout(tc, 60);
    return s;
}

LG_CHECK_MAIN(admin_suite)
