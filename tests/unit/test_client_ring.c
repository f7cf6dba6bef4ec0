/*
 * test_client_ring.c - one subscriber's bounded queue of event references (client_ring.h):
 * FIFO order across wrap-around, slots allocated on the first push and given back when the
 * queue empties, growth by doubling capped at max_events, the push refused at the bound, the
 * references it steals and hands back, conflation by (topic, key), removal by topic, and
 * compaction of tombstones. Events are real (lg_event_create); their topic pointers are two
 * dummy objects, compared and never dereferenced by the ring.
 */
#include <check.h>
#include <stdalign.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_ring.h"
#include "check_main.h"
#include "event.h"
#include "stats.h"

static alignas(max_align_t) char topic_a_obj[64];
static alignas(max_align_t) char topic_b_obj[64];
#define TOPIC_A ((struct lg_topic *)(void *)topic_a_obj)
#define TOPIC_B ((struct lg_topic *)(void *)topic_b_obj)

/* An event of topic A or B with this seq and conflation key (NULL = none); data = "d<seq>". */
static struct lg_event *make(struct lg_topic *t, uint64_t seq, const char *key)
{
    char data[32];
    snprintf(data, sizeof data, "d%llu", (unsigned long long)seq);
    const char *name = t == TOPIC_A ? "a" : "b";
    struct lg_event_fields f = {
        .topic_identity = t,
        .topic_name = name,
        .topic_name_len = 1,
        .epoch = 7,
        .seq = seq,
        .key = key,
        .key_len = key ? strlen(key) : 0,
        .data = data,
        .data_len = strlen(data),
    };
    struct lg_event *ev = lg_event_create(&f);
    ck_assert_ptr_nonnull(ev);
    return ev;
}

static uint32_t refs(struct lg_event *ev) { return atomic_load(&ev->refcount); }

/* Pop one event, check its topic and seq, and drop the reference the pop handed back. */
static void pop_expect(struct lg_client_ring *r, struct lg_topic *t, uint64_t seq)
{
    struct lg_event *ev = lg_client_ring_pop(r);
    ck_assert_ptr_nonnull(ev);
    ck_assert_ptr_eq(ev->topic_identity, t);
    ck_assert_uint_eq(ev->seq, seq);
    lg_event_unref(&ev);
}

/* A new ring holding events 1..n of TOPIC_A, pushed with max_events `bound`. */
static void init_with_run(struct lg_client_ring *r, uint64_t n, uint32_t bound)
{
    lg_client_ring_init(r);
    for (uint64_t seq = 1; seq <= n; seq++)
        ck_assert_int_eq(lg_client_ring_push(r, make(TOPIC_A, seq, NULL), bound), 0);
}

struct popped {
    struct lg_topic *topic;
    uint64_t seq;
};

/* The ring holds exactly these events, oldest first: pop them all, then release the ring. */
static void drain_expect(struct lg_client_ring *r, const struct popped *want, size_t n)
{
    for (size_t i = 0; i < n; i++)
        pop_expect(r, want[i].topic, want[i].seq);
    ck_assert_ptr_null(lg_client_ring_pop(r));
    lg_client_ring_release(r);
}

static void assert_empty_and_slotless(const struct lg_client_ring *r)
{
    ck_assert_ptr_null(r->slots);
    ck_assert_uint_eq(r->capacity, 0);
    ck_assert_uint_eq(r->head, 0);
    ck_assert_uint_eq(r->used, 0);
    ck_assert_uint_eq(r->live, 0);
    ck_assert_uint_eq(r->bytes, 0);
}

/* ---- Empty ring --------------------------------------------------------------------------- */

START_TEST(a_new_ring_holds_nothing_and_no_slots)
{
    struct lg_client_ring r;
    memset(&r, 0xa5, sizeof r);
    lg_client_ring_init(&r);
    assert_empty_and_slotless(&r);
    ck_assert_ptr_null(lg_client_ring_oldest(&r));
    ck_assert_ptr_null(lg_client_ring_pop(&r));
    ck_assert(!lg_client_ring_remove_key(&r, TOPIC_A, "k"));
    ck_assert_uint_eq(lg_client_ring_remove_topic(&r, TOPIC_A), 0);
    assert_empty_and_slotless(&r); /* none of those allocated anything */
    lg_client_ring_release(&r);
    assert_empty_and_slotless(&r);
}
END_TEST

