/*
 * lg_sse.c - a Server-Sent Events client that parses like the HTML EventSource algorithm.
 *
 * Design: every received body byte is kept in c->raw. The parser is stateless between calls:
 * c->parsed only ever moves to a line boundary where no event is in progress, and an event is
 * (re)parsed from its first line until its blank line has arrived. So the per-event buffers
 * (data, event type) need no storage in the public struct, comments inside an unfinished
 * event are counted once (when it completes), and the spec's "last event ID buffer", which
 * survives across events, is found again by scanning the id: lines before the event.
 *
 * Line ends are LF, CR or CRLF. A CR that was the last byte received ends its line at once;
 * if the next byte to arrive is LF, it is skipped as the second half of that CRLF.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lg_internal.h"
#include "lg_test.h"

#define LG_TEST__SSE_HEAD_TIMEOUT_MS 10000

struct lg_test__line {
    size_t start, end; /* the line is raw[start, end) */
    size_t next;       /* offset after its terminator */
};

/* Return value: 1 a complete line at pos (terminated before limit), 0 none yet. */
static int lg_test__sse_line(const char *raw, size_t limit, size_t pos, struct lg_test__line *l)
{
    for (size_t i = pos; i < limit; i++) {
        if (raw[i] == '\n' || raw[i] == '\r') {
            l->start = pos;
            l->end = i;
            l->next = i + 1;
            if (raw[i] == '\r' && i + 1 < limit && raw[i + 1] == '\n')
                l->next = i + 2;
            return 1;
        }
    }
    return 0;
}

/* Split a line into field name and value ("field: value", one leading space stripped). */
static void lg_test__sse_field(const char *line, size_t len, size_t *flen, const char **value,
                              size_t *vlen)
{
    const char *colon = memchr(line, ':', len);
    if (!colon) {
        *flen = len;
        *value = line + len;
        *vlen = 0;
        return;
    }
    *flen = (size_t)(colon - line);
    *value = colon + 1;
    *vlen = len - *flen - 1;
    if (*vlen > 0 && **value == ' ') {
        (*value)++;
        (*vlen)--;
    }
}

static bool lg_test__field_is(const char *f, size_t flen, const char *name)
{
    return flen == strlen(name) && memcmp(f, name, flen) == 0;
}

static bool lg_test__sse_has_bom(const struct lg_sse_client *c)
{
    return c->raw_len >= 3 && memcmp(c->raw, "\xEF\xBB\xBF", 3) == 0;
}

static void lg_test__copy_value(char *dst, size_t cap, const char *v, size_t vlen)
{
    size_t n = vlen < cap - 1 ? vlen : cap - 1;
    memcpy(dst, v, n);
    dst[n] = '\0';
}

/* The last event ID set by the complete lines before `end` ("" if none). */
static void lg_test__sse_last_id(const struct lg_sse_client *c, size_t end, char *out, size_t cap)
{
    struct lg_test__line l;
    size_t pos = lg_test__sse_has_bom(c) ? 3 : 0;
    out[0] = '\0';
    while (pos < end && lg_test__sse_line(c->raw, end, pos, &l)) {
        pos = l.next;
        size_t flen, vlen;
        const char *v;
        lg_test__sse_field(c->raw + l.start, l.end - l.start, &flen, &v, &vlen);
        if (lg_test__field_is(c->raw + l.start, flen, "id") && !memchr(v, '\0', vlen))
            lg_test__copy_value(out, cap, v, vlen);
    }
}

/* Return value: 1 an event was dispatched into ev, 0 more bytes are needed, -1 no memory. */
static int lg_test__sse_parse(struct lg_sse_client *c, struct lg_sse_event *ev)
{
    if (c->parsed == 0 && c->raw_len > 0) {
        size_t n = c->raw_len < 3 ? c->raw_len : 3;
        if (memcmp(c->raw, "\xEF\xBB\xBF", n) == 0) { /* a BOM, or the start of one */
            if (n < 3)
                return 0;
            c->parsed = 3;
        }
    }
    if (c->parsed > 0 && c->parsed < c->raw_len && c->raw[c->parsed - 1] == '\r' &&
        c->raw[c->parsed] == '\n')
        c->parsed++; /* the LF of a CRLF whose CR ended the previous read */

    size_t pos = c->parsed, ev_start = c->parsed;
    char *data = NULL, type[sizeof ev->event] = "", id[sizeof ev->id] = "";
    size_t dlen = 0, dcap = 0;
    bool pending = false, have_id = false;
    int pending_comments = 0;
    struct lg_test__line l;

    while (lg_test__sse_line(c->raw, c->raw_len, pos, &l)) {
        pos = l.next;
        const char *line = c->raw + l.start;
        size_t llen = l.end - l.start;
        if (llen == 0) { /* blank line: dispatch */
            c->comments += pending_comments;
            pending_comments = 0;
            c->parsed = pos;
            if (dlen == 0) { /* nothing to dispatch; the id (if any) stays in raw */
                type[0] = '\0';
                have_id = pending = false;
                ev_start = pos;
                continue;
            }
            data[--dlen] = '\0'; /* drop the last '\n' */
            ev->data = data;
            ev->data_len = dlen;
            snprintf(ev->event, sizeof ev->event, "%s", type[0] ? type : "message");
            if (have_id)
                snprintf(ev->id, sizeof ev->id, "%s", id);
            else
                lg_test__sse_last_id(c, ev_start, ev->id, sizeof ev->id);
            return 1;
        }
        if (line[0] == ':') {
            if (pending) {
                pending_comments++;
            } else {
                c->comments++;
                c->parsed = ev_start = pos;
            }
            continue;
        }
        size_t flen, vlen;
        const char *v;
        lg_test__sse_field(line, llen, &flen, &v, &vlen);
        if (lg_test__field_is(line, flen, "data")) {
            if (lg_test__reserve(&data, &dcap, dlen + vlen + 1) < 0) {
                free(data);
                return -1;
            }
            memcpy(data + dlen, v, vlen);
            dlen += vlen;
            data[dlen++] = '\n';
            data[dlen] = '\0';
            pending = true;
        } else if (lg_test__field_is(line, flen, "event")) {
            lg_test__copy_value(type, sizeof type, v, vlen);
            pending = true;
        } else if (lg_test__field_is(line, flen, "id")) {
            if (!memchr(v, '\0', vlen)) {
                lg_test__copy_value(id, sizeof id, v, vlen);
                have_id = true;
            }
            pending = true;
        } else {
            if (lg_test__field_is(line, flen, "retry") && vlen > 0 &&
                strspn(v, "0123456789") >= vlen) {
                long ms = 0;
                for (size_t i = 0; i < vlen && ms <= INT32_MAX; i++)
                    ms = ms * 10 + (v[i] - '0');
                c->retry_ms = ms > INT32_MAX ? INT32_MAX : (int)ms;
            }
            /* retry and unknown fields do not belong to an event */
            if (!pending)
                c->parsed = ev_start = pos;
        }
    }
    free(data);
    return 0;
}

