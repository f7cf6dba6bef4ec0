#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cursor.h"

#include "check_main.h"

/* Parse a cursor that must be valid; the returned struct is static (one per process). */
static const struct lg_cursor *parse_ok(const char *text)
{
    static struct lg_cursor c;
    char err[256] = "";
    ck_assert_msg(lg_cursor_parse(text, strlen(text), &c, err, sizeof err) == 0,
                  "\"%s\" refused: %s", text, err);
    return &c;
}

/* Entry i of c is exactly topic@epoch:seq. */
static void assert_entry(const struct lg_cursor *c, size_t i, const char *topic, uint32_t epoch,
                         uint64_t seq)
{
    ck_assert_msg(i < c->count, "entry %zu missing: %zu entries", i, c->count);
    ck_assert_msg(strcmp(c->entries[i].topic, topic) == 0, "entry %zu: topic \"%s\", want \"%s\"",
                  i, c->entries[i].topic, topic);
    ck_assert_msg(c->entries[i].epoch == epoch, "entry %zu (%s): epoch %08x, want %08x", i, topic,
                  (unsigned)c->entries[i].epoch, (unsigned)epoch);
    ck_assert_msg(c->entries[i].seq == seq, "entry %zu (%s): seq %llu, want %llu", i, topic,
                  (unsigned long long)c->entries[i].seq, (unsigned long long)seq);
}

/* Parse a cursor that must be refused with exactly the message `want`. */
static void assert_refused(const char *text, size_t len, const char *want)
{
    struct lg_cursor c;
    char err[256] = "";
    ck_assert_int_eq(lg_cursor_parse(text, len, &c, err, sizeof err), -1);
    ck_assert_str_eq(err, want);
}

#define REFUSED(text, want) assert_refused(text, strlen(text), want)

/* ---- Valid cursors ------------------------------------------------------------------------ */

START_TEST(parses_one_entry)
{
    const struct lg_cursor *c = parse_ok("demo@5f3a9c21:42");
    ck_assert_uint_eq(c->count, 1);
    assert_entry(c, 0, "demo", 0x5f3a9c21, 42);
}
END_TEST

START_TEST(parses_entries_in_order)
{
    const struct lg_cursor *c = parse_ok("a@5f3a9c21:17,b@0c9e11d2:4,$sys/stats@00000000:0");
    ck_assert_uint_eq(c->count, 3);
    assert_entry(c, 0, "a", 0x5f3a9c21, 17);
    assert_entry(c, 1, "b", 0x0c9e11d2, 4);
    assert_entry(c, 2, "$sys/stats", 0, 0);
}
END_TEST

START_TEST(topic_may_contain_colons)
{
    const struct lg_cursor *c = parse_ok("prices:eur/usd@ffffffff:7");
    assert_entry(c, 0, "prices:eur/usd", 0xffffffff, 7);
}
END_TEST

START_TEST(seq_reaches_int64_max)
{
    const struct lg_cursor *c = parse_ok("t@00000001:9223372036854775807");
    ck_assert_uint_eq(c->entries[0].seq, INT64_MAX);
}
END_TEST

START_TEST(accepts_the_maximum_number_of_entries)
{
    char text[LG_CURSOR_MAX_ENTRIES * 24];
    size_t len = 0;
    for (int i = 0; i < LG_CURSOR_MAX_ENTRIES; i++)
        len += (size_t)snprintf(text + len, sizeof text - len, "%st%d@00000001:%d",
                                i ? "," : "", i, i);
    const struct lg_cursor *c = parse_ok(text);
    ck_assert_uint_eq(c->count, LG_CURSOR_MAX_ENTRIES);
    ck_assert_str_eq(c->entries[63].topic, "t63");
    ck_assert_uint_eq(c->entries[63].seq, 63);
}
END_TEST

