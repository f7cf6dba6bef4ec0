/* control_error.c - see control_error.h. */
#include "control_error.h"

#include <stdarg.h>
#include <stdio.h>

#include <jansson.h>

int lg_ctl_fail(struct lg_ctl_error *e, unsigned status, const char *code, const char *fmt, ...)
{
    va_list ap;
    e->status = status;
    e->code = code;
    e->retry = status == 503;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
    return -1;
}

void lg_ctl_error_make_safe(struct lg_ctl_error *e)
{
    for (char *s = e->message; *s; s++)
        if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e)
            *s = '?';
}

json_t *lg_ctl_error_json(struct lg_ctl_error *e)
{
    lg_ctl_error_make_safe(e);
    json_t *body = json_pack("{s:s, s:s}", "error", e->code, "message", e->message);
    if (body != NULL && e->index >= 0 &&
        json_object_set_new(body, "index", json_integer(e->index)) != 0) {
        json_decref(body);
        body = NULL;
    }
    return body;
}
