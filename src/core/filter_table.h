/*
 * filter_table.h - one worker's interned tag filters (tags.h): every distinct filter its
 * subscriptions use, once, with the verdict on the event being fanned out, so N subscribers
 * that share a filter cost one evaluation per event, not N.
 *
 * Owns:    the table and its entries: each entry is a parsed filter (keyed by its canonical
 *          text) counted by the subscriptions holding it.
 * Frees:   lg_filter_table_unref() drops a subscription's reference; the last one frees the
 *          entry, and the last entry frees the table.
 * Threads: one table per thread (made by its first intern): each worker thread has its own,
 *          touched only by it, so entries need no lock. A reference is used on the thread
 *          that interned it (a subscription lives on one worker), except that the last ones
 *          may be dropped on another thread once that one has been joined (lws closes a
 *          stopped worker's connections on the main thread): an entry names its table.
 * Bounds:  one entry per distinct filter in use on the worker (at most one per subscription);
 *          buckets grow by doubling to keep chains short. A verdict is cached for the last
 *          event seen per entry: the fan-out offers one event to all subscribers of a topic
 *          before the next one.
 */
#ifndef LG_FILTER_TABLE_H
#define LG_FILTER_TABLE_H

#include <stdbool.h>
#include <stdint.h>

#include "tags.h"

struct lg_event;
struct lg_interned_filter;

/* The entry for f's canonical text, created if need be. Return value: a new reference, or
 * NULL when out of memory. */
struct lg_interned_filter *lg_filter_table_intern(const struct lg_filter *f);

/* Drop the reference *fp and clear it; frees the entry with its last reference. */
void lg_filter_table_unref(struct lg_interned_filter **fp);

/* Whether ev (borrowed) passes filter f; evaluated once per event per entry (the verdict for
 * the last event is kept). */
bool lg_filter_table_admits(struct lg_interned_filter *f, const struct lg_event *ev);

/* The canonical text of f (for logs and tests). */
const char *lg_filter_table_text(const struct lg_interned_filter *f);

/* How many times f was evaluated (not answered from its cache): for tests. */
uint64_t lg_filter_table_evaluations(const struct lg_interned_filter *f);

/* Distinct filters interned on the calling thread: for tests. */
uint32_t lg_filter_table_count(void);

#endif
