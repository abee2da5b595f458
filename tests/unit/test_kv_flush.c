/* test_kv_flush.c — durability of a bucket's KV state on demand: fr_kv_flush and the
 * persisted offset (before and after a crash), when a flush is due, the log retention that
 * keeps what recovery needs (also while writes go on), the clear error when a log starts
 * after the state on disk, and an environment shared by several stores (the memtable
 * budget, the shared block cache, its lifetime). */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "kv_testkit.h"

#define HOUR_MS (3600 * 1000LL)

/* id INT NOT NULL (the key), name STRING, score BIGINT */
static kt_bucket *simple_bucket(const char *name)
{
    fr_schema *s = kt_schema(3, (const char *[]){ "id INT NOT NULL", "name STRING",
                                                  "score BIGINT" });
    return kt_bucket_new(name, s, (const int[]){ 0 }, 1);
}

/* Opens the bucket's log with one batch per segment and a one-hour time retention, then
 * the store. */
static void open_small_segments(kt_bucket *b)
{
    fr_log_options o;
    fr_log_options_default(&o);
    o.flush = FR_FLUSH_NONE;
    o.segment_bytes = 1;
    o.retention_ms = HOUR_MS;
    fr_error err;
    if (fr_log_open(b->logdir, &o, &b->log, &err) < 0) fail_msg("log: %s", err.msg);
    kt_open(b);
}

