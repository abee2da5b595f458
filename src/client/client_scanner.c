/* client_scanner.c — firth_scanner: subscriptions to buckets of a table's log, each with its
 * own position, and polls that return the records that arrived since, projected and
 * filtered, with their offsets and change types.
 *
 * Remote: a poll is one FETCH_LOG for every subscribed bucket, a long poll on the server
 * (max_wait_ms = the timeout, min_bytes 1), so a waiting scanner gets a record as soon as
 * it is acknowledged without polling. Embedded: a poll reads each bucket's log and, when
 * nothing came, looks again every few milliseconds until the timeout (the engine has no
 * notification to wait on).
 *
 * Invariants: a subscription's position only moves forward past records returned (or to the
 * log's start, when retention removed the records before it); a subscription to every
 * partition also takes partitions created later, from their first record, checking for
 * them at most once a second. */
#include "client/client_int.h"

#include <stdio.h>
#include <time.h>

#define SCANNER_DISCOVERY_NS (1000 * 1000000LL)
#define SCANNER_IDLE_SLEEP_NS (2 * 1000000LL)
#define SCANNER_MAX_BYTES_DEFAULT (4 << 20)
/* The longest the server holds a fetch sent ahead. A scanner closed or moved meanwhile
 * cannot take it back, and until it ends it counts against the connection's requests in
 * flight (server.inflight.max): a short wait bounds what such leftovers hold. A poll that
 * finds it answered empty fetches again for the rest of its timeout. */
#define SCANNER_AHEAD_WAIT_MS_MAX 1000

typedef struct ssub {
    int64_t pid;
    char *pname;   /* NULL without partitions */
    int bucket;
    int64_t pos;
} ssub;

struct firth_scanner {
    firth_client *client;
    fr_ctable *t;
    int64_t max_bytes;
    fr_rfetch plan;       /* the columns and the filter (bound to the fetched columns) */
    fr_arena *arena;
    fr_expr *filter;      /* embedded: the filter bound to the table schema */
    ssub *subs;
    int nsubs, cap;
    bool follow_all;      /* subscribed to every partition: take new ones */
    fr_cnet_pending *ahead; /* remote: a fetch from the positions after the last answer */
    int follow_bucket;
    int64_t discovered_ns;
};

typedef struct sitem {
    firth_scan_batch pub;
    firth_batch *batch;
    int64_t *offsets;
    uint8_t *changes;
    char *partition;
} sitem;

struct firth_scan_result {
    sitem *items;
    int n, cap;
    int64_t rows;
};

/* ---- results ------------------------------------------------------------------------------- */

int firth_scan_result_count(const firth_scan_result *r) { return r ? r->n : 0; }
int64_t firth_scan_result_rows(const firth_scan_result *r) { return r ? r->rows : 0; }

const firth_scan_batch *firth_scan_result_get(const firth_scan_result *r, int i)
{
    return r && i >= 0 && i < r->n ? &r->items[i].pub : NULL;
}

void firth_scan_result_free(firth_scan_result *r)
{
    if (!r) return;
    for (int i = 0; i < r->n; i++) {
        firth_batch_free(r->items[i].batch);
        fr_free(r->items[i].offsets);
        fr_free(r->items[i].changes);
        fr_free(r->items[i].partition);
    }
    fr_free(r->items);
    fr_free(r);
}

