/* test_lake_parquet.c — the Parquet writer and reader of the lake module: the lake schema,
 * round trips of every type with nulls and NOT NULL columns, dictionaries and their
 * fallback, row groups and pages, each codec, statistics, column pruning, rows given as two
 * batches side by side, writers reusing what writers before them leave, and corrupt
 * files (truncated, bad magic, bad footer length, bad page headers, bad compressed data),
 * which must fail cleanly. Randomized tests print their seed (FIRTH_TEST_SEED replays). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "arrow_test_util.h"
#include "lake/lake.h"
#include "lake/lake_parquet_int.h"
#include "lake/lake_parquet_page.h"
#include "lake/lake_thrift.h"

static char tmp_dir[4096];

static int setup(void **state)
{
    (void)state;
    const char *base = getenv("FIRTH_TEST_TMP");
    snprintf(tmp_dir, sizeof tmp_dir, "%s/lake_parquet.%d", base ? base : "/tmp", (int)getpid());
    fr_error err;
    fr_remove_tree(tmp_dir, &err);
    assert_int_equal(fr_mkdirs(tmp_dir, &err), 0);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    fr_error err;
    fr_remove_tree(tmp_dir, &err);
    return 0;
}

static const char *tmp_path(const char *name)
{
    static char path[4200];
    snprintf(path, sizeof path, "%s/%s", tmp_dir, name);
    unlink(path);
    return path;
}

/* Writes batches to path; returns the file info. */
static fr_parquet_file_info *write_file(const char *path, const fr_schema *s, fr_batch **b, int nb,
                                        const fr_parquet_options *o, const int32_t *ids)
{
    fr_error err;
    fr_parquet_writer *w = NULL;
    assert_int_equal(fr_parquet_writer_open(path, s, ids, o, &w, &err), 0);
    for (int i = 0; i < nb; i++) {
        if (fr_parquet_writer_write(w, b[i], &err) < 0) fail_msg("write: %s", err.msg);
    }
    fr_parquet_file_info *info = NULL;
    if (fr_parquet_writer_close(w, &info, &err) < 0) fail_msg("close: %s", err.msg);
    return info;
}

/* Reads every row group of a file (the chosen columns) and checks them against the model. */
static void check_file(fr_parquet_reader *r, tu_model *m, const int *cols, int ncols)
{
    fr_error err;
    int64_t row0 = 0;
    int all[FR_SCHEMA_COLUMNS_MAX];
    if (!cols) {
        ncols = fr_schema_num_fields(fr_parquet_schema(r));
        for (int i = 0; i < ncols; i++) all[i] = i;
        cols = all;
    }
    for (int g = 0; g < fr_parquet_num_row_groups(r); g++) {
        fr_batch *b = NULL;
        if (fr_parquet_read_row_group(r, g, cols, ncols, &b, &err) < 0) fail_msg("read: %s", err.msg);
        int64_t n = fr_batch_num_rows(b);
        assert_int_equal(n, fr_parquet_row_group_rows(r, g));
        /* Compare against the model's rows [row0, row0 + n). */
        int bad = 0;
        for (int j = 0; j < ncols; j++) {
            for (int64_t k = 0; k < n; k++) {
                fr_value got;
                fr_column_get(fr_batch_column(b, j), k, &got);
                const fr_value *want = &m->cells[(size_t)cols[j] * (size_t)m->rows + (size_t)(row0 + k)];
                if (!tu_value_eq(&got, want) && bad++ < 5)
                    fprintf(stderr, "row group %d column %d row %lld differs\n", g, cols[j], (long long)(row0 + k));
            }
        }
        assert_int_equal(bad, 0);
        fr_batch_free(b);
        row0 += n;
    }
    assert_int_equal(row0, m->rows);
}

/* Opens the file at path and checks all of it against the model (and its row-group count,
 * unless row_groups < 0). */
static void check_path(const char *path, tu_model *m, int64_t row_groups)
{
    fr_error err;
    fr_parquet_reader *r = NULL;
    if (fr_parquet_open(path, &r, &err) < 0) fail_msg("open: %s", err.msg);
    if (row_groups >= 0) assert_int_equal(fr_parquet_num_row_groups(r), row_groups);
    check_file(r, m, NULL, 0);
    fr_parquet_close(r);
}

/* ---- the lake schema --------------------------------------------------------------------- */

static void test_lake_schema(void **state)
{
    (void)state;
    static const tu_col cols[] = {{"id", "BIGINT"}, {"c", "CHAR(3)"}, {"v", "VARCHAR(9)"},
                                  {"t", "TIME(3)"}, {"ts", "TIMESTAMP(0)"}, {"tz", "TIMESTAMP_LTZ(3)"}};
    fr_schema *s = tu_schema(cols, 6, true);
    fr_schema *ls = NULL;
    int32_t ids[FR_SCHEMA_COLUMNS_MAX + 3];
    fr_error err;
    assert_int_equal(fr_lake_schema(s, &ls, ids, &err), 0);
    assert_int_equal(fr_schema_num_fields(ls), 9);
    assert_int_equal(fr_schema_field(ls, 1)->type.id, FR_T_STRING);
    assert_int_equal(fr_schema_field(ls, 2)->type.id, FR_T_STRING);
    assert_int_equal(fr_schema_field(ls, 3)->type.precision, 6);
    assert_int_equal(fr_schema_field(ls, 4)->type.precision, 6);
    assert_int_equal(fr_schema_field(ls, 5)->type.id, FR_T_TIMESTAMP_LTZ);
    assert_string_equal(fr_schema_field(ls, 6)->name, FR_LAKE_COL_BUCKET);
    assert_int_equal(fr_schema_field(ls, 6)->type.id, FR_T_INT);
    assert_false(fr_schema_field(ls, 6)->type.nullable);
    assert_int_equal(fr_schema_field(ls, 7)->type.id, FR_T_BIGINT);
    assert_false(fr_schema_field(ls, 7)->type.nullable);
    assert_int_equal(fr_schema_field(ls, 8)->type.id, FR_T_TIMESTAMP_LTZ);
    assert_int_equal(fr_schema_field(ls, 8)->type.precision, 6);
    assert_false(fr_schema_field(ls, 8)->type.nullable);
    for (int i = 0; i < 9; i++) assert_int_equal(ids[i], i + 1);
    fr_schema_free(ls);
    fr_schema_free(s);

    static const tu_col fine[] = {{"id", "BIGINT"}, {"ns", "TIMESTAMP(9)"}};
    s = tu_schema(fine, 2, true);
    assert_int_equal(fr_lake_schema(s, &ls, NULL, &err), FR_EUNSUPPORTED);
    assert_non_null(strstr(err.msg, "ns"));
    fr_schema_free(s);
    static const tu_col clash[] = {{"__offset", "BIGINT"}};
    s = tu_schema(clash, 1, true);
    assert_int_equal(fr_lake_schema(s, &ls, NULL, &err), FR_EINVAL);
    fr_schema_free(s);
}

static void test_codec_parse(void **state)
{
    (void)state;
    fr_parquet_codec c;
    fr_error err;
    assert_int_equal(fr_parquet_codec_parse("ZSTD", &c, &err), 0);
    assert_int_equal(c, FR_PARQUET_ZSTD);
    assert_int_equal(fr_parquet_codec_parse("snappy", &c, &err), 0);
    assert_int_equal(c, FR_PARQUET_SNAPPY);
    assert_int_equal(fr_parquet_codec_parse("Uncompressed", &c, &err), 0);
    assert_int_equal(c, FR_PARQUET_UNCOMPRESSED);
    assert_int_equal(fr_parquet_codec_parse("gzip", &c, &err), FR_EINVAL);
    fr_parquet_options o;
    fr_parquet_options_default(&o);
    assert_int_equal(o.codec, FR_PARQUET_ZSTD);
    assert_int_equal(o.zstd_level, 3);
    assert_int_equal(o.row_group_bytes, 128 << 20);
}

/* ---- round trips ------------------------------------------------------------------------- */

/* Every type whose precision Parquet keeps (p = 0 times are stored as milliseconds and come
 * back as precision 3: test_time_precision_zero). */
