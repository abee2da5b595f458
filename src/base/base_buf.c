/* base_buf.c — the growable byte buffer. Invariant: len <= cap, and data is NULL exactly
 * when cap is 0. Growth doubles so that appends are amortized O(1). */
#include "base/base.h"

#include <pthread.h>
#include <stdio.h>

void fr_buf_init(fr_buf *b)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
}

void fr_buf_free(fr_buf *b)
{
    fr_free(b->data);
    fr_buf_init(b);
}

void fr_buf_reset(fr_buf *b)
{
    b->len = 0;
}

int fr_buf_reserve(fr_buf *b, size_t extra, fr_error *err)
{
    if (extra <= b->cap - b->len) return FR_OK;
    FR_CHECK(extra <= SIZE_MAX / 2 - b->len, FR_ENOMEM, err,
             "buffer of %zu bytes cannot grow by %zu bytes", b->len, extra);
    size_t need = b->len + extra;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need) cap *= 2;
    uint8_t *p = fr_realloc(b->data, cap);
    FR_CHECK(p != NULL, FR_ENOMEM, err, "out of memory growing a buffer to %zu bytes", cap);
    b->data = p;
    b->cap = cap;
    return FR_OK;
}

int fr_buf_append(fr_buf *b, const void *p, size_t n, fr_error *err)
{
    if (n == 0) return FR_OK;
    FR_TRY(fr_buf_reserve(b, n, err));
    memcpy(b->data + b->len, p, n);
    b->len += n;
    return FR_OK;
}

int fr_buf_append_zeros(fr_buf *b, size_t n, fr_error *err)
{
    if (n == 0) return FR_OK;
    FR_TRY(fr_buf_reserve(b, n, err));
    memset(b->data + b->len, 0, n);
    b->len += n;
    return FR_OK;
}

int fr_buf_printf(fr_buf *b, fr_error *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    FR_CHECK(n >= 0, FR_EINVAL, err, "bad format string \"%s\"", fmt);
    /* One more byte for the NUL that vsnprintf writes; it is not counted in len. */
    FR_TRY(fr_buf_reserve(b, (size_t)n + 1, err));
    va_start(ap, fmt);
    vsnprintf((char *)b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return FR_OK;
}

int fr_buf_pad(fr_buf *b, size_t align, fr_error *err)
{
    if (align == 0 || (align & (align - 1)) != 0)
        return fr_fail(err, FR_EINVAL, "alignment %zu is not a power of two", align);
    size_t rem = b->len & (align - 1);
    if (rem == 0) return FR_OK;
    return fr_buf_append_zeros(b, align - rem, err);
}

/* An empty buffer hands over a 1-byte allocation, so that NULL always means "no memory". */
uint8_t *fr_buf_steal(fr_buf *b, size_t *len)
{
    uint8_t *p = b->data;
    if (len) *len = b->len;
    if (!p) p = fr_malloc(1);
    fr_buf_init(b);
    return p;
}

/* ---- the pool of buffers kept for reuse ---------------------------------------------------- */

struct fr_bufpool {
    pthread_mutex_t mu;
    size_t keep_bytes; /* the most capacity kept */
    size_t kept_bytes; /* the capacity of slots[0..n) */
    int n;
    fr_buf slots[FR_BUFPOOL_SLOTS];
};

fr_bufpool *fr_bufpool_new(size_t keep_bytes)
{
    fr_bufpool *p = fr_calloc(1, sizeof *p);
    if (!p) return NULL;
    pthread_mutex_init(&p->mu, NULL);
    p->keep_bytes = keep_bytes;
    return p;
}

void fr_bufpool_free(fr_bufpool *p)
{
    if (!p) return;
    for (int i = 0; i < p->n; i++) fr_buf_free(&p->slots[i]);
    pthread_mutex_destroy(&p->mu);
    fr_free(p);
}

/* The largest buffer kept, so that what is written into it grows it the least (a pool of
 * received frames also holds the small copies of small frames). */
void fr_bufpool_take(fr_bufpool *p, fr_buf *out)
{
    fr_buf_init(out);
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    if (p->n > 0) {
        int best = 0;
        for (int i = 1; i < p->n; i++)
            if (p->slots[i].cap > p->slots[best].cap) best = i;
        *out = p->slots[best];
        p->slots[best] = p->slots[--p->n];
        p->kept_bytes -= out->cap;
    }
    pthread_mutex_unlock(&p->mu);
    out->len = 0;
}

void fr_bufpool_give(fr_bufpool *p, fr_buf *b)
{
    if (p && b->cap > 0) {
        pthread_mutex_lock(&p->mu);
        bool keep = p->n < FR_BUFPOOL_SLOTS && b->cap <= p->keep_bytes - p->kept_bytes;
        if (keep) {
            p->slots[p->n++] = *b;
            p->kept_bytes += b->cap;
            fr_buf_init(b);
        }
        pthread_mutex_unlock(&p->mu);
    }
    fr_buf_free(b);
}

size_t fr_bufpool_kept_bytes(fr_bufpool *p)
{
    if (!p) return 0;
    pthread_mutex_lock(&p->mu);
    size_t n = p->kept_bytes;
    pthread_mutex_unlock(&p->mu);
    return n;
}
