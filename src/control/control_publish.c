/*
 * control_publish.c - the publish routes of the control port:
 *   POST /v1/topics/{topic}/events   one event (201 with its id and seq)
 *   POST /v1/publish                 a batch (200 with every item's id, or the refusal of the
 *                                    first item not published beside the results before it)
 * Parsing is publish_parse.c's; this file gathers the request's parts from MHD, publishes
 * through the hub, holds a request the workers have no room for (publish_pacer.h), and writes
 * the answer. Results are written with encode.c's JSON writer (the hot path of publishing);
 * everything else with jansson. No answer is built by editing bytes already written.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>

#include "clock.h"
#include "control_internal.h"
#include "control_reply.h"
#include "encode.h"
#include "hub.h"
#include "log.h"
#include "publish_parse.h"
#include "stats.h"

struct lg_histogram lg_ctl_publish_handling;
struct lg_histogram lg_ctl_publish_wait;

/* ---- Answers ----------------------------------------------------------------------------- */

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
        return lg_ctl_fail(e, 422, "invalid_topic", "invalid topic \"%.*s\": %s", tl, topic,
                    problem != NULL ? problem : lg_publish_status_message(s));
    case LG_PUBLISH_RESERVED_TOPIC:
        return lg_ctl_fail(e, 422, "invalid_topic",
                    "topic \"%.*s\": names starting with '$' are reserved for the gateway; "
                    "publish to a name without it", tl, topic);
    case LG_PUBLISH_BAD_DATA:
        return lg_ctl_fail(e, 400, "bad_request", "event data refused: %s",
                    lg_publish_status_message(s));
    case LG_PUBLISH_TOO_MANY_TOPICS:
        lg_ctl_fail(e, 503, "unavailable",
             "topic \"%.*s\" cannot be created: the gateway holds %u topics, the limit "
             "(limits.max_topics); publish to an existing topic or raise the limit",
             tl, topic, lg_live(&c->live->max_topics));
        break;
    case LG_PUBLISH_WORKERS_BEHIND:
        lg_ctl_fail(e, 503, "overloaded",
             "subscribers' workers are behind: the publish waited %u ms "
             "(limits.publish_wait_ms) for room and nothing was published; retry later or "
             "publish more slowly", lg_live(&c->live->publish_wait_ms));
        break;
    case LG_PUBLISH_MEMORY_FULL:
        lg_ctl_fail(e, 503, "unavailable",
             "live events hold limits.max_retained_bytes (%llu bytes); retry once "
             "subscribers catch up or history expires",
             (unsigned long long)cfg->limits.max_retained_bytes);
        break;
    case LG_PUBLISH_OOM:
        lg_ctl_fail(e, 503, "unavailable", "the gateway is out of memory; retry");
        break;
    case LG_PUBLISH_STORE_UNAVAILABLE:
        lg_ctl_fail(e, 503, "unavailable",
             "the store (Redis) is unreachable or its queue (redis.queue_max) is full: the "
             "event was not published, or not known to be; retry with the same "
             "Idempotency-Key");
        break;
    default:
        return lg_ctl_fail(e, 500, "internal_error", "unexpected hub answer %d (%s)", (int)s,
                    lg_publish_status_message(s));
    }
    return -1;
}

/*
 * Once the gateway drains (lg_control_drain), its subscribers' streams end: an event accepted
 * now would reach nobody and die with the process. True with 503 `draining` in e (nothing is
 * published; Retry-After sends the publisher to another node), counted and logged.
 */
static bool refuse_draining(const struct lg_control *c, struct lg_ctl_error *e)
{
    if (!atomic_load_explicit(&c->draining, memory_order_acquire))
        return false;
    LG_STAT_ADD(publishes_refused, 1);
    LG_STAT_ADD(publishes_refused_draining, 1);
    static struct lg_ratelimit rl;
    lg_log_ratelimited(&rl, 1000, LG_LOG_WARN,
                       "publish refused: the gateway is draining (shutting down)");
    lg_ctl_fail(e, 503, "draining",
                "the gateway is shutting down and its streams are ending: nothing was "
                "published; retry on another node");
    return true;
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
    return lg_ctl_reply_text(conn, 201, buf_text(&b), NULL, false);
}

