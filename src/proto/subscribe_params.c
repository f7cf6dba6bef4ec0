#include "subscribe_params.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_request.h"

#define VALUE_MAX 8192

const char *lg_subscribe_params_add_topic(struct lg_subscribe_params *p, const char *topic,
                                          size_t len, uint32_t max_topics, char *problem,
                                          size_t problem_cap)
{
    const char *bad = lg_topic_name_problem(topic, len);
    if (bad) {
        snprintf(problem, problem_cap, "topic \"%.*s\": %s", (int)(len > 64 ? 64 : len), topic,
                 bad);
        return "invalid_topic";
    }
    for (size_t i = 0; i < p->topic_count; i++)
        if (strlen(p->topics[i]) == len && memcmp(p->topics[i], topic, len) == 0)
            return NULL;
    if (p->topic_count >= max_topics || p->topic_count >= LG_CURSOR_MAX_ENTRIES) {
        snprintf(problem, problem_cap,
                 "at most %u topics per subscription (limits.max_topics_per_client)", max_topics);
        return "bad_request";
    }
    memcpy(p->topics[p->topic_count], topic, len);
    p->topics[p->topic_count][len] = '\0';
    p->topic_count++;
    return NULL;
}

static const char *parse_timeout(struct lg_subscribe_params *p, const char *value, char *problem,
                                 size_t problem_cap)
{
    char *end;
    unsigned long secs = strtoul(value, &end, 10);
    if (!*value || *end || value[0] == '-' || secs > 86400) {
        snprintf(problem, problem_cap,
                 "timeout must be a whole number of seconds from 0 to 86400, got \"%.32s\"", value);
        return "bad_request";
    }
    p->timeout_ms = secs * 1000u;
    p->has_timeout = true;
    return NULL;
}

static const char *start_given_twice(char *problem, size_t problem_cap)
{
    snprintf(problem, problem_cap,
             "give one start position: since=latest or rewind=N, not both (nor one twice)");
    return "bad_request";
}

const char *lg_subscribe_params_rewind(struct lg_subscribe_params *p, const char *text,
                                       char *problem, size_t problem_cap)
{
    if (p->has_start)
        return start_given_twice(problem, problem_cap);
    char *end;
    unsigned long n = strtoul(text, &end, 10);
    if (!*text || *end || text[0] < '0' || text[0] > '9' || n > LG_HISTORY_MAX_EVENTS_MAX) {
        snprintf(problem, problem_cap,
                 "rewind must be a whole number of events from 0 to %u (the most a topic's "
                 "history.max_events may retain), got \"%.32s\"",
                 LG_HISTORY_MAX_EVENTS_MAX, text);
        return "bad_request";
    }
    p->start = (struct lg_start){.kind = LG_START_REWIND, .rewind = (uint32_t)n};
    p->has_start = true;
    return NULL;
}

const char *lg_subscribe_params_latest(struct lg_subscribe_params *p, char *problem,
                                       size_t problem_cap)
{
    if (p->has_start)
        return start_given_twice(problem, problem_cap);
    p->start = (struct lg_start){.kind = LG_START_LATEST};
    p->has_start = true;
    return NULL;
}

const char *lg_subscribe_params_check_start(const struct lg_subscribe_params *p,
                                            const char *cursor_name, char *problem,
                                            size_t problem_cap)
{
    if (!p->has_start || !p->has_cursor)
        return NULL;
    snprintf(problem, problem_cap,
             "%s and a cursor (%s) cannot be combined: the cursor already says where to start",
             p->start.kind == LG_START_LATEST ? "since=latest" : "rewind", cursor_name);
    return "bad_request";
}

static const char *parse_cursor(struct lg_subscribe_params *p, const char *text, size_t len,
                                char *problem, size_t problem_cap)
{
    if (len == 0)
        return NULL; /* an empty Last-Event-ID means "no cursor" */
    char why[192];
    if (lg_cursor_parse(text, len, &p->cursor, why, sizeof why) != 0) {
        snprintf(problem, problem_cap, "malformed cursor: %s", why);
        return "invalid_cursor";
    }
    p->has_cursor = true;
    return NULL;
}

