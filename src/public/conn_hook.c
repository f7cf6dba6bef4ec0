/* conn_hook.c - see conn_hook.h: a subscribe waiting for the backend's subscribe hook. */
#include "conn_hook.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#include "config.h"
#include "conn.h"
#include "conn_report.h"
#include "subscribe_params.h"
#include "subscriber.h"
#include "topic.h"
#include "transport.h"

/* A connection's wait (conn.h hook_wait). */
struct lg_hook_wait {
    struct lg_hook_check *check;     /* the backend thread's or the worker's (hooks.h) */
    struct lg_subscribe_params *params;
    lg_conn_hook_done *done;
};

/* What the transport is told: an answer the backend could not give counts as
 * subscribe_hook.when_down says. */
static enum lg_hook_verdict effective(const struct lg_conn *c, enum lg_hook_verdict v)
{
    if (v == LG_HOOK_DOWN && c->home->cfg->subscribe_hook.when_down == LG_HOOK_DOWN_ALLOW)
        return LG_HOOK_ALLOW;
    return v;
}

static const char *now_reason(enum lg_hook_verdict v)
{
    return v == LG_HOOK_DENY ? "denied by the backend"
                             : "the backend cannot answer now (subscribe_hook)";
}

/* Whether a topic of p asks the hook. */
static bool hooked(const struct lg_conn *c, const struct lg_subscribe_params *p)
{
    for (size_t i = 0; i < p->topic_count; i++)
        if (lg_hooks_wants(c->home->hooks, p->topics[i]))
            return true;
    return false;
}

bool lg_conn_hook_wait(struct lg_conn *c, struct lg_subscribe_params **p,
                       lg_conn_hook_done *done, enum lg_hook_verdict *v, const char **reason)
{
    *v = LG_HOOK_ALLOW;
    *reason = NULL;
    if (!hooked(c, *p))
        return false;
    struct lg_hook_wait *wait = malloc(sizeof *wait);
    char address[64] = "";
    if (c->report.client_counted)
        lg_client_address_format(&c->report.client, address, sizeof address);
    else
        snprintf(address, sizeof address, "%s", c->report.peer);
    const char *topics[LG_CURSOR_MAX_ENTRIES];
    for (size_t i = 0; i < (*p)->topic_count; i++)
        topics[i] = (*p)->topics[i];
    struct lg_hook_check *check =
        wait ? lg_hooks_ask(c->home->hooks, c->home->index, c->grant, address, topics,
                            (*p)->topic_count, c, v)
             : NULL;
    if (!wait)
        *v = LG_HOOK_DOWN;
    if (!check) {
        free(wait);
        *v = effective(c, *v);
        *reason = now_reason(*v);
        return false;
    }
    *wait = (struct lg_hook_wait){.check = check, .params = *p, .done = done};
    *p = NULL;
    c->hook_wait = wait;
    if (c->transport == &lg_transport_http)
        lg_conn_set_transport(c, &lg_transport_hook_wait);
    return true;
}

bool lg_conn_hook_waiting(const struct lg_conn *c) { return c->hook_wait != NULL; }

void lg_conn_hook_refuse_http(struct lg_conn *c, enum lg_hook_verdict v, const char *reason)
{
    if (v == LG_HOOK_DENY)
        lg_conn_http_error(c, 403, "hook_denied", reason, NULL);
    else
        lg_conn_http_error(c, 503, "hook_unavailable", reason, "Retry-After: 1\r\n");
}

void lg_conn_hook_answered(struct lg_hooks *h, struct lg_hook_check *check)
{
    struct lg_conn *c = check->waiter;
    if (c) {
        struct lg_hook_wait *wait = c->hook_wait;
        c->hook_wait = NULL;
        enum lg_hook_verdict v = effective(c, check->verdict);
        const char *reason = check->reason;
        if (lg_conn_home_draining(c->home)) {
            v = LG_HOOK_DOWN;
            reason = "the gateway is shutting down";
        }
        if (c->transport == &lg_transport_hook_wait)
            lg_conn_set_transport(c, &lg_transport_http);
        wait->done(c, wait->params, v, reason);
        free(wait->params);
        free(wait);
    }
    lg_hooks_check_free(h, check);
}

/* {"a","b"} of the topics c holds. */
static char *topics_json(const struct lg_conn *c)
{
    json_t *a = json_array();
    for (const struct lg_subscription *s = c->sub.subs; a && s; s = s->next_of_owner)
        json_array_append_new(a, json_string(s->topic->name));
    char *text = a ? json_dumps(a, JSON_COMPACT) : NULL;
    json_decref(a);
    return text;
}

void lg_conn_hook_release(struct lg_conn *c)
{
    if (c->hook_wait) {
        c->hook_wait->check->waiter = NULL; /* its answer is dropped when it comes */
        free(c->hook_wait->params);
        free(c->hook_wait);
        c->hook_wait = NULL;
    }
    if (!c->home->cfg->webhooks.url[0] || !lg_conn_is_client(c) || !c->sub.ops)
        return;
    char address[64] = "";
    if (c->report.client_counted)
        lg_client_address_format(&c->report.client, address, sizeof address);
    else
        snprintf(address, sizeof address, "%s", c->report.peer);
    char *topics = topics_json(c);
    lg_hooks_disconnected(c->home->hooks, c->report.id, c->transport->report_name, address, c->grant,
                          topics ? topics : "[]", lg_conn_close_reason(c));
    free(topics);
}

/* ---- The table of a raw connection that waits ------------------------------------------- */

/* What the client sends meanwhile is its next request: buffered, read after the answer. */
static int wait_receive(struct lg_conn *c, const char *in, size_t len)
{
    if (!c->closing)
        lg_conn_take_input(c, in, len);
    return 0;
}

/* Shutdown: the answer, due within subscribe_hook.timeout_ms, is then a 503. */
static void wait_drain(struct lg_conn *c, const struct lg_drain *how)
{
    (void)c, (void)how;
}

const struct lg_transport lg_transport_hook_wait = {
    .name = "subscribe hook wait",
    .receive = wait_receive,
    .drain = wait_drain,
};
