/*
 * config.h - livegate's settings: defaults, the JSON file, and strict validation.
 *
 * Owns:    struct lg_config, a tree of plain C values (no json_t escapes this module).
 * Frees:   lg_config_release() frees what lg_config_load*() allocated (strings, and the topic
 *          rules through lg_topic_rules_free()).
 * Threads: built on the main thread: once before any other thread starts, and again for each
 *          SIGHUP reload (app.c). A built config is never written again, so every thread may
 *          read one without a lock; app.c says which thread frees a reloaded one, and when.
 * Bounds:  every numeric setting has a documented [min, max] range; docs/configuration.md and
 *          config/livegate.json list them with their defaults.
 */
#ifndef LG_CONFIG_H
#define LG_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "log.h"
#include "policy.h"      /* enum lg_slow_policy, struct lg_history_bounds, struct lg_queue_bounds */
#include "topic_rules.h" /* struct lg_topic_rule, lg_config_policy_for(), lg_config_history_for() */


/* A list of strings from the config ("auth.anonymous_subscribe", "allowed_origins"). */
struct lg_string_list {
    char **items;  /* malloc'd, each malloc'd */
    size_t count;
};
#define LG_LIST_ITEM_MAX 256 /* bytes of one item */
#define LG_LIST_MAX 256      /* items of one list */
#define LG_REDIS_SHARDS_MAX 64
#define LG_REDIS_SENTINELS_MAX 16
#define LG_REDIS_WAIT_REPLICAS_MAX 16

struct lg_listen_addr {
    char host[64];  /* numeric IPv4/IPv6 address or "localhost" */
    uint16_t port;  /* 0 = let the kernel pick (the chosen port is logged at start) */
};

/* Most worker threads: the hub tracks the workers of a publish in one 64-bit mask. */
#define LG_MAX_WORKERS 64
#define LG_TRUSTED_PROXIES_MAX 64 /* entries of "trusted_proxies" */
#define LG_METRICS_TOPIC_PATTERNS_MAX 64 /* entries of "metrics.topics" */
#define LG_METRICS_TOPIC_SERIES_MAX 100  /* topics given their own /metrics series, at most */

struct lg_config {
    struct lg_listen_addr public_addr;  /* "listen.public"  default 0.0.0.0:8080 */
    struct lg_listen_addr control_addr; /* "listen.control" default 127.0.0.1:8081 */
    uint32_t workers;                   /* "workers": 0 = one per online CPU */
    enum lg_log_level log_level;        /* "log_level" */
    enum lg_log_format log_format;      /* "log_format": text or json lines */
    char *static_dir;                   /* "static_dir": "" = <binary dir>/../static */
    struct lg_string_list metrics_topics; /* "metrics.topics": globs of the topics with their
                                             own /metrics series ([] = none) */
    char *trusted_proxies;              /* "trusted_proxies": addresses whose X-Forwarded-For
                                           names the client, comma-separated */

    struct lg_history_bounds history;   /* "history" defaults for every topic */
    struct lg_queue_bounds client_queue;/* "client_queue" defaults for every subscriber */
    struct lg_topic_rule *topic_rules;  /* "topic_rules", in file order */
    size_t topic_rule_count;

