/*
 * test_config.c - unit tests for src/config/config.c: defaults, strict validation and its exact
 * messages, topic_rules inheritance, and that config/livegate.json and docs/configuration.md
 * stay in step with the settings table. Glob matching and the rule lookup on their own are in
 * test_topic_rules.c.
 *
 * Repository files are found through $LG_SOURCE_DIR, or else by walking up from the current
 * directory (ctest runs unit tests inside the build tree).
 */
#include <check.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "config.h"

#include "check_main.h"
#include "unit_support.h"

/* ---- Helpers ------------------------------------------------------------------------------ */

/* Whole file as a NUL-terminated string (malloc'd), or NULL. */
static char *lg_test_slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    char *buf = NULL;
    size_t len = 0, cap = 0, n;
    do {
        if (len + 4096 + 1 > cap) {
            cap = (len + 4096 + 1) * 2;
            char *grown = realloc(buf, cap);
            if (grown == NULL) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = grown;
        }
        n = fread(buf + len, 1, 4096, f);
        len += n;
    } while (n > 0);
    fclose(f);
    buf[len] = '\0';
    return buf;
}

/* The path of a repository file (relative to the repo root) in out, or false. Tries
 * $LG_SOURCE_DIR, then every directory from the cwd upwards, then the directory this source
 * file was compiled from (CMake passes absolute paths, so a build tree outside the repo works). */
static bool lg_test_repo_file(const char *rel, char *out, size_t cap)
{
    const char *root = getenv("LG_SOURCE_DIR");
    if (root != NULL && root[0] != '\0')
        return snprintf(out, cap, "%s/%s", root, rel) < (int)cap && access(out, R_OK) == 0;
    char dir[PATH_MAX];
    if (getcwd(dir, sizeof(dir)) != NULL) {
        for (;;) {
            if (snprintf(out, cap, "%s/%s", dir, rel) < (int)cap && access(out, R_OK) == 0)
                return true;
            char *slash = strrchr(dir, '/');
            if (slash == NULL || slash == dir)
                break;
            *slash = '\0';
        }
    }
    static const char self[] = "tests/unit/test_config.c", file[] = __FILE__;
    size_t root_len = strlen(file) - strlen(self);
    if (strlen(file) >= strlen(self) && strcmp(&file[root_len], self) == 0)
        return snprintf(out, cap, "%.*s%s", (int)root_len, file, rel) < (int)cap &&
               access(out, R_OK) == 0;
    return false;
}

/* The text of repository file rel (malloc'd; its path in path): it must be found and read. */
static char *lg_test_repo_text(const char *rel, char *path, size_t cap)
{
    ck_assert_msg(lg_test_repo_file(rel, path, cap), "%s not found (set LG_SOURCE_DIR)", rel);
    char *text = lg_test_slurp(path);
    ck_assert_ptr_nonnull(text);
    return text;
}

/* Defaults, then json. Return value: what lg_config_load_string() returned. */
static int lg_test_load(struct lg_config *cfg, const char *json, char *err)
{
    lg_config_init_defaults(cfg);
    err[0] = '\0';
    return lg_config_load_string(cfg, json, err);
}

static char *lg_test_defaults_json(void)
{
    struct lg_config cfg;
    lg_config_init_defaults(&cfg);
    char *text = lg_config_to_json(&cfg);
    lg_config_release(&cfg);
    return text;
}

/*
 * The numeric settings test_defaults and test_valid_config check: where each is in struct
 * lg_config, its built-in default, and its value once test_valid_config's file is loaded (the
 * default where that file leaves the setting alone).
 */
struct lg_setting_case {
    const char *name;
    size_t offset, size;
    uint64_t defaults, valid;
};

#define LG_SETTING(field)                                                                          \
#field, offsetof(struct lg_config, field), sizeof(((struct lg_config *)0)->field)

static const struct lg_setting_case lg_settings[] = {
    {LG_SETTING(public_addr.port), 8080, 9000},
    {LG_SETTING(control_addr.port), 8081, 0},
    {LG_SETTING(workers), 0, 64},
    {LG_SETTING(log_level), LG_LOG_INFO, LG_LOG_DEBUG},
    {LG_SETTING(history.max_events), 1000, 1},
    {LG_SETTING(history.max_bytes), 4194304, 17179869184ull},
    {LG_SETTING(history.max_age_ms), 3600000, 0},
    {LG_SETTING(client_queue.max_events), 1024, 1000000},
    {LG_SETTING(client_queue.max_bytes), 1048576, 1048576},
    {LG_SETTING(client_queue.max_lag_ms), 30000, 30000},
    {LG_SETTING(client_queue.on_slow), LG_SLOW_DROP_OLDEST, LG_SLOW_DISCONNECT},
    {LG_SETTING(topic_rule_count), 0, 0},
    {LG_SETTING(sse.retry_ms), 3000, 3000},
    {LG_SETTING(sse.heartbeat_ms), 15000, 1000},
    {LG_SETTING(websocket.ping_interval_ms), 30000, 30000},
    {LG_SETTING(websocket.pong_timeout_ms), 10000, 10000},
    {LG_SETTING(websocket.max_message_bytes), 65536, 65536},
    {LG_SETTING(websocket.max_bad_messages), 5, 1},
    {LG_SETTING(poll.default_timeout_ms), 25000, 60000},
    {LG_SETTING(poll.max_timeout_ms), 60000, 60000},
    {LG_SETTING(poll.max_batch), 100, 100},
    {LG_SETTING(limits.max_event_bytes), 65536, 1048576},
    {LG_SETTING(limits.max_batch_bytes), 1048576, 1048576},
    {LG_SETTING(limits.max_topics), 100000, 100000},
    {LG_SETTING(limits.max_topics_per_client), 64, 1},
    {LG_SETTING(limits.max_connections), 19400, 19400},
    {LG_SETTING(limits.max_request_head_bytes), 8192, 8192},
    {LG_SETTING(limits.request_timeout_ms), 10000, 10000},
    {LG_SETTING(limits.keepalive_timeout_ms), 10000, 10000},
    {LG_SETTING(limits.max_retained_bytes), 1073741824, 1073741824},
    {LG_SETTING(limits.worker_inbox_events), 8, 8},
    {LG_SETTING(limits.publish_wait_ms), 2000, 2000},
    {LG_SETTING(limits.control_max_connections), 512, 512},
    {LG_SETTING(socket_send_buffer_bytes), 131072, 0},
    {LG_SETTING(write_batch_bytes), 65536, 4096},
    {LG_SETTING(control_busy_poll_us), 50, 50},
    {LG_SETTING(drain_timeout_ms), 5000, 0},
};

