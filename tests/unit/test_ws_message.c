/*
 * test_ws_message.c - the WebSocket control messages (ws_message.h): one row per message, with
 * the exact error code and message it gets and whether it counts as malformed (toward
 * websocket.max_bad_messages); then what an accepted subscribe and unsubscribe carry.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "ws_message.h"

#include "check_main.h"

#define REWIND_RANGE                                                                               \
    "\"rewind\" must be a whole number of events from 0 to 1000000 (the most a topic's "          \
    "history.max_events may retain)"

struct row {
    const char *text;
    const char *code; /* NULL = accepted */
    bool malformed;
    const char *problem;
};

static const struct row rows[] = {
    {"{\"op\":\"ping\"}", NULL, false, NULL},
    {"{\"op\":\"subscribe\",\"topics\":[\"a\"]}", NULL, false, NULL},
    {"{\"op\":\"unsubscribe\",\"topics\":[]}", NULL, false, NULL},
    {"{\"op\":\"auth\",\"token\":\"a.b.c\"}", NULL, false, NULL},
    {"{\"op\":\"refresh\",\"token\":\"a.b.c\"}", NULL, false, NULL},
    {"{\"op\":\"refresh\"}", "bad_message", false, "auth and refresh need \"token\": a string"},
    {"{\"op\":\"auth\",\"token\":7}", "bad_message", false,
     "auth and refresh need \"token\": a string"},
    {"[1]", "bad_message", true, "a control message must be a JSON object"},
    {"{\"op\":", "bad_message", true, "invalid JSON at column 6: unexpected token near end of file"},
    {"{\"op\":\"a\",\"op\":\"b\"}", "bad_message", true,
     "invalid JSON at column 14: duplicate object key near '\"op\"'"},
    {"{\"topics\":[\"a\"]}", "bad_message", true, "a control message needs \"op\": a string"},
    {"{\"op\":\"shout\"}", "unknown_op", true,
     "op must be \"subscribe\", \"unsubscribe\", \"publish\", \"auth\", \"refresh\" or "
     "\"ping\""},
    {"{\"op\":\"publish\",\"topic\":\"a\",\"data\":\"x\"}", NULL, false, NULL},
    {"{\"op\":\"publish\",\"topic\":\"a\",\"data\":null,\"type\":\"t.1\",\"key\":\"k\","
     "\"idempotency_key\":\"i\",\"ref\":7}", NULL, false, NULL},
    {"{\"op\":\"publish\"}", "bad_message", false, "publish needs \"topic\": a string"},
    {"{\"op\":\"publish\",\"topic\":\"a\"}", "bad_message", false,
     "publish needs \"data\": any JSON value"},
    {"{\"op\":\"publish\",\"topic\":\"$sys\",\"data\":1}", "invalid_topic", false,
     "topic \"$sys\": names starting with '$' are reserved for the gateway"},
    {"{\"op\":\"publish\",\"topic\":\"a b\",\"data\":1}", "invalid_topic", false, NULL},
    {"{\"op\":\"publish\",\"topic\":\"a\",\"data\":1,\"type\":\"a b\"}", "bad_message", false,
     "publish: \"type\" must be 1..64 bytes of A-Z a-z 0-9 _ . : / -"},
    {"{\"op\":\"publish\",\"topic\":\"a\",\"data\":1,\"key\":\"\"}", "bad_message", false,
     "publish: \"key\" must be 1..256 bytes"},
    {"{\"op\":\"publish\",\"topic\":\"a\",\"data\":1,\"idempotency_key\":5}", "bad_message",
     false, "publish: \"idempotency_key\" must be a string"},
    {"{\"op\":\"publish\",\"topic\":\"a\",\"data\":1,\"ref\":[1]}", "bad_message", false,
     "publish: \"ref\" must be an integer or a string of at most 64 bytes"},
    {"{\"op\":\"subscribe\",\"topics\":[]}", "bad_message", false,
     "subscribe needs \"topics\": a non-empty array"},
    {"{\"op\":\"subscribe\",\"topics\":[1]}", "bad_message", false,
     "every entry of \"topics\" must be a string"},
    {"{\"op\":\"subscribe\",\"topics\":[\"a\"],\"since\":5}", "bad_message", false,
     "\"since\" must be a cursor string or \"latest\""},
    {"{\"op\":\"subscribe\",\"topics\":[\"a\"],\"since\":\"latest\"}", NULL, false, NULL},
    {"{\"op\":\"subscribe\",\"topics\":[\"a\"],\"rewind\":1000000}", NULL, false, NULL},
    {"{\"op\":\"subscribe\",\"topics\":[\"a\"],\"rewind\":-1}", "bad_request", false,
     REWIND_RANGE},
    {"{\"op\":\"subscribe\",\"topics\":[\"a\"],\"rewind\":1000001}", "bad_request", false,
     REWIND_RANGE},
    {"{\"op\":\"subscribe\",\"topics\":[\"a\"],\"rewind\":\"3\"}", "bad_request", false,
     REWIND_RANGE},
    {"{\"op\":\"subscribe\",\"topics\":[\"a\"],\"rewind\":2.5}", "bad_request", false,
     REWIND_RANGE},
    {"{\"op\":\"subscribe\",\"topics\":[\"a\"],\"since\":\"latest\",\"rewind\":2}", "bad_request",
     false, "give one start position: since=latest or rewind=N, not both (nor one twice)"},
    {"{\"op\":\"subscribe\",\"topics\":[\"a\"],\"since\":\"a@0123abcd:5\",\"rewind\":2}",
     "bad_request", false,
     "rewind and a cursor (since) cannot be combined: the cursor already says where to start"},
    {"{\"op\":\"subscribe\",\"topics\":[\"a\",\"b\",\"c\"]}", "bad_request", false,
     "at most 2 topics per subscription (limits.max_topics_per_client)"},
    {"{\"op\":\"subscribe\",\"topics\":[\"a b\"]}", "invalid_topic", false, NULL},
    {"{\"op\":\"subscribe\",\"topics\":[\"a\"],\"since\":\"nonsense\"}", "invalid_cursor", false,
     NULL},
    {"{\"op\":\"unsubscribe\"}", "bad_message", false, "unsubscribe needs \"topics\": an array"},
    {"{\"op\":\"unsubscribe\",\"topics\":[null]}", "bad_message", false,
     "every entry of \"topics\" must be a string"},
};

