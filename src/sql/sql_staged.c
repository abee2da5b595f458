/* sql_staged.c — SELECT with GROUP BY, HAVING, aggregate functions, DISTINCT or ORDER BY: the
 * stages that run after the rows are read.
 *
 * Such a SELECT runs as up to three stages, each the sink of the one before:
 *   1. the read: a plain SELECT (sql_select.c) with the statement's table and WHERE and no
 *      LIMIT, of what the later stages need: the GROUP BY expressions and the aggregates'
 *      arguments when aggregating; else the items, and the ORDER BY keys that are not items
 *      as hidden columns after them;
 *   2. grouping (sql_group.c), when aggregating or DISTINCT. Aggregating: the groups come as
 *      one batch (#g0.. the group values, #a0.. the aggregates), and the items and HAVING,
 *      in which every GROUP BY expression and every aggregate call was replaced by its
 *      column, run over it as a SELECT over rows in memory (its WHERE is the HAVING).
 *      DISTINCT: the result rows are the group keys;
 *   3. sorting (sql_order.c), with ORDER BY: LIMIT applies there, and the hidden key
 *      columns are dropped. Without ORDER BY the LIMIT is applied by the last SELECT.
 *
 * GROUP BY expressions are matched to the items' subtrees as written (columns by name, any
 * case), as SQL does: `SELECT a + 1 ... GROUP BY a` is fine, `SELECT a ... GROUP BY a + 1`
 * is not. ORDER BY takes an item's alias, a position in the result (1-based), or an
 * expression (over the table's columns; when aggregating, over groups and aggregates). */
#include <stdio.h>

#include "sql/sql_int.h"

typedef enum q_key_kind {
    Q_KEY_POSITION, /* ORDER BY 2: a column of the result */
    Q_KEY_ITEM,     /* an item's alias */
    Q_KEY_NAME,     /* SELECT DISTINCT: a result column by name */
    Q_KEY_HIDDEN,   /* an expression evaluated as a hidden column after the items */
} q_key_kind;

typedef struct q_key {
    q_key_kind kind;
    int index; /* the position (0-based), the item, or the hidden column */
    const sql_order_item *src;
} q_key;

typedef struct q_plan {
    fr_arena *arena;
    const sql_stmt *st;
    const fr_sql_sink *sink; /* the caller's */
    /* what the read returns */
    sql_stmt read;
    int nread; /* items of the read */
    /* aggregating (GROUP BY, HAVING or an aggregate call) */
    bool aggregating;
    fr_expr **aggs; /* the aggregate calls, distinct by structure (unbound) */
    int naggs;
    const fr_expr *stray; /* the first column outside GROUP BY and the aggregates */
    int stray_item;       /* its probe among the read's items */
    sql_stmt outer;       /* items and HAVING over the groups */
    int *named_by_group;  /* per item: the GROUP BY column that names it (a bare column
                             without alias), or -1 */
    fr_schema *group_schema;
    sql_grouper *grouper;
    /* sorting */
    q_key *keys;
    int nkeys;
    int nhidden;
    fr_schema *visible;
    sql_sorter *sorter;
    fr_sql_sink sort_sink;
} q_plan;

/* ---- looking at trees ------------------------------------------------------------------- */

static bool has_aggregate(const fr_expr *e)
{
    if (!e) return false;
    if (e->kind == FR_EX_AGGREGATE) return true;
    for (int i = 0; i < e->nargs; i++)
        if (has_aggregate(e->args[i])) return true;
    return false;
}

/* Whether two unbound trees say the same thing: columns by name in any case, literals by
 * value and type. */
