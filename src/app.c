#include "app.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "acceptor.h"
#include "client_address.h"
#include "client_addresses.h"
#include "clock.h"
#include "control.h"
#include "auth.h"
#include "cli.h"
#include "stats.h"
#include "hooks.h"
#include "hub.h"
#include "live_limits.h"
#include "log.h"
#include "loop_guest.h"
#include "publish_pacer.h"
#include "sd_notify.h"
#include "sys_stats.h"
#include "worker.h"

struct lg_app {
    const struct lg_config *cfg;             /* &running */
    struct lg_config running;                /* the loaded config, limits capped (above) */
    const struct lg_cli *cli;                /* how the config was built: a reload rebuilds it */
    const struct lg_config *loaded;          /* the config in force as built (before capping):
                                                main's, or `reloaded`; reloads diff against it */
    struct lg_config *reloaded;              /* the last applied reload's config (NULL: none):
                                                owned here, read by the hub for topic rules */
    struct lg_live_limits live;              /* the limits a reload changes (live_limits.h):
                                                written here, read by workers and daemons */
    _Atomic int lifecycle;                   /* enum lg_lifecycle, read by the control port */
    char static_dir[PATH_MAX];
    struct lg_hub *hub;
    struct lg_pacer *pacer;                  /* publishes held for room; after the workers */
    struct lg_worker *workers[LG_MAX_WORKERS];
    uint32_t worker_count;
    uint16_t public_port, control_port;
    struct lg_control *control;
    struct lg_auth *auth;                    /* token verifier; freed after the workers */
    struct lg_client_addresses *clients;     /* connections per client address; after workers */
    struct lg_hooks *hooks;                  /* the backend hooks (NULL: none); its thread is
                                                stopped after the workers are joined, freed
                                                after they are destroyed */
    struct lg_client_address trusted[LG_TRUSTED_PROXIES_MAX]; /* trusted_proxies, parsed */
    size_t trusted_count;
    struct lg_sys_stats sys_stats;           /* the $sys/stats tick's memory (main thread) */
};

static uint32_t worker_count(const struct lg_config *cfg)
{
    long n = cfg->workers ? (long)cfg->workers : sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1)
        n = 1;
    return n > LG_MAX_WORKERS ? LG_MAX_WORKERS : (uint32_t)n;
}

/*
 * static_dir "" means the first directory that exists of: the installed data directory
 * (LG_DATA_DIR, compiled in: a packaged /usr/bin/livegate), the same directory relative to the
 * binary (LG_DATA_DIR_FROM_BIN: an install tree under another prefix), and <directory of the
 * binary>/../static (build/livegate finds the repository's).
 */
