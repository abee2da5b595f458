/* expr_bind.c — binding: resolving column names against a schema and giving every node its
 * type, following the rules in expr.h.
 *
 * Binding works bottom-up and in place. It sets `type` on every node, `column` on column
 * references and `operand_type` on comparisons, IN, BETWEEN and arithmetic. A NULL literal
 * takes the type its parent asks for; a string literal compared with a date or time is
 * parsed into that type here, once, rather than on every row. */
#include <assert.h>

#include "expr/expr_internal.h"

static int ex_bind(fr_expr *e, const fr_schema *s, int depth, fr_error *err);

static bool ex_is_null_lit(const fr_expr *e)
{
    return e->kind == FR_EX_LITERAL && e->value.is_null;
}

static bool ex_is_string_lit(const fr_expr *e)
{
    return e->kind == FR_EX_LITERAL && !e->value.is_null && fr_type_is_string(e->value.type.id);
}

/* Gives a NULL literal the type its context asks for. */
static void ex_adopt(fr_expr *e, const fr_type *t)
{
    if (!ex_is_null_lit(e)) return;
    e->type = *t;
    e->type.nullable = true;
    e->value.type = e->type;
}

static fr_type ex_with_null(fr_type t, bool nullable)
{
    t.nullable = nullable;
    return t;
}

/* "line 1, column 8: cannot compare STRING with INT" */
static int ex_type_error(const fr_expr *e, fr_error *err, const char *what, const fr_type *a,
                         const char *sep, const fr_type *b)
{
    char where[64], ta[64], tb[64];
    return fr_fail(err, FR_ETYPE, "%s%s %s %s %s", ex_where(e, where, sizeof where), what,
                   ex_type_name(a, ta, sizeof ta), sep, ex_type_name(b, tb, sizeof tb));
}

/* ---- comparisons ----------------------------------------------------------------------- */

/* Parses a string literal into the temporal type it is compared with. */
static int ex_cast_literal(fr_expr *lit, const fr_type *to, fr_error *err)
{
    fr_arena *arena = fr_arena_new(256);
    if (!arena) return fr_fail(err, FR_ENOMEM, "out of memory binding a literal");
    fr_value v;
    fr_error cerr = {0};
    fr_type t = ex_with_null(*to, false);
    int rc = fr_value_cast(&lit->value, &t, arena, &v, &cerr);
    fr_arena_free(arena);
    if (rc < 0) {
        char where[64];
        return fr_fail(err, rc, "%s%s", ex_where(lit, where, sizeof where), cerr.msg);
    }
    lit->value = v;
    lit->value.type = t;
    lit->type = t;
    return 0;
}

/* When one side is a string literal and the other a date or time, parses the literal. */
static int ex_temporal_literals(fr_expr *a, fr_expr *b, fr_error *err)
{
    if (ex_is_string_lit(a) && fr_type_is_temporal(b->type.id))
        return ex_cast_literal(a, &b->type, err);
    if (ex_is_string_lit(b) && fr_type_is_temporal(a->type.id))
        return ex_cast_literal(b, &a->type, err);
    return 0;
}

/* The type two comparable types are compared in; false when they are not comparable. */
static bool ex_compare_type(const fr_type *a, const fr_type *b, fr_type *out)
{
    fr_type_id x = a->id, y = b->id;
    if (fr_type_is_numeric(x) && fr_type_is_numeric(y)) {
        if (x == FR_T_FLOAT || x == FR_T_DOUBLE || y == FR_T_FLOAT || y == FR_T_DOUBLE) {
            *out = fr_type_of(FR_T_DOUBLE);
        } else if (x == FR_T_DECIMAL || y == FR_T_DECIMAL) {
            int sa = x == FR_T_DECIMAL ? a->scale : 0, sb = y == FR_T_DECIMAL ? b->scale : 0;
            *out = fr_type_decimal(FR_DECIMAL_PRECISION_MAX, sa > sb ? sa : sb);
        } else {
            *out = fr_type_of(FR_T_BIGINT);
        }
        return true;
    }
    if (fr_type_is_string(x) && fr_type_is_string(y)) {
        *out = fr_type_of(FR_T_STRING);
        return true;
    }
    if ((x == FR_T_BYTES && y == FR_T_BYTES) || (x == FR_T_BOOLEAN && y == FR_T_BOOLEAN)) {
        *out = fr_type_of(x);
        return true;
    }
    if (fr_type_is_temporal(x) && fr_type_is_temporal(y)) {
        int p = a->precision > b->precision ? a->precision : b->precision;
        if (x == y) {
            *out = x == FR_T_DATE ? fr_type_of(FR_T_DATE) : fr_type_time_like(x, p);
            return true;
        }
        if (x == FR_T_DATE && y == FR_T_TIMESTAMP) {
            *out = fr_type_time_like(y, b->precision);
            return true;
        }
        if (y == FR_T_DATE && x == FR_T_TIMESTAMP) {
            *out = fr_type_time_like(x, a->precision);
            return true;
        }
    }
    return false;
}

