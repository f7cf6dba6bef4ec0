/*
 * control_internal.h - what the parts of the control port share: the daemon's state, the
 * per-request state and the route table's shape. Only control*.c include it.
 *
 *   control.c          the MHD daemon, the route table, body buffering, start and stop
 *   control_publish.c  POST /v1/topics/{topic}/events and POST /v1/publish (+ overload holds)
 *   control_status.c   GET /healthz, /readyz, /v1/stats
 *   metrics.c          GET /metrics (Prometheus exposition)
 *   control_admin.c    the admin API: /v1/topics, /v1/clients (worker calls, worker_call.h)
 *   control_reply.c    queueing JSON answers; control_error.c the refusal type;
 *   publish_parse.c    the publish bodies, as pure functions
 *
 * Owns/Frees/Threads/Bounds: as control.h says. struct lg_ctl_request lives on MHD's con_cls
 * from the first call of a body route to MHD_OPTION_NOTIFY_COMPLETED, which frees it; only the
 * worker serving its connection's daemon touches it (the pacer only resumes the connection).
 */
#ifndef LG_CONTROL_INTERNAL_H
#define LG_CONTROL_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "histogram.h"
#include "live_limits.h"
#include "hub.h"
#include "loop_guest.h"
#include "publish_pacer.h"

struct MHD_Connection;
struct MHD_Daemon;
struct lg_hub;
struct lg_call;
struct lg_publish_result;
struct lg_auth;
struct lg_grant;
struct lg_ctl_error;

struct lg_ctl_deadlines;

/* One daemon and the loop that serves it. */
struct lg_ctl_daemon {
    struct MHD_Daemon *mhd;
    struct lg_loop_guest guest;   /* what the host serves */
    struct lg_loop_host host;     /* how to wake it; set once before its loop runs */
};

struct lg_control {
    struct lg_ctl_daemon daemons[LG_MAX_WORKERS]; /* [worker_count]: daemon i on worker i, or
                                                     with Redis all on the store's thread */
    struct lg_ctl_deadlines *deadlines; /* owned: every connection's request deadline */
    const struct lg_config *cfg;  /* borrowed, immutable */
    const struct lg_live_limits *live; /* borrowed: the limits a reload changes */
    struct lg_hub *hub;           /* borrowed */
    struct lg_pacer *pacer;       /* borrowed: publishes waiting for a worker's room */
    const _Atomic int *lifecycle; /* borrowed; enum lg_lifecycle, loaded atomically */
    const struct lg_auth *auth;   /* the app's verifier (auth.h), borrowed; its keys change
                                     only by a reload, which any thread may see at once */
    pthread_mutex_t err_lock;
    bool capturing;               /* {err_lock} lg_control_start() is running */
    char start_err[512];          /* {err_lock} the last MHD message while capturing */
    uint32_t worker_count;        /* immutable: the hub's workers */
    int64_t started_unix_ms;      /* immutable: when the control port started */
    _Atomic bool draining;        /* set once by lg_control_drain(): publishes are refused */
    /* Admin requests suspended until every worker answered their call (control_admin.c):
     * whoever takes a request off the list (the call's completion, the sweep at its deadline,
     * the stop) resumes it. */
    pthread_mutex_t admin_lock;
    struct lg_dlist admin_waiting; /* {admin_lock} of struct lg_ctl_request, by admin_link: at
                                      most one per control connection */
};

/* The publish routes' histograms (control_publish.c writes them from every worker's daemon with
 * relaxed atomic adds; metrics.c reads them). */
extern struct lg_histogram lg_ctl_publish_handling; /* handler time of an answered publish */
extern struct lg_histogram lg_ctl_publish_wait;     /* time a held publish waited for room */

struct lg_ctl_route;
struct lg_parsed_batch;

/* Per-request state of a body route. */
struct lg_ctl_request {
    const struct lg_ctl_route *route;
    char *body;        /* received bytes, NUL-terminated; NULL until the first byte */
    size_t len;        /* bytes in body */
    size_t cap;        /* allocated bytes of body (len + 1 <= cap) */
    size_t limit;      /* largest body accepted (limits.max_event_bytes / max_batch_bytes) */
    uint64_t received; /* every body byte the client sent, including discarded ones */
    bool oom;          /* the body buffer could not grow: answer 503 */
    /* Overload pacing: a publish that found no room waits here (connection suspended). */
    struct lg_pacer_hold hold;
    uint64_t held_since_ms;   /* monotonic; 0 = never held */
    size_t batch_done;        /* batch items accepted before the request was held */
    struct lg_parsed_batch *batch;           /* the body parsed once, kept across holds */
    struct lg_publish_result *batch_results; /* [batch size], kept across holds */
    /* Remote store: the publish handed to it, answered on its thread (control_publish.c). The
     * completion writes remote_status/remote_res, then remote_state (release), then resumes. */
    struct MHD_Connection *remote_conn;
    _Atomic int remote_state;
    enum lg_publish_status remote_status;
    struct lg_publish_result remote_res;
    struct lg_grant *grant;   /* a publish token's grant (control_auth.c); NULL = the control
                                 token or no auth */
    /* Admin calls to the workers (control_admin.c), suspended until answered. */
    struct lg_call *call;     /* one reference, dropped by MHD_OPTION_NOTIFY_COMPLETED */
    const struct lg_loop_host *host; /* the loop serving this request's daemon */
    struct MHD_Connection *conn;     /* while on admin_waiting: the connection to resume */
    uint64_t call_deadline_ms;/* monotonic; 0 = not posted yet */
    struct lg_dlink admin_link;      /* {c->admin_lock} on c->admin_waiting */
    bool call_expired;        /* resumed by the deadline or the stop, not by the answers */
};

