/* client_lookup.c — firth_lookuper: point lookups by whole primary key and lookups by a key
 * prefix, batched.
 *
 * Embedded, the engine does the work (fr_table_lookup, fr_table_prefix_lookup). Remote, the
 * client routes each key (or prefix) to its partition and bucket as a writer routes rows —
 * the bucket key lies within the primary key — sends one LOOKUP (PREFIX_LOOKUP) request with
 * a record batch of keys per bucket, and puts the rows found back in the order of the keys
 * it was given. A key of a partition that does not exist is not found; no partition is ever
 * created by a lookup. Each bucket's answer is checked before it is used (fr_rlookup_take):
 * one flag or count per key, and exactly the rows they account for. */
#include "client/client_int.h"

#include <stdio.h>

struct firth_lookuper {
    firth_client *client;
    fr_ctable *t;
    int *cols;            /* projection (table indexes) */
    int ncols;
    bool all_columns;
    fr_schema *out_schema; /* of the rows returned */
};

int firth_lookuper_open(firth_client *c, const char *table, const char *columns,
                        firth_lookuper **out, firth_error *err)
{
    if (!c || !table || !out) return fr_client_fail(err, FIRTH_EINVAL, "lookuper: a NULL argument");
    firth_lookuper *l = fr_calloc(1, sizeof *l);
    if (!l) return fr_client_fail(err, FIRTH_ENOMEM, "out of memory opening a lookuper");
    l->client = c;
    fr_error e = {0};
    int rc = fr_ctable_open(c, table, &l->t, &e);
    if (rc == 0 && !l->t->npk)
        rc = fr_fail(&e, FR_EINVAL, "table %s has no primary key: lookups need one (scan it "
                     "instead)", l->t->qname);
    int nf = rc == 0 ? fr_schema_num_fields(l->t->schema) : 0;
    if (rc == 0 && !(l->cols = fr_calloc((size_t)nf + 1, sizeof *l->cols)))
        rc = fr_fail(&e, FR_ENOMEM, "out of memory opening a lookuper");
    if (rc == 0 && columns) {
        rc = fr_ctable_columns(l->t, columns, l->cols, &l->ncols, &e);
    } else if (rc == 0) {
        for (int i = 0; i < nf; i++) l->cols[i] = i;
        l->ncols = nf;
        l->all_columns = true;
    }
    if (rc == 0) rc = fr_schema_project(l->t->schema, l->cols, l->ncols, &l->out_schema, &e);
    if (rc < 0) {
        firth_lookuper_close(l);
        return firth_error_from(&e, err);
    }
    *out = l;
    return FIRTH_OK;
}

void firth_lookuper_close(firth_lookuper *l)
{
    if (!l) return;
    fr_schema_free(l->out_schema);
    fr_free(l->cols);
    fr_ctable_free(l->t);
    fr_free(l);
}

/* ---- embedded ------------------------------------------------------------------------------- */

static int local_lookup(firth_lookuper *l, const fr_batch *keys, bool *found, fr_batch **rows,
                        fr_error *err)
{
    fr_batch *all = NULL;
    FR_TRY(fr_table_lookup(l->t->local, keys, found, &all, err));
    if (l->all_columns) {
        *rows = all;
        return FR_OK;
    }
    int rc = fr_batch_project(all, l->cols, l->ncols, rows, err);
    fr_batch_free(all);
    return rc;
}

static void rrows_free(fr_rrows *c)
{
    for (int i = 0; i < c->n; i++) fr_batch_free(c->batches[i]);
    fr_free(c->batches);
}

static int rrows_add(fr_rrows *c, fr_batch *b, fr_error *err)
{
    if (c->n == c->cap) {
        int ncap = c->cap ? 2 * c->cap : 8;
        fr_batch **grown = fr_realloc(c->batches, sizeof *grown * (size_t)ncap);
        if (!grown) {
            fr_batch_free(b);
            return fr_fail(err, FR_ENOMEM, "out of memory collecting rows");
        }
        c->batches = grown;
        c->cap = ncap;
    }
    c->rows += fr_batch_num_rows(b);
    c->batches[c->n++] = b;
    return FR_OK;
}

static int on_rows(void *ctx, fr_batch *batch, fr_error *err)
{
    return rrows_add(ctx, batch, err);
}

