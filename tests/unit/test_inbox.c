#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "accounting.h"
#include "event.h"
#include "inbox.h"
#include "stats.h"
#include "topic.h"

#include "check_main.h"

/* An event whose topic name says which producer made it and whose seq is its number there. */
static struct lg_event *event_from(uint32_t producer, uint64_t seq)
{
    char topic[16];
    topic[0] = 'p';
    topic[1] = (char)('0' + producer);
    struct lg_event_fields f = {
        .topic_name = topic,
        .topic_name_len = 2,
        .epoch = producer,
        .seq = seq,
        .data = "x",
        .data_len = 1,
    };
    struct lg_event *ev = lg_event_create(&f);
    ck_assert_ptr_nonnull(ev);
    return ev;
}

/* The topic every entry is queued with; each entry holds a reference to it. */
static struct lg_topic *topic;

static void make_topic(void)
{
    topic = lg_topic_create("p", 1, LG_SLOW_DROP_OLDEST, NULL, 1);
    ck_assert_ptr_nonnull(topic);
}

static void free_topic(void)
{
    ck_assert_uint_eq(atomic_load(&topic->refs), 1); /* every entry gave its reference back */
    lg_topic_destroy(topic);
}

static size_t occupancy(struct lg_inbox *in)
{
    return atomic_load(&in->occupancy);
}

/* Reserve and push one event. Return value: what push_reserved said (was empty). */
static bool push_one(struct lg_inbox *in, uint64_t seq)
{
    ck_assert(lg_inbox_reserve(in));
    struct lg_event *ev = event_from(0, seq);
    bool was_empty = lg_inbox_push_reserved(in, topic, ev);
    lg_event_unref(&ev);
    return was_empty;
}

/* Take, check the seqs are first..first+n-1 and hand them back done. */
static void take_expect(struct lg_inbox *in, uint64_t first, size_t n)
{
    struct lg_inbox_entry *batch;
    ck_assert_uint_eq(lg_inbox_take(in, &batch), n);
    for (size_t i = 0; i < n; i++) {
        ck_assert_ptr_eq(batch[i].topic, topic);
        ck_assert_uint_eq(batch[i].event->seq, first + i);
    }
    lg_inbox_done(in, batch, n);
}

/* ---- Lifecycle ---------------------------------------------------------------------------- */

START_TEST(init_refuses_zero_capacity)
{
    struct lg_inbox in;
    ck_assert_int_eq(lg_inbox_init(&in, 0), -EINVAL);
}
END_TEST

START_TEST(init_starts_empty)
{
    struct lg_inbox in;
    ck_assert_int_eq(lg_inbox_init(&in, 8), 0);
    ck_assert_uint_eq(in.capacity, 8);
    ck_assert_uint_eq(in.count, 0);
    ck_assert_uint_eq(occupancy(&in), 0);
    struct lg_inbox_entry *batch;
    ck_assert_uint_eq(lg_inbox_take(&in, &batch), 0);
    lg_inbox_release(&in);
}
END_TEST

START_TEST(release_unrefs_queued_events)
{
    int64_t live = lg_account_events();
    struct lg_inbox in;
    ck_assert_int_eq(lg_inbox_init(&in, 8), 0);
    for (uint64_t seq = 1; seq <= 5; seq++)
        push_one(&in, seq);
    ck_assert_int_eq(lg_account_events(), live + 5);
    ck_assert_uint_eq(atomic_load(&topic->refs), 1 + 5);
    lg_inbox_release(&in);
    ck_assert_int_eq(lg_account_events(), live);
    ck_assert_uint_eq(atomic_load(&topic->refs), 1);
}
END_TEST

START_TEST(an_entry_holds_its_topic_and_event_until_done)
{
    struct lg_inbox in;
    ck_assert_int_eq(lg_inbox_init(&in, 4), 0);
    ck_assert(lg_inbox_reserve(&in));
    struct lg_event *ev = event_from(0, 1);
    lg_inbox_push_reserved(&in, topic, ev);
    ck_assert_uint_eq(atomic_load(&topic->refs), 2);
    ck_assert_uint_eq(atomic_load(&ev->refcount), 2); /* the caller kept its own */
    lg_event_unref(&ev);
    struct lg_inbox_entry *batch;
    ck_assert_uint_eq(lg_inbox_take(&in, &batch), 1);
    ck_assert_uint_eq(atomic_load(&topic->refs), 2); /* taken, not yet done */
    ck_assert_uint_eq(atomic_load(&batch[0].event->refcount), 1);
    lg_inbox_done(&in, batch, 1);
    ck_assert_uint_eq(atomic_load(&topic->refs), 1);
    ck_assert_uint_eq(occupancy(&in), 0);
    lg_inbox_release(&in);
}
END_TEST

/* ---- Reservations ------------------------------------------------------------------------- */

