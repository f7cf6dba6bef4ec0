/*
 * lg_server.c - start, watch and stop the livegate binary under test.
 *
 * The server runs as a child with stdout and stderr on one pipe, which the test drains into
 * struct lg_server.log. The child gets PR_SET_PDEATHSIG(SIGKILL), so a test process that dies
 * (a failed ck_assert exits it) takes its server along. Temporary config files are tracked in
 * a small table keyed by pid (the public struct has no field for them) and removed at stop,
 * on a failed start, or at exit of the test process.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lg_internal.h"
#include "lg_test.h"

#define LG_TEST__START_TIMEOUT_MS 10000
#define LG_TEST__PIPE_BYTES (1 << 20) /* so a chatty server does not block between pumps */
#define LG_TEST__MAX_SERVERS 32

/* ---- Children started by this process --------------------------------------------------- */

static struct {
    pid_t pid;          /* 0 = free slot */
    char config[64];    /* temporary config file, "" if none */
} lg_test__children[LG_TEST__MAX_SERVERS];

static void lg_test__at_exit(void)
{
    for (int i = 0; i < LG_TEST__MAX_SERVERS; i++) {
        if (lg_test__children[i].pid <= 0)
            continue;
        kill(lg_test__children[i].pid, SIGKILL);
        waitpid(lg_test__children[i].pid, NULL, 0);
        if (lg_test__children[i].config[0])
            unlink(lg_test__children[i].config);
        lg_test__children[i].pid = 0;
    }
}

static void lg_test__child_add(pid_t pid, const char *config)
{
    static bool registered;
    if (!registered) {
        atexit(lg_test__at_exit);
        registered = true;
    }
    for (int i = 0; i < LG_TEST__MAX_SERVERS; i++) {
        if (lg_test__children[i].pid == 0) {
            lg_test__children[i].pid = pid;
            snprintf(lg_test__children[i].config, sizeof lg_test__children[i].config, "%s",
                     config ? config : "");
            return;
        }
    }
    fprintf(stderr, "lg_server: more than %d servers; pid %d not tracked\n", LG_TEST__MAX_SERVERS,
            (int)pid);
}

/* Forget a reaped child and remove its config file. */
static void lg_test__child_forget(pid_t pid)
{
    for (int i = 0; i < LG_TEST__MAX_SERVERS; i++) {
        if (lg_test__children[i].pid == pid) {
            if (lg_test__children[i].config[0])
                unlink(lg_test__children[i].config);
            lg_test__children[i].pid = 0;
            lg_test__children[i].config[0] = '\0';
        }
    }
}

/* ---- Log -------------------------------------------------------------------------------- */

/* Append to s->log. When full, the oldest half is dropped so new lines stay searchable. */
static void lg_test__log_append(struct lg_server *s, const char *p, size_t n)
{
    const size_t room = sizeof s->log - 1;
    if (n >= room) {
        p += n - room;
        n = room;
    }
    if (s->log_len + n > room) {
        size_t drop = s->log_len + n - room;
        if (drop < room / 2)
            drop = room / 2;
        if (drop > s->log_len)
            drop = s->log_len;
        memmove(s->log, s->log + drop, s->log_len - drop);
        s->log_len -= drop;
    }
    memcpy(s->log + s->log_len, p, n);
    s->log_len += n;
    s->log[s->log_len] = '\0';
}

/*
 * Read one chunk (at most 16 KiB, a quarter of the log) of output into s->log. Callers that
 * look for a line check after every chunk: with the window sliding, a whole pipe's worth read
 * at once could push the line out before anyone saw it.
 * Return value: true if bytes were appended.
 */
static bool lg_test__pump_chunk(struct lg_server *s)
{
    char buf[16384];
    while (s->stderr_fd >= 0) {
        ssize_t n = read(s->stderr_fd, buf, sizeof buf);
        if (n > 0) {
            lg_test__log_append(s, buf, (size_t)n);
            return true;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
            close(s->stderr_fd); /* every writer is gone */
            s->stderr_fd = -1;
        }
        return false;
    }
    return false;
}

void lg_server_pump_log(struct lg_server *s)
{
    while (lg_test__pump_chunk(s))
        ;
}

