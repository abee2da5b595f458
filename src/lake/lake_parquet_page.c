/* lake_parquet_page.c — the page decoders of the Parquet reader: page headers, dictionary
 * pages, data pages v1 and v2, definition levels, and the value encodings PLAIN,
 * PLAIN_DICTIONARY / RLE_DICTIONARY, RLE (booleans), DELTA_BINARY_PACKED,
 * DELTA_LENGTH_BYTE_ARRAY and BYTE_STREAM_SPLIT, into Arrow-layout buffers.
 *
 * Invariants: a page's values land at rows [row, row + num_values) of the output, which the
 * chunk must fill exactly (no more pages than rows, no fewer); every size in a page header is
 * checked against the chunk's bytes, every count against the page's bytes, every dictionary
 * index against the dictionary, and a page's CRC when it has one. Fixed-width PLAIN values
 * are copied in bulk (memcpy when the widths agree) and spread to their rows backwards when
 * the page has nulls. */
#include <math.h>

#include "lake/lake_parquet_page.h"

/* ---- columns ----------------------------------------------------------------------------- */

void pq_colr_init(pq_colr *c, const pq_schema_elem *e, const fr_type *t)
{
    c->type = *t;
    c->physical = e->type;
    c->type_length = e->type_length;
    c->field_id = e->field_id;
    c->dw = t->id == FR_T_BOOLEAN ? -1 : fr_type_width(t);
    switch (e->type) {
    case PQ_BOOLEAN: c->pw = -1; break;
    case PQ_INT32: case PQ_FLOAT: c->pw = 4; break;
    case PQ_INT64: case PQ_DOUBLE: c->pw = 8; break;
    case PQ_FLBA: c->pw = e->type_length; break;
    default: c->pw = 0;
    }
}

void pq_scratch_free(pq_scratch *s)
{
    fr_buf_free(&s->page);
    fr_buf_free(&s->dict);
    fr_buf_free(&s->dictv);
    fr_buf_free(&s->defs);
    fr_buf_free(&s->idx);
    fr_buf_free(&s->dense);
}

fr_i128 pq_be_to_i128(const uint8_t *p, size_t n)
{
    fr_i128 v = (int8_t)p[0]; /* sign-extends */
    for (size_t i = 1; i < n; i++) v = (fr_i128)((unsigned __int128)v << 8) | p[i];
    return v;
}

static int bad(fr_error *err, const char *fmt, const char *detail)
{
    return fr_fail(err, FR_ECORRUPT, fmt, detail);
}

/* Converts k PLAIN fixed-width values of column c at src into firth form at dst. */
static void convert_fixed(const pq_colr *c, const uint8_t *src, int64_t k, uint8_t *dst)
{
    size_t n = (size_t)k;
    if (c->type.id == FR_T_DECIMAL) {
        fr_i128 *d = (fr_i128 *)(void *)dst;
        fr_i128 v;
        for (size_t i = 0; i < n; i++) {
            if (c->pw == 4) v = (int32_t)fr_get_u32le(src + 4 * i);
            else if (c->pw == 8) v = (int64_t)fr_get_u64le(src + 8 * i);
            else v = pq_be_to_i128(src + i * (size_t)c->pw, (size_t)c->pw);
            memcpy(&d[i], &v, 16);
        }
        return;
    }
    if (c->pw == c->dw) {
        memcpy(dst, src, n * (size_t)c->pw);
        return;
    }
    /* INT32 into TINYINT or SMALLINT. */
    for (size_t i = 0; i < n; i++) {
        int32_t v = (int32_t)fr_get_u32le(src + 4 * i);
        if (c->dw == 1) dst[i] = (uint8_t)(int8_t)v;
        else {
            int16_t s = (int16_t)v;
            memcpy(dst + 2 * i, &s, 2);
        }
    }
}

/* ---- output ------------------------------------------------------------------------------ */

typedef struct pq_out {
    const pq_colr *c;
    int64_t rows, row;
    uint8_t *validity;
    int64_t nulls;
    uint8_t *values;    /* fixed values or the BOOLEAN bitmap */
    int32_t *offsets;
    uint8_t *data;      /* var-width bytes */
    size_t data_len, data_cap;
} pq_out;

