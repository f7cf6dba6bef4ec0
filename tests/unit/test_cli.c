/*
 * test_cli.c - unit tests for src/config/cli.c: option parsing, its usage errors, and the order
 * defaults < file < flags when building the effective config.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "config.h"

#include "check_main.h"

#define LG_ARGC(argv) ((int)(sizeof(argv) / sizeof((argv)[0])) - 1)

/* A temporary config file holding json; its path is written to path (>= 32 bytes). */
static void lg_test_write_config(char *path, const char *json)
{
    strcpy(path, "/tmp/lg_test_cli_XXXXXX");
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    size_t len = strlen(json);
    ck_assert_int_eq(write(fd, json, len), (ssize_t)len);
    close(fd);
}

/* ---- Parsing -------------------------------------------------------------------------------- */

START_TEST(test_parse_nothing)
{
    char *argv[] = { "livegate", NULL };
    struct lg_cli cli;
    char err[256] = "";
    ck_assert_int_eq(lg_cli_parse(LG_ARGC(argv), argv, &cli, err, sizeof(err)), 0);
    ck_assert_ptr_null(cli.config_path);
    ck_assert_ptr_null(cli.public_addr);
    ck_assert_ptr_null(cli.control_addr);
    ck_assert_int_eq(cli.workers, -1);
    ck_assert(!cli.check_config && !cli.print_config && !cli.version && !cli.help);
}
END_TEST

START_TEST(test_parse_long_options)
{
    char *argv[] = { "livegate", "--config", "/etc/livegate.json", "--public", "127.0.0.1:0",
                     "--control=[::1]:9", "--workers", "4", "--check-config", "--print-config",
                     "--version", "--help", NULL };
    struct lg_cli cli;
    char err[256] = "";
    ck_assert_msg(lg_cli_parse(LG_ARGC(argv), argv, &cli, err, sizeof(err)) == 0, "%s", err);
    ck_assert_str_eq(cli.config_path, "/etc/livegate.json");
    ck_assert_str_eq(cli.public_addr, "127.0.0.1:0");
    ck_assert_str_eq(cli.control_addr, "[::1]:9");
    ck_assert_int_eq(cli.workers, 4);
    ck_assert(cli.check_config && cli.print_config && cli.version && cli.help);
}
END_TEST

START_TEST(test_parse_short_options)
{
    char *argv[] = { "livegate", "-c", "a.json", "-V", "-h", NULL };
    struct lg_cli cli;
    char err[256] = "";
    ck_assert_msg(lg_cli_parse(LG_ARGC(argv), argv, &cli, err, sizeof(err)) == 0, "%s", err);
    ck_assert_str_eq(cli.config_path, "a.json");
    ck_assert(cli.version && cli.help);
    ck_assert(!cli.check_config && !cli.print_config);

    char *argv2[] = { "livegate", "-cb.json", "--workers=0", NULL };
    ck_assert_msg(lg_cli_parse(LG_ARGC(argv2), argv2, &cli, err, sizeof(err)) == 0, "%s", err);
    ck_assert_str_eq(cli.config_path, "b.json");
    ck_assert_int_eq(cli.workers, 0);
    ck_assert(!cli.version); /* a second parse starts from scratch */
}
END_TEST

START_TEST(test_parse_bad_workers)
{
    static const char *const values[] = { "abc", "-1", "", "3x", " 4", "+4", "1.5",
                                          "99999999999999999999999" };
    for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
        char *argv[] = { "livegate", "--workers", (char *)values[i], NULL };
        struct lg_cli cli;
        char err[256] = "", want[256];
        ck_assert_msg(lg_cli_parse(LG_ARGC(argv), argv, &cli, err, sizeof(err)) == -1,
                      "--workers \"%s\" was accepted", values[i]);
        snprintf(want, sizeof(want), "--workers: expected a non-negative integer, got \"%s\"",
                 values[i]);
        ck_assert_str_eq(err, want);
    }
}
END_TEST

static const struct {
    const char *args[4];
    const char *message;
} lg_usage_errors[] = {
    { { "--bogus" }, "unknown or ambiguous option \"--bogus\" (see --help)" },
    { { "-x" }, "unknown option \"-x\" (see --help)" },
    { { "--config" }, "option \"--config\" needs a value (see --help)" },
    { { "-c" }, "option \"-c\" needs a value (see --help)" },
    { { "--workers" }, "option \"--workers\" needs a value (see --help)" },
    { { "--help=yes" }, "option \"--help=yes\" takes no value" },
    { { "--config", "" }, "--config: the file name is empty" },
    { { "extra" }, "unexpected argument \"extra\" (see --help)" },
    { { "--check-config", "extra", "--help" }, "unexpected argument \"extra\" (see --help)" },
};

