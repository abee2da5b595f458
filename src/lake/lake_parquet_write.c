/* lake_parquet_write.c — the Parquet writer (lake.h): flat schemas of every firth type into
 * row groups of column chunks of data pages (v1), PLAIN or RLE_DICTIONARY encoded, with
 * RLE/bit-packed definition levels for nullable columns, compressed page by page, with
 * statistics per chunk and the footer (FileMetaData) at the end.
 *
 * Invariants: a row group is buffered in memory, each column's pages uncompressed and back
 * to back in the column's row-group buffer (levels right before values, so that a page is
 * compressed in one call from where it was encoded), and written out whole when its
 * uncompressed size reaches the target or it holds FR_BATCH_ROWS_MAX rows (what a reader's
 * batch takes): then each column chunk in turn is compressed page by page into one small
 * scratch buffer and written from there, and its write-back starts, so the disk writes one
 * chunk while the next is compressed. The file holds only complete row groups before the
 * footer; every page holds whole rows (flat columns: one value per row); a chunk uses its
 * dictionary for a prefix of its pages and PLAIN for the rest once the dictionary grows past
 * dict_bytes_max, and drops it at the first page (or its first 1024 values) when it does
 * not pay off. Row-group buffers and the compressor outlive the writer (see "memory kept
 * between writers"). The file is created with O_EXCL and removed on any failure. */
#include <errno.h>
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <math.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "lake/lake_parquet_int.h"
#include "lake/lake_thrift.h"

#define PQ_SLICE_ROWS 4096
#define PQ_PAGE_ROWS_MAX 20000
#define PQ_DICT_PROBE 1024 /* values seen before a dictionary of distinct values is dropped */
/* Room left before each page's values in its row-group buffer for the page's definition
 * levels, so that levels and values end up contiguous without moving the values (pages
 * whose levels need more are moved once). */
#define PQ_PAGE_HEAD 4096

/* Min and max of one column over non-null values, in firth's representation. */
typedef struct pq_minmax {
    bool has;
    bool too_long; /* a string or bytes value beyond PQ_STATS_BYTES_MAX was seen */
    int64_t imin, imax;
    double fmin, fmax;
    fr_i128 dmin, dmax;
    fr_buf smin, smax;
} pq_minmax;

/* The dictionary of one column chunk: entries in PLAIN form, found by an open-addressing
 * hash of their bytes. */
typedef struct pq_dict {
    int32_t *slots; /* entry index + 1; 0 empty */
    uint32_t cap;   /* power of two */
    int32_t count;
    fr_buf plain;   /* the dictionary page body */
    uint32_t *offs; /* var-width: offset of each entry's length prefix in plain */
    size_t offs_cap;
} pq_dict;

/* What the footer needs of one written column chunk. */
typedef struct pq_chunk_out {
    int64_t data_offset, dict_offset; /* dict_offset -1: none */
    int64_t uncompressed, compressed; /* headers included */
    int64_t values, nulls;
    bool enc_plain, enc_dict;
    bool has_minmax;
    uint8_t *min, *max; /* PLAIN-encoded statistics, in the writer's arena */
    uint32_t min_len, max_len;
} pq_chunk_out;

/* One data page of a column chunk, buffered uncompressed in the chunk's row-group buffer
 * until the row group is written. */
typedef struct pq_page_ref {
    size_t off, len;  /* the page's bytes (levels and values) in pq_colw.rg */
    int32_t values;
    int32_t encoding;
} pq_page_ref;

typedef struct pq_colw {
    const char *name;
    fr_type type;
    pq_type_map map;
    int width;      /* PLAIN bytes per value; 0: BYTE_ARRAY; -1: BOOLEAN bits */
    /* the page being filled: its PLAIN values in rg from page_start + PQ_PAGE_HEAD on, or
     * its dictionary indexes in idx */
    fr_buf defs;    /* one byte per row: 1 valid, 0 null */
    fr_buf idx;     /* uint32 dictionary indexes */
    size_t page_start;
    bool page_open; /* page_start is set and the page's head room reserved */
    int64_t page_rows, page_nulls, page_plain_bytes, page_bits;
    /* the chunk being filled */
    bool dict_on, dict_checked;
    pq_dict dict;
    fr_buf rg;      /* the chunk's data pages, uncompressed, without headers, and the
                     * page being filled */
    size_t rg_high; /* the most bytes rg has held (it or a writer before, see spares) */
    pq_page_ref *pages;
    int npages, pages_cap;
    int64_t chunk_uncompressed, chunk_values, chunk_nulls;
    bool chunk_plain, chunk_dict;
    pq_minmax chunk_mm, file_mm;
    int64_t file_values, file_nulls, file_bytes;
} pq_colw;

struct fr_parquet_writer {
    char *path;
    int fd;
    fr_schema *schema;
    int32_t *field_ids; /* NULL: none */
    fr_parquet_options opts;
    int ncols;
    pq_colw *cols;
    pq_compressor *comp;
    fr_buf zpage, header, levels; /* scratch: a compressed page, its header, its levels */
    int64_t offset;      /* bytes written to the file */
    int64_t rg_rows;     /* rows of the row group being buffered */
    int64_t rows;        /* rows of finished row groups */
    int64_t bytes_done;  /* uncompressed bytes of finished row groups */
    pq_chunk_out *chunks; /* nrgs * ncols */
    int64_t *rg_rows_of, *rg_offsets, *rg_bytes, *rg_compressed;
    int nrgs, rgs_cap;
    fr_arena *arena;
    bool failed;
    /* An fdatasync running in the kernel while the writer goes on (see early_sync) */
    aio_context_t aio;   /* 0: none */
    struct iocb sync_cb;
    bool sync_busy;
    bool sync_off;       /* AIO refused: nothing is started early */
    int sync_err;        /* the errno an early fdatasync failed with (0: none) */
};

/* ---- small helpers ----------------------------------------------------------------------- */

static int64_t col_int(const fr_column *c, int64_t row)
{
    switch (fr_type_width(&c->type)) {
    case 1: return ((const int8_t *)c->values)[row];
    case 2: return ((const int16_t *)c->values)[row];
    case 4: return ((const int32_t *)c->values)[row];
    default: return ((const int64_t *)c->values)[row];
    }
}

static fr_i128 col_i128(const fr_column *c, int64_t row)
{
    fr_i128 v;
    memcpy(&v, c->values + 16 * row, 16);
    return v;
}

static bool col_bool(const fr_column *c, int64_t row)
{
    return (c->values[row >> 3] >> (row & 7)) & 1;
}

static void col_bytes(const fr_column *c, int64_t row, const uint8_t **p, size_t *n)
{
    static const uint8_t empty[1];
    int32_t a = c->offsets[row], b = c->offsets[row + 1];
    *n = (size_t)(b - a);
    *p = *n ? c->values + a : empty; /* values may be NULL when every string is empty */
}

/* Big-endian two's complement of v in n bytes (FIXED_LEN_BYTE_ARRAY decimals). */
static void put_be128(uint8_t *out, int n, fr_i128 v)
{
    for (int i = n - 1; i >= 0; i--) {
        out[i] = (uint8_t)(v & 0xFF);
        v >>= 8;
    }
}

static int plain_width(const pq_type_map *m)
{
    switch (m->physical) {
    case PQ_BOOLEAN: return -1;
    case PQ_INT32: case PQ_FLOAT: return 4;
    case PQ_INT64: case PQ_DOUBLE: return 8;
    case PQ_FLBA: return m->type_length;
    default: return 0;
    }
}

/* The PLAIN bytes of one fixed-width value (not BOOLEAN) into tmp[16]. */
static void plain_fixed(const pq_colw *w, const fr_column *c, int64_t row, uint8_t *tmp)
{
    switch (w->type.id) {
    case FR_T_FLOAT: memcpy(tmp, c->values + 4 * row, 4); break;
    case FR_T_DOUBLE: memcpy(tmp, c->values + 8 * row, 8); break;
    case FR_T_DECIMAL: {
        fr_i128 d = col_i128(c, row);
        if (w->width == 4) fr_put_u32le(tmp, (uint32_t)(int32_t)d);
        else if (w->width == 8) fr_put_u64le(tmp, (uint64_t)(int64_t)d);
        else put_be128(tmp, w->width, d);
        break;
    }
    default: {
        int64_t v = col_int(c, row) * w->map.scale_up;
        if (w->width == 4) fr_put_u32le(tmp, (uint32_t)(int32_t)v);
        else fr_put_u64le(tmp, (uint64_t)v);
    }
    }
}

/* ---- statistics -------------------------------------------------------------------------- */

static int mm_bytes(pq_minmax *mm, const uint8_t *p, size_t n, fr_error *err)
{
    if (n > PQ_STATS_BYTES_MAX) {
        mm->too_long = true;
        return 0;
    }
    if (!mm->has) {
        FR_TRY(fr_buf_append(&mm->smin, p, n, err));
        FR_TRY(fr_buf_append(&mm->smax, p, n, err));
        mm->has = true;
        return 0;
    }
    size_t m = n < mm->smin.len ? n : mm->smin.len;
    int c = m ? memcmp(p, mm->smin.data, m) : 0;
    if (c < 0 || (c == 0 && n < mm->smin.len)) {
        fr_buf_reset(&mm->smin);
        FR_TRY(fr_buf_append(&mm->smin, p, n, err));
    }
    m = n < mm->smax.len ? n : mm->smax.len;
    c = m ? memcmp(p, mm->smax.data, m) : 0;
    if (c > 0 || (c == 0 && n > mm->smax.len)) {
        fr_buf_reset(&mm->smax);
        FR_TRY(fr_buf_append(&mm->smax, p, n, err));
    }
    return 0;
}

