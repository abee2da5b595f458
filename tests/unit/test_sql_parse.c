/* test_sql_parse.c — unit tests of the SQL lexer and parser: every statement form, every
 * literal, operator precedence, names, comments, limits, and the positions in error
 * messages. Trees are printed by a small printer of this file (not by the expression
 * module), so these tests depend on the parser alone. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>

#include "sql/sql_int.h"

/* ---- helpers --------------------------------------------------------------------------- */

static fr_arena *arena;

static int setup(void **state)
{
    (void)state;
    arena = fr_arena_new(4096);
    return arena ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    fr_arena_free(arena);
    arena = NULL;
    return 0;
}

static const char *op_name(fr_expr_op op)
{
    switch (op) {
    case FR_OP_EQ: return "=";
    case FR_OP_NE: return "<>";
    case FR_OP_LT: return "<";
    case FR_OP_LE: return "<=";
    case FR_OP_GT: return ">";
    case FR_OP_GE: return ">=";
    case FR_OP_AND: return "AND";
    case FR_OP_OR: return "OR";
    case FR_OP_NOT: return "NOT";
    case FR_OP_ADD: return "+";
    case FR_OP_SUB: return "-";
    case FR_OP_MUL: return "*";
    case FR_OP_DIV: return "/";
    case FR_OP_MOD: return "%";
    case FR_OP_NEG: return "NEG";
    case FR_OP_CONCAT: return "||";
    default: return "?";
    }
}

static void print_type(const fr_type *t, fr_buf *b)
{
    char s[64];
    fr_type_format(t, false, s, sizeof s);
    fr_buf_printf(b, NULL, "%s", s);
}

static void print_literal(const fr_value *v, fr_buf *b)
{
    if (v->is_null) {
        fr_buf_printf(b, NULL, "NULL");
        return;
    }
    switch (v->type.id) {
    case FR_T_BOOLEAN: fr_buf_printf(b, NULL, v->v.b ? "TRUE" : "FALSE"); return;
    case FR_T_DOUBLE: fr_buf_printf(b, NULL, "%g:", v->v.f); break;
    case FR_T_DECIMAL: {
        char d[64];
        fr_decimal_format(v->v.d, v->type.scale, d, sizeof d);
        fr_buf_printf(b, NULL, "%s:", d);
        break;
    }
    case FR_T_STRING: fr_buf_printf(b, NULL, "'%.*s'", (int)v->v.s.len, (const char *)v->v.s.ptr); return;
    case FR_T_BYTES:
        fr_buf_printf(b, NULL, "X'");
        for (size_t i = 0; i < v->v.s.len; i++) fr_buf_printf(b, NULL, "%02x", v->v.s.ptr[i]);
        fr_buf_printf(b, NULL, "'");
        return;
    default: fr_buf_printf(b, NULL, "%lld:", (long long)v->v.i); break;
    }
    print_type(&v->type, b);
}

static void print_expr(const fr_expr *e, fr_buf *b);

/* (CASE [operand] WHEN w THEN t ... [ELSE x]) */
static void print_case(const fr_expr *e, fr_buf *b)
{
    int first = e->case_operand ? 1 : 0, end = e->nargs - (e->case_else ? 1 : 0);
    fr_buf_printf(b, NULL, "(CASE");
    if (e->case_operand) {
        fr_buf_printf(b, NULL, " ");
        print_expr(e->args[0], b);
    }
    for (int i = first; i + 1 < end; i += 2) {
        fr_buf_printf(b, NULL, " WHEN ");
        print_expr(e->args[i], b);
        fr_buf_printf(b, NULL, " THEN ");
        print_expr(e->args[i + 1], b);
    }
    if (e->case_else) {
        fr_buf_printf(b, NULL, " ELSE ");
        print_expr(e->args[e->nargs - 1], b);
    }
    fr_buf_printf(b, NULL, ")");
}

/* A tree as an S-expression: (AND a (= b 1:INT)). */
static void print_expr(const fr_expr *e, fr_buf *b)
{
    switch (e->kind) {
    case FR_EX_CASE: print_case(e, b); return;
    case FR_EX_FUNC: fr_buf_printf(b, NULL, "(%s", fr_expr_func_name(e->func)); break;
    case FR_EX_LITERAL: print_literal(&e->value, b); return;
    case FR_EX_COLUMN: fr_buf_printf(b, NULL, "%s", e->name); return;
    case FR_EX_AGGREGATE:
        fr_buf_printf(b, NULL, "(%s%s", fr_expr_agg_name(e->agg), e->distinct ? " DISTINCT" : "");
        break;
    case FR_EX_UNARY:
    case FR_EX_BINARY: fr_buf_printf(b, NULL, "(%s", op_name(e->op)); break;
    case FR_EX_IS_NULL: fr_buf_printf(b, NULL, "(IS%s NULL", e->negated ? " NOT" : ""); break;
    case FR_EX_IN: fr_buf_printf(b, NULL, "(%sIN", e->negated ? "NOT " : ""); break;
    case FR_EX_BETWEEN: fr_buf_printf(b, NULL, "(%sBETWEEN", e->negated ? "NOT " : ""); break;
    case FR_EX_LIKE: fr_buf_printf(b, NULL, "(%sLIKE", e->negated ? "NOT " : ""); break;
    case FR_EX_CAST: fr_buf_printf(b, NULL, "(CAST"); break;
    }
    for (int i = 0; i < e->nargs; i++) {
        fr_buf_printf(b, NULL, " ");
        print_expr(e->args[i], b);
    }
    if (e->kind == FR_EX_CAST) {
        fr_buf_printf(b, NULL, " ");
        print_type(&e->cast_type, b);
    }
    fr_buf_printf(b, NULL, ")");
}

/* Parses one expression and prints it; the string lives until the next call. */
static const char *expr_str(const char *text)
{
    static char out[2048];
    fr_error err = {0};
    fr_expr *e = NULL;
    int rc = sql_parse_expression(text, strlen(text), arena, &e, &err);
    if (rc < 0) {
        snprintf(out, sizeof out, "error %s: %s", fr_strcode(rc), err.msg);
        return out;
    }
    fr_buf b;
    fr_buf_init(&b);
    print_expr(e, &b);
    snprintf(out, sizeof out, "%.*s", (int)b.len, (const char *)b.data);
    fr_buf_free(&b);
    return out;
}

#define assert_expr(text, want) assert_string_equal(expr_str(text), want)

