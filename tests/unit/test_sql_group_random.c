/* test_sql_group_random.c — randomized SELECTs with GROUP BY, HAVING, aggregate functions,
 * DISTINCT, ORDER BY and LIMIT over a log table, each checked against a model written here.
 *
 * The table g (id BIGINT NOT NULL, k1 INT, k2 STRING, v BIGINT, d DOUBLE, m DECIMAL(12, 2),
 * b BOOLEAN) has three buckets (one in a second run, below). It is filled in steps (no row,
 * a few hundred, a few thousand) by INSERTs of random sizes, from small domains so that
 * groups repeat: NULLs in every column but id; strings whose bytewise order is not their
 * order by case or accent ('B' < 'a' < 'zz' < 'é', '' apart from NULL); doubles with 0.0,
 * -0.0, NaN and both infinities, some not exact in binary; a few integers and decimals large
 * enough for sums past 32 bits. After each step random queries run, and their results are
 * compared with the model's:
 *   - GROUP BY 1 to 3 keys (columns, or v % 3) with 1 to 6 aggregates (COUNT(*), COUNT, SUM,
 *     MIN, MAX, AVG, with or without DISTINCT, of columns or expressions: k1 + v, m * 0.0001
 *     whose AVG rounds halves at scale 6, ...), items that add one to a key or an aggregate,
 *     a random WHERE (pushed down to the log) and HAVING (on aggregates and keys, AND / OR),
 *     ordered by every group key (ASC or DESC, NULLS FIRST, LAST or the default; by
 *     expression, position or alias), sometimes first by an aggregate or an item: compared
 *     row by row, also under a LIMIT; without ORDER BY, compared as a set (under a LIMIT, a
 *     subset of the right size);
 *   - aggregates without GROUP BY: one row, also when no row matches (none when HAVING
 *     says so);
 *   - SELECT DISTINCT, ordered by every item, by some, or not at all;
 *   - plain ORDER BY ... LIMIT, with * among the items or not, by keys that need not be
 *     total: each block of rows with equal keys must hold the table's rows with these keys
 *     (some of them at the cut of the LIMIT), and keep read order as far as the model knows
 *     it: the rows of one INSERT go to one bucket in order, so among equal keys they come in
 *     that order, and at the cut the first of them are kept;
 *   - aliases, some named like columns of the table (ORDER BY takes the alias then);
 *   - the result's column names ($1, $2 for names taken in any case) and types (SUM of INT
 *     is BIGINT, AVG of DECIMAL(p, s) is DECIMAL(38, max(s, 6)), MIN keeps its argument's
 *     type, COUNT(*) + 1 is BIGINT NOT NULL, ...);
 *   - EXPLAIN of some of these queries succeeds.
 * Which bucket an INSERT goes to is not modelled, so neither is the read order across
 * INSERTs. The same kinds of queries run again over a table of one bucket, whose read order
 * is the order of writing: there the order of rows with equal sort keys, of groups without
 * ORDER BY (the order of their first rows) and of DISTINCT rows is compared too.
 *
 * A SUM of doubles depends on the order of its terms: SUM and AVG of doubles are compared
 * within a tolerance the model computes from the terms, and never sorted by; every other
 * value exactly (-0.0 equals 0.0, NaN equals NaN).
 *
 * test_bare_column_names checks the one naming rule the random queries leave out (a bare
 * column written in another case than the table's), with and without aggregates.
 *
 * FIRTH_TEST_SEED replays a run; the seed is printed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "sql_testkit.h"
#include "test_rng.h"

#define ROWS_MAX 7000       /* rows of the table after the last step */
#define CHUNK_ROWS_MAX 200  /* rows of one INSERT */
#define KEYS_MAX 3          /* GROUP BY expressions, DISTINCT items */
#define AGGS_MAX 10         /* aggregates of a query: items, HAVING, ORDER BY */
#define ITEMS_MAX 12
#define COLS_MAX 24         /* of a result (items, * giving every column) */
#define ORDER_MAX 8
#define PREDS_MAX 16
#define STR_BYTES_MAX 15

/* ---- values ------------------------------------------------------------------------------ */

typedef enum vkind { V_NULL, V_INT, V_DBL, V_DEC, V_STR, V_BOOL } vkind;

/* A value of the model, or one read from a result. */
typedef struct mval {
    vkind kind;
    int64_t i;    /* V_INT; V_BOOL: 0 or 1 */
    double f;     /* V_DBL */
    double tol;   /* V_DBL of the model: how far the engine's value may be from f */
    fr_i128 dec;  /* V_DEC: unscaled */
    int scale;    /* V_DEC */
    size_t len;   /* V_STR: the value's length (only STR_BYTES_MAX bytes are kept) */
    char s[STR_BYTES_MAX + 1];
} mval;

static mval mv_null(void) { return (mval){.kind = V_NULL}; }
static mval mv_int(int64_t i) { return (mval){.kind = V_INT, .i = i}; }
static mval mv_bool(bool b) { return (mval){.kind = V_BOOL, .i = b}; }
static mval mv_dbl(double f, double tol) { return (mval){.kind = V_DBL, .f = f, .tol = tol}; }
static mval mv_dec(fr_i128 unscaled, int scale)
{
    return (mval){.kind = V_DEC, .dec = unscaled, .scale = scale};
}

static mval mv_str(const void *p, size_t n)
{
    mval v = {.kind = V_STR, .len = n};
    memcpy(v.s, p, n < STR_BYTES_MAX ? n : STR_BYTES_MAX);
    return v;
}

static bool is_null(const mval *v) { return v->kind == V_NULL; }

/* SQL's order of two non-null values: numbers by value (-0.0 equals 0.0; NaN is above every
 * number and equals itself), strings bytewise, false before true. Values of different kinds
 * (only in a wrong result) order by kind. */
static int value_cmp(const mval *a, const mval *b)
{
    if (a->kind != b->kind) return a->kind < b->kind ? -1 : 1;
    switch (a->kind) {
    case V_INT:
    case V_BOOL: return (a->i > b->i) - (a->i < b->i);
    case V_DBL: {
        bool na = isnan(a->f), nb = isnan(b->f);
        if (na || nb) return (int)na - (int)nb;
        return (a->f > b->f) - (a->f < b->f);
    }
    case V_DEC:
        if (a->scale != b->scale) return a->scale < b->scale ? -1 : 1;
        return (a->dec > b->dec) - (a->dec < b->dec);
    case V_STR: {
        size_t n = a->len < b->len ? a->len : b->len;
        int c = memcmp(a->s, b->s, n < STR_BYTES_MAX ? n : STR_BYTES_MAX);
        if (c != 0) return c < 0 ? -1 : 1;
        return (a->len > b->len) - (a->len < b->len);
    }
    default: return 0;
    }
}

/* The order of ORDER BY: NULLs where nulls_first says, values by value_cmp, reversed by
 * desc. */
static int sort_cmp(const mval *a, const mval *b, bool desc, bool nulls_first)
{
    if (is_null(a) || is_null(b)) {
        if (is_null(a) && is_null(b)) return 0;
        return is_null(a) == nulls_first ? -1 : 1;
    }
    int c = value_cmp(a, b);
    return desc ? -c : c;
}

/* Whether the engine's value `got` is the model's `want`. */
static bool same_value(const mval *got, const mval *want)
{
    if (got->kind != want->kind) return false;
    if (want->kind == V_DBL) {
        if (isnan(want->f) || isnan(got->f)) return isnan(want->f) && isnan(got->f);
        return got->f == want->f || fabs(got->f - want->f) <= want->tol;
    }
    return value_cmp(got, want) == 0;
}

static void value_print(fr_buf *out, const mval *v)
{
    char t[64];
    switch (v->kind) {
    case V_NULL: fr_buf_printf(out, NULL, "NULL"); break;
    case V_INT: fr_buf_printf(out, NULL, "%lld", (long long)v->i); break;
    case V_BOOL: fr_buf_printf(out, NULL, "%s", v->i ? "true" : "false"); break;
    case V_DBL: fr_buf_printf(out, NULL, "%.17g", v->f); break;
    case V_DEC:
        fr_decimal_format(v->dec, v->scale, t, sizeof t);
        fr_buf_printf(out, NULL, "%s", t);
        break;
    case V_STR:
        fr_buf_printf(out, NULL, "'%.*s'%s",
                      (int)(v->len < STR_BYTES_MAX ? v->len : STR_BYTES_MAX), v->s,
                      v->len > STR_BYTES_MAX ? "..." : "");
        break;
    }
}

/* ---- results ----------------------------------------------------------------------------- */

/* Rows of a result (read from the engine, or made by the model), row after row. */
typedef struct result {
    fr_buf header; /* "name TYPE, ..." as the printer of test_sql_exec.c writes it */
    int ncols;
    int64_t nrows, cap;
    mval *cells;
    int64_t *block; /* the model's: the first row of the block of equal sort keys a row is in */
    bool approx[COLS_MAX]; /* the model's: columns compared within a tolerance */
} result;

static void result_init(result *r, int ncols)
{
    memset(r, 0, sizeof *r);
    fr_buf_init(&r->header);
    r->ncols = ncols;
}

static void result_free(result *r)
{
    fr_buf_free(&r->header);
    fr_free(r->cells);
    fr_free(r->block);
}

static mval *cell(const result *r, int64_t row, int col) { return &r->cells[row * r->ncols + col]; }

