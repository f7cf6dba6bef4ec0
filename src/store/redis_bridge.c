/* redis_bridge.c - see redis_bridge.h. */
#include "redis_bridge.h"

#include <ev.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <hiredis/adapters/libev.h>
#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include "clock.h"
#include "ev_host.h"
#include "log.h"
#include "stats.h"

#define WATCHDOG_S 0.05

struct lg_redis_bridge {
    struct lg_redis_options opts;
    char host[256];         /* TCP host, or "" with unix_path set */
    int port;
    char unix_path[256];
    /* With Sentinel: host and port are the master's, asked for at every connect. */
    struct sentinel_addr {
        char host[256];
        int port;
    } *sentinels;           /* in the order they are asked; NULL without Sentinel */
    uint32_t sentinel_count;
    char master_name[257];
    struct lg_redis_bridge_user user;

    pthread_t thread;
    _Atomic pthread_t loop_thread; /* the same, set by the thread itself: read by post() */
    bool thread_started;
    struct ev_loop *loop;
    ev_async wake;
    ev_timer reconnect, reconnect_feed, watchdog, later;
    void (*later_fn)(void *);
    void *later_arg;

    /* Bridge thread only. */
    redisAsyncContext *cmd, *sub;
    bool cmd_ready, sub_ready, up; /* cmd_ready: connected and, with Sentinel, a master */
    uint64_t connect_started_ms;
    uint32_t backoff_ms;
    uint64_t rechecked_ms;  /* when the sentinels were last asked while up */
    uint32_t cmd_inflight;
    uint64_t cmd_progress_ms;

    _Atomic int state;      /* enum lg_redis_state, read by any thread */
    _Atomic bool stopping;  /* Redis is left: lg_redis_bridge_stop() */
    _Atomic bool unhosting; /* the thread ends: lg_redis_bridge_unhost() or destroy */

    /* Guests served on the loop (lg_redis_bridge_host): bridge thread once started. */
    struct lg_ev_host *hosts;
    uint32_t host_count;

    pthread_mutex_t lock;   /* the queue, the hosts handed over, the stop's completion */
    struct lg_redis_job *head, *tail_job; /* {lock} */
    uint32_t queued;                       /* {lock} */
    struct lg_ev_host *hosts_wanted;       /* {lock} handed over, not yet started */
    uint32_t hosts_wanted_count;           /* {lock} */
    bool left_redis;                       /* {lock} every job failed, both connections gone */
    pthread_cond_t left_redis_cond;        /* {lock} */
};

struct pending {
    struct lg_redis_bridge *b;
    lg_redis_reply_fn *cb;
    void *priv;
};

const char *lg_redis_state_name(enum lg_redis_state s)
{
    switch (s) {
    case LG_REDIS_CONNECTING:
        return "connecting";
    case LG_REDIS_UP:
        return "up";
    case LG_REDIS_DOWN:
        return "down";
    case LG_REDIS_STOPPED:
        return "stopped";
    }
    return "unknown";
}

/* HOST[:PORT] after "redis://" in url (what: the setting, for err) into host and *port. */
static int parse_host_port(const char *url, const char *what, char *host, size_t host_cap,
                           int *port, char *err, size_t cap)
{
    if (strncmp(url, "redis://", 8) != 0) {
        snprintf(err, cap, "%s %s: must start with redis://", what, url);
        return -1;
    }
    const char *h = url + 8, *colon = strrchr(h, ':');
    size_t hl = colon ? (size_t)(colon - h) : strcspn(h, "/");
    *port = 6379;
    if (colon) {
        char *end;
        long p = strtol(colon + 1, &end, 10);
        if (p < 1 || p > 65535 || (*end && *end != '/')) {
            snprintf(err, cap, "%s %s: bad port", what, url);
            return -1;
        }
        *port = (int)p;
    }
    if (hl == 0 || hl >= host_cap) {
        snprintf(err, cap, "%s %s: no host", what, url);
        return -1;
    }
    memcpy(host, h, hl);
    host[hl] = '\0';
    return 0;
}