static const tu_col rt_cols[] = {
    {"b", "BOOLEAN"}, {"i8", "TINYINT"}, {"i16", "SMALLINT"}, {"i32", "INT"}, {"i64", "BIGINT"},
    {"f32", "FLOAT"}, {"f64", "DOUBLE"}, {"dec9", "DECIMAL(9, 3)"}, {"dec18", "DECIMAL(18, 4)"},
    {"dec20", "DECIMAL(20, 4)"}, {"dec38", "DECIMAL(38, 0)"}, {"dec1", "DECIMAL(1, 1)"},
    {"ch", "CHAR(5)"}, {"vc", "VARCHAR(10)"}, {"s", "STRING"}, {"by", "BYTES"}, {"d", "DATE"},
    {"t3", "TIME(3)"}, {"t2", "TIME(2)"}, {"t6", "TIME(6)"}, {"t9", "TIME(9)"},
    {"ts3", "TIMESTAMP(3)"}, {"ts5", "TIMESTAMP(5)"}, {"ts6", "TIMESTAMP(6)"}, {"ts9", "TIMESTAMP(9)"},
    {"ltz3", "TIMESTAMP_LTZ(3)"}, {"ltz6", "TIMESTAMP_LTZ(6)"}, {"ltz9", "TIMESTAMP_LTZ(9)"},
};
#define RT_NCOLS ((int)(sizeof rt_cols / sizeof rt_cols[0]))

static void round_trip(bool nullable, int null_pct, int64_t rows, const fr_parquet_options *o,
                       int *nrgs)
{
    fr_schema *s = tu_schema(rt_cols, RT_NCOLS, nullable);
    tu_model m;
    tu_model_random(&m, s, rows, null_pct);
    fr_batch *b = tu_build(s, &m);
    int32_t ids[RT_NCOLS];
    for (int i = 0; i < RT_NCOLS; i++) ids[i] = 7 + 2 * i;
    const char *path = tmp_path("rt.parquet");
    fr_parquet_file_info *info = write_file(path, s, &b, 1, o, ids);
    assert_int_equal(info->rows, rows);
    assert_int_equal(info->ncols, RT_NCOLS);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(info->file_bytes, st.st_size);
    fr_error err;
    fr_parquet_reader *r = NULL;
    if (fr_parquet_open(path, &r, &err) < 0) fail_msg("open: %s", err.msg);
    assert_int_equal(fr_parquet_num_rows(r), rows);
    assert_int_equal(fr_parquet_num_row_groups(r), info->nrow_groups);
    const fr_schema *rs = fr_parquet_schema(r);
    for (int i = 0; i < RT_NCOLS; i++) {
        const fr_type *t = &fr_schema_field(rs, i)->type, *w = &fr_schema_field(s, i)->type;
        assert_string_equal(fr_schema_field(rs, i)->name, rt_cols[i].name);
        assert_int_equal(t->nullable, nullable);
        assert_int_equal(fr_parquet_field_id(r, i), 7 + 2 * i);
        assert_int_equal(info->cols[i].field_id, 7 + 2 * i);
        assert_int_equal(info->cols[i].values, rows);
        if (fr_type_is_string(w->id)) assert_int_equal(t->id, FR_T_STRING);
        else assert_int_equal(t->id, w->id);
    }
    check_file(r, &m, NULL, 0);
    *nrgs = fr_parquet_num_row_groups(r);
    fr_parquet_close(r);
    fr_parquet_file_info_free(info);
    fr_batch_free(b);
    tu_model_free(&m);
    fr_schema_free(s);
}

static void test_round_trip_types(void **state)
{
    (void)state;
    tu_pick_seed("test_round_trip_types");
    int nrgs;
    round_trip(true, 20, 3000, NULL, &nrgs);
    assert_int_equal(nrgs, 1);
    round_trip(false, 0, 1500, NULL, &nrgs);
    round_trip(true, 100, 300, NULL, &nrgs); /* every cell NULL */
    round_trip(true, 0, 1, NULL, &nrgs);
}

static void test_round_trip_codecs(void **state)
{
    (void)state;
    tu_pick_seed("test_round_trip_codecs");
    fr_parquet_codec codecs[] = {FR_PARQUET_UNCOMPRESSED, FR_PARQUET_SNAPPY, FR_PARQUET_ZSTD};
    for (int c = 0; c < 3; c++) {
        fr_parquet_options o;
        fr_parquet_options_default(&o);
        o.codec = codecs[c];
        o.zstd_level = 1;
        int nrgs;
        round_trip(true, 10, 2000, &o, &nrgs);
    }
}

static void test_row_groups_and_pages(void **state)
{
    (void)state;
    tu_pick_seed("test_row_groups_and_pages");
    fr_parquet_options o;
    fr_parquet_options_default(&o);
    o.row_group_bytes = 64 << 10;
    o.page_bytes = 2000;
    int nrgs;
    round_trip(true, 15, 12000, &o, &nrgs);
    assert_true(nrgs > 3);

    /* Several batches and row-group offsets in the info. */
    fr_schema *s = tu_schema(rt_cols, 5, true);
    tu_model m;
    tu_model_random(&m, s, 9000, 10);
    fr_batch *whole = tu_build(s, &m), *parts[3];
    fr_error err;
    for (int i = 0; i < 3; i++) assert_int_equal(fr_batch_slice(whole, i * 3000, 3000, &parts[i], &err), 0);
    o.row_group_bytes = 20000;
    const char *path = tmp_path("groups.parquet");
    fr_parquet_file_info *info = write_file(path, s, parts, 3, &o, NULL);
    assert_true(info->nrow_groups > 2);
    assert_int_equal(info->row_group_offsets[0], 4);
    for (int g = 1; g < info->nrow_groups; g++) assert_true(info->row_group_offsets[g] > info->row_group_offsets[g - 1]);
    fr_parquet_reader *r = NULL;
    assert_int_equal(fr_parquet_open(path, &r, &err), 0);
    assert_int_equal(fr_parquet_field_id(r, 0), -1);
    check_file(r, &m, NULL, 0);
    fr_parquet_close(r);
    fr_parquet_file_info_free(info);
    for (int i = 0; i < 3; i++) fr_batch_free(parts[i]);
    fr_batch_free(whole);
    tu_model_free(&m);
    fr_schema_free(s);
}

/* A page whose definition levels outgrow the room kept before its values (runs of 8 nulls
 * and 8 values encode as 2 bytes per 8 rows: 5000 bytes for a 20000-row page), so the writer
 * moves the values up; and pages of values right after it. */
static void test_long_levels(void **state)
{
    (void)state;
    tu_pick_seed("test_long_levels");
    const int64_t rows = 50000;
    fr_schema *s = tu_schema(rt_cols + 3, 2, true); /* INT and BIGINT */
    tu_model m;
    tu_model_random(&m, s, rows, 0);
    uint8_t *defs = malloc((size_t)rows);
    assert_non_null(defs);
    for (int64_t r = 0; r < rows; r++) {
        defs[r] = (r / 8) % 2 == 0 || r >= 45000;
        if (!defs[r]) *tu_cell(&m, 0, r) = fr_value_null(fr_schema_field(s, 0)->type);
    }
    fr_buf lv;
    fr_buf_init(&lv);
    fr_error err;
    assert_int_equal(pq_rle_encode_u8(defs, 20000, 1, &lv, &err), 0);
    assert_true(lv.len > 4096); /* the writer's PQ_PAGE_HEAD */
    fr_buf_free(&lv);
    free(defs);
    fr_batch *b = tu_build(s, &m);
    const char *path = tmp_path("levels.parquet");
    fr_parquet_file_info *info = write_file(path, s, &b, 1, NULL, NULL);
    assert_int_equal(info->cols[0].nulls, 22496); /* 2812 runs of 8 below row 45000 */
    check_path(path, &m, -1);
    fr_parquet_file_info_free(info);
    fr_batch_free(b);
    tu_model_free(&m);
    fr_schema_free(s);
}

/* Writers one after another reuse the row-group buffers and compressor a finished writer
 * leaves: files of the same column count with other data, other codecs and other column
 * types, and of another column count in between, all read back as written. */
