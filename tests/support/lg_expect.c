/*
 * lg_expect.c - check assertions and small procedures that several integration tests share:
 * clocks, the parts of an event id, numbered publishes, the JSON error answer, quiet SSE
 * streams, opening SSE and WebSocket streams, and reading a source file whole. Each used to be
 * copied into the test files.
 *
 * Owns:    nothing global. lg_slurp_source's buffer belongs to the caller.
 * Threads: single-threaded test code; the assertions must run in a check test.
 * Bounds:  every wait takes a timeout; lg_slurp_source reads at most 1 MiB - 1 bytes.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "lg_test.h"

/* ---- Clocks -------------------------------------------------------------------------------- */

int64_t lg_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

long long lg_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- Event ids and publishing --------------------------------------------------------------- */

void lg_epoch_of(const char *id, char *epoch, size_t cap)
{
    ck_assert_int_eq(lg_id_parse(id, NULL, 0, epoch, cap, NULL), 0);
    ck_assert_uint_eq(strlen(epoch), 8);
}

uint64_t lg_seq_of(const char *id)
{
    unsigned long long seq = 0;
    ck_assert_int_eq(lg_id_parse(id, NULL, 0, NULL, 0, &seq), 0);
    return seq;
}

static void lg_expect__publish_n(uint16_t cport, const char *topic, bool tagged, int from, int to,
                                 char *last_id, size_t cap)
{
    for (int i = from; i <= to; i++) {
        char d[160];
        snprintf(d, sizeof d, "%s%sd%d", tagged ? topic : "", tagged ? "-" : "", i);
        ck_assert_int_eq(lg_publish(cport, topic, d, last_id, cap), 201);
    }
}

void lg_publish_n(uint16_t cport, const char *topic, int from, int to, char *last_id, size_t cap)
{
    lg_expect__publish_n(cport, topic, false, from, to, last_id, cap);
}

void lg_publish_n_tagged(uint16_t cport, const char *topic, int from, int to, char *last_id,
                         size_t cap)
{
    lg_expect__publish_n(cport, topic, true, from, to, last_id, cap);
}

void lg_publish_n_epoch(uint16_t cport, const char *topic, int from, int to, char *epoch,
                        size_t cap)
{
    char id[512];
    lg_expect__publish_n(cport, topic, false, from, to, id, sizeof id);
    lg_epoch_of(id, epoch, cap);
}

void lg_publish_n_tagged_epoch(uint16_t cport, const char *topic, int from, int to, char *epoch,
                               size_t cap)
{
    char id[512];
    lg_expect__publish_n(cport, topic, true, from, to, id, sizeof id);
    lg_epoch_of(id, epoch, cap);
}

/* ---- The JSON error answer ------------------------------------------------------------------ */

void lg_expect_error(const struct lg_http_response *r, int status, const char *code,
                     unsigned checks)
{
    lg_expect_error_named("error answer", r, status, code, checks);
}

void lg_expect_error_named(const char *what, const struct lg_http_response *r, int status,
                           const char *code, unsigned checks)
{
    ck_assert_msg(r->status == status, "%s: status %d, want %d: %s", what, r->status, status,
                  r->body);
    if (checks & LG_ERROR_JSON_TYPE) {
        char ct[128];
        ck_assert_msg(lg_http_header(r, "Content-Type", ct, sizeof ct), "%s: no Content-Type",
                      what);
        ck_assert_msg(strcmp(ct, "application/json") == 0, "%s: Content-Type %s", what, ct);
    }
    json_t *o = json_loadb(r->body, r->body_len, 0, NULL);
    ck_assert_msg(o != NULL, "%s: not JSON: %s", what, r->body);
    if (checks & LG_ERROR_JSON_TYPE)
        ck_assert_msg(json_is_object(o), "%s: not a JSON object: %s", what, r->body);
    const char *e = json_string_value(json_object_get(o, "error"));
    const char *m = json_string_value(json_object_get(o, "message"));
    ck_assert_msg(e && strcmp(e, code) == 0, "%s: error in %s, want %s", what, r->body, code);
    ck_assert_msg(m && *m, "%s: no message in %s", what, r->body);
    if (checks & (LG_ERROR_ONLY_KEYS | LG_ERROR_INDEX_OK)) {
        const char *key;
        json_t *v;
        json_object_foreach(o, key, v)
            ck_assert_msg(strcmp(key, "error") == 0 || strcmp(key, "message") == 0 ||
                              ((checks & LG_ERROR_INDEX_OK) && strcmp(key, "index") == 0),
                          "%s: unexpected key %s in %s", what, key, r->body);
    }
    json_decref(o);
}

