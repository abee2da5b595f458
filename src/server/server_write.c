/* server_write.c — produce_log: record batches from a client appended to the buckets they
 * name, and the grouping of a request's entries by bucket that put_kv (server_put.c) shares.
 *
 * produce_log appends every entry of a request in request order on the request's thread
 * without waiting for the disk, then waits for durability with the entries grouped by
 * bucket, the groups side by side on the worker pool (srv_pool_parallel): each wait may
 * lead its bucket's fsync, and fsyncs of different buckets do not wait for each other.
 * Appending first keeps a writer's batches in the order it sent them when it has several
 * requests in flight (the next request's appends find this one's done or under way, see
 * FR_LOG_APPEND_IN_ORDER). put_kv (server_put.c) runs whole groups side by side. Every
 * entry is checked whole before anything of it is appended (a bad CRC, a batch in another
 * schema, rows in the wrong partition or bucket): a bad entry gets its error and nothing
 * of it is written, the others are written.
 *
 * Threads: the groups run on several threads, so their results go into a plain array and
 * the response message is built afterwards on the request's own thread. */
#include "server/server_int.h"

#include <inttypes.h>
#include <stdlib.h>

#define WRITE_HELPERS_MAX 8

typedef struct entry_key {
    int64_t partition_id;
    int32_t bucket;
    int index;
} entry_key;

