/* types_value_parse.c — literal text to values, strictly: the whole text must be the value.
 *
 * Numbers are checked for syntax by hand before strtod so that hex floats, embedded NULs
 * and trailing bytes are rejected. Decimal text keeps at most 38 significant digits plus
 * the first dropped one, which is all that rounding half away from zero needs. Temporal
 * text goes through the calendar helpers with 128-bit intermediate values, so overflow of
 * the 64-bit timestamp is caught rather than wrapped. */
#include "types_int.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#define FR_QUOTE_BYTES_MAX 64

/* Fails with "'<text>' is not a valid <TYPE>" (the text cut to a readable length). */
static int fr_parse_fail(int code, const char *s, size_t n, const fr_type *t, const char *why,
                         fr_error *err)
{
    char tn[64];
    fr_type_name_buf(t, tn, sizeof tn);
    int q = (int)(n > FR_QUOTE_BYTES_MAX ? FR_QUOTE_BYTES_MAX : n);
    const char *dots = n > FR_QUOTE_BYTES_MAX ? "..." : "";
    if (code == FR_ERANGE)
        return fr_fail(err, code, "value '%.*s%s' is out of range for %s%s%s", q, s, dots, tn,
                       why ? ": " : "", why ? why : "");
    return fr_fail(err, code, "'%.*s%s' is not a valid %s%s%s", q, s, dots, tn, why ? ": " : "",
                   why ? why : "");
}

static bool fr_isdigit(char c)
{
    return c >= '0' && c <= '9';
}

/* ---- integers and booleans ------------------------------------------------------------- */

static int fr_parse_integer(const char *s, size_t n, const fr_type *t, int64_t *out,
                            fr_error *err)
{
    size_t i = 0;
    bool neg = false;
    if (i < n && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
    if (i == n) return fr_parse_fail(FR_EINVAL, s, n, t, NULL, err);
    int64_t lo, hi;
    fr_int_range(t->id, &lo, &hi);
    /* Accumulate negatively so that the minimum value parses without overflow. */
    int64_t v = 0;
    for (; i < n; i++) {
        if (!fr_isdigit(s[i])) return fr_parse_fail(FR_EINVAL, s, n, t, NULL, err);
        int d = s[i] - '0';
        if (v < (INT64_MIN + d) / 10) return fr_parse_fail(FR_ERANGE, s, n, t, NULL, err);
        v = v * 10 - d;
    }
    if (!neg) {
        if (v == INT64_MIN) return fr_parse_fail(FR_ERANGE, s, n, t, NULL, err);
        v = -v;
    }
    if (v < lo || v > hi) return fr_parse_fail(FR_ERANGE, s, n, t, NULL, err);
    *out = v;
    return FR_OK;
}

static int fr_parse_boolean(const char *s, size_t n, const fr_type *t, bool *out, fr_error *err)
{
    if ((n == 4 && strncasecmp(s, "true", 4) == 0) || (n == 1 && s[0] == '1')) {
        *out = true;
        return FR_OK;
    }
    if ((n == 5 && strncasecmp(s, "false", 5) == 0) || (n == 1 && s[0] == '0')) {
        *out = false;
        return FR_OK;
    }
    return fr_parse_fail(FR_EINVAL, s, n, t, "expected true, false, 1 or 0", err);
}

/* ---- floating point -------------------------------------------------------------------- */

/* Checks [sign] digits [. digits] [e [sign] digits] with at least one mantissa digit. */
static bool fr_is_number_syntax(const char *s, size_t n)
{
    size_t i = 0, digits = 0;
    if (i < n && (s[i] == '+' || s[i] == '-')) i++;
    while (i < n && fr_isdigit(s[i])) i++, digits++;
    if (i < n && s[i] == '.') {
        i++;
        while (i < n && fr_isdigit(s[i])) i++, digits++;
    }
    if (digits == 0) return false;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-')) i++;
        size_t ed = 0;
        while (i < n && fr_isdigit(s[i])) i++, ed++;
        if (ed == 0) return false;
    }
    return i == n;
}

static int fr_parse_special(const char *s, size_t n, double *out)
{
    size_t i = 0;
    double sign = 1;
    if (i < n && (s[i] == '+' || s[i] == '-')) sign = s[i++] == '-' ? -1 : 1;
    const char *w = s + i;
    size_t wn = n - i;
    if (wn == 3 && strncasecmp(w, "nan", 3) == 0 && i == 0) {
        *out = NAN;
        return 1;
    }
    if ((wn == 3 && strncasecmp(w, "inf", 3) == 0) ||
        (wn == 8 && strncasecmp(w, "infinity", 8) == 0)) {
        *out = sign * INFINITY;
        return 1;
    }
    return 0;
}

