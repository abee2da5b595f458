/* types_value_format.c — the text form of values, used by `firth sql`, CSV and casts to
 * strings. Doubles print the shortest text that reads back to the same bit pattern, in
 * the notation of Java's Double.toString (which Flink users see): plain between 1e-3 and
 * 1e7 with at least one fractional digit, scientific "d.dddE±n" outside. Temporal values
 * print exactly the type's precision of fractional digits and work for any epoch value,
 * negative ones included (years beyond 9999 get a '+' as in ISO 8601). */
#include "types_int.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* Shortest round-trip significand digits and decimal exponent of a finite non-zero x:
 * x ~ 0.d1d2...dk * 10^(exp10 + 1), i.e. d1.d2...dk * 10^exp10. */
static int fr_shortest_digits(double x, bool is_float, char *digits, int *exp10)
{
    char tmp[40];
    /* With full precision, the nearest 15-digit (6 for float) decimal is the only one of
     * that length that can read back, so shorter ones need no try; subnormals have fewer
     * bits and start from two digits, the fewest the notation shows. */
    bool subnormal = is_float ? fabs(x) < FLT_MIN : fabs(x) < DBL_MIN;
    int lo = subnormal ? 2 : is_float ? 6 : 15, hi = is_float ? 9 : 17;
    for (int prec = lo; prec <= hi; prec++) {
        snprintf(tmp, sizeof tmp, "%.*e", prec - 1, x);
        bool same = is_float ? (double)strtof(tmp, NULL) == x : strtod(tmp, NULL) == x;
        if (same || prec == hi) break;
    }
    /* tmp is "[-]d.ddddde[+-]xx". */
    const char *p = tmp;
    if (*p == '-') p++;
    int nd = 0;
    for (; *p && *p != 'e'; p++)
        if (*p >= '0' && *p <= '9') digits[nd++] = *p;
    *exp10 = atoi(p + 1);
    while (nd > 1 && digits[nd - 1] == '0') nd--;
    digits[nd] = '\0';
    return nd;
}

int fr_double_format(double f, bool is_float, char *out, size_t cap)
{
    if (isnan(f)) return snprintf(out, cap, "NaN");
    if (isinf(f)) return snprintf(out, cap, f < 0 ? "-Infinity" : "Infinity");
    if (f == 0) return snprintf(out, cap, signbit(f) ? "-0.0" : "0.0");
    char digits[40];
    int e;
    int nd = fr_shortest_digits(f, is_float, digits, &e);
    char buf[64];
    size_t n = 0;
    if (f < 0) buf[n++] = '-';
    double a = fabs(f);
    if (a >= 1e-3 && a < 1e7) {
        if (e < 0) {
            /* 0.000ddd */
            buf[n++] = '0';
            buf[n++] = '.';
            for (int i = 0; i < -e - 1; i++) buf[n++] = '0';
            for (int i = 0; i < nd; i++) buf[n++] = digits[i];
        } else {
            for (int i = 0; i <= e; i++) buf[n++] = i < nd ? digits[i] : '0';
            buf[n++] = '.';
            if (nd > e + 1) {
                for (int i = e + 1; i < nd; i++) buf[n++] = digits[i];
            } else {
                buf[n++] = '0';
            }
        }
    } else {
        buf[n++] = digits[0];
        buf[n++] = '.';
        if (nd > 1) {
            for (int i = 1; i < nd; i++) buf[n++] = digits[i];
        } else {
            buf[n++] = '0';
        }
        n += (size_t)snprintf(buf + n, sizeof buf - n, "E%d", e);
    }
    buf[n] = '\0';
    return snprintf(out, cap, "%s", buf);
}

/* "yyyy-mm-dd" for a day number; years outside 0..9999 carry a sign. */
static int fr_format_date(int64_t days, fr_buf *out, fr_error *err)
{
    int64_t y;
    unsigned m, d;
    fr_civil_from_days(days, &y, &m, &d);
    if (y < 0) return fr_buf_printf(out, err, "-%04lld-%02u-%02u", (long long)-y, m, d);
    if (y > 9999) return fr_buf_printf(out, err, "+%lld-%02u-%02u", (long long)y, m, d);
    return fr_buf_printf(out, err, "%04lld-%02u-%02u", (long long)y, m, d);
}