#undef LG_SETTING

/* The value of setting s in cfg (an unsigned or enum field of 2, 4 or 8 bytes). */
static uint64_t lg_setting_in(const struct lg_config *cfg, const struct lg_setting_case *s)
{
    const unsigned char *at = (const unsigned char *)cfg + s->offset;
    if (s->size == sizeof(uint64_t)) {
        uint64_t v;
        memcpy(&v, at, sizeof v);
        return v;
    }
    if (s->size == sizeof(uint32_t)) {
        uint32_t v;
        memcpy(&v, at, sizeof v);
        return v;
    }
    ck_assert_msg(s->size == sizeof(uint16_t), "%s: a field of %zu bytes", s->name, s->size);
    uint16_t v;
    memcpy(&v, at, sizeof v);
    return v;
}

/* Every numeric setting of cfg has its default, or its value after test_valid_config's file. */
static void lg_assert_settings(const struct lg_config *cfg, bool valid_file)
{
    for (size_t i = 0; i < sizeof lg_settings / sizeof lg_settings[0]; i++) {
        const struct lg_setting_case *s = &lg_settings[i];
        uint64_t got = lg_setting_in(cfg, s), want = valid_file ? s->valid : s->defaults;
        ck_assert_msg(got == want, "%s is %llu, want %llu", s->name, (unsigned long long)got,
                      (unsigned long long)want);
    }
}

/* ---- Defaults and the shipped file --------------------------------------------------------- */

START_TEST(test_defaults)
{
    struct lg_config cfg;
    lg_config_init_defaults(&cfg);
    ck_assert_str_eq(cfg.public_addr.host, "0.0.0.0");
    ck_assert_str_eq(cfg.control_addr.host, "127.0.0.1");
    ck_assert_str_eq(cfg.static_dir, "");
    ck_assert_ptr_null(cfg.topic_rules);
    lg_assert_settings(&cfg, false);
    lg_config_release(&cfg);
}
END_TEST

/* --print-config with no file must print config/livegate.json byte for byte. */
START_TEST(test_defaults_match_repo_file)
{
    char path[PATH_MAX];
    char *file = lg_test_repo_text("config/livegate.json", path, sizeof(path));
    char *printed = lg_test_defaults_json();
    ck_assert_ptr_nonnull(printed);
    ck_assert_str_eq(printed, file);

    /* And loading the file changes nothing. */
    struct lg_config cfg;
    char err[LG_CONFIG_ERR_MAX] = "";
    lg_config_init_defaults(&cfg);
    ck_assert_msg(lg_config_load_file(&cfg, path, err) == 0, "%s", err);
    char *reloaded = lg_config_to_json(&cfg);
    ck_assert_str_eq(reloaded, file);
    free(reloaded);
    lg_config_release(&cfg);
    free(printed);
    free(file);
}
END_TEST

/* Every leaf of the printed defaults, and every topic_rules field, appears as `key` in the docs. */
static void lg_test_collect_keys(json_t *obj, const char *prefix, const char *doc)
{
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v) {
        char path[256];
        snprintf(path, sizeof(path), "%s%s", prefix, key);
        if (json_is_object(v)) {
            char child[260];
            snprintf(child, sizeof(child), "%s.", path);
            lg_test_collect_keys(v, child, doc);
            continue;
        }
        char needle[270];
        snprintf(needle, sizeof(needle), "`%s`", path);
        ck_assert_msg(strstr(doc, needle) != NULL, "docs/configuration.md does not list %s",
                      needle);
    }
}

START_TEST(test_docs_list_every_setting)
{
    char path[PATH_MAX];
    char *doc = lg_test_repo_text("docs/configuration.md", path, sizeof(path));
    char *printed = lg_test_defaults_json();
    json_t *root = json_loads(printed, 0, NULL);
    ck_assert_ptr_nonnull(root);
    lg_test_collect_keys(root, "", doc);
    const char *rule_keys[] = {"`topic_rules[].match`", "`topic_rules[].on_slow`",
                               "`topic_rules[].history`"};
    for (size_t i = 0; i < sizeof(rule_keys) / sizeof(rule_keys[0]); i++)
        ck_assert_msg(strstr(doc, rule_keys[i]) != NULL, "docs do not list %s", rule_keys[i]);
    json_decref(root);
    free(printed);
    free(doc);
}
END_TEST

/* The text of doc between the first `from` and the next `to` after it (malloc'd). */
static char *lg_test_doc_part(const char *doc, const char *from, const char *to)
{
    const char *a = strstr(doc, from);
    ck_assert_msg(a != NULL, "the docs lost \"%s\"", from);
    const char *b = strstr(a + strlen(from), to);
    ck_assert_msg(b != NULL, "nothing ends \"%s\" with \"%s\"", from, to);
    return strndup(a, (size_t)(b - a));
}

struct lg_reload_docs {
    const char *live, *restart, *summary; /* operations.md's two tables, configuration.md's */
    char sections_with_live[16][32];      /* sections holding a live setting */
    size_t section_count;
};

