/*
 * cli.h - the command line: parsing argv, and building the effective config from it.
 *
 * Owns:    struct lg_cli, which only borrows strings from argv (they outlive main's use of it).
 * Frees:   nothing of its own; lg_cli_build_config() fills a struct lg_config that the caller
 *          releases with lg_config_release().
 * Threads: main thread only, before any other thread starts (getopt keeps global state).
 * Bounds:  flag values are checked against the same table of ranges as the config file.
 */
#ifndef LG_CLI_H
#define LG_CLI_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"

struct lg_cli {
    const char *config_path;  /* --config / -c FILE, NULL = built-in defaults only */
    const char *public_addr;  /* --public HOST:PORT, NULL = from the config */
    const char *control_addr; /* --control HOST:PORT, NULL = from the config */
    long workers;             /* --workers N, -1 = not given (range checked when building) */
    bool check_config;        /* --check-config: validate, then exit 0 or 2 */
    bool print_config;        /* --print-config: print the effective config as JSON, exit */
    bool version;             /* --version / -V */
    bool help;                /* --help / -h */
};

/*
 * Parse argv into out (which is fully overwritten). Resets getopt's state, so it may be called
 * more than once (the tests do). Nothing is printed.
 * Return value: 0, or -1 with a one-line message in err (a usage error: exit code 2).
 */
int lg_cli_parse(int argc, char **argv, struct lg_cli *out, char *err, size_t errlen);

/*
 * Build the effective config: built-in defaults, then the --config file, then the flags
 * (--public, --control, --workers), each flag checked like the file's value.
 * Return value: 0 with cfg filled (release it with lg_config_release()), or -1 with err filled
 * ("FILE: key: problem" or "--flag: problem"); cfg then holds nothing to free.
 */
int lg_cli_build_config(const struct lg_cli *cli, struct lg_config *cfg,
                        char err[LG_CONFIG_ERR_MAX]);

/* The --help text: every flag on one line, and the exit codes. Static; do not free. */
const char *lg_cli_usage(void);

#endif
