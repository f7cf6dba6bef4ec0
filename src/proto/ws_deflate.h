/*
 * ws_deflate.h - WebSocket permessage-deflate (RFC 7692): which client offer livegate accepts,
 * and an event's message compressed once for every connection that negotiated it.
 *
 * DESIGN
 * Every event is compressed on its own (no context taken over from one message to the next),
 * with one window (websocket.compression.max_window_bits), so one compressed frame is valid
 * for every connection that negotiated the extension: the server may always compress without
 * context takeover, and an offer that caps the server's window below ours is declined. The
 * first worker that writes an event to such a connection compresses it and sets the event's
 * ws_compressed pointer once (compare-and-swap: a worker that lost the race frees its copy);
 * the others reuse it. The negotiation answers what libwebsockets 4.1.6 writes back for the
 * offer it is told to accept (src/public/ws_compression.c): parameters echoed by name, so an
 * offer is accepted only when that echo is a valid RFC 7692 response.
 *
 * Owns:    a deflater's zlib stream; an event's compressed message (one allocation, freed with
 *          the event by lg_event_unref(), counted in the live event bytes of accounting.h).
 * Threads: lg_ws_deflate_choose() is pure, any thread. A deflater is its owner's (a worker's)
 *          alone. lg_event_ws_compressed() may race on one event from any number of threads.
 * Bounds:  a deflater holds 2^(window_bits+2) + 2^(mem_level+9) bytes of zlib state; a
 *          compressed message is at most its event's JSON plus zlib's bound.
 */
#ifndef LG_WS_DEFLATE_H
#define LG_WS_DEFLATE_H

#include <stdbool.h>
#include <stddef.h>
#include <zlib.h>

#include "encode.h"

struct lg_event;
struct lg_ws_compressed;

/* The window bits an offer's server_max_window_bits may name (RFC 7692 7.1.2.1). */
#define LG_WS_DEFLATE_MIN_WINDOW_BITS 8
#define LG_WS_DEFLATE_MAX_WINDOW_BITS 15

/*
 * Which permessage-deflate offer of a Sec-WebSocket-Extensions value to accept, when events are
 * compressed with a window of window_bits. An offer is accepted when every parameter is one RFC
 * 7692 defines, given once, with a valid value in token form, and server_max_window_bits (if
 * given) is at least window_bits. Any byte outside tokens, ',', ';', '=' and spaces (a quoted
 * value, a tab) declines every offer. An offer without parameters that is not the last one is
 * passed over: libwebsockets 4.1.6 would fail the handshake at the next mention.
 * Return value: the 0-based ordinal of the offer among the permessage-deflate ones, or -1 to
 * decline them all.
 */
int lg_ws_deflate_choose(const char *value, size_t len, unsigned window_bits);

struct lg_ws_deflater {
    z_stream z;
    unsigned min_bytes; /* smaller messages are not worth compressing */
    bool ready;
};

/* Set up d (raw deflate, level, window_bits, mem_level). Return value: 0, -1 out of memory. */
int lg_ws_deflater_init(struct lg_ws_deflater *d, int level, int window_bits, int mem_level,
                        unsigned min_bytes);
void lg_ws_deflater_release(struct lg_ws_deflater *d);

/* Append to out one final text frame with RSV1 set whose payload is text compressed on its own
 * (RFC 7692 7.2.1: a raw deflate stream, its trailing 00 00 ff ff removed).
 * Return value: 0, -1 on a zlib failure or out of memory (out is left as it was). */
int lg_ws_deflate_frame(struct lg_ws_deflater *d, const char *text, size_t len,
                        struct lg_buf *out);

/*
 * ev's WebSocket message as a connection that negotiated permessage-deflate gets it: the cached
 * compressed frame, made with d on the first call. Return value: borrowed (it lives as long as
 * ev), NULL when ev goes uncompressed (below d's min_bytes, not smaller compressed, or out of
 * memory: the plain frame is always valid).
 */
const struct lg_ws_compressed *lg_event_ws_compressed(const struct lg_event *ev,
                                                      struct lg_ws_deflater *d);

#endif