static void mm_int(pq_minmax *mm, int64_t v)
{
    if (!mm->has) mm->imin = mm->imax = v, mm->has = true;
    else if (v < mm->imin) mm->imin = v;
    else if (v > mm->imax) mm->imax = v;
}

static void mm_double(pq_minmax *mm, double v)
{
    if (isnan(v)) return;
    if (!mm->has) mm->fmin = mm->fmax = v, mm->has = true;
    else if (v < mm->fmin) mm->fmin = v;
    else if (v > mm->fmax) mm->fmax = v;
}

static void mm_dec(pq_minmax *mm, fr_i128 v)
{
    if (!mm->has) mm->dmin = mm->dmax = v, mm->has = true;
    else if (v < mm->dmin) mm->dmin = v;
    else if (v > mm->dmax) mm->dmax = v;
}

/* Folds the integers of rows [r0, r1) of c (T wide) into mm: the bounds of the range first,
 * without a branch per value, then into mm. */
#define MM_INTS(NAME, T)                                                                     \
    static void NAME(pq_minmax *mm, const fr_column *c, int64_t r0, int64_t r1, bool nulls)  \
    {                                                                                        \
        const T *v = (const T *)(const void *)c->values;                                     \
        int64_t lo = INT64_MAX, hi = INT64_MIN;                                              \
        bool any = false;                                                                    \
        for (int64_t r = r0; r < r1; r++) {                                                  \
            if (nulls && fr_column_is_null(c, r)) continue;                                  \
            int64_t x = v[r];                                                                \
            lo = x < lo ? x : lo;                                                            \
            hi = x > hi ? x : hi;                                                            \
            any = true;                                                                      \
        }                                                                                    \
        if (any) {                                                                           \
            mm_int(mm, lo);                                                                  \
            mm_int(mm, hi);                                                                  \
        }                                                                                    \
    }
MM_INTS(mm_ints8, int8_t)
MM_INTS(mm_ints16, int16_t)
MM_INTS(mm_ints32, int32_t)
MM_INTS(mm_ints64, int64_t)

/* The same for FLOAT and DOUBLE values, NaN left out (as mm_double does). */
#define MM_FLOATS(NAME, T)                                                                   \
    static void NAME(pq_minmax *mm, const fr_column *c, int64_t r0, int64_t r1, bool nulls)  \
    {                                                                                        \
        const T *v = (const T *)(const void *)c->values;                                     \
        double lo = INFINITY, hi = -INFINITY;                                                \
        bool any = false;                                                                    \
        for (int64_t r = r0; r < r1; r++) {                                                  \
            if (nulls && fr_column_is_null(c, r)) continue;                                  \
            double x = v[r];                                                                 \
            if (isnan(x)) continue;                                                          \
            lo = x < lo ? x : lo;                                                            \
            hi = x > hi ? x : hi;                                                            \
            any = true;                                                                      \
        }                                                                                    \
        if (any) {                                                                           \
            mm_double(mm, lo);                                                               \
            mm_double(mm, hi);                                                               \
        }                                                                                    \
    }
MM_FLOATS(mm_floats, float)
MM_FLOATS(mm_doubles, double)

/* Folds the strings or bytes of rows [r0, r1) of c into mm. A value whose first byte lies
 * strictly between those of the bounds changes neither, and is passed over without a
 * comparison. */
static int mm_strings(pq_minmax *mm, const fr_column *c, int64_t r0, int64_t r1, bool nulls,
                      fr_error *err)
{
    for (int64_t r = r0; r < r1; r++) {
        if (nulls && fr_column_is_null(c, r)) continue;
        const uint8_t *p;
        size_t n;
        col_bytes(c, r, &p, &n);
        if (n > 0 && n <= PQ_STATS_BYTES_MAX && mm->has && mm->smin.len > 0 && mm->smax.len > 0 &&
            p[0] > mm->smin.data[0] && p[0] < mm->smax.data[0])
            continue;
        FR_TRY(mm_bytes(mm, p, n, err));
    }
    return 0;
}

/* Folds rows [r0, r1) of c into mm. */
static int mm_update(pq_minmax *mm, const fr_column *c, int64_t r0, int64_t r1, fr_error *err)
{
    fr_type_id id = c->type.id;
    bool nulls = c->validity && c->null_count > 0;
    if (id == FR_T_FLOAT) {
        mm_floats(mm, c, r0, r1, nulls);
        return 0;
    }
    if (id == FR_T_DOUBLE) {
        mm_doubles(mm, c, r0, r1, nulls);
        return 0;
    }
    if (id == FR_T_DECIMAL || id == FR_T_BOOLEAN) {
        for (int64_t r = r0; r < r1; r++) {
            if (nulls && fr_column_is_null(c, r)) continue;
            if (id == FR_T_DECIMAL) mm_dec(mm, col_i128(c, r));
            else mm_int(mm, col_bool(c, r));
        }
        return 0;
    }
    if (fr_type_is_varwidth(&c->type)) return mm_strings(mm, c, r0, r1, nulls, err);
    switch (fr_type_width(&c->type)) {
    case 1: mm_ints8(mm, c, r0, r1, nulls); break;
    case 2: mm_ints16(mm, c, r0, r1, nulls); break;
    case 4: mm_ints32(mm, c, r0, r1, nulls); break;
    default: mm_ints64(mm, c, r0, r1, nulls); break;
    }
    return 0;
}

/* Folds a chunk's min/max into the file's. */
static int mm_merge(pq_minmax *into, const pq_minmax *from, fr_type_id id, fr_error *err)
{
    into->too_long |= from->too_long;
    if (!from->has) return 0;
    if (id == FR_T_FLOAT || id == FR_T_DOUBLE) {
        mm_double(into, from->fmin);
        mm_double(into, from->fmax);
    } else if (id == FR_T_DECIMAL) {
        mm_dec(into, from->dmin);
        mm_dec(into, from->dmax);
    } else if (id == FR_T_STRING || id == FR_T_CHAR || id == FR_T_VARCHAR || id == FR_T_BYTES) {
        FR_TRY(mm_bytes(into, from->smin.data, from->smin.len, err));
        FR_TRY(mm_bytes(into, from->smax.data, from->smax.len, err));
    } else {
        mm_int(into, from->imin);
        mm_int(into, from->imax);
    }
    return 0;
}

static void mm_reset(pq_minmax *mm)
{
    mm->has = mm->too_long = false;
    fr_buf_reset(&mm->smin);
    fr_buf_reset(&mm->smax);
}

/* The PLAIN statistics bytes of one bound (Parquet units) into the writer's arena. */
static int mm_encode(fr_parquet_writer *w, const pq_colw *cw, const pq_minmax *mm, bool is_max,
                     uint8_t **out, uint32_t *len, fr_error *err)
{
    uint8_t tmp[16];
    const uint8_t *src = tmp;
    size_t n = 0;
    switch (cw->map.physical) {
    case PQ_BOOLEAN:
        tmp[0] = (uint8_t)(is_max ? mm->imax : mm->imin);
        n = 1;
        break;
    case PQ_INT32:
    case PQ_INT64: {
        int64_t v = cw->type.id == FR_T_DECIMAL ? (int64_t)(is_max ? mm->dmax : mm->dmin)
                                                : (is_max ? mm->imax : mm->imin) * cw->map.scale_up;
        n = cw->map.physical == PQ_INT32 ? 4 : 8;
        if (n == 4) fr_put_u32le(tmp, (uint32_t)(int32_t)v);
        else fr_put_u64le(tmp, (uint64_t)v);
        break;
    }
    case PQ_FLOAT: {
        /* The spec asks for -0.0 as a zero minimum and +0.0 as a zero maximum. */
        float f = (float)(is_max ? mm->fmax : mm->fmin);
        if (f == 0) f = is_max ? 0.0f : -0.0f;
        memcpy(tmp, &f, 4);
        n = 4;
        break;
    }
    case PQ_DOUBLE: {
        double d = is_max ? mm->fmax : mm->fmin;
        if (d == 0) d = is_max ? 0.0 : -0.0;
        memcpy(tmp, &d, 8);
        n = 8;
        break;
    }
    case PQ_FLBA:
        put_be128(tmp, cw->width, is_max ? mm->dmax : mm->dmin);
        n = (size_t)cw->width;
        break;
    default:
        src = is_max ? mm->smax.data : mm->smin.data;
        n = is_max ? mm->smax.len : mm->smin.len;
    }
    uint8_t *p = fr_arena_alloc(w->arena, n ? n : 1);
    if (!p) return fr_fail(err, FR_ENOMEM, "out of memory keeping statistics");
    if (n) memcpy(p, src, n);
    *out = p;
    *len = (uint32_t)n;
    return 0;
}

/* ---- file output ------------------------------------------------------------------------- */

static int write_all(fr_parquet_writer *w, const void *p, size_t n, fr_error *err)
{
    const uint8_t *b = p;
    while (n > 0) {
        ssize_t k = write(w->fd, b, n);
        if (k < 0) {
            if (errno == EINTR) continue;
            return fr_fail_errno(err, errno, "write %s", w->path);
        }
        b += k;
        n -= (size_t)k;
        w->offset += k;
    }
    return 0;
}