/* All the collected batches as one batch of schema. */
static int rrows_join(const fr_rrows *c, const fr_schema *schema, fr_batch **out,
                      fr_error *err)
{
    fr_gather_run *runs = fr_calloc((size_t)c->n + 1, sizeof *runs);
    FR_CHECK(runs, FR_ENOMEM, err, "out of memory joining rows");
    for (int i = 0; i < c->n; i++)
        runs[i] = (fr_gather_run){c->batches[i], 0, fr_batch_num_rows(c->batches[i])};
    int rc = fr_gather(schema, runs, c->n, out, err);
    fr_free(runs);
    return rc;
}

static int local_prefix(firth_lookuper *l, const fr_batch *prefixes, int64_t *counts,
                        fr_batch **rows, fr_error *err)
{
    int np = fr_batch_num_columns(prefixes);
    fr_value vals[FR_SCHEMA_COLUMNS_MAX > 64 ? 64 : FR_SCHEMA_COLUMNS_MAX];
    FR_CHECK(np >= 1 && np <= 64 && np <= l->t->npk, FR_EINVAL, err,
             "a prefix has 1 to %d columns of the primary key, not %d", l->t->npk, np);
    fr_rrows c = {0};
    int rc = FR_OK;
    for (int64_t r = 0; rc == 0 && r < fr_batch_num_rows(prefixes); r++) {
        for (int k = 0; k < np; k++) {
            const fr_column *col = fr_batch_column(prefixes, k);
            if (fr_column_is_null(col, r)) vals[k] = fr_value_null(col->type);
            else fr_column_get(col, r, &vals[k]);
        }
        int64_t before = c.rows;
        rc = fr_table_prefix_lookup(l->t->local, vals, np, l->cols, l->ncols, on_rows, &c, err);
        counts[r] = c.rows - before;
    }
    if (rc == 0) rc = rrows_join(&c, l->out_schema, rows, err);
    rrows_free(&c);
    return rc;
}

/* ---- remote --------------------------------------------------------------------------------- */

/* Where key columns of the key batch stand: positions of the bucket key and partition key
 * columns among its first n columns (the primary key in key order). */
static int key_positions(const fr_ctable *t, int n, const int *which, int nwhich, int *pos,
                         const char *what, fr_error *err)
{
    for (int i = 0; i < nwhich; i++) {
        pos[i] = -1;
        for (int k = 0; k < n && k < t->npk; k++)
            if (t->pk[k] == which[i]) pos[i] = k;
        FR_CHECK(pos[i] >= 0, FR_EINVAL, err, "table %s: a prefix of %d key columns does not "
                 "cover the %s column '%s'", t->qname, n, what,
                 fr_schema_field(t->schema, which[i])->name);
    }
    return FR_OK;
}

/* The key batch must hold the first n primary key columns with their types. */
static int check_keys(const fr_ctable *t, const fr_batch *keys, int n, fr_error *err)
{
    FR_CHECK(n >= 1 && n <= t->npk, FR_EINVAL, err,
             "table %s: keys have 1 to %d columns (the primary key), not %d", t->qname, t->npk,
             n);
    for (int k = 0; k < n; k++) {
        const fr_type *want = &fr_schema_field(t->schema, t->pk[k])->type;
        const fr_type *got = &fr_batch_column(keys, k)->type;
        if (!fr_type_equal(want, got)) {
            char a[64], g[64];
            fr_type_format(want, false, a, sizeof a);
            fr_type_format(got, false, g, sizeof g);
            return fr_fail(err, FR_ETYPE, "table %s: key column %d (%s) is %s, not %s",
                           t->qname, k + 1, fr_schema_field(t->schema, t->pk[k])->name, a, g);
        }
    }
    return FR_OK;
}

typedef struct kroute {
    int32_t *dest;        /* per key: destination, or -1 (a partition that does not exist) */
    int64_t *pids;        /* per partition index */
    int nparts;
    int ndest;
} kroute;

static void kroute_free(kroute *k)
{
    fr_free(k->dest);
    fr_free(k->pids);
}

