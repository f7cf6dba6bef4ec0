/*
 * presence_churn.c - lg_presence_churn: N anonymous SSE clients join and leave one presence
 * topic over and over (each holds its stream a random 0.5x..1.5x of --hold-ms, closes it and
 * reconnects at once) while one observer stream counts the join, leave, occupancy and resync
 * notices it is sent: the coalesced event rate of bench/presence_churn.sh (issue 33).
 *
 * One epoll thread, libc only. The observer's stream is parsed byte by byte (a join notice
 * names thousands of members, in one line of any length, split across reads anywhere).
 * Prints one JSON line: connects, connects_per_s, failures, and the observer's figures over
 * the time it listened: per notice type the count and the rate, the members named in joins
 * and leaves, whether it was told to resync. Exit status 1, with the reason on stderr and in
 * "observer_error", when those figures cannot be trusted: the observer got no 200, its stream
 * ended or failed before the end of the run, it was sent no join (its own is owed to it), or
 * its last notice came more than OBSERVER_QUIET_MS before the end (a stalled stream).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* The gateway batches once a second while the clients churn: a longer silence is a fault. */
#define OBSERVER_QUIET_MS 3000
#define OBSERVER_TAG UINT64_MAX

struct client {
    int fd;
    bool open;          /* the response head arrived */
    int64_t close_at;   /* monotonic ms */
};

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static struct sockaddr_in server;
static char request[512];
static int epfd;

static int dial(uint64_t tag)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    if (connect(fd, (struct sockaddr *)&server, sizeof server) != 0 && errno != EINPROGRESS) {
        close(fd);
        return -1;
    }
    struct epoll_event ev = {.events = EPOLLOUT | EPOLLIN, .data.u64 = tag};
    if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* ---- The observer ------------------------------------------------------------------------- */

enum notice { NOTICE_JOIN, NOTICE_LEAVE, NOTICE_OCCUPANCY, NOTICE_RESYNC, NOTICE_ERROR,
              NOTICE_OTHER };
static const char *const notice_names[] = {"join", "leave", "occupancy", "resync", "error"};

enum field { FIELD_EVENT, FIELD_DATA, FIELD_OTHER };

/* The observer's stream: its response head, then the SSE stream, one byte at a time. */
struct observer {
    int fd;
    bool sent;                  /* its request was written */
    bool opened;                /* its head ended, with a 200: the stream began */
    char head[4096];
    size_t head_len;
    /* the SSE line being read */
    char name[8];               /* its field name; a longer one is no field counted here */
    size_t name_len;
    bool in_value, value_begins;
    enum field field;
    /* the SSE event being read: its type and the members its data names */
    char type[16];
    size_t type_len;
    int depth;                  /* of JSON arrays, outside strings */
    bool in_string, escaped;
    long members;
    /* what it was sent */
    long notices[NOTICE_OTHER], members_joined, members_left;
    int64_t opened_at, last_notice_at, ended_at;
    char error[192];            /* why its figures cannot be trusted; empty while they can */
};

