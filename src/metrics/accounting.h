/*
 * accounting.h - what admission control reads: the bytes and number of live events (compared
 * with limits.max_retained_bytes before a publish is accepted) and the open public-port
 * connections (compared with limits.max_connections at accept). Statistics (stats.h) only
 * report; nothing there decides anything. /v1/stats shows these figures too, read from here.
 *
 * Owns:    three process-wide atomic gauges.
 * Frees:   nothing.
 * Threads: any. Relaxed atomics: a check may see a value a few events old, which only moves
 *          the bound by what other threads did in the meantime; nothing here orders other
 *          memory.
 * Bounds:  fixed size.
 */
#ifndef LG_ACCOUNTING_H
#define LG_ACCOUNTING_H

#include <stddef.h>
#include <stdint.h>

/* An event of `bytes` (its whole allocation) came to life / was freed. */
void lg_account_event_created(size_t bytes);
void lg_account_event_freed(size_t bytes);
/* A live event's bytes grew (a form made after it was created) or shrank by delta. */
void lg_account_event_bytes_changed(int64_t delta);
int64_t lg_account_event_bytes(void); /* bytes of every event still referenced */
int64_t lg_account_events(void);      /* events still referenced */

/* A public-port socket was accepted. Return value: the open connections, this one included. */
int64_t lg_account_connection_opened(void);
void lg_account_connection_closed(void);
int64_t lg_account_connections(void);

#endif