START_TEST(reserve_fails_when_full_and_undoes_itself)
{
    struct lg_inbox in;
    ck_assert_int_eq(lg_inbox_init(&in, 4), 0);
    for (int i = 0; i < 4; i++)
        ck_assert(lg_inbox_reserve(&in));
    ck_assert(!lg_inbox_reserve(&in));
    ck_assert(!lg_inbox_reserve(&in));
    ck_assert_uint_eq(occupancy(&in), 4);
    lg_inbox_unreserve(&in);
    ck_assert_uint_eq(occupancy(&in), 3);
    ck_assert(lg_inbox_reserve(&in));
    ck_assert(!lg_inbox_reserve(&in));
    for (int i = 0; i < 4; i++)
        lg_inbox_unreserve(&in);
    ck_assert_uint_eq(occupancy(&in), 0);
    lg_inbox_release(&in);
}
END_TEST

START_TEST(taken_events_hold_room_until_done)
{
    struct lg_inbox in;
    ck_assert_int_eq(lg_inbox_init(&in, 3), 0);
    for (uint64_t seq = 1; seq <= 3; seq++)
        push_one(&in, seq);
    ck_assert(!lg_inbox_reserve(&in));
    struct lg_inbox_entry *batch;
    ck_assert_uint_eq(lg_inbox_take(&in, &batch), 3);
    ck_assert(!lg_inbox_reserve(&in)); /* still being processed */
    lg_inbox_done(&in, batch, 3);
    ck_assert_uint_eq(occupancy(&in), 0);
    ck_assert(lg_inbox_reserve(&in));
    lg_inbox_unreserve(&in);
    lg_inbox_release(&in);
}
END_TEST

START_TEST(a_lowered_admission_refuses_until_the_inbox_drains_below_it)
{
    struct lg_inbox in;
    ck_assert_int_eq(lg_inbox_init(&in, 8), 0);
    for (uint64_t seq = 1; seq <= 3; seq++)
        push_one(&in, seq);
    lg_inbox_admit(&in, 2);
    ck_assert(!lg_inbox_reserve(&in)); /* 3 queued, 2 admitted: the queued ones stay */
    ck_assert_uint_eq(occupancy(&in), 3);
    take_expect(&in, 1, 3);
    push_one(&in, 4);
    push_one(&in, 5);
    ck_assert(!lg_inbox_reserve(&in));
    lg_inbox_admit(&in, SIZE_MAX); /* back to the capacity, and no further */
    for (uint64_t seq = 6; seq <= 11; seq++)
        push_one(&in, seq);
    ck_assert(!lg_inbox_reserve(&in));
    take_expect(&in, 4, 8);
    lg_inbox_admit(&in, 0); /* at least one */
    push_one(&in, 12);
    ck_assert(!lg_inbox_reserve(&in));
    take_expect(&in, 12, 1);
    lg_inbox_release(&in);
}
END_TEST

/* ---- Push and take ------------------------------------------------------------------------ */

START_TEST(push_reports_the_empty_to_non_empty_edge)
{
    struct lg_inbox in;
    ck_assert_int_eq(lg_inbox_init(&in, 8), 0);
    ck_assert(push_one(&in, 1));
    ck_assert(!push_one(&in, 2));
    ck_assert(!push_one(&in, 3));
    take_expect(&in, 1, 3);
    ck_assert(push_one(&in, 4)); /* empty again after the take */
    ck_assert(!push_one(&in, 5));
    take_expect(&in, 4, 2);
    lg_inbox_release(&in);
}
END_TEST

START_TEST(take_returns_everything_in_order)
{
    struct lg_inbox in;
    ck_assert_int_eq(lg_inbox_init(&in, 16), 0);
    for (uint64_t seq = 1; seq <= 16; seq++)
        push_one(&in, seq);
    take_expect(&in, 1, 16);
    take_expect(&in, 0, 0);
    lg_inbox_release(&in);
}
END_TEST

START_TEST(take_alternates_between_the_two_arrays)
{
    struct lg_inbox in;
    ck_assert_int_eq(lg_inbox_init(&in, 4), 0);
    struct lg_inbox_entry *first, *second, *third;
    push_one(&in, 1);
    ck_assert_uint_eq(lg_inbox_take(&in, &first), 1);
    lg_inbox_done(&in, first, 1);
    push_one(&in, 2);
    ck_assert_uint_eq(lg_inbox_take(&in, &second), 1);
    ck_assert_ptr_ne(second, first); /* producers filled the other array meanwhile */
    ck_assert_uint_eq(second[0].event->seq, 2);
    lg_inbox_done(&in, second, 1);
    push_one(&in, 3);
    ck_assert_uint_eq(lg_inbox_take(&in, &third), 1);
    ck_assert_ptr_eq(third, first);
    lg_inbox_done(&in, third, 1);
    lg_inbox_release(&in);
}
END_TEST