/* "hh:mm:ss[.fff]" for `v` units (of precision p) since midnight, 0 <= v < one day. */
static int fr_format_time_of_day(int64_t v, int p, fr_buf *out, fr_error *err)
{
    int64_t units = fr_type_time_units(p);
    int64_t secs = v / units, frac = v % units;
    FR_TRY(fr_buf_printf(out, err, "%02d:%02d:%02d", (int)(secs / 3600), (int)(secs / 60 % 60),
                         (int)(secs % 60)));
    if (p == 0) return FR_OK;
    /* The unit holds 0, 3, 6 or 9 digits; print the first p of them. */
    int unit_digits = units == 1000 ? 3 : units == 1000000 ? 6 : 9;
    for (int i = p; i < unit_digits; i++) frac /= 10;
    return fr_buf_printf(out, err, ".%0*lld", p, (long long)frac);
}

static int fr_format_bytes(const fr_value *v, fr_buf *out, fr_error *err)
{
    static const char hex[] = "0123456789abcdef";
    FR_TRY(fr_buf_reserve(out, 2 + 2 * v->v.s.len, err));
    out->data[out->len++] = '\\';
    out->data[out->len++] = 'x';
    for (size_t i = 0; i < v->v.s.len; i++) {
        out->data[out->len++] = (uint8_t)hex[v->v.s.ptr[i] >> 4];
        out->data[out->len++] = (uint8_t)hex[v->v.s.ptr[i] & 15];
    }
    return FR_OK;
}

int fr_value_format(const fr_value *v, fr_buf *out, fr_error *err)
{
    if (v->is_null) return fr_buf_append(out, "NULL", 4, err);
    char txt[64];
    switch (v->type.id) {
    case FR_T_BOOLEAN:
        return v->v.b ? fr_buf_append(out, "true", 4, err) : fr_buf_append(out, "false", 5, err);
    case FR_T_TINYINT:
    case FR_T_SMALLINT:
    case FR_T_INT:
    case FR_T_BIGINT:
        return fr_buf_printf(out, err, "%lld", (long long)v->v.i);
    case FR_T_FLOAT:
    case FR_T_DOUBLE: {
        int n = fr_double_format(v->v.f, v->type.id == FR_T_FLOAT, txt, sizeof txt);
        return fr_buf_append(out, txt, (size_t)n, err);
    }
    case FR_T_DECIMAL: {
        int n = fr_decimal_format(v->v.d, v->type.scale, txt, sizeof txt);
        return fr_buf_append(out, txt, (size_t)n, err);
    }
    case FR_T_CHAR:
    case FR_T_VARCHAR:
    case FR_T_STRING:
        return fr_buf_append(out, v->v.s.ptr, v->v.s.len, err);
    case FR_T_BYTES:
        return fr_format_bytes(v, out, err);
    case FR_T_DATE:
        return fr_format_date(v->v.i, out, err);
    case FR_T_TIME: {
        int64_t day = FR_SECONDS_PER_DAY * fr_type_time_units(v->type.precision);
        FR_CHECK(v->v.i >= 0 && v->v.i < day, FR_ERANGE, err,
                 "TIME value %lld is outside one day", (long long)v->v.i);
        return fr_format_time_of_day(v->v.i, v->type.precision, out, err);
    }
    case FR_T_TIMESTAMP:
    case FR_T_TIMESTAMP_LTZ: {
        int64_t day = FR_SECONDS_PER_DAY * fr_type_time_units(v->type.precision);
        FR_TRY(fr_format_date(fr_floor_div(v->v.i, day), out, err));
        FR_TRY(fr_buf_append(out, " ", 1, err));
        FR_TRY(fr_format_time_of_day(fr_floor_mod(v->v.i, day), v->type.precision, out, err));
        if (v->type.id == FR_T_TIMESTAMP_LTZ) FR_TRY(fr_buf_append(out, "Z", 1, err));
        return FR_OK;
    }
    }
    return fr_fail(err, FR_ETYPE, "cannot format a value of unknown type id %d", (int)v->type.id);
}
