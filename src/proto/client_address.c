/* client_address.c - see client_address.h. */
#include "client_address.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <strings.h>

static void map_ipv4(const void *ipv4, struct lg_client_address *out)
{
    memset(out->bytes, 0, 10);
    out->bytes[10] = out->bytes[11] = 0xff;
    memcpy(out->bytes + 12, ipv4, 4);
}

bool lg_client_address_of(const struct sockaddr *sa, struct lg_client_address *out)
{
    if (sa->sa_family == AF_INET) {
        map_ipv4(&((const struct sockaddr_in *)sa)->sin_addr, out);
        return true;
    }
    if (sa->sa_family == AF_INET6) {
        memcpy(out->bytes, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
        return true;
    }
    return false;
}

bool lg_client_address_parse(const char *text, size_t len, struct lg_client_address *out)
{
    char buf[INET6_ADDRSTRLEN];
    if (len == 0 || len >= sizeof buf)
        return false;
    memcpy(buf, text, len);
    buf[len] = '\0';
    struct in_addr v4;
    if (inet_pton(AF_INET, buf, &v4) == 1) {
        map_ipv4(&v4, out);
        return true;
    }
    return inet_pton(AF_INET6, buf, out->bytes) == 1;
}

void lg_client_address_format(const struct lg_client_address *a, char *out, size_t cap)
{
    static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (memcmp(a->bytes, mapped, sizeof mapped) == 0)
        inet_ntop(AF_INET, a->bytes + 12, out, (socklen_t)cap);
    else
        inet_ntop(AF_INET6, a->bytes, out, (socklen_t)cap);
}

static bool is_trusted(const struct lg_client_address *a, const struct lg_client_address *trusted,
                       size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (memcmp(&trusted[i], a, sizeof *a) == 0)
            return true;
    return false;
}

bool lg_client_address_is_loopback(const struct lg_client_address *a)
{
    static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    static const uint8_t v6_loopback[16] = {[15] = 1};
    if (memcmp(a->bytes, mapped, sizeof mapped) == 0)
        return a->bytes[12] == 127; /* 127.0.0.0/8 */
    return memcmp(a->bytes, v6_loopback, sizeof v6_loopback) == 0;
}

typedef bool parse_entry_fn(const char *s, size_t len, struct lg_client_address *out);

/* A port after a node: digits, or an obfuscated port ("_" and letters, digits, ".", "_", "-";
 * RFC 7239 6.3). */
static bool is_port(const char *s, size_t len)
{
    if (len == 0 || len > 32)
        return false;
    bool obfuscated = s[0] == '_';
    for (size_t i = obfuscated; i < len; i++) {
        char c = s[i];
        bool digit = c >= '0' && c <= '9';
        bool other = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '.' || c == '_' ||
                     c == '-';
        if (!digit && !(obfuscated && other))
            return false;
    }
    return obfuscated ? len > 1 : len <= 5;
}

/* A node as proxies write it (RFC 7239 6): an address alone, IPv4:port, [IPv6] or
 * [IPv6]:port; in X-Forwarded-For also a bare IPv6 address. */
static bool parse_node(const char *s, size_t len, struct lg_client_address *out)
{
    if (len > 0 && s[0] == '[') {
        const char *close = memchr(s, ']', len);
        if (!close)
            return false;
        size_t after = len - (size_t)(close - s) - 1;
        if (after > 0 && (close[1] != ':' || !is_port(close + 2, after - 1)))
            return false;
        return memchr(s + 1, ':', (size_t)(close - s - 1)) != NULL && /* IPv6 only */
               lg_client_address_parse(s + 1, (size_t)(close - s - 1), out);
    }
    if (lg_client_address_parse(s, len, out))
        return true;
    const char *colon = memchr(s, ':', len); /* IPv4:port: one colon */
    return colon && !memchr(colon + 1, ':', len - (size_t)(colon - s) - 1) &&
           is_port(colon + 1, len - (size_t)(colon - s) - 1) &&
           lg_client_address_parse(s, (size_t)(colon - s), out);
}

/* One element of a Forwarded header (RFC 7239 4): its for= node, quoted or not. "unknown" and
 * obfuscated nodes do not parse. */
static bool parse_forwarded_element(const char *s, size_t len, struct lg_client_address *out)
{
    for (size_t pos = 0; pos < len;) {
        size_t end = pos;
        while (end < len && s[end] != ';')
            end++;
        size_t a = pos;
        while (a < end && (s[a] == ' ' || s[a] == '\t'))
            a++;
        if (end - a > 4 && strncasecmp(s + a, "for=", 4) == 0) {
            const char *v = s + a + 4;
            size_t n = end - a - 4;
            while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t'))
                n--;
            if (n >= 2 && v[0] == '"' && v[n - 1] == '"')
                v++, n -= 2;
            return parse_node(v, n, out);
        }
        pos = end + 1;
    }
    return false;
}

/* Right to left over a comma-separated list: each proxy appends the address it got the
 * request from, so the first entry that is not a trusted proxy is the client. */
static bool resolve_list(const struct lg_client_address *peer,
                         const struct lg_client_address *trusted, size_t n, const char *list,
                         size_t list_len, parse_entry_fn *parse, struct lg_client_address *client)
{
    size_t end = list_len;
    while (end > 0) {
        size_t start = end;
        while (start > 0 && list[start - 1] != ',')
            start--;
        size_t a = start, b = end;
        while (a < b && (list[a] == ' ' || list[a] == '\t'))
            a++;
        while (b > a && (list[b - 1] == ' ' || list[b - 1] == '\t'))
            b--;
        struct lg_client_address entry;
        if (!parse(list + a, b - a, &entry)) {
            *client = *peer; /* unreadable: count it against the proxy that sent it */
            return true;
        }
        if (!is_trusted(&entry, trusted, n)) {
            *client = entry;
            return true;
        }
        end = start > 0 ? start - 1 : 0;
    }
    return false;
}

bool lg_client_address_resolve(const struct lg_client_address *peer,
                               const struct lg_client_address *trusted, size_t n,
                               const char *xff, size_t xff_len, const char *forwarded,
                               size_t forwarded_len, struct lg_client_address *client)
{
    if (!is_trusted(peer, trusted, n)) {
        *client = *peer;
        return !lg_client_address_is_loopback(peer); /* a local process: counted nowhere */
    }
    if (xff_len > 0)
        return resolve_list(peer, trusted, n, xff, xff_len, parse_node, client);
    return resolve_list(peer, trusted, n, forwarded, forwarded_len, parse_forwarded_element,
                        client);
}

int lg_client_address_list_parse(const char *text, struct lg_client_address *out, size_t cap,
                                 size_t *bad_at)
{
    size_t n = 0, pos = 0, len = strlen(text);
    while (pos < len) {
        size_t start = pos;
        while (pos < len && text[pos] != ',')
            pos++;
        size_t a = start, b = pos;
        while (a < b && text[a] == ' ')
            a++;
        while (b > a && text[b - 1] == ' ')
            b--;
        if (a < b) {
            if (n == cap || !lg_client_address_parse(text + a, b - a, &out[n])) {
                *bad_at = a;
                return -1;
            }
            n++;
        }
        pos++;
    }
    return (int)n;
}
