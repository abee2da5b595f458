/* expr_testkit.h — helpers shared by the expression tests: a small parser that turns SQL-like
 * text into fr_expr trees (so tests read like the queries they stand for), schemas from
 * "name TYPE, ..." text, and batches from "v|v|v; v|v|v" rows.
 *
 * The parser is a test tool, not the SQL layer's: it knows just enough syntax to write
 * expressions (operators, IN, BETWEEN, LIKE, IS NULL, CAST, CASE, scalar function calls,
 * typed literals) and records the line and column of every node (the column of its first
 * character). */
#ifndef FIRTH_EXPR_TESTKIT_H
#define FIRTH_EXPR_TESTKIT_H

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "expr/expr.h"

#define TK_UNUSED __attribute__((unused))

typedef struct tk_parser {
    const char *s;
    size_t pos;
    fr_arena *arena;
    const char *error;
} tk_parser;

static fr_expr *tk_expr(tk_parser *p);

static void tk_space(tk_parser *p)
{
    while (p->s[p->pos] && isspace((unsigned char)p->s[p->pos])) p->pos++;
}

static fr_expr *tk_at(fr_expr *e, size_t pos)
{
    if (e) {
        e->line = 1;
        e->col = (int)pos + 1;
    }
    return e;
}

/* Accepts a keyword (case-insensitive, whole word) or a symbol. */
static bool tk_accept(tk_parser *p, const char *w)
{
    tk_space(p);
    size_t n = strlen(w);
    if (strncasecmp(p->s + p->pos, w, n) != 0) return false;
    if (isalpha((unsigned char)w[0]) &&
        (isalnum((unsigned char)p->s[p->pos + n]) || p->s[p->pos + n] == '_'))
        return false;
    /* "<" must not eat the start of "<=" or "<>", nor "|" of "||". */
    if (!isalpha((unsigned char)w[0]) && n == 1 && strchr("<>=|", p->s[p->pos + 1]) &&
        strchr("<>!", w[0]))
        return false;
    p->pos += n;
    return true;
}

static void tk_expect(tk_parser *p, const char *w)
{
    if (!tk_accept(p, w) && !p->error) p->error = w;
}

static fr_expr *tk_lit(tk_parser *p, fr_value v, size_t at)
{
    return tk_at(fr_expr_literal(p->arena, &v), at);
}

/* '...' with '' for a quote; returns the bytes in arena memory. */
static char *tk_string(tk_parser *p, size_t *len)
{
    char *out = fr_arena_alloc(p->arena, strlen(p->s + p->pos) + 1);
    size_t n = 0;
    p->pos++; /* the opening quote */
    for (;;) {
        char c = p->s[p->pos];
        if (!c) {
            p->error = "unterminated string";
            break;
        }
        p->pos++;
        if (c == '\'') {
            if (p->s[p->pos] != '\'') break;
            p->pos++;
        }
        out[n++] = c;
    }
    out[n] = 0;
    *len = n;
    return out;
}

static fr_expr *tk_typed_string(tk_parser *p, const char *type_name, size_t at)
{
    tk_space(p);
    if (p->s[p->pos] != '\'') {
        p->error = "typed literal without a string";
        return NULL;
    }
    size_t len;
    char *text = tk_string(p, &len);
    fr_type t;
    fr_value v;
    if (fr_type_parse(type_name, &t, NULL) < 0 || fr_value_parse(text, len, &t, &v, NULL) < 0) {
        p->error = "bad typed literal";
        return NULL;
    }
    return tk_lit(p, v, at);
}

