#include "worker.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <ev.h>

#include "acceptor.h"
#include "auth.h"
#include "client_address.h"
#include "client_publish.h"
#include "clock.h"
#include "conn.h"
#include "conn_auth.h"
#include "conn_hook.h"
#include "dlist.h"
#include "event.h"
#include "hooks.h"
#include "hub.h"
#include "inbox.h"
#include "log.h"
#include "protocols.h"
#include "accounting.h"
#include "stats.h"
#include "topic.h"
#include "transport.h"
#include "worker_internal.h"
#include "worker_stats.h"
#include "ws_compression.h"

_Static_assert(LG_MAX_WORKERS <= LG_WORKER_STATS_MAX, "a worker_stats slot per worker");

#define TICK_US LWS_US_PER_SEC /* heartbeats, lag and request deadlines need no finer grain */

/* Tags for the two RAW_FILE wsis this worker adopts (lws opaque user data). */
static char tag_listener, tag_classifier;

struct lg_worker *lg_worker_of(struct lg_conn_home *home)
{
    return (struct lg_worker *)((char *)home - offsetof(struct lg_worker, home));
}

/* Streams whose token expired: each transport ends them its way (SSE error event, WS 4003). */
static void expire_tokens(struct lg_worker *w)
{
    int64_t now = lg_unix_ms();
    struct lg_heap_node *n;
    while ((n = lg_min_heap_top(&w->home.expiring)) && n->key <= now) {
        struct lg_conn *c = lg_dlist_entry(n, struct lg_conn, links.expiry);
        lg_min_heap_remove(&w->home.expiring, n);
        if (c->transport->timer && c->transport->timer(c) != 0)
            lg_conn_close_soon(c);
    }
}

/* ---- Handing classified sockets to lws -------------------------------------------------- */

/* A WebSocket upgrade goes to lws together with the bytes already read. */
static const char *adopt_websocket(void *owner, const struct lg_accepted *a)
{
    struct lg_worker *w = owner;
    int fd = a->fd;
    if ((size_t)fd >= w->home.ws_upgrades_cap)
        return "too many open files";
    struct lg_ws_upgrade *u = &w->home.ws_upgrades[fd];
    free(u->query);
    free(u->token);
    *u = (struct lg_ws_upgrade){.query = strndup(a->head + a->req->query.off, a->req->query.len),
                             .token = lg_conn_request_token(a->head, a->req,
                                                            lg_auth_cookie_name(w->shared.auth)),
                             .client = a->client, .counted = a->counted,
                             .peer = a->peer ? *a->peer : (struct lg_client_address){{0}},
                             .peer_known = a->peer != NULL};
    char *copy = malloc(a->len);
    if (!copy || !u->query) {
        free(copy);
        return "out of memory";
    }
    memcpy(copy, a->head, a->len);
    lg_socket_cork(fd); /* lws answers inside the adoption; ESTABLISHED uncorks (protocols.h) */
    /* On failure lws closes the socket itself; the close path frees the query and counts. */
    if (!lws_adopt_socket_vhost_readbuf(w->vhost, fd, copy, a->len)) {
        static struct lg_ratelimit rl;
        lg_log_ratelimited(&rl, 1000, LG_LOG_WARN,
                           "a WebSocket upgrade failed inside libwebsockets (a handshake it "
                           "refused, or out of memory); log_level debug shows its reason");
        free(u->query);
        free(u->token);
        *u = (struct lg_ws_upgrade){0};
        lg_account_connection_closed();
    }
    free(copy);
    return NULL;
}

