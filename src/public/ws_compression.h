/*
 * ws_compression.h - permessage-deflate on the public port's WebSocket connections: the lws
 * extension a worker's context offers, and the answer to lws' question whether to accept an
 * offer.
 *
 * DESIGN
 * lws 4.1.6 negotiates extensions itself and inflates what the client sends compressed only
 * through an extension it has activated, so livegate registers one: lws' own permessage-deflate
 * (lws_extension_callback_pm_deflate) behind a wrapper. The wrapper gives lws the parameters to
 * echo (lws writes back, by name, those of the accepted offer that are in the list), answers
 * which offer to accept with lg_ws_deflate_choose() (ws_deflate.h), and keeps lws' compressor
 * unused: events go out as frames compressed once per event (transport_ws.c writes them raw).
 * Inbound, lws inflates with a 32 KB window; it frees its inflater after each message only
 * when the client promised not to take over context (client_no_context_takeover).
 *
 * Owns:    nothing (lws owns its per-connection extension state and frees it at close).
 * Threads: the worker thread of the connection.
 * Bounds:  per connection that negotiated it, lws' extension state (a few hundred bytes); once
 *          the client has sent a compressed message, lws' inflater (about 7 KB plus a 32 KB
 *          window) until the connection closes, or until that message ends with
 *          client_no_context_takeover.
 */
#ifndef LG_WS_COMPRESSION_H
#define LG_WS_COMPRESSION_H

#include <libwebsockets.h>

struct lg_config;
struct lg_ws_upgrade;

/* The extensions a worker's lws context offers: permessage-deflate, or none (NULL) when
 * websocket.compression.enabled is false. */
const struct lws_extension *lg_ws_compression_extensions(const struct lg_config *cfg);

/* LWS_CALLBACK_CONFIRM_EXTENSION_OKAY on wsi, whose upgrade is u (NULL: none known).
 * Return value: 0 to accept the offer lws is looking at, 1 to pass it over. */
int lg_ws_compression_confirm(struct lws *wsi, struct lg_ws_upgrade *u,
                              const struct lg_config *cfg);

#endif
