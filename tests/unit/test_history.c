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

/* A history just initialised with these bounds. */
static struct lg_history new_history(uint32_t max_events, uint64_t max_bytes, uint64_t max_age_ms)
{
    struct lg_history h;
    lg_history_init(&h, (struct lg_history_bounds){max_events, max_bytes, max_age_ms});
    return h;
}

static void append_ok(struct lg_history *h, uint64_t seq, uint64_t at_ns, size_t data_len,
                      uint64_t now_ns)
{
    ck_assert_int_eq(lg_history_append(h, event_at(seq, at_ns, data_len), now_ns), 0);
}

/* append_ok for each seq from..to, all published at at_ns with data_len bytes. */
static void append_seqs(struct lg_history *h, uint64_t from, uint64_t to, uint64_t at_ns,
                        size_t data_len, uint64_t now_ns)
{
    for (uint64_t seq = from; seq <= to; seq++)
        append_ok(h, seq, at_ns, data_len, now_ns);
}

/* Assert the history holds exactly the seqs first..last, oldest first, and that its byte
 * count is the sum of their sizes; `what` names the case in a failure. */
static void assert_holds(const struct lg_history *h, uint64_t first, uint64_t last,
                         const char *what)
{
    ck_assert_msg(h->count == last - first + 1, "%s: %u events, want %llu..%llu", what, h->count,
                  (unsigned long long)first, (unsigned long long)last);
    ck_assert_msg(lg_history_first_seq(h) == first, "%s: first seq %llu, want %llu", what,
                  (unsigned long long)lg_history_first_seq(h), (unsigned long long)first);
    uint64_t bytes = 0;
    for (uint32_t i = 0; i < h->count; i++) {
        struct lg_event *ev = lg_history_at(h, i);
        ck_assert_msg(ev != NULL, "%s: no event at %u", what, i);
        ck_assert_msg(ev->seq == first + i, "%s: seq %llu at %u, want %llu", what,
                      (unsigned long long)ev->seq, i, (unsigned long long)(first + i));
        bytes += ev->size;
    }
    ck_assert_msg(h->bytes == bytes, "%s: %llu bytes, want %llu", what,
                  (unsigned long long)h->bytes, (unsigned long long)bytes);
    ck_assert_msg(lg_history_at(h, h->count) == NULL, "%s: an event past the last", what);
}

/* assert_holds, then release h: how a test that checks the whole history ends. */
static void assert_holds_then_release(struct lg_history *h, uint64_t first, uint64_t last,
                                      const char *what)
{
    assert_holds(h, first, last, what);
    lg_history_release(h);
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
    struct lg_history h = new_history(1000000, UINT64_MAX, 0);
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
    struct lg_history h = new_history(1000, UINT64_MAX, 0);
    append_ok(&h, 1, 0, 1, 0);
    ck_assert_uint_eq(h.capacity, 16); /* not max_events up front */
    uint64_t seq = 2;
    const uint32_t steps[][2] = {{16, 16},    {17, 32},     {33, 64},    {257, 512},
                                 {513, 1000}, {1000, 1000}, {1500, 1000}};
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        while (seq <= steps[i][0])
            append_ok(&h, seq++, 0, 1, 0);
        ck_assert_msg(h.capacity == steps[i][1], "after %u events capacity %u, want %u",
                      steps[i][0], h.capacity, steps[i][1]);
    }
    assert_holds_then_release(&h, 501, 1500, __func__);
}
END_TEST

START_TEST(history_keeps_order_across_wrap_around)
{
    struct lg_history h = new_history(20, UINT64_MAX, 0);
    append_seqs(&h, 1, 100, 0, 1, 0);
    ck_assert_uint_eq(h.capacity, 20);
    assert_holds_then_release(&h, 81, 100, __func__);
}
END_TEST

