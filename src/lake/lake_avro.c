/* lake_avro.c — Iceberg manifests and manifest lists as Avro object container files.
 *
 * Writing: libavro encodes the records and compresses the blocks (deflate). libavro writes
 * its own rendering of the schema into the file header, without the attributes Iceberg
 * needs (field-id, element-id, logicalType "map") and without user metadata, so the header
 * is rebuilt here: the exact schema text, the codec, and the keys the spec requires, with
 * libavro's sync marker; the blocks after it are kept byte for byte.
 *
 * Reading is done here, not by libavro, whose decoder trusts the lengths it reads: the
 * container (header, metadata map, every block's count, size and sync marker) is checked
 * against the input's length and the limits below; the writer's schema must equal the
 * schema firth writes for that file (for a manifest, with the table's partition fields: the
 * same JSON value), so the binary layout is known; each block is inflated
 * within the size limit and its records decoded with every length, count and union branch
 * checked, and must end exactly at the block's end.
 *
 * Invariants: every file written is complete and fsynced before its name is returned;
 * nothing read is used before its type and range are checked. */
#include <avro.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <zlib.h>

#include "lake/lake_iceberg_int.h"

#define AVRO_META_ENTRIES_MAX 64
#define AVRO_BLOCKS_MAX (1 << 20)
#define AVRO_BLOCK_OBJECTS_MAX (1 << 24)
#define AVRO_MAP_ENTRIES_MAX 100000 /* elements of one array read from a manifest */

/* libavro's allocations: capped at the largest file firth handles, and not through
 * fr_realloc, whose test-time fault injection libavro does not survive (it dereferences a
 * failed allocation while parsing a schema). libavro only writes here. */
static void *avro_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    (void)ud;
    (void)osize;
    if (nsize == 0) {
        free(ptr);
        return NULL;
    }
    if (nsize > (size_t)FR_ICE_AVRO_BYTES_MAX) return NULL;
    return realloc(ptr, nsize);
}

static pthread_once_t avro_once = PTHREAD_ONCE_INIT;

static void avro_setup(void) { avro_set_allocator(avro_alloc, NULL); }

static int avro_err(fr_error *err, int code, const char *what, const char *name)
{
    return fr_fail(err, code, "%s: %s: %s", name, what, avro_strerror());
}

/* ---- schemas --------------------------------------------------------------------------- */

static const char MANIFEST_LIST_SCHEMA[] =
    "{\"type\":\"record\",\"name\":\"manifest_file\",\"fields\":["
    "{\"name\":\"manifest_path\",\"type\":\"string\",\"doc\":\"Location URI with FS scheme\","
    "\"field-id\":500},"
    "{\"name\":\"manifest_length\",\"type\":\"long\",\"doc\":\"Total file size in bytes\","
    "\"field-id\":501},"
    "{\"name\":\"partition_spec_id\",\"type\":\"int\",\"doc\":\"Spec ID used to write\","
    "\"field-id\":502},"
    "{\"name\":\"content\",\"type\":\"int\",\"doc\":\"Contents of the manifest: 0=data, "
    "1=deletes\",\"field-id\":517},"
    "{\"name\":\"sequence_number\",\"type\":\"long\",\"doc\":\"Sequence number when the "
    "manifest was added\",\"field-id\":515},"
    "{\"name\":\"min_sequence_number\",\"type\":\"long\",\"doc\":\"Lowest sequence number in "
    "the manifest\",\"field-id\":516},"
    "{\"name\":\"added_snapshot_id\",\"type\":\"long\",\"doc\":\"Snapshot ID that added the "
    "manifest\",\"field-id\":503},"
    "{\"name\":\"added_files_count\",\"type\":\"int\",\"doc\":\"Added entry count\","
    "\"field-id\":504},"
    "{\"name\":\"existing_files_count\",\"type\":\"int\",\"doc\":\"Existing entry count\","
    "\"field-id\":505},"
    "{\"name\":\"deleted_files_count\",\"type\":\"int\",\"doc\":\"Deleted entry count\","
    "\"field-id\":506},"
    "{\"name\":\"added_rows_count\",\"type\":\"long\",\"doc\":\"Added rows count\","
    "\"field-id\":512},"
    "{\"name\":\"existing_rows_count\",\"type\":\"long\",\"doc\":\"Existing rows count\","
    "\"field-id\":513},"
    "{\"name\":\"deleted_rows_count\",\"type\":\"long\",\"doc\":\"Deleted rows count\","
    "\"field-id\":514},"
    "{\"name\":\"partitions\",\"type\":[\"null\",{\"type\":\"array\",\"items\":{"
    "\"type\":\"record\",\"name\":\"r508\",\"fields\":["
    "{\"name\":\"contains_null\",\"type\":\"boolean\",\"doc\":\"True if any file has a null "
    "partition value\",\"field-id\":509},"
    "{\"name\":\"contains_nan\",\"type\":[\"null\",\"boolean\"],\"doc\":\"True if any file has "
    "a nan partition value\",\"default\":null,\"field-id\":518},"
    "{\"name\":\"lower_bound\",\"type\":[\"null\",\"bytes\"],\"doc\":\"Partition lower bound "
    "for all files\",\"default\":null,\"field-id\":510},"
    "{\"name\":\"upper_bound\",\"type\":[\"null\",\"bytes\"],\"doc\":\"Partition upper bound "
    "for all files\",\"default\":null,\"field-id\":511}]},"
    "\"element-id\":508}],\"doc\":\"Summary for each partition\",\"default\":null,"
    "\"field-id\":507},"
    "{\"name\":\"key_metadata\",\"type\":[\"null\",\"bytes\"],\"doc\":\"Encryption key "
    "metadata blob\",\"default\":null,\"field-id\":519}]}";

enum { ML_PATH, ML_LENGTH, ML_SPEC, ML_CONTENT, ML_SEQ, ML_MIN_SEQ, ML_SNAP, ML_ADDED_F,
       ML_EXIST_F, ML_DEL_F, ML_ADDED_R, ML_EXIST_R, ML_DEL_R, ML_PARTS, ML_KEY_META };
enum { ME_STATUS, ME_SNAP, ME_SEQ, ME_FILE_SEQ, ME_FILE };
enum { DF_CONTENT, DF_PATH, DF_FORMAT, DF_PART, DF_RECORDS, DF_BYTES, DF_SIZES, DF_VALUES,
       DF_NULLS, DF_LOWER, DF_UPPER, DF_KEY_META, DF_SPLITS, DF_EQ_IDS, DF_SORT };

/* Avro names are [A-Za-z_][A-Za-z0-9_]*; others are rewritten as Iceberg does ("_x2D"). */
static int avro_name(const char *s, fr_buf *out, fr_error *err)
{
    for (size_t i = 0; s[i]; i++) {
        unsigned char c = (unsigned char)s[i];
        bool letter = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
        bool digit = c >= '0' && c <= '9';
        if (letter || (digit && i > 0)) FR_TRY(fr_buf_append(out, &c, 1, err));
        else if (digit) FR_TRY(fr_buf_printf(out, err, "_%c", c));
        else FR_TRY(fr_buf_printf(out, err, "_x%X", c));
    }
    return 0;
}

/* Bytes of a decimal of precision p as Iceberg stores it in Avro (fixed). */
static int decimal_bytes(int p)
{
    fr_i128 lim = fr_i128_pow10(p);
    for (int n = 1; n < 16; n++)
        if (lim <= ((fr_i128)1 << (8 * n - 1))) return n;
    return 16;
}

