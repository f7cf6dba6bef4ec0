/*
 * hooks.c - the backend thread (libcurl's multi interface), the subscribe hook's questions
 * and answers, and the answer cache. Webhook notices are webhooks.c's; hooks.h has the design.
 */
#include "hooks.h"

#include <jansson.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "clock.h"
#include "hooks_internal.h"
#include "log.h"
#include "stats.h"
#include "topic_glob.h"

/* One topic's question in a check. */
struct lg_hook_ask {
    struct lg_hook_check *check;
    char *body;                      /* the POST body (worker-built, immutable) */
    unsigned char key[32]; /* its cache key */
    bool cacheable;                  /* a token's claims: answers are kept */
};

/* One cached answer. */
struct lg_cache_entry {
    unsigned char key[32];
    bool allow;
    uint64_t expires_ms;             /* monotonic */
    struct lg_cache_entry *next_in_bucket;
    struct lg_dlink order;
};

bool lg_hooks_configured(const struct lg_config *cfg)
{
    return cfg->subscribe_hook.url[0] || cfg->webhooks.url[0];
}

/* ---- The answer cache (cache_lock) --------------------------------------------------------- */

static size_t bucket_of(const struct lg_hooks *h, const unsigned char *key)
{
    size_t v;
    memcpy(&v, key, sizeof v);
    return v & h->cache_mask;
}

static void cache_unlink(struct lg_hooks *h, struct lg_cache_entry *e)
{
    struct lg_cache_entry **p = &h->cache_buckets[bucket_of(h, e->key)];
    while (*p != e)
        p = &(*p)->next_in_bucket;
    *p = e->next_in_bucket;
    lg_dlist_remove(&h->cache_order, &e->order);
    h->cache_count--;
    free(e);
}

/* Return value: 1 allow, 0 deny, -1 not cached (or expired: then forgotten). */
static int cache_get(struct lg_hooks *h, const unsigned char *key, uint64_t now_ms)
{
    int found = -1;
    pthread_mutex_lock(&h->cache_lock);
    for (struct lg_cache_entry *e = h->cache_buckets[bucket_of(h, key)]; e; e = e->next_in_bucket)
        if (memcmp(e->key, key, sizeof e->key) == 0) {
            if (e->expires_ms > now_ms)
                found = e->allow;
            else
                cache_unlink(h, e);
            break;
        }
    pthread_mutex_unlock(&h->cache_lock);
    return found;
}

static void cache_put(struct lg_hooks *h, const unsigned char *key, bool allow, uint64_t now_ms)
{
    struct lg_cache_entry *e = calloc(1, sizeof *e);
    if (!e)
        return; /* not kept: asked again next time */
    memcpy(e->key, key, sizeof e->key);
    e->allow = allow;
    e->expires_ms = now_ms + h->cfg->subscribe_hook.cache_ms;
    pthread_mutex_lock(&h->cache_lock);
    for (struct lg_cache_entry *old = h->cache_buckets[bucket_of(h, key)]; old;
         old = old->next_in_bucket)
        if (memcmp(old->key, key, sizeof old->key) == 0) {
            cache_unlink(h, old);
            break;
        }
    if (h->cache_count >= h->cfg->subscribe_hook.cache_max_entries && h->cache_order.first)
        cache_unlink(h, lg_dlist_entry(h->cache_order.first, struct lg_cache_entry, order));
    size_t b = bucket_of(h, key);
    e->next_in_bucket = h->cache_buckets[b];
    h->cache_buckets[b] = e;
    lg_dlist_push_tail(&h->cache_order, &e->order);
    h->cache_count++;
    pthread_mutex_unlock(&h->cache_lock);
}

/* ---- Asking (worker w's thread) ------------------------------------------------------------ */

bool lg_hooks_wants(const struct lg_hooks *h, const char *topic)
{
    const struct lg_string_list *globs = &h->cfg->subscribe_hook.topics;
    return h->cfg->subscribe_hook.url[0] &&
           lg_glob_match_any((const char *const *)globs->items, globs->count, topic);
}

