/* arrow_builder.c — builds batches cell by cell into growable, 64-byte aligned column
 * buffers that become the batch's buffers without a copy on finish.
 *
 * Invariants of a builder column: `length` cells appended; values (and offsets, which hold
 * length + 1 entries once the first cell is appended) cover exactly those cells; the
 * validity bitmap exists only after the first null and then covers every cell. Columns may
 * differ in length by the cells of one unfinished row until rollback or finish. */
#include <assert.h>

#include "arrow/arrow_internal.h"

typedef struct fr_bcol {
    fr_type type;
    fr_phys phys;
    int width;
    const char *name;
    int64_t length, null_count;
    bool has_validity;
    fr_avec validity, offsets, values;
} fr_bcol;

struct fr_builder {
    fr_schema *schema;
    int ncols;
    fr_bcol *cols;
    fr_arena *arena; /* for casts that format into strings; freed on finish */
};

int fr_builder_new(const fr_schema *schema, fr_builder **out, fr_error *err)
{
    fr_builder *bld = fr_calloc(1, sizeof *bld);
    if (!bld) return fr_fail(err, FR_ENOMEM, "out of memory allocating a batch builder");
    bld->schema = fr_schema_clone(schema);
    bld->ncols = fr_schema_num_fields(schema);
    bld->cols = fr_calloc(bld->ncols ? (size_t)bld->ncols : 1, sizeof *bld->cols);
    if (!bld->schema || !bld->cols) {
        fr_builder_free(bld);
        return fr_fail(err, FR_ENOMEM, "out of memory allocating a batch builder");
    }
    for (int i = 0; i < bld->ncols; i++) {
        const fr_field *f = fr_schema_field(bld->schema, i);
        fr_bcol *c = &bld->cols[i];
        c->type = f->type;
        c->name = f->name;
        c->phys = fr_arrow_phys(&f->type);
        c->width = fr_arrow_width(&f->type);
    }
    *out = bld;
    return 0;
}

static void fr_bcol_clear(fr_bcol *c)
{
    fr_avec_free(&c->validity);
    fr_avec_free(&c->offsets);
    fr_avec_free(&c->values);
    c->length = c->null_count = 0;
    c->has_validity = false;
}

void fr_builder_free(fr_builder *bld)
{
    if (!bld) return;
    for (int i = 0; bld->cols && i < bld->ncols; i++) fr_bcol_clear(&bld->cols[i]);
    fr_free(bld->cols);
    fr_schema_free(bld->schema);
    fr_arena_free(bld->arena);
    fr_free(bld);
}

int64_t fr_builder_num_rows(const fr_builder *bld)
{
    return bld->ncols ? bld->cols[0].length : 0;
}

/* ---- cells ------------------------------------------------------------------------------- */

/* Makes room for bit `i` in a bitmap. Appends reserve every buffer first and write after,
 * so that a failed append leaves the column as it was. */
static inline int fr_bitmap_reserve1(fr_avec *v, int64_t i, fr_error *err)
{
    size_t need = (size_t)(i >> 3) + 1;
    return need <= v->cap ? 0 : fr_avec_grow(v, need, err);
}

/* Writes bit i of a bitmap that so far covers bits [0, i). */
static inline void fr_bitmap_put(fr_avec *v, int64_t i, bool bit)
{
    if ((i & 7) == 0) v->data[i >> 3] = bit;
    else fr_bit_set(v->data, i, bit);
    v->len = (size_t)(i >> 3) + 1;
}

static inline int fr_bcol_check_room(fr_bcol *c, fr_error *err)
{
    if (c->length < FR_BATCH_ROWS_MAX) return 0;
    return fr_fail(err, FR_ELIMIT, "column %s: a batch holds at most %d rows", c->name,
                   FR_BATCH_ROWS_MAX);
}

/* Makes room for the validity bit of the cell being appended at index c->length. */
static inline int fr_bcol_reserve_valid(fr_bcol *c, fr_error *err)
{
    return c->has_validity ? fr_bitmap_reserve1(&c->validity, c->length, err) : 0;
}

