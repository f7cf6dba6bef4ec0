#include "subscriber.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "encode.h"
#include "event.h"
#include "filter_table.h"
#include "hub.h"
#include "log.h"
#include "presence.h"
#include "worker_stats.h"
#include "stats.h"
#include "subscribe_params.h"
#include "topic.h"
#include "topic_name.h"

#define LAG_CHECK_MIN_QUEUED 32 /* queued events from which every push checks max_lag_ms */

void lg_subscriber_init(struct lg_subscriber *s, const struct lg_render_ops *ops,
                        uint32_t worker, const struct lg_queue_bounds *bounds)
{
    memset(s, 0, sizeof *s);
    s->ops = ops;
    s->worker = worker;
    s->bounds = bounds;
    lg_client_ring_init(&s->ring);
}

struct lg_subscription *lg_subscriber_find(const struct lg_subscriber *s,
                                           const struct lg_topic *t)
{
    for (struct lg_subscription *sn = s->subs; sn; sn = sn->next_of_owner)
        if (sn->topic == t)
            return sn;
    return NULL;
}

_Static_assert(offsetof(struct lg_subscription, pending) < 64,
               "an offer's fields of a subscription fit one cache line");

/* ---- The worker's per-topic lists ------------------------------------------------------ */

/* Room in t's list of this worker's listeners for one more, so that link_listener() cannot
 * fail once the hub has been told. Return value: 0, or -1 (out of memory). */
static int reserve_listener(struct lg_topic *t, uint32_t worker)
{
    struct lg_topic_slot *slot = &t->slots[worker];
    if (slot->listener_count < slot->listener_room)
        return 0;
    uint32_t room = slot->listener_room ? slot->listener_room * 2 : 1;
    struct lg_subscription **grown = realloc(slot->listeners, room * sizeof *grown);
    if (!grown)
        return -1;
    slot->listeners = grown;
    slot->listener_room = room;
    return 0;
}

static void link_listener(struct lg_subscription *sn, uint32_t worker)
{
    struct lg_topic_slot *slot = &sn->topic->slots[worker];
    sn->listener_index = slot->listener_count;
    slot->listeners[slot->listener_count++] = sn;
    sn->listening = true;
}

static void unlink_listener(struct lg_subscription *sn, struct lg_hub *hub, uint32_t worker)
{
    if (!sn->listening)
        return;
    /* The last one takes its place: the order of listeners means nothing (each subscriber
     * gets its own events in order, whoever is served first). */
    struct lg_topic_slot *slot = &sn->topic->slots[worker];
    struct lg_subscription *last = slot->listeners[--slot->listener_count];
    slot->listeners[sn->listener_index] = last;
    last->listener_index = sn->listener_index;
    if (slot->listener_count == 0) {
        free(slot->listeners);
        slot->listeners = NULL;
        slot->listener_room = 0;
    }
    sn->listening = false;
    lg_hub_unsubscribe(hub, sn->topic, worker);
    struct lg_subscriber *s = sn->owner;
    if (s->member)
        lg_hub_presence_leave(hub, sn->topic, s->member, s->member_len, sn->presence_listed);
    sn->presence_listed = false;
}

/* ---- Slow-consumer policy --------------------------------------------------------------- */

static void owe_gap(struct lg_subscriber *s, struct lg_subscription *sn, uint64_t seq)
{
    if (sn->gap_from == 0 && !sn->reset_owed)
        s->notices_owed++;
    if (sn->gap_from == 0)
        sn->gap_from = seq;
    if (seq > sn->gap_to)
        sn->gap_to = seq;
}

/* sn's cursor covers what its filter kept out, once nothing queued before it is unsent. */
static void catch_up(struct lg_subscription *sn)
{
    if (sn->skipped_seq > sn->sent_seq && sn->sent_seq >= sn->pushed_seq)
        sn->sent_seq = sn->skipped_seq;
}

/* Whether sn's filter keeps ev out; if so, its position is passed without queueing it. */
static bool filtered_out(struct lg_subscription *sn, const struct lg_event *ev)
{
    if (lg_filter_table_admits(sn->filter, ev))
        return false;
    sn->skipped_seq = ev->seq;
    catch_up(sn);
    return true;
}

