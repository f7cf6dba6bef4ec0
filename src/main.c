/*
 * main.c - command line to exit code: parse flags, build the configuration, tune the process's
 * allocator, run the app.
 * Exit codes: 0 success, 1 runtime failure, 2 bad usage or invalid configuration.
 */
#include <stdio.h>
#include <stdlib.h>
#ifndef LG_JEMALLOC
#include <malloc.h>
#endif

#include "app.h"
#include "cli.h"
#include "config.h"
#include "log.h"

/*
 * The allocator. Events are allocated on the thread that takes a publish and freed by
 * whichever worker drops the last reference, and retained history grows the heap at the
 * publish rate. glibc grows a thread's own arena one page per mprotect() (M_TOP_PAD does not
 * apply there): a syscall every few publishes. A single glibc arena avoids it but serializes
 * the workers' allocations (docs/architecture.md, "The allocator"). So the gateway is linked
 * with jemalloc (CMake
 * option LG_JEMALLOC), whose per-thread caches and arenas grow in extents of many pages.
 * Sanitizer builds keep their own allocator; for a build without jemalloc, glibc is told to
 * keep a few MiB of free top memory per arena so that it does not trim and regrow at that rate.
 */
static void tune_allocator(void)
{
#ifndef LG_JEMALLOC
    mallopt(M_TRIM_THRESHOLD, 4 << 20);
    mallopt(M_MMAP_THRESHOLD, 1 << 20);
#endif
}

int main(int argc, char **argv)
{
    struct lg_cli cli;
    char err[LG_CONFIG_ERR_MAX];
    if (lg_cli_parse(argc, argv, &cli, err, sizeof err) != 0) {
        fprintf(stderr, "livegate: %s\n\n%s", err, lg_cli_usage());
        return 2;
    }
    if (cli.help) {
        fputs(lg_cli_usage(), stdout);
        return 0;
    }
    if (cli.version) {
        printf("livegate %s\n", LG_VERSION);
        return 0;
    }
    struct lg_config cfg = {0};
    if (lg_cli_build_config(&cli, &cfg, err) != 0) {
        fprintf(stderr, "livegate: invalid configuration: %s\n", err);
        lg_config_release(&cfg);
        return 2;
    }
    int rc = 0;
    if (cli.check_config) {
        fprintf(stderr, "livegate: configuration is valid\n");
    } else if (cli.print_config) {
        char *json = lg_config_to_json(&cfg);
        rc = json ? (fputs(json, stdout) < 0) : 1; /* it ends with a newline already */
        free(json);
    } else {
        lg_log_set_level(cfg.log_level);
        lg_log_set_format(cfg.log_format);
        tune_allocator();
        rc = lg_app_run(&cfg, &cli);
    }
    lg_config_release(&cfg);
    return rc;
}
