/* types_row.c — the compact row encoding (fr_row_encode, fr_row_schema_id, fr_row_decode):
 * the value a primary-key table's KV store keeps for each key.
 *
 * Layout (docs/FORMAT.md, "Key and row encodings"): varint schema id, a null bitmap of
 * ceil(nfields / 8) bytes (bit i % 8 of byte i / 8 set when field i is NULL), then each
 * non-null value in field order. Invariants: a row names the schema version that wrote it;
 * each row has one encoding (NaN is written as one NaN, varints in their shortest form,
 * unused bitmap bits zero), so decoding accepts only bytes that re-encode to themselves. */
#include <assert.h>
#include <inttypes.h>
#include <math.h>

#include "types/types_codec.h"
#include "types/types_int.h"

#define FR_ROW_FLOAT_NAN 0x7fc00000u
#define FR_ROW_DOUBLE_NAN 0x7ff8000000000000ull
/* DECIMAL(p, s) with p up to this many digits is a zigzag varint; wider ones take 16 bytes. */
#define FR_ROW_DECIMAL_VARINT_DIGITS 18

/* ---- encoding ------------------------------------------------------------------------- */

/* The most bytes a value takes besides a string's own bytes: a DECIMAL of 16 bytes, or a
 * varint of at most 10. */
#define FR_ROW_CELL_BYTES_MAX 16

/* Writes a non-string value at p (room for FR_ROW_CELL_BYTES_MAX); returns its length. */
static size_t fr_row_put_fixed(uint8_t *p, const fr_type *t, const fr_value *v)
{
    switch (t->id) {
    case FR_T_BOOLEAN:
        p[0] = v->v.b ? 1 : 0;
        return 1;
    case FR_T_FLOAT: {
        float f = (float)v->v.f;
        uint32_t bits = FR_ROW_FLOAT_NAN;
        if (!isnan(f)) memcpy(&bits, &f, 4);
        fr_put_u32le(p, bits);
        return 4;
    }
    case FR_T_DOUBLE: {
        uint64_t bits = FR_ROW_DOUBLE_NAN;
        if (!isnan(v->v.f)) memcpy(&bits, &v->v.f, 8);
        fr_put_u64le(p, bits);
        return 8;
    }
    case FR_T_DECIMAL:
        if (t->precision <= FR_ROW_DECIMAL_VARINT_DIGITS)
            return fr_varint_put(p, fr_zigzag_enc((int64_t)v->v.d));
        fr_put_u64le(p, (uint64_t)v->v.d);
        fr_put_u64le(p + 8, (uint64_t)((unsigned __int128)v->v.d >> 64));
        return 16;
    default:
        return fr_varint_put(p, fr_zigzag_enc(v->v.i));
    }
}

static bool fr_row_is_text(fr_type_id id)
{
    return id == FR_T_CHAR || id == FR_T_VARCHAR || id == FR_T_STRING || id == FR_T_BYTES;
}

/* Writes the row at out->len: the buffer is grown once for every value but the strings,
 * whose bytes make room for themselves, and values are stored in place. */
static int fr_row_encode_fields(const fr_schema *s, const fr_value *values, size_t start,
                                fr_buf *out, fr_error *err)
{
    int32_t id = fr_schema_id(s);
    FR_CHECK(id >= 0, FR_EINVAL, err, "schema id %d is negative", id);
    int nf = fr_schema_num_fields(s);
    size_t nbitmap = ((size_t)nf + 7) / 8;
    size_t room = 10 + nbitmap + (size_t)nf * FR_ROW_CELL_BYTES_MAX; /* all but strings */
    FR_TRY(fr_buf_reserve(out, room, err));
    size_t at = out->len;
    at += fr_varint_put(out->data + at, (uint64_t)id);
    size_t bitmap = at;
    memset(out->data + at, 0, nbitmap);
    at += nbitmap;
    for (int i = 0; i < nf; i++) {
        const fr_field *f = fr_schema_field(s, i);
        const fr_value *v = &values[i];
        int rc = FR_OK;
        if (v->is_null) {
            rc = f->type.nullable ? FR_OK : fr_fail(err, FR_EINVAL, "NULL in a NOT NULL field");
            if (rc == FR_OK) out->data[bitmap + (size_t)i / 8] |= (uint8_t)(1u << (i % 8));
        } else {
            rc = fr_codec_check_value(v, &f->type, err);
        }
        if (rc == FR_OK && !v->is_null && fr_row_is_text(f->type.id)) {
            size_t n = v->v.s.len;
            rc = n <= FR_ROW_BYTES_MAX && at - start + n <= FR_ROW_BYTES_MAX
                     ? fr_buf_reserve(out, at - out->len + n + room, err)
                     : fr_fail(err, FR_ELIMIT, "the row is longer than %d bytes", FR_ROW_BYTES_MAX);
            if (rc == FR_OK) {
                at += fr_varint_put(out->data + at, n);
                if (n) memcpy(out->data + at, v->v.s.ptr, n);
                at += n;
            }
        } else if (rc == FR_OK && !v->is_null) {
            at += fr_row_put_fixed(out->data + at, &f->type, v);
        }
        if (rc < 0) {
            fr_error_wrap(err, "field '%s'", f->name);
            return rc;
        }
    }
    out->len = at;
    FR_CHECK(out->len - start <= FR_ROW_BYTES_MAX, FR_ELIMIT, err,
             "the row is longer than %d bytes", FR_ROW_BYTES_MAX);
    return FR_OK;
}

