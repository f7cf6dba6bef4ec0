/*
 * client_address.h - a client's network address as livegate keys it (IPv6, IPv4 mapped into
 * ::ffff:a.b.c.d), parsed, printed, and resolved through trusted proxies: a request counts
 * against its peer's address unless the peer is a trusted proxy (trusted_proxies), and then
 * against the client the proxy names in X-Forwarded-For or Forwarded (the rightmost entry that
 * is not itself a trusted proxy). A trusted proxy that names no client counts against nothing.
 *
 * Owns: nothing. Frees: nothing. Threads: any (pure). Bounds: 16 bytes per address.
 */
#ifndef LG_CLIENT_ADDRESS_H
#define LG_CLIENT_ADDRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

struct lg_client_address {
    uint8_t bytes[16];
};

/* The key of a socket address (AF_INET or AF_INET6). Return value: false for other families. */
bool lg_client_address_of(const struct sockaddr *sa, struct lg_client_address *out);
/* Parse a numeric IPv4 or IPv6 address (no port, no brackets) from text[0..len). */
bool lg_client_address_parse(const char *text, size_t len, struct lg_client_address *out);
/* Write a as text (inet_ntop; IPv4-mapped as a.b.c.d) into out (INET6_ADDRSTRLEN bytes). */
void lg_client_address_format(const struct lg_client_address *a, char *out, size_t cap);

/* Parse a comma-separated list of addresses (spaces allowed) into out[0..cap).
 * Return value: how many, or -1 when an entry is not an address or there are more than cap
 * (*bad_at: the offset of the entry at fault). */
int lg_client_address_list_parse(const char *text, struct lg_client_address *out, size_t cap,
                                 size_t *bad_at);

/* True for 127.0.0.0/8 (also IPv4-mapped) and ::1. */
bool lg_client_address_is_loopback(const struct lg_client_address *a);

/*
 * The client address of a request from peer: peer itself unless it is one of the n trusted
 * proxies; then the rightmost X-Forwarded-For entry (xff[0..xff_len)) that is not a trusted
 * proxy or, with no X-Forwarded-For, the rightmost for= of a Forwarded header (RFC 7239) that
 * is not; an unreadable entry ("unknown", an obfuscated node) counts against the peer. Either
 * header's entry may carry a port (203.0.113.9:1234, [2001:db8::1]:1234), which is ignored.
 * Return value: true with *client set, or false when the request counts against no address:
 * a trusted proxy that names no client, or a loopback peer that is not a trusted proxy (a
 * local process - a load test, a health check - could exhaust the host anyway, and a bound
 * per loopback address would only break it).
 */
bool lg_client_address_resolve(const struct lg_client_address *peer,
                               const struct lg_client_address *trusted, size_t n,
                               const char *xff, size_t xff_len, const char *forwarded,
                               size_t forwarded_len, struct lg_client_address *client);

#endif
