/* sql_pk.c — finding the rows of a primary-key table that a condition selects, for SELECT,
 * UPDATE and DELETE: from the condition's top-level AND, the values it fixes for each
 * primary key column (`k = constant`, `constant = k`, `k IN (constants)`); with every key
 * column fixed, point lookups of the keys (the KV store is read, nothing is scanned); with
 * leading key columns fixed that cover the partition and bucket keys, prefix lookups (one
 * RocksDB prefix scan in one bucket each); else a scan of the current state with the
 * condition pushed down. Never the changelog.
 *
 * Invariant: the lookups only narrow where to look; every row found is checked against the
 * whole condition before it goes out, so a lookup can never let through a row the
 * condition rejects. A fixed value that cannot equal any value of its column (out of the
 * column's range, or not exactly representable in it) is dropped from the lookups. */
#include <stdio.h>
#include <stdlib.h>

#include "sql/sql_int.h"

#define SQL_LOOKUP_CHUNK_KEYS 1024

/* The values a condition fixes for one key column. */
typedef struct pk_fixed {
    bool set;
    fr_value *v;
    int n;
} pk_fixed;

static bool is_constant(const fr_expr *e)
{
    if (e->kind == FR_EX_COLUMN) return false;
    for (int i = 0; i < e->nargs; i++)
        if (!is_constant(e->args[i])) return false;
    return true;
}

/* The value a constant expression of a bound tree has; false when it cannot be evaluated
 * here (the scan will then raise the error, if any row reaches it). */
static bool eval_constant(sql_const_ctx *cc, const fr_expr *e, fr_arena *arena, fr_value *out)
{
    fr_error ignored = {0};
    fr_expr *copy = sql_expr_clone(arena, e);
    return copy && sql_const_eval(cc, copy, arena, out, &ignored) == 0;
}

/* A fixed value as a value of the key column's type: 1 when usable, 0 when it cannot equal
 * any value of the column (NULL, out of range, not exact), -1 when that cannot be told (the
 * conjunct is then not used for lookups). */
static int key_value(const fr_value *v, const fr_type *t, fr_arena *arena, fr_value *out)
{
    if (v->is_null) return 0;
    fr_error e2 = {0};
    int rc = fr_value_cast(v, t, arena, out, &e2);
    if (rc == FR_ERANGE) return 0;
    if (rc < 0) return -1;
    int cmp = 0;
    if (fr_value_compare(v, out, &cmp, &e2) < 0) return -1;
    return cmp == 0 ? 1 : 0;
}

static int value_cmp(const void *a, const void *b, void *ctx)
{
    (void)ctx;
    int cmp = 0;
    fr_error ignored = {0};
    fr_value_compare(a, b, &cmp, &ignored);
    return cmp;
}

/* Sorts values and removes repeats, so that keys go out in key order, once each. */
static int sort_distinct(fr_value *v, int n)
{
    if (n < 2) return n;
    qsort_r(v, (size_t)n, sizeof *v, value_cmp, NULL);
    int k = 1;
    for (int i = 1; i < n; i++)
        if (value_cmp(&v[k - 1], &v[i], NULL) != 0) v[k++] = v[i];
    return k;
}

typedef struct pk_planner {
    fr_table *t;
    const int *pk;
    int npk;
    pk_fixed *fixed; /* per key column */
    sql_const_ctx cc;
    fr_arena *arena;
} pk_planner;

/* The values conjunct e fixes for the key column at key position k (*k = -1: none). */
static int conjunct_values(pk_planner *pl, const fr_expr *e, int *k, pk_fixed *out)
{
    const fr_expr *col = NULL, *const *consts = NULL;
    int nconsts = 0;
    *k = -1;
    if (e->kind == FR_EX_BINARY && e->op == FR_OP_EQ) {
        int c = sql_expr_is_column(e->args[0]) ? 0 : 1;
        col = e->args[c];
        consts = (const fr_expr *const *)&e->args[1 - c];
        nconsts = 1;
    } else if (e->kind == FR_EX_IN && !e->negated) {
        col = e->args[0];
        consts = (const fr_expr *const *)&e->args[1];
        nconsts = e->nargs - 1;
    }
    if (!col || !sql_expr_is_column(col)) return 0;
    for (int i = 0; i < pl->npk && *k < 0; i++)
        if (pl->pk[i] == col->column) *k = i;
    if (*k < 0 || pl->fixed[*k].set) return (*k = -1), 0;
    const fr_type *type = &fr_schema_field(fr_table_schema(pl->t), col->column)->type;
    out->v = fr_arena_alloc(pl->arena, sizeof *out->v * (size_t)(nconsts + 1));
    if (!out->v) return FR_ENOMEM;
    out->n = 0;
    for (int i = 0; i < nconsts; i++) {
        fr_value v;
        if (!is_constant(consts[i]) || !eval_constant(&pl->cc, consts[i], pl->arena, &v))
            return (*k = -1), 0;
        int use = key_value(&v, type, pl->arena, &out->v[out->n]);
        if (use < 0) return (*k = -1), 0;
        out->n += use;
    }
    out->n = sort_distinct(out->v, out->n);
    out->set = true;
    return 0;
}

