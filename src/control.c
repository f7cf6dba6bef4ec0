/*
 * control.c - the control port (see control.h for owns/frees/threads/bounds).
 *
 * Design. MHD calls on_request() several times per request:
 *   1. first call (*con_cls == NULL): route the path and method. Routes without a body (health)
 *      and every refusal that needs no body (404, 405, 413 by Content-Length) are answered
 *      right here. Body routes get a struct lg_ctl_request hung on *con_cls.
 *   2. upload calls (*upload_data_size > 0): append to the body buffer, up to the route's limit;
 *      past it the bytes are only counted and discarded (chunked or lying bodies).
 *   3. final call (*upload_data_size == 0): 413 if the count passed the limit, else the route's
 *      handler parses, validates and publishes, and queues exactly one response.
 * Every response is JSON built with jansson; every error is {"error": CODE, "message": TEXT}.
 * MHD_YES/MHD_NO appear only in on_request() and the MHD callbacks: everything below them
 * returns 0 or -1 (-1 = could not even queue a response; MHD then closes the connection).
 */
#include "control.h"

#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include <jansson.h>
#include <microhttpd.h>

#include "encode.h"
#include "http_request.h"
#include "hub.h"
#include "clock.h"
#include "log.h"
#include "publish_pacer.h"
#include "stats.h"
#include "topic.h"

#define LG_CTL_POOL_THREADS 2u    /* MHD_OPTION_THREAD_POOL_SIZE */
#define LG_CTL_IDLE_TIMEOUT_S 30u /* MHD_OPTION_CONNECTION_TIMEOUT */
#define LG_CTL_TYPE_MAX 64        /* event type: 1..64 bytes of [A-Za-z0-9_.:/-] */
#define LG_CTL_KEY_MAX 256        /* conflation key and batch item id: 1..256 bytes of UTF-8 */

struct lg_control {
    struct MHD_Daemon *daemon;
    const struct lg_config *cfg;  /* borrowed, immutable */
    struct lg_hub *hub;           /* borrowed */
    struct lg_pacer *pacer;       /* borrowed: publishes waiting for a worker's room */
    const _Atomic int *lifecycle; /* borrowed; enum lg_lifecycle, loaded atomically */
    pthread_mutex_t err_lock;
    bool capturing;               /* {err_lock} lg_control_start() is running */
    char start_err[512];          /* {err_lock} the last MHD message while capturing */
};

/* One refusal, filled by whatever found the problem and rendered by queue_error(). */
struct lg_ctl_error {
    unsigned status;   /* HTTP status */
    const char *code;  /* "bad_request", "invalid_topic", ... */
    long index;        /* batch item the error is about, -1 = none */
    bool retry;        /* send Retry-After: 1 (every 503) */
    char message[512]; /* what was wrong and how to fix it */
};

#define LG_CTL_ERROR_INIT {.status = 500, .code = "internal_error", .index = -1}

struct lg_ctl_route;

/* Per-request state of a body route; lives on MHD's con_cls until NOTIFY_COMPLETED. */
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
    struct lg_publish_result *batch_results; /* [batch size], kept across holds */
};

typedef int lg_ctl_handler(struct lg_control *c, struct MHD_Connection *conn, const char *url,
                           struct lg_ctl_request *r);

struct lg_ctl_route {
    const char *prefix;      /* the path, or its start when suffix is set */
    const char *suffix;      /* NULL = exact path; else path = prefix {segment} suffix */
    const char *method;      /* the one method served (GET also serves HEAD) */
    const char *allow;       /* Allow header of a 405 */
    const char *body_what;   /* body routes: what the body is, for the 413 message */
    const char *limit_name;  /* body routes: the config key of the limit */
    uint32_t (*limit_of)(const struct lg_config *cfg); /* NULL = no body expected */
    lg_ctl_handler *handle;
};

/* ======================================================================================== */
/* Small helpers                                                                            */
/* ======================================================================================== */

static int fail(struct lg_ctl_error *e, unsigned status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Fill e and return -1, so validators can `return fail(...)`. Every 503 says Retry-After. */
static int fail(struct lg_ctl_error *e, unsigned status, const char *code, const char *fmt, ...)
{
    va_list ap;
    e->status = status;
    e->code = code;
    e->retry = status == 503;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
    return -1;
}

/* Messages quote client bytes (paths, names, jansson's "near '...'"): keep them printable ASCII
 * so the JSON string is always valid. */
static void ascii_safe(char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e)
            *s = '?';
}

static bool type_char_ok(char ch)
{
    return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
           ch == '_' || ch == '.' || ch == ':' || ch == '/' || ch == '-';
}

/* Return value: NULL when s[0..len) is a valid event type, else what is wrong with it. */
static const char *type_problem(const char *s, size_t len)
{
    if (len == 0)
        return "is empty";
    if (len > LG_CTL_TYPE_MAX)
        return "is longer than 64 bytes";
    for (size_t i = 0; i < len; i++)
        if (!type_char_ok(s[i]))
            return "may only hold A-Z a-z 0-9 _ . : / -";
    return NULL;
}

/* Return value: NULL when s[0..len) is a valid conflation key or item id, else the problem. */
static const char *key_problem(const char *s, size_t len)
{
    if (len == 0)
        return "is empty";
    if (len > LG_CTL_KEY_MAX)
        return "is longer than 256 bytes";
    if (memchr(s, '\0', len) != NULL)
        return "contains a NUL byte";
    if (!lg_utf8_valid(s, len))
        return "is not valid UTF-8";
    return NULL;
}

static bool json_walk_has_real(const json_t *v)
{
    const char *k;
    json_t *item;
    size_t i;
    if (json_is_real(v))
        return true;
    if (json_is_object(v)) {
        json_object_foreach((json_t *)v, k, item)
            if (json_walk_has_real(item))
                return true;
    } else if (json_is_array(v)) {
        json_array_foreach(v, i, item)
            if (json_walk_has_real(item))
                return true;
    }
    return false;
}