static bool same_expr(const fr_expr *a, const fr_expr *b)
{
    if (a->kind != b->kind || a->op != b->op || a->negated != b->negated ||
        a->nargs != b->nargs || a->agg != b->agg || a->distinct != b->distinct ||
        a->func != b->func || a->case_operand != b->case_operand ||
        a->case_else != b->case_else)
        return false;
    if (a->kind == FR_EX_COLUMN && strcasecmp(a->name, b->name) != 0) return false;
    if (a->kind == FR_EX_CAST && (!fr_type_equal(&a->cast_type, &b->cast_type) ||
                                  a->cast_type.nullable != b->cast_type.nullable))
        return false;
    if (a->kind == FR_EX_LITERAL) {
        const fr_value *x = &a->value, *y = &b->value;
        if (x->is_null != y->is_null || !fr_type_equal(&x->type, &y->type)) return false;
        int cmp = 0;
        fr_error ignored = {0};
        if (!x->is_null && (fr_value_compare(x, y, &cmp, &ignored) < 0 || cmp != 0))
            return false;
    }
    for (int i = 0; i < a->nargs; i++)
        if (!same_expr(a->args[i], b->args[i])) return false;
    return true;
}

bool sql_query_is_staged(const sql_stmt *st)
{
    if (st->ngroup_by || st->having || st->distinct || st->norder_by) return true;
    for (int i = 0; i < st->nitems; i++)
        if (has_aggregate(st->items[i].expr)) return true;
    return false;
}

static fr_expr *column_ref(q_plan *q, const char *fmt, int i, const fr_expr *at)
{
    char name[32];
    snprintf(name, sizeof name, fmt, i);
    fr_expr *e = fr_expr_column(q->arena, fr_arena_strndup(q->arena, name, strlen(name)));
    if (!e || !e->name) return NULL;
    e->line = at->line;
    e->col = at->col;
    return e;
}

static int oom(fr_error *err) { return fr_fail(err, FR_ENOMEM, "out of memory planning a SELECT"); }

/* ---- rewriting over the groups ---------------------------------------------------------- */

/* The index of aggregate call e in the plan's list (added when new). */
static int agg_index(q_plan *q, const fr_expr *e, fr_error *err)
{
    for (int i = 0; i < q->naggs; i++)
        if (same_expr(q->aggs[i], e)) return i;
    if (e->nargs && has_aggregate(e->args[0]))
        return sql_fail_at(err, FR_ESYNTAX, (sql_pos){e->line, e->col},
                           "aggregate functions cannot be nested");
    if (q->naggs >= FR_SCHEMA_COLUMNS_MAX)
        return sql_fail_at(err, FR_ELIMIT, (sql_pos){e->line, e->col},
                           "a SELECT has at most %d aggregate calls", FR_SCHEMA_COLUMNS_MAX);
    fr_expr **aggs = fr_arena_alloc(q->arena, sizeof *aggs * (size_t)(q->naggs + 1));
    if (!aggs) return oom(err);
    if (q->naggs) memcpy(aggs, q->aggs, sizeof *aggs * (size_t)q->naggs);
    aggs[q->naggs] = (fr_expr *)e;
    q->aggs = aggs;
    return q->naggs++;
}

/* A copy of e over the groups: a subtree equal to a GROUP BY expression becomes its column
 * #gN, an aggregate call its column #aN. A column left outside both is kept as it is and
 * noted as the stray (reported once the read has said whether the column exists). */
static int rewrite(q_plan *q, const fr_expr *e, fr_expr **out, fr_error *err)
{
    for (int i = 0; i < q->st->ngroup_by; i++)
        if (same_expr(e, q->st->group_by[i])) {
            *out = column_ref(q, "#g%d", i, e);
            return *out ? 0 : oom(err);
        }
    if (e->kind == FR_EX_AGGREGATE) {
        int a = agg_index(q, e, err);
        if (a < 0) return a;
        *out = column_ref(q, "#a%d", a, e);
        return *out ? 0 : oom(err);
    }
    fr_expr *c = fr_arena_alloc(q->arena, sizeof *c);
    if (!c) return oom(err);
    *c = *e;
    if (e->kind == FR_EX_COLUMN && !q->stray) q->stray = e;
    if (e->nargs > 0 && !(c->args = fr_arena_alloc(q->arena, sizeof *c->args * (size_t)e->nargs)))
        return oom(err);
    for (int i = 0; i < e->nargs; i++) FR_TRY(rewrite(q, e->args[i], &c->args[i], err));
    *out = c;
    return 0;
}

