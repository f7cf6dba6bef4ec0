/*
 * min_heap.h - an intrusive binary min-heap of deadlines: the worker's connections whose token
 * expires (conn_auth.c), checked by the worker's once-a-second tick. lws 4.1's timers are a
 * sorted list (an insert walks it: O(n) per connection), the heap is O(log n).
 *
 * Owns:    the array of node pointers (malloc'd, grown by doubling); the nodes are the
 *          caller's, embedded in its structs.
 * Frees:   lg_min_heap_release() frees the array; nodes are never freed here.
 * Threads: one owning thread (a worker's); no locking.
 * Bounds:  one slot per node pushed (a worker's connections, limits.max_connections); a push
 *          that cannot grow the array fails (-1) and changes nothing.
 */
#ifndef LG_MIN_HEAP_H
#define LG_MIN_HEAP_H

#include <stddef.h>
#include <stdint.h>

struct lg_heap_node {
    int64_t key;   /* the deadline; smallest first */
    size_t slot;   /* private: index + 1 in the heap, 0 = not in it */
};

struct lg_min_heap {
    struct lg_heap_node **nodes;
    size_t count, cap;
};

/* Insert n with key, or move it there if it is in h already. Return value: 0, or -1 when out
 * of memory (n not in h). */
int lg_min_heap_set(struct lg_min_heap *h, struct lg_heap_node *n, int64_t key);
/* Take n out of h (nothing if it is not in it). */
void lg_min_heap_remove(struct lg_min_heap *h, struct lg_heap_node *n);
/* The node with the smallest key, or NULL when h is empty. */
struct lg_heap_node *lg_min_heap_top(const struct lg_min_heap *h);
void lg_min_heap_release(struct lg_min_heap *h);

#endif