static int parse_url(struct lg_redis_bridge *b, const char *url, char *err, size_t cap)
{
    if (strncmp(url, "unix://", 7) == 0) {
        snprintf(b->unix_path, sizeof b->unix_path, "%s", url + 7);
        return b->unix_path[0] == '/' ? 0
                                      : (snprintf(err, cap, "redis.url %s: unix:// needs an "
                                                  "absolute path", url), -1);
    }
    if (strncmp(url, "redis://", 8) != 0) {
        snprintf(err, cap, "redis.url %s: must start with redis:// or unix://", url);
        return -1;
    }
    return parse_host_port(url, "redis.url", b->host, sizeof b->host, &b->port, err, cap);
}

/* Copy the sentinels' addresses and the master's name (the options' strings are the
 * caller's). Return value: 0, or -1 with err filled. */
static int parse_sentinels(struct lg_redis_bridge *b, const struct lg_redis_options *opts,
                           char *err, size_t cap)
{
    if (!opts->master_name || !opts->master_name[0] ||
        strlen(opts->master_name) >= sizeof b->master_name) {
        snprintf(err, cap, "redis.master_name: 1 to %zu bytes with redis.sentinels",
                 sizeof b->master_name - 1);
        return -1;
    }
    snprintf(b->master_name, sizeof b->master_name, "%s", opts->master_name);
    b->sentinels = calloc(opts->sentinel_count, sizeof b->sentinels[0]);
    if (!b->sentinels) {
        snprintf(err, cap, "out of memory");
        return -1;
    }
    b->sentinel_count = opts->sentinel_count;
    for (uint32_t i = 0; i < opts->sentinel_count; i++)
        if (parse_host_port(opts->sentinels[i], "redis.sentinels", b->sentinels[i].host,
                            sizeof b->sentinels[i].host, &b->sentinels[i].port, err, cap) != 0)
            return -1;
    return 0;
}

static void set_state(struct lg_redis_bridge *b, enum lg_redis_state s)
{
    atomic_store_explicit(&b->state, s, memory_order_release);
}

enum lg_redis_state lg_redis_bridge_state(const struct lg_redis_bridge *b)
{
    return (enum lg_redis_state)atomic_load_explicit(&b->state, memory_order_acquire);
}

bool lg_redis_bridge_up(const struct lg_redis_bridge *b)
{
    return b->up;
}

/* ---- Connections ------------------------------------------------------------------------ */

static void schedule_reconnect(struct lg_redis_bridge *b)
{
    if (atomic_load(&b->stopping) || ev_is_active(&b->reconnect))
        return;
    uint32_t base = b->backoff_ms ? b->backoff_ms : b->opts.reconnect_min_ms;
    uint32_t jitter = 0;
    if (getrandom(&jitter, sizeof jitter, 0) != (ssize_t)sizeof jitter)
        jitter = (uint32_t)lg_mono_ns();
    uint32_t delay = base - (base / 2 ? jitter % (base / 2 + 1) : 0);
    b->backoff_ms = base * 2 > b->opts.reconnect_max_ms ? b->opts.reconnect_max_ms : base * 2;
    ev_timer_set(&b->reconnect, delay / 1000.0, 0.);
    ev_timer_start(b->loop, &b->reconnect);
}

/* Drop both connections (their pending replies are failed) and reconnect later. */
static void fail_session(struct lg_redis_bridge *b, const char *why)
{
    redisAsyncContext *c = b->cmd, *t = b->sub;
    bool was_up = b->up;
    b->cmd = b->sub = NULL;
    b->up = b->cmd_ready = b->sub_ready = false;
    b->cmd_inflight = 0;
    ev_timer_stop(b->loop, &b->reconnect_feed); /* both come back together */
    if (was_up || c || t)
        set_state(b, atomic_load(&b->stopping) ? LG_REDIS_STOPPED : LG_REDIS_DOWN);
    if (was_up) {
        LG_STAT_ADD(redis_connections_lost, 1);
        lg_warn("redis %s%s%d: connection lost (%s); publishes answer 503 until it is back",
                b->unix_path[0] ? b->unix_path : b->host, b->unix_path[0] ? "" : ":",
                b->unix_path[0] ? 0 : b->port, why);
    }
    if (c)
        redisAsyncFree(c);
    if (t)
        redisAsyncFree(t);
    if (was_up && b->user.down)
        b->user.down(b->user.arg);
    schedule_reconnect(b);
}

/* The Pub/Sub connection alone was lost while commands still work: publishes go on, the
 * user resubscribes once it is back (and reads what it missed from the streams). */
