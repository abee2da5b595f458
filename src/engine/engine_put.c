/* engine_put.c — the primary-key side of a table: upserts and deletes routed to the KV
 * store of their partition and bucket, point lookups (routed the same way, answered in the
 * order asked), prefix lookups (one partition, one bucket, a RocksDB prefix scan) and reads
 * of the current state over every partition and bucket, skipping partitions a filter rules
 * out.
 *
 * Routing: a row's partition is the one named by the canonical text of its partition
 * columns (engine_partition.c); its bucket is murmur3_32 over the canonical bytes of its
 * bucket-key values mod bucket.num, exactly as for log tables (engine_write.c), so that
 * writes and lookups of a key agree. A batch bound for one partition and bucket is handed
 * to the KV store as it is; others are split by (partition, bucket) keeping the rows'
 * order within each part.
 *
 * Invariants: nothing is written before every row of the batch has been checked and routed
 * (so a bad row fails the batch with nothing applied); parts are written in order of
 * (partition, bucket); every partition touched is held (retained) while it is used. */
#include "engine/engine_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#define FR_STATE_BATCH_ROWS 4096

/* ---- routing --------------------------------------------------------------------------- */

static int bucket_of_values(const fr_table *t, const fr_value *vals, fr_buf *scratch,
                            fr_error *err)
{
    if (t->conf.nbuckets == 1) return 0;
    fr_buf_reset(scratch);
    for (int k = 0; k < t->conf.nbucket_key; k++)
        FR_TRY(fr_bucket_value_bytes(&vals[k], vals[k].is_null, scratch, err));
    return (int)(fr_murmur3_32(scratch->data, scratch->len, 0) % (uint32_t)t->conf.nbuckets);
}

/* Where each row of a batch goes: a partition (an index into parts) and a bucket. */
typedef struct route {
    fr_tpart **parts; /* partitions touched, retained (one NULL entry when unpartitioned) */
    int nparts;
    int32_t *part;    /* per row; -1: the row goes nowhere (a lookup of a missing partition) */
    int32_t *bucket;  /* per row */
    int64_t rows;
    bool one;         /* every row goes to the same place */
} route;

static void route_free(route *r)
{
    for (int i = 0; i < r->nparts; i++) fr_tpart_release(r->parts[i]);
    fr_free(r->parts);
    fr_free(r->part);
    fr_free(r->bucket);
    memset(r, 0, sizeof *r);
}

static int route_init(route *r, int64_t rows, fr_error *err)
{
    memset(r, 0, sizeof *r);
    r->rows = rows;
    r->part = fr_malloc((size_t)(rows > 0 ? rows : 1) * sizeof *r->part);
    r->bucket = fr_malloc((size_t)(rows > 0 ? rows : 1) * sizeof *r->bucket);
    if (!r->part || !r->bucket) {
        route_free(r);
        return fr_fail(err, FR_ENOMEM, "out of memory routing %" PRId64 " rows", rows);
    }
    return FR_OK;
}

/* The index in r->parts of p (taking the caller's reference), added when new. */
static int route_part_index(route *r, fr_tpart *p, fr_error *err)
{
    for (int i = 0; i < r->nparts; i++) {
        if (r->parts[i] == p) {
            fr_tpart_release(p);
            return i;
        }
    }
    fr_tpart **parts = fr_realloc(r->parts, (size_t)(r->nparts + 1) * sizeof *parts);
    if (!parts) {
        fr_tpart_release(p);
        return fr_fail(err, FR_ENOMEM, "out of memory routing rows");
    }
    r->parts = parts;
    parts[r->nparts] = p;
    return r->nparts++;
}

/* Which column of the routed batch holds each partition key and each bucket-key column. */
typedef struct route_cols {
    const int *part;
    const int *bucket;
} route_cols;

/* Canonical partition texts of a row into texts (reset first); values[k] point into it.
 * FR_EINVAL for a NULL or a value that cannot name a partition. */
