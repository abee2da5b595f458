/* kv_store.c — one bucket's RocksDB instance: opening it with firth's tuning, recovery by
 * replaying the log's changelog from the applied offset, closing, sizes, and the helpers
 * that turn rows into keys and stored values back into rows.
 *
 * Recovery rule: the meta key holds the log offset up to which the state is applied (and
 * the key count). At open the log is replayed from there to its end: +I and +U put the row
 * (a WAL-image +U carries the whole row too), -D deletes the key, -U changes nothing. The
 * replay is idempotent (it writes whole rows), so replaying from an older offset than
 * needed is harmless; a state newer than the log's end is not, and is rebuilt from offset 0.
 */
#include <stdio.h>

#include "kv/kv_int.h"

/* Values of RocksDB's C++ enums that the C API takes as plain ints. */
enum { KV_INFO_LOG_WARN = 2, KV_READ_TIER_MEMTABLE = 3 };

void kv_meta_encode(uint8_t out[KV_META_VALUE_LEN], int64_t applied, int64_t nkeys)
{
    fr_put_u64le(out, (uint64_t)applied);
    fr_put_u64le(out + 8, (uint64_t)nkeys);
}

int kv_rocks_fail(fr_kv *kv, char *errptr, const char *what, fr_error *err)
{
    int rc = fr_fail(err, FR_EIO, "%s: RocksDB %s failed: %s", kv->name, what,
                     errptr ? errptr : "unknown error");
    rocksdb_free(errptr);
    return rc;
}

/* ---- rows and keys ------------------------------------------------------------------------ */

void kv_row_values(const fr_batch *b, int64_t row, int ncols, fr_value *values)
{
    for (int c = 0; c < ncols; c++) fr_column_get(fr_batch_column(b, c), row, &values[c]);
}

int kv_row_decode(const fr_kv *kv, const uint8_t *p, size_t n, fr_value *values,
                  fr_error *err)
{
    int rc = fr_row_decode(p, n, kv->schema, values, err);
    if (rc < 0) return fr_error_wrap(err, "%s: stored row", kv->name);
    return FR_OK;
}

int kv_key_of_values(const fr_kv *kv, const fr_value *key_values, int nkey, fr_buf *out,
                     fr_error *err)
{
    assert(nkey >= 1 && nkey <= kv->npk);
    for (int i = 0; i < nkey; i++)
        FR_CHECK(!key_values[i].is_null, FR_EINVAL, err, "%s: primary key column %s is NULL",
                 kv->name, fr_schema_field(kv->schema, kv->pk[i])->name);
    uint8_t prefix = KV_DATA_PREFIX;
    FR_TRY(fr_buf_append(out, &prefix, 1, err));
    int rc = fr_key_encode(kv->pk_types, key_values, nkey, out, err);
    if (rc < 0) return fr_error_wrap(err, "%s: primary key", kv->name);
    return FR_OK;
}

int kv_key_of_row(const fr_kv *kv, const fr_value *row, fr_buf *out, fr_error *err)
{
    fr_value small[16] = { { .is_null = false } };
    fr_value *kvs = kv->npk <= 16 ? small : fr_malloc((size_t)kv->npk * sizeof *kvs);
    if (!kvs) return fr_fail(err, FR_ENOMEM, "%s: out of memory for a key", kv->name);
    for (int i = 0; i < kv->npk; i++) kvs[i] = row[kv->pk[i]];
    int rc = kv_key_of_values(kv, kvs, kv->npk, out, err);
    if (kvs != small) fr_free(kvs);
    return rc;
}

/* ---- the spec -------------------------------------------------------------------------- */

