/*
 * test_store.c - the store contract (store.h), run against every store implementation in
 * `stores` below: positions, ids and epochs, paged reads after a position,
 * idempotency lookups, retention by count and age, eviction. A new store (Redis) joins the
 * table and must pass the same cases; what is the memory store's own (dense positions, one
 * epoch per process) is asserted only where the store says it holds. The Redis store runs
 * against a real redis-server this binary starts (tests/support/lg_redis.c), each test under
 * its own key prefix; its appends complete on its own thread, so the helpers wait for them.
 * Ages on the caller's monotonic clock are the memory store's alone (a remote store ages
 * events from their wall-clock publish time).
 */
#include <check.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "event.h"
#include "store.h"
#include "clock.h"
#include "lg_redis.h"
#include "store_memory.h"
#include "store_redis.h"

#include "check_main.h"

struct store_impl {
    const char *name;
    struct lg_store *(*create)(void);
    bool dense; /* positions are 1, 2, 3, ... */
};

static struct lg_redis redis; /* started by main(), before check forks the tests */

static struct lg_store *redis_store_create(void)
{
    char prefix[64];
    snprintf(prefix, sizeof prefix, "test-store-%d:", (int)getpid()); /* one process per test */
    struct lg_redis_options o = {.key_prefix = prefix,
                                 .connect_timeout_ms = 1000, .command_timeout_ms = 2000,
                                 .reconnect_min_ms = 10, .reconnect_max_ms = 100,
                                 .queue_max = 1024, .idempotency_window_ms = 60000};
    char err[256];
    const char *urls[] = {redis.url};
    struct lg_store *st = lg_redis_store_create(&o, urls, 1, NULL, err, sizeof err);
    ck_assert_msg(st != NULL, "redis store: %s", err);
    return st;
}

static const struct store_impl stores[] = {
    {"memory", lg_memory_store_create, true},
    {"redis", redis_store_create, true},
};

/* Wait (<= 5 s) for cond. */
#define WAIT_FOR(cond)                                                                             \
    do {                                                                                           \
        for (int w_ = 0; w_ < 500 && !(cond); w_++)                                                \
            nanosleep(&(struct timespec){.tv_nsec = 10 * 1000 * 1000}, NULL);                      \
    } while (0)

static const struct store_impl *impl;
static struct lg_store *store;

static void setup_store(int i)
{
    impl = &stores[i];
    store = impl->create();
    ck_assert_ptr_nonnull(store);
    ck_assert_str_eq(store->ops->name, impl->name);
}

static void teardown_store(void)
{
    store->ops->destroy(store);
    store = NULL;
}

static struct lg_stream *open_stream(const char *name, uint32_t max_events, uint64_t max_age_ms)
{
    struct lg_history_bounds b = {.max_events = max_events, .max_bytes = UINT64_MAX,
                                  .max_age_ms = max_age_ms};
    struct lg_stream *s = store->ops->stream_open(store, name, strlen(name), b, false);
    ck_assert_ptr_nonnull(s);
    WAIT_FOR(lg_stream_ready(s)); /* a remote stream loads first */
    ck_assert(lg_stream_ready(s));
    return s;
}

struct appended {
    _Atomic int calls;  /* written last, on the store's thread */
    enum lg_append_status status;
    uint64_t seq;
    char id[160];
};

static void on_appended(void *arg, enum lg_append_status status, struct lg_event *ev)
{
    struct appended *a = arg;
    a->status = status;
    if (ev) {
        a->seq = ev->seq;
        snprintf(a->id, sizeof a->id, "%s", ev->id);
    }
    atomic_fetch_add(&a->calls, 1); /* last: the test may reuse *a at once */
}

/* Append data (and an idempotency key, or NULL) published at mono_ns; returns its position. */
static uint64_t append_at(struct lg_stream *s, const char *data, const char *key, uint64_t mono_ns)
{
    struct lg_event_fields f = {
        .topic_name = "t",
        .topic_name_len = 1,
        .data = data,
        .data_len = strlen(data),
        .idempotency_key = key,
        .idempotency_key_len = key ? strlen(key) : 0,
        .published_mono_ns = mono_ns,
    };
    struct appended a = {0};
    lg_stream_append(s, &f, on_appended, &a);
    if (store->ops->remote)
        WAIT_FOR(atomic_load(&a.calls) > 0);
    ck_assert_int_eq(a.calls, 1); /* the memory store completes before append() returns */
    ck_assert_int_eq(a.status, LG_APPEND_OK);
    if (store->ops->remote)
        WAIT_FOR(lg_stream_newest(s) >= a.seq); /* the tail mirrors it */
    char want[160];
    snprintf(want, sizeof want, "t@%08" PRIx32 ":%" PRIu64, lg_stream_epoch(s), a.seq);
    ck_assert_str_eq(a.id, want);
    return a.seq;
}