static fr_expr *tk_number(tk_parser *p, size_t at)
{
    const char *start = p->s + p->pos;
    size_t n = 0;
    bool dot = false, exp = false;
    while (isdigit((unsigned char)start[n]) || start[n] == '.' || start[n] == 'e' ||
           start[n] == 'E' || ((start[n] == '-' || start[n] == '+') && n > 0 &&
                               (start[n - 1] == 'e' || start[n - 1] == 'E'))) {
        dot = dot || start[n] == '.';
        exp = exp || start[n] == 'e' || start[n] == 'E';
        n++;
    }
    p->pos += n;
    char *text = fr_arena_strndup(p->arena, start, n);
    fr_value v;
    if (exp) {
        v = fr_value_double(fr_type_of(FR_T_DOUBLE), strtod(text, NULL));
    } else if (dot) {
        const char *d = strchr(text, '.');
        int scale = (int)(n - (size_t)(d - text) - 1), prec = (int)n - 1;
        if (prec < 1) prec = 1;
        fr_type t = fr_type_decimal(prec, scale);
        if (fr_value_parse(text, n, &t, &v, NULL) < 0) p->error = "bad decimal";
    } else {
        long long x = strtoll(text, NULL, 10);
        bool small = x >= INT32_MIN && x <= INT32_MAX;
        v = fr_value_int(fr_type_of(small ? FR_T_INT : FR_T_BIGINT), x);
    }
    return tk_lit(p, v, at);
}

/* CASE [operand] WHEN w THEN t ... [ELSE x] END, CASE behind; at most 64 operands. */
static fr_expr *tk_case(tk_parser *p, size_t at)
{
    fr_expr *args[64];
    int n = 0;
    tk_space(p);
    size_t save = p->pos;
    bool operand = !tk_accept(p, "WHEN");
    p->pos = save;
    if (operand) args[n++] = tk_expr(p);
    while (n < 62 && tk_accept(p, "WHEN")) {
        args[n++] = tk_expr(p);
        tk_expect(p, "THEN");
        args[n++] = tk_expr(p);
    }
    bool has_else = tk_accept(p, "ELSE");
    if (has_else) args[n++] = tk_expr(p);
    tk_expect(p, "END");
    fr_expr *e = tk_at(fr_expr_node(p->arena, FR_EX_CASE, FR_OP_NONE, n, args), at);
    if (e) {
        e->case_operand = operand;
        e->case_else = has_else;
    }
    return e;
}

/* func(args), at the '('; at most 64 arguments. */
static fr_expr *tk_call(tk_parser *p, fr_expr_func func, size_t at)
{
    fr_expr *args[64];
    int n = 0;
    tk_expect(p, "(");
    if (!tk_accept(p, ")")) {
        do {
            if (n < 64) args[n++] = tk_expr(p);
        } while (tk_accept(p, ","));
        tk_expect(p, ")");
    }
    return tk_at(fr_expr_call(p->arena, func, n, args), at);
}