/* Wait up to ms for output (or just ms when the pipe is closed); reads nothing. */
static void lg_test__log_poll(struct lg_server *s, int ms)
{
    struct pollfd pfd = {.fd = s->stderr_fd, .events = POLLIN};
    if (s->stderr_fd >= 0)
        poll(&pfd, 1, ms);
    else
        poll(NULL, 0, ms);
}

static void lg_test__dump_log(const struct lg_server *s, const char *why)
{
    fprintf(stderr,
            "---- livegate (pid %d) %s; its output: ----\n%s%s---- end of livegate output ----\n",
            (int)s->pid, why, s->log,
            s->log_len && s->log[s->log_len - 1] != '\n' ? "\n" : "");
}

bool lg_server_wait_log(struct lg_server *s, const char *needle, int timeout_ms)
{
    int64_t deadline = lg_test__deadline(timeout_ms);
    size_t nlen = strlen(needle);
    for (;;) {
        if (memmem(s->log, s->log_len, needle, nlen))
            return true;
        if (lg_test__pump_chunk(s))
            continue;
        int left = lg_left_ms(deadline);
        if (left == 0 || s->stderr_fd < 0)
            return false;
        lg_test__log_poll(s, left);
    }
}

/* ---- Start and stop ----------------------------------------------------------------------- */

/* Port after the last ':' of the token starting at p (ends at a blank or newline). */
static int lg_test__parse_port(const char *p, uint16_t *port)
{
    const char *end = p + strcspn(p, " \t\r\n");
    const char *colon = NULL;
    for (const char *q = p; q < end; q++)
        if (*q == ':')
            colon = q;
    if (!colon || colon + 1 == end)
        return -1;
    unsigned long v = 0;
    for (const char *q = colon + 1; q < end; q++) {
        if (*q < '0' || *q > '9')
            return -1;
        v = v * 10 + (unsigned long)(*q - '0');
        if (v > 65535)
            return -1;
    }
    if (v == 0)
        return -1;
    *port = (uint16_t)v;
    return 0;
}

/* Return value: 1 the startup line was parsed, 0 not (yet) there, -1 it is malformed. */
static int lg_test__parse_startup(struct lg_server *s)
{
    const char *l = strstr(s->log, "listening public=");
    if (!l || !strchr(l, '\n'))
        return 0;
    const char *c = strstr(l, " control=");
    if (lg_test__parse_port(l + strlen("listening public="), &s->public_port) < 0 || !c ||
        c > strchr(l, '\n') || lg_test__parse_port(c + strlen(" control="), &s->control_port) < 0)
        return -1;
    return 1;
}

static int lg_test__write_config(const char *json, char *path, size_t cap)
{
    snprintf(path, cap, "/tmp/lg_test_config_XXXXXX.json");
    int fd = mkstemps(path, 5);
    if (fd < 0) {
        fprintf(stderr, "lg_server_start: mkstemps: %s\n", strerror(errno));
        path[0] = '\0';
        return -1;
    }
    size_t len = strlen(json), off = 0;
    while (off < len) {
        ssize_t n = write(fd, json + off, len - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            fprintf(stderr, "lg_server_start: write %s: %s\n", path, strerror(errno));
            close(fd);
            unlink(path);
            path[0] = '\0';
            return -1;
        }
        off += (size_t)n;
    }
    close(fd);
    return 0;
}

/* In the child: never returns. Only async-signal-safe calls between fork and exec. */
static void lg_test__exec_child(pid_t parent, int out_fd, const char *binary, char *const argv[])
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) /* the parent died before prctl took effect */
        _exit(127);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) {
        dup2(devnull, STDIN_FILENO);
        if (devnull > STDERR_FILENO)
            close(devnull);
    }
    dup2(out_fd, STDOUT_FILENO);
    dup2(out_fd, STDERR_FILENO);
    sigset_t all;
    sigemptyset(&all);
    sigprocmask(SIG_SETMASK, &all, NULL);
    signal(SIGPIPE, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    execv(binary, argv);
    static const char msg[] = "lg_server_start: execv failed\n";
    ssize_t ignored = write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)ignored;
    _exit(127);
}

