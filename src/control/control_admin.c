/*
 * control_admin.c - the admin API of the control port (docs/protocol.md, "Admin API"):
 *   GET    /v1/topics?prefix=&limit=&after=   topics in name order, paged by name
 *   GET    /v1/topics/{topic}                 one topic
 *   GET    /v1/topics/{topic}/events?since=&limit=   a page of its history, for backends
 *   DELETE /v1/topics/{topic}                 subscribers get `end`, history dropped
 *   GET    /v1/clients?topic=&limit=&after=   clients in id order, paged by id
 *   DELETE /v1/clients/{id}?reason=           disconnect one client with a reason it sees
 * Topics come from the hub's registry (hub_admin.h, short locks). Clients live on the worker
 * threads, so their handlers post a call to every worker (worker_call.h) and suspend the
 * connection until the call's own completion (run by the worker whose answer was the last)
 * resumes it, or the once-a-second sweep finds LG_ADMIN_CALL_TIMEOUT_MS passed (then 503; the
 * call outlives the request by its reference count). Neither touches the publish pacer.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <microhttpd.h>

#include "clock.h"
#include "encode.h"
#include "control_internal.h"
#include "control_reply.h"
#include "cursor.h"
#include "event.h"
#include "http_request.h"
#include "hub.h"
#include "hub_admin.h"
#include "presence.h"
#include "auth.h"
#include "publish_pacer.h"
#include "render.h"
#include "topic_name.h"
#include "worker_call.h"

#define LG_ADMIN_CALL_TIMEOUT_MS 2000u
#define LG_ADMIN_PAGE_DEFAULT 100u
/* A history page holds at most this many bytes of events (event->size) after its first. */
#define LG_HISTORY_PAGE_BYTES (4u << 20)
#define LG_HISTORY_PAGE_DEFAULT 100u
#define LG_HISTORY_PAGE_MAX 1000u

/* ---- Request parts ------------------------------------------------------------------------- */

/* Query parameter name, percent-decoded into out (cap bytes); absent = "". */
static int query_text(struct MHD_Connection *conn, const char *name, char *out, size_t cap,
                      struct lg_ctl_error *e)
{
    const char *raw = NULL;
    size_t len = 0;
    out[0] = '\0';
    if (MHD_lookup_connection_value_n(conn, MHD_GET_ARGUMENT_KIND, name, strlen(name), &raw,
                                      &len) != MHD_YES || raw == NULL)
        return 0;
    int n = lg_percent_decode(raw, len, out, cap, true, NULL);
    if (n < 0 || memchr(out, '\0', (size_t)n))
        return lg_ctl_fail(e, 400, "bad_request", "query parameter %s: %s", name,
                           n == -2 ? "too long" : "malformed percent-escape or NUL byte");
    return 0;
}

/* Query parameter name as a decimal integer from min to max: digits only (strtoull would take
 * "-1" as 2^64 - 1, "+5" and " 5"); absent = *out left as it is. */
static int query_uint(struct MHD_Connection *conn, const char *name, uint64_t min, uint64_t max,
                      uint64_t *out, struct lg_ctl_error *e)
{
    char text[24];
    if (query_text(conn, name, text, sizeof text, e) != 0)
        return -1;
    if (!text[0])
        return 0;
    uint64_t v = 0;
    bool ok = strspn(text, "0123456789") == strlen(text) && strlen(text) <= 20;
    for (const char *d = text; ok && *d; d++) {
        ok = v <= (UINT64_MAX - (uint64_t)(*d - '0')) / 10;
        v = v * 10 + (uint64_t)(*d - '0');
    }
    if (!ok || v < min || v > max)
        return lg_ctl_fail(e, 400, "invalid_parameter",
                           "query parameter %s must be an integer from %" PRIu64 " to %" PRIu64,
                           name, min, max);
    *out = v;
    return 0;
}

static int query_limit(struct MHD_Connection *conn, uint32_t *limit, struct lg_ctl_error *e)
{
    uint64_t v = LG_ADMIN_PAGE_DEFAULT;
    if (query_uint(conn, "limit", 1, LG_ADMIN_PAGE_MAX, &v, e) != 0)
        return -1;
    *limit = (uint32_t)v;
    return 0;
}

