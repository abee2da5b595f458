/* test_lake_iceberg.c — Iceberg tables end to end: creation and reopening, appends over
 * several commits, tiered offsets merged across commits, partitioned tables and pruning,
 * rolled files, and a primary-key table under random upserts and deletes whose scans must
 * equal a model at every commit. */
#include "lake_iceberg_testkit.h"

#include <time.h>

static void test_create_and_reopen(void **state)
{
    (void)state;
    char *dir = ik_tmpdir("ice_create");
    ik_table k;
    ik_table_init(&k, 0, 0);
    fr_error err = {0};
    fr_iceberg_table *t = NULL;
    char tdir[1200];
    snprintf(tdir, sizeof tdir, "%s/db/t", dir);
    /* No table and no spec: not found. */
    assert_int_equal(fr_iceberg_open(tdir, NULL, &t, &err), FR_ENOTFOUND);
    assert_non_null(strstr(err.msg, tdir));
    IK_CHECK(fr_iceberg_open(tdir, &k.spec, &t, &err), err);
    assert_true(fr_schema_equal(fr_iceberg_schema(t), k.lake));
    assert_null(fr_iceberg_delete_schema(t));
    fr_lake_snapshot *cur = (fr_lake_snapshot *)1;
    IK_CHECK(fr_iceberg_current(t, &cur, &err), err);
    assert_null(cur);
    ik_rows rows = {0};
    IK_CHECK(ik_scan(t, -1, NULL, 0, NULL, &rows, NULL, &err), err);
    assert_int_equal(rows.n, 0);
    fr_iceberg_close(t);
    /* Reopened without a spec, the same schema comes back (firth's own types kept). */
    IK_CHECK(fr_iceberg_open(tdir, NULL, &t, &err), err);
    assert_true(fr_schema_equal(fr_iceberg_schema(t), k.lake));
    fr_iceberg_close(t);
    /* A spec that disagrees is refused, naming the table. */
    ik_table k2;
    ik_table_init(&k2, 1, 0);
    assert_int_equal(fr_iceberg_open(tdir, &k2.spec, &t, &err), FR_EINVAL);
    assert_non_null(strstr(err.msg, "partition"));
    /* The metadata has the fields Iceberg v2 requires. */
    char path[1300];
    snprintf(path, sizeof path, "%s/metadata/v1.metadata.json", tdir);
    json_t *doc = json_load_file(path, 0, NULL);
    assert_non_null(doc);
    assert_int_equal(json_integer_value(json_object_get(doc, "format-version")), 2);
    const char *loc = json_string_value(json_object_get(doc, "location"));
    assert_non_null(loc);
    assert_memory_equal(loc, "file:///", 8);
    json_t *f0 = json_array_get(
        json_object_get(json_array_get(json_object_get(doc, "schemas"), 0), "fields"), 0);
    assert_string_equal(json_string_value(json_object_get(f0, "type")), "long");
    assert_true(json_is_true(json_object_get(f0, "required")));
    json_decref(doc);
    ik_table_free(&k2);
    ik_table_free(&k);
    ik_rmdir(dir);
}

