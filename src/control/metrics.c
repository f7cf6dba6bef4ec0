/*
 * metrics.c - GET /metrics: the Prometheus text exposition (format 0.0.4) of the gateway's
 * counters, gauges and histograms (docs/operations.md lists every metric).
 *
 * The exposition is a table of rows: a metric's name, type, help, labels and where its value
 * comes from (an lg_stats counter or gauge, or a function). Rows of one metric are adjacent
 * (one HELP/TYPE, one series per row), so a new counter is one row. Per-worker series and the
 * histograms are rendered after the table from the worker slots (worker_stats.h, merged here)
 * and the control port's own histograms. Reading never takes a lock a publish or a worker
 * holds for long: counters are relaxed atomics; the retained-history sum takes the registry
 * read lock and each topic's lock alone, briefly.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <microhttpd.h>

#include "accounting.h"
#include "control.h"
#include "control_internal.h"
#include "control_reply.h"
#include "encode.h"
#include "histogram.h"
#include "hub.h"
#include "hub_admin.h"
#include "stats.h"
#include "topic_glob.h"
#include "worker_stats.h"

struct metric_row {
    const char *name;
    const char *type;             /* "counter" or "gauge" */
    const char *help;
    const char *labels;           /* label pairs without braces, or NULL */
    _Atomic uint64_t *counter;    /* one of these three is the source */
    _Atomic int64_t *gauge;
    double (*value)(const struct lg_control *c);
};

#define COUNTER(n, h, l, field) {.name = n, .type = "counter", .help = h, .labels = l, \
                                 .counter = &lg_stats.field}
#define GAUGE(n, h, l, field) {.name = n, .type = "gauge", .help = h, .labels = l, \
                               .gauge = &lg_stats.field}
#define FN(n, t, h, l, fn) {.name = n, .type = t, .help = h, .labels = l, .value = fn}

static double one(const struct lg_control *c) { (void)c; return 1; }
static double store_remote(const struct lg_control *c) { return lg_hub_remote(c->hub); }
static double store_ready(const struct lg_control *c) { return lg_hub_store_ready(c->hub); }
static double connections(const struct lg_control *c)
{
    (void)c;
    return (double)lg_account_connections();
}
static double live_events(const struct lg_control *c)
{
    (void)c;
    return (double)lg_account_events();
}
static double live_bytes(const struct lg_control *c)
{
    (void)c;
    return (double)lg_account_event_bytes();
}
static double start_time(const struct lg_control *c) { return (double)c->started_unix_ms / 1000.0; }
static double backlog(const struct lg_control *c) { return (double)lg_hub_backlog(c->hub); }

static const char clients_help[] = "Clients connected now, by transport (poll: held long-polls).";
static const char opened_help[] = "Public-port connections accepted.";
static const char closed_help[] =
    "Public-port connections closed after they reached a transport, by reason.";
static const char refused_conn_help[] = "Connections refused at accept or upgrade, by limit.";
static const char delivered_help[] = "Events written to clients, by transport.";
static const char dropped_help[] = "Events dropped for slow clients, by reason.";
static const char auth_refused_help[] =
    "Requests, connections and subscriptions refused by authorization, by reason.";
static const char refused_pub_help[] = "Publishes refused with 503, by reason.";
static const char client_refused_help[] =
    "Publishes from WebSocket clients (the publish op) refused, by reason.";
static const char notices_help[] = "Notices written to clients, by kind.";
static const char reloads_help[] =
    "SIGHUP reloads of the config file, by result (applied; refused: a key that needs a "
    "restart changed, nothing applied; failed: invalid file or key file, nothing applied).";

static const char hook_answers_help[] =
    "Subscribe hook answers by kind, one per topic asked (down: unreachable, late, non-200 or "
    "garbage).";
static const char webhooks_dropped_help[] = "Webhook notices never delivered, by reason.";

/* The families: one name, one help text, a label per row. */
#define FAMILY(n, h, label, value, field) COUNTER(n, h, label "=\"" value "\"", field)
#define CLIENTS(v, f) GAUGE("livegate_clients", clients_help, "transport=\"" v "\"", f)
#define CLOSED(v, f) FAMILY("livegate_connections_closed_total", closed_help, "reason", v, f)
#define CONN_REFUSED(v, f) \
    FAMILY("livegate_connections_refused_total", refused_conn_help, "reason", v, f)
