/*
 * check_main.h - the main() of every check suite (tests/unit, tests/integration): run the
 * suite with check's defaults (one forked process per test, CK_RUN_CASE honoured) and exit 0
 * only when every test passed.
 */
#ifndef LG_CHECK_MAIN_H
#define LG_CHECK_MAIN_H

#include <check.h>
#include <stdlib.h>

static inline int lg_check_run(Suite *suite)
{
    SRunner *sr = srunner_create(suite);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

/*
 * Add to suite a test case named name with the checked fixture setup/teardown (both NULL: no
 * fixture) and the tests of the list, which NULL ends; the test case, for a timeout or more.
 */
static inline TCase *lg_add_tcase(Suite *suite, const char *name, SFun setup, SFun teardown,
                                  const TTest *const *tests)
{
    TCase *tc = tcase_create(name);
    if (setup || teardown)
        tcase_add_checked_fixture(tc, setup, teardown);
    for (; *tests; tests++)
        tcase_add_test(tc, *tests);
    suite_add_tcase(suite, tc);
    return tc;
}

/* lg_add_tcase with the tests written out: LG_TCASE(suite, "name", setup, teardown, t1, t2, ...) */
#define LG_TCASE(suite, name, setup, teardown, ...)                                                \
    lg_add_tcase((suite), (name), (setup), (teardown), (const TTest *const[]){__VA_ARGS__, NULL})

/* LG_TCASE with a timeout of seconds (check's default is 4 s): LG_TCASE_TIMEOUT(suite, "name",
 * 30, setup, teardown, t1, t2, ...) */
static inline TCase *lg_tcase_timeout(TCase *tc, double seconds)
{
    tcase_set_timeout(tc, seconds);
    return tc;
}

#define LG_TCASE_TIMEOUT(suite, name, seconds, setup, teardown, ...)                               \
    lg_tcase_timeout(LG_TCASE((suite), (name), (setup), (teardown), __VA_ARGS__), (seconds))

#define LG_CHECK_MAIN(suite_fn)                                                                    \
    int main(void) { return lg_check_run(suite_fn()); }

/* A NULL-ended list of tests for lg_add_tcase: LG_TESTS(t1, t2, ...) */
#define LG_TESTS(...) ((const TTest *const[]){__VA_ARGS__, NULL})

/* The main() of a suite (name) of two test cases of one timeout: name, whose tests run inside
 * the checked fixture setup/teardown (a server they share), and name_own_config, whose tests
 * start their own: LG_CHECK_MAIN_SHARED("poll", 30, setup, teardown, LG_TESTS(...),
 * LG_TESTS(...)) */
#define LG_CHECK_MAIN_SHARED(name, seconds, setup, teardown, shared, own)                          \
    int main(void)                                                                                 \
    {                                                                                              \
        Suite *suite = suite_create(name);                                                         \
        lg_tcase_timeout(lg_add_tcase(suite, name, (setup), (teardown), (shared)), (seconds));     \
        lg_tcase_timeout(lg_add_tcase(suite, name "_own_config", NULL, NULL, (own)), (seconds));   \
        return lg_check_run(suite);                                                                \
    }

/* The main() of a suite of one test case with no fixture: LG_CHECK_MAIN_TCASE("suite", "case",
 * timeout_seconds, t1, t2, ...) */
#define LG_CHECK_MAIN_TCASE(suite_name, case_name, seconds, ...)                                   \
    int main(void)                                                                                 \
    {                                                                                              \
        Suite *suite = suite_create(suite_name);                                                   \
        LG_TCASE_TIMEOUT(suite, (case_name), (seconds), NULL, NULL, __VA_ARGS__);                  \
        return lg_check_run(suite);                                                                \
    }

#endif