/* The {name} after prefix in url, percent-decoded. */
static int path_name(const char *url, const char *prefix, char *out, size_t cap,
                     struct lg_ctl_error *e)
{
    const char *seg = url + strlen(prefix);
    int n = lg_percent_decode(seg, strlen(seg), out, cap, false, NULL);
    if (n <= 0 || memchr(out, '\0', (size_t)n))
        return lg_ctl_fail(e, 400, "bad_request", "the path segment after %s is %s", prefix,
                           n == 0 ? "empty" : "malformed");
    return 0;
}

/* ---- Topics ---------------------------------------------------------------------------------- */

static json_t *topic_json(const struct lg_topic_info *t)
{
    char epoch[9], last_id[LG_CURSOR_ENTRY_MAX];
    snprintf(epoch, sizeof epoch, "%08x", t->epoch);
    lg_cursor_format_entry(last_id, t->name, t->epoch, t->last_seq);
    json_t *o = json_pack("{s:s,s:s,s:I,s:o,s:I,s:I}", "name", t->name, "epoch", epoch,
                          "last_seq", (json_int_t)t->last_seq, "last_id",
                          t->position_known ? json_string(last_id) : json_null(),
                          "subscribers", (json_int_t)t->subscribers, "publish_rate",
                          (json_int_t)t->publish_rate);
    if (o && t->retained_known) {
        json_object_set_new(o, "retained_events", json_integer((json_int_t)t->retained_events));
        json_object_set_new(o, "retained_bytes", json_integer((json_int_t)t->retained_bytes));
    }
    return o;
}

int lg_ctl_handle_topics(struct lg_control *c, struct MHD_Connection *conn, const char *url,
                         struct lg_ctl_request *r)
{
    (void)url, (void)r;
    struct lg_ctl_error e = LG_CTL_ERROR_INIT;
    char prefix[LG_TOPIC_NAME_MAX + 1], after[LG_TOPIC_NAME_MAX + 1];
    uint32_t limit;
    if (query_text(conn, "prefix", prefix, sizeof prefix, &e) != 0 ||
        query_text(conn, "after", after, sizeof after, &e) != 0 ||
        query_limit(conn, &limit, &e) != 0)
        return lg_ctl_reply_error(conn, &e, NULL);
    struct lg_topic_info *infos = malloc(limit * sizeof *infos);
    bool more = false;
    int n = infos ? lg_hub_list_topics(c->hub, prefix, after, limit, NULL, NULL, infos, &more) : -1;
    if (n < 0) {
        free(infos);
        lg_ctl_fail(&e, 503, "unavailable", "out of memory listing topics; retry");
        return lg_ctl_reply_error(conn, &e, NULL);
    }
    json_t *list = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(list, topic_json(&infos[i]));
    json_t *next = more && n > 0 ? json_string(infos[n - 1].name) : json_null();
    free(infos);
    return lg_ctl_reply_json(conn, 200, json_pack("{s:o,s:o}", "topics", list, "next", next));
}

static int no_topic(struct MHD_Connection *conn, const char *name)
{
    struct lg_ctl_error e = LG_CTL_ERROR_INIT;
    lg_ctl_fail(&e, 404, "not_found", "no topic \"%.128s\"", name);
    return lg_ctl_reply_error(conn, &e, NULL);
}

int lg_ctl_handle_topic_get(struct lg_control *c, struct MHD_Connection *conn, const char *url,
                            struct lg_ctl_request *r)
{
    (void)r;
    struct lg_ctl_error e = LG_CTL_ERROR_INIT;
    char name[LG_TOPIC_NAME_MAX * 3 + 1];
    struct lg_topic_info info;
    if (path_name(url, "/v1/topics/", name, sizeof name, &e) != 0)
        return lg_ctl_reply_error(conn, &e, NULL);
    if (lg_hub_topic_info(c->hub, name, strlen(name), &info) != 0)
        return no_topic(conn, name);
    return lg_ctl_reply_json(conn, 200, topic_json(&info));
}