#define PUBLISH_REFUSED(v, f) \
    FAMILY("livegate_publishes_refused_total", refused_pub_help, "reason", v, f)
#define CLIENT_REFUSED(v, f) \
    FAMILY("livegate_client_publishes_refused_total", client_refused_help, "reason", v, f)
#define DELIVERED(v, f) \
    FAMILY("livegate_events_delivered_total", delivered_help, "transport", v, f)
#define DROPPED(v, f) FAMILY("livegate_events_dropped_total", dropped_help, "reason", v, f)
#define NOTICES(v, f) FAMILY("livegate_notices_sent_total", notices_help, "kind", v, f)
#define RELOADS(v, f) FAMILY("livegate_config_reloads_total", reloads_help, "result", v, f)
#define AUTH_REFUSED(v, f) \
    FAMILY("livegate_auth_refused_total", auth_refused_help, "reason", v, f)

static const struct metric_row rows[] = {
    FN("livegate_build_info", "gauge", "The running build (always 1).",
       "version=\"" LG_VERSION "\"", one),
    FN("livegate_start_time_seconds", "gauge", "When the process started, Unix seconds.", NULL,
       start_time),
    FN("livegate_store_remote", "gauge",
       "1 when topics are kept in Redis (the redis section), 0 for the memory store.", NULL,
       store_remote),
    FN("livegate_store_ready", "gauge",
       "1 when the store accepts publishes (memory: always; Redis: the bridge is connected).",
       NULL, store_ready),
    COUNTER("livegate_redis_connections_lost_total",
            "Connections to Redis lost (the bridge reconnects with backoff).", NULL,
            redis_connections_lost),
    COUNTER("livegate_redis_behind_marked_total",
            "Topics this node marked behind in Redis (publishers on every node wait meanwhile).",
            NULL, redis_behind_marked),
    COUNTER("livegate_redis_tail_stalls_total",
            "Events from Redis a worker inbox had no room for: the topic paused, then read again.",
            NULL,
            redis_tail_stalls),
    COUNTER("livegate_redis_replicas_short_total",
            "Publishes whose WAIT saw fewer than redis.wait_replicas replicas (answered 503; "
            "also counted as refused, reason store_unavailable).", NULL,
            redis_replicas_short),
    CLIENTS("sse", clients_sse),
    CLIENTS("websocket", clients_ws),
    CLIENTS("poll", clients_poll),
    FN("livegate_connections", "gauge", "Public-port connections open now (any state).", NULL,
       connections),
    COUNTER("livegate_connections_opened_total", opened_help, NULL, connections_opened),
    CLOSED("client", connections_closed_client),
    CLOSED("slow_consumer", connections_closed_slow),
    CLOSED("policy", connections_closed_policy),
    CLOSED("drain", connections_closed_drain),
    CLOSED("error", connections_closed_error),
    CLOSED("admin", connections_closed_admin),
    CLOSED("keepalive", connections_closed_keepalive),
    COUNTER("livegate_clients_closed_unread_total",
            "Kicked or slow-consumer-disconnected clients closed hard: they did not take their "
            "notice within 1 s.", NULL, clients_closed_unread),
    CONN_REFUSED("max_connections", connections_refused),
    CONN_REFUSED("max_connections_per_address", connections_refused_address),
    COUNTER("livegate_requests_rejected_total",
            "Public-port requests answered with an error status (4xx/5xx).", NULL,
            requests_rejected),
    COUNTER("livegate_ws_closed_message_rate_total",
            "WebSocket clients closed 1008 for sending faster than websocket.max_messages_per_s.",
            NULL, ws_closed_message_rate),
    COUNTER("livegate_ws_deflate_negotiated_total",
            "WebSocket handshakes that agreed on permessage-deflate (websocket.compression).",
            NULL, ws_deflate_negotiated),
    COUNTER("livegate_ws_deflate_declined_total",
            "WebSocket handshakes that offered permessage-deflate with no offer livegate accepts.",
            NULL, ws_deflate_declined),
    COUNTER("livegate_ws_deflate_events_total",
            "Events compressed for WebSocket: once per event, whatever its subscribers.", NULL,
            ws_deflate_events),
    COUNTER("livegate_ws_deflate_frames_total",
            "Event frames written compressed to WebSocket clients.", NULL, ws_deflate_frames),
    COUNTER("livegate_ws_deflate_bytes_before_total",
            "Bytes of the compressed event frames before compression.", NULL,
            ws_deflate_bytes_before),
    COUNTER("livegate_ws_deflate_bytes_after_total",
            "Bytes of the compressed event frames as written.", NULL, ws_deflate_bytes_after),
    COUNTER("livegate_writes_batched_total",
            "Writes to subscribers' sockets sent in a batch (batched_writes).",
            NULL, writes_batched),
    COUNTER("livegate_write_batches_total",
            "Batches of subscribers' writes (an io_uring submission; a send() for a batch of "
            "one): writes_batched / this = the batch.",
            NULL, write_batches),
    COUNTER("livegate_events_published_total", "Events accepted by the publish API.", NULL,
            events_published),
    COUNTER("livegate_publishes_deduplicated_total",
            "Publishes answered with an earlier event (idempotency key in history).", NULL,
            publishes_deduplicated),
    PUBLISH_REFUSED("overload", publishes_refused_overload),
    PUBLISH_REFUSED("max_topics", publishes_refused_topics),
    PUBLISH_REFUSED("max_retained_bytes", publishes_refused_memory),
    PUBLISH_REFUSED("out_of_memory", publishes_refused_oom),
    PUBLISH_REFUSED("store_unavailable", publishes_refused_store),
    PUBLISH_REFUSED("draining", publishes_refused_draining),
    COUNTER("livegate_publishes_held_total",
            "Publishes held for a worker's room (overload pacing), by reason.",
            "reason=\"workers_behind\"", publishes_held),
    COUNTER("livegate_client_publishes_accepted_total",
            "Publishes from WebSocket clients (the publish op) accepted and answered with their "
            "id (also counted in livegate_events_published_total).", NULL,
            client_publishes_accepted),
    CLIENT_REFUSED("forbidden", client_publishes_refused_forbidden),
    CLIENT_REFUSED("rate_limited", client_publishes_refused_rate),
    CLIENT_REFUSED("invalid", client_publishes_refused_invalid),
    CLIENT_REFUSED("too_large", client_publishes_refused_too_large),
    CLIENT_REFUSED("too_many_pending", client_publishes_refused_pending),
    CLIENT_REFUSED("overloaded", client_publishes_refused_overload),
    CLIENT_REFUSED("unavailable", client_publishes_refused_unavailable),
    CLIENT_REFUSED("draining", client_publishes_refused_draining),
    DELIVERED("sse", events_delivered_sse),
    DELIVERED("websocket", events_delivered_ws),
    DELIVERED("poll", events_delivered_poll),
    COUNTER("livegate_deltas_delivered_total",
            "Events of document topics written to WebSocket clients as deltas (also counted in "
            "livegate_events_delivered_total).", NULL, deltas_delivered),
    DROPPED("overflow", events_dropped_overflow),
    DROPPED("lag", events_dropped_lag),
    DROPPED("conflated", events_conflated),
    NOTICES("gap", gaps_sent),
    NOTICES("reset", resets_sent),
    NOTICES("end", ends_sent),
    NOTICES("presence", presence_notices_sent),
    NOTICES("presence_resync", presence_resyncs_sent),
    COUNTER("livegate_presence_batches_total",
            "Coalesced presence and occupancy batches handed to the workers.", NULL,
            presence_batches),
    COUNTER("livegate_presence_batches_lost_total",
            "Presence batches that could not be made (out of memory): their changes are lost.",
            NULL, presence_batches_lost),
    COUNTER("livegate_presence_unlisted_total",
            "Subscriptions to a presence topic beyond presence_max_members (not listed).", NULL,
            presence_unlisted),
    COUNTER("livegate_presence_shares_failed_total",
            "Presence topics whose members a tick could not share through Redis (the view "
            "stays as it was).", NULL, presence_shares_failed),
    GAUGE("livegate_client_queue_depth_max",
          "Deepest client queue seen since start, in events.", NULL, max_queue_depth),
    FN("livegate_backlog_events", "gauge",
       "Events accepted for the workers and not yet taken by them (every inbox).", NULL,
       backlog),
    GAUGE("livegate_topics", "Topics in the registry.", NULL, topics),
    COUNTER("livegate_topics_collected_total",
            "Idle topics (never published to, nobody subscribed) dropped from the registry.",
            NULL, topics_collected),
    COUNTER("livegate_topic_creations_refused_total",
            "Subscriptions refused for creating topics faster than limits.topic_creations_per_s.",
            NULL, topic_creations_refused),
    COUNTER("livegate_history_evicted_total", "Events evicted from topic history.", NULL,
            history_evicted),
    FN("livegate_live_events", "gauge",
       "Events still referenced (history, inboxes, client queues).", NULL, live_events),
    FN("livegate_live_event_bytes", "gauge",
       "Bytes of the events still referenced (compared with limits.max_retained_bytes).", NULL,
       live_bytes),
    COUNTER("livegate_control_connections_timed_out_total",
            "Control-port connections shut down past their request deadline.", NULL,
            control_connections_timed_out),
    AUTH_REFUSED("missing", auth_refused_missing),
    AUTH_REFUSED("malformed", auth_refused_malformed),
    AUTH_REFUSED("expired", auth_refused_expired),
    AUTH_REFUSED("not_yet_valid", auth_refused_not_yet_valid),
    AUTH_REFUSED("bad_signature", auth_refused_bad_signature),
    AUTH_REFUSED("wrong_algorithm", auth_refused_wrong_algorithm),
    AUTH_REFUSED("unknown_key", auth_refused_unknown_key),
    AUTH_REFUSED("topic", auth_refused_topic),
    AUTH_REFUSED("origin", auth_refused_origin),
    AUTH_REFUSED("control_token_required", auth_refused_control_token),
    RELOADS("applied", config_reloads_applied),
    RELOADS("refused", config_reloads_refused),
    RELOADS("failed", config_reloads_failed),
    COUNTER("livegate_auth_streams_expired_total",
            "Connections ended when their token reached exp (SSE error event, WebSocket 4003, "
            "poll answered).", NULL, auth_streams_expired),
    COUNTER("livegate_auth_refreshed_total",
            "WebSocket auth and refresh messages accepted.", NULL, auth_refreshed),
    FAMILY("livegate_subscribe_hook_answers_total", hook_answers_help, "answer", "allow",
           hook_answers_allow),
    FAMILY("livegate_subscribe_hook_answers_total", hook_answers_help, "answer", "deny",
           hook_answers_deny),
    FAMILY("livegate_subscribe_hook_answers_total", hook_answers_help, "answer", "down",
           hook_answers_down),
    COUNTER("livegate_subscribe_hook_cache_hits_total",
            "Subscribe hook answers taken from the cache (no call to the backend).", NULL,
            hook_cache_hits),
    COUNTER("livegate_subscribe_hook_overflow_total",
            "Subscribes answered as if the backend were down: subscribe_hook.max_pending were "
            "waiting on their worker.", NULL, hook_overflow),
    COUNTER("livegate_webhooks_sent_total", "Webhook notices the receiver took (2xx).", NULL,
            webhooks_sent),
    COUNTER("livegate_webhooks_failed_total",
            "Webhook delivery attempts that failed (retried, or given up at max_attempts).",
            NULL, webhooks_failed),
    FAMILY("livegate_webhooks_dropped_total", webhooks_dropped_help, "reason", "queue_full",
           webhooks_dropped_queue_full),
    FAMILY("livegate_webhooks_dropped_total", webhooks_dropped_help, "reason", "max_attempts",
           webhooks_dropped_attempts),
    FAMILY("livegate_webhooks_dropped_total", webhooks_dropped_help, "reason", "shutdown",
           webhooks_dropped_shutdown),
    COUNTER("livegate_sys_stats_published_total", "Events published to $sys/stats.", NULL,
            sys_stats_published),
    COUNTER("livegate_sys_stats_skipped_total",
            "$sys/stats ticks not published (workers behind, out of memory).", NULL,
            sys_stats_skipped),
};

