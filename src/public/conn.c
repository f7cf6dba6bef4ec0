/* conn.c - see conn.h. */
#include "conn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "accounting.h"
#include "auth.h"
#include "client_addresses.h"
#include "clock.h"
#include "config.h"
#include "conn_hook.h"
#include "hub.h"
#include "log.h"
#include "sse_refusal.h"
#include "stats.h"
#include "subscribe_params.h"

static void count_client(const struct lg_transport *t, int delta)
{
    if (t && t->clients)
        atomic_fetch_add_explicit(t->clients, delta, memory_order_relaxed);
}

/* ---- The home ----------------------------------------------------------------------------- */

int lg_conn_home_init(struct lg_conn_home *home)
{
    lg_buf_init(&home->scratch);
    return lg_send_batch_init(&home->send_batch, home->cfg->batched_writes, LWS_PRE);
}

void lg_conn_home_release(struct lg_conn_home *home)
{
    lg_buf_release(&home->scratch);
    lg_min_heap_release(&home->expiring);
    lg_min_heap_release(&home->deadlines);
    for (size_t i = 0; i < home->ws_upgrades_cap; i++)
        free(home->ws_upgrades[i].query), free(home->ws_upgrades[i].token);
    free(home->ws_upgrades);
    lg_ws_deflater_release(&home->ws_deflater);
    lg_send_batch_release(&home->send_batch);
}

/* The request flag too: a request classified between lg_worker_drain() and the worker's
 * next wake-up is refused like the ones after it. */
bool lg_conn_home_draining(const struct lg_conn_home *home)
{
    return home->draining || atomic_load(&home->drain_requested);
}

struct lg_buf *lg_conn_scratch(struct lg_conn_home *home)
{
    lg_buf_reset(&home->scratch);
    static const char headroom[LWS_PRE];
    lg_buf_append(&home->scratch, headroom, LWS_PRE);
    return &home->scratch;
}

/* ---- Life cycle ------------------------------------------------------------------------- */

size_t lg_conn_size(void)
{
    return sizeof(struct lg_conn) + lg_transport_state_max();
}

void lg_conn_init(struct lg_conn *c, struct lws *wsi, struct lg_conn_home *home,
                  const struct lg_transport *transport, const struct lg_client_address *peer)
{
    memset(c, 0, lg_conn_size());
    c->wsi = wsi;
    c->home = home;
    c->transport = transport;
    count_client(transport, 1);
    uint64_t now_ms = lg_mono_ms();
    static _Atomic uint64_t last_id;
    c->report.id = atomic_fetch_add_explicit(&last_id, 1, memory_order_relaxed) + 1;
    c->report.opened_unix_ms = lg_unix_ms();
    c->report.opened_mono_ms = now_ms;
    if (peer)
        lg_client_address_format(peer, c->report.peer, sizeof c->report.peer);
    lg_rate_init(&c->topic_creations, lg_live(&home->live->topic_creations_per_s),
                 lg_live(&home->live->max_topics_per_client), now_ms);
    lg_buf_init(&c->out);
    lg_dlist_push_tail(&home->conns, &c->links.all);
}

bool lg_conn_claim_client(struct lg_conn *c, const struct lg_client_address *client)
{
    if (!client)
        return true;
    if (!lg_client_addresses_acquire(c->home->clients, client))
        return false;
    c->report.client = *client;
    c->report.client_counted = true;
    return true;
}

/* c leaves its transport: what its state owns is freed, and its keep-alive order left. */
static void leave_transport(struct lg_conn *c)
{
    if (c->transport->release)
        c->transport->release(c);
    lg_dlist_remove(&c->home->keepalive[lg_transport_index(c->transport)], &c->links.keepalive);
    count_client(c->transport, -1);
}

void lg_conn_set_transport(struct lg_conn *c, const struct lg_transport *transport)
{
    leave_transport(c);
    c->transport = transport;
    memset(c->state, 0, transport->state_size);
    count_client(transport, 1);
}

