/* types_value_cast.c — SQL CAST between firth's types.
 *
 * The pairs supported: integer/decimal/boolean among themselves with range checks (to an
 * integer truncates toward zero, to a decimal rounds half away from zero), any numeric to
 * FLOAT/DOUBLE, FLOAT/DOUBLE to integer (truncating) and to DECIMAL (through the shortest
 * text of the double, as Flink does through BigDecimal.valueOf), strings to anything by
 * parsing, anything to strings by formatting into the caller's arena, BYTES and strings
 * into each other byte for byte, and between the temporal types: DATE to TIMESTAMP, TIME
 * and TIMESTAMP precision changes (floor when coarser), TIMESTAMP to and from LTZ (the
 * session zone is UTC), TIMESTAMP to DATE and to TIME. CHAR(n) and VARCHAR(n) count UTF-8
 * characters and reject longer values rather than cutting them. */
#include "types_int.h"

#include <math.h>
#include <stdio.h>

/* Fails with "value <text> is out of range for <TYPE>". */
static int fr_cast_range(const fr_value *v, const fr_type *to, fr_error *err)
{
    char tn[64];
    fr_buf b;
    fr_buf_init(&b);
    fr_type_name_buf(to, tn, sizeof tn);
    int rc = fr_value_format(v, &b, NULL);
    if (rc < 0 || b.len > 64) {
        fr_buf_free(&b);
        return fr_fail(err, FR_ERANGE, "value is out of range for %s", tn);
    }
    rc = fr_fail(err, FR_ERANGE, "value %.*s is out of range for %s", (int)b.len,
                 (const char *)b.data, tn);
    fr_buf_free(&b);
    return rc;
}

static int fr_cast_unsupported(const fr_value *v, const fr_type *to, fr_error *err)
{
    char a[64], b[64];
    return fr_fail(err, FR_ETYPE, "cannot cast %s to %s", fr_type_name_buf(&v->type, a, sizeof a),
                   fr_type_name_buf(to, b, sizeof b));
}

/* ---- to and from text ------------------------------------------------------------------ */

static int fr_cast_to_text(const fr_value *v, const fr_type *to, fr_arena *arena, fr_value *out,
                           fr_error *err)
{
    if (fr_type_is_string(v->type.id) || v->type.id == FR_T_BYTES) {
        FR_TRY(fr_text_check_length(v->v.s.ptr, v->v.s.len, to, err));
        *out = fr_value_str(*to, v->v.s.ptr, v->v.s.len);
        return FR_OK;
    }
    if (to->id == FR_T_BYTES) return fr_cast_unsupported(v, to, err);
    FR_CHECK(arena != NULL, FR_EINVAL, err, "casting to a string needs an arena");
    fr_buf b;
    fr_buf_init(&b);
    int rc = fr_value_format(v, &b, err);
    if (rc == FR_OK) rc = fr_text_check_length(b.data, b.len, to, err);
    char *p = NULL;
    if (rc == FR_OK) {
        p = fr_arena_strndup(arena, b.len ? (const char *)b.data : "", b.len);
        if (!p) rc = fr_fail(err, FR_ENOMEM, "out of memory casting to a string");
    }
    if (rc == FR_OK) *out = fr_value_str(*to, p, b.len);
    fr_buf_free(&b);
    return rc;
}

/* ---- numbers --------------------------------------------------------------------------- */

static int fr_cast_to_integer(const fr_value *v, const fr_type *to, fr_value *out, fr_error *err)
{
    int64_t lo, hi;
    fr_int_range(to->id, &lo, &hi);
    fr_i128 x;
    switch (v->type.id) {
    case FR_T_BOOLEAN:
        x = v->v.b;
        break;
    case FR_T_DECIMAL:
        x = v->v.d / fr_i128_pow10(v->type.scale); /* C division truncates toward zero */
        break;
    case FR_T_FLOAT:
    case FR_T_DOUBLE: {
        double t = trunc(v->v.f);
        /* 2^63 is exact in double; everything in [-2^63, 2^63) converts without UB. */
        if (isnan(t) || t < -9223372036854775808.0 || t >= 9223372036854775808.0)
            return fr_cast_range(v, to, err);
        x = (int64_t)t;
        break;
    }
    default:
        x = v->v.i;
        break;
    }
    if (x < lo || x > hi) return fr_cast_range(v, to, err);
    *out = fr_value_int(*to, (int64_t)x);
    return FR_OK;
}

static int fr_cast_to_decimal(const fr_value *v, const fr_type *to, fr_value *out, fr_error *err)
{
    fr_i128 d;
    int rc;
    switch (v->type.id) {
    case FR_T_BOOLEAN:
        rc = fr_decimal_rescale(v->v.b, 0, to->scale, to->precision, &d, err);
        break;
    case FR_T_DECIMAL:
        rc = fr_decimal_rescale(v->v.d, v->type.scale, to->scale, to->precision, &d, err);
        break;
    case FR_T_FLOAT:
    case FR_T_DOUBLE: {
        if (!isfinite(v->v.f)) return fr_cast_range(v, to, err);
        char txt[40];
        int n = fr_double_format(v->v.f, v->type.id == FR_T_FLOAT, txt, sizeof txt);
        rc = fr_decimal_parse(txt, (size_t)n, to->precision, to->scale, &d, err);
        break;
    }
    default:
        rc = fr_decimal_rescale(v->v.i, 0, to->scale, to->precision, &d, err);
        break;
    }
    if (rc < 0) return fr_cast_range(v, to, err);
    *out = fr_value_decimal(*to, d);
    return FR_OK;
}

