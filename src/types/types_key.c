/* types_key.c — the order-preserving key encoding of primary keys (fr_key_encode and
 * fr_key_decode), and the value checks and varint reading it shares with the row encoding.
 *
 * Invariants: for two tuples of values of the same key types, memcmp of their encodings has
 * the sign of the column-by-column comparison of the values; the encoding of the first k
 * columns is a byte prefix of the encoding of all of them; each value has exactly one
 * encoding (-0.0 is written as 0.0 and every NaN as one NaN), so decoding accepts only
 * bytes that re-encode to themselves. The layout is described in docs/FORMAT.md, "Key and
 * row encodings". */
#include <assert.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>

#include "types/types_codec.h"
#include "types/types_int.h"

#define FR_KEY_FLOAT_NAN 0x7fc00000u
#define FR_KEY_DOUBLE_NAN 0x7ff8000000000000ull

/* ---- shared with the row encoding ------------------------------------------------------- */

void fr_codec_int_range(const fr_type *col, int64_t *lo, int64_t *hi)
{
    switch (fr_type_width(col)) {
    case 1: *lo = INT8_MIN; *hi = INT8_MAX; return;
    case 2: *lo = INT16_MIN; *hi = INT16_MAX; return;
    case 4: *lo = INT32_MIN; *hi = INT32_MAX; return;
    default: *lo = INT64_MIN; *hi = INT64_MAX; return;
    }
}

static bool fr_codec_is_intlike(fr_type_id id)
{
    return fr_type_is_integer(id) || fr_type_is_temporal(id);
}

int fr_codec_check_value(const fr_value *v, const fr_type *col, fr_error *err)
{
    char tv[64], tc[64];
    assert(!v->is_null);
    if (v->type.id != col->id)
        return fr_fail(err, FR_EINVAL, "a value of type %s where %s is expected",
                       fr_type_name_buf(&v->type, tv, sizeof tv),
                       fr_type_name_buf(col, tc, sizeof tc));
    if (col->id == FR_T_DECIMAL) {
        FR_CHECK(v->type.scale == col->scale, FR_EINVAL, err,
                 "a decimal of scale %d where %s is expected", v->type.scale,
                 fr_type_name_buf(col, tc, sizeof tc));
        FR_CHECK(fr_decimal_fits(v->v.d, col->precision), FR_EINVAL, err,
                 "a decimal with more than %d digits for %s", col->precision,
                 fr_type_name_buf(col, tc, sizeof tc));
    } else if (col->id == FR_T_TIME || col->id == FR_T_TIMESTAMP ||
               col->id == FR_T_TIMESTAMP_LTZ) {
        FR_CHECK(fr_type_time_units(v->type.precision) == fr_type_time_units(col->precision),
                 FR_EINVAL, err, "a value of type %s where %s is expected",
                 fr_type_name_buf(&v->type, tv, sizeof tv),
                 fr_type_name_buf(col, tc, sizeof tc));
    } else if (col->id == FR_T_FLOAT) {
        double f = v->v.f;
        bool exact = isnan(f) || isinf(f) || (fabs(f) <= FLT_MAX && (double)(float)f == f);
        FR_CHECK(exact, FR_EINVAL, err, "the double %.17g is not a FLOAT value", f);
    } else if (col->id == FR_T_CHAR || col->id == FR_T_VARCHAR) {
        FR_TRY(fr_text_check_length(v->v.s.ptr, v->v.s.len, col, err));
    }
    if (fr_codec_is_intlike(col->id)) {
        int64_t lo, hi;
        fr_codec_int_range(col, &lo, &hi);
        FR_CHECK(v->v.i >= lo && v->v.i <= hi, FR_EINVAL, err,
                 "%" PRId64 " is out of the range of %s", v->v.i,
                 fr_type_name_buf(col, tc, sizeof tc));
    }
    return FR_OK;
}

size_t fr_codec_varint_get(const uint8_t *p, size_t n, uint64_t *v)
{
    size_t used = fr_varint_get(p, n, v);
    /* A last group of zero after others is a longer spelling of a shorter varint. */
    if (used > 1 && p[used - 1] == 0) return 0;
    return used;
}

/* ---- encoding ------------------------------------------------------------------------- */

/* The order-preserving bits of a float or double: flip all bits of a negative number, only
 * the sign bit of a positive one, after making -0.0 zero and every NaN the same NaN. */
static uint32_t fr_key_float_bits(float f)
{
    uint32_t bits;
    if (isnan(f)) bits = FR_KEY_FLOAT_NAN;
    else if (f == 0.0f) bits = 0;
    else memcpy(&bits, &f, 4);
    return (bits & 0x80000000u) ? ~bits : bits ^ 0x80000000u;
}

static uint64_t fr_key_double_bits(double f)
{
    uint64_t bits;
    if (isnan(f)) bits = FR_KEY_DOUBLE_NAN;
    else if (f == 0.0) bits = 0;
    else memcpy(&bits, &f, 8);
    return (bits & 0x8000000000000000ull) ? ~bits : bits ^ 0x8000000000000000ull;
}

