/*
 * lg_ws.c - a minimal RFC 6455 WebSocket client: masked frames out, unmasked frames in.
 *
 * Design: received bytes wait in c->buf until a whole message (first frame through the frame
 * with FIN) has arrived. Control frames are handled where they are found, even between the
 * fragments of a message, and cut out of the buffer, so nothing about a half-received
 * message has to live outside c->buf. Pings are answered, pongs skipped; a close frame is
 * recorded (code 1005 when it carries none) and answered with a close frame echoing its code.
 * SHA-1 and base64 for the handshake come from OpenSSL's libcrypto. When the server answers
 * with permessage-deflate, a message whose first frame has RSV1 set is inflated with zlib
 * (a fresh raw inflater per message and the 00 00 ff ff put back: livegate compresses every
 * message on its own).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/sha.h>
#include <zlib.h>

#include "lg_internal.h"
#include "lg_test.h"

#define LG_TEST__WS_GUID "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
#define LG_TEST__WS_HEAD_TIMEOUT_MS 10000
#define LG_TEST__WS_CLOSE_WAIT_MS 1000 /* lg_ws_close waits this long for the server's close */

enum {
    LG_TEST__WS_CONT = 0x0,
    LG_TEST__WS_TEXT = 0x1,
    LG_TEST__WS_BINARY = 0x2,
    LG_TEST__WS_CLOSE = 0x8,
    LG_TEST__WS_PING = 0x9,
    LG_TEST__WS_PONG = 0xA,
};

struct lg_test__frame {
    bool fin;
    bool rsv1;             /* permessage-deflate: a compressed message (first frame only) */
    int opcode;
    bool masked;           /* servers must not mask, but a masked frame is still decoded */
    unsigned char mask[4];
    size_t hdr;            /* header bytes, mask included */
    size_t plen;           /* payload bytes */
};

static void lg_test__random(void *buf, size_t n)
{
    unsigned char *p = buf;
    while (n > 0) {
        ssize_t got = getrandom(p, n, 0);
        if (got < 0) {
            if (errno == EINTR)
                continue;
            for (size_t i = 0; i < n; i++) /* no getrandom: any bytes will do for tests */
                p[i] = (unsigned char)rand();
            return;
        }
        p += got;
        n -= (size_t)got;
    }
}

/* base64(SHA-1(key + GUID)) into out (at least 29 bytes). */
static void lg_test__ws_accept(const char *key, char *out)
{
    char cat[128];
    unsigned char md[SHA_DIGEST_LENGTH];
    int n = snprintf(cat, sizeof cat, "%s%s", key, LG_TEST__WS_GUID);
    SHA1((const unsigned char *)cat, (size_t)n, md);
    EVP_EncodeBlock((unsigned char *)out, md, SHA_DIGEST_LENGTH);
}

/* ---- Frames ------------------------------------------------------------------------------ */

/* opcode may carry RSV1 (0x40). */
static int lg_test__ws_send_frame(struct lg_ws_client *c, int opcode, const void *payload,
                                  size_t len)
{
    if (c->fd < 0) {
        fprintf(stderr, "lg_ws: send on a closed connection\n");
        return -1;
    }
    size_t hl = 2 + (len < 126 ? 0 : len <= 0xffff ? 2 : 8) + 4;
    unsigned char *fr = malloc(hl + len);
    if (!fr)
        return -1;
    fr[0] = (unsigned char)(0x80 | opcode);
    if (len < 126) {
        fr[1] = (unsigned char)(0x80 | len);
    } else if (len <= 0xffff) {
        fr[1] = 0x80 | 126;
        fr[2] = (unsigned char)(len >> 8);
        fr[3] = (unsigned char)len;
    } else {
        fr[1] = 0x80 | 127;
        for (int i = 0; i < 8; i++)
            fr[2 + i] = (unsigned char)((uint64_t)len >> (56 - 8 * i));
    }
    unsigned char *mask = fr + hl - 4;
    lg_test__random(mask, 4);
    const unsigned char *p = payload;
    for (size_t i = 0; i < len; i++)
        fr[hl + i] = p[i] ^ mask[i & 3];
    int rc = lg_send_all(c->fd, fr, hl + len);
    free(fr);
    return rc;
}

