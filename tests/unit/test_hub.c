/*
 * test_hub.c - the topic registry and publish path (hub.h) with the real memory store, topics,
 * events and two worker inboxes: sequence numbers and ids, every refusal (and that a refusal
 * publishes nothing and leaves no hole), idempotency keys, fan-out to the workers that listen
 * and their wake-ups, the replay a cursor resolves to (replay, gap, reset, ahead) and age
 * expiry. The test plays the workers: it takes their inboxes itself.
 */
#include <check.h>
#include <stdalign.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "config.h"
#include "accounting.h"
#include "check_main.h"
#include "event.h"
#include "hub.h"
#include "hub_admin.h"
#include "inbox.h"
#include "log.h"
#include "stats.h"
#include "topic.h"
#include "worker_call.h"

#define WORKERS 2
#define MS 1000000ull /* nanoseconds per millisecond */

static struct lg_config cfg;
static struct lg_hub *hub;
static struct lg_inbox inbox[WORKERS];
static unsigned wakes[WORKERS];

static void count_wake(void *arg) { ++*(unsigned *)arg; }

static void setup(void)
{
    lg_log_set_level(LG_LOG_ERROR); /* refusals log warnings */
    lg_config_init_defaults(&cfg);
    cfg.limits.worker_inbox_events = 4;
    hub = NULL;
    memset(wakes, 0, sizeof wakes);
}

/* Create the hub from cfg as the test has set it, with WORKERS inboxes attached. */
static void open_hub(void)
{
    hub = lg_hub_create(&cfg, WORKERS);
    ck_assert_ptr_nonnull(hub);
    for (uint32_t w = 0; w < WORKERS; w++) {
        ck_assert_int_eq(lg_inbox_init(&inbox[w], cfg.limits.worker_inbox_events), 0);
        lg_hub_attach_worker(hub, w, &inbox[w], count_wake, &wakes[w]);
    }
}

static void teardown(void)
{
    if (hub) {
        lg_hub_destroy(hub);
        for (uint32_t w = 0; w < WORKERS; w++)
            lg_inbox_release(&inbox[w]);
    }
    lg_config_release(&cfg);
}

/* ---- Helpers ------------------------------------------------------------------------------ */

static struct lg_publish_req req_of(const char *topic, const char *data, const char *idem)
{
    return (struct lg_publish_req){
        .topic = topic,
        .topic_len = strlen(topic),
        .data = data,
        .data_len = strlen(data),
        .idempotency_key = idem,
        .idempotency_key_len = idem ? strlen(idem) : 0,
    };
}

static enum lg_publish_status publish_idem(const char *topic, const char *data, const char *idem,
                                           struct lg_publish_result *res)
{
    struct lg_publish_req req = req_of(topic, data, idem);
    return lg_hub_publish(hub, &req, res);
}

static enum lg_publish_status try_publish(const char *topic, const char *data)
{
    struct lg_publish_result res;
    return publish_idem(topic, data, NULL, &res);
}

static struct lg_publish_result publish(const char *topic, const char *data)
{
    struct lg_publish_result res;
    ck_assert_int_eq(publish_idem(topic, data, NULL, &res), LG_PUBLISH_OK);
    return res;
}

/* An existing topic (never creates one). */
static struct lg_topic *topic(const char *name)
{
    struct lg_topic *t = lg_hub_find_topic(hub, name, strlen(name));
    ck_assert_msg(t != NULL, "topic %s: none", name);
    return t;
}

static bool topic_exists(const char *name)
{
    return lg_hub_find_topic(hub, name, strlen(name)) != NULL;
}

static struct lg_topic *topic_create(const char *name)
{
    struct lg_topic *t;
    enum lg_hub_status st = lg_hub_topic(hub, name, strlen(name), &t);
    ck_assert_msg(st == LG_HUB_OK, "topic %s: %s", name, lg_hub_status_message(st));
    return t;
}

static uint32_t epoch_of(const char *name) { return lg_stream_epoch(topic(name)->stream); }
static uint64_t newest_of(const char *name) { return lg_stream_newest(topic(name)->stream); }
static uint64_t oldest_of(const char *name) { return lg_stream_oldest(topic(name)->stream); }
static uint32_t listeners(const char *name, uint32_t w) { return topic(name)->slots[w].subscribers; }

/* The id the event `seq` of a topic must carry; several may be used in one expression. */
static const char *id_of(const char *name, uint64_t seq)
{
    static char ids[8][LG_CURSOR_ENTRY_MAX + 16];
    static unsigned next;
    char *id = ids[next++ % 8];
    snprintf(id, sizeof ids[0], "%s@%08x:%llu", name, epoch_of(name), (unsigned long long)seq);
    return id;
}

/* Register one listening subscription of worker w on the topic (no cursor: start now). */
static void listen_on(const char *name, uint32_t w)
{
    struct lg_replay r;
    ck_assert_int_eq(
        lg_hub_subscribe(hub, topic_create(name), w, NULL, 100, UINT64_MAX, true, &r), LG_HUB_OK);
    ck_assert_uint_eq(r.count, 0);
    lg_replay_release(&r);
}

/* Resolve a cursor entry "name@epoch:seq" on the topic for worker 0, not listening. */
static int resolve(const char *name, uint32_t epoch, uint64_t seq, size_t max_events,
                   uint64_t max_bytes, struct lg_replay *out)
{
    struct lg_cursor_entry since = {.epoch = epoch, .seq = seq};
    snprintf(since.topic, sizeof since.topic, "%s", name);
    return lg_hub_subscribe(hub, topic(name), 0, &since, max_events, max_bytes, false, out);
}

static size_t occupancy(uint32_t w) { return atomic_load(&inbox[w].occupancy); }

/* Play worker w: take its whole inbox, check it holds exactly these (topic, seq) pairs in
 * order, unref them and report them done. */
struct expect {
    const char *topic;
    uint64_t seq;
};
static void take_expect(uint32_t w, const struct expect *want, size_t n)
{
    struct lg_inbox_entry *batch;
    size_t got = lg_inbox_take(&inbox[w], &batch);
    ck_assert_msg(got == n, "worker %u: took %zu events, want %zu", w, got, n);
    for (size_t i = 0; i < n; i++) {
        const struct lg_event *ev = batch[i].event;
        ck_assert_str_eq(ev->topic_name, want[i].topic);
        ck_assert_ptr_eq(batch[i].topic, topic(want[i].topic));
        ck_assert_uint_eq(ev->seq, want[i].seq);
        ck_assert_str_eq(ev->id, id_of(want[i].topic, want[i].seq));
    }
    lg_inbox_done(&inbox[w], batch, got);
}

/* The size of every event the tests publish with one-letter topics, data "xxxx", no key and a
 * one-digit seq (sizes do not depend on the epoch's value, and the wall-clock "time" field has
 * 13 digits until the year 2286). */
static uint64_t small_event_size(void)
{
    struct lg_event_fields f = {.topic_name = "a", .topic_name_len = 1, .epoch = 0x12345678,
                                .seq = 1, .data = "xxxx", .data_len = 4,
                                .published_unix_ms = lg_unix_ms()}; /* 13 digits in "time" */
    struct lg_event *ev = lg_event_create(&f);
    ck_assert_ptr_nonnull(ev);
    uint64_t size = ev->size;
    lg_event_unref(&ev);
    return size;
}

