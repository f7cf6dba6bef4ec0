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
/* The same two as check assertions: the test fails (showing the config, or the exit status and
 * the server's log) unless the server started / stopped cleanly with status 0. */
void lg_server_must_start(struct lg_server *s, const char *config_json);
void lg_server_must_stop(struct lg_server *s);
/* Poll GET /readyz on s's control port until it answers 200 (a Redis store connected), or fail
 * the test after timeout_ms. */
void lg_server_must_be_ready(const struct lg_server *s, int timeout_ms);
/* Read whatever the server printed since the last call into s->log. */
void lg_server_pump_log(struct lg_server *s);
/* Wait (<= timeout_ms) until s->log contains needle. Return value: true if it did. */
bool lg_server_wait_log(struct lg_server *s, const char *needle, int timeout_ms);
/* User+system CPU seconds the server has used so far (from /proc/PID/stat). */
double lg_server_cpu_seconds(const struct lg_server *s);
/* Resident set size in KiB (from /proc/PID/status VmRSS). */
long lg_server_rss_kib(const struct lg_server *s);

/* What the server's end of one of our connections has sent, read from the server's own socket
 * (pidfd_getfd: the tests run as the server's parent, with the right to trace it). */
struct lg_server_socket_state {
    bool corked;                 /* TCP_CORK is set: data the server wrote may be held back */
    unsigned data_segments_out;  /* TCP segments that carried data (tcpi_data_segs_out) */
};
/* The state of s's socket whose peer is client_fd. Return value: 0, or -1 (no such socket). */
int lg_server_socket_state(const struct lg_server *s, int client_fd,
                           struct lg_server_socket_state *out);

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
/* Read one response (it must have a Content-Length) from an open connection, e.g. the second
 * request on a keep-alive connection; bytes after it are dropped (printed). Not for pipelined
 * responses. lg_stall_ka_request reads its answers the same way. Return value: 0 or -1. */
int lg_http_read_response(int fd, struct lg_http_response *out, int timeout_ms);
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
    char extensions[256];  /* the answer's Sec-WebSocket-Extensions, "" if none */
    bool deflate;          /* it names permessage-deflate: RSV1 messages are inflated */
    unsigned compressed;   /* messages received compressed (RSV1) */
};

/* Handshake for path (e.g. "/ws?topic=a"), offering subprotocol (NULL = none). Return 0 / -1. */
int lg_ws_open(struct lg_ws_client *c, uint16_t port, const char *path, const char *subprotocol);
/* The same with extra request headers (raw "Name: value\r\n" lines, or NULL). */
int lg_ws_open_with(struct lg_ws_client *c, uint16_t port, const char *path,
                    const char *subprotocol, const char *extra_headers);
int lg_ws_send_text(struct lg_ws_client *c, const char *text, size_t len);
/* A text message compressed on its own (permessage-deflate, RSV1 set). Return 0 / -1. */
int lg_ws_send_deflated(struct lg_ws_client *c, const char *text, size_t len);
/* Next text message (malloc'd, NUL-terminated, in *msg). Return value: 1 message, 0 timeout,
 * -1 closed (close_code/close_reason filled when the server sent a close frame).
 * Pings are answered and pongs skipped transparently. */
int lg_ws_next(struct lg_ws_client *c, char **msg, int timeout_ms);
void lg_ws_close(struct lg_ws_client *c);

/* ==== Check assertions the integration tests share (lg_expect.c) ========================== */
/* Each fails the running check test (with the cause) instead of returning an error. */

/* Milliseconds on the monotonic clock / on the wall clock (CLOCK_REALTIME, as event times). */
int64_t lg_now_ms(void);
long long lg_wall_ms(void);
/* Milliseconds left before deadline (a lg_now_ms() value), clamped to [0, INT32_MAX]. */
int lg_left_ms(int64_t deadline);

