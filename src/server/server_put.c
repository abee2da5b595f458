/* server_put.c — put_kv: upserts and deletes from a client applied to the buckets they name,
 * through the engine's primary-key write path (merge engine, changelog appended to the
 * bucket's log, then the KV store).
 *
 * The entries of one request are grouped by bucket and the groups run side by side on the
 * worker pool, as produce_log's do (server_write.c); each entry is checked whole before any
 * of it is applied. */
#include "server/server_int.h"

#include <inttypes.h>

typedef struct put_ctx {
    fr_server *s;
    fr_table *t;
    srv_table_metrics *tm;
    const Firth__PutKvRequest *req;
    const int *targets;
    int ntargets;
    const srv_entry_groups *groups;
    srv_entry_result *results;
} put_ctx;

/* The operations of a batch's change types: +A, +I, +U upsert, -D deletes, -U is refused. */
static int ops_of(const fr_rb_view *v, uint8_t **out, fr_error *err)
{
    *out = NULL;
    if (!v->change_types) return FR_OK;
    uint8_t *ops = fr_malloc((size_t)v->record_count);
    FR_CHECK(ops, FR_ENOMEM, err, "out of memory");
    for (int32_t i = 0; i < v->record_count; i++) {
        uint8_t ct = v->change_types[i];
        if (ct == FR_CHANGE_DELETE) {
            ops[i] = FR_KV_DELETE;
        } else if (ct == FR_CHANGE_UPDATE_BEFORE) {
            fr_free(ops);
            return fr_fail(err, FR_EINVAL, "record %d is -U (update before): write upserts "
                           "(+I, +U, +A) and deletes (-D) only", (int)i);
        } else {
            ops[i] = FR_KV_UPSERT;
        }
    }
    *out = ops;
    return FR_OK;
}

static int put_entry_run(put_ctx *pc, Firth__PutKvBucket *e, srv_entry_result *r,
                         fr_error *err)
{
    const uint8_t *p = e->records.data;
    size_t n = e->records.len;
    FR_TRY(srv_check_writer(p, n, pc->req->writer_id, err));
    fr_rb_view v;
    FR_TRY(fr_rb_decode(p, n, &v, err));
    FR_CHECK((size_t)v.length == n, FR_EINVAL, err, "one record batch of %d bytes was "
             "expected, got %zu bytes", v.length, n);
    const fr_schema *schema = fr_table_schema(pc->t);
    FR_CHECK(v.schema_id == fr_schema_id(schema), FR_ETYPE, err, "the batch names schema %d, "
             "but the table's current schema is %d", v.schema_id, fr_schema_id(schema));
    fr_batch *rows = NULL;
    uint8_t *ops = NULL;
    size_t used = 0;
    int rc;
    FR_GOTO(fr_ipc_read_batch(v.ipc, (size_t)v.ipc_length, schema, &rows, &used, err));
    FR_GOTO(fr_batch_num_rows(rows) == v.record_count
                ? FR_OK
                : fr_fail(err, FR_EINVAL, "the batch header says %d records but its data has "
                          "%" PRId64, v.record_count, fr_batch_num_rows(rows)));
    FR_GOTO(ops_of(&v, &ops, err));
    fr_kv_write_result res;
    int32_t seq = v.writer_id == FR_NO_WRITER ? -1 : v.batch_sequence;
    rc = fr_table_put_bucket(pc->t, e->partition_id, e->bucket, rows, ops, pc->targets,
                             pc->ntargets, v.writer_id, seq, &res, err);
    r->base_offset = res.base_offset;
    r->rows_changed = res.rows_changed;
    r->changelog_records = res.changelog_records;
    if (rc == FR_OK && pc->tm) {
        atomic_fetch_add(&pc->tm->kv_rows_written, (uint64_t)v.record_count);
        atomic_fetch_add(&pc->tm->appended_records, (uint64_t)res.changelog_records);
        atomic_fetch_add(&pc->tm->appended_bytes, n);
        if (res.changelog_records > 0) atomic_fetch_add(&pc->tm->appended_batches, 1);
    }
fail:
    fr_free(ops);
    fr_batch_free(rows);
    return rc;
}