static int kv_copy_spec(fr_kv *kv, const fr_kv_spec *spec, fr_error *err)
{
    kv->name = fr_strdup(spec->name ? spec->name : "kv");
    kv->schema = fr_schema_clone(spec->schema);
    kv->ncols = fr_schema_num_fields(spec->schema);
    kv->npk = spec->npk;
    kv->pk = fr_malloc((size_t)spec->npk * sizeof *kv->pk);
    kv->pk_types = fr_malloc((size_t)spec->npk * sizeof *kv->pk_types);
    kv->is_pk = fr_calloc((size_t)kv->ncols, sizeof *kv->is_pk);
    kv->aggs = fr_calloc((size_t)kv->ncols, sizeof *kv->aggs);
    kv->delims = fr_calloc((size_t)kv->ncols, sizeof *kv->delims);
    if (!kv->name || !kv->schema || !kv->pk || !kv->pk_types || !kv->is_pk || !kv->aggs ||
        !kv->delims)
        return fr_fail(err, FR_ENOMEM, "kv: out of memory opening %s", spec->name);
    for (int i = 0; i < spec->npk; i++) {
        kv->pk[i] = spec->pk[i];
        kv->pk_types[i] = fr_schema_field(kv->schema, spec->pk[i])->type;
        kv->is_pk[spec->pk[i]] = true;
    }
    for (int c = 0; c < kv->ncols; c++) {
        kv->aggs[c] = spec->aggs ? spec->aggs[c] : FR_AGG_LAST_VALUE_IGNORE_NULLS;
        if (spec->listagg_delimiters && spec->listagg_delimiters[c]) {
            kv->delims[c] = fr_strdup(spec->listagg_delimiters[c]);
            if (!kv->delims[c]) return fr_fail(err, FR_ENOMEM, "kv: out of memory");
        }
    }
    kv->merge = spec->merge;
    kv->version_column = spec->version_column;
    kv->delete_behavior = spec->delete_behavior;
    kv->image = spec->image;
    kv->compression = spec->compression;
    return FR_OK;
}

/* ---- RocksDB ----------------------------------------------------------------------------- */

/* Compression per level: none in levels 0 and 1, LZ4 below. The files of the first two
 * levels are the ones rewritten again and again (every memtable flush writes level 0, and
 * its compactions rewrite level 1), so compressing them costs CPU on every write and every
 * read of a hot key for little space, the data being soon rewritten; the deeper levels,
 * where most of a large state settles, keep LZ4 (RocksDB's tuning guide does the same). */
static void kv_set_compression(rocksdb_options_t *o)
{
    int levels[7] = { rocksdb_no_compression, rocksdb_no_compression, rocksdb_lz4_compression,
                      rocksdb_lz4_compression, rocksdb_lz4_compression,
                      rocksdb_lz4_compression, rocksdb_lz4_compression };
    rocksdb_options_set_compression(o, rocksdb_lz4_compression);
    rocksdb_options_set_compression_per_level(o, levels, sizeof levels / sizeof levels[0]);
}

/* Options the C API does not reach. An insert hint per first key byte (data rows, the
 * applied-offset key): a write batch's rows are sorted, and without a hint RocksDB keeps a
 * memtable insert position only for a key that lands right after the previous one, so an
 * updated key, which lands just before its older version, searched the skip list from its
 * top every time. With the hint each insert starts from the previous one's position. */
#define KV_STRING_OPTIONS \
    "avoid_flush_during_shutdown=true;" \
    "memtable_insert_with_hint_prefix_extractor=rocksdb.FixedPrefix.1"

/* Options shared by every bucket: compression by level, a bounded number of open files and
 * of info log files, the environment's block cache and memtable size. RocksDB must not flush on its own
 * at shutdown: fr_kv_close flushes, and fr_kv_close_noflush must lose the memtable as a
 * crash would. */
