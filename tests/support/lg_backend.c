/* lg_backend.c - see lg_backend.h: the backend stub of the hook tests. */
#include "lg_backend.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_ASKS 1024
#define BODY_MAX 8192

struct ask_seen {
    char topic[160];
    char body[2048];
};

struct lg_backend {
    struct MHD_Daemon *daemon;
    uint16_t port;
    int late_ms, slow_ms;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    bool refuse;
    struct ask_seen asks[MAX_ASKS];
    size_t ask_count;
    struct lg_notice_seen notices[LG_BACKEND_MAX_NOTICES];
    size_t notice_count;
};

struct request {
    char body[BODY_MAX];
    size_t len;
};

static enum MHD_Result answer(struct MHD_Connection *conn, unsigned status, const char *text)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_MUST_COPY);
    MHD_add_response_header(r, "Content-Type", "application/json");
    enum MHD_Result rc = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return rc;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* The "topic" string of a hook question (crude, the gateway writes compact JSON). */
static void topic_of(const char *body, char *out, size_t cap)
{
    out[0] = '\0';
    const char *p = strstr(body, "\"topic\":\"");
    if (!p)
        return;
    p += 9;
    size_t n = strcspn(p, "\"");
    snprintf(out, cap, "%.*s", (int)(n < cap ? n : cap - 1), p);
}

static enum MHD_Result hook(struct lg_backend *b, struct MHD_Connection *conn, const char *body)
{
    char topic[160];
    topic_of(body, topic, sizeof topic);
    pthread_mutex_lock(&b->lock);
    if (b->ask_count < MAX_ASKS) {
        snprintf(b->asks[b->ask_count].topic, sizeof b->asks[0].topic, "%s", topic);
        snprintf(b->asks[b->ask_count].body, sizeof b->asks[0].body, "%.2000s", body);
        b->ask_count++;
    }
    pthread_cond_broadcast(&b->changed);
    pthread_mutex_unlock(&b->lock);
    if (strncmp(topic, "deny/", 5) == 0)
        return answer(conn, 200, "{\"allow\":false,\"reason\":\"not on the list\"}");
    if (strncmp(topic, "late/", 5) == 0)
        sleep_ms(b->late_ms);
    if (strncmp(topic, "garbage/", 8) == 0)
        return answer(conn, 200, "this is not json");
    if (strncmp(topic, "fail/", 5) == 0)
        return answer(conn, 500, "{\"error\":\"boom\"}");
    if (strncmp(topic, "allow/", 6) != 0 && strncmp(topic, "late/", 5) != 0 && b->slow_ms)
        sleep_ms(b->slow_ms);
    return answer(conn, 200, "{\"allow\":true}");
}

static enum MHD_Result webhook(struct lg_backend *b, struct MHD_Connection *conn,
                               const char *body)
{
    pthread_mutex_lock(&b->lock);
    bool refuse = b->refuse;
    if (!refuse && b->notice_count < LG_BACKEND_MAX_NOTICES) {
        struct lg_notice_seen *n = &b->notices[b->notice_count++];
        memset(n, 0, sizeof *n);
        snprintf(n->body, sizeof n->body, "%.8000s", body);
        const char *v = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Livegate-Signature");
        snprintf(n->signature, sizeof n->signature, "%s", v ? v : "");
        v = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Livegate-Webhook-Id");
        snprintf(n->id, sizeof n->id, "%s", v ? v : "");
        v = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Livegate-Attempt");
        n->attempt = v ? atoi(v) : 0;
    }
    pthread_cond_broadcast(&b->changed);
    pthread_mutex_unlock(&b->lock);
    return refuse ? answer(conn, 503, "{}") : answer(conn, 204, "");
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version,
                                  const char *upload, size_t *upload_size, void **state)
{
    (void)version, (void)method;
    struct lg_backend *b = cls;
    struct request *rq = *state;
    if (!rq) {
        *state = calloc(1, sizeof *rq);
        return *state ? MHD_YES : MHD_NO;
    }
    if (*upload_size) {
        size_t n = *upload_size;
        if (rq->len + n >= BODY_MAX)
            n = BODY_MAX - 1 - rq->len;
        memcpy(rq->body + rq->len, upload, n);
        rq->len += n;
        *upload_size = 0;
        return MHD_YES;
    }
    rq->body[rq->len] = '\0';
    if (strcmp(url, "/hook") == 0)
        return hook(b, conn, rq->body);
    if (strcmp(url, "/webhook") == 0)
        return webhook(b, conn, rq->body);
    return answer(conn, 404, "{}");
}

