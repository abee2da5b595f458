/* arrow_ipc_schema.c — the Arrow IPC Schema message: firth types to Arrow Field/Type tables
 * and back, and the "firth.type" custom metadata that keeps the SQL types Arrow cannot say
 * (CHAR(n), VARCHAR(n), odd TIME/TIMESTAMP precisions).
 *
 * Tables and slots (format/Schema.fbs): Schema {endianness 0, fields 1, custom_metadata 2,
 * features 3}; Field {name 0, nullable 1, type_type 2, type 3, dictionary 4, children 5,
 * custom_metadata 6}; KeyValue {key 0, value 1}; Int {bitWidth 0, is_signed 1};
 * FloatingPoint {precision 0}; Decimal {precision 0, scale 1, bitWidth 2}; Date {unit 0};
 * Time {unit 0, bitWidth 1}; Timestamp {unit 0, timezone 1}. The writer writes every scalar
 * explicitly, because some of Arrow's defaults (Date: MILLISECOND) are not ours. */
#include <stdio.h>

#include "arrow/arrow_internal.h"

/* Type union members (Schema.fbs `union Type`). */
enum {
    FR_AT_INT = 2, FR_AT_FLOAT = 3, FR_AT_BINARY = 4, FR_AT_UTF8 = 5, FR_AT_BOOL = 6,
    FR_AT_DECIMAL = 7, FR_AT_DATE = 8, FR_AT_TIME = 9, FR_AT_TIMESTAMP = 10,
};
enum { FR_UNIT_SECOND, FR_UNIT_MILLI, FR_UNIT_MICRO, FR_UNIT_NANO };

#define FR_IPC_KEYVALUES_MAX 1024

static int fr_time_unit(int precision)
{
    return precision == 0 ? FR_UNIT_SECOND : precision <= 3 ? FR_UNIT_MILLI
                                           : precision <= 6 ? FR_UNIT_MICRO : FR_UNIT_NANO;
}

bool fr_arrow_needs_type_key(const fr_type *t)
{
    switch (t->id) {
    case FR_T_CHAR: case FR_T_VARCHAR: return true;
    case FR_T_TIME: case FR_T_TIMESTAMP: case FR_T_TIMESTAMP_LTZ:
        return t->precision != 0 && t->precision != 3 && t->precision != 6 && t->precision != 9;
    default: return false;
    }
}

void fr_arrow_apply_type_key(fr_type *t, const char *text, size_t len)
{
    char buf[64];
    if (len == 0 || len >= sizeof buf) return;
    memcpy(buf, text, len);
    buf[len] = '\0';
    fr_type parsed;
    fr_error ignored;
    if (fr_type_parse(buf, &parsed, &ignored) < 0) return;
    bool same;
    if (fr_type_is_string(t->id)) same = fr_type_is_string(parsed.id);
    else if (t->id == FR_T_TIME || t->id == FR_T_TIMESTAMP || t->id == FR_T_TIMESTAMP_LTZ)
        same = parsed.id == t->id && fr_time_unit(parsed.precision) == fr_time_unit(t->precision);
    else same = false;
    if (!same) return;
    parsed.nullable = t->nullable;
    *t = parsed;
}

/* ---- writing ----------------------------------------------------------------------------- */

/* The Type union member of t. */
static uint8_t fr_ipc_type_id(const fr_type *t)
{
    switch (t->id) {
    case FR_T_BOOLEAN: return FR_AT_BOOL;
    case FR_T_TINYINT: case FR_T_SMALLINT: case FR_T_INT: case FR_T_BIGINT: return FR_AT_INT;
    case FR_T_FLOAT: case FR_T_DOUBLE: return FR_AT_FLOAT;
    case FR_T_DECIMAL: return FR_AT_DECIMAL;
    case FR_T_CHAR: case FR_T_VARCHAR: case FR_T_STRING: return FR_AT_UTF8;
    case FR_T_BYTES: return FR_AT_BINARY;
    case FR_T_DATE: return FR_AT_DATE;
    case FR_T_TIME: return FR_AT_TIME;
    case FR_T_TIMESTAMP: case FR_T_TIMESTAMP_LTZ: return FR_AT_TIMESTAMP;
    }
    return 0;
}