START_TEST(take_upto_takes_the_oldest_and_keeps_the_rest_in_order)
{
    struct lg_inbox in;
    ck_assert_int_eq(lg_inbox_init(&in, 8), 0);
    for (uint64_t seq = 1; seq <= 5; seq++)
        push_one(&in, seq);
    struct lg_inbox_entry *batch;
    ck_assert_uint_eq(lg_inbox_take_upto(&in, 2, &batch), 2);
    ck_assert_uint_eq(batch[0].event->seq, 1);
    ck_assert_uint_eq(batch[1].event->seq, 2);
    lg_inbox_done(&in, batch, 2);
    ck_assert(!lg_inbox_empty(&in));
    ck_assert(!push_one(&in, 6)); /* not empty: no wake-up, the consumer comes back itself */
    take_expect(&in, 3, 4);        /* 3, 4, 5, 6: the rest, in order */
    ck_assert(lg_inbox_empty(&in));
    ck_assert_uint_eq(occupancy(&in), 0);
    ck_assert_uint_eq(lg_inbox_take_upto(&in, 3, &batch), 0);
    lg_inbox_release(&in);
}
END_TEST

/* ---- Many producers, one consumer --------------------------------------------------------- */

#define PRODUCERS 4
#define PER_PRODUCER 10000
#define STRESS_CAPACITY 64 /* small, so producers regularly find the inbox full */

struct stress {
    struct lg_inbox inbox;
    sem_t wake;                  /* posted on every empty -> non-empty push (the worker wake) */
    _Atomic uint64_t refused;    /* reservations refused because the inbox was full */
};

struct producer {
    struct stress *st;
    uint32_t index;
};

static void *produce(void *arg)
{
    struct producer *p = arg;
    for (uint64_t seq = 1; seq <= PER_PRODUCER; seq++) {
        /* A publisher would answer 503 here; this one retries until the consumer makes room. */
        while (!lg_inbox_reserve(&p->st->inbox)) {
            atomic_fetch_add(&p->st->refused, 1);
            sched_yield();
        }
        struct lg_event *ev = event_from(p->index, seq);
        if (lg_inbox_push_reserved(&p->st->inbox, topic, ev))
            sem_post(&p->st->wake);
        lg_event_unref(&ev);
    }
    return NULL;
}

START_TEST(many_producers_lose_and_duplicate_nothing)
{
    struct stress st = {.refused = 0};
    ck_assert_int_eq(lg_inbox_init(&st.inbox, STRESS_CAPACITY), 0);
    ck_assert_int_eq(sem_init(&st.wake, 0, 0), 0);
    struct producer producers[PRODUCERS];
    pthread_t threads[PRODUCERS];
    for (uint32_t i = 0; i < PRODUCERS; i++) {
        producers[i] = (struct producer){.st = &st, .index = i};
        ck_assert_int_eq(pthread_create(&threads[i], NULL, produce, &producers[i]), 0);
    }

    /* Consume nothing until a producer was refused: the inbox filled up and said so. */
    while (atomic_load(&st.refused) == 0)
        sched_yield();

    uint64_t next[PRODUCERS] = {0};
    size_t received = 0;
    while (received < PRODUCERS * PER_PRODUCER) {
        struct lg_inbox_entry *batch;
        size_t n = lg_inbox_take(&st.inbox, &batch);
        if (n == 0) {
            /* Nothing queued: block until a push sees the inbox empty. A lost wake-up would
             * hang here, and the test would fail on its timeout. */
            sem_wait(&st.wake);
            continue;
        }
        ck_assert_uint_le(n, STRESS_CAPACITY);
        for (size_t i = 0; i < n; i++) {
            uint32_t producer = batch[i].event->epoch;
            ck_assert_uint_lt(producer, PRODUCERS);
            uint64_t seq = batch[i].event->seq;
            ck_assert_uint_eq(seq, next[producer] + 1); /* in order, no gap, no dup */
            next[producer] = seq;
        }
        lg_inbox_done(&st.inbox, batch, n);
        received += n;
    }
    for (uint32_t i = 0; i < PRODUCERS; i++) {
        pthread_join(threads[i], NULL);
        ck_assert_uint_eq(next[i], PER_PRODUCER);
    }
    struct lg_inbox_entry *batch;
    ck_assert_uint_eq(lg_inbox_take(&st.inbox, &batch), 0);
    ck_assert_uint_eq(occupancy(&st.inbox), 0);
    ck_assert_uint_gt(atomic_load(&st.refused), 0);
    sem_destroy(&st.wake);
    lg_inbox_release(&st.inbox);
}
END_TEST

static Suite *inbox_suite(void)
{
    Suite *s = suite_create("inbox");

    LG_TCASE(s, "lifecycle", make_topic, free_topic, init_refuses_zero_capacity,
             init_starts_empty, release_unrefs_queued_events);
    LG_TCASE(s, "reserve", make_topic, free_topic, reserve_fails_when_full_and_undoes_itself,
             taken_events_hold_room_until_done,
             a_lowered_admission_refuses_until_the_inbox_drains_below_it);
    LG_TCASE(s, "push_take", make_topic, free_topic, push_reports_the_empty_to_non_empty_edge,
             take_returns_everything_in_order, take_alternates_between_the_two_arrays,
             take_upto_takes_the_oldest_and_keeps_the_rest_in_order,
             an_entry_holds_its_topic_and_event_until_done);
    TCase *tc = LG_TCASE(s, "mpsc", make_topic, free_topic,
                         many_producers_lose_and_duplicate_nothing);
    tcase_set_timeout(tc, 120); /* 40000 events; slow under valgrind */

    return s;
}

LG_CHECK_MAIN(inbox_suite)