static int row_partition_texts(const fr_table *t, const fr_batch *b, const int *cols,
                               int64_t row, fr_buf *texts, char **values, fr_error *err)
{
    fr_buf_reset(texts);
    for (int k = 0; k < t->conf.npart; k++) {
        const fr_column *c = fr_batch_column(b, cols[k]);
        FR_CHECK(!fr_column_is_null(c, row), FR_EINVAL, err,
                 "table %s: row %" PRId64 " has NULL in partition column '%s'; every row of a "
                 "partitioned table needs a value there", t->qname, row + 1,
                 fr_schema_field(fr_table_schema(t), t->conf.part[k])->name);
        fr_value v;
        fr_column_get(c, row, &v);
        values[k] = (char *)(uintptr_t)texts->len; /* an offset until texts stops moving */
        FR_TRY(fr_partition_value_text(t, k, &v, true, texts, err));
    }
    for (int k = 0; k < t->conf.npart; k++)
        values[k] = (char *)texts->data + (uintptr_t)values[k];
    return FR_OK;
}

/* Before any partition is created for a batch: every row names a partition that exists or
 * may be created now, so that a bad row fails the batch with nothing created. */
static int check_new_partitions(fr_table *t, const fr_batch *b, const int *cols, fr_error *err)
{
    fr_buf texts, prev;
    fr_buf_init(&texts);
    fr_buf_init(&prev);
    char **values = fr_calloc((size_t)t->conf.npart + 1, sizeof *values);
    int rc = values ? FR_OK : fr_fail(err, FR_ENOMEM, "out of memory routing rows");
    int64_t now = fr_now_ms();
    for (int64_t row = 0; rc == FR_OK && row < fr_batch_num_rows(b); row++) {
        rc = row_partition_texts(t, b, cols, row, &texts, values, err);
        if (rc < 0 || (prev.len == texts.len && memcmp(prev.data, texts.data, texts.len) == 0))
            continue;
        fr_buf_reset(&prev);
        rc = fr_buf_append(&prev, texts.data, texts.len, err);
        fr_tpart *p = rc == FR_OK ? fr_table_find_part(t, values) : NULL;
        if (p) {
            fr_tpart_release(p);
            continue;
        }
        if (rc == FR_OK && t->conf.dynamic_partitions)
            rc = fr_autop_check_new(t, values, now, err);
        /* Without dynamic creation, the routing pass refuses the row with its message. */
    }
    fr_buf_free(&texts);
    fr_buf_free(&prev);
    fr_free(values);
    return rc;
}

/* What routing keeps from row to row: text buffers, the previous row's partition texts and
 * index (rows of one partition tend to come together), the values of the bucket key. */
typedef struct route_scratch {
    fr_buf texts, prev, bytes;
    char **values;
    fr_value *keyvals;
    int prev_part; /* -2: none */
} route_scratch;

static void scratch_free(route_scratch *s)
{
    fr_buf_free(&s->texts);
    fr_buf_free(&s->prev);
    fr_buf_free(&s->bytes);
    fr_free(s->values);
    fr_free(s->keyvals);
}

static int scratch_init(const fr_table *t, route_scratch *s, fr_error *err)
{
    memset(s, 0, sizeof *s);
    fr_buf_init(&s->texts);
    fr_buf_init(&s->prev);
    fr_buf_init(&s->bytes);
    s->prev_part = -2;
    s->values = fr_calloc((size_t)t->conf.npart + 1, sizeof *s->values);
    s->keyvals = fr_calloc((size_t)t->conf.nbucket_key + 1, sizeof *s->keyvals);
    FR_CHECK(s->values && s->keyvals, FR_ENOMEM, err, "out of memory routing rows");
    return FR_OK;
}

/* The partition of one row: *part an index into r->parts, or -1 when the row can go
 * nowhere (not create: a partition that does not exist or cannot). */
static int row_partition(fr_table *t, const fr_batch *b, const int *cols, int64_t row,
                         bool create, route *r, route_scratch *s, int *part, fr_error *err)
{
    int rc = row_partition_texts(t, b, cols, row, &s->texts, s->values, err);
    if (rc == FR_EINVAL && !create) { /* a key no partition can hold: not found */
        if (err) fr_error_clear(err);
        s->prev_part = -2;
        *part = -1;
        return FR_OK;
    }
    FR_TRY(rc);
    if (s->prev_part != -2 && s->texts.len == s->prev.len &&
        memcmp(s->texts.data, s->prev.data, s->texts.len) == 0) {
        *part = s->prev_part;
        return FR_OK;
    }
    fr_tpart *p = NULL;
    if (create) FR_TRY(fr_table_partition_for_write(t, s->values, &p, err));
    else p = fr_table_find_part(t, s->values);
    *part = p ? route_part_index(r, p, err) : -1;
    FR_TRY(*part < -1 ? *part : FR_OK);
    fr_buf_reset(&s->prev);
    s->prev_part = *part;
    return fr_buf_append(&s->prev, s->texts.data, s->texts.len, err);
}

