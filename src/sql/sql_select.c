/* sql_select.c — SELECT items [FROM t [WHERE cond]] [LIMIT n], and EXPLAIN SELECT.
 *
 * The plan: bind every item and the WHERE condition to the table's schema; project the
 * columns the items read (in the order the items first read them, at least one); push the
 * projection and the condition down to where the rows come from; evaluate the items over
 * each returned batch (bound a second time, to the projected schema) and hand the result to
 * the sink; stop reading once LIMIT rows went out. Where the rows come from:
 *   - a log table: a scan of its log (the log skips batches by their statistics, the
 *     engine skips partitions the condition rules out);
 *   - a primary-key table: its current state, by point lookups, prefix lookups or a scan
 *     of the KV store (sql_pk.c), never its changelog;
 *   - t$changelog: the log of t as a log table with _change_type, _log_offset and
 *     _commit_timestamp in front (sql_changelog.c); the conjuncts of the condition on the
 *     table's columns are pushed down to the log, the others are applied to what it returns;
 *   - a lake-enabled table (scans; point and prefix lookups of a primary-key table still
 *     read its KV store, which holds the same rows): a union read of the newest lake
 *     snapshot and the log after it (fr_table_scan_union), the projection and condition
 *     pushed into both;
 *   - t$lake: the lake alone, in the lake schema (__bucket, __offset, __timestamp after the
 *     table's columns); t$lake_snapshots: the lake's snapshots (sql_lake.c), filtered here.
 *
 * Result column names: the alias, else the column's name for a bare column, else the
 * item's text as written (blanks collapsed); a name already taken gets "$1", "$2"... */
#include <stdio.h>

#include "sql/sql_int.h"

typedef struct sel_item {
    const sql_select_item *src;
    fr_expr *expr;     /* parsed expression (for * a column node made here) */
    fr_expr *eval;     /* bound to the projected schema; NULL for a bare column */
    int proj;          /* bare column: its index in the projected batch */
    fr_type type;
    char name[FR_NAME_BYTES_MAX + 1];
} sel_item;

typedef struct sel_plan {
    fr_arena *arena;
    const fr_schema *table_schema;
    fr_schema *proj_schema;
    fr_schema *result;
    sel_item *items;
    int nitems;
    int *cols; /* projected table columns */
    int ncols;
    bool passthrough; /* the scan's batches are the result as they are */
    fr_expr *where;
    int64_t limit;
    int64_t sent;
    /* t$changelog: table_schema is the changelog schema (owned here); the condition splits
     * into what the log filters (bound to the table) and what is applied after (bound to
     * proj_schema); scan_of maps projected columns to the scan's (-1 for metadata). */
    fr_schema *changelog_schema;
    fr_schema *snapshots_schema; /* t$lake_snapshots: its schema (owned here) */
    fr_expr *pushed;
    fr_expr *residual;
    int *scan_cols;
    int nscan;
    int *scan_of;
} sel_plan;

static void plan_free(sel_plan *p)
{
    fr_schema_free(p->proj_schema);
    fr_schema_free(p->result);
    fr_schema_free(p->changelog_schema);
    fr_schema_free(p->snapshots_schema);
    fr_free(p->items);
    fr_free(p->cols);
    fr_free(p->scan_cols);
    fr_free(p->scan_of);
}

/* ---- planning -------------------------------------------------------------------------- */

static fr_expr *column_node(fr_arena *a, const char *name, sql_pos pos)
{
    fr_expr *e = fr_arena_alloc(a, sizeof *e);
    if (!e) return NULL;
    memset(e, 0, sizeof *e);
    e->kind = FR_EX_COLUMN;
    e->name = name;
    e->column = -1;
    e->line = pos.line;
    e->col = pos.col;
    return e;
}

/* Expands * and lays out one sel_item per result column. */
static int expand_items(const sql_stmt *st, sel_plan *p, fr_error *err)
{
    int nf = p->table_schema ? fr_schema_num_fields(p->table_schema) : 0, n = 0;
    for (int i = 0; i < st->nitems; i++) n += st->items[i].expr ? 1 : nf;
    if (n > FR_SCHEMA_COLUMNS_MAX)
        return sql_fail_at(err, FR_ELIMIT, st->pos, "a result has at most %d columns",
                           FR_SCHEMA_COLUMNS_MAX);
    p->items = fr_calloc((size_t)n + 1, sizeof *p->items);
    if (!p->items) return fr_fail(err, FR_ENOMEM, "out of memory planning a SELECT");
    for (int i = 0; i < st->nitems; i++) {
        const sql_select_item *it = &st->items[i];
        if (it->expr) {
            p->items[p->nitems++] = (sel_item){.src = it, .expr = it->expr, .proj = -1};
            continue;
        }
        for (int c = 0; c < nf; c++) {
            fr_expr *e = column_node(p->arena, fr_schema_field(p->table_schema, c)->name, it->pos);
            if (!e) return fr_fail(err, FR_ENOMEM, "out of memory planning a SELECT");
            p->items[p->nitems++] = (sel_item){.src = it, .expr = e, .proj = -1};
        }
    }
    return 0;
}

