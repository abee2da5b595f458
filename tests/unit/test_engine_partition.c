/* test_engine_partition.c — partitioned tables in the engine: partition keys and options
 * checked at CREATE TABLE; partitions added and dropped explicitly (their files with them),
 * created as rows arrive or refused when the table does not allow it; appends and puts
 * routed by partition then bucket; scans that prune partitions by filter and announce each
 * partition; lookups, prefix lookups and state scans across partitions; auto-partitioning
 * by HOUR and DAY with an injected clock in several time zones; partitions kept across
 * reopen, with ids never reused and files of partitions dropped in a crash removed. */
#include "engine_pk_testkit.h"
#include "test_rng.h"

#include <jansson.h>

static const char *const PK_DT_ID[] = {"dt", "id"};
static const char *const DT[] = {"dt"};

/* (dt STRING, id BIGINT, name STRING, score DOUBLE) log table partitioned by dt. */
static int log_create(fr_engine *e, const char *name, const fr_option *opts, int nopts,
                      fr_error *err)
{
    return pk_create(e, name, NULL, 0, DT, 1, opts, nopts, err);
}

static void append_rows(fr_table *t, const pk_row *rows, int n)
{
    fr_batch *b = pk_batch(t, rows, n);
    fr_error err = {0};
    int64_t appended = 0;
    KIT_CHECK(fr_table_append(t, b, FR_NO_WRITER, -1, &appended, &err), err);
    assert_int_equal(appended, n);
    fr_batch_free(b);
}

static fr_option spec1(const char *col, const char *value)
{
    return (fr_option){col, value};
}

/* ---- CREATE TABLE ---------------------------------------------------------------------- */

