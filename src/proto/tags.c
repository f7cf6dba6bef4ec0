/*
 * tags.c - see tags.h. Both grammars are split on their separators first, each piece checked
 * where it stands (so a message can name it), then sorted into the canonical text.
 */
#include "tags.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool tag_char_ok(char ch)
{
    return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
           ch == '_' || ch == '.' || ch == '-';
}

const char *lg_tag_text_problem(const char *s, size_t len)
{
    if (len == 0)
        return "is empty";
    if (len > LG_TAG_TEXT_MAX)
        return "is longer than 64 bytes";
    for (size_t i = 0; i < len; i++)
        if (!tag_char_ok(s[i]))
            return "may only hold A-Z a-z 0-9 _ . -";
    return NULL;
}

/* The piece of s[0..len) from *pos up to the separator sep (consumed) or the end. */
static struct lg_tag_span next_piece(const char *s, size_t len, size_t *pos, char sep)
{
    const char *start = s + *pos;
    const char *end = memchr(start, sep, len - *pos);
    size_t n = end ? (size_t)(end - start) : len - *pos;
    *pos += n + (end != NULL);
    return (struct lg_tag_span){.text = start, .len = (uint16_t)(n > UINT16_MAX ? UINT16_MAX : n)};
}

static int span_cmp(const struct lg_tag_span *a, const struct lg_tag_span *b)
{
    size_t n = a->len < b->len ? a->len : b->len;
    int c = memcmp(a->text, b->text, n);
    return c ? c : (int)a->len - (int)b->len;
}

static bool span_eq(const struct lg_tag_span *a, const char *s, size_t len)
{
    return a->len == len && memcmp(a->text, s, len) == 0;
}

static int tag_cmp(const void *a, const void *b)
{
    return span_cmp(&((const struct lg_tag *)a)->key, &((const struct lg_tag *)b)->key);
}

static int value_cmp(const void *a, const void *b)
{
    return span_cmp(a, b);
}

static char *put_span(char *p, const struct lg_tag_span *s)
{
    memcpy(p, s->text, s->len);
    return p + s->len;
}

/* ---- Tags -------------------------------------------------------------------------------- */

const char *lg_tags_add(struct lg_tags_builder *b, const char *key, size_t key_len,
                        const char *value, size_t value_len, char *problem, size_t cap)
{
    const char *bad = lg_tag_text_problem(key, key_len);
    int shown = key_len > 64 ? 64 : (int)key_len;
    if (bad) {
        snprintf(problem, cap, "tag key \"%.*s\" %s; a key is 1..64 bytes of A-Z a-z 0-9 _ . -",
                 shown, key, bad);
        return problem;
    }
    if ((bad = lg_tag_text_problem(value, value_len)) != NULL) {
        snprintf(problem, cap,
                 "the value of tag \"%.*s\" %s; a value is 1..64 bytes of A-Z a-z 0-9 _ . -",
                 shown, key, bad);
        return problem;
    }
    for (size_t i = 0; i < b->count; i++)
        if (span_eq(&b->tags[i].key, key, key_len)) {
            snprintf(problem, cap, "tag \"%.*s\" is given twice; an event has one value per tag",
                     shown, key);
            return problem;
        }
    if (b->count == LG_TAGS_MAX) {
        snprintf(problem, cap, "more than %d tags; an event carries at most %d", LG_TAGS_MAX,
                 LG_TAGS_MAX);
        return problem;
    }
    b->tags[b->count++] = (struct lg_tag){
        .key = {.text = key, .len = (uint16_t)key_len},
        .value = {.text = value, .len = (uint16_t)value_len}};
    return NULL;
}

size_t lg_tags_canonical(struct lg_tags_builder *b, char *out)
{
    qsort(b->tags, b->count, sizeof b->tags[0], tag_cmp);
    char *p = out;
    for (size_t i = 0; i < b->count; i++) {
        if (i)
            *p++ = ',';
        p = put_span(p, &b->tags[i].key);
        *p++ = ':';
        p = put_span(p, &b->tags[i].value);
    }
    *p = '\0';
    return (size_t)(p - out);
}

