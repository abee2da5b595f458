/* record_batch.c — the record-batch format: encoding a columnar batch into one record batch
 * (header, column statistics, change types, Arrow IPC RecordBatch message), decoding and
 * checking the header of outside bytes, and decoding the statistics block.
 *
 * The layout is documented byte by byte in docs/FORMAT.md and asserted below. Every decoder
 * here checks each length against the bytes it was given and the FR_RB_* limits before it
 * reads, so that a batch from a client or a damaged file is rejected, never followed. */
#include "log/log_int.h"

#include <math.h>
#include <stddef.h>

/* The header as a packed struct, only to assert the documented offsets. The code reads and
 * writes the fields at the FR_RB_OFF_* positions with the little-endian helpers. */
typedef struct __attribute__((packed)) fr_rb_header {
    int64_t base_offset;
    int64_t commit_timestamp;
    int32_t batch_length;
    uint32_t crc32c;
    uint8_t magic;
    uint8_t attributes;
    uint16_t schema_id;
    int32_t last_offset_delta;
    int32_t record_count;
    int32_t batch_sequence;
    int64_t writer_id;
    int32_t stats_length;
    int32_t reserved;
} fr_rb_header;

_Static_assert(sizeof(fr_rb_header) == FR_RB_HEADER_BYTES, "record batch header size");
_Static_assert(offsetof(fr_rb_header, base_offset) == FR_RB_OFF_BASE_OFFSET, "base_offset");
_Static_assert(offsetof(fr_rb_header, commit_timestamp) == FR_RB_OFF_COMMIT_TS, "commit_ts");
_Static_assert(offsetof(fr_rb_header, batch_length) == FR_RB_OFF_LENGTH, "batch_length");
_Static_assert(offsetof(fr_rb_header, crc32c) == FR_RB_OFF_CRC, "crc32c");
_Static_assert(offsetof(fr_rb_header, magic) == FR_RB_OFF_MAGIC, "magic");
_Static_assert(offsetof(fr_rb_header, attributes) == FR_RB_OFF_ATTRIBUTES, "attributes");
_Static_assert(offsetof(fr_rb_header, schema_id) == FR_RB_OFF_SCHEMA_ID, "schema_id");
_Static_assert(offsetof(fr_rb_header, last_offset_delta) == FR_RB_OFF_LAST_DELTA, "delta");
_Static_assert(offsetof(fr_rb_header, record_count) == FR_RB_OFF_RECORD_COUNT, "count");
_Static_assert(offsetof(fr_rb_header, batch_sequence) == FR_RB_OFF_SEQUENCE, "sequence");
_Static_assert(offsetof(fr_rb_header, writer_id) == FR_RB_OFF_WRITER_ID, "writer_id");
_Static_assert(offsetof(fr_rb_header, stats_length) == FR_RB_OFF_STATS_LENGTH, "stats_length");
_Static_assert(offsetof(fr_rb_header, reserved) == FR_RB_OFF_RESERVED, "reserved");
_Static_assert(FR_RB_HEADER_BYTES % 8 == 0, "sections after the header start 8-aligned");
_Static_assert(FR_RB_BYTES_MAX % 8 == 0 && FR_RB_BYTES_MAX <= INT32_MAX, "batch length limit");

const char *fr_change_type_name(fr_change_type t)
{
    switch (t) {
    case FR_CHANGE_APPEND: return "+A";
    case FR_CHANGE_INSERT: return "+I";
    case FR_CHANGE_UPDATE_BEFORE: return "-U";
    case FR_CHANGE_UPDATE_AFTER: return "+U";
    case FR_CHANGE_DELETE: return "-D";
    }
    return "?";
}

static size_t rb_pad8(size_t n) { return (n + 7) & ~(size_t)7; }

/* ---- statistics: physical widths and the order of values -------------------------------- */

/* Bytes of a min/max value of a fixed-width type in the statistics block; 0 for strings and
 * bytes (written as varint length + bytes). */
static int rb_stat_width(const fr_type *t)
{
    switch (t->id) {
    case FR_T_BOOLEAN: case FR_T_TINYINT: return 1;
    case FR_T_SMALLINT: return 2;
    case FR_T_INT: case FR_T_DATE: case FR_T_FLOAT: return 4;
    case FR_T_BIGINT: case FR_T_DOUBLE: case FR_T_TIMESTAMP: case FR_T_TIMESTAMP_LTZ: return 8;
    case FR_T_TIME: return t->precision <= 3 ? 4 : 8;
    case FR_T_DECIMAL: return 16;
    case FR_T_CHAR: case FR_T_VARCHAR: case FR_T_STRING: case FR_T_BYTES: return 0;
    }
    return -1;
}

