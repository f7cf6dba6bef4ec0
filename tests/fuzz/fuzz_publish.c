/* fuzz_publish.c - the control port's publish bodies (publish_parse.h). Input: one flag byte
 * (bit 0: batch, bit 1: JSON content type), then for a single event the fields
 * topic-segment, type, key, idempotency-key, each ending in '\n', then the body. Accepted JSON
 * data must be compact already: compacting it again is valid and changes nothing. */
#include "fuzz_support.h"
#include "publish_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t flags = data[0];
    data++, size--;
    struct lg_ctl_error e = LG_CTL_ERROR_INIT;
    if (flags & 1) {
        struct lg_parsed_batch b;
        lg_parse_batch((const char *)data, size, 1024, &b, &e);
        lg_parsed_batch_release(&b);
        return 0;
    }
    const char *topic, *type, *key, *ik;
    size_t topic_len = lg_fuzz_field(&data, &size, &topic);
    size_t type_len = lg_fuzz_field(&data, &size, &type);
    size_t key_len = lg_fuzz_field(&data, &size, &key);
    size_t ik_len = lg_fuzz_field(&data, &size, &ik);
    char *ik_text = lg_fuzz_cstring(ik, ik_len); /* a header value, as MHD hands it */
    struct lg_event_input in = {
        .topic_segment = topic,
        .topic_segment_len = topic_len,
        .type = {.text = type, .len = type_len, .present = type_len > 0},
        .key = {.text = key, .len = key_len, .present = key_len > 0},
        .idempotency_key = ik_len ? ik_text : NULL,
        .content_type = (flags & 2) ? "application/json" : NULL,
        .body = (const char *)data,
        .body_len = size,
    };
    struct lg_parsed_event ev;
    if (lg_parse_event(&in, 1024, &ev, &e) == 0 && ev.req.data_is_json) {
        char again[1024], why[160];
        size_t again_len = 0;
        if (lg_json_text_compact(ev.req.data, ev.req.data_len, again, &again_len, why,
                                 sizeof why) != LG_JSON_TEXT_OK ||
            again_len != ev.req.data_len || memcmp(again, ev.req.data, again_len) != 0)
            abort();
    }
    lg_parsed_event_release(&ev);
    free(ik_text);
    return 0;
}
