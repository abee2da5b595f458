/* parquet_tool.c — the C side of the Parquet interop test (parquet_duckdb.test.mjs) and the
 * writer of the Parquet fuzz seeds.
 *
 *   parquet_tool write FILE CODEC ROWS [ROW_GROUP_BYTES [PAGE_BYTES [DICT_BYTES_MAX]]]
 *        writes a table covering every firth type, with nulls, a NOT NULL column, a
 *        repetitive column (a small dictionary) and one of 400 values in runs (a dictionary
 *        that outgrows a small DICT_BYTES_MAX), and prints its fields and values as JSON.
 *   parquet_tool read FILE [COL...]
 *        reads a Parquet file with firth (every row group; the named columns or all) and
 *        prints its fields, field ids, row-group count and values as JSON.
 *   parquet_tool corpus DIR
 *        writes seed inputs for the Parquet fuzz targets (small valid files of every type and
 *        codec, and broken ones).
 *
 * JSON values: null; booleans; TINYINT..INT, FLOAT, DOUBLE, DATE (days) as numbers; BIGINT,
 * TIME and TIMESTAMP (integers in their unit) and DECIMAL ("-12.3400") as strings; strings
 * as strings; BYTES as lowercase hex. */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "lake/lake.h"

static void die(const char *what, const fr_error *err)
{
    fprintf(stderr, "parquet_tool: %s: %s\n", what, err ? err->msg : strerror(errno));
    exit(1);
}

static json_t *value_json(const fr_value *v)
{
    if (v->is_null) return json_null();
    char text[64];
    switch (v->type.id) {
    case FR_T_BOOLEAN: return json_boolean(v->v.b);
    case FR_T_TINYINT: case FR_T_SMALLINT: case FR_T_INT: case FR_T_DATE: return json_integer(v->v.i);
    case FR_T_FLOAT: case FR_T_DOUBLE: return json_real(v->v.f);
    case FR_T_BIGINT: case FR_T_TIME: case FR_T_TIMESTAMP: case FR_T_TIMESTAMP_LTZ:
        snprintf(text, sizeof text, "%" PRId64, v->v.i);
        return json_string(text);
    case FR_T_DECIMAL:
        fr_decimal_format(v->v.d, v->type.scale, text, sizeof text);
        return json_string(text);
    case FR_T_CHAR: case FR_T_VARCHAR: case FR_T_STRING:
        return json_stringn((const char *)v->v.s.ptr, v->v.s.len);
    case FR_T_BYTES: {
        char *hex = malloc(2 * v->v.s.len + 1);
        for (size_t i = 0; i < v->v.s.len; i++) snprintf(hex + 2 * i, 3, "%02x", v->v.s.ptr[i]);
        hex[2 * v->v.s.len] = '\0';
        json_t *j = json_string(hex);
        free(hex);
        return j;
    }
    }
    return json_null();
}

static json_t *fields_json(const fr_schema *s)
{
    json_t *fields = json_array();
    for (int i = 0; i < fr_schema_num_fields(s); i++) {
        const fr_field *f = fr_schema_field(s, i);
        char type[64];
        fr_type_format(&f->type, true, type, sizeof type);
        json_t *o = json_object();
        json_object_set_new(o, "name", json_string(f->name));
        json_object_set_new(o, "type", json_string(type));
        json_array_append_new(fields, o);
    }
    return fields;
}

static void rows_json(const fr_batch *b, json_t *rows)
{
    for (int64_t r = 0; r < fr_batch_num_rows(b); r++) {
        json_t *row = json_array();
        for (int c = 0; c < fr_batch_num_columns(b); c++) {
            fr_value v;
            fr_column_get(fr_batch_column(b, c), r, &v);
            json_array_append_new(row, value_json(&v));
        }
        json_array_append_new(rows, row);
    }
}

/* ---- the table --------------------------------------------------------------------------- */