/* Writes the iovcnt pieces of iov (changed: advanced past what was written) in order. */
static int write_iov(fr_parquet_writer *w, struct iovec *iov, int iovcnt, fr_error *err)
{
    while (iovcnt > 0) {
        ssize_t k = writev(w->fd, iov, iovcnt);
        if (k < 0) {
            if (errno == EINTR) continue;
            return fr_fail_errno(err, errno, "write %s", w->path);
        }
        w->offset += k;
        fr_iov_advance(&iov, &iovcnt, (size_t)k);
    }
    return 0;
}

/* ---- early flushes ------------------------------------------------------------------------ */

/* The closing fsync of a file waits for the device to flush what was written (0.02 to 0.27 s
 * for 182 MB in bench_lake_tier); so while the writer compresses and writes, an fdatasync of
 * what is written so far runs in the kernel (Linux AIO, IOCB_CMD_FDSYNC: a kernel worker
 * runs it, no thread of ours), one at a time, after each column chunk, and the closing
 * fsync (which still makes everything durable) finds little left (0.01 to 0.04 s). An
 * early fdatasync that fails fails the file: the kernel reports a write-back error to one
 * fsync of the open file only, which may be that one. Where AIO is not available nothing
 * is started early. */
static void early_sync_reap(fr_parquet_writer *w, bool wait)
{
    if (!w->sync_busy) return;
    struct io_event ev;
    struct timespec zero = {0, 0};
    for (;;) {
        long n = syscall(SYS_io_getevents, w->aio, wait ? 1 : 0, 1, &ev, wait ? NULL : &zero);
        if (n == 1) {
            w->sync_busy = false;
            if ((int64_t)ev.res < 0 && !w->sync_err) w->sync_err = (int)-(int64_t)ev.res;
            return;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && wait) { /* its result is lost: the context goes (which waits for it) */
            syscall(SYS_io_destroy, w->aio);
            w->aio = 0;
            w->sync_busy = false;
            if (!w->sync_err) w->sync_err = EIO;
        }
        return;
    }
}

/* Starts an fdatasync of the file unless one is running; false when none was started. */
static bool early_sync(fr_parquet_writer *w)
{
    early_sync_reap(w, false);
    if (w->sync_busy || w->sync_off) return false;
    if (!w->aio && syscall(SYS_io_setup, 1, &w->aio) < 0) {
        w->aio = 0;
        w->sync_off = true;
        return false;
    }
    memset(&w->sync_cb, 0, sizeof w->sync_cb);
    w->sync_cb.aio_fildes = (uint32_t)w->fd;
    w->sync_cb.aio_lio_opcode = IOCB_CMD_FDSYNC;
    struct iocb *cbs[1] = {&w->sync_cb};
    if (syscall(SYS_io_submit, w->aio, 1, cbs) == 1) w->sync_busy = true;
    else w->sync_off = true;
    return w->sync_busy;
}

/* Waits for a running early fdatasync. The AIO context stays: io_destroy waits tens of
 * milliseconds for the kernel to retire it, so contexts go to the next writer with the
 * writer's buffers (see spares) and are destroyed only when those are dropped. */
static void early_sync_end(fr_parquet_writer *w)
{
    early_sync_reap(w, true);
}

/* ---- dictionary -------------------------------------------------------------------------- */

static uint32_t dict_hash(const uint8_t *p, size_t n)
{
    if (n == 8 || n == 4) {
        uint64_t v = n == 8 ? fr_get_u64le(p) : fr_get_u32le(p);
        v *= 0x9E3779B97F4A7C15ull;
        return (uint32_t)(v >> 32);
    }
    return fr_murmur3_32(p, n, 0x5bd1e995);
}

static void dict_entry(const pq_dict *d, int width, int32_t idx, const uint8_t **p, size_t *n)
{
    if (width > 0) {
        *p = d->plain.data + (size_t)idx * (size_t)width;
        *n = (size_t)width;
    } else {
        const uint8_t *e = d->plain.data + d->offs[idx];
        *n = fr_get_u32le(e);
        *p = e + 4;
    }
}

static int dict_grow(pq_dict *d, int width, fr_error *err)
{
    uint32_t cap = d->cap ? d->cap * 2 : 1024;
    int32_t *slots = fr_calloc(cap, sizeof *slots);
    if (!slots) return fr_fail(err, FR_ENOMEM, "out of memory growing a dictionary");
    for (int32_t i = 0; i < d->count; i++) {
        const uint8_t *p;
        size_t n;
        dict_entry(d, width, i, &p, &n);
        uint32_t s = dict_hash(p, n) & (cap - 1);
        while (slots[s]) s = (s + 1) & (cap - 1);
        slots[s] = i + 1;
    }
    fr_free(d->slots);
    d->slots = slots;
    d->cap = cap;
    return 0;
}

/* Finds or adds the value p[0, n); *idx gets its entry. */
static int dict_put(pq_dict *d, int width, const uint8_t *p, size_t n, uint32_t *idx, fr_error *err)
{
    if ((uint64_t)(d->count + 1) * 2 > d->cap) FR_TRY(dict_grow(d, width, err));
    uint32_t s = dict_hash(p, n) & (d->cap - 1);
    for (;;) {
        int32_t e = d->slots[s];
        if (!e) break;
        const uint8_t *q;
        size_t m;
        dict_entry(d, width, e - 1, &q, &m);
        if (m == n && (n == 0 || memcmp(p, q, n) == 0)) {
            *idx = (uint32_t)(e - 1);
            return 0;
        }
        s = (s + 1) & (d->cap - 1);
    }
    if (width == 0) {
        if ((size_t)d->count + 1 > d->offs_cap) {
            size_t cap = d->offs_cap ? d->offs_cap * 2 : 1024;
            uint32_t *o = fr_realloc(d->offs, cap * sizeof *o);
            if (!o) return fr_fail(err, FR_ENOMEM, "out of memory growing a dictionary");
            d->offs = o;
            d->offs_cap = cap;
        }
        d->offs[d->count] = (uint32_t)d->plain.len;
        uint8_t len[4];
        fr_put_u32le(len, (uint32_t)n);
        FR_TRY(fr_buf_append(&d->plain, len, 4, err));
    }
    FR_TRY(fr_buf_append(&d->plain, p, n, err));
    d->slots[s] = d->count + 1;
    *idx = (uint32_t)d->count++;
    return 0;
}

static void dict_clear(pq_dict *d)
{
    fr_free(d->slots);
    d->slots = NULL;
    d->cap = 0;
    d->count = 0;
    fr_buf_reset(&d->plain);
}

static int bit_width_of(uint32_t max)
{
    int b = 1;
    while (b < 32 && (max >> b)) b++;
    return b;
}

/* ---- pages ------------------------------------------------------------------------------- */

static int encode_page_header(fr_buf *out, int type, size_t usize, size_t csize, int64_t values,
                              int encoding, fr_error *err)
{
    fr_thrift_w tw;
    fr_thrift_w_init(&tw, out, err);
    fr_thrift_w_i32(&tw, 1, type);
    fr_thrift_w_i32(&tw, 2, (int32_t)usize);
    fr_thrift_w_i32(&tw, 3, (int32_t)csize);
    if (type == PQ_PAGE_DATA) {
        fr_thrift_w_struct_begin(&tw, 5);
        fr_thrift_w_i32(&tw, 1, (int32_t)values);
        fr_thrift_w_i32(&tw, 2, encoding);
        fr_thrift_w_i32(&tw, 3, PQ_ENC_RLE);
        fr_thrift_w_i32(&tw, 4, PQ_ENC_RLE);
        fr_thrift_w_struct_end(&tw);
    } else {
        fr_thrift_w_struct_begin(&tw, 7);
        fr_thrift_w_i32(&tw, 1, (int32_t)values);
        fr_thrift_w_i32(&tw, 2, encoding);
        fr_thrift_w_struct_end(&tw);
    }
    return fr_thrift_w_finish(&tw);
}

/* Compresses one page p[0, n) into the writer's scratch and writes its header and body to
 * the file, straight from where they are; returns the sizes. Uncompressed pages are written
 * from p. */
static int write_page(fr_parquet_writer *w, int type, int64_t values, int encoding,
                      const uint8_t *p, size_t n, int64_t *usize, int64_t *csize, fr_error *err)
{
    FR_CHECK(n <= (size_t)FR_PARQUET_PAGE_BYTES_MAX, FR_ELIMIT, err,
             "a Parquet page of %zu bytes exceeds the %d-byte limit", n, FR_PARQUET_PAGE_BYTES_MAX);
    const uint8_t *body = p;
    size_t zlen = n;
    if (w->opts.codec != FR_PARQUET_UNCOMPRESSED) {
        FR_TRY(pq_compress(w->comp, p, n, &w->zpage, err));
        body = w->zpage.data;
        zlen = w->zpage.len;
    }
    fr_buf_reset(&w->header);
    FR_TRY(encode_page_header(&w->header, type, n, zlen, values, encoding, err));
    struct iovec iov[2] = {{w->header.data, w->header.len}, {(void *)body, zlen}};
    FR_TRY(write_iov(w, iov, zlen ? 2 : 1, err));
    *usize = (int64_t)(w->header.len + n);
    *csize = (int64_t)(w->header.len + zlen);
    return 0;
}

