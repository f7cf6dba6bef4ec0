/* hub_admin.c - see hub_admin.h. */
#include "hub_admin.h"

#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "event.h"
#include "hub_internal.h"
#include "stats.h"
#include "topic.h"

static void fill_info(struct lg_topic *t, struct lg_topic_info *out)
{
    memset(out, 0, sizeof *out);
    memcpy(out->name, t->name, t->name_len);
    pthread_mutex_lock(&t->lock);
    out->position_known = lg_stream_ready(t->stream);
    out->epoch = lg_stream_epoch(t->stream);
    out->last_seq = lg_stream_newest(t->stream);
    const struct lg_store_ops *ops = t->stream->store->ops;
    if (ops->retained) {
        ops->retained(t->stream, &out->retained_events, &out->retained_bytes);
        out->retained_known = true;
    }
    for (uint32_t w = 0; w < t->slot_count; w++)
        out->subscribers += t->slots[w].subscribers;
    out->publish_rate = t->publish_rate;
    pthread_mutex_unlock(&t->lock);
}

static int by_name(const void *a, const void *b)
{
    const struct lg_topic *x = *(struct lg_topic *const *)a, *y = *(struct lg_topic *const *)b;
    return strcmp(x->name, y->name);
}

int lg_hub_list_topics(struct lg_hub *hub, const char *prefix, const char *after, size_t limit,
                       lg_topic_filter *keep, void *arg, struct lg_topic_info *out, bool *more)
{
    size_t plen = strlen(prefix), n = 0;
    *more = false;
    pthread_rwlock_rdlock(&hub->registry_lock);
    struct lg_topic **found = malloc((hub->topic_count + 1) * sizeof *found);
    if (!found) {
        pthread_rwlock_unlock(&hub->registry_lock);
        return -1;
    }
    for (size_t b = 0; b <= hub->bucket_mask; b++)
        for (struct lg_topic *t = hub->buckets[b]; t; t = t->next_in_bucket)
            if (strncmp(t->name, prefix, plen) == 0 && strcmp(t->name, after) > 0 &&
                (!keep || keep(t->name, arg))) {
                lg_topic_ref(t); /* under the lock: collection takes it for writing */
                found[n++] = t;
            }
    pthread_rwlock_unlock(&hub->registry_lock);
    qsort(found, n, sizeof *found, by_name);
    size_t shown = n < limit ? n : limit;
    for (size_t i = 0; i < shown; i++)
        fill_info(found[i], &out[i]);
    for (size_t i = 0; i < n; i++)
        lg_topic_unref(found[i]);
    free(found);
    *more = n > shown;
    return (int)shown;
}

int lg_hub_topic_info(struct lg_hub *hub, const char *name, size_t len, struct lg_topic_info *out)
{
    struct lg_topic *t = lg_hub_find_topic(hub, name, len);
    if (!t)
        return -1;
    fill_info(t, out);
    lg_hub_topic_done(hub, t);
    return 0;
}

/* The page after since, t's lock held and its stream loaded. */
static enum lg_history_status read_page(struct lg_topic *t, const struct lg_cursor_entry *since,
                                        size_t max_events, uint64_t max_bytes,
                                        struct lg_replay *out)
{
    out->epoch = lg_stream_epoch(t->stream);
    out->position = lg_stream_newest(t->stream);
    if (since && since->epoch != out->epoch) {
        out->reset = true;
        return LG_HISTORY_OK;
    }
    if (since && since->seq > out->position) {
        lg_stream_refresh(t->stream); /* a remote copy trails by what is in flight */
        return t->stream->store->ops->remote ? LG_HISTORY_LOADING : LG_HISTORY_AHEAD;
    }
    lg_stream_expire(t->stream, lg_mono_ns()); /* the sweep may not have been by yet */
    uint64_t first = lg_stream_oldest(t->stream);
    uint64_t after = since ? since->seq : first - 1;
    if (after + 1 < first) {
        out->gap_from = after + 1;
        out->gap_to = first - 1;
    }
    struct lg_store_page page;
    if (lg_stream_read_after(t->stream, after, max_events, max_bytes, &page) != 0)
        return LG_HISTORY_OOM;
    out->events = page.events;
    out->count = page.count;
    out->more = page.more;
    out->position = page.count ? page.events[page.count - 1]->seq
                               : (out->gap_to ? out->gap_to : after);
    return LG_HISTORY_OK;
}

