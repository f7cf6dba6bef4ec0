/*
 * topic_glob.h - glob patterns over topic names: the grammar of topic_rules[].match, of a
 * token's subscribe and publish claims, of auth.anonymous_subscribe and metrics.topics, and
 * the match. Pure functions.
 *
 * Owns:    nothing; patterns and names are borrowed for the call.
 * Frees:   nothing.
 * Threads: any.
 * Bounds:  a pattern is 1..LG_TOPIC_GLOB_MAX bytes; one match costs at most
 *          len(pattern) * len(text) steps, no recursion.
 */
#ifndef LG_TOPIC_GLOB_H
#define LG_TOPIC_GLOB_H

#include <stdbool.h>
#include <stddef.h>

#include "topic_name.h"

/* Longest pattern: the bound of a topic name. */
#define LG_TOPIC_GLOB_MAX LG_TOPIC_NAME_MAX

/* '*' matches any run of characters (including '/'), '?' one character. A NULL pattern or
 * text matches nothing. */
bool lg_glob_match(const char *pattern, const char *text);

/* Whether text matches any of the count patterns. */
bool lg_glob_match_any(const char *const *patterns, size_t count, const char *text);

/* Whether the NUL-terminated p holds only bytes of the grammar: topic-name bytes, '*' and '?',
 * and '$' only as its first byte. Return value: true, or false with the offending byte's
 * offset in *bad. The length is not checked. */
bool lg_topic_glob_bytes_ok(const char *p, size_t *bad);

/* Whether p[0..len) (NUL-terminated at len) is a pattern: 1..LG_TOPIC_GLOB_MAX bytes of the
 * grammar above. */
bool lg_topic_pattern_ok(const char *p, size_t len);

#endif
