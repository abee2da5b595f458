/* test_engine_faults.c — the engine under failing allocations: every failure point of
 * open, create, drop, append and scan must fail cleanly (no crash, no leak under ASan) and
 * leave the catalog and the data as they were, and a failed idempotent append retried with
 * the same (writer, seq) must complete it exactly once. */
#include "engine_testkit.h"

#define FAULT_POINTS_MAX 400

static void test_open_faults(void **state)
{
    (void)state;
    char *dir = kit_tmpdir("faults_open");
    fr_engine *e = kit_open(dir);
    fr_option opts[] = {{"bucket.num", "3"}, {"bucket.key", "id"}, {"x.y", "z"}};
    kit_create_table(e, "default", "t", opts, 3);
    fr_table *t = kit_table(e, "default", "t");
    fr_batch *b = kit_batch(0, 30);
    fr_error err = {0};
    KIT_CHECK(fr_table_append(t, b, FR_NO_WRITER, -1, NULL, &err), err);
    fr_batch_free(b);
    fr_table_release(t);
    fr_engine_close(e);
    int failures = 0;
    for (long n = 1; n <= FAULT_POINTS_MAX; n++) {
        fr_engine_options o;
        fr_engine_options_default(&o);
        o.data_dir = dir;
        o.flush = FR_FLUSH_NONE;
        o.retention_check_interval_ms = 0;
        e = NULL;
        fr_alloc_fail_after(n);
        int rc = fr_engine_open(&o, &e, &err);
        fr_alloc_fail_after(0);
        if (rc < 0) {
            failures++;
            assert_null(e);
            continue;
        }
        t = kit_table(e, "default", "t");
        assert_int_equal(fr_table_num_buckets(t), 3);
        fr_table_release(t);
        fr_engine_close(e);
    }
    assert_true(failures > 0);
    /* The data dir is intact. */
    e = kit_open(dir);
    t = kit_table(e, "default", "t");
    fr_scan_spec spec = kit_spec(FR_START_EARLIEST, 0);
    kit_rows r = kit_scan(t, &spec);
    assert_int_equal(r.n, 30);
    kit_rows_free(&r);
    fr_table_release(t);
    fr_engine_close(e);
    kit_rmdir(dir);
}

static void test_catalog_faults(void **state)
{
    (void)state;
    char *dir = kit_tmpdir("faults_catalog");
    fr_engine *e = kit_open(dir);
    fr_schema *s = kit_schema();
    fr_option opts[] = {{"bucket.num", "2"}, {"bucket.key", "name"}};
    fr_table_spec spec = {.db = "default", .name = "t", .schema = s, .options = opts,
                          .noptions = 2};
    fr_error err = {0};
    int created = 0, refused = 0;
    for (long n = 1; n <= 80; n++) {
        fr_alloc_fail_after(n);
        int rc = fr_engine_create_table(e, &spec, false, &err);
        fr_alloc_fail_after(0);
        fr_table *t = NULL;
        int found = fr_engine_get_table(e, "default", "t", &t, &err);
        if (rc < 0) {
            refused++;
            assert_int_equal(found, FR_ENOTFOUND);
            continue;
        }
        created++;
        assert_int_equal(found, 0);
        fr_table_release(t);
        /* And the drop, with its own failure point. */
        fr_alloc_fail_after(n);
        rc = fr_engine_drop_table(e, "default", "t", false, &err);
        fr_alloc_fail_after(0);
        if (rc < 0) {
            KIT_CHECK(fr_engine_get_table(e, "default", "t", &t, &err), err);
            fr_table_release(t);
            KIT_CHECK(fr_engine_drop_table(e, "default", "t", false, &err), err);
        }
    }
    assert_true(created > 0 && refused > 0);
    for (long n = 1; n <= 20; n++) {
        fr_alloc_fail_after(n);
        int rc = fr_engine_create_database(e, "d", false, &err);
        fr_alloc_fail_after(0);
        char **names = NULL;
        int count = 0;
        KIT_CHECK(fr_engine_list_databases(e, &names, &count, &err), err);
        assert_int_equal(count, rc == 0 ? 2 : 1);
        fr_names_free(names, count);
        if (rc == 0) KIT_CHECK(fr_engine_drop_database(e, "d", false, false, &err), err);
    }
    fr_engine_close(e);
    /* What is on disk agrees with what the engine said. */
    e = kit_open(dir);
    char **names = NULL;
    int count = 0;
    KIT_CHECK(fr_engine_list_tables(e, "default", &names, &count, &err), err);
    assert_int_equal(count, 0);
    fr_names_free(names, count);
    fr_engine_close(e);
    fr_schema_free(s);
    kit_rmdir(dir);
}

static void test_append_faults_exactly_once(void **state)
{
    (void)state;
    char *dir = kit_tmpdir("faults_append");
    fr_engine *e = kit_open(dir);
    fr_option opts[] = {{"bucket.num", "4"}, {"bucket.key", "id"}};
    kit_create_table(e, "default", "t", opts, 2);
    fr_table *t = kit_table(e, "default", "t");
    fr_error err = {0};
    int failed = 0;
    const int calls = 60;
    for (int i = 0; i < calls; i++) {
        fr_batch *b = kit_batch(i * 10, 10);
        int64_t n1 = 0, n2 = 0;
        fr_alloc_fail_after(1 + i % 30);
        int rc = fr_table_append(t, b, 42, i, &n1, &err);
        fr_alloc_fail_after(0);
        if (rc < 0) failed++;
        /* The retry writes exactly what the first attempt did not. */
        KIT_CHECK(fr_table_append(t, b, 42, i, &n2, &err), err);
        assert_true(n1 + n2 <= 10); /* a part written before a failure is not rewritten */
        if (rc == 0) {
            assert_int_equal(n1, 10);
            assert_int_equal(n2, 0);
        }
        fr_batch_free(b);
    }
    assert_true(failed > 0);
    fr_scan_spec spec = kit_spec(FR_START_EARLIEST, 0);
    kit_rows r = kit_scan(t, &spec);
    assert_int_equal(r.n, calls * 10);
    /* Every id once. */
    int8_t seen[600] = {0};
    for (int64_t k = 0; k < r.n; k++) {
        assert_true(r.first[k] >= 0 && r.first[k] < calls * 10);
        assert_int_equal(seen[r.first[k]]++, 0);
    }
    kit_rows_free(&r);
    /* Scans under failure fail cleanly or deliver a prefix of the rows. */
    for (long n = 1; n <= 60; n++) {
        kit_rows part = {0};
        fr_alloc_fail_after(n);
        int rc = fr_table_scan(t, &spec, kit_collect, &part, &err);
        fr_alloc_fail_after(0);
        if (rc == 0) assert_int_equal(part.n, calls * 10);
        else assert_true(part.n <= calls * 10);
        kit_rows_free(&part);
    }
    fr_table_release(t);
    fr_engine_close(e);
    kit_rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_open_faults),
        cmocka_unit_test(test_catalog_faults),
        cmocka_unit_test(test_append_faults_exactly_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
