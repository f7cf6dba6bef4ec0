#include <check.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "encode.h"
#include "accounting.h"
#include "event.h"
#include "stats.h"

#include "check_main.h"

#define UNIX_MS 1764547200123 /* the example time in docs/protocol.md */

static struct lg_event_fields text_fields(const char *topic, uint32_t epoch, uint64_t seq,
                                          const char *data)
{
    return (struct lg_event_fields){
        .topic_name = topic,
        .topic_name_len = strlen(topic),
        .epoch = epoch,
        .seq = seq,
        .data = data,
        .data_len = strlen(data),
        .published_unix_ms = UNIX_MS,
        .published_mono_ns = 5000,
    };
}

static struct lg_event *create_ok(const struct lg_event_fields *f)
{
    struct lg_event *ev = lg_event_create(f);
    ck_assert_ptr_nonnull(ev);
    return ev;
}

/*
 * A rendering case: an event created from these fields (text_fields plus data_is_json, the type
 * and the key, each `len` bytes of the string) renders exactly want_sse (its length in sse_len)
 * and/or want_json (NULL: that one not checked), and keeps want_type / want_key (NULL: none).
 */
struct render_case {
    const char *name;
    const char *topic;
    uint32_t epoch;
    uint64_t seq;
    const char *data;
    bool data_is_json;
    const char *type;
    size_t type_len;
    const char *key;
    size_t key_len;
    const char *want_sse, *want_json, *want_type, *want_key;
};

static void assert_renders(const struct render_case *c)
{
    struct lg_event_fields f = text_fields(c->topic, c->epoch, c->seq, c->data);
    f.data_is_json = c->data_is_json;
    if (c->type) {
        f.type = c->type;
        f.type_len = c->type_len;
    }
    if (c->key) {
        f.key = c->key;
        f.key_len = c->key_len;
    }
    struct lg_event *ev = create_ok(&f);
    ck_assert_msg(lg_event_size(&f) == ev->size, "%s: lg_event_size %zu, created %zu", c->name,
                  lg_event_size(&f), ev->size);
    if (c->want_sse) {
        ck_assert_msg(strcmp(ev->sse, c->want_sse) == 0, "%s: SSE frame\n%s\nwant\n%s", c->name,
                      ev->sse, c->want_sse);
        ck_assert_msg(ev->sse_len == strlen(c->want_sse), "%s: sse_len %zu", c->name,
                      (size_t)ev->sse_len);
    }
    if (c->want_json) {
        ck_assert_msg(strcmp(ev->json, c->want_json) == 0, "%s: JSON\n%s\nwant\n%s", c->name,
                      ev->json, c->want_json);
        ck_assert_msg(ev->json_len == strlen(c->want_json), "%s: json_len %zu", c->name,
                      (size_t)ev->json_len);
    }
    ck_assert_msg(ev->data_is_json == c->data_is_json, "%s: data_is_json", c->name);
    if (c->want_type)
        ck_assert_msg(strcmp(ev->type, c->want_type) == 0, "%s: type %s, want %s", c->name,
                      ev->type, c->want_type);
    if (c->want_key)
        ck_assert_msg(ev->key && strcmp(ev->key, c->want_key) == 0, "%s: key %s, want %s", c->name,
                      ev->key ? ev->key : "(none)", c->want_key);
    lg_event_unref(&ev);
}

/* ---- Ids ---------------------------------------------------------------------------------- */

START_TEST(id_is_topic_at_epoch_colon_seq)
{
    struct lg_event_fields f = text_fields("demo", 0x5f3a9c21, 42, "hello");
    struct lg_event *ev = create_ok(&f);
    ck_assert_str_eq(ev->id, "demo@5f3a9c21:42");
    ck_assert_uint_eq(ev->id_len, 16);
    lg_event_unref(&ev);
}
END_TEST

START_TEST(id_epoch_is_eight_lowercase_hex_digits)
{
    struct lg_event_fields f = text_fields("a/b:c", 0xa, 1, "");
    struct lg_event *ev = create_ok(&f);
    ck_assert_str_eq(ev->id, "a/b:c@0000000a:1");
    lg_event_unref(&ev);

    f = text_fields("t", 0xDEADBEEF, 9223372036854775807ull, "");
    ev = create_ok(&f);
    ck_assert_str_eq(ev->id, "t@deadbeef:9223372036854775807");
    ck_assert_uint_eq(ev->id_len, strlen(ev->id));
    lg_event_unref(&ev);
}
END_TEST

