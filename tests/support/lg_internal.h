/*
 * lg_internal.h - helpers shared by the files of the test support library (not for tests).
 *
 * Owns:    nothing; a growable read buffer type and clock/header helpers.
 * Frees:   struct lg_test__rbuf memory is released with lg_test__rbuf_release(), or handed
 *          over by the caller taking `p` (then set p to NULL).
 * Threads: single-threaded test code; no globals here.
 * Bounds:  every read takes an absolute deadline on the monotonic clock; a buffer never grows
 *          beyond LG_TEST__MAX_BUF bytes.
 */
#ifndef LG_INTERNAL_H
#define LG_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct lg_sse_client;

struct lg_http_response;

#define LG_TEST__MAX_BUF ((size_t)256 << 20) /* 256 MiB: a runaway peer fails the test */

/* now (lg_now_ms, the monotonic clock) + timeout_ms (a negative timeout is treated as 0). */
int64_t lg_test__deadline(int timeout_ms);

/* Make sure buf can hold `need` bytes plus a NUL. Return value: 0 or -1 (over the bound). */
int lg_test__reserve(char **buf, size_t *cap, size_t need);
/*
 * Wait for fd to become readable before deadline, then recv() once into buf.
 * Return value: bytes read (> 0), 0 on EOF, -1 on error (errno kept), -2 on timeout.
 */
ssize_t lg_test__recv_deadline(int fd, void *buf, size_t cap, int64_t deadline);

/* A growable, NUL-terminated receive buffer over one socket. */
struct lg_test__rbuf {
    int fd;
    char *p;          /* malloc'd, NUL-terminated */
    size_t len, cap;  /* bytes held / allocated (cap includes room for the NUL) */
    int64_t deadline; /* absolute monotonic ms for every fill */
    bool eof;         /* the peer closed its side */
};

void lg_test__rbuf_init(struct lg_test__rbuf *b, int fd, int64_t deadline);
void lg_test__rbuf_release(struct lg_test__rbuf *b);
/* Read once more. Return value: 1 data appended, 0 EOF, -1 error, -2 timeout. */
int lg_test__rbuf_fill(struct lg_test__rbuf *b);
/* Read until needle occurs at or after `from`; *at receives its offset.
 * Return value: 0 found, LG_TEST__CLOSED (the peer closed first), -1 error, -2 timeout. */
#define LG_TEST__CLOSED (-4)
int lg_test__rbuf_find(struct lg_test__rbuf *b, size_t from, const char *needle, size_t *at);
/* Read until at least n bytes are held. Return value: 0, or what rbuf_fill returned (0 EOF,
 * -1, -2). */
int lg_test__rbuf_need(struct lg_test__rbuf *b, size_t n);

/*
 * Read one response head (status line and headers through the blank line) into b.
 * *head_len receives its length including the final CRLFCRLF; bytes after it stay in b.
 * Return value: 0, or -1 after printing why (prefixed with `who`).
 */
int lg_test__read_head(struct lg_test__rbuf *b, size_t *head_len, const char *who);
/*
 * Read one response that must carry Content-Length (e.g. on a kept-alive connection) from b
 * into out: status, headers and the malloc'd body (left NULL on failure). Bytes after it are
 * printed and dropped, or with extra_fails a failure. Return value: 0, or -1 after printing
 * why (prefixed with `who`).
 */
int lg_test__read_sized_response(struct lg_test__rbuf *b, struct lg_http_response *out,
                                 const char *who, bool extra_fails);
/*
 * Read the response head on fd (<= timeout_ms) into b, which this initialises. On failure b is
 * released and fd closed. Return value: 0 (head_len as lg_test__read_head), or -1 (printed).
 */
int lg_test__read_head_on(struct lg_test__rbuf *b, int fd, int timeout_ms, size_t *head_len,
                          const char *who);
/* Hand over b's buffer with the head_len bytes of the head removed: the bytes after the head
 * move to the front, *len and *cap receive their count and the allocation. Return value: the
 * buffer (NUL-terminated; b must not be released afterwards). */
char *lg_test__rbuf_take_after(struct lg_test__rbuf *b, size_t head_len, size_t *len, size_t *cap);
/* Status code of "HTTP/1.x NNN ...", or 0 if the line does not parse. */
int lg_test__parse_status(const char *head);

/* Blocking connect to 127.0.0.1:port, with SO_RCVBUF set first when rcvbuf > 0. */
int lg_test__connect(uint16_t port, int rcvbuf);

/* Format a request as printf does and send all of it on fd. Return value: 0 or -1 (printed when
 * out of memory; fd left open either way). */
int lg_test__send_printf(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Clear c for a stream not open yet (fd -1, no retry: seen). */
void lg_test__sse_reset(struct lg_sse_client *c);

/* Read the head of an SSE answer on fd into b (lg_test__read_head_on) and take its status and
 * headers into c. Return value: 0 or -1 (printed, b released and fd closed). */
int lg_test__sse_read_head(struct lg_sse_client *c, struct lg_test__rbuf *b, int fd,
                           int timeout_ms, size_t *head_len, const char *who);

/* Hand the bytes of b after the head to c as the start of its body, with fd; an answer other than
 * 200 is printed as "<who>: <what> answered <status>: <body start>". */
void lg_test__sse_take_body(struct lg_sse_client *c, struct lg_test__rbuf *b, int fd,
                            size_t head_len, const char *who, const char *what);

/* Send the GET of an SSE stream on fd. Return value: 0 or -1 (fd left open either way). */
int lg_test__send_sse_request(int fd, uint16_t port, const char *path, const char *extra_headers);

/* Send a WebSocket upgrade for path on fd, offering subprotocol (NULL = none); expect receives
 * the Sec-WebSocket-Accept the server must answer. Return value: 0 or -1 (fd left open). */
int lg_test__send_ws_upgrade(int fd, uint16_t port, const char *path, const char *subprotocol,
                             const char *extra_headers, char expect[32]);
/* Copy a head of head_len bytes into dst (cap bytes) without the final empty line, so the
 * last header keeps its CRLF; truncates and NUL-terminates. */
void lg_test__copy_head(char *dst, size_t cap, const char *head, size_t head_len);
/* Case-insensitive lookup of a header in a NUL-terminated head block (the status line is
 * skipped). Copies the value without surrounding blanks. Return value: true if found. */
bool lg_test__header_find(const char *head, const char *name, char *out, size_t cap);
/* Does a comma-separated header value contain token (case-insensitive)? */
bool lg_test__header_has_token(const char *value, const char *token);

#endif
