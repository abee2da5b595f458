/* server_lookup.c — lookup and prefix_lookup on primary-key tables, batched per bucket.
 *
 * Keys and prefixes arrive as record batches whose IPC message holds the primary key
 * columns (all of them for a lookup, the first n for a prefix lookup), written with the
 * table's schema id; they are decoded against the table's schema projected to those
 * columns. Found rows go back as record batches of the projected columns (uncompressed:
 * lookups are about latency; without statistics, which no one reads), at most
 * LOOKUP_BATCH_ROWS rows each. */
#include "server/server_int.h"

#include <inttypes.h>

#define LOOKUP_BATCH_ROWS 16384

#define NEW(a, T) ((T *)srv_zalloc((a), sizeof(T)))
#define NEW_N(a, T, n) ((T *)srv_zalloc((a), sizeof(T) * (size_t)(n)))

/* The request's projection as column indexes (NULL: every column). */
static int lookup_projection(fr_table *t, const int32_t *proj, size_t n, fr_arena *a,
                             int **out, fr_error *err)
{
    *out = NULL;
    if (n == 0) return FR_OK;
    int ncols = fr_schema_num_fields(fr_table_schema(t));
    int *cols = NEW_N(a, int, n);
    FR_CHECK(cols, FR_ENOMEM, err, "out of memory");
    for (size_t i = 0; i < n; i++) {
        FR_CHECK(proj[i] >= 0 && proj[i] < ncols, FR_EINVAL, err, "projection: column %d is "
                 "not a column of the table (0..%d)", proj[i], ncols - 1);
        cols[i] = proj[i];
    }
    *out = cols;
    return FR_OK;
}

/* Checks the record batch of keys or prefixes: one whole batch in the current schema. */
static int key_view(fr_table *t, const ProtobufCBinaryData *bytes, fr_rb_view *v,
                    fr_error *err)
{
    FR_TRY(fr_rb_decode(bytes->data, bytes->len, v, err));
    FR_CHECK((size_t)v->length == bytes->len, FR_EINVAL, err, "one record batch of %d bytes "
             "was expected, got %zu bytes", v->length, bytes->len);
    const fr_schema *schema = fr_table_schema(t);
    FR_CHECK(v->schema_id == fr_schema_id(schema), FR_ETYPE, err, "the keys name schema %d, "
             "but the table's current schema is %d", v->schema_id, fr_schema_id(schema));
    return FR_OK;
}

/* Decodes the IPC message of v as the first nkey primary key columns. */
static int key_columns(fr_table *t, const fr_rb_view *v, int nkey, fr_batch **out,
                       fr_error *err)
{
    *out = NULL;
    int npk = 0;
    const int *pk = fr_table_primary_key(t, &npk);
    fr_schema *ks = NULL;
    FR_TRY(fr_schema_project(fr_table_schema(t), pk, nkey, &ks, err));
    size_t used = 0;
    int rc = fr_ipc_read_batch(v->ipc, (size_t)v->ipc_length, ks, out, &used, err);
    fr_schema_free(ks);
    FR_TRY(rc);
    int64_t rows = fr_batch_num_rows(*out);
    if (rows != v->record_count) {
        fr_batch_free(*out);
        *out = NULL;
        return fr_fail(err, FR_EINVAL, "the batch header says %d records but its data has "
                       "%" PRId64, v->record_count, rows);
    }
    return FR_OK;
}

/* Appends rows (projected) as record batches of at most LOOKUP_BATCH_ROWS rows. */
static int encode_rows(fr_table *t, const fr_batch *rows, const int *cols, int ncols,
                       fr_buf *out, fr_error *err)
{
    int64_t n = fr_batch_num_rows(rows);
    if (n == 0) return FR_OK;
    fr_batch *p = NULL;
    if (cols) FR_TRY(fr_batch_project(rows, cols, ncols, &p, err));
    const fr_batch *src = cols ? p : rows;
    fr_rb_params params = {
        .schema_id = fr_schema_id(fr_table_schema(t)),
        .compression = FR_COMPRESSION_NONE,
        .writer_id = FR_NO_WRITER,
        .batch_sequence = -1,
        .change_types = NULL,
        .no_stats = true, /* the client decodes every row: statistics would go unread */
    };
    int rc = FR_OK;
    for (int64_t at = 0; rc == FR_OK && at < n; at += LOOKUP_BATCH_ROWS) {
        int64_t len = n - at < LOOKUP_BATCH_ROWS ? n - at : LOOKUP_BATCH_ROWS;
        if (at == 0 && len == n) {
            rc = fr_rb_encode(src, &params, out, err);
            break;
        }
        fr_batch *slice = NULL;
        rc = fr_batch_slice(src, at, len, &slice, err);
        if (rc == FR_OK) rc = fr_rb_encode(slice, &params, out, err);
        fr_batch_free(slice);
    }
    fr_batch_free(p);
    return rc;
}

/* ---- lookup ---------------------------------------------------------------------------- */

