/* sql_dml.c — UPDATE t SET c = expr, ... [WHERE cond] and DELETE FROM t [WHERE cond] on
 * primary-key tables. The rows the condition selects are found in the table's current
 * state as SELECT finds them (point lookups, prefix lookups or a scan: sql_pk.c), all of
 * them before anything is written; then the new rows are upserted (UPDATE) or the rows
 * deleted (DELETE) through fr_table_put, and the table's merge engine and delete behaviour
 * apply as to any write. An UPDATE with the last_row or aggregation merge engine writes a
 * partial update whose target columns are the key and the SET columns (the others are
 * left as they are stored); the other engines take whole rows.
 *
 * Invariant: every new value is computed and converted before the first write, so a bad
 * value (a NULL into a NOT NULL column, out of range) writes nothing. */
#include <stdio.h>
#include <strings.h>

#include "sql/sql_int.h"

typedef struct dml_rows {
    fr_batch **b;
    int n, cap;
    int64_t rows;
} dml_rows;

static void dml_rows_free(dml_rows *r)
{
    for (int i = 0; i < r->n; i++) fr_batch_free(r->b[i]);
    fr_free(r->b);
}

static int keep_rows(void *ctx, fr_batch *batch, fr_error *err)
{
    dml_rows *r = ctx;
    if (r->n == r->cap) {
        int cap = r->cap ? r->cap * 2 : 8;
        fr_batch **b = fr_realloc(r->b, sizeof *b * (size_t)cap);
        if (!b) {
            fr_batch_free(batch);
            return fr_fail(err, FR_ENOMEM, "out of memory keeping the rows found");
        }
        r->b = b;
        r->cap = cap;
    }
    r->b[r->n++] = batch;
    r->rows += fr_batch_num_rows(batch);
    return 0;
}

typedef struct dml_plan {
    fr_table *table;
    const fr_schema *schema;
    int nfields;
    fr_arena *arena;
    fr_expr *where;
    sql_pk_plan access;
    int *set_of;     /* UPDATE: per column, its SET item or -1 */
    fr_expr **value; /* UPDATE: per SET item, bound to the table schema */
    int *targets;    /* UPDATE, partial: the key and SET columns, ascending; else NULL */
    int ntargets;
} dml_plan;

/* ---- checks and planning ---------------------------------------------------------------- */

static int check_table(const sql_stmt *st, const fr_table *t, fr_error *err)
{
    const char *what = st->kind == SQL_UPDATE ? "UPDATE" : "DELETE";
    if (!fr_table_is_pk(t))
        return sql_fail_at(err, FR_EINVAL, st->table.pos,
                           "table %s.%s is a log table, which is append-only: %s needs a "
                           "primary-key table", fr_table_db(t), fr_table_name(t), what);
    const char *behavior = sql_table_option(t, "table.delete.behavior");
    if (st->kind == SQL_DELETE && behavior && strcasecmp(behavior, "disable") == 0)
        return sql_fail_at(err, FR_EINVAL, st->table.pos,
                           "table %s.%s has 'table.delete.behavior' = 'disable', which rejects "
                           "deletes", fr_table_db(t), fr_table_name(t));
    return 0;
}

static int bind_where(const sql_stmt *st, dml_plan *p, fr_error *err)
{
    if (!st->where) return 0;
    p->where = st->where;
    if (fr_expr_bind(p->where, p->schema, err) < 0)
        return sql_wrap_at(err, (sql_pos){p->where->line, p->where->col});
    if (p->where->type.id != FR_T_BOOLEAN) {
        char tn[64];
        fr_type_format(&p->where->type, false, tn, sizeof tn);
        return sql_fail_at(err, FR_ETYPE, st->where_pos, "WHERE needs a BOOLEAN condition, not %s",
                           tn);
    }
    return 0;
}

/* UPDATE: each SET item's column (not a key column) and its value bound to the table. */
static int plan_sets(const sql_stmt *st, dml_plan *p, fr_error *err)
{
    p->set_of = fr_calloc((size_t)p->nfields + 1, sizeof *p->set_of);
    p->value = fr_calloc((size_t)st->nsets + 1, sizeof *p->value);
    if (!p->set_of || !p->value) return fr_fail(err, FR_ENOMEM, "out of memory for UPDATE");
    for (int c = 0; c < p->nfields; c++) p->set_of[c] = -1;
    for (int j = 0; j < st->nsets; j++) {
        const sql_assignment *a = &st->sets[j];
        int c = fr_schema_find(p->schema, a->column.s);
        if (c < 0)
            return sql_fail_at(err, FR_ENOTFOUND, a->column.pos, "unknown column '%s' in table "
                               "%s.%s", a->column.s, fr_table_db(p->table),
                               fr_table_name(p->table));
        if (sql_is_key_column(p->table, c))
            return sql_fail_at(err, FR_EINVAL, a->column.pos,
                               "UPDATE cannot change primary key column '%s': the key names the "
                               "row (DELETE it and INSERT the row under its new key)",
                               fr_schema_field(p->schema, c)->name);
        p->set_of[c] = j;
        p->value[j] = sql_expr_clone(p->arena, a->value);
        if (!p->value[j]) return fr_fail(err, FR_ENOMEM, "out of memory for UPDATE");
        if (fr_expr_bind(p->value[j], p->schema, err) < 0)
            return sql_wrap_at(err, (sql_pos){p->value[j]->line, p->value[j]->col});
    }
    return 0;
}

