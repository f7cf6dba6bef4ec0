/*
 * main.c - command line to exit code: parse flags, build the configuration, run the app.
 * Exit codes: 0 success, 1 runtime failure, 2 bad usage or invalid configuration.
 */
#include <stdio.h>
#include <stdlib.h>

#include "app.h"
#include "cli.h"
#include "config.h"
#include "log.h"

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
        rc = lg_app_run(&cfg);
    }
    lg_config_release(&cfg);
    return rc;
}