static int row_bucket_of(fr_table *t, const fr_batch *b, const int *cols, int64_t row,
                         route_scratch *s, int *bucket, fr_error *err)
{
    *bucket = 0;
    if (t->conf.nbuckets == 1 || !cols) return FR_OK;
    for (int k = 0; k < t->conf.nbucket_key; k++)
        fr_column_get(fr_batch_column(b, cols[k]), row, &s->keyvals[k]);
    int rc = bucket_of_values(t, s->keyvals, &s->bytes, err);
    FR_TRY(rc);
    *bucket = rc;
    return FR_OK;
}

/* Routes every row of b. create: partitions that do not exist are created (or the call
 * fails); otherwise their rows get part -1. */
static int route_rows(fr_table *t, const fr_batch *b, const route_cols *rc_cols, bool create,
                      route *r, fr_error *err)
{
    int64_t rows = fr_batch_num_rows(b);
    if (create && t->conf.npart > 0) FR_TRY(check_new_partitions(t, b, rc_cols->part, err));
    FR_TRY(route_init(r, rows, err));
    route_scratch s;
    int rc = scratch_init(t, &s, err);
    r->one = true;
    if (rc == FR_OK && t->conf.npart == 0) { /* one NULL entry: the table's own buckets */
        r->parts = fr_calloc(1, sizeof *r->parts);
        r->nparts = r->parts ? 1 : 0;
        if (!r->parts) rc = fr_fail(err, FR_ENOMEM, "out of memory routing rows");
    }
    for (int64_t row = 0; rc == FR_OK && row < rows; row++) {
        int part = 0, bucket = 0;
        if (t->conf.npart > 0)
            rc = row_partition(t, b, rc_cols->part, row, create, r, &s, &part, err);
        if (rc == FR_OK && part >= 0)
            rc = row_bucket_of(t, b, rc_cols->bucket, row, &s, &bucket, err);
        r->part[row] = part;
        r->bucket[row] = bucket;
        if (row > 0 && (part != r->part[0] || bucket != r->bucket[0])) r->one = false;
    }
    scratch_free(&s);
    if (rc < 0) route_free(r);
    return rc;
}

int fr_table_route_partitions(fr_table *t, const fr_batch *b, fr_tpart ***parts,
                              int *nparts, int32_t **part_of, fr_error *err)
{
    route_cols cols = {t->conf.part, NULL};
    route r;
    FR_TRY(route_rows(t, b, &cols, true, &r, err));
    *parts = r.parts;
    *nparts = r.nparts;
    *part_of = r.part;
    r.parts = NULL;
    r.nparts = 0;
    r.part = NULL;
    route_free(&r);
    return FR_OK;
}

typedef struct row_ref {
    int32_t part, bucket;
    int64_t row;
} row_ref;

static int row_ref_cmp(const void *a, const void *b)
{
    const row_ref *x = a, *y = b;
    if (x->part != y->part) return x->part < y->part ? -1 : 1;
    if (x->bucket != y->bucket) return x->bucket < y->bucket ? -1 : 1;
    return x->row < y->row ? -1 : x->row > y->row;
}

/* The routed rows sorted by (partition, bucket, row), without those that go nowhere. */
static int route_order(const route *r, row_ref **out, int64_t *n, fr_error *err)
{
    row_ref *refs = fr_malloc((size_t)(r->rows > 0 ? r->rows : 1) * sizeof *refs);
    FR_CHECK(refs, FR_ENOMEM, err, "out of memory splitting %" PRId64 " rows", r->rows);
    int64_t k = 0;
    for (int64_t i = 0; i < r->rows; i++)
        if (r->part[i] >= 0) refs[k++] = (row_ref){r->part[i], r->bucket[i], i};
    qsort(refs, (size_t)k, sizeof *refs, row_ref_cmp);
    *out = refs;
    *n = k;
    return FR_OK;
}

/* ---- puts ------------------------------------------------------------------------------ */