/* ---- SSE frame ---------------------------------------------------------------------------- */

START_TEST(sse_body_offset_skips_the_id_line)
{
    struct lg_event_fields f = text_fields("demo", 0x5f3a9c21, 42, "hello");
    struct lg_event *ev = create_ok(&f);
    ck_assert_uint_eq(ev->sse_body_offset, strlen("id: demo@5f3a9c21:42\n"));
    ck_assert_str_eq(ev->sse + ev->sse_body_offset, "data: hello\n\n");
    lg_event_unref(&ev);
}
END_TEST

static const struct render_case sse_cases[] = {
    {.name = "sse_frame_of_the_default_type_is_id_data_and_blank_line",
     .topic = "demo",
     .epoch = 0x5f3a9c21,
     .seq = 42,
     .data = "hello",
     .want_sse = "id: demo@5f3a9c21:42\ndata: hello\n\n"},
    {.name = "sse_frame_splits_lines_and_uses_the_type",
     .topic = "demo",
     .epoch = 1,
     .seq = 2,
     .data = "a\r\nb\n",
     .type = "tickXX",
     .type_len = 4,
     .want_sse = "id: demo@00000001:2\nevent: tick\ndata: a\ndata: b\ndata: \n\n",
     .want_type = "tick"},
    {.name = "sse_frame_names_no_type_when_the_publisher_names_the_default",
     .topic = "demo",
     .epoch = 1,
     .seq = 2,
     .data = "a",
     .type = "message",
     .type_len = 7,
     .want_sse = "id: demo@00000001:2\ndata: a\n\n",
     .want_type = "message"},
    {.name = "sse_frame_of_a_type_that_starts_like_the_default_names_it",
     .topic = "demo",
     .epoch = 1,
     .seq = 2,
     .data = "a",
     .type = "messages",
     .type_len = 8,
     .want_sse = "id: demo@00000001:2\nevent: messages\ndata: a\n\n",
     .want_type = "messages"},
    {.name = "sse_frame_of_empty_data_has_one_data_line",
     .topic = "demo",
     .epoch = 1,
     .seq = 2,
     .data = "",
     .want_sse = "id: demo@00000001:2\ndata: \n\n"},
    {.name = "sse_frame_carries_json_data_on_one_line",
     .topic = "prices",
     .epoch = 1,
     .seq = 3,
     .data = "{\"price\":1.07}",
     .data_is_json = true,
     .want_sse = "id: prices@00000001:3\ndata: {\"price\":1.07}\n\n"},
};

START_TEST(sse_frames) { assert_renders(&sse_cases[_i]); }
END_TEST

/* ---- JSON object -------------------------------------------------------------------------- */

static const struct render_case json_cases[] = {
    {.name = "json_matches_the_protocol_example",
     .topic = "demo",
     .epoch = 0x5f3a9c21,
     .seq = 42,
     .data = "hello",
     .want_json = "{\"type\":\"event\",\"v\":1,\"topic\":\"demo\","
                  "\"id\":\"demo@5f3a9c21:42\",\"seq\":42,\"event\":\"message\","
                  "\"time\":1764547200123,\"data\":\"hello\"}"},
    {.name = "json_escapes_text_data",
     .topic = "demo",
     .epoch = 1,
     .seq = 1,
     .data = "line\n\"q\"\\",
     .want_json = "{\"type\":\"event\",\"v\":1,\"topic\":\"demo\","
                  "\"id\":\"demo@00000001:1\",\"seq\":1,\"event\":\"message\","
                  "\"time\":1764547200123,\"data\":\"line\\n\\\"q\\\"\\\\\"}"},
    {.name = "json_embeds_json_data_raw",
     .topic = "prices",
     .epoch = 0x5f3a9c21,
     .seq = 7,
     .data = "{\"price\":1.07}",
     .data_is_json = true,
     .type = "tick",
     .type_len = 4,
     .want_json = "{\"type\":\"event\",\"v\":1,\"topic\":\"prices\","
                  "\"id\":\"prices@5f3a9c21:7\",\"seq\":7,\"event\":\"tick\","
                  "\"time\":1764547200123,\"data\":{\"price\":1.07}}"},
    {.name = "json_appends_the_key_last",
     .topic = "prices",
     .epoch = 0x5f3a9c21,
     .seq = 7,
     .data = "1.07",
     .data_is_json = true,
     .key = "EURUSD-and-more",
     .key_len = 6,
     .want_json = "{\"type\":\"event\",\"v\":1,\"topic\":\"prices\","
                  "\"id\":\"prices@5f3a9c21:7\",\"seq\":7,\"event\":\"message\","
                  "\"time\":1764547200123,\"data\":1.07,\"key\":\"EURUSD\"}",
     .want_key = "EURUSD"},
};