/* ---- Presence --------------------------------------------------------------------------------- */

/* {"topic":T,"members":[ids after `after`, sorted],"next":last id|null,"total":N,
 * "unlisted":U}: a page of who listens to a presence topic. */
static json_t *presence_page(const char *topic, const struct lg_presence_list *l,
                             const char *after, uint32_t limit)
{
    size_t from = lg_presence_list_after(l, after[0] ? after : NULL), n = 0;
    json_t *members = json_array();
    for (size_t i = from; i < l->count && n < limit; i++, n++)
        json_array_append_new(members, json_string(l->ids[i]));
    bool more = from + n < l->count;
    return json_pack("{s:s,s:o,s:o,s:I,s:I}", "topic", topic, "members", members, "next",
                     more ? json_string(l->ids[from + n - 1]) : json_null(), "total",
                     (json_int_t)l->count, "unlisted", (json_int_t)l->unlisted);
}

int lg_ctl_handle_topic_presence(struct lg_control *c, struct MHD_Connection *conn,
                                 const char *url, struct lg_ctl_request *r)
{
    (void)r;
    struct lg_ctl_error e = LG_CTL_ERROR_INIT;
    char name[LG_TOPIC_NAME_MAX * 3 + 1], after[LG_GRANT_SUB_MAX + 1];
    uint32_t limit;
    if (path_name(url, "/v1/topics/", name, sizeof name, &e) != 0 ||
        query_text(conn, "after", after, sizeof after, &e) != 0 ||
        query_limit(conn, &limit, &e) != 0)
        return lg_ctl_reply_error(conn, &e, NULL);
    name[strlen(name) - strlen("/presence")] = '\0';
    struct lg_topic *t = lg_hub_find_topic(c->hub, name, strlen(name));
    if (!t)
        return no_topic(conn, name);
    struct lg_presence_list list;
    bool on = lg_hub_presence_on(t);
    int rc = on ? lg_hub_presence_copy(c->hub, t, &list) : 0;
    lg_hub_topic_done(c->hub, t);
    if (!on) {
        lg_ctl_fail(&e, 404, "no_presence", "topic \"%.128s\" keeps no presence (no topic_rules "
                    "entry with \"presence\": true matches it)", name);
        return lg_ctl_reply_error(conn, &e, NULL);
    }
    if (rc != 0) {
        lg_ctl_fail(&e, 503, "unavailable", "out of memory listing members; retry");
        return lg_ctl_reply_error(conn, &e, NULL);
    }
    lg_presence_list_sort(&list);
    json_t *page = presence_page(name, &list, after, limit);
    lg_presence_list_release(&list);
    return lg_ctl_reply_json(conn, 200, page);
}

/* ---- History ---------------------------------------------------------------------------------- */

/* The since parameter's entry for topic (a cursor may name other topics too) into *since
 * (pointing into cursor), NULL when absent or empty. */
static int query_since(struct MHD_Connection *conn, const char *topic, struct lg_cursor *cursor,
                       const struct lg_cursor_entry **since, struct lg_ctl_error *e)
{
    char text[LG_CURSOR_MAX_ENTRIES * LG_CURSOR_ENTRY_MAX], why[192];
    *since = NULL;
    if (query_text(conn, "since", text, sizeof text, e) != 0)
        return -1;
    if (!text[0])
        return 0;
    if (lg_cursor_parse(text, strlen(text), cursor, why, sizeof why) != 0)
        return lg_ctl_fail(e, 400, "invalid_cursor", "malformed cursor: %s", why);
    *since = lg_cursor_find(cursor, topic);
    if (*since == NULL)
        return lg_ctl_fail(e, 400, "invalid_cursor", "the cursor does not name topic \"%.128s\"",
                           topic);
    return 0;
}

/* {"topic":T,"events":[notice?, events...],"next":"T@E:N","more":bool}: the events are the
 * objects WebSocket and long-poll carry; a gap or reset notice comes first, as there. */