/* Appends `rounds` commits of `per` rows each; checks every snapshot reads its rows. */
static void test_appends_and_offsets(void **state)
{
    (void)state;
    char *dir = ik_tmpdir("ice_append");
    ik_table k;
    ik_table_init(&k, 0, 0);
    fr_error err = {0};
    fr_iceberg_table *t;
    IK_CHECK(fr_iceberg_open(dir, &k.spec, &t, &err), err);
    ik_rows expect = {0};
    int64_t snaps[6];
    int64_t bucket_off[3] = {0, 0, 0};
    for (int round = 0; round < 6; round++) {
        ik_row rows[40];
        char names[40][16];
        int b = round % 3;
        for (int i = 0; i < 40; i++) {
            snprintf(names[i], sizeof names[i], "n%d", round * 40 + i);
            rows[i] = (ik_row){round * 40 + i, i % 7 ? names[i] : NULL, i * 0.5, "eu", b,
                               bucket_off[b] + i};
        }
        bucket_off[b] += 40;
        fr_batch *batch = ik_batch(k.lake, rows, 40);
        ik_batch_rows(batch, &expect);
        fr_iceberg_commit *c;
        IK_CHECK(fr_iceberg_commit_begin(t, &c, &err), err);
        IK_CHECK(fr_iceberg_commit_add_rows(c, batch, &err), err);
        fr_batch_free(batch);
        fr_lake_offset off = {-1, b, bucket_off[b]};
        IK_CHECK(fr_iceberg_commit_finish(c, &off, 1, &snaps[round], &err), err);
        ik_rows got = {0};
        IK_CHECK(ik_scan(t, -1, NULL, 0, NULL, &got, NULL, &err), err);
        ik_rows_equal(&got, &expect);
        ik_rows_free(&got);
    }
    /* The summary of the last snapshot: counters, and every bucket's offset. */
    fr_lake_snapshot *cur;
    IK_CHECK(fr_iceberg_current(t, &cur, &err), err);
    assert_non_null(cur);
    assert_int_equal(cur->snapshot_id, snaps[5]);
    assert_int_equal(cur->parent_id, snaps[4]);
    assert_int_equal(cur->sequence_number, 6);
    assert_string_equal(cur->operation, "append");
    assert_int_equal(cur->added_records, 40);
    assert_int_equal(cur->total_records, 240);
    assert_int_equal(cur->added_data_files, 1);
    assert_int_equal(cur->total_data_files, 6);
    assert_int_equal(cur->noffsets, 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(cur->offsets[i].partition_id, -1);
        assert_int_equal(cur->offsets[i].bucket, i);
        assert_int_equal(cur->offsets[i].offset, bucket_off[i]);
    }
    fr_lake_snapshots_free(cur, 1);
    fr_lake_snapshot *all;
    int n;
    IK_CHECK(fr_iceberg_snapshots(t, &all, &n, &err), err);
    assert_int_equal(n, 6);
    assert_int_equal(all[0].noffsets, 1);
    assert_int_equal(all[2].noffsets, 3);
    assert_int_equal(all[3].offsets[0].offset, 80);
    for (int i = 0; i < 6; i++) assert_int_equal(all[i].snapshot_id, snaps[i]);
    fr_lake_snapshots_free(all, n);
    /* An old snapshot still reads its own rows only. */
    ik_rows got = {0};
    IK_CHECK(ik_scan(t, snaps[1], NULL, 0, NULL, &got, NULL, &err), err);
    assert_int_equal(got.n, 80);
    ik_rows_free(&got);
    assert_int_equal(ik_scan(t, 12345, NULL, 0, NULL, &got, NULL, &err), FR_ENOTFOUND);
    /* A projection returns the chosen columns in order. */
    int cols[2] = {IK_OFFSET, IK_ID};
    IK_CHECK(ik_scan(t, -1, cols, 2, NULL, &got, NULL, &err), err);
    assert_int_equal(got.n, 240);
    ik_rows_free(&got);
    /* Another handle opened later sees the same newest snapshot. */
    fr_iceberg_table *t2;
    IK_CHECK(fr_iceberg_open(dir, NULL, &t2, &err), err);
    IK_CHECK(ik_scan(t2, -1, NULL, 0, NULL, &got, NULL, &err), err);
    ik_rows_equal(&got, &expect);
    ik_rows_free(&got);
    fr_iceberg_close(t2);
    ik_rows_free(&expect);
    fr_iceberg_close(t);
    ik_table_free(&k);
    ik_rmdir(dir);
}

static fr_expr *region_eq(fr_arena *a, const fr_schema *s, const char *region)
{
    fr_value lit = fr_value_str(fr_type_of(FR_T_STRING), region, strlen(region));
    fr_expr *e = fr_expr_binary(a, FR_OP_EQ, fr_expr_column(a, "region"), fr_expr_literal(a, &lit));
    fr_error err = {0};
    IK_CHECK(fr_expr_bind(e, s, &err), err);
    return e;
}