/* Adds a batch (taken in every case, with offsets and changes) to the result. */
static int result_add(firth_scan_result *r, const ssub *s, fr_batch *b, int64_t *offsets,
                      uint8_t *changes, int64_t commit_ms, fr_error *err)
{
    sitem it = {0};
    int rc = FR_OK;
    if (r->n == r->cap) {
        int ncap = r->cap ? 2 * r->cap : 8;
        sitem *grown = fr_realloc(r->items, sizeof *grown * (size_t)ncap);
        if (!grown) rc = fr_fail(err, FR_ENOMEM, "out of memory collecting records");
        else r->items = grown, r->cap = ncap;
    }
    if (rc == 0 && !(it.batch = firth_batch_wrap(b)))
        rc = fr_fail(err, FR_ENOMEM, "out of memory collecting records");
    if (rc == 0 && s->pname && !(it.partition = fr_strdup(s->pname)))
        rc = fr_fail(err, FR_ENOMEM, "out of memory collecting records");
    if (rc < 0) {
        if (it.batch) firth_batch_free(it.batch);
        else fr_batch_free(b);
        fr_free(offsets);
        fr_free(changes);
        return rc;
    }
    it.offsets = offsets;
    it.changes = changes;
    it.pub = (firth_scan_batch){.partition = it.partition, .partition_id = s->pid,
                                .bucket = s->bucket, .batch = it.batch, .offsets = offsets,
                                .changes = changes, .commit_ms = commit_ms};
    r->rows += fr_batch_num_rows(b);
    r->items[r->n++] = it;
    return FR_OK;
}

/* ---- opening and subscribing ------------------------------------------------------------------ */

int firth_scanner_open(firth_client *c, const char *table, const firth_scanner_options *o,
                       firth_scanner **out, firth_error *err)
{
    if (!c || !table || !out) return fr_client_fail(err, FIRTH_EINVAL, "scanner: a NULL argument");
    if (o && o->max_bytes < 0)
        return fr_client_fail(err, FIRTH_EINVAL, "scanner: max_bytes is negative");
    firth_scanner *s = fr_calloc(1, sizeof *s);
    if (!s) return fr_client_fail(err, FIRTH_ENOMEM, "out of memory opening a scanner");
    s->client = c;
    s->max_bytes = o && o->max_bytes ? o->max_bytes : SCANNER_MAX_BYTES_DEFAULT;
    fr_error e = {0};
    const char *where = o && o->where && *o->where ? o->where : NULL;
    int rc = fr_ctable_open(c, table, &s->t, &e);
    if (rc == 0) rc = fr_rfetch_init(&s->plan, s->t, o ? o->columns : NULL, where, &e);
    if (rc == 0 && where && !c->remote) {
        s->arena = fr_arena_new(4096);
        rc = s->arena ? fr_sql_parse_expr(where, strlen(where), s->t->schema, s->arena,
                                          &s->filter, &e)
                      : fr_fail(&e, FR_ENOMEM, "out of memory opening a scanner");
    }
    if (rc < 0) {
        firth_scanner_close(s);
        return firth_error_from(&e, err);
    }
    *out = s;
    return FIRTH_OK;
}

/* Forgets the fetch sent ahead: the subscriptions or their positions changed. */
static void ahead_drop(firth_scanner *s)
{
    fr_cnet_pending_free(s->ahead);
    s->ahead = NULL;
}

void firth_scanner_close(firth_scanner *s)
{
    if (!s) return;
    ahead_drop(s);
    for (int i = 0; i < s->nsubs; i++) fr_free(s->subs[i].pname);
    fr_free(s->subs);
    fr_rfetch_free(&s->plan);
    fr_arena_free(s->arena);
    fr_ctable_free(s->t);
    fr_free(s);
}

/* The table's partitions now (ids and names; the caller frees with fr_cparts_free). */
static int list_parts(firth_scanner *s, fr_cpart **out, int *n, fr_error *err)
{
    if (s->client->remote) return fr_ctable_partitions(s->t, true, out, n, err);
    fr_partition *p = NULL;
    FR_TRY(fr_table_list_partitions(s->t->local, &p, n, err));
    *out = fr_calloc((size_t)*n + 1, sizeof **out);
    int rc = *out ? FR_OK : fr_fail(err, FR_ENOMEM, "out of memory listing partitions");
    for (int i = 0; rc == 0 && i < *n; i++) {
        (*out)[i].id = p[i].id;
        if (!((*out)[i].name = fr_strdup(p[i].name)))
            rc = fr_fail(err, FR_ENOMEM, "out of memory listing partitions");
    }
    fr_partitions_free(p, *n);
    if (rc < 0) {
        fr_cparts_free(*out, *n);
        *out = NULL;
    }
    return rc;
}