/* Appends a row of r->ncols values; block as for result.block (-1 for a result read). */
static void result_add(result *r, const mval *values, int64_t block)
{
    if (r->nrows == r->cap) {
        int64_t cap = r->cap ? 2 * r->cap : 64;
        size_t width = (size_t)(r->ncols ? r->ncols : 1);
        r->cells = fr_realloc(r->cells, (size_t)cap * width * sizeof *r->cells);
        r->block = fr_realloc(r->block, (size_t)cap * sizeof *r->block);
        assert_non_null(r->cells);
        assert_non_null(r->block);
        r->cap = cap;
    }
    if (r->ncols) memcpy(cell(r, r->nrows, 0), values, (size_t)r->ncols * sizeof *values);
    r->block[r->nrows++] = block;
}

static mval from_value(const fr_value *v)
{
    if (v->is_null) return mv_null();
    switch (v->type.id) {
    case FR_T_BOOLEAN: return mv_bool(v->v.b);
    case FR_T_TINYINT:
    case FR_T_SMALLINT:
    case FR_T_INT:
    case FR_T_BIGINT: return mv_int(v->v.i);
    case FR_T_FLOAT:
    case FR_T_DOUBLE: return mv_dbl(v->v.f, 0);
    case FR_T_DECIMAL: return mv_dec(v->v.d, v->type.scale);
    case FR_T_CHAR:
    case FR_T_VARCHAR:
    case FR_T_STRING: return mv_str(v->v.s.ptr, v->v.s.len);
    default: fail_msg("a result value of unexpected type %d", (int)v->type.id); return mv_null();
    }
}

static int sink_begin(void *ctx, const fr_schema *schema, fr_error *err)
{
    result *r = ctx;
    r->ncols = fr_schema_num_fields(schema);
    for (int i = 0; i < r->ncols; i++) {
        const fr_field *f = fr_schema_field(schema, i);
        char t[64];
        fr_type_format(&f->type, true, t, sizeof t);
        fr_buf_printf(&r->header, err, "%s%s %s", i ? ", " : "", f->name, t);
    }
    return 0;
}

static int sink_rows(void *ctx, fr_batch *batch, fr_error *err)
{
    (void)err;
    result *r = ctx;
    assert_int_equal(fr_batch_num_columns(batch), r->ncols);
    mval row[COLS_MAX];
    assert_true(r->ncols <= COLS_MAX);
    for (int64_t i = 0; i < fr_batch_num_rows(batch); i++) {
        for (int c = 0; c < r->ncols; c++) {
            fr_value v;
            fr_column_get(fr_batch_column(batch, c), i, &v);
            row[c] = from_value(&v);
        }
        result_add(r, row, -1);
    }
    fr_batch_free(batch);
    return 0;
}

static void result_print(fr_buf *out, const char *title, const result *r)
{
    fr_buf_printf(out, NULL, "--- %s: [%.*s], %lld rows\n", title, (int)r->header.len,
                  r->header.data ? (const char *)r->header.data : "", (long long)r->nrows);
    for (int64_t i = 0; i < r->nrows && i < 60; i++) {
        for (int c = 0; c < r->ncols; c++) {
            if (c) fr_buf_printf(out, NULL, " | ");
            value_print(out, cell(r, i, c));
        }
        fr_buf_printf(out, NULL, "%s\n", r->block[i] >= 0 && r->block[i] != i ? "   (tie)" : "");
    }
    if (r->nrows > 60) fr_buf_printf(out, NULL, "...\n");
}

/* ---- the engine under test --------------------------------------------------------------- */

static char dir[1024];
static fr_engine *engine;
static fr_sql_session *session;
static uint64_t run_seed;
static const char *run_name; /* "3 buckets", "1 bucket": which run, for messages */
static int query_no;         /* of the run, for messages */

static int setup(void **state)
{
    (void)state;
    return sql_tk_open(dir, sizeof dir, "test_sql_group_random", &engine, &session);
}

static int teardown(void **state)
{
    (void)state;
    sql_tk_close(dir, engine, session);
    return 0;
}

/* Runs text into r (NULL: results are not wanted); any error fails the test. */
static void exec(const char *text, result *r)
{
    fr_sql_sink sink = {.ctx = r, .begin = sink_begin, .rows = sink_rows};
    fr_error err = {0};
    if (fr_sql_execute(session, text, strlen(text), r ? &sink : NULL, &err) < 0)
        fail_msg("seed %llu, %s, query %d: %s\nfailed: %s", (unsigned long long)run_seed,
                 run_name, query_no, text, err.msg);
}

/* ---- the table and its model ------------------------------------------------------------- */

enum { C_ID, C_K1, C_K2, C_V, C_D, C_M, C_B, NCOLS };

/* What queries select, group and sort by: the columns (in table order, so that a column's
 * term is its index), then expressions over them. */
typedef enum term {
    T_ID, T_K1, T_K2, T_V, T_D, T_M, T_B,   /* the columns */
    T_VMOD3, T_NEGV, T_K1V, T_M6, T_M8, T_ONE, /* expressions */
    NTERMS
} term;

static const struct {
    const char *sql;
    const char *type; /* of the result column */
    vkind kind;
    int scale; /* V_DEC */
} terms[NTERMS] = {
    {"id", "BIGINT NOT NULL", V_INT, 0},
    {"k1", "INT", V_INT, 0},
    {"k2", "STRING", V_STR, 0},
    {"v", "BIGINT", V_INT, 0},
    {"d", "DOUBLE", V_DBL, 0},
    {"m", "DECIMAL(12, 2)", V_DEC, 2},
    {"b", "BOOLEAN", V_BOOL, 0},
    {"v % 3", "BIGINT", V_INT, 0},
    {"v * -1", "BIGINT", V_INT, 0},
    {"k1 + v", "BIGINT", V_INT, 0},
    /* Decimals of scale 6 and 8 (DECIMAL(p1 + p2 + 1, s1 + s2) of a product; 0.0001 is
     * DECIMAL(4, 4)), whose AVG rounds at their own scale, where halves are common. */
    {"m * 0.0001", "DECIMAL(17, 6)", V_DEC, 6},
    {"m * 0.000001", "DECIMAL(19, 8)", V_DEC, 8},
    {"1", "INT NOT NULL", V_INT, 0}, /* as an aggregate's argument */
};

static bool term_is_column(term t) { return (int)t < NCOLS; }

static const char *const k2_domain[] = {"a", "ab", "b", "B", "", "\xc3\xa9" /* é */, "zz"};
#define NK2 ((int)(sizeof k2_domain / sizeof k2_domain[0]))

static mval table[ROWS_MAX][NCOLS];
static int chunk_of[ROWS_MAX]; /* the INSERT that wrote the row */
static int nrows, nchunks;

static mval term_eval(term t, int row)
{
    const mval *r = table[row];
    if (term_is_column(t)) return r[t];
    const mval *v = &r[C_V], *k1 = &r[C_K1];
    switch (t) {
    case T_VMOD3: return is_null(v) ? mv_null() : mv_int(v->i % 3);
    case T_NEGV: return is_null(v) ? mv_null() : mv_int(-v->i);
    case T_K1V: return is_null(v) || is_null(k1) ? mv_null() : mv_int(k1->i + v->i);
    case T_M6:
    case T_M8: return is_null(&r[C_M]) ? mv_null() : mv_dec(r[C_M].dec, terms[t].scale);
    case T_ONE: return mv_int(1);
    default: fail_msg("term %d", (int)t); return mv_null();
    }
}

/* Writes term t as SQL, its column names in upper case when upper (names are looked up in
 * any case). */
static void term_sql(fr_buf *out, term t, bool upper)
{
    for (const char *p = terms[t].sql; *p; p++) {
        char c = *p;
        if (upper && c >= 'a' && c <= 'z') c = (char)(c - 'a' + 'A');
        fr_buf_append(out, &c, 1, NULL);
    }
}

static int pick(int n) { return test_rng_int(0, n - 1); }
static bool chance(int percent) { return test_rng_chance(percent); }

static int sign(void) { return chance(50) ? -1 : 1; }

static void random_row(int id, int chunk)
{
    mval *r = table[id];
    r[C_ID] = mv_int(id);
    r[C_K1] = chance(10) ? mv_null() : mv_int(test_rng_int(-3, 6));
    const char *s = k2_domain[pick(NK2)];
    r[C_K2] = chance(10) ? mv_null() : mv_str(s, strlen(s));
    r[C_V] = chance(15)  ? mv_null()
             : chance(5) ? mv_int(sign() * (1000000000000LL + test_rng_int(0, 99)))
                         : mv_int(test_rng_int(-20, 20));
    static const double special[] = {NAN, INFINITY, -INFINITY, 0.0, -0.0};
    int kind = test_rng_int(0, 99);
    r[C_D] = kind < 15   ? mv_null()
             : kind < 18 ? mv_dbl(special[pick(3)], 0)
             : kind < 28 ? mv_dbl(special[3 + pick(2)], 0)
             : kind < 40 ? mv_dbl(test_rng_int(-50, 50) / 10.0, 0) /* not exact in binary */
                         : mv_dbl(test_rng_int(-40, 40) / 4.0, 0);
    r[C_M] = chance(15) ? mv_null()
             : chance(5) ? mv_dec(sign() * (fr_i128)(test_rng_next() % 1000000000000ULL), 2)
                         : mv_dec(test_rng_int(-500, 500), 2);
    r[C_B] = chance(20) ? mv_null() : mv_bool(chance(50));
    chunk_of[id] = chunk;
}

