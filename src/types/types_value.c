/* types_value.c — value constructors, comparison and the small numeric helpers the value
 * files share (integer ranges, decimal rescale, time-unit conversion).
 *
 * Comparison is exact between integers and decimals (both sides are brought to a common
 * scale in 128 bits; a side that would overflow is larger in magnitude than anything that
 * fits) and by double as soon as a FLOAT or DOUBLE is involved. NaN sorts after every
 * number and equals itself, so sorting stays total. */
#include "types_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static fr_value fr_value_base(fr_type t)
{
    fr_value v;
    memset(&v, 0, sizeof v);
    v.type = t;
    return v;
}

fr_value fr_value_null(fr_type t)
{
    fr_value v = fr_value_base(t);
    v.is_null = true;
    return v;
}

/* Stores i in the member the type uses, so fr_value_int works for every non-string type:
 * BOOLEAN gets i != 0, DECIMAL the unscaled i, FLOAT and DOUBLE the number i. */
fr_value fr_value_int(fr_type t, int64_t i)
{
    fr_value v = fr_value_base(t);
    switch (t.id) {
    case FR_T_BOOLEAN: v.v.b = i != 0; break;
    case FR_T_DECIMAL: v.v.d = i; break;
    case FR_T_FLOAT: v.v.f = (float)i; break;
    case FR_T_DOUBLE: v.v.f = (double)i; break;
    default: v.v.i = i; break;
    }
    return v;
}

fr_value fr_value_double(fr_type t, double f)
{
    fr_value v = fr_value_base(t);
    v.v.f = t.id == FR_T_FLOAT ? (double)(float)f : f;
    return v;
}

fr_value fr_value_str(fr_type t, const void *p, size_t n)
{
    fr_value v = fr_value_base(t);
    v.v.s.ptr = p;
    v.v.s.len = n;
    return v;
}

fr_value fr_value_bool(fr_type t, bool b)
{
    fr_value v = fr_value_base(t);
    v.v.b = b;
    return v;
}

fr_value fr_value_decimal(fr_type t, fr_i128 unscaled)
{
    fr_value v = fr_value_base(t);
    v.v.d = unscaled;
    return v;
}

/* ---- shared helpers -------------------------------------------------------------------- */

void fr_int_range(fr_type_id id, int64_t *lo, int64_t *hi)
{
    switch (id) {
    case FR_T_TINYINT: *lo = INT8_MIN; *hi = INT8_MAX; return;
    case FR_T_SMALLINT: *lo = INT16_MIN; *hi = INT16_MAX; return;
    case FR_T_INT: *lo = INT32_MIN; *hi = INT32_MAX; return;
    default: *lo = INT64_MIN; *hi = INT64_MAX; return;
    }
}

const char *fr_type_name_buf(const fr_type *t, char *buf, size_t cap)
{
    fr_type_format(t, false, buf, cap);
    return buf;
}

int fr_decimal_rescale(fr_i128 v, int from_scale, int to_scale, int precision, fr_i128 *out,
                       fr_error *err)
{
    char txt[48];
    if (to_scale > from_scale) {
        int k = to_scale - from_scale;
        if (v != 0) {
            fr_i128 lim = precision >= 38 ? fr_i128_pow10(38) - 1 : fr_i128_pow10(precision) - 1;
            fr_i128 mag = v < 0 ? -v : v;
            if (k > 38 || mag > lim / fr_i128_pow10(k)) {
                fr_decimal_format(v, from_scale, txt, sizeof txt);
                return fr_fail(err, FR_ERANGE, "value %s does not fit DECIMAL(%d, %d)", txt,
                               precision, to_scale);
            }
            v *= fr_i128_pow10(k);
        }
    } else if (to_scale < from_scale) {
        int k = from_scale - to_scale;
        if (k > 38) {
            v = 0;
        } else {
            fr_i128 m = fr_i128_pow10(k);
            fr_i128 q = v / m, r = v % m;
            fr_i128 ar = r < 0 ? -r : r;
            /* Half away from zero: the dropped part is at least half of m. */
            if (ar >= m - ar) q += v < 0 ? -1 : 1;
            v = q;
        }
    }
    if (!fr_decimal_fits(v, precision)) {
        fr_decimal_format(v, to_scale, txt, sizeof txt);
        return fr_fail(err, FR_ERANGE, "value %s does not fit DECIMAL(%d, %d)", txt, precision,
                       to_scale);
    }
    *out = v;
    return FR_OK;
}

