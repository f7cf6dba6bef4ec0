/* json_text.c - a publisher's JSON carried as text (json_text.h says why and what is kept). */
#include "json_text.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yajl/yajl_parse.h>

#include "encode.h"

static bool is_json_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static bool is_nul_escape(const char *text, size_t len, size_t i)
{
    return i + 5 < len && text[i + 1] == 'u' && memcmp(text + i + 2, "0000", 4) == 0;
}

struct lg_json_text_shape lg_json_text_scan(const char *text, size_t len)
{
    struct lg_json_text_shape shape = {0};
    size_t depth = 0;
    bool in_string = false, escaped = false;
    for (size_t i = 0; i < len && shape.depth <= LG_JSON_DEPTH_MAX; i++) {
        char c = text[i];
        if (in_string) {
            if (escaped)
                escaped = false;
            else if (c == '\\') {
                escaped = true;
                shape.nul_escape |= is_nul_escape(text, len, i);
            } else if (c == '"')
                in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            if (++depth > shape.depth)
                shape.depth = depth;
        } else if ((c == ']' || c == '}') && depth > 0) {
            depth--;
        }
    }
    return shape;
}

/* yajl's own message for the error, on one line, and the byte where parsing stopped. */
static void describe_error(yajl_handle h, const char *text, size_t len, size_t at, char *why,
                           size_t why_cap)
{
    unsigned char *msg = yajl_get_error(h, 0, (const unsigned char *)text, len);
    const char *m = msg ? (const char *)msg : "parse error";
    size_t n = strlen(m);
    while (n > 0 && (m[n - 1] == '\n' || m[n - 1] == ' '))
        n--;
    snprintf(why, why_cap, "%.*s near byte %zu", (int)n, m, at);
    yajl_free_error(h, msg);
}

static bool validates(const char *text, size_t len, char *why, size_t why_cap)
{
    yajl_handle h = yajl_alloc(NULL, NULL, NULL);
    if (h == NULL) {
        snprintf(why, why_cap, "out of memory");
        return false;
    }
    yajl_status st = yajl_parse(h, (const unsigned char *)text, len);
    size_t at = yajl_get_bytes_consumed(h);
    if (st == yajl_status_ok) {
        st = yajl_complete_parse(h);
        at = len; /* the text ended too soon */
    }
    if (st != yajl_status_ok)
        describe_error(h, text, len, at, why, why_cap);
    yajl_free(h);
    return st == yajl_status_ok;
}

/* text is valid JSON, so a '"' outside a string opens one and an unescaped '"' closes it. */
static size_t copy_without_space(const char *text, size_t len, char *out)
{
    size_t n = 0;
    bool in_string = false, escaped = false;
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        if (in_string) {
            if (escaped)
                escaped = false;
            else if (c == '\\')
                escaped = true;
            else if (c == '"')
                in_string = false;
        } else if (is_json_space(c)) {
            continue;
        } else if (c == '"') {
            in_string = true;
        }
        out[n++] = c;
    }
    return n;
}

enum lg_json_text_result lg_json_text_compact(const char *text, size_t len, char *out,
                                              size_t *out_len, char *why, size_t why_cap)
{
    if (lg_json_text_scan(text, len).depth > LG_JSON_DEPTH_MAX) {
        snprintf(why, why_cap, "nested deeper than %d levels", LG_JSON_DEPTH_MAX);
        return LG_JSON_TEXT_TOO_DEEP;
    }
    if (!validates(text, len, why, why_cap))
        return strcmp(why, "out of memory") == 0 ? LG_JSON_TEXT_NO_MEMORY : LG_JSON_TEXT_INVALID;
    *out_len = copy_without_space(text, len, out);
    return LG_JSON_TEXT_OK;
}

static void emit(struct lg_buf *b, yajl_val v)
{
    if (YAJL_IS_STRING(v)) {
        lg_encode_json_string(b, v->u.string, strlen(v->u.string));
    } else if (YAJL_IS_NUMBER(v)) {
        lg_buf_append_str(b, v->u.number.r);
    } else if (YAJL_IS_OBJECT(v)) {
        lg_buf_append(b, "{", 1);
        for (size_t i = 0; i < v->u.object.len; i++) {
            if (i)
                lg_buf_append(b, ",", 1);
            lg_encode_json_string(b, v->u.object.keys[i], strlen(v->u.object.keys[i]));
            lg_buf_append(b, ":", 1);
            emit(b, v->u.object.values[i]);
        }
        lg_buf_append(b, "}", 1);
    } else if (YAJL_IS_ARRAY(v)) {
        lg_buf_append(b, "[", 1);
        for (size_t i = 0; i < v->u.array.len; i++) {
            if (i)
                lg_buf_append(b, ",", 1);
            emit(b, v->u.array.values[i]);
        }
        lg_buf_append(b, "]", 1);
    } else {
        lg_buf_append_str(b, YAJL_IS_TRUE(v) ? "true" : YAJL_IS_FALSE(v) ? "false" : "null");
    }
}

char *lg_json_text_of_tree(yajl_val v, size_t *len)
{
    struct lg_buf b;
    lg_buf_init(&b);
    emit(&b, v);
    lg_buf_append(&b, "", 1); /* the NUL */
    if (b.oom) {
        lg_buf_release(&b);
        return NULL;
    }
    *len = b.len - 1;
    return b.data;
}