static void test_partitioned_and_pruning(void **state)
{
    (void)state;
    char *dir = ik_tmpdir("ice_part");
    ik_table k;
    ik_table_init(&k, 1, 2000); /* small files: rolled often */
    fr_error err = {0};
    fr_iceberg_table *t;
    IK_CHECK(fr_iceberg_open(dir, &k.spec, &t, &err), err);
    static const char *regions[] = {"eu", "us", "apac", "latam"};
    ik_rows expect = {0}, expect_us = {0};
    for (int round = 0; round < 3; round++) {
        fr_iceberg_commit *c;
        IK_CHECK(fr_iceberg_commit_begin(t, &c, &err), err);
        for (int part = 0; part < 4; part++) {
            ik_row rows[200];
            for (int i = 0; i < 200; i++) {
                int64_t id = round * 10000 + part * 1000 + i;
                rows[i] = (ik_row){id, "some name", (double)id, regions[(i + part) % 4], 0, id};
            }
            fr_batch *b = ik_batch(k.lake, rows, 200);
            ik_batch_rows(b, &expect);
            for (int i = 0; i < 200; i++)
                if (strcmp(rows[i].region, "us") == 0) {
                    fr_batch *one;
                    IK_CHECK(fr_batch_slice(b, i, 1, &one, &err), err);
                    ik_batch_rows(one, &expect_us);
                    fr_batch_free(one);
                }
            IK_CHECK(fr_iceberg_commit_add_rows(c, b, &err), err);
            fr_batch_free(b);
        }
        int64_t id;
        fr_lake_offset off = {7, 0, (round + 1) * 800};
        IK_CHECK(fr_iceberg_commit_finish(c, &off, 1, &id, &err), err);
    }
    ik_rows got = {0};
    int64_t skipped = 0;
    IK_CHECK(ik_scan(t, -1, NULL, 0, NULL, &got, &skipped, &err), err);
    ik_rows_equal(&got, &expect);
    assert_int_equal(skipped, 0);
    ik_rows_free(&got);
    /* region = 'us' reads only that partition's files: the rows it returns are all 'us'. */
    fr_arena *a = fr_arena_new(4096);
    fr_expr *e = region_eq(a, k.lake, "us");
    IK_CHECK(ik_scan(t, -1, NULL, 0, e, &got, &skipped, &err), err);
    ik_rows_equal(&got, &expect_us);
    assert_true(skipped > 0);
    ik_rows_free(&got);
    /* A region no file holds reads nothing at all; the manifests' partition summaries
     * already rule every file out. */
    e = region_eq(a, k.lake, "zzz");
    IK_CHECK(ik_scan(t, -1, NULL, 0, e, &got, &skipped, &err), err);
    assert_int_equal(got.n, 0);
    fr_iceberg_scan *sc;
    int all[IK_NCOLS] = {0, 1, 2, 3, 4, 5, 6};
    IK_CHECK(fr_iceberg_scan_open(t, -1, all, IK_NCOLS, e, &sc, &err), err);
    int64_t nread = -1, nskipped = -1;
    fr_iceberg_scan_counts(sc, &nread, &nskipped, NULL);
    assert_int_equal(nread, 0);
    assert_true(nskipped > 0);
    fr_iceberg_scan_close(sc);
    /* Proof that the manifests were not even read: with their files emptied, the filtered
     * scan still succeeds while a full one fails. */
    {
        const fr_ice_snap *snap = fr_ice_meta_snap(t->meta, t->meta->current_id);
        fr_arena *ma = fr_arena_new(4096);
        fr_ice_manifest *mans;
        int nm;
        IK_CHECK(fr_ice_snap_manifests(snap, ma, &mans, &nm, &err), err);
        char saved[8][1024];
        assert_true(nm <= 8);
        for (int i = 0; i < nm; i++) {
            snprintf(saved[i], sizeof saved[i], "%s.saved", fr_ice_local_path(mans[i].path));
            assert_int_equal(rename(fr_ice_local_path(mans[i].path), saved[i]), 0);
            FILE *f = fopen(fr_ice_local_path(mans[i].path), "w");
            assert_non_null(f);
            fclose(f);
        }
        IK_CHECK(ik_scan(t, -1, NULL, 0, e, &got, NULL, &err), err);
        assert_int_equal(got.n, 0);
        assert_int_equal(ik_scan(t, -1, NULL, 0, NULL, &got, NULL, &err), FR_ECORRUPT);
        for (int i = 0; i < nm; i++)
            assert_int_equal(rename(saved[i], fr_ice_local_path(mans[i].path)), 0);
        fr_free(mans);
        fr_arena_free(ma);
    }
    ik_rows_free(&got);
    /* Bounds prune on other columns too: id > max id skips every file. */
    fr_value lit = fr_value_int(fr_type_of(FR_T_BIGINT), 1000000);
    fr_expr *gt = fr_expr_binary(a, FR_OP_GT, fr_expr_column(a, "id"), fr_expr_literal(a, &lit));
    IK_CHECK(fr_expr_bind(gt, k.lake, &err), err);
    IK_CHECK(ik_scan(t, -1, NULL, 0, gt, &got, &skipped, &err), err);
    assert_int_equal(got.n, 0);
    fr_lake_snapshot *cur;
    IK_CHECK(fr_iceberg_current(t, &cur, &err), err);
    assert_int_equal(skipped, cur->total_data_files);
    /* Small target sizes roll files: more files than partitions in each commit. */
    assert_true(cur->added_data_files > 4);
    assert_int_equal(cur->offsets[0].partition_id, 7);
    assert_int_equal(cur->offsets[0].offset, 2400);
    fr_lake_snapshots_free(cur, 1);
    ik_rows_free(&got);
    fr_arena_free(a);
    ik_rows_free(&expect);
    ik_rows_free(&expect_us);
    fr_iceberg_close(t);
    ik_table_free(&k);
    ik_rmdir(dir);
}

