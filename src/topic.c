#include "topic.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "event.h"
#include "stats.h"

#define STR_(x) #x
#define STR(x) STR_(x)

/* ---- Topic names -------------------------------------------------------------------------- */

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

/* ---- Topic -------------------------------------------------------------------------------- */

struct lg_topic *lg_topic_create(const char *name, size_t len, enum lg_slow_policy policy,
                                 struct lg_stream *stream, uint32_t workers)
{
    struct lg_topic *t = calloc(1, sizeof *t + (size_t)workers * sizeof t->slots[0]);
    if (!t) {
        lg_stream_close(stream);
        return NULL;
    }
    t->name = malloc(len + 1);
    if (!t->name)
        goto err;
    memcpy(t->name, name, len);
    t->name[len] = '\0';
    if (pthread_mutex_init(&t->lock, NULL) != 0)
        goto err;
    t->name_len = len;
    t->policy = policy;
    t->stream = stream;
    t->slot_count = workers;
    return t;

err:
    lg_stream_close(stream);
    free(t->name);
    free(t);
    return NULL;
}

void lg_topic_destroy(struct lg_topic *t)
{
    if (!t)
        return;
    lg_stream_close(t->stream);
    pthread_mutex_destroy(&t->lock);
    free(t->name);
    free(t);
}
