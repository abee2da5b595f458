/* lake_tier_kill9.c — tiering survives kill -9 of the real `firth server`.
 *
 * A lake-enabled table (two buckets, 'table.datalake.freshness' = '200ms', one tiering
 * thread) is written by INSERTs over the native protocol while the server is killed with
 * SIGKILL at random moments, rounds being in progress or not, and restarted on the same data
 * dir. At the end the server runs until /metrics says the lake has caught up, and is stopped.
 * Then the data dir is opened embedded and the lake's current snapshot is read through the
 * lake API: it must hold exactly the records of the table's logs, each once (the same
 * (bucket, offset) pairs, ids and values), every acknowledged row, and no row that was never
 * written. Files left by killed rounds must be gone from the lake's data directory.
 * Environment: FIRTH, FIRTH_TEST_TMP, FIRTH_TEST_SEED, FIRTH_LAKE_KILLS (default 6). */
#include "integ_kit.h"

#include <dirent.h>

#include "engine/engine.h"

#define LK_ROWS_PER_INSERT 50
#define LK_ID_MAX (1 << 22)

typedef struct lk_state {
    uint8_t *status; /* per id: 0 never sent, 1 acknowledged, 2 sent but not acknowledged */
    int64_t next_id;
    int64_t acked, uncertain;
} lk_state;

/* INSERTs until the deadline or the first failure (the server went away). */
static void lk_write(const ik_server *s, lk_state *st, int64_t until_ms)
{
    firth_client *c = NULL;
    firth_error err = {0};
    if (firth_open(s->target, &c, &err) != 0) return;
    char *sql = malloc(64 * LK_ROWS_PER_INSERT + 64);
    while (ik_now_ms() < until_ms && st->next_id + LK_ROWS_PER_INSERT < LK_ID_MAX) {
        int64_t first = st->next_id;
        size_t n = (size_t)sprintf(sql, "INSERT INTO t VALUES ");
        for (int i = 0; i < LK_ROWS_PER_INSERT; i++)
            n += (size_t)sprintf(sql + n, "%s(%" PRId64 ", 'row %" PRId64 "')", i ? ", " : "",
                                 first + i, first + i);
        st->next_id += LK_ROWS_PER_INSERT;
        int rc = firth_execute(c, sql, NULL, &err);
        for (int i = 0; i < LK_ROWS_PER_INSERT; i++) st->status[first + i] = rc == 0 ? 1 : 2;
        if (rc != 0) {
            st->uncertain += LK_ROWS_PER_INSERT;
            break;
        }
        st->acked += LK_ROWS_PER_INSERT;
    }
    free(sql);
    firth_close(c);
}

/* ---- reading the lake and the logs embedded --------------------------------------------- */

typedef struct lk_row {
    int32_t bucket;
    int64_t offset, id;
} lk_row;

typedef struct lk_rows {
    lk_row *r;
    int64_t n, cap;
} lk_rows;

static void lk_add(lk_rows *rows, int32_t bucket, int64_t offset, int64_t id)
{
    if (rows->n == rows->cap) {
        rows->cap = rows->cap * 2 + 1024;
        rows->r = realloc(rows->r, (size_t)rows->cap * sizeof *rows->r);
    }
    rows->r[rows->n++] = (lk_row){bucket, offset, id};
}

