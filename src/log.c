#include "log.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"

#define LOG_LINE_MAX 1024 /* bytes of one line, its newline included */

static _Atomic int log_level = LG_LOG_INFO;

void lg_log_set_level(enum lg_log_level level)
{
    atomic_store_explicit(&log_level, (int)level, memory_order_relaxed);
}

enum lg_log_level lg_log_get_level(void)
{
    return (enum lg_log_level)atomic_load_explicit(&log_level, memory_order_relaxed);
}

static const char *level_word(enum lg_log_level level)
{
    switch (level) {
    case LG_LOG_ERROR:
        return "ERROR";
    case LG_LOG_WARN:
        return "WARN";
    case LG_LOG_INFO:
        return "INFO";
    case LG_LOG_DEBUG:
        return "DEBUG";
    }
    return "?";
}

/* Advance the length of line by what snprintf reported, but never past the byte kept for the
 * newline: snprintf returns what it would have written, not what fitted. */
static size_t advance(size_t len, int written)
{
    if (written < 0)
        return len;
    len += (size_t)written;
    return len < LOG_LINE_MAX - 1 ? len : LOG_LINE_MAX - 1;
}

static void log_emit(enum lg_log_level level, uint64_t suppressed, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

/*
 * Format "<UTC time with ms> <LEVEL> <message>[ (N similar lines suppressed)]\n" and write it
 * with a single write(2): a line of at most LOG_LINE_MAX bytes is below PIPE_BUF, so lines
 * from different threads (or processes sharing the pipe) never interleave.
 */
static void log_emit(enum lg_log_level level, uint64_t suppressed, const char *fmt, va_list ap)
{
    char line[LOG_LINE_MAX];
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    size_t len = strftime(line, sizeof line, "%Y-%m-%dT%H:%M:%S", &tm);
    len = advance(len, snprintf(line + len, sizeof line - len, ".%03ldZ %s ",
                                ts.tv_nsec / 1000000, level_word(level)));
    len = advance(len, vsnprintf(line + len, sizeof line - len, fmt, ap));
    if (len > 0 && line[len - 1] == '\n')
        len--; /* the caller's own newline: we add exactly one */
    if (suppressed)
        len = advance(len, snprintf(line + len, sizeof line - len,
                                    " (%" PRIu64 " similar lines suppressed)", suppressed));
    line[len++] = '\n';
    while (write(STDERR_FILENO, line, len) < 0 && errno == EINTR) {
    }
}

void lg_log(enum lg_log_level level, const char *fmt, ...)
{
    if (level > lg_log_get_level())
        return;
    va_list ap;
    va_start(ap, fmt);
    log_emit(level, 0, fmt, ap);
    va_end(ap);
}

void lg_log_lifecycle(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_emit(LG_LOG_INFO, 0, fmt, ap);
    va_end(ap);
}

void lg_log_ratelimited(struct lg_ratelimit *rl, uint32_t interval_ms, enum lg_log_level level,
                        const char *fmt, ...)
{
    if (level > lg_log_get_level())
        return;
    uint64_t now = lg_mono_ms();
    uint64_t next = atomic_load_explicit(&rl->next_allowed_ms, memory_order_relaxed);
    /* Of the threads that find the interval over, only the one whose compare-exchange wins
     * prints; the others count themselves as suppressed. */
    if (now < next ||
        !atomic_compare_exchange_strong_explicit(&rl->next_allowed_ms, &next, now + interval_ms,
                                                 memory_order_relaxed, memory_order_relaxed)) {
        atomic_fetch_add_explicit(&rl->suppressed, 1, memory_order_relaxed);
        return;
    }
    uint64_t suppressed = atomic_exchange_explicit(&rl->suppressed, 0, memory_order_relaxed);
    va_list ap;
    va_start(ap, fmt);
    log_emit(level, suppressed, fmt, ap);
    va_end(ap);
}