/* Rewrites the dictionary indexes of the current page as PLAIN values. */
static int page_undict(pq_colw *cw, fr_error *err)
{
    size_t n = cw->idx.len / 4;
    const uint32_t *idx = (const uint32_t *)(const void *)cw->idx.data;
    for (size_t i = 0; i < n; i++) {
        const uint8_t *p;
        size_t len;
        dict_entry(&cw->dict, cw->width, (int32_t)idx[i], &p, &len);
        if (cw->width == 0) {
            uint8_t l[4];
            fr_put_u32le(l, (uint32_t)len);
            FR_TRY(fr_buf_append(&cw->rg, l, 4, err));
        }
        FR_TRY(fr_buf_append(&cw->rg, p, len, err));
    }
    fr_buf_reset(&cw->idx);
    return 0;
}

static int64_t buffered_bytes(const fr_parquet_writer *w);

/* Asks for transparent huge pages over the whole 2 MiB pages inside p[0, n): the first
 * touch of a row group's buffers then faults once per 2 MiB rather than once per 4 KiB. A
 * hint: where the kernel does not take it, nothing changes. */
static void huge_pages(uint8_t *p, size_t n)
{
    const uintptr_t huge = (uintptr_t)2 << 20;
    uintptr_t a = ((uintptr_t)p + huge - 1) & ~(huge - 1), b = ((uintptr_t)p + n) & ~(huge - 1);
    if (b > a) (void)madvise((void *)a, b - a, MADV_HUGEPAGE);
}

/* Makes room for `extra` more bytes in the row-group buffer of cw. Growing by doubling would
 * copy the buffer at every step; it is sized at once for the column's share of a full row
 * group instead, judged from the share it holds of what is buffered so far (the buffers
 * outlive the row group, so later row groups of the file reuse them as they are). */
static int rg_reserve(const fr_parquet_writer *w, pq_colw *cw, size_t extra, fr_error *err)
{
    if (extra <= cw->rg.cap - cw->rg.len) return 0;
    size_t want = cw->rg.len + extra;
    int64_t buffered = buffered_bytes(w);
    /* After a first slice of rows every column has its share in what is buffered. */
    if (w->rg_rows >= 64 && buffered > 0 && buffered < w->opts.row_group_bytes) {
        double share = (double)want / (double)buffered;
        double full = share * (double)w->opts.row_group_bytes * 1.125;
        if (full > (double)want && full < (double)w->opts.row_group_bytes * 2)
            want = (size_t)full;
    }
    uint8_t *before = cw->rg.data;
    FR_TRY(fr_buf_reserve(&cw->rg, want - cw->rg.len, err));
    if (cw->rg.data != before) huge_pages(cw->rg.data, cw->rg.cap);
    return 0;
}

static int page_push(pq_colw *cw, fr_error *err)
{
    if (cw->npages < cw->pages_cap) return 0;
    int cap = cw->pages_cap ? cw->pages_cap * 2 : 16;
    pq_page_ref *p = fr_realloc(cw->pages, (size_t)cap * sizeof *p);
    if (!p) return fr_fail(err, FR_ENOMEM, "out of memory");
    cw->pages = p;
    cw->pages_cap = cap;
    return 0;
}

/* Bytes of PLAIN values of the current page. */
static size_t plain_len(const pq_colw *cw)
{
    return cw->page_open ? cw->rg.len - cw->page_start - PQ_PAGE_HEAD : 0;
}

/* Opens the current page in the row-group buffer when it is not yet: its head room for the
 * levels is reserved (left unwritten), its values go after it. */
static int page_begin(const fr_parquet_writer *w, pq_colw *cw, fr_error *err)
{
    if (cw->page_open) return 0;
    FR_TRY(rg_reserve(w, cw, PQ_PAGE_HEAD, err));
    cw->page_start = cw->rg.len;
    cw->rg.len += PQ_PAGE_HEAD;
    cw->page_open = true;
    return 0;
}

/* Puts the page's definition levels right before its values (at body in rg) and returns
 * where the page starts. */
static int place_levels(fr_parquet_writer *w, pq_colw *cw, size_t body, size_t *start,
                        fr_error *err)
{
    fr_buf *lv = &w->levels;
    fr_buf_reset(lv);
    FR_TRY(fr_buf_append_zeros(lv, 4, err));
    FR_TRY(pq_rle_encode_u8(cw->defs.data, cw->page_rows, 1, lv, err));
    fr_put_u32le(lv->data, (uint32_t)(lv->len - 4));
    if (lv->len > PQ_PAGE_HEAD) { /* more levels than head room: the values move up */
        size_t shift = lv->len - PQ_PAGE_HEAD;
        FR_TRY(rg_reserve(w, cw, shift, err));
        memmove(cw->rg.data + body + shift, cw->rg.data + body, cw->rg.len - body);
        cw->rg.len += shift;
        body += shift;
    }
    *start = body - lv->len;
    memcpy(cw->rg.data + *start, lv->data, lv->len);
    return 0;
}

/* Finishes the current page of column cw: its definition levels go before its values in
 * the chunk's row-group buffer (dictionary indexes are encoded there first), where the page
 * waits, uncompressed, to be compressed and written with the row group. */
static int flush_page(fr_parquet_writer *w, pq_colw *cw, fr_error *err)
{
    if (cw->page_rows == 0) {
        if (cw->page_open) cw->rg.len = cw->page_start;
        cw->page_open = false;
        return 0;
    }
    bool dict = cw->dict_on;
    if (dict && !cw->dict_checked) {
        /* The first page decides: a dictionary that costs as much as the PLAIN values it
         * replaces is dropped for the whole chunk. */
        cw->dict_checked = true;
        int64_t nidx = (int64_t)(cw->idx.len / 4);
        int64_t idx_bytes = nidx * bit_width_of(cw->dict.count ? (uint32_t)cw->dict.count - 1 : 0) / 8;
        if (cw->page_plain_bytes > 0 &&
            (int64_t)cw->dict.plain.len + idx_bytes >= cw->page_plain_bytes * 3 / 4) {
            FR_TRY(page_undict(cw, err));
            dict_clear(&cw->dict);
            cw->dict_on = dict = false;
        }
    }
    /* A page of nulls alone needs no dictionary (and an empty dictionary page helps no one). */
    if (dict && cw->dict.count == 0) dict = false;
    FR_TRY(page_push(cw, err));
    fr_buf *rg = &cw->rg;
    size_t body = cw->page_start + PQ_PAGE_HEAD, start = body;
    if (dict) {
        uint8_t bw = (uint8_t)bit_width_of(cw->dict.count ? (uint32_t)cw->dict.count - 1 : 0);
        FR_TRY(rg_reserve(w, cw, cw->idx.len + 64, err));
        FR_TRY(fr_buf_append(rg, &bw, 1, err));
        FR_TRY(pq_rle_encode((const uint32_t *)(const void *)cw->idx.data,
                             (int64_t)(cw->idx.len / 4), bw, rg, err));
        cw->chunk_dict = true;
    } else {
        cw->chunk_plain = true;
    }
    if (cw->type.nullable) FR_TRY(place_levels(w, cw, body, &start, err));
    cw->pages[cw->npages++] = (pq_page_ref){.off = start, .len = rg->len - start,
                                            .values = (int32_t)cw->page_rows,
                                            .encoding = dict ? PQ_ENC_RLE_DICTIONARY : PQ_ENC_PLAIN};
    cw->page_open = false;
    cw->chunk_uncompressed += (int64_t)(rg->len - start);
    cw->chunk_values += cw->page_rows;
    cw->chunk_nulls += cw->page_nulls;
    fr_buf_reset(&cw->defs);
    fr_buf_reset(&cw->idx);
    cw->page_rows = cw->page_nulls = cw->page_plain_bytes = cw->page_bits = 0;
    return 0;
}

static int64_t page_bytes(const pq_colw *cw)
{
    return (int64_t)(plain_len(cw) + cw->idx.len + cw->defs.len / 8);
}

/* ---- encoding rows ----------------------------------------------------------------------- */

static int append_defs(pq_colw *cw, const fr_column *c, int64_t r0, int64_t r1, fr_error *err)
{
    if (!cw->type.nullable) return 0;
    size_t n = (size_t)(r1 - r0);
    FR_TRY(fr_buf_reserve(&cw->defs, n, err));
    uint8_t *d = cw->defs.data + cw->defs.len;
    if (!c->validity || c->null_count == 0) {
        memset(d, 1, n);
    } else {
        for (int64_t r = r0; r < r1; r++) {
            bool ok = !fr_column_is_null(c, r);
            d[r - r0] = ok;
            cw->page_nulls += !ok;
        }
    }
    cw->defs.len += n;
    return 0;
}