/* ---- Sequence numbers and ids ------------------------------------------------------------- */

START_TEST(publish_assigns_dense_seqs_per_topic_with_exact_ids)
{
    open_hub();
    uint64_t published = LG_STAT_GET(events_published);
    struct lg_publish_result a1 = publish("a", "one");
    ck_assert_uint_eq(a1.seq, 1);
    ck_assert(!a1.duplicate);
    ck_assert_uint_ne(a1.epoch, 0);
    ck_assert_uint_eq(a1.epoch, epoch_of("a"));
    ck_assert_str_eq(a1.id, id_of("a", 1));

    struct lg_publish_result a2 = publish("a", "two");
    struct lg_publish_result b1 = publish("prices/eur", "three");
    struct lg_publish_result a3 = publish("a", "four");
    struct lg_publish_result b2 = publish("prices/eur", "five");
    ck_assert_uint_eq(a2.seq, 2);
    ck_assert_str_eq(a2.id, id_of("a", 2));
    ck_assert_uint_eq(b1.seq, 1); /* topics count independently */
    ck_assert_str_eq(b1.id, id_of("prices/eur", 1));
    ck_assert_uint_eq(b1.epoch, epoch_of("prices/eur"));
    ck_assert_uint_eq(a3.seq, 3);
    ck_assert_str_eq(a3.id, id_of("a", 3));
    ck_assert_uint_eq(b2.seq, 2);
    ck_assert_str_eq(b2.id, id_of("prices/eur", 2));
    ck_assert_uint_eq(newest_of("a"), 3);
    ck_assert_uint_eq(newest_of("prices/eur"), 2);
    ck_assert_uint_eq(LG_STAT_GET(events_published), published + 5);

    /* What history holds is exactly what was published, in order. */
    struct lg_replay r;
    ck_assert_int_eq(resolve("a", epoch_of("a"), 0, 100, UINT64_MAX, &r), LG_HUB_OK);
    ck_assert_uint_eq(r.count, 3);
    const char *data[] = {"one", "two", "four"};
    for (size_t i = 0; i < 3; i++) {
        ck_assert_uint_eq(r.events[i]->seq, i + 1);
        ck_assert_str_eq(r.events[i]->data, data[i]);
        ck_assert_str_eq(r.events[i]->type, "message");
        ck_assert_ptr_null(r.events[i]->key);
        ck_assert_ptr_eq(r.events[i]->topic_identity, topic("a"));
    }
    lg_replay_release(&r);
}
END_TEST

START_TEST(type_and_key_reach_the_event)
{
    open_hub();
    listen_on("a", 0);
    struct lg_publish_req req = req_of("a", "{\"p\":1}", NULL);
    req.type = "price";
    req.type_len = 5;
    req.key = "eur";
    req.key_len = 3;
    req.data_is_json = true;
    struct lg_publish_result res;
    ck_assert_int_eq(lg_hub_publish(hub, &req, &res), LG_PUBLISH_OK);
    struct lg_inbox_entry *batch;
    ck_assert_uint_eq(lg_inbox_take(&inbox[0], &batch), 1);
    const struct lg_event *ev = batch[0].event;
    ck_assert_str_eq(ev->type, "price");
    ck_assert_str_eq(ev->key, "eur");
    ck_assert_str_eq(ev->data, "{\"p\":1}");
    ck_assert(ev->data_is_json);
    lg_inbox_done(&inbox[0], batch, 1);
}
END_TEST

/* ---- Refusals ----------------------------------------------------------------------------- */

