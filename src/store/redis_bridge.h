/*
 * redis_bridge.h - the one thread of a node that talks to Redis: a libev loop owning two
 * hiredis async connections (commands, and a dedicated one in Pub/Sub mode, which Redis allows
 * nothing but (UN)SUBSCRIBE on), with reconnection by exponential backoff and jitter, a command
 * watchdog, and a bounded queue of jobs that other threads hand it. The Redis store
 * (store_redis.h) is its only user.
 *
 * Owns:    the thread (lg-redis), its loop, both connections, the job queue, and the hosts of
 *          the guests it serves (the guests themselves are their owner's).
 * Frees:   lg_redis_bridge_stop() runs every queued job as failed and drops both connections
 *          (hiredis then calls every pending reply callback with a NULL reply);
 *          lg_redis_bridge_unhost() also stops serving the guests and joins the thread;
 *          lg_redis_bridge_destroy() frees it. The store owns these calls.
 * Threads: lg_redis_bridge_post() and lg_redis_bridge_state() from any thread (the queue has
 *          its own mutex, held only to link a job; ev_async_send wakes the loop). Everything
 *          else - the command functions and every callback - runs on the bridge thread only.
 * Bounds:  at most queue_max jobs wait; past it, or while Redis is not connected, post()
 *          refuses at once and the caller answers 503 (the publisher pays, nothing is
 *          accepted). Commands sent and not yet answered are bounded by their senders: each
 *          publish waits for its answer on a suspended control connection (at most
 *          limits.control_max_connections), each stream has at most one load or catch-up read
 *          in flight. Pub/Sub messages are the store's to take as they come (Redis bounds what
 *          it buffers for a slow subscriber: client-output-buffer-limit pubsub, then it drops
 *          the connection, and the store catches up from the streams). A command connection
 *          that has not answered for
 *          command_timeout_ms is dropped and reconnected, so no caller waits forever.
 *          Reconnect delays double from reconnect_min_ms to reconnect_max_ms, each shortened
 *          by up to half at random (jitter).
 *
 * Sentinel: with sentinels set, every (re)connect first asks them, in order, for the master's
 * address (SENTINEL get-master-addr-by-name; the first that names one wins). That lookup is a
 * blocking hiredis call on the bridge thread - the guests it hosts (the control port) wait
 * for it, and answer publishes 503 until a master is found - bounded by connect_timeout_ms to
 * connect and again to answer, per sentinel
 * (at most 2 x sentinel count x connect_timeout_ms, then the reconnect delay). The command
 * connection must then answer ROLE "master" before the bridge reports up. A server that a
 * failover moved is left and the sentinels asked again: its link dropped, or a -READONLY
 * (demoted to replica) or -LOADING answer on the command connection (without Sentinel the
 * same answers reconnect to redis.url).
 */
#ifndef LG_REDIS_BRIDGE_H
#define LG_REDIS_BRIDGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct redisAsyncContext;
struct lg_redis_bridge;
struct lg_loop_guest;

/* The connection settings ("redis" section of the config, without the store's own). */
struct lg_redis_options {
    const char *url;               /* redis://HOST[:PORT] or unix:///path; unused with sentinels */
    const char *const *sentinels;  /* redis://HOST:PORT of each, asked in order (copied) */
    uint32_t sentinel_count;       /* 0 = connect to url */
    const char *master_name;       /* with sentinels: the master they are asked for (copied) */
    uint32_t wait_replicas;        /* the store's: WAIT for this many replicas after an append */
    uint32_t wait_timeout_ms;      /* ... at most this long (< command_timeout_ms) */
    const char *key_prefix;        /* before every key the store writes */
    uint32_t connect_timeout_ms;
    uint32_t command_timeout_ms;
    uint32_t reconnect_min_ms;
    uint32_t reconnect_max_ms;
    uint32_t queue_max;            /* jobs waiting for the bridge thread */
    uint32_t idempotency_window_ms;/* how long an idempotency key is remembered */
    uint32_t presence_ttl_ms;      /* a node's presence entries live this long unrefreshed */
};

enum lg_redis_state {
    LG_REDIS_CONNECTING = 0, /* never connected yet */
    LG_REDIS_UP,             /* both connections ready */
    LG_REDIS_DOWN,           /* lost; reconnecting with backoff */
    LG_REDIS_STOPPED,
};
const char *lg_redis_state_name(enum lg_redis_state s);

