/*
 * test_event_loop.c - a worker's wake-up only schedules: a publish made on the worker's own
 * control daemon (a loop callback of that worker) and publishes while thousands of idle
 * streams are open each reach the subscriber, in order, none lost. What the loop costs is
 * timed by bench/event_loop_cost.c (a bench smoke, outside ctest).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "lg_test.h"

#include "check_main.h"

#define IDLE 5000
#define PUBLISHES 200

/* Publishes on the worker's own daemon, each read before the next is sent: every one wakes the
 * worker from inside its own loop, and each is delivered. */
START_TEST(test_publishes_on_the_workers_own_daemon_are_delivered)
{
    struct lg_one_topic o;
    lg_one_topic_start(&o, "own");
    int next_seq = 1;
    lg_one_topic_publish_and_receive(&o, PUBLISHES, &next_seq);
    lg_one_topic_stop(&o);
}
END_TEST

/* With IDLE streams open on other topics, the active topic's publishes still arrive, in
 * order: a wake-up serves what is ready, whatever else is open. */
START_TEST(test_publishes_arrive_with_idle_streams_open)
{
    lg_raise_fd_limit(IDLE + 200);

    struct lg_one_topic o;
    lg_one_topic_start(&o, "active");
    static int idle[IDLE];
    lg_one_topic_open_idle(&o, idle, IDLE);
    int next_seq = 1;
    lg_one_topic_publish_and_receive(&o, PUBLISHES, &next_seq);
    for (int i = 0; i < IDLE; i++)
        close(idle[i]);
    lg_one_topic_stop(&o);
}
END_TEST

LG_CHECK_MAIN_TCASE("event_loop", "wake", 180,
                    test_publishes_on_the_workers_own_daemon_are_delivered,
                    test_publishes_arrive_with_idle_streams_open)
