/* client_remote.c — the public calls over the native protocol: opening "firth://HOST:PORT",
 * SQL with its results streamed back as Arrow IPC, table descriptions, and writes (appends to
 * log tables, upserts and deletes into primary-key tables) split by partition and bucket
 * into record batches.
 *
 * The session database of a remote client lives here, not on the server: each EXECUTE_SQL
 * starts in it, and its final frame says where USE left it. Writes carry the table id read
 * when the table was described, so that a table dropped and created again under the same
 * name since then is not written by mistake. */
#include "client/client_int.h"

#include <stdatomic.h>
#include <stdio.h>
#include <strings.h>

/* ---- opening ------------------------------------------------------------------------------- */

/* "HOST:PORT", "[V6]:PORT" or "HOST" (the default port). */
static int parse_hostport(const char *s, char *host, size_t cap, int *port, fr_error *err)
{
    const char *colon = NULL;
    const char *h = s;
    size_t hl;
    if (*s == '[') {
        const char *close = strchr(s, ']');
        FR_CHECK(close, FR_EINVAL, err, "'%s': an IPv6 address needs its closing ']'", s);
        h = s + 1;
        hl = (size_t)(close - h);
        colon = close[1] == ':' ? close + 1 : NULL;
        FR_CHECK(close[1] == '\0' || colon, FR_EINVAL, err, "'%s': junk after ']'", s);
    } else {
        colon = strrchr(s, ':');
        hl = colon ? (size_t)(colon - s) : strlen(s);
    }
    FR_CHECK(hl > 0 && hl < cap, FR_EINVAL, err, "'%s' names no host", s);
    memcpy(host, h, hl);
    host[hl] = '\0';
    *port = 9123;
    if (colon) {
        int64_t p = 0;
        fr_error e2 = {0};
        FR_CHECK(fr_parse_i64(colon + 1, &p, &e2) == 0 && p > 0 && p < 65536, FR_EINVAL, err,
                 "'%s': the port must be a number from 1 to 65535", s);
        *port = (int)p;
    }
    return FR_OK;
}

int fr_remote_open(const char *target, const char *hostport, firth_client **out,
                   firth_error *err)
{
    fr_error e = {0};
    char host[256];
    fr_cnet_options o;
    fr_cnet_options_default(&o);
    if (parse_hostport(hostport, host, sizeof host, &o.port, &e) < 0)
        return firth_error_from(&e, err);
    o.host = host;
    firth_client *c = fr_calloc(1, sizeof *c);
    if (!c) return fr_client_fail(err, FIRTH_ENOMEM, "out of memory opening %s", target);
    c->remote = true;
    pthread_mutex_init(&c->db_mu, NULL);
    pthread_mutex_init(&c->tables_mu, NULL);
    snprintf(c->database, sizeof c->database, "default");
    c->target = fr_strdup(target);
    c->encoded = fr_bufpool_new(CLIENT_ENCODED_KEEP_BYTES);
    if (!c->target || !c->encoded || fr_cnet_open(&o, &c->net, &e) < 0) {
        if (!c->target || !c->encoded) fr_fail(&e, FR_ENOMEM, "out of memory opening %s", target);
        firth_close(c);
        return firth_error_from(&e, err);
    }
    *out = c;
    return FIRTH_OK;
}

/* ---- SQL ----------------------------------------------------------------------------------- */

typedef struct rexec {
    firth_client *client;
    const firth_sink *sink;
    int statement;     /* the statement whose stream is being read */
    fr_schema *schema; /* its schema, once its Schema message came */
    int user_rc;
} rexec;

static const uint8_t ipc_eos[8] = {0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0};

static int rexec_user(rexec *x, int rc, fr_error *err)
{
    if (rc == 0) return 0;
    x->user_rc = rc;
    return rc > 0 ? 1 : fr_fail(err, rc, "stopped by the caller's callback (%d)", rc);
}