static int out_reserve(pq_out *o, size_t extra, fr_error *err)
{
    if (extra <= o->data_cap - o->data_len) return 0;
    FR_CHECK(o->data_len + extra <= INT32_MAX, FR_ELIMIT, err,
             "more than 2 GiB of strings in one row group");
    size_t cap = o->data_cap ? o->data_cap : 4096;
    while (cap < o->data_len + extra) cap *= 2;
    if (cap > INT32_MAX) cap = INT32_MAX;
    uint8_t *d = fr_realloc(o->data, cap);
    if (!d) return fr_fail(err, FR_ENOMEM, "out of memory for %zu bytes of strings", cap);
    o->data = d;
    o->data_cap = cap;
    return 0;
}

static void set_bits(uint8_t *bm, int64_t from, int64_t n)
{
    int64_t i = from, end = from + n;
    while (i < end && (i & 7)) bm[i >> 3] |= (uint8_t)(1 << (i & 7)), i++;
    if (i < end && end - i >= 8) {
        int64_t bytes = (end - i) >> 3;
        memset(bm + (i >> 3), 0xFF, (size_t)bytes);
        i += bytes << 3;
    }
    while (i < end) bm[i >> 3] |= (uint8_t)(1 << (i & 7)), i++;
}

/* Marks the validity of the page's rows from defs (NULL: all valid). */
static void out_validity(pq_out *o, const uint8_t *defs, int64_t n)
{
    if (!o->validity) return;
    if (!defs) {
        set_bits(o->validity, o->row, n);
        return;
    }
    for (int64_t i = 0; i < n; i++)
        if (defs[i]) o->validity[(o->row + i) >> 3] |= (uint8_t)(1 << ((o->row + i) & 7));
}

/* Spreads k dense fixed-width values at the page's first rows to the rows defs marks valid
 * (backwards, so nothing is overwritten before it moves), zeroing null slots. */
static void spread_fixed(pq_out *o, const uint8_t *defs, int64_t n, int64_t k)
{
    size_t w = (size_t)o->c->dw;
    uint8_t *base = o->values + (size_t)o->row * w;
    int64_t j = k - 1;
    for (int64_t i = n - 1; i >= 0; i--) {
        if (defs[i]) {
            if (j != i) memmove(base + (size_t)i * w, base + (size_t)j * w, w);
            j--;
        } else {
            memset(base + (size_t)i * w, 0, w);
        }
    }
}

/* Places k dense BOOLEAN values (bytes 0/1) at the valid rows of the page. */
static void place_bools(pq_out *o, const uint8_t *dense, const uint8_t *defs, int64_t n)
{
    int64_t j = 0;
    for (int64_t i = 0; i < n; i++) {
        if (defs && !defs[i]) continue;
        if (dense[j++]) o->values[(o->row + i) >> 3] |= (uint8_t)(1 << ((o->row + i) & 7));
    }
}

/* ---- dictionaries ------------------------------------------------------------------------ */

typedef struct pq_dict_r {
    bool present;
    int32_t count;
    const uint8_t *fixed;      /* count entries of dw bytes (BOOLEAN: one byte each) */
    const uint32_t *offs, *lens; /* var-width entries in the dictionary page */
    const uint8_t *base;
} pq_dict_r;

static int decode_dict(const pq_colr *c, const uint8_t *p, size_t n, int32_t count, pq_scratch *s,
                       pq_dict_r *d, fr_error *err)
{
    fr_buf_reset(&s->dictv);
    d->count = count;
    if (c->pw == 0 || (c->dw == 0 && c->pw > 0)) { /* entries of var-width output */
        /* Every entry takes at least 4 bytes (a length, or a FIXED_LEN_BYTE_ARRAY value). */
        size_t least = c->pw > 0 ? (size_t)c->pw : 4;
        if ((size_t)count > n / least) return bad(err, "dictionary page: %s", "too few bytes");
        FR_TRY(fr_buf_reserve(&s->dictv, 8 * (size_t)count + 8, err));
        uint32_t *offs = (uint32_t *)(void *)s->dictv.data, *lens = offs + count;
        size_t pos = 0;
        for (int32_t i = 0; i < count; i++) {
            uint32_t len;
            if (c->pw > 0) {
                len = (uint32_t)c->pw;
            } else {
                if (n - pos < 4) return bad(err, "dictionary page: %s", "truncated length");
                len = fr_get_u32le(p + pos);
                pos += 4;
            }
            if (len > n - pos) return bad(err, "dictionary page: %s", "value runs past the page");
            offs[i] = (uint32_t)pos;
            lens[i] = len;
            pos += len;
        }
        d->offs = offs;
        d->lens = lens;
        d->base = p;
    } else if (c->pw == -1) {
        if ((size_t)count > n * 8) return bad(err, "dictionary page: %s", "too few bytes");
        FR_TRY(fr_buf_reserve(&s->dictv, (size_t)count + 1, err));
        for (int32_t i = 0; i < count; i++) s->dictv.data[i] = (p[i >> 3] >> (i & 7)) & 1;
        d->fixed = s->dictv.data;
    } else {
        if ((size_t)count > n / (size_t)c->pw) return bad(err, "dictionary page: %s", "too few bytes");
        FR_TRY(fr_buf_reserve(&s->dictv, (size_t)count * (size_t)c->dw + 16, err));
        convert_fixed(c, p, count, s->dictv.data);
        d->fixed = s->dictv.data;
    }
    d->present = true;
    return 0;
}