static void test_writer_reuse(void **state)
{
    (void)state;
    tu_pick_seed("test_writer_reuse");
    fr_parquet_codec codecs[] = {FR_PARQUET_ZSTD, FR_PARQUET_SNAPPY, FR_PARQUET_ZSTD,
                                 FR_PARQUET_UNCOMPRESSED, FR_PARQUET_ZSTD};
    int first[] = {0, 10, 3, 12, 0};
    int ncols[] = {6, 6, 4, 6, 6};
    for (int k = 0; k < 5; k++) {
        fr_schema *s = tu_schema(rt_cols + first[k], ncols[k], true);
        tu_model m;
        tu_model_random(&m, s, 4000 + 3000 * k, 5 * k);
        fr_batch *b = tu_build(s, &m);
        fr_parquet_options o;
        fr_parquet_options_default(&o);
        o.codec = codecs[k];
        o.row_group_bytes = k % 2 ? 40000 : 300000;
        o.page_bytes = 3000;
        const char *path = tmp_path("reuse.parquet");
        fr_parquet_file_info *info = write_file(path, s, &b, 1, &o, NULL);
        check_path(path, &m, info->nrow_groups);
        fr_parquet_file_info_free(info);
        fr_batch_free(b);
        tu_model_free(&m);
        fr_schema_free(s);
    }
}

/* Rows given as two batches side by side (fr_parquet_writer_write2) read back as one; batches
 * whose columns are not the file's, or whose row counts differ, are refused. */
static void test_write_two_batches(void **state)
{
    (void)state;
    tu_pick_seed("test_write_two_batches");
    fr_schema *s = tu_schema(rt_cols + 10, 6, true);
    tu_model m;
    tu_model_random(&m, s, 5000, 10);
    fr_batch *whole = tu_build(s, &m), *a = NULL, *b = NULL, *odd = NULL;
    int left[] = {0, 1, 2, 3}, right[] = {4, 5}, swapped[] = {5, 4};
    fr_error err;
    assert_int_equal(fr_batch_project(whole, left, 4, &a, &err), 0);
    assert_int_equal(fr_batch_project(whole, right, 2, &b, &err), 0);
    const char *path = tmp_path("two.parquet");
    fr_parquet_options o;
    fr_parquet_options_default(&o);
    o.row_group_bytes = 50000;
    fr_parquet_writer *w = NULL;
    assert_int_equal(fr_parquet_writer_open(path, s, NULL, &o, &w, &err), 0);
    assert_int_equal(fr_batch_project(whole, swapped, 2, &odd, &err), 0);
    assert_int_equal(fr_parquet_writer_write2(w, a, odd, &err), FR_EINVAL);
    fr_batch_free(odd);
    odd = NULL;
    assert_int_equal(fr_batch_slice(b, 0, 10, &odd, &err), 0);
    assert_int_equal(fr_parquet_writer_write2(w, a, odd, &err), FR_EINVAL);
    fr_batch_free(odd);
    if (fr_parquet_writer_write2(w, a, b, &err) < 0) fail_msg("write2: %s", err.msg);
    fr_parquet_file_info *info = NULL;
    if (fr_parquet_writer_close(w, &info, &err) < 0) fail_msg("close: %s", err.msg);
    assert_true(info->nrow_groups > 1);
    check_path(path, &m, -1);
    fr_parquet_file_info_free(info);
    fr_batch_free(a);
    fr_batch_free(b);
    fr_batch_free(whole);
    tu_model_free(&m);
    fr_schema_free(s);
}

static void test_time_precision_zero(void **state)
{
    (void)state;
    static const tu_col cols[] = {{"t0", "TIME(0)"}, {"ts0", "TIMESTAMP(0)"}, {"tz0", "TIMESTAMP_LTZ(0)"}};
    fr_schema *s = tu_schema(cols, 3, true);
    fr_builder *bld;
    fr_error err;
    assert_int_equal(fr_builder_new(s, &bld, &err), 0);
    int64_t vals[] = {0, 86399, -2208988800ll, 4102444800ll, 12345};
    for (int i = 0; i < 5; i++) {
        assert_int_equal(fr_builder_append_i64(bld, 0, vals[i] < 0 || vals[i] > 86399 ? 7 : vals[i], &err), 0);
        assert_int_equal(fr_builder_append_i64(bld, 1, vals[i], &err), 0);
        assert_int_equal(fr_builder_append_i64(bld, 2, vals[i], &err), 0);
    }
    fr_batch *b;
    assert_int_equal(fr_builder_finish(bld, &b, &err), 0);
    const char *path = tmp_path("p0.parquet");
    fr_parquet_file_info *info = write_file(path, s, &b, 1, NULL, NULL);
    /* The file info keeps the column's own unit. */
    assert_true(info->cols[1].has_minmax);
    assert_int_equal(info->cols[1].min.v.i, -2208988800ll);
    assert_int_equal(info->cols[1].max.v.i, 4102444800ll);
    fr_parquet_reader *r;
    assert_int_equal(fr_parquet_open(path, &r, &err), 0);
    const fr_schema *rs = fr_parquet_schema(r);
    assert_int_equal(fr_schema_field(rs, 0)->type.precision, 3);
    assert_int_equal(fr_schema_field(rs, 1)->type.precision, 3);
    assert_int_equal(fr_schema_field(rs, 2)->type.id, FR_T_TIMESTAMP_LTZ);
    fr_batch *got;
    int c3[] = {0, 1, 2};
    assert_int_equal(fr_parquet_read_row_group(r, 0, c3, 3, &got, &err), 0);
    for (int i = 0; i < 5; i++) {
        fr_value v;
        fr_column_get(fr_batch_column(got, 1), i, &v);
        assert_int_equal(v.v.i, vals[i] * 1000);
        fr_column_get(fr_batch_column(got, 2), i, &v);
        assert_int_equal(v.v.i, vals[i] * 1000);
    }
    fr_batch_free(got);
    fr_parquet_close(r);
    fr_parquet_file_info_free(info);
    fr_batch_free(b);
    fr_builder_free(bld);
    fr_schema_free(s);
}

/* ---- dictionaries ------------------------------------------------------------------------ */

/* The page types and encodings of column col's chunk in row group 0. */
static int chunk_pages(const uint8_t *file, size_t n, int col, int *types, int *encs, int max)
{
    fr_error err;
    uint32_t flen = fr_get_u32le(file + n - 8);
    fr_arena *a = fr_arena_new(4096);
    pq_file_meta m;
    assert_int_equal(pq_meta_decode(file + n - 8 - flen, flen, a, &m, "test", &err), 0);
    const pq_chunk *c = &m.rgs[0].cols[col];
    int64_t pos = c->dictionary_page_offset >= 4 ? c->dictionary_page_offset : c->data_page_offset;
    int64_t end = pos + c->total_compressed;
    int k = 0;
    while (pos < end && k < max) {
        pq_page_header h;
        size_t used;
        assert_int_equal(pq_page_header_decode(file + pos, (size_t)(end - pos), &h, &used, "test", &err), 0);
        types[k] = h.type;
        encs[k++] = h.encoding;
        pos += (int64_t)used + h.compressed_size;
    }
    assert_int_equal(pos, end);
    fr_arena_free(a);
    return k;
}

