/* topic_glob.c - see topic_glob.h. */
#include "topic_glob.h"

#include <string.h>

bool lg_topic_glob_bytes_ok(const char *p, size_t *bad)
{
    for (size_t i = 0; p[i] != '\0'; i++) {
        unsigned char c = (unsigned char)p[i];
        if (lg_topic_name_byte_ok(c) || c == '*' || c == '?' || (c == '$' && i == 0))
            continue;
        *bad = i;
        return false;
    }
    return true;
}

bool lg_topic_pattern_ok(const char *p, size_t len)
{
    size_t bad;
    return len >= 1 && len <= LG_TOPIC_GLOB_MAX && strlen(p) == len &&
           lg_topic_glob_bytes_ok(p, &bad);
}

bool lg_glob_match(const char *pattern, const char *text)
{
    if (pattern == NULL || text == NULL)
        return false;
    /* Classic single-backtrack matcher: on a mismatch, let the last '*' swallow one more
     * character and retry from there. Earlier stars never need revisiting, so this is
     * O(len(pattern) * len(text)) with no recursion. */
    const char *star = NULL, *resume = NULL;
    while (*text != '\0') {
        if (*pattern == '*') {
            star = pattern++;
            resume = text;
        } else if (*pattern == '?' || (*pattern != '\0' && *pattern == *text)) {
            pattern++;
            text++;
        } else if (star != NULL) {
            pattern = star + 1;
            text = ++resume;
        } else {
            return false;
        }
    }
    while (*pattern == '*')
        pattern++;
    return *pattern == '\0';
}

bool lg_glob_match_any(const char *const *patterns, size_t count, const char *text)
{
    for (size_t i = 0; i < count; i++)
        if (lg_glob_match(patterns[i], text))
            return true;
    return false;
}
