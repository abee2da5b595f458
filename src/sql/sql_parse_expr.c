/* sql_parse_expr.c — the parser's machinery (tokens in, errors out, names, strings, types)
 * and the expression grammar, by recursive descent:
 *
 *   expr    := or
 *   or      := and (OR and)*
 *   and     := not (AND not)*
 *   not     := NOT not | pred
 *   pred    := concat ( cmp concat | IS [NOT] NULL | [NOT] IN (expr, ...)
 *                     | [NOT] BETWEEN concat AND concat | [NOT] LIKE concat )*
 *   concat  := add (|| add)*
 *   add     := mul ((+ | -) mul)*
 *   mul     := unary ((* | / | %) unary)*
 *   unary   := (- | +) unary | primary
 *   primary := literal | name | ( expr ) | CAST ( expr AS type ) | case
 *            | agg ( [DISTINCT] expr | * ) | func ( [expr, ...] )
 *   case    := CASE [expr] WHEN expr THEN expr (WHEN expr THEN expr)* [ELSE expr] END
 *
 * Function names (the aggregates' and fr_expr_func_lookup's) are not reserved: a word is a
 * function only when '(' follows it.
 *
 * Invariants: no tree is deeper than FR_EXPR_DEPTH_MAX (each node's depth is checked as it
 * is built) and the recursion of the parser itself is bounded by the same limit, so that
 * input cannot exhaust the stack. Chains of AND and of OR are built as balanced trees, so
 * that a long list of conditions does not count as deep nesting. */
#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "sql/sql_int.h"

/* ---- tokens in, errors out ------------------------------------------------------------- */

static void lex_into(sql_parser *P, sql_token *t)
{
    if (P->rc < 0) {
        *t = (sql_token){.kind = SQL_T_EOF, .p = P->lx.text + P->lx.len, .off = P->lx.len,
                         .pos = {P->lx.line, P->lx.col}};
        return;
    }
    int rc = sql_lex(&P->lx, t, P->err);
    if (rc < 0) {
        P->rc = rc;
        *t = (sql_token){.kind = SQL_T_EOF, .p = P->lx.text + P->lx.off, .off = P->lx.off,
                         .pos = {P->lx.line, P->lx.col}};
    }
}

void sql_p_init(sql_parser *P, const char *text, size_t len, fr_arena *arena, fr_error *err)
{
    memset(P, 0, sizeof *P);
    sql_lexer_init(&P->lx, text, len);
    P->arena = arena;
    P->err = err;
    lex_into(P, &P->cur);
}

void sql_p_advance(sql_parser *P)
{
    P->prev_end = P->cur.off + P->cur.n;
    if (P->have_next) {
        P->cur = P->next;
        P->have_next = false;
    } else {
        lex_into(P, &P->cur);
    }
}

const sql_token *sql_p_peek2(sql_parser *P)
{
    if (!P->have_next) {
        if (P->cur.kind == SQL_T_EOF) {
            P->next = P->cur;
        } else {
            lex_into(P, &P->next);
        }
        P->have_next = true;
    }
    return &P->next;
}

bool sql_p_accept(sql_parser *P, const char *kw)
{
    if (!sql_tok_is(&P->cur, kw)) return false;
    sql_p_advance(P);
    return true;
}

bool sql_p_accept_tok(sql_parser *P, sql_tok_kind k)
{
    if (P->cur.kind != k) return false;
    sql_p_advance(P);
    return true;
}

