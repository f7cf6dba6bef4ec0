/*
 * Unit tests for subscriber.c with the real hub, topics, inbox and events: replay, gaps,
 * resets, the three slow-consumer policies and exact rendered bytes. No sockets: the test
 * plays the worker (takes the inbox batch and offers each event to its topic's subscribers).
 */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "config.h"
#include "encode.h"
#include "event.h"
#include "filter_table.h"
#include "hub.h"
#include "hub_admin.h"
#include "inbox.h"
#include "stats.h"
#include "subscriber.h"
#include "topic.h"
#include "topic_rules.h"
#include "transport.h" /* the render tables of public/'s transports */
#include "worker_call.h"

#include "check_main.h"

static struct lg_config cfg;
static struct lg_hub *hub;
static struct lg_inbox inbox;

static void no_wake(void *arg) { (void)arg; }

static void setup_with(enum lg_slow_policy policy, uint32_t queue_events, uint32_t history_events)
{
    lg_config_init_defaults(&cfg);
    cfg.client_queue.max_events = queue_events;
    cfg.client_queue.on_slow = policy;
    cfg.history.max_events = history_events;
    hub = lg_hub_create(&cfg, 1);
    ck_assert_ptr_nonnull(hub);
    ck_assert_int_eq(lg_inbox_init(&inbox, 1024), 0);
    lg_hub_attach_worker(hub, 0, &inbox, no_wake, NULL);
}

static void setup(void) { setup_with(LG_SLOW_DROP_OLDEST, 4, 100); }

static void teardown(void)
{
    lg_hub_destroy(hub);
    lg_inbox_release(&inbox);
    lg_config_release(&cfg);
}

static struct lg_publish_result publish_keyed(const char *topic, const char *data, const char *key)
{
    struct lg_publish_req req = {.topic = topic, .topic_len = strlen(topic), .data = data,
                                 .data_len = strlen(data), .key = key,
                                 .key_len = key ? strlen(key) : 0};
    struct lg_publish_result res;
    ck_assert_int_eq(lg_hub_publish(hub, &req, &res), LG_PUBLISH_OK);
    return res;
}

static struct lg_publish_result publish(const char *topic, const char *data)
{
    return publish_keyed(topic, data, NULL);
}

/* Play the worker: hand every queued event to the subscribers of its topic. */
static void deliver(void)
{
    struct lg_inbox_entry *batch;
    size_t n = lg_inbox_take(&inbox, &batch);
    for (size_t i = 0; i < n; i++) {
        struct lg_event_ref_run refs = lg_event_ref_run_begin(batch[i].event);
        const struct lg_topic_slot *slot = &batch[i].topic->slots[0];
        for (uint32_t k = 0; k < slot->listener_count; k++)
            lg_subscriber_offer(slot->listeners[k]->owner, slot->listeners[k], &refs,
                                lg_mono_ns());
        lg_event_ref_run_end(&refs);
    }
    lg_inbox_done(&inbox, batch, n);
}

static struct lg_topic *topic(const char *name)
{
    struct lg_topic *t;
    ck_assert_int_eq(lg_hub_topic(hub, name, strlen(name), &t), LG_HUB_OK);
    return t;
}

/* A fresh subscriber on worker 0 over transport, with the test's client_queue bounds. */
static void new_subscriber(struct lg_subscriber *s, const struct lg_render_ops *transport)
{
    lg_subscriber_init(s, transport, 0, &cfg.client_queue);
}

/* Add topic name to s from cursor (NULL: from now on; it must parse): what lg_subscriber_add
 * returned. */
static enum lg_hub_status add_topic(struct lg_subscriber *s, const char *name,
                                    const char *cursor)
{
    struct lg_cursor c;
    char err[128];
    const struct lg_cursor_entry *since = NULL;
    if (cursor) {
        ck_assert_int_eq(lg_cursor_parse(cursor, strlen(cursor), &c, err, sizeof err), 0);
        since = &c.entries[0];
    }
    return lg_subscriber_add(s, hub, topic(name), since, (struct lg_start){0}, true, SIZE_MAX);
}

static void subscribe(struct lg_subscriber *s, const char *name, const char *cursor)
{
    ck_assert_int_eq(add_topic(s, name, cursor), LG_HUB_OK);
}