START_TEST(test_parse_usage_errors)
{
    char *argv[8] = { "livegate" };
    int argc = 1;
    for (int j = 0; j < 4 && lg_usage_errors[_i].args[j] != NULL; j++)
        argv[argc++] = (char *)lg_usage_errors[_i].args[j];
    argv[argc] = NULL;
    struct lg_cli cli;
    char err[256] = "";
    ck_assert_int_eq(lg_cli_parse(argc, argv, &cli, err, sizeof(err)), -1);
    ck_assert_str_eq(err, lg_usage_errors[_i].message);
}
END_TEST

START_TEST(test_usage_text)
{
    const char *usage = lg_cli_usage();
    static const char *const flags[] = { "--config FILE", "-c,", "--public HOST:PORT",
                                         "--control HOST:PORT", "--workers N", "--check-config",
                                         "--print-config", "--version", "-V,", "--help", "-h," };
    for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
        ck_assert_msg(strstr(usage, flags[i]) != NULL, "usage does not mention %s", flags[i]);
    ck_assert_ptr_nonnull(strstr(usage, "\n  0  "));
    ck_assert_ptr_nonnull(strstr(usage, "\n  1  runtime failure"));
    ck_assert_ptr_nonnull(strstr(usage, "\n  2  bad configuration or usage"));
    ck_assert_ptr_nonnull(strstr(usage, "\n  SIGHUP           reload: "));
    ck_assert_ptr_nonnull(strstr(usage, "A change to any other setting is refused"));
    /* One line per flag: nothing wider than a terminal. */
    for (const char *line = usage; *line != '\0';) {
        const char *end = strchr(line, '\n');
        ck_assert_ptr_nonnull(end);
        ck_assert_int_le(end - line, 100);
        line = end + 1;
    }
}
END_TEST

/* ---- Building the config -------------------------------------------------------------------- */

START_TEST(test_build_defaults_only)
{
    struct lg_cli cli = { .workers = -1 };
    struct lg_config cfg, defaults;
    char err[LG_CONFIG_ERR_MAX] = "";
    ck_assert_msg(lg_cli_build_config(&cli, &cfg, err) == 0, "%s", err);
    lg_config_init_defaults(&defaults);
    char *a = lg_config_to_json(&cfg), *b = lg_config_to_json(&defaults);
    ck_assert_str_eq(a, b);
    free(a);
    free(b);
    lg_config_release(&defaults);
    lg_config_release(&cfg);
}
END_TEST

START_TEST(test_build_flags_beat_file)
{
    char path[64];
    lg_test_write_config(path, "{\"workers\": 4, \"listen\": {\"public\": \"10.0.0.1:9000\", "
                               "\"control\": \"10.0.0.1:9001\"}, \"log_level\": \"warn\"}");
    char *argv[] = { "livegate", "--config", path, "--workers", "8", "--public",
                     "127.0.0.1:0", NULL };
    struct lg_cli cli;
    struct lg_config cfg;
    char err[LG_CONFIG_ERR_MAX] = "";
    ck_assert_msg(lg_cli_parse(LG_ARGC(argv), argv, &cli, err, sizeof(err)) == 0, "%s", err);
    int rc = lg_cli_build_config(&cli, &cfg, err);
    unlink(path);
    ck_assert_msg(rc == 0, "%s", err);
    ck_assert_uint_eq(cfg.workers, 8);                      /* flag */
    ck_assert_str_eq(cfg.public_addr.host, "127.0.0.1");    /* flag */
    ck_assert_uint_eq(cfg.public_addr.port, 0);
    ck_assert_str_eq(cfg.control_addr.host, "10.0.0.1");    /* file */
    ck_assert_uint_eq(cfg.control_addr.port, 9001);
    ck_assert_int_eq(cfg.log_level, LG_LOG_WARN);           /* file */
    ck_assert_uint_eq(cfg.history.max_events, 1000);        /* default */
    lg_config_release(&cfg);
}
END_TEST

