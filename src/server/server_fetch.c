/* server_fetch.c — fetch_log: record batches of many buckets from their offsets, projected
 * without decoding values, batches whose statistics rule the filter out left out, within
 * byte limits; and long polling: a fetch that finds fewer than min_bytes parks (the loop
 * keeps it) until an append to one of its buckets or its deadline.
 *
 * A parked fetch keeps its tables retained, so that the logs it waits on stay open; the
 * loop asks each log for its end offset to decide whether to run the fetch again, and the
 * logs' watcher (server_core.c) wakes the loop after every append while fetches are
 * parked. Each run of a fetch reads afresh from the request's offsets.
 *
 * Sizes (docs/PROTOCOL.md, section 5): a bucket returns batches up to its max_bytes, the
 * response up to the request's max_bytes (capped below the frame limit), but the first
 * batch found is returned whatever its size, so that a consumer always makes progress. */
#include "server/server_int.h"

#include <inttypes.h>

#define NEW(a, T) ((T *)srv_zalloc((a), sizeof(T)))
#define NEW_N(a, T, n) ((T *)srv_zalloc((a), sizeof(T) * (size_t)(n)))

void srv_fetch_release(srv_job *j)
{
    for (int i = 0; i < j->nheld; i++) fr_table_release(j->held[i]);
    fr_free(j->held);
    fr_free(j->wait_logs);
    fr_free(j->wait_offsets);
    j->held = NULL;
    j->wait_logs = NULL;
    j->wait_offsets = NULL;
    j->nheld = j->nwait = 0;
}

/* What one run of a fetch collects besides the response message. */
typedef struct fetch_run {
    fr_server *s;
    fr_arena *a;
    fr_table **tables; /* resolved, retained */
    int ntables;
    fr_log **logs;     /* per bucket read: its log and where the next read starts */
    int64_t *next;
    int nlogs;
    fr_buf *bufs;      /* records of each bucket */
    int nbufs;
    int64_t total_bytes;
    int64_t total_max;
    bool any_error;
} fetch_run;

static void run_free(fetch_run *r)
{
    for (int i = 0; i < r->ntables; i++) fr_table_release(r->tables[i]);
    srv_bufs_give(r->s, r->bufs, r->nbufs);
    fr_free(r->tables);
    fr_free(r->logs);
    fr_free(r->next);
    fr_arena_free(r->a);
}

/* The projection of a request: NULL (every column, batches as stored) when empty or the
 * identity; else checked (in range, distinct). */
static int projection_of(const Firth__FetchTable *ft, const fr_schema *schema, fr_arena *a,
                         int **out, int *n, fr_error *err)
{
    *out = NULL;
    *n = 0;
    int ncols = fr_schema_num_fields(schema);
    if (ft->n_projection == 0) return FR_OK;
    int *cols = NEW_N(a, int, ft->n_projection);
    uint8_t *seen = NEW_N(a, uint8_t, ncols);
    FR_CHECK(cols && seen, FR_ENOMEM, err, "out of memory");
    bool identity = (int)ft->n_projection == ncols;
    for (size_t i = 0; i < ft->n_projection; i++) {
        int c = ft->projection[i];
        FR_CHECK(c >= 0 && c < ncols, FR_EINVAL, err, "projection: column %d is not a column "
                 "of the table (0..%d)", c, ncols - 1);
        FR_CHECK(!seen[c], FR_EINVAL, err, "projection: column %d is named twice", c);
        seen[c] = 1;
        cols[i] = c;
        identity = identity && c == (int)i;
    }
    if (identity) return FR_OK;
    *out = cols;
    *n = (int)ft->n_projection;
    return FR_OK;
}

/* Whether a batch may hold a row that matches the filter (true when unsure). */
static bool batch_may_match(const fr_rb_view *v, const fr_schema *schema, const fr_expr *filter,
                            fr_column_stats *stats)
{
    if (!filter || v->schema_id != fr_schema_id(schema) || v->stats_length == 0) return true;
    if (fr_rb_stats(v, schema, stats, NULL) < 0) return true;
    return fr_expr_may_match(filter, stats, v->record_count);
}