/* A new subscriber on worker 0 over transport, subscribed to name from cursor (NULL: now). */
static void subscribe_new(struct lg_subscriber *s, const struct lg_render_ops *transport,
                          const char *name, const char *cursor)
{
    new_subscriber(s, transport);
    subscribe(s, name, cursor);
}

/* An SSE subscriber on worker 0 listening to name from now on. */
static void sse_live(struct lg_subscriber *s, const char *name)
{
    subscribe_new(s, &lg_sse_render, name, NULL);
}

/* Render everything owed as one SSE string (caller frees). */
static char *render_sse(struct lg_subscriber *s)
{
    struct lg_buf b;
    lg_buf_init(&b);
    lg_subscriber_render_stream(s, &b, 1 << 20, 3000);
    lg_buf_append(&b, "", 1);
    return b.data;
}

/* publish n events "x" to topic, then play the worker. */
static void publish_n_and_deliver(const char *topic_name, int n)
{
    for (int i = 1; i <= n; i++)
        publish(topic_name, "x");
    deliver();
}

/* Everything s still owes renders as exactly want; then s is released. */
static void assert_sse_is_then_release(struct lg_subscriber *s, const char *want)
{
    char *out = render_sse(s);
    ck_assert_str_eq(out, want);
    free(out);
    lg_subscriber_release(s, hub);
}

/* The id an event of this topic gets; several may be used in one expression. */
static char *expect_id(const char *topic_name, uint64_t seq)
{
    static char ids[8][160];
    static unsigned next;
    char *id = ids[next++ % 8];
    snprintf(id, sizeof ids[0], "%s@%08x:%llu", topic_name, lg_stream_epoch(topic(topic_name)->stream),
             (unsigned long long)seq);
    return id;
}

/* A subscriber on worker 0 over transport, resuming name after its event seq. */
static void resume_from(struct lg_subscriber *s, const struct lg_render_ops *transport,
                        const char *name, uint64_t seq)
{
    subscribe_new(s, transport, name, expect_id(name, seq));
}

/* Topic "a" gets events 1..n, each with its seq as its data ("1", "2", ...); then s, a new
 * subscriber over transport, resumes "a" after its event seq. */
static void resume_after_numbered(struct lg_subscriber *s, const struct lg_render_ops *transport,
                                  int n, uint64_t seq)
{
    for (int i = 1; i <= n; i++) {
        char data[16];
        snprintf(data, sizeof data, "%d", i);
        publish("a", data);
    }
    resume_from(s, transport, "a", seq);
}

START_TEST(live_events_render_exact_sse_frames)
{
    struct lg_subscriber s;
    sse_live(&s, "a");
    publish("a", "one");
    publish("a", "two\nlines");
    deliver();
    char want[2048];
    snprintf(want, sizeof want,
             "id: %s\ndata: one\n\n", expect_id("a", 1));
    snprintf(want + strlen(want), sizeof want - strlen(want),
             "id: %s\ndata: two\ndata: lines\n\n", expect_id("a", 2));
    assert_sse_is_then_release(&s, want);
}
END_TEST

START_TEST(resume_replays_exactly_the_missed_events)
{
    struct lg_subscriber s;
    resume_after_numbered(&s, &lg_sse_render, 3, 1);
    publish("a", "4");
    deliver(); /* event 4 reaches the inbox after the replay: it must not be duplicated */
    char want[2048];
    snprintf(want, sizeof want, "id: %s\ndata: 2\n\n", expect_id("a", 2));
    snprintf(want + strlen(want), sizeof want - strlen(want),
             "id: %s\ndata: 3\n\nid: %s\ndata: 4\n\n",
             expect_id("a", 3), expect_id("a", 4));
    assert_sse_is_then_release(&s, want);
}
END_TEST

START_TEST(evicted_history_gives_a_gap_with_the_exact_range)
{
    teardown();
    setup_with(LG_SLOW_DROP_OLDEST, 100, 3);
    for (int i = 1; i <= 8; i++)
        publish("a", "x"); /* history keeps 6, 7, 8 */
    struct lg_subscriber s;
    resume_from(&s, &lg_sse_render, "a", 2);
    char *out = render_sse(&s);
    char want[2048];
    snprintf(want, sizeof want,
             "id: %s\nevent: gap\ndata: {\"topic\":\"a\",\"from\":3,\"to\":5,\"id\":\"%s\"}\n\n",
             expect_id("a", 5), expect_id("a", 5));
    ck_assert_msg(strncmp(out, want, strlen(want)) == 0, "got:\n%s\nwant prefix:\n%s", out, want);
    ck_assert_ptr_nonnull(strstr(out, expect_id("a", 6)));
    ck_assert_ptr_nonnull(strstr(out, expect_id("a", 8)));
    free(out);
    lg_subscriber_release(&s, hub);
}
END_TEST