static sql_script parse_ok(const char *text)
{
    sql_script s = {0};
    fr_error err = {0};
    int rc = sql_parse_script(text, strlen(text), arena, &s, &err);
    if (rc < 0) fail_msg("parse of \"%s\" failed: %s", text, err.msg);
    return s;
}

static sql_stmt *parse_one(const char *text)
{
    sql_script s = parse_ok(text);
    assert_int_equal(s.nstmts, 1);
    return s.stmts[0];
}

/* Parses text that must fail with code and exactly message msg. */
static void assert_parse_error(const char *text, int code, const char *msg)
{
    fr_error err = {0};
    int rc = fr_sql_parse_only(text, strlen(text), &err);
    if (rc != code || strcmp(err.msg, msg) != 0)
        fail_msg("parse of \"%s\": got %s \"%s\", want %s \"%s\"", text, fr_strcode(rc),
                 err.msg, fr_strcode(code), msg);
}

/* ---- precedence ------------------------------------------------------------------------ */

static void test_precedence(void **state)
{
    (void)state;
    assert_expr("a OR b AND c", "(OR a (AND b c))");
    assert_expr("a AND b OR c", "(OR (AND a b) c)");
    assert_expr("NOT a AND b", "(AND (NOT a) b)");
    assert_expr("NOT a OR b", "(OR (NOT a) b)");
    assert_expr("NOT a = b", "(NOT (= a b))");
    assert_expr("NOT NOT a", "(NOT (NOT a))");
    assert_expr("(a OR b) AND c", "(AND (OR a b) c)");
    assert_expr("a + b * c", "(+ a (* b c))");
    assert_expr("a * b + c", "(+ (* a b) c)");
    assert_expr("a - b - c", "(- (- a b) c)");
    assert_expr("a / b % c", "(% (/ a b) c)");
    assert_expr("-a * b", "(* (NEG a) b)");
    assert_expr("- -a", "(NEG (NEG a))");
    assert_expr("+a", "a");
    assert_expr("a || b = c", "(= (|| a b) c)");
    assert_expr("a || b + c", "(|| a (+ b c))");
    assert_expr("a + 1 < b * 2 AND c", "(AND (< (+ a 1:INT) (* b 2:INT)) c)");
    assert_expr("a = 1 OR a = 2 OR a = 3 OR a = 4",
                "(OR (OR (= a 1:INT) (= a 2:INT)) (OR (= a 3:INT) (= a 4:INT)))");
    assert_expr("a <> b", "(<> a b)");
    assert_expr("a != b", "(<> a b)");
    assert_expr("a<=b", "(<= a b)");
    assert_expr("a>=b", "(>= a b)");
    assert_expr("a<b", "(< a b)");
    assert_expr("a>b", "(> a b)");
    assert_expr("a % 2 = 0", "(= (% a 2:INT) 0:INT)");
}

static void test_predicates(void **state)
{
    (void)state;
    assert_expr("x IS NULL", "(IS NULL x)");
    assert_expr("x IS NOT NULL OR y IS NULL", "(OR (IS NOT NULL x) (IS NULL y))");
    assert_expr("NOT x IS NULL", "(NOT (IS NULL x))");
    assert_expr("a IN (1, 2, 3)", "(IN a 1:INT 2:INT 3:INT)");
    assert_expr("a NOT IN ('x')", "(NOT IN a 'x')");
    assert_expr("a + 1 IN (b, c * 2)", "(IN (+ a 1:INT) b (* c 2:INT))");
    assert_expr("a BETWEEN 1 AND 2 AND b", "(AND (BETWEEN a 1:INT 2:INT) b)");
    assert_expr("a NOT BETWEEN b - 1 AND b + 1", "(NOT BETWEEN a (- b 1:INT) (+ b 1:INT))");
    assert_expr("s LIKE 'a%'", "(LIKE s 'a%')");
    assert_expr("s NOT LIKE 'a_' OR t LIKE u || '%'", "(OR (NOT LIKE s 'a_') (LIKE t (|| u '%')))");
    assert_expr("CAST(a AS DECIMAL(10, 2))", "(CAST a DECIMAL(10, 2))");
    assert_expr("CAST(a + 1 AS STRING) || 'x'", "(|| (CAST (+ a 1:INT) STRING) 'x')");
    assert_expr("cast(a as timestamp(3) with local time zone)", "(CAST a TIMESTAMP_LTZ(3))");
    assert_expr("a = b IS NULL", "(IS NULL (= a b))");
}

/* ---- CASE and scalar functions -------------------------------------------------------- */

static void test_case(void **state)
{
    (void)state;
    assert_expr("CASE WHEN a > 1 THEN 'x' END", "(CASE WHEN (> a 1:INT) THEN 'x')");
    assert_expr("case when a then 1 when b then 2 else 3 end",
                "(CASE WHEN a THEN 1:INT WHEN b THEN 2:INT ELSE 3:INT)");
    assert_expr("CASE a WHEN 1 THEN 'one' WHEN 2 THEN 'two' ELSE NULL END",
                "(CASE a WHEN 1:INT THEN 'one' WHEN 2:INT THEN 'two' ELSE NULL)");
    assert_expr("CASE a + 1 WHEN b THEN c END", "(CASE (+ a 1:INT) WHEN b THEN c)");
    /* CASE is a primary: it binds tighter than any operator around it. */
    assert_expr("CASE WHEN a THEN 1 ELSE 2 END + 1 = x",
                "(= (+ (CASE WHEN a THEN 1:INT ELSE 2:INT) 1:INT) x)");
    assert_expr("CASE WHEN a OR b AND NOT c THEN x IS NULL END",
                "(CASE WHEN (OR a (AND b (NOT c))) THEN (IS NULL x))");
    assert_expr("CASE WHEN CASE a WHEN 1 THEN TRUE END THEN CASE WHEN b THEN 1 END END",
                "(CASE WHEN (CASE a WHEN 1:INT THEN TRUE) THEN (CASE WHEN b THEN 1:INT))");
    assert_parse_error("SELECT CASE END", FR_ESYNTAX,
                       "line 1, column 13: expected WHEN after CASE, found 'END'");
    assert_parse_error("SELECT CASE ELSE 1 END", FR_ESYNTAX,
                       "line 1, column 13: expected WHEN after CASE, found 'ELSE'");
    assert_parse_error("SELECT CASE a END", FR_ESYNTAX,
                       "line 1, column 15: expected WHEN, found 'END'");
    assert_parse_error("SELECT CASE WHEN a 1 END", FR_ESYNTAX,
                       "line 1, column 20: expected THEN, found '1'");
    assert_parse_error("SELECT CASE WHEN a THEN 1", FR_ESYNTAX,
                       "line 1, column 26: expected WHEN, ELSE or END, found end of input");
    assert_parse_error("SELECT CASE WHEN a THEN 1 ELSE 2 FROM t", FR_ESYNTAX,
                       "line 1, column 34: expected END to close CASE, found 'FROM'");
    assert_parse_error("SELECT CASE WHEN THEN 1 END", FR_ESYNTAX,
                       "line 1, column 18: expected an expression, found 'THEN'");
    assert_parse_error("SELECT CASE WHEN a THEN 1 ELSE 2 ELSE 3 END", FR_ESYNTAX,
                       "line 1, column 34: expected END to close CASE, found 'ELSE'");
}