/* ---- Overload pacing ----------------------------------------------------------------------- */

/*
 * The workers had no room for r's publish: hold the connection until they do (the handler
 * runs again on resume and retries), unless it has waited limits.publish_wait_ms already.
 * Return value: true if held (no response is queued now), false if the caller refuses.
 */
#define REMOTE_RETRY_MAX_MS 16

static bool hold_for_room(struct lg_control *c, struct MHD_Connection *conn,
                          struct lg_ctl_request *r, uint64_t generation)
{
    uint64_t now = lg_mono_ms();
    uint32_t wait_ms = lg_live(&c->live->publish_wait_ms);
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
    /* Over Redis the wait may be another node's (behind the topic): no room signal of this
     * node ends it, so the publish is tried again, soon at first, then less often (a quarter
     * of the time held so far, 1 to REMOTE_RETRY_MAX_MS). */
    uint64_t held = now - r->held_since_ms;
    uint32_t retry_ms = !lg_hub_remote(c->hub) ? 0
                        : held / 4 >= REMOTE_RETRY_MAX_MS ? REMOTE_RETRY_MAX_MS
                        : held / 4 > 1 ? (uint32_t)(held / 4) : 1;
    lg_pacer_hold(c->pacer, &r->hold, conn, r->host, generation, retry_ms,
                  r->held_since_ms + wait_ms);
    return true;
}

/* The request is answered now: account for the time it was held. */
static void end_hold(struct lg_ctl_request *r, bool refused)
{
    if (r->held_since_ms == 0)
        return;
    uint64_t waited_ms = lg_mono_ms() - r->held_since_ms;
    LG_STAT_ADD(publish_wait_ms_total, waited_ms);
    lg_histogram_observe(&lg_ctl_publish_wait, waited_ms * 1000000u);
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

/* ---- Remote store: answering once Redis did ----------------------------------------------- */

enum { REMOTE_IDLE, REMOTE_SUBMITTING, REMOTE_WAITING, REMOTE_DONE };

/* The store's thread: the append completed. */
static void on_remote_done(void *arg, enum lg_publish_status s,
                           const struct lg_publish_result *res)
{
    struct lg_ctl_request *r = arg;
    r->remote_status = s;
    if (s == LG_PUBLISH_OK)
        r->remote_res = *res;
    if (atomic_exchange(&r->remote_state, REMOTE_DONE) == REMOTE_WAITING)
        lg_resume_served(r->remote_conn, r->host);
}

/* Hand req to the remote store and suspend the connection until it answers (the handler runs
 * again then). Return value: true if it waits, false with *s the refusal given at once. */
static bool remote_submit(struct lg_control *c, struct MHD_Connection *conn,
                          struct lg_ctl_request *r, const struct lg_publish_req *req,
                          enum lg_publish_status *s)
{
    r->remote_conn = conn;
    atomic_store(&r->remote_state, REMOTE_SUBMITTING);
    *s = lg_hub_publish_async(c->hub, req, on_remote_done, r);
    if (*s != LG_PUBLISH_OK) {
        atomic_store(&r->remote_state, REMOTE_IDLE);
        return false;
    }
    MHD_suspend_connection(conn);
    int expected = REMOTE_SUBMITTING;
    if (!atomic_compare_exchange_strong(&r->remote_state, &expected, REMOTE_WAITING))
        lg_resume_served(conn, r->host); /* answered already, before the suspension */
    return true;
}

/* Whether r's remote publish has been answered and its answer not taken yet (it is given
 * whatever happened since: the store has the event). */
static bool remote_answered(struct lg_ctl_request *r)
{
    return atomic_load(&r->remote_state) == REMOTE_DONE;
}

/* The answer of the remote publish in flight, once it came. Return value: true if it did. */
static bool remote_take(struct lg_ctl_request *r, enum lg_publish_status *s,
                        struct lg_publish_result *res)
{
    if (atomic_load(&r->remote_state) != REMOTE_DONE)
        return false;
    *s = r->remote_status;
    *res = r->remote_res;
    atomic_store(&r->remote_state, REMOTE_IDLE);
    return true;
}

/* ---- POST /v1/topics/{topic}/events -------------------------------------------------------- */

static struct lg_raw_value query_value(struct MHD_Connection *conn, const char *name)
{
    struct lg_raw_value v = {0};
    v.present = MHD_lookup_connection_value_n(conn, MHD_GET_ARGUMENT_KIND, name, strlen(name),
                                              &v.text, &v.len) == MHD_YES;
    return v;
}

/* The parts of a single publish request, borrowed from MHD and r for the handler's duration. */
static struct lg_event_input event_input(struct MHD_Connection *conn, const char *url,
                                         const struct lg_ctl_request *r)
{
    size_t pre = strlen(r->route->prefix);
    struct lg_event_input in = {
        .topic_segment = url + pre,
        .topic_segment_len = strlen(url) - pre - strlen(r->route->suffix),
        .type = query_value(conn, "type"),
        .key = query_value(conn, "key"),
        .tags = query_value(conn, "tags"),
        .idempotency_key = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Idempotency-Key"),
        .content_type = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                                    MHD_HTTP_HEADER_CONTENT_TYPE),
        .body = r->body,
        .body_len = r->len,
    };
    return in;
}

