/* conn_auth.c - see conn_auth.h. */
#include "conn_auth.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "clock.h"
#include "config.h"
#include "conn.h"
#include "log.h"
#include "sse_refusal.h"
#include "stats.h"
#include "subscribe_params.h"

/* ---- Token sources --------------------------------------------------------------------------- */

static char *query_token(const char *buf, const struct lg_http_request *req)
{
    char name[32];
    char *value = malloc(LG_AUTH_TOKEN_MAX + 2);
    if (!value)
        return NULL;
    size_t pos = 0;
    int rc;
    while ((rc = lg_query_next(buf + req->query.off, req->query.len, &pos, name, sizeof name,
                               value, LG_AUTH_TOKEN_MAX + 2)) != 0) {
        if (rc == 1 && strcmp(name, "access_token") == 0)
            return value;
    }
    free(value);
    return NULL;
}

char *lg_conn_request_token(const char *buf, const struct lg_http_request *req,
                            const char *cookie)
{
    const struct lg_slice *auth = &req->headers[LG_HDR_AUTHORIZATION];
    const struct lg_slice *cookies = &req->headers[LG_HDR_COOKIE];
    const char *tok;
    size_t len;
    if (auth->len)
        /* A credential of another scheme is no bearer token: "" makes it malformed. */
        return lg_auth_bearer(buf + auth->off, auth->len, &tok, &len) ? strndup(tok, len)
                                                                        : strdup("");
    char *q = query_token(buf, req);
    if (q)
        return q;
    if (cookies->len && lg_auth_cookie(buf + cookies->off, cookies->len, cookie, &tok, &len))
        return strndup(tok, len);
    return NULL;
}

/* ---- Origins and CORS ---------------------------------------------------------------------- */

/* Set c->http.cors for an allowed Origin. Return value: false when the origin is refused. */
static bool check_origin(struct lg_conn *c, const char *buf, const struct lg_http_request *req)
{
    const struct lg_slice *o = &req->headers[LG_HDR_ORIGIN];
    char lines[LG_CORS_LINES_MAX];
    free(c->http.cors);
    c->http.cors = NULL;
    if (!lg_cors_lines_for(lg_auth_origin(c->home->auth, buf + o->off, o->len), buf + o->off,
                           o->len, lines))
        return false;
    if (lines[0])
        c->http.cors = strdup(lines);
    return true;
}

void lg_conn_cors(struct lg_conn *c, const char *buf, const struct lg_http_request *req)
{
    (void)check_origin(c, buf, req);
}

static void refuse_origin(struct lg_conn *c)
{
    LG_STAT_ADD(auth_refused_origin, 1);
    lg_conn_http_error(c, 403, "origin_not_allowed",
                       "this Origin is not in allowed_origins", NULL);
}

void lg_conn_preflight(struct lg_conn *c, const char *buf, const struct lg_http_request *req)
{
    if (!check_origin(c, buf, req) || !c->http.cors) { /* refused, absent, or no CORS at all */
        refuse_origin(c);
        return;
    }
    lg_buf_reset(&c->out);
    lg_buf_appendf(&c->out,
                   "HTTP/1.1 204 No Content\r\n%sAccess-Control-Allow-Methods: GET, OPTIONS\r\n"
                   "Access-Control-Allow-Headers: Authorization, Last-Event-ID\r\n"
                   "Access-Control-Max-Age: 600\r\nContent-Length: 0\r\n%s\r\n",
                   c->http.cors, c->http.keep_alive ? "" : "Connection: close\r\n");
    c->closing = !c->http.keep_alive;
    lg_conn_want_write(c);
}

/* ---- Tokens and topics ----------------------------------------------------------------------- */

static void refuse_token(struct lg_conn *c, enum lg_auth_result r)
{
    lg_auth_count_refusal(r);
    lg_conn_http_error(c, 401, lg_auth_result_code(r), lg_auth_result_message(r),
                       lg_auth_challenge(r));
}

int lg_conn_authorize_http(struct lg_conn *c, const char *buf, const struct lg_http_request *req,
                           const struct lg_subscribe_params *p)
{
    if (!check_origin(c, buf, req)) {
        refuse_origin(c);
        return -1;
    }
    const struct lg_auth *auth = c->home->auth;
    lg_grant_free(c->grant);
    c->grant = NULL;
    if (!lg_auth_enabled(auth))
        return 0;
    char *token = lg_conn_request_token(buf, req, lg_auth_cookie_name(auth));
    if (token) {
        enum lg_auth_result r = token[0] ? lg_auth_verify(auth, token, strlen(token),
                                                          lg_unix_ms() / 1000, &c->grant)
                                         : LG_AUTH_MALFORMED;
        free(token);
        if (r != LG_AUTH_OK) {
            refuse_token(c, r);
            return -1;
        }
    }
    for (size_t i = 0; i < p->topic_count; i++) {
        if (lg_auth_may_subscribe(auth, c->grant, p->topics[i]))
            continue;
        if (!c->grant) { /* no token: asking for one is the answer */
            refuse_token(c, LG_AUTH_MISSING);
            return -1;
        }
        char msg[256];
        snprintf(msg, sizeof msg, "topic %s is outside the token's subscribe claim",
                 p->topics[i]);
        LG_STAT_ADD(auth_refused_topic, 1);
        lg_conn_http_error(c, 403, "forbidden", msg,
                           "WWW-Authenticate: Bearer realm=\"livegate\", "
                           "error=\"insufficient_scope\"\r\n");
        return -1;
    }
    return 0;
}

/* ---- Expiry ---------------------------------------------------------------------------------- */

uint64_t lg_conn_token_ms_left(const struct lg_conn *c)
{
    if (!c->grant)
        return UINT64_MAX;
    int64_t left = c->grant->expires_at_s * 1000 - lg_unix_ms();
    return left > 0 ? (uint64_t)left : 0;
}

void lg_conn_arm_expiry(struct lg_conn *c)
{
    if (!c->grant)
        return;
    int64_t at_ms = c->grant->expires_at_s * 1000;
    if (lg_conn_expires_at(c, at_ms) != 0) /* out of memory: the lws timer */
        lws_set_timer_usecs(c->wsi, (lws_usec_t)(lg_conn_token_ms_left(c) + 1) * LWS_US_PER_MS);
}