START_TEST(json_objects) { assert_renders(&json_cases[_i]); }
END_TEST

/* ---- WebSocket frame ---------------------------------------------------------------------- */

/* Create an event whose text data is `len` bytes of 'x'. */
static struct lg_event *create_sized(size_t len)
{
    char *data = malloc(len + 1);
    ck_assert_ptr_nonnull(data);
    memset(data, 'x', len);
    data[len] = '\0';
    struct lg_event_fields f = text_fields("big", 1, 1, data);
    struct lg_event *ev = create_ok(&f);
    free(data);
    return ev;
}

START_TEST(ws_frame_is_header_then_json_in_place)
{
    struct lg_event_fields f = text_fields("demo", 0x5f3a9c21, 42, "hello");
    struct lg_event *ev = create_ok(&f);
    ck_assert_uint_lt(ev->json_len, 126);
    ck_assert_uint_eq((unsigned char)ev->ws_frame[0], 0x81);
    ck_assert_uint_eq((unsigned char)ev->ws_frame[1], ev->json_len);
    ck_assert_ptr_eq(ev->json, ev->ws_frame + 2);
    ck_assert_uint_eq(ev->ws_frame_len, 2 + ev->json_len);
    lg_event_unref(&ev);
}
END_TEST

START_TEST(ws_frame_with_16_bit_length)
{
    struct lg_event *ev = create_sized(300);
    const unsigned char *h = (const unsigned char *)ev->ws_frame;
    ck_assert_uint_gt(ev->json_len, 125);
    ck_assert_uint_eq(h[0], 0x81);
    ck_assert_uint_eq(h[1], 126);
    ck_assert_uint_eq((size_t)h[2] << 8 | h[3], ev->json_len);
    ck_assert_ptr_eq(ev->json, ev->ws_frame + 4);
    ck_assert_uint_eq(ev->ws_frame_len, 4 + ev->json_len);
    ck_assert_int_eq(ev->json[ev->json_len - 1], '}');
    lg_event_unref(&ev);
}
END_TEST

START_TEST(ws_frame_with_64_bit_length)
{
    struct lg_event *ev = create_sized(70000);
    const unsigned char *h = (const unsigned char *)ev->ws_frame;
    ck_assert_uint_gt(ev->json_len, 65535);
    ck_assert_uint_eq(h[0], 0x81);
    ck_assert_uint_eq(h[1], 127);
    uint64_t len = 0;
    for (int i = 0; i < 8; i++)
        len = len << 8 | h[2 + i];
    ck_assert_uint_eq(len, ev->json_len);
    ck_assert_ptr_eq(ev->json, ev->ws_frame + 10);
    ck_assert_uint_eq(ev->ws_frame_len, 10 + ev->json_len);
    lg_event_unref(&ev);
}
END_TEST

/* ---- One allocation ----------------------------------------------------------------------- */

/* Admission compares lg_event_size() with the limit before the event exists: it must be the
 * size the event then has, to the byte, whatever needs escaping or framing. */
START_TEST(size_is_known_before_the_event_is_made)
{
    char big[70001];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    big[100] = '\r', big[101] = '\n', big[200] = '\r', big[300] = '\n', big[400] = '"';
    big[500] = '\x01', big[600] = '\\', big[700] = '\t';
    const char *data[] = {"", "a", "\n", "\r\n", "\r\r\n\n", "a\rb", big + 69990, big + 65000,
                          big + 60000, big};
    for (size_t i = 0; i < sizeof data / sizeof *data; i++) {
        struct lg_event_fields f = text_fields("t\"q", 0xffffffffu, UINT64_MAX, data[i]);
        f.key = "k\x1f";
        f.key_len = 2;
        f.idempotency_key = "retry-1";
        f.idempotency_key_len = 7;
        f.published_unix_ms = i % 2 ? -5 : UNIX_MS;
        struct lg_event *ev = create_ok(&f);
        ck_assert_msg(lg_event_size(&f) == ev->size, "data %zu: %zu, created %zu", i,
                      lg_event_size(&f), ev->size);
        lg_event_unref(&ev);
        f.data_is_json = true; /* JSON text is kept as it is, not escaped */
        f.data = "{\"a\":\"\\n\"}";
        f.data_len = strlen(f.data);
        ev = create_ok(&f);
        ck_assert_uint_eq(lg_event_size(&f), ev->size);
        lg_event_unref(&ev);
    }
}
END_TEST

