/*
 * config_table.c - the settings table: one row per setting (its dotted key, type, field of
 * struct lg_config, range, default and one-line description), and the lookups the loader and
 * the printer make in it. Part of the config module with config.c, config_setting.c and
 * topic_rules.c (config.c's DESIGN note says how they divide the work).
 *
 * Owns: the table, static const data. Frees: nothing. Threads: read-only, any thread.
 * Bounds: the rows written here.
 */
#include "config.h"

#include "config_setting.h"
#include "topic_glob.h"
#include "topic_name.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* ---- The settings table ---------------------------------------------------------------- */

static const char *const lg_log_level_names[] = {
    [LG_LOG_ERROR] = "error", [LG_LOG_WARN] = "warn", [LG_LOG_INFO] = "info",
    [LG_LOG_DEBUG] = "debug", NULL,
};

static const char *const lg_log_format_names[] = {
    [LG_LOG_TEXT] = "text", [LG_LOG_JSON] = "json", NULL,
};

static const char *const lg_hook_when_down_names[] = {
    [LG_HOOK_DOWN_DENY] = "deny", [LG_HOOK_DOWN_ALLOW] = "allow", NULL,
};

#define LG_OFF(field) offsetof(struct lg_config, field)
#define LG_KIB(n) ((uint64_t)(n) * 1024u)
#define LG_MIB(n) ((uint64_t)(n) * 1024u * 1024u)
#define LG_GIB(n) ((uint64_t)(n) * 1024u * 1024u * 1024u)
#define LG_HOUR_MS 3600000u
#define LG_DAY_MS (24u * LG_HOUR_MS)

/* Numbers. */
#define LG_U32(k, f, lo, hi, d, doc_)                                                              \
    { .key = k, .type = LG_SETTING_U32, .offset = LG_OFF(f), .min = lo, .max = hi, .def = d,       \
      .doc = doc_ }
/* A setting of a section whose key is its field's path: LG_U32_IN(limits, max_topics, ...)
 * is "limits.max_topics" in the file and cfg->limits.max_topics in C. */