static char *history_body(const char *topic, const struct lg_replay *page)
{
    struct lg_buf b;
    lg_buf_init(&b);
    lg_buf_append_str(&b, "{\"topic\":");
    lg_encode_json_string(&b, topic, strlen(topic));
    lg_buf_append_str(&b, ",\"events\":[");
    struct lg_notice n = {.reset = page->reset, .topic = topic, .topic_len = strlen(topic),
                          .epoch = page->epoch, .from = page->gap_from, .to = page->gap_to,
                          .seq = page->reset ? page->position : page->gap_to};
    if (page->reset || page->gap_from) {
        lg_buf_append_str(&b, page->reset ? "{\"type\":\"reset\",\"v\":1,"
                                          : "{\"type\":\"gap\",\"v\":1,");
        lg_notice_json_fields(&b, &n);
    }
    for (size_t i = 0; i < page->count; i++) {
        if (i || page->reset || page->gap_from)
            lg_buf_append_str(&b, ",");
        lg_buf_append(&b, page->events[i]->json, page->events[i]->json_len);
    }
    char next[LG_CURSOR_ENTRY_MAX];
    lg_buf_append_str(&b, "],\"next\":\"");
    lg_buf_append(&b, next, lg_cursor_format_entry(next, topic, page->epoch, page->position));
    lg_buf_appendf(&b, "\",\"more\":%s}", page->more ? "true" : "false");
    if (b.oom || b.data == NULL) {
        lg_buf_release(&b);
        return NULL;
    }
    return b.data; /* an lg_buf stays NUL-terminated; the reply frees it */
}

int lg_ctl_handle_topic_history(struct lg_control *c, struct MHD_Connection *conn,
                                const char *url, struct lg_ctl_request *r)
{
    (void)r;
    struct lg_ctl_error e = LG_CTL_ERROR_INIT;
    char name[LG_TOPIC_NAME_MAX * 3 + 1], path[sizeof name + 16];
    struct lg_cursor *cursor = malloc(sizeof *cursor);
    const struct lg_cursor_entry *since = NULL;
    uint64_t limit = LG_HISTORY_PAGE_DEFAULT;
    size_t path_len = strlen(url) - strlen("/events");
    snprintf(path, sizeof path, "%.*s", (int)path_len, url);
    int rc = -1;
    if (cursor == NULL)
        lg_ctl_fail(&e, 503, "unavailable", "out of memory; retry");
    else if (path_len >= sizeof path - 1)
        lg_ctl_fail(&e, 404, "not_found", "no such topic: the name is too long");
    else if (path_name(path, "/v1/topics/", name, sizeof name, &e) == 0 &&
             query_uint(conn, "limit", 1, LG_HISTORY_PAGE_MAX, &limit, &e) == 0)
        rc = query_since(conn, name, cursor, &since, &e);
    if (rc != 0) {
        free(cursor);
        return lg_ctl_reply_error(conn, &e, NULL);
    }
    struct lg_replay page;
    enum lg_history_status status = lg_hub_read_history(c->hub, name, strlen(name), since, limit,
                                                        LG_HISTORY_PAGE_BYTES, &page);
    free(cursor);
    char *body = status == LG_HISTORY_OK ? history_body(name, &page) : NULL;
    lg_replay_release(&page);
    switch (status) {
    case LG_HISTORY_NO_TOPIC:
        return no_topic(conn, name);
    case LG_HISTORY_LOADING:
        lg_ctl_fail(&e, 503, "unavailable", "topic \"%.128s\": this node is loading its history "
                    "from Redis (or catching up to the cursor); retry", name);
        return lg_ctl_reply_error(conn, &e, NULL);
    case LG_HISTORY_AHEAD:
        lg_ctl_fail(&e, 400, "invalid_cursor", "the cursor is ahead of the topic's newest event");
        return lg_ctl_reply_error(conn, &e, NULL);
    default:
        if (body == NULL) {
            lg_ctl_fail(&e, 503, "unavailable", "out of memory reading history; retry");
            return lg_ctl_reply_error(conn, &e, NULL);
        }
        return lg_ctl_reply_text(conn, 200, body, NULL, false);
    }
}

/* ---- Waiting for the workers ------------------------------------------------------------------ */

