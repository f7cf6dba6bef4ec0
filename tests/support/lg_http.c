/*
 * lg_http.c - plain TCP and a minimal HTTP/1.1 client for the integration tests.
 *
 * One request per connection (Connection: close). Responses are read with Content-Length,
 * chunked transfer coding, or up to EOF; every wait is bounded by poll() against a deadline.
 */
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <jansson.h>

#include "lg_internal.h"
#include "lg_test.h"

#define LG_TEST__SEND_TIMEOUT_S 10 /* a peer that stops reading fails a send after this */

/* ---- Clock and buffers ------------------------------------------------------------------ */

int64_t lg_test__deadline(int timeout_ms)
{
    return lg_now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
}

int lg_left_ms(int64_t deadline)
{
    int64_t left = deadline - lg_now_ms();
    if (left < 0)
        return 0;
    return left > INT32_MAX ? INT32_MAX : (int)left;
}

int lg_test__send_printf(int fd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *req = NULL;
    size_t cap = 0;
    if (n < 0 || lg_test__reserve(&req, &cap, (size_t)n) < 0)
        return -1;
    va_start(ap, fmt);
    vsnprintf(req, cap, fmt, ap);
    va_end(ap);
    int rc = lg_send_all(fd, req, (size_t)n);
    free(req);
    return rc;
}

int lg_test__reserve(char **buf, size_t *cap, size_t need)
{
    if (need + 1 <= *cap)
        return 0;
    if (need + 1 > LG_TEST__MAX_BUF) {
        fprintf(stderr, "lg_test: buffer would exceed %zu bytes\n", LG_TEST__MAX_BUF);
        return -1;
    }
    size_t ncap = *cap ? *cap : 4096;
    while (ncap < need + 1)
        ncap *= 2;
    char *n = realloc(*buf, ncap);
    if (!n) {
        fprintf(stderr, "lg_test: out of memory\n");
        return -1;
    }
    *buf = n;
    *cap = ncap;
    return 0;
}

