/*
 * test_client_addresses.c - the per-address connection table and X-Forwarded-For resolution
 * (client_addresses.h): exact counts, the bound per address, entries given back, the table's
 * capacity, and which address a proxied request counts against.
 */
#include <check.h>
#include <string.h>

#include "check_main.h"
#include "client_addresses.h"
#include "client_address.h"

static struct lg_client_address addr(const char *text)
{
    struct lg_client_address a;
    ck_assert_msg(lg_client_address_parse(text, strlen(text), &a), "not an address: %s", text);
    return a;
}

static void expect_text(const struct lg_client_address *a, const char *want)
{
    char out[64];
    lg_client_address_format(a, out, sizeof out);
    ck_assert_str_eq(out, want);
}

START_TEST(each_address_holds_at_most_its_bound)
{
    struct lg_client_addresses *t = lg_client_addresses_create(10, 3);
    struct lg_client_address a = addr("192.0.2.7"), b = addr("2001:db8::1");
    for (int i = 0; i < 3; i++)
        ck_assert(lg_client_addresses_acquire(t, &a));
    ck_assert(!lg_client_addresses_acquire(t, &a)); /* the fourth from one address */
    ck_assert_uint_eq(lg_client_addresses_count(t, &a), 3);
    ck_assert(lg_client_addresses_acquire(t, &b)); /* another address is not affected */
    lg_client_addresses_release(t, &a);
    ck_assert(lg_client_addresses_acquire(t, &a)); /* room again */
    for (int i = 0; i < 3; i++)
        lg_client_addresses_release(t, &a);
    ck_assert_uint_eq(lg_client_addresses_count(t, &a), 0);
    lg_client_addresses_release(t, &a); /* one too many: no effect */
    ck_assert_uint_eq(lg_client_addresses_count(t, &b), 1);
    lg_client_addresses_destroy(t);
}
END_TEST

/* A reload's new bound: connections counted before it stay, the next ones see it. */
START_TEST(a_new_bound_applies_to_the_next_connections)
{
    struct lg_client_addresses *t = lg_client_addresses_create(10, 3);
    struct lg_client_address a = addr("192.0.2.7");
    ck_assert(lg_client_addresses_acquire(t, &a));
    ck_assert(lg_client_addresses_acquire(t, &a));
    lg_client_addresses_set_per_address(t, 1);
    ck_assert_uint_eq(lg_client_addresses_per_address(t), 1);
    ck_assert(!lg_client_addresses_acquire(t, &a)); /* holds 2, above the new bound */
    ck_assert_uint_eq(lg_client_addresses_count(t, &a), 2);
    lg_client_addresses_release(t, &a);
    ck_assert(!lg_client_addresses_acquire(t, &a)); /* holds 1: at the bound */
    lg_client_addresses_set_per_address(t, 0);      /* no bound */
    for (int i = 0; i < 5; i++)
        ck_assert(lg_client_addresses_acquire(t, &a));
    ck_assert_uint_eq(lg_client_addresses_count(t, &a), 6);
    lg_client_addresses_destroy(t);
}
END_TEST

START_TEST(entries_are_given_back_and_the_table_is_bounded)
{
    struct lg_client_addresses *t = lg_client_addresses_create(2, 0); /* 0: no per-address bound */
    struct lg_client_address a = addr("10.0.0.1"), b = addr("10.0.0.2"), c = addr("10.0.0.3");
    for (int i = 0; i < 100; i++)
        ck_assert(lg_client_addresses_acquire(t, &a));
    ck_assert(lg_client_addresses_acquire(t, &b));
    ck_assert(!lg_client_addresses_acquire(t, &c)); /* two entries only */
    lg_client_addresses_release(t, &b);             /* b's entry is free again */
    ck_assert(lg_client_addresses_acquire(t, &c));
    ck_assert_uint_eq(lg_client_addresses_count(t, &a), 100);
    ck_assert_uint_eq(lg_client_addresses_count(t, &b), 0);
    lg_client_addresses_destroy(t);
}
END_TEST

START_TEST(addresses_parse_and_format_ipv4_mapped)
{
    struct lg_client_address a = addr("127.0.0.1"), m = addr("::ffff:127.0.0.1");
    ck_assert_mem_eq(a.bytes, m.bytes, 16);
    expect_text(&a, "127.0.0.1");
    struct lg_client_address v6 = addr("2001:DB8::A");
    expect_text(&v6, "2001:db8::a");
    struct lg_client_address junk;
    ck_assert(!lg_client_address_parse("1.2.3", 5, &junk));
    ck_assert(!lg_client_address_parse("10.0.0.1:80", 11, &junk));
    ck_assert(!lg_client_address_parse("", 0, &junk));
    ck_assert(!lg_client_address_parse("10.0.0.1", 4, &junk)); /* only len bytes count: "10.0" */
}
END_TEST

static void expect_resolved_from(const char *peer, const char *xff, const char *forwarded,
                                 const char *want)
{
    struct lg_client_address trusted[2] = {addr("127.0.0.1"), addr("10.0.0.5")};
    struct lg_client_address p = addr(peer), client;
    bool counted = lg_client_address_resolve(&p, trusted, 2, xff, strlen(xff), forwarded,
                                             strlen(forwarded), &client);
    if (!want) {
        ck_assert_msg(!counted, "peer %s xff [%s]: counted, want none", peer, xff);
        return;
    }
    ck_assert_msg(counted, "peer %s xff [%s]: counts against nothing, want %s", peer, xff, want);
    expect_text(&client, want);
}

static void expect_resolved(const char *peer, const char *xff, const char *want)
{
    expect_resolved_from(peer, xff, "", want);
}

