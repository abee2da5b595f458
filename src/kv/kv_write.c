/* kv_write.c — the write path of a primary-key bucket.
 *
 * For each record of a write: find the key's row (the pending table first, so a key written
 * twice in one batch sees its own first write, then RocksDB), let the merge engine decide
 * the new row, and add the changelog records (+I, -U, +U, -D) to one record batch. That
 * batch is appended to the bucket's log, which is the write-ahead log; only once the append
 * is durable are the new rows written to RocksDB, in one write batch with RocksDB's WAL off
 * that also stores the applied offset (the log's end after this batch). A record that
 * leaves its row byte for byte as it was writes nothing.
 *
 * Pipelining: the records are computed and appended under the store's lock, but the wait
 * for the log's fsync is not: the write leaves its pending table on the in-flight list and
 * releases the lock, so that the next write computes and appends its records (finding the
 * rows of writes in flight before RocksDB's) while the disk works, and one fsync covers
 * several writes. Each write then applies its rows to RocksDB in its turn, the order of the
 * appends, and returns: a write is acknowledged only once its changelog is durable and its
 * rows are applied, and RocksDB (which lookups read) holds only durable changes. A write
 * that appends nothing (it changes nothing, or it is a retry) waits until the writes
 * appended before it are applied, since its answer rests on them.
 *
 * Changelog images (as Fluss's KvTablet): FULL writes -U with the old row and +U with the
 * new one for an update; WAL writes the +U alone, and a full-row upsert on last_row is not
 * looked up at all: it is written as +U whether the key existed or not.
 *
 * Nothing is applied unless the whole write succeeds: every check runs before the append,
 * and the pending table is dropped on any failure. Should the fsync or the RocksDB write
 * fail after the append, the store refuses further writes (FR_ESTATE) until it is reopened,
 * which replays the changelog; the writes in flight behind it fail too. */
#include "kv/kv_int.h"

/* What one write carries from record to record. */
typedef struct kv_wctx {
    fr_kv *kv;
    const bool *targets; /* per column, or NULL for full writes */
    fr_arena *arena;
    kv_cols cols; /* the changelog's records once they are not the input rows */
    fr_buf cts; /* one change type per changelog record */
    fr_buf key, row;
    fr_value *in, *old, *out, *tmp; /* ncols each */
    kv_entry **entries;       /* per row: its key's pending entry (NULL: an ignored delete) */
    const fr_batch *rows;     /* the rows written */
    int64_t row_index;        /* the row whose records are being computed */
    bool lazy;                /* the records so far are rows 0..nrecords-1, not yet built */
    int64_t nrecords;
    int64_t key_delta; /* keys added minus keys removed */
    int64_t changed;
} kv_wctx;

/* ---- idempotence of batches that change nothing ------------------------------------------- */

static kv_writer *kv_writer_find(fr_kv *kv, int64_t id)
{
    for (int i = 0; i < kv->nwriters; i++)
        if (kv->writers[i].id == id) return &kv->writers[i];
    return NULL;
}

/* A batch that changes nothing is not appended, so the log cannot see its sequence again;
 * the store remembers the last sequence of each writer itself (in memory, the least recently
 * used writer forgotten past KV_WRITERS_MAX). */
static void kv_writer_note(fr_kv *kv, int64_t id, int32_t seq, int64_t base)
{
    if (id == FR_NO_WRITER || seq < 0) return;
    kv_writer *w = kv_writer_find(kv, id);
    if (!w) {
        if (!kv->writers) {
            kv->writers = fr_calloc(KV_WRITERS_MAX, sizeof *kv->writers);
            if (!kv->writers) return; /* only the no-op retry check is lost */
        }
        if (kv->nwriters < KV_WRITERS_MAX) {
            w = &kv->writers[kv->nwriters++];
        } else {
            w = &kv->writers[0];
            for (int i = 1; i < kv->nwriters; i++)
                if (kv->writers[i].used < w->used) w = &kv->writers[i];
        }
        w->id = id;
        w->seq = seq;
        w->base = base;
    } else if (seq > w->seq) {
        w->seq = seq;
        w->base = base;
    }
    w->used = ++kv->writer_clock;
}

