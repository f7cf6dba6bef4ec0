#include "topic.h"

#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "event.h"
#include "stats.h"

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
    t->unwanted_since_ns = lg_mono_ns(); /* made for a publish: counts as unwanted from now */
    atomic_init(&t->refs, 1);
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
    for (uint32_t w = 0; w < t->slot_count; w++)
        free(t->slots[w].listeners);
    pthread_mutex_destroy(&t->lock);
    free(t->name);
    free(t);
}
