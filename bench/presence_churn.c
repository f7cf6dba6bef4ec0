/*
 * presence_churn.c - lg_presence_churn: N anonymous SSE clients join and leave one presence
 * topic over and over (each holds its stream a random 0.5x..1.5x of --hold-ms, closes it and
 * reconnects at once) while one observer stream counts the join, leave and occupancy notices
 * it is sent: the coalesced event rate of bench/presence_churn.sh (issue 33).
 *
 * One epoll thread, libc only. Prints one JSON line: connects, connects_per_s, and the
 * observer's notices (join/leave/occupancy counts, members named in joins and leaves).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

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
    epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
    return fd;
}

/* The observer's stream, parsed line by line: counts of each notice and of members named. */
struct observer {
    int fd;
    char buf[1 << 16];
    size_t len;
    char event[32];
    long joins, leaves, occupancy, joined, left;
};

static long members_in(const char *data)
{
    const char *m = strstr(data, "\"members\":[");
    if (!m || m[11] == ']')
        return 0;
    long n = 1;
    for (const char *p = m + 11; *p && *p != ']'; p++)
        n += *p == ',';
    return n;
}

static void observe_line(struct observer *o, const char *line)
{
    if (strncmp(line, "event: ", 7) == 0) {
        snprintf(o->event, sizeof o->event, "%s", line + 7);
    } else if (strncmp(line, "data: ", 6) == 0) {
        if (strcmp(o->event, "join") == 0)
            o->joins++, o->joined += members_in(line);
        else if (strcmp(o->event, "leave") == 0)
            o->leaves++, o->left += members_in(line);
        else if (strcmp(o->event, "occupancy") == 0)
            o->occupancy++;
    } else if (line[0] == '\0') {
        o->event[0] = '\0';
    }
}

static void observe(struct observer *o)
{
    for (;;) {
        ssize_t n = read(o->fd, o->buf + o->len, sizeof o->buf - 1 - o->len);
        if (n <= 0)
            return;
        o->len += (size_t)n;
        o->buf[o->len] = '\0';
        char *start = o->buf, *nl;
        while ((nl = strchr(start, '\n'))) {
            *nl = '\0';
            observe_line(o, start);
            start = nl + 1;
        }
        o->len -= (size_t)(start - o->buf);
        memmove(o->buf, start, o->len);
    }
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

    struct observer *o = calloc(1, sizeof *o);
    o->fd = dial(UINT64_MAX);
    struct client *c = calloc((size_t)clients, sizeof *c);
    for (int i = 0; i < clients; i++)
        c[i].fd = dial((uint64_t)i);
    long connects = 0, failures = 0;
    int64_t start = now_ms(), end = start + (int64_t)seconds * 1000, next_sweep = start;
    struct epoll_event evs[256];
    bool observer_sent = false;
    while (now_ms() < end) {
        int n = epoll_wait(epfd, evs, 256, 20);
        for (int k = 0; k < n; k++) {
            uint64_t tag = evs[k].data.u64;
            if (tag == UINT64_MAX) {
                if (!observer_sent && (evs[k].events & EPOLLOUT)) {
                    observer_sent = write(o->fd, request, strlen(request)) > 0;
                    struct epoll_event in = {.events = EPOLLIN, .data.u64 = tag};
                    epoll_ctl(epfd, EPOLL_CTL_MOD, o->fd, &in);
                }
                if (evs[k].events & EPOLLIN)
                    observe(o);
                continue;
            }
            struct client *cl = &c[tag];
            if (evs[k].events & (EPOLLERR | EPOLLHUP)) {
                failures++;
                close(cl->fd);
                cl->fd = dial(tag), cl->open = false, cl->close_at = 0;
                continue;
            }
            if ((evs[k].events & EPOLLOUT) && !cl->open && cl->close_at == 0) {
                if (write(cl->fd, request, strlen(request)) < 0) {
                    failures++;
                    continue;
                }
                cl->close_at = -1; /* sent: waiting for the head */
                struct epoll_event in = {.events = EPOLLIN, .data.u64 = tag};
                epoll_ctl(epfd, EPOLL_CTL_MOD, cl->fd, &in);
            }
            if (evs[k].events & EPOLLIN) {
                char buf[4096];
                while (read(cl->fd, buf, sizeof buf) > 0) {
                    if (!cl->open) {
                        cl->open = true;
                        connects++;
                        cl->close_at = now_ms() + hold_ms / 2 + rand() % (hold_ms + 1);
                    }
                }
            }
        }
        int64_t now = now_ms();
        if (now < next_sweep)
            continue;
        next_sweep = now + 10;
        for (int i = 0; i < clients; i++) {
            if (c[i].open && c[i].close_at <= now) {
                close(c[i].fd);
                c[i].fd = dial((uint64_t)i), c[i].open = false, c[i].close_at = 0;
            }
        }
    }
    double s = (double)(now_ms() - start) / 1000.0;
    printf("{\"clients\":%d,\"seconds\":%.1f,\"connects\":%ld,\"connects_per_s\":%.0f,"
           "\"failures\":%ld,\"join_notices\":%ld,\"leave_notices\":%ld,"
           "\"occupancy_notices\":%ld,\"presence_notices_per_s\":%.2f,\"members_joined\":%ld,"
           "\"members_left\":%ld}\n",
           clients, s, connects, connects / s, failures, o->joins, o->leaves, o->occupancy,
           (o->joins + o->leaves + o->occupancy) / s, o->joined, o->left);
    return 0;
}
