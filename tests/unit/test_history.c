/* test_history.c - the memory store's bounded history ring (history.h): storage, growth,
 * eviction by count, bytes and age. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "accounting.h"
#include "event.h"
#include "history.h"
#include "stats.h"

#include "check_main.h"

#define MS 1000000ull /* nanoseconds per millisecond */

/* An event of topic "t" with `data_len` bytes of data, published at mono time `at_ns`. Events
 * with the same data_len and the same number of seq digits have the same size. */
static struct lg_event *event_at(uint64_t seq, uint64_t at_ns, size_t data_len)
{
    char data[4096];
    ck_assert_uint_lt(data_len, sizeof data);
    memset(data, 'd', data_len);
    struct lg_event_fields f = {
        .topic_name = "t",
        .topic_name_len = 1,
        .epoch = 1,
        .seq = seq,
        .data = data,
        .data_len = data_len,
        .published_mono_ns = at_ns,
    };
    struct lg_event *ev = lg_event_create(&f);
    ck_assert_ptr_nonnull(ev);
    return ev;
}

static struct lg_history_bounds bounds(uint32_t max_events, uint64_t max_bytes,
                                       uint64_t max_age_ms)
{
    return (struct lg_history_bounds){max_events, max_bytes, max_age_ms};
}

static void append_ok(struct lg_history *h, uint64_t seq, uint64_t at_ns, size_t data_len,
                      uint64_t now_ns)
{
    ck_assert_int_eq(lg_history_append(h, event_at(seq, at_ns, data_len), now_ns), 0);
}

/* Assert the history holds exactly the seqs first..last, oldest first, and that its byte
 * count is the sum of their sizes. */
static void assert_holds(const struct lg_history *h, uint64_t first, uint64_t last)
{
    ck_assert_uint_eq(h->count, last - first + 1);
    ck_assert_uint_eq(lg_history_first_seq(h), first);
    uint64_t bytes = 0;
    for (uint32_t i = 0; i < h->count; i++) {
        struct lg_event *ev = lg_history_at(h, i);
        ck_assert_ptr_nonnull(ev);
        ck_assert_uint_eq(ev->seq, first + i);
        bytes += ev->size;
    }
    ck_assert_uint_eq(h->bytes, bytes);
    ck_assert_ptr_null(lg_history_at(h, h->count));
}

/* The size of one test event of data_len bytes with a one-digit seq. */
static uint64_t event_size(size_t data_len)
{
    struct lg_event *ev = event_at(1, 0, data_len);
    uint64_t size = ev->size;
    lg_event_unref(&ev);
    return size;
}

/* ---- History: storage --------------------------------------------------------------------- */

START_TEST(history_starts_empty_without_slots)
{
    struct lg_history h;
    lg_history_init(&h, bounds(1000000, UINT64_MAX, 0));
    ck_assert_uint_eq(h.count, 0);
    ck_assert_uint_eq(h.capacity, 0);
    ck_assert_ptr_null(h.ring);
    ck_assert_uint_eq(h.bytes, 0);
    ck_assert_uint_eq(lg_history_first_seq(&h), 0);
    ck_assert_ptr_null(lg_history_at(&h, 0));
    ck_assert_uint_eq(lg_history_expire(&h, UINT64_MAX), 0);
    lg_history_release(&h);
}
END_TEST

START_TEST(history_capacity_doubles_from_16_up_to_max_events)
{
    struct lg_history h;
    lg_history_init(&h, bounds(1000, UINT64_MAX, 0));
    append_ok(&h, 1, 0, 1, 0);
    ck_assert_uint_eq(h.capacity, 16); /* not max_events up front */
    uint64_t seq = 2;
    const uint32_t steps[][2] = {{16, 16}, {17, 32}, {33, 64}, {257, 512}, {513, 1000},
                                 {1000, 1000}, {1500, 1000}};
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        while (seq <= steps[i][0])
            append_ok(&h, seq++, 0, 1, 0);
        ck_assert_msg(h.capacity == steps[i][1], "after %u events capacity %u, want %u",
                      steps[i][0], h.capacity, steps[i][1]);
    }
    assert_holds(&h, 501, 1500);
    lg_history_release(&h);
}
END_TEST