/* A value of the table as an SQL literal for INSERT. */
static void literal(fr_buf *out, const mval *v)
{
    char t[64];
    switch (v->kind) {
    case V_NULL: fr_buf_printf(out, NULL, "NULL"); break;
    case V_INT: fr_buf_printf(out, NULL, "%lld", (long long)v->i); break;
    case V_BOOL: fr_buf_printf(out, NULL, "%s", v->i ? "TRUE" : "false"); break;
    case V_DBL:
        if (isnan(v->f)) fr_buf_printf(out, NULL, "'NaN'");
        else if (isinf(v->f)) fr_buf_printf(out, NULL, "'%sInfinity'", v->f < 0 ? "-" : "");
        else if (v->f == 0 && signbit(v->f)) fr_buf_printf(out, NULL, "'-0.0'");
        else fr_buf_printf(out, NULL, "%.17e", v->f); /* a DOUBLE literal: read back exactly */
        break;
    case V_DEC:
        fr_decimal_format(v->dec, v->scale, t, sizeof t);
        fr_buf_printf(out, NULL, "%s", t);
        break;
    case V_STR: fr_buf_printf(out, NULL, "'%.*s'", (int)v->len, v->s); break;
    }
}

/* Inserts rows up to `target`, in INSERTs of random sizes. */
static void fill_to(int target)
{
    fr_buf sql;
    fr_buf_init(&sql);
    while (nrows < target) {
        int n = test_rng_int(1, chance(20) ? 5 : CHUNK_ROWS_MAX);
        if (n > target - nrows) n = target - nrows;
        fr_buf_reset(&sql);
        fr_buf_printf(&sql, NULL, "INSERT INTO g VALUES ");
        for (int i = 0; i < n; i++) {
            random_row(nrows + i, nchunks);
            fr_buf_printf(&sql, NULL, "%s(", i ? ", " : "");
            for (int c = 0; c < NCOLS; c++) {
                if (c) fr_buf_printf(&sql, NULL, ", ");
                literal(&sql, &table[nrows + i][c]);
            }
            fr_buf_printf(&sql, NULL, ")");
        }
        fr_buf_append(&sql, "", 1, NULL);
        exec((const char *)sql.data, NULL);
        nrows += n;
        nchunks++;
    }
    fr_buf_free(&sql);
}

/* ---- WHERE ------------------------------------------------------------------------------- */

typedef enum pkind { P_CMP, P_ISNULL, P_BETWEEN, P_AND, P_OR, P_NOT } pkind;
typedef enum cmp_op { OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE, NOPS } cmp_op;
static const char *const op_sql[NOPS] = {"=", "<>", "<", "<=", ">", ">="};

/* Kleene's values. */
enum { K_FALSE, K_TRUE, K_NULL };

typedef struct pnode {
    pkind kind;
    term col;
    cmp_op op;
    bool negated;
    mval a, b; /* constants */
    int l, r;  /* operands of AND, OR, NOT */
} pnode;

typedef struct pred {
    pnode n[PREDS_MAX];
    int count, root; /* root -1: no WHERE */
} pred;

static bool op_holds(cmp_op op, int c)
{
    switch (op) {
    case OP_EQ: return c == 0;
    case OP_NE: return c != 0;
    case OP_LT: return c < 0;
    case OP_LE: return c <= 0;
    case OP_GT: return c > 0;
    default: return c >= 0;
    }
}

/* A constant to compare column c with, and its SQL. */
static mval random_constant(int c, fr_buf *out)
{
    mval v;
    switch (c) {
    case C_ID: v = mv_int(test_rng_int(0, nrows > 0 ? nrows : 1)); break;
    case C_K1: v = mv_int(test_rng_int(-4, 7)); break;
    case C_V: v = chance(5) ? mv_int(2000000000000LL) : mv_int(test_rng_int(-22, 22)); break;
    case C_D:
        if (chance(8)) {
            v = mv_dbl(chance(50) ? NAN : INFINITY, 0);
            fr_buf_printf(out, NULL, "CAST('%s' AS DOUBLE)", isnan(v.f) ? "NaN" : "Infinity");
            return v;
        }
        v = mv_dbl(test_rng_int(-44, 44) / 4.0, 0);
        fr_buf_printf(out, NULL, "%.2f", v.f); /* a DECIMAL literal, compared as DOUBLE */
        return v;
    case C_M: v = mv_dec(test_rng_int(-600, 600), 2); break;
    case C_K2: {
        const char *s = chance(10) ? "c" : k2_domain[pick(NK2)];
        v = mv_str(s, strlen(s));
        break;
    }
    default: v = mv_bool(chance(50)); break;
    }
    literal(out, &v);
    return v;
}

static int pred_add(pred *p, fr_buf *sql, int depth)
{
    int at = p->count++;
    pnode *n = &p->n[at];
    memset(n, 0, sizeof *n);
    int k = depth >= 2 || p->count + 2 >= PREDS_MAX ? pick(10) : test_rng_int(0, 15);
    if (k < 6) {
        n->kind = P_CMP;
        n->col = (term)test_rng_int(0, NCOLS - 1);
        n->op = n->col == T_B ? (cmp_op)pick(2) : (cmp_op)pick(NOPS);
        term_sql(sql, n->col, chance(10));
        fr_buf_printf(sql, NULL, " %s ", op_sql[n->op]);
        n->a = random_constant(n->col, sql);
    } else if (k < 8) {
        n->kind = P_ISNULL;
        n->col = (term)test_rng_int(0, NCOLS - 1);
        n->negated = chance(50);
        term_sql(sql, n->col, false);
        fr_buf_printf(sql, NULL, " IS %sNULL", n->negated ? "NOT " : "");
    } else if (k < 10) {
        static const term cols[] = {T_K1, T_V, T_D, T_M};
        n->kind = P_BETWEEN;
        n->col = cols[pick(4)];
        n->negated = chance(30);
        term_sql(sql, n->col, false);
        fr_buf_printf(sql, NULL, " %sBETWEEN ", n->negated ? "NOT " : "");
        n->a = random_constant(n->col, sql);
        fr_buf_printf(sql, NULL, " AND ");
        n->b = random_constant(n->col, sql);
    } else if (k < 15) {
        n->kind = k < 12 ? P_OR : P_AND;
        fr_buf_printf(sql, NULL, "(");
        int l = pred_add(p, sql, depth + 1);
        fr_buf_printf(sql, NULL, " %s ", n->kind == P_AND ? "AND" : "OR");
        int r = pred_add(p, sql, depth + 1);
        fr_buf_printf(sql, NULL, ")");
        n->l = l;
        n->r = r;
    } else {
        n->kind = P_NOT;
        fr_buf_printf(sql, NULL, "NOT (");
        n->l = pred_add(p, sql, depth + 1);
        fr_buf_printf(sql, NULL, ")");
    }
    return at;
}

/* Maybe a WHERE clause (appended to sql with its keyword). */
static void random_where(pred *p, fr_buf *sql)
{
    p->count = 0;
    p->root = -1;
    if (chance(45)) return;
    fr_buf_printf(sql, NULL, " WHERE ");
    p->root = pred_add(p, sql, 0);
}

static int pred_eval(const pred *p, int at, int row)
{
    const pnode *n = &p->n[at];
    switch (n->kind) {
    case P_CMP: {
        mval v = term_eval(n->col, row);
        if (is_null(&v)) return K_NULL;
        return op_holds(n->op, value_cmp(&v, &n->a)) ? K_TRUE : K_FALSE;
    }
    case P_ISNULL: {
        mval v = term_eval(n->col, row);
        return is_null(&v) != n->negated ? K_TRUE : K_FALSE;
    }
    case P_BETWEEN: {
        mval v = term_eval(n->col, row);
        if (is_null(&v)) return K_NULL;
        bool in = value_cmp(&n->a, &v) <= 0 && value_cmp(&v, &n->b) <= 0;
        return in != n->negated ? K_TRUE : K_FALSE;
    }
    case P_AND: {
        int l = pred_eval(p, n->l, row), r = pred_eval(p, n->r, row);
        if (l == K_FALSE || r == K_FALSE) return K_FALSE;
        return l == K_TRUE && r == K_TRUE ? K_TRUE : K_NULL;
    }
    case P_OR: {
        int l = pred_eval(p, n->l, row), r = pred_eval(p, n->r, row);
        if (l == K_TRUE || r == K_TRUE) return K_TRUE;
        return l == K_FALSE && r == K_FALSE ? K_FALSE : K_NULL;
    }
    default: {
        int l = pred_eval(p, n->l, row);
        return l == K_NULL ? K_NULL : l == K_TRUE ? K_FALSE : K_TRUE;
    }
    }
}

/* The rows the WHERE keeps, in id order; returns how many. */
static int filter_rows(const pred *p, int *out)
{
    int n = 0;
    for (int r = 0; r < nrows; r++)
        if (p->root < 0 || pred_eval(p, p->root, r) == K_TRUE) out[n++] = r;
    return n;
}

/* ---- aggregates -------------------------------------------------------------------------- */

typedef enum agg_fn { A_COUNT_STAR, A_COUNT, A_SUM, A_MIN, A_MAX, A_AVG } agg_fn;
static const char *const agg_names[] = {"COUNT", "COUNT", "SUM", "MIN", "MAX", "AVG"};

typedef struct agg {
    agg_fn fn;
    bool distinct;
    term arg;
    bool upper;
    char text[48]; /* as written */
} agg;

static void agg_text(agg *a)
{
    fr_buf t;
    fr_buf_init(&t);
    if (a->fn == A_COUNT_STAR) {
        fr_buf_printf(&t, NULL, "COUNT(*)");
    } else {
        fr_buf_printf(&t, NULL, "%s(%s", agg_names[a->fn], a->distinct ? "DISTINCT " : "");
        term_sql(&t, a->arg, a->upper);
        fr_buf_printf(&t, NULL, ")");
    }
    snprintf(a->text, sizeof a->text, "%.*s", (int)t.len, (const char *)t.data);
    fr_buf_free(&t);
}

