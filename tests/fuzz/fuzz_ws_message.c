/* fuzz_ws_message.c - WebSocket control messages (ws_message.h), the publish op among them:
 * input = the message text.
 * A parse that succeeds must describe a message transport_ws.c can apply as it is. */
#include <stdlib.h>
#include <string.h>

#include "fuzz_support.h"
#include "topic_name.h"
#include "ws_message.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct lg_subscribe_params p;
    struct lg_ws_message m;
    bool malformed;
    char problem[256];
    const char *code = lg_ws_message_parse((const char *)data, size, 8, &m, &p, &malformed,
                                           problem, sizeof problem);
    if (code == NULL && m.op == LG_WS_OP_SUBSCRIBE && (p.topic_count == 0 || p.topic_count > 8))
        abort();
    if (code == NULL && m.op == LG_WS_OP_UNSUBSCRIBE && !json_is_array(m.topics))
        abort();
    /* a publish handed on names a topic of the grammar and carries its data whole */
    if (code == NULL && m.op == LG_WS_OP_PUBLISH &&
        (m.publish.topic == NULL || lg_topic_name_problem(m.publish.topic, m.publish.topic_len) ||
         m.publish.topic[0] == '$' || m.publish.data == NULL ||
         (m.publish.data_is_json && m.publish.data_len != strlen(m.publish.data))))
        abort();
    if (code != NULL && problem[0] == '\0')
        abort(); /* every refusal says why */
    lg_ws_message_release(&m);
    return 0;
}