int sql_p_fail(sql_parser *P, int code, sql_pos pos, const char *fmt, ...)
{
    if (P->rc < 0) return P->rc;
    char msg[FR_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    P->rc = sql_fail_at(P->err, code, pos, "%s", msg);
    return P->rc;
}

int sql_p_expected(sql_parser *P, const char *what)
{
    char found[160];
    sql_token_describe(&P->cur, found, sizeof found);
    return sql_p_fail(P, FR_ESYNTAX, P->cur.pos, "expected %s, found %s", what, found);
}

int sql_p_expect(sql_parser *P, const char *kw)
{
    if (sql_p_accept(P, kw)) return 0;
    return sql_p_expected(P, kw);
}

int sql_p_expect_tok(sql_parser *P, sql_tok_kind k, const char *what)
{
    if (sql_p_accept_tok(P, k)) return 0;
    return sql_p_expected(P, what);
}

void *sql_p_alloc(sql_parser *P, size_t n)
{
    void *p = fr_arena_alloc(P->arena, n ? n : 1);
    if (!p) {
        sql_p_fail(P, FR_ENOMEM, P->cur.pos, "out of memory while parsing");
        return NULL;
    }
    memset(p, 0, n ? n : 1);
    return p;
}

/* ---- names and strings ----------------------------------------------------------------- */

int sql_p_name(sql_parser *P, const char *what, bool fold, sql_ident *out)
{
    const sql_token *t = &P->cur;
    out->pos = t->pos;
    if (t->kind == SQL_T_IDENT) {
        if (fr_expr_word_reserved(t->p, t->n)) {
            char w[64];
            snprintf(w, sizeof w, "%.*s", (int)(t->n < 40 ? t->n : 40), t->p);
            return sql_p_fail(P, FR_ESYNTAX, t->pos,
                              "expected %s, found the reserved word '%s' (write `%s` to use "
                              "it as a name)", what, w, w);
        }
        char *s = fr_arena_strndup(P->arena, t->p, t->n);
        if (!s) return sql_p_fail(P, FR_ENOMEM, t->pos, "out of memory while parsing");
        if (fold)
            for (char *c = s; *c; c++) *c = (char)tolower((unsigned char)*c);
        out->s = s;
        sql_p_advance(P);
        return 0;
    }
    if (t->kind != SQL_T_QIDENT) return sql_p_expected(P, what);
    /* Unquote: `` stands for one backquote. */
    char *s = sql_p_alloc(P, t->n);
    if (!s) return P->rc;
    size_t n = 0;
    for (size_t i = 1; i + 1 < t->n; i++) {
        if (t->p[i] == '\0')
            return sql_p_fail(P, FR_ESYNTAX, t->pos, "a quoted name may not hold a NUL byte");
        s[n++] = t->p[i];
        if (t->p[i] == '`') i++;
    }
    s[n] = '\0';
    if (n == 0) return sql_p_fail(P, FR_ESYNTAX, t->pos, "a quoted name may not be empty");
    if (n > FR_NAME_BYTES_MAX)
        return sql_p_fail(P, FR_ELIMIT, t->pos, "name longer than %d bytes", FR_NAME_BYTES_MAX);
    out->s = s;
    sql_p_advance(P);
    return 0;
}

int sql_p_string(sql_parser *P, const sql_token *t, const char **out, size_t *len)
{
    assert(t->kind == SQL_T_STRING);
    char *s = sql_p_alloc(P, t->n);
    if (!s) return P->rc;
    size_t n = 0;
    for (size_t i = 1; i + 1 < t->n; i++) {
        s[n++] = t->p[i];
        if (t->p[i] == '\'') i++;
    }
    s[n] = '\0';
    *out = s;
    *len = n;
    return 0;
}

/* ---- types ----------------------------------------------------------------------------- */

/* An integer in parentheses' content, within [min, max]. */
static int p_small_int(sql_parser *P, const char *what, int64_t min, int64_t max, int64_t *out)
{
    const sql_token *t = &P->cur;
    if (t->kind != SQL_T_INTEGER) return sql_p_expected(P, what);
    int64_t v = 0;
    for (size_t i = 0; i < t->n; i++) {
        v = v * 10 + (t->p[i] - '0');
        if (v > max) break;
    }
    if (v < min || v > max)
        return sql_p_fail(P, FR_ESYNTAX, t->pos, "%s must be between %lld and %lld", what,
                          (long long)min, (long long)max);
    *out = v;
    sql_p_advance(P);
    return 0;
}

/* An optional "(n)". */
static int p_opt_len(sql_parser *P, const char *what, int64_t min, int64_t max, int64_t dflt,
                     int64_t *out)
{
    *out = dflt;
    if (!sql_p_accept_tok(P, SQL_T_LPAREN)) return 0;
    FR_TRY(p_small_int(P, what, min, max, out));
    return sql_p_expect_tok(P, SQL_T_RPAREN, "')'");
}

static int p_decimal_type(sql_parser *P, fr_type *out)
{
    int64_t p = 10, s = 0;
    if (sql_p_accept_tok(P, SQL_T_LPAREN)) {
        FR_TRY(p_small_int(P, "the DECIMAL precision", 1, FR_DECIMAL_PRECISION_MAX, &p));
        if (sql_p_accept_tok(P, SQL_T_COMMA)) {
            sql_pos pos = P->cur.pos;
            FR_TRY(p_small_int(P, "the DECIMAL scale", 0, FR_DECIMAL_PRECISION_MAX, &s));
            if (s > p)
                return sql_p_fail(P, FR_ESYNTAX, pos,
                                  "the DECIMAL scale %lld is larger than its precision %lld",
                                  (long long)s, (long long)p);
        }
        FR_TRY(sql_p_expect_tok(P, SQL_T_RPAREN, "')'"));
    }
    *out = fr_type_decimal((int)p, (int)s);
    return 0;
}

/* TIME, TIMESTAMP and TIMESTAMP_LTZ with their optional precision and zone words. */
static int p_time_type(sql_parser *P, fr_type_id id, int64_t dflt, fr_type *out)
{
    int64_t p;
    FR_TRY(p_opt_len(P, "the precision", 0, FR_TIME_PRECISION_MAX, dflt, &p));
    if (id != FR_T_TIMESTAMP_LTZ && sql_tok_is(&P->cur, "WITHOUT")) {
        sql_p_advance(P);
        FR_TRY(sql_p_expect(P, "TIME"));
        FR_TRY(sql_p_expect(P, "ZONE"));
    } else if (id == FR_T_TIMESTAMP && sql_tok_is(&P->cur, "WITH")) {
        sql_p_advance(P);
        FR_TRY(sql_p_expect(P, "LOCAL"));
        FR_TRY(sql_p_expect(P, "TIME"));
        FR_TRY(sql_p_expect(P, "ZONE"));
        id = FR_T_TIMESTAMP_LTZ;
    }
    *out = fr_type_time_like(id, (int)p);
    return 0;
}

int sql_p_type(sql_parser *P, fr_type *out)
{
    static const struct {
        const char *word;
        fr_type_id id;
    } simple[] = {
        {"BOOLEAN", FR_T_BOOLEAN}, {"BOOL", FR_T_BOOLEAN},   {"TINYINT", FR_T_TINYINT},
        {"SMALLINT", FR_T_SMALLINT}, {"INT", FR_T_INT},      {"INTEGER", FR_T_INT},
        {"BIGINT", FR_T_BIGINT},   {"FLOAT", FR_T_FLOAT},    {"REAL", FR_T_FLOAT},
        {"STRING", FR_T_STRING},   {"BYTES", FR_T_BYTES},    {"VARBINARY", FR_T_BYTES},
        {"DATE", FR_T_DATE},
    };
    const sql_token *t = &P->cur;
    if (t->kind != SQL_T_IDENT) return sql_p_expected(P, "a type");
    for (size_t i = 0; i < sizeof simple / sizeof simple[0]; i++) {
        if (sql_tok_is(t, simple[i].word)) {
            sql_p_advance(P);
            *out = fr_type_of(simple[i].id);
            return 0;
        }
    }
    int64_t n;
    if (sql_p_accept(P, "DOUBLE")) {
        sql_p_accept(P, "PRECISION");
        *out = fr_type_of(FR_T_DOUBLE);
    } else if (sql_p_accept(P, "DECIMAL") || sql_p_accept(P, "DEC") ||
               sql_p_accept(P, "NUMERIC")) {
        FR_TRY(p_decimal_type(P, out));
    } else if (sql_p_accept(P, "CHAR") || sql_p_accept(P, "CHARACTER")) {
        FR_TRY(p_opt_len(P, "the length", 1, FR_CHAR_LENGTH_MAX, 1, &n));
        *out = fr_type_of(FR_T_CHAR);
        out->length = (int32_t)n;
    } else if (sql_p_accept(P, "VARCHAR")) {
        FR_TRY(p_opt_len(P, "the length", 1, FR_CHAR_LENGTH_MAX, 1, &n));
        *out = fr_type_of(FR_T_VARCHAR);
        out->length = (int32_t)n;
    } else if (sql_p_accept(P, "TIME")) {
        FR_TRY(p_time_type(P, FR_T_TIME, 0, out));
    } else if (sql_p_accept(P, "TIMESTAMP")) {
        FR_TRY(p_time_type(P, FR_T_TIMESTAMP, 6, out));
    } else if (sql_p_accept(P, "TIMESTAMP_LTZ")) {
        FR_TRY(p_time_type(P, FR_T_TIMESTAMP_LTZ, 6, out));
    } else {
        char w[64];
        snprintf(w, sizeof w, "%.*s", (int)(t->n < 40 ? t->n : 40), t->p);
        return sql_p_fail(P, FR_ESYNTAX, t->pos,
                          "unknown type '%s' (types: BOOLEAN, TINYINT, SMALLINT, INT, BIGINT, "
                          "FLOAT, DOUBLE, DECIMAL(p, s), CHAR(n), VARCHAR(n), STRING, BYTES, "
                          "DATE, TIME(p), TIMESTAMP(p), TIMESTAMP_LTZ(p))", w);
    }
    return 0;
}

/* ---- nodes ----------------------------------------------------------------------------- */

static fr_expr *new_node(sql_parser *P, fr_expr_kind kind, fr_expr_op op, int nargs,
                         sql_pos pos)
{
    fr_expr *e = sql_p_alloc(P, sizeof *e);
    if (!e) return NULL;
    e->kind = kind;
    e->op = op;
    e->column = -1;
    e->line = pos.line;
    e->col = pos.col;
    e->nargs = nargs;
    if (nargs > 0) {
        e->args = sql_p_alloc(P, sizeof(fr_expr *) * (size_t)nargs);
        if (!e->args) return NULL;
    }
    return e;
}

static int check_depth(sql_parser *P, int depth, sql_pos pos)
{
    if (depth > FR_EXPR_DEPTH_MAX)
        return sql_p_fail(P, FR_ELIMIT, pos, "expression nested deeper than %d levels",
                          FR_EXPR_DEPTH_MAX);
    return 0;
}

/* Replaces *l (of depth *dl) by `*l op r`. */
static int make_binary(sql_parser *P, fr_expr_op op, sql_pos pos, fr_expr **l, int *dl,
                       fr_expr *r, int dr)
{
    fr_expr *e = new_node(P, FR_EX_BINARY, op, 2, pos);
    if (!e) return P->rc;
    e->args[0] = *l;
    e->args[1] = r;
    *l = e;
    *dl = 1 + (*dl > dr ? *dl : dr);
    return check_depth(P, *dl, pos);
}

static fr_expr *new_literal(sql_parser *P, const fr_value *v, sql_pos pos)
{
    fr_expr *e = new_node(P, FR_EX_LITERAL, FR_OP_NONE, 0, pos);
    if (e) e->value = *v;
    return e;
}

fr_expr *sql_expr_clone(fr_arena *arena, const fr_expr *e)
{
    fr_expr *c = fr_arena_alloc(arena, sizeof *c);
    if (!c) return NULL;
    *c = *e;
    if (e->nargs > 0) {
        c->args = fr_arena_alloc(arena, sizeof(fr_expr *) * (size_t)e->nargs);
        if (!c->args) return NULL;
        for (int i = 0; i < e->nargs; i++) {
            c->args[i] = sql_expr_clone(arena, e->args[i]);
            if (!c->args[i]) return NULL;
        }
    }
    return c;
}

/* ---- literals -------------------------------------------------------------------------- */

static fr_type literal_type(fr_type t)
{
    t.nullable = false;
    return t;
}

/* 123: INT when it fits, else BIGINT, else DECIMAL(n, 0) up to 38 digits. */
static int lit_integer(sql_parser *P, const sql_token *t, fr_value *v)
{
    size_t i = 0;
    while (i + 1 < t->n && t->p[i] == '0') i++;
    if (t->n - i > FR_DECIMAL_PRECISION_MAX)
        return sql_p_fail(P, FR_ERANGE, t->pos, "integer literal has more than %d digits",
                          FR_DECIMAL_PRECISION_MAX);
    fr_i128 x = 0;
    for (size_t k = i; k < t->n; k++) x = x * 10 + (t->p[k] - '0');
    memset(v, 0, sizeof *v);
    if (x <= INT32_MAX) {
        v->type = literal_type(fr_type_of(FR_T_INT));
        v->v.i = (int64_t)x;
    } else if (x <= INT64_MAX) {
        v->type = literal_type(fr_type_of(FR_T_BIGINT));
        v->v.i = (int64_t)x;
    } else {
        v->type = literal_type(fr_type_decimal((int)(t->n - i), 0));
        v->v.d = x;
    }
    return 0;
}

/* 12.50: DECIMAL(4, 2) — the precision counts the significant digits written, the scale
 * the digits after the point. */
static int lit_decimal(sql_parser *P, const sql_token *t, fr_value *v)
{
    int digits = 0, scale = 0;
    bool after_point = false, significant = false;
    fr_i128 x = 0;
    for (size_t k = 0; k < t->n; k++) {
        char c = t->p[k];
        if (c == '.') {
            after_point = true;
            continue;
        }
        if (after_point) scale++;
        if (c != '0') significant = true;
        if (!significant) continue;
        if (++digits > FR_DECIMAL_PRECISION_MAX)
            return sql_p_fail(P, FR_ERANGE, t->pos, "decimal literal has more than %d digits",
                              FR_DECIMAL_PRECISION_MAX);
        x = x * 10 + (c - '0');
    }
    if (scale > FR_DECIMAL_PRECISION_MAX)
        return sql_p_fail(P, FR_ERANGE, t->pos, "decimal literal has more than %d digits",
                          FR_DECIMAL_PRECISION_MAX);
    int precision = digits > scale ? digits : scale;
    if (precision == 0) precision = 1;
    memset(v, 0, sizeof *v);
    v->type = literal_type(fr_type_decimal(precision, scale));
    v->v.d = x;
    return 0;
}

static int lit_float(sql_parser *P, const sql_token *t, fr_value *v)
{
    char *s = fr_arena_strndup(P->arena, t->p, t->n);
    if (!s) return sql_p_fail(P, FR_ENOMEM, t->pos, "out of memory while parsing");
    errno = 0;
    double d = strtod(s, NULL);
    if (isinf(d))
        return sql_p_fail(P, FR_ERANGE, t->pos, "number %s is out of range for DOUBLE", s);
    memset(v, 0, sizeof *v);
    v->type = literal_type(fr_type_of(FR_T_DOUBLE));
    v->v.f = d;
    return 0;
}

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* X'0A1B': an even number of hex digits. */
static int lit_bytes(sql_parser *P, const sql_token *t, fr_value *v)
{
    const char *h = t->p + 2;
    size_t n = t->n - 3;
    if (n % 2)
        return sql_p_fail(P, FR_ESYNTAX, t->pos,
                          "bytes literal needs an even number of hex digits, has %zu", n);
    uint8_t *b = sql_p_alloc(P, n / 2);
    if (!b) return P->rc;
    for (size_t i = 0; i < n; i += 2) {
        int hi = hex_digit(h[i]), lo = hex_digit(h[i + 1]);
        if (hi < 0 || lo < 0)
            return sql_p_fail(P, FR_ESYNTAX, t->pos,
                              "bytes literal holds a character that is not a hex digit");
        b[i / 2] = (uint8_t)(hi << 4 | lo);
    }
    *v = fr_value_str(literal_type(fr_type_of(FR_T_BYTES)), b, n / 2);
    return 0;
}

/* Digits after the point in "10:00:00.123" (0 when none). */
static int fraction_digits(const char *s, size_t n)
{
    const char *dot = memchr(s, '.', n);
    if (!dot) return 0;
    int k = 0;
    for (const char *c = dot + 1; c < s + n && *c >= '0' && *c <= '9'; c++) k++;
    return k;
}

/* DATE '...', TIME '...', TIMESTAMP '...', TIMESTAMP_LTZ '...': the current token is the
 * string; id the type named before it. */
static int lit_temporal(sql_parser *P, fr_type_id id, sql_pos pos, fr_value *v)
{
    const char *s;
    size_t n;
    FR_TRY(sql_p_string(P, &P->cur, &s, &n));
    fr_type t = fr_type_of(FR_T_DATE);
    if (id != FR_T_DATE) {
        int p = fraction_digits(s, n);
        if (p > FR_TIME_PRECISION_MAX)
            return sql_p_fail(P, FR_EINVAL, P->cur.pos,
                              "'%s' has more than %d fractional digits", s,
                              FR_TIME_PRECISION_MAX);
        t = fr_type_time_like(id, p);
    }
    t.nullable = false;
    fr_error e2 = {0};
    if (fr_value_parse(s, n, &t, v, &e2) < 0) {
        char tn[64];
        fr_type_format(&t, false, tn, sizeof tn);
        return sql_p_fail(P, FR_EINVAL, P->cur.pos, "'%.64s' is not a valid %s literal: %s", s,
                          tn, e2.msg);
    }
    v->type = t;
    (void)pos;
    sql_p_advance(P);
    return 0;
}

static int p_literal_token(sql_parser *P, fr_expr **out)
{
    const sql_token t = P->cur;
    fr_value v;
    switch (t.kind) {
    case SQL_T_INTEGER: FR_TRY(lit_integer(P, &t, &v)); break;
    case SQL_T_DECIMAL: FR_TRY(lit_decimal(P, &t, &v)); break;
    case SQL_T_FLOAT: FR_TRY(lit_float(P, &t, &v)); break;
    case SQL_T_BYTES: FR_TRY(lit_bytes(P, &t, &v)); break;
    case SQL_T_STRING: {
        const char *s;
        size_t n;
        FR_TRY(sql_p_string(P, &t, &s, &n));
        v = fr_value_str(literal_type(fr_type_of(FR_T_STRING)), s, n);
        break;
    }
    default: assert(!"not a literal token");
    }
    sql_p_advance(P);
    *out = new_literal(P, &v, t.pos);
    return *out ? 0 : P->rc;
}

/* -literal folds into a negative literal (so -2147483648 is an INT and a VALUES list of
 * negative numbers needs no evaluation). Returns false when e is not a numeric literal or
 * the negation does not fit its type. */
static bool fold_negation(fr_expr *e)
{
    if (e->kind != FR_EX_LITERAL || e->value.is_null) return false;
    fr_value *v = &e->value;
    switch (v->type.id) {
    case FR_T_INT:
    case FR_T_BIGINT:
        if (v->v.i == INT64_MIN) return false;
        v->v.i = -v->v.i;
        v->type.id = v->v.i >= INT32_MIN && v->v.i <= INT32_MAX ? FR_T_INT : FR_T_BIGINT;
        return true;
    case FR_T_DECIMAL:
        v->v.d = -v->v.d;
        if (v->type.scale == 0 && v->v.d == (fr_i128)INT64_MIN) {
            int64_t i = INT64_MIN;
            memset(&v->v, 0, sizeof v->v);
            v->v.i = i;
            v->type = literal_type(fr_type_of(FR_T_BIGINT));
        }
        return true;
    case FR_T_DOUBLE:
        v->v.f = -v->v.f;
        return true;
    default:
        return false;
    }
}

/* ---- the grammar ----------------------------------------------------------------------- */

/* One level of the grammar: parses an expression of that level or above into *out, its
 * depth (the longest path from it to a leaf) in *d. */
typedef int (*p_level_fn)(sql_parser *P, fr_expr **out, int *d);

static int p_expr_d(sql_parser *P, fr_expr **out, int *d);
static int p_not(sql_parser *P, fr_expr **out, int *d);
static int p_concat(sql_parser *P, fr_expr **out, int *d);
static int p_unary(sql_parser *P, fr_expr **out, int *d);

/* Parser recursion guard: every path that recurses passes through enter(). */
static int enter(sql_parser *P)
{
    if (++P->depth > FR_EXPR_DEPTH_MAX)
        return sql_p_fail(P, FR_ELIMIT, P->cur.pos, "expression nested deeper than %d levels",
                          FR_EXPR_DEPTH_MAX);
    return 0;
}

/* A growing list of operands in the arena, with the depth of the deepest. */
typedef struct p_list {
    fr_expr **args;
    int n, cap, depth;
} p_list;

static int list_push(sql_parser *P, p_list *l, fr_expr *e, int d)
{
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 8;
        fr_expr **bigger = sql_p_alloc(P, sizeof *bigger * (size_t)cap);
        if (!bigger) return P->rc;
        if (l->n) memcpy(bigger, l->args, sizeof *bigger * (size_t)l->n);
        l->args = bigger;
        l->cap = cap;
    }
    l->args[l->n++] = e;
    if (d > l->depth) l->depth = d;
    return 0;
}