/* Folds operand `x` into the running comparison type *ot (the first operand starts it). */
static int ex_compare_with(const fr_expr *e, fr_expr *first, fr_expr *x, fr_type *ot,
                           bool *have, fr_error *err)
{
    FR_TRY(ex_temporal_literals(first, x, err));
    if (ex_is_null_lit(x)) return 0;
    if (!*have) {
        *ot = x->type;
        *have = true;
        return 0;
    }
    fr_type t;
    if (!ex_compare_type(ot, &x->type, &t)) {
        /* Name the first operand's own type (INT, not the BIGINT it compares in). */
        const fr_type *shown = ex_is_null_lit(first) ? ot : &first->type;
        return ex_type_error(e, err, "cannot compare", shown, "with", &x->type);
    }
    *ot = t;
    return 0;
}

/* The type args[0] and args[from], args[from + step], ... (before `to`) are compared in;
 * NULL literals among them take it. *nullable tells whether any of them is nullable. */
static int ex_compare_operands(fr_expr *e, int from, int step, int to, fr_type *out,
                               bool *nullable, fr_error *err)
{
    fr_expr *first = e->args[0];
    fr_type ot = fr_type_of(FR_T_BOOLEAN);
    bool have = false;
    /* Parse string literals against the first operand before typing anything. */
    for (int i = from; i < to; i += step) FR_TRY(ex_temporal_literals(first, e->args[i], err));
    FR_TRY(ex_compare_with(e, first, first, &ot, &have, err));
    if (have) {
        /* A lone operand still needs its canonical compare type (e.g. INT -> BIGINT). */
        fr_type t;
        if (!ex_compare_type(&ot, &ot, &t))
            return ex_type_error(e, err, "cannot compare", &ot, "with", &ot);
        ot = t;
    }
    for (int i = from; i < to; i += step)
        FR_TRY(ex_compare_with(e, first, e->args[i], &ot, &have, err));
    ex_adopt(first, &ot);
    *nullable = first->type.nullable;
    for (int i = from; i < to; i += step) {
        ex_adopt(e->args[i], &ot);
        *nullable = *nullable || e->args[i]->type.nullable;
    }
    *out = ex_with_null(ot, true);
    return 0;
}

/* Comparisons, IN and BETWEEN: all operands compared in one type. */
static int ex_bind_compare(fr_expr *e, fr_error *err)
{
    bool nullable;
    FR_TRY(ex_compare_operands(e, 1, 1, e->nargs, &e->operand_type, &nullable, err));
    e->type = ex_with_null(fr_type_of(FR_T_BOOLEAN), nullable);
    return 0;
}

/* ---- arithmetic ------------------------------------------------------------------------ */

static fr_type ex_decimal_operand(const fr_type *t)
{
    if (t->id == FR_T_DECIMAL) return *t;
    int p = t->id == FR_T_TINYINT ? 3 : t->id == FR_T_SMALLINT ? 5 : t->id == FR_T_INT ? 10 : 19;
    return fr_type_decimal(p, 0);
}

/* SQL's precision and scale of a decimal result, capped at 38 digits: when the cap applies
 * the integer digits are kept and the scale gives way, down to 6 (or less when the exact
 * scale was less). */