/* The model of a PK table: the live row text of each id, by id. */
#define PK_KEYS 60
#define PK_BUCKETS 3

static void model_rows(char model[PK_KEYS][96], ik_rows *out)
{
    for (int i = 0; i < PK_KEYS; i++)
        if (model[i][0]) ik_rows_add(out, model[i]);
}

/* The number of manifests in the current snapshot's list. */
static int count_manifests(fr_iceberg_table *t)
{
    const fr_ice_snap *s = fr_ice_meta_snap(t->meta, t->meta->current_id);
    assert_non_null(s);
    fr_arena *a = fr_arena_new(4096);
    fr_ice_manifest *m;
    int n;
    fr_error err = {0};
    IK_CHECK(fr_ice_snap_manifests(s, a, &m, &n, &err), err);
    fr_free(m);
    fr_arena_free(a);
    return n;
}

static void pk_rounds(int merge_min)
{
    unsigned seed = (unsigned)time(NULL);
    const char *env = getenv("FIRTH_TEST_SEED");
    if (env) seed = (unsigned)strtoul(env, NULL, 10);
    printf("pk_rounds(%d) seed %u (FIRTH_TEST_SEED)\n", merge_min, seed);
    srand(seed);
    char *dir = ik_tmpdir("ice_pk");
    ik_table k;
    ik_table_init(&k, 2, 0);
    fr_error err = {0};
    fr_iceberg_table *t;
    IK_CHECK(fr_iceberg_open(dir, &k.spec, &t, &err), err);
    if (merge_min) fr_iceberg_test_merge_min(t, merge_min);
    const fr_schema *ds = fr_iceberg_delete_schema(t);
    assert_non_null(ds);
    assert_int_equal(fr_schema_num_fields(ds), 2);
    assert_string_equal(fr_schema_field(ds, 0)->name, "id");
    assert_string_equal(fr_schema_field(ds, 1)->name, FR_LAKE_COL_BUCKET);
    static char model[PK_KEYS][96];
    memset(model, 0, sizeof model);
    int64_t offset = 0;
    fr_buf text;
    fr_buf_init(&text);
    for (int round = 0; round < 12; round++) {
        ik_row rows[PK_KEYS];
        char names[PK_KEYS][24];
        int64_t del_ids[PK_KEYS];
        int32_t del_buckets[PK_KEYS];
        int nrows = 0, ndel = 0;
        bool touched[PK_KEYS] = {false};
        int changes = 1 + rand() % 25;
        for (int j = 0; j < changes; j++) {
            int id = rand() % PK_KEYS;
            if (touched[id]) continue; /* one final state per key and round */
            touched[id] = true;
            int bucket = id % PK_BUCKETS;
            bool exists = model[id][0] != 0;
            bool remove = exists && rand() % 4 == 0;
            /* Every changed key's old row goes; an upsert adds its new row. */
            if (exists || rand() % 2) {
                del_ids[ndel] = id;
                del_buckets[ndel++] = bucket;
            }
            if (remove) {
                model[id][0] = 0;
                continue;
            }
            snprintf(names[nrows], sizeof names[nrows], "r%d-k%d", round, id);
            rows[nrows] = (ik_row){id, names[nrows], round + id / 10.0, "x", bucket, offset++};
            fr_batch *one = ik_batch(k.lake, &rows[nrows], 1);
            ik_row_text(one, 0, &text);
            fr_batch_free(one);
            snprintf(model[id], sizeof model[id], "%s", (const char *)text.data);
            nrows++;
        }
        fr_iceberg_commit *c;
        IK_CHECK(fr_iceberg_commit_begin(t, &c, &err), err);
        if (ndel) {
            fr_batch *d = ik_delete_batch(ds, del_ids, del_buckets, ndel);
            IK_CHECK(fr_iceberg_commit_add_deletes(c, d, &err), err);
            fr_batch_free(d);
        }
        if (nrows) {
            fr_batch *b = ik_batch(k.lake, rows, nrows);
            IK_CHECK(fr_iceberg_commit_add_rows(c, b, &err), err);
            fr_batch_free(b);
        }
        int64_t id;
        fr_lake_offset offs[PK_BUCKETS];
        for (int b = 0; b < PK_BUCKETS; b++) offs[b] = (fr_lake_offset){-1, b, offset};
        IK_CHECK(fr_iceberg_commit_finish(c, offs, PK_BUCKETS, &id, &err), err);
        ik_rows got = {0}, want = {0};
        IK_CHECK(ik_scan(t, -1, NULL, 0, NULL, &got, NULL, &err), err);
        model_rows(model, &want);
        ik_rows_equal(&got, &want);
        ik_rows_free(&got);
        ik_rows_free(&want);
        fr_lake_snapshot *cur;
        IK_CHECK(fr_iceberg_current(t, &cur, &err), err);
        assert_int_equal(cur->added_deletes, ndel);
        assert_int_equal(cur->added_records, nrows);
        assert_string_equal(cur->operation, ndel == 0 ? "append" : nrows ? "overwrite" : "delete");
        fr_lake_snapshots_free(cur, 1);
        /* Merged lists stay short: at most merge_min of a kind, plus the new ones. */
        if (merge_min) assert_true(count_manifests(t) <= 2 * merge_min + 2);
        else assert_true(count_manifests(t) >= round + 1);
    }
    /* A scan of the key alone still applies the deletes. */
    ik_rows got = {0};
    int col = IK_NAME;
    IK_CHECK(ik_scan(t, -1, &col, 1, NULL, &got, NULL, &err), err);
    int live = 0;
    for (int i = 0; i < PK_KEYS; i++) live += model[i][0] != 0;
    assert_int_equal(got.n, live);
    ik_rows_free(&got);
    fr_buf_free(&text);
    fr_iceberg_close(t);
    ik_table_free(&k);
    ik_rmdir(dir);
}