static int kv_make_options(fr_kv *kv, fr_error *err)
{
    rocksdb_options_t *base = rocksdb_options_create();
    rocksdb_options_set_create_if_missing(base, 1);
    kv_set_compression(base);
    rocksdb_options_set_max_open_files(base, 128);
    kv_env_apply(kv->env, base);
    rocksdb_options_set_keep_log_file_num(base, 2);
    rocksdb_options_set_max_log_file_size(base, 1 << 20);
    rocksdb_options_set_info_log_level(base, KV_INFO_LOG_WARN);
    kv->opts = rocksdb_options_create();
    char *errptr = NULL;
    rocksdb_get_options_from_string(base, KV_STRING_OPTIONS, kv->opts, &errptr);
    rocksdb_options_destroy(base);
    if (errptr) return kv_rocks_fail(kv, errptr, "options", err);
    kv->wopts = rocksdb_writeoptions_create();
    rocksdb_writeoptions_disable_WAL(kv->wopts, 1);
    kv->ropts = rocksdb_readoptions_create();
    kv->mem_ropts = rocksdb_readoptions_create();
    rocksdb_readoptions_set_read_tier(kv->mem_ropts, KV_READ_TIER_MEMTABLE);
    rocksdb_readoptions_set_pin_data(kv->mem_ropts, 1);
    return FR_OK;
}

/* Opens the database with a handle on its default column family (the batched MultiGet of
 * the C API takes one; the store uses no other family). */
static int kv_db_open(fr_kv *kv, fr_error *err)
{
    char *errptr = NULL;
    const char *names[1] = { "default" };
    const rocksdb_options_t *cf_opts[1] = { kv->opts };
    rocksdb_column_family_handle_t *handles[1] = { NULL };
    kv->db = rocksdb_open_column_families(kv->opts, kv->dir, 1, names, cf_opts, handles,
                                          &errptr);
    if (errptr) {
        kv->db = NULL;
        return kv_rocks_fail(kv, errptr, "open", err);
    }
    kv->cf = handles[0];
    return FR_OK;
}

static void kv_db_close(fr_kv *kv)
{
    if (kv->cf) rocksdb_column_family_handle_destroy(kv->cf);
    kv->cf = NULL;
    if (kv->db) rocksdb_close(kv->db);
    kv->db = NULL;
}

static int kv_read_meta(fr_kv *kv, int64_t *applied, int64_t *nkeys, fr_error *err)
{
    char *errptr = NULL;
    size_t len = 0;
    char *v = rocksdb_get(kv->db, kv->ropts, KV_META_KEY, KV_META_KEY_LEN, &len, &errptr);
    if (errptr) return kv_rocks_fail(kv, errptr, "read of the applied offset", err);
    *applied = 0;
    *nkeys = kv->image == FR_CHANGELOG_FULL ? 0 : -1;
    if (!v) return FR_OK;
    int rc = FR_OK;
    if (len != KV_META_VALUE_LEN) {
        rc = fr_fail(err, FR_ECORRUPT, "%s: the applied-offset record in %s has %zu bytes, not %d",
                     kv->name, kv->dir, len, KV_META_VALUE_LEN);
    } else {
        *applied = (int64_t)fr_get_u64le((const uint8_t *)v);
        int64_t n = (int64_t)fr_get_u64le((const uint8_t *)v + 8);
        if (kv->image == FR_CHANGELOG_FULL) *nkeys = n;
        if (*applied < 0)
            rc = fr_fail(err, FR_ECORRUPT, "%s: negative applied offset %lld in %s", kv->name,
                         (long long)*applied, kv->dir);
    }
    rocksdb_free(v);
    return rc;
}

/* ---- replay ------------------------------------------------------------------------------ */

typedef struct kv_replay {
    fr_kv *kv;
    fr_value *values;
    fr_buf key, row;
    int64_t nkeys;
} kv_replay;

