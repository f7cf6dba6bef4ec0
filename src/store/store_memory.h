/*
 * store_memory.h - the embedded store (store.h): every topic's stream in this process' memory.
 *
 * Positions are dense (1, 2, 3, ...). Every stream takes the store's epoch (random per
 * process, so a restart resolves old cursors to `reset`). A deleted topic (drop()) makes the
 * store draw a new epoch for the streams opened after it, so a name's next life never shares
 * its epoch with the one deleted. Retention is a
 * struct lg_history ring per stream; idempotency keys are indexed in a hash table per stream
 * holding exactly the retained events that carry one.
 *
 * Owns:    its streams, their history rings and key indexes.
 * Frees:   see store.h; lg_memory_store_create()'s store is freed by its destroy().
 * Threads: see store.h (one caller at a time per stream); creating the store is not
 *          thread-safe; opening streams and drop() are serialised by the hub's registry write
 *          lock (the only writer of the store's epoch after create).
 * Bounds:  per stream, its history bounds; the key index holds at most the retained events.
 */
#ifndef LG_STORE_MEMORY_H
#define LG_STORE_MEMORY_H

#include "store.h"

/* Return value: the store, or NULL (out of memory). */
struct lg_store *lg_memory_store_create(void);

#endif