static void test_functions(void **state)
{
    (void)state;
    assert_expr("COALESCE(a, 0)", "(COALESCE a 0:INT)");
    assert_expr("coalesce(a)", "(COALESCE a)");
    assert_expr("Coalesce(a, b, 'x' || c)", "(COALESCE a b (|| 'x' c))");
    assert_expr("NULLIF(a, '')", "(NULLIF a '')");
    assert_expr("abs(-a) + ABS(1)", "(+ (ABS (NEG a)) (ABS 1:INT))");
    assert_expr("lower(s) = UPPER(t)", "(= (LOWER s) (UPPER t))");
    assert_expr("char_length(s)", "(CHAR_LENGTH s)");
    assert_expr("CHARACTER_LENGTH(s)", "(CHAR_LENGTH s)");
    assert_expr("ABS((a))", "(ABS a)");
    /* Function names are not reserved: without '(' they are columns. */
    assert_expr("lower + abs", "(+ lower abs)");
    assert_expr("coalesce IS NULL", "(IS NULL coalesce)");
    assert_expr("`lower`", "lower");
    assert_parse_error("SELECT COALESCE() FROM t", FR_ESYNTAX,
                       "line 1, column 8: COALESCE needs at least one argument");
    assert_parse_error("SELECT a,\n  NULLIF(a) FROM t", FR_ESYNTAX,
                       "line 2, column 3: NULLIF needs 2 arguments, not 1");
    assert_parse_error("SELECT nullif(a, b, c) FROM t", FR_ESYNTAX,
                       "line 1, column 8: NULLIF needs 2 arguments, not 3");
    assert_parse_error("SELECT ABS() FROM t", FR_ESYNTAX,
                       "line 1, column 8: ABS needs 1 argument, not 0");
    assert_parse_error("SELECT lower(a, b) FROM t", FR_ESYNTAX,
                       "line 1, column 8: LOWER needs 1 argument, not 2");
    assert_parse_error("SELECT ABS(a FROM t", FR_ESYNTAX,
                       "line 1, column 14: expected ',' or ')' after an argument of ABS, found "
                       "'FROM'");
    assert_parse_error("SELECT COALESCE(a,) FROM t", FR_ESYNTAX,
                       "line 1, column 19: expected an expression, found ')'");
    assert_parse_error("SELECT ABS(*) FROM t", FR_ESYNTAX,
                       "line 1, column 12: expected an expression, found '*'");
    assert_parse_error("SELECT ABS(DISTINCT a) FROM t", FR_ESYNTAX,
                       "line 1, column 12: expected an expression, found 'DISTINCT'");
    assert_parse_error("SELECT ABS(a", FR_ESYNTAX,
                       "line 1, column 13: expected ',' or ')' after an argument of ABS, found "
                       "end of input");
    assert_parse_error("SELECT upper(", FR_ESYNTAX,
                       "line 1, column 14: expected an expression, found end of input");
}

/* ---- literals -------------------------------------------------------------------------- */

static void test_literals_numbers(void **state)
{
    (void)state;
    assert_expr("123", "123:INT");
    assert_expr("0", "0:INT");
    assert_expr("007", "7:INT");
    assert_expr("2147483647", "2147483647:INT");
    assert_expr("2147483648", "2147483648:BIGINT");
    assert_expr("-2147483648", "-2147483648:INT");
    assert_expr("9223372036854775807", "9223372036854775807:BIGINT");
    assert_expr("9223372036854775808", "9223372036854775808:DECIMAL(19, 0)");
    assert_expr("-9223372036854775808", "-9223372036854775808:BIGINT");
    assert_expr("99999999999999999999999999999999999999",
                "99999999999999999999999999999999999999:DECIMAL(38, 0)");
    assert_expr("12.50", "12.50:DECIMAL(4, 2)");
    assert_expr("-12.50", "-12.50:DECIMAL(4, 2)");
    assert_expr("0.05", "0.05:DECIMAL(2, 2)");
    assert_expr(".5", "0.5:DECIMAL(1, 1)");
    assert_expr("5.", "5:DECIMAL(1, 0)");
    assert_expr("0.0", "0.0:DECIMAL(1, 1)");
    assert_expr("1.5e3", "1500:DOUBLE");
    assert_expr("1E-3", "0.001:DOUBLE");
    assert_expr("2e+2", "200:DOUBLE");
    assert_expr("-1.5e3", "-1500:DOUBLE");
    assert_expr("1 - -1", "(- 1:INT -1:INT)");
    assert_expr("- (5)", "-5:INT");
}