static int add_col(sel_plan *p, int c)
{
    for (int i = 0; i < p->ncols; i++)
        if (p->cols[i] == c) return i;
    p->cols[p->ncols] = c;
    return p->ncols++;
}

/* Binds each item to the table schema and collects the columns they read. */
static int bind_items(sel_plan *p, fr_error *err)
{
    int nf = fr_schema_num_fields(p->table_schema);
    size_t bytes = (size_t)(nf + 7) / 8;
    uint8_t *used = fr_malloc(bytes ? bytes : 1);
    p->cols = fr_calloc((size_t)nf + 1, sizeof *p->cols);
    if (!used || !p->cols) {
        fr_free(used);
        return fr_fail(err, FR_ENOMEM, "out of memory planning a SELECT");
    }
    int rc = 0;
    for (int i = 0; i < p->nitems && rc == 0; i++) {
        sel_item *it = &p->items[i];
        fr_expr *e = sql_expr_clone(p->arena, it->expr);
        if (!e) {
            rc = fr_fail(err, FR_ENOMEM, "out of memory planning a SELECT");
            break;
        }
        rc = fr_expr_bind(e, p->table_schema, err);
        if (rc < 0) {
            sql_wrap_at(err, (sql_pos){e->line, e->col});
            break;
        }
        it->type = e->type;
        if (sql_expr_is_column(e)) {
            it->proj = add_col(p, e->column);
            continue;
        }
        memset(used, 0, bytes);
        fr_expr_columns(e, used);
        for (int c = 0; c < nf; c++)
            if (used[c / 8] >> (c % 8) & 1) add_col(p, c);
    }
    fr_free(used);
    return rc;
}

static int bind_where(const sql_stmt *st, sel_plan *p, fr_error *err)
{
    if (!st->where) return 0;
    p->where = st->where;
    if (fr_expr_bind(p->where, p->table_schema, err) < 0)
        return sql_wrap_at(err, (sql_pos){p->where->line, p->where->col});
    sql_pos pos = st->where_pos;
    if (p->where->type.id != FR_T_BOOLEAN) {
        char tn[64];
        fr_type_format(&p->where->type, false, tn, sizeof tn);
        return sql_fail_at(err, FR_ETYPE, pos, "WHERE needs a BOOLEAN condition, not %s", tn);
    }
    return 0;
}

/* Binds the computed items again, to the projected schema they are evaluated over. */
static int bind_projected(sel_plan *p, fr_error *err)
{
    FR_TRY(fr_schema_project(p->table_schema, p->cols, p->ncols, &p->proj_schema, err));
    for (int i = 0; i < p->nitems; i++) {
        sel_item *it = &p->items[i];
        if (it->proj >= 0) continue;
        it->eval = sql_expr_clone(p->arena, it->expr);
        if (!it->eval) return fr_fail(err, FR_ENOMEM, "out of memory planning a SELECT");
        if (fr_expr_bind(it->eval, p->proj_schema, err) < 0)
            return sql_wrap_at(err, (sql_pos){it->eval->line, it->eval->col});
    }
    return 0;
}

/* Copies at most FR_NAME_BYTES_MAX bytes of s, not cutting a UTF-8 character. */
static void copy_name(char *out, const char *s)
{
    size_t n = strlen(s);
    if (n > FR_NAME_BYTES_MAX) {
        n = FR_NAME_BYTES_MAX;
        while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80) n--;
    }
    memcpy(out, s, n);
    out[n] = '\0';
}

static bool name_taken(const sel_plan *p, int upto, const char *name)
{
    for (int i = 0; i < upto; i++)
        if (strcasecmp(p->items[i].name, name) == 0) return true;
    return false;
}

/* Names the result columns and builds the result schema. */
static int name_results(sel_plan *p, fr_error *err)
{
    fr_field *fields = fr_calloc((size_t)p->nitems + 1, sizeof *fields);
    if (!fields) return fr_fail(err, FR_ENOMEM, "out of memory planning a SELECT");
    for (int i = 0; i < p->nitems; i++) {
        sel_item *it = &p->items[i];
        const char *base = it->src->alias                ? it->src->alias
                           : sql_expr_is_column(it->expr) && it->proj >= 0
                               ? fr_schema_field(p->proj_schema, it->proj)->name
                               : it->src->text;
        copy_name(it->name, base && *base ? base : "expr");
        for (int k = 1; name_taken(p, i, it->name); k++) {
            char suffix[16];
            int sn = snprintf(suffix, sizeof suffix, "$%d", k);
            copy_name(it->name, base && *base ? base : "expr");
            size_t n = strlen(it->name);
            if (n + (size_t)sn > FR_NAME_BYTES_MAX) n = FR_NAME_BYTES_MAX - (size_t)sn;
            while (n > 0 && ((unsigned char)it->name[n] & 0xC0) == 0x80) n--;
            memcpy(it->name + n, suffix, (size_t)sn + 1);
        }
        fields[i].name = it->name;
        fields[i].type = it->type;
    }
    int rc = fr_schema_new(fields, p->nitems, 0, &p->result, err);
    fr_free(fields);
    /* A name the schema refuses (an alias with a control character) is the statement's. */
    return rc < 0 && p->nitems > 0 ? sql_wrap_at(err, p->items[0].src->pos) : rc;
}

