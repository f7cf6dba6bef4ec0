/*
 * topic_rules.h - per-topic overrides of on_slow, history and the start of a subscription
 * without a cursor ("topic_rules" in the config), the mark of a document topic (its events
 * are versions of one document: WebSocket clients may get deltas), and the lookup that gives
 * a new topic its policy, bounds, start and mark. The patterns are topic_glob.h's.
 *
 * Owns:    the rules array and each rule's match string (malloc'd). struct lg_config holds
 *          them (topic_rules, topic_rule_count).
 * Frees:   lg_topic_rules_free(), which lg_config_release() calls; a successful
 *          lg_topic_rules_parse() frees the array it replaces.
 * Threads: parsed, resolved and printed only while the config is built, on the main thread
 *          before any other thread starts. Read-only afterwards: the lookups run on any thread
 *          (a control handler or a worker creating a topic, under the hub's registry write lock)
 *          and take no lock of their own.
 * Bounds:  at most LG_TOPIC_RULES_MAX rules, each pattern 1..LG_TOPIC_NAME_MAX bytes of the
 *          topic-name grammar plus '*' and '?' (topic_glob.h). A lookup scans the rules
 *          once, in order.
 *          Lookups happen when a topic is created, not per event.
 */
#ifndef LG_TOPIC_RULES_H
#define LG_TOPIC_RULES_H

#include <stdbool.h>
#include <stddef.h>

#include "policy.h"

struct lg_config; /* config.h */
struct json_t;    /* jansson's json_t */

/* The most topic rules a file may hold: every new topic scans them once, in order. */
#define LG_TOPIC_RULES_MAX 1024

/* One entry of "topic_rules": the first rule whose glob matches a topic name wins. */
struct lg_topic_rule {
    char *match;                  /* glob: '*' matches any run of characters, '?' one */
    bool has_on_slow;
    enum lg_slow_policy on_slow;
    bool has_history;
    struct lg_history_bounds history; /* effective bounds: fields the rule did not set are
                                       * copied from the global "history" after each load */
    unsigned history_given;           /* LG_HISTORY_GIVEN_* bits: fields the rule set itself */
    bool has_start;
    struct lg_start start;            /* "start": "now" | "latest", or "rewind": N */
    bool client_publish;              /* "client_publish": whoever may subscribe to a matching
                                         topic may also publish to it from a WebSocket */
    bool has_document;
    bool document;                    /* "document": events are versions of one document */
};

/* ---- Lookups (any thread) ---------------------------------------------------------------- */

/* The first of the count rules whose pattern matches topic, or NULL. */
const struct lg_topic_rule *lg_topic_rules_first_match(const struct lg_topic_rule *rules,
                                                       size_t count, const char *topic);

/* The effective policy and history bounds for a topic name. The first rule whose glob
 * matches decides; whatever that rule leaves unset comes from "client_queue.on_slow" and
 * "history" (never from a later rule). No matching rule: the top-level values. */
enum lg_slow_policy lg_config_policy_for(const struct lg_config *cfg, const char *topic);
struct lg_history_bounds lg_config_history_for(const struct lg_config *cfg, const char *topic);
/* Where a subscription the cursor does not name starts: the first matching rule's start, or
 * LG_START_NOW. */
struct lg_start lg_config_start_for(const struct lg_config *cfg, const char *topic);
/* Whether the topic is a document topic: the first matching rule's "document", or false. */
bool lg_config_document_for(const struct lg_config *cfg, const char *topic);

/* Whether the first matching rule sets "client_publish": true (no matching rule: false). */
bool lg_config_client_publish_for(const struct lg_config *cfg, const char *topic);

/* ---- Building (config.c, main thread) ---------------------------------------------------- */

/*
 * Parse v, the value of "topic_rules" in a config document, into a new array. Values are
 * checked against the settings table (a rule's on_slow as client_queue.on_slow, its history
 * keys as history.*) and messages name them "topic_rules[i]...". err holds LG_CONFIG_ERR_MAX
 * bytes. Return value: 0 with *rules and *count replaced (the old array freed), or -1 with
 * err filled and *rules, *count untouched.
 */
int lg_topic_rules_parse(const struct json_t *v, struct lg_topic_rule **rules, size_t *count,
                         char *err);

/* Store every rule's effective bounds: what it set itself, history for the rest. Run after
 * the whole document is applied, so a rule written before "history" inherits the file's
 * value, not the built-in default. */
void lg_topic_rules_resolve(struct lg_topic_rule *rules, size_t count,
                            const struct lg_history_bounds *history);

/* The rules as written (only the fields given), so the output loads back to the same config
 * even if "history" is edited afterwards. Return value: a new JSON array, or NULL when out
 * of memory. */
struct json_t *lg_topic_rules_json(const struct lg_topic_rule *rules, size_t count);

/* Free the array and every match string. NULL with count 0 is fine. */
void lg_topic_rules_free(struct lg_topic_rule *rules, size_t count);

#endif
