/* sse_refusal.c - see sse_refusal.h. */
#include "sse_refusal.h"

#include <stdio.h>
#include <string.h>

#include "auth.h"
#include "clock.h"
#include "http_response.h"

bool lg_sse_refusal_applies(const char *buf, const struct lg_http_request *req)
{
    return req->method == LG_HTTP_GET && req->path.len == 4 &&
           memcmp(buf + req->path.off, "/sse", 4) == 0;
}

bool lg_sse_refusal_head_applies(const char *buf, size_t len)
{
    static const char line[] = "GET /sse";
    size_t n = sizeof line - 1;
    return len > n && memcmp(buf, line, n) == 0 && (buf[n] == '?' || buf[n] == ' ');
}

bool lg_sse_refusal_retried(int status)
{
    return status == 429 || (status >= 500 && status != 501 && status != 505);
}

uint32_t lg_sse_refusal_retry_ms(uint32_t mean_ms)
{
    static _Thread_local uint64_t state;
    uint64_t x = state ? state : (lg_mono_ns() ^ (uintptr_t)&state) | 1;
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    state = x;
    uint32_t low = mean_ms / 3, span = mean_ms * 5 / 3 - low;
    return low + (uint32_t)(x % ((uint64_t)span + 1));
}

void lg_sse_refusal(struct lg_buf *b, uint32_t sse_retry_ms, int status, const char *code,
                    const char *message, const char *cors)
{
    lg_http_sse_refusal_response(b, status, code, message, lg_sse_refusal_retry_ms(sse_retry_ms),
                                 cors);
}

bool lg_cors_lines(const struct lg_string_list *allowed, const char *origin, size_t len, char *out)
{
    return lg_cors_lines_for(lg_origin_check(allowed, origin, len), origin, len, out);
}

bool lg_cors_lines_for(enum lg_origin_verdict verdict, const char *origin, size_t len, char *out)
{
    out[0] = '\0';
    switch (verdict) {
    case LG_ORIGIN_REFUSED:
        return false;
    case LG_ORIGIN_ANY:
        snprintf(out, LG_CORS_LINES_MAX, "Access-Control-Allow-Origin: *\r\n");
        return true;
    case LG_ORIGIN_LISTED:
        snprintf(out, LG_CORS_LINES_MAX,
                 "Access-Control-Allow-Origin: %.*s\r\nAccess-Control-Allow-Credentials: true\r\n"
                 "Vary: Origin\r\n",
                 (int)len, origin);
        return true;
    default:
        return true;
    }
}
