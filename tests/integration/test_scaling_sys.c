/*
 * test_scaling_sys.c - with the Redis store, the gateway's own topic `$sys/stats` stays on the
 * node (its figures are the node's): a subscriber on each of two nodes sharing one Redis
 * receives its own node's event every second, Redis holds no stream for it, and no tick is
 * skipped. /metrics names the store and its state.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "lg_redis.h"
#include "lg_test.h"

#include "check_main.h"

static struct lg_redis redis;

static void node_start(struct lg_server *s)
{
    char cfg[512];
    snprintf(cfg, sizeof cfg, "{\"redis\": {\"url\": \"%s\"}}", redis.url);
    lg_server_must_start(s, cfg);
    ck_assert(lg_wait_stat(s->control_port, "redis_connections_lost", 0, 5000));
}

/* Two $sys/stats events in a row on c, one second apart, each counting subscribers clients
 * on SSE (this node's figure). */
static void expect_own_ticks(struct lg_sse_client *c, long long subscribers)
{
    char want[64];
    snprintf(want, sizeof want, "\"sse\":%lld", subscribers);
    for (int i = 0; i < 2; i++) {
        struct lg_sse_event ev;
        ck_assert_msg(lg_sse_next(c, &ev, 3000) == 1, "no $sys/stats event within 3 s");
        ck_assert_msg(strncmp(ev.id, "$sys/stats@", 11) == 0, "id %s", ev.id);
        ck_assert_msg(strstr(ev.data, want) != NULL, "not this node's figures: %s", ev.data);
        lg_sse_event_free(&ev);
    }
}

START_TEST(sys_stats_is_each_nodes_own)
{
    ck_assert_int_eq(lg_redis_start(&redis, false), 0);
    struct lg_server a, b;
    node_start(&a);
    node_start(&b);
    struct lg_sse_client sa, sb1, sb2;
    lg_sse_must_open(&sa, a.public_port, "/sse?topic=$sys/stats", NULL);
    lg_sse_must_open(&sb1, b.public_port, "/sse?topic=$sys/stats", NULL);
    lg_sse_must_open(&sb2, b.public_port, "/sse?topic=$sys/stats", NULL);
    ck_assert(lg_wait_stat(b.control_port, "clients_sse", 2, 3000));
    usleep(1100 * 1000); /* a tick that counted every subscriber */
    expect_own_ticks(&sa, 1);
    expect_own_ticks(&sb1, 2);
    ck_assert_int_eq(lg_stat(a.control_port, "sys_stats_skipped"), 0);
    ck_assert_int_eq(lg_stat(b.control_port, "sys_stats_skipped"), 0);
    ck_assert_int_eq(lg_redis_int(&redis, "EXISTS livegate:{$sys/stats}:s"), 0);
    /* and /metrics says which store it is and that it is up */
    struct lg_http_response r;
    ck_assert_int_eq(lg_http_request(a.control_port, "GET", "/metrics", NULL, NULL, 0, &r, 3000), 0);
    ck_assert_ptr_nonnull(strstr(r.body, "\nlivegate_store_remote 1\n"));
    ck_assert_ptr_nonnull(strstr(r.body, "\nlivegate_store_ready 1\n"));
    lg_http_response_free(&r);
    lg_sse_close(&sa);
    lg_sse_close(&sb1);
    lg_sse_close(&sb2);
    lg_server_must_stop(&a);
    lg_server_must_stop(&b);
    lg_redis_stop(&redis);
}
END_TEST

LG_CHECK_MAIN_TCASE("scaling_sys", "local_topics", 30, sys_stats_is_each_nodes_own)