/* ---- value decoders ---------------------------------------------------------------------- */

/* The page's values: n rows, k of them valid, defs (NULL when all are) marking which. */
typedef struct pq_page_vals {
    const uint8_t *p;
    size_t len;
    int64_t n, k;
    const uint8_t *defs;
} pq_page_vals;

static int put_var(pq_out *o, const uint8_t *p, size_t n, fr_error *err)
{
    FR_TRY(out_reserve(o, n, err));
    if (n) memcpy(o->data + o->data_len, p, n);
    o->data_len += n;
    return 0;
}

/* PLAIN variable-width values (a 4-byte length and the bytes, or FIXED_LEN_BYTE_ARRAY values
 * of the type's length) appended for the valid rows, and the offsets of every row. */
static int plain_var(pq_out *o, const pq_page_vals *v, fr_error *err)
{
    size_t pos = 0;
    int32_t *offs = o->offsets + o->row;
    for (int64_t i = 0; i < v->n; i++) {
        if (!v->defs || v->defs[i]) {
            uint32_t len;
            if (o->c->pw > 0) {
                len = (uint32_t)o->c->pw;
            } else {
                if (v->len - pos < 4) return bad(err, "PLAIN %s: truncated length", "BYTE_ARRAY");
                len = fr_get_u32le(v->p + pos);
                pos += 4;
            }
            if (len > v->len - pos) return bad(err, "PLAIN %s: value runs past the page", "BYTE_ARRAY");
            FR_TRY(put_var(o, v->p + pos, len, err));
            pos += len;
        }
        offs[i + 1] = (int32_t)o->data_len;
    }
    return 0;
}

static int plain_fixed_vals(pq_out *o, const pq_page_vals *v, pq_scratch *s, fr_error *err)
{
    const pq_colr *c = o->c;
    if (c->pw == -1) {
        if ((size_t)v->k > v->len * 8) return bad(err, "PLAIN %s: too few bytes", "BOOLEAN");
        fr_buf_reset(&s->dense);
        FR_TRY(fr_buf_reserve(&s->dense, (size_t)v->k + 1, err));
        for (int64_t j = 0; j < v->k; j++) s->dense.data[j] = (v->p[j >> 3] >> (j & 7)) & 1;
        place_bools(o, s->dense.data, v->defs, v->n);
        return 0;
    }
    if ((size_t)v->k > v->len / (size_t)c->pw)
        return bad(err, "PLAIN %s: too few bytes for the values", "page");
    convert_fixed(c, v->p, v->k, o->values + (size_t)o->row * (size_t)c->dw);
    if (v->defs && v->k < v->n) spread_fixed(o, v->defs, v->n, v->k);
    return 0;
}