static fr_expr *tk_primary(tk_parser *p)
{
    tk_space(p);
    size_t at = p->pos;
    char c = p->s[p->pos];
    if (isdigit((unsigned char)c) || (c == '.' && isdigit((unsigned char)p->s[p->pos + 1])))
        return tk_number(p, at);
    if (c == '\'') {
        size_t len;
        char *text = tk_string(p, &len);
        return tk_lit(p, fr_value_str(fr_type_of(FR_T_STRING), text, len), at);
    }
    if (c == '(') {
        p->pos++;
        fr_expr *e = tk_expr(p);
        tk_expect(p, ")");
        return e;
    }
    if (tk_accept(p, "NULL")) return tk_lit(p, fr_value_null(fr_type_of(FR_T_STRING)), at);
    if (tk_accept(p, "TRUE") || tk_accept(p, "FALSE")) {
        fr_value v = fr_value_int(fr_type_of(FR_T_BOOLEAN), 0);
        v.v.b = toupper((unsigned char)c) == 'T';
        return tk_lit(p, v, at);
    }
    if (tk_accept(p, "DATE")) return tk_typed_string(p, "DATE", at);
    if (tk_accept(p, "TIMESTAMP3")) return tk_typed_string(p, "TIMESTAMP(3)", at);
    if (tk_accept(p, "TIMESTAMP")) return tk_typed_string(p, "TIMESTAMP(6)", at);
    if (tk_accept(p, "TIME")) return tk_typed_string(p, "TIME(3)", at);
    if (tk_accept(p, "FLOAT")) { /* FLOAT 1.5: a FLOAT literal */
        tk_space(p);
        fr_expr *e = tk_number(p, at);
        if (e) {
            e->value.type = fr_type_of(FR_T_FLOAT);
            e->value.v.f = (double)(float)strtod(p->s + at + 5, NULL);
        }
        return e;
    }
    if ((c == 'X' || c == 'x') && p->s[p->pos + 1] == '\'') {
        p->pos++;
        size_t len;
        char *hex = tk_string(p, &len);
        uint8_t *bytes = fr_arena_alloc(p->arena, len / 2 + 1);
        for (size_t i = 0; i + 1 < len; i += 2) {
            char pair[3] = {hex[i], hex[i + 1], 0};
            bytes[i / 2] = (uint8_t)strtol(pair, NULL, 16);
        }
        return tk_lit(p, fr_value_str(fr_type_of(FR_T_BYTES), bytes, len / 2), at);
    }
    if (tk_accept(p, "CAST")) {
        tk_expect(p, "(");
        fr_expr *x = tk_expr(p);
        tk_expect(p, "AS");
        tk_space(p);
        size_t start = p->pos;
        int depth = 0;
        while (p->s[p->pos] && (depth > 0 || p->s[p->pos] != ')')) {
            depth += p->s[p->pos] == '(' ? 1 : p->s[p->pos] == ')' ? -1 : 0;
            p->pos++;
        }
        char *name = fr_arena_strndup(p->arena, p->s + start, p->pos - start);
        tk_expect(p, ")");
        fr_type t;
        if (fr_type_parse(name, &t, NULL) < 0) p->error = "bad CAST type";
        return tk_at(fr_expr_cast(p->arena, x, t), at);
    }
    if (c == '`') { /* `name`, with `` for a backquote */
        char *name = fr_arena_alloc(p->arena, strlen(p->s + p->pos) + 1);
        size_t n = 0;
        p->pos++;
        while (p->s[p->pos]) {
            if (p->s[p->pos] == '`') {
                if (p->s[p->pos + 1] != '`') break;
                p->pos++;
            }
            name[n++] = p->s[p->pos++];
        }
        name[n] = 0;
        if (p->s[p->pos]) p->pos++;
        return tk_at(fr_expr_column(p->arena, name), at);
    }
    if (tk_accept(p, "CASE")) return tk_case(p, at);
    if (isalpha((unsigned char)c) || c == '_') {
        size_t start = p->pos;
        while (isalnum((unsigned char)p->s[p->pos]) || p->s[p->pos] == '_') p->pos++;
        size_t len = p->pos - start;
        fr_expr_func func = fr_expr_func_lookup(p->s + start, len);
        tk_space(p);
        if (func != FR_FN_NONE && p->s[p->pos] == '(') return tk_call(p, func, at);
        char *name = fr_arena_strndup(p->arena, p->s + start, len);
        return tk_at(fr_expr_column(p->arena, name), at);
    }
    p->error = "unexpected character";
    return NULL;
}

static fr_expr *tk_unary(tk_parser *p)
{
    tk_space(p);
    size_t at = p->pos;
    if (p->s[p->pos] == '-' && !isdigit((unsigned char)p->s[p->pos + 1])) {
        p->pos++;
        fr_expr *x = tk_unary(p);
        return tk_at(fr_expr_node(p->arena, FR_EX_UNARY, FR_OP_NEG, 1, &x), at);
    }
    if (p->s[p->pos] == '-') { /* -5: a negative literal, as SQL parsers fold it */
        p->pos++;
        fr_expr *x = tk_number(p, at);
        if (x && x->value.type.id == FR_T_DOUBLE) x->value.v.f = -x->value.v.f;
        else if (x && x->value.type.id == FR_T_DECIMAL) x->value.v.d = -x->value.v.d;
        else if (x) x->value.v.i = -x->value.v.i;
        return x;
    }
    return tk_primary(p);
}