typedef struct bucket_read {
    const fr_schema *schema;
    const int *cols;
    int ncols;
    const fr_expr *filter;
    fr_column_stats *stats;
    int64_t budget;      /* bytes this bucket may add; the first batch of all is free */
    bool first_free;     /* nothing returned yet in the whole response */
} bucket_read;

/* Stored bytes one bucket's projected read may go through in one fetch. A projection's
 * batches are smaller than the stored ones they come from, so filling a bucket's budget
 * with them may take reading many times the budget; this bounds that work per request. */
#define FETCH_SCAN_BYTES_MAX (32 << 20)

/* Adds one stored batch (v, whose bytes start at p) to out, projected when asked. The
 * budget counts the bytes returned: a batch that would take out past it is left for the
 * next fetch (*full), except the first batch of the whole response. */
static int add_batch(const fr_rb_view *v, const uint8_t *p, const bucket_read *br, fr_buf *out,
                     bool *full, fr_error *err)
{
    size_t before = out->len;
    bool free_pass = before == 0 && br->first_free;
    if (!br->cols) {
        if ((int64_t)(before + (size_t)v->length) > br->budget && !free_pass) {
            *full = true;
            return FR_OK;
        }
        return fr_buf_append(out, p, (size_t)v->length, err);
    }
    if (v->schema_id != fr_schema_id(br->schema))
        return fr_fail(err, FR_EUNSUPPORTED, "the batch at offset %" PRId64 " was written "
                       "with schema %d, not the current %d: fetch it without a projection",
                       v->base_offset, v->schema_id, fr_schema_id(br->schema));
    FR_TRY(fr_rb_project(v, br->schema, br->cols, br->ncols, out, err));
    if ((int64_t)out->len > br->budget && !free_pass) {
        out->len = before; /* it goes in the next fetch */
        *full = true;
    }
    return FR_OK;
}

/* A read of one bucket, batch by batch where they lie in the log. */
typedef struct bucket_scan {
    const bucket_read *br;
    fr_buf *out;
    int64_t *next, *records;
    bool full;
} bucket_scan;

static int scan_batch(void *ctx, const uint8_t *p, const fr_rb_view *v, fr_error *err)
{
    bucket_scan *bs = ctx;
    int64_t after = v->base_offset + v->record_count;
    if (batch_may_match(v, bs->br->schema, bs->br->filter, bs->br->stats)) {
        FR_TRY(add_batch(v, p, bs->br, bs->out, &bs->full, err));
        if (bs->full) return 1; /* it goes in the next fetch */
        *bs->records += v->record_count;
    }
    *bs->next = after;
    return 0;
}

/* Reads one bucket from offset into out; *next is where to continue. The stored batches
 * are taken where they lie in the log (it checked them whole when they were appended or
 * recovered, so only their headers are read): as they are without a projection (the
 * budget's worth of stored bytes is enough), projected with one, until the results fill
 * the budget, the log ends, or FETCH_SCAN_BYTES_MAX stored bytes were gone through. */
static int read_bucket(fr_log *log, int64_t offset, const bucket_read *br, fr_buf *out,
                       int64_t *next, int64_t *records, fr_error *err)
{
    *next = offset;
    *records = 0;
    int64_t want = br->budget > 0 ? br->budget : 1;
    int64_t scan_max = br->cols && want < FETCH_SCAN_BYTES_MAX ? FETCH_SCAN_BYTES_MAX : want;
    bucket_scan bs = {.br = br, .out = out, .next = next, .records = records};
    return fr_log_scan_raw(log, offset, scan_max, scan_batch, &bs, err);
}

static int add_wait(fetch_run *r, fr_log *log, int64_t next, fr_error *err)
{
    fr_log **logs = fr_realloc(r->logs, (size_t)(r->nlogs + 1) * sizeof *logs);
    if (logs) r->logs = logs;
    int64_t *nx = fr_realloc(r->next, (size_t)(r->nlogs + 1) * sizeof *nx);
    if (nx) r->next = nx;
    FR_CHECK(logs && nx, FR_ENOMEM, err, "out of memory");
    r->logs[r->nlogs] = log;
    r->next[r->nlogs] = next;
    r->nlogs++;
    return FR_OK;
}