static void sleep_ms(int ms)
{
    struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

/* ---- flushes and the persisted offset ------------------------------------------------------ */

static void test_flush_persisted(void **state)
{
    (void)state;
    kt_bucket *b = simple_bucket("kvf-flush");
    kt_open(b);
    assert_int_equal(fr_kv_persisted_offset(b->kv), 0);
    assert_false(fr_kv_flush_due(b->kv, 1, 1));
    KT_UPSERT(b, "1|a|1", "2|b|2");
    assert_int_equal(fr_kv_applied_offset(b->kv), 2);
    assert_int_equal(fr_kv_persisted_offset(b->kv), 0);
    assert_true(fr_kv_flush_due(b->kv, 2, 0));
    assert_false(fr_kv_flush_due(b->kv, 3, 0));
    assert_false(fr_kv_flush_due(b->kv, 0, 0));
    assert_false(fr_kv_flush_due(b->kv, 0, HOUR_MS));
    sleep_ms(30);
    assert_true(fr_kv_flush_due(b->kv, 0, 20));

    fr_error err;
    assert_int_equal(fr_kv_flush(b->kv, &err), 0);
    assert_int_equal(fr_kv_persisted_offset(b->kv), 2);
    assert_false(fr_kv_flush_due(b->kv, 1, 1));
    assert_int_equal(fr_kv_flush(b->kv, &err), 0); /* nothing new: a no-op */
    assert_int_equal(fr_kv_persisted_offset(b->kv), 2);

    /* the age counts from the first write after the flush */
    KT_UPSERT(b, "1|a2|3");
    assert_int_equal(fr_kv_applied_offset(b->kv), 4);
    assert_false(fr_kv_flush_due(b->kv, 0, HOUR_MS));
    assert_true(fr_kv_flush_due(b->kv, 2, HOUR_MS));

    /* a crash: what was flushed is on disk, the rest comes back from the log */
    kt_close(b, false);
    kt_open(b);
    assert_int_equal(fr_kv_persisted_offset(b->kv), 2);
    assert_int_equal(fr_kv_applied_offset(b->kv), 4);
    assert_true(fr_kv_flush_due(b->kv, 2, 0)); /* the replayed tail is unflushed */
    kt_expect_state(b, "1|a2|3", "2|b|2");
    kt_close(b, true);
    kt_open(b);
    assert_int_equal(fr_kv_persisted_offset(b->kv), 4);
    assert_false(fr_kv_flush_due(b->kv, 1, 1));
    kt_expect_state(b, "1|a2|3", "2|b|2");
    kt_bucket_free(b);
}

/* ---- retention -------------------------------------------------------------------------- */

/* Batch i upserts key i % 3 and (from the fourth on) deletes key (i + 1) % 3. */
static void write_batches(kt_bucket *b, int from, int n)
{
    for (int i = from; i < from + n; i++) {
        char up[32], del[32];
        snprintf(up, sizeof up, "%d|v%d|%d", i % 3, i, i);
        snprintf(del, sizeof del, "%d|NULL|NULL", (i + 1) % 3);
        kt_write(b, i >= 3 ? 2 : 1, KT_ROWS(up, del), "ud");
    }
}

static void test_log_retention(void **state)
{
    (void)state;
    kt_bucket *b = simple_bucket("kvf-retention");
    open_small_segments(b);
    write_batches(b, 0, 10);
    int nsegs = fr_log_num_segments(b->log);
    assert_true(nsegs >= 10);
    int64_t end = fr_log_end_offset(b->log);
    assert_true(fr_kv_persisted_offset(b->kv) < end);
    kt_lines want = kt_state(b);

    /* nothing is old yet: nothing goes */
    int removed = -1;
    fr_error err;
    assert_int_equal(fr_kv_enforce_log_retention(b->kv, fr_now_ms(), &removed, &err), 0);
    assert_int_equal(removed, 0);
    assert_int_equal(fr_log_start_offset(b->log), 0);

    /* two hours on, every segment but the active one goes, after the state is on disk */
    assert_int_equal(fr_kv_enforce_log_retention(b->kv, fr_now_ms() + 2 * HOUR_MS, &removed,
                                                 &err), 0);
    assert_int_equal(removed, nsegs - 1);
    assert_int_equal(fr_kv_persisted_offset(b->kv), end);
    int64_t start = fr_log_start_offset(b->log);
    assert_true(start > 0 && start <= end);
    kt_lines after = kt_state(b);
    kt_expect_lines("state after retention", &after, want.n, (const char *const *)want.v);

    /* more changes, then a crash: the replay starts at the persisted offset, in the log */
    write_batches(b, 10, 4);
    kt_lines more = kt_state(b);
    kt_close(b, false);
    kt_open(b);
    assert_int_equal(fr_log_start_offset(b->log), start);
    assert_int_equal(fr_kv_persisted_offset(b->kv), end);
    assert_int_equal(fr_kv_applied_offset(b->kv), fr_log_end_offset(b->log));
    kt_lines now = kt_state(b);
    kt_expect_lines("state after the crash", &now, more.n, (const char *const *)more.v);
    kt_lines_free(&more);
    kt_lines_free(&want);
    kt_bucket_free(b);
}

/* A log that lost segments past the state on disk (not through the store) cannot recover
 * the state: the open says so instead of serving a state with a hole. */
static void test_log_starting_after_state(void **state)
{
    (void)state;
    kt_bucket *b = simple_bucket("kvf-hole");
    open_small_segments(b);
    write_batches(b, 0, 2);
    fr_error err;
    assert_int_equal(fr_kv_flush(b->kv, &err), 0);
    int64_t persisted = fr_kv_persisted_offset(b->kv);
    write_batches(b, 2, 5);
    int removed = 0;
    assert_int_equal(fr_log_enforce_retention(b->log, fr_now_ms() + 2 * HOUR_MS, &removed,
                                              &err), 0);
    assert_true(fr_log_start_offset(b->log) > persisted);
    kt_close(b, false);
    assert_int_equal(kt_try_open(b, &err), FR_ECORRUPT);
    if (!strstr(err.msg, "but the log starts at") || !strstr(err.msg, "cannot be recovered"))
        fail_msg("unexpected message: %s", err.msg);
    kt_bucket_free(b);
}

/* Retention passes while a writer keeps upserting: no write is lost or half-applied, and a
 * crash at the end recovers the state from what the log still holds. */
typedef struct writer_ctx {
    kt_bucket *b;
    _Atomic int stop;
    int batches;
    int failed;
} writer_ctx;

static void *writer_main(void *arg)
{
    writer_ctx *w = arg;
    while (!atomic_load(&w->stop) && w->batches < 5000) {
        char row[48];
        snprintf(row, sizeof row, "%d|w%d|%d", w->batches % 7, w->batches, w->batches);
        fr_error err;
        if (kt_write_ex(w->b, 1, KT_ROWS(row), NULL, NULL, 0, FR_NO_WRITER, -1, NULL,
                        &err) < 0) {
            w->failed = 1;
            break;
        }
        w->batches++;
    }
    return NULL;
}

static void test_retention_during_writes(void **state)
{
    (void)state;
    kt_bucket *b = simple_bucket("kvf-conc");
    open_small_segments(b);
    writer_ctx w = { .b = b };
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, writer_main, &w), 0);
    int passes = 0, removed_total = 0;
    while (passes < 20) {
        int removed = 0;
        fr_error err;
        if (fr_kv_enforce_log_retention(b->kv, fr_now_ms() + 2 * HOUR_MS, &removed, &err) < 0)
            fail_msg("retention: %s", err.msg);
        assert_true(fr_log_start_offset(b->log) <= fr_kv_persisted_offset(b->kv));
        removed_total += removed;
        passes++;
        sleep_ms(5);
    }
    atomic_store(&w.stop, 1);
    pthread_join(th, NULL);
    assert_false(w.failed);
    assert_true(w.batches > 0);
    assert_true(removed_total > 0);
    kt_lines want = kt_state(b);
    assert_int_equal(want.n, w.batches < 7 ? w.batches : 7);
    kt_close(b, false);
    kt_open(b);
    kt_lines got = kt_state(b);
    kt_expect_lines("state after the crash", &got, want.n, (const char *const *)want.v);
    kt_lines_free(&want);
    kt_bucket_free(b);
}