START_TEST(parses_only_len_bytes)
{
    struct lg_cursor c;
    char err[64];
    const char text[] = "demo@5f3a9c21:42,garbage";
    ck_assert_int_eq(lg_cursor_parse(text, 16, &c, err, sizeof err), 0);
    ck_assert_uint_eq(c.count, 1);
    ck_assert_uint_eq(c.entries[0].seq, 42);
}
END_TEST

/* ---- Whole-cursor errors ------------------------------------------------------------------ */

START_TEST(refuses_an_empty_cursor)
{
    REFUSED("", "cursor is empty");
}
END_TEST

START_TEST(refuses_empty_entries)
{
    REFUSED(",a@00000001:1", "entry 1 is empty");
    REFUSED("a@00000001:1,", "entry 2 is empty");
    REFUSED("a@00000001:1,,b@00000001:1", "entry 2 is empty");
}
END_TEST

START_TEST(refuses_more_than_the_maximum_entries)
{
    char text[(LG_CURSOR_MAX_ENTRIES + 1) * 24];
    size_t len = 0;
    for (int i = 0; i <= LG_CURSOR_MAX_ENTRIES; i++)
        len += (size_t)snprintf(text + len, sizeof text - len, "%st%d@00000001:1",
                                i ? "," : "", i);
    REFUSED(text, "cursor has more than 64 entries");
}
END_TEST

START_TEST(refuses_a_duplicate_topic)
{
    REFUSED("a@00000001:1,b@00000001:2,a@00000002:3",
            "entry 3 (\"a@00000002:3\"): topic \"a\" already appears in entry 1");
}
END_TEST

/* ---- Entry errors ------------------------------------------------------------------------- */

START_TEST(refuses_a_bad_epoch)
{
    REFUSED("a@5f3a9c21:1,b@xyz:1", "entry 2 (\"b@xyz:1\"): epoch must be 8 lowercase hex digits");
    REFUSED("a@5F3A9C21:1", "entry 1 (\"a@5F3A9C21:1\"): epoch must be 8 lowercase hex digits");
    REFUSED("a@5f3a9c2:1", "entry 1 (\"a@5f3a9c2:1\"): epoch must be 8 lowercase hex digits");
    REFUSED("a@5f3a9c210:1", "entry 1 (\"a@5f3a9c210:1\"): epoch must be 8 lowercase hex digits");
    REFUSED("a@5f3a9c2g:1", "entry 1 (\"a@5f3a9c2g:1\"): epoch must be 8 lowercase hex digits");
    REFUSED("a@:1", "entry 1 (\"a@:1\"): epoch must be 8 lowercase hex digits");
}
END_TEST

START_TEST(refuses_a_bad_seq)
{
    REFUSED("a@00000001:", "entry 1 (\"a@00000001:\"): seq is missing after ':'");
    REFUSED("a@00000001:-1", "entry 1 (\"a@00000001:-1\"): seq must be decimal digits only");
    REFUSED("a@00000001:+1", "entry 1 (\"a@00000001:+1\"): seq must be decimal digits only");
    REFUSED("a@00000001:1a", "entry 1 (\"a@00000001:1a\"): seq must be decimal digits only");
    REFUSED("a@00000001: 1", "entry 1 (\"a@00000001: 1\"): seq must be decimal digits only");
    REFUSED("a@00000001:1:2", "entry 1 (\"a@00000001:1:2\"): seq must be decimal digits only");
    REFUSED("a@00000001:01", "entry 1 (\"a@00000001:01\"): seq must not have leading zeros");
    REFUSED("a@00000001:00", "entry 1 (\"a@00000001:00\"): seq must not have leading zeros");
}
END_TEST

START_TEST(refuses_a_seq_above_int64_max)
{
    REFUSED("a@00000001:9223372036854775808",
            "entry 1 (\"a@00000001:9223372036854775808\"): seq is larger than "
            "9223372036854775807");
    REFUSED("a@00000001:18446744073709551616",
            "entry 1 (\"a@00000001:18446744073709551616\"): seq is larger than "
            "9223372036854775807");
}
END_TEST