/* c leaves every list and heap of its worker. */
static void unlink_from_home(struct lg_conn *c)
{
    struct lg_conn_home *home = c->home;
    lg_dlist_remove(&home->conns, &c->links.all);
    lg_dlist_remove(&home->dirty, &c->links.dirty);
    lg_dlist_remove(&home->backlogged, &c->links.backlog);
    lg_min_heap_remove(&home->expiring, &c->links.expiry);
    lg_min_heap_remove(&home->deadlines, &c->links.deadline);
    lg_account_connection_closed();
}

void lg_conn_release(struct lg_conn *c)
{
    if (c->released || !c->transport)
        return;
    if (c->home->hooks)
        lg_conn_hook_release(c); /* while it still counts as a client (lg_conn_is_client()) */
    c->released = true;
    lg_conn_report_closed(c);
    if (c->report.client_counted)
        lg_client_addresses_release(c->home->clients, &c->report.client);
    leave_transport(c);
    lg_subscriber_release(&c->sub, c->home->hub);
    lg_buf_release(&c->out);
    lg_grant_free(c->grant);
    c->grant = NULL;
    free(c->http.cors);
    c->http.cors = NULL;
    free(c->http.rx);
    c->http.rx = NULL;
    unlink_from_home(c);
}

/* ---- Output ---------------------------------------------------------------------------- */

void lg_conn_want_write(struct lg_conn *c)
{
    if (!c->released)
        lws_callback_on_writable(c->wsi);
}

void lg_conn_http_error(struct lg_conn *c, int status, const char *code, const char *message,
                        const char *extra_headers)
{
    static struct lg_ratelimit rl;
    LG_STAT_ADD(requests_rejected, 1);
    bool as_event = c->http.sse_request && lg_sse_refusal_retried(status);
    lg_log_ratelimited(&rl, 1000, status >= 500 ? LG_LOG_WARN : LG_LOG_INFO,
                       "public port answered %d %s%s: %s", status, code,
                       as_event ? " (as an SSE refused event)" : "", message);
    lg_buf_reset(&c->out);
    if (as_event) {
        lg_sse_refusal(&c->out, c->home->cfg->sse.retry_ms, status, code, message,
                       c->http.cors);
    } else {
        char headers[1024];
        snprintf(headers, sizeof headers, "%s%s", extra_headers ? extra_headers : "",
                 c->http.cors ? c->http.cors : "");
        lg_http_error_response(&c->out, status, code, message, headers, false);
    }
    if (!c->report.close_reason)
        c->report.close_reason =
            status == 429 || status == 401 || status == 403 ? "policy" : "error";
    c->closing = true;
    c->http.keep_alive = false;
    lg_conn_want_write(c);
}

int lg_conn_flush_out(struct lg_conn *c)
{
    size_t left = c->out.len;
    if (left == 0)
        return 0;
    if (c->out.oom)
        return -1;
    struct lg_buf *scratch = lg_conn_scratch(c->home);
    lg_buf_append(scratch, c->out.data, left);
    if (scratch->oom)
        return -1;
    if (lws_write(c->wsi, (unsigned char *)scratch->data + LWS_PRE, left, LWS_WRITE_RAW) < 0)
        return -1;
    lg_buf_reset(&c->out);
    return 0;
}

/* Plain event output of a stream whose socket took everything written so far. */
static bool writes_directly(const struct lg_conn *c)
{
    return c->transport->stream && !c->closing && !c->draining && !c->sub.slow_disconnect &&
           !lws_partial_buffered(c->wsi);
}

/* Whether c's next write may join a batch: a stream that writes directly, or a held poll
 * (its answer is its next write, and nothing of c's is buffered in lws yet). */
static bool batches(const struct lg_conn *c)
{
    if (!c->transport->render_batch || c->released)
        return false;
    return c->transport->stream ? writes_directly(c)
                                : !c->closing && !c->sub.slow_disconnect &&
                                      !lws_partial_buffered(c->wsi);
}

void lg_conn_close_soon(struct lg_conn *c)
{
    lws_set_timeout(c->wsi, PENDING_TIMEOUT_CLOSE_SEND, LWS_TO_KILL_ASYNC);
}

