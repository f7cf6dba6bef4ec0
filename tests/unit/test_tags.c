/*
 * Unit tests for tags.c (event tags and filter expressions: grammar, canonical text, bounds,
 * every refusal's message, matching) and filter_table.c (interning and one evaluation per
 * event per distinct filter).
 */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "event.h"
#include "filter_table.h"
#include "tags.h"

#include "check_main.h"

/* The canonical text of tags text s, which must parse. */
static const char *tags_of(const char *s)
{
    static char out[LG_TAGS_TEXT_MAX + 1];
    char why[256];
    size_t len = 0;
    ck_assert_msg(lg_tags_parse(s, strlen(s), out, &len, why, sizeof why) == 0, "%s", why);
    ck_assert_uint_eq(len, strlen(out));
    return out;
}

/* The message refusing tags text s. */
static const char *tags_refusal(const char *s)
{
    static char why[256];
    char out[LG_TAGS_TEXT_MAX + 1];
    size_t len;
    ck_assert_int_eq(lg_tags_parse(s, strlen(s), out, &len, why, sizeof why), -1);
    return why;
}

static struct lg_filter filter;

/* The canonical text of filter s, which must parse (into `filter`). */
static const char *filter_of(const char *s)
{
    char why[256];
    ck_assert_msg(lg_filter_parse(s, strlen(s), &filter, why, sizeof why) == 0, "%s", why);
    ck_assert_uint_eq(filter.text_len, strlen(filter.text));
    return filter.text;
}

static const char *filter_refusal(const char *s)
{
    static char why[256];
    ck_assert_int_eq(lg_filter_parse(s, strlen(s), &filter, why, sizeof why), -1);
    return why;
}

static bool matches(const char *filter_text, const char *tags_text)
{
    filter_of(filter_text);
    const char *t = tags_text ? tags_of(tags_text) : NULL;
    return lg_filter_match(&filter, t, t ? strlen(t) : 0);
}

START_TEST(tags_are_sorted_by_key)
{
    ck_assert_str_eq(tags_of("region:eu,kind:a"), "kind:a,region:eu");
    ck_assert_str_eq(tags_of("a.b_c-D:X-1.y_z"), "a.b_c-D:X-1.y_z");
    ck_assert_str_eq(tags_of(""), "");
}
END_TEST

START_TEST(tags_refusals_say_what_is_wrong)
{
    ck_assert_str_eq(tags_refusal("region"),
                     "tags: \"region\" is not key:value; write tags as key:value,key:value");
    ck_assert_str_eq(tags_refusal("a:1,a:2"),
                     "tag \"a\" is given twice; an event has one value per tag");
    ck_assert_str_eq(tags_refusal("a:1,"), "tags end with ','; write tags as key:value,key:value");
    ck_assert_str_eq(tags_refusal("a b:1"),
                     "tag key \"a b\" may only hold A-Z a-z 0-9 _ . -; a key is 1..64 bytes of "
                     "A-Z a-z 0-9 _ . -");
    ck_assert_str_eq(tags_refusal("a:"),
                     "the value of tag \"a\" is empty; a value is 1..64 bytes of A-Z a-z 0-9 _ . -");
    ck_assert_str_eq(tags_refusal(":x"),
                     "tag key \"\" is empty; a key is 1..64 bytes of A-Z a-z 0-9 _ . -");
}
END_TEST

START_TEST(tags_are_bounded)
{
    char text[2048] = "";
    for (int i = 0; i < LG_TAGS_MAX; i++)
        snprintf(text + strlen(text), sizeof text - strlen(text), "%sk%02d:v", i ? "," : "", i);
    tags_of(text);
    strcat(text, ",k99:v");
    ck_assert_str_eq(tags_refusal(text), "more than 16 tags; an event carries at most 16");
    char long_value[80];
    memset(long_value, 'v', 65);
    long_value[65] = '\0';
    snprintf(text, sizeof text, "k:%s", long_value);
    ck_assert_str_eq(tags_refusal(text), "the value of tag \"k\" is longer than 64 bytes; a value "
                                         "is 1..64 bytes of A-Z a-z 0-9 _ . -");
}
END_TEST

START_TEST(filters_are_canonical)
{
    ck_assert_str_eq(filter_of("region:eu"), "region:eu");
    ck_assert_str_eq(filter_of("region:eu,kind:b|a"), "kind:a|b,region:eu");
    ck_assert_str_eq(filter_of("kind:b|a|b|a"), "kind:a|b");
    ck_assert_uint_eq(filter.clause_count, 1);
    ck_assert_uint_eq(filter.value_count, 2);
}
END_TEST