static void test_dictionary_and_fallback(void **state)
{
    (void)state;
    static const tu_col cols[] = {{"rep", "STRING"}, {"uniq", "BIGINT NOT NULL"}, {"grow", "STRING"},
                                  {"few", "INT"}};
    fr_schema *all_null = tu_schema(cols, 4, true), *s = NULL;
    fr_field f[4];
    for (int i = 0; i < 4; i++) f[i] = *fr_schema_field(all_null, i);
    f[1].type.nullable = false;
    fr_error err;
    assert_int_equal(fr_schema_new(f, 4, 0, &s, &err), 0);
    fr_schema_free(all_null);
    fr_builder *bld;
    assert_int_equal(fr_builder_new(s, &bld, &err), 0);
    int64_t rows = 30000;
    char text[64];
    for (int64_t r = 0; r < rows; r++) {
        int n = snprintf(text, sizeof text, "category-%d", (int)(r % 13));
        if (r % 10 == 0) assert_int_equal(fr_builder_append_null(bld, 0, &err), 0);
        else assert_int_equal(fr_builder_append_bytes(bld, 0, text, (size_t)n, &err), 0);
        assert_int_equal(fr_builder_append_i64(bld, 1, r * 7919, &err), 0);
        /* Repetitive at first (so the first page keeps the dictionary), then all distinct. */
        n = r < 5000 ? snprintf(text, sizeof text, "g%d", (int)(r % 50))
                     : snprintf(text, sizeof text, "distinct-value-%lld", (long long)r);
        assert_int_equal(fr_builder_append_bytes(bld, 2, text, (size_t)n, &err), 0);
        assert_int_equal(fr_builder_append_i64(bld, 3, r % 3, &err), 0);
    }
    fr_batch *b;
    assert_int_equal(fr_builder_finish(bld, &b, &err), 0);
    fr_parquet_options o;
    fr_parquet_options_default(&o);
    o.page_bytes = 16 << 10;
    o.dict_bytes_max = 8 << 10;
    const char *path = tmp_path("dict.parquet");
    fr_parquet_file_info *info = write_file(path, s, &b, 1, &o, NULL);
    uint8_t *file;
    size_t n;
    assert_int_equal(fr_read_file(path, 1 << 26, &file, &n, &err), 0);
    int types[4096], encs[4096];
    /* rep: a dictionary page, then dictionary-encoded pages only. */
    int k = chunk_pages(file, n, 0, types, encs, 4096);
    assert_int_equal(types[0], PQ_PAGE_DICTIONARY);
    for (int i = 1; i < k; i++) assert_int_equal(encs[i], PQ_ENC_RLE_DICTIONARY);
    /* uniq: the dictionary does not pay off: no dictionary page, PLAIN pages. */
    k = chunk_pages(file, n, 1, types, encs, 4096);
    for (int i = 0; i < k; i++) {
        assert_int_equal(types[i], PQ_PAGE_DATA);
        assert_int_equal(encs[i], PQ_ENC_PLAIN);
    }
    /* grow: dictionary pages first, then PLAIN once the dictionary passed 8 KiB. */
    k = chunk_pages(file, n, 2, types, encs, 4096);
    assert_int_equal(types[0], PQ_PAGE_DICTIONARY);
    assert_int_equal(encs[1], PQ_ENC_RLE_DICTIONARY);
    assert_int_equal(encs[k - 1], PQ_ENC_PLAIN);
    k = chunk_pages(file, n, 3, types, encs, 4096);
    assert_int_equal(types[0], PQ_PAGE_DICTIONARY);
    /* And everything reads back. */
    fr_parquet_reader *r;
    assert_int_equal(fr_parquet_open_mem(file, n, &r, &err), 0);
    fr_batch *got;
    int all[] = {0, 1, 2, 3};
    assert_int_equal(fr_parquet_read_row_group(r, 0, all, 4, &got, &err), 0);
    for (int64_t row = 0; row < rows; row++) {
        for (int c = 0; c < 4; c++) {
            fr_value want, have;
            fr_column_get(fr_batch_column(b, c), row, &want);
            fr_column_get(fr_batch_column(got, c), row, &have);
            if (!tu_value_eq(&want, &have)) fail_msg("column %d row %lld differs", c, (long long)row);
        }
    }
    fr_batch_free(got);
    fr_parquet_close(r);
    fr_free(file);
    fr_parquet_file_info_free(info);
    fr_batch_free(b);
    fr_builder_free(bld);
    fr_schema_free(s);
}

/* ---- statistics -------------------------------------------------------------------------- */

static void test_statistics(void **state)
{
    (void)state;
    static const tu_col cols[] = {{"i", "INT"}, {"s", "STRING"}, {"d", "DECIMAL(30, 2)"},
                                  {"f", "DOUBLE"}, {"allnull", "BIGINT"}, {"b", "BOOLEAN"},
                                  {"dec9", "DECIMAL(9, 2)"}, {"long", "STRING"}};
    fr_schema *s = tu_schema(cols, 8, true);
    fr_builder *bld;
    fr_error err;
    assert_int_equal(fr_builder_new(s, &bld, &err), 0);
    const char *strs[] = {"b", "\xc3\xa9t\xc3\xa9", "a", "abc", "B"};
    char big[400];
    memset(big, 'z', sizeof big);
    for (int r = 0; r < 100; r++) {
        if (r % 4 == 0) assert_int_equal(fr_builder_append_null(bld, 0, &err), 0);
        else assert_int_equal(fr_builder_append_i64(bld, 0, (r * 37) % 101 - 50, &err), 0);
        assert_int_equal(fr_builder_append_bytes(bld, 1, strs[r % 5], strlen(strs[r % 5]), &err), 0);
        assert_int_equal(fr_builder_append_i128(bld, 2, (fr_i128)(r - 60) * 1000000000000ll, &err), 0);
        if (r == 7) assert_int_equal(fr_builder_append_f64(bld, 3, 0.0 / 0.0, &err), 0);
        else assert_int_equal(fr_builder_append_f64(bld, 3, r * 0.5 - 10, &err), 0);
        assert_int_equal(fr_builder_append_null(bld, 4, &err), 0);
        assert_int_equal(fr_builder_append_bool(bld, 5, r > 50, &err), 0);
        assert_int_equal(fr_builder_append_i128(bld, 6, -r, &err), 0);
        assert_int_equal(fr_builder_append_bytes(bld, 7, big, r == 50 ? sizeof big : 3, &err), 0);
    }
    fr_batch *b;
    assert_int_equal(fr_builder_finish(bld, &b, &err), 0);
    const char *path = tmp_path("stats.parquet");
    fr_parquet_file_info *info = write_file(path, s, &b, 1, NULL, NULL);
    int64_t imin = INT64_MAX, imax = INT64_MIN;
    for (int r = 0; r < 100; r++) {
        if (r % 4 == 0) continue;
        int64_t v = (r * 37) % 101 - 50;
        imin = v < imin ? v : imin;
        imax = v > imax ? v : imax;
    }
    assert_int_equal(info->cols[0].nulls, 25);
    assert_true(info->cols[0].has_minmax);
    assert_int_equal(info->cols[0].min.v.i, imin);
    assert_int_equal(info->cols[0].max.v.i, imax);
    assert_int_equal(info->cols[1].min.v.s.len, 1);
    assert_memory_equal(info->cols[1].min.v.s.ptr, "B", 1); /* byte order: 'B' < 'a' */
    assert_memory_equal(info->cols[1].max.v.s.ptr, "\xc3\xa9t\xc3\xa9", 5);
    assert_true(info->cols[2].min.v.d == (fr_i128)-60 * 1000000000000ll);
    assert_true(info->cols[3].min.v.f == -10 && info->cols[3].max.v.f == 39.5);
    assert_false(info->cols[4].has_minmax);
    assert_int_equal(info->cols[4].nulls, 100);
    assert_true(info->cols[4].bytes > 0);
    assert_false(info->cols[7].has_minmax); /* a value beyond the statistics limit */

    fr_parquet_reader *r;
    assert_int_equal(fr_parquet_open(path, &r, &err), 0);
    fr_column_stats st[8];
    assert_int_equal(fr_parquet_row_group_stats(r, 0, st, &err), 0);
    assert_int_equal(st[0].null_count, 25);
    assert_true(st[0].has_minmax);
    assert_int_equal(st[0].min.v.i, imin);
    assert_int_equal(st[0].max.v.i, imax);
    assert_true(st[1].has_minmax);
    assert_int_equal(st[1].max.v.s.len, 5);
    assert_true(st[2].has_minmax);
    assert_true(st[2].max.v.d == (fr_i128)39 * 1000000000000ll);
    assert_int_equal(st[2].min.type.id, FR_T_DECIMAL);
    assert_true(st[3].has_minmax);
    assert_true(st[3].max.v.f == 39.5);
    assert_false(st[4].has_minmax);
    assert_int_equal(st[4].null_count, 100);
    assert_true(st[5].has_minmax);
    assert_false(st[5].min.v.b);
    assert_true(st[5].max.v.b);
    assert_true(st[6].min.v.d == -99 && st[6].max.v.d == 0);
    assert_false(st[7].has_minmax);
    assert_int_equal(fr_parquet_row_group_stats(r, 1, st, &err), FR_ERANGE);
    fr_parquet_close(r);
    fr_parquet_file_info_free(info);
    fr_batch_free(b);
    fr_builder_free(bld);
    fr_schema_free(s);
}