/* FR_EDUPLICATE when the writer's sequence was seen; *base gets the offset of its changelog
 * (-1 when it wrote none or is not the last one). */
static int kv_writer_check(fr_kv *kv, int64_t id, int32_t seq, int64_t *base, fr_error *err)
{
    if (id == FR_NO_WRITER || seq < 0) return FR_OK;
    kv_writer *w = kv_writer_find(kv, id);
    if (!w || seq > w->seq) return FR_OK;
    *base = seq == w->seq ? w->base : -1;
    return fr_fail(err, FR_EDUPLICATE, "%s: writer %lld sent sequence %d again (the last applied is %d)",
                   kv->name, (long long)id, (int)seq, (int)w->seq);
}

/* ---- checks before anything runs -------------------------------------------------------- */

static int kv_check_rows(fr_kv *kv, const fr_batch *rows, const uint8_t *ops, fr_error *err)
{
    FR_CHECK(fr_batch_num_columns(rows) == kv->ncols, FR_EINVAL, err,
             "%s: a write has %d columns, the table has %d", kv->name,
             fr_batch_num_columns(rows), kv->ncols);
    for (int c = 0; c < kv->ncols; c++) {
        const fr_field *f = fr_schema_field(kv->schema, c);
        FR_CHECK(fr_type_equal(&fr_batch_column(rows, c)->type, &f->type), FR_EINVAL, err,
                 "%s: column %s of a write does not have the table's type", kv->name, f->name);
    }
    int64_t n = fr_batch_num_rows(rows);
    FR_CHECK(n <= FR_RB_RECORDS_MAX / 2, FR_ELIMIT, err,
             "%s: a write of %lld rows exceeds the %d-row limit; write fewer rows at a time",
             kv->name, (long long)n, FR_RB_RECORDS_MAX / 2);
    bool deletes = false;
    for (int64_t i = 0; ops && i < n; i++) {
        FR_CHECK(ops[i] == FR_KV_UPSERT || ops[i] == FR_KV_DELETE, FR_EINVAL, err,
                 "%s: row %lld has an unknown operation %u", kv->name, (long long)i, ops[i]);
        if (ops[i] == FR_KV_DELETE) deletes = true;
    }
    FR_CHECK(!deletes || kv->delete_behavior != FR_DELETE_DISABLE, FR_EINVAL, err,
             "deletes are disabled for table %s ('table.delete.behavior' = 'disable')",
             kv->name);
    return FR_OK;
}

/* Turns target columns into a per-column flag array in *out (NULL when the write is a full
 * one), checking them as Fluss does. */
static int kv_check_targets(fr_kv *kv, const int *targets, int ntarget, bool *flags,
                            bool *partial, fr_error *err)
{
    *partial = false;
    if (!targets) return FR_OK;
    memset(flags, 0, (size_t)kv->ncols * sizeof *flags);
    int distinct = 0;
    for (int i = 0; i < ntarget; i++) {
        FR_CHECK(targets[i] >= 0 && targets[i] < kv->ncols, FR_EINVAL, err,
                 "%s: target column %d is out of range", kv->name, targets[i]);
        if (!flags[targets[i]]) distinct++;
        flags[targets[i]] = true;
    }
    if (distinct == kv->ncols) return FR_OK; /* every column: a full write */
    FR_CHECK(kv->merge == FR_MERGE_LAST_ROW || kv->merge == FR_MERGE_AGGREGATION,
             FR_EINVAL, err, "%s: partial update is not supported by the %s merge engine",
             kv->name, fr_merge_engine_name(kv->merge));
    for (int i = 0; i < kv->npk; i++)
        FR_CHECK(flags[kv->pk[i]], FR_EINVAL, err,
                 "%s: the target columns of a partial update must include the primary key "
                 "column %s", kv->name, fr_schema_field(kv->schema, kv->pk[i])->name);
    for (int c = 0; c < kv->ncols; c++)
        FR_CHECK(kv->is_pk[c] || fr_schema_field(kv->schema, c)->type.nullable, FR_EINVAL,
                 err, "%s: partial update needs every column outside the primary key to be "
                 "nullable, but column %s is NOT NULL", kv->name,
                 fr_schema_field(kv->schema, c)->name);
    *partial = true;
    return FR_OK;
}