static void test_pk_upserts(void **state)
{
    (void)state;
    pk_rounds(0);
}

/* The same with manifests merged every few commits (EXISTING entries keep their sequence
 * numbers, so deletes still apply only to older rows). */
static void test_pk_upserts_merged(void **state)
{
    (void)state;
    pk_rounds(3);
}

static void test_deletes_need_a_key(void **state)
{
    (void)state;
    char *dir = ik_tmpdir("ice_nokey");
    ik_table k;
    ik_table_init(&k, 0, 0);
    fr_error err = {0};
    fr_iceberg_table *t;
    IK_CHECK(fr_iceberg_open(dir, &k.spec, &t, &err), err);
    fr_iceberg_commit *c;
    IK_CHECK(fr_iceberg_commit_begin(t, &c, &err), err);
    ik_row r = {1, "a", 1, "eu", 0, 0};
    fr_batch *b = ik_batch(k.lake, &r, 1);
    assert_int_equal(fr_iceberg_commit_add_deletes(c, b, &err), FR_EINVAL);
    fr_iceberg_commit_abort(c);
    fr_batch_free(b);
    /* The aborted commit left no file behind. */
    char data[1200];
    snprintf(data, sizeof data, "%s/data", dir);
    assert_int_equal(ik_count_files(data), 0);
    fr_iceberg_close(t);
    ik_table_free(&k);
    ik_rmdir(dir);
}

