/*
 * lg_extra.c - more helpers for the transport, resume, lifecycle and control-API integration
 * tests: publishing with a type/content type, waiting for raw SSE bytes, and running the
 * binary to completion.
 *
 * Every wait is bounded by a deadline on the monotonic clock; nothing sleeps blindly.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "lg_internal.h"
#include "lg_test.h"

/* ---- Publishing ---------------------------------------------------------------------------- */

int lg_publish_ex(uint16_t control_port, const char *topic, const char *query,
                  const char *content_type, const void *data, size_t len, char *id_out,
                  size_t id_cap)
{
    if (id_out && id_cap)
        id_out[0] = '\0';
    char path[1400], hdr[256] = "";
    snprintf(path, sizeof path, "/v1/topics/%s/events%s%s", topic, query ? "?" : "",
             query ? query : "");
    if (content_type)
        snprintf(hdr, sizeof hdr, "Content-Type: %s\r\n", content_type);
    struct lg_http_response r;
    if (lg_http_request(control_port, "POST", path, hdr[0] ? hdr : NULL, data ? data : "",
                        data ? len : 0, &r, 10000) < 0) {
        lg_http_response_free(&r);
        return 0;
    }
    int status = r.status;
    if (status != 201) {
        fprintf(stderr, "lg_publish_ex: %s answered %d: %s\n", path, status, r.body);
    } else if (id_out && id_cap) {
        json_t *root = json_loadb(r.body, r.body_len, 0, NULL);
        const char *id = json_string_value(json_object_get(root, "id"));
        snprintf(id_out, id_cap, "%s", id ? id : "");
        json_decref(root);
    }
    lg_http_response_free(&r);
    return status;
}

int lg_id_parse(const char *id, char *topic, size_t topic_cap, char *epoch, size_t epoch_cap,
                unsigned long long *seq)
{
    const char *at = strrchr(id, '@');
    const char *colon = at ? strchr(at, ':') : NULL;
    if (!at || !colon || colon[1] == '\0')
        return -1;
    char *end;
    errno = 0;
    unsigned long long s = strtoull(colon + 1, &end, 10);
    if (*end != '\0' || errno)
        return -1;
    if (topic)
        snprintf(topic, topic_cap, "%.*s", (int)(at - id), id);
    if (epoch)
        snprintf(epoch, epoch_cap, "%.*s", (int)(colon - at - 1), at + 1);
    if (seq)
        *seq = s;
    return 0;
}

/* Read what the stream has into c->raw, until data or the deadline. Return value: 0 (data
 * read, or the stream ended: c->closed), -1 out of memory, -2 deadline passed. */
static int sse_read_more(struct lg_sse_client *c, int64_t deadline)
{
    if (lg_test__reserve(&c->raw, &c->raw_cap, c->raw_len + 16384) < 0)
        return -1;
    ssize_t n = lg_test__recv_deadline(c->fd, c->raw + c->raw_len, c->raw_cap - 1 - c->raw_len,
                                       deadline);
    if (n == -2)
        return -2;
    if (n <= 0) {
        c->closed = true;
        return 0;
    }
    c->raw_len += (size_t)n;
    c->raw[c->raw_len] = '\0';
    return 0;
}

/* ---- SSE raw bytes -------------------------------------------------------------------------- */

bool lg_sse_wait_raw(struct lg_sse_client *c, size_t from, const char *needle, int timeout_ms)
{
    int64_t deadline = lg_test__deadline(timeout_ms);
    size_t nlen = strlen(needle);
    for (;;) {
        if (c->raw && c->raw_len >= from + nlen && memmem(c->raw + from, c->raw_len - from, needle, nlen))
            return true;
        if (c->closed || c->fd < 0 || sse_read_more(c, deadline) != 0)
            return false;
    }
}

bool lg_sse_wait_eof(struct lg_sse_client *c, int timeout_ms)
{
    int64_t deadline = lg_test__deadline(timeout_ms);
    for (;;) {
        if (c->closed || c->fd < 0)
            return true;
        if (sse_read_more(c, deadline) != 0)
            return false;
    }
}

/* ---- Running the binary to completion ------------------------------------------------------ */

static void lg_extra__drain(int fd, char **buf, size_t *len, size_t *cap, bool *open)
{
    char tmp[8192];
    ssize_t n = read(fd, tmp, sizeof tmp);
    if (n > 0) {
        if (lg_test__reserve(buf, cap, *len + (size_t)n) == 0) {
            memcpy(*buf + *len, tmp, (size_t)n);
            *len += (size_t)n;
            (*buf)[*len] = '\0';
        }
    } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        *open = false;
    }
}

int lg_run_binary(const char *const *args, struct lg_run_result *r, int timeout_ms)
{
    memset(r, 0, sizeof *r);
    r->status = -1;
    const char *binary = getenv("LG_BINARY");
    if (!binary || !*binary)
        binary = "build/livegate";
    size_t nargs = 0;
    while (args && args[nargs])
        nargs++;
    const char **argv = calloc(nargs + 2, sizeof *argv);
    int po[2] = {-1, -1}, pe[2] = {-1, -1};
    if (!argv || pipe2(po, O_CLOEXEC) < 0 || pipe2(pe, O_CLOEXEC) < 0) {
        fprintf(stderr, "lg_run_binary: %s\n", strerror(errno));
        free(argv);
        return -1;
    }
    argv[0] = binary;
    for (size_t i = 0; i < nargs; i++)
        argv[i + 1] = args[i];
    pid_t parent = getpid();
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "lg_run_binary: fork: %s\n", strerror(errno));
        free(argv);
        return -1;
    }
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127);
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull >= 0)
            dup2(devnull, STDIN_FILENO);
        dup2(po[1], STDOUT_FILENO);
        dup2(pe[1], STDERR_FILENO);
        execv(binary, (char *const *)argv);
        _exit(127);
    }
    free(argv);
    close(po[1]);
    close(pe[1]);
    size_t ocap = 0, ecap = 0;
    lg_test__reserve(&r->out, &ocap, 0);
    lg_test__reserve(&r->err, &ecap, 0);
    r->out[0] = r->err[0] = '\0';
    bool oopen = true, eopen = true;
    int64_t deadline = lg_test__deadline(timeout_ms);
    while ((oopen || eopen) && lg_left_ms(deadline) > 0) {
        struct pollfd p[2] = {{.fd = oopen ? po[0] : -1, .events = POLLIN},
                              {.fd = eopen ? pe[0] : -1, .events = POLLIN}};
        int n = poll(p, 2, lg_left_ms(deadline));
        if (n < 0 && errno != EINTR)
            break;
        if (oopen && p[0].revents)
            lg_extra__drain(po[0], &r->out, &r->out_len, &ocap, &oopen);
        if (eopen && p[1].revents)
            lg_extra__drain(pe[0], &r->err, &r->err_len, &ecap, &eopen);
    }
    close(po[0]);
    close(pe[0]);
    int st = 0;
    for (;;) {
        pid_t w = waitpid(pid, &st, WNOHANG);
        if (w == pid) {
            r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
            return 0;
        }
        if (lg_left_ms(deadline) == 0) {
            fprintf(stderr, "lg_run_binary: still running after %d ms; killed\n", timeout_ms);
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            return -1;
        }
        poll(NULL, 0, 10);
    }
}

void lg_run_result_free(struct lg_run_result *r)
{
    free(r->out);
    free(r->err);
    r->out = r->err = NULL;
}
