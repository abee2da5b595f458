/* lake_schema.c — the lake schema of a table (its columns plus __bucket, __offset and
 * __timestamp, times in microseconds, strings as STRING), Parquet options and codec names,
 * and the mapping between firth types and Parquet types in both directions (docs/LAKE.md,
 * "Parquet"). */
#include <strings.h>

#include "lake/lake_parquet_int.h"

int fr_lake_schema(const fr_schema *table, fr_schema **out, int32_t *field_ids, fr_error *err)
{
    int n = fr_schema_num_fields(table);
    FR_CHECK(n + FR_LAKE_EXTRA_COLUMNS <= FR_SCHEMA_COLUMNS_MAX, FR_ELIMIT, err,
             "a table of %d columns leaves no room for the lake's %d extra columns", n,
             FR_LAKE_EXTRA_COLUMNS);
    fr_field *f = fr_calloc((size_t)n + FR_LAKE_EXTRA_COLUMNS, sizeof *f);
    if (!f) return fr_fail(err, FR_ENOMEM, "out of memory building a lake schema");
    int rc = 0;
    if (fr_schema_find(table, FR_LAKE_COL_BUCKET) >= 0 || fr_schema_find(table, FR_LAKE_COL_OFFSET) >= 0 ||
        fr_schema_find(table, FR_LAKE_COL_TIMESTAMP) >= 0) {
        rc = fr_fail(err, FR_EINVAL, "a lake table cannot have a column named %s, %s or %s",
                     FR_LAKE_COL_BUCKET, FR_LAKE_COL_OFFSET, FR_LAKE_COL_TIMESTAMP);
        goto done;
    }
    for (int i = 0; i < n; i++) {
        const fr_field *src = fr_schema_field(table, i);
        f[i] = *src;
        fr_type *t = &f[i].type;
        if (t->id == FR_T_TIME || t->id == FR_T_TIMESTAMP || t->id == FR_T_TIMESTAMP_LTZ) {
            if (t->precision > 6) {
                rc = fr_fail(err, FR_EUNSUPPORTED,
                             "column %s: precision %d is finer than the lake's microseconds; "
                             "use a precision of 6 or less", src->name, t->precision);
                goto done;
            }
            t->precision = 6;
        } else if (t->id == FR_T_CHAR || t->id == FR_T_VARCHAR) {
            t->id = FR_T_STRING;
            t->length = 0;
        }
    }
    f[n].name = FR_LAKE_COL_BUCKET;
    f[n].type = fr_type_of(FR_T_INT);
    f[n].type.nullable = false;
    f[n + 1].name = FR_LAKE_COL_OFFSET;
    f[n + 1].type = fr_type_of(FR_T_BIGINT);
    f[n + 1].type.nullable = false;
    f[n + 2].name = FR_LAKE_COL_TIMESTAMP;
    f[n + 2].type = fr_type_time_like(FR_T_TIMESTAMP_LTZ, 6);
    f[n + 2].type.nullable = false;
    rc = fr_schema_new(f, n + FR_LAKE_EXTRA_COLUMNS, fr_schema_id(table), out, err);
    if (rc == 0 && field_ids)
        for (int i = 0; i < n + FR_LAKE_EXTRA_COLUMNS; i++) field_ids[i] = i + 1;
done:
    fr_free(f);
    return rc;
}

int fr_parquet_codec_parse(const char *s, fr_parquet_codec *out, fr_error *err)
{
    if (!strcasecmp(s, "zstd")) *out = FR_PARQUET_ZSTD;
    else if (!strcasecmp(s, "snappy")) *out = FR_PARQUET_SNAPPY;
    else if (!strcasecmp(s, "uncompressed") || !strcasecmp(s, "none")) *out = FR_PARQUET_UNCOMPRESSED;
    else
        return fr_fail(err, FR_EINVAL, "unknown Parquet codec '%s' (use zstd, snappy or uncompressed)", s);
    return 0;
}

void fr_parquet_options_default(fr_parquet_options *o)
{
    o->row_group_bytes = 128 << 20;
    o->page_bytes = 1 << 20;
    o->dict_bytes_max = 1 << 20;
    o->codec = FR_PARQUET_ZSTD;
    o->zstd_level = 3;
}

