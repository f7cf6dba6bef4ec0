/*
 * lg_stats.c - the one /v1/stats client of the integration tests: a snapshot of every integer
 * counter, one counter read now, and a bounded wait for a counter to reach a value.
 *
 * Owns:    nothing global; a snapshot is a plain struct the caller holds.
 * Threads: single-threaded test code (each call opens its own connection).
 * Bounds:  every request and every wait takes a timeout; no blind sleeps (the 10 ms pause is
 *          the poll interval of an observable condition).
 */
#include <check.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "lg_internal.h"
#include "lg_test.h"

#define LG_STATS__TIMEOUT_MS 10000
#define LG_STATS__POLL_MS 10

int lg_stats_read(uint16_t control_port, struct lg_stats *out)
{
    memset(out, 0, sizeof *out);
    struct lg_http_response r;
    if (lg_http_request(control_port, "GET", "/v1/stats", NULL, NULL, 0, &r,
                        LG_STATS__TIMEOUT_MS) < 0 ||
        r.status != 200) {
        fprintf(stderr, "lg_stats_read: GET /v1/stats answered %d: %s\n", r.status,
                r.body ? r.body : "");
        lg_http_response_free(&r);
        return -1;
    }
    json_error_t jerr;
    json_t *root = json_loadb(r.body, r.body_len, 0, &jerr);
    if (!json_is_object(root)) {
        fprintf(stderr, "lg_stats_read: not a JSON object: %s\n", r.body);
        json_decref(root);
        lg_http_response_free(&r);
        return -1;
    }
    snprintf(out->json, sizeof out->json, "%s", r.body);
    lg_http_response_free(&r);
    const char *k;
    json_t *v;
    size_t n = 0;
    json_object_foreach(root, k, v) {
        if (!json_is_integer(v))
            continue;
        if (n == LG_STATS_MAX) { /* a counter the tests could not see: say so */
            fprintf(stderr, "lg_stats: more than %d counters; raise LG_STATS_MAX\n", LG_STATS_MAX);
            json_decref(root);
            return -1;
        }
        snprintf(out->name[n], sizeof out->name[n], "%s", k);
        out->value[n] = (long long)json_integer_value(v);
        n++;
    }
    out->count = n;
    json_decref(root);
    return 0;
}

long long lg_stats_value(const struct lg_stats *s, const char *name)
{
    for (size_t i = 0; i < s->count; i++)
        if (strcmp(s->name[i], name) == 0)
            return s->value[i];
    fprintf(stderr, "lg_stats_value: no integer counter \"%s\" in %s\n", name, s->json);
    return -1;
}

long long lg_stat(uint16_t control_port, const char *name)
{
    struct lg_stats s;
    if (lg_stats_read(control_port, &s) < 0)
        return -1;
    return lg_stats_value(&s, name);
}

long long lg_stat_wait(uint16_t control_port, const char *name, int op, long long value,
                       int timeout_ms)
{
    int64_t deadline = lg_test__deadline(timeout_ms);
    long long v;
    for (;;) {
        v = lg_stat(control_port, name);
        bool ok = v >= 0 && (op > 0 ? v >= value : op < 0 ? v <= value : v == value);
        if (ok || lg_left_ms(deadline) == 0)
            break;
        poll(NULL, 0, LG_STATS__POLL_MS);
    }
    return v;
}

bool lg_wait_stat(uint16_t control_port, const char *name, long long want, int timeout_ms)
{
    long long v = lg_stat_wait(control_port, name, 0, want, timeout_ms);
    if (v == want)
        return true;
    fprintf(stderr, "lg_wait_stat: %s is %lld, not %lld, after %d ms\n", name, v, want,
            timeout_ms);
    return false;
}

long long lg_server_stat(const struct lg_server *s, const char *name)
{
    long long v = lg_stat(s->control_port, name);
    ck_assert_msg(v >= 0, "stats counter %s unreadable (no integer %s in /v1/stats)", name, name);
    return v;
}
