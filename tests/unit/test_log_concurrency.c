/* test_log_concurrency.c — appends from several threads (offsets dense and unique, fsyncs
 * shared by group commit), a reader following the log while it is written and rolled, and
 * the flush modes' fsync behaviour. */
#include "log_testkit.h"

#include <pthread.h>
#include <sched.h>
#include <time.h>

#define WRITERS 6
#define APPENDS 80
#define ROWS 3

/* Row ids say who wrote them: thread * 1000000 + seq * 10 + row. */
static int64_t row_id(int t, int seq, int k) { return (int64_t)t * 1000000 + seq * 10 + k; }

typedef struct writer_arg {
    fr_log *log;
    const fr_schema *schema;
    int t;
    int64_t bases[APPENDS];
    int duplicates;
    int failures;
} writer_arg;

static void *writer_main(void *p)
{
    writer_arg *w = p;
    for (int seq = 0; seq < APPENDS; seq++) {
        fr_buf buf;
        fr_buf_init(&buf);
        /* lt_encode makes ids first_id..; rows of one batch are seq*10 + 0..2. */
        lt_encode(w->schema, row_id(w->t, seq, 0), ROWS, 100 + w->t, seq, FR_COMPRESSION_NONE,
                  NULL, &buf);
        fr_error err;
        if (fr_log_append(w->log, buf.data, buf.len, &w->bases[seq], &err) != 0) w->failures++;
        if (seq % 20 == 7) {
            /* A retry of the same (writer, seq) is not written twice. */
            int64_t again = -1;
            if (fr_log_append(w->log, buf.data, buf.len, &again, &err) == FR_EDUPLICATE &&
                again == w->bases[seq])
                w->duplicates++;
            else
                w->failures++;
        }
        fr_buf_free(&buf);
    }
    return NULL;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : (x > y ? 1 : 0);
}

/* Checks that rows read back are whole batches of the writers, each (thread, seq) once, at
 * the offsets its append returned. */
static void check_written(const lt_rows *rows, writer_arg *w, int nwriters)
{
    assert_int_equal(rows->n, (int64_t)nwriters * APPENDS * ROWS);
    for (int64_t i = 0; i < rows->n; i++) assert_int_equal(rows->offsets[i], i);
    for (int64_t i = 0; i < rows->n; i += ROWS) {
        int64_t id = rows->ids[i];
        int t = (int)(id / 1000000), seq = (int)(id % 1000000 / 10);
        assert_true(t >= 0 && t < nwriters && seq >= 0 && seq < APPENDS);
        assert_int_equal(w[t].bases[seq], i);
        for (int k = 0; k < ROWS; k++) assert_int_equal(rows->ids[i + k], row_id(t, seq, k));
    }
}

static void test_concurrent_appenders(void **state)
{
    (void)state;
    char *dir = lt_tmpdir("log-conc");
    fr_schema *s = lt_schema();
    fr_log_options o;
    fr_log_options_default(&o); /* FR_FLUSH_EVERY_APPEND */
    o.segment_bytes = 64 * 1024;
    fr_log *log = lt_open(dir, &o);
    writer_arg w[WRITERS];
    pthread_t th[WRITERS];
    for (int t = 0; t < WRITERS; t++) {
        w[t] = (writer_arg){ .log = log, .schema = s, .t = t };
        assert_int_equal(pthread_create(&th[t], NULL, writer_main, &w[t]), 0);
    }
    for (int t = 0; t < WRITERS; t++) pthread_join(th[t], NULL);
    int64_t all[WRITERS * APPENDS];
    int n = 0;
    for (int t = 0; t < WRITERS; t++) {
        assert_int_equal(w[t].failures, 0);
        assert_int_equal(w[t].duplicates, APPENDS / 20);
        for (int seq = 0; seq < APPENDS; seq++) {
            all[n++] = w[t].bases[seq];
            if (seq > 0) assert_true(w[t].bases[seq] > w[t].bases[seq - 1]);
        }
    }
    qsort(all, (size_t)n, sizeof all[0], cmp_i64);
    for (int i = 0; i < n; i++) assert_int_equal(all[i], (int64_t)i * ROWS);
    int64_t appends = WRITERS * APPENDS;
    int64_t fsyncs = fr_log_fsync_count(log);
    printf("concurrent appenders: %lld appends, %lld fsyncs, %d segments\n", (long long)appends,
           (long long)fsyncs, fr_log_num_segments(log));
    assert_true(fsyncs > 0);
    assert_true(fsyncs < appends);
    /* Each of those fsyncs is timed into exactly one duration bucket. */
    fr_log_fsync_stats fs = { 0 };
    fr_log_fsync_stats_add(log, &fs);
    assert_int_equal(fs.count, fsyncs);
    int64_t in_buckets = 0;
    for (int b = 0; b < FR_LOG_FSYNC_BUCKETS; b++) in_buckets += fs.buckets[b];
    assert_int_equal(in_buckets, fsyncs);
    assert_true(fs.sum_us >= 0);
    fr_log_fsync_stats_add(log, &fs); /* it adds: a second log's figures go on top */
    assert_int_equal(fs.count, 2 * fsyncs);
    lt_rows rows = { 0 };
    fr_error err;
    assert_int_equal(lt_read(log, s, 0, NULL, 0, NULL, &rows, NULL, &err), 0);
    check_written(&rows, w, WRITERS);
    lt_rows_free(&rows);
    fr_log_close(log);
    /* After reopen: the same, and every writer's retry is still a duplicate. */
    log = lt_open(dir, &o);
    assert_int_equal(lt_read(log, s, 0, NULL, 0, NULL, &rows, NULL, &err), 0);
    check_written(&rows, w, WRITERS);
    lt_rows_free(&rows);
    for (int t = 0; t < WRITERS; t++) {
        int64_t base;
        assert_int_equal(lt_append_ex(log, s, row_id(t, APPENDS - 1, 0), ROWS, 100 + t,
                                      APPENDS - 1, &base, &err),
                         FR_EDUPLICATE);
        assert_int_equal(base, w[t].bases[APPENDS - 1]);
    }
    fr_log_close(log);
    fr_schema_free(s);
    lt_rmdir(dir);
}

