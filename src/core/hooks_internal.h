/*
 * hooks_internal.h - what hooks.c (the thread, the subscribe hook, the cache) and webhooks.c
 * (notices, occupancy, signatures) share. Every field says which thread owns it; `lock`
 * guards the queues filled by other threads.
 */
#ifndef LG_HOOKS_INTERNAL_H
#define LG_HOOKS_INTERNAL_H

#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>

#include "dlist.h"
#include "hooks.h"

/* One transfer to the backend: a subscribe hook's question or a webhook notice. */
struct lg_transfer {
    CURL *easy;
    struct curl_slist *headers;      /* its own (a notice's signature), or NULL */
    char answer[LG_HOOK_ANSWER_MAX]; /* the backend's answer body */
    size_t answer_len;
    bool too_long;
    bool is_notice;                  /* owner: struct lg_notice; else struct lg_hook_ask */
    void *owner;
    struct lg_dlink link;            /* the thread's list of transfers in flight */
};

/* One webhook notice, from queued to delivered or dropped. */
struct lg_notice {
    char *body;                      /* the signed JSON body */
    char id[40];
    uint32_t attempts;               /* made so far */
    uint64_t due_ms;                 /* monotonic: its next attempt */
    struct lg_transfer *transfer;    /* in flight, or NULL */
    struct lg_dlink link;            /* the thread's waiting list */
};

/* A report from another thread: an occupancy change, or a finished disconnect notice. */
struct lg_report {
    struct lg_report *next;          /* {lock} */
    int64_t at_unix_ms;
    uint64_t at_mono_ms;
    int kind;                        /* 1 occupied, 0 vacated, -1 a notice (body below) */
    char *body;                      /* a disconnect notice's body, without id and time */
    char topic[];
};

struct lg_occupancy;

struct lg_hook_queue {
    struct lg_hook_check *head, *tail; /* {lock} */
};

struct lg_hooks {
    const struct lg_config *cfg;
    uint32_t workers;
    CURLM *multi;                    /* created here; used by the thread (and wakeup) */
    struct curl_slist *json_headers; /* Content-Type of every POST (immutable) */
    pthread_t thread;
    bool started;
    _Atomic bool stop;
    pthread_mutex_t lock;
    struct lg_hook_queue *submit;    /* [workers] {lock} checks for the thread */
    struct lg_hook_queue *answers;   /* [workers] {lock} checks for each worker */
    uint32_t *waiting;               /* [workers] checks of worker w out (worker w's) */
    struct { lg_wake_proc *wake; void *arg; } *wakes; /* [workers], set before start */
    /* the answer cache (cache_lock): keys are SHA-256 of (claims, topic) */
    pthread_mutex_t cache_lock;
    struct lg_cache_entry **cache_buckets;
    size_t cache_mask, cache_count;
    struct lg_dlist cache_order;     /* oldest first */
    /* webhooks */
    struct lg_report *reports, *reports_tail; /* {lock} */
    size_t held;                     /* {lock} reports + notices not yet finished */
    struct lg_dlist notices;         /* the thread's: waiting for their attempt */
    uint32_t notices_in_flight;      /* the thread's */
    struct lg_occupancy **occ_buckets; /* the thread's: topics as reported to the backend */
    size_t occ_mask;
    struct lg_dlist vacating;        /* the thread's: topics empty, vacated not sent yet */
    _Atomic uint64_t notice_ids;     /* the last notice id given (any thread) */
    int64_t started_unix_ms;
    uint64_t jitter;                 /* the thread's xorshift state */
    uint32_t asks_in_flight;         /* the thread's */
    struct lg_dlist transfers;       /* the thread's: in flight */
};

/* ---- hooks.c, for webhooks.c -------------------------------------------------------------- */
/* A transfer POSTing body (not copied: it must outlive the transfer) to url, started on the
 * multi handle. Return value: the transfer, or NULL (out of memory). */
struct lg_transfer *lg_hooks__post(struct lg_hooks *h, const char *url, const char *body,
                                   uint32_t timeout_ms, struct curl_slist *headers,
                                   bool is_notice, void *owner);
void lg_hooks__transfer_free(struct lg_hooks *h, struct lg_transfer *t);
/* Leave `held` one lower (a report or notice finished). */
void lg_hooks__unhold(struct lg_hooks *h, size_t n);

/* ---- webhooks.c, for hooks.c (the thread) ------------------------------------------------- */
int lg_webhooks__init(struct lg_hooks *h);
/* Take the reports queued by other threads; decide and queue notices. */
void lg_webhooks__take_reports(struct lg_hooks *h, uint64_t now_ms);
/* Send vacated notices due and start notice attempts due. Return value: ms until the next is
 * due (UINT32_MAX: none). */
uint32_t lg_webhooks__run(struct lg_hooks *h, uint64_t now_ms);
/* A notice's attempt ended: delivered, retried later or given up. */
void lg_webhooks__finished(struct lg_hooks *h, struct lg_notice *n, bool delivered,
                           uint64_t now_ms);
/* The thread stops: every notice and report not delivered is dropped (counted). */
void lg_webhooks__abandon(struct lg_hooks *h);
void lg_webhooks__release(struct lg_hooks *h);

#endif
