/* engine_bucket.c — writes addressed to one bucket of one partition, as a remote client
 * sends them after splitting its rows itself (the native protocol's produce and put), and
 * the sizes of a bucket's log and KV store for metrics.
 *
 * Invariants: a write is checked whole before anything is appended: the batch decodes
 * against the table's schema, and every row belongs to the partition named (and, for a
 * primary-key table, to the bucket named, by the same hash the engine routes with), so
 * that a client that splits rows wrongly gets an error instead of rows that lookups and
 * partition pruning would never find. Every partition used is held while it is used. */
#include "engine/engine_int.h"

#include <inttypes.h>

/* Checks that every row of b has the partition values of p (canonical text). */
static int check_rows_partition(fr_table *t, const fr_tpart *p, const fr_batch *b,
                                fr_error *err)
{
    fr_buf text;
    fr_buf_init(&text);
    int rc = FR_OK;
    for (int64_t row = 0; rc == FR_OK && row < fr_batch_num_rows(b); row++) {
        for (int k = 0; rc == FR_OK && k < t->conf.npart; k++) {
            const fr_column *c = fr_batch_column(b, t->conf.part[k]);
            const char *col = fr_schema_field(fr_table_schema(t), t->conf.part[k])->name;
            if (fr_column_is_null(c, row)) {
                rc = fr_fail(err, FR_EINVAL, "table %s: row %" PRId64 " has NULL in partition "
                             "column '%s'", t->qname, row + 1, col);
                break;
            }
            fr_value v;
            fr_column_get(c, row, &v);
            fr_buf_reset(&text);
            rc = fr_partition_value_text(t, k, &v, false, &text, err);
            if (rc == FR_OK && strcmp((const char *)text.data, p->info.values[k]) != 0)
                rc = fr_fail(err, FR_EINVAL, "table %s: row %" PRId64 " has %s = '%s', which "
                             "belongs in another partition than %s", t->qname, row + 1, col,
                             (const char *)text.data, p->info.name);
        }
    }
    fr_buf_free(&text);
    return rc;
}

/* The partition of a write: NULL for a table without partitions (partition_id -1), else
 * the partition with that id, retained. */
static int write_partition(fr_table *t, int64_t partition_id, fr_tpart **out, fr_error *err)
{
    *out = NULL;
    if (t->conf.npart == 0) {
        FR_CHECK(partition_id == -1, FR_EINVAL, err, "table %s has no partitions: give "
                 "partition id -1, not %" PRId64, t->qname, partition_id);
        return FR_OK;
    }
    FR_CHECK(partition_id >= 0, FR_EINVAL, err, "table %s is partitioned: give the id of one "
             "of its partitions, not %" PRId64, t->qname, partition_id);
    *out = fr_table_find_part_id(t, partition_id);
    FR_CHECK(*out, FR_ENOTFOUND, err, "table %s has no partition with id %" PRId64
             " (dropped?): read the metadata again", t->qname, partition_id);
    return FR_OK;
}