START_TEST(foreign_epoch_gives_a_reset)
{
    publish("a", "1");
    uint32_t other = lg_stream_epoch(topic("a")->stream) ^ 1u;
    char cursor[160];
    snprintf(cursor, sizeof cursor, "a@%08x:7", other);
    struct lg_subscriber s;
    subscribe_new(&s, &lg_ws_render, "a", cursor);
    publish("a", "2");
    deliver();
    struct lg_buf b;
    lg_buf_init(&b);
    lg_subscriber_render_stream(&s, &b, 1 << 20, 0);
    /* First frame: the reset notice; second: event 2 (the pre-encoded frame). */
    char want[2048];
    snprintf(want, sizeof want, "{\"type\":\"reset\",\"v\":1,\"topic\":\"a\",\"epoch\":\"%08x\",\"id\":\"%s\"}",
             lg_stream_epoch(topic("a")->stream), expect_id("a", 1));
    ck_assert_uint_eq((unsigned char)b.data[0], 0x81);
    ck_assert_uint_eq((unsigned char)b.data[1], strlen(want));
    ck_assert_int_eq(memcmp(b.data + 2, want, strlen(want)), 0);
    ck_assert_ptr_nonnull(memmem(b.data, b.len, "\"data\":\"2\"", 10));
    lg_buf_release(&b);
    lg_subscriber_release(&s, hub);
}
END_TEST

/* An event of the next life of topic name, as a remote store that lost the topic makes it. */
static struct lg_event *next_life_event(const char *name, uint32_t epoch, const char *data)
{
    struct lg_event_fields f = {.topic_identity = topic(name), .topic_name = name,
                                .topic_name_len = strlen(name), .epoch = epoch, .seq = 1,
                                .data = data, .data_len = strlen(data)};
    struct lg_event *ev = lg_event_create(&f);
    ck_assert_ptr_nonnull(ev);
    return ev;
}

static void offer(struct lg_subscriber *s, struct lg_subscription *sn, struct lg_event *ev)
{
    struct lg_event_ref_run run = lg_event_ref_run_begin(ev);
    lg_subscriber_offer(s, sn, &run, lg_mono_ns());
    lg_event_ref_run_end(&run);
}

/* The old life's events were acknowledged: a new life's first event must not void them, so
 * the worker is told to write them out first; once written, the new life comes after a reset. */
START_TEST(a_new_life_asks_for_the_old_life_queued_to_be_written_first)
{
    struct lg_subscriber s;
    sse_live(&s, "a");
    publish("a", "old");
    deliver();
    struct lg_subscription *sn = lg_subscriber_find(&s, topic("a"));
    uint32_t epoch = lg_stream_epoch(topic("a")->stream);
    struct lg_event *next = next_life_event("a", epoch ^ 1u, "new");
    ck_assert(lg_subscriber_should_write_first(&s, sn, next));
    char want[512];
    snprintf(want, sizeof want, "id: %s\ndata: old\n\n", expect_id("a", 1));
    char *out = render_sse(&s);
    ck_assert_str_eq(out, want);
    free(out);
    ck_assert(!lg_subscriber_should_write_first(&s, sn, next));
    offer(&s, sn, next);
    snprintf(want, sizeof want,
             "id: a@%08x:0\nevent: reset\ndata: {\"topic\":\"a\",\"epoch\":\"%08x\","
             "\"id\":\"a@%08x:0\"}\n\nid: a@%08x:1\ndata: new\n\n",
             epoch ^ 1u, epoch ^ 1u, epoch ^ 1u, epoch ^ 1u);
    out = render_sse(&s);
    ck_assert_str_eq(out, want);
    free(out);
    lg_event_unref(&next);
    lg_subscriber_release(&s, hub);
}
END_TEST

