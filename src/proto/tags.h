/*
 * tags.h - an event's tags and the filter expressions that select events by them, as pure
 * functions over bytes (docs/protocol.md, "Tags and filters").
 *
 *   tags    "key:value,key:value"   at most LG_TAGS_MAX pairs, each key once
 *   filter  "key:v1|v2,key:v"       a conjunction of clauses; a clause holds when the event's
 *                                   tag `key` equals one of its values (an event without the
 *                                   tag never matches that clause)
 *
 * Keys and values are 1..LG_TAG_TEXT_MAX bytes of A-Z a-z 0-9 _ . - (URL-safe, no escaping).
 * Both have a canonical text: pairs (clauses) sorted by key, a clause's values sorted and
 * deduplicated. An event carries its tags' canonical text; filters are compared (interned) by
 * theirs, so "b:2,a:1" and "a:1,b:2" are one filter.
 *
 * Owns:    nothing; results go into the caller's buffers.
 * Frees:   nothing.
 * Threads: any; no state.
 * Bounds:  tags: LG_TAGS_MAX pairs, canonical text at most LG_TAGS_TEXT_MAX bytes. Filters:
 *          LG_FILTER_TEXT_MAX bytes of text, LG_FILTER_CLAUSES_MAX clauses, LG_FILTER_VALUES_MAX
 *          values in all; a match costs at most clauses x tags comparisons.
 */
#ifndef LG_TAGS_H
#define LG_TAGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LG_TAG_TEXT_MAX 64      /* bytes of one key or value */
#define LG_TAGS_MAX 16          /* tags per event */
#define LG_TAGS_TEXT_MAX (LG_TAGS_MAX * (2 * LG_TAG_TEXT_MAX + 2))
#define LG_FILTER_TEXT_MAX 256  /* bytes of a filter expression (decoded) */
#define LG_FILTER_CLAUSES_MAX 8
#define LG_FILTER_VALUES_MAX 32 /* values over all clauses */

/* One key:value pair, or one clause's key and its values, pointing into a text. */
struct lg_tag_span {
    const char *text;
    uint16_t len;
};
struct lg_tag {
    struct lg_tag_span key, value;
};
struct lg_filter_clause {
    struct lg_tag_span key;
    uint8_t first_value, value_count; /* values[first_value ..] of the filter */
};

/* A parsed filter; its spans point into `text` (its canonical form), so it must not be
 * copied bytewise once parsed (lg_filter_parse() again instead). */
struct lg_filter {
    char text[LG_FILTER_TEXT_MAX + 1];
    size_t text_len;
    struct lg_filter_clause clauses[LG_FILTER_CLAUSES_MAX];
    uint8_t clause_count;
    struct lg_tag_span values[LG_FILTER_VALUES_MAX];
    uint8_t value_count;
};

/* Whether s[0..len) is a valid key or value. Return value: NULL, or what is wrong with it. */
const char *lg_tag_text_problem(const char *s, size_t len);

/* A tag set being built from pairs (the batch publish's "tags" object). */
struct lg_tags_builder {
    struct lg_tag tags[LG_TAGS_MAX];
    size_t count;
};

/* Add key:value (borrowed: the bytes must outlive the builder). Return value: NULL, or what
 * is wrong (a bad key or value, a key given twice, more than LG_TAGS_MAX tags) in problem. */
const char *lg_tags_add(struct lg_tags_builder *b, const char *key, size_t key_len,
                        const char *value, size_t value_len, char *problem, size_t cap);

/* The canonical text of b into out (room for LG_TAGS_TEXT_MAX + 1 bytes, NUL-terminated).
 * Return value: its length (0 for no tags). */
size_t lg_tags_canonical(struct lg_tags_builder *b, char *out);

/* Parse tags text s[0..len) ("key:value,..."): the canonical text into out (room for
 * LG_TAGS_TEXT_MAX + 1 bytes). Return value: 0 with *out_len set, or -1 with a message in
 * problem. */
int lg_tags_parse(const char *s, size_t len, char *out, size_t *out_len, char *problem,
                  size_t cap);

/* Parse filter text s[0..len) into f (canonical text and clauses). Return value: 0, or -1 with
 * a message saying what is wrong (and where) in problem. */
int lg_filter_parse(const char *s, size_t len, struct lg_filter *f, char *problem, size_t cap);

/* Whether an event with canonical tags text tags[0..len) (NULL/0 = no tags) matches f. */
bool lg_filter_match(const struct lg_filter *f, const char *tags, size_t len);

#endif
