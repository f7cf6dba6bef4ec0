#include "cursor.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define SEQ_MAX_DIGITS 19  /* INT64_MAX = 9223372036854775807 */
#define ENTRY_QUOTE_MAX 48 /* bytes of a bad entry repeated in an error message */

#define STR_(x) #x
#define STR(x) STR_(x)

/*
 * Write entry s[0..n) the way an error message quotes it: at most ENTRY_QUOTE_MAX bytes (then
 * "..."), with every byte that is not printable ASCII, and the quote itself, shown as '?', so
 * the message stays one readable line whatever the client sent.
 */
static void quote_entry(char out[ENTRY_QUOTE_MAX + 4], const char *s, size_t n)
{
    size_t shown = n > ENTRY_QUOTE_MAX ? ENTRY_QUOTE_MAX : n;
    size_t i;
    for (i = 0; i < shown; i++) {
        unsigned char c = (unsigned char)s[i];
        out[i] = c >= 0x20 && c < 0x7f && c != '"' ? (char)c : '?';
    }
    if (shown < n) {
        memcpy(out + i, "...", 3);
        i += 3;
    }
    out[i] = '\0';
}

static int entry_error(char *err, size_t errlen, size_t index, const char *s, size_t n,
                       const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* Fill err with "entry <index> (\"<entry>\"): <problem>". Return value: -1. */
static int entry_error(char *err, size_t errlen, size_t index, const char *s, size_t n,
                       const char *fmt, ...)
{
    if (!err || errlen == 0)
        return -1;
    char quoted[ENTRY_QUOTE_MAX + 4];
    char problem[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(problem, sizeof problem, fmt, ap);
    va_end(ap);
    quote_entry(quoted, s, n);
    snprintf(err, errlen, "entry %zu (\"%s\"): %s", index, quoted, problem);
    return -1;
}

static int cursor_error(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Fill err with a problem of the whole cursor. Return value: -1. */
static int cursor_error(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || errlen == 0)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

static bool parse_epoch(const char *s, size_t n, uint32_t *out)
{
    if (n != 8)
        return false;
    uint32_t v = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c >= '0' && c <= '9')
            v = v << 4 | (uint32_t)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v = v << 4 | (uint32_t)(c - 'a' + 10);
        else
            return false;
    }
    *out = v;
    return true;
}

/* Canonical decimal only (no sign, no leading zeros), so every position has one spelling.
 * Return value: NULL, or what is wrong. */
static const char *parse_seq(const char *s, size_t n, uint64_t *out)
{
    if (n == 0)
        return "seq is missing after ':'";
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return "seq must be decimal digits only";
    }
    if (n > 1 && s[0] == '0')
        return "seq must not have leading zeros";
    if (n > SEQ_MAX_DIGITS)
        return "seq is larger than 9223372036854775807";
    uint64_t v = 0; /* 19 digits cannot overflow 64 bits */
    for (size_t i = 0; i < n; i++)
        v = v * 10 + (uint64_t)(s[i] - '0');
    if (v > INT64_MAX)
        return "seq is larger than 9223372036854775807";
    *out = v;
    return NULL;
}

/* Parse one non-empty entry. Return value: NULL, or what is wrong with it. */
static const char *parse_entry(const char *s, size_t n, struct lg_cursor_entry *e)
{
    /* Topics may contain ':' but never '@', so the last '@' ends the topic. */
    const char *at = memrchr(s, '@', n);
    if (!at)
        return "missing '@' between topic and epoch";
    size_t topic_len = (size_t)(at - s);
    const char *problem = lg_topic_name_problem(s, topic_len);
    if (problem)
        return problem;
    const char *rest = at + 1;
    size_t rest_len = n - topic_len - 1;
    const char *colon = memchr(rest, ':', rest_len);
    if (!colon)
        return "missing ':' between epoch and seq";
    if (!parse_epoch(rest, (size_t)(colon - rest), &e->epoch))
        return "epoch must be 8 lowercase hex digits";
    problem = parse_seq(colon + 1, rest_len - (size_t)(colon - rest) - 1, &e->seq);
    if (problem)
        return problem;
    memcpy(e->topic, s, topic_len);
    e->topic[topic_len] = '\0';
    return NULL;
}

int lg_cursor_parse(const char *text, size_t len, struct lg_cursor *c, char *err, size_t errlen)
{
    c->count = 0;
    if (len == 0)
        return cursor_error(err, errlen, "cursor is empty");
    const char *end = text + len;
    const char *s = text;
    for (size_t index = 1;; index++) {
        const char *comma = memchr(s, ',', (size_t)(end - s));
        size_t n = (size_t)((comma ? comma : end) - s);
        if (n == 0)
            return cursor_error(err, errlen, "entry %zu is empty", index);
        if (c->count == LG_CURSOR_MAX_ENTRIES)
            return cursor_error(err, errlen,
                                "cursor has more than " STR(LG_CURSOR_MAX_ENTRIES) " entries");
        struct lg_cursor_entry *e = &c->entries[c->count];
        const char *problem = parse_entry(s, n, e);
        if (problem)
            return entry_error(err, errlen, index, s, n, "%s", problem);
        for (size_t i = 0; i < c->count; i++) {
            if (strcmp(c->entries[i].topic, e->topic) == 0)
                return entry_error(err, errlen, index, s, n,
                                   "topic \"%s\" already appears in entry %zu", e->topic, i + 1);
        }
        c->count++;
        if (!comma)
            return 0;
        s = comma + 1;
    }
}

const struct lg_cursor_entry *lg_cursor_find(const struct lg_cursor *c, const char *topic)
{
    for (size_t i = 0; i < c->count; i++) {
        if (strcmp(c->entries[i].topic, topic) == 0)
            return &c->entries[i];
    }
    return NULL;
}

size_t lg_cursor_format_entry(char *out, const char *topic, uint32_t epoch, uint64_t seq)
{
    int n = snprintf(out, LG_CURSOR_ENTRY_MAX, "%s@%08" PRIx32 ":%" PRIu64, topic, epoch, seq);
    if (n < 0)
        return 0;
    /* Only a topic longer than the grammar allows is cut; report what was written. */
    return (size_t)n < LG_CURSOR_ENTRY_MAX ? (size_t)n : LG_CURSOR_ENTRY_MAX - 1;
}