/* SSE, long-poll and static files go to lws' RAW role (see worker.h). */
static void adopt_http(void *owner, const struct lg_accepted *a)
{
    struct lg_worker *w = owner;
    struct lg_handoff handoff = {.buf = a->head, .len = a->len, .req = a->req,
                                 .client = a->counted ? &a->client : NULL, .peer = a->peer};
    lws_adopt_desc_t desc = {
        .vh = w->vhost,
        .type = LWS_ADOPT_SOCKET,
        .fd.sockfd = a->fd,
        .vh_prot_name = lg_protocol_http.name,
        .opaque = &handoff,
    };
    /* RAW_ADOPT runs inside this call and serves the request from the handoff. */
    if (!lws_adopt_descriptor_vhost_via_info(&desc))
        lg_account_connection_closed(); /* lws closed the socket */
}

static void resume_accepting(lws_sorted_usec_list_t *sul)
{
    struct lg_worker *w = lws_container_of(sul, struct lg_worker, accept_resume);
    if (w->listen_wsi)
        lws_rx_flow_control(w->listen_wsi, 1);
}

static void pause_accepting(void *owner, uint32_t ms)
{
    struct lg_worker *w = owner;
    if (!w->listen_wsi)
        return;
    lws_rx_flow_control(w->listen_wsi, 0);
    lws_sul_schedule(w->ctx, 0, &w->accept_resume, resume_accepting, (lws_usec_t)ms * 1000);
}

static const struct lg_acceptor_ops adopt_ops = {
    .websocket = adopt_websocket,
    .http = adopt_http,
    .pause = pause_accepting,
};

/* ---- Drain and tick ---------------------------------------------------------------------- */

static void close_file_wsi(struct lws **wsi)
{
    if (*wsi) {
        lws_set_timeout(*wsi, PENDING_TIMEOUT_CLOSE_SEND, LWS_TO_KILL_ASYNC);
        *wsi = NULL;
    }
}

static uint32_t jitter(struct lg_worker *w, uint32_t below)
{
    uint64_t x = w->jitter_state ? w->jitter_state : (lg_mono_ns() | 1) * 0x9E3779B97F4A7C15u;
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    w->jitter_state = x;
    return below ? (uint32_t)(x % below) : 0;
}

/* A connection's moment in a windowed drain: fixed per connection (a mix of its id), spread
 * over the window. */
static uint64_t drain_moment(const struct lg_worker *w, const struct lg_conn *c, uint32_t window)
{
    uint64_t x = (c->report.id ^ w->drain_seed) * 0x9E3779B97F4A7C15u;
    x ^= x >> 29;
    return w->drain_end_ms - window + x % window;
}

static void fire_drain(struct lg_worker *w, struct lg_conn *c, bool windowed)
{
    struct lg_drain how = {0};
    if (windowed) {
        uint32_t retry = w->shared.cfg->sse.retry_ms;
        how.retry_ms = retry / 2 + jitter(w, retry / 2 + 1); /* reconnects spread too */
        how.restart = true;
    }
    lg_conn_drain(c, &how);
}

#define DRAIN_STEP_S 0.02

/* Windowed drain: move away the connections whose moment came since the last step (all of
 * them at the end). Each connection's moment falls in one step, so each is fired once. */
static void on_drain_step(struct ev_loop *loop, ev_timer *timer, int revents)
{
    (void)revents;
    struct lg_worker *w = timer->data;
    uint32_t window = w->shared.cfg->drain_window_ms;
    uint64_t now = lg_mono_ms();
    bool last = now >= w->drain_end_ms;
    for (struct lg_dlink *l = w->home.conns.first, *next; l; l = next) {
        next = l->next; /* drain may close the connection */
        struct lg_conn *c = lg_dlist_entry(l, struct lg_conn, links.all);
        uint64_t moment = drain_moment(w, c, window);
        if (moment >= w->drain_step_ms && (moment < now || last))
            fire_drain(w, c, true);
    }
    w->drain_step_ms = now;
    if (last)
        ev_timer_stop(loop, timer);
}

/* Stop accepting and move every client away: at once, or each at a random moment within
 * drain_window_ms, so the nodes they reconnect to see no storm (docs/scaling.md). */