static void test_literals_other(void **state)
{
    (void)state;
    assert_expr("'abc'", "'abc'");
    assert_expr("'it''s'", "'it's'");
    assert_expr("''", "''");
    assert_expr("'two\nlines'", "'two\nlines'");
    assert_expr("X'0A1b'", "X'0a1b'");
    assert_expr("x''", "X''");
    assert_expr("TRUE", "TRUE");
    assert_expr("false", "FALSE");
    assert_expr("NULL", "NULL");
    char want[64];
    snprintf(want, sizeof want, "%lld:DATE", (long long)fr_days_from_civil(2026, 1, 1));
    assert_expr("DATE '2026-01-01'", want);
    assert_expr("TIME '10:00:00.123'", "36000123:TIME(3)");
    assert_expr("TIME '10:00:00'", "36000:TIME(0)");
    int64_t day = fr_days_from_civil(2026, 1, 1) * 86400 + 36000;
    snprintf(want, sizeof want, "%lld:TIMESTAMP(3)", (long long)(day * 1000 + 123));
    assert_expr("TIMESTAMP '2026-01-01 10:00:00.123'", want);
    snprintf(want, sizeof want, "%lld:TIMESTAMP(0)", (long long)day);
    assert_expr("timestamp '2026-01-01 10:00:00'", want);
    snprintf(want, sizeof want, "%lld:TIMESTAMP_LTZ(6)", (long long)(day * 1000000 + 123456));
    assert_expr("TIMESTAMP_LTZ '2026-01-01 10:00:00.123456'", want);
    /* Without a string after it, DATE is a column name. */
    assert_expr("date + 1", "(+ date 1:INT)");
    /* Literal types are NOT NULL; a NULL literal is flagged null. */
    fr_expr *e = NULL;
    fr_error err = {0};
    assert_int_equal(sql_parse_expression("12.5", 4, arena, &e, &err), 0);
    assert_false(e->value.type.nullable);
    assert_int_equal(sql_parse_expression("NULL", 4, arena, &e, &err), 0);
    assert_true(e->value.is_null);
}

static void test_literal_errors(void **state)
{
    (void)state;
    assert_parse_error("SELECT 1e", FR_ESYNTAX,
                       "line 1, column 8: malformed number: the exponent needs digits");
    assert_parse_error("SELECT 123abc", FR_ESYNTAX,
                       "line 1, column 8: malformed number: 'a' right after its digits");
    assert_parse_error("SELECT 1.2.3", FR_ESYNTAX,
                       "line 1, column 8: malformed number: '.' right after its digits");
    assert_parse_error("SELECT X'0'", FR_ESYNTAX,
                       "line 1, column 8: bytes literal needs an even number of hex digits, has 1");
    assert_parse_error("SELECT X'zz'", FR_ESYNTAX,
                       "line 1, column 8: bytes literal holds a character that is not a hex digit");
    assert_parse_error("SELECT 999999999999999999999999999999999999999", FR_ERANGE,
                       "line 1, column 8: integer literal has more than 38 digits");
    assert_parse_error("SELECT 1.999999999999999999999999999999999999999", FR_ERANGE,
                       "line 1, column 8: decimal literal has more than 38 digits");
    assert_parse_error("SELECT 1e999", FR_ERANGE,
                       "line 1, column 8: number 1e999 is out of range for DOUBLE");
    assert_parse_error("SELECT 'abc", FR_ESYNTAX, "line 1, column 8: unterminated string literal");
    assert_parse_error("SELECT TIMESTAMP '2026-01-01 10:00:00.1234567890'", FR_EINVAL,
                       "line 1, column 18: '2026-01-01 10:00:00.1234567890' has more than 9 "
                       "fractional digits");
    fr_error err = {0};
    assert_int_equal(fr_sql_parse_only("SELECT DATE '2026-13-01'", 24, &err), FR_EINVAL);
    assert_true(strncmp(err.msg, "line 1, column 13: '2026-13-01' is not a valid DATE literal",
                        59) == 0);
}

/* ---- statements ------------------------------------------------------------------------ */

static void test_create_database(void **state)
{
    (void)state;
    sql_stmt *st = parse_one("CREATE DATABASE IF NOT EXISTS Shop");
    assert_int_equal(st->kind, SQL_CREATE_DATABASE);
    assert_true(st->if_not_exists);
    assert_string_equal(st->db.s, "shop");
    assert_int_equal(st->db.pos.col, 31);
    st = parse_one("create database `MyDb`");
    assert_false(st->if_not_exists);
    assert_string_equal(st->db.s, "MyDb");
    st = parse_one("CREATE DATABASE default");
    assert_string_equal(st->db.s, "default");
}

static void test_create_table(void **state)
{
    (void)state;
    sql_stmt *st = parse_one(
        "CREATE TABLE IF NOT EXISTS db.T (\n"
        "  a INT NOT NULL, b STRING COMMENT 'the b', c DECIMAL(10, 2), d TIMESTAMP(3),\n"
        "  e TIMESTAMP WITH LOCAL TIME ZONE, f TIMESTAMP_LTZ(3), g VARCHAR(20), h CHAR,\n"
        "  i BYTES, j DATE, k TIME(3), l BOOLEAN, m TINYINT, n SMALLINT, o BIGINT,\n"
        "  p FLOAT, q DOUBLE, r DOUBLE PRECISION NULL, s DECIMAL, t TIMESTAMP, u INTEGER,\n"
        "  v TIME WITHOUT TIME ZONE,\n"
        "  PRIMARY KEY (a, j) NOT ENFORCED\n"
        ") COMMENT 'orders' PARTITIONED BY (j) WITH ('bucket.num' = '4', 'bucket.key'='a',\n"
        "  'table.log.ttl' = '7d', 'table.log.arrow.compression.type' = 'LZ4_FRAME')");
    assert_int_equal(st->kind, SQL_CREATE_TABLE);
    assert_true(st->if_not_exists);
    assert_string_equal(st->table.db, "db");
    assert_string_equal(st->table.name, "t");
    assert_int_equal(st->ncolumns, 22);
    const char *want[] = {"INT NOT NULL", "STRING", "DECIMAL(10, 2)", "TIMESTAMP(3)",
                          "TIMESTAMP_LTZ(6)", "TIMESTAMP_LTZ(3)", "VARCHAR(20)", "CHAR(1)",
                          "BYTES", "DATE", "TIME(3)", "BOOLEAN", "TINYINT", "SMALLINT",
                          "BIGINT", "FLOAT", "DOUBLE", "DOUBLE", "DECIMAL(10, 0)",
                          "TIMESTAMP(6)", "INT", "TIME(0)"};
    for (int i = 0; i < st->ncolumns; i++) {
        char t[64];
        fr_type_format(&st->columns[i].type, true, t, sizeof t);
        assert_string_equal(t, want[i]);
    }
    assert_string_equal(st->columns[0].name.s, "a");
    assert_string_equal(st->columns[1].comment, "the b");
    assert_int_equal(st->nprimary_key, 2);
    assert_string_equal(st->primary_key[1].s, "j");
    assert_int_equal(st->primary_key_pos.line, 7);
    assert_int_equal(st->primary_key_pos.col, 3);
    assert_int_equal(st->npartition_keys, 1);
    assert_string_equal(st->comment, "orders");
    assert_int_equal(st->noptions, 4);
    assert_string_equal(st->options[0].key, "bucket.num");
    assert_string_equal(st->options[0].value, "4");
    assert_string_equal(st->options[3].value, "LZ4_FRAME");

    st = parse_one("CREATE TABLE t (id BIGINT PRIMARY KEY NOT ENFORCED, `Select` STRING)");
    assert_null(st->table.db);
    assert_int_equal(st->nprimary_key, 1);
    assert_string_equal(st->primary_key[0].s, "id");
    assert_string_equal(st->columns[1].name.s, "Select");
    assert_int_equal(st->noptions, 0);
    assert_null(st->partition_keys);

    st = parse_one("CREATE TABLE t (a INT, CONSTRAINT pk PRIMARY KEY (a) NOT ENFORCED)");
    assert_int_equal(st->nprimary_key, 1);
}