/* PLAIN-encodes the non-null values of rows [r0, r1) at the end of the open page. */
static int encode_plain(const fr_parquet_writer *w, pq_colw *cw, const fr_column *c, int64_t r0,
                        int64_t r1, fr_error *err)
{
    bool nulls = c->validity && c->null_count > 0;
    int64_t n = r1 - r0;
    fr_buf *out = &cw->rg;
    size_t before = out->len;
    if (cw->width == -1) { /* BOOLEAN: bits, LSB first, continuing across calls */
        FR_TRY(rg_reserve(w, cw, (size_t)n / 8 + 2, err));
        for (int64_t r = r0; r < r1; r++) {
            if (nulls && fr_column_is_null(c, r)) continue;
            if ((cw->page_bits & 7) == 0) out->data[out->len++] = 0;
            if (col_bool(c, r)) out->data[out->len - 1] |= (uint8_t)(1 << (cw->page_bits & 7));
            cw->page_bits++;
        }
        cw->page_plain_bytes = (int64_t)plain_len(cw);
        return 0;
    }
    if (cw->width == 0) {
        size_t bytes = (size_t)(c->offsets[r1] - c->offsets[r0]) + 4 * (size_t)n;
        FR_TRY(rg_reserve(w, cw, bytes, err));
        uint8_t *d = out->data + out->len;
        for (int64_t r = r0; r < r1; r++) {
            if (nulls && fr_column_is_null(c, r)) continue;
            uint32_t len = (uint32_t)(c->offsets[r + 1] - c->offsets[r]);
            fr_put_u32le(d, len);
            if (len) memcpy(d + 4, c->values + c->offsets[r], len);
            d += 4 + len;
        }
        out->len = (size_t)(d - out->data);
        cw->page_plain_bytes += (int64_t)(out->len - before);
        return 0;
    }
    size_t wd = (size_t)cw->width;
    FR_TRY(rg_reserve(w, cw, wd * (size_t)n, err));
    uint8_t *d = out->data + out->len;
    int fw = fr_type_width(&c->type);
    if (!nulls && fw == cw->width && cw->map.scale_up == 1 && c->type.id != FR_T_DECIMAL) {
        memcpy(d, c->values + (size_t)r0 * wd, wd * (size_t)n);
        d += wd * (size_t)n;
    } else {
        for (int64_t r = r0; r < r1; r++) {
            if (nulls && fr_column_is_null(c, r)) continue;
            plain_fixed(cw, c, r, d);
            d += wd;
        }
    }
    out->len = (size_t)(d - out->data);
    cw->page_plain_bytes += (int64_t)(out->len - before);
    return 0;
}

/* Dictionary-encodes rows [r0, r1); stops after the row whose value pushes the dictionary
 * past dict_bytes_max and returns that row + 1 in *stop (r1 when it never does). */
static int encode_dict(fr_parquet_writer *w, pq_colw *cw, const fr_column *c, int64_t r0,
                       int64_t r1, int64_t *stop, fr_error *err)
{
    bool nulls = c->validity && c->null_count > 0;
    FR_TRY(fr_buf_reserve(&cw->idx, 4 * (size_t)(r1 - r0), err));
    uint8_t tmp[16];
    for (int64_t r = r0; r < r1; r++) {
        if (nulls && fr_column_is_null(c, r)) continue;
        const uint8_t *p = tmp;
        size_t n = (size_t)cw->width;
        if (cw->width == 0) col_bytes(c, r, &p, &n);
        else plain_fixed(cw, c, r, tmp);
        uint32_t idx = 0;
        FR_TRY(dict_put(&cw->dict, cw->width, p, n, &idx, err));
        memcpy(cw->idx.data + cw->idx.len, &idx, 4);
        cw->idx.len += 4;
        cw->page_plain_bytes += (int64_t)n + (cw->width == 0 ? 4 : 0);
        if ((int64_t)cw->dict.plain.len > w->opts.dict_bytes_max ||
            (!cw->dict_checked && cw->idx.len == 4 * PQ_DICT_PROBE)) {
            *stop = r + 1;
            return 0;
        }
    }
    *stop = r1;
    return 0;
}

/* After the first PQ_DICT_PROBE values of a chunk: a dictionary that holds nearly every
 * value it saw is dropped at once (the rows so far are rewritten PLAIN), rather than hashing
 * a whole page of distinct values first. */
static int dict_probe(pq_colw *cw, fr_error *err)
{
    if (!cw->dict_on || cw->dict_checked || cw->idx.len != 4 * PQ_DICT_PROBE) return 0;
    if ((int64_t)cw->dict.count * 10 < (int64_t)PQ_DICT_PROBE * 9) return 0;
    FR_TRY(page_undict(cw, err));
    dict_clear(&cw->dict);
    cw->dict_on = false;
    cw->dict_checked = true;
    return 0;
}

/* Adds rows [r0, r1) of column c to the column writer cw. */
static int add_rows(fr_parquet_writer *w, pq_colw *cw, const fr_column *c, int64_t r0, int64_t r1,
                    fr_error *err)
{
    FR_TRY(mm_update(&cw->chunk_mm, c, r0, r1, err));
    while (r0 < r1) {
        int64_t end = r1;
        if (cw->page_rows + (end - r0) > PQ_PAGE_ROWS_MAX) end = r0 + (PQ_PAGE_ROWS_MAX - cw->page_rows);
        int64_t stop = end;
        FR_TRY(page_begin(w, cw, err));
        if (cw->dict_on) FR_TRY(encode_dict(w, cw, c, r0, end, &stop, err));
        else FR_TRY(encode_plain(w, cw, c, r0, end, err));
        FR_TRY(append_defs(cw, c, r0, stop, err));
        cw->page_rows += stop - r0;
        r0 = stop;
        FR_TRY(dict_probe(cw, err));
        if (cw->dict_on && (int64_t)cw->dict.plain.len > w->opts.dict_bytes_max) {
            FR_TRY(flush_page(w, cw, err));
            cw->dict_on = false; /* PLAIN for the rest of the chunk */
        } else if (page_bytes(cw) >= w->opts.page_bytes || cw->page_rows >= PQ_PAGE_ROWS_MAX) {
            FR_TRY(flush_page(w, cw, err));
        }
    }
    return 0;
}

/* ---- row groups -------------------------------------------------------------------------- */

static int64_t buffered_bytes(const fr_parquet_writer *w)
{
    int64_t b = 0;
    for (int i = 0; i < w->ncols; i++) {
        const pq_colw *cw = &w->cols[i];
        b += cw->chunk_uncompressed + page_bytes(cw) + (int64_t)cw->dict.plain.len;
    }
    return b;
}

static int grow_rgs(fr_parquet_writer *w, fr_error *err)
{
    if (w->nrgs < w->rgs_cap) return 0;
    FR_CHECK(w->nrgs < FR_PARQUET_ROW_GROUPS_MAX, FR_ELIMIT, err,
             "%s: more than %d row groups", w->path, FR_PARQUET_ROW_GROUPS_MAX);
    int cap = w->rgs_cap ? w->rgs_cap * 2 : 4;
    pq_chunk_out *chunks = fr_realloc(w->chunks, (size_t)cap * (size_t)w->ncols * sizeof *chunks);
    if (!chunks) return fr_fail(err, FR_ENOMEM, "out of memory");
    w->chunks = chunks;
    int64_t **arrays[] = {&w->rg_rows_of, &w->rg_offsets, &w->rg_bytes, &w->rg_compressed};
    for (size_t i = 0; i < 4; i++) {
        int64_t *a = fr_realloc(*arrays[i], (size_t)cap * sizeof *a);
        if (!a) return fr_fail(err, FR_ENOMEM, "out of memory");
        *arrays[i] = a;
    }
    w->rgs_cap = cap;
    return 0;
}

/* Signed integer and floating-point columns also get the deprecated min/max fields, whose
 * signed order matches theirs; strings, bytes and FIXED_LEN_BYTE_ARRAY decimals do not. */
static bool deprecated_stats_ok(const pq_colw *cw)
{
    int p = cw->map.physical;
    return p == PQ_INT32 || p == PQ_INT64 || p == PQ_FLOAT || p == PQ_DOUBLE || p == PQ_BOOLEAN;
}

/* Compresses and writes the pages of column col's chunk of the row group: its dictionary
 * page first, then its data pages, each page straight from its buffer to the file. */
static int finish_chunk(fr_parquet_writer *w, int col, pq_chunk_out *co, fr_error *err)
{
    pq_colw *cw = &w->cols[col];
    FR_TRY(flush_page(w, cw, err));
    memset(co, 0, sizeof *co);
    co->dict_offset = -1;
    int64_t start = w->offset, usize, csize;
    if (cw->chunk_dict) {
        co->dict_offset = w->offset;
        FR_TRY(write_page(w, PQ_PAGE_DICTIONARY, cw->dict.count, PQ_ENC_PLAIN, cw->dict.plain.data,
                          cw->dict.plain.len, &usize, &csize, err));
        co->uncompressed += usize;
        co->compressed += csize;
    }
    co->data_offset = w->offset;
    for (int i = 0; i < cw->npages; i++) {
        const pq_page_ref *pg = &cw->pages[i];
        FR_TRY(write_page(w, PQ_PAGE_DATA, pg->values, pg->encoding, cw->rg.data + pg->off,
                          pg->len, &usize, &csize, err));
        co->uncompressed += usize;
        co->compressed += csize;
    }
    /* The chunk's bytes start for the disk now, while the next chunks are compressed and
     * written, rather than all at the closing fsync (which still makes them durable): an
     * early fdatasync starts their write-back in the kernel's worker; when one is still
     * running, this thread starts it (a hint: where the file system cannot, the fsync does
     * it all). */
    if (!early_sync(w))
        (void)sync_file_range(w->fd, start, w->offset - start, SYNC_FILE_RANGE_WRITE);
    co->values = cw->chunk_values;
    co->nulls = cw->chunk_nulls;
    co->enc_plain = cw->chunk_plain || cw->chunk_dict;
    co->enc_dict = cw->chunk_dict;
    co->has_minmax = cw->chunk_mm.has && !cw->chunk_mm.too_long;
    if (co->has_minmax) {
        FR_TRY(mm_encode(w, cw, &cw->chunk_mm, false, &co->min, &co->min_len, err));
        FR_TRY(mm_encode(w, cw, &cw->chunk_mm, true, &co->max, &co->max_len, err));
    }
    FR_TRY(mm_merge(&cw->file_mm, &cw->chunk_mm, cw->type.id, err));
    cw->file_values += co->values;
    cw->file_nulls += co->nulls;
    cw->file_bytes += co->compressed;
    /* Reset the chunk state for the next row group (the buffers stay, for reuse). */
    if (cw->rg.len > cw->rg_high) cw->rg_high = cw->rg.len;
    fr_buf_reset(&cw->rg);
    cw->npages = 0;
    cw->chunk_uncompressed = cw->chunk_values = cw->chunk_nulls = 0;
    cw->chunk_plain = cw->chunk_dict = false;
    dict_clear(&cw->dict);
    cw->dict_on = cw->map.physical != PQ_BOOLEAN;
    cw->dict_checked = false;
    mm_reset(&cw->chunk_mm);
    return 0;
}