static int lk_cmp(const void *a, const void *b)
{
    const lk_row *x = a, *y = b;
    if (x->bucket != y->bucket) return x->bucket < y->bucket ? -1 : 1;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static int lk_collect_log(void *ctx, int bucket, fr_batch *batch, const int64_t *offsets,
                          const uint8_t *types, int64_t ts, fr_error *err)
{
    (void)types, (void)ts, (void)err;
    lk_rows *rows = ctx;
    for (int64_t i = 0; i < fr_batch_num_rows(batch); i++) {
        fr_value v;
        fr_column_get(fr_batch_column(batch, 0), i, &v);
        lk_add(rows, bucket, offsets[i], v.v.i);
    }
    fr_batch_free(batch);
    return 0;
}

static int64_t lk_i64(const fr_batch *b, int col, int64_t row)
{
    fr_value v;
    fr_column_get(fr_batch_column(b, col), row, &v);
    return v.v.i;
}

static void lk_read_lake(fr_table *t, lk_rows *lake)
{
    fr_iceberg_table *ice = NULL;
    fr_error err = {0};
    IK_OK(fr_table_lake_open(t, &ice, &err), err);
    int cols[3] = {0, 2, 3}; /* id, __bucket, __offset */
    fr_iceberg_scan *scan = NULL;
    IK_OK(fr_iceberg_scan_open(ice, -1, cols, 3, NULL, &scan, &err), err);
    for (;;) {
        fr_batch *b = NULL;
        IK_OK(fr_iceberg_scan_next(scan, &b, &err), err);
        if (!b) break;
        for (int64_t i = 0; i < fr_batch_num_rows(b); i++)
            lk_add(lake, (int32_t)lk_i64(b, 1, i), lk_i64(b, 2, i), lk_i64(b, 0, i));
        fr_batch_free(b);
    }
    fr_iceberg_scan_close(scan);
    fr_iceberg_close(ice);
}

/* Checks the lake against the logs and what the writers know. */
static void lk_verify(const char *data_dir, const lk_state *st, int files)
{
    fr_engine_options o;
    fr_engine_options_default(&o);
    o.data_dir = data_dir;
    o.lake_tiering_threads = 0;
    fr_engine *e = NULL;
    fr_table *t = NULL;
    fr_error err = {0};
    IK_OK(fr_engine_open(&o, &e, &err), err);
    IK_OK(fr_engine_get_table(e, "default", "t", &t, &err), err);
    lk_rows lake = {0}, log = {0};
    lk_read_lake(t, &lake);
    fr_scan_spec spec = {.start = FR_START_EARLIEST, .max_records = -1, .bucket = -1};
    IK_OK(fr_table_scan(t, &spec, lk_collect_log, &log, &err), err);
    qsort(lake.r, (size_t)lake.n, sizeof *lake.r, lk_cmp);
    qsort(log.r, (size_t)log.n, sizeof *log.r, lk_cmp);
    ik_log("the lake holds %" PRId64 " rows, the logs %" PRId64 "; %" PRId64 " rows acknowledged, "
           "%" PRId64 " uncertain", lake.n, log.n, st->acked, st->uncertain);
    if (lake.n != log.n) ik_fail("the lake holds %" PRId64 " rows, the logs %" PRId64, lake.n, log.n);
    for (int64_t i = 0; i < lake.n && i < log.n; i++) {
        const lk_row *a = &lake.r[i], *b = &log.r[i];
        if (a->bucket != b->bucket || a->offset != b->offset || a->id != b->id) {
            ik_fail("row %" PRId64 ": the lake has bucket %d offset %" PRId64 " id %" PRId64
                    ", the log bucket %d offset %" PRId64 " id %" PRId64, i, a->bucket,
                    a->offset, a->id, b->bucket, b->offset, b->id);
            break;
        }
    }
    uint8_t *seen = calloc(LK_ID_MAX, 1);
    for (int64_t i = 0; i < lake.n; i++) {
        int64_t id = lake.r[i].id;
        if (id < 0 || id >= LK_ID_MAX || st->status[id] == 0) {
            ik_fail("the lake holds id %" PRId64 ", which was never written", id);
            continue;
        }
        if (seen[id]++) ik_fail("the lake holds id %" PRId64 " twice", id);
    }
    for (int64_t id = 0; id < st->next_id; id++)
        if (st->status[id] == 1 && !seen[id]) {
            ik_fail("acknowledged id %" PRId64 " is not in the lake", id);
            break;
        }
    fr_lake_status ls;
    IK_OK(fr_table_lake_status(t, &ls, &err), err);
    if (ls.lag_records != 0) ik_fail("the lake lags %" PRId64 " records", ls.lag_records);
    /* Rounds killed before their commit left files; the first round after each restart
     * removed them, so the data directory holds the current snapshot's files alone. */
    fr_lake_snapshot *snaps = NULL;
    int nsnaps = 0;
    IK_OK(fr_table_lake_snapshots(t, &snaps, &nsnaps, &err), err);
    if (nsnaps == 0) ik_fail("the lake has no snapshot");
    else if (files != snaps[nsnaps - 1].total_data_files)
        ik_fail("the lake's data directory holds %d files, its snapshot %" PRId64, files,
                snaps[nsnaps - 1].total_data_files);
    ik_log("%d snapshots, %d data files", nsnaps, files);
    fr_lake_snapshots_free(snaps, nsnaps);
    free(seen);
    free(lake.r);
    free(log.r);
    fr_table_release(t);
    fr_engine_close(e);
}

/* Files under dir, recursively. */
static int lk_count_files(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.') continue;
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        struct stat sb;
        if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) n += lk_count_files(path);
        else n++;
    }
    closedir(d);
    return n;
}