/* Kept only by the few subscribers it fires for, so idle connections do not carry its bytes. */
static void set_disconnect_reason(struct lg_subscriber *s, const char *prefix, const char *why)
{
    char text[128];
    snprintf(text, sizeof text, "%s%s", prefix, why);
    free(s->disconnect_reason);
    s->disconnect_reason = strdup(text);
}

const char *lg_subscriber_disconnect_reason(const struct lg_subscriber *s)
{
    if (s->disconnect_reason != NULL)
        return s->disconnect_reason;
    return s->kicked ? "kicked" : "slow consumer";
}

static void decide_disconnect(struct lg_subscriber *s, const char *why)
{
    static struct lg_ratelimit rl;
    if (s->slow_disconnect)
        return;
    s->slow_disconnect = true;
    set_disconnect_reason(s, "slow consumer: ", why);
    LG_STAT_ADD(clients_disconnected_slow, 1);
    lg_log_ratelimited(&rl, 1000, LG_LOG_WARN, "disconnecting a slow %s client: %s",
                       s->ops->name, why);
    /* Nothing queued will be sent: free it now; the client resumes from its last id. */
    lg_client_ring_release(&s->ring);
}

/* The oldest queued event violates a bound: apply its topic's policy to it.
 * Return value: true if the queue changed (so the caller may re-check), false if not. */
static bool relieve(struct lg_subscriber *s, bool lagging)
{
    struct lg_event *oldest = lg_client_ring_oldest(&s->ring);
    if (!oldest)
        return false;
    struct lg_subscription *sn = lg_subscriber_find(s, oldest->topic_identity);
    if (sn && sn->topic->policy == LG_SLOW_DISCONNECT) {
        decide_disconnect(s, lagging ? "oldest queued event is older than client_queue.max_lag_ms"
                                     : "queue full (client_queue.max_events/max_bytes)");
        return true;
    }
    struct lg_event *ev = lg_client_ring_pop(&s->ring);
    s->dropped++;
    if (sn)
        owe_gap(s, sn, ev->seq);
    if (lagging)
        LG_STAT_ADD(events_dropped_lag, 1);
    else
        LG_STAT_ADD(events_dropped_overflow, 1);
    if (!s->dropping) {
        static struct lg_ratelimit rl;
        s->dropping = true;
        lg_log_ratelimited(&rl, 1000, LG_LOG_WARN,
                           "client too slow on topic %s: dropping its oldest events (%s)",
                           ev->topic_name, lagging ? "lag" : "queue full");
    }
    lg_event_unref(&ev);
    return true;
}

static bool over_bounds(const struct lg_subscriber *s, size_t incoming_bytes)
{
    const struct lg_queue_bounds *b = s->bounds;
    if (s->ring.live == 0)
        return false; /* one event alone is always accepted, whatever its size */
    return s->ring.live >= b->max_events || s->ring.bytes + incoming_bytes > b->max_bytes;
}

bool lg_subscriber_should_write_first(const struct lg_subscriber *s,
                                      const struct lg_subscription *sn, const struct lg_event *ev)
{
    bool voids_queued = ev->epoch != sn->epoch && !sn->pending && !sn->replay_next &&
                        sn->pushed_seq > sn->sent_seq;
    return voids_queued || over_bounds(s, ev->size);
}

static bool too_old(struct lg_subscriber *s, uint64_t now_ns)
{
    if (s->bounds->max_lag_ms == 0)
        return false;
    struct lg_event *oldest = lg_client_ring_oldest(&s->ring);
    if (!oldest)
        return false;
    /* A replayed event starts ageing when the client subscribed, not when it was published. */
    uint64_t since = oldest->published_mono_ns > s->lag_origin_ns ? oldest->published_mono_ns
                                                                   : s->lag_origin_ns;
    return now_ns > since && now_ns - since > s->bounds->max_lag_ms * 1000000u;
}

void lg_subscriber_check_lag(struct lg_subscriber *s, uint64_t now_ns)
{
    while (!s->slow_disconnect && too_old(s, now_ns) && relieve(s, true)) {
    }
}

