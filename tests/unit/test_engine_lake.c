/* test_engine_lake.c — tiering of lake-enabled tables into Iceberg, checked through the lake
 * API: the options, the conversion of rows to the lake's types and back, rounds of log,
 * partitioned and primary-key tables (the lake holds exactly the log's rows, or the KV
 * state, with the right __bucket, __offset and __timestamp), rounds that resume after a
 * crash, retention that keeps untiered segments, a corrupt lake, the status and the
 * background pool. */
#include "engine_pk_testkit.h"

#include "engine/engine_int.h"

#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

/* ---- helpers ----------------------------------------------------------------------------- */

static fr_engine *open_lake_engine(const char *dir, int threads, int64_t segment_bytes)
{
    fr_engine_options o;
    fr_engine_options_default(&o);
    o.data_dir = dir;
    o.flush = FR_FLUSH_NONE;
    o.retention_check_interval_ms = 0;
    o.lake_tiering_threads = threads;
    if (segment_bytes > 0) o.segment_bytes = segment_bytes;
    fr_engine *e = NULL;
    fr_error err = {0};
    KIT_CHECK(fr_engine_open(&o, &e, &err), err);
    return e;
}

/* Sorted row texts. */
typedef struct texts {
    char **s;
    int n, cap;
} texts;

static void texts_add(texts *t, const char *s)
{
    if (t->n == t->cap) {
        t->cap = t->cap * 2 + 16;
        t->s = realloc(t->s, (size_t)t->cap * sizeof *t->s);
    }
    t->s[t->n++] = strdup(s);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void texts_sort(texts *t) { qsort(t->s, (size_t)t->n, sizeof *t->s, cmp_str); }

static void texts_free(texts *t)
{
    for (int i = 0; i < t->n; i++) free(t->s[i]);
    free(t->s);
    memset(t, 0, sizeof *t);
}

static void texts_expect_equal(texts *got, texts *want, const char *what)
{
    texts_sort(got);
    texts_sort(want);
    for (int i = 0; i < got->n && i < want->n; i++)
        if (strcmp(got->s[i], want->s[i]) != 0)
            fail_msg("%s: row %d is '%s' in the lake but '%s' expected", what, i, got->s[i],
                     want->s[i]);
    if (got->n != want->n)
        fail_msg("%s: %d rows in the lake, %d expected", what, got->n, want->n);
}

/* "v0|v1|..." of the first ncols columns of row r. */
static void row_text(const fr_batch *b, int ncols, int64_t r, fr_buf *out)
{
    fr_error err = {0};
    fr_buf_reset(out);
    for (int c = 0; c < ncols; c++) {
        fr_value v;
        fr_column_get(fr_batch_column(b, c), r, &v);
        if (c) KIT_CHECK(fr_buf_append(out, "|", 1, &err), err);
        if (v.is_null) KIT_CHECK(fr_buf_append(out, "NULL", 4, &err), err);
        else KIT_CHECK(fr_value_format(&v, out, &err), err);
    }
}

static int64_t cell_i64(const fr_batch *b, int col, int64_t r)
{
    fr_value v;
    fr_column_get(fr_batch_column(b, col), r, &v);
    return v.v.i;
}

/* What the lake's current snapshot holds, back in the table's types: the table's columns,
 * and with extras "#b|o|ts". */
static texts lake_texts(fr_table *t, bool extras)
{
    texts out = {0};
    fr_iceberg_table *ice = NULL;
    fr_error err = {0};
    KIT_CHECK(fr_table_lake_open(t, &ice, &err), err);
    int n = fr_schema_num_fields(fr_table_schema(t)), nl = n + FR_LAKE_EXTRA_COLUMNS;
    int cols[64];
    for (int i = 0; i < nl; i++) cols[i] = i;
    fr_iceberg_scan *s = NULL;
    KIT_CHECK(fr_iceberg_scan_open(ice, -1, cols, nl, NULL, &s, &err), err);
    fr_buf buf;
    fr_buf_init(&buf);
    for (;;) {
        fr_batch *lake = NULL, *rows = NULL;
        KIT_CHECK(fr_iceberg_scan_next(s, &lake, &err), err);
        if (!lake) break;
        KIT_CHECK(fr_lake_rows_to_table(t, lake, cols, nl, &rows, &err), err);
        for (int64_t r = 0; r < fr_batch_num_rows(rows); r++) {
            row_text(rows, n, r, &buf);
            char tail[96];
            snprintf(tail, sizeof tail, "#%lld|%lld|%lld", (long long)cell_i64(rows, n, r),
                     (long long)cell_i64(rows, n + 1, r), (long long)cell_i64(rows, n + 2, r));
            if (extras) KIT_CHECK(fr_buf_append(&buf, tail, strlen(tail), &err), err);
            KIT_CHECK(fr_buf_append(&buf, "", 1, &err), err);
            texts_add(&out, (const char *)buf.data);
        }
        fr_batch_free(lake);
        fr_batch_free(rows);
    }
    fr_buf_free(&buf);
    fr_iceberg_scan_close(s);
    fr_iceberg_close(ice);
    return out;
}

typedef struct log_ctx {
    texts *out;
    int ncols;
} log_ctx;

static int collect_log(void *ctx, int bucket, fr_batch *batch, const int64_t *offsets,
                       const uint8_t *change_types, int64_t commit_ts, fr_error *err)
{
    log_ctx *c = ctx;
    fr_buf buf;
    fr_buf_init(&buf);
    for (int64_t r = 0; r < fr_batch_num_rows(batch); r++) {
        row_text(batch, c->ncols, r, &buf);
        char tail[96];
        snprintf(tail, sizeof tail, "#%d|%lld|%lld", bucket, (long long)offsets[r],
                 (long long)commit_ts * 1000);
        fr_buf_append(&buf, tail, strlen(tail) + 1, err);
        texts_add(c->out, (const char *)buf.data);
    }
    fr_buf_free(&buf);
    fr_batch_free(batch);
    return 0;
}

/* Every record of the table's logs, as lake_texts gives it with extras. */
static texts log_texts(fr_table *t)
{
    texts out = {0};
    log_ctx c = {&out, fr_schema_num_fields(fr_table_schema(t))};
    fr_scan_spec spec = kit_spec(FR_START_EARLIEST, 0);
    fr_error err = {0};
    KIT_CHECK(fr_table_scan(t, &spec, collect_log, &c, &err), err);
    return out;
}

static int collect_state(void *ctx, fr_batch *batch, fr_error *err)
{
    (void)err;
    log_ctx *c = ctx;
    fr_buf buf;
    fr_buf_init(&buf);
    for (int64_t r = 0; r < fr_batch_num_rows(batch); r++) {
        row_text(batch, c->ncols, r, &buf);
        fr_buf_append(&buf, "", 1, err);
        texts_add(c->out, (const char *)buf.data);
    }
    fr_buf_free(&buf);
    fr_batch_free(batch);
    return 0;
}

static texts state_texts(fr_table *t)
{
    texts out = {0};
    log_ctx c = {&out, fr_schema_num_fields(fr_table_schema(t))};
    fr_error err = {0};
    KIT_CHECK(fr_table_scan_state(t, NULL, 0, NULL, collect_state, &c, &err), err);
    return out;
}

static int64_t tier(fr_table *t)
{
    int64_t id = -2;
    fr_error err = {0};
    KIT_CHECK(fr_table_tier(t, &id, &err), err);
    return id;
}

static void append(fr_table *t, int64_t first, int64_t n)
{
    fr_batch *b = kit_batch(first, n);
    fr_error err = {0};
    KIT_CHECK(fr_table_append(t, b, FR_NO_WRITER, -1, NULL, &err), err);
    fr_batch_free(b);
}

static void expect_lake_is_log(fr_table *t, const char *what)
{
    texts got = lake_texts(t, true), want = log_texts(t);
    texts_expect_equal(&got, &want, what);
    texts_free(&got);
    texts_free(&want);
}

static const fr_option LAKE_2B[] = {{"table.datalake.enabled", "true"},
                                    {"bucket.num", "2"},
                                    {"bucket.key", "id"}};

/* ---- options ----------------------------------------------------------------------------- */

static void expect_create_fails(fr_engine *e, const fr_field *f, int nf, const fr_option *o,
                                int no, int code, const char *what)
{
    fr_schema *s = NULL;
    fr_error err = {0};
    KIT_CHECK(fr_schema_new(f, nf, 0, &s, &err), err);
    fr_table_spec spec = {.db = "default", .name = "bad", .schema = s, .options = o,
                          .noptions = no};
    int rc = fr_engine_create_table(e, &spec, false, &err);
    fr_schema_free(s);
    if (rc != code || !strstr(err.msg, what))
        fail_msg("expected %d with '%s', got %d: %s", code, what, rc, err.msg);
}

static void test_options(void **state)
{
    (void)state;
    char *dir = kit_tmpdir("lakeopts");
    fr_engine *e = open_lake_engine(dir, 0, 0);
    fr_field f[2] = {{.name = "id", .type = fr_type_of(FR_T_BIGINT)},
                     {.name = "at", .type = fr_type_time_like(FR_T_TIMESTAMP, 9)}};
    fr_option bad_bool[] = {{"table.datalake.enabled", "yes"}};
    expect_create_fails(e, f, 1, bad_bool, 1, FR_EINVAL, "give 'true' or 'false'");
    fr_option paimon[] = {{"table.datalake.enabled", "true"}, {"table.datalake.format", "paimon"}};
    expect_create_fails(e, f, 1, paimon, 2, FR_EUNSUPPORTED, "not yet supported");
    fr_option delta[] = {{"table.datalake.format", "delta"}};
    expect_create_fails(e, f, 1, delta, 1, FR_EINVAL, "'iceberg'");
    fr_option fresh[] = {{"table.datalake.freshness", "soon"}};
    expect_create_fails(e, f, 1, fresh, 1, FR_EINVAL, "positive duration");
    fr_option on[] = {{"table.datalake.enabled", "TRUE"}, {"table.datalake.freshness", "10s"}};
    /* TIMESTAMP(9) cannot go to the lake, whose times are microseconds. */
    expect_create_fails(e, f, 2, on, 2, FR_EUNSUPPORTED, "precision");
    fr_option bytes[] = {{"table.datalake.enabled", "true"},
                         {"table.log.retention.bytes", "1gb"}};
    expect_create_fails(e, f, 1, bytes, 2, FR_EINVAL, "table.log.ttl");

    fr_error err = {0};
    fr_schema *s = NULL;
    f[1].type = fr_type_time_like(FR_T_TIMESTAMP, 3);
    KIT_CHECK(fr_schema_new(f, 2, 0, &s, &err), err);
    fr_table_spec spec = {.db = "default", .name = "t", .schema = s, .options = on,
                          .noptions = 2};
    KIT_CHECK(fr_engine_create_table(e, &spec, false, &err), err);
    spec.name = "plain";
    spec.options = NULL;
    spec.noptions = 0;
    KIT_CHECK(fr_engine_create_table(e, &spec, false, &err), err);
    fr_schema_free(s);
    fr_table *t = kit_table(e, "default", "t"), *p = kit_table(e, "default", "plain");
    assert_true(fr_table_lake_enabled(t));
    assert_false(fr_table_lake_enabled(p));
    assert_null(fr_table_lake_schema(p));
    const fr_schema *ls = fr_table_lake_schema(t);
    assert_int_equal(fr_schema_num_fields(ls), 2 + FR_LAKE_EXTRA_COLUMNS);
    assert_string_equal(fr_schema_field(ls, 2)->name, FR_LAKE_COL_BUCKET);
    assert_int_equal(fr_schema_field(ls, 1)->type.precision, 6);
    const char *k, *v;
    fr_table_option(t, 0, &k, &v);
    assert_string_equal(v, "true"); /* normalized */
    int64_t id = 0;
    assert_int_equal(fr_table_tier(p, &id, &err), FR_EINVAL);
    assert_non_null(strstr(err.msg, "not lake-enabled"));
    fr_table_release(t);
    fr_table_release(p);
    fr_engine_close(e);

    /* The engine's keys. */
    fr_engine_options o;
    fr_engine_options_default(&o);
    assert_int_equal(o.lake_tiering_threads, 2);
    assert_null(o.lake_warehouse);
    char path[64];
    snprintf(path, sizeof path, "/tmp/wh-%d", 7);
    KIT_CHECK(fr_engine_options_set(&o, "lake.warehouse", path, &err), err);
    path[0] = 'X'; /* the options keep a copy */
    assert_string_equal(o.lake_warehouse, "/tmp/wh-7");
    KIT_CHECK(fr_engine_options_set(&o, "lake.tiering.threads", "0", &err), err);
    assert_int_equal(o.lake_tiering_threads, 0);
    assert_int_equal(fr_engine_options_set(&o, "lake.tiering.threads", "-1", &err), FR_EINVAL);
    assert_non_null(strstr(err.msg, "lake.tiering.threads"));
    assert_int_equal(fr_engine_options_set(&o, "lake.warehouse", "", &err), FR_EINVAL);
    kit_rmdir(dir);
}

/* ---- rows to the lake and back ----------------------------------------------------------- */

static void test_rows_convert(void **state)
{
    (void)state;
    char *dir = kit_tmpdir("lakerows");
    fr_engine *e = open_lake_engine(dir, 0, 0);
    fr_field f[6] = {
        {.name = "ts", .type = fr_type_time_like(FR_T_TIMESTAMP, 3)},
        {.name = "tm", .type = fr_type_time_like(FR_T_TIME, 0)},
        {.name = "ltz", .type = fr_type_time_like(FR_T_TIMESTAMP_LTZ, 6)},
        {.name = "c", .type = fr_type_of(FR_T_CHAR)},
        {.name = "v", .type = fr_type_of(FR_T_VARCHAR)},
        {.name = "d", .type = fr_type_of(FR_T_DATE)},
    };
    f[3].type.length = 3;
    f[4].type.length = 10;
    fr_schema *s = NULL;
    fr_error err = {0};
    KIT_CHECK(fr_schema_new(f, 6, 0, &s, &err), err);
    fr_option on[] = {{"table.datalake.enabled", "true"}};
    fr_table_spec spec = {.db = "default", .name = "t", .schema = s, .options = on,
                          .noptions = 1};
    KIT_CHECK(fr_engine_create_table(e, &spec, false, &err), err);
    fr_table *t = kit_table(e, "default", "t");
    fr_builder *bld = NULL;
    KIT_CHECK(fr_builder_new(fr_table_schema(t), &bld, &err), err);
    for (int i = 0; i < 3; i++) {
        KIT_CHECK(fr_builder_append_i64(bld, 0, 1700000000123 + i, &err), err);
        if (i == 1) KIT_CHECK(fr_builder_append_null(bld, 1, &err), err);
        else KIT_CHECK(fr_builder_append_i64(bld, 1, 3600 + i, &err), err);
        KIT_CHECK(fr_builder_append_i64(bld, 2, 1700000000123456 + i, &err), err);
        KIT_CHECK(fr_builder_append_bytes(bld, 3, "abc", 3, &err), err);
        if (i == 2) KIT_CHECK(fr_builder_append_null(bld, 4, &err), err);
        else KIT_CHECK(fr_builder_append_bytes(bld, 4, "hello", (size_t)(5 - i), &err), err);
        KIT_CHECK(fr_builder_append_i64(bld, 5, 19000 + i, &err), err);
    }
    fr_batch *rows = NULL, *lake = NULL, *back = NULL;
    KIT_CHECK(fr_builder_finish(bld, &rows, &err), err);
    fr_builder_free(bld);
    int64_t offsets[3] = {40, 41, 42};
    KIT_CHECK(fr_lake_rows_from_table(t, rows, 5, offsets, 1700000000999, &lake, &err), err);
    assert_true(fr_schema_equal(fr_batch_schema(lake), fr_table_lake_schema(t)));
    assert_int_equal(cell_i64(lake, 0, 1), (1700000000123 + 1) * 1000);
    assert_int_equal(cell_i64(lake, 1, 2), (int64_t)(3600 + 2) * 1000000);
    assert_true(fr_column_is_null(fr_batch_column(lake, 1), 1));
    assert_int_equal(cell_i64(lake, 2, 0), 1700000000123456);
    assert_int_equal(fr_batch_column(lake, 4)->type.id, FR_T_STRING);
    assert_int_equal(cell_i64(lake, 6, 2), 5);
    assert_int_equal(cell_i64(lake, 7, 1), 41);
    assert_int_equal(cell_i64(lake, 8, 0), 1700000000999000);
    int cols[9] = {0, 1, 2, 3, 4, 5, 6, 7, 8};
    KIT_CHECK(fr_lake_rows_to_table(t, lake, cols, 9, &back, &err), err);
    fr_buf a, b;
    fr_buf_init(&a);
    fr_buf_init(&b);
    for (int64_t r = 0; r < 3; r++) {
        row_text(rows, 6, r, &a);
        row_text(back, 6, r, &b);
        assert_int_equal(a.len, b.len);
        assert_memory_equal(a.data, b.data, a.len);
    }
    for (int c = 0; c < 6; c++)
        assert_true(fr_type_equal(&fr_batch_column(back, c)->type, &f[c].type));
    fr_batch_free(back);
    /* A projection, in another order. */
    int proj[3] = {7, 1, 4};
    KIT_CHECK(fr_batch_project(lake, proj, 3, &back, &err), err);
    fr_batch *back2 = NULL;
    KIT_CHECK(fr_lake_rows_to_table(t, back, proj, 3, &back2, &err), err);
    assert_int_equal(cell_i64(back2, 0, 2), 42);
    assert_int_equal(cell_i64(back2, 1, 0), 3600);
    assert_string_equal(fr_schema_field(fr_batch_schema(back2), 2)->name, "v");
    assert_int_equal(fr_batch_column(back2, 2)->type.id, FR_T_VARCHAR);
    fr_buf_free(&a);
    fr_buf_free(&b);
    fr_batch_free(back2);
    fr_batch_free(back);
    fr_batch_free(lake);
    /* Tiered through Parquet and read back: the same values in the table's types. */
    KIT_CHECK(fr_table_append(t, rows, FR_NO_WRITER, -1, NULL, &err), err);
    KIT_CHECK(fr_table_append(t, rows, FR_NO_WRITER, -1, NULL, &err), err);
    assert_true(tier(t) >= 0);
    expect_lake_is_log(t, "time, char and varchar columns");
    fr_batch_free(rows);
    fr_schema_free(s);
    fr_table_release(t);
    fr_engine_close(e);
    kit_rmdir(dir);
}

/* ---- log tables -------------------------------------------------------------------------- */

static void test_log_table(void **state)
{
    (void)state;
    char *dir = kit_tmpdir("lakelog");
    fr_engine *e = open_lake_engine(dir, 0, 0);
    kit_create_table(e, "default", "t", LAKE_2B, 3);
    fr_table *t = kit_table(e, "default", "t");
    /* Nothing to tier: no snapshot. */
    assert_int_equal(tier(t), -1);
    append(t, 0, 100);
    append(t, 100, 50);
    fr_lake_status st;
    fr_error err = {0};
    KIT_CHECK(fr_table_lake_status(t, &st, &err), err);
    assert_int_equal(st.lag_records, 150);
    assert_int_equal(st.snapshot_id, -1);
    int64_t s1 = tier(t);
    assert_true(s1 >= 0);
    expect_lake_is_log(t, "after the first round");
    KIT_CHECK(fr_table_lake_status(t, &st, &err), err);
    assert_int_equal(st.lag_records, 0);
    assert_int_equal(st.lag_ms, 0);
    assert_int_equal(st.snapshot_id, s1);
    assert_int_equal(st.last_error[0], '\0');
    /* Nothing new: the same snapshot. */
    assert_int_equal(tier(t), s1);
    append(t, 150, 30);
    usleep(30 * 1000);
    KIT_CHECK(fr_table_lake_status(t, &st, &err), err);
    assert_int_equal(st.lag_records, 30);
    assert_true(st.lag_ms >= 25); /* the age of the oldest untiered record */
    int64_t s2 = tier(t);
    assert_true(s2 != s1);
    expect_lake_is_log(t, "after the second round");

    /* The snapshots record every bucket's tiered offset. */
    fr_lake_snapshot *snaps = NULL;
    int n = 0;
    KIT_CHECK(fr_table_lake_snapshots(t, &snaps, &n, &err), err);
    assert_int_equal(n, 2);
    assert_int_equal(snaps[1].snapshot_id, s2);
    int64_t total = 0;
    for (int i = 0; i < snaps[1].noffsets; i++) {
        assert_int_equal(snaps[1].offsets[i].partition_id, -1);
        fr_log *log = fr_table_log(t, snaps[1].offsets[i].bucket);
        assert_int_equal(snaps[1].offsets[i].offset, fr_log_end_offset(log));
        total += snaps[1].offsets[i].offset;
    }
    assert_int_equal(total, 180);
    fr_lake_snapshots_free(snaps, n);

    /* Reopened, tiering goes on from the offsets of the last snapshot. */
    fr_table_release(t);
    fr_engine_close(e);
    e = open_lake_engine(dir, 0, 0);
    t = kit_table(e, "default", "t");
    assert_int_equal(tier(t), s2);
    append(t, 180, 20);
    assert_true(tier(t) != s2);
    expect_lake_is_log(t, "after reopening");
    KIT_CHECK(fr_table_lake_status(t, &st, &err), err);
    assert_int_equal(st.rounds, 2);
    assert_int_equal(st.failures, 0);
    fr_table_release(t);
    fr_engine_close(e);
    kit_rmdir(dir);
}

static void test_partitioned(void **state)
{
    (void)state;
    char *dir = kit_tmpdir("lakepart");
    fr_engine *e = open_lake_engine(dir, 0, 0);
    const char *part[] = {"dt"};
    fr_option o[] = {{"table.datalake.enabled", "true"}, {"bucket.num", "3"}};
    PK_CREATE_OK(e, "t", NULL, 0, part, 1, o, 2);
    fr_table *t = kit_table(e, "default", "t");
    pk_row rows[] = {{"2026-11-01", 1, "a", 1.5}, {"2026-11-02", 2, NULL, 2.5},
                     {"2026-11-01", 3, "c", 3.5}, {"2026-11-03", 4, "d", -1}};
    for (int round = 0; round < 3; round++) {
        for (int k = 0; k < 4; k++) {
            fr_batch *b = pk_batch(t, rows, 4);
            fr_error err = {0};
            KIT_CHECK(fr_table_append(t, b, FR_NO_WRITER, -1, NULL, &err), err);
            fr_batch_free(b);
            rows[k].id += 10;
        }
        assert_true(tier(t) >= 0);
        expect_lake_is_log(t, "a partitioned table");
    }
    fr_lake_snapshot *snaps = NULL;
    int n = 0;
    fr_error err = {0};
    KIT_CHECK(fr_table_lake_snapshots(t, &snaps, &n, &err), err);
    assert_int_equal(n, 3);
    int64_t p1 = pk_partition_id(t, "dt=2026-11-01");
    bool seen = false;
    for (int i = 0; i < snaps[2].noffsets; i++) {
        if (snaps[2].offsets[i].partition_id != p1) continue;
        seen = true;
        fr_log *log = fr_table_partition_log(t, p1, snaps[2].offsets[i].bucket);
        assert_int_equal(snaps[2].offsets[i].offset, fr_log_end_offset(log));
    }
    assert_true(seen);
    fr_lake_snapshots_free(snaps, n);
    fr_table_release(t);
    fr_engine_close(e);
    kit_rmdir(dir);
}

/* ---- primary-key tables -------------------------------------------------------------------- */

static void expect_lake_is_state(fr_table *t, const char *what)
{
    texts got = lake_texts(t, false), want = state_texts(t);
    texts_expect_equal(&got, &want, what);
    texts_free(&got);
    texts_free(&want);
}

/* A random workload of upserts and deletes, several rounds of it, each tiered (but one);
 * the lake must hold the KV state after each round. */
static void pk_workload(fr_table *t, const char *what)
{
    const char *dts[] = {"a", "b"};
    char names[64][16];
    for (int round = 0; round < 6; round++) {
        /* Upserts, updates and deletes over a small key space, several per round, with keys
         * changed more than once within a round. */
        for (int w = 0; w < 4; w++) {
            pk_row rows[16];
            uint8_t ops[16];
            for (int i = 0; i < 16; i++) {
                int k = rand() % 24;
                snprintf(names[i], sizeof names[i], "r%dw%di%d", round, w, i);
                rows[i] = (pk_row){dts[k % 2], k, (rand() % 5) ? names[i] : NULL,
                                   (double)(rand() % 100)};
                ops[i] = rand() % 4 == 0 ? FR_KV_DELETE : FR_KV_UPSERT;
            }
            pk_put(t, rows, 16, ops);
        }
        if (round == 2) continue; /* two rounds' changes in one tiering round */
        assert_true(tier(t) >= 0);
        expect_lake_is_state(t, what);
    }
}

static void test_pk_table(void **state)
{
    (void)state;
    unsigned seed = (unsigned)time(NULL);
    const char *env = getenv("FIRTH_TEST_SEED");
    if (env) seed = (unsigned)strtoul(env, NULL, 10);
    printf("test_pk_table seed %u\n", seed);
    srand(seed);
    char *dir = kit_tmpdir("lakepk");
    fr_engine *e = open_lake_engine(dir, 0, 0);
    const char *pk[] = {"dt", "id"}, *part[] = {"dt"};
    fr_option o[] = {{"table.datalake.enabled", "true"}, {"bucket.num", "2"}};
    PK_CREATE_OK(e, "t", pk, 2, part, 1, o, 2);
    fr_table *t = kit_table(e, "default", "t");
    pk_workload(t, "a primary-key table");
    fr_table_release(t);
    /* The WAL changelog image: updates write +U alone, new keys may come as +U too. */
    fr_option wal[] = {{"table.datalake.enabled", "true"}, {"bucket.num", "3"},
                       {"table.changelog.image", "WAL"}};
    PK_CREATE_OK(e, "w", pk, 2, NULL, 0, wal, 3);
    t = kit_table(e, "default", "w");
    /* With a budget of 7 records per bucket, each round commits several times; every commit
     * is a consistent state and the last one the KV state. */
    fr_tier_pk_rows_max = 7;
    pk_workload(t, "a primary-key table with the WAL image, in commits of a few records");
    fr_tier_pk_rows_max = 1 << 20;
    fr_lake_snapshot *snaps = NULL;
    int nsnaps = 0;
    fr_error err = {0};
    KIT_CHECK(fr_table_lake_snapshots(t, &snaps, &nsnaps, &err), err);
    assert_true(nsnaps > 10); /* 5 rounds of 64 changes over 3 buckets */
    fr_lake_snapshots_free(snaps, nsnaps);
    fr_table_release(t);
    fr_engine_close(e);
    kit_rmdir(dir);
}

/* ---- crashes ----------------------------------------------------------------------------- */

static int count_files(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) n += de->d_name[0] != '.';
    closedir(d);
    return n;
}

