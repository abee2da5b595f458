/* test_lake_iceberg_faults.c — Iceberg tables under faults: a crash after each step of the
 * commit protocol (the previous snapshot stays the newest readable one, or the new one is
 * complete; orphans are removed), version hints that are missing, garbage or behind, two
 * writers racing for one version, and corrupt or truncated metadata, manifest lists,
 * manifests and data files, which must fail with clear errors naming the file. */
#include "lake_iceberg_testkit.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

static fr_batch *rows_batch(const ik_table *k, int64_t first, int n)
{
    ik_row rows[64];
    assert_true(n <= 64);
    for (int i = 0; i < n; i++)
        rows[i] = (ik_row){first + i, "name", (double)i, i % 2 ? "eu" : "us", 0, first + i};
    return ik_batch(k->lake, rows, n);
}

static int commit_n(fr_iceberg_table *t, const ik_table *k, int64_t first, int n, int64_t *snap,
                    fr_error *err)
{
    fr_iceberg_commit *c;
    int rc = fr_iceberg_commit_begin(t, &c, err);
    if (rc < 0) return rc;
    fr_batch *b = rows_batch(k, first, n);
    rc = fr_iceberg_commit_add_rows(c, b, err);
    fr_batch_free(b);
    if (rc < 0) {
        fr_iceberg_commit_abort(c);
        return rc;
    }
    fr_lake_offset off = {-1, 0, first + n};
    return fr_iceberg_commit_finish(c, &off, 1, snap, err);
}

static int count_rows(fr_iceberg_table *t, fr_error *err)
{
    ik_rows r = {0};
    int rc = ik_scan(t, -1, NULL, 0, NULL, &r, NULL, err);
    int n = r.n;
    ik_rows_free(&r);
    return rc < 0 ? rc : n;
}

static void path_of(char *out, size_t cap, const char *dir, const char *rel)
{
    snprintf(out, cap, "%s/%s", dir, rel);
}