/* ---- Order, references, allocation ------------------------------------------------------- */

START_TEST(pop_returns_events_oldest_first_with_exact_counts)
{
    struct lg_client_ring r;
    lg_client_ring_init(&r);
    struct lg_event *e1 = make(TOPIC_A, 1, NULL), *e2 = make(TOPIC_B, 2, NULL),
                    *e3 = make(TOPIC_A, 3, NULL);
    uint64_t s1 = e1->size, s2 = e2->size, s3 = e3->size;
    ck_assert_int_eq(lg_client_ring_push(&r, e1, 100), 0);
    ck_assert_ptr_nonnull(r.slots); /* the first push allocates */
    ck_assert_uint_gt(r.capacity, 0);
    ck_assert_uint_le(r.capacity, 100);
    ck_assert_int_eq(lg_client_ring_push(&r, e2, 100), 0);
    ck_assert_int_eq(lg_client_ring_push(&r, e3, 100), 0);
    ck_assert_uint_eq(r.live, 3);
    ck_assert_uint_eq(r.used, 3);
    ck_assert_uint_eq(r.bytes, s1 + s2 + s3);

    /* oldest() borrows: it removes nothing and takes no reference */
    ck_assert_ptr_eq(lg_client_ring_oldest(&r), e1);
    ck_assert_ptr_eq(lg_client_ring_oldest(&r), e1);
    ck_assert_uint_eq(refs(e1), 1);
    ck_assert_uint_eq(r.live, 3);

    pop_expect(&r, TOPIC_A, 1);
    ck_assert_uint_eq(r.live, 2);
    ck_assert_uint_eq(r.bytes, s2 + s3);
    ck_assert_ptr_eq(lg_client_ring_oldest(&r), e2);
    pop_expect(&r, TOPIC_B, 2);
    ck_assert_uint_eq(r.live, 1);
    ck_assert_uint_eq(r.bytes, s3);
    pop_expect(&r, TOPIC_A, 3);
    ck_assert_ptr_null(lg_client_ring_pop(&r));
    lg_client_ring_release(&r);
}
END_TEST

START_TEST(push_steals_the_reference_and_pop_hands_it_back)
{
    struct lg_client_ring r;
    lg_client_ring_init(&r);
    struct lg_event *ev = make(TOPIC_A, 1, NULL);
    lg_event_ref(ev); /* ours; the ring gets the other one */
    ck_assert_int_eq(lg_client_ring_push(&r, ev, 10), 0);
    ck_assert_uint_eq(refs(ev), 2); /* push took no extra reference */
    struct lg_event *popped = lg_client_ring_pop(&r);
    ck_assert_ptr_eq(popped, ev);
    ck_assert_uint_eq(refs(ev), 2); /* pop dropped none: the ring's reference is now ours */
    lg_event_unref(&popped);
    ck_assert_ptr_null(popped);
    ck_assert_uint_eq(refs(ev), 1);
    lg_event_unref(&ev);
    lg_client_ring_release(&r);
}
END_TEST

START_TEST(the_last_pop_gives_the_slots_back_and_the_next_push_allocates_again)
{
    struct lg_client_ring r;
    lg_client_ring_init(&r);
    ck_assert_int_eq(lg_client_ring_push(&r, make(TOPIC_A, 1, NULL), 50), 0);
    ck_assert_int_eq(lg_client_ring_push(&r, make(TOPIC_A, 2, NULL), 50), 0);
    pop_expect(&r, TOPIC_A, 1);
    ck_assert_ptr_nonnull(r.slots); /* one still queued */
    pop_expect(&r, TOPIC_A, 2);
    assert_empty_and_slotless(&r); /* an idle subscriber costs no slots */

    ck_assert_int_eq(lg_client_ring_push(&r, make(TOPIC_A, 3, NULL), 50), 0);
    ck_assert_ptr_nonnull(r.slots);
    ck_assert_uint_eq(r.live, 1);
    pop_expect(&r, TOPIC_A, 3);
    assert_empty_and_slotless(&r);
    lg_client_ring_release(&r);
}
END_TEST