const char *pq_codec_name(int codec)
{
    static const char *names[] = {"UNCOMPRESSED", "SNAPPY", "GZIP", "LZO", "BROTLI", "LZ4",
                                  "ZSTD", "LZ4_RAW"};
    return codec >= 0 && codec <= 7 ? names[codec] : "unknown";
}

/* ---- firth -> Parquet ------------------------------------------------------------------- */

int pq_decimal_bytes(int precision)
{
    /* The smallest n with 10^precision - 1 < 2^(8n - 1). */
    fr_i128 limit = fr_i128_pow10(precision);
    int n = 1;
    while (n < 16 && ((fr_i128)1 << (8 * n - 1)) < limit) n++;
    return n;
}

static int time_unit_of(int precision)
{
    return precision <= 3 ? PQ_UNIT_MILLIS : precision <= 6 ? PQ_UNIT_MICROS : PQ_UNIT_NANOS;
}

void pq_type_of(const fr_type *t, pq_type_map *m)
{
    memset(m, 0, sizeof *m);
    m->converted = -1;
    m->scale_up = 1;
    switch (t->id) {
    case FR_T_BOOLEAN: m->physical = PQ_BOOLEAN; break;
    case FR_T_TINYINT:
        m->physical = PQ_INT32, m->logical = PQ_LT_INTEGER, m->bits = 8, m->converted = PQ_CT_INT_8;
        break;
    case FR_T_SMALLINT:
        m->physical = PQ_INT32, m->logical = PQ_LT_INTEGER, m->bits = 16, m->converted = PQ_CT_INT_16;
        break;
    case FR_T_INT:
        m->physical = PQ_INT32, m->logical = PQ_LT_INTEGER, m->bits = 32, m->converted = PQ_CT_INT_32;
        break;
    case FR_T_BIGINT:
        m->physical = PQ_INT64, m->logical = PQ_LT_INTEGER, m->bits = 64, m->converted = PQ_CT_INT_64;
        break;
    case FR_T_FLOAT: m->physical = PQ_FLOAT; break;
    case FR_T_DOUBLE: m->physical = PQ_DOUBLE; break;
    case FR_T_DECIMAL:
        m->logical = PQ_LT_DECIMAL, m->converted = PQ_CT_DECIMAL;
        if (t->precision <= 9) m->physical = PQ_INT32;
        else if (t->precision <= 18) m->physical = PQ_INT64;
        else m->physical = PQ_FLBA, m->type_length = pq_decimal_bytes(t->precision);
        break;
    case FR_T_CHAR:
    case FR_T_VARCHAR:
    case FR_T_STRING:
        m->physical = PQ_BYTE_ARRAY, m->logical = PQ_LT_STRING, m->converted = PQ_CT_UTF8;
        break;
    case FR_T_BYTES: m->physical = PQ_BYTE_ARRAY; break;
    case FR_T_DATE: m->physical = PQ_INT32, m->logical = PQ_LT_DATE, m->converted = PQ_CT_DATE; break;
    case FR_T_TIME:
        m->logical = PQ_LT_TIME, m->unit = time_unit_of(t->precision);
        if (t->precision <= 3) {
            m->physical = PQ_INT32, m->converted = PQ_CT_TIME_MILLIS;
            if (t->precision == 0) m->scale_up = 1000;
        } else {
            m->physical = PQ_INT64;
            if (t->precision <= 6) m->converted = PQ_CT_TIME_MICROS;
        }
        break;
    case FR_T_TIMESTAMP:
    case FR_T_TIMESTAMP_LTZ:
        m->physical = PQ_INT64, m->logical = PQ_LT_TIMESTAMP, m->unit = time_unit_of(t->precision);
        if (t->precision == 0) m->scale_up = 1000;
        /* LogicalTypes.md: writers must annotate local timestamps with the legacy
         * TIMESTAMP_MILLIS/MICROS too, for the readers that know no logical types (there is
         * no legacy annotation for nanoseconds). */
        if (m->unit != PQ_UNIT_NANOS)
            m->converted = m->unit == PQ_UNIT_MILLIS ? PQ_CT_TIMESTAMP_MILLIS : PQ_CT_TIMESTAMP_MICROS;
        break;
    }
}

/* ---- Parquet -> firth ------------------------------------------------------------------- */