/* A reader follows the log from offset 0 while writers append and segments roll: it sees
 * every record once, in offset order, whole batches only. */
typedef struct reader_arg {
    fr_log *log;
    const fr_schema *schema;
    int64_t total;
    lt_rows rows;
    int reads;
    int errors;
} reader_arg;

static void *reader_main(void *p)
{
    reader_arg *r = p;
    int64_t next = 0;
    int64_t deadline = fr_monotonic_ns() + (int64_t)120 * 1000000000;
    while (next < r->total && fr_monotonic_ns() < deadline) {
        fr_log_read rd = { .from_offset = next, .schema = r->schema, .max_records = -1,
                           .max_bytes = 16 * 1024 };
        fr_error err;
        int64_t n2;
        if (fr_log_read_batches(r->log, &rd, lt_collect, &r->rows, &n2, &err) != 0) {
            printf("reader: %s\n", err.msg);
            r->errors++;
            break;
        }
        if (r->rows.n != n2) {
            printf("reader: %lld rows but next offset %lld\n", (long long)r->rows.n,
                   (long long)n2);
            r->errors++;
            break;
        }
        if (n2 == next) sched_yield(); /* nothing new yet */
        next = n2;
        r->reads++;
    }
    return NULL;
}

static void test_reader_during_appends(void **state)
{
    (void)state;
    char *dir = lt_tmpdir("log-tail");
    fr_schema *s = lt_schema();
    for (int mode = 0; mode < 2; mode++) {
        fr_log_options o;
        fr_log_options_default(&o);
        o.flush = mode == 0 ? FR_FLUSH_EVERY_APPEND : FR_FLUSH_NONE;
        o.segment_bytes = 8192;
        o.index_interval_bytes = 1024;
        char sub[4200];
        snprintf(sub, sizeof sub, "%s/m%d", dir, mode);
        fr_log *log = lt_open(sub, &o);
        enum { NW = 3 };
        writer_arg w[NW];
        pthread_t th[NW], rth;
        reader_arg r = { .log = log, .schema = s, .total = (int64_t)NW * APPENDS * ROWS };
        assert_int_equal(pthread_create(&rth, NULL, reader_main, &r), 0);
        for (int t = 0; t < NW; t++) {
            w[t] = (writer_arg){ .log = log, .schema = s, .t = t };
            assert_int_equal(pthread_create(&th[t], NULL, writer_main, &w[t]), 0);
        }
        for (int t = 0; t < NW; t++) pthread_join(th[t], NULL);
        pthread_join(rth, NULL);
        printf("reader during appends (%s): %d reads, %d segments\n",
               mode == 0 ? "every append" : "none", r.reads, fr_log_num_segments(log));
        assert_int_equal(r.errors, 0);
        for (int t = 0; t < NW; t++) assert_int_equal(w[t].failures, 0);
        assert_true(fr_log_num_segments(log) > 3);
        check_written(&r.rows, w, NW);
        lt_rows_free(&r.rows);
        fr_log_close(log);
    }
    fr_schema_free(s);
    lt_rmdir(dir);
}

static void sleep_ms(int ms)
{
    struct timespec t = { 0, ms * 1000000L };
    nanosleep(&t, NULL);
}