static uint64_t append(struct lg_stream *s, const char *data, const char *key)
{
    return append_at(s, data, key, 1000);
}

/* The five events "a" to "e" appended to s, the first with key first_key (may be NULL); their
 * positions in pos. */
static const char *const abcde[] = {"a", "b", "c", "d", "e"};

static void append_abcde(struct lg_stream *s, const char *first_key, uint64_t pos[5])
{
    for (int i = 0; i < 5; i++)
        pos[i] = append(s, abcde[i], i == 0 ? first_key : NULL);
}

/* The page after `after` holds exactly these data strings, in order. */
static void expect_page(struct lg_stream *s, uint64_t after, size_t max, uint64_t max_bytes,
                        bool more, size_t n, const char *const *data)
{
    struct lg_store_page page;
    ck_assert_int_eq(lg_stream_read_after(s, after, max, max_bytes, &page), 0);
    ck_assert_uint_eq(page.count, n);
    ck_assert_int_eq(page.more, more);
    for (size_t i = 0; i < n; i++) {
        ck_assert_uint_eq(page.events[i]->data_len, strlen(data[i]));
        ck_assert_mem_eq(page.events[i]->data, data[i], strlen(data[i]));
        if (i > 0)
            ck_assert_uint_gt(page.events[i]->seq, page.events[i - 1]->seq);
    }
    lg_store_page_release(&page);
}

START_TEST(an_empty_stream)
{
    setup_store(_i);
    struct lg_stream *s = open_stream("t", 10, 0);
    ck_assert_uint_ne(lg_stream_epoch(s), 0);
    ck_assert_uint_eq(lg_stream_newest(s), 0);
    ck_assert_uint_eq(lg_stream_oldest(s), 1);
    ck_assert_ptr_null(lg_stream_find_key(s, "k", 1));
    ck_assert(!lg_stream_evict_oldest(s));
    ck_assert_uint_eq(lg_stream_expire(s, UINT64_MAX), 0);
    expect_page(s, 0, 10, UINT64_MAX, false, 0, NULL);
    lg_stream_close(s);
    teardown_store();
}
END_TEST

START_TEST(positions_increase_and_ids_name_them)
{
    setup_store(_i);
    struct lg_stream *s = open_stream("t", 10, 0);
    uint64_t a = append(s, "a", NULL), b = append(s, "b", NULL), c = append(s, "c", NULL);
    ck_assert_uint_gt(a, 0);
    ck_assert_uint_gt(b, a);
    ck_assert_uint_gt(c, b);
    if (impl->dense)
        ck_assert(a == 1 && b == 2 && c == 3);
    ck_assert_uint_eq(lg_stream_newest(s), c);
    ck_assert_uint_eq(lg_stream_oldest(s), a);
    /* two streams of one store: each its own positions */
    struct lg_stream *other = open_stream("u", 10, 0);
    ck_assert_uint_eq(lg_stream_newest(other), 0);
    lg_stream_close(other);
    lg_stream_close(s);
    teardown_store();
}
END_TEST

START_TEST(read_after_pages_by_count_and_bytes)
{
    setup_store(_i);
    struct lg_stream *s = open_stream("t", 10, 0);
    uint64_t pos[5];
    append_abcde(s, NULL, pos);
    expect_page(s, 0, 10, UINT64_MAX, false, 5, abcde);
    expect_page(s, pos[1], 10, UINT64_MAX, false, 3, abcde + 2);
    expect_page(s, pos[1], 2, UINT64_MAX, true, 2, abcde + 2);
    expect_page(s, pos[4], 10, UINT64_MAX, false, 0, NULL);
    /* the first event always comes, whatever its size; then max_bytes bounds the page */
    expect_page(s, 0, 10, 1, true, 1, abcde);
    struct lg_store_page page;
    ck_assert_int_eq(lg_stream_read_after(s, 0, 10, UINT64_MAX, &page), 0);
    uint64_t two = page.events[0]->size + page.events[1]->size;
    lg_store_page_release(&page);
    expect_page(s, 0, 10, two, true, 2, abcde);
    lg_stream_close(s);
    teardown_store();
}
END_TEST

START_TEST(retention_keeps_the_newest_max_events)
{
    setup_store(_i);
    struct lg_stream *s = open_stream("t", 3, 0);
    uint64_t pos[5];
    append_abcde(s, "first", pos);
    ck_assert_uint_eq(lg_stream_oldest(s), pos[2]);
    ck_assert_uint_eq(lg_stream_newest(s), pos[4]);
    ck_assert_ptr_null(lg_stream_find_key(s, "first", 5)); /* evicted with its event */
    expect_page(s, 0, 10, UINT64_MAX, false, 3, abcde + 2);
    ck_assert(lg_stream_evict_oldest(s));
    ck_assert_uint_eq(lg_stream_oldest(s), pos[3]);
    lg_stream_close(s);
    teardown_store();
}
END_TEST