static agg random_agg(void)
{
    static const term any[] = {T_ID, T_K1, T_K2, T_V, T_D, T_M, T_B, T_VMOD3, T_K1V, T_M8, T_ONE};
    static const term numeric[] = {T_ID, T_K1, T_V, T_D, T_M, T_VMOD3, T_K1V, T_M6, T_M8, T_ONE};
    agg a = {.fn = (agg_fn)test_rng_int(0, 5), .upper = chance(15)};
    if (a.fn != A_COUNT_STAR) {
        a.distinct = chance(25);
        a.arg = a.fn == A_SUM || a.fn == A_AVG ? numeric[pick(10)] : any[pick(11)];
    }
    agg_text(&a);
    return a;
}

/* The scale of AVG of a DECIMAL(p, s): max(s, 6). */
static int avg_scale(int s) { return s > 6 ? s : 6; }

/* The result type docs/SQL.md gives (in storage that lives until the next call). */
static const char *agg_type(const agg *a)
{
    static char t[32];
    vkind k = terms[a->arg].kind;
    int s = terms[a->arg].scale;
    switch (a->fn) {
    case A_COUNT_STAR:
    case A_COUNT: return "BIGINT NOT NULL";
    case A_MIN:
    case A_MAX: /* the argument's type, but NULL over no row */
        snprintf(t, sizeof t, "%s", terms[a->arg].type);
        if (strstr(t, " NOT NULL")) *strstr(t, " NOT NULL") = '\0';
        return t;
    case A_SUM:
        if (k != V_DEC) return k == V_DBL ? "DOUBLE" : "BIGINT";
        snprintf(t, sizeof t, "DECIMAL(38, %d)", s);
        return t;
    default:
        if (k != V_DEC) return "DOUBLE";
        snprintf(t, sizeof t, "DECIMAL(38, %d)", avg_scale(s));
        return t;
    }
}

/* Whether the aggregate's values are computed exactly (and so may be sorted by). */
static bool agg_exact(const agg *a)
{
    return !((a->fn == A_SUM || a->fn == A_AVG) && terms[a->arg].kind == V_DBL) &&
           !(a->fn == A_AVG && terms[a->arg].kind == V_INT);
}

static int value_cmp_q(const void *a, const void *b) { return value_cmp(a, b); }

static mval scratch[ROWS_MAX];

/* x / n rounded half away from zero. */
static fr_i128 div_round(fr_i128 x, int64_t n)
{
    fr_i128 ax = x < 0 ? -x : x, q = (2 * ax + n) / (2 * (fr_i128)n);
    return x < 0 ? -q : q;
}

/* The aggregate over the given rows, as docs/SQL.md defines it. */
static mval agg_eval(const agg *a, const int *rows, int n)
{
    if (a->fn == A_COUNT_STAR) return mv_int(n);
    int k = 0;
    for (int i = 0; i < n; i++) {
        mval v = term_eval(a->arg, rows[i]);
        if (!is_null(&v)) scratch[k++] = v;
    }
    if (a->distinct && k > 1) {
        qsort(scratch, (size_t)k, sizeof *scratch, value_cmp_q);
        int u = 1;
        for (int i = 1; i < k; i++)
            if (value_cmp(&scratch[i], &scratch[u - 1]) != 0) scratch[u++] = scratch[i];
        k = u;
    }
    if (a->fn == A_COUNT) return mv_int(k);
    if (k == 0) return mv_null();
    if (a->fn == A_MIN || a->fn == A_MAX) {
        mval best = scratch[0];
        for (int i = 1; i < k; i++) {
            int c = value_cmp(&scratch[i], &best);
            if (a->fn == A_MIN ? c < 0 : c > 0) best = scratch[i];
        }
        return best;
    }
    switch (terms[a->arg].kind) {
    case V_INT: {
        fr_i128 sum = 0;
        for (int i = 0; i < k; i++) sum += scratch[i].i;
        assert_true(sum >= INT64_MIN && sum <= INT64_MAX); /* the domains keep sums in range */
        if (a->fn == A_SUM) return mv_int((int64_t)sum);
        double avg = (double)sum / (double)k;
        return mv_dbl(avg, 1e-12 * fabs(avg));
    }
    case V_DBL: {
        double sum = 0, mag = 0;
        for (int i = 0; i < k; i++) {
            sum += scratch[i].f;
            if (isfinite(scratch[i].f)) mag += fabs(scratch[i].f);
        }
        double tol = 1e-9 * (1 + mag);
        return a->fn == A_SUM ? mv_dbl(sum, tol) : mv_dbl(sum / k, tol / k);
    }
    case V_DEC: {
        fr_i128 sum = 0, up = 1;
        int s = terms[a->arg].scale;
        for (int i = 0; i < k; i++) sum += scratch[i].dec;
        if (a->fn == A_SUM) return mv_dec(sum, s);
        for (int i = s; i < avg_scale(s); i++) up *= 10;
        return mv_dec(div_round(sum * up, k), avg_scale(s));
    }
    default: fail_msg("SUM or AVG of kind %d", (int)terms[a->arg].kind); return mv_null();
    }
}

/* ---- comparing a result with the model's ------------------------------------------------- */

static const result *g_cmp_result; /* of row_cmp_q */
static const bool *g_cmp_approx;

/* Rows by all their columns, NULLs first, the exact ones before those compared within a
 * tolerance (whose order may differ by a rounding): a canonical order to compare sets of
 * rows in. */
static int row_cmp_q(const void *pa, const void *pb)
{
    int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
    for (int pass = 0; pass < 2; pass++)
        for (int c = 0; c < g_cmp_result->ncols; c++) {
            if (g_cmp_approx[c] != (pass == 1)) continue;
            int x = sort_cmp(cell(g_cmp_result, a, c), cell(g_cmp_result, b, c), false, true);
            if (x != 0) return x;
        }
    return (a > b) - (a < b);
}

static bool same_row(const result *got, int64_t g, const result *want, int64_t w)
{
    for (int c = 0; c < want->ncols; c++)
        if (!same_value(cell(got, g, c), cell(want, w, c))) return false;
    return true;
}

static void sort_range(const result *r, const bool *approx, int64_t *idx, int64_t from,
                       int64_t to)
{
    for (int64_t i = from; i < to; i++) idx[i - from] = i;
    g_cmp_result = r;
    g_cmp_approx = approx;
    qsort(idx, (size_t)(to - from), sizeof *idx, row_cmp_q);
}

/* Whether got holds what want says, given that want (all the rows, before any LIMIT) is
 * sorted by the query's keys and its `block` marks rows of equal keys: got must have
 * `expect` rows, and each block's rows in got must be the block's rows in want in some
 * order; at the cut of a LIMIT, some of them. On a mismatch, says why. */
static bool holds(const result *got, const result *want, int64_t expect, fr_buf *why)
{
    if (got->header.len != want->header.len ||
        memcmp(got->header.data, want->header.data, got->header.len) != 0) {
        fr_buf_printf(why, NULL, "the columns differ");
        return false;
    }
    if (got->nrows != expect) {
        fr_buf_printf(why, NULL, "%lld rows, expected %lld", (long long)got->nrows,
                      (long long)expect);
        return false;
    }
    int64_t *gi = fr_malloc((size_t)(want->nrows + 1) * sizeof *gi);
    int64_t *wi = fr_malloc((size_t)(want->nrows + 1) * sizeof *wi);
    assert_non_null(gi);
    assert_non_null(wi);
    bool ok = true;
    for (int64_t s = 0; s < expect && ok;) {
        int64_t e = s + 1;
        while (e < want->nrows && want->block[e] == s) e++;
        int64_t ge = e < expect ? e : expect; /* got's rows of this block: [s, ge) */
        sort_range(got, want->approx, gi, s, ge);
        sort_range(want, want->approx, wi, s, e);
        if (ge == e) { /* the whole block */
            for (int64_t i = 0; i < e - s && ok; i++)
                if (!same_row(got, gi[i], want, wi[i])) {
                    fr_buf_printf(why, NULL, "row %lld (rows %lld to %lld are equal in the "
                                  "sort) is not what the model has", (long long)gi[i],
                                  (long long)s, (long long)e - 1);
                    ok = false;
                }
        } else { /* the cut of a LIMIT: a subset of the block */
            for (int64_t i = 0, j = 0; i < ge - s && ok; i++, j++) {
                while (j < e - s && !same_row(got, gi[i], want, wi[j])) j++;
                if (j == e - s) {
                    fr_buf_printf(why, NULL, "row %lld is none of the rows the model has at "
                                  "rows %lld to %lld (equal in the sort, cut by the LIMIT)",
                                  (long long)gi[i], (long long)s, (long long)e - 1);
                    ok = false;
                }
            }
        }
        s = e;
    }
    fr_free(gi);
    fr_free(wi);
    return ok;
}

static void check(const char *sql, const result *got, const result *want, int64_t expect)
{
    fr_buf why;
    fr_buf_init(&why);
    if (!holds(got, want, expect, &why)) {
        fr_buf msg;
        fr_buf_init(&msg);
        result_print(&msg, "got", got);
        result_print(&msg, "model (before LIMIT)", want);
        fprintf(stderr, "seed %llu, %s, query %d: %s\n%.*s\n%.*s", (unsigned long long)run_seed,
                run_name, query_no, sql, (int)why.len, (const char *)why.data, (int)msg.len,
                (const char *)msg.data);
        fail_msg("seed %llu, %s, query %d: the result differs from the model's (above)",
                 (unsigned long long)run_seed, run_name, query_no);
    }
    fr_buf_free(&why);
}