static inline void fr_bcol_put_valid(fr_bcol *c)
{
    if (c->has_validity) fr_bitmap_put(&c->validity, c->length, true);
}

/* Creates the validity bitmap on the first null: all earlier cells are valid. */
static int fr_bcol_make_validity(fr_bcol *c, int64_t extra, fr_error *err)
{
    size_t bytes = (size_t)fr_bitmap_bytes(c->length);
    FR_TRY(fr_avec_grow(&c->validity, (size_t)fr_bitmap_bytes(c->length + extra) + 1, err));
    memset(c->validity.data, 0xff, bytes);
    if (c->length & 7) c->validity.data[bytes - 1] = (uint8_t)((1u << (c->length & 7)) - 1);
    c->validity.len = bytes;
    c->has_validity = true;
    return 0;
}

int fr_builder_append_null(fr_builder *bld, int col, fr_error *err)
{
    assert(col >= 0 && col < bld->ncols);
    fr_bcol *c = &bld->cols[col];
    FR_CHECK(c->type.nullable, FR_EINVAL, err, "column %s is NOT NULL but got a NULL value", c->name);
    FR_TRY(fr_bcol_check_room(c, err));
    switch (c->phys) {
    case FR_PHYS_BOOL: FR_TRY(fr_bitmap_reserve1(&c->values, c->length, err)); break;
    case FR_PHYS_FIXED: FR_TRY(fr_avec_reserve(&c->values, (size_t)c->width, err)); break;
    case FR_PHYS_VAR: FR_TRY(fr_avec_reserve(&c->offsets, 8, err)); break;
    }
    if (!c->has_validity) FR_TRY(fr_bcol_make_validity(c, 1, err));
    FR_TRY(fr_bitmap_reserve1(&c->validity, c->length, err));
    fr_bitmap_put(&c->validity, c->length, false);
    switch (c->phys) {
    case FR_PHYS_BOOL: fr_bitmap_put(&c->values, c->length, false); break;
    case FR_PHYS_FIXED:
        memset(c->values.data + c->values.len, 0, (size_t)c->width);
        c->values.len += (size_t)c->width;
        break;
    case FR_PHYS_VAR:
        if (c->offsets.len == 0) {
            fr_put_u32le(c->offsets.data, 0);
            c->offsets.len = 4;
        }
        fr_put_u32le(c->offsets.data + c->offsets.len, (uint32_t)c->values.len);
        c->offsets.len += 4;
        break;
    }
    c->length++;
    c->null_count++;
    return 0;
}

/* Appends `width` bytes of a fixed-width cell. */
static inline int fr_bcol_put(fr_bcol *c, const void *p, fr_error *err)
{
    FR_TRY(fr_bcol_check_room(c, err));
    if (c->values.len + (size_t)c->width > c->values.cap)
        FR_TRY(fr_avec_grow(&c->values, c->values.len + (size_t)c->width, err));
    FR_TRY(fr_bcol_reserve_valid(c, err));
    fr_bcol_put_valid(c);
    memcpy(c->values.data + c->values.len, p, (size_t)c->width);
    c->values.len += (size_t)c->width;
    c->length++;
    return 0;
}

int fr_builder_append_i64(fr_builder *bld, int col, int64_t v, fr_error *err)
{
    assert(col >= 0 && col < bld->ncols);
    fr_bcol *c = &bld->cols[col];
    assert(c->phys == FR_PHYS_FIXED && c->type.id != FR_T_FLOAT && c->type.id != FR_T_DOUBLE);
    switch (c->width) {
    case 1: { int8_t x = (int8_t)v; return fr_bcol_put(c, &x, err); }
    case 2: { int16_t x = (int16_t)v; return fr_bcol_put(c, &x, err); }
    case 4: { int32_t x = (int32_t)v; return fr_bcol_put(c, &x, err); }
    case 8: return fr_bcol_put(c, &v, err);
    default: { fr_i128 x = v; return fr_bcol_put(c, &x, err); }
    }
}

