/* test_engine_kvmem.c — the memory of a primary-key table's KV stores: one table of 64
 * buckets written past the engine's memtable budget (kv.write-buffer.bytes) keeps its
 * active memtables within the budget, and the state is whole afterwards. Prints the
 * process's resident memory (VmRSS) on the way; not a timed test.
 *
 * The rows take about 1.5 times the budget in memtables: every store's flush for the
 * budget is small (about 1/73 of it with 64 stores written evenly) and costs fsyncs, so
 * the test writes just enough to pass the budget and stay quick. */
#include "engine_pk_testkit.h"

#include "engine/engine_int.h"

#define BUCKETS 64
#define ROWS 120000
#define BATCH 1000
#define BUDGET (16LL << 20)
#define CACHE (8LL << 20)

/* VmRSS of this process in KiB, or -1. */
static long rss_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "VmRSS:", 6) == 0) kib = strtol(line + 6, NULL, 10);
    if (f) fclose(f);
    return kib;
}

static void put_rows(fr_table *t, int from, int n)
{
    fr_builder *bld = NULL;
    fr_error err = {0};
    KIT_CHECK(fr_builder_new(fr_table_schema(t), &bld, &err), err);
    char name[128];
    for (int i = from; i < from + n; i++) {
        KIT_CHECK(fr_builder_append_bytes(bld, 0, "2026-11-30", 10, &err), err);
        KIT_CHECK(fr_builder_append_i64(bld, 1, i, &err), err);
        int len = snprintf(name, sizeof name, "%d-%090d", i, 0);
        KIT_CHECK(fr_builder_append_bytes(bld, 2, name, (size_t)len, &err), err);
        KIT_CHECK(fr_builder_append_f64(bld, 3, i * 0.5, &err), err);
    }
    fr_batch *b = NULL;
    KIT_CHECK(fr_builder_finish(bld, &b, &err), err);
    fr_builder_free(bld);
    KIT_CHECK(fr_table_put(t, b, NULL, NULL, 0, FR_NO_WRITER, -1, NULL, &err), err);
    fr_batch_free(b);
}

static int count_rows(void *ctx, fr_batch *b, fr_error *err)
{
    (void)err;
    *(int64_t *)ctx += fr_batch_num_rows(b);
    fr_batch_free(b);
    return 0;
}

static void test_memtable_budget(void **state)
{
    (void)state;
    char *dir = kit_tmpdir("kvmem");
    fr_engine_options o;
    fr_engine_options_default(&o);
    o.data_dir = dir;
    o.flush = FR_FLUSH_NONE;
    o.retention_check_interval_ms = 0;
    o.kv_write_buffer_bytes = BUDGET;
    o.kv_block_cache_bytes = CACHE;
    fr_engine *e = NULL;
    fr_error err = {0};
    KIT_CHECK(fr_engine_open(&o, &e, &err), err);
    fr_option opts[] = {{"bucket.num", "64"}};
    PK_CREATE_OK(e, "t", (const char *const[]){"dt", "id"}, 2, NULL, 0, opts, 1);
    fr_table *t = kit_table(e, "default", "t");
    long before = rss_kib();
    int64_t peak = 0;
    for (int done = 0; done < ROWS; done += BATCH) {
        put_rows(t, done, BATCH);
        int64_t used = fr_kv_env_memtable_bytes(e->kv_env);
        if (used > peak) peak = used;
    }
    long after = rss_kib();
    int64_t n = 0;
    KIT_CHECK(fr_table_scan_state(t, NULL, 0, NULL, count_rows, &n, &err), err);
    long scanned = rss_kib();
    print_message("kvmem: %d buckets, %d rows of ~130 bytes, budget %lld MiB, cache %lld MiB: "
                  "memtables peak %.1f MiB; VmRSS %ld KiB before, %ld after the writes "
                  "(+%ld), %ld after a full scan\n",
                  BUCKETS, ROWS, BUDGET >> 20, CACHE >> 20, peak / 1048576.0, before, after,
                  after - before, scanned);
    assert_int_equal(n, ROWS);
    /* Active memtables stay within the budget (checked after each write of a store);
     * without it they would hold all ~24 MB. */
    assert_true(peak > BUDGET / 2);
    assert_true(peak <= BUDGET);
    fr_table_release(t);
    fr_engine_close(e);

    /* The state is whole after a reopen. */
    KIT_CHECK(fr_engine_open(&o, &e, &err), err);
    t = kit_table(e, "default", "t");
    n = 0;
    KIT_CHECK(fr_table_scan_state(t, NULL, 0, NULL, count_rows, &n, &err), err);
    assert_int_equal(n, ROWS);
    fr_table_release(t);
    fr_engine_close(e);
    kit_rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_memtable_budget),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