/* Adds the state change of one changelog record to wb. */
static int kv_replay_record(kv_replay *r, const fr_batch *b, int64_t i, uint8_t ct,
                            int64_t offset, rocksdb_writebatch_t *wb, fr_error *err)
{
    fr_kv *kv = r->kv;
    if (ct == FR_CHANGE_UPDATE_BEFORE) return FR_OK;
    FR_CHECK(ct == FR_CHANGE_INSERT || ct == FR_CHANGE_UPDATE_AFTER || ct == FR_CHANGE_DELETE,
             FR_ECORRUPT, err, "%s: the record at offset %lld is %s, not a change of a primary-key table",
             kv->name, (long long)offset, fr_change_type_name((fr_change_type)ct));
    kv_row_values(b, i, kv->ncols, r->values);
    fr_buf_reset(&r->key);
    FR_TRY(kv_key_of_row(kv, r->values, &r->key, err));
    if (ct == FR_CHANGE_DELETE) {
        rocksdb_writebatch_delete(wb, (const char *)r->key.data, r->key.len);
        if (r->nkeys >= 0) r->nkeys--;
        return FR_OK;
    }
    fr_buf_reset(&r->row);
    int rc = fr_row_encode(kv->schema, r->values, &r->row, err);
    if (rc < 0)
        return fr_error_wrap(err, "%s: the record at offset %lld", kv->name, (long long)offset);
    rocksdb_writebatch_put(wb, (const char *)r->key.data, r->key.len, (const char *)r->row.data,
                           r->row.len);
    if (ct == FR_CHANGE_INSERT && r->nkeys >= 0) r->nkeys++;
    return FR_OK;
}

/* One log batch becomes one RocksDB write, with the applied offset after it. */
static int kv_replay_batch(void *ctx, fr_batch *batch, const int64_t *offsets,
                           const uint8_t *change_types, int64_t commit_ts, fr_error *err)
{
    kv_replay *r = ctx;
    fr_kv *kv = r->kv;
    int64_t n = fr_batch_num_rows(batch);
    int rc = FR_OK;
    rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
    if (!change_types && n > 0)
        rc = fr_fail(err, FR_ECORRUPT, "%s: the batch at offset %lld is append-only, not a changelog",
                     kv->name, (long long)offsets[0]);
    for (int64_t i = 0; rc == FR_OK && i < n; i++)
        rc = kv_replay_record(r, batch, i, change_types[i], offsets[i], wb, err);
    if (rc == FR_OK && n > 0) {
        uint8_t meta[KV_META_VALUE_LEN];
        kv_meta_encode(meta, offsets[n - 1] + 1, r->nkeys);
        rocksdb_writebatch_put(wb, KV_META_KEY, KV_META_KEY_LEN, (const char *)meta, sizeof meta);
        char *errptr = NULL;
        rocksdb_write(kv->db, kv->wopts, wb, &errptr);
        if (errptr) rc = kv_rocks_fail(kv, errptr, "write during replay", err);
    }
    rocksdb_writebatch_destroy(wb);
    fr_batch_free(batch);
    return rc;
}

static int kv_replay_log(fr_kv *kv, int64_t from, int64_t end, int64_t nkeys, fr_error *err)
{
    kv_replay r = { .kv = kv, .nkeys = nkeys };
    fr_buf_init(&r.key);
    fr_buf_init(&r.row);
    r.values = fr_calloc((size_t)kv->ncols, sizeof *r.values);
    int rc = r.values ? FR_OK : fr_fail(err, FR_ENOMEM, "%s: out of memory", kv->name);
    while (rc == FR_OK && from < end) {
        fr_log_read rd = { .from_offset = from, .schema = kv->schema,
                           .max_bytes = KV_REPLAY_READ_BYTES, .max_records = -1 };
        int64_t next = from;
        rc = fr_log_read_batches(kv->log, &rd, kv_replay_batch, &r, &next, err);
        if (rc < 0) {
            fr_error_wrap(err, "%s: replaying the changelog from offset %lld", kv->name,
                          (long long)from);
        } else if (next <= from) {
            rc = fr_fail(err, FR_ECORRUPT, "%s: replaying the changelog made no progress at offset %lld (log end %lld)",
                         kv->name, (long long)from, (long long)end);
        }
        from = next;
    }
    if (rc == FR_OK) {
        atomic_store(&kv->applied, from);
        atomic_store(&kv->nkeys, r.nkeys);
    }
    fr_free(r.values);
    fr_buf_free(&r.key);
    fr_buf_free(&r.row);
    return rc;
}

