/* ws_deflate.c - see ws_deflate.h. */
#include "ws_deflate.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "accounting.h"
#include "event.h"
#include "stats.h"

/* ---- Negotiation (RFC 7692 7.1) ----------------------------------------------------------- */

static const char extension_name[] = "permessage-deflate";

/* RFC 9110 5.6.2 tchar. */
static bool is_tchar(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

struct span {
    const char *p;
    size_t len;
};

static struct span trim(const char *p, size_t len)
{
    while (len && p[0] == ' ')
        p++, len--;
    while (len && p[len - 1] == ' ')
        len--;
    return (struct span){p, len};
}

static bool all_tchars(struct span s)
{
    if (s.len == 0)
        return false;
    for (size_t i = 0; i < s.len; i++)
        if (!is_tchar(s.p[i]))
            return false;
    return true;
}

static bool span_is(struct span s, const char *word)
{
    return s.len == strlen(word) && memcmp(s.p, word, s.len) == 0;
}

/* A window size value, "8" to "15" without a leading zero. Return value: it, or -1. */
static int window_bits_value(struct span v)
{
    if (v.len == 1 && (v.p[0] == '8' || v.p[0] == '9'))
        return v.p[0] - '0';
    if (v.len == 2 && v.p[0] == '1' && v.p[1] >= '0' && v.p[1] <= '5')
        return 10 + v.p[1] - '0';
    return -1;
}

enum param { SERVER_NO_TAKEOVER, CLIENT_NO_TAKEOVER, SERVER_MAX_BITS, CLIENT_MAX_BITS, PARAMS };
static const char *const param_names[PARAMS] = {
    [SERVER_NO_TAKEOVER] = "server_no_context_takeover",
    [CLIENT_NO_TAKEOVER] = "client_no_context_takeover",
    [SERVER_MAX_BITS] = "server_max_window_bits",
    [CLIENT_MAX_BITS] = "client_max_window_bits",
};

/* One "name[=value]" parameter of an offer into seen[]. Return value: false when it makes the
 * offer one to decline (unknown, repeated, a value where none belongs or a bad one, a server
 * window below ours). */
static bool take_param(struct span param, bool seen[PARAMS], unsigned window_bits)
{
    const char *eq = memchr(param.p, '=', param.len);
    struct span name = {param.p, eq ? (size_t)(eq - param.p) : param.len};
    struct span value = eq ? (struct span){eq + 1, param.len - name.len - 1} : (struct span){0};
    if (!all_tchars(name) || (eq && !all_tchars(value)))
        return false;
    int which = -1;
    for (int i = 0; i < PARAMS; i++)
        if (span_is(name, param_names[i]))
            which = i;
    if (which < 0 || seen[which])
        return false;
    seen[which] = true;
    switch (which) {
    case SERVER_NO_TAKEOVER:
    case CLIENT_NO_TAKEOVER:
        return !eq;
    case SERVER_MAX_BITS: /* a value is required; ours must fit under it */
        return eq && window_bits_value(value) >= (int)window_bits;
    default: /* client_max_window_bits: a value is optional */
        return !eq || window_bits_value(value) >= 0;
    }
}

/* The parameters after an offer's name (each after a ';'). Return value: whether livegate
 * accepts the offer. */
static bool offer_acceptable(struct span params, unsigned window_bits)
{
    bool seen[PARAMS] = {false};
    while (params.len) { /* params starts at a ';' */
        const char *next = memchr(params.p + 1, ';', params.len - 1);
        size_t len = next ? (size_t)(next - params.p) : params.len;
        if (!take_param(trim(params.p + 1, len - 1), seen, window_bits))
            return false;
        params = (struct span){params.p + len, params.len - len};
    }
    return true;
}

int lg_ws_deflate_choose(const char *value, size_t len, unsigned window_bits)
{
    for (size_t i = 0; i < len; i++)
        if (!is_tchar(value[i]) && !strchr(",;= ", value[i]))
            return -1;
    struct span offers[16];
    bool with_params[16];
    size_t count = 0;
    for (size_t at = 0; at < len;) {
        const char *comma = memchr(value + at, ',', len - at);
        size_t end = comma ? (size_t)(comma - value) : len;
        const char *semi = memchr(value + at, ';', end - at);
        struct span name = trim(value + at, (semi ? (size_t)(semi - value) : end) - at);
        /* libwebsockets reads a name with its spaces taken out: refuse to disagree with it */
        if (name.len && !all_tchars(name))
            return -1;
        if (span_is(name, extension_name)) {
            if (count == sizeof offers / sizeof offers[0])
                break;
            offers[count] = semi ? (struct span){semi, (size_t)(value + end - semi)}
                                 : (struct span){0};
            with_params[count++] = semi != NULL;
        }
        at = end + 1;
    }
    for (size_t k = 0; k < count; k++)
        if ((with_params[k] || k + 1 == count) && offer_acceptable(offers[k], window_bits))
            return (int)k;
    return -1;
}

/* ---- Compression (RFC 7692 7.2.1) ---------------------------------------------------------- */

int lg_ws_deflater_init(struct lg_ws_deflater *d, int level, int window_bits, int mem_level,
                        unsigned min_bytes)
{
    memset(d, 0, sizeof *d);
    if (deflateInit2(&d->z, level, Z_DEFLATED, -window_bits, mem_level, Z_DEFAULT_STRATEGY) !=
        Z_OK)
        return -1;
    d->min_bytes = min_bytes;
    d->ready = true;
    return 0;
}

void lg_ws_deflater_release(struct lg_ws_deflater *d)
{
    if (d->ready)
        deflateEnd(&d->z);
    d->ready = false;
}

#define WS_HEADER_MAX 10
#define SYNC_FLUSH_TAIL 4 /* 00 00 ff ff */

int lg_ws_deflate_frame(struct lg_ws_deflater *d, const char *text, size_t len,
                        struct lg_buf *out)
{
    /* deflateBound() covers Z_FINISH; a sync flush adds an empty stored block (5 bytes). */
    size_t room = deflateBound(&d->z, len) + 16;
    size_t start = out->len;
    lg_buf_reserve(out, WS_HEADER_MAX + room);
    if (out->oom || len > UINT32_MAX)
        return -1;
    unsigned char *body = (unsigned char *)out->data + start + WS_HEADER_MAX;
    d->z.next_in = (unsigned char *)(uintptr_t)text;
    d->z.avail_in = (uInt)len;
    d->z.next_out = body;
    d->z.avail_out = (uInt)room;
    int rc = deflate(&d->z, Z_SYNC_FLUSH);
    size_t n = room - d->z.avail_out;
    deflateReset(&d->z); /* the next message starts with no context */
    if (rc != Z_OK || d->z.avail_in || n < SYNC_FLUSH_TAIL ||
        memcmp(body + n - SYNC_FLUSH_TAIL, "\0\0\xff\xff", SYNC_FLUSH_TAIL) != 0)
        return -1;
    n -= SYNC_FLUSH_TAIL;
    unsigned char header[WS_HEADER_MAX];
    size_t hl = lg_ws_write_header(header, n, 0x1);
    header[0] |= 0x40; /* RSV1: a compressed message */
    unsigned char *frame = (unsigned char *)out->data + start;
    memmove(frame + hl, body, n);
    memcpy(frame, header, hl);
    out->len = start + hl + n;
    return 0;
}

/* Compress ev's message and publish the result in ev (or take the one another thread
 * published first). Return value: borrowed, NULL when out of memory. */
static struct lg_ws_compressed *compress_event(const struct lg_event *ev,
                                               struct lg_ws_deflater *d)
{
    struct lg_buf frame;
    lg_buf_init(&frame);
    if (lg_ws_deflate_frame(d, ev->json, ev->json_len, &frame) != 0) {
        lg_buf_release(&frame);
        return NULL;
    }
    size_t keep = frame.len < ev->ws_frame_len ? frame.len : 0;
    struct lg_ws_compressed *c = malloc(sizeof *c + keep);
    if (c) {
        c->size = sizeof *c + keep;
        c->frame_len = keep;
        memcpy(c->frame, frame.data, keep);
    }
    lg_buf_release(&frame);
    if (!c)
        return NULL;
    struct lg_ws_compressed *first = NULL;
    /* The event is immutable but for this field, set once (event.h). */
    struct lg_event *mutable_ev = (struct lg_event *)(uintptr_t)ev;
    if (!atomic_compare_exchange_strong_explicit(&mutable_ev->ws_compressed, &first, c,
                                                 memory_order_acq_rel, memory_order_acquire)) {
        free(c); /* another worker compressed it meanwhile */
        return first;
    }
    lg_account_event_bytes_changed((int64_t)c->size);
    LG_STAT_ADD(ws_deflate_events, 1);
    return c;
}

const struct lg_ws_compressed *lg_event_ws_compressed(const struct lg_event *ev,
                                                      struct lg_ws_deflater *d)
{
    if (ev->json_len < d->min_bytes)
        return NULL;
    struct lg_ws_compressed *c = atomic_load_explicit(
        &((struct lg_event *)(uintptr_t)ev)->ws_compressed, memory_order_acquire);
    if (!c)
        c = compress_event(ev, d);
    return c && c->frame_len ? c : NULL;
}