static fr_type ex_decimal_result(fr_expr_op op, const fr_type *a, const fr_type *b)
{
    int p1 = a->precision, s1 = a->scale, p2 = b->precision, s2 = b->scale, p, s;
    int i1 = p1 - s1, i2 = p2 - s2;
    switch (op) {
    case FR_OP_ADD:
    case FR_OP_SUB:
        s = s1 > s2 ? s1 : s2;
        p = (i1 > i2 ? i1 : i2) + s + 1;
        break;
    case FR_OP_MUL:
        p = p1 + p2 + 1;
        s = s1 + s2;
        break;
    case FR_OP_DIV:
        s = s1 + p2 + 1 > 6 ? s1 + p2 + 1 : 6;
        p = i1 + s2 + s;
        break;
    default: /* MOD */
        s = s1 > s2 ? s1 : s2;
        p = (i1 < i2 ? i1 : i2) + s;
        break;
    }
    if (p > FR_DECIMAL_PRECISION_MAX) {
        int intd = p - s, min_scale = s < 6 ? s : 6;
        s = FR_DECIMAL_PRECISION_MAX - intd > min_scale ? FR_DECIMAL_PRECISION_MAX - intd
                                                         : min_scale;
        p = FR_DECIMAL_PRECISION_MAX;
    }
    if (p < 1) p = 1;
    if (s > p) s = p;
    return fr_type_decimal(p, s);
}

static int ex_bind_arith(fr_expr *e, fr_error *err)
{
    fr_expr *l = e->args[0], *r = e->args[1];
    /* A NULL operand takes the other's type, except days next to a DATE (NULL + date,
     * date +/- NULL); two NULLs compute in BIGINT. */
    fr_type bigint = fr_type_of(FR_T_BIGINT), days = fr_type_of(FR_T_INT);
    bool days_left = r->type.id == FR_T_DATE && e->op == FR_OP_ADD;
    ex_adopt(l, ex_is_null_lit(r) ? &bigint : days_left ? &days : &r->type);
    ex_adopt(r, l->type.id == FR_T_DATE ? &days : &l->type);
    fr_type a = l->type, b = r->type, rt;
    fr_type_id x = a.id, y = b.id;
    bool nullable = a.nullable || b.nullable;
    bool add_sub = e->op == FR_OP_ADD || e->op == FR_OP_SUB;
    if (fr_type_is_numeric(x) && fr_type_is_numeric(y)) {
        if (x == FR_T_FLOAT || x == FR_T_DOUBLE || y == FR_T_FLOAT || y == FR_T_DOUBLE) {
            rt = fr_type_of(FR_T_DOUBLE);
        } else if (x == FR_T_DECIMAL || y == FR_T_DECIMAL) {
            fr_type da = ex_decimal_operand(&a), db = ex_decimal_operand(&b);
            rt = ex_decimal_result(e->op, &da, &db);
        } else {
            rt = bigint;
        }
        e->operand_type = rt;
    } else if (add_sub && x == FR_T_DATE && fr_type_is_integer(y)) {
        rt = fr_type_of(FR_T_DATE);
        e->operand_type = rt;
    } else if (e->op == FR_OP_ADD && fr_type_is_integer(x) && y == FR_T_DATE) {
        rt = fr_type_of(FR_T_DATE);
        e->operand_type = rt;
    } else if (e->op == FR_OP_SUB && x == FR_T_DATE && y == FR_T_DATE) {
        rt = fr_type_of(FR_T_INT);
        e->operand_type = fr_type_of(FR_T_DATE);
    } else {
        char where[64], ta[64], tb[64];
        return fr_fail(err, FR_ETYPE, "%scannot apply %s to %s and %s",
                       ex_where(e, where, sizeof where), ex_op_text(e->op),
                       ex_type_name(&a, ta, sizeof ta), ex_type_name(&b, tb, sizeof tb));
    }
    e->type = ex_with_null(rt, nullable);
    e->operand_type.nullable = true;
    return 0;
}

/* ---- the rest -------------------------------------------------------------------------- */

static int ex_need(const fr_expr *e, fr_expr *arg, bool ok, const char *what, fr_error *err)
{
    if (ok) return 0;
    char where[64], tn[64];
    return fr_fail(err, FR_ETYPE, "%s%s needs %s, not %s", ex_where(e, where, sizeof where),
                   ex_node_name(e), what, ex_type_name(&arg->type, tn, sizeof tn));
}