/* Whether the scan's batches can go out as they are: every item a bare column, in the
 * projection's order, under the column's own name. */
static bool is_passthrough(const sel_plan *p)
{
    if (p->nitems != p->ncols) return false;
    for (int i = 0; i < p->nitems; i++) {
        const sel_item *it = &p->items[i];
        if (it->proj != i || strcmp(it->name, fr_schema_field(p->proj_schema, i)->name) != 0)
            return false;
    }
    return true;
}

static int plan_select(const fr_schema *schema, const sql_stmt *st, sel_plan *p,
                       fr_error *err)
{
    p->table_schema = schema;
    FR_TRY(expand_items(st, p, err));
    FR_TRY(bind_items(p, err));
    FR_TRY(bind_where(st, p, err));
    if (p->ncols == 0) add_col(p, 0); /* a scan returns at least one column */
    FR_TRY(bind_projected(p, err));
    FR_TRY(name_results(p, err));
    p->passthrough = is_passthrough(p);
    return 0;
}

/* ---- planning a read of t$changelog ----------------------------------------------------- */

/* ANDs e onto *acc (both unbound). */
static int and_onto(fr_arena *arena, fr_expr **acc, fr_expr *e, fr_error *err)
{
    if (!*acc) {
        *acc = e;
        return 0;
    }
    fr_expr *both = fr_expr_binary(arena, FR_OP_AND, *acc, e);
    if (!both) return fr_fail(err, FR_ENOMEM, "out of memory planning a SELECT");
    both->line = e->line;
    both->col = e->col;
    *acc = both;
    return 0;
}

/* Walks the top-level AND of the bound condition b and its unbound twin u: a conjunct that
 * reads only table columns is pushed down to the log; the others stay for after, and the
 * columns they read join the projection. */
static int split_where(sel_plan *p, const fr_expr *b, const fr_expr *u, uint8_t *used,
                       fr_error *err)
{
    if (b->kind == FR_EX_BINARY && b->op == FR_OP_AND) {
        FR_TRY(split_where(p, b->args[0], u->args[0], used, err));
        return split_where(p, b->args[1], u->args[1], used, err);
    }
    int nf = fr_schema_num_fields(p->table_schema);
    memset(used, 0, (size_t)(nf + 7) / 8);
    fr_expr_columns(b, used);
    bool meta = false;
    for (int c = 0; c < SQL_CHANGELOG_META_COLUMNS; c++) meta |= used[c / 8] >> (c % 8) & 1;
    fr_expr *copy = sql_expr_clone(p->arena, u);
    if (!copy) return fr_fail(err, FR_ENOMEM, "out of memory planning a SELECT");
    if (!meta) return and_onto(p->arena, &p->pushed, copy, err);
    for (int c = 0; c < nf; c++)
        if (used[c / 8] >> (c % 8) & 1) add_col(p, c);
    return and_onto(p->arena, &p->residual, copy, err);
}

/* The table columns the scan returns, and where each projected column comes from. */
static int plan_changelog_scan(sel_plan *p, fr_error *err)
{
    p->scan_cols = fr_calloc((size_t)p->ncols + 1, sizeof *p->scan_cols);
    p->scan_of = fr_calloc((size_t)p->ncols + 1, sizeof *p->scan_of);
    if (!p->scan_cols || !p->scan_of)
        return fr_fail(err, FR_ENOMEM, "out of memory planning a SELECT");
    for (int i = 0; i < p->ncols; i++) {
        p->scan_of[i] = -1;
        if (p->cols[i] < SQL_CHANGELOG_META_COLUMNS) continue;
        p->scan_of[i] = p->nscan;
        p->scan_cols[p->nscan++] = p->cols[i] - SQL_CHANGELOG_META_COLUMNS;
    }
    if (p->nscan == 0) p->scan_cols[p->nscan++] = 0; /* the log returns at least one column */
    return 0;
}