/* A scan keeps reading the snapshot it opened while the same handle commits; the schemas
 * the handle hands out stay valid. */
static void test_scan_across_commits(void **state)
{
    (void)state;
    char *dir = ik_tmpdir("ice_across");
    ik_table k;
    ik_table_init(&k, 2, 0);
    fr_error err = {0};
    fr_iceberg_table *t;
    IK_CHECK(fr_iceberg_open(dir, &k.spec, &t, &err), err);
    const fr_schema *schema = fr_iceberg_schema(t), *ds = fr_iceberg_delete_schema(t);
    ik_row rows[10];
    for (int i = 0; i < 10; i++) rows[i] = (ik_row){i, "a", i, "x", i % 2, i};
    fr_batch *b = ik_batch(k.lake, rows, 10);
    fr_iceberg_commit *c;
    int64_t snap;
    IK_CHECK(fr_iceberg_commit_begin(t, &c, &err), err);
    IK_CHECK(fr_iceberg_commit_add_rows(c, b, &err), err);
    IK_CHECK(fr_iceberg_commit_finish(c, NULL, 0, &snap, &err), err);
    fr_batch_free(b);
    int cols[IK_NCOLS];
    for (int i = 0; i < IK_NCOLS; i++) cols[i] = i;
    fr_iceberg_scan *s;
    IK_CHECK(fr_iceberg_scan_open(t, -1, cols, IK_NCOLS, NULL, &s, &err), err);
    /* Delete every key, twice over, while the scan is open. */
    int64_t ids[10];
    int32_t buckets[10];
    for (int i = 0; i < 10; i++) ids[i] = i, buckets[i] = i % 2;
    for (int round = 0; round < 2; round++) {
        fr_batch *d = ik_delete_batch(ds, ids, buckets, 10);
        IK_CHECK(fr_iceberg_commit_begin(t, &c, &err), err);
        IK_CHECK(fr_iceberg_commit_add_deletes(c, d, &err), err);
        IK_CHECK(fr_iceberg_commit_finish(c, NULL, 0, &snap, &err), err);
        fr_batch_free(d);
        IK_CHECK(fr_iceberg_refresh(t, &err), err);
    }
    assert_ptr_equal(fr_iceberg_schema(t), schema);
    assert_ptr_equal(fr_iceberg_delete_schema(t), ds);
    ik_rows got = {0};
    for (;;) {
        fr_batch *o;
        IK_CHECK(fr_iceberg_scan_next(s, &o, &err), err);
        if (!o) break;
        ik_batch_rows(o, &got);
        fr_batch_free(o);
    }
    fr_iceberg_scan_close(s);
    assert_int_equal(got.n, 10);
    ik_rows_free(&got);
    IK_CHECK(ik_scan(t, -1, NULL, 0, NULL, &got, NULL, &err), err);
    assert_int_equal(got.n, 0);
    ik_rows_free(&got);
    fr_iceberg_close(t);
    ik_table_free(&k);
    ik_rmdir(dir);
}

static int count_glob(const char *dir, const char *prefix, const char *suffix)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "ls '%s' | grep '^%s.*%s$' | wc -l", dir, prefix, suffix);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    int n = -1;
    assert_int_equal(fscanf(p, "%d", &n), 1);
    pclose(p);
    return n;
}

/* Old snapshots expire and old metadata files go, within the table's limits; every row and
 * the merged offsets stay. */