int fr_time_rescale(int64_t v, int from_p, int to_p, int64_t *out)
{
    int64_t uf = fr_type_time_units(from_p), ut = fr_type_time_units(to_p);
    if (ut == uf) {
        *out = v;
    } else if (ut > uf) {
        if (__builtin_mul_overflow(v, ut / uf, out)) return FR_ERANGE;
    } else {
        *out = fr_floor_div(v, uf / ut);
    }
    return FR_OK;
}

double fr_decimal_to_double(fr_i128 unscaled, int scale)
{
    fr_i128 mag = unscaled < 0 ? -unscaled : unscaled;
    /* Both operands exact, so the quotient is correctly rounded. */
    if (mag < ((fr_i128)1 << 53) && scale <= 22) {
        static const double p10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                     1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                     1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
        return (double)unscaled / p10[scale];
    }
    char txt[48];
    fr_decimal_format(unscaled, scale, txt, sizeof txt);
    return strtod(txt, NULL);
}

/* Number of UTF-8 characters: bytes that do not continue a sequence. */
static size_t fr_utf8_chars(const uint8_t *p, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++) c += (p[i] & 0xC0) != 0x80;
    return c;
}

/* CHAR(n) and VARCHAR(n) count UTF-8 characters and reject longer values rather than
 * cutting them. */
int fr_text_check_length(const uint8_t *p, size_t n, const fr_type *to, fr_error *err)
{
    if (to->id != FR_T_CHAR && to->id != FR_T_VARCHAR) return FR_OK;
    if (n <= (size_t)to->length || fr_utf8_chars(p, n) <= (size_t)to->length) return FR_OK;
    char tn[64];
    int q = (int)(n > 40 ? 40 : n);
    return fr_fail(err, FR_ERANGE, "value '%.*s%s' is longer than %s", q, (const char *)p,
                   n > 40 ? "..." : "", fr_type_name_buf(to, tn, sizeof tn));
}

/* ---- comparison ------------------------------------------------------------------------ */

static int fr_cmp_i128(fr_i128 a, fr_i128 b)
{
    return (a > b) - (a < b);
}

/* Unscaled value and scale of an integer or decimal. */
static void fr_exact_of(const fr_value *v, fr_i128 *u, int *scale)
{
    if (v->type.id == FR_T_DECIMAL) {
        *u = v->v.d;
        *scale = v->type.scale;
    } else {
        *u = v->v.i;
        *scale = 0;
    }
}

static int fr_cmp_exact(const fr_value *a, const fr_value *b)
{
    fr_i128 ua, ub;
    int sa, sb;
    fr_exact_of(a, &ua, &sa);
    fr_exact_of(b, &ub, &sb);
    if (sa == sb) return fr_cmp_i128(ua, ub);
    /* Scale up the side with the smaller scale. */
    bool a_up = sa < sb;
    fr_i128 x = a_up ? ua : ub;
    int k = a_up ? sb - sa : sa - sb;
    fr_i128 m = fr_i128_pow10(k);
    fr_i128 mag = x < 0 ? -x : x;
    fr_i128 imax = (fr_i128)(((unsigned __int128)1 << 127) - 1);
    if (k > 38 || mag > imax / m) {
        /* x scaled exceeds every 128-bit value, so its sign decides. */
        int sx = (x > 0) - (x < 0);
        return a_up ? sx : -sx;
    }
    x *= m;
    return a_up ? fr_cmp_i128(x, ub) : fr_cmp_i128(ua, x);
}

static double fr_as_double(const fr_value *v)
{
    switch (v->type.id) {
    case FR_T_FLOAT:
    case FR_T_DOUBLE: return v->v.f;
    case FR_T_DECIMAL: return fr_decimal_to_double(v->v.d, v->type.scale);
    default: return (double)v->v.i;
    }
}

