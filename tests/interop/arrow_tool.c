/* arrow_tool.c — the C side of the Arrow interop test (arrow_ipc.test.mjs) and the writer of
 * the Arrow IPC fuzz seeds.
 *
 *   arrow_tool write DIR    writes Arrow IPC streams of one table covering every firth type
 *                           with nulls: DIR/none.arrow, zstd.arrow, lz4.arrow (three codecs),
 *                           projected_none.arrow, projected_zstd.arrow (fr_ipc_project of the
 *                           messages), and DIR/expected.json with the values they hold.
 *   arrow_tool read FILE    decodes an Arrow IPC stream with firth and prints its fields and
 *                           values as JSON.
 *   arrow_tool corpus DIR   writes seed inputs for fuzz_arrow_ipc.
 *
 * JSON values: null; booleans; TINYINT..INT, FLOAT, DOUBLE, DATE (days) as numbers; BIGINT,
 * TIME and TIMESTAMP (integers in their unit) and DECIMAL ("-12.3400") as strings; strings
 * as strings; BYTES as lowercase hex. */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#include "../fuzz/arrow_fuzz_schema.h"
#include "arrow/arrow.h"

static void die(const char *what, const fr_error *err)
{
    fprintf(stderr, "arrow_tool: %s: %s\n", what, err ? err->msg : strerror(errno));
    exit(1);
}

/* ---- JSON values ------------------------------------------------------------------------- */

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

/* ---- the table --------------------------------------------------------------------------- */

static const struct {
    const char *name, *type;
} table_cols[] = {
    {"b", "BOOLEAN"}, {"i8", "TINYINT"}, {"i16", "SMALLINT"}, {"i32", "INT"}, {"i64", "BIGINT"},
    {"f32", "FLOAT"}, {"f64", "DOUBLE"}, {"dec", "DECIMAL(20, 4)"}, {"dec38", "DECIMAL(38, 10)"},
    {"ch", "CHAR(5)"}, {"vc", "VARCHAR(10)"}, {"s", "STRING"}, {"by", "BYTES"}, {"d", "DATE"},
    {"t0", "TIME(0)"}, {"t3", "TIME(3)"}, {"t6", "TIME(6)"}, {"t9", "TIME(9)"},
    {"ts0", "TIMESTAMP(0)"}, {"ts3", "TIMESTAMP(3)"}, {"ts6", "TIMESTAMP(6)"}, {"ts9", "TIMESTAMP(9)"},
    {"ltz3", "TIMESTAMP_LTZ(3)"}, {"ltz6", "TIMESTAMP_LTZ(6)"}, {"id", "BIGINT NOT NULL"},
};
#define NCOLS ((int)(sizeof table_cols / sizeof table_cols[0]))
#define NROWS 300
/* The table is written as batches of these sizes (an empty one included). */
static const int batch_rows[] = {180, 0, 120};
/* The projection written to the projected_*.arrow files, in this order. */
static const int projection[] = {11, 4, 7, 23, 12, 0};
#define NPROJ ((int)(sizeof projection / sizeof projection[0]))

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t next(void)
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 2685821657736338717ull;
}

static const char *const words[] = {"", "a", "firth", "Zürich", "日本語", "emoji 🙂", "tab\there", "quote\"s",
                                    "back\\slash", "x y z", "lake", "naïve"};

