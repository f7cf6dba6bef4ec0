/*
 * test_topic_rules.c - unit tests for src/config/topic_rules.c: glob matching, the first-match-wins
 * lookup, and the "topic_rules" array parsed on its own (the pattern grammar, every byte).
 * Loading rules through a whole config file, with its messages, is tested in test_config.c.
 */
#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "config.h"
#include "topic_glob.h"
#include "topic_rules.h"

#include "check_main.h"
#include "unit_support.h"

/* ---- Glob matching ----------------------------------------------------------------------- */

static const struct {
    const char *pattern, *text;
    bool match;
} lg_glob_cases[] = {
    { "prices/*", "prices/eur", true },
    { "prices/*", "prices/", true },
    { "prices/*", "prices", false },
    { "prices/*", "prices/eur/intraday", true }, /* '*' crosses '/' */
    { "*", "", true },
    { "*", "a/b/c", true },
    { "**", "x", true },
    { "?", "", false },
    { "?", "a", true },
    { "?", "ab", false },
    { "a?c", "abc", true },
    { "a?c", "a/c", true },
    { "a?c", "ac", false },
    { "*/eur", "prices/eur", true },
    { "*/eur", "prices/eur/x", false },
    { "a*b*c", "aXXbYYc", true },
    { "a*b*c", "aXXbYY", false },
    { "a*b", "abxb", true },
    { "*a", "aaa", true },
    { "*?*", "", false },
    { "*?*", "z", true },
    { "a*", "b", false },
    { "", "", true },
    { "", "a", false },
    { "a", "", false },
    { "exact", "exact", true },
    { "exact", "exacT", false },
    { "exact", "exactly", false },
    { "$sys/*", "$sys/stats", true },
    { "*.*.?", "a.b.c", true },
    { "*.*.?", "a.b.cd", false },
};

START_TEST(test_glob_table)
{
    ck_assert_msg(lg_glob_match(lg_glob_cases[_i].pattern, lg_glob_cases[_i].text) ==
                      lg_glob_cases[_i].match,
                  "glob \"%s\" vs \"%s\": expected %s", lg_glob_cases[_i].pattern,
                  lg_glob_cases[_i].text, lg_glob_cases[_i].match ? "match" : "no match");
}
END_TEST

START_TEST(test_glob_pathological)
{
    /* Naive recursion is exponential here; the iterative matcher is linear-ish. */
    size_t n = 200000;
    char *text = malloc(n + 1);
    memset(text, 'a', n);
    text[n] = '\0';
    clock_t start = clock();
    ck_assert(!lg_glob_match("*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b", text));
    ck_assert(lg_glob_match("*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a", text));
    ck_assert(!lg_glob_match(NULL, text));
    ck_assert(!lg_glob_match("*", NULL));
    /* Generous bound: the point is no blow-up, even under ASan or valgrind. */
    ck_assert_msg(clock() - start < 20 * CLOCKS_PER_SEC, "glob took too long");
    free(text);
}
END_TEST

/* More edges: backtracking after a partial match, stars next to '?', wildcard characters in
 * the text (plain bytes there), and a pattern longer than the text. */
static const struct {
    const char *pattern, *text;
    bool match;
} lg_glob_edge_cases[] = {
    {"*ab", "aab", true}, /* the star must give back the first 'a' */
    {"*ab", "abab", true},
    {"*ab", "abac", false},
    {"a*a", "a", false}, /* one 'a' cannot be both ends */
    {"a*a", "aa", true},
    {"a**b", "ab", true},
    {"**a**", "bab", true},
    {"a*?", "a", false},
    {"a*?", "ab", true},
    {"*?", "", false},
    {"?*", "x/y", true},
    {"??", "a", false},
    {"?", "/", true},     /* '?' crosses '/' as '*' does */
    {"a?c", "a*c", true}, /* a '*' in the text is an ordinary byte */
    {"a*", "a*", true},
    {"a?", "a?", true},
    {"abc", "ab", false},
    {"ab*", "ab", true},
    {"*", "$sys/stats", true},
    {"$sys/*", "sys/stats", false},
    {"prices/*/eur", "prices/fx/eur", true},
    {"prices/*/eur", "prices/eur", false},
};

