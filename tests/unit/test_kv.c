/* test_kv.c — the KV store of a primary-key bucket: option names and spec checks, each merge
 * engine's state and exact changelog on hand-written cases (FULL and WAL images, partial
 * updates and deletes, delete behaviors), point and prefix lookups, scans with filter and
 * projection, idempotent retries, and recovery after a crash (memtable lost), after the
 * RocksDB directory is removed, and when the state is ahead of the log. */
#include <pthread.h>
#include <stdatomic.h>
#include <sys/stat.h>

#include "kv_testkit.h"

/* id INT NOT NULL (the key), name STRING, score BIGINT */
static kt_bucket *simple_bucket(const char *name)
{
    fr_schema *s = kt_schema(3, (const char *[]){ "id INT NOT NULL", "name STRING",
                                                  "score BIGINT" });
    return kt_bucket_new(name, s, (const int[]){ 0 }, 1);
}

/* ---- options ------------------------------------------------------------------------------ */

static void test_option_names(void **state)
{
    (void)state;
    fr_error err;
    fr_merge_engine m;
    assert_int_equal(fr_merge_engine_parse("Versioned", &m, &err), 0);
    assert_int_equal(m, FR_MERGE_VERSIONED);
    assert_string_equal(fr_merge_engine_name(FR_MERGE_FIRST_ROW), "first_row");
    assert_int_equal(fr_merge_engine_parse("latest", &m, &err), FR_EINVAL);
    assert_non_null(strstr(err.msg, "last_row"));
    fr_agg_fn f;
    assert_int_equal(fr_agg_fn_parse("STRING_AGG", &f, &err), 0);
    assert_int_equal(f, FR_AGG_LISTAGG);
    assert_int_equal(fr_agg_fn_parse("rbm64", &f, &err), 0);
    assert_int_equal(f, FR_AGG_RBM64);
    assert_string_equal(fr_agg_fn_name(FR_AGG_FIRST_VALUE_IGNORE_NULLS),
                        "first_value_ignore_nulls");
    assert_int_equal(fr_agg_fn_parse("count", &f, &err), FR_EINVAL);
    fr_delete_behavior d;
    assert_int_equal(fr_delete_behavior_parse("DISABLE", &d, &err), 0);
    assert_int_equal(d, FR_DELETE_DISABLE);
    fr_changelog_image im;
    assert_int_equal(fr_changelog_image_parse("wal", &im, &err), 0);
    assert_int_equal(im, FR_CHANGELOG_WAL);
    assert_int_equal(fr_changelog_image_parse("partial", &im, &err), FR_EINVAL);

    assert_int_equal(fr_delete_behavior_default(FR_MERGE_LAST_ROW), FR_DELETE_ALLOW);
    assert_int_equal(fr_delete_behavior_default(FR_MERGE_FIRST_ROW), FR_DELETE_IGNORE);
    assert_int_equal(fr_delete_behavior_default(FR_MERGE_VERSIONED), FR_DELETE_IGNORE);
    assert_int_equal(fr_delete_behavior_default(FR_MERGE_AGGREGATION), FR_DELETE_IGNORE);

    fr_type i = fr_type_of(FR_T_INT), s = fr_type_of(FR_T_STRING), b = fr_type_of(FR_T_BYTES);
    fr_type bo = fr_type_of(FR_T_BOOLEAN), ts = fr_type_time_like(FR_T_TIMESTAMP, 3);
    assert_true(fr_agg_fn_accepts(FR_AGG_SUM, &i));
    assert_false(fr_agg_fn_accepts(FR_AGG_SUM, &s));
    assert_true(fr_agg_fn_accepts(FR_AGG_MAX, &s));
    assert_true(fr_agg_fn_accepts(FR_AGG_MAX, &ts));
    assert_false(fr_agg_fn_accepts(FR_AGG_MAX, &bo));
    assert_true(fr_agg_fn_accepts(FR_AGG_LISTAGG, &s));
    assert_false(fr_agg_fn_accepts(FR_AGG_LISTAGG, &i));
    assert_true(fr_agg_fn_accepts(FR_AGG_BOOL_AND, &bo));
    assert_false(fr_agg_fn_accepts(FR_AGG_BOOL_OR, &i));
    assert_true(fr_agg_fn_accepts(FR_AGG_RBM32, &b));
    assert_false(fr_agg_fn_accepts(FR_AGG_RBM64, &s));
    assert_true(fr_agg_fn_accepts(FR_AGG_FIRST_VALUE, &b));
}

static void test_spec_check(void **state)
{
    (void)state;
    kt_bucket *b = simple_bucket("kv-spec");
    fr_error err;
    assert_int_equal(fr_kv_spec_check(&b->spec, &err), 0);

    b->spec.merge = FR_MERGE_FIRST_ROW;
    assert_int_equal(fr_kv_spec_check(&b->spec, &err), FR_EINVAL);
    assert_non_null(strstr(err.msg, "first_row"));
    b->spec.delete_behavior = FR_DELETE_IGNORE;
    assert_int_equal(fr_kv_spec_check(&b->spec, &err), 0);

    b->spec.merge = FR_MERGE_VERSIONED;
    b->spec.version_column = -1;
    assert_int_equal(fr_kv_spec_check(&b->spec, &err), FR_EINVAL);
    b->spec.version_column = 1; /* STRING */
    assert_int_equal(fr_kv_spec_check(&b->spec, &err), FR_EINVAL);
    assert_non_null(strstr(err.msg, "name"));
    b->spec.version_column = 2; /* BIGINT */
    assert_int_equal(fr_kv_spec_check(&b->spec, &err), 0);

    b->spec.merge = FR_MERGE_AGGREGATION;
    b->aggs[1] = FR_AGG_SUM; /* on STRING */
    assert_int_equal(fr_kv_spec_check(&b->spec, &err), FR_EINVAL);
    assert_non_null(strstr(err.msg, "name"));
    assert_non_null(strstr(err.msg, "sum"));
    b->aggs[1] = FR_AGG_LISTAGG;
    b->aggs[2] = FR_AGG_PRODUCT;
    b->aggs[0] = FR_AGG_RBM32; /* the key's function is ignored */
    assert_int_equal(fr_kv_spec_check(&b->spec, &err), 0);

    b->pk[0] = 7;
    assert_int_equal(fr_kv_spec_check(&b->spec, &err), FR_EINVAL);
    b->spec.npk = 0;
    assert_int_equal(fr_kv_spec_check(&b->spec, &err), FR_EINVAL);

    /* open refuses what the check refuses */
    b->spec.npk = 1;
    b->pk[0] = 0;
    b->spec.merge = FR_MERGE_FIRST_ROW;
    b->spec.delete_behavior = FR_DELETE_ALLOW;
    assert_int_equal(kt_try_open(b, &err), FR_EINVAL);
    assert_null(b->kv);
    kt_bucket_free(b);
}

/* ---- last_row ----------------------------------------------------------------------------- */

