/*
 * acceptor.h - one worker's front door: its SO_REUSEPORT listening socket and the sockets
 * accepted but not yet classified, whose request head is being read.
 *
 * A socket is accepted (TCP_NODELAY and socket_send_buffer_bytes, which it inherits from the
 * listener), counted in accounting.h, and watched in a private epoll set until its head is
 * complete. Past limits.max_connections it is refused with 503 once its head is in (or
 * LG_LINGER_MS passed, as long as a refusal lingers), so that the refusal of an SSE
 * subscription can be worded as one a browser's EventSource retries (sse_refusal.h). Malformed
 * heads (400), oversized heads (431), heads that do not arrive within limits.request_timeout_ms
 * (408) and WebSocket upgrades anywhere but GET /ws (404, 405, 431 past 2048 bytes) are
 * answered with a JSON error and closed here. Every other head is handed to the owner through
 * struct lg_acceptor_ops, which then owns the socket.
 * No libwebsockets here: the owner watches the two descriptors (listen_fd, heads_fd) in its
 * loop and calls accept_ready / heads_ready when they are readable.
 *
 * Owns:    the listening socket and the heads epoll set until lg_acceptor_fds_taken() (then
 *          whoever took them closes them), every pending socket and its head buffer, and one
 *          spare descriptor (/dev/null) given up at EMFILE to accept and refuse with 503, so a
 *          full descriptor table never makes the listener spin.
 * Frees:   a pending socket when it is handed on, when its refusal has lingered (peer closed,
 *          LG_LINGER_MS or LG_LINGER_BYTES), or at lg_acceptor_destroy().
 * Threads: the owning worker's thread only (create/destroy: the app, before start/after join).
 * Bounds:  pending and lingering sockets count in limits.max_connections; each buffers at most
 *          limits.max_request_head_bytes; at most ACCEPTS_PER_WAKE accepts per call.
 */
#ifndef LG_ACCEPTOR_H
#define LG_ACCEPTOR_H

#include <stddef.h>
#include <stdint.h>

#include "client_address.h"
#include "config.h"
#include "http_request.h"

struct lg_acceptor;
struct lg_auth;

/* A refused client may still be sending: after the answer, stop sending (SHUT_WR), read and
 * discard for at most this long / this many bytes, then close, so the close does not send a
 * reset that can destroy the answer before the client reads it (nginx's lingering_close). The
 * acceptor does this for its refusals; transport_http.c for answers on adopted connections. */
#define LG_LINGER_MS 2000
#define LG_LINGER_BYTES (64u * 1024)

/* A complete request head, handed on. head[0..len) holds every byte read so far. */
struct lg_accepted {
    int fd;
    const char *head;
    size_t len;
    const struct lg_http_request *req;
    const struct lg_client_address *peer; /* the socket's peer (accept4), NULL: not IP */
    struct lg_client_address client; /* who the connection counts against (client_address.h) */
    bool counted;                    /* false: a trusted proxy's own, counted against nobody */
};

struct lg_acceptor_ops {
    /* A WebSocket upgrade on GET /ws. Return value: NULL when the owner took the socket, else
     * why it could not (answered 503 with that message and closed). */
    const char *(*websocket)(void *owner, const struct lg_accepted *a);
    /* Any other request. The owner takes the socket and may read a->head only during the
     * call. */
    void (*http)(void *owner, const struct lg_accepted *a);
    /* Stop watching listen_fd for ms milliseconds: out of descriptors with no spare to refuse
     * with (a sibling worker took the freed slot), retrying at once would spin. */
    void (*pause)(void *owner, uint32_t ms);
};

/* Fail with "address in use" when another process listens on addr's port (SO_REUSEPORT would
 * let it share the workers' port silently). Call once, before the first acceptor. Return
 * value: 0, or -1 with err filled. */
int lg_acceptor_check_port_free(const struct lg_listen_addr *addr, char *err, size_t errlen);

/* Bind cfg->public_addr (port *port; 0 = let the kernel pick, then *port is set). trusted:
 * the trusted proxies (borrowed, immutable), for the client address of each connection; auth:
 * the verifier (borrowed), whose allowed_origins a reload may change (auth.h).
 * Return value: the acceptor, or NULL with err filled. */
struct lg_acceptor *lg_acceptor_create(const struct lg_config *cfg, uint16_t *port,
                                       const struct lg_acceptor_ops *ops, void *owner,
                                       const struct lg_client_address *trusted,
                                       size_t trusted_count, const struct lg_auth *auth,
                                       char *err, size_t errlen);
void lg_acceptor_destroy(struct lg_acceptor *a); /* closes pending sockets (and the fds, unless taken) */

int lg_acceptor_listen_fd(const struct lg_acceptor *a);
int lg_acceptor_heads_fd(const struct lg_acceptor *a); /* readable: a pending socket has bytes */
void lg_acceptor_fds_taken(struct lg_acceptor *a);      /* the owner closes both fds from now on */

void lg_acceptor_accept_ready(struct lg_acceptor *a);
void lg_acceptor_heads_ready(struct lg_acceptor *a);
void lg_acceptor_expire(struct lg_acceptor *a, uint64_t now_ms); /* 408 past the deadline */
/* Answer every pending socket 503 with message (drain); an SSE subscription's as an event
 * (sse_refusal.h). */
void lg_acceptor_refuse_all(struct lg_acceptor *a, const char *message);
size_t lg_acceptor_pending(const struct lg_acceptor *a);

#endif
