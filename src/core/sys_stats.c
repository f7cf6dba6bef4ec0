/* sys_stats.c - the `$sys/stats` publisher (see sys_stats.h). */
#include "sys_stats.h"

#include <inttypes.h>
#include <string.h>

#include "accounting.h"
#include "clock.h"
#include "hub.h"
#include "stats.h"

/* The counters a tick reports the change of; the rest are gauges read as they are. */
struct counters {
    uint64_t published, delivered;
    uint64_t dropped_overflow, dropped_lag, conflated;
    uint64_t refused_publish, refused_connection;
};

static struct counters read_counters(void)
{
    return (struct counters){
        .published = LG_STAT_GET(events_published),
        .delivered = LG_STAT_GET(events_delivered),
        .dropped_overflow = LG_STAT_GET(events_dropped_overflow),
        .dropped_lag = LG_STAT_GET(events_dropped_lag),
        .conflated = LG_STAT_GET(events_conflated),
        .refused_publish = LG_STAT_GET(publishes_refused),
        .refused_connection =
            LG_STAT_GET(connections_refused) + LG_STAT_GET(connections_refused_address),
    };
}

static void remember(struct lg_sys_stats *s, const struct counters *c, uint64_t now_mono_ms)
{
    s->last_mono_ms = now_mono_ms;
    s->published = c->published;
    s->delivered = c->delivered;
    s->dropped_overflow = c->dropped_overflow;
    s->dropped_lag = c->dropped_lag;
    s->conflated = c->conflated;
    s->refused_publish = c->refused_publish;
    s->refused_connection = c->refused_connection;
}

void lg_sys_stats_init(struct lg_sys_stats *s)
{
    memset(s, 0, sizeof *s);
    struct counters c = read_counters();
    remember(s, &c, lg_mono_ms());
}

static double per_second(uint64_t delta, uint64_t interval_ms)
{
    return interval_ms ? (double)delta * 1000.0 / (double)interval_ms : 0.0;
}

void lg_sys_stats_render(struct lg_sys_stats *s, const struct lg_hub *hub, uint64_t now_mono_ms,
                         struct lg_buf *out)
{
    struct counters c = read_counters();
    uint64_t interval = now_mono_ms - s->last_mono_ms;
    uint64_t overflow = c.dropped_overflow - s->dropped_overflow;
    uint64_t lag = c.dropped_lag - s->dropped_lag;
    uint64_t conflated = c.conflated - s->conflated;
    uint64_t refused_pub = c.refused_publish - s->refused_publish;
    uint64_t refused_conn = c.refused_connection - s->refused_connection;
    lg_buf_appendf(out,
                   "{\"time_ms\":%" PRId64 ",\"interval_ms\":%" PRIu64
                   ",\"clients\":{\"sse\":%" PRId64 ",\"websocket\":%" PRId64
                   ",\"poll\":%" PRId64 "},\"events_in_per_s\":%.3f,\"events_out_per_s\":%.3f"
                   ",\"dropped\":%" PRIu64 ",\"dropped_by_reason\":{\"overflow\":%" PRIu64
                   ",\"lag\":%" PRIu64 ",\"conflated\":%" PRIu64 "},\"refused\":%" PRIu64
                   ",\"refused_by_kind\":{\"publish\":%" PRIu64 ",\"connection\":%" PRIu64
                   "},\"backlog\":%" PRIu64 ",\"connections\":%" PRId64 ",\"topics\":%" PRId64 "}",
                   lg_unix_ms(), interval, LG_STAT_GET(clients_sse), LG_STAT_GET(clients_ws),
                   LG_STAT_GET(clients_poll), per_second(c.published - s->published, interval),
                   per_second(c.delivered - s->delivered, interval), overflow + lag + conflated,
                   overflow, lag, conflated, refused_pub + refused_conn, refused_pub,
                   refused_conn, lg_hub_backlog(hub), lg_account_connections(), LG_STAT_GET(topics));
    remember(s, &c, now_mono_ms);
}

void lg_sys_stats_tick(struct lg_sys_stats *s, struct lg_hub *hub)
{
    static const char topic[] = LG_SYS_STATS_TOPIC;
    struct lg_buf data;
    lg_buf_init(&data);
    lg_sys_stats_render(s, hub, lg_mono_ms(), &data);
    struct lg_topic *t = lg_hub_find_topic(hub, topic, sizeof topic - 1);
    if (t && !data.oom) {
        lg_hub_topic_done(hub, t);
        struct lg_publish_req req = {.topic = topic, .topic_len = sizeof topic - 1,
                                     .data = data.data,
                                     .data_len = data.len, .data_is_json = true,
                                     .gateway_own = true};
        struct lg_publish_result res;
        if (lg_hub_publish(hub, &req, &res) == LG_PUBLISH_OK)
            LG_STAT_ADD(sys_stats_published, 1);
        else
            LG_STAT_ADD(sys_stats_skipped, 1);
    } else if (t) {
        lg_hub_topic_done(hub, t);
        LG_STAT_ADD(sys_stats_skipped, 1);
    }
    lg_buf_release(&data);
}