static int route_keys(fr_ctable *t, const fr_batch *keys, kroute *k, fr_error *err)
{
    int n = fr_batch_num_columns(keys);
    int64_t rows = fr_batch_num_rows(keys);
    int bpos[64], ppos[64];
    FR_CHECK(t->nbucket_key <= 64 && t->npart <= 64, FR_ELIMIT, err, "too many key columns");
    FR_TRY(key_positions(t, n, t->bucket_key, t->nbucket_key, bpos, "bucket key", err));
    FR_TRY(key_positions(t, n, t->part, t->npart, ppos, "partition", err));
    fr_cpart *parts = NULL;
    int nparts = 1;
    if (t->npart) FR_TRY(fr_ctable_partitions(t, true, &parts, &nparts, err));
    k->dest = fr_malloc(sizeof *k->dest * (size_t)(rows + 1));
    k->pids = fr_calloc((size_t)nparts + 1, sizeof *k->pids);
    k->nparts = nparts;
    k->ndest = nparts * t->nbuckets;
    int rc = k->dest && k->pids ? FR_OK : fr_fail(err, FR_ENOMEM, "out of memory routing keys");
    for (int p = 0; rc == 0 && p < nparts; p++) k->pids[p] = parts ? parts[p].id : -1;
    const char *names[64];
    for (int i = 0; i < t->npart; i++) names[i] = fr_schema_field(t->schema, t->part[i])->name;
    fr_buf name, scratch;
    fr_buf_init(&name);
    fr_buf_init(&scratch);
    for (int64_t r = 0; rc == 0 && r < rows; r++) {
        int pidx = 0;
        if (t->npart) {
            fr_buf_reset(&name);
            rc = fr_route_partition_name(keys, ppos, names, t->npart, r, &name, err);
            pidx = -1;
            for (int p = 0; rc == 0 && p < nparts; p++)
                if (strcmp(parts[p].name, (const char *)name.data) == 0) pidx = p;
        }
        int bucket = 0;
        if (rc == 0 && pidx >= 0)
            rc = fr_route_bucket(keys, bpos, t->nbucket_key, t->nbuckets, r, &scratch, &bucket,
                                 err);
        k->dest[r] = pidx < 0 ? -1 : pidx * t->nbuckets + bucket;
    }
    fr_buf_free(&name);
    fr_buf_free(&scratch);
    if (parts) fr_cparts_free(parts, nparts);
    return rc;
}

/* Decodes zero or more record batches of the projected rows into c. */
static int decode_rows(const fr_schema *out, const uint8_t *p, size_t n, fr_rrows *c,
                       fr_error *err)
{
    while (n > 0) {
        fr_rb_view v;
        FR_TRY(fr_rb_decode(p, n, &v, err));
        fr_batch *b = NULL;
        size_t used = 0;
        FR_TRY(fr_ipc_read_batch(v.ipc, (size_t)v.ipc_length, out, &b, &used, err));
        FR_TRY(rrows_add(c, b, err));
        p += v.length;
        n -= (size_t)v.length;
    }
    return FR_OK;
}

/* One request's units: the key rows of each destination, encoded. */
typedef struct kunit {
    int dest;
    int64_t *rows;        /* key row numbers, in key order (ans.n of them) */
    fr_buf keys;
    fr_rlookup_part ans;  /* the answer */
} kunit;

static void kunits_free(kunit *u, int n)
{
    for (int i = 0; u && i < n; i++) {
        fr_buf_free(&u[i].keys);
        fr_rlookup_part_free(&u[i].ans);
    }
    fr_free(u);
}

static int build_units(firth_lookuper *l, const fr_batch *keys, const kroute *k,
                       int64_t *order, int64_t *start, kunit **out, int *nout, fr_error *err)
{
    int64_t rows = fr_batch_num_rows(keys);
    /* Keys of no partition get their own destination past the last, never sent. */
    int32_t *dest = fr_malloc(sizeof *dest * (size_t)(rows + 1));
    FR_CHECK(dest, FR_ENOMEM, err, "out of memory routing keys");
    for (int64_t r = 0; r < rows; r++) dest[r] = k->dest[r] < 0 ? k->ndest : k->dest[r];
    int rc = fr_route_group(dest, rows, k->ndest + 1, order, start, err);
    fr_free(dest);
    if (rc < 0) return rc;
    int n = 0;
    for (int d = 0; d < k->ndest; d++) n += start[d + 1] > start[d];
    kunit *u = fr_calloc((size_t)n + 1, sizeof *u);
    FR_CHECK(u, FR_ENOMEM, err, "out of memory routing keys");
    int i = 0;
    for (int d = 0; rc == 0 && d < k->ndest; d++) {
        int64_t cnt = start[d + 1] - start[d];
        if (cnt == 0) continue;
        kunit *x = &u[i++];
        x->dest = d;
        x->rows = order + start[d];
        x->ans.n = cnt;
        fr_buf_init(&x->keys);
        fr_batch *part = NULL;
        rc = fr_gather_rows(keys, x->rows, cnt, &part, err);
        fr_rb_params p = {.schema_id = fr_schema_id(l->t->schema),
                          .compression = FR_COMPRESSION_NONE, .writer_id = FR_NO_WRITER,
                          .batch_sequence = -1};
        if (rc == 0) rc = fr_rb_encode(part, &p, &x->keys, err);
        fr_batch_free(part);
    }
    *out = u;
    *nout = i;
    return rc;
}