/* A piece of work run on the bridge thread. up is false when the bridge is stopping or Redis
 * is not connected: the job must then fail its caller (and not issue commands). */
struct lg_redis_job {
    void (*run)(struct lg_redis_job *job, bool up);
    struct lg_redis_job *next; /* the queue's */
};

/* What the bridge tells its user, on the bridge thread. */
struct lg_redis_bridge_user {
    void *arg;
    void (*up)(void *arg);   /* both connections are (again) ready: resync, resubscribe */
    void (*down)(void *arg); /* the connections are gone (pending replies were failed, every
                                subscription with them) */
    /* The Pub/Sub connection alone was lost (commands still work; every subscription is gone),
     * and later back: resubscribe. */
    void (*feed_lost)(void *arg);
    void (*feed_back)(void *arg);
    /* Each reply of the Pub/Sub connection (a struct redisReply *, borrowed for the call):
     * ["subscribe"|"unsubscribe", channel, count] and ["message", channel, payload]. */
    void (*pubsub)(void *arg, void *reply);
};

/* Parse the URL and start the thread; *out is set before the thread starts (the user's
 * callbacks may use it). Return value: 0, or -1 with err filled and *out NULL. */
int lg_redis_bridge_start(const struct lg_redis_options *opts, struct lg_redis_bridge_user user,
                          struct lg_redis_bridge **out, char *err, size_t err_cap);

/* Serve guests[0..n) on the bridge's loop from its next pass on (copied; see loop_guest.h):
 * a publish served here hands its append to this thread and is answered by it, with no
 * wake-up of another thread in between. Any thread, once. Return value: 0, or -1 (out of
 * memory, stopping, or already hosting). */
int lg_redis_bridge_host(struct lg_redis_bridge *b, const struct lg_loop_guest *guests,
                         uint32_t n);

/* Leave Redis: every queued job runs as failed, both connections are dropped (pending reply
 * callbacks get NULL), and this returns once that is done. Guests stay served. */
void lg_redis_bridge_stop(struct lg_redis_bridge *b);

/* Stop (as above), stop serving the guests and join the thread: no guest's serve() runs
 * after this returns. */
void lg_redis_bridge_unhost(struct lg_redis_bridge *b);

/* Unhost (as above) and free b. NULL is ignored. */
void lg_redis_bridge_destroy(struct lg_redis_bridge *b);

enum lg_redis_state lg_redis_bridge_state(const struct lg_redis_bridge *b);

/* Queue job for the bridge thread. Return value: false (nothing queued) when the queue is
 * full, the bridge is stopping, or Redis is not connected. */
bool lg_redis_bridge_post(struct lg_redis_bridge *b, struct lg_redis_job *job);

/* Bridge thread only. Reply callbacks get (the reply or NULL when the connection failed, priv).
 * Return value: 0, or -1 (not connected: cb is not called). */
typedef void lg_redis_reply_fn(void *reply, void *priv);
int lg_redis_command(struct lg_redis_bridge *b, lg_redis_reply_fn *cb, void *priv, int argc,
                     const char **argv, const size_t *lens);
/* SUBSCRIBE / UNSUBSCRIBE one channel on the Pub/Sub connection; what Redis answers, and
 * every message, reaches user.pubsub. Return value: 0, or -1 (not connected). */
int lg_redis_subscribe(struct lg_redis_bridge *b, const char *channel, size_t len);
int lg_redis_unsubscribe(struct lg_redis_bridge *b, const char *channel, size_t len);
/* Call fn(arg) on the bridge thread after ms (one timer; a later call replaces the first). */
void lg_redis_bridge_later(struct lg_redis_bridge *b, uint32_t ms, void (*fn)(void *), void *arg);
/* With Sentinel, ask the sentinels whether the master is still the one connected to, and move
 * to the one they name if not (bridge thread; blocking, as a connect's lookup; at most once per
 * reconnect_min_ms). For a sign that the master may have been replaced while its connection
 * stays (a WAIT that found no replica: a failover promoted it), which would otherwise last
 * until the sentinels demote the old master. Without Sentinel: nothing. */
void lg_redis_bridge_recheck_master(struct lg_redis_bridge *b);
/* Whether the current connections are up (bridge thread). */
bool lg_redis_bridge_up(const struct lg_redis_bridge *b);

#endif