int fr_builder_append_f64(fr_builder *bld, int col, double v, fr_error *err)
{
    assert(col >= 0 && col < bld->ncols);
    fr_bcol *c = &bld->cols[col];
    assert(c->type.id == FR_T_FLOAT || c->type.id == FR_T_DOUBLE);
    if (c->type.id == FR_T_FLOAT) {
        float f = (float)v;
        return fr_bcol_put(c, &f, err);
    }
    return fr_bcol_put(c, &v, err);
}

int fr_builder_append_i128(fr_builder *bld, int col, fr_i128 v, fr_error *err)
{
    assert(col >= 0 && col < bld->ncols);
    fr_bcol *c = &bld->cols[col];
    assert(c->type.id == FR_T_DECIMAL);
    return fr_bcol_put(c, &v, err);
}

int fr_builder_append_bool(fr_builder *bld, int col, bool v, fr_error *err)
{
    assert(col >= 0 && col < bld->ncols);
    fr_bcol *c = &bld->cols[col];
    assert(c->phys == FR_PHYS_BOOL);
    FR_TRY(fr_bcol_check_room(c, err));
    FR_TRY(fr_bitmap_reserve1(&c->values, c->length, err));
    FR_TRY(fr_bcol_reserve_valid(c, err));
    fr_bcol_put_valid(c);
    fr_bitmap_put(&c->values, c->length, v);
    c->length++;
    return 0;
}

int fr_builder_append_bytes(fr_builder *bld, int col, const void *p, size_t n, fr_error *err)
{
    assert(col >= 0 && col < bld->ncols);
    fr_bcol *c = &bld->cols[col];
    assert(c->phys == FR_PHYS_VAR);
    FR_TRY(fr_bcol_check_room(c, err));
    FR_CHECK(n <= (size_t)INT32_MAX - c->values.len, FR_ELIMIT, err,
             "column %s: a batch holds at most %d bytes of strings per column", c->name, INT32_MAX);
    if (c->offsets.len + 8 > c->offsets.cap) FR_TRY(fr_avec_grow(&c->offsets, c->offsets.len + 8, err));
    if (c->values.len + n > c->values.cap) FR_TRY(fr_avec_grow(&c->values, c->values.len + n, err));
    FR_TRY(fr_bcol_reserve_valid(c, err));
    fr_bcol_put_valid(c);
    if (c->offsets.len == 0) {
        fr_put_u32le(c->offsets.data, 0);
        c->offsets.len = 4;
    }
    if (n) memcpy(c->values.data + c->values.len, p, n);
    c->values.len += n;
    fr_put_u32le(c->offsets.data + c->offsets.len, (uint32_t)c->values.len);
    c->offsets.len += 4;
    c->length++;
    return 0;
}

/* Stores a non-null value whose type has the column's physical form. */
static int fr_bcol_store(fr_builder *bld, int col, const fr_value *v, fr_error *err)
{
    fr_bcol *c = &bld->cols[col];
    switch (c->type.id) {
    case FR_T_BOOLEAN: return fr_builder_append_bool(bld, col, v->v.b, err);
    case FR_T_FLOAT: case FR_T_DOUBLE: return fr_builder_append_f64(bld, col, v->v.f, err);
    case FR_T_DECIMAL: return fr_builder_append_i128(bld, col, v->v.d, err);
    case FR_T_CHAR: case FR_T_VARCHAR: case FR_T_STRING: case FR_T_BYTES:
        return fr_builder_append_bytes(bld, col, v->v.s.ptr, v->v.s.len, err);
    default: return fr_builder_append_i64(bld, col, v->v.i, err);
    }
}

/* True when a value of type from can be stored in a column of type to as it is. */
static bool fr_builder_same_form(const fr_type *from, const fr_type *to)
{
    if (to->id == FR_T_STRING) return fr_type_is_string(from->id);
    if (from->id != to->id) return false;
    switch (to->id) {
    case FR_T_DECIMAL: return from->scale == to->scale && from->precision <= to->precision;
    case FR_T_CHAR: case FR_T_VARCHAR: case FR_T_TIME: case FR_T_TIMESTAMP: case FR_T_TIMESTAMP_LTZ:
        return fr_type_equal(from, to);
    default: return true;
    }
}

