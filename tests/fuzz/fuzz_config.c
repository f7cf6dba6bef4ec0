/* fuzz_config.c - config files (config.h), topic_rules included. */
#include "config.h"
#include "fuzz_support.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = lg_fuzz_cstring((const char *)data, size);
    if (!text)
        return 0;
    struct lg_config cfg;
    char err[LG_CONFIG_ERR_MAX];
    lg_config_init_defaults(&cfg);
    lg_config_load_string(&cfg, text, err);
    lg_config_release(&cfg);
    free(text);
    return 0;
}
