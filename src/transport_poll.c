/*
 * transport_poll.c - HTTP long-poll: the answer's JSON batch and the held request.
 */
#include "encode.h"
#include "event.h"
#include "stats.h"
#include "subscriber.h"
#include "transport.h"

/* ---- Rendering: {"events":[notices..., events...],"cursor":"..."} ------------------------ */

static size_t poll_event_bytes(const struct lg_event *ev) { return ev->json_len; }

static void poll_render_begin(struct lg_buf *out) { lg_buf_append_str(out, "{\"events\":["); }

static void poll_render_notice(struct lg_buf *out, const struct lg_subscriber *s,
                               const struct lg_notice *n, size_t item)
{
    (void)s;
    lg_buf_append_str(out, item ? "," : "");
    lg_buf_append_str(out, n->reset ? "{\"type\":\"reset\",\"v\":1,"
                                    : "{\"type\":\"gap\",\"v\":1,");
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

const struct lg_transport_ops lg_transport_poll = {
    .name = "long-poll",
    .clients = &lg_stats.clients_poll,
    .event_bytes = poll_event_bytes,
    .render_begin = poll_render_begin,
    .render_notice = poll_render_notice,
    .render_event = poll_render_event,
    .render_end = poll_render_end,
};