START_TEST(invalid_requests_are_refused_and_create_nothing)
{
    open_hub();
    uint64_t published = LG_STAT_GET(events_published);
    ck_assert_int_eq(try_publish("a b", "x"), LG_PUBLISH_BAD_TOPIC);
    ck_assert_int_eq(try_publish("", "x"), LG_PUBLISH_BAD_TOPIC);
    ck_assert_int_eq(try_publish("a$", "x"), LG_PUBLISH_BAD_TOPIC);
    char long_name[LG_TOPIC_NAME_MAX + 2];
    memset(long_name, 'n', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = '\0';
    ck_assert_int_eq(try_publish(long_name, "x"), LG_PUBLISH_BAD_TOPIC);
    long_name[LG_TOPIC_NAME_MAX] = '\0'; /* exactly the longest allowed */
    ck_assert_int_eq(try_publish(long_name, "x"), LG_PUBLISH_OK);

    ck_assert_int_eq(try_publish("$sys/stats", "x"), LG_PUBLISH_RESERVED_TOPIC);
    ck_assert(!topic_exists("$sys/stats"));

    ck_assert_int_eq(try_publish("t", "bad \xff byte"), LG_PUBLISH_BAD_DATA);
    ck_assert_int_eq(try_publish("t", "cut \xc3"), LG_PUBLISH_BAD_DATA);
    ck_assert(!topic_exists("t")); /* a refused publish does not spend a topic */
    ck_assert_uint_eq(LG_STAT_GET(events_published), published + 1);

    /* The first accepted publish to the topic takes seq 1: nothing was consumed. */
    ck_assert_uint_eq(publish("t", "caf\xc3\xa9").seq, 1);
}
END_TEST

START_TEST(status_messages_name_the_limit)
{
    ck_assert_str_eq(lg_publish_status_message(LG_PUBLISH_OK), "ok");
    ck_assert_str_eq(lg_publish_status_message(LG_PUBLISH_BAD_TOPIC), "invalid topic name");
    ck_assert_str_eq(lg_publish_status_message(LG_PUBLISH_RESERVED_TOPIC),
                     "topics starting with '$' are reserved for the gateway");
    ck_assert_str_eq(lg_publish_status_message(LG_PUBLISH_BAD_DATA),
                     "event data must be UTF-8 text or JSON");
    ck_assert_str_eq(lg_publish_status_message(LG_PUBLISH_TOO_MANY_TOPICS),
                     "the gateway holds limits.max_topics topics; retry later or raise the limit");
    ck_assert_str_eq(lg_publish_status_message(LG_PUBLISH_WORKERS_BEHIND),
                     "subscribers' workers are behind (limits.worker_inbox_events); retry shortly");
    ck_assert_str_eq(lg_publish_status_message(LG_PUBLISH_MEMORY_FULL),
                     "retained events reached limits.max_retained_bytes; retry shortly");
    ck_assert_str_eq(lg_publish_status_message(LG_PUBLISH_OOM), "out of memory");
}
END_TEST

START_TEST(max_topics_refuses_a_new_topic_but_not_existing_ones)
{
    cfg.limits.max_topics = 2;
    open_hub();
    uint64_t refused = LG_STAT_GET(publishes_refused);
    publish("a", "x");
    publish("b", "x");
    ck_assert_int_eq(try_publish("c", "x"), LG_PUBLISH_TOO_MANY_TOPICS);
    ck_assert_uint_eq(LG_STAT_GET(publishes_refused), refused + 1);
    ck_assert(!topic_exists("c"));
    struct lg_topic *t = topic("a");
    ck_assert_int_eq(lg_hub_topic(hub, "c", 1, &t), LG_HUB_TOO_MANY_TOPICS);
    ck_assert_ptr_null(t);
    ck_assert_str_eq(lg_hub_status_message(LG_HUB_TOO_MANY_TOPICS),
                     "the gateway holds limits.max_topics topics already");
    ck_assert_uint_eq(publish("a", "x").seq, 2);
    ck_assert_uint_eq(publish("b", "x").seq, 2);

    ck_assert_ptr_null(lg_hub_find_topic(hub, "zz", 2));
    ck_assert_ptr_null(lg_hub_find_topic(hub, "a b", 3));
    t = topic("a");
    ck_assert_int_eq(lg_hub_topic(hub, "a b", 3, &t), LG_HUB_BAD_NAME);
    ck_assert_ptr_null(t);
}
END_TEST

START_TEST(retained_bytes_limit_evicts_the_topics_own_history_first)
{
    uint64_t size = small_event_size();
    int64_t base = lg_account_event_bytes();
    ck_assert_int_ge(base, 0);
    cfg.limits.max_retained_bytes = (uint64_t)base + 2 * size;
    open_hub();
    uint64_t evicted = LG_STAT_GET(history_evicted);
    publish("a", "xxxx");
    publish("a", "xxxx");
    ck_assert_int_eq(lg_account_event_bytes(), base + 2 * (int64_t)size);
    ck_assert_uint_eq(LG_STAT_GET(history_evicted), evicted);

    struct lg_publish_result a3 = publish("a", "xxxx"); /* a1 gives way */
    ck_assert_uint_eq(a3.seq, 3);
    ck_assert_uint_eq(oldest_of("a"), 2);
    ck_assert_uint_eq(LG_STAT_GET(history_evicted), evicted + 1);
    ck_assert_int_eq(lg_account_event_bytes(), base + 2 * (int64_t)size);

    /* Pin a2 and a3 outside history (a replay holds them): evicting history frees nothing,
     * so the publish is refused, after history gave way, and no seq is used. */
    struct lg_replay pin;
    ck_assert_int_eq(resolve("a", epoch_of("a"), 1, 100, UINT64_MAX, &pin), LG_HUB_OK);
    ck_assert_uint_eq(pin.count, 2);
    uint64_t refused = LG_STAT_GET(publishes_refused);
    ck_assert_int_eq(try_publish("a", "xxxx"), LG_PUBLISH_MEMORY_FULL);
    ck_assert_uint_eq(LG_STAT_GET(publishes_refused), refused + 1);
    ck_assert_uint_eq(newest_of("a"), 3);
    ck_assert_uint_eq(oldest_of("a"), 4); /* history is empty: newest + 1 */
    ck_assert_int_eq(lg_account_event_bytes(), base + 2 * (int64_t)size);

    lg_replay_release(&pin);
    ck_assert_int_eq(lg_account_event_bytes(), base);
    struct lg_publish_result a4 = publish("a", "xxxx");
    ck_assert_uint_eq(a4.seq, 4); /* no hole */
    ck_assert_str_eq(a4.id, id_of("a", 4));
    ck_assert_uint_eq(oldest_of("a"), 4);
}
END_TEST

START_TEST(retained_bytes_held_by_another_topic_refuse_and_leave_it_alone)
{
    uint64_t size = small_event_size();
    int64_t base = lg_account_event_bytes();
    cfg.limits.max_retained_bytes = (uint64_t)base + 2 * size;
    open_hub();
    listen_on("a", 1);
    publish("b", "xxxx");
    publish("b", "xxxx");
    ck_assert_int_eq(try_publish("a", "xxxx"), LG_PUBLISH_MEMORY_FULL);
    ck_assert_uint_eq(newest_of("a"), 0);
    ck_assert_uint_eq(oldest_of("b"), 1); /* another topic's history is not touched */
    ck_assert_uint_eq(newest_of("b"), 2);
    ck_assert_int_eq(lg_account_event_bytes(), base + 2 * (int64_t)size);
    /* The inbox slot reserved for worker 1 was given back; nothing reached it. */
    ck_assert_uint_eq(occupancy(1), 0);
    ck_assert(lg_inbox_empty(&inbox[1]));
    ck_assert_uint_eq(wakes[1], 0);

    /* b's own history gives way to b's next event. */
    ck_assert_uint_eq(publish("b", "xxxx").seq, 3);
    ck_assert_uint_eq(oldest_of("b"), 2);
}
END_TEST

START_TEST(a_full_inbox_refuses_with_workers_behind_and_publishes_nothing)
{
    cfg.limits.worker_inbox_events = 2;
    open_hub();
    listen_on("a", 0);
    listen_on("a", 1);
    listen_on("c", 1);
    struct lg_publish_result c1;
    ck_assert_int_eq(publish_idem("c", "xxxx", "k", &c1), LG_PUBLISH_OK);
    publish("c", "xxxx");
    ck_assert_uint_eq(occupancy(1), 2); /* worker 1 holds limits.worker_inbox_events */

    uint64_t refused = LG_STAT_GET(publishes_refused);
    uint64_t published = LG_STAT_GET(events_published);
    int64_t live = lg_account_events();
    ck_assert_int_eq(try_publish("a", "xxxx"), LG_PUBLISH_WORKERS_BEHIND);
    ck_assert_uint_eq(newest_of("a"), 0);
    ck_assert_int_eq(try_publish("c", "xxxx"), LG_PUBLISH_WORKERS_BEHIND);
    ck_assert_uint_eq(newest_of("c"), 2);
    /* Worker 0 had room: its reservation was given back, nothing reached it. */
    ck_assert_uint_eq(occupancy(0), 0);
    ck_assert(lg_inbox_empty(&inbox[0]));
    ck_assert_uint_eq(wakes[0], 0);
    ck_assert_uint_eq(occupancy(1), 2);
    ck_assert_int_eq(lg_account_events(), live);
    ck_assert_uint_eq(LG_STAT_GET(events_published), published);
    /* Not a refusal yet: the control port counts it if the wait for room fails. */
    ck_assert_uint_eq(LG_STAT_GET(publishes_refused), refused);

    /* A topic nobody on worker 1 listens to is not held up. */
    ck_assert_uint_eq(publish("b", "xxxx").seq, 1);
    /* A retry of an event still in history is answered without needing room. */
    struct lg_publish_result dup;
    ck_assert_int_eq(publish_idem("c", "other", "k", &dup), LG_PUBLISH_OK);
    ck_assert(dup.duplicate);
    ck_assert_uint_eq(dup.seq, 1);
    ck_assert_str_eq(dup.id, c1.id);

    /* Worker 1 takes its events: the next publish takes the next seq, no hole. */
    take_expect(1, (const struct expect[]){{"c", 1}, {"c", 2}}, 2);
    ck_assert_uint_eq(occupancy(1), 0);
    struct lg_publish_result a1 = publish("a", "xxxx");
    ck_assert_uint_eq(a1.seq, 1);
    ck_assert_str_eq(a1.id, id_of("a", 1));
    take_expect(0, (const struct expect[]){{"a", 1}}, 1);
    take_expect(1, (const struct expect[]){{"a", 1}}, 1);
    ck_assert_uint_eq(publish("c", "xxxx").seq, 3);
    take_expect(1, (const struct expect[]){{"c", 3}}, 1);
}
END_TEST

static unsigned rooms;
static void count_room(void *arg) { ++*(unsigned *)arg; }

START_TEST(worker_done_calls_the_room_callback)
{
    open_hub();
    lg_hub_worker_done(hub, 0); /* no callback set: nothing to call */
    lg_hub_on_room(hub, count_room, &rooms);
    rooms = 0;
    lg_hub_worker_done(hub, 1);
    ck_assert_uint_eq(rooms, 1);
    lg_hub_worker_done(hub, 0);
    ck_assert_uint_eq(rooms, 2);
}
END_TEST

static struct lg_call *answered_call;
static unsigned answers;
static void count_answer(void *arg, struct lg_call *call)
{
    ++*(unsigned *)arg;
    answered_call = call;
}

/* An admin call completes through its own callback, once, on the last worker's answer, and
 * never through the publish pacer's room callback (which would release every held publish). */
START_TEST(the_last_answer_to_a_call_runs_its_own_completion_not_the_room_callback)
{
    open_hub();
    lg_hub_on_room(hub, count_room, &rooms);
    rooms = answers = 0;
    answered_call = NULL;
    struct lg_call *call = lg_call_new(LG_CALL_LIST_CLIENTS);
    ck_assert_ptr_nonnull(call);
    call->answered = count_answer;
    call->answered_arg = &answers;
    lg_hub_post_call(hub, call);
    for (uint32_t w = 0; w < WORKERS; w++) {
        struct lg_call *taken = lg_hub_take_call(hub, w);
        ck_assert_ptr_eq(taken, call);
        ck_assert_uint_eq(answers, 0);
        ck_assert(!lg_call_complete(call));
        lg_hub_call_done(hub, taken, w);
    }
    ck_assert_uint_eq(answers, 1);
    ck_assert_ptr_eq(answered_call, call);
    ck_assert(lg_call_complete(call));
    ck_assert_uint_eq(rooms, 0);
    lg_call_unref(call);
}
END_TEST

/* ---- Idempotency keys --------------------------------------------------------------------- */

/* FNV-1a as the memory store's key index hashes (size_t wide). Used only to pick a key whose
 * prefix lands in the same index bucket, so a comparison that ignored the stored key's length
 * would be caught; with another hash the assertions still hold, just less pointedly. */
static size_t fnv1a(const char *s)
{
    size_t h = 2166136261u;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 16777619u;
    }
    return h;
}