/* Runs sql, checks it against want, and now and then runs it under EXPLAIN too. */
static void run_and_check(const char *sql, const result *want, int64_t limit, int64_t *explained)
{
    result got;
    result_init(&got, 0);
    exec(sql, &got);
    check(sql, &got, want, limit >= 0 && limit < want->nrows ? limit : want->nrows);
    result_free(&got);
    if (chance(5)) {
        char text[8192];
        assert_true(strlen(sql) + 9 < sizeof text);
        snprintf(text, sizeof text, "EXPLAIN %s", sql);
        result plan;
        result_init(&plan, 0);
        exec(text, &plan);
        if (plan.nrows < 2)
            fail_msg("seed %llu, %s, query %d: %s: %lld rows of plan", (unsigned long long)run_seed,
                     run_name, query_no, text, (long long)plan.nrows);
        result_free(&plan);
        (*explained)++;
    }
}

/* ---- queries ----------------------------------------------------------------------------- */

typedef struct stats {
    int64_t queries, rows, explained, limited, empty;
} stats;

static stats st;

/* An ORDER BY key's direction and NULLs, written after it. */
static void random_direction(fr_buf *sql, bool *desc, bool *nulls_first)
{
    *desc = chance(50);
    if (*desc) fr_buf_printf(sql, NULL, " DESC");
    else if (chance(30)) fr_buf_printf(sql, NULL, " ASC");
    int n = pick(3);
    *nulls_first = n == 0 ? *desc : n == 1; /* by default NULLs sort as if above every value */
    if (n == 1) fr_buf_printf(sql, NULL, " NULLS FIRST");
    if (n == 2) fr_buf_printf(sql, NULL, " NULLS LAST");
}

static int64_t random_limit(fr_buf *sql, int percent, int64_t around)
{
    if (!chance(percent)) return -1;
    int64_t n = chance(10) ? 0 : chance(50) ? test_rng_int(1, 5) : test_rng_int(0, (int)around + 3);
    fr_buf_printf(sql, NULL, " LIMIT %lld", (long long)n);
    st.limited++;
    return n;
}

/* An item of a SELECT as the model sees it: where its value is in the model's row of values
 * of a query, what sorting by it means, and its names. */
typedef struct item {
    int slot;       /* of its value in the model's rows */
    bool exact;     /* its values are exact (a SUM of doubles is not): they may be sorted by */
    term t;         /* a term's item (plain and DISTINCT queries; group keys) */
    bool star;      /* plain queries: `*` (expanded into the columns) */
    char alias[16]; /* "" for none */
} item;

/* Maybe gives item i an alias: "a<i>", or now and then the name of a column (which ORDER BY
 * then takes to mean the item: an alias wins over a column). Aliases differ in any case. */
static void random_alias(item *items, int i, bool column_names)
{
    items[i].alias[0] = '\0';
    if (!chance(20)) return;
    if (column_names && items[i].exact && chance(40))
        snprintf(items[i].alias, sizeof items[i].alias, "%s", terms[pick(NCOLS)].sql);
    else
        snprintf(items[i].alias, sizeof items[i].alias, "a%d", i);
    for (int j = 0; j < i; j++)
        if (strcasecmp(items[j].alias, items[i].alias) == 0)
            snprintf(items[i].alias, sizeof items[i].alias, "a%d", i);
}

/* The item whose alias is name (any case), or -1. */
static int alias_item(const item *items, int nitems, const char *name)
{
    for (int i = 0; i < nitems; i++)
        if (items[i].alias[0] && strcasecmp(items[i].alias, name) == 0) return i;
    return -1;
}

/* A key of ORDER BY over the model's rows: a value of the row (at `slot`), and how. */
typedef struct okey {
    int slot;
    bool desc, nulls_first;
} okey;

static const okey *g_okeys;
static int g_nokeys;
static const mval *g_rows; /* of okey_cmp_q: rows of WIDE values */

/* The model's rows of a query: per row (or group) its values; group queries keep keys,
 * aggregates, then items' own values. SLOT_FIRST holds the id of the row (of a group or a
 * DISTINCT row, its first row), which orders rows that no key orders. */
#define DERIVED (KEYS_MAX + AGGS_MAX)
#define SLOT_FIRST (DERIVED + ITEMS_MAX + NCOLS)
#define WIDE (SLOT_FIRST + 1)

/* Whether the table has one bucket: then rows are read in the order they were written (id
 * order), and the order of rows with equal keys, of groups and of DISTINCT rows is known. */
static bool g_one_bucket;

static int okeys_cmp(int a, int b)
{
    for (int k = 0; k < g_nokeys; k++) {
        const okey *o = &g_okeys[k];
        int c = sort_cmp(&g_rows[a * WIDE + o->slot], &g_rows[b * WIDE + o->slot], o->desc,
                         o->nulls_first);
        if (c != 0) return c;
    }
    return 0;
}

/* By the keys, then by first row: read order when the table has one bucket. */
static int okey_cmp_q(const void *pa, const void *pb)
{
    int a = *(const int *)pa, b = *(const int *)pb;
    int c = okeys_cmp(a, b);
    if (c != 0) return c;
    int64_t x = g_rows[a * WIDE + SLOT_FIRST].i, y = g_rows[b * WIDE + SLOT_FIRST].i;
    return (x > y) - (x < y);
}

/* Sorts rows [0, n) of `values` by the keys into order[]. */
static void sort_model(const mval *values, int n, const okey *keys, int nkeys, int *order)
{
    for (int i = 0; i < n; i++) order[i] = i;
    g_okeys = keys;
    g_nokeys = nkeys;
    g_rows = values;
    qsort(order, (size_t)n, sizeof *order, okey_cmp_q);
}

/* The model's result: the header, then the sorted rows' values at the given slots, blocks of
 * equal keys marked (without keys, all rows are one block; with one bucket, every row is a
 * block of its own, its place known). */
static void model_result(result *want, const fr_buf *header, const mval *values,
                         const int *order, int n, const int *slots, const bool *approx,
                         int ncols, bool ordered)
{
    result_init(want, ncols);
    fr_buf_append(&want->header, header->data, header->len, NULL);
    for (int c = 0; c < ncols; c++) want->approx[c] = approx && approx[c];
    mval out[COLS_MAX];
    assert_true(ncols <= COLS_MAX);
    int64_t block = 0;
    for (int i = 0; i < n; i++) {
        if (g_one_bucket || (ordered && i > 0 && okeys_cmp(order[i - 1], order[i]) != 0))
            block = i;
        for (int c = 0; c < ncols; c++) out[c] = values[order[i] * WIDE + slots[c]];
        result_add(want, out, block);
    }
}

/* Adds a result column to the header: name is what docs/SQL.md names it by (the alias; a
 * bare column's name as the table spells it; else the text as written); a name already
 * taken, in any case, gets $1, $2, ... Returns the name given, valid until the next call. */
static const char *header_add(fr_buf *h, const char *name, const char *type)
{
    static char names[ITEMS_MAX + 2 * NCOLS][96]; /* of this header (it starts empty) */
    static int nnames;
    if (h->len == 0) nnames = 0;
    assert_true(nnames < (int)(sizeof names / sizeof names[0]));
    char *unique = names[nnames];
    snprintf(unique, sizeof names[0], "%s", name);
    for (int n = 1;; n++) {
        bool taken = false;
        for (int i = 0; i < nnames && !taken; i++) taken = strcasecmp(names[i], unique) == 0;
        if (!taken) break;
        snprintf(unique, sizeof names[0], "%s$%d", name, n);
    }
    nnames++;
    fr_buf_printf(h, NULL, "%s%s %s", h->len ? ", " : "", unique, type);
    return unique;
}

/* Writes an item's text (from `at` in sql), its alias, and its header entry. */
static const char *item_end(fr_buf *sql, size_t at, const item *it, bool bare_column,
                            fr_buf *h, const char *type)
{
    char written[96];
    snprintf(written, sizeof written, "%.*s", (int)(sql->len - at), (const char *)sql->data + at);
    if (it->alias[0]) fr_buf_printf(sql, NULL, " AS %s", it->alias);
    return header_add(h, it->alias[0] ? it->alias : bare_column ? terms[it->t].sql : written,
                      type);
}

static int g_filtered[ROWS_MAX];
static int g_order[ROWS_MAX + 1];
static int g_group_rows[ROWS_MAX];
static mval g_values[(ROWS_MAX + 1) * WIDE];

static const term group_terms[] = {T_K1, T_K2, T_V, T_D, T_M, T_B, T_VMOD3};
#define NGROUP_TERMS ((int)(sizeof group_terms / sizeof group_terms[0]))

static int add_agg(agg *aggs, int *naggs, const agg *a)
{
    for (int i = 0; i < *naggs; i++)
        if (strcmp(aggs[i].text, a->text) == 0) return i;
    assert_true(*naggs < AGGS_MAX);
    aggs[*naggs] = *a;
    return (*naggs)++;
}

static term g_keys_cmp_terms[KEYS_MAX]; /* of group_cmp_q */
static int g_keys_cmp_n;

/* Rows by their group key values (any fixed order does: groups are runs of equal keys). */
static int group_cmp_q(const void *pa, const void *pb)
{
    int a = *(const int *)pa, b = *(const int *)pb;
    for (int k = 0; k < g_keys_cmp_n; k++) {
        mval x = term_eval(g_keys_cmp_terms[k], a), y = term_eval(g_keys_cmp_terms[k], b);
        int c = sort_cmp(&x, &y, false, false);
        if (c != 0) return c;
    }
    return (a > b) - (a < b);
}

/* Whether rows a and b fall in one group: their keys' values compare equal (NULLs equal). */
static bool same_keys(const term *keys, int nkeys, int a, int b)
{
    for (int k = 0; k < nkeys; k++) {
        mval x = term_eval(keys[k], a), y = term_eval(keys[k], b);
        if (sort_cmp(&x, &y, false, false) != 0) return false;
    }
    return true;
}