static void test_history_trimmed(void **state)
{
    (void)state;
    char *dir = ik_tmpdir("ice_history");
    ik_table k;
    ik_table_init(&k, 0, 0);
    fr_error err = {0};
    fr_iceberg_table *t;
    IK_CHECK(fr_iceberg_open(dir, &k.spec, &t, &err), err);
    fr_iceberg_test_history(t, 3, 2);
    fr_iceberg_test_merge_min(t, 4);
    char meta[1200];
    snprintf(meta, sizeof meta, "%s/metadata", dir);
    for (int round = 0; round < 9; round++) {
        ik_row r = {round, "n", round, "eu", round % 4, round / 4};
        fr_batch *b = ik_batch(k.lake, &r, 1);
        fr_iceberg_commit *c;
        int64_t snap;
        IK_CHECK(fr_iceberg_commit_begin(t, &c, &err), err);
        IK_CHECK(fr_iceberg_commit_add_rows(c, b, &err), err);
        fr_lake_offset off = {-1, round % 4, round / 4 + 1};
        IK_CHECK(fr_iceberg_commit_finish(c, &off, 1, &snap, &err), err);
        fr_batch_free(b);
        assert_int_equal(t->meta->nsnaps, round < 3 ? round + 1 : 3);
        assert_true(json_array_size(json_object_get(t->meta->root, "metadata-log")) <= 2);
        assert_true(json_array_size(json_object_get(t->meta->root, "snapshot-log")) <= 3);
        assert_int_equal(count_glob(meta, "v", ".metadata.json"), round + 2 < 3 ? round + 2 : 3);
        assert_int_equal(count_glob(meta, "snap-", ".avro"), round < 3 ? round + 1 : 3);
    }
    int removed = -1;
    IK_CHECK(fr_iceberg_remove_orphans(t, &removed, &err), err);
    fr_iceberg_table *r;
    IK_CHECK(fr_iceberg_open(dir, NULL, &r, &err), err);
    ik_rows got = {0};
    IK_CHECK(ik_scan(r, -1, NULL, 0, NULL, &got, NULL, &err), err);
    assert_int_equal(got.n, 9);
    ik_rows_free(&got);
    fr_lake_snapshot *all;
    int n;
    IK_CHECK(fr_iceberg_snapshots(r, &all, &n, &err), err);
    assert_int_equal(n, 3);
    assert_int_equal(all[2].noffsets, 4);
    assert_int_equal(all[2].offsets[0].offset, 3); /* rounds 0, 4, 8 */
    assert_int_equal(all[2].total_records, 9);
    fr_lake_snapshots_free(all, n);
    fr_iceberg_close(r);
    fr_iceberg_close(t);
    ik_table_free(&k);
    ik_rmdir(dir);
}

/* Every firth type through a table partitioned on several typed columns (nulls included):
 * partition values and bounds go through the manifests and come back equal. */