/* A key "order-1<n>" whose low 10 hash bits equal those of "order-1" (any index up to 1024
 * buckets puts both in one chain). */
static void key_colliding_with_order_1(char *out, size_t len)
{
    size_t want = fnv1a("order-1") & 1023u;
    for (unsigned n = 0; n < 1000000; n++) {
        snprintf(out, len, "order-1%u", n);
        if ((fnv1a(out) & 1023u) == want)
            return;
    }
    ck_abort_msg("no colliding key found");
}

START_TEST(a_retry_with_the_same_key_answers_the_original_and_publishes_nothing)
{
    open_hub();
    listen_on("a", 0);
    struct lg_publish_result first, again, other, prefix, elsewhere;
    char key[32];
    key_colliding_with_order_1(key, sizeof key);
    ck_assert_int_eq(publish_idem("a", "v1", key, &first), LG_PUBLISH_OK);
    ck_assert(!first.duplicate);
    ck_assert_uint_eq(first.seq, 1);

    uint64_t published = LG_STAT_GET(events_published);
    uint64_t dedup = LG_STAT_GET(publishes_deduplicated);
    memset(&again, 0xee, sizeof again);
    ck_assert_int_eq(publish_idem("a", "v2 (a retry with other data)", key, &again),
                     LG_PUBLISH_OK);
    ck_assert(again.duplicate);
    ck_assert_uint_eq(again.seq, 1);
    ck_assert_uint_eq(again.epoch, first.epoch);
    ck_assert_str_eq(again.id, id_of("a", 1));
    ck_assert_uint_eq(newest_of("a"), 1);
    ck_assert_uint_eq(LG_STAT_GET(events_published), published);
    ck_assert_uint_eq(LG_STAT_GET(publishes_deduplicated), dedup + 1);
    take_expect(0, (const struct expect[]){{"a", 1}}, 1); /* delivered once */
    ck_assert_uint_eq(wakes[0], 1);

    /* Another key, a prefix of the key (same index chain), and the same key on another topic
     * are new events. */
    ck_assert_int_eq(publish_idem("a", "v3", "order-2", &other), LG_PUBLISH_OK);
    ck_assert(!other.duplicate);
    ck_assert_uint_eq(other.seq, 2);
    ck_assert_int_eq(publish_idem("a", "v4", "order-1", &prefix), LG_PUBLISH_OK);
    ck_assert(!prefix.duplicate);
    ck_assert_uint_eq(prefix.seq, 3);
    ck_assert_int_eq(publish_idem("b", "v5", key, &elsewhere), LG_PUBLISH_OK);
    ck_assert(!elsewhere.duplicate);
    ck_assert_uint_eq(elsewhere.seq, 1);
    ck_assert_str_eq(elsewhere.id, id_of("b", 1));
    /* A publish without a key is never a duplicate. */
    ck_assert_uint_eq(publish("a", "v1").seq, 4);
    take_expect(0, (const struct expect[]){{"a", 2}, {"a", 3}, {"a", 4}}, 3);

    /* The history's copy is the original. */
    struct lg_replay r;
    ck_assert_int_eq(resolve("a", epoch_of("a"), 0, 1, UINT64_MAX, &r), LG_HUB_OK);
    ck_assert_uint_eq(r.count, 1);
    ck_assert_str_eq(r.events[0]->data, "v1");
    ck_assert_str_eq(r.events[0]->idempotency_key, key);
    lg_replay_release(&r);
}
END_TEST

START_TEST(a_key_is_forgotten_once_its_event_leaves_history)
{
    cfg.history.max_events = 3;
    open_hub();
    struct lg_publish_result res;
    ck_assert_int_eq(publish_idem("a", "x", "k", &res), LG_PUBLISH_OK);
    ck_assert_uint_eq(res.seq, 1);
    publish("a", "x");
    publish("a", "x");
    ck_assert_int_eq(publish_idem("a", "x", "k", &res), LG_PUBLISH_OK);
    ck_assert(res.duplicate); /* 1 is still retained (1, 2, 3) */
    ck_assert_uint_eq(res.seq, 1);
    publish("a", "x"); /* 4 evicts 1 */
    ck_assert_uint_eq(oldest_of("a"), 2);

    ck_assert_int_eq(publish_idem("a", "x", "k", &res), LG_PUBLISH_OK);
    ck_assert(!res.duplicate);
    ck_assert_uint_eq(res.seq, 5);
    ck_assert_str_eq(res.id, id_of("a", 5));
    ck_assert_int_eq(publish_idem("a", "x", "k", &res), LG_PUBLISH_OK);
    ck_assert(res.duplicate); /* the new event now answers for the key */
    ck_assert_uint_eq(res.seq, 5);
    ck_assert_uint_eq(newest_of("a"), 5);
}
END_TEST

/* ---- Fan-out and wake-ups ----------------------------------------------------------------- */