static int flush_row_group(fr_parquet_writer *w, fr_error *err)
{
    if (w->rg_rows == 0) return 0;
    FR_TRY(grow_rgs(w, err));
    int64_t start = w->offset;
    pq_chunk_out *cos = &w->chunks[(size_t)w->nrgs * (size_t)w->ncols];
    int64_t compressed = 0, uncompressed = 0;
    for (int i = 0; i < w->ncols; i++) {
        FR_TRY(finish_chunk(w, i, &cos[i], err));
        compressed += cos[i].compressed;
        uncompressed += cos[i].uncompressed;
    }
    w->rg_rows_of[w->nrgs] = w->rg_rows;
    w->rg_offsets[w->nrgs] = start;
    w->rg_bytes[w->nrgs] = uncompressed;
    w->rg_compressed[w->nrgs] = compressed;
    w->nrgs++;
    w->rows += w->rg_rows;
    w->bytes_done += uncompressed;
    w->rg_rows = 0;
    return 0;
}

/* ---- footer ------------------------------------------------------------------------------ */

static void write_logical(fr_thrift_w *tw, const pq_colw *cw)
{
    const pq_type_map *m = &cw->map;
    if (m->logical == PQ_LT_NONE) return;
    fr_thrift_w_struct_begin(tw, 10);
    fr_thrift_w_struct_begin(tw, (int16_t)m->logical);
    switch (m->logical) {
    case PQ_LT_DECIMAL:
        fr_thrift_w_i32(tw, 1, cw->type.scale);
        fr_thrift_w_i32(tw, 2, cw->type.precision);
        break;
    case PQ_LT_TIME:
    case PQ_LT_TIMESTAMP:
        fr_thrift_w_bool(tw, 1, cw->type.id == FR_T_TIMESTAMP_LTZ);
        fr_thrift_w_struct_begin(tw, 2);
        fr_thrift_w_struct_begin(tw, (int16_t)m->unit);
        fr_thrift_w_struct_end(tw);
        fr_thrift_w_struct_end(tw);
        break;
    case PQ_LT_INTEGER:
        fr_thrift_w_i8(tw, 1, (int8_t)m->bits);
        fr_thrift_w_bool(tw, 2, true);
        break;
    default:
        break;
    }
    fr_thrift_w_struct_end(tw);
    fr_thrift_w_struct_end(tw);
}

static void write_schema(fr_thrift_w *tw, const fr_parquet_writer *w)
{
    fr_thrift_w_list_begin(tw, 2, FR_TT_STRUCT, w->ncols + 1);
    fr_thrift_w_elem_struct_begin(tw);
    fr_thrift_w_i32(tw, 3, PQ_REQUIRED);
    fr_thrift_w_string(tw, 4, "schema");
    fr_thrift_w_i32(tw, 5, w->ncols);
    fr_thrift_w_struct_end(tw);
    for (int i = 0; i < w->ncols; i++) {
        const pq_colw *cw = &w->cols[i];
        fr_thrift_w_elem_struct_begin(tw);
        fr_thrift_w_i32(tw, 1, cw->map.physical);
        if (cw->map.physical == PQ_FLBA) fr_thrift_w_i32(tw, 2, cw->map.type_length);
        fr_thrift_w_i32(tw, 3, cw->type.nullable ? PQ_OPTIONAL : PQ_REQUIRED);
        fr_thrift_w_string(tw, 4, cw->name);
        if (cw->map.converted >= 0) fr_thrift_w_i32(tw, 6, cw->map.converted);
        if (cw->type.id == FR_T_DECIMAL) {
            fr_thrift_w_i32(tw, 7, cw->type.scale);
            fr_thrift_w_i32(tw, 8, cw->type.precision);
        }
        if (w->field_ids) fr_thrift_w_i32(tw, 9, w->field_ids[i]);
        write_logical(tw, cw);
        fr_thrift_w_struct_end(tw);
    }
}

static void write_chunk_meta(fr_thrift_w *tw, const fr_parquet_writer *w, int col,
                             const pq_chunk_out *co)
{
    const pq_colw *cw = &w->cols[col];
    fr_thrift_w_elem_struct_begin(tw); /* ColumnChunk */
    fr_thrift_w_i64(tw, 2, co->dict_offset >= 0 ? co->dict_offset : co->data_offset);
    fr_thrift_w_struct_begin(tw, 3); /* ColumnMetaData */
    fr_thrift_w_i32(tw, 1, cw->map.physical);
    int encs[3], nenc = 0;
    if (co->enc_plain) encs[nenc++] = PQ_ENC_PLAIN;
    if (cw->type.nullable) encs[nenc++] = PQ_ENC_RLE;
    if (co->enc_dict) encs[nenc++] = PQ_ENC_RLE_DICTIONARY;
    if (nenc == 0) encs[nenc++] = PQ_ENC_PLAIN;
    fr_thrift_w_list_begin(tw, 2, FR_TT_I32, nenc);
    for (int k = 0; k < nenc; k++) fr_thrift_w_elem_i32(tw, encs[k]);
    fr_thrift_w_list_begin(tw, 3, FR_TT_BINARY, 1);
    fr_thrift_w_elem_binary(tw, cw->name, strlen(cw->name));
    fr_thrift_w_i32(tw, 4, w->opts.codec);
    fr_thrift_w_i64(tw, 5, co->values);
    fr_thrift_w_i64(tw, 6, co->uncompressed);
    fr_thrift_w_i64(tw, 7, co->compressed);
    fr_thrift_w_i64(tw, 9, co->data_offset);
    if (co->dict_offset >= 0) fr_thrift_w_i64(tw, 11, co->dict_offset);
    fr_thrift_w_struct_begin(tw, 12); /* Statistics */
    bool dep = co->has_minmax && deprecated_stats_ok(cw);
    if (dep) {
        fr_thrift_w_binary(tw, 1, co->max, co->max_len);
        fr_thrift_w_binary(tw, 2, co->min, co->min_len);
    }
    fr_thrift_w_i64(tw, 3, co->nulls);
    if (co->has_minmax) {
        fr_thrift_w_binary(tw, 5, co->max, co->max_len);
        fr_thrift_w_binary(tw, 6, co->min, co->min_len);
        fr_thrift_w_bool(tw, 7, true);
        fr_thrift_w_bool(tw, 8, true);
    }
    fr_thrift_w_struct_end(tw);
    fr_thrift_w_struct_end(tw);
    fr_thrift_w_struct_end(tw);
}

static int write_footer(fr_parquet_writer *w, fr_error *err)
{
    fr_buf meta;
    fr_buf_init(&meta);
    fr_thrift_w tw;
    fr_thrift_w_init(&tw, &meta, err);
    fr_thrift_w_i32(&tw, 1, 2);
    write_schema(&tw, w);
    fr_thrift_w_i64(&tw, 3, w->rows);
    fr_thrift_w_list_begin(&tw, 4, FR_TT_STRUCT, w->nrgs);
    for (int g = 0; g < w->nrgs; g++) {
        fr_thrift_w_elem_struct_begin(&tw);
        fr_thrift_w_list_begin(&tw, 1, FR_TT_STRUCT, w->ncols);
        for (int i = 0; i < w->ncols; i++)
            write_chunk_meta(&tw, w, i, &w->chunks[(size_t)g * (size_t)w->ncols + (size_t)i]);
        fr_thrift_w_i64(&tw, 2, w->rg_bytes[g]);
        fr_thrift_w_i64(&tw, 3, w->rg_rows_of[g]);
        fr_thrift_w_i64(&tw, 5, w->rg_offsets[g]);
        fr_thrift_w_i64(&tw, 6, w->rg_compressed[g]);
        if (g <= INT16_MAX) fr_thrift_w_i16(&tw, 7, (int16_t)g);
        fr_thrift_w_struct_end(&tw);
    }
    fr_thrift_w_string(&tw, 6, PQ_CREATED_BY);
    fr_thrift_w_list_begin(&tw, 7, FR_TT_STRUCT, w->ncols);
    for (int i = 0; i < w->ncols; i++) {
        fr_thrift_w_elem_struct_begin(&tw); /* ColumnOrder */
        fr_thrift_w_struct_begin(&tw, 1);   /* TYPE_ORDER */
        fr_thrift_w_struct_end(&tw);
        fr_thrift_w_struct_end(&tw);
    }
    int rc = fr_thrift_w_finish(&tw);
    if (rc == 0 && meta.len > FR_PARQUET_FOOTER_BYTES_MAX)
        rc = fr_fail(err, FR_ELIMIT, "%s: footer of %zu bytes exceeds the %d-byte limit", w->path,
                     meta.len, FR_PARQUET_FOOTER_BYTES_MAX);
    uint8_t tail[8];
    fr_put_u32le(tail, (uint32_t)meta.len);
    memcpy(tail + 4, PQ_MAGIC, 4);
    if (rc == 0) rc = write_all(w, meta.data, meta.len, err);
    if (rc == 0) rc = write_all(w, tail, 8, err);
    fr_buf_free(&meta);
    return rc;
}