static bool reads_back_equal(const char *text, const json_t *v)
{
    json_t *back = json_loads(text, JSON_DECODE_ANY, NULL);
    bool same = back != NULL && json_equal(back, (json_t *)v);
    json_decref(back);
    return same;
}

/*
 * Compact JSON text of v (JSON_COMPACT|JSON_ENCODE_ANY, UTF-8 kept as is). jansson prints reals
 * with 17 significant digits by default (1.07 -> 1.0700000000000001), so a value holding reals
 * is printed with the fewest of 15, 16, 17 digits that reads back equal.
 * Return value: new malloc'd text with *len set, or NULL on OOM.
 */
static char *json_compact(const json_t *v, size_t *len)
{
    size_t flags = JSON_COMPACT | JSON_ENCODE_ANY;
    char *text = NULL;
    if (json_walk_has_real(v)) {
        for (int digits = 15; digits < 17 && text == NULL; digits++) {
            text = json_dumps(v, flags | JSON_REAL_PRECISION(digits));
            if (text != NULL && !reads_back_equal(text, v)) {
                free(text);
                text = NULL;
            }
        }
    }
    if (text == NULL)
        text = json_dumps(v, flags | JSON_REAL_PRECISION(17));
    if (text != NULL)
        *len = strlen(text);
    return text;
}

/* ======================================================================================== */
/* Responses                                                                                */
/* ======================================================================================== */

/*
 * Queue body (stolen) as the JSON answer with status. allow: Allow header or NULL; retry: add
 * Retry-After: 1. Return value: 0, or -1 when nothing could be queued.
 */
/* Queue a JSON text response (steals text, malloc'd; NULL = out of memory). */
static int queue_text(struct MHD_Connection *conn, unsigned status, char *text,
                      const char *allow, bool retry)
{
    if (text == NULL)
        return -1;
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
    if (resp == NULL) {
        free(text);
        return -1;
    }
    bool ok = MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json") ==
              MHD_YES;
    if (ok && allow != NULL)
        ok = MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, allow) == MHD_YES;
    if (ok && retry)
        ok = MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, "1") == MHD_YES;
    if (ok)
        ok = MHD_queue_response(conn, status, resp) == MHD_YES;
    MHD_destroy_response(resp);
    return ok ? 0 : -1;
}

static int queue_json(struct MHD_Connection *conn, unsigned status, json_t *body,
                      const char *allow, bool retry)
{
    char *text = body != NULL ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    return queue_text(conn, status, text, allow, retry);
}

/* The {"error","message"[,"index"]} object of e. Return value: new reference, or NULL (OOM). */
static json_t *error_json(struct lg_ctl_error *e)
{
    ascii_safe(e->message);
    json_t *body = json_pack("{s:s, s:s}", "error", e->code, "message", e->message);
    if (body != NULL && e->index >= 0 &&
        json_object_set_new(body, "index", json_integer(e->index)) != 0) {
        json_decref(body);
        body = NULL;
    }
    return body;
}

static int queue_error(struct MHD_Connection *conn, struct lg_ctl_error *e, const char *allow)
{
    lg_debug("control: %u %s: %s", e->status, e->code, e->message);
    return queue_json(conn, e->status, error_json(e), allow, e->retry);
}

/* ======================================================================================== */
/* Publishing                                                                               */
/* ======================================================================================== */

/* Turn a hub refusal into e (the topic is only quoted in messages). Returns -1. */
static int refusal(const struct lg_control *c, enum lg_publish_status s, const char *topic,
                   size_t topic_len, struct lg_ctl_error *e)
{
    const struct lg_config *cfg = c->cfg;
    const char *problem;
    int tl = topic_len > 128 ? 128 : (int)topic_len;
    switch (s) {
    case LG_PUBLISH_BAD_TOPIC:
        problem = lg_topic_name_problem(topic, topic_len);
        return fail(e, 422, "invalid_topic", "invalid topic \"%.*s\": %s", tl, topic,
                    problem != NULL ? problem : lg_publish_status_message(s));
    case LG_PUBLISH_RESERVED_TOPIC:
        return fail(e, 422, "invalid_topic",
                    "topic \"%.*s\": names starting with '$' are reserved for the gateway; "
                    "publish to a name without it", tl, topic);
    case LG_PUBLISH_BAD_DATA:
        return fail(e, 400, "bad_request", "event data refused: %s",
                    lg_publish_status_message(s));
    case LG_PUBLISH_TOO_MANY_TOPICS:
        fail(e, 503, "unavailable",
             "topic \"%.*s\" cannot be created: the gateway holds %u topics, the limit "
             "(limits.max_topics); publish to an existing topic or raise the limit",
             tl, topic, cfg->limits.max_topics);
        break;
    case LG_PUBLISH_WORKERS_BEHIND:
        fail(e, 503, "overloaded",
             "subscribers' workers are behind: the publish waited %u ms "
             "(limits.publish_wait_ms) for room and nothing was published; retry later or "
             "publish more slowly", cfg->limits.publish_wait_ms);
        break;
    case LG_PUBLISH_MEMORY_FULL:
        fail(e, 503, "unavailable",
             "live events hold limits.max_retained_bytes (%llu bytes); retry once "
             "subscribers catch up or history expires",
             (unsigned long long)cfg->limits.max_retained_bytes);
        break;
    case LG_PUBLISH_OOM:
        fail(e, 503, "unavailable", "the gateway is out of memory; retry");
        break;
    default:
        return fail(e, 500, "internal_error", "unexpected hub answer %d (%s)", (int)s,
                    lg_publish_status_message(s));
    }
    return -1;
}

/* Append {"topic":..,"id":..,"seq":..[,"duplicate":true]} of one accepted event. Written
 * directly rather than through jansson: this is the hot path of publishing. */