START_TEST(events_reach_only_the_workers_that_listen)
{
    open_hub();
    listen_on("a", 0);
    listen_on("b", 1);
    publish("a", "x");
    publish("b", "x");
    publish("c", "x"); /* nobody listens: history only */
    publish("a", "x");
    ck_assert_uint_eq(occupancy(0), 2);
    ck_assert_uint_eq(occupancy(1), 1);
    take_expect(0, (const struct expect[]){{"a", 1}, {"a", 2}}, 2);
    take_expect(1, (const struct expect[]){{"b", 1}}, 1);
    ck_assert_uint_eq(newest_of("c"), 1);

    /* Worker 1 joins topic a: from then on both get it. */
    listen_on("a", 1);
    publish("a", "x");
    take_expect(0, (const struct expect[]){{"a", 3}}, 1);
    take_expect(1, (const struct expect[]){{"a", 3}}, 1);
}
END_TEST

/* Each inbox entry holds its topic from the push until its worker is done with it, so a topic
 * with events in flight cannot be collected, and a worker done with them leaves no reference. */
START_TEST(an_inbox_entry_holds_its_topic_until_its_worker_is_done)
{
    open_hub();
    listen_on("a", 0);
    listen_on("a", 1);
    struct lg_topic *a = topic("a");
    uint32_t before = atomic_load(&a->refs);
    publish("a", "x");
    publish("a", "y");
    ck_assert_uint_eq(atomic_load(&a->refs), before + 4); /* two events, two workers */
    for (uint32_t w = 0; w < WORKERS; w++) {
        struct lg_inbox_entry *batch;
        ck_assert_uint_eq(lg_inbox_take(&inbox[w], &batch), 2);
        ck_assert_ptr_eq(batch[0].topic, a);
        ck_assert_ptr_eq(batch[1].topic, a);
        ck_assert_uint_eq(atomic_load(&a->refs), before + 4 - 2 * w); /* taken is not done */
        lg_inbox_done(&inbox[w], batch, 2);
        ck_assert_uint_eq(atomic_load(&a->refs), before + 2 - 2 * w);
    }
    ck_assert_uint_eq(atomic_load(&a->refs), before);
}
END_TEST

START_TEST(subscribe_and_unsubscribe_count_listeners_per_worker)
{
    open_hub();
    publish("a", "x");
    ck_assert_uint_eq(listeners("a", 0), 0);
    listen_on("a", 0);
    listen_on("a", 0);
    ck_assert_uint_eq(listeners("a", 0), 2);
    ck_assert_uint_eq(listeners("a", 1), 0);

    /* A subscribe that does not listen (a one-off replay) registers nothing. */
    struct lg_replay r;
    ck_assert_int_eq(lg_hub_subscribe(hub, topic("a"), 1, NULL, 10, UINT64_MAX, false, &r),
                     LG_HUB_OK);
    lg_replay_release(&r);
    ck_assert_uint_eq(listeners("a", 1), 0);

    lg_hub_unsubscribe(hub, topic("a"), 0);
    ck_assert_uint_eq(listeners("a", 0), 1);
    publish("a", "x"); /* one subscription left: still delivered */
    take_expect(0, (const struct expect[]){{"a", 2}}, 1);

    lg_hub_unsubscribe(hub, topic("a"), 0);
    ck_assert_uint_eq(listeners("a", 0), 0);
    publish("a", "x");
    ck_assert_uint_eq(occupancy(0), 0);
    ck_assert(lg_inbox_empty(&inbox[0]));
    ck_assert_uint_eq(wakes[0], 1);

    lg_hub_unsubscribe(hub, topic("a"), 0); /* one too many: stays at 0, no wrap-around */
    ck_assert_uint_eq(listeners("a", 0), 0);
    publish("a", "x");
    ck_assert(lg_inbox_empty(&inbox[0]));
}
END_TEST

START_TEST(a_worker_is_woken_once_per_empty_to_non_empty_inbox)
{
    open_hub();
    listen_on("a", 0);
    listen_on("b", 0);
    listen_on("b", 1);
    publish("a", "x");
    ck_assert_uint_eq(wakes[0], 1);
    ck_assert_uint_eq(wakes[1], 0);
    publish("b", "x");
    ck_assert_uint_eq(wakes[0], 1); /* inbox 0 was not empty */
    ck_assert_uint_eq(wakes[1], 1);
    publish("a", "x");
    ck_assert_uint_eq(wakes[0], 1);
    take_expect(0, (const struct expect[]){{"a", 1}, {"b", 1}, {"a", 2}}, 3);
    publish("a", "x");
    ck_assert_uint_eq(wakes[0], 2); /* empty again: a new wake-up */
    ck_assert_uint_eq(wakes[1], 1);
    take_expect(0, (const struct expect[]){{"a", 3}}, 1);
    take_expect(1, (const struct expect[]){{"b", 1}}, 1);
}
END_TEST

/* A wake function that records how many events the woken worker's inbox held when woken. */
static size_t depth_at_wake[WORKERS];
static void wake_recording_depth(void *arg)
{
    uint32_t w = (uint32_t)(uintptr_t)arg;
    wakes[w]++;
    pthread_mutex_lock(&inbox[w].lock);
    depth_at_wake[w] = inbox[w].count;
    pthread_mutex_unlock(&inbox[w].lock);
}

START_TEST(publish_many_wakes_each_worker_at_most_once)
{
    cfg.limits.worker_inbox_events = 8;
    open_hub();
    for (uint32_t w = 0; w < WORKERS; w++)
        lg_hub_attach_worker(hub, w, &inbox[w], wake_recording_depth, (void *)(uintptr_t)w);
    listen_on("a", 0);
    listen_on("b", 0);
    listen_on("b", 1);
    struct lg_publish_req reqs[] = {req_of("a", "1", NULL), req_of("b", "2", NULL),
                                    req_of("a", "3", NULL), req_of("b", "4", NULL),
                                    req_of("c", "5", NULL)};
    struct lg_publish_result res[5];
    enum lg_publish_status status = LG_PUBLISH_OOM;
    ck_assert_uint_eq(lg_hub_publish_many(hub, reqs, 5, res, &status), 5);
    ck_assert_int_eq(status, LG_PUBLISH_OK);
    const uint64_t seqs[] = {1, 1, 2, 2, 1};
    for (size_t i = 0; i < 5; i++) {
        ck_assert_uint_eq(res[i].seq, seqs[i]);
        ck_assert(!res[i].duplicate);
    }
    ck_assert_str_eq(res[3].id, id_of("b", 2));
    ck_assert_uint_eq(wakes[0], 1);
    ck_assert_uint_eq(wakes[1], 1);
    /* Woken once the whole batch was handed over, not at its first event. */
    ck_assert_uint_eq(depth_at_wake[0], 4);
    ck_assert_uint_eq(depth_at_wake[1], 2);
    /* Per-topic order and arrival order are the batch's order. */
    take_expect(0, (const struct expect[]){{"a", 1}, {"b", 1}, {"a", 2}, {"b", 2}}, 4);
    take_expect(1, (const struct expect[]){{"b", 1}, {"b", 2}}, 2);
}
END_TEST