/* The epoch of an id "topic@epoch:seq" (it must parse and be 8 characters long). */
void lg_epoch_of(const char *id, char *epoch, size_t cap);
/* The seq of an id "topic@epoch:seq" (it must parse). */
uint64_t lg_seq_of(const char *id);
/* Publish events from..to (inclusive) to topic as text, each answered 201; last_id (may be
 * NULL) receives the last id. The data of event i is "d<i>" (lg_publish_n) or
 * "<topic>-d<i>" (lg_publish_n_tagged). */
void lg_publish_n(uint16_t cport, const char *topic, int from, int to, char *last_id, size_t cap);
void lg_publish_n_tagged(uint16_t cport, const char *topic, int from, int to, char *last_id,
                         size_t cap);
/* The same, then the epoch of the last id (as lg_epoch_of) in epoch: "publish a run and read
 * the epoch" (from <= to). */
void lg_publish_n_epoch(uint16_t cport, const char *topic, int from, int to, char *epoch,
                        size_t cap);
void lg_publish_n_tagged_epoch(uint16_t cport, const char *topic, int from, int to, char *epoch,
                               size_t cap);

/* What lg_expect_error checks beyond the status, "error" == code and a non-empty "message"
 * in a body that parses as JSON (checks == 0: that alone). */
enum lg_error_check {
    LG_ERROR_JSON_TYPE = 1, /* Content-Type: application/json, and the body is an object */
    LG_ERROR_ONLY_KEYS = 2, /* no member but "error" and "message" */
    LG_ERROR_INDEX_OK = 4,  /* no member but "error", "message" and "index" */
};
void lg_expect_error(const struct lg_http_response *r, int status, const char *code,
                     unsigned checks);
/* The same with every failure message starting "what: " (the case or request that failed). */
void lg_expect_error_named(const char *what, const struct lg_http_response *r, int status,
                           const char *code, unsigned checks);

/* Nothing arrives on the stream within ms, and it stays open. */
void lg_sse_expect_quiet(struct lg_sse_client *c, int ms);
/* No event arrives within ms (the stream may end). */
void lg_sse_expect_no_event(struct lg_sse_client *c, int ms);

/* Open an SSE stream (path, extra headers or NULL): it must answer 200 and send its retry:
 * line within 5 s (the subscription then exists). Failures name path. */
void lg_sse_must_open(struct lg_sse_client *c, uint16_t port, const char *path,
                      const char *headers);
/* A WebSocket handshake for path offering subprotocol (NULL: none) must answer 101. */
void lg_ws_must_open(struct lg_ws_client *c, uint16_t port, const char *path,
                     const char *subprotocol);
/* lg_ws_must_open(.., "livegate.v1"), then the first message (within 5 s) must be the
 * subscribed answer: JSON with "type":"subscribed" and "v":1, equal to the JSON want (any key
 * order) when want is not NULL. Its "cursor" goes to cursor when that is not NULL. Failures
 * name path and show the message. */
void lg_ws_must_subscribe(struct lg_ws_client *c, uint16_t port, const char *path,
                          const char *want, char *cursor, size_t cap);

/* The whole file $LG_SOURCE_DIR/rel (at most 1 MiB - 1 bytes), malloc'd and NUL-terminated;
 * *len its size, path (path_cap bytes) its name. */
char *lg_slurp_source(const char *rel, char *path, size_t path_cap, size_t *len);
/* ==== end of lg_expect.c =================================================================== */

/* ==== Fossil deltas (lg_delta.c) ========================================================== */

/* Apply a Fossil delta to src. Return value: the target (malloc'd, NUL-terminated, its length
 * in *out_len), or NULL when the delta is malformed (a bad command, a copy outside src, the
 * wrong length or checksum). */
char *lg_delta_apply(const char *src, size_t src_len, const char *delta, size_t delta_len,
                     size_t *out_len);

/* ==== /v1/stats (lg_stats.c): the one stats client ======================================== */