START_TEST(cursor_ahead_of_topic_is_refused)
{
    publish("a", "1");
    struct lg_subscriber s;
    new_subscriber(&s, &lg_sse_render);
    ck_assert_int_eq(add_topic(&s, "a", expect_id("a", 5)), LG_HUB_CURSOR_AHEAD);
    ck_assert_uint_eq(topic("a")->slots[0].subscribers, 0);
    lg_subscriber_release(&s, hub);
}
END_TEST

START_TEST(drop_oldest_overflow_owes_the_exact_gap)
{
    struct lg_subscriber s;
    sse_live(&s, "a"); /* max 4 queued */
    uint64_t dropped_before = LG_STAT_GET(events_dropped_overflow);
    publish_n_and_deliver("a", 10);
    ck_assert_uint_eq(s.ring.live, 4);
    ck_assert_uint_eq(LG_STAT_GET(events_dropped_overflow) - dropped_before, 6);
    char *out = render_sse(&s);
    char want[2048];
    snprintf(want, sizeof want,
             "id: %s\nevent: gap\ndata: {\"topic\":\"a\",\"from\":1,\"to\":6,\"id\":\"%s\"}\n\n"
             "id: %s\ndata: x\n\n",
             expect_id("a", 6), expect_id("a", 6), expect_id("a", 7));
    ck_assert_msg(strncmp(out, want, strlen(want)) == 0, "got:\n%s", out);
    ck_assert_ptr_nonnull(strstr(out, expect_id("a", 10)));
    free(out);
    lg_subscriber_release(&s, hub);
}
END_TEST

/* Start over with another hub config (slow policy, client queue and history bounds in events)
 * and an SSE subscriber of topic listening from now on. */
static void restart_live(struct lg_subscriber *s, enum lg_slow_policy policy,
                         uint32_t queue_events, uint32_t history_events, const char *topic)
{
    teardown();
    setup_with(policy, queue_events, history_events);
    sse_live(s, topic);
}

START_TEST(disconnect_policy_stops_queueing_and_names_the_reason)
{
    struct lg_subscriber s;
    restart_live(&s, LG_SLOW_DISCONNECT, 4, 100, "a");
    uint64_t before = LG_STAT_GET(clients_disconnected_slow);
    publish_n_and_deliver("a", 5);
    ck_assert(s.slow_disconnect);
    ck_assert_uint_eq(s.ring.live, 0);
    ck_assert_uint_eq(LG_STAT_GET(clients_disconnected_slow) - before, 1);
    assert_sse_is_then_release(
        &s, "event: error\ndata: {\"code\":\"slow_consumer\",\"message\":"
            "\"slow consumer: queue full (client_queue.max_events/max_bytes)\"}\n"
            "retry: 3000\n\n");
}
END_TEST

START_TEST(conflate_keeps_only_the_newest_per_key)
{
    struct lg_subscriber s;
    restart_live(&s, LG_SLOW_CONFLATE, 100, 100, "prices");
    publish_keyed("prices", "eur1", "EUR");
    publish_keyed("prices", "usd1", "USD");
    publish_keyed("prices", "eur2", "EUR");
    publish_keyed("prices", "eur3", "EUR");
    publish("prices", "plain");
    deliver();
    ck_assert_uint_eq(s.ring.live, 3);
    char want[2048];
    snprintf(want, sizeof want,
             "id: %s\ndata: usd1\n\n"
             "id: %s\ndata: eur3\n\n"
             "id: %s\ndata: plain\n\n",
             expect_id("prices", 2), expect_id("prices", 4), expect_id("prices", 5));
    assert_sse_is_then_release(&s, want);
}
END_TEST

START_TEST(multi_topic_sse_ids_are_whole_stream_cursors)
{
    struct lg_subscriber s;
    sse_live(&s, "a");
    subscribe(&s, "b", NULL);
    publish("b", "b1");
    publish("a", "a1");
    deliver();
    char want[2048];
    uint32_t e = lg_stream_epoch(topic("a")->stream);
    snprintf(want, sizeof want,
             "id: a@%08x:0,b@%08x:1\ndata: b1\n\n"
             "id: a@%08x:1,b@%08x:1\ndata: a1\n\n",
             e, e, e, e);
    assert_sse_is_then_release(&s, want);
}
END_TEST

