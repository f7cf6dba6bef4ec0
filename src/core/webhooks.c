/*
 * webhooks.c - the webhook notices (occupied, vacated, disconnect): the reports other threads
 * queue, vacated's debounce per topic, the signature, and delivery with retry and backoff, on
 * the backend thread (hooks.c runs it; hooks.h has the design).
 */
#include <jansson.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "clock.h"
#include "hooks_internal.h"
#include "log.h"
#include "stats.h"
#include "topic_name.h"

#define OCC_BUCKETS 16384

/* A topic as reported to the backend: occupied, and maybe empty again (vacating). */
struct lg_occupancy {
    struct lg_occupancy *next_in_bucket;
    bool vacating;                   /* empty since vacated_at: vacated is due at vacate_ms */
    uint64_t vacate_ms;              /* monotonic */
    int64_t vacated_at_unix_ms;
    struct lg_dlink link;            /* h->vacating */
    char topic[];
};

static uint64_t name_hash(const char *s)
{
    uint64_t v = 1469598103934665603ull;
    for (; *s; s++)
        v = (v ^ (unsigned char)*s) * 1099511628211ull;
    return v;
}

int lg_webhooks__init(struct lg_hooks *h)
{
    h->occ_buckets = calloc(OCC_BUCKETS, sizeof *h->occ_buckets);
    h->occ_mask = OCC_BUCKETS - 1;
    h->started_unix_ms = lg_unix_ms();
    h->jitter = (uint64_t)h->started_unix_ms | 1;
    return h->occ_buckets ? 0 : -1;
}

void lg_hooks__unhold(struct lg_hooks *h, size_t n)
{
    pthread_mutex_lock(&h->lock);
    h->held -= n;
    pthread_mutex_unlock(&h->lock);
}

/* ---- Reports (any thread) ----------------------------------------------------------------- */

/* Queue r for the thread, or drop it (webhooks.queue_max held already). */
static void push_report(struct lg_hooks *h, struct lg_report *r)
{
    pthread_mutex_lock(&h->lock);
    bool room = h->held < h->cfg->webhooks.queue_max;
    if (room) {
        h->held++;
        if (h->reports_tail)
            h->reports_tail->next = r;
        else
            h->reports = r;
        h->reports_tail = r;
    }
    pthread_mutex_unlock(&h->lock);
    if (room) {
        curl_multi_wakeup(h->multi);
        return;
    }
    LG_STAT_ADD(webhooks_dropped_queue_full, 1);
    static struct lg_ratelimit rl;
    lg_log_ratelimited(&rl, 1000, LG_LOG_WARN,
                       "webhook dropped: %u notices wait already (webhooks.queue_max)",
                       h->cfg->webhooks.queue_max);
    free(r->body);
    free(r);
}

static struct lg_report *new_report(const char *topic, int kind)
{
    size_t len = topic ? strlen(topic) : 0;
    struct lg_report *r = calloc(1, sizeof *r + len + 1);
    if (!r)
        return NULL;
    r->kind = kind;
    r->at_unix_ms = lg_unix_ms();
    r->at_mono_ms = lg_mono_ms();
    if (topic)
        memcpy(r->topic, topic, len + 1);
    return r;
}

void lg_hooks_occupancy(void *hooks, const char *topic, bool occupied)
{
    struct lg_hooks *h = hooks;
    if (topic[0] == '$')
        return; /* the gateway's own topics */
    struct lg_report *r = new_report(topic, occupied ? 1 : 0);
    if (r)
        push_report(h, r);
    else
        LG_STAT_ADD(webhooks_dropped_queue_full, 1);
}

static char *notice_id(struct lg_hooks *h, char *out, size_t cap)
{
    uint64_t seq = atomic_fetch_add(&h->notice_ids, 1) + 1;
    snprintf(out, cap, "%llx-%llu", (unsigned long long)h->started_unix_ms,
             (unsigned long long)seq);
    return out;
}

