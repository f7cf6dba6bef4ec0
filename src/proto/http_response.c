/* http_response.c - see http_response.h. */
#include "http_response.h"

#include <string.h>

const char *lg_http_reason(int status)
{
    switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 426: return "Upgrade Required";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default: return "Error";
    }
}

void lg_http_error_response(struct lg_buf *b, int status, const char *code, const char *message,
                            const char *extra_headers, bool keep_alive)
{
    struct lg_buf body;
    lg_buf_init(&body);
    lg_buf_append_str(&body, "{\"error\":");
    lg_encode_json_string(&body, code, strlen(code));
    lg_buf_append_str(&body, ",\"message\":");
    lg_encode_json_string(&body, message, strlen(message));
    lg_buf_append_str(&body, "}\n");
    lg_buf_appendf(b,
                   "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n"
                   "Cache-Control: no-store\r\nContent-Length: %zu\r\n%s%s\r\n",
                   status, lg_http_reason(status), body.len, extra_headers ? extra_headers : "",
                   keep_alive ? "" : "Connection: close\r\n");
    lg_buf_append(b, body.data, body.len);
    lg_buf_release(&body);
}
