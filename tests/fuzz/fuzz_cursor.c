/* fuzz_cursor.c - resume cursors "topic@epoch:seq,..." (cursor.h), and formatting back what
 * parsed: a parsed entry must format to a text that parses to the same entry. */
#include <stdio.h>

#include "cursor.h"
#include "fuzz_support.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct lg_cursor c, again;
    char err[256];
    if (lg_cursor_parse((const char *)data, size, &c, err, sizeof err) != 0)
        return 0;
    for (size_t i = 0; i < c.count; i++) {
        char text[LG_CURSOR_ENTRY_MAX];
        size_t n = lg_cursor_format_entry(text, c.entries[i].topic, c.entries[i].epoch,
                                          c.entries[i].seq);
        if (lg_cursor_parse(text, n, &again, err, sizeof err) != 0 || again.count != 1 ||
            again.entries[0].seq != c.entries[i].seq ||
            again.entries[0].epoch != c.entries[i].epoch ||
            strcmp(again.entries[0].topic, c.entries[i].topic) != 0)
            abort(); /* format and parse disagree */
    }
    return 0;
}