static int fetch_bucket(fetch_run *r, fr_table *t, const Firth__FetchBucket *fb,
                        bucket_read *br, Firth__FetchBucketResult *res, fr_buf *buf,
                        srv_table_metrics *tm, fr_error *err)
{
    fr_log *log = NULL;
    FR_TRY(srv_bucket_log(t, fb->partition_id, fb->bucket, &log, err));
    int64_t start = fr_log_start_offset(log), end = fr_log_end_offset(log);
    res->high_watermark = end;
    res->log_start_offset = start;
    res->next_offset = fb->fetch_offset;
    FR_CHECK(fb->fetch_offset >= start && fb->fetch_offset <= end, FR_ERANGE, err,
             "fetch offset %" PRId64 " is outside the log's %" PRId64 "..%" PRId64,
             fb->fetch_offset, start, end);
    int64_t next = fb->fetch_offset;
    int64_t bucket_max = fb->max_bytes > 0 ? fb->max_bytes : r->s->opts.fetch_bucket_bytes_max;
    int64_t left = r->total_max - r->total_bytes;
    br->budget = bucket_max < left ? bucket_max : left;
    br->first_free = r->total_bytes == 0;
    if (fb->fetch_offset < end && (br->budget > 0 || br->first_free)) {
        int64_t records = 0;
        fr_bufpool_take(r->s->bufs, buf);
        FR_TRY(read_bucket(log, fb->fetch_offset, br, buf, &next, &records, err));
        if (tm) {
            atomic_fetch_add(&tm->fetched_records, (uint64_t)records);
            atomic_fetch_add(&tm->fetched_bytes, buf->len);
        }
    }
    res->next_offset = next;
    res->records.data = buf->data;
    res->records.len = buf->len;
    r->total_bytes += (int64_t)buf->len;
    return add_wait(r, log, next, err);
}

static int fetch_table(fetch_run *r, const Firth__FetchTable *ft, Firth__FetchTableResult *tr,
                       fr_error *err)
{
    fr_table *t = NULL;
    FR_TRY(srv_get_table(r->s, ft->path, ft->table_id, &t, err));
    r->tables[r->ntables++] = t;
    const fr_schema *schema = fr_table_schema(t);
    bucket_read br = {.schema = schema};
    int *cols = NULL;
    FR_TRY(projection_of(ft, schema, r->a, &cols, &br.ncols, err));
    br.cols = cols;
    if (ft->filter && ft->filter[0]) {
        fr_expr *e = NULL;
        FR_TRY(fr_sql_parse_expr(ft->filter, strlen(ft->filter), schema, r->a, &e, err));
        br.filter = e;
        br.stats = NEW_N(r->a, fr_column_stats, fr_schema_num_fields(schema));
        FR_CHECK(br.stats, FR_ENOMEM, err, "out of memory");
    }
    srv_table_metrics *tm = srv_metrics_table(r->s->metrics, t);
    tr->buckets = NEW_N(r->a, Firth__FetchBucketResult *, ft->n_buckets);
    FR_CHECK(tr->buckets, FR_ENOMEM, err, "out of memory");
    for (size_t i = 0; i < ft->n_buckets; i++) {
        const Firth__FetchBucket *fb = ft->buckets[i];
        Firth__FetchBucketResult *res = NEW(r->a, Firth__FetchBucketResult);
        FR_CHECK(res, FR_ENOMEM, err, "out of memory");
        firth__fetch_bucket_result__init(res);
        res->partition_id = fb->partition_id;
        res->bucket = fb->bucket;
        fr_error berr = {0};
        int rc = fetch_bucket(r, t, fb, &br, res, &r->bufs[r->nbufs++], tm, &berr);
        if (rc == FR_ENOMEM) return fr_fail(err, rc, "%s", berr.msg);
        if (rc < 0) {
            res->error = srv_item_error(r->a, &berr);
            FR_CHECK(res->error, FR_ENOMEM, err, "out of memory");
            r->any_error = true;
        }
        tr->buckets[i] = res;
        tr->n_buckets = i + 1;
    }
    return FR_OK;
}