int lg_test__send_sse_request(int fd, uint16_t port, const char *path, const char *extra_headers)
{
    return lg_test__send_printf(fd,
                                "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%u\r\n"
                                "Accept: text/event-stream\r\nCache-Control: no-cache\r\n%s\r\n",
                                path, port, extra_headers ? extra_headers : "");
}

void lg_test__sse_reset(struct lg_sse_client *c)
{
    memset(c, 0, sizeof *c);
    c->fd = -1;
    c->retry_ms = -1;
}

int lg_test__sse_read_head(struct lg_sse_client *c, struct lg_test__rbuf *b, int fd,
                           int timeout_ms, size_t *head_len, const char *who)
{
    if (lg_test__read_head_on(b, fd, timeout_ms, head_len, who) < 0)
        return -1;
    c->status = lg_test__parse_status(b->p);
    lg_test__copy_head(c->headers, sizeof c->headers, b->p, *head_len);
    return 0;
}

void lg_test__sse_take_body(struct lg_sse_client *c, struct lg_test__rbuf *b, int fd,
                            size_t head_len, const char *who, const char *what)
{
    c->raw = lg_test__rbuf_take_after(b, head_len, &c->raw_len, &c->raw_cap);
    c->fd = fd;
    if (c->status != 200)
        fprintf(stderr, "%s: %s answered %d: %.*s\n", who, what, c->status,
                (int)(c->raw_len < 512 ? c->raw_len : 512), c->raw);
}

int lg_sse_open(struct lg_sse_client *c, uint16_t port, const char *path, const char *extra_headers)
{
    lg_test__sse_reset(c);
    int fd = lg_tcp_connect(port);
    if (fd < 0)
        return -1;
    if (lg_test__send_sse_request(fd, port, path, extra_headers) < 0) {
        close(fd);
        return -1;
    }

    struct lg_test__rbuf b;
    size_t head_len;
    if (lg_test__sse_read_head(c, &b, fd, LG_TEST__SSE_HEAD_TIMEOUT_MS, &head_len, "lg_sse_open") <
        0)
        return -1;
    char val[64];
    if (c->status != 200 && lg_test__header_find(c->headers, "Content-Length", val, sizeof val)) {
        /* an error answer: read its body and treat the stream as ended */
        if (lg_test__rbuf_need(&b, head_len + strtoull(val, NULL, 10)) == 0)
            c->closed = true;
    }
    if (lg_test__header_find(c->headers, "Transfer-Encoding", val, sizeof val))
        fprintf(stderr, "lg_sse_open: warning: Transfer-Encoding: %s; raw keeps its framing\n",
                val);

    /* the bytes after the head are the start of the body */
    lg_test__sse_take_body(c, &b, fd, head_len, "lg_sse_open", path);
    return 0;
}

int lg_sse_next(struct lg_sse_client *c, struct lg_sse_event *ev, int timeout_ms)
{
    memset(ev, 0, sizeof *ev);
    int64_t deadline = lg_test__deadline(timeout_ms);
    for (;;) {
        int rc = lg_test__sse_parse(c, ev);
        if (rc != 0)
            return rc;
        if (c->closed || c->fd < 0)
            return -1;
        if (lg_test__reserve(&c->raw, &c->raw_cap, c->raw_len + 16384) < 0)
            return -1;
        ssize_t n = lg_test__recv_deadline(c->fd, c->raw + c->raw_len,
                                           c->raw_cap - 1 - c->raw_len, deadline);
        if (n == -2)
            return 0;
        if (n <= 0) {
            c->closed = true; /* parse once more: complete events before EOF still count */
            continue;
        }
        c->raw_len += (size_t)n;
        c->raw[c->raw_len] = '\0';
    }
}

void lg_sse_event_free(struct lg_sse_event *ev)
{
    free(ev->data);
    ev->data = NULL;
    ev->data_len = 0;
}

void lg_sse_close(struct lg_sse_client *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    free(c->raw);
    c->raw = NULL;
    c->raw_len = c->raw_cap = c->parsed = 0;
}