static ssub *find_sub(firth_scanner *s, int64_t pid, int bucket)
{
    for (int i = 0; i < s->nsubs; i++)
        if (s->subs[i].pid == pid && s->subs[i].bucket == bucket) return &s->subs[i];
    return NULL;
}

/* Start positions of the buckets [pids, buckets) for start/value. */
static int start_offsets(firth_scanner *s, const int64_t *pids, const int *buckets, int n,
                         firth_start start, int64_t value, int64_t *pos, fr_error *err)
{
    if (s->client->remote) {
        int spec = start == FIRTH_START_LATEST      ? FIRTH__OFFSET_SPEC__OFFSET_LATEST
                   : start == FIRTH_START_TIMESTAMP ? FIRTH__OFFSET_SPEC__OFFSET_TIMESTAMP
                                                    : FIRTH__OFFSET_SPEC__OFFSET_EARLIEST;
        FR_TRY(fr_remote_list_offsets(s->t, spec, value, pids, buckets, n, pos, err));
        if (start != FIRTH_START_OFFSET) return FR_OK;
        int64_t *ends = fr_calloc((size_t)n + 1, sizeof *ends);
        FR_CHECK(ends, FR_ENOMEM, err, "out of memory subscribing");
        int rc = fr_remote_list_offsets(s->t, FIRTH__OFFSET_SPEC__OFFSET_LATEST, 0, pids,
                                        buckets, n, ends, err);
        for (int i = 0; rc == 0 && i < n; i++)
            pos[i] = value < pos[i] ? pos[i] : value > ends[i] ? ends[i] : value;
        fr_free(ends);
        return rc;
    }
    for (int i = 0; i < n; i++) {
        fr_log *log = fr_table_partition_log(s->t->local, pids[i], buckets[i]);
        FR_CHECK(log, FR_ENOTFOUND, err, "table %s: bucket %d of partition %lld cannot be read",
                 s->t->qname, buckets[i], (long long)pids[i]);
        int64_t lo = fr_log_start_offset(log), hi = fr_log_end_offset(log);
        switch (start) {
        case FIRTH_START_LATEST: pos[i] = hi; break;
        case FIRTH_START_OFFSET: pos[i] = value < lo ? lo : value > hi ? hi : value; break;
        case FIRTH_START_TIMESTAMP: FR_TRY(fr_log_offset_for_time(log, value, &pos[i], err)); break;
        default: pos[i] = lo; break;
        }
    }
    return FR_OK;
}

/* Subscribes (or moves) the buckets of the partitions given. */
static int add_subs(firth_scanner *s, const fr_cpart *parts, int nparts, int bucket,
                    firth_start start, int64_t value, fr_error *err)
{
    int nb = s->t->nbuckets, n = 0;
    int64_t total = (int64_t)nparts * (bucket < 0 ? nb : 1);
    int64_t *pids = fr_calloc((size_t)total + 1, sizeof *pids);
    int *buckets = fr_calloc((size_t)total + 1, sizeof *buckets);
    int64_t *pos = fr_calloc((size_t)total + 1, sizeof *pos);
    int rc = pids && buckets && pos ? FR_OK : fr_fail(err, FR_ENOMEM, "out of memory subscribing");
    for (int p = 0; rc == 0 && p < nparts; p++)
        for (int b = bucket < 0 ? 0 : bucket; b < (bucket < 0 ? nb : bucket + 1); b++) {
            pids[n] = parts ? parts[p].id : -1;
            buckets[n++] = b;
        }
    if (rc == 0) rc = start_offsets(s, pids, buckets, n, start, value, pos, err);
    if (rc == 0) ahead_drop(s);
    if (rc == 0 && s->nsubs + n > s->cap) {
        int ncap = s->nsubs + n + 8;
        ssub *grown = fr_realloc(s->subs, sizeof *grown * (size_t)ncap);
        if (!grown) rc = fr_fail(err, FR_ENOMEM, "out of memory subscribing");
        else s->subs = grown, s->cap = ncap;
    }
    for (int i = 0; rc == 0 && i < n; i++) {
        ssub *sub = find_sub(s, pids[i], buckets[i]);
        if (sub) {
            sub->pos = pos[i];
            continue;
        }
        const char *name = NULL;
        for (int p = 0; parts && p < nparts; p++)
            if (parts[p].id == pids[i]) name = parts[p].name;
        sub = &s->subs[s->nsubs];
        *sub = (ssub){.pid = pids[i], .bucket = buckets[i], .pos = pos[i]};
        if (name && !(sub->pname = fr_strdup(name))) {
            rc = fr_fail(err, FR_ENOMEM, "out of memory subscribing");
            break;
        }
        s->nsubs++;
    }
    fr_free(pids);
    fr_free(buckets);
    fr_free(pos);
    return rc;
}