static void test_all_types(void **state)
{
    (void)state;
    char *dir = ik_tmpdir("ice_types");
    fr_error err = {0};
    static const char *names[] = {"b", "ti", "si", "i", "bi", "f", "d", "dec", "s", "vc",
                                  "by", "dt", "tm", "ts", "tz"};
    static const char *types[] = {"BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT",
                                  "DOUBLE", "DECIMAL(12, 2)", "STRING", "VARCHAR(10)", "BYTES",
                                  "DATE", "TIME(6)", "TIMESTAMP(3)", "TIMESTAMP_LTZ(6)"};
    enum { NT = 15 };
    fr_field f[NT];
    for (int i = 0; i < NT; i++) {
        f[i].name = (char *)names[i];
        IK_CHECK(fr_type_parse(types[i], &f[i].type, &err), err);
    }
    fr_schema *ts, *lake;
    int32_t ids[FR_SCHEMA_COLUMNS_MAX + 3];
    IK_CHECK(fr_schema_new(f, NT, 0, &ts, &err), err);
    IK_CHECK(fr_lake_schema(ts, &lake, ids, &err), err);
    int part[] = {7, 11, 0, 1, 8, 12}; /* dec, dt, b, ti, s, tm */
    fr_lake_spec spec = {.schema = lake, .field_ids = ids, .partition_cols = part,
                         .npartition_cols = 6};
    fr_iceberg_table *t;
    IK_CHECK(fr_iceberg_open(dir, &spec, &t, &err), err);
    fr_builder *bld;
    IK_CHECK(fr_builder_new(lake, &bld, &err), err);
    for (int r = 0; r < 30; r++) {
        char text[NT + 3][64];
        snprintf(text[0], 64, "%s", r % 3 ? "true" : "false");
        snprintf(text[1], 64, "%d", r % 4 - 2);
        snprintf(text[2], 64, "%d", r * 1000 - 15000);
        snprintf(text[3], 64, "%d", r * 100000);
        snprintf(text[4], 64, "%lld", (long long)r * 10000000000LL);
        snprintf(text[5], 64, "%g", r * 0.25 - 3);
        snprintf(text[6], 64, "%g", r * 1e10);
        snprintf(text[7], 64, "%d.%02d", r % 5 - 2, r % 3 * 17);
        snprintf(text[8], 64, "str-%d", r % 4);
        snprintf(text[9], 64, "v%d", r);
        snprintf(text[10], 64, "b%d", r);
        snprintf(text[11], 64, "2026-01-%02d", 1 + r % 3);
        snprintf(text[12], 64, "10:00:%02d.123456", r % 2);
        snprintf(text[13], 64, "2026-02-03 04:05:%02d.789", r);
        snprintf(text[14], 64, "2026-02-03 04:05:%02d.123456Z", r);
        snprintf(text[15], 64, "%d", r % 2);
        snprintf(text[16], 64, "%d", r);
        snprintf(text[17], 64, "2026-02-03 04:05:%02d.000001Z", r);
        for (int c = 0; c < NT + 3; c++) {
            const fr_type *ty = &fr_schema_field(lake, c)->type;
            fr_value v;
            /* Nulls in nullable columns, partition columns included (s, ti). */
            if (c < NT && (r + c) % 7 == 0) v = fr_value_null(*ty);
            else IK_CHECK(fr_value_parse(text[c], strlen(text[c]), ty, &v, &err), err);
            IK_CHECK(fr_builder_append(bld, c, &v, &err), err);
        }
    }
    fr_batch *b;
    IK_CHECK(fr_builder_finish(bld, &b, &err), err);
    fr_builder_free(bld);
    ik_rows want = {0}, got = {0};
    ik_batch_rows(b, &want);
    fr_iceberg_commit *c;
    int64_t snap;
    IK_CHECK(fr_iceberg_commit_begin(t, &c, &err), err);
    IK_CHECK(fr_iceberg_commit_add_rows(c, b, &err), err);
    IK_CHECK(fr_iceberg_commit_finish(c, NULL, 0, &snap, &err), err);
    fr_batch_free(b);
    fr_iceberg_close(t);
    IK_CHECK(fr_iceberg_open(dir, NULL, &t, &err), err);
    assert_true(fr_schema_equal(fr_iceberg_schema(t), lake));
    int cols[NT + 3];
    for (int i = 0; i < NT + 3; i++) cols[i] = i;
    IK_CHECK(ik_scan(t, -1, cols, NT + 3, NULL, &got, NULL, &err), err);
    ik_rows_equal(&got, &want);
    ik_rows_free(&got);
    /* Pruning on a decimal partition value and a date bound. */
    fr_arena *a = fr_arena_new(4096);
    fr_value lit;
    fr_type dt = fr_type_decimal(12, 2);
    IK_CHECK(fr_value_parse("1.34", 4, &dt, &lit, &err), err);
    fr_expr *e = fr_expr_binary(a, FR_OP_EQ, fr_expr_column(a, "dec"), fr_expr_literal(a, &lit));
    IK_CHECK(fr_expr_bind(e, lake, &err), err);
    int64_t skipped;
    IK_CHECK(ik_scan(t, -1, cols, NT + 3, e, &got, &skipped, &err), err);
    assert_true(skipped > 0);
    int match = 0;
    for (int i = 0; i < want.n; i++) match += strstr(want.v[i], "|1.34|") != NULL;
    assert_true(match > 0);
    int seen = 0;
    for (int i = 0; i < got.n; i++) seen += strstr(got.v[i], "|1.34|") != NULL;
    assert_int_equal(seen, match);
    assert_true(got.n < want.n);
    ik_rows_free(&got);
    fr_arena_free(a);
    ik_rows_free(&want);
    fr_iceberg_close(t);
    fr_schema_free(lake);
    fr_schema_free(ts);
    ik_rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_and_reopen),
        cmocka_unit_test(test_appends_and_offsets),
        cmocka_unit_test(test_partitioned_and_pruning),
        cmocka_unit_test(test_pk_upserts),
        cmocka_unit_test(test_pk_upserts_merged),
        cmocka_unit_test(test_deletes_need_a_key),
        cmocka_unit_test(test_scan_across_commits),
        cmocka_unit_test(test_history_trimmed),
        cmocka_unit_test(test_all_types),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