static void lose_feed(struct lg_redis_bridge *b, const char *why)
{
    b->sub = NULL;
    b->sub_ready = false;
    LG_STAT_ADD(redis_connections_lost, 1);
    lg_warn("redis: Pub/Sub connection lost (%s); reconnecting it, publishes go on", why);
    if (b->user.feed_lost)
        b->user.feed_lost(b->user.arg);
    if (!atomic_load(&b->stopping) && !ev_is_active(&b->reconnect_feed)) {
        ev_timer_set(&b->reconnect_feed, b->opts.reconnect_min_ms / 1000.0, 0.);
        ev_timer_start(b->loop, &b->reconnect_feed);
    }
}

static void on_disconnect(const redisAsyncContext *ac, int status)
{
    struct lg_redis_bridge *b = ac->data;
    const char *why = status == REDIS_OK ? "closed" : ac->errstr;
    if (ac == b->sub && b->up && b->cmd) {
        lose_feed(b, why);
        return;
    }
    if (ac == b->cmd)
        b->cmd = NULL;
    else if (ac == b->sub)
        b->sub = NULL;
    else
        return; /* freed by fail_session already */
    fail_session(b, why);
}

/* Both connections ready: report up. */
static void maybe_up(struct lg_redis_bridge *b)
{
    if (!b->cmd_ready || !b->sub_ready || b->up)
        return;
    b->up = true;
    b->backoff_ms = 0;
    b->cmd_progress_ms = lg_mono_ms();
    set_state(b, LG_REDIS_UP);
    lg_info("redis: connected");
    if (b->user.up)
        b->user.up(b->user.arg);
}

/* The answer to ROLE on a new command connection (Sentinel): only a master is used. A sentinel
 * may still name a master that a failover demoted; it is left and the sentinels asked again. */
static void on_role(redisAsyncContext *ac, void *reply, void *privdata)
{
    struct lg_redis_bridge *b = privdata;
    redisReply *r = reply;
    if (!r || ac != b->cmd)
        return; /* the connection is being freed */
    const redisReply *role = r->type == REDIS_REPLY_ARRAY && r->elements ? r->element[0] : NULL;
    if (role && role->type == REDIS_REPLY_STRING && strcmp(role->str, "master") == 0) {
        b->cmd_ready = true;
        maybe_up(b);
        return;
    }
    static struct lg_ratelimit rl;
    lg_log_ratelimited(&rl, 1000, LG_LOG_WARN,
                       "redis: %s:%d, which the sentinels named master %s, is not a master "
                       "(ROLE: %s); asking them again", b->host, b->port, b->master_name,
                       role && role->type == REDIS_REPLY_STRING ? role->str
                       : r->type == REDIS_REPLY_ERROR ? r->str : "unexpected answer");
    fail_session(b, "not a master");
}

static void on_connect(const redisAsyncContext *ac, int status)
{
    struct lg_redis_bridge *b = ac->data;
    if (status != REDIS_OK) {
        /* hiredis frees ac after this callback and calls no disconnect callback */
        lg_debug("redis: connect failed: %s", ac->errstr);
        if (ac == b->sub && b->up) {
            lose_feed(b, ac->errstr); /* try the Pub/Sub connection again later */
            return;
        }
        if (ac == b->cmd)
            b->cmd = NULL;
        else if (ac == b->sub)
            b->sub = NULL;
        fail_session(b, ac->errstr);
        return;
    }
    if (ac == b->cmd && b->sentinel_count) {
        if (redisAsyncCommand(b->cmd, on_role, b, "ROLE") != REDIS_OK)
            fail_session(b, "cannot send ROLE");
        return; /* cmd_ready once it answers "master" */
    }
    if (ac == b->cmd)
        b->cmd_ready = true;
    else if (ac == b->sub)
        b->sub_ready = true;
    if (ac == b->sub && b->up) {
        lg_info("redis: Pub/Sub connection back");
        if (b->user.feed_back)
            b->user.feed_back(b->user.arg);
        return;
    }
    maybe_up(b);
}

static redisAsyncContext *open_one(struct lg_redis_bridge *b)
{
    redisAsyncContext *ac = b->unix_path[0] ? redisAsyncConnectUnix(b->unix_path)
                                            : redisAsyncConnect(b->host, b->port);
    if (!ac)
        return NULL;
    if (ac->err) {
        lg_debug("redis: connect: %s", ac->errstr);
        redisAsyncFree(ac);
        return NULL;
    }
    ac->data = b;
    redisLibevAttach(b->loop, ac);
    redisAsyncSetConnectCallback(ac, on_connect);
    redisAsyncSetDisconnectCallback(ac, on_disconnect);
    return ac;
}

