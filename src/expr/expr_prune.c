/* expr_prune.c — filter pushdown over batch statistics: can a batch with these per-column
 * min / max / null counts hold a row where the predicate is TRUE?
 *
 * Every node is judged on two questions, "may it be TRUE for some row" and "may it be FALSE
 * for some row"; NOT swaps them, AND and OR combine them by Kleene's tables. Each answer
 * errs towards yes, so the result never drops a batch that holds a match. Values are
 * compared after the same conversions evaluation applies (to the bound operand type), so
 * the order used here is the order rows are compared in. */
#include "expr/expr_internal.h"

typedef struct ex_maybe {
    bool t; /* may be TRUE for some row */
    bool f; /* may be FALSE for some row */
} ex_maybe;

static const ex_maybe ex_unknown = {true, true};
static const ex_maybe ex_never = {false, false}; /* NULL on every row */

static ex_maybe ex_swap(ex_maybe m)
{
    return (ex_maybe){m.f, m.t};
}

typedef struct ex_prune_ctx {
    const fr_column_stats *stats;
    int64_t rows;
    fr_arena *arena; /* for constants folded here (CAST of a literal), made on demand */
} ex_prune_ctx;

/* The value of a constant operand: a literal, or a CAST or minus of one (folded here only;
 * binding folds nothing). False when e is not constant or does not fold. */
static bool ex_prune_const(ex_prune_ctx *cx, const fr_expr *e, fr_value *out, int depth)
{
    if (depth > 8) return false;
    if (e->kind == FR_EX_LITERAL) {
        *out = e->value;
        return true;
    }
    fr_value x;
    if ((e->kind != FR_EX_CAST && e->kind != FR_EX_UNARY) ||
        !ex_prune_const(cx, e->args[0], &x, depth + 1))
        return false;
    if (x.is_null) {
        *out = fr_value_null(e->type);
        return true;
    }
    if (e->kind == FR_EX_UNARY) {
        if (e->op != FR_OP_NEG) return false;
        fr_type dt = fr_type_of(FR_T_DOUBLE);
        if (ex_phys_of(e->type.id) == EX_P_F64 && ex_value_coerce(&x, &dt, false, &x, NULL) < 0)
            return false;
        *out = x;
        out->type = e->type;
        switch (ex_phys_of(e->type.id)) {
        case EX_P_I64:
            if (x.v.i == INT64_MIN) return false;
            out->v.i = -x.v.i;
            return true;
        case EX_P_F64: out->v.f = -x.v.f; return true;
        case EX_P_I128: out->v.d = -x.v.d; return true;
        default: return false;
        }
    }
    if (!cx->arena && !(cx->arena = fr_arena_new(1024))) return false;
    return fr_value_cast(&x, &e->type, cx->arena, out, NULL) == 0;
}

/* The rows of column c that hold a value; 0 means every row is null. */
static int64_t ex_nonnull(const ex_prune_ctx *cx, int c)
{
    int64_t nulls = cx->stats[c].null_count;
    if (nulls < 0) return cx->rows; /* unknown: assume values */
    return cx->rows - nulls;
}

/* column op literal, judged on min and max (both converted to the operand type). */
static ex_maybe ex_prune_cmp(ex_prune_ctx *cx, const fr_expr *col, fr_expr_op op,
                             const fr_value *lit, const fr_type *ot)
{
    if (lit->is_null) return ex_never;
    if (ex_nonnull(cx, col->column) <= 0) return ex_never;
    const fr_column_stats *st = &cx->stats[col->column];
    if (!st->has_minmax || st->min.is_null || st->max.is_null) return ex_unknown;
    ex_phys p = ex_phys_of(col->type.id);
    if (ex_phys_of(st->min.type.id) != p || ex_phys_of(st->max.type.id) != p) return ex_unknown;
    fr_value lo, hi, k;
    if (ex_value_coerce(&st->min, ot, false, &lo, NULL) < 0 ||
        ex_value_coerce(&st->max, ot, false, &hi, NULL) < 0 ||
        ex_value_coerce(lit, ot, false, &k, NULL) < 0)
        return ex_unknown;
    int cmin = ex_value_cmp(&lo, &k), cmax = ex_value_cmp(&hi, &k);
    bool all_equal = cmin == 0 && cmax == 0, spans = cmin <= 0 && cmax >= 0;
    switch (op) {
    case FR_OP_EQ: return (ex_maybe){spans, !all_equal};
    case FR_OP_NE: return (ex_maybe){!all_equal, spans};
    case FR_OP_LT: return (ex_maybe){cmin < 0, cmax >= 0};
    case FR_OP_LE: return (ex_maybe){cmin <= 0, cmax > 0};
    case FR_OP_GT: return (ex_maybe){cmax > 0, cmin <= 0};
    case FR_OP_GE: return (ex_maybe){cmax >= 0, cmin < 0};
    default: return ex_unknown;
    }
}