static int ex_bind_unary(fr_expr *e, fr_error *err)
{
    fr_expr *x = e->args[0];
    if (e->op == FR_OP_NOT) {
        fr_type bt = fr_type_of(FR_T_BOOLEAN);
        ex_adopt(x, &bt);
        FR_TRY(ex_need(e, x, x->type.id == FR_T_BOOLEAN, "a BOOLEAN operand", err));
        e->type = ex_with_null(bt, x->type.nullable);
        return 0;
    }
    FR_CHECK(e->op == FR_OP_NEG, FR_EINVAL, err, "malformed expression: unary operator %s",
             ex_op_text(e->op));
    fr_type bigint = fr_type_of(FR_T_BIGINT);
    ex_adopt(x, &bigint);
    FR_TRY(ex_need(e, x, fr_type_is_numeric(x->type.id), "a number", err));
    fr_type rt = x->type;
    if (fr_type_is_integer(rt.id)) rt = bigint;
    else if (rt.id == FR_T_FLOAT) rt = fr_type_of(FR_T_DOUBLE);
    e->type = ex_with_null(rt, x->type.nullable);
    e->operand_type = e->type;
    return 0;
}

static int ex_bind_binary(fr_expr *e, fr_error *err)
{
    fr_expr *l = e->args[0], *r = e->args[1];
    if (e->op == FR_OP_AND || e->op == FR_OP_OR) {
        fr_type bt = fr_type_of(FR_T_BOOLEAN);
        ex_adopt(l, &bt);
        ex_adopt(r, &bt);
        FR_TRY(ex_need(e, l, l->type.id == FR_T_BOOLEAN, "BOOLEAN operands", err));
        FR_TRY(ex_need(e, r, r->type.id == FR_T_BOOLEAN, "BOOLEAN operands", err));
        e->type = ex_with_null(bt, l->type.nullable || r->type.nullable);
        return 0;
    }
    if (ex_op_is_compare(e->op)) return ex_bind_compare(e, err);
    if (ex_op_is_arith(e->op)) return ex_bind_arith(e, err);
    FR_CHECK(e->op == FR_OP_CONCAT, FR_EINVAL, err, "malformed expression: binary operator %d",
             (int)e->op);
    fr_type st = fr_type_of(FR_T_STRING);
    ex_adopt(l, ex_is_null_lit(r) ? &st : &r->type);
    ex_adopt(r, &l->type);
    bool strings = fr_type_is_string(l->type.id) && fr_type_is_string(r->type.id);
    bool bytes = l->type.id == FR_T_BYTES && r->type.id == FR_T_BYTES;
    if (!strings && !bytes) {
        char where[64], ta[64], tb[64];
        return fr_fail(err, FR_ETYPE, "%scannot apply || to %s and %s",
                       ex_where(e, where, sizeof where), ex_type_name(&l->type, ta, sizeof ta),
                       ex_type_name(&r->type, tb, sizeof tb));
    }
    e->type = ex_with_null(fr_type_of(strings ? FR_T_STRING : FR_T_BYTES),
                           l->type.nullable || r->type.nullable);
    return 0;
}

/* Which CASTs are allowed; fr_value_cast still decides about each value. */
static bool ex_castable(const fr_type *from, const fr_type *to)
{
    fr_type_id f = from->id, t = to->id;
    if (f == t) return true;
    if (fr_type_is_string(f) || fr_type_is_string(t)) return true;
    if (fr_type_is_numeric(f) && fr_type_is_numeric(t)) return true;
    if (f == FR_T_BOOLEAN || t == FR_T_BOOLEAN) {
        fr_type_id other = f == FR_T_BOOLEAN ? t : f;
        return fr_type_is_integer(other) || other == FR_T_DECIMAL;
    }
    if (fr_type_is_temporal(f) && fr_type_is_temporal(t)) {
        /* A timestamp has a date and a time of day; a date has no time, a time no date. */
        bool from_ts = f == FR_T_TIMESTAMP || f == FR_T_TIMESTAMP_LTZ;
        bool to_ts = t == FR_T_TIMESTAMP || t == FR_T_TIMESTAMP_LTZ;
        return from_ts || to_ts ? (from_ts || f == FR_T_DATE) : false;
    }
    return false;
}