/* Ask one sentinel for the master's address into *out. Blocking: the bridge thread is this
 * node's own, and nothing it serves can go on before a master is found anyway; bounded by
 * connect_timeout_ms to connect and again to answer. Return value: true if it named one. */
static bool ask_sentinel(const struct lg_redis_bridge *b, const struct sentinel_addr *s,
                         struct sentinel_addr *out)
{
    uint32_t ms = b->opts.connect_timeout_ms;
    struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
    redisContext *c = redisConnectWithTimeout(s->host, s->port, tv);
    redisReply *r = NULL;
    if (c && !c->err && redisSetTimeout(c, tv) == REDIS_OK)
        r = redisCommand(c, "SENTINEL get-master-addr-by-name %s", b->master_name);
    bool named = r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
                 r->element[0]->type == REDIS_REPLY_STRING &&
                 r->element[1]->type == REDIS_REPLY_STRING && r->element[0]->len < sizeof out->host;
    long port = named ? strtol(r->element[1]->str, NULL, 10) : 0;
    if (named && port > 0 && port <= 65535) {
        snprintf(out->host, sizeof out->host, "%s", r->element[0]->str);
        out->port = (int)port;
    } else {
        lg_debug("redis: sentinel %s:%d named no master %s: %s", s->host, s->port,
                 b->master_name, !c || c->err ? (c ? c->errstr : "out of memory")
                                 : r && r->type == REDIS_REPLY_ERROR ? r->str : "no address");
        named = false;
    }
    freeReplyObject(r);
    if (c)
        redisFree(c);
    return named;
}

/* The sentinels, in order; the first that names the master wins. Return value: true with
 * *out set. */
static bool ask_sentinels(const struct lg_redis_bridge *b, struct sentinel_addr *out)
{
    for (uint32_t i = 0; i < b->sentinel_count; i++)
        if (ask_sentinel(b, &b->sentinels[i], out))
            return true;
    static struct lg_ratelimit rl;
    lg_log_ratelimited(&rl, 1000, LG_LOG_WARN,
                       "redis: none of the %" PRIu32 " sentinels named master %s; asking again "
                       "after the reconnect delay", b->sentinel_count, b->master_name);
    return false;
}

static bool is_current(const struct lg_redis_bridge *b, const struct sentinel_addr *a)
{
    return strcmp(b->host, a->host) == 0 && b->port == a->port;
}

/* Connect to the master the sentinels name now. Return value: false if none did. */
static bool find_master(struct lg_redis_bridge *b)
{
    struct sentinel_addr m;
    if (!ask_sentinels(b, &m))
        return false;
    if (!is_current(b, &m))
        lg_info("redis: the sentinels name %s at %s:%d", b->master_name, m.host, m.port);
    snprintf(b->host, sizeof b->host, "%s", m.host);
    b->port = m.port;
    return true;
}

void lg_redis_bridge_recheck_master(struct lg_redis_bridge *b)
{
    uint64_t now = lg_mono_ms();
    if (!b->sentinel_count || !b->up || now - b->rechecked_ms < b->opts.reconnect_min_ms)
        return;
    b->rechecked_ms = now;
    struct sentinel_addr m;
    if (!ask_sentinels(b, &m) || is_current(b, &m))
        return;
    lg_warn("redis: the sentinels now name %s at %s:%d, not %s:%d (a failover): moving there",
            b->master_name, m.host, m.port, b->host, b->port);
    fail_session(b, "a failover moved the master");
}

static void connect_now(struct lg_redis_bridge *b)
{
    if (b->sentinel_count && !find_master(b)) {
        schedule_reconnect(b);
        return;
    }
    b->connect_started_ms = lg_mono_ms(); /* the watchdog's connect timeout starts here */
    b->cmd = open_one(b);
    b->sub = b->cmd ? open_one(b) : NULL;
    if (!b->cmd || !b->sub)
        fail_session(b, "connect failed");
}

static void on_reconnect(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop, (void)revents;
    connect_now(w->data);
}