int lg_ctl_handle_topic_event(struct lg_control *c, struct MHD_Connection *conn, const char *url,
                              struct lg_ctl_request *r)
{
    struct lg_ctl_error e = LG_CTL_ERROR_INIT;
    uint64_t started = lg_mono_ns();
    struct lg_event_input in = event_input(conn, url, r);
    struct lg_parsed_event ev;
    struct lg_publish_result res;
    int rc;
    enum lg_publish_status answer;
    if (lg_parse_event(&in, (uint32_t)r->limit, &ev, &e) != 0 ||
        !lg_ctl_may_publish(r, ev.req.topic, ev.req.topic_len, &e)) {
        rc = lg_ctl_reply_error(conn, &e, NULL);
    } else if (!remote_answered(r) && refuse_draining(c, &e)) {
        end_hold(r, false);
        rc = lg_ctl_reply_error(conn, &e, NULL);
    } else if (lg_hub_remote(c->hub)) {
        uint64_t generation = lg_pacer_generation(c->pacer);
        if (!remote_take(r, &answer, &res) && remote_submit(c, conn, r, &ev.req, &answer)) {
            rc = 0; /* answered when the store did */
        } else if (answer == LG_PUBLISH_WORKERS_BEHIND &&
                   hold_for_room(c, conn, r, generation)) {
            rc = 0; /* submitted again when resumed */
        } else if (answer == LG_PUBLISH_OK) {
            end_hold(r, false);
            rc = queue_result(conn, &ev.req, &res);
        } else {
            end_hold(r, answer == LG_PUBLISH_WORKERS_BEHIND);
            refusal(c, answer, ev.req.topic, ev.req.topic_len, &e);
            rc = lg_ctl_reply_error(conn, &e, NULL);
        }
    } else {
        uint64_t generation = lg_pacer_generation(c->pacer);
        enum lg_publish_status s = lg_hub_publish(c->hub, &ev.req, &res);
        if (s == LG_PUBLISH_WORKERS_BEHIND && hold_for_room(c, conn, r, generation)) {
            rc = 0; /* answered when resumed */
        } else if (s == LG_PUBLISH_OK) {
            end_hold(r, false);
            rc = queue_result(conn, &ev.req, &res);
        } else {
            end_hold(r, s == LG_PUBLISH_WORKERS_BEHIND);
            refusal(c, s, ev.req.topic, ev.req.topic_len, &e);
            rc = lg_ctl_reply_error(conn, &e, NULL);
        }
    }
    lg_parsed_event_release(&ev);
    if (r->held_since_ms == 0) /* answered, not held */
        lg_histogram_observe(&lg_ctl_publish_handling, lg_mono_ns() - started);
    return rc;
}