static void resolve_static_dir(struct lg_app *app)
{
    char wanted[PATH_MAX];
    if (app->cfg->static_dir && app->cfg->static_dir[0]) {
        snprintf(wanted, sizeof wanted, "%s", app->cfg->static_dir);
    } else {
        char exe[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        exe[n > 0 ? n : 0] = '\0';
        const char *bin = dirname(exe);
        char from_bin[PATH_MAX];
        snprintf(from_bin, sizeof from_bin, "%s/%s", bin, LG_DATA_DIR_FROM_BIN);
        snprintf(wanted, sizeof wanted, "%s/../static", bin);
        if (access(LG_DATA_DIR, R_OK | X_OK) == 0)
            snprintf(wanted, sizeof wanted, "%s", LG_DATA_DIR);
        else if (access(from_bin, R_OK | X_OK) == 0)
            snprintf(wanted, sizeof wanted, "%s", from_bin);
    }
    if (!realpath(wanted, app->static_dir)) {
        lg_warn("static_dir %s: %s; static files will answer 404", wanted, strerror(errno));
        snprintf(app->static_dir, sizeof app->static_dir, "/nonexistent");
    }
}

/* Descriptors the process needs besides its connections: epoll sets, eventfds, each
 * worker's listener and spare, lws' own, the log, MHD's listener and its internal pipes. */
#define FIXED_DESCRIPTORS 64u
#define DESCRIPTORS_PER_WORKER 8u

/* The descriptors the limits can hold open at once: the fixed ones, each worker's, every
 * public and control connection, and one per backend transfer the hooks may have in flight. */
static uint64_t descriptors_needed(const struct lg_config *cfg, uint32_t workers)
{
    uint64_t n = FIXED_DESCRIPTORS + (uint64_t)DESCRIPTORS_PER_WORKER * workers +
                 cfg->limits.max_connections + cfg->limits.control_max_connections;
    if (cfg->subscribe_hook.url && cfg->subscribe_hook.url[0])
        n += (uint64_t)cfg->subscribe_hook.max_pending * workers;
    if (cfg->webhooks.url && cfg->webhooks.url[0])
        n += LG_WEBHOOKS_IN_FLIGHT;
    return n;
}

/*
 * Set the soft descriptor limit to what the limits need plus a quarter, within the hard limit,
 * as nginx's worker_rlimit_nofile does: connections are bounded by limits.max_connections, not
 * by a soft limit a shell or service manager happened to leave low. Not simply to the hard
 * limit: libwebsockets sizes its descriptor tables to the soft limit and Debian's build scans
 * one at every close, so a container's hard limit (often 1048576) would make every disconnect
 * cost that many reads. Return value: the limit now in force (RLIM_INFINITY = none).
 */
static rlim_t size_descriptor_limit(const struct lg_config *cfg, uint32_t workers)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return RLIM_INFINITY;
    uint64_t needed = descriptors_needed(cfg, workers);
    rlim_t want = (rlim_t)(needed + needed / 4);
    if (rl.rlim_max != RLIM_INFINITY && want > rl.rlim_max)
        want = rl.rlim_max;
    if (want != rl.rlim_cur) {
        rlim_t was = rl.rlim_cur;
        rl.rlim_cur = want;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
            rl.rlim_cur = was;
        else
            lg_info("descriptor limit %llu (was %llu): the connection limits and hooks need "
                    "%llu, plus a quarter, within the hard limit",
                    (unsigned long long)want, (unsigned long long)was,
                    (unsigned long long)needed);
    }
    return rl.rlim_cur;
}

/*
 * Grow the process' descriptor table now to hold the descriptors the limits need (within the
 * soft limit). Linux grows it by doubling as descriptors are opened, and in a process with
 * several threads each growth waits for an RCU grace period (expand_fdtable() calls
 * synchronize_rcu()): the accept() that needed the room, and so the worker and every
 * connection waiting on it, would stop for milliseconds at 256, 512, 1024... connections.
 * Here no other thread runs yet. The table never shrinks; the cost is about 8 bytes a slot.
 */
static void presize_descriptor_table(uint64_t needed, rlim_t nofile)
{
    uint64_t slots = nofile != RLIM_INFINITY && needed > (uint64_t)nofile ? (uint64_t)nofile
                                                                          : needed;
    if (slots < 2 || slots > INT_MAX)
        return;
    int highest = (int)(slots - 1);
    if (fcntl(highest, F_GETFD) != -1)
        return; /* open already (inherited): the table holds it */
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    if (dup3(fd, highest, O_CLOEXEC) == highest)
        close(highest);
    close(fd);
}

/*
 * The connection limits the descriptor limit can honour: past it accept() fails with EMFILE
 * and no client gets an answer, so the limits are capped (with a warning) to leave the fixed
 * descriptors free. The control port keeps at most an eighth of what is left. The running
 * config is the loaded one with these two limits capped.
 */
static void cap_connection_limits(struct lg_config *cfg, rlim_t nofile, uint32_t workers)
{
    uint64_t fixed = FIXED_DESCRIPTORS + (uint64_t)DESCRIPTORS_PER_WORKER * workers;
    if (nofile == RLIM_INFINITY || (uint64_t)nofile >= fixed + cfg->limits.max_connections +
                                                          cfg->limits.control_max_connections)
        return;
    uint64_t left = (uint64_t)nofile > fixed + 2 ? (uint64_t)nofile - fixed : 2;
    uint32_t control = cfg->limits.control_max_connections;
    if (control > left / 8)
        control = left / 8 ? (uint32_t)(left / 8) : 1;
    uint32_t public = cfg->limits.max_connections;
    if (public > left - control)
        public = (uint32_t)(left - control);
    lg_warn("the descriptor limit (%llu) cannot hold limits.max_connections (%u) and "
            "limits.control_max_connections (%u): capped at %u and %u; raise ulimit -n (hard) "
            "for more",
            (unsigned long long)nofile, cfg->limits.max_connections,
            cfg->limits.control_max_connections, public, control);
    cfg->limits.max_connections = public;
    cfg->limits.control_max_connections = control;
}