/* cli builds a config: it must succeed. */
static void build_ok(const struct lg_cli *cli, struct lg_config *cfg)
{
    char err[LG_CONFIG_ERR_MAX] = "";
    ck_assert_msg(lg_cli_build_config(cli, cfg, err) == 0, "%s", err);
}

START_TEST(test_build_control_flag)
{
    struct lg_cli cli = { .workers = -1, .control_addr = "[::1]:7000" };
    struct lg_config cfg;
    build_ok(&cli, &cfg);
    ck_assert_str_eq(cfg.control_addr.host, "::1");
    ck_assert_uint_eq(cfg.control_addr.port, 7000);
    lg_config_release(&cfg);
}
END_TEST

START_TEST(test_build_bad_workers_range)
{
    char *argv[] = { "livegate", "--workers", "65", NULL };
    struct lg_cli cli;
    struct lg_config cfg;
    char err[LG_CONFIG_ERR_MAX] = "";
    ck_assert_int_eq(lg_cli_parse(LG_ARGC(argv), argv, &cli, err, sizeof(err)), 0);
    ck_assert_int_eq(lg_cli_build_config(&cli, &cfg, err), -1);
    ck_assert_str_eq(err, "--workers: 65 is out of range (allowed 0..64)");
    lg_config_release(&cfg); /* harmless after a failed build */

    cli.workers = 64;
    build_ok(&cli, &cfg);
    ck_assert_uint_eq(cfg.workers, 64);
    lg_config_release(&cfg);
}
END_TEST

START_TEST(test_build_bad_addresses)
{
    struct lg_cli cli = { .workers = -1, .public_addr = "nope" };
    struct lg_config cfg;
    char err[LG_CONFIG_ERR_MAX] = "";
    ck_assert_int_eq(lg_cli_build_config(&cli, &cfg, err), -1);
    ck_assert_str_eq(err, "--public: \"nope\" has no port; expected HOST:PORT (e.g. "
                          "\"127.0.0.1:8080\") or [IPv6]:PORT");
    cli = (struct lg_cli){ .workers = -1, .control_addr = "127.0.0.1:70000" };
    ck_assert_int_eq(lg_cli_build_config(&cli, &cfg, err), -1);
    ck_assert_str_eq(err, "--control: \"127.0.0.1:70000\": port 70000 is out of range "
                          "(allowed 0..65535)");
}
END_TEST

START_TEST(test_build_bad_file)
{
    char path[64], want[LG_CONFIG_ERR_MAX];
    lg_test_write_config(path, "{\"client_queue\": {\"max_events\": 0}}");
    struct lg_cli cli = { .workers = 2, .config_path = path };
    struct lg_config cfg;
    char err[LG_CONFIG_ERR_MAX] = "";
    int rc = lg_cli_build_config(&cli, &cfg, err);
    unlink(path);
    ck_assert_int_eq(rc, -1);
    snprintf(want, sizeof(want), "%s: client_queue.max_events: 0 is out of range (allowed "
                                 "1..1000000)", path);
    ck_assert_str_eq(err, want);

    cli.config_path = "/nonexistent/livegate.json";
    ck_assert_int_eq(lg_cli_build_config(&cli, &cfg, err), -1);
    ck_assert_str_eq(err, "/nonexistent/livegate.json: cannot open: No such file or directory");
}
END_TEST

static Suite *lg_cli_suite(void)
{
    Suite *s = suite_create("cli");

    TCase *tc = tcase_create("parse");
    tcase_add_test(tc, test_parse_nothing);
    tcase_add_test(tc, test_parse_long_options);
    tcase_add_test(tc, test_parse_short_options);
    tcase_add_test(tc, test_parse_bad_workers);
    tcase_add_loop_test(tc, test_parse_usage_errors, 0,
                        (int)(sizeof(lg_usage_errors) / sizeof(lg_usage_errors[0])));
    tcase_add_test(tc, test_usage_text);
    suite_add_tcase(s, tc);

    tc = tcase_create("build");
    tcase_add_test(tc, test_build_defaults_only);
    tcase_add_test(tc, test_build_flags_beat_file);
    tcase_add_test(tc, test_build_control_flag);
    tcase_add_test(tc, test_build_bad_workers_range);
    tcase_add_test(tc, test_build_bad_addresses);
    tcase_add_test(tc, test_build_bad_file);
    suite_add_tcase(s, tc);
    return s;
}

LG_CHECK_MAIN(lg_cli_suite)