/* Whether an ORDER BY key names an item by its alias; the item's index or -1. */
static int alias_item(const sql_stmt *st, const fr_expr *e)
{
    if (e->kind != FR_EX_COLUMN) return -1;
    for (int i = 0; i < st->nitems; i++)
        if (st->items[i].alias && strcasecmp(st->items[i].alias, e->name) == 0) return i;
    return -1;
}

/* An integer literal as an ORDER BY key is a position in the result. */
static bool is_position(const fr_expr *e)
{
    return e->kind == FR_EX_LITERAL && !e->value.is_null && fr_type_is_integer(e->value.type.id);
}

/* Grows an item list in the arena by one. */
static sql_select_item *add_item(q_plan *q, sql_select_item **items, int *n, fr_error *err)
{
    if (*n >= FR_SCHEMA_COLUMNS_MAX) {
        sql_fail_at(err, FR_ELIMIT, q->st->pos, "a result has at most %d columns",
                    FR_SCHEMA_COLUMNS_MAX);
        return NULL;
    }
    sql_select_item *more = fr_arena_alloc(q->arena, sizeof *more * (size_t)(*n + 1));
    if (!more) {
        oom(err);
        return NULL;
    }
    if (*n) memcpy(more, *items, sizeof *more * (size_t)*n);
    *items = more;
    more[*n] = (sql_select_item){0};
    return &more[(*n)++];
}

/* Resolves the ORDER BY keys: positions, aliases, names (DISTINCT), and hidden expressions
 * added to `items` (the read's, or the outer SELECT's when aggregating). */
static int plan_keys(q_plan *q, sql_select_item **items, int *nitems, fr_error *err)
{
    const sql_stmt *st = q->st;
    q->keys = fr_arena_alloc(q->arena, sizeof *q->keys * (size_t)(st->norder_by + 1));
    if (!q->keys) return oom(err);
    for (int k = 0; k < st->norder_by; k++) {
        const sql_order_item *o = &st->order_by[k];
        q_key *key = &q->keys[q->nkeys++];
        *key = (q_key){.src = o};
        if (is_position(o->expr)) {
            key->kind = Q_KEY_POSITION;
            key->index = o->expr->value.v.i > INT32_MAX ? INT32_MAX : (int)o->expr->value.v.i - 1;
        } else if ((key->index = alias_item(st, o->expr)) >= 0) {
            key->kind = Q_KEY_ITEM;
        } else if (st->distinct) {
            if (o->expr->kind != FR_EX_COLUMN)
                return sql_fail_at(err, FR_EINVAL, o->pos, "with SELECT DISTINCT, ORDER BY "
                                   "takes columns of the result, by name or position");
            key->kind = Q_KEY_NAME;
        } else {
            sql_select_item *it = add_item(q, items, nitems, err);
            if (!it) return err->code;
            it->pos = o->pos;
            if (q->aggregating) FR_TRY(rewrite(q, o->expr, &it->expr, err));
            else it->expr = o->expr;
            key->kind = Q_KEY_HIDDEN;
            key->index = q->nhidden++;
        }
    }
    return 0;
}

/* Aggregating: the outer SELECT's items (the statement's, rewritten, named as written) and
 * HAVING, then the read's items: GROUP BY expressions, aggregate arguments, the stray. */