int lg_tags_parse(const char *s, size_t len, char *out, size_t *out_len, char *problem,
                  size_t cap)
{
    struct lg_tags_builder b = {.count = 0};
    size_t pos = 0;
    if (len > LG_TAGS_TEXT_MAX) {
        snprintf(problem, cap, "tags are %zu bytes; at most %d tags of 64-byte keys and values fit",
                 len, LG_TAGS_MAX);
        return -1;
    }
    while (pos < len) {
        struct lg_tag_span pair = next_piece(s, len, &pos, ',');
        const char *colon = memchr(pair.text, ':', pair.len);
        if (!colon || pair.len > 2 * LG_TAG_TEXT_MAX + 1) {
            snprintf(problem, cap,
                     "tags: \"%.*s\" is not key:value; write tags as key:value,key:value",
                     pair.len > 64 ? 64 : pair.len, pair.text);
            return -1;
        }
        size_t key_len = (size_t)(colon - pair.text);
        if (lg_tags_add(&b, pair.text, key_len, colon + 1, pair.len - key_len - 1, problem,
                        cap) != NULL)
            return -1;
        if (pos == len && s[len - 1] == ',') {
            snprintf(problem, cap, "tags end with ','; write tags as key:value,key:value");
            return -1;
        }
    }
    *out_len = lg_tags_canonical(&b, out);
    return 0;
}

/* ---- Filters ----------------------------------------------------------------------------- */

/* At most 64 bytes of a piece, in a message. */
static int shown(size_t n)
{
    return n > 64 ? 64 : (int)n;
}

/* One clause "key:v1|v2" into f (values appended to f->values, spans into the input). */
static int parse_clause(struct lg_tag_span clause, struct lg_filter *f, char *problem,
                        size_t cap)
{
    const char *colon = memchr(clause.text, ':', clause.len);
    if (!colon) {
        snprintf(problem, cap,
                 "filter clause \"%.*s\" has no ':'; a clause is key:value or key:value1|value2",
                 shown(clause.len), clause.text);
        return -1;
    }
    size_t key_len = (size_t)(colon - clause.text);
    const char *bad = lg_tag_text_problem(clause.text, key_len);
    if (bad) {
        snprintf(problem, cap, "filter key \"%.*s\" %s; a key is 1..64 bytes of A-Z a-z 0-9 _ . -",
                 shown(key_len), clause.text, bad);
        return -1;
    }
    for (uint8_t i = 0; i < f->clause_count; i++)
        if (span_eq(&f->clauses[i].key, clause.text, key_len)) {
            snprintf(problem, cap,
                     "filter key \"%.*s\" appears twice; give its values in one clause (key:a|b)",
                     shown(key_len), clause.text);
            return -1;
        }
    if (f->clause_count == LG_FILTER_CLAUSES_MAX) {
        snprintf(problem, cap, "a filter has at most %d clauses", LG_FILTER_CLAUSES_MAX);
        return -1;
    }
    struct lg_filter_clause *c = &f->clauses[f->clause_count++];
    c->key = (struct lg_tag_span){.text = clause.text, .len = (uint16_t)key_len};
    c->first_value = f->value_count;
    const char *values = colon + 1;
    size_t values_len = clause.len - key_len - 1, pos = 0;
    do {
        struct lg_tag_span v = next_piece(values, values_len, &pos, '|');
        if ((bad = lg_tag_text_problem(v.text, v.len)) != NULL) {
            snprintf(problem, cap,
                     "a value of filter key \"%.*s\" %s; a value is 1..64 bytes of "
                     "A-Z a-z 0-9 _ . -",
                     (int)key_len, clause.text, bad);
            return -1;
        }
        if (f->value_count == LG_FILTER_VALUES_MAX) {
            snprintf(problem, cap, "a filter has at most %d values in all",
                     LG_FILTER_VALUES_MAX);
            return -1;
        }
        f->values[f->value_count++] = v;
        if (pos == values_len && values[values_len - 1] == '|') {
            snprintf(problem, cap, "filter clause \"%.*s\" ends with '|'", shown(clause.len),
                     clause.text);
            return -1;
        }
    } while (pos < values_len);
    c->value_count = (uint8_t)(f->value_count - c->first_value);
    return 0;
}