/* ---- records ------------------------------------------------------------------------------ */

/* Room in the column buffers for the records a write of these rows may have: one per row,
 * or two (-U and +U) with FULL images. */
static int kv_cols_expect(kv_wctx *w, fr_error *err)
{
    int64_t n = fr_batch_num_rows(w->rows);
    return kv_cols_reserve(&w->cols, w->kv->image == FR_CHANGELOG_FULL ? 2 * n : n, err);
}

/* Copies the records kept lazily (rows 0..nrecords-1 of the input) into the column
 * buffers; from then on every record is built. */
static int kv_materialize(kv_wctx *w, fr_error *err)
{
    fr_kv *kv = w->kv;
    w->lazy = false;
    FR_TRY(kv_cols_expect(w, err));
    for (int64_t r = 0; r < w->nrecords; r++) {
        kv_row_values(w->rows, r, kv->ncols, w->tmp);
        int rc = kv_cols_append(&w->cols, w->tmp, err);
        if (rc < 0) return fr_error_wrap(err, "%s: changelog record %lld", kv->name,
                                         (long long)r);
    }
    return FR_OK;
}

/* Adds one changelog record. As long as each row has written exactly its own input row as
 * +I or +U (a write of new keys, or a blind one), the changelog is a prefix of the input
 * batch and is not copied: kv_append encodes the input itself. */
static int kv_emit(kv_wctx *w, fr_change_type ct, const fr_value *row, fr_error *err)
{
    fr_kv *kv = w->kv;
    if (w->lazy) {
        bool same = row == w->in && w->nrecords == w->row_index &&
                    (ct == FR_CHANGE_INSERT || ct == FR_CHANGE_UPDATE_AFTER);
        if (!same) FR_TRY(kv_materialize(w, err));
    }
    if (!w->lazy) {
        int rc = kv_cols_append(&w->cols, row, err);
        if (rc < 0) return fr_error_wrap(err, "%s: %s record", kv->name, fr_change_type_name(ct));
    }
    uint8_t b = (uint8_t)ct;
    FR_TRY(fr_buf_append(&w->cts, &b, 1, err));
    w->nrecords++;
    return FR_OK;
}

/* Encodes row into w->row. */
static int kv_encode(kv_wctx *w, const fr_value *row, fr_error *err)
{
    fr_buf_reset(&w->row);
    int rc = fr_row_encode(w->kv->schema, row, &w->row, err);
    if (rc < 0) return fr_error_wrap(err, "%s: row", w->kv->name);
    return FR_OK;
}

/* Gives the key its new row (w->row, or none when removing). */
static int kv_store(kv_wctx *w, kv_entry *e, bool remove, fr_error *err)
{
    kv_pending *p = &w->kv->pending;
    if (!e->dirty) w->changed++;
    if (remove) return kv_pending_set(p, e, NULL, 0, err);
    return kv_pending_set(p, e, w->row.data, w->row.len, err);
}

/* The records of an update from old to w->out (already encoded in w->row), unless the row
 * stays the same. */
static int kv_update(kv_wctx *w, kv_entry *e, fr_error *err)
{
    if (w->row.len == e->vlen && memcmp(w->row.data, e->val, e->vlen) == 0) return FR_OK;
    if (w->kv->image == FR_CHANGELOG_FULL)
        FR_TRY(kv_emit(w, FR_CHANGE_UPDATE_BEFORE, w->old, err));
    FR_TRY(kv_emit(w, FR_CHANGE_UPDATE_AFTER, w->out, err));
    return kv_store(w, e, false, err);
}

/* Checks the bitmaps of an upsert for rbm32/rbm64 columns. */
static int kv_check_bitmaps(kv_wctx *w, fr_error *err)
{
    fr_kv *kv = w->kv;
    if (kv->merge != FR_MERGE_AGGREGATION) return FR_OK;
    for (int c = 0; c < kv->ncols; c++) {
        if (kv->is_pk[c]) continue;
        int rc = kv_agg_check_input(kv->aggs[c], &w->in[c], err);
        if (rc < 0)
            return fr_error_wrap(err, "%s: column %s (%s)", kv->name,
                                 fr_schema_field(kv->schema, c)->name, fr_agg_fn_name(kv->aggs[c]));
    }
    return FR_OK;
}