/* Writes the Type table of t (and, for TIMESTAMP_LTZ, its timezone "UTC"). */
static size_t fr_ipc_write_type(fr_fbw *w, const fr_type *t)
{
    fr_fbf f[3];
    int n = 0;
    switch (t->id) {
    case FR_T_TINYINT: case FR_T_SMALLINT: case FR_T_INT: case FR_T_BIGINT:
        f[n++] = (fr_fbf){0, 4, (uint64_t)(8 * fr_arrow_width(t))};
        f[n++] = (fr_fbf){1, 1, 1};
        break;
    case FR_T_FLOAT: case FR_T_DOUBLE:
        f[n++] = (fr_fbf){0, 2, t->id == FR_T_FLOAT ? 1 : 2}; /* SINGLE, DOUBLE */
        break;
    case FR_T_DECIMAL:
        f[n++] = (fr_fbf){0, 4, t->precision};
        f[n++] = (fr_fbf){1, 4, t->scale};
        f[n++] = (fr_fbf){2, 4, 128};
        break;
    case FR_T_DATE: f[n++] = (fr_fbf){0, 2, 0 /* DAY */}; break;
    case FR_T_TIME:
        f[n++] = (fr_fbf){0, 2, (uint64_t)fr_time_unit(t->precision)};
        f[n++] = (fr_fbf){1, 4, (uint64_t)(8 * fr_arrow_width(t))};
        break;
    case FR_T_TIMESTAMP: case FR_T_TIMESTAMP_LTZ:
        f[n++] = (fr_fbf){0, 2, (uint64_t)fr_time_unit(t->precision)};
        if (t->id == FR_T_TIMESTAMP_LTZ) f[n++] = (fr_fbf){1, 0, 0};
        break;
    default: break; /* Bool, Utf8, Binary: empty tables */
    }
    size_t at[3];
    size_t pos = fr_fbw_table(w, f, n, at);
    if (t->id == FR_T_TIMESTAMP_LTZ) fr_fbw_patch(w, at[1], fr_fbw_string(w, "UTC", 3));
    return pos;
}

/* Writes a Field table and points the offset at `slot_at` to it. */
static void fr_ipc_write_field(fr_fbw *w, const fr_field *fd, size_t slot_at)
{
    bool meta = fr_arrow_needs_type_key(&fd->type);
    fr_fbf f[6] = {
        {0, 0, 0},                       /* name */
        {1, 1, fd->type.nullable},       /* nullable */
        {2, 1, fr_ipc_type_id(&fd->type)}, /* type_type */
        {3, 0, 0},                       /* type */
        {5, 0, 0},                       /* children: always present, empty */
        {6, 0, 0},                       /* custom_metadata */
    };
    size_t at[6];
    fr_fbw_patch(w, slot_at, fr_fbw_table(w, f, meta ? 6 : 5, at));
    fr_fbw_patch(w, at[0], fr_fbw_string(w, fd->name, strlen(fd->name)));
    fr_fbw_patch(w, at[3], fr_ipc_write_type(w, &fd->type));
    fr_fbw_patch(w, at[4], fr_fbw_vector(w, 0, 4, 4, NULL));
    if (!meta) return;
    char text[64];
    int len = fr_type_format(&fd->type, false, text, sizeof text);
    if (len < 0 || (size_t)len >= sizeof text) len = 0;
    size_t vec = fr_fbw_vector(w, 1, 4, 4, NULL);
    fr_fbw_patch(w, at[5], vec);
    fr_fbf kv[2] = {{0, 0, 0}, {1, 0, 0}};
    size_t kv_at[2];
    fr_fbw_patch(w, vec + 4, fr_fbw_table(w, kv, 2, kv_at));
    fr_fbw_patch(w, kv_at[0], fr_fbw_string(w, FR_ARROW_TYPE_KEY, strlen(FR_ARROW_TYPE_KEY)));
    fr_fbw_patch(w, kv_at[1], fr_fbw_string(w, text, (size_t)len));
}