/* Admin requests waiting for the workers (control_admin.c): resume those past their deadline
 * (main thread, lg_control_sweep), resume every one (lg_control_stop, before the daemons
 * stop), or forget r (its connection completed; any thread serving a daemon). */
void lg_ctl_admin_sweep(struct lg_control *c, uint64_t now_ms);
void lg_ctl_admin_release(struct lg_control *c);
void lg_ctl_admin_forget(struct lg_control *c, struct lg_ctl_request *r);

/* A route's handler: queue exactly one response (or hold the request, see
 * control_publish.c). r is NULL for routes without a body. Return value: 0, or -1 when
 * nothing could be queued. */
typedef int lg_ctl_handler(struct lg_control *c, struct MHD_Connection *conn, const char *url,
                           struct lg_ctl_request *r);

/* Who may use a route (docs/security.md, "The control port"). Every route states one: the zero
 * value is not an access, and lg_ctl_routes_check() refuses a table with it. */
enum lg_ctl_access {
    LG_CTL_ACCESS_UNSET = 0, /* invalid: a route that forgot to say */
    LG_CTL_OPEN,             /* anyone: the probes /healthz and /readyz */
    LG_CTL_PUBLISH,          /* the control token, or a token whose publish claim covers the
                                topic (every item of a batch) */
    LG_CTL_ADMIN,            /* the control token only; no JWT ever grants it */
};

struct lg_ctl_route {
    enum lg_ctl_access access;
    const char *prefix;      /* the path, or its start when suffix is set */
    const char *suffix;      /* NULL = exact path; else path = prefix {segment} suffix */
    const char *method;      /* the one method served (GET also serves HEAD) */
    const char *allow;       /* Allow header of a 405 */
    const char *body_what;   /* body routes: what the body is, for the 413 message */
    const char *limit_name;  /* body routes: the config key of the limit */
    uint32_t (*limit_of)(const struct lg_live_limits *live); /* NULL = no body expected */
    lg_ctl_handler *handle;
};

/* The route table (control.c), for lg_ctl_routes_check() and the tests. */
const struct lg_ctl_route *lg_ctl_routes(size_t *count);
/* 0 when every route states its access, else -1 with the first that does not in err. */
int lg_ctl_routes_check(char *err, size_t errlen);

/* control_auth.c. Whether the request may go on under access: 0 with *answered false (and
 * *grant set when a publish token let it in), or a 401/403 was queued (*answered true; return
 * value as a handler's). */
int lg_ctl_authorize(struct lg_control *c, struct MHD_Connection *conn, enum lg_ctl_access access,
                     struct lg_grant **grant, bool *answered);
/* Whether r's grant covers topic[0..len); false with a 403 in e. */
bool lg_ctl_may_publish(const struct lg_ctl_request *r, const char *topic, size_t len,
                        struct lg_ctl_error *e);

/* A held batch published more of its items: its request deadline (control_deadline.h) starts
 * afresh, as its wait for room does (limits.publish_wait_ms bounds a wait, not the batch). */
void lg_ctl_request_progressed(struct lg_control *c, struct MHD_Connection *conn);

lg_ctl_handler lg_ctl_handle_topic_event; /* control_publish.c */
lg_ctl_handler lg_ctl_handle_batch;
/* Free what a publish kept in r across holds (its parsed batch and results). */
void lg_ctl_publish_forget(struct lg_ctl_request *r);
lg_ctl_handler lg_ctl_handle_healthz;     /* control_status.c */
lg_ctl_handler lg_ctl_handle_readyz;
lg_ctl_handler lg_ctl_handle_stats;
lg_ctl_handler lg_ctl_handle_metrics;       /* metrics.c */
lg_ctl_handler lg_ctl_handle_topics;        /* control_admin.c */
lg_ctl_handler lg_ctl_handle_topic_get;
lg_ctl_handler lg_ctl_handle_topic_presence;
lg_ctl_handler lg_ctl_handle_topic_history;
lg_ctl_handler lg_ctl_handle_topic_delete;
lg_ctl_handler lg_ctl_handle_clients;
lg_ctl_handler lg_ctl_handle_client_delete;

#endif
