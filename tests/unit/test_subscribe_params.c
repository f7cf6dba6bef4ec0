/*
 * test_subscribe_params.c - hostile query strings for the subscribe parameters
 * (subscribe_params.h): a decoded value keeps its length, so a percent-encoded NUL is refused
 * with 400 instead of cutting the value short (docs/security.md); where a subscription starts
 * (since=latest, rewind=N) and every refusal of it. The ordinary cases are in
 * test_http_request.c beside the query iterator they share.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "http_request.h"
#include "subscribe_params.h"

#include "check_main.h"

#define NUL_PROBLEM                                                                                \
    "malformed query string: a parameter holds a NUL byte (%00), which no name, topic, cursor " \
    "or timeout may contain"

static void expect_nul_refused(const char *q)
{
    struct lg_subscribe_params *p = malloc(sizeof *p);
    char problem[256];
    const char *code = lg_subscribe_params_parse(p, q, strlen(q), "since", NULL, 0, 64, problem,
                                                 sizeof problem);
    ck_assert_msg(code && strcmp(code, "bad_request") == 0, "%s: code %s", q,
                  code ? code : "(accepted)");
    ck_assert_str_eq(problem, NUL_PROBLEM);
    free(p);
}

START_TEST(a_percent_encoded_nul_is_refused_wherever_it_is)
{
    expect_nul_refused("topic=demo%00junk");
    expect_nul_refused("topic=demo&since=%00garbage");
    expect_nul_refused("topic=demo&timeout=0%00abc");
    expect_nul_refused("topic=demo&since%00x=1");  /* in a name */
    expect_nul_refused("topic=demo&_=%00");        /* even in an ignored parameter */
}
END_TEST

START_TEST(the_iterator_reports_a_nul_apart_from_a_bad_escape)
{
    char name[32], value[32];
    size_t pos = 0;
    const char q[] = "a=1%002&b=%zz";
    ck_assert_int_eq(lg_query_next(q, strlen(q), &pos, name, sizeof name, value, sizeof value), -2);
    ck_assert_int_eq(lg_query_next(q, strlen(q), &pos, name, sizeof name, value, sizeof value), -1);
    ck_assert_int_eq(lg_query_next(q, strlen(q), &pos, name, sizeof name, value, sizeof value), 0);
}
END_TEST

/* Parse q with the cursor in cursor_param (and a Last-Event-ID header when header is set). */
static const char *parse_q(struct lg_subscribe_params *p, const char *q, const char *cursor_param,
                           const char *header, char *problem)
{
    return lg_subscribe_params_parse(p, q, strlen(q), cursor_param, header,
                                     header ? strlen(header) : 0, 64, problem, 256);
}

#define REWIND_RANGE(v)                                                                            \
    "rewind must be a whole number of events from 0 to 1000000 (the most a topic's "              \
    "history.max_events may retain), got \"" v "\""

static void expect_refused(const char *q, const char *cursor_param, const char *want)
{
    struct lg_subscribe_params *p = malloc(sizeof *p);
    char problem[256];
    const char *code = parse_q(p, q, cursor_param, NULL, problem);
    ck_assert_msg(code && strcmp(code, "bad_request") == 0, "%s: code %s", q,
                  code ? code : "(accepted)");
    ck_assert_str_eq(problem, want);
    free(p);
}

START_TEST(a_start_position_is_latest_or_a_rewind)
{
    struct lg_subscribe_params *p = malloc(sizeof *p);
    char problem[256];
    ck_assert_ptr_null(parse_q(p, "topic=a&since=latest", "since", NULL, problem));
    ck_assert(p->has_start && !p->has_cursor);
    ck_assert_int_eq(p->start.kind, LG_START_LATEST);
    ck_assert_ptr_null(parse_q(p, "topic=a&since=latest", "last_event_id", NULL, problem));
    ck_assert_int_eq(p->start.kind, LG_START_LATEST);
    ck_assert_ptr_null(parse_q(p, "rewind=0&topic=a", "since", NULL, problem));
    ck_assert(p->has_start);
    ck_assert_int_eq(p->start.kind, LG_START_REWIND);
    ck_assert_uint_eq(p->start.rewind, 0);
    ck_assert_ptr_null(parse_q(p, "topic=a&rewind=1000000", "last_event_id", NULL, problem));
    ck_assert_uint_eq(p->start.rewind, 1000000);
    ck_assert_ptr_null(parse_q(p, "topic=a", "since", NULL, problem));
    ck_assert(!p->has_start); /* the topic's own default */
    /* A browser's reconnection: its Last-Event-ID resumes, whatever the URL asked first. */
    ck_assert_ptr_null(parse_q(p, "topic=a&rewind=5", "last_event_id", "a@0123abcd:3", problem));
    ck_assert(p->has_cursor && !p->has_start);
    ck_assert_ptr_null(parse_q(p, "topic=a&since=latest", "last_event_id", "", problem));
    ck_assert(!p->has_cursor && p->has_start); /* an empty header is no cursor */
    free(p);
}
END_TEST

