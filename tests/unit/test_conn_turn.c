/*
 * test_conn_turn.c - unit test for lg_conn_callback_done() (src/public/conn.c): the control
 * port gets its turn on a worker's loop once every LG_CALLBACKS_PER_CONTROL_TURN connection
 * callbacks, never sooner, and the count starts again after each turn.
 */
#include <check.h>

#include "conn.h"

#include "check_main.h"

static int turns;

static void count_turn(struct lg_conn_home *home)
{
    (void)home;
    turns++;
}

START_TEST(test_the_control_port_gets_a_turn_every_32_callbacks)
{
    struct lg_conn_home home = {.control_turn = count_turn};
    turns = 0;
    for (int i = 1; i < LG_CALLBACKS_PER_CONTROL_TURN; i++)
        lg_conn_callback_done(&home);
    ck_assert_int_eq(turns, 0);
    lg_conn_callback_done(&home);
    ck_assert_int_eq(turns, 1);
    for (int i = 0; i < 2 * LG_CALLBACKS_PER_CONTROL_TURN - 1; i++)
        lg_conn_callback_done(&home);
    ck_assert_int_eq(turns, 2);
    lg_conn_callback_done(&home);
    ck_assert_int_eq(turns, 3);
}
END_TEST

LG_CHECK_MAIN_TCASE("conn_turn", "core", 10, test_the_control_port_gets_a_turn_every_32_callbacks)
