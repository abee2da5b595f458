/* engine_write.c — the write path of a table: choosing each row's bucket, splitting a batch
 * by bucket, encoding each part as a record batch and appending it to its bucket's log.
 *
 * Bucket of a row, with a bucket key: murmur3_32 (seed 0) over the canonical bytes of the
 * key values, mod bucket.num. The canonical bytes are, for each key column in key order:
 *   NULL                      0x00
 *   otherwise                 0x01, then
 *     BOOLEAN                 1 byte, 0 or 1
 *     TINYINT..BIGINT, DATE, TIME, TIMESTAMP, TIMESTAMP_LTZ
 *                             the value as int64, 8 bytes little-endian (so a column widened
 *                             from INT to BIGINT keeps its rows' buckets)
 *     FLOAT, DOUBLE           the value as a double, 8 bytes little-endian IEEE 754, with -0.0
 *                             written as 0.0 and every NaN as 0x7ff8000000000000
 *     DECIMAL                 the unscaled value, 16 bytes little-endian two's complement
 *     CHAR, VARCHAR, STRING, BYTES
 *                             uint32 little-endian byte length, then the bytes
 * Without a bucket key, a call from an idempotent writer goes to bucket
 * murmur3_32(writer_id as 8 bytes LE ++ seq as 4 bytes LE, seed 0) mod bucket.num, so that a
 * retry lands where the first attempt did; other calls go round-robin. docs/ENGINE.md says
 * the same for readers of the data. */
#include "engine/engine_int.h"

#include <assert.h>
#include <inttypes.h>
#include <math.h>

static int put(fr_buf *out, const void *p, size_t n, fr_error *err)
{
    return fr_buf_append(out, p, n, err);
}

int fr_bucket_value_bytes(const fr_value *v, bool is_null, fr_buf *out, fr_error *err)
{
    uint8_t tag = is_null ? 0 : 1;
    FR_TRY(put(out, &tag, 1, err));
    if (is_null) return FR_OK;
    uint8_t w[16];
    switch (v->type.id) {
    case FR_T_BOOLEAN:
        w[0] = v->v.b ? 1 : 0;
        return put(out, w, 1, err);
    case FR_T_FLOAT:
    case FR_T_DOUBLE: {
        double d = v->v.f;
        uint64_t bits;
        if (isnan(d)) bits = 0x7ff8000000000000ULL;
        else {
            if (d == 0) d = 0; /* -0.0 and 0.0 are the same key */
            memcpy(&bits, &d, 8);
        }
        fr_put_u64le(w, bits);
        return put(out, w, 8, err);
    }
    case FR_T_DECIMAL:
        fr_put_u64le(w, (uint64_t)v->v.d);
        fr_put_u64le(w + 8, (uint64_t)((unsigned __int128)v->v.d >> 64));
        return put(out, w, 16, err);
    case FR_T_CHAR:
    case FR_T_VARCHAR:
    case FR_T_STRING:
    case FR_T_BYTES:
        fr_put_u32le(w, (uint32_t)v->v.s.len);
        FR_TRY(put(out, w, 4, err));
        return v->v.s.len > 0 ? put(out, v->v.s.ptr, v->v.s.len, err) : FR_OK;
    default: /* integers and temporal types */
        fr_put_u64le(w, (uint64_t)v->v.i);
        return put(out, w, 8, err);
    }
}

int fr_bucket_key_bytes(const fr_batch *b, const int *key, int nkey, int64_t row, fr_buf *out,
                        fr_error *err)
{
    for (int k = 0; k < nkey; k++) {
        const fr_column *c = fr_batch_column(b, key[k]);
        fr_value v = {.type = c->type};
        bool null = fr_column_is_null(c, row);
        if (!null) fr_column_get(c, row, &v);
        v.type.id = c->type.id;
        FR_TRY(fr_bucket_value_bytes(&v, null, out, err));
    }
    return FR_OK;
}

static int row_bucket(const fr_table *t, const fr_batch *b, int64_t row, fr_buf *scratch,
                      fr_error *err)
{
    fr_buf_reset(scratch);
    FR_TRY(fr_bucket_key_bytes(b, t->conf.bucket_key, t->conf.nbucket_key, row, scratch, err));
    return (int)(fr_murmur3_32(scratch->data, scratch->len, 0) % (uint32_t)t->conf.nbuckets);
}