/* A whole row replacing whatever was there needs no lookup when the changelog does not
 * carry the old row (Fluss's WAL image optimization). */
static bool kv_blind(const kv_wctx *w)
{
    const fr_kv *kv = w->kv;
    return kv->image == FR_CHANGELOG_WAL && kv->merge == FR_MERGE_LAST_ROW && !w->targets;
}

static int kv_upsert(kv_wctx *w, kv_entry *e, fr_error *err)
{
    fr_kv *kv = w->kv;
    if (w->targets) {
        for (int c = 0; c < kv->ncols; c++)
            if (!w->targets[c]) w->in[c] = fr_value_null(fr_schema_field(kv->schema, c)->type);
    }
    FR_TRY(kv_check_bitmaps(w, err));
    bool blind = kv_blind(w);
    if (blind || !e->val) {
        FR_TRY(kv_encode(w, w->in, err));
        FR_TRY(kv_emit(w, blind ? FR_CHANGE_UPDATE_AFTER : FR_CHANGE_INSERT, w->in, err));
        if (!blind) w->key_delta++;
        return kv_store(w, e, false, err);
    }
    FR_TRY(kv_row_decode(kv, e->val, e->vlen, w->old, err));
    FR_TRY(kv_merge_upsert(kv, w->old, w->in, w->targets, w->arena, w->out, err));
    FR_TRY(kv_encode(w, w->out, err));
    return kv_update(w, e, err);
}

static int kv_delete(kv_wctx *w, kv_entry *e, fr_error *err)
{
    fr_kv *kv = w->kv;
    if (!e || !e->val) return FR_OK; /* an ignored delete, or nothing to delete */
    FR_TRY(kv_row_decode(kv, e->val, e->vlen, w->old, err));
    bool remove = true;
    if (w->targets) kv_merge_partial_delete(kv, w->old, w->targets, w->out, &remove);
    if (!remove) {
        FR_TRY(kv_encode(w, w->out, err));
        return kv_update(w, e, err);
    }
    FR_TRY(kv_emit(w, FR_CHANGE_DELETE, w->old, err));
    w->key_delta--;
    return kv_store(w, e, true, err);
}

/* ---- applying ----------------------------------------------------------------------------- */

/* Appends the changelog to the log; *base gets its first offset. The record batch is encoded
 * into the store's buffer, kept from write to write unless a large write grew it. */
static int kv_append(kv_wctx *w, int64_t writer_id, int32_t seq, int64_t *base,
                     fr_log_ticket *ticket, fr_error *err)
{
    fr_kv *kv = w->kv;
    fr_batch *b = NULL;
    fr_buf *enc = &kv->enc;
    fr_buf_reset(enc);
    bool whole = w->lazy && w->nrecords == fr_batch_num_rows(w->rows);
    int rc = whole || !w->lazy ? FR_OK : kv_materialize(w, err);
    if (rc == FR_OK && !whole) rc = kv_cols_finish(&w->cols, &b, err);
    if (rc == FR_OK) {
        fr_rb_params p = { .schema_id = fr_schema_id(kv->schema),
                           .compression = kv->compression,
                           .writer_id = writer_id,
                           .batch_sequence = seq,
                           .change_types = w->cts.data };
        rc = fr_rb_encode(whole ? w->rows : b, &p, enc, err);
        if (rc < 0) fr_error_wrap(err, "%s: changelog of %lld records", kv->name,
                                  (long long)w->nrecords);
    }
    /* The batch was encoded just now in this process: the log may skip its CRC pass. */
    if (rc == FR_OK)
        rc = fr_log_append_nowait(kv->log, enc->data, enc->len, FR_LOG_APPEND_VERIFIED, base,
                                  ticket, err);
    fr_batch_free(b);
    if (enc->cap > KV_WRITE_BATCH_KEEP_BYTES) {
        fr_buf_free(enc);
        fr_buf_init(enc);
    }
    return rc;
}