#define LG_STATS_MAX 128
struct lg_stats {
    size_t count;
    char name[LG_STATS_MAX][48];
    long long value[LG_STATS_MAX];
    char json[8192]; /* the body as received, for failure messages */
};
/* GET /v1/stats on the control port: every integer counter. Return value: 0 or -1 (printed). */
int lg_stats_read(uint16_t control_port, struct lg_stats *out);
/* One counter of a snapshot, or -1 (printed why) when it is missing. */
long long lg_stats_value(const struct lg_stats *s, const char *name);
/* Integer counter `name` of GET /v1/stats read now, or -1 (printed why). */
long long lg_stat(uint16_t control_port, const char *name);
/* The same as a check assertion: the test fails unless the counter can be read. */
long long lg_server_stat(const struct lg_server *s, const char *name);
/* Poll /v1/stats (every 10 ms, <= timeout_ms) until counter `name` is >= value (op > 0),
 * <= value (op < 0) or == value (op == 0). Return value: the last value read (-1 on error). */
long long lg_stat_wait(uint16_t control_port, const char *name, int op, long long value,
                       int timeout_ms);
/* lg_stat_wait(.., 0, want, ..) as a yes/no (printed why on no). Return value: true if ==. */
bool lg_wait_stat(uint16_t control_port, const char *name, long long want, int timeout_ms);
/* ==== end of lg_stats.c ==================================================================== */

/* ==== lg_metrics.c: GET /metrics ========================================================= */
/* The exposition (malloc'd; the test fails unless it answers 200). */
char *lg_metrics_scrape(uint16_t control_port);
/* The value of sample `series` (name and labels exactly as exposed); the test fails without it. */
double lg_metrics_value(const char *body, const char *series);
/* lg_metrics_value() of a scrape made now. */
double lg_metric(uint16_t control_port, const char *series);
/* Poll /metrics (every 10 ms, <= timeout_ms) until series == want. Return value: true if so. */
bool lg_metric_wait(uint16_t control_port, const char *series, double want, int timeout_ms);
/* Between two scrapes, family{label="value"} rose by delta and every other series
 * family{label="..."} stayed as it was (the test fails otherwise). */
void lg_metrics_expect_rise(const char *before, const char *after, const char *family,
                            const char *label, const char *value, double delta);

/* ==== lg_extra.c: publish variants, raw SSE bytes, running the binary =================== */
/* (added for test_sse/test_ws/test_poll/test_resume/test_lifecycle/test_control_api) */

/* POST /v1/topics/{topic}/events[?query] with the given Content-Type (NULL: none) and body.
 * topic goes into the path as given (no encoding). Returns the status (0 on failure) and the
 * "id" of a 201 answer in id_out when not NULL. */
int lg_publish_ex(uint16_t control_port, const char *topic, const char *query,
                  const char *content_type, const void *data, size_t len, char *id_out,
                  size_t id_cap);
/* Split an event id "topic@epoch:seq" (buffers may be NULL). Return value: 0 or -1. */
int lg_id_parse(const char *id, char *topic, size_t topic_cap, char *epoch, size_t epoch_cap,
                unsigned long long *seq);
/* Read stream bytes into c->raw (without parsing them) until needle occurs at or after offset
 * `from`. Return value: true if it did, false on timeout or end of stream. */
bool lg_sse_wait_raw(struct lg_sse_client *c, size_t from, const char *needle, int timeout_ms);
/* Read stream bytes into c->raw until the server closes. Return value: true on EOF. */
bool lg_sse_wait_eof(struct lg_sse_client *c, int timeout_ms);

struct lg_run_result {
    int status;            /* exit status, 128 + signal when a signal ended it */
    char *out, *err;       /* everything printed on stdout / stderr (malloc'd, NUL-terminated) */
    size_t out_len, err_len;
};
/* Run $LG_BINARY with args (NULL-terminated) to completion (<= timeout_ms, then SIGKILL).
 * Return value: 0 when it exited in time, -1 otherwise. Free with lg_run_result_free. */