/* Queue ev, with a reference from run when one is given (a live event offered to many), else
 * one of its own. */
static void queue_event(struct lg_subscriber *s, struct lg_subscription *sn, struct lg_event *ev,
                        struct lg_event_ref_run *run, uint64_t now_ns)
{
    if (s->slow_disconnect)
        return;
    if (sn->topic->policy == LG_SLOW_CONFLATE && ev->key &&
        lg_client_ring_remove_key(&s->ring, sn->topic, ev->key)) {
        LG_STAT_ADD(events_conflated, 1);
        s->dropped++;
    }
    while (!s->slow_disconnect && over_bounds(s, ev->size) && relieve(s, false)) {
    }
    /* A client that keeps up holds only what arrived since its last write; looking at the age
     * of its oldest event on every push would cost a cache miss per delivery for nothing. The
     * worker's tick checks every client holding events once a second. */
    if (s->ring.live >= LAG_CHECK_MIN_QUEUED)
        lg_subscriber_check_lag(s, now_ns);
    if (s->slow_disconnect)
        return;
    sn->pushed_seq = ev->seq;
    struct lg_event *ref = run ? lg_event_ref_from_run(run) : lg_event_ref(ev);
    if (lg_client_ring_push(&s->ring, ref, s->bounds->max_events) != 0) {
        owe_gap(s, sn, ev->seq); /* out of memory: never silent, the client gets a gap */
        return;
    }
    lg_stats_note_queue_depth(s->ring.live);
}

static void resolve_pending(struct lg_subscriber *s, struct lg_subscription *sn);

void lg_subscriber_offer(struct lg_subscriber *s, struct lg_subscription *sn,
                         struct lg_event_ref_run *run, uint64_t now_ns)
{
    struct lg_event *ev = run->ev;
    if (sn->pending) {
        resolve_pending(s, sn); /* the replay includes ev, or starts after it */
        return;
    }
    if (ev->epoch != sn->epoch && !sn->replay_next) {
        /* The stream began a new life (a remote store lost it): what the client holds is
         * void; it gets a reset, then the new life's events */
        sn->epoch = ev->epoch;
        sn->sent_seq = sn->queued_seq = ev->seq - 1;
        sn->pushed_seq = sn->skipped_seq = 0;
        lg_client_ring_remove_topic(&s->ring, sn->topic);
        if (!sn->reset_owed) {
            sn->reset_owed = true;
            if (sn->gap_from == 0)
                s->notices_owed++;
        }
    }
    if (sn->replay_next || ev->seq <= sn->queued_seq || ev->epoch != sn->epoch)
        return; /* part of the replay, queued or still to be paged in from history */
    if (ev->seq > sn->queued_seq + 1) {
        /* Positions are dense (store.h): a live event past a hole means the ones between
         * were lost before this node read them (a Redis tail that fell behind retention).
         * Notices go out before queued events, so the gap covers what is still queued of the
         * topic too: the client's positions never go back. */
        lg_client_ring_remove_topic(&s->ring, sn->topic);
        owe_gap(s, sn, sn->sent_seq + 1);
        owe_gap(s, sn, ev->seq - 1);
    }
    sn->queued_seq = ev->seq;
    if (sn->filter && filtered_out(sn, ev))
        return;
    queue_event(s, sn, ev, run, now_ns);
}

/* ---- Subscribing and paging the replay -------------------------------------------------- */

/* Events the ring can take without any policy firing (at least one). */
static size_t ring_room(const struct lg_subscriber *s)
{
    uint32_t max = s->bounds->max_events;
    return s->ring.live < max ? max - s->ring.live : 0;
}

static uint64_t ring_room_bytes(const struct lg_subscriber *s)
{
    uint64_t max = s->bounds->max_bytes;
    return s->ring.bytes < max ? max - s->ring.bytes : 0;
}

