/* expr_vec.c — the evaluation vector: loading batch columns, constants, representation
 * changes, row-by-row writing, and handing the final vector to a batch.
 *
 * Invariants: validity and boolean bitmaps are whole 64-bit words owned by the vector, with
 * validity bits past n clear; borrowed value arrays (from a batch column) are only read;
 * null_count always matches the validity bitmap. */
#include <assert.h>
#include <stdint.h>

#include "expr/expr_internal.h"

static const int32_t ex_zero_offsets[1] = {0};

void ex_vec_init(ex_vec *v)
{
    memset(v, 0, sizeof *v);
}

void ex_vec_free(ex_vec *v)
{
    fr_free(v->valid);
    fr_free(v->bits);
    if (v->own_vals) {
        fr_free(v->i);
        fr_free(v->f);
        fr_free(v->d);
    }
    if (v->own_str) {
        fr_free((void *)v->offs);
        fr_free((void *)v->bytes);
    }
    ex_vec_init(v);
}

void ex_vec_move(ex_vec *dst, ex_vec *src)
{
    if (dst == src) return;
    ex_vec_free(dst);
    *dst = *src;
    ex_vec_init(src);
}

static uint64_t *ex_copy_words(const uint64_t *w, int64_t n, fr_error *err);

int ex_vec_view(ex_vec *out, const ex_vec *src, fr_error *err)
{
    *out = *src;
    out->own_vals = false;
    out->own_str = false;
    out->valid = NULL;
    out->bits = NULL;
    if (src->valid && !(out->valid = ex_copy_words(src->valid, src->n, err))) return FR_ENOMEM;
    if (src->bits && !(out->bits = ex_copy_words(src->bits, src->n, err))) {
        ex_vec_free(out);
        return FR_ENOMEM;
    }
    return 0;
}

void ex_vec_const(ex_vec *out, const fr_value *v, const fr_type *type, int64_t n)
{
    ex_vec_init(out);
    out->type = *type;
    out->phys = ex_phys_of(type->id);
    out->n = n;
    out->is_const = true;
    out->cval = *v;
    out->cval.type = *type;
    out->null_count = v->is_null ? n : 0;
}

static void *ex_alloc_words(int64_t n, fr_error *err)
{
    size_t words = (size_t)EX_WORDS(n);
    void *p = fr_calloc(words ? words : 1, 8);
    if (!p) fr_fail(err, FR_ENOMEM, "out of memory for a bitmap of %lld rows", (long long)n);
    return p;
}

static void *ex_alloc_array(int64_t n, size_t width, fr_error *err)
{
    void *p = fr_calloc(n > 0 ? (size_t)n : 1, width);
    if (!p) fr_fail(err, FR_ENOMEM, "out of memory for %lld values", (long long)n);
    return p;
}

static uint64_t *ex_copy_words(const uint64_t *w, int64_t n, fr_error *err)
{
    uint64_t *c = ex_alloc_words(n, err);
    if (c && n > 0) memcpy(c, w, (size_t)EX_WORDS(n) * 8);
    return c;
}

/* Copies an Arrow bitmap of n bits into a fresh word bitmap with the tail cleared. */
static uint64_t *ex_copy_bitmap(const uint8_t *src, int64_t n, fr_error *err)
{
    uint64_t *w = ex_alloc_words(n, err);
    if (!w) return NULL;
    if (n > 0) {
        memcpy(w, src, (size_t)((n + 7) / 8));
        if (n & 63) w[(n - 1) >> 6] &= ((uint64_t)1 << (n & 63)) - 1;
    }
    return w;
}