static void test_create_table_errors(void **state)
{
    (void)state;
    assert_parse_error("CREATE TABLE t (a INTT)", FR_ESYNTAX,
                       "line 1, column 19: unknown type 'INTT' (types: BOOLEAN, TINYINT, "
                       "SMALLINT, INT, BIGINT, FLOAT, DOUBLE, DECIMAL(p, s), CHAR(n), VARCHAR(n), "
                       "STRING, BYTES, DATE, TIME(p), TIMESTAMP(p), TIMESTAMP_LTZ(p))");
    assert_parse_error("CREATE TABLE t (a DECIMAL(39))", FR_ESYNTAX,
                       "line 1, column 27: the DECIMAL precision must be between 1 and 38");
    assert_parse_error("CREATE TABLE t (a DECIMAL(5, 6))", FR_ESYNTAX,
                       "line 1, column 30: the DECIMAL scale 6 is larger than its precision 5");
    assert_parse_error("CREATE TABLE t (a VARCHAR(0))", FR_ESYNTAX,
                       "line 1, column 27: the length must be between 1 and 2147483647");
    assert_parse_error("CREATE TABLE t (a TIMESTAMP(10))", FR_ESYNTAX,
                       "line 1, column 29: the precision must be between 0 and 9");
    assert_parse_error("CREATE TABLE t (a INT, PRIMARY KEY (a))", FR_ESYNTAX,
                       "line 1, column 39: expected NOT ENFORCED after PRIMARY KEY (firth does "
                       "not check keys), found ')'");
    assert_parse_error("CREATE TABLE t (a INT PRIMARY KEY NOT ENFORCED, PRIMARY KEY (a) NOT "
                       "ENFORCED)", FR_ESYNTAX,
                       "line 1, column 49: a table has at most one PRIMARY KEY");
    assert_parse_error("CREATE TABLE t ()", FR_ESYNTAX,
                       "line 1, column 17: expected a column name, found ')'");
    assert_parse_error("CREATE TABLE t (PRIMARY KEY (a) NOT ENFORCED)", FR_ESYNTAX,
                       "line 1, column 14: a table needs at least one column");
    assert_parse_error("CREATE TABLE t (a INT) WITH (bucket.num = '4')", FR_ESYNTAX,
                       "line 1, column 30: expected an option name in quotes ('bucket.num'), "
                       "found 'bucket'");
    assert_parse_error("CREATE TABLE t (a INT) WITH ('k' = '1', 'k' = '2')", FR_ESYNTAX,
                       "line 1, column 41: option 'k' is given twice");
    assert_parse_error("CREATE TABLE t (a INT) WITH ('k' = 1)", FR_ESYNTAX,
                       "line 1, column 36: expected an option value in quotes ('4'), found '1'");
    assert_parse_error("CREATE VIEW v", FR_ESYNTAX,
                       "line 1, column 8: expected DATABASE or TABLE after CREATE, found 'VIEW'");
    assert_parse_error("CREATE TABLE t (a INT", FR_ESYNTAX,
                       "line 1, column 22: expected ',' or ')', found end of input");
}

static void test_drop_show_describe_use(void **state)
{
    (void)state;
    sql_stmt *st = parse_one("DROP DATABASE IF EXISTS d CASCADE");
    assert_int_equal(st->kind, SQL_DROP_DATABASE);
    assert_true(st->if_exists);
    assert_true(st->cascade);
    st = parse_one("drop database d restrict");
    assert_false(st->if_exists);
    assert_false(st->cascade);
    st = parse_one("DROP TABLE IF EXISTS d.t");
    assert_int_equal(st->kind, SQL_DROP_TABLE);
    assert_true(st->if_exists);
    assert_string_equal(st->table.db, "d");
    st = parse_one("DROP TABLE t");
    assert_false(st->if_exists);
    assert_null(st->table.db);
    assert_int_equal(parse_one("SHOW DATABASES")->kind, SQL_SHOW_DATABASES);
    st = parse_one("SHOW TABLES");
    assert_int_equal(st->kind, SQL_SHOW_TABLES);
    assert_null(st->db.s);
    st = parse_one("show tables from Shop");
    assert_string_equal(st->db.s, "shop");
    st = parse_one("SHOW TABLES IN shop");
    assert_string_equal(st->db.s, "shop");
    st = parse_one("SHOW CREATE TABLE d.t");
    assert_int_equal(st->kind, SQL_SHOW_CREATE_TABLE);
    st = parse_one("DESCRIBE d.t");
    assert_int_equal(st->kind, SQL_DESCRIBE);
    assert_string_equal(st->table.name, "t");
    st = parse_one("desc t");
    assert_int_equal(st->kind, SQL_DESCRIBE);
    st = parse_one("USE Shop");
    assert_int_equal(st->kind, SQL_USE);
    assert_string_equal(st->db.s, "shop");
    assert_parse_error("SHOW VIEWS", FR_ESYNTAX,
                       "line 1, column 6: expected DATABASES, TABLES, PARTITIONS or CREATE TABLE "
                       "after SHOW, found 'VIEWS'");
    assert_parse_error("DROP TABLE", FR_ESYNTAX,
                       "line 1, column 11: expected a table name, found end of input");
    assert_parse_error("USE", FR_ESYNTAX,
                       "line 1, column 4: expected a database name, found end of input");
    assert_parse_error("DROP TABLE a.b.c", FR_ESYNTAX,
                       "line 1, column 15: expected ';' or the end of the statement, found '.'");
}