/* The answer to a parameter lg_query_next() could not decode (rc -1 or -2). */
static const char *undecodable(int rc, char *problem, size_t problem_cap)
{
    if (rc == -2)
        snprintf(problem, problem_cap,
                 "malformed query string: a parameter holds a NUL byte (%%00), which no name, "
                 "topic, cursor or timeout may contain");
    else
        snprintf(problem, problem_cap,
                 "malformed query string: bad %%-escape or a parameter over %d bytes", VALUE_MAX);
    return "bad_request";
}

const char *lg_subscribe_params_check_query(const char *q, size_t len, char *problem,
                                            size_t problem_cap)
{
    char name[32];
    char *value = malloc(VALUE_MAX);
    if (!value) {
        snprintf(problem, problem_cap, "out of memory");
        return "bad_request";
    }
    size_t pos = 0;
    int rc;
    while ((rc = lg_query_next(q, len, &pos, name, sizeof name, value, VALUE_MAX)) > 0) {
    }
    free(value);
    return rc < 0 ? undecodable(rc, problem, problem_cap) : NULL;
}

/* delta=fossil: the one delta format there is. */
static const char *parse_delta(struct lg_subscribe_params *p, const char *value, char *problem,
                               size_t problem_cap)
{
    if (strcmp(value, "fossil") != 0) {
        snprintf(problem, problem_cap, "delta takes only \"fossil\" (the Fossil delta format)");
        return "bad_request";
    }
    p->deltas = true;
    return NULL;
}

const char *lg_subscribe_params_parse(struct lg_subscribe_params *p, const char *q, size_t len,
                                      const char *cursor_param, const char *header,
                                      size_t header_len, uint32_t max_topics, char *problem,
                                      size_t problem_cap)
{
    p->topic_count = 0;
    p->cursor.count = 0;
    p->has_cursor = p->has_timeout = p->has_start = p->deltas = false;
    p->timeout_ms = 0;
    char name[32];
    char *value = malloc(VALUE_MAX);
    if (!value) {
        snprintf(problem, problem_cap, "out of memory");
        return "bad_request";
    }
    const char *code = NULL;
    size_t pos = 0;
    int rc;
    while (!code && (rc = lg_query_next(q, len, &pos, name, sizeof name, value, VALUE_MAX)) != 0) {
        if (rc < 0) {
            code = undecodable(rc, problem, problem_cap);
        } else if (strcmp(name, "topic") == 0) {
            code = lg_subscribe_params_add_topic(p, value, strlen(value), max_topics, problem,
                                                 problem_cap);
        } else if (strcmp(name, "since") == 0 && strcmp(value, "latest") == 0) {
            code = lg_subscribe_params_latest(p, problem, problem_cap);
        } else if (strcmp(name, "rewind") == 0) {
            code = lg_subscribe_params_rewind(p, value, problem, problem_cap);
        } else if (strcmp(name, cursor_param) == 0 && !header) {
            code = parse_cursor(p, value, strlen(value), problem, problem_cap);
        } else if (strcmp(name, "since") == 0 && value[0]) {
            snprintf(problem, problem_cap,
                     "since on this path takes only \"latest\"; a cursor goes in %s",
                     cursor_param);
            code = "bad_request";
        } else if (strcmp(name, "timeout") == 0) {
            code = parse_timeout(p, value, problem, problem_cap);
        } else if (strcmp(name, "delta") == 0) {
            code = parse_delta(p, value, problem, problem_cap);
        }
    }
    free(value);
    if (!code)
        code = lg_subscribe_params_check_start(p, cursor_param, problem, problem_cap);
    if (!code && header) {
        code = parse_cursor(p, header, header_len, problem, problem_cap);
        if (p->has_cursor)
            p->has_start = false; /* the reconnection resumes; the URL's start was the first's */
    }
    return code;
}