static int entry_key_cmp(const void *a, const void *b)
{
    const entry_key *x = a, *y = b;
    if (x->partition_id != y->partition_id) return x->partition_id < y->partition_id ? -1 : 1;
    if (x->bucket != y->bucket) return x->bucket < y->bucket ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

void srv_groups_free(srv_entry_groups *g)
{
    fr_free(g->order);
    fr_free(g->start);
    g->order = g->start = NULL;
}

static int groups_build(size_t n, const int64_t *pids, const int32_t *buckets, srv_entry_groups *g,
                        fr_error *err)
{
    memset(g, 0, sizeof *g);
    entry_key *keys = fr_malloc((n + 1) * sizeof *keys);
    g->order = fr_malloc((n + 1) * sizeof *g->order);
    g->start = fr_malloc((n + 2) * sizeof *g->start);
    if (!keys || !g->order || !g->start) {
        fr_free(keys);
        srv_groups_free(g);
        return fr_fail(err, FR_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < n; i++) keys[i] = (entry_key){pids[i], buckets[i], (int)i};
    qsort(keys, n, sizeof *keys, entry_key_cmp);
    for (size_t i = 0; i < n; i++) {
        g->order[i] = keys[i].index;
        if (i == 0 || keys[i].partition_id != keys[i - 1].partition_id ||
            keys[i].bucket != keys[i - 1].bucket)
            g->start[g->n++] = (int)i;
    }
    g->start[g->n] = (int)n;
    fr_free(keys);
    return FR_OK;
}

static int helpers_for(fr_server *s, int groups)
{
    int h = groups - 1;
    if (h > s->opts.workers - 1) h = s->opts.workers - 1;
    return h > WRITE_HELPERS_MAX ? WRITE_HELPERS_MAX : h;
}

/* The header fields a client sets, read from the documented positions (docs/FORMAT.md);
 * the engine checks the whole batch before appending. */
#define RB_OFF_COMMIT_TS 8
#define RB_OFF_RECORD_COUNT 32
#define RB_OFF_WRITER_ID 40

int srv_check_writer(const uint8_t *p, size_t n, int64_t writer_id, fr_error *err)
{
    FR_CHECK(n >= FR_RB_HEADER_BYTES, FR_ECORRUPT, err, "record batch: %zu bytes is shorter "
             "than the %d-byte header", n, FR_RB_HEADER_BYTES);
    int64_t w = (int64_t)fr_get_u64le(p + RB_OFF_WRITER_ID);
    FR_CHECK(w == writer_id, FR_EINVAL, err, "the batch carries writer id %" PRId64 " but the "
             "request says %" PRId64, w, writer_id);
    return FR_OK;
}

/* ---- produce_log ----------------------------------------------------------------------- */

typedef struct produce_ctx {
    fr_server *s;
    fr_table *t;
    srv_table_metrics *tm;
    const Firth__ProduceLogRequest *req;
    const srv_entry_groups *groups;
    srv_entry_result *results;
} produce_ctx;

/* Checks and appends entry i without waiting for the disk. */
static void produce_entry(produce_ctx *pc, int i)
{
    Firth__ProduceBucket *e = pc->req->buckets[i];
    srv_entry_result *r = &pc->results[i];
    r->base_offset = -1;
    uint8_t *p = e->records.data;
    size_t n = e->records.len;
    r->rc = srv_check_writer(p, n, pc->req->writer_id, &r->err);
    if (r->rc < 0) return;
    unsigned flags = pc->req->in_order ? FR_LOG_APPEND_IN_ORDER : 0;
    r->rc = fr_table_append_encoded_to(pc->t, e->partition_id, e->bucket, p, n, flags,
                                       &r->base_offset, &r->pending, &r->err);
    if (r->rc == FR_OK) r->commit_ts = (int64_t)fr_get_u64le(p + RB_OFF_COMMIT_TS);
}

/* Waits until appended entry i is durable. */
static void produce_wait(produce_ctx *pc, int i)
{
    srv_entry_result *r = &pc->results[i];
    if (r->rc != FR_OK) return;
    r->rc = fr_log_wait_durable(r->pending.log, &r->pending.ticket, &r->err);
    if (r->rc != FR_OK) {
        r->base_offset = -1;
        return;
    }
    if (pc->tm) {
        const uint8_t *p = pc->req->buckets[i]->records.data;
        atomic_fetch_add(&pc->tm->appended_records, fr_get_u32le(p + RB_OFF_RECORD_COUNT));
        atomic_fetch_add(&pc->tm->appended_bytes, pc->req->buckets[i]->records.len);
        atomic_fetch_add(&pc->tm->appended_batches, 1);
    }
}

/* Waits until the appended entries of group g are durable, in request order. */
static void produce_group_wait(void *ctx, int g)
{
    produce_ctx *pc = ctx;
    for (int k = pc->groups->start[g]; k < pc->groups->start[g + 1]; k++)
        produce_wait(pc, pc->groups->order[k]);
}

/* Runs fn over the groups of the request's entries (pids/buckets per entry). */
int srv_run_groups(fr_server *s, size_t n, const int64_t *pids, const int32_t *buckets,
                      void (*fn)(void *, int), void *ctx, srv_entry_groups *g, fr_error *err)
{
    FR_TRY(groups_build(n, pids, buckets, g, err));
    srv_pool_parallel(s->pool, g->n, helpers_for(s, g->n), fn, ctx);
    return FR_OK;
}

int srv_entry_keys(size_t n, int64_t **pids, int32_t **buckets, fr_error *err)
{
    *pids = fr_malloc((n + 1) * sizeof **pids);
    *buckets = fr_malloc((n + 1) * sizeof **buckets);
    if (*pids && *buckets) return FR_OK;
    fr_free(*pids);
    fr_free(*buckets);
    return fr_fail(err, FR_ENOMEM, "out of memory");
}

int srv_handle_produce_log(fr_server *s, srv_job *j, fr_error *err)
{
    Firth__ProduceLogRequest *req = (Firth__ProduceLogRequest *)j->request;
    fr_table *t = NULL;
    FR_TRY(srv_get_table(s, req->path, req->table_id, &t, err));
    size_t n = req->n_buckets;
    srv_entry_result *results = fr_calloc(n + 1, sizeof *results);
    int64_t *pids = NULL;
    int32_t *buckets = NULL;
    srv_entry_groups g = {0};
    fr_arena *a = fr_arena_new(16 << 10);
    int rc;
    if (!results || !a) FR_GOTO(fr_fail(err, FR_ENOMEM, "out of memory"));
    FR_GOTO(srv_entry_keys(n, &pids, &buckets, err));
    for (size_t i = 0; i < n; i++) {
        pids[i] = req->buckets[i]->partition_id;
        buckets[i] = req->buckets[i]->bucket;
    }
    produce_ctx pc = {s, t, srv_metrics_table(s->metrics, t), req, &g, results};
    for (size_t i = 0; i < n; i++) produce_entry(&pc, (int)i);
    /* Appended entries are waited for whatever happens next: they are in the logs. */
    rc = srv_run_groups(s, n, pids, buckets, produce_group_wait, &pc, &g, err);
    if (rc < 0) {
        for (size_t i = 0; i < n; i++) produce_wait(&pc, (int)i);
        goto fail;
    }

    Firth__ProduceLogResponse resp = FIRTH__PRODUCE_LOG_RESPONSE__INIT;
    resp.buckets = srv_zalloc(a, (n + 1) * sizeof *resp.buckets);
    if (!resp.buckets) FR_GOTO(fr_fail(err, FR_ENOMEM, "out of memory"));
    for (size_t i = 0; i < n; i++) {
        Firth__ProduceBucketResult *r = srv_zalloc(a, sizeof *r);
        if (!r) FR_GOTO(fr_fail(err, FR_ENOMEM, "out of memory"));
        firth__produce_bucket_result__init(r);
        r->partition_id = pids[i];
        r->bucket = buckets[i];
        r->base_offset = results[i].base_offset;
        r->commit_timestamp = results[i].commit_ts;
        if (results[i].rc < 0) {
            r->error = srv_item_error(a, &results[i].err);
            if (!r->error) FR_GOTO(fr_fail(err, FR_ENOMEM, "out of memory"));
            if (results[i].rc == FR_ESEQUENCE)
                atomic_fetch_add(&s->metrics->produce_out_of_order, 1);
            if (results[i].rc != FR_EDUPLICATE) {
                r->base_offset = -1;
                FR_DEBUG("produce_log %s.%s bucket %d: %s", fr_table_db(t), fr_table_name(t),
                         r->bucket, results[i].err.msg);
            }
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
    fr_arena_free(a);
    fr_table_release(t);
    return rc;
}