static void test_last_row_changelog(void **state)
{
    (void)state;
    kt_bucket *b = simple_bucket("kv-last");
    kt_open(b);
    fr_kv_write_result r = KT_UPSERT(b, "1|a|10", "2|b|20");
    assert_int_equal(r.changelog_records, 2);
    assert_int_equal(r.base_offset, 0);
    assert_int_equal(r.rows_changed, 2);
    kt_expect_changes(b, 0, "+I 1|a|10", "+I 2|b|20");

    r = KT_UPSERT(b, "1|a2|11");
    assert_int_equal(r.base_offset, 2);
    assert_int_equal(r.changelog_records, 2);
    kt_expect_changes(b, 2, "-U 1|a|10", "+U 1|a2|11");

    /* the same row again changes nothing and writes nothing */
    r = KT_UPSERT(b, "1|a2|11");
    assert_int_equal(r.changelog_records, 0);
    assert_int_equal(r.base_offset, -1);
    assert_int_equal(r.rows_changed, 0);
    assert_int_equal(fr_log_end_offset(b->log), 4);

    /* one key three times in one batch, a delete of a missing key, a delete */
    r = kt_write(b, 5, KT_ROWS("3|c|30", "3|c|31", "9|NULL|NULL", "2|NULL|NULL", "3|NULL|32"),
                 "uuddu");
    assert_int_equal(r.base_offset, 4);
    assert_int_equal(r.changelog_records, 6);
    assert_int_equal(r.rows_changed, 2);
    kt_expect_changes(b, 4, "+I 3|c|30", "-U 3|c|30", "+U 3|c|31", "-D 2|b|20", "-U 3|c|31",
                      "+U 3|NULL|32");
    kt_expect_state(b, "1|a2|11", "3|NULL|32");
    assert_int_equal(fr_kv_num_keys(b->kv), 2);
    assert_int_equal(fr_kv_applied_offset(b->kv), 10);

    /* insert, delete, insert of one key in one batch */
    r = kt_write(b, 3, KT_ROWS("5|x|1", "5|NULL|NULL", "5|y|2"), "udu");
    kt_expect_changes(b, 10, "+I 5|x|1", "-D 5|x|1", "+I 5|y|2");
    kt_expect_state(b, "1|a2|11", "3|NULL|32", "5|y|2");
    assert_int_equal(fr_kv_num_keys(b->kv), 3);
    assert_true(fr_kv_size_bytes(b->kv) > 0);
    kt_bucket_free(b);
}

/* A write whose records are its own input rows is encoded from the input; a record that is
 * not (an update, a row that changes nothing) switches to building the changelog, which
 * must then hold the rows before it too. */
static void test_changelog_of_input_rows(void **state)
{
    (void)state;
    kt_bucket *b = simple_bucket("kv-input-rows");
    kt_open(b);
    KT_UPSERT(b, "3|c|30", "1|a|10", "2|b|20");
    kt_expect_changes(b, 0, "+I 3|c|30", "+I 1|a|10", "+I 2|b|20");
    /* new, update, new */
    KT_UPSERT(b, "4|d|40", "1|a|11", "5|e|50");
    kt_expect_changes(b, 3, "+I 4|d|40", "-U 1|a|10", "+U 1|a|11", "+I 5|e|50");
    /* new, new, unchanged, new */
    KT_UPSERT(b, "6|f|60", "7|g|70", "2|b|20", "8|h|80");
    kt_expect_changes(b, 7, "+I 6|f|60", "+I 7|g|70", "+I 8|h|80");
    /* new, then an unchanged last row */
    KT_UPSERT(b, "9|i|90", "3|c|30");
    kt_expect_changes(b, 10, "+I 9|i|90");
    /* an unchanged first row, then new ones */
    KT_UPSERT(b, "3|c|30", "10|j|100");
    kt_expect_changes(b, 11, "+I 10|j|100");
    kt_expect_state(b, "1|a|11", "2|b|20", "3|c|30", "4|d|40", "5|e|50", "6|f|60", "7|g|70",
                    "8|h|80", "9|i|90", "10|j|100");
    /* the changelog replays to the same state */
    kt_close(b, false);
    kt_open(b);
    kt_expect_state(b, "1|a|11", "2|b|20", "3|c|30", "4|d|40", "5|e|50", "6|f|60", "7|g|70",
                    "8|h|80", "9|i|90", "10|j|100");
    kt_bucket_free(b);
}

static void test_last_row_wal_image(void **state)
{
    (void)state;
    kt_bucket *b = simple_bucket("kv-wal");
    b->spec.image = FR_CHANGELOG_WAL;
    kt_open(b);
    /* a full upsert is not looked up: +U for a new key and for an update alike, and +U
     * again for an unchanged row (it cannot know) */
    KT_UPSERT(b, "1|a|10", "2|b|20");
    KT_UPSERT(b, "1|a|11", "2|b|20");
    kt_expect_changes(b, 0, "+U 1|a|10", "+U 2|b|20", "+U 1|a|11", "+U 2|b|20");
    /* deletes carry the old row */
    kt_write(b, 2, KT_ROWS("2|NULL|NULL", "7|NULL|NULL"), "dd");
    kt_expect_changes(b, 4, "-D 2|b|20");
    /* partial updates are looked up: +I for a new key, +U alone for an update */
    fr_error err;
    fr_kv_write_result r;
    assert_int_equal(kt_write_ex(b, 2, KT_ROWS("3|c|NULL", "1|z|NULL"), NULL, (int[]){ 0, 1 },
                                 2, FR_NO_WRITER, -1, &r, &err), 0);
    kt_expect_changes(b, 5, "+I 3|c|NULL", "+U 1|z|11");
    kt_expect_state(b, "1|z|11", "3|c|NULL");
    kt_bucket_free(b);
}

static void test_partial_update(void **state)
{
    (void)state;
    kt_bucket *b = simple_bucket("kv-partial");
    kt_open(b);
    fr_error err;
    fr_kv_write_result r;
    int name_t[] = { 0, 1 }, score_t[] = { 2, 0 }, key_t[] = { 0 };
    /* a new key gets NULL outside the targets, whatever the row says there */
    assert_int_equal(kt_write_ex(b, 1, KT_ROWS("1|x|99"), NULL, name_t, 2, FR_NO_WRITER, -1,
                                 &r, &err), 0);
    kt_expect_changes(b, 0, "+I 1|x|NULL");
    assert_int_equal(kt_write_ex(b, 1, KT_ROWS("1|ignored|5"), NULL, score_t, 2, FR_NO_WRITER,
                                 -1, &r, &err), 0);
    kt_expect_changes(b, 1, "-U 1|x|NULL", "+U 1|x|5");
    /* only the key as target: an existing row stays as it is */
    assert_int_equal(kt_write_ex(b, 1, KT_ROWS("1|NULL|NULL"), NULL, key_t, 1, FR_NO_WRITER,
                                 -1, &r, &err), 0);
    assert_int_equal(r.changelog_records, 0);
    /* a partial delete clears its targets while another column holds a value... */
    assert_int_equal(kt_write_ex(b, 1, KT_ROWS("1|NULL|NULL"), "d", score_t, 2, FR_NO_WRITER,
                                 -1, &r, &err), 0);
    kt_expect_changes(b, 3, "-U 1|x|5", "+U 1|x|NULL");
    /* ...and removes the row once every column outside the targets is NULL */
    assert_int_equal(kt_write_ex(b, 1, KT_ROWS("1|NULL|NULL"), "d", name_t, 2, FR_NO_WRITER,
                                 -1, &r, &err), 0);
    kt_expect_changes(b, 5, "-D 1|x|NULL");
    kt_expect_empty_state(b);

    /* targets naming every column are a full write */
    assert_int_equal(kt_write_ex(b, 1, KT_ROWS("2|b|2"), NULL, (int[]){ 2, 1, 0 }, 3,
                                 FR_NO_WRITER, -1, &r, &err), 0);
    kt_expect_changes(b, 6, "+I 2|b|2");

    /* refused: targets without the key, out of range */
    assert_int_equal(kt_write_ex(b, 1, KT_ROWS("2|c|3"), NULL, (int[]){ 1 }, 1, FR_NO_WRITER,
                                 -1, &r, &err), FR_EINVAL);
    assert_non_null(strstr(err.msg, "primary key column id"));
    assert_int_equal(kt_write_ex(b, 1, KT_ROWS("2|c|3"), NULL, (int[]){ 0, 5 }, 2,
                                 FR_NO_WRITER, -1, &r, &err), FR_EINVAL);
    kt_expect_state(b, "2|b|2");
    kt_bucket_free(b);

    /* a NOT NULL column outside the key forbids partial updates, as in Fluss */
    fr_schema *s = kt_schema(3, (const char *[]){ "id INT NOT NULL", "name STRING NOT NULL",
                                                  "score BIGINT" });
    b = kt_bucket_new("kv-partial2", s, (const int[]){ 0 }, 1);
    kt_open(b);
    assert_int_equal(kt_write_ex(b, 1, KT_ROWS("1|a|1"), NULL, score_t, 2, FR_NO_WRITER, -1,
                                 &r, &err), FR_EINVAL);
    assert_non_null(strstr(err.msg, "column name is NOT NULL"));
    kt_expect_empty_state(b);
    kt_bucket_free(b);
}