int fr_ipc_write_schema(const fr_schema *s, fr_buf *out, fr_error *err)
{
    size_t start = out->len;
    fr_fbw w;
    size_t msg_at[4];
    FR_TRY(fr_ipc_message_begin(out, &w, FR_IPC_HDR_SCHEMA, 0, msg_at, err));
    fr_fbf sch[2] = {{0, 2, 0 /* Little */}, {1, 0, 0}};
    size_t sch_at[2];
    fr_fbw_patch(&w, msg_at[2], fr_fbw_table(&w, sch, 2, sch_at));
    int nfields = fr_schema_num_fields(s);
    size_t vec = fr_fbw_vector(&w, (size_t)nfields, 4, 4, NULL);
    fr_fbw_patch(&w, sch_at[1], vec);
    for (int i = 0; i < nfields && w.rc == 0; i++)
        fr_ipc_write_field(&w, fr_schema_field(s, i), vec + 4 + 4 * (size_t)i);
    return fr_ipc_message_end(out, start, &w);
}

/* ---- reading ----------------------------------------------------------------------------- */

/* Reads a scalar that must exist in a well-formed writer's output only through its default. */
#define FR_FB_GET(t, slot, size, def, var)                                                   \
    do {                                                                                     \
        uint64_t fr_v_;                                                                      \
        FR_TRY(fr_fbt_scalar((t), (slot), (size), (def), &fr_v_, err));                      \
        (var) = fr_v_;                                                                       \
    } while (0)

static int fr_ipc_unit_precision(uint64_t unit, const char *name, int *precision, fr_error *err)
{
    static const int precisions[] = {0, 3, 6, 9};
    FR_CHECK(unit <= FR_UNIT_NANO, FR_ECORRUPT, err, "field %s: unknown time unit %llu", name,
             (unsigned long long)unit);
    *precision = precisions[unit];
    return 0;
}

/* Maps an Arrow Type table to a firth type. Arrow types firth does not have are
 * FR_EUNSUPPORTED with the field's name. */