START_TEST(history_keeps_order_across_wrap_around)
{
    struct lg_history h;
    lg_history_init(&h, bounds(20, UINT64_MAX, 0));
    for (uint64_t seq = 1; seq <= 100; seq++)
        append_ok(&h, seq, 0, 1, 0);
    ck_assert_uint_eq(h.capacity, 20);
    assert_holds(&h, 81, 100);
    lg_history_release(&h);
}
END_TEST

START_TEST(history_grow_unwraps_a_wrapped_ring)
{
    struct lg_history h;
    lg_history_init(&h, bounds(40, UINT64_MAX, 1));
    for (uint64_t seq = 1; seq <= 16; seq++)
        append_ok(&h, seq, seq * MS, 1, 0);
    /* Expire seqs 1..5 so the oldest is no longer at slot 0, then wrap the tail around. */
    ck_assert_uint_eq(lg_history_expire(&h, 6 * MS + 1), 5);
    for (uint64_t seq = 17; seq <= 21; seq++)
        append_ok(&h, seq, 100 * MS, 1, 6 * MS);
    ck_assert_uint_eq(h.capacity, 16);
    ck_assert_uint_eq(h.count, 16);
    append_ok(&h, 22, 100 * MS, 1, 6 * MS); /* full and wrapped: grows */
    ck_assert_uint_eq(h.capacity, 32);
    ck_assert_uint_eq(h.head, 0);
    assert_holds(&h, 6, 22);
    lg_history_release(&h);
}
END_TEST

START_TEST(history_at_out_of_range_is_null)
{
    struct lg_history h;
    lg_history_init(&h, bounds(4, UINT64_MAX, 0));
    append_ok(&h, 1, 0, 1, 0);
    ck_assert_ptr_nonnull(lg_history_at(&h, 0));
    ck_assert_ptr_null(lg_history_at(&h, 1));
    ck_assert_ptr_null(lg_history_at(&h, UINT32_MAX));
    lg_history_release(&h);
}
END_TEST

START_TEST(history_release_unrefs_every_event)
{
    int64_t live = lg_account_events();
    int64_t bytes = lg_account_event_bytes();
    uint64_t evicted = LG_STAT_GET(history_evicted);
    struct lg_history h;
    lg_history_init(&h, bounds(100, UINT64_MAX, 0));
    for (uint64_t seq = 1; seq <= 40; seq++)
        append_ok(&h, seq, 0, 10, 0);
    ck_assert_int_eq(lg_account_events(), live + 40);
    lg_history_release(&h);
    ck_assert_int_eq(lg_account_events(), live);
    ck_assert_int_eq(lg_account_event_bytes(), bytes);
    ck_assert_uint_eq(LG_STAT_GET(history_evicted), evicted); /* releasing is not evicting */
    ck_assert_ptr_null(h.ring);
    ck_assert_uint_eq(h.count, 0);
    ck_assert_uint_eq(h.bounds.max_events, 100);
}
END_TEST

/* ---- History: eviction -------------------------------------------------------------------- */

START_TEST(count_bound_evicts_oldest_first)
{
    int64_t live = lg_account_events();
    uint64_t evicted = LG_STAT_GET(history_evicted);
    struct lg_history h;
    lg_history_init(&h, bounds(3, UINT64_MAX, 0));
    for (uint64_t seq = 1; seq <= 3; seq++)
        append_ok(&h, seq, 0, 1, 0);
    assert_holds(&h, 1, 3);
    append_ok(&h, 4, 0, 1, 0);
    assert_holds(&h, 2, 4);
    append_ok(&h, 5, 0, 1, 0);
    assert_holds(&h, 3, 5);
    ck_assert_uint_eq(LG_STAT_GET(history_evicted), evicted + 2);
    ck_assert_int_eq(lg_account_events(), live + 3); /* evicted events were freed */
    lg_history_release(&h);
}
END_TEST