START_TEST(refuses_missing_separators)
{
    REFUSED("demo", "entry 1 (\"demo\"): missing '@' between topic and epoch");
    REFUSED("demo:5f3a9c21:1",
            "entry 1 (\"demo:5f3a9c21:1\"): missing '@' between topic and epoch");
    REFUSED("demo@5f3a9c21", "entry 1 (\"demo@5f3a9c21\"): missing ':' between epoch and seq");
}
END_TEST

START_TEST(refuses_a_bad_topic)
{
    REFUSED("@5f3a9c21:1", "entry 1 (\"@5f3a9c21:1\"): topic name is empty");
    REFUSED("a b@5f3a9c21:1", "entry 1 (\"a b@5f3a9c21:1\"): topic name contains a character "
                              "outside A-Z a-z 0-9 _ - . / : ~ (at byte 2)");
    REFUSED("a@b@5f3a9c21:1", "entry 1 (\"a@b@5f3a9c21:1\"): topic name contains a character "
                              "outside A-Z a-z 0-9 _ - . / : ~ (at byte 2)");
    REFUSED("a$@5f3a9c21:1",
            "entry 1 (\"a$@5f3a9c21:1\"): topic name has '$' after its first byte (at byte 2)");
}
END_TEST

START_TEST(refuses_a_topic_longer_than_the_maximum)
{
    char text[LG_TOPIC_NAME_MAX + 32];
    memset(text, 't', LG_TOPIC_NAME_MAX + 1);
    strcpy(text + LG_TOPIC_NAME_MAX + 1, "@00000001:1");
    struct lg_cursor c;
    char err[256];
    ck_assert_int_eq(lg_cursor_parse(text, strlen(text), &c, err, sizeof err), -1);
    /* the quoted entry is cut at 48 bytes */
    ck_assert_str_eq(err, "entry 1 (\"tttttttttttttttttttttttttttttttttttttttttttttttt...\"): "
                          "topic name is longer than 128 bytes");

    strcpy(text + LG_TOPIC_NAME_MAX, "@00000001:1"); /* exactly the maximum is fine */
    ck_assert_int_eq(lg_cursor_parse(text, strlen(text), &c, err, sizeof err), 0);
    ck_assert_uint_eq(strlen(c.entries[0].topic), LG_TOPIC_NAME_MAX);
}
END_TEST

START_TEST(error_quotes_unprintable_bytes_as_question_marks)
{
    assert_refused("a\"\n\xff@1:1", 8,
                   "entry 1 (\"a???@1:1\"): topic name contains a character outside "
                   "A-Z a-z 0-9 _ - . / : ~ (at byte 2)");
    assert_refused("a@00000001:\0", 12,
                   "entry 1 (\"a@00000001:?\"): seq must be decimal digits only");
}
END_TEST

START_TEST(error_fits_a_small_buffer)
{
    struct lg_cursor c;
    char err[12];
    memset(err, 'z', sizeof err);
    ck_assert_int_eq(lg_cursor_parse("a@bad:1", 7, &c, err, sizeof err), -1);
    ck_assert_str_eq(err, "entry 1 (\"a");
    ck_assert_int_eq(lg_cursor_parse("a@bad:1", 7, &c, NULL, 0), -1);
}
END_TEST

/* ---- Lookup and formatting ---------------------------------------------------------------- */

START_TEST(find_returns_the_topic_entry_or_null)
{
    const struct lg_cursor *c = parse_ok("a@00000001:1,ab@00000001:2");
    const struct lg_cursor_entry *e = lg_cursor_find(c, "ab");
    ck_assert_ptr_eq(e, &c->entries[1]);
    ck_assert_ptr_eq(lg_cursor_find(c, "a"), &c->entries[0]);
    ck_assert_ptr_null(lg_cursor_find(c, "abc"));
    ck_assert_ptr_null(lg_cursor_find(c, ""));
}
END_TEST