static int fr_cmp_double(double a, double b)
{
    bool na = isnan(a), nb = isnan(b);
    if (na || nb) return (int)na - (int)nb;
    return (a > b) - (a < b);
}

static int fr_cmp_bytes(const fr_value *a, const fr_value *b)
{
    size_t n = a->v.s.len < b->v.s.len ? a->v.s.len : b->v.s.len;
    int c = n ? memcmp(a->v.s.ptr, b->v.s.ptr, n) : 0;
    if (c != 0) return c < 0 ? -1 : 1;
    return (a->v.s.len > b->v.s.len) - (a->v.s.len < b->v.s.len);
}

/* A DATE or TIMESTAMP as a 128-bit count of `units` since the epoch. */
static fr_i128 fr_instant_in(const fr_value *v, int64_t units)
{
    if (v->type.id == FR_T_DATE) return (fr_i128)v->v.i * FR_SECONDS_PER_DAY * units;
    int64_t own = fr_type_time_units(v->type.precision);
    return (fr_i128)v->v.i * (units / own);
}

static int fr_cmp_temporal(const fr_value *a, const fr_value *b, int *cmp)
{
    fr_type_id ia = a->type.id, ib = b->type.id;
    if (ia == FR_T_TIME || ib == FR_T_TIME) {
        if (ia != ib) return FR_ETYPE;
        int64_t u = fr_type_time_units(a->type.precision > b->type.precision ? a->type.precision
                                                                            : b->type.precision);
        fr_i128 x = (fr_i128)a->v.i * (u / fr_type_time_units(a->type.precision));
        fr_i128 y = (fr_i128)b->v.i * (u / fr_type_time_units(b->type.precision));
        *cmp = fr_cmp_i128(x, y);
        return FR_OK;
    }
    if (ia == FR_T_DATE && ib == FR_T_DATE) {
        *cmp = (a->v.i > b->v.i) - (a->v.i < b->v.i);
        return FR_OK;
    }
    int pa = ia == FR_T_DATE ? 0 : a->type.precision;
    int pb = ib == FR_T_DATE ? 0 : b->type.precision;
    int64_t u = fr_type_time_units(pa > pb ? pa : pb);
    *cmp = fr_cmp_i128(fr_instant_in(a, u), fr_instant_in(b, u));
    return FR_OK;
}

int fr_value_compare(const fr_value *a, const fr_value *b, int *cmp, fr_error *err)
{
    char ta[64], tb[64];
    FR_CHECK(!a->is_null && !b->is_null, FR_EINVAL, err, "cannot compare NULL values");
    fr_type_id ia = a->type.id, ib = b->type.id;
    int rc = FR_ETYPE;
    if (fr_type_is_numeric(ia) && fr_type_is_numeric(ib)) {
        bool fl = ia == FR_T_FLOAT || ia == FR_T_DOUBLE || ib == FR_T_FLOAT || ib == FR_T_DOUBLE;
        *cmp = fl ? fr_cmp_double(fr_as_double(a), fr_as_double(b)) : fr_cmp_exact(a, b);
        rc = FR_OK;
    } else if (ia == FR_T_BOOLEAN && ib == FR_T_BOOLEAN) {
        *cmp = (int)a->v.b - (int)b->v.b;
        rc = FR_OK;
    } else if ((fr_type_is_string(ia) && fr_type_is_string(ib)) ||
               (ia == FR_T_BYTES && ib == FR_T_BYTES)) {
        *cmp = fr_cmp_bytes(a, b);
        rc = FR_OK;
    } else if (fr_type_is_temporal(ia) && fr_type_is_temporal(ib)) {
        rc = fr_cmp_temporal(a, b, cmp);
    }
    if (rc == FR_OK) return FR_OK;
    return fr_fail(err, FR_ETYPE, "cannot compare %s with %s",
                   fr_type_name_buf(&a->type, ta, sizeof ta),
                   fr_type_name_buf(&b->type, tb, sizeof tb));
}
