/*
 * lg_test.h - helpers for integration tests that drive the real build/livegate binary.
 *
 * Every helper waits on an observable condition with a bounded timeout; none sleeps blindly.
 * All traffic goes to 127.0.0.1. Functions that can fail return -1 (or NULL) and print why
 * to stderr, so a check assertion on the result shows the cause in the test log.
 */
#ifndef LG_TEST_H
#define LG_TEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* ---- The server under test ---------------------------------------------------------- */

struct lg_server {
    pid_t pid;
    uint16_t public_port;  /* parsed from the startup line "... listening public=H:P control=H:P workers=N" */
    uint16_t control_port;
    int stderr_fd;         /* the server's stderr (read end), drained into `log` */
    char log[65536];       /* everything the server printed so far (NUL-terminated, truncated) */
    size_t log_len;
};

/* Start $LG_BINARY with "--public 127.0.0.1:0 --control 127.0.0.1:0" plus extra_args
 * (NULL-terminated, may be NULL) and, when config_json is not NULL, a temporary config file
 * holding that text. Waits (<= 10 s) for the startup line. Return value: 0 or -1. */
int lg_server_start(struct lg_server *s, const char *config_json, const char *const *extra_args);
/* SIGTERM, wait (<= timeout_ms) and return the exit status (WEXITSTATUS), or -1 on timeout
 * (the process is then SIGKILLed). */
int lg_server_stop(struct lg_server *s, int timeout_ms);
/* Read whatever the server printed since the last call into s->log. */
void lg_server_pump_log(struct lg_server *s);
/* Wait (<= timeout_ms) until s->log contains needle. Return value: true if it did. */
bool lg_server_wait_log(struct lg_server *s, const char *needle, int timeout_ms);
/* User+system CPU seconds the server has used so far (from /proc/PID/stat). */
double lg_server_cpu_seconds(const struct lg_server *s);
/* Resident set size in KiB (from /proc/PID/status VmRSS). */
long lg_server_rss_kib(const struct lg_server *s);

/* ---- Plain TCP and HTTP ---------------------------------------------------------------- */

int lg_tcp_connect(uint16_t port);                       /* blocking connect to 127.0.0.1 */
int lg_send_all(int fd, const void *buf, size_t len);    /* 0 or -1 */
/* Read until `needle` appears in the accumulated data or timeout; buf is NUL-terminated.
 * Return value: bytes held in buf (>= 0), or -1 on timeout/EOF before the needle. */
ssize_t lg_recv_until(int fd, char *buf, size_t cap, size_t *len, const char *needle, int timeout_ms);

struct lg_http_response {
    int status;            /* e.g. 201; 0 if no response */
    char headers[8192];    /* raw header block, NUL-terminated */
    char *body;            /* malloc'd, NUL-terminated; free with lg_http_response_free */
    size_t body_len;
};

/* One HTTP/1.1 request on a fresh connection (Connection: close). body may be NULL.
 * extra_headers: raw "Name: value\r\n" lines or NULL. Return value: 0 or -1. */
int lg_http_request(uint16_t port, const char *method, const char *path, const char *extra_headers,
                    const void *body, size_t body_len, struct lg_http_response *out, int timeout_ms);
void lg_http_response_free(struct lg_http_response *r);
/* Case-insensitive header lookup; copies the value into out. Return value: true if found. */
bool lg_http_header(const struct lg_http_response *r, const char *name, char *out, size_t cap);
/* POST /v1/topics/{topic}/events with data; returns the HTTP status (0 on failure) and, when
 * id_out is not NULL, the "id" of the 201 answer. */
int lg_publish(uint16_t control_port, const char *topic, const char *data, char *id_out, size_t id_cap);

/* ---- SSE ------------------------------------------------------------------------------- */

struct lg_sse_event {
    char id[1024];
    char event[64];
    char *data;            /* malloc'd, lines joined with '\n' as the HTML spec says */
    size_t data_len;
};

struct lg_sse_client {
    int fd;
    int status;            /* HTTP status of the stream response */
    char headers[4096];
    char *raw;             /* every byte of the body received so far (malloc'd) */
    size_t raw_len, raw_cap;
    size_t parsed;         /* offset up to which raw has been parsed into events */
    int retry_ms;          /* last retry: value seen, -1 if none */
    int comments;          /* comment lines seen (heartbeats) */
    bool closed;           /* the server ended the stream */
};

/* GET path (e.g. "/sse?topic=a") with optional extra headers; waits for the response head.
 * Return value: 0 or -1. */
int lg_sse_open(struct lg_sse_client *c, uint16_t port, const char *path, const char *extra_headers);
/* Next complete event (blocking up to timeout_ms). Return value: 1 event, 0 timeout,
 * -1 stream closed. Fills ev (free its data with lg_sse_event_free). */
int lg_sse_next(struct lg_sse_client *c, struct lg_sse_event *ev, int timeout_ms);
void lg_sse_event_free(struct lg_sse_event *ev);
void lg_sse_close(struct lg_sse_client *c);

/* ---- WebSocket (a minimal RFC 6455 client: masked frames out, unmasked frames in) ---- */

struct lg_ws_client {
    int fd;
    int status;            /* 101 on success */
    char protocol[64];     /* negotiated Sec-WebSocket-Protocol, "" if none */
    unsigned char *buf;    /* received bytes not yet parsed */
    size_t len, cap;
    int close_code;        /* from the server's close frame, 0 if none yet */
    char close_reason[128];
};

/* Handshake for path (e.g. "/ws?topic=a"), offering subprotocol (NULL = none). Return 0 / -1. */
int lg_ws_open(struct lg_ws_client *c, uint16_t port, const char *path, const char *subprotocol);
int lg_ws_send_text(struct lg_ws_client *c, const char *text, size_t len);
/* Next text message (malloc'd, NUL-terminated, in *msg). Return value: 1 message, 0 timeout,
 * -1 closed (close_code/close_reason filled when the server sent a close frame).
 * Pings are answered and pongs skipped transparently. */
int lg_ws_next(struct lg_ws_client *c, char **msg, int timeout_ms);
void lg_ws_close(struct lg_ws_client *c);

#endif
