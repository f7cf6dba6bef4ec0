/*
 * ws_inflate.h - lg_loadgen's permessage-deflate inflation (RFC 7692): each compressed message
 * back to its text, either with its connection's own inflater or, for connections whose server
 * promised server_no_context_takeover, through a bounded cache shared by all of them.
 *
 * DESIGN
 * A server that compresses an event once for every subscriber (livegate, Nchan with
 * nchan_deflate_message_for_websocket) sends the same compressed bytes on every connection.
 * When a connection's answer carried server_no_context_takeover, each of its messages is a
 * deflate stream on its own, so its text is a function of its compressed bytes alone: the
 * cache maps those bytes to that text. The hash only picks a set; a hit needs the full
 * compressed bytes equal (memcmp), so a hit gives exactly what inflating would; a miss inflates
 * with a fresh (reset) inflater and keeps the result. A connection without that promise may
 * refer back into earlier messages, so the same bytes can mean different text there: it always
 * inflates with its own inflater and never touches the cache.
 *
 * Owns:    the cache's entries (a copy of each compressed message and its text), one shared
 *          reset inflater and a scratch buffer; lgb_inflate_release() frees them. A
 *          connection's inflater (*conn_z) is allocated here at its first message and freed by
 *          lgb_inflate_conn_end(), called by whoever closes the connection.
 * Threads: the load generator's one thread; nothing here is shared across threads.
 * Bounds:  LGB_INFLATE_SETS x LGB_INFLATE_WAYS entries of at most LGB_INFLATE_ENTRY_MAX bytes
 *          each (compressed plus text; a larger message is inflated but not kept); the victim
 *          in a full set is its least recently used entry. A message's text is at most
 *          LGB_INFLATE_TEXT_MAX bytes (longer: refused as invalid).
 */
#ifndef LG_BENCH_WS_INFLATE_H
#define LG_BENCH_WS_INFLATE_H

#include <stddef.h>
#include <stdint.h>
#include <zlib.h>

#define LGB_INFLATE_SETS 32
#define LGB_INFLATE_WAYS 8
#define LGB_INFLATE_ENTRY_MAX (64u * 1024)
#define LGB_INFLATE_TEXT_MAX (32u * 1024 * 1024)

struct lgb_inflate_entry {
    uint64_t hash;
    uint64_t last_use; /* the cache's clock at its last hit or fill; 0 = empty */
    char *bytes;       /* zlen compressed bytes, then tlen bytes of text */
    uint32_t zlen, tlen, cap;
};

struct lgb_inflate {
    struct lgb_inflate_entry entries[LGB_INFLATE_SETS][LGB_INFLATE_WAYS];
    z_stream fresh; /* reset before every message of the cached path */
    char *scratch;  /* the text of the last message inflated */
    size_t scratch_cap;
    uint64_t clock;
    /* the set selector; a test may replace it (a hash that makes everything collide) */
    uint64_t (*hash)(const void *p, size_t n);
    /* counters, for the report */
    uint64_t cache_hits;    /* texts taken from the cache, nothing inflated */
    uint64_t cache_misses;  /* cached path: inflated with the reset inflater */
    uint64_t conn_inflated; /* inflated with a connection's own inflater */
    uint64_t text_bytes;    /* text bytes of every message given back, either path */
};

/* Return value: 0, or -1 when zlib cannot be set up (nothing to release then). */
int lgb_inflate_init(struct lgb_inflate *w);
/* Frees the entries, the reset inflater and the scratch; the counters stay readable. */
void lgb_inflate_release(struct lgb_inflate *w);

/*
 * The text of one compressed message (its payload as received, without the 00 00 ff ff the
 * sender took off) of a connection whose server promised server_no_context_takeover.
 * Return value: 0 with *text and *tlen set (borrowed: valid until the next call on w), -1 when
 * the bytes are not a complete deflate message on their own.
 */
int lgb_inflate_no_takeover(struct lgb_inflate *w, const void *msg, size_t n, const char **text,
                            size_t *tlen);

/*
 * The same for a connection that may take context over: inflated with its own inflater
 * (*conn_z, allocated at its first message), never through the cache.
 * Return value: as lgb_inflate_no_takeover(); exits the process when out of memory.
 */
int lgb_inflate_with_context(struct lgb_inflate *w, z_stream **conn_z, const void *msg, size_t n,
                             const char **text, size_t *tlen);

/* Frees a connection's inflater (*conn_z may be NULL) and sets *conn_z to NULL. */
void lgb_inflate_conn_end(z_stream **conn_z);

/* The default set selector (w->hash after init): 64-bit, eight bytes at a time. */
uint64_t lgb_inflate_hash(const void *p, size_t n);

#endif