static bool lg_test_names(const char *text, const char *key)
{
    char needle[300];
    snprintf(needle, sizeof needle, "`%.200s`", key);
    return strstr(text, needle) != NULL;
}

static void lg_test_note_live_section(const char *key, bool live, void *ctx)
{
    struct lg_reload_docs *d = ctx;
    const char *dot = strchr(key, '.');
    if (!live || !dot)
        return;
    for (size_t i = 0; i < d->section_count; i++)
        if (strncmp(d->sections_with_live[i], key, (size_t)(dot - key)) == 0 &&
            d->sections_with_live[i][dot - key] == '\0')
            return;
    ck_assert_uint_lt(d->section_count, 16);
    snprintf(d->sections_with_live[d->section_count++], 32, "%.*s", (int)(dot - key), key);
}

static void lg_test_check_reload_row(const char *key, bool live, void *ctx)
{
    const struct lg_reload_docs *d = ctx;
    ck_assert_msg(lg_test_names(d->live, key) == live,
                  "operations.md \"What changes live\" %s `%s`", live ? "misses" : "lists", key);
    ck_assert_msg(lg_test_names(d->summary, key) == live,
                  "configuration.md \"What a reload changes\" %s `%s`",
                  live ? "misses" : "lists", key);
    if (live) {
        ck_assert_msg(!lg_test_names(d->restart, key), "operations.md lists live `%s` as "
                      "needing a restart", key);
        return;
    }
    const char *dot = strchr(key, '.');
    char section[64], pattern[80];
    snprintf(section, sizeof section, "%.*s", dot ? (int)(dot - key) : 0, key);
    snprintf(pattern, sizeof pattern, "%s.*", section);
    bool by_section = dot && lg_test_names(d->restart, pattern);
    for (size_t i = 0; by_section && i < d->section_count; i++)
        ck_assert_msg(strcmp(d->sections_with_live[i], section) != 0,
                      "operations.md says `%s` needs a restart, but some of it is live", pattern);
    ck_assert_msg(lg_test_names(d->restart, key) || by_section,
                  "operations.md does not say `%s` needs a restart", key);
}

/* docs/operations.md's Reload and configuration.md's summary agree with the table's .live
 * column, setting by setting: a key changes live in the docs exactly when it does in the
 * binary, and every other key is listed as needing a restart (by name, or as `section.*`
 * when nothing in the section is live). */
START_TEST(test_docs_list_live_settings)
{
    char path[PATH_MAX];
    char *ops = lg_test_repo_text("docs/operations.md", path, sizeof(path));
    char *conf = lg_test_repo_text("docs/configuration.md", path, sizeof(path));
    struct lg_reload_docs d = {
        .live = lg_test_doc_part(ops, "**What changes live**", "**Everything else needs"),
        .restart = lg_test_doc_part(ops, "**Everything else needs", "**How it is built.**"),
        .summary = lg_test_doc_part(conf, "### What a reload changes", "\n## "),
    };
    lg_config_each_setting(lg_test_note_live_section, &d);
    lg_config_each_setting(lg_test_check_reload_row, &d);
    free((char *)d.live), free((char *)d.restart), free((char *)d.summary);
    free(ops);
    free(conf);
}
END_TEST

/* ---- Valid files ----------------------------------------------------------------------------- */

START_TEST(test_valid_config)
{
    static const char json[] =
        "{\n"
        "  \"listen\": {\"public\": \"[::]:9000\", \"control\": \"localhost:0\"},\n"
        "  \"workers\": 64,\n"
        "  \"log_level\": \"debug\",\n"
        "  \"static_dir\": \"/srv/livegate/static\",\n"
        "  \"history\": {\"max_events\": 1, \"max_bytes\": 17179869184, \"max_age_ms\": 0},\n"
        "  \"client_queue\": {\"max_events\": 1000000, \"on_slow\": \"disconnect\"},\n"
        "  \"sse\": {\"heartbeat_ms\": 1000},\n"
        "  \"websocket\": {\"max_bad_messages\": 1},\n"
        "  \"poll\": {\"default_timeout_ms\": 60000, \"max_timeout_ms\": 60000},\n"
        "  \"limits\": {\"max_event_bytes\": 1048576, \"max_topics_per_client\": 1},\n"
        "  \"socket_send_buffer_bytes\": 0,\n"
        "  \"write_batch_bytes\": 4096,\n"
        "  \"drain_timeout_ms\": 0\n"
        "}\n";
    struct lg_config cfg;
    char err[LG_CONFIG_ERR_MAX];
    ck_assert_msg(lg_test_load(&cfg, json, err) == 0, "%s", err);
    ck_assert_str_eq(cfg.public_addr.host, "::");
    ck_assert_str_eq(cfg.control_addr.host, "localhost");
    ck_assert_str_eq(cfg.static_dir, "/srv/livegate/static");
    lg_assert_settings(&cfg, true);

    /* The printed form loads back to the same config. */
    char *printed = lg_config_to_json(&cfg);
    struct lg_config again;
    ck_assert_msg(lg_test_load(&again, printed, err) == 0, "%s", err);
    char *printed_again = lg_config_to_json(&again);
    ck_assert_str_eq(printed_again, printed);
    ck_assert_ptr_nonnull(strstr(printed, "\"public\": \"[::]:9000\""));
    free(printed_again);
    free(printed);
    lg_config_release(&again);
    lg_config_release(&cfg);
}
END_TEST

START_TEST(test_empty_object_keeps_defaults)
{
    struct lg_config cfg;
    char err[LG_CONFIG_ERR_MAX];
    ck_assert_int_eq(lg_test_load(&cfg, "{}", err), 0);
    char *printed = lg_config_to_json(&cfg);
    char *defaults = lg_test_defaults_json();
    ck_assert_str_eq(printed, defaults);
    free(defaults);
    free(printed);
    lg_config_release(&cfg);
}
END_TEST