static void append_result(struct lg_buf *b, const struct lg_publish_req *req,
                          const struct lg_publish_result *res)
{
    lg_buf_append_str(b, "{\"topic\":");
    lg_encode_json_string(b, req->topic, req->topic_len);
    lg_buf_append_str(b, ",\"id\":");
    lg_encode_json_string(b, res->id, strlen(res->id));
    lg_buf_append_str(b, ",\"seq\":");
    lg_buf_append_u64(b, res->seq);
    lg_buf_append_str(b, res->duplicate ? ",\"duplicate\":true}" : "}");
}

/* The malloc'd text of b, or NULL when it ran out of memory (then released). */
static char *buf_text(struct lg_buf *b)
{
    if (b->oom || b->data == NULL) {
        lg_buf_release(b);
        return NULL;
    }
    return b->data;
}

static int queue_result(struct MHD_Connection *conn, const struct lg_publish_req *req,
                        const struct lg_publish_result *res)
{
    struct lg_buf b;
    lg_buf_init(&b);
    append_result(&b, req, res);
    return queue_text(conn, 201, buf_text(&b), NULL, false);
}

/* ======================================================================================== */
/* Overload pacing                                                                          */
/* ======================================================================================== */

/*
 * The workers had no room for r's publish: hold the connection until they do (the handler
 * runs again on resume and retries), unless it has waited limits.publish_wait_ms already.
 * Return value: true if held (no response is queued now), false if the caller refuses.
 */
static bool hold_for_room(struct lg_control *c, struct MHD_Connection *conn,
                          struct lg_ctl_request *r, uint64_t generation)
{
    uint64_t now = lg_mono_ms();
    uint32_t wait_ms = c->cfg->limits.publish_wait_ms;
    if (r->held_since_ms == 0) {
        r->held_since_ms = now ? now : 1;
        LG_STAT_ADD(publishes_held, 1);
        static struct lg_ratelimit rl;
        lg_log_ratelimited(&rl, 1000, LG_LOG_INFO,
                           "publishes held: subscribers' workers are behind "
                           "(limits.worker_inbox_events); pacing the publisher");
    }
    if (r->hold.expired || now - r->held_since_ms >= wait_ms)
        return false;
    MHD_suspend_connection(conn);
    lg_pacer_hold(c->pacer, &r->hold, conn, generation, r->held_since_ms + wait_ms);
    return true;
}

/* The request is answered now: account for the time it was held. */
static void end_hold(struct lg_ctl_request *r, bool refused)
{
    if (r->held_since_ms == 0)
        return;
    LG_STAT_ADD(publish_wait_ms_total, lg_mono_ms() - r->held_since_ms);
    r->held_since_ms = 0;
    if (refused) {
        LG_STAT_ADD(publishes_refused, 1);
        LG_STAT_ADD(publishes_refused_overload, 1);
        static struct lg_ratelimit rl;
        lg_log_ratelimited(&rl, 1000, LG_LOG_WARN,
                           "publish refused: subscribers' workers stayed behind for "
                           "limits.publish_wait_ms");
    }
}

/* ======================================================================================== */
/* POST /v1/topics/{topic}/events                                                           */
/* ======================================================================================== */

/* Percent-decode the {topic} segment of url into topic (NUL-terminated). */
static int topic_from_path(const struct lg_ctl_route *route, const char *url, char *topic,
                           size_t *topic_len, struct lg_ctl_error *e)
{
    size_t pre = strlen(route->prefix);
    const char *seg = url + pre;
    size_t seg_len = strlen(url) - pre - strlen(route->suffix);
    size_t bad = 0;
    int rc = lg_percent_decode(seg, seg_len, topic, LG_TOPIC_NAME_MAX + 1, false, &bad);
    if (rc == -1)
        return fail(e, 400, "bad_request",
                    "the topic in the path has a malformed percent-escape at byte %zu; "
                    "write '%%' as %%25", bad);
    if (rc == -2)
        return fail(e, 422, "invalid_topic", "topic name is longer than %d bytes",
                    LG_TOPIC_NAME_MAX);
    *topic_len = (size_t)rc;
    return 0;
}

/*
 * Read query parameter name into out (room for cap bytes of text plus a NUL), percent-decoded.
 * *present tells whether it was given. Return value: 0, or -1 with e filled (malformed escape,
 * longer than cap).
 */
static int query_param(struct MHD_Connection *conn, const char *name, char *out, size_t cap,
                       size_t *len, bool *present, struct lg_ctl_error *e)
{
    const char *raw = NULL;
    size_t raw_len = 0, bad = 0;
    *present = MHD_lookup_connection_value_n(conn, MHD_GET_ARGUMENT_KIND, name, strlen(name),
                                             &raw, &raw_len) == MHD_YES;
    *len = 0;
    if (!*present || raw == NULL)
        return 0;
    int rc = lg_percent_decode(raw, raw_len, out, cap + 1, false, &bad);
    if (rc == -1)
        return fail(e, 400, "bad_request",
                    "query parameter \"%s\" has a malformed percent-escape at byte %zu", name,
                    bad);
    if (rc == -2)
        return fail(e, 400, "bad_request", "query parameter \"%s\" is longer than %zu bytes",
                    name, cap);
    *len = (size_t)rc;
    return 0;
}

/* The optional ?type= and ?key= of a single publish, stored in the caller's buffers, and the
 * Idempotency-Key header (MHD keeps it for the request's lifetime). */
