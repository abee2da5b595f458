/* expr_build.c — building expression trees in an arena, listing the columns a bound tree
 * reads, and writing trees back as SQL text.
 *
 * Nodes and everything they point to (argument arrays, names, literal string bytes) live in
 * the creator's arena, so one fr_arena_free releases a tree. */
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <strings.h>

#include "expr/expr_internal.h"

static fr_expr *ex_node_new(fr_arena *a, fr_expr_kind kind)
{
    fr_expr *e = fr_arena_alloc(a, sizeof *e);
    if (!e) return NULL;
    memset(e, 0, sizeof *e);
    e->kind = kind;
    e->column = -1;
    return e;
}

fr_expr *fr_expr_literal(fr_arena *a, const fr_value *v)
{
    fr_expr *e = ex_node_new(a, FR_EX_LITERAL);
    if (!e) return NULL;
    e->value = *v;
    if (!v->is_null && ex_phys_of(v->type.id) == EX_P_STR && v->type.id != 0) {
        /* Copied by length: bytes values may hold NUL bytes. */
        uint8_t *copy = fr_arena_alloc(a, v->v.s.len + 1);
        if (!copy) return NULL;
        if (v->v.s.len) memcpy(copy, v->v.s.ptr, v->v.s.len);
        copy[v->v.s.len] = 0;
        e->value.v.s.ptr = copy;
    }
    return e;
}

fr_expr *fr_expr_column(fr_arena *a, const char *name)
{
    fr_expr *e = ex_node_new(a, FR_EX_COLUMN);
    if (!e) return NULL;
    e->name = fr_arena_strndup(a, name, strlen(name));
    return e->name ? e : NULL;
}

fr_expr *fr_expr_node(fr_arena *a, fr_expr_kind kind, fr_expr_op op, int nargs, fr_expr **args)
{
    assert(nargs >= 0);
    fr_expr *e = ex_node_new(a, kind);
    if (!e) return NULL;
    e->op = op;
    e->nargs = nargs;
    if (nargs > 0) {
        e->args = fr_arena_alloc(a, (size_t)nargs * sizeof *e->args);
        if (!e->args) return NULL;
        memcpy(e->args, args, (size_t)nargs * sizeof *e->args);
    }
    return e;
}

fr_expr *fr_expr_binary(fr_arena *a, fr_expr_op op, fr_expr *left, fr_expr *right)
{
    if (!left || !right) return NULL;
    fr_expr *args[2] = {left, right};
    return fr_expr_node(a, FR_EX_BINARY, op, 2, args);
}

fr_expr *fr_expr_cast(fr_arena *a, fr_expr *arg, fr_type to)
{
    if (!arg) return NULL;
    fr_expr *e = fr_expr_node(a, FR_EX_CAST, FR_OP_NONE, 1, &arg);
    if (e) e->cast_type = to;
    return e;
}

fr_expr *fr_expr_call(fr_arena *a, fr_expr_func func, int nargs, fr_expr **args)
{
    for (int i = 0; i < nargs; i++)
        if (!args[i]) return NULL;
    fr_expr *e = fr_expr_node(a, FR_EX_FUNC, FR_OP_NONE, nargs, args);
    if (e) e->func = func;
    return e;
}

/* ---- scalar functions ------------------------------------------------------------------ */

static const struct {
    fr_expr_func func;
    const char *name;
    int min, max; /* arguments */
} ex_funcs[] = {
    {FR_FN_COALESCE, "COALESCE", 1, INT32_MAX}, {FR_FN_NULLIF, "NULLIF", 2, 2},
    {FR_FN_ABS, "ABS", 1, 1},                   {FR_FN_LOWER, "LOWER", 1, 1},
    {FR_FN_UPPER, "UPPER", 1, 1},               {FR_FN_CHAR_LENGTH, "CHAR_LENGTH", 1, 1},
};
#define EX_NFUNCS (sizeof ex_funcs / sizeof ex_funcs[0])

const char *fr_expr_func_name(fr_expr_func func)
{
    for (size_t i = 0; i < EX_NFUNCS; i++)
        if (ex_funcs[i].func == func) return ex_funcs[i].name;
    return "?";
}

fr_expr_func fr_expr_func_lookup(const char *p, size_t n)
{
    if (n == strlen("CHARACTER_LENGTH") && strncasecmp(p, "CHARACTER_LENGTH", n) == 0)
        return FR_FN_CHAR_LENGTH;
    for (size_t i = 0; i < EX_NFUNCS; i++) {
        const char *w = ex_funcs[i].name;
        if (strlen(w) == n && strncasecmp(w, p, n) == 0) return ex_funcs[i].func;
    }
    return FR_FN_NONE;
}