/* A child process writes files of a commit to the lake and dies without publishing it, as a
 * round killed in the middle would; the next round's first open removes them and the lake
 * ends with every record once. */
static void test_crash_resume(void **state)
{
    (void)state;
    char *dir = kit_tmpdir("lakecrash");
    fr_engine *e = open_lake_engine(dir, 0, 0);
    kit_create_table(e, "default", "t", LAKE_2B, 3);
    fr_table *t = kit_table(e, "default", "t");
    append(t, 0, 40);
    assert_true(tier(t) >= 0);
    append(t, 40, 40);
    char data[2048];
    snprintf(data, sizeof data, "%s/lake/default/t/data", dir);
    int before = count_files(data);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        fr_iceberg_table *ice = NULL;
        fr_iceberg_commit *c = NULL;
        fr_error err = {0};
        fr_batch *rows = kit_batch(40, 40), *lake = NULL;
        int64_t offs[40];
        for (int i = 0; i < 40; i++) offs[i] = 1000 + i;
        if (fr_table_lake_open(t, &ice, &err) < 0 || fr_iceberg_commit_begin(ice, &c, &err) < 0 ||
            fr_lake_rows_from_table(t, rows, 0, offs, 1, &lake, &err) < 0 ||
            fr_iceberg_commit_add_rows(c, lake, &err) < 0)
            _exit(3);
        /* Data files are written as rows come or at finish: force what a writer may leave. */
        kill(getpid(), SIGKILL);
        _exit(4);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));
    fr_table_release(t);
    fr_engine_close(e);
    /* Leave an orphan for certain, whatever the writer wrote before it died. */
    char orphan[2200];
    snprintf(orphan, sizeof orphan, "%s/orphan-of-a-dead-round.parquet", data);
    fr_error err = {0};
    KIT_CHECK(fr_write_file_atomic(orphan, "PAR1", 4, &err), err);
    assert_true(count_files(data) > before);

    e = open_lake_engine(dir, 0, 0);
    t = kit_table(e, "default", "t");
    assert_true(tier(t) >= 0);
    assert_false(fr_path_exists(orphan));
    expect_lake_is_log(t, "after a crashed round");
    fr_table_release(t);
    fr_engine_close(e);
    kit_rmdir(dir);
}