ssize_t lg_test__recv_deadline(int fd, void *buf, size_t cap, int64_t deadline)
{
    for (;;) {
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        int rc = poll(&pfd, 1, lg_left_ms(deadline));
        if (rc < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (rc == 0)
            return -2;
        ssize_t n = recv(fd, buf, cap, 0);
        if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
            continue;
        return n;
    }
}

void lg_test__rbuf_init(struct lg_test__rbuf *b, int fd, int64_t deadline)
{
    *b = (struct lg_test__rbuf){.fd = fd, .deadline = deadline};
}

void lg_test__rbuf_release(struct lg_test__rbuf *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

int lg_test__rbuf_fill(struct lg_test__rbuf *b)
{
    if (b->eof)
        return 0;
    if (lg_test__reserve(&b->p, &b->cap, b->len + 16384) < 0)
        return -1;
    ssize_t n = lg_test__recv_deadline(b->fd, b->p + b->len, b->cap - 1 - b->len, b->deadline);
    if (n == 0)
        b->eof = true;
    if (n <= 0)
        return (int)n;
    b->len += (size_t)n;
    b->p[b->len] = '\0';
    return 1;
}

int lg_test__rbuf_find(struct lg_test__rbuf *b, size_t from, const char *needle, size_t *at)
{
    size_t nlen = strlen(needle);
    for (;;) {
        if (b->len >= from + nlen) {
            const char *hit = memmem(b->p + from, b->len - from, needle, nlen);
            if (hit) {
                *at = (size_t)(hit - b->p);
                return 0;
            }
        }
        int rc = lg_test__rbuf_fill(b);
        if (rc <= 0)
            return rc == 0 ? LG_TEST__CLOSED : rc; /* 0 would read as found */
    }
}

int lg_test__rbuf_need(struct lg_test__rbuf *b, size_t n)
{
    while (b->len < n) {
        int rc = lg_test__rbuf_fill(b);
        if (rc <= 0)
            return rc;
    }
    return 0;
}

static const char *lg_test__why(int rc)
{
    return rc == 0 || rc == LG_TEST__CLOSED ? "connection closed"
           : rc == -2                       ? "timed out"
                                            : "receive error";
}

/* ---- Response heads --------------------------------------------------------------------- */

int lg_test__read_head(struct lg_test__rbuf *b, size_t *head_len, const char *who)
{
    size_t at;
    int rc = lg_test__rbuf_find(b, 0, "\r\n\r\n", &at);
    if (rc != 0) {
        fprintf(stderr, "%s: no response head (%s; %zu bytes received)\n", who, lg_test__why(rc),
                b->len);
        return -1;
    }
    *head_len = at + 4;
    return 0;
}

int lg_test__read_head_on(struct lg_test__rbuf *b, int fd, int timeout_ms, size_t *head_len,
                          const char *who)
{
    lg_test__rbuf_init(b, fd, lg_test__deadline(timeout_ms));
    if (lg_test__read_head(b, head_len, who) == 0)
        return 0;
    lg_test__rbuf_release(b);
    close(fd);
    return -1;
}

char *lg_test__rbuf_take_after(struct lg_test__rbuf *b, size_t head_len, size_t *len, size_t *cap)
{
    memmove(b->p, b->p + head_len, b->len - head_len);
    *len = b->len - head_len;
    *cap = b->cap;
    b->p[*len] = '\0';
    char *p = b->p;
    b->p = NULL;
    b->len = b->cap = 0;
    return p;
}

int lg_test__parse_status(const char *head)
{
    if (strncmp(head, "HTTP/1.", 7) != 0 || !isdigit((unsigned char)head[7]) || head[8] != ' ')
        return 0;
    int st = 0;
    for (int i = 9; i < 12; i++) {
        if (!isdigit((unsigned char)head[i]))
            return 0;
        st = st * 10 + (head[i] - '0');
    }
    return st;
}

void lg_test__copy_head(char *dst, size_t cap, const char *head, size_t head_len)
{
    size_t n = head_len >= 2 ? head_len - 2 : head_len;
    if (n > cap - 1)
        n = cap - 1;
    memcpy(dst, head, n);
    dst[n] = '\0';
}

bool lg_test__header_find(const char *head, const char *name, char *out, size_t cap)
{
    size_t nlen = strlen(name);
    const char *line = strstr(head, "\r\n"); /* skip the status line */
    while (line) {
        line += 2;
        const char *end = strstr(line, "\r\n");
        size_t llen = end ? (size_t)(end - line) : strlen(line);
        if (llen == 0)
            break;
        if (llen > nlen && line[nlen] == ':' && strncasecmp(line, name, nlen) == 0) {
            const char *v = line + nlen + 1, *ve = line + llen;
            while (v < ve && (*v == ' ' || *v == '\t'))
                v++;
            while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
                ve--;
            if (cap > 0) {
                size_t n = (size_t)(ve - v) < cap - 1 ? (size_t)(ve - v) : cap - 1;
                memcpy(out, v, n);
                out[n] = '\0';
            }
            return true;
        }
        line = end;
    }
    return false;
}

bool lg_test__header_has_token(const char *value, const char *token)
{
    size_t tlen = strlen(token);
    const char *p = value;
    while (*p) {
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        const char *s = p;
        while (*p && *p != ',')
            p++;
        const char *e = p;
        while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
            e--;
        if ((size_t)(e - s) == tlen && strncasecmp(s, token, tlen) == 0)
            return true;
    }
    return false;
}

/* ---- Plain TCP ---------------------------------------------------------------------------- */

int lg_test__connect(uint16_t port, int rcvbuf)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        fprintf(stderr, "lg_tcp_connect: socket: %s\n", strerror(errno));
        return -1;
    }
    /* Before connect(), so the window the server sees is small from the start. */
    if (rcvbuf > 0 && setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf) != 0) {
        fprintf(stderr, "lg_tcp_connect: SO_RCVBUF: %s\n", strerror(errno));
        close(fd);
        return -1;
    }
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int rc;
    do
        rc = connect(fd, (struct sockaddr *)&sa, sizeof sa);
    while (rc < 0 && errno == EINTR);
    if (rc < 0) {
        fprintf(stderr, "lg_tcp_connect: 127.0.0.1:%u: %s\n", port, strerror(errno));
        close(fd);
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct timeval tv = {.tv_sec = LG_TEST__SEND_TIMEOUT_S};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    return fd;
}