/* Parses one expression onto the list. */
static int list_expr(sql_parser *P, p_list *l)
{
    fr_expr *e;
    int d;
    FR_TRY(p_expr_d(P, &e, &d));
    return list_push(P, l, e, d);
}

/* A node of kind holding the list's operands, one level above the deepest. */
static int list_node(sql_parser *P, fr_expr_kind kind, sql_pos pos, const p_list *l,
                     fr_expr **out, int *d)
{
    fr_expr *e = new_node(P, kind, FR_OP_NONE, 0, pos);
    if (!e) return P->rc;
    e->nargs = l->n;
    e->args = l->args;
    *out = e;
    *d = l->depth + 1;
    return check_depth(P, *d, pos);
}

/* CASE [operand] WHEN w THEN t ... [ELSE x] END; CASE is behind. */
static int p_case(sql_parser *P, sql_pos pos, fr_expr **out, int *d)
{
    p_list l = {0};
    bool simple = !sql_tok_is(&P->cur, "WHEN");
    if (simple && (sql_tok_is(&P->cur, "END") || sql_tok_is(&P->cur, "ELSE")))
        return sql_p_expected(P, "WHEN after CASE");
    if (simple) FR_TRY(list_expr(P, &l));
    if (!sql_tok_is(&P->cur, "WHEN")) return sql_p_expected(P, "WHEN");
    while (sql_p_accept(P, "WHEN")) {
        FR_TRY(list_expr(P, &l));
        FR_TRY(sql_p_expect(P, "THEN"));
        FR_TRY(list_expr(P, &l));
    }
    bool has_else = sql_p_accept(P, "ELSE");
    if (has_else) FR_TRY(list_expr(P, &l));
    if (!sql_p_accept(P, "END"))
        return sql_p_expected(P, has_else ? "END to close CASE" : "WHEN, ELSE or END");
    FR_TRY(list_node(P, FR_EX_CASE, pos, &l, out, d));
    (*out)->case_operand = simple;
    (*out)->case_else = has_else;
    return 0;
}

