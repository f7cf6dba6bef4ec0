/*
 * event_loop_cost.c - a bench smoke, not a test: the worker's event loop costs what is ready,
 * not what is open. The same 2,000 publishes to a topic with one subscriber are measured
 * twice in one run, as the gateway's CPU time from /proc: with no other connection open, and
 * with 5,000 idle SSE streams open on other topics. A loop that scans every descriptor on
 * every wake-up (lws' poll() backend) is far off the bound; an epoll loop costs about the same
 * both times. It is a timing, so it runs from scripts/test.sh's bench smoke, outside ctest
 * (LG_BINARY names the gateway). The bound is a ratio, so the machine's speed does not matter.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lg_test.h"

#include "check_main.h"

#define IDLE 5000
#define PUBLISHES 2000
#define MAX_RATIO 3.0

static double measured_publishes(struct lg_one_topic *o, int *next_seq)
{
    double before = lg_server_cpu_seconds(&o->server);
    lg_one_topic_publish_and_receive(o, PUBLISHES, next_seq);
    return lg_server_cpu_seconds(&o->server) - before;
}

START_TEST(test_publish_cost_does_not_grow_with_idle_connections)
{
    lg_raise_fd_limit(IDLE + 200);

    struct lg_one_topic o;
    lg_one_topic_start(&o, "active");
    int next_seq = 1;
    lg_one_topic_publish_and_receive(&o, 300, &next_seq); /* warm-up: allocations, caches */

    double alone = measured_publishes(&o, &next_seq);

    static int idle[IDLE];
    lg_one_topic_open_idle(&o, idle, IDLE);

    double crowded = measured_publishes(&o, &next_seq);
    double ratio = crowded / (alone > 0.01 ? alone : 0.01);
    fprintf(stderr, "CPU for %d publishes: %.3f s alone, %.3f s with %d idle streams (x%.2f)\n",
            PUBLISHES, alone, crowded, IDLE, ratio);
    ck_assert_msg(ratio <= MAX_RATIO,
                  "%d publishes cost %.3f s of CPU with %d idle connections open and %.3f s "
                  "without: x%.2f > x%.1f",
                  PUBLISHES, crowded, IDLE, alone, ratio, MAX_RATIO);

    for (int i = 0; i < IDLE; i++)
        close(idle[i]);
    lg_one_topic_stop(&o);
}
END_TEST

LG_CHECK_MAIN_TCASE("event_loop_cost", "cost", 180,
                    test_publish_cost_does_not_grow_with_idle_connections)
