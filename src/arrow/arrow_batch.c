/* arrow_batch.c — columnar batches: allocation and reference counting, cell access,
 * projection (shares the parent's buffers), filter and slice (copy through a builder), and
 * batches built from ready buffers. Also the aligned allocation and bitmap helpers the rest
 * of the module uses. The invariants are listed in arrow_internal.h. */
#include <assert.h>
#include <stdlib.h>

#include "arrow/arrow_internal.h"

_Alignas(FR_ARROW_ALIGN) const uint8_t fr_arrow_empty[FR_ARROW_ALIGN];

/* ---- memory ------------------------------------------------------------------------------ */

uint8_t *fr_arrow_alloc(size_t n, void **raw)
{
    size_t padded = fr_pad8(n ? n : 1);
    if (padded < n || padded > SIZE_MAX - FR_ARROW_ALIGN) return NULL;
    uint8_t *p = fr_malloc(padded + FR_ARROW_ALIGN - 1);
    if (!p) return NULL;
    uint8_t *data = (uint8_t *)(((uintptr_t)p + FR_ARROW_ALIGN - 1) & ~(uintptr_t)(FR_ARROW_ALIGN - 1));
    memset(data + n, 0, padded - n);
    *raw = p;
    return data;
}

int fr_avec_grow(fr_avec *v, size_t need, fr_error *err)
{
    size_t cap = v->cap ? v->cap : v->hint > 256 ? v->hint : 256;
    /* A hint comes from the previous batch's length; the hand-over to a batch needs the
     * capacity padded to 8, as Arrow pads every buffer. */
    cap = fr_pad8(cap);
    while (cap < need) {
        if (cap > SIZE_MAX / 2) return fr_fail(err, FR_ENOMEM, "column buffer of %zu bytes is too large", need);
        cap *= 2;
    }
    void *raw;
    uint8_t *data = fr_arrow_alloc(cap, &raw);
    if (!data) return fr_fail(err, FR_ENOMEM, "out of memory growing a column buffer to %zu bytes", cap);
    if (v->len) memcpy(data, v->data, v->len);
    fr_free(v->raw);
    v->raw = raw;
    v->data = data;
    v->cap = cap;
    return 0;
}

void fr_avec_free(fr_avec *v)
{
    fr_free(v->raw);
    memset(v, 0, sizeof *v);
}

/* ---- bitmaps ----------------------------------------------------------------------------- */

void fr_bits_copy(uint8_t *dst, int64_t dpos, const uint8_t *src, int64_t spos, int64_t n)
{
    if (n <= 0) return;
    if ((dpos & 7) == 0 && (spos & 7) == 0) {
        int64_t whole = n >> 3;
        memcpy(dst + (dpos >> 3), src + (spos >> 3), (size_t)whole);
        for (int64_t i = whole << 3; i < n; i++) fr_bit_set(dst, dpos + i, fr_bit_get(src, spos + i));
        return;
    }
    int64_t i = 0;
    /* Fill bits up to a byte boundary of dst, then assemble whole destination bytes from two
     * source bytes each. */
    for (; i < n && ((dpos + i) & 7) != 0; i++) fr_bit_set(dst, dpos + i, fr_bit_get(src, spos + i));
    int shift = (int)((spos + i) & 7);
    for (; i + 8 <= n; i += 8) {
        const uint8_t *s = src + ((spos + i) >> 3);
        unsigned v = s[0] >> shift;
        if (shift) v |= (unsigned)s[1] << (8 - shift);
        dst[(dpos + i) >> 3] = (uint8_t)v;
    }
    for (; i < n; i++) fr_bit_set(dst, dpos + i, fr_bit_get(src, spos + i));
}

int64_t fr_bits_count(const uint8_t *bits, int64_t off, int64_t n)
{
    int64_t count = 0, i = 0;
    for (; i < n && ((off + i) & 7) != 0; i++) count += fr_bit_get(bits, off + i);
    const uint8_t *p = bits + ((off + i) >> 3);
    for (; i + 64 <= n; i += 64, p += 8) count += __builtin_popcountll(fr_get_u64le(p));
    for (; i + 8 <= n; i += 8, p++) count += __builtin_popcount(*p);
    for (; i < n; i++) count += fr_bit_get(bits, off + i);
    return count;
}