/* Queue one page of replay and note where the next one starts. */
static void take_page(struct lg_subscriber *s, struct lg_subscription *sn,
                      const struct lg_replay *page)
{
    if (page->gap_from) {
        owe_gap(s, sn, page->gap_from);
        owe_gap(s, sn, page->gap_to);
    }
    if (page->count)
        s->lag_origin_ns = lg_mono_ns(); /* replayed events age from when they were queued */
    for (size_t i = 0; i < page->count; i++) {
        sn->queued_seq = page->events[i]->seq;
        if (sn->filter && filtered_out(sn, page->events[i]))
            continue;
        queue_event(s, sn, page->events[i], NULL, 0);
    }
    if (page->gap_to > sn->queued_seq)
        sn->queued_seq = page->gap_to;
    if (page->position > sn->queued_seq)
        sn->queued_seq = page->position;
    sn->replay_next = page->more ? sn->queued_seq + 1 : 0;
}

/* Page in the next page of sn's replay. Return value: false when the ring has no room. */
static bool page_replay(struct lg_subscriber *s, struct lg_subscription *sn)
{
    size_t room = ring_room(s);
    if (room == 0 || s->slow_disconnect)
        return false;
    struct lg_cursor_entry since = {.epoch = sn->epoch, .seq = sn->replay_next - 1};
    struct lg_replay page;
    enum lg_hub_status st = lg_hub_subscribe(s->hub, sn->topic, s->worker, &since, room,
                                             ring_room_bytes(s), false, &page);
    if (st != LG_HUB_OK) {
        lg_warn("topic %s: replay stopped: %s", sn->topic->name, lg_hub_status_message(st));
        sn->replay_next = 0;
        return true;
    }
    take_page(s, sn, &page);
    lg_replay_release(&page);
    return true;
}

/* Page in more replay for every subscription still behind, as far as the ring has room. */
static void page_replays(struct lg_subscriber *s)
{
    for (struct lg_subscription *sn = s->subs; sn; sn = sn->next_of_owner)
        if (sn->replay_next && !page_replay(s, sn))
            return;
}

/* A filtered replay whose pages so far held nothing the filter admits pages on now: a
 * long-poll answers from what is queued when it subscribes. */
static void page_past_filtered(struct lg_subscriber *s, struct lg_subscription *sn)
{
    while (sn->filter && sn->replay_next && s->ring.live == 0 && page_replay(s, sn)) {
    }
}

/* The remote stream sn waited for has loaded (an event of it arrived): compute the replay
 * the subscription would have had, as lg_subscriber_add() does. */
static void resolve_pending(struct lg_subscriber *s, struct lg_subscription *sn)
{
    sn->pending = false;
    struct lg_cursor_entry since = {.epoch = sn->epoch, .seq = sn->sent_seq};
    if (sn->pending_from_now) {
        lg_hub_position_before(s->hub, sn->topic, sn->pending_since_ms, &since);
        if (sn->pending_start.kind != LG_START_NOW)
            lg_hub_start_position(s->hub, sn->topic, sn->pending_start, since.seq, &since);
    }
    struct lg_replay page;
    enum lg_hub_status st = lg_hub_subscribe(s->hub, sn->topic, s->worker, &since, ring_room(s),
                                             ring_room_bytes(s), false, &page);
    if (st != LG_HUB_OK) {
        lg_warn("topic %s: cursor refused once the topic loaded (%s): a reset is sent",
                sn->topic->name, lg_hub_status_message(st));
        lg_hub_position_before(s->hub, sn->topic, INT64_MAX, &since);
        page = (struct lg_replay){.reset = true, .epoch = since.epoch, .position = since.seq};
    }
    if (page.pending) { /* the node's copy is still behind the cursor: the next event again */
        sn->pending = true;
        return;
    }
    sn->epoch = page.epoch;
    if (page.reset) {
        sn->sent_seq = sn->queued_seq = page.position;
        sn->pushed_seq = sn->skipped_seq = 0;
        if (!sn->reset_owed) {
            sn->reset_owed = true;
            if (sn->gap_from == 0)
                s->notices_owed++;
        }
    }
    take_page(s, sn, &page);
    lg_replay_release(&page);
    page_past_filtered(s, sn);
}

enum lg_hub_status lg_subscriber_add(struct lg_subscriber *s, struct lg_hub *hub,
                                     struct lg_topic *t, const struct lg_cursor_entry *since,
                                     struct lg_start start, bool listen, size_t max_replay)
{
    return lg_subscriber_add_filtered(s, hub, t, since, start, listen, max_replay, NULL);
}