/* Reads the whole IPC messages of one piece of a statement's stream. */
static int rexec_ipc(rexec *x, const uint8_t *p, size_t n, fr_error *err)
{
    const firth_sink *s = x->sink;
    while (n > 0) {
        if (n >= 8 && memcmp(p, ipc_eos, 8) == 0) {
            p += 8;
            n -= 8;
            continue;
        }
        size_t used = 0;
        if (!x->schema) {
            FR_TRY(fr_ipc_read_schema(p, n, 0, &x->schema, &used, err));
            if (s->begin) {
                char *json = NULL;
                FR_TRY(fr_schema_to_json(x->schema, &json, err));
                int rc = s->begin(s->ctx, json);
                fr_free(json);
                if (rexec_user(x, rc, err)) return rc < 0 ? rc : 1;
            }
        } else {
            fr_batch *b = NULL;
            FR_TRY(fr_ipc_read_batch(p, n, x->schema, &b, &used, err));
            if (!s->rows) {
                fr_batch_free(b);
            } else {
                firth_batch *fb = firth_batch_wrap(b);
                if (!fb) {
                    fr_batch_free(b);
                    return fr_fail(err, FR_ENOMEM, "out of memory passing a result batch");
                }
                int rc = s->rows(s->ctx, fb);
                if (rexec_user(x, rc, err)) return rc < 0 ? rc : 1;
            }
        }
        FR_CHECK(used > 0 && used <= n, FR_ECORRUPT, err, "a result message of %zu bytes",
                 used);
        p += used;
        n -= used;
    }
    return FR_OK;
}

static int rexec_frame(void *ctx, ProtobufCMessage *m, fr_error *err)
{
    rexec *x = ctx;
    const Firth__ExecuteSqlResponse *r = (const Firth__ExecuteSqlResponse *)m;
    if (r->statement != x->statement) {
        fr_schema_free(x->schema);
        x->schema = NULL;
        x->statement = r->statement;
    }
    int rc = rexec_ipc(x, r->arrow_ipc.data, r->arrow_ipc.len, err);
    if (rc != 0) return rc;
    if (r->statement_done) {
        bool query = x->schema != NULL;
        fr_schema_free(x->schema);
        x->schema = NULL;
        x->statement++;
        if (x->sink->end) {
            const char *msg = r->message && *r->message ? r->message : (query ? NULL : "");
            rc = x->sink->end(x->sink->ctx, msg);
            if (rexec_user(x, rc, err)) return rc < 0 ? rc : 1;
        }
    }
    if (r->database && *r->database) {
        pthread_mutex_lock(&x->client->db_mu);
        snprintf(x->client->database, sizeof x->client->database, "%s", r->database);
        pthread_mutex_unlock(&x->client->db_mu);
    }
    return FR_OK;
}

int fr_remote_execute(firth_client *c, const char *sql, const firth_sink *sink,
                      firth_error *err)
{
    firth_sink none = {0};
    rexec x = {.client = c, .sink = sink ? sink : &none};
    char db[FR_NAME_BYTES_MAX + 1];
    fr_client_database(c, db);
    Firth__ExecuteSqlRequest req = FIRTH__EXECUTE_SQL_REQUEST__INIT;
    req.sql = (char *)sql;
    req.database = db;
    fr_error e = {0};
    ProtobufCMessage *last = NULL;
    bool stopped = false;
    int rc = fr_cnet_call(c->net, FR_RPC_EXECUTE_SQL, &req.base, 0, 0, rexec_frame, &x, &last,
                          &stopped, &e);
    if (rc == 0 && last) rc = rexec_frame(&x, last, &e);
    fr_rpc_free(last);
    fr_schema_free(x.schema);
    if (x.user_rc > 0) return FIRTH_OK;
    if (x.user_rc < 0)
        return fr_client_fail(err, x.user_rc, "execution stopped by the sink (%d)", x.user_rc);
    if (rc < 0) {
        /* SQL errors read as they do embedded: "line 1, column 8: ...". */
        static const char prefix[] = "execute_sql: ";
        if (strncmp(e.msg, prefix, sizeof prefix - 1) == 0)
            memmove(e.msg, e.msg + sizeof prefix - 1, strlen(e.msg) - (sizeof prefix - 2));
        return firth_error_from(&e, err);
    }
    return FIRTH_OK;
}