int firth_scanner_subscribe(firth_scanner *s, const char *partition, int bucket,
                            firth_start start, int64_t value, firth_error *err)
{
    if (!s) return fr_client_fail(err, FIRTH_EINVAL, "subscribe: no scanner");
    if (start < FIRTH_START_EARLIEST || start > FIRTH_START_TIMESTAMP)
        return fr_client_fail(err, FIRTH_EINVAL, "subscribe: unknown start %d", (int)start);
    if (bucket < -1 || bucket >= s->t->nbuckets)
        return fr_client_fail(err, FIRTH_EINVAL, "table %s has buckets 0 to %d, not %d",
                              s->t->qname, s->t->nbuckets - 1, bucket);
    fr_error e = {0};
    int rc = FR_OK;
    if (!s->t->npart) {
        if (partition)
            return fr_client_fail(err, FIRTH_EINVAL, "table %s has no partitions",
                                  s->t->qname);
        rc = add_subs(s, NULL, 1, bucket, start, value, &e);
        return rc < 0 ? firth_error_from(&e, err) : FIRTH_OK;
    }
    fr_cpart *parts = NULL;
    int n = 0;
    rc = list_parts(s, &parts, &n, &e);
    if (rc == 0 && partition) {
        int k = 0;
        while (k < n && strcmp(parts[k].name, partition) != 0) k++;
        rc = k < n ? add_subs(s, &parts[k], 1, bucket, start, value, &e)
                   : fr_fail(&e, FR_ENOTFOUND, "table %s has no partition %s", s->t->qname,
                             partition);
    } else if (rc == 0) {
        rc = add_subs(s, parts, n, bucket, start, value, &e);
        s->follow_all = true;
        s->follow_bucket = bucket;
        s->discovered_ns = fr_monotonic_ns();
    }
    fr_cparts_free(parts, n);
    return rc < 0 ? firth_error_from(&e, err) : FIRTH_OK;
}

int firth_scanner_unsubscribe(firth_scanner *s, const char *partition, int bucket,
                              firth_error *err)
{
    if (!s) return fr_client_fail(err, FIRTH_EINVAL, "unsubscribe: no scanner");
    int k = 0;
    for (int i = 0; i < s->nsubs; i++) {
        ssub *sub = &s->subs[i];
        bool part = !partition || (sub->pname && strcmp(sub->pname, partition) == 0);
        if (part && (bucket < 0 || sub->bucket == bucket)) fr_free(sub->pname);
        else s->subs[k++] = *sub;
    }
    s->nsubs = k;
    ahead_drop(s);
    if (!partition) s->follow_all = false;
    return FIRTH_OK;
}

int firth_scanner_position(firth_scanner *s, const char *partition, int bucket,
                           int64_t *offset, firth_error *err)
{
    for (int i = 0; s && i < s->nsubs; i++) {
        const ssub *sub = &s->subs[i];
        bool part = partition ? sub->pname && strcmp(sub->pname, partition) == 0 : !sub->pname;
        if (part && sub->bucket == bucket) {
            *offset = sub->pos;
            return FIRTH_OK;
        }
    }
    return fr_client_fail(err, FIRTH_ENOTFOUND, "bucket %d of %s is not subscribed", bucket,
                          partition ? partition : "the table");
}

