/*
 * lg_redis.h - a real redis-server for the tests that need one (the Redis store's contract
 * suite, the scale-out tests): started on a free loopback port in a private temp directory,
 * restarted on the same port (the outage case), stopped and removed.
 *
 * Owns:    the redis-server process and its directory.
 * Frees:   lg_redis_stop() kills the process and removes the directory.
 * Threads: the test's thread.
 * Bounds:  every wait is bounded (5 s for redis-server to answer PING).
 */
#ifndef LG_REDIS_TEST_H
#define LG_REDIS_TEST_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct lg_redis {
    pid_t pid;           /* 0 = not running */
    uint16_t port;
    bool persist;        /* appendonly + fsync always: acknowledged writes survive a restart */
    char dir[128];
    char url[64];        /* redis://127.0.0.1:PORT */
};

/* Start redis-server on a free port. Return value: 0, or -1 (printed why). */
int lg_redis_start(struct lg_redis *r, bool persist);
/* Kill it (SIGKILL when hard, else SIGTERM) and wait; the directory stays for a restart. */
void lg_redis_halt(struct lg_redis *r, bool hard);
/* Start it again on the same port and directory. Return value: 0 or -1. */
int lg_redis_restart(struct lg_redis *r);
/* Halt it and remove its directory. */
void lg_redis_stop(struct lg_redis *r);
/* Run one command (printf-style, as redisCommand) and return its integer answer, or the
 * length of an array answer, or -1 on error (printed). */
long long lg_redis_int(const struct lg_redis *r, const char *fmt, ...);

#endif