static int check_put(fr_table *t, const fr_batch *rows, const uint8_t *ops, fr_error *err)
{
    FR_CHECK(t->conf.npk > 0, FR_EINVAL, err, "table %s has no primary key: write with "
             "appends instead of upserts", t->qname);
    FR_CHECK(!atomic_load(&t->dropped), FR_ENOTFOUND, err, "table %s was dropped", t->qname);
    FR_TRY(fr_table_check_types(t, rows, err));
    for (int k = 0; k < t->conf.npk; k++) {
        const fr_column *c = fr_batch_column(rows, t->conf.pk[k]);
        FR_CHECK(c->null_count == 0, FR_EINVAL, err,
                 "table %s: primary key column '%s' is NULL in %" PRId64 " row%s; primary key "
                 "columns take no NULL", t->qname,
                 fr_schema_field(fr_table_schema(t), t->conf.pk[k])->name, c->null_count,
                 c->null_count == 1 ? "" : "s");
    }
    for (int64_t i = 0; ops && i < fr_batch_num_rows(rows); i++)
        FR_CHECK(ops[i] == FR_KV_UPSERT || ops[i] == FR_KV_DELETE, FR_EINVAL, err,
                 "table %s: row %" PRId64 " has operation %d; give 0 (upsert) or 1 (delete)",
                 t->qname, i + 1, ops[i]);
    return FR_OK;
}


static int put_part(fr_table *t, fr_tpart *p, int bucket, const fr_batch *rows,
                    const uint8_t *ops, const int *target, int ntarget, int64_t writer_id,
                    int32_t seq, int64_t *changed, fr_error *err)
{
    fr_kv *kv = NULL;
    FR_TRY(fr_tpart_kv(t, p, bucket, false, &kv, err));
    fr_kv_write_result res = {0};
    int rc = fr_kv_write(kv, rows, ops, target, ntarget, writer_id, seq, &res, err);
    if (rc == FR_EDUPLICATE) {
        if (err) fr_error_clear(err);
        return FR_OK;
    }
    FR_TRY(rc);
    *changed += res.rows_changed;
    return FR_OK;
}

/* Writes the rows of refs[from, to) (one partition and bucket). */
static int put_group(fr_table *t, const route *r, const fr_batch *rows, const uint8_t *ops,
                     const row_ref *refs, int64_t n, const int *target, int ntarget,
                     int64_t writer_id, int32_t seq, int64_t *changed, fr_error *err)
{
    int64_t *idx = fr_malloc((size_t)n * sizeof *idx);
    uint8_t *gops = ops ? fr_malloc((size_t)n) : NULL;
    FR_CHECK(idx && (!ops || gops), FR_ENOMEM, err, "out of memory splitting rows");
    for (int64_t i = 0; i < n; i++) {
        idx[i] = refs[i].row;
        if (gops) gops[i] = ops[refs[i].row];
    }
    fr_batch *part = NULL;
    int rc = fr_engine_take(rows, idx, n, &part, err);
    if (rc == FR_OK)
        rc = put_part(t, r->parts[refs[0].part], refs[0].bucket, part, gops, target, ntarget,
                      writer_id, seq, changed, err);
    fr_batch_free(part);
    fr_free(idx);
    fr_free(gops);
    return rc;
}

int fr_table_put(fr_table *t, const fr_batch *rows, const uint8_t *ops,
                 const int *target_columns, int ntarget, int64_t writer_id, int32_t seq,
                 int64_t *changed, fr_error *err)
{
    int64_t sink = 0;
    if (!changed) changed = &sink;
    *changed = 0;
    FR_TRY(check_put(t, rows, ops, err));
    if (fr_batch_num_rows(rows) == 0) return FR_OK;
    route_cols cols = {t->conf.part, t->conf.bucket_key};
    route r;
    FR_TRY(route_rows(t, rows, &cols, true, &r, err));
    int rc = FR_OK;
    if (r.one) {
        rc = put_part(t, r.parts[r.part[0]], r.bucket[0], rows, ops, target_columns, ntarget,
                      writer_id, seq, changed, err);
        route_free(&r);
        return rc;
    }
    row_ref *refs = NULL;
    int64_t n = 0;
    rc = route_order(&r, &refs, &n, err);
    for (int64_t from = 0; rc == FR_OK && from < n;) {
        int64_t to = from + 1;
        while (to < n && refs[to].part == refs[from].part && refs[to].bucket == refs[from].bucket)
            to++;
        rc = put_group(t, &r, rows, ops, refs + from, to - from, target_columns, ntarget,
                       writer_id, seq, changed, err);
        from = to;
    }
    fr_free(refs);
    route_free(&r);
    return rc;
}

/* ---- lookups --------------------------------------------------------------------------- */

/* The position of a table column in the primary key, or -1. */
static int pk_position(const fr_table *t, int col)
{
    for (int k = 0; k < t->conf.npk; k++)
        if (t->conf.pk[k] == col) return k;
    return -1;
}