int fr_remote_table_info(firth_client *c, const char *table, char **json, firth_error *err)
{
    fr_error e = {0};
    char db[FR_NAME_BYTES_MAX + 1], t[FR_NAME_BYTES_MAX + 1];
    if (fr_client_resolve(c, table, db, t, &e) < 0) return firth_error_from(&e, err);
    Firth__GetTableInfoRequest req = FIRTH__GET_TABLE_INFO_REQUEST__INIT;
    Firth__TablePath path = FIRTH__TABLE_PATH__INIT;
    path.database = db;
    path.table = t;
    req.path = &path;
    ProtobufCMessage *m = NULL;
    if (fr_cnet_call(c->net, FR_RPC_GET_TABLE_INFO, &req.base, 0, FR_CNET_RETRY, NULL, NULL,
                     &m, NULL, &e) < 0)
        return firth_error_from(&e, err);
    const Firth__GetTableInfoResponse *r = (const Firth__GetTableInfoResponse *)m;
    *json = fr_strdup(r->table_json ? r->table_json : "{}");
    fr_rpc_free(m);
    if (!*json) return fr_client_fail(err, FIRTH_ENOMEM, "out of memory describing %s", table);
    return FIRTH_OK;
}

/* ---- writes ---------------------------------------------------------------------------------- */

/* The batch must have the table's columns, by type, in the table's order. */
int fr_remote_check_batch(const fr_ctable *t, const fr_batch *b, fr_error *err)
{
    int nf = fr_schema_num_fields(t->schema);
    FR_CHECK(fr_batch_num_columns(b) == nf, FR_ETYPE, err,
             "table %s has %d columns; the batch has %d", t->qname, nf,
             fr_batch_num_columns(b));
    for (int i = 0; i < nf; i++) {
        const fr_type *want = &fr_schema_field(t->schema, i)->type;
        const fr_type *got = &fr_batch_column(b, i)->type;
        if (!fr_type_equal(want, got)) {
            char a[64], g[64];
            fr_type_format(want, false, a, sizeof a);
            fr_type_format(got, false, g, sizeof g);
            return fr_fail(err, FR_ETYPE, "table %s: column %d (%s) is %s; the batch has %s",
                           t->qname, i + 1, fr_schema_field(t->schema, i)->name, a, g);
        }
    }
    return FR_OK;
}

int fr_remote_encode(const fr_ctable *t, const fr_batch *b, const uint8_t *ops,
                     int64_t writer_id, int32_t seq, fr_buf *out, fr_error *err)
{
    uint8_t *changes = NULL;
    int64_t rows = fr_batch_num_rows(b);
    if (ops) {
        changes = fr_malloc((size_t)rows + 1);
        FR_CHECK(changes, FR_ENOMEM, err, "out of memory encoding %lld rows", (long long)rows);
        for (int64_t i = 0; i < rows; i++)
            changes[i] = ops[i] == FIRTH_OP_DELETE ? FR_CHANGE_DELETE : FR_CHANGE_UPDATE_AFTER;
    }
    fr_rb_params p = {
        .schema_id = fr_schema_id(t->schema),
        .compression = t->compression,
        .writer_id = writer_id < 0 ? FR_NO_WRITER : writer_id,
        .batch_sequence = writer_id < 0 ? -1 : seq,
        .change_types = changes,
    };
    int rc = fr_rb_encode(b, &p, out, err);
    fr_free(changes);
    return rc;
}