static int partition_type_json(const fr_type *t, int32_t fid, fr_buf *out, fr_error *err)
{
    switch (t->id) {
    case FR_T_BOOLEAN: return fr_buf_printf(out, err, "\"boolean\"");
    case FR_T_TINYINT: case FR_T_SMALLINT: case FR_T_INT: return fr_buf_printf(out, err, "\"int\"");
    case FR_T_BIGINT: return fr_buf_printf(out, err, "\"long\"");
    case FR_T_FLOAT: return fr_buf_printf(out, err, "\"float\"");
    case FR_T_DOUBLE: return fr_buf_printf(out, err, "\"double\"");
    case FR_T_CHAR: case FR_T_VARCHAR: case FR_T_STRING: return fr_buf_printf(out, err, "\"string\"");
    case FR_T_BYTES: return fr_buf_printf(out, err, "\"bytes\"");
    case FR_T_DATE: return fr_buf_printf(out, err, "{\"type\":\"int\",\"logicalType\":\"date\"}");
    case FR_T_TIME:
        return fr_buf_printf(out, err, "{\"type\":\"long\",\"logicalType\":\"time-micros\"}");
    case FR_T_TIMESTAMP: case FR_T_TIMESTAMP_LTZ:
        return fr_buf_printf(out, err,
                             "{\"type\":\"long\",\"logicalType\":\"timestamp-micros\","
                             "\"adjust-to-utc\":%s}",
                             t->id == FR_T_TIMESTAMP_LTZ ? "true" : "false");
    case FR_T_DECIMAL:
        return fr_buf_printf(out, err,
                             "{\"type\":\"fixed\",\"name\":\"fixed_%d\",\"size\":%d,"
                             "\"logicalType\":\"decimal\",\"precision\":%d,\"scale\":%d}",
                             (int)fid, decimal_bytes(t->precision), t->precision, t->scale);
    }
    return fr_fail(err, FR_EINVAL, "no Avro type for type %d", (int)t->id);
}

static int map_json(fr_buf *out, const char *name, int fid, int kid, const char *vtype,
                    const char *doc, fr_error *err)
{
    return fr_buf_printf(
        out, err,
        "{\"name\":\"%s\",\"type\":[\"null\",{\"type\":\"array\",\"items\":{\"type\":\"record\","
        "\"name\":\"k%d_v%d\",\"fields\":[{\"name\":\"key\",\"type\":\"int\",\"field-id\":%d},"
        "{\"name\":\"value\",\"type\":\"%s\",\"field-id\":%d}]},\"logicalType\":\"map\"}],"
        "\"doc\":\"%s\",\"default\":null,\"field-id\":%d},",
        name, kid, kid + 1, kid, vtype, kid + 1, doc, fid);
}

/* The manifest_entry schema of a table with partition fields ps. */
static int manifest_schema_json(const fr_ice_part_spec *ps, fr_buf *out, fr_error *err)
{
    FR_TRY(fr_buf_printf(out, err,
        "{\"type\":\"record\",\"name\":\"manifest_entry\",\"fields\":["
        "{\"name\":\"status\",\"type\":\"int\",\"field-id\":0},"
        "{\"name\":\"snapshot_id\",\"type\":[\"null\",\"long\"],\"default\":null,\"field-id\":1},"
        "{\"name\":\"sequence_number\",\"type\":[\"null\",\"long\"],\"default\":null,"
        "\"field-id\":3},"
        "{\"name\":\"file_sequence_number\",\"type\":[\"null\",\"long\"],\"default\":null,"
        "\"field-id\":4},"
        "{\"name\":\"data_file\",\"type\":{\"type\":\"record\",\"name\":\"r2\",\"fields\":["
        "{\"name\":\"content\",\"type\":\"int\",\"doc\":\"Contents of the file: 0=data, "
        "1=position deletes, 2=equality deletes\",\"field-id\":134},"
        "{\"name\":\"file_path\",\"type\":\"string\",\"doc\":\"Location URI with FS scheme\","
        "\"field-id\":100},"
        "{\"name\":\"file_format\",\"type\":\"string\",\"doc\":\"File format name: avro, orc, or "
        "parquet\",\"field-id\":101},"
        "{\"name\":\"partition\",\"type\":{\"type\":\"record\",\"name\":\"r102\",\"fields\":["));
    for (int i = 0; i < ps->n; i++) {
        FR_TRY(fr_buf_printf(out, err, "%s{\"name\":\"", i ? "," : ""));
        FR_TRY(avro_name(ps->names[i], out, err));
        FR_TRY(fr_buf_printf(out, err, "\",\"type\":[\"null\","));
        FR_TRY(partition_type_json(&ps->types[i], ps->field_ids[i], out, err));
        FR_TRY(fr_buf_printf(out, err, "],\"default\":null,\"field-id\":%d}", (int)ps->field_ids[i]));
    }
    FR_TRY(fr_buf_printf(out, err,
        "]},\"doc\":\"Partition data tuple, schema based on the partition spec\","
        "\"field-id\":102},"
        "{\"name\":\"record_count\",\"type\":\"long\",\"doc\":\"Number of records in the file\","
        "\"field-id\":103},"
        "{\"name\":\"file_size_in_bytes\",\"type\":\"long\",\"doc\":\"Total file size in "
        "bytes\",\"field-id\":104},"));
    FR_TRY(map_json(out, "column_sizes", 108, 117, "long", "Map of column id to total size on disk", err));
    FR_TRY(map_json(out, "value_counts", 109, 119, "long", "Map of column id to total count, including null and NaN", err));
    FR_TRY(map_json(out, "null_value_counts", 110, 121, "long", "Map of column id to null value count", err));
    FR_TRY(map_json(out, "lower_bounds", 125, 126, "bytes", "Map of column id to lower bound", err));
    FR_TRY(map_json(out, "upper_bounds", 128, 129, "bytes", "Map of column id to upper bound", err));
    return fr_buf_printf(out, err,
        "{\"name\":\"key_metadata\",\"type\":[\"null\",\"bytes\"],\"doc\":\"Encryption key "
        "metadata blob\",\"default\":null,\"field-id\":131},"
        "{\"name\":\"split_offsets\",\"type\":[\"null\",{\"type\":\"array\",\"items\":\"long\","
        "\"element-id\":133}],\"doc\":\"Splittable offsets\",\"default\":null,\"field-id\":132},"
        "{\"name\":\"equality_ids\",\"type\":[\"null\",{\"type\":\"array\",\"items\":\"int\","
        "\"element-id\":136}],\"doc\":\"Equality comparison field IDs\",\"default\":null,"
        "\"field-id\":135},"
        "{\"name\":\"sort_order_id\",\"type\":[\"null\",\"int\"],\"doc\":\"Sort order ID\","
        "\"default\":null,\"field-id\":140}]},\"field-id\":2}]}");
}

static int parse_schema(const char *json, size_t len, avro_schema_t *out, fr_error *err)
{
    if (avro_schema_from_json_length(json, len, out) != 0)
        return fr_fail(err, FR_EINVAL, "bad Avro schema: %s", avro_strerror());
    return 0;
}

/* ---- the container --------------------------------------------------------------------- */

typedef struct avro_hdr {
    size_t len;           /* bytes of the header, sync marker included */
    uint8_t sync[16];
    int nmeta;
    struct { const uint8_t *key, *val; size_t klen, vlen; } meta[AVRO_META_ENTRIES_MAX];
} avro_hdr;

typedef struct rd { const uint8_t *p; size_t n, pos; } rd;

static int rd_long(rd *r, int64_t *out)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (r->pos >= r->n) return -1;
        uint8_t b = r->p[r->pos++];
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = fr_zigzag_dec(v);
            return 0;
        }
    }
    return -1;
}

static int rd_bytes(rd *r, const uint8_t **p, size_t *len)
{
    int64_t n;
    if (rd_long(r, &n) < 0 || n < 0 || (uint64_t)n > r->n - r->pos) return -1;
    *p = r->p + r->pos;
    *len = (size_t)n;
    r->pos += (size_t)n;
    return 0;
}

