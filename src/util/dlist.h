/*
 * dlist.h - an intrusive doubly-linked list: a link embedded in the element, a head that knows
 * both ends, O(1) insert at the tail, removal and move-to-tail.
 *
 * Owns:    nothing; the elements belong to whoever embeds the links.
 * Frees:   nothing.
 * Threads: none of its own: a list is touched by the one thread that owns its elements.
 * Bounds:  none of its own: a list holds what its owner puts on it.
 */
#ifndef LG_DLIST_H
#define LG_DLIST_H

#include <stdbool.h>
#include <stddef.h>

/* Unlinked: both NULL (a zeroed link is unlinked). The first element's prev is NULL too, so
 * whether a link is on a list is asked of the list (lg_dlist_contains): no flag, 16 bytes. */
struct lg_dlink {
    struct lg_dlink *prev, *next;
};

struct lg_dlist {
    struct lg_dlink *first, *last;
    size_t count;
};

/* The element that embeds `link` as member `member`. */
#define lg_dlist_entry(link, type, member) ((type *)((char *)(link) - offsetof(type, member)))

/* Whether n is on l. n must be on l or on no list: a link belongs to one list. */
static inline bool lg_dlist_contains(const struct lg_dlist *l, const struct lg_dlink *n)
{
    return n->prev != NULL || l->first == n;
}

static inline void lg_dlist_remove(struct lg_dlist *l, struct lg_dlink *n)
{
    if (!lg_dlist_contains(l, n))
        return;
    if (n->prev)
        n->prev->next = n->next;
    else
        l->first = n->next;
    if (n->next)
        n->next->prev = n->prev;
    else
        l->last = n->prev;
    n->prev = n->next = NULL;
    l->count--;
}

static inline void lg_dlist_push_tail(struct lg_dlist *l, struct lg_dlink *n)
{
    n->next = NULL;
    n->prev = l->last;
    if (l->last)
        l->last->next = n;
    else
        l->first = n;
    l->last = n;
    l->count++;
}

/* Move n (linked or not) to the tail. */
static inline void lg_dlist_move_tail(struct lg_dlist *l, struct lg_dlink *n)
{
    if (l->last == n)
        return;
    lg_dlist_remove(l, n);
    lg_dlist_push_tail(l, n);
}

#endif
