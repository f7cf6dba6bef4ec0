/*
 * protocols.h - the lws protocols a worker registers on its context, and what the worker hands
 * the raw one when it adopts a classified socket. Defined by transport_http.c (raw role: SSE,
 * long-poll, static files) and transport_ws.c (ws role); used by worker.c.
 *
 * Owns:    nothing: the protocols are const and static. A struct lg_handoff is the worker's, on
 *          its stack, for the duration of one lws_adopt_descriptor_vhost_via_info() call.
 * Frees:   nothing to free; lws frees the per-session struct lg_conn after its close callbacks
 *          (the worker sets per_session_data_size to lg_conn_size()).
 * Threads: the worker thread that owns the lws context.
 * Bounds:  one handoff per adopted socket, read only inside LWS_CALLBACK_RAW_ADOPT.
 */
#ifndef LG_PROTOCOLS_H
#define LG_PROTOCOLS_H

#include <libwebsockets.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

struct lg_client_address;
struct lg_http_request;

extern const struct lws_protocols lg_protocol_http; /* raw SSE / long-poll / static */
extern const struct lws_protocols lg_protocol_ws;   /* "livegate.v1" */

/* What the classifier parsed, handed to the connection that serves it. */
struct lg_handoff {
    const char *buf;                 /* the request bytes, and any read after it */
    size_t len;                      /* bytes in buf (req->head_len of them are the request) */
    const struct lg_http_request *req;
    const struct lg_client_address *client; /* who it counts against, or NULL: nobody */
    const struct lg_client_address *peer;   /* the socket's peer, or NULL: not IP */
};

/* A WebSocket upgrade's answer and the connection's first message go out in one segment: the
 * worker corks the socket (TCP_CORK) before lws answers the upgrade, and the ws protocol
 * uncorks it when LWS_CALLBACK_ESTABLISHED has queued the first message. A socket lws closes
 * before that is flushed by the close. Only the uncork transmits: one delivery to the client,
 * and one wake-up of it, instead of two. */
static inline void lg_socket_cork(int fd)
{
    int one = 1;
    (void)setsockopt(fd, IPPROTO_TCP, TCP_CORK, &one, sizeof one); /* best effort: only merges */
}

static inline void lg_socket_uncork(int fd)
{
    int zero = 0;
    (void)setsockopt(fd, IPPROTO_TCP, TCP_CORK, &zero, sizeof zero);
}

#endif
