/*
 * test_client_publish_queue.c - the queue that brings a client's publish back to its worker
 * (client_publish.h): oldest first, empty after the last; a finished publish is answered only
 * while its connection waits; what is still queued at release is freed (the sanitizer and
 * valgrind runs check nothing leaks); a producer thread's pushes all arrive, in its order.
 */
#include <check.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

#include "client_publish.h"

#include "check_main.h"

static struct lg_client_publish *make(uint64_t seq)
{
    struct lg_client_publish *p = calloc(1, sizeof *p);
    ck_assert_ptr_nonnull(p);
    p->res.seq = seq;
    return p;
}

START_TEST(pop_gives_the_oldest_then_null)
{
    struct lg_client_publish_queue q;
    ck_assert_int_eq(lg_client_publish_queue_init(&q), 0);
    ck_assert_ptr_null(lg_client_publish_queue_pop(&q));
    for (uint64_t i = 1; i <= 3; i++)
        lg_client_publish_queue_push(&q, make(i));
    for (uint64_t i = 1; i <= 3; i++) {
        struct lg_client_publish *p = lg_client_publish_queue_pop(&q);
        ck_assert_uint_eq(p->res.seq, i);
        free(p);
    }
    ck_assert_ptr_null(lg_client_publish_queue_pop(&q));
    lg_client_publish_queue_push(&q, make(4)); /* freed by the release */
    lg_client_publish_queue_release(&q);
}
END_TEST

static int answers;
static void count_answer(void *waiting, struct lg_client_publish *p)
{
    ck_assert_ptr_eq(waiting, &answers);
    ck_assert_uint_eq(p->res.seq, 7);
    answers++;
}

START_TEST(finish_answers_only_a_waiting_connection)
{
    answers = 0;
    struct lg_client_publish *p = make(7);
    p->answer = count_answer;
    p->waiting = &answers;
    lg_client_publish_finish(p);
    ck_assert_int_eq(answers, 1);
    p = make(7);
    p->answer = count_answer;
    p->waiting = NULL; /* its connection went */
    lg_client_publish_finish(p);
    ck_assert_int_eq(answers, 1);
}
END_TEST

#define PUSHES 20000

static void *producer(void *arg)
{
    for (uint64_t i = 1; i <= PUSHES; i++)
        lg_client_publish_queue_push(arg, make(i));
    return NULL;
}

START_TEST(a_producer_threads_pushes_arrive_in_order)
{
    struct lg_client_publish_queue q;
    ck_assert_int_eq(lg_client_publish_queue_init(&q), 0);
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, producer, &q), 0);
    uint64_t next = 1;
    while (next <= PUSHES) {
        struct lg_client_publish *p = lg_client_publish_queue_pop(&q);
        if (!p) {
            sched_yield(); /* under valgrind a spinning consumer would starve the producer */
            continue;
        }
        ck_assert_uint_eq(p->res.seq, next);
        next++;
        free(p);
    }
    pthread_join(t, NULL);
    ck_assert_ptr_null(lg_client_publish_queue_pop(&q));
    lg_client_publish_queue_release(&q);
}
END_TEST

static Suite *client_publish_suite(void)
{
    Suite *s = suite_create("client_publish_queue");
    LG_TCASE(s, "queue", NULL, NULL, pop_gives_the_oldest_then_null,
             finish_answers_only_a_waiting_connection, a_producer_threads_pushes_arrive_in_order);
    return s;
}

LG_CHECK_MAIN(client_publish_suite)
