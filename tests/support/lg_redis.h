/*
 * lg_redis.h - a real redis-server for the tests that need one (the Redis store's contract
 * suite, the scale-out tests): started on a free loopback port in a private temp directory,
 * restarted on the same port (the outage case), stopped and removed. Also a replica of another
 * (--replicaof) and a redis-sentinel monitoring a master (the failover tests).
 *
 * Owns:    the redis-server (or redis-sentinel) process and its directory.
 * Frees:   lg_redis_stop() kills the process and removes the directory.
 * Threads: the test's thread.
 * Bounds:  every wait is bounded (5 s for the process to answer PING, 2 s per command).
 */
#ifndef LG_REDIS_TEST_H
#define LG_REDIS_TEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct lg_redis {
    pid_t pid;           /* 0 = not running */
    uint16_t port;
    bool persist;        /* appendonly + fsync always: acknowledged writes survive a restart */
    uint16_t replica_of; /* the master's port (--replicaof), 0 = none */
    bool sentinel;       /* a redis-sentinel (its config is dir/sentinel.conf) */
    char dir[128];
    char url[64];        /* redis://127.0.0.1:PORT */
};

/* Start redis-server on a free port. Return value: 0, or -1 (printed why). */
int lg_redis_start(struct lg_redis *r, bool persist);
/* Start a replica of master on a free port (not persisted). Return value: 0 or -1. */
int lg_redis_start_replica(struct lg_redis *r, const struct lg_redis *master);
/* Start a redis-sentinel on a free port monitoring master as name, quorum 2, with short
 * timeouts (down after 1 s, failover timeout 5 s) so a failover takes seconds.
 * Return value: 0 or -1. */
int lg_redis_start_sentinel(struct lg_redis *r, const struct lg_redis *master, const char *name);
/* Kill it (SIGKILL when hard, else SIGTERM) and wait; the directory stays for a restart. */
void lg_redis_halt(struct lg_redis *r, bool hard);
/* Start it again on the same port and directory. Return value: 0 or -1. */
int lg_redis_restart(struct lg_redis *r);
/* Halt it and remove its directory. */
void lg_redis_stop(struct lg_redis *r);
/* Run one command (printf-style, as redisCommand) and return its integer answer, or the
 * length of an array answer, or -1 on error (printed). */
long long lg_redis_int(const struct lg_redis *r, const char *fmt, ...);
/* Whether a write on r reaches replicas of it now: a probe key written, then WAIT replicas
 * (at most 100 ms) on the same connection. */
bool lg_redis_replicated(const struct lg_redis *r, int replicas);
/* Run one command and copy the first string of its answer (a string or status, or an array's
 * first element: ROLE's "master") into out. Return value: 0, or -1 (printed). */
int lg_redis_str(const struct lg_redis *r, char *out, size_t cap, const char *fmt, ...);

#endif
