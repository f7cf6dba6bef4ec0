/* fuzz_topic.c - topic names (topic.h) and topic_rules glob patterns (topic_rules.h):
 * input = pattern '\n' text. */
#include "fuzz_support.h"
#include "topic.h"
#include "topic_glob.h"
#include "topic_rules.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *pattern;
    size_t pattern_len = lg_fuzz_field(&data, &size, &pattern);
    lg_topic_name_problem((const char *)data, size);
    char *p = lg_fuzz_cstring(pattern, pattern_len);
    char *t = lg_fuzz_cstring((const char *)data, size);
    if (p && t)
        lg_glob_match(p, t);
    free(p);
    free(t);
    return 0;
}