/* Whether aggregate a gives integers exactly (what `+ 1` and HAVING take). */
static bool agg_integer(const agg *a)
{
    return a->fn == A_COUNT_STAR || a->fn == A_COUNT ||
           ((a->fn == A_SUM || a->fn == A_MIN || a->fn == A_MAX) && terms[a->arg].kind == V_INT);
}

static void shuffle(int *v, int n)
{
    for (int i = n - 1; i > 0; i--) {
        int j = pick(i + 1), t = v[i];
        v[i] = v[j];
        v[j] = t;
    }
}

/* A condition of HAVING: the value at slot (an integer) against a constant. */
typedef struct hcond {
    int slot;
    cmp_op op;
    int64_t value;
} hcond;

static int hcond_eval(const hcond *c, const mval *row)
{
    const mval *v = &row[c->slot];
    if (is_null(v)) return K_NULL;
    return op_holds(c->op, (v->i > c->value) - (v->i < c->value)) ? K_TRUE : K_FALSE;
}

/* SELECT keys, aggregates and expressions over them FROM g [WHERE] [GROUP BY keys] [HAVING]
 * [ORDER BY] [LIMIT]. */
static void query_grouped(bool group_by)
{
    fr_buf sql, h;
    fr_buf_init(&sql);
    fr_buf_init(&h);
    /* the keys */
    int nkeys = group_by ? test_rng_int(1, KEYS_MAX) : 0;
    term keys[KEYS_MAX];
    for (int k = 0; k < nkeys; k++) {
        bool taken;
        do {
            keys[k] = group_terms[pick(NGROUP_TERMS)];
            taken = false;
            for (int j = 0; j < k; j++) taken |= keys[j] == keys[k];
        } while (taken);
    }
    bool ordered = chance(85);
    /* the items: keys (every one, bare, when the rows are compared as a set), aggregates,
     * and either plus one */
    agg aggs[AGGS_MAX];
    int naggs = 0;
    item items[ITEMS_MAX];
    int base[ITEMS_MAX]; /* the slot an item adds one to, or -1 */
    int key_item[KEYS_MAX]; /* the bare item of each key, or -1 */
    int nitems = 0;
    for (int k = 0; k < nkeys; k++) {
        key_item[k] = -1;
        if (ordered && !chance(80)) continue;
        items[nitems] = (item){.slot = k, .exact = true, .t = keys[k]};
        base[nitems++] = -1;
        if (terms[keys[k]].kind == V_INT && chance(15)) { /* a part of a key: k + 1 */
            items[nitems] = (item){.slot = DERIVED + nitems, .exact = true, .t = keys[k]};
            base[nitems++] = k;
        }
    }
    int naggs_items = nitems && chance(10) ? 0 : test_rng_int(1, 6); /* none: GROUP BY alone */
    for (int i = 0; i < naggs_items; i++) {
        agg a = random_agg();
        int before = naggs, at = add_agg(aggs, &naggs, &a);
        if (at != before) continue;
        bool plus = agg_integer(&a) && chance(15);
        items[nitems] = (item){.slot = plus ? DERIVED + nitems : KEYS_MAX + at,
                               .exact = plus || agg_exact(&a)};
        base[nitems++] = plus ? KEYS_MAX + at : -1;
    }
    int perm[ITEMS_MAX];
    for (int i = 0; i < nitems; i++) perm[i] = i;
    shuffle(perm, nitems);
    item shuffled[ITEMS_MAX];
    int shuffled_base[ITEMS_MAX];
    for (int i = 0; i < nitems; i++) {
        shuffled[i] = items[perm[i]];
        shuffled_base[i] = base[perm[i]];
        if (shuffled[i].slot >= DERIVED) shuffled[i].slot = DERIVED + i;
    }
    memcpy(items, shuffled, (size_t)nitems * sizeof *items);
    memcpy(base, shuffled_base, (size_t)nitems * sizeof *base);
    for (int i = 0; i < nitems; i++) {
        random_alias(items, i, true);
        if (items[i].slot < KEYS_MAX && base[i] < 0) key_item[items[i].slot] = i;
    }
    bool approx[ITEMS_MAX];
    int slots[ITEMS_MAX];
    fr_buf_printf(&sql, NULL, "SELECT ");
    for (int i = 0; i < nitems; i++) {
        const item *it = &items[i];
        if (i) fr_buf_printf(&sql, NULL, ", ");
        size_t at = sql.len;
        int of = base[i] >= 0 ? base[i] : it->slot; /* the key or aggregate written */
        const char *type;
        /* A bare column is written as the table spells it: how one written in another case
         * is named is test_bare_column_names's. */
        bool bare = base[i] < 0 && of < KEYS_MAX && term_is_column(keys[of]);
        if (of < KEYS_MAX) {
            term_sql(&sql, keys[of], !bare && chance(15));
            type = terms[keys[of]].type;
        } else {
            const agg *a = &aggs[of - KEYS_MAX];
            fr_buf_printf(&sql, NULL, "%s", a->text);
            type = agg_type(a);
        }
        if (base[i] >= 0) {
            fr_buf_printf(&sql, NULL, " + 1");
            type = of >= KEYS_MAX && aggs[of - KEYS_MAX].fn <= A_COUNT ? "BIGINT NOT NULL"
                                                                       : "BIGINT";
        }
        item_end(&sql, at, it, bare, &h, type);
        slots[i] = it->slot;
        approx[i] = !it->exact;
    }
    fr_buf_printf(&sql, NULL, " FROM g");
    pred where;
    random_where(&where, &sql);
    if (nkeys) {
        fr_buf_printf(&sql, NULL, " GROUP BY ");
        for (int k = 0; k < nkeys; k++) {
            if (k) fr_buf_printf(&sql, NULL, ", ");
            term_sql(&sql, keys[k], chance(15));
        }
    }
    /* HAVING: one or two conditions on integer aggregates or keys */
    hcond having[2];
    int nhaving = chance(30) ? test_rng_int(1, 2) : 0;
    bool having_or = chance(40);
    for (int c = 0; c < nhaving; c++) {
        fr_buf_printf(&sql, NULL, c == 0 ? " HAVING " : having_or ? " OR " : " AND ");
        int int_key = -1;
        for (int k = 0; k < nkeys; k++)
            if (terms[keys[k]].kind == V_INT) int_key = k;
        having[c].op = (cmp_op)pick(NOPS);
        if (int_key >= 0 && chance(30)) {
            having[c].slot = int_key;
            having[c].value = test_rng_int(-5, 5);
            term_sql(&sql, keys[int_key], chance(15));
        } else {
            static const term int_args[] = {T_ID, T_K1, T_V, T_VMOD3};
            agg a = {.fn = (agg_fn)pick(5), .upper = chance(15)};
            if (a.fn != A_COUNT_STAR) a.arg = int_args[pick(4)], a.distinct = chance(20);
            agg_text(&a);
            having[c].slot = KEYS_MAX + add_agg(aggs, &naggs, &a);
            having[c].value = a.fn <= A_COUNT ? test_rng_int(0, 30) : test_rng_int(-30, 30);
            fr_buf_printf(&sql, NULL, "%s", a.text);
        }
        fr_buf_printf(&sql, NULL, " %s %lld", op_sql[having[c].op], (long long)having[c].value);
    }
    /* ORDER BY: maybe an exact aggregate or item first, then every key */
    okey ok[ORDER_MAX];
    int nok = 0;
    if (ordered && nkeys) {
        fr_buf_printf(&sql, NULL, " ORDER BY ");
        int lead = pick(10);
        if (lead < 3) { /* an exact aggregate: by its text, or its item's alias or position */
            agg a = random_agg();
            int item_at = -1, i = pick(nitems);
            if (chance(50) && items[i].slot >= KEYS_MAX && items[i].slot < DERIVED) {
                a = aggs[items[i].slot - KEYS_MAX]; /* an item's */
                item_at = i;
            }
            if (agg_exact(&a)) {
                int slot = KEYS_MAX + add_agg(aggs, &naggs, &a);
                if (item_at >= 0 && items[item_at].alias[0] && chance(50))
                    fr_buf_printf(&sql, NULL, "%s", items[item_at].alias);
                else if (item_at >= 0 && chance(50))
                    fr_buf_printf(&sql, NULL, "%d", item_at + 1);
                else
                    fr_buf_printf(&sql, NULL, "%s", a.text);
                ok[nok].slot = slot;
                random_direction(&sql, &ok[nok].desc, &ok[nok].nulls_first);
                nok++;
                fr_buf_printf(&sql, NULL, ", ");
            }
        } else if (lead < 5) { /* an exact item by its position */
            int i = pick(nitems);
            if (items[i].exact) {
                fr_buf_printf(&sql, NULL, "%d", i + 1);
                ok[nok].slot = items[i].slot;
                random_direction(&sql, &ok[nok].desc, &ok[nok].nulls_first);
                nok++;
                fr_buf_printf(&sql, NULL, ", ");
            }
        }
        int kperm[KEYS_MAX];
        for (int k = 0; k < nkeys; k++) kperm[k] = k;
        shuffle(kperm, nkeys);
        for (int j = 0; j < nkeys; j++) {
            int k = kperm[j], i = key_item[k];
            if (j) fr_buf_printf(&sql, NULL, ", ");
            ok[nok].slot = k;
            if (i >= 0 && items[i].alias[0] && chance(40)) {
                fr_buf_printf(&sql, NULL, "%s", items[i].alias);
            } else if (i >= 0 && chance(30)) {
                fr_buf_printf(&sql, NULL, "%d", i + 1);
            } else {
                term_sql(&sql, keys[k], chance(15));
                int hit = term_is_column(keys[k]) ? alias_item(items, nitems, terms[keys[k]].sql)
                                                  : -1;
                if (hit >= 0) ok[nok].slot = items[hit].slot; /* the alias wins */
            }
            random_direction(&sql, &ok[nok].desc, &ok[nok].nulls_first);
            nok++;
        }
    }

    /* the model: rows grouped, aggregated, filtered by HAVING, sorted */
    int n = filter_rows(&where, g_filtered);
    memcpy(g_group_rows, g_filtered, (size_t)n * sizeof *g_filtered);
    for (int k = 0; k < nkeys; k++) g_keys_cmp_terms[k] = keys[k];
    g_keys_cmp_n = nkeys;
    qsort(g_group_rows, (size_t)n, sizeof *g_group_rows, group_cmp_q);
    int ngroups = 0;
    /* Groups are runs of equal keys; without GROUP BY, one group of every row (maybe none). */
    for (int s = 0; s < n || (nkeys == 0 && s == 0);) {
        int e = s;
        while (e < n && (nkeys == 0 || same_keys(keys, nkeys, g_group_rows[s], g_group_rows[e])))
            e++;
        mval *row = &g_values[ngroups * WIDE];
        for (int k = 0; k < nkeys; k++) row[k] = term_eval(keys[k], g_group_rows[s]);
        row[SLOT_FIRST] = mv_int(s < n ? g_group_rows[s] : 0); /* a run is in id order */
        for (int a = 0; a < naggs; a++)
            row[KEYS_MAX + a] = agg_eval(&aggs[a], g_group_rows + s, e - s);
        for (int i = 0; i < nitems; i++)
            if (base[i] >= 0)
                row[items[i].slot] = is_null(&row[base[i]]) ? mv_null()
                                                             : mv_int(row[base[i]].i + 1);
        int keep = K_TRUE;
        for (int c = 0; c < nhaving; c++) {
            int v = hcond_eval(&having[c], row);
            if (c == 0) keep = v;
            else if (having_or) keep = keep == K_TRUE || v == K_TRUE ? K_TRUE
                                       : keep == K_FALSE && v == K_FALSE ? K_FALSE : K_NULL;
            else keep = keep == K_FALSE || v == K_FALSE ? K_FALSE
                        : keep == K_TRUE && v == K_TRUE ? K_TRUE : K_NULL;
        }
        if (keep == K_TRUE) ngroups++;
        s = nkeys == 0 ? n + 1 : e;
    }
    sort_model(g_values, ngroups, ok, nok, g_order);
    int64_t limit = random_limit(&sql, nkeys ? 30 : 10, ngroups);
    fr_buf_append(&sql, "", 1, NULL);

    result want;
    model_result(&want, &h, g_values, g_order, ngroups, slots, approx, nitems, nok > 0);
    run_and_check((const char *)sql.data, &want, limit, &st.explained);
    st.rows += want.nrows;
    if (want.nrows == 0) st.empty++;
    result_free(&want);
    fr_buf_free(&sql);
    fr_buf_free(&h);
}

