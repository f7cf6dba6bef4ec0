/*
 * An event is encoded in two steps: its id, SSE frame and JSON object are first rendered into
 * scratch buffers (their lengths depend on escaping and line splitting), then the exact size is
 * known and every string is copied into one allocation behind the struct. The WebSocket frame
 * header is written just before the JSON, so `json` is the frame's payload, not a second copy.
 */
#include "event.h"

#include <stdlib.h>
#include <string.h>

#include "cursor.h"
#include "delta.h"
#include "encode.h"
#include "accounting.h"

static const char default_type[] = "message";

/* The id "<topic>@<epoch>:<seq>" into out (LG_CURSOR_ENTRY_MAX bytes, room for the longest
 * topic, 8 hex digits and 20 decimal ones); returns its length. Written by hand rather than
 * with snprintf(): it is made once per publish. */
static size_t format_id(char *out, const struct lg_event_fields *f)
{
    char *p = out;
    memcpy(p, f->topic_name, f->topic_name_len);
    p += f->topic_name_len;
    *p++ = '@';
    lg_format_hex32(p, f->epoch);
    p += 8;
    *p++ = ':';
    p += lg_format_u64(p, f->seq);
    *p = '\0';
    return (size_t)(p - out);
}

/* The length of an SSE frame's "event:" line: none for the default type, which a client
 * dispatches a block without one as (HTML spec), so naming it would only cost every event. */
static size_t sse_type_line_len(const char *type, size_t type_len)
{
    if (type_len == sizeof default_type - 1 && memcmp(type, default_type, type_len) == 0)
        return 0;
    return 8 + type_len;
}

static void append_sse(struct lg_buf *b, const char *id, size_t id_len, const char *type,
                       size_t type_len, const struct lg_event_fields *f)
{
    lg_buf_append(b, "id: ", 4);
    lg_buf_append(b, id, id_len);
    if (sse_type_line_len(type, type_len)) {
        lg_buf_append(b, "\nevent: ", 8);
        lg_buf_append(b, type, type_len);
    }
    lg_buf_append(b, "\n", 1);
    lg_encode_sse_data(b, f->data, f->data_len);
    lg_buf_append(b, "\n", 1);
}

static void append_json(struct lg_buf *b, const char *id, size_t id_len, const char *type,
                        size_t type_len, const struct lg_event_fields *f)
{
    lg_buf_append_str(b, "{\"type\":\"event\",\"v\":1,\"topic\":");
    lg_encode_json_string(b, f->topic_name, f->topic_name_len);
    lg_buf_append_str(b, ",\"id\":");
    lg_encode_json_string(b, id, id_len);
    lg_buf_append_str(b, ",\"seq\":");
    lg_buf_append_u64(b, f->seq);
    lg_buf_append_str(b, ",\"event\":");
    lg_encode_json_string(b, type, type_len);
    lg_buf_append_str(b, ",\"time\":");
    lg_buf_append_u64(b, f->published_unix_ms > 0 ? (uint64_t)f->published_unix_ms : 0);
    lg_buf_append_str(b, ",\"data\":");
    if (f->data_is_json)
        lg_buf_append(b, f->data, f->data_len);
    else
        lg_encode_json_string(b, f->data, f->data_len);
    if (f->key) {
        lg_buf_append_str(b, ",\"key\":");
        lg_encode_json_string(b, f->key, f->key_len);
    }
    lg_buf_append(b, "}", 1);
}

/* The delta message that turns base's JSON object into json[0..json_len), appended to b:
 * {"type":"delta","v":1,"topic":..,"id":..,"delta":".."}. Nothing is appended when base is
 * not the previous event of the same life, or when out of memory. */
static void append_delta(struct lg_buf *b, const struct lg_event *base, const char *id,
                         size_t id_len, const struct lg_event_fields *f, const char *json,
                         size_t json_len)
{
    if (base->epoch != f->epoch || base->seq + 1 != f->seq)
        return;
    struct lg_buf delta;
    lg_buf_init(&delta);
    if (lg_delta_encode(base->json, base->json_len, json, json_len, &delta) == 0) {
        lg_buf_append_str(b, "{\"type\":\"delta\",\"v\":1,\"topic\":");
        lg_encode_json_string(b, f->topic_name, f->topic_name_len);
        lg_buf_append_str(b, ",\"id\":");
        lg_encode_json_string(b, id, id_len);
        lg_buf_append_str(b, ",\"delta\":");
        lg_encode_json_string(b, delta.data, delta.len);
        lg_buf_append(b, "}", 1);
    }
    lg_buf_release(&delta);
}