static void on_reconnect_feed(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop, (void)revents;
    struct lg_redis_bridge *b = w->data;
    if (b->up && !b->sub && !(b->sub = open_one(b)))
        lose_feed(b, "connect failed");
}

static void on_watchdog(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop, (void)revents;
    struct lg_redis_bridge *b = w->data;
    uint64_t now = lg_mono_ms();
    if (!b->up && (b->cmd || b->sub) &&
        now - b->connect_started_ms > b->opts.connect_timeout_ms)
        fail_session(b, "connect timeout (redis.connect_timeout_ms)");
    else if (b->up && b->cmd_inflight && now - b->cmd_progress_ms > b->opts.command_timeout_ms)
        fail_session(b, "no answer within redis.command_timeout_ms");
}

/* ---- Commands ---------------------------------------------------------------------------- */

/* A failover moved the master: the server answers as a replica (-READONLY) or is loading
 * its data from the new master (-LOADING). */
static bool moved_by_failover(const redisReply *r)
{
    return r && r->type == REDIS_REPLY_ERROR &&
           (strncmp(r->str, "READONLY", 8) == 0 || strncmp(r->str, "LOADING", 7) == 0);
}

static void on_reply(redisAsyncContext *ac, void *reply, void *privdata)
{
    struct pending *p = privdata;
    struct lg_redis_bridge *b = p->b;
    if (reply) {
        if (b->cmd_inflight)
            b->cmd_inflight--;
        b->cmd_progress_ms = lg_mono_ms();
    }
    lg_redis_reply_fn *cb = p->cb;
    void *priv = p->priv;
    free(p);
    cb(reply, priv);
    if (ac == b->cmd && moved_by_failover(reply)) {
        static struct lg_ratelimit rl;
        lg_log_ratelimited(&rl, 1000, LG_LOG_WARN, "redis %s:%d answered %s: leaving it%s",
                           b->host, b->port, ((redisReply *)reply)->str,
                           b->sentinel_count ? " and asking the sentinels for the master" : "");
        fail_session(b, "no longer a master"); /* hiredis frees it once this callback returns */
    }
}

int lg_redis_command(struct lg_redis_bridge *b, lg_redis_reply_fn *cb, void *priv, int argc,
                     const char **argv, const size_t *lens)
{
    if (!b->cmd || !b->up)
        return -1;
    struct pending *p = malloc(sizeof *p);
    if (!p)
        return -1;
    *p = (struct pending){.b = b, .cb = cb, .priv = priv};
    if (redisAsyncCommandArgv(b->cmd, on_reply, p, argc, argv, lens) != REDIS_OK) {
        free(p);
        return -1;
    }
    if (b->cmd_inflight++ == 0)
        b->cmd_progress_ms = lg_mono_ms();
    return 0;
}

/* Every reply of the Pub/Sub connection: one callback and one privdata for every channel, so
 * hiredis' per-channel bookkeeping never holds anything that must be freed. NULL: the
 * connection is being freed (fail_session tells the user through down()). */
static void on_pubsub(redisAsyncContext *ac, void *reply, void *privdata)
{
    struct lg_redis_bridge *b = privdata;
    (void)ac;
    if (reply && b->user.pubsub)
        b->user.pubsub(b->user.arg, reply);
}

static int pubsub_command(struct lg_redis_bridge *b, const char *verb, const char *channel,
                          size_t len)
{
    if (!b->sub || !b->up)
        return -1;
    const char *argv[] = {verb, channel};
    const size_t lens[] = {strlen(verb), len};
    return redisAsyncCommandArgv(b->sub, on_pubsub, b, 2, argv, lens) == REDIS_OK ? 0 : -1;
}

int lg_redis_subscribe(struct lg_redis_bridge *b, const char *channel, size_t len)
{
    return pubsub_command(b, "SUBSCRIBE", channel, len);
}

int lg_redis_unsubscribe(struct lg_redis_bridge *b, const char *channel, size_t len)
{
    return pubsub_command(b, "UNSUBSCRIBE", channel, len);
}

static void on_later(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop, (void)revents;
    struct lg_redis_bridge *b = w->data;
    if (b->later_fn)
        b->later_fn(b->later_arg);
}

void lg_redis_bridge_later(struct lg_redis_bridge *b, uint32_t ms, void (*fn)(void *), void *arg)
{
    b->later_fn = fn;
    b->later_arg = arg;
    ev_timer_stop(b->loop, &b->later);
    ev_timer_set(&b->later, ms / 1000.0, 0.);
    ev_timer_start(b->loop, &b->later);
}

