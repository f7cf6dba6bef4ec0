/*
 * ws_message.c - see ws_message.h.
 */
#include "ws_message.h"

#include <stdio.h>
#include <string.h>

#include "cursor.h"

static const char *refuse(char *problem, size_t cap, const char *code, const char *text)
{
    snprintf(problem, cap, "%s", text);
    return code;
}

static const char *parse_since(json_t *since, struct lg_subscribe_params *p, char *problem,
                               size_t cap)
{
    if (since == NULL || json_is_null(since) ||
        (json_is_string(since) && json_string_length(since) == 0))
        return NULL;
    if (!json_is_string(since))
        return refuse(problem, cap, "bad_message",
                      "\"since\" must be a cursor string or \"latest\"");
    if (strcmp(json_string_value(since), "latest") == 0)
        return lg_subscribe_params_latest(p, problem, cap);
    char why[192];
    if (lg_cursor_parse(json_string_value(since), json_string_length(since), &p->cursor, why,
                        sizeof why) != 0) {
        snprintf(problem, cap, "malformed cursor: %s", why);
        return "invalid_cursor";
    }
    p->has_cursor = true;
    return NULL;
}

static const char *parse_rewind(json_t *rewind, struct lg_subscribe_params *p, char *problem,
                                size_t cap)
{
    if (rewind == NULL || json_is_null(rewind))
        return NULL;
    if (!json_is_integer(rewind) || json_integer_value(rewind) < 0 ||
        json_integer_value(rewind) > (json_int_t)LG_HISTORY_MAX_EVENTS_MAX) {
        snprintf(problem, cap,
                 "\"rewind\" must be a whole number of events from 0 to %u (the most a "
                 "topic's history.max_events may retain)",
                 LG_HISTORY_MAX_EVENTS_MAX);
        return "bad_request";
    }
    char text[16];
    snprintf(text, sizeof text, "%lld", (long long)json_integer_value(rewind));
    return lg_subscribe_params_rewind(p, text, problem, cap);
}

static const char *parse_filter(json_t *filter, struct lg_subscribe_params *p, char *problem,
                                size_t cap)
{
    if (filter == NULL || json_is_null(filter))
        return NULL;
    if (!json_is_string(filter))
        return refuse(problem, cap, "invalid_filter",
                      "\"filter\" must be a string such as \"region:eu,kind:a|b\"");
    return lg_subscribe_params_filter(p, json_string_value(filter), json_string_length(filter),
                                      problem, cap);
}

static const char *parse_subscribe(json_t *msg, uint32_t max_topics,
                                   struct lg_subscribe_params *p, char *problem, size_t cap)
{
    json_t *topics = json_object_get(msg, "topics");
    if (!json_is_array(topics) || json_array_size(topics) == 0)
        return refuse(problem, cap, "bad_message", "subscribe needs \"topics\": a non-empty array");
    p->topic_count = 0;
    p->has_cursor = p->has_start = p->has_filter = false;
    size_t i;
    json_t *t;
    json_array_foreach(topics, i, t) {
        if (!json_is_string(t))
            return refuse(problem, cap, "bad_message", "every entry of \"topics\" must be a string");
        const char *code = lg_subscribe_params_add_topic(p, json_string_value(t),
                                                         json_string_length(t), max_topics,
                                                         problem, cap);
        if (code)
            return code;
    }
    const char *code = parse_since(json_object_get(msg, "since"), p, problem, cap);
    if (!code)
        code = parse_rewind(json_object_get(msg, "rewind"), p, problem, cap);
    if (!code)
        code = parse_filter(json_object_get(msg, "filter"), p, problem, cap);
    return code ? code : lg_subscribe_params_check_start(p, "since", problem, cap);
}

static const char *parse_unsubscribe(struct lg_ws_message *m, char *problem, size_t cap)
{
    json_t *topics = json_object_get(m->doc, "topics");
    if (!json_is_array(topics))
        return refuse(problem, cap, "bad_message", "unsubscribe needs \"topics\": an array");
    size_t i;
    json_t *t;
    json_array_foreach(topics, i, t) {
        if (!json_is_string(t))
            return refuse(problem, cap, "bad_message", "every entry of \"topics\" must be a string");
    }
    m->topics = topics;
    return NULL;
}

static const char *parse_op(struct lg_ws_message *m, bool *malformed, char *problem, size_t cap)
{
    const char *op = json_string_value(json_object_get(m->doc, "op"));
    *malformed = true;
    if (op == NULL)
        return refuse(problem, cap, "bad_message", "a control message needs \"op\": a string");
    if (strcmp(op, "subscribe") == 0)
        m->op = LG_WS_OP_SUBSCRIBE;
    else if (strcmp(op, "unsubscribe") == 0)
        m->op = LG_WS_OP_UNSUBSCRIBE;
    else if (strcmp(op, "ping") == 0)
        m->op = LG_WS_OP_PING;
    else if (strcmp(op, "auth") == 0 || strcmp(op, "refresh") == 0)
        m->op = LG_WS_OP_AUTH;
    else
        return refuse(problem, cap, "unknown_op",
                      "op must be \"subscribe\", \"unsubscribe\", \"auth\", \"refresh\" or "
                      "\"ping\"");
    *malformed = false;
    return NULL;
}

const char *lg_ws_message_parse(const char *text, size_t len, uint32_t max_topics,
                                struct lg_ws_message *m, struct lg_subscribe_params *params,
                                bool *malformed, char *problem, size_t problem_cap)
{
    memset(m, 0, sizeof *m);
    *malformed = true;
    json_error_t jerr;
    m->doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (m->doc == NULL) {
        snprintf(problem, problem_cap, "invalid JSON at column %d: %s", jerr.column, jerr.text);
        return "bad_message";
    }
    if (!json_is_object(m->doc))
        return refuse(problem, problem_cap, "bad_message",
                      "a control message must be a JSON object");
    const char *code = parse_op(m, malformed, problem, problem_cap);
    if (code != NULL)
        return code;
    if (m->op == LG_WS_OP_SUBSCRIBE)
        return parse_subscribe(m->doc, max_topics, params, problem, problem_cap);
    if (m->op == LG_WS_OP_UNSUBSCRIBE)
        return parse_unsubscribe(m, problem, problem_cap);
    if (m->op == LG_WS_OP_AUTH) {
        m->token = json_object_get(m->doc, "token");
        if (!json_is_string(m->token))
            return refuse(problem, problem_cap, "bad_message",
                          "auth and refresh need \"token\": a string");
    }
    return NULL;
}

void lg_ws_message_release(struct lg_ws_message *m)
{
    json_decref(m->doc);
    m->doc = NULL;
    m->topics = NULL;
    m->token = NULL;
}