static const char *parse(const char *text, struct lg_ws_message *m,
                         struct lg_subscribe_params *p, bool *malformed, char *problem)
{
    return lg_ws_message_parse(text, strlen(text), 2, m, p, malformed, problem, 256);
}

START_TEST(each_message_gets_its_answer)
{
    const struct row *r = &rows[_i];
    struct lg_subscribe_params *p = malloc(sizeof *p);
    struct lg_ws_message m;
    bool malformed;
    char problem[256] = "";
    const char *code = parse(r->text, &m, p, &malformed, problem);
    if (r->code == NULL) {
        ck_assert_msg(code == NULL, "%s: refused %s (%s)", r->text, code, problem);
    } else {
        ck_assert_msg(code && strcmp(code, r->code) == 0, "%s: code %s, want %s", r->text,
                      code ? code : "(accepted)", r->code);
        ck_assert_msg(malformed == r->malformed, "%s: malformed %d", r->text, malformed);
        if (r->problem)
            ck_assert_str_eq(problem, r->problem);
        else
            ck_assert_str_ne(problem, "");
    }
    lg_ws_message_release(&m);
    free(p);
}
END_TEST

START_TEST(a_publish_keeps_its_data_as_sent)
{
    struct lg_subscribe_params *p = malloc(sizeof *p);
    struct lg_ws_message m;
    bool malformed;
    char problem[256];
    ck_assert_ptr_null(parse("{\"op\":\"publish\",\"ref\":\"r1\",\"topic\":\"chat\","
                             "\"data\": {\"n\": 1.50, \"a\": [1e3, \"x\"]}}",
                             &m, p, &malformed, problem));
    ck_assert_int_eq(m.op, LG_WS_OP_PUBLISH);
    ck_assert_str_eq(m.publish.topic, "chat");
    ck_assert(m.publish.data_is_json);
    ck_assert_str_eq(m.publish.data, "{\"n\":1.50,\"a\":[1e3,\"x\"]}");
    ck_assert_uint_eq(m.publish.data_len, strlen("{\"n\":1.50,\"a\":[1e3,\"x\"]}"));
    ck_assert_str_eq(json_string_value(m.publish.ref), "r1");
    ck_assert_ptr_null(m.publish.type);
    lg_ws_message_release(&m);
    ck_assert_ptr_null(parse("{\"op\":\"publish\",\"topic\":\"chat\",\"data\":\"hi\\nthere\"}",
                             &m, p, &malformed, problem));
    ck_assert(!m.publish.data_is_json);
    ck_assert_str_eq(m.publish.data, "hi\nthere");
    ck_assert_ptr_null(m.publish.ref);
    lg_ws_message_release(&m);
    free(p);
}
END_TEST