START_TEST(idempotency_keys_find_retained_events)
{
    setup_store(_i);
    struct lg_stream *s = open_stream("t", 100, 0);
    char key[32];
    for (int i = 0; i < 50; i++) { /* past the index's first growth */
        snprintf(key, sizeof key, "k%d", i);
        append(s, "x", key);
    }
    for (int i = 0; i < 50; i++) {
        snprintf(key, sizeof key, "k%d", i);
        struct lg_event *ev = lg_stream_find_key(s, key, strlen(key));
        ck_assert_ptr_nonnull(ev);
        ck_assert_str_eq(ev->idempotency_key, key);
    }
    ck_assert_ptr_null(lg_stream_find_key(s, "k5", 1));  /* "k": a prefix is no match */
    ck_assert_ptr_null(lg_stream_find_key(s, "k50", 3));
    ck_assert(lg_stream_evict_oldest(s));
    ck_assert_ptr_null(lg_stream_find_key(s, "k0", 2));
    ck_assert_ptr_nonnull(lg_stream_find_key(s, "k1", 2));
    lg_stream_close(s);
    teardown_store();
}
END_TEST

START_TEST(expire_drops_what_is_older_than_max_age)
{
    setup_store(_i);
    struct lg_stream *s = open_stream("t", 10, 100); /* 100 ms */
    uint64_t ms = 1000000;
    append_at(s, "old", "ko", 1 * ms);
    uint64_t young = append_at(s, "young", NULL, 90 * ms); /* old is 89 ms old: kept */
    ck_assert_uint_eq(lg_stream_expire(s, 160 * ms), 1);
    ck_assert_uint_eq(lg_stream_oldest(s), young);
    ck_assert_ptr_null(lg_stream_find_key(s, "ko", 2));
    /* the newest goes too once it is old: the stream still knows its newest position */
    ck_assert_uint_eq(lg_stream_expire(s, 400 * ms), 1);
    ck_assert_uint_eq(lg_stream_newest(s), young);
    ck_assert_uint_eq(lg_stream_oldest(s), young + 1);
    lg_stream_close(s);
    teardown_store();
}
END_TEST

/* The Redis store ages an event from its wall-clock publish time (every node agrees on it). */
START_TEST(redis_ages_events_from_their_publish_time)
{
    setup_store(_i);
    struct lg_stream *s = open_stream("t", 10, 300); /* 300 ms */
    struct lg_event_fields f = {.topic_name = "t", .topic_name_len = 1, .data = "old",
                                .data_len = 3, .published_unix_ms = lg_unix_ms() - 1000};
    struct appended a = {0};
    lg_stream_append(s, &f, on_appended, &a);
    WAIT_FOR(atomic_load(&a.calls) > 0 && lg_stream_newest(s) >= a.seq);
    uint64_t old = a.seq;
    ck_assert_uint_eq(lg_stream_expire(s, lg_mono_ns()), 1); /* published a second ago */
    ck_assert_uint_eq(lg_stream_oldest(s), old + 1);
    f.data = "young";
    f.data_len = 5;
    f.published_unix_ms = lg_unix_ms();
    struct appended b = {0};
    lg_stream_append(s, &f, on_appended, &b);
    WAIT_FOR(atomic_load(&b.calls) > 0 && lg_stream_newest(s) >= b.seq);
    ck_assert_uint_gt(b.seq, old);
    ck_assert_uint_eq(lg_stream_expire(s, lg_mono_ns()), 0);
    ck_assert_uint_eq(lg_stream_oldest(s), b.seq);
    lg_stream_close(s);
    teardown_store();
}
END_TEST

static Suite *store_suite(void)
{
    Suite *s = suite_create("store");
    TCase *tc = tcase_create("contract");
    int n = (int)(sizeof stores / sizeof stores[0]);
    tcase_add_loop_test(tc, an_empty_stream, 0, n);
    tcase_add_loop_test(tc, positions_increase_and_ids_name_them, 0, n);
    tcase_add_loop_test(tc, read_after_pages_by_count_and_bytes, 0, n);
    tcase_add_loop_test(tc, retention_keeps_the_newest_max_events, 0, n);
    tcase_add_loop_test(tc, idempotency_keys_find_retained_events, 0, n);
    tcase_add_loop_test(tc, expire_drops_what_is_older_than_max_age, 0, 1); /* memory */
    tcase_add_loop_test(tc, redis_ages_events_from_their_publish_time, 1, 2);
    tcase_set_timeout(tc, 30);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    if (lg_redis_start(&redis, false) != 0)
        return EXIT_FAILURE;
    int rc = lg_check_run(store_suite());
    lg_redis_stop(&redis);
    return rc;
}