/* Resume r, which the caller took off admin_waiting (so no one else resumes it). */
static void resume_taken(struct lg_ctl_request *r, bool expired)
{
    r->call_expired = expired;
    lg_resume_served(r->conn, r->host);
}

/* The call's completion (worker thread): resume the request waiting for it, if it still is. */
static void call_answered(void *arg, struct lg_call *call)
{
    struct lg_control *c = arg;
    struct lg_ctl_request *found = NULL;
    pthread_mutex_lock(&c->admin_lock);
    for (struct lg_dlink *l = c->admin_waiting.first; l && !found; l = l->next) {
        struct lg_ctl_request *r = lg_dlist_entry(l, struct lg_ctl_request, admin_link);
        if (r->call == call)
            found = r;
    }
    if (found)
        lg_dlist_remove(&c->admin_waiting, &found->admin_link);
    pthread_mutex_unlock(&c->admin_lock);
    if (found)
        resume_taken(found, false);
}

/* Take the waiting requests that pass `keep` off the list, then resume them as expired. */
static void resume_waiting(struct lg_control *c, uint64_t now_ms, bool all)
{
    struct lg_dlist taken = {0};
    pthread_mutex_lock(&c->admin_lock);
    for (struct lg_dlink *l = c->admin_waiting.first, *next; l; l = next) {
        next = l->next;
        struct lg_ctl_request *r = lg_dlist_entry(l, struct lg_ctl_request, admin_link);
        if (all || now_ms >= r->call_deadline_ms) {
            lg_dlist_remove(&c->admin_waiting, l);
            lg_dlist_push_tail(&taken, l);
        }
    }
    pthread_mutex_unlock(&c->admin_lock);
    for (struct lg_dlink *l = taken.first, *next; l; l = next) {
        next = l->next; /* read first: once resumed, the request is its daemon's again */
        resume_taken(lg_dlist_entry(l, struct lg_ctl_request, admin_link), true);
    }
}

void lg_ctl_admin_sweep(struct lg_control *c, uint64_t now_ms)
{
    resume_waiting(c, now_ms, false);
}

void lg_ctl_admin_release(struct lg_control *c)
{
    resume_waiting(c, 0, true);
}

void lg_ctl_admin_forget(struct lg_control *c, struct lg_ctl_request *r)
{
    pthread_mutex_lock(&c->admin_lock);
    lg_dlist_remove(&c->admin_waiting, &r->admin_link);
    pthread_mutex_unlock(&c->admin_lock);
}

/* Where an admin request stands once await_workers() returns. */
enum call_wait {
    CALL_COMPLETE,     /* every worker answered: answer the request now */
    CALL_HELD,         /* the connection is suspended: the handler runs again on resume */
    CALL_TIMED_OUT,    /* the workers did not answer in time: the 503 saying so is queued */
    CALL_UNANSWERABLE, /* timed out, and not even that 503 could be queued */
};

/* Post r->call (first time), then suspend the connection until every worker answered. */
static enum call_wait await_workers(struct lg_control *c, struct MHD_Connection *conn,
                                    struct lg_ctl_request *r)
{
    if (r->call_deadline_ms == 0) {
        r->call_deadline_ms = lg_mono_ms() + LG_ADMIN_CALL_TIMEOUT_MS;
        r->call->answered = call_answered;
        r->call->answered_arg = c;
        lg_hub_post_call(c->hub, r->call);
    }
    if (lg_call_complete(r->call))
        return CALL_COMPLETE;
    if (r->call_expired) {
        struct lg_ctl_error e = LG_CTL_ERROR_INIT;
        lg_ctl_fail(&e, 503, "unavailable",
                    "the workers did not answer within %u ms (or the gateway is stopping); retry",
                    LG_ADMIN_CALL_TIMEOUT_MS);
        return lg_ctl_reply_error(conn, &e, NULL) == 0 ? CALL_TIMED_OUT : CALL_UNANSWERABLE;
    }
    MHD_suspend_connection(conn);
    r->conn = conn;
    pthread_mutex_lock(&c->admin_lock);
    /* The last answer may have come since the look above, and found nothing to resume. */
    bool answered = lg_call_complete(r->call);
    if (!answered)
        lg_dlist_push_tail(&c->admin_waiting, &r->admin_link);
    pthread_mutex_unlock(&c->admin_lock);
    if (answered)
        lg_resume_served(conn, r->host);
    return CALL_HELD;
}