static int event_params(struct MHD_Connection *conn, char type[LG_CTL_TYPE_MAX + 1],
                        char key[LG_CTL_KEY_MAX + 1], struct lg_publish_req *req,
                        struct lg_ctl_error *e)
{
    bool present;
    const char *problem;
    if (query_param(conn, "type", type, LG_CTL_TYPE_MAX, &req->type_len, &present, e) != 0)
        return -1;
    if (present) {
        if ((problem = type_problem(type, req->type_len)) != NULL)
            return fail(e, 400, "bad_request",
                        "query parameter \"type\" %s; an event type is 1..64 bytes of "
                        "A-Z a-z 0-9 _ . : / -", problem);
        req->type = type;
    }
    if (query_param(conn, "key", key, LG_CTL_KEY_MAX, &req->key_len, &present, e) != 0)
        return -1;
    if (present) {
        if ((problem = key_problem(key, req->key_len)) != NULL)
            return fail(e, 400, "bad_request",
                        "query parameter \"key\" %s; a key is 1..256 bytes of UTF-8", problem);
        req->key = key;
    }
    const char *ik = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Idempotency-Key");
    if (ik != NULL) {
        if ((problem = key_problem(ik, strlen(ik))) != NULL)
            return fail(e, 400, "bad_request",
                        "header Idempotency-Key %s; a key is 1..256 bytes of UTF-8", problem);
        req->idempotency_key = ik;
        req->idempotency_key_len = strlen(ik);
    }
    return 0;
}

static bool is_json_content_type(struct MHD_Connection *conn)
{
    const char *ct = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                                 MHD_HTTP_HEADER_CONTENT_TYPE);
    if (ct == NULL)
        return false;
    while (*ct == ' ' || *ct == '\t')
        ct++;
    size_t n = strcspn(ct, ";");
    while (n > 0 && (ct[n - 1] == ' ' || ct[n - 1] == '\t'))
        n--;
    return n == strlen("application/json") && strncasecmp(ct, "application/json", n) == 0;
}

/*
 * Set req->data from the body: compact JSON (in *json_text, malloc'd) for application/json,
 * else the body itself as UTF-8 text. Return value: 0, or -1 with e filled.
 */
static int event_data(const struct lg_control *c, struct MHD_Connection *conn,
                      const struct lg_ctl_request *r, struct lg_publish_req *req,
                      char **json_text, struct lg_ctl_error *e)
{
    const char *body = r->body != NULL ? r->body : "";
    if (!is_json_content_type(conn)) {
        if (!lg_utf8_valid(body, r->len))
            return fail(e, 400, "bad_request",
                        "event body is not valid UTF-8; send UTF-8 text, or JSON with "
                        "Content-Type: application/json");
        req->data = body;
        req->data_len = r->len;
        return 0;
    }
    json_error_t jerr;
    json_t *v = json_loadb(body, r->len, JSON_DECODE_ANY, &jerr);
    if (v == NULL)
        return fail(e, 400, "bad_request",
                    "body is not valid JSON (Content-Type is application/json): %s at line %d, "
                    "column %d", jerr.text, jerr.line, jerr.column);
    *json_text = json_compact(v, &req->data_len);
    json_decref(v);
    if (*json_text == NULL)
        return fail(e, 503, "unavailable", "out of memory encoding the event; retry");
    if (req->data_len > c->cfg->limits.max_event_bytes)
        return fail(e, 413, "payload_too_large",
                    "event data is %zu bytes as compact JSON; the limit is %u "
                    "(limits.max_event_bytes)", req->data_len, c->cfg->limits.max_event_bytes);
    req->data = *json_text;
    req->data_is_json = true;
    return 0;
}

static int handle_topic_event(struct lg_control *c, struct MHD_Connection *conn, const char *url,
                              struct lg_ctl_request *r)
{
    struct lg_ctl_error e = LG_CTL_ERROR_INIT;
    char topic[LG_TOPIC_NAME_MAX + 1];
    char type[LG_CTL_TYPE_MAX + 1];
    char key[LG_CTL_KEY_MAX + 1];
    char *json_text = NULL;
    struct lg_publish_req req = {.topic = topic};
    struct lg_publish_result res;
    int rc;

    if (topic_from_path(r->route, url, topic, &req.topic_len, &e) != 0 ||
        event_params(conn, type, key, &req, &e) != 0 ||
        event_data(c, conn, r, &req, &json_text, &e) != 0) {
        rc = queue_error(conn, &e, NULL);
    } else {
        uint64_t generation = lg_pacer_generation(c->pacer);
        enum lg_publish_status s = lg_hub_publish(c->hub, &req, &res);
        if (s == LG_PUBLISH_WORKERS_BEHIND && hold_for_room(c, conn, r, generation)) {
            rc = 0; /* answered when resumed */
        } else if (s == LG_PUBLISH_OK) {
            end_hold(r, false);
            rc = queue_result(conn, &req, &res);
        } else {
            end_hold(r, s == LG_PUBLISH_WORKERS_BEHIND);
            refusal(c, s, req.topic, req.topic_len, &e);
            rc = queue_error(conn, &e, NULL);
        }
    }
    free(json_text);
    return rc;
}

/* ======================================================================================== */
/* POST /v1/publish                                                                         */
/* ======================================================================================== */

struct lg_ctl_batch {
    json_t *items;               /* new reference: array of the item objects, in order */
    size_t n;                    /* json_array_size(items) */
    struct lg_publish_req *reqs; /* n requests pointing into items and texts */
    char **texts;                /* n compact JSON data texts (NULL where data is a string) */
};

static void batch_release(struct lg_ctl_batch *b)
{
    for (size_t i = 0; b->texts != NULL && i < b->n; i++)
        free(b->texts[i]);
    free(b->texts);
    free(b->reqs);
    json_decref(b->items);
}

static int parse_json_array(const char *body, size_t len, struct lg_ctl_batch *b,
                            struct lg_ctl_error *e)
{
    json_error_t jerr;
    b->items = json_loadb(body, len, 0, &jerr);
    if (b->items == NULL)
        return fail(e, 400, "bad_request", "batch is not valid JSON: %s at line %d, column %d",
                    jerr.text, jerr.line, jerr.column);
    return 0;
}