static void test_crash_after_each_step(void **state)
{
    (void)state;
    for (int step = 1; step <= 4; step++) {
        char *dir = ik_tmpdir("ice_crash");
        ik_table k;
        ik_table_init(&k, 1, 0);
        fr_error err = {0};
        fr_iceberg_table *t;
        IK_CHECK(fr_iceberg_open(dir, &k.spec, &t, &err), err);
        int64_t s1, s2, s3;
        IK_CHECK(commit_n(t, &k, 0, 10, &s1, &err), err);
        char data[1200], meta[1200];
        path_of(data, sizeof data, dir, "data");
        path_of(meta, sizeof meta, dir, "metadata");
        int data_before = ik_count_files(data), meta_before = ik_count_files(meta);
        fr_iceberg_test_crash_after(t, step);
        assert_int_equal(commit_n(t, &k, 10, 20, &s2, &err), FR_EIO);
        /* Files of the interrupted commit are still there, as after a real crash. */
        assert_true(ik_count_files(data) > data_before);
        if (step >= 2) assert_true(ik_count_files(meta) > meta_before);
        /* Another process opening the table now sees a complete snapshot. */
        fr_iceberg_table *r;
        IK_CHECK(fr_iceberg_open(dir, NULL, &r, &err), err);
        fr_lake_snapshot *cur;
        IK_CHECK(fr_iceberg_current(r, &cur, &err), err);
        assert_int_equal(count_rows(r, &err), step < 4 ? 10 : 30);
        assert_int_equal(cur->offsets[0].offset, step < 4 ? 10 : 30);
        if (step < 4) assert_int_equal(cur->snapshot_id, s1);
        fr_lake_snapshots_free(cur, 1);
        /* Orphans: everything the interrupted commit wrote, unless it was published. */
        int removed = -1;
        IK_CHECK(fr_iceberg_remove_orphans(r, &removed, &err), err);
        if (step < 4) {
            assert_true(removed > 0);
            assert_int_equal(ik_count_files(data), data_before);
            assert_int_equal(ik_count_files(meta), meta_before);
        } else {
            assert_int_equal(removed, 0);
        }
        assert_int_equal(count_rows(r, &err), step < 4 ? 10 : 30);
        fr_iceberg_close(r);
        /* The writer carries on with the next commit. */
        IK_CHECK(commit_n(t, &k, 30, 5, &s3, &err), err);
        assert_int_equal(count_rows(t, &err), step < 4 ? 15 : 35);
        IK_CHECK(fr_iceberg_remove_orphans(t, &removed, &err), err);
        assert_int_equal(removed, 0);
        fr_iceberg_close(t);
        ik_table_free(&k);
        ik_rmdir(dir);
    }
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_version_hint(void **state)
{
    (void)state;
    char *dir = ik_tmpdir("ice_hint");
    ik_table k;
    ik_table_init(&k, 0, 0);
    fr_error err = {0};
    fr_iceberg_table *t, *r;
    IK_CHECK(fr_iceberg_open(dir, &k.spec, &t, &err), err);
    int64_t s;
    for (int i = 0; i < 3; i++) IK_CHECK(commit_n(t, &k, i * 10, 10, &s, &err), err);
    char hint[1200];
    path_of(hint, sizeof hint, dir, "metadata/version-hint.text");
    static const char *hints[] = {NULL, "garbage", "1", "99", "0", "-3", "4\n"};
    for (size_t i = 0; i < sizeof hints / sizeof hints[0]; i++) {
        unlink(hint);
        if (hints[i]) write_text(hint, hints[i]);
        IK_CHECK(fr_iceberg_open(dir, NULL, &r, &err), err);
        fr_lake_snapshot *cur;
        IK_CHECK(fr_iceberg_current(r, &cur, &err), err);
        assert_int_equal(cur->snapshot_id, s);
        assert_int_equal(count_rows(r, &err), 30);
        fr_lake_snapshots_free(cur, 1);
        fr_iceberg_close(r);
    }
    /* The writer still commits the next version after a hint that lagged. */
    write_text(hint, "2");
    IK_CHECK(commit_n(t, &k, 30, 10, &s, &err), err);
    IK_CHECK(fr_iceberg_open(dir, NULL, &r, &err), err);
    assert_int_equal(count_rows(r, &err), 40);
    fr_iceberg_close(r);
    fr_iceberg_close(t);
    ik_table_free(&k);
    ik_rmdir(dir);
}

static void test_two_writers(void **state)
{
    (void)state;
    char *dir = ik_tmpdir("ice_race");
    ik_table k;
    ik_table_init(&k, 0, 0);
    fr_error err = {0};
    fr_iceberg_table *a, *b;
    IK_CHECK(fr_iceberg_open(dir, &k.spec, &a, &err), err);
    IK_CHECK(fr_iceberg_open(dir, &k.spec, &b, &err), err);
    int64_t s;
    IK_CHECK(commit_n(a, &k, 0, 10, &s, &err), err);
    char data[1200];
    path_of(data, sizeof data, dir, "data");
    int before = ik_count_files(data);
    /* b's metadata is stale: its commit loses the race and leaves no file behind. */
    assert_int_equal(commit_n(b, &k, 10, 10, &s, &err), FR_ESTATE);
    assert_non_null(strstr(err.msg, "v2.metadata.json"));
    assert_int_equal(ik_count_files(data), before);
    IK_CHECK(fr_iceberg_refresh(b, &err), err);
    IK_CHECK(commit_n(b, &k, 10, 10, &s, &err), err);
    IK_CHECK(fr_iceberg_refresh(a, &err), err);
    assert_int_equal(count_rows(a, &err), 20);
    /* Leftovers of a crash inside publishing (the temporary metadata file) and of a writer
     * (a data file no manifest lists) are orphans; published files are not. */
    char stray[2][1300];
    snprintf(stray[0], sizeof stray[0], "%s/metadata/.v9.metadata.json.x.tmp", dir);
    snprintf(stray[1], sizeof stray[1], "%s/data/stray.parquet", dir);
    for (int i = 0; i < 2; i++) write_text(stray[i], "x");
    int removed = 0;
    IK_CHECK(fr_iceberg_remove_orphans(a, &removed, &err), err);
    assert_int_equal(removed, 2);
    for (int i = 0; i < 2; i++) assert_false(fr_path_exists(stray[i]));
    assert_int_equal(count_rows(a, &err), 20);
    fr_iceberg_close(a);
    fr_iceberg_close(b);
    ik_table_free(&k);
    ik_rmdir(dir);
}

/* The current snapshot's manifest list, data manifest and first data file (local paths). */
static void table_files(fr_iceberg_table *t, char *list, char *manifest, char *data, size_t cap)
{
    const fr_ice_meta *m = t->meta;
    const fr_ice_snap *s = fr_ice_meta_snap(m, m->current_id);
    assert_non_null(s);
    snprintf(list, cap, "%s", fr_ice_local_path(s->manifest_list));
    fr_arena *a = fr_arena_new(4096);
    fr_error err = {0};
    fr_ice_manifest *mans;
    int nm;
    IK_CHECK(fr_ice_snap_manifests(s, a, &mans, &nm, &err), err);
    assert_true(nm >= 1);
    snprintf(manifest, cap, "%s", fr_ice_local_path(mans[0].path));
    fr_ice_file *files;
    int nf;
    IK_CHECK(fr_avro_load_manifest(mans[0].path, &t->ps, &mans[0], a, &files, &nf, &err), err);
    assert_true(nf >= 1);
    snprintf(data, cap, "%s", fr_ice_local_path(files[0].path));
    fr_free(files);
    fr_free(mans);
    fr_arena_free(a);
}

static void truncate_to(const char *path, off_t n)
{
    assert_int_equal(truncate(path, n), 0);
}

static void flip_byte(const char *path, off_t at)
{
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    uint8_t b;
    assert_int_equal(pread(fd, &b, 1, at), 1);
    b ^= 0x5a;
    assert_int_equal(pwrite(fd, &b, 1, at), 1);
    close(fd);
}

static void copy_file(const char *from, const char *to)
{
    uint8_t *p;
    size_t n;
    fr_error err = {0};
    IK_CHECK(fr_read_file(from, 1 << 28, &p, &n, &err), err);
    unlink(to);
    FILE *f = fopen(to, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(p, 1, n, f), n);
    fclose(f);
    fr_free(p);
}

static void expect_scan_error(fr_iceberg_table *t, const char *file)
{
    fr_error err = {0};
    ik_rows r = {0};
    int rc = ik_scan(t, -1, NULL, 0, NULL, &r, NULL, &err);
    ik_rows_free(&r);
    if (rc >= 0) fail_msg("a scan over a damaged %s succeeded", file);
    assert_true(rc == FR_ECORRUPT || rc == FR_EIO || rc == FR_ENOTFOUND);
    const char *base = strrchr(file, '/');
    if (!strstr(err.msg, base + 1)) fail_msg("the error does not name %s: %s", base + 1, err.msg);
}

static void test_corrupt_files(void **state)
{
    (void)state;
    char *dir = ik_tmpdir("ice_corrupt");
    ik_table k;
    ik_table_init(&k, 1, 0);
    fr_error err = {0};
    fr_iceberg_table *t;
    IK_CHECK(fr_iceberg_open(dir, &k.spec, &t, &err), err);
    int64_t s;
    IK_CHECK(commit_n(t, &k, 0, 40, &s, &err), err);
    IK_CHECK(commit_n(t, &k, 40, 40, &s, &err), err);
    char list[1200], manifest[1200], data[1200], save[1300];
    table_files(t, list, manifest, data, sizeof list);
    const char *victims[] = {list, manifest, data};
    for (int v = 0; v < 3; v++) {
        const char *file = victims[v];
        snprintf(save, sizeof save, "%s.save", file);
        copy_file(file, save);
        struct stat st;
        assert_int_equal(stat(file, &st), 0);
        /* Truncated at several points, then bytes flipped in the middle and the end. */
        off_t cuts[] = {0, 3, 17, st.st_size / 2, st.st_size - 1};
        for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
            truncate_to(file, cuts[i]);
            expect_scan_error(t, file);
            copy_file(save, file);
        }
        /* Avro headers and blocks: flipped bytes are caught by the container checks, the
         * sync markers or the schema comparison. Parquet: the footer's bytes. */
        off_t flips[] = {1, st.st_size - 9, st.st_size - 5};
        for (size_t i = 0; i < sizeof flips / sizeof flips[0]; i++) {
            flip_byte(file, flips[i]);
            expect_scan_error(t, file);
            copy_file(save, file);
        }
        assert_int_equal(count_rows(t, &err), 80);
        /* A missing file names itself too. */
        unlink(file);
        expect_scan_error(t, file);
        copy_file(save, file);
        unlink(save);
    }
    /* Corrupt metadata JSON: open fails naming the file; nothing crashes. */
    char meta[1200];
    path_of(meta, sizeof meta, dir, "metadata/v3.metadata.json");
    snprintf(save, sizeof save, "%s.save", meta);
    copy_file(meta, save);
    static const char *bad[] = {
        "", "{", "[]", "{\"format-version\": 2}", "{\"format-version\": \"2\"}",
        "{\"format-version\": 1, \"table-uuid\": \"x\"}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        write_text(meta, bad[i]);
        fr_iceberg_table *r = NULL;
        int rc = fr_iceberg_open(dir, NULL, &r, &err);
        assert_true(rc == FR_ECORRUPT || rc == FR_EUNSUPPORTED);
        assert_null(r);
        assert_non_null(strstr(err.msg, "v3.metadata.json"));
        assert_int_equal(fr_iceberg_refresh(t, &err), rc);
    }
    copy_file(save, meta);
    unlink(save);
    IK_CHECK(fr_iceberg_refresh(t, &err), err);
    assert_int_equal(count_rows(t, &err), 80);
    fr_iceberg_close(t);
    /* A missing table directory. */
    fr_iceberg_table *r = NULL;
    char missing[1200];
    path_of(missing, sizeof missing, dir, "no/such/table");
    assert_int_equal(fr_iceberg_open(missing, NULL, &r, &err), FR_ENOTFOUND);
    assert_non_null(strstr(err.msg, "no/such/table"));
    ik_table_free(&k);
    ik_rmdir(dir);
}