static int fr_parse_floating(const char *s, size_t n, const fr_type *t, double *out,
                             fr_error *err)
{
    if (fr_parse_special(s, n, out)) return FR_OK;
    if (!fr_is_number_syntax(s, n)) return fr_parse_fail(FR_EINVAL, s, n, t, NULL, err);
    if (n > FR_LITERAL_BYTES_MAX)
        return fr_parse_fail(FR_EINVAL, s, n, t, "the number is too long", err);
    char buf[FR_LITERAL_BYTES_MAX + 1];
    memcpy(buf, s, n);
    buf[n] = '\0';
    errno = 0;
    double v;
    if (t->id == FR_T_FLOAT) {
        float f = strtof(buf, NULL);
        v = f;
    } else {
        v = strtod(buf, NULL);
    }
    /* ERANGE also reports underflow to a tiny or zero value, which is a fine result. */
    if (isinf(v)) return fr_parse_fail(FR_ERANGE, s, n, t, NULL, err);
    *out = v;
    return FR_OK;
}

/* ---- decimals -------------------------------------------------------------------------- */

/* Reads decimal text into up to 38 significant digits `mant` with value mant * 10^-scale
 * (scale may be negative), plus the first digit dropped beyond those (-1 if none). */
static int fr_decimal_scan(const char *s, size_t n, bool *neg, fr_i128 *mant, int64_t *scale,
                           int *dropped)
{
    size_t i = 0;
    *neg = false;
    if (i < n && (s[i] == '+' || s[i] == '-')) *neg = s[i++] == '-';
    fr_i128 m = 0;
    int sig = 0, first_dropped = -1;
    int64_t sc = 0;
    bool frac = false;
    for (; i < n; i++) {
        char c = s[i];
        if (c == '.' && !frac) {
            frac = true;
            continue;
        }
        if (!fr_isdigit(c)) break;
        int d = c - '0';
        if (sig < 38) {
            if (sig > 0 || d != 0) sig++;
            m = m * 10 + d;
            if (frac) sc++;
        } else {
            if (first_dropped < 0) first_dropped = d;
            if (!frac) sc--;
        }
    }
    if (i < n) {
        /* Exponent (syntax already checked by the caller). */
        i++;
        bool eneg = false;
        if (s[i] == '+' || s[i] == '-') eneg = s[i++] == '-';
        int64_t e = 0;
        for (; i < n; i++) {
            if (e < 100000) e = e * 10 + (s[i] - '0');
        }
        sc += eneg ? e : -e;
    }
    *mant = m;
    *scale = sc;
    *dropped = first_dropped;
    return FR_OK;
}

int fr_decimal_parse(const char *s, size_t n, int precision, int scale, fr_i128 *out,
                     fr_error *err)
{
    fr_type t = fr_type_decimal(precision, scale);
    if (!fr_is_number_syntax(s, n)) return fr_parse_fail(FR_EINVAL, s, n, &t, NULL, err);
    bool neg;
    fr_i128 m;
    int64_t sc;
    int dropped;
    fr_decimal_scan(s, n, &neg, &m, &sc, &dropped);
    fr_i128 v;
    if (m == 0) {
        v = 0;
    } else if (sc == scale) {
        v = m + (dropped >= 5 ? 1 : 0);
    } else if (sc > scale) {
        int64_t k = sc - scale;
        if (k > 38) {
            v = 0;
        } else {
            fr_i128 p = fr_i128_pow10((int)k);
            fr_i128 r = m % p;
            v = m / p + (r >= p - r ? 1 : 0);
        }
    } else {
        int64_t k = scale - sc;
        fr_i128 lim = fr_i128_pow10(precision) - 1;
        if (k > 38 || m > lim / fr_i128_pow10((int)k))
            return fr_parse_fail(FR_ERANGE, s, n, &t, NULL, err);
        v = m * fr_i128_pow10((int)k);
    }
    if (!fr_decimal_fits(v, precision)) return fr_parse_fail(FR_ERANGE, s, n, &t, NULL, err);
    *out = neg ? -v : v;
    return FR_OK;
}

/* ---- dates and times ------------------------------------------------------------------- */