#define LG_U32_IN(section, name, lo, hi, d, doc_)                                                  \
    LG_U32(#section "." #name, section.name, lo, hi, d, doc_)
#define LG_U64_IN(section, name, lo, hi, d, doc_)                                                  \
    LG_U64(#section "." #name, section.name, lo, hi, d, doc_)
#define LG_U64(k, f, lo, hi, d, doc_)                                                              \
    { .key = k, .type = LG_SETTING_U64, .offset = LG_OFF(f), .min = lo, .max = hi, .def = d,       \
      .doc = doc_ }
/* A number a reload changes: it only bounds work that starts after it (live_limits.h). */
#define LG_LIVE_U32_IN(section, name, lo, hi, d, doc_)                                             \
    { .key = #section "." #name, .type = LG_SETTING_U32, .offset = LG_OFF(section.name),           \
      .min = lo, .max = hi, .def = d, .doc = doc_, .live = true }
#define LG_LIVE_U64_IN(section, name, lo, hi, d, doc_)                                             \
    { .key = #section "." #name, .type = LG_SETTING_U64, .offset = LG_OFF(section.name),           \
      .min = lo, .max = hi, .def = d, .doc = doc_, .live = true }

/* A list item of auth.anonymous_subscribe and metrics.topics: a topic_rules glob. */
static const char *lg_config__pattern_problem(const char *item, size_t len)
{
    if (len > LG_TOPIC_NAME_MAX)
        return "a pattern is at most 128 bytes";
    return lg_topic_pattern_ok(item, len) ? NULL
               : "not a topic pattern (topic characters " LG_TOPIC_NAME_CHARS
                 ", a leading $, and the wildcards * ?)";
}

/* An item of redis.shards: a Redis URL, as redis.url (the bridge parses the rest at start). */
static const char *lg_config__redis_url_problem(const char *item, size_t len)
{
    (void)len;
    return strncmp(item, "redis://", 8) == 0 || strncmp(item, "unix:///", 8) == 0
               ? NULL : "a Redis URL is redis://HOST[:PORT] or unix:///path";
}

/* An item of redis.sentinels: redis://HOST:PORT (a sentinel has no default port to assume). */
static const char *lg_config__sentinel_problem(const char *item, size_t len)
{
    const char *colon = strrchr(item, ':');
    return strncmp(item, "redis://", 8) == 0 && len > 8 && colon && colon > item + 8 &&
                   colon[1] != '\0'
               ? NULL : "a sentinel is redis://HOST:PORT";
}

/* An item of allowed_origins: "*" or scheme://host[:port], as browsers send Origin. */
static const char *lg_config__origin_problem(const char *item, size_t len)
{
    if (strcmp(item, "*") == 0)
        return NULL;
    const char *sep = strstr(item, "://");
    if (sep == NULL || sep == item || sep[3] == '\0' || strchr(sep + 3, '/') != NULL ||
        strpbrk(item, " \t,") != NULL || item[len - 1] == ':')
        return "an origin is \"*\" or scheme://host[:port] with no path, e.g. "
               "\"https://app.example\"";
    return NULL;
}

#define LG_LIST(k, f, check_, doc_) LG_LIST_UPTO(k, f, LG_LIST_MAX, check_, doc_)
#define LG_LIVE_LIST(k, f, check_, doc_)                                                           \
    { .key = k, .type = LG_SETTING_LIST, .offset = LG_OFF(f), .min = 0, .max = LG_LIST_MAX,        \
      .check = check_, .doc = doc_, .live = true }
#define LG_LIST_UPTO(k, f, max_, check_, doc_)                                                     \
    { .key = k, .type = LG_SETTING_LIST, .offset = LG_OFF(f), .min = 0, .max = max_,               \
      .check = check_, .doc = doc_ }

/* Table order is the order of config/livegate.json and of --print-config. */
static const struct lg_setting lg_settings[] = {
    { .key = "listen.public", .type = LG_SETTING_ADDR, .offset = LG_OFF(public_addr),
      .def_text = "0.0.0.0:8080", .doc = "public listener (SSE, WebSocket, long-poll)" },
    { .key = "listen.control", .type = LG_SETTING_ADDR, .offset = LG_OFF(control_addr),
      .def_text = "127.0.0.1:8081", .doc = "control listener (publish API, stats)" },
    LG_U32("workers", workers, 0, LG_MAX_WORKERS, 0, "worker threads; 0 = one per online CPU"),
    { .key = "log_level", .type = LG_SETTING_ENUM, .offset = LG_OFF(log_level),
      .def = LG_LOG_INFO, .names = lg_log_level_names, .doc = "least severe level logged",
      .live = true },
    { .key = "log_format", .type = LG_SETTING_ENUM, .offset = LG_OFF(log_format),
      .def = LG_LOG_TEXT, .names = lg_log_format_names,
      .doc = "log lines: text, or json (one object a line)", .live = true },
    { .key = "static_dir", .type = LG_SETTING_STRING, .offset = LG_OFF(static_dir), .min = 0,
      .max = 4095, .def_text = "",
      .doc = "static files directory; \"\" = the installed share/livegate/static, else "
             "<binary dir>/../static" },
    { .key = "trusted_proxies", .type = LG_SETTING_STRING, .offset = LG_OFF(trusted_proxies),
      .min = 0, .max = 4095, .def_text = "127.0.0.1, ::1",
      .doc = "proxies whose X-Forwarded-For names the client (numeric addresses, comma-separated)" },

    /* Live as topic_rules: a topic copies its bounds when it is created (the hub reads the
     * reloaded config for that); the topics there are keep theirs. */
    LG_LIVE_U32_IN(history, max_events, 1, LG_HISTORY_MAX_EVENTS_MAX, 1000,
                   "events retained per topic for resume"),
    LG_LIVE_U64_IN(history, max_bytes, 1, LG_GIB(16), LG_MIB(4),
                   "bytes retained per topic for resume"),
    LG_LIVE_U64_IN(history, max_age_ms, 0, 365ull * LG_DAY_MS, LG_HOUR_MS,
                   "retained events older than this are evicted; 0 = no age bound"),

    /* Restart: each subscriber points at these bounds in the configuration of the start, and
     * on_slow stays with them as one section (topic_rules sets new topics' policy live). */
    LG_U32_IN(client_queue, max_events, 1, 1000000, 1024,
              "events queued per client before on_slow fires"),
    LG_U64_IN(client_queue, max_bytes, 1, LG_GIB(4), LG_MIB(1),
              "bytes queued per client before on_slow fires"),
    LG_U64_IN(client_queue, max_lag_ms, 0, LG_DAY_MS, 30000,
              "a client whose oldest queued event is older than this is slow; 0 = off"),
    { .key = "client_queue.on_slow", .type = LG_SETTING_ENUM,
      .offset = LG_OFF(client_queue.on_slow), .def = LG_SLOW_DROP_OLDEST,
      .names = lg_slow_policy_names,
      .doc = "what happens to a slow client (topic_rules may override per topic)" },

    { .key = "topic_rules", .type = LG_SETTING_RULES, .offset = LG_OFF(topic_rules),
      .doc = "per-topic overrides of on_slow and history; first matching rule wins (a reload "
             "applies to topics created after it)", .live = true },

    LG_U32_IN(sse, retry_ms, 100, LG_HOUR_MS, 3000,
              "SSE retry: hint sent at the start of a stream and at shutdown"),
    LG_U32_IN(sse, heartbeat_ms, 1000, LG_HOUR_MS, 15000,
              "SSE comment line sent after this much silence"),

    LG_U32_IN(websocket, ping_interval_ms, 1000, LG_HOUR_MS, 30000,
              "server ping after this much silence"),
    LG_U32_IN(websocket, pong_timeout_ms, 1000, LG_HOUR_MS, 10000,
              "close a peer that stays silent this long after a ping"),
    LG_U32_IN(websocket, max_message_bytes, 1024, LG_MIB(16),
              LG_KIB(64), "largest inbound message (larger: close 1009)"),
    LG_U32_IN(websocket, max_bad_messages, 1, 1000000, 5,
              "malformed control messages in a row that close the connection with 1008"),
    LG_U32_IN(websocket, max_messages_per_s, 0, 1000000, 100,
              "control messages a client may send per second (a burst of as many); past it, "
              "close 1008; 0 = no bound"),
    LG_U32_IN(websocket, max_publishes_per_s, 0, 1000000, 20,
              "publish ops a client may send per second (a burst of as many); past it, each is "
              "refused with a rate_limited error; 0 = no bound"),
    { .key = "websocket.compression.enabled", .type = LG_SETTING_BOOL,
      .offset = LG_OFF(websocket.compression.enabled), .def = 0,
      .doc = "offer permessage-deflate (RFC 7692): each event compressed once, for every "
             "connection that negotiated it" },
    LG_U32_IN(websocket, compression.level, 1, 9, 6,
              "zlib level events are compressed with (once per event)"),
    LG_U32_IN(websocket, compression.min_bytes, 0, LG_MIB(16), 256,
              "event messages shorter than this go uncompressed"),
    LG_U32_IN(websocket, compression.max_window_bits, 9, 15, 15,
              "LZ77 window events are compressed with; offers that cap the server's window "
              "below it are declined"),
    LG_U32_IN(websocket, compression.mem_level, 1, 9, 8,
              "zlib memLevel of each worker's compressor (memory: 2^(max_window_bits+2) + "
              "2^(mem_level+9) bytes per worker)"),

    LG_LIVE_U32_IN(poll, default_timeout_ms, 0, LG_HOUR_MS, 25000,
                   "long-poll hold time when the request names none"),
    LG_LIVE_U32_IN(poll, max_timeout_ms, 0, LG_HOUR_MS, 60000,
                   "cap on the hold time a request may ask for"),
    LG_U32_IN(poll, max_batch, 1, 10000, 100, "events per long-poll response"),

    /* limits: live when it bounds only work that starts after the reload; else the comment
     * above the row names what was built from it at start. */
    LG_LIVE_U32_IN(limits, max_event_bytes, 1, LG_MIB(16), LG_KIB(64),
                   "largest published event body (413 above)"),
    LG_LIVE_U32_IN(limits, max_batch_bytes, 1, LG_MIB(256), LG_MIB(1),
                   "largest batch publish request body (413 above)"),
    { .key = "limits.max_topics", .type = LG_SETTING_U32, .offset = LG_OFF(limits.max_topics),
      .min = 1, .max = 100000000, .def = 100000, .live = true,
      .doc = "topics the hub will create (503 above)" },
    LG_LIVE_U32_IN(limits, max_topics_per_client, 1, 64, 64,
                   "topics in one subscription (a cursor holds at most 64)"),
    LG_LIVE_U32_IN(limits, topic_creations_per_s, 0, 1000000, 16,
                   "new topics one subscriber connection may create per second (a burst of "
                   "max_topics_per_client); 0 = no bound"),
    /* Restart: the client address table has one entry per connection, allocated at start,
     * and the descriptor limit was checked against it. */
    LG_U32_IN(limits, max_connections, 1, 10000000, 19400,
              "public-port connections per process (503 above)"),
    LG_LIVE_U32_IN(limits, max_connections_per_address, 0,
                   10000000, 1024, "connections per client address (429 above); 0 = no bound"),
    /* Restart: each connection's request buffer was allocated with this size. */
    LG_U32_IN(limits, max_request_head_bytes, 1024, LG_MIB(1),
              LG_KIB(8), "request line + headers on the public port (431 above)"),
    /* Restart: each worker's libwebsockets context took its timeout from it at start. */
    LG_U32_IN(limits, request_timeout_ms, 100, LG_HOUR_MS, 10000,
              "a request head must arrive within this (408 after)"),
    LG_LIVE_U32_IN(limits, keepalive_timeout_ms, 100, LG_HOUR_MS, 10000,
                   "an idle keep-alive connection is closed after this"),
    /* Restart: it bounds what is retained already (lowered, the next publish would evict
     * existing history that cursors resume from), not only new work. */
    LG_U64_IN(limits, max_retained_bytes, LG_MIB(1), LG_GIB(1024),
              LG_GIB(1), "bytes of all live events, history and queues together"),
    /* Restart: each worker's inbox ring was allocated with this many slots. */
    LG_U32_IN(limits, worker_inbox_events, 2, LG_MIB(16), 8,
              "events accepted for one worker and not yet taken by it (publishes wait above)"),
    LG_LIVE_U32_IN(limits, publish_wait_ms, 0, 600000, 2000,
                   "longest a publish waits for a worker's room before 503"),
    /* Restart: libmicrohttpd's connection limit and the publish pacer were sized by it. */
    LG_U32_IN(limits, control_max_connections, 1, 65536, 512,
              "concurrent control-port connections"),
    /* Restart: libmicrohttpd's connection timeout was set from it when its daemons started. */
    LG_U32_IN(limits, control_idle_timeout_ms, 1000, LG_HOUR_MS,
              30000, "an idle control-port connection is closed after this"),

    LG_U32("socket_send_buffer_bytes", socket_send_buffer_bytes, 0, LG_MIB(16), LG_KIB(128),
           "SO_SNDBUF on accepted sockets; 0 = kernel default"),
    LG_U32("write_batch_bytes", write_batch_bytes, 4096, LG_MIB(4), LG_KIB(64),
           "bytes coalesced into one write to a client"),
    /* Restart: each worker set up its io_uring when it started. */
    { .key = "batched_writes", .type = LG_SETTING_BOOL, .offset = LG_OFF(batched_writes),
      .def = 1,
      .doc = "a worker hands the kernel the writes of up to 64 subscribers in one io_uring "
             "submission instead of a send() each; where the kernel refuses io_uring, each "
             "socket gets its send() (logged once)" },
    /* Restart: the control port's hosts were given it when they started. */
    LG_U32("control_busy_poll_us", control_busy_poll_us, 0, 1000, 50,
           "after a control-port request that came within this long of the last one, poll "
           "this long for the next before sleeping; 0 = never"),
    LG_U32("drain_timeout_ms", drain_timeout_ms, 0, 600000, 5000,
           "longest graceful shutdown before connections are cut"),
    LG_U32("drain_window_ms", drain_window_ms, 0, 600000, 0,
           "SIGTERM moves clients away over this window, each at a random moment; 0 = at once"),

    { .key = "redis.url", .type = LG_SETTING_STRING, .offset = LG_OFF(redis.url), .min = 0,
      .max = 1024, .def_text = "",
      .doc = "Redis for scale-out (redis://HOST:PORT or unix:///path); \"\" = in-memory store" },
    LG_LIST_UPTO("redis.shards", redis.shards, LG_REDIS_SHARDS_MAX, lg_config__redis_url_problem,
                 "several Redis servers instead of redis.url: each topic lives on one, by a "
                 "hash of its name; every node must list the same, in the same order"),
    LG_LIST_UPTO("redis.sentinels", redis.sentinels, LG_REDIS_SENTINELS_MAX,
                 lg_config__sentinel_problem,
                 "Redis Sentinel instead of redis.url: the sentinels (redis://HOST:PORT) asked, "
                 "in order, for redis.master_name's address at every (re)connect"),
    { .key = "redis.master_name", .type = LG_SETTING_STRING, .offset = LG_OFF(redis.master_name),
      .min = 0, .max = 256, .def_text = "",
      .doc = "the name the sentinels monitor the master by (sentinel monitor NAME ...)" },
    { .key = "redis.key_prefix", .type = LG_SETTING_STRING, .offset = LG_OFF(redis.key_prefix),
      .min = 0, .max = 256, .def_text = "livegate:", .doc = "before every key livegate writes" },
    LG_U32_IN(redis, connect_timeout_ms, 10, 600000, 1000,
              "a connection attempt to Redis is given up after this"),
    LG_U32_IN(redis, command_timeout_ms, 10, 600000, 2000,
              "a connection that answers nothing for this long is dropped and reconnected"),
    LG_U32_IN(redis, reconnect_min_ms, 1, 600000, 100,
              "first reconnect delay (doubles each failure, with jitter)"),
    LG_U32_IN(redis, reconnect_max_ms, 1, 600000, 5000, "longest reconnect delay"),
    LG_U32_IN(redis, queue_max, 1, 1000000, 4096,
              "publishes waiting for the Redis bridge thread (503 above)"),
    LG_U32_IN(redis, idempotency_window_ms, 1, 7u * LG_DAY_MS,
              300000, "how long Redis remembers an Idempotency-Key"),
    LG_U32_IN(redis, presence_ttl_ms, 2000, 600000, 5000,
              "a node's presence members stay listed this long after it last refreshed them "
              "(it refreshes once a second; a node killed leaves within it)"),
    LG_U32_IN(redis, wait_replicas, 0, LG_REDIS_WAIT_REPLICAS_MAX, 0,
              "a publish is answered 201 only once this many replicas have it (WAIT); 0 = "
              "once the master has it"),
    LG_U32_IN(redis, wait_timeout_ms, 10, 600000, 1000,
              "longest WAIT for redis.wait_replicas; fewer by then: 503 (retry with the same "
              "Idempotency-Key)"),

    { .key = "auth.hs256_secret", .type = LG_SETTING_STRING, .offset = LG_OFF(auth.hs256_secret),
      .min = 0, .max = 4096, .def_text = "",
      .doc = "HS256 key tokens are signed with; \"\" = none", .live = true },
    { .key = "auth.rs256_public_key_file", .type = LG_SETTING_STRING,
      .offset = LG_OFF(auth.rs256_public_key_file), .min = 0, .max = 4095, .def_text = "",
      .doc = "PEM file of the RS256 public key tokens are verified with; \"\" = none",
      .live = true },
    { .key = "auth.jwks_file", .type = LG_SETTING_STRING, .offset = LG_OFF(auth.jwks_file),
      .min = 0, .max = 4095, .def_text = "", .live = true,
      .doc = "JWKS file of verification keys (HS256, RS256, ES256) chosen by the token's kid; "
             "re-read at every reload; \"\" = none" },
    LG_LIVE_LIST("auth.anonymous_subscribe", auth.anonymous_subscribe, lg_config__pattern_problem,
                 "topic globs anyone may subscribe to without a token"),
    { .key = "auth.control_token", .type = LG_SETTING_STRING,
      .offset = LG_OFF(auth.control_token), .min = 0, .max = 4096, .def_text = "",
      .doc = "bearer token the control port takes for everything; \"\" = none", .live = true },
    { .key = "auth.cookie", .type = LG_SETTING_STRING, .offset = LG_OFF(auth.cookie), .min = 1,
      .max = 128, .def_text = "livegate_token", .doc = "cookie that may carry the token" },
    { .key = "auth.leeway_s", .type = LG_SETTING_U32, .offset = LG_OFF(auth.leeway_s), .min = 0,
      .max = 3600, .def = 0, .doc = "clock skew allowed on exp and nbf", .live = true },
    LG_LIVE_LIST("allowed_origins", allowed_origins, lg_config__origin_problem,
                 "Origins that get CORS headers and may open WebSockets; [] = any, no CORS"),
    LG_LIST_UPTO("metrics.topics", metrics_topics, LG_METRICS_TOPIC_PATTERNS_MAX,
                 lg_config__pattern_problem,
                 "topic globs (* and ?) whose topics get their own /metrics series"),
    /* Restart: the backend thread and its queues are built at start (hooks.h). */
    { .key = "subscribe_hook.url", .type = LG_SETTING_STRING, .offset = LG_OFF(subscribe_hook.url),
      .min = 0, .max = 2048, .def_text = "",
      .doc = "backend URL asked (POST) before a subscribe to subscribe_hook.topics; \"\" = off" },
    LG_LIST("subscribe_hook.topics", subscribe_hook.topics, lg_config__pattern_problem,
            "topic globs whose subscribes ask the hook"),
    LG_U32_IN(subscribe_hook, timeout_ms, 1, 60000, 1000,
              "an answer later than this counts as the backend being down"),
    LG_U32_IN(subscribe_hook, max_pending, 1, 1000000, 256,
              "subscribes waiting for the backend per worker; past it: as when down"),
    LG_U32_IN(subscribe_hook, cache_ms, 0, LG_HOUR_MS, 10000,
              "an answer is reused this long for the same token and topic; 0 = never"),
    LG_U32_IN(subscribe_hook, cache_max_entries, 1, 10000000, 100000,
              "answers kept (the oldest go first)"),
    { .key = "subscribe_hook.when_down", .type = LG_SETTING_ENUM,
      .offset = LG_OFF(subscribe_hook.when_down), .def = LG_HOOK_DOWN_DENY,
      .names = lg_hook_when_down_names,
      .doc = "a subscribe the hook cannot answer (down, late, garbage, overloaded): deny "
             "(503, retry) or allow" },
    { .key = "webhooks.url", .type = LG_SETTING_STRING, .offset = LG_OFF(webhooks.url),
      .min = 0, .max = 2048, .def_text = "",
      .doc = "backend URL the occupied, vacated and disconnect notices are POSTed to; \"\" = off" },
    { .key = "webhooks.secret", .type = LG_SETTING_STRING, .offset = LG_OFF(webhooks.secret),
      .min = 0, .max = 4096, .def_text = "",
      .doc = "HMAC-SHA256 key of each notice's Livegate-Signature header (required with a url)" },
    LG_U32_IN(webhooks, vacated_delay_ms, 0, LG_HOUR_MS, 5000,
              "a topic is vacated after this long without a subscriber on this node"),
    LG_U32_IN(webhooks, queue_max, 1, 10000000, 10000,
              "notices waiting to be sent; past it the new one is dropped"),
    LG_U32_IN(webhooks, timeout_ms, 1, 600000, 5000, "one delivery attempt"),
    LG_U32_IN(webhooks, max_attempts, 1, 1000, 8, "attempts before a notice is given up"),
    LG_U32_IN(webhooks, retry_min_ms, 1, 600000, 500,
              "first retry delay (doubles each failure, with jitter)"),
    LG_U32_IN(webhooks, retry_max_ms, 1, 3600000, 30000, "longest retry delay"),
};

#define LG_SETTING_COUNT (sizeof(lg_settings) / sizeof(lg_settings[0]))

const struct lg_setting *lg_config__settings(size_t *count)
{
    *count = LG_SETTING_COUNT;
    return lg_settings;
}

const struct lg_setting *lg_config__find(const char *key)
{
    for (size_t i = 0; i < LG_SETTING_COUNT; i++)
        if (strcmp(lg_settings[i].key, key) == 0)
            return &lg_settings[i];
    return NULL;
}

bool lg_config__is_object(const char *key)
{
    size_t len = strlen(key);
    for (size_t i = 0; i < LG_SETTING_COUNT; i++)
        if (strncmp(lg_settings[i].key, key, len) == 0 && lg_settings[i].key[len] == '.')
            return true;
    return false;
}

void lg_config__allowed_keys(char *out, size_t cap, const char *prefix)
{
    size_t plen = strlen(prefix), len = 0;
    out[0] = '\0';
    for (size_t i = 0; i < LG_SETTING_COUNT && len < cap; i++) {
        const char *key = lg_settings[i].key;
        if (strncmp(key, prefix, plen) != 0)
            continue;
        const char *child = key + plen;
        size_t clen = strcspn(child, ".");
        bool seen = false;
        for (size_t j = 0; j < i && !seen; j++)
            seen = strncmp(lg_settings[j].key, key, plen + clen) == 0 &&
                   (lg_settings[j].key[plen + clen] == '.' ||
                    lg_settings[j].key[plen + clen] == '\0');
        if (!seen)
            len += (size_t)snprintf(out + len, cap - len, "%s%.*s", len ? ", " : "", (int)clen,
                                    child);
    }
}

