/*
 * hub_presence.c - occupancy and presence (presence.h) through the hub: a topic's state lives
 * under its lock, joined and left by the workers as their subscriptions start and stop
 * listening; a topic with changes goes on the hub's `reporting` list, and the main thread's
 * tick (lg_hub_presence_report) turns each into one coalesced batch, posted to every worker
 * as a call (worker_call.h) that owes the batch to that worker's subscribers of the topic.
 * Nothing here runs per event: only per subscribe, unsubscribe and tick.
 */
#include <stdlib.h>

#include "hub_admin.h"
#include "hub_internal.h"
#include "log.h"
#include "presence.h"
#include "stats.h"
#include "topic.h"
#include "topic_rules.h"

int lg_hub__give_presence(struct lg_hub *hub, struct lg_topic *t, const char *name)
{
    struct lg_presence_rule rule = lg_config_presence_for(hub->rules, name);
    if (!rule.members && !rule.occupancy_events)
        return 0;
    t->presence = lg_presence_create(&rule);
    return t->presence ? 0 : -1;
}

/* Put t on the list the next tick reports (a reference of the list's). t->lock held. */
static void list_for_report(struct lg_hub *hub, struct lg_topic *t)
{
    pthread_mutex_lock(&hub->presence_lock);
    if (!t->reporting) {
        t->reporting = true;
        lg_topic_ref(t);
        t->next_reporting = hub->reporting;
        hub->reporting = t;
    }
    pthread_mutex_unlock(&hub->presence_lock);
}

void lg_hub__presence_changed(struct lg_hub *hub, struct lg_topic *t)
{
    if (lg_presence_changed(t->presence))
        list_for_report(hub, t);
}

uint32_t lg_hub_subscribers(struct lg_hub *hub, struct lg_topic *t)
{
    (void)hub;
    pthread_mutex_lock(&t->lock);
    uint32_t n = t->listeners;
    pthread_mutex_unlock(&t->lock);
    return n;
}

bool lg_hub_presence_on(const struct lg_topic *t)
{
    return t->presence && lg_presence_lists_members(t->presence);
}

bool lg_hub_presence_join(struct lg_hub *hub, struct lg_topic *t, const char *id, size_t len)
{
    if (!lg_hub_presence_on(t))
        return false;
    pthread_mutex_lock(&t->lock);
    bool listed = lg_presence_join(t->presence, id, len);
    if (lg_presence_pending(t->presence))
        list_for_report(hub, t);
    pthread_mutex_unlock(&t->lock);
    if (!listed)
        LG_STAT_ADD(presence_unlisted, 1);
    return listed;
}

void lg_hub_presence_leave(struct lg_hub *hub, struct lg_topic *t, const char *id, size_t len,
                           bool listed)
{
    if (!lg_hub_presence_on(t))
        return;
    pthread_mutex_lock(&t->lock);
    if (listed)
        lg_presence_leave(t->presence, id, len);
    else
        lg_presence_leave_unlisted(t->presence);
    if (lg_presence_pending(t->presence))
        list_for_report(hub, t);
    pthread_mutex_unlock(&t->lock);
}

int lg_hub_presence_copy(struct lg_hub *hub, struct lg_topic *t, struct lg_presence_list *out)
{
    (void)hub;
    if (!lg_hub_presence_on(t)) {
        *out = (struct lg_presence_list){0};
        return 0;
    }
    pthread_mutex_lock(&t->lock);
    int rc = lg_presence_copy(t->presence, out);
    pthread_mutex_unlock(&t->lock);
    return rc;
}

/* The last worker took the batch: the topic's next one may go (that worker's thread). */
static void batch_taken(void *arg, struct lg_call *call)
{
    (void)call;
    lg_presence_delivered(arg);
}

static void post_batch(struct lg_hub *hub, struct lg_topic *t, struct lg_presence_batch *b)
{
    struct lg_call *call = lg_call_new(LG_CALL_PRESENCE);
    if (!call) {
        lg_presence_batch_unref(b);
        lg_presence_delivered(t->presence);
        LG_STAT_ADD(presence_batches_lost, 1);
        return;
    }
    call->presence = b;
    call->answered = batch_taken;
    call->answered_arg = t->presence;
    lg_hub_post_call(hub, call);
    lg_call_unref(call);
    LG_STAT_ADD(presence_batches, 1);
}

/* Report t's changes, unless its previous batch is still on its way (then they wait, still
 * coalescing, for the next tick). Return value: whether a batch was posted. */
static bool report_topic(struct lg_hub *hub, struct lg_topic *t)
{
    pthread_mutex_lock(&t->lock);
    pthread_mutex_lock(&hub->presence_lock);
    t->reporting = false;
    pthread_mutex_unlock(&hub->presence_lock);
    struct lg_presence_batch *b = NULL;
    bool deleted = atomic_load_explicit(&t->deleted, memory_order_relaxed);
    if (!deleted && !lg_presence_in_flight(t->presence)) {
        bool lost = false;
        b = lg_presence_take_batch(t->presence, t, t->listeners, &lost);
        if (lost) {
            LG_STAT_ADD(presence_batches_lost, 1);
            lg_log(LG_LOG_WARN, "presence of topic %s: out of memory making its batch; the changes "
                        "since the last one are not reported", t->name);
        }
    }
    if (!deleted && lg_presence_pending(t->presence))
        list_for_report(hub, t);
    pthread_mutex_unlock(&t->lock);
    if (b)
        post_batch(hub, t, b);
    return b != NULL;
}

size_t lg_hub_presence_report(struct lg_hub *hub)
{
    pthread_mutex_lock(&hub->presence_lock);
    struct lg_topic *t = hub->reporting;
    hub->reporting = NULL;
    pthread_mutex_unlock(&hub->presence_lock);
    size_t posted = 0;
    while (t) {
        struct lg_topic *next = t->next_reporting;
        posted += report_topic(hub, t);
        lg_topic_unref(t); /* the list's */
        t = next;
    }
    return posted;
}
