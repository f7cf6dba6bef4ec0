/*
 * static_files.c - files of the static directory, answered on a raw HTTP connection (GET and
 * HEAD): the path is percent-decoded, "." and ".." segments are refused, and the resolved
 * file must lie inside the directory. The whole file goes into the connection's `out`.
 */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conn.h"
#include "static_files.h"

#define STATIC_FILE_MAX (4u << 20)

static const char *content_type(const char *path)
{
    static const struct {
        const char *ext, *type;
    } types[] = {
        {".html", "text/html; charset=utf-8"},
        {".js", "text/javascript; charset=utf-8"},
        {".mjs", "text/javascript; charset=utf-8"},
        {".css", "text/css; charset=utf-8"},
        {".json", "application/json"},
        {".svg", "image/svg+xml"},
        {".png", "image/png"},
        {".ico", "image/x-icon"},
        {".txt", "text/plain; charset=utf-8"},
        {".map", "application/json"},
        {".woff2", "font/woff2"},
    };
    const char *dot = strrchr(path, '.');
    for (size_t i = 0; dot && i < sizeof types / sizeof types[0]; i++)
        if (strcmp(dot, types[i].ext) == 0)
            return types[i].type;
    return "application/octet-stream";
}

/* A "." or ".." segment: refused outright rather than normalised, so no request can probe
 * what lies outside the static directory. */
static bool has_dot_segment(const char *path)
{
    for (const char *seg = path; seg; seg = strchr(seg + 1, '/')) {
        const char *s = seg[0] == '/' ? seg + 1 : seg;
        size_t len = strcspn(s, "/");
        if ((len == 1 && s[0] == '.') || (len == 2 && s[0] == '.' && s[1] == '.'))
            return true;
    }
    return false;
}

/* Resolve a request path inside the static directory. Return value: 0 with `resolved` set, or
 * -1 when the path escapes the directory or does not name a regular file. */
static int resolve_static(const char *dir, const char *decoded_path, char *resolved)
{
    char joined[PATH_MAX];
    if (has_dot_segment(decoded_path))
        return -1;
    const char *rel = strcmp(decoded_path, "/") == 0 ? "/index.html" : decoded_path;
    if (snprintf(joined, sizeof joined, "%s%s", dir, rel) >= (int)sizeof joined)
        return -1;
    if (!realpath(joined, resolved))
        return -1;
    size_t dlen = strlen(dir);
    if (strncmp(resolved, dir, dlen) != 0 || resolved[dlen] != '/')
        return -1; /* a symlink or ".." led outside static/ */
    return 0;
}

void lg_static_serve(struct lg_conn *c, const char *buf, const struct lg_http_request *req)
{
    char decoded[1024], resolved[PATH_MAX];
    int len = lg_percent_decode(buf + req->path.off, req->path.len, decoded, sizeof decoded, false,
                                NULL);
    if (len < 0 || memchr(decoded, '\0', (size_t)len) || decoded[0] != '/') {
        lg_conn_http_error(c, 400, "bad_request", "malformed request path", NULL);
        return;
    }
    /* O_NONBLOCK: opening a FIFO (or a device) would otherwise block the worker until a writer
     * comes; whatever is not a regular file is then refused with 404. */
    int fd = -1;
    struct stat st;
    if (resolve_static(c->home->static_dir, decoded, resolved) != 0 ||
        (fd = open(resolved, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) < 0 || fstat(fd, &st) != 0 ||
        !S_ISREG(st.st_mode) || st.st_size > STATIC_FILE_MAX) {
        if (fd >= 0)
            close(fd);
        lg_conn_http_error(c, 404, "not_found",
                           "no such endpoint or file; endpoints are /sse, /ws and /poll", NULL);
        return;
    }
    lg_buf_appendf(&c->out,
                   "HTTP/1.1 200 OK\r\nContent-Type: %s\r\nContent-Length: %lld\r\n"
                   "Cache-Control: no-cache\r\n%s\r\n",
                   content_type(resolved), (long long)st.st_size,
                   c->http.keep_alive ? "" : "Connection: close\r\n");
    if (req->method == LG_HTTP_GET) {
        size_t at = c->out.len;
        lg_buf_append(&c->out, NULL, (size_t)st.st_size);
        if (!c->out.oom && read(fd, c->out.data + at, (size_t)st.st_size) != st.st_size) {
            close(fd);
            lg_conn_http_error(c, 500, "internal_error", "static file could not be read", NULL);
            return;
        }
    }
    close(fd);
    c->closing = !c->http.keep_alive;
    lg_conn_want_write(c);
}