static const struct {
    const char *name, *type;
} table_cols[] = {
    {"b", "BOOLEAN"}, {"i8", "TINYINT"}, {"i16", "SMALLINT"}, {"i32", "INT"}, {"i64", "BIGINT"},
    {"f32", "FLOAT"}, {"f64", "DOUBLE"}, {"dec9", "DECIMAL(9, 2)"}, {"dec18", "DECIMAL(18, 4)"},
    {"dec38", "DECIMAL(38, 6)"}, {"dec20", "DECIMAL(20, 0)"}, {"s", "STRING"},
    {"vc", "VARCHAR(20)"}, {"ch", "CHAR(5)"}, {"bin", "BYTES"}, {"d", "DATE"},
    {"t0", "TIME(0)"}, {"t3", "TIME(3)"}, {"t6", "TIME(6)"}, {"t9", "TIME(9)"},
    {"ts0", "TIMESTAMP(0)"}, {"ts3", "TIMESTAMP(3)"}, {"ts6", "TIMESTAMP(6)"},
    {"ts9", "TIMESTAMP(9)"}, {"tz3", "TIMESTAMP_LTZ(3)"}, {"tz6", "TIMESTAMP_LTZ(6)"},
    {"tz9", "TIMESTAMP_LTZ(9)"}, {"nn", "BIGINT NOT NULL"}, {"rep", "STRING"},
    {"flag", "BOOLEAN NOT NULL"}, {"mid", "STRING"},
};
#define TABLE_NCOLS ((int)(sizeof table_cols / sizeof table_cols[0]))

static fr_schema *table_schema(void)
{
    fr_field f[TABLE_NCOLS];
    fr_error err;
    for (int i = 0; i < TABLE_NCOLS; i++) {
        f[i].name = (char *)table_cols[i].name;
        if (fr_type_parse(table_cols[i].type, &f[i].type, &err) < 0) die("type", &err);
    }
    fr_schema *s;
    if (fr_schema_new(f, TABLE_NCOLS, 0, &s, &err) < 0) die("schema", &err);
    return s;
}