START_TEST(test_load_file)
{
    char path[] = "/tmp/lg_test_config_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    static const char json[] = "{\"workers\": 3, \"log_level\": \"warn\"}";
    ck_assert_int_eq(write(fd, json, sizeof(json) - 1), (ssize_t)(sizeof(json) - 1));
    close(fd);
    struct lg_config cfg;
    char err[LG_CONFIG_ERR_MAX] = "";
    lg_config_init_defaults(&cfg);
    int rc = lg_config_load_file(&cfg, path, err);
    unlink(path);
    ck_assert_msg(rc == 0, "%s", err);
    ck_assert_uint_eq(cfg.workers, 3);
    ck_assert_int_eq(cfg.log_level, LG_LOG_WARN);
    lg_config_release(&cfg);
}
END_TEST

START_TEST(test_load_file_errors)
{
    struct lg_config cfg;
    char err[LG_CONFIG_ERR_MAX] = "";
    lg_config_init_defaults(&cfg);
    ck_assert_int_eq(lg_config_load_file(&cfg, "/nonexistent/livegate.json", err), -1);
    ck_assert_str_eq(err, "cannot open: No such file or directory");
    ck_assert_int_eq(lg_config_load_file(&cfg, "/tmp", err), -1);
    ck_assert_str_eq(err, "cannot read: Is a directory");
    lg_config_release(&cfg);
}
END_TEST

/* ---- Invalid files: the exact message for each ------------------------------------------- */

struct lg_error_case {
    const char *json;
    const char *message;
};

#define LG_TOP_KEYS                                                                                \
    "listen, workers, log_level, log_format, static_dir, trusted_proxies, history, "               \
    "client_queue, topic_rules, sse, websocket, poll, limits, socket_send_buffer_bytes, "          \
    "write_batch_bytes, batched_writes, control_busy_poll_us, drain_timeout_ms, "                 \
    "drain_window_ms, redis, auth, allowed_origins, metrics, subscribe_hook, webhooks"
#define LG_PATTERN_CHARS                                                                           \
    "(patterns use A-Z a-z 0-9 _ - . / : ~, a leading $, and the wildcards * ?)"

static const struct lg_error_case lg_error_cases[] = {
    /* unknown keys, at every level, with what is allowed there */
    { "{\"wrokers\": 4}", "wrokers: unknown key; allowed top-level keys: " LG_TOP_KEYS },
    { "{\"client_queue\": {\"max_evnts\": 5}}",
      "client_queue.max_evnts: unknown key; allowed keys in client_queue: max_events, "
      "max_bytes, max_lag_ms, on_slow" },
    { "{\"listen\": {\"admin\": \"1.2.3.4:5\"}}",
      "listen.admin: unknown key; allowed keys in listen: public, control" },
    { "{\"limits.max_topics\": 5}",
      "limits.max_topics: unknown key; allowed top-level keys: " LG_TOP_KEYS },
    { "{\"\": 5}", ": unknown key; allowed top-level keys: " LG_TOP_KEYS },
    { "{\"a\\nb\": 5}", "a?b: unknown key; allowed top-level keys: " LG_TOP_KEYS },
    /* wrong types */
    { "{\"client_queue\": {\"max_events\": \"10\"}}",
      "client_queue.max_events: expected an integer, got string" },
    { "{\"client_queue\": {\"max_events\": 10.0}}",
      "client_queue.max_events: expected an integer, got real" },
    { "{\"history\": {\"max_age_ms\": 1.5e3}}",
      "history.max_age_ms: expected an integer, got real" },
    { "{\"workers\": true}", "workers: expected an integer, got boolean" },
    { "{\"workers\": null}", "workers: expected an integer, got null" },
    { "{\"workers\": [1]}", "workers: expected an integer, got array" },
    { "{\"history\": 5}", "history: expected an object, got integer" },
    { "{\"static_dir\": 5}", "static_dir: expected a string, got integer" },
    { "{\"log_level\": 3}",
      "log_level: expected a string (one of error, warn, info, debug), got integer" },
    { "{\"listen\": {\"control\": 8081}}",
      "listen.control: expected a string \"HOST:PORT\", got integer" },
    /* out of range, below and above, for 32- and 64-bit settings */
    { "{\"client_queue\": {\"max_events\": 0}}",
      "client_queue.max_events: 0 is out of range (allowed 1..1000000)" },
    { "{\"client_queue\": {\"max_events\": 1000001}}",
      "client_queue.max_events: 1000001 is out of range (allowed 1..1000000)" },
    { "{\"client_queue\": {\"max_events\": -1}}",
      "client_queue.max_events: -1 is out of range (allowed 1..1000000)" },
    { "{\"workers\": 65}", "workers: 65 is out of range (allowed 0..64)" },
    { "{\"history\": {\"max_bytes\": 17179869185}}",
      "history.max_bytes: 17179869185 is out of range (allowed 1..17179869184)" },
    { "{\"limits\": {\"max_topics_per_client\": 65}}",
      "limits.max_topics_per_client: 65 is out of range (allowed 1..64)" },
    { "{\"limits\": {\"keepalive_timeout_ms\": 99}}",
      "limits.keepalive_timeout_ms: 99 is out of range (allowed 100..3600000)" },
    { "{\"sse\": {\"heartbeat_ms\": 999}}",
      "sse.heartbeat_ms: 999 is out of range (allowed 1000..3600000)" },
    { "{\"write_batch_bytes\": 4095}",
      "write_batch_bytes: 4095 is out of range (allowed 4096..4194304)" },
    { "{\"poll\": {\"max_batch\": 10001}}",
      "poll.max_batch: 10001 is out of range (allowed 1..10000)" },
    /* enums list what they accept */
    { "{\"log_level\": \"verbose\"}",
      "log_level: \"verbose\" is not one of error, warn, info, debug" },
    { "{\"client_queue\": {\"on_slow\": \"block\"}}",
      "client_queue.on_slow: \"block\" is not one of drop-oldest, disconnect, conflate" },
    /* addresses */
    { "{\"listen\": {\"public\": \"0.0.0.0\"}}",
      "listen.public: \"0.0.0.0\" has no port; expected HOST:PORT (e.g. \"127.0.0.1:8080\") or "
      "[IPv6]:PORT" },
    { "{\"listen\": {\"public\": \"0.0.0.0:65536\"}}",
      "listen.public: \"0.0.0.0:65536\": port 65536 is out of range (allowed 0..65535)" },
    { "{\"listen\": {\"public\": \"::1:80\"}}",
      "listen.public: \"::1:80\": an IPv6 address needs brackets, e.g. \"[::1]:8080\"" },
    /* checks across settings name both keys */
    { "{\"poll\": {\"default_timeout_ms\": 70000}}",
      "poll.default_timeout_ms (70000) must not exceed poll.max_timeout_ms (60000)" },
    { "{\"limits\": {\"max_batch_bytes\": 1000}}",
      "limits.max_event_bytes (65536) must not exceed limits.max_batch_bytes (1000)" },
    /* Sentinel: a master name with its sentinels, instead of a URL or shards */
    { "{\"redis\": {\"sentinels\": [\"redis://127.0.0.1:26379\"]}}",
      "redis.sentinels needs redis.master_name (the name they monitor the master by)" },
    { "{\"redis\": {\"master_name\": \"m\"}}",
      "redis.master_name needs redis.sentinels (who to ask for its address)" },
    { "{\"redis\": {\"sentinels\": [\"redis://h:1\"], \"master_name\": \"m\", "
      "\"url\": \"redis://h:2\"}}",
      "redis.sentinels and redis.url: set one, not both (with Sentinel the master's address "
      "comes from the sentinels; shards over Sentinel are not supported)" },
    { "{\"redis\": {\"sentinels\": [\"redis://h:1\"], \"master_name\": \"m\", "
      "\"shards\": [\"redis://h:2\", \"redis://h:3\"]}}",
      "redis.sentinels and redis.shards: set one, not both (with Sentinel the master's address "
      "comes from the sentinels; shards over Sentinel are not supported)" },
    { "{\"redis\": {\"sentinels\": [\"redis://h\"], \"master_name\": \"m\"}}",
      "redis.sentinels[0]: a sentinel is redis://HOST:PORT" },
    { "{\"redis\": {\"wait_replicas\": 17}}",
      "redis.wait_replicas: 17 is out of range (allowed 0..16)" },
    { "{\"redis\": {\"wait_replicas\": 1, \"wait_timeout_ms\": 2000}}",
      "redis.wait_timeout_ms (2000) must be less than redis.command_timeout_ms (2000): a WAIT "
      "holds its connection that long" },
    /* topic_rules */
    { "{\"topic_rules\": {}}", "topic_rules: expected an array, got object" },
    { "{\"topic_rules\": [\"a\"]}", "topic_rules[0]: expected an object, got string" },
    { "{\"topic_rules\": [{\"match\": \"a\"}, {\"on_slow\": \"conflate\"}]}",
      "topic_rules[1]: \"match\" is required (a topic pattern such as \"prices/*\")" },
    { "{\"topic_rules\": [{\"match\": 7}]}",
      "topic_rules[0].match: expected a string, got integer" },
    { "{\"topic_rules\": [{\"match\": \"a b\"}]}",
      "topic_rules[0].match: byte 0x20 at offset 1 is not allowed " LG_PATTERN_CHARS },
    { "{\"topic_rules\": [{\"match\": \"a$\"}]}",
      "topic_rules[0].match: byte 0x24 at offset 1 is not allowed " LG_PATTERN_CHARS },
    { "{\"topic_rules\": [{\"match\": \"\"}]}",
      "topic_rules[0].match: a pattern of 0 bytes is out of range (allowed 1..128 bytes)" },
    { "{\"topic_rules\": [{\"match\": \"a\", \"priority\": 1}]}",
      "topic_rules[0].priority: unknown key; allowed keys in topic_rules[0]: match, on_slow, "
      "history, start, rewind, client_publish, document, presence, presence_max_members, "
      "occupancy_events" },
    { "{\"topic_rules\": [{\"match\": \"a\", \"client_publish\": 1}]}",
      "topic_rules[0].client_publish: expected true or false, got integer" },
    { "{\"topic_rules\": [{\"match\": \"a\", \"presence\": 1}]}",
      "topic_rules[0].presence: expected true or false, got integer" },
    { "{\"topic_rules\": [{\"match\": \"a\", \"presence_max_members\": 0}]}",
      "topic_rules[0].presence_max_members: expected a whole number of members in 1..100000" },
    { "{\"topic_rules\": [{\"match\": \"a\", \"occupancy_events\": \"yes\"}]}",
      "topic_rules[0].occupancy_events: expected true or false, got string" },
    { "{\"topic_rules\": [{\"match\": \"a\", \"on_slow\": \"block\"}]}",
      "topic_rules[0].on_slow: \"block\" is not one of drop-oldest, disconnect, conflate" },
    { "{\"topic_rules\": [{\"match\": \"a\", \"history\": []}]}",
      "topic_rules[0].history: expected an object, got array" },
    { "{\"topic_rules\": [{\"match\": \"a\", \"history\": {\"max_events\": 0}}]}",
      "topic_rules[0].history.max_events: 0 is out of range (allowed 1..1000000)" },
    { "{\"topic_rules\": [{\"match\": \"a\", \"history\": {\"size\": 1}}]}",
      "topic_rules[0].history.size: unknown key; allowed keys in topic_rules[0].history: "
      "max_events, max_bytes, max_age_ms" },
    /* the document itself */
    { "[1]", "the document must be a JSON object, got array" },
};

#define LG_ERROR_CASE_COUNT ((int)(sizeof(lg_error_cases) / sizeof(lg_error_cases[0])))

START_TEST(test_error_messages)
{
    const struct lg_error_case *c = &lg_error_cases[_i];
    struct lg_config cfg;
    char err[LG_CONFIG_ERR_MAX];
    int rc = lg_test_load(&cfg, c->json, err);
    lg_config_release(&cfg);
    ck_assert_msg(rc == -1, "case %d was accepted: %.80s", _i, c->json);
    ck_assert_msg(strcmp(err, c->message) == 0, "case %d (%.80s)\n got: %s\nwant: %s", _i,
                  c->json, err, c->message);
}
END_TEST

START_TEST(test_static_dir_length)
{
    /* 4095 bytes are accepted, 4096 are not. */
    char json[4200];
    int prefix = snprintf(json, sizeof(json), "{\"static_dir\": \"");
    memset(json + prefix, 'd', 4096);
    snprintf(json + prefix + 4096, sizeof(json) - (size_t)prefix - 4096, "\"}");
    struct lg_config cfg;
    char err[LG_CONFIG_ERR_MAX];
    ck_assert_int_eq(lg_test_load(&cfg, json, err), -1);
    ck_assert_str_eq(err, "static_dir: a string of 4096 bytes is out of range (allowed 0..4095 "
                          "bytes)");
    lg_config_release(&cfg);
    memmove(json + prefix + 4095, json + prefix + 4096, 3);
    ck_assert_msg(lg_test_load(&cfg, json, err) == 0, "%s", err);
    ck_assert_uint_eq(strlen(cfg.static_dir), 4095);
    lg_config_release(&cfg);
}
END_TEST

START_TEST(test_duplicate_keys_rejected)
{
    static const char *const docs[] = {
        "{\"workers\": 1, \"workers\": 2}",
        "{\"history\": {\"max_events\": 5, \"max_events\": 6}}",
        "{\"topic_rules\": [{\"match\": \"a\", \"match\": \"b\"}]}",
    };
    for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
        struct lg_config cfg;
        char err[LG_CONFIG_ERR_MAX];
        int rc = lg_test_load(&cfg, docs[i], err);
        lg_config_release(&cfg);
        ck_assert_int_eq(rc, -1);
        ck_assert_msg(strncmp(err, "invalid JSON at line 1, column ", 31) == 0, "%s", err);
        ck_assert_msg(strstr(err, "duplicate object key") != NULL, "%s", err);
    }
}
END_TEST

