/*
 * topic_rules.c - the "topic_rules" array: parsing it, printing it, and answering which rule a
 * topic name falls under.
 *
 * DESIGN
 * config.c meets "topic_rules" while it walks a document and hands the array here; this file
 * never reads a file. A rule's values are checked against config.c's settings rows (on_slow
 * as client_queue.on_slow, history keys as history.*) through config_setting.h, so ranges,
 * enum names and messages have one home. Inheritance from the top-level "history" is
 * resolved by lg_topic_rules_resolve() once the whole document is applied, because a rule may
 * come before the "history" it inherits from.
 */
#include "topic_rules.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "config.h"
#include "config_setting.h"
#include "topic_glob.h"

/* ---- Parsing ------------------------------------------------------------------------------- */

void lg_topic_rules_free(struct lg_topic_rule *rules, size_t count)
{
    for (size_t i = 0; i < count; i++)
        free(rules[i].match);
    free(rules);
}

static unsigned rule_history_bit(size_t offset_in_bounds)
{
    if (offset_in_bounds == offsetof(struct lg_history_bounds, max_events))
        return LG_HISTORY_GIVEN_MAX_EVENTS;
    if (offset_in_bounds == offsetof(struct lg_history_bounds, max_bytes))
        return LG_HISTORY_GIVEN_MAX_BYTES;
    return LG_HISTORY_GIVEN_MAX_AGE_MS;
}

/* A rule's "history": any subset of the top-level history keys, with the same ranges. */
static int parse_rule_history(struct lg_topic_rule *rule, const json_t *obj, const char *rule_path,
                              char *err)
{
    char path[LG_PATH_MAX];
    snprintf(path, sizeof(path), "%s.history", rule_path);
    if (!json_is_object(obj)) {
        lg_config__errf(err, "%s: expected an object, got %s", path, lg_config__json_type(obj));
        return -1;
    }
    const char *key;
    size_t key_len;
    json_t *v;
    json_object_keylen_foreach((json_t *)obj, key, key_len, v) {
        char table_key[LG_PATH_MAX];
        const struct lg_setting *s = NULL;
        snprintf(path, sizeof(path), "%s.history.%s", rule_path, key);
        if (key_len == strlen(key) && strchr(key, '.') == NULL) {
            snprintf(table_key, sizeof(table_key), "history.%s", key);
            s = lg_config__find(table_key);
        }
        if (s == NULL) {
            char allowed[LG_CONFIG_ERR_MAX], where[LG_PATH_MAX];
            lg_config__allowed_keys(allowed, sizeof(allowed), "history.");
            snprintf(where, sizeof(where), "%s.history", rule_path);
            return lg_config__unknown_key(err, path, where, allowed);
        }
        size_t off = s->offset - offsetof(struct lg_config, history);
        if (lg_config__apply(s, (char *)&rule->history + off, v, path, err) != 0)
            return -1;
        rule->history_given |= rule_history_bit(off);
    }
    rule->has_history = true;
    return 0;
}

/* A rule's "start" ("now" or "latest") or "rewind" (a count of events): one of the two. */
static int parse_rule_start(struct lg_topic_rule *rule, const char *key, const json_t *v,
                            const char *path, const char *rule_path, char *err)
{
    if (rule->has_start) {
        lg_config__errf(err, "%s: give either \"start\" or \"rewind\", not both", rule_path);
        return -1;
    }
    if (strcmp(key, "rewind") == 0) {
        if (!json_is_integer(v)) {
            lg_config__errf(err, "%s: expected a whole number of events, got %s", path,
                            lg_config__json_type(v));
            return -1;
        }
        if (json_integer_value(v) < 0 ||
            json_integer_value(v) > (json_int_t)LG_HISTORY_MAX_EVENTS_MAX) {
            lg_config__errf(err, "%s: %lld is out of range (allowed 0..%u events, the most "
                            "history.max_events may retain)",
                            path, (long long)json_integer_value(v), LG_HISTORY_MAX_EVENTS_MAX);
            return -1;
        }
        rule->start = (struct lg_start){LG_START_REWIND, (uint32_t)json_integer_value(v)};
    } else {
        const char *name = json_string_value(v);
        if (name == NULL || (strcmp(name, "now") != 0 && strcmp(name, "latest") != 0)) {
            lg_config__errf(err, "%s: expected \"now\" or \"latest\" (for the last N events, "
                            "\"rewind\": N)", path);
            return -1;
        }
        rule->start = (struct lg_start){strcmp(name, "latest") == 0 ? LG_START_LATEST
                                                                     : LG_START_NOW, 0};
    }
    rule->has_start = true;
    return 0;
}

