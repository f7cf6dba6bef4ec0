/*
 * cursor.h - the one cursor format shared by SSE, WebSocket and long-poll (docs/protocol.md).
 *
 *   cursor := entry ( "," entry )*
 *   entry  := topic "@" epoch ":" seq      e.g. "prices/eur@5f3a9c21:42"
 *   epoch  := 8 lowercase hex digits        (the topic's epoch when the position was taken)
 *   seq    := decimal, 0 .. 2^63-1          (the last sequence number the client has)
 *
 * An event's id is a one-entry cursor, so an id can always be handed back as a cursor.
 * Pure functions over byte buffers, no allocation beyond the caller's array.
 *
 * Owns: nothing. Frees: nothing. Threads: any. Bounds: LG_CURSOR_MAX_ENTRIES entries of at
 * most LG_CURSOR_ENTRY_MAX bytes each.
 */
#ifndef LG_CURSOR_H
#define LG_CURSOR_H

#include <stddef.h>
#include <stdint.h>

#include "topic_name.h"

#define LG_CURSOR_MAX_ENTRIES 64

struct lg_cursor_entry {
    char topic[LG_TOPIC_NAME_MAX + 1];
    uint32_t epoch;
    uint64_t seq;
};

struct lg_cursor {
    size_t count;
    struct lg_cursor_entry entries[LG_CURSOR_MAX_ENTRIES];
};

/*
 * Parse text[0..len) into c. Return value: 0, or -1 with a human-readable reason in
 * err (what was wrong and where) for a malformed cursor.
 */
int lg_cursor_parse(const char *text, size_t len, struct lg_cursor *c, char *err, size_t errlen);

/* The entry for topic, or NULL if the cursor does not name it. */
const struct lg_cursor_entry *lg_cursor_find(const struct lg_cursor *c, const char *topic);

/* Format one entry "<topic>@<epoch>:<seq>" into out (needs LG_CURSOR_ENTRY_MAX bytes). */
#define LG_CURSOR_ENTRY_MAX (LG_TOPIC_NAME_MAX + 1 + 8 + 1 + 20 + 1)
size_t lg_cursor_format_entry(char *out, const char *topic, uint32_t epoch, uint64_t seq);

#endif
