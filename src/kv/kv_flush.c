/* kv_flush.c — making a bucket's state durable on demand, and what that allows: the
 * persisted offset (the changelog offset up to which the state is known to be on disk),
 * flushes when the unflushed tail grows too long or too old, the removal of log segments
 * that recovery no longer needs, and the memtable budget shared by an environment's stores.
 *
 * Invariants: persisted <= the applied offset in RocksDB's files <= applied. A flush first
 * makes the log durable up to what it will persist (unless the log is never fsynced), so
 * the state on disk is never ahead of a durable log; then RocksDB flushes with wait, which
 * covers every memtable sealed before it, so every write applied before the flush began is
 * in RocksDB's files afterwards. A log segment is removed only while writes are paused and
 * the persisted offset equals the log's end, so every removed segment ends at or below it.
 *
 * Locks: flush_mu serializes flushes; the retention holds mu (no write, so no append, runs),
 * lets the writes in flight finish, and then takes flush_mu. dirty_since_ms is cleared
 * before a flush reads the offset it will persist, so a write applied after that read sets
 * it again and is not forgotten. */
#include "kv/kv_int.h"

int64_t kv_now_ms(void)
{
    int64_t ms = fr_monotonic_ns() / 1000000;
    return ms > 0 ? ms : 1;
}

/* ---- flushes ---------------------------------------------------------------------------- */

int kv_flush_locked(fr_kv *kv, int64_t upto, fr_error *err)
{
    if (!kv->log_unsynced) {
        int rc = fr_log_flush(kv->log, err);
        if (rc < 0) return fr_error_wrap(err, "%s: flushing the log before the state", kv->name);
    }
    rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();
    rocksdb_flushoptions_set_wait(fo, 1);
    char *errptr = NULL;
    rocksdb_flush(kv->db, fo, &errptr);
    rocksdb_flushoptions_destroy(fo);
    if (errptr) return kv_rocks_fail(kv, errptr, "flush", err);
    if (upto > atomic_load(&kv->persisted)) atomic_store(&kv->persisted, upto);
    return FR_OK;
}

/* A flush with flush_mu held, keeping the age of the unflushed tail right. */
static int kv_flush_now(fr_kv *kv, fr_error *err)
{
    int64_t since = atomic_exchange(&kv->dirty_since_ms, 0);
    int64_t upto = atomic_load(&kv->applied);
    int rc = upto > atomic_load(&kv->persisted) ? kv_flush_locked(kv, upto, err) : FR_OK;
    if (rc < 0 && since != 0) { /* still unflushed: keep the older time */
        int64_t zero = 0;
        if (!atomic_compare_exchange_strong(&kv->dirty_since_ms, &zero, since)) {
            int64_t later = atomic_load(&kv->dirty_since_ms);
            if (since < later) atomic_store(&kv->dirty_since_ms, since);
        }
    }
    return rc;
}

int fr_kv_flush(fr_kv *kv, fr_error *err)
{
    pthread_mutex_lock(&kv->flush_mu);
    int rc = kv_flush_now(kv, err);
    pthread_mutex_unlock(&kv->flush_mu);
    return rc;
}

int64_t fr_kv_persisted_offset(fr_kv *kv)
{
    return atomic_load(&kv->persisted);
}

bool fr_kv_flush_due(fr_kv *kv, int64_t max_records, int64_t max_age_ms)
{
    int64_t applied = atomic_load(&kv->applied), persisted = atomic_load(&kv->persisted);
    if (applied <= persisted) return false;
    if (max_records > 0 && applied - persisted >= max_records) return true;
    int64_t since = atomic_load(&kv->dirty_since_ms);
    return max_age_ms > 0 && since > 0 && kv_now_ms() - since >= max_age_ms;
}

/* ---- retention of the log ----------------------------------------------------------------- */

int fr_kv_enforce_log_retention(fr_kv *kv, int64_t now_ms, int *removed, fr_error *err)
{
    if (removed) *removed = 0;
    /* The bulk of the memtable goes to disk while writes go on; what they add meanwhile is
     * flushed below, with writes paused. */
    FR_TRY(fr_kv_flush(kv, err));
    pthread_mutex_lock(&kv->mu);
    pthread_mutex_lock(&kv->flush_mu);
    int rc = FR_OK;
    if (kv->failed)
        rc = fr_fail(err, FR_ESTATE, "%s: a RocksDB write failed; the log keeps its segments "
                     "until the table is reopened", kv->name);
    /* Writes in flight are in the log but maybe not yet in the state: they finish first
     * (their applies take no lock held here). */
    if (rc == FR_OK) rc = kv_drain_locked(kv, err);
    if (rc == FR_OK) rc = kv_flush_now(kv, err);
    /* With writes paused the applied offset is the log's end; a log appended to from
     * elsewhere would break that, and then nothing is removed. */
    int64_t persisted = atomic_load(&kv->persisted), end = fr_log_end_offset(kv->log);
    if (rc == FR_OK && persisted != end)
        rc = fr_fail(err, FR_ESTATE, "%s: the state on disk is applied up to offset %lld but "
                     "the log ends at %lld; its segments are kept", kv->name,
                     (long long)persisted, (long long)end);
    if (rc == FR_OK) rc = fr_log_enforce_retention(kv->log, now_ms, removed, err);
    pthread_mutex_unlock(&kv->flush_mu);
    pthread_mutex_unlock(&kv->mu);
    return rc;
}

/* ---- after each write ----------------------------------------------------------------------- */

static int64_t kv_active_bytes(fr_kv *kv)
{
    uint64_t v = 0;
    if (rocksdb_property_int(kv->db, "rocksdb.cur-size-active-mem-table", &v) != 0) return 0;
    return (int64_t)v;
}

/* Reports this store's active memtable to the environment; returns the environment's sum. */
static int64_t kv_report_memory(fr_kv *kv)
{
    int64_t now = kv_active_bytes(kv), delta = now - kv->mem_reported;
    kv->mem_reported = now;
    return atomic_fetch_add(&kv->env->active_bytes, delta) + delta;
}

void kv_after_write(fr_kv *kv)
{
    int64_t zero = 0;
    atomic_compare_exchange_strong(&kv->dirty_since_ms, &zero, kv_now_ms());
    int64_t total = kv_report_memory(kv);
    if (total <= kv->env->flush_trigger || kv->mem_reported < kv->env->flush_min) return;
    /* Over budget: seal this memtable and let RocksDB flush it in the background (without
     * waiting, so the persisted offset stays where it is). */
    rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();
    rocksdb_flushoptions_set_wait(fo, 0);
    char *errptr = NULL;
    rocksdb_flush(kv->db, fo, &errptr);
    rocksdb_flushoptions_destroy(fo);
    if (errptr) {
        FR_WARN("%s: RocksDB flush for the memtable budget failed: %s", kv->name, errptr);
        rocksdb_free(errptr);
    }
    kv_report_memory(kv);
}