/* ---- Jobs and the thread ---------------------------------------------------------------- */

/* From the bridge's own thread (a publish taken by the control port it hosts) the wake joins
 * the pass being dispatched: an ev_async sent there would cost a poll of its own first. */
static void wake_bridge(struct lg_redis_bridge *b)
{
    if (pthread_equal(pthread_self(), atomic_load_explicit(&b->loop_thread, memory_order_relaxed)))
        ev_feed_event(b->loop, &b->wake, EV_ASYNC);
    else
        ev_async_send(b->loop, &b->wake);
}

bool lg_redis_bridge_post(struct lg_redis_bridge *b, struct lg_redis_job *job)
{
    job->next = NULL;
    pthread_mutex_lock(&b->lock);
    bool ok = !atomic_load(&b->stopping) && lg_redis_bridge_state(b) == LG_REDIS_UP &&
              b->queued < b->opts.queue_max;
    if (ok) {
        if (b->tail_job)
            b->tail_job->next = job;
        else
            b->head = job;
        b->tail_job = job;
        b->queued++;
    }
    pthread_mutex_unlock(&b->lock);
    if (ok)
        wake_bridge(b);
    return ok;
}

static void run_jobs(struct lg_redis_bridge *b, bool up)
{
    pthread_mutex_lock(&b->lock);
    struct lg_redis_job *job = b->head;
    b->head = b->tail_job = NULL;
    b->queued = 0;
    pthread_mutex_unlock(&b->lock);
    while (job) {
        struct lg_redis_job *next = job->next;
        job->run(job, up);
        job = next;
    }
    /* Write what the jobs queued now: left to the loop, each round would also arm and disarm
     * the write watcher (two epoll_ctl and a wait of its own). */
    if (up && b->up && b->cmd)
        redisAsyncHandleWrite(b->cmd);
}

/* Start serving the guests handed over by lg_redis_bridge_host(). */
static void start_hosts(struct lg_redis_bridge *b)
{
    pthread_mutex_lock(&b->lock);
    struct lg_ev_host *hosts = b->hosts_wanted;
    uint32_t n = b->hosts_wanted_count;
    b->hosts_wanted = NULL;
    b->hosts_wanted_count = 0;
    pthread_mutex_unlock(&b->lock);
    if (!hosts)
        return;
    b->hosts = hosts;
    b->host_count = n;
    for (uint32_t i = 0; i < n; i++)
        lg_ev_host_start(&hosts[i], b->loop, &hosts[i].guest);
}

/* Fail every job, drop both connections and stop every timer; tell lg_redis_bridge_stop(). */
static void leave_redis(struct lg_redis_bridge *b)
{
    b->up = false; /* callbacks run by the frees below see a stopping bridge */
    run_jobs(b, false);
    fail_session(b, "stopping");
    ev_timer_stop(b->loop, &b->reconnect);
    ev_timer_stop(b->loop, &b->reconnect_feed);
    ev_timer_stop(b->loop, &b->watchdog);
    ev_timer_stop(b->loop, &b->later);
    set_state(b, LG_REDIS_STOPPED);
    pthread_mutex_lock(&b->lock);
    b->left_redis = true;
    pthread_cond_broadcast(&b->left_redis_cond);
    pthread_mutex_unlock(&b->lock);
}

static void on_wake(struct ev_loop *loop, ev_async *w, int revents)
{
    (void)revents;
    struct lg_redis_bridge *b = w->data;
    start_hosts(b);
    if (!atomic_load(&b->stopping)) {
        run_jobs(b, b->up);
        return;
    }
    if (lg_redis_bridge_state(b) != LG_REDIS_STOPPED)
        leave_redis(b);
    /* The guests stay served until they are taken back: their last answers (503s) go out. */
    if (b->host_count && !atomic_load(&b->unhosting))
        return;
    for (uint32_t i = 0; i < b->host_count; i++)
        lg_ev_host_stop(&b->hosts[i]);
    ev_async_stop(loop, &b->wake); /* nothing is left: ev_run returns */
}