/* Fills one unit's result from a per-bucket error (absent: success). */
static void unit_result(fr_rput *u, const Firth__Error *e, const char *what)
{
    if (!e || e->code == FIRTH__ERROR_CODE__NONE) return;
    if (e->code == FIRTH__ERROR_CODE__DUPLICATE) {
        u->count = 0; /* applied by an earlier attempt */
        return;
    }
    u->status = fr_rpc_error_get(e, what, &u->err);
}

/* One PRODUCE_LOG (log tables) or PUT_KV request for units, pointing at their records. */
typedef struct rwrite {
    union {
        Firth__ProduceLogRequest produce;
        Firth__PutKvRequest put;
    } req;
    Firth__TablePath path;
    Firth__ProduceBucket *pitems, **pptrs;
    Firth__PutKvBucket *kitems, **kptrs;
} rwrite;

static void rwrite_free(rwrite *q)
{
    fr_free(q->pitems);
    fr_free(q->pptrs);
    fr_free(q->kitems);
    fr_free(q->kptrs);
}

static int rwrite_build(fr_ctable *t, fr_rput *units, int n, const int *targets, int ntargets,
                        int64_t writer_id, rwrite *q, fr_error *err)
{
    *q = (rwrite){.path = FIRTH__TABLE_PATH__INIT};
    fr_ctable_path(t, &q->path);
    int64_t wid = writer_id < 0 ? -1 : writer_id;
    if (t->npk) {
        q->req.put = (Firth__PutKvRequest)FIRTH__PUT_KV_REQUEST__INIT;
        q->kitems = fr_calloc((size_t)n + 1, sizeof *q->kitems);
        q->kptrs = fr_calloc((size_t)n + 1, sizeof *q->kptrs);
        FR_CHECK(q->kitems && q->kptrs, FR_ENOMEM, err, "out of memory building a put request");
        for (int i = 0; i < n; i++) {
            firth__put_kv_bucket__init(&q->kitems[i]);
            q->kitems[i].partition_id = units[i].partition_id;
            q->kitems[i].bucket = units[i].bucket;
            q->kitems[i].records.data = units[i].records.data;
            q->kitems[i].records.len = units[i].records.len;
            q->kptrs[i] = &q->kitems[i];
        }
        q->req.put.path = &q->path;
        q->req.put.table_id = t->id;
        q->req.put.writer_id = wid;
        q->req.put.target_columns = (int32_t *)targets;
        q->req.put.n_target_columns = (size_t)ntargets;
        q->req.put.buckets = q->kptrs;
        q->req.put.n_buckets = (size_t)n;
        return FR_OK;
    }
    q->req.produce = (Firth__ProduceLogRequest)FIRTH__PRODUCE_LOG_REQUEST__INIT;
    q->pitems = fr_calloc((size_t)n + 1, sizeof *q->pitems);
    q->pptrs = fr_calloc((size_t)n + 1, sizeof *q->pptrs);
    FR_CHECK(q->pitems && q->pptrs, FR_ENOMEM, err, "out of memory building a produce request");
    for (int i = 0; i < n; i++) {
        firth__produce_bucket__init(&q->pitems[i]);
        q->pitems[i].partition_id = units[i].partition_id;
        q->pitems[i].bucket = units[i].bucket;
        q->pitems[i].records.data = units[i].records.data;
        q->pitems[i].records.len = units[i].records.len;
        q->pptrs[i] = &q->pitems[i];
    }
    q->req.produce.path = &q->path;
    q->req.produce.table_id = t->id;
    q->req.produce.writer_id = wid;
    q->req.produce.buckets = q->pptrs;
    q->req.produce.n_buckets = (size_t)n;
    return FR_OK;
}

static fr_rpc_api rwrite_api(const fr_ctable *t)
{
    return t->npk ? FR_RPC_PUT_KV : FR_RPC_PRODUCE_LOG;
}