void lg_hooks_disconnected(struct lg_hooks *h, uint64_t client_id, const char *transport,
                           const char *address, const struct lg_grant *g,
                           const char *topics_json, const char *reason)
{
    if (!h->cfg->webhooks.url[0])
        return;
    struct lg_report *r = new_report(NULL, -1);
    char *claims_text = g ? lg_grant_claims_text(g) : NULL;
    json_t *claims = claims_text ? json_loads(claims_text, 0, NULL) : NULL;
    json_t *topics = json_loads(topics_json, 0, NULL);
    free(claims_text);
    char id[40];
    json_t *body = r ? json_pack("{s:s,s:s,s:I,s:I,s:s,s:s,s:O,s:O,s:s}", "id",
                                 notice_id(h, id, sizeof id), "event", "disconnect", "time",
                                 (json_int_t)r->at_unix_ms, "client", (json_int_t)client_id,
                                 "transport", transport, "address", address, "claims",
                                 claims ? claims : json_null(), "topics",
                                 topics ? topics : json_null(), "reason", reason)
                     : NULL;
    json_decref(claims);
    json_decref(topics);
    if (r)
        r->body = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    if (!r || !r->body) {
        LG_STAT_ADD(webhooks_dropped_queue_full, 1); /* out of memory: not queued */
        free(r);
        return;
    }
    push_report(h, r);
}

/* ---- Notices (the thread) ----------------------------------------------------------------- */

static void add_notice(struct lg_hooks *h, char *body, const char *id, uint64_t now_ms)
{
    struct lg_notice *n = calloc(1, sizeof *n);
    if (!n || !body) {
        free(n);
        free(body);
        LG_STAT_ADD(webhooks_dropped_queue_full, 1);
        lg_hooks__unhold(h, 1);
        return;
    }
    n->body = body;
    snprintf(n->id, sizeof n->id, "%s", id);
    n->due_ms = now_ms;
    lg_dlist_push_tail(&h->notices, &n->link);
}

static void add_topic_notice(struct lg_hooks *h, const char *event, const char *topic,
                             int64_t at_unix_ms, uint64_t now_ms)
{
    char id[40];
    notice_id(h, id, sizeof id);
    json_t *body = json_pack("{s:s,s:s,s:I,s:s}", "id", id, "event", event, "time",
                             (json_int_t)at_unix_ms, "topic", topic);
    add_notice(h, body ? json_dumps(body, JSON_COMPACT) : NULL, id, now_ms);
    json_decref(body);
}

static struct lg_occupancy **occ_slot(struct lg_hooks *h, const char *topic)
{
    struct lg_occupancy **p = &h->occ_buckets[name_hash(topic) & h->occ_mask];
    while (*p && strcmp((*p)->topic, topic) != 0)
        p = &(*p)->next_in_bucket;
    return p;
}

static void occupied(struct lg_hooks *h, const struct lg_report *r, uint64_t now_ms)
{
    struct lg_occupancy **p = occ_slot(h, r->topic);
    if (*p && (*p)->vacating) {
        /* back within the delay: neither vacated nor occupied is sent */
        (*p)->vacating = false;
        lg_dlist_remove(&h->vacating, &(*p)->link);
        lg_hooks__unhold(h, 2);
        return;
    }
    if (*p) {
        lg_hooks__unhold(h, 1);
        return;
    }
    size_t len = strlen(r->topic);
    struct lg_occupancy *o = calloc(1, sizeof *o + len + 1);
    if (!o) {
        LG_STAT_ADD(webhooks_dropped_queue_full, 1);
        lg_hooks__unhold(h, 1);
        return;
    }
    memcpy(o->topic, r->topic, len + 1);
    *p = o;
    add_topic_notice(h, "occupied", r->topic, r->at_unix_ms, now_ms);
}

static void vacated(struct lg_hooks *h, const struct lg_report *r)
{
    struct lg_occupancy *o = *occ_slot(h, r->topic);
    if (!o || o->vacating) {
        lg_hooks__unhold(h, 1);
        return;
    }
    o->vacating = true; /* holds the report's place until vacated goes or is cancelled */
    o->vacate_ms = r->at_mono_ms + h->cfg->webhooks.vacated_delay_ms;
    o->vacated_at_unix_ms = r->at_unix_ms;
    lg_dlist_push_tail(&h->vacating, &o->link);
}