/* ---- POST /v1/publish --------------------------------------------------------------------- */

/* Say in e's message where the batch stopped (item `accepted`) and what was published. */
static void batch_stopped_at(size_t accepted, struct lg_ctl_error *e)
{
    size_t used = strlen(e->message);
    if (accepted == 0)
        snprintf(e->message + used, sizeof e->message - used,
                 " (at batch item 0; no item was published)");
    else
        snprintf(e->message + used, sizeof e->message - used,
                 " (at batch item %zu; items 0..%zu were published, see \"results\")",
                 accepted, accepted - 1);
    lg_ctl_error_make_safe(e);
    lg_debug("control: batch refused at item %zu: %s", accepted, e->message);
}

/* Why the batch stopped at item `accepted`, in e (the message says what was published). */
static void batch_refusal(const struct lg_control *c, const struct lg_parsed_batch *b,
                          size_t accepted, enum lg_publish_status s, struct lg_ctl_error *e)
{
    refusal(c, s, b->reqs[accepted].topic, b->reqs[accepted].topic_len, e);
    batch_stopped_at(accepted, e);
}

/* The batch answer: [{"error":..,"message":..,]"accepted":N,"results":[...]} (e = NULL when
 * every item was accepted). Return value: malloc'd text, or NULL (out of memory). */
static char *batch_answer(const struct lg_parsed_batch *b, const struct lg_publish_result *res,
                          size_t accepted, const struct lg_ctl_error *e)
{
    struct lg_buf body;
    lg_buf_init(&body);
    lg_buf_append_str(&body, "{");
    if (e != NULL) {
        lg_buf_append_str(&body, "\"error\":");
        lg_encode_json_string(&body, e->code, strlen(e->code));
        lg_buf_append_str(&body, ",\"message\":");
        lg_encode_json_string(&body, e->message, strlen(e->message));
        lg_buf_append_str(&body, ",");
    }
    lg_buf_append_str(&body, "\"accepted\":");
    lg_buf_append_u64(&body, accepted);
    lg_buf_append_str(&body, ",\"results\":[");
    for (size_t i = 0; i < accepted; i++) {
        if (i)
            lg_buf_append(&body, ",", 1);
        append_result(&body, &b->reqs[i], &res[i]);
    }
    lg_buf_append_str(&body, "]}");
    return buf_text(&body);
}

/* Publish the items not yet accepted, holding the request when the workers have no room.
 * Return value: as any handler; r->batch_done counts the items accepted so far. */