static void header(struct lg_buf *b, const char *name, const char *type, const char *help)
{
    lg_buf_appendf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void sample(struct lg_buf *b, const char *name, const char *labels, double v)
{
    if (labels)
        lg_buf_appendf(b, "%s{%s} %.17g\n", name, labels, v);
    else
        lg_buf_appendf(b, "%s %.17g\n", name, v);
}

static void sample_u64(struct lg_buf *b, const char *name, const char *labels, uint64_t v)
{
    if (labels)
        lg_buf_appendf(b, "%s{%s} %" PRIu64 "\n", name, labels, v);
    else
        lg_buf_appendf(b, "%s %" PRIu64 "\n", name, v);
}

static void render_rows(const struct lg_control *c, struct lg_buf *b)
{
    const char *last = "";
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const struct metric_row *r = &rows[i];
        if (strcmp(r->name, last) != 0)
            header(b, r->name, r->type, r->help);
        last = r->name;
        if (r->counter)
            sample_u64(b, r->name, r->labels,
                       atomic_load_explicit(r->counter, memory_order_relaxed));
        else if (r->gauge)
            sample(b, r->name, r->labels,
                   (double)atomic_load_explicit(r->gauge, memory_order_relaxed));
        else
            sample(b, r->name, r->labels, r->value(c));
    }
}

