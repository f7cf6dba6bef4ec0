/*
 * cli.c - argv parsing (getopt_long) and layering defaults, the file and flags into a config.
 */
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char lg_cli_usage_text[] =
    "Usage: livegate [OPTIONS]\n"
    "\n"
    "Live-update gateway: serves published events over SSE, WebSocket and long-poll.\n"
    "\n"
    "Options:\n"
    "  -c, --config FILE        load settings from FILE (JSON, see docs/configuration.md)\n"
    "      --public HOST:PORT   public listener, overrides listen.public ([v6]:PORT for IPv6)\n"
    "      --control HOST:PORT  control listener, overrides listen.control\n"
    "      --workers N          worker threads, overrides workers (0 = one per online CPU)\n"
    "      --check-config       validate the configuration and exit\n"
    "      --print-config       print the effective configuration as JSON and exit\n"
    "  -V, --version            print the version and exit\n"
    "  -h, --help               print this help and exit\n"
    "\n"
    "Settings apply in order: built-in defaults, then the --config file, then flags.\n"
    "\n"
    "Signals:\n"
    "  SIGHUP           reload: rebuild the settings as above and apply them whole or not at\n"
    "                   all. Live: log_level, log_format, auth keys and tokens (the JWKS file\n"
    "                   re-read), allowed_origins, topic_rules and history.* (new topics), and\n"
    "                   the limits that bound only new work (publish sizes and wait, topics\n"
    "                   per subscription and their creation rate, connections per address,\n"
    "                   keep-alive and poll times). A change to any other setting is refused,\n"
    "                   naming it in the log; an invalid file keeps the running settings.\n"
    "                   Connections and their cursors are not touched (docs/operations.md).\n"
    "  SIGTERM, SIGINT  drain the clients (at most drain_timeout_ms) and exit\n"
    "\n"
    "Exit status:\n"
    "  0  success (with --check-config: the configuration is valid)\n"
    "  1  runtime failure (e.g. a listener could not be bound)\n"
    "  2  bad configuration or usage (the message on stderr names the key or flag)\n";

const char *lg_cli_usage(void)
{
    return lg_cli_usage_text;
}

/* getopt values for options without a short form; above any char so they cannot collide. */
enum {
    LG_OPT_PUBLIC = 256,
    LG_OPT_CONTROL,
    LG_OPT_WORKERS,
    LG_OPT_CHECK_CONFIG,
    LG_OPT_PRINT_CONFIG,
};

static const struct option lg_cli_options[] = {
    { "config", required_argument, NULL, 'c' },
    { "public", required_argument, NULL, LG_OPT_PUBLIC },
    { "control", required_argument, NULL, LG_OPT_CONTROL },
    { "workers", required_argument, NULL, LG_OPT_WORKERS },
    { "check-config", no_argument, NULL, LG_OPT_CHECK_CONFIG },
    { "print-config", no_argument, NULL, LG_OPT_PRINT_CONFIG },
    { "version", no_argument, NULL, 'V' },
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
};

static int lg_cli__fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int lg_cli__fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* A plain decimal count: digits only, so "-1", "+3", " 4", "4x" and "" are all refused. */
static int lg_cli__parse_count(const char *text, long *out)
{
    if (text[0] == '\0' || strspn(text, "0123456789") != strlen(text))
        return -1;
    errno = 0;
    long value = strtol(text, NULL, 10);
    if (errno == ERANGE)
        return -1;
    *out = value;
    return 0;
}

int lg_cli_parse(int argc, char **argv, struct lg_cli *out, char *err, size_t errlen)
{
    *out = (struct lg_cli){ .workers = -1 };

    /* optind = 0 makes glibc reinitialise getopt fully, so parsing twice works; opterr = 0
     * because the caller decides how to print usage errors. '+' stops at the first operand
     * instead of permuting argv; ':' reports a missing value separately. */
    optind = 0;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "+:c:hV", lg_cli_options, NULL)) != -1) {
        const char *opt = optind > 0 && optind <= argc ? argv[optind - 1] : "?";
        switch (c) {
        case 'c':
            if (optarg[0] == '\0')
                return lg_cli__fail(err, errlen, "--config: the file name is empty");
            out->config_path = optarg;
            break;
        case LG_OPT_PUBLIC: out->public_addr = optarg; break;
        case LG_OPT_CONTROL: out->control_addr = optarg; break;
        case LG_OPT_WORKERS:
            if (lg_cli__parse_count(optarg, &out->workers) != 0)
                return lg_cli__fail(err, errlen,
                                    "--workers: expected a non-negative integer, got \"%s\"",
                                    optarg);
            break;
        case LG_OPT_CHECK_CONFIG: out->check_config = true; break;
        case LG_OPT_PRINT_CONFIG: out->print_config = true; break;
        case 'V': out->version = true; break;
        case 'h': out->help = true; break;
        case ':':
            return lg_cli__fail(err, errlen, "option \"%s\" needs a value (see --help)", opt);
        default:
            if (strncmp(opt, "--", 2) == 0 && strchr(opt, '=') != NULL && optopt != 0)
                return lg_cli__fail(err, errlen, "option \"%s\" takes no value", opt);
            if (strncmp(opt, "--", 2) == 0 || optopt == 0)
                return lg_cli__fail(err, errlen, "unknown or ambiguous option \"%s\" (see --help)",
                                    opt);
            return lg_cli__fail(err, errlen, "unknown option \"-%c\" (see --help)", optopt);
        }
    }
    if (optind < argc)
        return lg_cli__fail(err, errlen, "unexpected argument \"%s\" (see --help)", argv[optind]);
    return 0;
}

int lg_cli_build_config(const struct lg_cli *cli, struct lg_config *cfg,
                        char err[LG_CONFIG_ERR_MAX])
{
    char why[LG_CONFIG_ERR_MAX];
    lg_config_init_defaults(cfg);

    if (cli->config_path != NULL && lg_config_load_file(cfg, cli->config_path, why) != 0) {
        /* The path is capped so a long one cannot push the key name out of the message. */
        lg_cli__fail(err, LG_CONFIG_ERR_MAX, "%.200s: %s", cli->config_path, why);
        goto fail;
    }
    if (cli->public_addr != NULL && lg_config_parse_addr(cli->public_addr, &cfg->public_addr,
                                                         why) != 0) {
        lg_cli__fail(err, LG_CONFIG_ERR_MAX, "--public: %s", why);
        goto fail;
    }
    if (cli->control_addr != NULL && lg_config_parse_addr(cli->control_addr, &cfg->control_addr,
                                                          why) != 0) {
        lg_cli__fail(err, LG_CONFIG_ERR_MAX, "--control: %s", why);
        goto fail;
    }
    if (cli->workers >= 0 &&
        lg_config_set_uint(cfg, "workers", (uint64_t)cli->workers, "--workers", err) != 0)
        goto fail;
    return 0;

fail:
    /* A failed build leaves nothing for the caller to clean up. */
    lg_config_release(cfg);
    return -1;
}