static int clause_cmp(const void *a, const void *b)
{
    return span_cmp(&((const struct lg_filter_clause *)a)->key,
                    &((const struct lg_filter_clause *)b)->key);
}

/* Rewrite f (spans into the input) as its canonical text, with spans into f->text. */
static void canonicalize(struct lg_filter *f)
{
    struct lg_tag_span values[LG_FILTER_VALUES_MAX];
    memcpy(values, f->values, sizeof values);
    qsort(f->clauses, f->clause_count, sizeof f->clauses[0], clause_cmp);
    char *p = f->text;
    uint8_t kept = 0;
    for (uint8_t i = 0; i < f->clause_count; i++) {
        struct lg_filter_clause *c = &f->clauses[i];
        struct lg_tag_span *v = values + c->first_value;
        qsort(v, c->value_count, sizeof *v, value_cmp);
        if (i)
            *p++ = ',';
        const char *key = p;
        p = put_span(p, &c->key);
        c->key.text = key;
        *p++ = ':';
        c->first_value = kept;
        for (uint8_t j = 0; j < c->value_count; j++) {
            if (j && span_cmp(&v[j], &v[j - 1]) == 0)
                continue;
            if (kept > c->first_value)
                *p++ = '|';
            f->values[kept] = (struct lg_tag_span){.text = p, .len = v[j].len};
            p = put_span(p, &v[j]);
            kept++;
        }
        c->value_count = (uint8_t)(kept - c->first_value);
    }
    f->value_count = kept;
    *p = '\0';
    f->text_len = (size_t)(p - f->text);
}

int lg_filter_parse(const char *s, size_t len, struct lg_filter *f, char *problem, size_t cap)
{
    f->clause_count = f->value_count = 0;
    f->text_len = 0;
    f->text[0] = '\0';
    if (len == 0) {
        snprintf(problem, cap, "the filter is empty; write key:value clauses joined by ','");
        return -1;
    }
    if (len > LG_FILTER_TEXT_MAX) {
        snprintf(problem, cap, "the filter is %zu bytes; at most %d are allowed", len,
                 LG_FILTER_TEXT_MAX);
        return -1;
    }
    size_t pos = 0;
    while (pos < len) {
        struct lg_tag_span clause = next_piece(s, len, &pos, ',');
        if (parse_clause(clause, f, problem, cap) != 0)
            return -1;
        if (pos == len && s[len - 1] == ',') {
            snprintf(problem, cap,
                     "the filter ends with ','; write key:value clauses joined by ','");
            return -1;
        }
    }
    canonicalize(f);
    return 0;
}

/* The value of tag key in canonical tags text t[0..len), or false when it has none. */
static bool find_tag(const char *t, size_t len, const struct lg_tag_span *key,
                     struct lg_tag_span *value)
{
    size_t pos = 0;
    while (pos < len) {
        struct lg_tag_span pair = next_piece(t, len, &pos, ',');
        if (pair.len > key->len && pair.text[key->len] == ':' &&
            memcmp(pair.text, key->text, key->len) == 0) {
            *value = (struct lg_tag_span){.text = pair.text + key->len + 1,
                                          .len = (uint16_t)(pair.len - key->len - 1)};
            return true;
        }
    }
    return false;
}

bool lg_filter_match(const struct lg_filter *f, const char *tags, size_t len)
{
    for (uint8_t i = 0; i < f->clause_count; i++) {
        const struct lg_filter_clause *c = &f->clauses[i];
        struct lg_tag_span value;
        if (!tags || !find_tag(tags, len, &c->key, &value))
            return false;
        bool any = false;
        for (uint8_t j = 0; j < c->value_count && !any; j++)
            any = span_eq(&f->values[c->first_value + j], value.text, value.len);
        if (!any)
            return false;
    }
    return true;
}