static int parse_header(const uint8_t *p, size_t n, const char *name, avro_hdr *h,
                        fr_error *err)
{
    rd r = {p, n, 0};
    memset(h, 0, sizeof *h);
    FR_CHECK(n >= 4 && memcmp(p, "Obj\x01", 4) == 0, FR_ECORRUPT, err,
             "%s: not an Avro object container file", name);
    r.pos = 4;
    for (;;) {
        int64_t count, size;
        FR_CHECK(rd_long(&r, &count) == 0, FR_ECORRUPT, err, "%s: truncated Avro header", name);
        if (count == 0) break;
        if (count < 0) {
            FR_CHECK(count > INT64_MIN && rd_long(&r, &size) == 0, FR_ECORRUPT, err,
                     "%s: bad Avro header", name);
            count = -count;
        }
        FR_CHECK(count <= AVRO_META_ENTRIES_MAX - h->nmeta, FR_ECORRUPT, err,
                 "%s: too many Avro metadata entries", name);
        for (int64_t i = 0; i < count; i++) {
            int k = h->nmeta++;
            FR_CHECK(rd_bytes(&r, &h->meta[k].key, &h->meta[k].klen) == 0 &&
                         rd_bytes(&r, &h->meta[k].val, &h->meta[k].vlen) == 0,
                     FR_ECORRUPT, err, "%s: truncated Avro metadata", name);
        }
    }
    FR_CHECK(n - r.pos >= 16, FR_ECORRUPT, err, "%s: truncated Avro header", name);
    memcpy(h->sync, p + r.pos, 16);
    h->len = r.pos + 16;
    return 0;
}

static const uint8_t *hdr_get(const avro_hdr *h, const char *key, size_t *len)
{
    size_t kl = strlen(key);
    for (int i = 0; i < h->nmeta; i++)
        if (h->meta[i].klen == kl && memcmp(h->meta[i].key, key, kl) == 0) {
            *len = h->meta[i].vlen;
            return h->meta[i].val;
        }
    return NULL;
}

static int put_long(fr_buf *b, int64_t v, fr_error *err)
{
    uint8_t tmp[10];
    size_t k = fr_varint_put(tmp, fr_zigzag_enc(v));
    return fr_buf_append(b, tmp, k, err);
}

static int put_str(fr_buf *b, const void *s, size_t n, fr_error *err)
{
    FR_TRY(put_long(b, (int64_t)n, err));
    return fr_buf_append(b, s, n, err);
}

typedef struct kv { const char *key, *val; } kv;

/* Rebuilds the header of a container libavro wrote: the exact schema, the codec, and the
 * given metadata; the sync marker and the blocks stay. */
static int rebuild(const uint8_t *p, size_t n, const char *schema, const kv *meta, int nmeta,
                   fr_buf *out, fr_error *err)
{
    avro_hdr h;
    FR_TRY(parse_header(p, n, "libavro output", &h, err));
    FR_TRY(fr_buf_append(out, "Obj\x01", 4, err));
    FR_TRY(put_long(out, 2 + nmeta, err));
    FR_TRY(put_str(out, "avro.schema", 11, err));
    FR_TRY(put_str(out, schema, strlen(schema), err));
    FR_TRY(put_str(out, "avro.codec", 10, err));
    FR_TRY(put_str(out, "deflate", 7, err));
    for (int i = 0; i < nmeta; i++) {
        FR_TRY(put_str(out, meta[i].key, strlen(meta[i].key), err));
        FR_TRY(put_str(out, meta[i].val, strlen(meta[i].val), err));
    }
    FR_TRY(put_long(out, 0, err));
    FR_TRY(fr_buf_append(out, h.sync, 16, err));
    return fr_buf_append(out, p + h.len, n - h.len, err);
}

static int write_durable(const char *path, const uint8_t *p, size_t n, fr_error *err)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) return fr_fail_errno(err, errno, "create %s", path);
    int rc = 0;
    size_t done = 0;
    while (rc == 0 && done < n) {
        ssize_t w = write(fd, p + done, n - done);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) rc = fr_fail_errno(err, errno, "write %s", path);
        else done += (size_t)w;
    }
    if (rc == 0 && fsync(fd) != 0) rc = fr_fail_errno(err, errno, "fsync %s", path);
    close(fd);
    if (rc < 0) unlink(path);
    return rc;
}

/* One container being written in memory by libavro. */
typedef struct avro_out {
    avro_schema_t schema;
    avro_value_iface_t *iface;
    avro_value_t rec;
    bool has_rec;
    avro_file_writer_t w;
    FILE *fp;
    char *mem;
    size_t memlen;
} avro_out;

static void out_free(avro_out *o)
{
    if (o->w) avro_file_writer_close(o->w); /* closes fp */
    else if (o->fp) fclose(o->fp);
    if (o->has_rec) avro_value_decref(&o->rec);
    if (o->iface) avro_value_iface_decref(o->iface);
    if (o->schema) avro_schema_decref(o->schema);
    free(o->mem); /* open_memstream's buffer comes from the C library */
}

static int out_open(avro_out *o, const char *schema, const char *path, fr_error *err)
{
    pthread_once(&avro_once, avro_setup);
    memset(o, 0, sizeof *o);
    FR_TRY(parse_schema(schema, strlen(schema), &o->schema, err));
    o->iface = avro_generic_class_from_schema(o->schema);
    if (!o->iface) return avro_err(err, FR_ENOMEM, "Avro class", path);
    if (avro_generic_value_new(o->iface, &o->rec) != 0)
        return avro_err(err, FR_ENOMEM, "Avro value", path);
    o->has_rec = true;
    o->fp = open_memstream(&o->mem, &o->memlen);
    if (!o->fp) return fr_fail_errno(err, errno, "open_memstream for %s", path);
    if (avro_file_writer_create_with_codec_fp(o->fp, path, 1, o->schema, &o->w, "deflate", 0))
        return avro_err(err, FR_EIO, "create Avro writer", path);
    return 0;
}

static int out_finish(avro_out *o, const char *path, const char *schema, const kv *meta,
                      int nmeta, int64_t *length, fr_error *err)
{
    int rc = avro_file_writer_close(o->w);
    o->w = NULL;
    o->fp = NULL;
    if (rc != 0) return avro_err(err, FR_EIO, "close Avro writer", path);
    fr_buf b;
    fr_buf_init(&b);
    rc = rebuild((const uint8_t *)o->mem, o->memlen, schema, meta, nmeta, &b, err);
    if (rc == 0) rc = write_durable(path, b.data, b.len, err);
    if (rc == 0 && length) *length = (int64_t)b.len;
    fr_buf_free(&b);
    return rc;
}

/* ---- writing values -------------------------------------------------------------------- */

#define AV(expr)                                                                             \
    do {                                                                                     \
        if ((expr) != 0) return fr_fail(err, FR_EINVAL, "Avro value: %s", avro_strerror()); \
    } while (0)

static int set_opt_long(avro_value_t *rec, int idx, bool present, int64_t v, fr_error *err)
{
    avro_value_t f, br;
    AV(avro_value_get_by_index(rec, (size_t)idx, &f, NULL));
    if (!present) {
        AV(avro_value_set_branch(&f, 0, &br));
        AV(avro_value_set_null(&br));
        return 0;
    }
    AV(avro_value_set_branch(&f, 1, &br));
    AV(avro_value_set_long(&br, v));
    return 0;
}

static int set_null(avro_value_t *rec, int idx, fr_error *err)
{
    avro_value_t f, br;
    AV(avro_value_get_by_index(rec, (size_t)idx, &f, NULL));
    AV(avro_value_set_branch(&f, 0, &br));
    AV(avro_value_set_null(&br));
    return 0;
}