/* The changed rows in key order in f's write batch (empty), built before the append so
 * that nothing that may fail for want of memory runs between the append and the write;
 * f's key range with them. */
static int kv_batch_rows(fr_kv *kv, kv_inflight *f, fr_error *err)
{
    kv_entry **dirty = NULL;
    size_t ndirty = 0;
    rocksdb_writebatch_t *wb = f->wb;
    FR_TRY(kv_pending_dirty_sorted(&kv->pending, &dirty, &ndirty, err));
    f->kmin = ndirty ? dirty[0] : NULL;
    f->kmax = ndirty ? dirty[ndirty - 1] : NULL;
    for (size_t i = 0; i < ndirty; i++) {
        const kv_entry *e = dirty[i];
        if (e->val)
            rocksdb_writebatch_put(wb, (const char *)e->key, e->klen, (const char *)e->val,
                                   e->vlen);
        else
            rocksdb_writebatch_delete(wb, (const char *)e->key, e->klen);
    }
    fr_free(dirty);
    return FR_OK;
}

static void kv_uncache_put(void *arg, const char *k, size_t klen, const char *v, size_t vlen)
{
    (void)v;
    (void)vlen;
    fr_kv *kv = arg;
    if (klen > 0 && (uint8_t)k[0] == KV_DATA_PREFIX)
        kv_rowcache_erase(kv->env->rows, kv->cache_id, (const uint8_t *)k, klen);
}

static void kv_uncache_delete(void *arg, const char *k, size_t klen)
{
    kv_uncache_put(arg, k, klen, NULL, 0);
}

/* Writes the batch of changed rows with the new applied offset: one RocksDB write, inside
 * the two bumps of the store's generation, with its keys removed from the row cache. */
static int kv_apply(fr_kv *kv, rocksdb_writebatch_t *wb, int64_t applied, int64_t nkeys,
                    fr_error *err)
{
    uint8_t meta[KV_META_VALUE_LEN];
    kv_meta_encode(meta, applied, nkeys);
    rocksdb_writebatch_put(wb, KV_META_KEY, KV_META_KEY_LEN, (const char *)meta, sizeof meta);
    char *errptr = NULL;
    atomic_fetch_add(&kv->gen, 1);
    rocksdb_write(kv->db, kv->wopts, wb, &errptr);
    /* Also after a failed write: it may have changed some rows. */
    if (atomic_load(&kv->cached))
        rocksdb_writebatch_iterate(wb, kv, kv_uncache_put, kv_uncache_delete);
    atomic_fetch_add(&kv->gen, 1);
    if (errptr) return kv_rocks_fail(kv, errptr, "write", err);
    return FR_OK;
}

/* The row of e's key as the writes in flight left it, when one of them changed it: the
 * newest wins, and e need not be read from RocksDB (which has not got it yet). The value
 * stays in the in-flight write's arena, which is freed only under mu after it is done. A
 * write whose key range does not hold the key is not searched (writers of other key
 * ranges share the bucket, and a probe of their tables is a cache miss each). */
static void kv_inflight_row(fr_kv *kv, kv_entry *e)
{
    const kv_entry *found = NULL;
    for (const kv_inflight *f = kv->inflight; f; f = f->next) {
        if (!f->kmin || kv_key_cmp(e->key, e->klen, f->kmin->key, f->kmin->klen) < 0 ||
            kv_key_cmp(e->key, e->klen, f->kmax->key, f->kmax->klen) > 0)
            continue;
        const kv_entry *x = kv_pending_find(&f->rows, e->key, e->klen, e->hash);
        if (x && x->dirty) found = x;
    }
    if (!found) return;
    e->val = found->val;
    e->vlen = found->vlen;
    e->load = false;
}

/* Finds every row's pending entry before any record is computed, and reads the stored rows
 * the records need in one pass of batched MultiGets (a key's first use decides whether it
 * is read: a blind upsert does not read it, a delete does). */