/* Return value: 1 a complete frame starts at off, 0 more bytes needed, -1 protocol error. */
static int lg_test__ws_frame_at(const struct lg_ws_client *c, size_t off, struct lg_test__frame *f)
{
    size_t avail = c->len - off;
    if (avail < 2)
        return 0;
    const unsigned char *h = c->buf + off;
    if ((h[0] & 0x70) && !(c->deflate && (h[0] & 0x70) == 0x40)) {
        fprintf(stderr, "lg_ws: frame with RSV bits set that no extension explains\n");
        return -1;
    }
    f->fin = h[0] & 0x80;
    f->rsv1 = h[0] & 0x40;
    f->opcode = h[0] & 0x0f;
    f->masked = h[1] & 0x80;
    uint64_t plen = h[1] & 0x7f;
    size_t hl = 2;
    if (plen == 126) {
        if (avail < 4)
            return 0;
        plen = (uint64_t)h[2] << 8 | h[3];
        hl = 4;
    } else if (plen == 127) {
        if (avail < 10)
            return 0;
        plen = 0;
        for (int i = 0; i < 8; i++)
            plen = plen << 8 | h[2 + i];
        hl = 10;
    }
    if (plen > LG_TEST__MAX_BUF) {
        fprintf(stderr, "lg_ws: frame of %llu bytes is beyond the test bound\n",
                (unsigned long long)plen);
        return -1;
    }
    if (f->masked) {
        if (avail < hl + 4)
            return 0;
        memcpy(f->mask, h + hl, 4);
        hl += 4;
    }
    if (avail < hl + plen)
        return 0;
    f->hdr = hl;
    f->plen = (size_t)plen;
    return 1;
}

static void lg_test__ws_unmask(const struct lg_test__frame *f, unsigned char *payload)
{
    if (f->masked)
        for (size_t i = 0; i < f->plen; i++)
            payload[i] ^= f->mask[i & 3];
}

static void lg_test__ws_consume(struct lg_ws_client *c, size_t off, size_t n)
{
    memmove(c->buf + off, c->buf + off + n, c->len - off - n);
    c->len -= n;
}

static void lg_test__ws_drop(struct lg_ws_client *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
}

/*
 * Handle the control frame at off and cut it out of the buffer.
 * Return value: 1 it was a close frame, 0 otherwise, -1 protocol error.
 */
static int lg_test__ws_control(struct lg_ws_client *c, size_t off, const struct lg_test__frame *f,
                               bool close_sent)
{
    if (!f->fin || f->plen > 125) {
        fprintf(stderr, "lg_ws: fragmented or oversized control frame\n");
        return -1;
    }
    unsigned char *pl = c->buf + off + f->hdr;
    lg_test__ws_unmask(f, pl);
    int rc = 0;
    switch (f->opcode) {
    case LG_TEST__WS_PING:
        if (!close_sent && lg_test__ws_send_frame(c, LG_TEST__WS_PONG, pl, f->plen) < 0)
            rc = -1;
        break;
    case LG_TEST__WS_PONG:
        break;
    case LG_TEST__WS_CLOSE:
        if (f->plen == 1) {
            fprintf(stderr, "lg_ws: close frame with a 1-byte payload\n");
            return -1;
        }
        c->close_code = f->plen >= 2 ? (pl[0] << 8 | pl[1]) : 1005;
        snprintf(c->close_reason, sizeof c->close_reason, "%.*s",
                 f->plen > 2 ? (int)f->plen - 2 : 0, (const char *)pl + 2);
        if (!close_sent) /* echo the code, as RFC 6455 5.5.1 suggests */
            lg_test__ws_send_frame(c, LG_TEST__WS_CLOSE, pl, f->plen >= 2 ? 2 : 0);
        rc = 1;
        break;
    default:
        fprintf(stderr, "lg_ws: reserved control opcode 0x%x\n", f->opcode);
        return -1;
    }
    lg_test__ws_consume(c, off, f->hdr + f->plen);
    return rc;
}

/* A compressed message's payload (len bytes, room for 4 more) inflated into a malloc'd,
 * NUL-terminated string; NULL when it does not inflate. */
static char *lg_test__ws_inflate(unsigned char *in, size_t len)
{
    memcpy(in + len, "\0\0\xff\xff", 4);
    z_stream z = {0};
    if (inflateInit2(&z, -15) != Z_OK)
        return NULL;
    size_t cap = 4 * len + 256, n = 0;
    char *out = malloc(cap);
    z.next_in = in;
    z.avail_in = (uInt)len + 4;
    int rc = Z_OK;
    while (out && rc == Z_OK && z.avail_in) {
        if (cap - n < 1024) {
            char *bigger = realloc(out, cap *= 2);
            if (!bigger)
                free(out);
            out = bigger;
            if (!out)
                break;
        }
        z.next_out = (unsigned char *)out + n;
        z.avail_out = (uInt)(cap - n - 1);
        rc = inflate(&z, Z_SYNC_FLUSH);
        n = cap - 1 - z.avail_out;
    }
    inflateEnd(&z);
    if (out && (rc != Z_OK || z.avail_in)) {
        fprintf(stderr, "lg_ws: a compressed message does not inflate (%d)\n", rc);
        free(out);
        return NULL;
    }
    if (out)
        out[n] = '\0';
    return out;
}