/* The socket failed outside any callback of this connection: lws closes it on its next pass
 * (its close path releases c). */
static void write_failed(struct lg_conn *c)
{
    if (!c->report.close_reason)
        c->report.close_reason = "error";
    lg_conn_close_soon(c);
}

/* After a write of c's events. Left over: a policy decision to send, or what a full socket
 * did not take (lws asks for POLLOUT itself after a partial write; asking again is harmless).
 * A queue the socket has not taken is lag-checked. */
static void after_write(struct lg_conn *c)
{
    if (c->closing || lg_subscriber_has_output(&c->sub))
        lg_conn_want_write(c);
    lg_conn_note_backlog(c);
}

void lg_conn_write_now(struct lg_conn *c)
{
    if (c->released || (!lg_subscriber_has_output(&c->sub) && c->out.len == 0))
        return;
    if (c->sub.slow_disconnect)
        lg_conn_arm_end(c);
    if (!writes_directly(c)) {
        lg_conn_want_write(c);
        lg_conn_note_backlog(c); /* a full socket: its queue is lag-checked */
        return;
    }
    if (c->transport->write_events(c) != 0) {
        write_failed(c);
        return;
    }
    after_write(c);
}

void lg_conn_write_batched(struct lg_conn *c)
{
    struct lg_send_batch *b = &c->home->send_batch;
    if (!lg_send_batch_on(b) || !batches(c)) {
        lg_conn_write_now(c);
        return;
    }
    if (!lg_subscriber_has_output(&c->sub) && c->out.len == 0)
        return;
    if (c->transport->render_batch(c, lg_send_batch_begin(b)) != 0) {
        lg_send_batch_cancel(b);
        write_failed(c);
        return;
    }
    if (!lg_send_batch_add(b, c, lws_get_socket_fd(c->wsi))) {
        after_write(c); /* nothing to write after all (a subscription's events were skipped) */
        return;
    }
    if (lg_send_batch_full(b))
        lg_conn_flush_batch(c->home);
}

/* An answer is in the socket, or (partly) kept by lws: a plain connection goes on at once
 * (it waits for its next request) when all of it is out; else the writable callback does. */
static void finish_answer(struct lg_conn *c)
{
    bool all_out = c->out.len == 0 && !lws_partial_buffered(c->wsi);
    if (all_out && !c->closing && c->transport->answered)
        c->transport->answered(c);
    else
        lg_conn_want_write(c);
}

/* One connection's part of a flushed batch (send_batch.h): lws takes what its socket did not
 * (lws_write() sends what it can and keeps the rest, asking for POLLOUT). The part was a
 * stream's write, or a held poll's answer (c is a plain connection since). */
static void batch_item_sent(void *owner, ssize_t sent, char *rest, size_t rest_len)
{
    struct lg_conn *c = owner;
    if (sent < 0 ||
        (rest_len && lws_write(c->wsi, (unsigned char *)rest, rest_len, LWS_WRITE_RAW) < 0)) {
        write_failed(c);
        return;
    }
    if (c->transport->stream)
        after_write(c);
    else
        finish_answer(c);
}

void lg_conn_flush_batch(struct lg_conn_home *home)
{
    struct lg_send_batch *b = &home->send_batch;
    size_t items = b->count;
    if (items == 0)
        return;
    int rc = lg_send_batch_flush(b, batch_item_sent);
    LG_STAT_ADD(writes_batched, items);
    LG_STAT_ADD(write_batches, 1);
    if (rc != 0)
        lg_warn("worker %u: io_uring failed (%s): its sockets are written with a send() each "
                "from now on", home->index, strerror(-rc));
}

int lg_conn_send_answer(struct lg_conn *c)
{
    if (!lws_partial_buffered(c->wsi) && lg_conn_flush_out(c) != 0)
        return -1;
    finish_answer(c);
    return 0;
}

