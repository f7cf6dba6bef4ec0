/* fuzz_query.c - subscribe query strings (subscribe_params.h) with a Last-Event-ID header:
 * input = header '\n' query; and percent-decoding on its own. */
#include "fuzz_support.h"
#include "http_request.h"
#include "subscribe_params.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *header;
    size_t header_len = lg_fuzz_field(&data, &size, &header);
    static struct lg_subscribe_params p;
    char why[256];
    lg_subscribe_params_parse(&p, (const char *)data, size, "last_event_id",
                              header_len ? header : NULL, header_len, 64, why, sizeof why);
    char out[512];
    size_t bad;
    lg_percent_decode((const char *)data, size, out, sizeof out, true, &bad);
    return 0;
}
