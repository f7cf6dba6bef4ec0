#include "log.h"

#include <errno.h>
#include <stdbool.h>
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
static _Atomic int log_format = LG_LOG_TEXT;

void lg_log_set_format(enum lg_log_format format)
{
    atomic_store_explicit(&log_format, (int)format, memory_order_relaxed);
}

static bool json_format(void)
{
    return atomic_load_explicit(&log_format, memory_order_relaxed) == LG_LOG_JSON;
}

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

/* The time stamp every line starts with: UTC, milliseconds. Return value: its length. */
static size_t format_time(char *out, size_t cap)
{
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    size_t len = strftime(out, cap, "%Y-%m-%dT%H:%M:%S", &tm);
    return advance(len, snprintf(out + len, cap - len, ".%03ldZ", ts.tv_nsec / 1000000));
}

static void write_line(char *line, size_t len)
{
    line[len++] = '\n';
    while (write(STDERR_FILENO, line, len) < 0 && errno == EINTR) {
    }
}

/* Append s as a JSON string (quotes included) within the line's bound. Its bytes are first
 * made safe as in a text line (control bytes and malformed UTF-8 as \xNN), so the line is
 * valid UTF-8 and valid JSON whatever a client sent. Return value: the new length. */
static size_t append_json_string(char *line, size_t len, const char *s, size_t n)
{
    char safe[LOG_LINE_MAX];
    size_t safe_len = append_escaped(safe, 0, s, n);
    struct lg_buf b;
    lg_buf_init(&b);
    lg_encode_json_string(&b, safe, safe_len);
    const size_t end = LOG_LINE_MAX - 1;
    if (!b.oom && len + b.len <= end - 8) {
        memcpy(line + len, b.data, b.len);
        len += b.len;
    } else if (len + 3 <= end) {
        memcpy(line + len, "\"\"", 2); /* does not fit: an empty string keeps it JSON */
        len += 2;
    }
    lg_buf_release(&b);
    return len;
}

/* One JSON object line: {"time","level","msg","fields"{...}}; fields may be NULL. */
static void emit_json(enum lg_log_level level, uint64_t suppressed, const char *msg,
                      size_t msg_len, const struct lg_log_field *fields, size_t n)
{
    static const char *const lower[] = {"error", "warn", "info", "debug"};
    char line[LOG_LINE_MAX];
    char stamp[40];
    size_t len = advance(0, snprintf(line, sizeof line, "{\"time\":\""));
    len = advance(len, snprintf(line + len, sizeof line - len, "%.*s\",\"level\":\"%s\",\"msg\":",
                                (int)format_time(stamp, sizeof stamp), stamp, lower[level]));
    len = append_json_string(line, len, msg, msg_len);
    len = advance(len, snprintf(line + len, sizeof line - len, ",\"fields\":{"));
    for (size_t i = 0; i < n; i++) {
        len = append_json_string(line, len, fields[i].key, strlen(fields[i].key));
        len = advance(len, snprintf(line + len, sizeof line - len, ":"));
        if (fields[i].str)
            len = append_json_string(line, len, fields[i].str, strlen(fields[i].str));
        else
            len = advance(len, snprintf(line + len, sizeof line - len, "%" PRIu64, fields[i].num));
        if (i + 1 < n)
            len = advance(len, snprintf(line + len, sizeof line - len, ","));
    }
    if (suppressed)
        len = advance(len, snprintf(line + len, sizeof line - len, "%s\"suppressed\":%" PRIu64,
                                    n ? "," : "", suppressed));
    len = advance(len, snprintf(line + len, sizeof line - len, "}}"));
    if (len >= LOG_LINE_MAX - 1) /* cut short: say so in an object that still parses */
        len = advance(0, snprintf(line, sizeof line, "{\"time\":\"%.*s\",\"level\":\"%s\","
                                  "\"msg\":\"(log line longer than %d bytes dropped)\","
                                  "\"fields\":{}}", (int)format_time(stamp, sizeof stamp),
                                  stamp, lower[level], LOG_LINE_MAX));
    write_line(line, len);
}