static void cache_key(const struct lg_grant *g, const char *topic, unsigned char *key)
{
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (!ctx || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1 ||
        EVP_DigestUpdate(ctx, g->claims_b64, g->claims_b64_len) != 1 ||
        EVP_DigestUpdate(ctx, "\n", 1) != 1 ||
        EVP_DigestUpdate(ctx, topic, strlen(topic)) != 1 ||
        EVP_DigestFinal_ex(ctx, key, NULL) != 1)
        memset(key, 0, 32); /* not cacheable: the caller checks */
    EVP_MD_CTX_free(ctx);
}

/* {"topic":..., "claims":{...} or null, "client":{"address":...}} */
static char *ask_body(const char *topic, json_t *claims, const char *address)
{
    json_t *body = json_pack("{s:s,s:O,s:{s:s}}", "topic", topic, "claims",
                             claims ? claims : json_null(), "client", "address",
                             address ? address : "");
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    return text;
}

void lg_hooks_check_free(struct lg_hooks *h, struct lg_hook_check *c)
{
    if (!c)
        return;
    h->waiting[c->worker]--;
    for (size_t i = 0; i < c->ask_count; i++)
        free(c->asks[i].body);
    free(c->asks);
    free(c);
}

/* The check for the topics not answered by the cache, or NULL with *now. */
static struct lg_hook_check *new_check(struct lg_hooks *h, uint32_t w, const struct lg_grant *g,
                                       const char *address, const char *const *topics,
                                       size_t n, enum lg_hook_verdict *now)
{
    uint64_t now_ms = lg_mono_ms();
    struct lg_hook_check *c = calloc(1, sizeof *c);
    struct lg_hook_ask *asks = calloc(n, sizeof *asks);
    char *claims_text = g ? lg_grant_claims_text(g) : NULL;
    json_t *claims = claims_text ? json_loads(claims_text, 0, NULL) : NULL;
    free(claims_text);
    *now = LG_HOOK_DOWN; /* out of memory */
    if (!c || !asks || (g && !claims))
        goto done;
    c->worker = w;
    c->asks = asks;
    h->waiting[w]++;
    *now = LG_HOOK_ALLOW;
    for (size_t i = 0; i < n; i++) {
        if (!lg_hooks_wants(h, topics[i]))
            continue;
        struct lg_hook_ask *a = &asks[c->ask_count];
        a->cacheable = g && h->cfg->subscribe_hook.cache_ms;
        if (a->cacheable) {
            cache_key(g, topics[i], a->key);
            int cached = cache_get(h, a->key, now_ms);
            if (cached >= 0)
                LG_STAT_ADD(hook_cache_hits, 1);
            if (cached == 0)
                *now = LG_HOOK_DENY;
            if (cached >= 0)
                continue;
        }
        a->check = c;
        if ((a->body = ask_body(topics[i], claims, address)) == NULL)
            *now = LG_HOOK_DOWN;
        c->ask_count++;
    }
    json_decref(claims);
    if (*now != LG_HOOK_ALLOW || c->ask_count == 0) {
        lg_hooks_check_free(h, c);
        return NULL;
    }
    c->asks_left = c->ask_count;
    return c;
done:
    json_decref(claims);
    free(asks);
    free(c);
    return NULL;
}

struct lg_hook_check *lg_hooks_ask(struct lg_hooks *h, uint32_t w, const struct lg_grant *g,
                                   const char *address, const char *const *topics, size_t n,
                                   void *waiter, enum lg_hook_verdict *now)
{
    struct lg_hook_check *c = new_check(h, w, g, address, topics, n, now);
    if (!c)
        return NULL;
    if (h->waiting[w] > h->cfg->subscribe_hook.max_pending) {
        static struct lg_ratelimit rl;
        lg_log_ratelimited(&rl, 1000, LG_LOG_WARN,
                           "subscribe hook: %u subscribes wait on worker %u "
                           "(subscribe_hook.max_pending): answered as if the backend were down",
                           h->cfg->subscribe_hook.max_pending, w);
        LG_STAT_ADD(hook_overflow, 1);
        lg_hooks_check_free(h, c);
        *now = LG_HOOK_DOWN;
        return NULL;
    }
    c->waiter = waiter;
    pthread_mutex_lock(&h->lock);
    struct lg_hook_queue *q = &h->submit[w];
    if (q->tail)
        q->tail->next = c;
    else
        q->head = c;
    q->tail = c;
    pthread_mutex_unlock(&h->lock);
    curl_multi_wakeup(h->multi);
    return c;
}