START_TEST(a_subscribe_carries_its_topics_and_cursor)
{
    struct lg_subscribe_params *p = malloc(sizeof *p);
    struct lg_ws_message m;
    bool malformed;
    char problem[256];
    ck_assert_ptr_null(parse("{\"op\":\"subscribe\",\"topics\":[\"b\",\"a\",\"b\"],"
                             "\"since\":\"a@0123abcd:5\"}", &m, p, &malformed, problem));
    ck_assert_int_eq(m.op, LG_WS_OP_SUBSCRIBE);
    ck_assert_uint_eq(p->topic_count, 2);
    ck_assert_str_eq(p->topics[0], "b");
    ck_assert_str_eq(p->topics[1], "a");
    ck_assert(p->has_cursor);
    ck_assert_uint_eq(p->cursor.count, 1);
    lg_ws_message_release(&m);
    ck_assert_ptr_null(parse("{\"op\":\"subscribe\",\"topics\":[\"a\"],\"since\":\"\"}", &m, p,
                             &malformed, problem));
    ck_assert(!p->has_cursor); /* "" = no cursor, as an empty since= on /sse */
    lg_ws_message_release(&m);
    ck_assert_ptr_null(parse("{\"op\":\"subscribe\",\"topics\":[\"a\"],\"since\":null}", &m, p,
                             &malformed, problem));
    ck_assert(!p->has_cursor);
    ck_assert(!p->has_start);
    lg_ws_message_release(&m);
    ck_assert_ptr_null(parse("{\"op\":\"subscribe\",\"topics\":[\"a\"],\"since\":\"latest\"}", &m,
                             p, &malformed, problem));
    ck_assert(!p->has_cursor);
    ck_assert(p->has_start);
    ck_assert_int_eq(p->start.kind, LG_START_LATEST);
    lg_ws_message_release(&m);
    ck_assert_ptr_null(parse("{\"op\":\"subscribe\",\"topics\":[\"a\"],\"rewind\":7}", &m, p,
                             &malformed, problem));
    ck_assert(p->has_start);
    ck_assert_int_eq(p->start.kind, LG_START_REWIND);
    ck_assert_uint_eq(p->start.rewind, 7);
    lg_ws_message_release(&m);
    free(p);
}
END_TEST

START_TEST(an_unsubscribe_carries_its_topic_strings)
{
    struct lg_ws_message m;
    bool malformed;
    char problem[256];
    ck_assert_ptr_null(parse("{\"op\":\"unsubscribe\",\"topics\":[\"x\",\"y\"]}", &m, NULL,
                             &malformed, problem));
    ck_assert_int_eq(m.op, LG_WS_OP_UNSUBSCRIBE);
    ck_assert_uint_eq(json_array_size(m.topics), 2);
    ck_assert_str_eq(json_string_value(json_array_get(m.topics, 1)), "y");
    lg_ws_message_release(&m);
}
END_TEST

static Suite *ws_message_suite(void)
{
    Suite *s = suite_create("ws_message");
    TCase *tc = tcase_create("parse");
    tcase_add_loop_test(tc, each_message_gets_its_answer, 0, sizeof rows / sizeof rows[0]);
    tcase_add_test(tc, a_publish_keeps_its_data_as_sent);
    tcase_add_test(tc, a_subscribe_carries_its_topics_and_cursor);
    tcase_add_test(tc, an_unsubscribe_carries_its_topic_strings);
    suite_add_tcase(s, tc);
    return s;
}

LG_CHECK_MAIN(ws_message_suite)