static void render_history(struct lg_control *c, struct lg_buf *b)
{
    uint64_t topics, events, bytes;
    lg_hub_history_totals(c->hub, &topics, &events, &bytes);
    header(b, "livegate_history_events", "gauge", "Events retained in topic history for resume.");
    sample_u64(b, "livegate_history_events", NULL, events);
    header(b, "livegate_history_bytes", "gauge", "Bytes of the events retained in topic history.");
    sample_u64(b, "livegate_history_bytes", NULL, bytes);
}

static bool allowed_topic(const char *name, void *list)
{
    const struct lg_string_list *globs = list;
    return lg_glob_match_any((const char *const *)globs->items, globs->count, name);
}

/* Per-topic series for the topics metrics.topics allows (at most LG_METRICS_TOPIC_SERIES_MAX,
 * in name order), so the series' number stays bounded whatever the topics are. Topic names
 * hold no byte that needs escaping in a label value (topic_name.h). */
static void render_topics(struct lg_control *c, struct lg_buf *b)
{
    const struct lg_string_list *list = &c->cfg->metrics_topics;
    if (list->count == 0)
        return;
    static const struct {
        const char *name, *help;
    } series[] = {
        {"livegate_topic_last_seq", "Newest position assigned in the topic (metrics.topics)."},
        {"livegate_topic_subscribers", "Listening subscriptions of the topic (metrics.topics)."},
        {"livegate_topic_retained_events", "Events the topic's history retains (metrics.topics)."},
        {"livegate_topic_retained_bytes", "Bytes the topic's history retains (metrics.topics)."},
    };
    struct lg_topic_info *infos = malloc(LG_METRICS_TOPIC_SERIES_MAX * sizeof *infos);
    bool more;
    int n = infos ? lg_hub_list_topics(c->hub, "", "", LG_METRICS_TOPIC_SERIES_MAX, allowed_topic,
                                       (void *)list, infos, &more)
                  : -1;
    for (size_t s = 0; s < sizeof series / sizeof series[0] && n >= 0; s++) {
        header(b, series[s].name, "gauge", series[s].help);
        for (int i = 0; i < n; i++) {
            const struct lg_topic_info *t = &infos[i];
            uint64_t v = s == 0 ? t->last_seq : s == 1 ? t->subscribers
                                            : s == 2 ? t->retained_events : t->retained_bytes;
            lg_buf_appendf(b, "%s{topic=\"%s\"} %" PRIu64 "\n", series[s].name, t->name, v);
        }
    }
    free(infos);
}