static int unsupported(fr_error *err, const char *name, const char *what)
{
    return fr_fail(err, FR_EUNSUPPORTED, "Parquet column %s: %s is not supported", name, what);
}

static int precision_of_unit(int unit) { return unit == PQ_UNIT_MILLIS ? 3 : unit == PQ_UNIT_MICROS ? 6 : 9; }

static int map_int32(const pq_schema_elem *e, const char *name, fr_type *t, fr_error *err)
{
    int lt = e->logical, ct = e->converted;
    if (lt == PQ_LT_INTEGER) {
        if (!e->lt_signed) return unsupported(err, name, "an unsigned integer");
        *t = fr_type_of(e->lt_bits == 8 ? FR_T_TINYINT : e->lt_bits == 16 ? FR_T_SMALLINT : FR_T_INT);
        if (e->lt_bits != 8 && e->lt_bits != 16 && e->lt_bits != 32)
            return unsupported(err, name, "an INT32 integer of this width");
    } else if (lt == PQ_LT_DATE || (lt == PQ_LT_NONE && ct == PQ_CT_DATE)) {
        *t = fr_type_of(FR_T_DATE);
    } else if (lt == PQ_LT_TIME || (lt == PQ_LT_NONE && ct == PQ_CT_TIME_MILLIS)) {
        if (lt == PQ_LT_TIME && (e->lt_unit != PQ_UNIT_MILLIS || e->lt_adjusted))
            return unsupported(err, name, "this INT32 TIME");
        *t = fr_type_time_like(FR_T_TIME, 3);
    } else if (lt == PQ_LT_NONE &&
               (ct == PQ_CT_INT_8 || ct == PQ_CT_INT_16 || ct == PQ_CT_INT_32 || ct < 0)) {
        *t = fr_type_of(ct == PQ_CT_INT_8 ? FR_T_TINYINT : ct == PQ_CT_INT_16 ? FR_T_SMALLINT : FR_T_INT);
    } else if (ct >= PQ_CT_UINT_8 && ct <= PQ_CT_UINT_64) {
        return unsupported(err, name, "an unsigned integer");
    } else {
        return unsupported(err, name, "this INT32 logical type");
    }
    return 0;
}

static int map_int64(const pq_schema_elem *e, const char *name, fr_type *t, fr_error *err)
{
    int lt = e->logical, ct = e->converted;
    if (lt == PQ_LT_INTEGER) {
        if (!e->lt_signed) return unsupported(err, name, "an unsigned integer");
        if (e->lt_bits != 64) return unsupported(err, name, "an INT64 integer of this width");
        *t = fr_type_of(FR_T_BIGINT);
    } else if (lt == PQ_LT_TIME) {
        if (e->lt_adjusted) return unsupported(err, name, "a TIME adjusted to UTC");
        if (e->lt_unit != PQ_UNIT_MICROS && e->lt_unit != PQ_UNIT_NANOS)
            return unsupported(err, name, "this INT64 TIME unit");
        *t = fr_type_time_like(FR_T_TIME, precision_of_unit(e->lt_unit));
    } else if (lt == PQ_LT_TIMESTAMP) {
        if (e->lt_unit < PQ_UNIT_MILLIS || e->lt_unit > PQ_UNIT_NANOS)
            return unsupported(err, name, "this TIMESTAMP unit");
        *t = fr_type_time_like(e->lt_adjusted ? FR_T_TIMESTAMP_LTZ : FR_T_TIMESTAMP,
                               precision_of_unit(e->lt_unit));
    } else if (lt == PQ_LT_NONE && ct == PQ_CT_TIME_MICROS) {
        *t = fr_type_time_like(FR_T_TIME, 6);
    } else if (lt == PQ_LT_NONE && (ct == PQ_CT_TIMESTAMP_MILLIS || ct == PQ_CT_TIMESTAMP_MICROS)) {
        *t = fr_type_time_like(FR_T_TIMESTAMP_LTZ, ct == PQ_CT_TIMESTAMP_MILLIS ? 3 : 6);
    } else if (lt == PQ_LT_NONE && (ct == PQ_CT_INT_64 || ct < 0)) {
        *t = fr_type_of(FR_T_BIGINT);
    } else if (ct >= PQ_CT_UINT_8 && ct <= PQ_CT_UINT_64) {
        return unsupported(err, name, "an unsigned integer");
    } else {
        return unsupported(err, name, "this INT64 logical type");
    }
    return 0;
}