/* func(args): the '(' is current. The argument count is checked here, the types when
 * binding. */
static int p_function(sql_parser *P, fr_expr_func func, sql_pos pos, fr_expr **out, int *d)
{
    sql_p_advance(P);
    p_list l = {0};
    if (P->cur.kind != SQL_T_RPAREN) {
        do {
            FR_TRY(list_expr(P, &l));
        } while (sql_p_accept_tok(P, SQL_T_COMMA));
    }
    char what[64], msg[128];
    snprintf(what, sizeof what, "',' or ')' after an argument of %s", fr_expr_func_name(func));
    FR_TRY(sql_p_expect_tok(P, SQL_T_RPAREN, what));
    if (!fr_expr_func_arity(func, l.n, msg, sizeof msg))
        return sql_p_fail(P, FR_ESYNTAX, pos, "%s", msg);
    FR_TRY(list_node(P, FR_EX_FUNC, pos, &l, out, d));
    (*out)->func = func;
    return 0;
}

static int p_cast(sql_parser *P, sql_pos pos, fr_expr **out, int *d)
{
    FR_TRY(sql_p_expect_tok(P, SQL_T_LPAREN, "'(' after CAST"));
    fr_expr *arg;
    int da;
    FR_TRY(p_expr_d(P, &arg, &da));
    FR_TRY(sql_p_expect(P, "AS"));
    fr_type to;
    FR_TRY(sql_p_type(P, &to));
    FR_TRY(sql_p_expect_tok(P, SQL_T_RPAREN, "')' to close CAST"));
    fr_expr *e = new_node(P, FR_EX_CAST, FR_OP_NONE, 1, pos);
    if (!e) return P->rc;
    e->args[0] = arg;
    e->cast_type = to;
    *out = e;
    *d = da + 1;
    return check_depth(P, *d, pos);
}