/* ---- pruning ----------------------------------------------------------------------------- */

/* Overwrites the chunk of column col in every row group with garbage: a read that touches
 * it must fail, a read of the other columns must not notice. */
static void smash_chunk(uint8_t *file, size_t n, int col)
{
    fr_error err;
    uint32_t flen = fr_get_u32le(file + n - 8);
    fr_arena *a = fr_arena_new(4096);
    pq_file_meta m;
    assert_int_equal(pq_meta_decode(file + n - 8 - flen, flen, a, &m, "test", &err), 0);
    for (int g = 0; g < m.nrgs; g++) {
        const pq_chunk *c = &m.rgs[g].cols[col];
        int64_t pos = c->dictionary_page_offset >= 4 ? c->dictionary_page_offset : c->data_page_offset;
        memset(file + pos, 0xEE, (size_t)c->total_compressed);
    }
    fr_arena_free(a);
}

static void test_pruning(void **state)
{
    (void)state;
    tu_pick_seed("test_pruning");
    fr_schema *s = tu_schema(rt_cols, RT_NCOLS, true);
    tu_model m;
    tu_model_random(&m, s, 4000, 10);
    fr_batch *b = tu_build(s, &m);
    fr_parquet_options o;
    fr_parquet_options_default(&o);
    o.row_group_bytes = 100000;
    const char *path = tmp_path("prune.parquet");
    fr_parquet_file_info *info = write_file(path, s, &b, 1, &o, NULL);
    uint8_t *file;
    size_t n;
    fr_error err;
    assert_int_equal(fr_read_file(path, 1 << 26, &file, &n, &err), 0);
    for (int c = 0; c < RT_NCOLS; c++)
        if (c != 4 && c != 14) smash_chunk(file, n, c);
    fr_parquet_reader *r;
    assert_int_equal(fr_parquet_open_mem(file, n, &r, &err), 0);
    int two[] = {14, 4};
    check_file(r, &m, two, 2);
    int one[] = {3};
    fr_batch *got = NULL;
    assert_int_not_equal(fr_parquet_read_row_group(r, 0, one, 1, &got, &err), 0);
    assert_null(got);
    int bad[] = {RT_NCOLS};
    assert_int_equal(fr_parquet_read_row_group(r, 0, bad, 1, &got, &err), FR_EINVAL);
    assert_int_equal(fr_parquet_read_row_group(r, 99, two, 2, &got, &err), FR_ERANGE);
    fr_parquet_close(r);
    /* The same through a file: only the chosen columns' bytes are read. */
    unlink(path);
    assert_int_equal(fr_write_file_atomic(path, file, n, &err), 0);
    assert_int_equal(fr_parquet_open(path, &r, &err), 0);
    check_file(r, &m, two, 2);
    fr_parquet_close(r);
    fr_free(file);
    fr_parquet_file_info_free(info);
    fr_batch_free(b);
    tu_model_free(&m);
    fr_schema_free(s);
}

/* Row groups hold at most FR_BATCH_ROWS_MAX rows, however small the rows, so that every row
 * group the writer makes reads back as one batch. */
static void test_row_group_rows_limit(void **state)
{
    (void)state;
    fr_field f = {.name = "bit", .type = fr_type_of(FR_T_BOOLEAN)};
    f.type.nullable = false;
    fr_schema *s;
    fr_error err;
    assert_int_equal(fr_schema_new(&f, 1, 0, &s, &err), 0);
    /* A batch holds FR_BATCH_ROWS_MAX rows at most: two batches, 1000 rows past the limit. */
    int64_t rows = FR_BATCH_ROWS_MAX;
    uint8_t *bufs[3] = {NULL, NULL, fr_malloc((size_t)rows / 8 + 1)};
    for (int64_t i = 0; i < rows / 8 + 1; i++) bufs[2][i] = (uint8_t)(i * 37);
    fr_batch *b[2];
    assert_int_equal(fr_batch_from_buffers(s, rows, bufs, NULL, &b[0], &err), 0);
    assert_int_equal(fr_batch_slice(b[0], 5000, 1000, &b[1], &err), 0);
    const char *path = tmp_path("bits.parquet");
    fr_parquet_file_info *info = write_file(path, s, b, 2, NULL, NULL);
    assert_int_equal(info->nrow_groups, 2);
    fr_parquet_reader *r;
    assert_int_equal(fr_parquet_open(path, &r, &err), 0);
    assert_int_equal(fr_parquet_row_group_rows(r, 0), FR_BATCH_ROWS_MAX);
    assert_int_equal(fr_parquet_row_group_rows(r, 1), 1000);
    int col = 0;
    fr_batch *got;
    assert_int_equal(fr_parquet_read_row_group(r, 1, &col, 1, &got, &err), 0);
    for (int64_t i = 0; i < 1000; i++) {
        fr_value a, x;
        fr_column_get(fr_batch_column(got, 0), i, &a);
        fr_column_get(fr_batch_column(b[1], 0), i, &x);
        assert_int_equal(a.v.b, x.v.b);
    }
    fr_batch_free(got);
    fr_parquet_close(r);
    fr_parquet_file_info_free(info);
    fr_batch_free(b[0]);
    fr_batch_free(b[1]);
    fr_schema_free(s);
}

/* ---- writer errors ----------------------------------------------------------------------- */

static void test_writer_errors(void **state)
{
    (void)state;
    fr_schema *s = tu_schema(rt_cols, 3, true), *other = tu_schema(rt_cols + 1, 3, true);
    fr_error err;
    const char *path = tmp_path("exists.parquet");
    assert_int_equal(fr_write_file_atomic(path, "x", 1, &err), 0);
    fr_parquet_writer *w = NULL;
    assert_int_equal(fr_parquet_writer_open(path, s, NULL, NULL, &w, &err), FR_EEXIST);
    path = tmp_path("w.parquet");
    fr_parquet_options o;
    fr_parquet_options_default(&o);
    o.page_bytes = 0;
    assert_int_equal(fr_parquet_writer_open(path, s, NULL, &o, &w, &err), FR_EINVAL);
    o.page_bytes = 1 << 20;
    o.codec = (fr_parquet_codec)2;
    assert_int_equal(fr_parquet_writer_open(path, s, NULL, &o, &w, &err), FR_EINVAL);
    assert_false(fr_path_exists(path));
    assert_int_equal(fr_parquet_writer_open(path, s, NULL, NULL, &w, &err), 0);
    assert_true(fr_path_exists(path));
    tu_model m;
    tu_model_random(&m, other, 10, 10);
    fr_batch *b = tu_build(other, &m);
    assert_int_equal(fr_parquet_writer_write(w, b, &err), FR_EINVAL);
    fr_parquet_writer_abort(w);
    assert_false(fr_path_exists(path));
    /* An empty file (no rows) is valid and reads as zero row groups. */
    assert_int_equal(fr_parquet_writer_open(path, s, NULL, NULL, &w, &err), 0);
    assert_true(fr_parquet_writer_bytes(w) == 0);
    fr_parquet_file_info *info = NULL;
    assert_int_equal(fr_parquet_writer_close(w, &info, &err), 0);
    assert_int_equal(info->rows, 0);
    assert_int_equal(info->nrow_groups, 0);
    fr_parquet_reader *r;
    assert_int_equal(fr_parquet_open(path, &r, &err), 0);
    assert_int_equal(fr_parquet_num_row_groups(r), 0);
    fr_parquet_close(r);
    fr_parquet_file_info_free(info);
    assert_int_equal(fr_parquet_open(tmp_path("missing.parquet"), &r, &err), FR_ENOTFOUND);
    fr_batch_free(b);
    tu_model_free(&m);
    fr_schema_free(s);
    fr_schema_free(other);
}

