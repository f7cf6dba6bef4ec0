/* control_status.c - GET /healthz (alive), /readyz (lifecycle) and /v1/stats (counters). */
#include <jansson.h>

#include "control.h"
#include "control_internal.h"
#include "control_reply.h"
#include "hub.h"
#include "accounting.h"
#include "stats.h"

int lg_ctl_handle_healthz(struct lg_control *c, struct MHD_Connection *conn, const char *url,
                          struct lg_ctl_request *r)
{
    (void)c, (void)url, (void)r;
    return lg_ctl_reply_json(conn, 200, json_pack("{s:s}", "status", "ok"));
}

int lg_ctl_handle_readyz(struct lg_control *c, struct MHD_Connection *conn, const char *url,
                         struct lg_ctl_request *r)
{
    (void)url, (void)r;
    int state = atomic_load_explicit(c->lifecycle, memory_order_acquire);
    const char *name = state == LG_LIFECYCLE_READY      ? "ready"
                       : state == LG_LIFECYCLE_DRAINING ? "draining"
                                                        : "starting";
    if (!lg_hub_remote(c->hub))
        return lg_ctl_reply_json(conn, state == LG_LIFECYCLE_READY ? 200 : 503,
                                 json_pack("{s:s}", "status", name));
    /* With Redis a node that cannot reach it cannot accept publishes: not ready */
    bool store_up = lg_hub_store_ready(c->hub);
    if (state == LG_LIFECYCLE_READY && !store_up)
        name = "store_unavailable";
    return lg_ctl_reply_json(conn, state == LG_LIFECYCLE_READY && store_up ? 200 : 503,
                             json_pack("{s:s,s:s}", "status", name, "store",
                                       lg_hub_store_state(c->hub)));
}

/* A JSON snapshot of lg_stats: what the operator (and the tests) can see of the data plane
 * until the Prometheus endpoint of the observability work exists. */
