/*
 * send_batch.h - a worker's batched socket writes: the bytes for up to LG_SEND_BATCH_MAX
 * sockets rendered back to back into one buffer, then handed to the kernel in one io_uring
 * submission instead of one send() each. On a fan-out the system call around each send costs
 * about as much as the TCP work inside it; a submission pays it once for the batch. A batch of
 * one is a plain send(): there is nothing to share the submission with.
 * Each send is non-blocking (MSG_DONTWAIT): it takes what its socket has room for at once, and
 * the caller is told what is left of its bytes, so a full socket never holds up the batch.
 *
 * Owns:    its io_uring (when the kernel grants one) and the buffer of the batch's bytes.
 * Frees:   lg_send_batch_release(). The items' owners are the caller's: the batch keeps only
 *          their pointers, from lg_send_batch_add() to the lg_send_batch_flush() that reports
 *          them, and the caller flushes before any of them can go away (before its loop runs).
 * Threads: one: the worker thread that owns it (struct lg_conn_home).
 * Bounds:  at most LG_SEND_BATCH_MAX items and about LG_SEND_BATCH_BYTES bytes a submission
 *          (lg_send_batch_full() says when to flush); the buffer is reused for the next batch.
 * Failure: no io_uring (an older kernel, a seccomp filter that refuses io_uring_setup()): the
 *          batch is off (lg_send_batch_on() false) and the caller writes each socket itself. A
 *          ring that fails reports the items it did not send as unsent (0 bytes taken), so the
 *          caller writes them itself, and turns the batch off; an item whose socket failed
 *          reports -errno.
 */
#ifndef LG_SEND_BATCH_H
#define LG_SEND_BATCH_H

#include <liburing.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "encode.h"

#define LG_SEND_BATCH_MAX 64
#define LG_SEND_BATCH_BYTES (1024 * 1024)

struct lg_send_batch_item {
    void *owner;   /* the caller's, passed back by the flush */
    int fd;
    size_t at;     /* its bytes: buffer.data[at, at + len) */
    size_t len;
};

struct lg_send_batch {
    bool on;                 /* the kernel granted the ring */
    size_t headroom;         /* bytes kept free before each item (the caller's writer needs) */
    struct io_uring ring;
    struct lg_buf bytes;     /* the items' bytes, each after `headroom` free bytes */
    struct lg_send_batch_item items[LG_SEND_BATCH_MAX];
    ssize_t results[LG_SEND_BATCH_MAX];
    size_t count;
};

/* What became of an item: sent is the bytes its socket took (0 when it had no room or the
 * submission failed), or -errno when the socket failed; rest/rest_len are the bytes it did
 * not take (rest has the batch's headroom free before it). Called in the order of adding. */
typedef void lg_send_batch_done_fn(void *owner, ssize_t sent, char *rest, size_t rest_len);

/* Sets up b, on when want is true and the kernel grants an io_uring. Return value: 0, or
 * -errno from io_uring_setup() when want was true and the batch is off (the caller logs it). */
int lg_send_batch_init(struct lg_send_batch *b, bool want, size_t headroom);
void lg_send_batch_release(struct lg_send_batch *b);

static inline bool lg_send_batch_on(const struct lg_send_batch *b) { return b->on; }
/* Room for the next item has been made (lg_send_batch_begin()); append its bytes to this
 * buffer, then lg_send_batch_add() them or lg_send_batch_cancel() it. */
struct lg_buf *lg_send_batch_begin(struct lg_send_batch *b);
/* The bytes appended since lg_send_batch_begin() go to fd with the batch. Nothing appended:
 * nothing is added. Return value: whether an item was added. */
bool lg_send_batch_add(struct lg_send_batch *b, void *owner, int fd);
/* The bytes appended since lg_send_batch_begin() are dropped. */
void lg_send_batch_cancel(struct lg_send_batch *b);
/* The batch holds its bound of items or bytes: flush it before adding more. */
bool lg_send_batch_full(const struct lg_send_batch *b);
/* Send every item in one submission, then report each through done, in order. Return value:
 * 0, or -errno when the ring failed: the items it did not send are reported unsent and the
 * batch is off from then on (the caller logs it once). */
int lg_send_batch_flush(struct lg_send_batch *b, lg_send_batch_done_fn *done);

#endif