/* ---- delete behaviors ---------------------------------------------------------------------- */

static void test_delete_behaviors(void **state)
{
    (void)state;
    kt_bucket *b = simple_bucket("kv-del");
    b->spec.delete_behavior = FR_DELETE_IGNORE;
    kt_open(b);
    KT_UPSERT(b, "1|a|1");
    fr_kv_write_result r = kt_write(b, 1, KT_ROWS("1|NULL|NULL"), "d");
    assert_int_equal(r.changelog_records, 0);
    kt_expect_state(b, "1|a|1");
    kt_close(b, true);

    b->spec.delete_behavior = FR_DELETE_DISABLE;
    kt_open(b);
    fr_error err;
    /* the whole batch is refused, its upserts too */
    assert_int_equal(kt_write_ex(b, 2, KT_ROWS("2|b|2", "1|NULL|NULL"), "ud", NULL, 0,
                                 FR_NO_WRITER, -1, &r, &err), FR_EINVAL);
    assert_string_equal(err.msg, "deletes are disabled for table db.t bucket 0 "
                                 "('table.delete.behavior' = 'disable')");
    kt_expect_state(b, "1|a|1");
    assert_int_equal(fr_log_end_offset(b->log), 1);
    kt_bucket_free(b);
}

/* ---- first_row and versioned --------------------------------------------------------------- */

static void test_first_row(void **state)
{
    (void)state;
    kt_bucket *b = simple_bucket("kv-first");
    b->spec.merge = FR_MERGE_FIRST_ROW;
    b->spec.delete_behavior = fr_delete_behavior_default(FR_MERGE_FIRST_ROW);
    kt_open(b);
    KT_UPSERT(b, "1|a|1", "1|b|2", "2|c|3");
    KT_UPSERT(b, "2|d|4", "3|e|5");
    kt_write(b, 1, KT_ROWS("1|NULL|NULL"), "d");
    kt_expect_changes(b, 0, "+I 1|a|1", "+I 2|c|3", "+I 3|e|5");
    kt_expect_state(b, "1|a|1", "2|c|3", "3|e|5");
    fr_error err;
    fr_kv_write_result r;
    assert_int_equal(kt_write_ex(b, 1, KT_ROWS("4|x|1"), NULL, (int[]){ 0, 1 }, 2,
                                 FR_NO_WRITER, -1, &r, &err), FR_EINVAL);
    assert_non_null(strstr(err.msg, "not supported by the first_row"));
    kt_bucket_free(b);
}

static void test_versioned(void **state)
{
    (void)state;
    kt_bucket *b = simple_bucket("kv-ver");
    b->spec.merge = FR_MERGE_VERSIONED;
    b->spec.version_column = 2;
    b->spec.delete_behavior = FR_DELETE_IGNORE;
    kt_open(b);
    KT_UPSERT(b, "1|a|1000");
    KT_UPSERT(b, "1|b|999");                /* older: dropped */
    KT_UPSERT(b, "1|c|2000", "1|d|2000");   /* newer, then equal: both replace */
    KT_UPSERT(b, "1|e|NULL");               /* a NULL version is the smallest */
    KT_UPSERT(b, "2|x|NULL", "2|y|NULL");   /* NULL >= NULL replaces */
    KT_UPSERT(b, "2|z|-5");
    kt_write(b, 1, KT_ROWS("1|NULL|NULL"), "d"); /* ignored */
    kt_expect_changes(b, 0, "+I 1|a|1000", "-U 1|a|1000", "+U 1|c|2000", "-U 1|c|2000",
                      "+U 1|d|2000", "+I 2|x|NULL", "-U 2|x|NULL", "+U 2|y|NULL",
                      "-U 2|y|NULL", "+U 2|z|-5");
    kt_expect_state(b, "1|d|2000", "2|z|-5");
    kt_bucket_free(b);

    /* a TIMESTAMP_LTZ version */
    fr_schema *s = kt_schema(3, (const char *[]){ "id INT NOT NULL", "name STRING",
                                                  "ts TIMESTAMP_LTZ(3)" });
    b = kt_bucket_new("kv-ver2", s, (const int[]){ 0 }, 1);
    b->spec.merge = FR_MERGE_VERSIONED;
    b->spec.version_column = 2;
    b->spec.delete_behavior = FR_DELETE_DISABLE;
    b->spec.image = FR_CHANGELOG_WAL;
    kt_open(b);
    KT_UPSERT(b, "1|a|2026-01-01 10:00:00.500Z");
    KT_UPSERT(b, "1|b|2026-01-01 10:00:00.499Z", "1|c|2026-01-02 00:00:00Z");
    kt_expect_changes(b, 0, "+I 1|a|2026-01-01 10:00:00.500Z", "+U 1|c|2026-01-02 00:00:00.000Z");
    fr_error err;
    assert_int_equal(kt_write_ex(b, 1, KT_ROWS("1|NULL|NULL"), "d", NULL, 0, FR_NO_WRITER, -1,
                                 NULL, &err), FR_EINVAL);
    kt_bucket_free(b);
}

/* ---- aggregation: the documented example --------------------------------------------------- */

static void test_aggregation_example(void **state)
{
    (void)state;
    fr_schema *s = kt_schema(4, (const char *[]){ "product_id BIGINT NOT NULL", "price DOUBLE",
                                                  "sales BIGINT", "last_update_time TIMESTAMP(3)" });
    kt_bucket *b = kt_bucket_new("kv-agg", s, (const int[]){ 0 }, 1);
    b->spec.merge = FR_MERGE_AGGREGATION;
    b->spec.delete_behavior = fr_delete_behavior_default(FR_MERGE_AGGREGATION);
    b->aggs[1] = FR_AGG_MAX;
    b->aggs[2] = FR_AGG_SUM;
    kt_open(b);
    KT_UPSERT(b, "1|23.0|15|2024-01-01 10:00:00", "1|30.2|20|2024-01-01 11:00:00");
    kt_expect_state(b, "1|30.2|35|2024-01-01 11:00:00.000");
    KT_UPSERT(b, "1|NULL|NULL|NULL");
    kt_expect_state(b, "1|30.2|35|2024-01-01 11:00:00.000");
    kt_write(b, 1, KT_ROWS("1|NULL|NULL|NULL"), "d"); /* ignored by default */
    kt_expect_changes(b, 0, "+I 1|23.0|15|2024-01-01 10:00:00.000",
                      "-U 1|23.0|15|2024-01-01 10:00:00.000",
                      "+U 1|30.2|35|2024-01-01 11:00:00.000");
    kt_close(b, true);

    /* with deletes allowed, a delete removes the whole aggregate */
    b->spec.delete_behavior = FR_DELETE_ALLOW;
    kt_open(b);
    kt_write(b, 2, KT_ROWS("1|NULL|NULL|NULL", "1|1.0|1|NULL"), "du");
    kt_expect_changes(b, 3, "-D 1|30.2|35|2024-01-01 11:00:00.000", "+I 1|1.0|1|NULL");
    kt_bucket_free(b);
}

/* ---- lookups and scans --------------------------------------------------------------------- */

/* k1 INT, k2 STRING (the key), v BIGINT */
static kt_bucket *composite_bucket(const char *name)
{
    fr_schema *s = kt_schema(3, (const char *[]){ "k1 INT NOT NULL", "k2 STRING NOT NULL",
                                                  "v BIGINT" });
    kt_bucket *b = kt_bucket_new(name, s, (const int[]){ 0, 1 }, 2);
    kt_open(b);
    KT_UPSERT(b, "2|b|5", "1|z|1", "2|a|4", "10|a|9", "2|ab|6", "-1|q|0", "2||3");
    return b;
}

