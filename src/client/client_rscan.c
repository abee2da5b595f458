/* client_rscan.c — reading a table's log over the native protocol: the fetch plan (which
 * columns to ask for, the filter bound to them), decoding the record batches of a fetch into
 * projected, filtered batches with each row's offset and change type, and firth_scan /
 * firth_scan_changelog for a remote client (every bucket from its start position to the end
 * it had when the scan began).
 *
 * The server leaves out whole batches that the filter cannot match (by their statistics) but
 * never filters rows (docs/PROTOCOL.md, fetch_log): the client asks for the filter's columns
 * too, evaluates the filter on the rows, and drops the columns it added. */
#include "client/client_int.h"

#include <stdio.h>

void fr_rfetch_free(fr_rfetch *f)
{
    fr_free(f->cols);
    fr_schema_free(f->fetched);
    fr_schema_free(f->wanted);
    fr_free(f->filter_text);
    fr_arena_free(f->arena);
    memset(f, 0, sizeof *f);
}

int fr_rfetch_init(fr_rfetch *f, const fr_ctable *t, const char *columns, const char *where,
                   fr_error *err)
{
    memset(f, 0, sizeof *f);
    int nf = fr_schema_num_fields(t->schema);
    f->cols = fr_calloc((size_t)nf + 1, sizeof *f->cols);
    f->arena = fr_arena_new(4096);
    int rc = FR_OK;
    if (!f->cols || !f->arena) {
        rc = fr_fail(err, FR_ENOMEM, "out of memory planning a read");
        goto fail;
    }
    if (columns) {
        FR_GOTO(fr_ctable_columns(t, columns, f->cols, &f->ncols, err));
    } else {
        for (int i = 0; i < nf; i++) f->cols[i] = i;
        f->ncols = nf;
        f->all_columns = true;
    }
    f->nwanted = f->ncols;
    if (where && *where) {
        fr_expr *e = NULL;
        FR_GOTO(fr_sql_parse_expr(where, strlen(where), t->schema, f->arena, &e, err));
        if (e->type.id != FR_T_BOOLEAN) {
            rc = fr_fail(err, FR_ETYPE, "where '%.100s' is not a condition (true or false)",
                         where);
            goto fail;
        }
        uint8_t used[FR_SCHEMA_COLUMNS_MAX / 8 + 1] = {0};
        fr_expr_columns(e, used);
        for (int c = 0; c < nf; c++) {
            if (!((used[c >> 3] >> (c & 7)) & 1)) continue;
            bool have = false;
            for (int i = 0; i < f->ncols; i++) have = have || f->cols[i] == c;
            if (!have) f->cols[f->ncols++] = c;
        }
        f->filter_text = fr_strdup(where);
        if (!f->filter_text) {
            rc = fr_fail(err, FR_ENOMEM, "out of memory planning a read");
            goto fail;
        }
    }
    FR_GOTO(fr_schema_project(t->schema, f->cols, f->ncols, &f->fetched, err));
    FR_GOTO(fr_schema_project(t->schema, f->cols, f->nwanted, &f->wanted, err));
    if (f->filter_text)
        FR_GOTO(fr_sql_parse_expr(where, strlen(where), f->fetched, f->arena, &f->filter, err));
    return FR_OK;
fail:
    fr_rfetch_free(f);
    return rc;
}

void fr_rdecoded_free(fr_rdecoded *d, int count)
{
    for (int i = 0; d && i < count; i++) {
        fr_batch_free(d[i].batch);
        fr_free(d[i].offsets);
        fr_free(d[i].changes);
    }
    fr_free(d);
}