    struct {
        uint32_t retry_ms;              /* `retry:` hint sent first and at shutdown */
        uint32_t heartbeat_ms;          /* comment line after this much silence */
    } sse;
    struct {
        uint32_t ping_interval_ms;      /* server ping after this much silence */
        uint32_t pong_timeout_ms;       /* close a peer silent this long after a ping */
        uint32_t max_message_bytes;     /* largest inbound control message (else 1009) */
        uint32_t max_bad_messages;      /* malformed control messages tolerated before 1008 */
        uint32_t max_messages_per_s;    /* control messages per second (close 1008 above) */
        uint32_t max_publishes_per_s;   /* publish ops per second (refused above) */
        struct {
            bool enabled;               /* permessage-deflate offered (RFC 7692) */
            uint32_t level;             /* zlib level an event is compressed with, once */
            uint32_t min_bytes;         /* smaller event messages go uncompressed */
            uint32_t max_window_bits;   /* the window events are compressed with */
            uint32_t mem_level;         /* zlib memLevel of each worker's compressor */
        } compression;
    } websocket;
    struct {
        uint32_t default_timeout_ms;    /* hold time when the request gives no timeout */
        uint32_t max_timeout_ms;        /* cap on the requested hold time */
        uint32_t max_batch;             /* events per long-poll response */
    } poll;
    struct {
        uint32_t max_event_bytes;       /* largest published event body (413 above) */
        uint32_t max_batch_bytes;       /* largest batch publish request body (413 above) */
        uint32_t max_topics;            /* topics the hub will create (503 above) */
        uint32_t max_topics_per_client; /* topics in one subscription */
        uint32_t topic_creations_per_s; /* new topics one connection may create per second */
        uint32_t max_connections;       /* public-port connections per process */
        uint32_t max_connections_per_address; /* per client address; 0 = no bound */
        uint32_t max_request_head_bytes;/* request line + headers on the public port */
        uint32_t request_timeout_ms;    /* a request head must arrive within this */
        uint32_t keepalive_timeout_ms;  /* an idle keep-alive connection is closed after this */
        uint64_t max_retained_bytes;    /* bytes of all live events (history + queues) */
        uint32_t worker_inbox_events;   /* events accepted for one worker, not yet taken */
        uint32_t publish_wait_ms;       /* longest a publish is held for room before 503 */
        uint32_t control_max_connections; /* concurrent control-port connections */
        uint32_t control_idle_timeout_ms; /* idle control connection closed after this */
    } limits;
    uint32_t socket_send_buffer_bytes;  /* SO_SNDBUF on accepted sockets (0 = kernel) */
    uint32_t write_batch_bytes;         /* bytes coalesced into one write to a client */
    bool batched_writes;                /* the sweep's writes through io_uring (send_batch.h) */
    uint32_t control_busy_poll_us;      /* busy poll after back-to-back control requests */
    uint32_t drain_timeout_ms;          /* longest graceful shutdown */
    uint32_t drain_window_ms;           /* clients are moved away over this, jittered */
    struct {
        char *url;                      /* "" = the memory store; else redis://H:P, unix:///p */
        struct lg_string_list shards;   /* or several: a topic's is shards[hash(name) % count] */
        struct lg_string_list sentinels;/* or Sentinel: redis://H:P of each, asked in order */
        char *master_name;              /* the master the sentinels are asked for */
        uint32_t wait_replicas;         /* WAIT for this many replicas after each append */
        uint32_t wait_timeout_ms;       /* ... at most this long, then 503 */
        char *key_prefix;               /* before every key livegate writes */
        uint32_t connect_timeout_ms;
        uint32_t command_timeout_ms;    /* an unanswered connection is dropped after this */
        uint32_t reconnect_min_ms;      /* first reconnect delay; doubles up to max */
        uint32_t reconnect_max_ms;
        uint32_t queue_max;             /* publishes waiting for the Redis bridge (503 above) */
        uint32_t idempotency_window_ms; /* how long Redis remembers an idempotency key */
        uint32_t presence_ttl_ms;       /* a node's presence entries outlive its last refresh */
    } redis;

    /* "auth" (docs/security.md): subscribing and publishing are authorized when a key is set
     * (hs256_secret or rs256_public_key_file, not both, and/or jwks_file) or anonymous_subscribe
     * is not empty;
     * the control port asks for a token when control_token is set or subscribing is. */
    struct {
        char *hs256_secret;             /* HS256 key; "" = none */
        char *rs256_public_key_file;    /* PEM file of the RS256 public key; "" = none */
        char *jwks_file;                /* JWKS file of keys chosen by the token's kid; "" = none */
        struct lg_string_list anonymous_subscribe; /* topic globs anyone may subscribe to */
        char *control_token;            /* the control port's bearer token; "" = none */
        char *cookie;                   /* cookie that may carry the token */
        uint32_t leeway_s;              /* clock skew allowed on exp and nbf */
    } auth;
    struct lg_string_list allowed_origins; /* Origins allowed (CORS, WebSocket); [] = any */