/* Floating point in the total order the expressions use: NaN equals NaN, above +Infinity. */
static int rb_fcmp(double a, double b)
{
    bool na = isnan(a), nb = isnan(b);
    if (na || nb) return na && nb ? 0 : (na ? 1 : -1);
    return a < b ? -1 : (a > b ? 1 : 0);
}

static int rb_bytes_cmp(const uint8_t *a, size_t an, const uint8_t *b, size_t bn)
{
    int c = memcmp(a, b, an < bn ? an : bn);
    if (c != 0) return c;
    return an < bn ? -1 : (an > bn ? 1 : 0);
}

static bool rb_valid(const fr_column *c, int64_t i)
{
    return !c->validity || ((c->validity[i >> 3] >> (i & 7)) & 1);
}

/* Min and max of one column over its non-null rows, as the bytes to store. */
typedef struct rb_minmax {
    bool has;
    union {
        int64_t i;
        double f;
        fr_i128 d;
    } min, max;
    const uint8_t *smin, *smax;
    size_t smin_len, smax_len;
} rb_minmax;

/* Loops over the fixed-width integers of one column. The validity check is hoisted out of
 * the loop when the column has no nulls, which is the common case on the append path. */
#define RB_INT_MINMAX(CTYPE)                                                                 \
    do {                                                                                     \
        const CTYPE *v = (const CTYPE *)c->values;                                           \
        for (int64_t i = 0; i < rows; i++) {                                                 \
            if (c->validity && !rb_valid(c, i)) continue;                                    \
            int64_t x = v[i];                                                                \
            if (!mm->has) {                                                                  \
                mm->min.i = mm->max.i = x;                                                   \
                mm->has = true;                                                              \
            } else if (x < mm->min.i) {                                                      \
                mm->min.i = x;                                                               \
            } else if (x > mm->max.i) {                                                      \
                mm->max.i = x;                                                               \
            }                                                                                \
        }                                                                                    \
    } while (0)

static void rb_minmax_fixed(const fr_column *c, int width, rb_minmax *mm)
{
    int64_t rows = c->length;
    switch (width) {
    case 1: RB_INT_MINMAX(int8_t); break;
    case 2: RB_INT_MINMAX(int16_t); break;
    case 4: RB_INT_MINMAX(int32_t); break;
    case 8: RB_INT_MINMAX(int64_t); break;
    default: break;
    }
}

static void rb_minmax_float(const fr_column *c, bool is_double, rb_minmax *mm)
{
    for (int64_t i = 0; i < c->length; i++) {
        if (c->validity && !rb_valid(c, i)) continue;
        double x;
        if (is_double) {
            memcpy(&x, c->values + i * 8, 8);
        } else {
            float f;
            memcpy(&f, c->values + i * 4, 4);
            x = f;
        }
        if (!mm->has) {
            mm->min.f = mm->max.f = x;
            mm->has = true;
            continue;
        }
        if (rb_fcmp(x, mm->min.f) < 0) mm->min.f = x;
        if (rb_fcmp(x, mm->max.f) > 0) mm->max.f = x;
    }
}

static void rb_minmax_decimal(const fr_column *c, rb_minmax *mm)
{
    for (int64_t i = 0; i < c->length; i++) {
        if (c->validity && !rb_valid(c, i)) continue;
        fr_i128 x;
        memcpy(&x, c->values + i * 16, 16);
        if (!mm->has) {
            mm->min.d = mm->max.d = x;
            mm->has = true;
        } else if (x < mm->min.d) {
            mm->min.d = x;
        } else if (x > mm->max.d) {
            mm->max.d = x;
        }
    }
}

static void rb_minmax_bool(const fr_column *c, rb_minmax *mm)
{
    bool any_false = false, any_true = false;
    for (int64_t i = 0; i < c->length && !(any_false && any_true); i++) {
        if (c->validity && !rb_valid(c, i)) continue;
        if ((c->values[i >> 3] >> (i & 7)) & 1) any_true = true;
        else any_false = true;
    }
    if (!any_false && !any_true) return;
    mm->has = true;
    mm->min.i = any_false ? 0 : 1;
    mm->max.i = any_true ? 1 : 0;
}

