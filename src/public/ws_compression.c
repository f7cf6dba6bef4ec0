/* ws_compression.c - see ws_compression.h. */
#include "ws_compression.h"

#include <string.h>

#include "config.h"
#include "conn.h"
#include "stats.h"
#include "ws_deflate.h"

/*
 * What lws may echo of the accepted offer: it writes "; <name>" for each of these that an
 * offered parameter starts with. The window sizes are spelled out so the echo carries the
 * offered value (lws echoes names only); lg_ws_deflate_choose() accepts no offer whose echo
 * would be wrong. client_max_window_bits is never echoed: without it in the answer the client
 * may use any window, which lws' inflater (32 KB) takes.
 */
static const struct lws_ext_options echoed[] = {
    {"server_no_context_takeover", EXTARG_NONE},
    {"client_no_context_takeover", EXTARG_NONE},
    {"server_max_window_bits=9", EXTARG_NONE},
    {"server_max_window_bits=10", EXTARG_NONE},
    {"server_max_window_bits=11", EXTARG_NONE},
    {"server_max_window_bits=12", EXTARG_NONE},
    {"server_max_window_bits=13", EXTARG_NONE},
    {"server_max_window_bits=14", EXTARG_NONE},
    {"server_max_window_bits=15", EXTARG_NONE},
    {NULL, EXTARG_NONE},
};
enum { ECHO_CLIENT_NO_CONTEXT_TAKEOVER = 1 };

/* Only what the client promised reaches lws' extension: its server_no_context_takeover would
 * also reset the inflater after every message, which is wrong for a client that takes over
 * its own context. */
static int pm_deflate(struct lws_context *ctx, const struct lws_extension *ext, struct lws *wsi,
                      enum lws_extension_callback_reasons reason, void *user, void *in,
                      size_t len)
{
    switch (reason) {
    case LWS_EXT_CB_CONSTRUCT: {
        int rc = lws_extension_callback_pm_deflate(ctx, ext, wsi, reason, user, in, len);
        if (rc != 0)
            return rc;
        *(const struct lws_ext_options **)in = echoed;
        struct lg_conn_home *home = lws_context_user(lws_get_context(wsi));
        int fd = lws_get_socket_fd(wsi);
        if (fd >= 0 && (size_t)fd < home->ws_upgrades_cap)
            home->ws_upgrades[fd].deflate = true;
        LG_STAT_ADD(ws_deflate_negotiated, 1);
        return 0;
    }
    case LWS_EXT_CB_OPTION_SET: {
        const struct lws_ext_option_arg *echo = in;
        if (echo->option_index != ECHO_CLIENT_NO_CONTEXT_TAKEOVER)
            return 0; /* echoed; nothing of lws' own to set */
        /* The client compresses each message on its own: free the inflater after each. */
        struct lws_ext_option_arg reset = {.option_name = "server_no_context_takeover"};
        (void)lws_extension_callback_pm_deflate(ctx, ext, wsi, LWS_EXT_CB_NAMED_OPTION_SET,
                                                user, &reset, 0);
        return 0;
    }
    default:
        return lws_extension_callback_pm_deflate(ctx, ext, wsi, reason, user, in, len);
    }
}

static const struct lws_extension extensions[] = {
    {"permessage-deflate", pm_deflate, NULL},
    {NULL, NULL, NULL},
};

const struct lws_extension *lg_ws_compression_extensions(const struct lg_config *cfg)
{
    return cfg->websocket.compression.enabled ? extensions : NULL;
}

/* lws reads the offers in order and asks about each permessage-deflate one until one is
 * accepted; the first question decides which. lws fails a handshake whose header is longer
 * than 255 bytes before it asks. */
int lg_ws_compression_confirm(struct lws *wsi, struct lg_ws_upgrade *u,
                              const struct lg_config *cfg)
{
    if (!u)
        return 1;
    if (u->deflate_offers == 0) {
        char value[256];
        int n = lws_hdr_copy(wsi, value, sizeof value, WSI_TOKEN_EXTENSIONS);
        u->deflate_offer =
            (int8_t)(n < 0 ? -1
                           : lg_ws_deflate_choose(value, (size_t)n,
                                                  cfg->websocket.compression.max_window_bits));
        if (u->deflate_offer < 0)
            LG_STAT_ADD(ws_deflate_declined, 1);
    }
    return u->deflate_offers++ == u->deflate_offer ? 0 : 1;
}
