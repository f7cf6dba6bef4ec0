/* fuzz_http_request.c - the public port's request head parser (http_request.h), fed the way a
 * socket feeds it: first a prefix (its length from the first byte), then the whole buffer;
 * then the query string of what it parsed, through the subscribe parameters. */
#include "fuzz_support.h"
#include "http_request.h"
#include "subscribe_params.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t split = data[0];
    data++, size--;
    if (split > size)
        split = size;
    char *buf = malloc(size ? size : 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    struct lg_http_request req;
    lg_http_request_init(&req);
    const char *problem = NULL;
    int rc = lg_http_request_feed(&req, buf, split, &problem);
    if (rc == 0)
        rc = lg_http_request_feed(&req, buf, size, &problem);
    if (rc == 1 && req.query.off + req.query.len <= size) {
        static struct lg_subscribe_params p;
        char why[256];
        lg_subscribe_params_parse(&p, buf + req.query.off, req.query.len, "since", NULL, 0, 64,
                                  why, sizeof why);
    }
    free(buf);
    return 0;
}
