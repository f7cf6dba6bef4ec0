#include "encode.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- struct lg_buf ------------------------------------------------------------------------ */

/* The contents are kept NUL-terminated (data[len] == '\0' once anything was appended), so a
 * buffer of text can be handed to string functions and printed by tests without a copy. */

void lg_buf_init(struct lg_buf *b)
{
    *b = (struct lg_buf){0};
}

void lg_buf_release(struct lg_buf *b)
{
    free(b->data);
    lg_buf_init(b);
}

void lg_buf_reset(struct lg_buf *b)
{
    b->len = 0;
    b->oom = false; /* nothing truncated is left, so the buffer is usable again */
    if (b->data)
        b->data[0] = '\0';
}

/*
 * Make room for n more bytes plus the terminating NUL.
 * Return value: true when the room is there; false (with b->oom set) when the buffer already
 * failed, the size would overflow, or realloc failed. The old contents are kept either way.
 */
static bool buf_grow(struct lg_buf *b, size_t n)
{
    if (b->oom)
        return false;
    if (n < b->cap - b->len)
        return true;
    if (n >= SIZE_MAX / 2 - b->len) {
        b->oom = true;
        return false;
    }
    size_t need = b->len + n + 1;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need)
        cap *= 2;
    char *data = realloc(b->data, cap);
    if (!data) {
        b->oom = true;
        return false;
    }
    b->data = data;
    b->cap = cap;
    return true;
}

/* p == NULL appends n bytes left for the caller to fill in (e.g. read(2) straight into the
 * buffer at its old length), after checking b->oom. */
void lg_buf_reserve(struct lg_buf *b, size_t n)
{
    buf_grow(b, n);
}

void lg_buf_append(struct lg_buf *b, const void *p, size_t n)
{
    if (n == 0 || !buf_grow(b, n))
        return;
    if (p)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void lg_buf_append_str(struct lg_buf *b, const char *s)
{
    lg_buf_append(b, s, strlen(s));
}

size_t lg_format_u64(char out[LG_U64_DIGITS_MAX], uint64_t v)
{
    char digits[LG_U64_DIGITS_MAX];
    size_t i = sizeof digits;
    do {
        digits[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    memcpy(out, digits + i, sizeof digits - i);
    return sizeof digits - i;
}

void lg_format_hex32(char out[8], uint32_t v)
{
    static const char hex[] = "0123456789abcdef";
    for (int i = 7; i >= 0; i--, v >>= 4)
        out[i] = hex[v & 0xf];
}

void lg_buf_append_u64(struct lg_buf *b, uint64_t v)
{
    char digits[LG_U64_DIGITS_MAX];
    lg_buf_append(b, digits, lg_format_u64(digits, v));
}

void lg_buf_appendf(struct lg_buf *b, const char *fmt, ...)
{
    if (b->oom)
        return;
    /* First try the room already there: most formats are short and fit. */
    size_t room = b->cap - b->len;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->data ? b->data + b->len : NULL, room, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->oom = true;
        return;
    }
    if ((size_t)n >= room) {
        if (!buf_grow(b, (size_t)n))
            return;
        va_start(ap, fmt);
        vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
    }
    b->len += (size_t)n;
}

/* ---- Wire encodings ----------------------------------------------------------------------- */

static void sse_data_line(struct lg_buf *b, const char *line, size_t len)
{
    lg_buf_append(b, "data: ", 6);
    lg_buf_append(b, line, len);
    lg_buf_append(b, "\n", 1);
}

void lg_encode_sse_data(struct lg_buf *b, const char *data, size_t len)
{
    if (len == 0) {
        sse_data_line(b, "", 0);
        return;
    }
    size_t start = 0;
    for (size_t i = 0; i < len; i++) {
        if (data[i] != '\r' && data[i] != '\n')
            continue;
        sse_data_line(b, data + start, i - start);
        if (data[i] == '\r' && i + 1 < len && data[i + 1] == '\n')
            i++; /* CRLF is one line end, not two */
        start = i + 1;
    }
    /* Whatever follows the last line end is a line too, even when empty: the browser joins
     * the lines with LF, so "a\n" must come back as "a\n", not "a". */
    sse_data_line(b, data + start, len - start);
}

size_t lg_sse_data_len(const char *data, size_t len)
{
    static const size_t per_line = 6 + 1; /* "data: " and "\n" */
    size_t lines = 1, ends = 0;         /* ends: line-end bytes, which are not copied */
    for (size_t i = 0; i < len; i++) {
        if (data[i] != '\r' && data[i] != '\n')
            continue;
        ends++;
        if (data[i] == '\r' && i + 1 < len && data[i + 1] == '\n') {
            i++; /* CRLF is one line end, not two */
            ends++;
        }
        lines++;
    }
    return len - ends + lines * per_line;
}

size_t lg_json_string_len(const char *s, size_t len)
{
    size_t n = len + 2; /* the quotes */
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        bool short_form = c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' ||
                          c == '\r' || c == '\t';
        n += short_form ? 1 : 5; /* "\n" for one byte, or "\u00XX" */
    }
    return n;
}

void lg_encode_json_string(struct lg_buf *b, const char *s, size_t len)
{
    static const char hex[] = "0123456789abcdef";

    lg_buf_append(b, "\"", 1);
    size_t run = 0; /* start of the bytes that need no escaping, appended in one go */
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        lg_buf_append(b, s + run, i - run);
        run = i + 1;
        switch (c) {
        case '"':
            lg_buf_append(b, "\\\"", 2);
            break;
        case '\\':
            lg_buf_append(b, "\\\\", 2);
            break;
        case '\b':
            lg_buf_append(b, "\\b", 2);
            break;
        case '\f':
            lg_buf_append(b, "\\f", 2);
            break;
        case '\n':
            lg_buf_append(b, "\\n", 2);
            break;
        case '\r':
            lg_buf_append(b, "\\r", 2);
            break;
        case '\t':
            lg_buf_append(b, "\\t", 2);
            break;
        default: {
            char u[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 0xf]};
            lg_buf_append(b, u, sizeof u);
        }
        }
    }
    lg_buf_append(b, s + run, len - run);
    lg_buf_append(b, "\"", 1);
}

