#include "http_request.h"

#include <assert.h>
#include <http_parser.h>
#include <string.h>
#include <strings.h>

static_assert(sizeof(http_parser) <= LG_HTTP_PARSER_STATE_BYTES, "grow LG_HTTP_PARSER_STATE_BYTES");

static http_parser *parser_of(struct lg_http_request *req) { return (http_parser *)req->parser; }

static enum lg_http_method method_of(unsigned m)
{
    switch (m) {
    case HTTP_GET:
        return LG_HTTP_GET;
    case HTTP_HEAD:
        return LG_HTTP_HEAD;
    case HTTP_POST:
        return LG_HTTP_POST;
    case HTTP_OPTIONS:
        return LG_HTTP_OPTIONS;
    default:
        return LG_HTTP_OTHER;
    }
}

static const char *const header_names[LG_HDR_COUNT_] = {
    [LG_HDR_LAST_EVENT_ID] = "last-event-id",
    [LG_HDR_UPGRADE] = "upgrade",
    [LG_HDR_ORIGIN] = "origin",
    [LG_HDR_SEC_WEBSOCKET_KEY] = "sec-websocket-key",
    [LG_HDR_SEC_WEBSOCKET_VERSION] = "sec-websocket-version",
    [LG_HDR_SEC_WEBSOCKET_PROTOCOL] = "sec-websocket-protocol",
    [LG_HDR_X_FORWARDED_FOR] = "x-forwarded-for",
    [LG_HDR_FORWARDED] = "forwarded",
    [LG_HDR_AUTHORIZATION] = "authorization",
    [LG_HDR_COOKIE] = "cookie",
};

/* The buffer being fed; valid only during lg_http_request_feed(). */
struct feed_ctx {
    struct lg_http_request *req;
    const char *base;
};

static uint32_t offset_of(const struct feed_ctx *ctx, const char *at)
{
    return (uint32_t)(at - ctx->base);
}

/* Callbacks may deliver one token in several pieces; they are adjacent in the buffer. */
static void extend(struct lg_slice *s, uint32_t off, size_t len)
{
    if (s->len == 0)
        s->off = off;
    s->len = off + (uint32_t)len - s->off;
}

static int on_url(http_parser *p, const char *at, size_t len)
{
    struct feed_ctx *ctx = p->data;
    extend(&ctx->req->target, offset_of(ctx, at), len);
    return 0;
}

static int on_header_field(http_parser *p, const char *at, size_t len)
{
    struct feed_ctx *ctx = p->data;
    struct lg_http_request *req = ctx->req;
    if (req->in_value) {
        req->in_value = false;
        req->field.len = 0;
    }
    extend(&req->field, offset_of(ctx, at), len);
    return 0;
}

static int identify_header(const struct feed_ctx *ctx)
{
    const struct lg_slice *field = &ctx->req->field;
    for (int i = 0; i < LG_HDR_COUNT_; i++)
        if (strlen(header_names[i]) == field->len &&
            strncasecmp(ctx->base + field->off, header_names[i], field->len) == 0)
            return i;
    return -1;
}

static int on_header_value(http_parser *p, const char *at, size_t len)
{
    struct feed_ctx *ctx = p->data;
    struct lg_http_request *req = ctx->req;
    if (!req->in_value) {
        req->in_value = true;
        req->current_header = identify_header(ctx);
        if (req->current_header >= 0)
            req->headers[req->current_header].len = 0; /* the last occurrence wins */
    }
    if (req->current_header >= 0)
        extend(&req->headers[req->current_header], offset_of(ctx, at), len);
    return 0;
}

static int on_message_complete(http_parser *p)
{
    struct feed_ctx *ctx = p->data;
    ctx->req->complete = true;
    http_parser_pause(p, 1); /* a pipelined next request stays in the buffer for later */
    return 0;
}

static const http_parser_settings settings = {
    .on_url = on_url,
    .on_header_field = on_header_field,
    .on_header_value = on_header_value,
    .on_message_complete = on_message_complete,
};

void lg_http_request_init(struct lg_http_request *req)
{
    memset(req, 0, sizeof *req);
    http_parser_init(parser_of(req), HTTP_REQUEST);
    req->current_header = -1;
}

static void split_target(struct lg_http_request *req, const char *buf)
{
    const char *t = buf + req->target.off;
    const char *q = memchr(t, '?', req->target.len);
    req->path.off = req->target.off;
    req->path.len = q ? (uint32_t)(q - t) : req->target.len;
    if (q) {
        req->query.off = req->path.off + req->path.len + 1;
        req->query.len = req->target.len - req->path.len - 1;
    }
}

int lg_http_request_feed(struct lg_http_request *req, const char *buf, size_t len,
                         const char **problem)
{
    if (req->complete)
        return 1;
    http_parser *parser = parser_of(req);
    struct feed_ctx ctx = {.req = req, .base = buf};
    parser->data = &ctx;
    size_t n = http_parser_execute(parser, &settings, buf + req->fed, len - req->fed);
    req->fed += (uint32_t)n;
    enum http_errno err = HTTP_PARSER_ERRNO(parser);
    if (req->complete) {
        req->head_len = req->fed;
        req->method = method_of(parser->method);
        req->http_major = (uint8_t)parser->http_major;
        req->http_minor = (uint8_t)parser->http_minor;
        req->keep_alive = http_should_keep_alive(parser);
        req->upgrade = parser->upgrade;
        split_target(req, buf);
        return 1;
    }
    if (err != HPE_OK) {
        *problem = http_errno_description(err);
        return -1;
    }
    return 0;
}

static int hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int lg_percent_decode(const char *src, size_t len, char *out, size_t cap, bool plus_is_space,
                      size_t *bad_at)
{
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        char c = src[i];
        if (c == '%') {
            int hi = i + 2 < len ? hex_value(src[i + 1]) : -1;
            int lo = hi >= 0 ? hex_value(src[i + 2]) : -1;
            if (lo < 0) {
                if (bad_at)
                    *bad_at = i;
                return -1;
            }
            c = (char)(hi * 16 + lo);
            i += 2;
        } else if (c == '+' && plus_is_space) {
            c = ' ';
        }
        if (o + 1 >= cap)
            return -2;
        out[o++] = c;
    }
    out[o] = '\0';
    return (int)o;
}

int lg_query_next(const char *q, size_t len, size_t *pos, char *name, size_t name_cap,
                  char *value, size_t value_cap)
{
    while (*pos < len && q[*pos] == '&')
        (*pos)++;
    if (*pos >= len)
        return 0;
    size_t start = *pos;
    const char *amp = memchr(q + start, '&', len - start);
    size_t end = amp ? (size_t)(amp - q) : len;
    const char *eq = memchr(q + start, '=', end - start);
    size_t name_end = eq ? (size_t)(eq - q) : end;
    *pos = end;
    int name_len = lg_percent_decode(q + start, name_end - start, name, name_cap, true, NULL);
    if (name_len < 0)
        return -1;
    size_t vstart = eq ? name_end + 1 : end;
    int value_len = lg_percent_decode(q + vstart, end - vstart, value, value_cap, true, NULL);
    if (value_len < 0)
        return -1;
    /* A decoded NUL would cut the C string short: "demo%00junk" must not read as "demo". */
    if (strlen(name) != (size_t)name_len || strlen(value) != (size_t)value_len)
        return -2;
    return 1;
}