/* Row r of a column of type t: extremes in rows 1 and 2, zero and empty in row 3. */
static fr_value table_value(const fr_type *t, int col, int r, fr_arena *arena)
{
    fr_value v;
    memset(&v, 0, sizeof v);
    v.type = *t;
    if (t->nullable && (r * 7 + col) % 5 == 0) {
        v.is_null = true;
        return v;
    }
    uint64_t x = next();
    int64_t units = fr_type_time_units(t->precision);
    switch (t->id) {
    case FR_T_BOOLEAN: v.v.b = x & 1; break;
    case FR_T_TINYINT: v.v.i = r == 1 ? INT8_MIN : r == 2 ? INT8_MAX : r == 3 ? 0 : (int8_t)x; break;
    case FR_T_SMALLINT: v.v.i = r == 1 ? INT16_MIN : r == 2 ? INT16_MAX : r == 3 ? 0 : (int16_t)x; break;
    case FR_T_INT: v.v.i = r == 1 ? INT32_MIN : r == 2 ? INT32_MAX : r == 3 ? 0 : (int32_t)x; break;
    case FR_T_BIGINT:
        v.v.i = col == NCOLS - 1 ? r : r == 1 ? INT64_MIN : r == 2 ? INT64_MAX : r == 3 ? 0 : (int64_t)x;
        break;
    case FR_T_FLOAT: v.v.f = r == 1 ? -3.4028234663852886e38 : r == 3 ? 0.0 : (float)((int32_t)x % 1000000) / 128.0f; break;
    case FR_T_DOUBLE: v.v.f = r == 1 ? -1.7976931348623157e308 : r == 2 ? 5e-324 : (double)(int64_t)x / 7.0; break;
    case FR_T_DECIMAL: {
        fr_i128 max = fr_i128_pow10(t->precision) - 1;
        fr_i128 big = (fr_i128)((((unsigned __int128)x << 64) | next()) >> 2);
        v.v.d = r == 1 ? -max : r == 2 ? max : r == 3 ? 0 : big % (max + 1) * ((x & 2) ? -1 : 1);
        break;
    }
    case FR_T_CHAR: case FR_T_VARCHAR: case FR_T_STRING: {
        const char *w = words[r == 3 ? 0 : x % (sizeof words / sizeof words[0])];
        size_t n = strlen(w);
        if (t->id == FR_T_CHAR) {
            /* CHAR(5): exactly five characters. */
            static const char *const five[] = {"abcde", "ZZZZZ", "a b c", "12345"};
            w = five[x % 4];
            n = 5;
        } else if (t->id == FR_T_VARCHAR && n > 10) {
            w = "ten chars!";
            n = 10;
        }
        v.v.s.ptr = (const uint8_t *)w;
        v.v.s.len = n;
        break;
    }
    case FR_T_BYTES: {
        size_t n = r == 3 ? 0 : x % 20;
        uint8_t *p = fr_arena_alloc(arena, n + 1);
        for (size_t i = 0; i < n; i++) p[i] = (uint8_t)next();
        v.v.s.ptr = p;
        v.v.s.len = n;
        break;
    }
    case FR_T_DATE: v.v.i = r == 1 ? -719162 : r == 2 ? 2932896 : r == 3 ? 0 : (int64_t)(x % 40000) - 10000; break;
    case FR_T_TIME: v.v.i = r == 2 ? 86400 * units - 1 : r == 3 ? 0 : (int64_t)(x % (uint64_t)(86400 * units)); break;
    case FR_T_TIMESTAMP: case FR_T_TIMESTAMP_LTZ: {
        int64_t seconds = (int64_t)(x % 8000000000ull) - 4000000000ll;
        v.v.i = r == 1 ? (units == 1000000000 ? INT64_MIN : -62135596800ll * units) : r == 3 ? 0 : seconds * units + (int64_t)(next() % (uint64_t)units);
        break;
    }
    }
    return v;
}

static fr_schema *schema_of(void)
{
    fr_field fields[NCOLS];
    fr_error err;
    for (int i = 0; i < NCOLS; i++) {
        fields[i].name = (char *)table_cols[i].name;
        if (fr_type_parse(table_cols[i].type, &fields[i].type, &err) < 0) die("type", &err);
    }
    fr_schema *s;
    if (fr_schema_new(fields, NCOLS, 1, &s, &err) < 0) die("schema", &err);
    return s;
}

static void write_file(const char *dir, const char *name, const void *data, size_t n)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, n, f) != n || fclose(f) != 0) die(path, NULL);
}

/* Builds the table's batches; values[c][r] gets the expected JSON of every cell. */
static int build_table(const fr_schema *s, fr_batch **batches, json_t *columns, fr_arena *arena)
{
    fr_error err;
    fr_builder *bld;
    if (fr_builder_new(s, &bld, &err) < 0) die("builder", &err);
    int nb = 0, row = 0;
    for (size_t k = 0; k < sizeof batch_rows / sizeof batch_rows[0]; k++) {
        for (int i = 0; i < batch_rows[k]; i++, row++) {
            for (int c = 0; c < NCOLS; c++) {
                fr_value v = table_value(&fr_schema_field(s, c)->type, c, row, arena);
                if (fr_builder_append(bld, c, &v, &err) < 0) die("append", &err);
                json_array_append_new(json_object_get(columns, table_cols[c].name), value_json(&v));
            }
        }
        if (fr_builder_finish(bld, &batches[nb++], &err) < 0) die("finish", &err);
    }
    fr_builder_free(bld);
    return nb;
}