/* The rows of one decoded record batch that are at or after from and pass the filter. */
static int decode_one(const fr_rfetch *f, const fr_rb_view *v, fr_batch *b, int64_t from,
                      fr_rdecoded *out, bool *any, fr_error *err)
{
    int64_t rows = fr_batch_num_rows(b);
    FR_CHECK(rows == v->record_count, FR_ECORRUPT, err,
             "a fetched batch at offset %lld holds %lld rows, its header says %d",
             (long long)v->base_offset, (long long)rows, (int)v->record_count);
    size_t bitmap = (size_t)(rows + 7) / 8 + 1;
    uint8_t *keep = fr_calloc(bitmap, 1);
    int64_t *sel = fr_malloc(sizeof *sel * (size_t)(rows + 1));
    fr_batch *proj = NULL;
    int rc = FR_OK;
    *any = false;
    if (!keep || !sel) {
        rc = fr_fail(err, FR_ENOMEM, "out of memory decoding a fetch");
        goto fail;
    }
    int64_t kept = 0;
    if (f->filter) {
        FR_GOTO(fr_expr_filter(f->filter, b, keep, &kept, err));
    } else {
        memset(keep, 0xff, bitmap);
    }
    int64_t n = 0;
    for (int64_t r = 0; r < rows; r++)
        if (v->base_offset + r >= from && ((keep[r >> 3] >> (r & 7)) & 1)) sel[n++] = r;
    if (n == 0) goto fail;
    int *first = fr_malloc(sizeof *first * (size_t)(f->nwanted + 1));
    if (!first) {
        rc = fr_fail(err, FR_ENOMEM, "out of memory decoding a fetch");
        goto fail;
    }
    for (int i = 0; i < f->nwanted; i++) first[i] = i;
    rc = fr_batch_project(b, first, f->nwanted, &proj, err);
    fr_free(first);
    if (rc < 0) goto fail;
    if (n == rows) {
        out->batch = proj;
        proj = NULL;
    } else {
        FR_GOTO(fr_gather_rows(proj, sel, n, &out->batch, err));
    }
    out->offsets = fr_malloc(sizeof *out->offsets * (size_t)n);
    out->changes = v->change_types ? fr_malloc((size_t)n) : NULL;
    if (!out->offsets || (v->change_types && !out->changes)) {
        rc = fr_fail(err, FR_ENOMEM, "out of memory decoding a fetch");
        goto fail;
    }
    for (int64_t i = 0; i < n; i++) {
        out->offsets[i] = v->base_offset + sel[i];
        if (out->changes) out->changes[i] = v->change_types[sel[i]];
    }
    out->commit_ms = v->commit_timestamp;
    *any = true;
fail:
    if (rc < 0 || !*any) {
        fr_batch_free(out->batch);
        fr_free(out->offsets);
        fr_free(out->changes);
        memset(out, 0, sizeof *out);
        *any = false;
    }
    fr_batch_free(proj);
    fr_free(keep);
    fr_free(sel);
    return rc;
}

int fr_rfetch_decode(const fr_rfetch *f, const fr_ctable *t, const uint8_t *p, size_t n,
                     int64_t from_offset, fr_rdecoded **out, int *count, int *cap,
                     fr_error *err)
{
    while (n > 0) {
        fr_rb_view v;
        FR_TRY(fr_rb_decode(p, n, &v, err));
        FR_CHECK(v.schema_id == fr_schema_id(t->schema), FR_EUNSUPPORTED, err,
                 "table %s: a batch at offset %lld was written with schema %d; this client "
                 "reads schema %d (open the table again)", t->qname, (long long)v.base_offset,
                 (int)v.schema_id, (int)fr_schema_id(t->schema));
        /* The base offset is outside the CRC: check it before any arithmetic on it. */
        FR_CHECK(v.base_offset >= 0 && v.record_count >= 0 &&
                     v.base_offset <= INT64_MAX - v.record_count, FR_ECORRUPT, err,
                 "table %s: a fetched batch has base offset %lld and %d records", t->qname,
                 (long long)v.base_offset, (int)v.record_count);
        if (v.base_offset + v.record_count > from_offset) {
            fr_batch *b = NULL;
            size_t used = 0;
            FR_TRY(fr_ipc_read_batch(v.ipc, (size_t)v.ipc_length, f->fetched, &b, &used, err));
            if (*count == *cap) {
                int ncap = *cap ? 2 * *cap : 8;
                fr_rdecoded *grown = fr_realloc(*out, sizeof *grown * (size_t)ncap);
                if (!grown) {
                    fr_batch_free(b);
                    return fr_fail(err, FR_ENOMEM, "out of memory decoding a fetch");
                }
                *out = grown;
                *cap = ncap;
            }
            fr_rdecoded *d = &(*out)[*count];
            memset(d, 0, sizeof *d);
            bool any = false;
            int rc = decode_one(f, &v, b, from_offset, d, &any, err);
            fr_batch_free(b);
            if (rc < 0) return rc;
            if (any) (*count)++;
        }
        p += v.length;
        n -= (size_t)v.length;
    }
    return FR_OK;
}

/* ---- firth_scan over the network ------------------------------------------------------------- */