/* Subscribes new partitions (read from their start) when following every partition. */
static int discover(firth_scanner *s, fr_error *err)
{
    if (!s->follow_all || fr_monotonic_ns() - s->discovered_ns < SCANNER_DISCOVERY_NS)
        return FR_OK;
    s->discovered_ns = fr_monotonic_ns();
    fr_cpart *parts = NULL;
    int n = 0, k = 0;
    FR_TRY(list_parts(s, &parts, &n, err));
    for (int i = 0; i < n; i++) {
        bool known = false;
        for (int j = 0; j < s->nsubs && !known; j++) known = s->subs[j].pid == parts[i].id;
        if (!known) parts[k++] = parts[i];
        else fr_free(parts[i].name);
    }
    int rc = k ? add_subs(s, parts, k, s->follow_bucket, FIRTH_START_EARLIEST, 0, err) : FR_OK;
    fr_cparts_free(parts, k);
    return rc;
}

static void drop_sub(firth_scanner *s, int i)
{
    ahead_drop(s);
    fr_free(s->subs[i].pname);
    s->subs[i] = s->subs[--s->nsubs];
}

/* ---- polling ------------------------------------------------------------------------------------ */

/* The FETCH_LOG of every subscribed bucket from pos[i] (subs' order), in storage that
 * lives as long as *f. */
typedef struct fetch_req {
    Firth__FetchLogRequest req;
    Firth__FetchTable ft, *fts[1];
    Firth__TablePath path;
    Firth__FetchBucket *fb;
    Firth__FetchBucket **fbp;
} fetch_req;

static void fetch_req_free(fetch_req *f)
{
    fr_free(f->fb);
    fr_free(f->fbp);
}

static int fetch_req_build(firth_scanner *s, const int64_t *pos, int64_t wait_ms, fetch_req *f,
                           fr_error *err)
{
    int n = s->nsubs;
    *f = (fetch_req){.req = FIRTH__FETCH_LOG_REQUEST__INIT, .ft = FIRTH__FETCH_TABLE__INIT,
                     .path = FIRTH__TABLE_PATH__INIT};
    f->fb = fr_calloc((size_t)n + 1, sizeof *f->fb);
    f->fbp = fr_calloc((size_t)n + 1, sizeof *f->fbp);
    if (!f->fb || !f->fbp) {
        fetch_req_free(f);
        return fr_fail(err, FR_ENOMEM, "out of memory polling");
    }
    fr_ctable_path(s->t, &f->path);
    f->ft.path = &f->path;
    f->ft.table_id = s->t->id;
    if (!s->plan.all_columns || s->plan.ncols != fr_schema_num_fields(s->t->schema)) {
        f->ft.projection = (int32_t *)s->plan.cols;
        f->ft.n_projection = (size_t)s->plan.ncols;
    }
    f->ft.filter = s->plan.filter_text ? s->plan.filter_text : "";
    for (int i = 0; i < n; i++) {
        firth__fetch_bucket__init(&f->fb[i]);
        f->fb[i].partition_id = s->subs[i].pid;
        f->fb[i].bucket = s->subs[i].bucket;
        f->fb[i].fetch_offset = pos ? pos[i] : s->subs[i].pos;
        f->fbp[i] = &f->fb[i];
    }
    f->ft.buckets = f->fbp;
    f->ft.n_buckets = (size_t)n;
    f->fts[0] = &f->ft;
    f->req.tables = f->fts;
    f->req.n_tables = 1;
    int64_t wait = wait_ms < FR_RPC_WAIT_MS_MAX ? wait_ms : FR_RPC_WAIT_MS_MAX;
    f->req.max_wait_ms = (int32_t)wait;
    f->req.min_bytes = wait > 0 ? 1 : 0;
    f->req.max_bytes = (int32_t)(s->max_bytes < INT32_MAX ? s->max_bytes : INT32_MAX);
    return FR_OK;
}

