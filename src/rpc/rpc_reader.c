/* rpc_reader.c — the incremental frame reader: cuts a byte stream into whole frames.
 *
 * The buffer holds buf[start, len): bytes received and not yet taken as frames. Frames
 * handed out by next() point into buf and stay valid until the buffer is compacted or
 * reallocated, which only space(), feed() and trim() do.
 *
 * An empty reader offers a read the size of the last whole frame (at least a read chunk, at
 * most FR_RPC_READ_LEARN_BYTES): a peer that sends frames of one size has each read into a
 * buffer that holds it whole, handed over by keep() without a copy, where a buffer grown by
 * doubling would copy what it held at every step.
 *
 * Invariants: cap <= 4 + frame_bytes_max (the largest frame there can be); a reader of
 * requests (a server's, facing any peer) grows its buffer only when it is full and the
 * frame being read is longer than it, or to the size of a frame the peer has already sent
 * whole (so the memory held is at most twice what the peer has sent, or one read chunk); a
 * reader of responses (a client's) grows it to the frame's size as soon as it knows it, so
 * that a large answer is copied at most once, while little of it has arrived; a length
 * over the limit is refused before any byte of its body is buffered; once failed, always
 * failed. A reader given a pool takes its buffers from it and gives them back to it, so a
 * buffer may be larger than these rules would make it (an earlier frame's), up to the same
 * 4 + frame_bytes_max. */
#include "rpc/rpc.h"

#include <assert.h>
#include <stdio.h>

struct fr_rpc_reader {
    fr_rpc_direction dir;
    int64_t frame_bytes_max;
    size_t chunk; /* the least an empty reader offers a read */
    size_t learned; /* what it offers: the last whole frame's size, within bounds */
    uint8_t *buf;
    size_t cap, start, len;
    fr_bufpool *pool;  /* where buffers come from and go back to, or NULL */
    size_t kept_cap;   /* the capacity of what the last keep handed out */
    bool failed;
    fr_error failure;
};

int fr_rpc_reader_new(fr_rpc_direction d, int64_t frame_bytes_max, fr_rpc_reader **out,
                      fr_error *err)
{
    FR_TRY(fr_rpc_check_frame_limit(frame_bytes_max, err));
    fr_rpc_reader *r = fr_calloc(1, sizeof *r);
    if (!r) return fr_fail(err, FR_ENOMEM, "out of memory for a frame reader");
    r->dir = d;
    r->frame_bytes_max = frame_bytes_max;
    r->chunk = (size_t)frame_bytes_max + 4 < FR_RPC_READ_CHUNK_BYTES ? (size_t)frame_bytes_max + 4
                                                                     : FR_RPC_READ_CHUNK_BYTES;
    r->learned = r->chunk;
    *out = r;
    return 0;
}

/* Gives the buffer back (to the pool, when there is one): the reader holds none after. */
static void fr_rpc_reader_release(fr_rpc_reader *r)
{
    fr_buf b = {.data = r->buf, .len = 0, .cap = r->cap};
    fr_bufpool_give(r->pool, &b);
    r->buf = NULL;
    r->cap = r->start = r->len = 0;
}

/* The pool's largest buffer, or none (*b empty) when it holds more than the reader may. */
static void fr_rpc_reader_take(fr_rpc_reader *r, fr_buf *b)
{
    fr_bufpool_take(r->pool, b);
    if (b->cap > (size_t)r->frame_bytes_max + 4) fr_buf_free(b);
}

/* An empty reader's buffer of want bytes: one of the pool's when it is no larger than the
 * reader may hold, grown to want if it is smaller (its pages mostly touched already). */
static int fr_rpc_reader_alloc(fr_rpc_reader *r, size_t want)
{
    fr_buf b;
    fr_rpc_reader_take(r, &b);
    if (b.cap < want) {
        uint8_t *p = fr_realloc(b.data, want);
        if (!p) {
            fr_buf_free(&b);
            return FR_ENOMEM;
        }
        b.data = p;
        b.cap = want;
    }
    r->buf = b.data;
    r->cap = b.cap;
    return 0;
}

/* Grows a non-empty reader's buffer to want bytes, keeping what it holds: into one of the
 * pool's buffers when one is large enough (the old buffer goes to the pool), which spares
 * touching fresh memory, else by realloc. */
static int fr_rpc_reader_grow(fr_rpc_reader *r, size_t want)
{
    fr_buf b;
    fr_rpc_reader_take(r, &b);
    if (b.cap < want) fr_bufpool_give(r->pool, &b); /* too small: back, and b is empty */
    if (b.data) {
        memcpy(b.data, r->buf + r->start, r->len - r->start);
        fr_buf old = {.data = r->buf, .len = 0, .cap = r->cap};
        fr_bufpool_give(r->pool, &old);
        r->buf = b.data;
        r->cap = b.cap;
        r->len -= r->start;
        r->start = 0;
        return 0;
    }
    uint8_t *nb = fr_realloc(r->buf, want);
    if (!nb) return FR_ENOMEM;
    r->buf = nb;
    r->cap = want;
    return 0;
}

void fr_rpc_reader_set_pool(fr_rpc_reader *r, fr_bufpool *pool)
{
    r->pool = pool;
}

size_t fr_rpc_reader_kept_cap(const fr_rpc_reader *r)
{
    return r->kept_cap;
}

void fr_rpc_reader_free(fr_rpc_reader *r)
{
    if (!r) return;
    fr_rpc_reader_release(r);
    fr_free(r);
}

