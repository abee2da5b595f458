/* sql_select.c — SELECT items [FROM t [WHERE cond]] [LIMIT n].
 *
 * The plan: bind every item and the WHERE condition to the table's schema; project the
 * columns the items read (in the order the items first read them, at least one); push the
 * projection and the condition down to the table scan (the log skips batches by their
 * statistics and filters rows); evaluate the items over each returned batch (bound a second
 * time, to the projected schema) and hand the result to the sink; stop the scan once LIMIT
 * rows went out.
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
} sel_plan;

static void plan_free(sel_plan *p)
{
    fr_schema_free(p->proj_schema);
    fr_schema_free(p->result);
    fr_free(p->items);
    fr_free(p->cols);
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
    return rc;
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

static int plan_select(fr_table *t, const sql_stmt *st, sel_plan *p, fr_error *err)
{
    p->table_schema = fr_table_schema(t);
    FR_TRY(expand_items(st, p, err));
    FR_TRY(bind_items(p, err));
    FR_TRY(bind_where(st, p, err));
    if (p->ncols == 0) add_col(p, 0); /* a scan returns at least one column */
    FR_TRY(bind_projected(p, err));
    FR_TRY(name_results(p, err));
    p->passthrough = is_passthrough(p);
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

static int on_scan(void *ctx, int bucket, fr_batch *batch, const int64_t *offsets,
                   const uint8_t *change_types, int64_t commit_ts, fr_error *err)
{
    (void)bucket, (void)offsets, (void)change_types, (void)commit_ts, (void)err;
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
        int rc = fr_table_scan(t, &spec, on_scan, &r, err);
        if (r.rc != 0) return r.rc < 0 ? sql_wrap_at(err, st->pos) : r.rc;
        if (rc < 0) return sql_wrap_at(err, st->table.pos);
    }
    return sql_sink_end(sink, NULL, err);
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
    sel_plan p = {.limit = st->limit};
    p.arena = fr_arena_new(16 << 10);
    if (!p.arena) return fr_fail(err, FR_ENOMEM, "out of memory planning a SELECT");
    fr_table *t = NULL;
    int rc;
    if (!st->has_from) {
        rc = select_constants(st, &p, sink, err);
        goto fail;
    }
    FR_GOTO(sql_open_table(s, &st->table, &t, err));
    FR_GOTO(plan_select(t, st, &p, err));
    rc = run_scan(t, st, &p, sink, err);
fail:
    if (t) fr_table_release(t);
    plan_free(&p);
    fr_arena_free(p.arena);
    return rc;
}