enum lg_history_status lg_hub_read_history(struct lg_hub *hub, const char *name, size_t len,
                                           const struct lg_cursor_entry *since,
                                           size_t max_events, uint64_t max_bytes,
                                           struct lg_replay *out)
{
    memset(out, 0, sizeof *out);
    struct lg_topic *t = lg_hub_find_topic(hub, name, len);
    if (!t)
        return LG_HISTORY_NO_TOPIC;
    enum lg_history_status status;
    pthread_mutex_lock(&t->lock);
    if (lg_stream_ready(t->stream)) {
        status = read_page(t, since, max_events, max_bytes, out);
    } else {
        if (t->listeners == 0) { /* have it loaded; it lingers for the retry */
            lg_stream_listen(t->stream, true);
            lg_stream_listen(t->stream, false);
        }
        status = LG_HISTORY_LOADING;
    }
    pthread_mutex_unlock(&t->lock);
    lg_hub_topic_done(hub, t);
    return status;
}

struct lg_topic *lg_hub_delete_topic(struct lg_hub *hub, const char *name, size_t len)
{
    if (lg_topic_name_problem(name, len))
        return NULL;
    uint32_t h = lg_hub_hash_name(name, len);
    struct lg_topic *found = NULL;
    pthread_rwlock_wrlock(&hub->registry_lock);
    for (struct lg_topic **pp = &hub->buckets[h & hub->bucket_mask]; *pp;
         pp = &(*pp)->next_in_bucket) {
        struct lg_topic *t = *pp;
        if (t->name_len != len || memcmp(t->name, name, len) != 0)
            continue;
        *pp = t->next_in_bucket;
        hub->topic_count--;
        atomic_store_explicit(&t->deleted, true, memory_order_relaxed);
        pthread_mutex_lock(&t->lock);
        const struct lg_store_ops *ops = t->stream->store->ops;
        if (ops->drop)
            ops->drop(t->stream);
        else
            while (lg_stream_evict_oldest(t->stream))
                ;
        pthread_mutex_unlock(&t->lock);
        t->next_in_bucket = hub->graveyard; /* the registry's reference goes with it */
        hub->graveyard = t;
        lg_topic_ref(t);                    /* the caller's */
        found = t;
        break;
    }
    pthread_rwlock_unlock(&hub->registry_lock);
    if (found)
        LG_STAT_SUB(topics, 1);
    return found;
}

void lg_hub_history_totals(struct lg_hub *hub, uint64_t *topics, uint64_t *events,
                           uint64_t *bytes)
{
    *events = *bytes = 0;
    pthread_rwlock_rdlock(&hub->registry_lock);
    *topics = hub->topic_count;
    for (size_t b = 0; b <= hub->bucket_mask; b++) {
        for (struct lg_topic *t = hub->buckets[b]; t; t = t->next_in_bucket) {
            const struct lg_store_ops *ops = t->stream->store->ops;
            if (!ops->retained)
                continue;
            uint64_t e, by;
            pthread_mutex_lock(&t->lock);
            ops->retained(t->stream, &e, &by);
            pthread_mutex_unlock(&t->lock);
            *events += e;
            *bytes += by;
        }
    }
    pthread_rwlock_unlock(&hub->registry_lock);
}

void lg_hub_post_call(struct lg_hub *hub, struct lg_call *call)
{
    atomic_store_explicit(&call->pending, hub->workers, memory_order_relaxed);
    atomic_fetch_add_explicit(&call->refs, hub->workers, memory_order_relaxed);
    for (uint32_t w = 0; w < hub->workers; w++) {
        lg_mailbox_push(&hub->links[w].calls, w, call);
        hub->links[w].wake(hub->links[w].wake_arg);
    }
}

struct lg_call *lg_hub_take_call(struct lg_hub *hub, uint32_t w)
{
    return lg_mailbox_pop(&hub->links[w].calls, w);
}

void lg_hub_call_done(struct lg_hub *hub, struct lg_call *call, uint32_t w)
{
    (void)w;
    (void)hub;
    bool last = atomic_fetch_sub_explicit(&call->pending, 1, memory_order_acq_rel) == 1;
    if (last && call->answered)
        call->answered(call->answered_arg, call);
    lg_call_unref(call);
}