static int ex_load_i64(ex_vec *out, const fr_column *c, fr_error *err)
{
    int width = fr_type_width(&c->type);
    int64_t n = c->length;
    if (width == 8 && ((uintptr_t)c->values % 8) == 0) {
        out->i = (int64_t *)(uintptr_t)c->values;
        return 0;
    }
    out->i = ex_alloc_array(n, 8, err);
    if (!out->i) return FR_ENOMEM;
    out->own_vals = true;
    const uint8_t *p = c->values;
    switch (width) {
    case 1:
        for (int64_t r = 0; r < n; r++) out->i[r] = (int8_t)p[r];
        break;
    case 2:
        for (int64_t r = 0; r < n; r++) {
            int16_t x;
            memcpy(&x, p + 2 * r, 2);
            out->i[r] = x;
        }
        break;
    case 4:
        for (int64_t r = 0; r < n; r++) {
            int32_t x;
            memcpy(&x, p + 4 * r, 4);
            out->i[r] = x;
        }
        break;
    default:
        assert(width == 8);
        if (n > 0) memcpy(out->i, p, (size_t)n * 8);
        break;
    }
    return 0;
}

static int ex_load_f64(ex_vec *out, const fr_column *c, fr_error *err)
{
    int64_t n = c->length;
    if (c->type.id == FR_T_DOUBLE && ((uintptr_t)c->values % 8) == 0) {
        out->f = (double *)(uintptr_t)c->values;
        return 0;
    }
    out->f = ex_alloc_array(n, 8, err);
    if (!out->f) return FR_ENOMEM;
    out->own_vals = true;
    if (c->type.id == FR_T_DOUBLE) {
        if (n > 0) memcpy(out->f, c->values, (size_t)n * 8);
        return 0;
    }
    for (int64_t r = 0; r < n; r++) {
        float x;
        memcpy(&x, c->values + 4 * r, 4);
        out->f[r] = x;
    }
    return 0;
}

static int ex_load_i128(ex_vec *out, const fr_column *c, fr_error *err)
{
    int64_t n = c->length;
    if (((uintptr_t)c->values % 16) == 0) {
        out->d = (fr_i128 *)(uintptr_t)c->values;
        return 0;
    }
    out->d = ex_alloc_array(n, 16, err);
    if (!out->d) return FR_ENOMEM;
    out->own_vals = true;
    if (n > 0) memcpy(out->d, c->values, (size_t)n * 16);
    return 0;
}

int ex_vec_from_column(ex_vec *out, const fr_column *c, fr_error *err)
{
    ex_vec_init(out);
    out->type = c->type;
    out->phys = ex_phys_of(c->type.id);
    out->n = c->length;
    int rc = 0;
    if (c->null_count > 0 && c->validity) {
        out->valid = ex_copy_bitmap(c->validity, c->length, err);
        if (!out->valid) return FR_ENOMEM;
        out->null_count = c->null_count;
    }
    switch (out->phys) {
    case EX_P_BOOL:
        out->bits = ex_copy_bitmap(c->values, c->length, err);
        if (!out->bits) FR_GOTO(FR_ENOMEM);
        break;
    case EX_P_I64: FR_GOTO(ex_load_i64(out, c, err)); break;
    case EX_P_F64: FR_GOTO(ex_load_f64(out, c, err)); break;
    case EX_P_I128: FR_GOTO(ex_load_i128(out, c, err)); break;
    case EX_P_STR:
        out->offs = c->offsets ? c->offsets : ex_zero_offsets;
        out->bytes = c->values;
        if (c->length > 0) assert(c->offsets);
        break;
    }
    return 0;
fail:
    ex_vec_free(out);
    return rc;
}

int ex_vec_alloc(ex_vec *out, const fr_type *type, int64_t n, fr_error *err)
{
    ex_vec_init(out);
    out->type = *type;
    out->phys = ex_phys_of(type->id);
    out->n = n;
    out->own_vals = true;
    switch (out->phys) {
    case EX_P_BOOL: out->bits = ex_alloc_words(n, err); return out->bits ? 0 : FR_ENOMEM;
    case EX_P_I64: out->i = ex_alloc_array(n, 8, err); return out->i ? 0 : FR_ENOMEM;
    case EX_P_F64: out->f = ex_alloc_array(n, 8, err); return out->f ? 0 : FR_ENOMEM;
    case EX_P_I128: out->d = ex_alloc_array(n, 16, err); return out->d ? 0 : FR_ENOMEM;
    case EX_P_STR: break;
    }
    assert(!"ex_vec_alloc does not build strings");
    return fr_fail(err, FR_EINVAL, "internal: string vectors are built with ex_vecout");
}