static void put_group(void *ctx, int g)
{
    put_ctx *pc = ctx;
    for (int k = pc->groups->start[g]; k < pc->groups->start[g + 1]; k++) {
        int i = pc->groups->order[k];
        srv_entry_result *r = &pc->results[i];
        r->base_offset = -1;
        r->rc = put_entry_run(pc, pc->req->buckets[i], r, &r->err);
    }
}

int srv_handle_put_kv(fr_server *s, srv_job *j, fr_error *err)
{
    Firth__PutKvRequest *req = (Firth__PutKvRequest *)j->request;
    fr_table *t = NULL;
    FR_TRY(srv_get_table(s, req->path, req->table_id, &t, err));
    size_t n = req->n_buckets;
    srv_entry_result *results = fr_calloc(n + 1, sizeof *results);
    int *targets = fr_calloc(req->n_target_columns + 1, sizeof *targets);
    int64_t *pids = NULL;
    int32_t *buckets = NULL;
    srv_entry_groups g = {0};
    fr_arena *a = fr_arena_new(16 << 10);
    int rc;
    if (!results || !targets || !a) FR_GOTO(fr_fail(err, FR_ENOMEM, "out of memory"));
    FR_GOTO(fr_table_is_pk(t) ? FR_OK
                              : fr_fail(err, FR_EINVAL, "table %s.%s has no primary key: "
                                        "produce to it instead of putting", fr_table_db(t),
                                        fr_table_name(t)));
    int ncols = fr_schema_num_fields(fr_table_schema(t));
    for (size_t i = 0; i < req->n_target_columns; i++) {
        targets[i] = req->target_columns[i];
        FR_GOTO(targets[i] < ncols ? FR_OK
                                   : fr_fail(err, FR_EINVAL, "target column %d is not a "
                                             "column of the table (0..%d)", targets[i],
                                             ncols - 1));
    }
    FR_GOTO(srv_entry_keys(n, &pids, &buckets, err));
    for (size_t i = 0; i < n; i++) {
        pids[i] = req->buckets[i]->partition_id;
        buckets[i] = req->buckets[i]->bucket;
    }
    put_ctx pc = {s, t, srv_metrics_table(s->metrics, t), req,
                  req->n_target_columns ? targets : NULL, (int)req->n_target_columns, &g,
                  results};
    FR_GOTO(srv_run_groups(s, n, pids, buckets, put_group, &pc, &g, err));

    Firth__PutKvResponse resp = FIRTH__PUT_KV_RESPONSE__INIT;
    resp.buckets = srv_zalloc(a, (n + 1) * sizeof *resp.buckets);
    if (!resp.buckets) FR_GOTO(fr_fail(err, FR_ENOMEM, "out of memory"));
    for (size_t i = 0; i < n; i++) {
        Firth__PutKvBucketResult *r = srv_zalloc(a, sizeof *r);
        if (!r) FR_GOTO(fr_fail(err, FR_ENOMEM, "out of memory"));
        firth__put_kv_bucket_result__init(r);
        r->partition_id = pids[i];
        r->bucket = buckets[i];
        r->rows_changed = results[i].rows_changed;
        r->changelog_records = results[i].changelog_records;
        r->base_offset = results[i].changelog_records > 0 ? results[i].base_offset : -1;
        if (results[i].rc < 0) {
            r->error = srv_item_error(a, &results[i].err);
            if (!r->error) FR_GOTO(fr_fail(err, FR_ENOMEM, "out of memory"));
            FR_DEBUG("put_kv %s.%s bucket %d: %s", fr_table_db(t), fr_table_name(t),
                     r->bucket, results[i].err.msg);
        }
        resp.buckets[i] = r;
    }
    resp.n_buckets = n;
    rc = srv_respond(j, FR_RPC_SUCCESS, &resp.base, err);
fail:
    srv_groups_free(&g);
    fr_free(pids);
    fr_free(buckets);
    fr_free(results);
    fr_free(targets);
    fr_arena_free(a);
    fr_table_release(t);
    return rc;
}