typedef struct rscan {
    fr_ctable *t;
    fr_rfetch plan;
    firth_scan_fn fn;
    firth_changelog_fn changes_fn;
    void *ctx;
    int64_t max_records; /* -1: no limit */
    int64_t delivered;
    int user_rc;
} rscan;

/* Fetches one bucket once from *pos; delivers what is below end. */
static int rscan_fetch(rscan *s, int64_t pid, int bucket, int64_t *pos, int64_t end,
                       fr_error *err)
{
    Firth__FetchLogRequest req = FIRTH__FETCH_LOG_REQUEST__INIT;
    Firth__FetchTable ft = FIRTH__FETCH_TABLE__INIT, *fts[1] = {&ft};
    Firth__FetchBucket fb = FIRTH__FETCH_BUCKET__INIT, *fbs[1] = {&fb};
    Firth__TablePath path = FIRTH__TABLE_PATH__INIT;
    fr_ctable_path(s->t, &path);
    ft.path = &path;
    ft.table_id = s->t->id;
    ft.projection = (int32_t *)s->plan.cols;
    ft.n_projection = (size_t)s->plan.ncols;
    ft.filter = s->plan.filter_text ? s->plan.filter_text : "";
    ft.buckets = fbs;
    ft.n_buckets = 1;
    fb.partition_id = pid;
    fb.bucket = bucket;
    fb.fetch_offset = *pos;
    req.tables = fts;
    req.n_tables = 1;
    ProtobufCMessage *m = NULL;
    fr_rdecoded *d = NULL;
    int nd = 0, cap = 0, rc = FR_OK;
    FR_GOTO(fr_cnet_call(s->t->client->net, FR_RPC_FETCH_LOG, &req.base, 0, FR_CNET_RETRY,
                         NULL, NULL, &m, NULL, err));
    const Firth__FetchLogResponse *r = (const Firth__FetchLogResponse *)m;
    if (r->n_tables != 1 || (!r->tables[0]->error && r->tables[0]->n_buckets != 1)) {
        rc = fr_fail(err, FR_ECORRUPT, "fetch_log: an answer of the wrong shape");
        goto fail;
    }
    if (r->tables[0]->error && r->tables[0]->error->code) {
        rc = fr_rpc_error_get(r->tables[0]->error, "fetch_log", err);
        goto fail;
    }
    const Firth__FetchBucketResult *b = r->tables[0]->buckets[0];
    if (b->error && b->error->code) {
        rc = fr_rpc_error_get(b->error, "fetch_log", err);
        goto fail;
    }
    FR_GOTO(fr_rfetch_decode(&s->plan, s->t, b->records.data, b->records.len, *pos, &d, &nd,
                             &cap, err));
    if (b->next_offset <= *pos && b->records.len == 0) {
        *pos = end; /* nothing more readable: the end moved back (truncation) */
    } else {
        *pos = b->next_offset > *pos ? b->next_offset : *pos + 1;
    }
    for (int i = 0; i < nd && s->user_rc == 0; i++) {
        int64_t rows = fr_batch_num_rows(d[i].batch), n = 0;
        while (n < rows && d[i].offsets[n] < end) n++;
        if (s->max_records >= 0 && n > s->max_records - s->delivered)
            n = s->max_records - s->delivered;
        if (n == 0) continue;
        fr_batch *part = d[i].batch;
        if (n < rows) FR_GOTO(fr_batch_slice(d[i].batch, 0, n, &part, err));
        else d[i].batch = NULL;
        firth_batch *fb2 = firth_batch_wrap(part);
        if (!fb2) {
            fr_batch_free(part);
            rc = fr_fail(err, FR_ENOMEM, "out of memory passing a batch");
            goto fail;
        }
        s->delivered += n;
        int urc = s->fn ? s->fn(s->ctx, bucket, fb2, d[i].offsets)
                        : s->changes_fn(s->ctx, bucket, fb2, d[i].offsets, d[i].changes,
                                        d[i].commit_ms);
        if (urc != 0) s->user_rc = urc;
    }
fail:
    fr_rdecoded_free(d, nd);
    fr_cnet_release(s->t->client->net, m);
    return rc;
}