static int cmd_write(const char *dir)
{
    fr_error err;
    fr_schema *s = schema_of();
    fr_arena *arena = fr_arena_new(1 << 16);
    json_t *columns = json_object();
    for (int c = 0; c < NCOLS; c++) json_object_set_new(columns, table_cols[c].name, json_array());
    fr_batch *batches[8];
    int nb = build_table(s, batches, columns, arena);

    fr_schema *ps;
    if (fr_schema_project(s, projection, NPROJ, &ps, &err) < 0) die("project schema", &err);
    static const struct {
        fr_compression codec;
        const char *file, *projected;
    } outs[] = {{FR_COMPRESSION_NONE, "none.arrow", "projected_none.arrow"},
                {FR_COMPRESSION_ZSTD, "zstd.arrow", "projected_zstd.arrow"},
                {FR_COMPRESSION_LZ4_FRAME, "lz4.arrow", NULL}};
    for (size_t o = 0; o < sizeof outs / sizeof outs[0]; o++) {
        fr_buf stream, proj, msg;
        fr_buf_init(&stream);
        fr_buf_init(&proj);
        fr_buf_init(&msg);
        if (fr_ipc_write_schema(s, &stream, &err) < 0 || fr_ipc_write_schema(ps, &proj, &err) < 0) die("schema", &err);
        for (int i = 0; i < nb; i++) {
            fr_buf_reset(&msg);
            if (fr_ipc_write_batch(batches[i], outs[o].codec, &msg, &err) < 0) die("batch", &err);
            if (fr_buf_append(&stream, msg.data, msg.len, &err) < 0) die("append", &err);
            if (fr_ipc_project(msg.data, msg.len, s, projection, NPROJ, &proj, &err) < 0) die("project", &err);
        }
        if (fr_ipc_write_eos(&stream, &err) < 0 || fr_ipc_write_eos(&proj, &err) < 0) die("eos", &err);
        write_file(dir, outs[o].file, stream.data, stream.len);
        if (outs[o].projected) write_file(dir, outs[o].projected, proj.data, proj.len);
        fr_buf_free(&stream);
        fr_buf_free(&proj);
        fr_buf_free(&msg);
    }

    json_t *expected = json_object();
    json_object_set_new(expected, "fields", fields_json(s));
    json_object_set_new(expected, "columns", columns);
    json_t *pj = json_array();
    for (int i = 0; i < NPROJ; i++) json_array_append_new(pj, json_string(table_cols[projection[i]].name));
    json_object_set_new(expected, "projection", pj);
    json_t *sizes = json_array();
    for (size_t k = 0; k < sizeof batch_rows / sizeof batch_rows[0]; k++) json_array_append_new(sizes, json_integer(batch_rows[k]));
    json_object_set_new(expected, "batch_rows", sizes);
    char path[4096];
    snprintf(path, sizeof path, "%s/expected.json", dir);
    if (json_dump_file(expected, path, JSON_INDENT(1)) != 0) die(path, NULL);
    json_decref(expected);
    for (int i = 0; i < nb; i++) fr_batch_free(batches[i]);
    fr_schema_free(ps);
    fr_schema_free(s);
    fr_arena_free(arena);
    return 0;
}

/* ---- read -------------------------------------------------------------------------------- */

typedef struct read_ctx {
    json_t *out;     /* {"fields", "batch_rows", "columns"} */
    json_t *columns; /* name -> array */
} read_ctx;

static int on_batch(void *ctx, const fr_schema *schema, fr_batch *b, fr_error *err)
{
    read_ctx *rc = ctx;
    (void)err;
    if (!rc->columns) {
        rc->columns = json_object();
        for (int c = 0; c < fr_schema_num_fields(schema); c++)
            json_object_set_new(rc->columns, fr_schema_field(schema, c)->name, json_array());
        json_object_set_new(rc->out, "fields", fields_json(schema));
    }
    json_array_append_new(json_object_get(rc->out, "batch_rows"), json_integer(fr_batch_num_rows(b)));
    for (int c = 0; c < fr_batch_num_columns(b); c++) {
        json_t *arr = json_object_get(rc->columns, fr_schema_field(schema, c)->name);
        for (int64_t r = 0; r < fr_batch_num_rows(b); r++) {
            fr_value v;
            fr_column_get(fr_batch_column(b, c), r, &v);
            json_array_append_new(arr, value_json(&v));
        }
    }
    fr_batch_free(b);
    return 0;
}

static int cmd_read(const char *path)
{
    uint8_t *data;
    size_t n;
    fr_error err;
    if (fr_read_file(path, FR_IPC_MESSAGE_BYTES_MAX, &data, &n, &err) < 0) die(path, &err);
    read_ctx ctx = {.out = json_object()};
    json_object_set_new(ctx.out, "batch_rows", json_array());
    if (fr_ipc_read_stream(data, n, on_batch, &ctx, &err) < 0) die(path, &err);
    if (!ctx.columns) {
        /* A stream without batches: still report its fields. */
        fr_schema *s;
        size_t used;
        if (fr_ipc_read_schema(data, n, 0, &s, &used, &err) < 0) die(path, &err);
        json_object_set_new(ctx.out, "fields", fields_json(s));
        ctx.columns = json_object();
        fr_schema_free(s);
    }
    json_object_set_new(ctx.out, "columns", ctx.columns);
    json_dumpf(ctx.out, stdout, JSON_INDENT(1));
    putchar('\n');
    json_decref(ctx.out);
    fr_free(data);
    return 0;
}

