/*
 * test_log.c - log lines (log.h): one line per call, whatever bytes a client put in the
 * message: CR, LF, ESC and other control bytes, DEL, a backslash and malformed UTF-8 are
 * escaped as \xNN (\\ for the backslash); well-formed UTF-8 passes as it is. With log_format
 * json every line is one JSON object (time, level, msg, fields) over the same escaped text.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

#include "check_main.h"

/* Everything lg_log wrote to stderr while fn ran, as a malloc'd string. */
static char *captured(void (*fn)(void))
{
    FILE *tmp = tmpfile();
    ck_assert_ptr_nonnull(tmp);
    int saved = dup(STDERR_FILENO);
    ck_assert_int_ge(saved, 0);
    ck_assert_int_ge(dup2(fileno(tmp), STDERR_FILENO), 0);
    fn();
    ck_assert_int_ge(dup2(saved, STDERR_FILENO), 0);
    close(saved);
    long n = ftell(tmp);
    if (n <= 0) { /* write(2) went past the FILE's own position */
        fseek(tmp, 0, SEEK_END);
        n = ftell(tmp);
    }
    char *text = calloc(1, (size_t)n + 1);
    rewind(tmp);
    ck_assert_uint_eq(fread(text, 1, (size_t)n, tmp), (size_t)n);
    fclose(tmp);
    return text;
}

/* The message part of the only line in text: after "<time> <LEVEL> ", before the newline. */
static const char *message_of(const char *text, const char *level)
{
    const char *nl = strchr(text, '\n');
    ck_assert_msg(nl && nl[1] == '\0', "not exactly one line: [%s]", text);
    const char *m = strstr(text, level);
    ck_assert_ptr_nonnull(m);
    return m + strlen(level) + 1;
}

static void log_hostile_topic(void)
{
    lg_log_set_level(LG_LOG_INFO);
    lg_log(LG_LOG_INFO, "subscribed to %s", "a\r\n2026-01-01T00:00:00.000Z WARN forged\x1b[31m");
}

static void log_mixed_bytes(void)
{
    lg_log(LG_LOG_WARN, "topic %s", "caf\xc3\xa9 \\x41 \xff\xc3 tab\tdel\x7f");
}

/* A line logged by log and the exact message it must come out as after its level. */
static const struct {
    const char *name;
    void (*log)(void);
    const char *level, *want;
} escapes[] = {
    {"control bytes cannot forge a line", log_hostile_topic, "INFO",
     "subscribed to a\\x0d\\x0a2026-01-01T00:00:00.000Z WARN forged\\x1b[31m\n"},
    {"UTF-8 passes and the rest is escaped", log_mixed_bytes, "WARN",
     "topic caf\xc3\xa9 \\\\x41 \\xff\\xc3 tab\\x09del\\x7f\n"},
};

START_TEST(a_logged_line_is_escaped_exactly)
{
    char *text = captured(escapes[_i].log);
    const char *m = message_of(text, escapes[_i].level);
    ck_assert_msg(strcmp(m, escapes[_i].want) == 0, "%s: logged \"%s\", want \"%s\"",
                  escapes[_i].name, m, escapes[_i].want);
    free(text);
}
END_TEST

static void log_long_escapes(void)
{
    char many[2000];
    memset(many, '\n', sizeof many - 1);
    many[sizeof many - 1] = '\0';
    lg_log(LG_LOG_ERROR, "%s", many);
}

START_TEST(an_escaped_line_stays_within_the_line_bound)
{
    char *text = captured(log_long_escapes);
    const char *m = message_of(text, "ERROR");
    ck_assert_uint_le(strlen(text), 1024);
    ck_assert_uint_eq(strncmp(m, "\\x0a\\x0a", 8), 0);
    free(text);
}
END_TEST

static void log_json_hostile(void)
{
    lg_log_set_level(LG_LOG_INFO);
    lg_log_set_format(LG_LOG_JSON);
    lg_log(LG_LOG_WARN, "topic \"a\"\n\x1b[31m bad \xff utf8 \\");
    struct lg_log_field f[] = {{.key = "topics", .str = "a,\"b\""}, {.key = "bytes", .num = 42}};
    static struct lg_ratelimit rl;
    lg_log_fields_ratelimited(&rl, 1000, LG_LOG_INFO, "client disconnected", f, 2);
    lg_log_set_format(LG_LOG_TEXT);
    static struct lg_ratelimit rl_text;
    lg_log_fields_ratelimited(&rl_text, 1000, LG_LOG_INFO, "client disconnected", f, 2);
}

/* json: one object a line, whatever bytes the message holds; text: the fields as key=value. */
START_TEST(json_lines_are_objects_and_fields_are_named)
{
    char *text = captured(log_json_hostile);
    char *second = strchr(text, '\n');
    ck_assert_ptr_nonnull(second);
    *second++ = '\0';
    const char *want_tail = "\"level\":\"warn\",\"msg\":"
                            "\"topic \\\"a\\\"\\\\x0a\\\\x1b[31m bad \\\\xff utf8 \\\\\\\\\","
                            "\"fields\":{}}";
    ck_assert_msg(strncmp(text, "{\"time\":\"", 9) == 0 && strstr(text, want_tail) &&
                      strcmp(text + strlen(text) - strlen(want_tail), want_tail) == 0,
                  "line %s\nwant its end %s", text, want_tail);
    char *third = strchr(second, '\n');
    ck_assert_ptr_nonnull(third);
    *third++ = '\0';
    ck_assert_msg(strstr(second, "\"level\":\"info\",\"msg\":\"client disconnected\","
                                 "\"fields\":{\"topics\":\"a,\\\"b\\\"\",\"bytes\":42}}"),
                  "%s", second);
    ck_assert_str_eq(message_of(third, "INFO"), "client disconnected topics=a,\"b\" bytes=42\n");
    free(text);
}
END_TEST

static Suite *log_suite(void)
{
    Suite *s = suite_create("log");
    TCase *tc = tcase_create("escaping");
    tcase_add_loop_test(tc, a_logged_line_is_escaped_exactly, 0,
                        (int)(sizeof escapes / sizeof escapes[0]));
    tcase_add_test(tc, an_escaped_line_stays_within_the_line_bound);
    tcase_add_test(tc, json_lines_are_objects_and_fields_are_named);
    suite_add_tcase(s, tc);
    return s;
}

LG_CHECK_MAIN(log_suite)