static double worker_busy_s(const struct lg_control *c, uint32_t w)
{
    (void)c;
    return (double)atomic_load_explicit(&lg_worker_stats[w].busy_ns, memory_order_relaxed) / 1e9;
}
static double worker_inbox(const struct lg_control *c, uint32_t w)
{
    return (double)lg_hub_worker_backlog(c->hub, w);
}
static double worker_backlogged(const struct lg_control *c, uint32_t w)
{
    (void)c;
    return (double)atomic_load_explicit(&lg_worker_stats[w].backlogged_conns,
                                        memory_order_relaxed);
}
static double worker_connections(const struct lg_control *c, uint32_t w)
{
    (void)c;
    return (double)atomic_load_explicit(&lg_worker_stats[w].connections, memory_order_relaxed);
}

/* The series with one sample per worker (label worker="N"). */
static const struct {
    const char *name, *type, *help;
    double (*value)(const struct lg_control *c, uint32_t worker);
} worker_series[] = {
    {"livegate_worker_busy_seconds_total", "counter",
     "Time each worker's loop spent running callbacks (the rest it waited for events).",
     worker_busy_s},
    {"livegate_worker_inbox_events", "gauge",
     "Events accepted for the worker and not yet taken (its backlog).", worker_inbox},
    {"livegate_worker_backlogged_connections", "gauge",
     "Connections of the worker whose socket has not taken their queue (each tick).",
     worker_backlogged},
    {"livegate_worker_connections", "gauge", "Connections the worker serves (each tick).",
     worker_connections},
};