int fr_builder_append(fr_builder *bld, int col, const fr_value *v, fr_error *err)
{
    assert(col >= 0 && col < bld->ncols);
    fr_bcol *c = &bld->cols[col];
    if (v->is_null) return fr_builder_append_null(bld, col, err);
    if (fr_builder_same_form(&v->type, &c->type)) return fr_bcol_store(bld, col, v, err);
    if (!bld->arena) {
        bld->arena = fr_arena_new(4096);
        if (!bld->arena) return fr_fail(err, FR_ENOMEM, "out of memory converting a value");
    }
    fr_value cast;
    int rc = fr_value_cast(v, &c->type, bld->arena, &cast, err);
    if (rc < 0) {
        fr_error_wrap(err, "column %s", c->name);
        return rc;
    }
    if (cast.is_null) return fr_builder_append_null(bld, col, err);
    return fr_bcol_store(bld, col, &cast, err);
}

/* ---- ranges (filter, slice) -------------------------------------------------------------- */

int fr_builder_append_range(fr_builder *bld, int col, const fr_column *src, int64_t off,
                            int64_t n, fr_error *err)
{
    assert(col >= 0 && col < bld->ncols && off >= 0 && n >= 0 && off + n <= src->length);
    fr_bcol *c = &bld->cols[col];
    if (n == 0) return 0;
    FR_CHECK(c->length + n <= FR_BATCH_ROWS_MAX, FR_ELIMIT, err,
             "column %s: a batch holds at most %d rows", c->name, FR_BATCH_ROWS_MAX);
    int64_t nulls = src->validity ? n - fr_bits_count(src->validity, off, n) : 0;
    if (nulls > 0 && !c->has_validity) FR_TRY(fr_bcol_make_validity(c, n, err));
    if (c->has_validity) {
        size_t need = (size_t)fr_bitmap_bytes(c->length + n);
        FR_TRY(fr_avec_reserve(&c->validity, need - c->validity.len, err));
        if (nulls > 0) {
            fr_bits_copy(c->validity.data, c->length, src->validity, off, n);
        } else {
            for (int64_t i = 0; i < n; i++) {
                if (((c->length + i) & 7) == 0 && i + 8 <= n) {
                    c->validity.data[(c->length + i) >> 3] = 0xff;
                    i += 7;
                } else {
                    fr_bit_set(c->validity.data, c->length + i, true);
                }
            }
        }
        c->validity.len = need;
    }
    switch (c->phys) {
    case FR_PHYS_BOOL: {
        size_t need = (size_t)fr_bitmap_bytes(c->length + n);
        FR_TRY(fr_avec_reserve(&c->values, need - c->values.len, err));
        fr_bits_copy(c->values.data, c->length, src->values, off, n);
        c->values.len = need;
        break;
    }
    case FR_PHYS_FIXED: {
        size_t bytes = (size_t)n * (size_t)c->width;
        FR_TRY(fr_avec_reserve(&c->values, bytes, err));
        memcpy(c->values.data + c->values.len, src->values + (size_t)off * (size_t)c->width, bytes);
        c->values.len += bytes;
        break;
    }
    case FR_PHYS_VAR: {
        int32_t first = src->offsets[off];
        size_t bytes = (size_t)(src->offsets[off + n] - first);
        FR_CHECK(bytes <= (size_t)INT32_MAX - c->values.len, FR_ELIMIT, err,
                 "column %s: a batch holds at most %d bytes of strings per column", c->name, INT32_MAX);
        FR_TRY(fr_avec_reserve(&c->offsets, 4 * (size_t)n + 4, err));
        FR_TRY(fr_avec_reserve(&c->values, bytes, err));
        if (c->offsets.len == 0) {
            fr_put_u32le(c->offsets.data, 0);
            c->offsets.len = 4;
        }
        int32_t base = (int32_t)c->values.len - first;
        int32_t *dst = (int32_t *)(c->offsets.data + c->offsets.len);
        for (int64_t i = 0; i < n; i++) dst[i] = src->offsets[off + i + 1] + base;
        c->offsets.len += 4 * (size_t)n;
        if (bytes) memcpy(c->values.data + c->values.len, src->values + first, bytes);
        c->values.len += bytes;
        break;
    }
    }
    c->length += n;
    c->null_count += nulls;
    return 0;
}

