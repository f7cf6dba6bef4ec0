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

/* The child: exec what r is. Returns only if every exec failed. */
static void exec_redis(const struct lg_redis *r)
{
    char port[8], master[8], conf[160];
    snprintf(port, sizeof port, "%u", r->port);
    snprintf(master, sizeof master, "%u", r->replica_of);
    if (r->sentinel) {
        snprintf(conf, sizeof conf, "%s/sentinel.conf", r->dir);
        execlp("redis-sentinel", "redis-sentinel", conf, (char *)NULL);
        /* the same binary as redis-server, where Debian's redis-sentinel is not installed */
        execlp("redis-server", "redis-server", conf, "--sentinel", (char *)NULL);
        return;
    }
    const char *argv[32] = {"redis-server", "--port", port, "--bind", "127.0.0.1", "--dir",
                            r->dir, "--save", "", "--protected-mode", "no",
                            /* a replica's first sync without the default 5 s wait */
                            "--repl-diskless-sync-delay", "0"};
    int n = 13;
    if (r->persist)
        argv[n++] = "--appendonly", argv[n++] = "yes", argv[n++] = "--appendfsync",
        argv[n++] = "always";
    else
        argv[n++] = "--appendonly", argv[n++] = "no";
    if (r->replica_of)
        argv[n++] = "--replicaof", argv[n++] = "127.0.0.1", argv[n++] = master;
    argv[n] = NULL;
    execvp("redis-server", (char *const *)argv);
}

static int spawn(struct lg_redis *r)
{
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
        exec_redis(r);
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

/* Make r's directory; then config (when set) writes what the process reads at start. */
static int start_as(struct lg_redis *r, int (*config)(struct lg_redis *r, const void *arg),
                    const void *arg)
{
    signal(SIGPIPE, SIG_IGN); /* hiredis writes with write(): a closed server must not kill us */
    snprintf(r->dir, sizeof r->dir, "/tmp/lg-redis-XXXXXX");
    if (!mkdtemp(r->dir)) {
        fprintf(stderr, "lg_redis: mkdtemp: %s\n", strerror(errno));
        return -1;
    }
    for (int attempt = 0; attempt < 5; attempt++) {
        r->port = free_port();
        snprintf(r->url, sizeof r->url, "redis://127.0.0.1:%u", r->port);
        if (r->port && (!config || config(r, arg) == 0) && spawn(r) == 0)
            return 0;
    }
    return -1;
}

int lg_redis_start(struct lg_redis *r, bool persist)
{
    memset(r, 0, sizeof *r);
    r->persist = persist;
    return start_as(r, NULL, NULL);
}

int lg_redis_start_replica(struct lg_redis *r, const struct lg_redis *master)
{
    memset(r, 0, sizeof *r);
    r->replica_of = master->port;
    return start_as(r, NULL, NULL);
}

struct sentinel_of {
    const struct lg_redis *master;
    const char *name;
};

/* Sentinel rewrites its config file as it learns: it must be its own, writable. */
static int write_sentinel_conf(struct lg_redis *r, const void *arg)
{
    const struct sentinel_of *m = arg;
    char path[160];
    snprintf(path, sizeof path, "%s/sentinel.conf", r->dir);
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "lg_redis: %s: %s\n", path, strerror(errno));
        return -1;
    }
    fprintf(f, "port %u\nbind 127.0.0.1\nprotected-mode no\ndir %s\n"
            "sentinel monitor %s 127.0.0.1 %u 2\n"
            "sentinel down-after-milliseconds %s 1000\n"
            "sentinel failover-timeout %s 5000\n"
            "sentinel parallel-syncs %s 1\n",
            r->port, r->dir, m->name, m->master->port, m->name, m->name, m->name);
    return fclose(f) == 0 ? 0 : -1;
}

int lg_redis_start_sentinel(struct lg_redis *r, const struct lg_redis *master, const char *name)
{
    memset(r, 0, sizeof *r);
    r->sentinel = true;
    struct sentinel_of m = {.master = master, .name = name};
    return start_as(r, write_sentinel_conf, &m);
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

/* Run one command on r. Return value: its answer (freeReplyObject it), or NULL. */
static redisReply *command(const struct lg_redis *r, const char *fmt, va_list ap)
{
    struct timeval tv = {.tv_sec = 2};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", r->port, tv);
    redisReply *reply = NULL;
    if (c && !c->err && redisSetTimeout(c, tv) == REDIS_OK)
        reply = redisvCommand(c, fmt, ap);
    if (c)
        redisFree(c);
    return reply;
}

bool lg_redis_replicated(const struct lg_redis *r, int replicas)
{
    struct timeval tv = {.tv_sec = 2};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", r->port, tv);
    redisReply *set = NULL, *wait = NULL;
    if (c && !c->err && redisSetTimeout(c, tv) == REDIS_OK &&
        (set = redisCommand(c, "SET lg_redis:probe 1")) != NULL)
        wait = redisCommand(c, "WAIT %d 100", replicas);
    bool ok = wait && wait->type == REDIS_REPLY_INTEGER && wait->integer >= replicas;
    freeReplyObject(set);
    freeReplyObject(wait);
    if (c)
        redisFree(c);
    return ok;
}

int lg_redis_str(const struct lg_redis *r, char *out, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *reply = command(r, fmt, ap);
    va_end(ap);
    const redisReply *first = reply && reply->type == REDIS_REPLY_ARRAY && reply->elements
                                  ? reply->element[0] : reply;
    int rc = -1;
    if (first && (first->type == REDIS_REPLY_STRING || first->type == REDIS_REPLY_STATUS)) {
        snprintf(out, cap, "%s", first->str);
        rc = 0;
    } else {
        fprintf(stderr, "lg_redis: %s: %s\n", fmt, first && first->str ? first->str
                                                                     : "no string answer");
    }
    freeReplyObject(reply);
    return rc;
}

long long lg_redis_int(const struct lg_redis *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *reply = command(r, fmt, ap);
    va_end(ap);
    long long v = -1;
    if (reply && reply->type == REDIS_REPLY_INTEGER)
        v = reply->integer;
    else if (reply && reply->type == REDIS_REPLY_ARRAY)
        v = (long long)reply->elements;
    else if (reply && reply->type == REDIS_REPLY_STRING)
        v = strtoll(reply->str, NULL, 10);
    else
        fprintf(stderr, "lg_redis: %s: %s\n", fmt, reply && reply->str ? reply->str : "no answer");
    freeReplyObject(reply);
    return v;
}