/* Reads between min and max digits at *i into *v. */
static bool fr_read_digits(const char *s, size_t n, size_t *i, int min, int max, int64_t *v)
{
    int k = 0;
    int64_t r = 0;
    while (*i < n && k < max && fr_isdigit(s[*i])) r = r * 10 + (s[(*i)++] - '0'), k++;
    *v = r;
    return k >= min && !(*i < n && fr_isdigit(s[*i]));
}

/* Exactly two digits at *i, whatever follows. */
static bool fr_read_two(const char *s, size_t n, size_t *i, int64_t *v)
{
    if (*i + 2 > n || !fr_isdigit(s[*i]) || !fr_isdigit(s[*i + 1])) return false;
    *v = (s[*i] - '0') * 10 + (s[*i + 1] - '0');
    *i += 2;
    return true;
}

static bool fr_days_in_month_ok(int64_t y, int64_t m, int64_t d)
{
    static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (m < 1 || m > 12 || d < 1) return false;
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return d <= mdays[m - 1] + (m == 2 && leap);
}

/* [sign]yyyy-mm-dd at *i. */
static bool fr_scan_date(const char *s, size_t n, size_t *i, int64_t *days)
{
    bool neg = false;
    if (*i < n && (s[*i] == '-' || s[*i] == '+')) neg = s[(*i)++] == '-';
    int64_t y, m, d;
    if (!fr_read_digits(s, n, i, 4, 7, &y)) return false;
    if (*i >= n || s[(*i)++] != '-') return false;
    if (!fr_read_digits(s, n, i, 1, 2, &m)) return false;
    if (*i >= n || s[(*i)++] != '-') return false;
    if (!fr_read_digits(s, n, i, 1, 2, &d)) return false;
    if (neg) y = -y;
    if (!fr_days_in_month_ok(y, m, d)) return false;
    *days = fr_days_from_civil(y, (unsigned)m, (unsigned)d);
    return true;
}

/* hh:mm[:ss[.f{1,9}]] at *i, as seconds of the day and a fraction in nanoseconds. */
static bool fr_scan_time(const char *s, size_t n, size_t *i, int64_t *secs, int64_t *nanos)
{
    int64_t h, m, sec = 0, f = 0;
    if (!fr_read_digits(s, n, i, 1, 2, &h) || h > 23) return false;
    if (*i >= n || s[(*i)++] != ':') return false;
    if (!fr_read_digits(s, n, i, 2, 2, &m) || m > 59) return false;
    if (*i < n && s[*i] == ':') {
        (*i)++;
        if (!fr_read_digits(s, n, i, 2, 2, &sec) || sec > 59) return false;
        if (*i < n && s[*i] == '.') {
            (*i)++;
            size_t start = *i;
            if (!fr_read_digits(s, n, i, 1, 9, &f)) return false;
            for (size_t k = *i - start; k < 9; k++) f *= 10;
        }
    }
    *secs = h * 3600 + m * 60 + sec;
    *nanos = f;
    return true;
}

/* Nanoseconds to units of precision p, truncating digits beyond p. */
static int64_t fr_nanos_to_units(int64_t nanos, int p)
{
    int64_t units = fr_type_time_units(p);
    int64_t v = nanos / (1000000000 / units);
    /* Units of 3, 6 or 9 digits may hold more digits than p asks for: drop them. */
    int unit_digits = units == 1 ? 0 : units == 1000 ? 3 : units == 1000000 ? 6 : 9;
    int64_t cut = 1;
    for (int k = p; k < unit_digits; k++) cut *= 10;
    return v / cut * cut;
}

/* An optional zone suffix: 'Z', or (when offsets are allowed) +hh:mm / -hh:mm. */
static bool fr_scan_zone(const char *s, size_t n, size_t *i, bool allow_offset,
                         int64_t *offset_secs)
{
    *offset_secs = 0;
    if (*i < n && (s[*i] == 'Z' || s[*i] == 'z')) {
        (*i)++;
        return true;
    }
    if (*i < n && allow_offset && (s[*i] == '+' || s[*i] == '-')) {
        bool neg = s[(*i)++] == '-';
        int64_t h, m = 0;
        if (!fr_read_two(s, n, i, &h) || h > 18) return false;
        if (*i < n && s[*i] == ':') (*i)++;
        if (*i < n && !fr_read_two(s, n, i, &m)) return false;
        if (m > 59) return false;
        *offset_secs = (neg ? -1 : 1) * (h * 3600 + m * 60);
    }
    return true;
}