/* The buckets to read, in order: partitions by name, then buckets. */
static int rscan_buckets(rscan *s, int64_t **pids, int **buckets, int *n, fr_error *err)
{
    fr_cpart *parts = NULL;
    int nparts = 1;
    if (s->t->npart) FR_TRY(fr_ctable_partitions(s->t, true, &parts, &nparts, err));
    int64_t total = (int64_t)nparts * s->t->nbuckets;
    *pids = fr_calloc((size_t)total + 1, sizeof **pids);
    *buckets = fr_calloc((size_t)total + 1, sizeof **buckets);
    if (!*pids || !*buckets) {
        fr_cparts_free(parts, nparts);
        return fr_fail(err, FR_ENOMEM, "out of memory listing buckets");
    }
    int k = 0;
    for (int p = 0; p < nparts; p++)
        for (int b = 0; b < s->t->nbuckets; b++, k++) {
            (*pids)[k] = parts ? parts[p].id : -1;
            (*buckets)[k] = b;
        }
    *n = k;
    fr_cparts_free(parts, s->t->npart ? nparts : 0);
    return FR_OK;
}

static int rscan_run(rscan *s, const firth_scan_options *o, fr_error *err)
{
    if (o->start == FIRTH_START_LATEST) return FR_OK; /* from the end to the end */
    int64_t *pids = NULL, *starts = NULL, *ends = NULL;
    int *buckets = NULL, n = 0, rc = FR_OK;
    FR_GOTO(rscan_buckets(s, &pids, &buckets, &n, err));
    starts = fr_calloc((size_t)n + 1, sizeof *starts);
    ends = fr_calloc((size_t)n + 1, sizeof *ends);
    if (!starts || !ends) {
        rc = fr_fail(err, FR_ENOMEM, "out of memory starting a scan");
        goto fail;
    }
    FR_GOTO(fr_remote_list_offsets(s->t, FIRTH__OFFSET_SPEC__OFFSET_LATEST, 0, pids, buckets, n,
                                   ends, err));
    if (o->start == FIRTH_START_TIMESTAMP) {
        FR_GOTO(fr_remote_list_offsets(s->t, FIRTH__OFFSET_SPEC__OFFSET_TIMESTAMP,
                                       o->start_value, pids, buckets, n, starts, err));
    } else {
        FR_GOTO(fr_remote_list_offsets(s->t, FIRTH__OFFSET_SPEC__OFFSET_EARLIEST, 0, pids,
                                       buckets, n, starts, err));
        if (o->start == FIRTH_START_OFFSET)
            for (int i = 0; i < n; i++)
                starts[i] = o->start_value > starts[i] ? o->start_value : starts[i];
    }
    for (int i = 0; i < n && s->user_rc == 0; i++) {
        int64_t pos = starts[i];
        while (pos < ends[i] && s->user_rc == 0 &&
               (s->max_records < 0 || s->delivered < s->max_records))
            FR_GOTO(rscan_fetch(s, pids[i], buckets[i], &pos, ends[i], err));
    }
fail:
    fr_free(pids);
    fr_free(buckets);
    fr_free(starts);
    fr_free(ends);
    return rc;
}

int fr_remote_scan(firth_client *c, const char *table, const firth_scan_options *opts,
                   firth_scan_fn fn, firth_changelog_fn changes_fn, void *ctx,
                   firth_error *err)
{
    firth_scan_options defaults = {.start = FIRTH_START_EARLIEST, .max_records = -1};
    const firth_scan_options *o = opts ? opts : &defaults;
    if (o->start < FIRTH_START_EARLIEST || o->start > FIRTH_START_TIMESTAMP)
        return fr_client_fail(err, FIRTH_EINVAL, "unknown scan start %d", (int)o->start);
    if (o->max_records == 0) return FIRTH_OK;
    fr_error e = {0};
    rscan s = {.fn = fn, .changes_fn = changes_fn, .ctx = ctx,
               .max_records = o->max_records < 0 ? -1 : o->max_records};
    int rc = fr_ctable_open(c, table, &s.t, &e);
    if (rc == 0) rc = fr_rfetch_init(&s.plan, s.t, o->columns, o->where, &e);
    if (rc == 0) rc = rscan_run(&s, o, &e);
    fr_rfetch_free(&s.plan);
    fr_ctable_free(s.t);
    if (s.user_rc > 0) return FIRTH_OK;
    if (s.user_rc < 0)
        return fr_client_fail(err, s.user_rc, "the scan was stopped by its callback (%d)",
                              s.user_rc);
    return rc < 0 ? firth_error_from(&e, err) : FIRTH_OK;
}
