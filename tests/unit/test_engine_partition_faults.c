/* test_engine_partition_faults.c — primary-key and partitioned tables under failing
 * allocations: every failure point of creating such a table, adding and dropping a
 * partition, putting rows that create partitions, looking up, reading the state and
 * reopening must fail cleanly (no crash, no leak under ASan), leave the catalog as it was
 * (a partition is listed exactly when its creation succeeded), and a retry without failures
 * must then give the full result. */
#include "engine_pk_testkit.h"

#define FAULT_POINTS_MAX 300

static const char *const PK_DT_ID[] = {"dt", "id"};
static const char *const DT[] = {"dt"};

static void test_create_faults(void **state)
{
    (void)state;
    char *dir = kit_tmpdir("pfault_create");
    fr_engine *e = kit_open(dir);
    fr_option opts[] = {{"bucket.num", "2"},
                        {"table.merge-engine", "aggregation"},
                        {"fields.score.agg", "sum"},
                        {"table.auto-partition.enabled", "true"},
                        {"table.auto-partition.time-zone", "UTC"}};
    fr_schema *s = pk_schema();
    fr_table_spec spec = {.db = "default", .name = "t", .schema = s, .options = opts,
                          .noptions = 5, .primary_key = PK_DT_ID, .nprimary_key = 2,
                          .partition_keys = DT, .npartition_keys = 1};
    int created = 0, refused = 0;
    for (long n = 1; n <= FAULT_POINTS_MAX && !created; n++) {
        fr_error err = {0};
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
    }
    assert_true(created == 1 && refused > 0);
    fr_schema_free(s);
    fr_engine_close(e);
    kit_rmdir(dir);
}

static bool listed(fr_table *t, const char *name)
{
    return pk_partition_id(t, name) >= 0;
}

static void test_partition_faults(void **state)
{
    (void)state;
    char *dir = kit_tmpdir("pfault_parts");
    fr_engine *e = kit_open(dir);
    PK_CREATE_OK(e, "t", PK_DT_ID, 2, DT, 1, (fr_option[]){{"bucket.num", "3"}}, 1);
    fr_table *t = kit_table(e, "default", "t");
    fr_option spec = {"dt", "x"};
    int added = 0, failed = 0;
    for (long n = 1; n <= FAULT_POINTS_MAX && !added; n++) {
        fr_error err = {0};
        fr_alloc_fail_after(n);
        int rc = fr_engine_add_partition(e, "default", "t", &spec, 1, false, &err);
        fr_alloc_fail_after(0);
        assert_int_equal(listed(t, "dt=x"), rc == 0);
        if (rc == 0) added++;
        else failed++;
    }
    assert_true(added == 1 && failed > 0);
    int dropped = 0;
    for (long n = 1; n <= FAULT_POINTS_MAX && !dropped; n++) {
        fr_error err = {0};
        fr_alloc_fail_after(n);
        int rc = fr_engine_drop_partition(e, "default", "t", &spec, 1, false, &err);
        fr_alloc_fail_after(0);
        assert_int_equal(listed(t, "dt=x"), rc != 0);
        dropped += rc == 0;
    }
    assert_int_equal(dropped, 1);
    fr_table_release(t);
    fr_engine_close(e);
    kit_rmdir(dir);
}

/* Puts that create partitions, lookups and state reads, each at every failure point. */
static void test_put_read_faults(void **state)
{
    (void)state;
    char *dir = kit_tmpdir("pfault_put");
    fr_engine *e = kit_open(dir);
    PK_CREATE_OK(e, "t", PK_DT_ID, 2, DT, 1, (fr_option[]){{"bucket.num", "3"}}, 1);
    fr_table *t = kit_table(e, "default", "t");
    pk_row rows[12];
    const char *dts[] = {"a", "b", "c"};
    for (int i = 0; i < 12; i++) rows[i] = (pk_row){dts[i % 3], i, "v", i};
    fr_batch *b = pk_batch(t, rows, 12);
    int ok = 0;
    for (long n = 1; n <= FAULT_POINTS_MAX && !ok; n++) {
        fr_error err = {0};
        fr_alloc_fail_after(n);
        int rc = fr_table_put(t, b, NULL, NULL, 0, FR_NO_WRITER, -1, NULL, &err);
        fr_alloc_fail_after(0);
        if (rc == 0) ok++;
        else assert_true(err.msg[0] != '\0');
    }
    assert_int_equal(ok, 1);
    fr_batch_free(b);
    pk_got g = pk_state(t, NULL);
    assert_int_equal(g.n, 12);
    pk_got_free(&g);

    fr_batch *kb = pk_keys_dt_id(rows, 12);
    int lookups = 0, states = 0, failures = 0;
    for (long n = 1; n <= 20 * FAULT_POINTS_MAX && !lookups; n++) {
        bool found[12];
        fr_batch *out = NULL;
        fr_error err = {0};
        fr_alloc_fail_after(n);
        int rc = fr_table_lookup(t, kb, found, &out, &err);
        fr_alloc_fail_after(0);
        if (rc < 0) {
            failures++;
            continue;
        }
        assert_int_equal(fr_batch_num_rows(out), 12); /* never "not found" for want of memory */
        fr_batch_free(out);
        lookups++;
    }
    for (long n = 1; n <= 20 * FAULT_POINTS_MAX && !states; n++) {
        fr_error err = {0};
        g = (pk_got){0};
        fr_alloc_fail_after(n);
        int rc = fr_table_scan_state(t, NULL, 0, NULL, pk_collect, &g, &err);
        fr_alloc_fail_after(0);
        if (rc == 0) {
            assert_int_equal(g.n, 12);
            states++;
        }
        pk_got_free(&g);
    }
    if (!lookups || !states || !failures) fail_msg("lookups %d states %d", lookups, states);
    fr_batch_free(kb);
    fr_table_release(t);
    fr_engine_close(e);

    /* Reopening a catalog with partitions at every failure point. */
    int opened = 0;
    for (long n = 1; n <= FAULT_POINTS_MAX && !opened; n++) {
        fr_engine_options o;
        fr_engine_options_default(&o);
        o.data_dir = dir;
        o.flush = FR_FLUSH_NONE;
        o.retention_check_interval_ms = 0;
        o.auto_partition_check_interval_ms = 0;
        fr_engine *e2 = NULL;
        fr_error err = {0};
        fr_alloc_fail_after(n);
        int rc = fr_engine_open(&o, &e2, &err);
        fr_alloc_fail_after(0);
        if (rc < 0) {
            assert_null(e2);
            continue;
        }
        opened++;
        t = kit_table(e2, "default", "t");
        assert_string_equal(pk_partitions(t), "dt=a dt=b dt=c");
        g = pk_state(t, NULL);
        assert_int_equal(g.n, 12);
        pk_got_free(&g);
        fr_table_release(t);
        fr_engine_close(e2);
    }
    assert_int_equal(opened, 1);
    kit_rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_faults),
        cmocka_unit_test(test_partition_faults),
        cmocka_unit_test(test_put_read_faults),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