/* ---- batches ----------------------------------------------------------------------------- */

int fr_batch_alloc(const fr_schema *schema, int64_t rows, fr_batch **out, fr_error *err)
{
    FR_CHECK(rows >= 0 && rows <= FR_BATCH_ROWS_MAX, FR_ELIMIT, err,
             "batch of %lld rows exceeds the limit of %d rows", (long long)rows, FR_BATCH_ROWS_MAX);
    fr_batch *b = fr_calloc(1, sizeof *b);
    if (!b) return fr_fail(err, FR_ENOMEM, "out of memory allocating a batch");
    atomic_init(&b->refs, 1);
    b->rows = rows;
    b->schema = fr_schema_clone(schema);
    b->ncols = fr_schema_num_fields(schema);
    b->cols = fr_calloc(b->ncols ? (size_t)b->ncols : 1, sizeof *b->cols);
    if (!b->schema || !b->cols) {
        fr_batch_free(b);
        return fr_fail(err, FR_ENOMEM, "out of memory allocating a batch of %d columns",
                       fr_schema_num_fields(schema));
    }
    for (int i = 0; i < b->ncols; i++) {
        b->cols[i].type = fr_schema_field(b->schema, i)->type;
        b->cols[i].length = rows;
    }
    *out = b;
    return 0;
}

int fr_batch_reserve_owned(fr_batch *b, int n, fr_error *err)
{
    if (b->nowned + n <= b->owned_cap) return 0;
    int cap = b->owned_cap ? b->owned_cap : 8;
    while (cap < b->nowned + n) cap *= 2;
    void **owned = fr_realloc(b->owned, (size_t)cap * sizeof *owned);
    if (!owned) return fr_fail(err, FR_ENOMEM, "out of memory recording batch buffers");
    b->owned = owned;
    b->owned_cap = cap;
    return 0;
}

int fr_batch_own(fr_batch *b, void *raw, fr_error *err)
{
    if (!raw) return 0;
    if (fr_batch_reserve_owned(b, 1, err) < 0) {
        fr_free(raw);
        return FR_ENOMEM;
    }
    b->owned[b->nowned++] = raw;
    return 0;
}

fr_batch *fr_batch_ref(const fr_batch *b)
{
    fr_batch *m = (fr_batch *)b; /* the count is the one mutable part of a shared batch */
    atomic_fetch_add_explicit(&m->refs, 1, memory_order_relaxed);
    return m;
}

void fr_batch_seal(fr_batch *b)
{
    for (int i = 0; i < b->ncols; i++) {
        fr_column *c = &b->cols[i];
        assert(c->length == b->rows);
        assert((c->validity == NULL) == (c->null_count == 0));
        if (!c->values) c->values = fr_arrow_empty;
        if (fr_arrow_phys(&c->type) == FR_PHYS_VAR && !c->offsets)
            c->offsets = (const int32_t *)fr_arrow_empty;
        assert(fr_arrow_phys(&c->type) != FR_PHYS_VAR || c->offsets[0] == 0);
    }
}

void fr_batch_free(fr_batch *b)
{
    if (!b) return;
    if (atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel) != 1) return;
    for (int i = 0; i < b->nowned; i++) fr_free(b->owned[i]);
    fr_free(b->owned);
    if (b->imported.release) b->imported.release(&b->imported);
    fr_batch_free(b->parent);
    fr_schema_free(b->schema);
    fr_free(b->cols);
    fr_free(b);
}

const fr_schema *fr_batch_schema(const fr_batch *b) { return b->schema; }
int64_t fr_batch_num_rows(const fr_batch *b) { return b->rows; }
int fr_batch_num_columns(const fr_batch *b) { return b->ncols; }

const fr_column *fr_batch_column(const fr_batch *b, int i)
{
    assert(i >= 0 && i < b->ncols);
    return &b->cols[i];
}