static void begin_drain(struct lg_worker *w)
{
    w->home.draining = true;
    close_file_wsi(&w->listen_wsi);
    lg_acceptor_refuse_all(w->acceptor, "the gateway is shutting down; retry on another node");
    uint32_t window = w->shared.cfg->drain_window_ms;
    if (window > 0) {
        uint64_t now = lg_mono_ms();
        w->drain_end_ms = now + window;
        w->drain_step_ms = now;
        w->drain_seed = jitter(w, UINT32_MAX);
        ev_timer_init(&w->drain_step, on_drain_step, DRAIN_STEP_S, DRAIN_STEP_S);
        w->drain_step.data = w;
        ev_timer_start(w->loop, &w->drain_step);
        return;
    }
    for (struct lg_dlink *l = w->home.conns.first, *next; l; l = next) {
        next = l->next; /* drain may close the connection */
        fire_drain(w, lg_dlist_entry(l, struct lg_conn, links.all), false);
    }
}

/* Each transport's keep-alive (SSE heartbeats, WebSocket pings) over its own order. */
static void tick_keepalives(struct lg_worker *w, uint64_t now_ms)
{
    for (size_t i = 0; i < lg_transport_count; i++)
        if (lg_transports[i]->keepalive_tick)
            lg_transports[i]->keepalive_tick(&w->home.keepalive[i], now_ms);
}

static void on_tick(lws_sorted_usec_list_t *sul)
{
    struct lg_worker *w = lws_container_of(sul, struct lg_worker, tick);
    uint64_t now = lg_mono_ms();
    lg_acceptor_expire(w->acceptor, now);
    tick_keepalives(w, now);
    expire_tokens(w);
    struct lg_worker_stats *ws = &lg_worker_stats[w->home.index];
    atomic_store_explicit(&ws->backlogged_conns, (int64_t)w->home.backlogged.count,
                          memory_order_relaxed);
    atomic_store_explicit(&ws->connections, (int64_t)w->home.conns.count, memory_order_relaxed);
    for (struct lg_dlink *link = w->home.backlogged.first, *next; link; link = next) {
        next = link->next; /* the check may close the connection */
        lg_conn_check_lag(lg_dlist_entry(link, struct lg_conn, links.backlog));
    }
    lws_sul_schedule(w->ctx, 0, &w->tick, on_tick, TICK_US);
}

/* Answer the client publishes the remote store completed for this worker's connections. */
static void answer_publishes(struct lg_worker *w)
{
    struct lg_client_publish *p;
    while ((p = lg_hub_take_published(w->shared.hub, w->home.index)))
        lg_client_publish_finish(p);
}

/* Finish the subscribes whose backend answers came (conn_hook.h). */
static void finish_hook_waits(struct lg_worker *w)
{
    struct lg_hooks *h = w->home.hooks;
    for (struct lg_hook_check *c = h ? lg_hooks_take_answers(h, w->home.index) : NULL, *next; c;
         c = next) {
        next = c->next;
        lg_conn_hook_answered(h, c);
    }
}

static void on_cancel(struct lg_worker *w)
{
    w->swept_this_pass = true;
    lg_worker_answer_calls(w);
    answer_publishes(w);
    finish_hook_waits(w);
    lg_worker_sweep(w);
    if (atomic_load(&w->home.drain_requested) && !w->home.draining)
        begin_drain(w);
}

static void on_woken(struct ev_loop *loop, ev_async *watcher, int revents)
{
    (void)loop, (void)revents;
    on_cancel(watcher->data);
}

static void control_turn(struct lg_conn_home *home)
{
    lg_ev_host_serve(&lg_worker_of(home)->guest);
}

void lg_worker_host(struct lg_worker *w, const struct lg_loop_guest *guest)
{
    lg_ev_host_start(&w->guest, w->loop, guest);
}