/* ---- corrupt files ----------------------------------------------------------------------- */

/* Opens bytes and reads every row group; returns the first error (0 when all succeeded). */
static int open_and_read(const uint8_t *p, size_t n, fr_error *err)
{
    fr_parquet_reader *r = NULL;
    int rc = fr_parquet_open_mem(p, n, &r, err);
    if (rc < 0) return rc;
    int ncols = fr_schema_num_fields(fr_parquet_schema(r));
    int *cols = malloc(sizeof(int) * (size_t)ncols);
    for (int i = 0; i < ncols; i++) cols[i] = i;
    fr_column_stats *st = calloc((size_t)ncols, sizeof *st);
    for (int g = 0; g < fr_parquet_num_row_groups(r) && rc == 0; g++) {
        fr_batch *b = NULL;
        rc = fr_parquet_row_group_stats(r, g, st, err);
        if (rc == 0) rc = fr_parquet_read_row_group(r, g, cols, ncols, &b, err);
        fr_batch_free(b);
    }
    free(cols);
    free(st);
    fr_parquet_close(r);
    return rc;
}

static uint8_t *small_file(size_t *n, fr_parquet_codec codec)
{
    fr_schema *s = tu_schema(rt_cols, RT_NCOLS, true);
    tu_model m;
    tu_model_random(&m, s, 60, 20);
    fr_batch *b = tu_build(s, &m);
    fr_parquet_options o;
    fr_parquet_options_default(&o);
    o.codec = codec;
    o.page_bytes = 200;
    o.row_group_bytes = 3000;
    const char *path = tmp_path("small.parquet");
    fr_parquet_file_info *info = write_file(path, s, &b, 1, &o, NULL);
    uint8_t *file;
    fr_error err;
    assert_int_equal(fr_read_file(path, 1 << 26, &file, n, &err), 0);
    fr_parquet_file_info_free(info);
    fr_batch_free(b);
    tu_model_free(&m);
    fr_schema_free(s);
    return file;
}

static void test_corrupt_files(void **state)
{
    (void)state;
    tu_pick_seed("test_corrupt_files");
    size_t n;
    uint8_t *file = small_file(&n, FR_PARQUET_ZSTD);
    fr_error err;
    assert_int_equal(open_and_read(file, n, &err), 0);
    /* Every truncation fails cleanly. */
    for (size_t len = 0; len < n; len += (len < 64 || n - len < 64) ? 1 : 7) {
        int rc = open_and_read(file, len, &err);
        assert_true(rc < 0);
    }
    uint8_t *copy = malloc(n);
    /* Bad magic at either end. */
    memcpy(copy, file, n);
    copy[0] = 'X';
    assert_int_equal(open_and_read(copy, n, &err), FR_ECORRUPT);
    assert_non_null(strstr(err.msg, "magic"));
    memcpy(copy, file, n);
    copy[n - 2] = 'X';
    assert_int_equal(open_and_read(copy, n, &err), FR_ECORRUPT);
    /* Footer lengths too large, beyond the limit, or too small. */
    uint32_t lens[] = {(uint32_t)n, (uint32_t)n - 11, FR_PARQUET_FOOTER_BYTES_MAX + 1u, 0xFFFFFFFFu, 1, 0};
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        memcpy(copy, file, n);
        fr_put_u32le(copy + n - 8, lens[i]);
        assert_int_equal(open_and_read(copy, n, &err), FR_ECORRUPT);
    }
    /* Random byte flips anywhere: an error or a success, never a crash (ASan checks reads). */
    for (int k = 0; k < 3000; k++) {
        memcpy(copy, file, n);
        int flips = 1 + (int)tu_range(0, 3);
        for (int f = 0; f < flips; f++) copy[tu_range(0, (int64_t)n - 1)] ^= (uint8_t)(1 + tu_range(0, 254));
        (void)open_and_read(copy, n, &err);
    }
    /* Bad page headers: garbage where the first page header of the first chunk starts. */
    memcpy(copy, file, n);
    memset(copy + 4, 0xFF, 12);
    assert_int_equal(open_and_read(copy, n, &err), FR_ECORRUPT);
    /* Bad compressed data: the first page's body (after its header) scrambled. */
    memcpy(copy, file, n);
    pq_page_header h;
    size_t used;
    assert_int_equal(pq_page_header_decode(copy + 4, n - 4, &h, &used, "test", &err), 0);
    memset(copy + 4 + used, 0x55, (size_t)h.compressed_size);
    assert_int_equal(open_and_read(copy, n, &err), FR_ECORRUPT);
    free(copy);
    fr_free(file);

    /* SNAPPY's decoder too. */
    file = small_file(&n, FR_PARQUET_SNAPPY);
    assert_int_equal(open_and_read(file, n, &err), 0);
    assert_int_equal(pq_page_header_decode(file + 4, n - 4, &h, &used, "test", &err), 0);
    memset(file + 4 + used, 0xFF, (size_t)h.compressed_size);
    assert_int_equal(open_and_read(file, n, &err), FR_ECORRUPT);
    fr_free(file);
}

/* A chunk of one data page (v1, PLAIN INT32, REQUIRED) with a CRC, decoded directly: a good
 * CRC reads, a bad one is FR_ECORRUPT; the CRC is zlib's CRC-32. */
static void test_page_crc(void **state)
{
    (void)state;
    assert_int_equal(pq_crc32((const uint8_t *)"123456789", 9), 0xCBF43926u);
    uint8_t body[16];
    for (int i = 0; i < 4; i++) fr_put_u32le(body + 4 * i, (uint32_t)(i * 1000 - 7));
    fr_error err;
    for (int bad = 0; bad < 2; bad++) {
        fr_buf chunk;
        fr_buf_init(&chunk);
        fr_thrift_w tw;
        fr_thrift_w_init(&tw, &chunk, &err);
        fr_thrift_w_i32(&tw, 1, PQ_PAGE_DATA);
        fr_thrift_w_i32(&tw, 2, 16);
        fr_thrift_w_i32(&tw, 3, 16);
        fr_thrift_w_i32(&tw, 4, (int32_t)(pq_crc32(body, 16) ^ (uint32_t)bad));
        fr_thrift_w_struct_begin(&tw, 5);
        fr_thrift_w_i32(&tw, 1, 4);
        fr_thrift_w_i32(&tw, 2, PQ_ENC_PLAIN);
        fr_thrift_w_i32(&tw, 3, PQ_ENC_RLE);
        fr_thrift_w_i32(&tw, 4, PQ_ENC_RLE);
        fr_thrift_w_struct_end(&tw);
        assert_int_equal(fr_thrift_w_finish(&tw), 0);
        assert_int_equal(fr_buf_append(&chunk, body, 16, &err), 0);
        pq_schema_elem e = {.type = PQ_INT32, .repetition = PQ_REQUIRED, .converted = -1, .field_id = -1};
        fr_type t = fr_type_of(FR_T_INT);
        t.nullable = false;
        pq_colr c;
        pq_colr_init(&c, &e, &t);
        pq_scratch s = {0};
        uint8_t *bufs[3] = {0};
        int64_t nulls = -1;
        int rc = pq_read_chunk(&c, FR_PARQUET_UNCOMPRESSED, chunk.data, chunk.len, 4, &s, bufs, &nulls, &err);
        if (bad) {
            assert_int_equal(rc, FR_ECORRUPT);
            assert_non_null(strstr(err.msg, "CRC"));
        } else {
            assert_int_equal(rc, 0);
            assert_int_equal(nulls, 0);
            assert_memory_equal(bufs[2], body, 16);
        }
        for (int i = 0; i < 3; i++) fr_free(bufs[i]);
        pq_scratch_free(&s);
        fr_buf_free(&chunk);
    }
}

/* Decodes a chunk of one uncompressed v1 data page (REQUIRED column, n values) with the
 * given encoding and body. */