/* Fills units' results from the answer m to their request. */
static int rwrite_results(const fr_ctable *t, const ProtobufCMessage *m, fr_rput *units, int n,
                          fr_error *err)
{
    if (t->npk) {
        const Firth__PutKvResponse *r = (const Firth__PutKvResponse *)m;
        FR_CHECK(r->n_buckets == (size_t)n, FR_ECORRUPT, err, "put_kv: %zu results for %d buckets",
                 r->n_buckets, n);
        for (int i = 0; i < n; i++) {
            units[i].count = r->buckets[i]->rows_changed;
            units[i].base_offset = r->buckets[i]->base_offset;
            unit_result(&units[i], r->buckets[i]->error, "put_kv");
        }
        return FR_OK;
    }
    const Firth__ProduceLogResponse *r = (const Firth__ProduceLogResponse *)m;
    FR_CHECK(r->n_buckets == (size_t)n, FR_ECORRUPT, err, "produce_log: %zu results for %d buckets",
             r->n_buckets, n);
    for (int i = 0; i < n; i++) {
        units[i].count = units[i].rows;
        units[i].base_offset = r->buckets[i]->base_offset;
        unit_result(&units[i], r->buckets[i]->error, "produce_log");
    }
    return FR_OK;
}

static int send_group(fr_ctable *t, fr_rput *units, int n, const int *targets, int ntargets,
                      int64_t writer_id, fr_error *err)
{
    rwrite q;
    ProtobufCMessage *m = NULL;
    int rc = rwrite_build(t, units, n, targets, ntargets, writer_id, &q, err);
    if (rc == 0)
        rc = fr_cnet_call(t->client->net, rwrite_api(t), &q.req.produce.base, 0,
                          writer_id >= 0 ? FR_CNET_RETRY : 0, NULL, NULL, &m, NULL, err);
    if (rc == 0) rc = rwrite_results(t, m, units, n, err);
    fr_rpc_free(m);
    rwrite_free(&q);
    return rc;
}

int fr_remote_fit(fr_ctable *t, const fr_rput *units, int nunits)
{
    /* Requests stay under the server's frame limit, with room for the headers. */
    int64_t limit = fr_cnet_server_frame_max(t->client->net) - (64 << 10), bytes = 0;
    int j = 0;
    while (j < nunits && (j == 0 || bytes + (int64_t)units[j].records.len + 64 < limit))
        bytes += (int64_t)units[j++].records.len + 64;
    return j;
}

int fr_remote_send(fr_ctable *t, fr_rput *units, int nunits, const int *targets,
                   int ntargets, int64_t writer_id, int *answered, fr_error *err)
{
    *answered = 0;
    for (int i = 0; i < nunits;) {
        int n = fr_remote_fit(t, units + i, nunits - i);
        FR_TRY(send_group(t, units + i, n, targets, ntargets, writer_id, err));
        i += n;
        *answered = i;
    }
    return FR_OK;
}

int fr_remote_start(fr_ctable *t, fr_rput *units, int n, const int *targets, int ntargets,
                    int64_t writer_id, bool in_order, void (*notify)(void *ctx), void *ctx,
                    fr_cnet_pending **out, fr_error *err)
{
    rwrite q;
    int rc = rwrite_build(t, units, n, targets, ntargets, writer_id, &q, err);
    if (rc == 0 && !t->npk) q.req.produce.in_order = in_order;
    if (rc == 0)
        rc = fr_cnet_start(t->client->net, rwrite_api(t), &q.req.produce.base, 0, notify, ctx,
                           out, err);
    rwrite_free(&q);
    return rc;
}

int fr_remote_finish(fr_ctable *t, fr_cnet_pending *p, fr_rput *units, int n, fr_error *err)
{
    ProtobufCMessage *m = NULL;
    int rc = fr_cnet_wait(p, 0, &m, err);
    if (rc == 0 && !m) rc = fr_fail(err, FR_ESTATE, "%s: no answer yet", fr_rpc_api_name(rwrite_api(t)));
    if (rc == 0) rc = rwrite_results(t, m, units, n, err);
    fr_rpc_free(m);
    return rc;
}