/* ---- Quiet SSE streams ---------------------------------------------------------------------- */

void lg_sse_expect_quiet(struct lg_sse_client *c, int ms)
{
    struct lg_sse_event ev;
    int rc = lg_sse_next(c, &ev, ms);
    ck_assert_msg(rc == 0, "unexpected %s: id=%s data=%s", rc > 0 ? "event" : "end of stream",
                  ev.id, ev.data ? ev.data : "");
}

void lg_sse_expect_no_event(struct lg_sse_client *c, int ms)
{
    struct lg_sse_event ev;
    int rc = lg_sse_next(c, &ev, ms);
    if (rc == 1) {
        ck_abort_msg("unexpected event %s \"%s\": %s", ev.id, ev.event, ev.data);
        lg_sse_event_free(&ev);
    }
}

/* ---- Opening streams ------------------------------------------------------------------------- */

void lg_sse_must_open(struct lg_sse_client *c, uint16_t port, const char *path,
                      const char *headers)
{
    ck_assert_msg(lg_sse_open(c, port, path, headers) == 0, "%s: no stream", path);
    ck_assert_msg(c->status == 200, "%s answered %d", path, c->status);
    ck_assert_msg(lg_sse_wait_raw(c, 0, "retry: 3000\n\n", 5000), "no retry line on %s; got: %s",
                  path, c->raw ? c->raw : "");
}

void lg_ws_must_open(struct lg_ws_client *c, uint16_t port, const char *path,
                     const char *subprotocol)
{
    ck_assert_msg(lg_ws_open(c, port, path, subprotocol) == 0, "%s: no handshake", path);
    ck_assert_msg(c->status == 101, "%s answered %d", path, c->status);
}

void lg_ws_must_subscribe(struct lg_ws_client *c, uint16_t port, const char *path,
                          const char *want, char *cursor, size_t cap)
{
    lg_ws_must_open(c, port, path, "livegate.v1");
    char *m = NULL;
    int rc = lg_ws_next(c, &m, 5000);
    ck_assert_msg(rc == 1, "%s: no subscribed answer (rc %d, close %d %s)", path, rc,
                  c->close_code, c->close_reason);
    json_t *got = json_loads(m, 0, NULL);
    const char *type = json_string_value(json_object_get(got, "type"));
    ck_assert_msg(type && strcmp(type, "subscribed") == 0 &&
                      json_integer_value(json_object_get(got, "v")) == 1,
                  "%s: not a subscribed answer: %s", path, m);
    if (want) {
        json_t *exp = json_loads(want, 0, NULL);
        ck_assert_msg(exp != NULL, "%s: bad expectation %s", path, want);
        ck_assert_msg(json_equal(got, exp), "%s: subscribed\n  %s\nwant\n  %s", path, m, want);
        json_decref(exp);
    }
    if (cursor) {
        const char *cur = json_string_value(json_object_get(got, "cursor"));
        ck_assert_msg(cur != NULL, "%s: no cursor in %s", path, m);
        snprintf(cursor, cap, "%s", cur);
    }
    json_decref(got);
    free(m);
}

/* ---- Files ---------------------------------------------------------------------------------- */

char *lg_slurp_source(const char *rel, char *path, size_t path_cap, size_t *len)
{
    const char *src = getenv("LG_SOURCE_DIR");
    ck_assert_msg(src != NULL, "LG_SOURCE_DIR is not set (ctest sets it)");
    snprintf(path, path_cap, "%s/%s", src, rel);
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "open %s: %s", path, strerror(errno));
    char *buf = malloc(1 << 20);
    ck_assert_ptr_nonnull(buf);
    *len = fread(buf, 1, (1 << 20) - 1, f);
    buf[*len] = '\0';
    fclose(f);
    return buf;
}