START_TEST(a_bad_start_position_is_refused_naming_it)
{
    expect_refused("topic=a&rewind=-1", "since", REWIND_RANGE("-1"));
    expect_refused("topic=a&rewind=abc", "since", REWIND_RANGE("abc"));
    expect_refused("topic=a&rewind=", "since", REWIND_RANGE(""));
    expect_refused("topic=a&rewind=%2B3", "since", REWIND_RANGE("+3"));
    expect_refused("topic=a&rewind=1000001", "since", REWIND_RANGE("1000001"));
    expect_refused("topic=a&rewind=99999999999999999999", "since",
                   REWIND_RANGE("99999999999999999999"));
    const char *twice = "give one start position: since=latest or rewind=N, not both (nor one "
                        "twice)";
    expect_refused("topic=a&since=latest&rewind=2", "since", twice);
    expect_refused("topic=a&rewind=2&rewind=3", "since", twice);
    expect_refused("topic=a&since=latest&since=latest", "last_event_id", twice);
    expect_refused("topic=a&since=latest&since=a@0123abcd:5", "since",
                   "since=latest and a cursor (since) cannot be combined: the cursor already "
                   "says where to start");
    expect_refused("topic=a&last_event_id=a@0123abcd:5&rewind=1", "last_event_id",
                   "rewind and a cursor (last_event_id) cannot be combined: the cursor already "
                   "says where to start");
    expect_refused("topic=a&since=a@0123abcd:5", "last_event_id",
                   "since on this path takes only \"latest\"; a cursor goes in last_event_id");
}
END_TEST

START_TEST(a_filter_is_parsed_to_its_canonical_text_or_refused)
{
    struct lg_subscribe_params *p = malloc(sizeof *p);
    char problem[256];
    ck_assert_ptr_null(parse_q(p, "topic=a&filter=region:eu,kind:b%7Ca", "since", NULL, problem));
    ck_assert(p->has_filter);
    ck_assert_str_eq(p->filter.text, "kind:a|b,region:eu");
    ck_assert_ptr_null(parse_q(p, "topic=a&filter=", "since", NULL, problem));
    ck_assert(!p->has_filter);
    ck_assert_ptr_null(parse_q(p, "topic=a", "since", NULL, problem));
    ck_assert(!p->has_filter);
    ck_assert_str_eq(parse_q(p, "topic=a&filter=kind", "since", NULL, problem), "invalid_filter");
    ck_assert_str_eq(problem, "malformed filter: filter clause \"kind\" has no ':'; a clause is "
                              "key:value or key:value1|value2");
    ck_assert_str_eq(parse_q(p, "topic=a&filter=a:1&filter=b:2", "since", NULL, problem),
                     "invalid_filter");
    ck_assert_str_eq(problem, "give one filter; join its clauses with ','");
    free(p);
}
END_TEST

static Suite *subscribe_params_suite(void)
{
    Suite *s = suite_create("subscribe_params");
    TCase *tc = tcase_create("hostile");
    tcase_add_test(tc, a_percent_encoded_nul_is_refused_wherever_it_is);
    tcase_add_test(tc, the_iterator_reports_a_nul_apart_from_a_bad_escape);
    suite_add_tcase(s, tc);
    tc = tcase_create("start");
    tcase_add_test(tc, a_start_position_is_latest_or_a_rewind);
    tcase_add_test(tc, a_bad_start_position_is_refused_naming_it);
    suite_add_tcase(s, tc);
    tc = tcase_create("filter");
    tcase_add_test(tc, a_filter_is_parsed_to_its_canonical_text_or_refused);
    suite_add_tcase(s, tc);
    return s;
}

LG_CHECK_MAIN(subscribe_params_suite)