static void test_invalid_options(void **state)
{
    (void)state;
    char *dir = kit_tmpdir("part_invalid");
    fr_engine *e = kit_open(dir);
    const char *const score[] = {"score"};
    const char *const two[] = {"dt", "name"};
    pk_create_fails(e, NULL, 0, score, 1, NULL, 0, FR_EINVAL,
                    "partition key 'score' is DOUBLE; partition keys are STRING, INT, BIGINT or "
                    "DATE columns");
    pk_create_fails(e, NULL, 0, (const char *const[]){"nope"}, 1, NULL, 0, FR_EINVAL,
                    "not a column");
    struct {
        fr_option o[4];
        int n;
        const char *const *part;
        int npart;
        const char *want;
    } cases[] = {
        {{{"table.auto-partition.enabled", "true"}}, 1, NULL, 0, "for partitioned tables"},
        {{{"table.auto-partition.enabled", "yes"}}, 1, DT, 1, "give true or false"},
        {{{"table.auto-partition.enabled", "true"}}, 1, two, 2, "set 'table.auto-partition.key'"},
        {{{"table.auto-partition.enabled", "true"}, {"table.auto-partition.key", "dt"},
          {"table.auto-partition.num-precreate", "2"}},
         3, two, 2, "cannot pre-create partitions"},
        {{{"table.auto-partition.enabled", "true"}, {"table.auto-partition.key", "id"}}, 2, DT, 1,
         "'id', which is not a partition key"},
        {{{"table.auto-partition.time-unit", "WEEK"}}, 1, DT, 1, "give HOUR, DAY, MONTH"},
        {{{"table.auto-partition.time-zone", "Mars/Olympus"}}, 1, DT, 1, "unknown time zone"},
        {{{"table.auto-partition.time-zone", "../etc/passwd"}}, 1, DT, 1, "is not a time zone"},
        {{{"table.auto-partition.time-format", "MM-yyyy"}}, 1, DT, 1, "in order from the year"},
        {{{"table.auto-partition.time-format", "yyyy-MM"}}, 1, DT, 1, "lacks fields of DAY"},
        {{{"table.auto-partition.time-format", "yyyy-M-dd"}}, 1, DT, 1, "fixed width of 2"},
        {{{"table.auto-partition.time-format", "yyyy[MM]dd"}}, 1, DT, 1, "optional sections"},
        {{{"table.auto-partition.num-retention", "many"}}, 1, DT, 1, "give a whole number"},
        {{{"bucket.key", "dt"}}, 1, DT, 1, "a partition key"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        pk_create_fails(e, NULL, 0, cases[i].part, cases[i].npart, cases[i].o, cases[i].n,
                        FR_EINVAL, cases[i].want);

    /* An INT or DATE auto-partition key must take the values the format makes. */
    fr_field f[2] = {{.name = "day", .type = fr_type_of(FR_T_INT)},
                     {.name = "d", .type = fr_type_of(FR_T_DATE)}};
    fr_schema *s = NULL;
    fr_error err = {0};
    KIT_CHECK(fr_schema_new(f, 2, 0, &s, &err), err);
    fr_option fmt[] = {{"table.auto-partition.enabled", "true"},
                       {"table.auto-partition.time-format", "yyyy-MM-dd"}};
    fr_table_spec spec = {.db = "default", .name = "ints", .schema = s, .options = fmt,
                          .noptions = 2, .partition_keys = (const char *const[]){"day"},
                          .npartition_keys = 1};
    assert_int_equal(fr_engine_create_table(e, &spec, false, &err), FR_EINVAL);
    assert_non_null(strstr(err.msg, "do not parse as column 'day'"));
    spec.noptions = 1; /* yyyyMMdd fits an INT */
    KIT_CHECK(fr_engine_create_table(e, &spec, false, &err), err);
    spec.name = "dates";
    spec.partition_keys = (const char *const[]){"d"};
    assert_int_equal(fr_engine_create_table(e, &spec, false, &err), FR_EINVAL);
    assert_non_null(strstr(err.msg, "must be 'yyyy-MM-dd'"));
    spec.noptions = 2;
    KIT_CHECK(fr_engine_create_table(e, &spec, false, &err), err);
    fr_option hour[] = {{"table.auto-partition.enabled", "true"},
                        {"table.auto-partition.time-format", "yyyy-MM-dd"},
                        {"table.auto-partition.time-unit", "HOUR"}};
    spec.name = "dates2";
    spec.options = hour;
    spec.noptions = 3;
    assert_int_equal(fr_engine_create_table(e, &spec, false, &err), FR_EINVAL);
    fr_schema_free(s);
    fr_engine_close(e);
    kit_rmdir(dir);
}

/* ---- explicit partitions --------------------------------------------------------------- */

static void test_explicit(void **state)
{
    (void)state;
    char *dir = kit_tmpdir("part_explicit");
    fr_engine *e = kit_open(dir);
    fr_option no_dyn[] = {{"bucket.num", "2"}, {"table.partition.dynamic-creation", "false"}};
    fr_error err = {0};
    KIT_CHECK(log_create(e, "t", no_dyn, 2, &err), err);
    fr_table *t = kit_table(e, "default", "t");
    pk_row rows[3] = {
        {"2026-11-30", 1, "a", 1}, {"2026-11-30", 2, "b", 2}, {"2026-12-01", 3, "c", 3}};

    /* No partition yet, and none is made by the rows. */
    fr_batch *b = pk_batch(t, rows, 3);
    int rc = fr_table_append(t, b, FR_NO_WRITER, -1, NULL, &err);
    assert_int_equal(rc, FR_ENOTFOUND);
    assert_non_null(strstr(err.msg, "has no partition dt=2026-11-30"));
    assert_string_equal(pk_partitions(t), "");

    fr_option p1 = spec1("DT", "2026-11-30"), p2 = spec1("dt", "2026-12-01");
    KIT_CHECK(fr_engine_add_partition(e, "default", "t", &p1, 1, false, &err), err);
    assert_int_equal(fr_engine_add_partition(e, "default", "t", &p1, 1, false, &err), FR_EEXIST);
    KIT_CHECK(fr_engine_add_partition(e, "default", "t", &p1, 1, true, &err), err);
    KIT_CHECK(fr_engine_add_partition(e, "default", "t", &p2, 1, false, &err), err);
    assert_string_equal(pk_partitions(t), "dt=2026-11-30 dt=2026-12-01");
    KIT_CHECK(fr_table_append(t, b, FR_NO_WRITER, -1, NULL, &err), err);
    fr_batch_free(b);

    /* Bad specs and values. */
    fr_option bad[] = {spec1("dt", "a b"), spec1("dt", ""), spec1("dt", "__x"),
                       spec1("name", "x"), spec1("dt", "..")};
    const char *why[] = {"other than ASCII letters", "empty value", "starts with '__'",
                         "no value for partition column 'dt'", "other than ASCII"};
    for (int i = 0; i < 5; i++) {
        rc = fr_engine_add_partition(e, "default", "t", &bad[i], 1, false, &err);
        if (rc != FR_EINVAL || !strstr(err.msg, why[i]))
            fail_msg("case %d: %d %s", i, rc, err.msg);
    }
    fr_option two[2] = {p1, p2};
    assert_int_equal(fr_engine_add_partition(e, "default", "t", two, 2, false, &err), FR_EINVAL);
    assert_int_equal(fr_engine_add_partition(e, "default", "nope", &p1, 1, false, &err),
                     FR_ENOTFOUND);
    kit_create_table(e, "default", "plain", NULL, 0);
    assert_int_equal(fr_engine_add_partition(e, "default", "plain", &p1, 1, false, &err),
                     FR_EINVAL);
    assert_non_null(strstr(err.msg, "is not partitioned"));

    /* Reads: every row, one partition announced before its rows. */
    fr_scan_spec spec = kit_spec(FR_START_EARLIEST, 0);
    kit_rows r = kit_scan(t, &spec);
    assert_int_equal(r.n, 3);
    kit_rows_free(&r);

    /* Dropping removes the partition's files. */
    int64_t id = pk_partition_id(t, "dt=2026-11-30");
    char pdir[64];
    snprintf(pdir, sizeof pdir, "log/%" PRId64 "/p%" PRId64, fr_table_id(t), id);
    assert_true(fr_path_exists(kit_path(dir, pdir)));
    KIT_CHECK(fr_engine_drop_partition(e, "default", "t", &p1, 1, false, &err), err);
    assert_false(fr_path_exists(kit_path(dir, pdir)));
    assert_string_equal(pk_partitions(t), "dt=2026-12-01");
    assert_int_equal(fr_engine_drop_partition(e, "default", "t", &p1, 1, false, &err),
                     FR_ENOTFOUND);
    assert_non_null(strstr(err.msg, "has no partition dt=2026-11-30"));
    KIT_CHECK(fr_engine_drop_partition(e, "default", "t", &p1, 1, true, &err), err);
    r = kit_scan(t, &spec);
    assert_int_equal(r.n, 1);
    kit_rows_free(&r);
    fr_table_release(t);
    fr_engine_close(e);
    kit_rmdir(dir);
}

/* ---- dynamic partitions, pruning ------------------------------------------------------- */

typedef struct seen_parts {
    char names[16][64];
    int n;
} seen_parts;

static int on_partition(void *ctx, const fr_partition *p, fr_error *err)
{
    (void)err;
    seen_parts *s = ctx;
    if (s->n < 16) snprintf(s->names[s->n++], 64, "%s", p->name);
    return 0;
}

typedef struct scan_seen {
    kit_rows rows;
    seen_parts parts;
} scan_seen;

static int scan_on_partition(void *ctx, const fr_partition *p, fr_error *err)
{
    return on_partition(&((scan_seen *)ctx)->parts, p, err);
}

static int scan_rows(void *ctx, int bucket, fr_batch *batch, const int64_t *offsets,
                     const uint8_t *change_types, int64_t commit_ts, fr_error *err)
{
    return kit_collect(&((scan_seen *)ctx)->rows, bucket, batch, offsets, change_types,
                       commit_ts, err);
}

/* Scans with a filter; returns the partitions announced joined with ' ' and the rows. */
static const char *scan_filtered(fr_table *t, const fr_expr *filter, int64_t *rows)
{
    static char buf[1024];
    scan_seen s = {0};
    fr_scan_spec spec = kit_spec(FR_START_EARLIEST, 0);
    spec.filter = filter;
    spec.on_partition = scan_on_partition;
    fr_error err = {0};
    KIT_CHECK(fr_table_scan(t, &spec, scan_rows, &s, &err), err);
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < s.parts.n; i++)
        used += (size_t)snprintf(buf + used, sizeof buf - used, "%s%s", i ? " " : "",
                                 s.parts.names[i]);
    *rows = s.rows.n;
    kit_rows_free(&s.rows);
    return buf;
}

static void test_dynamic_and_pruning(void **state)
{
    (void)state;
    char *dir = kit_tmpdir("part_dynamic");
    fr_engine *e = kit_open(dir);
    fr_error err = {0};
    fr_option opts[] = {{"bucket.num", "3"}, {"bucket.key", "id"}};
    KIT_CHECK(log_create(e, "t", opts, 2, &err), err);
    fr_table *t = kit_table(e, "default", "t");
    pk_row rows[60];
    const char *dts[] = {"2026-11-29", "2026-11-30", "2026-12-01"};
    for (int i = 0; i < 60; i++) rows[i] = (pk_row){dts[i % 3], i, "x", i};
    append_rows(t, rows, 60);
    assert_string_equal(pk_partitions(t), "dt=2026-11-29 dt=2026-11-30 dt=2026-12-01");

    /* A NULL partition value is refused, and nothing of that batch is written. */
    fr_schema *loose = pk_schema();
    pk_row nul[2] = {{"2026-12-02", 100, "y", 0}, {NULL, 101, "y", 0}};
    fr_batch *b = pk_batch_of(loose, nul, 2);
    assert_int_equal(fr_table_append(t, b, FR_NO_WRITER, -1, NULL, &err), FR_EINVAL);
    assert_non_null(strstr(err.msg, "row 2 has NULL in partition column 'dt'"));
    fr_batch_free(b);
    fr_schema_free(loose);
    assert_string_equal(pk_partitions(t), "dt=2026-11-29 dt=2026-11-30 dt=2026-12-01");

    int64_t n = 0;
    assert_string_equal(scan_filtered(t, NULL, &n), "dt=2026-11-29 dt=2026-11-30 dt=2026-12-01");
    assert_int_equal(n, 60);
    fr_arena *a = fr_arena_new(4096);
    fr_value v = fr_value_str(fr_type_of(FR_T_STRING), "2026-11-30", 10);
    assert_string_equal(scan_filtered(t, pk_filter(a, t, "dt", FR_OP_EQ, &v), &n),
                        "dt=2026-11-30");
    assert_int_equal(n, 20);
    assert_string_equal(scan_filtered(t, pk_filter(a, t, "dt", FR_OP_GE, &v), &n),
                        "dt=2026-11-30 dt=2026-12-01");
    assert_int_equal(n, 40);
    assert_string_equal(scan_filtered(t, pk_filter(a, t, "dt", FR_OP_NE, &v), &n),
                        "dt=2026-11-29 dt=2026-12-01");
    /* A filter on another column prunes nothing; an OR prunes what neither side keeps. */
    fr_value id = fr_value_int(fr_type_of(FR_T_BIGINT), 5);
    assert_string_equal(scan_filtered(t, pk_filter(a, t, "id", FR_OP_EQ, &id), &n),
                        "dt=2026-11-29 dt=2026-11-30 dt=2026-12-01");
    assert_int_equal(n, 1);
    fr_value w = fr_value_str(fr_type_of(FR_T_STRING), "2026-11-29", 10);
    fr_expr *or = fr_expr_binary(
        a, FR_OP_OR, fr_expr_binary(a, FR_OP_EQ, fr_expr_column(a, "dt"), fr_expr_literal(a, &v)),
        fr_expr_binary(a, FR_OP_EQ, fr_expr_column(a, "dt"), fr_expr_literal(a, &w)));
    KIT_CHECK(fr_expr_bind(or, fr_table_schema(t), &err), err);
    assert_string_equal(scan_filtered(t, or, &n), "dt=2026-11-29 dt=2026-11-30");
    assert_int_equal(n, 40);
    fr_arena_free(a);

    /* One bucket of every partition. */
    fr_scan_spec spec = kit_spec(FR_START_EARLIEST, 0);
    spec.bucket = 1;
    kit_rows r = kit_scan(t, &spec);
    assert_true(r.n > 0 && r.n < 60);
    for (int64_t i = 0; i < r.n; i++) assert_int_equal(r.bucket[i], 1);
    kit_rows_free(&r);
    /* fr_table_partition_log names a partition's bucket log. */
    int64_t pid = pk_partition_id(t, "dt=2026-12-01");
    int64_t total = 0;
    for (int bk = 0; bk < 3; bk++) {
        fr_log *log = fr_table_partition_log(t, pid, bk);
        assert_non_null(log);
        total += fr_log_end_offset(log);
    }
    assert_int_equal(total, 20);
    assert_null(fr_table_partition_log(t, 999, 0));
    assert_null(fr_table_partition_log(t, pid, 3));
    fr_table_release(t);
    fr_engine_close(e);
    kit_rmdir(dir);
}

/* Primary-key tables across partitions and buckets. */
static void test_pk_partitioned(void **state)
{
    (void)state;
    char *dir = kit_tmpdir("part_pk");
    fr_engine *e = kit_open(dir);
    fr_option opts[] = {{"bucket.num", "4"}};
    PK_CREATE_OK(e, "t", PK_DT_ID, 2, DT, 1, opts, 1);
    fr_table *t = kit_table(e, "default", "t");
    int n = 0;
    const int *bk = fr_table_bucket_key(t, &n);
    assert_int_equal(n, 1); /* the primary key without the partition key */
    assert_int_equal(bk[0], 1);
    pk_row rows[90];
    const char *dts[] = {"x", "y", "z"};
    for (int i = 0; i < 90; i++) rows[i] = (pk_row){dts[i % 3], i / 3, "v", i};
    pk_put(t, rows, 90, NULL);
    assert_string_equal(pk_partitions(t), "dt=x dt=y dt=z");

    /* Lookups in mixed order, with keys of missing partitions. */
    pk_row keys[8] = {{"z", 29, 0, 0}, {"x", 0, 0, 0}, {"q", 1, 0, 0}, {"y", 5, 0, 0},
                      {"x", 30, 0, 0}, {"y", 0, 0, 0}, {"__", 1, 0, 0}, {"z", 0, 0, 0}};
    bool want[8] = {true, true, false, true, false, true, false, true};
    fr_batch *kb = pk_keys_dt_id(keys, 8);
    bool found[8];
    fr_batch *out = NULL;
    fr_error err = {0};
    KIT_CHECK(fr_table_lookup(t, kb, found, &out, &err), err);
    pk_got g = {0};
    pk_collect(&g, out, &err);
    int k = 0;
    for (int i = 0; i < 8; i++) {
        assert_int_equal(found[i], want[i]);
        if (!want[i]) continue;
        assert_string_equal(g.dt[k], keys[i].dt);
        assert_int_equal(g.id[k], keys[i].id);
        assert_true(g.score[k] == (double)(keys[i].id * 3 + (keys[i].dt[0] - 'x')));
        k++;
    }
    assert_int_equal(g.n, k);
    pk_got_free(&g);
    fr_batch_free(kb);

    /* Prefix lookups need the partition key and the bucket key: (dt, id) here. */
    fr_value pre[2] = {fr_value_str(fr_type_of(FR_T_STRING), "y", 1),
                       fr_value_int(fr_type_of(FR_T_BIGINT), 7)};
    int64_t cnt = 0;
    g = (pk_got){0};
    KIT_CHECK(fr_table_prefix_lookup(t, pre, 2, NULL, 0, pk_collect, &g, &err), err);
    assert_int_equal(g.n, 1);
    assert_true(g.score[0] == 22);
    pk_got_free(&g);
    assert_int_equal(fr_table_prefix_lookup(t, pre, 1, NULL, 0, pk_collect, &cnt, &err),
                     FR_EINVAL);
    assert_non_null(strstr(err.msg, "give at least dt, id"));

    /* The state, whole and pruned by partition. */
    g = pk_state(t, NULL);
    assert_int_equal(g.n, 90);
    pk_got_free(&g);
    fr_arena *a = fr_arena_new(1024);
    fr_value v = fr_value_str(fr_type_of(FR_T_STRING), "z", 1);
    g = pk_state(t, pk_filter(a, t, "dt", FR_OP_EQ, &v));
    assert_int_equal(g.n, 30);
    for (int i = 0; i < g.n; i++) assert_string_equal(g.dt[i], "z");
    pk_got_free(&g);
    /* A caller that stops early stops the whole read. */
    g = (pk_got){.stop_after = 5};
    KIT_CHECK(fr_table_scan_state(t, NULL, 0, NULL, pk_collect, &g, &err), err);
    assert_true(g.n >= 5 && g.n < 90);
    pk_got_free(&g);
    fr_arena_free(a);

    /* The changelog scan announces partitions too. */
    int64_t nrows = 0;
    assert_string_equal(scan_filtered(t, NULL, &nrows), "dt=x dt=y dt=z");
    assert_int_equal(nrows, 90);

    /* Reopen: partitions and state come back. */
    fr_table_release(t);
    fr_engine_close(e);
    e = kit_open(dir);
    t = kit_table(e, "default", "t");
    assert_string_equal(pk_partitions(t), "dt=x dt=y dt=z");
    g = pk_state(t, NULL);
    assert_int_equal(g.n, 90);
    pk_got_free(&g);
    int64_t xid = pk_partition_id(t, "dt=x");
    char kvdir[64];
    snprintf(kvdir, sizeof kvdir, "kv/%" PRId64 "/p%" PRId64, fr_table_id(t), xid);
    assert_true(fr_path_exists(kit_path(dir, kvdir)));
    fr_option px = spec1("dt", "x");
    KIT_CHECK(fr_engine_drop_partition(e, "default", "t", &px, 1, false, &err), err);
    assert_false(fr_path_exists(kit_path(dir, kvdir)));
    g = pk_state(t, NULL);
    assert_int_equal(g.n, 60);
    pk_got_free(&g);
    /* Writing to x again makes a new partition with a new id. */
    pk_put(t, rows, 3, NULL);
    assert_true(pk_partition_id(t, "dt=x") > pk_partition_id(t, "dt=z"));
    fr_table_release(t);
    fr_engine_close(e);
    kit_rmdir(dir);
}

/* Two partition keys: names join them in key order; values are canonical text. */
static void test_two_keys(void **state)
{
    (void)state;
    char *dir = kit_tmpdir("part_two");
    fr_engine *e = kit_open(dir);
    fr_field f[3] = {{.name = "region", .type = fr_type_of(FR_T_STRING)},
                     {.name = "day", .type = fr_type_of(FR_T_DATE)},
                     {.name = "n", .type = fr_type_of(FR_T_INT)}};
    fr_schema *s = NULL;
    fr_error err = {0};
    KIT_CHECK(fr_schema_new(f, 3, 0, &s, &err), err);
    fr_table_spec spec = {.db = "default", .name = "t", .schema = s,
                          .partition_keys = (const char *const[]){"day", "n"},
                          .npartition_keys = 2};
    KIT_CHECK(fr_engine_create_table(e, &spec, false, &err), err);
    fr_option p[2] = {spec1("n", "007"), spec1("day", "2026-01-05")};
    KIT_CHECK(fr_engine_add_partition(e, "default", "t", p, 2, false, &err), err);
    fr_option q[2] = {spec1("n", "-3"), spec1("day", "2026-01-05")};
    KIT_CHECK(fr_engine_add_partition(e, "default", "t", q, 2, false, &err), err);
    fr_option bad[2] = {spec1("n", "seven"), spec1("day", "2026-01-05")};
    assert_int_equal(fr_engine_add_partition(e, "default", "t", bad, 2, false, &err), FR_EINVAL);
    assert_non_null(strstr(err.msg, "'seven' is not a value of type INT for partition column 'n'"));
    fr_option bad2[2] = {spec1("n", "1"), spec1("day", "2026-13-05")};
    assert_int_equal(fr_engine_add_partition(e, "default", "t", bad2, 2, false, &err), FR_EINVAL);
    fr_table *t = kit_table(e, "default", "t");
    assert_string_equal(pk_partitions(t), "day=2026-01-05/n=-3 day=2026-01-05/n=7");
    fr_partition *list = NULL;
    int np = 0;
    KIT_CHECK(fr_table_list_partitions(t, &list, &np, &err), err);
    assert_int_equal(np, 2);
    assert_int_equal(list[1].nvalues, 2);
    assert_string_equal(list[1].values[0], "2026-01-05");
    assert_string_equal(list[1].values[1], "7");
    assert_true(list[1].created_ms > 0);
    fr_partitions_free(list, np);
    /* Rows route to them by typed values. */
    fr_builder *bld = NULL;
    KIT_CHECK(fr_builder_new(fr_table_schema(t), &bld, &err), err);
    KIT_CHECK(fr_builder_append_bytes(bld, 0, "eu", 2, &err), err);
    KIT_CHECK(fr_builder_append_i64(bld, 1, fr_days_from_civil(2026, 1, 5), &err), err);
    KIT_CHECK(fr_builder_append_i64(bld, 2, 7, &err), err);
    fr_batch *b = NULL;
    KIT_CHECK(fr_builder_finish(bld, &b, &err), err);
    fr_builder_free(bld);
    KIT_CHECK(fr_table_append(t, b, FR_NO_WRITER, -1, NULL, &err), err);
    fr_batch_free(b);
    assert_string_equal(pk_partitions(t), "day=2026-01-05/n=-3 day=2026-01-05/n=7");
    fr_option drop[2] = {spec1("day", "2026-01-05"), spec1("n", "7")};
    KIT_CHECK(fr_engine_drop_partition(e, "default", "t", drop, 2, false, &err), err);
    assert_string_equal(pk_partitions(t), "day=2026-01-05/n=-3");
    fr_table_release(t);
    fr_schema_free(s);
    fr_engine_close(e);
    kit_rmdir(dir);
}

/* ---- auto-partitioning ----------------------------------------------------------------- */

/* Milliseconds of a UTC civil time. */
static int64_t utc_ms(int y, int mo, int d, int h, int mi)
{
    return (fr_days_from_civil(y, (unsigned)mo, (unsigned)d) * 86400 + h * 3600 + mi * 60) * 1000;
}

static void run_at(fr_engine *e, int64_t ms)
{
    fr_error err = {0};
    KIT_CHECK(fr_engine_run_auto_partition_at(e, ms, &err), err);
}

static void test_auto_day(void **state)
{
    (void)state;
    char *dir = kit_tmpdir("part_auto_day");
    fr_engine *e = kit_open(dir);
    fr_option opts[] = {{"table.auto-partition.enabled", "true"},
                        {"table.auto-partition.time-unit", "day"},
                        {"table.auto-partition.num-precreate", "3"},
                        {"table.auto-partition.num-retention", "2"},
                        {"table.auto-partition.time-zone", "UTC"},
                        {"table.partition.dynamic-creation", "false"}};
    fr_error err = {0};
    KIT_CHECK(log_create(e, "t", opts, 6, &err), err);
    fr_table *t = kit_table(e, "default", "t");
    /* Created at once for the real day; clear them with a clock far ahead. */
    assert_int_equal((int)strlen(pk_partitions(t)), 3 * 11 + 2);
    run_at(e, utc_ms(2099, 3, 10, 5, 0));
    assert_string_equal(pk_partitions(t), "dt=20990310 dt=20990311 dt=20990312");
    append_rows(t, (pk_row[]){{"20990310", 1, "a", 1}}, 1);
    int64_t old = pk_partition_id(t, "dt=20990310");
    char pdir[64];
    snprintf(pdir, sizeof pdir, "log/%" PRId64 "/p%" PRId64, fr_table_id(t), old);
    assert_true(fr_path_exists(kit_path(dir, pdir)));
    /* Three days on: 13, 14, 15 come; 10 goes (11 and 12 are the two kept). */
    run_at(e, utc_ms(2099, 3, 13, 0, 0));
    assert_string_equal(pk_partitions(t),
                        "dt=20990311 dt=20990312 dt=20990313 dt=20990314 dt=20990315");
    assert_false(fr_path_exists(kit_path(dir, pdir)));
    /* The same pass again changes nothing. */
    run_at(e, utc_ms(2099, 3, 13, 23, 59));
    assert_string_equal(pk_partitions(t),
                        "dt=20990311 dt=20990312 dt=20990313 dt=20990314 dt=20990315");
    /* Partitions added by hand must match the format and not be out of date. */
    fr_option bad = spec1("dt", "2099-03-20");
    assert_int_equal(fr_engine_add_partition(e, "default", "t", &bad, 1, false, &err), FR_EINVAL);
    assert_non_null(strstr(err.msg, "does not match the format 'yyyyMMdd'"));
    fr_option stale = spec1("dt", "20000101");
    assert_int_equal(fr_engine_add_partition(e, "default", "t", &stale, 1, false, &err),
                     FR_EINVAL);
    assert_non_null(strstr(err.msg, "is out of date"));
    fr_option later = spec1("dt", "21000101");
    KIT_CHECK(fr_engine_add_partition(e, "default", "t", &later, 1, false, &err), err);
    /* A month boundary (2100 is no leap year); the hand-made 21000101 is past retention. */
    run_at(e, utc_ms(2100, 2, 28, 12, 0));
    assert_string_equal(pk_partitions(t), "dt=21000228 dt=21000301 dt=21000302");
    fr_table_release(t);

    /* Reopen keeps them; the pass at open uses the real clock and drops what it is past. */
    fr_engine_close(e);
    e = kit_open(dir);
    t = kit_table(e, "default", "t");
    assert_non_null(strstr(pk_partitions(t), "dt=21000228"));
    fr_table_release(t);
    fr_engine_close(e);
    kit_rmdir(dir);
}

static void test_auto_hour_zones(void **state)
{
    (void)state;
    char *dir = kit_tmpdir("part_auto_hour");
    fr_engine *e = kit_open(dir);
    fr_option opts[] = {{"table.auto-partition.enabled", "true"},
                        {"table.auto-partition.time-unit", "HOUR"},
                        {"table.auto-partition.num-precreate", "2"},
                        {"table.auto-partition.num-retention", "1"},
                        {"table.auto-partition.time-zone", "+08:00"}};
    fr_error err = {0};
    KIT_CHECK(log_create(e, "h", opts, 5, &err), err);
    fr_table *t = kit_table(e, "default", "h");
    run_at(e, utc_ms(2099, 3, 10, 15, 30)); /* 23:30 in +08:00 */
    /* The real-clock partitions of creation are long past: all dropped. */
    assert_string_equal(pk_partitions(t), "dt=2099031023 dt=2099031100");
    run_at(e, utc_ms(2099, 3, 10, 17, 30)); /* 01:30 on the 11th */
    assert_string_equal(pk_partitions(t), "dt=2099031100 dt=2099031101 dt=2099031102");
    fr_table_release(t);

    /* Zones by name, with daylight saving time: New York is UTC-4 from 2099-03-08. */
    struct {
        const char *zone;
        int64_t at;
        const char *want;
    } zones[] = {
        {"America/New_York", utc_ms(2099, 3, 10, 3, 30), "dt=20990309"},
        {"America/New_York", utc_ms(2099, 3, 10, 4, 30), "dt=20990310"},
        {"America/New_York", utc_ms(2099, 1, 10, 4, 30), "dt=20990109"}, /* UTC-5 */
        {"Asia/Shanghai", utc_ms(2099, 3, 10, 15, 59), "dt=20990310"},
        {"Asia/Shanghai", utc_ms(2099, 3, 10, 16, 0), "dt=20990311"},
        {"Europe/Berlin", utc_ms(2099, 7, 1, 22, 30), "dt=20990702"}, /* UTC+2 in summer */
        {"GMT-03:00", utc_ms(2099, 7, 1, 2, 30), "dt=20990630"},
    };
    for (size_t i = 0; i < sizeof zones / sizeof *zones; i++) {
        char name[16];
        snprintf(name, sizeof name, "z%zu", i);
        fr_option o[] = {{"table.auto-partition.enabled", "true"},
                         {"table.auto-partition.num-precreate", "1"},
                         {"table.auto-partition.num-retention", "0"},
                         {"table.auto-partition.time-zone", zones[i].zone}};
        KIT_CHECK(log_create(e, name, o, 4, &err), err);
        t = kit_table(e, "default", name);
        run_at(e, zones[i].at);
        if (strcmp(pk_partitions(t), zones[i].want) != 0)
            fail_msg("%s at %" PRId64 ": %s, not %s", zones[i].zone, zones[i].at,
                     pk_partitions(t), zones[i].want);
        fr_table_release(t);
        KIT_CHECK(fr_engine_drop_table(e, "default", name, false, &err), err);
    }

    /* MONTH, QUARTER and YEAR, and a custom format. */
    struct {
        const char *unit, *format;
        const char *want;
    } units[] = {
        {"MONTH", NULL, "dt=209911 dt=209912 dt=210001"},
        {"QUARTER", NULL, "dt=20994 dt=21001 dt=21002"},
        {"YEAR", NULL, "dt=2099 dt=2100 dt=2101"},
        {"DAY", "yyyy-MM-dd", "dt=2099-11-30 dt=2099-12-01 dt=2099-12-02"},
        {"HOUR", "yyyy_MM_dd'h'HH", "dt=2099_11_30h23 dt=2099_12_01h00 dt=2099_12_01h01"},
    };
    for (size_t i = 0; i < sizeof units / sizeof *units; i++) {
        char name[16];
        snprintf(name, sizeof name, "u%zu", i);
        fr_option o[] = {{"table.auto-partition.enabled", "true"},
                         {"table.auto-partition.num-precreate", "3"},
                         {"table.auto-partition.num-retention", "0"},
                         {"table.auto-partition.time-zone", "UTC"},
                         {"table.auto-partition.time-unit", units[i].unit},
                         {"table.auto-partition.time-format", units[i].format}};
        KIT_CHECK(log_create(e, name, o, units[i].format ? 6 : 5, &err), err);
        t = kit_table(e, "default", name);
        run_at(e, utc_ms(2099, 11, 30, 23, 10));
        if (strcmp(pk_partitions(t), units[i].want) != 0)
            fail_msg("%s: %s, not %s", units[i].unit, pk_partitions(t), units[i].want);
        fr_table_release(t);
    }
    fr_engine_close(e);
    kit_rmdir(dir);
}

/* With several partition keys the time key is named; retention drops every partition of
 * an expired time, whatever the other keys. */
static void test_auto_multi_key(void **state)
{
    (void)state;
    char *dir = kit_tmpdir("part_auto_multi");
    fr_engine *e = kit_open(dir);
    fr_option opts[] = {{"table.auto-partition.enabled", "true"},
                        {"table.auto-partition.key", "dt"},
                        {"table.auto-partition.num-retention", "1"},
                        {"table.auto-partition.time-zone", "UTC"}};
    fr_error err = {0};
    const char *const pk3[] = {"dt", "id", "name"};
    KIT_CHECK(pk_create(e, "t", pk3, 3, (const char *const[]){"name", "dt"}, 2, opts, 4, &err),
              err);
    pk_create_fails(e, pk3, 3, (const char *const[]){"name", "dt"}, 0, opts, 4, FR_EINVAL,
                    "for partitioned tables"); /* no partition keys at all */
    fr_table *t = kit_table(e, "default", "t");
    /* Rows may make partitions of past days until the pass runs; the pass only drops. */
    pk_row rows[4] = {{"20990101", 1, "eu", 1}, {"20990101", 2, "us", 2}, {"20990102", 3, "eu", 3},
                      {"20990103", 4, "us", 4}};
    pk_put(t, rows, 4, NULL);
    assert_string_equal(pk_partitions(t), "name=eu/dt=20990101 name=eu/dt=20990102 "
                                          "name=us/dt=20990101 name=us/dt=20990103");
    run_at(e, utc_ms(2099, 1, 3, 10, 0));
    assert_string_equal(pk_partitions(t), "name=eu/dt=20990102 name=us/dt=20990103");
    pk_got g = pk_state(t, NULL);
    assert_int_equal(g.n, 2);
    pk_got_free(&g);
    /* A row for an expired day is refused (out of date), with nothing written. */
    pk_row stale[1] = {{"20000101", 9, "eu", 0}};
    fr_batch *b = pk_batch(t, stale, 1);
    assert_int_equal(fr_table_put(t, b, NULL, NULL, 0, FR_NO_WRITER, -1, NULL, &err), FR_EINVAL);
    assert_non_null(strstr(err.msg, "out of date"));
    fr_batch_free(b);
    fr_table_release(t);
    fr_engine_close(e);
    kit_rmdir(dir);
}

/* A zone whose file is missing where the data dir is opened does not refuse the catalog:
 * the table loads and its auto-partitioning pass fails with a message. */
static void test_zone_missing_at_load(void **state)
{
    (void)state;
    char *dir = kit_tmpdir("part_zone");
    fr_engine *e = kit_open(dir);
    fr_option opts[] = {{"table.auto-partition.enabled", "true"},
                        {"table.auto-partition.time-zone", "Europe/Paris"}};
    fr_error err = {0};
    KIT_CHECK(log_create(e, "t", opts, 2, &err), err);
    fr_engine_close(e);
    char path[256];
    snprintf(path, sizeof path, "%s/meta/catalog.json", dir);
    uint8_t *data = NULL;
    size_t len = 0;
    KIT_CHECK(fr_read_file(path, 1 << 20, &data, &len, &err), err);
    char *text = fr_malloc(len + 1);
    memcpy(text, data, len);
    text[len] = '\0';
    char *at = strstr(text, "Europe/Paris");
    assert_non_null(at);
    memcpy(at, "Nowhere/Xyz1", 12);
    KIT_CHECK(fr_write_file_atomic(path, text, len, &err), err);
    fr_free(text);
    fr_free(data);
    e = kit_open(dir);
    fr_table *t = kit_table(e, "default", "t");
    assert_int_equal(fr_engine_run_auto_partition_at(e, utc_ms(2099, 1, 1, 0, 0), &err),
                     FR_EINVAL);
    assert_non_null(strstr(err.msg, "unknown time zone 'Nowhere/Xyz1'"));
    fr_table_release(t);
    fr_engine_close(e);
    kit_rmdir(dir);
}

/* ---- reopen, ids, crashes -------------------------------------------------------------- */

static void test_reopen_and_orphans(void **state)
{
    (void)state;
    char *dir = kit_tmpdir("part_reopen");
    fr_engine *e = kit_open(dir);
    fr_error err = {0};
    PK_CREATE_OK(e, "t", PK_DT_ID, 2, DT, 1, (fr_option[]){{"bucket.num", "2"}}, 1);
    fr_table *t = kit_table(e, "default", "t");
    pk_row rows[4] = {{"a", 1, "x", 1}, {"b", 2, "x", 2}, {"c", 3, "x", 3}, {"d", 4, "x", 4}};
    pk_put(t, rows, 4, NULL);
    int64_t tid = fr_table_id(t), cid = pk_partition_id(t, "dt=c");
    fr_option pd = spec1("dt", "d");
    KIT_CHECK(fr_engine_drop_partition(e, "default", "t", &pd, 1, false, &err), err);
    fr_table_release(t);
    fr_engine_close(e);

    /* A crash after the catalog lost partition c but before its files went. */
    char path[256];
    snprintf(path, sizeof path, "%s/meta/catalog.json", dir);
    json_error_t jerr;
    json_t *root = json_load_file(path, 0, &jerr);
    assert_non_null(root);
    json_t *parts = json_object_get(json_array_get(json_object_get(root, "tables"), 0),
                                    "partitions");
    assert_int_equal(json_array_size(parts), 3);
    assert_int_equal(json_integer_value(json_object_get(root, "next_partition_id")), 5);
    json_array_remove(parts, 2);
    char *text = json_dumps(root, JSON_INDENT(2));
    json_decref(root);
    KIT_CHECK(fr_write_file_atomic(path, text, strlen(text), &err), err);
    free(text);
    char pdir[64];
    snprintf(pdir, sizeof pdir, "kv/%" PRId64 "/p%" PRId64, tid, cid);
    assert_true(fr_path_exists(kit_path(dir, pdir)));

    e = kit_open(dir);
    assert_false(fr_path_exists(kit_path(dir, pdir)));
    snprintf(pdir, sizeof pdir, "log/%" PRId64 "/p%" PRId64, tid, cid);
    assert_false(fr_path_exists(kit_path(dir, pdir)));
    t = kit_table(e, "default", "t");
    assert_string_equal(pk_partitions(t), "dt=a dt=b");
    pk_got g = pk_state(t, NULL);
    assert_int_equal(g.n, 2);
    pk_got_free(&g);
    /* Ids go on from where they were: 5, not 3 or 4. */
    pk_put(t, &rows[2], 1, NULL);
    assert_int_equal(pk_partition_id(t, "dt=c"), 5);
    fr_table_release(t);

    /* A held table can no longer create partitions once the engine closed. */
    t = kit_table(e, "default", "t");
    fr_engine_close(e);
    fr_batch *b = pk_batch(t, (pk_row[]){{"new", 1, "x", 1}}, 1);
    assert_int_equal(fr_table_put(t, b, NULL, NULL, 0, FR_NO_WRITER, -1, NULL, &err), FR_ESTATE);
    fr_batch_free(b);
    fr_table_release(t);

    /* Catalogs with bad partitions are refused. */
    const char *bad[] = {
        "\"partitions\": [{\"id\": 1, \"name\": \"dt=a\", \"values\": [\"a\"], \"created_ms\": 1},"
        " {\"id\": 1, \"name\": \"dt=b\", \"values\": [\"b\"], \"created_ms\": 1}]",
        "\"partitions\": [{\"id\": 9, \"name\": \"dt=a\", \"values\": [\"a\"], \"created_ms\": 1}]",
        "\"partitions\": [{\"id\": 1, \"name\": \"dt=b\", \"values\": [\"a\"], \"created_ms\": 1}]",
        "\"partitions\": [{\"id\": 1, \"name\": \"dt=a b\", \"values\": [\"a b\"], "
        "\"created_ms\": 1}]",
        "\"partitions\": [{\"id\": 1, \"name\": \"dt=a\", \"values\": [], \"created_ms\": 1}]",
    };
    const char *want[] = {"used twice", "not above every partition id", "is named",
                          "bad value", "needs a \"name\""};
    for (int i = 0; i < 5; i++) {
        char cat[2048];
        snprintf(cat, sizeof cat,
                 "{\"format\": \"firth catalog v1\", \"next_table_id\": 2,"
                 " \"next_partition_id\": 3,"
                 " \"databases\": [{\"name\": \"default\", \"created_ms\": 1}],"
                 " \"tables\": [{\"id\": 1, \"database\": \"default\", \"name\": \"p\","
                 " \"created_ms\": 1, \"schema_id\": 0, \"schemas\": [{\"id\": 0, \"fields\":"
                 " [{\"name\": \"dt\", \"type\": \"STRING\", \"nullable\": true}]}],"
                 " \"options\": [], \"bucket_num\": 1, \"bucket_key\": [],"
                 " \"partition_keys\": [\"dt\"], %s}]}",
                 bad[i]);
        char *d2 = kit_tmpdir("part_badcat");
        fr_engine *e2 = kit_open(d2);
        fr_engine_close(e2);
        KIT_CHECK(fr_write_file_atomic(kit_path(d2, "meta/catalog.json"), cat, strlen(cat), &err),
                  err);
        fr_engine_options o;
        fr_engine_options_default(&o);
        o.data_dir = d2;
        o.retention_check_interval_ms = 0;
        o.auto_partition_check_interval_ms = 0;
        int rc = fr_engine_open(&o, &e2, &err);
        if (rc != FR_EINVAL || !strstr(err.msg, want[i]))
            fail_msg("case %d: %d %s", i, rc, err.msg);
        kit_rmdir(d2);
    }
    kit_rmdir(dir);
}

/* ---- randomized: puts, deletes and partition drops against a model -------------------- */

#define R_DTS 5
#define R_IDS 40

typedef struct model_row {
    bool present;
    char name[16];
    bool name_null;
    double score;
} model_row;

static const char *const R_DT[R_DTS] = {"d0", "d1", "d2", "d3", "d4"};

/* The state, the lookups of every key and the prefix lookups agree with the model. */
static void check_model(fr_table *t, model_row m[R_DTS][R_IDS], uint64_t seed, int step)
{
    pk_got g = pk_state(t, NULL);
    int want = 0;
    for (int d = 0; d < R_DTS; d++)
        for (int i = 0; i < R_IDS; i++) want += m[d][i].present;
    if (g.n != want)
        fail_msg("seed %llu step %d: %d rows, model %d", (unsigned long long)seed, step, g.n,
                 want);
    for (int k = 0; k < g.n; k++) {
        int d = g.dt[k][1] - '0';
        model_row *r = &m[d][g.id[k]];
        if (!r->present || r->score != g.score[k] || r->name_null != (g.name[k] == NULL) ||
            (!r->name_null && strcmp(r->name, g.name[k]) != 0))
            fail_msg("seed %llu step %d: row (%s, %" PRId64 ") differs", (unsigned long long)seed,
                     step, g.dt[k], g.id[k]);
    }
    pk_got_free(&g);
    pk_row keys[R_DTS * R_IDS];
    int n = 0;
    for (int d = 0; d < R_DTS; d++)
        for (int i = 0; i < R_IDS; i++) keys[n++] = (pk_row){R_DT[d], i, NULL, 0};
    for (int i = n - 1; i > 0; i--) { /* ask in a random order */
        int j = test_rng_below(i + 1);
        pk_row x = keys[i];
        keys[i] = keys[j];
        keys[j] = x;
    }
    fr_batch *kb = pk_keys_dt_id(keys, n);
    bool found[R_DTS * R_IDS];
    fr_batch *out = NULL;
    fr_error err = {0};
    KIT_CHECK(fr_table_lookup(t, kb, found, &out, &err), err);
    g = (pk_got){0};
    pk_collect(&g, out, &err);
    int k = 0;
    for (int i = 0; i < n; i++) {
        model_row *r = &m[keys[i].dt[1] - '0'][keys[i].id];
        if (found[i] != r->present)
            fail_msg("seed %llu step %d: lookup (%s, %" PRId64 ") found %d",
                     (unsigned long long)seed, step, keys[i].dt, keys[i].id, found[i]);
        if (!found[i]) continue;
        assert_int_equal(g.id[k], keys[i].id);
        assert_string_equal(g.dt[k], keys[i].dt);
        assert_true(g.score[k] == r->score);
        k++;
    }
    pk_got_free(&g);
    fr_batch_free(kb);
}

static void test_random_model(void **state)
{
    (void)state;
    uint64_t seed = test_rng_seed_of_run("test_engine_partition, test_random_model");
    test_rng_seed(seed);
    char *dir = kit_tmpdir("part_random");
    fr_engine *e = kit_open(dir);
    PK_CREATE_OK(e, "t", PK_DT_ID, 2, DT, 1, (fr_option[]){{"bucket.num", "3"}}, 1);
    fr_table *t = kit_table(e, "default", "t");
    static model_row m[R_DTS][R_IDS];
    memset(m, 0, sizeof m);
    static char names[64][16];
    for (int step = 0; step < 60; step++) {
        int n = 1 + test_rng_below(40);
        pk_row rows[40];
        uint8_t ops[40];
        for (int i = 0; i < n; i++) {
            int d = test_rng_below(R_DTS), id = test_rng_below(R_IDS);
            snprintf(names[i], sizeof names[i], "s%d", test_rng_below(1000));
            bool null = test_rng_below(5) == 0;
            rows[i] = (pk_row){R_DT[d], id, null ? NULL : names[i], test_rng_below(10000) / 4.0};
            ops[i] = test_rng_below(5) == 0 ? FR_KV_DELETE : FR_KV_UPSERT;
            model_row *r = &m[d][id]; /* the model applies the rows in order */
            if (ops[i] == FR_KV_DELETE) {
                r->present = false;
                continue;
            }
            r->present = true;
            r->name_null = null;
            if (!null) snprintf(r->name, sizeof r->name, "%s", names[i]);
            r->score = rows[i].score;
        }
        pk_put(t, rows, n, ops);
        if (test_rng_below(10) == 0) { /* drop a partition now and then */
            int d = test_rng_below(R_DTS);
            fr_option spec = {"dt", R_DT[d]};
            fr_error err = {0};
            KIT_CHECK(fr_engine_drop_partition(e, "default", "t", &spec, 1, true, &err), err);
            for (int i = 0; i < R_IDS; i++) m[d][i].present = false;
        }
        if (step % 10 == 9) check_model(t, m, seed, step);
    }
    fr_table_release(t);
    fr_engine_close(e);
    e = kit_open(dir);
    t = kit_table(e, "default", "t");
    check_model(t, m, seed, -1);
    fr_table_release(t);
    fr_engine_close(e);
    kit_rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_invalid_options),
        cmocka_unit_test(test_explicit),
        cmocka_unit_test(test_dynamic_and_pruning),
        cmocka_unit_test(test_pk_partitioned),
        cmocka_unit_test(test_two_keys),
        cmocka_unit_test(test_auto_day),
        cmocka_unit_test(test_auto_hour_zones),
        cmocka_unit_test(test_auto_multi_key),
        cmocka_unit_test(test_zone_missing_at_load),
        cmocka_unit_test(test_reopen_and_orphans),
        cmocka_unit_test(test_random_model),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
