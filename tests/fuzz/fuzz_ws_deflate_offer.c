/* fuzz_ws_deflate_offer.c - permessage-deflate offers (ws_deflate.h): input = a window size byte,
 * then a Sec-WebSocket-Extensions value. An accepted offer must be a permessage-deflate offer
 * of the value, and the same answer must come back for the same input. */
#include <stdlib.h>
#include <string.h>

#include "fuzz_support.h"
#include "ws_deflate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    unsigned bits = 9 + data[0] % 7; /* websocket.compression.max_window_bits: 9..15 */
    const char *value = (const char *)data + 1;
    size_t len = size - 1;
    int chosen = lg_ws_deflate_choose(value, len, bits);
    if (chosen < -1 || chosen >= 16)
        abort();
    if (chosen >= 0 && !memmem(value, len, "permessage-deflate", 18))
        abort();
    if (lg_ws_deflate_choose(value, len, bits) != chosen)
        abort();
    return 0;
}