START_TEST(poll_renders_batch_and_cursor)
{
    struct lg_subscriber s;
    resume_after_numbered(&s, &lg_poll_render, 3, 0);
    struct lg_buf b;
    lg_buf_init(&b);
    ck_assert_uint_eq(lg_subscriber_render_poll(&s, &b, 2), 2);
    lg_buf_append(&b, "", 1);
    ck_assert_ptr_nonnull(strstr(b.data, "\"seq\":1,"));
    ck_assert_ptr_nonnull(strstr(b.data, "\"seq\":2,"));
    ck_assert_ptr_null(strstr(b.data, "\"seq\":3,"));
    char tail[200];
    snprintf(tail, sizeof tail, "],\"cursor\":\"%s\"}", expect_id("a", 2));
    ck_assert_str_eq(b.data + strlen(b.data) - strlen(tail), tail);
    lg_buf_release(&b);
    lg_subscriber_release(&s, hub);
}
END_TEST

/* The last listener takes a leaving one's place: every other stays listed once, at the index
 * it records, and still gets the topic's events. */
START_TEST(a_leaving_listener_is_replaced_by_the_last)
{
    struct lg_subscriber s[4];
    for (int i = 0; i < 4; i++)
        sse_live(&s[i], "a");
    const struct lg_topic_slot *slot = &topic("a")->slots[0];
    ck_assert_uint_eq(slot->listener_count, 4);
    lg_subscriber_release(&s[1], hub);
    ck_assert_uint_eq(slot->listener_count, 3);
    bool listed[4] = {false};
    for (uint32_t k = 0; k < slot->listener_count; k++) {
        ck_assert_uint_eq(slot->listeners[k]->listener_index, k);
        int who = (int)(slot->listeners[k]->owner - s);
        ck_assert(!listed[who]);
        listed[who] = true;
    }
    ck_assert(listed[0] && !listed[1] && listed[2] && listed[3]);
    publish("a", "after");
    deliver();
    for (int i = 0; i < 4; i += i == 0 ? 2 : 1) {
        ck_assert(lg_subscriber_has_output(&s[i]));
        lg_subscriber_release(&s[i], hub);
    }
    ck_assert_uint_eq(slot->listener_count, 0);
}
END_TEST

START_TEST(release_unregisters_from_the_topic)
{
    struct lg_subscriber s;
    sse_live(&s, "a");
    ck_assert_uint_eq(topic("a")->slots[0].subscribers, 1);
    ck_assert_uint_eq(topic("a")->slots[0].listener_count, 1);
    ck_assert_ptr_eq(topic("a")->slots[0].listeners[0]->owner, &s);
    lg_subscriber_release(&s, hub);
    ck_assert_uint_eq(topic("a")->slots[0].subscribers, 0);
    ck_assert_uint_eq(topic("a")->slots[0].listener_count, 0);
    ck_assert_ptr_null(topic("a")->slots[0].listeners);
    publish("a", "nobody listens");
    struct lg_inbox_entry *batch;
    ck_assert_uint_eq(lg_inbox_take(&inbox, &batch), 0); /* no hand-off without subscribers */
}
END_TEST


/* ---- Tag filters ---------------------------------------------------------------------- */

/* Room for a whole replay in one page. */
static void setup_wide(void) { setup_with(LG_SLOW_DROP_OLDEST, 100, 100); }

static void publish_tagged(const char *topic_name, const char *data, const char *tags)
{
    struct lg_publish_req req = {.topic = topic_name, .topic_len = strlen(topic_name),
                                 .data = data, .data_len = strlen(data), .tags = tags,
                                 .tags_len = strlen(tags)};
    struct lg_publish_result res;
    ck_assert_int_eq(lg_hub_publish(hub, &req, &res), LG_PUBLISH_OK);
}

/* A new subscriber over transport on name from cursor (NULL: now) with filter text. */
static void subscribe_filtered(struct lg_subscriber *s, const struct lg_render_ops *transport,
                               const char *name, const char *cursor, const char *filter_text)
{
    struct lg_filter f;
    char why[200];
    ck_assert_int_eq(lg_filter_parse(filter_text, strlen(filter_text), &f, why, sizeof why), 0);
    struct lg_cursor c;
    const struct lg_cursor_entry *since = NULL;
    if (cursor) {
        ck_assert_int_eq(lg_cursor_parse(cursor, strlen(cursor), &c, why, sizeof why), 0);
        since = &c.entries[0];
    }
    new_subscriber(s, transport);
    ck_assert_int_eq(lg_subscriber_add_filtered(s, hub, topic(name), since, (struct lg_start){0},
                                                true, SIZE_MAX, &f),
                     LG_HUB_OK);
}

