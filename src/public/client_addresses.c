/* client_addresses.c - see client_addresses.h. */
#include "client_addresses.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define NO_ENTRY UINT32_MAX

struct entry {
    struct lg_client_address address;
    uint32_t connections; /* 0 = free */
    uint32_t next;        /* bucket chain, or the free list */
};

struct lg_client_addresses {
    pthread_mutex_t lock;
    uint32_t per_address;       /* {lock} 0 = no bound */
    uint32_t capacity;          /* immutable: entries */
    uint32_t mask;              /* immutable: buckets - 1 */
    uint32_t *buckets;          /* {lock} entry index, or NO_ENTRY */
    struct entry *entries;      /* {lock} */
    uint32_t free_list;         /* {lock} */
};

struct lg_client_addresses *lg_client_addresses_create(uint32_t max_entries, uint32_t per_address)
{
    struct lg_client_addresses *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->per_address = per_address;
    t->capacity = max_entries ? max_entries : 1;
    uint32_t buckets = 16;
    while (buckets < t->capacity && buckets < (UINT32_C(1) << 30))
        buckets <<= 1;
    t->mask = buckets - 1;
    t->buckets = malloc((size_t)buckets * sizeof *t->buckets);
    t->entries = calloc(t->capacity, sizeof *t->entries);
    if (!t->buckets || !t->entries || pthread_mutex_init(&t->lock, NULL) != 0) {
        free(t->buckets);
        free(t->entries);
        free(t);
        return NULL;
    }
    memset(t->buckets, 0xff, (size_t)buckets * sizeof *t->buckets);
    for (uint32_t i = 0; i < t->capacity; i++)
        t->entries[i].next = i + 1 < t->capacity ? i + 1 : NO_ENTRY;
    t->free_list = 0;
    return t;
}

void lg_client_addresses_destroy(struct lg_client_addresses *t)
{
    if (!t)
        return;
    pthread_mutex_destroy(&t->lock);
    free(t->buckets);
    free(t->entries);
    free(t);
}

void lg_client_addresses_set_per_address(struct lg_client_addresses *t, uint32_t per_address)
{
    pthread_mutex_lock(&t->lock);
    t->per_address = per_address;
    pthread_mutex_unlock(&t->lock);
}

uint32_t lg_client_addresses_per_address(struct lg_client_addresses *t)
{
    pthread_mutex_lock(&t->lock);
    uint32_t per_address = t->per_address;
    pthread_mutex_unlock(&t->lock);
    return per_address;
}

static uint32_t hash_address(const struct lg_client_address *a)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (size_t i = 0; i < sizeof a->bytes; i++) {
        h ^= a->bytes[i];
        h *= 16777619u;
    }
    return h;
}

/* What a counts as: an IPv4 address itself, an IPv6 address its /64 (one subscriber's
 * network: a host can pick any of its 2^64 addresses, so a bound per /128 binds nobody). */
static struct lg_client_address key_of(const struct lg_client_address *a)
{
    static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    struct lg_client_address key = *a;
    if (memcmp(a->bytes, mapped, sizeof mapped) != 0)
        memset(key.bytes + 8, 0, 8);
    return key;
}

/* The slot pointing at a's entry (or at NO_ENTRY, where it would go). Caller holds lock; a is
 * a key (key_of). */
static uint32_t *find_slot(struct lg_client_addresses *t, const struct lg_client_address *a)
{
    uint32_t *slot = &t->buckets[hash_address(a) & t->mask];
    while (*slot != NO_ENTRY && memcmp(&t->entries[*slot].address, a, sizeof *a) != 0)
        slot = &t->entries[*slot].next;
    return slot;
}

bool lg_client_addresses_acquire(struct lg_client_addresses *t, const struct lg_client_address *address)
{
    struct lg_client_address key = key_of(address), *a = &key;
    bool ok = false;
    pthread_mutex_lock(&t->lock);
    uint32_t *slot = find_slot(t, a);
    if (*slot != NO_ENTRY) {
        struct entry *e = &t->entries[*slot];
        ok = t->per_address == 0 || e->connections < t->per_address;
        e->connections += ok;
    } else if (t->free_list != NO_ENTRY) {
        uint32_t i = t->free_list;
        struct entry *e = &t->entries[i];
        t->free_list = e->next;
        *e = (struct entry){.address = *a, .connections = 1, .next = NO_ENTRY};
        *slot = i;
        ok = true;
    }
    pthread_mutex_unlock(&t->lock);
    return ok;
}

void lg_client_addresses_release(struct lg_client_addresses *t, const struct lg_client_address *address)
{
    struct lg_client_address key = key_of(address), *a = &key;
    pthread_mutex_lock(&t->lock);
    uint32_t *slot = find_slot(t, a);
    if (*slot != NO_ENTRY) {
        uint32_t i = *slot;
        struct entry *e = &t->entries[i];
        if (--e->connections == 0) {
            *slot = e->next;
            e->next = t->free_list;
            t->free_list = i;
        }
    }
    pthread_mutex_unlock(&t->lock);
}

uint32_t lg_client_addresses_count(struct lg_client_addresses *t, const struct lg_client_address *address)
{
    struct lg_client_address key = key_of(address), *a = &key;
    pthread_mutex_lock(&t->lock);
    uint32_t *slot = find_slot(t, a);
    uint32_t n = *slot != NO_ENTRY ? t->entries[*slot].connections : 0;
    pthread_mutex_unlock(&t->lock);
    return n;
}
