/* http_response.c - see http_response.h. */
#include "http_response.h"

#include <string.h>

const char *lg_http_reason(int status)
{
    switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 414: return "URI Too Long";
    case 426: return "Upgrade Required";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Error";
    }
}

/* s[0..len) as JSON string text, each malformed UTF-8 sequence (a message may quote request
 * bytes, cut anywhere) replaced by U+FFFD, so the body stays valid JSON. */
static void append_json_text(struct lg_buf *b, const char *s, size_t len)
{
    if (lg_utf8_valid(s, len)) {
        lg_encode_json_string(b, s, len);
        return;
    }
    struct lg_buf clean;
    lg_buf_init(&clean);
    for (size_t i = 0; i < len;) {
        unsigned char c = (unsigned char)s[i];
        size_t n = c < 0x80 ? 1 : c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3
                 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
        if (n && i + n <= len && lg_utf8_valid(s + i, n)) {
            lg_buf_append(&clean, s + i, n);
            i += n;
        } else {
            lg_buf_append(&clean, "\xef\xbf\xbd", 3); /* U+FFFD */
            i++;
        }
    }
    lg_encode_json_string(b, clean.data ? clean.data : "", clean.len);
    lg_buf_release(&clean);
}

void lg_http_error_response(struct lg_buf *b, int status, const char *code, const char *message,
                            const char *extra_headers, bool keep_alive)
{
    struct lg_buf body;
    lg_buf_init(&body);
    lg_buf_append_str(&body, "{\"error\":");
    append_json_text(&body, code, strlen(code));
    lg_buf_append_str(&body, ",\"message\":");
    append_json_text(&body, message, strlen(message));
    lg_buf_append_str(&body, "}\n");
    lg_buf_appendf(b,
                   "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n"
                   "Cache-Control: no-store\r\nContent-Length: %zu\r\n%s%s\r\n",
                   status, lg_http_reason(status), body.len, extra_headers ? extra_headers : "",
                   keep_alive ? "" : "Connection: close\r\n");
    lg_buf_append(b, body.data, body.len);
    lg_buf_release(&body);
}

void lg_http_sse_refusal_response(struct lg_buf *b, int status, const char *code,
                                  const char *message, uint32_t retry_ms,
                                  const char *extra_headers)
{
    struct lg_buf body;
    lg_buf_init(&body);
    lg_buf_appendf(&body, "retry: %u\nevent: refused\ndata: {\"status\":%d,\"error\":", retry_ms,
                   status);
    append_json_text(&body, code, strlen(code));
    lg_buf_append_str(&body, ",\"message\":");
    append_json_text(&body, message, strlen(message));
    lg_buf_appendf(&body, ",\"retry_ms\":%u}\n\n", retry_ms);
    lg_buf_appendf(b,
                   "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                   "Cache-Control: no-store\r\nX-Livegate-Refused: %d %s\r\n"
                   "Content-Length: %zu\r\n%sConnection: close\r\n\r\n",
                   status, code, body.len, extra_headers ? extra_headers : "");
    lg_buf_append(b, body.data, body.len);
    lg_buf_release(&body);
}
