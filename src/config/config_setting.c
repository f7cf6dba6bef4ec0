/*
 * config_setting.c - checking one JSON value against one row of the settings table, and the
 * helpers that word the config loader's messages (config.c and topic_rules.c share them, so a
 * range, a type or an unknown key reads the same wherever it is met).
 */
#include "config_setting.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Messages ------------------------------------------------------------------------------ */

void lg_config__errf(char *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, LG_CONFIG_ERR_MAX, fmt, ap);
    va_end(ap);
}

void lg_config__display(char *out, size_t cap, const char *text)
{
    size_t n = 0;
    for (; text[n] != '\0' && n + 1 < cap && n < 120; n++)
        out[n] = (unsigned char)text[n] < 0x20 || text[n] == 0x7f ? '?' : text[n];
    out[n] = '\0';
    if (text[n] != '\0' && cap > 4 && n >= 3)
        memcpy(out + n - 3, "...", 3);
}

const char *lg_config__json_type(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "object";
    case JSON_ARRAY: return "array";
    case JSON_STRING: return "string";
    case JSON_INTEGER: return "integer";
    case JSON_REAL: return "real";
    case JSON_TRUE:
    case JSON_FALSE: return "boolean";
    case JSON_NULL: return "null";
    }
    return "unknown";
}

/* "a, b, c" of an enum's names, for "is not one of" messages. */
static void lg_config__join_names(char *out, size_t cap, const char *const *names)
{
    size_t len = 0;
    out[0] = '\0';
    for (size_t i = 0; names[i] != NULL && len < cap; i++)
        len += (size_t)snprintf(out + len, cap - len, "%s%s", i ? ", " : "", names[i]);
}

int lg_config__unknown_key(char *err, const char *path, const char *object_name,
                           const char *allowed)
{
    char shown[128];
    lg_config__display(shown, sizeof(shown), path);
    if (object_name[0] == '\0')
        lg_config__errf(err, "%s: unknown key; allowed top-level keys: %s", shown, allowed);
    else
        lg_config__errf(err, "%s: unknown key; allowed keys in %s: %s", shown, object_name,
                        allowed);
    return -1;
}

/* ---- Applying one value ------------------------------------------------------------------ */

void lg_string_list_free(struct lg_string_list *l)
{
    for (size_t i = 0; i < l->count; i++)
        free(l->items[i]);
    free(l->items);
    l->items = NULL;
    l->count = 0;
}

/* An array of strings, each checked; replaces the list whole (or leaves it untouched). */
static int lg_config__apply_list(const struct lg_setting *s, void *field, const json_t *v,
                                 const char *path, char *err)
{
    if (!json_is_array(v)) {
        lg_config__errf(err, "%s: expected an array of strings, got %s", path,
                        lg_config__json_type(v));
        return -1;
    }
    size_t n = json_array_size(v);
    if (n > s->max) {
        lg_config__errf(err, "%s: %zu entries is out of range (allowed 0..%" PRIu64 ")", path, n,
                        s->max);
        return -1;
    }
    struct lg_string_list list = {.items = calloc(n ? n : 1, sizeof(char *)), .count = 0};
    if (list.items == NULL) {
        lg_config__errf(err, "%s: out of memory", path);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        const json_t *item = json_array_get(v, i);
        size_t len = json_is_string(item) ? json_string_length(item) : 0;
        const char *text = json_is_string(item) ? json_string_value(item) : NULL;
        const char *problem = NULL;
        if (text == NULL)
            problem = "expected a string";
        else if (len < 1 || len > LG_LIST_ITEM_MAX || strlen(text) != len)
            problem = "an entry is 1..256 bytes with no NUL";
        else if (s->check != NULL)
            problem = s->check(text, len);
        if (problem == NULL && (list.items[i] = strdup(text)) == NULL)
            problem = "out of memory";
        if (problem != NULL) {
            lg_config__errf(err, "%s[%zu]: %s", path, i, problem);
            lg_string_list_free(&list);
            return -1;
        }
        list.count = i + 1;
    }
    lg_string_list_free(field);
    *(struct lg_string_list *)field = list;
    return 0;
}

int lg_config__apply(const struct lg_setting *s, void *field, const json_t *v, const char *path,
                     char *err)
{
    switch (s->type) {
    case LG_SETTING_U32:
    case LG_SETTING_U64: {
        if (!json_is_integer(v)) {
            lg_config__errf(err, "%s: expected an integer, got %s", path, lg_config__json_type(v));
            return -1;
        }
        json_int_t n = json_integer_value(v);
        if (n < 0 || (uint64_t)n < s->min || (uint64_t)n > s->max) {
            lg_config__errf(err, "%s: %" JSON_INTEGER_FORMAT " is out of range (allowed %" PRIu64
                            "..%" PRIu64 ")", path, n, s->min, s->max);
            return -1;
        }
        if (s->type == LG_SETTING_U32)
            *(uint32_t *)field = (uint32_t)n;
        else
            *(uint64_t *)field = (uint64_t)n;
        return 0;
    }
    case LG_SETTING_BOOL:
        if (!json_is_boolean(v)) {
            lg_config__errf(err, "%s: expected a boolean, got %s", path, lg_config__json_type(v));
            return -1;
        }
        *(bool *)field = json_is_true(v);
        return 0;
    case LG_SETTING_STRING: {
        if (!json_is_string(v)) {
            lg_config__errf(err, "%s: expected a string, got %s", path, lg_config__json_type(v));
            return -1;
        }
        size_t len = json_string_length(v);
        if (len < s->min || len > s->max) {
            lg_config__errf(err, "%s: a string of %zu bytes is out of range (allowed %" PRIu64
                            "..%" PRIu64 " bytes)", path, len, s->min, s->max);
            return -1;
        }
        char *copy = strdup(json_string_value(v));
        if (copy == NULL) {
            lg_config__errf(err, "%s: out of memory", path);
            return -1;
        }
        free(*(char **)field);
        *(char **)field = copy;
        return 0;
    }
    case LG_SETTING_ENUM: {
        char names[160];
        lg_config__join_names(names, sizeof(names), s->names);
        if (!json_is_string(v)) {
            lg_config__errf(err, "%s: expected a string (one of %s), got %s", path, names,
                            lg_config__json_type(v));
            return -1;
        }
        for (unsigned i = 0; s->names[i] != NULL; i++) {
            if (strcmp(s->names[i], json_string_value(v)) == 0) {
                memcpy(field, &i, sizeof(i));
                return 0;
            }
        }
        char shown[64];
        lg_config__display(shown, sizeof(shown), json_string_value(v));
        lg_config__errf(err, "%s: \"%s\" is not one of %s", path, shown, names);
        return -1;
    }
    case LG_SETTING_ADDR: {
        if (!json_is_string(v)) {
            lg_config__errf(err, "%s: expected a string \"HOST:PORT\", got %s", path,
                            lg_config__json_type(v));
            return -1;
        }
        char why[LG_CONFIG_ERR_MAX];
        if (lg_config_parse_addr(json_string_value(v), field, why) != 0) {
            lg_config__errf(err, "%s: %s", path, why);
            return -1;
        }
        return 0;
    }
    case LG_SETTING_LIST:
        return lg_config__apply_list(s, field, v, path, err);
    case LG_SETTING_RULES:
        break;
    }
    lg_config__errf(err, "%s: internal error: setting has no parser", path);
    return -1;
}
