/*
 * test_presence.c - one topic's presence state (presence.h): joins and leaves coalesced into
 * one batch per tick (a member listed once however many connections it has; one that leaves
 * and comes back within a tick neither leaves nor joins; a leave reported at the second tick),
 * occupancy only when it changed, the member bound (beyond it: unlisted, counted), the sorted
 * copy and its paging, and an occupancy-only state that lists nobody. The topic is a bare
 * struct (the batch only reads its name and takes a reference).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "presence.h"
#include "topic.h"

static struct lg_topic *topic;
static struct lg_presence *p;

static void setup_with(bool members, bool occupancy, uint32_t max)
{
    topic = calloc(1, sizeof *topic);
    topic->name = strdup("room/1");
    topic->name_len = 6;
    atomic_init(&topic->refs, 1);
    struct lg_presence_rule rule = {.members = members, .occupancy_events = occupancy,
                                    .max_members = max};
    p = lg_presence_create(&rule);
    ck_assert_ptr_nonnull(p);
}

static void setup(void) { setup_with(true, true, 3); }

static void teardown(void)
{
    lg_presence_destroy(p);
    ck_assert_uint_eq(atomic_load(&topic->refs), 1); /* every batch gave its reference back */
    free(topic->name);
    free(topic);
}

static bool join(const char *id) { return lg_presence_join(p, id, strlen(id)); }
static void leave(const char *id) { lg_presence_leave(p, id, strlen(id)); }

/* The batch of this tick as "type fields|type fields|..." ("" when there is none). */
static void tick(uint32_t subscribers, char *out, size_t cap)
{
    bool lost = true;
    out[0] = '\0';
    struct lg_presence_batch *b = lg_presence_take_batch(p, topic, subscribers, &lost);
    ck_assert(!lost);
    if (!b)
        return;
    ck_assert(lg_presence_in_flight(p));
    for (size_t i = 0; i < b->count; i++) {
        size_t len = strlen(out);
        snprintf(out + len, cap - len, "%s%s %.*s", i ? "|" : "", b->notices[i].type,
                 (int)b->notices[i].fields_len, b->notices[i].fields);
    }
    lg_presence_batch_unref(b);
    lg_presence_delivered(p);
}

#define EXPECT_TICK(subs, want)                                                                    \
    do {                                                                                           \
        char got[1024];                                                                            \
        tick((subs), got, sizeof got);                                                             \
        ck_assert_str_eq(got, (want));                                                             \
    } while (0)

START_TEST(test_presence_coalesces_per_tick)
{
    ck_assert(join("bob"));
    ck_assert(join("alice"));
    ck_assert(join("alice")); /* a second connection: listed once */
    ck_assert(lg_presence_changed(p));
    EXPECT_TICK(3, "join \"topic\":\"room/1\",\"members\":[\"alice\",\"bob\"]}|"
                   "occupancy \"topic\":\"room/1\",\"subscribers\":3}");
    ck_assert(!lg_presence_pending(p));
    leave("alice"); /* one of her two connections: no change of members */
    lg_presence_changed(p);
    EXPECT_TICK(2, "occupancy \"topic\":\"room/1\",\"subscribers\":2}");
    leave("bob");
    ck_assert(join("bob")); /* back within the tick: neither leaves nor joins */
    lg_presence_changed(p);
    EXPECT_TICK(2, "");
    leave("bob");
    lg_presence_changed(p);
    EXPECT_TICK(1, "occupancy \"topic\":\"room/1\",\"subscribers\":1}");
    ck_assert(lg_presence_pending(p)); /* his leave waits for the second tick */
    EXPECT_TICK(1, "leave \"topic\":\"room/1\",\"members\":[\"bob\"]}");
    ck_assert(!lg_presence_pending(p));
    ck_assert(join("carl"));
    leave("carl"); /* joined and left within a tick: nobody is told */
    EXPECT_TICK(1, "");
}
END_TEST