/* COUNT(*), COUNT([DISTINCT] e), SUM, MIN, MAX, AVG([DISTINCT] e): the '(' is current. */
static int p_aggregate(sql_parser *P, fr_expr_agg agg, sql_pos pos, fr_expr **out, int *d)
{
    sql_p_advance(P);
    bool distinct = sql_p_accept(P, "DISTINCT");
    fr_expr *arg = NULL;
    int da = 0;
    if (!distinct && P->cur.kind == SQL_T_STAR) {
        if (agg != FR_AGGFN_COUNT)
            return sql_p_fail(P, FR_ESYNTAX, P->cur.pos, "%s(*) is not allowed: only COUNT(*) "
                              "counts rows", fr_expr_agg_name(agg));
        sql_p_advance(P);
    } else {
        FR_TRY(p_expr_d(P, &arg, &da));
    }
    FR_TRY(sql_p_expect_tok(P, SQL_T_RPAREN, "')' to close the aggregate function"));
    fr_expr *e = new_node(P, FR_EX_AGGREGATE, FR_OP_NONE, arg ? 1 : 0, pos);
    if (!e) return P->rc;
    if (arg) e->args[0] = arg;
    e->agg = agg;
    e->distinct = distinct;
    *out = e;
    *d = da + 1;
    return check_depth(P, *d, pos);
}