int ex_vec_alloc_valid(ex_vec *v, fr_error *err)
{
    assert(!v->valid);
    v->valid = ex_alloc_words(v->n, err);
    return v->valid ? 0 : FR_ENOMEM;
}

void ex_vec_seal(ex_vec *v)
{
    if (!v->valid) {
        v->null_count = 0;
        return;
    }
    int64_t set = 0, words = EX_WORDS(v->n);
    if (v->n & 63) v->valid[words - 1] &= ((uint64_t)1 << (v->n & 63)) - 1;
    for (int64_t w = 0; w < words; w++) set += __builtin_popcountll(v->valid[w]);
    v->null_count = v->n - set;
    if (v->null_count == 0) {
        fr_free(v->valid);
        v->valid = NULL;
    }
}

int ex_valid_and(const ex_vec *a, const ex_vec *b, uint64_t **out, fr_error *err)
{
    *out = NULL;
    int64_t n = a->n, words = EX_WORDS(n);
    bool a_null = a->is_const && a->null_count > 0, b_null = b->is_const && b->null_count > 0;
    if (!a_null && !b_null && !a->valid && !b->valid) return 0;
    uint64_t *w = ex_alloc_words(n, err);
    if (!w) return FR_ENOMEM;
    if (!a_null && !b_null) {
        for (int64_t k = 0; k < words; k++) {
            uint64_t x = a->valid ? a->valid[k] : ~(uint64_t)0;
            w[k] = x & (b->valid ? b->valid[k] : ~(uint64_t)0);
        }
        if (n & 63) w[words - 1] &= ((uint64_t)1 << (n & 63)) - 1;
    }
    *out = w;
    return 0;
}

void ex_vec_get(const ex_vec *v, int64_t r, fr_value *out)
{
    if (v->is_const) {
        *out = v->cval;
        return;
    }
    out->type = v->type;
    out->is_null = ex_vec_is_null(v, r);
    switch (v->phys) {
    case EX_P_BOOL: out->v.b = ex_bit_get(v->bits, r); break;
    case EX_P_I64: out->v.i = v->i[r]; break;
    case EX_P_F64: out->v.f = v->f[r]; break;
    case EX_P_I128: out->v.d = v->d[r]; break;
    case EX_P_STR:
        out->v.s.ptr = v->bytes + v->offs[r];
        out->v.s.len = (size_t)(v->offs[r + 1] - v->offs[r]);
        break;
    }
}

/* ---- row-by-row writer ----------------------------------------------------------------- */

int ex_vecout_begin(ex_vecout *o, ex_vec *v, const fr_type *type, int64_t n, fr_error *err)
{
    memset(o, 0, sizeof *o);
    o->v = v;
    fr_buf_init(&o->bytes);
    if (ex_phys_of(type->id) == EX_P_STR) {
        ex_vec_init(v);
        v->type = *type;
        v->phys = EX_P_STR;
        v->n = n;
        o->offs = fr_malloc(((size_t)n + 1) * sizeof(int32_t));
        if (!o->offs) return fr_fail(err, FR_ENOMEM, "out of memory for string offsets");
        o->offs[0] = 0;
    } else {
        FR_TRY(ex_vec_alloc(v, type, n, err));
    }
    if (ex_vec_alloc_valid(v, err) < 0) {
        ex_vecout_abort(o);
        return FR_ENOMEM;
    }
    return 0;
}

