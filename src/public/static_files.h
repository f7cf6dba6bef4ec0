/*
 * static_files.h - files of the static directory, answered on a raw HTTP connection: part of
 * the plain HTTP transport (transport_http.c routes GET and HEAD of every other path here).
 *
 * Owns:    nothing; buf and req are borrowed for the call.
 * Frees:   nothing.
 * Threads: the worker thread of c, inside an lws callback of c.
 * Bounds:  one response per request, a file of at most STATIC_FILE_MAX bytes (static_files.c).
 */
#ifndef LG_STATIC_FILES_H
#define LG_STATIC_FILES_H

struct lg_conn;
struct lg_http_request;

/* Queue the answer to a GET or HEAD of a static file in c->out and ask for a writable callback. */
void lg_static_serve(struct lg_conn *c, const char *buf, const struct lg_http_request *req);

#endif