static int check_keys(fr_table *t, const fr_batch *keys, fr_error *err)
{
    FR_CHECK(t->conf.npk > 0, FR_EINVAL, err, "table %s has no primary key to look up",
             t->qname);
    const fr_schema *ks = fr_batch_schema(keys), *ts = fr_table_schema(t);
    FR_CHECK(fr_schema_num_fields(ks) == t->conf.npk, FR_EINVAL, err,
             "table %s: a lookup gives the %d primary key columns, not %d", t->qname,
             t->conf.npk, fr_schema_num_fields(ks));
    for (int k = 0; k < t->conf.npk; k++) {
        const fr_field *want = fr_schema_field(ts, t->conf.pk[k]);
        const fr_field *got = fr_schema_field(ks, k);
        if (!fr_type_equal(&want->type, &got->type)) {
            char a[64], b[64];
            fr_type_format(&want->type, false, a, sizeof a);
            fr_type_format(&got->type, false, b, sizeof b);
            return fr_fail(err, FR_ETYPE, "table %s: key column %d '%s' is %s but the lookup "
                           "gives %s", t->qname, k + 1, want->name, a, b);
        }
    }
    return FR_OK;
}

/* Rows whose key has a NULL in a routing column go nowhere (a NULL key is never found). */
static int route_keys_cols(fr_table *t, const fr_batch *keys, const route_cols *cols,
                           route *r, fr_error *err)
{
    int64_t n = fr_batch_num_rows(keys);
    bool nulls = false;
    for (int k = 0; k < t->conf.npk; k++) nulls |= fr_batch_column(keys, k)->null_count > 0;
    if (!nulls) return route_rows(t, keys, cols, false, r, err);
    /* Route the rows without NULLs only. */
    int64_t *idx = fr_malloc((size_t)(n > 0 ? n : 1) * sizeof *idx), m = 0;
    int rc = idx ? FR_OK : fr_fail(err, FR_ENOMEM, "out of memory routing keys");
    for (int64_t i = 0; rc == FR_OK && i < n; i++) {
        bool any = false;
        for (int k = 0; k < t->conf.npk; k++) any |= fr_column_is_null(fr_batch_column(keys, k), i);
        if (!any) idx[m++] = i;
    }
    fr_batch *sub = NULL;
    route rs = {0};
    if (rc == FR_OK) rc = fr_engine_take(keys, idx, m, &sub, err);
    if (rc == FR_OK) rc = route_rows(t, sub, cols, false, &rs, err);
    if (rc == FR_OK) rc = route_init(r, n, err);
    if (rc == FR_OK) {
        for (int64_t i = 0; i < n; i++) r->part[i] = -1;
        for (int64_t j = 0; j < m; j++) {
            r->part[idx[j]] = rs.part[j];
            r->bucket[idx[j]] = rs.bucket[j];
        }
        r->parts = rs.parts;
        r->nparts = rs.nparts;
        rs.parts = NULL;
        rs.nparts = 0;
        r->one = false;
    }
    route_free(&rs);
    fr_batch_free(sub);
    fr_free(idx);
    return rc;
}

static int route_keys(fr_table *t, const fr_batch *keys, route *r, fr_error *err)
{
    int *part = fr_calloc((size_t)t->conf.npart + 1, sizeof *part);
    int *bucket = fr_calloc((size_t)t->conf.nbucket_key + 1, sizeof *bucket);
    int rc = part && bucket ? FR_OK : fr_fail(err, FR_ENOMEM, "out of memory routing keys");
    for (int k = 0; rc == FR_OK && k < t->conf.npart; k++)
        part[k] = pk_position(t, t->conf.part[k]);
    for (int k = 0; rc == FR_OK && k < t->conf.nbucket_key; k++)
        bucket[k] = pk_position(t, t->conf.bucket_key[k]);
    route_cols cols = {part, bucket};
    if (rc == FR_OK) rc = route_keys_cols(t, keys, &cols, r, err);
    fr_free(part);
    fr_free(bucket);
    return rc;
}

/* Appends row `row` of b to bld. */
static int append_row(fr_builder *bld, const fr_batch *b, int64_t row, fr_error *err)
{
    for (int c = 0; c < fr_batch_num_columns(b); c++) {
        const fr_column *col = fr_batch_column(b, c);
        if (fr_column_is_null(col, row)) {
            FR_TRY(fr_builder_append_null(bld, c, err));
            continue;
        }
        fr_value v;
        fr_column_get(col, row, &v);
        FR_TRY(fr_builder_append(bld, c, &v, err));
    }
    return FR_OK;
}

