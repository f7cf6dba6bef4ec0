/*
 * log.h - levelled logging to stderr, and an edge-triggered helper for "policy fired" lines.
 *
 * Owns:    the process log level (set once at start, read by every thread).
 * Threads: every function may be called from any thread; one line is one write(2), so lines
 *          from different threads never interleave.
 * Bounds:  a line is cut at 1 KiB. lg_log_ratelimited() prints at most one line per key per
 *          interval and counts what it suppressed, so a storm cannot flood the log.
 */
#ifndef LG_LOG_H
#define LG_LOG_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>


enum lg_log_level { LG_LOG_ERROR = 0, LG_LOG_WARN, LG_LOG_INFO, LG_LOG_DEBUG };

/* text: "<time> <LEVEL> <msg>[ k=v ...]"; json: one object a line,
 * {"time":"...","level":"info","msg":"...","fields":{...}} (the log_format setting). */
enum lg_log_format { LG_LOG_TEXT = 0, LG_LOG_JSON };

void lg_log_set_level(enum lg_log_level level);
enum lg_log_level lg_log_get_level(void);
void lg_log_set_format(enum lg_log_format format);

void lg_log(enum lg_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Start, drain and stop lines, printed at INFO whatever the level: tools read the chosen
 * ports from the startup line, and an operator must always see why the process ended. */
void lg_log_lifecycle(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * A rate limiter for one kind of warning. Initialise with {0}; one per call site, static.
 * The first line in each interval is printed with the number suppressed since the last one.
 */
struct lg_ratelimit {
    _Atomic uint64_t next_allowed_ms; /* monotonic ms before which lines are suppressed */
    _Atomic uint64_t suppressed;      /* lines swallowed since the last printed one */
};

void lg_log_ratelimited(struct lg_ratelimit *rl, uint32_t interval_ms, enum lg_log_level level,
                        const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* One named value of a structured line: a string (str != NULL) or an unsigned number. */
struct lg_log_field {
    const char *key;
    const char *str;
    uint64_t num;
};

/* A line made of a fixed message and fields, rate-limited like lg_log_ratelimited(): text
 * format appends " key=value" per field (strings escaped as in every line), json format puts
 * them in "fields" (numbers as numbers). */
void lg_log_fields_ratelimited(struct lg_ratelimit *rl, uint32_t interval_ms,
                               enum lg_log_level level, const char *msg,
                               const struct lg_log_field *fields, size_t n);

#define lg_err(...) lg_log(LG_LOG_ERROR, __VA_ARGS__)
#define lg_warn(...) lg_log(LG_LOG_WARN, __VA_ARGS__)
#define lg_info(...) lg_log(LG_LOG_INFO, __VA_ARGS__)
#define lg_debug(...)                                                                              \
    do {                                                                                           \
        if (lg_log_get_level() >= LG_LOG_DEBUG)                                                    \
            lg_log(LG_LOG_DEBUG, __VA_ARGS__);                                                     \
    } while (0)

#endif