START_TEST(test_syntax_errors)
{
    struct lg_config cfg;
    char err[LG_CONFIG_ERR_MAX];
    ck_assert_int_eq(lg_test_load(&cfg, "{\n  \"workers\": ,\n}", err), -1);
    ck_assert_msg(strncmp(err, "invalid JSON at line 2, column ", 31) == 0, "%s", err);
    lg_config_release(&cfg);
    ck_assert_int_eq(lg_test_load(&cfg, "{} {}", err), -1); /* trailing garbage */
    lg_config_release(&cfg);
    ck_assert_int_eq(lg_test_load(&cfg, "", err), -1);
    lg_config_release(&cfg);
    /* A key with an embedded NUL must not alias "workers". */
    ck_assert_int_eq(lg_test_load(&cfg, "{\"workers\\u0000x\": 1}", err), -1);
    ck_assert_uint_eq(cfg.workers, 0);
    lg_config_release(&cfg);
}
END_TEST

/* ---- topic_rules --------------------------------------------------------------------------- */

START_TEST(test_topic_rules_inherit_after_whole_file)
{
    /* The rules come before "history": they must inherit the file's history, not the
     * built-in default that was current when the rules were read. */
    static const char json[] =
        "{\"topic_rules\": ["
        "   {\"match\": \"prices/*\", \"on_slow\": \"conflate\","
        "    \"history\": {\"max_events\": 10}},"
        "   {\"match\": \"prices/eur\", \"on_slow\": \"disconnect\"},"
        "   {\"match\": \"chat/??\", \"history\": {\"max_age_ms\": 0}},"
        "   {\"match\": \"logs/*\", \"history\": {}}"
        " ],"
        " \"history\": {\"max_events\": 50, \"max_bytes\": 999},"
        " \"client_queue\": {\"on_slow\": \"disconnect\"}}";
    struct lg_config cfg;
    char err[LG_CONFIG_ERR_MAX];
    ck_assert_msg(lg_test_load(&cfg, json, err) == 0, "%s", err);
    ck_assert_uint_eq(cfg.topic_rule_count, 4);
    ck_assert_str_eq(cfg.topic_rules[0].match, "prices/*");
    ck_assert_uint_eq(cfg.topic_rules[0].history_given, LG_HISTORY_GIVEN_MAX_EVENTS);

    /* First matching rule wins, even though rule 1 matches exactly. */
    lg_assert_topic_gets(&cfg, "prices/eur", LG_SLOW_CONFLATE, 10, 999, 3600000);
    /* The stored effective bounds agree. */
    ck_assert_uint_eq(cfg.topic_rules[0].history.max_events, 10);
    ck_assert_uint_eq(cfg.topic_rules[0].history.max_bytes, 999);

    /* A rule without on_slow takes client_queue.on_slow, not a later rule's. */
    lg_assert_topic_gets(&cfg, "chat/ab", LG_SLOW_DISCONNECT, 50, 999, 0);

    /* An empty history object inherits everything. */
    lg_assert_topic_gets(&cfg, "logs/x/y", LG_SLOW_DISCONNECT, 50, 999, 3600000);

    /* No rule: the top-level values. */
    lg_assert_topic_gets(&cfg, "chat/abc", LG_SLOW_DISCONNECT, 50, 999, 3600000);
    lg_assert_topic_gets(&cfg, "news", LG_SLOW_DISCONNECT, 50, 999, 3600000);

    /* Printed rules show only what was given, and load back the same. */
    char *printed = lg_config_to_json(&cfg);
    ck_assert_ptr_nonnull(strstr(printed, "\"match\": \"logs/*\",\n      \"history\": {}"));
    ck_assert_ptr_null(strstr(printed, "\"max_events\": 50,\n        \"max_bytes\""));
    struct lg_config again;
    ck_assert_msg(lg_test_load(&again, printed, err) == 0, "%s", err);
    char *printed_again = lg_config_to_json(&again);
    ck_assert_str_eq(printed_again, printed);
    free(printed_again);
    free(printed);
    lg_config_release(&again);
    lg_config_release(&cfg);
}
END_TEST