static int plan_aggregating(q_plan *q, fr_error *err)
{
    const sql_stmt *st = q->st;
    sql_stmt *o = &q->outer;
    *o = (sql_stmt){.kind = SQL_SELECT, .pos = st->pos, .has_from = true,
                    .where_pos = st->having_pos, .limit = st->norder_by ? -1 : st->limit};
    q->named_by_group = fr_arena_alloc(q->arena, sizeof(int) * (size_t)(st->nitems + 1));
    if (!q->named_by_group) return oom(err);
    for (int i = 0; i < st->nitems; i++) {
        const sql_select_item *src = &st->items[i];
        if (!src->expr)
            return sql_fail_at(err, FR_ESYNTAX, src->pos, "SELECT * cannot be used with "
                               "GROUP BY or aggregate functions: name the columns");
        sql_select_item *it = add_item(q, &o->items, &o->nitems, err);
        if (!it) return err->code;
        *it = *src;
        it->alias = src->alias ? src->alias : src->text;
        q->named_by_group[i] = -1;
        for (int g = 0; g < st->ngroup_by && !src->alias && sql_expr_is_column(src->expr); g++)
            if (same_expr(src->expr, st->group_by[g]) && q->named_by_group[i] < 0)
                q->named_by_group[i] = g;
        FR_TRY(rewrite(q, src->expr, &it->expr, err));
    }
    if (st->having) FR_TRY(rewrite(q, st->having, &o->where, err));
    FR_TRY(plan_keys(q, &o->items, &o->nitems, err));
    if (st->ngroup_by == 0 && q->naggs == 0) {
        /* A HAVING over constants alone (SELECT 0 FROM t HAVING 1 < 2): the one group still
         * needs a column to carry its row, so it counts rows nobody reads. */
        fr_expr *count = fr_expr_node(q->arena, FR_EX_AGGREGATE, FR_OP_NONE, 0, NULL);
        if (!count) return oom(err);
        count->agg = FR_AGGFN_COUNT;
        FR_TRY(agg_index(q, count, err));
    }
    sql_stmt *r = &q->read;
    for (int g = 0; g < st->ngroup_by; g++) {
        if (has_aggregate(st->group_by[g]))
            return sql_fail_at(err, FR_ESYNTAX, (sql_pos){st->group_by[g]->line,
                               st->group_by[g]->col}, "GROUP BY cannot hold an aggregate function");
        sql_select_item *it = add_item(q, &r->items, &r->nitems, err);
        if (!it) return err->code;
        it->expr = st->group_by[g];
        it->pos = (sql_pos){it->expr->line, it->expr->col};
    }
    for (int a = 0; a < q->naggs; a++) {
        if (q->aggs[a]->nargs == 0) continue;
        sql_select_item *it = add_item(q, &r->items, &r->nitems, err);
        if (!it) return err->code;
        it->expr = q->aggs[a]->args[0];
        it->pos = (sql_pos){it->expr->line, it->expr->col};
    }
    if (q->stray) {
        sql_select_item *it = add_item(q, &r->items, &r->nitems, err);
        if (!it) return err->code;
        it->expr = (fr_expr *)q->stray;
        q->stray_item = r->nitems - 1;
    }
    if (r->nitems == 0) { /* COUNT(*) alone: the read still returns a column */
        sql_select_item *it = add_item(q, &r->items, &r->nitems, err);
        fr_value one = fr_value_bool(fr_type_of(FR_T_BOOLEAN), true);
        if (!it || !(it->expr = fr_expr_literal(q->arena, &one))) return it ? oom(err) : err->code;
    }
    return 0;
}

/* ---- the sort stage's sink ------------------------------------------------------------- */

/* The result column of item i when the read expanded its stars into `visible` columns. */
static int item_column(const sql_stmt *st, int item, int visible)
{
    int stars = 0;
    for (int i = 0; i < st->nitems; i++) stars += st->items[i].expr == NULL;
    int star_width = stars ? (visible - (st->nitems - stars)) / stars : 0, col = 0;
    for (int i = 0; i < item; i++) col += st->items[i].expr ? 1 : star_width;
    return col;
}

static int key_column(const q_plan *q, const q_key *k, const fr_schema *schema, int visible,
                      int *col, fr_error *err)
{
    switch (k->kind) {
    case Q_KEY_POSITION:
        if (k->index < 0 || k->index >= visible)
            return sql_fail_at(err, FR_EINVAL, k->src->pos, "ORDER BY position %lld is not "
                               "in the result (1 to %d)", (long long)k->src->expr->value.v.i,
                               visible);
        *col = k->index;
        return 0;
    case Q_KEY_ITEM: *col = q->aggregating ? k->index : item_column(q->st, k->index, visible); return 0;
    case Q_KEY_HIDDEN: *col = visible + k->index; return 0;
    case Q_KEY_NAME:
        for (int c = 0; c < visible; c++)
            if (strcasecmp(fr_schema_field(schema, c)->name, k->src->expr->name) == 0) {
                *col = c;
                return 0;
            }
        return sql_fail_at(err, FR_EINVAL, k->src->pos, "with SELECT DISTINCT, ORDER BY "
                           "takes columns of the result: '%s' is not one", k->src->expr->name);
    }
    return fr_fail(err, FR_EINVAL, "malformed ORDER BY key");
}

