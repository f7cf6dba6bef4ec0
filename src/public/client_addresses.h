/*
 * client_addresses.h - what each client address holds on the public port, so one address
 * cannot take every connection: a process-wide table of open connections per address, with a
 * bound per address (limits.max_connections_per_address). An IPv6 client counts as its /64
 * (2001:db8:1:2::a and 2001:db8:1:2::b are one address here), an IPv4 client as itself.
 *
 * Which address a connection counts against is client_address.h's (trusted proxies,
 * X-Forwarded-For).
 *
 * Owns:    the table: a fixed array of entries (as many as limits.max_connections, since each
 *          entry holds at least one connection) and its hash buckets, allocated at create.
 * Frees:   lg_client_addresses_destroy(), after every worker was joined.
 * Threads: any worker thread; `lock` is held only for one lookup (no I/O, no allocation).
 *          The main thread changes the bound per address at a reload, under the same lock.
 * Bounds:  entries <= limits.max_connections; connections per address <=
 *          limits.max_connections_per_address (0 = no bound; a lowered bound refuses new
 *          connections of an address above it and closes none).
 */
#ifndef LG_CLIENT_ADDRESSES_H
#define LG_CLIENT_ADDRESSES_H

#include <stdbool.h>
#include <stdint.h>

#include "client_address.h"

struct lg_client_addresses;

/* Return value: the table, or NULL (out of memory). */
struct lg_client_addresses *lg_client_addresses_create(uint32_t max_entries, uint32_t per_address);
void lg_client_addresses_destroy(struct lg_client_addresses *t);

/* A reload's new bound per address (0 = none), for the connections counted from now on. */
void lg_client_addresses_set_per_address(struct lg_client_addresses *t, uint32_t per_address);
/* The bound per address now (for messages). */
uint32_t lg_client_addresses_per_address(struct lg_client_addresses *t);

/* Count one more connection against a. Return value: true, or false when a already holds
 * per_address connections (or the table is full): nothing was counted. */
bool lg_client_addresses_acquire(struct lg_client_addresses *t, const struct lg_client_address *a);
/* Give back what acquire counted. */
void lg_client_addresses_release(struct lg_client_addresses *t, const struct lg_client_address *a);
/* Connections a holds now (for tests and the admin API). */
uint32_t lg_client_addresses_count(struct lg_client_addresses *t, const struct lg_client_address *a);

#endif