/* Gathers k dictionary entries by index into the output rows. */
static int dict_vals(pq_out *o, const pq_page_vals *v, const pq_dict_r *d, pq_scratch *s, fr_error *err)
{
    if (!d->present) return bad(err, "%s: dictionary-encoded page without a dictionary page", "chunk");
    if (v->k == 0) {
        if (o->c->dw == 0)
            for (int64_t i = 0; i < v->n; i++) o->offsets[o->row + i + 1] = (int32_t)o->data_len;
        else if (o->c->dw > 0)
            memset(o->values + (size_t)o->row * (size_t)o->c->dw, 0, (size_t)v->n * (size_t)o->c->dw);
        return 0;
    }
    if (v->len < 1) return bad(err, "%s: dictionary page without its bit width", "data page");
    int bw = v->p[0];
    if (bw > 32) return bad(err, "%s: dictionary index bit width above 32", "data page");
    fr_buf_reset(&s->idx);
    FR_TRY(fr_buf_reserve(&s->idx, 4 * (size_t)v->k, err));
    uint32_t *idx = (uint32_t *)(void *)s->idx.data;
    FR_TRY(pq_rle_decode(v->p + 1, v->len - 1, bw, idx, v->k, err));
    uint32_t max = 0;
    for (int64_t j = 0; j < v->k; j++) max = idx[j] > max ? idx[j] : max;
    if (max >= (uint32_t)d->count) return bad(err, "%s: dictionary index out of range", "data page");
    const pq_colr *c = o->c;
    if (c->dw == 0) {
        int64_t j = 0;
        for (int64_t i = 0; i < v->n; i++) {
            if (!v->defs || v->defs[i]) {
                uint32_t e = idx[j++];
                FR_TRY(put_var(o, d->base + d->offs[e], d->lens[e], err));
            }
            o->offsets[o->row + i + 1] = (int32_t)o->data_len;
        }
        return 0;
    }
    if (c->dw == -1) {
        fr_buf_reset(&s->dense);
        FR_TRY(fr_buf_reserve(&s->dense, (size_t)v->k + 1, err));
        for (int64_t j = 0; j < v->k; j++) s->dense.data[j] = d->fixed[idx[j]];
        place_bools(o, s->dense.data, v->defs, v->n);
        return 0;
    }
    uint8_t *dst = o->values + (size_t)o->row * (size_t)c->dw;
    switch (c->dw) {
    case 1: for (int64_t j = 0; j < v->k; j++) dst[j] = d->fixed[idx[j]]; break;
    case 2: {
        const uint16_t *f = (const uint16_t *)(const void *)d->fixed;
        uint16_t *t = (uint16_t *)(void *)dst;
        for (int64_t j = 0; j < v->k; j++) t[j] = f[idx[j]];
        break;
    }
    case 4: {
        const uint32_t *f = (const uint32_t *)(const void *)d->fixed;
        uint32_t *t = (uint32_t *)(void *)dst;
        for (int64_t j = 0; j < v->k; j++) t[j] = f[idx[j]];
        break;
    }
    case 8: {
        const uint64_t *f = (const uint64_t *)(const void *)d->fixed;
        uint64_t *t = (uint64_t *)(void *)dst;
        for (int64_t j = 0; j < v->k; j++) t[j] = f[idx[j]];
        break;
    }
    default:
        for (int64_t j = 0; j < v->k; j++) memcpy(dst + 16 * j, d->fixed + 16 * (size_t)idx[j], 16);
    }
    if (v->defs && v->k < v->n) spread_fixed(o, v->defs, v->n, v->k);
    return 0;
}

/* RLE-encoded booleans: a 4-byte length, then the hybrid with bit width 1. */
static int rle_bools(pq_out *o, const pq_page_vals *v, pq_scratch *s, fr_error *err)
{
    if (o->c->pw != -1) return fr_fail(err, FR_EUNSUPPORTED, "RLE encoding of a non-BOOLEAN column");
    if (v->len < 4) return bad(err, "RLE %s: truncated length", "BOOLEAN");
    uint32_t len = fr_get_u32le(v->p);
    if (len > v->len - 4) return bad(err, "RLE %s: length runs past the page", "BOOLEAN");
    fr_buf_reset(&s->dense);
    FR_TRY(fr_buf_reserve(&s->dense, (size_t)v->k + 1, err));
    FR_TRY(pq_rle_decode_u8(v->p + 4, len, 1, s->dense.data, v->k, err));
    place_bools(o, s->dense.data, v->defs, v->n);
    return 0;
}

/* DELTA_BINARY_PACKED: a header (block size, miniblocks per block, value count, first
 * value), then blocks of a zigzag min delta, one bit width per miniblock and the miniblocks
 * bit-packed. Decodes `want` values into out (int64). */