static int set_partition_value(avro_value_t *f, const fr_value *v, fr_error *err)
{
    avro_value_t br;
    if (v->is_null) {
        AV(avro_value_set_branch(f, 0, &br));
        AV(avro_value_set_null(&br));
        return 0;
    }
    AV(avro_value_set_branch(f, 1, &br));
    switch (v->type.id) {
    case FR_T_BOOLEAN: AV(avro_value_set_boolean(&br, v->v.b)); break;
    case FR_T_TINYINT: case FR_T_SMALLINT: case FR_T_INT: case FR_T_DATE:
        AV(avro_value_set_int(&br, (int32_t)v->v.i));
        break;
    case FR_T_BIGINT: case FR_T_TIME: case FR_T_TIMESTAMP: case FR_T_TIMESTAMP_LTZ:
        AV(avro_value_set_long(&br, v->v.i));
        break;
    case FR_T_FLOAT: AV(avro_value_set_float(&br, (float)v->v.f)); break;
    case FR_T_DOUBLE: AV(avro_value_set_double(&br, v->v.f)); break;
    case FR_T_CHAR: case FR_T_VARCHAR: case FR_T_STRING: {
        /* libavro takes NUL-terminated strings with their length. */
        char *s = fr_strndup((const char *)v->v.s.ptr, v->v.s.len);
        if (!s) return fr_fail(err, FR_ENOMEM, "out of memory writing a manifest");
        int rc = avro_value_set_string_len(&br, s, v->v.s.len + 1);
        fr_free(s);
        AV(rc);
        break;
    }
    case FR_T_BYTES: AV(avro_value_set_bytes(&br, (void *)v->v.s.ptr, v->v.s.len)); break;
    case FR_T_DECIMAL: {
        uint8_t b[16];
        int n = decimal_bytes(v->type.precision);
        unsigned __int128 u = (unsigned __int128)v->v.d;
        for (int i = 0; i < n; i++) b[n - 1 - i] = (uint8_t)(u >> (8 * i));
        AV(avro_value_set_fixed(&br, b, (size_t)n));
        break;
    }
    }
    return 0;
}

typedef enum { MAP_SIZE, MAP_VALUES, MAP_NULLS, MAP_LOWER, MAP_UPPER } map_kind;

static int set_map(avro_value_t *rec, int idx, const fr_ice_file *f, map_kind kind,
                   fr_error *err)
{
    avro_value_t fld, arr, el, k, v;
    AV(avro_value_get_by_index(rec, (size_t)idx, &fld, NULL));
    AV(avro_value_set_branch(&fld, 1, &arr));
    for (int i = 0; i < f->nstats; i++) {
        const fr_ice_col_stat *s = &f->stats[i];
        int64_t num = kind == MAP_SIZE ? s->size : kind == MAP_VALUES ? s->values : s->nulls;
        const uint8_t *b = kind == MAP_LOWER ? s->lower : s->upper;
        int32_t blen = kind == MAP_LOWER ? s->lower_len : s->upper_len;
        if (kind <= MAP_NULLS ? num < 0 : b == NULL) continue;
        AV(avro_value_append(&arr, &el, NULL));
        AV(avro_value_get_by_index(&el, 0, &k, NULL));
        AV(avro_value_set_int(&k, s->field_id));
        AV(avro_value_get_by_index(&el, 1, &v, NULL));
        if (kind <= MAP_NULLS) AV(avro_value_set_long(&v, num));
        else AV(avro_value_set_bytes(&v, (void *)b, (size_t)blen));
    }
    return 0;
}

static int set_entry(avro_value_t *rec, const fr_ice_file *f, int npart, fr_error *err)
{
    avro_value_t fld, df, part, arr, el;
    AV(avro_value_reset(rec));
    AV(avro_value_get_by_index(rec, ME_STATUS, &fld, NULL));
    AV(avro_value_set_int(&fld, f->status));
    FR_TRY(set_opt_long(rec, ME_SNAP, true, f->snapshot_id, err));
    FR_TRY(set_opt_long(rec, ME_SEQ, true, f->seq, err));
    FR_TRY(set_opt_long(rec, ME_FILE_SEQ, true, f->file_seq, err));
    AV(avro_value_get_by_index(rec, ME_FILE, &df, NULL));
    AV(avro_value_get_by_index(&df, DF_CONTENT, &fld, NULL));
    AV(avro_value_set_int(&fld, f->content));
    AV(avro_value_get_by_index(&df, DF_PATH, &fld, NULL));
    AV(avro_value_set_string(&fld, f->path));
    AV(avro_value_get_by_index(&df, DF_FORMAT, &fld, NULL));
    AV(avro_value_set_string(&fld, "PARQUET"));
    AV(avro_value_get_by_index(&df, DF_PART, &part, NULL));
    for (int i = 0; i < npart; i++) {
        AV(avro_value_get_by_index(&part, (size_t)i, &fld, NULL));
        FR_TRY(set_partition_value(&fld, &f->part[i], err));
    }
    AV(avro_value_get_by_index(&df, DF_RECORDS, &fld, NULL));
    AV(avro_value_set_long(&fld, f->records));
    AV(avro_value_get_by_index(&df, DF_BYTES, &fld, NULL));
    AV(avro_value_set_long(&fld, f->file_bytes));
    FR_TRY(set_map(&df, DF_SIZES, f, MAP_SIZE, err));
    FR_TRY(set_map(&df, DF_VALUES, f, MAP_VALUES, err));
    FR_TRY(set_map(&df, DF_NULLS, f, MAP_NULLS, err));
    FR_TRY(set_map(&df, DF_LOWER, f, MAP_LOWER, err));
    FR_TRY(set_map(&df, DF_UPPER, f, MAP_UPPER, err));
    FR_TRY(set_null(&df, DF_KEY_META, err));
    if (f->nsplits > 0) {
        AV(avro_value_get_by_index(&df, DF_SPLITS, &fld, NULL));
        AV(avro_value_set_branch(&fld, 1, &arr));
        for (int i = 0; i < f->nsplits; i++) {
            AV(avro_value_append(&arr, &el, NULL));
            AV(avro_value_set_long(&el, f->splits[i]));
        }
    } else {
        FR_TRY(set_null(&df, DF_SPLITS, err));
    }
    if (f->neq > 0) {
        AV(avro_value_get_by_index(&df, DF_EQ_IDS, &fld, NULL));
        AV(avro_value_set_branch(&fld, 1, &arr));
        for (int i = 0; i < f->neq; i++) {
            AV(avro_value_append(&arr, &el, NULL));
            AV(avro_value_set_int(&el, f->eq_ids[i]));
        }
    } else {
        FR_TRY(set_null(&df, DF_EQ_IDS, err));
    }
    /* Data and equality-delete files carry the table's (unsorted) order id 0. */
    AV(avro_value_get_by_index(&df, DF_SORT, &fld, NULL));
    AV(avro_value_set_branch(&fld, 1, &el));
    AV(avro_value_set_int(&el, 0));
    return 0;
}

int fr_avro_write_manifest(const char *path, const fr_ice_meta *m, const fr_ice_part_spec *ps,
                           int content, const fr_ice_file *files, int nfiles,
                           int64_t *length, fr_error *err)
{
    fr_buf schema;
    fr_buf_init(&schema);
    char *table_schema = NULL, *spec = NULL, sid[16], pid[16];
    avro_out o;
    memset(&o, 0, sizeof o);
    int rc = 0;
    FR_GOTO(manifest_schema_json(ps, &schema, err));
    FR_GOTO(fr_buf_append(&schema, "", 1, err));
    table_schema = json_dumps(fr_ice_meta_schema_json(m), JSON_COMPACT);
    spec = json_dumps(fr_ice_meta_spec_fields_json(m), JSON_COMPACT);
    if (!table_schema || !spec) {
        rc = fr_fail(err, FR_ENOMEM, "out of memory writing %s", path);
        goto fail;
    }
    FR_GOTO(out_open(&o, (const char *)schema.data, path, err));
    for (int i = 0; i < nfiles; i++) {
        FR_GOTO(set_entry(&o.rec, &files[i], ps->n, err));
        if (avro_file_writer_append_value(o.w, &o.rec) != 0) {
            rc = avro_err(err, FR_EIO, "append a manifest entry", path);
            goto fail;
        }
    }
    snprintf(sid, sizeof sid, "%d", (int)m->schema_id);
    snprintf(pid, sizeof pid, "%d", (int)m->spec_id);
    kv meta[] = {{"schema", table_schema}, {"schema-id", sid}, {"partition-spec", spec},
                 {"partition-spec-id", pid}, {"format-version", "2"},
                 {"content", content ? "deletes" : "data"}};
    rc = out_finish(&o, path, (const char *)schema.data, meta, 6, length, err);
fail:
    out_free(&o);
    free(table_schema);
    free(spec);
    fr_buf_free(&schema);
    return rc;
}