/* The control port's daemons run where a publish is cheapest: with a remote store on the
 * store's thread, which appends and answers without waking another; else one per worker. */
static void host_control(struct lg_app *app)
{
    struct lg_loop_guest guests[LG_MAX_WORKERS];
    for (uint32_t i = 0; i < app->worker_count; i++)
        guests[i] = *lg_control_guest(app->control, i);
    if (lg_hub_host(app->hub, guests, app->worker_count))
        return;
    for (uint32_t i = 0; i < app->worker_count; i++)
        lg_worker_host(app->workers[i], &guests[i]);
}

/* At start and after each reload: say so when the public port is open to anyone. */
static void warn_if_open(const struct lg_auth *auth, const struct lg_config *cfg)
{
    if (!lg_auth_enabled(auth))
        lg_warn("no auth key or auth.anonymous_subscribe is configured: anyone who reaches the "
                "public port may subscribe to any topic (docs/security.md)");
    else if (cfg->allowed_origins.count == 0)
        lg_warn("allowed_origins is []: any web page may open a WebSocket here with its "
                "visitors' cookies (docs/security.md)");
}

static int start(struct lg_app *app)
{
    char err[256];
    if (lg_acceptor_check_port_free(&app->cfg->public_addr, err, sizeof err) != 0) {
        lg_err("%s", err);
        return -1;
    }
    app->hub = lg_hub_create(app->cfg, app->worker_count);
    if (!app->hub) {
        lg_err("cannot create the hub: out of memory");
        return -1;
    }
    app->pacer = lg_pacer_start(app->cfg->limits.control_max_connections);
    if (!app->pacer) {
        lg_err("cannot start the publish pacer thread");
        return -1;
    }
    lg_hub_on_room(app->hub, lg_pacer_room, app->pacer);
    size_t bad = 0; /* the config check parsed it already */
    int trusted = lg_client_address_list_parse(app->cfg->trusted_proxies, app->trusted,
                                               LG_TRUSTED_PROXIES_MAX, &bad);
    app->trusted_count = trusted > 0 ? (size_t)trusted : 0;
    app->clients = lg_client_addresses_create(app->cfg->limits.max_connections,
                                              app->cfg->limits.max_connections_per_address);
    if (!app->clients) {
        lg_err("cannot create the client address table: out of memory");
        return -1;
    }
    app->auth = lg_auth_create(app->cfg, err, sizeof err);
    if (!app->auth) {
        lg_err("%s", err);
        return -1;
    }
    warn_if_open(app->auth, app->cfg);
    lg_live_limits_store(&app->live, app->cfg);
    if (lg_hooks_configured(app->cfg)) {
        app->hooks = lg_hooks_create(app->cfg, app->worker_count, err, sizeof err);
        if (!app->hooks) {
            lg_err("%s", err);
            return -1;
        }
        if (app->cfg->webhooks.url[0])
            lg_hub_on_occupancy(app->hub, lg_hooks_occupancy, app->hooks);
    }
    struct lg_worker_shared shared = {.cfg = app->cfg, .live = &app->live, .hub = app->hub,
                                      .auth = app->auth, .hooks = app->hooks,
                                      .static_dir = app->static_dir, .clients = app->clients,
                                      .trusted = app->trusted,
                                      .trusted_count = app->trusted_count};
    uint16_t port = app->cfg->public_addr.port;
    for (uint32_t i = 0; i < app->worker_count; i++) {
        app->workers[i] = lg_worker_create(&shared, i, &port, err, sizeof err);
        if (!app->workers[i]) {
            lg_err("%s", err);
            return -1;
        }
    }
    app->public_port = port;
    app->control = lg_control_start(app->cfg, &app->live, app->hub, app->pacer, app->auth,
                                    &app->lifecycle, &app->control_port, err, sizeof err);
    if (!app->control) {
        lg_err("%s", err);
        return -1;
    }
    host_control(app);
    if (app->hooks && lg_hooks_start(app->hooks) != 0) {
        lg_err("cannot start the backend hooks thread");
        return -1;
    }
    for (uint32_t i = 0; i < app->worker_count; i++) {
        if (lg_worker_start(app->workers[i]) != 0) {
            lg_err("cannot start worker thread %u", i);
            return -1;
        }
    }
    return 0;
}