/* ---- a shared environment ------------------------------------------------------------------ */

static void test_shared_env(void **state)
{
    (void)state;
    fr_kv_env_options o = { .block_cache_bytes = 1 << 20, .write_buffer_bytes = 1 << 20 };
    fr_kv_env *env = NULL;
    fr_error err;
    assert_int_equal(fr_kv_env_new(&o, &env, &err), 0);
    kt_bucket *bs[3] = { simple_bucket("kvf-env1"), simple_bucket("kvf-env2"),
                         simple_bucket("kvf-env3") };
    for (int i = 0; i < 3; i++) {
        bs[i]->spec.env = env;
        kt_open(bs[i]);
    }
    fr_kv_env_release(env); /* the stores keep it */
    char name[300];
    memset(name, 'n', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    int64_t peak = 0;
    for (int batch = 0; batch < 60; batch++) {
        for (int i = 0; i < 3; i++) {
            char rows[50][340];
            const char *ptrs[50];
            for (int r = 0; r < 50; r++) {
                snprintf(rows[r], sizeof rows[r], "%d|%d%s|%d", batch * 50 + r, i, name, r);
                ptrs[r] = rows[r];
            }
            kt_write(bs[i], 50, ptrs, NULL);
            int64_t used = fr_kv_env_memtable_bytes(env);
            if (used > peak) peak = used;
        }
    }
    /* 3 x 3000 rows of ~320 bytes (about 2.9 MB) went through a 1 MiB budget; each
     * memtable alone may hold 512 KiB */
    print_message("shared env: memtable peak %lld bytes for a 1 MiB budget\n", (long long)peak);
    assert_true(peak > 0);
    assert_true(peak <= 1 << 20);
    /* a crash of all; they come back whole with an environment of their own each */
    for (int i = 0; i < 3; i++) {
        kt_close(bs[i], false);
        bs[i]->spec.env = NULL;
        kt_open(bs[i]);
        kt_lines l = kt_state(bs[i]);
        assert_int_equal(l.n, 3000);
        kt_lines_free(&l);
        kt_bucket_free(bs[i]);
    }
}

static void test_shared_cache(void **state)
{
    (void)state;
    fr_kv_env *env = NULL;
    fr_error err;
    assert_int_equal(fr_kv_env_new(NULL, &env, &err), 0);
    kt_bucket *bs[3];
    for (int i = 0; i < 3; i++) {
        bs[i] = simple_bucket("kvf-cache");
        bs[i]->spec.env = env;
        kt_open(bs[i]);
        KT_UPSERT(bs[i], "1|a|1", "2|b|2", "3|c|3");
        assert_int_equal(fr_kv_flush(bs[i]->kv, &err), 0);
    }
    int64_t before = fr_kv_env_block_cache_bytes(env);
    for (int i = 0; i < 3; i++) kt_expect_state(bs[i], "1|a|1", "2|b|2", "3|c|3");
    assert_true(fr_kv_env_block_cache_bytes(env) > before); /* the blocks read are cached */
    for (int i = 0; i < 3; i++) kt_bucket_free(bs[i]);
    fr_kv_env_release(env);

    /* bad sizes */
    fr_kv_env_options o = { .block_cache_bytes = -1, .write_buffer_bytes = 1 << 20 };
    assert_int_equal(fr_kv_env_new(&o, &env, &err), FR_EINVAL);
    o = (fr_kv_env_options){ .block_cache_bytes = 0, .write_buffer_bytes = 1000 };
    assert_int_equal(fr_kv_env_new(&o, &env, &err), FR_EINVAL);
    assert_non_null(strstr(err.msg, "1 MiB"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flush_persisted),
        cmocka_unit_test(test_log_retention),
        cmocka_unit_test(test_log_starting_after_state),
        cmocka_unit_test(test_retention_during_writes),
        cmocka_unit_test(test_shared_env),
        cmocka_unit_test(test_shared_cache),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