static int set_list_entry(avro_value_t *rec, const fr_ice_manifest *m, fr_error *err)
{
    avro_value_t f;
    AV(avro_value_reset(rec));
    AV(avro_value_get_by_index(rec, ML_PATH, &f, NULL));
    AV(avro_value_set_string(&f, m->path));
    const int64_t longs[][2] = {{ML_LENGTH, m->length}, {ML_SEQ, m->seq},
                                {ML_MIN_SEQ, m->min_seq}, {ML_SNAP, m->added_snapshot_id},
                                {ML_ADDED_R, m->added_rows}, {ML_EXIST_R, m->existing_rows},
                                {ML_DEL_R, m->deleted_rows}};
    for (size_t i = 0; i < sizeof longs / sizeof longs[0]; i++) {
        AV(avro_value_get_by_index(rec, (size_t)longs[i][0], &f, NULL));
        AV(avro_value_set_long(&f, longs[i][1]));
    }
    const int32_t ints[][2] = {{ML_SPEC, m->spec_id}, {ML_CONTENT, m->content},
                               {ML_ADDED_F, m->added_files}, {ML_EXIST_F, m->existing_files},
                               {ML_DEL_F, m->deleted_files}};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        AV(avro_value_get_by_index(rec, (size_t)ints[i][0], &f, NULL));
        AV(avro_value_set_int(&f, ints[i][1]));
    }
    if (m->parts) {
        avro_value_t arr, el, br;
        AV(avro_value_get_by_index(rec, ML_PARTS, &f, NULL));
        AV(avro_value_set_branch(&f, 1, &arr));
        for (int i = 0; i < m->nparts; i++) {
            const fr_ice_field_summary *fs = &m->parts[i];
            AV(avro_value_append(&arr, &el, NULL));
            AV(avro_value_get_by_index(&el, 0, &f, NULL));
            AV(avro_value_set_boolean(&f, fs->contains_null));
            AV(avro_value_get_by_index(&el, 1, &f, NULL));
            AV(avro_value_set_branch(&f, fs->contains_nan >= 0, &br));
            if (fs->contains_nan >= 0) AV(avro_value_set_boolean(&br, fs->contains_nan));
            else AV(avro_value_set_null(&br));
            for (int k = 0; k < 2; k++) {
                const uint8_t *b = k ? fs->upper : fs->lower;
                int32_t len = k ? fs->upper_len : fs->lower_len;
                AV(avro_value_get_by_index(&el, (size_t)(2 + k), &f, NULL));
                AV(avro_value_set_branch(&f, b != NULL, &br));
                if (b) AV(avro_value_set_bytes(&br, (void *)b, (size_t)len));
                else AV(avro_value_set_null(&br));
            }
        }
    } else {
        FR_TRY(set_null(rec, ML_PARTS, err));
    }
    return set_null(rec, ML_KEY_META, err);
}

int fr_avro_write_manifest_list(const char *path, int64_t snapshot_id, int64_t parent_id,
                                int64_t seq, const fr_ice_manifest *mans, int n,
                                fr_error *err)
{
    avro_out o;
    int rc = 0;
    FR_GOTO(out_open(&o, MANIFEST_LIST_SCHEMA, path, err));
    for (int i = 0; i < n; i++) {
        FR_GOTO(set_list_entry(&o.rec, &mans[i], err));
        if (avro_file_writer_append_value(o.w, &o.rec) != 0) {
            rc = avro_err(err, FR_EIO, "append a manifest list entry", path);
            goto fail;
        }
    }
    char sid[24], pid[24], sq[24];
    snprintf(sid, sizeof sid, "%lld", (long long)snapshot_id);
    if (parent_id >= 0) snprintf(pid, sizeof pid, "%lld", (long long)parent_id);
    else snprintf(pid, sizeof pid, "null");
    snprintf(sq, sizeof sq, "%lld", (long long)seq);
    kv meta[] = {{"snapshot-id", sid}, {"parent-snapshot-id", pid}, {"sequence-number", sq},
                 {"format-version", "2"}};
    rc = out_finish(&o, path, MANIFEST_LIST_SCHEMA, meta, 4, NULL, err);
fail:
    out_free(&o);
    return rc;
}

/* ---- reading --------------------------------------------------------------------------- */

/* Records are decoded here, not by libavro, whose decoder trusts the lengths it reads
 * (leaking or over-allocating on damaged input). The writer's schema must equal the one
 * firth writes (compared by libavro's schema parser), so the layout is known exactly; every
 * length, count, union branch and block boundary is checked against the bytes. */

typedef struct dc {
    rd r;
    const char *name;
    fr_arena *arena;
    fr_error *err;
} dc;

/* Returns the constant rather than fr_fail's result, so that the compiler sees that every
 * failing path returns a negative code (and no output is used unset after it). */
static int bad(dc *d, const char *what)
{
    fr_fail(d->err, FR_ECORRUPT, "%s: bad Avro record: %s at byte %zu of a block", d->name,
            what, d->r.pos);
    return FR_ECORRUPT;
}

static int dc_long(dc *d, int64_t *out)
{
    return rd_long(&d->r, out) == 0 ? 0 : bad(d, "truncated long");
}

static int dc_int(dc *d, int32_t *out)
{
    int64_t v;
    FR_TRY(dc_long(d, &v));
    if (v < INT32_MIN || v > INT32_MAX) return bad(d, "int out of range");
    *out = (int32_t)v;
    return 0;
}

static int dc_raw(dc *d, size_t n, const uint8_t **out)
{
    if (n > d->r.n - d->r.pos) return bad(d, "truncated value");
    *out = d->r.p + d->r.pos;
    d->r.pos += n;
    return 0;
}

static int dc_bool(dc *d, bool *out)
{
    const uint8_t *b;
    FR_TRY(dc_raw(d, 1, &b));
    if (*b > 1) return bad(d, "boolean not 0 or 1");
    *out = *b == 1;
    return 0;
}

static int dc_bytes(dc *d, const uint8_t **out, size_t *len)
{
    int64_t n;
    FR_TRY(dc_long(d, &n));
    if (n < 0) return bad(d, "negative length");
    *len = (size_t)n;
    return dc_raw(d, (size_t)n, out);
}

/* Bytes copied into the arena (strings NUL-terminated, without zero bytes inside). */
static int dc_copy(dc *d, bool string, const uint8_t **out, size_t *len)
{
    const uint8_t *b;
    FR_TRY(dc_bytes(d, &b, len));
    if (string && memchr(b, 0, *len)) return bad(d, "a string holds a zero byte");
    uint8_t *c = fr_arena_alloc(d->arena, *len + 1);
    if (!c) return fr_fail(d->err, FR_ENOMEM, "out of memory reading %s", d->name);
    if (*len) memcpy(c, b, *len);
    c[*len] = 0;
    *out = c;
    return 0;
}

static int dc_str(dc *d, const char **out)
{
    size_t len;
    return dc_copy(d, true, (const uint8_t **)out, &len);
}

/* The branch of a two-branch union ["null", T]: false for null. */
static int dc_opt(dc *d, bool *present)
{
    int64_t i;
    FR_TRY(dc_long(d, &i));
    if (i != 0 && i != 1) return bad(d, "bad union branch");
    *present = i == 1;
    return 0;
}