/* Walks the top-level AND of e and records what each conjunct fixes. */
static int collect(pk_planner *pl, const fr_expr *e)
{
    if (e->kind == FR_EX_BINARY && e->op == FR_OP_AND) {
        FR_TRY(collect(pl, e->args[0]));
        return collect(pl, e->args[1]);
    }
    pk_fixed f = {0};
    int k;
    FR_TRY(conjunct_values(pl, e, &k, &f));
    if (k >= 0) pl->fixed[k] = f;
    return 0;
}

/* The number of keys the first m fixed columns give, or FR_SQL_LOOKUP_KEYS_MAX + 1 when
 * more than the limit. */
static int64_t key_count(const pk_planner *pl, int m)
{
    int64_t n = 1;
    for (int i = 0; i < m; i++) {
        n *= pl->fixed[i].n;
        if (n > FR_SQL_LOOKUP_KEYS_MAX) return FR_SQL_LOOKUP_KEYS_MAX + 1;
    }
    return n;
}

/* Whether the first m key columns include every column of cols. */
static bool leading_cover(const pk_planner *pl, int m, const int *cols, int n)
{
    for (int i = 0; i < n; i++) {
        bool in = false;
        for (int j = 0; j < m && !in; j++) in = pl->pk[j] == cols[i];
        if (!in) return false;
    }
    return true;
}

static void choose(pk_planner *pl, sql_pk_plan *out)
{
    int lead = 0, nb = 0, np = 0;
    while (lead < pl->npk && pl->fixed[lead].set) lead++;
    const int *bucket = fr_table_bucket_key(pl->t, &nb);
    const int *parts = fr_table_partition_keys(pl->t, &np);
    *out = (sql_pk_plan){.access = SQL_ACCESS_SCAN};
    if (lead == pl->npk && key_count(pl, lead) <= FR_SQL_LOOKUP_KEYS_MAX) {
        out->access = SQL_ACCESS_POINT;
        out->nfixed = lead;
    } else {
        for (int m = lead < pl->npk ? lead : pl->npk - 1; m >= 1; m--) {
            if (!leading_cover(pl, m, bucket, nb) || !leading_cover(pl, m, parts, np) ||
                key_count(pl, m) > FR_SQL_LOOKUP_KEYS_MAX)
                continue;
            out->access = SQL_ACCESS_PREFIX;
            out->nfixed = m;
            break;
        }
    }
    if (out->access == SQL_ACCESS_SCAN) return;
    out->nkeys = key_count(pl, out->nfixed);
}

int sql_pk_plan_where(fr_table *t, const fr_expr *where, fr_arena *arena, sql_pk_plan *out,
                      fr_error *err)
{
    *out = (sql_pk_plan){.access = SQL_ACCESS_SCAN};
    pk_planner pl = {.t = t, .arena = arena};
    pl.pk = fr_table_primary_key(t, &pl.npk);
    if (!where || pl.npk == 0) return 0;
    pl.fixed = fr_arena_alloc(arena, sizeof *pl.fixed * (size_t)pl.npk);
    out->values = fr_arena_alloc(arena, sizeof *out->values * (size_t)pl.npk);
    out->nvalues = fr_arena_alloc(arena, sizeof *out->nvalues * (size_t)pl.npk);
    if (!pl.fixed || !out->values || !out->nvalues)
        return fr_fail(err, FR_ENOMEM, "out of memory planning a lookup");
    memset(pl.fixed, 0, sizeof *pl.fixed * (size_t)pl.npk);
    int rc = collect(&pl, where);
    sql_const_ctx_free(&pl.cc);
    if (rc < 0) return fr_fail(err, rc, "out of memory planning a lookup");
    fr_value **values = out->values;
    int *nvalues = out->nvalues;
    choose(&pl, out);
    out->values = values;
    out->nvalues = nvalues;
    for (int i = 0; i < out->nfixed; i++) {
        values[i] = pl.fixed[i].v;
        nvalues[i] = pl.fixed[i].n;
    }
    return 0;
}

