/* fuzz_delta.c - the Fossil delta encoder (delta.c): every delta stays within its bound and
 * decodes (with the tests' decoder, tests/support/lg_delta.c) back to its target exactly.
 * input = one byte n, then the source (the first n/256 of the rest) and the target. */
#include "fuzz_support.h"
#include "delta.h"
#include "encode.h"

#include "../support/lg_delta.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    size_t source_len = (size - 1) * data[0] / 256;
    const char *source = (const char *)data + 1, *target = source + source_len;
    size_t target_len = size - 1 - source_len;
    struct lg_buf delta;
    lg_buf_init(&delta);
    if (lg_delta_encode(source, source_len, target, target_len, &delta) != 0)
        abort();
    if (delta.len > lg_delta_max_len(target_len))
        abort();
    size_t len;
    char *back = lg_delta_apply(source, source_len, delta.data, delta.len, &len);
    if (!back || len != target_len || (len && memcmp(back, target, len) != 0))
        abort();
    free(back);
    lg_buf_release(&delta);
    return 0;
}