START_TEST(format_entry_writes_an_id)
{
    char out[LG_CURSOR_ENTRY_MAX];
    ck_assert_uint_eq(lg_cursor_format_entry(out, "demo", 0x5f3a9c21, 42), 16);
    ck_assert_str_eq(out, "demo@5f3a9c21:42");
    ck_assert_uint_eq(lg_cursor_format_entry(out, "t", 0xa, 0), 12);
    ck_assert_str_eq(out, "t@0000000a:0");
}
END_TEST

START_TEST(format_entry_of_the_longest_entry_fits)
{
    char topic[LG_TOPIC_NAME_MAX + 1];
    memset(topic, 'x', LG_TOPIC_NAME_MAX);
    topic[LG_TOPIC_NAME_MAX] = '\0';
    char out[LG_CURSOR_ENTRY_MAX];
    size_t n = lg_cursor_format_entry(out, topic, 0xffffffff, UINT64_MAX);
    ck_assert_uint_eq(n, LG_TOPIC_NAME_MAX + 1 + 8 + 1 + 20);
    ck_assert_uint_eq(strlen(out), n);
    ck_assert_str_eq(out + LG_TOPIC_NAME_MAX, "@ffffffff:18446744073709551615");
}
END_TEST

START_TEST(formatted_entry_parses_back)
{
    char out[LG_CURSOR_ENTRY_MAX];
    size_t n = lg_cursor_format_entry(out, "a/b:c", 0x00c0ffee, 123456789);
    struct lg_cursor c;
    char err[128];
    ck_assert_int_eq(lg_cursor_parse(out, n, &c, err, sizeof err), 0);
    ck_assert_str_eq(c.entries[0].topic, "a/b:c");
    ck_assert_uint_eq(c.entries[0].epoch, 0x00c0ffee);
    ck_assert_uint_eq(c.entries[0].seq, 123456789);
}
END_TEST

static Suite *cursor_suite(void)
{
    Suite *s = suite_create("cursor");

    TCase *tc = tcase_create("valid");
    tcase_add_test(tc, parses_one_entry);
    tcase_add_test(tc, parses_entries_in_order);
    tcase_add_test(tc, topic_may_contain_colons);
    tcase_add_test(tc, seq_reaches_int64_max);
    tcase_add_test(tc, accepts_the_maximum_number_of_entries);
    tcase_add_test(tc, parses_only_len_bytes);
    suite_add_tcase(s, tc);

    tc = tcase_create("cursor_errors");
    tcase_add_test(tc, refuses_an_empty_cursor);
    tcase_add_test(tc, refuses_empty_entries);
    tcase_add_test(tc, refuses_more_than_the_maximum_entries);
    tcase_add_test(tc, refuses_a_duplicate_topic);
    suite_add_tcase(s, tc);

    tc = tcase_create("entry_errors");
    tcase_add_test(tc, refuses_a_bad_epoch);
    tcase_add_test(tc, refuses_a_bad_seq);
    tcase_add_test(tc, refuses_a_seq_above_int64_max);
    tcase_add_test(tc, refuses_missing_separators);
    tcase_add_test(tc, refuses_a_bad_topic);
    tcase_add_test(tc, refuses_a_topic_longer_than_the_maximum);
    tcase_add_test(tc, error_quotes_unprintable_bytes_as_question_marks);
    tcase_add_test(tc, error_fits_a_small_buffer);
    suite_add_tcase(s, tc);

    tc = tcase_create("find_and_format");
    tcase_add_test(tc, find_returns_the_topic_entry_or_null);
    tcase_add_test(tc, format_entry_writes_an_id);
    tcase_add_test(tc, format_entry_of_the_longest_entry_fits);
    tcase_add_test(tc, formatted_entry_parses_back);
    suite_add_tcase(s, tc);

    return s;
}

LG_CHECK_MAIN(cursor_suite)
