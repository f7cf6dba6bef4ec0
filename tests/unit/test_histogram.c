/*
 * test_histogram.c - the latency histogram (histogram.h): each observation lands in the first
 * bucket whose bound it does not pass (bounds inclusive, as Prometheus' `le`), past the last
 * bound in +Inf; sums and counts add up, and reading two histograms into one snapshot merges
 * them (what a scrape does with the workers' slots).
 */
#include <check.h>

#include "histogram.h"

#include "check_main.h"

START_TEST(test_bucket_bounds_are_inclusive)
{
    static struct lg_histogram h;
    lg_histogram_observe(&h, 0);                          /* bucket 0 (100 us) */
    lg_histogram_observe(&h, 100000);                     /* exactly 100 us: bucket 0 */
    lg_histogram_observe(&h, 100001);                     /* bucket 1 (250 us) */
    lg_histogram_observe(&h, 1000000000ull);              /* exactly 1 s: bucket 12 */
    lg_histogram_observe(&h, 10000000000ull);             /* exactly 10 s: the last bound */
    lg_histogram_observe(&h, 10000000001ull);             /* +Inf */
    struct lg_histogram_snapshot s = {0};
    lg_histogram_read(&h, &s);
    ck_assert_uint_eq(s.buckets[0], 2);
    ck_assert_uint_eq(s.buckets[1], 1);
    ck_assert_uint_eq(lg_histogram_bounds_ns[12], 1000000000ull);
    ck_assert_uint_eq(s.buckets[12], 1);
    ck_assert_uint_eq(s.buckets[LG_HISTOGRAM_BUCKETS - 1], 1);
    ck_assert_uint_eq(s.buckets[LG_HISTOGRAM_BUCKETS], 1);
    ck_assert_uint_eq(lg_histogram_snapshot_count(&s), 6);
    ck_assert_uint_eq(s.sum_ns, 100000ull + 100001ull + 1000000000ull + 10000000000ull +
                                    10000000001ull);
}
END_TEST

START_TEST(test_reading_merges)
{
    static struct lg_histogram a, b;
    for (int i = 0; i < 7; i++)
        lg_histogram_observe(&a, 3000000); /* 3 ms: bucket 5 (5 ms) */
    for (int i = 0; i < 5; i++)
        lg_histogram_observe(&b, 3000000);
    lg_histogram_observe(&b, 60000000);    /* 60 ms: bucket 9 (100 ms) */
    struct lg_histogram_snapshot s = {0};
    lg_histogram_read(&a, &s);
    lg_histogram_read(&b, &s);
    ck_assert_uint_eq(s.buckets[5], 12);
    ck_assert_uint_eq(s.buckets[9], 1);
    ck_assert_uint_eq(lg_histogram_snapshot_count(&s), 13);
    ck_assert_uint_eq(s.sum_ns, 12ull * 3000000 + 60000000);
}
END_TEST

static Suite *histogram_suite(void)
{
    Suite *s = suite_create("histogram");
    LG_TCASE(s, "histogram", NULL, NULL, test_bucket_bounds_are_inclusive, test_reading_merges);
    return s;
}

LG_CHECK_MAIN(histogram_suite)