/* A comparison node of a column and a constant in either order, else unknown. */
static ex_maybe ex_prune_pair(ex_prune_ctx *cx, const fr_expr *e, const fr_expr *a,
                              fr_expr_op op, const fr_expr *b)
{
    fr_value k;
    if (a->kind != FR_EX_COLUMN) {
        const fr_expr *t = a;
        a = b;
        b = t;
        op = ex_op_flip(op);
    }
    bool constant = ex_prune_const(cx, b, &k, 0);
    /* A NULL constant anywhere in a comparison makes it NULL on every row. */
    if (constant && k.is_null) return ex_never;
    if (!constant || a->kind != FR_EX_COLUMN) {
        fr_value other;
        if (ex_prune_const(cx, a, &other, 0) && other.is_null) return ex_never;
        return ex_unknown;
    }
    return ex_prune_cmp(cx, a, op, &k, &e->operand_type);
}

/* s starts with prefix. */
static bool ex_has_prefix(const fr_value *s, const uint8_t *p, size_t n)
{
    return s->v.s.len >= n && (n == 0 || memcmp(s->v.s.ptr, p, n) == 0);
}

/* col LIKE 'abc%' (or 'abc'): every match lies in ['abc', the first string past all
 * strings starting with 'abc'). */
static ex_maybe ex_prune_like(ex_prune_ctx *cx, const fr_expr *e)
{
    const fr_expr *col = e->args[0], *pat = e->args[1];
    if (pat->kind == FR_EX_LITERAL && pat->value.is_null) return ex_never;
    if (col->kind != FR_EX_COLUMN || pat->kind != FR_EX_LITERAL) return ex_unknown;
    if (ex_nonnull(cx, col->column) <= 0) return ex_never;
    const fr_column_stats *st = &cx->stats[col->column];
    if (!st->has_minmax || ex_phys_of(st->min.type.id) != EX_P_STR ||
        ex_phys_of(st->max.type.id) != EX_P_STR)
        return ex_unknown;
    const uint8_t *p = pat->value.v.s.ptr;
    size_t m = pat->value.v.s.len, n = 0;
    while (n < m && p[n] != '%' && p[n] != '_') n++;
    if (n == 0) return ex_unknown;
    fr_value prefix = st->min;
    prefix.v.s.ptr = p;
    prefix.v.s.len = n;
    /* Beyond max, or past every string with the prefix: no match. */
    bool t = ex_value_cmp(&st->max, &prefix) >= 0 &&
             (ex_value_cmp(&st->min, &prefix) <= 0 || ex_has_prefix(&st->min, p, n));
    ex_maybe r = {t, true};
    return e->negated ? ex_swap(r) : r;
}

static ex_maybe ex_prune(ex_prune_ctx *cx, const fr_expr *e, int depth);