static int lookup_bucket(fr_table *t, const Firth__LookupBucket *lb, const int *cols,
                         int ncols, fr_arena *a, Firth__LookupBucketResult *res, fr_buf *buf,
                         fr_error *err)
{
    int npk = 0;
    fr_table_primary_key(t, &npk);
    FR_CHECK(npk > 0, FR_EINVAL, err, "table %s.%s has no primary key to look up",
             fr_table_db(t), fr_table_name(t));
    fr_batch *keys = NULL, *found_rows = NULL;
    fr_rb_view v;
    FR_TRY(key_view(t, &lb->keys, &v, err));
    FR_TRY(key_columns(t, &v, npk, &keys, err));
    int64_t n = fr_batch_num_rows(keys);
    bool *found = fr_calloc((size_t)n + 1, sizeof *found);
    protobuf_c_boolean *flags = NEW_N(a, protobuf_c_boolean, n + 1);
    int rc;
    if (!found || !flags) FR_GOTO(fr_fail(err, FR_ENOMEM, "out of memory"));
    FR_GOTO(fr_table_lookup(t, keys, found, &found_rows, err));
    for (int64_t i = 0; i < n; i++) flags[i] = found[i];
    res->found = flags;
    res->n_found = (size_t)n;
    if (found_rows) FR_GOTO(encode_rows(t, found_rows, cols, ncols, buf, err));
    res->rows.data = buf->data;
    res->rows.len = buf->len;
fail:
    fr_free(found);
    fr_batch_free(keys);
    fr_batch_free(found_rows);
    return rc;
}

int srv_handle_lookup(fr_server *s, srv_job *j, fr_error *err)
{
    Firth__LookupRequest *req = (Firth__LookupRequest *)j->request;
    fr_table *t = NULL;
    FR_TRY(srv_get_table(s, req->path, req->table_id, &t, err));
    fr_arena *a = fr_arena_new(16 << 10);
    fr_buf *bufs = fr_calloc(req->n_buckets + 1, sizeof *bufs);
    int *cols = NULL;
    int rc;
    if (!a || !bufs) FR_GOTO(fr_fail(err, FR_ENOMEM, "out of memory"));
    FR_GOTO(lookup_projection(t, req->projection, req->n_projection, a, &cols, err));
    Firth__LookupResponse resp = FIRTH__LOOKUP_RESPONSE__INIT;
    resp.buckets = NEW_N(a, Firth__LookupBucketResult *, req->n_buckets);
    if (!resp.buckets) FR_GOTO(fr_fail(err, FR_ENOMEM, "out of memory"));
    for (size_t i = 0; i < req->n_buckets; i++) {
        Firth__LookupBucketResult *res = NEW(a, Firth__LookupBucketResult);
        if (!res) FR_GOTO(fr_fail(err, FR_ENOMEM, "out of memory"));
        firth__lookup_bucket_result__init(res);
        res->partition_id = req->buckets[i]->partition_id;
        res->bucket = req->buckets[i]->bucket;
        fr_error berr = {0};
        int brc = lookup_bucket(t, req->buckets[i], cols, (int)req->n_projection, a, res,
                                &bufs[i], &berr);
        if (brc == FR_ENOMEM) FR_GOTO(fr_fail(err, brc, "%s", berr.msg));
        if (brc < 0) {
            res->n_found = 0;
            res->rows.len = 0;
            res->error = srv_item_error(a, &berr);
            if (!res->error) FR_GOTO(fr_fail(err, FR_ENOMEM, "out of memory"));
        }
        resp.buckets[i] = res;
        resp.n_buckets = i + 1;
    }
    /* The rows go out from the buffers they were encoded into (taken by the job). */
    rc = srv_respond_gather(j, &resp.base, bufs, (int)req->n_buckets, err);
    bufs = NULL;
fail:
    for (size_t i = 0; bufs && i < req->n_buckets; i++) fr_buf_free(&bufs[i]);
    fr_free(bufs);
    fr_arena_free(a);
    fr_table_release(t);
    return rc;
}

/* ---- prefix lookup --------------------------------------------------------------------- */

/* Decodes a prefixes batch: its column count is the prefix length, tried from the longest,
 * since only the right number of columns decodes. */
static int decode_prefixes(fr_table *t, const ProtobufCBinaryData *bytes, fr_batch **out,
                           fr_error *err)
{
    int npk = 0;
    fr_table_primary_key(t, &npk);
    FR_CHECK(npk > 0, FR_EINVAL, err, "table %s.%s has no primary key to look up",
             fr_table_db(t), fr_table_name(t));
    fr_rb_view v;
    FR_TRY(key_view(t, bytes, &v, err));
    fr_error longest = {0};
    for (int n = npk; n >= 1; n--) {
        fr_error e = {0};
        int rc = key_columns(t, &v, n, out, &e);
        if (rc == FR_OK) return FR_OK;
        if (rc == FR_ENOMEM) return fr_fail(err, rc, "%s", e.msg);
        if (n == npk) longest = e;
    }
    return fr_fail(err, FR_EINVAL, "the prefixes batch does not hold the first 1 to %d "
                   "primary key columns of table %s.%s (as all of them: %s)", npk,
                   fr_table_db(t), fr_table_name(t), longest.msg);
}

