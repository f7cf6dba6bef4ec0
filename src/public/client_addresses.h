/*
 * client_addresses.h - what each client address holds on the public port, so one address
 * cannot take every connection: a process-wide table of open connections per address, with a
 * bound per address (limits.max_connections_per_address).
 *
 * The address a connection counts against is its peer's, unless the peer is a trusted proxy
 * (trusted_proxies): then it is the client the proxy names in X-Forwarded-For (the rightmost
 * entry that is not itself a trusted proxy). A connection from a trusted proxy that names no
 * client is the proxy's own (a health check, a local tool) and counts against nothing.
 *
 * Owns:    the table: a fixed array of entries (as many as limits.max_connections, since each
 *          entry holds at least one connection) and its hash buckets, allocated at create.
 * Frees:   lg_client_addresses_destroy(), after every worker was joined.
 * Threads: any worker thread; `lock` is held only for one lookup (no I/O, no allocation).
 * Bounds:  entries <= limits.max_connections; connections per address <=
 *          limits.max_connections_per_address (0 = no bound).
 */
#ifndef LG_CLIENT_ADDRESSES_H
#define LG_CLIENT_ADDRESSES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

struct lg_client_addresses;

/* An address as the table keys it: IPv6, or IPv4 mapped into IPv6 (::ffff:a.b.c.d). */
struct lg_client_address {
    uint8_t bytes[16];
};

/* Return value: the table, or NULL (out of memory). */
struct lg_client_addresses *lg_client_addresses_create(uint32_t max_entries, uint32_t per_address);
void lg_client_addresses_destroy(struct lg_client_addresses *t);

/* Count one more connection against a. Return value: true, or false when a already holds
 * per_address connections (or the table is full): nothing was counted. */
bool lg_client_addresses_acquire(struct lg_client_addresses *t, const struct lg_client_address *a);
/* Give back what acquire counted. */
void lg_client_addresses_release(struct lg_client_addresses *t, const struct lg_client_address *a);
/* Connections a holds now (for tests and the admin API). */
uint32_t lg_client_addresses_count(struct lg_client_addresses *t, const struct lg_client_address *a);

/* The key of a socket address (AF_INET or AF_INET6). Return value: false for other families. */
bool lg_client_address_of(const struct sockaddr *sa, struct lg_client_address *out);
/* Parse a numeric IPv4 or IPv6 address (no port, no brackets) from text[0..len). */
bool lg_client_address_parse(const char *text, size_t len, struct lg_client_address *out);
/* Write a as text (inet_ntop; IPv4-mapped as a.b.c.d) into out (INET6_ADDRSTRLEN bytes). */
void lg_client_address_format(const struct lg_client_address *a, char *out, size_t cap);

/*
 * The client address of a request from peer: peer itself unless it is one of the n trusted
 * proxies; then the rightmost X-Forwarded-For entry (xff[0..xff_len), may be empty) that is not
 * a trusted proxy. Return value: true with *client set, or false when the request counts
 * against no address (a trusted proxy naming no client).
 */
bool lg_client_address_resolve(const struct lg_client_address *peer,
                               const struct lg_client_address *trusted, size_t n,
                               const char *xff, size_t xff_len, struct lg_client_address *client);

#endif