static int plan_changelog(fr_table *t, const sql_stmt *st, sel_plan *p, fr_error *err)
{
    FR_TRY(sql_changelog_schema(t, &p->changelog_schema, err));
    p->table_schema = p->changelog_schema;
    fr_expr *unbound = st->where ? sql_expr_clone(p->arena, st->where) : NULL;
    if (st->where && !unbound) return fr_fail(err, FR_ENOMEM, "out of memory planning a SELECT");
    FR_TRY(expand_items(st, p, err));
    FR_TRY(bind_items(p, err));
    FR_TRY(bind_where(st, p, err));
    if (p->where) {
        int nf = fr_schema_num_fields(p->table_schema);
        uint8_t *used = fr_malloc((size_t)(nf + 7) / 8);
        if (!used) return fr_fail(err, FR_ENOMEM, "out of memory planning a SELECT");
        int rc = split_where(p, p->where, unbound, used, err);
        fr_free(used);
        FR_TRY(rc);
    }
    if (p->ncols == 0) add_col(p, 0);
    FR_TRY(bind_projected(p, err));
    FR_TRY(name_results(p, err));
    p->passthrough = is_passthrough(p);
    FR_TRY(plan_changelog_scan(p, err));
    if (p->pushed && fr_expr_bind(p->pushed, fr_table_schema(t), err) < 0)
        return sql_wrap_at(err, st->where_pos);
    if (p->residual && fr_expr_bind(p->residual, p->proj_schema, err) < 0)
        return sql_wrap_at(err, st->where_pos);
    return 0;
}

/* ---- running --------------------------------------------------------------------------- */

/* Builds the result batch of one scanned (projected) batch. */
static int result_batch(const sel_plan *p, const fr_batch *in, fr_batch **out, fr_error *err)
{
    int n = p->nitems;
    uint8_t **bufs = fr_calloc((size_t)n * 3 + 1, sizeof *bufs);
    int64_t *nulls = fr_calloc((size_t)n + 1, sizeof *nulls);
    int rc = 0;
    if (!bufs || !nulls) {
        rc = fr_fail(err, FR_ENOMEM, "out of memory building a result");
        goto fail;
    }
    for (int i = 0; i < n; i++) {
        const sel_item *it = &p->items[i];
        if (it->proj >= 0) {
            FR_GOTO(sql_column_copy(fr_batch_column(in, it->proj), &bufs[3 * i], &nulls[i], err));
            continue;
        }
        fr_batch *v = NULL;
        rc = fr_expr_eval(it->eval, in, &v, err);
        if (rc < 0) {
            sql_wrap_at(err, (sql_pos){it->eval->line, it->eval->col});
            goto fail;
        }
        rc = sql_column_copy(fr_batch_column(v, 0), &bufs[3 * i], &nulls[i], err);
        fr_batch_free(v);
        if (rc < 0) goto fail;
    }
    rc = fr_batch_from_buffers(p->result, fr_batch_num_rows(in), bufs, nulls, out, err);
    fr_free(bufs);
    fr_free(nulls);
    return rc;
fail:
    for (int i = 0; bufs && i < 3 * n; i++) fr_free(bufs[i]);
    fr_free(bufs);
    fr_free(nulls);
    return rc;
}

typedef struct sel_run {
    sel_plan *plan;
    const fr_sql_sink *sink;
    fr_error *err;
    int rc; /* the first failure, or 1 when the sink stopped */
} sel_run;

/* Sends the rows of one batch (its ownership passes here), minding the limit. */
static int send_rows(sel_run *r, fr_batch *batch)
{
    sel_plan *p = r->plan;
    int64_t rows = fr_batch_num_rows(batch);
    if (p->limit >= 0 && rows > p->limit - p->sent) {
        fr_batch *head = NULL;
        int rc = fr_batch_slice(batch, 0, p->limit - p->sent, &head, r->err);
        fr_batch_free(batch);
        if (rc < 0) return rc;
        batch = head;
        rows = fr_batch_num_rows(batch);
    }
    fr_batch *out = batch;
    if (!p->passthrough) {
        int rc = result_batch(p, batch, &out, r->err);
        fr_batch_free(batch);
        if (rc < 0) return rc;
    }
    p->sent += rows;
    return sql_sink_rows(r->sink, out, r->err);
}

/* Sends a batch of result rows on (taken); non-zero stops the read. */
static int on_rows(void *ctx, fr_batch *batch, fr_error *err)
{
    (void)err;
    sel_run *r = ctx;
    if (fr_batch_num_rows(batch) == 0) {
        fr_batch_free(batch);
        return 0;
    }
    int rc = send_rows(r, batch);
    if (rc != 0) {
        r->rc = rc;
        return 1;
    }
    return r->plan->limit >= 0 && r->plan->sent >= r->plan->limit ? 1 : 0;
}