enum lg_hub_status lg_subscriber_add_filtered(struct lg_subscriber *s, struct lg_hub *hub,
                                              struct lg_topic *t,
                                              const struct lg_cursor_entry *since,
                                              struct lg_start start, bool listen,
                                              size_t max_replay, const struct lg_filter *filter)
{
    struct lg_subscription *sn = lg_subscriber_find(s, t);
    if (sn && sn->listening)
        return LG_HUB_OK;
    struct lg_cursor_entry from;
    /* A start on a remote stream not loaded yet resolves with the topic's first event, as a
     * subscription from now does, even if the stream loads before lg_hub_subscribe() looks. */
    bool start_unknown = false;
    if (!since && start.kind != LG_START_NOW) {
        if (lg_hub_start_position(hub, t, start, UINT64_MAX, &from))
            since = &from;
        else
            start_unknown = true;
    }
    bool fresh = sn == NULL;
    if (fresh) {
        sn = calloc(1, sizeof *sn);
        if (!sn)
            return LG_HUB_OOM;
        if (filter && !(sn->filter = lg_filter_table_intern(filter))) {
            free(sn);
            return LG_HUB_OOM;
        }
    }
    if (listen && reserve_listener(t, s->worker) != 0) {
        if (fresh) {
            lg_filter_table_unref(&sn->filter);
            free(sn);
        }
        return LG_HUB_OOM;
    }
    s->hub = hub;
    size_t page = ring_room(s);
    if (page > max_replay)
        page = max_replay;
    struct lg_replay replay;
    enum lg_hub_status st =
        lg_hub_subscribe(hub, t, s->worker, since, page, ring_room_bytes(s), listen, &replay);
    if (st != LG_HUB_OK) {
        if (fresh) {
            lg_filter_table_unref(&sn->filter);
            free(sn);
        }
        return st;
    }
    if (fresh) {
        sn->topic = t;
        lg_topic_ref(t); /* given back in free_subscription() */
        sn->owner = s;
        struct lg_subscription **tail = &s->subs;
        while (*tail)
            tail = &(*tail)->next_of_owner;
        *tail = sn;
        s->sub_count++;
    }
    sn->epoch = replay.epoch;
    uint64_t position = since && !replay.reset ? since->seq : replay.position;
    if (fresh || sn->sent_seq < position)
        sn->sent_seq = position;
    sn->queued_seq = sn->sent_seq;
    if (replay.reset && !sn->reset_owed) {
        sn->reset_owed = true;
        if (sn->gap_from == 0)
            s->notices_owed++;
    }
    if (replay.gap_from) {
        owe_gap(s, sn, replay.gap_from);
        owe_gap(s, sn, replay.gap_to);
    }
    sn->pending = replay.pending || start_unknown;
    sn->pending_from_now = sn->pending && !since;
    sn->pending_since_ms = lg_unix_ms();
    sn->pending_start = start;
    take_page(s, sn, &replay);
    lg_replay_release(&replay);
    page_past_filtered(s, sn);
    sn->shown_seq = sn->sent_seq; /* what a stream's first id block (or answer) tells */
    if (listen) {
        sn->presence_after = replay.presence_batches;
        link_listener(sn, s->worker);
        if (s->member)
            sn->presence_listed = lg_hub_presence_join(hub, t, s->member, s->member_len);
    }
    return LG_HUB_OK;
}