/* The table's result of a FETCH_LOG answer, checked against the subscriptions. */
static int fetch_result(const firth_scanner *s, const ProtobufCMessage *m,
                        const Firth__FetchTableResult **out, fr_error *err)
{
    const Firth__FetchLogResponse *resp = (const Firth__FetchLogResponse *)m;
    FR_CHECK(resp->n_tables == 1, FR_ECORRUPT, err, "fetch_log: %zu tables in the answer",
             resp->n_tables);
    const Firth__FetchTableResult *tr = resp->tables[0];
    if (tr->error && tr->error->code) return fr_rpc_error_get(tr->error, "fetch_log", err);
    FR_CHECK(tr->n_buckets == (size_t)s->nsubs, FR_ECORRUPT, err,
             "fetch_log: %zu bucket results for %d", tr->n_buckets, s->nsubs);
    *out = tr;
    return FR_OK;
}

/* Sends the next fetch before this answer is decoded, so that the server reads and sends
 * it while the client decodes (a consumer that keeps up then rarely waits a round trip).
 * Only after an answer with records and no bucket errors: the positions that follow are
 * then each bucket's next_offset. A failure to send is not an error: the next poll fetches
 * as usual. */
static void ahead_send(firth_scanner *s, const Firth__FetchTableResult *tr, int64_t wait_ms)
{
    bool any = false;
    for (size_t i = 0; i < tr->n_buckets; i++) {
        const Firth__FetchBucketResult *b = tr->buckets[i];
        if (b->error && b->error->code) return;
        any |= b->records.len > 0;
    }
    int64_t *pos = any ? fr_malloc(sizeof *pos * ((size_t)s->nsubs + 1)) : NULL;
    if (!pos) return;
    for (int i = 0; i < s->nsubs; i++) {
        int64_t next = tr->buckets[i]->next_offset;
        pos[i] = next > s->subs[i].pos ? next : s->subs[i].pos;
    }
    fetch_req f;
    fr_error e = {0};
    if (fetch_req_build(s, pos, wait_ms, &f, &e) == 0) {
        if (fr_cnet_start(s->client->net, FR_RPC_FETCH_LOG, &f.req.base, f.req.max_wait_ms,
                          NULL, NULL, &s->ahead, &e) < 0)
            s->ahead = NULL;
        fetch_req_free(&f);
    }
    fr_free(pos);
}

/* Decodes the answer's batches into r and moves the positions past them. */
static int fetch_apply(firth_scanner *s, const Firth__FetchTableResult *tr,
                       firth_scan_result *r, fr_error *err)
{
    int n = s->nsubs, nd = 0, dcap = 0, rc = FR_OK;
    fr_rdecoded *d = NULL;
    bool *gone = fr_calloc((size_t)n + 1, sizeof *gone);
    FR_CHECK(gone, FR_ENOMEM, err, "out of memory polling");
    for (int i = 0; i < n; i++) {
        const Firth__FetchBucketResult *b = tr->buckets[i];
        ssub *sub = &s->subs[i];
        if (b->error && b->error->code == FIRTH__ERROR_CODE__OUT_OF_RANGE &&
            sub->pos < b->log_start_offset) {
            sub->pos = b->log_start_offset; /* retention went past the position */
            continue;
        }
        if (b->error && b->error->code == FIRTH__ERROR_CODE__NOT_FOUND && sub->pname) {
            gone[i] = true; /* the partition was dropped */
            continue;
        }
        if (b->error && b->error->code) {
            rc = fr_rpc_error_get(b->error, "fetch_log", err);
            goto fail;
        }
        nd = 0;
        FR_GOTO(fr_rfetch_decode(&s->plan, s->t, b->records.data, b->records.len, sub->pos, &d,
                                 &nd, &dcap, err));
        for (int k = 0; k < nd; k++) {
            rc = result_add(r, sub, d[k].batch, d[k].offsets, d[k].changes, d[k].commit_ms, err);
            d[k].batch = NULL;
            d[k].offsets = NULL;
            d[k].changes = NULL;
            if (rc < 0) goto fail;
        }
        if (b->next_offset > sub->pos) sub->pos = b->next_offset;
    }
    for (int i = n - 1; i >= 0; i--)
        if (gone[i]) drop_sub(s, i);
fail:
    fr_rdecoded_free(d, nd);
    fr_free(gone);
    return rc;
}

