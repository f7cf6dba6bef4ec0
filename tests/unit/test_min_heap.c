/*
 * test_min_heap.c - unit tests for src/util/min_heap.c: random pushes, moves and removals
 * against a brute-force minimum, and the out-of-heap cases.
 */
#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "min_heap.h"

#include "check_main.h"

#define NODES 500

START_TEST(test_random_against_brute_force)
{
    static struct lg_heap_node nodes[NODES];
    static bool in[NODES];
    struct lg_min_heap h = {0};
    srand(12345);
    for (int step = 0; step < 20000; step++) {
        int i = rand() % NODES;
        int op = rand() % 3;
        if (op < 2) {
            ck_assert_int_eq(lg_min_heap_set(&h, &nodes[i], rand() % 1000), 0);
            in[i] = true;
        } else {
            lg_min_heap_remove(&h, &nodes[i]);
            in[i] = false;
        }
        int64_t min = INT64_MAX;
        size_t count = 0;
        for (int j = 0; j < NODES; j++)
            if (in[j]) {
                count++;
                if (nodes[j].key < min)
                    min = nodes[j].key;
            }
        ck_assert_uint_eq(h.count, count);
        struct lg_heap_node *top = lg_min_heap_top(&h);
        if (count == 0)
            ck_assert_ptr_null(top);
        else
            ck_assert_int_eq(top->key, min);
    }
    /* draining in order */
    int64_t last = INT64_MIN;
    struct lg_heap_node *top;
    while ((top = lg_min_heap_top(&h))) {
        ck_assert_int_ge(top->key, last);
        last = top->key;
        lg_min_heap_remove(&h, top);
    }
    lg_min_heap_release(&h);
}
END_TEST

START_TEST(test_remove_absent_and_release_empty)
{
    struct lg_min_heap h = {0};
    struct lg_heap_node n = {0};
    lg_min_heap_remove(&h, &n);
    ck_assert_ptr_null(lg_min_heap_top(&h));
    ck_assert_int_eq(lg_min_heap_set(&h, &n, 5), 0);
    ck_assert_int_eq(lg_min_heap_set(&h, &n, 3), 0); /* moved, not added twice */
    ck_assert_uint_eq(h.count, 1);
    ck_assert_int_eq(lg_min_heap_top(&h)->key, 3);
    lg_min_heap_remove(&h, &n);
    lg_min_heap_remove(&h, &n);
    ck_assert_uint_eq(h.count, 0);
    lg_min_heap_release(&h);
    lg_min_heap_release(&h);
}
END_TEST

static Suite *min_heap_suite(void)
{
    Suite *s = suite_create("min_heap");
    LG_TCASE(s, "heap", NULL, NULL, test_random_against_brute_force,
             test_remove_absent_and_release_empty);
    return s;
}

LG_CHECK_MAIN(min_heap_suite)