/* Sends the units as one lookup (or prefix lookup) request; *m gets the answer (release it
 * with fr_cnet_release). */
static int call_lookup(firth_lookuper *l, const kroute *k, const kunit *u, int n, bool prefix,
                       ProtobufCMessage **m, fr_error *err)
{
    Firth__TablePath path = FIRTH__TABLE_PATH__INIT;
    fr_ctable_path(l->t, &path);
    Firth__LookupBucket *lb = fr_calloc((size_t)n + 1, sizeof *lb);
    Firth__PrefixLookupBucket *pb = fr_calloc((size_t)n + 1, sizeof *pb);
    void **ptrs = fr_calloc((size_t)n + 1, sizeof *ptrs);
    int rc = lb && pb && ptrs ? FR_OK : fr_fail(err, FR_ENOMEM, "out of memory looking up");
    for (int i = 0; rc == 0 && i < n; i++) {
        int64_t pid = k->pids[u[i].dest / l->t->nbuckets];
        int bucket = u[i].dest % l->t->nbuckets;
        ProtobufCBinaryData keys = {.data = u[i].keys.data, .len = u[i].keys.len};
        if (prefix) {
            firth__prefix_lookup_bucket__init(&pb[i]);
            pb[i].partition_id = pid;
            pb[i].bucket = bucket;
            pb[i].prefixes = keys;
            ptrs[i] = &pb[i];
        } else {
            firth__lookup_bucket__init(&lb[i]);
            lb[i].partition_id = pid;
            lb[i].bucket = bucket;
            lb[i].keys = keys;
            ptrs[i] = &lb[i];
        }
    }
    int32_t *proj = l->all_columns ? NULL : l->cols;
    size_t nproj = l->all_columns ? 0 : (size_t)l->ncols;
    if (rc == 0 && prefix) {
        Firth__PrefixLookupRequest pr = FIRTH__PREFIX_LOOKUP_REQUEST__INIT;
        pr.path = &path;
        pr.table_id = l->t->id;
        pr.projection = proj;
        pr.n_projection = nproj;
        pr.buckets = (Firth__PrefixLookupBucket **)ptrs;
        pr.n_buckets = (size_t)n;
        rc = fr_cnet_call(l->client->net, FR_RPC_PREFIX_LOOKUP, &pr.base, 0, FR_CNET_RETRY,
                          NULL, NULL, m, NULL, err);
    } else if (rc == 0) {
        Firth__LookupRequest lr = FIRTH__LOOKUP_REQUEST__INIT;
        lr.path = &path;
        lr.table_id = l->t->id;
        lr.projection = proj;
        lr.n_projection = nproj;
        lr.buckets = (Firth__LookupBucket **)ptrs;
        lr.n_buckets = (size_t)n;
        rc = fr_cnet_call(l->client->net, FR_RPC_LOOKUP, &lr.base, 0, FR_CNET_RETRY, NULL,
                          NULL, m, NULL, err);
    }
    fr_free(lb);
    fr_free(pb);
    fr_free(ptrs);
    return rc;
}

void fr_rlookup_part_free(fr_rlookup_part *part)
{
    rrows_free(&part->found);
    fr_free(part->hit);
    fr_free(part->counts);
    part->found = (fr_rrows){0};
    part->hit = NULL;
    part->counts = NULL;
}