/* Looks up the keys of one group; found rows are appended to outs[g]. */
static int lookup_group(fr_table *t, const route *r, const fr_batch *keys, const row_ref *refs,
                        int64_t n, bool *found, fr_batch **out, fr_error *err)
{
    fr_kv *kv = NULL;
    FR_TRY(fr_tpart_kv(t, r->parts[refs[0].part], refs[0].bucket, true, &kv, err));
    if (!kv) { /* the bucket was never written */
        for (int64_t i = 0; i < n; i++) found[refs[i].row] = false;
        *out = NULL;
        return FR_OK;
    }
    int64_t *idx = fr_malloc((size_t)n * sizeof *idx);
    bool *gfound = fr_calloc((size_t)n, sizeof *gfound);
    int rc = idx && gfound ? FR_OK : fr_fail(err, FR_ENOMEM, "out of memory looking up keys");
    for (int64_t i = 0; rc == FR_OK && i < n; i++) idx[i] = refs[i].row;
    fr_batch *sub = NULL;
    if (rc == FR_OK) rc = fr_engine_take(keys, idx, n, &sub, err);
    if (rc == FR_OK) rc = fr_kv_lookup(kv, sub, gfound, out, err);
    for (int64_t i = 0; rc == FR_OK && i < n; i++) found[refs[i].row] = gfound[i];
    fr_batch_free(sub);
    fr_free(idx);
    fr_free(gfound);
    return rc;
}

/* Puts the found rows of every group back in the order of the keys. */
static int lookup_gather(fr_table *t, const row_ref *refs, int64_t n, const int64_t *group_of,
                         fr_batch **outs, const bool *found, int64_t nkeys, fr_batch **out,
                         fr_error *err)
{
    /* row_in_group[i]: the index of key i's row in its group's result. */
    int64_t *pos = fr_calloc((size_t)(nkeys > 0 ? nkeys : 1), sizeof *pos);
    int64_t *seen = fr_calloc((size_t)(n > 0 ? n : 1), sizeof *seen);
    fr_builder *bld = NULL;
    int rc = pos && seen ? FR_OK : fr_fail(err, FR_ENOMEM, "out of memory gathering rows");
    for (int64_t i = 0; rc == FR_OK && i < n; i++) {
        int64_t row = refs[i].row;
        if (found[row]) pos[row] = seen[group_of[i]]++;
    }
    if (rc == FR_OK) rc = fr_builder_new(fr_table_schema(t), &bld, err);
    int64_t *gi = fr_calloc((size_t)(nkeys > 0 ? nkeys : 1), sizeof *gi);
    if (rc == FR_OK && !gi) rc = fr_fail(err, FR_ENOMEM, "out of memory gathering rows");
    for (int64_t i = 0; rc == FR_OK && i < n; i++) gi[refs[i].row] = group_of[i];
    for (int64_t row = 0; rc == FR_OK && row < nkeys; row++)
        if (found[row]) rc = append_row(bld, outs[gi[row]], pos[row], err);
    if (rc == FR_OK) rc = fr_builder_finish(bld, out, err);
    fr_builder_free(bld);
    fr_free(gi);
    fr_free(pos);
    fr_free(seen);
    return rc;
}