START_TEST(bytes_bound_evicts_oldest_first)
{
    uint64_t size = event_size(100);
    uint64_t evicted = LG_STAT_GET(history_evicted);
    struct lg_history h;
    lg_history_init(&h, bounds(100, 2 * size, 0)); /* exactly two events fit */
    append_ok(&h, 1, 0, 100, 0);
    append_ok(&h, 2, 0, 100, 0);
    assert_holds(&h, 1, 2);
    ck_assert_uint_eq(h.bytes, 2 * size);
    append_ok(&h, 3, 0, 100, 0);
    assert_holds(&h, 2, 3);
    append_ok(&h, 4, 0, 100, 0);
    assert_holds(&h, 3, 4);
    ck_assert_uint_eq(LG_STAT_GET(history_evicted), evicted + 2);
    lg_history_release(&h);
}
END_TEST

START_TEST(bytes_bound_keeps_an_event_larger_than_max_bytes)
{
    uint64_t small = event_size(10);
    struct lg_history h;
    lg_history_init(&h, bounds(100, 3 * small, 0));
    for (uint64_t seq = 1; seq <= 3; seq++)
        append_ok(&h, seq, 0, 10, 0);
    assert_holds(&h, 1, 3);
    append_ok(&h, 4, 0, 1000, 0); /* alone above max_bytes: everything older goes, it stays */
    assert_holds(&h, 4, 4);
    ck_assert_uint_gt(h.bytes, h.bounds.max_bytes);
    append_ok(&h, 5, 0, 1000, 0);
    assert_holds(&h, 5, 5);
    lg_history_release(&h);
}
END_TEST

START_TEST(age_bound_on_append_evicts_oldest_first)
{
    struct lg_history h;
    lg_history_init(&h, bounds(100, UINT64_MAX, 1000));
    append_ok(&h, 1, 0, 1, 0);
    append_ok(&h, 2, 500 * MS, 1, 500 * MS);
    append_ok(&h, 3, 1000 * MS, 1, 1000 * MS);
    assert_holds(&h, 1, 3);
    /* At 2000 ms: seq 1 is 2000 ms old and seq 2 1500 ms, both older than 1000 ms; seq 3 is
     * exactly 1000 ms old, which is not older than the bound. */
    append_ok(&h, 4, 2000 * MS, 1, 2000 * MS);
    assert_holds(&h, 3, 4);
    append_ok(&h, 5, 2000 * MS, 1, 2000 * MS + 1); /* now seq 3 is 1 ns too old */
    assert_holds(&h, 4, 5);
    lg_history_release(&h);
}
END_TEST

START_TEST(age_bound_on_append_keeps_the_newest)
{
    struct lg_history h;
    lg_history_init(&h, bounds(100, UINT64_MAX, 1000));
    append_ok(&h, 1, 0, 1, 10000 * MS); /* already 10 s old when appended: still kept */
    assert_holds(&h, 1, 1);
    append_ok(&h, 2, 1, 1, 10000 * MS);
    assert_holds(&h, 2, 2);
    lg_history_release(&h);
}
END_TEST

START_TEST(bounds_combine_oldest_first)
{
    uint64_t small = event_size(1), big = event_size(1000);
    ck_assert_uint_le(2 * small, big); /* the sums below rely on it */
    struct lg_history h;
    lg_history_init(&h, bounds(4, 3 * big, 1000));
    /* Count alone: small events stay far below the bytes bound. */
    for (uint64_t seq = 1; seq <= 5; seq++)
        append_ok(&h, seq, seq * 100 * MS, 1, seq * 100 * MS);
    assert_holds(&h, 2, 5);
    append_ok(&h, 6, 600 * MS, 1000, 600 * MS);
    append_ok(&h, 7, 700 * MS, 1000, 700 * MS);
    assert_holds(&h, 4, 7);
    /* Count, then bytes: seq 4 makes room, and 5 + 6..8 (3 big) is still too many bytes. */
    append_ok(&h, 8, 800 * MS, 1000, 800 * MS);
    assert_holds(&h, 6, 8);
    /* Bytes, then age: 6..9 is too many bytes; then 7 (published at 700 ms) is older than
     * 1000 ms at 1750 ms, while 8 (800 ms) is not. */
    append_ok(&h, 9, 1750 * MS, 1, 1750 * MS);
    assert_holds(&h, 8, 9);
    lg_history_release(&h);
}
END_TEST