START_TEST(test_glob_edges)
{
    ck_assert_msg(lg_glob_match(lg_glob_edge_cases[_i].pattern, lg_glob_edge_cases[_i].text) ==
                      lg_glob_edge_cases[_i].match,
                  "glob \"%s\" vs \"%s\": expected %s", lg_glob_edge_cases[_i].pattern,
                  lg_glob_edge_cases[_i].text, lg_glob_edge_cases[_i].match ? "match" : "no match");
}
END_TEST

START_TEST(test_glob_null)
{
    ck_assert(!lg_glob_match(NULL, NULL));
    ck_assert(!lg_glob_match(NULL, ""));
    ck_assert(!lg_glob_match("", NULL));
}
END_TEST

/* ---- Lookup: the first matching rule decides ------------------------------------------------ */

/* A rule set built by hand, as lg_topic_rules_parse() and lg_topic_rules_resolve() would. */
static struct lg_topic_rule lg_test_rule(const char *match, bool has_on_slow,
                                         enum lg_slow_policy on_slow)
{
    return (struct lg_topic_rule){.match = (char *)match,
                                  .has_on_slow = has_on_slow,
                                  .on_slow = on_slow};
}

START_TEST(test_first_match_wins)
{
    struct lg_topic_rule rules[] = {
        lg_test_rule("prices/eur", true, LG_SLOW_DISCONNECT),
        lg_test_rule("prices/*", true, LG_SLOW_CONFLATE),
        lg_test_rule("*", true, LG_SLOW_DROP_OLDEST),
    };
    size_t n = sizeof(rules) / sizeof(rules[0]);
    ck_assert_ptr_eq(lg_topic_rules_first_match(rules, n, "prices/eur"), &rules[0]);
    ck_assert_ptr_eq(lg_topic_rules_first_match(rules, n, "prices/usd"), &rules[1]);
    ck_assert_ptr_eq(lg_topic_rules_first_match(rules, n, "prices/eur/x"), &rules[1]);
    ck_assert_ptr_eq(lg_topic_rules_first_match(rules, n, "news"), &rules[2]);
    /* Order, not specificity: with the broad rule first, it wins everything. */
    struct lg_topic_rule reversed[] = {rules[2], rules[1], rules[0]};
    ck_assert_ptr_eq(lg_topic_rules_first_match(reversed, n, "prices/eur"), &reversed[0]);
    /* No rules, or none matching. */
    ck_assert_ptr_null(lg_topic_rules_first_match(NULL, 0, "prices/eur"));
    ck_assert_ptr_null(lg_topic_rules_first_match(rules, 2, "news"));
}
END_TEST

/* The first matching rule decides even for what it leaves unset: that comes from the
 * top-level settings, never from a later rule that also matches. */
START_TEST(test_first_match_unset_fields_come_from_top_level)
{
    static const char json[] =
        "{\"history\": {\"max_events\": 77, \"max_bytes\": 5000, \"max_age_ms\": 9},"
        " \"client_queue\": {\"on_slow\": \"disconnect\"},"
        " \"topic_rules\": ["
        "  {\"match\": \"a/*\"},"
        "  {\"match\": \"a/b\", \"on_slow\": \"conflate\", \"history\": {\"max_events\": 1}},"
        "  {\"match\": \"c/?\", \"history\": {\"max_bytes\": 64}},"
        "  {\"match\": \"c/*\", \"on_slow\": \"conflate\", \"history\": {\"max_age_ms\": 1}}"
        " ]}";
    struct lg_config cfg;
    char err[LG_CONFIG_ERR_MAX] = "";
    lg_config_init_defaults(&cfg);
    ck_assert_msg(lg_config_load_string(&cfg, json, err) == 0, "%s", err);

    lg_assert_topic_gets(&cfg, "a/b", LG_SLOW_DISCONNECT, 77, 5000, 9);
    lg_assert_topic_gets(&cfg, "c/d", LG_SLOW_DISCONNECT, 77, 64, 9);
    /* "c/de" skips the first c-rule and gets the second's values. */
    lg_assert_topic_gets(&cfg, "c/de", LG_SLOW_CONFLATE, 77, 5000, 1);
    lg_config_release(&cfg);
}
END_TEST

/* ---- Parsing the array on its own --------------------------------------------------------- */

#define LG_PATTERN_CHARS                                                                           \
    "(patterns use A-Z a-z 0-9 _ - . / : ~, a leading $, and the wildcards * ?)"

/* The pattern grammar as it was before it shared topic.c's: written out here so the test
 * notices if either drifts. */