/* The answer to the fetch sent ahead, when it came within timeout_ms (*m NULL otherwise, or
 * when it failed: the caller then fetches afresh). */
static void ahead_take(firth_scanner *s, int64_t timeout_ms, ProtobufCMessage **m)
{
    *m = NULL;
    fr_error e = {0};
    int rc = fr_cnet_wait(s->ahead, timeout_ms, m, &e);
    if (rc == 0 && !*m) return; /* still on its way */
    if (rc < 0) FR_DEBUG("scanner: the fetch sent ahead failed (%s); fetching again", e.msg);
    ahead_drop(s);
}

/* Whether a FETCH_LOG answer carries nothing: no records and no error anywhere. */
static bool answer_empty(const ProtobufCMessage *m)
{
    const Firth__FetchLogResponse *resp = (const Firth__FetchLogResponse *)m;
    for (size_t t = 0; t < resp->n_tables; t++) {
        const Firth__FetchTableResult *tr = resp->tables[t];
        if (tr->error && tr->error->code) return false;
        for (size_t i = 0; i < tr->n_buckets; i++)
            if (tr->buckets[i]->records.len > 0 ||
                (tr->buckets[i]->error && tr->buckets[i]->error->code))
                return false;
    }
    return true;
}

/* One long poll: the answer of the fetch sent ahead when there is one, else a fetch now. */
static int poll_remote(firth_scanner *s, int64_t timeout_ms, firth_scan_result *r,
                       fr_error *err)
{
    int64_t deadline = fr_monotonic_ns() + timeout_ms * 1000000;
    ProtobufCMessage *m = NULL;
    const Firth__FetchTableResult *tr = NULL;
    int rc = FR_OK;
    if (s->ahead) {
        ahead_take(s, timeout_ms, &m);
        if (s->ahead) return FR_OK; /* nothing came in time */
        /* An empty answer (its wait ran out) leaves the rest of this poll's to a new fetch. */
        if (m && answer_empty(m) && fr_monotonic_ns() < deadline) {
            fr_cnet_release(s->client->net, m);
            m = NULL;
        }
    }
    if (!m) {
        int64_t left = (deadline - fr_monotonic_ns()) / 1000000;
        fetch_req f;
        FR_TRY(fetch_req_build(s, NULL, left > 0 ? left : 0, &f, err));
        rc = fr_cnet_call(s->client->net, FR_RPC_FETCH_LOG, &f.req.base, f.req.max_wait_ms,
                          FR_CNET_RETRY, NULL, NULL, &m, NULL, err);
        fetch_req_free(&f);
        if (rc < 0) return rc;
    }
    rc = fetch_result(s, m, &tr, err);
    if (rc == 0)
        ahead_send(s, tr, timeout_ms < SCANNER_AHEAD_WAIT_MS_MAX ? timeout_ms
                                                                 : SCANNER_AHEAD_WAIT_MS_MAX);
    if (rc == 0) rc = fetch_apply(s, tr, r, err);
    if (rc < 0) ahead_drop(s);
    fr_cnet_release(s->client->net, m);
    return rc;
}

typedef struct lread {
    firth_scan_result *r;
    const ssub *sub;
} lread;

static int on_log_batch(void *ctx, fr_batch *batch, const int64_t *offsets,
                        const uint8_t *change_types, int64_t commit_ts, fr_error *err)
{
    lread *l = ctx;
    int64_t rows = fr_batch_num_rows(batch);
    if (rows == 0) {
        fr_batch_free(batch);
        return 0;
    }
    int64_t *offs = fr_malloc(sizeof *offs * (size_t)rows);
    uint8_t *changes = change_types ? fr_malloc((size_t)rows) : NULL;
    if (!offs || (change_types && !changes)) {
        fr_batch_free(batch);
        fr_free(offs);
        fr_free(changes);
        return fr_fail(err, FR_ENOMEM, "out of memory collecting records");
    }
    memcpy(offs, offsets, sizeof *offs * (size_t)rows);
    if (changes) memcpy(changes, change_types, (size_t)rows);
    return result_add(l->r, l->sub, batch, offs, changes, commit_ts, err);
}