int fr_rlookup_take(const ProtobufCMessage *m, bool prefix, int i, const fr_schema *out,
                    fr_rlookup_part *part, fr_error *err)
{
    const Firth__PrefixLookupBucketResult *pb =
        prefix ? ((const Firth__PrefixLookupResponse *)m)->buckets[i] : NULL;
    const Firth__LookupBucketResult *lb =
        prefix ? NULL : ((const Firth__LookupResponse *)m)->buckets[i];
    const Firth__Error *e = prefix ? pb->error : lb->error;
    if (e && e->code) return fr_rpc_error_get(e, prefix ? "prefix_lookup" : "lookup", err);
    size_t nflags = prefix ? pb->n_row_counts : lb->n_found;
    FR_CHECK(nflags == (size_t)part->n, FR_ECORRUPT, err,
             "a lookup answer of %zu flags for %lld keys", nflags, (long long)part->n);
    if (prefix) {
        part->counts = fr_malloc(sizeof *part->counts * nflags + 1);
        FR_CHECK(part->counts, FR_ENOMEM, err, "out of memory looking up");
        memcpy(part->counts, pb->row_counts, sizeof *part->counts * nflags);
    } else {
        part->hit = fr_malloc(sizeof *part->hit * nflags + 1);
        FR_CHECK(part->hit, FR_ENOMEM, err, "out of memory looking up");
        for (size_t f = 0; f < nflags; f++) /* protobuf-c's booleans are ints */
            part->hit[f] = lb->found[f] != 0;
    }
    const ProtobufCBinaryData *rows = prefix ? &pb->rows : &lb->rows;
    FR_TRY(decode_rows(out, rows->data, rows->len, &part->found, err));
    int64_t want = 0;
    for (int64_t q = 0; q < part->n; q++) {
        int64_t one = prefix ? part->counts[q] : part->hit[q];
        FR_CHECK(one >= 0 && one <= part->found.rows - want, FR_ECORRUPT, err,
                 "a lookup answer counts %lld rows for key %lld, of %lld rows in all",
                 (long long)one, (long long)q, (long long)part->found.rows);
        want += one;
    }
    FR_CHECK(want == part->found.rows, FR_ECORRUPT, err,
             "a lookup answer with %lld rows for %lld found", (long long)part->found.rows,
             (long long)want);
    return FR_OK;
}

static int send_lookup(firth_lookuper *l, const kroute *k, kunit *u, int n, bool prefix,
                       fr_error *err)
{
    ProtobufCMessage *m = NULL;
    int rc = call_lookup(l, k, u, n, prefix, &m, err);
    if (rc == 0) {
        size_t got = prefix ? ((const Firth__PrefixLookupResponse *)m)->n_buckets
                            : ((const Firth__LookupResponse *)m)->n_buckets;
        if (got != (size_t)n)
            rc = fr_fail(err, FR_ECORRUPT, "a lookup answer for %zu buckets, not %d", got, n);
    }
    for (int i = 0; rc == 0 && i < n; i++)
        rc = fr_rlookup_take(m, prefix, i, l->out_schema, &u[i].ans, err);
    fr_cnet_release(l->client->net, m);
    return rc;
}

/* A cursor over the rows of a unit's decoded batches. */
typedef struct kcursor {
    int batch;
    int64_t row;
} kcursor;

static void cursor_take(const fr_rrows *c, kcursor *k, int64_t n, fr_gather_run *runs,
                        int *nruns)
{
    while (n > 0 && k->batch < c->n) {
        int64_t left = fr_batch_num_rows(c->batches[k->batch]) - k->row;
        if (left == 0) {
            k->batch++;
            k->row = 0;
            continue;
        }
        int64_t take = left < n ? left : n;
        runs[(*nruns)++] = (fr_gather_run){c->batches[k->batch], k->row, take};
        k->row += take;
        n -= take;
    }
}