static void assert_inside(const struct lg_event *ev, const char *p, size_t len)
{
    const char *end = (const char *)ev + ev->size;
    ck_assert_ptr_ne(p, NULL);
    ck_assert(p >= ev->storage && p + len < end); /* room for the NUL too */
    ck_assert_int_eq(p[len], '\0');
}

START_TEST(every_string_lives_in_the_one_allocation)
{
    struct lg_event_fields f = text_fields("demo", 0x5f3a9c21, 42, "hello");
    f.type = "tick";
    f.type_len = 4;
    f.key = "k1";
    f.key_len = 2;
    struct lg_event *ev = create_ok(&f);
    assert_inside(ev, ev->topic_name, strlen("demo"));
    assert_inside(ev, ev->id, ev->id_len);
    assert_inside(ev, ev->type, strlen("tick"));
    assert_inside(ev, ev->key, strlen("k1"));
    assert_inside(ev, ev->data, ev->data_len);
    assert_inside(ev, ev->sse, ev->sse_len);
    assert_inside(ev, ev->ws_frame, ev->ws_frame_len);
    assert_inside(ev, ev->json, ev->json_len);
    /* size is exactly the struct plus each NUL-terminated string (json inside ws_frame) */
    size_t want = sizeof(struct lg_event) + (4 + 1) + (ev->id_len + 1) + (4 + 1) + (2 + 1) +
                  (5 + 1) + (ev->sse_len + 1) + (ev->ws_frame_len + 1);
    ck_assert_uint_eq(ev->size, want);
    lg_event_unref(&ev);
}
END_TEST

START_TEST(fields_are_copied_not_borrowed)
{
    char topic[] = "demoXYZ";   /* only the first 4 bytes are the name */
    char data[] = "hello";
    const void *owner = &topic; /* any address: never dereferenced */
    struct lg_event_fields f = text_fields(topic, 7, 9, data);
    f.topic_identity = owner;
    f.topic_name_len = 4;
    f.published_mono_ns = 123456789;
    struct lg_event *ev = create_ok(&f);
    memset(topic, '#', sizeof topic - 1);
    memset(data, '#', sizeof data - 1);
    ck_assert_str_eq(ev->topic_name, "demo");
    ck_assert_str_eq(ev->data, "hello");
    ck_assert_uint_eq(ev->data_len, 5);
    ck_assert_ptr_eq(ev->topic_identity, owner);
    ck_assert_uint_eq(ev->epoch, 7);
    ck_assert_uint_eq(ev->seq, 9);
    ck_assert_int_eq(ev->published_unix_ms, UNIX_MS);
    ck_assert_uint_eq(ev->published_mono_ns, 123456789);
    ck_assert(!ev->data_is_json);
    ck_assert_ptr_null(ev->key);
    ck_assert_str_eq(ev->type, "message");
    lg_event_unref(&ev);
}
END_TEST

/* ---- Reference counting ------------------------------------------------------------------- */

START_TEST(refcount_starts_at_one_and_unref_clears_the_pointer)
{
    struct lg_event_fields f = text_fields("demo", 1, 1, "x");
    struct lg_event *ev = create_ok(&f);
    ck_assert_uint_eq(atomic_load(&ev->refcount), 1);
    struct lg_event *second = lg_event_ref(ev);
    ck_assert_ptr_eq(second, ev);
    ck_assert_uint_eq(atomic_load(&ev->refcount), 2);
    lg_event_unref(&second);
    ck_assert_ptr_null(second);
    ck_assert_uint_eq(atomic_load(&ev->refcount), 1);
    lg_event_unref(&ev);
    ck_assert_ptr_null(ev);
}
END_TEST

START_TEST(unref_of_null_does_nothing)
{
    struct lg_event *ev = NULL;
    lg_event_unref(&ev);
    ck_assert_ptr_null(ev);
}
END_TEST