/* The example in docs/configuration.md, with the answers its table gives. */
START_TEST(test_topic_rules_docs_example)
{
    static const char json[] =
        "{\"history\": {\"max_events\": 1000, \"max_bytes\": 4194304, \"max_age_ms\": 3600000},"
        " \"client_queue\": {\"on_slow\": \"drop-oldest\"},"
        " \"topic_rules\": ["
        "  {\"match\": \"prices/*\", \"on_slow\": \"conflate\", \"history\": {\"max_events\": 10}},"
        "  {\"match\": \"orders/??\", \"on_slow\": \"disconnect\"},"
        "  {\"match\": \"audit/*\", \"history\": {\"max_age_ms\": 0, \"max_bytes\": 67108864}},"
        "  {\"match\": \"boards/*\", \"document\": true}"
        " ]}";
    static const struct {
        const char *topic;
        enum lg_slow_policy policy;
        uint32_t max_events;
        uint64_t max_bytes, max_age_ms;
    } rows[] = {
        { "prices/eur", LG_SLOW_CONFLATE, 10, 4194304, 3600000 },
        { "prices/eur/intraday", LG_SLOW_CONFLATE, 10, 4194304, 3600000 },
        { "orders/eu", LG_SLOW_DISCONNECT, 1000, 4194304, 3600000 },
        { "orders/emea", LG_SLOW_DROP_OLDEST, 1000, 4194304, 3600000 },
        { "audit/login", LG_SLOW_DROP_OLDEST, 1000, 67108864, 0 },
        { "boards/q1", LG_SLOW_DROP_OLDEST, 1000, 4194304, 3600000 },
    };
    struct lg_config cfg;
    char err[LG_CONFIG_ERR_MAX];
    ck_assert_msg(lg_test_load(&cfg, json, err) == 0, "%s", err);
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
        lg_assert_topic_gets(&cfg, rows[i].topic, rows[i].policy, rows[i].max_events,
                             rows[i].max_bytes, rows[i].max_age_ms);
    ck_assert(lg_config_document_for(&cfg, "boards/q1"));
    ck_assert(!lg_config_document_for(&cfg, "prices/eur"));
    lg_config_release(&cfg);
}
END_TEST