static int kv_prepare(kv_wctx *w, const fr_batch *rows, const uint8_t *ops, fr_error *err)
{
    fr_kv *kv = w->kv;
    int64_t n = fr_batch_num_rows(rows);
    w->entries = fr_calloc((size_t)n + 1, sizeof *w->entries);
    FR_CHECK(w->entries, FR_ENOMEM, err, "%s: out of memory for a write of %lld rows", kv->name,
             (long long)n);
    FR_TRY(kv_pending_reserve(&kv->pending, (size_t)n, err));
    bool blind = kv_blind(w);
    for (int64_t i = 0; i < n; i++) {
        bool del = ops && ops[i] == FR_KV_DELETE;
        if (del && kv->delete_behavior == FR_DELETE_IGNORE) continue;
        for (int k = 0; k < kv->npk; k++)
            fr_column_get(fr_batch_column(rows, kv->pk[k]), i, &w->in[kv->pk[k]]);
        fr_buf_reset(&w->key);
        int rc = kv_key_of_row(kv, w->in, &w->key, err);
        if (rc < 0) return fr_error_wrap(err, "row %lld", (long long)i);
        FR_TRY(kv_pending_add(&kv->pending, w->key.data, w->key.len, del || !blind,
                              &w->entries[i], err));
        if (w->entries[i]->load && kv->inflight) kv_inflight_row(kv, w->entries[i]);
    }
    return kv_pending_load(&kv->pending, kv->db, kv->cf, kv->ropts, kv->mem_ropts, err);
}

static int kv_records(kv_wctx *w, const fr_batch *rows, const uint8_t *ops, fr_error *err)
{
    int64_t n = fr_batch_num_rows(rows);
    FR_TRY(kv_prepare(w, rows, ops, err));
    w->rows = rows;
    w->lazy = !w->targets;
    if (!w->lazy) FR_TRY(kv_cols_expect(w, err));
    for (int64_t i = 0; i < n; i++) {
        bool del = ops && ops[i] == FR_KV_DELETE;
        w->row_index = i;
        if (del && !w->entries[i]) continue;
        kv_row_values(rows, i, w->kv->ncols, w->in);
        int rc = del ? kv_delete(w, w->entries[i], err) : kv_upsert(w, w->entries[i], err);
        if (rc < 0) return fr_error_wrap(err, "row %lld", (long long)i);
    }
    return FR_OK;
}

/* ---- the in-flight list -------------------------------------------------------------- */

/* Frees the done writes at the head of the list, keeping a few for reuse. mu held. */
static void kv_inflight_reap(fr_kv *kv)
{
    while (kv->inflight && atomic_load(&kv->inflight->done)) {
        kv_inflight *f = kv->inflight;
        kv->inflight = f->next;
        if (!kv->inflight) kv->inflight_last = NULL;
        kv_pending_clear(&f->rows);
        size_t size = 0;
        rocksdb_writebatch_data(f->wb, &size);
        if (kv->nspares < KV_INFLIGHT_SPARES && size <= KV_INFLIGHT_WB_KEEP_BYTES) {
            rocksdb_writebatch_clear(f->wb);
            f->next = kv->spares;
            kv->spares = f;
            kv->nspares++;
            continue;
        }
        rocksdb_writebatch_destroy(f->wb);
        kv_pending_free(&f->rows);
        fr_free(f);
    }
}

/* A spare in-flight record (empty write batch and pending table), or a new one. mu held. */
static int kv_inflight_take(fr_kv *kv, kv_inflight **out, fr_error *err)
{
    kv_inflight *f = kv->spares;
    if (f) {
        kv->spares = f->next;
        kv->nspares--;
    } else {
        f = fr_calloc(1, sizeof *f);
        FR_CHECK(f, FR_ENOMEM, err, "%s: out of memory for a write", kv->name);
        f->wb = rocksdb_writebatch_create();
    }
    f->next = NULL;
    atomic_store(&f->done, false);
    *out = f;
    return FR_OK;
}

static void kv_inflight_give_back(fr_kv *kv, kv_inflight *f)
{
    rocksdb_writebatch_clear(f->wb);
    f->next = kv->spares;
    kv->spares = f;
    kv->nspares++;
}

