/* engine_flush.c — the engine-wide flush: one fr_log_flush of every log that is open, the
 * table's own buckets and those of its partitions. Logs that were never opened hold
 * nothing unflushed from this process, so they are not opened here.
 *
 * Under FR_FLUSH_INTERVAL the log flushes lazily, on the first append after the interval;
 * this pass, run by the background thread every interval, bounds how long an idle log's
 * last appends stay unflushed. */
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

static int flush_table(fr_table *t, fr_error *err)
{
    if (t->conf.npart == 0) return flush_logs(&t->mu, t->logs, t->conf.nbuckets, err);
    fr_tpart **parts = NULL;
    int n = 0;
    FR_TRY(fr_table_parts_snapshot(t, &parts, &n, err));
    int rc = FR_OK;
    for (int i = 0; i < n; i++) {
        fr_error e2 = {0};
        int r = flush_logs(&parts[i]->mu, parts[i]->logs, parts[i]->nbuckets, &e2);
        if (r < 0 && rc == FR_OK) {
            rc = r;
            if (err) *err = e2;
        }
    }
    fr_tparts_release(parts, n);
    return rc;
}

int fr_engine_flush(fr_engine *e, fr_error *err)
{
    pthread_mutex_lock(&e->mu);
    int n = e->ntables;
    fr_table **snap = fr_calloc((size_t)n + 1, sizeof *snap);
    for (int i = 0; snap && i < n; i++) {
        snap[i] = e->tables[i];
        fr_table_retain(snap[i]);
    }
    pthread_mutex_unlock(&e->mu);
    FR_CHECK(snap, FR_ENOMEM, err, "out of memory flushing the logs");
    int rc = FR_OK;
    for (int i = 0; i < n; i++) {
        fr_error e2 = {0};
        int r = flush_table(snap[i], &e2);
        if (r < 0 && rc == FR_OK) {
            rc = r;
            if (err) *err = e2;
        }
        fr_table_release(snap[i]);
    }
    fr_free(snap);
    return rc;
}