static int delta_decode(const uint8_t *p, size_t len, int64_t want, int64_t *out, size_t *used,
                        fr_error *err)
{
    size_t pos = 0, k;
    uint64_t block, minis, total, first;
#define DGET(x)                                                                              \
    do {                                                                                     \
        k = fr_varint_get(p + pos, len - pos, &(x));                                         \
        if (!k) return bad(err, "DELTA_BINARY_PACKED: %s", "truncated varint");              \
        pos += k;                                                                            \
    } while (0)
    DGET(block);
    DGET(minis);
    DGET(total);
    DGET(first);
    if (block == 0 || block % 128 || minis == 0 || block % minis || (block / minis) % 32 ||
        block > (1u << 20))
        return bad(err, "DELTA_BINARY_PACKED: %s", "bad block header");
    if ((int64_t)total < want) return bad(err, "DELTA_BINARY_PACKED: %s", "fewer values than the page");
    uint64_t per_mini = block / minis;
    int64_t got = 0;
    uint64_t cur = (uint64_t)fr_zigzag_dec(first);
    if (want > 0) out[got++] = (int64_t)cur;
    while (got < want) {
        uint64_t mdz;
        DGET(mdz);
        uint64_t min_delta = (uint64_t)fr_zigzag_dec(mdz);
        if (len - pos < minis) return bad(err, "DELTA_BINARY_PACKED: %s", "truncated bit widths");
        const uint8_t *widths = p + pos;
        pos += minis;
        for (uint64_t m = 0; m < minis && got < want; m++) {
            int bw = widths[m];
            if (bw > 64) return bad(err, "DELTA_BINARY_PACKED: %s", "bit width above 64");
            size_t bytes = (size_t)(per_mini * (uint64_t)bw / 8);
            if (len - pos < bytes) return bad(err, "DELTA_BINARY_PACKED: %s", "truncated miniblock");
            const uint8_t *src = p + pos;
            unsigned __int128 acc = 0;
            int nbits = 0;
            size_t sp = 0;
            for (uint64_t i = 0; i < per_mini && got < want; i++) {
                while (nbits < bw) {
                    acc |= (unsigned __int128)src[sp++] << nbits;
                    nbits += 8;
                }
                uint64_t d = bw == 64 ? (uint64_t)acc : (uint64_t)acc & ((1ull << bw) - 1);
                acc >>= bw;
                nbits -= bw;
                cur += min_delta + d;
                out[got++] = (int64_t)cur;
            }
            pos += bytes;
        }
    }
#undef DGET
    /* The remaining miniblocks of the last block may be absent or padded; what was read is
     * what the values need, and a following section starts after the whole last block. */
    *used = pos;
    return 0;
}

static int delta_ints(pq_out *o, const pq_page_vals *v, pq_scratch *s, fr_error *err)
{
    const pq_colr *c = o->c;
    if (c->physical != PQ_INT32 && c->physical != PQ_INT64)
        return fr_fail(err, FR_EUNSUPPORTED, "DELTA_BINARY_PACKED on a column that is not INT32 or INT64");
    fr_buf_reset(&s->idx);
    FR_TRY(fr_buf_reserve(&s->idx, 8 * (size_t)v->k + 8, err));
    int64_t *vals = (int64_t *)(void *)s->idx.data;
    size_t used;
    FR_TRY(delta_decode(v->p, v->len, v->k, vals, &used, err));
    uint8_t *dst = o->values + (size_t)o->row * (size_t)c->dw;
    for (int64_t j = 0; j < v->k; j++) {
        if (c->type.id == FR_T_DECIMAL) {
            fr_i128 d = c->physical == PQ_INT32 ? (fr_i128)(int32_t)vals[j] : (fr_i128)vals[j];
            memcpy(dst + 16 * j, &d, 16);
        } else if (c->dw == 8) {
            memcpy(dst + 8 * j, &vals[j], 8);
        } else if (c->dw == 4) {
            int32_t x = (int32_t)vals[j];
            memcpy(dst + 4 * j, &x, 4);
        } else if (c->dw == 2) {
            int16_t x = (int16_t)vals[j];
            memcpy(dst + 2 * j, &x, 2);
        } else {
            dst[j] = (uint8_t)vals[j];
        }
    }
    if (v->defs && v->k < v->n) spread_fixed(o, v->defs, v->n, v->k);
    return 0;
}