void fr_column_get(const fr_column *c, int64_t row, fr_value *out)
{
    assert(row >= 0 && row < c->length);
    memset(out, 0, sizeof *out);
    out->type = c->type;
    if (fr_column_is_null(c, row)) {
        out->is_null = true;
        return;
    }
    const uint8_t *v = c->values;
    switch (c->type.id) {
    case FR_T_BOOLEAN: out->v.b = fr_bit_get(v, row); break;
    case FR_T_TINYINT: out->v.i = (int8_t)v[row]; break;
    case FR_T_SMALLINT: out->v.i = (int16_t)fr_get_u16le(v + 2 * row); break;
    case FR_T_INT: case FR_T_DATE: out->v.i = (int32_t)fr_get_u32le(v + 4 * row); break;
    case FR_T_BIGINT: case FR_T_TIMESTAMP: case FR_T_TIMESTAMP_LTZ:
        out->v.i = (int64_t)fr_get_u64le(v + 8 * row);
        break;
    case FR_T_TIME:
        out->v.i = c->type.precision <= 3 ? (int64_t)(int32_t)fr_get_u32le(v + 4 * row)
                                          : (int64_t)fr_get_u64le(v + 8 * row);
        break;
    case FR_T_FLOAT: {
        float f;
        memcpy(&f, v + 4 * row, 4);
        out->v.f = f;
        break;
    }
    case FR_T_DOUBLE: memcpy(&out->v.f, v + 8 * row, 8); break;
    case FR_T_DECIMAL: memcpy(&out->v.d, v + 16 * row, 16); break;
    case FR_T_CHAR: case FR_T_VARCHAR: case FR_T_STRING: case FR_T_BYTES:
        out->v.s.ptr = v + c->offsets[row];
        out->v.s.len = (size_t)(c->offsets[row + 1] - c->offsets[row]);
        break;
    }
}

/* Whether cols is every column of b in order: the projection then shares b's schema. */
static bool project_is_identity(const fr_batch *b, const int *cols, int ncols)
{
    if (ncols != b->ncols) return false;
    for (int i = 0; i < ncols; i++)
        if (cols[i] != i) return false;
    return true;
}

int fr_batch_project(const fr_batch *b, const int *cols, int ncols, fr_batch **out,
                     fr_error *err)
{
    fr_schema *s = NULL;
    if (project_is_identity(b, cols, ncols)) s = fr_schema_clone(b->schema);
    else FR_TRY(fr_schema_project(b->schema, cols, ncols, &s, err));
    fr_batch *p = NULL;
    int rc = fr_batch_alloc(s, b->rows, &p, err);
    fr_schema_free(s);
    FR_TRY(rc);
    for (int i = 0; i < ncols; i++) p->cols[i] = b->cols[cols[i]];
    /* Batches are immutable, so the projection shares the columns' memory. A projection of a
     * projection refers to the batch that owns the memory, so chains stay one link long. */
    const fr_batch *owner = b;
    while (owner->parent && owner->nowned == 0 && !owner->imported.release) owner = owner->parent;
    p->parent = fr_batch_ref(owner);
    *out = p;
    return 0;
}

/* Copies the rows of b given by runs [start, end) into a new batch through a builder. */
typedef struct fr_runs {
    const uint8_t *keep; /* NULL: one run [offset, offset + length) */
    int64_t offset, length;
} fr_runs;

static int fr_batch_copy_runs(const fr_batch *b, const fr_runs *r, fr_batch **out, fr_error *err)
{
    fr_builder *bld = NULL;
    FR_TRY(fr_builder_new(b->schema, &bld, err));
    int rc = 0;
    for (int c = 0; c < b->ncols; c++) {
        if (!r->keep) {
            FR_GOTO(fr_builder_append_range(bld, c, &b->cols[c], r->offset, r->length, err));
            continue;
        }
        int64_t i = 0;
        while (i < b->rows) {
            if (!fr_bit_get(r->keep, i)) {
                /* Skip whole zero bytes quickly: filters often drop long stretches. */
                if ((i & 7) == 0 && i + 8 <= b->rows && r->keep[i >> 3] == 0) i += 8;
                else i++;
                continue;
            }
            int64_t start = i;
            while (i < b->rows && fr_bit_get(r->keep, i)) i++;
            FR_GOTO(fr_builder_append_range(bld, c, &b->cols[c], start, i - start, err));
        }
    }
    FR_GOTO(fr_builder_finish(bld, out, err));
fail:
    fr_builder_free(bld);
    return rc;
}