static void render_workers(const struct lg_control *c, struct lg_buf *b)
{
    char label[32];
    for (size_t s = 0; s < sizeof worker_series / sizeof worker_series[0]; s++) {
        header(b, worker_series[s].name, worker_series[s].type, worker_series[s].help);
        for (uint32_t w = 0; w < c->worker_count; w++) {
            snprintf(label, sizeof label, "worker=\"%u\"", w);
            sample(b, worker_series[s].name, label, worker_series[s].value(c, w));
        }
    }
}

/* One histogram from a merged snapshot: cumulative buckets, +Inf, sum (seconds), count (the
 * +Inf bucket, so the two always agree even while observations race the scrape). */
static void render_histogram(struct lg_buf *b, const char *name, const char *help,
                             const struct lg_histogram_snapshot *s)
{
    header(b, name, "histogram", help);
    uint64_t cumulative = 0;
    for (unsigned i = 0; i < LG_HISTOGRAM_BUCKETS; i++) {
        cumulative += s->buckets[i];
        lg_buf_appendf(b, "%s_bucket{le=\"%g\"} %" PRIu64 "\n", name,
                       (double)lg_histogram_bounds_ns[i] / 1e9, cumulative);
    }
    cumulative += s->buckets[LG_HISTOGRAM_BUCKETS];
    lg_buf_appendf(b, "%s_bucket{le=\"+Inf\"} %" PRIu64 "\n", name, cumulative);
    lg_buf_appendf(b, "%s_sum %.9f\n", name, (double)s->sum_ns / 1e9);
    lg_buf_appendf(b, "%s_count %" PRIu64 "\n", name, cumulative);
}

static void render_histograms(const struct lg_control *c, struct lg_buf *b)
{
    struct lg_histogram_snapshot s = {0};
    for (uint32_t w = 0; w < c->worker_count; w++)
        lg_histogram_read(&lg_worker_stats[w].delivery_lag, &s);
    render_histogram(b, "livegate_delivery_lag_seconds",
                     "From publish accepted to written to the client, per event delivered.", &s);
    memset(&s, 0, sizeof s);
    lg_histogram_read(&lg_ctl_publish_handling, &s);
    render_histogram(b, "livegate_publish_handling_seconds",
                     "Time a publish request's handler took to answer (waits excluded).", &s);
    memset(&s, 0, sizeof s);
    lg_histogram_read(&lg_ctl_publish_wait, &s);
    render_histogram(b, "livegate_publish_wait_seconds",
                     "Time a held publish waited for a worker's room (overload pacing).", &s);
}

int lg_ctl_handle_metrics(struct lg_control *c, struct MHD_Connection *conn, const char *url,
                          struct lg_ctl_request *r)
{
    (void)url, (void)r;
    struct lg_buf b;
    lg_buf_init(&b);
    lg_buf_reserve(&b, 16384);
    render_rows(c, &b);
    render_history(c, &b);
    render_topics(c, &b);
    render_workers(c, &b);
    render_histograms(c, &b);
    if (b.oom) {
        lg_buf_release(&b);
        struct lg_ctl_error e = LG_CTL_ERROR_INIT;
        lg_ctl_fail(&e, 503, "unavailable", "out of memory rendering the metrics; retry");
        return lg_ctl_reply_error(conn, &e, NULL);
    }
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(b.len, b.data, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        lg_buf_release(&b);
        return -1;
    }
    bool ok = MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                                      "text/plain; version=0.0.4; charset=utf-8") == MHD_YES &&
              MHD_queue_response(conn, 200, resp) == MHD_YES;
    MHD_destroy_response(resp);
    return ok ? 0 : -1;
}