static void on_done(void *cls, struct MHD_Connection *conn, void **state,
                    enum MHD_RequestTerminationCode why)
{
    (void)cls, (void)conn, (void)why;
    free(*state);
    *state = NULL;
}

struct lg_backend *lg_backend_start(uint16_t port, int late_ms, int slow_ms)
{
    struct lg_backend *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    b->late_ms = late_ms;
    b->slow_ms = slow_ms;
    pthread_mutex_init(&b->lock, NULL);
    pthread_cond_init(&b->changed, NULL);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    b->daemon = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD,
                                 port, NULL, NULL, on_request, b, MHD_OPTION_SOCK_ADDR, &sa,
                                 MHD_OPTION_LISTENING_ADDRESS_REUSE, 1u,
                                 MHD_OPTION_NOTIFY_COMPLETED, on_done, b, MHD_OPTION_END);
    if (!b->daemon) {
        fprintf(stderr, "lg_backend: cannot listen on port %u\n", port);
        free(b);
        return NULL;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(b->daemon, MHD_DAEMON_INFO_BIND_PORT);
    b->port = info ? info->port : port;
    return b;
}

uint16_t lg_backend_port(const struct lg_backend *b) { return b->port; }

void lg_backend_stop(struct lg_backend *b)
{
    if (!b)
        return;
    MHD_stop_daemon(b->daemon);
    pthread_mutex_destroy(&b->lock);
    pthread_cond_destroy(&b->changed);
    free(b);
}

void lg_backend_refuse_webhooks(struct lg_backend *b, bool refuse)
{
    pthread_mutex_lock(&b->lock);
    b->refuse = refuse;
    pthread_mutex_unlock(&b->lock);
}

static int asks_locked(const struct lg_backend *b, const char *topic)
{
    int n = 0;
    for (size_t i = 0; i < b->ask_count; i++)
        n += strcmp(b->asks[i].topic, topic) == 0;
    return n;
}

int lg_backend_asks(struct lg_backend *b, const char *topic)
{
    pthread_mutex_lock(&b->lock);
    int n = asks_locked(b, topic);
    pthread_mutex_unlock(&b->lock);
    return n;
}

bool lg_backend_last_ask(struct lg_backend *b, const char *topic, char *out, size_t cap)
{
    bool found = false;
    pthread_mutex_lock(&b->lock);
    for (size_t i = b->ask_count; i-- > 0 && !found;)
        if (strcmp(b->asks[i].topic, topic) == 0) {
            snprintf(out, cap, "%s", b->asks[i].body);
            found = true;
        }
    pthread_mutex_unlock(&b->lock);
    return found;
}

static void deadline_in(struct timespec *until, int timeout_ms)
{
    clock_gettime(CLOCK_REALTIME, until);
    until->tv_sec += timeout_ms / 1000;
    until->tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (until->tv_nsec >= 1000000000L) {
        until->tv_sec++;
        until->tv_nsec -= 1000000000L;
    }
}

bool lg_backend_wait_asks(struct lg_backend *b, const char *topic, int n, int timeout_ms)
{
    struct timespec until;
    deadline_in(&until, timeout_ms);
    pthread_mutex_lock(&b->lock);
    while (asks_locked(b, topic) < n && pthread_cond_timedwait(&b->changed, &b->lock, &until) == 0) {
    }
    bool there = asks_locked(b, topic) >= n;
    pthread_mutex_unlock(&b->lock);
    return there;
}

bool lg_backend_wait_notice(struct lg_backend *b, size_t index, struct lg_notice_seen *out,
                            int timeout_ms)
{
    struct timespec until;
    deadline_in(&until, timeout_ms);
    pthread_mutex_lock(&b->lock);
    while (b->notice_count <= index &&
           pthread_cond_timedwait(&b->changed, &b->lock, &until) == 0) {
    }
    bool there = b->notice_count > index;
    if (there && out)
        *out = b->notices[index];
    pthread_mutex_unlock(&b->lock);
    return there;
}

size_t lg_backend_notice_count(struct lg_backend *b)
{
    pthread_mutex_lock(&b->lock);
    size_t n = b->notice_count;
    pthread_mutex_unlock(&b->lock);
    return n;
}

bool lg_notice_signed(const struct lg_notice_seen *n, const char *secret)
{
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    HMAC(EVP_sha256(), secret, (int)strlen(secret), (const unsigned char *)n->body,
         strlen(n->body), mac, &len);
    char want[2 * EVP_MAX_MD_SIZE + 8] = "sha256=";
    for (unsigned int i = 0; i < len; i++)
        snprintf(want + 7 + 2 * i, 3, "%02x", mac[i]);
    return strcmp(want, n->signature) == 0;
}