bool fr_expr_func_arity(fr_expr_func func, int nargs, char *msg, size_t cap)
{
    for (size_t i = 0; i < EX_NFUNCS; i++) {
        if (ex_funcs[i].func != func) continue;
        int min = ex_funcs[i].min, max = ex_funcs[i].max;
        if (nargs >= min && nargs <= max) return true;
        if (max == INT32_MAX)
            snprintf(msg, cap, "%s needs at least one argument", ex_funcs[i].name);
        else
            snprintf(msg, cap, "%s needs %d argument%s, not %d", ex_funcs[i].name, min,
                     min == 1 ? "" : "s", nargs);
        return false;
    }
    snprintf(msg, cap, "unknown scalar function %d", (int)func);
    return false;
}

/* ---- columns --------------------------------------------------------------------------- */

static void ex_columns(const fr_expr *e, uint8_t *used, int depth)
{
    if (depth > FR_EXPR_DEPTH_MAX) return;
    if (e->kind == FR_EX_COLUMN && e->column >= 0)
        used[e->column >> 3] |= (uint8_t)(1u << (e->column & 7));
    for (int i = 0; i < e->nargs; i++) ex_columns(e->args[i], used, depth + 1);
}

void fr_expr_columns(const fr_expr *e, uint8_t *used)
{
    ex_columns(e, used, 0);
}

/* ---- SQL text -------------------------------------------------------------------------- */

static int ex_format_quoted(fr_buf *out, char quote, const uint8_t *p, size_t n, fr_error *err)
{
    FR_TRY(fr_buf_append(out, &quote, 1, err));
    size_t start = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] != (uint8_t)quote) continue;
        FR_TRY(fr_buf_append(out, p + start, i + 1 - start, err)); /* includes the quote */
        FR_TRY(fr_buf_append(out, &quote, 1, err));
        start = i + 1;
    }
    if (n > start) FR_TRY(fr_buf_append(out, p + start, n - start, err));
    return fr_buf_append(out, &quote, 1, err);
}

/* The words the SQL dialect reserves: a bare word that is one of them is read as the
 * keyword, never as a name. The SQL parser asks this list too, so the names the printer
 * writes bare are exactly those the parser reads back as names. Other keywords stay usable
 * as names: a column may be called `key`, `type` or `date` without quotes. */
static const char *const ex_reserved_words[] = {
    "ALL", "AND", "AS", "BETWEEN", "BY", "CASE", "CAST", "CREATE", "DELETE", "DESCRIBE",
    "DISTINCT", "DROP", "ELSE", "END", "EXISTS", "FALSE", "FROM", "GROUP", "HAVING", "IN",
    "INSERT", "INTO", "IS", "JOIN", "LIKE", "LIMIT", "NOT", "NULL", "ON", "OR", "ORDER",
    "SELECT", "SET", "SHOW", "TABLE", "THEN", "TRUE", "UNION", "UPDATE", "USE", "VALUES",
    "WHEN", "WHERE", "WITH",
};

bool fr_expr_word_reserved(const char *p, size_t n)
{
    for (size_t i = 0; i < sizeof ex_reserved_words / sizeof ex_reserved_words[0]; i++) {
        const char *w = ex_reserved_words[i];
        if (strlen(w) == n && strncasecmp(w, p, n) == 0) return true;
    }
    return false;
}

/* A name that reads back as itself when written bare: [A-Za-z_][A-Za-z0-9_]* and not a
 * reserved word. */