static int on_scan(void *ctx, int bucket, fr_batch *batch, const int64_t *offsets,
                   const uint8_t *change_types, int64_t commit_ts, fr_error *err)
{
    (void)bucket, (void)offsets, (void)change_types, (void)commit_ts;
    return on_rows(ctx, batch, err);
}

/* A batch of t$changelog from a scanned one (taken), the conditions on the metadata
 * columns applied. */
static int on_changelog(void *ctx, int bucket, fr_batch *batch, const int64_t *offsets,
                        const uint8_t *change_types, int64_t commit_ts, fr_error *err)
{
    (void)bucket;
    sel_run *r = ctx;
    sel_plan *p = r->plan;
    fr_batch *v = NULL;
    int rc = sql_changelog_batch(p->proj_schema, p->cols, p->ncols, p->scan_of, batch, offsets,
                                 change_types, commit_ts, &v, r->err);
    fr_batch_free(batch);
    int64_t rows = v ? fr_batch_num_rows(v) : 0, kept = rows;
    if (rc == 0 && p->residual && rows > 0) {
        uint8_t *keep = fr_calloc((size_t)(rows + 7) / 8, 1);
        fr_batch *f = NULL;
        rc = keep ? fr_expr_filter(p->residual, v, keep, &kept, r->err)
                  : fr_fail(r->err, FR_ENOMEM, "out of memory filtering the changelog");
        if (rc == 0 && kept < rows) rc = fr_batch_filter(v, keep, &f, r->err);
        fr_free(keep);
        if (f) {
            fr_batch_free(v);
            v = f;
        }
    }
    if (rc < 0) {
        fr_batch_free(v);
        r->rc = rc;
        return 1;
    }
    return on_rows(ctx, v, err);
}

/* Finishes a read: 0, a failure (with the statement's position), or 1 when the sink
 * stopped it (which ends the script quietly). */
static int read_done(const sql_stmt *st, const sel_run *r, int rc, fr_error *err)
{
    if (r->rc != 0) return r->rc < 0 ? sql_wrap_at(err, st->pos) : r->rc;
    if (rc < 0) return sql_wrap_at(err, st->table.pos);
    return 0;
}

static int run_scan(fr_table *t, const sql_stmt *st, sel_plan *p, const fr_sql_sink *sink,
                    fr_error *err)
{
    int begun = sql_sink_begin(sink, p->result, err);
    if (begun != 0) return begun;
    if (p->limit != 0) {
        sel_run r = {.plan = p, .sink = sink, .err = err};
        fr_scan_spec spec = {.start = FR_START_EARLIEST, .columns = p->cols,
                             .ncolumns = p->ncols, .filter = p->where,
                             .max_records = p->limit, .bucket = -1};
        int rc = read_done(st, &r, fr_table_scan(t, &spec, on_scan, &r, err), err);
        if (rc != 0) return rc;
    }
    return sql_sink_end(sink, NULL, err);
}

static int run_pk(fr_table *t, const sql_stmt *st, sel_plan *p, const sql_pk_plan *pk,
                  const fr_sql_sink *sink, fr_error *err)
{
    int begun = sql_sink_begin(sink, p->result, err);
    if (begun != 0) return begun;
    if (p->limit != 0) {
        sel_run r = {.plan = p, .sink = sink, .err = err};
        int rc = read_done(st, &r, sql_pk_read(t, pk, p->where, p->cols, p->ncols, on_rows,
                                               &r, err), err);
        if (rc != 0) return rc;
    }
    return sql_sink_end(sink, NULL, err);
}

static int run_changelog(fr_table *t, const sql_stmt *st, sel_plan *p, const fr_sql_sink *sink,
                         fr_error *err)
{
    int begun = sql_sink_begin(sink, p->result, err);
    if (begun != 0) return begun;
    if (p->limit != 0) {
        sel_run r = {.plan = p, .sink = sink, .err = err};
        fr_scan_spec spec = {.start = FR_START_EARLIEST, .columns = p->scan_cols,
                             .ncolumns = p->nscan, .filter = p->pushed,
                             .max_records = p->residual ? -1 : p->limit, .bucket = -1};
        int rc = read_done(st, &r, fr_table_scan(t, &spec, on_changelog, &r, err), err);
        if (rc != 0) return rc;
    }
    return sql_sink_end(sink, NULL, err);
}

static int run_union(fr_table *t, const sql_stmt *st, sel_plan *p, bool lake_only,
                     const fr_sql_sink *sink, fr_error *err)
{
    int begun = sql_sink_begin(sink, p->result, err);
    if (begun != 0) return begun;
    if (p->limit != 0) {
        sel_run r = {.plan = p, .sink = sink, .err = err};
        fr_union_spec spec = {.columns = p->cols, .ncolumns = p->ncols, .filter = p->where,
                              .lake_only = lake_only};
        int rc = read_done(st, &r, fr_table_scan_union(t, &spec, on_rows, &r, err), err);
        if (rc != 0) return rc;
    }
    return sql_sink_end(sink, NULL, err);
}