static int sort_begin(void *ctx, const fr_schema *schema, fr_error *err)
{
    q_plan *q = ctx;
    int visible = fr_schema_num_fields(schema) - q->nhidden;
    sql_sort_key *keys = fr_arena_alloc(q->arena, sizeof *keys * (size_t)q->nkeys);
    int *cols = fr_arena_alloc(q->arena, sizeof *cols * (size_t)(visible + 1));
    if (!keys || !cols) return oom(err);
    for (int k = 0; k < q->nkeys; k++) {
        keys[k] = (sql_sort_key){.desc = q->keys[k].src->desc,
                                 .nulls_first = q->keys[k].src->nulls_first};
        FR_TRY(key_column(q, &q->keys[k], schema, visible, &keys[k].column, err));
    }
    for (int c = 0; c < visible; c++) cols[c] = c;
    FR_TRY(fr_schema_project(schema, cols, visible, &q->visible, err));
    FR_TRY(sql_sorter_new(schema, keys, q->nkeys, q->st->limit, visible, &q->sorter, err));
    return sql_sink_begin(q->sink, q->visible, err);
}

static int sort_rows(void *ctx, fr_batch *batch, fr_error *err)
{
    q_plan *q = ctx;
    return sql_sorter_add(q->sorter, batch, err);
}

static int sort_end(void *ctx, const char *message, fr_error *err)
{
    q_plan *q = ctx;
    int rc = sql_sorter_emit(q->sorter, q->sink, err);
    return rc != 0 ? rc : sql_sink_end(q->sink, message, err);
}

/* Where the stage before sorting sends its rows. */
static const fr_sql_sink *after_grouping(q_plan *q)
{
    return q->st->norder_by ? &q->sort_sink : q->sink;
}

/* ---- the grouping stage's sink ---------------------------------------------------------- */

/* The groups' schema: #g0.. as the read returns the GROUP BY expressions, #a0.. as the
 * aggregates compute. DISTINCT: the read's own. */
static int group_schema(q_plan *q, const fr_schema *read, sql_agg_spec *specs, fr_error *err)
{
    int ng = q->aggregating ? q->st->ngroup_by : fr_schema_num_fields(read);
    int n = ng + q->naggs, arg = ng;
    fr_field *f = fr_arena_alloc(q->arena, sizeof *f * (size_t)(n + 1));
    if (!f) return oom(err);
    for (int i = 0; i < ng; i++) {
        f[i] = *fr_schema_field(read, i);
        if (!q->aggregating) continue;
        char name[32];
        snprintf(name, sizeof name, "#g%d", i);
        f[i].name = fr_arena_strndup(q->arena, name, strlen(name));
    }
    for (int a = 0; a < q->naggs; a++) {
        const fr_expr *call = q->aggs[a];
        specs[a] = (sql_agg_spec){.fn = call->agg, .distinct = call->distinct,
                                  .arg = call->nargs ? arg++ : -1,
                                  .pos = {call->line, call->col}};
        const fr_type *t = call->nargs ? &fr_schema_field(read, specs[a].arg)->type : NULL;
        FR_TRY(sql_agg_type(call->agg, t, (sql_pos){call->line, call->col}, &f[ng + a].type, err));
        char name[32];
        snprintf(name, sizeof name, "#a%d", a);
        f[ng + a].name = fr_arena_strndup(q->arena, name, strlen(name));
    }
    for (int i = 0; i < n; i++)
        if (!f[i].name) return oom(err);
    return fr_schema_new(f, n, 0, &q->group_schema, err);
}