/* s's cursor, as text (static). */
static const char *cursor_of(const struct lg_subscriber *s)
{
    static char text[256];
    struct lg_buf b;
    lg_buf_init(&b);
    lg_subscriber_cursor(s, &b);
    snprintf(text, sizeof text, "%.*s", (int)b.len, b.data ? b.data : "");
    lg_buf_release(&b);
    return text;
}

/* Events 1..6 of "a": odd ones tagged kind:a, even ones kind:b; data = the seq. */
static void publish_alternating(void)
{
    for (int i = 1; i <= 6; i++) {
        char data[8];
        snprintf(data, sizeof data, "%d", i);
        publish_tagged("a", data, i % 2 ? "kind:a" : "kind:b");
    }
}

START_TEST(a_filter_delivers_only_matching_live_events_and_passes_the_others)
{
    struct lg_subscriber s;
    subscribe_filtered(&s, &lg_sse_render, "a", NULL, "kind:a");
    publish_alternating();
    deliver();
    /* 1, 3, 5 are queued; 6 is passed but queued ones come first: the cursor waits for them */
    ck_assert_str_eq(cursor_of(&s), expect_id("a", 0));
    char want[1024];
    snprintf(want, sizeof want,
             "id: %s\ndata: 1\n\nid: %s\ndata: 3\n\n"
             "id: %s\ndata: 5\n\n",
             expect_id("a", 1), expect_id("a", 3), expect_id("a", 5));
    char *out = render_sse(&s);
    ck_assert_str_eq(out, want);
    free(out);
    ck_assert_str_eq(cursor_of(&s), expect_id("a", 6));
    /* a stretch of filtered events alone moves the cursor, and renders nothing */
    publish_tagged("a", "7", "kind:b");
    publish_tagged("a", "8", "other:x");
    publish("a", "9 untagged");
    deliver();
    ck_assert(!lg_subscriber_has_output(&s));
    ck_assert_str_eq(cursor_of(&s), expect_id("a", 9));
    lg_subscriber_release(&s, hub);
}
END_TEST

START_TEST(a_filtered_replay_resumes_with_no_gap_and_no_duplicate)
{
    publish_alternating();
    struct lg_subscriber s;
    subscribe_filtered(&s, &lg_sse_render, "a", expect_id("a", 1), "kind:b");
    char want[1024];
    snprintf(want, sizeof want,
             "id: %s\ndata: 2\n\nid: %s\ndata: 4\n\n"
             "id: %s\ndata: 6\n\n",
             expect_id("a", 2), expect_id("a", 4), expect_id("a", 6));
    assert_sse_is_then_release(&s, want);
    /* resuming after the last delivered one: nothing owed, no gap */
    subscribe_filtered(&s, &lg_sse_render, "a", expect_id("a", 6), "kind:b");
    ck_assert(!lg_subscriber_has_output(&s));
    lg_subscriber_release(&s, hub);
    /* resuming after a filtered stretch at the end: the cursor is the topic's newest */
    subscribe_filtered(&s, &lg_sse_render, "a", expect_id("a", 2), "kind:a|c");
    snprintf(want, sizeof want,
             "id: %s\ndata: 3\n\nid: %s\ndata: 5\n\n",
             expect_id("a", 3), expect_id("a", 5));
    char *out = render_sse(&s);
    ck_assert_str_eq(out, want);
    free(out);
    ck_assert_str_eq(cursor_of(&s), expect_id("a", 6));
    lg_subscriber_release(&s, hub);
}
END_TEST

START_TEST(a_poll_answer_cursor_covers_the_filtered_events)
{
    publish_alternating();
    publish_tagged("a", "7", "kind:b");
    struct lg_subscriber s;
    subscribe_filtered(&s, &lg_poll_render, "a", expect_id("a", 0), "kind:a");
    struct lg_buf b;
    lg_buf_init(&b);
    ck_assert_uint_eq(lg_subscriber_render_poll(&s, &b, 10), 3);
    lg_buf_append(&b, "", 1);
    ck_assert_ptr_null(strstr(b.data, "\"seq\":2,"));
    char tail[200];
    snprintf(tail, sizeof tail, "],\"cursor\":\"%s\"}", expect_id("a", 7));
    ck_assert_str_eq(b.data + strlen(b.data) - strlen(tail), tail);
    lg_buf_release(&b);
    lg_subscriber_release(&s, hub);
    /* a poll after which only filtered events follow has nothing to answer yet */
    subscribe_filtered(&s, &lg_poll_render, "a", expect_id("a", 5), "kind:a");
    ck_assert(!lg_subscriber_has_output(&s));
    ck_assert_str_eq(cursor_of(&s), expect_id("a", 7));
    lg_subscriber_release(&s, hub);
}
END_TEST