/* Distinct tuples: rows compared by their first g_distinct_n values, NULLs last. */
static int g_distinct_n;

static int tuple_cmp_q(const void *pa, const void *pb)
{
    const mval *a = pa, *b = pb;
    for (int c = 0; c < g_distinct_n; c++) {
        int x = sort_cmp(&a[c], &b[c], false, false);
        if (x != 0) return x;
    }
    return 0;
}

/* SELECT DISTINCT items FROM g [WHERE] [ORDER BY some or all of them] [LIMIT]. */
static void query_distinct(void)
{
    static const term choices[] = {T_K1, T_K2, T_V, T_D, T_B, T_VMOD3, T_M};
    fr_buf sql, h;
    fr_buf_init(&sql);
    fr_buf_init(&h);
    int nitems = test_rng_int(1, KEYS_MAX);
    item items[KEYS_MAX];
    char names[KEYS_MAX][96];
    fr_buf_printf(&sql, NULL, "SELECT DISTINCT ");
    for (int i = 0; i < nitems; i++) {
        bool taken;
        do {
            items[i] = (item){.slot = i, .exact = true, .t = choices[pick(7)]};
            taken = false;
            for (int j = 0; j < i; j++) taken |= items[j].t == items[i].t;
        } while (taken);
        random_alias(items, i, true);
        if (i) fr_buf_printf(&sql, NULL, ", ");
        size_t at = sql.len;
        term_sql(&sql, items[i].t, chance(15));
        snprintf(names[i], sizeof names[i], "%s",
                 item_end(&sql, at, &items[i], term_is_column(items[i].t), &h,
                          terms[items[i].t].type));
    }
    fr_buf_printf(&sql, NULL, " FROM g");
    pred where;
    random_where(&where, &sql);
    okey ok[KEYS_MAX];
    int nok = 0;
    if (chance(80)) {
        int perm[KEYS_MAX];
        for (int i = 0; i < nitems; i++) perm[i] = i;
        shuffle(perm, nitems);
        nok = chance(70) ? nitems : test_rng_int(1, nitems);
        fr_buf_printf(&sql, NULL, " ORDER BY ");
        for (int k = 0; k < nok; k++) {
            int i = perm[k];
            if (k) fr_buf_printf(&sql, NULL, ", ");
            if (items[i].alias[0] && chance(60)) {
                fr_buf_printf(&sql, NULL, "%s", items[i].alias);
            } else if (!items[i].alias[0] && term_is_column(items[i].t) && chance(60)) {
                /* a result column by name: an alias of that name wins, else the column of
                 * the result so named */
                term_sql(&sql, items[i].t, chance(20));
                int hit = alias_item(items, nitems, terms[items[i].t].sql);
                for (int j = 0; j < nitems && hit < 0; j++)
                    if (strcasecmp(names[j], terms[items[i].t].sql) == 0) hit = j;
                assert_true(hit >= 0);
                i = hit;
            } else {
                fr_buf_printf(&sql, NULL, "%d", i + 1);
            }
            ok[k].slot = i;
            random_direction(&sql, &ok[k].desc, &ok[k].nulls_first);
        }
    }

    int n = filter_rows(&where, g_filtered);
    for (int r = 0; r < n; r++) {
        for (int i = 0; i < nitems; i++)
            g_values[r * WIDE + i] = term_eval(items[i].t, g_filtered[r]);
        g_values[r * WIDE + SLOT_FIRST] = mv_int(g_filtered[r]);
    }
    /* distinct tuples: sort the rows by their items, keep one of each run, with the run's
     * first row */
    g_distinct_n = nitems;
    qsort(g_values, (size_t)n, WIDE * sizeof *g_values, tuple_cmp_q);
    int u = 0;
    for (int r = 0; r < n; r++) {
        mval *row = &g_values[r * WIDE];
        if (u > 0 && tuple_cmp_q(row, &g_values[(u - 1) * WIDE]) == 0) {
            mval *kept = &g_values[(u - 1) * WIDE + SLOT_FIRST];
            if (row[SLOT_FIRST].i < kept->i) *kept = row[SLOT_FIRST];
            continue;
        }
        memmove(&g_values[u++ * WIDE], row, WIDE * sizeof *g_values);
    }
    sort_model(g_values, u, ok, nok, g_order);
    int64_t limit = random_limit(&sql, 30, u);
    fr_buf_append(&sql, "", 1, NULL);

    int slots[KEYS_MAX];
    for (int i = 0; i < nitems; i++) slots[i] = i;
    result want;
    model_result(&want, &h, g_values, g_order, u, slots, NULL, nitems, nok > 0);
    run_and_check((const char *)sql.data, &want, limit, &st.explained);
    st.rows += want.nrows;
    result_free(&want);
    fr_buf_free(&sql);
    fr_buf_free(&h);
}

/* Whether the rows of got keep read order among equal keys as far as the model knows it:
 * the rows of one INSERT (one chunk) are in one bucket, in id order, so within a block of
 * equal keys they come in id order, and a block cut by the LIMIT keeps the first of them.
 * Column id_col of got and of want holds the id; want is the model's (all rows, sorted,
 * blocks marked). */
static bool keeps_read_order(const result *got, const result *want, int id_col, fr_buf *why)
{
    static int64_t last_id[ROWS_MAX], stamp[ROWS_MAX], max_kept[ROWS_MAX];
    static bool kept[ROWS_MAX];
    for (int c = 0; c < nchunks; c++) stamp[c] = -1;
    for (int64_t p = 0; p < got->nrows; p++) {
        int64_t id = cell(got, p, id_col)->i, s = want->block[p];
        int ch = chunk_of[id];
        if (stamp[ch] == s && last_id[ch] > id) {
            fr_buf_printf(why, NULL, "row %lld (id %lld) comes after id %lld of the same "
                          "INSERT, and their keys are equal", (long long)p, (long long)id,
                          (long long)last_id[ch]);
            return false;
        }
        stamp[ch] = s;
        last_id[ch] = id;
    }
    if (got->nrows == 0 || got->nrows == want->nrows) return true;
    /* the block at the cut: per INSERT, the rows kept come before those left out */
    int64_t s = want->block[got->nrows - 1], e = s + 1;
    while (e < want->nrows && want->block[e] == s) e++;
    if (e <= got->nrows) return true; /* not cut */
    memset(kept, 0, (size_t)nrows * sizeof *kept);
    for (int c = 0; c < nchunks; c++) max_kept[c] = -1;
    for (int64_t p = s; p < got->nrows; p++) {
        int64_t id = cell(got, p, id_col)->i;
        kept[id] = true;
        if (id > max_kept[chunk_of[id]]) max_kept[chunk_of[id]] = id;
    }
    for (int64_t p = s; p < e; p++) {
        int64_t id = cell(want, p, id_col)->i;
        if (!kept[id] && max_kept[chunk_of[id]] > id) {
            fr_buf_printf(why, NULL, "the LIMIT keeps id %lld but not id %lld, written before "
                          "it by the same INSERT with equal keys",
                          (long long)max_kept[chunk_of[id]], (long long)id);
            return false;
        }
    }
    return true;
}