/* Runs after the callbacks of every loop iteration. */
static void after_events(struct ev_loop *loop, ev_check *watcher, int revents)
{
    struct lg_worker *w = watcher->data;
    (void)revents;
    w->swept_this_pass = false; /* a new pass: a wake from this thread may be fed again */
    if (w->home.draining && w->home.conns.count == 0 && lg_acceptor_pending(w->acceptor) == 0)
        atomic_store(&w->drained, true);
    if (atomic_load(&w->stop_requested)) {
        lg_ev_host_serve(&w->guest); /* the answers of publishes released on the way out */
        ev_break(loop, EVBREAK_ALL);
    }
}

/* Every callback of the loop runs inside this: the time it takes is the worker's busy time
 * (the rest is spent waiting in epoll), so a scrape can see how saturated each worker is. */
static void invoke_pending_timed(struct ev_loop *loop)
{
    struct lg_worker *w = ev_userdata(loop);
    uint64_t start = lg_mono_ns();
    w->invoking = true;
    ev_invoke_pending(loop);
    w->invoking = false;
    uint64_t end = lg_mono_ns();
    _Atomic uint64_t *busy = &lg_worker_stats[w->home.index].busy_ns; /* this thread's alone */
    atomic_store_explicit(busy, atomic_load_explicit(busy, memory_order_relaxed) +
                                    (end - start), memory_order_relaxed);
}

/* ---- The internal protocol: listener, classifier, wake-ups ------------------------------ */

static int internal_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user,
                             void *in, size_t len)
{
    struct lg_worker *w = lg_worker_of(lws_context_user(lws_get_context(wsi)));
    switch (reason) {
    case LWS_CALLBACK_EVENT_WAIT_CANCELLED:
        on_cancel(w);
        break;
    case LWS_CALLBACK_RAW_RX_FILE:
        if (lws_get_opaque_user_data(wsi) == &tag_listener)
            lg_acceptor_accept_ready(w->acceptor);
        else if (lws_get_opaque_user_data(wsi) == &tag_classifier)
            lg_acceptor_heads_ready(w->acceptor);
        break;
    case LWS_CALLBACK_RAW_CLOSE_FILE:
        if (lws_get_opaque_user_data(wsi) == &tag_listener)
            w->listen_wsi = NULL;
        break;
    default:
        break;
    }
    return 0;
}

static const struct lws_protocols internal_protocol = {
    .name = "lg-internal",
    .callback = internal_callback,
};

/* ---- Lifecycle ---------------------------------------------------------------------------- */

static struct lws *adopt_file(struct lg_worker *w, int fd, void *tag)
{
    lws_adopt_desc_t desc = {
        .vh = w->vhost,
        .type = LWS_ADOPT_RAW_FILE_DESC,
        .fd.filefd = fd,
        .vh_prot_name = internal_protocol.name,
        .opaque = tag,
    };
    return lws_adopt_descriptor_vhost_via_info(&desc);
}

static void lws_log_emit(int level, const char *line)
{
    size_t n = strlen(line);
    while (n && line[n - 1] == '\n')
        n--;
    lg_log(LG_LOG_DEBUG, "lws %s: %.*s", level == LLL_ERR ? "error" : "warning", (int)n, line);
}

/* lws' lines go to the log only when livegate starts at debug. Debian's lws (LWS_MAX_SMP 1)
 * formats every line into one static buffer, so workers logging at once garble each other's
 * lines, and it logs every WebSocket hand-over at error level (adopt.c): a formatted line per
 * connect. What a client or an operator needs to know livegate logs itself. */
static void set_lws_logging(void)
{
    static bool set;
    if (set)
        return;
    set = true;
    if (lg_log_get_level() >= LG_LOG_DEBUG)
        lws_set_log_level(LLL_ERR | LLL_WARN, lws_log_emit);
    else
        lws_set_log_level(0, NULL);
}

/* Given, lws would apply its default (a ping after 300 s) to every WebSocket; a policy whose
 * secs_since_valid_hangup is 0 turns its validity timers off. The keepalive is the worker's
 * (send_pings). */
