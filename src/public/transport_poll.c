/*
 * transport_poll.c - HTTP long-poll on a raw connection: the request is answered at once when
 * something is owed (or its timeout is 0, or the gateway drains), else held until an event,
 * its deadline (the lws timer) or the drain; the answer is one JSON batch, after which the
 * connection is a plain keep-alive HTTP connection again (lg_transport_http).
 */
#include <stdint.h>
#include <stdlib.h>

#include "config.h"
#include "conn.h"
#include "conn_auth.h"
#include "conn_hook.h"
#include "encode.h"
#include "event.h"
#include "stats.h"
#include "subscribe_params.h"
#include "subscriber.h"
#include "transport.h"

#define LOAD_WAIT_MS 1000

/* ---- The request and its answer ---------------------------------------------------------- */

/* Append the poll's answer to out: its subscriber renders its batch and is released, and c
 * is a plain keep-alive connection again (closing after the answer when it is not). Also how
 * the sweep answers a held poll events came for, in its batch of writes (batched_writes;
 * without batches it asks for the writable callback). Return value: 0, or -1 if memory ran
 * out. */
static int take_answer(struct lg_conn *c, struct lg_buf *out)
{
    struct lg_buf body;
    lg_buf_init(&body);
    lg_subscriber_render_poll(&c->sub, &body, c->home->cfg->poll.max_batch);
    lg_subscriber_release(&c->sub, c->home->hub);
    if (c->transport == &lg_transport_poll)
        lg_conn_deadline_cancel(c);
    lg_conn_set_transport(c, &lg_transport_http);
    if (lg_conn_home_draining(c->home))
        c->http.keep_alive = false;
    lg_buf_appendf(out,
                   "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                   "Cache-Control: no-store\r\nContent-Length: %zu\r\n%s%s\r\n",
                   body.len, c->http.cors ? c->http.cors : "", c->http.keep_alive ? "" : "Connection: close\r\n");
    lg_buf_append(out, body.data, body.len);
    bool oom = body.oom || out->oom;
    lg_buf_release(&body);
    c->closing = !c->http.keep_alive;
    return oom ? -1 : 0;
}

/* Return value: 0, or -1 if the answer could not be made or the socket failed. */
static int answer_poll(struct lg_conn *c)
{
    if (take_answer(c, &c->out) != 0)
        return -1; /* out of memory: a cut answer would be worse than a closed connection */
    return lg_conn_send_answer(c);
}

/* The answer could not be handed to the socket: lws closes it on its next pass. */
static void answer_poll_or_close(struct lg_conn *c)
{
    if (answer_poll(c) != 0) {
        c->report.close_reason = "error";
        lg_conn_close_soon(c);
    }
}

/* Subscribe c to p's topics (authorized), then answer or hold the poll. */
static void poll_start(struct lg_conn *c, const struct lg_subscribe_params *p)
{
    const struct lg_config *cfg = c->home->cfg;
    if (lg_conn_http_subscribe(c, p, true, cfg->poll.max_batch) != 0)
        return;
    const struct lg_live_limits *live = c->home->live;
    uint64_t timeout_ms = p->has_timeout ? p->timeout_ms : lg_live(&live->poll_default_timeout_ms);
    uint32_t max_timeout_ms = lg_live(&live->poll_max_timeout_ms);
    if (timeout_ms > max_timeout_ms)
        timeout_ms = max_timeout_ms;
    if (timeout_ms > lg_conn_token_ms_left(c))
        timeout_ms = lg_conn_token_ms_left(c); /* a held poll does not outlive its token */
    /* A topic whose Redis stream is still loading has an unknown replay: even a poll that
     * asks for no wait holds until it is known (its first event), at most LOAD_WAIT_MS. */
    bool loading = lg_subscriber_pending(&c->sub);
    if ((timeout_ms == 0 && !loading) || lg_subscriber_has_output(&c->sub) ||
        lg_conn_home_draining(c->home)) {
        answer_poll_or_close(c);
        return;
    }
    if (timeout_ms == 0)
        timeout_ms = LOAD_WAIT_MS;
    lg_conn_set_transport(c, &lg_transport_poll); /* held */
    lg_conn_deadline_in(c, (uint32_t)timeout_ms);
}