/* The first 8 bytes of a string as a big-endian number, zero-padded when shorter. When the
 * keys of two strings differ, they order the strings as memcmp-then-length would (a zero
 * pad sorts a proper prefix first); only equal keys need the full comparison. */
static uint64_t rb_prefix_key(const uint8_t *s, size_t n)
{
    if (n >= 8) return __builtin_bswap64(fr_get_u64le(s));
    uint64_t k = 0;
    for (size_t j = 0; j < n; j++) k |= (uint64_t)s[j] << (56 - 8 * j);
    return k;
}

/* Strings: most rows fall strictly between the running min and max, which their prefix
 * keys show without a memcmp; a row whose key ties with a bound is compared in full. */
static void rb_minmax_var(const fr_column *c, rb_minmax *mm)
{
    uint64_t kmin = 0, kmax = 0;
    for (int64_t i = 0; i < c->length; i++) {
        if (c->validity && !rb_valid(c, i)) continue;
        const uint8_t *s = c->values + c->offsets[i];
        size_t n = (size_t)(c->offsets[i + 1] - c->offsets[i]);
        uint64_t k = rb_prefix_key(s, n);
        if (!mm->has) {
            mm->smin = mm->smax = s;
            mm->smin_len = mm->smax_len = n;
            kmin = kmax = k;
            mm->has = true;
            continue;
        }
        if (k > kmin && k < kmax) continue;
        if (k < kmin || (k == kmin && rb_bytes_cmp(s, n, mm->smin, mm->smin_len) < 0)) {
            mm->smin = s;
            mm->smin_len = n;
            kmin = k;
        } else if (k > kmax || (k == kmax && rb_bytes_cmp(s, n, mm->smax, mm->smax_len) > 0)) {
            mm->smax = s;
            mm->smax_len = n;
            kmax = k;
        }
    }
    /* A bound longer than the limit is not stored (a truncated max would not be a bound). */
    if (mm->has && (mm->smin_len > FR_RB_STRING_STAT_BYTES_MAX ||
                    mm->smax_len > FR_RB_STRING_STAT_BYTES_MAX))
        mm->has = false;
}

static void rb_put_fixed(uint8_t *p, int width, const fr_type *t, int64_t i, double f,
                         fr_i128 d)
{
    if (t->id == FR_T_FLOAT) {
        float x = (float)f;
        memcpy(p, &x, 4);
    } else if (t->id == FR_T_DOUBLE) {
        memcpy(p, &f, 8);
    } else if (t->id == FR_T_DECIMAL) {
        memcpy(p, &d, 16);
    } else {
        uint64_t u = (uint64_t)i;
        for (int k = 0; k < width; k++) p[k] = (uint8_t)(u >> (8 * k));
    }
}

/* Appends the statistics of one column. */
static int rb_stats_column(const fr_column *c, const fr_type *t, fr_buf *out, fr_error *err)
{
    int width = rb_stat_width(t);
    FR_CHECK(width >= 0, FR_EINVAL, err, "record batch: column of unknown type %d", (int)t->id);
    rb_minmax mm = { 0 };
    if (c->null_count < c->length) {
        switch (t->id) {
        case FR_T_BOOLEAN: rb_minmax_bool(c, &mm); break;
        case FR_T_FLOAT: rb_minmax_float(c, false, &mm); break;
        case FR_T_DOUBLE: rb_minmax_float(c, true, &mm); break;
        case FR_T_DECIMAL: rb_minmax_decimal(c, &mm); break;
        default:
            if (width == 0) rb_minmax_var(c, &mm);
            else rb_minmax_fixed(c, width, &mm);
            break;
        }
    }
    uint8_t tmp[10 + 1 + 2 * 16];
    size_t n = fr_varint_put(tmp, (uint64_t)c->null_count);
    tmp[n++] = mm.has ? FR_RB_STAT_HAS_MINMAX : 0;
    if (mm.has && width > 0) {
        rb_put_fixed(tmp + n, width, t, mm.min.i, mm.min.f, mm.min.d);
        rb_put_fixed(tmp + n + width, width, t, mm.max.i, mm.max.f, mm.max.d);
        n += 2 * (size_t)width;
    }
    FR_TRY(fr_buf_append(out, tmp, n, err));
    if (mm.has && width == 0) {
        n = fr_varint_put(tmp, mm.smin_len);
        FR_TRY(fr_buf_append(out, tmp, n, err));
        FR_TRY(fr_buf_append(out, mm.smin, mm.smin_len, err));
        n = fr_varint_put(tmp, mm.smax_len);
        FR_TRY(fr_buf_append(out, tmp, n, err));
        FR_TRY(fr_buf_append(out, mm.smax, mm.smax_len, err));
    }
    return FR_OK;
}