/* Row i's destination: (partition index among the batch's partitions, bucket). */
typedef struct route_plan {
    int32_t *dest;
    int64_t *part_ids; /* per partition index */
    int nparts;
} route_plan;

static void route_plan_free(route_plan *p)
{
    fr_free(p->dest);
    fr_free(p->part_ids);
}

/* The partition index of each row (one for a table without partitions: id -1). */
static int route_partitions(fr_ctable *t, const fr_batch *b, int32_t *pidx, route_plan *p,
                            fr_error *err)
{
    int64_t rows = fr_batch_num_rows(b);
    if (t->npart == 0) {
        memset(pidx, 0, sizeof *pidx * (size_t)rows);
        p->part_ids = fr_malloc(sizeof *p->part_ids);
        FR_CHECK(p->part_ids, FR_ENOMEM, err, "out of memory routing rows");
        p->part_ids[0] = -1;
        p->nparts = 1;
        return FR_OK;
    }
    const char *names[64];
    FR_CHECK(t->npart <= 64, FR_ELIMIT, err, "table %s has too many partition keys", t->qname);
    for (int k = 0; k < t->npart; k++) names[k] = fr_schema_field(t->schema, t->part[k])->name;
    fr_buf name, seen; /* seen: the distinct names, NUL-separated, in order of appearance */
    fr_buf_init(&name);
    fr_buf_init(&seen);
    int rc = FR_OK, cap = 0;
    for (int64_t r = 0; r < rows && rc == 0; r++) {
        fr_buf_reset(&name);
        FR_GOTO(fr_route_partition_name(b, t->part, names, t->npart, r, &name, err));
        int idx = 0;
        const char *s = (const char *)seen.data;
        for (size_t at = 0; at < seen.len; at += strlen(s + at) + 1, idx++)
            if (strcmp(s + at, (const char *)name.data) == 0) break;
        if (idx == p->nparts) {
            if (p->nparts == cap) {
                cap = cap ? 2 * cap : 8;
                int64_t *ids = fr_realloc(p->part_ids, sizeof *ids * (size_t)cap);
                if (!ids) {
                    rc = fr_fail(err, FR_ENOMEM, "out of memory routing rows");
                    goto fail;
                }
                p->part_ids = ids;
            }
            FR_GOTO(fr_ctable_partition_id(t, (const char *)name.data, &p->part_ids[idx], err));
            FR_GOTO(fr_buf_append(&seen, name.data, name.len, err));
            p->nparts++;
        }
        pidx[r] = idx;
    }
fail:
    fr_buf_free(&name);
    fr_buf_free(&seen);
    return rc;
}

/* Buckets for appends without a writer id into a table without a bucket key. */
static _Atomic uint32_t round_robin;

int fr_remote_route(fr_ctable *t, const fr_batch *b, int fixed, int32_t **dest,
                    int64_t **part_ids, int *nparts, fr_error *err)
{
    int64_t rows = fr_batch_num_rows(b);
    route_plan p = {0};
    p.dest = fr_malloc(sizeof *p.dest * (size_t)(rows + 1));
    int rc = p.dest ? FR_OK : fr_fail(err, FR_ENOMEM, "out of memory routing rows");
    if (rc == 0) rc = route_partitions(t, b, p.dest, &p, err);
    if (rc == 0 && (int64_t)p.nparts * t->nbuckets > INT32_MAX)
        rc = fr_fail(err, FR_ELIMIT, "too many destinations");
    if (rc == 0 && t->nbucket_key == 0 && fixed < 0)
        fixed = (int)(atomic_fetch_add(&round_robin, 1) % (uint32_t)t->nbuckets);
    fr_buf scratch;
    fr_buf_init(&scratch);
    for (int64_t r = 0; r < rows && rc == 0; r++) {
        int bucket = fixed;
        if (t->nbucket_key > 0)
            rc = fr_route_bucket(b, t->bucket_key, t->nbucket_key, t->nbuckets, r, &scratch,
                                 &bucket, err);
        p.dest[r] = p.dest[r] * t->nbuckets + bucket;
    }
    fr_buf_free(&scratch);
    if (rc < 0) {
        route_plan_free(&p);
        return rc;
    }
    *dest = p.dest;
    *part_ids = p.part_ids;
    *nparts = p.nparts;
    return FR_OK;
}

