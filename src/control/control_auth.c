/*
 * control_auth.c - who may use the control port (docs/security.md): `Authorization: Bearer
 * <auth.control_token>` for everything, or a token whose livegate.publish claim covers the
 * topic of a publish. /healthz and /readyz stay open (probes). Without a control token and
 * without a key the port is open, as before (and loopback-only: lg_control_check_bind()).
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

/* 401 with the reason and WWW-Authenticate (RFC 6750). */
static int refuse(struct MHD_Connection *conn, enum lg_auth_result r)
{
    lg_auth_count_refusal(r);
    struct lg_ctl_error e = LG_CTL_ERROR_INIT;
    lg_ctl_fail(&e, 401, lg_auth_result_code(r), "%s", lg_auth_result_message(r));
    json_t *body = lg_ctl_error_json(&e);
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    struct MHD_Response *resp =
        text ? MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE) : NULL;
    if (!resp) {
        free(text);
        return -1;
    }
    char challenge[256];
    snprintf(challenge, sizeof challenge, "%s", lg_auth_challenge(r) + strlen("WWW-Authenticate: "));
    challenge[strcspn(challenge, "\r")] = '\0';
    bool ok = MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json") ==
                  MHD_YES &&
              MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, challenge) ==
                  MHD_YES &&
              MHD_queue_response(conn, 401, resp) == MHD_YES;
    MHD_destroy_response(resp);
    return ok ? 0 : -1;
}

int lg_ctl_authorize(struct lg_control *c, struct MHD_Connection *conn, bool publishes,
                     struct lg_grant **grant, bool *answered)
{
    *grant = NULL;
    *answered = false;
    bool has_control = lg_auth_has_control_token(c->auth);
    if (!has_control && !lg_auth_has_key(c->auth))
        return 0; /* open, as without auth (loopback only) */
    if (!has_control && !publishes)
        return 0; /* stats without a control token: loopback only, as before */
    const char *h = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                                MHD_HTTP_HEADER_AUTHORIZATION);
    const char *tok;
    size_t len;
    enum lg_auth_result r = LG_AUTH_MISSING;
    if (h && !lg_auth_bearer(h, strlen(h), &tok, &len))
        r = LG_AUTH_MALFORMED;
    else if (h && lg_auth_is_control_token(c->auth, tok, len))
        return 0;
    else if (h && publishes && lg_auth_has_key(c->auth))
        r = lg_auth_verify(c->auth, tok, len, lg_unix_ms() / 1000, grant);
    else if (h)
        r = LG_AUTH_BAD_SIGNATURE; /* a bearer that is not the control token */
    if (r == LG_AUTH_OK)
        return 0;
    *answered = true;
    return refuse(conn, r);
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
