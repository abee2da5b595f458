/* kv_agg.c — the aggregate functions of the aggregation merge engine, one cell at a time:
 * the stored value is the accumulator, the written value the input.
 *
 * They follow Apache Fluss (docs/TABLES.md, "Merge engines"): every function but
 * last_value and first_value ignores a NULL input (a NULL accumulator takes the input);
 * integer sums and products wrap around at the column's width as Java's arithmetic does;
 * FLOAT arithmetic is done in single precision; a DECIMAL sum or product that needs more
 * digits than the column has becomes NULL (products are rounded half up to the column's
 * scale first), as Fluss's Decimal.fromBigDecimal does. */
#include "kv/kv_int.h"

/* Integer arithmetic that wraps like Java's at the width of the type. */
static int64_t agg_wrap(fr_type_id id, uint64_t v)
{
    switch (id) {
    case FR_T_TINYINT: return (int8_t)(uint8_t)v;
    case FR_T_SMALLINT: return (int16_t)(uint16_t)v;
    case FR_T_INT: return (int32_t)(uint32_t)v;
    default: return (int64_t)v;
    }
}

/* ---- 256-bit magnitudes for DECIMAL products ---------------------------------------------- */

typedef unsigned __int128 agg_u128;

/* a * b into four 64-bit limbs, least significant first. */
static void agg_mul_128(agg_u128 a, agg_u128 b, uint64_t out[4])
{
    uint64_t x[2] = { (uint64_t)a, (uint64_t)(a >> 64) };
    uint64_t y[2] = { (uint64_t)b, (uint64_t)(b >> 64) };
    memset(out, 0, 4 * sizeof out[0]);
    for (int i = 0; i < 2; i++) {
        agg_u128 carry = 0;
        for (int j = 0; j < 2; j++) {
            agg_u128 cur = (agg_u128)x[i] * y[j] + out[i + j] + carry;
            out[i + j] = (uint64_t)cur;
            carry = cur >> 64;
        }
        out[i + 2] = (uint64_t)carry;
    }
}

/* Divides the limbs by 10 in place; returns the remainder. */
static unsigned agg_div10(uint64_t v[4])
{
    agg_u128 rem = 0;
    for (int i = 3; i >= 0; i--) {
        agg_u128 cur = (rem << 64) | v[i];
        v[i] = (uint64_t)(cur / 10);
        rem = cur % 10;
    }
    return (unsigned)rem;
}

/* The product of two unscaled decimals of scale s, rounded half up back to scale s; false
 * when it does not fit `precision` digits. */
static bool agg_decimal_mul(fr_i128 a, fr_i128 b, int scale, int precision, fr_i128 *out)
{
    bool negative = (a < 0) != (b < 0);
    agg_u128 ma = a < 0 ? (agg_u128)(-a) : (agg_u128)a;
    agg_u128 mb = b < 0 ? (agg_u128)(-b) : (agg_u128)b;
    uint64_t v[4];
    agg_mul_128(ma, mb, v);
    if (scale > 0) {
        for (int i = 0; i < scale - 1; i++) agg_div10(v);
        unsigned digit = agg_div10(v); /* the first digit dropped decides half up */
        if (digit >= 5) {
            for (int i = 0; i < 4 && ++v[i] == 0; i++) {
            }
        }
    }
    if (v[2] || v[3] || (v[1] >> 63)) return false;
    fr_i128 m = (fr_i128)(((agg_u128)v[1] << 64) | v[0]);
    if (!fr_decimal_fits(m, precision)) return false;
    *out = negative ? -m : m;
    return true;
}

/* ---- the functions --------------------------------------------------------------------- */

static void agg_sum(const fr_type *t, const fr_value *a, const fr_value *b, fr_value *out)
{
    switch (t->id) {
    case FR_T_FLOAT: out->v.f = (double)((float)a->v.f + (float)b->v.f); break;
    case FR_T_DOUBLE: out->v.f = a->v.f + b->v.f; break;
    case FR_T_DECIMAL: {
        fr_i128 s;
        if (__builtin_add_overflow(a->v.d, b->v.d, &s) || !fr_decimal_fits(s, t->precision))
            out->is_null = true;
        else
            out->v.d = s;
        break;
    }
    default: out->v.i = agg_wrap(t->id, (uint64_t)a->v.i + (uint64_t)b->v.i); break;
    }
}