/* Parse NDJSON: one JSON value per non-blank line, '\n' or "\r\n" separated. */
static int parse_ndjson(const char *body, size_t len, struct lg_ctl_batch *b,
                        struct lg_ctl_error *e)
{
    b->items = json_array();
    if (b->items == NULL)
        return fail(e, 503, "unavailable", "out of memory parsing the batch; retry");
    size_t line_no = 0;
    for (size_t pos = 0; pos < len; line_no++) {
        const char *line = body + pos;
        const char *nl = memchr(line, '\n', len - pos);
        size_t n = nl != NULL ? (size_t)(nl - line) : len - pos;
        pos += n + (nl != NULL);
        if (strspn(line, " \t\r") >= n)
            continue; /* blank line */
        json_error_t jerr;
        json_t *item = json_loadb(line, n, JSON_DECODE_ANY, &jerr);
        if (item == NULL) {
            e->index = (long)json_array_size(b->items);
            return fail(e, 400, "bad_request",
                        "batch item %ld (line %zu) is not valid JSON: %s at column %d",
                        e->index, line_no + 1, jerr.text, jerr.column);
        }
        if (json_array_append_new(b->items, item) != 0)
            return fail(e, 503, "unavailable", "out of memory parsing the batch; retry");
    }
    return 0;
}

/* An optional string member: NULL/absent = not given. Return value: 0, or -1 with e filled. */
static int item_string(json_t *item, const char *name, size_t i, const char **s, size_t *len,
                       struct lg_ctl_error *e)
{
    json_t *v = json_object_get(item, name);
    *s = NULL;
    *len = 0;
    if (v == NULL || json_is_null(v))
        return 0;
    if (!json_is_string(v))
        return fail(e, 400, "bad_request", "batch item %zu: \"%s\" must be a string", i, name);
    *s = json_string_value(v);
    *len = json_string_length(v);
    return 0;
}

static int item_keys(json_t *item, size_t i, struct lg_ctl_error *e)
{
    static const char *const known[] = {"topic", "data", "type", "key", "id"};
    const char *k;
    json_t *v;
    json_object_foreach(item, k, v) {
        size_t j = 0;
        while (j < sizeof known / sizeof known[0] && strcmp(k, known[j]) != 0)
            j++;
        if (j == sizeof known / sizeof known[0])
            return fail(e, 400, "bad_request",
                        "batch item %zu has an unknown key \"%.64s\"; an item may hold "
                        "topic, data, type, key and id", i, k);
    }
    return 0;
}

static int item_topic(json_t *item, size_t i, struct lg_publish_req *req, struct lg_ctl_error *e)
{
    if (item_string(item, "topic", i, &req->topic, &req->topic_len, e) != 0)
        return -1;
    if (req->topic == NULL)
        return fail(e, 400, "bad_request", "batch item %zu has no \"topic\"", i);
    int tl = req->topic_len > 128 ? 128 : (int)req->topic_len;
    if (req->topic_len > 0 && req->topic[0] == '$')
        return fail(e, 422, "invalid_topic",
                    "batch item %zu: topic \"%.*s\": names starting with '$' are reserved for "
                    "the gateway; publish to a name without it", i, tl, req->topic);
    const char *problem = lg_topic_name_problem(req->topic, req->topic_len);
    if (problem != NULL)
        return fail(e, 422, "invalid_topic", "batch item %zu: invalid topic \"%.*s\": %s", i,
                    tl, req->topic, problem);
    return 0;
}

static int item_data(const struct lg_config *cfg, json_t *item, size_t i,
                     struct lg_publish_req *req, char **text, struct lg_ctl_error *e)
{
    json_t *data = json_object_get(item, "data");
    if (data == NULL)
        return fail(e, 400, "bad_request", "batch item %zu has no \"data\"", i);
    if (json_is_string(data)) {
        req->data = json_string_value(data);
        req->data_len = json_string_length(data);
    } else {
        *text = json_compact(data, &req->data_len);
        if (*text == NULL)
            return fail(e, 503, "unavailable", "out of memory encoding the batch; retry");
        req->data = *text;
        req->data_is_json = true;
    }
    if (req->data_len > cfg->limits.max_event_bytes)
        return fail(e, 413, "payload_too_large",
                    "batch item %zu: data is %zu bytes; the limit is %u "
                    "(limits.max_event_bytes)", i, req->data_len, cfg->limits.max_event_bytes);
    return 0;
}

static int item_options(json_t *item, size_t i, struct lg_publish_req *req,
                        struct lg_ctl_error *e)
{
    const char *id, *problem;
    size_t id_len;
    if (item_string(item, "type", i, &req->type, &req->type_len, e) != 0 ||
        item_string(item, "key", i, &req->key, &req->key_len, e) != 0 ||
        item_string(item, "id", i, &id, &id_len, e) != 0)
        return -1;
    if (req->type != NULL && (problem = type_problem(req->type, req->type_len)) != NULL)
        return fail(e, 400, "bad_request",
                    "batch item %zu: \"type\" %s; an event type is 1..64 bytes of "
                    "A-Z a-z 0-9 _ . : / -", i, problem);
    if (req->key != NULL && (problem = key_problem(req->key, req->key_len)) != NULL)
        return fail(e, 400, "bad_request",
                    "batch item %zu: \"key\" %s; a key is 1..256 bytes of UTF-8", i, problem);
    if (id != NULL && (problem = key_problem(id, id_len)) != NULL)
        return fail(e, 400, "bad_request",
                    "batch item %zu: \"id\" %s; an id is 1..256 bytes of UTF-8", i, problem);
    req->idempotency_key = id;
    req->idempotency_key_len = id_len;
    return 0;
}