int fr_table_bucket_of(const fr_table *t, const fr_batch *b, int64_t row)
{
    assert(row >= 0 && row < fr_batch_num_rows(b));
    if (t->conf.nbuckets == 1) return 0;
    if (t->conf.nbucket_key == 0) return -1;
    fr_buf scratch;
    fr_buf_init(&scratch);
    int bucket = row_bucket(t, b, row, &scratch, NULL);
    fr_buf_free(&scratch);
    return bucket;
}

static int writer_bucket(const fr_table *t, int64_t writer_id, int32_t seq)
{
    uint8_t w[12];
    fr_put_u64le(w, (uint64_t)writer_id);
    fr_put_u32le(w + 8, (uint32_t)seq);
    return (int)(fr_murmur3_32(w, sizeof w, 0) % (uint32_t)t->conf.nbuckets);
}

/* Encodes part and appends it to bucket; *count gets its rows, or 0 for a retry that the
 * log had already seen. */
static int append_part(fr_table *t, fr_tpart *tp, int bucket, const fr_batch *part,
                       int64_t writer_id, int32_t seq, int64_t *count, fr_error *err)
{
    *count = 0;
    fr_log *log = NULL;
    FR_TRY(fr_tpart_log(t, tp, bucket, false, &log, err));
    fr_rb_params p = {
        .schema_id = fr_schema_id(fr_table_schema(t)),
        .compression = t->conf.compression,
        .writer_id = writer_id,
        .batch_sequence = writer_id == FR_NO_WRITER ? -1 : seq,
        .change_types = NULL,
    };
    fr_buf enc;
    fr_buf_init(&enc);
    int64_t base = 0;
    int rc = fr_rb_encode(part, &p, &enc, err);
    /* The bytes were just encoded here: the log need not check their CRC again. */
    if (rc == FR_OK)
        rc = fr_log_append2(log, enc.data, enc.len, FR_LOG_APPEND_VERIFIED, &base, err);
    fr_buf_free(&enc);
    if (rc == FR_EDUPLICATE) {
        if (err) fr_error_clear(err);
        return FR_OK;
    }
    if (rc < 0) {
        fr_error_wrap(err, "table %s, bucket %d", t->qname, bucket);
        return rc;
    }
    *count = fr_batch_num_rows(part);
    return FR_OK;
}

/* Appends a batch bound for one bucket, in pieces of at most FR_RB_RECORDS_MAX rows when
 * the writer is not idempotent (an idempotent batch is one sequence number: one piece). */
static int append_one_bucket(fr_table *t, fr_tpart *tp, int bucket, const fr_batch *b,
                             int64_t writer_id, int32_t seq, int64_t *appended, fr_error *err)
{
    int64_t rows = fr_batch_num_rows(b), n = 0;
    if (rows <= FR_RB_RECORDS_MAX) {
        FR_TRY(append_part(t, tp, bucket, b, writer_id, seq, &n, err));
        *appended += n;
        return FR_OK;
    }
    FR_CHECK(writer_id == FR_NO_WRITER, FR_ELIMIT, err,
             "table %s: an idempotent batch of %" PRId64 " rows for bucket %d exceeds the "
             "limit of %d rows per batch; send smaller batches", t->qname, rows, bucket,
             FR_RB_RECORDS_MAX);
    for (int64_t off = 0; off < rows; off += FR_RB_RECORDS_MAX) {
        int64_t len = rows - off < FR_RB_RECORDS_MAX ? rows - off : FR_RB_RECORDS_MAX;
        fr_batch *piece = NULL;
        FR_TRY(fr_batch_slice(b, off, len, &piece, err));
        int rc = append_part(t, tp, bucket, piece, writer_id, seq, &n, err);
        fr_batch_free(piece);
        FR_TRY(rc);
        *appended += n;
    }
    return FR_OK;
}

/* Splits b by the bucket of each row (buckets[row]) and appends each part. A counting
 * sort groups the row numbers by bucket (keeping their order), so each part is gathered
 * from its own rows. */