struct lg_hook_check *lg_hooks_take_answers(struct lg_hooks *h, uint32_t w)
{
    pthread_mutex_lock(&h->lock);
    struct lg_hook_check *list = h->answers[w].head;
    h->answers[w].head = h->answers[w].tail = NULL;
    pthread_mutex_unlock(&h->lock);
    return list;
}

/* ---- Transfers (the thread) ------------------------------------------------------------- */

static size_t take_answer(char *data, size_t size, size_t nmemb, void *arg)
{
    struct lg_transfer *t = arg;
    size_t len = size * nmemb;
    if (t->answer_len + len > sizeof t->answer) {
        t->too_long = true;
        return len; /* read on, kept no further */
    }
    memcpy(t->answer + t->answer_len, data, len);
    t->answer_len += len;
    return len;
}

struct lg_transfer *lg_hooks__post(struct lg_hooks *h, const char *url, const char *body,
                                   uint32_t timeout_ms, struct curl_slist *headers,
                                   bool is_notice, void *owner)
{
    struct lg_transfer *t = calloc(1, sizeof *t);
    if (!t || (t->easy = curl_easy_init()) == NULL) {
        free(t);
        return NULL;
    }
    t->headers = headers;
    t->is_notice = is_notice;
    t->owner = owner;
    CURL *e = t->easy;
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers ? headers : h->json_headers);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_USERAGENT, "livegate/" LG_VERSION);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, take_answer);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, t);
    curl_easy_setopt(e, CURLOPT_PRIVATE, t);
    if (curl_multi_add_handle(h->multi, e) != CURLM_OK) {
        curl_easy_cleanup(e);
        free(t);
        return NULL;
    }
    lg_dlist_push_tail(&h->transfers, &t->link);
    return t;
}

void lg_hooks__transfer_free(struct lg_hooks *h, struct lg_transfer *t)
{
    lg_dlist_remove(&h->transfers, &t->link);
    curl_multi_remove_handle(h->multi, t->easy);
    curl_easy_cleanup(t->easy);
    curl_slist_free_all(t->headers);
    free(t);
}

/* Hand c back to its worker: its answers queue, and a wake-up if it was empty. */
static void answer_check(struct lg_hooks *h, struct lg_hook_check *c)
{
    uint32_t w = c->worker;
    c->next = NULL;
    pthread_mutex_lock(&h->lock);
    bool was_empty = h->answers[w].head == NULL;
    if (h->answers[w].tail)
        h->answers[w].tail->next = c;
    else
        h->answers[w].head = c;
    h->answers[w].tail = c;
    pthread_mutex_unlock(&h->lock);
    if (was_empty && h->wakes[w].wake && !atomic_load(&h->stop))
        h->wakes[w].wake(h->wakes[w].arg);
}

/* One topic's answer joins its check's verdict: a denial wins over down, down over allow. */
static void ask_answered(struct lg_hooks *h, struct lg_hook_ask *a, enum lg_hook_verdict v,
                         const char *reason)
{
    struct lg_hook_check *c = a->check;
    if (v == LG_HOOK_DENY || (v == LG_HOOK_DOWN && c->verdict == LG_HOOK_ALLOW)) {
        c->verdict = v;
        snprintf(c->reason, sizeof c->reason, "%s", reason);
    }
    if (--c->asks_left == 0)
        answer_check(h, c);
}

/* What the backend said: 200 with {"allow": true|false, "reason"?: "..."}; anything else is
 * no answer (down). */
