/* fuzz_filter.c - tag filters and event tags (tags.h): input = filter '\n' tags. A filter or
 * tags text that parses must give a canonical text that parses back to itself; matching is
 * tried on the canonical tags and on the raw bytes. */
#include "fuzz_support.h"
#include "tags.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *filter_text;
    size_t filter_len = lg_fuzz_field(&data, &size, &filter_text);
    const char *raw_tags = (const char *)data;
    static struct lg_filter f, again;
    static char tags[LG_TAGS_TEXT_MAX + 1], tags_again[LG_TAGS_TEXT_MAX + 1];
    char why[256];
    size_t tags_len = 0, again_len = 0;
    int tags_ok = lg_tags_parse(raw_tags, size, tags, &tags_len, why, sizeof why) == 0;
    if (tags_ok && (lg_tags_parse(tags, tags_len, tags_again, &again_len, why, sizeof why) != 0 ||
                    again_len != tags_len || memcmp(tags, tags_again, tags_len) != 0))
        abort();
    if (lg_filter_parse(filter_text, filter_len, &f, why, sizeof why) != 0)
        return 0;
    if (lg_filter_parse(f.text, f.text_len, &again, why, sizeof why) != 0 ||
        again.text_len != f.text_len || memcmp(again.text, f.text, f.text_len) != 0)
        abort();
    if (tags_ok)
        lg_filter_match(&f, tags, tags_len);
    lg_filter_match(&f, raw_tags, size);
    return 0;
}