/* Metadata whose fields are each replaced by a wrong type must be refused, not crash. */
static void test_metadata_field_types(void **state)
{
    (void)state;
    char *dir = ik_tmpdir("ice_types");
    ik_table k;
    ik_table_init(&k, 2, 0);
    fr_error err = {0};
    fr_iceberg_table *t;
    IK_CHECK(fr_iceberg_open(dir, &k.spec, &t, &err), err);
    int64_t s;
    IK_CHECK(commit_n(t, &k, 0, 10, &s, &err), err);
    json_t *doc = json_deep_copy(t->meta->root);
    const char *keys[] = {"format-version", "table-uuid", "location", "last-sequence-number",
                          "last-column-id", "current-schema-id", "schemas", "partition-specs",
                          "default-spec-id", "last-partition-id", "current-snapshot-id",
                          "snapshots"};
    json_t *values[] = {json_string("x"), json_integer(7), json_array(), json_object(),
                        json_integer(-5), json_null()};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        for (size_t j = 0; j < sizeof values / sizeof values[0]; j++) {
            json_t *d = json_deep_copy(doc);
            json_object_set(d, keys[i], values[j]);
            char *text = json_dumps(d, 0);
            fr_ice_meta *m = NULL;
            int rc = fr_ice_meta_parse(text, strlen(text), "test.json", &m, &err);
            if (rc == 0) {
                /* Some replacements are valid (null snapshots, -5 ids are not). */
                for (int q = 0; q < m->nsnaps; q++) {
                    fr_lake_snapshot ls;
                    if (fr_ice_snap_describe(&m->snaps[q], &ls, &err) == 0) fr_free(ls.offsets);
                }
                fr_ice_meta_free(m);
            } else {
                assert_non_null(strstr(err.msg, "test.json"));
            }
            free(text);
            json_decref(d);
        }
    for (size_t j = 0; j < sizeof values / sizeof values[0]; j++) json_decref(values[j]);
    /* Without firth's own schema property, types come from the Iceberg names. */
    json_object_del(json_object_get(doc, "properties"), FR_ICE_PROP_SCHEMA);
    json_t *fields = json_object_get(json_array_get(json_object_get(doc, "schemas"), 0), "fields");
    static const struct { const char *iceberg, *firth; int rc; } names[] = {
        {"decimal( 9 ,3 )", "DECIMAL(9, 3)", 0}, {"decimal(38,0)", "DECIMAL(38, 0)", 0},
        {"decimal(39,1)", NULL, FR_EUNSUPPORTED}, {"decimal(5,6)", NULL, FR_EUNSUPPORTED},
        {"decimal(5,2", NULL, FR_EUNSUPPORTED}, {"time", "TIME(6)", 0},
        {"timestamp", "TIMESTAMP(6)", 0}, {"uuid", NULL, FR_EUNSUPPORTED},
        {"binary", "BYTES", 0}, {"int", "INT", 0},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        json_object_set_new(json_array_get(fields, 1), "type", json_string(names[i].iceberg));
        char *text = json_dumps(doc, 0);
        fr_ice_meta *m = NULL;
        int rc = fr_ice_meta_parse(text, strlen(text), "derived.json", &m, &err);
        free(text);
        assert_int_equal(rc, names[i].rc);
        if (rc < 0) continue;
        char got[64];
        fr_type_format(&fr_schema_field(m->schema, 1)->type, false, got, sizeof got);
        assert_string_equal(got, names[i].firth);
        fr_type_format(&fr_schema_field(m->schema, IK_TS)->type, false, got, sizeof got);
        assert_string_equal(got, "TIMESTAMP_LTZ(6)");
        fr_ice_meta_free(m);
    }
    json_decref(doc);
    fr_iceberg_close(t);
    ik_table_free(&k);
    ik_rmdir(dir);
}

