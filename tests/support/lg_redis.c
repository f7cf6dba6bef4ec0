/* lg_redis.c - see lg_redis.h. */
#include "lg_redis.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

static uint16_t free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    uint16_t port = 0;
    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    if (fd >= 0)
        close(fd);
    return port;
}

static bool answers_ping(const struct lg_redis *r)
{
    struct timeval tv = {.tv_sec = 1};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", r->port, tv);
    bool ok = false;
    if (c && !c->err) {
        redisReply *reply = redisCommand(c, "PING");
        ok = reply && reply->type == REDIS_REPLY_STATUS && strcmp(reply->str, "PONG") == 0;
        freeReplyObject(reply);
    }
    if (c)
        redisFree(c);
    return ok;
}

static int spawn(struct lg_redis *r)
{
    char port[8];
    snprintf(port, sizeof port, "%u", r->port);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* a test that crashes takes its Redis with it */
        int null = open("/dev/null", 1);
        if (null >= 0) {
            dup2(null, 1);
            close(null);
        }
        if (r->persist)
            execlp("redis-server", "redis-server", "--port", port, "--bind", "127.0.0.1",
                   "--dir", r->dir, "--save", "", "--appendonly", "yes", "--appendfsync",
                   "always", "--protected-mode", "no", (char *)NULL);
        else
            execlp("redis-server", "redis-server", "--port", port, "--bind", "127.0.0.1",
                   "--dir", r->dir, "--save", "", "--appendonly", "no", "--protected-mode", "no",
                   (char *)NULL);
        _exit(127);
    }
    r->pid = pid;
    for (int i = 0; i < 500; i++) {
        if (answers_ping(r))
            return 0;
        int status;
        if (waitpid(pid, &status, WNOHANG) == pid) {
            fprintf(stderr, "lg_redis: redis-server on port %u exited at start\n", r->port);
            r->pid = 0;
            return -1;
        }
        nanosleep(&(struct timespec){.tv_nsec = 10 * 1000 * 1000}, NULL);
    }
    fprintf(stderr, "lg_redis: redis-server on port %u did not answer PING in 5 s\n", r->port);
    return -1;
}

int lg_redis_start(struct lg_redis *r, bool persist)
{
    signal(SIGPIPE, SIG_IGN); /* hiredis writes with write(): a closed server must not kill us */
    memset(r, 0, sizeof *r);
    r->persist = persist;
    snprintf(r->dir, sizeof r->dir, "/tmp/lg-redis-XXXXXX");
    if (!mkdtemp(r->dir)) {
        fprintf(stderr, "lg_redis: mkdtemp: %s\n", strerror(errno));
        return -1;
    }
    for (int attempt = 0; attempt < 5; attempt++) {
        r->port = free_port();
        snprintf(r->url, sizeof r->url, "redis://127.0.0.1:%u", r->port);
        if (r->port && spawn(r) == 0)
            return 0;
    }
    return -1;
}

void lg_redis_halt(struct lg_redis *r, bool hard)
{
    if (r->pid <= 0)
        return;
    kill(r->pid, hard ? SIGKILL : SIGTERM);
    waitpid(r->pid, NULL, 0);
    r->pid = 0;
}

int lg_redis_restart(struct lg_redis *r)
{
    lg_redis_halt(r, false);
    for (int i = 0; i < 100; i++) { /* the port may linger a moment */
        if (spawn(r) == 0)
            return 0;
        nanosleep(&(struct timespec){.tv_nsec = 20 * 1000 * 1000}, NULL);
    }
    return -1;
}

void lg_redis_stop(struct lg_redis *r)
{
    lg_redis_halt(r, true);
    if (r->dir[0]) {
        char cmd[200];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", r->dir);
        if (system(cmd) != 0)
            fprintf(stderr, "lg_redis: could not remove %s\n", r->dir);
        r->dir[0] = '\0';
    }
}

long long lg_redis_int(const struct lg_redis *r, const char *fmt, ...)
{
    struct timeval tv = {.tv_sec = 2};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", r->port, tv);
    long long v = -1;
    if (c && !c->err) {
        va_list ap;
        va_start(ap, fmt);
        redisReply *reply = redisvCommand(c, fmt, ap);
        va_end(ap);
        if (reply && reply->type == REDIS_REPLY_INTEGER)
            v = reply->integer;
        else if (reply && reply->type == REDIS_REPLY_ARRAY)
            v = (long long)reply->elements;
        else if (reply && reply->type == REDIS_REPLY_STRING)
            v = strtoll(reply->str, NULL, 10);
        else
            fprintf(stderr, "lg_redis: %s: %s\n", fmt,
                    reply && reply->str ? reply->str : "no answer");
        freeReplyObject(reply);
    }
    if (c)
        redisFree(c);
    return v;
}
