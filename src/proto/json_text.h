/*
 * json_text.h - a publisher's JSON carried as text. The gateway must not change a payload, and a
 * JSON library that decodes numbers into int64/double rounds, refuses or flushes to zero what
 * they cannot hold and merges duplicate keys. So JSON data is checked by yajl's validating
 * parser, which never converts a number, and passed on as the same text less the whitespace
 * between tokens (one line, as SSE needs): every digit, key order, duplicate key and string
 * escape kept. Batch items are parsed into yajl trees (numbers keep their text) and their data
 * re-emitted compactly: numbers and keys exactly, strings as equal values (escapes may be
 * normalised).
 *
 * Owns:    nothing between calls. Frees: the caller frees what lg_json_text_of_tree() returns.
 * Threads: any; no shared state.
 * Bounds:  LG_JSON_DEPTH_MAX levels of nesting (deeper is refused: the tree and its walk
 *          recurse, and so do many clients' parsers); no other bound than the input's length.
 */
#ifndef LG_JSON_TEXT_H
#define LG_JSON_TEXT_H

#include <stdbool.h>
#include <stddef.h>

#include <yajl/yajl_tree.h>

#define LG_JSON_DEPTH_MAX 512

enum lg_json_text_result {
    LG_JSON_TEXT_OK = 0,
    LG_JSON_TEXT_INVALID,   /* not exactly one JSON value (why says where) */
    LG_JSON_TEXT_TOO_DEEP,  /* nested deeper than LG_JSON_DEPTH_MAX */
    LG_JSON_TEXT_NO_MEMORY,
};

/* What a scan of the text without parsing it tells: meaningful for valid JSON, a cheap guard
 * before building a tree. */
struct lg_json_text_shape {
    size_t depth;     /* deepest nesting of [ and {; the scan stops once past LG_JSON_DEPTH_MAX */
    bool nul_escape;  /* a string holds \u0000, which a yajl tree (C strings) cannot keep */
};
struct lg_json_text_shape lg_json_text_scan(const char *text, size_t len);

/*
 * Validate text[0..len) as exactly one JSON value and copy it to out (room for len bytes)
 * without the whitespace between tokens. Return value: LG_JSON_TEXT_OK with *out_len set, or
 * why not, with a one-line reason (byte offset included) in why[0..why_cap).
 */
enum lg_json_text_result lg_json_text_compact(const char *text, size_t len, char *out,
                                              size_t *out_len, char *why, size_t why_cap);

/* Compact JSON text of a yajl tree's value (numbers as their original text).
 * Return value: new malloc'd NUL-terminated text with *len set, or NULL when out of memory. */
char *lg_json_text_of_tree(yajl_val v, size_t *len);

#endif