/* The capacity after n pushes into a ring whose first push allocated `first` slots: doubled
 * as often as needed to hold n, never past the power of two at or above max_events. */
static uint32_t doubled_capacity(uint32_t first, uint32_t n, uint32_t max_events)
{
    uint64_t c = first, most = 1;
    while (c < n)
        c *= 2;
    while (most < max_events)
        most *= 2;
    return c > most ? (uint32_t)most : (uint32_t)c;
}

START_TEST(slots_grow_by_doubling_and_never_past_max_events)
{
    struct lg_client_ring r;
    lg_client_ring_init(&r);
    ck_assert_int_eq(lg_client_ring_push(&r, make(TOPIC_A, 1, NULL), 1000), 0);
    uint32_t first = r.capacity;
    ck_assert_uint_ge(first, 1);
    for (uint32_t n = 2; n <= 300; n++) {
        ck_assert_int_eq(lg_client_ring_push(&r, make(TOPIC_A, n, NULL), 1000), 0);
        ck_assert_msg(r.capacity == doubled_capacity(first, n, 1000),
                      "after %u pushes: capacity %u, want %u", n, r.capacity,
                      doubled_capacity(first, n, 1000));
    }
    ck_assert_uint_eq(r.live, 300);
    for (uint64_t seq = 1; seq <= 300; seq++)
        pop_expect(&r, TOPIC_A, seq);
    assert_empty_and_slotless(&r);

    /* A bound that is not a power of two caps the doubling at the power of two above it, and
     * the slots past the bound are never filled. */
    for (uint32_t n = 1; n <= 5; n++) {
        ck_assert_int_eq(lg_client_ring_push(&r, make(TOPIC_A, n, NULL), 5), 0);
        ck_assert_uint_eq(r.capacity, 8);
    }
    ck_assert_int_eq(lg_client_ring_push(&r, make(TOPIC_A, 6, NULL), 5), -1);
    ck_assert_uint_eq(r.live, 5);
    lg_client_ring_release(&r);
    assert_empty_and_slotless(&r);
}
END_TEST

START_TEST(order_survives_wrap_around_without_growing)
{
    struct lg_client_ring r;
    init_with_run(&r, 4, 4);
    ck_assert_uint_eq(r.capacity, 4);
    pop_expect(&r, TOPIC_A, 1);
    pop_expect(&r, TOPIC_A, 2);
    ck_assert_int_eq(lg_client_ring_push(&r, make(TOPIC_A, 5, NULL), 4), 0);
    ck_assert_int_eq(lg_client_ring_push(&r, make(TOPIC_A, 6, NULL), 4), 0);
    ck_assert_uint_eq(r.capacity, 4); /* reused the two freed slots: wrapped, no growth */
    ck_assert_uint_eq(r.head, 2);
    ck_assert_uint_eq(r.live, 4);
    for (uint64_t seq = 3; seq <= 6; seq++)
        pop_expect(&r, TOPIC_A, seq);
    assert_empty_and_slotless(&r);
    lg_client_ring_release(&r);
}
END_TEST

START_TEST(a_push_at_max_events_is_refused_and_unrefs_the_event)
{
    struct lg_client_ring r;
    init_with_run(&r, 3, 3);
    uint64_t bytes = r.bytes;
    struct lg_event *extra = make(TOPIC_A, 4, NULL);
    lg_event_ref(extra); /* keep it alive to see what push did with its reference */
    ck_assert_int_eq(lg_client_ring_push(&r, extra, 3), -1);
    ck_assert_uint_eq(refs(extra), 1); /* the stolen reference was dropped, not leaked */
    ck_assert_uint_eq(r.live, 3);
    ck_assert_uint_eq(r.used, 3);
    ck_assert_uint_eq(r.capacity, 4); /* a free slot: the bound refused it, not the slots */
    ck_assert_uint_eq(r.bytes, bytes);
    lg_event_unref(&extra);
    for (uint64_t seq = 1; seq <= 3; seq++)
        pop_expect(&r, TOPIC_A, seq);
    lg_client_ring_release(&r);
}
END_TEST