static int fr_cast_to_floating(const fr_value *v, const fr_type *to, fr_value *out)
{
    double f;
    switch (v->type.id) {
    case FR_T_BOOLEAN: f = v->v.b; break;
    case FR_T_FLOAT:
    case FR_T_DOUBLE: f = v->v.f; break;
    case FR_T_DECIMAL: f = fr_decimal_to_double(v->v.d, v->type.scale); break;
    default: f = (double)v->v.i; break;
    }
    *out = fr_value_double(*to, f);
    return FR_OK;
}

static int fr_cast_to_boolean(const fr_value *v, const fr_type *to, fr_value *out)
{
    bool b;
    switch (v->type.id) {
    case FR_T_BOOLEAN: b = v->v.b; break;
    case FR_T_FLOAT:
    case FR_T_DOUBLE: b = v->v.f != 0; break;
    case FR_T_DECIMAL: b = v->v.d != 0; break;
    default: b = v->v.i != 0; break;
    }
    *out = fr_value_bool(*to, b);
    return FR_OK;
}

/* ---- temporal -------------------------------------------------------------------------- */

static int fr_cast_temporal(const fr_value *v, const fr_type *to, fr_value *out, fr_error *err)
{
    fr_type_id from = v->type.id;
    bool from_ts = from == FR_T_TIMESTAMP || from == FR_T_TIMESTAMP_LTZ;
    bool to_ts = to->id == FR_T_TIMESTAMP || to->id == FR_T_TIMESTAMP_LTZ;
    int64_t r;
    if (from == FR_T_DATE && to->id == FR_T_DATE) {
        r = v->v.i;
    } else if (from == FR_T_DATE && to_ts) {
        int64_t day = FR_SECONDS_PER_DAY * fr_type_time_units(to->precision);
        if (__builtin_mul_overflow(v->v.i, day, &r)) return fr_cast_range(v, to, err);
    } else if (from_ts && to_ts) {
        if (fr_time_rescale(v->v.i, v->type.precision, to->precision, &r) < 0)
            return fr_cast_range(v, to, err);
    } else if (from_ts && to->id == FR_T_DATE) {
        int64_t day = FR_SECONDS_PER_DAY * fr_type_time_units(v->type.precision);
        r = fr_floor_div(v->v.i, day);
        if (r < INT32_MIN || r > INT32_MAX) return fr_cast_range(v, to, err);
    } else if ((from_ts || from == FR_T_TIME) && to->id == FR_T_TIME) {
        int64_t x = v->v.i;
        if (from_ts) x = fr_floor_mod(x, FR_SECONDS_PER_DAY * fr_type_time_units(v->type.precision));
        if (fr_time_rescale(x, v->type.precision, to->precision, &r) < 0)
            return fr_cast_range(v, to, err);
    } else {
        return fr_cast_unsupported(v, to, err);
    }
    *out = fr_value_int(*to, r);
    return FR_OK;
}

int fr_value_cast(const fr_value *v, const fr_type *to, fr_arena *arena, fr_value *out,
                  fr_error *err)
{
    if (v->is_null) {
        *out = fr_value_null(*to);
        return FR_OK;
    }
    fr_type_id from = v->type.id;
    if (fr_type_is_string(to->id) || to->id == FR_T_BYTES)
        return fr_cast_to_text(v, to, arena, out, err);
    if (fr_type_is_string(from)) {
        int rc = fr_value_parse((const char *)v->v.s.ptr, v->v.s.len, to, out, err);
        if (rc < 0) return rc;
        out->type = *to;
        return FR_OK;
    }
    bool num_from = fr_type_is_numeric(from) || from == FR_T_BOOLEAN;
    int rc;
    if (num_from && fr_type_is_integer(to->id)) {
        rc = fr_cast_to_integer(v, to, out, err);
    } else if (num_from && to->id == FR_T_DECIMAL) {
        rc = fr_cast_to_decimal(v, to, out, err);
    } else if (num_from && (to->id == FR_T_FLOAT || to->id == FR_T_DOUBLE)) {
        rc = fr_cast_to_floating(v, to, out);
    } else if (num_from && to->id == FR_T_BOOLEAN) {
        rc = fr_cast_to_boolean(v, to, out);
    } else if (fr_type_is_temporal(from) && fr_type_is_temporal(to->id)) {
        rc = fr_cast_temporal(v, to, out, err);
    } else {
        rc = fr_cast_unsupported(v, to, err);
    }
    return rc;
}