/* A run pays in blocks ahead of what it hands out, never behind, and gives the rest back. */
START_TEST(a_reference_run_counts_ahead_and_gives_back_the_rest)
{
    struct lg_event_fields f = text_fields("demo", 1, 1, "x");
    struct lg_event *ev = create_ok(&f);
    struct lg_event_ref_run run = lg_event_ref_run_begin(ev);
    ck_assert_uint_eq(atomic_load(&ev->refcount), 1);
    struct lg_event *taken[LG_EVENT_REF_BLOCK + 1];
    taken[0] = lg_event_ref_from_run(&run);
    ck_assert_ptr_eq(taken[0], ev);
    ck_assert_uint_eq(atomic_load(&ev->refcount), 1 + LG_EVENT_REF_BLOCK);
    for (uint32_t i = 1; i <= LG_EVENT_REF_BLOCK; i++)
        taken[i] = lg_event_ref_from_run(&run);
    ck_assert_uint_eq(atomic_load(&ev->refcount), 1 + 2 * LG_EVENT_REF_BLOCK);
    lg_event_ref_run_end(&run);
    ck_assert_uint_eq(atomic_load(&ev->refcount), 1 + LG_EVENT_REF_BLOCK + 1);
    for (uint32_t i = 0; i <= LG_EVENT_REF_BLOCK; i++)
        lg_event_unref(&taken[i]);
    ck_assert_uint_eq(atomic_load(&ev->refcount), 1);
    struct lg_event_ref_run unused = lg_event_ref_run_begin(ev);
    lg_event_ref_run_end(&unused);
    ck_assert_uint_eq(atomic_load(&ev->refcount), 1);
    lg_event_unref(&ev);
}
END_TEST

#define REF_THREADS 4
#define REF_ROUNDS 100000

static void *ref_unref_loop(void *arg)
{
    struct lg_event *shared = arg;
    for (int i = 0; i < REF_ROUNDS; i++) {
        struct lg_event *mine = lg_event_ref(shared);
        lg_event_unref(&mine);
    }
    return NULL;
}

START_TEST(refcount_is_exact_under_concurrent_ref_and_unref)
{
    struct lg_event_fields f = text_fields("demo", 1, 1, "x");
    struct lg_event *ev = create_ok(&f);
    pthread_t threads[REF_THREADS];
    for (int i = 0; i < REF_THREADS; i++)
        ck_assert_int_eq(pthread_create(&threads[i], NULL, ref_unref_loop, ev), 0);
    for (int i = 0; i < REF_THREADS; i++)
        pthread_join(threads[i], NULL);
    ck_assert_uint_eq(atomic_load(&ev->refcount), 1);
    lg_event_unref(&ev);
}
END_TEST

START_TEST(live_event_stats_follow_create_and_last_unref)
{
    int64_t bytes0 = lg_account_event_bytes();
    int64_t live0 = lg_account_events();
    struct lg_event_fields f = text_fields("demo", 1, 1, "x");
    struct lg_event *a = create_ok(&f);
    struct lg_event *b = create_ok(&f);
    ck_assert_int_eq(lg_account_events(), live0 + 2);
    ck_assert_int_eq(lg_account_event_bytes(), bytes0 + (int64_t)(a->size + b->size));
    struct lg_event *extra = lg_event_ref(a);
    lg_event_unref(&a);
    ck_assert_int_eq(lg_account_events(), live0 + 2); /* extra still holds it */
    lg_event_unref(&extra);
    lg_event_unref(&b);
    ck_assert_int_eq(lg_account_events(), live0);
    ck_assert_int_eq(lg_account_event_bytes(), bytes0);
}
END_TEST

/* ---- The delta frame of a document topic ------------------------------------------------- */

#define REPORT_DRAFT "{\"title\":\"Quarterly report\",\"status\":\"draft\",\"pages\":12," \
                     "\"owner\":\"ana\",\"summary\":\"Revenue grew in every region.\"}"
#define REPORT_FINAL "{\"title\":\"Quarterly report\",\"status\":\"final\",\"pages\":12," \
                     "\"owner\":\"ana\",\"summary\":\"Revenue grew in every region.\"}"

static struct lg_event *json_event(uint32_t epoch, uint64_t seq, const char *data,
                                   const struct lg_event *base)
{
    struct lg_event_fields f = text_fields("doc/q", epoch, seq, data);
    f.data_is_json = true;
    f.delta_base = base;
    return create_ok(&f);
}

/* The exact frame for a known pair; the Fossil delta in it was checked with the reference
 * decoder (npm fossil-delta 2.0.0 applyDelta) against the two events' JSON objects. */