START_TEST(filter_refusals_say_what_is_wrong)
{
    ck_assert_str_eq(filter_refusal(""), "the filter is empty; write key:value clauses joined by ','");
    ck_assert_str_eq(filter_refusal("region"),
                     "filter clause \"region\" has no ':'; a clause is key:value or "
                     "key:value1|value2");
    ck_assert_str_eq(filter_refusal("a:1,a:2"),
                     "filter key \"a\" appears twice; give its values in one clause (key:a|b)");
    ck_assert_str_eq(filter_refusal("a:1|"), "filter clause \"a:1|\" ends with '|'");
    ck_assert_str_eq(filter_refusal("a:1,"),
                     "the filter ends with ','; write key:value clauses joined by ','");
    ck_assert_str_eq(filter_refusal("a:1||2"),
                     "a value of filter key \"a\" is empty; a value is 1..64 bytes of "
                     "A-Z a-z 0-9 _ . -");
    ck_assert_str_eq(filter_refusal("a=1:2"),
                     "filter key \"a=1\" may only hold A-Z a-z 0-9 _ . -; a key is 1..64 bytes of "
                     "A-Z a-z 0-9 _ . -");
}
END_TEST

START_TEST(filters_are_bounded)
{
    char text[512] = "";
    for (int i = 0; i < LG_FILTER_CLAUSES_MAX; i++)
        snprintf(text + strlen(text), sizeof text - strlen(text), "%sk%d:v", i ? "," : "", i);
    filter_of(text);
    strcat(text, ",k9:v");
    ck_assert_str_eq(filter_refusal(text), "a filter has at most 8 clauses");
    strcpy(text, "k:0");
    for (int i = 1; i < LG_FILTER_VALUES_MAX; i++)
        snprintf(text + strlen(text), sizeof text - strlen(text), "|%d", i);
    filter_of(text);
    strcat(text, "|x");
    ck_assert_str_eq(filter_refusal(text), "a filter has at most 32 values in all");
    memset(text, 'a', 257);
    text[0] = 'k', text[1] = ':', text[257] = '\0';
    ck_assert_str_eq(filter_refusal(text), "the filter is 257 bytes; at most 256 are allowed");
}
END_TEST

START_TEST(a_filter_is_a_conjunction_of_set_memberships)
{
    ck_assert(matches("region:eu", "region:eu"));
    ck_assert(matches("region:eu", "kind:a,region:eu"));
    ck_assert(!matches("region:eu", "region:us"));
    ck_assert(!matches("region:eu", "kind:a"));
    ck_assert(!matches("region:eu", NULL));
    ck_assert(matches("kind:a|b,region:eu", "kind:b,region:eu,x:1"));
    ck_assert(!matches("kind:a|b,region:eu", "kind:c,region:eu"));
    ck_assert(!matches("kind:a|b,region:eu", "kind:a"));
    /* a key that is a prefix of another is not that key */
    ck_assert(!matches("kind:a", "kinds:a"));
    ck_assert(!matches("kinds:a", "kind:a"));
    ck_assert(!matches("kind:a", "kind:ab"));
}
END_TEST

/* An event with canonical tags text `tags` (NULL: none) and this seq, for the table. */
static struct lg_event *event_with(const char *tags, uint64_t seq)
{
    static const int topic;
    struct lg_event_fields f = {.topic_identity = &topic, .topic_name = "t", .topic_name_len = 1,
                                .seq = seq, .data = "x", .data_len = 1, .tags = tags,
                                .tags_len = tags ? strlen(tags) : 0};
    struct lg_event *ev = lg_event_create(&f);
    ck_assert_ptr_nonnull(ev);
    return ev;
}

START_TEST(the_table_interns_by_canonical_text)
{
    filter_of("region:eu,kind:a");
    struct lg_interned_filter *a = lg_filter_table_intern(&filter);
    filter_of("kind:a,region:eu");
    struct lg_interned_filter *b = lg_filter_table_intern(&filter);
    filter_of("kind:b");
    struct lg_interned_filter *c = lg_filter_table_intern(&filter);
    ck_assert_ptr_eq(a, b);
    ck_assert_ptr_ne(a, c);
    ck_assert_uint_eq(lg_filter_table_count(), 2);
    ck_assert_str_eq(lg_filter_table_text(a), "kind:a,region:eu");
    lg_filter_table_unref(&a);
    ck_assert_ptr_null(a);
    ck_assert_uint_eq(lg_filter_table_count(), 2);
    lg_filter_table_unref(&b);
    lg_filter_table_unref(&c);
    ck_assert_uint_eq(lg_filter_table_count(), 0);
}
END_TEST

