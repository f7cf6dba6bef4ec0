/*
 * delta.h - the Fossil delta encoder: the bytes that turn one version of a document into the
 * next, in the published format of https://fossil-scm.org/home/doc/tip/www/delta_format.wiki
 * (the format Centrifugo sends; decoders exist for C, Go, JS, Rust, ...). Written from the
 * format description.
 *
 * Format: "<target length>\n", then commands: "<n>@<offset>," (copy n bytes of the source
 * from offset), "<n>:<n bytes>" (insert these bytes), and the end "<checksum>;" (the sum of
 * the target's bytes read as big-endian 32-bit words, the last word zero-padded). Numbers are
 * base 64, most significant digit first, with the digits 0-9 A-Z _ a-z ~.
 *
 * Owns:    nothing between calls: the encoder's index of the source is allocated and freed
 *          inside lg_delta_encode().
 * Frees:   the caller owns `out` (an lg_buf it releases).
 * Threads: a pure function; any thread.
 * Bounds:  the delta is at most lg_delta_max_len(target_len) bytes (a copy is used only where
 *          it is shorter than the bytes it replaces). Work is linear in source + target
 *          (each target position looks at no more than a fixed number of source candidates);
 *          the index takes about 12 bytes per 16 bytes of source.
 * Text:    copies start and end on UTF-8 character boundaries of the target (a byte that is
 *          not a continuation byte), so a delta between valid UTF-8 texts is valid UTF-8 text
 *          and can travel in a JSON string. Any bytes may be encoded: the delta stays exact.
 */
#ifndef LG_DELTA_H
#define LG_DELTA_H

#include <stddef.h>

struct lg_buf;

/* The most bytes lg_delta_encode() appends for a target of target_len bytes. */
size_t lg_delta_max_len(size_t target_len);

/* Append to out the Fossil delta from source[0..source_len) to target[0..target_len).
 * Return value: 0, or -1 when out of memory (out->oom is set, or the index could not be
 * allocated; out may hold part of a delta). */
int lg_delta_encode(const char *source, size_t source_len, const char *target, size_t target_len,
                    struct lg_buf *out);

#endif
