/*
 * http_routes.h - the handlers the raw HTTP router (transport_http.c) dispatches a parsed
 * request to: /sse (transport_sse.c), /poll (transport_poll.c) and static files
 * (static_files.c). Each one answers on c: it queues a response in c->out and asks for a
 * writable callback, or makes c a stream or a held poll by switching its transport table.
 *
 * Owns:    nothing; buf and req are borrowed for the duration of the call (the handoff of the
 *          first request, or the keep-alive request buffer, freed after the call).
 * Frees:   nothing.
 * Threads: the worker thread of c, inside an lws callback of c.
 * Bounds:  one response per request; a static file is at most STATIC_FILE_MAX bytes.
 */
#ifndef LG_HTTP_ROUTES_H
#define LG_HTTP_ROUTES_H

struct lg_conn;
struct lg_http_request;

void lg_sse_serve(struct lg_conn *c, const char *buf, const struct lg_http_request *req);
void lg_poll_serve(struct lg_conn *c, const char *buf, const struct lg_http_request *req);
void lg_static_serve(struct lg_conn *c, const char *buf, const struct lg_http_request *req);

#endif
