/*
 * ws_message.c - see ws_message.h.
 */
#include "ws_message.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cursor.h"
#include "encode.h"
#include "json_text.h"
#include "topic_name.h"

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

static const char *parse_subscribe(json_t *msg, uint32_t max_topics,
                                   struct lg_subscribe_params *p, char *problem, size_t cap)
{
    json_t *topics = json_object_get(msg, "topics");
    if (!json_is_array(topics) || json_array_size(topics) == 0)
        return refuse(problem, cap, "bad_message", "subscribe needs \"topics\": a non-empty array");
    p->topic_count = 0;
    p->has_cursor = p->has_start = false;
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

/* ---- publish ---------------------------------------------------------------------------- */

/* An optional string member: absent or null = not given. Return value: NULL, or the problem. */
static const char *optional_string(json_t *msg, const char *name, const char **s, size_t *len,
                                   char *problem, size_t cap)
{
    json_t *v = json_object_get(msg, name);
    *s = NULL;
    *len = 0;
    if (v == NULL || json_is_null(v))
        return NULL;
    if (!json_is_string(v)) {
        snprintf(problem, cap, "publish: \"%s\" must be a string", name);
        return "bad_message";
    }
    *s = json_string_value(v);
    *len = json_string_length(v);
    return NULL;
}

static bool type_char_ok(char ch)
{
    return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
           ch == '_' || ch == '.' || ch == ':' || ch == '/' || ch == '-';
}

static bool type_ok(const char *s, size_t len)
{
    if (len == 0 || len > LG_WS_TYPE_MAX)
        return false;
    for (size_t i = 0; i < len; i++)
        if (!type_char_ok(s[i]))
            return false;
    return true;
}

/* jansson strings are UTF-8 already; a NUL inside one (\u0000) is refused by the parser. */
static bool key_ok(size_t len) { return len >= 1 && len <= LG_WS_KEY_MAX; }

static const char *parse_ref(json_t *msg, struct lg_ws_publish *p, char *problem, size_t cap)
{
    json_t *ref = json_object_get(msg, "ref");
    if (ref == NULL || json_is_null(ref))
        return NULL;
    bool short_string = json_is_string(ref) && json_string_length(ref) <= LG_WS_REF_MAX;
    if (!json_is_integer(ref) && !short_string)
        return refuse(problem, cap, "bad_message",
                      "publish: \"ref\" must be an integer or a string of at most 64 bytes");
    p->ref = ref;
    return NULL;
}

static const char *parse_publish_topic(json_t *msg, struct lg_ws_publish *p, char *problem,
                                       size_t cap)
{
    json_t *topic = json_object_get(msg, "topic");
    if (!json_is_string(topic))
        return refuse(problem, cap, "bad_message", "publish needs \"topic\": a string");
    p->topic = json_string_value(topic);
    p->topic_len = json_string_length(topic);
    int shown = p->topic_len > 128 ? 128 : (int)p->topic_len;
    if (p->topic_len > 0 && p->topic[0] == '$') {
        snprintf(problem, cap, "topic \"%.*s\": names starting with '$' are reserved for the "
                 "gateway", shown, p->topic);
        return "invalid_topic";
    }
    const char *why = lg_topic_name_problem(p->topic, p->topic_len);
    if (why != NULL) {
        snprintf(problem, cap, "invalid topic \"%.*s\": %s", shown, p->topic, why);
        return "invalid_topic";
    }
    return NULL;
}

/* The data as the event carries it: a string's text, anything else as compact JSON with its
 * numbers as sent (the document's text is parsed again by yajl, which keeps them). */
static const char *parse_publish_data(const char *text, size_t len, json_t *msg,
                                      struct lg_ws_publish *p, char *problem, size_t cap)
{
    json_t *data = json_object_get(msg, "data");
    if (data == NULL)
        return refuse(problem, cap, "bad_message", "publish needs \"data\": any JSON value");
    if (json_is_string(data)) {
        p->data = json_string_value(data);
        p->data_len = json_string_length(data);
        return NULL;
    }
    if (lg_json_text_scan(text, len).depth > LG_JSON_DEPTH_MAX)
        return refuse(problem, cap, "bad_message", "publish: \"data\" is nested too deeply");
    char *copy = malloc(len + 1);
    if (copy == NULL)
        return refuse(problem, cap, "unavailable", "out of memory reading the publish");
    memcpy(copy, text, len);
    copy[len] = '\0';
    yajl_val doc = yajl_tree_parse(copy, NULL, 0);
    free(copy);
    const char *path[] = {"data", NULL};
    yajl_val v = doc ? yajl_tree_get(doc, path, yajl_t_any) : NULL;
    p->data_text = v ? lg_json_text_of_tree(v, &p->data_len) : NULL;
    yajl_tree_free(doc);
    if (p->data_text == NULL)
        return refuse(problem, cap, "unavailable", "out of memory reading the publish");
    p->data = p->data_text;
    p->data_is_json = true;
    return NULL;
}

static const char *parse_publish(const char *text, size_t len, json_t *msg,
                                 struct lg_ws_publish *p, char *problem, size_t cap)
{
    const char *code = parse_ref(msg, p, problem, cap);
    if (!code)
        code = parse_publish_topic(msg, p, problem, cap);
    if (!code)
        code = optional_string(msg, "type", &p->type, &p->type_len, problem, cap);
    if (!code && p->type && !type_ok(p->type, p->type_len))
        code = refuse(problem, cap, "bad_message",
                      "publish: \"type\" must be 1..64 bytes of A-Z a-z 0-9 _ . : / -");
    if (!code)
        code = optional_string(msg, "key", &p->key, &p->key_len, problem, cap);
    if (!code && p->key && !key_ok(p->key_len))
        code = refuse(problem, cap, "bad_message", "publish: \"key\" must be 1..256 bytes");
    if (!code)
        code = optional_string(msg, "idempotency_key", &p->idempotency_key,
                               &p->idempotency_key_len, problem, cap);
    if (!code && p->idempotency_key && !key_ok(p->idempotency_key_len))
        code = refuse(problem, cap, "bad_message",
                      "publish: \"idempotency_key\" must be 1..256 bytes");
    return code ? code : parse_publish_data(text, len, msg, p, problem, cap);
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
    else if (strcmp(op, "publish") == 0)
        m->op = LG_WS_OP_PUBLISH;
    else
        return refuse(problem, cap, "unknown_op",
                      "op must be \"subscribe\", \"unsubscribe\", \"publish\", \"auth\", "
                      "\"refresh\" or \"ping\"");
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
    if (m->op == LG_WS_OP_PUBLISH)
        return parse_publish(text, len, m->doc, &m->publish, problem, problem_cap);
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
    free(m->publish.data_text);
    m->publish = (struct lg_ws_publish){0};
    json_decref(m->doc);
    m->doc = NULL;
    m->topics = NULL;
    m->token = NULL;
}