typedef struct prefix_sink {
    fr_table *t;
    fr_buf *buf;
    int64_t rows;
    int64_t bytes_max;
} prefix_sink;

static int on_prefix_rows(void *ctx, fr_batch *batch, fr_error *err)
{
    prefix_sink *ps = ctx;
    ps->rows += fr_batch_num_rows(batch);
    int rc = encode_rows(ps->t, batch, NULL, 0, ps->buf, err);
    fr_batch_free(batch);
    FR_TRY(rc);
    FR_CHECK((int64_t)ps->buf->len <= ps->bytes_max, FR_ELIMIT, err, "the rows found pass "
             "%" PRId64 " bytes, more than a response may hold: narrow the prefix or scan "
             "with SQL", ps->bytes_max);
    return FR_OK;
}

static int prefix_bucket(fr_server *s, fr_table *t, const Firth__PrefixLookupBucket *pb,
                         const int *cols, int ncols, fr_arena *a,
                         Firth__PrefixLookupBucketResult *res, fr_buf *buf, int64_t bytes_max,
                         fr_error *err)
{
    (void)s;
    fr_batch *prefixes = NULL;
    FR_TRY(decode_prefixes(t, &pb->prefixes, &prefixes, err));
    int64_t n = fr_batch_num_rows(prefixes);
    int nprefix = fr_batch_num_columns(prefixes);
    int64_t *counts = NEW_N(a, int64_t, n + 1);
    fr_value *vals = fr_calloc((size_t)nprefix, sizeof *vals);
    int rc = counts && vals ? FR_OK : fr_fail(err, FR_ENOMEM, "out of memory");
    prefix_sink ps = {t, buf, 0, bytes_max};
    for (int64_t row = 0; rc == FR_OK && row < n; row++) {
        for (int k = 0; k < nprefix; k++) fr_column_get(fr_batch_column(prefixes, k), row, &vals[k]);
        int64_t before = ps.rows;
        rc = fr_table_prefix_lookup(t, vals, nprefix, cols, ncols, on_prefix_rows, &ps, err);
        counts[row] = ps.rows - before;
    }
    if (rc == FR_OK) {
        res->row_counts = counts;
        res->n_row_counts = (size_t)n;
        res->rows.data = buf->data;
        res->rows.len = buf->len;
    }
    fr_free(vals);
    fr_batch_free(prefixes);
    return rc;
}

int srv_handle_prefix_lookup(fr_server *s, srv_job *j, fr_error *err)
{
    Firth__PrefixLookupRequest *req = (Firth__PrefixLookupRequest *)j->request;
    fr_table *t = NULL;
    FR_TRY(srv_get_table(s, req->path, req->table_id, &t, err));
    fr_arena *a = fr_arena_new(16 << 10);
    fr_buf *bufs = fr_calloc(req->n_buckets + 1, sizeof *bufs);
    int *cols = NULL;
    int rc;
    int64_t left = s->opts.frame_bytes_max / 4 * 3;
    if (!a || !bufs) FR_GOTO(fr_fail(err, FR_ENOMEM, "out of memory"));
    FR_GOTO(lookup_projection(t, req->projection, req->n_projection, a, &cols, err));
    Firth__PrefixLookupResponse resp = FIRTH__PREFIX_LOOKUP_RESPONSE__INIT;
    resp.buckets = NEW_N(a, Firth__PrefixLookupBucketResult *, req->n_buckets);
    if (!resp.buckets) FR_GOTO(fr_fail(err, FR_ENOMEM, "out of memory"));
    for (size_t i = 0; i < req->n_buckets; i++) {
        Firth__PrefixLookupBucketResult *res = NEW(a, Firth__PrefixLookupBucketResult);
        if (!res) FR_GOTO(fr_fail(err, FR_ENOMEM, "out of memory"));
        firth__prefix_lookup_bucket_result__init(res);
        res->partition_id = req->buckets[i]->partition_id;
        res->bucket = req->buckets[i]->bucket;
        fr_error berr = {0};
        int brc = prefix_bucket(s, t, req->buckets[i], cols, (int)req->n_projection, a, res,
                                &bufs[i], left, &berr);
        if (brc == FR_ENOMEM) FR_GOTO(fr_fail(err, brc, "%s", berr.msg));
        if (brc < 0) {
            res->n_row_counts = 0;
            res->rows.len = 0;
            res->error = srv_item_error(a, &berr);
            if (!res->error) FR_GOTO(fr_fail(err, FR_ENOMEM, "out of memory"));
        } else {
            left -= (int64_t)bufs[i].len;
        }
        resp.buckets[i] = res;
        resp.n_buckets = i + 1;
    }
    rc = srv_respond_gather(j, &resp.base, bufs, (int)req->n_buckets, err);
    bufs = NULL;
fail:
    for (size_t i = 0; bufs && i < req->n_buckets; i++) fr_buf_free(&bufs[i]);
    fr_free(bufs);
    fr_arena_free(a);
    fr_table_release(t);
    return rc;
}