/* DELTA_LENGTH_BYTE_ARRAY: the lengths DELTA_BINARY_PACKED, then the bytes back to back. */
static int delta_length(pq_out *o, const pq_page_vals *v, pq_scratch *s, fr_error *err)
{
    if (o->c->physical != PQ_BYTE_ARRAY)
        return fr_fail(err, FR_EUNSUPPORTED, "DELTA_LENGTH_BYTE_ARRAY on a column that is not BYTE_ARRAY");
    fr_buf_reset(&s->idx);
    FR_TRY(fr_buf_reserve(&s->idx, 8 * (size_t)v->k + 8, err));
    int64_t *lens = (int64_t *)(void *)s->idx.data;
    size_t pos;
    FR_TRY(delta_decode(v->p, v->len, v->k, lens, &pos, err));
    int64_t j = 0;
    for (int64_t i = 0; i < v->n; i++) {
        if (!v->defs || v->defs[i]) {
            int64_t len = lens[j++];
            if (len < 0 || (uint64_t)len > v->len - pos)
                return bad(err, "DELTA_LENGTH_BYTE_ARRAY: %s", "value runs past the page");
            FR_TRY(put_var(o, v->p + pos, (size_t)len, err));
            pos += (size_t)len;
        }
        o->offsets[o->row + i + 1] = (int32_t)o->data_len;
    }
    return 0;
}

/* BYTE_STREAM_SPLIT: byte b of value j at b * k + j. */
static int stream_split(pq_out *o, const pq_page_vals *v, pq_scratch *s, fr_error *err)
{
    const pq_colr *c = o->c;
    if (c->pw <= 0) return fr_fail(err, FR_EUNSUPPORTED, "BYTE_STREAM_SPLIT on a variable-width column");
    size_t w = (size_t)c->pw;
    if ((size_t)v->k > v->len / w) return bad(err, "BYTE_STREAM_SPLIT: %s", "too few bytes");
    fr_buf_reset(&s->dense);
    FR_TRY(fr_buf_reserve(&s->dense, (size_t)v->k * w + 1, err));
    for (int64_t j = 0; j < v->k; j++)
        for (size_t b = 0; b < w; b++) s->dense.data[(size_t)j * w + b] = v->p[b * (size_t)v->k + (size_t)j];
    pq_page_vals dense = *v;
    dense.p = s->dense.data;
    dense.len = (size_t)v->k * w;
    return c->dw == 0 ? plain_var(o, &dense, err) : plain_fixed_vals(o, &dense, s, err);
}

static int decode_vals(pq_out *o, int enc, const pq_page_vals *v, const pq_dict_r *d,
                       pq_scratch *s, fr_error *err)
{
    switch (enc) {
    case PQ_ENC_PLAIN:
        return o->c->dw == 0 ? plain_var(o, v, err) : plain_fixed_vals(o, v, s, err);
    case PQ_ENC_PLAIN_DICTIONARY:
    case PQ_ENC_RLE_DICTIONARY:
        return dict_vals(o, v, d, s, err);
    case PQ_ENC_RLE:
        return rle_bools(o, v, s, err);
    case PQ_ENC_DELTA_BINARY_PACKED:
        return delta_ints(o, v, s, err);
    case PQ_ENC_DELTA_LENGTH_BYTE_ARRAY:
        return delta_length(o, v, s, err);
    case PQ_ENC_BYTE_STREAM_SPLIT:
        return stream_split(o, v, s, err);
    default:
        return fr_fail(err, FR_EUNSUPPORTED,
                       "Parquet encoding %d is not supported (firth reads PLAIN, PLAIN_DICTIONARY, "
                       "RLE_DICTIONARY, RLE, DELTA_BINARY_PACKED, DELTA_LENGTH_BYTE_ARRAY and "
                       "BYTE_STREAM_SPLIT)", enc);
    }
}

/* ---- pages ------------------------------------------------------------------------------- */

/* Decodes n definition levels (bit width 1) and counts the valid ones. */
static int read_defs(const uint8_t *p, size_t len, int64_t n, pq_scratch *s, int64_t *k,
                     fr_error *err)
{
    fr_buf_reset(&s->defs);
    FR_TRY(fr_buf_reserve(&s->defs, (size_t)n + 1, err));
    FR_TRY(pq_rle_decode_u8(p, len, 1, s->defs.data, n, err));
    int64_t valid = 0;
    for (int64_t i = 0; i < n; i++) valid += s->defs.data[i];
    *k = valid;
    return 0;
}