static int one_page(const pq_schema_elem *e, const fr_type *t, int encoding, const uint8_t *body,
                    size_t len, int64_t n, uint8_t **bufs, fr_error *err)
{
    fr_buf chunk;
    fr_buf_init(&chunk);
    fr_thrift_w tw;
    fr_thrift_w_init(&tw, &chunk, err);
    fr_thrift_w_i32(&tw, 1, PQ_PAGE_DATA);
    fr_thrift_w_i32(&tw, 2, (int32_t)len);
    fr_thrift_w_i32(&tw, 3, (int32_t)len);
    fr_thrift_w_struct_begin(&tw, 5);
    fr_thrift_w_i32(&tw, 1, (int32_t)n);
    fr_thrift_w_i32(&tw, 2, encoding);
    fr_thrift_w_i32(&tw, 3, PQ_ENC_RLE);
    fr_thrift_w_i32(&tw, 4, PQ_ENC_RLE);
    fr_thrift_w_struct_end(&tw);
    assert_int_equal(fr_thrift_w_finish(&tw), 0);
    assert_int_equal(fr_buf_append(&chunk, body, len, err), 0);
    pq_colr c;
    pq_colr_init(&c, e, t);
    pq_scratch s = {0};
    int64_t nulls;
    int rc = pq_read_chunk(&c, FR_PARQUET_UNCOMPRESSED, chunk.data, chunk.len, n, &s, bufs, &nulls, err);
    pq_scratch_free(&s);
    fr_buf_free(&chunk);
    return rc;
}

/* BYTE_STREAM_SPLIT of FIXED_LEN_BYTE_ARRAY(3) read as BYTES, and of FLOAT (the streams are
 * byte b of every value, then byte b + 1, ...); RLE booleans; DELTA_BINARY_PACKED; an
 * unsupported encoding. */
static void test_byte_stream_split(void **state)
{
    (void)state;
    fr_error err;
    const uint8_t flba[] = {1, 4, 7, 10, 2, 5, 8, 11, 3, 6, 9, 12}; /* values 010203 040506 ... */
    pq_schema_elem e = {.type = PQ_FLBA, .type_length = 3, .repetition = PQ_REQUIRED, .converted = -1, .field_id = -1};
    fr_type t = fr_type_of(FR_T_BYTES);
    t.nullable = false;
    uint8_t *bufs[3] = {0};
    assert_int_equal(one_page(&e, &t, PQ_ENC_BYTE_STREAM_SPLIT, flba, sizeof flba, 4, bufs, &err), 0);
    const int32_t *offs = (const int32_t *)(void *)bufs[1];
    assert_int_equal(offs[4], 12);
    for (int i = 0; i < 12; i++) assert_int_equal(bufs[2][i], i + 1);
    for (int i = 0; i < 3; i++) fr_free(bufs[i]);
    float f[3] = {1.5f, -2.25f, 1e30f};
    uint8_t split[12];
    for (int j = 0; j < 3; j++)
        for (int b = 0; b < 4; b++) split[b * 3 + j] = ((const uint8_t *)&f[j])[b];
    pq_schema_elem ef = {.type = PQ_FLOAT, .repetition = PQ_REQUIRED, .converted = -1, .field_id = -1};
    fr_type tf = fr_type_of(FR_T_FLOAT);
    tf.nullable = false;
    memset(bufs, 0, sizeof bufs);
    assert_int_equal(one_page(&ef, &tf, PQ_ENC_BYTE_STREAM_SPLIT, split, sizeof split, 3, bufs, &err), 0);
    assert_memory_equal(bufs[2], f, sizeof f);
    for (int i = 0; i < 3; i++) fr_free(bufs[i]);
    /* Too few bytes for the values. */
    memset(bufs, 0, sizeof bufs);
    assert_int_equal(one_page(&ef, &tf, PQ_ENC_BYTE_STREAM_SPLIT, split, 8, 3, bufs, &err), FR_ECORRUPT);
    for (int i = 0; i < 3; i++) fr_free(bufs[i]);
    /* RLE booleans: a 4-byte length, then the hybrid at bit width 1. */
    const uint8_t bits[] = {1, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1};
    fr_buf rle;
    fr_buf_init(&rle);
    assert_int_equal(fr_buf_append_zeros(&rle, 4, &err), 0);
    assert_int_equal(pq_rle_encode_u8(bits, 14, 1, &rle, &err), 0);
    fr_put_u32le(rle.data, (uint32_t)(rle.len - 4));
    pq_schema_elem eb = {.type = PQ_BOOLEAN, .repetition = PQ_REQUIRED, .converted = -1, .field_id = -1};
    fr_type tb = fr_type_of(FR_T_BOOLEAN);
    tb.nullable = false;
    memset(bufs, 0, sizeof bufs);
    assert_int_equal(one_page(&eb, &tb, PQ_ENC_RLE, rle.data, rle.len, 14, bufs, &err), 0);
    for (int i = 0; i < 14; i++) assert_int_equal((bufs[2][i / 8] >> (i % 8)) & 1, bits[i]);
    for (int i = 0; i < 3; i++) fr_free(bufs[i]);
    fr_buf_free(&rle);
    /* DELTA_BINARY_PACKED of 7, 5, 3, 1, 2, 3, 4, 5: block 128 of 4 miniblocks, first value
     * 7, min delta -2, relative deltas 0 0 0 3 3 3 3 at bit width 2 in the first miniblock. */
    const uint8_t delta[] = {0x80, 0x01, 0x04, 0x08, 0x0E, 0x03, 0x02, 0, 0, 0,
                             0xC0, 0x3F, 0, 0, 0, 0, 0, 0};
    pq_schema_elem ei = {.type = PQ_INT32, .repetition = PQ_REQUIRED, .converted = -1, .field_id = -1};
    fr_type ti = fr_type_of(FR_T_INT);
    ti.nullable = false;
    memset(bufs, 0, sizeof bufs);
    assert_int_equal(one_page(&ei, &ti, PQ_ENC_DELTA_BINARY_PACKED, delta, sizeof delta, 8, bufs, &err), 0);
    const int32_t want[] = {7, 5, 3, 1, 2, 3, 4, 5};
    assert_memory_equal(bufs[2], want, sizeof want);
    for (int i = 0; i < 3; i++) fr_free(bufs[i]);
    memset(bufs, 0, sizeof bufs); /* the miniblock cut short */
    assert_int_equal(one_page(&ei, &ti, PQ_ENC_DELTA_BINARY_PACKED, delta, sizeof delta - 7, 8, bufs, &err), FR_ECORRUPT);
    for (int i = 0; i < 3; i++) fr_free(bufs[i]);
    /* An encoding firth does not read. */
    memset(bufs, 0, sizeof bufs);
    assert_int_equal(one_page(&ef, &tf, PQ_ENC_DELTA_BYTE_ARRAY, split, 12, 3, bufs, &err), FR_EUNSUPPORTED);
    for (int i = 0; i < 3; i++) fr_free(bufs[i]);
}

/* A data page v2: definition levels uncompressed before the values, the values compressed
 * (ZSTD) or not (is_compressed false); counts that disagree are FR_ECORRUPT. */