static int map_decimal(const pq_schema_elem *e, const char *name, fr_type *t, fr_error *err)
{
    int p = e->logical == PQ_LT_DECIMAL ? e->lt_precision : e->precision;
    int s = e->logical == PQ_LT_DECIMAL ? e->lt_scale : e->scale;
    if (p < 1 || p > FR_DECIMAL_PRECISION_MAX || s < 0 || s > p)
        return unsupported(err, name, "a DECIMAL of this precision and scale");
    int maxp = e->type == PQ_INT32 ? 9 : e->type == PQ_INT64 ? 18 : 38;
    if (p > maxp) return unsupported(err, name, "a DECIMAL wider than its physical type");
    if (e->type == PQ_FLBA && (e->type_length < 1 || e->type_length > 16))
        return unsupported(err, name, "a DECIMAL of more than 16 bytes");
    *t = fr_type_decimal(p, s);
    return 0;
}

int pq_type_from_elem(const pq_schema_elem *e, const char *name, fr_type *out, fr_error *err)
{
    bool decimal = e->logical == PQ_LT_DECIMAL || (e->logical == PQ_LT_NONE && e->converted == PQ_CT_DECIMAL);
    fr_type t;
    switch (e->type) {
    case PQ_BOOLEAN: t = fr_type_of(FR_T_BOOLEAN); break;
    case PQ_INT32:
        FR_TRY(decimal ? map_decimal(e, name, &t, err) : map_int32(e, name, &t, err));
        break;
    case PQ_INT64:
        FR_TRY(decimal ? map_decimal(e, name, &t, err) : map_int64(e, name, &t, err));
        break;
    case PQ_INT96: return unsupported(err, name, "INT96 (legacy timestamps)");
    case PQ_FLOAT:
        if (e->logical != PQ_LT_NONE) return unsupported(err, name, "this FLOAT logical type");
        t = fr_type_of(FR_T_FLOAT);
        break;
    case PQ_DOUBLE:
        if (e->logical != PQ_LT_NONE) return unsupported(err, name, "this DOUBLE logical type");
        t = fr_type_of(FR_T_DOUBLE);
        break;
    case PQ_BYTE_ARRAY:
        if (decimal) return unsupported(err, name, "a DECIMAL stored as BYTE_ARRAY");
        if (e->logical == PQ_LT_STRING || e->logical == PQ_LT_ENUM || e->logical == PQ_LT_JSON ||
            (e->logical == PQ_LT_NONE && (e->converted == PQ_CT_UTF8 || e->converted == PQ_CT_ENUM ||
                                          e->converted == PQ_CT_JSON)))
            t = fr_type_of(FR_T_STRING);
        else if (e->logical == PQ_LT_NONE && (e->converted < 0 || e->converted == PQ_CT_BSON))
            t = fr_type_of(FR_T_BYTES);
        else if (e->logical == PQ_LT_BSON)
            t = fr_type_of(FR_T_BYTES);
        else
            return unsupported(err, name, "this BYTE_ARRAY logical type");
        break;
    case PQ_FLBA:
        if (e->type_length < 1)
            return fr_fail(err, FR_ECORRUPT, "Parquet column %s: bad type_length %d", name,
                           e->type_length);
        if (decimal) FR_TRY(map_decimal(e, name, &t, err));
        else if (e->logical == PQ_LT_NONE && e->converted < 0) t = fr_type_of(FR_T_BYTES);
        else if (e->logical == PQ_LT_UUID) t = fr_type_of(FR_T_BYTES);
        else return unsupported(err, name, "this FIXED_LEN_BYTE_ARRAY logical type");
        break;
    default:
        return unsupported(err, name, "this physical type");
    }
    if (e->repetition == PQ_REPEATED) return unsupported(err, name, "a repeated field");
    if (e->repetition != PQ_REQUIRED && e->repetition != PQ_OPTIONAL && e->repetition != -1)
        return fr_fail(err, FR_ECORRUPT, "Parquet column %s: bad repetition", name);
    t.nullable = e->repetition != PQ_REQUIRED;
    *out = t;
    return 0;
}
