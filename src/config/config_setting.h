/*
 * config_setting.h - one row of the settings table, checking a JSON value against it, and the
 * wording of the config loader's messages. Internal to the loader: config_table.c (which
 * holds the table), config.c (which reads the file) and topic_rules.c (which parses the
 * "topic_rules" array it is handed) include it; no other module does.
 *
 * Owns:    nothing. Rows are static const data in config_table.c; a checked value is stored in a
 *          field the caller owns (a string setting's old value is freed when replaced).
 * Frees:   nothing to free; err is a caller's buffer of LG_CONFIG_ERR_MAX bytes.
 * Threads: used only while a config is built, on the main thread before any other starts.
 *          The functions keep no state, so they would be safe on any thread.
 * Bounds:  each row's [min, max] (numbers) or length range (strings); key paths are built in
 *          buffers of LG_PATH_MAX bytes and messages are cut at LG_CONFIG_ERR_MAX bytes.
 */
#ifndef LG_CONFIG_SETTING_H
#define LG_CONFIG_SETTING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "config.h"

enum lg_setting_type {
    LG_SETTING_U32,
    LG_SETTING_U64,
    LG_SETTING_STRING, /* char *, malloc'd; min/max bound the length in bytes */
    LG_SETTING_ENUM,   /* a C enum stored as unsigned int; names[] indexed by value */
    LG_SETTING_BOOL,
    LG_SETTING_ADDR,   /* struct lg_listen_addr, written "HOST:PORT" */
    LG_SETTING_RULES,  /* the topic_rules array (its own parser; offset unused) */
    LG_SETTING_LIST,   /* struct lg_string_list: an array of at most `max` strings, each
                        * 1..LG_LIST_ITEM_MAX bytes; `names` unused. Items are checked by
                        * `check` when set (topic patterns, origins) */
};

/* Check one item of a LIST setting. Return value: NULL, or why it is refused. */
typedef const char *lg_list_item_check(const char *item, size_t len);

/* Enums are written through an unsigned int; GCC and Clang give these enums that layout. */
_Static_assert(sizeof(enum lg_slow_policy) == sizeof(unsigned), "enum lg_slow_policy size");
_Static_assert(sizeof(enum lg_log_level) == sizeof(unsigned), "enum lg_log_level size");
_Static_assert(sizeof(enum lg_log_format) == sizeof(unsigned), "enum lg_log_format size");

struct lg_setting {
    const char *key;           /* dotted path in the JSON document */
    enum lg_setting_type type;
    size_t offset;             /* into struct lg_config */
    uint64_t min, max;         /* numbers: value range; strings: length range */
    uint64_t def;              /* numbers, enums and bools */
    const char *def_text;      /* strings and addresses */
    const char *const *names;  /* enums: NULL-terminated, indexed by the enum value */
    const char *doc;           /* one line, the same words as docs/configuration.md */
    lg_list_item_check *check; /* LIST: each item's check (NULL = any non-empty string) */
    bool live;                 /* a SIGHUP reload may change it (docs/operations.md "Reload") */
};

/* Longest key path we build, e.g. "topic_rules[1023].history.max_events" or a user's typo. */
#define LG_PATH_MAX 256

/* ---- The table (config_table.c) ------------------------------------------------------------------ */

/* Every row, in table order (config_table.c); *count of them. */
const struct lg_setting *lg_config__settings(size_t *count);
/* True when some setting lives below key, i.e. key names an object such as "limits". */
bool lg_config__is_object(const char *key);

/* The row whose key is exactly key (a dotted path such as "history.max_events"), or NULL. */
const struct lg_setting *lg_config__find(const char *key);

/* The keys allowed directly inside the object at prefix ("" = top level, else "limits."),
 * in table order, each once, as "a, b, c" in out (cut at cap bytes). */
void lg_config__allowed_keys(char *out, size_t cap, const char *prefix);

/* ---- Values and messages (config_setting.c) ------------------------------------------------ */

/* Check v against s and store it at field. path is what messages call it (it differs from
 * s->key inside topic_rules). Return value: 0, or -1 with err filled and field untouched. */
int lg_config__apply(const struct lg_setting *s, void *field, const json_t *v, const char *path,
                     char *err);

/* Free a LIST setting's strings and empty it. */
void lg_string_list_free(struct lg_string_list *l);

/* vsnprintf into err (LG_CONFIG_ERR_MAX bytes). */
void lg_config__errf(char *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Copy a key the user wrote into a message-safe form: control bytes become '?', so a key
 * cannot forge extra log lines, and the length is capped so the allowed-key list still fits. */
void lg_config__display(char *out, size_t cap, const char *text);

/* The JSON type of v as messages name it: "object", "array", "string", "integer", ... */
const char *lg_config__json_type(const json_t *v);

/* Fill err with "<path>: unknown key; allowed keys in <object_name>: <allowed>" (or "allowed
 * top-level keys" when object_name is ""), path made message-safe. Returns -1. */
int lg_config__unknown_key(char *err, const char *path, const char *object_name,
                           const char *allowed);

#endif