static int group_begin(void *ctx, const fr_schema *schema, fr_error *err)
{
    q_plan *q = ctx;
    if (q->stray)
        return sql_fail_at(err, FR_EINVAL, (sql_pos){q->stray->line, q->stray->col},
                           "column '%s' must be in GROUP BY or inside an aggregate function",
                           q->stray->name);
    sql_agg_spec *specs = fr_arena_alloc(q->arena, sizeof *specs * (size_t)(q->naggs + 1));
    if (!specs) return oom(err);
    FR_TRY(group_schema(q, schema, specs, err));
    if (q->outer.where) { /* HAVING must be a condition; planning binds it again */
        fr_expr *h = sql_expr_clone(q->arena, q->outer.where);
        if (!h) return oom(err);
        if (fr_expr_bind(h, q->group_schema, err) < 0)
            return sql_wrap_at(err, (sql_pos){h->line, h->col});
        if (h->type.id != FR_T_BOOLEAN)
            return sql_fail_at(err, FR_ETYPE, q->st->having_pos, "HAVING needs a BOOLEAN "
                               "condition");
    }
    if (q->aggregating) {
        /* A bare column item is named as the table spells it, as the read named its group. */
        for (int i = 0; i < q->st->nitems; i++) {
            int g = q->named_by_group[i];
            if (g < 0) continue;
            const char *name = fr_schema_field(schema, g)->name;
            q->outer.items[i].alias = fr_arena_strndup(q->arena, name, strlen(name));
            if (!q->outer.items[i].alias) return oom(err);
        }
        FR_TRY(sql_select_rows(&q->outer, q->group_schema, NULL, NULL, err));
    }
    int ng = q->aggregating ? q->st->ngroup_by : fr_schema_num_fields(schema);
    return sql_grouper_new(schema, ng, specs, q->naggs, q->group_schema, &q->grouper, err);
}

static int group_rows(void *ctx, fr_batch *batch, fr_error *err)
{
    q_plan *q = ctx;
    int rc = sql_grouper_add(q->grouper, batch, err);
    fr_batch_free(batch);
    return rc;
}

static int group_end(void *ctx, const char *message, fr_error *err)
{
    (void)message;
    q_plan *q = ctx;
    fr_batch *groups = NULL;
    FR_TRY(sql_grouper_finish(q->grouper, &groups, err));
    if (q->aggregating) return sql_select_rows(&q->outer, q->group_schema, groups,
                                               after_grouping(q), err);
    sql_stmt all = {.kind = SQL_SELECT, .pos = q->st->pos, .has_from = true,
                    .limit = q->st->norder_by ? -1 : q->st->limit};
    sql_select_item star = {.pos = q->st->pos};
    all.items = &star;
    all.nitems = 1;
    return sql_select_rows(&all, q->group_schema, groups, after_grouping(q), err);
}

/* ---- EXPLAIN ---------------------------------------------------------------------------- */

static int explain_list(fr_buf *out, const char *what, fr_expr *const *e, int n, fr_error *err)
{
    FR_TRY(fr_buf_printf(out, err, "%s: ", what));
    for (int i = 0; i < n; i++) {
        if (i) FR_TRY(fr_buf_printf(out, err, ", "));
        FR_TRY(fr_expr_format(e[i], out, err));
    }
    return fr_buf_printf(out, err, "\n");
}

/* The stages after the read, in words. */
static int explain_stages(const q_plan *q, fr_buf *out, fr_error *err)
{
    const sql_stmt *st = q->st;
    if (st->distinct) FR_TRY(fr_buf_printf(out, err, "then distinct rows\n"));
    if (q->aggregating && st->ngroup_by)
        FR_TRY(explain_list(out, "then group by", st->group_by, st->ngroup_by, err));
    if (q->aggregating && q->naggs)
        FR_TRY(explain_list(out, st->ngroup_by ? "aggregates" : "then aggregate over all rows",
                            q->aggs, q->naggs, err));
    if (st->having) {
        FR_TRY(fr_buf_printf(out, err, "then filter (HAVING): "));
        FR_TRY(fr_expr_format(st->having, out, err));
        FR_TRY(fr_buf_printf(out, err, "\n"));
    }
    if (st->norder_by) {
        FR_TRY(fr_buf_printf(out, err, "then sort by: "));
        for (int k = 0; k < st->norder_by; k++) {
            const sql_order_item *o = &st->order_by[k];
            if (k) FR_TRY(fr_buf_printf(out, err, ", "));
            FR_TRY(fr_expr_format(o->expr, out, err));
            FR_TRY(fr_buf_printf(out, err, " %s NULLS %s", o->desc ? "DESC" : "ASC",
                                 o->nulls_first ? "FIRST" : "LAST"));
        }
        FR_TRY(fr_buf_printf(out, err, "%s\n", st->limit >= 0 ? " (only the first rows "
                                                                "are kept)" : ""));
    }
    if (st->limit >= 0) FR_TRY(fr_buf_printf(out, err, "limit: %lld\n", (long long)st->limit));
    return 0;
}

