/*
 * control_error.h - one refusal of the control port: HTTP status, error code, message.
 *
 * Filled by whatever finds the problem (a parser, a validator, the hub's answer) and rendered
 * once as {"error": CODE, "message": TEXT[, "index": N]} (control_reply.h). Pure: no I/O.
 *
 * Owns:    nothing; the struct is a value the caller keeps on its stack.
 * Frees:   nothing to free.
 * Threads: any; no shared state.
 * Bounds:  a message is at most 511 bytes (longer ones are cut); client bytes quoted in it
 *          become printable ASCII before rendering (lg_ctl_error_json).
 */
#ifndef LG_CONTROL_ERROR_H
#define LG_CONTROL_ERROR_H

#include <stdbool.h>

struct json_t;

struct lg_ctl_error {
    unsigned status;   /* HTTP status */
    const char *code;  /* "bad_request", "invalid_topic", ... (a string literal) */
    long index;        /* batch item the error is about, -1 = none */
    bool retry;        /* send Retry-After: 1 (every 503) */
    bool close;        /* send Connection: close and close after the answer */
    char message[512]; /* what was wrong and how to fix it */
};

#define LG_CTL_ERROR_INIT {.status = 500, .code = "internal_error", .index = -1}

/* Fill e and return -1, so validators can `return lg_ctl_fail(...)`. Every 503 says
 * Retry-After. */
int lg_ctl_fail(struct lg_ctl_error *e, unsigned status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Make e->message printable ASCII in place: it quotes client bytes (paths, names, jansson's
 * "near '...'"), and the JSON string must stay valid. */
void lg_ctl_error_make_safe(struct lg_ctl_error *e);

/* The {"error","message"[,"index"]} object of e (message made safe first).
 * Return value: new jansson reference, or NULL (out of memory). */
struct json_t *lg_ctl_error_json(struct lg_ctl_error *e);

#endif