START_TEST(subscribers_sharing_a_filter_cost_one_evaluation_per_event)
{
    struct lg_subscriber s[5];
    for (int i = 0; i < 5; i++)
        subscribe_filtered(&s[i], &lg_sse_render, "a", NULL, i < 4 ? "kind:a" : "kind:b");
    ck_assert_uint_eq(lg_filter_table_count(), 2);
    struct lg_subscription *sn = lg_subscriber_find(&s[0], topic("a"));
    ck_assert_ptr_eq(sn->filter, lg_subscriber_find(&s[3], topic("a"))->filter);
    publish_alternating();
    deliver();
    ck_assert_uint_eq(lg_filter_table_evaluations(sn->filter), 6);
    for (int i = 0; i < 5; i++)
        lg_subscriber_release(&s[i], hub);
    ck_assert_uint_eq(lg_filter_table_count(), 0);
}
END_TEST

START_TEST(a_multi_topic_sse_id_moves_only_the_topic_of_its_event)
{
    struct lg_subscriber s;
    subscribe_filtered(&s, &lg_sse_render, "a", NULL, "kind:a");
    struct lg_filter f;
    char why[64];
    ck_assert_int_eq(lg_filter_parse("kind:a", 6, &f, why, sizeof why), 0);
    ck_assert_int_eq(lg_subscriber_add_filtered(&s, hub, topic("b"), NULL, (struct lg_start){0},
                                                true, SIZE_MAX, &f),
                     LG_HUB_OK);
    publish_tagged("b", "b1", "kind:b"); /* passed: b's position moves, unseen */
    publish_tagged("a", "a1", "kind:a");
    deliver();
    uint32_t e = lg_stream_epoch(topic("a")->stream), eb = lg_stream_epoch(topic("b")->stream);
    char want[512];
    snprintf(want, sizeof want, "id: a@%08x:1,b@%08x:0\ndata: a1\n\n", e, eb);
    char *out = render_sse(&s);
    ck_assert_str_eq(out, want);
    free(out);
    snprintf(want, sizeof want, "a@%08x:1,b@%08x:1", e, eb);
    ck_assert_str_eq(cursor_of(&s), want); /* what a poll answer or a resume holds */
    lg_subscriber_release(&s, hub);
}
END_TEST

START_TEST(a_filtered_replay_pages_through_a_small_queue)
{
    publish_alternating();
    publish_alternating(); /* 7..12: odd kind:a, even kind:b */
    struct lg_subscriber s;
    subscribe_filtered(&s, &lg_sse_render, "a", expect_id("a", 0), "kind:b");
    char all[4096] = "", want[4096] = "";
    while (lg_subscriber_has_output(&s)) {
        char *out = render_sse(&s);
        strcat(all, out);
        free(out);
    }
    for (int seq = 2; seq <= 12; seq += 2)
        snprintf(want + strlen(want), sizeof want - strlen(want),
                 "id: %s\ndata: %d\n\n", expect_id("a", (uint64_t)seq),
                 seq <= 6 ? seq : seq - 6);
    ck_assert_str_eq(all, want);
    ck_assert_str_eq(cursor_of(&s), expect_id("a", 12));
    lg_subscriber_release(&s, hub);
}
END_TEST

/* ---- Presence ---------------------------------------------------------------------------- */

/* Topics matching "room/" + any suffix list their members and send occupancy notices. */
static void setup_presence(void)
{
    setup();
    json_error_t jerr;
    json_t *rules = json_loads("[{\"match\":\"room/*\",\"presence\":true,"
                               "\"occupancy_events\":true}]", 0, &jerr);
    ck_assert_ptr_nonnull(rules);
    char err[LG_CONFIG_ERR_MAX];
    ck_assert_int_eq(lg_topic_rules_parse(rules, &cfg.topic_rules, &cfg.topic_rule_count, err), 0);
    json_decref(rules);
}

