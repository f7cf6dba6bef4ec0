/*
 * fuzz_support.h - what the libFuzzer harnesses share: splitting one input into fields.
 * Each harness is one file, fuzz_<parser>.c, with LLVMFuzzerTestOneInput(); tests/fuzz/README.md
 * says how to run them. Inputs are never NUL-terminated by libFuzzer: the parsers must not need
 * it, and a harness that must hand a C string copies the bytes into an exact-size buffer.
 */
#ifndef LG_FUZZ_SUPPORT_H
#define LG_FUZZ_SUPPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The next field of *data up to a '\n' (consumed) or the end. */
static inline size_t lg_fuzz_field(const uint8_t **data, size_t *size, const char **field)
{
    const uint8_t *nl = memchr(*data, '\n', *size);
    size_t n = nl ? (size_t)(nl - *data) : *size;
    *field = (const char *)*data;
    *data += n + (nl != NULL);
    *size -= n + (nl != NULL);
    return n;
}

/* A malloc'd NUL-terminated copy of s[0..n). */
static inline char *lg_fuzz_cstring(const char *s, size_t n)
{
    char *copy = malloc(n + 1);
    if (copy) {
        memcpy(copy, s, n);
        copy[n] = '\0';
    }
    return copy;
}

#endif