/*
 * Format "<UTC time with ms> <LEVEL> <message>[ (N similar lines suppressed)]\n" and write it
 * with a single write(2): a line of at most LOG_LINE_MAX bytes is below PIPE_BUF, so lines
 * from different threads (or processes sharing the pipe) never interleave.
 */
static void emit(enum lg_log_level level, uint64_t suppressed, const char *msg, size_t msg_len,
                 const struct lg_log_field *fields, size_t n)
{
    if (json_format()) {
        emit_json(level, suppressed, msg, msg_len, fields, n);
        return;
    }
    char line[LOG_LINE_MAX];
    size_t len = format_time(line, sizeof line);
    len = advance(len, snprintf(line + len, sizeof line - len, " %s ", level_word(level)));
    len = append_escaped(line, len, msg, msg_len);
    for (size_t i = 0; i < n; i++) {
        char num[24];
        const char *value = fields[i].str;
        if (!value) {
            snprintf(num, sizeof num, "%" PRIu64, fields[i].num);
            value = num;
        }
        len = advance(len, snprintf(line + len, sizeof line - len, " %s=", fields[i].key));
        len = append_escaped(line, len, value, strlen(value));
    }
    if (suppressed)
        len = advance(len, snprintf(line + len, sizeof line - len,
                                    " (%" PRIu64 " similar lines suppressed)", suppressed));
    write_line(line, len);
}

static void log_emit(enum lg_log_level level, uint64_t suppressed, const char *fmt, va_list ap)
{
    char msg[LOG_LINE_MAX];
    int n = vsnprintf(msg, sizeof msg, fmt, ap);
    size_t msg_len = n < 0 ? 0 : (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1;
    if (msg_len > 0 && msg[msg_len - 1] == '\n')
        msg_len--; /* the caller's own newline: we add exactly one */
    emit(level, suppressed, msg, msg_len, NULL, 0);
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

/* Whether this call may print now (else it was counted as suppressed); *suppressed is what
 * was swallowed since the last printed line. */
static bool ratelimit_pass(struct lg_ratelimit *rl, uint32_t interval_ms, uint64_t *suppressed)
{
    uint64_t now = lg_mono_ms();
    uint64_t next = atomic_load_explicit(&rl->next_allowed_ms, memory_order_relaxed);
    /* Of the threads that find the interval over, only the one whose compare-exchange wins
     * prints; the others count themselves as suppressed. */
    if (now < next ||
        !atomic_compare_exchange_strong_explicit(&rl->next_allowed_ms, &next, now + interval_ms,
                                                 memory_order_relaxed, memory_order_relaxed)) {
        atomic_fetch_add_explicit(&rl->suppressed, 1, memory_order_relaxed);
        return false;
    }
    *suppressed = atomic_exchange_explicit(&rl->suppressed, 0, memory_order_relaxed);
    return true;
}

void lg_log_fields_ratelimited(struct lg_ratelimit *rl, uint32_t interval_ms,
                               enum lg_log_level level, const char *msg,
                               const struct lg_log_field *fields, size_t n)
{
    uint64_t suppressed;
    if (level > lg_log_get_level() || !ratelimit_pass(rl, interval_ms, &suppressed))
        return;
    emit(level, suppressed, msg, strlen(msg), fields, n);
}

void lg_log_ratelimited(struct lg_ratelimit *rl, uint32_t interval_ms, enum lg_log_level level,
                        const char *fmt, ...)
{
    uint64_t suppressed;
    if (level > lg_log_get_level() || !ratelimit_pass(rl, interval_ms, &suppressed))
        return;
    va_list ap;
    va_start(ap, fmt);
    log_emit(level, suppressed, fmt, ap);
    va_end(ap);
}