int lg_tcp_connect(uint16_t port) { return lg_test__connect(port, 0); }

int lg_send_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            fprintf(stderr, "lg_send_all: %s\n",
                    errno == EAGAIN || errno == EWOULDBLOCK ? "peer stopped reading (timeout)"
                                                            : strerror(errno));
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/*
 * needle NULL means "until EOF": then EOF returns the bytes held and only a timeout is -1.
 * A buffer that fills up (cap - 1 bytes) without the needle is -1 too.
 */
ssize_t lg_recv_until(int fd, char *buf, size_t cap, size_t *len, const char *needle,
                      int timeout_ms)
{
    int64_t deadline = lg_test__deadline(timeout_ms);
    size_t nlen = needle ? strlen(needle) : 0;
    if (cap == 0)
        return -1;
    if (*len > cap - 1)
        *len = cap - 1;
    buf[*len] = '\0';
    for (;;) {
        if (needle && *len >= nlen && memmem(buf, *len, needle, nlen))
            return (ssize_t)*len;
        if (*len >= cap - 1)
            return -1;
        ssize_t n = lg_test__recv_deadline(fd, buf + *len, cap - 1 - *len, deadline);
        if (n == 0 && !needle)
            return (ssize_t)*len;
        if (n <= 0)
            return -1;
        *len += (size_t)n;
        buf[*len] = '\0';
    }
}

/* ---- HTTP requests ---------------------------------------------------------------------- */

static bool lg_test__has_header_line(const char *headers, const char *name)
{
    if (!headers)
        return false;
    size_t nlen = strlen(name);
    for (const char *l = headers; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL)
        if (strncasecmp(l, name, nlen) == 0 && l[nlen] == ':')
            return true;
    return false;
}

/* Decode a chunked body starting at b->p[pos]. Return value: 0, or an rbuf status / -3. */
static int lg_test__read_chunked(struct lg_test__rbuf *b, size_t pos, char **body, size_t *blen)
{
    size_t bcap = 0;
    for (;;) {
        size_t eol;
        int rc = lg_test__rbuf_find(b, pos, "\r\n", &eol);
        if (rc != 0)
            return rc;
        char *end;
        unsigned long long size = strtoull(b->p + pos, &end, 16);
        if (end == b->p + pos || size > LG_TEST__MAX_BUF)
            return -3;
        pos = eol + 2;
        if (size == 0) {
            /* trailers, up to an empty line */
            for (;;) {
                rc = lg_test__rbuf_find(b, pos, "\r\n", &eol);
                if (rc != 0)
                    return rc;
                bool empty = eol == pos;
                pos = eol + 2;
                if (empty)
                    return 0;
            }
        }
        rc = lg_test__rbuf_need(b, pos + size + 2);
        if (rc != 0)
            return rc;
        if (lg_test__reserve(body, &bcap, *blen + size) < 0)
            return -1;
        memcpy(*body + *blen, b->p + pos, size);
        *blen += size;
        (*body)[*blen] = '\0';
        pos += size + 2;
    }
}

/* Parse a Content-Length value. Return value: 0, or -1 after printing why (prefixed with who). */
static int lg_test__content_length(const char *val, size_t *cl, const char *who)
{
    char *end;
    unsigned long long v = strtoull(val, &end, 10);
    if (end == val || *end || v > LG_TEST__MAX_BUF) {
        fprintf(stderr, "%s: bad Content-Length: %s\n", who, val);
        return -1;
    }
    *cl = (size_t)v;
    return 0;
}

/* Copy len bytes at offset from of b into out->body (malloc'd, NUL-terminated). 0 or -1. */
static int lg_test__take_body(const struct lg_test__rbuf *b, size_t from, size_t len,
                              struct lg_http_response *out)
{
    out->body = malloc(len + 1);
    if (!out->body)
        return -1;
    memcpy(out->body, b->p + from, len);
    out->body[len] = '\0';
    out->body_len = len;
    return 0;
}