static int fr_parse_date(const char *s, size_t n, const fr_type *t, int64_t *out, fr_error *err)
{
    size_t i = 0;
    int64_t days;
    if (!fr_scan_date(s, n, &i, &days) || i != n)
        return fr_parse_fail(FR_EINVAL, s, n, t, "expected yyyy-mm-dd", err);
    if (days < INT32_MIN || days > INT32_MAX) return fr_parse_fail(FR_ERANGE, s, n, t, NULL, err);
    *out = days;
    return FR_OK;
}

static int fr_parse_time(const char *s, size_t n, const fr_type *t, int64_t *out, fr_error *err)
{
    size_t i = 0;
    int64_t secs, nanos;
    if (!fr_scan_time(s, n, &i, &secs, &nanos) || i != n)
        return fr_parse_fail(FR_EINVAL, s, n, t, "expected hh:mm:ss[.fffffffff]", err);
    *out = secs * fr_type_time_units(t->precision) + fr_nanos_to_units(nanos, t->precision);
    return FR_OK;
}

static int fr_parse_timestamp(const char *s, size_t n, const fr_type *t, int64_t *out,
                              fr_error *err)
{
    size_t i = 0;
    int64_t days, secs = 0, nanos = 0, offset = 0;
    bool ok = fr_scan_date(s, n, &i, &days);
    if (ok && i < n && (s[i] == ' ' || s[i] == 'T' || s[i] == 't')) {
        i++;
        ok = fr_scan_time(s, n, &i, &secs, &nanos);
    }
    ok = ok && fr_scan_zone(s, n, &i, t->id == FR_T_TIMESTAMP_LTZ, &offset);
    if (!ok || i != n)
        return fr_parse_fail(FR_EINVAL, s, n, t, "expected yyyy-mm-dd hh:mm:ss[.fffffffff]",
                             err);
    int64_t units = fr_type_time_units(t->precision);
    fr_i128 v = ((fr_i128)days * FR_SECONDS_PER_DAY + secs - offset) * units +
                fr_nanos_to_units(nanos, t->precision);
    if (v < INT64_MIN || v > INT64_MAX) return fr_parse_fail(FR_ERANGE, s, n, t, NULL, err);
    *out = (int64_t)v;
    return FR_OK;
}

/* ---- entry point ----------------------------------------------------------------------- */

static void fr_trim_spaces(const char **s, size_t *n)
{
    while (*n > 0 && (**s == ' ' || **s == '\t')) (*s)++, (*n)--;
    while (*n > 0 && ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '\t')) (*n)--;
}

int fr_value_parse(const char *s, size_t n, const fr_type *t, fr_value *out, fr_error *err)
{
    fr_value v = fr_value_null(*t);
    v.is_null = false;
    if (fr_type_is_string(t->id) || t->id == FR_T_BYTES) {
        FR_TRY(fr_text_check_length((const uint8_t *)s, n, t, err));
        v.v.s.ptr = (const uint8_t *)s;
        v.v.s.len = n;
        *out = v;
        return FR_OK;
    }
    fr_trim_spaces(&s, &n);
    switch (t->id) {
    case FR_T_BOOLEAN:
        FR_TRY(fr_parse_boolean(s, n, t, &v.v.b, err));
        break;
    case FR_T_TINYINT:
    case FR_T_SMALLINT:
    case FR_T_INT:
    case FR_T_BIGINT:
        FR_TRY(fr_parse_integer(s, n, t, &v.v.i, err));
        break;
    case FR_T_FLOAT:
    case FR_T_DOUBLE:
        FR_TRY(fr_parse_floating(s, n, t, &v.v.f, err));
        break;
    case FR_T_DECIMAL:
        FR_TRY(fr_decimal_parse(s, n, t->precision, t->scale, &v.v.d, err));
        break;
    case FR_T_DATE:
        FR_TRY(fr_parse_date(s, n, t, &v.v.i, err));
        break;
    case FR_T_TIME:
        FR_TRY(fr_parse_time(s, n, t, &v.v.i, err));
        break;
    case FR_T_TIMESTAMP:
    case FR_T_TIMESTAMP_LTZ:
        FR_TRY(fr_parse_timestamp(s, n, t, &v.v.i, err));
        break;
    default:
        return fr_fail(err, FR_ETYPE, "cannot parse a value of unknown type id %d", (int)t->id);
    }
    *out = v;
    return FR_OK;
}