/* Whether some column outside the key is NOT NULL (a partial update is then refused). */
static bool has_not_null_value_column(const dml_plan *p)
{
    for (int c = 0; c < p->nfields; c++)
        if (!sql_is_key_column(p->table, c) && !fr_schema_field(p->schema, c)->type.nullable)
            return true;
    return false;
}

/* The target columns of UPDATE's writes: the key and the SET columns, for the merge
 * engines that merge partial rows; none (whole rows) otherwise or when that is every
 * column. With last_row a whole row (the stored one with the new values) is the same
 * write, and it is what a table with NOT NULL columns outside its key takes. */
static int plan_targets(dml_plan *p, fr_error *err)
{
    char merge[64];
    sql_table_merge_engine(p->table, merge, sizeof merge);
    if (strcmp(merge, "last_row") != 0 && strcmp(merge, "aggregation") != 0) return 0;
    if (strcmp(merge, "last_row") == 0 && has_not_null_value_column(p)) return 0;
    int n = 0;
    for (int c = 0; c < p->nfields; c++) n += p->set_of[c] >= 0 || sql_is_key_column(p->table, c);
    if (n == p->nfields) return 0;
    p->targets = fr_calloc((size_t)n + 1, sizeof *p->targets);
    if (!p->targets) return fr_fail(err, FR_ENOMEM, "out of memory for UPDATE");
    for (int c = 0; c < p->nfields; c++)
        if (p->set_of[c] >= 0 || sql_is_key_column(p->table, c)) p->targets[p->ntargets++] = c;
    return 0;
}

/* ---- new rows --------------------------------------------------------------------------- */

/* The rows UPDATE writes for the rows found in b: the SET values converted to their
 * columns' types, the other columns as they were. */
static int updated_rows(const sql_stmt *st, const dml_plan *p, const fr_batch *b,
                        fr_batch **out, fr_error *err)
{
    fr_batch **vals = fr_calloc((size_t)st->nsets + 1, sizeof *vals);
    fr_builder *bld = NULL;
    fr_arena *arena = fr_arena_new(16 << 10);
    int rc = 0;
    if (!vals || !arena) {
        rc = fr_fail(err, FR_ENOMEM, "out of memory for UPDATE");
        goto fail;
    }
    for (int j = 0; j < st->nsets; j++) {
        rc = fr_expr_eval(p->value[j], b, &vals[j], err);
        if (rc < 0) {
            sql_wrap_at(err, (sql_pos){p->value[j]->line, p->value[j]->col});
            goto fail;
        }
    }
    FR_GOTO(fr_builder_new(p->schema, &bld, err));
    for (int64_t r = 0; r < fr_batch_num_rows(b); r++) {
        for (int c = 0; c < p->nfields; c++) {
            int j = p->set_of[c];
            fr_value v, conv;
            if (j < 0) {
                fr_column_get(fr_batch_column(b, c), r, &v);
                FR_GOTO(fr_builder_append(bld, c, &v, err));
                continue;
            }
            fr_column_get(fr_batch_column(vals[j], 0), r, &v);
            v.type = p->value[j]->type;
            FR_GOTO(sql_convert_value(&v, fr_schema_field(p->schema, c), st->sets[j].column.pos,
                                      arena, &conv, err));
            FR_GOTO(fr_builder_append(bld, c, &conv, err));
        }
    }
    rc = fr_builder_finish(bld, out, err);
fail:
    for (int j = 0; vals && j < st->nsets; j++) fr_batch_free(vals[j]);
    fr_free(vals);
    fr_builder_free(bld);
    fr_arena_free(arena);
    return rc;
}

/* Replaces every found batch by the batch to write (UPDATE) before anything is written. */
static int build_writes(const sql_stmt *st, const dml_plan *p, dml_rows *rows, fr_error *err)
{
    if (st->kind == SQL_DELETE) return 0;
    for (int i = 0; i < rows->n; i++) {
        fr_batch *nb = NULL;
        FR_TRY(updated_rows(st, p, rows->b[i], &nb, err));
        fr_batch_free(rows->b[i]);
        rows->b[i] = nb;
    }
    return 0;
}