typedef struct lk_writer {
    const ik_server *s;
    lk_state *st;
    int64_t until_ms;
} lk_writer;

static void *lk_writer_main(void *arg)
{
    lk_writer *w = arg;
    lk_write(w->s, w->st, w->until_ms);
    return NULL;
}

int main(void)
{
    uint64_t rng = ik_seed("lake_tier_kill9");
    ik_scratch("lake_tier_kill9");
    int kills = getenv("FIRTH_LAKE_KILLS") ? (int)strtol(getenv("FIRTH_LAKE_KILLS"), NULL, 10) : 6;
    ik_server s;
    ik_server_init(&s, "lake");
    const char *extra[] = {"--lake.tiering.threads", "1", "--log.level", "info", NULL};
    ik_server_start_ok(&s, "127.0.0.1:0", extra);
    char listen[128];
    snprintf(listen, sizeof listen, "%s", s.native);
    firth_client *c = NULL;
    firth_error ferr = {0};
    if (firth_open(s.target, &c, &ferr) != 0) IK_FATAL("connect: %s", ferr.msg);
    ik_sql(c, "CREATE TABLE t (id BIGINT NOT NULL, v STRING) WITH ("
              "'table.datalake.enabled' = 'true', 'table.datalake.freshness' = '200ms', "
              "'bucket.num' = '2', 'bucket.key' = 'id')");
    firth_close(c);
    lk_state st = {.status = calloc(LK_ID_MAX, 1)};
    for (int k = 0; k < kills; k++) {
        /* Killed while the writer writes (half the time) or after it stopped, while the
         * rounds of the tail run. */
        int64_t run_ms = ik_rand_between(&rng, 300, 1500);
        bool mid_write = ik_rand(&rng) % 2 == 0;
        lk_writer w = {&s, &st, ik_now_ms() + (mid_write ? 60000 : run_ms)};
        pthread_t tid;
        if (pthread_create(&tid, NULL, lk_writer_main, &w) != 0) IK_FATAL("pthread_create");
        ik_sleep_ms(run_ms + (mid_write ? 0 : ik_rand_between(&rng, 0, 400)));
        ik_server_kill9(&s);
        pthread_join(tid, NULL);
        ik_log("kill %d after %" PRId64 " ms; %" PRId64 " rows acknowledged so far", k + 1,
               run_ms, st.acked);
        ik_server_start_ok(&s, listen, extra);
    }
    lk_write(&s, &st, ik_now_ms() + 500);
    char metric[256];
    snprintf(metric, sizeof metric,
             "firth_lake_tiering_lag_records{database=\"default\",table=\"t\"}");
    double lag = -1;
    for (int i = 0; i < 600 && lag != 0; i++) {
        ik_sleep_ms(100);
        lag = ik_server_metric(&s, metric);
    }
    if (lag != 0) ik_fail("/metrics still says %s %g after 60 s", metric, lag);
    ik_server_stop(&s);
    char data[1400];
    snprintf(data, sizeof data, "%s/lake/default/t/data", s.data_dir);
    lk_verify(s.data_dir, &st, lk_count_files(data));
    free(st.status);
    return ik_finish("lake_tier_kill9");
}
