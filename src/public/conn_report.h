/*
 * conn_report.h - what a connection tells the operator about itself: the access line and the
 * closed-by-reason counters when it closes, and its entry in the admin API's client list
 * (GET /v1/clients).
 *
 * Owns:    nothing; struct lg_conn_report is a value in the connection. lg_conn_report_json()
 *          returns a new jansson reference the caller owns.
 * Frees:   nothing.
 * Threads: the connection's worker thread (they read its worker-owned state).
 * Bounds:  the access line is logged at info at most once per 100 ms (rate-limited, the
 *          suppressed lines counted on the next one); a client entry names at most
 *          limits.max_topics_per_client topics.
 */
#ifndef LG_CONN_REPORT_H
#define LG_CONN_REPORT_H

#include <stdbool.h>
#include <stdint.h>

#include "client_address.h"

struct lg_conn;
struct json_t;

/* What the admin API and the access log line show of a connection (its `report`). */
struct lg_conn_report {
    uint64_t id;              /* unique in the process, increasing in open order */
    int64_t opened_unix_ms;
    uint64_t opened_mono_ms;
    char peer[48];            /* the socket's peer address, read at open ("" = unknown) */
    const char *close_reason; /* static: "policy", "error", ...; NULL = decided at release */
    struct lg_client_address client; /* the address it counts against, if client_counted */
    bool client_counted;      /* holds one of `client`'s connections (client_addresses.h) */
};

/* Why c closes, as the metric label and the access line say it. */
const char *lg_conn_close_reason(const struct lg_conn *c);

/* c is being released: count its close reason and log its access line (subscribers only). */
void lg_conn_report_closed(const struct lg_conn *c);

/* c serves a subscriber (SSE, WebSocket, a held long-poll): it is listed as a client. */
bool lg_conn_is_client(const struct lg_conn *c);

/* {"id","transport","remote","topics":[...],"queue_depth","dropped","delivered","lag_ms",
 * "connected_since_ms","bytes_sent"}. NULL when out of memory. */
struct json_t *lg_conn_report_json(struct lg_conn *c, uint64_t now_mono_ns);

#endif