/* The handler's return value while a call is not complete: held or answered is done (0); a
 * request that could not be answered fails (-1: libmicrohttpd closes the connection). */
static int handler_result(enum call_wait waited) { return waited == CALL_UNANSWERABLE ? -1 : 0; }

static int call_oom(struct MHD_Connection *conn)
{
    struct lg_ctl_error e = LG_CTL_ERROR_INIT;
    lg_ctl_fail(&e, 503, "unavailable", "out of memory; retry");
    return lg_ctl_reply_error(conn, &e, NULL);
}

int lg_ctl_handle_topic_delete(struct lg_control *c, struct MHD_Connection *conn,
                               const char *url, struct lg_ctl_request *r)
{
    struct lg_ctl_error e = LG_CTL_ERROR_INIT;
    char name[LG_TOPIC_NAME_MAX * 3 + 1];
    if (r->call == NULL) {
        if (path_name(url, "/v1/topics/", name, sizeof name, &e) != 0)
            return lg_ctl_reply_error(conn, &e, NULL);
        if (name[0] == '$') { /* the gateway's own ($sys/stats): refused as publishing is */
            lg_ctl_fail(&e, 422, "invalid_topic", "topic \"%.128s\": names starting with '$' "
                        "are reserved for the gateway and cannot be deleted", name);
            return lg_ctl_reply_error(conn, &e, NULL);
        }
        r->call = lg_call_new(LG_CALL_END_TOPIC);
        if (!r->call)
            return call_oom(conn);
        snprintf(r->call->topic, sizeof r->call->topic, "%.128s", name);
        r->call->ended = lg_hub_delete_topic(c->hub, name, strlen(name));
        if (!r->call->ended)
            return no_topic(conn, name);
    }
    enum call_wait waited = await_workers(c, conn, r);
    if (waited != CALL_COMPLETE)
        return handler_result(waited);
    json_int_t told = 0;
    for (uint32_t w = 0; w < LG_MAX_WORKERS; w++)
        told += r->call->found[w];
    return lg_ctl_reply_json(conn, 200, json_pack("{s:s,s:b,s:I}", "topic", r->call->topic,
                                                  "deleted", 1, "subscribers_ended", told));
}

/* ---- Clients ----------------------------------------------------------------------------------- */

static int by_id(const void *a, const void *b)
{
    json_int_t x = json_integer_value(json_object_get(*(json_t *const *)a, "id"));
    json_int_t y = json_integer_value(json_object_get(*(json_t *const *)b, "id"));
    return x < y ? -1 : x > y;
}

/* Every worker's page merged in id order, cut at the limit. */
static json_t *merged_clients(const struct lg_call *call, json_t **next)
{
    size_t total = 0;
    for (uint32_t w = 0; w < LG_MAX_WORKERS; w++)
        total += call->results[w] ? json_array_size(call->results[w]) : 0;
    json_t **all = malloc((total + 1) * sizeof *all);
    json_t *list = json_array();
    if (!all || !list) {
        free(all);
        json_decref(list);
        return NULL;
    }
    size_t n = 0;
    for (uint32_t w = 0; w < LG_MAX_WORKERS; w++)
        for (size_t i = 0; call->results[w] && i < json_array_size(call->results[w]); i++)
            all[n++] = json_array_get(call->results[w], i);
    qsort(all, n, sizeof *all, by_id);
    size_t shown = n < call->limit ? n : call->limit;
    for (size_t i = 0; i < shown; i++)
        json_array_append(list, all[i]);
    *next = n > shown ? json_integer(json_integer_value(json_object_get(all[shown - 1], "id")))
                      : json_null();
    free(all);
    return list;
}