static void print_addr(char *out, size_t cap, const char *host, uint16_t port)
{
    snprintf(out, cap, strchr(host, ':') ? "[%s]:%u" : "%s:%u", host, port);
}

/* ---- Reload (SIGHUP) ---------------------------------------------------------------------- */

/*
 * DESIGN
 * A reload is all or nothing. The main thread (which alone takes the signals) rebuilds the
 * config as at start (defaults, the --config file, the flags) into a new struct lg_config,
 * compares it with the one in force setting by setting, and then:
 * - failed: the file does not load or validate, a key file (rs256_public_key_file,
 *   jwks_file) does not read, or auth.control_token would go while the control port is off
 *   loopback: nothing changes; counted, logged with the loader's message;
 * - refused: a setting without the table's .live mark changed (listen addresses, workers,
 *   the limits that size a structure built at start, redis, ...: config_table.c says why,
 *   row by row): nothing changes; counted, logged naming each such key ("needs a restart");
 * - applied: the live settings take effect: the log level and format (atomics), the auth
 *   generation (auth.h: keys, anonymous_subscribe, control_token, leeway, allowed_origins;
 *   swapped, the old one freed by its last reader), the topic rules, history bounds and
 *   limits.max_topics of topics created from now on (hub.h: swapped under the registry
 *   lock), the limits that bound only new work (live_limits.h: relaxed atomics, read where
 *   that work starts) and the bound per client address (client_addresses.h, under its
 *   lock). Counted, logged with the changed keys. Connections, subscriptions and their
 *   cursors are not touched.
 * All or nothing keeps "the file on disk" and "what runs" comparable: after an applied
 * reload they agree; after a refused one the log says which key stands between them.
 * The new config is owned here (app->reloaded) and freed by the main thread when the next
 * reload replaces it (after lg_hub_set_rules() returned: the hub reads rules only under its
 * lock) or at exit after the hub is gone. No lock is held across the file reads.
 */

struct reload_diff {
    char changed[512], restart[512]; /* comma-separated key lists, cut at their size */
    size_t changed_count, restart_count;
};

static void list_add(char *list, size_t cap, const char *key)
{
    size_t len = strlen(list);
    if (len + 1 < cap)
        snprintf(list + len, cap - len, "%s%s", len ? ", " : "", key);
}

static void note_change(const char *key, bool live, void *arg)
{
    struct reload_diff *d = arg;
    if (live) {
        list_add(d->changed, sizeof d->changed, key);
        d->changed_count++;
    } else {
        list_add(d->restart, sizeof d->restart, key);
        d->restart_count++;
    }
}

static void reload_failed(struct lg_config *next, const char *why)
{
    LG_STAT_ADD(config_reloads_failed, 1);
    lg_err("reload failed: %s; the running configuration is kept", why);
    lg_config_release(next);
    free(next);
}

