/*
 * worker_admin.c - a worker answers the admin API's calls (worker_call.h) on its own thread:
 * it lists its clients, disconnects one, or tells the subscribers of a deleted topic that it
 * ended. Called on every wake-up, before the sweep (worker.c).
 */
#include <stddef.h>
#include <string.h>

#include <jansson.h>

#include "clock.h"
#include "conn.h"
#include "conn_report.h"
#include "hub.h"
#include "hub_admin.h"
#include "presence.h"
#include "topic.h"
#include "worker_call.h"
#include "worker_internal.h"

static struct lg_conn *conn_of(struct lg_subscriber *s)
{
    return (struct lg_conn *)((char *)s - offsetof(struct lg_conn, sub));
}

static bool listens_to(const struct lg_conn *c, const char *topic)
{
    for (const struct lg_subscription *sn = c->sub.subs; sn; sn = sn->next_of_owner)
        if (strcmp(sn->topic->name, topic) == 0)
            return true;
    return false;
}

/* Clients with id > after_id in id order (the connection list is in open order), at most
 * limit + 1 of them (one more than a page says whether another page follows). */
static void list_clients(struct lg_worker *w, struct lg_call *call)
{
    json_t *list = json_array();
    uint64_t now = lg_mono_ns();
    for (struct lg_dlink *l = w->home.conns.first; l && list; l = l->next) {
        struct lg_conn *c = lg_dlist_entry(l, struct lg_conn, links.all);
        if (c->report.id <= call->after_id || !lg_conn_is_client(c) ||
            (call->topic[0] && !listens_to(c, call->topic)))
            continue;
        if (json_array_size(list) > call->limit)
            break;
        json_array_append_new(list, lg_conn_report_json(c, now));
    }
    call->results[w->home.index] = list;
}

static void kick_client(struct lg_worker *w, struct lg_call *call)
{
    for (struct lg_dlink *l = w->home.conns.first; l; l = l->next) {
        struct lg_conn *c = lg_dlist_entry(l, struct lg_conn, links.all);
        if (c->report.id == call->client_id && lg_conn_is_client(c)) {
            lg_conn_kick(c, call->reason);
            call->found[w->home.index] = 1;
            return;
        }
    }
}

/* Every subscription of this worker to the deleted topic owes its end notice; the write
 * that sends it removes the subscription. */
static void end_topic(struct lg_worker *w, struct lg_call *call)
{
    struct lg_topic *t = call->ended;
    const struct lg_topic_slot *slot = &t->slots[w->home.index];
    for (uint32_t i = 0; i < slot->listener_count; i++) {
        struct lg_subscription *sn = slot->listeners[i];
        lg_subscriber_end(sn->owner, sn);
        lg_conn_want_write(conn_of(sn->owner));
        call->found[w->home.index]++;
    }
}

/* Every subscription of this worker to the batch's topic that listened when it was made owes
 * it (presence.h). */
static void owe_presence(struct lg_worker *w, struct lg_call *call)
{
    struct lg_presence_batch *b = call->presence;
    const struct lg_topic_slot *slot = &b->topic->slots[w->home.index];
    for (uint32_t i = 0; i < slot->listener_count; i++) {
        struct lg_subscription *sn = slot->listeners[i];
        if (!lg_subscriber_presence(sn->owner, sn, b))
            continue;
        lg_conn_want_write(conn_of(sn->owner));
        call->found[w->home.index]++;
    }
}

void lg_worker_answer_calls(struct lg_worker *w)
{
    struct lg_hub *hub = w->shared.hub;
    struct lg_call *call;
    while ((call = lg_hub_take_call(hub, w->home.index))) {
        switch (call->kind) {
        case LG_CALL_LIST_CLIENTS:
            list_clients(w, call);
            break;
        case LG_CALL_KICK:
            kick_client(w, call);
            break;
        case LG_CALL_END_TOPIC:
            end_topic(w, call);
            break;
        case LG_CALL_PRESENCE:
            owe_presence(w, call);
            break;
        }
        lg_hub_call_done(hub, call, w->home.index);
    }
}
