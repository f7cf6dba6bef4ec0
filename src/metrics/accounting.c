/* accounting.c - see accounting.h. */
#include "accounting.h"

#include <stdatomic.h>

static _Atomic int64_t event_bytes, events, connections;

void lg_account_event_created(size_t bytes)
{
    atomic_fetch_add_explicit(&event_bytes, (int64_t)bytes, memory_order_relaxed);
    atomic_fetch_add_explicit(&events, 1, memory_order_relaxed);
}

void lg_account_event_freed(size_t bytes)
{
    atomic_fetch_sub_explicit(&event_bytes, (int64_t)bytes, memory_order_relaxed);
    atomic_fetch_sub_explicit(&events, 1, memory_order_relaxed);
}

void lg_account_event_bytes_changed(int64_t delta)
{
    atomic_fetch_add_explicit(&event_bytes, delta, memory_order_relaxed);
}

int64_t lg_account_event_bytes(void) { return atomic_load_explicit(&event_bytes, memory_order_relaxed); }
int64_t lg_account_events(void) { return atomic_load_explicit(&events, memory_order_relaxed); }

int64_t lg_account_connection_opened(void)
{
    return atomic_fetch_add_explicit(&connections, 1, memory_order_relaxed) + 1;
}

void lg_account_connection_closed(void)
{
    atomic_fetch_sub_explicit(&connections, 1, memory_order_relaxed);
}

int64_t lg_account_connections(void) { return atomic_load_explicit(&connections, memory_order_relaxed); }