static bool ex_plain_identifier(const char *s)
{
    if (!s[0] || (s[0] >= '0' && s[0] <= '9')) return false;
    for (const char *p = s; *p; p++) {
        char c = *p;
        if (!(c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9')))
            return false;
    }
    return !fr_expr_word_reserved(s, strlen(s));
}

static int ex_format_double(fr_buf *out, double d, fr_error *err)
{
    if (d != d) return fr_buf_printf(out, err, "CAST('NaN' AS DOUBLE)");
    if (isinf(d))
        return fr_buf_printf(out, err, "CAST('%sInfinity' AS DOUBLE)", d < 0 ? "-" : "");
    char text[40];
    snprintf(text, sizeof text, "%.17g", d);
    /* A double must not read back as an integer or decimal literal. */
    bool has_exp = strpbrk(text, "eE") != NULL;
    return fr_buf_printf(out, err, "%s%s", text, has_exp ? "" : "E0");
}

static int ex_format_literal(const fr_value *v, fr_buf *out, fr_error *err)
{
    if (v->is_null) return fr_buf_printf(out, err, "NULL");
    switch (v->type.id) {
    case FR_T_BOOLEAN: return fr_buf_printf(out, err, "%s", v->v.b ? "TRUE" : "FALSE");
    case FR_T_TINYINT:
    case FR_T_SMALLINT:
    case FR_T_INT:
    case FR_T_BIGINT: return fr_buf_printf(out, err, "%lld", (long long)v->v.i);
    case FR_T_FLOAT:
    case FR_T_DOUBLE: return ex_format_double(out, v->v.f, err);
    case FR_T_DECIMAL: {
        char text[48];
        fr_decimal_format(v->v.d, v->type.scale, text, sizeof text);
        return fr_buf_printf(out, err, "%s", text);
    }
    case FR_T_CHAR:
    case FR_T_VARCHAR:
    case FR_T_STRING: return ex_format_quoted(out, '\'', v->v.s.ptr, v->v.s.len, err);
    case FR_T_BYTES:
        FR_TRY(fr_buf_printf(out, err, "X'"));
        for (size_t i = 0; i < v->v.s.len; i++)
            FR_TRY(fr_buf_printf(out, err, "%02x", v->v.s.ptr[i]));
        return fr_buf_printf(out, err, "'");
    default: break;
    }
    /* Dates and times: the keyword and the text form, or a CAST for TIMESTAMP_LTZ. */
    fr_buf text;
    fr_buf_init(&text);
    int rc = fr_value_format(v, &text, err);
    if (rc == 0) {
        const char *kw = v->type.id == FR_T_DATE ? "DATE" : v->type.id == FR_T_TIME ? "TIME"
                                                                                    : "TIMESTAMP";
        if (v->type.id == FR_T_TIMESTAMP_LTZ) {
            char tn[64];
            rc = fr_buf_printf(out, err, "CAST(");
            if (rc == 0) rc = ex_format_quoted(out, '\'', text.data, text.len, err);
            if (rc == 0)
                rc = fr_buf_printf(out, err, " AS %s)", ex_type_name(&v->type, tn, sizeof tn));
        } else {
            rc = fr_buf_printf(out, err, "%s ", kw);
            if (rc == 0) rc = ex_format_quoted(out, '\'', text.data, text.len, err);
        }
    }
    fr_buf_free(&text);
    return rc;
}

static int ex_format(const fr_expr *e, fr_buf *out, int depth, fr_error *err);

static int ex_format_list(const fr_expr *e, int from, fr_buf *out, int depth, fr_error *err)
{
    for (int i = from; i < e->nargs; i++) {
        if (i > from) FR_TRY(fr_buf_printf(out, err, ", "));
        FR_TRY(ex_format(e->args[i], out, depth + 1, err));
    }
    return 0;
}

/* CASE [operand] WHEN w THEN t ... [ELSE x] END: self-delimiting, so not parenthesized. */
static int ex_format_case(const fr_expr *e, fr_buf *out, int depth, fr_error *err)
{
    int first = e->case_operand ? 1 : 0, end = e->nargs - (e->case_else ? 1 : 0);
    FR_TRY(fr_buf_printf(out, err, "CASE"));
    if (e->case_operand) {
        FR_TRY(fr_buf_printf(out, err, " "));
        FR_TRY(ex_format(e->args[0], out, depth + 1, err));
    }
    for (int i = first; i + 1 < end; i += 2) {
        FR_TRY(fr_buf_printf(out, err, " WHEN "));
        FR_TRY(ex_format(e->args[i], out, depth + 1, err));
        FR_TRY(fr_buf_printf(out, err, " THEN "));
        FR_TRY(ex_format(e->args[i + 1], out, depth + 1, err));
    }
    if (e->case_else) {
        FR_TRY(fr_buf_printf(out, err, " ELSE "));
        FR_TRY(ex_format(e->args[e->nargs - 1], out, depth + 1, err));
    }
    return fr_buf_printf(out, err, " END");
}

static int ex_format(const fr_expr *e, fr_buf *out, int depth, fr_error *err)
{
    FR_CHECK(depth <= FR_EXPR_DEPTH_MAX, FR_ELIMIT, err,
             "expression nested deeper than %d levels", FR_EXPR_DEPTH_MAX);
    const char *neg = e->negated ? "NOT " : "";
    switch (e->kind) {
    case FR_EX_LITERAL: return ex_format_literal(&e->value, out, err);
    case FR_EX_COLUMN:
        if (ex_plain_identifier(e->name)) return fr_buf_printf(out, err, "%s", e->name);
        return ex_format_quoted(out, '`', (const uint8_t *)e->name, strlen(e->name), err);
    case FR_EX_UNARY:
        FR_TRY(fr_buf_printf(out, err, "(%s ", e->op == FR_OP_NOT ? "NOT" : "-"));
        FR_TRY(ex_format(e->args[0], out, depth + 1, err));
        return fr_buf_printf(out, err, ")");
    case FR_EX_BINARY:
        FR_TRY(fr_buf_printf(out, err, "("));
        FR_TRY(ex_format(e->args[0], out, depth + 1, err));
        FR_TRY(fr_buf_printf(out, err, " %s ", ex_op_text(e->op)));
        FR_TRY(ex_format(e->args[1], out, depth + 1, err));
        return fr_buf_printf(out, err, ")");
    case FR_EX_IS_NULL:
        FR_TRY(fr_buf_printf(out, err, "("));
        FR_TRY(ex_format(e->args[0], out, depth + 1, err));
        return fr_buf_printf(out, err, " IS %sNULL)", neg);
    case FR_EX_IN:
        FR_TRY(fr_buf_printf(out, err, "("));
        FR_TRY(ex_format(e->args[0], out, depth + 1, err));
        FR_TRY(fr_buf_printf(out, err, " %sIN (", neg));
        FR_TRY(ex_format_list(e, 1, out, depth, err));
        return fr_buf_printf(out, err, "))");
    case FR_EX_BETWEEN:
        FR_TRY(fr_buf_printf(out, err, "("));
        FR_TRY(ex_format(e->args[0], out, depth + 1, err));
        FR_TRY(fr_buf_printf(out, err, " %sBETWEEN ", neg));
        FR_TRY(ex_format(e->args[1], out, depth + 1, err));
        FR_TRY(fr_buf_printf(out, err, " AND "));
        FR_TRY(ex_format(e->args[2], out, depth + 1, err));
        return fr_buf_printf(out, err, ")");
    case FR_EX_LIKE:
        FR_TRY(fr_buf_printf(out, err, "("));
        FR_TRY(ex_format(e->args[0], out, depth + 1, err));
        FR_TRY(fr_buf_printf(out, err, " %sLIKE ", neg));
        FR_TRY(ex_format(e->args[1], out, depth + 1, err));
        return fr_buf_printf(out, err, ")");
    case FR_EX_CAST: {
        char tn[64];
        FR_TRY(fr_buf_printf(out, err, "CAST("));
        FR_TRY(ex_format(e->args[0], out, depth + 1, err));
        return fr_buf_printf(out, err, " AS %s)", ex_type_name(&e->cast_type, tn, sizeof tn));
    }
    case FR_EX_AGGREGATE:
        FR_TRY(fr_buf_printf(out, err, "%s(%s", fr_expr_agg_name(e->agg),
                             e->distinct ? "DISTINCT " : ""));
        if (e->nargs == 0) FR_TRY(fr_buf_printf(out, err, "*"));
        else FR_TRY(ex_format(e->args[0], out, depth + 1, err));
        return fr_buf_printf(out, err, ")");
    case FR_EX_CASE: return ex_format_case(e, out, depth, err);
    case FR_EX_FUNC:
        FR_TRY(fr_buf_printf(out, err, "%s(", fr_expr_func_name(e->func)));
        FR_TRY(ex_format_list(e, 0, out, depth, err));
        return fr_buf_printf(out, err, ")");
    }
    return fr_fail(err, FR_EINVAL, "cannot format an expression node of kind %d", (int)e->kind);
}

const char *fr_expr_agg_name(fr_expr_agg agg)
{
    switch (agg) {
    case FR_AGGFN_COUNT: return "COUNT";
    case FR_AGGFN_SUM: return "SUM";
    case FR_AGGFN_MIN: return "MIN";
    case FR_AGGFN_MAX: return "MAX";
    case FR_AGGFN_AVG: return "AVG";
    case FR_AGGFN_NONE: break;
    }
    return "?";
}

int fr_expr_format(const fr_expr *e, fr_buf *out, fr_error *err)
{
    return ex_format(e, out, 0, err);
}

static fr_expr *ex_remap(fr_arena *a, const fr_expr *e, const int *map, int ncols, int depth)
{
    if (depth > FR_EXPR_DEPTH_MAX) return NULL;
    fr_expr *c = fr_arena_alloc(a, sizeof *c);
    if (!c) return NULL;
    *c = *e;
    if (e->kind == FR_EX_COLUMN) {
        if (e->column < 0 || e->column >= ncols || map[e->column] < 0) return NULL;
        c->column = map[e->column];
    }
    if (e->nargs > 0) {
        c->args = fr_arena_alloc(a, (size_t)e->nargs * sizeof *c->args);
        if (!c->args) return NULL;
        for (int i = 0; i < e->nargs; i++) {
            c->args[i] = ex_remap(a, e->args[i], map, ncols, depth + 1);
            if (!c->args[i]) return NULL;
        }
    }
    return c;
}

fr_expr *fr_expr_remap_columns(fr_arena *a, const fr_expr *e, const int *map, int ncols)
{
    return ex_remap(a, e, map, ncols, 0);
}