static void reload(struct lg_app *app)
{
    char err[LG_CONFIG_ERR_MAX];
    struct lg_config *next = calloc(1, sizeof *next);
    if (!next) {
        LG_STAT_ADD(config_reloads_failed, 1);
        lg_err("reload failed: out of memory; the running configuration is kept");
        return;
    }
    if (lg_cli_build_config(app->cli, next, err) != 0) {
        reload_failed(next, err);
        return;
    }
    struct reload_diff d = {0};
    if (lg_config_diff(app->loaded, next, note_change, &d) < 0) {
        reload_failed(next, "out of memory");
        return;
    }
    if (d.restart_count) {
        LG_STAT_ADD(config_reloads_refused, 1);
        lg_err("reload refused: %s changed, which needs a restart; nothing was applied "
               "(restore %s, or restart)", d.restart, d.restart_count > 1 ? "them" : "it");
        lg_config_release(next);
        free(next);
        return;
    }
    /* The start's check still holds: a control port off loopback keeps its token. Key files
     * are re-read even when no setting changed: a rotated JWKS is a reload. */
    char aerr[LG_CONFIG_ERR_MAX];
    if (lg_control_check_bind(next, aerr, sizeof aerr) != 0 ||
        lg_auth_reload(app->auth, next, aerr, sizeof aerr) != 0) {
        reload_failed(next, aerr);
        return;
    }
    lg_log_set_level(next->log_level);
    lg_log_set_format(next->log_format);
    lg_hub_set_rules(app->hub, next);
    lg_live_limits_store(&app->live, next);
    lg_client_addresses_set_per_address(app->clients, next->limits.max_connections_per_address);
    if (app->reloaded) {
        lg_config_release(app->reloaded); /* the hub dropped it in lg_hub_set_rules() */
        free(app->reloaded);
    }
    app->reloaded = next;
    app->loaded = next;
    LG_STAT_ADD(config_reloads_applied, 1);
    lg_log_lifecycle("reload applied: %s", d.changed_count ? d.changed : "no setting changed "
                     "(key files re-read)");
    if (d.changed_count)
        warn_if_open(app->auth, next);
}

/* Wait for SIGINT/SIGTERM (SIGHUP reloads; SIGUSR1/2 are logged and ignored); once a second
 * meanwhile (on a fixed cadence, whatever signals arrive), publish $sys/stats and expire
 * history. */
static void serve_until_signal(struct lg_app *app, const sigset_t *signals)
{
    lg_sys_stats_init(&app->sys_stats);
    uint64_t next_tick = lg_mono_ms() + 1000;
    for (;;) {
        uint64_t now = lg_mono_ms();
        uint64_t wait_ms = next_tick > now ? next_tick - now : 0;
        struct timespec wait = {.tv_sec = (time_t)(wait_ms / 1000),
                                .tv_nsec = (long)(wait_ms % 1000) * 1000000};
        int sig = wait_ms ? sigtimedwait(signals, NULL, &wait) : -1;
        if (sig == SIGINT || sig == SIGTERM) {
            lg_log_lifecycle("received %s: draining (at most %u ms)",
                             sig == SIGINT ? "SIGINT" : "SIGTERM", app->cfg->drain_timeout_ms);
            return;
        }
        if (sig == SIGHUP) {
            lg_log_lifecycle("received SIGHUP: reloading %s",
                             app->cli->config_path ? app->cli->config_path : "(no --config)");
            reload(app);
        } else if (sig > 0) {
            lg_log_lifecycle("received %s: ignored (SIGHUP reloads; SIGINT and SIGTERM stop)",
                             sig == SIGUSR1 ? "SIGUSR1" : "SIGUSR2");
        }
        if (lg_mono_ms() < next_tick)
            continue; /* another signal */
        next_tick += 1000;
        if (next_tick <= lg_mono_ms())
            next_tick = lg_mono_ms() + 1000; /* the tick fell behind (a stopped process) */
        lg_sys_stats_tick(&app->sys_stats, app->hub);
        lg_hub_presence_report(app->hub); /* at most one presence batch per topic a tick */
        lg_control_sweep(app->control);
        size_t collected = lg_hub_expire(app->hub);
        if (collected)
            lg_debug("collected %zu idle topics (never published to, nobody subscribed)", collected);
    }
}

/* systemd's Type=notify (packaging/livegate.service): ready once both ports listen, stopping
 * once the drain begins. Nothing happens outside a service manager. */
static void notify_service_manager(const char *state)
{
    int rc = lg_sd_notify(state);
    if (rc < 0)
        lg_warn("NOTIFY_SOCKET %s: %s", state, strerror(-rc));
}

static void drain(struct lg_app *app)
{
    /* Publishes first: the streams that would carry them are about to end. */
    lg_control_drain(app->control);
    /* Workers next: once readyz says draining, no worker takes a new subscriber. */
    for (uint32_t i = 0; i < app->worker_count; i++)
        lg_worker_drain(app->workers[i]);
    atomic_store(&app->lifecycle, LG_LIFECYCLE_DRAINING);
    uint64_t deadline = lg_mono_ms() + app->cfg->drain_timeout_ms;
    for (uint32_t i = 0; i < app->worker_count; i++) {
        while (!lg_worker_drained(app->workers[i]) && lg_mono_ms() < deadline) {
            struct timespec ten_ms = {.tv_nsec = 10 * 1000 * 1000};
            nanosleep(&ten_ms, NULL);
        }
        if (!lg_worker_drained(app->workers[i]))
            lg_warn("worker %u still had clients after drain_timeout_ms; closing them", i);
    }
}

