/*
 * hooks.h - the backend hooks: the subscribe hook (a subscribe to a hooked topic asks the
 * backend and finishes when it answers) and the webhooks (occupied, vacated and disconnect
 * notices POSTed to the backend), both carried by one backend thread.
 *
 * DESIGN
 * The backend thread `lg-hooks` runs libcurl's multi interface: every call to the backend is
 * a transfer on it, so no worker ever waits on the network and a slow or dead backend costs a
 * waiting subscribe its timeout, never a worker's loop (delivery goes on meanwhile).
 *   worker w --lg_hooks_ask()--> submit[w] --(backend thread: POST per topic)--> answers[w]
 *          <-- wake(w): the worker takes its answers (lg_hooks_take_answers()) and finishes
 *              each waiting subscribe on its own thread --
 * A check is in exactly one place: with its worker (created, then again once answered), in
 * submit[w] or answers[w] (under the hooks' lock), or in flight (the backend thread's). The
 * worker alone reads and writes `waiter`: a connection that goes away clears it, and the
 * answer is then dropped when it comes back. Answers are cached per (token, topic): a
 * worker finds a cached answer under the cache lock without a round trip.
 * Webhooks: the hub reports a topic's first and last local subscriber (lg_hooks_occupancy()),
 * a worker a client that went away (lg_hooks_disconnected()); the backend thread debounces
 * vacated (sent once the topic stayed empty webhooks.vacated_delay_ms; occupied again before
 * that, neither notice is sent) and POSTs each notice, signed, retrying with backoff.
 *
 * Owns:    the backend thread, its curl handles, the submit and answer queues, the answer
 *          cache, the webhook queue and the topics' occupancy as reported.
 * Frees:   lg_hooks_destroy() frees whatever is still queued; a check taken by its worker is
 *          freed by it (lg_hooks_check_free()).
 * Threads: create/attach/start/stop/destroy: the app (main thread). lg_hooks_ask(),
 *          lg_hooks_take_answers(), lg_hooks_check_free(), lg_hooks_disconnected(): worker w
 *          (the one named). lg_hooks_occupancy(): any thread (the hub calls it under a topic
 *          lock: it only queues). Locks are held for list operations only.
 * Bounds:  checks waiting per worker: subscribe_hook.max_pending (past it a subscribe is
 *          answered at once as when the backend is down, counted); answers cached:
 *          subscribe_hook.cache_max_entries (oldest evicted); webhook notices waiting or in
 *          flight: webhooks.queue_max (a new one past it is dropped, counted), at most
 *          LG_WEBHOOKS_IN_FLIGHT sent at once; a backend answer is read up to
 *          LG_HOOK_ANSWER_MAX bytes (longer: garbage).
 */
#ifndef LG_HOOKS_H
#define LG_HOOKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "hub.h"

#define LG_HOOK_ANSWER_MAX 4096
#define LG_HOOK_REASON_MAX 200
#define LG_WEBHOOKS_IN_FLIGHT 16

struct lg_hooks;
struct lg_grant;

enum lg_hook_verdict {
    LG_HOOK_ALLOW = 0,
    LG_HOOK_DENY,   /* the backend said no */
    LG_HOOK_DOWN,   /* no usable answer: unreachable, late, garbage, or too many waiting */
};

/* One subscribe waiting for the backend: one POST per hooked topic. */
struct lg_hook_ask;
struct lg_hook_check {
    /* the worker's */
    void *waiter;                    /* who waits; NULL once it went away */
    /* answered: read by the worker once taken back */
    enum lg_hook_verdict verdict;    /* DENY if any topic was denied, else DOWN if any was */
    char reason[LG_HOOK_REASON_MAX + 1]; /* the backend's "reason" of a denial, or why down */
    /* private */
    uint32_t worker;
    size_t ask_count, asks_left;
    struct lg_hook_ask *asks;
    struct lg_hook_check *next;      /* {hooks lock} in submit[w] or answers[w] */
};

/* Whether cfg turns either hook on (else no hooks object is made). */
bool lg_hooks_configured(const struct lg_config *cfg);
/* Return value: the hooks (thread not started), or NULL with err filled. */
struct lg_hooks *lg_hooks_create(const struct lg_config *cfg, uint32_t workers, char *err,
                                 size_t errlen);
/* How to wake worker w (its answers are ready); before lg_hooks_start(). */
void lg_hooks_attach_worker(struct lg_hooks *h, uint32_t w, lg_wake_proc *wake, void *arg);
int lg_hooks_start(struct lg_hooks *h);  /* 0, or -1 (thread not created) */
/* Stop and join the thread: transfers in flight are abandoned (checks answered DOWN into
 * their queues; notices not yet sent dropped, counted). After the workers were joined. */
void lg_hooks_stop(struct lg_hooks *h);
/* After lg_hooks_stop() and after every worker (and its connections) was destroyed. */
void lg_hooks_destroy(struct lg_hooks *h);

/* ---- The subscribe hook (worker w's thread) ------------------------------------------------ */

/* Whether a subscribe to topic asks the hook (subscribe_hook.url set and topic matches
 * subscribe_hook.topics). */
bool lg_hooks_wants(const struct lg_hooks *h, const char *topic);
/*
 * Ask about the hooked ones of topics[0..n) for the holder of g (NULL: anonymous, never
 * cached) connecting from address. Return value: NULL with *now set when the answer is known
 * at once (no topic hooked, every answer cached, a denial cached, or max_pending reached:
 * DOWN); else a check waiting for the backend, with waiter set: it comes back through
 * lg_hooks_take_answers() on this worker, answered, once (also when the thread stops).
 */
struct lg_hook_check *lg_hooks_ask(struct lg_hooks *h, uint32_t w, const struct lg_grant *g,
                                   const char *address, const char *const *topics, size_t n,
                                   void *waiter, enum lg_hook_verdict *now);
/* The answered checks of worker w, linked through ->next (NULL: none). */
struct lg_hook_check *lg_hooks_take_answers(struct lg_hooks *h, uint32_t w);
/* Free a check its worker took back. */
void lg_hooks_check_free(struct lg_hooks *h, struct lg_hook_check *c);

/* ---- Webhooks (any thread) ---------------------------------------------------------------- */

/* A topic got its first subscriber on this node (occupied) or lost its last (vacated). An
 * lg_occupancy_proc for the hub. */
void lg_hooks_occupancy(void *hooks, const char *topic, bool occupied);
/* A client went away: transport ("sse", ...), its address, the token's claims (NULL:
 * anonymous), the topics it held (a JSON array text) and why (the close reason). */
void lg_hooks_disconnected(struct lg_hooks *h, uint64_t client_id, const char *transport,
                           const char *address, const struct lg_grant *g,
                           const char *topics_json, const char *reason);

#endif