START_TEST(history_grow_unwraps_a_wrapped_ring)
{
    struct lg_history h = new_history(40, UINT64_MAX, 1);
    for (uint64_t seq = 1; seq <= 16; seq++)
        append_ok(&h, seq, seq * MS, 1, 0);
    /* Expire seqs 1..5 so the oldest is no longer at slot 0, then wrap the tail around. */
    ck_assert_uint_eq(lg_history_expire(&h, 6 * MS + 1), 5);
    append_seqs(&h, 17, 21, 100 * MS, 1, 6 * MS);
    ck_assert_uint_eq(h.capacity, 16);
    ck_assert_uint_eq(h.count, 16);
    append_ok(&h, 22, 100 * MS, 1, 6 * MS); /* full and wrapped: grows */
    ck_assert_uint_eq(h.capacity, 32);
    ck_assert_uint_eq(h.head, 0);
    assert_holds_then_release(&h, 6, 22, __func__);
}
END_TEST

START_TEST(history_at_out_of_range_is_null)
{
    struct lg_history h = new_history(4, UINT64_MAX, 0);
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
    struct lg_history h = new_history(100, UINT64_MAX, 0);
    append_seqs(&h, 1, 40, 0, 10, 0);
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

/*
 * An eviction case is a script run against one history: each step appends an event (or
 * expires), then the history holds exactly first..last (first 0: it is empty). The history's
 * max_bytes is max_bytes_events events of max_bytes_len data bytes (0: no bytes bound).
 */
enum step_op { STEP_END, STEP_APPEND, STEP_EXPIRE };
enum bytes_check { BYTES_SUM, BYTES_AT_MAX, BYTES_OVER_MAX }; /* beyond assert_holds' sum */

struct step {
    enum step_op op;
    uint64_t first, last;
    uint64_t seq, at_ns; /* append: the event's seq and publication time */
    size_t data_len;
    uint64_t now_ns;
    enum bytes_check bytes;
    uint64_t expired; /* expire: how many it evicts */
};

/* The members of a step, each written in braces: {APPEND(...)}, {EXPIRE(...)} */
#define APPEND(seq, at, len, now, first, last) STEP_APPEND, first, last, seq, at, len, now
#define APPEND_BYTES(seq, at, len, now, first, last, bytes)                                        \
    STEP_APPEND, first, last, seq, at, len, now, bytes
#define EXPIRE(now, expired, first, last) STEP_EXPIRE, first, last, 0, 0, 0, now, 0, expired

#define NOT_CHECKED INT64_MIN

struct eviction_case {
    const char *name;
    uint32_t max_events;
    uint64_t max_bytes_events;
    size_t max_bytes_len;
    uint64_t max_age_ms;
    int64_t evicted; /* history_evicted grows by exactly this (NOT_CHECKED: any) */
    int64_t live;    /* and the live events by this while the history is held */
    struct step steps[12];
};

static const struct eviction_case eviction_cases[] = {
    {.name = "count_bound_evicts_oldest_first",
     .max_events = 3,
     .evicted = 2,
     .live = 3, /* evicted events were freed */
     .steps = {{APPEND(1, 0, 1, 0, 1, 1)},
               {APPEND(2, 0, 1, 0, 1, 2)},
               {APPEND(3, 0, 1, 0, 1, 3)},
               {APPEND(4, 0, 1, 0, 2, 4)},
               {APPEND(5, 0, 1, 0, 3, 5)}}},
    {.name = "bytes_bound_evicts_oldest_first",
     .max_events = 100,
     .max_bytes_events = 2, /* exactly two fit */
     .max_bytes_len = 100,
     .evicted = 2,
     .live = NOT_CHECKED,
     .steps = {{APPEND(1, 0, 100, 0, 1, 1)},
               {APPEND_BYTES(2, 0, 100, 0, 1, 2, BYTES_AT_MAX)},
               {APPEND(3, 0, 100, 0, 2, 3)},
               {APPEND(4, 0, 100, 0, 3, 4)}}},
    /* Alone above max_bytes, seq 4 makes everything older go, and stays. */
    {.name = "bytes_bound_keeps_an_event_larger_than_max_bytes",
     .max_events = 100,
     .max_bytes_events = 3,
     .max_bytes_len = 10,
     .evicted = NOT_CHECKED,
     .live = NOT_CHECKED,
     .steps = {{APPEND(1, 0, 10, 0, 1, 1)},
               {APPEND(2, 0, 10, 0, 1, 2)},
               {APPEND(3, 0, 10, 0, 1, 3)},
               {APPEND_BYTES(4, 0, 1000, 0, 4, 4, BYTES_OVER_MAX)},
               {APPEND(5, 0, 1000, 0, 5, 5)}}},
    /* At 2000 ms: seq 1 is 2000 ms old and seq 2 1500 ms, both older than 1000 ms; seq 3 is
     * exactly 1000 ms old, which is not older than the bound; 1 ns later it is. */
    {.name = "age_bound_on_append_evicts_oldest_first",
     .max_events = 100,
     .max_age_ms = 1000,
     .evicted = NOT_CHECKED,
     .live = NOT_CHECKED,
     .steps = {{APPEND(1, 0, 1, 0, 1, 1)},
               {APPEND(2, 500 * MS, 1, 500 * MS, 1, 2)},
               {APPEND(3, 1000 * MS, 1, 1000 * MS, 1, 3)},
               {APPEND(4, 2000 * MS, 1, 2000 * MS, 3, 4)},
               {APPEND(5, 2000 * MS, 1, 2000 * MS + 1, 4, 5)}}},
    /* Already 10 s old when appended: still kept, until the next. */
    {.name = "age_bound_on_append_keeps_the_newest",
     .max_events = 100,
     .max_age_ms = 1000,
     .evicted = NOT_CHECKED,
     .live = NOT_CHECKED,
     .steps = {{APPEND(1, 0, 1, 10000 * MS, 1, 1)}, {APPEND(2, 1, 1, 10000 * MS, 2, 2)}}},
    /* Count alone: small events stay far below the bytes bound (up to seq 7). Count, then
     * bytes: seq 4 makes room for 8, and 5 + 6..8 (3 big) is still too many bytes. Bytes, then
     * age: 6..9 is too many bytes; then 7 (published at 700 ms) is older than 1000 ms at
     * 1750 ms, while 8 (800 ms) is not. */
    {.name = "bounds_combine_oldest_first",
     .max_events = 4,
     .max_bytes_events = 3,
     .max_bytes_len = 1000,
     .max_age_ms = 1000,
     .evicted = NOT_CHECKED,
     .live = NOT_CHECKED,
     .steps = {{APPEND(1, 100 * MS, 1, 100 * MS, 1, 1)},
               {APPEND(2, 200 * MS, 1, 200 * MS, 1, 2)},
               {APPEND(3, 300 * MS, 1, 300 * MS, 1, 3)},
               {APPEND(4, 400 * MS, 1, 400 * MS, 1, 4)},
               {APPEND(5, 500 * MS, 1, 500 * MS, 2, 5)},
               {APPEND(6, 600 * MS, 1000, 600 * MS, 3, 6)},
               {APPEND(7, 700 * MS, 1000, 700 * MS, 4, 7)},
               {APPEND(8, 800 * MS, 1000, 800 * MS, 6, 8)},
               {APPEND(9, 1750 * MS, 1, 1750 * MS, 8, 9)}}},
    /* Expiring evicts by age only, even the newest, and leaves the history usable. */
    {.name = "expire_evicts_by_age_only_and_may_empty",
     .max_events = 10,
     .max_age_ms = 1000,
     .evicted = 3,
     .live = NOT_CHECKED,
     .steps = {{APPEND(1, 0, 1, 0, 1, 1)},
               {APPEND(2, 100 * MS, 1, 100 * MS, 1, 2)},
               {APPEND(3, 200 * MS, 1, 200 * MS, 1, 3)},
               {EXPIRE(1000 * MS, 0, 1, 3)},
               {EXPIRE(1150 * MS, 2, 3, 3)},
               {EXPIRE(5000 * MS, 1, 0, 0)},
               {APPEND(4, 5000 * MS, 1, 5000 * MS, 4, 4)}}},
    {.name = "expire_without_age_bound_keeps_everything",
     .max_events = 10,
     .evicted = NOT_CHECKED,
     .live = NOT_CHECKED,
     .steps = {{APPEND(1, 0, 1, 0, 1, 1)}, {EXPIRE(UINT64_MAX, 0, 1, 1)}}},
    {.name = "zero_max_events_keeps_nothing",
     .max_events = 0,
     .evicted = 1,
     .live = 0,
     .steps = {{APPEND(1, 0, 1, 0, 0, 0)}}},
};

START_TEST(eviction_case)
{
    const struct eviction_case *c = &eviction_cases[_i];
    /* The byte sums of the rows rely on two one-byte events fitting in one 1000-byte one. */
    ck_assert_msg(2 * event_size(1) <= event_size(1000), "%s: event sizes", c->name);
    int64_t live = lg_account_events();
    uint64_t evicted = LG_STAT_GET(history_evicted);
    uint64_t max_bytes = c->max_bytes_events ? c->max_bytes_events * event_size(c->max_bytes_len)
                                             : UINT64_MAX;
    struct lg_history h = new_history(c->max_events, max_bytes, c->max_age_ms);
    for (size_t i = 0; c->steps[i].op != STEP_END; i++) {
        const struct step *st = &c->steps[i];
        if (st->op == STEP_APPEND) {
            ck_assert_msg(lg_history_append(&h, event_at(st->seq, st->at_ns, st->data_len),
                                            st->now_ns) == 0,
                          "%s: step %zu: append refused", c->name, i);
        } else {
            uint64_t n = lg_history_expire(&h, st->now_ns);
            ck_assert_msg(n == st->expired, "%s: step %zu: expired %llu, want %llu", c->name, i,
                          (unsigned long long)n, (unsigned long long)st->expired);
        }
        if (st->first == 0) {
            ck_assert_msg(h.count == 0 && h.bytes == 0 && lg_history_first_seq(&h) == 0,
                          "%s: step %zu: not empty (%u events, %llu bytes)", c->name, i, h.count,
                          (unsigned long long)h.bytes);
        } else {
            assert_holds(&h, st->first, st->last, c->name);
        }
        if (st->bytes == BYTES_AT_MAX)
            ck_assert_msg(h.bytes == max_bytes, "%s: step %zu: %llu bytes, want %llu", c->name, i,
                          (unsigned long long)h.bytes, (unsigned long long)max_bytes);
        if (st->bytes == BYTES_OVER_MAX)
            ck_assert_msg(h.bytes > max_bytes, "%s: step %zu: %llu bytes, want over %llu", c->name,
                          i, (unsigned long long)h.bytes, (unsigned long long)max_bytes);
    }
    if (c->evicted != NOT_CHECKED)
        ck_assert_msg(LG_STAT_GET(history_evicted) == evicted + (uint64_t)c->evicted,
                      "%s: evicted %llu, want %lld", c->name,
                      (unsigned long long)(LG_STAT_GET(history_evicted) - evicted),
                      (long long)c->evicted);
    if (c->live != NOT_CHECKED) /* evicted events were freed */
        ck_assert_msg(lg_account_events() == live + c->live, "%s: %lld live events, want %lld",
                      c->name, (long long)(lg_account_events() - live), (long long)c->live);
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
    tcase_add_loop_test(tc, eviction_case, 0,
                        (int)(sizeof eviction_cases / sizeof eviction_cases[0]));
    suite_add_tcase(s, tc);

    return s;
}

LG_CHECK_MAIN(history_suite)