static int batch_publish(struct lg_control *c, struct MHD_Connection *conn,
                         struct lg_ctl_request *r, const struct lg_parsed_batch *b)
{
    struct lg_ctl_error e = LG_CTL_ERROR_INIT;
    if (r->batch_results == NULL)
        r->batch_results = calloc(b->n, sizeof *r->batch_results);
    struct lg_publish_result *res = r->batch_results;
    if (res == NULL) {
        lg_ctl_fail(&e, 503, "unavailable",
                    "out of memory publishing the batch; nothing was published");
        return lg_ctl_reply_error(conn, &e, NULL);
    }
    if (!remote_answered(r) && refuse_draining(c, &e)) {
        end_hold(r, false);
        batch_stopped_at(r->batch_done, &e);
        return lg_ctl_reply_text(conn, e.status, batch_answer(b, res, r->batch_done, &e), NULL,
                                 e.retry);
    }
    enum lg_publish_status s = LG_PUBLISH_OK;
    if (lg_hub_remote(c->hub)) {
        /* one item at a time, each answered by Redis before the next: a prefix is published */
        struct lg_publish_result one;
        uint64_t generation = lg_pacer_generation(c->pacer);
        if (remote_take(r, &s, &one) && s == LG_PUBLISH_OK) {
            res[r->batch_done++] = one;
            end_hold(r, false);
        }
        if (s == LG_PUBLISH_OK && r->batch_done < b->n &&
            remote_submit(c, conn, r, &b->reqs[r->batch_done], &s))
            return 0;
        if (s == LG_PUBLISH_WORKERS_BEHIND && hold_for_room(c, conn, r, generation))
            return 0;
        end_hold(r, s == LG_PUBLISH_WORKERS_BEHIND);
        if (r->batch_done == b->n)
            return lg_ctl_reply_text(conn, 200, batch_answer(b, res, b->n, NULL), NULL, false);
        batch_refusal(c, b, r->batch_done, s, &e);
        return lg_ctl_reply_text(conn, e.status, batch_answer(b, res, r->batch_done, &e), NULL,
                                 e.retry);
    }
    uint64_t generation = lg_pacer_generation(c->pacer);
    size_t done = r->batch_done;
    size_t accepted = done + lg_hub_publish_many(c->hub, b->reqs + done, b->n - done,
                                                 res + done, &s);
    r->batch_done = accepted;
    if (accepted > done && r->held_since_ms != 0) {
        end_hold(r, false); /* progress: limits.publish_wait_ms bounds each wait, not the batch */
        lg_ctl_request_progressed(c, conn);
    }
    if (accepted < b->n && s == LG_PUBLISH_WORKERS_BEHIND && hold_for_room(c, conn, r, generation))
        return 0; /* the rest is published when resumed */
    end_hold(r, accepted < b->n && s == LG_PUBLISH_WORKERS_BEHIND);
    if (accepted == b->n)
        return lg_ctl_reply_text(conn, 200, batch_answer(b, res, accepted, NULL), NULL, false);
    batch_refusal(c, b, accepted, s, &e);
    return lg_ctl_reply_text(conn, e.status, batch_answer(b, res, accepted, &e), NULL, e.retry);
}

static void free_parsed_batch(struct lg_parsed_batch *b)
{
    if (b == NULL)
        return;
    lg_parsed_batch_release(b);
    free(b);
}

/* r's batch, parsed and authorized the first time r is handled and kept in r: a held batch is
 * handled again at each resume, and parsing it anew each time cost more than publishing it.
 * Return value: the batch, or NULL with e filled (nothing was published). */
static struct lg_parsed_batch *parsed_batch(struct lg_control *c, struct lg_ctl_request *r,
                                            struct lg_ctl_error *e)
{
    if (r->batch != NULL)
        return r->batch;
    struct lg_parsed_batch *b = calloc(1, sizeof *b);
    if (b == NULL) {
        lg_ctl_fail(e, 503, "unavailable",
                    "out of memory reading the batch; nothing was published");
        return NULL;
    }
    if (lg_parse_batch(r->body, r->len, lg_live(&c->live->max_event_bytes), b, e) != 0) {
        free_parsed_batch(b);
        return NULL;
    }
    for (size_t i = 0; i < b->n; i++)
        if (!lg_ctl_may_publish(r, b->reqs[i].topic, b->reqs[i].topic_len, e)) {
            e->index = (long)i; /* all or nothing: no item is published */
            free_parsed_batch(b);
            return NULL;
        }
    r->batch = b;
    return b;
}

int lg_ctl_handle_batch(struct lg_control *c, struct MHD_Connection *conn, const char *url,
                        struct lg_ctl_request *r)
{
    (void)url;
    struct lg_ctl_error e = LG_CTL_ERROR_INIT;
    uint64_t started = lg_mono_ns();
    const struct lg_parsed_batch *b = parsed_batch(c, r, &e);
    int rc = b ? batch_publish(c, conn, r, b) : lg_ctl_reply_error(conn, &e, NULL);
    if (r->held_since_ms == 0) /* answered, not held */
        lg_histogram_observe(&lg_ctl_publish_handling, lg_mono_ns() - started);
    return rc;
}

void lg_ctl_publish_forget(struct lg_ctl_request *r)
{
    free_parsed_batch(r->batch);
    r->batch = NULL;
    free(r->batch_results);
    r->batch_results = NULL;
}