/* Hands the run's tables and wait list to the job for parking. */
static void keep_for_park(fetch_run *r, srv_job *j)
{
    j->held = r->tables;
    j->nheld = r->ntables;
    j->wait_logs = r->logs;
    j->wait_offsets = r->next;
    j->nwait = r->nlogs;
    r->tables = NULL;
    r->ntables = 0;
    r->logs = NULL;
    r->next = NULL;
    r->nlogs = 0;
    for (int i = 0; i < j->nwait; i++) fr_log_set_watcher(j->wait_logs[i], &j->srv->watcher);
}

int srv_handle_fetch_log(fr_server *s, srv_job *j, fr_error *err)
{
    Firth__FetchLogRequest *req = (Firth__FetchLogRequest *)j->request;
    srv_fetch_release(j); /* what an earlier run parked with */
    int64_t wait_ms = req->max_wait_ms < s->opts.fetch_wait_max_ms ? req->max_wait_ms
                                                                     : s->opts.fetch_wait_max_ms;
    if (j->deadline_ns == 0) j->deadline_ns = j->received_ns + wait_ms * 1000000;
    size_t nbuckets = 0;
    for (size_t i = 0; i < req->n_tables; i++) nbuckets += req->tables[i]->n_buckets;
    fetch_run r = {.s = s};
    r.total_max = req->max_bytes > 0 ? req->max_bytes : s->opts.fetch_bytes_max;
    if (r.total_max > s->opts.frame_bytes_max / 4 * 3) r.total_max = s->opts.frame_bytes_max / 4 * 3;
    r.a = fr_arena_new(16 << 10);
    r.tables = fr_calloc(req->n_tables + 1, sizeof *r.tables);
    r.bufs = fr_calloc(nbuckets + 1, sizeof *r.bufs);
    int rc;
    if (!r.a || !r.tables || !r.bufs) FR_GOTO(fr_fail(err, FR_ENOMEM, "out of memory"));
    Firth__FetchLogResponse resp = FIRTH__FETCH_LOG_RESPONSE__INIT;
    resp.tables = NEW_N(r.a, Firth__FetchTableResult *, req->n_tables);
    if (!resp.tables) FR_GOTO(fr_fail(err, FR_ENOMEM, "out of memory"));
    for (size_t i = 0; i < req->n_tables; i++) {
        Firth__FetchTableResult *tr = NEW(r.a, Firth__FetchTableResult);
        if (!tr) FR_GOTO(fr_fail(err, FR_ENOMEM, "out of memory"));
        firth__fetch_table_result__init(tr);
        tr->path = req->tables[i]->path;
        fr_error terr = {0};
        int trc = fetch_table(&r, req->tables[i], tr, &terr);
        if (trc == FR_ENOMEM) FR_GOTO(fr_fail(err, trc, "%s", terr.msg));
        if (trc < 0) {
            /* A table that is gone, or a projection or filter that does not bind. */
            tr->n_buckets = 0;
            tr->error = srv_item_error(r.a, &terr);
            if (!tr->error) FR_GOTO(fr_fail(err, FR_ENOMEM, "out of memory"));
            r.any_error = true;
        }
        resp.tables[i] = tr;
        resp.n_tables = i + 1;
    }
    bool wait = !j->final && wait_ms > 0 && req->min_bytes > 0 && !r.any_error &&
                r.total_bytes < req->min_bytes && r.nlogs > 0 &&
                fr_monotonic_ns() < j->deadline_ns;
    if (wait) {
        keep_for_park(&r, j);
        rc = SRV_PARK;
        goto fail;
    }
    /* The record batches go out from the buffers they were read into. */
    rc = srv_respond_gather(j, &resp.base, r.bufs, r.nbufs, err);
    r.bufs = NULL;
    r.nbufs = 0;
fail:
    run_free(&r);
    return rc;
}
