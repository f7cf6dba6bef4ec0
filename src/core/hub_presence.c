/*
 * hub_presence.c - occupancy and presence (presence.h) through the hub: a topic's state lives
 * under its lock, joined and left by the workers as their subscriptions start and stop
 * listening; a topic with changes goes on the hub's `reporting` list, and the main thread's
 * tick (lg_hub_presence_report) turns each into one coalesced batch, posted to every worker
 * as a call (worker_call.h) that owes the batch to that worker's subscribers of the topic.
 * Nothing here runs per event: only per subscribe, unsubscribe and tick.
 *
 * Across nodes (a remote store with share_presence): a topic with members listening here goes
 * on the hub's `sharing` list; each tick, before the batches, the main thread copies every
 * such topic's local members into one share and hands it to the store, which publishes them
 * and reads the other nodes' back on its own thread (store_redis.h); their answer
 * (lg_hub__presence_seen, the store's thread, under the topic's lock) marks the members other
 * nodes list, and what changed goes into the next tick's batch like a local join or leave.
 * A topic stays shared one tick after its last local member left (so the store removes it)
 * and is then let go: with nobody here to tell, its view here is emptied.
 */
#include <stdlib.h>
#include <string.h>

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

/* Put t on the list whose members each tick shares (a reference of the list's). t->lock held. */
static void list_for_share(struct lg_hub *hub, struct lg_topic *t)
{
    pthread_mutex_lock(&hub->presence_lock);
    if (!t->sharing) {
        t->sharing = true;
        lg_topic_ref(t);
        t->next_sharing = hub->sharing;
        hub->sharing = t;
    }
    pthread_mutex_unlock(&hub->presence_lock);
}

static bool shares_presence(const struct lg_hub *hub)
{
    return hub->store->ops->share_presence != NULL;
}

bool lg_hub_presence_join(struct lg_hub *hub, struct lg_topic *t, const char *id, size_t len)
{
    if (!lg_hub_presence_on(t))
        return false;
    pthread_mutex_lock(&t->lock);
    bool listed = lg_presence_join(t->presence, id, len);
    if (lg_presence_pending(t->presence))
        list_for_report(hub, t);
    if (listed && shares_presence(hub))
        list_for_share(hub, t);
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

/* ---- Across nodes ------------------------------------------------------------------------- */

void lg_hub__presence_seen(void *arg, void *owner, const char *const *ids, const size_t *lens,
                           size_t n)
{
    struct lg_hub *hub = arg;
    struct lg_topic *t = owner;
    pthread_mutex_lock(&t->lock);
    pthread_mutex_lock(&hub->presence_lock);
    bool shared = t->sharing; /* let go meanwhile: its view here stays empty */
    pthread_mutex_unlock(&hub->presence_lock);
    if (shared) {
        lg_presence_set_remote(t->presence, ids, lens, n);
        if (lg_presence_pending(t->presence))
            list_for_report(hub, t);
    }
    pthread_mutex_unlock(&t->lock);
}

/* One tick's share: what the store reads, and what it points into. */
struct share_box {
    struct lg_presence_share share;
    struct lg_topic **topics;          /* a reference each (the sharing list's, handed over) */
    struct lg_presence_list *lists;    /* each topic's local members */
};

static void release_box(struct lg_presence_share *share)
{
    struct share_box *box = (struct share_box *)share;
    for (uint32_t i = 0; i < share->count; i++) {
        lg_presence_list_release(&box->lists[i]);
        lg_topic_unref(box->topics[i]);
    }
    free(box->topics);
    free(box->lists);
    free(share->topics);
    free(box);
}

/* Copy t's local members into the box's next slot, or let t go (its reference dropped).
 * Out of memory, t stays listed for the next tick. Return value: whether t was added. */
static bool add_to_share(struct lg_hub *hub, struct share_box *box, struct lg_topic *t)
{
    uint32_t i = box->share.count;
    pthread_mutex_lock(&t->lock);
    uint32_t before = lg_presence_shared(t->presence);
    bool deleted = atomic_load_explicit(&t->deleted, memory_order_relaxed);
    int rc = deleted ? 0 : lg_presence_copy_local(t->presence, &box->lists[i]);
    bool wanted = !deleted && (rc != 0 || box->lists[i].count > 0 || before > 0);
    if (wanted) {
        list_for_share(hub, t);
    } else if (!deleted) {
        lg_presence_set_remote(t->presence, NULL, NULL, 0);
        if (lg_presence_pending(t->presence))
            list_for_report(hub, t);
    }
    pthread_mutex_unlock(&t->lock);
    if (!wanted || rc != 0) {
        if (rc != 0)
            LG_STAT_ADD(presence_shares_failed, 1);
        lg_presence_list_release(&box->lists[i]);
        lg_topic_unref(t);
        return false;
    }
    box->topics[i] = t;
    box->share.topics[i] = (struct lg_presence_share_topic){
        .name = t->name, .name_len = t->name_len, .owner = t,
        .max_members = lg_presence_max_members(t->presence),
        .ids = box->lists[i].ids, .count = (uint32_t)box->lists[i].count};
    box->share.count++;
    return true;
}

/* Hand the store this node's members of every shared topic (one share a tick). */
static void share_members(struct lg_hub *hub)
{
    pthread_mutex_lock(&hub->presence_lock);
    struct lg_topic *t = hub->sharing;
    hub->sharing = NULL;
    uint32_t n = 0;
    for (struct lg_topic *u = t; u; u = u->next_sharing) {
        u->sharing = false;
        n++;
    }
    pthread_mutex_unlock(&hub->presence_lock);
    if (!t)
        return;
    struct share_box *box = calloc(1, sizeof *box);
    if (box) {
        box->topics = calloc(n, sizeof *box->topics);
        box->lists = calloc(n, sizeof *box->lists);
        box->share.topics = calloc(n, sizeof *box->share.topics);
        box->share.release = release_box;
    }
    if (!box || !box->topics || !box->lists || !box->share.topics) {
        lg_warn("presence across nodes: out of memory sharing %u topics this tick", n);
        LG_STAT_ADD(presence_shares_failed, n);
        for (struct lg_topic *next; t; t = next) { /* shared again at the next tick */
            next = t->next_sharing;
            pthread_mutex_lock(&t->lock);
            list_for_share(hub, t);
            pthread_mutex_unlock(&t->lock);
            lg_topic_unref(t); /* the old list's */
        }
        if (box)
            release_box(&box->share);
        return;
    }
    for (struct lg_topic *next; t; t = next) {
        next = t->next_sharing;
        add_to_share(hub, box, t);
    }
    if (box->share.count == 0) {
        release_box(&box->share);
        return;
    }
    hub->store->ops->share_presence(hub->store, &box->share);
}

size_t lg_hub_presence_report(struct lg_hub *hub)
{
    if (shares_presence(hub))
        share_members(hub);
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