void kv_inflight_free_all(fr_kv *kv)
{
    kv_inflight *lists[2] = { kv->inflight, kv->spares };
    for (int i = 0; i < 2; i++) {
        for (kv_inflight *f = lists[i], *next; f; f = next) {
            next = f->next;
            rocksdb_writebatch_destroy(f->wb);
            kv_pending_free(&f->rows);
            fr_free(f);
        }
    }
    kv->inflight = kv->inflight_last = kv->spares = NULL;
    kv->nspares = 0;
}

/* Waits until the state is applied up to `upto` or a write failed. */
static int kv_wait_applied(fr_kv *kv, int64_t upto, fr_error *err)
{
    pthread_mutex_lock(&kv->apply_mu);
    while (atomic_load(&kv->applied) < upto && !atomic_load(&kv->failed))
        pthread_cond_wait(&kv->apply_cond, &kv->apply_mu);
    pthread_mutex_unlock(&kv->apply_mu);
    if (atomic_load(&kv->applied) >= upto) return FR_OK;
    return fr_fail(err, FR_ESTATE, "%s: a write before this one failed after its changelog "
                   "was appended; reopen the table to recover the state from the log",
                   kv->name);
}

int kv_drain_locked(fr_kv *kv, fr_error *err)
{
    return kv_wait_applied(kv, kv->written, err);
}

/* ---- applying, in turn ------------------------------------------------------------------ */

/* Waits for f's changelog to be durable, then, in f's turn, writes its rows to RocksDB;
 * marks f done (the caller must not touch it afterwards). */
static int kv_finish(fr_kv *kv, kv_inflight *f, fr_error *err)
{
    int rc = fr_log_wait_durable(kv->log, &f->ticket, err);
    pthread_mutex_lock(&kv->apply_mu);
    while (kv->apply_turn != f->turn) pthread_cond_wait(&kv->apply_cond, &kv->apply_mu);
    if (rc == FR_OK && atomic_load(&kv->failed))
        rc = fr_fail(err, FR_ESTATE, "%s: a write before this one failed after its changelog "
                     "was appended; reopen the table to recover the state from the log",
                     kv->name);
    if (rc == FR_OK) {
        rc = kv_apply(kv, f->wb, f->applied, f->nkeys, err);
        if (rc < 0)
            fr_error_wrap(err, "the changelog up to offset %lld is in the log but not in the "
                          "state", (long long)f->applied);
    }
    if (rc == FR_OK) {
        atomic_store(&kv->nkeys, f->nkeys);
        atomic_store(&kv->applied, f->applied);
        kv_after_write(kv);
    } else {
        int zero = 0;
        atomic_compare_exchange_strong(&kv->failed, &zero, rc);
    }
    kv->apply_turn++;
    atomic_store(&f->done, true);
    pthread_cond_broadcast(&kv->apply_cond);
    pthread_mutex_unlock(&kv->apply_mu);
    return rc;
}

/* The first half of a write, under the lock once the checks passed: records computed and
 * appended. *out gets the in-flight write to finish, or NULL when nothing was appended. */
static int kv_write_locked(kv_wctx *w, const fr_batch *rows, const uint8_t *ops,
                           int64_t writer_id, int32_t seq, fr_kv_write_result *res,
                           kv_inflight **out, fr_error *err)
{
    fr_kv *kv = w->kv;
    *out = NULL;
    kv_inflight_reap(kv);
    FR_TRY(kv_writer_check(kv, writer_id, seq, &res->base_offset, err));
    FR_TRY(kv_records(w, rows, ops, err));
    if (w->nrecords == 0) {
        kv_writer_note(kv, writer_id, seq, -1);
        return FR_OK;
    }
    kv_inflight *f = NULL;
    FR_TRY(kv_inflight_take(kv, &f, err));
    int64_t base = -1;
    int rc = kv_batch_rows(kv, f, err);
    if (rc == FR_OK) rc = kv_append(w, writer_id, seq, &base, &f->ticket, err);
    if (rc == FR_EDUPLICATE) res->base_offset = base;
    if (rc < 0) {
        kv_inflight_give_back(kv, f);
        return rc;
    }
    int64_t nkeys = kv->written_nkeys;
    if (kv->image == FR_CHANGELOG_FULL && nkeys >= 0) nkeys += w->key_delta;
    f->applied = base + w->nrecords;
    f->nkeys = nkeys;
    f->turn = kv->next_turn++;
    /* The write's pending table goes with it; the spare's empty one serves the next. */
    kv_pending_unpin(&kv->pending);
    kv_pending rows_of_f = kv->pending;
    kv->pending = f->rows;
    f->rows = rows_of_f;
    if (kv->inflight_last) kv->inflight_last->next = f;
    else kv->inflight = f;
    kv->inflight_last = f;
    kv->written = f->applied;
    kv->written_nkeys = nkeys;
    kv_writer_note(kv, writer_id, seq, base);
    res->changelog_records = w->nrecords;
    res->base_offset = base;
    res->rows_changed = w->changed;
    *out = f;
    return FR_OK;
}

