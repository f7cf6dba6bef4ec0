/*
 * test_overload.c - overload pacing end to end (issue 9): a publisher faster than fan-out is
 * held, then refused with 503 + Retry-After once limits.publish_wait_ms passes, nothing
 * published; every event it was told was accepted reaches every healthy subscriber exactly
 * once, in order; a subscriber whose socket is full keeps its slow-consumer policy and does
 * not pace the publisher.
 *
 * "The worker is behind" is made deterministic by freezing the subscriber's worker thread with
 * ptrace (PTRACE_SEIZE + PTRACE_INTERRUPT on the thread named lg-worker-N stops that thread
 * alone; PTRACE_DETACH lets it go on). Frozen, it takes nothing from its inbox, so once the
 * inbox holds limits.worker_inbox_events events the next publish must wait. The server has two
 * workers: each serves a control-port daemon on its loop, and the publisher connects after the
 * freeze, so the other worker's daemon takes it.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "lg_test.h"

#include "check_main.h"

#define READ_TIMEOUT_MS 20000

/* ---- Freezing the worker thread ------------------------------------------------------------ */

static pid_t worker_tid(pid_t pid, int worker)
{
    char name[16];
    snprintf(name, sizeof name, "lg-worker-%d\n", worker);
    char dir[64];
    snprintf(dir, sizeof dir, "/proc/%d/task", (int)pid);
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    pid_t tid = -1;
    struct dirent *e;
    while (tid < 0 && (e = readdir(d))) {
        char path[384], comm[32] = "";
        snprintf(path, sizeof path, "%s/%s/comm", dir, e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        if (fgets(comm, sizeof comm, f) && strcmp(comm, name) == 0)
            tid = (pid_t)atoi(e->d_name);
        fclose(f);
    }
    closedir(d);
    ck_assert_msg(tid > 0, "no thread %.*s in %s", (int)strlen(name) - 1, name, dir);
    return tid;
}

/* The worker serving the one connection open (livegate_worker_connections, set each tick). */
static int busy_worker(const struct lg_server *s)
{
    int64_t deadline = lg_now_ms() + 5000;
    while (lg_now_ms() < deadline) {
        struct lg_http_response r;
        ck_assert_int_eq(lg_http_request(s->control_port, "GET", "/metrics", NULL, NULL, 0, &r,
                                         5000), 0);
        int found = -1;
        for (int w = 0; w < 2 && found < 0; w++) {
            char series[64];
            snprintf(series, sizeof series, "livegate_worker_connections{worker=\"%d\"} 1\n", w);
            if (strstr(r.body, series))
                found = w;
        }
        lg_http_response_free(&r);
        if (found >= 0)
            return found;
        struct timespec pause = {.tv_nsec = 100 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
    ck_abort_msg("no worker reported the subscriber's connection within 5 s");
    return -1;
}

static bool is_wait(long nr)
{
    return nr == SYS_epoll_wait || nr == SYS_epoll_pwait || nr == SYS_epoll_pwait2;
}

/*
 * Let the frozen worker run to the start of its next epoll_wait (its loop's, or its control
 * daemon's), then stop it again: one turn of its loop at most. Stopped there it holds nothing
 * the other threads need; under valgrind, whose threads take turns on one lock, a worker
 * stopped at any other system call would hold up the whole process until the next step.
 */
static void step_worker(pid_t tid)
{
    for (int stops = 0; stops < 100000; stops++) {
        ck_assert_msg(ptrace(PTRACE_SYSCALL, tid, NULL, NULL) == 0, "PTRACE_SYSCALL: %s",
                      strerror(errno));
        int status;
        ck_assert_int_eq(waitpid(tid, &status, __WALL), tid);
        ck_assert(WIFSTOPPED(status));
        struct __ptrace_syscall_info info;
        if (ptrace(PTRACE_GET_SYSCALL_INFO, tid, (void *)sizeof info, &info) > 0 &&
            info.op == PTRACE_SYSCALL_INFO_ENTRY && is_wait((long)info.entry.nr))
            return;
    }
    ck_abort_msg("the worker made 100000 system calls without an epoll_wait");
}

/* Stop the worker at the start of its next epoll_wait (step_worker()), never at an arbitrary
 * point: under valgrind a thread stopped inside valgrind's own lock holds up every thread. */
static pid_t freeze_worker(const struct lg_server *s, int worker)
{
    pid_t tid = worker_tid(s->pid, worker);
    ck_assert_msg(ptrace(PTRACE_SEIZE, tid, NULL, (void *)PTRACE_O_TRACESYSGOOD) == 0,
                  "PTRACE_SEIZE: %s", strerror(errno));
    ck_assert_msg(ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) == 0, "PTRACE_INTERRUPT: %s",
                  strerror(errno));
    int status;
    ck_assert_int_eq(waitpid(tid, &status, __WALL), tid);
    ck_assert(WIFSTOPPED(status));
    step_worker(tid);
    return tid;
}

static void thaw_worker(pid_t tid)
{
    ck_assert_msg(ptrace(PTRACE_DETACH, tid, NULL, NULL) == 0, "PTRACE_DETACH: %s",
                  strerror(errno));
}

/* ---- Publishing ------------------------------------------------------------------------------ */

struct answer {
    int status;
    uint64_t seq;
    char error[64];
    char retry_after[16];
    int64_t took_ms;
};

/* One POST /v1/topics/{topic}/events on the kept-alive connection k. */
static void publish(struct lg_stall_ka *k, const char *topic, const char *data, struct answer *a)
{
    char path[256];
    snprintf(path, sizeof path, "/v1/topics/%s/events", topic);
    struct lg_http_response r;
    int64_t t0 = lg_now_ms();
    ck_assert_int_eq(lg_stall_ka_request(k, "POST", path, NULL, data, strlen(data), &r, 15000),
                     0);
    memset(a, 0, sizeof *a);
    a->took_ms = lg_now_ms() - t0;
    a->status = r.status;
    json_t *root = json_loadb(r.body, r.body_len, 0, NULL);
    ck_assert_msg(root != NULL, "answer %d is not JSON: %s", r.status, r.body);
    if (r.status == 201)
        a->seq = (uint64_t)json_integer_value(json_object_get(root, "seq"));
    const char *err = json_string_value(json_object_get(root, "error"));
    snprintf(a->error, sizeof a->error, "%s", err ? err : "");
    if (!lg_http_header(&r, "Retry-After", a->retry_after, sizeof a->retry_after))
        a->retry_after[0] = '\0';
    json_decref(root);
    lg_http_response_free(&r);
}

struct async_publish {
    pthread_t thread;
    uint16_t port;
    const char *topic, *data;
    struct answer answer;
};

static void *async_publish_main(void *arg)
{
    struct async_publish *p = arg;
    struct lg_stall_ka k;
    lg_stall_ka_init(&k, p->port);
    publish(&k, p->topic, p->data, &p->answer);
    lg_stall_ka_close(&k);
    return NULL;
}

/* ---- Reading ------------------------------------------------------------------------------- */

/* The next `message` event on c must carry seq `want` (no gap, duplicate or reorder). */
static void expect_seq(struct lg_sse_client *c, uint64_t want)
{
    struct lg_sse_event ev;
    int rc = lg_sse_next(c, &ev, READ_TIMEOUT_MS);
    ck_assert_msg(rc == 1, "no event seq %" PRIu64 " (%s)", want, rc == 0 ? "timeout" : "closed");
    ck_assert_msg(strcmp(ev.event, "message") == 0, "got \"%s\" instead of seq %" PRIu64 ": %s",
                  ev.event, want, ev.data);
    ck_assert_uint_eq(lg_seq_of(ev.id), want);
    lg_sse_event_free(&ev);
}

static void open_stream(struct lg_sse_client *c, const struct lg_server *s, const char *topic)
{
    char path[128];
    snprintf(path, sizeof path, "/sse?topic=%s", topic);
    ck_assert_int_eq(lg_sse_open(c, s->public_port, path, NULL), 0);
    ck_assert_int_eq(c->status, 200);
}

/* Start a server whose worker inboxes hold 2 events (config NULL: s runs already), subscribe
 * to topic, freeze the subscriber's worker, connect k and publish seq 1 and 2 on it (both
 * accepted: the inbox is now full). Return value: the frozen worker's thread id. */
static pid_t fill_frozen_inbox(struct lg_server *s, const char *config, const char *topic,
                               struct lg_sse_client *sub, struct lg_stall_ka *k)
{
    if (config)
        lg_server_must_start(s, config);
    open_stream(sub, s, topic);
    ck_assert(lg_wait_stat(s->control_port, "clients_sse", 1, 5000));
    pid_t tid = freeze_worker(s, busy_worker(s));
    lg_stall_ka_init(k, s->control_port);
    struct answer a;
    publish(k, topic, "one", &a);
    ck_assert_int_eq(a.status, 201);
    publish(k, topic, "two", &a);
    ck_assert_int_eq(a.status, 201);
    ck_assert_uint_eq(a.seq, 2);
    return tid;
}

/* ---- 1. Held, then refused after the wait ---------------------------------------------------- */

#define FROZEN_CONFIG                                                                              \
    "{\"workers\":2,\"limits\":{\"worker_inbox_events\":2,\"publish_wait_ms\":300}}"

START_TEST(test_held_then_refused_after_the_wait)
{
    struct lg_server s;
    struct lg_sse_client sub;
    struct lg_stall_ka k;
    pid_t tid = fill_frozen_inbox(&s, FROZEN_CONFIG, "frozen", &sub, &k);
    struct answer a;

    /* The inbox holds 2 unprocessed events: the third publish waits 300 ms, then is refused. */
    publish(&k, "frozen", "three", &a);
    ck_assert_int_eq(a.status, 503);
    ck_assert_str_eq(a.error, "overloaded");
    ck_assert_str_eq(a.retry_after, "1");
    ck_assert_msg(a.took_ms >= 290, "refused after %" PRId64 " ms, before the 300 ms wait",
                  a.took_ms);
    ck_assert_int_eq(lg_server_stat(&s, "publishes_held"), 1);
    ck_assert_int_eq(lg_server_stat(&s, "publishes_refused_overload"), 1);
    ck_assert_int_ge(lg_server_stat(&s, "publish_wait_ms_total"), 290);
    thaw_worker(tid);

    /* What was accepted arrives; what was refused was never published: the next is seq 3. */
    expect_seq(&sub, 1);
    expect_seq(&sub, 2);
    publish(&k, "frozen", "four", &a);
    ck_assert_int_eq(a.status, 201);
    ck_assert_uint_eq(a.seq, 3);
    expect_seq(&sub, 3);
    lg_sse_expect_no_event(&sub, 200);
    ck_assert(lg_server_wait_log(&s, "publish refused: subscribers' workers stayed behind", 2000));

    lg_stall_ka_close(&k);
    lg_sse_close(&sub);
    lg_server_must_stop(&s);
}
END_TEST

/* limits.publish_wait_ms changes on SIGHUP: a publish held after the reload waits the new
 * time (test_reload.c has the other live limits). */
START_TEST(test_publish_wait_changes_on_reload)
{
    char path[64];
    snprintf(path, sizeof path, "/tmp/lg-overload-%d.json", (int)getpid());
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(FROZEN_CONFIG, f);
    fclose(f);
    struct lg_server s;
    const char *args[] = {"--config", path, NULL};
    ck_assert_msg(lg_server_start(&s, NULL, args) == 0, "server did not start");
    f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("{\"workers\":2,\"limits\":{\"worker_inbox_events\":2,\"publish_wait_ms\":1200}}", f);
    fclose(f);
    ck_assert_int_eq(kill(s.pid, SIGHUP), 0);
    ck_assert(lg_metric_wait(s.control_port, "livegate_config_reloads_total{result=\"applied\"}",
                             1, 5000));
    ck_assert(lg_server_wait_log(&s, "reload applied: limits.publish_wait_ms", 5000));

    struct lg_sse_client sub;
    struct lg_stall_ka k;
    pid_t tid = fill_frozen_inbox(&s, NULL, "frozen", &sub, &k);
    struct answer a;
    publish(&k, "frozen", "three", &a);
    ck_assert_int_eq(a.status, 503);
    ck_assert_str_eq(a.error, "overloaded");
    ck_assert_msg(a.took_ms >= 1190, "refused after %" PRId64 " ms, before the 1200 ms wait",
                  a.took_ms);
    thaw_worker(tid);
    expect_seq(&sub, 1);
    expect_seq(&sub, 2);
    lg_sse_expect_no_event(&sub, 200);
    lg_stall_ka_close(&k);
    lg_sse_close(&sub);
    lg_server_must_stop(&s);
    unlink(path);
}
END_TEST

/* ---- 2. Held, then accepted when the worker catches up --------------------------------------- */

START_TEST(test_held_publish_is_accepted_when_the_worker_catches_up)
{
    struct lg_server s;
    struct lg_sse_client sub;
    struct lg_stall_ka k;
    pid_t tid = fill_frozen_inbox(&s,
                                  "{\"workers\":2,\"limits\":{\"worker_inbox_events\":2,"
                                  "\"publish_wait_ms\":20000}}",
                                  "catchup", &sub, &k);

    struct async_publish third = {.port = s.control_port, .topic = "catchup", .data = "three"};
    ck_assert_int_eq(pthread_create(&third.thread, NULL, async_publish_main, &third), 0);
    ck_assert(lg_wait_stat(s.control_port, "publishes_held", 1, 5000));
    int64_t thawed = lg_now_ms();
    thaw_worker(tid);
    pthread_join(third.thread, NULL);
    ck_assert_int_eq(third.answer.status, 201);
    ck_assert_uint_eq(third.answer.seq, 3);
    ck_assert_msg(lg_now_ms() - thawed < 5000,
                  "the held publish took %" PRId64 " ms after the thaw", lg_now_ms() - thawed);
    ck_assert_int_eq(lg_server_stat(&s, "publishes_refused_overload"), 0);

    for (uint64_t seq = 1; seq <= 3; seq++)
        expect_seq(&sub, seq);
    lg_sse_expect_no_event(&sub, 200);
    lg_stall_ka_close(&k);
    lg_sse_close(&sub);
    lg_server_must_stop(&s);
}
END_TEST

/* ---- 3. A batch faster than fan-out is paced, and nobody loses anything ----------------------- */

#define BATCH_N 1000
#define BATCH_SUBS 20

START_TEST(test_paced_batch_reaches_every_subscriber)
{
    struct lg_server s;
    lg_server_must_start(&s, "{\"workers\":1,\"limits\":{\"worker_inbox_events\":2,"
                     "\"publish_wait_ms\":20000}}");
    struct lg_sse_client subs[BATCH_SUBS];
    for (int i = 0; i < BATCH_SUBS; i++)
        open_stream(&subs[i], &s, "paced");
    ck_assert(lg_wait_stat(s.control_port, "clients_sse", BATCH_SUBS, 5000));

    /* 1000 events of ~70 bytes fit in each subscriber's socket buffers, so every subscriber
     * keeps up even though this test reads them only after the batch was answered. */
    size_t cap = BATCH_N * 40, len = 0;
    char *body = malloc(cap);
    ck_assert_ptr_nonnull(body);
    for (int i = 1; i <= BATCH_N; i++)
        len += (size_t)snprintf(body + len, cap - len, "{\"topic\":\"paced\",\"data\":\"e%d\"}\n",
                                i);
    struct lg_http_response r; /* a few ms here; about 40 s under valgrind (500 waits) */
    ck_assert_int_eq(lg_http_request(s.control_port, "POST", "/v1/publish",
                                     "Content-Type: application/x-ndjson\r\n", body, len, &r,
                                     110000),
                     0);
    free(body);
    ck_assert_msg(r.status == 200, "batch answered %d: %.300s", r.status, r.body);
    json_t *root = json_loadb(r.body, r.body_len, 0, NULL);
    ck_assert_int_eq(json_integer_value(json_object_get(root, "accepted")), BATCH_N);
    json_decref(root);
    lg_http_response_free(&r);
    /* The inbox holds 2 events and the worker writes 20 sockets per batch: the batch must
     * have waited for room. */
    ck_assert_int_gt(lg_server_stat(&s, "publishes_held"), 0);

    for (int i = 0; i < BATCH_SUBS; i++) {
        for (uint64_t seq = 1; seq <= BATCH_N; seq++)
            expect_seq(&subs[i], seq);
        lg_sse_close(&subs[i]);
    }
    ck_assert_int_eq(lg_server_stat(&s, "gaps_sent"), 0);
    ck_assert_int_eq(lg_server_stat(&s, "events_dropped_overflow"), 0);
    ck_assert_int_eq(lg_server_stat(&s, "publishes_refused"), 0);
    lg_server_must_stop(&s);
}
END_TEST

/* ---- 4. A batch that keeps making progress is not cut off by its request deadline -------- */

/* The deadline from the batch's head is 200 + 1000 ms; the sweep runs once a second. One
 * worker: the batch's connection is served by the daemon on the loop that is stepped, so the
 * publisher side moves only in steps too, and each step (up to the next epoll_wait: one call of
 * the daemon or one turn of the loop) lets the batch on by a take's worth of events at most
 * (the inbox holds 2), however fast the machine resumes a held batch. */
#define STEPPED_CONFIG                                                                             \
    "{\"workers\":1,\"limits\":{\"worker_inbox_events\":2,\"request_timeout_ms\":200,"          \
    "\"publish_wait_ms\":1000}}"
#define STEPPED_N 160
#define STEP_EVERY_US 20000 /* a step, then a pause this long */
#define STEPPED_OLD_DEADLINE_MS (200 + 1000 + 1000)

struct async_batch {
    pthread_t thread;
    uint16_t port;
    char body[STEPPED_N * 48];
    size_t len;
    struct lg_http_response r;
    int rc;
    _Atomic bool done;
};

static void *async_batch_main(void *arg)
{
    struct async_batch *b = arg;
    b->rc = lg_http_request(b->port, "POST", "/v1/publish", "Content-Type: application/x-ndjson\r\n",
                            b->body, b->len, &b->r, 60000);
    b->done = true;
    return NULL;
}

START_TEST(test_progressing_batch_outlives_its_first_deadline)
{
    struct lg_server s;
    struct lg_sse_client sub;
    lg_server_must_start(&s, STEPPED_CONFIG);
    open_stream(&sub, &s, "stepped");
    ck_assert(lg_wait_stat(s.control_port, "clients_sse", 1, 5000));
    pid_t tid = freeze_worker(&s, 0);
    static struct async_batch b;
    b.port = s.control_port;
    for (int i = 1; i <= STEPPED_N; i++)
        b.len += (size_t)snprintf(b.body + b.len, sizeof b.body - b.len,
                                  "{\"topic\":\"stepped\",\"data\":\"b%d\"}\n", i);
    int64_t started = lg_now_ms();
    ck_assert_int_eq(pthread_create(&b.thread, NULL, async_batch_main, &b), 0);
    /* The batch progresses a few events a step for seconds, each wait for room far shorter
     * than limits.publish_wait_ms. */
    while (!b.done && lg_now_ms() - started < 30000) {
        usleep(STEP_EVERY_US);
        if (!b.done)
            step_worker(tid);
    }
    thaw_worker(tid);
    pthread_join(b.thread, NULL);
    int64_t took = lg_now_ms() - started;
    ck_assert_msg(b.rc == 0, "the batch got no answer after %" PRId64 " ms", took);
    ck_assert_msg(b.r.status == 200, "batch answered %d: %.300s", b.r.status, b.r.body);
    json_t *root = json_loadb(b.r.body, b.r.body_len, 0, NULL);
    ck_assert_int_eq(json_integer_value(json_object_get(root, "accepted")), STEPPED_N);
    json_decref(root);
    lg_http_response_free(&b.r);
    ck_assert_msg(took > STEPPED_OLD_DEADLINE_MS,
                  "the batch took %" PRId64 " ms: not past its first deadline, proves nothing",
                  took);
    ck_assert_int_gt(lg_server_stat(&s, "publishes_held"), 1);
    ck_assert_int_eq(lg_server_stat(&s, "control_connections_timed_out"), 0);
    ck_assert_int_eq(lg_server_stat(&s, "publishes_refused"), 0);
    for (uint64_t seq = 1; seq <= STEPPED_N; seq++)
        expect_seq(&sub, seq);
    lg_sse_close(&sub);
    lg_server_must_stop(&s);
}
END_TEST

/* ---- 5. A stalled subscriber gets its policy; healthy ones lose nothing ------------------- */

#define STALL_N 2000
#define STALL_DATA 256 /* bytes of data per event: 2000 of them overfill a stalled socket */

struct closed_loop {
    pthread_t thread;
    uint16_t port;
    int accepted, refused;
};

static void *closed_loop_main(void *arg)
{
    struct closed_loop *p = arg;
    struct lg_stall_ka k;
    lg_stall_ka_init(&k, p->port);
    for (int i = 1; i <= STALL_N; i++) {
        char data[STALL_DATA + 1];
        int n = snprintf(data, sizeof data, "e%d:", i);
        memset(data + n, 'x', STALL_DATA - (size_t)n);
        data[STALL_DATA] = '\0';
        struct answer a;
        publish(&k, "mixed", data, &a);
        if (a.status == 201)
            p->accepted++;
        else
            p->refused++;
    }
    lg_stall_ka_close(&k);
    return NULL;
}

START_TEST(test_stalled_subscriber_keeps_its_policy)
{
    struct lg_server s;
    /* Default socket buffers: the healthy subscribers, read continuously, never fill theirs;
     * the stalled one (4 KiB receive buffer, never read) fills its socket and then its
     * 64-event queue. */
    lg_server_must_start(&s, "{\"workers\":1,\"client_queue\":{\"max_events\":64},"
                     "\"limits\":{\"worker_inbox_events\":8}}");
    int stalled = lg_stall_sse_open(s.public_port, "/sse?topic=mixed", NULL, 4096);
    ck_assert_int_ge(stalled, 0);
    struct lg_sse_client healthy[2];
    open_stream(&healthy[0], &s, "mixed");
    open_stream(&healthy[1], &s, "mixed");
    ck_assert(lg_wait_stat(s.control_port, "clients_sse", 3, 5000));

    struct closed_loop pub = {.port = s.control_port};
    ck_assert_int_eq(pthread_create(&pub.thread, NULL, closed_loop_main, &pub), 0);
    uint64_t next[2] = {1, 1};
    int64_t deadline = lg_now_ms() + 60000;
    while ((next[0] <= STALL_N || next[1] <= STALL_N) && lg_now_ms() < deadline) {
        for (int i = 0; i < 2; i++) { /* a few events each in turn: both keep up */
            struct lg_sse_event ev;
            for (int n = 0; n < 8 && next[i] <= STALL_N && lg_sse_next(&healthy[i], &ev, 1) == 1;
                 n++) {
                ck_assert_msg(strcmp(ev.event, "message") == 0,
                              "healthy subscriber %d got \"%s\" at seq %" PRIu64 ": %s", i,
                              ev.event, next[i], ev.data);
                ck_assert_uint_eq(lg_seq_of(ev.id), next[i]);
                next[i]++;
                lg_sse_event_free(&ev);
            }
        }
    }
    pthread_join(pub.thread, NULL);
    ck_assert_int_eq(pub.accepted, STALL_N);
    ck_assert_int_eq(pub.refused, 0);
    ck_assert_uint_eq(next[0], STALL_N + 1);
    ck_assert_uint_eq(next[1], STALL_N + 1);

    /* The stalled one's socket filled: its ring overflowed and drop-oldest fired on it alone;
     * what it reads now covers every seq exactly once as events or gap ranges. */
    ck_assert_int_gt(lg_server_stat(&s, "events_dropped_overflow"), 0);
    struct lg_sse_client slow;
    ck_assert_int_eq(lg_stall_sse_resume(&slow, stalled, 5000), 0);
    uint64_t covered = 0, gaps = 0;
    while (covered < STALL_N) {
        struct lg_sse_event ev;
        ck_assert_int_eq(lg_sse_next(&slow, &ev, READ_TIMEOUT_MS), 1);
        uint64_t seq = lg_seq_of(ev.id);
        if (strcmp(ev.event, "gap") == 0) {
            json_t *g = json_loads(ev.data, 0, NULL);
            uint64_t from = (uint64_t)json_integer_value(json_object_get(g, "from"));
            uint64_t to = (uint64_t)json_integer_value(json_object_get(g, "to"));
            json_decref(g);
            ck_assert_uint_eq(from, covered + 1);
            ck_assert_uint_eq(to, seq);
            covered = to;
            gaps++;
        } else {
            ck_assert_str_eq(ev.event, "message");
            ck_assert_uint_eq(seq, covered + 1);
            covered = seq;
        }
        lg_sse_event_free(&ev);
    }
    ck_assert_uint_gt(gaps, 0);
    lg_sse_close(&slow);
    lg_sse_close(&healthy[0]);
    lg_sse_close(&healthy[1]);
    lg_server_must_stop(&s);
}
END_TEST

LG_CHECK_MAIN_TCASE("overload", "pacing", 120, test_held_then_refused_after_the_wait,
                    test_publish_wait_changes_on_reload,
                    test_held_publish_is_accepted_when_the_worker_catches_up,
                    test_paced_batch_reaches_every_subscriber,
                    test_progressing_batch_outlives_its_first_deadline,
                    test_stalled_subscriber_keeps_its_policy)