static enum lg_hook_verdict read_answer(const struct lg_transfer *t, CURLcode rc,
                                        char *reason, size_t cap)
{
    long status = 0;
    curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &status);
    if (rc != CURLE_OK) {
        snprintf(reason, cap, "the backend %s", rc == CURLE_OPERATION_TIMEDOUT
                                                    ? "did not answer in time"
                                                    : "cannot be reached");
        return LG_HOOK_DOWN;
    }
    if (status != 200) {
        snprintf(reason, cap, "the backend answered %ld", status);
        return LG_HOOK_DOWN;
    }
    json_t *answer = t->too_long ? NULL : json_loadb(t->answer, t->answer_len, 0, NULL);
    json_t *allow = json_object_get(answer, "allow");
    enum lg_hook_verdict v = !json_is_boolean(allow) ? LG_HOOK_DOWN
                             : json_is_true(allow)   ? LG_HOOK_ALLOW
                                                     : LG_HOOK_DENY;
    const char *why = json_string_value(json_object_get(answer, "reason"));
    snprintf(reason, cap, "%s",
             v == LG_HOOK_DOWN ? "the backend's answer is not {\"allow\": true|false}"
             : why             ? why
                               : "denied by the backend");
    json_decref(answer);
    return v;
}

static void ask_done(struct lg_hooks *h, struct lg_transfer *t, CURLcode rc)
{
    struct lg_hook_ask *a = t->owner;
    char reason[LG_HOOK_REASON_MAX + 1];
    enum lg_hook_verdict v = read_answer(t, rc, reason, sizeof reason);
    if (v == LG_HOOK_DOWN) {
        static struct lg_ratelimit rl;
        lg_log_ratelimited(&rl, 1000, LG_LOG_WARN, "subscribe hook: %s", reason);
    }
    LG_STAT_ADD(hook_answers_allow, v == LG_HOOK_ALLOW);
    LG_STAT_ADD(hook_answers_deny, v == LG_HOOK_DENY);
    LG_STAT_ADD(hook_answers_down, v == LG_HOOK_DOWN);
    if (a->cacheable && v != LG_HOOK_DOWN)
        cache_put(h, a->key, v == LG_HOOK_ALLOW, lg_mono_ms());
    lg_hooks__transfer_free(h, t);
    h->asks_in_flight--;
    ask_answered(h, a, v, reason);
}

/* Start the questions of every check the workers submitted. */
static void take_submitted(struct lg_hooks *h)
{
    for (uint32_t w = 0; w < h->workers; w++) {
        pthread_mutex_lock(&h->lock);
        struct lg_hook_check *c = h->submit[w].head;
        h->submit[w].head = h->submit[w].tail = NULL;
        pthread_mutex_unlock(&h->lock);
        while (c) {
            struct lg_hook_check *next = c->next;
            c->next = NULL;
            for (size_t i = 0; i < c->ask_count; i++) {
                struct lg_hook_ask *a = &c->asks[i];
                if (lg_hooks__post(h, h->cfg->subscribe_hook.url, a->body,
                                   h->cfg->subscribe_hook.timeout_ms, NULL, false, a))
                    h->asks_in_flight++;
                else
                    ask_answered(h, a, LG_HOOK_DOWN, "out of memory");
            }
            c = next;
        }
    }
}

static void finish_transfers(struct lg_hooks *h, uint64_t now_ms)
{
    CURLMsg *m;
    int left;
    while ((m = curl_multi_info_read(h->multi, &left)) != NULL) {
        if (m->msg != CURLMSG_DONE)
            continue;
        struct lg_transfer *t;
        curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&t);
        CURLcode rc = m->data.result;
        if (!t->is_notice) {
            ask_done(h, t, rc);
            continue;
        }
        long status = 0;
        curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &status);
        struct lg_notice *n = t->owner;
        lg_hooks__transfer_free(h, t);
        n->transfer = NULL;
        lg_webhooks__finished(h, n, rc == CURLE_OK && status >= 200 && status < 300, now_ms);
    }
}

/* The thread stops: every question in flight is answered down, into its worker's queue. */
static void abandon_asks(struct lg_hooks *h)
{
    take_submitted(h); /* started only to be abandoned: every check goes back the same way */
    for (struct lg_dlink *l = h->transfers.first, *next; l; l = next) {
        next = l->next;
        struct lg_transfer *t = lg_dlist_entry(l, struct lg_transfer, link);
        if (t->is_notice)
            continue;
        struct lg_hook_ask *a = t->owner;
        lg_hooks__transfer_free(h, t);
        h->asks_in_flight--;
        ask_answered(h, a, LG_HOOK_DOWN, "the gateway is stopping");
    }
}