int fr_table_lookup(fr_table *t, const fr_batch *keys, bool *found, fr_batch **out,
                    fr_error *err)
{
    FR_TRY(check_keys(t, keys, err));
    int64_t nkeys = fr_batch_num_rows(keys);
    for (int64_t i = 0; i < nkeys; i++) found[i] = false;
    route r;
    FR_TRY(route_keys(t, keys, &r, err));
    int rc = FR_OK;
    if (r.one && nkeys > 0 && r.part[0] >= 0) {
        fr_kv *kv = NULL;
        rc = fr_tpart_kv(t, r.parts[r.part[0]], r.bucket[0], true, &kv, err);
        if (rc == FR_OK && kv) rc = fr_kv_lookup(kv, keys, found, out, err);
        else if (rc == FR_OK) rc = lookup_gather(t, NULL, 0, NULL, NULL, found, nkeys, out, err);
        route_free(&r);
        return rc;
    }
    row_ref *refs = NULL;
    int64_t n = 0, ngroups = 0;
    rc = route_order(&r, &refs, &n, err);
    int64_t *group_of = rc == FR_OK ? fr_malloc((size_t)(n > 0 ? n : 1) * sizeof *group_of) : NULL;
    fr_batch **outs = rc == FR_OK ? fr_calloc((size_t)(n > 0 ? n : 1), sizeof *outs) : NULL;
    if (rc == FR_OK && (!group_of || !outs))
        rc = fr_fail(err, FR_ENOMEM, "out of memory looking up %" PRId64 " keys", nkeys);
    for (int64_t from = 0; rc == FR_OK && from < n; ngroups++) {
        int64_t to = from + 1;
        while (to < n && refs[to].part == refs[from].part && refs[to].bucket == refs[from].bucket)
            to++;
        for (int64_t i = from; i < to; i++) group_of[i] = ngroups;
        rc = lookup_group(t, &r, keys, refs + from, to - from, found, &outs[ngroups], err);
        from = to;
    }
    if (rc == FR_OK) rc = lookup_gather(t, refs, n, group_of, outs, found, nkeys, out, err);
    for (int64_t g = 0; outs && g < ngroups; g++) fr_batch_free(outs[g]);
    fr_free(outs);
    fr_free(group_of);
    fr_free(refs);
    route_free(&r);
    return rc;
}

/* ---- prefix lookups -------------------------------------------------------------------- */

static int check_prefix(fr_table *t, const fr_value *prefix, int nprefix, fr_error *err)
{
    FR_CHECK(t->conf.npk > 0, FR_EINVAL, err, "table %s has no primary key to look up",
             t->qname);
    const fr_schema *s = fr_table_schema(t);
    bool covered = nprefix >= 1 && nprefix <= t->conf.npk;
    for (int k = 0; covered && k < t->conf.npart; k++) {
        int pos = pk_position(t, t->conf.part[k]);
        covered = pos >= 0 && pos < nprefix;
    }
    for (int k = 0; covered && k < t->conf.nbucket_key; k++) {
        int pos = pk_position(t, t->conf.bucket_key[k]);
        covered = pos >= 0 && pos < nprefix;
    }
    if (!covered) {
        char need[512] = "";
        size_t used = 0;
        int last = -1;
        for (int k = 0; k < t->conf.npart; k++) {
            int pos = pk_position(t, t->conf.part[k]);
            if (pos > last) last = pos;
        }
        for (int k = 0; k < t->conf.nbucket_key; k++) {
            int pos = pk_position(t, t->conf.bucket_key[k]);
            if (pos > last) last = pos;
        }
        for (int k = 0; k <= last && used < sizeof need; k++) {
            int w = snprintf(need + used, sizeof need - used, "%s%s", k ? ", " : "",
                             fr_schema_field(s, t->conf.pk[k])->name);
            if (w > 0) used += (size_t)w;
        }
        return fr_fail(err, FR_EINVAL, "table %s: a prefix lookup gives %d of the %d primary "
                       "key columns but must cover the partition keys and the bucket key: "
                       "give at least %s", t->qname, nprefix, t->conf.npk, need);
    }
    for (int k = 0; k < nprefix; k++) {
        const fr_field *f = fr_schema_field(s, t->conf.pk[k]);
        FR_CHECK(!prefix[k].is_null, FR_EINVAL, err,
                 "table %s: the prefix value of key column '%s' is NULL", t->qname, f->name);
    }
    return FR_OK;
}

/* A prefix value cast to its column's type (arena memory for strings). */
static int prefix_value(fr_table *t, const fr_value *v, int col, fr_arena *arena,
                        fr_value *out, fr_error *err)
{
    const fr_type *ty = &fr_schema_field(fr_table_schema(t), col)->type;
    if (fr_type_equal(&v->type, ty)) {
        *out = *v;
        return FR_OK;
    }
    return fr_value_cast(v, ty, arena, out, err);
}

