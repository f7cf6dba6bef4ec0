/*
 * stats.h - process-wide counters and gauges.
 *
 * Owns:    one static struct lg_stats. It only reports: what admission control reads (live
 *          event bytes, open connections) is accounting.h's, and /v1/stats shows it from there.
 * Threads: any thread adds with relaxed atomics; any thread (the control port) reads a snapshot.
 *          Counters are monotonic; gauges go up and down. Nothing here orders other memory.
 * Bounds:  fixed size.
 */
#ifndef LG_STATS_H
#define LG_STATS_H

#include <stdatomic.h>
#include <stdint.h>

struct lg_stats {
    /* publishing */
    _Atomic uint64_t events_published;       /* accepted publishes (2xx) */
    _Atomic uint64_t publishes_refused;      /* 503: workers behind, retained bytes or topics */
    _Atomic uint64_t publishes_deduplicated; /* idempotency key already in history: no new event */
    _Atomic uint64_t publishes_held;         /* waits for a worker's room (a batch: one per wait) */
    _Atomic uint64_t publish_wait_ms_total;  /* time those waits took, summed */
    _Atomic uint64_t publishes_refused_overload; /* 503 after limits.publish_wait_ms */
    /* delivery */
    _Atomic uint64_t events_delivered;       /* event frames written to clients */
    _Atomic uint64_t events_dropped_overflow;/* drop-oldest: queue full */
    _Atomic uint64_t events_dropped_lag;     /* drop-oldest: oldest queued event too old */
    _Atomic uint64_t events_conflated;       /* conflate: replaced by a newer same-key event */
    _Atomic uint64_t gaps_sent;              /* gap notices written to clients */
    _Atomic uint64_t clients_disconnected_slow; /* disconnect policy fired */
    _Atomic uint64_t clients_closed_unread;  /* kicked or disconnected, notice not taken in time:
                                                the socket closed hard (conn.c) */
    _Atomic uint64_t history_evicted;        /* events evicted from topic history */
    /* connections */
    _Atomic int64_t clients_sse;             /* gauge */
    _Atomic int64_t clients_ws;              /* gauge */
    _Atomic int64_t clients_poll;            /* gauge: held long-polls */
    _Atomic uint64_t connections_refused;    /* max_connections reached */
    _Atomic uint64_t connections_refused_address; /* max_connections_per_address reached */
    _Atomic uint64_t requests_rejected;      /* public-port 4xx answers */
    _Atomic int64_t max_queue_depth;         /* gauge: deepest client queue seen since start */
    _Atomic int64_t topics;                  /* gauge */
    _Atomic uint64_t topics_collected;       /* idle, never published to: dropped from the registry */
    _Atomic uint64_t topic_creations_refused;/* limits.topic_creations_per_s reached */
    _Atomic uint64_t ws_closed_message_rate; /* websocket.max_messages_per_s reached: 1008 */
    /* permessage-deflate (websocket.compression) */
    _Atomic uint64_t ws_deflate_negotiated;  /* handshakes that agreed on it */
    _Atomic uint64_t ws_deflate_declined;    /* handshakes whose offers were all declined */
    _Atomic uint64_t ws_deflate_events;      /* events compressed (once each, for every worker) */
    _Atomic uint64_t ws_deflate_frames;      /* event frames written compressed */
    _Atomic uint64_t ws_deflate_bytes_before;/* those frames' bytes uncompressed */
    _Atomic uint64_t ws_deflate_bytes_after; /* their bytes as written */
    _Atomic uint64_t control_connections_timed_out; /* control request past its deadline */
    /* batched_writes (public/send_batch.h) */
    _Atomic uint64_t writes_batched;         /* event writes sent in an io_uring submission */
    _Atomic uint64_t write_batches;          /* those submissions */
    /* the Redis store (docs/scaling.md) */
    _Atomic uint64_t publishes_refused_store; /* 503: Redis unreachable or redis.queue_max */
    _Atomic uint64_t redis_connections_lost;  /* the bridge lost Redis and began reconnecting */
    _Atomic uint64_t redis_behind_marked;     /* a topic marked behind in Redis: its publishers wait */
    _Atomic uint64_t redis_tail_stalls;       /* a topic's delivery paused: a worker inbox was full */
    _Atomic uint64_t redis_replicas_short;    /* an append's WAIT saw fewer than
                                                 redis.wait_replicas replicas: answered 503 */
    /* authorization (docs/security.md): refusals by reason, on every port and transport */
    _Atomic uint64_t auth_refused_missing;       /* 401 / 1008: no token where one is needed */
    _Atomic uint64_t auth_refused_malformed;     /* not a JWT of the documented shape */
    _Atomic uint64_t auth_refused_expired;       /* exp passed (at connect or refresh) */
    _Atomic uint64_t auth_refused_not_yet_valid; /* nbf not reached */
    _Atomic uint64_t auth_refused_bad_signature; /* signature does not verify */
    _Atomic uint64_t auth_refused_wrong_algorithm; /* alg not the configured one (none, confusion) */
    _Atomic uint64_t auth_refused_unknown_key;   /* kid of no key (or no kid, several keys) */
    _Atomic uint64_t auth_refused_topic;         /* 403 / WS error: topic outside the claims */
    _Atomic uint64_t auth_refused_origin;        /* 403: Origin not in allowed_origins */
    _Atomic uint64_t auth_refused_control_token; /* 403: a JWT on an admin control route */
    _Atomic uint64_t auth_streams_expired;       /* connections ended at their token's exp */
    _Atomic uint64_t auth_refreshed;             /* WebSocket auth/refresh messages accepted */
    /* backend hooks (hooks.h): the subscribe hook's answers by kind (each topic asked),
     * cache hits, subscribes answered as down because max_pending were waiting; webhooks */
    _Atomic uint64_t hook_answers_allow;
    _Atomic uint64_t hook_answers_deny;
    _Atomic uint64_t hook_answers_down;          /* unreachable, late, non-200, garbage */
    _Atomic uint64_t hook_cache_hits;
    _Atomic uint64_t hook_overflow;
    _Atomic uint64_t webhooks_sent;              /* notices the receiver took (2xx) */
    _Atomic uint64_t webhooks_failed;            /* attempts that failed (retried or given up) */
    _Atomic uint64_t webhooks_dropped_queue_full;/* a new notice past webhooks.queue_max */
    _Atomic uint64_t webhooks_dropped_attempts;  /* given up after webhooks.max_attempts */
    _Atomic uint64_t webhooks_dropped_shutdown;  /* unsent when the gateway stopped */
    /* SIGHUP reloads (app.c): applied whole, refused (a restart-only key changed: nothing
     * applied), failed (the file did not load or validate, or a key file: nothing applied) */
    _Atomic uint64_t config_reloads_applied;
    _Atomic uint64_t config_reloads_refused;
    _Atomic uint64_t config_reloads_failed;
    /* the gateway's own topics (sys_stats.h) */
    _Atomic uint64_t sys_stats_published;    /* $sys/stats events published */
    _Atomic uint64_t sys_stats_skipped;      /* ticks not published (workers behind, OOM) */
    /* by transport and by reason (the Prometheus labels of the counters above; metrics.c) */
    _Atomic uint64_t events_delivered_sse;   /* events_delivered, per transport */
    _Atomic uint64_t events_delivered_ws;
    _Atomic uint64_t events_delivered_poll;
    _Atomic uint64_t deltas_delivered;       /* events_delivered_ws sent as deltas */
    _Atomic uint64_t resets_sent;            /* reset notices written to clients */
    _Atomic uint64_t ends_sent;              /* end notices (topic deleted) written to clients */
    _Atomic uint64_t presence_batches;       /* presence batches handed to the workers */
    _Atomic uint64_t presence_batches_lost;  /* batches not made (out of memory): changes lost */
    _Atomic uint64_t presence_notices_sent;  /* join, leave and occupancy notices written */
    _Atomic uint64_t presence_resyncs_sent;  /* resync notices: a client missed a batch */
    _Atomic uint64_t presence_unlisted;      /* subscriptions beyond presence_max_members */
    _Atomic uint64_t presence_shares_failed; /* Redis store: topics whose members a tick could
                                                not share (Redis down or busy) */
    _Atomic uint64_t publishes_refused_topics;  /* publishes_refused: limits.max_topics */
    _Atomic uint64_t publishes_refused_memory;  /* publishes_refused: max_retained_bytes */
    _Atomic uint64_t publishes_refused_oom;     /* publishes_refused: out of memory */
    _Atomic uint64_t publishes_refused_draining; /* publishes_refused: the gateway is draining */
    _Atomic uint64_t connections_opened;     /* public-port sockets accepted */
    _Atomic uint64_t connections_closed_client;  /* peer closed, or its request was answered */
    _Atomic uint64_t connections_closed_slow;    /* slow-consumer disconnect */
    _Atomic uint64_t connections_closed_policy;  /* WebSocket 1008/1009, per-address limit */
    _Atomic uint64_t connections_closed_drain;   /* ended by the shutdown drain */
    _Atomic uint64_t connections_closed_error;   /* a socket error, or an error answer */
    _Atomic uint64_t connections_closed_admin;   /* DELETE /v1/clients/{id} */
    _Atomic uint64_t connections_closed_keepalive; /* WebSocket: no pong within pong_timeout_ms */
    /* client publishes (the WebSocket "publish" op, ws_publish.c) */
    _Atomic uint64_t client_publishes_accepted;          /* answered "published" */
    _Atomic uint64_t client_publishes_refused_forbidden; /* no publish claim or rule */
    _Atomic uint64_t client_publishes_refused_rate;      /* websocket.max_publishes_per_s */
    _Atomic uint64_t client_publishes_refused_invalid;   /* malformed op, bad topic or data */
    _Atomic uint64_t client_publishes_refused_too_large; /* data over limits.max_event_bytes */
    _Atomic uint64_t client_publishes_refused_pending;   /* LG_WS_PUBLISHES_PENDING_MAX in flight */
    _Atomic uint64_t client_publishes_refused_overload;  /* workers behind: not held, refused */
    _Atomic uint64_t client_publishes_refused_unavailable; /* topics, memory, Redis, out of memory */
    _Atomic uint64_t client_publishes_refused_draining;  /* the worker drains */
};


extern struct lg_stats lg_stats;

#define LG_STAT_ADD(field, n) atomic_fetch_add_explicit(&lg_stats.field, (n), memory_order_relaxed)
#define LG_STAT_SUB(field, n) atomic_fetch_sub_explicit(&lg_stats.field, (n), memory_order_relaxed)
#define LG_STAT_GET(field) atomic_load_explicit(&lg_stats.field, memory_order_relaxed)

/* Raise the max_queue_depth gauge to depth if it is higher (lock-free). */
void lg_stats_note_queue_depth(int64_t depth);

#endif