static int rb_encode_stats(const fr_batch *b, fr_buf *out, fr_error *err)
{
    int ncols = fr_batch_num_columns(b);
    const fr_schema *schema = fr_batch_schema(b);
    uint8_t head[1 + 10];
    head[0] = FR_RB_STATS_VERSION;
    size_t n = 1 + fr_varint_put(head + 1, (uint64_t)ncols);
    FR_TRY(fr_buf_append(out, head, n, err));
    for (int i = 0; i < ncols; i++)
        FR_TRY(rb_stats_column(fr_batch_column(b, i), &fr_schema_field(schema, i)->type, out,
                               err));
    return fr_buf_pad(out, 8, err);
}

/* ---- encoding --------------------------------------------------------------------------- */

static int rb_encode_sections(const fr_batch *b, const fr_rb_params *params, int64_t rows,
                              size_t start, fr_buf *out, fr_error *err)
{
    FR_TRY(fr_buf_append_zeros(out, FR_RB_HEADER_BYTES, err));
    if (!params->no_stats) FR_TRY(rb_encode_stats(b, out, err));
    size_t stats_len = out->len - start - FR_RB_HEADER_BYTES;
    if (params->change_types) {
        for (int64_t i = 0; i < rows; i++)
            FR_CHECK(params->change_types[i] <= FR_CHANGE_DELETE, FR_EINVAL, err,
                     "record batch: change type %u of row %lld is not one of +A +I -U +U -D",
                     params->change_types[i], (long long)i);
        FR_TRY(fr_buf_append(out, params->change_types, (size_t)rows, err));
        FR_TRY(fr_buf_pad(out, 8, err));
    }
    FR_TRY(fr_ipc_write_batch(b, params->compression, out, err));
    FR_TRY(fr_buf_pad(out, 8, err));
    size_t len = out->len - start;
    FR_CHECK(len <= FR_RB_BYTES_MAX, FR_ELIMIT, err,
             "record batch of %zu bytes exceeds the %d-byte limit: send fewer rows per batch",
             len, FR_RB_BYTES_MAX);

    uint8_t *h = out->data + start;
    uint8_t attributes = (uint8_t)((unsigned)params->compression << FR_RB_ATTR_COMPRESSION_SHIFT);
    if (!params->change_types) attributes |= FR_RB_ATTR_APPEND_ONLY;
    fr_put_u32le(h + FR_RB_OFF_LENGTH, (uint32_t)len);
    h[FR_RB_OFF_MAGIC] = FR_RB_MAGIC;
    h[FR_RB_OFF_ATTRIBUTES] = attributes;
    fr_put_u16le(h + FR_RB_OFF_SCHEMA_ID, (uint16_t)params->schema_id);
    fr_put_u32le(h + FR_RB_OFF_LAST_DELTA, (uint32_t)(rows - 1));
    fr_put_u32le(h + FR_RB_OFF_RECORD_COUNT, (uint32_t)rows);
    fr_put_u32le(h + FR_RB_OFF_SEQUENCE, (uint32_t)params->batch_sequence);
    fr_put_u64le(h + FR_RB_OFF_WRITER_ID, (uint64_t)params->writer_id);
    fr_put_u32le(h + FR_RB_OFF_STATS_LENGTH, (uint32_t)stats_len);
    fr_put_u32le(h + FR_RB_OFF_CRC, fr_crc32c(0, h + FR_RB_CRC_START, len - FR_RB_CRC_START));
    return FR_OK;
}

int fr_rb_encode(const fr_batch *b, const fr_rb_params *params, fr_buf *out, fr_error *err)
{
    int64_t rows = fr_batch_num_rows(b);
    FR_CHECK(rows >= 1 && rows <= FR_RB_RECORDS_MAX, FR_EINVAL, err,
             "record batch: %lld rows is outside 1..%d", (long long)rows, FR_RB_RECORDS_MAX);
    FR_CHECK(params->schema_id >= 0 && params->schema_id <= UINT16_MAX, FR_EINVAL, err,
             "record batch: schema id %d is outside 0..65535", (int)params->schema_id);
    FR_CHECK(params->compression >= FR_COMPRESSION_NONE &&
                 params->compression <= FR_COMPRESSION_ZSTD,
             FR_EINVAL, err, "record batch: unknown compression %d", (int)params->compression);
    size_t start = out->len;
    int rc = rb_encode_sections(b, params, rows, start, out, err);
    if (rc < 0) out->len = start;
    return rc;
}