/* Validate every item into b->reqs before anything is published. */
static int batch_validate(const struct lg_config *cfg, struct lg_ctl_batch *b,
                          struct lg_ctl_error *e)
{
    if (!json_is_array(b->items))
        return fail(e, 400, "bad_request", "a batch is a JSON array of items, or NDJSON");
    b->n = json_array_size(b->items);
    if (b->n == 0)
        return fail(e, 400, "bad_request",
                    "the batch holds no items; send {\"topic\":...,\"data\":...} objects");
    b->reqs = calloc(b->n, sizeof *b->reqs);
    b->texts = calloc(b->n, sizeof *b->texts);
    if (b->reqs == NULL || b->texts == NULL)
        return fail(e, 503, "unavailable", "out of memory validating the batch; retry");
    for (size_t i = 0; i < b->n; i++) {
        json_t *item = json_array_get(b->items, i);
        e->index = (long)i;
        if (!json_is_object(item))
            return fail(e, 400, "bad_request", "batch item %zu is not a JSON object", i);
        if (item_keys(item, i, e) != 0 || item_topic(item, i, &b->reqs[i], e) != 0 ||
            item_data(cfg, item, i, &b->reqs[i], &b->texts[i], e) != 0 ||
            item_options(item, i, &b->reqs[i], e) != 0)
            return -1;
    }
    e->index = -1;
    return 0;
}

/* Publish the items not yet accepted, holding the request when the workers have no room.
 * Return value: as any handler; r->batch_done counts the items accepted so far. */
static int batch_publish(struct lg_control *c, struct MHD_Connection *conn,
                         struct lg_ctl_request *r, struct lg_ctl_batch *b)
{
    struct lg_ctl_error e = LG_CTL_ERROR_INIT;
    if (r->batch_results == NULL)
        r->batch_results = calloc(b->n, sizeof *r->batch_results);
    struct lg_publish_result *res = r->batch_results;
    if (res == NULL) {
        fail(&e, 503, "unavailable", "out of memory publishing the batch; nothing was published");
        return queue_error(conn, &e, NULL);
    }
    enum lg_publish_status s = LG_PUBLISH_OK;
    uint64_t generation = lg_pacer_generation(c->pacer);
    size_t done = r->batch_done;
    size_t accepted = done + lg_hub_publish_many(c->hub, b->reqs + done, b->n - done,
                                                 res + done, &s);
    r->batch_done = accepted;
    if (accepted > done)
        end_hold(r, false); /* progress: limits.publish_wait_ms bounds each wait, not the batch */
    if (accepted < b->n && s == LG_PUBLISH_WORKERS_BEHIND && hold_for_room(c, conn, r, generation))
        return 0; /* the rest is published when resumed */
    end_hold(r, accepted < b->n && s == LG_PUBLISH_WORKERS_BEHIND);
    char *head; /* the body's members before "accepted", without the closing brace */
    if (accepted == b->n) {
        e.status = 200;
        head = strdup("{");
    } else {
        refusal(c, s, b->reqs[accepted].topic, b->reqs[accepted].topic_len, &e);
        size_t used = strlen(e.message);
        if (accepted == 0)
            snprintf(e.message + used, sizeof e.message - used,
                     " (at batch item 0; no item was published)");
        else
            snprintf(e.message + used, sizeof e.message - used,
                     " (at batch item %zu; items 0..%zu were published, see \"results\")",
                     accepted, accepted - 1);
        lg_debug("control: batch refused at item %zu: %s", accepted, e.message);
        json_t *err = error_json(&e);
        head = err ? json_dumps(err, JSON_COMPACT) : NULL;
        json_decref(err);
        if (head)
            head[strlen(head) - 1] = ','; /* {"error":..,"message":..} -> {"error":..,.., */
    }
    struct lg_buf body;
    lg_buf_init(&body);
    if (head)
        lg_buf_append_str(&body, head);
    free(head);
    lg_buf_append_str(&body, "\"accepted\":");
    lg_buf_append_u64(&body, accepted);
    lg_buf_append_str(&body, ",\"results\":[");
    for (size_t i = 0; i < accepted; i++) {
        if (i)
            lg_buf_append(&body, ",", 1);
        append_result(&body, &b->reqs[i], &res[i]);
    }
    lg_buf_append_str(&body, "]}");
    return queue_text(conn, e.status, buf_text(&body), NULL, e.retry);
}

static int handle_batch(struct lg_control *c, struct MHD_Connection *conn, const char *url,
                        struct lg_ctl_request *r)
{
    (void)url;
    struct lg_ctl_error e = LG_CTL_ERROR_INIT;
    struct lg_ctl_batch b = {0};
    const char *body = r->body != NULL ? r->body : "";
    size_t ws = strspn(body, " \t\r\n");
    int parsed = ws < r->len && body[ws] == '[' ? parse_json_array(body, r->len, &b, &e)
                                                : parse_ndjson(body, r->len, &b, &e);
    int rc;
    if (parsed != 0 || batch_validate(c->cfg, &b, &e) != 0)
        rc = queue_error(conn, &e, NULL);
    else
        rc = batch_publish(c, conn, r, &b);
    batch_release(&b);
    return rc;
}

/* ======================================================================================== */
/* Health                                                                                   */
/* ======================================================================================== */

static int handle_healthz(struct lg_control *c, struct MHD_Connection *conn, const char *url,
                          struct lg_ctl_request *r)
{
    (void)c, (void)url, (void)r;
    return queue_json(conn, 200, json_pack("{s:s}", "status", "ok"), NULL, false);
}

static int handle_readyz(struct lg_control *c, struct MHD_Connection *conn, const char *url,
                         struct lg_ctl_request *r)
{
    (void)url, (void)r;
    int state = atomic_load_explicit(c->lifecycle, memory_order_acquire);
    const char *name = state == LG_LIFECYCLE_READY      ? "ready"
                       : state == LG_LIFECYCLE_DRAINING ? "draining"
                                                        : "starting";
    return queue_json(conn, state == LG_LIFECYCLE_READY ? 200 : 503,
                      json_pack("{s:s}", "status", name), NULL, false);
}

