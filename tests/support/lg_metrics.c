/*
 * lg_metrics.c - the /metrics client of the integration tests: the exposition as text, one
 * sample's value, and the check that a refusal or a drop moved exactly its own series of a
 * counter family (its reason label by the expected amount, every sibling not at all).
 *
 * Owns:    nothing global; a scrape is a malloc'd string the caller frees.
 * Threads: single-threaded test code (each call opens its own connection).
 * Bounds:  every request takes a timeout.
 */
#include <check.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lg_test.h"

#define LG_METRICS__TIMEOUT_MS 10000

char *lg_metrics_scrape(uint16_t control_port)
{
    struct lg_http_response r;
    ck_assert_int_eq(lg_http_request(control_port, "GET", "/metrics", NULL, NULL, 0, &r,
                                     LG_METRICS__TIMEOUT_MS), 0);
    ck_assert_int_eq(r.status, 200);
    char *body = r.body;
    r.body = NULL;
    lg_http_response_free(&r);
    return body;
}

/* The line of sample `series` (name and labels exactly as exposed), or NULL. */
static const char *sample_line(const char *body, const char *series)
{
    size_t n = strlen(series);
    for (const char *p = body; (p = strstr(p, series)) != NULL; p += n)
        if ((p == body || p[-1] == '\n') && p[n] == ' ')
            return p;
    return NULL;
}

double lg_metrics_value(const char *body, const char *series)
{
    const char *line = sample_line(body, series);
    ck_assert_msg(line != NULL, "no sample %s in the exposition", series);
    return strtod(line + strlen(series) + 1, NULL);
}

double lg_metric(uint16_t control_port, const char *series)
{
    char *body = lg_metrics_scrape(control_port);
    double v = lg_metrics_value(body, series);
    free(body);
    return v;
}

void lg_metrics_expect_rise(const char *before, const char *after, const char *family,
                            const char *label, const char *value, double delta)
{
    char prefix[160], series[256];
    snprintf(prefix, sizeof prefix, "%s{%s=\"", family, label);
    snprintf(series, sizeof series, "%s%s\"}", prefix, value);
    ck_assert_msg(sample_line(after, series) != NULL, "no sample %s", series);
    size_t n = strlen(prefix);
    for (const char *p = after; (p = strstr(p, prefix)) != NULL; p += n) {
        if (p != after && p[-1] != '\n')
            continue;
        size_t len = strcspn(p, " ");
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)len, p);
        double was = lg_metrics_value(before, name), now = lg_metrics_value(after, name);
        double want = strcmp(name, series) == 0 ? was + delta : was;
        ck_assert_msg(now == want, "%s went from %.17g to %.17g, want %.17g", name, was, now,
                      want);
    }
}

bool lg_metric_wait(uint16_t control_port, const char *series, double want, int timeout_ms)
{
    int64_t deadline = lg_now_ms() + timeout_ms;
    double v;
    while ((v = lg_metric(control_port, series)) != want && lg_left_ms(deadline) > 0)
        poll(NULL, 0, 10); /* the poll interval of an observable condition */
    if (v != want)
        fprintf(stderr, "lg_metric_wait: %s is %.17g, want %.17g\n", series, v, want);
    return v == want;
}