void lg_conn_note_backlog(struct lg_conn *c)
{
    struct lg_dlist *backlogged = &c->home->backlogged;
    if (c->transport->stream && c->sub.ring.live > 0 && !c->released)
        lg_dlist_move_tail(backlogged, &c->links.backlog);
    else
        lg_dlist_remove(backlogged, &c->links.backlog); /* a poll answers anyway */
}

/* ---- Ends ------------------------------------------------------------------------------- */

void lg_conn_drain(struct lg_conn *c, const struct lg_drain *how)
{
    c->transport->drain(c, how);
}

void lg_conn_kick(struct lg_conn *c, const char *reason)
{
    if (c->released || !c->transport->kick)
        return;
    c->report.close_reason = "admin";
    c->transport->kick(c, reason);
}

void lg_conn_kick_stream(struct lg_conn *c, const char *reason)
{
    lg_subscriber_kick(&c->sub, reason);
    lg_conn_arm_end(c);
    lg_conn_want_write(c);
}

/* c was kicked or the disconnect policy fired: its notice goes out when the socket has room,
 * and the socket closes after it, or at the deadline whatever the peer does. */
void lg_conn_arm_end(struct lg_conn *c)
{
    if (c->ending || c->released)
        return;
    c->ending = true;
    lg_conn_deadline_in(c, LG_END_NOTICE_MS);
}

void lg_conn_end_now(struct lg_conn *c)
{
    static struct lg_ratelimit rl;
    LG_STAT_ADD(clients_closed_unread, 1);
    lg_log_ratelimited(&rl, 1000, LG_LOG_WARN,
                       "closing a %s %s client that did not take its notice within %u ms",
                       strcmp(lg_conn_close_reason(c), "admin") == 0 ? "kicked" : "slow",
                       c->transport->name, LG_END_NOTICE_MS);
    /* Shut down, a close waiting to flush what the peer never reads fails at once; with no
     * linger the close sends a reset instead of keeping the unsent bytes. */
    int fd = lws_get_socket_fd(c->wsi);
    if (fd >= 0) {
        struct linger hard = {.l_onoff = 1, .l_linger = 0};
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
        shutdown(fd, SHUT_RDWR);
    }
    lg_conn_close_soon(c);
}

void lg_conn_check_lag(struct lg_conn *c)
{
    if (!c->transport->stream)
        return;
    lg_subscriber_check_lag(&c->sub, lg_mono_ns());
    if (c->sub.slow_disconnect) {
        lg_conn_arm_end(c);
        lg_conn_want_write(c);
    }
}

/* ---- Deadlines and keep-alive orders --------------------------------------------------- */

void lg_conn_deadline_in(struct lg_conn *c, uint32_t ms)
{
    if (lg_min_heap_set(&c->home->deadlines, &c->links.deadline,
                        (int64_t)lg_mono_ms() + ms) != 0) {
        static struct lg_ratelimit rl;
        lg_log_ratelimited(&rl, 1000, LG_LOG_ERROR,
                           "out of memory arming a connection's deadline: closing it");
        c->report.close_reason = "error";
        lg_conn_close_soon(c);
        return;
    }
    c->home->deadlines_moved(c->home);
}

void lg_conn_callback_done(struct lg_conn_home *home)
{
    if (++home->callbacks_since_control_turn < LG_CALLBACKS_PER_CONTROL_TURN)
        return;
    home->callbacks_since_control_turn = 0;
    home->control_turn(home);
}

void lg_conn_deadline_cancel(struct lg_conn *c)
{
    lg_min_heap_remove(&c->home->deadlines, &c->links.deadline);
}

void lg_conn_deadline(struct lg_conn *c)
{
    if (c->ending) {
        lg_conn_end_now(c);
        return;
    }
    if (c->transport->timer && c->transport->timer(c) != 0)
        lg_conn_close_soon(c);
}

int lg_conn_expires_at(struct lg_conn *c, int64_t unix_ms)
{
    return lg_min_heap_set(&c->home->expiring, &c->links.expiry, unix_ms);
}

void lg_conn_keepalive_reset(struct lg_conn *c)
{
    lg_dlist_move_tail(&c->home->keepalive[lg_transport_index(c->transport)],
                       &c->links.keepalive);
}

