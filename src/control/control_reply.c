/* control_reply.c - see control_reply.h. */
#include "control_reply.h"

#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <microhttpd.h>

#include "log.h"

static int reply(struct MHD_Connection *conn, unsigned status, char *text, const char *allow,
                 bool retry, bool close)
{
    if (text == NULL)
        return -1;
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
    if (resp == NULL) {
        free(text);
        return -1;
    }
    bool ok = MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json") ==
              MHD_YES;
    if (ok && allow != NULL)
        ok = MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, allow) == MHD_YES;
    if (ok && retry)
        ok = MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, "1") == MHD_YES;
    if (ok && close)
        ok = MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close") == MHD_YES;
    if (ok)
        ok = MHD_queue_response(conn, status, resp) == MHD_YES;
    MHD_destroy_response(resp);
    return ok ? 0 : -1;
}

static int reply_json(struct MHD_Connection *conn, unsigned status, json_t *body,
                      const char *allow, bool retry, bool close)
{
    char *text = body != NULL ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    if (text == NULL) {
        /* jansson refused the body (out of memory, or a string that is not UTF-8): the
         * request still gets an answer */
        lg_warn("control: could not render a %u answer as JSON; answering 500", status);
        text = strdup("{\"error\":\"internal_error\",\"message\":\"the answer could not be "
                      "rendered\"}");
        status = 500;
        retry = false;
    }
    return reply(conn, status, text, allow, retry, close);
}

int lg_ctl_reply_text(struct MHD_Connection *conn, unsigned status, char *text,
                      const char *allow, bool retry)
{
    return reply(conn, status, text, allow, retry, false);
}

int lg_ctl_reply_json(struct MHD_Connection *conn, unsigned status, json_t *body)
{
    return reply_json(conn, status, body, NULL, false, false);
}

int lg_ctl_reply_error(struct MHD_Connection *conn, struct lg_ctl_error *e, const char *allow)
{
    lg_debug("control: %u %s: %s", e->status, e->code, e->message);
    return reply_json(conn, e->status, lg_ctl_error_json(e), allow, e->retry, e->close);
}