/* Copy the payloads of the data frames in buf[0, end) into one malloc'd string (inflated
 * when the message is compressed). */
static char *lg_test__ws_assemble(struct lg_ws_client *c, size_t end)
{
    size_t total = 0;
    struct lg_test__frame f;
    bool compressed = false;
    for (size_t off = 0; off < end; off += f.hdr + f.plen) {
        lg_test__ws_frame_at(c, off, &f);
        compressed |= off == 0 && f.rsv1;
        total += f.plen;
    }
    char *msg = malloc(total + 4 + 1);
    if (!msg)
        return NULL;
    size_t o = 0;
    for (size_t off = 0; off < end; off += f.hdr + f.plen) {
        lg_test__ws_frame_at(c, off, &f);
        lg_test__ws_unmask(&f, c->buf + off + f.hdr);
        memcpy(msg + o, c->buf + off + f.hdr, f.plen);
        o += f.plen;
    }
    msg[o] = '\0';
    lg_test__ws_consume(c, 0, end);
    if (compressed) {
        c->compressed++;
        char *text = lg_test__ws_inflate((unsigned char *)msg, o);
        free(msg);
        return text;
    }
    return msg;
}

/*
 * Parse what is buffered. Return value: 1 a message in *msg, 0 more bytes needed,
 * -1 the connection is closed or broken.
 */
static int lg_test__ws_parse(struct lg_ws_client *c, char **msg, bool close_sent)
{
    struct lg_test__frame f;
    size_t off = 0;
    bool started = false;
    int rc;
    while ((rc = lg_test__ws_frame_at(c, off, &f)) == 1) {
        if (f.opcode & 0x8) {
            rc = lg_test__ws_control(c, off, &f, close_sent);
            if (rc != 0)
                break;
            continue;
        }
        if (!started && f.opcode != LG_TEST__WS_TEXT && f.opcode != LG_TEST__WS_BINARY) {
            fprintf(stderr, "lg_ws: data frame with opcode 0x%x where a message starts\n",
                    f.opcode);
            rc = -1;
            break;
        }
        if (started && f.opcode != LG_TEST__WS_CONT) {
            fprintf(stderr, "lg_ws: opcode 0x%x inside a fragmented message\n", f.opcode);
            rc = -1;
            break;
        }
        started = true;
        off += f.hdr + f.plen;
        if (f.fin) {
            *msg = lg_test__ws_assemble(c, off);
            return *msg ? 1 : -1;
        }
    }
    if (rc == 1) /* a close frame */
        return -1;
    if (rc < 0) {
        lg_test__ws_drop(c);
        return -1;
    }
    return 0;
}

static int lg_test__ws_next(struct lg_ws_client *c, char **msg, int timeout_ms, bool close_sent)
{
    *msg = NULL;
    int64_t deadline = lg_test__deadline(timeout_ms);
    for (;;) {
        if (c->close_code != 0)
            return -1;
        int rc = lg_test__ws_parse(c, msg, close_sent);
        if (rc != 0)
            return rc;
        if (c->fd < 0)
            return -1;
        char *p = (char *)c->buf;
        if (lg_test__reserve(&p, &c->cap, c->len + 16384) < 0)
            return -1;
        c->buf = (unsigned char *)p;
        ssize_t n = lg_test__recv_deadline(c->fd, c->buf + c->len, c->cap - 1 - c->len, deadline);
        if (n == -2)
            return 0;
        if (n <= 0) {
            if (!close_sent)
                fprintf(stderr, "lg_ws: connection ended without a close frame\n");
            lg_test__ws_drop(c);
            return -1;
        }
        c->len += (size_t)n;
    }
}

/* ---- Public API --------------------------------------------------------------------------- */

int lg_test__send_ws_upgrade(int fd, uint16_t port, const char *path, const char *subprotocol,
                             const char *extra_headers, char expect[32])
{
    unsigned char raw_key[16];
    char key[32], proto_line[128] = "";
    lg_test__random(raw_key, sizeof raw_key);
    EVP_EncodeBlock((unsigned char *)key, raw_key, sizeof raw_key);
    lg_test__ws_accept(key, expect);
    if (subprotocol)
        snprintf(proto_line, sizeof proto_line, "Sec-WebSocket-Protocol: %s\r\n", subprotocol);
    return lg_test__send_printf(fd,
                                "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%u\r\nUpgrade: websocket\r\n"
                                "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
                                "Sec-WebSocket-Version: 13\r\n%s%s\r\n",
                                path, port, key, proto_line, extra_headers ? extra_headers : "");
}