static void *hooks_main(void *arg)
{
    struct lg_hooks *h = arg;
    pthread_setname_np(pthread_self(), "lg-hooks");
    while (!atomic_load(&h->stop)) {
        uint64_t now_ms = lg_mono_ms();
        take_submitted(h);
        lg_webhooks__take_reports(h, now_ms);
        uint32_t next_ms = lg_webhooks__run(h, now_ms);
        int running;
        curl_multi_perform(h->multi, &running);
        finish_transfers(h, lg_mono_ms());
        next_ms = lg_webhooks__run(h, lg_mono_ms());
        curl_multi_poll(h->multi, NULL, 0, next_ms < 1000 ? (int)next_ms : 1000, NULL);
    }
    abandon_asks(h);
    lg_webhooks__abandon(h);
    return NULL;
}

/* ---- Lifecycle (the app's thread) -------------------------------------------------------- */

struct lg_hooks *lg_hooks_create(const struct lg_config *cfg, uint32_t workers, char *err,
                                 size_t errlen)
{
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        snprintf(err, errlen, "hooks: libcurl did not initialise");
        return NULL;
    }
    struct lg_hooks *h = calloc(1, sizeof *h);
    if (!h)
        goto oom;
    h->cfg = cfg;
    h->workers = workers;
    pthread_mutex_init(&h->lock, NULL);
    pthread_mutex_init(&h->cache_lock, NULL);
    size_t buckets = 16;
    while (buckets < cfg->subscribe_hook.cache_max_entries && buckets < ((size_t)1 << 20))
        buckets <<= 1;
    h->cache_mask = buckets - 1;
    h->cache_buckets = calloc(buckets, sizeof *h->cache_buckets);
    h->submit = calloc(workers, sizeof *h->submit);
    h->answers = calloc(workers, sizeof *h->answers);
    h->waiting = calloc(workers, sizeof *h->waiting);
    h->wakes = calloc(workers, sizeof *h->wakes);
    h->multi = curl_multi_init();
    h->json_headers = curl_slist_append(NULL, "Content-Type: application/json");
    h->json_headers = h->json_headers ? curl_slist_append(h->json_headers, "Expect:") : NULL;
    if (!h->cache_buckets || !h->submit || !h->answers || !h->waiting || !h->wakes ||
        !h->multi || !h->json_headers || lg_webhooks__init(h) != 0)
        goto oom;
    return h;
oom:
    snprintf(err, errlen, "hooks: out of memory");
    if (h)
        lg_hooks_destroy(h);
    else
        curl_global_cleanup();
    return NULL;
}

void lg_hooks_attach_worker(struct lg_hooks *h, uint32_t w, lg_wake_proc *wake, void *arg)
{
    h->wakes[w].wake = wake;
    h->wakes[w].arg = arg;
}

int lg_hooks_start(struct lg_hooks *h)
{
    if (pthread_create(&h->thread, NULL, hooks_main, h) != 0)
        return -1;
    h->started = true;
    return 0;
}

void lg_hooks_stop(struct lg_hooks *h)
{
    if (!h || !h->started)
        return;
    atomic_store(&h->stop, true);
    curl_multi_wakeup(h->multi);
    pthread_join(h->thread, NULL);
    h->started = false;
}

static void free_checks(struct lg_hooks *h, struct lg_hook_check *c)
{
    while (c) {
        struct lg_hook_check *next = c->next;
        lg_hooks_check_free(h, c);
        c = next;
    }
}

void lg_hooks_destroy(struct lg_hooks *h)
{
    if (!h)
        return;
    for (uint32_t w = 0; h->submit && h->answers && w < h->workers; w++) {
        free_checks(h, h->submit[w].head);
        free_checks(h, h->answers[w].head);
    }
    lg_webhooks__release(h);
    while (h->cache_order.first)
        cache_unlink(h, lg_dlist_entry(h->cache_order.first, struct lg_cache_entry, order));
    if (h->multi)
        curl_multi_cleanup(h->multi);
    curl_slist_free_all(h->json_headers);
    free(h->cache_buckets);
    free(h->submit);
    free(h->answers);
    free(h->waiting);
    free(h->wakes);
    pthread_mutex_destroy(&h->lock);
    pthread_mutex_destroy(&h->cache_lock);
    free(h);
    curl_global_cleanup();
}