/* Collects the read's plan, a line per row, into the fr_buf ctx. */
static int explain_rows(void *ctx, fr_batch *batch, fr_error *err)
{
    fr_buf *text = ctx;
    const fr_column *c = fr_batch_column(batch, 0);
    int rc = 0;
    for (int64_t r = 0; r < fr_batch_num_rows(batch) && rc == 0; r++) {
        fr_value v;
        fr_column_get(c, r, &v);
        rc = fr_buf_append(text, v.v.s.ptr, v.v.s.len, err);
        if (rc == 0) rc = fr_buf_printf(text, err, "\n");
    }
    fr_batch_free(batch);
    return rc;
}

static int explain_query(q_plan *q, fr_sql_session *s, fr_error *err)
{
    fr_buf text;
    fr_buf_init(&text);
    fr_sql_sink capture = {.ctx = &text, .rows = explain_rows};
    int rc = sql_exec_select(s, &q->read, &capture, err);
    if (rc == 0) rc = explain_stages(q, &text, err);
    if (rc == 0) rc = sql_emit_plan(q->sink, &text, err);
    fr_buf_free(&text);
    return rc;
}

/* ---- running ---------------------------------------------------------------------------- */

static int plan_query(q_plan *q, fr_error *err)
{
    const sql_stmt *st = q->st;
    q->aggregating = st->ngroup_by > 0 || st->having != NULL;
    for (int i = 0; i < st->nitems && !q->aggregating; i++)
        q->aggregating = has_aggregate(st->items[i].expr);
    for (int k = 0; k < st->norder_by && !q->aggregating; k++)
        if (has_aggregate(st->order_by[k].expr))
            return sql_fail_at(err, FR_ESYNTAX, st->order_by[k].pos, "ORDER BY holds an "
                               "aggregate function, but the SELECT does not aggregate");
    if (st->distinct && q->aggregating)
        return sql_fail_at(err, FR_EUNSUPPORTED, st->pos, "SELECT DISTINCT with GROUP BY or "
                           "aggregate functions is not supported: group by the items instead");
    q->read = *st;
    q->read.distinct = false;
    q->read.group_by = NULL;
    q->read.ngroup_by = 0;
    q->read.having = NULL;
    q->read.order_by = NULL;
    q->read.norder_by = 0;
    q->read.limit = -1;
    if (q->aggregating) {
        q->read.items = NULL;
        q->read.nitems = 0;
        return plan_aggregating(q, err);
    }
    return st->distinct ? plan_keys(q, NULL, NULL, err)
                        : plan_keys(q, &q->read.items, &q->read.nitems, err);
}

int sql_exec_query(fr_sql_session *s, const sql_stmt *st, const fr_sql_sink *sink,
                   fr_error *err)
{
    q_plan q = {.st = st, .sink = sink};
    q.arena = fr_arena_new(16 << 10);
    if (!q.arena) return oom(err);
    q.sort_sink = (fr_sql_sink){.ctx = &q, .begin = sort_begin, .rows = sort_rows,
                                .end = sort_end};
    fr_sql_sink group_sink = {.ctx = &q, .begin = group_begin, .rows = group_rows,
                              .end = group_end};
    int rc = plan_query(&q, err);
    if (rc == 0 && st->explain) rc = explain_query(&q, s, err);
    else if (rc == 0)
        rc = sql_exec_select(s, &q.read, q.aggregating || st->distinct ? &group_sink
                                                                       : &q.sort_sink, err);
    sql_grouper_free(q.grouper);
    sql_sorter_free(q.sorter);
    fr_schema_free(q.group_schema);
    fr_schema_free(q.visible);
    fr_arena_free(q.arena);
    return rc;
}