START_TEST(test_presence_bound_and_listing)
{
    ck_assert(join("dan"));
    ck_assert(join("ann"));
    ck_assert(join("cat"));
    ck_assert(!join("bea")); /* beyond 3: counted, not listed */
    struct lg_presence_list l;
    ck_assert_int_eq(lg_presence_copy(p, &l), 0);
    lg_presence_list_sort(&l);
    ck_assert_uint_eq(l.count, 3);
    ck_assert_uint_eq(l.unlisted, 1);
    ck_assert_str_eq(l.ids[0], "ann");
    ck_assert_str_eq(l.ids[1], "cat");
    ck_assert_str_eq(l.ids[2], "dan");
    ck_assert_uint_eq(lg_presence_list_after(&l, NULL), 0);
    ck_assert_uint_eq(lg_presence_list_after(&l, "ann"), 1);
    ck_assert_uint_eq(lg_presence_list_after(&l, "b"), 1);
    ck_assert_uint_eq(lg_presence_list_after(&l, "dan"), 3);
    lg_presence_list_release(&l);
    lg_presence_leave_unlisted(p);
    leave("ann");
    ck_assert(join("bea")); /* room again */
    ck_assert_int_eq(lg_presence_copy(p, &l), 0);
    ck_assert_uint_eq(l.count, 3);
    ck_assert_uint_eq(l.unlisted, 0);
    lg_presence_list_release(&l);
    EXPECT_TICK(3, "join \"topic\":\"room/1\",\"members\":[\"bea\",\"cat\",\"dan\"]}");
    leave("dan");
    ck_assert(join("eve"));
    ck_assert(!join("dan")); /* back before his leave was reported, but eve took his place */
    EXPECT_TICK(3, "join \"topic\":\"room/1\",\"members\":[\"eve\"]}");
    EXPECT_TICK(3, "leave \"topic\":\"room/1\",\"members\":[\"dan\"]}");
    lg_presence_leave_unlisted(p);
}
END_TEST

/* Set the members other nodes list to ids (a NULL-ended list). */
static void remote(const char *const *ids)
{
    size_t n = 0, lens[8];
    while (ids[n]) {
        lens[n] = strlen(ids[n]);
        n++;
    }
    lg_presence_set_remote(p, ids, lens, n);
}

static uint32_t listed_count(bool local_only)
{
    struct lg_presence_list l;
    ck_assert_int_eq(local_only ? lg_presence_copy_local(p, &l) : lg_presence_copy(p, &l), 0);
    uint32_t n = (uint32_t)l.count;
    lg_presence_list_release(&l);
    return n;
}

START_TEST(test_presence_members_of_other_nodes)
{
    /* (no lg_presence_changed() here: no occupancy notices, only joins and leaves) */
    ck_assert(join("amy"));
    remote((const char *[]){"amy", "ben", NULL}); /* amy is on both nodes */
    EXPECT_TICK(1, "join \"topic\":\"room/1\",\"members\":[\"ben\",\"amy\"]}");
    ck_assert_uint_eq(listed_count(false), 2);
    ck_assert_uint_eq(listed_count(true), 1); /* only amy listens here */
    ck_assert_uint_eq(lg_presence_shared(p), 1);
    /* amy leaves here but stays on the other node: no leave */
    leave("amy");
    EXPECT_TICK(0, "");
    EXPECT_TICK(0, "");
    /* the other node lists neither: both leave, a tick after they were found gone */
    remote((const char *[]){NULL});
    ck_assert(lg_presence_pending(p));
    EXPECT_TICK(0, "");
    EXPECT_TICK(0, "leave \"topic\":\"room/1\",\"members\":[\"ben\",\"amy\"]}");
    ck_assert_uint_eq(listed_count(false), 0);
    /* the bound holds for the union: three listed (fay, beyond it, is not), gus not either */
    ck_assert(join("cal"));
    remote((const char *[]){"dee", "eli", "fay", NULL});
    ck_assert_uint_eq(listed_count(false), 3);
    ck_assert(!join("gus"));
    lg_presence_leave_unlisted(p);
    EXPECT_TICK(1, "join \"topic\":\"room/1\",\"members\":[\"eli\",\"dee\",\"cal\"]}");
    /* dropped by the other node and back within a tick: neither leaves nor joins */
    remote((const char *[]){"dee", NULL});
    remote((const char *[]){"dee", "eli", NULL});
    EXPECT_TICK(1, "");
    EXPECT_TICK(1, "");
}
END_TEST

START_TEST(test_presence_occupancy_only)
{
    lg_presence_destroy(p);
    struct lg_presence_rule rule = {.occupancy_events = true, .max_members = 3};
    p = lg_presence_create(&rule);
    ck_assert(!lg_presence_lists_members(p));
    ck_assert(!join("alice"));
    ck_assert(!lg_presence_pending(p));
    ck_assert(lg_presence_changed(p));
    EXPECT_TICK(1, "occupancy \"topic\":\"room/1\",\"subscribers\":1}");
    lg_presence_changed(p);
    EXPECT_TICK(1, ""); /* the same count: nothing */
    struct lg_presence_list l;
    ck_assert_int_eq(lg_presence_copy(p, &l), 0);
    ck_assert_uint_eq(l.count, 0);
    lg_presence_list_release(&l);
}
END_TEST

static Suite *presence_suite(void)
{
    Suite *s = suite_create("presence");
    LG_TCASE(s, "presence", setup, teardown, test_presence_coalesces_per_tick,
             test_presence_bound_and_listing, test_presence_members_of_other_nodes,
             test_presence_occupancy_only);
    return s;
}

LG_CHECK_MAIN(presence_suite)