/* ---- describing a plan ------------------------------------------------------------------ */

static int describe_columns(const fr_table *t, const int *pk, int n, fr_buf *out, fr_error *err)
{
    FR_TRY(fr_buf_append(out, "(", 1, err));
    for (int i = 0; i < n; i++)
        FR_TRY(fr_buf_printf(out, err, "%s%s", i ? ", " : "",
                             fr_schema_field(fr_table_schema(t), pk[i])->name));
    return fr_buf_append(out, ")", 1, err);
}

int sql_pk_plan_describe(const fr_table *t, const sql_pk_plan *p, const fr_expr *where,
                         fr_buf *out, fr_error *err)
{
    int npk = 0, nparts = 0;
    const int *pk = fr_table_primary_key(t, &npk);
    fr_table_partition_keys(t, &nparts);
    long long n = (long long)p->nkeys;
    switch (p->access) {
    case SQL_ACCESS_POINT:
        FR_TRY(fr_buf_printf(out, err, "point lookup of %lld key%s on ", n, n == 1 ? "" : "s"));
        FR_TRY(describe_columns(t, pk, npk, out, err));
        FR_TRY(fr_buf_printf(out, err, ": reads the KV store, scans nothing\n"));
        break;
    case SQL_ACCESS_PREFIX:
        FR_TRY(fr_buf_printf(out, err, "prefix lookup of %lld prefix%s on ", n,
                             n == 1 ? "" : "es"));
        FR_TRY(describe_columns(t, pk, p->nfixed, out, err));
        FR_TRY(fr_buf_printf(out, err, " of the key "));
        FR_TRY(describe_columns(t, pk, npk, out, err));
        FR_TRY(fr_buf_printf(out, err, ": one bucket each\n"));
        break;
    case SQL_ACCESS_SCAN:
        FR_TRY(fr_buf_printf(out, err, "scan of the current state (the KV store of every %s"
                             "bucket)\n", nparts ? "partition and " : ""));
        if (!where) return 0;
        FR_TRY(fr_buf_printf(out, err, "filter pushed down: "));
        FR_TRY(fr_expr_format(where, out, err));
        FR_TRY(fr_buf_printf(out, err, "\n"));
        if (nparts) FR_TRY(fr_buf_printf(out, err, "partitions the filter rules out are "
                                                   "skipped\n"));
        return 0;
    }
    if (!where) return 0;
    FR_TRY(fr_buf_printf(out, err, "then filter: "));
    FR_TRY(fr_expr_format(where, out, err));
    return fr_buf_printf(out, err, "\n");
}

/* ---- reading ---------------------------------------------------------------------------- */

typedef struct pk_reader {
    const fr_expr *where;
    const int *cols;
    int ncols;
    sql_rows_fn fn;
    void *ctx;
    int stop; /* what fn returned when it stopped the read */
} pk_reader;

/* Checks rows the lookups found against the whole condition, projects them and hands them
 * on. Takes b. */
static int deliver(pk_reader *rd, fr_batch *b, fr_error *err)
{
    int64_t rows = fr_batch_num_rows(b), kept = rows;
    int rc = 0;
    if (rows > 0 && rd->where) {
        uint8_t *keep = fr_calloc((size_t)(rows + 7) / 8, 1);
        fr_batch *f = NULL;
        if (!keep) rc = fr_fail(err, FR_ENOMEM, "out of memory filtering rows");
        if (rc == 0) rc = fr_expr_filter(rd->where, b, keep, &kept, err);
        if (rc == 0 && kept < rows) rc = fr_batch_filter(b, keep, &f, err);
        fr_free(keep);
        if (f) {
            fr_batch_free(b);
            b = f;
        }
    }
    if (rc == 0 && kept > 0 && rd->cols) {
        fr_batch *proj = NULL;
        rc = fr_batch_project(b, rd->cols, rd->ncols, &proj, err);
        fr_batch_free(b);
        b = proj;
    }
    if (rc < 0 || kept == 0) {
        fr_batch_free(b);
        return rc;
    }
    rc = rd->fn(rd->ctx, b, err);
    if (rc != 0) rd->stop = rc;
    return rc;
}