/* ---- rows -------------------------------------------------------------------------------- */

static void fr_bcol_truncate(fr_bcol *c, int64_t length)
{
    if (c->length <= length) return;
    if (c->has_validity)
        c->null_count -= (c->length - length) - fr_bits_count(c->validity.data, length, c->length - length);
    c->validity.len = c->has_validity ? (size_t)fr_bitmap_bytes(length) : 0;
    switch (c->phys) {
    case FR_PHYS_BOOL: c->values.len = (size_t)fr_bitmap_bytes(length); break;
    case FR_PHYS_FIXED: c->values.len = (size_t)length * (size_t)c->width; break;
    case FR_PHYS_VAR:
        c->values.len = fr_get_u32le(c->offsets.data + 4 * length);
        c->offsets.len = 4 * (size_t)(length + 1);
        break;
    }
    c->length = length;
}

void fr_builder_rollback_row(fr_builder *bld)
{
    if (bld->ncols == 0) return;
    int64_t rows = bld->cols[0].length;
    for (int i = 1; i < bld->ncols; i++)
        if (bld->cols[i].length < rows) rows = bld->cols[i].length;
    for (int i = 0; i < bld->ncols; i++) fr_bcol_truncate(&bld->cols[i], rows);
}

/* Moves a builder buffer into the batch (the caller reserved room in b's owned list). */
static const uint8_t *fr_bcol_hand_over(fr_batch *b, fr_avec *v, size_t len)
{
    if (!v->data) return NULL;
    assert(len <= v->len && fr_pad8(len) <= v->cap);
    memset(v->data + len, 0, fr_pad8(len) - len);
    const uint8_t *data = v->data;
    b->owned[b->nowned++] = v->raw;
    size_t hint = v->len;
    memset(v, 0, sizeof *v);
    v->hint = hint;
    return data;
}

/* Clears the bits of a bitmap past `bits` in its last byte, so output is deterministic. */
static void fr_bitmap_trim(fr_avec *v, int64_t bits)
{
    if (v->data && (bits & 7)) v->data[bits >> 3] &= (uint8_t)((1u << (bits & 7)) - 1);
}

int fr_builder_finish(fr_builder *bld, fr_batch **out, fr_error *err)
{
    int64_t rows = fr_builder_num_rows(bld);
    for (int i = 1; i < bld->ncols; i++)
        FR_CHECK(bld->cols[i].length == rows, FR_ESTATE, err,
                 "column %s has %lld values but column %s has %lld: finish a row before the batch",
                 bld->cols[i].name, (long long)bld->cols[i].length, bld->cols[0].name, (long long)rows);
    fr_batch *b = NULL;
    FR_TRY(fr_batch_alloc(bld->schema, rows, &b, err));
    int rc = fr_batch_reserve_owned(b, 3 * bld->ncols, err);
    if (rc < 0) {
        fr_batch_free(b);
        return rc;
    }
    for (int i = 0; i < bld->ncols; i++) {
        fr_bcol *c = &bld->cols[i];
        fr_column *col = &b->cols[i];
        fr_bitmap_trim(&c->validity, rows);
        if (c->phys == FR_PHYS_BOOL) fr_bitmap_trim(&c->values, rows);
        col->null_count = c->null_count;
        if (c->null_count > 0) col->validity = fr_bcol_hand_over(b, &c->validity, c->validity.len);
        else fr_avec_free(&c->validity);
        if (c->phys == FR_PHYS_VAR) col->offsets = (const int32_t *)fr_bcol_hand_over(b, &c->offsets, c->offsets.len);
        col->values = fr_bcol_hand_over(b, &c->values, c->values.len);
        c->length = c->null_count = 0;
        c->has_validity = false;
    }
    fr_batch_seal(b);
    fr_arena_free(bld->arena);
    bld->arena = NULL;
    *out = b;
    return 0;
}