static void test_scan_order(void **state)
{
    (void)state;
    kt_bucket *b = composite_bucket("kv-scan");
    kt_expect_state(b, "-1|q|0", "1|z|1", "2||3", "2|a|4", "2|ab|6", "2|b|5", "10|a|9");
    assert_int_equal(fr_kv_num_keys(b->kv), 7);
    kt_bucket_free(b);
}

static int count_batches(void *ctx, fr_batch *batch, fr_error *err)
{
    (void)err;
    int *n = ctx;
    assert_true(fr_batch_num_rows(batch) > 0);
    (*n)++;
    fr_batch_free(batch);
    return 0;
}

typedef struct stop_ctx {
    kt_lines lines;
    int calls;
} stop_ctx;

static int stop_after_one(void *ctx, fr_batch *batch, fr_error *err)
{
    stop_ctx *s = ctx;
    s->calls++;
    kt_collect_rows(&s->lines, batch, err);
    return 1;
}

static int fail_callback(void *ctx, fr_batch *batch, fr_error *err)
{
    (void)ctx;
    fr_batch_free(batch);
    return fr_fail(err, FR_ERANGE, "callback says no");
}

static void test_scan_filter_projection(void **state)
{
    (void)state;
    kt_bucket *b = composite_bucket("kv-scanf");
    fr_arena *a = fr_arena_new(4096);
    fr_value five = fr_value_int(fr_type_of(FR_T_BIGINT), 4);
    fr_expr *e = fr_expr_binary(a, FR_OP_GT, fr_expr_column(a, "v"), fr_expr_literal(a, &five));
    fr_error err;
    assert_int_equal(fr_expr_bind(e, b->schema, &err), 0);
    kt_lines l = { 0 };
    int cols[] = { 2, 1 };
    assert_int_equal(fr_kv_scan(b->kv, cols, 2, e, 2, kt_collect_rows, &l, &err), 0);
    kt_expect_lines("filtered scan", &l, 3, KT_ROWS("6|ab", "5|b", "9|a"));
    /* without a filter, projected, in batches of 3 */
    assert_int_equal(fr_kv_scan(b->kv, (int[]){ 0 }, 1, NULL, 3, kt_collect_rows, &l, &err), 0);
    kt_expect_lines("projected scan", &l, 7, KT_ROWS("-1", "1", "2", "2", "2", "2", "10"));
    int n = 0;
    assert_int_equal(fr_kv_scan(b->kv, NULL, 0, NULL, 3, count_batches, &n, &err), 0);
    assert_int_equal(n, 3);
    /* a callback that stops, one that fails */
    stop_ctx st = { 0 };
    assert_int_equal(fr_kv_scan(b->kv, NULL, 0, NULL, 2, stop_after_one, &st, &err), 0);
    assert_int_equal(st.calls, 1);
    kt_expect_lines("stopped scan", &st.lines, 2, KT_ROWS("-1|q|0", "1|z|1"));
    assert_int_equal(fr_kv_scan(b->kv, NULL, 0, NULL, 2, fail_callback, NULL, &err), FR_ERANGE);
    assert_string_equal(err.msg, "callback says no");
    assert_int_equal(fr_kv_scan(b->kv, (int[]){ 3 }, 1, NULL, 0, count_batches, &n, &err),
                     FR_EINVAL);
    fr_arena_free(a);
    kt_bucket_free(b);
}

static void test_prefix_lookup(void **state)
{
    (void)state;
    kt_bucket *b = composite_bucket("kv-prefix");
    fr_error err;
    kt_lines l = { 0 };
    fr_value two = fr_value_int(fr_type_of(FR_T_INT), 2);
    assert_int_equal(fr_kv_prefix_lookup(b->kv, &two, 1, NULL, 0, kt_collect_rows, &l, &err), 0);
    kt_expect_lines("prefix 2", &l, 4, KT_ROWS("2||3", "2|a|4", "2|ab|6", "2|b|5"));
    /* a prefix of another type is cast; a projection */
    fr_value ten = fr_value_int(fr_type_of(FR_T_BIGINT), 10);
    assert_int_equal(fr_kv_prefix_lookup(b->kv, &ten, 1, (int[]){ 2 }, 1, kt_collect_rows, &l,
                                         &err), 0);
    kt_expect_lines("prefix 10", &l, 1, KT_ROWS("9"));
    /* the whole key, nothing, NULL */
    fr_value full[2] = { two, fr_value_str(fr_type_of(FR_T_STRING), "a", 1) };
    assert_int_equal(fr_kv_prefix_lookup(b->kv, full, 2, NULL, 0, kt_collect_rows, &l, &err), 0);
    kt_expect_lines("prefix 2,a", &l, 1, KT_ROWS("2|a|4"));
    fr_value three = fr_value_int(fr_type_of(FR_T_INT), 3);
    assert_int_equal(fr_kv_prefix_lookup(b->kv, &three, 1, NULL, 0, kt_collect_rows, &l, &err), 0);
    kt_expect_lines("prefix 3", &l, 0, NULL);
    fr_value null = fr_value_null(fr_type_of(FR_T_INT));
    assert_int_equal(fr_kv_prefix_lookup(b->kv, &null, 1, NULL, 0, kt_collect_rows, &l, &err), 0);
    kt_expect_lines("prefix NULL", &l, 0, NULL);
    assert_int_equal(fr_kv_prefix_lookup(b->kv, full, 3, NULL, 0, kt_collect_rows, &l, &err),
                     FR_EINVAL);
    kt_bucket_free(b);
}

/* A prefix lookup on a string first column (empty string included) reads one value's rows,
 * in key order, from the memtable and the files, never the rows of a longer string that
 * starts the same; a scan reads every key in order, also after a reopen. */
static void test_prefix_lookup_string_first(void **state)
{
    (void)state;
    fr_schema *s = kt_schema(3, (const char *[]){ "s STRING NOT NULL", "i INT NOT NULL",
                                                  "v BIGINT" });
    kt_bucket *b = kt_bucket_new("kv-prefix-string", s, (const int[]){ 0, 1 }, 2);
    kt_open(b);
    KT_UPSERT(b, "a|2|2", "ab|1|3", "|5|4", "b|1|5", "a|1|1");
    fr_error err;
    assert_int_equal(fr_kv_flush(b->kv, &err), 0);
    KT_UPSERT(b, "a|3|6", "ab|2|7", "a|1|8");
    kt_write(b, 1, KT_ROWS("b|1|5"), "d");
    struct { const char *prefix; int n; const char *const *rows; } cases[] = {
        { "a", 3, KT_ROWS("a|1|8", "a|2|2", "a|3|6") },
        { "ab", 2, KT_ROWS("ab|1|3", "ab|2|7") },
        { "", 1, KT_ROWS("|5|4") },
        { "b", 0, NULL },
        { "c", 0, NULL },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kt_lines l = { 0 };
        const char *p = cases[i].prefix;
        fr_value v = fr_value_str(fr_type_of(FR_T_STRING), p, strlen(p));
        assert_int_equal(fr_kv_prefix_lookup(b->kv, &v, 1, NULL, 0, kt_collect_rows, &l, &err),
                         0);
        kt_expect_lines(p, &l, cases[i].n, cases[i].rows);
    }
    kt_expect_state(b, "|5|4", "a|1|8", "a|2|2", "a|3|6", "ab|1|3", "ab|2|7");
    kt_close(b, true);
    kt_open(b);
    kt_lines l = { 0 };
    fr_value two[2] = { fr_value_str(fr_type_of(FR_T_STRING), "a", 1),
                        fr_value_int(fr_type_of(FR_T_INT), 2) };
    assert_int_equal(fr_kv_prefix_lookup(b->kv, two, 2, NULL, 0, kt_collect_rows, &l, &err), 0);
    kt_expect_lines("a,2 after a reopen", &l, 1, KT_ROWS("a|2|2"));
    kt_bucket_free(b);
}