START_TEST(test_topic_rules_default_policy)
{
    struct lg_config cfg;
    char err[LG_CONFIG_ERR_MAX];
    lg_config_init_defaults(&cfg);
    ck_assert_int_eq(lg_config_policy_for(&cfg, "anything"), LG_SLOW_DROP_OLDEST);
    ck_assert_uint_eq(lg_config_history_for(&cfg, "anything").max_events, 1000);
    lg_config_release(&cfg);

    ck_assert_msg(lg_test_load(&cfg, "{\"topic_rules\": [{\"match\": \"$sys/*\"}]}", err) == 0,
                  "%s", err);
    ck_assert_int_eq(lg_config_policy_for(&cfg, "$sys/stats"), LG_SLOW_DROP_OLDEST);
    ck_assert(!cfg.topic_rules[0].has_on_slow);
    ck_assert(!cfg.topic_rules[0].has_history);
    lg_config_release(&cfg);
}
END_TEST

START_TEST(test_second_load_reresolves_rules)
{
    struct lg_config cfg;
    char err[LG_CONFIG_ERR_MAX];
    ck_assert_int_eq(lg_test_load(&cfg, "{\"topic_rules\": [{\"match\": \"a\", \"history\": "
                                        "{\"max_bytes\": 7}}]}", err), 0);
    ck_assert_int_eq(lg_config_load_string(&cfg, "{\"history\": {\"max_events\": 3}}", err), 0);
    ck_assert_uint_eq(cfg.topic_rule_count, 1);
    ck_assert_uint_eq(cfg.topic_rules[0].history.max_events, 3);
    ck_assert_uint_eq(cfg.topic_rules[0].history.max_bytes, 7);
    /* A later topic_rules replaces the earlier list. */
    ck_assert_int_eq(lg_config_load_string(&cfg, "{\"topic_rules\": []}", err), 0);
    ck_assert_uint_eq(cfg.topic_rule_count, 0);
    lg_config_release(&cfg);
    lg_config_release(&cfg); /* releasing twice is harmless */
}
END_TEST

START_TEST(test_too_many_rules)
{
    size_t cap = 1100 * 20 + 64;
    char *json = malloc(cap);
    size_t len = (size_t)snprintf(json, cap, "{\"topic_rules\": [");
    for (int i = 0; i < 1025; i++)
        len += (size_t)snprintf(json + len, cap - len, "%s{\"match\": \"t%d\"}", i ? "," : "", i);
    snprintf(json + len, cap - len, "]}");
    struct lg_config cfg;
    char err[LG_CONFIG_ERR_MAX];
    ck_assert_int_eq(lg_test_load(&cfg, json, err), -1);
    ck_assert_str_eq(err, "topic_rules: 1025 rules is out of range (allowed 0..1024)");
    lg_config_release(&cfg);
    free(json);
}
END_TEST