void fr_rb_assign(uint8_t *batch, int64_t base_offset, int64_t commit_timestamp)
{
    fr_put_u64le(batch + FR_RB_OFF_BASE_OFFSET, (uint64_t)base_offset);
    fr_put_u64le(batch + FR_RB_OFF_COMMIT_TS, (uint64_t)commit_timestamp);
}

/* ---- decoding --------------------------------------------------------------------------- */

int fr_rb_parse_header(const uint8_t *p, size_t n, fr_rb_view *out, fr_error *err)
{
    memset(out, 0, sizeof *out);
    FR_CHECK(n >= FR_RB_HEADER_BYTES, FR_ERANGE, err,
             "record batch: %zu bytes is shorter than the %d-byte header", n,
             FR_RB_HEADER_BYTES);
    int32_t len = (int32_t)fr_get_u32le(p + FR_RB_OFF_LENGTH);
    FR_CHECK(len >= FR_RB_HEADER_BYTES && len <= FR_RB_BYTES_MAX && len % 8 == 0, FR_ECORRUPT,
             err, "record batch: length %d at byte %d is not a multiple of 8 in %d..%d",
             (int)len, FR_RB_OFF_LENGTH, FR_RB_HEADER_BYTES, FR_RB_BYTES_MAX);
    FR_CHECK((size_t)len <= n, FR_ERANGE, err,
             "record batch: length %d but only %zu bytes present", (int)len, n);
    uint8_t magic = p[FR_RB_OFF_MAGIC];
    FR_CHECK(magic == FR_RB_MAGIC, FR_ECORRUPT, err,
             "record batch: magic %u at byte %d, expected %d", magic, FR_RB_OFF_MAGIC,
             FR_RB_MAGIC);
    uint8_t attributes = p[FR_RB_OFF_ATTRIBUTES];
    unsigned compression =
        (attributes & FR_RB_ATTR_COMPRESSION_MASK) >> FR_RB_ATTR_COMPRESSION_SHIFT;
    FR_CHECK((attributes & ~FR_RB_ATTR_KNOWN) == 0 && compression <= FR_COMPRESSION_ZSTD,
             FR_ECORRUPT, err, "record batch: unknown attributes 0x%02x at byte %d",
             attributes, FR_RB_OFF_ATTRIBUTES);
    int32_t count = (int32_t)fr_get_u32le(p + FR_RB_OFF_RECORD_COUNT);
    int32_t delta = (int32_t)fr_get_u32le(p + FR_RB_OFF_LAST_DELTA);
    FR_CHECK(count >= 1 && count <= FR_RB_RECORDS_MAX, FR_ECORRUPT, err,
             "record batch: record count %d at byte %d is outside 1..%d", (int)count,
             FR_RB_OFF_RECORD_COUNT, FR_RB_RECORDS_MAX);
    FR_CHECK(delta == count - 1, FR_ECORRUPT, err,
             "record batch: last offset delta %d does not match record count %d", (int)delta,
             (int)count);
    int32_t stats_len = (int32_t)fr_get_u32le(p + FR_RB_OFF_STATS_LENGTH);
    FR_CHECK(fr_get_u32le(p + FR_RB_OFF_RESERVED) == 0, FR_ECORRUPT, err,
             "record batch: reserved field at byte %d is not 0", FR_RB_OFF_RESERVED);
    FR_CHECK(stats_len >= 0 && stats_len % 8 == 0 && stats_len <= len - FR_RB_HEADER_BYTES,
             FR_ECORRUPT, err,
             "record batch: statistics length %d at byte %d does not fit a %d-byte batch",
             (int)stats_len, FR_RB_OFF_STATS_LENGTH, (int)len);
    bool append_only = attributes & FR_RB_ATTR_APPEND_ONLY;
    int64_t pos = FR_RB_HEADER_BYTES + (int64_t)stats_len;
    int64_t ct_len = append_only ? 0 : (int64_t)rb_pad8((size_t)count);
    FR_CHECK(pos + ct_len + 8 <= len, FR_ECORRUPT, err,
             "record batch: %d bytes cannot hold the header, %d bytes of statistics, %lld "
             "bytes of change types and an IPC message",
             (int)len, (int)stats_len, (long long)ct_len);

    out->base_offset = (int64_t)fr_get_u64le(p + FR_RB_OFF_BASE_OFFSET);
    out->commit_timestamp = (int64_t)fr_get_u64le(p + FR_RB_OFF_COMMIT_TS);
    out->length = len;
    out->attributes = attributes;
    out->schema_id = fr_get_u16le(p + FR_RB_OFF_SCHEMA_ID);
    out->last_offset_delta = delta;
    out->record_count = count;
    out->writer_id = (int64_t)fr_get_u64le(p + FR_RB_OFF_WRITER_ID);
    out->batch_sequence = (int32_t)fr_get_u32le(p + FR_RB_OFF_SEQUENCE);
    out->compression = (fr_compression)compression;
    out->append_only = append_only;
    out->stats = p + FR_RB_HEADER_BYTES;
    out->stats_length = stats_len;
    out->change_types = append_only ? NULL : p + FR_RB_HEADER_BYTES + stats_len;
    out->ipc = p + pos + ct_len;
    out->ipc_length = (int32_t)(len - pos - ct_len);
    return FR_OK;
}