static int fr_ipc_read_type(uint64_t type_id, const fr_fbt *tt, bool present, const char *name,
                            fr_type *out, fr_error *err)
{
    /* An absent table reads as all defaults, like an empty table. */
    fr_fbt empty_table;
    static const uint8_t empty[8] = {4, 0, 4, 0, 4, 0, 0, 0}; /* vtable {4, 4}, table soffset 4 */
    if (!present) {
        empty_table = (fr_fbt){.p = empty, .n = sizeof empty, .pos = 4, .vt = 0, .vt_size = 4, .t_size = 4};
        tt = &empty_table;
    }
    uint64_t a = 0, b = 0, c = 0;
    switch (type_id) {
    case FR_AT_BOOL: *out = fr_type_of(FR_T_BOOLEAN); return 0;
    case FR_AT_UTF8: *out = fr_type_of(FR_T_STRING); return 0;
    case FR_AT_BINARY: *out = fr_type_of(FR_T_BYTES); return 0;
    case FR_AT_INT: {
        FR_FB_GET(tt, 0, 4, 0, a);
        FR_FB_GET(tt, 1, 1, 0, b);
        FR_CHECK(b != 0, FR_EUNSUPPORTED, err, "field %s: unsigned integers are not supported", name);
        fr_type_id id = a == 8 ? FR_T_TINYINT : a == 16 ? FR_T_SMALLINT : a == 32 ? FR_T_INT
                      : a == 64 ? FR_T_BIGINT : 0;
        FR_CHECK(id != 0, FR_ECORRUPT, err, "field %s: integer bit width %llu", name, (unsigned long long)a);
        *out = fr_type_of(id);
        return 0;
    }
    case FR_AT_FLOAT:
        FR_FB_GET(tt, 0, 2, 0, a);
        FR_CHECK(a == 1 || a == 2, FR_EUNSUPPORTED, err,
                 "field %s: only single and double precision floats are supported", name);
        *out = fr_type_of(a == 1 ? FR_T_FLOAT : FR_T_DOUBLE);
        return 0;
    case FR_AT_DECIMAL: {
        FR_FB_GET(tt, 0, 4, 0, a);
        FR_FB_GET(tt, 1, 4, 0, b);
        FR_FB_GET(tt, 2, 4, 128, c);
        int32_t precision = (int32_t)a, scale = (int32_t)b, bits = (int32_t)c;
        FR_CHECK(bits == 128, FR_EUNSUPPORTED, err, "field %s: only 128-bit decimals are supported", name);
        FR_CHECK(precision >= 1 && precision <= FR_DECIMAL_PRECISION_MAX && scale >= 0 && scale <= precision,
                 FR_EUNSUPPORTED, err, "field %s: DECIMAL(%d, %d) is outside firth's decimals", name,
                 precision, scale);
        *out = fr_type_decimal(precision, scale);
        return 0;
    }
    case FR_AT_DATE:
        FR_FB_GET(tt, 0, 2, 1, a);
        FR_CHECK(a == 0, FR_EUNSUPPORTED, err, "field %s: only dates in days are supported", name);
        *out = fr_type_of(FR_T_DATE);
        return 0;
    case FR_AT_TIME: {
        int p = 0;
        FR_FB_GET(tt, 0, 2, FR_UNIT_MILLI, a);
        FR_FB_GET(tt, 1, 4, 32, b);
        FR_TRY(fr_ipc_unit_precision(a, name, &p, err));
        FR_CHECK(b == (p <= 3 ? 32u : 64u), FR_ECORRUPT, err,
                 "field %s: time of bit width %llu does not fit its unit", name, (unsigned long long)b);
        *out = fr_type_time_like(FR_T_TIME, p);
        return 0;
    }
    case FR_AT_TIMESTAMP: {
        int p = 0;
        FR_FB_GET(tt, 0, 2, FR_UNIT_SECOND, a);
        FR_TRY(fr_ipc_unit_precision(a, name, &p, err));
        const char *tz;
        size_t tz_len;
        bool has_tz;
        FR_TRY(fr_fbt_string(tt, 1, &tz, &tz_len, &has_tz, err));
        /* A zone makes the values instants (TIMESTAMP_LTZ); no zone is wall-clock time. */
        *out = fr_type_time_like(has_tz && tz_len > 0 ? FR_T_TIMESTAMP_LTZ : FR_T_TIMESTAMP, p);
        return 0;
    }
    default:
        return fr_fail(err, FR_EUNSUPPORTED, "field %s: Arrow type %llu is not supported by firth",
                       name, (unsigned long long)type_id);
    }
}

/* Looks for FR_ARROW_TYPE_KEY in a Field's custom_metadata and applies it. */
static int fr_ipc_read_field_meta(const fr_fbt *ft, const char *name, fr_type *t, fr_error *err)
{
    const uint8_t *kvs;
    uint32_t nkv;
    FR_TRY(fr_fbt_vector(ft, 6, 4, &kvs, &nkv, err));
    FR_CHECK(nkv <= FR_IPC_KEYVALUES_MAX, FR_ELIMIT, err,
             "field %s has %u metadata entries, more than the limit of %d", name, nkv, FR_IPC_KEYVALUES_MAX);
    for (uint32_t i = 0; i < nkv; i++) {
        fr_fbt kv;
        FR_TRY(fr_fbt_vector_table(ft, kvs, i, &kv, err));
        const char *key, *value;
        size_t key_len, value_len;
        bool has_key, has_value;
        FR_TRY(fr_fbt_string(&kv, 0, &key, &key_len, &has_key, err));
        FR_TRY(fr_fbt_string(&kv, 1, &value, &value_len, &has_value, err));
        if (has_key && has_value && key_len == strlen(FR_ARROW_TYPE_KEY) &&
            memcmp(key, FR_ARROW_TYPE_KEY, key_len) == 0)
            fr_arrow_apply_type_key(t, value, value_len);
    }
    return 0;
}