static void test_flush_modes(void **state)
{
    (void)state;
    char *dir = lt_tmpdir("log-flush");
    fr_schema *s = lt_schema();
    fr_log_options o;
    fr_log_options_default(&o);
    /* NONE: no fsync at all while the segment does not roll. */
    o.flush = FR_FLUSH_NONE;
    char sub[4200];
    snprintf(sub, sizeof sub, "%s/none", dir);
    fr_log *log = lt_open(sub, &o);
    for (int i = 0; i < 20; i++) lt_append(log, s, i, 1);
    assert_int_equal(fr_log_fsync_count(log), 0);
    assert_int_equal(fr_log_end_offset(log), 20);
    fr_error err;
    assert_int_equal(fr_log_flush(log, &err), 0);
    assert_int_equal(fr_log_fsync_count(log), 1);
    assert_int_equal(fr_log_flush(log, &err), 0); /* nothing new: no fsync */
    assert_int_equal(fr_log_fsync_count(log), 1);
    fr_log_close(log);

    /* INTERVAL: visible at once, fsynced by the first append after the interval. */
    o.flush = FR_FLUSH_INTERVAL;
    o.flush_interval_ms = 20;
    snprintf(sub, sizeof sub, "%s/interval", dir);
    log = lt_open(sub, &o);
    for (int i = 0; i < 5; i++) lt_append(log, s, i, 1);
    assert_int_equal(fr_log_end_offset(log), 5);
    assert_int_equal(fr_log_fsync_count(log), 0);
    sleep_ms(30);
    lt_append(log, s, 5, 1);
    assert_int_equal(fr_log_fsync_count(log), 1);
    lt_append(log, s, 6, 1);
    assert_int_equal(fr_log_fsync_count(log), 1);
    lt_check_dense(log, s, 0);
    fr_log_close(log);

    /* EVERY_APPEND, one thread: one fsync per append. */
    o.flush = FR_FLUSH_EVERY_APPEND;
    snprintf(sub, sizeof sub, "%s/every", dir);
    log = lt_open(sub, &o);
    for (int i = 0; i < 5; i++) lt_append(log, s, i, 1);
    assert_int_equal(fr_log_fsync_count(log), 5);
    fr_log_close(log);
    fr_schema_free(s);
    lt_rmdir(dir);
}

/* fr_log_append_nowait writes without waiting: under EVERY_APPEND the batches are not
 * visible until a wait makes them durable, and one wait (one fsync) covers every batch
 * written before it; a ticket already covered costs nothing. */
static void test_append_nowait(void **state)
{
    (void)state;
    char *dir = lt_tmpdir("log-nowait");
    fr_schema *s = lt_schema();
    fr_log_options o;
    fr_log_options_default(&o);
    o.flush = FR_FLUSH_EVERY_APPEND;
    fr_log *log = lt_open(dir, &o);
    fr_log_ticket t[3];
    fr_error err;
    for (int i = 0; i < 3; i++) {
        fr_buf buf;
        fr_buf_init(&buf);
        lt_encode(s, i * 2, 2, FR_NO_WRITER, -1, FR_COMPRESSION_NONE, NULL, &buf);
        int64_t base = -1;
        assert_int_equal(fr_log_append_nowait(log, buf.data, buf.len, 0, &base, &t[i], &err), 0);
        assert_int_equal(base, i * 2);
        assert_int_equal(t[i].end, i * 2 + 2);
        fr_buf_free(&buf);
    }
    assert_int_equal(fr_log_end_offset(log), 0); /* nothing durable, nothing visible */
    assert_int_equal(fr_log_fsync_count(log), 0);
    assert_int_equal(fr_log_wait_durable(log, &t[1], &err), 0);
    assert_int_equal(fr_log_end_offset(log), 6); /* the fsync covered all three */
    assert_int_equal(fr_log_fsync_count(log), 1);
    assert_int_equal(fr_log_wait_durable(log, &t[2], &err), 0);
    assert_int_equal(fr_log_wait_durable(log, &t[0], &err), 0);
    assert_int_equal(fr_log_fsync_count(log), 1);
    lt_check_dense(log, s, 0);

    /* A truncation before the wait fails the wait of a batch it removed. */
    fr_buf buf;
    fr_buf_init(&buf);
    lt_encode(s, 6, 2, FR_NO_WRITER, -1, FR_COMPRESSION_NONE, NULL, &buf);
    int64_t base = -1;
    fr_log_ticket cut;
    assert_int_equal(fr_log_append_nowait(log, buf.data, buf.len, 0, &base, &cut, &err), 0);
    fr_buf_free(&buf);
    assert_int_equal(fr_log_truncate(log, 6, &err), 0);
    assert_int_equal(fr_log_wait_durable(log, &cut, &err), FR_ESTATE);
    assert_int_equal(fr_log_end_offset(log), 6);
    fr_log_close(log);
    fr_schema_free(s);
    lt_rmdir(dir);
}

int main(void)
{
    fr_log_set_level(FR_LOG_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_concurrent_appenders),
        cmocka_unit_test(test_reader_during_appends),
        cmocka_unit_test(test_flush_modes),
        cmocka_unit_test(test_append_nowait),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