int lg_ctl_handle_stats(struct lg_control *c, struct MHD_Connection *conn, const char *url,
                        struct lg_ctl_request *r)
{
    (void)url, (void)r;
#define STAT(name) #name, (json_int_t)LG_STAT_GET(name)
    json_t *body = json_pack(
        "{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,"
        "s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}",
        STAT(events_published), STAT(publishes_refused), STAT(publishes_deduplicated),
        STAT(publishes_held), STAT(publish_wait_ms_total), STAT(publishes_refused_overload),
        STAT(events_delivered),
        STAT(events_dropped_overflow), STAT(events_dropped_lag), STAT(events_conflated),
        STAT(gaps_sent), STAT(clients_disconnected_slow), STAT(history_evicted),
        STAT(clients_sse), STAT(clients_ws), STAT(clients_poll),
        "connections_open", (json_int_t)lg_account_connections(),
        STAT(connections_refused), STAT(connections_refused_address), STAT(requests_rejected),
        STAT(max_queue_depth),
        "event_bytes_live", (json_int_t)lg_account_event_bytes(),
        "events_live", (json_int_t)lg_account_events(), STAT(topics), STAT(topics_collected),
        STAT(topic_creations_refused), STAT(ws_closed_message_rate),
        STAT(control_connections_timed_out), STAT(sys_stats_published),
        STAT(sys_stats_skipped));
    if (body)
        json_object_set_new(body, "deltas_delivered",
                            json_integer((json_int_t)LG_STAT_GET(deltas_delivered)));
    if (body) {
        json_object_set_new(body, "presence_batches",
                            json_integer((json_int_t)LG_STAT_GET(presence_batches)));
        json_object_set_new(body, "presence_batches_lost",
                            json_integer((json_int_t)LG_STAT_GET(presence_batches_lost)));
        json_object_set_new(body, "presence_notices_sent",
                            json_integer((json_int_t)LG_STAT_GET(presence_notices_sent)));
        json_object_set_new(body, "presence_resyncs_sent",
                            json_integer((json_int_t)LG_STAT_GET(presence_resyncs_sent)));
        json_object_set_new(body, "presence_unlisted",
                            json_integer((json_int_t)LG_STAT_GET(presence_unlisted)));
        json_object_set_new(body, "presence_shares_failed",
                            json_integer((json_int_t)LG_STAT_GET(presence_shares_failed)));
    }
    if (body && lg_hub_remote(c->hub)) {
        json_object_set_new(body, "publishes_refused_store",
                            json_integer((json_int_t)LG_STAT_GET(publishes_refused_store)));
        json_object_set_new(body, "redis_connections_lost",
                            json_integer((json_int_t)LG_STAT_GET(redis_connections_lost)));
        json_object_set_new(body, "redis_tail_stalls",
                            json_integer((json_int_t)LG_STAT_GET(redis_tail_stalls)));
        json_object_set_new(body, "redis_behind_marked",
                            json_integer((json_int_t)LG_STAT_GET(redis_behind_marked)));
        json_object_set_new(body, "redis_replicas_short",
                            json_integer((json_int_t)LG_STAT_GET(redis_replicas_short)));
    }
#undef STAT
    /* Authorization refusals by reason (docs/security.md), publishes refused while draining,
     * clients closed without their notice and WebSocket compression, set beside the packed
     * ones. */
    static const struct {
        const char *name;
        _Atomic uint64_t *counter;
    } auth_counters[] = {
        {"auth_refused_missing", &lg_stats.auth_refused_missing},
        {"auth_refused_malformed", &lg_stats.auth_refused_malformed},
        {"auth_refused_expired", &lg_stats.auth_refused_expired},
        {"auth_refused_not_yet_valid", &lg_stats.auth_refused_not_yet_valid},
        {"auth_refused_bad_signature", &lg_stats.auth_refused_bad_signature},
        {"auth_refused_wrong_algorithm", &lg_stats.auth_refused_wrong_algorithm},
        {"auth_refused_unknown_key", &lg_stats.auth_refused_unknown_key},
        {"auth_refused_topic", &lg_stats.auth_refused_topic},
        {"auth_refused_origin", &lg_stats.auth_refused_origin},
        {"auth_refused_control_token", &lg_stats.auth_refused_control_token},
        {"publishes_refused_draining", &lg_stats.publishes_refused_draining},
        {"clients_closed_unread", &lg_stats.clients_closed_unread},
        {"auth_streams_expired", &lg_stats.auth_streams_expired},
        {"auth_refreshed", &lg_stats.auth_refreshed},
        {"ws_deflate_negotiated", &lg_stats.ws_deflate_negotiated},
        {"ws_deflate_declined", &lg_stats.ws_deflate_declined},
        {"ws_deflate_events", &lg_stats.ws_deflate_events},
        {"ws_deflate_frames", &lg_stats.ws_deflate_frames},
        {"ws_deflate_bytes_before", &lg_stats.ws_deflate_bytes_before},
        {"ws_deflate_bytes_after", &lg_stats.ws_deflate_bytes_after},
        {"writes_batched", &lg_stats.writes_batched},
        {"write_batches", &lg_stats.write_batches},
        {"hook_answers_allow", &lg_stats.hook_answers_allow},
        {"hook_answers_deny", &lg_stats.hook_answers_deny},
        {"hook_answers_down", &lg_stats.hook_answers_down},
        {"hook_cache_hits", &lg_stats.hook_cache_hits},
        {"hook_overflow", &lg_stats.hook_overflow},
        {"webhooks_sent", &lg_stats.webhooks_sent},
        {"webhooks_failed", &lg_stats.webhooks_failed},
        {"webhooks_dropped_queue_full", &lg_stats.webhooks_dropped_queue_full},
        {"webhooks_dropped_attempts", &lg_stats.webhooks_dropped_attempts},
        {"webhooks_dropped_shutdown", &lg_stats.webhooks_dropped_shutdown},
    };
    for (size_t i = 0; body && i < sizeof auth_counters / sizeof auth_counters[0]; i++)
        json_object_set_new(body, auth_counters[i].name,
                            json_integer((json_int_t)atomic_load_explicit(
                                auth_counters[i].counter, memory_order_relaxed)));
    return lg_ctl_reply_json(conn, 200, body);
}