static void stop(struct lg_app *app)
{
    if (app->hub)
        lg_hub_stop_store(app->hub); /* publishes waiting on Redis are answered 503 */
    lg_pacer_stop(app->pacer); /* held publishes are answered 503, nothing published */
    for (uint32_t i = 0; i < app->worker_count; i++)
        if (app->workers[i])
            lg_worker_stop(app->workers[i]);
    for (uint32_t i = 0; i < app->worker_count; i++)
        if (app->workers[i])
            lg_worker_join(app->workers[i]);
    if (app->hub)
        lg_hub_unhost(app->hub); /* the store's thread, where it served the daemons */
    lg_hooks_stop(app->hooks); /* no worker waits for an answer any more */
    /* No thread runs a daemon now, so no publish can reach an inbox after this. */
    lg_control_stop(app->control);
    app->control = NULL;
    for (uint32_t i = 0; i < app->worker_count; i++) {
        if (app->workers[i]) {
            lg_worker_destroy(app->workers[i]);
            app->workers[i] = NULL;
        }
    }
    lg_hooks_destroy(app->hooks); /* every connection (and its wait) was released */
    app->hooks = NULL;
    lg_pacer_destroy(app->pacer); /* no worker can signal room any more */
    app->pacer = NULL;
    lg_auth_destroy(app->auth); /* every worker was joined */
    app->auth = NULL;
    lg_client_addresses_destroy(app->clients); /* every connection was released */
    app->clients = NULL;
    lg_hub_destroy(app->hub);
    app->hub = NULL;
    if (app->reloaded) { /* the hub, its only reader, is gone */
        lg_config_release(app->reloaded);
        free(app->reloaded);
        app->reloaded = NULL;
    }
}

int lg_app_run(const struct lg_config *cfg, const struct lg_cli *cli)
{
    static struct lg_app app; /* one per process; static keeps it off the stack */
    memset(&app, 0, sizeof app);
    app.cfg = cfg;
    app.cli = cli;
    app.loaded = cfg;
    app.worker_count = worker_count(cfg);
    atomic_store(&app.lifecycle, LG_LIFECYCLE_STARTING);
    resolve_static_dir(&app);

    /* Threads inherit this mask, so only sigtimedwait() below ever sees these signals. A
     * terminal hang-up or a habitual `kill -HUP` must not end the gateway without a drain, so
     * the signals whose default action kills are taken too, and ignored with a log line. */
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGHUP);
    sigaddset(&signals, SIGUSR1);
    sigaddset(&signals, SIGUSR2);
    pthread_sigmask(SIG_BLOCK, &signals, NULL);
    signal(SIGPIPE, SIG_IGN);

    app.running = *cfg; /* shallow: borrows what cfg owns, which outlives the app */
    rlim_t nofile = size_descriptor_limit(&app.running, app.worker_count);
    presize_descriptor_table(descriptors_needed(&app.running, app.worker_count), nofile);
    cap_connection_limits(&app.running, nofile, app.worker_count);
    app.cfg = &app.running;
    cfg = app.cfg;
    if (start(&app) != 0) {
        stop(&app);
        return 1;
    }
    atomic_store(&app.lifecycle, LG_LIFECYCLE_READY);
    char pub[96], ctl[96];
    print_addr(pub, sizeof pub, cfg->public_addr.host, app.public_port);
    print_addr(ctl, sizeof ctl, cfg->control_addr.host, app.control_port);
    lg_log_lifecycle("livegate %s listening public=%s control=%s workers=%u", LG_VERSION, pub, ctl,
                     app.worker_count);

    notify_service_manager("READY=1");

    serve_until_signal(&app, &signals);
    notify_service_manager("STOPPING=1");
    drain(&app);
    stop(&app);
    lg_log_lifecycle("livegate stopped cleanly");
    return 0;
}
