/*
 * lg_server_socket.c - a look at the server's end of a test's connection: the server's socket
 * is duplicated into the test (pidfd_getfd) and asked what it sent, so a test can assert how
 * the server wrote (in how many segments, whether anything is held back), not only what.
 */
#include <dirent.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lg_test.h"

static bool same_address(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
    const struct sockaddr_in *x = (const void *)a, *y = (const void *)b;
    return a->ss_family == AF_INET && b->ss_family == AF_INET && x->sin_port == y->sin_port &&
           x->sin_addr.s_addr == y->sin_addr.s_addr;
}

/* A duplicate of s's socket whose peer is client_fd, or -1. */
static int server_end_of(const struct lg_server *s, int client_fd)
{
    struct sockaddr_storage ours;
    socklen_t len = sizeof ours;
    if (getsockname(client_fd, (struct sockaddr *)&ours, &len) != 0)
        return -1;
    int pidfd = (int)syscall(SYS_pidfd_open, s->pid, 0);
    if (pidfd < 0)
        return -1;
    char dir_path[64];
    snprintf(dir_path, sizeof dir_path, "/proc/%d/fd", (int)s->pid);
    DIR *dir = opendir(dir_path);
    int found = -1;
    for (struct dirent *e; dir && found < 0 && (e = readdir(dir));) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        int fd = (int)syscall(SYS_pidfd_getfd, pidfd, atoi(e->d_name), 0);
        if (fd < 0)
            continue;
        struct sockaddr_storage peer;
        len = sizeof peer;
        if (getpeername(fd, (struct sockaddr *)&peer, &len) == 0 && same_address(&peer, &ours))
            found = fd;
        else
            close(fd);
    }
    if (dir)
        closedir(dir);
    close(pidfd);
    return found;
}

int lg_server_socket_state(const struct lg_server *s, int client_fd,
                           struct lg_server_socket_state *out)
{
    int fd = server_end_of(s, client_fd);
    if (fd < 0)
        return -1;
    int cork = 0;
    struct tcp_info info;
    socklen_t cork_len = sizeof cork, info_len = sizeof info;
    memset(&info, 0, sizeof info);
    int rc = getsockopt(fd, IPPROTO_TCP, TCP_CORK, &cork, &cork_len) == 0 &&
                     getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &info_len) == 0 &&
                     info_len >= offsetof(struct tcp_info, tcpi_data_segs_out) + 4
                 ? 0
                 : -1;
    close(fd);
    out->corked = cork != 0;
    out->data_segments_out = info.tcpi_data_segs_out;
    return rc;
}