int lg_ctl_handle_clients(struct lg_control *c, struct MHD_Connection *conn, const char *url,
                          struct lg_ctl_request *r)
{
    (void)url;
    struct lg_ctl_error e = LG_CTL_ERROR_INIT;
    if (r->call == NULL) {
        char topic[LG_TOPIC_NAME_MAX + 1];
        uint32_t limit;
        uint64_t after_id = 0;
        if (query_text(conn, "topic", topic, sizeof topic, &e) != 0 ||
            query_uint(conn, "after", 0, UINT64_MAX, &after_id, &e) != 0 ||
            query_limit(conn, &limit, &e) != 0)
            return lg_ctl_reply_error(conn, &e, NULL);
        r->call = lg_call_new(LG_CALL_LIST_CLIENTS);
        if (!r->call)
            return call_oom(conn);
        snprintf(r->call->topic, sizeof r->call->topic, "%.128s", topic);
        r->call->after_id = after_id;
        r->call->limit = limit;
    }
    enum call_wait waited = await_workers(c, conn, r);
    if (waited != CALL_COMPLETE)
        return handler_result(waited);
    json_t *next = NULL;
    json_t *list = merged_clients(r->call, &next);
    if (!list)
        return call_oom(conn);
    return lg_ctl_reply_json(conn, 200, json_pack("{s:o,s:o}", "clients", list, "next", next));
}

/*
 * in as UTF-8 into out (cap bytes, NUL-terminated): each byte that does not start a well-formed
 * sequence becomes U+FFFD, and the text is cut at a character boundary to fit. A kick's reason
 * is a WebSocket close reason (UTF-8, at most 123 bytes: RFC 6455 5.5, 7.4) and a JSON string.
 */
static void utf8_sanitized(const char *in, char *out, size_t cap)
{
    static const char replacement[] = "\xEF\xBF\xBD";
    size_t w = 0;
    for (size_t i = 0; in[i];) {
        unsigned char lead = (unsigned char)in[i];
        size_t n = lead < 0x80 ? 1 : lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : 2;
        const char *take = in + i;
        if (strnlen(in + i, n) < n || !lg_utf8_valid(in + i, n)) {
            take = replacement;
            n = 3;
            i++;
        } else {
            i += n;
        }
        if (w + n >= cap)
            break;
        memcpy(out + w, take, n);
        w += n;
    }
    out[w] = '\0';
}

int lg_ctl_handle_client_delete(struct lg_control *c, struct MHD_Connection *conn,
                                const char *url, struct lg_ctl_request *r)
{
    struct lg_ctl_error e = LG_CTL_ERROR_INIT;
    if (r->call == NULL) {
        char id_text[32], *end;
        if (path_name(url, "/v1/clients/", id_text, sizeof id_text, &e) != 0)
            return lg_ctl_reply_error(conn, &e, NULL);
        unsigned long long id = strtoull(id_text, &end, 10);
        if (*end || id == 0) {
            lg_ctl_fail(&e, 404, "not_found", "no client \"%.32s\" (ids are positive integers)",
                        id_text);
            return lg_ctl_reply_error(conn, &e, NULL);
        }
        r->call = lg_call_new(LG_CALL_KICK);
        if (!r->call)
            return call_oom(conn);
        r->call->client_id = id;
        char reason[LG_CALL_REASON_MAX + 1];
        if (query_text(conn, "reason", reason, sizeof reason, &e) != 0)
            return lg_ctl_reply_error(conn, &e, NULL);
        utf8_sanitized(reason, r->call->reason, sizeof r->call->reason);
        if (!r->call->reason[0])
            snprintf(r->call->reason, sizeof r->call->reason, "disconnected by the operator");
    }
    enum call_wait waited = await_workers(c, conn, r);
    if (waited != CALL_COMPLETE)
        return handler_result(waited);
    uint32_t found = 0;
    for (uint32_t w = 0; w < LG_MAX_WORKERS; w++)
        found += r->call->found[w];
    if (!found) {
        lg_ctl_fail(&e, 404, "not_found", "no client %" PRIu64 " is connected",
                    r->call->client_id);
        return lg_ctl_reply_error(conn, &e, NULL);
    }
    return lg_ctl_reply_json(conn, 200, json_pack("{s:I,s:b,s:s}", "id",
                                                  (json_int_t)r->call->client_id, "kicked", 1,
                                                  "reason", r->call->reason));
}