/* The item count of the next array block (0: the end). Every item of the arrays read here
 * takes at least one byte, so a count beyond the bytes left is damage. */
static int dc_block(dc *d, int64_t *count)
{
    FR_TRY(dc_long(d, count));
    if (*count < 0) {
        int64_t size;
        if (*count == INT64_MIN) return bad(d, "bad array block");
        *count = -*count;
        FR_TRY(dc_long(d, &size));
        if (size < 0) return bad(d, "bad array block size");
    }
    if ((uint64_t)*count > d->r.n - d->r.pos) return bad(d, "array longer than its bytes");
    return 0;
}

typedef int (*item_fn)(dc *d, void *ctx, int64_t i);

/* Reads an optional array, calling fn for each item. *n is its length (0 for null). */
static int dc_opt_array_max(dc *d, item_fn fn, void *ctx, int64_t max, int64_t *n);

static int dc_opt_array(dc *d, item_fn fn, void *ctx, int64_t *n)
{
    return dc_opt_array_max(d, fn, ctx, AVRO_MAP_ENTRIES_MAX, n);
}

/* The same with at most max items. */
static int dc_opt_array_max(dc *d, item_fn fn, void *ctx, int64_t max, int64_t *n)
{
    bool present;
    *n = 0;
    FR_TRY(dc_opt(d, &present));
    if (!present) return 0;
    for (;;) {
        int64_t c;
        FR_TRY(dc_block(d, &c));
        if (c == 0) return 0;
        for (int64_t i = 0; i < c; i++) {
            if (*n >= max) return bad(d, "too many array items");
            FR_TRY(fn(d, ctx, (*n)++));
        }
    }
}

/* The count of an optional array, for sizing, without consuming it. */
static int dc_peek_count(dc *d, item_fn skip, int64_t *n)
{
    size_t pos = d->r.pos;
    int rc = dc_opt_array(d, skip, NULL, n);
    d->r.pos = pos;
    return rc;
}

/* Inflates one block (a complete raw deflate stream) into out, within the size limit. */
static int inflate_block(z_stream *zs, const uint8_t *p, size_t n, fr_buf *out,
                         const char *name, fr_error *err)
{
    if (inflateReset(zs) != Z_OK) return fr_fail(err, FR_ENOMEM, "inflateReset for %s", name);
    zs->next_in = (Bytef *)p;
    zs->avail_in = (uInt)n;
    for (;;) {
        FR_TRY(fr_buf_reserve(out, 65536, err));
        zs->next_out = out->data + out->len;
        zs->avail_out = (uInt)(out->cap - out->len);
        int rc = inflate(zs, Z_NO_FLUSH);
        out->len = out->cap - zs->avail_out;
        if (rc == Z_STREAM_END) return 0;
        FR_CHECK(rc == Z_OK && out->len <= (size_t)FR_ICE_AVRO_BYTES_MAX &&
                     (zs->avail_in > 0 || zs->avail_out == 0),
                 FR_ECORRUPT, err, "%s: an Avro block that does not inflate", name);
    }
}

/* Decodes every record of a container's blocks with fn. */
typedef int (*record_fn)(dc *d, void *ctx);

static int read_container(const uint8_t *p, size_t n, const char *name, const char *schema,
                          const char *content, fr_arena *arena, record_fn fn, void *ctx,
                          fr_error *err)
{
    avro_hdr h;
    size_t len;
    FR_TRY(parse_header(p, n, name, &h, err));
    const uint8_t *codec = hdr_get(&h, "avro.codec", &len);
    bool deflate = codec && len == 7 && memcmp(codec, "deflate", 7) == 0;
    FR_CHECK(!codec || deflate || (len == 4 && memcmp(codec, "null", 4) == 0), FR_ECORRUPT,
             err, "%s: unsupported Avro codec", name);
    if (content) {
        const uint8_t *c = hdr_get(&h, "content", &len);
        FR_CHECK(c && len == strlen(content) && memcmp(c, content, len) == 0, FR_ECORRUPT, err,
                 "%s: manifest content is not \"%s\"", name, content);
    }
    const uint8_t *ws_text = hdr_get(&h, "avro.schema", &len);
    FR_CHECK(ws_text, FR_ECORRUPT, err, "%s: no Avro schema", name);
    /* The same JSON value as the schema firth writes (jansson compares; libavro's schema
     * parser leaks on malformed schemas). */
    json_t *ws = json_loadb((const char *)ws_text, len, JSON_REJECT_DUPLICATES, NULL);
    json_t *expect = json_loads(schema, 0, NULL);
    bool same = ws && expect && json_equal(ws, expect);
    json_decref(ws);
    json_decref(expect);
    FR_CHECK(same, FR_ECORRUPT, err,
             "%s: the Avro schema is not the one firth writes for this file", name);
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (deflate && inflateInit2(&zs, -15) != Z_OK)
        return fr_fail(err, FR_ENOMEM, "inflateInit for %s", name);
    fr_buf block;
    fr_buf_init(&block);
    rd r = {p, n, h.len};
    int blocks = 0, rc = 0;
    while (rc == 0 && r.pos < n) {
        int64_t count, size;
        if (++blocks > AVRO_BLOCKS_MAX) {
            rc = fr_fail(err, FR_ECORRUPT, "%s: too many Avro blocks", name);
            break;
        }
        if (rd_long(&r, &count) < 0 || rd_long(&r, &size) < 0 || count < 0 ||
            count > AVRO_BLOCK_OBJECTS_MAX || size < 0 || (uint64_t)size > n - r.pos ||
            n - r.pos - (size_t)size < 16) {
            rc = fr_fail(err, FR_ECORRUPT, "%s: Avro block at byte %zu: bad count or size",
                         name, r.pos);
            break;
        }
        const uint8_t *data = p + r.pos;
        size_t dlen = (size_t)size;
        if (deflate) {
            fr_buf_reset(&block);
            rc = inflate_block(&zs, data, dlen, &block, name, err);
            data = block.data;
            dlen = block.len;
        }
        r.pos += (size_t)size;
        if (rc == 0 && memcmp(p + r.pos, h.sync, 16) != 0)
            rc = fr_fail(err, FR_ECORRUPT, "%s: Avro block sync marker mismatch at byte %zu",
                         name, r.pos);
        r.pos += 16;
        dc d = {{data, dlen, 0}, name, arena, err};
        for (int64_t i = 0; rc == 0 && i < count; i++) rc = fn(&d, ctx);
        if (rc == 0 && d.r.pos != dlen) rc = bad(&d, "bytes left after the block's records");
    }
    if (deflate) inflateEnd(&zs);
    fr_buf_free(&block);
    return rc;
}

/* ---- manifest lists -------------------------------------------------------------------- */

typedef struct list_ctx {
    fr_ice_manifest *v;
    int len, cap;
} list_ctx;

static int summary_item(dc *d, void *ctx, int64_t i)
{
    fr_ice_field_summary *fs = ctx ? &((fr_ice_field_summary *)ctx)[i] : NULL;
    fr_ice_field_summary tmp;
    if (!fs) fs = &tmp;
    bool present, nan;
    size_t len;
    memset(fs, 0, sizeof *fs);
    FR_TRY(dc_bool(d, &fs->contains_null));
    FR_TRY(dc_opt(d, &present));
    fs->contains_nan = -1;
    if (present) {
        FR_TRY(dc_bool(d, &nan));
        fs->contains_nan = nan;
    }
    for (int k = 0; k < 2; k++) {
        FR_TRY(dc_opt(d, &present));
        if (!present) continue;
        const uint8_t *b;
        if (ctx) FR_TRY(dc_copy(d, false, &b, &len));
        else FR_TRY(dc_bytes(d, &b, &len));
        if (len > INT32_MAX) return bad(d, "a huge bound");
        if (k) fs->upper = b, fs->upper_len = (int32_t)len;
        else fs->lower = b, fs->lower_len = (int32_t)len;
    }
    return 0;
}

