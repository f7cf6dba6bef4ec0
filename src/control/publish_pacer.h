/*
 * publish_pacer.h - publish requests held until the workers have room (overload pacing).
 *
 * A publish that finds a worker's inbox full (LG_PUBLISH_WORKERS_BEHIND) is not refused at
 * once: its control-port connection is suspended (MHD_suspend_connection) and held here. Each
 * time a worker takes events (lg_pacer_room, from the worker thread) the held requests are
 * resumed and retry; a request still held at its deadline (limits.publish_wait_ms after it was
 * first held) is resumed with `expired` set and answered 503 + Retry-After, nothing published.
 * So a publisher faster than fan-out is paced to what the workers write, and only one that is
 * still too fast after the wait is refused. Subscribers never pay for it.
 *
 * Owns:    the list of held requests (struct lg_pacer_hold, embedded in the control port's
 *          per-request state, which outlives the hold: MHD frees it only after the connection
 *          was resumed) and one thread, lg-pacer, that resumes the holds whose deadline or
 *          retry time came.
 * Frees:   lg_pacer_stop() resumes every held request as expired and joins the thread (call it
 *          before MHD_stop_daemon: MHD must not hold suspended connections then); later holds
 *          are resumed at once as expired. lg_pacer_destroy() frees it once no worker can call
 *          lg_pacer_room() any more (after the workers were joined). The app owns both calls.
 * Threads: lg_pacer_hold() on the threads serving the daemons (the workers, or with Redis the
 *          store's thread); lg_pacer_room() on worker threads (one atomic load when nothing is
 *          held). The worker that made room resumes the holds it released itself, so a paced
 *          publisher costs no hop through the pacer thread and no wake-up of it on the
 *          worker's core; the pacer thread sleeps until the nearest deadline or retry time.
 *          Both resume with lg_resume_served(): MHD_resume_connection(), which libmicrohttpd
 *          allows from any thread, then the host's wake-up (a flag and a fed watcher when the
 *          host is the calling thread's loop). `lock` guards the list; it is never held while
 *          MHD is called.
 * Bounds:  at most one held request per control connection (limits.control_max_connections).
 *          Wake-up race: a hold records the room generation read before its publish attempt;
 *          room() bumps the generation before it looks at `waiting`, and hold() counts itself
 *          in `waiting` before it looks at the generation again (a room since: it resumes at
 *          once), so one of them always sees the other.
 */
#ifndef LG_PUBLISH_PACER_H
#define LG_PUBLISH_PACER_H

#include <stdbool.h>
#include <stdint.h>

#include "dlist.h"

struct MHD_Connection;
struct lg_pacer;
struct lg_loop_host;

struct lg_pacer_hold {
    struct MHD_Connection *conn;
    const struct lg_loop_host *host; /* the loop serving conn's daemon: woken on resume */
    uint64_t generation;        /* room generation seen before the publish attempt */
    uint64_t deadline_ms;       /* monotonic */
    uint64_t retry_at_ms;       /* monotonic; 0 = none: resumed to retry then, room or not */
    bool expired;               /* resumed by the deadline (or shutdown), not by room */
    struct lg_dlink link;       /* {lock} on the pacer's list */
};

/* Return value: the pacer, or NULL (out of memory, thread not started). */
struct lg_pacer *lg_pacer_start(uint32_t max_holds);
void lg_pacer_stop(struct lg_pacer *p);
void lg_pacer_destroy(struct lg_pacer *p);

/* Read before a publish attempt; pass it to lg_pacer_hold() if the attempt found no room. */
uint64_t lg_pacer_generation(const struct lg_pacer *p);

/* Hold h's connection, which the caller has just suspended, until room is made after
 * `generation`, or until retry_ms from now (0: no retry; for a wait this node's workers do not
 * end, such as another node behind a topic over Redis), or until deadline_ms. Room made since
 * `generation` resumes it at once; when it cannot be held (shutting down, more holds than
 * max_holds) it is resumed at once with h->expired set. Either way MHD calls the request's
 * handler again once it is resumed. */
void lg_pacer_hold(struct lg_pacer *p, struct lg_pacer_hold *h, struct MHD_Connection *conn,
                   const struct lg_loop_host *host, uint64_t generation, uint32_t retry_ms,
                   uint64_t deadline_ms);

/* Resume conn and wake the loop that serves its daemon (host; NULL, or a NULL wake: a host
 * that looks by itself). The daemons run in external mode, where libmicrohttpd does not see a
 * resume from another thread by itself. */
void lg_resume_served(struct MHD_Connection *conn, const struct lg_loop_host *host);

/* A worker made room (lg_room_proc for lg_hub_on_room): resume, from the calling thread, the
 * holds it released. */
void lg_pacer_room(void *pacer);

#endif
