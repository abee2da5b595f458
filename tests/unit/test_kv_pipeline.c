/* test_kv_pipeline.c — writes to one KV store from several threads with a log that fsyncs
 * every append, so that writes overlap: one computes and appends while others wait for
 * their fsync. With the aggregation engine summing a column, a write that did not see the
 * rows of the writes in flight before it would lose their increments; a write acknowledged
 * before its rows are applied would not be seen by its own thread's next lookup. After a
 * crash (memtable lost) the log's changelog rebuilds the same state. Once the writers are
 * done, the store holds no write in flight (a white-box look at kv_int.h). */
#include <pthread.h>
#include <stdatomic.h>

#include "kv/kv_int.h"
#include "kv_testkit.h"

#define PL_THREADS 4
#define PL_WRITES 150
#define PL_SHARED 8

typedef struct pl_thread {
    kt_bucket *b;
    int index;
    int failures; /* lookups that missed the thread's own last write */
    fr_error err;
    int rc;
} pl_thread;

/* The sum column of key id as a lookup sees it, or -1 when the key is not found. */
static int64_t pl_lookup(kt_bucket *b, int id)
{
    fr_schema *ks = kt_schema(1, (const char *[]){ "id INT NOT NULL" });
    char text[16];
    snprintf(text, sizeof text, "%d", id);
    fr_batch *keys = kt_batch(ks, 1, (const char *const[]){ text });
    bool found = false;
    fr_batch *out = NULL;
    fr_error err;
    if (fr_kv_lookup(b->kv, keys, &found, &out, &err) < 0) fail_msg("lookup: %s", err.msg);
    int64_t n = -1;
    if (found) {
        fr_value v;
        fr_column_get(fr_batch_column(out, 2), 0, &v);
        n = v.v.i;
    }
    fr_batch_free(out);
    fr_batch_free(keys);
    fr_schema_free(ks);
    return n;
}

static void *pl_main(void *arg)
{
    pl_thread *t = arg;
    for (int i = 0; i < PL_WRITES && t->rc == 0; i++) {
        char shared[48], own[48];
        snprintf(shared, sizeof shared, "%d|s|1", (t->index * 5 + i) % PL_SHARED);
        snprintf(own, sizeof own, "%d|o|1", 100 + t->index);
        t->rc = kt_write_ex(t->b, 2, (const char *const[]){ shared, own }, NULL, NULL, 0,
                            FR_NO_WRITER, -1, NULL, &t->err);
        /* Acknowledged means applied: the thread's own key counts this write. */
        if (t->rc == 0 && pl_lookup(t->b, 100 + t->index) != i + 1) t->failures++;
    }
    return NULL;
}

static kt_bucket *pl_bucket(void)
{
    fr_schema *s = kt_schema(3, (const char *[]){ "id INT NOT NULL", "tag STRING", "n BIGINT" });
    kt_bucket *b = kt_bucket_new("kv-pipeline", s, (const int[]){ 0 }, 1);
    b->spec.merge = FR_MERGE_AGGREGATION;
    b->spec.delete_behavior = fr_delete_behavior_default(FR_MERGE_AGGREGATION);
    b->aggs[2] = FR_AGG_SUM;
    return b;
}

/* Opens the bucket with a log that fsyncs every append (kt_open's log never does). */
static void pl_open(kt_bucket *b)
{
    fr_log_options o;
    fr_log_options_default(&o);
    o.flush = FR_FLUSH_EVERY_APPEND;
    o.name = "db.t bucket 0";
    fr_error err;
    if (fr_log_open(b->logdir, &o, &b->log, &err) < 0) fail_msg("log: %s", err.msg);
    kt_open(b);
}

static void pl_expect_totals(kt_bucket *b)
{
    int64_t shared = 0;
    for (int k = 0; k < PL_SHARED; k++) {
        int64_t n = pl_lookup(b, k);
        assert_true(n > 0);
        shared += n;
    }
    assert_int_equal(shared, PL_THREADS * PL_WRITES);
    for (int t = 0; t < PL_THREADS; t++) assert_int_equal(pl_lookup(b, 100 + t), PL_WRITES);
    assert_int_equal(fr_kv_num_keys(b->kv), PL_SHARED + PL_THREADS);
    /* Two changelog records per changed key after the first write of each: +I, then -U/+U. */
    int64_t records = 2 * (2 * PL_THREADS * PL_WRITES) - (PL_SHARED + PL_THREADS);
    assert_int_equal(fr_kv_applied_offset(b->kv), records);
    assert_int_equal(fr_log_end_offset(b->log), records);
}

static void test_concurrent_writers(void **state)
{
    (void)state;
    kt_bucket *b = pl_bucket();
    pl_open(b);
    pl_thread th[PL_THREADS];
    pthread_t tid[PL_THREADS];
    for (int t = 0; t < PL_THREADS; t++) {
        th[t] = (pl_thread){ .b = b, .index = t };
        assert_int_equal(pthread_create(&tid[t], NULL, pl_main, &th[t]), 0);
    }
    for (int t = 0; t < PL_THREADS; t++) pthread_join(tid[t], NULL);
    for (int t = 0; t < PL_THREADS; t++) {
        if (th[t].rc != 0) fail_msg("thread %d: %s", t, th[t].err.msg);
        assert_int_equal(th[t].failures, 0);
    }
    print_message("  %d writes, %lld fsyncs\n", PL_THREADS * PL_WRITES,
                  (long long)fr_log_fsync_count(b->log));
    /* The last write to finish freed the done ones: an idle store keeps no rows. */
    assert_null(b->kv->inflight);
    assert_true(b->kv->nspares <= KV_INFLIGHT_SPARES);
    pl_expect_totals(b);
    /* A crash loses the memtable; the changelog brings the same state back. */
    kt_close(b, false);
    pl_open(b);
    pl_expect_totals(b);
    kt_bucket_free(b);
}

/* A write that changes nothing and a retry of a sequence already appended return only
 * once the writes before them are applied, and change nothing. */
static void test_writes_without_append(void **state)
{
    (void)state;
    kt_bucket *b = pl_bucket();
    b->aggs[2] = FR_AGG_MAX;
    pl_open(b);
    fr_kv_write_result r;
    fr_error err;
    assert_int_equal(kt_write_ex(b, 1, KT_ROWS("1|a|5"), NULL, NULL, 0, 7, 0, &r, &err), 0);
    assert_int_equal(r.changelog_records, 1);
    assert_int_equal(kt_write_ex(b, 1, KT_ROWS("1|a|3"), NULL, NULL, 0, 7, 1, &r, &err), 0);
    assert_int_equal(r.changelog_records, 0); /* max(5, 3) is 5: nothing changes */
    assert_int_equal(kt_write_ex(b, 1, KT_ROWS("1|a|9"), NULL, NULL, 0, 7, 0, &r, &err),
                     FR_EDUPLICATE);
    assert_int_equal(pl_lookup(b, 1), 5);
    assert_int_equal(fr_kv_applied_offset(b->kv), 1);
    kt_bucket_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_concurrent_writers),
        cmocka_unit_test(test_writes_without_append),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