static void test_point_lookup(void **state)
{
    (void)state;
    kt_bucket *b = composite_bucket("kv-lookup");
    /* keys as BIGINT and STRING: the first column is cast to INT */
    fr_schema *ks = kt_schema(2, (const char *[]){ "a BIGINT", "b STRING" });
    fr_batch *keys = kt_batch(ks, 5, KT_ROWS("10|a", "3|x", "2|ab", "NULL|a", "-1|q"));
    bool found[5];
    fr_batch *out;
    fr_error err;
    assert_int_equal(fr_kv_lookup(b->kv, keys, found, &out, &err), 0);
    assert_true(found[0] && !found[1] && found[2] && !found[3] && found[4]);
    kt_lines l = { 0 };
    kt_lines_of_batch(&l, out, NULL);
    kt_expect_lines("lookup", &l, 3, KT_ROWS("10|a|9", "2|ab|6", "-1|q|0"));
    assert_true(fr_schema_equal(fr_batch_schema(out), b->schema));
    fr_batch_free(out);
    fr_batch_free(keys);
    /* the wrong number of key columns */
    fr_schema *one = kt_schema(1, (const char *[]){ "a INT" });
    keys = kt_batch(one, 1, KT_ROWS("1"));
    assert_int_equal(fr_kv_lookup(b->kv, keys, found, &out, &err), FR_EINVAL);
    fr_batch_free(keys);
    fr_schema_free(one);
    fr_schema_free(ks);
    kt_bucket_free(b);
}

/* Many keys, some in SST files and some in the memtable, looked up out of order, with
 * duplicates and missing keys: rows come in the order of the keys, once per key asked. */
static void test_point_lookup_many(void **state)
{
    (void)state;
    kt_bucket *b = simple_bucket("kv-lookup-many");
    kt_open(b);
    enum { N = 600 };
    char text[N][32];
    const char *rows[N];
    for (int i = 0; i < N; i++) { /* written in descending key order */
        snprintf(text[i], sizeof text[i], "%d|n%d|%d", N - 1 - i, N - 1 - i, i);
        rows[i] = text[i];
    }
    fr_error err;
    for (int at = 0; at < N; at += N / 4) { /* the first half flushed to an SST file */
        kt_write(b, N / 4, rows + at, NULL);
        if (at + N / 4 == N / 2) assert_int_equal(fr_kv_flush(b->kv, &err), 0);
    }
    KT_UPSERT(b, "450|upd|-4"); /* a key of an SST file updated in the memtable */
    enum { K = 9 };
    fr_schema *ks = kt_schema(1, (const char *[]){ "id INT" });
    fr_batch *keys = kt_batch(ks, K, KT_ROWS("599", "7", "100000", "0", "7", "NULL", "450",
                                             "-3", "599"));
    bool found[K];
    fr_batch *out = NULL;
    assert_int_equal(fr_kv_lookup(b->kv, keys, found, &out, &err), 0);
    bool want[K] = { true, true, false, true, true, false, true, false, true };
    for (int i = 0; i < K; i++) assert_int_equal(found[i], want[i]);
    kt_lines l = { 0 };
    kt_lines_of_batch(&l, out, NULL);
    kt_expect_lines("lookup", &l, 6, KT_ROWS("599|n599|0", "7|n7|592", "0|n0|599",
                                             "7|n7|592", "450|upd|-4", "599|n599|0"));
    fr_batch_free(out);
    fr_batch_free(keys);
    fr_schema_free(ks);
    kt_bucket_free(b);
}

/* ---- the row cache ------------------------------------------------------------------------ */

/* Looks ids lo..hi-1 up (one call) and checks each row against want(id) (NULL: absent). */
static void expect_lookup(kt_bucket *b, int lo, int hi, const char *(*want)(int, char *))
{
    enum { MAXK = 2048 };
    char text[MAXK][16], line[64];
    const char *keys[MAXK];
    int n = hi - lo;
    assert_true(n > 0 && n <= MAXK);
    for (int i = 0; i < n; i++) {
        snprintf(text[i], sizeof text[i], "%d", lo + i);
        keys[i] = text[i];
    }
    fr_schema *ks = kt_schema(1, (const char *[]){ "id INT" });
    fr_batch *kb = kt_batch(ks, n, keys);
    bool found[MAXK];
    fr_batch *out = NULL;
    fr_error err;
    if (fr_kv_lookup(b->kv, kb, found, &out, &err) < 0) fail_msg("lookup: %s", err.msg);
    kt_lines l = { 0 };
    kt_lines_of_batch(&l, out, NULL);
    int at = 0;
    for (int i = 0; i < n; i++) {
        const char *w = want(lo + i, line);
        if (!w) {
            if (found[i]) fail_msg("id %d: found, but it was deleted", lo + i);
            continue;
        }
        if (!found[i]) fail_msg("id %d: not found", lo + i);
        if (strcmp(l.v[at], w) != 0) fail_msg("id %d: got %s, want %s", lo + i, l.v[at], w);
        at++;
    }
    assert_int_equal(at, l.n);
    kt_lines_free(&l);
    fr_batch_free(out);
    fr_batch_free(kb);
    fr_schema_free(ks);
}

/* The rows test_row_cache writes, in its three stages. */
static int rc_stage;

static const char *rc_want(int id, char *line)
{
    if (rc_stage >= 1 && id % 10 == 3) return NULL;                   /* deleted */
    if (rc_stage >= 1 && id % 10 == 5) {                              /* upserted */
        snprintf(line, 64, "%d|new%d|%d", id, id, -id);
        return line;
    }
    if (rc_stage >= 2 && id % 10 == 7) {                              /* score alone */
        snprintf(line, 64, "%d|n%d|%d", id, id, 1000 + id);
        return line;
    }
    snprintf(line, 64, "%d|n%d|%d", id, id, id);
    return line;
}

/* One write to the ids below hi with id % 10 == rem: op 'd' deletes them, 'u' upserts
 * "new" rows, 'p' sets their score alone (a partial update). */
static void rc_write(kt_bucket *b, int hi, int rem, char op)
{
    enum { MAXW = 256 };
    char text[MAXW][48], ops[MAXW + 1];
    const char *rows[MAXW];
    int n = 0;
    for (int id = rem; id < hi && n < MAXW; id += 10, n++) {
        if (op == 'd') snprintf(text[n], sizeof text[n], "%d|NULL|NULL", id);
        else if (op == 'u') snprintf(text[n], sizeof text[n], "%d|new%d|%d", id, id, -id);
        else snprintf(text[n], sizeof text[n], "%d|NULL|%d", id, 1000 + id);
        rows[n] = text[n];
        ops[n] = op == 'd' ? 'd' : 'u';
    }
    ops[n] = 0;
    fr_error err;
    const int targets[] = { 0, 2 };
    if (kt_write_ex(b, n, rows, ops, op == 'p' ? targets : NULL, op == 'p' ? 2 : 0,
                    FR_NO_WRITER, -1, NULL, &err) < 0)
        fail_msg("write: %s", err.msg);
}

/* Lookups fill the row cache and find their rows there; upserts, deletes and partial
 * updates take the keys out, so the next lookups see the new rows, from RocksDB and then
 * from the cache again. A cache smaller than the rows keeps to its size and stays right. */