int ex_vecout_put(ex_vecout *o, int64_t r, const fr_value *val, fr_error *err)
{
    ex_vec *v = o->v;
    if (v->phys == EX_P_STR) o->offs[r + 1] = o->offs[r];
    if (val->is_null) return 0;
    ex_bit_set(v->valid, r);
    switch (v->phys) {
    case EX_P_BOOL:
        if (val->v.b) ex_bit_set(v->bits, r);
        break;
    case EX_P_I64: v->i[r] = val->v.i; break;
    case EX_P_F64: v->f[r] = val->v.f; break;
    case EX_P_I128: v->d[r] = val->v.d; break;
    case EX_P_STR:
        if (val->v.s.len > (size_t)INT32_MAX - o->bytes.len)
            return fr_fail(err, FR_ELIMIT, "string result exceeds the 2 GiB column limit");
        if (val->v.s.len) FR_TRY(fr_buf_append(&o->bytes, val->v.s.ptr, val->v.s.len, err));
        o->offs[r + 1] = (int32_t)o->bytes.len;
        break;
    }
    return 0;
}

int ex_vecout_end(ex_vecout *o, fr_error *err)
{
    ex_vec *v = o->v;
    if (v->phys == EX_P_STR) {
        size_t len;
        uint8_t *data = fr_buf_steal(&o->bytes, &len);
        if (!data) {
            data = fr_malloc(1);
            if (!data) {
                ex_vecout_abort(o);
                return fr_fail(err, FR_ENOMEM, "out of memory for string data");
            }
        }
        v->offs = o->offs;
        v->bytes = data;
        v->own_str = true;
        o->offs = NULL;
    }
    ex_vec_seal(v);
    return 0;
}

void ex_vecout_abort(ex_vecout *o)
{
    fr_buf_free(&o->bytes);
    fr_free(o->offs);
    o->offs = NULL;
    if (o->v) ex_vec_free(o->v);
}

/* ---- constants and representation changes ---------------------------------------------- */

int ex_vec_materialize(ex_vec *v, fr_error *err)
{
    if (!v->is_const) return 0;
    ex_vec m;
    ex_vecout o;
    FR_TRY(ex_vecout_begin(&o, &m, &v->type, v->n, err));
    if (v->phys == EX_P_STR && !v->cval.is_null &&
        (uint64_t)v->cval.v.s.len * (uint64_t)v->n > (uint64_t)INT32_MAX) {
        ex_vecout_abort(&o);
        return fr_fail(err, FR_ELIMIT, "string result exceeds the 2 GiB column limit");
    }
    int rc = 0;
    for (int64_t r = 0; r < v->n; r++) FR_GOTO(ex_vecout_put(&o, r, &v->cval, err));
    FR_GOTO(ex_vecout_end(&o, err));
    ex_vec_move(v, &m);
    return 0;
fail:
    ex_vecout_abort(&o);
    return rc;
}

bool ex_same_repr(const fr_type *a, const fr_type *b)
{
    ex_phys pa = ex_phys_of(a->id), pb = ex_phys_of(b->id);
    if (pa != pb) return false;
    switch (pa) {
    case EX_P_I64:
        if (fr_type_is_temporal(a->id) || fr_type_is_temporal(b->id)) {
            if (a->id == FR_T_DATE || b->id == FR_T_DATE) return a->id == b->id;
            return fr_type_time_units(a->precision) == fr_type_time_units(b->precision);
        }
        return true;
    case EX_P_I128: return a->scale == b->scale;
    default: return true;
    }
}