enum lg_subscribe_status lg_subscriber_add_all(struct lg_subscriber *s, struct lg_hub *hub,
                                               const struct lg_subscribe_params *p, bool listen,
                                               size_t max_replay, struct lg_rate *creations,
                                               struct lg_subscribe_failure *why)
{
    for (size_t i = 0; i < p->topic_count; i++) {
        why->problem = NULL;
        why->topic = NULL;
        size_t len = strlen(p->topics[i]);
        struct lg_topic *t = lg_hub_find_topic(hub, p->topics[i], len);
        if (!t) {
            if (creations && !lg_rate_take(creations, lg_mono_ms())) {
                why->problem = "this connection creates new topics faster than "
                               "limits.topic_creations_per_s allows; retry shortly";
                why->topic = p->topics[i];
                LG_STAT_ADD(topic_creations_refused, 1);
                return LG_SUBSCRIBE_TOO_MANY_NEW;
            }
            enum lg_hub_status made = lg_hub_topic(hub, p->topics[i], len, &t);
            if (made != LG_HUB_OK) {
                why->problem = made == LG_HUB_BAD_NAME ? lg_topic_name_problem(p->topics[i], len)
                                                       : lg_hub_status_message(made);
                return LG_SUBSCRIBE_UNAVAILABLE;
            }
        }
        const struct lg_cursor_entry *since = p->has_cursor ? lg_cursor_find(&p->cursor, t->name)
                                                            : NULL;
        enum lg_hub_status added =
            lg_subscriber_add_filtered(s, hub, t, since, p->has_start ? p->start : t->start,
                                       listen, max_replay, p->has_filter ? &p->filter : NULL);
        lg_hub_topic_done(hub, t); /* a subscription holds its own reference */
        if (added != LG_HUB_OK) {
            why->problem = lg_hub_status_message(added);
            why->topic = p->topics[i];
            return LG_SUBSCRIBE_INVALID_CURSOR;
        }
    }
    return LG_SUBSCRIBE_OK;
}

static void free_subscription(struct lg_subscriber *s, struct lg_subscription *sn)
{
    if (sn->presence_owed) {
        s->presence_owed--;
        lg_presence_batch_unref(sn->presence_owed);
    }
    if (sn->gap_from || sn->reset_owed)
        s->notices_owed--;
    if (sn->end_owed)
        s->ends_owed--;
    lg_filter_table_unref(&sn->filter);
    lg_topic_unref(sn->topic);
    free(sn);
}

void lg_subscriber_remove(struct lg_subscriber *s, struct lg_hub *hub, struct lg_topic *t)
{
    for (struct lg_subscription **pp = &s->subs; *pp; pp = &(*pp)->next_of_owner) {
        struct lg_subscription *sn = *pp;
        if (sn->topic != t)
            continue;
        unlink_listener(sn, hub, s->worker);
        lg_client_ring_remove_topic(&s->ring, t);
        *pp = sn->next_of_owner;
        s->sub_count--;
        free_subscription(s, sn);
        return;
    }
}

void lg_subscriber_release(struct lg_subscriber *s, struct lg_hub *hub)
{
    struct lg_subscription *sn = s->subs;
    while (sn) {
        struct lg_subscription *next = sn->next_of_owner;
        unlink_listener(sn, hub, s->worker);
        free_subscription(s, sn);
        sn = next;
    }
    s->subs = NULL;
    s->sub_count = 0;
    lg_client_ring_release(&s->ring);
    free(s->disconnect_reason);
    s->disconnect_reason = NULL;
    free(s->member);
    s->member = NULL;
}

bool lg_subscriber_pending(const struct lg_subscriber *s)
{
    for (const struct lg_subscription *sn = s->subs; sn; sn = sn->next_of_owner)
        if (sn->pending)
            return true;
    return false;
}

bool lg_subscriber_has_output(const struct lg_subscriber *s)
{
    return s->ring.live > 0 || s->notices_owed > 0 || s->ends_owed > 0 || s->slow_disconnect ||
           s->presence_owed > 0; /* last: after an event, the ring answers first */
}

int lg_subscriber_set_member(struct lg_subscriber *s, const char *sub, uint64_t client_id)
{
    if (s->member)
        return 0;
    char anonymous[32];
    if (!sub) {
        snprintf(anonymous, sizeof anonymous, "client:%llu", (unsigned long long)client_id);
        sub = anonymous;
    }
    s->member = strdup(sub);
    s->member_len = s->member ? strlen(s->member) : 0;
    return s->member ? 0 : -1;
}

bool lg_subscriber_presence(struct lg_subscriber *s, struct lg_subscription *sn,
                            struct lg_presence_batch *b)
{
    if (b->number <= sn->presence_after)
        return false;
    lg_presence_batch_ref(b);
    if (sn->presence_owed) {
        lg_presence_batch_unref(sn->presence_owed);
        sn->presence_resync = true;
    } else {
        s->presence_owed++;
    }
    sn->presence_owed = b;
    return true;
}