/* The aggregate function a word names, or FR_AGGFN_NONE. */
static fr_expr_agg agg_of(const sql_token *t)
{
    static const fr_expr_agg aggs[] = {FR_AGGFN_COUNT, FR_AGGFN_SUM, FR_AGGFN_MIN, FR_AGGFN_MAX,
                                       FR_AGGFN_AVG};
    for (size_t i = 0; i < sizeof aggs / sizeof aggs[0]; i++)
        if (sql_tok_is(t, fr_expr_agg_name(aggs[i]))) return aggs[i];
    return FR_AGGFN_NONE;
}

/* A word in expression position: TRUE, FALSE, NULL, CAST(...), CASE ... END, a typed
 * literal (DATE '...'), an aggregate or scalar function call, or a column name. */
static int p_word(sql_parser *P, fr_expr **out, int *d)
{
    const sql_token t = P->cur;
    fr_value v;
    memset(&v, 0, sizeof v);
    *d = 1;
    if (sql_tok_is(&t, "TRUE") || sql_tok_is(&t, "FALSE")) {
        v.type = literal_type(fr_type_of(FR_T_BOOLEAN));
        v.v.b = sql_tok_is(&t, "TRUE");
        sql_p_advance(P);
        *out = new_literal(P, &v, t.pos);
        return *out ? 0 : P->rc;
    }
    if (sql_tok_is(&t, "NULL")) {
        /* A NULL literal takes the type its context asks for when bound. */
        v = fr_value_null(fr_type_of(FR_T_BOOLEAN));
        sql_p_advance(P);
        *out = new_literal(P, &v, t.pos);
        return *out ? 0 : P->rc;
    }
    if (sql_tok_is(&t, "CAST")) {
        sql_p_advance(P);
        return p_cast(P, t.pos, out, d);
    }
    if (sql_tok_is(&t, "CASE")) {
        sql_p_advance(P);
        return p_case(P, t.pos, out, d);
    }
    static const struct {
        const char *word;
        fr_type_id id;
    } typed[] = {{"DATE", FR_T_DATE}, {"TIME", FR_T_TIME}, {"TIMESTAMP", FR_T_TIMESTAMP},
                 {"TIMESTAMP_LTZ", FR_T_TIMESTAMP_LTZ}};
    for (size_t i = 0; i < sizeof typed / sizeof typed[0]; i++) {
        if (sql_tok_is(&t, typed[i].word) && sql_p_peek2(P)->kind == SQL_T_STRING) {
            sql_p_advance(P);
            FR_TRY(lit_temporal(P, typed[i].id, t.pos, &v));
            *out = new_literal(P, &v, t.pos);
            return *out ? 0 : P->rc;
        }
    }
    if (fr_expr_word_reserved(t.p, t.n)) return sql_p_expected(P, "an expression");
    if (sql_p_peek2(P)->kind == SQL_T_LPAREN && agg_of(&t) != FR_AGGFN_NONE) {
        sql_p_advance(P);
        return p_aggregate(P, agg_of(&t), t.pos, out, d);
    }
    fr_expr_func func = fr_expr_func_lookup(t.p, t.n);
    if (sql_p_peek2(P)->kind == SQL_T_LPAREN && func != FR_FN_NONE) {
        sql_p_advance(P);
        return p_function(P, func, t.pos, out, d);
    }
    if (sql_p_peek2(P)->kind == SQL_T_LPAREN) {
        char w[64];
        snprintf(w, sizeof w, "%.*s", (int)(t.n < 40 ? t.n : 40), t.p);
        return sql_p_fail(P, FR_EUNSUPPORTED, t.pos, "unknown function '%s'", w);
    }
    sql_ident name;
    FR_TRY(sql_p_name(P, "a column name", false, &name));
    fr_expr *e = new_node(P, FR_EX_COLUMN, FR_OP_NONE, 0, t.pos);
    if (!e) return P->rc;
    e->name = name.s;
    *out = e;
    return 0;
}

static int p_primary(sql_parser *P, fr_expr **out, int *d)
{
    *d = 1;
    switch (P->cur.kind) {
    case SQL_T_INTEGER:
    case SQL_T_DECIMAL:
    case SQL_T_FLOAT:
    case SQL_T_STRING:
    case SQL_T_BYTES:
        return p_literal_token(P, out);
    case SQL_T_LPAREN:
        sql_p_advance(P);
        FR_TRY(p_expr_d(P, out, d));
        return sql_p_expect_tok(P, SQL_T_RPAREN, "')'");
    case SQL_T_IDENT:
        return p_word(P, out, d);
    case SQL_T_QIDENT: {
        sql_ident name;
        sql_pos pos = P->cur.pos;
        FR_TRY(sql_p_name(P, "a column name", false, &name));
        fr_expr *e = new_node(P, FR_EX_COLUMN, FR_OP_NONE, 0, pos);
        if (!e) return P->rc;
        e->name = name.s;
        *out = e;
        return 0;
    }
    default:
        return sql_p_expected(P, "an expression");
    }
}