static void test_insert(void **state)
{
    (void)state;
    sql_stmt *st = parse_one("INSERT INTO t (a, B) VALUES (1, 'x'), (-2, NULL),\n(3 + 4, 'z')");
    assert_int_equal(st->kind, SQL_INSERT);
    assert_int_equal(st->ninsert_columns, 2);
    assert_string_equal(st->insert_columns[1].s, "B");
    assert_int_equal(st->nrows, 3);
    assert_int_equal(st->rows[1].nvalues, 2);
    assert_int_equal(st->rows[1].values[0]->value.v.i, -2);
    assert_true(st->rows[1].values[1]->value.is_null);
    assert_int_equal(st->rows[2].pos.line, 2);
    assert_int_equal(st->rows[2].pos.col, 1);
    assert_int_equal(st->rows[2].values[0]->kind, FR_EX_BINARY);
    st = parse_one("insert into db.t values (1)");
    assert_null(st->insert_columns);
    assert_string_equal(st->table.db, "db");
    assert_parse_error("INSERT INTO t VALUES", FR_ESYNTAX,
                       "line 1, column 21: expected '(' and a row of values, found end of input");
    assert_parse_error("INSERT INTO t VALUES (1,)", FR_ESYNTAX,
                       "line 1, column 25: expected an expression, found ')'");
    assert_parse_error("INSERT t VALUES (1)", FR_ESYNTAX,
                       "line 1, column 8: expected INTO, found 't'");
}

static void test_select(void **state)
{
    (void)state;
    sql_stmt *st = parse_one("SELECT * FROM t");
    assert_int_equal(st->kind, SQL_SELECT);
    assert_int_equal(st->nitems, 1);
    assert_null(st->items[0].expr);
    assert_true(st->has_from);
    assert_null(st->where);
    assert_int_equal(st->limit, -1);

    st = parse_one("select A from t where a > 1");
    assert_string_equal(st->items[0].expr->name, "A");
    assert_int_equal(st->where->op, FR_OP_GT);
    assert_int_equal(st->where->line, 1);
    assert_int_equal(st->where->col, 25);
}

static void test_select_items(void **state)
{
    (void)state;
    sql_stmt *st = parse_one(
        "SELECT a, b AS bb, a  +\n 1 c, `select`, 'x  y' || s FROM Db.T WHERE a > 1 LIMIT 10");
    assert_int_equal(st->nitems, 5);
    assert_string_equal(st->items[0].text, "a");
    assert_null(st->items[0].alias);
    assert_string_equal(st->items[1].alias, "bb");
    assert_string_equal(st->items[2].alias, "c");
    assert_string_equal(st->items[2].text, "a + 1");
    assert_string_equal(st->items[3].expr->name, "select");
    assert_string_equal(st->items[4].text, "'x  y' || s");
    assert_string_equal(st->table.db, "db");
    assert_string_equal(st->table.name, "t");
    assert_int_equal(st->where->op, FR_OP_GT);
    assert_int_equal(st->limit, 10);
    st = parse_one("SELECT 1 + 2, 'a' LIMIT 0");
    assert_false(st->has_from);
    assert_int_equal(st->limit, 0);
    st = parse_one("SELECT *, a FROM t");
    assert_int_equal(st->nitems, 2);
    assert_parse_error("SELECT * LIMIT 1", FR_ESYNTAX, "line 1, column 8: SELECT * needs a FROM clause");
    assert_parse_error("SELECT 1 WHERE 1 = 1", FR_ESYNTAX,
                       "line 1, column 10: WHERE needs a FROM clause");
    assert_parse_error("SELECT a FROM t LIMIT -1", FR_ESYNTAX,
                       "line 1, column 23: expected a row count after LIMIT, found '-'");
    assert_parse_error("SELECT a FROM t LIMIT 99999999999999999999", FR_ERANGE,
                       "line 1, column 23: LIMIT is too large");
    assert_parse_error("SELECT a FROM", FR_ESYNTAX,
                       "line 1, column 14: expected a table name, found end of input");
    assert_parse_error("SELECT from FROM t", FR_ESYNTAX,
                       "line 1, column 8: expected an expression, found 'from'");
    assert_parse_error("SELECT a AS from FROM t", FR_ESYNTAX,
                       "line 1, column 13: expected a column alias, found the reserved word "
                       "'from' (write `from` to use it as a name)");
    assert_parse_error("SELECT a FROM select", FR_ESYNTAX,
                       "line 1, column 15: expected a table name, found the reserved word "
                       "'select' (write `select` to use it as a name)");
    assert_parse_error("SELECT substr(a) FROM t", FR_EUNSUPPORTED,
                       "line 1, column 8: unknown function 'substr'");
    assert_parse_error("SELECT a FROM t WHERE s LIKE 'a' ESCAPE '!'", FR_EUNSUPPORTED,
                       "line 1, column 34: LIKE ... ESCAPE is not supported");
    assert_parse_error("SELECT a FROM t\nWHERE a >", FR_ESYNTAX,
                       "line 2, column 10: expected an expression, found end of input");
    assert_parse_error("SELECT a FROM t WHERE a NOT 1", FR_ESYNTAX,
                       "line 1, column 29: expected IN, BETWEEN or LIKE after NOT, found '1'");
    assert_parse_error("SELECT a FROM t WHERE a BETWEEN 1 OR 2", FR_ESYNTAX,
                       "line 1, column 35: expected AND, found 'OR'");
    assert_parse_error("SELECT CAST(a INT)", FR_ESYNTAX,
                       "line 1, column 15: expected AS, found 'INT'");
    assert_parse_error("SELECT (1 + 2", FR_ESYNTAX,
                       "line 1, column 14: expected ')', found end of input");
    assert_parse_error("SELECT a FROM t WHERE a IS 1", FR_ESYNTAX,
                       "line 1, column 28: expected NULL, found '1'");
}

