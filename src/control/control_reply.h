/*
 * control_reply.h - queueing the control port's JSON answers on an MHD connection.
 *
 * Every answer is one JSON body with Content-Type: application/json; an error is rendered
 * from its struct lg_ctl_error (control_error.h), with Retry-After: 1 on every 503.
 *
 * Owns:    nothing past the call: MHD owns the queued response.
 * Frees:   lg_ctl_reply_text() takes the malloc'd text it is given, whatever happens.
 * Threads: the thread MHD runs the request's handler on.
 * Bounds:  one response per request (MHD refuses a second).
 * Return value of every call: 0, or -1 when nothing could be queued (MHD then closes the
 * connection).
 */
#ifndef LG_CONTROL_REPLY_H
#define LG_CONTROL_REPLY_H

#include <stdbool.h>

#include "control_error.h"

struct MHD_Connection;
struct json_t;

/* Queue text (malloc'd, taken; NULL = out of memory) as the body. allow: the Allow header or
 * NULL; retry: add Retry-After: 1. */
int lg_ctl_reply_text(struct MHD_Connection *conn, unsigned status, char *text,
                      const char *allow, bool retry);

/* Queue body (a reference, taken; NULL = out of memory) as compact JSON. */
int lg_ctl_reply_json(struct MHD_Connection *conn, unsigned status, struct json_t *body);

/* Queue e as {"error","message"[,"index"]}; allow as above (a 405 names the methods). */
int lg_ctl_reply_error(struct MHD_Connection *conn, struct lg_ctl_error *e, const char *allow);

#endif