int fr_rb_decode(const uint8_t *p, size_t n, fr_rb_view *out, fr_error *err)
{
    FR_TRY(fr_rb_parse_header(p, n, out, err));
    uint32_t stored = fr_get_u32le(p + FR_RB_OFF_CRC);
    uint32_t crc = fr_crc32c(0, p + FR_RB_CRC_START, (size_t)out->length - FR_RB_CRC_START);
    FR_CHECK(crc == stored, FR_ECORRUPT, err,
             "record batch: CRC-32C mismatch (stored 0x%08x, computed 0x%08x over %d bytes)",
             stored, crc, (int)out->length - FR_RB_CRC_START);
    if (out->change_types) {
        for (int32_t i = 0; i < out->record_count; i++)
            FR_CHECK(out->change_types[i] <= FR_CHANGE_DELETE, FR_ECORRUPT, err,
                     "record batch: change type %u of record %d is unknown",
                     out->change_types[i], (int)i);
    }
    FR_CHECK(fr_get_u32le(out->ipc) == 0xFFFFFFFFu, FR_ECORRUPT, err,
             "record batch: the IPC message at byte %d does not start with 0xFFFFFFFF",
             (int)(out->ipc - p));
    int64_t rows = 0;
    fr_error sub;
    fr_error_clear(&sub);
    int rc = fr_ipc_batch_rows(out->ipc, (size_t)out->ipc_length, &rows, &sub);
    if (rc < 0)
        return fr_fail(err, FR_ECORRUPT, "record batch: IPC message: %s", sub.msg);
    FR_CHECK(rows == out->record_count, FR_ECORRUPT, err,
             "record batch: the IPC message holds %lld rows, the header says %d",
             (long long)rows, (int)out->record_count);
    return FR_OK;
}

/* ---- statistics decoding ---------------------------------------------------------------- */

typedef struct rb_reader {
    const uint8_t *p;
    size_t n, pos;
} rb_reader;

static int rb_read_varint(rb_reader *r, uint64_t *v, const char *what, fr_error *err)
{
    size_t used = fr_varint_get(r->p + r->pos, r->n - r->pos, v);
    FR_CHECK(used > 0, FR_ECORRUPT, err,
             "record batch statistics: bad or truncated %s at byte %zu", what, r->pos);
    r->pos += used;
    return FR_OK;
}

static int64_t rb_get_int(const uint8_t *p, int width)
{
    switch (width) {
    case 1: return (int8_t)p[0];
    case 2: return (int16_t)fr_get_u16le(p);
    case 4: return (int32_t)fr_get_u32le(p);
    default: return (int64_t)fr_get_u64le(p);
    }
}