/* A state ahead of the log: the log lost a tail it had not flushed while RocksDB kept it.
 * Only a replay from offset 0 can bring the two back together. */
static int kv_rebuild(fr_kv *kv, int64_t applied, int64_t end, fr_error *err)
{
    FR_WARN("%s: the KV state is applied up to offset %lld but the log ends at %lld "
            "(its unflushed tail was lost); rebuilding the state from the whole log",
            kv->name, (long long)applied, (long long)end);
    kv_db_close(kv);
    char *errptr = NULL;
    rocksdb_destroy_db(kv->opts, kv->dir, &errptr);
    if (errptr) return kv_rocks_fail(kv, errptr, "removal of the stale state", err);
    return kv_db_open(kv, err);
}

static int kv_recover(fr_kv *kv, fr_error *err)
{
    int64_t applied = 0, nkeys = 0;
    FR_TRY(kv_read_meta(kv, &applied, &nkeys, err));
    int64_t start = fr_log_start_offset(kv->log), end = fr_log_end_offset(kv->log);
    if (applied > end) {
        FR_CHECK(start == 0, FR_ECORRUPT, err,
                 "%s: the KV state is applied up to offset %lld but the log ends at %lld and "
                 "starts at %lld: the state cannot be rebuilt (the changelog before %lld is gone)",
                 kv->name, (long long)applied, (long long)end, (long long)start,
                 (long long)start);
        FR_TRY(kv_rebuild(kv, applied, end, err));
        applied = 0;
        nkeys = kv->image == FR_CHANGELOG_FULL ? 0 : -1;
    }
    /* Retention removes segments only below what the state has on disk, so a log that
     * starts later lost changelog some other way. */
    FR_CHECK(applied >= start, FR_ECORRUPT, err,
             "%s: the KV state on disk is applied up to offset %lld but the log starts at "
             "%lld: the changelog in between is gone (segment files removed by hand, or a "
             "KV directory older than the log) and the state cannot be recovered; restore "
             "both directories from the same backup, or drop the table",
             kv->name, (long long)applied, (long long)start);
    atomic_store(&kv->persisted, applied);
    FR_TRY(kv_replay_log(kv, applied, end, nkeys, err));
    if (atomic_load(&kv->applied) > applied) atomic_store(&kv->dirty_since_ms, kv_now_ms());
    return FR_OK;
}

/* ---- open and close --------------------------------------------------------------------- */

static void kv_destroy(fr_kv *kv)
{
    kv_inflight_free_all(kv);
    kv_pending_free(&kv->pending);
    kv_db_close(kv);
    if (kv->env) {
        atomic_fetch_sub(&kv->env->active_bytes, kv->mem_reported);
        fr_kv_env_release(kv->env);
    }
    if (kv->opts) rocksdb_options_destroy(kv->opts);
    if (kv->wopts) rocksdb_writeoptions_destroy(kv->wopts);
    if (kv->ropts) rocksdb_readoptions_destroy(kv->ropts);
    if (kv->mem_ropts) rocksdb_readoptions_destroy(kv->mem_ropts);
    fr_buf_free(&kv->enc);
    if (kv->delims)
        for (int c = 0; c < kv->ncols; c++) fr_free(kv->delims[c]);
    fr_free(kv->delims);
    fr_free(kv->aggs);
    fr_free(kv->is_pk);
    fr_free(kv->pk_types);
    fr_free(kv->pk);
    fr_free(kv->writers);
    if (kv->schema) fr_schema_free(kv->schema);
    fr_free(kv->dir);
    fr_free(kv->name);
    pthread_cond_destroy(&kv->apply_cond);
    pthread_mutex_destroy(&kv->apply_mu);
    pthread_mutex_destroy(&kv->flush_mu);
    pthread_mutex_destroy(&kv->mu);
    fr_free(kv);
}