static void test_select_group_order(void **state)
{
    (void)state;
    sql_stmt *st = parse_one("SELECT DISTINCT a FROM t");
    assert_true(st->distinct);
    assert_int_equal(st->ngroup_by, 0);
    st = parse_one("SELECT ALL a FROM t");
    assert_false(st->distinct);
    st = parse_one("select k, count(*), Sum(DISTINCT v + 1) s from t where v > 0 group by k, "
                   "v % 2 having count(*) > 1 order by s desc, 1 nulls first, k asc nulls last "
                   "limit 3");
    assert_int_equal(st->nitems, 3);
    assert_string_equal(st->items[1].text, "count(*)");
    assert_string_equal(expr_str("COUNT(*) + count(DISTINCT a) - avg(b * 2)"),
                        "(- (+ (COUNT) (COUNT DISTINCT a)) (AVG (* b 2:INT)))");
    assert_int_equal(st->items[2].expr->kind, FR_EX_AGGREGATE);
    assert_int_equal(st->items[2].expr->agg, FR_AGGFN_SUM);
    assert_true(st->items[2].expr->distinct);
    assert_int_equal(st->ngroup_by, 2);
    assert_string_equal(st->group_by[0]->name, "k");
    assert_int_equal(st->group_by[1]->op, FR_OP_MOD);
    assert_int_equal(st->having->op, FR_OP_GT);
    assert_int_equal(st->having_pos.col, 87);
    assert_int_equal(st->norder_by, 3);
    assert_true(st->order_by[0].desc);
    assert_true(st->order_by[0].nulls_first); /* DESC puts NULLs first unless told */
    assert_false(st->order_by[1].desc);
    assert_true(st->order_by[1].nulls_first);
    assert_false(st->order_by[2].desc);
    assert_false(st->order_by[2].nulls_first);
    assert_int_equal(st->order_by[2].pos.col, 132);
    assert_int_equal(st->limit, 3);
    /* The aggregate names are no reserved words. */
    st = parse_one("SELECT count, sum FROM t ORDER BY count");
    assert_string_equal(st->order_by[0].expr->name, "count");
    assert_parse_error("SELECT SUM(*) FROM t", FR_ESYNTAX,
                       "line 1, column 12: SUM(*) is not allowed: only COUNT(*) counts rows");
    assert_parse_error("SELECT COUNT(a, b) FROM t", FR_ESYNTAX,
                       "line 1, column 15: expected ')' to close the aggregate function, found ','");
    assert_parse_error("SELECT a FROM t GROUP a", FR_ESYNTAX,
                       "line 1, column 23: expected BY, found 'a'");
    assert_parse_error("SELECT a FROM t ORDER BY a NULLS LOW", FR_ESYNTAX,
                       "line 1, column 34: expected FIRST or LAST after NULLS, found 'LOW'");
    assert_parse_error("SELECT a FROM t LIMIT 1 ORDER BY a", FR_ESYNTAX,
                       "line 1, column 25: expected ';' or the end of the statement, found "
                       "'ORDER'");
    assert_parse_error("SELECT a FROM t HAVING", FR_ESYNTAX,
                       "line 1, column 23: expected an expression, found end of input");
}

/* ---- scripts, names, comments ---------------------------------------------------------- */

static void test_scripts(void **state)
{
    (void)state;
    sql_script s = parse_ok(";; SELECT 1;;\n SELECT 2 ; ");
    assert_int_equal(s.nstmts, 2);
    assert_int_equal(s.stmts[1]->pos.line, 2);
    assert_int_equal(s.stmts[1]->pos.col, 2);
    s = parse_ok("");
    assert_int_equal(s.nstmts, 0);
    s = parse_ok("  -- only a comment\n /* and\n another */ ");
    assert_int_equal(s.nstmts, 0);
    assert_expr("1 /* inside */ + -- to the end\n 2", "(+ 1:INT 2:INT)");
    assert_expr("a--b\n", "a");
    assert_expr("a-/**/-b", "(- a (NEG b))");
    assert_parse_error("SELECT 1; SELEC 2", FR_ESYNTAX,
                       "line 1, column 11: expected a statement (SELECT, INSERT, UPDATE, DELETE, "
                       "CREATE, ALTER, DROP, SHOW, DESCRIBE, USE, CALL), found 'SELEC'");
    assert_parse_error("SELECT 1 2", FR_ESYNTAX,
                       "line 1, column 10: expected ';' or the end of the statement, found '2'");
    assert_parse_error("SELECT 1 /* open", FR_ESYNTAX, "line 1, column 10: unterminated /* comment");
    assert_parse_error("SELECT 1 # 2", FR_ESYNTAX, "line 1, column 10: unexpected character '#'");
    assert_parse_error("SELECT 1 | 2", FR_ESYNTAX, "line 1, column 10: unexpected character '|'");
    assert_parse_error("SELECT \x01", FR_ESYNTAX, "line 1, column 8: unexpected byte 0x01");
    /* Columns count characters, not bytes. */
    assert_parse_error("SELECT 'é', #", FR_ESYNTAX, "line 1, column 13: unexpected character '#'");
    /* A NUL byte in the text is an error, not an end. */
    fr_error err = {0};
    assert_int_equal(fr_sql_parse_only("SELECT 1\0", 9, &err), FR_ESYNTAX);
    assert_string_equal(err.msg, "line 1, column 9: unexpected byte 0x00");
    /* A lexer error after a complete statement still fails the parse. */
    assert_parse_error("SELECT 1 'x", FR_ESYNTAX, "line 1, column 10: unterminated string literal");
}

static void test_names(void **state)
{
    (void)state;
    assert_expr("`a``b`", "a`b");
    assert_expr("`with space`", "with space");
    assert_expr("MixedCase", "MixedCase");
    assert_expr("`select` + key + type + name", "(+ (+ (+ select key) type) name)");
    sql_stmt *st = parse_one("SELECT A FROM MyDb.`MyTable`");
    assert_string_equal(st->table.db, "mydb");
    assert_string_equal(st->table.name, "MyTable");
    assert_string_equal(st->items[0].expr->name, "A");
    assert_parse_error("SELECT ``", FR_ESYNTAX, "line 1, column 8: a quoted name may not be empty");
    assert_parse_error("SELECT `abc", FR_ESYNTAX, "line 1, column 8: unterminated `quoted name`");
    char text[600];
    snprintf(text, sizeof text, "SELECT %0256d", 0);
    memset(text + 7, 'a', 256);
    assert_parse_error(text, FR_ELIMIT, "line 1, column 8: name longer than 255 bytes");
    text[7 + 255] = '\0';
    assert_parse_error(text, FR_OK, "");
    snprintf(text, sizeof text, "SELECT `%0256d`", 0);
    assert_parse_error(text, FR_ELIMIT, "line 1, column 8: name longer than 255 bytes");
}

/* ---- limits ---------------------------------------------------------------------------- */