int lg_ws_open(struct lg_ws_client *c, uint16_t port, const char *path, const char *subprotocol)
{
    return lg_ws_open_with(c, port, path, subprotocol, NULL);
}

int lg_ws_open_with(struct lg_ws_client *c, uint16_t port, const char *path,
                    const char *subprotocol, const char *extra_headers)
{
    memset(c, 0, sizeof *c);
    c->fd = -1;
    char expect[32];
    int fd = lg_tcp_connect(port);
    if (fd < 0)
        return -1;
    if (lg_test__send_ws_upgrade(fd, port, path, subprotocol, extra_headers, expect) < 0) {
        close(fd);
        return -1;
    }

    struct lg_test__rbuf b;
    size_t head_len;
    char head[4096], val[256];
    const char *why = NULL;
    if (lg_test__read_head_on(&b, fd, LG_TEST__WS_HEAD_TIMEOUT_MS, &head_len, "lg_ws_open") < 0)
        return -1;
    lg_test__copy_head(head, sizeof head, b.p, head_len);
    c->status = lg_test__parse_status(head);
    if (c->status != 101)
        why = "status is not 101";
    else if (!lg_test__header_find(head, "Upgrade", val, sizeof val) ||
             !lg_test__header_has_token(val, "websocket"))
        why = "no Upgrade: websocket";
    else if (!lg_test__header_find(head, "Connection", val, sizeof val) ||
             !lg_test__header_has_token(val, "upgrade"))
        why = "no Connection: upgrade";
    else if (!lg_test__header_find(head, "Sec-WebSocket-Accept", val, sizeof val) ||
             strcmp(val, expect) != 0)
        why = "missing or wrong Sec-WebSocket-Accept";
    else if (lg_test__header_find(head, "Sec-WebSocket-Protocol", c->protocol,
                                  sizeof c->protocol) &&
             (!subprotocol || strcmp(c->protocol, subprotocol) != 0))
        why = "server chose a subprotocol that was not offered";
    if (!why && lg_test__header_find(head, "Sec-WebSocket-Extensions", c->extensions,
                                     sizeof c->extensions))
        c->deflate = strncmp(c->extensions, "permessage-deflate", 18) == 0;
    if (why) {
        fprintf(stderr, "lg_ws_open: %s: %s\n%s\n", path, why, head);
        lg_test__rbuf_release(&b);
        close(fd);
        return -1;
    }
    /* bytes after the head are the first frames */
    c->buf = (unsigned char *)lg_test__rbuf_take_after(&b, head_len, &c->len, &c->cap);
    c->fd = fd;
    return 0;
}

int lg_ws_send_text(struct lg_ws_client *c, const char *text, size_t len)
{
    return lg_test__ws_send_frame(c, LG_TEST__WS_TEXT, text, len);
}

int lg_ws_send_deflated(struct lg_ws_client *c, const char *text, size_t len)
{
    z_stream z = {0};
    if (deflateInit2(&z, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return -1;
    size_t cap = deflateBound(&z, len) + 16;
    unsigned char *out = malloc(cap);
    z.next_in = (unsigned char *)text;
    z.avail_in = (uInt)len;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    int rc = out ? deflate(&z, Z_SYNC_FLUSH) : Z_MEM_ERROR;
    size_t n = cap - z.avail_out;
    deflateEnd(&z);
    if (rc != Z_OK || n < 4) {
        free(out);
        return -1;
    }
    rc = lg_test__ws_send_frame(c, 0x40 | LG_TEST__WS_TEXT, out, n - 4); /* 00 00 ff ff off */
    free(out);
    return rc;
}

/* Binary messages are returned too (NUL-terminated like text). */
int lg_ws_next(struct lg_ws_client *c, char **msg, int timeout_ms)
{
    return lg_test__ws_next(c, msg, timeout_ms, false);
}

/* Sends close 1000 unless the server closed first, waits briefly for its answer, and frees
 * everything. Messages that arrive meanwhile are discarded. */
void lg_ws_close(struct lg_ws_client *c)
{
    if (c->fd >= 0 && c->close_code == 0) {
        static const unsigned char normal[2] = {0x03, 0xE8};
        if (lg_test__ws_send_frame(c, LG_TEST__WS_CLOSE, normal, sizeof normal) == 0) {
            int64_t deadline = lg_test__deadline(LG_TEST__WS_CLOSE_WAIT_MS);
            char *m;
            int rc;
            while ((rc = lg_test__ws_next(c, &m, lg_left_ms(deadline), true)) == 1)
                free(m);
        }
    }
    lg_test__ws_drop(c);
    free(c->buf);
    c->buf = NULL;
    c->len = c->cap = 0;
}