static int lg_test__read_response(struct lg_test__rbuf *b, const char *method,
                                  struct lg_http_response *out)
{
    size_t head_len;
    for (;;) {
        if (lg_test__read_head(b, &head_len, "lg_http_request") < 0)
            return -1;
        out->status = lg_test__parse_status(b->p);
        if (out->status == 0) {
            fprintf(stderr, "lg_http_request: bad status line: %.80s\n", b->p);
            return -1;
        }
        if (out->status >= 200 || out->status == 101)
            break;
        /* interim 1xx: drop it and read the real answer */
        memmove(b->p, b->p + head_len, b->len - head_len);
        b->len -= head_len;
        b->p[b->len] = '\0';
    }
    lg_test__copy_head(out->headers, sizeof out->headers, b->p, head_len);

    char val[64];
    bool no_body = strcmp(method, "HEAD") == 0 || out->status == 204 || out->status == 304 ||
                   out->status < 200;
    int rc = 0;
    if (no_body) {
        /* nothing to read */
    } else if (lg_test__header_find(out->headers, "Transfer-Encoding", val, sizeof val) &&
               lg_test__header_has_token(val, "chunked")) {
        rc = lg_test__read_chunked(b, head_len, &out->body, &out->body_len);
    } else if (lg_test__header_find(out->headers, "Content-Length", val, sizeof val)) {
        size_t cl;
        if (lg_test__content_length(val, &cl, "lg_http_request") < 0)
            return -1;
        rc = lg_test__rbuf_need(b, head_len + cl);
        if (rc == 0 && lg_test__take_body(b, head_len, cl, out) < 0)
            return -1;
    } else {
        while ((rc = lg_test__rbuf_fill(b)) > 0)
            ;
        if (rc == 0 && lg_test__take_body(b, head_len, b->len - head_len, out) < 0)
            return -1;
    }
    if (rc != 0) {
        fprintf(stderr, "lg_http_request: status %d, body incomplete (%s)\n", out->status,
                rc == -3 ? "bad chunk" : lg_test__why(rc));
        return -1;
    }
    return 0;
}

int lg_test__read_sized_response(struct lg_test__rbuf *b, struct lg_http_response *out,
                                 const char *who, bool extra_fails)
{
    size_t head_len, cl;
    if (lg_test__read_head(b, &head_len, who) < 0)
        return -1;
    out->status = lg_test__parse_status(b->p);
    lg_test__copy_head(out->headers, sizeof out->headers, b->p, head_len);
    char val[64];
    if (!lg_test__header_find(out->headers, "Content-Length", val, sizeof val)) {
        fprintf(stderr, "%s: answer %d without Content-Length\n%s\n", who, out->status,
                out->headers);
        return -1;
    }
    if (lg_test__content_length(val, &cl, who) < 0)
        return -1;
    int rc = lg_test__rbuf_need(b, head_len + cl);
    if (rc != 0) {
        fprintf(stderr, "%s: answer %d: body incomplete (%s)\n", who, out->status,
                lg_test__why(rc));
        return -1;
    }
    if (b->len != head_len + cl) {
        fprintf(stderr, "%s: %zu %s bytes after the answer\n", who, b->len - head_len - cl,
                extra_fails ? "unexpected" : "dropped");
        if (extra_fails)
            return -1;
    }
    return lg_test__take_body(b, head_len, cl, out);
}

int lg_http_read_response(int fd, struct lg_http_response *out, int timeout_ms)
{
    memset(out, 0, sizeof *out);
    struct lg_test__rbuf b;
    lg_test__rbuf_init(&b, fd, lg_test__deadline(timeout_ms));
    int rc = lg_test__read_sized_response(&b, out, "lg_http_read_response", false);
    if (!out->body)
        out->body = calloc(1, 1);
    lg_test__rbuf_release(&b);
    return rc;
}

