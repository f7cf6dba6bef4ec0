/*
 * lg_stall.c - clients that stop reading and a keep-alive publisher:
 * the tools of the backpressure tests.
 *
 * A stalled client is a real socket whose receive buffer is made small (SO_RCVBUF before
 * connect(), so the window advertised in the handshake is small too). It sends its request
 * and then reads nothing, so the server's socket stops being writable after a few KiB and
 * the server's slow-consumer policy has to act. Later the test may "resume" the client: the
 * response head is read then and the socket becomes an ordinary lg_sse_client or
 * lg_ws_client, so everything the server queued meanwhile can be checked byte for byte.
 *
 * Owns:    nothing global. lg_stall_*_resume() hands the fd to the client struct it fills.
 * Threads: single-threaded test code.
 * Bounds:  every wait takes a timeout; buffers are bounded by LG_TEST__MAX_BUF.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <jansson.h>

#include "lg_internal.h"
#include "lg_test.h"

#define LG_STALL__HEAD_TIMEOUT_MS 10000

/* ---- Stalled sockets --------------------------------------------------------------------- */

int lg_stall_connect(uint16_t port, int rcvbuf) { return lg_test__connect(port, rcvbuf); }

int lg_stall_sse_open(uint16_t port, const char *path, const char *extra_headers, int rcvbuf)
{
    int fd = lg_stall_connect(port, rcvbuf);
    if (fd < 0)
        return -1;
    if (lg_test__send_sse_request(fd, port, path, extra_headers) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

int lg_stall_sse_resume(struct lg_sse_client *c, int fd, int timeout_ms)
{
    lg_test__sse_reset(c);
    struct lg_test__rbuf b;
    size_t head_len;
    if (lg_test__sse_read_head(c, &b, fd, timeout_ms, &head_len, "lg_stall_sse_resume") < 0)
        return -1;
    lg_test__sse_take_body(c, &b, fd, head_len, "lg_stall_sse_resume", "the stalled stream");
    return 0;
}

int lg_stall_ws_open(struct lg_stall_ws *w, uint16_t port, const char *path, int rcvbuf)
{
    memset(w, 0, sizeof *w);
    w->fd = -1;
    int fd = lg_stall_connect(port, rcvbuf);
    if (fd < 0)
        return -1;
    if (lg_test__send_ws_upgrade(fd, port, path, "livegate.v1", NULL, w->expect) < 0) {
        close(fd);
        return -1;
    }
    w->fd = fd;
    return 0;
}

int lg_stall_ws_resume(struct lg_ws_client *c, struct lg_stall_ws *w, int timeout_ms)
{
    memset(c, 0, sizeof *c);
    c->fd = -1;
    int fd = w->fd;
    w->fd = -1;
    struct lg_test__rbuf b;
    size_t head_len;
    char head[4096], val[256];
    if (lg_test__read_head_on(&b, fd, timeout_ms, &head_len, "lg_stall_ws_resume") < 0)
        return -1;
    lg_test__copy_head(head, sizeof head, b.p, head_len);
    c->status = lg_test__parse_status(head);
    if (c->status != 101 || !lg_test__header_find(head, "Sec-WebSocket-Accept", val, sizeof val) ||
        strcmp(val, w->expect) != 0) {
        fprintf(stderr, "lg_stall_ws_resume: bad handshake answer:\n%s\n", head);
        lg_test__rbuf_release(&b);
        close(fd);
        return -1;
    }
    lg_test__header_find(head, "Sec-WebSocket-Protocol", c->protocol, sizeof c->protocol);
    c->buf = (unsigned char *)lg_test__rbuf_take_after(&b, head_len, &c->len, &c->cap);
    c->fd = fd;
    return 0;
}

void lg_stall_ws_close(struct lg_stall_ws *w)
{
    if (w->fd >= 0)
        close(w->fd);
    w->fd = -1;
}

/* ---- Keep-alive HTTP --------------------------------------------------------------------- */

void lg_stall_ka_init(struct lg_stall_ka *k, uint16_t port)
{
    memset(k, 0, sizeof *k);
    k->fd = -1;
    k->port = port;
}

void lg_stall_ka_close(struct lg_stall_ka *k)
{
    if (k->fd >= 0)
        close(k->fd);
    k->fd = -1;
}

/* Read one response with Content-Length on k->fd (nothing may follow it); closes k when the
 * server said Connection: close. Return value: 0, or -1 (connection unusable). */
static int lg_stall_ka__read(struct lg_stall_ka *k, struct lg_http_response *out, int64_t deadline)
{
    struct lg_test__rbuf b;
    lg_test__rbuf_init(&b, k->fd, deadline);
    int rc = lg_test__read_sized_response(&b, out, "lg_stall_ka_request", true);
    char val[64];
    if (rc == 0 && lg_test__header_find(out->headers, "Connection", val, sizeof val) &&
        lg_test__header_has_token(val, "close"))
        lg_stall_ka_close(k);
    lg_test__rbuf_release(&b);
    return rc;
}

int lg_stall_ka_request(struct lg_stall_ka *k, const char *method, const char *path,
                        const char *extra_headers, const void *body, size_t body_len,
                        struct lg_http_response *out, int timeout_ms)
{
    memset(out, 0, sizeof *out);
    int64_t deadline = lg_test__deadline(timeout_ms);
    const char *extra = extra_headers ? extra_headers : "";
    char *req = NULL;
    size_t cap = 0;
    int rc = -1;
    if (lg_test__reserve(&req, &cap,
                         strlen(method) + strlen(path) + strlen(extra) + 128 + body_len) < 0)
        goto out;
    int n = snprintf(req, cap,
                     "%s %s HTTP/1.1\r\nHost: 127.0.0.1:%u\r\nContent-Length: %zu\r\n%s\r\n",
                     method, path, k->port, body_len, extra);
    if (body_len)
        memcpy(req + n, body, body_len);
    /* A kept connection the server has closed meanwhile fails on send or on the answer's head;
     * nothing was processed then, so one retry on a fresh connection is safe. */
    for (int attempt = 0; attempt < 2 && rc != 0; attempt++) {
        bool reused = k->fd >= 0;
        if (k->fd < 0 && (k->fd = lg_tcp_connect(k->port)) < 0)
            goto out;
        if (lg_send_all(k->fd, req, (size_t)n + body_len) == 0 &&
            lg_stall_ka__read(k, out, deadline) == 0) {
            rc = 0;
            break;
        }
        lg_stall_ka_close(k);
        if (out->status != 0 || !reused)
            break; /* an answer began: do not send the request twice */
        free(out->body);
        memset(out, 0, sizeof *out);
    }
out:
    free(req);
    if (!out->body)
        out->body = calloc(1, 1);
    return rc;
}