    /* "subscribe_hook" (docs/security.md "Backend hooks"): the backend asked before a
     * subscribe to one of `topics` is accepted. */
    struct {
        char *url;                      /* POSTed to; "" = off */
        struct lg_string_list topics;   /* topic globs the hook is asked about */
        uint32_t timeout_ms;            /* an answer later than this counts as down */
        uint32_t max_pending;           /* subscribes waiting for the backend, per worker */
        uint32_t cache_ms;              /* answers kept per (token, topic); 0 = none */
        uint32_t cache_max_entries;     /* answers kept at most (oldest go first) */
        unsigned when_down;             /* enum lg_hook_when_down */
    } subscribe_hook;
    /* "webhooks": occupied / vacated / disconnect notices POSTed to the backend. */
    struct {
        char *url;                      /* "" = off */
        char *secret;                   /* HMAC-SHA256 key of the signature header */
        uint32_t vacated_delay_ms;      /* a topic empty this long is vacated */
        uint32_t queue_max;             /* notices waiting to be sent (dropped above) */
        uint32_t timeout_ms;            /* one attempt */
        uint32_t max_attempts;          /* then the notice is given up (failed) */
        uint32_t retry_min_ms;          /* first retry delay; doubles up to retry_max_ms */
        uint32_t retry_max_ms;
    } webhooks;
};

/* What a subscribe gets when its hook cannot answer (down, late, garbage, overloaded). */
enum lg_hook_when_down { LG_HOOK_DOWN_DENY = 0, LG_HOOK_DOWN_ALLOW };

/* Whether cfg authorizes subscriptions (a key or anonymous_subscribe is set). */
bool lg_config_auth_enabled(const struct lg_config *cfg);

/* Result of loading or validating: 0 on success, or -1 with a message in err. */
#define LG_CONFIG_ERR_MAX 512

/* Fill cfg with the built-in defaults. Always succeeds (aborts if out of memory at start);
 * pair with lg_config_release(). */
void lg_config_init_defaults(struct lg_config *cfg);

/*
 * Apply the JSON file at path on top of the defaults already in cfg. Validation is strict:
 * an unknown key, a wrong type or an out-of-range value fails with a message naming the key
 * path (e.g. "client_queue.max_events"), the problem and the allowed range. The message does
 * not repeat the file name; the caller prefixes it (lg_cli_build_config() does).
 * Return value: 0, or -1 with err filled (cfg is then unspecified but still releasable).
 */
int lg_config_load_file(struct lg_config *cfg, const char *path, char err[LG_CONFIG_ERR_MAX]);

/* Same as lg_config_load_file() over a JSON text held in memory (used by the tests). */
int lg_config_load_string(struct lg_config *cfg, const char *json, char err[LG_CONFIG_ERR_MAX]);

/*
 * Set one integer setting by its key path (e.g. "workers"), checked against the same range as
 * the file. Used for command-line overrides so flags and file share one table of bounds.
 * label names the source in messages (e.g. "--workers"); NULL means the key path itself.
 * Return value: 0, or -1 with err filled (cfg unchanged).
 */
int lg_config_set_uint(struct lg_config *cfg, const char *key, uint64_t value, const char *label,
                       char err[LG_CONFIG_ERR_MAX]);

/* Parse "HOST:PORT" ("[v6]:PORT" for IPv6). Return value: 0, or -1 with err filled. */
int lg_config_parse_addr(const char *text, struct lg_listen_addr *out, char err[LG_CONFIG_ERR_MAX]);

/* Render cfg as the indented JSON that --print-config shows, ending in a newline, so the
 * defaults print byte for byte as config/livegate.json. Return value: malloc'd text the
 * caller frees, or NULL when out of memory. */
char *lg_config_to_json(const struct lg_config *cfg);

/*
 * Compare a and b setting by setting (as --print-config renders them): visit(key, live, ctx)
 * is called for each setting whose value differs, in table order; live tells whether a SIGHUP
 * reload may change it (the table's .live column).
 * Return value: how many settings differ, or -1 when out of memory.
 */
int lg_config_diff(const struct lg_config *a, const struct lg_config *b,
                   void (*visit)(const char *key, bool live, void *ctx), void *ctx);

/* visit(key, live, ctx) for every setting, in table order (live as in lg_config_diff()): what
 * the docs' lists of live and restart-only settings are checked against. */
void lg_config_each_setting(void (*visit)(const char *key, bool live, void *ctx), void *ctx);

/* Free what cfg holds and zero it, so releasing twice is harmless. */
void lg_config_release(struct lg_config *cfg);

#endif