/* The n-th allocation of a commit and of a scan fails, for every n until they succeed:
 * each fails cleanly or succeeds, and the table always reads as before or after the
 * commit. */
static void test_allocation_failures(void **state)
{
    (void)state;
    char *dir = ik_tmpdir("ice_alloc");
    ik_table k;
    ik_table_init(&k, 2, 0);
    fr_error err = {0};
    fr_iceberg_table *t;
    IK_CHECK(fr_iceberg_open(dir, &k.spec, &t, &err), err);
    int64_t s;
    IK_CHECK(commit_n(t, &k, 0, 10, &s, &err), err);
    int rows = 10, commits_ok = 0, scans_ok = 0;
    for (long n = 1; n < 3000 && (commits_ok < 3 || scans_ok < 3); n++) {
        fr_batch *b = rows_batch(&k, 1000 + n * 4, 4);
        int64_t ids[2] = {1000 + n * 4 - 4, 3};
        int32_t buckets[2] = {0, 0};
        fr_batch *d = ik_delete_batch(fr_iceberg_delete_schema(t), ids, buckets, 2);
        fr_alloc_fail_after(n);
        fr_iceberg_commit *c = NULL;
        int rc = fr_iceberg_commit_begin(t, &c, &err);
        if (rc == 0) rc = fr_iceberg_commit_add_deletes(c, d, &err);
        if (rc == 0) rc = fr_iceberg_commit_add_rows(c, b, &err);
        if (rc == 0) {
            rc = fr_iceberg_commit_finish(c, NULL, 0, &s, &err);
        } else {
            fr_iceberg_commit_abort(c);
        }
        fr_alloc_fail_after(0);
        fr_batch_free(b);
        fr_batch_free(d);
        if (rc < 0) {
            /* A failure leaves the handle usable: refresh it from disk. */
            IK_CHECK(fr_iceberg_refresh(t, &err), err);
        } else {
            commits_ok++;
        }
        int now = count_rows(t, &err);
        assert_true(now >= 0);
        /* The commit adds 4 rows and deletes the previous round's first row (when it
         * exists) and row 3 (once). */
        assert_true(now == rows || (rc == 0 && now >= rows + 2 && now <= rows + 4));
        if (rc == 0) assert_true(now != rows);
        rows = now;
        /* A scan under the same injection. */
        fr_alloc_fail_after(n);
        int64_t got = 0;
        int cols[IK_NCOLS] = {0, 1, 2, 3, 4, 5, 6};
        fr_iceberg_scan *sc = NULL;
        int src = fr_iceberg_scan_open(t, -1, cols, IK_NCOLS, NULL, &sc, &err);
        while (src == 0) {
            fr_batch *o = NULL;
            src = fr_iceberg_scan_next(sc, &o, &err);
            if (src < 0 || !o) break;
            got += fr_batch_num_rows(o);
            fr_batch_free(o);
        }
        fr_iceberg_scan_close(sc);
        fr_alloc_fail_after(0);
        if (src == 0) {
            assert_int_equal(got, rows);
            scans_ok++;
        }
    }
    assert_true(commits_ok >= 3 && scans_ok >= 3);
    int removed;
    IK_CHECK(fr_iceberg_remove_orphans(t, &removed, &err), err);
    assert_int_equal(count_rows(t, &err), rows);
    fr_iceberg_close(t);
    ik_table_free(&k);
    ik_rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crash_after_each_step),
        cmocka_unit_test(test_version_hint),
        cmocka_unit_test(test_two_writers),
        cmocka_unit_test(test_corrupt_files),
        cmocka_unit_test(test_metadata_field_types),
        cmocka_unit_test(test_allocation_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