START_TEST(release_unrefs_what_is_left_and_resets_the_ring)
{
    struct lg_client_ring r;
    lg_client_ring_init(&r);
    struct lg_event *ev[3];
    for (int i = 0; i < 3; i++) {
        ev[i] = make(i == 1 ? TOPIC_B : TOPIC_A, (uint64_t)i + 1, i == 2 ? "k" : NULL);
        lg_event_ref(ev[i]);
        ck_assert_int_eq(lg_client_ring_push(&r, ev[i], 10), 0);
    }
    ck_assert(lg_client_ring_remove_key(&r, TOPIC_A, "k")); /* leaves a tombstone */
    ck_assert_uint_eq(refs(ev[2]), 1);
    lg_client_ring_release(&r);
    assert_empty_and_slotless(&r);
    for (int i = 0; i < 3; i++) {
        ck_assert_uint_eq(refs(ev[i]), 1); /* exactly the ring's reference went */
        lg_event_unref(&ev[i]);
    }
}
END_TEST

/* ---- Conflation and removal --------------------------------------------------------------- */

START_TEST(remove_key_drops_only_the_event_of_that_topic_and_key)
{
    struct lg_client_ring r;
    lg_client_ring_init(&r);
    struct lg_event *a1 = make(TOPIC_A, 1, "x");
    uint64_t a1_size = a1->size;
    ck_assert_int_eq(lg_client_ring_push(&r, a1, 10), 0);
    ck_assert_int_eq(lg_client_ring_push(&r, make(TOPIC_B, 2, "x"), 10), 0);
    ck_assert_int_eq(lg_client_ring_push(&r, make(TOPIC_A, 3, "xy"), 10), 0);
    ck_assert_int_eq(lg_client_ring_push(&r, make(TOPIC_A, 4, NULL), 10), 0);
    uint64_t bytes = r.bytes;

    ck_assert(!lg_client_ring_remove_key(&r, TOPIC_A, "z"));
    ck_assert(!lg_client_ring_remove_key(&r, TOPIC_B, "xy")); /* key of another topic */
    ck_assert(!lg_client_ring_remove_key(&r, TOPIC_A, "")); /* an unkeyed event has no key */
    ck_assert_uint_eq(r.live, 4);

    ck_assert(lg_client_ring_remove_key(&r, TOPIC_A, "x"));
    ck_assert_uint_eq(r.live, 3);
    ck_assert_uint_eq(r.bytes, bytes - a1_size);
    ck_assert(!lg_client_ring_remove_key(&r, TOPIC_A, "x")); /* already gone */

    struct lg_event *oldest = lg_client_ring_oldest(&r); /* skips the tombstone */
    ck_assert_ptr_nonnull(oldest);
    ck_assert_ptr_eq(oldest->topic_identity, TOPIC_B);
    ck_assert_uint_eq(oldest->seq, 2);
    drain_expect(&r, (const struct popped[]){{TOPIC_B, 2}, {TOPIC_A, 3}, {TOPIC_A, 4}}, 3);
}
END_TEST

START_TEST(remove_topic_drops_every_event_of_the_topic_and_keeps_the_rest_in_order)
{
    struct lg_client_ring r;
    lg_client_ring_init(&r);
    uint64_t b_bytes = 0;
    for (uint64_t seq = 1; seq <= 5; seq++) {
        struct lg_event *ev = make(seq % 2 ? TOPIC_A : TOPIC_B, seq, NULL);
        if (ev->topic_identity == TOPIC_B)
            b_bytes += ev->size;
        ck_assert_int_eq(lg_client_ring_push(&r, ev, 10), 0);
    }
    ck_assert_uint_eq(lg_client_ring_remove_topic(&r, TOPIC_A), 3);
    ck_assert_uint_eq(r.live, 2);
    ck_assert_uint_eq(r.bytes, b_bytes);
    ck_assert_uint_eq(lg_client_ring_remove_topic(&r, TOPIC_A), 0);
    drain_expect(&r, (const struct popped[]){{TOPIC_B, 2}, {TOPIC_B, 4}}, 2);
}
END_TEST