START_TEST(delta_frame_of_a_known_pair)
{
    struct lg_event *v1 = json_event(0x5f3a9c21, 1, REPORT_DRAFT, NULL);
    ck_assert_ptr_null(v1->delta_frame);
    struct lg_event *v2 = json_event(0x5f3a9c21, 2, REPORT_FINAL, v1);
    ck_assert_ptr_nonnull(v2->delta_frame);
    const char *want = "{\"type\":\"delta\",\"v\":1,\"topic\":\"doc/q\",\"id\":\"doc/q@5f3a9c21:2\","
                       "\"delta\":\"3a\\nw@0,A:2\\\",\\\"seq\\\":21L@15,5:final16@2V,SFVQL;\"}";
    ck_assert_uint_eq((unsigned char)v2->delta_frame[0], 0x81);
    ck_assert_uint_eq((unsigned char)v2->delta_frame[1], strlen(want));
    ck_assert_uint_eq(v2->delta_frame_len, 2 + strlen(want));
    ck_assert_msg(memcmp(v2->delta_frame + 2, want, strlen(want)) == 0, "%.*s",
                  (int)v2->delta_frame_len - 2, v2->delta_frame + 2);
    /* accounted in the event's one allocation */
    ck_assert_ptr_eq(v2->delta_frame, v2->json + v2->json_len + 1);
    ck_assert_uint_eq(v2->size, (size_t)(v2->delta_frame + v2->delta_frame_len + 1 - (char *)v2));
    lg_event_unref(&v2);
    lg_event_unref(&v1);
}
END_TEST

/* No delta against an event that is not the one before (another seq or life), nor when the
 * delta frame would not be shorter than the event's. */
START_TEST(delta_frame_only_against_the_previous_event_and_when_shorter)
{
    struct lg_event *v1 = json_event(0x5f3a9c21, 1, REPORT_DRAFT, NULL);
    struct lg_event *v3 = json_event(0x5f3a9c21, 3, REPORT_FINAL, v1);
    ck_assert_ptr_null(v3->delta_frame);
    struct lg_event *other_life = json_event(0x11111111, 2, REPORT_FINAL, v1);
    ck_assert_ptr_null(other_life->delta_frame);
    /* A new body of quotes: each escaped quote in the delta's inserted bytes is escaped once
     * more in the delta message, so the delta frame is the longer one. */
    char quotes[2 * 60 + 16] = "{\"q\":\"";
    for (int i = 0; i < 60; i++)
        strcat(quotes, "\\\"");
    strcat(quotes, "\"}");
    struct lg_event *quoted = json_event(0x5f3a9c21, 2, quotes, v1);
    ck_assert_ptr_null(quoted->delta_frame);
    struct lg_event_fields f = text_fields("doc/q", 0x5f3a9c21, 2, quotes);
    f.data_is_json = true;
    ck_assert_uint_eq(quoted->size, lg_event_size(&f));
    lg_event_unref(&quoted);
    lg_event_unref(&other_life);
    lg_event_unref(&v3);
    lg_event_unref(&v1);
}
END_TEST

static Suite *event_suite(void)
{
    Suite *s = suite_create("event");

    TCase *tc;
    LG_TCASE(s, "id", NULL, NULL, id_is_topic_at_epoch_colon_seq,
             id_epoch_is_eight_lowercase_hex_digits);
    tc = LG_TCASE(s, "sse", NULL, NULL, sse_body_offset_skips_the_id_line);
    tcase_add_loop_test(tc, sse_frames, 0, (int)(sizeof sse_cases / sizeof *sse_cases));
    tc = tcase_create("json");
    suite_add_tcase(s, tc);
    tcase_add_loop_test(tc, json_objects, 0, (int)(sizeof json_cases / sizeof *json_cases));
    LG_TCASE(s, "ws_frame", NULL, NULL, ws_frame_is_header_then_json_in_place,
             ws_frame_with_16_bit_length, ws_frame_with_64_bit_length);
    LG_TCASE(s, "storage", NULL, NULL, size_is_known_before_the_event_is_made,
             every_string_lives_in_the_one_allocation, fields_are_copied_not_borrowed);
    LG_TCASE(s, "delta", NULL, NULL, delta_frame_of_a_known_pair,
             delta_frame_only_against_the_previous_event_and_when_shorter);
    tc = LG_TCASE(s, "refcount", NULL, NULL, refcount_starts_at_one_and_unref_clears_the_pointer,
                  unref_of_null_does_nothing, a_reference_run_counts_ahead_and_gives_back_the_rest,
                  refcount_is_exact_under_concurrent_ref_and_unref,
                  live_event_stats_follow_create_and_last_unref);
    tcase_set_timeout(tc, 60); /* the threaded case is slow under valgrind */

    return s;
}

LG_CHECK_MAIN(event_suite)