static int v2_page(bool compressed, int32_t num_nulls, uint8_t **bufs, int64_t *nulls, fr_error *err)
{
    const uint8_t defs[] = {1, 0, 1, 1, 0};
    int32_t vals[] = {-5, 70000, 3};
    fr_buf levels, body, chunk;
    fr_buf_init(&levels);
    fr_buf_init(&body);
    fr_buf_init(&chunk);
    assert_int_equal(pq_rle_encode_u8(defs, 5, 1, &levels, err), 0);
    pq_compressor *z;
    assert_int_equal(pq_compressor_new(compressed ? FR_PARQUET_ZSTD : FR_PARQUET_UNCOMPRESSED, 3, &z, err), 0);
    assert_int_equal(pq_compress(z, (const uint8_t *)vals, sizeof vals, &body, err), 0);
    pq_compressor_free(z);
    fr_thrift_w tw;
    fr_thrift_w_init(&tw, &chunk, err);
    fr_thrift_w_i32(&tw, 1, PQ_PAGE_DATA_V2);
    fr_thrift_w_i32(&tw, 2, (int32_t)(levels.len + sizeof vals));
    fr_thrift_w_i32(&tw, 3, (int32_t)(levels.len + body.len));
    fr_thrift_w_struct_begin(&tw, 8);
    fr_thrift_w_i32(&tw, 1, 5);
    fr_thrift_w_i32(&tw, 2, num_nulls);
    fr_thrift_w_i32(&tw, 3, 5);
    fr_thrift_w_i32(&tw, 4, PQ_ENC_PLAIN);
    fr_thrift_w_i32(&tw, 5, (int32_t)levels.len);
    fr_thrift_w_i32(&tw, 6, 0);
    if (!compressed) fr_thrift_w_bool(&tw, 7, false);
    fr_thrift_w_struct_end(&tw);
    assert_int_equal(fr_thrift_w_finish(&tw), 0);
    assert_int_equal(fr_buf_append(&chunk, levels.data, levels.len, err), 0);
    assert_int_equal(fr_buf_append(&chunk, body.data, body.len, err), 0);
    pq_schema_elem e = {.type = PQ_INT32, .repetition = PQ_OPTIONAL, .converted = -1, .field_id = -1};
    fr_type t = fr_type_of(FR_T_INT);
    pq_colr c;
    pq_colr_init(&c, &e, &t);
    pq_scratch s = {0};
    /* The codec of the chunk is ZSTD either way: is_compressed false must skip it. */
    int rc = pq_read_chunk(&c, FR_PARQUET_ZSTD, chunk.data, chunk.len, 5, &s, bufs, nulls, err);
    pq_scratch_free(&s);
    fr_buf_free(&levels);
    fr_buf_free(&body);
    fr_buf_free(&chunk);
    return rc;
}

static void test_data_page_v2(void **state)
{
    (void)state;
    fr_error err;
    for (int compressed = 0; compressed < 2; compressed++) {
        uint8_t *bufs[3] = {0};
        int64_t nulls = -1;
        assert_int_equal(v2_page(compressed, 2, bufs, &nulls, &err), 0);
        assert_int_equal(nulls, 2);
        assert_int_equal(bufs[0][0], 0x0D); /* rows 0, 2, 3 valid */
        const int32_t *v = (const int32_t *)(void *)bufs[2];
        assert_int_equal(v[0], -5);
        assert_int_equal(v[2], 70000);
        assert_int_equal(v[3], 3);
        for (int i = 0; i < 3; i++) fr_free(bufs[i]);
        memset(bufs, 0, sizeof bufs);
        assert_int_equal(v2_page(compressed, 1, bufs, &nulls, &err), FR_ECORRUPT);
        for (int i = 0; i < 3; i++) fr_free(bufs[i]);
    }
}

/* The RLE / bit-packed hybrid: round trips of random runs at every bit width, and inputs
 * that must fail. Regression: a repeated run's value wider than the bit width (a definition
 * level of 71) was taken as is, so more values than rows were counted valid and written
 * past the column's buffer (found by fuzz_lake_parquet_page). */
static void test_rle_hybrid(void **state)
{
    (void)state;
    tu_pick_seed("test_rle_hybrid");
    fr_error err;
    for (int bw = 1; bw <= 32; bw++) {
        int64_t n = tu_range(1, 3000);
        uint32_t *v = malloc(sizeof *v * (size_t)n), *back = malloc(sizeof *back * (size_t)n);
        uint32_t mask = bw == 32 ? 0xFFFFFFFFu : (1u << bw) - 1;
        for (int64_t i = 0; i < n;) {
            int64_t run = tu_range(1, 40);
            uint32_t x = (uint32_t)tu_next() & mask;
            bool same = tu_next() & 1;
            for (int64_t k = 0; k < run && i < n; k++, i++) v[i] = same ? x : (uint32_t)tu_next() & mask;
        }
        fr_buf b;
        fr_buf_init(&b);
        assert_int_equal(pq_rle_encode(v, n, bw, &b, &err), 0);
        assert_int_equal(pq_rle_decode(b.data, b.len, bw, back, n, &err), 0);
        assert_memory_equal(v, back, sizeof *v * (size_t)n);
        /* The last run always needs its last byte. */
        assert_int_equal(pq_rle_decode(b.data, b.len - 1, bw, back, n, &err), FR_ECORRUPT);
        fr_buf_free(&b);
        free(v);
        free(back);
    }
    uint8_t wide[] = {2 << 1, 71}; /* a run of 2 of the value 71 at bit width 1 */
    uint8_t levels[2];
    assert_int_equal(pq_rle_decode_u8(wide, 2, 1, levels, 2, &err), FR_ECORRUPT);
    uint8_t empty_run[] = {0, 1};
    assert_int_equal(pq_rle_decode_u8(empty_run, 2, 1, levels, 2, &err), FR_ECORRUPT);
    uint8_t short_lit[] = {(4 << 1) | 1, 0xFF}; /* 4 groups of 8 one-bit values, 1 byte given */
    assert_int_equal(pq_rle_decode_u8(short_lit, 2, 1, levels, 2, &err), FR_ECORRUPT);
}

/* Allocation failures anywhere in writing and reading fail cleanly (no crash, no leak). */
static void test_alloc_failures(void **state)
{
    (void)state;
    tu_pick_seed("test_alloc_failures");
    fr_schema *s = tu_schema(rt_cols, RT_NCOLS, true);
    tu_model m;
    tu_model_random(&m, s, 50, 20);
    fr_batch *b = tu_build(s, &m);
    fr_parquet_options o;
    fr_parquet_options_default(&o);
    o.page_bytes = 300;
    o.row_group_bytes = 4000;
    int ok = 0;
    for (long k = 1; k < 5000 && !ok; k++) {
        const char *path = tmp_path("alloc.parquet");
        fr_error err;
        fr_parquet_writer *w = NULL;
        fr_parquet_file_info *info = NULL;
        fr_alloc_fail_after(k);
        int rc = fr_parquet_writer_open(path, s, NULL, &o, &w, &err);
        if (rc == 0) rc = fr_parquet_writer_write(w, b, &err);
        if (rc == 0) rc = fr_parquet_writer_close(w, &info, &err);
        else if (w) fr_parquet_writer_abort(w);
        fr_alloc_fail_after(0);
        if (rc < 0) {
            assert_false(fr_path_exists(path));
            continue;
        }
        fr_parquet_file_info_free(info);
        uint8_t *file;
        size_t n;
        assert_int_equal(fr_read_file(path, 1 << 26, &file, &n, &err), 0);
        for (long j = 1; j < 5000; j++) {
            fr_alloc_fail_after(j);
            rc = open_and_read(file, n, &err);
            fr_alloc_fail_after(0);
            if (rc == 0) break;
            assert_int_equal(rc, FR_ENOMEM);
        }
        fr_free(file);
        ok = 1;
    }
    assert_true(ok);
    fr_batch_free(b);
    tu_model_free(&m);
    fr_schema_free(s);
}

int main(void)
{
    (void)tu_check; /* shared with the arrow tests, not used here */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lake_schema),
        cmocka_unit_test(test_codec_parse),
        cmocka_unit_test(test_round_trip_types),
        cmocka_unit_test(test_round_trip_codecs),
        cmocka_unit_test(test_row_groups_and_pages),
        cmocka_unit_test(test_long_levels),
        cmocka_unit_test(test_writer_reuse),
        cmocka_unit_test(test_write_two_batches),
        cmocka_unit_test(test_time_precision_zero),
        cmocka_unit_test(test_dictionary_and_fallback),
        cmocka_unit_test(test_statistics),
        cmocka_unit_test(test_pruning),
        cmocka_unit_test(test_row_group_rows_limit),
        cmocka_unit_test(test_writer_errors),
        cmocka_unit_test(test_corrupt_files),
        cmocka_unit_test(test_page_crc),
        cmocka_unit_test(test_rle_hybrid),
        cmocka_unit_test(test_byte_stream_split),
        cmocka_unit_test(test_data_page_v2),
        cmocka_unit_test(test_alloc_failures),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