/* Sends again, once, the units that the server refused for want of their partition: it was
 * dropped since t's list was read (and is found again by name, or created again when the
 * table allows). The server checks a unit's partition before writing any of it, so those
 * units were not applied. */
static int resend_dropped(fr_ctable *t, fr_rput *units, int nunits, const int *targets,
                          int ntargets, int64_t writer_id, fr_error *err)
{
    fr_rput *again = NULL;
    int *from = NULL, n = 0, answered = 0, rc = FR_OK;
    for (int i = 0; i < nunits; i++) {
        if (units[i].status != FR_ENOTFOUND) continue;
        if (!again) {
            again = fr_calloc((size_t)nunits, sizeof *again);
            from = fr_calloc((size_t)nunits, sizeof *from);
            if (!again || !from) FR_GOTO(fr_fail(err, FR_ENOMEM, "out of memory resending"));
        }
        /* The buckets of one partition share its new id: one renewal each. */
        int k = 0, r = FR_OK;
        while (k < n && units[from[k]].partition_id != units[i].partition_id) k++;
        int64_t id = k < n ? again[k].partition_id : -1;
        if (k == n) r = fr_ctable_partition_renew(t, units[i].partition_id, &id, &units[i].err);
        if (r < 0) {
            units[i].status = r; /* with the error that says why */
            continue;
        }
        again[n] = units[i];
        again[n].partition_id = id;
        again[n].status = 0;
        again[n].err = (fr_error){0};
        from[n++] = i;
    }
    if (n > 0) FR_GOTO(fr_remote_send(t, again, n, targets, ntargets, writer_id, &answered, err));
    for (int j = 0; j < n; j++) {
        fr_buf records = units[from[j]].records; /* owned by units, borrowed by again */
        units[from[j]] = again[j];
        units[from[j]].records = records;
    }
fail:
    fr_free(again);
    fr_free(from);
    return rc;
}

int fr_remote_write(fr_ctable *t, const fr_batch *b, const uint8_t *ops, const int *targets,
                    int ntargets, int64_t writer_id, int32_t seq, int64_t *count,
                    bool *untouched, fr_error *err)
{
    *untouched = true;
    *count = 0;
    FR_TRY(fr_remote_check_batch(t, b, err));
    int64_t rows = fr_batch_num_rows(b);
    if (rows == 0) return FR_OK;
    route_plan plan = {0};
    int64_t *order = NULL, *start = NULL;
    fr_rput *units = NULL;
    uint8_t *unit_ops = NULL;
    int nunits = 0, rc = FR_OK;
    int fixed = t->nbucket_key == 0 && writer_id >= 0
                    ? fr_route_writer_bucket(writer_id, seq, t->nbuckets) : -1;
    FR_GOTO(fr_remote_route(t, b, fixed, &plan.dest, &plan.part_ids, &plan.nparts, err));
    int ndest = plan.nparts * t->nbuckets;
    order = fr_malloc(sizeof *order * (size_t)rows);
    start = fr_malloc(sizeof *start * ((size_t)ndest + 1));
    units = fr_calloc((size_t)ndest, sizeof *units);
    unit_ops = ops ? fr_malloc((size_t)rows) : NULL;
    if (!order || !start || !units || (ops && !unit_ops)) {
        rc = fr_fail(err, FR_ENOMEM, "out of memory splitting %lld rows", (long long)rows);
        goto fail;
    }
    FR_GOTO(fr_route_group(plan.dest, rows, ndest, order, start, err));
    for (int d = 0; d < ndest; d++) {
        int64_t n = start[d + 1] - start[d];
        if (n == 0) continue;
        fr_rput *u = &units[nunits++];
        fr_bufpool_take(t->client->encoded, &u->records);
        u->partition_id = plan.part_ids[d / t->nbuckets];
        u->bucket = d % t->nbuckets;
        u->rows = n;
        const fr_batch *part = b;
        fr_batch *taken = NULL;
        if (n != rows) {
            FR_GOTO(fr_gather_rows(b, order + start[d], n, &taken, err));
            part = taken;
        }
        for (int64_t i = 0; ops && i < n; i++) unit_ops[i] = ops[order[start[d] + i]];
        rc = fr_remote_encode(t, part, ops ? unit_ops : NULL, writer_id, seq, &u->records, err);
        fr_batch_free(taken);
        if (rc < 0) goto fail;
    }
    int answered = 0;
    rc = fr_remote_send(t, units, nunits, targets, ntargets, writer_id, &answered, err);
    *untouched = rc == FR_ENOTFOUND && answered == 0;
    if (rc < 0) goto fail;
    if (t->npart > 0) FR_GOTO(resend_dropped(t, units, nunits, targets, ntargets, writer_id, err));
    for (int i = 0; i < nunits; i++) {
        if (units[i].status < 0) {
            rc = units[i].status;
            if (err) *err = units[i].err;
            break;
        }
        *count += units[i].count;
    }
fail:
    for (int i = 0; units && i < nunits; i++)
        fr_bufpool_give(t->client->encoded, &units[i].records);
    fr_free(units);
    fr_free(unit_ops);
    fr_free(order);
    fr_free(start);
    route_plan_free(&plan);
    return rc;
}