/* ---- retention --------------------------------------------------------------------------- */

static int64_t bucket_start(fr_table *t, int b) { return fr_log_start_offset(fr_table_log(t, b)); }

static void test_retention(void **state)
{
    (void)state;
    char *dir = kit_tmpdir("lakeret");
    fr_engine *e = open_lake_engine(dir, 0, 2048);
    fr_option lake[] = {{"table.datalake.enabled", "true"}, {"table.log.ttl", "1h"}};
    fr_option plain[] = {{"table.log.ttl", "1h"}};
    kit_create_table(e, "default", "t", lake, 2);
    kit_create_table(e, "default", "p", plain, 1);
    fr_table *t = kit_table(e, "default", "t"), *p = kit_table(e, "default", "p");
    for (int i = 0; i < 20; i++) {
        append(t, i * 20, 20);
        append(p, i * 20, 20);
    }
    assert_true(fr_log_num_segments(fr_table_log(t, 0)) > 3);
    int64_t later = fr_now_ms() + 2 * 3600 * 1000;
    int removed = 0;
    fr_error err = {0};
    /* The plain table loses its old segments; the lake table keeps them all: none is
     * tiered. */
    KIT_CHECK(fr_engine_enforce_retention_at(e, later, &removed, &err), err);
    assert_true(removed > 0);
    assert_true(bucket_start(p, 0) > 0);
    assert_int_equal(bucket_start(t, 0), 0);
    /* Tiered, they may go. */
    assert_true(tier(t) >= 0);
    int64_t tiered = fr_log_end_offset(fr_table_log(t, 0));
    KIT_CHECK(fr_engine_enforce_retention_at(e, later, &removed, &err), err);
    assert_true(removed > 0);
    assert_true(bucket_start(t, 0) > 0);
    assert_true(bucket_start(t, 0) <= tiered);
    /* New untiered records: what holds them stays, even far in the future. */
    for (int i = 0; i < 20; i++) append(t, 1000 + i * 20, 20);
    KIT_CHECK(fr_engine_enforce_retention_at(e, later + 3600 * 1000, &removed, &err), err);
    assert_true(bucket_start(t, 0) <= tiered);
    /* Not yet older than the ttl: nothing goes though it is tiered. */
    assert_true(tier(t) >= 0);
    int64_t start = bucket_start(t, 0);
    KIT_CHECK(fr_engine_enforce_retention_at(e, fr_now_ms(), &removed, &err), err);
    assert_int_equal(bucket_start(t, 0), start);
    /* The lake keeps every record, those retention removed from the log included. */
    texts all = lake_texts(t, true);
    assert_int_equal(all.n, 800);
    texts_free(&all);
    fr_table_release(t);
    fr_table_release(p);
    fr_engine_close(e);
    kit_rmdir(dir);
}