int fr_row_encode(const fr_schema *s, const fr_value *values, fr_buf *out, fr_error *err)
{
    size_t start = out->len;
    int rc = fr_row_encode_fields(s, values, start, out, err);
    if (rc < 0) out->len = start;
    return rc;
}

/* ---- decoding ------------------------------------------------------------------------- */

typedef struct fr_row_reader {
    const uint8_t *p;
    size_t n;
    size_t pos;
} fr_row_reader;

/* fr_codec_varint_get inlined, since every int and string length of a row is one: the
 * shortest form only (no last group of zero after others), at most 10 bytes, the tenth
 * carrying only the top bit. */
static int fr_row_get_varint(fr_row_reader *r, uint64_t *v, fr_error *err)
{
    const uint8_t *p = r->p + r->pos;
    size_t left = r->n - r->pos;
    size_t max = left < 10 ? left : 10;
    uint64_t x = 0;
    for (size_t i = 0; i < max; i++) {
        uint8_t b = p[i];
        x |= (uint64_t)(b & 0x7f) << (7 * i);
        if (b < 0x80) {
            if ((i > 0 && b == 0) || (i == 9 && b > 1)) break;
            *v = x;
            r->pos += i + 1;
            return FR_OK;
        }
    }
    return fr_fail(err, FR_ECORRUPT, "a bad or truncated varint at byte %zu", r->pos);
}

static int fr_row_get_bytes(fr_row_reader *r, size_t n, const uint8_t **out, fr_error *err)
{
    FR_CHECK(n <= r->n - r->pos, FR_ECORRUPT, err,
             "%zu bytes needed at byte %zu, %zu left", n, r->pos, r->n - r->pos);
    *out = r->p + r->pos;
    r->pos += n;
    return FR_OK;
}

static int fr_row_get_schema_id(fr_row_reader *r, int32_t *id, fr_error *err)
{
    uint64_t u = 0;
    FR_TRY(fr_row_get_varint(r, &u, err));
    FR_CHECK(u <= INT32_MAX, FR_ECORRUPT, err, "schema id %" PRIu64 " out of range", u);
    *id = (int32_t)u;
    return FR_OK;
}

static int fr_row_get_int(fr_row_reader *r, const fr_type *t, fr_value *v, fr_error *err)
{
    uint64_t u = 0;
    int64_t lo, hi;
    char tn[64];
    FR_TRY(fr_row_get_varint(r, &u, err));
    v->v.i = fr_zigzag_dec(u);
    fr_codec_int_range(t, &lo, &hi);
    FR_CHECK(v->v.i >= lo && v->v.i <= hi, FR_ECORRUPT, err, "%" PRId64 " is out of %s",
             v->v.i, fr_type_name_buf(t, tn, sizeof tn));
    return FR_OK;
}

static int fr_row_get_decimal(fr_row_reader *r, const fr_type *t, fr_value *v, fr_error *err)
{
    if (t->precision <= FR_ROW_DECIMAL_VARINT_DIGITS) {
        uint64_t u = 0;
        FR_TRY(fr_row_get_varint(r, &u, err));
        v->v.d = fr_zigzag_dec(u);
    } else {
        const uint8_t *b = NULL;
        FR_TRY(fr_row_get_bytes(r, 16, &b, err));
        unsigned __int128 x = ((unsigned __int128)fr_get_u64le(b + 8) << 64) | fr_get_u64le(b);
        v->v.d = (fr_i128)x;
    }
    FR_CHECK(fr_decimal_fits(v->v.d, t->precision), FR_ECORRUPT, err,
             "a decimal with more than %d digits", t->precision);
    return FR_OK;
}

static int fr_row_get_float(fr_row_reader *r, const fr_type *t, fr_value *v, fr_error *err)
{
    const uint8_t *b = NULL;
    if (t->id == FR_T_FLOAT) {
        FR_TRY(fr_row_get_bytes(r, 4, &b, err));
        uint32_t bits = fr_get_u32le(b);
        float f;
        memcpy(&f, &bits, 4);
        FR_CHECK(!isnan(f) || bits == FR_ROW_FLOAT_NAN, FR_ECORRUPT, err,
                 "a FLOAT NaN not in canonical form (bits 0x%08x)", bits);
        v->v.f = f;
        return FR_OK;
    }
    FR_TRY(fr_row_get_bytes(r, 8, &b, err));
    uint64_t bits = fr_get_u64le(b);
    memcpy(&v->v.f, &bits, 8);
    FR_CHECK(!isnan(v->v.f) || bits == FR_ROW_DOUBLE_NAN, FR_ECORRUPT, err,
             "a DOUBLE NaN not in canonical form (bits 0x%016" PRIx64 ")", bits);
    return FR_OK;
}

