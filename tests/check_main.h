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

#define LG_CHECK_MAIN(suite_fn)                                                                    \
    int main(void) { return lg_check_run(suite_fn()); }

#endif