/* Every report posted so far, oldest first; the list is the caller's. */
static struct lg_report *take_all_reports(struct lg_hooks *h)
{
    pthread_mutex_lock(&h->lock);
    struct lg_report *r = h->reports;
    h->reports = h->reports_tail = NULL;
    pthread_mutex_unlock(&h->lock);
    return r;
}

void lg_webhooks__take_reports(struct lg_hooks *h, uint64_t now_ms)
{
    struct lg_report *r = take_all_reports(h);
    while (r) {
        struct lg_report *next = r->next;
        if (r->kind < 0) {
            json_t *body = json_loads(r->body, 0, NULL);
            add_notice(h, r->body, json_string_value(json_object_get(body, "id")), now_ms);
            json_decref(body);
        } else if (r->kind) {
            occupied(h, r, now_ms);
        } else {
            vacated(h, r);
        }
        free(r);
        r = next;
    }
}

/* The signature header: HMAC-SHA256 of the body with webhooks.secret, in hex. */
static struct curl_slist *notice_headers(const struct lg_hooks *h, const struct lg_notice *n)
{
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int mac_len = 0;
    const char *secret = h->cfg->webhooks.secret;
    if (!HMAC(EVP_sha256(), secret, (int)strlen(secret), (const unsigned char *)n->body,
              strlen(n->body), mac, &mac_len))
        return NULL;
    char line[128] = "Livegate-Signature: sha256=";
    size_t at = strlen(line);
    for (unsigned int i = 0; i < mac_len; i++)
        at += (size_t)snprintf(line + at, sizeof line - at, "%02x", mac[i]);
    char id_line[80];
    snprintf(id_line, sizeof id_line, "Livegate-Webhook-Id: %s", n->id);
    char attempt_line[48];
    snprintf(attempt_line, sizeof attempt_line, "Livegate-Attempt: %u", n->attempts);
    struct curl_slist *l = curl_slist_append(NULL, "Content-Type: application/json");
    const char *more[] = {"Expect:", line, id_line, attempt_line};
    for (size_t i = 0; l && i < sizeof more / sizeof more[0]; i++) {
        struct curl_slist *grown = curl_slist_append(l, more[i]);
        if (!grown) {
            curl_slist_free_all(l);
            return NULL;
        }
        l = grown;
    }
    return l;
}

/* The wait after `attempts` failures: retry_min_ms doubled per failure, capped at
 * retry_max_ms, then a random point in its upper half. */
static uint64_t backoff_ms(struct lg_hooks *h, uint32_t attempts)
{
    uint64_t d = h->cfg->webhooks.retry_min_ms;
    for (uint32_t i = 1; i < attempts && d < h->cfg->webhooks.retry_max_ms; i++)
        d *= 2;
    if (d > h->cfg->webhooks.retry_max_ms)
        d = h->cfg->webhooks.retry_max_ms;
    h->jitter ^= h->jitter << 13;
    h->jitter ^= h->jitter >> 7;
    h->jitter ^= h->jitter << 17;
    return d / 2 + h->jitter % (d / 2 + 1);
}

static void free_notice(struct lg_hooks *h, struct lg_notice *n)
{
    lg_dlist_remove(&h->notices, &n->link);
    if (n->transfer) {
        lg_hooks__transfer_free(h, n->transfer);
        h->notices_in_flight--;
    }
    free(n->body);
    free(n);
}