/* A JSON snapshot of lg_stats: what the operator (and the tests) can see of the data plane
 * until the Prometheus endpoint of the observability work exists. */
static int handle_stats(struct lg_control *c, struct MHD_Connection *conn, const char *url,
                        struct lg_ctl_request *r)
{
    (void)c, (void)url, (void)r;
#define STAT(name) #name, (json_int_t)LG_STAT_GET(name)
    json_t *body = json_pack(
        "{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,"
        "s:I,s:I,s:I}",
        STAT(events_published), STAT(publishes_refused), STAT(publishes_deduplicated),
        STAT(publishes_held), STAT(publish_wait_ms_total), STAT(publishes_refused_overload),
        STAT(events_delivered),
        STAT(events_dropped_overflow), STAT(events_dropped_lag), STAT(events_conflated),
        STAT(gaps_sent), STAT(clients_disconnected_slow), STAT(history_evicted),
        STAT(clients_sse), STAT(clients_ws), STAT(clients_poll), STAT(connections_open),
        STAT(connections_refused), STAT(requests_rejected), STAT(max_queue_depth),
        STAT(event_bytes_live), STAT(events_live), STAT(topics));
#undef STAT
    return queue_json(conn, 200, body, NULL, false);
}

/* ======================================================================================== */
/* Routing and the MHD callbacks                                                            */
/* ======================================================================================== */

static uint32_t limit_event(const struct lg_config *cfg) { return cfg->limits.max_event_bytes; }
static uint32_t limit_batch(const struct lg_config *cfg) { return cfg->limits.max_batch_bytes; }

static const struct lg_ctl_route routes[] = {
    {.prefix = "/v1/topics/", .suffix = "/events", .method = "POST", .allow = "POST",
     .body_what = "event body", .limit_name = "limits.max_event_bytes",
     .limit_of = limit_event, .handle = handle_topic_event},
    {.prefix = "/v1/publish", .method = "POST", .allow = "POST", .body_what = "batch body",
     .limit_name = "limits.max_batch_bytes", .limit_of = limit_batch, .handle = handle_batch},
    {.prefix = "/healthz", .method = "GET", .allow = "GET, HEAD", .handle = handle_healthz},
    {.prefix = "/readyz", .method = "GET", .allow = "GET, HEAD", .handle = handle_readyz},
    {.prefix = "/v1/stats", .method = "GET", .allow = "GET, HEAD", .handle = handle_stats},
};

static bool route_matches(const struct lg_ctl_route *rt, const char *url)
{
    size_t len = strlen(url), pre = strlen(rt->prefix);
    if (rt->suffix == NULL)
        return strcmp(url, rt->prefix) == 0;
    size_t suf = strlen(rt->suffix);
    return len >= pre + suf && strncmp(url, rt->prefix, pre) == 0 &&
           strcmp(url + len - suf, rt->suffix) == 0;
}

static const struct lg_ctl_route *route_find(const char *url)
{
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
        if (route_matches(&routes[i], url))
            return &routes[i];
    return NULL;
}

static bool method_allowed(const struct lg_ctl_route *rt, const char *method)
{
    return strcmp(method, rt->method) == 0 ||
           (strcmp(rt->method, "GET") == 0 && strcmp(method, "HEAD") == 0);
}

static int too_large(struct MHD_Connection *conn, const struct lg_ctl_route *rt,
                     unsigned long long size, uint32_t limit)
{
    struct lg_ctl_error e = LG_CTL_ERROR_INIT;
    fail(&e, 413, "payload_too_large", "%s is %llu bytes; the limit is %u (%s)", rt->body_what,
         size, limit, rt->limit_name);
    return queue_error(conn, &e, NULL);
}

/* First call of a request: route it, answer what needs no body, else set up *con_cls. */
static int begin_request(struct lg_control *c, struct MHD_Connection *conn, const char *url,
                         const char *method, void **con_cls)
{
    struct lg_ctl_error e = LG_CTL_ERROR_INIT;
    const struct lg_ctl_route *rt = route_find(url);
    if (rt == NULL) {
        fail(&e, 404, "not_found",
             "no such path \"%.100s\"; the control port serves POST /v1/topics/{topic}/events, "
             "POST /v1/publish, GET /v1/stats, GET /healthz and GET /readyz", url);
        return queue_error(conn, &e, NULL);
    }
    if (!method_allowed(rt, method)) {
        fail(&e, 405, "method_not_allowed", "%.16s is not allowed on %.100s; use %s", method,
             url, rt->allow);
        return queue_error(conn, &e, rt->allow);
    }
    if (rt->limit_of == NULL)
        return rt->handle(c, conn, url, NULL);

    uint32_t limit = rt->limit_of(c->cfg);
    const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                                 MHD_HTTP_HEADER_CONTENT_LENGTH);
    unsigned long long declared = cl != NULL ? strtoull(cl, NULL, 10) : 0;
    if (declared > limit)
        return too_large(conn, rt, declared, limit);

    struct lg_ctl_request *r = calloc(1, sizeof *r);
    if (r == NULL)
        return -1;
    r->route = rt;
    r->limit = limit;
    *con_cls = r;
    return 0;
}

/* An upload call: keep up to r->limit bytes, count the rest. Always consumes everything. */
static void take_body(struct lg_ctl_request *r, const char *data, size_t *size)
{
    size_t n = *size;
    *size = 0;
    r->received += n;
    if (r->received > r->limit || r->oom) {
        free(r->body); /* will be refused: stop holding it */
        r->body = NULL;
        r->len = r->cap = 0;
        return;
    }
    if (r->len + n + 1 > r->cap) {
        size_t cap = r->cap != 0 ? r->cap : 4096;
        while (cap < r->len + n + 1)
            cap *= 2;
        if (cap > r->limit + 1)
            cap = r->limit + 1;
        char *grown = realloc(r->body, cap);
        if (grown == NULL) {
            r->oom = true;
            return;
        }
        r->body = grown;
        r->cap = cap;
    }
    memcpy(r->body + r->len, data, n);
    r->len += n;
    r->body[r->len] = '\0';
}