START_TEST(one_evaluation_per_event_per_filter)
{
    filter_of("kind:a");
    struct lg_interned_filter *f[100];
    for (int i = 0; i < 100; i++)
        f[i] = lg_filter_table_intern(&filter);
    struct lg_event *yes = event_with("kind:a", 1), *no = event_with("kind:b", 2);
    for (int i = 0; i < 100; i++)
        ck_assert(lg_filter_table_admits(f[i], yes));
    ck_assert_uint_eq(lg_filter_table_evaluations(f[0]), 1);
    for (int i = 0; i < 100; i++)
        ck_assert(!lg_filter_table_admits(f[i], no));
    ck_assert_uint_eq(lg_filter_table_evaluations(f[0]), 2);
    lg_event_unref(&yes);
    lg_event_unref(&no);
    /* many distinct filters grow the table and all come back out */
    struct lg_interned_filter *distinct[300];
    for (int i = 0; i < 300; i++) {
        char text[32];
        snprintf(text, sizeof text, "n:%d", i);
        filter_of(text);
        distinct[i] = lg_filter_table_intern(&filter);
    }
    ck_assert_uint_eq(lg_filter_table_count(), 301);
    for (int i = 0; i < 300; i++)
        lg_filter_table_unref(&distinct[i]);
    for (int i = 0; i < 100; i++)
        lg_filter_table_unref(&f[i]);
    ck_assert_uint_eq(lg_filter_table_count(), 0);
}
END_TEST

/* A worker's thread: interns two references to one filter and ends with them held. */
static void *intern_and_exit(void *arg)
{
    struct lg_interned_filter **held = arg;
    struct lg_filter f;
    char why[64];
    ck_assert_int_eq(lg_filter_parse("kind:a", 6, &f, why, sizeof why), 0);
    held[0] = lg_filter_table_intern(&f);
    held[1] = lg_filter_table_intern(&f);
    ck_assert_ptr_eq(held[0], held[1]);
    ck_assert_uint_eq(lg_filter_table_count(), 1);
    return NULL;
}

/* lws closes a stopped worker's connections on the main thread, after the join: their
 * references are dropped there, into the worker's table, not the main thread's. */
START_TEST(the_last_references_may_be_dropped_after_the_owner_is_joined)
{
    struct lg_interned_filter *held[2];
    pthread_t worker;
    ck_assert_int_eq(pthread_create(&worker, NULL, intern_and_exit, held), 0);
    ck_assert_int_eq(pthread_join(worker, NULL), 0);
    ck_assert_uint_eq(lg_filter_table_count(), 0); /* the main thread has none of its own */
    filter_of("kind:a");
    struct lg_interned_filter *mine = lg_filter_table_intern(&filter);
    ck_assert_ptr_ne(mine, held[0]);
    lg_filter_table_unref(&held[0]);
    lg_filter_table_unref(&held[1]);
    ck_assert_uint_eq(lg_filter_table_count(), 1);
    lg_filter_table_unref(&mine);
    ck_assert_uint_eq(lg_filter_table_count(), 0);
}
END_TEST

static Suite *tags_suite(void)
{
    Suite *s = suite_create("tags");
    TCase *tc = tcase_create("tags");
    tcase_add_test(tc, tags_are_sorted_by_key);
    tcase_add_test(tc, tags_refusals_say_what_is_wrong);
    tcase_add_test(tc, tags_are_bounded);
    suite_add_tcase(s, tc);

    tc = tcase_create("filters");
    tcase_add_test(tc, filters_are_canonical);
    tcase_add_test(tc, filter_refusals_say_what_is_wrong);
    tcase_add_test(tc, filters_are_bounded);
    tcase_add_test(tc, a_filter_is_a_conjunction_of_set_memberships);
    suite_add_tcase(s, tc);

    tc = tcase_create("filter_table");
    tcase_add_test(tc, the_table_interns_by_canonical_text);
    tcase_add_test(tc, one_evaluation_per_event_per_filter);
    tcase_add_test(tc, the_last_references_may_be_dropped_after_the_owner_is_joined);
    suite_add_tcase(s, tc);
    return s;
}

LG_CHECK_MAIN(tags_suite)