/* Kill and reap a child that failed to start, and release everything start built. */
static void lg_test__abort_start(struct lg_server *s, const char *why)
{
    if (s->pid > 0) {
        kill(s->pid, SIGKILL);
        int st;
        while (waitpid(s->pid, &st, 0) < 0 && errno == EINTR)
            ;
        lg_server_pump_log(s);
        lg_test__dump_log(s, why);
        lg_test__child_forget(s->pid);
    }
    if (s->stderr_fd >= 0)
        close(s->stderr_fd);
    s->stderr_fd = -1;
    s->pid = -1;
}

int lg_server_start(struct lg_server *s, const char *config_json, const char *const *extra_args)
{
    memset(s, 0, sizeof *s);
    s->pid = -1;
    s->stderr_fd = -1;

    const char *binary = getenv("LG_BINARY");
    if (!binary || !*binary)
        binary = "build/livegate";
    if (access(binary, X_OK) != 0) {
        fprintf(stderr, "lg_server_start: %s is not executable (%s); set LG_BINARY\n", binary,
                strerror(errno));
        return -1;
    }

    char config[64] = "";
    if (config_json && lg_test__write_config(config_json, config, sizeof config) < 0)
        return -1;

    size_t nextra = 0;
    while (extra_args && extra_args[nextra])
        nextra++;
    const char **argv = calloc(nextra + 9, sizeof *argv);
    int fds[2] = {-1, -1};
    if (!argv || pipe2(fds, O_CLOEXEC) < 0) {
        fprintf(stderr, "lg_server_start: %s\n", argv ? strerror(errno) : "out of memory");
        goto fail;
    }
    size_t a = 0;
    argv[a++] = binary;
    argv[a++] = "--public";
    argv[a++] = "127.0.0.1:0";
    argv[a++] = "--control";
    argv[a++] = "127.0.0.1:0";
    if (config[0]) {
        argv[a++] = "--config";
        argv[a++] = config;
    }
    for (size_t i = 0; i < nextra; i++)
        argv[a++] = extra_args[i];
    argv[a] = NULL;

    pid_t parent = getpid();
    fflush(NULL); /* do not let the child inherit unflushed stdio buffers */
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "lg_server_start: fork: %s\n", strerror(errno));
        goto fail;
    }
    if (pid == 0)
        lg_test__exec_child(parent, fds[1], binary, (char *const *)argv);

    close(fds[1]);
    fds[1] = -1;
    free(argv);
    argv = NULL;
    s->pid = pid;
    s->stderr_fd = fds[0];
    lg_test__child_add(pid, config);
    fcntl(s->stderr_fd, F_SETFL, fcntl(s->stderr_fd, F_GETFL) | O_NONBLOCK);
    fcntl(s->stderr_fd, F_SETPIPE_SZ, LG_TEST__PIPE_BYTES); /* best effort */

    int64_t deadline = lg_test__deadline(LG_TEST__START_TIMEOUT_MS);
    for (;;) {
        int rc = lg_test__parse_startup(s);
        if (rc == 1)
            return 0;
        if (rc < 0) {
            lg_test__abort_start(s, "printed a malformed startup line");
            return -1;
        }
        if (lg_test__pump_chunk(s))
            continue;
        int st;
        pid_t w = waitpid(pid, &st, WNOHANG);
        if (w == pid) {
            lg_server_pump_log(s);
            char why[96];
            if (WIFEXITED(st))
                snprintf(why, sizeof why, "exited with status %d before its startup line",
                         WEXITSTATUS(st));
            else
                snprintf(why, sizeof why, "died of signal %d before its startup line",
                         WTERMSIG(st));
            lg_test__dump_log(s, why);
            lg_test__child_forget(pid);
            close(s->stderr_fd);
            s->stderr_fd = -1;
            s->pid = -1;
            return -1;
        }
        if (lg_left_ms(deadline) == 0) {
            lg_test__abort_start(s, "printed no startup line within 10 s");
            return -1;
        }
        lg_test__log_poll(s, 10);
    }