/* ---- a corrupt lake ---------------------------------------------------------------------- */

static void corrupt_metadata(const char *meta)
{
    DIR *d = opendir(meta);
    assert_non_null(d);
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (!strstr(de->d_name, ".metadata.json")) continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", meta, de->d_name);
        fr_error err = {0};
        KIT_CHECK(fr_write_file_atomic(path, "{\"format-version\": 2, \"oops", 27, &err), err);
    }
    closedir(d);
}

static void test_corrupt_lake(void **state)
{
    (void)state;
    char *dir = kit_tmpdir("lakebad");
    fr_engine *e = open_lake_engine(dir, 0, 0);
    kit_create_table(e, "default", "t", LAKE_2B, 3);
    fr_table *t = kit_table(e, "default", "t");
    append(t, 0, 50);
    assert_true(tier(t) >= 0);
    append(t, 50, 50);
    fr_table_release(t);
    fr_engine_close(e);
    char meta[2048];
    snprintf(meta, sizeof meta, "%s/lake/default/t/metadata", dir);
    corrupt_metadata(meta);

    e = open_lake_engine(dir, 0, 0);
    t = kit_table(e, "default", "t");
    int64_t id = 0;
    fr_error err = {0};
    int rc = fr_table_tier(t, &id, &err);
    assert_true(rc < 0);
    printf("a corrupt lake: %s\n", err.msg);
    assert_non_null(strstr(err.msg, "default.t"));
    fr_lake_status st;
    KIT_CHECK(fr_table_lake_status(t, &st, &err), err);
    assert_int_equal(st.failures, 1);
    assert_true(st.last_error[0] != '\0');
    assert_int_equal(st.lag_records, 100); /* nothing known to be tiered */
    /* The log keeps its data, retention included. */
    int removed = 0;
    KIT_CHECK(fr_engine_enforce_retention_at(e, fr_now_ms() + 30LL * 86400 * 1000, &removed,
                                             &err), err);
    assert_int_equal(removed, 0);
    fr_scan_spec spec = kit_spec(FR_START_EARLIEST, 0);
    kit_rows r = kit_scan(t, &spec);
    assert_int_equal(r.n, 100);
    kit_rows_free(&r);
    /* Retried every round: still failing, still clear. */
    assert_true(fr_table_tier(t, &id, &err) < 0);
    /* A lake removed altogether is made anew, from the log. */
    char lakedir[2048];
    snprintf(lakedir, sizeof lakedir, "%s/lake/default/t", dir);
    KIT_CHECK(fr_remove_tree(lakedir, &err), err);
    assert_true(tier(t) >= 0);
    expect_lake_is_log(t, "a lake made anew");
    fr_table_release(t);
    fr_engine_close(e);
    kit_rmdir(dir);
}