static uint64_t mix(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* Appends row r of the table: values from a hash of (r, column), NULL in about one cell in
 * nine of each nullable column, extremes in the first rows. */
static void append_row(fr_builder *bld, const fr_schema *s, int64_t r)
{
    fr_error err;
    char text[64];
    for (int c = 0; c < TABLE_NCOLS; c++) {
        const fr_type *t = &fr_schema_field(s, c)->type;
        uint64_t h = mix((uint64_t)r * 131 + (uint64_t)c);
        int rc;
        if (t->nullable && (h % 9 == 0 || r == 3)) {
            rc = fr_builder_append_null(bld, c, &err);
            if (rc < 0) die("append", &err);
            continue;
        }
        int64_t sv = (int64_t)h;
        switch (t->id) {
        case FR_T_BOOLEAN: rc = fr_builder_append_bool(bld, c, (h >> 7) & 1, &err); break;
        case FR_T_TINYINT: rc = fr_builder_append_i64(bld, c, r == 0 ? -128 : r == 1 ? 127 : (int8_t)sv, &err); break;
        case FR_T_SMALLINT: rc = fr_builder_append_i64(bld, c, r == 0 ? -32768 : (int16_t)sv, &err); break;
        case FR_T_INT: rc = fr_builder_append_i64(bld, c, r == 0 ? INT32_MIN : r == 1 ? INT32_MAX : (int32_t)sv, &err); break;
        case FR_T_BIGINT:
            if (!strcmp(fr_schema_field(s, c)->name, "nn")) sv = r;
            else if (r == 0) sv = INT64_MIN;
            else if (r == 1) sv = INT64_MAX;
            rc = fr_builder_append_i64(bld, c, sv, &err);
            break;
        case FR_T_FLOAT: rc = fr_builder_append_f64(bld, c, (float)((int32_t)sv) / 1024.0f, &err); break;
        case FR_T_DOUBLE: rc = fr_builder_append_f64(bld, c, r == 2 ? -0.0 : (double)sv / 3.0e9, &err); break;
        case FR_T_DECIMAL: {
            fr_i128 lim = fr_i128_pow10(t->precision);
            fr_i128 v = ((fr_i128)sv * (fr_i128)(int64_t)mix(h)) % lim;
            if (r == 0) v = -(lim - 1);
            if (r == 1) v = lim - 1;
            rc = fr_builder_append_i128(bld, c, v, &err);
            break;
        }
        case FR_T_STRING:
        case FR_T_VARCHAR:
        case FR_T_CHAR: {
            int n;
            if (!strcmp(fr_schema_field(s, c)->name, "rep")) n = snprintf(text, sizeof text, "category-%d", (int)(h % 7));
            else if (!strcmp(fr_schema_field(s, c)->name, "mid")) n = snprintf(text, sizeof text, "m-%d", (int)(r / 8 % 400));
            else if (t->id == FR_T_CHAR) n = snprintf(text, sizeof text, "%05u", (unsigned)(h % 100000));
            else if (r == 0) n = 0;
            else if (r == 1) n = snprintf(text, sizeof text, "caf\xc3\xa9 \xe2\x82\xac");
            else n = snprintf(text, sizeof text, "v%" PRIu64, h % 100000);
            rc = fr_builder_append_bytes(bld, c, text, (size_t)n, &err);
            break;
        }
        case FR_T_BYTES: {
            uint8_t bytes[16];
            size_t n = h % 12;
            for (size_t k = 0; k < n; k++) bytes[k] = (uint8_t)(h >> (k * 5));
            rc = fr_builder_append_bytes(bld, c, bytes, n, &err);
            break;
        }
        case FR_T_DATE: rc = fr_builder_append_i64(bld, c, (int64_t)(h % 40000) - 10000, &err); break;
        case FR_T_TIME: {
            int64_t units = fr_type_time_units(t->precision);
            rc = fr_builder_append_i64(bld, c, (int64_t)(h % (uint64_t)(86400 * units)), &err);
            break;
        }
        default: { /* timestamps: 1900..2100 */
            int64_t units = fr_type_time_units(t->precision);
            int64_t secs = (int64_t)(h % 6311390400ull) - 2208988800ll;
            rc = fr_builder_append_i64(bld, c, secs * units + (int64_t)(mix(h) % (uint64_t)units), &err);
        }
        }
        if (rc < 0) die("append", &err);
    }
}

static int cmd_write(int argc, char **argv)
{
    if (argc < 5) return 2;
    fr_error err;
    fr_parquet_options o;
    fr_parquet_options_default(&o);
    if (fr_parquet_codec_parse(argv[3], &o.codec, &err) < 0) die("codec", &err);
    int64_t rows = strtoll(argv[4], NULL, 10);
    if (argc > 5) o.row_group_bytes = strtoll(argv[5], NULL, 10);
    if (argc > 6) o.page_bytes = strtoll(argv[6], NULL, 10);
    if (argc > 7) o.dict_bytes_max = strtoll(argv[7], NULL, 10);
    fr_schema *s = table_schema();
    int32_t ids[TABLE_NCOLS];
    for (int i = 0; i < TABLE_NCOLS; i++) ids[i] = 100 + i;
    fr_parquet_writer *w;
    if (fr_parquet_writer_open(argv[2], s, ids, &o, &w, &err) < 0) die("open", &err);
    fr_builder *bld;
    if (fr_builder_new(s, &bld, &err) < 0) die("builder", &err);
    json_t *jrows = json_array();
    for (int64_t r = 0; r < rows;) {
        int64_t n = rows - r < 1000 ? rows - r : 1000;
        for (int64_t k = 0; k < n; k++) append_row(bld, s, r + k);
        fr_batch *b;
        if (fr_builder_finish(bld, &b, &err) < 0) die("finish", &err);
        rows_json(b, jrows);
        if (fr_parquet_writer_write(w, b, &err) < 0) die("write", &err);
        fr_batch_free(b);
        r += n;
    }
    fr_parquet_file_info *info;
    if (fr_parquet_writer_close(w, &info, &err) < 0) die("close", &err);
    json_t *out = json_object();
    json_object_set_new(out, "fields", fields_json(s));
    json_object_set_new(out, "rows", jrows);
    json_object_set_new(out, "row_groups", json_integer(info->nrow_groups));
    json_object_set_new(out, "file_bytes", json_integer(info->file_bytes));
    json_dumpf(out, stdout, JSON_COMPACT);
    fputc('\n', stdout);
    json_decref(out);
    fr_parquet_file_info_free(info);
    fr_builder_free(bld);
    fr_schema_free(s);
    return 0;
}

static int cmd_read(int argc, char **argv)
{
    if (argc < 3) return 2;
    fr_error err;
    fr_parquet_reader *r;
    if (fr_parquet_open(argv[2], &r, &err) < 0) die("open", &err);
    const fr_schema *s = fr_parquet_schema(r);
    int ncols = argc > 3 ? argc - 3 : fr_schema_num_fields(s);
    int *cols = calloc((size_t)ncols + 1, sizeof *cols);
    for (int i = 0; i < ncols; i++) {
        cols[i] = argc > 3 ? fr_schema_find(s, argv[3 + i]) : i;
        if (cols[i] < 0) {
            fprintf(stderr, "parquet_tool: no column %s\n", argv[3 + i]);
            return 1;
        }
    }
    fr_schema *ps;
    if (fr_schema_project(s, cols, ncols, &ps, &err) < 0) die("project", &err);
    json_t *jrows = json_array(), *ids = json_array();
    for (int i = 0; i < ncols; i++) json_array_append_new(ids, json_integer(fr_parquet_field_id(r, cols[i])));
    for (int g = 0; g < fr_parquet_num_row_groups(r); g++) {
        fr_batch *b;
        if (fr_parquet_read_row_group(r, g, cols, ncols, &b, &err) < 0) die("read", &err);
        rows_json(b, jrows);
        fr_batch_free(b);
    }
    json_t *out = json_object();
    json_object_set_new(out, "fields", fields_json(ps));
    json_object_set_new(out, "field_ids", ids);
    json_object_set_new(out, "rows", jrows);
    json_object_set_new(out, "row_groups", json_integer(fr_parquet_num_row_groups(r)));
    json_dumpf(out, stdout, JSON_COMPACT);
    fputc('\n', stdout);
    json_decref(out);
    fr_schema_free(ps);
    free(cols);
    fr_parquet_close(r);
    return 0;
}

/* ---- fuzz seeds -------------------------------------------------------------------------- */

static void write_seed(const char *dir, const char *name, const uint8_t *p, size_t n)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n || fclose(f) != 0) die(path, NULL);
}