START_TEST(publish_many_stops_at_the_first_refusal_and_keeps_the_prefix)
{
    open_hub();
    listen_on("a", 0);
    struct lg_publish_req reqs[] = {req_of("a", "1", NULL), req_of("a", "2", NULL),
                                    req_of("$reserved", "3", NULL), req_of("a", "4", NULL)};
    struct lg_publish_result res[4];
    enum lg_publish_status status = LG_PUBLISH_OK;
    ck_assert_uint_eq(lg_hub_publish_many(hub, reqs, 4, res, &status), 2);
    ck_assert_int_eq(status, LG_PUBLISH_RESERVED_TOPIC);
    ck_assert_uint_eq(res[0].seq, 1);
    ck_assert_uint_eq(res[1].seq, 2);
    ck_assert_uint_eq(newest_of("a"), 2); /* item 4 was not published */
    ck_assert_uint_eq(wakes[0], 1);       /* the accepted prefix was still handed over */
    take_expect(0, (const struct expect[]){{"a", 1}, {"a", 2}}, 2);

    /* A full inbox stops a batch too; the items before it stay accepted. */
    for (int i = 0; i < 3; i++)
        publish("a", "fill"); /* seqs 3..5; inbox 0 holds 3 of its 4 */
    struct lg_publish_req more[] = {req_of("a", "6", NULL), req_of("a", "7", NULL)};
    ck_assert_uint_eq(lg_hub_publish_many(hub, more, 2, res, &status), 1);
    ck_assert_int_eq(status, LG_PUBLISH_WORKERS_BEHIND);
    ck_assert_uint_eq(res[0].seq, 6);
    ck_assert_uint_eq(newest_of("a"), 6);
    take_expect(0, (const struct expect[]){{"a", 3}, {"a", 4}, {"a", 5}, {"a", 6}}, 4);
}
END_TEST

/* A wake function that checks the publish holds no topic lock while it wakes. */
static struct lg_topic *watched;
static unsigned woken_unlocked, woken_locked;
static void wake_checking_lock(void *arg)
{
    (void)arg;
    if (pthread_mutex_trylock(&watched->lock) == 0) {
        woken_unlocked++;
        pthread_mutex_unlock(&watched->lock);
    } else {
        woken_locked++;
    }
}

START_TEST(workers_are_woken_after_the_topic_lock_is_dropped)
{
    open_hub();
    lg_hub_attach_worker(hub, 0, &inbox[0], wake_checking_lock, NULL);
    listen_on("a", 0);
    watched = topic("a");
    woken_unlocked = woken_locked = 0;
    publish("a", "x");
    ck_assert_uint_eq(woken_unlocked, 1);
    ck_assert_uint_eq(woken_locked, 0);
    take_expect(0, (const struct expect[]){{"a", 1}}, 1);
}
END_TEST

/* ---- Subscribe with a cursor -------------------------------------------------------------- */

START_TEST(a_cursor_in_history_replays_exactly_the_events_after_it)
{
    open_hub();
    for (int i = 0; i < 5; i++)
        publish("a", "xxxx");
    uint32_t epoch = epoch_of("a");
    struct lg_replay r;

    ck_assert_int_eq(resolve("a", epoch, 2, 100, UINT64_MAX, &r), LG_HUB_OK);
    ck_assert_uint_eq(r.count, 3);
    for (size_t i = 0; i < 3; i++)
        ck_assert_uint_eq(r.events[i]->seq, 3 + i);
    ck_assert_uint_eq(r.position, 5);
    ck_assert_uint_eq(r.epoch, epoch);
    ck_assert(!r.more);
    ck_assert(!r.reset);
    ck_assert_uint_eq(r.gap_from, 0);
    ck_assert_uint_eq(r.gap_to, 0);
    lg_replay_release(&r);
    ck_assert_ptr_null(r.events);
    ck_assert_uint_eq(r.count, 0);

    /* At the newest event: nothing to replay. */
    ck_assert_int_eq(resolve("a", epoch, 5, 100, UINT64_MAX, &r), LG_HUB_OK);
    ck_assert_uint_eq(r.count, 0);
    ck_assert_uint_eq(r.position, 5);
    ck_assert(!r.more);
    ck_assert_uint_eq(r.gap_from, 0);
    lg_replay_release(&r);

    /* No cursor: start now. */
    struct lg_replay now;
    ck_assert_int_eq(lg_hub_subscribe(hub, topic("a"), 0, NULL, 100, UINT64_MAX, false, &now),
                     LG_HUB_OK);
    ck_assert_uint_eq(now.count, 0);
    ck_assert_uint_eq(now.position, 5);
    ck_assert_uint_eq(now.epoch, epoch);
    ck_assert(!now.reset);
    ck_assert(!now.more);
    lg_replay_release(&now);

    /* From seq 0 (everything is retained): all five, no gap. */
    ck_assert_int_eq(resolve("a", epoch, 0, 100, UINT64_MAX, &r), LG_HUB_OK);
    ck_assert_uint_eq(r.count, 5);
    ck_assert_uint_eq(r.events[0]->seq, 1);
    ck_assert_uint_eq(r.gap_from, 0);
    lg_replay_release(&r);
}
END_TEST

START_TEST(a_replay_is_cut_at_max_events_and_max_bytes_with_more_set)
{
    open_hub();
    for (int i = 0; i < 5; i++)
        publish("a", "xxxx");
    uint64_t size = small_event_size();
    uint32_t epoch = epoch_of("a");
    struct lg_replay r;

    ck_assert_int_eq(resolve("a", epoch, 1, 2, UINT64_MAX, &r), LG_HUB_OK);
    ck_assert_uint_eq(r.count, 2);
    ck_assert_uint_eq(r.events[0]->seq, 2);
    ck_assert_uint_eq(r.events[1]->seq, 3);
    ck_assert_uint_eq(r.position, 3); /* the subscriber is at the last event it got */
    ck_assert(r.more);
    lg_replay_release(&r);

    ck_assert_int_eq(resolve("a", epoch, 1, 4, UINT64_MAX, &r), LG_HUB_OK);
    ck_assert_uint_eq(r.count, 4); /* exactly all that is left: no more */
    ck_assert_uint_eq(r.position, 5);
    ck_assert(!r.more);
    lg_replay_release(&r);

    ck_assert_int_eq(resolve("a", epoch, 1, 100, 2 * size, &r), LG_HUB_OK);
    ck_assert_uint_eq(r.count, 2);
    ck_assert_uint_eq(r.position, 3);
    ck_assert(r.more);
    lg_replay_release(&r);

    ck_assert_int_eq(resolve("a", epoch, 1, 100, 2 * size - 1, &r), LG_HUB_OK);
    ck_assert_uint_eq(r.count, 1);
    ck_assert_uint_eq(r.position, 2);
    ck_assert(r.more);
    lg_replay_release(&r);

    /* The first event always comes, whatever its size. */
    ck_assert_int_eq(resolve("a", epoch, 1, 100, 0, &r), LG_HUB_OK);
    ck_assert_uint_eq(r.count, 1);
    ck_assert_uint_eq(r.events[0]->seq, 2);
    ck_assert(r.more);
    lg_replay_release(&r);

    ck_assert_int_eq(resolve("a", epoch, 3, 100, 2 * size, &r), LG_HUB_OK);
    ck_assert_uint_eq(r.count, 2); /* 4 and 5 fit exactly */
    ck_assert_uint_eq(r.position, 5);
    ck_assert(!r.more);
    lg_replay_release(&r);
}
END_TEST