/* The allocation of an event of f with these encoded lengths: the struct, then each string
 * NUL-terminated (each WebSocket frame is its header followed by its JSON). */
static size_t allocation_size(const struct lg_event_fields *f, size_t id_len, size_t type_len,
                              size_t sse_len, size_t json_len, size_t delta_len)
{
    return sizeof(struct lg_event) + f->topic_name_len + 1 + id_len + 1 + type_len + 1 +
           (f->key ? f->key_len + 1 : 0) +
           (f->idempotency_key ? f->idempotency_key_len + 1 : 0) +
           (f->tags && f->tags_len ? f->tags_len + 1 : 0) + f->data_len + 1 +
           sse_len + 1 + lg_ws_header_len(json_len) + json_len + 1 +
           (delta_len ? lg_ws_header_len(delta_len) + delta_len + 1 : 0);
}

static size_t u64_len(uint64_t v)
{
    char digits[LG_U64_DIGITS_MAX];
    return lg_format_u64(digits, v);
}

/* What append_json() appends, counted without writing it. */
static size_t json_len_of(const char *id, size_t id_len, const char *type, size_t type_len,
                          const struct lg_event_fields *f)
{
    size_t n = sizeof "{\"type\":\"event\",\"v\":1,\"topic\":" - 1 +
               lg_json_string_len(f->topic_name, f->topic_name_len) + sizeof ",\"id\":" - 1 +
               lg_json_string_len(id, id_len) + sizeof ",\"seq\":" - 1 + u64_len(f->seq) +
               sizeof ",\"event\":" - 1 + lg_json_string_len(type, type_len) +
               sizeof ",\"time\":" - 1 +
               u64_len(f->published_unix_ms > 0 ? (uint64_t)f->published_unix_ms : 0) +
               sizeof ",\"data\":" - 1 +
               (f->data_is_json ? f->data_len : lg_json_string_len(f->data, f->data_len)) + 1;
    if (f->key)
        n += sizeof ",\"key\":" - 1 + lg_json_string_len(f->key, f->key_len);
    return n;
}

size_t lg_event_size(const struct lg_event_fields *f)
{
    const char *type = f->type ? f->type : default_type;
    size_t type_len = f->type ? f->type_len : sizeof default_type - 1;
    char id[LG_CURSOR_ENTRY_MAX];
    size_t id_len = format_id(id, f);
    size_t sse_len = 4 + id_len + sse_type_line_len(type, type_len) + 1 +
                     lg_sse_data_len(f->data, f->data_len) + 1;
    return allocation_size(f, id_len, type_len, sse_len,
                           json_len_of(id, id_len, type, type_len, f), 0);
}

/* Copy n bytes to dst and NUL-terminate them. Return value: the byte after the NUL. */
static char *put(char *dst, const char *src, size_t n)
{
    if (n)
        memcpy(dst, src, n);
    dst[n] = '\0';
    return dst + n + 1;
}

struct lg_event *lg_event_create(const struct lg_event_fields *f)
{
    const char *type = f->type ? f->type : default_type;
    size_t type_len = f->type ? f->type_len : sizeof default_type - 1;
    struct lg_event *ev = NULL;
    char id[LG_CURSOR_ENTRY_MAX];
    size_t id_len = format_id(id, f);
    struct lg_buf enc; /* the SSE frame, then the JSON object */
    lg_buf_init(&enc);
    struct lg_buf delta; /* the delta message (document topics) */
    lg_buf_init(&delta);
    /* Both forms hold the data once plus framing; escaping rarely doubles it. One allocation
     * up front instead of a chain of reallocs on the publish path. */
    lg_buf_reserve(&enc, 2 * (f->data_len + id_len + type_len + f->topic_name_len) + 192);