static void fr_key_put_be(uint8_t *out, unsigned __int128 u, int width)
{
    for (int i = width - 1; i >= 0; i--) {
        out[i] = (uint8_t)u;
        u >>= 8;
    }
}

/* Fixed-width columns: the bytes of one value, big-endian, sign bit flipped. Returns the
 * width written into out (16 bytes of room). */
static int fr_key_fixed(const fr_type *t, const fr_value *v, uint8_t *out)
{
    const unsigned __int128 one = 1;
    switch (t->id) {
    case FR_T_BOOLEAN:
        out[0] = v->v.b ? 1 : 0;
        return 1;
    case FR_T_FLOAT:
        fr_key_put_be(out, fr_key_float_bits((float)v->v.f), 4);
        return 4;
    case FR_T_DOUBLE:
        fr_key_put_be(out, fr_key_double_bits(v->v.f), 8);
        return 8;
    case FR_T_DECIMAL:
        fr_key_put_be(out, (unsigned __int128)v->v.d ^ (one << 127), 16);
        return 16;
    default: {
        int w = fr_type_width(t);
        assert(w == 1 || w == 2 || w == 4 || w == 8);
        uint64_t u = (uint64_t)v->v.i ^ ((uint64_t)1 << (8 * w - 1));
        fr_key_put_be(out, u, w);
        return w;
    }
    }
}

/* Strings and bytes: every 0x00 becomes 0x00 0xFF, and 0x00 0x00 ends the value. */
static int fr_key_text(const fr_value *v, size_t start, fr_buf *out, fr_error *err)
{
    const uint8_t *p = v->v.s.ptr;
    size_t n = v->v.s.len, zeros = 0;
    for (size_t i = 0; i < n; i++) zeros += p[i] == 0;
    size_t total = n + zeros + 2;
    FR_CHECK(total <= FR_KEY_BYTES_MAX && out->len - start + total <= FR_KEY_BYTES_MAX,
             FR_ELIMIT, err, "the key is longer than %d bytes", FR_KEY_BYTES_MAX);
    FR_TRY(fr_buf_reserve(out, total, err));
    uint8_t *w = out->data + out->len;
    for (size_t i = 0; i < n; i++) {
        *w++ = p[i];
        if (p[i] == 0) *w++ = 0xff;
    }
    *w++ = 0;
    *w++ = 0;
    out->len += total;
    return FR_OK;
}

static int fr_key_encode_one(const fr_type *t, const fr_value *v, size_t start, fr_buf *out,
                             fr_error *err)
{
    FR_CHECK(!v->is_null, FR_EINVAL, err, "a primary key value is NULL");
    FR_TRY(fr_codec_check_value(v, t, err));
    if (fr_type_is_varwidth(t)) return fr_key_text(v, start, out, err);
    uint8_t tmp[16];
    int w = fr_key_fixed(t, v, tmp);
    FR_CHECK(out->len - start + (size_t)w <= FR_KEY_BYTES_MAX, FR_ELIMIT, err,
             "the key is longer than %d bytes", FR_KEY_BYTES_MAX);
    return fr_buf_append(out, tmp, (size_t)w, err);
}

int fr_key_encode(const fr_type *types, const fr_value *values, int n, fr_buf *out,
                  fr_error *err)
{
    size_t start = out->len;
    for (int i = 0; i < n; i++) {
        int rc = fr_key_encode_one(&types[i], &values[i], start, out, err);
        if (rc < 0) {
            out->len = start;
            fr_error_wrap(err, "key column %d", i + 1);
            return rc;
        }
    }
    return FR_OK;
}

/* ---- decoding ------------------------------------------------------------------------- */

static unsigned __int128 fr_key_get_be(const uint8_t *p, int width)
{
    unsigned __int128 u = 0;
    for (int i = 0; i < width; i++) u = (u << 8) | p[i];
    return u;
}

static int fr_key_decode_float(const uint8_t *p, fr_value *out, fr_error *err)
{
    uint32_t bits = (uint32_t)fr_key_get_be(p, 4);
    bits = (bits & 0x80000000u) ? bits ^ 0x80000000u : ~bits;
    float f;
    memcpy(&f, &bits, 4);
    FR_CHECK(bits != 0x80000000u && (!isnan(f) || bits == FR_KEY_FLOAT_NAN), FR_ECORRUPT,
             err, "a FLOAT that is not in canonical form (bits 0x%08x)", bits);
    out->v.f = f;
    return FR_OK;
}

static int fr_key_decode_double(const uint8_t *p, fr_value *out, fr_error *err)
{
    uint64_t bits = (uint64_t)fr_key_get_be(p, 8);
    bits = (bits & 0x8000000000000000ull) ? bits ^ 0x8000000000000000ull : ~bits;
    double f;
    memcpy(&f, &bits, 8);
    FR_CHECK(bits != 0x8000000000000000ull && (!isnan(f) || bits == FR_KEY_DOUBLE_NAN),
             FR_ECORRUPT, err, "a DOUBLE that is not in canonical form (bits 0x%016" PRIx64 ")",
             bits);
    out->v.f = f;
    return FR_OK;
}