static void test_depth_limits(void **state)
{
    (void)state;
    fr_buf b;
    fr_buf_init(&b);
    fr_error err = {0};
    /* Parentheses nest the parser. */
    fr_buf_printf(&b, NULL, "SELECT ");
    for (int i = 0; i < 300; i++) fr_buf_printf(&b, NULL, "(");
    fr_buf_printf(&b, NULL, "1");
    for (int i = 0; i < 300; i++) fr_buf_printf(&b, NULL, ")");
    assert_int_equal(fr_sql_parse_only((char *)b.data, b.len, &err), FR_ELIMIT);
    assert_non_null(strstr(err.msg, "expression nested deeper than 256 levels"));
    /* A long chain of + builds a deep tree without recursion. */
    fr_buf_reset(&b);
    fr_buf_printf(&b, NULL, "SELECT 1");
    for (int i = 0; i < 300; i++) fr_buf_printf(&b, NULL, " + 1");
    assert_int_equal(fr_sql_parse_only((char *)b.data, b.len, &err), FR_ELIMIT);
    assert_non_null(strstr(err.msg, "expression nested deeper than 256 levels"));
    /* Unary operators and NOT recurse. */
    fr_buf_reset(&b);
    fr_buf_printf(&b, NULL, "SELECT ");
    for (int i = 0; i < 100000; i++) fr_buf_printf(&b, NULL, "NOT ");
    fr_buf_printf(&b, NULL, "TRUE");
    assert_int_equal(fr_sql_parse_only((char *)b.data, b.len, &err), FR_ELIMIT);
    fr_buf_reset(&b);
    fr_buf_printf(&b, NULL, "SELECT ");
    for (int i = 0; i < 100000; i++) fr_buf_printf(&b, NULL, "- ");
    fr_buf_printf(&b, NULL, "1");
    assert_int_equal(fr_sql_parse_only((char *)b.data, b.len, &err), FR_ELIMIT);
    /* A long OR chain is balanced, so it is fine. */
    fr_buf_reset(&b);
    fr_buf_printf(&b, NULL, "SELECT a FROM t WHERE a = 0");
    for (int i = 1; i < 5000; i++) fr_buf_printf(&b, NULL, " OR a = %d", i);
    assert_int_equal(fr_sql_parse_only((char *)b.data, b.len, &err), 0);
    /* So is a long IN list and many rows. */
    fr_buf_reset(&b);
    fr_buf_printf(&b, NULL, "SELECT a FROM t WHERE a IN (0");
    for (int i = 1; i < 5000; i++) fr_buf_printf(&b, NULL, ", %d", i);
    fr_buf_printf(&b, NULL, ")");
    assert_int_equal(fr_sql_parse_only((char *)b.data, b.len, &err), 0);
    fr_buf_free(&b);
    /* The text limit is checked before anything is read. */
    assert_int_equal(fr_sql_parse_only("SELECT 1", (size_t)FR_SQL_TEXT_BYTES_MAX + 1, &err),
                     FR_ELIMIT);
    assert_non_null(strstr(err.msg, "exceeds the 16777216-byte limit"));
}

static void test_clone(void **state)
{
    (void)state;
    fr_expr *e = NULL;
    fr_error err = {0};
    const char *text = "a IN (1, 2) AND NOT b LIKE 'x%' OR CAST(c AS INT) BETWEEN 1 AND 2 OR "
                       "CASE a WHEN 1 THEN COALESCE(b, c) = 'x' ELSE ABS(a) > 1 END";
    assert_int_equal(sql_parse_expression(text, strlen(text), arena, &e, &err), 0);
    fr_expr *c = sql_expr_clone(arena, e);
    assert_non_null(c);
    assert_ptr_not_equal(c, e);
    fr_buf b1, b2;
    fr_buf_init(&b1);
    fr_buf_init(&b2);
    print_expr(e, &b1);
    print_expr(c, &b2);
    assert_int_equal(b1.len, b2.len);
    assert_memory_equal(b1.data, b2.data, b1.len);
    assert_ptr_not_equal(c->args, e->args);
    fr_buf_free(&b1);
    fr_buf_free(&b2);
}

/* Every allocation of a parse may fail: the parse then fails cleanly with FR_ENOMEM. */
static void test_alloc_failures(void **state)
{
    (void)state;
    const char *text =
        "CREATE TABLE IF NOT EXISTS db.t (a INT NOT NULL, b STRING COMMENT 'x', "
        "PRIMARY KEY (a) NOT ENFORCED) WITH ('bucket.num' = '4');\n"
        "INSERT INTO t (a, b) VALUES (1, 'x'), (2, 'it''s'), (3, X'0a');\n"
        "SELECT a, b AS c, a + 1 FROM t WHERE a IN (1, 2) OR b LIKE 'x%' AND NOT a BETWEEN 1 "
        "AND 2 LIMIT 3;\n"
        "SELECT CASE a WHEN 1 THEN COALESCE(b, 'x', 'y') ELSE NULLIF(b, 'z') END, "
        "CASE WHEN a > 1 THEN LOWER(b) END FROM t";
    int failures = 0;
    for (long n = 1;; n++) {
        fr_error err = {0};
        fr_alloc_fail_after(n);
        int rc = fr_sql_parse_only(text, strlen(text), &err);
        fr_alloc_fail_after(0);
        if (rc == 0) break;
        assert_int_equal(rc, FR_ENOMEM);
        assert_int_equal(err.code, FR_ENOMEM);
        failures++;
        assert_true(n < 10000);
    }
    assert_true(failures > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_precedence, setup, teardown),
        cmocka_unit_test_setup_teardown(test_predicates, setup, teardown),
        cmocka_unit_test_setup_teardown(test_case, setup, teardown),
        cmocka_unit_test_setup_teardown(test_functions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_literals_numbers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_literals_other, setup, teardown),
        cmocka_unit_test_setup_teardown(test_literal_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_create_database, setup, teardown),
        cmocka_unit_test_setup_teardown(test_create_table, setup, teardown),
        cmocka_unit_test_setup_teardown(test_create_table_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_drop_show_describe_use, setup, teardown),
        cmocka_unit_test_setup_teardown(test_insert, setup, teardown),
        cmocka_unit_test_setup_teardown(test_select, setup, teardown),
        cmocka_unit_test_setup_teardown(test_select_items, setup, teardown),
        cmocka_unit_test_setup_teardown(test_scripts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_names, setup, teardown),
        cmocka_unit_test_setup_teardown(test_select_group_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_depth_limits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_clone, setup, teardown),
        cmocka_unit_test_setup_teardown(test_alloc_failures, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