START_TEST(forwarded_addresses_count_only_through_trusted_proxies)
{
    expect_resolved("198.51.100.9", "203.0.113.1", "198.51.100.9"); /* untrusted peer: ignored */
    expect_resolved("127.0.0.1", "203.0.113.1", "203.0.113.1");
    expect_resolved("127.0.0.1", "1.1.1.1, 203.0.113.1", "203.0.113.1"); /* rightmost */
    expect_resolved("127.0.0.1", "203.0.113.1,10.0.0.5", "203.0.113.1"); /* skips proxies */
    expect_resolved("127.0.0.1", " 2001:db8::7 ", "2001:db8::7");
    expect_resolved("127.0.0.1", "", NULL);          /* the proxy's own request */
    expect_resolved("127.0.0.1", "10.0.0.5", NULL);  /* only proxies named */
    expect_resolved("127.0.0.1", "1.1.1.1, nonsense", "127.0.0.1"); /* unreadable: the proxy */
    expect_resolved("127.0.0.2", "203.0.113.1", NULL); /* local, not a proxy: counted nowhere */
    expect_resolved("::1", "", NULL);
    expect_resolved("::ffff:127.9.9.9", "", NULL);
    expect_resolved("128.0.0.1", "", "128.0.0.1");
}
END_TEST

START_TEST(the_forwarded_header_names_the_client_when_x_forwarded_for_does_not)
{
    expect_resolved_from("127.0.0.1", "", "for=192.0.2.60;proto=http;by=203.0.113.43",
                         "192.0.2.60");
    expect_resolved_from("127.0.0.1", "", "for=192.0.2.43, For=\"[2001:db8:cafe::17]:4711\"",
                         "2001:db8:cafe::17");
    expect_resolved_from("127.0.0.1", "", "for=\"192.0.2.1:8080\", for=10.0.0.5", "192.0.2.1");
    expect_resolved_from("127.0.0.1", "", "for=unknown", "127.0.0.1"); /* obfuscated: the proxy */
    expect_resolved_from("127.0.0.1", "", "proto=https", "127.0.0.1"); /* no for=: the proxy */
    expect_resolved_from("127.0.0.1", "203.0.113.9", "for=192.0.2.60", "203.0.113.9");
    expect_resolved_from("198.51.100.9", "", "for=192.0.2.60", "198.51.100.9"); /* untrusted */
}
END_TEST

START_TEST(forwarded_entries_may_carry_a_port)
{
    expect_resolved("127.0.0.1", "203.0.113.9:1234", "203.0.113.9");
    expect_resolved("127.0.0.1", "[2001:db8::1]:1234", "2001:db8::1");
    expect_resolved("127.0.0.1", "[2001:db8::1]", "2001:db8::1");
    expect_resolved("127.0.0.1", "198.51.100.1, 203.0.113.9:80, 10.0.0.5:4711", "203.0.113.9");
    expect_resolved("127.0.0.1", "203.0.113.9:", "127.0.0.1");        /* no port: unreadable */
    expect_resolved("127.0.0.1", "203.0.113.9:123456", "127.0.0.1");  /* not a port */
    expect_resolved("127.0.0.1", "[203.0.113.9]:80", "127.0.0.1");    /* brackets are IPv6's */
    expect_resolved("127.0.0.1", "[2001:db8::1]x", "127.0.0.1");
    expect_resolved("127.0.0.1", "2001:db8::1:80", "2001:db8::1:80"); /* bare IPv6: no port */
    expect_resolved_from("127.0.0.1", "", "for=\"[2001:db8::1]:_p1\"", "2001:db8::1");
}
END_TEST

START_TEST(ipv6_clients_count_per_64)
{
    struct lg_client_addresses *t = lg_client_addresses_create(10, 2);
    struct lg_client_address a = addr("2001:db8:1:2::a"), b = addr("2001:db8:1:2:ffff::b"),
                             c = addr("2001:db8:1:2::c"), other = addr("2001:db8:1:3::a"),
                             v4 = addr("192.0.2.1"), v4b = addr("192.0.2.2");
    ck_assert(lg_client_addresses_acquire(t, &a));
    ck_assert(lg_client_addresses_acquire(t, &b));
    ck_assert(!lg_client_addresses_acquire(t, &c)); /* a third in the same /64 */
    ck_assert_uint_eq(lg_client_addresses_count(t, &c), 2);
    ck_assert(lg_client_addresses_acquire(t, &other)); /* the next /64 is another client */
    lg_client_addresses_release(t, &b);               /* given back by any address of it */
    ck_assert(lg_client_addresses_acquire(t, &c));
    ck_assert(lg_client_addresses_acquire(t, &v4));   /* IPv4: per address */
    ck_assert(lg_client_addresses_acquire(t, &v4));
    ck_assert(!lg_client_addresses_acquire(t, &v4));
    ck_assert(lg_client_addresses_acquire(t, &v4b));
    lg_client_addresses_destroy(t);
}
END_TEST

static Suite *client_addresses_suite(void)
{
    Suite *s = suite_create("client_addresses");
    TCase *tc = tcase_create("table");
    tcase_add_test(tc, each_address_holds_at_most_its_bound);
    tcase_add_test(tc, a_new_bound_applies_to_the_next_connections);
    tcase_add_test(tc, entries_are_given_back_and_the_table_is_bounded);
    tcase_add_test(tc, addresses_parse_and_format_ipv4_mapped);
    tcase_add_test(tc, forwarded_addresses_count_only_through_trusted_proxies);
    tcase_add_test(tc, the_forwarded_header_names_the_client_when_x_forwarded_for_does_not);
    tcase_add_test(tc, forwarded_entries_may_carry_a_port);
    tcase_add_test(tc, ipv6_clients_count_per_64);
    suite_add_tcase(s, tc);
    return s;
}

LG_CHECK_MAIN(client_addresses_suite)