static void test_row_cache(void **state)
{
    (void)state;
    for (int small = 0; small < 2; small++) {
        fr_kv_env *env;
        fr_error err;
        fr_kv_env_options o;
        fr_kv_env_options_default(&o);
        o.write_buffer_bytes = 8 << 20;
        o.row_cache_bytes = small ? 64 << 10 : 4 << 20;
        if (fr_kv_env_new(&o, &env, &err) < 0) fail_msg("env: %s", err.msg);
        kt_bucket *b = simple_bucket("kv-rowcache");
        b->spec.env = env;
        kt_open(b);
        enum { N = 2000 };
        for (int at = 0; at < N; at += 200) {
            char text[200][48];
            const char *rows[200];
            for (int i = 0; i < 200; i++) {
                snprintf(text[i], sizeof text[i], "%d|n%d|%d", at + i, at + i, at + i);
                rows[i] = text[i];
            }
            kt_write(b, 200, rows, NULL);
        }
        assert_int_equal(fr_kv_env_row_cache_bytes(env), 0); /* writes do not fill it */
        rc_stage = 0;
        for (int pass = 0; pass < 2; pass++) expect_lookup(b, 0, N, rc_want);
        int64_t held = fr_kv_env_row_cache_bytes(env);
        assert_true(held > 0 && held <= o.row_cache_bytes);
        rc_stage = 1;
        rc_write(b, N, 3, 'd');
        rc_write(b, N, 5, 'u');
        for (int pass = 0; pass < 2; pass++) expect_lookup(b, 0, N, rc_want);
        rc_stage = 2;
        rc_write(b, N, 7, 'p');
        for (int pass = 0; pass < 2; pass++) expect_lookup(b, 0, N, rc_want);
        assert_true(fr_kv_env_row_cache_bytes(env) <= o.row_cache_bytes);
        kt_bucket_free(b);
        fr_kv_env_release(env);
    }
}

/* Every column type, with NULLs, through a lookup and through the changelog of updates
 * (both gather rows into column buffers): the rows come back as the scan (a builder) and
 * as the rows written show them. */
static void test_all_types_lookup_and_changelog(void **state)
{
    (void)state;
    fr_schema *s = kt_schema(16, (const char *[]){
        "k INT NOT NULL", "b BOOLEAN", "t TINYINT", "sm SMALLINT", "bi BIGINT", "f FLOAT",
        "d DOUBLE", "dec DECIMAL(10,2)", "dt DATE", "tm3 TIME(3)", "tm6 TIME(6)",
        "ts TIMESTAMP(3)", "tz TIMESTAMP_LTZ(6)", "c CHAR(3)", "vc VARCHAR(5)", "by BYTES" });
    kt_bucket *b = kt_bucket_new("kv-types", s, (const int[]){ 0 }, 1);
    kt_open(b);
    const char *first[] = {
        "1|true|-7|300|-9000000000|1.5|-2.25|12345.67|2024-02-29|10:11:12.123|"
        "23:59:59.999999|2024-01-01 10:00:00.5|2024-01-01 10:00:00.123456|abc|hello|xyz",
        "2|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL",
        "3|false|0|0|0|0.0|0.0|0.00|1970-01-01|00:00:00.000|00:00:00.000000|"
        "1970-01-01 00:00:00|1970-01-01 00:00:00|x|||",
    };
    kt_write(b, 3, first, NULL);
    kt_lines state1 = kt_state(b);
    assert_int_equal(state1.n, 3);
    /* Updates swap rows 1 and 2's values: the changelog holds -U (decoded stored rows) and
     * +U (the input), gathered into column buffers. */
    const char *second[] = { "1|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|"
                             "NULL|NULL|NULL",
                             "2|true|-7|300|-9000000000|1.5|-2.25|12345.67|2024-02-29|"
                             "10:11:12.123|23:59:59.999999|2024-01-01 10:00:00.5|"
                             "2024-01-01 10:00:00.123456|abc|hello|xyz" };
    fr_kv_write_result r = kt_write(b, 2, second, NULL);
    assert_int_equal(r.changelog_records, 4);
    kt_lines changes = kt_changes(b, r.base_offset);
    kt_lines state2 = kt_state(b);
    assert_int_equal(changes.n, 4);
    assert_string_equal(changes.v[0] + 3, state1.v[0]);
    assert_string_equal(changes.v[1] + 3, state2.v[0]);
    assert_string_equal(changes.v[2] + 3, state1.v[1]);
    assert_string_equal(changes.v[3] + 3, state2.v[1]);
    /* A lookup returns the rows as the scan does, in the order of the keys. */
    fr_schema *ks = kt_schema(1, (const char *[]){ "k INT" });
    fr_batch *keys = kt_batch(ks, 4, KT_ROWS("3", "2", "9", "1"));
    bool found[4];
    fr_batch *out = NULL;
    fr_error err;
    assert_int_equal(fr_kv_lookup(b->kv, keys, found, &out, &err), 0);
    assert_true(found[0] && found[1] && !found[2] && found[3]);
    kt_lines got = { 0 };
    kt_lines_of_batch(&got, out, NULL);
    kt_expect_lines("lookup", &got, 3, KT_ROWS(state2.v[2], state2.v[1], state2.v[0]));
    kt_lines_free(&state1);
    kt_lines_free(&state2);
    kt_lines_free(&changes);
    fr_batch_free(out);
    fr_batch_free(keys);
    fr_schema_free(ks);
    kt_bucket_free(b);
}

/* ---- bad writes --------------------------------------------------------------------------- */

static void test_bad_writes(void **state)
{
    (void)state;
    kt_bucket *b = simple_bucket("kv-bad");
    kt_open(b);
    KT_UPSERT(b, "1|a|1");
    /* a NULL in a NOT NULL key after a good row: nothing is applied */
    fr_schema *loose = kt_schema(3, (const char *[]){ "id INT", "name STRING", "score BIGINT" });
    fr_batch *rows = kt_batch(loose, 2, KT_ROWS("2|b|2", "NULL|c|3"));
    fr_error err;
    fr_kv_write_result r;
    assert_int_equal(fr_kv_write(b->kv, rows, NULL, NULL, 0, FR_NO_WRITER, -1, &r, &err),
                     FR_EINVAL);
    assert_non_null(strstr(err.msg, "row 1"));
    assert_non_null(strstr(err.msg, "NULL"));
    fr_batch_free(rows);
    fr_schema_free(loose);
    /* another schema */
    fr_schema *other = kt_schema(3, (const char *[]){ "id INT", "name STRING", "score INT" });
    rows = kt_batch(other, 1, KT_ROWS("2|b|2"));
    assert_int_equal(fr_kv_write(b->kv, rows, NULL, NULL, 0, FR_NO_WRITER, -1, &r, &err),
                     FR_EINVAL);
    assert_non_null(strstr(err.msg, "score"));
    fr_batch_free(rows);
    fr_schema_free(other);
    kt_expect_state(b, "1|a|1");
    assert_int_equal(fr_log_end_offset(b->log), 1);
    kt_bucket_free(b);
}

/* ---- idempotence -------------------------------------------------------------------------- */

static void test_idempotent_retries(void **state)
{
    (void)state;
    kt_bucket *b = simple_bucket("kv-idem");
    kt_open(b);
    fr_error err;
    fr_kv_write_result r;
    assert_int_equal(kt_write_ex(b, 1, KT_ROWS("1|a|1"), NULL, NULL, 0, 7, 0, &r, &err), 0);
    KT_UPSERT(b, "1|b|2"); /* another writer changes the row */
    /* the retry is refused, not applied again */
    assert_int_equal(kt_write_ex(b, 1, KT_ROWS("1|a|1"), NULL, NULL, 0, 7, 0, &r, &err),
                     FR_EDUPLICATE);
    assert_int_equal(r.changelog_records, 0);
    assert_int_equal(r.base_offset, 0);
    kt_expect_state(b, "1|b|2");
    /* a batch that changed nothing is remembered too */
    assert_int_equal(kt_write_ex(b, 1, KT_ROWS("9|NULL|NULL"), "d", NULL, 0, 7, 1, &r, &err), 0);
    assert_int_equal(r.changelog_records, 0);
    KT_UPSERT(b, "9|x|9");
    assert_int_equal(kt_write_ex(b, 1, KT_ROWS("9|NULL|NULL"), "d", NULL, 0, 7, 1, &r, &err),
                     FR_EDUPLICATE);
    kt_expect_state(b, "1|b|2", "9|x|9");
    assert_int_equal(kt_write_ex(b, 1, KT_ROWS("9|y|9"), NULL, NULL, 0, 7, 2, &r, &err), 0);
    kt_expect_state(b, "1|b|2", "9|y|9");
    kt_bucket_free(b);
}