static int kv_wctx_init(kv_wctx *w, fr_kv *kv, fr_error *err)
{
    memset(w, 0, sizeof *w);
    w->kv = kv;
    fr_buf_init(&w->cts);
    fr_buf_init(&w->key);
    fr_buf_init(&w->row);
    w->in = fr_calloc((size_t)kv->ncols * 4, sizeof *w->in);
    w->arena = fr_arena_new(64 << 10);
    if (!w->in || !w->arena) return fr_fail(err, FR_ENOMEM, "%s: out of memory for a write", kv->name);
    w->old = w->in + kv->ncols;
    w->out = w->old + kv->ncols;
    w->tmp = w->out + kv->ncols;
    return kv_cols_init(&w->cols, kv->schema, err);
}

static void kv_wctx_free(kv_wctx *w)
{
    kv_cols_free(&w->cols);
    if (w->arena) fr_arena_free(w->arena);
    fr_free(w->entries);
    fr_free(w->in);
    fr_buf_free(&w->cts);
    fr_buf_free(&w->key);
    fr_buf_free(&w->row);
}

int fr_kv_write(fr_kv *kv, const fr_batch *rows, const uint8_t *ops,
                const int *target_columns, int ntarget, int64_t writer_id, int32_t seq,
                fr_kv_write_result *result, fr_error *err)
{
    fr_kv_write_result res = { 0, -1, 0 };
    if (result) *result = res;
    FR_TRY(kv_check_rows(kv, rows, ops, err));
    bool *flags = fr_calloc((size_t)kv->ncols, sizeof *flags);
    if (!flags) return fr_fail(err, FR_ENOMEM, "%s: out of memory for a write", kv->name);
    bool partial = false;
    kv_wctx w;
    kv_inflight *f = NULL;
    int64_t before = 0; /* the log's end that an answer without an append rests on */
    int rc = kv_wctx_init(&w, kv, err);
    if (rc == FR_OK) rc = kv_check_targets(kv, target_columns, ntarget, flags, &partial, err);
    w.targets = partial ? flags : NULL;
    if (rc == FR_OK) {
        pthread_mutex_lock(&kv->mu);
        if (atomic_load(&kv->failed))
            rc = fr_fail(err, FR_ESTATE, "%s: a write failed after its changelog was appended; "
                         "reopen the table to recover the state from the log", kv->name);
        else
            rc = kv_write_locked(&w, rows, ops, writer_id, seq, &res, &f, err);
        before = kv->written;
        kv_pending_clear(&kv->pending);
        pthread_mutex_unlock(&kv->mu);
    }
    kv_wctx_free(&w);
    fr_free(flags);
    if (f) {
        rc = kv_finish(kv, f, err);
        if (rc < 0) res = (fr_kv_write_result){ 0, -1, 0 };
        /* The last write of a burst frees the done writes (their rows and arenas) now
         * rather than at the store's next write; when another write holds the lock, it
         * frees them itself. */
        if (pthread_mutex_trylock(&kv->mu) == 0) {
            kv_inflight_reap(kv);
            pthread_mutex_unlock(&kv->mu);
        }
    } else if (rc == FR_OK || rc == FR_EDUPLICATE) {
        fr_error werr;
        int wrc = kv_wait_applied(kv, before, &werr);
        if (wrc < 0) {
            rc = wrc;
            if (err) *err = werr;
        }
    }
    if (result) *result = res;
    return rc;
}