static int dc_opt_bytes(dc *d)
{
    bool present;
    const uint8_t *b;
    size_t len;
    FR_TRY(dc_opt(d, &present));
    return present ? dc_bytes(d, &b, &len) : 0;
}

static int list_record(dc *d, void *vctx)
{
    list_ctx *c = vctx;
    if (c->len == c->cap) {
        int cap = c->cap ? c->cap * 2 : 8;
        fr_ice_manifest *v = fr_realloc(c->v, (size_t)cap * sizeof *v);
        if (!v) return fr_fail(d->err, FR_ENOMEM, "out of memory reading %s", d->name);
        c->v = v;
        c->cap = cap;
    }
    fr_ice_manifest *m = &c->v[c->len];
    memset(m, 0, sizeof *m);
    int32_t content;
    FR_TRY(dc_str(d, &m->path));
    FR_TRY(dc_long(d, &m->length));
    FR_TRY(dc_int(d, &m->spec_id));
    FR_TRY(dc_int(d, &content));
    FR_TRY(dc_long(d, &m->seq));
    FR_TRY(dc_long(d, &m->min_seq));
    FR_TRY(dc_long(d, &m->added_snapshot_id));
    FR_TRY(dc_int(d, &m->added_files));
    FR_TRY(dc_int(d, &m->existing_files));
    FR_TRY(dc_int(d, &m->deleted_files));
    FR_TRY(dc_long(d, &m->added_rows));
    FR_TRY(dc_long(d, &m->existing_rows));
    FR_TRY(dc_long(d, &m->deleted_rows));
    int64_t np;
    FR_TRY(dc_peek_count(d, summary_item, &np));
    if (np > FR_ICE_PARTITION_FIELDS_MAX) return bad(d, "too many partition summaries");
    size_t pos = d->r.pos;
    bool present;
    FR_TRY(dc_opt(d, &present));
    d->r.pos = pos;
    if (present) {
        m->parts = fr_arena_alloc(d->arena, (size_t)(np ? np : 1) * sizeof *m->parts);
        if (!m->parts) return fr_fail(d->err, FR_ENOMEM, "out of memory reading %s", d->name);
    }
    FR_TRY(dc_opt_array(d, summary_item, m->parts, &np));
    m->nparts = (int)np;
    FR_TRY(dc_opt_bytes(d));
    if ((content != 0 && content != 1) || m->seq < 0 || m->min_seq < 0 || m->length < 0)
        return fr_fail(d->err, FR_ECORRUPT, "%s: manifest %d has bad content or sequence numbers",
                       d->name, c->len);
    m->content = content;
    c->len++;
    return 0;
}

int fr_avro_read_manifest_list(const uint8_t *p, size_t n, const char *name, fr_arena *arena,
                               fr_ice_manifest **out, int *count, fr_error *err)
{
    list_ctx c = {0};
    int rc = read_container(p, n, name, MANIFEST_LIST_SCHEMA, NULL, arena, list_record, &c, err);
    if (rc < 0) {
        fr_free(c.v);
        *out = NULL;
        *count = 0;
        return rc;
    }
    *out = c.v;
    *count = c.len;
    return 0;
}

/* ---- manifests ------------------------------------------------------------------------- */

typedef struct man_ctx {
    const fr_ice_part_spec *ps;
    const fr_ice_manifest *man;
    fr_ice_file *v;
    int len, cap;
    fr_ice_file *f;      /* the entry being read */
    int map_kind;        /* 0..4: sizes, values, nulls, lower, upper */
    bool counting;       /* first pass over the maps: count entries only */
    int stats_cap;
} man_ctx;

static int read_partition_value(dc *d, const fr_type *t, fr_value *out)
{
    bool present;
    FR_TRY(dc_opt(d, &present));
    if (!present) {
        *out = fr_value_null(*t);
        return 0;
    }
    switch (t->id) {
    case FR_T_BOOLEAN: {
        bool b;
        FR_TRY(dc_bool(d, &b));
        *out = fr_value_bool(*t, b);
        return 0;
    }
    case FR_T_TINYINT: case FR_T_SMALLINT: case FR_T_INT: case FR_T_DATE: {
        int32_t x;
        FR_TRY(dc_int(d, &x));
        *out = fr_value_int(*t, x);
        return 0;
    }
    case FR_T_BIGINT: case FR_T_TIME: case FR_T_TIMESTAMP: case FR_T_TIMESTAMP_LTZ: {
        int64_t x;
        FR_TRY(dc_long(d, &x));
        *out = fr_value_int(*t, x);
        return 0;
    }
    case FR_T_FLOAT: case FR_T_DOUBLE: {
        const uint8_t *b = NULL;
        int w = t->id == FR_T_FLOAT ? 4 : 8;
        FR_TRY(dc_raw(d, (size_t)w, &b));
        FR_TRY(fr_ice_bound_decode(b, (size_t)w, t, out, d->err));
        return 0;
    }
    case FR_T_CHAR: case FR_T_VARCHAR: case FR_T_STRING: case FR_T_BYTES: {
        const uint8_t *b;
        size_t len;
        FR_TRY(dc_copy(d, t->id != FR_T_BYTES, &b, &len));
        *out = fr_value_str(*t, b, len);
        return 0;
    }
    case FR_T_DECIMAL: {
        const uint8_t *b = NULL;
        size_t w = (size_t)decimal_bytes(t->precision);
        FR_TRY(dc_raw(d, w, &b));
        if (fr_ice_bound_decode(b, w, t, out, NULL) < 0 ||
            !fr_decimal_fits(out->v.d, t->precision))
            return bad(d, "partition decimal out of range");
        return 0;
    }
    }
    return bad(d, "unknown partition type");
}

static fr_ice_col_stat *stat_of(fr_ice_file *f, int32_t id, int cap)
{
    for (int i = 0; i < f->nstats; i++)
        if (f->stats[i].field_id == id) return &f->stats[i];
    if (f->nstats >= cap) return NULL;
    fr_ice_col_stat *s = &f->stats[f->nstats++];
    *s = (fr_ice_col_stat){.field_id = id, .size = -1, .values = -1, .nulls = -1};
    return s;
}

static int map_item(dc *d, void *vctx, int64_t i)
{
    (void)i;
    man_ctx *c = vctx;
    int32_t id;
    int64_t x = 0;
    const uint8_t *b = NULL;
    size_t len = 0;
    FR_TRY(dc_int(d, &id));
    if (c->map_kind <= 2) {
        FR_TRY(dc_long(d, &x));
        if (x < 0) return bad(d, "a negative count");
    } else if (c->counting) {
        FR_TRY(dc_bytes(d, &b, &len));
    } else {
        FR_TRY(dc_copy(d, false, &b, &len));
    }
    if (len > INT32_MAX) return bad(d, "a huge bound");
    if (c->counting) {
        c->stats_cap++;
        return 0;
    }
    fr_ice_col_stat *s = stat_of(c->f, id, c->stats_cap);
    if (!s) return bad(d, "too many column statistics");
    switch (c->map_kind) {
    case 0: s->size = x; break;
    case 1: s->values = x; break;
    case 2: s->nulls = x; break;
    case 3: s->lower = b, s->lower_len = (int32_t)len; break;
    default: s->upper = b, s->upper_len = (int32_t)len; break;
    }
    return 0;
}

static int long_item(dc *d, void *vctx, int64_t i)
{
    man_ctx *c = vctx;
    int64_t x;
    FR_TRY(dc_long(d, &x));
    if (c) c->f->splits[i] = x;
    return 0;
}

static int int_item(dc *d, void *vctx, int64_t i)
{
    man_ctx *c = vctx;
    int32_t x;
    FR_TRY(dc_int(d, &x));
    if (c) c->f->eq_ids[i] = x;
    return 0;
}

