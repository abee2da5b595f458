/* engine_flush.c — the engine-wide flushes: one fr_log_flush of every log that is open, and
 * one fr_kv_flush of every KV store that is open (all of them, or those whose flush is due),
 * the table's own buckets and those of its partitions. Logs and stores that were never
 * opened hold nothing unflushed from this process, so they are not opened here.
 *
 * Under FR_FLUSH_INTERVAL the log flushes lazily, on the first append after the interval;
 * the log pass, run by the background thread every interval, bounds how long an idle log's
 * last appends stay unflushed. The KV pass, run by the same thread, bounds the changelog a
 * reopened bucket replays (by age and by record count, fr_engine_options.kv_flush_*). */
#include "engine/engine_int.h"

/* The log of bucket b if it is open (mu guards the array's lazy opening). Once open, a log
 * stays open while its table or partition is held. */
static fr_log *open_log(pthread_mutex_t *mu, fr_log **logs, int b)
{
    pthread_mutex_lock(mu);
    fr_log *log = logs ? logs[b] : NULL;
    pthread_mutex_unlock(mu);
    return log;
}

/* Flushes the open logs of one bucket set; keeps going past a failure (the first error is
 * returned). */
static int flush_logs(pthread_mutex_t *mu, fr_log **logs, int nbuckets, fr_error *err)
{
    int rc = FR_OK;
    for (int b = 0; b < nbuckets; b++) {
        fr_log *log = open_log(mu, logs, b);
        fr_error e2 = {0};
        if (!log || fr_log_flush(log, &e2) == FR_OK) continue;
        if (rc == FR_OK) {
            rc = e2.code ? e2.code : FR_EIO;
            if (err) *err = e2;
        }
    }
    return rc;
}

static int flush_part(void *ctx, fr_tpart *p, fr_error *err)
{
    (void)ctx;
    return flush_logs(&p->mu, p->logs, p->nbuckets, err);
}

static int flush_table(fr_table *t, fr_error *err)
{
    if (t->conf.npart == 0) return flush_logs(&t->mu, t->logs, t->conf.nbuckets, err);
    return fr_table_each_part(t, flush_part, NULL, err);
}

/* Runs fn over every table of a snapshot; keeps going past a failure (the first error is
 * returned). */
static int each_table(fr_engine *e, int (*fn)(fr_engine *e, fr_table *t, fr_error *err),
                      fr_error *err)
{
    fr_table **snap = NULL;
    int n = 0;
    FR_TRY(fr_engine_tables_snapshot(e, &snap, &n, err));
    int rc = FR_OK;
    for (int i = 0; i < n; i++) {
        fr_error e2 = {0};
        int r = fn(e, snap[i], &e2);
        if (r < 0 && rc == FR_OK) {
            rc = r;
            if (err) *err = e2;
        }
        fr_table_release(snap[i]);
    }
    fr_free(snap);
    return rc;
}

static int flush_table_logs(fr_engine *e, fr_table *t, fr_error *err)
{
    (void)e;
    return flush_table(t, err);
}

int fr_engine_flush(fr_engine *e, fr_error *err)
{
    return each_table(e, flush_table_logs, err);
}

/* ---- KV stores ---------------------------------------------------------------------------- */

/* Flushes the open stores of one bucket set that are due (all of them with `all`). */
static int flush_kvs(const fr_engine_options *o, bool all, pthread_mutex_t *mu, fr_kv **kvs,
                     int nbuckets, fr_error *err)
{
    int rc = FR_OK;
    for (int b = 0; kvs && b < nbuckets; b++) {
        pthread_mutex_lock(mu);
        fr_kv *kv = kvs[b]; /* once open, a store stays open while its table is held */
        pthread_mutex_unlock(mu);
        if (!kv) continue;
        if (!all && !fr_kv_flush_due(kv, o->kv_flush_records, o->kv_flush_interval_ms))
            continue;
        fr_error e2 = {0};
        if (fr_kv_flush(kv, &e2) == FR_OK) continue;
        if (rc == FR_OK) {
            rc = e2.code ? e2.code : FR_EIO;
            if (err) *err = e2;
        }
    }
    return rc;
}

typedef struct kv_flush_ctx {
    const fr_engine_options *o;
    bool all;
} kv_flush_ctx;

static int flush_part_kvs(void *ctx, fr_tpart *p, fr_error *err)
{
    const kv_flush_ctx *k = ctx;
    return flush_kvs(k->o, k->all, &p->mu, p->kvs, p->nbuckets, err);
}

static int flush_table_kvs(const fr_engine_options *o, bool all, fr_table *t, fr_error *err)
{
    if (t->conf.npk == 0) return FR_OK;
    if (t->conf.npart == 0) return flush_kvs(o, all, &t->mu, t->kvs, t->conf.nbuckets, err);
    kv_flush_ctx k = {o, all};
    return fr_table_each_part(t, flush_part_kvs, &k, err);
}

static int flush_table_kvs_due(fr_engine *e, fr_table *t, fr_error *err)
{
    return flush_table_kvs(&e->opts, false, t, err);
}

static int flush_table_kvs_all(fr_engine *e, fr_table *t, fr_error *err)
{
    return flush_table_kvs(&e->opts, true, t, err);
}

int fr_engine_kv_flush_pass(fr_engine *e, bool all, fr_error *err)
{
    return each_table(e, all ? flush_table_kvs_all : flush_table_kvs_due, err);
}

int fr_engine_flush_kv(fr_engine *e, fr_error *err)
{
    return fr_engine_kv_flush_pass(e, true, err);
}