/* A new SSE subscriber, member `member`, listening to room/a from now on. */
static void presence_member(struct lg_subscriber *s, const char *member)
{
    new_subscriber(s, &lg_sse_render);
    ck_assert_int_eq(lg_subscriber_set_member(s, member, 0), 0);
    subscribe(s, "room/a", NULL);
}

/* Play the main thread's tick: the one presence call it posts. */
static struct lg_call *tick_presence(void)
{
    ck_assert_uint_eq(lg_hub_presence_report(hub), 1);
    struct lg_call *call = lg_hub_take_call(hub, 0);
    ck_assert_ptr_nonnull(call);
    ck_assert_int_eq(call->kind, LG_CALL_PRESENCE);
    return call;
}

/* Play the worker taking the call: the subscriptions owed its batch. */
static unsigned owe_batch(struct lg_call *call)
{
    unsigned owed = 0;
    struct lg_presence_batch *b = call->presence;
    const struct lg_topic_slot *slot = &b->topic->slots[0];
    for (uint32_t k = 0; k < slot->listener_count; k++)
        owed += lg_subscriber_presence(slot->listeners[k]->owner, slot->listeners[k], b);
    lg_hub_call_done(hub, call, 0);
    return owed;
}

/* A batch made before a subscription listened, and taken by its worker after, is not owed to
 * it: the second connection of a member listed already gets no join. */
START_TEST(a_presence_batch_made_before_a_subscription_is_not_owed_to_it)
{
    struct lg_subscriber first, second;
    presence_member(&first, "alice");
    struct lg_call *joined = tick_presence(); /* in flight ... */
    presence_member(&second, "alice");        /* ... across this subscribe */
    ck_assert_uint_eq(owe_batch(joined), 1);
    char *out = render_sse(&first);
    ck_assert_str_eq(out, "event: join\ndata: {\"topic\":\"room/a\",\"members\":[\"alice\"]}\n\n"
                          "event: occupancy\ndata: {\"topic\":\"room/a\",\"subscribers\":1}\n\n");
    free(out);
    out = render_sse(&second);
    ck_assert_str_eq(out, "");
    free(out);
    ck_assert_uint_eq(owe_batch(tick_presence()), 2); /* the next batch is both's */
    const char *both = "event: occupancy\ndata: {\"topic\":\"room/a\",\"subscribers\":2}\n\n";
    assert_sse_is_then_release(&second, both);
    assert_sse_is_then_release(&first, both);
}
END_TEST

static Suite *subscriber_suite(void)
{
    Suite *s = suite_create("subscriber");
    LG_TCASE(s, "delivery", setup, teardown, live_events_render_exact_sse_frames,
             multi_topic_sse_ids_are_whole_stream_cursors, poll_renders_batch_and_cursor,
             release_unregisters_from_the_topic, a_leaving_listener_is_replaced_by_the_last);
    LG_TCASE(s, "resume", setup, teardown, resume_replays_exactly_the_missed_events,
             evicted_history_gives_a_gap_with_the_exact_range, foreign_epoch_gives_a_reset,
             a_new_life_asks_for_the_old_life_queued_to_be_written_first,
             cursor_ahead_of_topic_is_refused);
    LG_TCASE(s, "slow_consumer_policy", setup, teardown, drop_oldest_overflow_owes_the_exact_gap,
             disconnect_policy_stops_queueing_and_names_the_reason,
             conflate_keeps_only_the_newest_per_key);
    LG_TCASE(s, "filters", setup_wide, teardown,
             a_filter_delivers_only_matching_live_events_and_passes_the_others,
             a_filtered_replay_resumes_with_no_gap_and_no_duplicate,
             a_poll_answer_cursor_covers_the_filtered_events,
             subscribers_sharing_a_filter_cost_one_evaluation_per_event,
             a_multi_topic_sse_id_moves_only_the_topic_of_its_event);
    LG_TCASE(s, "filters_paged", setup, teardown, a_filtered_replay_pages_through_a_small_queue);
    LG_TCASE(s, "presence", setup_presence, teardown,
             a_presence_batch_made_before_a_subscription_is_not_owed_to_it);
    return s;
}

LG_CHECK_MAIN(subscriber_suite)