static int fr_row_get_text(fr_row_reader *r, const fr_type *t, fr_value *v, fr_error *err)
{
    uint64_t n = 0;
    FR_TRY(fr_row_get_varint(r, &n, err));
    FR_CHECK(n <= FR_ROW_BYTES_MAX, FR_ECORRUPT, err, "a %" PRIu64 "-byte string", n);
    FR_TRY(fr_row_get_bytes(r, (size_t)n, &v->v.s.ptr, err));
    v->v.s.len = (size_t)n;
    if (fr_text_check_length(v->v.s.ptr, v->v.s.len, t, err) < 0) {
        if (err) err->code = FR_ECORRUPT;
        return FR_ECORRUPT;
    }
    return FR_OK;
}

static int fr_row_get_value(fr_row_reader *r, const fr_type *t, fr_value *v, fr_error *err)
{
    const uint8_t *b = NULL;
    switch (t->id) {
    case FR_T_BOOLEAN:
        FR_TRY(fr_row_get_bytes(r, 1, &b, err));
        FR_CHECK(b[0] <= 1, FR_ECORRUPT, err, "a BOOLEAN byte of %u", b[0]);
        v->v.b = b[0] == 1;
        return FR_OK;
    case FR_T_FLOAT:
    case FR_T_DOUBLE:
        return fr_row_get_float(r, t, v, err);
    case FR_T_DECIMAL:
        return fr_row_get_decimal(r, t, v, err);
    case FR_T_CHAR:
    case FR_T_VARCHAR:
    case FR_T_STRING:
    case FR_T_BYTES:
        return fr_row_get_text(r, t, v, err);
    default:
        return fr_row_get_int(r, t, v, err);
    }
}

int fr_row_schema_id(const uint8_t *p, size_t len, int32_t *schema_id, fr_error *err)
{
    fr_row_reader r = {p, len, 0};
    int rc = fr_row_get_schema_id(&r, schema_id, err);
    if (rc < 0) fr_error_wrap(err, "row");
    return rc;
}

static int fr_row_decode_fields(fr_row_reader *r, const fr_schema *s, fr_value *values,
                                fr_error *err)
{
    int nf = fr_schema_num_fields(s);
    const uint8_t *bitmap = NULL;
    FR_TRY(fr_row_get_bytes(r, ((size_t)nf + 7) / 8, &bitmap, err));
    if (nf % 8 != 0)
        FR_CHECK((bitmap[nf / 8] >> (nf % 8)) == 0, FR_ECORRUPT, err,
                 "null bitmap bits set past the last of %d fields", nf);
    for (int i = 0; i < nf; i++) {
        const fr_field *f = fr_schema_field(s, i);
        bool is_null = (bitmap[i / 8] >> (i % 8)) & 1;
        /* What fr_value_null gives, built in place: this runs for every cell of every row
         * a lookup or scan reads. */
        memset(&values[i], 0, sizeof values[i]);
        values[i].type = f->type;
        values[i].is_null = is_null;
        int rc = FR_OK;
        if (is_null && !f->type.nullable) {
            rc = fr_fail(err, FR_ECORRUPT, "NULL in a NOT NULL field");
        } else if (!is_null) {
            rc = fr_row_get_value(r, &f->type, &values[i], err);
        }
        if (rc < 0) {
            fr_error_wrap(err, "field '%s'", f->name);
            return rc;
        }
    }
    FR_CHECK(r->pos == r->n, FR_ECORRUPT, err, "%zu trailing byte(s) after the last field",
             r->n - r->pos);
    return FR_OK;
}

int fr_row_decode(const uint8_t *p, size_t len, const fr_schema *s, fr_value *values,
                  fr_error *err)
{
    fr_row_reader r = {p, len, 0};
    int32_t id = 0;
    int rc = len <= FR_ROW_BYTES_MAX
                 ? fr_row_get_schema_id(&r, &id, err)
                 : fr_fail(err, FR_ECORRUPT, "%zu bytes, more than %d", len, FR_ROW_BYTES_MAX);
    if (rc == FR_OK && id != fr_schema_id(s))
        return fr_fail(err, FR_ECORRUPT, "row written with schema %d, expected %d", id,
                       fr_schema_id(s));
    if (rc == FR_OK) rc = fr_row_decode_fields(&r, s, values, err);
    if (rc < 0) fr_error_wrap(err, "row");
    return rc;
}