int fr_table_append_encoded_to(fr_table *t, int64_t partition_id, int bucket, uint8_t *rb,
                               size_t len, unsigned log_flags, int64_t *base_offset,
                               fr_table_pending *pending, fr_error *err)
{
    fr_tpart *p = NULL;
    FR_TRY(write_partition(t, partition_id, &p, err));
    if (!p)
        return fr_table_append_encoded_flags(t, bucket, rb, len, log_flags, base_offset,
                                             pending, err);
    fr_batch *decoded = NULL;
    fr_log *log = NULL;
    fr_rb_view v;
    int rc;
    FR_GOTO(atomic_load(&t->dropped) ? fr_fail(err, FR_ENOTFOUND, "table %s was dropped",
                                               t->qname) : FR_OK);
    FR_GOTO(t->conf.npk == 0 ? FR_OK : fr_fail(err, FR_EINVAL, "table %s has a primary key: "
                                               "write with upserts instead of appends",
                                               t->qname));
    FR_GOTO(bucket >= 0 && bucket < t->conf.nbuckets
                ? FR_OK
                : fr_fail(err, FR_ERANGE, "table %s has buckets 0 to %d, not %d", t->qname,
                          t->conf.nbuckets - 1, bucket));
    FR_GOTO(fr_rb_decode(rb, len, &v, err));
    const fr_schema *schema = fr_table_schema(t);
    FR_GOTO((size_t)v.length == len
                ? FR_OK
                : fr_fail(err, FR_EINVAL, "table %s: one record batch of %d bytes was "
                          "expected, got %zu bytes", t->qname, v.length, len));
    /* Partition columns are checked by their positions in the current schema. */
    FR_GOTO(v.schema_id == fr_schema_id(schema)
                ? FR_OK
                : fr_fail(err, FR_ETYPE, "table %s: the batch names schema %d, but the "
                          "table's current schema is %d", t->qname, v.schema_id,
                          fr_schema_id(schema)));
    FR_GOTO(v.append_only ? FR_OK
                          : fr_fail(err, FR_EINVAL, "table %s is a log table: its batches "
                                    "must be append-only", t->qname));
    size_t used = 0;
    FR_GOTO(fr_ipc_read_batch(v.ipc, (size_t)v.ipc_length, schema, &decoded, &used, err));
    FR_GOTO(fr_batch_num_rows(decoded) == v.record_count
                ? FR_OK
                : fr_fail(err, FR_EINVAL, "table %s: the batch header says %d records but "
                          "its data has %" PRId64, t->qname, v.record_count,
                          fr_batch_num_rows(decoded)));
    FR_GOTO(fr_table_check_batch(t, decoded, err));
    FR_GOTO(check_rows_partition(t, p, decoded, err));
    FR_GOTO(fr_tpart_log(t, p, bucket, false, &log, err));
    rc = fr_table_log_append(log, rb, len, log_flags, base_offset, pending, err);
fail:
    fr_batch_free(decoded);
    fr_tpart_release(p);
    return rc;
}

static int check_put_bucket(fr_table *t, const fr_tpart *p, int bucket, const fr_batch *rows,
                            const uint8_t *ops, fr_error *err)
{
    FR_CHECK(t->conf.npk > 0, FR_EINVAL, err, "table %s has no primary key: write with "
             "appends instead of upserts", t->qname);
    FR_CHECK(!atomic_load(&t->dropped), FR_ENOTFOUND, err, "table %s was dropped", t->qname);
    FR_CHECK(bucket >= 0 && bucket < t->conf.nbuckets, FR_ERANGE, err,
             "table %s has buckets 0 to %d, not %d", t->qname, t->conf.nbuckets - 1, bucket);
    FR_TRY(fr_table_check_types(t, rows, err));
    for (int k = 0; k < t->conf.npk; k++) {
        const fr_column *c = fr_batch_column(rows, t->conf.pk[k]);
        FR_CHECK(c->null_count == 0, FR_EINVAL, err,
                 "table %s: primary key column '%s' is NULL in %" PRId64 " row%s; primary key "
                 "columns take no NULL", t->qname,
                 fr_schema_field(fr_table_schema(t), t->conf.pk[k])->name, c->null_count,
                 c->null_count == 1 ? "" : "s");
    }
    int64_t n = fr_batch_num_rows(rows);
    for (int64_t i = 0; ops && i < n; i++)
        FR_CHECK(ops[i] == FR_KV_UPSERT || ops[i] == FR_KV_DELETE, FR_EINVAL, err,
                 "table %s: row %" PRId64 " has operation %d; give 0 (upsert) or 1 (delete)",
                 t->qname, i + 1, ops[i]);
    if (p) FR_TRY(check_rows_partition(t, p, rows, err));
    fr_buf scratch;
    fr_buf_init(&scratch);
    int rc = FR_OK;
    for (int64_t i = 0; rc == FR_OK && t->conf.nbuckets > 1 && i < n; i++) {
        fr_buf_reset(&scratch);
        rc = fr_bucket_key_bytes(rows, t->conf.bucket_key, t->conf.nbucket_key, i, &scratch,
                                 err);
        int b = (int)(fr_murmur3_32(scratch.data, scratch.len, 0) % (uint32_t)t->conf.nbuckets);
        if (rc == FR_OK && b != bucket)
            rc = fr_fail(err, FR_EINVAL, "table %s: row %" PRId64 " belongs in bucket %d, not "
                         "%d (bucket = murmur3 of the bucket key mod bucket.num)", t->qname,
                         i + 1, b, bucket);
    }
    fr_buf_free(&scratch);
    return rc;
}