void lg_subscriber_end(struct lg_subscriber *s, struct lg_subscription *sn)
{
    if (sn->end_owed)
        return;
    sn->end_owed = true;
    s->ends_owed++;
}

void lg_subscriber_kick(struct lg_subscriber *s, const char *reason)
{
    if (s->slow_disconnect)
        return;
    s->slow_disconnect = true;
    s->kicked = true;
    set_disconnect_reason(s, "", reason);
    lg_client_ring_release(&s->ring);
}

/* ---- Rendering -------------------------------------------------------------------------- */

static void append_cursor(const struct lg_subscriber *s, struct lg_buf *out, bool shown)
{
    char entry[LG_CURSOR_ENTRY_MAX];
    for (const struct lg_subscription *sn = s->subs; sn; sn = sn->next_of_owner) {
        if (sn != s->subs)
            lg_buf_append(out, ",", 1);
        uint64_t seq = shown ? sn->shown_seq : sn->sent_seq;
        lg_buf_append(out, entry, lg_cursor_format_entry(entry, sn->topic->name, sn->epoch, seq));
    }
}

void lg_subscriber_cursor(const struct lg_subscriber *s, struct lg_buf *out)
{
    append_cursor(s, out, false);
}

void lg_subscriber_shown_cursor(const struct lg_subscriber *s, struct lg_buf *out)
{
    append_cursor(s, out, true);
}

/* Advance sn past what the notice covers, mark it paid, and say what it covered: the id of a
 * notice is the position after it. */
static struct lg_notice settle_notice(struct lg_subscriber *s, struct lg_subscription *sn,
                                      bool reset)
{
    struct lg_notice n = {.reset = reset, .topic = sn->topic->name,
                          .topic_len = sn->topic->name_len, .from = sn->gap_from,
                          .to = sn->gap_to};
    if (reset) {
        sn->reset_owed = false;
        sn->rendered_seq = 0; /* a new life: the next event is sent whole */
        LG_STAT_ADD(resets_sent, 1);
    } else {
        if (sn->gap_to > sn->sent_seq)
            sn->sent_seq = sn->gap_to;
        catch_up(sn);
        sn->gap_from = sn->gap_to = 0;
        LG_STAT_ADD(gaps_sent, 1);
    }
    if (!sn->reset_owed && sn->gap_from == 0)
        s->notices_owed--;
    n.epoch = sn->epoch;
    n.seq = sn->shown_seq = sn->sent_seq;
    return n;
}

/* The end notices owed, each followed by the removal of its subscription (so queued events
 * of the deleted topic are skipped and the cursor no longer names it). Return value: items. */
static size_t render_ends(struct lg_subscriber *s, struct lg_buf *out)
{
    size_t items = 0;
    struct lg_subscription *sn = s->subs;
    while (sn && s->ends_owed) {
        struct lg_subscription *next = sn->next_of_owner;
        if (sn->end_owed) {
            struct lg_notice n = {.end = true, .topic = sn->topic->name,
                                  .topic_len = sn->topic->name_len, .epoch = sn->epoch,
                                  .seq = sn->sent_seq};
            s->ops->render_notice(out, s, &n, items++);
            LG_STAT_ADD(ends_sent, 1);
            lg_subscriber_remove(s, s->hub, sn->topic);
        }
        sn = next;
    }
    return items;
}

/* The presence batches owed: a resync notice first where one was replaced, then the batch's
 * notices. They carry no id: a client's cursor does not move. Return value: items. */
static size_t render_presence(struct lg_subscriber *s, struct lg_buf *out, size_t items)
{
    for (struct lg_subscription *sn = s->subs; sn && s->presence_owed; sn = sn->next_of_owner) {
        struct lg_presence_batch *b = sn->presence_owed;
        if (!b)
            continue;
        struct lg_notice n = {.topic = sn->topic->name, .topic_len = sn->topic->name_len};
        if (sn->presence_resync) {
            n.kind = "resync";
            s->ops->render_notice(out, s, &n, items++);
            LG_STAT_ADD(presence_resyncs_sent, 1);
        }
        for (size_t i = 0; i < b->count; i++) {
            n.kind = b->notices[i].type;
            n.fields = b->notices[i].fields;
            n.fields_len = b->notices[i].fields_len;
            s->ops->render_notice(out, s, &n, items++);
        }
        LG_STAT_ADD(presence_notices_sent, b->count);
        sn->presence_owed = NULL;
        sn->presence_resync = false;
        s->presence_owed--;
        lg_presence_batch_unref(b);
    }
    return items;
}