static int parse_rule(struct lg_topic_rule *rule, const json_t *obj, size_t index, char *err)
{
    char rule_path[64], path[LG_PATH_MAX];
    snprintf(rule_path, sizeof(rule_path), "topic_rules[%zu]", index);
    if (!json_is_object(obj)) {
        lg_config__errf(err, "%s: expected an object, got %s", rule_path,
                        lg_config__json_type(obj));
        return -1;
    }
    const char *key;
    size_t key_len;
    json_t *v;
    json_object_keylen_foreach((json_t *)obj, key, key_len, v) {
        snprintf(path, sizeof(path), "%s.%s", rule_path, key);
        if (key_len != strlen(key)) {
            /* an embedded NUL: fall through to the unknown-key message */
        } else if (strcmp(key, "match") == 0) {
            if (!json_is_string(v)) {
                lg_config__errf(err, "%s: expected a string, got %s", path,
                                lg_config__json_type(v));
                return -1;
            }
            size_t len = json_string_length(v), bad;
            if (len < 1 || len > LG_TOPIC_GLOB_MAX) {
                lg_config__errf(err, "%s: a pattern of %zu bytes is out of range (allowed 1..%d "
                                "bytes)", path, len, LG_TOPIC_GLOB_MAX);
                return -1;
            }
            if (!lg_topic_glob_bytes_ok(json_string_value(v), &bad)) {
                unsigned char c = (unsigned char)json_string_value(v)[bad];
                lg_config__errf(err, "%s: byte 0x%02x at offset %zu is not allowed (patterns use "
                                LG_TOPIC_NAME_CHARS ", a leading $, and the wildcards * ?)",
                                path, c, bad);
                return -1;
            }
            char *copy = strdup(json_string_value(v));
            if (copy == NULL) {
                lg_config__errf(err, "%s: out of memory", path);
                return -1;
            }
            free(rule->match);
            rule->match = copy;
            continue;
        } else if (strcmp(key, "on_slow") == 0) {
            unsigned policy;
            if (lg_config__apply(lg_config__find("client_queue.on_slow"), &policy, v, path,
                                 err) != 0)
                return -1;
            rule->on_slow = (enum lg_slow_policy)policy;
            rule->has_on_slow = true;
            continue;
        } else if (strcmp(key, "history") == 0) {
            if (parse_rule_history(rule, v, rule_path, err) != 0)
                return -1;
            continue;
        } else if (strcmp(key, "start") == 0 || strcmp(key, "rewind") == 0) {
            if (parse_rule_start(rule, key, v, path, rule_path, err) != 0)
                return -1;
            continue;
        } else if (strcmp(key, "client_publish") == 0 || strcmp(key, "document") == 0) {
            if (!json_is_boolean(v)) {
                lg_config__errf(err, "%s: expected true or false, got %s", path,
                                lg_config__json_type(v));
                return -1;
            }
            if (strcmp(key, "document") == 0) {
                rule->document = json_is_true(v);
                rule->has_document = true;
            } else {
                rule->client_publish = json_is_true(v);
            }
            continue;
        }
        return lg_config__unknown_key(err, path, rule_path,
                                      "match, on_slow, history, start, rewind, client_publish, "
                                      "document");
    }
    if (rule->match == NULL) {
        lg_config__errf(err, "%s: \"match\" is required (a topic pattern such as \"prices/*\")",
                        rule_path);
        return -1;
    }
    return 0;
}

int lg_topic_rules_parse(const json_t *v, struct lg_topic_rule **rules_out, size_t *count_out,
                         char *err)
{
    if (!json_is_array(v)) {
        lg_config__errf(err, "topic_rules: expected an array, got %s", lg_config__json_type(v));
        return -1;
    }
    size_t count = json_array_size(v);
    if (count > LG_TOPIC_RULES_MAX) {
        lg_config__errf(err, "topic_rules: %zu rules is out of range (allowed 0..%d)", count,
                        LG_TOPIC_RULES_MAX);
        return -1;
    }
    struct lg_topic_rule *rules = NULL;
    if (count > 0 && (rules = calloc(count, sizeof(*rules))) == NULL) {
        lg_config__errf(err, "topic_rules: out of memory");
        return -1;
    }
    for (size_t i = 0; i < count; i++) {
        if (parse_rule(&rules[i], json_array_get(v, i), i, err) != 0) {
            lg_topic_rules_free(rules, count);
            return -1;
        }
    }
    lg_topic_rules_free(*rules_out, *count_out);
    *rules_out = rules;
    *count_out = count;
    return 0;
}