static fr_expr *tk_binary_level(tk_parser *p, int level);

static const struct {
    const char *sym;
    fr_expr_op op;
    int level;
} tk_ops[] = {
    {"||", FR_OP_CONCAT, 0}, {"+", FR_OP_ADD, 1}, {"-", FR_OP_SUB, 1},
    {"*", FR_OP_MUL, 2},     {"/", FR_OP_DIV, 2}, {"%", FR_OP_MOD, 2},
};

static fr_expr *tk_binary_level(tk_parser *p, int level)
{
    if (level > 2) return tk_unary(p);
    size_t at = (tk_space(p), p->pos);
    fr_expr *l = tk_binary_level(p, level + 1);
    for (;;) {
        bool found = false;
        for (size_t i = 0; i < sizeof tk_ops / sizeof tk_ops[0]; i++) {
            if (tk_ops[i].level != level || !tk_accept(p, tk_ops[i].sym)) continue;
            fr_expr *r = tk_binary_level(p, level + 1);
            l = tk_at(fr_expr_binary(p->arena, tk_ops[i].op, l, r), at);
            found = true;
            break;
        }
        if (!found) return l;
    }
}

static fr_expr *tk_predicate(tk_parser *p)
{
    tk_space(p);
    size_t at = p->pos;
    fr_expr *x = tk_binary_level(p, 0);
    static const struct {
        const char *sym;
        fr_expr_op op;
    } cmp[] = {{"<>", FR_OP_NE}, {"!=", FR_OP_NE}, {"<=", FR_OP_LE}, {">=", FR_OP_GE},
               {"=", FR_OP_EQ},  {"<", FR_OP_LT},  {">", FR_OP_GT}};
    for (size_t i = 0; i < sizeof cmp / sizeof cmp[0]; i++)
        if (tk_accept(p, cmp[i].sym))
            return tk_at(fr_expr_binary(p->arena, cmp[i].op, x, tk_binary_level(p, 0)), at);
    if (tk_accept(p, "IS")) {
        bool neg = tk_accept(p, "NOT");
        tk_expect(p, "NULL");
        fr_expr *e = tk_at(fr_expr_node(p->arena, FR_EX_IS_NULL, FR_OP_NONE, 1, &x), at);
        if (e) e->negated = neg;
        return e;
    }
    size_t save = p->pos;
    bool neg = tk_accept(p, "NOT");
    fr_expr *args[64] = {x};
    int n = 1;
    fr_expr_kind kind;
    if (tk_accept(p, "IN")) {
        kind = FR_EX_IN;
        tk_expect(p, "(");
        do {
            if (n < 64) args[n++] = tk_binary_level(p, 0);
        } while (tk_accept(p, ","));
        tk_expect(p, ")");
    } else if (tk_accept(p, "BETWEEN")) {
        kind = FR_EX_BETWEEN;
        args[n++] = tk_binary_level(p, 0);
        tk_expect(p, "AND");
        args[n++] = tk_binary_level(p, 0);
    } else if (tk_accept(p, "LIKE")) {
        kind = FR_EX_LIKE;
        args[n++] = tk_binary_level(p, 0);
    } else {
        p->pos = save;
        return x;
    }
    fr_expr *e = tk_at(fr_expr_node(p->arena, kind, FR_OP_NONE, n, args), at);
    if (e) e->negated = neg;
    return e;
}

static fr_expr *tk_not(tk_parser *p)
{
    tk_space(p);
    size_t at = p->pos;
    if (tk_accept(p, "NOT")) {
        fr_expr *x = tk_not(p);
        return tk_at(fr_expr_node(p->arena, FR_EX_UNARY, FR_OP_NOT, 1, &x), at);
    }
    return tk_predicate(p);
}

static fr_expr *tk_and(tk_parser *p)
{
    tk_space(p);
    size_t at = p->pos;
    fr_expr *l = tk_not(p);
    while (tk_accept(p, "AND")) l = tk_at(fr_expr_binary(p->arena, FR_OP_AND, l, tk_not(p)), at);
    return l;
}