    append_sse(&enc, id, id_len, type, type_len, f);
    size_t sse_len = enc.len;
    size_t sse_body_offset = 4 + id_len + 1; /* "id: " <id> "\n" */
    append_json(&enc, id, id_len, type, type_len, f);
    if (enc.oom)
        goto out;
    size_t json_len = enc.len - sse_len;
    if (f->delta_base)
        append_delta(&delta, f->delta_base, id, id_len, f, enc.data + sse_len, json_len);
    size_t delta_len = delta.oom ? 0 : delta.len;
    if (lg_ws_header_len(delta_len) + delta_len >= lg_ws_header_len(json_len) + json_len)
        delta_len = 0; /* not shorter: the full event goes instead */
    size_t size = allocation_size(f, id_len, type_len, sse_len, json_len, delta_len);
    ev = malloc(size);
    if (!ev)
        goto out;

    atomic_init(&ev->refcount, 1);
    atomic_init(&ev->ws_compressed, NULL);
    ev->topic_identity = f->topic_identity;
    ev->epoch = f->epoch;
    ev->seq = f->seq;
    ev->id_len = id_len;
    ev->data_len = f->data_len;
    ev->data_is_json = f->data_is_json;
    ev->published_unix_ms = f->published_unix_ms;
    ev->published_mono_ns = f->published_mono_ns;
    ev->sse_len = sse_len;
    ev->sse_body_offset = sse_body_offset;
    ev->ws_frame_len = lg_ws_header_len(json_len) + json_len;
    ev->json_len = json_len;
    ev->size = size;

    char *p = ev->storage;
    ev->topic_name = p;
    p = put(p, f->topic_name, f->topic_name_len);
    ev->id = p;
    p = put(p, id, id_len);
    ev->type = p;
    p = put(p, type, type_len);
    ev->key = NULL;
    if (f->key) {
        ev->key = p;
        p = put(p, f->key, f->key_len);
    }
    ev->idempotency_key = NULL;
    if (f->idempotency_key) {
        ev->idempotency_key = p;
        p = put(p, f->idempotency_key, f->idempotency_key_len);
    }
    /* Tags come before the data, so their offset is bounded by the short strings before them
     * (topic, id, type, keys: well under 64 KiB) and fits its 16 bits. */
    ev->tags_offset = (uint16_t)(p - ev->storage);
    ev->tags_len = 0;
    if (f->tags && f->tags_len) {
        ev->tags_len = (uint16_t)f->tags_len;
        p = put(p, f->tags, f->tags_len);
    }
    ev->data = p;
    p = put(p, f->data, f->data_len);
    ev->sse = p;
    p = put(p, enc.data, sse_len);
    ev->ws_frame = p;
    p += lg_ws_write_header((unsigned char *)p, json_len, 0x1);
    ev->json = p;
    p = put(p, enc.data + sse_len, json_len);
    ev->delta_frame = NULL;
    ev->delta_frame_len = 0;
    if (delta_len) {
        ev->delta_frame = p;
        ev->delta_frame_len = lg_ws_header_len(delta_len) + delta_len;
        p += lg_ws_write_header((unsigned char *)p, delta_len, 0x1);
        put(p, delta.data, delta_len);
    }

    lg_account_event_created(size);
out:
    lg_buf_release(&enc);
    lg_buf_release(&delta);
    return ev;
}

void lg_event_unref(struct lg_event **evp)
{
    struct lg_event *ev = *evp;
    if (!ev)
        return;
    *evp = NULL;
    /* acq_rel: this thread's reads of the event happen before the free on whichever thread
     * drops the last reference. */
    uint32_t before = atomic_fetch_sub_explicit(&ev->refcount, 1, memory_order_acq_rel);
#ifndef NDEBUG
    if (before == 0)
        __builtin_trap();
#endif
    if (before != 1)
        return;
    struct lg_ws_compressed *compressed = atomic_load_explicit(&ev->ws_compressed,
                                                               memory_order_acquire);
    if (compressed) {
        lg_account_event_bytes_changed(-(int64_t)compressed->size);
        free(compressed);
    }
    lg_account_event_freed(ev->size);
    free(ev);
}