static bool lg_test_pattern_byte_ok(unsigned char c, size_t offset)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c != 0 && strchr("_-./:~*?", c) != NULL) || (c == '$' && offset == 0);
}

/* Parse [{"match": <len bytes of p>}], the bytes taken as they are (no UTF-8 check, so every
 * byte value reaches the grammar). Return value: what lg_topic_rules_parse() returned. */
static int lg_test_parse_match(const char *p, size_t len, struct lg_topic_rule **rules,
                               size_t *count, char *err)
{
    json_t *arr = json_array();
    json_t *rule = json_object();
    ck_assert_int_eq(json_object_set_new(rule, "match", json_stringn_nocheck(p, len)), 0);
    ck_assert_int_eq(json_array_append_new(arr, rule), 0);
    int rc = lg_topic_rules_parse(arr, rules, count, err);
    json_decref(arr);
    return rc;
}

/* Every byte value, first and second in a pattern: accepted exactly when the grammar allows
 * it, refused with the offending byte and offset otherwise. */
START_TEST(test_pattern_every_byte)
{
    for (unsigned c = 1; c < 256; c++) {
        for (size_t offset = 0; offset < 2; offset++) {
            char p[2] = {'x', 'x'};
            p[offset] = (char)c;
            struct lg_topic_rule *rules = NULL;
            size_t count = 0;
            char err[LG_CONFIG_ERR_MAX] = "";
            int rc = lg_test_parse_match(p, sizeof(p), &rules, &count, err);
            if (lg_test_pattern_byte_ok((unsigned char)c, offset)) {
                ck_assert_msg(rc == 0, "byte 0x%02x at %zu refused: %s", c, offset, err);
                ck_assert_uint_eq(count, 1);
                ck_assert_mem_eq(rules[0].match, p, sizeof(p));
            } else {
                char want[LG_CONFIG_ERR_MAX];
                snprintf(want, sizeof(want),
                         "topic_rules[0].match: byte 0x%02x at offset %zu is not "
                         "allowed " LG_PATTERN_CHARS,
                         c, offset);
                ck_assert_msg(rc == -1, "byte 0x%02x at %zu accepted", c, offset);
                ck_assert_str_eq(err, want);
                ck_assert_ptr_null(rules);
            }
            lg_topic_rules_free(rules, count);
        }
    }
}
END_TEST

START_TEST(test_pattern_length_bounds)
{
    char p[130];
    memset(p, 'x', sizeof(p));
    struct lg_topic_rule *rules = NULL;
    size_t count = 0;
    char err[LG_CONFIG_ERR_MAX] = "";
    ck_assert_msg(lg_test_parse_match(p, 128, &rules, &count, err) == 0, "%s", err);
    ck_assert_uint_eq(strlen(rules[0].match), 128);
    ck_assert_int_eq(lg_test_parse_match(p, 129, &rules, &count, err), -1);
    ck_assert_str_eq(err, "topic_rules[0].match: a pattern of 129 bytes is out of range "
                          "(allowed 1..128 bytes)");
    ck_assert_uint_eq(count, 1); /* a failed parse keeps what was there */
    lg_topic_rules_free(rules, count);
}
END_TEST

/* A successful parse replaces the array, a failed one leaves it alone; resolve fills in the
 * inherited bounds and printing shows only what each rule gave. */