size_t lg_ws_header_len(size_t payload_len)
{
    if (payload_len < 126)
        return 2;
    if (payload_len <= 0xffff)
        return 4;
    return 10;
}

size_t lg_ws_write_header(unsigned char *out, size_t payload_len, unsigned opcode)
{
    out[0] = (unsigned char)(0x80 | (opcode & 0x0f)); /* FIN: every frame is a whole message */
    if (payload_len < 126) {
        out[1] = (unsigned char)payload_len;
        return 2;
    }
    if (payload_len <= 0xffff) {
        out[1] = 126;
        out[2] = (unsigned char)(payload_len >> 8);
        out[3] = (unsigned char)payload_len;
        return 4;
    }
    out[1] = 127;
    uint64_t n = payload_len;
    for (int i = 0; i < 8; i++)
        out[2 + i] = (unsigned char)(n >> (56 - 8 * i));
    return 10;
}

/* Unicode 15, table 3-7 (well-formed UTF-8 byte sequences): the lead byte fixes the length and
 * the allowed range of the second byte, which is where overlongs, surrogates and code points
 * above U+10FFFF are excluded; every later byte is a plain continuation byte. */
bool lg_utf8_valid(const char *str, size_t len)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    while (i < len) {
        unsigned char c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t more;
        unsigned char lo = 0x80, hi = 0xbf;
        if (c >= 0xc2 && c <= 0xdf) {
            more = 1;
        } else if (c == 0xe0) {
            more = 2;
            lo = 0xa0; /* below is an overlong 2-byte form */
        } else if (c == 0xed) {
            more = 2;
            hi = 0x9f; /* above are the surrogates U+D800..U+DFFF */
        } else if (c >= 0xe1 && c <= 0xef) {
            more = 2;
        } else if (c == 0xf0) {
            more = 3;
            lo = 0x90; /* below is an overlong 3-byte form */
        } else if (c >= 0xf1 && c <= 0xf3) {
            more = 3;
        } else if (c == 0xf4) {
            more = 3;
            hi = 0x8f; /* above is beyond U+10FFFF */
        } else {
            return false; /* a stray continuation byte, C0/C1 (overlong), or F5..FF */
        }
        if (len - i - 1 < more)
            return false;
        if (s[i + 1] < lo || s[i + 1] > hi)
            return false;
        for (size_t k = 2; k <= more; k++) {
            if ((s[i + k] & 0xc0) != 0x80)
                return false;
        }
        i += more + 1;
    }
    return true;
}