static int decompress_into(fr_buf *b, int codec, const uint8_t *p, size_t n, size_t usize,
                           fr_error *err)
{
    fr_buf_reset(b);
    FR_TRY(fr_buf_reserve(b, usize + 8, err));
    FR_TRY(pq_decompress(codec, p, n, b->data, usize, err));
    b->len = usize;
    return 0;
}

static int data_page_v1(pq_out *o, const pq_page_header *h, int codec, const uint8_t *body,
                        const pq_dict_r *d, pq_scratch *s, fr_error *err)
{
    if (!h->has_data) return bad(err, "%s: data page without its header", "page");
    FR_TRY(decompress_into(&s->page, codec, body, (size_t)h->compressed_size,
                           (size_t)h->uncompressed_size, err));
    pq_page_vals v = {s->page.data, s->page.len, h->num_values, h->num_values, NULL};
    bool optional = o->c->type.nullable;
    if (optional) {
        if (h->def_encoding != PQ_ENC_RLE)
            return fr_fail(err, FR_EUNSUPPORTED, "definition levels in encoding %d (firth reads RLE)",
                           h->def_encoding);
        if (v.len < 4) return bad(err, "%s: truncated definition levels", "data page");
        uint32_t dl = fr_get_u32le(v.p);
        if (dl > v.len - 4) return bad(err, "%s: definition levels run past the page", "data page");
        FR_TRY(read_defs(v.p + 4, dl, v.n, s, &v.k, err));
        v.p += 4 + dl;
        v.len -= 4 + dl;
        if (v.k < v.n) v.defs = s->defs.data;
    }
    o->nulls += v.n - v.k;
    out_validity(o, v.defs, v.n);
    return decode_vals(o, h->encoding, &v, d, s, err);
}

static int data_page_v2(pq_out *o, const pq_page_header *h, int codec, const uint8_t *body,
                        const pq_dict_r *d, pq_scratch *s, fr_error *err)
{
    if (!h->has_v2) return bad(err, "%s: data page v2 without its header", "page");
    if (h->rep_bytes != 0) return bad(err, "%s: repetition levels in a flat column", "data page v2");
    size_t levels = (size_t)h->def_bytes;
    if (levels > (size_t)h->compressed_size || levels > (size_t)h->uncompressed_size)
        return bad(err, "%s: level bytes exceed the page", "data page v2");
    if (h->num_rows != h->num_values || h->num_nulls > h->num_values)
        return bad(err, "%s: counts disagree", "data page v2");
    pq_page_vals v = {NULL, 0, h->num_values, h->num_values, NULL};
    bool optional = o->c->type.nullable;
    if (optional && levels > 0) {
        FR_TRY(read_defs(body, levels, v.n, s, &v.k, err));
        if (v.k < v.n) v.defs = s->defs.data;
    } else if (optional || h->num_nulls) {
        if (h->num_nulls) return bad(err, "%s: nulls without definition levels", "data page v2");
    }
    if (v.n - v.k != h->num_nulls)
        return bad(err, "%s: null count disagrees with the levels", "data page v2");
    const uint8_t *vp = body + levels;
    size_t vlen = (size_t)h->compressed_size - levels, ulen = (size_t)h->uncompressed_size - levels;
    if (h->is_compressed && codec != FR_PARQUET_UNCOMPRESSED) {
        FR_TRY(decompress_into(&s->page, codec, vp, vlen, ulen, err));
        v.p = s->page.data;
        v.len = s->page.len;
    } else {
        if (vlen != ulen) return bad(err, "%s: uncompressed sizes disagree", "data page v2");
        v.p = vp;
        v.len = vlen;
    }
    o->nulls += v.n - v.k;
    out_validity(o, v.defs, v.n);
    return decode_vals(o, h->encoding, &v, d, s, err);
}

#define PQ_DATA_HINT_MAX ((size_t)64 << 20)

