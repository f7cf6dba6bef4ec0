#include "log.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "encode.h"

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

/* Length of the well-formed UTF-8 sequence at s[0..n) (n > 0, s[0] >= 0x80), or 0. */
static size_t utf8_sequence(const char *s, size_t n)
{
    unsigned char lead = (unsigned char)s[0];
    size_t want = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 0;
    return want && want <= n && lg_utf8_valid(s, want) ? want : 0;
}

/*
 * Append msg[0..n) to line at len: client bytes reach log lines (topic names, paths, reasons),
 * so control bytes (CR and LF would forge a line; ESC starts a terminal escape), DEL and bytes
 * that are not well-formed UTF-8 are written as \xNN, and a backslash as \\, so every line
 * is one line of valid UTF-8 and an escape in it is always ours. Stops before the newline
 * byte, as advance() does. Return value: the new length.
 */
static size_t append_escaped(char *line, size_t len, const char *msg, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    const size_t end = LOG_LINE_MAX - 1;
    for (size_t i = 0; i < n && len < end;) {
        unsigned char c = (unsigned char)msg[i];
        size_t seq = c >= 0x80 ? utf8_sequence(msg + i, n - i) : 0;
        if (seq > 0) {
            if (len + seq > end)
                break;
            memcpy(line + len, msg + i, seq);
            len += seq;
            i += seq;
        } else if (c >= 0x20 && c < 0x7f && c != '\\') {
            line[len++] = (char)c;
            i++;
        } else {
            char esc[4] = {'\\', 'x', hex[c >> 4], hex[c & 15]};
            size_t w = c == '\\' ? 2 : 4;
            if (c == '\\')
                esc[1] = '\\';
            if (len + w > end)
                break;
            memcpy(line + len, esc, w);
            len += w;
            i++;
        }
    }
    return len;
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
    char msg[LOG_LINE_MAX];
    int n = vsnprintf(msg, sizeof msg, fmt, ap);
    size_t msg_len = n < 0 ? 0 : (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1;
    if (msg_len > 0 && msg[msg_len - 1] == '\n')
        msg_len--; /* the caller's own newline: we add exactly one */
    len = append_escaped(line, len, msg, msg_len);
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