START_TEST(test_parse_replace_resolve_print)
{
    struct lg_topic_rule *rules = NULL;
    size_t count = 0;
    char err[LG_CONFIG_ERR_MAX] = "";
    json_t *v = json_loads("[{\"match\": \"a/*\", \"history\": {\"max_bytes\": 10}},"
                           " {\"match\": \"b\", \"on_slow\": \"conflate\"}]",
                           0, NULL);
    ck_assert_ptr_nonnull(v);
    ck_assert_msg(lg_topic_rules_parse(v, &rules, &count, err) == 0, "%s", err);
    json_decref(v);
    ck_assert_uint_eq(count, 2);
    struct lg_topic_rule *first = rules;

    v = json_loads("[{\"match\": \"c\"}, {\"on_slow\": \"conflate\"}]", 0, NULL);
    ck_assert_int_eq(lg_topic_rules_parse(v, &rules, &count, err), -1);
    json_decref(v);
    ck_assert_str_eq(err, "topic_rules[1]: \"match\" is required (a topic pattern such as "
                          "\"prices/*\")");
    ck_assert_ptr_eq(rules, first);
    ck_assert_uint_eq(count, 2);

    struct lg_history_bounds top = {.max_events = 5, .max_bytes = 6, .max_age_ms = 7};
    lg_topic_rules_resolve(rules, count, &top);
    ck_assert_uint_eq(rules[0].history.max_events, 5);
    ck_assert_uint_eq(rules[0].history.max_bytes, 10);
    ck_assert_uint_eq(rules[0].history.max_age_ms, 7);
    ck_assert_uint_eq(rules[0].history_given, LG_HISTORY_GIVEN_MAX_BYTES);
    ck_assert(!rules[1].has_history);

    json_t *printed = lg_topic_rules_json(rules, count);
    char *text = json_dumps(printed, JSON_COMPACT | JSON_PRESERVE_ORDER);
    ck_assert_str_eq(text, "[{\"match\":\"a/*\",\"history\":{\"max_bytes\":10}},"
                           "{\"match\":\"b\",\"on_slow\":\"conflate\"}]");
    free(text);
    json_decref(printed);

    v = json_loads("[]", 0, NULL);
    ck_assert_int_eq(lg_topic_rules_parse(v, &rules, &count, err), 0);
    json_decref(v);
    ck_assert_ptr_null(rules);
    ck_assert_uint_eq(count, 0);
    lg_topic_rules_free(rules, count);
}
END_TEST

/* metrics.topics and auth.anonymous_subscribe: does a topic match any glob of a list. */
START_TEST(test_glob_match_any)
{
    const char *const globs[] = {"orders/*", "vip", "v?p"};
    ck_assert(lg_glob_match_any(globs, 3, "orders/1"));
    ck_assert(lg_glob_match_any(globs, 3, "vip"));
    ck_assert(lg_glob_match_any(globs, 3, "vap"));
    ck_assert(!lg_glob_match_any(globs, 3, "vips"));
    ck_assert(!lg_glob_match_any(globs, 3, "orders"));
    ck_assert(!lg_glob_match_any(globs, 0, "vip"));
}
END_TEST

/* ---- Where a subscription without a cursor starts ------------------------------------------ */

/* Load one document whose topic_rules is rules_json: 0, or -1 with err filled. */
static int lg_test_load_rules(struct lg_config *cfg, const char *rules_json, char *err)
{
    char doc[512];
    snprintf(doc, sizeof doc, "{\"topic_rules\": %s}", rules_json);
    lg_config_init_defaults(cfg);
    return lg_config_load_string(cfg, doc, err);
}

START_TEST(test_start_rules_lookup_and_print)
{
    struct lg_config cfg;
    char err[LG_CONFIG_ERR_MAX] = "";
    const char *rules = "[{\"match\":\"l/*\",\"start\":\"latest\"},"
                        "{\"match\":\"r/*\",\"rewind\":25},"
                        "{\"match\":\"n/*\",\"start\":\"now\"},"
                        "{\"match\":\"*\",\"on_slow\":\"conflate\"}]";
    ck_assert_msg(lg_test_load_rules(&cfg, rules, err) == 0, "%s", err);
    ck_assert_int_eq(lg_config_start_for(&cfg, "l/x").kind, LG_START_LATEST);
    struct lg_start r = lg_config_start_for(&cfg, "r/x");
    ck_assert_int_eq(r.kind, LG_START_REWIND);
    ck_assert_uint_eq(r.rewind, 25);
    ck_assert_int_eq(lg_config_start_for(&cfg, "n/x").kind, LG_START_NOW);
    ck_assert_int_eq(lg_config_start_for(&cfg, "other").kind, LG_START_NOW);
    json_t *printed = lg_topic_rules_json(cfg.topic_rules, cfg.topic_rule_count);
    char *text = json_dumps(printed, JSON_COMPACT | JSON_PRESERVE_ORDER);
    ck_assert_str_eq(text, "[{\"match\":\"l/*\",\"start\":\"latest\"},"
                           "{\"match\":\"r/*\",\"rewind\":25},"
                           "{\"match\":\"n/*\",\"start\":\"now\"},"
                           "{\"match\":\"*\",\"on_slow\":\"conflate\"}]");
    free(text);
    json_decref(printed);
    lg_config_release(&cfg);
}
END_TEST