/* A prefix operator at the current token: its operand is parsed with `operand` one level
 * deeper and wrapped in a unary node of op, unless op is FR_OP_NONE (a unary plus) or the
 * operand is a numeric literal that takes the minus itself. */
static int p_prefix(sql_parser *P, fr_expr_op op, p_level_fn operand, fr_expr **out, int *d)
{
    sql_pos pos = P->cur.pos;
    sql_p_advance(P);
    FR_TRY(enter(P));
    fr_expr *arg;
    int rc = operand(P, &arg, d);
    P->depth--;
    if (rc < 0) return rc;
    if (op == FR_OP_NONE || (op == FR_OP_NEG && fold_negation(arg))) {
        *out = arg;
        return 0;
    }
    fr_expr *e = new_node(P, FR_EX_UNARY, op, 1, pos);
    if (!e) return P->rc;
    e->args[0] = arg;
    *out = e;
    *d += 1;
    return check_depth(P, *d, pos);
}

static int p_unary(sql_parser *P, fr_expr **out, int *d)
{
    if (P->cur.kind == SQL_T_PLUS) return p_prefix(P, FR_OP_NONE, p_unary, out, d);
    if (P->cur.kind == SQL_T_MINUS) return p_prefix(P, FR_OP_NEG, p_unary, out, d);
    return p_primary(P, out, d);
}

/* The binary operator op at the current token and its right operand (parsed with operand),
 * joined to the left operand *l into a new *l. */
static int p_binary_rhs(sql_parser *P, fr_expr_op op, p_level_fn operand, fr_expr **l, int *dl)
{
    sql_pos pos = P->cur.pos;
    sql_p_advance(P);
    fr_expr *r;
    int dr;
    FR_TRY(operand(P, &r, &dr));
    return make_binary(P, op, pos, l, dl, r, dr);
}

/* One left-associative level: operands parsed with `operand`, joined by the operators that
 * op_of maps tokens to (FR_OP_NONE ends the level). */
static int p_left_assoc(sql_parser *P, fr_expr_op (*op_of)(sql_tok_kind), p_level_fn operand,
                        fr_expr **out, int *d)
{
    FR_TRY(operand(P, out, d));
    for (fr_expr_op op; (op = op_of(P->cur.kind)) != FR_OP_NONE;)
        FR_TRY(p_binary_rhs(P, op, operand, out, d));
    return 0;
}

static fr_expr_op mul_op(sql_tok_kind k)
{
    switch (k) {
    case SQL_T_STAR: return FR_OP_MUL;
    case SQL_T_SLASH: return FR_OP_DIV;
    case SQL_T_PERCENT: return FR_OP_MOD;
    default: return FR_OP_NONE;
    }
}

static fr_expr_op add_op(sql_tok_kind k)
{
    switch (k) {
    case SQL_T_PLUS: return FR_OP_ADD;
    case SQL_T_MINUS: return FR_OP_SUB;
    default: return FR_OP_NONE;
    }
}

static fr_expr_op concat_op(sql_tok_kind k)
{
    return k == SQL_T_CONCAT ? FR_OP_CONCAT : FR_OP_NONE;
}

static int p_mul(sql_parser *P, fr_expr **out, int *d)
{
    return p_left_assoc(P, mul_op, p_unary, out, d);
}

static int p_add(sql_parser *P, fr_expr **out, int *d)
{
    return p_left_assoc(P, add_op, p_mul, out, d);
}

static int p_concat(sql_parser *P, fr_expr **out, int *d)
{
    return p_left_assoc(P, concat_op, p_add, out, d);
}

static fr_expr_op compare_op(sql_tok_kind k)
{
    switch (k) {
    case SQL_T_EQ: return FR_OP_EQ;
    case SQL_T_NE: return FR_OP_NE;
    case SQL_T_LT: return FR_OP_LT;
    case SQL_T_LE: return FR_OP_LE;
    case SQL_T_GT: return FR_OP_GT;
    case SQL_T_GE: return FR_OP_GE;
    default: return FR_OP_NONE;
    }
}

/* (e1, e2, ...) after IN: the list becomes args[1..]. */
static int p_in_list(sql_parser *P, sql_pos pos, bool negated, fr_expr **l, int *dl)
{
    FR_TRY(sql_p_expect_tok(P, SQL_T_LPAREN, "'(' after IN"));
    p_list list = {0};
    FR_TRY(list_push(P, &list, *l, *dl));
    do {
        FR_TRY(list_expr(P, &list));
    } while (sql_p_accept_tok(P, SQL_T_COMMA));
    FR_TRY(sql_p_expect_tok(P, SQL_T_RPAREN, "',' or ')' in the IN list"));
    FR_TRY(list_node(P, FR_EX_IN, pos, &list, l, dl));
    (*l)->negated = negated;
    return 0;
}