/* The generic conversion, one row at a time through ex_value_coerce. */
static int ex_coerce_rows(ex_vec *v, const fr_type *to, bool checked, fr_error *err)
{
    ex_vec m;
    FR_TRY(ex_vec_alloc(&m, to, v->n, err));
    int rc = 0;
    for (int64_t r = 0; r < v->n; r++) {
        if (ex_vec_is_null(v, r)) continue;
        fr_value x, y;
        ex_vec_get(v, r, &x);
        FR_GOTO(ex_value_coerce(&x, to, checked, &y, err));
        switch (m.phys) {
        case EX_P_I64: m.i[r] = y.v.i; break;
        case EX_P_F64: m.f[r] = y.v.f; break;
        case EX_P_I128: m.d[r] = y.v.d; break;
        default: assert(!"unexpected coercion target");
        }
    }
    m.valid = v->valid;
    m.null_count = v->null_count;
    v->valid = NULL;
    ex_vec_move(v, &m);
    return 0;
fail:
    ex_vec_free(&m);
    return rc;
}

int ex_vec_coerce(ex_vec *v, const fr_type *to, bool checked, fr_error *err)
{
    if (ex_same_repr(&v->type, to)) {
        v->type = *to;
        if (v->is_const) v->cval.type = *to;
        return 0;
    }
    if (v->is_const) {
        FR_TRY(ex_value_coerce(&v->cval, to, checked, &v->cval, err));
        v->type = *to;
        v->phys = ex_phys_of(to->id);
        return 0;
    }
    /* The two conversions that matter for speed get their own loops. */
    if (v->phys == EX_P_I64 && fr_type_is_integer(v->type.id) && to->id == FR_T_DOUBLE) {
        ex_vec m;
        FR_TRY(ex_vec_alloc(&m, to, v->n, err));
        for (int64_t r = 0; r < v->n; r++) m.f[r] = (double)v->i[r];
        m.valid = v->valid;
        m.null_count = v->null_count;
        v->valid = NULL;
        ex_vec_move(v, &m);
        return 0;
    }
    if (v->phys == EX_P_I64 && fr_type_is_integer(v->type.id) && to->id == FR_T_DECIMAL &&
        to->scale <= 18 && !checked) {
        /* |x| < 2^63 and 10^18 < 2^60: the product fits 123 bits, no overflow. */
        ex_vec m;
        FR_TRY(ex_vec_alloc(&m, to, v->n, err));
        fr_i128 k = fr_i128_pow10(to->scale);
        for (int64_t r = 0; r < v->n; r++) m.d[r] = (fr_i128)v->i[r] * k;
        m.valid = v->valid;
        m.null_count = v->null_count;
        v->valid = NULL;
        ex_vec_move(v, &m);
        return 0;
    }
    return ex_coerce_rows(v, to, checked, err);
}

/* ---- to a batch ------------------------------------------------------------------------ */

/* Narrows 64-bit integers into the column's width, checking the range of valid rows. */
static int ex_narrow(const ex_vec *v, const fr_type *type, int width, uint8_t **out,
                     fr_error *err)
{
    uint8_t *p = ex_alloc_array(v->n, (size_t)width, err);
    if (!p) return FR_ENOMEM;
    int64_t lo = width == 1 ? INT8_MIN : width == 2 ? INT16_MIN : INT32_MIN;
    int64_t hi = width == 1 ? INT8_MAX : width == 2 ? INT16_MAX : INT32_MAX;
    for (int64_t r = 0; r < v->n; r++) {
        int64_t x = v->i[r];
        if (x < lo || x > hi) {
            if (ex_vec_is_null(v, r)) continue;
            fr_free(p);
            char tn[64];
            return fr_fail(err, FR_ERANGE, "value %lld is out of range for %s", (long long)x,
                           ex_type_name(type, tn, sizeof tn));
        }
        if (width == 1) {
            p[r] = (uint8_t)(int8_t)x;
        } else if (width == 2) {
            int16_t y = (int16_t)x;
            memcpy(p + 2 * r, &y, 2);
        } else {
            int32_t y = (int32_t)x;
            memcpy(p + 4 * r, &y, 4);
        }
    }
    *out = p;
    return 0;
}

