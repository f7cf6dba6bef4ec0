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
    case HTTP_CONNECT:
        return LG_HTTP_CONNECT;
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
    [LG_HDR_HOST] = "host",
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
        if (req->current_header == LG_HDR_HOST && req->hosts < UINT8_MAX)
            req->hosts++;
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

/*
 * Check the line endings of the head in buf[req->line_checked..end): every CR must be followed
 * by LF. The head ends at its empty line (LF CRLF or LF LF); a body's bytes are not looked at.
 * A CR that is the last byte received is checked once the next byte arrives.
 * Return value: false when a bare CR was found.
 */
static bool line_endings_ok(struct lg_http_request *req, const char *buf, size_t len, size_t end)
{
    size_t i = req->line_checked;
    for (; i < end && !req->head_checked; i++) {
        if (buf[i] == '\r') {
            if (i + 1 >= len)
                break;
            if (buf[i + 1] != '\n')
                return false;
        } else if (buf[i] == '\n' && i > 0 &&
                   (buf[i - 1] == '\n' || (buf[i - 1] == '\r' && i > 1 && buf[i - 2] == '\n'))) {
            req->head_checked = true;
        }
    }
    req->line_checked = (uint32_t)i;
    return true;
}

/* What RFC 9112 refuses and http-parser lets through, once the parser has read up to req->fed.
 * Return value: NULL, or why the request is malformed. */
static const char *strict_problem(struct lg_http_request *req, const char *buf, size_t len)
{
    const http_parser *parser = parser_of(req);
    if (!line_endings_ok(req, buf, len, req->fed))
        return "a bare CR in the request head (a line ends with CRLF)";
    if (parser->http_major == 0 && parser->http_minor == 9)
        return "a request line without an HTTP version (HTTP/0.9 is not supported)";
    if (req->hosts > 1)
        return "more than one Host header";
    if (req->complete && parser->http_major == 1 && parser->http_minor >= 1 && req->hosts == 0)
        return "an HTTP/1.1 request needs a Host header";
    return NULL;
}

int lg_http_request_feed(struct lg_http_request *req, const char *buf, size_t len,
                         const char **problem)
{
    if (req->complete)
        return 1;
    if (len <= req->fed)
        return 0; /* nothing new: a length of 0 would tell http-parser the stream ended */
    http_parser *parser = parser_of(req);
    struct feed_ctx ctx = {.req = req, .base = buf};
    parser->data = &ctx;
    size_t n = http_parser_execute(parser, &settings, buf + req->fed, len - req->fed);
    req->fed += (uint32_t)n;
    enum http_errno err = HTTP_PARSER_ERRNO(parser);
    const char *strict = strict_problem(req, buf, len);
    if (strict) {
        req->complete = false;
        *problem = strict;
        return -1;
    }
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

bool lg_http_request_is_websocket(const char *buf, const struct lg_http_request *req)
{
    const struct lg_slice *h = &req->headers[LG_HDR_UPGRADE];
    static const char token[] = "websocket";
    size_t n = sizeof token - 1;
    if (!req->upgrade || req->method == LG_HTTP_CONNECT)
        return false;
    for (uint32_t i = 0; i < h->len;) { /* Upgrade = #protocol: "websocket", "h2c, websocket" */
        while (i < h->len && (buf[h->off + i] == ' ' || buf[h->off + i] == '\t' ||
                              buf[h->off + i] == ','))
            i++;
        uint32_t start = i;
        while (i < h->len && buf[h->off + i] != ',' && buf[h->off + i] != ' ' &&
               buf[h->off + i] != '\t')
            i++;
        if (i - start == n && strncasecmp(buf + h->off + start, token, n) == 0)
            return true;
    }
    return false;
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