/* ---- recovery ----------------------------------------------------------------------------- */

static void write_history(kt_bucket *b)
{
    KT_UPSERT(b, "1|a|1", "2|b|2", "3|c|3");
    kt_write(b, 2, KT_ROWS("2|NULL|NULL", "4|d|4"), "du");
    KT_UPSERT(b, "1|a2|10", "3|c|3");
    fr_error err;
    fr_kv_write_result r;
    assert_int_equal(kt_write_ex(b, 1, KT_ROWS("4|NULL|44"), NULL, (int[]){ 0, 2 }, 2,
                                 FR_NO_WRITER, -1, &r, &err), 0);
}

static void test_recovery_after_crash(void **state)
{
    (void)state;
    for (int image = 0; image < 2; image++) {
        kt_bucket *b = simple_bucket("kv-crash");
        b->spec.image = image ? FR_CHANGELOG_WAL : FR_CHANGELOG_FULL;
        kt_open(b);
        write_history(b);
        int64_t end = fr_log_end_offset(b->log);
        kt_close(b, false); /* the memtable is lost */
        kt_open(b);
        assert_int_equal(fr_kv_applied_offset(b->kv), end);
        kt_expect_state(b, "1|a2|10", "3|c|3", "4|d|44");
        if (!image) assert_int_equal(fr_kv_num_keys(b->kv), 3);
        /* writes go on where they left off */
        KT_UPSERT(b, "5|e|5");
        kt_close(b, false);
        kt_open(b);
        kt_expect_state(b, "1|a2|10", "3|c|3", "4|d|44", "5|e|5");
        kt_close(b, true); /* flushed: nothing to replay */
        kt_open(b);
        kt_expect_state(b, "1|a2|10", "3|c|3", "4|d|44", "5|e|5");
        kt_bucket_free(b);
    }
}

static void test_recovery_from_log_only(void **state)
{
    (void)state;
    for (int image = 0; image < 2; image++) {
        kt_bucket *b = simple_bucket("kv-rebuild");
        b->spec.image = image ? FR_CHANGELOG_WAL : FR_CHANGELOG_FULL;
        kt_open(b);
        write_history(b);
        kt_close(b, true);
        fr_error err;
        assert_int_equal(fr_remove_tree(b->kvdir, &err), 0);
        kt_open(b);
        kt_expect_state(b, "1|a2|10", "3|c|3", "4|d|44");
        assert_int_equal(fr_kv_applied_offset(b->kv), fr_log_end_offset(b->log));
        if (!image) assert_int_equal(fr_kv_num_keys(b->kv), 3);
        kt_bucket_free(b);
    }
}

static void test_recovery_state_ahead_of_log(void **state)
{
    (void)state;
    kt_bucket *b = simple_bucket("kv-ahead");
    kt_open(b);
    KT_UPSERT(b, "1|a|1", "2|b|2");
    int64_t cut = fr_log_end_offset(b->log);
    KT_UPSERT(b, "1|z|9", "3|c|3");
    kt_close(b, true);
    /* the log loses its last batch (as an unflushed tail would), the state keeps it */
    fr_log_options o;
    fr_log_options_default(&o);
    fr_error err;
    assert_int_equal(fr_log_open(b->logdir, &o, &b->log, &err), 0);
    assert_int_equal(fr_log_truncate(b->log, cut, &err), 0);
    kt_open(b);
    kt_expect_state(b, "1|a|1", "2|b|2");
    assert_int_equal(fr_kv_applied_offset(b->kv), cut);
    kt_bucket_free(b);
}

/* ---- concurrency -------------------------------------------------------------------------- */

/* Transfers between accounts, each one batch: every read must see the total unchanged. */
enum { ACCOUNTS = 8, TRANSFERS = 3000 };

typedef struct reader_ctx {
    kt_bucket *b;
    fr_batch *keys; /* every account */
    _Atomic int done;
    _Atomic int reads;
    _Atomic int64_t bad_total;
} reader_ctx;

static int sum_balances(void *ctx, fr_batch *batch, fr_error *err)
{
    (void)err;
    int64_t *sum = ctx;
    const fr_column *c = fr_batch_column(batch, 2);
    for (int64_t r = 0; r < fr_batch_num_rows(batch); r++) {
        fr_value v;
        fr_column_get(c, r, &v);
        *sum += v.v.i;
    }
    fr_batch_free(batch);
    return 0;
}

static void *reader_main(void *arg)
{
    reader_ctx *rc = arg;
    fr_error err;
    while (!atomic_load(&rc->done)) {
        int64_t sum = 0;
        if (fr_kv_scan(rc->b->kv, NULL, 0, NULL, 3, sum_balances, &sum, &err) < 0) {
            rc->bad_total = -1;
            break;
        }
        if (sum != ACCOUNTS * 100) rc->bad_total = sum;
        fr_value prefix = fr_value_int(fr_type_of(FR_T_INT), atomic_load(&rc->reads) % ACCOUNTS);
        int64_t one = 0;
        if (fr_kv_prefix_lookup(rc->b->kv, &prefix, 1, NULL, 0, sum_balances, &one, &err) < 0)
            rc->bad_total = -2;
        /* Point lookups of every account at once, twice so that the second finds the row
         * cache filled by the first unless a transfer came between. */
        for (int twice = 0; twice < 2; twice++) {
            bool found[ACCOUNTS];
            fr_batch *rows = NULL;
            int64_t looked = 0;
            if (fr_kv_lookup(rc->b->kv, rc->keys, found, &rows, &err) < 0) {
                rc->bad_total = -3;
                break;
            }
            sum_balances(&looked, rows, &err);
            if (looked != ACCOUNTS * 100) rc->bad_total = looked;
        }
        rc->reads++;
    }
    return NULL;
}

static void test_reads_during_writes(void **state)
{
    (void)state;
    kt_bucket *b = simple_bucket("kv-conc");
    kt_open(b);
    for (int i = 0; i < ACCOUNTS; i++) {
        char row[32];
        snprintf(row, sizeof row, "%d|acct|100", i);
        kt_write(b, 1, (const char *const[]){ row }, NULL);
    }
    int64_t bal[ACCOUNTS];
    for (int i = 0; i < ACCOUNTS; i++) bal[i] = 100;
    fr_schema *ks = kt_schema(1, (const char *[]){ "id INT" });
    reader_ctx rc = { .b = b, .keys = kt_batch(ks, ACCOUNTS, KT_ROWS("7", "0", "1", "2", "3",
                                                                    "4", "5", "6")) };
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&th[i], NULL, reader_main, &rc), 0);
    for (int t = 0; t < TRANSFERS; t++) {
        int from = t % ACCOUNTS, to = (t * 3 + 1) % ACCOUNTS;
        if (from == to) continue;
        int64_t amount = t % 7;
        bal[from] -= amount;
        bal[to] += amount;
        char r1[48], r2[48];
        snprintf(r1, sizeof r1, "%d|acct|%" PRId64, from, bal[from]);
        snprintf(r2, sizeof r2, "%d|acct|%" PRId64, to, bal[to]);
        kt_write(b, 2, (const char *const[]){ r1, r2 }, NULL);
    }
    atomic_store(&rc.done, 1);
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    assert_int_equal(rc.bad_total, 0);
    assert_true(rc.reads > 0);
    fr_batch_free(rc.keys);
    fr_schema_free(ks);
    kt_bucket_free(b);
}

/* ---- where a write finds the stored rows ------------------------------------------------ */

#define WALK_KEYS 1200
#define WALK_BATCH 200

/* The rows of keys: name and score per key, name NULL when absent. */
typedef struct walk_model {
    const char *name[WALK_KEYS];
    int score[WALK_KEYS];
} walk_model;

/* One write of keys (upserts of name/score, or deletes when name is NULL) with the exact
 * changelog the model expects, in input order. */