/* ---- fuzz seeds -------------------------------------------------------------------------- */

static int cmd_corpus(const char *dir)
{
    fr_error err;
    fr_schema *fixed = fr_fuzz_arrow_schema();
    fr_schema *full = schema_of();
    fr_arena *arena = fr_arena_new(1 << 16);
    static const fr_compression codecs[] = {FR_COMPRESSION_NONE, FR_COMPRESSION_ZSTD, FR_COMPRESSION_LZ4_FRAME};
    static const int sizes[] = {0, 3, 17};
    for (size_t k = 0; k < 3; k++) {
        fr_builder *bld;
        if (fr_builder_new(fixed, &bld, &err) < 0) die("builder", &err);
        for (int r = 0; r < sizes[k]; r++)
            for (int c = 0; c < FR_FUZZ_ARROW_NFIELDS; c++) {
                fr_value v = table_value(&fr_schema_field(fixed, c)->type, c, r, arena);
                if (fr_builder_append(bld, c, &v, &err) < 0) die("append", &err);
            }
        fr_batch *b;
        if (fr_builder_finish(bld, &b, &err) < 0) die("finish", &err);
        fr_builder_free(bld);
        for (size_t c = 0; c < 3; c++) {
            fr_buf msg, stream;
            fr_buf_init(&msg);
            fr_buf_init(&stream);
            if (fr_ipc_write_batch(b, codecs[c], &msg, &err) < 0) die("batch", &err);
            char name[64];
            snprintf(name, sizeof name, "batch_%d_rows_%s", sizes[k], fr_compression_name(codecs[c]));
            write_file(dir, name, msg.data, msg.len);
            if (fr_ipc_write_schema(fixed, &stream, &err) < 0) die("schema", &err);
            fr_buf_append(&stream, msg.data, msg.len, &err);
            fr_buf_append(&stream, msg.data, msg.len, &err);
            fr_ipc_write_eos(&stream, &err);
            snprintf(name, sizeof name, "stream_%d_rows_%s", sizes[k], fr_compression_name(codecs[c]));
            write_file(dir, name, stream.data, stream.len);
            fr_buf_free(&msg);
            fr_buf_free(&stream);
        }
        fr_batch_free(b);
    }
    /* A stream of the full interop table (every type, CHAR/VARCHAR metadata) per codec. */
    fr_batch *batches[8];
    json_t *columns = json_object();
    for (int c = 0; c < NCOLS; c++) json_object_set_new(columns, table_cols[c].name, json_array());
    int nb = build_table(full, batches, columns, arena);
    json_decref(columns);
    for (size_t c = 0; c < 3; c++) {
        fr_buf stream;
        fr_buf_init(&stream);
        fr_ipc_write_schema(full, &stream, &err);
        fr_batch *small;
        if (fr_batch_slice(batches[0], 0, 9, &small, &err) < 0) die("slice", &err);
        fr_ipc_write_batch(small, codecs[c], &stream, &err);
        fr_batch_free(small);
        char name[64];
        snprintf(name, sizeof name, "stream_all_types_%s", fr_compression_name(codecs[c]));
        write_file(dir, name, stream.data, stream.len);
        fr_buf_free(&stream);
    }
    /* Bad inputs: empty, a lone EOS, a frame with a huge length, a schema only. */
    static const uint8_t eos[8] = {0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0};
    static const uint8_t huge[12] = {0xff, 0xff, 0xff, 0xff, 0xf0, 0xff, 0xff, 0x7f, 1, 2, 3, 4};
    write_file(dir, "empty", "", 0);
    write_file(dir, "eos_only", eos, sizeof eos);
    write_file(dir, "huge_length", huge, sizeof huge);
    fr_buf sm;
    fr_buf_init(&sm);
    fr_ipc_write_schema(fixed, &sm, &err);
    write_file(dir, "schema_only", sm.data, sm.len);
    fr_buf_free(&sm);
    for (int i = 0; i < nb; i++) fr_batch_free(batches[i]);
    fr_arena_free(arena);
    fr_schema_free(full);
    fr_schema_free(fixed);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "write") == 0) return cmd_write(argv[2]);
    if (argc == 3 && strcmp(argv[1], "read") == 0) return cmd_read(argv[2]);
    if (argc == 3 && strcmp(argv[1], "corpus") == 0) return cmd_corpus(argv[2]);
    fprintf(stderr, "usage: arrow_tool write DIR | read FILE | corpus DIR\n");
    return 2;
}