int fr_table_put_bucket(fr_table *t, int64_t partition_id, int bucket, const fr_batch *rows,
                        const uint8_t *ops, const int *target_columns, int ntarget,
                        int64_t writer_id, int32_t seq, fr_kv_write_result *result,
                        fr_error *err)
{
    *result = (fr_kv_write_result){.base_offset = -1};
    fr_tpart *p = NULL;
    FR_TRY(write_partition(t, partition_id, &p, err));
    fr_kv *kv = NULL;
    int rc;
    FR_GOTO(check_put_bucket(t, p, bucket, rows, ops, err));
    if (fr_batch_num_rows(rows) == 0) goto fail; /* rc is 0: nothing to do */
    FR_GOTO(fr_tpart_kv(t, p, bucket, false, &kv, err));
    rc = fr_kv_write(kv, rows, ops, target_columns, ntarget, writer_id, seq, result, err);
fail:
    fr_tpart_release(p);
    return rc;
}

int fr_table_bucket_stats(fr_table *t, int64_t partition_id, int bucket, fr_bucket_stats *out,
                          fr_error *err)
{
    *out = (fr_bucket_stats){.log_start_offset = -1, .log_end_offset = -1,
                             .kv_applied_offset = -1, .kv_persisted_offset = -1};
    fr_tpart *p = NULL;
    FR_TRY(write_partition(t, partition_id, &p, err));
    fr_log *log = NULL;
    int rc;
    FR_GOTO(bucket >= 0 && bucket < t->conf.nbuckets
                ? FR_OK
                : fr_fail(err, FR_ERANGE, "table %s has buckets 0 to %d, not %d", t->qname,
                          t->conf.nbuckets - 1, bucket));
    FR_GOTO(fr_tpart_log(t, p, bucket, true, &log, err));
    if (log) {
        out->has_log = true;
        out->log_start_offset = fr_log_start_offset(log);
        out->log_end_offset = fr_log_end_offset(log);
        out->log_bytes = fr_log_size_bytes(log);
        fr_log_fsync_stats_add(log, &out->fsync);
    }
    if (t->conf.npk > 0) {
        /* Only a store that is open: opening RocksDB is not a metric's job. */
        pthread_mutex_t *mu = p ? &p->mu : &t->mu;
        pthread_mutex_lock(mu);
        fr_kv *kv = p ? p->kvs[bucket] : t->kvs[bucket];
        if (kv) {
            out->has_kv = true;
            out->kv_bytes = fr_kv_size_bytes(kv);
            out->kv_keys = fr_kv_num_keys(kv);
            out->kv_applied_offset = fr_kv_applied_offset(kv);
            out->kv_persisted_offset = fr_kv_persisted_offset(kv);
        }
        pthread_mutex_unlock(mu);
    }
fail:
    fr_tpart_release(p);
    return rc;
}

void fr_buckets_close(fr_kv **kvs, fr_log **logs, int n, bool dropped)
{
    for (int b = 0; kvs && b < n; b++)
        if (kvs[b]) dropped ? fr_kv_close_noflush(kvs[b]) : fr_kv_close(kvs[b]);
    for (int b = 0; logs && b < n; b++)
        if (logs[b]) dropped ? fr_log_close_noflush(logs[b]) : fr_log_close(logs[b]);
}