/* [NOT] IN, [NOT] BETWEEN, [NOT] LIKE after a left operand. */
static int p_pred_suffix(sql_parser *P, fr_expr **l, int *dl)
{
    sql_pos pos = P->cur.pos;
    bool negated = sql_p_accept(P, "NOT");
    if (sql_p_accept(P, "IN")) return p_in_list(P, pos, negated, l, dl);
    fr_expr *a, *b = NULL;
    int da, db = 0;
    fr_expr *e;
    if (sql_p_accept(P, "BETWEEN")) {
        FR_TRY(p_concat(P, &a, &da));
        FR_TRY(sql_p_expect(P, "AND"));
        FR_TRY(p_concat(P, &b, &db));
        e = new_node(P, FR_EX_BETWEEN, FR_OP_NONE, 3, pos);
        if (!e) return P->rc;
        e->args[2] = b;
    } else if (sql_p_accept(P, "LIKE")) {
        FR_TRY(p_concat(P, &a, &da));
        if (sql_tok_is(&P->cur, "ESCAPE"))
            return sql_p_fail(P, FR_EUNSUPPORTED, P->cur.pos, "LIKE ... ESCAPE is not supported");
        e = new_node(P, FR_EX_LIKE, FR_OP_NONE, 2, pos);
        if (!e) return P->rc;
    } else {
        return sql_p_expected(P, "IN, BETWEEN or LIKE after NOT");
    }
    e->negated = negated;
    e->args[0] = *l;
    e->args[1] = a;
    int m = *dl > da ? *dl : da;
    *dl = 1 + (m > db ? m : db);
    *l = e;
    return check_depth(P, *dl, pos);
}

/* NOT right after an operand can only start NOT IN, NOT BETWEEN or NOT LIKE (anything else
 * is reported there). */
static bool at_pred_suffix(sql_parser *P)
{
    return sql_tok_is(&P->cur, "IN") || sql_tok_is(&P->cur, "BETWEEN") ||
           sql_tok_is(&P->cur, "LIKE") || sql_tok_is(&P->cur, "NOT");
}

static int p_pred(sql_parser *P, fr_expr **out, int *d)
{
    FR_TRY(p_concat(P, out, d));
    for (;;) {
        sql_pos pos = P->cur.pos;
        fr_expr_op op = compare_op(P->cur.kind);
        if (op != FR_OP_NONE) {
            FR_TRY(p_binary_rhs(P, op, p_concat, out, d));
        } else if (sql_tok_is(&P->cur, "IS")) {
            sql_p_advance(P);
            bool negated = sql_p_accept(P, "NOT");
            FR_TRY(sql_p_expect(P, "NULL"));
            fr_expr *e = new_node(P, FR_EX_IS_NULL, FR_OP_NONE, 1, pos);
            if (!e) return P->rc;
            e->negated = negated;
            e->args[0] = *out;
            *out = e;
            *d += 1;
            FR_TRY(check_depth(P, *d, pos));
        } else if (at_pred_suffix(P)) {
            FR_TRY(p_pred_suffix(P, out, d));
        } else {
            return 0;
        }
    }
}

static int p_not(sql_parser *P, fr_expr **out, int *d)
{
    if (!sql_tok_is(&P->cur, "NOT")) return p_pred(P, out, d);
    return p_prefix(P, FR_OP_NOT, p_not, out, d);
}

/* Operands of a chain of one associative operator, built into a balanced tree. */
typedef struct chain {
    fr_expr **terms;
    int *depths;
    sql_pos *ops; /* ops[i] sits between terms[i] and terms[i + 1] */
    int n, cap;
} chain;

static int chain_push(sql_parser *P, chain *c, fr_expr *e, int d, sql_pos op_pos)
{
    if (c->n == c->cap) {
        int cap = c->cap ? c->cap * 2 : 8;
        fr_expr **t = sql_p_alloc(P, sizeof *t * (size_t)cap);
        int *dd = sql_p_alloc(P, sizeof *dd * (size_t)cap);
        sql_pos *o = sql_p_alloc(P, sizeof *o * (size_t)cap);
        if (!t || !dd || !o) return P->rc;
        if (c->n) {
            memcpy(t, c->terms, sizeof *t * (size_t)c->n);
            memcpy(dd, c->depths, sizeof *dd * (size_t)c->n);
            memcpy(o, c->ops, sizeof *o * (size_t)c->n);
        }
        c->terms = t;
        c->depths = dd;
        c->ops = o;
        c->cap = cap;
    }
    if (c->n > 0) c->ops[c->n - 1] = op_pos;
    c->terms[c->n] = e;
    c->depths[c->n] = d;
    c->n++;
    return 0;
}

/* Builds terms[lo..hi) into a balanced tree; recursion depth is log2 of the chain. */
static int chain_build(sql_parser *P, const chain *c, fr_expr_op op, int lo, int hi,
                       fr_expr **out, int *d)
{
    if (hi - lo == 1) {
        *out = c->terms[lo];
        *d = c->depths[lo];
        return 0;
    }
    int mid = lo + (hi - lo) / 2;
    fr_expr *r;
    int dr;
    FR_TRY(chain_build(P, c, op, lo, mid, out, d));
    FR_TRY(chain_build(P, c, op, mid, hi, &r, &dr));
    return make_binary(P, op, c->ops[mid - 1], out, d, r, dr);
}

static int p_chain(sql_parser *P, const char *word, fr_expr_op op, p_level_fn next,
                   fr_expr **out, int *d)
{
    FR_TRY(next(P, out, d));
    if (!sql_tok_is(&P->cur, word)) return 0;
    chain c = {0};
    FR_TRY(chain_push(P, &c, *out, *d, P->cur.pos));
    while (sql_tok_is(&P->cur, word)) {
        sql_pos pos = P->cur.pos;
        sql_p_advance(P);
        fr_expr *r;
        int dr;
        FR_TRY(next(P, &r, &dr));
        FR_TRY(chain_push(P, &c, r, dr, pos));
    }
    return chain_build(P, &c, op, 0, c.n, out, d);
}

static int p_and(sql_parser *P, fr_expr **out, int *d)
{
    return p_chain(P, "AND", FR_OP_AND, p_not, out, d);
}

static int p_or(sql_parser *P, fr_expr **out, int *d)
{
    return p_chain(P, "OR", FR_OP_OR, p_and, out, d);
}

static int p_expr_d(sql_parser *P, fr_expr **out, int *d)
{
    FR_TRY(enter(P));
    int rc = p_or(P, out, d);
    P->depth--;
    return rc;
}

int sql_p_expr(sql_parser *P, fr_expr **out)
{
    int d;
    return p_expr_d(P, out, &d);
}
