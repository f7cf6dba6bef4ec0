/*
 * control_auth.c - who may use the control port (docs/security.md): `Authorization: Bearer
 * <auth.control_token>` for everything, or a token whose livegate.publish claim covers the
 * topic of a publish; each route states which (enum lg_ctl_access, control_internal.h).
 * /healthz and /readyz stay open (probes). Without a control token and without a key the port
 * is open, as before (and loopback-only: lg_control_check_bind()).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <jansson.h>
#include <microhttpd.h>

#include "auth.h"
#include "clock.h"
#include "control.h"
#include "control_internal.h"
#include "control_reply.h"
#include "log.h"
#include "stats.h"
#include "topic_name.h"

static bool is_loopback(const char *host)
{
    unsigned char bin[16];
    if (strcmp(host, "localhost") == 0)
        return true;
    if (inet_pton(AF_INET, host, bin) == 1)
        return bin[0] == 127;
    return inet_pton(AF_INET6, host, bin) == 1 && memcmp(bin, in6addr_loopback.s6_addr, 16) == 0;
}

int lg_control_check_bind(const struct lg_config *cfg, char *err, size_t errlen)
{
    if (is_loopback(cfg->control_addr.host) ||
        (cfg->auth.control_token && cfg->auth.control_token[0]))
        return 0;
    snprintf(err, errlen, "listen.control %s is not a loopback address: set auth.control_token "
             "(the control port publishes and shows stats; off loopback it needs a token)",
             cfg->control_addr.host);
    return -1;
}

/* status (401 or 403) with code, message and the WWW-Authenticate challenge (RFC 6750 3). */
static int refuse_with(struct MHD_Connection *conn, unsigned status, const char *code,
                       const char *message, const char *challenge)
{
    struct lg_ctl_error e = LG_CTL_ERROR_INIT;
    lg_ctl_fail(&e, status, code, "%s", message);
    json_t *body = lg_ctl_error_json(&e);
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    struct MHD_Response *resp =
        text ? MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE) : NULL;
    if (!resp) {
        free(text);
        return -1;
    }
    bool ok = MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json") ==
                  MHD_YES &&
              MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, challenge) ==
                  MHD_YES &&
              MHD_queue_response(conn, status, resp) == MHD_YES;
    MHD_destroy_response(resp);
    return ok ? 0 : -1;
}

/* 401 with the token's problem. */
static int refuse(struct MHD_Connection *conn, enum lg_auth_result r)
{
    lg_auth_count_refusal(r);
    char challenge[256];
    snprintf(challenge, sizeof challenge, "%s", lg_auth_challenge(r) + strlen("WWW-Authenticate: "));
    challenge[strcspn(challenge, "\r")] = '\0';
    return refuse_with(conn, 401, lg_auth_result_code(r), lg_auth_result_message(r), challenge);
}

/* 403: a valid token on an admin route, which only the control token opens. */
static int refuse_admin(struct MHD_Connection *conn)
{
    LG_STAT_ADD(auth_refused_control_token, 1);
    static struct lg_ratelimit rl;
    lg_log_ratelimited(&rl, 1000, LG_LOG_WARN,
                       "control: a token without the control token tried an admin route");
    return refuse_with(conn, 403, "control_token_required",
                       "this route needs the control token (auth.control_token); a JWT never "
                       "grants it, whatever its claims",
                       "Bearer realm=\"livegate\", error=\"insufficient_scope\", "
                       "error_description=\"control token required\"");
}

/*
 * The rules (docs/security.md, "The control port"):
 *   open routes       always served;
 *   no key, no control token: everything is served (loopback only: lg_control_check_bind);
 *   admin routes      the control token when one is set; a valid JWT is 403, an invalid one
 *                     401 with its reason. Without a control token they are served as without
 *                     auth (the port is loopback-only then) and credentials are not looked at;
 *   publish routes    the control token, or a JWT (verified when a key is set; its claim is
 *                     checked per topic by lg_ctl_may_publish()); anything else 401.
 */
int lg_ctl_authorize(struct lg_control *c, struct MHD_Connection *conn, enum lg_ctl_access access,
                     struct lg_grant **grant, bool *answered)
{
    *grant = NULL;
    *answered = false;
    bool has_control = lg_auth_has_control_token(c->auth), has_key = lg_auth_has_key(c->auth);
    if (access == LG_CTL_OPEN || (!has_control && !has_key))
        return 0;
    if (access == LG_CTL_ADMIN && !has_control)
        return 0;
    const char *h = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                                MHD_HTTP_HEADER_AUTHORIZATION);
    const char *tok;
    size_t len;
    enum lg_auth_result r;
    if (h == NULL)
        r = LG_AUTH_MISSING;
    else if (!lg_auth_bearer(h, strlen(h), &tok, &len))
        r = LG_AUTH_MALFORMED;
    else if (lg_auth_is_control_token(c->auth, tok, len))
        return 0;
    else if (has_key)
        r = lg_auth_verify(c->auth, tok, len, lg_unix_ms() / 1000, grant);
    else
        r = LG_AUTH_BAD_SIGNATURE; /* a bearer that is not the control token, and no key */
    *answered = true;
    if (r != LG_AUTH_OK)
        return refuse(conn, r);
    if (access == LG_CTL_PUBLISH) {
        *answered = false;
        return 0;
    }
    lg_grant_free(*grant);
    *grant = NULL;
    return refuse_admin(conn);
}

bool lg_ctl_may_publish(const struct lg_ctl_request *r, const char *topic, size_t len,
                        struct lg_ctl_error *e)
{
    if (!r->grant)
        return true; /* the control token, or no auth */
    char name[LG_TOPIC_NAME_MAX + 1];
    if (len <= LG_TOPIC_NAME_MAX) {
        memcpy(name, topic, len);
        name[len] = '\0';
        if (lg_grant_may_publish(r->grant, name))
            return true;
    }
    LG_STAT_ADD(auth_refused_topic, 1);
    lg_ctl_fail(e, 403, "forbidden", "topic \"%.*s\" is outside the token's publish claim",
                len > 128 ? 128 : (int)len, topic);
    return false;
}