/* Records a framing error: the reader is failed from now on. */
static int fr_rpc_reader_fail(fr_rpc_reader *r, int rc, fr_error *err)
{
    r->failed = true;
    r->failure.code = rc;
    snprintf(r->failure.msg, sizeof r->failure.msg, "%s", err ? err->msg : "bad frame");
    return rc;
}

static int fr_rpc_reader_failed(const fr_rpc_reader *r, fr_error *err)
{
    if (err) *err = r->failure;
    return r->failure.code;
}

/* The total bytes (length field included) of the frame at start: 1 when known, 0 when
 * fewer than 4 bytes are buffered, or a framing error. */
static int fr_rpc_reader_frame_bytes(fr_rpc_reader *r, size_t *total, fr_error *err)
{
    if (r->len - r->start < 4) return 0;
    fr_error local;
    fr_error *e = err ? err : &local;
    int32_t length;
    int rc = fr_rpc_frame_length(r->dir, r->buf + r->start, r->frame_bytes_max, &length, e);
    if (rc < 0) return fr_rpc_reader_fail(r, rc, e);
    *total = 4 + (size_t)length;
    return 1;
}

/* Moves what is buffered to the front, or gives a large empty buffer back. */
static void fr_rpc_reader_compact(fr_rpc_reader *r)
{
    if (r->start == r->len) {
        r->start = r->len = 0;
        if (r->cap > r->learned) fr_rpc_reader_release(r);
    } else if (r->start > 0) {
        memmove(r->buf, r->buf + r->start, r->len - r->start);
        r->len -= r->start;
        r->start = 0;
    }
}

int fr_rpc_reader_space(fr_rpc_reader *r, uint8_t **p, size_t *n, fr_error *err)
{
    if (r->failed) return fr_rpc_reader_failed(r, err);
    fr_rpc_reader_compact(r);
    size_t total = 0;
    int known = fr_rpc_reader_frame_bytes(r, &total, err);
    if (known < 0) return known;
    size_t want = r->cap;
    if (r->cap == 0) {
        want = r->learned;
    } else if (known && total > r->cap && r->dir == FR_RPC_RESPONSE) {
        want = total; /* a reader of responses trusts the length of its server's frame */
    } else if (r->len == r->cap && known && total > r->len) {
        /* Full in the middle of a frame longer than the buffer: double, up to the frame. */
        want = r->cap * 2 < total ? r->cap * 2 : total;
    }
    if (want > r->cap) {
        int rc = r->cap == 0 ? fr_rpc_reader_alloc(r, want) : fr_rpc_reader_grow(r, want);
        if (rc < 0)
            return fr_fail(err, FR_ENOMEM, "out of memory for a frame buffer of %zu bytes", want);
    }
    assert(r->cap <= (size_t)r->frame_bytes_max + 4);
    *p = r->buf + r->len;
    *n = r->cap - r->len;
    return 0;
}

void fr_rpc_reader_commit(fr_rpc_reader *r, size_t n)
{
    assert(n <= r->cap - r->len);
    r->len += n;
}

int fr_rpc_reader_feed(fr_rpc_reader *r, const uint8_t *p, size_t n, size_t *used, fr_error *err)
{
    size_t done = 0;
    *used = 0;
    while (done < n) {
        uint8_t *dst;
        size_t room;
        FR_TRY(fr_rpc_reader_space(r, &dst, &room, err));
        if (room == 0) break;
        size_t k = n - done < room ? n - done : room;
        memcpy(dst, p + done, k);
        fr_rpc_reader_commit(r, k);
        done += k;
        *used = done;
    }
    return 0;
}

int fr_rpc_reader_next(fr_rpc_reader *r, fr_rpc_frame *out, fr_error *err)
{
    if (r->failed) return fr_rpc_reader_failed(r, err);
    size_t total = 0;
    int known = fr_rpc_reader_frame_bytes(r, &total, err);
    if (known <= 0) return known;
    if (r->len - r->start < total) return 0;
    fr_error local;
    fr_error *e = err ? err : &local;
    int rc = fr_rpc_frame_decode(r->dir, r->buf + r->start, total, r->frame_bytes_max, out, e);
    if (rc < 0) return fr_rpc_reader_fail(r, rc, e);
    r->start += total;
    r->learned = total < r->chunk               ? r->chunk
                 : total > FR_RPC_READ_LEARN_BYTES ? FR_RPC_READ_LEARN_BYTES
                                                   : total;
    return 1;
}

uint8_t *fr_rpc_reader_keep(fr_rpc_reader *r, const fr_rpc_frame *f, uint8_t **body)
{
    /* The buffer is handed over only for the frame just returned when it fills at least
     * half of the buffer: that costs no more memory than the frame's own copy would. */
    if (!r->failed && r->start == r->len && r->buf && f->body >= r->buf &&
        f->body + f->body_len == r->buf + r->len &&
        2 * (r->len - (size_t)(f->body - r->buf)) >= r->cap) {
        uint8_t *b = r->buf;
        r->kept_cap = r->cap;
        r->buf = NULL;
        r->cap = r->start = r->len = 0;
        *body = (uint8_t *)f->body;
        return b;
    }
    uint8_t *copy = fr_malloc(f->body_len);
    if (!copy) return NULL;
    memcpy(copy, f->body, f->body_len);
    r->kept_cap = f->body_len;
    *body = copy;
    return copy;
}

size_t fr_rpc_reader_buffered(const fr_rpc_reader *r)
{
    return r->len - r->start;
}

size_t fr_rpc_reader_capacity(const fr_rpc_reader *r)
{
    return r->cap;
}

void fr_rpc_reader_trim(fr_rpc_reader *r)
{
    if (r->start != r->len) return;
    fr_rpc_reader_release(r);
}