/* Sends rows held in memory (taken; NULL: none) through a planned SELECT: filtered by its
 * condition, projected, limited. */
static int run_rows(const sql_stmt *st, sel_plan *p, fr_batch *all, const fr_sql_sink *sink,
                    fr_error *err)
{
    fr_batch *kept = NULL;
    uint8_t *keep = NULL;
    int rc = 0;
    int64_t rows = all ? fr_batch_num_rows(all) : 0, n = rows;
    if (p->where && rows > 0) {
        keep = fr_calloc((size_t)(rows + 7) / 8, 1);
        if (!keep) {
            rc = fr_fail(err, FR_ENOMEM, "out of memory filtering snapshots");
            goto fail;
        }
        rc = fr_expr_filter(p->where, all, keep, &n, err);
        if (rc < 0) {
            sql_wrap_at(err, st->where_pos);
            goto fail;
        }
        FR_GOTO(fr_batch_filter(all, keep, &kept, err));
    }
    fr_batch *proj = NULL;
    if (all) FR_GOTO(fr_batch_project(kept ? kept : all, p->cols, p->ncols, &proj, err));
    rc = sql_sink_begin(sink, p->result, err);
    if (rc == 0 && p->limit != 0 && proj) {
        sel_run r = {.plan = p, .sink = sink, .err = err};
        on_rows(&r, proj, err);
        proj = NULL;
        if (r.rc != 0) rc = r.rc;
    }
    fr_batch_free(proj);
    if (rc == 0) rc = sql_sink_end(sink, NULL, err);
fail:
    fr_free(keep);
    fr_batch_free(kept);
    fr_batch_free(all);
    return rc;
}

/* t$lake_snapshots: its rows are few and built whole, then filtered and projected. */
static int run_snapshots(fr_table *t, const sql_stmt *st, sel_plan *p, const fr_sql_sink *sink,
                         fr_error *err)
{
    fr_batch *all = NULL;
    int rc = sql_lake_snapshots_batch(t, p->table_schema, &all, err);
    if (rc < 0) return sql_wrap_at(err, st->table.pos);
    return run_rows(st, p, all, sink, err);
}

int sql_select_rows(const sql_stmt *st, const fr_schema *schema, fr_batch *rows,
                    const fr_sql_sink *sink, fr_error *err)
{
    sel_plan p = {.limit = st->limit};
    p.arena = fr_arena_new(16 << 10);
    int rc = p.arena ? plan_select(schema, st, &p, err)
                     : fr_fail(err, FR_ENOMEM, "out of memory planning a SELECT");
    if (rc == 0) rc = run_rows(st, &p, rows, sink, err);
    else fr_batch_free(rows);
    plan_free(&p);
    fr_arena_free(p.arena);
    return rc;
}

/* ---- EXPLAIN --------------------------------------------------------------------------- */

int sql_emit_plan(const fr_sql_sink *sink, const fr_buf *text, fr_error *err)
{
    fr_field f = {.name = "plan", .type = fr_type_of(FR_T_STRING)};
    f.type.nullable = false;
    fr_schema *schema = NULL;
    fr_builder *bld = NULL;
    int rc;
    FR_GOTO(fr_schema_new(&f, 1, 0, &schema, err));
    FR_GOTO(fr_builder_new(schema, &bld, err));
    for (size_t at = 0; at < text->len;) {
        const uint8_t *nl = memchr(text->data + at, '\n', text->len - at);
        size_t end = nl ? (size_t)(nl - text->data) : text->len;
        FR_GOTO(fr_builder_append_bytes(bld, 0, text->data + at, end - at, err));
        at = end + 1;
    }
    rc = sql_emit_result(sink, schema, bld, err);
fail:
    fr_builder_free(bld);
    fr_schema_free(schema);
    return rc;
}

static int describe_filter(const char *what, const fr_expr *e, fr_buf *out, fr_error *err)
{
    if (!e) return 0;
    FR_TRY(fr_buf_printf(out, err, "%s: ", what));
    FR_TRY(fr_expr_format(e, out, err));
    return fr_buf_printf(out, err, "\n");
}

/* The plan of a log read (a log table or t$changelog) in words. */
static int describe_log_read(fr_table *t, const sel_plan *p, bool changelog, fr_buf *out,
                             fr_error *err)
{
    int nparts = 0;
    fr_table_partition_keys(t, &nparts);
    FR_TRY(fr_buf_printf(out, err, "scan of the %s (the log of every %sbucket, from the "
                         "earliest offset)\n", changelog ? "changelog" : "log",
                         nparts ? "partition and " : ""));
    const fr_expr *pushed = changelog ? p->pushed : p->where;
    FR_TRY(describe_filter("filter pushed down", pushed, out, err));
    if (pushed && nparts)
        FR_TRY(fr_buf_printf(out, err, "partitions the filter rules out are skipped\n"));
    return describe_filter("then filter", changelog ? p->residual : NULL, out, err);
}