static const struct {
    const char *rules;
    const char *err;
} lg_bad_start_cases[] = {
    {"[{\"match\":\"a\",\"start\":\"first\"}]",
     "topic_rules[0].start: expected \"now\" or \"latest\" (for the last N events, \"rewind\": N)"},
    {"[{\"match\":\"a\",\"start\":3}]",
     "topic_rules[0].start: expected \"now\" or \"latest\" (for the last N events, \"rewind\": N)"},
    {"[{\"match\":\"a\",\"rewind\":-1}]",
     "topic_rules[0].rewind: -1 is out of range (allowed 0..1000000 events, the most "
     "history.max_events may retain)"},
    {"[{\"match\":\"a\",\"rewind\":1000001}]",
     "topic_rules[0].rewind: 1000001 is out of range (allowed 0..1000000 events, the most "
     "history.max_events may retain)"},
    {"[{\"match\":\"a\",\"rewind\":\"5\"}]",
     "topic_rules[0].rewind: expected a whole number of events, got string"},
    {"[{\"match\":\"a\",\"start\":\"latest\",\"rewind\":5}]",
     "topic_rules[0]: give either \"start\" or \"rewind\", not both"},
};

START_TEST(test_start_rules_refused)
{
    struct lg_config cfg;
    char err[LG_CONFIG_ERR_MAX] = "";
    ck_assert_int_eq(lg_test_load_rules(&cfg, lg_bad_start_cases[_i].rules, err), -1);
    ck_assert_str_eq(err, lg_bad_start_cases[_i].err);
    lg_config_release(&cfg);
}
END_TEST

/* ---- Document topics ---------------------------------------------------------------------- */

START_TEST(test_document_rules_lookup_print_and_refuse)
{
    struct lg_config cfg;
    char err[LG_CONFIG_ERR_MAX] = "";
    const char *rules = "[{\"match\":\"doc/*\",\"document\":true},"
                        "{\"match\":\"d*\",\"document\":false},"
                        "{\"match\":\"*\",\"on_slow\":\"conflate\"}]";
    ck_assert_msg(lg_test_load_rules(&cfg, rules, err) == 0, "%s", err);
    ck_assert(lg_config_document_for(&cfg, "doc/a"));
    ck_assert(!lg_config_document_for(&cfg, "dx"));
    ck_assert(!lg_config_document_for(&cfg, "other"));
    json_t *printed = lg_topic_rules_json(cfg.topic_rules, cfg.topic_rule_count);
    char *text = json_dumps(printed, JSON_COMPACT | JSON_PRESERVE_ORDER);
    ck_assert_str_eq(text, rules);
    free(text);
    json_decref(printed);
    lg_config_release(&cfg);

    ck_assert_int_eq(lg_test_load_rules(&cfg, "[{\"match\":\"a\",\"document\":1}]", err), -1);
    ck_assert_str_eq(err, "topic_rules[0].document: expected true or false, got integer");
    lg_config_release(&cfg);
}
END_TEST

/* ---- Runner ------------------------------------------------------------------------------- */

static Suite *lg_topic_rules_suite(void)
{
    Suite *s = suite_create("topic_rules");

    TCase *tc = LG_TCASE(s, "glob", NULL, NULL, test_glob_pathological, test_glob_null);
    tcase_add_loop_test(tc, test_glob_table, 0,
                        (int)(sizeof(lg_glob_cases) / sizeof(lg_glob_cases[0])));
    tcase_add_loop_test(tc, test_glob_edges, 0,
                        (int)(sizeof(lg_glob_edge_cases) / sizeof(lg_glob_edge_cases[0])));
    tcase_set_timeout(tc, 60);
    LG_TCASE(s, "lookup", NULL, NULL, test_first_match_wins,
             test_first_match_unset_fields_come_from_top_level);
    LG_TCASE(s, "parse", NULL, NULL, test_pattern_every_byte, test_pattern_length_bounds,
             test_parse_replace_resolve_print, test_glob_match_any);
    tc = LG_TCASE(s, "start", NULL, NULL, test_start_rules_lookup_and_print);
    tcase_add_loop_test(tc, test_start_rules_refused, 0,
                        (int)(sizeof(lg_bad_start_cases) / sizeof(lg_bad_start_cases[0])));
    LG_TCASE(s, "document", NULL, NULL, test_document_rules_lookup_print_and_refuse);
    return s;
}

LG_CHECK_MAIN(lg_topic_rules_suite)