/* Pop the next event that is still owed to a subscription (unsubscribed ones are skipped). */
static struct lg_event *next_owed(struct lg_subscriber *s, struct lg_subscription **snp)
{
    struct lg_event *ev;
    while ((ev = lg_client_ring_pop(&s->ring))) {
        struct lg_subscription *sn = lg_subscriber_find(s, ev->topic_identity);
        if (sn && ev->seq > sn->sent_seq) {
            *snp = sn;
            return ev;
        }
        lg_event_unref(&ev);
    }
    return NULL;
}

/* One batch through s->ops: its framing, the notices owed (resets before gaps, subscribe
 * order), then events oldest first within max_bytes and max_events. */
static size_t render_batch(struct lg_subscriber *s, struct lg_buf *out, size_t max_bytes,
                           size_t max_events)
{
    const struct lg_render_ops *ops = s->ops;
    size_t items = 0, events = 0;
    uint64_t now_ns = 0;
    size_t start = out->len;
    if (ops->render_begin)
        ops->render_begin(out);
    if (s->ends_owed)
        items = render_ends(s, out);
    for (struct lg_subscription *sn = s->subs; sn && s->notices_owed; sn = sn->next_of_owner) {
        for (int reset = 1; reset >= 0; reset--) {
            bool owed = reset ? sn->reset_owed : sn->gap_from != 0;
            if (!owed)
                continue;
            struct lg_notice n = settle_notice(s, sn, reset);
            ops->render_notice(out, s, &n, items++);
        }
    }
    if (s->presence_owed)
        items = render_presence(s, out, items);
    while (events < max_events && out->len < max_bytes) {
        struct lg_subscription *sn;
        struct lg_event *ev = lg_client_ring_oldest(&s->ring);
        if (!ev)
            break;
        if (events > 0 && out->len + ops->event_bytes(ev) > max_bytes)
            break;
        ev = next_owed(s, &sn);
        if (!ev)
            break;
        sn->sent_seq = sn->shown_seq = ev->seq;
        catch_up(sn);
        if (events == 0)
            now_ns = lg_mono_ns();
        lg_histogram_observe_owned(&lg_worker_stats[s->worker].delivery_lag,
                             now_ns > ev->published_mono_ns ? now_ns - ev->published_mono_ns : 0);
        if (ev->delta_frame && s->deltas && sn->rendered_seq + 1 == ev->seq)
            ops->render_delta(out, s, ev, items++);
        else
            ops->render_event(out, s, ev, items++);
        sn->rendered_seq = ev->seq;
        lg_event_unref(&ev);
        events++;
    }
    if (ops->render_end)
        ops->render_end(out, s);
    LG_STAT_ADD(events_delivered, events);
    if (ops->delivered)
        atomic_fetch_add_explicit(ops->delivered, events, memory_order_relaxed);
    s->delivered += events;
    s->bytes_out += out->len - start;
    return events;
}

size_t lg_subscriber_render_stream(struct lg_subscriber *s, struct lg_buf *out, size_t max_bytes,
                                   uint32_t sse_retry_ms)
{
    if (s->slow_disconnect) {
        if (s->ops->render_slow)
            s->ops->render_slow(out, s->kicked ? "kicked" : "slow_consumer",
                                lg_subscriber_disconnect_reason(s), sse_retry_ms);
        return 0;
    }
    size_t events = render_batch(s, out, max_bytes, SIZE_MAX);
    if (s->ring.live == 0)
        s->dropping = false;
    page_replays(s);
    return events;
}

size_t lg_subscriber_render_poll(struct lg_subscriber *s, struct lg_buf *out, size_t max_events)
{
    return render_batch(s, out, SIZE_MAX, max_events);
}