int lg_run_binary(const char *const *args, struct lg_run_result *r, int timeout_ms);
void lg_run_result_free(struct lg_run_result *r);
/* ==== end of lg_extra.c ==================================================================== */

/* ==== Stalled clients and keep-alive publishing (lg_stall.c) ============================ */
/* Used by the backpressure tests. A "stalled" client sets SO_RCVBUF small before connect(),
 * sends its request and then reads nothing; resuming it reads the response head late and
 * turns the socket into an ordinary lg_sse_client / lg_ws_client. */

/* TCP connection to 127.0.0.1:port with SO_RCVBUF = rcvbuf (0 = kernel default) set before
 * connect(). Return value: fd or -1. */
int lg_stall_connect(uint16_t port, int rcvbuf);
/* Send "GET path" for an SSE stream on a stalled socket and read nothing. Return: fd or -1. */
int lg_stall_sse_open(uint16_t port, const char *path, const char *extra_headers, int rcvbuf);
/* Start reading a stalled SSE stream: read its response head (<= timeout_ms) and make c an
 * lg_sse_client over fd (c owns fd from now on, even on failure; lg_sse_close it). Return 0/-1. */
int lg_stall_sse_resume(struct lg_sse_client *c, int fd, int timeout_ms);

struct lg_stall_ws {
    int fd;          /* -1 once resumed or closed */
    char expect[32]; /* the Sec-WebSocket-Accept the server must answer */
};
/* Send a WebSocket upgrade for path (subprotocol livegate.v1) on a stalled socket and read
 * nothing. Return value: 0 or -1. */
int lg_stall_ws_open(struct lg_stall_ws *w, uint16_t port, const char *path, int rcvbuf);
/* Start reading: check the 101 answer and make c an lg_ws_client (it takes w's fd). 0 / -1. */
int lg_stall_ws_resume(struct lg_ws_client *c, struct lg_stall_ws *w, int timeout_ms);
void lg_stall_ws_close(struct lg_stall_ws *w);

/* A keep-alive HTTP/1.1 connection (reconnects when the server closed it). */
struct lg_stall_ka {
    int fd;
    uint16_t port;
};
void lg_stall_ka_init(struct lg_stall_ka *k, uint16_t port);
/* One request; answers must carry Content-Length. out is filled as by lg_http_request (free
 * it with lg_http_response_free). Return value: 0 or -1. */
int lg_stall_ka_request(struct lg_stall_ka *k, const char *method, const char *path,
                        const char *extra_headers, const void *body, size_t body_len,
                        struct lg_http_response *out, int timeout_ms);
void lg_stall_ka_close(struct lg_stall_ka *k);
/* ==== end of lg_stall.c ================================================================== */

/* ==== lg_one_topic.c: one worker, one subscriber, a keep-alive publisher ================== */
struct lg_one_topic {
    struct lg_server server;
    struct lg_sse_client sub;
    struct lg_stall_ka publisher;
    char path[64];
};
/* Start a one-worker gateway, subscribe over SSE to topic, connect the publisher. */
void lg_one_topic_start(struct lg_one_topic *o, const char *topic);
void lg_one_topic_stop(struct lg_one_topic *o);
/* Publish n events, each read by the subscriber (seq *next_seq, then the next) before the
 * next is sent: every publish wakes the worker on its own. */
void lg_one_topic_publish_and_receive(struct lg_one_topic *o, int n, int *next_seq);
/* Raise this process's descriptor limit to its hard limit, which must be at least need (a
 * gateway started later inherits it). */
void lg_raise_fd_limit(int need);
/* Open n SSE streams on topics of their own (fds[n]) and wait until the gateway counts them. */
void lg_one_topic_open_idle(const struct lg_one_topic *o, int *fds, int n);
/* ==== end of lg_one_topic.c ================================================================ */


#endif