int fr_batch_filter(const fr_batch *b, const uint8_t *keep, fr_batch **out, fr_error *err)
{
    fr_runs r = {.keep = keep};
    if (b->ncols == 0) return fr_batch_slice(b, 0, fr_bits_count(keep, 0, b->rows), out, err);
    return fr_batch_copy_runs(b, &r, out, err);
}

int fr_batch_slice(const fr_batch *b, int64_t offset, int64_t length, fr_batch **out,
                   fr_error *err)
{
    FR_CHECK(offset >= 0 && length >= 0 && offset <= b->rows && length <= b->rows - offset,
             FR_ERANGE, err, "slice [%lld, %lld) is outside the batch of %lld rows",
             (long long)offset, (long long)(offset + length), (long long)b->rows);
    if (b->ncols == 0) {
        FR_TRY(fr_batch_alloc(b->schema, length, out, err));
        return 0;
    }
    fr_runs r = {.offset = offset, .length = length};
    return fr_batch_copy_runs(b, &r, out, err);
}

int fr_batch_from_buffers(const fr_schema *schema, int64_t rows, uint8_t **bufs,
                          const int64_t *null_counts, fr_batch **out, fr_error *err)
{
    int ncols = fr_schema_num_fields(schema);
    fr_batch *b = NULL;
    int rc = fr_batch_alloc(schema, rows, &b, err);
    if (rc < 0) {
        for (int i = 0; i < 3 * ncols; i++) fr_free(bufs[i]);
        return rc;
    }
    /* Take every buffer first, so that all are freed with the batch on any failure below. */
    for (int i = 0; i < 3 * ncols; i++) {
        if (bufs[i] && fr_batch_own(b, bufs[i], err) < 0) {
            for (int j = i + 1; j < 3 * ncols; j++) fr_free(bufs[j]);
            fr_batch_free(b);
            return FR_ENOMEM;
        }
    }
    for (int i = 0; i < ncols; i++) {
        fr_column *c = &b->cols[i];
        const char *name = fr_schema_field(schema, i)->name;
        uint8_t *validity = bufs[3 * i], *offsets = bufs[3 * i + 1], *values = bufs[3 * i + 2];
        bool var = fr_arrow_phys(&c->type) == FR_PHYS_VAR;
        c->null_count = null_counts ? null_counts[i] : 0;
        if (c->null_count < 0 || c->null_count > rows) {
            rc = fr_fail(err, FR_EINVAL, "column %s: null count %lld is outside 0..%lld", name,
                         (long long)c->null_count, (long long)rows);
            goto fail;
        }
        if (c->null_count > 0 && !c->type.nullable) {
            rc = fr_fail(err, FR_EINVAL, "column %s is NOT NULL but has %lld nulls", name,
                         (long long)c->null_count);
            goto fail;
        }
        if (c->null_count > 0 && !validity) {
            rc = fr_fail(err, FR_EINVAL, "column %s has nulls but no validity buffer", name);
            goto fail;
        }
        if (rows > 0 && !values && !var) {
            rc = fr_fail(err, FR_EINVAL, "column %s has no values buffer", name);
            goto fail;
        }
        if (var && ((rows > 0 && !offsets) || (offsets && fr_get_u32le(offsets) != 0))) {
            rc = fr_fail(err, FR_EINVAL, "column %s needs offsets starting at 0", name);
            goto fail;
        }
        c->validity = c->null_count > 0 ? validity : NULL;
        c->offsets = var ? (const int32_t *)offsets : NULL;
        c->values = values;
    }
    fr_batch_seal(b);
    *out = b;
    return 0;
fail:
    fr_batch_free(b);
    return rc;
}