/* The spec's environment (a new reference), or one of the store's own. */
static int kv_take_env(fr_kv *kv, const fr_kv_spec *spec, fr_error *err)
{
    if (spec->env) {
        fr_kv_env_retain(spec->env);
        kv->env = spec->env;
        return FR_OK;
    }
    fr_kv_env_options o = { .block_cache_bytes = KV_PRIVATE_CACHE_BYTES,
                            .write_buffer_bytes = KV_PRIVATE_BUFFER_BYTES,
                            .row_cache_bytes = KV_PRIVATE_CACHE_BYTES };
    return fr_kv_env_new(&o, &kv->env, err);
}

int fr_kv_open(const char *dir, fr_log *log, const fr_kv_spec *spec, fr_kv **out,
               fr_error *err)
{
    *out = NULL;
    FR_TRY(fr_kv_spec_check(spec, err));
    FR_CHECK(dir && log, FR_EINVAL, err, "kv: open needs a directory and a log");
    fr_kv *kv = fr_calloc(1, sizeof *kv);
    if (!kv) return fr_fail(err, FR_ENOMEM, "kv: out of memory opening %s", dir);
    fr_buf_init(&kv->enc);
    pthread_mutex_init(&kv->mu, NULL);
    pthread_mutex_init(&kv->flush_mu, NULL);
    pthread_mutex_init(&kv->apply_mu, NULL);
    pthread_cond_init(&kv->apply_cond, NULL);
    kv->cache_id = kv_rowcache_store_id();
    atomic_init(&kv->gen, 0);
    atomic_init(&kv->cached, false);
    kv->log = log;
    kv->log_unsynced = spec->log_unsynced;
    kv->dir = fr_strdup(dir);
    int rc = kv->dir ? kv_copy_spec(kv, spec, err)
                     : fr_fail(err, FR_ENOMEM, "kv: out of memory opening %s", dir);
    if (rc == FR_OK) rc = kv_take_env(kv, spec, err);
    if (rc == FR_OK) rc = fr_mkdirs(dir, err);
    if (rc == FR_OK) rc = kv_make_options(kv, err);
    if (rc == FR_OK) rc = kv_db_open(kv, err);
    if (rc == FR_OK) rc = kv_recover(kv, err);
    kv->written = atomic_load(&kv->applied);
    kv->written_nkeys = atomic_load(&kv->nkeys);
    if (rc < 0) {
        kv_destroy(kv);
        return rc;
    }
    *out = kv;
    return FR_OK;
}

void fr_kv_close(fr_kv *kv)
{
    if (!kv) return;
    fr_error err = { 0 };
    if (kv->db && fr_kv_flush(kv, &err) < 0)
        FR_WARN("%s: flush at close failed (the next open replays more): %s", kv->name,
                err.msg);
    kv_destroy(kv);
}

void fr_kv_close_noflush(fr_kv *kv)
{
    if (kv) kv_destroy(kv);
}

/* ---- sizes ------------------------------------------------------------------------------ */

int64_t fr_kv_applied_offset(fr_kv *kv)
{
    return atomic_load(&kv->applied);
}

static int64_t kv_property(fr_kv *kv, const char *name)
{
    uint64_t v = 0;
    if (rocksdb_property_int(kv->db, name, &v) != 0) return 0;
    return (int64_t)v;
}

int64_t fr_kv_size_bytes(fr_kv *kv)
{
    return kv_property(kv, "rocksdb.total-sst-files-size") +
           kv_property(kv, "rocksdb.cur-size-all-mem-tables");
}

int64_t fr_kv_num_keys(fr_kv *kv)
{
    int64_t n = atomic_load(&kv->nkeys);
    if (n >= 0) return n;
    /* The estimate counts the meta key too. */
    n = kv_property(kv, "rocksdb.estimate-num-keys") - 1;
    return n > 0 ? n : 0;
}
