/* conn_report.c - see conn_report.h. */
#include "conn_report.h"

#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "clock.h"
#include "conn.h"
#include "event.h"
#include "log.h"
#include "stats.h"
#include "topic.h"

#define ACCESS_LINE_INTERVAL_MS 100

const char *lg_conn_close_reason(const struct lg_conn *c)
{
    if (c->sub.kicked)
        return "admin";
    if (c->sub.slow_disconnect)
        return "slow_consumer";
    if (c->report.close_reason)
        return c->report.close_reason;
    if (c->draining)
        return "drain";
    return "client";
}

bool lg_conn_is_client(const struct lg_conn *c)
{
    return !c->released && c->transport && c->transport->report_name;
}

static void count_close(const char *reason)
{
    if (strcmp(reason, "admin") == 0)
        LG_STAT_ADD(connections_closed_admin, 1);
    else if (strcmp(reason, "slow_consumer") == 0)
        LG_STAT_ADD(connections_closed_slow, 1);
    else if (strcmp(reason, "policy") == 0)
        LG_STAT_ADD(connections_closed_policy, 1);
    else if (strcmp(reason, "drain") == 0)
        LG_STAT_ADD(connections_closed_drain, 1);
    else if (strcmp(reason, "error") == 0)
        LG_STAT_ADD(connections_closed_error, 1);
    else if (strcmp(reason, "keepalive") == 0)
        LG_STAT_ADD(connections_closed_keepalive, 1);
    else
        LG_STAT_ADD(connections_closed_client, 1);
}

static void remote_of(const struct lg_conn *c, char *out, size_t cap)
{
    out[0] = '\0';
    if (c->report.client_counted)
        lg_client_address_format(&c->report.client, out, cap);
    else
        snprintf(out, cap, "%s", c->report.peer);
}

static void topics_of(const struct lg_conn *c, char *out, size_t cap)
{
    size_t len = 0;
    out[0] = '\0';
    for (const struct lg_subscription *sn = c->sub.subs; sn && len + 2 < cap;
         sn = sn->next_of_owner) {
        int n = snprintf(out + len, cap - len, "%s%s", len ? "," : "", sn->topic->name);
        len = n < 0 ? len : len + (size_t)n < cap ? len + (size_t)n : cap - 1;
    }
}

void lg_conn_report_closed(const struct lg_conn *c)
{
    const char *reason = lg_conn_close_reason(c);
    count_close(reason);
    bool subscriber = c->sub.ops != NULL && (c->transport->report_name || c->sub.delivered > 0);
    if (!subscriber)
        return;
    static struct lg_ratelimit rl;
    char remote[64], topics[512];
    remote_of(c, remote, sizeof remote);
    topics_of(c, topics, sizeof topics);
    struct lg_log_field fields[] = {
        {.key = "id", .num = c->report.id},
        {.key = "transport", .str = c->sub.ops->name},
        {.key = "remote", .str = remote},
        {.key = "topics", .str = topics},
        {.key = "duration_ms", .num = lg_mono_ms() - c->report.opened_mono_ms},
        {.key = "delivered", .num = c->sub.delivered},
        {.key = "dropped", .num = c->sub.dropped},
        {.key = "bytes", .num = c->sub.bytes_out},
        {.key = "reason", .str = reason},
    };
    lg_log_fields_ratelimited(&rl, ACCESS_LINE_INTERVAL_MS, LG_LOG_INFO, "client disconnected",
                              fields, sizeof fields / sizeof fields[0]);
}

json_t *lg_conn_report_json(struct lg_conn *c, uint64_t now_mono_ns)
{
    char remote[64];
    remote_of(c, remote, sizeof remote);
    json_t *topics = json_array();
    for (const struct lg_subscription *sn = c->sub.subs; sn && topics; sn = sn->next_of_owner)
        json_array_append_new(topics, json_stringn(sn->topic->name, sn->topic->name_len));
    struct lg_event *oldest = lg_client_ring_oldest(&c->sub.ring);
    uint64_t lag_ms = oldest && now_mono_ns > oldest->published_mono_ns
                          ? (now_mono_ns - oldest->published_mono_ns) / 1000000u
                          : 0;
    return json_pack("{s:I,s:s,s:s,s:o,s:I,s:I,s:I,s:I,s:I,s:I}", "id", (json_int_t)c->report.id,
                     "transport", c->transport->report_name, "remote", remote, "topics",
                     topics ? topics : json_array(), "queue_depth", (json_int_t)c->sub.ring.live,
                     "dropped", (json_int_t)c->sub.dropped, "delivered",
                     (json_int_t)c->sub.delivered, "lag_ms", (json_int_t)lag_ms,
                     "connected_since_ms", (json_int_t)c->report.opened_unix_ms, "bytes_sent",
                     (json_int_t)c->sub.bytes_out);
}
