#include <check.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "accounting.h"
#include "event.h"
#include "stats.h"
#include "store_memory.h"
#include "topic.h"

#include "check_main.h"

#define BAD_CHAR "topic name contains a character outside A-Z a-z 0-9 _ - . / : ~ "

/* ---- Topic names -------------------------------------------------------------------------- */

START_TEST(name_accepts_the_grammar)
{
    const char *good[] = {"a", "demo", "AZaz09_-./:~", "prices/eur:usd", "a.b-c_d~e", "$sys/stats",
                          "$"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        ck_assert_msg(lg_topic_name_problem(good[i], strlen(good[i])) == NULL, "refused %s",
                      good[i]);
    char longest[LG_TOPIC_NAME_MAX];
    memset(longest, 'x', sizeof longest);
    ck_assert_ptr_null(lg_topic_name_problem(longest, sizeof longest));
}
END_TEST

START_TEST(name_must_not_be_empty)
{
    ck_assert_str_eq(lg_topic_name_problem("", 0), "topic name is empty");
}
END_TEST

START_TEST(name_must_not_exceed_the_maximum)
{
    char name[LG_TOPIC_NAME_MAX + 1];
    memset(name, 'x', sizeof name);
    ck_assert_str_eq(lg_topic_name_problem(name, sizeof name),
                     "topic name is longer than 128 bytes");
}
END_TEST

START_TEST(name_refuses_bytes_outside_the_grammar)
{
    ck_assert_str_eq(lg_topic_name_problem("ab cd", 5), BAD_CHAR "(at byte 3)");
    ck_assert_str_eq(lg_topic_name_problem("a@b", 3), BAD_CHAR "(at byte 2)");
    ck_assert_str_eq(lg_topic_name_problem("a,b", 3), BAD_CHAR "(at byte 2)");
    ck_assert_str_eq(lg_topic_name_problem("*", 1), BAD_CHAR "(at byte 1)");
    ck_assert_str_eq(lg_topic_name_problem("ab?", 3), BAD_CHAR "(at byte 3)");
    ck_assert_str_eq(lg_topic_name_problem("a%20", 4), BAD_CHAR "(at byte 2)");
    ck_assert_str_eq(lg_topic_name_problem("caf\xc3\xa9", 5), BAD_CHAR "(at byte 4)");
    ck_assert_str_eq(lg_topic_name_problem("a\0b", 3), BAD_CHAR "(at byte 2)");
    ck_assert_str_eq(lg_topic_name_problem("a\n", 2), BAD_CHAR "(at byte 2)");
}
END_TEST

START_TEST(name_allows_dollar_only_first)
{
    ck_assert_str_eq(lg_topic_name_problem("a$b", 3),
                     "topic name has '$' after its first byte (at byte 2)");
    ck_assert_str_eq(lg_topic_name_problem("$$", 2),
                     "topic name has '$' after its first byte (at byte 2)");
}
END_TEST

START_TEST(name_checks_only_len_bytes)
{
    ck_assert_ptr_null(lg_topic_name_problem("demo bad", 4));
}
END_TEST

/* lg_topic_name_byte_ok() is exactly the set its message lists, for all 256 byte values, and
 * a one-byte name is valid exactly when its byte is ('$' aside, allowed first). */
START_TEST(name_byte_ok_is_the_listed_set)
{
    static const char listed[] = "_-./:~";
    for (unsigned c = 0; c < 256; c++) {
        bool expect = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                      (c != 0 && memchr(listed, (int)c, sizeof listed - 1) != NULL);
        ck_assert_msg(lg_topic_name_byte_ok((unsigned char)c) == expect, "byte 0x%02x", c);
        char name[1] = {(char)c};
        if (c != '$')
            ck_assert_msg((lg_topic_name_problem(name, 1) == NULL) == expect, "name 0x%02x", c);
    }
    ck_assert_str_eq(LG_TOPIC_NAME_CHARS, "A-Z a-z 0-9 _ - . / : ~");
}
END_TEST

static void *problem_on_another_thread(void *arg)
{
    (void)arg;
    const char *p = lg_topic_name_problem("abc de", 6);
    return strcmp(p, BAD_CHAR "(at byte 4)") == 0 ? (void *)p : NULL;
}

START_TEST(name_message_is_per_thread)
{
    const char *mine = lg_topic_name_problem("a b", 3);
    pthread_t thread;
    void *theirs;
    ck_assert_int_eq(pthread_create(&thread, NULL, problem_on_another_thread, NULL), 0);
    pthread_join(thread, &theirs);
    ck_assert_ptr_nonnull(theirs);
    ck_assert_ptr_ne(theirs, mine);
    ck_assert_str_eq(mine, BAD_CHAR "(at byte 2)");
}
END_TEST

/* ---- Topic lifecycle ---------------------------------------------------------------------- */

static struct lg_history_bounds bounds(uint32_t max_events, uint64_t max_bytes,
                                       uint64_t max_age_ms)
{
    return (struct lg_history_bounds){max_events, max_bytes, max_age_ms};
}

static void keep(void *arg, enum lg_append_status status, struct lg_event *ev)
{
    (void)arg, (void)ev;
    ck_assert_int_eq(status, LG_APPEND_OK);
}

START_TEST(create_copies_the_name_and_zeroes_the_slots)
{
    struct lg_store *store = lg_memory_store_create();
    struct lg_stream *stream =
        store->ops->stream_open(store, "demo", 4, bounds(50, 4096, 60000), false);
    struct lg_topic *t = lg_topic_create("demoXYZ", 4, LG_SLOW_CONFLATE, stream, 3);
    ck_assert_ptr_nonnull(t);
    ck_assert_str_eq(t->name, "demo");
    ck_assert_uint_eq(t->name_len, 4);
    ck_assert_ptr_eq(t->stream, stream);
    ck_assert_int_eq(t->policy, LG_SLOW_CONFLATE);
    ck_assert_uint_eq(lg_stream_newest(t->stream), 0);
    ck_assert_ptr_null(t->next_in_bucket);
    ck_assert_uint_eq(t->slot_count, 3);
    for (uint32_t w = 0; w < 3; w++) {
        ck_assert_uint_eq(t->slots[w].subscribers, 0);
        ck_assert_ptr_null(t->slots[w].listeners);
        ck_assert_uint_eq(t->slots[w].listener_count, 0);
    }
    ck_assert_int_eq(pthread_mutex_lock(&t->lock), 0);
    ck_assert_int_eq(pthread_mutex_unlock(&t->lock), 0);
    lg_topic_destroy(t);
    store->ops->destroy(store);
}
END_TEST

START_TEST(destroy_releases_the_history)
{
    int64_t live = lg_account_events();
    struct lg_store *store = lg_memory_store_create();
    struct lg_stream *stream =
        store->ops->stream_open(store, "demo", 4, bounds(100, UINT64_MAX, 0), false);
    struct lg_topic *t = lg_topic_create("demo", 4, LG_SLOW_DROP_OLDEST, stream, 1);
    ck_assert_ptr_nonnull(t);
    char data[10];
    memset(data, 'd', sizeof data);
    for (uint64_t seq = 1; seq <= 20; seq++) {
        struct lg_event_fields f = {.topic_name = "demo", .topic_name_len = 4, .data = data,
                                    .data_len = sizeof data};
        lg_stream_append(t->stream, &f, keep, NULL);
    }
    ck_assert_int_eq(lg_account_events(), live + 20);
    lg_topic_destroy(t);
    ck_assert_int_eq(lg_account_events(), live);
    lg_topic_destroy(NULL);
    store->ops->destroy(store);
}
END_TEST

static Suite *topic_suite(void)
{
    Suite *s = suite_create("topic");
    TCase *tc = tcase_create("name");
    tcase_add_test(tc, name_accepts_the_grammar);
    tcase_add_test(tc, name_must_not_be_empty);
    tcase_add_test(tc, name_must_not_exceed_the_maximum);
    tcase_add_test(tc, name_refuses_bytes_outside_the_grammar);
    tcase_add_test(tc, name_allows_dollar_only_first);
    tcase_add_test(tc, name_checks_only_len_bytes);
    tcase_add_test(tc, name_byte_ok_is_the_listed_set);
    tcase_add_test(tc, name_message_is_per_thread);
    suite_add_tcase(s, tc);

    tc = tcase_create("lifecycle");
    tcase_add_test(tc, create_copies_the_name_and_zeroes_the_slots);
    tcase_add_test(tc, destroy_releases_the_history);
    suite_add_tcase(s, tc);

    return s;
}

LG_CHECK_MAIN(topic_suite)