START_TEST(a_cursor_older_than_history_gets_the_exact_gap)
{
    cfg.history.max_events = 3;
    open_hub();
    for (int i = 0; i < 8; i++)
        publish("a", "x"); /* history keeps 6, 7, 8 */
    ck_assert_uint_eq(oldest_of("a"), 6);
    uint32_t epoch = epoch_of("a");
    struct lg_replay r;

    ck_assert_int_eq(resolve("a", epoch, 2, 100, UINT64_MAX, &r), LG_HUB_OK);
    ck_assert_uint_eq(r.gap_from, 3);
    ck_assert_uint_eq(r.gap_to, 5);
    ck_assert_uint_eq(r.count, 3);
    ck_assert_uint_eq(r.events[0]->seq, 6);
    ck_assert_uint_eq(r.events[2]->seq, 8);
    ck_assert_uint_eq(r.position, 8);
    ck_assert(!r.reset);
    ck_assert(!r.more);
    lg_replay_release(&r);

    ck_assert_int_eq(resolve("a", epoch, 0, 100, UINT64_MAX, &r), LG_HUB_OK);
    ck_assert_uint_eq(r.gap_from, 1);
    ck_assert_uint_eq(r.gap_to, 5);
    ck_assert_uint_eq(r.count, 3);
    lg_replay_release(&r);

    ck_assert_int_eq(resolve("a", epoch, 4, 100, UINT64_MAX, &r), LG_HUB_OK);
    ck_assert_uint_eq(r.gap_from, 5); /* a one-event gap */
    ck_assert_uint_eq(r.gap_to, 5);
    ck_assert_uint_eq(r.count, 3);
    lg_replay_release(&r);

    ck_assert_int_eq(resolve("a", epoch, 5, 100, UINT64_MAX, &r), LG_HUB_OK);
    ck_assert_uint_eq(r.gap_from, 0); /* 6 is the next one and is retained: no gap */
    ck_assert_uint_eq(r.gap_to, 0);
    ck_assert_uint_eq(r.count, 3);
    ck_assert_uint_eq(r.events[0]->seq, 6);
    lg_replay_release(&r);

    /* A gap and a cut page together. */
    ck_assert_int_eq(resolve("a", epoch, 2, 1, UINT64_MAX, &r), LG_HUB_OK);
    ck_assert_uint_eq(r.gap_from, 3);
    ck_assert_uint_eq(r.gap_to, 5);
    ck_assert_uint_eq(r.count, 1);
    ck_assert_uint_eq(r.events[0]->seq, 6);
    ck_assert_uint_eq(r.position, 6);
    ck_assert(r.more);
    lg_replay_release(&r);
}
END_TEST

START_TEST(a_foreign_epoch_resolves_to_reset)
{
    open_hub();
    publish("a", "x");
    publish("a", "x");
    uint32_t epoch = epoch_of("a");
    struct lg_replay r;
    ck_assert_int_eq(resolve("a", epoch ^ 1u, 1, 100, UINT64_MAX, &r), LG_HUB_OK);
    ck_assert(r.reset);
    ck_assert_uint_eq(r.epoch, epoch); /* names the new epoch */
    ck_assert_uint_eq(r.count, 0);     /* nothing of this epoch's history is replayed */
    ck_assert_uint_eq(r.position, 2);
    ck_assert_uint_eq(r.gap_from, 0);
    ck_assert(!r.more);
    lg_replay_release(&r);

    /* A foreign cursor's seq is meaningless here: beyond the newest is still a reset. */
    ck_assert_int_eq(resolve("a", epoch ^ 0x80000000u, 999, 100, UINT64_MAX, &r), LG_HUB_OK);
    ck_assert(r.reset);
    ck_assert_uint_eq(r.position, 2);
    lg_replay_release(&r);
}
END_TEST

START_TEST(a_cursor_ahead_of_the_newest_is_an_error_and_registers_nothing)
{
    open_hub();
    publish("a", "x");
    publish("a", "x");
    uint32_t epoch = epoch_of("a");
    struct lg_cursor_entry since = {.epoch = epoch, .seq = 3};
    snprintf(since.topic, sizeof since.topic, "a");
    struct lg_replay r;
    ck_assert_int_eq(
        lg_hub_subscribe(hub, topic("a"), 0, &since, 100, UINT64_MAX, true, &r),
        LG_HUB_CURSOR_AHEAD);
    ck_assert_str_eq(lg_hub_status_message(LG_HUB_CURSOR_AHEAD),
                     "the cursor is ahead of the topic's newest event");
    ck_assert_uint_eq(r.count, 0);
    ck_assert_ptr_null(r.events);
    ck_assert_uint_eq(listeners("a", 0), 0); /* a refused subscribe does not listen */
    publish("a", "x");
    ck_assert(lg_inbox_empty(&inbox[0]));

    /* Now 3 exists: the same cursor is valid and at the newest. */
    ck_assert_int_eq(
        lg_hub_subscribe(hub, topic("a"), 0, &since, 100, UINT64_MAX, true, &r), LG_HUB_OK);
    ck_assert_uint_eq(r.count, 0);
    ck_assert_uint_eq(r.position, 3);
    ck_assert_uint_eq(listeners("a", 0), 1);
    lg_replay_release(&r);

    /* A topic with nothing published yet: seq 0 is at the newest, seq 1 is ahead. */
    topic_create("empty");
    ck_assert_int_eq(resolve("empty", epoch_of("empty"), 0, 100, UINT64_MAX, &r), LG_HUB_OK);
    ck_assert_uint_eq(r.position, 0);
    ck_assert_uint_eq(r.count, 0);
    ck_assert_uint_eq(r.gap_from, 0);
    lg_replay_release(&r);
    ck_assert_int_eq(resolve("empty", epoch_of("empty"), 1, 100, UINT64_MAX, &r),
                     LG_HUB_CURSOR_AHEAD);
}
END_TEST

START_TEST(a_listening_subscribe_gets_live_events_after_its_replay_without_overlap)
{
    open_hub();
    publish("a", "x");
    publish("a", "x");
    struct lg_cursor_entry since = {.epoch = epoch_of("a"), .seq = 1};
    snprintf(since.topic, sizeof since.topic, "a");
    struct lg_replay r;
    ck_assert_int_eq(
        lg_hub_subscribe(hub, topic("a"), 1, &since, 100, UINT64_MAX, true, &r), LG_HUB_OK);
    ck_assert_uint_eq(r.count, 1);
    ck_assert_uint_eq(r.events[0]->seq, 2);
    ck_assert_uint_eq(r.position, 2);
    ck_assert_uint_eq(listeners("a", 1), 1);
    lg_replay_release(&r);
    publish("a", "x");
    ck_assert(lg_inbox_empty(&inbox[0]));
    take_expect(1, (const struct expect[]){{"a", 3}}, 1); /* the inbox starts after the replay */
}
END_TEST

/* ---- Expiry ------------------------------------------------------------------------------- */

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Published mono time of the oldest retained event of a topic (which must have one). */
static uint64_t oldest_published_ns(const char *name)
{
    struct lg_replay r;
    ck_assert_int_eq(resolve(name, epoch_of(name), oldest_of(name) - 1, 1, UINT64_MAX, &r),
                     LG_HUB_OK);
    ck_assert_uint_eq(r.count, 1);
    uint64_t at = r.events[0]->published_mono_ns;
    lg_replay_release(&r);
    return at;
}

