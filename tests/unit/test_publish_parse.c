/*
 * test_publish_parse.c - the publish bodies as pure functions (publish_parse.h): every input
 * is copied into a buffer of exactly its length, so a read past the end is an ASan report, and
 * every refusal is checked for its exact status, code, index and message.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "publish_parse.h"

#include "check_main.h"

#define MAX_EVENT 64

/* A malloc'd copy of s without its NUL: what a body buffer of exactly that length holds. */
static char *exact(const char *s)
{
    size_t n = strlen(s);
    char *copy = malloc(n ? n : 1);
    ck_assert_ptr_nonnull(copy);
    memcpy(copy, s, n);
    return copy;
}

static struct lg_raw_value given(const char *s)
{
    return (struct lg_raw_value){.text = s, .len = strlen(s), .present = true};
}

struct event_case {
    const char *topic;        /* path segment, percent-encoded */
    const char *type, *key;   /* query values or NULL */
    const char *content_type; /* or NULL */
    const char *body;
};

static int parse_event(const struct event_case *k, struct lg_parsed_event *ev,
                       struct lg_ctl_error *e)
{
    char *body = exact(k->body);
    struct lg_event_input in = {
        .topic_segment = k->topic,
        .topic_segment_len = strlen(k->topic),
        .content_type = k->content_type,
        .body = body,
        .body_len = strlen(k->body),
    };
    if (k->type)
        in.type = given(k->type);
    if (k->key)
        in.key = given(k->key);
    int rc = lg_parse_event(&in, MAX_EVENT, ev, e);
    if (rc == 0 && !ev->req.data_is_json) { /* data points into the body: keep a copy */
        static char data[MAX_EVENT + 1];
        memcpy(data, ev->req.data, ev->req.data_len);
        ev->req.data = data;
    }
    free(body);
    return rc;
}

/* e is exactly this refusal (code NULL: any code). */
static void expect_error(const struct lg_ctl_error *e, unsigned status, const char *code,
                         long index, const char *message)
{
    ck_assert_uint_eq(e->status, status);
    if (code)
        ck_assert_str_eq(e->code, code);
    ck_assert_int_eq(e->index, index);
    ck_assert_str_eq(e->message, message);
}

static void expect_event_refused(const struct event_case *k, unsigned status, const char *code,
                                 const char *message)
{
    struct lg_parsed_event ev;
    struct lg_ctl_error e = LG_CTL_ERROR_INIT;
    ck_assert_int_eq(parse_event(k, &ev, &e), -1);
    expect_error(&e, status, code, -1, message);
    lg_parsed_event_release(&ev);
}

START_TEST(event_text_with_type_and_key)
{
    struct event_case k = {.topic = "news%2Fsport", .type = "score", .key = "m%C3%BCnchen",
                           .body = "1:0"};
    struct lg_parsed_event ev;
    struct lg_ctl_error e = LG_CTL_ERROR_INIT;
    ck_assert_int_eq(parse_event(&k, &ev, &e), 0);
    ck_assert_str_eq(ev.req.topic, "news/sport");
    ck_assert_uint_eq(ev.req.topic_len, 10);
    ck_assert_str_eq(ev.req.type, "score");
    ck_assert_str_eq(ev.req.key, "m\xc3\xbcnchen");
    ck_assert_uint_eq(ev.req.key_len, 8);
    ck_assert_uint_eq(ev.req.data_len, 3);
    ck_assert_mem_eq(ev.req.data, "1:0", 3);
    ck_assert(!ev.req.data_is_json);
    ck_assert_ptr_null(ev.req.idempotency_key);
    lg_parsed_event_release(&ev);
}
END_TEST

START_TEST(event_json_is_made_compact)
{
    struct event_case k = {.topic = "t", .content_type = " Application/JSON ; charset=utf-8",
                           .body = "{ \"p\" : 1.07 , \"q\" : [ true ] }"};
    struct lg_parsed_event ev;
    struct lg_ctl_error e = LG_CTL_ERROR_INIT;
    ck_assert_int_eq(parse_event(&k, &ev, &e), 0);
    ck_assert(ev.req.data_is_json);
    ck_assert_str_eq(ev.req.data, "{\"p\":1.07,\"q\":[true]}");
    ck_assert_uint_eq(ev.req.data_len, strlen("{\"p\":1.07,\"q\":[true]}"));
    lg_parsed_event_release(&ev);
}
END_TEST