static int write_rows(const sql_stmt *st, const dml_plan *p, const dml_rows *rows,
                      int64_t *changed, fr_error *err)
{
    uint8_t *ops = NULL;
    int rc = 0;
    for (int i = 0; i < rows->n && rc == 0; i++) {
        const fr_batch *b = rows->b[i];
        int64_t n = fr_batch_num_rows(b), got = 0;
        if (st->kind == SQL_DELETE) {
            fr_free(ops);
            ops = fr_malloc((size_t)n + 1);
            if (!ops) {
                rc = fr_fail(err, FR_ENOMEM, "out of memory for DELETE");
                break;
            }
            memset(ops, FR_KV_DELETE, (size_t)n);
        }
        rc = fr_table_put(p->table, b, ops, p->targets, p->ntargets, FR_NO_WRITER, -1, &got,
                          err);
        if (rc < 0) sql_wrap_at(err, st->table.pos);
        *changed += got;
    }
    fr_free(ops);
    return rc;
}

/* ---- EXPLAIN and the statement ---------------------------------------------------------- */

static int explain(const sql_stmt *st, const dml_plan *p, const fr_sql_sink *sink,
                   fr_error *err)
{
    fr_buf text;
    fr_buf_init(&text);
    int rc;
    FR_GOTO(sql_pk_plan_describe(p->table, &p->access, p->where, &text, err));
    if (st->kind == SQL_DELETE) {
        FR_GOTO(fr_buf_printf(&text, err, "then deletes each row found\n"));
    } else {
        FR_GOTO(fr_buf_printf(&text, err, "then upserts each row found with its new values"));
        for (int i = 0; i < p->ntargets; i++)
            FR_GOTO(fr_buf_printf(&text, err, "%s%s", i ? ", " : " (target columns: ",
                                  fr_schema_field(p->schema, p->targets[i])->name));
        FR_GOTO(fr_buf_printf(&text, err, p->ntargets ? ")\n" : "\n"));
    }
    rc = sql_emit_plan(sink, &text, err);
fail:
    fr_buf_free(&text);
    return rc;
}

static int report(const sql_stmt *st, const dml_plan *p, int64_t matched, int64_t changed,
                  const fr_sql_sink *sink, fr_error *err)
{
    const char *verb = st->kind == SQL_UPDATE ? "updated" : "deleted";
    if (changed == matched)
        return sql_end_message(sink, err, "%lld row%s %s", (long long)changed,
                               changed == 1 ? "" : "s", verb);
    char merge[64];
    sql_table_merge_engine(p->table, merge, sizeof merge);
    const char *behavior = sql_table_option(p->table, "table.delete.behavior");
    bool ignores = behavior ? strcasecmp(behavior, "ignore") == 0
                            : strcmp(merge, "last_row") != 0;
    if (st->kind == SQL_DELETE && ignores)
        return sql_end_message(sink, err, "%lld row%s deleted (%lld matched; the table ignores "
                               "deletes: 'table.delete.behavior' is 'ignore'%s)",
                               (long long)changed, changed == 1 ? "" : "s", (long long)matched,
                               behavior ? "" : " by default with this merge engine");
    return sql_end_message(sink, err, "%lld row%s %s (%lld matched; a row the %s merge engine "
                           "leaves as it is changes nothing)",
                           (long long)changed, changed == 1 ? "" : "s", verb, (long long)matched,
                           merge);
}

int sql_exec_dml(fr_sql_session *s, const sql_stmt *st, const fr_sql_sink *sink, fr_error *err)
{
    dml_plan p = {0};
    dml_rows rows = {0};
    int64_t changed = 0;
    int rc;
    FR_TRY(sql_open_table(s, &st->table, &p.table, err));
    p.schema = fr_table_schema(p.table);
    p.nfields = fr_schema_num_fields(p.schema);
    p.arena = fr_arena_new(16 << 10);
    if (!p.arena) {
        rc = fr_fail(err, FR_ENOMEM, "out of memory for %s",
                     st->kind == SQL_UPDATE ? "UPDATE" : "DELETE");
        goto fail;
    }
    FR_GOTO(check_table(st, p.table, err));
    if (st->kind == SQL_UPDATE) {
        FR_GOTO(plan_sets(st, &p, err));
        FR_GOTO(plan_targets(&p, err));
    }
    FR_GOTO(bind_where(st, &p, err));
    FR_GOTO(sql_pk_plan_where(p.table, p.where, p.arena, &p.access, err));
    if (st->explain) {
        rc = explain(st, &p, sink, err);
        goto fail;
    }
    rc = sql_pk_read(p.table, &p.access, p.where, NULL, 0, keep_rows, &rows, err);
    if (rc < 0) {
        sql_wrap_at(err, st->pos);
        goto fail;
    }
    FR_GOTO(build_writes(st, &p, &rows, err));
    FR_GOTO(write_rows(st, &p, &rows, &changed, err));
    rc = report(st, &p, rows.rows, changed, sink, err);
fail:
    dml_rows_free(&rows);
    fr_free(p.set_of);
    fr_free(p.value);
    fr_free(p.targets);
    fr_arena_free(p.arena);
    fr_table_release(p.table);
    return rc;
}