static int poll_local_once(firth_scanner *s, firth_scan_result *r, fr_error *err)
{
    int64_t budget = s->nsubs ? s->max_bytes / s->nsubs : s->max_bytes;
    if (budget < (64 << 10)) budget = 64 << 10;
    for (int i = 0; i < s->nsubs; i++) {
        ssub *sub = &s->subs[i];
        fr_log *log = fr_table_partition_log(s->t->local, sub->pid, sub->bucket);
        if (!log) {
            if (sub->pname) { /* the partition was dropped */
                drop_sub(s, i--);
                continue;
            }
            return fr_fail(err, FR_EIO, "table %s: bucket %d cannot be read (see the log)",
                           s->t->qname, sub->bucket);
        }
        fr_log_read rd = {
            .from_offset = sub->pos,
            .schema = s->t->schema,
            .columns = s->plan.all_columns ? NULL : s->plan.cols,
            .ncolumns = s->plan.all_columns ? 0 : s->plan.nwanted,
            .filter = s->filter,
            .max_bytes = budget,
            .max_records = -1,
        };
        lread l = {.r = r, .sub = sub};
        int64_t next = sub->pos;
        int rc = fr_log_read_batches(log, &rd, on_log_batch, &l, &next, err);
        if (rc == FR_ERANGE) {
            int64_t lo = fr_log_start_offset(log), hi = fr_log_end_offset(log);
            sub->pos = sub->pos < lo ? lo : hi; /* retention, or a truncated log */
            continue;
        }
        if (rc < 0) return rc;
        if (next > sub->pos) sub->pos = next;
    }
    return FR_OK;
}

int firth_scanner_poll(firth_scanner *s, int64_t timeout_ms, firth_scan_result **out,
                       firth_error *err)
{
    if (!s || !out) return fr_client_fail(err, FIRTH_EINVAL, "poll: a NULL argument");
    if (timeout_ms < 0) timeout_ms = 0;
    firth_scan_result *r = fr_calloc(1, sizeof *r);
    if (!r) return fr_client_fail(err, FIRTH_ENOMEM, "out of memory polling");
    fr_error e = {0};
    int64_t deadline = fr_monotonic_ns() + timeout_ms * 1000000;
    int rc = discover(s, &e);
    while (rc == 0) {
        if (s->nsubs == 0) {
            /* Nothing to read: wait out the timeout, for a partition to appear. */
            int64_t left = deadline - fr_monotonic_ns();
            if (left <= 0 || !s->follow_all) break;
            struct timespec ts = {.tv_nsec = 50 * 1000000};
            nanosleep(&ts, NULL);
            rc = discover(s, &e);
            continue;
        }
        if (s->client->remote) {
            int64_t left = (deadline - fr_monotonic_ns()) / 1000000;
            if (s->follow_all && left > SCANNER_DISCOVERY_NS / 1000000)
                left = SCANNER_DISCOVERY_NS / 1000000;
            rc = poll_remote(s, left > 0 ? left : 0, r, &e);
            /* One long poll; a scanner that follows new partitions also ends it at the
             * discovery interval, which the server's wait keeps to. */
            break;
        }
        rc = poll_local_once(s, r, &e);
        if (rc < 0 || r->rows > 0 || fr_monotonic_ns() >= deadline) break;
        int64_t left = deadline - fr_monotonic_ns();
        int64_t nap = left < SCANNER_IDLE_SLEEP_NS ? left : SCANNER_IDLE_SLEEP_NS;
        struct timespec ts = {.tv_sec = 0, .tv_nsec = nap > 0 ? nap : 0};
        nanosleep(&ts, NULL);
        rc = discover(s, &e);
    }
    if (rc < 0) {
        firth_scan_result_free(r);
        return firth_error_from(&e, err);
    }
    *out = r;
    return FIRTH_OK;
}
