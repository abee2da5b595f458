/* test_engine_pk.c — primary-key tables in the engine: keys and merge-engine options checked
 * at CREATE TABLE (valid and invalid, as Fluss checks them), kept normalized across reopen;
 * upserts, deletes, point lookups, prefix lookups and state scans routed over buckets and
 * answered in the order asked; the changelog in the log; appends refused; the KV state
 * recovered when the engine opens again, after a crash too; retention of their changelog
 * once the state is on disk, and the periodic KV flush. */
#include "engine_pk_testkit.h"

#include <sys/wait.h>

static const char *const PK_ID[] = {"id"};
static const char *const PK_DT_ID[] = {"dt", "id"};

/* ---- CREATE TABLE ---------------------------------------------------------------------- */

static const char *option_of(fr_table *t, const char *key)
{
    for (int i = 0; i < fr_table_num_options(t); i++) {
        const char *k, *v;
        fr_table_option(t, i, &k, &v);
        if (strcmp(k, key) == 0) return v;
    }
    return NULL;
}

static void test_create_pk(void **state)
{
    (void)state;
    char *dir = kit_tmpdir("pk_create");
    fr_engine *e = kit_open(dir);
    fr_option opts[] = {{"bucket.num", "4"}, {"table.merge-engine", "FIRST_ROW"},
                        {"table.changelog.image", "wal"}};
    PK_CREATE_OK(e, "t", PK_DT_ID, 2, NULL, 0, opts, 3);
    fr_table *t = kit_table(e, "default", "t");
    assert_true(fr_table_is_pk(t));
    int n = 0;
    const int *pk = fr_table_primary_key(t, &n);
    assert_int_equal(n, 2);
    assert_int_equal(pk[0], 0);
    assert_int_equal(pk[1], 1);
    /* The bucket key defaults to the primary key; key columns became NOT NULL. */
    const int *bk = fr_table_bucket_key(t, &n);
    assert_int_equal(n, 2);
    assert_int_equal(bk[0], 0);
    assert_int_equal(bk[1], 1);
    assert_false(fr_schema_field(fr_table_schema(t), 0)->type.nullable);
    assert_false(fr_schema_field(fr_table_schema(t), 1)->type.nullable);
    assert_true(fr_schema_field(fr_table_schema(t), 2)->type.nullable);
    assert_null(fr_table_partition_keys(t, &n));
    assert_int_equal(n, 0);
    /* Values are kept normalized. */
    assert_string_equal(option_of(t, "table.merge-engine"), "first_row");
    assert_string_equal(option_of(t, "table.changelog.image"), "WAL");
    char *json = NULL;
    fr_error err = {0};
    KIT_CHECK(fr_table_to_json(t, &json, &err), err);
    assert_non_null(strstr(json, "\"merge_engine\": \"first_row\""));
    assert_non_null(strstr(json, "\"delete_behavior\": \"ignore\"")); /* Fluss's default */
    assert_non_null(strstr(json, "\"primary_key\": [\n    \"dt\",\n    \"id\"\n  ]"));
    fr_free(json);
    fr_table_release(t);

    /* A log table says it has no key and refuses nothing of this. */
    kit_create_table(e, "default", "log", NULL, 0);
    t = kit_table(e, "default", "log");
    assert_false(fr_table_is_pk(t));
    assert_null(fr_table_primary_key(t, &n));
    fr_table_release(t);

    /* The defaults of delete behaviour per merge engine, and 'allow' where Fluss allows it. */
    struct {
        const char *engine, *del, *want;
    } del[] = {{"last_row", NULL, "allow"},   {"versioned", NULL, "ignore"},
               {"aggregation", NULL, "ignore"}, {"aggregation", "allow", "allow"},
               {"first_row", "disable", "disable"}, {"last_row", "IGNORE", "ignore"}};
    for (size_t i = 0; i < sizeof del / sizeof *del; i++) {
        char name[16];
        snprintf(name, sizeof name, "d%zu", i);
        fr_option o[3] = {{"table.merge-engine", del[i].engine},
                          {"table.merge-engine.versioned.ver-column", "id"},
                          {"table.delete.behavior", del[i].del}};
        PK_CREATE_OK(e, name, PK_DT_ID, 2, NULL, 0, o, del[i].del ? 3 : 2);
        t = kit_table(e, "default", name);
        KIT_CHECK(fr_table_to_json(t, &json, &err), err);
        char want[64];
        snprintf(want, sizeof want, "\"delete_behavior\": \"%s\"", del[i].want);
        if (!strstr(json, want)) fail_msg("%s: %s not in %s", del[i].engine, want, json);
        fr_free(json);
        fr_table_release(t);
    }
    fr_engine_close(e);
    kit_rmdir(dir);
}