/* JSON data is the publisher's text less the whitespace between tokens: numbers beyond
 * int64/double, more than 17 digits and underflowing reals keep every digit, duplicate keys and
 * string escapes stay. */
START_TEST(event_json_is_kept_as_text)
{
    static const struct { const char *body, *want; } cases[] = {
        {"[ 0.1234567890123456789 , 1e-400,\n 123456789012345678901234567890 ]",
         "[0.1234567890123456789,1e-400,123456789012345678901234567890]"},
        {"{ \"a\" : 1 , \"a\" : 2 }", "{\"a\":1,\"a\":2}"},
        {" \"x \\u0000 \\/ \\\" \xc3\xa9\" ", "\"x \\u0000 \\/ \\\" \xc3\xa9\""},
        {"-0.0E+2", "-0.0E+2"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct event_case k = {.topic = "t", .content_type = "application/json",
                               .body = cases[i].body};
        struct lg_parsed_event ev;
        struct lg_ctl_error e = LG_CTL_ERROR_INIT;
        ck_assert_msg(parse_event(&k, &ev, &e) == 0, "%s: %s", cases[i].body, e.message);
        ck_assert(ev.req.data_is_json);
        ck_assert_uint_eq(ev.req.data_len, strlen(cases[i].want));
        ck_assert_str_eq(ev.req.data, cases[i].want);
        lg_parsed_event_release(&ev);
    }
    char deep[2 * (LG_JSON_DEPTH_MAX + 1) + 1];
    memset(deep, '[', LG_JSON_DEPTH_MAX + 1);
    memset(deep + LG_JSON_DEPTH_MAX + 1, ']', LG_JSON_DEPTH_MAX + 1);
    deep[sizeof deep - 1] = '\0';
    expect_event_refused(&(struct event_case){.topic = "t", .content_type = "application/json",
                                              .body = deep},
                         400, "bad_request",
                         "body is not valid JSON (Content-Type is application/json): nested "
                         "deeper than 512 levels");
    expect_event_refused(&(struct event_case){.topic = "t", .content_type = "application/json",
                                              .body = "01"},
                         400, "bad_request",
                         "body is not valid JSON (Content-Type is application/json): parse "
                         "error: trailing garbage near byte 2");
}
END_TEST

START_TEST(event_refusals)
{
    expect_event_refused(&(struct event_case){.topic = "a%2", .body = "x"}, 400, "bad_request",
                         "the topic in the path has a malformed percent-escape at byte 1; "
                         "write '%' as %25");
    expect_event_refused(&(struct event_case){.topic = "t", .type = "a b", .body = "x"}, 400,
                         "bad_request",
                         "query parameter \"type\" may only hold A-Z a-z 0-9 _ . : / -; an "
                         "event type is 1..64 bytes of A-Z a-z 0-9 _ . : / -");
    expect_event_refused(&(struct event_case){.topic = "t", .key = "k%00j", .body = "x"}, 400,
                         "bad_request",
                         "query parameter \"key\" contains a NUL byte; a key is 1..256 bytes "
                         "of UTF-8");
    expect_event_refused(&(struct event_case){.topic = "t", .body = "\xff"}, 400, "bad_request",
                         "event body is not valid UTF-8; send UTF-8 text, or JSON with "
                         "Content-Type: application/json");
    expect_event_refused(&(struct event_case){.topic = "t", .content_type = "application/json",
                                              .body = "[1,"},
                         400, "bad_request",
                         "body is not valid JSON (Content-Type is application/json): parse "
                         "error: premature EOF near byte 3");
    /* 69 bytes of JSON text, 65 once compact: still over MAX_EVENT (64). */
    char big[128];
    snprintf(big, sizeof big, "[ \"%061d\" ]", 0);
    expect_event_refused(&(struct event_case){.topic = "t", .content_type = "application/json",
                                              .body = big},
                         413, "payload_too_large",
                         "event data is 65 bytes as compact JSON; the limit is 64 "
                         "(limits.max_event_bytes)");
}
END_TEST

static int parse_batch(const char *text, struct lg_parsed_batch *b, struct lg_ctl_error *e)
{
    char *body = exact(text);
    int rc = lg_parse_batch(body, strlen(text), MAX_EVENT, b, e);
    free(body);
    return rc;
}

static void expect_batch_refused(const char *text, unsigned status, long index,
                                 const char *message)
{
    struct lg_parsed_batch b;
    struct lg_ctl_error e = LG_CTL_ERROR_INIT;
    ck_assert_int_eq(parse_batch(text, &b, &e), -1);
    expect_error(&e, status, NULL, index, message);
    lg_parsed_batch_release(&b);
}

START_TEST(batch_array_and_ndjson)
{
    struct lg_parsed_batch b;
    struct lg_ctl_error e = LG_CTL_ERROR_INIT;
    ck_assert_int_eq(parse_batch(" \n[{\"topic\":\"a\",\"data\":\"x\",\"id\":\"i1\"},"
                                 "{\"topic\":\"b\",\"data\":{\"n\":2},\"type\":\"t\"}]",
                                 &b, &e), 0);
    ck_assert_uint_eq(b.n, 2);
    ck_assert_mem_eq(b.reqs[0].topic, "a", 1);
    ck_assert_mem_eq(b.reqs[0].idempotency_key, "i1", 2);
    ck_assert(!b.reqs[0].data_is_json);
    ck_assert_str_eq(b.reqs[1].data, "{\"n\":2}");
    ck_assert(b.reqs[1].data_is_json);
    ck_assert_mem_eq(b.reqs[1].type, "t", 1);
    lg_parsed_batch_release(&b);

    /* NDJSON: blank lines (spaces, tabs, CR) are skipped; the last line needs no newline. */
    ck_assert_int_eq(parse_batch("{\"topic\":\"a\",\"data\":1}\r\n \t\r\n\n"
                                 "{\"topic\":\"b\",\"data\":\"y\"}",
                                 &b, &e), 0);
    ck_assert_uint_eq(b.n, 2);
    ck_assert_str_eq(b.reqs[0].data, "1");
    ck_assert_mem_eq(b.reqs[1].data, "y", 1);
    lg_parsed_batch_release(&b);
}
END_TEST

START_TEST(batch_json_data_is_kept)
{
    struct lg_parsed_batch b;
    struct lg_ctl_error e = LG_CTL_ERROR_INIT;
    ck_assert_int_eq(parse_batch("[{\"topic\":\"a\",\"data\":[0.1234567890123456789, 1e-400,"
                                 " {\"k\":1, \"k\":2}]}]", &b, &e), 0);
    ck_assert_str_eq(b.reqs[0].data, "[0.1234567890123456789,1e-400,{\"k\":1,\"k\":2}]");
    lg_parsed_batch_release(&b);
}
END_TEST

START_TEST(batch_refusals)
{
    expect_batch_refused("", 400, -1,
                         "the batch holds no items; send {\"topic\":...,\"data\":...} objects");
    expect_batch_refused("{\"topic\":\"a\",\"data\":1}\n{\"topic\":", 400, 1,
                         "batch item 1 (line 2) is not valid JSON: parse error: premature "
                         "EOF");
    expect_batch_refused("[{\"topic\":\"a\",\"data\":1},{\"topic\":\"b\",\"data\":1,\"x\":0}]",
                         400, 1,
                         "batch item 1 has an unknown key \"x\"; an item may hold topic, data, "
                         "type, key, id and tags");
    expect_batch_refused("[{\"topic\":\"$sys\",\"data\":1}]", 422, 0,
                         "batch item 0: topic \"$sys\": names starting with '$' are reserved "
                         "for the gateway; publish to a name without it");
    expect_batch_refused("[{\"topic\":\"a\"}]", 400, 0, "batch item 0 has no \"data\"");
    expect_batch_refused("[7]", 400, 0, "batch item 0 is not a JSON object");
    expect_batch_refused("[{\"topic\":\"a\",\"topic\":\"b\",\"data\":1}]", 400, 0,
                         "batch item 0 has \"topic\" twice");
    expect_batch_refused("[{\"topic\":\"a\",\"data\":\"x\\u0000\"}]", 400, -1,
                         "batch holds \\u0000 in a string, which a batch cannot carry; publish "
                         "that event alone (POST /v1/topics/{topic}/events)");
}
END_TEST

/* A single publish with ?tags=: the canonical text, or the refusal. */
START_TEST(event_tags_are_canonical_or_refused)
{
    char *body = exact("x");
    struct lg_event_input in = {.topic_segment = "a", .topic_segment_len = 1, .body = body,
                                .body_len = 1, .tags = given("region:eu,kind:a")};
    struct lg_parsed_event ev;
    struct lg_ctl_error e = LG_CTL_ERROR_INIT;
    ck_assert_int_eq(lg_parse_event(&in, MAX_EVENT, &ev, &e), 0);
    ck_assert_str_eq(ev.req.tags, "kind:a,region:eu");
    ck_assert_uint_eq(ev.req.tags_len, strlen("kind:a,region:eu"));
    lg_parsed_event_release(&ev);
    in.tags = given("region%3Aeu");
    ck_assert_int_eq(lg_parse_event(&in, MAX_EVENT, &ev, &e), 0);
    ck_assert_str_eq(ev.req.tags, "region:eu");
    lg_parsed_event_release(&ev);
    in.tags = given("");
    ck_assert_int_eq(lg_parse_event(&in, MAX_EVENT, &ev, &e), 0);
    ck_assert_ptr_null(ev.req.tags);
    lg_parsed_event_release(&ev);
    in.tags = given("region:e u");
    ck_assert_int_eq(lg_parse_event(&in, MAX_EVENT, &ev, &e), -1);
    expect_error(&e, 400, "bad_request", -1,
                 "query parameter \"tags\": the value of tag \"region\" may only hold "
                 "A-Z a-z 0-9 _ . -; a value is 1..64 bytes of A-Z a-z 0-9 _ . -");
    lg_parsed_event_release(&ev);
    free(body);
}
END_TEST

START_TEST(batch_tags_are_canonical_or_refused)
{
    struct lg_parsed_batch b;
    struct lg_ctl_error e = LG_CTL_ERROR_INIT;
    ck_assert_int_eq(parse_batch("[{\"topic\":\"a\",\"data\":1,\"tags\":{\"z\":\"1\","
                                 "\"k\":\"v\"}},{\"topic\":\"a\",\"data\":2}]", &b, &e), 0);
    ck_assert_str_eq(b.reqs[0].tags, "k:v,z:1");
    ck_assert_ptr_null(b.reqs[1].tags);
    lg_parsed_batch_release(&b);
    expect_batch_refused("[{\"topic\":\"a\",\"data\":1,\"tags\":[]}]", 400, 0,
                         "batch item 0: \"tags\" must be an object of string values");
    expect_batch_refused("[{\"topic\":\"a\",\"data\":1,\"tags\":{\"k\":1}}]", 400, 0,
                         "batch item 0: tag \"k\" must have a string value");
    expect_batch_refused("[{\"topic\":\"a\",\"data\":1,\"tags\":{\"k\":\"\"}}]", 400, 0,
                         "batch item 0: the value of tag \"k\" is empty; a value is 1..64 "
                         "bytes of A-Z a-z 0-9 _ . -");
}
END_TEST

static Suite *publish_parse_suite(void)
{
    Suite *s = suite_create("publish_parse");
    TCase *tc = tcase_create("parse");
    tcase_add_test(tc, event_text_with_type_and_key);
    tcase_add_test(tc, event_json_is_made_compact);
    tcase_add_test(tc, event_json_is_kept_as_text);
    tcase_add_test(tc, event_refusals);
    tcase_add_test(tc, batch_array_and_ndjson);
    tcase_add_test(tc, batch_json_data_is_kept);
    tcase_add_test(tc, batch_refusals);
    tcase_add_test(tc, event_tags_are_canonical_or_refused);
    tcase_add_test(tc, batch_tags_are_canonical_or_refused);
    suite_add_tcase(s, tc);
    return s;
}

LG_CHECK_MAIN(publish_parse_suite)