static int ex_bind_cast(fr_expr *e, fr_error *err)
{
    fr_expr *x = e->args[0];
    char where[64];
    fr_error terr = {0};
    if (fr_type_validate(&e->cast_type, &terr) < 0)
        return fr_fail(err, terr.code, "%s%s", ex_where(e, where, sizeof where), terr.msg);
    ex_adopt(x, &e->cast_type);
    if (!ex_castable(&x->type, &e->cast_type))
        return ex_type_error(e, err, "cannot cast", &x->type, "to", &e->cast_type);
    e->type = ex_with_null(e->cast_type, x->type.nullable);
    return 0;
}

/* ---- CASE and functions ---------------------------------------------------------------- */

/* The type values of types a and b both convert to when an expression gives either (CASE's
 * results, COALESCE's arguments); false when there is none. Unlike a comparison type it
 * must hold every value of both exactly, so integers widen only to the wider integer and
 * decimals keep the integer digits and the scale of both (capped at 38 digits: a value too
 * large for the cap fails when it is chosen). */
static bool ex_common_type(const fr_type *a, const fr_type *b, fr_type *out)
{
    fr_type_id x = a->id, y = b->id;
    if (fr_type_equal(a, b)) {
        *out = *a;
        return true;
    }
    if (!fr_type_is_numeric(x) || !fr_type_is_numeric(y)) return ex_compare_type(a, b, out);
    if (x == FR_T_FLOAT || x == FR_T_DOUBLE || y == FR_T_FLOAT || y == FR_T_DOUBLE) {
        *out = fr_type_of(FR_T_DOUBLE);
    } else if (x == FR_T_DECIMAL || y == FR_T_DECIMAL) {
        fr_type da = ex_decimal_operand(a), db = ex_decimal_operand(b);
        int s = da.scale > db.scale ? da.scale : db.scale;
        int ia = da.precision - da.scale, ib = db.precision - db.scale;
        int p = (ia > ib ? ia : ib) + s;
        *out = fr_type_decimal(p < FR_DECIMAL_PRECISION_MAX ? p : FR_DECIMAL_PRECISION_MAX, s);
    } else {
        *out = fr_type_of(fr_type_width(a) >= fr_type_width(b) ? x : y);
    }
    return true;
}

/* Whether args[i] gives the result: CASE's THEN and ELSE values, every COALESCE argument. */
static bool ex_is_result(const fr_expr *e, int i)
{
    if (e->kind != FR_EX_CASE) return true;
    int first = e->case_operand ? 1 : 0;
    if (e->case_else && i == e->nargs - 1) return true;
    return i > first && (i - first) % 2 == 1;
}

/* Types e with the common type of its results; NULL literals among them take it (all NULL:
 * the first one's). *nullable tells whether any result is nullable, *all_nullable whether
 * every one is. */
static int ex_bind_results(fr_expr *e, bool *nullable, bool *all_nullable, fr_error *err)
{
    fr_type t = fr_type_of(FR_T_BOOLEAN);
    bool have = false;
    for (int i = 0; i < e->nargs; i++) {
        fr_expr *x = e->args[i];
        if (!ex_is_result(e, i) || ex_is_null_lit(x)) continue;
        if (!have) {
            t = x->type;
            have = true;
        } else if (!ex_common_type(&t, &x->type, &t)) {
            char where[64], ta[64], tb[64];
            return fr_fail(err, FR_ETYPE, "%s%s %s have incompatible types %s and %s (CAST one "
                           "of them)", ex_where(x, where, sizeof where), ex_node_name(e),
                           e->kind == FR_EX_CASE ? "results" : "arguments",
                           ex_type_name(&t, ta, sizeof ta),
                           ex_type_name(&x->type, tb, sizeof tb));
        }
    }
    *nullable = false;
    *all_nullable = true;
    for (int i = 0; i < e->nargs; i++) {
        fr_expr *x = e->args[i];
        if (!ex_is_result(e, i)) continue;
        if (!have) {
            t = x->type;
            have = true;
        }
        ex_adopt(x, &t);
        *nullable = *nullable || x->type.nullable;
        *all_nullable = *all_nullable && x->type.nullable;
    }
    e->type = ex_with_null(t, *nullable);
    return 0;
}