/* The columns of a projection, by name. */
static int describe_columns(const sel_plan *p, fr_buf *out, fr_error *err)
{
    for (int i = 0; i < p->ncols; i++)
        FR_TRY(fr_buf_printf(out, err, "%s%s", i ? ", " : "",
                             fr_schema_field(p->table_schema, p->cols[i])->name));
    return fr_buf_printf(out, err, "\n");
}

/* The plan of a union read (lake and log) or of a read of the lake alone, in words. */
static int describe_union(fr_table *t, const sel_plan *p, bool lake_only, fr_buf *out,
                          fr_error *err)
{
    int nparts = 0;
    fr_table_partition_keys(t, &nparts);
    fr_lake_status st;
    fr_error e2 = {0};
    bool known = fr_table_lake_status(t, &st, &e2) == 0;
    if (lake_only)
        FR_TRY(fr_buf_printf(out, err, "scan of the lake alone (the newest lake snapshot)\n"));
    else if (fr_table_is_pk(t))
        FR_TRY(fr_buf_printf(out, err, "union read: the newest lake snapshot merged by key with "
                             "the changelog of every %sbucket after the offsets it records "
                             "(the log wins, deletes remove)\n", nparts ? "partition and " : ""));
    else
        FR_TRY(fr_buf_printf(out, err, "union read: the newest lake snapshot, then the log of "
                             "every %sbucket after the offsets it records\n",
                             nparts ? "partition and " : ""));
    if (known && st.snapshot_id >= 0)
        FR_TRY(fr_buf_printf(out, err, "lake snapshot: %lld\n", (long long)st.snapshot_id));
    else if (known)
        FR_TRY(fr_buf_printf(out, err, "lake snapshot: none yet%s\n",
                             lake_only ? " (no rows)" : " (the log alone)"));
    FR_TRY(fr_buf_printf(out, err, "projection: "));
    FR_TRY(describe_columns(p, out, err));
    if (!p->where) return 0;
    FR_TRY(describe_filter(lake_only ? "filter pushed down (files and row groups its "
                                       "statistics rule out are skipped)"
                                     : "filter pushed down to the lake (files and row groups "
                                       "its statistics rule out are skipped) and to the log",
                           p->where, out, err));
    if (nparts && !lake_only)
        FR_TRY(fr_buf_printf(out, err, "partitions the filter rules out are skipped\n"));
    return 0;
}

static int explain(fr_table *t, const sel_plan *p, const sql_pk_plan *pk, bool changelog,
                   const fr_sql_sink *sink, fr_error *err)
{
    fr_buf text;
    fr_buf_init(&text);
    int rc;
    if (pk)
        FR_GOTO(sql_pk_plan_describe(t, pk, p->where, &text, err));
    else
        FR_GOTO(describe_log_read(t, p, changelog, &text, err));
    if (p->limit >= 0) FR_GOTO(fr_buf_printf(&text, err, "limit: %lld\n", (long long)p->limit));
    rc = sql_emit_plan(sink, &text, err);
fail:
    fr_buf_free(&text);
    return rc;
}

/* EXPLAIN of a union read, of t$lake, or of t$lake_snapshots (snapshots: lake_only and no
 * columns described). */
static int explain_lake(fr_table *t, const sel_plan *p, sql_virtual kind,
                        const fr_sql_sink *sink, fr_error *err)
{
    fr_buf text;
    fr_buf_init(&text);
    int rc;
    if (kind == SQL_VIRTUAL_LAKE_SNAPSHOTS) {
        FR_GOTO(fr_buf_printf(&text, err, "list of the lake's snapshots (table metadata)\n"));
        FR_GOTO(describe_filter("then filter", p->where, &text, err));
    } else {
        FR_GOTO(describe_union(t, p, kind == SQL_VIRTUAL_LAKE, &text, err));
    }
    if (p->limit >= 0) FR_GOTO(fr_buf_printf(&text, err, "limit: %lld\n", (long long)p->limit));
    rc = sql_emit_plan(sink, &text, err);
fail:
    fr_buf_free(&text);
    return rc;
}