void lg_webhooks__finished(struct lg_hooks *h, struct lg_notice *n, bool delivered,
                           uint64_t now_ms)
{
    h->notices_in_flight--;
    if (delivered) {
        LG_STAT_ADD(webhooks_sent, 1);
        free_notice(h, n);
        lg_hooks__unhold(h, 1);
        return;
    }
    LG_STAT_ADD(webhooks_failed, 1);
    if (n->attempts >= h->cfg->webhooks.max_attempts) {
        LG_STAT_ADD(webhooks_dropped_attempts, 1);
        static struct lg_ratelimit rl;
        lg_log_ratelimited(&rl, 1000, LG_LOG_WARN,
                           "webhook %s given up after %u attempts (webhooks.max_attempts)",
                           n->id, n->attempts);
        free_notice(h, n);
        lg_hooks__unhold(h, 1);
        return;
    }
    n->due_ms = now_ms + backoff_ms(h, n->attempts);
}

static void start_notice(struct lg_hooks *h, struct lg_notice *n)
{
    n->attempts++;
    struct curl_slist *headers = notice_headers(h, n);
    n->transfer = headers ? lg_hooks__post(h, h->cfg->webhooks.url, n->body,
                                           h->cfg->webhooks.timeout_ms, headers, true, n)
                          : NULL;
    h->notices_in_flight++;
    if (!n->transfer) {
        curl_slist_free_all(headers);
        lg_webhooks__finished(h, n, false, lg_mono_ms());
    }
}

uint32_t lg_webhooks__run(struct lg_hooks *h, uint64_t now_ms)
{
    uint64_t next = UINT64_MAX;
    for (struct lg_dlink *l = h->vacating.first, *nl; l; l = nl) {
        nl = l->next;
        struct lg_occupancy *o = lg_dlist_entry(l, struct lg_occupancy, link);
        if (o->vacate_ms > now_ms) {
            next = o->vacate_ms < next ? o->vacate_ms : next;
            continue;
        }
        lg_dlist_remove(&h->vacating, &o->link);
        *occ_slot(h, o->topic) = o->next_in_bucket;
        add_topic_notice(h, "vacated", o->topic, o->vacated_at_unix_ms, now_ms);
        free(o);
    }
    for (struct lg_dlink *l = h->notices.first, *nl; l; l = nl) {
        nl = l->next;
        struct lg_notice *n = lg_dlist_entry(l, struct lg_notice, link);
        if (n->transfer)
            continue;
        if (n->due_ms > now_ms) {
            next = n->due_ms < next ? n->due_ms : next;
        } else if (h->notices_in_flight < LG_WEBHOOKS_IN_FLIGHT) {
            start_notice(h, n);
            if (!n->transfer && n->due_ms > now_ms) /* could not start: retried */
                next = n->due_ms < next ? n->due_ms : next;
        }
    }
    return next == UINT64_MAX ? UINT32_MAX : (uint32_t)(next - now_ms);
}

void lg_webhooks__abandon(struct lg_hooks *h)
{
    size_t dropped = 0;
    struct lg_report *r = take_all_reports(h);
    while (r) {
        struct lg_report *next = r->next;
        dropped++;
        free(r->body);
        free(r);
        r = next;
    }
    while (h->notices.first) {
        free_notice(h, lg_dlist_entry(h->notices.first, struct lg_notice, link));
        dropped++;
    }
    dropped += h->vacating.count;
    LG_STAT_ADD(webhooks_dropped_shutdown, dropped);
    if (dropped)
        lg_log(LG_LOG_WARN, "webhooks: %zu notices not sent at shutdown", dropped);
}

void lg_webhooks__release(struct lg_hooks *h)
{
    for (size_t b = 0; h->occ_buckets && b < OCC_BUCKETS; b++)
        while (h->occ_buckets[b]) {
            struct lg_occupancy *o = h->occ_buckets[b];
            h->occ_buckets[b] = o->next_in_bucket;
            free(o);
        }
    free(h->occ_buckets);
    while (h->notices.first) /* a thread never started */
        free_notice(h, lg_dlist_entry(h->notices.first, struct lg_notice, link));
    while (h->reports) { /* reported after the thread stopped (the last clients' release) */
        struct lg_report *r = h->reports;
        h->reports = r->next;
        LG_STAT_ADD(webhooks_dropped_shutdown, 1);
        free(r->body);
        free(r);
    }
}