static void walk_write(kt_bucket *b, walk_model *m, const int *keys, int n, const char *name,
                       int score)
{
    char rows[WALK_BATCH][48], ops[WALK_BATCH + 1];
    const char *texts[WALK_BATCH] = { 0 };
    kt_lines want = { 0 };
    char line[64];
    for (int i = 0; i < n; i++) {
        int k = keys[i];
        const char *old = m->name[k];
        snprintf(rows[i], sizeof rows[i], name ? "%d|%s|%d" : "%d|NULL|NULL", k, name, score);
        texts[i] = rows[i];
        ops[i] = name ? 'u' : 'd';
        if (old) {
            snprintf(line, sizeof line, "%s %d|%s|%d", name ? "-U" : "-D", k, old, m->score[k]);
            kt_lines_add(&want, line);
        }
        if (name) {
            snprintf(line, sizeof line, "%s %s", old ? "+U" : "+I", rows[i]);
            kt_lines_add(&want, line);
        }
        m->name[k] = name;
        m->score[k] = score;
    }
    ops[n] = 0;
    int64_t from = fr_log_end_offset(b->log);
    kt_write(b, n, texts, ops);
    kt_lines got = kt_changes(b, from);
    kt_expect_lines("changelog", &got, want.n, (const char *const *)want.v);
    kt_lines_free(&want);
}

/* The keys lo <= k < hi with k % every == rem, written in batches of WALK_BATCH. */
static void walk_range(kt_bucket *b, walk_model *m, int lo, int hi, int every, int rem,
                       const char *name, int score)
{
    int keys[WALK_BATCH], n = 0;
    for (int k = lo; k < hi; k++) {
        if (k % every != rem) continue;
        keys[n++] = k;
        if (n == WALK_BATCH) {
            walk_write(b, m, keys, n, name, score);
            n = 0;
        }
    }
    if (n) walk_write(b, m, keys, n, name, score);
}

/* A write reads the rows it replaces by walking the memtable in key order, and from the
 * files (MultiGet) what the walk does not settle: rows in files only, rows in the memtable
 * over older ones in files, deletions in the memtable over rows in files, keys never
 * written, neighbouring keys and keys scattered so far apart that the walk gives up. Every
 * changelog record must carry the right old row. */
static void test_reads_across_memtable_and_files(void **state)
{
    (void)state;
    kt_bucket *b = simple_bucket("kv-walk");
    kt_open(b);
    static walk_model m;
    memset(&m, 0, sizeof m);
    fr_error err;
    walk_range(b, &m, 0, 600, 1, 0, "f", 1);
    assert_int_equal(fr_kv_flush(b->kv, &err), 0);
    walk_range(b, &m, 0, 600, 2, 0, "m", 2);   /* over the files */
    walk_range(b, &m, 0, 600, 3, 0, NULL, 0);  /* deletions: over files and memtable */
    walk_range(b, &m, 600, 1200, 10, 1, "n", 3); /* new keys, memtable only */
    walk_range(b, &m, 0, 1200, 7, 3, "a", 4);  /* every 7th key: a few steps apart */
    /* every key once, in a scattered order: 1200 keys in six writes */
    int keys[WALK_KEYS];
    for (int i = 0; i < WALK_KEYS; i++) keys[i] = (i * 389) % WALK_KEYS; /* 389 is prime */
    for (int at = 0; at < WALK_KEYS; at += WALK_BATCH)
        walk_write(b, &m, keys + at, WALK_BATCH, "z", 5);
    assert_int_equal(fr_kv_num_keys(b->kv), WALK_KEYS);
    kt_bucket_free(b);
}

/* ---- allocation failures ------------------------------------------------------------------- */

/* Each attempt n writes key 1 = v<n>, a new key 100 + n, and deletes key 2 (once). Whatever
 * allocation fails, the write is applied whole or not at all, and the state stays the
 * changelog's. */
static void test_allocation_failures(void **state)
{
    (void)state;
    kt_bucket *b = simple_bucket("kv-nomem");
    b->spec.merge = FR_MERGE_AGGREGATION;
    b->spec.delete_behavior = FR_DELETE_ALLOW;
    b->aggs[1] = FR_AGG_LISTAGG;
    b->aggs[2] = FR_AGG_SUM;
    kt_open(b);
    KT_UPSERT(b, "1|a|1", "2|b|2");
    kt_lines expect = kt_state(b);
    int failures = 0, successes = 0;
    for (int n = 1; n <= 200; n++) {
        char r1[32], r2[32];
        snprintf(r1, sizeof r1, "1|v%d|%d", n, n);
        snprintf(r2, sizeof r2, "%d|new|%d", 100 + n, n);
        fr_batch *rows = kt_batch(b->schema, 3, KT_ROWS(r1, r2, "2|NULL|NULL"));
        uint8_t ops[3] = { FR_KV_UPSERT, FR_KV_UPSERT, FR_KV_DELETE };
        int64_t end = fr_log_end_offset(b->log);
        fr_error err;
        fr_kv_write_result res;
        fr_alloc_fail_after(n);
        int rc = fr_kv_write(b->kv, rows, ops, NULL, 0, FR_NO_WRITER, -1, &res, &err);
        fr_alloc_fail_after(0);
        fr_batch_free(rows);
        assert_int_equal(fr_kv_applied_offset(b->kv), fr_log_end_offset(b->log));
        kt_lines now = kt_state(b);
        if (rc < 0) {
            if (rc != FR_ENOMEM) fail_msg("attempt %d: %s", n, err.msg);
            failures++;
            assert_int_equal(fr_log_end_offset(b->log), end);
            kt_expect_lines("state after a failed write", &now, expect.n,
                            (const char *const *)expect.v);
        } else {
            successes++;
            assert_int_equal(res.base_offset, end);
            kt_lines_free(&expect);
            expect = now;
        }
        /* reads under allocation failure fail cleanly */
        int batches = 0;
        fr_alloc_fail_after(n % 25 + 1);
        rc = fr_kv_scan(b->kv, (int[]){ 1 }, 1, NULL, 2, count_batches, &batches, &err);
        fr_alloc_fail_after(0);
        assert_true(rc == 0 || rc == FR_ENOMEM);
    }
    assert_true(failures > 10);
    assert_true(successes > 10);
    kt_lines_free(&expect);
    /* the state is the changelog's */
    kt_lines before = kt_state(b);
    kt_close(b, false);
    fr_error err;
    assert_int_equal(fr_remove_tree(b->kvdir, &err), 0);
    kt_open(b);
    kt_lines after = kt_state(b);
    kt_expect_lines("replayed state", &after, before.n, (const char *const *)before.v);
    kt_lines_free(&before);
    kt_bucket_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_option_names),
        cmocka_unit_test(test_spec_check),
        cmocka_unit_test(test_last_row_changelog),
        cmocka_unit_test(test_changelog_of_input_rows),
        cmocka_unit_test(test_last_row_wal_image),
        cmocka_unit_test(test_partial_update),
        cmocka_unit_test(test_delete_behaviors),
        cmocka_unit_test(test_first_row),
        cmocka_unit_test(test_versioned),
        cmocka_unit_test(test_aggregation_example),
        cmocka_unit_test(test_scan_order),
        cmocka_unit_test(test_scan_filter_projection),
        cmocka_unit_test(test_prefix_lookup),
        cmocka_unit_test(test_prefix_lookup_string_first),
        cmocka_unit_test(test_point_lookup),
        cmocka_unit_test(test_point_lookup_many),
        cmocka_unit_test(test_row_cache),
        cmocka_unit_test(test_all_types_lookup_and_changelog),
        cmocka_unit_test(test_bad_writes),
        cmocka_unit_test(test_idempotent_retries),
        cmocka_unit_test(test_recovery_after_crash),
        cmocka_unit_test(test_recovery_from_log_only),
        cmocka_unit_test(test_recovery_state_ahead_of_log),
        cmocka_unit_test(test_reads_during_writes),
        cmocka_unit_test(test_reads_across_memtable_and_files),
        cmocka_unit_test(test_allocation_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