/* ---- offsets --------------------------------------------------------------------------------- */

int fr_remote_list_offsets(fr_ctable *t, int spec, int64_t ts_ms, const int64_t *pids,
                           const int *buckets, int n, int64_t *offsets, fr_error *err)
{
    if (n == 0) return FR_OK;
    Firth__ListOffsetsRequest req = FIRTH__LIST_OFFSETS_REQUEST__INIT;
    Firth__TablePath path = FIRTH__TABLE_PATH__INIT;
    fr_ctable_path(t, &path);
    req.path = &path;
    req.table_id = t->id;
    req.spec = (Firth__OffsetSpec)spec;
    req.timestamp_ms = ts_ms;
    Firth__BucketRef *refs = fr_calloc((size_t)n, sizeof *refs);
    Firth__BucketRef **ptrs = fr_calloc((size_t)n, sizeof *ptrs);
    ProtobufCMessage *m = NULL;
    int rc = FR_OK;
    if (!refs || !ptrs) {
        rc = fr_fail(err, FR_ENOMEM, "out of memory listing offsets");
        goto fail;
    }
    for (int i = 0; i < n; i++) {
        firth__bucket_ref__init(&refs[i]);
        refs[i].partition_id = pids[i];
        refs[i].bucket = buckets[i];
        ptrs[i] = &refs[i];
    }
    req.buckets = ptrs;
    req.n_buckets = (size_t)n;
    FR_GOTO(fr_cnet_call(t->client->net, FR_RPC_LIST_OFFSETS, &req.base, 0, FR_CNET_RETRY,
                         NULL, NULL, &m, NULL, err));
    const Firth__ListOffsetsResponse *r = (const Firth__ListOffsetsResponse *)m;
    if (r->n_buckets != (size_t)n) {
        rc = fr_fail(err, FR_ECORRUPT, "list_offsets: %zu answers for %d buckets",
                     r->n_buckets, n);
        goto fail;
    }
    for (int i = 0; i < n; i++) {
        const Firth__BucketOffset *o = r->buckets[i];
        if (o->error && o->error->code) {
            rc = fr_rpc_error_get(o->error, "list_offsets", err);
            goto fail;
        }
        offsets[i] = o->offset;
    }
fail:
    fr_rpc_free(m);
    fr_free(refs);
    fr_free(ptrs);
    return rc;
}
