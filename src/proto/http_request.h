/*
 * http_request.h - the public port's request head parser, and query-string decoding.
 *
 * Parsing is done by libhttp-parser (Debian's http-parser 2.9), fed incrementally; this module
 * only records what livegate needs. Pure functions over byte buffers the caller owns: nothing
 * here allocates, does I/O or touches a global, so the security work can fuzz it directly.
 *
 * Owns:    nothing beyond the struct; string fields are offsets into the caller's buffer, which
 *          must not move or change while the request is in use.
 * Threads: any, one request per thread at a time.
 * Bounds:  the caller caps the head (limits.max_request_head_bytes): 431 beyond it.
 */
#ifndef LG_HTTP_REQUEST_H
#define LG_HTTP_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A slice of the caller's buffer. */
struct lg_slice {
    uint32_t off;
    uint32_t len;
};

enum lg_header_id {
    LG_HDR_LAST_EVENT_ID = 0,
    LG_HDR_UPGRADE,
    LG_HDR_ORIGIN,
    LG_HDR_SEC_WEBSOCKET_KEY,
    LG_HDR_SEC_WEBSOCKET_VERSION,
    LG_HDR_SEC_WEBSOCKET_PROTOCOL,
    LG_HDR_X_FORWARDED_FOR,
    LG_HDR_FORWARDED,
    LG_HDR_AUTHORIZATION,
    LG_HDR_COOKIE,
    LG_HDR_HOST,
    LG_HDR_COUNT_
};

enum lg_http_method {
    LG_HTTP_OTHER = 0,
    LG_HTTP_GET,
    LG_HTTP_HEAD,
    LG_HTTP_POST,
    LG_HTTP_OPTIONS,
    LG_HTTP_CONNECT
};

/* libhttp-parser's http.h cannot be included next to libwebsockets.h (both define enum
 * http_status), so its state is kept here as opaque, suitably aligned bytes. */
#define LG_HTTP_PARSER_STATE_BYTES 32

struct lg_http_request {
    _Alignas(8) unsigned char parser[LG_HTTP_PARSER_STATE_BYTES]; /* private: http_parser */
    uint32_t fed;                   /* private: bytes of the buffer already fed */
    int current_header;             /* private: header whose value is being read, or -1 */
    bool in_value;                  /* private */
    struct lg_slice field;          /* private: header name being read (may span feeds) */
    uint32_t line_checked;          /* private: line endings checked up to here */
    bool head_checked;              /* private: every line ending of the head was checked */
    uint8_t hosts;                  /* private: Host header lines seen */
    bool complete;                  /* the head (and any body) has been parsed */
    uint32_t head_len;              /* bytes of the buffer this request used */
    enum lg_http_method method;
    uint8_t http_major, http_minor; /* the request line's HTTP version */
    bool keep_alive;                /* the connection may carry another request */
    bool upgrade;                   /* the client asked for a protocol upgrade */
    struct lg_slice target;         /* raw request-target, e.g. "/sse?topic=a" */
    struct lg_slice path;           /* target up to '?', not decoded */
    struct lg_slice query;          /* after '?', not decoded; len 0 if none */
    struct lg_slice headers[LG_HDR_COUNT_]; /* len 0 = absent */
};

void lg_http_request_init(struct lg_http_request *req);

/*
 * Feed buf[0..len): the whole buffer received so far on this connection for this request (the
 * parser only looks at bytes it has not seen). Return value: 1 when the request is complete,
 * 0 when more bytes are needed, -1 when the request is malformed (*problem says why).
 * Malformed beyond what http-parser refuses (RFC 9112): a bare CR in the head (Debian's lenient
 * http-parser takes CR + any byte for the CRLF that ends a head, which would let a second
 * request hide behind it), a request line without an HTTP version (HTTP/0.9), more than one
 * Host header, or none in an HTTP/1.1 request.
 */
int lg_http_request_feed(struct lg_http_request *req, const char *buf, size_t len,
                         const char **problem);

/* Whether req, complete, asks to become a WebSocket (Upgrade lists "websocket"). Any other
 * upgrade (h2c, ...) may be ignored and the request served as HTTP/1.1 (RFC 9110 7.8). */
bool lg_http_request_is_websocket(const char *buf, const struct lg_http_request *req);

/*
 * Iterate the query string q[0..len): each call decodes the next "name=value" pair
 * (percent-escapes and '+' as space) into name/value (NUL-terminated).
 * Return value: 1 pair found, 0 end of query, -1 malformed escape or value longer than the cap,
 * -2 the decoded name or value holds a NUL byte (%00).
 */
int lg_query_next(const char *q, size_t len, size_t *pos, char *name, size_t name_cap,
                  char *value, size_t value_cap);

/* Percent-decode src[0..len) into out (NUL-terminated, so at most cap - 1 bytes of text).
 * Return value: the decoded length; -1 for a malformed escape (its offset in *bad_at when
 * bad_at is not NULL); -2 when the text does not fit. */
int lg_percent_decode(const char *src, size_t len, char *out, size_t cap, bool plus_is_space,
                      size_t *bad_at);

#endif
