/* min_heap.c - see min_heap.h. */
#include "min_heap.h"

#include <stdlib.h>

static void place(struct lg_min_heap *h, size_t i, struct lg_heap_node *n)
{
    h->nodes[i] = n;
    n->slot = i + 1;
}

static void sift_up(struct lg_min_heap *h, size_t i)
{
    struct lg_heap_node *n = h->nodes[i];
    while (i > 0 && h->nodes[(i - 1) / 2]->key > n->key) {
        place(h, i, h->nodes[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    place(h, i, n);
}

static void sift_down(struct lg_min_heap *h, size_t i)
{
    struct lg_heap_node *n = h->nodes[i];
    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= h->count)
            break;
        if (child + 1 < h->count && h->nodes[child + 1]->key < h->nodes[child]->key)
            child++;
        if (h->nodes[child]->key >= n->key)
            break;
        place(h, i, h->nodes[child]);
        i = child;
    }
    place(h, i, n);
}

int lg_min_heap_set(struct lg_min_heap *h, struct lg_heap_node *n, int64_t key)
{
    if (n->slot) {
        n->key = key;
        sift_up(h, n->slot - 1);
        sift_down(h, n->slot - 1);
        return 0;
    }
    if (h->count == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 64;
        struct lg_heap_node **nodes = realloc(h->nodes, cap * sizeof *nodes);
        if (!nodes)
            return -1;
        h->nodes = nodes;
        h->cap = cap;
    }
    n->key = key;
    place(h, h->count++, n);
    sift_up(h, h->count - 1);
    return 0;
}

void lg_min_heap_remove(struct lg_min_heap *h, struct lg_heap_node *n)
{
    if (!n->slot)
        return;
    size_t i = n->slot - 1;
    n->slot = 0;
    struct lg_heap_node *last = h->nodes[--h->count];
    if (i == h->count)
        return;
    place(h, i, last);
    sift_up(h, i);
    sift_down(h, last->slot - 1);
}

struct lg_heap_node *lg_min_heap_top(const struct lg_min_heap *h)
{
    return h->count ? h->nodes[0] : NULL;
}

void lg_min_heap_release(struct lg_min_heap *h)
{
    free(h->nodes);
    *h = (struct lg_min_heap){0};
}