static int on_found(void *ctx, fr_batch *batch, fr_error *err)
{
    return deliver(ctx, batch, err);
}

/* The scan's batches are filtered and projected by the engine already. */
static int on_state(void *ctx, fr_batch *batch, fr_error *err)
{
    pk_reader *rd = ctx;
    if (fr_batch_num_rows(batch) == 0) {
        fr_batch_free(batch);
        return 0;
    }
    int rc = rd->fn(rd->ctx, batch, err);
    if (rc != 0) rd->stop = rc;
    return rc;
}

/* Steps idx (one index per fixed column) to the next key in key order; false at the end. */
static bool next_key(const sql_pk_plan *p, int *idx)
{
    for (int i = p->nfixed - 1; i >= 0; i--) {
        if (++idx[i] < p->nvalues[i]) return true;
        idx[i] = 0;
    }
    return false;
}

static int lookup_chunk(fr_table *t, pk_reader *rd, fr_builder *bld, bool *found,
                        fr_error *err)
{
    fr_batch *keys = NULL, *rows = NULL;
    FR_TRY(fr_builder_finish(bld, &keys, err));
    int rc = fr_table_lookup(t, keys, found, &rows, err);
    fr_batch_free(keys);
    if (rc < 0) return rc;
    return deliver(rd, rows, err);
}

static int read_point(fr_table *t, const sql_pk_plan *p, pk_reader *rd, fr_error *err)
{
    int npk = 0;
    const int *pk = fr_table_primary_key(t, &npk);
    fr_schema *key_schema = NULL;
    fr_builder *bld = NULL;
    int *idx = fr_calloc((size_t)p->nfixed + 1, sizeof *idx);
    bool *found = fr_calloc(SQL_LOOKUP_CHUNK_KEYS, sizeof *found);
    int rc = 0;
    if (!idx || !found) {
        rc = fr_fail(err, FR_ENOMEM, "out of memory for lookups");
        goto fail;
    }
    FR_GOTO(fr_schema_project(fr_table_schema(t), pk, npk, &key_schema, err));
    FR_GOTO(fr_builder_new(key_schema, &bld, err));
    for (bool more = p->nkeys > 0; more && rc == 0;) {
        for (int i = 0; i < p->nfixed && rc == 0; i++)
            rc = fr_builder_append(bld, i, &p->values[i][idx[i]], err);
        more = rc == 0 && next_key(p, idx);
        if (rc == 0 && (!more || fr_builder_num_rows(bld) == SQL_LOOKUP_CHUNK_KEYS))
            rc = lookup_chunk(t, rd, bld, found, err);
    }
fail:
    fr_builder_free(bld);
    fr_schema_free(key_schema);
    fr_free(idx);
    fr_free(found);
    return rc;
}

static int read_prefix(fr_table *t, const sql_pk_plan *p, pk_reader *rd, fr_error *err)
{
    int *idx = fr_calloc((size_t)p->nfixed + 1, sizeof *idx);
    fr_value *prefix = fr_calloc((size_t)p->nfixed + 1, sizeof *prefix);
    int rc = 0;
    if (!idx || !prefix) rc = fr_fail(err, FR_ENOMEM, "out of memory for lookups");
    for (bool more = p->nkeys > 0; more && rc == 0 && rd->stop == 0;) {
        for (int i = 0; i < p->nfixed; i++) prefix[i] = p->values[i][idx[i]];
        rc = fr_table_prefix_lookup(t, prefix, p->nfixed, NULL, 0, on_found, rd, err);
        more = next_key(p, idx);
    }
    fr_free(idx);
    fr_free(prefix);
    return rc;
}

int sql_pk_read(fr_table *t, const sql_pk_plan *p, const fr_expr *where, const int *cols,
                int ncols, sql_rows_fn fn, void *ctx, fr_error *err)
{
    pk_reader rd = {.where = where, .cols = cols, .ncols = ncols, .fn = fn, .ctx = ctx};
    int rc;
    switch (p->access) {
    case SQL_ACCESS_POINT: rc = read_point(t, p, &rd, err); break;
    case SQL_ACCESS_PREFIX: rc = read_prefix(t, p, &rd, err); break;
    default:
        rc = fr_table_scan_state(t, cols, cols ? ncols : 0, where, on_state, &rd, err);
        break;
    }
    if (rd.stop != 0) return rd.stop;
    return rc < 0 ? rc : 0;
}