/* ---- the background pool ----------------------------------------------------------------- */

static void test_background(void **state)
{
    (void)state;
    char *dir = kit_tmpdir("lakepool");
    fr_engine *e = open_lake_engine(dir, 1, 0);
    fr_option o[] = {{"table.datalake.enabled", "true"}, {"table.datalake.freshness", "100ms"}};
    kit_create_table(e, "default", "t", o, 2);
    kit_create_table(e, "default", "u", o, 2);
    fr_table *t = kit_table(e, "default", "t"), *u = kit_table(e, "default", "u");
    append(t, 0, 10);
    append(u, 0, 20);
    fr_lake_status st = {0}, su = {0};
    fr_error err = {0};
    for (int i = 0; i < 100; i++) {
        KIT_CHECK(fr_table_lake_status(t, &st, &err), err);
        KIT_CHECK(fr_table_lake_status(u, &su, &err), err);
        if (st.snapshot_id >= 0 && st.lag_records == 0 && su.snapshot_id >= 0 &&
            su.lag_records == 0)
            break;
        usleep(50 * 1000);
    }
    assert_true(st.snapshot_id >= 0 && su.snapshot_id >= 0);
    assert_int_equal(st.lag_records, 0);
    expect_lake_is_log(t, "tiered in the background");
    expect_lake_is_log(u, "tiered in the background");
    /* Dropping a table removes its lake. */
    char lakedir[2048];
    snprintf(lakedir, sizeof lakedir, "%s/lake/default/u", dir);
    assert_true(fr_path_exists(lakedir));
    fr_table_release(u);
    KIT_CHECK(fr_engine_drop_table(e, "default", "u", false, &err), err);
    assert_false(fr_path_exists(lakedir));
    /* A table dropped while held, then created again: the old handle's last release leaves
     * the new table's lake alone. */
    fr_option manual[] = {{"table.datalake.enabled", "true"}};
    kit_create_table(e, "default", "v", manual, 1);
    fr_table *old = kit_table(e, "default", "v");
    append(old, 0, 5);
    assert_true(tier(old) >= 0);
    KIT_CHECK(fr_engine_drop_table(e, "default", "v", false, &err), err);
    kit_create_table(e, "default", "v", manual, 1);
    fr_table *v = kit_table(e, "default", "v");
    append(v, 100, 3);
    int64_t sv = tier(v);
    fr_table_release(old);
    texts vt = lake_texts(v, false);
    assert_int_equal(vt.n, 3);
    texts_free(&vt);
    fr_lake_snapshot *snaps = NULL;
    int nsnaps = 0;
    KIT_CHECK(fr_table_lake_snapshots(v, &snaps, &nsnaps, &err), err);
    assert_int_equal(nsnaps, 1);
    assert_int_equal(snaps[0].snapshot_id, sv);
    fr_lake_snapshots_free(snaps, nsnaps);
    fr_table_release(v);

    append(t, 10, 1000);
    fr_table_release(t);
    fr_engine_close(e); /* with a round possibly running */
    kit_rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_options),
        cmocka_unit_test(test_rows_convert),
        cmocka_unit_test(test_log_table),
        cmocka_unit_test(test_partitioned),
        cmocka_unit_test(test_pk_table),
        cmocka_unit_test(test_crash_resume),
        cmocka_unit_test(test_retention),
        cmocka_unit_test(test_corrupt_lake),
        cmocka_unit_test(test_background),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