/* A rule's effective bounds: what it set itself, the global "history" for the rest. */
static struct lg_history_bounds rule_history(const struct lg_history_bounds *history,
                                             const struct lg_topic_rule *r)
{
    struct lg_history_bounds h = *history;
    if (r->history_given & LG_HISTORY_GIVEN_MAX_EVENTS)
        h.max_events = r->history.max_events;
    if (r->history_given & LG_HISTORY_GIVEN_MAX_BYTES)
        h.max_bytes = r->history.max_bytes;
    if (r->history_given & LG_HISTORY_GIVEN_MAX_AGE_MS)
        h.max_age_ms = r->history.max_age_ms;
    return h;
}

void lg_topic_rules_resolve(struct lg_topic_rule *rules, size_t count,
                            const struct lg_history_bounds *history)
{
    for (size_t i = 0; i < count; i++)
        rules[i].history = rule_history(history, &rules[i]);
}

/* ---- Printing ------------------------------------------------------------------------------ */

static json_t *history_json(const struct lg_history_bounds *h, unsigned given)
{
    json_t *obj = json_object();
    if (obj == NULL)
        return NULL;
    int rc = 0;
    if (given & LG_HISTORY_GIVEN_MAX_EVENTS)
        rc |= json_object_set_new(obj, "max_events", json_integer(h->max_events));
    if (given & LG_HISTORY_GIVEN_MAX_BYTES)
        rc |= json_object_set_new(obj, "max_bytes", json_integer((json_int_t)h->max_bytes));
    if (given & LG_HISTORY_GIVEN_MAX_AGE_MS)
        rc |= json_object_set_new(obj, "max_age_ms", json_integer((json_int_t)h->max_age_ms));
    if (rc != 0) {
        json_decref(obj);
        return NULL;
    }
    return obj;
}

json_t *lg_topic_rules_json(const struct lg_topic_rule *rules, size_t count)
{
    json_t *arr = json_array();
    for (size_t i = 0; arr != NULL && i < count; i++) {
        const struct lg_topic_rule *r = &rules[i];
        json_t *obj = json_object();
        int rc = json_array_append_new(arr, obj);
        rc |= json_object_set_new(obj, "match", json_string(r->match));
        if (r->has_on_slow)
            rc |= json_object_set_new(obj, "on_slow", json_string(lg_slow_policy_name(r->on_slow)));
        if (r->has_history)
            rc |= json_object_set_new(obj, "history", history_json(&r->history, r->history_given));
        if (r->has_start && r->start.kind == LG_START_REWIND)
            rc |= json_object_set_new(obj, "rewind", json_integer(r->start.rewind));
        else if (r->has_start)
            rc |= json_object_set_new(obj, "start", json_string(r->start.kind == LG_START_LATEST
                                                                     ? "latest"
                                                                     : "now"));
        if (r->client_publish)
            rc |= json_object_set_new(obj, "client_publish", json_true());
        if (r->has_document)
            rc |= json_object_set_new(obj, "document", json_boolean(r->document));
        if (rc != 0) {
            json_decref(arr);
            return NULL;
        }
    }
    return arr;
}

/* ---- Lookups ------------------------------------------------------------------------------- */

const struct lg_topic_rule *lg_topic_rules_first_match(const struct lg_topic_rule *rules,
                                                       size_t count, const char *topic)
{
    for (size_t i = 0; i < count; i++)
        if (lg_glob_match(rules[i].match, topic))
            return &rules[i];
    return NULL;
}

enum lg_slow_policy lg_config_policy_for(const struct lg_config *cfg, const char *topic)
{
    const struct lg_topic_rule *r = lg_topic_rules_first_match(cfg->topic_rules,
                                                               cfg->topic_rule_count, topic);
    return r != NULL && r->has_on_slow ? r->on_slow : cfg->client_queue.on_slow;
}

struct lg_history_bounds lg_config_history_for(const struct lg_config *cfg, const char *topic)
{
    const struct lg_topic_rule *r = lg_topic_rules_first_match(cfg->topic_rules,
                                                               cfg->topic_rule_count, topic);
    return r != NULL ? rule_history(&cfg->history, r) : cfg->history;
}

struct lg_start lg_config_start_for(const struct lg_config *cfg, const char *topic)
{
    const struct lg_topic_rule *r = lg_topic_rules_first_match(cfg->topic_rules,
                                                               cfg->topic_rule_count, topic);
    return r != NULL && r->has_start ? r->start : (struct lg_start){LG_START_NOW, 0};
}

bool lg_config_client_publish_for(const struct lg_config *cfg, const char *topic)
{
    const struct lg_topic_rule *r = lg_topic_rules_first_match(cfg->topic_rules,
                                                               cfg->topic_rule_count, topic);
    return r != NULL && r->client_publish;
}

bool lg_config_document_for(const struct lg_config *cfg, const char *topic)
{
    const struct lg_topic_rule *r = lg_topic_rules_first_match(cfg->topic_rules,
                                                               cfg->topic_rule_count, topic);
    return r != NULL && r->has_document && r->document;
}