/* Reads the five statistics maps: a first pass counts their entries, which bound the
 * columns described, a second fills them in. */
static int read_maps(dc *d, man_ctx *c)
{
    size_t pos = d->r.pos;
    int64_t n;
    c->counting = true;
    c->stats_cap = 0;
    /* A map has an entry per column at most, which bounds the linear lookups below. */
    const int64_t max = FR_SCHEMA_COLUMNS_MAX + FR_LAKE_EXTRA_COLUMNS;
    for (c->map_kind = 0; c->map_kind < 5; c->map_kind++)
        FR_TRY(dc_opt_array_max(d, map_item, c, max, &n));
    d->r.pos = pos;
    c->counting = false;
    c->f->stats = fr_arena_alloc(d->arena, (size_t)(c->stats_cap ? c->stats_cap : 1) *
                                               sizeof *c->f->stats);
    if (!c->f->stats) return fr_fail(d->err, FR_ENOMEM, "out of memory reading %s", d->name);
    for (c->map_kind = 0; c->map_kind < 5; c->map_kind++) FR_TRY(dc_opt_array(d, map_item, c, &n));
    return 0;
}

static int read_lists(dc *d, man_ctx *c)
{
    fr_ice_file *f = c->f;
    int64_t n;
    FR_TRY(dc_peek_count(d, long_item, &n));
    f->splits = fr_arena_alloc(d->arena, (size_t)(n ? n : 1) * sizeof *f->splits);
    if (!f->splits) return fr_fail(d->err, FR_ENOMEM, "out of memory reading %s", d->name);
    FR_TRY(dc_opt_array(d, long_item, c, &n));
    f->nsplits = (int)n;
    FR_TRY(dc_peek_count(d, int_item, &n));
    f->eq_ids = fr_arena_alloc(d->arena, (size_t)(n ? n : 1) * sizeof *f->eq_ids);
    if (!f->eq_ids) return fr_fail(d->err, FR_ENOMEM, "out of memory reading %s", d->name);
    FR_TRY(dc_opt_array(d, int_item, c, &n));
    f->neq = (int)n;
    bool present;
    int32_t sort;
    FR_TRY(dc_opt(d, &present));
    if (present) FR_TRY(dc_int(d, &sort));
    return 0;
}

/* An optional long: inherited from the manifest list when null (only by ADDED entries). */
static int read_seq(dc *d, const man_ctx *c, int status, int64_t inherited, int64_t *out,
                    const char *what)
{
    bool present;
    FR_TRY(dc_opt(d, &present));
    if (present) {
        FR_TRY(dc_long(d, out));
        if (*out < 0) return bad(d, "a negative sequence number or id");
        return 0;
    }
    if (!c->man || (status != 1 && strcmp(what, "snapshot id") != 0))
        return fr_fail(d->err, FR_ECORRUPT, "%s: an entry without a %s", d->name, what);
    *out = inherited;
    return 0;
}

static int entry_record(dc *d, void *vctx)
{
    man_ctx *c = vctx;
    if (c->len == c->cap) {
        int cap = c->cap ? c->cap * 2 : 16;
        fr_ice_file *v = fr_realloc(c->v, (size_t)cap * sizeof *v);
        if (!v) return fr_fail(d->err, FR_ENOMEM, "out of memory reading %s", d->name);
        c->v = v;
        c->cap = cap;
    }
    fr_ice_file *f = c->f = &c->v[c->len];
    memset(f, 0, sizeof *f);
    int32_t status, content;
    const fr_ice_manifest *m = c->man;
    FR_TRY(dc_int(d, &status));
    if (status < 0 || status > 2) return bad(d, "bad entry status");
    f->status = status;
    FR_TRY(read_seq(d, c, status, m ? m->added_snapshot_id : 0, &f->snapshot_id, "snapshot id"));
    FR_TRY(read_seq(d, c, status, m ? m->seq : 0, &f->seq, "sequence number"));
    FR_TRY(read_seq(d, c, status, m ? m->seq : 0, &f->file_seq, "file sequence number"));
    FR_TRY(dc_int(d, &content));
    if (content < 0 || content > 2) return bad(d, "bad file content");
    f->content = content;
    const char *format;
    FR_TRY(dc_str(d, &f->path));
    FR_TRY(dc_str(d, &format));
    if (strcasecmp(format, "parquet") != 0)
        return fr_fail(d->err, FR_EUNSUPPORTED, "%s: file format %.20s (firth reads Parquet)",
                       d->name, format);
    const fr_ice_part_spec *ps = c->ps;
    f->npart = ps->n;
    f->part = fr_arena_alloc(d->arena, (size_t)(ps->n ? ps->n : 1) * sizeof *f->part);
    if (!f->part) return fr_fail(d->err, FR_ENOMEM, "out of memory reading %s", d->name);
    for (int i = 0; i < ps->n; i++) FR_TRY(read_partition_value(d, &ps->types[i], &f->part[i]));
    FR_TRY(dc_long(d, &f->records));
    FR_TRY(dc_long(d, &f->file_bytes));
    if (f->records < 0 || f->file_bytes < 0) return bad(d, "negative record count or size");
    FR_TRY(read_maps(d, c));
    FR_TRY(dc_opt_bytes(d));
    FR_TRY(read_lists(d, c));
    if (m && (f->content == 0) != (m->content == 0))
        return fr_fail(d->err, FR_ECORRUPT, "%s: a %s file in a %s manifest", d->name,
                       f->content ? "delete" : "data", m->content ? "delete" : "data");
    c->len++;
    return 0;
}

int fr_avro_read_manifest(const uint8_t *p, size_t n, const char *name,
                          const fr_ice_part_spec *ps, const fr_ice_manifest *man,
                          fr_arena *arena, fr_ice_file **out, int *count, fr_error *err)
{
    *out = NULL;
    *count = 0;
    fr_buf schema;
    fr_buf_init(&schema);
    int rc = manifest_schema_json(ps, &schema, err);
    if (rc == 0) rc = fr_buf_append(&schema, "", 1, err);
    man_ctx c = {.ps = ps, .man = man};
    const char *content = man ? (man->content ? "deletes" : "data") : NULL;
    if (rc == 0)
        rc = read_container(p, n, name, (const char *)schema.data, content, arena, entry_record,
                            &c, err);
    fr_buf_free(&schema);
    if (rc < 0) {
        fr_free(c.v);
        return rc;
    }
    *out = c.v;
    *count = c.len;
    return 0;
}

static int load(const char *uri, uint8_t **p, size_t *n, fr_error *err)
{
    const char *path = fr_ice_local_path(uri);
    FR_CHECK(path, FR_EUNSUPPORTED, err, "%s: not a local file", uri);
    int rc = fr_read_file(path, FR_ICE_AVRO_BYTES_MAX, p, n, err);
    if (rc == FR_ELIMIT || rc == FR_ERANGE) rc = fr_fail(err, FR_ECORRUPT, "%s: too large", path);
    return rc;
}

int fr_avro_load_manifest_list(const char *path, fr_arena *arena, fr_ice_manifest **out,
                               int *count, fr_error *err)
{
    uint8_t *p;
    size_t n;
    FR_TRY(load(path, &p, &n, err));
    int rc = fr_avro_read_manifest_list(p, n, path, arena, out, count, err);
    fr_free(p);
    return rc;
}

int fr_avro_load_manifest(const char *path, const fr_ice_part_spec *ps,
                          const fr_ice_manifest *man, fr_arena *arena, fr_ice_file **out,
                          int *count, fr_error *err)
{
    uint8_t *p;
    size_t n;
    FR_TRY(load(path, &p, &n, err));
    int rc = fr_avro_read_manifest(p, n, path, ps, man, arena, out, count, err);
    fr_free(p);
    return rc;
}