/* A cursor at 0 on topic `name` replays no event, only the gap 1..newest. */
static void assert_replay_from_start_is_only_a_gap_to(const char *name, uint64_t newest)
{
    struct lg_replay r;
    ck_assert_int_eq(resolve(name, epoch_of(name), 0, 100, UINT64_MAX, &r), LG_HUB_OK);
    ck_assert_uint_eq(r.gap_from, 1);
    ck_assert_uint_eq(r.gap_to, newest);
    ck_assert_uint_eq(r.count, 0);
    ck_assert_uint_eq(r.position, newest);
    ck_assert(!r.more);
    lg_replay_release(&r);
}

START_TEST(expire_drops_exactly_the_events_older_than_max_age)
{
    cfg.history.max_age_ms = 200;
    cfg.limits.max_topics = 64; /* a table of 64 buckets: one sweep covers all of it */
    open_hub();
    struct lg_publish_result res;
    publish("b", "x");
    ck_assert_int_eq(publish_idem("a", "x", "once", &res), LG_PUBLISH_OK);
    uint64_t a1_at = oldest_published_ns("a");
    uint64_t b1_at = oldest_published_ns("b");
    ck_assert_uint_le(b1_at, a1_at);

    lg_hub_expire(hub); /* nothing is that old yet */
    ck_assert_uint_eq(oldest_of("a"), 1);
    ck_assert_uint_eq(oldest_of("b"), 1);

    sleep_ms(100);
    publish("a", "x"); /* a2: half the age bound younger than a1 */
    uint64_t deadline = lg_mono_ns() + 1500 * MS;
    bool gone = false;
    while (!gone) {
        uint64_t before = lg_mono_ns();
        lg_hub_expire(hub);
        uint64_t after = lg_mono_ns();
        gone = oldest_of("a") != 1;
        if (gone) /* dropped only once it was older than the bound */
            ck_assert_uint_gt(after - a1_at, 200 * MS);
        else /* and not kept once it was */
            ck_assert_uint_le(before - a1_at, 200 * MS);
        ck_assert_uint_lt(lg_mono_ns(), deadline);
        if (!gone)
            sleep_ms(2);
    }
    ck_assert_uint_eq(oldest_of("a"), 2); /* a2 is younger: it stays */
    ck_assert_uint_eq(newest_of("a"), 2);
    /* b1, older than a1, went in the same sweep: a small table is swept whole each time. */
    ck_assert_uint_eq(oldest_of("b"), 2);
    ck_assert_uint_eq(newest_of("b"), 1);

    /* An emptied history: a cursor before it gets a gap up to the newest, nothing else. */
    assert_replay_from_start_is_only_a_gap_to("b", 1);

    /* The expired event's idempotency key is forgotten; the next seq follows the newest. */
    ck_assert_int_eq(publish_idem("a", "x", "once", &res), LG_PUBLISH_OK);
    ck_assert(!res.duplicate);
    ck_assert_uint_eq(res.seq, 3);
    ck_assert_uint_eq(publish("b", "x").seq, 2);
}
END_TEST

/* The default table (65,536 buckets) is swept in slices of 8,192: one call ages out only the
 * topics in its slice, eight calls reach every topic, and a ninth starts over. */
START_TEST(a_large_table_is_swept_in_slices_that_together_cover_every_topic)
{
    enum { TOPICS = 200 };
    cfg.history.max_age_ms = 20;
    open_hub(); /* limits.max_topics 100,000: 65,536 buckets */
    char name[32];
    for (int i = 0; i < TOPICS; i++) {
        snprintf(name, sizeof name, "t%d", i);
        publish(name, "x");
    }
    sleep_ms(40);
    unsigned aged[9];
    for (int call = 0; call < 9; call++) {
        lg_hub_expire(hub);
        aged[call] = 0;
        for (int i = 0; i < TOPICS; i++) {
            snprintf(name, sizeof name, "t%d", i);
            aged[call] += oldest_of(name) == 2; /* its only event is gone */
        }
    }
    ck_assert_uint_gt(aged[0], 0);
    ck_assert_uint_lt(aged[0], TOPICS / 2); /* one slice of eight, not the table */
    for (int call = 1; call < 8; call++)
        ck_assert_uint_ge(aged[call], aged[call - 1]);
    ck_assert_uint_eq(aged[7], TOPICS);
}
END_TEST

/* A replay ages out the topic's history before reading it, so a cursor never gets an event
 * older than max_age_ms, whether or not the sweep has been by. */
START_TEST(a_replay_never_reads_an_event_older_than_max_age_before_the_sweep)
{
    cfg.history.max_age_ms = 150; /* the two appends are far closer, even under valgrind */
    open_hub();
    publish("c", "x");
    publish("c", "y");
    sleep_ms(200);
    ck_assert_uint_eq(oldest_of("c"), 1); /* no sweep ran: still retained */
    assert_replay_from_start_is_only_a_gap_to("c", 2);
}
END_TEST

static Suite *hub_suite(void)
{
    Suite *s = suite_create("hub");
    LG_TCASE(s, "publish", setup, teardown, publish_assigns_dense_seqs_per_topic_with_exact_ids,
             type_and_key_reach_the_event);
    LG_TCASE(s, "refusals", setup, teardown, invalid_requests_are_refused_and_create_nothing,
             status_messages_name_the_limit, max_topics_refuses_a_new_topic_but_not_existing_ones,
             retained_bytes_limit_evicts_the_topics_own_history_first,
             retained_bytes_held_by_another_topic_refuse_and_leave_it_alone,
             a_full_inbox_refuses_with_workers_behind_and_publishes_nothing,
             worker_done_calls_the_room_callback,
             the_last_answer_to_a_call_runs_its_own_completion_not_the_room_callback);
    LG_TCASE(s, "idempotency", setup, teardown,
             a_retry_with_the_same_key_answers_the_original_and_publishes_nothing,
             a_key_is_forgotten_once_its_event_leaves_history);
    LG_TCASE(s, "fan_out", setup, teardown, events_reach_only_the_workers_that_listen,
             an_inbox_entry_holds_its_topic_until_its_worker_is_done,
             subscribe_and_unsubscribe_count_listeners_per_worker,
             a_worker_is_woken_once_per_empty_to_non_empty_inbox,
             publish_many_wakes_each_worker_at_most_once,
             publish_many_stops_at_the_first_refusal_and_keeps_the_prefix,
             workers_are_woken_after_the_topic_lock_is_dropped);
    LG_TCASE(s, "subscribe_cursor", setup, teardown,
             a_cursor_in_history_replays_exactly_the_events_after_it,
             a_replay_is_cut_at_max_events_and_max_bytes_with_more_set,
             a_cursor_older_than_history_gets_the_exact_gap, a_foreign_epoch_resolves_to_reset,
             a_cursor_ahead_of_the_newest_is_an_error_and_registers_nothing,
             a_listening_subscribe_gets_live_events_after_its_replay_without_overlap);
    tcase_set_timeout(LG_TCASE(s, "expiry", setup, teardown,
                               expire_drops_exactly_the_events_older_than_max_age,
                               a_large_table_is_swept_in_slices_that_together_cover_every_topic,
                               a_replay_never_reads_an_event_older_than_max_age_before_the_sweep),
                      10);
    return s;
}

LG_CHECK_MAIN(hub_suite)
