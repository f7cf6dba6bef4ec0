/*
 * test_subscribe_params.c - hostile query strings for the subscribe parameters
 * (subscribe_params.h): a decoded value keeps its length, so a percent-encoded NUL is refused
 * with 400 instead of cutting the value short (docs/security.md). The ordinary cases are in
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

static Suite *subscribe_params_suite(void)
{
    Suite *s = suite_create("subscribe_params");
    TCase *tc = tcase_create("hostile");
    tcase_add_test(tc, a_percent_encoded_nul_is_refused_wherever_it_is);
    tcase_add_test(tc, the_iterator_reports_a_nul_apart_from_a_bad_escape);
    suite_add_tcase(s, tc);
    return s;
}

LG_CHECK_MAIN(subscribe_params_suite)