static int append_split(fr_table *t, fr_tpart *tp, const fr_batch *b, const int32_t *buckets,
                        int64_t writer_id, int32_t seq, int64_t *appended, fr_error *err)
{
    int nb = t->conf.nbuckets;
    int64_t rows = fr_batch_num_rows(b);
    int64_t *start = fr_calloc((size_t)nb + 1, sizeof *start);
    int64_t *order = fr_malloc((size_t)rows * sizeof *order);
    int rc = FR_OK;
    if (!start || !order) {
        rc = fr_fail(err, FR_ENOMEM, "out of memory splitting a batch of %" PRId64 " rows",
                     rows);
        goto fail;
    }
    for (int64_t r = 0; r < rows; r++) start[buckets[r] + 1]++;
    for (int k = 0; k < nb; k++) start[k + 1] += start[k];
    for (int64_t r = 0; r < rows; r++) order[start[buckets[r]]++] = r;
    /* start[k] is now the end of bucket k's rows, which begin at start[k - 1] (or 0). */
    for (int k = 0; k < nb; k++) {
        int64_t from = k == 0 ? 0 : start[k - 1], to = start[k];
        if (from == to) continue;
        fr_batch *part = NULL;
        rc = fr_engine_take(b, order + from, to - from, &part, err);
        if (rc == FR_OK) rc = append_one_bucket(t, tp, k, part, writer_id, seq, appended, err);
        fr_batch_free(part);
        if (rc < 0) goto fail;
    }
fail:
    fr_free(start);
    fr_free(order);
    return rc;
}

/* Appends b to the buckets of partition tp (NULL: the table's own buckets). */
static int append_to(fr_table *t, fr_tpart *tp, const fr_batch *b, int64_t writer_id,
                     int32_t seq, int64_t *appended, fr_error *err)
{
    int64_t rows = fr_batch_num_rows(b);
    int nb = t->conf.nbuckets;
    if (nb == 1) return append_one_bucket(t, tp, 0, b, writer_id, seq, appended, err);
    if (t->conf.nbucket_key == 0) {
        int bucket = writer_id != FR_NO_WRITER
                         ? writer_bucket(t, writer_id, seq)
                         : (int)(atomic_fetch_add(&t->round_robin, 1) % (uint64_t)nb);
        return append_one_bucket(t, tp, bucket, b, writer_id, seq, appended, err);
    }
    int32_t *buckets = fr_malloc((size_t)rows * sizeof *buckets);
    FR_CHECK(buckets, FR_ENOMEM, err, "out of memory bucketing %" PRId64 " rows", rows);
    fr_buf scratch;
    fr_buf_init(&scratch);
    int rc = FR_OK;
    bool one = true;
    for (int64_t r = 0; r < rows && rc == FR_OK; r++) {
        rc = row_bucket(t, b, r, &scratch, err);
        if (rc < 0) break;
        buckets[r] = rc;
        one = one && buckets[r] == buckets[0];
        rc = FR_OK;
    }
    fr_buf_free(&scratch);
    if (rc == FR_OK) {
        rc = one ? append_one_bucket(t, tp, buckets[0], b, writer_id, seq, appended, err)
                 : append_split(t, tp, b, buckets, writer_id, seq, appended, err);
    }
    fr_free(buckets);
    return rc;
}

/* Splits b by partition (keeping the rows' order in each) and appends each part. */
static int append_partitioned(fr_table *t, const fr_batch *b, int64_t writer_id, int32_t seq,
                              int64_t *appended, fr_error *err)
{
    fr_tpart **parts = NULL;
    int32_t *part_of = NULL;
    int nparts = 0;
    FR_TRY(fr_table_route_partitions(t, b, &parts, &nparts, &part_of, err));
    int64_t rows = fr_batch_num_rows(b);
    int rc = FR_OK;
    if (nparts == 1) {
        rc = append_to(t, parts[0], b, writer_id, seq, appended, err);
        goto done;
    }
    /* A counting sort groups the row numbers by partition, keeping their order. */
    int64_t *idx = fr_malloc((size_t)rows * sizeof *idx);
    int64_t *start = fr_calloc((size_t)nparts + 1, sizeof *start);
    if (!idx || !start) {
        fr_free(idx);
        fr_free(start);
        rc = fr_fail(err, FR_ENOMEM, "out of memory splitting %" PRId64 " rows", rows);
        goto done;
    }
    for (int64_t r = 0; r < rows; r++) start[part_of[r] + 1]++;
    for (int p = 0; p < nparts; p++) start[p + 1] += start[p];
    for (int64_t r = 0; r < rows; r++) idx[start[part_of[r]]++] = r;
    /* start[p] is now the end of partition p's rows, which begin at start[p - 1] (or 0). */
    for (int p = 0; rc == FR_OK && p < nparts; p++) {
        int64_t from = p == 0 ? 0 : start[p - 1];
        fr_batch *sub = NULL;
        rc = fr_engine_take(b, idx + from, start[p] - from, &sub, err);
        if (rc == FR_OK) rc = append_to(t, parts[p], sub, writer_id, seq, appended, err);
        fr_batch_free(sub);
    }
    fr_free(idx);
    fr_free(start);
done:
    fr_free(part_of);
    fr_tparts_release(parts, nparts);
    return rc;
}

