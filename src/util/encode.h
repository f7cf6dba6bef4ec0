/*
 * encode.h - pure functions that render livegate's wire forms into caller buffers.
 *
 * No I/O, no globals, no allocation: every function writes into a struct lg_buf the caller
 * owns, so each is unit-tested byte for byte. Used at publish time (once per event) and for
 * the few per-client frames (gap, reset, errors, cursors).
 *
 * Owns: nothing (struct lg_buf's bytes are its owner's). Frees: lg_buf_release(). Threads: any;
 * a buffer is used by one thread at a time. Bounds: a buffer grows until allocation fails,
 * then sets its oom flag (its contents are then not to be used).
 */
#ifndef LG_ENCODE_H
#define LG_ENCODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A growable byte buffer. Owns data (malloc'd); lg_buf_release() frees it. */
struct lg_buf {
    char *data;
    size_t len;
    size_t cap;
    bool oom; /* an append failed: contents are truncated and must not be used */
};

void lg_buf_init(struct lg_buf *b);
void lg_buf_release(struct lg_buf *b);
void lg_buf_reset(struct lg_buf *b); /* len = 0, keeps the allocation */
/* Make room for n more bytes now, so the appends that follow do not reallocate. */
void lg_buf_reserve(struct lg_buf *b, size_t n);
void lg_buf_append(struct lg_buf *b, const void *p, size_t n);
void lg_buf_append_str(struct lg_buf *b, const char *s);
/* The decimal digits of v into out (no NUL); returns how many. */
#define LG_U64_DIGITS_MAX 20 /* UINT64_MAX has 20 decimal digits */
size_t lg_format_u64(char out[LG_U64_DIGITS_MAX], uint64_t v);
/* The 8 lower-case hex digits of v into out (no NUL). */
void lg_format_hex32(char out[8], uint32_t v);
void lg_buf_append_u64(struct lg_buf *b, uint64_t v);
void lg_buf_appendf(struct lg_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * Append data as SSE "data:" lines: one line per line of data, where CR, LF and CRLF all end a
 * line (HTML spec). Empty data gives one "data:" line. Each line is "data: <text>\n".
 */
void lg_encode_sse_data(struct lg_buf *b, const char *data, size_t len);

/* The bytes lg_encode_sse_data() appends for data[0..len). */
size_t lg_sse_data_len(const char *data, size_t len);

/* Append a JSON string literal (quotes included) with JSON escaping of s[0..len). */
void lg_encode_json_string(struct lg_buf *b, const char *s, size_t len);
/* The bytes lg_encode_json_string() appends for s[0..len). */
size_t lg_json_string_len(const char *s, size_t len);

/* Size of the header of an unmasked server WebSocket frame with this payload length. */
size_t lg_ws_header_len(size_t payload_len);

/* Write that header (FIN set, opcode TEXT=0x1) into out; returns its length. */
size_t lg_ws_write_header(unsigned char *out, size_t payload_len, unsigned opcode);

/* True if s[0..len) is well-formed UTF-8 (no overlongs, no surrogates). */
bool lg_utf8_valid(const char *s, size_t len);

#endif
