/* client_address.c - see client_address.h. */
#include "client_address.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

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

bool lg_client_address_resolve(const struct lg_client_address *peer,
                               const struct lg_client_address *trusted, size_t n,
                               const char *xff, size_t xff_len, struct lg_client_address *client)
{
    if (!is_trusted(peer, trusted, n)) {
        *client = *peer;
        return true;
    }
    /* Right to left: each proxy appends the address it received the request from. */
    size_t end = xff_len;
    while (end > 0) {
        size_t start = end;
        while (start > 0 && xff[start - 1] != ',')
            start--;
        size_t a = start, b = end;
        while (a < b && (xff[a] == ' ' || xff[a] == '\t'))
            a++;
        while (b > a && (xff[b - 1] == ' ' || xff[b - 1] == '\t'))
            b--;
        struct lg_client_address entry;
        if (!lg_client_address_parse(xff + a, b - a, &entry)) {
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