/* Puts the units' rows back in key order: found[] or counts[] per key, and *rows. */
static int reassemble(firth_lookuper *l, const fr_batch *keys, const kroute *k, kunit *u,
                      int nu, bool *found, int64_t *counts, fr_batch **rows, fr_error *err)
{
    int64_t nkeys = fr_batch_num_rows(keys), total = 0;
    for (int i = 0; i < nu; i++) total += u[i].ans.found.rows;
    int *unit_of = fr_malloc(sizeof *unit_of * ((size_t)k->ndest + 1));
    int64_t *seen = fr_calloc((size_t)nu + 1, sizeof *seen);
    kcursor *cur = fr_calloc((size_t)nu + 1, sizeof *cur);
    fr_gather_run *runs = fr_calloc((size_t)total + 1, sizeof *runs);
    int nruns = 0, rc = FR_OK;
    if (!unit_of || !seen || !cur || !runs) {
        rc = fr_fail(err, FR_ENOMEM, "out of memory looking up");
        goto fail;
    }
    for (int d = 0; d < k->ndest; d++) unit_of[d] = -1;
    for (int i = 0; i < nu; i++) unit_of[u[i].dest] = i;
    for (int64_t r = 0; r < nkeys; r++) {
        int i = k->dest[r] < 0 ? -1 : unit_of[k->dest[r]];
        int64_t n = 0;
        if (i >= 0) {
            int64_t at = seen[i]++;
            n = counts ? u[i].ans.counts[at] : (u[i].ans.hit[at] ? 1 : 0);
            cursor_take(&u[i].ans.found, &cur[i], n, runs, &nruns);
        }
        if (counts) counts[r] = n;
        else found[r] = n > 0;
    }
    rc = fr_gather(l->out_schema, runs, nruns, rows, err);
fail:
    fr_free(unit_of);
    fr_free(seen);
    fr_free(cur);
    fr_free(runs);
    return rc;
}

static int remote_lookup(firth_lookuper *l, const fr_batch *keys, bool prefix, bool *found,
                         int64_t *counts, fr_batch **rows, fr_error *err)
{
    int ncols = fr_batch_num_columns(keys);
    FR_TRY(check_keys(l->t, keys, ncols, err));
    FR_CHECK(prefix || ncols == l->t->npk, FR_EINVAL, err,
             "table %s: a key has the %d primary key columns, not %d", l->t->qname, l->t->npk,
             ncols);
    int64_t nkeys = fr_batch_num_rows(keys);
    kroute k = {0};
    kunit *u = NULL;
    int nu = 0;
    int64_t *order = NULL, *start = NULL;
    int rc = FR_OK;
    FR_GOTO(route_keys(l->t, keys, &k, err));
    order = fr_malloc(sizeof *order * (size_t)(nkeys + 1));
    start = fr_malloc(sizeof *start * ((size_t)k.ndest + 2));
    if (!order || !start) {
        rc = fr_fail(err, FR_ENOMEM, "out of memory looking up");
        goto fail;
    }
    FR_GOTO(build_units(l, keys, &k, order, start, &u, &nu, err));
    if (nu > 0) FR_GOTO(send_lookup(l, &k, u, nu, prefix, err));
    FR_GOTO(reassemble(l, keys, &k, u, nu, found, counts, rows, err));
fail:
    kunits_free(u, nu);
    fr_free(order);
    fr_free(start);
    kroute_free(&k);
    return rc;
}

/* ---- the public calls ------------------------------------------------------------------------ */

int firth_lookup(firth_lookuper *l, const firth_batch *keys, bool *found, firth_batch **rows,
                 firth_error *err)
{
    if (!l || !keys || !found || !rows)
        return fr_client_fail(err, FIRTH_EINVAL, "lookup: a NULL argument");
    fr_error e = {0};
    fr_batch *out = NULL;
    int rc = l->client->remote ? remote_lookup(l, keys->batch, false, found, NULL, &out, &e)
                               : local_lookup(l, keys->batch, found, &out, &e);
    if (rc == 0 && !(*rows = firth_batch_wrap(out))) {
        fr_batch_free(out);
        rc = fr_fail(&e, FR_ENOMEM, "out of memory returning rows");
    }
    return rc < 0 ? firth_error_from(&e, err) : FIRTH_OK;
}

int firth_prefix_lookup(firth_lookuper *l, const firth_batch *prefixes, int64_t *counts,
                        firth_batch **rows, firth_error *err)
{
    if (!l || !prefixes || !counts || !rows)
        return fr_client_fail(err, FIRTH_EINVAL, "prefix lookup: a NULL argument");
    fr_error e = {0};
    fr_batch *out = NULL;
    int rc = l->client->remote ? remote_lookup(l, prefixes->batch, true, NULL, counts, &out, &e)
                               : local_prefix(l, prefixes->batch, counts, &out, &e);
    if (rc == 0 && !(*rows = firth_batch_wrap(out))) {
        fr_batch_free(out);
        rc = fr_fail(&e, FR_ENOMEM, "out of memory returning rows");
    }
    return rc < 0 ? firth_error_from(&e, err) : FIRTH_OK;
}