static void test_create_invalid(void **state)
{
    (void)state;
    char *dir = kit_tmpdir("pk_invalid");
    fr_engine *e = kit_open(dir);
    const char *const bad_col[] = {"nope"};
    const char *const twice[] = {"id", "ID"};
    const char *const dt[] = {"dt"};
    pk_create_fails(e, bad_col, 1, NULL, 0, NULL, 0, FR_EINVAL, "'nope', which is not a column");
    pk_create_fails(e, twice, 2, NULL, 0, NULL, 0, FR_EINVAL, "names column 'id' twice");
    pk_create_fails(e, PK_ID, 1, dt, 1, NULL, 0, FR_EINVAL,
                    "partition key 'dt' is not in the primary key");
    pk_create_fails(e, dt, 1, dt, 1, NULL, 0, FR_EINVAL, "same as the partition keys");

    struct {
        fr_option o[3];
        int n;
        bool pk;
        const char *want;
    } cases[] = {
        {{{"table.merge-engine", "first_row"}}, 1, false, "is for primary-key tables"},
        {{{"table.delete.behavior", "ignore"}}, 1, false, "is for primary-key tables"},
        {{{"table.merge-engine", "newest"}}, 1, true, "give last_row, first_row"},
        {{{"table.merge-engine", "versioned"}}, 1, true, "must be set for the versioned"},
        {{{"table.merge-engine", "versioned"}, {"table.merge-engine.versioned.ver-column", "name"}},
         2, true, "give an INT, BIGINT, TIMESTAMP or TIMESTAMP_LTZ column"},
        {{{"table.merge-engine.versioned.ver-column", "nope"}}, 1, true, "is not a column"},
        {{{"table.merge-engine", "aggregation"}, {"fields.name.agg", "sum"}}, 2, true,
         "does not fit column 'name'"},
        {{{"table.merge-engine", "aggregation"}, {"fields.id.agg", "max"}}, 2, true,
         "is a primary key column"},
        {{{"table.merge-engine", "aggregation"}, {"fields.score.agg", "median"}}, 2, true,
         "fields.score.agg = 'median'"},
        {{{"fields.score.agg", "sum"}}, 1, true, "is for the aggregation merge engine"},
        {{{"table.merge-engine", "aggregation"}, {"table.changelog.image", "WAL"}}, 2, true,
         "needs the FULL changelog image"},
        {{{"table.merge-engine", "aggregation"}, {"fields.score.agg", "sum"},
          {"fields.score.listagg-delimiter", ";"}},
         3, true, "aggregates with sum"},
        {{{"table.merge-engine", "first_row"}, {"table.delete.behavior", "allow"}}, 2, true,
         "does not support deletes"},
        {{{"table.merge-engine", "versioned"}, {"table.merge-engine.versioned.ver-column", "id"},
          {"table.delete.behavior", "allow"}},
         3, true, "does not support deletes"},
        {{{"table.delete.behavior", "sometimes"}}, 1, true, "give allow, ignore or disable"},
        {{{"table.changelog.image", "PARTIAL"}}, 1, true, "give FULL or WAL"},
        {{{"bucket.key", "name"}}, 1, true, "subset of its primary key"},
        {{{"table.merge-engines", "x"}}, 1, true, "unknown table option"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        pk_create_fails(e, cases[i].pk ? PK_DT_ID : NULL, cases[i].pk ? 2 : 0, NULL, 0,
                        cases[i].o, cases[i].n, FR_EINVAL, cases[i].want);
    /* Nothing of the refused tables stayed. */
    char **names = NULL;
    int n = 0;
    fr_error err = {0};
    KIT_CHECK(fr_engine_list_tables(e, "default", &names, &n, &err), err);
    assert_int_equal(n, 0);
    fr_names_free(names, n);

    /* Accepted: every aggregate that fits, delimiters in Fluss's spellings and ours. */
    fr_option agg[] = {{"table.merge-engine", "aggregation"},
                       {"fields.name.agg", "listagg"},
                       {"fields.name.listagg.delimiter", ";"},
                       {"fields.score.agg", "SUM"}};
    PK_CREATE_OK(e, "agg", PK_DT_ID, 2, NULL, 0, agg, 4);
    fr_table *t = kit_table(e, "default", "agg");
    assert_string_equal(option_of(t, "fields.score.agg"), "sum");
    fr_table_release(t);
    fr_option agg2[] = {{"table.merge-engine", "aggregation"},
                        {"fields.name.agg", "string_agg"},
                        {"fields.name.listagg-delimiter", "|"}};
    PK_CREATE_OK(e, "agg2", PK_DT_ID, 2, NULL, 0, agg2, 3);
    fr_engine_close(e);
    kit_rmdir(dir);
}

/* Every option survives a reopen as stored; tables keep their keys. */
static void test_catalog_roundtrip(void **state)
{
    (void)state;
    char *dir = kit_tmpdir("pk_roundtrip");
    fr_engine *e = kit_open(dir);
    fr_option opts[] = {{"bucket.num", "3"},
                        {"bucket.key", "id"},
                        {"table.merge-engine", "aggregation"},
                        {"fields.name.agg", "listagg"},
                        {"fields.name.listagg-delimiter", "-"},
                        {"fields.score.agg", "max"},
                        {"table.delete.behavior", "disable"},
                        {"table.changelog.image", "full"},
                        {"table.partition.dynamic-creation", "FALSE"},
                        {"table.auto-partition.enabled", "true"},
                        {"table.auto-partition.time-unit", "month"},
                        {"table.auto-partition.num-precreate", "3"},
                        {"table.auto-partition.num-retention", "-1"},
                        {"table.auto-partition.time-zone", "Asia/Shanghai"}};
    int nopts = (int)(sizeof opts / sizeof *opts);
    PK_CREATE_OK(e, "t", PK_DT_ID, 2, (const char *const[]){"dt"}, 1, opts, nopts);
    fr_table *t = kit_table(e, "default", "t");
    char *before = NULL;
    fr_error err = {0};
    KIT_CHECK(fr_table_to_json(t, &before, &err), err);
    int nbefore = fr_table_num_options(t);
    fr_table_release(t);
    fr_engine_close(e);

    e = kit_open(dir);
    t = kit_table(e, "default", "t");
    char *after = NULL;
    KIT_CHECK(fr_table_to_json(t, &after, &err), err);
    assert_string_equal(before, after);
    assert_int_equal(fr_table_num_options(t), nbefore);
    assert_string_equal(option_of(t, "table.partition.dynamic-creation"), "false");
    assert_string_equal(option_of(t, "table.auto-partition.time-unit"), "MONTH");
    assert_string_equal(option_of(t, "table.changelog.image"), "FULL");
    int n = 0;
    const int *part = fr_table_partition_keys(t, &n);
    assert_int_equal(n, 1);
    assert_int_equal(part[0], 0);
    const int *bk = fr_table_bucket_key(t, &n);
    assert_int_equal(n, 1);
    assert_int_equal(bk[0], 1);
    fr_free(before);
    fr_free(after);
    fr_table_release(t);
    fr_engine_close(e);
    kit_rmdir(dir);
}

/* A catalog written before primary keys and partitions (no such members) still loads. */
static void test_old_catalog(void **state)
{
    (void)state;
    char *dir = kit_tmpdir("pk_oldcat");
    fr_engine *e = kit_open(dir);
    fr_engine_close(e);
    const char *text =
        "{\"format\": \"firth catalog v1\", \"next_table_id\": 2,"
        " \"databases\": [{\"name\": \"default\", \"created_ms\": 1}],"
        " \"tables\": [{\"id\": 1, \"database\": \"default\", \"name\": \"old\","
        " \"created_ms\": 1, \"schema_id\": 0, \"schemas\": [{\"id\": 0, \"fields\":"
        " [{\"name\": \"a\", \"type\": \"BIGINT\", \"nullable\": false}]}],"
        " \"options\": [], \"bucket_num\": 1, \"bucket_key\": []}]}";
    fr_error err = {0};
    KIT_CHECK(fr_write_file_atomic(kit_path(dir, "meta/catalog.json"), text, strlen(text), &err),
              err);
    e = kit_open(dir);
    fr_table *t = kit_table(e, "default", "old");
    assert_false(fr_table_is_pk(t));
    fr_table_release(t);
    /* The next save writes next_partition_id. */
    kit_create_table(e, "default", "new", NULL, 0);
    fr_engine_close(e);
    uint8_t *data = NULL;
    size_t len = 0;
    KIT_CHECK(fr_read_file(kit_path(dir, "meta/catalog.json"), 1 << 20, &data, &len, &err), err);
    assert_non_null(memmem(data, len, "\"next_partition_id\": 1", 22));
    fr_free(data);
    kit_rmdir(dir);
}

/* ---- writes and reads ------------------------------------------------------------------ */

#define NROWS 200

static const char *const DTS[] = {"a", "b", "c", "d"};

static pk_row row_of(int i, double bump)
{
    static char names[NROWS][16];
    snprintf(names[i], sizeof names[i], "n%d", i);
    return (pk_row){DTS[i % 4], i, i % 9 == 4 ? NULL : names[i], i * 1.5 + bump};
}

static void put_all(fr_table *t, double bump)
{
    pk_row rows[NROWS];
    for (int i = 0; i < NROWS; i++) rows[i] = row_of(i, bump);
    fr_batch *b = pk_batch(t, rows, NROWS);
    int64_t changed = -1;
    fr_error err = {0};
    KIT_CHECK(fr_table_put(t, b, NULL, NULL, 0, FR_NO_WRITER, -1, &changed, &err), err);
    assert_int_equal(changed, NROWS);
    fr_batch_free(b);
}

/* Looks keys up in a scrambled order with missing ones among them. */
static void check_lookups(fr_table *t, double bump, int deleted_mod)
{
    pk_row keys[NROWS + 10];
    int n = 0;
    for (int i = 0; i < NROWS; i++)
        keys[n++] = (pk_row){DTS[(i * 7) % NROWS % 4], (i * 7) % NROWS, NULL, 0};
    for (int i = 0; i < 10; i++) keys[n++] = (pk_row){DTS[i % 4], NROWS + i, NULL, 0}; /* missing */
    keys[3] = (pk_row){"b", 4, NULL, 0}; /* wrong dt */
    fr_batch *kb = pk_keys_dt_id(keys, n);
    bool found[NROWS + 10];
    fr_batch *out = NULL;
    fr_error err = {0};
    KIT_CHECK(fr_table_lookup(t, kb, found, &out, &err), err);
    pk_got g = {0};
    int64_t nout = fr_batch_num_rows(out);
    pk_collect(&g, out, &err);
    int k = 0;
    for (int i = 0; i < n; i++) {
        int64_t id = keys[i].id;
        bool want = id < NROWS && strcmp(keys[i].dt, DTS[id % 4]) == 0 &&
                    (deleted_mod == 0 || id % deleted_mod != 0);
        if (found[i] != want)
            fail_msg("key %d (%s, %" PRId64 "): found %d", i, keys[i].dt, id, found[i]);
        if (!want) continue;
        pk_row r = row_of((int)id, bump);
        assert_int_equal(g.id[k], id); /* in the order asked */
        assert_string_equal(g.dt[k], r.dt);
        if (r.name) assert_string_equal(g.name[k], r.name);
        else assert_null(g.name[k]);
        assert_true(g.score[k] == r.score);
        k++;
    }
    assert_int_equal(k, nout);
    pk_got_free(&g);
    fr_batch_free(kb);
}

static void test_put_lookup(void **state)
{
    (void)state;
    char *dir = kit_tmpdir("pk_put");
    fr_engine *e = kit_open(dir);
    fr_option opts[] = {{"bucket.num", "4"}, {"bucket.key", "dt"}};
    PK_CREATE_OK(e, "t", PK_DT_ID, 2, NULL, 0, opts, 2);
    fr_table *t = kit_table(e, "default", "t");
    put_all(t, 0);
    check_lookups(t, 0, 0);

    /* Every row is in the state once; rows of one dt are in one bucket's log. */
    pk_got g = pk_state(t, NULL);
    assert_int_equal(g.n, NROWS);
    for (int i = 0; i < NROWS; i++) assert_true(pk_got_find(&g, DTS[i % 4], i) >= 0);
    pk_got_free(&g);

    /* A second round changes every score: each key writes -U and +U. */
    put_all(t, 100);
    check_lookups(t, 100, 0);
    /* Writing the same rows again changes nothing. */
    pk_row same[3] = {row_of(1, 100), row_of(2, 100), row_of(3, 100)};
    fr_batch *b = pk_batch(t, same, 3);
    int64_t changed = -1;
    fr_error err = {0};
    KIT_CHECK(fr_table_put(t, b, NULL, NULL, 0, FR_NO_WRITER, -1, &changed, &err), err);
    assert_int_equal(changed, 0);
    fr_batch_free(b);

    /* Deletes of every third key. */
    pk_row del[NROWS];
    uint8_t ops[NROWS];
    int nd = 0;
    for (int i = 0; i < NROWS; i += 3) {
        del[nd] = row_of(i, 100);
        ops[nd++] = FR_KV_DELETE;
    }
    pk_put(t, del, nd, ops);
    check_lookups(t, 100, 3);
    g = pk_state(t, NULL);
    assert_int_equal(g.n, NROWS - nd);
    pk_got_free(&g);

    /* The changelog in the log: +I per key, -U/+U per key, -D per deleted key. */
    kit_rows r = {0};
    fr_scan_spec spec = kit_spec(FR_START_EARLIEST, 0);
    r = kit_scan(t, &spec);
    assert_int_equal(r.n, NROWS + 2 * NROWS + nd);
    kit_rows_free(&r);
    fr_table_release(t);
    fr_engine_close(e);
    kit_rmdir(dir);
}

/* Keys with a NULL are not found, and the others still are, in order. */
static void test_lookup_null_keys(void **state)
{
    (void)state;
    char *dir = kit_tmpdir("pk_nullkeys");
    fr_engine *e = kit_open(dir);
    PK_CREATE_OK(e, "t", PK_DT_ID, 2, (const char *const[]){"dt"}, 1,
                 (fr_option[]){{"bucket.num", "3"}}, 1);
    fr_table *t = kit_table(e, "default", "t");
    put_all(t, 0);
    fr_field f[2] = {{.name = "dt", .type = fr_type_of(FR_T_STRING)},
                     {.name = "id", .type = fr_type_of(FR_T_BIGINT)}};
    fr_schema *s = NULL;
    fr_error err = {0};
    KIT_CHECK(fr_schema_new(f, 2, 0, &s, &err), err);
    fr_builder *bld = NULL;
    KIT_CHECK(fr_builder_new(s, &bld, &err), err);
    /* (b, 5) found, (NULL, 6) not, (c, NULL) not, (c, 6) found */
    KIT_CHECK(fr_builder_append_bytes(bld, 0, "b", 1, &err), err);
    KIT_CHECK(fr_builder_append_i64(bld, 1, 5, &err), err);
    KIT_CHECK(fr_builder_append_null(bld, 0, &err), err);
    KIT_CHECK(fr_builder_append_i64(bld, 1, 6, &err), err);
    KIT_CHECK(fr_builder_append_bytes(bld, 0, "c", 1, &err), err);
    KIT_CHECK(fr_builder_append_null(bld, 1, &err), err);
    KIT_CHECK(fr_builder_append_bytes(bld, 0, "c", 1, &err), err);
    KIT_CHECK(fr_builder_append_i64(bld, 1, 6, &err), err);
    fr_batch *keys = NULL;
    KIT_CHECK(fr_builder_finish(bld, &keys, &err), err);
    fr_builder_free(bld);
    bool found[4];
    fr_batch *out = NULL;
    KIT_CHECK(fr_table_lookup(t, keys, found, &out, &err), err);
    assert_true(found[0] && !found[1] && !found[2] && found[3]);
    pk_got g = {0};
    pk_collect(&g, out, &err);
    assert_int_equal(g.n, 2);
    assert_int_equal(g.id[0], 5);
    assert_int_equal(g.id[1], 6);
    pk_got_free(&g);
    fr_batch_free(keys);
    fr_schema_free(s);
    fr_table_release(t);
    fr_engine_close(e);
    kit_rmdir(dir);
}

static int count_rows(void *ctx, fr_batch *batch, fr_error *err)
{
    (void)err;
    *(int64_t *)ctx += fr_batch_num_rows(batch);
    fr_batch_free(batch);
    return 0;
}

static void test_prefix_lookup(void **state)
{
    (void)state;
    char *dir = kit_tmpdir("pk_prefix");
    fr_engine *e = kit_open(dir);
    fr_option opts[] = {{"bucket.num", "4"}, {"bucket.key", "dt"}};
    PK_CREATE_OK(e, "t", PK_DT_ID, 2, NULL, 0, opts, 2);
    PK_CREATE_OK(e, "full", PK_DT_ID, 2, NULL, 0, (fr_option[]){{"bucket.num", "4"}}, 1);
    fr_table *t = kit_table(e, "default", "t");
    put_all(t, 0);
    for (int d = 0; d < 4; d++) {
        fr_value v = fr_value_str(fr_type_of(FR_T_STRING), DTS[d], 1);
        pk_got g = {0};
        fr_error err = {0};
        KIT_CHECK(fr_table_prefix_lookup(t, &v, 1, NULL, 0, pk_collect, &g, &err), err);
        assert_int_equal(g.n, NROWS / 4);
        for (int i = 0; i < g.n; i++) {
            assert_string_equal(g.dt[i], DTS[d]);
            if (i > 0) assert_true(g.id[i] > g.id[i - 1]); /* key order */
        }
        pk_got_free(&g);
    }
    /* The whole key is a prefix too; a missing one has no rows. */
    fr_value key[2] = {fr_value_str(fr_type_of(FR_T_STRING), "c", 1),
                       fr_value_int(fr_type_of(FR_T_BIGINT), 6)};
    int64_t n = 0;
    fr_error err = {0};
    KIT_CHECK(fr_table_prefix_lookup(t, key, 2, NULL, 0, count_rows, &n, &err), err);
    assert_int_equal(n, 1);
    key[0] = fr_value_str(fr_type_of(FR_T_STRING), "zz", 2);
    n = 0;
    KIT_CHECK(fr_table_prefix_lookup(t, key, 1, NULL, 0, count_rows, &n, &err), err);
    assert_int_equal(n, 0);
    fr_table_release(t);

    /* The prefix must cover the bucket key (dt, id by default). */
    t = kit_table(e, "default", "full");
    int rc = fr_table_prefix_lookup(t, key, 1, NULL, 0, count_rows, &n, &err);
    assert_int_equal(rc, FR_EINVAL);
    assert_non_null(strstr(err.msg, "give at least dt, id"));
    rc = fr_table_prefix_lookup(t, key, 0, NULL, 0, count_rows, &n, &err);
    assert_int_equal(rc, FR_EINVAL);
    fr_table_release(t);
    fr_engine_close(e);
    kit_rmdir(dir);
}

static void test_bad_writes(void **state)
{
    (void)state;
    char *dir = kit_tmpdir("pk_bad");
    fr_engine *e = kit_open(dir);
    PK_CREATE_OK(e, "t", PK_DT_ID, 2, NULL, 0, (fr_option[]){{"bucket.num", "2"}}, 1);
    fr_table *t = kit_table(e, "default", "t");
    /* A NULL in a key column, in a batch of the nullable shape. */
    fr_schema *loose = pk_schema();
    pk_row rows[2] = {{"a", 1, "x", 1}, {NULL, 2, "y", 2}};
    fr_batch *b = pk_batch_of(loose, rows, 2);
    fr_error err = {0};
    int rc = fr_table_put(t, b, NULL, NULL, 0, FR_NO_WRITER, -1, NULL, &err);
    assert_int_equal(rc, FR_EINVAL);
    assert_non_null(strstr(err.msg, "primary key column 'dt' is NULL in 1 row"));
    fr_batch_free(b);
    fr_schema_free(loose);
    /* Nothing of that batch was applied. */
    pk_got g = pk_state(t, NULL);
    assert_int_equal(g.n, 0);
    pk_got_free(&g);
    /* Appends are for log tables. */
    b = pk_batch(t, rows, 1);
    rc = fr_table_append(t, b, FR_NO_WRITER, -1, NULL, &err);
    assert_int_equal(rc, FR_EINVAL);
    assert_string_equal(err.msg, "table default.t has a primary key: write with upserts "
                                 "(INSERT) instead of appends");
    /* An operation that is neither. */
    uint8_t ops[1] = {7};
    rc = fr_table_put(t, b, ops, NULL, 0, FR_NO_WRITER, -1, NULL, &err);
    assert_int_equal(rc, FR_EINVAL);
    fr_batch_free(b);
    fr_table_release(t);
    /* Puts on a log table. */
    kit_create_table(e, "default", "log", NULL, 0);
    t = kit_table(e, "default", "log");
    b = kit_batch(0, 3);
    rc = fr_table_put(t, b, NULL, NULL, 0, FR_NO_WRITER, -1, NULL, &err);
    assert_int_equal(rc, FR_EINVAL);
    fr_batch_free(b);
    fr_table_release(t);
    fr_engine_close(e);
    kit_rmdir(dir);
}

/* Partial updates and the merge engines go through the engine to the KV store. */
static void test_partial_and_engines(void **state)
{
    (void)state;
    char *dir = kit_tmpdir("pk_partial");
    fr_engine *e = kit_open(dir);
    PK_CREATE_OK(e, "t", PK_DT_ID, 2, NULL, 0, (fr_option[]){{"bucket.num", "3"}}, 1);
    fr_table *t = kit_table(e, "default", "t");
    pk_row rows[2] = {{"a", 1, "x", 1.5}, {"b", 2, "y", 2.5}};
    pk_put(t, rows, 2, NULL);
    /* Set only score: name stays. */
    pk_row upd[2] = {{"a", 1, NULL, 9}, {"b", 2, NULL, 8}};
    fr_batch *b = pk_batch(t, upd, 2);
    int cols[3] = {0, 1, 3};
    int64_t changed = 0;
    fr_error err = {0};
    KIT_CHECK(fr_table_put(t, b, NULL, cols, 3, FR_NO_WRITER, -1, &changed, &err), err);
    assert_int_equal(changed, 2);
    fr_batch_free(b);
    pk_got g = pk_state(t, NULL);
    int i = pk_got_find(&g, "a", 1);
    assert_true(i >= 0);
    assert_string_equal(g.name[i], "x");
    assert_true(g.score[i] == 9);
    pk_got_free(&g);
    fr_table_release(t);

    /* first_row keeps the first row; a delete is ignored by default. */
    PK_CREATE_OK(e, "f", PK_DT_ID, 2, NULL, 0,
                 (fr_option[]){{"table.merge-engine", "first_row"}}, 1);
    t = kit_table(e, "default", "f");
    pk_put(t, rows, 2, NULL);
    pk_row again[1] = {{"a", 1, "z", 7}};
    pk_put(t, again, 1, NULL);
    uint8_t del[1] = {FR_KV_DELETE};
    pk_put(t, again, 1, del);
    g = pk_state(t, NULL);
    assert_int_equal(g.n, 2);
    i = pk_got_find(&g, "a", 1);
    assert_string_equal(g.name[i], "x");
    pk_got_free(&g);
    fr_table_release(t);

    /* disable refuses deletes with an error. */
    PK_CREATE_OK(e, "nodel", PK_DT_ID, 2, NULL, 0,
                 (fr_option[]){{"table.delete.behavior", "disable"}}, 1);
    t = kit_table(e, "default", "nodel");
    pk_put(t, rows, 2, NULL);
    b = pk_batch(t, again, 1);
    int rc = fr_table_put(t, b, del, NULL, 0, FR_NO_WRITER, -1, NULL, &err);
    assert_int_equal(rc, FR_EINVAL);
    fr_batch_free(b);
    fr_table_release(t);
    fr_engine_close(e);
    kit_rmdir(dir);
}

/* The state comes back when the engine opens again (the KV stores recover from the log). */
static void test_reopen(void **state)
{
    (void)state;
    char *dir = kit_tmpdir("pk_reopen");
    fr_engine *e = kit_open(dir);
    fr_option opts[] = {{"bucket.num", "4"}, {"bucket.key", "dt"}};
    PK_CREATE_OK(e, "t", PK_DT_ID, 2, NULL, 0, opts, 2);
    fr_table *t = kit_table(e, "default", "t");
    put_all(t, 0);
    put_all(t, 100);
    fr_table_release(t);
    fr_engine_close(e);
    assert_true(fr_path_exists(kit_path(dir, "kv/1/b0")));
    assert_true(fr_path_exists(kit_path(dir, "log/1/b0")));

    e = kit_open(dir);
    t = kit_table(e, "default", "t");
    check_lookups(t, 100, 0);
    pk_got g = pk_state(t, NULL);
    assert_int_equal(g.n, NROWS);
    pk_got_free(&g);
    put_all(t, 200);
    check_lookups(t, 200, 0);
    fr_table_release(t);

    /* Dropping the table removes its log and KV directories. */
    fr_error err = {0};
    KIT_CHECK(fr_engine_drop_table(e, "default", "t", false, &err), err);
    assert_false(fr_path_exists(kit_path(dir, "kv/1")));
    assert_false(fr_path_exists(kit_path(dir, "log/1")));
    fr_engine_close(e);
    kit_rmdir(dir);
}

static fr_bucket_stats stats_of(fr_table *t, int64_t partition_id)
{
    fr_bucket_stats st;
    fr_error err = {0};
    KIT_CHECK(fr_table_bucket_stats(t, partition_id, 0, &st, &err), err);
    return st;
}

static void append_round(fr_table *l, int round)
{
    pk_row rows[NROWS];
    for (int i = 0; i < NROWS; i++) rows[i] = row_of(i, round);
    fr_batch *b = pk_batch(l, rows, NROWS);
    fr_error err = {0};
    KIT_CHECK(fr_table_append(l, b, FR_NO_WRITER, -1, NULL, &err), err);
    fr_batch_free(b);
}

/* Retention of primary-key tables (one plain, one partitioned) beside a log table: while
 * the segments are young nothing goes; past table.log.ttl the old segments go once the KV
 * state up to them is on disk (the store is flushed for it), and the state is whole, after
 * a reopen too. */
static void test_retention_pk(void **state)
{
    (void)state;
    char *dir = kit_tmpdir("pk_retention");
    fr_engine *e = kit_open_with(dir, 4096);
    fr_option opts[] = {{"bucket.num", "1"}, {"table.log.ttl", "1h"}};
    PK_CREATE_OK(e, "t", PK_DT_ID, 2, NULL, 0, opts, 2);
    PK_CREATE_OK(e, "p", PK_DT_ID, 2, (const char *const[]){"dt"}, 1, opts, 2);
    PK_CREATE_OK(e, "l", NULL, 0, NULL, 0, opts, 2);
    fr_table *t = kit_table(e, "default", "t"), *p = kit_table(e, "default", "p"),
             *l = kit_table(e, "default", "l");
    for (int round = 0; round < 5; round++) {
        put_all(t, round * 100);
        put_all(p, round * 100);
        append_round(l, round);
    }
    int64_t pa = pk_partition_id(p, "dt=a");
    assert_true(fr_log_num_segments(fr_table_log(t, 0)) > 1);
    assert_true(fr_log_num_segments(fr_table_partition_log(p, pa, 0)) > 1);
    fr_bucket_stats st = stats_of(t, -1);
    assert_true(st.has_kv && st.kv_applied_offset == st.log_end_offset);
    assert_true(st.kv_persisted_offset < st.log_end_offset);

    /* Young segments stay, and the stores are not flushed for nothing. */
    int removed = -1;
    fr_error err = {0};
    KIT_CHECK(fr_engine_enforce_retention_at(e, fr_now_ms(), &removed, &err), err);
    assert_int_equal(removed, 0);
    assert_int_equal(stats_of(t, -1).kv_persisted_offset, st.kv_persisted_offset);

    KIT_CHECK(fr_engine_enforce_retention_at(e, fr_now_ms() + 24 * 3600 * 1000LL, &removed,
                                             &err), err);
    assert_true(removed > 0);
    assert_true(fr_log_start_offset(fr_table_log(l, 0)) > 0);
    st = stats_of(t, -1);
    assert_true(st.log_start_offset > 0);
    assert_int_equal(st.kv_persisted_offset, st.log_end_offset);
    fr_bucket_stats sp = stats_of(p, pa);
    assert_true(sp.log_start_offset > 0);
    assert_true(sp.log_start_offset <= sp.kv_persisted_offset);
    check_lookups(t, 400, 0);
    check_lookups(p, 400, 0);
    fr_table_release(t);
    fr_table_release(p);
    fr_table_release(l);
    fr_engine_close(e);

    e = kit_open(dir);
    t = kit_table(e, "default", "t");
    p = kit_table(e, "default", "p");
    check_lookups(t, 400, 0);
    check_lookups(p, 400, 0);
    assert_int_equal(stats_of(t, -1).log_start_offset, st.log_start_offset);
    pk_got g = pk_state(p, NULL);
    assert_int_equal(g.n, NROWS);
    pk_got_free(&g);
    fr_table_release(t);
    fr_table_release(p);
    fr_engine_close(e);
    kit_rmdir(dir);
}

/* The background thread flushes a KV store whose oldest unflushed change is older than
 * kv.flush.interval, and fr_engine_flush_kv flushes every open store at once. */
static void test_periodic_kv_flush(void **state)
{
    (void)state;
    char *dir = kit_tmpdir("pk_kvflush");
    fr_engine_options o;
    fr_engine_options_default(&o);
    o.data_dir = dir;
    o.flush = FR_FLUSH_NONE;
    o.retention_check_interval_ms = 0;
    o.auto_partition_check_interval_ms = 0;
    o.kv_flush_interval_ms = 30;
    fr_engine *e = NULL;
    fr_error err = {0};
    KIT_CHECK(fr_engine_open(&o, &e, &err), err);
    fr_option opts[] = {{"bucket.num", "1"}};
    PK_CREATE_OK(e, "t", PK_DT_ID, 2, NULL, 0, opts, 1);
    fr_table *t = kit_table(e, "default", "t");
    put_all(t, 0);
    fr_bucket_stats st = stats_of(t, -1);
    for (int i = 0; i < 400 && st.kv_persisted_offset < st.log_end_offset; i++) {
        usleep(10 * 1000);
        st = stats_of(t, -1);
    }
    assert_int_equal(st.kv_persisted_offset, st.log_end_offset);
    fr_table_release(t);
    fr_engine_close(e);

    /* Without the timed flush, fr_engine_flush_kv does it. */
    o.kv_flush_interval_ms = 0;
    o.kv_flush_records = 0;
    KIT_CHECK(fr_engine_open(&o, &e, &err), err);
    t = kit_table(e, "default", "t");
    put_all(t, 100);
    st = stats_of(t, -1);
    assert_true(st.kv_persisted_offset < st.log_end_offset);
    KIT_CHECK(fr_engine_flush_kv(e, &err), err);
    st = stats_of(t, -1);
    assert_int_equal(st.kv_persisted_offset, st.log_end_offset);
    fr_table_release(t);
    fr_engine_close(e);
    kit_rmdir(dir);
}

/* A process that dies without closing anything (as kill -9 would, after its writes were
 * acknowledged) loses no row: the KV stores, whose RocksDB writes had no WAL, are brought
 * up to date from the logs when the next engine opens the buckets. */
static void test_crash_recovery(void **state)
{
    (void)state;
    char *dir = kit_tmpdir("pk_crash");
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        fr_engine_options o;
        fr_engine_options_default(&o);
        o.data_dir = dir;
        o.retention_check_interval_ms = 0;
        o.auto_partition_check_interval_ms = 0;
        fr_engine *e = NULL;
        fr_error err = {0};
        if (fr_engine_open(&o, &e, &err) < 0) _exit(2);
        fr_option opts[] = {{"bucket.num", "4"}, {"bucket.key", "dt"}};
        if (pk_create(e, "t", PK_DT_ID, 2, NULL, 0, opts, 2, &err) < 0) _exit(3);
        if (pk_create(e, "p", PK_DT_ID, 2, (const char *const[]){"dt"}, 1, opts + 0, 1, &err) < 0)
            _exit(4);
        fr_table *t = NULL, *p = NULL;
        if (fr_engine_get_table(e, "default", "t", &t, &err) < 0 ||
            fr_engine_get_table(e, "default", "p", &p, &err) < 0)
            _exit(5);
        for (int round = 0; round < 3; round++) {
            pk_row rows[NROWS];
            for (int i = 0; i < NROWS; i++) rows[i] = row_of(i, round * 100);
            fr_batch *b = pk_batch(t, rows, NROWS);
            if (fr_table_put(t, b, NULL, NULL, 0, FR_NO_WRITER, -1, NULL, &err) < 0 ||
                fr_table_put(p, b, NULL, NULL, 0, FR_NO_WRITER, -1, NULL, &err) < 0)
                _exit(6);
            fr_batch_free(b);
        }
        _exit(0); /* no close: RocksDB's memtables are lost */
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);

    fr_engine *e = kit_open(dir);
    fr_table *t = kit_table(e, "default", "t");
    check_lookups(t, 200, 0);
    pk_got g = pk_state(t, NULL);
    assert_int_equal(g.n, NROWS);
    pk_got_free(&g);
    fr_table_release(t);
    t = kit_table(e, "default", "p");
    assert_string_equal(pk_partitions(t), "dt=a dt=b dt=c dt=d");
    check_lookups(t, 200, 0);
    fr_table_release(t);
    fr_engine_close(e);
    kit_rmdir(dir);
}

/* The child of test_crash_after_retention, run as a fresh process (RocksDB's background
 * threads do not survive a fork, and a flush waits for them): writes four rounds, runs
 * retention as if a day had passed after the third, and dies without closing. */
static int crash_after_retention_child(const char *dir)
{
    fr_engine_options o;
    fr_engine_options_default(&o);
    o.data_dir = dir;
    o.segment_bytes = 4096;
    o.retention_check_interval_ms = 0;
    o.kv_flush_interval_ms = 0;
    o.kv_flush_records = 0;
    fr_engine *e = NULL;
    fr_error err = {0};
    if (fr_engine_open(&o, &e, &err) < 0) return 2;
    fr_option opts[] = {{"bucket.num", "2"}, {"table.log.ttl", "1h"}};
    if (pk_create(e, "t", PK_DT_ID, 2, NULL, 0, opts, 2, &err) < 0) return 3;
    fr_table *t = NULL;
    if (fr_engine_get_table(e, "default", "t", &t, &err) < 0) return 5;
    for (int round = 0; round < 4; round++) {
        pk_row rows[NROWS];
        for (int i = 0; i < NROWS; i++) rows[i] = row_of(i, round * 100);
        fr_batch *b = pk_batch(t, rows, NROWS);
        if (fr_table_put(t, b, NULL, NULL, 0, FR_NO_WRITER, -1, NULL, &err) < 0) return 6;
        fr_batch_free(b);
        int removed = 0;
        if (round == 2 &&
            (fr_engine_enforce_retention_at(e, fr_now_ms() + 24 * 3600 * 1000LL, &removed,
                                            &err) < 0 || removed == 0))
            return 7;
    }
    return 0; /* no close: round 3 is in the memtables only */
}

/* A process that removes old segments of a primary-key table by retention, writes more
 * and dies without closing: the next open recovers the state from what the KV store had on
 * disk and the changelog the log kept. */
static void test_crash_after_retention(void **state)
{
    (void)state;
    char *dir = kit_tmpdir("pk_crash_ret");
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        execl("/proc/self/exe", "test_engine_pk", "--crash-after-retention", dir, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);

    fr_engine *e = kit_open(dir);
    fr_table *t = kit_table(e, "default", "t");
    assert_true(fr_log_start_offset(fr_table_log(t, 0)) > 0);
    check_lookups(t, 300, 0);
    pk_got g = pk_state(t, NULL);
    assert_int_equal(g.n, NROWS);
    pk_got_free(&g);
    fr_table_release(t);
    fr_engine_close(e);
    kit_rmdir(dir);
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--crash-after-retention") == 0)
        _exit(crash_after_retention_child(argv[2]));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_pk),
        cmocka_unit_test(test_create_invalid),
        cmocka_unit_test(test_catalog_roundtrip),
        cmocka_unit_test(test_old_catalog),
        cmocka_unit_test(test_put_lookup),
        cmocka_unit_test(test_prefix_lookup),
        cmocka_unit_test(test_lookup_null_keys),
        cmocka_unit_test(test_bad_writes),
        cmocka_unit_test(test_partial_and_engines),
        cmocka_unit_test(test_reopen),
        cmocka_unit_test(test_retention_pk),
        cmocka_unit_test(test_periodic_kv_flush),
        cmocka_unit_test(test_crash_after_retention),
        cmocka_unit_test(test_crash_recovery),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