START_TEST(expire_evicts_by_age_only_and_may_empty)
{
    uint64_t evicted = LG_STAT_GET(history_evicted);
    struct lg_history h;
    lg_history_init(&h, bounds(10, UINT64_MAX, 1000));
    append_ok(&h, 1, 0, 1, 0);
    append_ok(&h, 2, 100 * MS, 1, 100 * MS);
    append_ok(&h, 3, 200 * MS, 1, 200 * MS);
    ck_assert_uint_eq(lg_history_expire(&h, 1000 * MS), 0);
    ck_assert_uint_eq(lg_history_expire(&h, 1150 * MS), 2);
    assert_holds(&h, 3, 3);
    ck_assert_uint_eq(lg_history_expire(&h, 5000 * MS), 1); /* even the newest */
    ck_assert_uint_eq(h.count, 0);
    ck_assert_uint_eq(h.bytes, 0);
    ck_assert_uint_eq(lg_history_first_seq(&h), 0);
    ck_assert_uint_eq(LG_STAT_GET(history_evicted), evicted + 3);
    append_ok(&h, 4, 5000 * MS, 1, 5000 * MS); /* usable again */
    assert_holds(&h, 4, 4);
    lg_history_release(&h);
}
END_TEST

START_TEST(expire_without_age_bound_keeps_everything)
{
    struct lg_history h;
    lg_history_init(&h, bounds(10, UINT64_MAX, 0));
    append_ok(&h, 1, 0, 1, 0);
    ck_assert_uint_eq(lg_history_expire(&h, UINT64_MAX), 0);
    assert_holds(&h, 1, 1);
    lg_history_release(&h);
}
END_TEST

START_TEST(zero_max_events_keeps_nothing)
{
    int64_t live = lg_account_events();
    uint64_t evicted = LG_STAT_GET(history_evicted);
    struct lg_history h;
    lg_history_init(&h, bounds(0, UINT64_MAX, 0));
    append_ok(&h, 1, 0, 1, 0);
    ck_assert_uint_eq(h.count, 0);
    ck_assert_uint_eq(lg_history_first_seq(&h), 0);
    ck_assert_uint_eq(LG_STAT_GET(history_evicted), evicted + 1);
    ck_assert_int_eq(lg_account_events(), live);
    lg_history_release(&h);
}
END_TEST

static Suite *history_suite(void)
{
    Suite *s = suite_create("history");
    TCase *tc = tcase_create("history_storage");
    tcase_add_test(tc, history_starts_empty_without_slots);
    tcase_add_test(tc, history_capacity_doubles_from_16_up_to_max_events);
    tcase_add_test(tc, history_keeps_order_across_wrap_around);
    tcase_add_test(tc, history_grow_unwraps_a_wrapped_ring);
    tcase_add_test(tc, history_at_out_of_range_is_null);
    tcase_add_test(tc, history_release_unrefs_every_event);
    suite_add_tcase(s, tc);

    tc = tcase_create("history_eviction");
    tcase_add_test(tc, count_bound_evicts_oldest_first);
    tcase_add_test(tc, bytes_bound_evicts_oldest_first);
    tcase_add_test(tc, bytes_bound_keeps_an_event_larger_than_max_bytes);
    tcase_add_test(tc, age_bound_on_append_evicts_oldest_first);
    tcase_add_test(tc, age_bound_on_append_keeps_the_newest);
    tcase_add_test(tc, bounds_combine_oldest_first);
    tcase_add_test(tc, expire_evicts_by_age_only_and_may_empty);
    tcase_add_test(tc, expire_without_age_bound_keeps_everything);
    tcase_add_test(tc, zero_max_events_keeps_nothing);
    suite_add_tcase(s, tc);

    return s;
}

LG_CHECK_MAIN(history_suite)