static const lws_retry_bo_t no_lws_keepalive;

static int create_context(struct lg_worker *w, char *err, size_t errlen)
{
    const struct lg_config *cfg = w->shared.cfg;
    /* lws sends at most tx_packet_size per write and buffers the rest on the heap, so it
     * must cover one coalesced write. */
    w->protocols[0] = lg_protocol_ws;
    w->protocols[0].tx_packet_size = cfg->write_batch_bytes;
    w->protocols[0].per_session_data_size = lg_conn_size();
    w->protocols[1] = lg_protocol_http;
    w->protocols[1].tx_packet_size = cfg->write_batch_bytes;
    w->protocols[1].per_session_data_size = lg_conn_size();
    w->protocols[2] = internal_protocol;

    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    /* epoll: a wake-up costs what is ready, not what is open (lws' own loop is poll()). */
    w->loop = ev_loop_new(EVBACKEND_EPOLL | EVFLAG_NOSIGMASK);
    if (!w->loop) {
        snprintf(err, errlen, "worker %u: cannot create its epoll loop", w->home.index);
        return -1;
    }
    ev_set_userdata(w->loop, w);
    ev_set_invoke_pending_cb(w->loop, invoke_pending_timed);
    ev_check_init(&w->after_events, after_events);
    w->after_events.data = w;
    ev_check_start(w->loop, &w->after_events);
    ev_async_init(&w->woken, on_woken);
    w->woken.data = w;
    ev_async_start(w->loop, &w->woken);
    void *foreign_loops[1] = {w->loop};
    struct lws_context_creation_info info;
    memset(&info, 0, sizeof info);
    info.options = LWS_SERVER_OPTION_LIBEV;
    info.foreign_loops = foreign_loops;
    info.port = CONTEXT_PORT_NO_LISTEN_SERVER;
    info.protocols = w->protocols;
    info.extensions = lg_ws_compression_extensions(cfg);
    info.user = &w->home;
    info.retry_and_idle_policy = &no_lws_keepalive;
    info.timeout_secs = cfg->limits.request_timeout_ms / 1000 ? cfg->limits.request_timeout_ms / 1000 : 1;
    info.fd_limit_per_thread = (unsigned)rl.rlim_cur;
    w->ctx = lws_create_context(&info);
    if (!w->ctx) {
        snprintf(err, errlen, "worker %u: cannot create the libwebsockets context", w->home.index);
        return -1;
    }
    w->vhost = lws_get_vhost_by_name(w->ctx, "default");
    if (cfg->websocket.compression.enabled &&
        lg_ws_deflater_init(&w->home.ws_deflater, (int)cfg->websocket.compression.level,
                            (int)cfg->websocket.compression.max_window_bits,
                            (int)cfg->websocket.compression.mem_level,
                            cfg->websocket.compression.min_bytes) != 0) {
        snprintf(err, errlen, "worker %u: cannot set up its compressor", w->home.index);
        return -1;
    }
    w->home.ws_upgrades_cap = rl.rlim_cur;
    w->home.ws_upgrades = calloc(w->home.ws_upgrades_cap, sizeof *w->home.ws_upgrades);
    if (!w->vhost || !w->home.ws_upgrades) {
        snprintf(err, errlen, "worker %u: cannot set up its event loop", w->home.index);
        return -1;
    }
    return 0;
}

