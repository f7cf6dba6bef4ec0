/*
 * hub_admin.h - what the admin API asks of the hub: the topic registry listed in name order
 * and paged, one topic inspected, a page of one topic's history read, a topic deleted, the
 * retained history summed for the metrics, and the calls the control port makes to every
 * worker (worker_call.h).
 *
 * Owns:    nothing beyond the hub's state (hub_internal.h).
 * Frees:   a deleted topic goes to the hub's graveyard (freed by lg_hub_expire() once nothing
 *          references it); the caller of lg_hub_delete_topic() gets a reference it hands on to
 *          an END_TOPIC call.
 * Threads: any thread (the control port's). Listing holds the registry lock for reading while
 *          it collects references (one pass over the table, no allocation inside beyond the
 *          result array), then takes each listed topic's lock alone for its figures; deletion
 *          holds the registry write lock and the topic's lock for the unlink and the drop.
 *          Calls: post from any thread; take/done only from worker w's thread.
 * Bounds:  a listing returns at most `limit` topics (the control port caps it at
 *          LG_ADMIN_PAGE_MAX); one pass over the registry (limits.max_topics) per listing.
 */
#ifndef LG_HUB_ADMIN_H
#define LG_HUB_ADMIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cursor.h"
#include "hub.h"
#include "topic_name.h"

struct lg_hub;
struct lg_topic;
struct lg_call;

#define LG_ADMIN_PAGE_MAX 1000

struct lg_topic_info {
    char name[LG_TOPIC_NAME_MAX + 1];
    uint32_t epoch;
    uint64_t last_seq;         /* newest position ever assigned (0 = never published) */
    bool position_known;       /* epoch and last_seq are known (a Redis stream not loaded on
                                  this node: not) */
    bool retained_known;       /* the store can say what it retains */
    uint64_t retained_events, retained_bytes;
    uint32_t subscribers;      /* listening subscriptions, every worker */
    uint64_t publish_rate;     /* events published in the last second (the expiry tick) */
};

/* Which topics a listing keeps (called under the registry read lock: cheap, no hub call). */
typedef bool lg_topic_filter(const char *name, void *arg);

/* Topics whose name starts with prefix, sorts after `after` (byte order; "" = from the start)
 * and, when keep is not NULL, that keep(name, arg) accepts: at most limit of them, in name
 * order, into out[limit]. Return value: how many; *more says whether more follow. -1: out of
 * memory. */
int lg_hub_list_topics(struct lg_hub *hub, const char *prefix, const char *after, size_t limit,
                       lg_topic_filter *keep, void *arg, struct lg_topic_info *out, bool *more);

/* Return value: 0 with *out filled, or -1 when no topic has that name. */
int lg_hub_topic_info(struct lg_hub *hub, const char *name, size_t len, struct lg_topic_info *out);

/* Why lg_hub_read_history() read no page. */
enum lg_history_status {
    LG_HISTORY_OK = 0,
    LG_HISTORY_NO_TOPIC, /* no topic has that name */
    LG_HISTORY_LOADING,  /* its Redis stream is not loaded on this node: asked for (it stays
                            LINGER_MS after); retry */
    LG_HISTORY_AHEAD,    /* the cursor is past the topic's newest event */
    LG_HISTORY_OOM,
};

/* A page of the topic's history after `since` (NULL: from its oldest retained event), as a
 * subscription from that cursor would get it (hub.h, struct lg_replay): a reset when the
 * cursor names another life of the topic (no events; position = the newest), a gap for what
 * is no longer retained, then at most max_events events and, beyond the first, at most
 * max_bytes of them (event->size). out->position is the seq the page ends at. Release out
 * with lg_replay_release() whatever the status. */
enum lg_history_status lg_hub_read_history(struct lg_hub *hub, const char *name, size_t len,
                                           const struct lg_cursor_entry *since,
                                           size_t max_events, uint64_t max_bytes,
                                           struct lg_replay *out);

/* Unlink the topic from the registry (a later publish or subscription creates it anew, with a
 * new epoch) and drop its history. Return value: the topic with a reference for the caller
 * (to hand to an END_TOPIC call), or NULL when no topic has that name. */
struct lg_topic *lg_hub_delete_topic(struct lg_hub *hub, const char *name, size_t len);

/* Topics, and the events and bytes their streams retain (stores that cannot say count 0). */
void lg_hub_history_totals(struct lg_hub *hub, uint64_t *topics, uint64_t *events,
                           uint64_t *bytes);

/* Post call to every worker and wake them; call->pending becomes the number of workers and
 * each worker holds a reference until it answered. */
void lg_hub_post_call(struct lg_hub *hub, struct lg_call *call);
/* Worker w: its next call, or NULL. */
struct lg_call *lg_hub_take_call(struct lg_hub *hub, uint32_t w);
/* Worker w answered call (its slot is written): drops w's reference; the last answer runs
 * the call's own completion (call->answered), which resumes the one request waiting for it. */
void lg_hub_call_done(struct lg_hub *hub, struct lg_call *call, uint32_t w);

#endif