/* ---- Raw HTTP requests ------------------------------------------------------------------ */

/* Append bytes of the next request(s) to c->http.rx. Return value: 0, or -1 when they do not
 * fit in limits.max_request_head_bytes (or memory ran out). */
static int rx_append(struct lg_conn *c, const char *in, size_t len)
{
    uint32_t cap = c->home->cfg->limits.max_request_head_bytes;
    struct lg_rx *rx = c->http.rx;
    if (!rx) {
        rx = c->http.rx = malloc(sizeof *rx + cap);
        if (!rx)
            return -1;
        lg_http_request_init(&rx->req);
        rx->len = 0;
        rx->timed = false;
        rx->serving = false;
        rx->answered = false;
    }
    if (len > cap - rx->len)
        return -1;
    memcpy(rx->buf + rx->len, in, len);
    rx->len += (uint32_t)len;
    return 0;
}

/* Refuse what the client sent next. An answer still waiting in `out` (the previous request's)
 * goes first: the refusal is queued after it, in request order. */
static void refuse_next(struct lg_conn *c, int status, const char *code, const char *message)
{
    struct lg_buf earlier = c->out;
    lg_buf_init(&c->out);
    lg_conn_http_error(c, status, code, message, NULL);
    if (earlier.len) {
        lg_buf_append(&earlier, c->out.data, c->out.len);
        lg_buf_release(&c->out);
        c->out = earlier;
    } else {
        lg_buf_release(&earlier);
    }
}

bool lg_conn_take_input(struct lg_conn *c, const char *in, size_t len)
{
    if (rx_append(c, in, len) == 0)
        return true;
    refuse_next(c, 431, "headers_too_large", LG_HEAD_TOO_LARGE_MESSAGE);
    return false;
}

int lg_conn_http_params(struct lg_conn *c, const char *buf, const struct lg_http_request *req,
                        const char *cursor_param, struct lg_subscribe_params *p)
{
    char problem[256];
    const char *header = NULL;
    size_t header_len = 0;
    if (req && strcmp(cursor_param, "last_event_id") == 0 &&
        req->headers[LG_HDR_LAST_EVENT_ID].len) {
        header = buf + req->headers[LG_HDR_LAST_EVENT_ID].off;
        header_len = req->headers[LG_HDR_LAST_EVENT_ID].len;
    }
    const char *code = lg_subscribe_params_parse(p, buf + req->query.off, req->query.len,
                                                 cursor_param, header, header_len,
                                                 lg_live(&c->home->live->max_topics_per_client),
                                                 problem,
                                                 sizeof problem);
    if (!code && p->topic_count == 0) {
        snprintf(problem, sizeof problem, "at least one topic=NAME parameter is required");
        code = "bad_request";
    }
    if (code) {
        lg_conn_http_error(c, 400, code, problem, NULL);
        return -1;
    }
    return 0;
}

int lg_conn_http_subscribe(struct lg_conn *c, const struct lg_subscribe_params *p, bool listen,
                           size_t max_replay)
{
    struct lg_hub *hub = c->home->hub;
    struct lg_subscribe_failure why;
    (void)lg_subscriber_set_member(&c->sub, c->grant ? c->grant->sub : NULL, c->report.id);
    switch (lg_subscriber_add_all(&c->sub, hub, p, listen, max_replay, &c->topic_creations, &why)) {
    case LG_SUBSCRIBE_OK:
        return 0;
    case LG_SUBSCRIBE_UNAVAILABLE:
        lg_conn_http_error(c, 503, "unavailable", why.problem, "Retry-After: 1\r\n");
        return -1;
    case LG_SUBSCRIBE_TOO_MANY_NEW:
        lg_subscriber_release(&c->sub, hub);
        lg_conn_http_error(c, 429, "too_many_new_topics", why.problem, "Retry-After: 1\r\n");
        return -1;
    default:
        lg_subscriber_release(&c->sub, hub);
        lg_conn_http_error(c, 400, "invalid_cursor", why.problem, NULL);
        return -1;
    }
}