int fr_table_append(fr_table *t, const fr_batch *b, int64_t writer_id, int32_t seq,
                    int64_t *appended, fr_error *err)
{
    int64_t sink = 0;
    if (!appended) appended = &sink;
    *appended = 0;
    FR_CHECK(!atomic_load(&t->dropped), FR_ENOTFOUND, err, "table %s was dropped", t->qname);
    FR_CHECK(t->conf.npk == 0, FR_EINVAL, err, "table %s has a primary key: write with "
             "upserts (INSERT) instead of appends", t->qname);
    FR_CHECK(writer_id == FR_NO_WRITER || (writer_id >= 0 && seq >= 0), FR_EINVAL, err,
             "writer id %" PRId64 " and sequence %d: give a writer id >= 0 with a sequence "
             ">= 0, or writer id -1", writer_id, seq);
    FR_TRY(fr_table_check_batch(t, b, err));
    if (fr_batch_num_rows(b) == 0) return FR_OK;
    if (t->conf.npart > 0) return append_partitioned(t, b, writer_id, seq, appended, err);
    return append_to(t, NULL, b, writer_id, seq, appended, err);
}

int fr_table_append_encoded(fr_table *t, int bucket, uint8_t *rb, size_t len,
                            int64_t *base_offset, fr_error *err)
{
    return fr_table_append_encoded_flags(t, bucket, rb, len, 0, base_offset, NULL, err);
}

int fr_table_log_append(fr_log *log, uint8_t *rb, size_t len, unsigned log_flags,
                        int64_t *base_offset, fr_table_pending *pending, fr_error *err)
{
    if (!pending) return fr_log_append2(log, rb, len, log_flags, base_offset, err);
    pending->log = log;
    return fr_log_append_nowait(log, rb, len, log_flags, base_offset, &pending->ticket, err);
}

int fr_table_append_encoded_flags(fr_table *t, int bucket, uint8_t *rb, size_t len,
                                  unsigned log_flags, int64_t *base_offset,
                                  fr_table_pending *pending, fr_error *err)
{
    FR_CHECK(!atomic_load(&t->dropped), FR_ENOTFOUND, err, "table %s was dropped", t->qname);
    FR_CHECK(t->conf.npk == 0, FR_EINVAL, err, "table %s has a primary key: write with "
             "upserts instead of appends", t->qname);
    FR_CHECK(t->conf.npart == 0, FR_EINVAL, err, "table %s is partitioned: an encoded batch "
             "needs a partition", t->qname);
    FR_CHECK(bucket >= 0 && bucket < t->conf.nbuckets, FR_ERANGE, err,
             "table %s has buckets 0 to %d, not %d", t->qname, t->conf.nbuckets - 1, bucket);
    fr_rb_view v;
    FR_TRY(fr_rb_decode(rb, len, &v, err));
    FR_CHECK((size_t)v.length == len, FR_EINVAL, err,
             "table %s: one record batch of %d bytes was expected, got %zu bytes", t->qname,
             v.length, len);
    FR_CHECK(v.schema_id >= 0 && v.schema_id < t->nschemas, FR_EINVAL, err,
             "table %s: the batch names schema %d, but the table has schemas 0 to %d",
             t->qname, v.schema_id, t->nschemas - 1);
    FR_CHECK(v.append_only, FR_EINVAL, err,
             "table %s is a log table: its batches must be append-only", t->qname);
    /* The message's metadata and buffer lengths are checked against the schema without
     * decompressing or decoding values (which would cost more than the write): readers
     * check the values when they decode them, and the CRC, checked by fr_rb_decode above,
     * says the bytes are the ones the client encoded. */
    int64_t rows = 0;
    FR_TRY(fr_ipc_check_batch(v.ipc, (size_t)v.ipc_length, t->schemas[v.schema_id], &rows,
                              NULL, err));
    FR_CHECK(rows == v.record_count, FR_EINVAL, err,
             "table %s: the batch header says %d records but its data has %" PRId64, t->qname,
             v.record_count, rows);
    fr_log *log = NULL;
    FR_TRY(fr_table_get_log(t, bucket, &log, err));
    return fr_table_log_append(log, rb, len, FR_LOG_APPEND_VERIFIED | log_flags, base_offset,
                               pending, err);
}