START_TEST(tombstones_are_compacted_when_the_slots_run_out)
{
    struct lg_client_ring r;
    lg_client_ring_init(&r);
    ck_assert_int_eq(lg_client_ring_push(&r, make(TOPIC_A, 1, NULL), 4), 0);
    ck_assert_int_eq(lg_client_ring_push(&r, make(TOPIC_A, 2, "m"), 4), 0);
    ck_assert_int_eq(lg_client_ring_push(&r, make(TOPIC_A, 3, NULL), 4), 0);
    ck_assert_int_eq(lg_client_ring_push(&r, make(TOPIC_A, 4, NULL), 4), 0);
    ck_assert_uint_eq(r.capacity, 4);
    ck_assert(lg_client_ring_remove_key(&r, TOPIC_A, "m")); /* conflation: a hole mid-queue */
    ck_assert_uint_eq(r.used, 4);
    ck_assert_uint_eq(r.live, 3);
    /* The caller made room (live < max_events): the push reuses the hole. */
    ck_assert_int_eq(lg_client_ring_push(&r, make(TOPIC_A, 5, NULL), 4), 0);
    ck_assert_uint_eq(r.capacity, 4);
    ck_assert_uint_eq(r.live, 4);
    ck_assert_uint_eq(r.used, 4);
    pop_expect(&r, TOPIC_A, 1);
    pop_expect(&r, TOPIC_A, 3);
    pop_expect(&r, TOPIC_A, 4);
    pop_expect(&r, TOPIC_A, 5);
    assert_empty_and_slotless(&r);
    lg_client_ring_release(&r);
}
END_TEST

START_TEST(a_ring_emptied_by_remove_topic_gives_its_slots_back)
{
    /* client_ring.h: "an idle subscriber costs no slots at all". Unsubscribing from the only
     * topic with queued events leaves the subscriber idle, like its last pop does. */
    struct lg_client_ring r;
    init_with_run(&r, 20, 1024);
    ck_assert_uint_eq(lg_client_ring_remove_topic(&r, TOPIC_A), 20);
    ck_assert_uint_eq(r.live, 0);
    ck_assert_uint_eq(r.bytes, 0);
    ck_assert_ptr_null(lg_client_ring_oldest(&r));
    bool slotless = r.slots == NULL && r.capacity == 0;
    uint32_t capacity = r.capacity;
    lg_client_ring_release(&r); /* before the verdict, so a failure leaks nothing */
    ck_assert_msg(slotless, "an empty ring still holds %u slots after remove_topic", capacity);
}
END_TEST

static Suite *client_ring_suite(void)
{
    Suite *s = suite_create("client_ring");
    TCase *order = tcase_create("order_and_slots");
    tcase_add_test(order, a_new_ring_holds_nothing_and_no_slots);
    tcase_add_test(order, pop_returns_events_oldest_first_with_exact_counts);
    tcase_add_test(order, push_steals_the_reference_and_pop_hands_it_back);
    tcase_add_test(order, the_last_pop_gives_the_slots_back_and_the_next_push_allocates_again);
    tcase_add_test(order, slots_grow_by_doubling_and_never_past_max_events);
    tcase_add_test(order, order_survives_wrap_around_without_growing);
    tcase_add_test(order, a_push_at_max_events_is_refused_and_unrefs_the_event);
    tcase_add_test(order, release_unrefs_what_is_left_and_resets_the_ring);
    suite_add_tcase(s, order);
    TCase *removal = tcase_create("removal");
    tcase_add_test(removal, remove_key_drops_only_the_event_of_that_topic_and_key);
    tcase_add_test(removal, remove_topic_drops_every_event_of_the_topic_and_keeps_the_rest_in_order);
    tcase_add_test(removal, tombstones_are_compacted_when_the_slots_run_out);
    tcase_add_test(removal, a_ring_emptied_by_remove_topic_gives_its_slots_back);
    suite_add_tcase(s, removal);
    return s;
}

LG_CHECK_MAIN(client_ring_suite)