static int ex_bind_case(fr_expr *e, fr_error *err)
{
    int first = e->case_operand ? 1 : 0, end = e->nargs - (e->case_else ? 1 : 0);
    if (e->case_operand) {
        /* CASE v WHEN a ...: v and every a compared in one type, as IN compares. */
        bool ignored;
        FR_TRY(ex_compare_operands(e, 1, 2, end, &e->operand_type, &ignored, err));
    } else {
        fr_type bt = fr_type_of(FR_T_BOOLEAN);
        for (int i = first; i < end; i += 2) {
            fr_expr *w = e->args[i];
            ex_adopt(w, &bt);
            if (w->type.id != FR_T_BOOLEAN) {
                char where[64], tn[64];
                return fr_fail(err, FR_ETYPE, "%sWHEN needs a BOOLEAN condition, not %s",
                               ex_where(w, where, sizeof where),
                               ex_type_name(&w->type, tn, sizeof tn));
            }
        }
    }
    bool nullable, all_nullable;
    FR_TRY(ex_bind_results(e, &nullable, &all_nullable, err));
    e->type.nullable = nullable || !e->case_else;
    return 0;
}

static int ex_bind_func(fr_expr *e, fr_error *err)
{
    fr_expr *x = e->args[0];
    fr_type st = fr_type_of(FR_T_STRING), bigint = fr_type_of(FR_T_BIGINT);
    bool nullable, all_nullable;
    switch (e->func) {
    case FR_FN_COALESCE:
        FR_TRY(ex_bind_results(e, &nullable, &all_nullable, err));
        e->type.nullable = all_nullable;
        return 0;
    case FR_FN_NULLIF:
        FR_TRY(ex_compare_operands(e, 1, 1, 2, &e->operand_type, &nullable, err));
        e->type = ex_with_null(x->type, true);
        return 0;
    case FR_FN_ABS: /* typed as unary minus */
        ex_adopt(x, &bigint);
        FR_TRY(ex_need(e, x, fr_type_is_numeric(x->type.id), "a number", err));
        e->type = x->type;
        if (fr_type_is_integer(x->type.id)) e->type = bigint;
        else if (x->type.id == FR_T_FLOAT) e->type = fr_type_of(FR_T_DOUBLE);
        e->type.nullable = x->type.nullable;
        e->operand_type = e->type;
        return 0;
    case FR_FN_LOWER:
    case FR_FN_UPPER:
    case FR_FN_CHAR_LENGTH:
        ex_adopt(x, &st);
        FR_TRY(ex_need(e, x, fr_type_is_string(x->type.id), "a string", err));
        e->type = e->func == FR_FN_CHAR_LENGTH ? fr_type_of(FR_T_INT) : x->type;
        e->type.nullable = x->type.nullable;
        return 0;
    case FR_FN_NONE: break;
    }
    return fr_fail(err, FR_EINVAL, "malformed expression: scalar function %d", (int)e->func);
}