static void *bridge_main(void *arg)
{
    struct lg_redis_bridge *b = arg;
    pthread_setname_np(pthread_self(), "lg-redis");
    atomic_store_explicit(&b->loop_thread, pthread_self(), memory_order_relaxed);
    connect_now(b);
    ev_run(b->loop, 0); /* returns once on_wake stopped every watcher */
    return NULL;
}

int lg_redis_bridge_start(const struct lg_redis_options *opts, struct lg_redis_bridge_user user,
                          struct lg_redis_bridge **out, char *err, size_t err_cap)
{
    *out = NULL;
    struct lg_redis_bridge *b = calloc(1, sizeof *b);
    if (!b) {
        snprintf(err, err_cap, "out of memory");
        return -1;
    }
    b->opts = *opts;
    b->user = user;
    if (opts->sentinel_count ? parse_sentinels(b, opts, err, err_cap) != 0
                             : parse_url(b, opts->url, err, err_cap) != 0) {
        free(b->sentinels);
        free(b);
        return -1;
    }
    pthread_mutex_init(&b->lock, NULL);
    pthread_cond_init(&b->left_redis_cond, NULL);
    b->loop = ev_loop_new(EVFLAG_AUTO | EVFLAG_NOSIGMASK);
    if (!b->loop) {
        snprintf(err, err_cap, "cannot create the redis bridge's event loop");
        lg_redis_bridge_destroy(b);
        return -1;
    }
    ev_async_init(&b->wake, on_wake);
    b->wake.data = b;
    ev_async_start(b->loop, &b->wake);
    ev_timer_init(&b->reconnect, on_reconnect, 0., 0.);
    b->reconnect.data = b;
    ev_timer_init(&b->reconnect_feed, on_reconnect_feed, 0., 0.);
    b->reconnect_feed.data = b;
    ev_timer_init(&b->later, on_later, 0., 0.);
    b->later.data = b;
    ev_timer_init(&b->watchdog, on_watchdog, WATCHDOG_S, WATCHDOG_S);
    b->watchdog.data = b;
    ev_timer_start(b->loop, &b->watchdog);
    set_state(b, LG_REDIS_CONNECTING);
    *out = b;
    if (pthread_create(&b->thread, NULL, bridge_main, b) != 0) {
        snprintf(err, err_cap, "cannot start the redis bridge thread");
        lg_redis_bridge_destroy(b);
        *out = NULL;
        return -1;
    }
    b->thread_started = true;
    return 0;
}

int lg_redis_bridge_host(struct lg_redis_bridge *b, const struct lg_loop_guest *guests,
                         uint32_t n)
{
    struct lg_ev_host *hosts = calloc(n, sizeof *hosts);
    if (!hosts)
        return -1;
    for (uint32_t i = 0; i < n; i++)
        hosts[i].guest = guests[i];
    pthread_mutex_lock(&b->lock);
    bool ok = b->thread_started && !atomic_load(&b->stopping) && !b->hosts_wanted &&
              !b->host_count;
    if (ok) {
        b->hosts_wanted = hosts;
        b->hosts_wanted_count = n;
    }
    pthread_mutex_unlock(&b->lock);
    if (!ok) {
        free(hosts);
        return -1;
    }
    ev_async_send(b->loop, &b->wake);
    return 0;
}

void lg_redis_bridge_stop(struct lg_redis_bridge *b)
{
    if (!b || !b->thread_started)
        return;
    atomic_store(&b->stopping, true);
    ev_async_send(b->loop, &b->wake);
    pthread_mutex_lock(&b->lock);
    while (!b->left_redis)
        pthread_cond_wait(&b->left_redis_cond, &b->lock);
    pthread_mutex_unlock(&b->lock);
}

void lg_redis_bridge_unhost(struct lg_redis_bridge *b)
{
    if (!b || !b->thread_started)
        return;
    atomic_store(&b->unhosting, true);
    lg_redis_bridge_stop(b);
    ev_async_send(b->loop, &b->wake);
    pthread_join(b->thread, NULL);
    b->thread_started = false;
}

void lg_redis_bridge_destroy(struct lg_redis_bridge *b)
{
    if (!b)
        return;
    lg_redis_bridge_unhost(b);
    if (b->loop)
        ev_loop_destroy(b->loop);
    free(b->hosts);
    free(b->hosts_wanted);
    pthread_cond_destroy(&b->left_redis_cond);
    pthread_mutex_destroy(&b->lock);
    free(b->sentinels);
    free(b);
}