static int fr_key_decode_fixed(const uint8_t *p, size_t len, const fr_type *t, fr_value *out,
                               size_t *used, fr_error *err)
{
    const unsigned __int128 one = 1;
    int w = t->id == FR_T_BOOLEAN ? 1 : fr_type_width(t);
    FR_CHECK(len >= (size_t)w, FR_ECORRUPT, err, "%zu bytes left for a %d-byte value", len, w);
    *used = (size_t)w;
    switch (t->id) {
    case FR_T_BOOLEAN:
        FR_CHECK(p[0] <= 1, FR_ECORRUPT, err, "a BOOLEAN byte of %u", p[0]);
        out->v.b = p[0] == 1;
        return FR_OK;
    case FR_T_FLOAT: return fr_key_decode_float(p, out, err);
    case FR_T_DOUBLE: return fr_key_decode_double(p, out, err);
    case FR_T_DECIMAL:
        out->v.d = (fr_i128)(fr_key_get_be(p, 16) ^ (one << 127));
        FR_CHECK(fr_decimal_fits(out->v.d, t->precision), FR_ECORRUPT, err,
                 "a decimal with more than %d digits", t->precision);
        return FR_OK;
    default: {
        uint64_t sign = (uint64_t)1 << (8 * w - 1);
        uint64_t u = (uint64_t)fr_key_get_be(p, w) ^ sign;
        /* Sign-extend from the column's width. */
        out->v.i = (int64_t)((u ^ sign) - sign);
        return FR_OK;
    }
    }
}

/* The escaped text starting at p: its encoded length (terminator included) into *used and
 * the number of escaped zero bytes into *zeros. */
static int fr_key_scan_text(const uint8_t *p, size_t len, size_t *used, size_t *zeros,
                            fr_error *err)
{
    size_t i = 0;
    *zeros = 0;
    for (;;) {
        const uint8_t *z = i < len ? memchr(p + i, 0, len - i) : NULL;
        FR_CHECK(z != NULL && (size_t)(z - p) + 1 < len, FR_ECORRUPT, err,
                 "a string without its 0x00 0x00 terminator");
        i = (size_t)(z - p) + 1;
        if (p[i] == 0) {
            *used = i + 1;
            return FR_OK;
        }
        FR_CHECK(p[i] == 0xff, FR_ECORRUPT, err, "a 0x00 byte followed by 0x%02x in a string",
                 p[i]);
        (*zeros)++;
        i++;
    }
}

static int fr_key_decode_text(const uint8_t *p, size_t len, const fr_type *t,
                              fr_arena *arena, fr_value *out, size_t *used, fr_error *err)
{
    size_t zeros;
    FR_TRY(fr_key_scan_text(p, len, used, &zeros, err));
    size_t n = *used - 2 - zeros;
    const uint8_t *s = p;
    if (zeros > 0) {
        FR_CHECK(arena != NULL, FR_EUNSUPPORTED, err,
                 "a string key holding a zero byte needs fr_key_decode_arena");
        uint8_t *w = fr_arena_alloc(arena, n);
        FR_CHECK(w != NULL, FR_ENOMEM, err, "out of memory decoding a key");
        for (size_t i = 0, j = 0; j < n; i++, j++) {
            w[j] = p[i];
            if (p[i] == 0) i++;
        }
        s = w;
    }
    out->v.s.ptr = s;
    out->v.s.len = n;
    if (fr_text_check_length(s, n, t, err) < 0) {
        if (err) err->code = FR_ECORRUPT;
        return FR_ECORRUPT;
    }
    return FR_OK;
}

int fr_key_decode_arena(const uint8_t *p, size_t len, const fr_type *types, int n,
                        fr_arena *arena, fr_value *values, size_t *used, fr_error *err)
{
    size_t pos = 0;
    for (int i = 0; i < n; i++) {
        const fr_type *t = &types[i];
        fr_value *v = &values[i];
        memset(v, 0, sizeof *v);
        v->type = *t;
        size_t u = 0;
        int rc = fr_type_is_varwidth(t)
                     ? fr_key_decode_text(p + pos, len - pos, t, arena, v, &u, err)
                     : fr_key_decode_fixed(p + pos, len - pos, t, v, &u, err);
        if (rc < 0) {
            fr_error_wrap(err, "key column %d at byte %zu", i + 1, pos);
            return rc;
        }
        pos += u;
        FR_CHECK(pos <= FR_KEY_BYTES_MAX, FR_ECORRUPT, err,
                 "key longer than %d bytes", FR_KEY_BYTES_MAX);
    }
    if (used) *used = pos;
    return FR_OK;
}

int fr_key_decode(const uint8_t *p, size_t len, const fr_type *types, int n,
                  fr_value *values, size_t *used, fr_error *err)
{
    return fr_key_decode_arena(p, len, types, n, NULL, values, used, err);
}
