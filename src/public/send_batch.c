/* send_batch.c - see send_batch.h. */
#include "send_batch.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>

int lg_send_batch_init(struct lg_send_batch *b, bool want, size_t headroom)
{
    memset(b, 0, sizeof *b);
    lg_buf_init(&b->bytes);
    b->headroom = headroom;
    if (!want)
        return 0;
    int rc = io_uring_queue_init(LG_SEND_BATCH_MAX, &b->ring, 0);
    b->on = rc == 0;
    return rc;
}

void lg_send_batch_release(struct lg_send_batch *b)
{
    if (b->on)
        io_uring_queue_exit(&b->ring);
    b->on = false;
    lg_buf_release(&b->bytes);
}

struct lg_buf *lg_send_batch_begin(struct lg_send_batch *b)
{
    b->items[b->count].at = b->bytes.len + b->headroom;
    lg_buf_reserve(&b->bytes, b->headroom);
    b->bytes.len += b->bytes.oom ? 0 : b->headroom;
    return &b->bytes;
}

bool lg_send_batch_add(struct lg_send_batch *b, void *owner, int fd)
{
    struct lg_send_batch_item *it = &b->items[b->count];
    if (b->bytes.oom || b->bytes.len <= it->at) {
        lg_send_batch_cancel(b);
        return false;
    }
    it->owner = owner;
    it->fd = fd;
    it->len = b->bytes.len - it->at;
    b->count++;
    return true;
}

void lg_send_batch_cancel(struct lg_send_batch *b)
{
    size_t start = b->items[b->count].at - b->headroom;
    if (start <= b->bytes.len)
        b->bytes.len = start;
}

bool lg_send_batch_full(const struct lg_send_batch *b)
{
    return b->count == LG_SEND_BATCH_MAX || b->bytes.len >= LG_SEND_BATCH_BYTES;
}

/* Every item's result into b->results: what the kernel answered, or 0 (unsent) for the items
 * it was not given. Return value: 0, or -errno when the ring failed (b is off from then on:
 * an entry the kernel did not take must not be sent later, from a buffer reused by then). */
static int submit(struct lg_send_batch *b)
{
    size_t queued = 0;
    for (size_t i = 0; i < b->count; i++) {
        b->results[i] = 0;
        struct io_uring_sqe *sqe = io_uring_get_sqe(&b->ring);
        if (!sqe)
            continue; /* unsent: the ring holds LG_SEND_BATCH_MAX, so only after a failure */
        const struct lg_send_batch_item *it = &b->items[i];
        io_uring_prep_send(sqe, it->fd, b->bytes.data + it->at, it->len,
                           MSG_NOSIGNAL | MSG_DONTWAIT);
        io_uring_sqe_set_data64(sqe, i);
        queued++;
    }
    size_t submitted = 0;
    int err = 0;
    while (submitted < queued) {
        int rc = io_uring_submit(&b->ring);
        if (rc == -EINTR)
            continue;
        if (rc <= 0) {
            err = rc < 0 ? rc : -EIO;
            break;
        }
        submitted += (size_t)rc;
    }
    /* Non-blocking sends complete as they are submitted: their answers are in the ring. */
    for (size_t reaped = 0; reaped < submitted; reaped++) {
        struct io_uring_cqe *cqe;
        int rc = io_uring_wait_cqe(&b->ring, &cqe);
        if (rc != 0) {
            err = rc;
            break;
        }
        uint64_t i = io_uring_cqe_get_data64(cqe);
        if (i < b->count)
            b->results[i] = cqe->res == -EAGAIN ? 0 : cqe->res;
        io_uring_cqe_seen(&b->ring, cqe);
    }
    if (err) {
        io_uring_queue_exit(&b->ring);
        b->on = false;
    }
    return err;
}

/* A batch of one is sent directly: a submission would cost as much as the system call it
 * saves, and more (the ring's own work), which is what a topic per user pays per publish. */
static void send_one(struct lg_send_batch *b)
{
    const struct lg_send_batch_item *it = &b->items[0];
    ssize_t n;
    do
        n = send(it->fd, b->bytes.data + it->at, it->len, MSG_NOSIGNAL | MSG_DONTWAIT);
    while (n < 0 && errno == EINTR);
    b->results[0] = n >= 0 ? n : errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;
}

int lg_send_batch_flush(struct lg_send_batch *b, lg_send_batch_done_fn *done)
{
    if (b->count == 0)
        return 0;
    int rc = 0;
    if (b->count == 1)
        send_one(b);
    else
        rc = submit(b);
    for (size_t i = 0; i < b->count; i++) {
        struct lg_send_batch_item *it = &b->items[i];
        ssize_t sent = b->results[i];
        size_t took = sent > 0 ? (size_t)sent : 0;
        done(it->owner, sent, b->bytes.data + it->at + took, it->len - took);
    }
    b->count = 0;
    lg_buf_reset(&b->bytes);
    return rc;
}