fail:
    free(argv);
    if (fds[0] >= 0)
        close(fds[0]);
    if (fds[1] >= 0)
        close(fds[1]);
    if (config[0])
        unlink(config);
    return -1;
}

/*
 * Return value: WEXITSTATUS when the server exited, 128 + signal number when a signal ended
 * it, -1 when it outlived timeout_ms (it is then SIGKILLed and reaped) or was not running.
 * Set LG_TEST_SERVER_LOG=1 to see the server's output after every stop.
 */
int lg_server_stop(struct lg_server *s, int timeout_ms)
{
    if (s->pid <= 0) /* never kill(-1) or kill(0) */
        return -1;
    pid_t pid = s->pid;
    int rc = -1, st = 0;
    kill(pid, SIGTERM);
    int64_t deadline = lg_test__deadline(timeout_ms);
    for (;;) {
        pid_t w = waitpid(pid, &st, WNOHANG);
        if (w == pid) {
            rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
            break;
        }
        if (w < 0 && errno != EINTR) {
            fprintf(stderr, "lg_server_stop: waitpid: %s\n", strerror(errno));
            break;
        }
        if (lg_left_ms(deadline) == 0) {
            kill(pid, SIGKILL);
            while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
                ;
            break;
        }
        lg_test__log_poll(s, 10);
        lg_server_pump_log(s); /* so the server never blocks on a full pipe while it drains */
    }
    lg_server_pump_log(s);
    if (rc < 0)
        lg_test__dump_log(s, "did not stop after SIGTERM in time (killed)");
    else if (rc != 0)
        lg_test__dump_log(s, "stopped with a non-zero status");
    else if (getenv("LG_TEST_SERVER_LOG"))
        lg_test__dump_log(s, "stopped");
    lg_test__child_forget(pid);
    if (s->stderr_fd >= 0)
        close(s->stderr_fd);
    s->stderr_fd = -1;
    s->pid = -1;
    return rc;
}

/* ---- Resource use ------------------------------------------------------------------------- */

/* Open /proc/<pid>/<name> of the running server. Return value: the file, or NULL. */
static FILE *proc_open(const struct lg_server *s, const char *name)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/%s", (int)s->pid, name);
    return s->pid > 0 ? fopen(path, "r") : NULL;
}

/* Return value: seconds, or -1.0 if /proc could not be read. */
double lg_server_cpu_seconds(const struct lg_server *s)
{
    char buf[1024];
    FILE *f = proc_open(s, "stat");
    if (!f)
        return -1.0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')'); /* comm may contain blanks and parentheses */
    unsigned long long utime, stime;
    /* after ")": state(3) ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt
     * utime(14) stime(15) */
    if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime,
                     &stime) != 2)
        return -1.0;
    long tck = sysconf(_SC_CLK_TCK);
    return (double)(utime + stime) / (double)(tck > 0 ? tck : 100);
}

/* Return value: KiB, or -1 if /proc could not be read. */
long lg_server_rss_kib(const struct lg_server *s)
{
    char line[256];
    FILE *f = proc_open(s, "status");
    if (!f)
        return -1;
    long kib = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
            break;
    fclose(f);
    return kib;
}

void lg_server_must_start(struct lg_server *s, const char *config_json)
{
    ck_assert_msg(lg_server_start(s, config_json, NULL) == 0, "server did not start with %s",
                  config_json ? config_json : "the default config");
}

void lg_server_must_be_ready(const struct lg_server *s, int timeout_ms)
{
    int64_t deadline = lg_now_ms() + timeout_ms;
    int status = 0;
    while (status != 200 && lg_now_ms() < deadline) {
        struct lg_http_response r;
        if (lg_http_request(s->control_port, "GET", "/readyz", NULL, NULL, 0, &r, 1000) == 0) {
            status = r.status;
            lg_http_response_free(&r);
        }
        if (status != 200)
            usleep(10000);
    }
    ck_assert_msg(status == 200, "node never became ready (GET /readyz)");
}

void lg_server_must_stop(struct lg_server *s)
{
    int rc = lg_server_stop(s, 10000);
    lg_server_pump_log(s);
    ck_assert_msg(rc == 0, "server exit status %d; log:\n%s", rc, s->log);
}