static ex_maybe ex_prune_list(ex_prune_ctx *cx, const fr_expr *e)
{
    const fr_expr *x = e->args[0];
    if (e->kind == FR_EX_BETWEEN) {
        ex_maybe ge = ex_prune_pair(cx, e, x, FR_OP_GE, e->args[1]);
        ex_maybe le = ex_prune_pair(cx, e, x, FR_OP_LE, e->args[2]);
        ex_maybe r = {ge.t && le.t, ge.f || le.f};
        /* Bounds the wrong way round hold nothing, whatever the statistics. */
        fr_value lo, hi, a, b;
        if (ex_prune_const(cx, e->args[1], &lo, 0) && ex_prune_const(cx, e->args[2], &hi, 0) &&
            !lo.is_null && !hi.is_null &&
            ex_value_coerce(&lo, &e->operand_type, false, &a, NULL) == 0 &&
            ex_value_coerce(&hi, &e->operand_type, false, &b, NULL) == 0 &&
            ex_value_cmp(&a, &b) > 0)
            r.t = false;
        return e->negated ? ex_swap(r) : r;
    }
    /* IN: x = i1 OR x = i2 OR ... */
    ex_maybe r = {false, true};
    for (int i = 1; i < e->nargs; i++) {
        ex_maybe eq = ex_prune_pair(cx, e, x, FR_OP_EQ, e->args[i]);
        r.t = r.t || eq.t;
        r.f = r.f && eq.f;
    }
    return e->negated ? ex_swap(r) : r;
}

static ex_maybe ex_prune(ex_prune_ctx *cx, const fr_expr *e, int depth)
{
    if (depth > FR_EXPR_DEPTH_MAX) return ex_unknown;
    switch (e->kind) {
    case FR_EX_LITERAL:
        if (e->value.is_null) return ex_never;
        if (e->type.id != FR_T_BOOLEAN) return ex_unknown;
        return (ex_maybe){e->value.v.b, !e->value.v.b};
    case FR_EX_COLUMN: {
        if (e->type.id != FR_T_BOOLEAN || e->column < 0) return ex_unknown;
        if (ex_nonnull(cx, e->column) <= 0) return ex_never;
        const fr_column_stats *st = &cx->stats[e->column];
        if (!st->has_minmax || st->min.type.id != FR_T_BOOLEAN ||
            st->max.type.id != FR_T_BOOLEAN)
            return ex_unknown;
        return (ex_maybe){st->max.v.b, !st->min.v.b};
    }
    case FR_EX_UNARY:
        if (e->op != FR_OP_NOT) return ex_unknown;
        return ex_swap(ex_prune(cx, e->args[0], depth + 1));
    case FR_EX_BINARY: {
        if (ex_op_is_compare(e->op)) return ex_prune_pair(cx, e, e->args[0], e->op, e->args[1]);
        if (e->op != FR_OP_AND && e->op != FR_OP_OR) return ex_unknown;
        ex_maybe a = ex_prune(cx, e->args[0], depth + 1), b = ex_prune(cx, e->args[1], depth + 1);
        if (e->op == FR_OP_AND) return (ex_maybe){a.t && b.t, a.f || b.f};
        return (ex_maybe){a.t || b.t, a.f && b.f};
    }
    case FR_EX_IS_NULL: {
        const fr_expr *x = e->args[0];
        ex_maybe r = ex_unknown;
        if (x->kind == FR_EX_COLUMN && x->column >= 0 && cx->stats[x->column].null_count >= 0) {
            int64_t nulls = cx->stats[x->column].null_count;
            r = (ex_maybe){nulls > 0, nulls < cx->rows};
        } else if (x->kind == FR_EX_LITERAL) {
            r = (ex_maybe){x->value.is_null, !x->value.is_null};
        }
        return e->negated ? ex_swap(r) : r;
    }
    case FR_EX_IN:
    case FR_EX_BETWEEN: return ex_prune_list(cx, e);
    case FR_EX_LIKE: return ex_prune_like(cx, e);
    case FR_EX_CASE:
    case FR_EX_FUNC: /* not looked into: their values are not bounded by min and max */
        return ex_unknown;
    default: return ex_unknown;
    }
}

bool fr_expr_may_match(const fr_expr *e, const fr_column_stats *stats, int64_t rows)
{
    if (rows <= 0) return false;
    if (!stats || e->type.id == 0) return true;
    ex_prune_ctx cx = {.stats = stats, .rows = rows};
    bool t = ex_prune(&cx, e, 0).t;
    fr_arena_free(cx.arena);
    return t;
}