static int alloc_out(pq_out *o, const pq_colr *c, int64_t rows, size_t hint, uint8_t **bufs,
                     fr_error *err)
{
    memset(o, 0, sizeof *o);
    o->c = c;
    o->rows = rows;
    size_t n = (size_t)rows;
    if (c->type.nullable) {
        bufs[0] = o->validity = fr_calloc(n / 8 + 1, 1);
        if (!o->validity) return fr_fail(err, FR_ENOMEM, "out of memory");
    }
    if (c->dw == 0) {
        bufs[1] = fr_calloc(n + 1, sizeof(int32_t));
        o->offsets = (int32_t *)(void *)bufs[1];
        if (!o->offsets) return fr_fail(err, FR_ENOMEM, "out of memory");
        /* A hint from the footer is trusted only up to a bound: the values may need more
         * (the buffer grows) or less (a lying footer costs untouched address space). */
        if (hint) FR_TRY(out_reserve(o, hint < PQ_DATA_HINT_MAX ? hint : PQ_DATA_HINT_MAX, err));
    } else {
        size_t bytes = c->dw == -1 ? n / 8 + 1 : n * (size_t)c->dw + 16;
        bufs[2] = o->values = c->dw == -1 ? fr_calloc(bytes, 1) : fr_malloc(bytes);
        if (!o->values) return fr_fail(err, FR_ENOMEM, "out of memory for %zu bytes", bytes);
    }
    return 0;
}

/* Decodes the chunk's pages into o; o keeps what it allocated even on failure. */
static int read_pages(pq_out *o, const pq_colr *c, int codec, const uint8_t *bytes, size_t len,
                      int64_t rows, pq_scratch *s, fr_error *err)
{
    pq_dict_r dict = {0};
    size_t pos = 0;
    bool data_seen = false;
    while (o->row < rows) {
        if (pos >= len)
            return fr_fail(err, FR_ECORRUPT, "chunk ends after %lld of %lld values", (long long)o->row,
                           (long long)rows);
        pq_page_header h;
        size_t used;
        FR_TRY(pq_page_header_decode(bytes + pos, len - pos, &h, &used, "page header", err));
        pos += used;
        if ((size_t)h.compressed_size > len - pos)
            return fr_fail(err, FR_ECORRUPT, "page of %d bytes runs past its chunk", h.compressed_size);
        const uint8_t *body = bytes + pos;
        pos += (size_t)h.compressed_size;
        if (h.has_crc && pq_crc32(body, (size_t)h.compressed_size) != h.crc)
            return fr_fail(err, FR_ECORRUPT, "page CRC mismatch (page of %d bytes)", h.compressed_size);
        switch (h.type) {
        case PQ_PAGE_DICTIONARY:
            if (!h.has_dict || dict.present || data_seen)
                return fr_fail(err, FR_ECORRUPT, "misplaced or repeated dictionary page");
            if (h.encoding != PQ_ENC_PLAIN && h.encoding != PQ_ENC_PLAIN_DICTIONARY)
                return fr_fail(err, FR_EUNSUPPORTED, "dictionary page in encoding %d", h.encoding);
            FR_TRY(decompress_into(&s->dict, codec, body, (size_t)h.compressed_size,
                                   (size_t)h.uncompressed_size, err));
            FR_TRY(decode_dict(c, s->dict.data, s->dict.len, h.num_values, s, &dict, err));
            break;
        case PQ_PAGE_DATA:
        case PQ_PAGE_DATA_V2:
            data_seen = true;
            if (h.num_values > rows - o->row)
                return fr_fail(err, FR_ECORRUPT, "pages hold more than the chunk's %lld values",
                               (long long)rows);
            if (h.type == PQ_PAGE_DATA) FR_TRY(data_page_v1(o, &h, codec, body, &dict, s, err));
            else FR_TRY(data_page_v2(o, &h, codec, body, &dict, s, err));
            o->row += h.num_values;
            break;
        default:
            break; /* index pages and others: skipped */
        }
    }
    return 0;
}

int pq_read_chunk(const pq_colr *c, int codec, const uint8_t *bytes, size_t len, int64_t rows,
                  pq_scratch *s, uint8_t **bufs, int64_t *nulls, fr_error *err)
{
    pq_out o;
    int rc = alloc_out(&o, c, rows, s->data_hint, bufs, err);
    if (rc == 0) rc = read_pages(&o, c, codec, bytes, len, rows, s, err);
    if (c->dw == 0) {
        bufs[2] = o.data;
        if (rc == 0 && !bufs[2] && !(bufs[2] = fr_malloc(1))) rc = fr_fail(err, FR_ENOMEM, "out of memory");
    }
    *nulls = o.nulls;
    return rc;
}
