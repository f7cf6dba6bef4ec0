/*
 * transport_sse.c - Server-Sent Events: the stream's wire format and its connection.
 */
#include <string.h>

#include "encode.h"
#include "event.h"
#include "stats.h"
#include "subscriber.h"
#include "transport.h"

/* ---- Rendering -------------------------------------------------------------------------- */

static size_t sse_event_bytes(const struct lg_event *ev) { return ev->sse_len; }

/* A notice is an SSE event of its own; its id is the whole cursor after it. */
static void sse_render_notice(struct lg_buf *out, const struct lg_subscriber *s,
                              const struct lg_notice *n, size_t item)
{
    (void)item;
    lg_buf_append_str(out, "id: ");
    lg_subscriber_cursor(s, out);
    lg_buf_append_str(out, n->reset ? "\nevent: reset\ndata: {" : "\nevent: gap\ndata: {");
    lg_notice_json_fields(out, n);
    lg_buf_append_str(out, "\n\n");
}

static void sse_render_event(struct lg_buf *out, const struct lg_subscriber *s,
                             const struct lg_event *ev, size_t item)
{
    (void)item;
    if (s->sub_count == 1) {
        lg_buf_append(out, ev->sse, ev->sse_len); /* its own id is the whole cursor */
    } else {
        lg_buf_append_str(out, "id: ");
        lg_subscriber_cursor(s, out);
        lg_buf_append(out, "\n", 1);
        lg_buf_append(out, ev->sse + ev->sse_body_offset, ev->sse_len - ev->sse_body_offset);
    }
}

static void sse_render_slow(struct lg_buf *out, const char *reason, uint32_t retry_ms)
{
    lg_buf_append_str(out, "event: error\ndata: {\"code\":\"slow_consumer\",\"message\":");
    lg_encode_json_string(out, reason, strlen(reason));
    lg_buf_appendf(out, "}\nretry: %u\n\n", retry_ms);
}

const struct lg_transport_ops lg_transport_sse = {
    .name = "SSE",
    .clients = &lg_stats.clients_sse,
    .stream = true,
    .heartbeat = true,
    .event_bytes = sse_event_bytes,
    .render_notice = sse_render_notice,
    .render_event = sse_render_event,
    .render_slow = sse_render_slow,
};
