/* topic_name.c - see topic_name.h. */
#include "topic_name.h"

#include <stdio.h>

#define STR_(x) #x
#define STR(x) STR_(x)

bool lg_topic_name_byte_ok(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '-' || c == '.' || c == '/' || c == ':' || c == '~';
}

/*
 * The messages for a bad byte name its position (1-based), so they are formatted into a
 * thread-local buffer: like a static message the caller never frees it, but it stays valid
 * only until this thread calls lg_topic_name_problem() again.
 */
const char *lg_topic_name_problem(const char *name, size_t len)
{
    static _Thread_local char msg[112];

    if (len == 0)
        return "topic name is empty";
    if (len > LG_TOPIC_NAME_MAX)
        return "topic name is longer than " STR(LG_TOPIC_NAME_MAX) " bytes";
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)name[i];
        if (lg_topic_name_byte_ok(c) || (c == '$' && i == 0))
            continue;
        if (c == '$')
            snprintf(msg, sizeof msg, "topic name has '$' after its first byte (at byte %zu)",
                     i + 1);
        else
            snprintf(msg, sizeof msg,
                     "topic name contains a character outside " LG_TOPIC_NAME_CHARS
                     " (at byte %zu)",
                     i + 1);
        return msg;
    }
    return NULL;
}