/* The subscribe hook answered (conn_hook.h). */
static void poll_hook_answered(struct lg_conn *c, struct lg_subscribe_params *p,
                               enum lg_hook_verdict v, const char *reason)
{
    if (v == LG_HOOK_ALLOW)
        poll_start(c, p);
    else
        lg_conn_hook_refuse_http(c, v, reason);
}

static void poll_serve(struct lg_conn *c, const char *buf, const struct lg_http_request *req)
{
    struct lg_subscribe_params *p = malloc(sizeof *p);
    if (!p) {
        lg_conn_http_error(c, 503, "unavailable", "out of memory", "Retry-After: 1\r\n");
        return;
    }
    lg_subscriber_init(&c->sub, &lg_poll_render, c->home->index, &c->home->cfg->client_queue);
    if (lg_conn_http_params(c, buf, req, "since", p) == 0 &&
        lg_conn_authorize_http(c, buf, req, p) == 0) {
        enum lg_hook_verdict v = LG_HOOK_ALLOW;
        const char *reason = NULL;
        if (c->home->hooks && lg_conn_hook_wait(c, &p, poll_hook_answered, &v, &reason))
            return; /* p is the wait's */
        poll_hook_answered(c, p, v, reason);
    }
    free(p);
}

/* ---- A held poll ------------------------------------------------------------------------- */

/* The socket can take the answer (lws asked for once events came): the answer goes now. */
static int poll_writable(struct lg_conn *c)
{
    return lg_subscriber_has_output(&c->sub) ? answer_poll(c) : 0;
}

/* Its deadline: answered with what it has (nothing). */
static int poll_deadline(struct lg_conn *c)
{
    return answer_poll(c);
}

/* Bytes of the next request while held: buffered, read once the answer is out. */
static int poll_receive(struct lg_conn *c, const char *in, size_t len)
{
    if (!c->closing)
        lg_conn_take_input(c, in, len);
    return 0;
}

/* An operator ends the held poll: a 409 answer, then the close. */
static void poll_kick(struct lg_conn *c, const char *reason)
{
    lg_subscriber_release(&c->sub, c->home->hub);
    lg_conn_deadline_cancel(c);
    lg_conn_set_transport(c, &lg_transport_http);
    lg_conn_http_error(c, 409, "kicked", reason, NULL);
    c->report.close_reason = "admin";
    lg_conn_arm_end(c);
}

static void poll_drain(struct lg_conn *c, const struct lg_drain *how)
{
    (void)how;
    c->http.keep_alive = false;
    answer_poll_or_close(c);
}

/* ---- Rendering: {"events":[notices..., events...],"cursor":"..."} ------------------------ */

static size_t poll_event_bytes(const struct lg_event *ev) { return ev->json_len; }

static void poll_render_begin(struct lg_buf *out) { lg_buf_append_str(out, "{\"events\":["); }

static void poll_render_notice(struct lg_buf *out, const struct lg_subscriber *s,
                               const struct lg_notice *n, size_t item)
{
    (void)s;
    lg_buf_append_str(out, item ? ",{\"type\":\"" : "{\"type\":\"");
    lg_buf_append_str(out, lg_notice_type(n));
    lg_buf_append_str(out, "\",\"v\":1,");
    lg_notice_json_fields(out, n);
}

static void poll_render_event(struct lg_buf *out, const struct lg_subscriber *s,
                              const struct lg_event *ev, size_t item)
{
    (void)s;
    lg_buf_append_str(out, item ? "," : "");
    lg_buf_append(out, ev->json, ev->json_len);
}

static void poll_render_end(struct lg_buf *out, const struct lg_subscriber *s)
{
    lg_buf_append_str(out, "],\"cursor\":\"");
    lg_subscriber_cursor(s, out);
    lg_buf_append_str(out, "\"}");
}

const struct lg_render_ops lg_poll_render = {
    .name = "long-poll",
    .delivered = &lg_stats.events_delivered_poll,
    .event_bytes = poll_event_bytes,
    .render_begin = poll_render_begin,
    .render_notice = poll_render_notice,
    .render_event = poll_render_event,
    .render_end = poll_render_end,
};

const struct lg_transport lg_transport_poll = {
    .name = "long-poll",
    .report_name = "poll",
    .clients = &lg_stats.clients_poll,
    .render = &lg_poll_render,
    .path = "/poll",
    .serve = poll_serve,
    .receive = poll_receive,
    .render_batch = take_answer,
    .writable = poll_writable,
    .timer = poll_deadline,
    .kick = poll_kick,
    .drain = poll_drain,
};