/* ---- Addresses ----------------------------------------------------------------------------- */

START_TEST(test_parse_addr)
{
    static const struct {
        const char *text;
        const char *host; /* NULL = must be rejected */
        unsigned port;
    } cases[] = {
        { "0.0.0.0:8080", "0.0.0.0", 8080 },
        { "127.0.0.1:0", "127.0.0.1", 0 },
        { "localhost:65535", "localhost", 65535 },
        { "[::1]:8081", "::1", 8081 },
        { "[::]:80", "::", 80 },
        { "[2001:db8::42]:443", "2001:db8::42", 443 },
        { "0.0.0.0:00080", "0.0.0.0", 80 },
        { "0.0.0.0", NULL, 0 },
        { "0.0.0.0:", NULL, 0 },
        { ":8080", NULL, 0 },
        { "0.0.0.0:65536", NULL, 0 },
        { "0.0.0.0:999999999999", NULL, 0 },
        { "0.0.0.0:-1", NULL, 0 },
        { "0.0.0.0:80x", NULL, 0 },
        { "0.0.0.0: 80", NULL, 0 },
        { "example.com:80", NULL, 0 },
        { "256.0.0.1:80", NULL, 0 },
        { "::1:80", NULL, 0 },
        { "[::1]", NULL, 0 },
        { "[::1]80", NULL, 0 },
        { "[127.0.0.1]:80", NULL, 0 },
        { "[nope]:80", NULL, 0 },
        { "[]:80", NULL, 0 },
        { "", NULL, 0 },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct lg_listen_addr a = { .host = "unchanged", .port = 7 };
        char err[LG_CONFIG_ERR_MAX] = "";
        int rc = lg_config_parse_addr(cases[i].text, &a, err);
        if (cases[i].host != NULL) {
            ck_assert_msg(rc == 0, "%s: %s", cases[i].text, err);
            ck_assert_str_eq(a.host, cases[i].host);
            ck_assert_uint_eq(a.port, cases[i].port);
        } else {
            ck_assert_msg(rc == -1, "\"%s\" was accepted", cases[i].text);
            ck_assert_msg(err[0] != '\0', "%s: no message", cases[i].text);
            ck_assert_str_eq(a.host, "unchanged"); /* a failed parse leaves out alone */
            ck_assert_uint_eq(a.port, 7);
        }
    }
}
END_TEST

/* ---- Setting by key, names --------------------------------------------------------------- */

START_TEST(test_set_uint)
{
    struct lg_config cfg;
    char err[LG_CONFIG_ERR_MAX];
    lg_config_init_defaults(&cfg);
    ck_assert_int_eq(lg_config_set_uint(&cfg, "workers", 8, NULL, err), 0);
    ck_assert_uint_eq(cfg.workers, 8);
    ck_assert_int_eq(lg_config_set_uint(&cfg, "workers", 65, NULL, err), -1);
    ck_assert_str_eq(err, "workers: 65 is out of range (allowed 0..64)");
    ck_assert_int_eq(lg_config_set_uint(&cfg, "workers", 65, "--workers", err), -1);
    ck_assert_str_eq(err, "--workers: 65 is out of range (allowed 0..64)");
    ck_assert_uint_eq(cfg.workers, 8);
    ck_assert_int_eq(lg_config_set_uint(&cfg, "limits.max_retained_bytes", 1ull << 40, NULL, err),
                     0);
    ck_assert_uint_eq(cfg.limits.max_retained_bytes, 1ull << 40);
    ck_assert_int_eq(lg_config_set_uint(&cfg, "log_level", 1, NULL, err), -1);
    ck_assert_str_eq(err, "log_level: no integer setting named \"log_level\"");
    ck_assert_int_eq(lg_config_set_uint(&cfg, "nope", 1, NULL, err), -1);
    lg_config_release(&cfg);
}
END_TEST

START_TEST(test_slow_policy_names)
{
    ck_assert_str_eq(lg_slow_policy_name(LG_SLOW_DROP_OLDEST), "drop-oldest");
    ck_assert_str_eq(lg_slow_policy_name(LG_SLOW_DISCONNECT), "disconnect");
    ck_assert_str_eq(lg_slow_policy_name(LG_SLOW_CONFLATE), "conflate");
    ck_assert_str_eq(lg_slow_policy_name((enum lg_slow_policy)42), "unknown");
}
END_TEST

/* ---- Runner ------------------------------------------------------------------------------- */

static Suite *lg_config_suite(void)
{
    Suite *s = suite_create("config");

    LG_TCASE(s, "defaults", NULL, NULL, test_defaults, test_defaults_match_repo_file,
             test_docs_list_every_setting, test_docs_list_live_settings);
    LG_TCASE(s, "load", NULL, NULL, test_valid_config, test_empty_object_keeps_defaults,
             test_load_file, test_load_file_errors);
    TCase *tc = LG_TCASE(s, "errors", NULL, NULL, test_static_dir_length,
                         test_duplicate_keys_rejected, test_syntax_errors);
    tcase_add_loop_test(tc, test_error_messages, 0, LG_ERROR_CASE_COUNT);
    LG_TCASE(s, "topic_rules", NULL, NULL, test_topic_rules_inherit_after_whole_file,
             test_topic_rules_docs_example, test_topic_rules_default_policy,
             test_second_load_reresolves_rules, test_too_many_rules);
    LG_TCASE(s, "values", NULL, NULL, test_parse_addr, test_set_uint, test_slow_policy_names);
    return s;
}

LG_CHECK_MAIN(lg_config_suite)