static int ex_check_shape(const fr_expr *e, fr_error *err)
{
    int need_min = 0, need_max = 0;
    switch (e->kind) {
    case FR_EX_LITERAL:
    case FR_EX_COLUMN: break;
    case FR_EX_UNARY:
    case FR_EX_IS_NULL:
    case FR_EX_CAST: need_min = need_max = 1; break;
    case FR_EX_BINARY:
    case FR_EX_LIKE: need_min = need_max = 2; break;
    case FR_EX_BETWEEN: need_min = need_max = 3; break;
    case FR_EX_IN: need_min = 2; need_max = INT32_MAX; break;
    case FR_EX_CASE: {
        int pairs = e->nargs - (e->case_operand ? 1 : 0) - (e->case_else ? 1 : 0);
        FR_CHECK(pairs >= 2 && pairs % 2 == 0, FR_EINVAL, err,
                 "malformed expression: CASE with %d operands", e->nargs);
        need_max = INT32_MAX;
        break;
    }
    case FR_EX_FUNC: {
        char where[64], msg[128];
        if (!fr_expr_func_arity(e->func, e->nargs, msg, sizeof msg))
            return fr_fail(err, FR_EINVAL, "%s%s", ex_where(e, where, sizeof where), msg);
        need_max = INT32_MAX;
        break;
    }
    case FR_EX_AGGREGATE: {
        char where[64];
        return fr_fail(err, FR_ESYNTAX, "%saggregate function %s is not allowed here (only in "
                       "a SELECT list, HAVING and ORDER BY, and not inside another aggregate)",
                       ex_where(e, where, sizeof where), fr_expr_agg_name(e->agg));
    }
    default:
        return fr_fail(err, FR_EINVAL, "malformed expression: node kind %d", (int)e->kind);
    }
    FR_CHECK(e->nargs >= need_min && e->nargs <= need_max, FR_EINVAL, err,
             "malformed expression: node kind %d with %d operands", (int)e->kind, e->nargs);
    for (int i = 0; i < e->nargs; i++)
        FR_CHECK(e->args[i], FR_EINVAL, err, "malformed expression: operand %d missing", i);
    if (e->kind == FR_EX_COLUMN)
        FR_CHECK(e->name, FR_EINVAL, err, "malformed expression: column without a name");
    return 0;
}

static int ex_bind(fr_expr *e, const fr_schema *s, int depth, fr_error *err)
{
    if (depth > FR_EXPR_DEPTH_MAX) {
        char where[64];
        return fr_fail(err, FR_ELIMIT, "%sexpression nested deeper than %d levels",
                       ex_where(e, where, sizeof where), FR_EXPR_DEPTH_MAX);
    }
    FR_TRY(ex_check_shape(e, err));
    for (int i = 0; i < e->nargs; i++) FR_TRY(ex_bind(e->args[i], s, depth + 1, err));
    char where[64];
    switch (e->kind) {
    case FR_EX_LITERAL:
        e->type = e->value.type;
        if (e->value.is_null && (e->type.id < FR_T_BOOLEAN || e->type.id > FR_T_TIMESTAMP_LTZ))
            e->type = fr_type_of(FR_T_STRING);
        e->type.nullable = e->value.is_null;
        e->value.type = e->type;
        return 0;
    case FR_EX_COLUMN: {
        int idx = fr_schema_find(s, e->name);
        if (idx < 0)
            return fr_fail(err, FR_ENOTFOUND, "%sunknown column '%s'",
                           ex_where(e, where, sizeof where), e->name);
        e->column = idx;
        e->type = fr_schema_field(s, idx)->type;
        return 0;
    }
    case FR_EX_UNARY: return ex_bind_unary(e, err);
    case FR_EX_BINARY: return ex_bind_binary(e, err);
    case FR_EX_IS_NULL:
        e->type = ex_with_null(fr_type_of(FR_T_BOOLEAN), false);
        return 0;
    case FR_EX_IN:
    case FR_EX_BETWEEN: return ex_bind_compare(e, err);
    case FR_EX_LIKE: {
        fr_type st = fr_type_of(FR_T_STRING);
        fr_expr *x = e->args[0], *p = e->args[1];
        ex_adopt(x, &st);
        ex_adopt(p, &st);
        FR_TRY(ex_need(e, x, fr_type_is_string(x->type.id), "strings", err));
        FR_TRY(ex_need(e, p, fr_type_is_string(p->type.id), "a string pattern", err));
        e->type = ex_with_null(fr_type_of(FR_T_BOOLEAN), x->type.nullable || p->type.nullable);
        return 0;
    }
    case FR_EX_CAST: return ex_bind_cast(e, err);
    case FR_EX_CASE: return ex_bind_case(e, err);
    case FR_EX_FUNC: return ex_bind_func(e, err);
    case FR_EX_AGGREGATE: break; /* refused by ex_check_shape */
    }
    return fr_fail(err, FR_EINVAL, "malformed expression: node kind %d", (int)e->kind);
}

int fr_expr_bind(fr_expr *e, const fr_schema *schema, fr_error *err)
{
    return ex_bind(e, schema, 0, err);
}