static fr_expr *tk_expr(tk_parser *p)
{
    tk_space(p);
    size_t at = p->pos;
    fr_expr *l = tk_and(p);
    while (tk_accept(p, "OR")) l = tk_at(fr_expr_binary(p->arena, FR_OP_OR, l, tk_and(p)), at);
    return l;
}

/* Parses text into a tree in arena; aborts the test on a syntax error. */
TK_UNUSED static fr_expr *tk_parse(fr_arena *arena, const char *text)
{
    tk_parser p = {.s = text, .arena = arena};
    fr_expr *e = tk_expr(&p);
    tk_space(&p);
    if (!p.error && p.s[p.pos]) p.error = "trailing text";
    if (p.error || !e) {
        fprintf(stderr, "test parser: %s at %zu in: %s\n", p.error ? p.error : "?", p.pos, text);
        abort();
    }
    return e;
}

/* "a INT, b STRING NOT NULL, ..." */
TK_UNUSED static fr_schema *tk_schema(const char *spec)
{
    fr_field fields[64];
    char names[64][64], types[64][64];
    int n = 0;
    const char *s = spec;
    while (*s && n < 64) {
        while (*s == ' ' || *s == ',') s++;
        if (!*s) break;
        const char *name = s;
        while (*s && *s != ' ') s++;
        snprintf(names[n], sizeof names[n], "%.*s", (int)(s - name), name);
        while (*s == ' ') s++;
        const char *type = s;
        int depth = 0;
        while (*s && (depth > 0 || *s != ',')) {
            depth += *s == '(' ? 1 : *s == ')' ? -1 : 0;
            s++;
        }
        snprintf(types[n], sizeof types[n], "%.*s", (int)(s - type), type);
        fields[n].name = names[n];
        fr_error err = {0};
        if (fr_type_parse(types[n], &fields[n].type, &err) < 0) {
            fprintf(stderr, "test schema: %s\n", err.msg);
            abort();
        }
        n++;
    }
    fr_schema *out = NULL;
    fr_error err = {0};
    if (fr_schema_new(fields, n, 0, &out, &err) < 0) {
        fprintf(stderr, "test schema: %s\n", err.msg);
        abort();
    }
    return out;
}

/* Rows "1|abc|NULL; 2|x|2026-01-01": fields parsed as the column types; NULL is null. */
TK_UNUSED static fr_batch *tk_batch(const fr_schema *s, const char *rows)
{
    fr_builder *bld = NULL;
    fr_error err = {0};
    if (fr_builder_new(s, &bld, &err) < 0) abort();
    int ncols = fr_schema_num_fields(s);
    /* Rows are separated by ';' (so "a;;b" has an empty middle row); blank text has none. */
    const char *p = rows;
    while (*p == ' ') p++;
    while (*p) {
        for (int c = 0; c < ncols; c++) {
            const char *start = p;
            while (*p && *p != '|' && *p != ';') p++;
            const char *end = p;
            while (start < end && *start == ' ') start++;
            while (end > start && end[-1] == ' ') end--;
            const fr_type *t = &fr_schema_field(s, c)->type;
            fr_value v;
            if ((size_t)(end - start) == 4 && strncmp(start, "NULL", 4) == 0) {
                v = fr_value_null(*t);
            } else if (fr_value_parse(start, (size_t)(end - start), t, &v, &err) < 0) {
                fprintf(stderr, "test batch: %s\n", err.msg);
                abort();
            }
            if (fr_builder_append(bld, c, &v, &err) < 0) {
                fprintf(stderr, "test batch: %s\n", err.msg);
                abort();
            }
            if (*p == '|') p++;
        }
        if (*p == ';') p++;
        else if (*p) abort(); /* more fields than columns */
    }
    fr_batch *b = NULL;
    if (fr_builder_finish(bld, &b, &err) < 0) {
        fprintf(stderr, "test batch: %s\n", err.msg);
        abort();
    }
    fr_builder_free(bld);
    return b;
}

#endif