/* ---- memory kept between writers ------------------------------------------------------- */

/* The row-group buffers and the compressor of a finished writer are kept for the next
 * writer of as many columns: a table tiered round after round, file after file, then fills
 * memory that is already there instead of faulting in (and zeroing) a fresh row group's
 * worth every time, which cost about a fifth of a tiering round's CPU. Process-wide, under
 * spare_mu: at most PQ_SPARES sets, holding at most PQ_SPARE_BYTES_MAX bytes that their
 * writers filled (capacity never touched costs no memory); the oldest set goes first. */
#define PQ_SPARES 2
#define PQ_SPARE_BYTES_MAX ((size_t)320 << 20)

typedef struct pq_spare {
    int ncols;
    fr_buf *rgs;   /* ncols emptied row-group buffers */
    size_t *highs; /* what each has held */
    size_t bytes;  /* their sum */
    pq_compressor *comp;
    int codec, level;
    aio_context_t aio; /* 0: none; idle (nothing in flight) */
} pq_spare;

static pthread_mutex_t spare_mu = PTHREAD_MUTEX_INITIALIZER;
static pq_spare spares[PQ_SPARES];
static int nspares;
static size_t spare_bytes;

static void spare_free(pq_spare *sp)
{
    for (int i = 0; sp->rgs && i < sp->ncols; i++) fr_buf_free(&sp->rgs[i]);
    fr_free(sp->rgs);
    fr_free(sp->highs);
    pq_compressor_free(sp->comp);
    if (sp->aio) syscall(SYS_io_destroy, sp->aio);
    memset(sp, 0, sizeof *sp);
}

/* Gives w the newest kept set of its column count, if any. */
static void spare_take(fr_parquet_writer *w)
{
    pq_spare sp = {0};
    pthread_mutex_lock(&spare_mu);
    for (int i = nspares - 1; i >= 0; i--) {
        if (spares[i].ncols != w->ncols) continue;
        sp = spares[i];
        spare_bytes -= sp.bytes;
        memmove(&spares[i], &spares[i + 1], (size_t)(nspares - i - 1) * sizeof *spares);
        nspares--;
        break;
    }
    pthread_mutex_unlock(&spare_mu);
    if (!sp.rgs) return;
    for (int i = 0; i < w->ncols; i++) {
        w->cols[i].rg = sp.rgs[i];
        w->cols[i].rg_high = sp.highs[i];
        fr_buf_init(&sp.rgs[i]);
    }
    if (sp.comp && sp.codec == (int)w->opts.codec && sp.level == w->opts.zstd_level) {
        w->comp = sp.comp;
        sp.comp = NULL;
    }
    w->aio = sp.aio;
    sp.aio = 0;
    spare_free(&sp);
}

/* Keeps w's row-group buffers and compressor for a later writer (they leave w), unless
 * they would hold too much; older sets make room. */
static void spare_give(fr_parquet_writer *w)
{
    if (!w->cols) return;
    pq_spare sp = {.ncols = w->ncols, .codec = (int)w->opts.codec, .level = w->opts.zstd_level};
    for (int i = 0; i < w->ncols; i++) {
        size_t high = w->cols[i].rg_high > w->cols[i].rg.len ? w->cols[i].rg_high : w->cols[i].rg.len;
        sp.bytes += high;
    }
    if (sp.bytes == 0 || sp.bytes > PQ_SPARE_BYTES_MAX) return;
    sp.rgs = fr_calloc((size_t)w->ncols, sizeof *sp.rgs);
    sp.highs = fr_calloc((size_t)w->ncols, sizeof *sp.highs);
    if (!sp.rgs || !sp.highs) {
        spare_free(&sp);
        return;
    }
    for (int i = 0; i < w->ncols; i++) {
        pq_colw *cw = &w->cols[i];
        sp.highs[i] = cw->rg_high > cw->rg.len ? cw->rg_high : cw->rg.len;
        sp.rgs[i] = cw->rg;
        sp.rgs[i].len = 0;
        fr_buf_init(&cw->rg);
    }
    sp.comp = w->comp;
    w->comp = NULL;
    if (!w->sync_busy) { /* early_sync_end reaped what it could */
        sp.aio = w->aio;
        w->aio = 0;
    }
    pq_spare old[PQ_SPARES];
    int nold = 0;
    pthread_mutex_lock(&spare_mu);
    while (nspares > 0 && (nspares == PQ_SPARES || spare_bytes + sp.bytes > PQ_SPARE_BYTES_MAX)) {
        old[nold++] = spares[0];
        spare_bytes -= spares[0].bytes;
        memmove(&spares[0], &spares[1], (size_t)(nspares - 1) * sizeof *spares);
        nspares--;
    }
    spares[nspares++] = sp;
    spare_bytes += sp.bytes;
    pthread_mutex_unlock(&spare_mu);
    for (int i = 0; i < nold; i++) spare_free(&old[i]); /* freed outside the lock */
}

/* ---- public API -------------------------------------------------------------------------- */

static void colw_free(pq_colw *cw)
{
    fr_buf_free(&cw->defs);
    fr_buf_free(&cw->idx);
    fr_buf_free(&cw->rg);
    fr_free(cw->pages);
    dict_clear(&cw->dict);
    fr_buf_free(&cw->dict.plain);
    fr_free(cw->dict.offs);
    fr_buf_free(&cw->chunk_mm.smin);
    fr_buf_free(&cw->chunk_mm.smax);
    fr_buf_free(&cw->file_mm.smin);
    fr_buf_free(&cw->file_mm.smax);
}

static void writer_free(fr_parquet_writer *w)
{
    if (!w) return;
    early_sync_end(w); /* before the file goes: the kernel may still be syncing it */
    if (w->fd >= 0) close(w->fd);
    spare_give(w);
    if (w->aio) syscall(SYS_io_destroy, w->aio); /* not kept (it waits for what runs) */
    for (int i = 0; w->cols && i < w->ncols; i++) colw_free(&w->cols[i]);
    fr_free(w->cols);
    pq_compressor_free(w->comp);
    fr_buf_free(&w->zpage);
    fr_buf_free(&w->levels);
    fr_buf_free(&w->header);
    fr_free(w->chunks);
    fr_free(w->rg_rows_of);
    fr_free(w->rg_offsets);
    fr_free(w->rg_bytes);
    fr_free(w->rg_compressed);
    fr_arena_free(w->arena);
    fr_schema_free(w->schema);
    fr_free(w->field_ids);
    fr_free(w->path);
    fr_free(w);
}

static int check_options(const fr_parquet_options *o, fr_error *err)
{
    FR_CHECK(o->row_group_bytes > 0 && o->page_bytes > 0 && o->dict_bytes_max >= 0, FR_EINVAL, err,
             "Parquet options: row group, page and dictionary sizes must be positive");
    FR_CHECK(o->page_bytes <= FR_PARQUET_PAGE_BYTES_MAX / 2, FR_EINVAL, err,
             "Parquet options: page size %lld exceeds %d bytes", (long long)o->page_bytes,
             FR_PARQUET_PAGE_BYTES_MAX / 2);
    FR_CHECK(o->codec == FR_PARQUET_UNCOMPRESSED || o->codec == FR_PARQUET_SNAPPY ||
                 o->codec == FR_PARQUET_ZSTD, FR_EINVAL, err, "Parquet options: unknown codec %d",
             (int)o->codec);
    FR_CHECK(o->codec != FR_PARQUET_ZSTD || (o->zstd_level >= -7 && o->zstd_level <= 22), FR_EINVAL,
             err, "Parquet options: ZSTD level %d outside -7..22", o->zstd_level);
    return 0;
}

int fr_parquet_writer_open(const char *path, const fr_schema *schema, const int32_t *field_ids,
                           const fr_parquet_options *opts, fr_parquet_writer **out,
                           fr_error *err)
{
    fr_parquet_options o;
    if (opts) o = *opts;
    else fr_parquet_options_default(&o);
    FR_TRY(check_options(&o, err));
    int ncols = fr_schema_num_fields(schema);
    FR_CHECK(ncols > 0, FR_EINVAL, err, "%s: a Parquet file needs at least one column", path);
    fr_parquet_writer *w = fr_calloc(1, sizeof *w);
    if (!w) return fr_fail(err, FR_ENOMEM, "out of memory");
    int rc = 0;
    w->fd = -1;
    w->opts = o;
    w->ncols = ncols;
    w->path = fr_strdup(path);
    w->schema = fr_schema_clone(schema);
    w->cols = fr_calloc((size_t)ncols, sizeof *w->cols);
    w->arena = fr_arena_new(4096);
    if (field_ids) {
        w->field_ids = fr_malloc((size_t)ncols * sizeof *w->field_ids);
        if (w->field_ids) memcpy(w->field_ids, field_ids, (size_t)ncols * sizeof *w->field_ids);
    }
    if (!w->path || !w->schema || !w->cols || !w->arena || (field_ids && !w->field_ids)) {
        rc = fr_fail(err, FR_ENOMEM, "out of memory");
        goto fail;
    }
    for (int i = 0; i < ncols; i++) {
        pq_colw *cw = &w->cols[i];
        const fr_field *f = fr_schema_field(w->schema, i);
        cw->name = f->name;
        cw->type = f->type;
        pq_type_of(&f->type, &cw->map);
        cw->width = plain_width(&cw->map);
        cw->dict_on = cw->map.physical != PQ_BOOLEAN;
    }
    spare_take(w);
    if (!w->comp) FR_GOTO(pq_compressor_new(o.codec, o.zstd_level, &w->comp, err));
    w->fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (w->fd < 0) {
        rc = fr_fail_errno(err, errno, "create %s", path);
        goto fail;
    }
    rc = write_all(w, PQ_MAGIC, 4, err);
    if (rc < 0) {
        fr_parquet_writer_abort(w);
        return rc;
    }
    *out = w;
    return 0;
fail:
    writer_free(w);
    return rc;
}

