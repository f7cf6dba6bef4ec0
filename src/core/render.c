/* render.c - see render.h. */
#include "render.h"

#include <inttypes.h>

#include "cursor.h"
#include "encode.h"

const char *lg_notice_type(const struct lg_notice *n)
{
    return n->kind ? n->kind : n->end ? "end" : n->reset ? "reset" : "gap";
}

void lg_notice_json_fields(struct lg_buf *out, const struct lg_notice *n)
{
    if (n->kind && n->fields) {
        lg_buf_append(out, n->fields, n->fields_len); /* "topic" first, as for the others */
        return;
    }
    if (n->kind) {
        lg_buf_append_str(out, "\"topic\":");
        lg_encode_json_string(out, n->topic, n->topic_len);
        lg_buf_append_str(out, "}");
        return;
    }
    char entry[LG_CURSOR_ENTRY_MAX];
    lg_buf_append_str(out, "\"topic\":");
    lg_encode_json_string(out, n->topic, n->topic_len);
    if (n->reset)
        lg_buf_appendf(out, ",\"epoch\":\"%08x\"", n->epoch);
    else if (!n->end)
        lg_buf_appendf(out, ",\"from\":%" PRIu64 ",\"to\":%" PRIu64, n->from, n->to);
    lg_buf_append_str(out, ",\"id\":\"");
    lg_buf_append(out, entry, lg_cursor_format_entry(entry, n->topic, n->epoch, n->seq));
    lg_buf_append_str(out, "\"}");
}