/* SELECT [*,] id, columns and expressions FROM g [WHERE] ORDER BY 1 to 3 keys [LIMIT n]: the
 * keys need not be total. */
static void query_sorted(void)
{
    static const term choices[] = {T_K1, T_K2, T_V, T_D, T_M, T_B, T_NEGV, T_K1V};
    fr_buf sql, h;
    fr_buf_init(&sql);
    fr_buf_init(&h);
    /* the items: id (unless * gives it), a random subset of the choices, maybe * among them */
    item items[ITEMS_MAX];
    int nitems = 0;
    bool star = chance(20);
    if (!star) items[nitems++] = (item){.exact = true, .t = T_ID};
    for (int i = 0; i < 8; i++)
        if (chance(35)) items[nitems++] = (item){.exact = true, .t = choices[i]};
    if (star) items[nitems++] = (item){.star = true};
    int perm[ITEMS_MAX];
    for (int i = 0; i < nitems; i++) perm[i] = i;
    shuffle(perm + !star, nitems - !star); /* without *, id stays first */
    item shuffled[ITEMS_MAX];
    for (int i = 0; i < nitems; i++) shuffled[i] = items[perm[i]];
    memcpy(items, shuffled, (size_t)nitems * sizeof *items);
    /* the result's columns: each item's, * giving every column of the table */
    term cols[ITEMS_MAX + NCOLS];
    int ncols = 0, id_col = -1;
    fr_buf_printf(&sql, NULL, "SELECT ");
    for (int i = 0; i < nitems; i++) {
        if (i) fr_buf_printf(&sql, NULL, ", ");
        if (items[i].star) {
            fr_buf_printf(&sql, NULL, "*");
            for (int c = 0; c < NCOLS; c++) {
                header_add(&h, terms[c].sql, terms[c].type);
                cols[ncols++] = (term)c;
            }
            continue;
        }
        random_alias(items, i, true);
        size_t at = sql.len;
        term_sql(&sql, items[i].t, chance(15));
        item_end(&sql, at, &items[i], term_is_column(items[i].t), &h, terms[items[i].t].type);
        cols[ncols++] = items[i].t;
    }
    for (int c = 0; c < ncols && id_col < 0; c++)
        if (cols[c] == T_ID) id_col = c;
    assert_true(id_col >= 0);
    fr_buf_printf(&sql, NULL, " FROM g");
    pred where;
    random_where(&where, &sql);
    /* the keys: positions, aliases, terms (selected or not); the model's row of values holds
     * the result's columns, then the keys' values */
    okey ok[ORDER_MAX];
    term key_terms[ORDER_MAX];
    int nok = test_rng_int(1, 3);
    fr_buf_printf(&sql, NULL, " ORDER BY ");
    for (int k = 0; k < nok; k++) {
        if (k) fr_buf_printf(&sql, NULL, ", ");
        int i = pick(nitems);
        if (chance(25)) {
            int c = pick(ncols);
            fr_buf_printf(&sql, NULL, "%d", c + 1);
            key_terms[k] = cols[c];
        } else if (items[i].alias[0] && chance(60)) {
            fr_buf_printf(&sql, NULL, "%s", items[i].alias);
            key_terms[k] = items[i].t;
        } else {
            key_terms[k] = chance(5) ? T_ID : choices[pick(8)];
            term_sql(&sql, key_terms[k], chance(15));
            int hit = term_is_column(key_terms[k])
                          ? alias_item(items, nitems, terms[key_terms[k]].sql)
                          : -1;
            if (hit >= 0) key_terms[k] = items[hit].t; /* the alias wins */
        }
        ok[k].slot = ncols + k;
        random_direction(&sql, &ok[k].desc, &ok[k].nulls_first);
    }
    int n = filter_rows(&where, g_filtered);
    int64_t limit = random_limit(&sql, 70, chance(50) ? 30 : n);
    assert_true(ncols + nok <= SLOT_FIRST);
    fr_buf_append(&sql, "", 1, NULL);
    for (int r = 0; r < n; r++) {
        mval *row = &g_values[r * WIDE];
        for (int c = 0; c < ncols; c++) row[c] = term_eval(cols[c], g_filtered[r]);
        for (int k = 0; k < nok; k++) row[ncols + k] = term_eval(key_terms[k], g_filtered[r]);
        row[SLOT_FIRST] = mv_int(g_filtered[r]);
    }
    sort_model(g_values, n, ok, nok, g_order);
    int slots[ITEMS_MAX + NCOLS];
    for (int c = 0; c < ncols; c++) slots[c] = c;
    result want;
    model_result(&want, &h, g_values, g_order, n, slots, NULL, ncols, true);

    const char *text = (const char *)sql.data;
    result got;
    result_init(&got, 0);
    exec(text, &got);
    check(text, &got, &want, limit >= 0 && limit < n ? limit : n);
    fr_buf why;
    fr_buf_init(&why);
    if (!keeps_read_order(&got, &want, id_col, &why)) {
        fr_buf msg;
        fr_buf_init(&msg);
        result_print(&msg, "got", &got);
        fprintf(stderr, "seed %llu, %s, query %d: %s\n%.*s\n%.*s", (unsigned long long)run_seed,
                run_name, query_no, text, (int)why.len, (const char *)why.data, (int)msg.len,
                (const char *)msg.data);
        fail_msg("seed %llu, %s, query %d: rows with equal keys out of read order (above)",
                 (unsigned long long)run_seed, run_name, query_no);
    }
    fr_buf_free(&why);
    st.rows += got.nrows;
    result_free(&got);
    result_free(&want);
    fr_buf_free(&sql);
    fr_buf_free(&h);
}

static void random_queries(int count)
{
    for (int q = 0; q < count; q++) {
        query_no++;
        st.queries++;
        int kind = pick(100);
        if (kind < 45) query_grouped(true);
        else if (kind < 55) query_grouped(false);
        else if (kind < 70) query_distinct();
        else query_sorted();
    }
}

/* docs/SQL.md: a result column of a bare column is named as the table spells the column,
 * whatever case the SELECT writes it in; so it is without aggregates. */
static void test_bare_column_names(void **state)
{
    (void)state;
    static const struct {
        const char *sql, *header;
    } cases[] = {
        {"SELECT K1, Id FROM n", "k1 INT, id BIGINT NOT NULL"},
        {"SELECT DISTINCT K1 FROM n", "k1 INT"},
        {"SELECT K1 FROM n ORDER BY k1", "k1 INT"},
        {"SELECT K1, COUNT(*) FROM n GROUP BY k1", "k1 INT, COUNT(*) BIGINT NOT NULL"},
        {"SELECT K1 FROM n GROUP BY K1", "k1 INT"},
        {"SELECT MAX(K1), K1 FROM n GROUP BY k1 ORDER BY K1", "MAX(K1) INT, k1 INT"},
        {"SELECT ID, k1 FROM n GROUP BY id, k1 HAVING COUNT(*) > 0",
         "id BIGINT NOT NULL, k1 INT"},
    };
    exec("CREATE TABLE n (id BIGINT NOT NULL, k1 INT); INSERT INTO n VALUES (1, 2)", NULL);
    int failed = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        result got;
        result_init(&got, 0);
        exec(cases[i].sql, &got);
        if (got.header.len != strlen(cases[i].header) ||
            memcmp(got.header.data, cases[i].header, got.header.len) != 0) {
            print_error("%s\n  columns [%.*s], expected [%s]\n", cases[i].sql, (int)got.header.len,
                        (const char *)got.header.data, cases[i].header);
            failed++;
        }
        result_free(&got);
    }
    if (failed) fail_msg("%d SELECTs name their columns otherwise than docs/SQL.md says", failed);
}

/* Random queries over the table g with `buckets` buckets, filled in three steps. */
static void run(int buckets, uint64_t seed, int queries)
{
    test_rng_seed(seed);
    g_one_bucket = buckets == 1;
    run_name = g_one_bucket ? "1 bucket" : "3 buckets";
    nrows = nchunks = query_no = 0;
    memset(&st, 0, sizeof st);
    char sql[256];
    snprintf(sql, sizeof sql, "CREATE TABLE g (id BIGINT NOT NULL, k1 INT, k2 STRING, v BIGINT, "
             "d DOUBLE, m DECIMAL(12, 2), b BOOLEAN) WITH ('bucket.num' = '%d')", buckets);
    exec(sql, NULL);
    random_queries(queries / 12); /* of no row */
    fill_to(test_rng_int(200, 400));
    random_queries(queries * 3 / 12);
    fill_to(ROWS_MAX - test_rng_int(0, 500));
    random_queries(queries * 8 / 12);
    fprintf(stderr, "test_sql_group_random, %s: %lld queries (%lld with LIMIT, %lld EXPLAINed, "
            "%lld empty groupings), %lld rows compared, %d rows in %d INSERTs\n", run_name,
            (long long)st.queries, (long long)st.limited, (long long)st.explained,
            (long long)st.empty, (long long)st.rows, nrows, nchunks);
}

/* Three buckets: read order is known only within an INSERT. */
static void test_three_buckets(void **state)
{
    (void)state;
    run(3, run_seed, 360);
}

/* One bucket: rows are read in the order they were written, so the order of rows with equal
 * sort keys, of groups without ORDER BY (their first rows') and of DISTINCT rows (theirs) is
 * compared too. */
static void test_one_bucket(void **state)
{
    (void)state;
    run(1, run_seed + 1, 240);
}

int main(void)
{
    run_seed = test_rng_seed_of_run("test_sql_group_random");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_three_buckets, setup, teardown),
        cmocka_unit_test_setup_teardown(test_one_bucket, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bare_column_names, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