static int fr_ipc_read_field(const fr_fbt *ft, fr_field *out, fr_error *err)
{
    const char *name;
    size_t name_len;
    bool has_name;
    FR_TRY(fr_fbt_string(ft, 0, &name, &name_len, &has_name, err));
    FR_CHECK(has_name && name_len >= 1 && name_len <= FR_NAME_BYTES_MAX && !memchr(name, 0, name_len),
             FR_EUNSUPPORTED, err, "a field has no name or a name firth cannot use (1..%d bytes, no NUL)",
             FR_NAME_BYTES_MAX);
    out->name = fr_strndup(name, name_len);
    if (!out->name) return fr_fail(err, FR_ENOMEM, "out of memory reading a schema");
    uint64_t nullable, type_id;
    FR_TRY(fr_fbt_scalar(ft, 1, 1, 0, &nullable, err));
    FR_TRY(fr_fbt_scalar(ft, 2, 1, 0, &type_id, err));
    fr_fbt dict, tt;
    bool has_dict, has_type;
    FR_TRY(fr_fbt_table(ft, 4, &dict, &has_dict, err));
    FR_CHECK(!has_dict, FR_EUNSUPPORTED, err, "field %s is dictionary-encoded, which firth does not support",
             out->name);
    const uint8_t *children;
    uint32_t nchildren;
    FR_TRY(fr_fbt_vector(ft, 5, 4, &children, &nchildren, err));
    FR_CHECK(nchildren == 0, FR_EUNSUPPORTED, err, "field %s is nested, which firth does not support",
             out->name);
    FR_TRY(fr_fbt_table(ft, 3, &tt, &has_type, err));
    FR_TRY(fr_ipc_read_type(type_id, &tt, has_type, out->name, &out->type, err));
    out->type.nullable = nullable != 0;
    return fr_ipc_read_field_meta(ft, out->name, &out->type, err);
}

/* Decodes the Schema table of a message. */
static int fr_ipc_decode_schema(const fr_fbt *st, int32_t schema_id, fr_schema **out, fr_error *err)
{
    uint64_t endianness;
    FR_TRY(fr_fbt_scalar(st, 0, 2, 0, &endianness, err));
    FR_CHECK(endianness == 0, FR_EUNSUPPORTED, err, "big-endian Arrow data is not supported");
    const uint8_t *vec;
    uint32_t nfields;
    FR_TRY(fr_fbt_vector(st, 1, 4, &vec, &nfields, err));
    FR_CHECK(nfields <= FR_SCHEMA_COLUMNS_MAX, FR_ELIMIT, err,
             "schema of %u fields exceeds the limit of %d columns", nfields, FR_SCHEMA_COLUMNS_MAX);
    fr_field *fields = fr_calloc(nfields ? nfields : 1, sizeof *fields);
    if (!fields) return fr_fail(err, FR_ENOMEM, "out of memory reading a schema of %u fields", nfields);
    int rc = 0;
    for (uint32_t i = 0; i < nfields; i++) {
        fr_fbt ft;
        FR_GOTO(fr_fbt_vector_table(st, vec, i, &ft, err));
        FR_GOTO(fr_ipc_read_field(&ft, &fields[i], err));
    }
    rc = fr_schema_new(fields, (int)nfields, schema_id, out, err);
    if (rc < 0) fr_error_wrap(err, "Arrow schema");
fail:
    for (uint32_t i = 0; i < nfields; i++) fr_free(fields[i].name);
    fr_free(fields);
    return rc;
}

int fr_ipc_read_schema(const uint8_t *p, size_t n, int32_t schema_id, fr_schema **out,
                       size_t *used, fr_error *err)
{
    fr_ipc_msg m;
    FR_TRY(fr_ipc_parse_message(p, n, &m, err));
    FR_CHECK(!m.eos, FR_ECORRUPT, err, "expected an Arrow Schema message but found the end of the stream");
    FR_CHECK(m.header_type == FR_IPC_HDR_SCHEMA, FR_ECORRUPT, err,
             "expected an Arrow Schema message but found message type %d", m.header_type);
    FR_TRY(fr_ipc_decode_schema(&m.header, schema_id, out, err));
    if (used) *used = m.used;
    return 0;
}