/* Decodes one stored value of type t at the reader's position into v. */
static int rb_read_value(rb_reader *r, const fr_type *t, int width, fr_value *v, fr_error *err)
{
    memset(v, 0, sizeof *v);
    v->type = *t;
    if (width == 0) {
        uint64_t len;
        FR_TRY(rb_read_varint(r, &len, "string length", err));
        FR_CHECK(len <= FR_RB_STRING_STAT_BYTES_MAX && len <= r->n - r->pos, FR_ECORRUPT, err,
                 "record batch statistics: string of %llu bytes at byte %zu exceeds the "
                 "%d-byte limit or the block",
                 (unsigned long long)len, r->pos, FR_RB_STRING_STAT_BYTES_MAX);
        v->v.s.ptr = r->p + r->pos;
        v->v.s.len = (size_t)len;
        r->pos += (size_t)len;
        return FR_OK;
    }
    FR_CHECK((size_t)width <= r->n - r->pos, FR_ECORRUPT, err,
             "record batch statistics: value of %d bytes at byte %zu runs past the block",
             width, r->pos);
    const uint8_t *p = r->p + r->pos;
    r->pos += (size_t)width;
    switch (t->id) {
    case FR_T_BOOLEAN:
        FR_CHECK(p[0] <= 1, FR_ECORRUPT, err, "record batch statistics: boolean byte %u",
                 p[0]);
        v->v.b = p[0];
        break;
    case FR_T_FLOAT: {
        float f;
        memcpy(&f, p, 4);
        v->v.f = f;
        break;
    }
    case FR_T_DOUBLE: memcpy(&v->v.f, p, 8); break;
    case FR_T_DECIMAL: memcpy(&v->v.d, p, 16); break;
    default: v->v.i = rb_get_int(p, width); break;
    }
    return FR_OK;
}

static int rb_read_column_stats(rb_reader *r, const fr_type *t, int64_t rows,
                                fr_column_stats *st, fr_error *err)
{
    int width = rb_stat_width(t);
    FR_CHECK(width >= 0, FR_EINVAL, err, "record batch statistics: unknown type %d",
             (int)t->id);
    uint64_t nulls;
    FR_TRY(rb_read_varint(r, &nulls, "null count", err));
    FR_CHECK(nulls <= (uint64_t)rows, FR_ECORRUPT, err,
             "record batch statistics: null count %llu exceeds the %lld records",
             (unsigned long long)nulls, (long long)rows);
    FR_CHECK(r->pos < r->n, FR_ECORRUPT, err,
             "record batch statistics: truncated flags at byte %zu", r->pos);
    uint8_t flags = r->p[r->pos++];
    FR_CHECK((flags & ~FR_RB_STAT_HAS_MINMAX) == 0, FR_ECORRUPT, err,
             "record batch statistics: unknown flags 0x%02x", flags);
    st->null_count = (int64_t)nulls;
    st->has_minmax = flags & FR_RB_STAT_HAS_MINMAX;
    st->min = fr_value_null(*t);
    st->max = fr_value_null(*t);
    if (!st->has_minmax) return FR_OK;
    FR_CHECK(nulls < (uint64_t)rows, FR_ECORRUPT, err,
             "record batch statistics: min/max for a column with only nulls");
    FR_TRY(rb_read_value(r, t, width, &st->min, err));
    FR_TRY(rb_read_value(r, t, width, &st->max, err));
    return FR_OK;
}

int fr_rb_stats(const fr_rb_view *rb, const fr_schema *schema, fr_column_stats *stats,
                fr_error *err)
{
    int ncols = fr_schema_num_fields(schema);
    FR_CHECK(rb->stats_length > 0, FR_ENOTFOUND, err,
             "record batch at offset %lld carries no column statistics",
             (long long)rb->base_offset);
    rb_reader r = { rb->stats, (size_t)rb->stats_length, 0 };
    FR_CHECK(r.p[0] == FR_RB_STATS_VERSION, FR_ECORRUPT, err,
             "record batch statistics: version %u, expected %d", r.p[0], FR_RB_STATS_VERSION);
    r.pos = 1;
    uint64_t n;
    FR_TRY(rb_read_varint(&r, &n, "column count", err));
    FR_CHECK(n == (uint64_t)ncols, FR_ECORRUPT, err,
             "record batch statistics: %llu columns, the schema has %d",
             (unsigned long long)n, ncols);
    for (int i = 0; i < ncols; i++) {
        int rc = rb_read_column_stats(&r, &fr_schema_field(schema, i)->type, rb->record_count,
                                      &stats[i], err);
        if (rc < 0) {
            fr_error_wrap(err, "column %d", i);
            return rc;
        }
    }
    FR_CHECK(r.n - r.pos < 8, FR_ECORRUPT, err,
             "record batch statistics: %zu bytes left after the last column", r.n - r.pos);
    return FR_OK;
}