/* Rows to encode before the row-group size is checked again: what fits the room left in the
 * row group at the bytes per row seen so far, within [64, PQ_SLICE_ROWS]. */
static int64_t slice_rows(const fr_parquet_writer *w)
{
    int64_t done = w->rows + w->rg_rows;
    if (done == 0) return 1024;
    int64_t per_row = (w->bytes_done + buffered_bytes(w)) / done + 1;
    int64_t room = w->opts.row_group_bytes - buffered_bytes(w);
    int64_t n = room / per_row + 1;
    n = n < 64 ? 64 : n > PQ_SLICE_ROWS ? PQ_SLICE_ROWS : n;
    /* A row group must fit one batch of the reader. */
    return n < FR_BATCH_ROWS_MAX - w->rg_rows ? n : FR_BATCH_ROWS_MAX - w->rg_rows;
}

/* Adds rows whose column i is a's column i for i < na and b's column i - na after. */
static int write_rows(fr_parquet_writer *w, const fr_batch *a, int na, const fr_batch *b,
                      int64_t rows, fr_error *err)
{
    for (int64_t r0 = 0, r1; r0 < rows; r0 = r1) {
        r1 = r0 + slice_rows(w);
        if (r1 > rows) r1 = rows;
        for (int i = 0; i < w->ncols; i++) {
            const fr_column *c = i < na ? fr_batch_column(a, i) : fr_batch_column(b, i - na);
            int rc = add_rows(w, &w->cols[i], c, r0, r1, err);
            if (rc < 0) {
                w->failed = true;
                fr_error_wrap(err, "%s, column %s", w->path, w->cols[i].name);
                return rc;
            }
        }
        w->rg_rows += r1 - r0;
        if (buffered_bytes(w) >= w->opts.row_group_bytes || w->rg_rows >= FR_BATCH_ROWS_MAX) {
            int rc = flush_row_group(w, err);
            if (rc < 0) {
                w->failed = true;
                return rc;
            }
        }
    }
    return 0;
}

int fr_parquet_writer_write(fr_parquet_writer *w, const fr_batch *b, fr_error *err)
{
    FR_CHECK(!w->failed, FR_ESTATE, err, "%s: the writer failed before; abort it", w->path);
    FR_CHECK(fr_schema_equal(fr_batch_schema(b), w->schema), FR_EINVAL, err,
             "%s: the batch's schema differs from the file's", w->path);
    return write_rows(w, b, w->ncols, NULL, fr_batch_num_rows(b), err);
}

/* Whether field f of a batch is the writer's field i (name, type, nullability). */
static bool same_field(const fr_field *f, const fr_field *mine)
{
    return strcmp(f->name, mine->name) == 0 && fr_type_equal(&f->type, &mine->type) &&
           f->type.nullable == mine->type.nullable;
}

int fr_parquet_writer_write2(fr_parquet_writer *w, const fr_batch *a, const fr_batch *b,
                             fr_error *err)
{
    FR_CHECK(!w->failed, FR_ESTATE, err, "%s: the writer failed before; abort it", w->path);
    int na = fr_batch_num_columns(a), nb = fr_batch_num_columns(b);
    FR_CHECK(na + nb == w->ncols && fr_batch_num_rows(a) == fr_batch_num_rows(b), FR_EINVAL,
             err, "%s: batches of %d and %d columns, %lld and %lld rows, for a file of %d "
             "columns", w->path, na, nb, (long long)fr_batch_num_rows(a),
             (long long)fr_batch_num_rows(b), w->ncols);
    for (int i = 0; i < w->ncols; i++) {
        const fr_field *f = i < na ? fr_schema_field(fr_batch_schema(a), i)
                                   : fr_schema_field(fr_batch_schema(b), i - na);
        FR_CHECK(same_field(f, fr_schema_field(w->schema, i)), FR_EINVAL, err,
                 "%s: column %d of the batches ('%s') differs from the file's ('%s')", w->path,
                 i, f->name, fr_schema_field(w->schema, i)->name);
    }
    return write_rows(w, a, na, b, fr_batch_num_rows(a), err);
}

int64_t fr_parquet_writer_bytes(const fr_parquet_writer *w)
{
    return w->bytes_done + buffered_bytes(w);
}

void fr_parquet_file_info_free(fr_parquet_file_info *info)
{
    if (!info) return;
    fr_free(info->cols);
    fr_free(info->row_group_offsets);
    fr_free(info);
}

/* The file-level statistics of a column as firth values; string bounds are copied into
 * `strings` memory (allocated with the info). */
static fr_value mm_value(const pq_colw *cw, const pq_minmax *mm, bool is_max, uint8_t **strings)
{
    fr_type t = cw->type;
    switch (t.id) {
    case FR_T_BOOLEAN: return fr_value_bool(t, (is_max ? mm->imax : mm->imin) != 0);
    case FR_T_FLOAT:
    case FR_T_DOUBLE: return fr_value_double(t, is_max ? mm->fmax : mm->fmin);
    case FR_T_DECIMAL: return fr_value_decimal(t, is_max ? mm->dmax : mm->dmin);
    case FR_T_CHAR:
    case FR_T_VARCHAR:
    case FR_T_STRING:
    case FR_T_BYTES: {
        const fr_buf *s = is_max ? &mm->smax : &mm->smin;
        uint8_t *p = *strings;
        if (s->len) memcpy(p, s->data, s->len);
        *strings += s->len;
        return fr_value_str(t, p, s->len);
    }
    default: return fr_value_int(t, is_max ? mm->imax : mm->imin);
    }
}

static int make_info(fr_parquet_writer *w, fr_parquet_file_info **out, fr_error *err)
{
    size_t strings = 0;
    for (int i = 0; i < w->ncols; i++)
        strings += w->cols[i].file_mm.smin.len + w->cols[i].file_mm.smax.len;
    fr_parquet_file_info *info = fr_calloc(1, sizeof *info);
    if (!info) return fr_fail(err, FR_ENOMEM, "out of memory");
    /* The column array and the string bounds share one allocation, so that
     * fr_parquet_file_info_free frees both with the array. */
    size_t colbytes = (size_t)w->ncols * sizeof *info->cols;
    info->cols = fr_calloc(1, colbytes + strings + 1);
    info->row_group_offsets = fr_malloc((size_t)(w->nrgs ? w->nrgs : 1) * sizeof(int64_t));
    if (!info->cols || !info->row_group_offsets) {
        fr_parquet_file_info_free(info);
        return fr_fail(err, FR_ENOMEM, "out of memory");
    }
    uint8_t *sp = (uint8_t *)info->cols + colbytes;
    info->rows = w->rows;
    info->file_bytes = w->offset;
    info->ncols = w->ncols;
    info->nrow_groups = w->nrgs;
    if (w->nrgs) memcpy(info->row_group_offsets, w->rg_offsets, (size_t)w->nrgs * sizeof(int64_t));
    for (int i = 0; i < w->ncols; i++) {
        const pq_colw *cw = &w->cols[i];
        fr_lake_col_stats *s = &info->cols[i];
        s->field_id = w->field_ids ? w->field_ids[i] : -1;
        s->values = cw->file_values;
        s->nulls = cw->file_nulls;
        s->bytes = cw->file_bytes;
        s->has_minmax = cw->file_mm.has && !cw->file_mm.too_long;
        if (s->has_minmax) {
            s->min = mm_value(cw, &cw->file_mm, false, &sp);
            s->max = mm_value(cw, &cw->file_mm, true, &sp);
        }
    }
    *out = info;
    return 0;
}

int fr_parquet_writer_close(fr_parquet_writer *w, fr_parquet_file_info **info, fr_error *err)
{
    int rc = 0;
    if (info) *info = NULL;
    if (w->failed) {
        rc = fr_fail(err, FR_ESTATE, "%s: the writer failed before", w->path);
        goto fail;
    }
    FR_GOTO(flush_row_group(w, err));
    FR_GOTO(write_footer(w, err));
    early_sync_end(w);
    if (w->sync_err) {
        rc = fr_fail_errno(err, w->sync_err, "fsync %s", w->path);
        goto fail;
    }
    if (fsync(w->fd) < 0) {
        rc = fr_fail_errno(err, errno, "fsync %s", w->path);
        goto fail;
    }
    if (close(w->fd) < 0) {
        w->fd = -1;
        rc = fr_fail_errno(err, errno, "close %s", w->path);
        goto fail;
    }
    w->fd = -1;
    if (info) FR_GOTO(make_info(w, info, err));
    writer_free(w);
    return 0;
fail:
    fr_parquet_writer_abort(w);
    return rc;
}

void fr_parquet_writer_abort(fr_parquet_writer *w)
{
    if (!w) return;
    if (w->fd >= 0) {
        close(w->fd);
        w->fd = -1;
    }
    unlink(w->path);
    writer_free(w);
}