static int cmd_corpus(int argc, char **argv)
{
    if (argc < 3) return 2;
    const char *dir = argv[2];
    const char *codecs[] = {"uncompressed", "snappy", "zstd"};
    fr_schema *s = table_schema();
    for (int c = 0; c < 3; c++) {
        for (int k = 0; k < 2; k++) {
            char path[4096], name[128];
            snprintf(name, sizeof name, "all_types_%s_%d.parquet", codecs[c], k);
            snprintf(path, sizeof path, "%s/%s.tmp", dir, name);
            unlink(path);
            fr_error err;
            fr_parquet_options o;
            fr_parquet_options_default(&o);
            fr_parquet_codec_parse(codecs[c], &o.codec, &err);
            if (k == 1) o.row_group_bytes = 2000, o.page_bytes = 300;
            fr_parquet_writer *w;
            if (fr_parquet_writer_open(path, s, NULL, &o, &w, &err) < 0) die("open", &err);
            fr_builder *bld;
            if (fr_builder_new(s, &bld, &err) < 0) die("builder", &err);
            for (int64_t r = 0; r < (k ? 40 : 12); r++) append_row(bld, s, r);
            fr_batch *b;
            if (fr_builder_finish(bld, &b, &err) < 0) die("finish", &err);
            if (fr_parquet_writer_write(w, b, &err) < 0) die("write", &err);
            if (fr_parquet_writer_close(w, NULL, &err) < 0) die("close", &err);
            fr_batch_free(b);
            fr_builder_free(bld);
            uint8_t *data;
            size_t len;
            if (fr_read_file(path, 1 << 24, &data, &len, &err) < 0) die("read", &err);
            unlink(path);
            write_seed(dir, name, data, len);
            if (c == 2 && k == 0) {
                /* Broken variants: truncated, bad magic, footer length too large. */
                write_seed(dir, "truncated.parquet", data, len / 2);
                data[len - 1] = 'X';
                write_seed(dir, "bad_magic.parquet", data, len);
                data[len - 1] = '1';
                fr_put_u32le(data + len - 8, (uint32_t)len);
                write_seed(dir, "bad_footer_len.parquet", data, len);
            }
            fr_free(data);
        }
    }
    fr_schema_free(s);
    return 0;
}

int main(int argc, char **argv)
{
    int rc = 2;
    if (argc >= 2 && !strcmp(argv[1], "write")) rc = cmd_write(argc, argv);
    else if (argc >= 2 && !strcmp(argv[1], "read")) rc = cmd_read(argc, argv);
    else if (argc >= 2 && !strcmp(argv[1], "corpus")) rc = cmd_corpus(argc, argv);
    if (rc == 2)
        fprintf(stderr, "usage: parquet_tool write FILE CODEC ROWS [RG_BYTES [PAGE_BYTES [DICT_BYTES]]] | "
                        "read FILE [COL...] | corpus DIR\n");
    return rc;
}