/* An owned array is handed over as it is; a borrowed one is copied. */
static uint8_t *ex_take(const void *p, bool owned, size_t bytes, fr_error *err)
{
    if (owned) return (uint8_t *)(uintptr_t)p;
    uint8_t *c = fr_malloc(bytes ? bytes : 1);
    if (!c) {
        fr_fail(err, FR_ENOMEM, "out of memory copying a result column");
        return NULL;
    }
    if (bytes) memcpy(c, p, bytes);
    return c;
}

/* Fills bufs[1] and bufs[2] from v; whatever moves into bufs is cleared in v. */
static int ex_values_buffer(ex_vec *v, const fr_type *type, uint8_t **bufs, fr_error *err)
{
    size_t n = (size_t)v->n;
    int width = fr_type_width(type);
    switch (v->phys) {
    case EX_P_BOOL:
        bufs[2] = (uint8_t *)v->bits;
        v->bits = NULL;
        return 0;
    case EX_P_I64:
        if (width != 8) return ex_narrow(v, type, width, &bufs[2], err);
        bufs[2] = ex_take(v->i, v->own_vals, n * 8, err);
        if (v->own_vals) v->i = NULL;
        return bufs[2] ? 0 : FR_ENOMEM;
    case EX_P_F64:
        if (type->id == FR_T_FLOAT) {
            float *p = ex_alloc_array(v->n, 4, err);
            if (!p) return FR_ENOMEM;
            for (size_t r = 0; r < n; r++) p[r] = (float)v->f[r];
            bufs[2] = (uint8_t *)p;
            return 0;
        }
        bufs[2] = ex_take(v->f, v->own_vals, n * 8, err);
        if (v->own_vals) v->f = NULL;
        return bufs[2] ? 0 : FR_ENOMEM;
    case EX_P_I128:
        bufs[2] = ex_take(v->d, v->own_vals, n * 16, err);
        if (v->own_vals) v->d = NULL;
        return bufs[2] ? 0 : FR_ENOMEM;
    case EX_P_STR: {
        if (v->own_str) { /* built here: offsets start at 0 */
            bufs[1] = (uint8_t *)(uintptr_t)v->offs;
            bufs[2] = (uint8_t *)(uintptr_t)v->bytes;
            v->offs = NULL;
            v->bytes = NULL;
            return 0;
        }
        /* Borrowed offsets may start past 0 (Arrow allows it); a batch wants them at 0. */
        int32_t base = v->offs[0];
        size_t nbytes = (size_t)(v->offs[n] - base);
        int32_t *offs = ex_alloc_array(v->n + 1, 4, err);
        if (!offs) return FR_ENOMEM;
        for (size_t r = 0; r <= n; r++) offs[r] = v->offs[r] - base;
        bufs[1] = (uint8_t *)offs;
        bufs[2] = ex_take(v->bytes + base, false, nbytes, err);
        return bufs[2] ? 0 : FR_ENOMEM;
    }
    }
    return 0;
}

int ex_vec_to_batch(ex_vec *v, const fr_type *type, const char *name, fr_batch **out,
                    fr_error *err)
{
    FR_TRY(ex_vec_materialize(v, err));
    uint8_t *bufs[3] = {NULL, NULL, NULL};
    int64_t null_counts[1] = {v->null_count};
    fr_field field = {.name = (char *)name, .type = *type};
    if (v->null_count > 0) field.type.nullable = true;
    fr_schema *schema = NULL;
    int rc = ex_values_buffer(v, type, bufs, err);
    if (rc == 0 && v->null_count > 0) {
        bufs[0] = (uint8_t *)v->valid;
        v->valid = NULL;
    }
    if (rc == 0) rc = fr_schema_new(&field, 1, 0, &schema, err);
    if (rc < 0) {
        for (int k = 0; k < 3; k++) fr_free(bufs[k]);
        ex_vec_free(v);
        return rc;
    }
    rc = fr_batch_from_buffers(schema, v->n, bufs, null_counts, out, err);
    fr_schema_free(schema);
    ex_vec_free(v);
    return rc;
}