static int prefix_route(fr_table *t, const fr_value *prefix, fr_tpart **part, int *bucket,
                        fr_error *err)
{
    fr_arena *arena = fr_arena_new(1024);
    FR_CHECK(arena, FR_ENOMEM, err, "out of memory");
    fr_buf texts, scratch;
    fr_buf_init(&texts);
    fr_buf_init(&scratch);
    char **values = fr_calloc((size_t)t->conf.npart + 1, sizeof *values);
    size_t *at = fr_calloc((size_t)t->conf.npart + 1, sizeof *at);
    fr_value *vals = fr_calloc((size_t)t->conf.nbucket_key + 1, sizeof *vals);
    int rc = values && at && vals ? FR_OK : fr_fail(err, FR_ENOMEM, "out of memory");
    *part = NULL;
    for (int k = 0; rc == FR_OK && k < t->conf.npart; k++) {
        int col = t->conf.part[k];
        fr_value v;
        rc = prefix_value(t, &prefix[pk_position(t, col)], col, arena, &v, err);
        at[k] = texts.len;
        if (rc == FR_OK) rc = fr_value_format(&v, &texts, err);
        if (rc == FR_OK) rc = fr_buf_append(&texts, "", 1, err);
    }
    for (int k = 0; k < t->conf.npart; k++) values[k] = (char *)texts.data + at[k];
    if (rc == FR_OK && t->conf.npart > 0) *part = fr_table_find_part(t, values);
    for (int k = 0; rc == FR_OK && k < t->conf.nbucket_key; k++) {
        int col = t->conf.bucket_key[k];
        rc = prefix_value(t, &prefix[pk_position(t, col)], col, arena, &vals[k], err);
    }
    if (rc == FR_OK) {
        rc = bucket_of_values(t, vals, &scratch, err);
        if (rc >= 0) {
            *bucket = rc;
            rc = FR_OK;
        }
    }
    fr_buf_free(&texts);
    fr_buf_free(&scratch);
    fr_arena_free(arena);
    fr_free(values);
    fr_free(at);
    fr_free(vals);
    return rc;
}

int fr_table_prefix_lookup(fr_table *t, const fr_value *prefix, int nprefix,
                           const int *columns, int ncolumns, fr_kv_rows_fn fn, void *ctx,
                           fr_error *err)
{
    FR_TRY(check_prefix(t, prefix, nprefix, err));
    fr_tpart *p = NULL;
    int bucket = 0;
    FR_TRY(prefix_route(t, prefix, &p, &bucket, err));
    if (t->conf.npart > 0 && !p) return FR_OK; /* no such partition: no rows */
    fr_kv *kv = NULL;
    int rc = fr_tpart_kv(t, p, bucket, true, &kv, err);
    if (rc == FR_OK && kv)
        rc = fr_kv_prefix_lookup(kv, prefix, nprefix, columns, ncolumns, fn, ctx, err);
    fr_tpart_release(p);
    return rc;
}

/* ---- the current state ----------------------------------------------------------------- */

typedef struct state_ctx {
    fr_kv_rows_fn fn;
    void *ctx;
    bool stopped; /* the caller's function asked to stop */
} state_ctx;

static int on_state_rows(void *arg, fr_batch *batch, fr_error *err)
{
    state_ctx *s = arg;
    int rc = s->fn(s->ctx, batch, err);
    if (rc > 0) s->stopped = true;
    return rc;
}

static int scan_state_part(fr_table *t, fr_tpart *p, const int *columns, int ncolumns,
                           const fr_expr *filter, state_ctx *s, fr_error *err)
{
    for (int b = 0; b < t->conf.nbuckets && !s->stopped; b++) {
        fr_kv *kv = NULL;
        FR_TRY(fr_tpart_kv(t, p, b, true, &kv, err));
        if (!kv) continue;
        FR_TRY(fr_kv_scan(kv, columns, ncolumns, filter, FR_STATE_BATCH_ROWS, on_state_rows, s,
                          err));
    }
    return FR_OK;
}

int fr_table_scan_state(fr_table *t, const int *columns, int ncolumns, const fr_expr *filter,
                        fr_kv_rows_fn fn, void *ctx, fr_error *err)
{
    FR_CHECK(t->conf.npk > 0, FR_EINVAL, err, "table %s has no primary key: its rows are in "
             "its log (scan it)", t->qname);
    state_ctx s = {.fn = fn, .ctx = ctx};
    if (t->conf.npart == 0) return scan_state_part(t, NULL, columns, ncolumns, filter, &s, err);
    fr_tpart **parts = NULL;
    int n = 0;
    FR_TRY(fr_table_parts_snapshot(t, &parts, &n, err));
    int rc = FR_OK;
    for (int i = 0; rc == FR_OK && i < n && !s.stopped; i++)
        if (fr_tpart_may_match(t, parts[i], filter))
            rc = scan_state_part(t, parts[i], columns, ncolumns, filter, &s, err);
    fr_tparts_release(parts, n);
    return rc;
}