/* SELECT from t$lake or t$lake_snapshots, or a union read of a lake-enabled table. */
static int select_lake(fr_table *t, const sql_stmt *st, sel_plan *p, sql_virtual kind,
                       const fr_sql_sink *sink, fr_error *err)
{
    if (kind != SQL_VIRTUAL_NONE && !fr_table_lake_enabled(t))
        return sql_fail_at(err, FR_EINVAL, st->table.pos, "table %s.%s has no lake: create it "
                           "with 'table.datalake.enabled' = 'true'", fr_table_db(t),
                           fr_table_name(t));
    if (kind == SQL_VIRTUAL_LAKE_SNAPSHOTS) {
        FR_TRY(sql_lake_snapshots_schema(&p->snapshots_schema, err));
        FR_TRY(plan_select(p->snapshots_schema, st, p, err));
        return st->explain ? explain_lake(t, p, kind, sink, err)
                           : run_snapshots(t, st, p, sink, err);
    }
    const fr_schema *schema = kind == SQL_VIRTUAL_LAKE ? fr_table_lake_schema(t)
                                                       : fr_table_schema(t);
    FR_TRY(plan_select(schema, st, p, err));
    return st->explain ? explain_lake(t, p, kind, sink, err)
                       : run_union(t, st, p, kind == SQL_VIRTUAL_LAKE, sink, err);
}

/* SELECT without FROM: one row of constants. */
static int select_constants(const sql_stmt *st, sel_plan *p, const fr_sql_sink *sink,
                            fr_error *err)
{
    sql_const_ctx cc = {0};
    const fr_batch *one = NULL;
    int rc;
    FR_GOTO(expand_items(st, p, err));
    FR_GOTO(sql_const_batch(&cc, &one, err));
    for (int i = 0; i < p->nitems; i++) {
        p->items[i].eval = p->items[i].expr;
        FR_GOTO(sql_const_bind(&cc, p->items[i].eval, err));
        p->items[i].type = p->items[i].eval->type;
    }
    p->proj_schema = fr_schema_clone(cc.empty);
    if (!p->proj_schema) {
        rc = fr_fail(err, FR_ENOMEM, "out of memory planning a SELECT");
        goto fail;
    }
    FR_GOTO(name_results(p, err));
    FR_GOTO(sql_sink_begin(sink, p->result, err));
    if (rc == 0 && p->limit != 0) {
        fr_batch *out = NULL;
        FR_GOTO(result_batch(p, one, &out, err));
        FR_GOTO(sql_sink_rows(sink, out, err));
    }
    if (rc == 0) rc = sql_sink_end(sink, NULL, err);
fail:
    sql_const_ctx_free(&cc);
    return rc;
}

int sql_exec_select(fr_sql_session *s, const sql_stmt *st, const fr_sql_sink *sink,
                    fr_error *err)
{
    if (sql_query_is_staged(st)) return sql_exec_query(s, st, sink, err);
    sel_plan p = {.limit = st->limit};
    p.arena = fr_arena_new(16 << 10);
    if (!p.arena) return fr_fail(err, FR_ENOMEM, "out of memory planning a SELECT");
    fr_table *t = NULL;
    int rc;
    if (!st->has_from && st->explain) {
        fr_buf text;
        fr_buf_init(&text);
        rc = fr_buf_printf(&text, err, "one row of constants: no table is read\n");
        if (rc == 0) rc = sql_emit_plan(sink, &text, err);
        fr_buf_free(&text);
        goto fail;
    }
    if (!st->has_from) {
        rc = select_constants(st, &p, sink, err);
        goto fail;
    }
    sql_table_name base;
    char buf[FR_NAME_BYTES_MAX + 1];
    sql_virtual kind;
    FR_GOTO(sql_virtual_split(&st->table, &base, buf, sizeof buf, &kind, err));
    FR_GOTO(sql_open_table(s, &base, &t, err));
    if (kind == SQL_VIRTUAL_CHANGELOG) {
        FR_GOTO(plan_changelog(t, st, &p, err));
        rc = st->explain ? explain(t, &p, NULL, true, sink, err)
                         : run_changelog(t, st, &p, sink, err);
    } else if (kind != SQL_VIRTUAL_NONE) {
        rc = select_lake(t, st, &p, kind, sink, err);
    } else if (fr_table_is_pk(t)) {
        sql_pk_plan pk;
        FR_GOTO(plan_select(fr_table_schema(t), st, &p, err));
        FR_GOTO(sql_pk_plan_where(t, p.where, p.arena, &pk, err));
        if (pk.access == SQL_ACCESS_SCAN && fr_table_lake_enabled(t))
            rc = st->explain ? explain_lake(t, &p, kind, sink, err)
                             : run_union(t, st, &p, false, sink, err);
        else
            rc = st->explain ? explain(t, &p, &pk, false, sink, err)
                             : run_pk(t, st, &p, &pk, sink, err);
    } else if (fr_table_lake_enabled(t)) {
        rc = select_lake(t, st, &p, kind, sink, err);
    } else {
        FR_GOTO(plan_select(fr_table_schema(t), st, &p, err));
        rc = st->explain ? explain(t, &p, NULL, false, sink, err) : run_scan(t, st, &p, sink, err);
    }
fail:
    if (t) fr_table_release(t);
    plan_free(&p);
    fr_arena_free(p.arena);
    return rc;
}