static void agg_product(const fr_type *t, const fr_value *a, const fr_value *b, fr_value *out)
{
    switch (t->id) {
    case FR_T_FLOAT: out->v.f = (double)((float)a->v.f * (float)b->v.f); break;
    case FR_T_DOUBLE: out->v.f = a->v.f * b->v.f; break;
    case FR_T_DECIMAL:
        if (!agg_decimal_mul(a->v.d, b->v.d, t->scale, t->precision, &out->v.d))
            out->is_null = true;
        break;
    default: out->v.i = agg_wrap(t->id, (uint64_t)a->v.i * (uint64_t)b->v.i); break;
    }
}

static int agg_listagg(const fr_value *a, const fr_value *b, const char *delim,
                       fr_arena *arena, fr_value *out, fr_error *err)
{
    if (!delim) delim = ",";
    size_t dl = strlen(delim);
    size_t n = a->v.s.len + dl + b->v.s.len;
    uint8_t *m = fr_arena_alloc(arena, n ? n : 1);
    if (!m) return fr_fail(err, FR_ENOMEM, "listagg: out of memory for %zu bytes", n);
    if (a->v.s.len) memcpy(m, a->v.s.ptr, a->v.s.len);
    memcpy(m + a->v.s.len, delim, dl);
    if (b->v.s.len) memcpy(m + a->v.s.len + dl, b->v.s.ptr, b->v.s.len);
    out->v.s.ptr = m;
    out->v.s.len = n;
    return FR_OK;
}

/* Both acc and in are non-null here. */
static int agg_both(fr_agg_fn fn, const fr_type *t, const char *delim, const fr_value *acc,
                    const fr_value *in, fr_arena *arena, fr_value *out, fr_error *err)
{
    switch (fn) {
    case FR_AGG_SUM: agg_sum(t, acc, in, out); return FR_OK;
    case FR_AGG_PRODUCT: agg_product(t, acc, in, out); return FR_OK;
    case FR_AGG_MAX:
    case FR_AGG_MIN: {
        int cmp;
        FR_TRY(fr_value_compare(acc, in, &cmp, err));
        bool take_in = fn == FR_AGG_MAX ? cmp < 0 : cmp >= 0;
        *out = take_in ? *in : *acc;
        return FR_OK;
    }
    case FR_AGG_LISTAGG: return agg_listagg(acc, in, delim, arena, out, err);
    case FR_AGG_BOOL_AND: out->v.b = acc->v.b && in->v.b; return FR_OK;
    case FR_AGG_BOOL_OR: out->v.b = acc->v.b || in->v.b; return FR_OK;
    case FR_AGG_RBM32:
    case FR_AGG_RBM64: {
        const uint8_t *p;
        size_t n;
        FR_TRY((fn == FR_AGG_RBM32 ? kv_rbm32_union : kv_rbm64_union)(
            acc->v.s.ptr, acc->v.s.len, in->v.s.ptr, in->v.s.len, arena, &p, &n, err));
        out->v.s.ptr = p;
        out->v.s.len = n;
        return FR_OK;
    }
    default: break;
    }
    assert(!"value functions are handled by kv_agg_apply");
    return FR_OK;
}

int kv_agg_apply(fr_agg_fn fn, const fr_type *t, const char *delim, const fr_value *acc,
                 const fr_value *in, fr_arena *arena, fr_value *out, fr_error *err)
{
    switch (fn) {
    case FR_AGG_LAST_VALUE: *out = *in; break;
    case FR_AGG_LAST_VALUE_IGNORE_NULLS: *out = in->is_null ? *acc : *in; break;
    /* The stored value is the first one, NULL included (Fluss's documented rule). */
    case FR_AGG_FIRST_VALUE: *out = *acc; break;
    case FR_AGG_FIRST_VALUE_IGNORE_NULLS: *out = acc->is_null ? *in : *acc; break;
    default:
        if (acc->is_null || in->is_null) {
            *out = acc->is_null ? *in : *acc;
            break;
        }
        memset(out, 0, sizeof *out);
        FR_TRY(agg_both(fn, t, delim, acc, in, arena, out, err));
        break;
    }
    out->type = *t;
    return FR_OK;
}