/* Last call: the whole body is in (or was counted past the limit). */
static int finish_request(struct lg_control *c, struct MHD_Connection *conn, const char *url,
                          struct lg_ctl_request *r)
{
    if (r->received > r->limit)
        return too_large(conn, r->route, r->received, (uint32_t)r->limit);
    if (r->oom) {
        struct lg_ctl_error e = LG_CTL_ERROR_INIT;
        fail(&e, 503, "unavailable", "out of memory buffering the request body; retry");
        return queue_error(conn, &e, NULL);
    }
    return r->route->handle(c, conn, url, r);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **con_cls)
{
    struct lg_control *c = cls;
    struct lg_ctl_request *r = *con_cls;
    int rc = 0;
    (void)version;
    if (r == NULL)
        rc = begin_request(c, conn, url, method, con_cls);
    else if (*upload_data_size != 0)
        take_body(r, upload_data, upload_data_size);
    else
        rc = finish_request(c, conn, url, r);
    return rc == 0 ? MHD_YES : MHD_NO;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct lg_ctl_request *r = *con_cls;
    (void)cls, (void)conn, (void)toe;
    if (r != NULL) {
        free(r->body);
        free(r->batch_results);
        free(r);
        *con_cls = NULL;
    }
}

/* MHD unescapes the path and query in place by default, turning %2F into '/' and leaving
 * malformed escapes as they are. We decode ourselves (strictly), so MHD must not. */
static size_t unescape_none(void *cls, struct MHD_Connection *conn, char *s)
{
    (void)cls, (void)conn;
    return strlen(s);
}

static void mhd_log(void *cls, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    struct lg_control *c = cls;
    char line[512];
    vsnprintf(line, sizeof line, fmt, ap);
    line[strcspn(line, "\r\n")] = '\0';
    pthread_mutex_lock(&c->err_lock);
    if (c->capturing)
        snprintf(c->start_err, sizeof c->start_err, "%s", line);
    pthread_mutex_unlock(&c->err_lock);
    lg_warn("control: %s", line);
}

/* ======================================================================================== */
/* Start and stop                                                                           */
/* ======================================================================================== */

static int resolve(const struct lg_listen_addr *a, struct sockaddr_storage *ss, char *err,
                   size_t errlen)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *ai = NULL;
    char port[8];
    snprintf(port, sizeof port, "%u", (unsigned)a->port);
    int rc = getaddrinfo(a->host, port, &hints, &ai);
    if (rc != 0 || ai == NULL || ai->ai_addrlen > sizeof *ss) {
        snprintf(err, errlen, "control address \"%s\" cannot be used: %s", a->host,
                 rc != 0 ? gai_strerror(rc) : "no usable address");
        if (ai != NULL)
            freeaddrinfo(ai);
        return -1;
    }
    memset(ss, 0, sizeof *ss);
    memcpy(ss, ai->ai_addr, ai->ai_addrlen);
    freeaddrinfo(ai);
    return 0;
}

struct lg_control *lg_control_start(const struct lg_config *cfg, struct lg_hub *hub,
                                    struct lg_pacer *pacer, const _Atomic int *lifecycle,
                                    uint16_t *bound_port, char *err, size_t errlen)
{
    struct sockaddr_storage ss;
    if (resolve(&cfg->control_addr, &ss, err, errlen) != 0)
        return NULL;
    struct lg_control *c = calloc(1, sizeof *c);
    if (c == NULL) {
        snprintf(err, errlen, "out of memory starting the control port");
        return NULL;
    }
    c->cfg = cfg;
    c->hub = hub;
    c->pacer = pacer;
    c->lifecycle = lifecycle;
    pthread_mutex_init(&c->err_lock, NULL);
    c->capturing = true;

    unsigned int flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG |
                         MHD_ALLOW_SUSPEND_RESUME;
    if (ss.ss_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    c->daemon = MHD_start_daemon(
        flags, cfg->control_addr.port, NULL, NULL, on_request, c,
        MHD_OPTION_EXTERNAL_LOGGER, mhd_log, c, /* first, so startup errors are routed too */
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
        MHD_OPTION_THREAD_POOL_SIZE, LG_CTL_POOL_THREADS,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned int)cfg->limits.control_max_connections,
        MHD_OPTION_CONNECTION_TIMEOUT, LG_CTL_IDLE_TIMEOUT_S,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, c,
        MHD_OPTION_UNESCAPE_CALLBACK, unescape_none, NULL,
        MHD_OPTION_END);

    pthread_mutex_lock(&c->err_lock);
    c->capturing = false;
    pthread_mutex_unlock(&c->err_lock);
    const union MHD_DaemonInfo *info =
        c->daemon != NULL ? MHD_get_daemon_info(c->daemon, MHD_DAEMON_INFO_BIND_PORT) : NULL;
    if (info == NULL || info->port == 0) {
        snprintf(err, errlen, "cannot listen on the control address %s:%u: %s",
                 cfg->control_addr.host, (unsigned)cfg->control_addr.port,
                 c->start_err[0] != '\0' ? c->start_err : "libmicrohttpd failed to start");
        lg_control_stop(c);
        return NULL;
    }
    *bound_port = info->port;
    return c;
}

void lg_control_stop(struct lg_control *c)
{
    if (c == NULL)
        return;
    /* Held publishes are answered 503 (nothing was published) before the daemon stops. */
    if (c->pacer != NULL)
        lg_pacer_stop(c->pacer);
    if (c->daemon != NULL)
        MHD_stop_daemon(c->daemon);
    pthread_mutex_destroy(&c->err_lock);
    free(c);
}