int lg_http_request(uint16_t port, const char *method, const char *path, const char *extra_headers,
                    const void *body, size_t body_len, struct lg_http_response *out, int timeout_ms)
{
    memset(out, 0, sizeof *out);
    int64_t deadline = lg_test__deadline(timeout_ms);
    int rc = -1;
    char *req = NULL;
    size_t req_cap = 0;
    struct lg_test__rbuf b;
    lg_test__rbuf_init(&b, -1, deadline);

    int fd = lg_tcp_connect(port);
    if (fd < 0)
        goto out;
    b.fd = fd;

    char host[64] = "", clen[64] = "";
    if (!lg_test__has_header_line(extra_headers, "Host"))
        snprintf(host, sizeof host, "Host: 127.0.0.1:%u\r\n", port);
    bool wants_body = body != NULL || strcmp(method, "POST") == 0 || strcmp(method, "PUT") == 0 ||
                      strcmp(method, "PATCH") == 0;
    if (wants_body && !lg_test__has_header_line(extra_headers, "Content-Length") &&
        !lg_test__has_header_line(extra_headers, "Transfer-Encoding"))
        snprintf(clen, sizeof clen, "Content-Length: %zu\r\n", body ? body_len : 0);
    const char *extra = extra_headers ? extra_headers : "";
    size_t head_len = strlen(method) + strlen(path) + strlen(host) + strlen(clen) +
                      strlen(extra) + 64;
    if (lg_test__reserve(&req, &req_cap, head_len + (body ? body_len : 0)) < 0)
        goto out;
    int n = snprintf(req, req_cap, "%s %s HTTP/1.1\r\n%sConnection: close\r\n%s%s\r\n", method,
                     path, host, clen, extra);
    if (n < 0 || (size_t)n >= req_cap)
        goto out;
    if (body && body_len)
        memcpy(req + n, body, body_len);
    if (lg_send_all(fd, req, (size_t)n + (body ? body_len : 0)) < 0)
        goto out;
    rc = lg_test__read_response(&b, method, out);
out:
    if (!out->body) {
        out->body = calloc(1, 1);
        out->body_len = 0;
    }
    lg_test__rbuf_release(&b);
    free(req);
    if (fd >= 0)
        close(fd);
    return rc;
}

void lg_http_response_free(struct lg_http_response *r)
{
    free(r->body);
    r->body = NULL;
    r->body_len = 0;
}

bool lg_http_header(const struct lg_http_response *r, const char *name, char *out, size_t cap)
{
    return lg_test__header_find(r->headers, name, out, cap);
}

/* Percent-encode a topic for the request path, keeping the bytes a path may hold literally. */
static void lg_test__encode_topic(const char *topic, char *out, size_t cap)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)topic; *p && o + 4 < cap; p++) {
        if (isalnum(*p) || strchr("-._~:/$@,*!", *p)) {
            out[o++] = (char)*p;
        } else {
            out[o++] = '%';
            out[o++] = hex[*p >> 4];
            out[o++] = hex[*p & 15];
        }
    }
    out[o] = '\0';
}

int lg_publish(uint16_t control_port, const char *topic, const char *data, char *id_out,
               size_t id_cap)
{
    if (id_out && id_cap)
        id_out[0] = '\0';
    char enc[1024], path[1100];
    lg_test__encode_topic(topic, enc, sizeof enc);
    snprintf(path, sizeof path, "/v1/topics/%s/events", enc);
    struct lg_http_response r;
    const char *body = data ? data : "";
    if (lg_http_request(control_port, "POST", path, "Content-Type: text/plain\r\n", body,
                        strlen(body), &r, 10000) < 0) {
        lg_http_response_free(&r);
        return 0;
    }
    int status = r.status;
    if (status != 201) {
        fprintf(stderr, "lg_publish: %s answered %d: %s\n", path, status, r.body);
    } else if (id_out && id_cap) {
        json_error_t jerr;
        json_t *root = json_loadb(r.body, r.body_len, 0, &jerr);
        const char *id = json_string_value(json_object_get(root, "id"));
        if (id)
            snprintf(id_out, id_cap, "%s", id);
        else
            fprintf(stderr, "lg_publish: 201 body has no string \"id\": %s\n", r.body);
        json_decref(root);
    }
    lg_http_response_free(&r);
    return status;
}