static void observer_fail(struct observer *o, int64_t now, const char *fmt, ...)
{
    if (o->error[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(o->error, sizeof o->error, fmt, ap);
    va_end(ap);
    if (o->fd >= 0)
        close(o->fd); /* leaves the epoll set with it */
    o->fd = -1;
    o->ended_at = now;
}

static enum notice notice_of(const struct observer *o)
{
    for (int k = 0; k < NOTICE_OTHER; k++)
        if (o->type_len == strlen(notice_names[k]) &&
            memcmp(o->type, notice_names[k], o->type_len) == 0)
            return (enum notice)k;
    return NOTICE_OTHER;
}

/* A blank line ends an SSE event: count it, then start the next one afresh. */
static void observer_event_ends(struct observer *o, int64_t now)
{
    enum notice k = notice_of(o);
    if (k == NOTICE_ERROR) {
        observer_fail(o, now, "the gateway ended its stream with an error event after %.1f s",
                      (double)(now - o->opened_at) / 1000.0);
    } else if (k != NOTICE_OTHER) {
        o->notices[k]++;
        o->last_notice_at = now;
        if (k == NOTICE_JOIN)
            o->members_joined += o->members;
        else if (k == NOTICE_LEAVE)
            o->members_left += o->members;
    }
    o->type_len = 0;
    o->members = 0;
    o->depth = 0;
    o->in_string = o->escaped = false;
}

/* A notice's only array is its member list: a string inside an array names a member. */
static void observer_scan_data(struct observer *o, char ch)
{
    if (o->in_string) {
        if (o->escaped)
            o->escaped = false;
        else if (ch == '\\')
            o->escaped = true;
        else if (ch == '"')
            o->in_string = false;
    } else if (ch == '"') {
        o->in_string = true;
        o->members += o->depth == 1;
    } else if (ch == '[') {
        o->depth++;
    } else if (ch == ']') {
        o->depth--;
    }
}

static void observer_line_ends(struct observer *o, int64_t now)
{
    if (o->name_len == 0 && !o->in_value)
        observer_event_ends(o, now);
    o->name_len = 0;
    o->in_value = false;
}

static void observer_sse_byte(struct observer *o, char ch, int64_t now)
{
    if (ch == '\r')
        return;
    if (ch == '\n') {
        observer_line_ends(o, now);
        return;
    }
    if (!o->in_value) {
        if (ch != ':') {
            /* one byte past "event"/"data" is enough to tell a longer name apart */
            if (o->name_len < sizeof o->name)
                o->name[o->name_len] = ch;
            o->name_len++;
            return;
        }
        o->in_value = o->value_begins = true;
        o->field = o->name_len == 5 && memcmp(o->name, "event", 5) == 0 ? FIELD_EVENT
                 : o->name_len == 4 && memcmp(o->name, "data", 4) == 0  ? FIELD_DATA
                                                                        : FIELD_OTHER;
        if (o->field == FIELD_EVENT)
            o->type_len = 0;
        return;
    }
    bool first = o->value_begins;
    o->value_begins = false;
    if (first && ch == ' ')
        return;
    if (o->field == FIELD_DATA) {
        observer_scan_data(o, ch);
    } else if (o->field == FIELD_EVENT) {
        /* a type longer than the buffer matches no notice name */
        if (o->type_len < sizeof o->type)
            o->type[o->type_len] = ch;
        o->type_len++;
    }
}

/* The response head, up to its blank line; the bytes after it are the stream's. */
static size_t observer_head(struct observer *o, const char *buf, size_t len, int64_t now)
{
    size_t used = 0;
    while (used < len && !o->opened) {
        if (o->head_len == sizeof o->head - 1) {
            observer_fail(o, now, "its response head is longer than %zu bytes", sizeof o->head);
            return len;
        }
        o->head[o->head_len++] = buf[used++];
        o->head[o->head_len] = '\0';
        if (o->head_len < 4 || memcmp(o->head + o->head_len - 4, "\r\n\r\n", 4) != 0)
            continue;
        int status = 0;
        if (sscanf(o->head, "HTTP/1.%*d %d", &status) != 1 || status != 200) {
            observer_fail(o, now, "its subscribe was answered %.*s", (int)strcspn(o->head, "\r"),
                          o->head);
            return len;
        }
        o->opened = true;
        o->opened_at = o->last_notice_at = now;
    }
    return used;
}

static void observer_read(struct observer *o, int64_t now)
{
    char buf[65536];
    while (o->fd >= 0) {
        ssize_t n = read(o->fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return;
        if (n <= 0 && !o->opened) {
            observer_fail(o, now, "its connection %s before a response head",
                          n == 0 ? "was closed" : strerror(errno));
            return;
        }
        if (n <= 0) {
            observer_fail(o, now, "its stream %s after %.1f s",
                          n == 0 ? "was closed by the gateway" : strerror(errno),
                          (double)(now - o->opened_at) / 1000.0);
            return;
        }
        size_t at = observer_head(o, buf, (size_t)n, now);
        for (; at < (size_t)n && o->fd >= 0; at++)
            observer_sse_byte(o, buf[at], now);
    }
}

static void observer_ready(struct observer *o, uint32_t events, int64_t now)
{
    if (!o->sent) {
        ssize_t n = write(o->fd, request, strlen(request));
        if (n != (ssize_t)strlen(request)) {
            observer_fail(o, now, "it could not send its request: %s",
                          n < 0 ? strerror(errno) : "a short write");
            return;
        }
        o->sent = true;
        struct epoll_event in = {.events = EPOLLIN, .data.u64 = OBSERVER_TAG};
        epoll_ctl(epfd, EPOLL_CTL_MOD, o->fd, &in);
    }
    if (events & (EPOLLIN | EPOLLERR | EPOLLHUP))
        observer_read(o, now);
}

/* At the end of the run: the reason the observer's figures are not to be trusted, or NULL. */
static const char *observer_verdict(struct observer *o, int64_t end)
{
    if (o->error[0])
        return o->error;
    if (!o->sent)
        observer_fail(o, end, "it never connected");
    else if (!o->opened)
        observer_fail(o, end, "its subscribe got no response head");
    else if (o->notices[NOTICE_JOIN] == 0)
        observer_fail(o, end, "it was sent no join notice (its own join is owed to it)");
    else if (end - o->last_notice_at > OBSERVER_QUIET_MS)
        observer_fail(o, end, "its last notice came %.1f s before the end (a stalled stream)",
                      (double)(end - o->last_notice_at) / 1000.0);
    else
        o->ended_at = end;
    return o->error[0] ? o->error : NULL;
}

/* ---- The churning clients ----------------------------------------------------------------- */

/* Return value: false when the new connection could not be started (tried again later). */
static bool client_redial(struct client *cl, uint64_t tag)
{
    if (cl->fd >= 0)
        close(cl->fd);
    cl->fd = dial(tag), cl->open = false, cl->close_at = 0;
    return cl->fd >= 0;
}

/* Return value: false when the connection failed (the caller counts it and redials). */
static bool client_ready(struct client *cl, uint64_t tag, uint32_t events, long *connects,
                         int hold_ms)
{
    if (events & (EPOLLERR | EPOLLHUP))
        return false;
    if ((events & EPOLLOUT) && !cl->open && cl->close_at == 0) {
        if (write(cl->fd, request, strlen(request)) != (ssize_t)strlen(request))
            return false;
        cl->close_at = -1; /* sent: waiting for the head */
        struct epoll_event in = {.events = EPOLLIN, .data.u64 = tag};
        epoll_ctl(epfd, EPOLL_CTL_MOD, cl->fd, &in);
    }
    if (!(events & EPOLLIN))
        return true;
    static const char ok[] = "HTTP/1.1 200 ";
    char buf[4096];
    ssize_t n;
    while ((n = read(cl->fd, buf, sizeof buf)) > 0) {
        if (!cl->open) {
            /* the head comes in one segment over loopback: anything but a 200 is a failure */
            if ((size_t)n < sizeof ok - 1 || memcmp(buf, ok, sizeof ok - 1) != 0)
                return false;
            cl->open = true;
            ++*connects;
            cl->close_at = now_ms() + hold_ms / 2 + rand() % (hold_ms + 1);
        }
    }
    return n < 0 && (errno == EAGAIN || errno == EINTR);
}

/* ---- The run ------------------------------------------------------------------------------ */

static void print_result(int clients, double seconds, long connects, long failures,
                         const struct observer *o, const char *error)
{
    double listened = o->opened ? (double)(o->ended_at - o->opened_at) / 1000.0 : 0.0;
    double per_s = listened > 0 ? 1.0 / listened : 0.0;
    long notices = 0;
    for (int k = 0; k < NOTICE_ERROR; k++)
        notices += o->notices[k];
    printf("{\"clients\":%d,\"seconds\":%.1f,\"connects\":%ld,\"connects_per_s\":%.0f,"
           "\"failures\":%ld,\"observer_seconds\":%.1f,",
           clients, seconds, connects, connects / seconds, failures, listened);
    for (int k = 0; k < NOTICE_ERROR; k++)
        printf("\"%s_notices\":%ld,\"%s_notices_per_s\":%.2f,", notice_names[k], o->notices[k],
               notice_names[k], o->notices[k] * per_s);
    printf("\"presence_notices_per_s\":%.2f,\"members_joined\":%ld,\"members_joined_per_s\":%.0f,"
           "\"members_left\":%ld,\"members_left_per_s\":%.0f,\"observer_resynced\":%s,",
           notices * per_s, o->members_joined, o->members_joined * per_s, o->members_left,
           o->members_left * per_s, o->notices[NOTICE_RESYNC] ? "true" : "false");
    if (!error) {
        printf("\"observer_error\":null}\n");
        return;
    }
    printf("\"observer_error\":\"");
    for (const char *p = error; *p; p++)
        putchar(*p == '"' || *p == '\\' || (unsigned char)*p < ' ' ? '\'' : *p);
    printf("\"}\n");
}

int main(int argc, char **argv)
{
    int port = 0, clients = 5000, seconds = 10, hold_ms = 2000;
    const char *topic = "room/churn";
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--port") == 0) port = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--clients") == 0) clients = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--seconds") == 0) seconds = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--hold-ms") == 0) hold_ms = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--topic") == 0) topic = argv[i + 1];
        else {
            fprintf(stderr, "usage: lg_presence_churn --port P [--clients N] [--seconds S] "
                            "[--hold-ms MS] [--topic T]\n");
            return 2;
        }
    }
    if (port <= 0 || clients <= 0 || seconds <= 0 || hold_ms <= 0) {
        fprintf(stderr, "lg_presence_churn: --port is required; counts must be positive\n");
        return 2;
    }
    server = (struct sockaddr_in){.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &server.sin_addr);
    snprintf(request, sizeof request,
             "GET /sse?topic=%s HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n",
             topic);
    epfd = epoll_create1(EPOLL_CLOEXEC);
    srand(42);

    int64_t start = now_ms(), end = start + (int64_t)seconds * 1000, next_sweep = start;
    struct observer *o = calloc(1, sizeof *o);
    o->fd = dial(OBSERVER_TAG);
    if (o->fd < 0)
        observer_fail(o, start, "it could not connect: %s", strerror(errno));
    long connects = 0, failures = 0;
    struct client *c = calloc((size_t)clients, sizeof *c);
    for (int i = 0; i < clients; i++) {
        c[i].fd = -1;
        failures += !client_redial(&c[i], (uint64_t)i);
    }
    struct epoll_event evs[256];
    while (now_ms() < end) {
        int n = epoll_wait(epfd, evs, 256, 20);
        int64_t now = now_ms();
        for (int k = 0; k < n; k++) {
            uint64_t tag = evs[k].data.u64;
            if (tag == OBSERVER_TAG) {
                observer_ready(o, evs[k].events, now);
            } else if (!client_ready(&c[tag], tag, evs[k].events, &connects, hold_ms)) {
                failures++;
                failures += !client_redial(&c[tag], tag);
            }
        }
        if (now < next_sweep)
            continue;
        next_sweep = now + 10;
        for (int i = 0; i < clients; i++) {
            if ((c[i].open && c[i].close_at <= now) || c[i].fd < 0)
                failures += !client_redial(&c[i], (uint64_t)i);
        }
    }
    int64_t stop = now_ms();
    const char *error = observer_verdict(o, stop);
    print_result(clients, (double)(stop - start) / 1000.0, connects, failures, o, error);
    if (error) {
        fprintf(stderr, "lg_presence_churn: the observer's figures are not valid: %s\n", error);
        return 1;
    }
    return 0;
}