struct lg_worker *lg_worker_create(const struct lg_worker_shared *shared, uint32_t index,
                                   uint16_t *port, char *err, size_t errlen)
{
    set_lws_logging();
    struct lg_worker *w = calloc(1, sizeof *w);
    if (!w) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    w->shared = *shared;
    w->home = (struct lg_conn_home){.cfg = shared->cfg, .live = shared->live, .hub = shared->hub,
                                    .index = index,
                                    .static_dir = shared->static_dir, .auth = shared->auth,
                                    .hooks = shared->hooks,
                                    .clients = shared->clients,
                                    .deadlines_moved = lg_worker_deadlines_moved,
                                    .control_turn = control_turn};
    int batch_rc = lg_conn_home_init(&w->home);
    if (batch_rc != 0 && index == 0)
        lg_warn("batched_writes: the kernel refused io_uring (%s): each subscriber's socket is "
                "written with a send() of its own", strerror(-batch_rc));
    if (lg_inbox_init(&w->inbox, shared->cfg->limits.worker_inbox_events) != 0) {
        snprintf(err, errlen, "out of memory");
        free(w);
        return NULL;
    }
    w->acceptor = lg_acceptor_create(shared->cfg, port, &adopt_ops, w, shared->trusted,
                                     shared->trusted_count, shared->auth, err, errlen);
    if (!w->acceptor || create_context(w, err, errlen) != 0)
        goto fail;
    w->listen_wsi = adopt_file(w, lg_acceptor_listen_fd(w->acceptor), &tag_listener);
    w->classify_wsi =
        w->listen_wsi ? adopt_file(w, lg_acceptor_heads_fd(w->acceptor), &tag_classifier) : NULL;
    if (w->listen_wsi)
        lg_acceptor_fds_taken(w->acceptor); /* lws closes adopted fds, even on failure */
    if (!w->listen_wsi || !w->classify_wsi) {
        snprintf(err, errlen, "worker %u: cannot watch its sockets", index);
        goto fail;
    }
    lg_hub_attach_worker(shared->hub, index, &w->inbox, lg_worker_wake, w);
    if (shared->hooks)
        lg_hooks_attach_worker(shared->hooks, index, lg_worker_wake, w);
    lws_sul_schedule(w->ctx, 0, &w->tick, on_tick, TICK_US);
    return w;
fail:
    lg_worker_destroy(w);
    return NULL;
}

static void *worker_main(void *arg)
{
    struct lg_worker *w = arg;
    char name[16];
    snprintf(name, sizeof name, "lg-worker-%u", w->home.index);
    pthread_setname_np(pthread_self(), name);
    atomic_store_explicit(&w->loop_thread, pthread_self(), memory_order_relaxed);
    if (!atomic_load(&w->stop_requested))
        ev_run(w->loop, 0); /* until after_events() sees stop_requested */
    return NULL;
}

int lg_worker_start(struct lg_worker *w)
{
    if (pthread_create(&w->thread, NULL, worker_main, w) != 0)
        return -1;
    w->thread_started = true;
    return 0;
}

void lg_worker_drain(struct lg_worker *w)
{
    atomic_store(&w->home.drain_requested, true);
    lg_worker_wake(w);
}

bool lg_worker_drained(const struct lg_worker *w) { return atomic_load(&w->drained); }

void lg_worker_stop(struct lg_worker *w)
{
    atomic_store(&w->stop_requested, true);
    lg_worker_wake(w);
}

void lg_worker_join(struct lg_worker *w)
{
    if (w->thread_started)
        pthread_join(w->thread, NULL);
    w->thread_started = false;
}

void lg_worker_destroy(struct lg_worker *w)
{
    if (!w)
        return;
    /* Runs after join: the close callbacks lws makes below find no other thread around. */
    lg_acceptor_destroy(w->acceptor); /* its pending sockets; lws closes the adopted fds */
    if (w->ctx) {
        lws_sul_cancel(&w->tick);
        ev_timer_stop(w->loop, &w->drain_step);
        lws_sul_cancel(&w->accept_resume);
        lws_sul_cancel(&w->conn_timer);
        lws_context_destroy(w->ctx);
    }
    if (w->loop) {
        ev_check_stop(w->loop, &w->after_events);
        ev_async_stop(w->loop, &w->woken);
        lg_ev_host_stop(&w->guest);
        ev_loop_destroy(w->loop);
    }
    lg_inbox_release(&w->inbox);
    lg_conn_home_release(&w->home);
    free(w);
}
