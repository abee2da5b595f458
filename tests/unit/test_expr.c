/* test_expr.c — the expression module, case by case: binding (names, types, positions in
 * errors), evaluation of every operator over every type with nulls in every position,
 * Kleene logic, IN / BETWEEN / LIKE / CAST / ||, overflow and division errors, filters,
 * formatting, column lists and pruning over hand-made statistics.
 *
 * Every evaluation of a BOOLEAN expression also runs fr_expr_filter and checks that it
 * keeps exactly the rows evaluated TRUE, so the filter's fast paths are tested everywhere
 * the evaluator is. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "expr_run_testkit.h"

/* ---- binding --------------------------------------------------------------------------- */

#define S_ALL                                                                                \
    "a INT, b BIGINT, t TINYINT, d DOUBLE, f FLOAT, m DECIMAL(10, 2), n DECIMAL(5, 3), "     \
    "s STRING, v VARCHAR(10), flag BOOLEAN, dt DATE, ts TIMESTAMP(3), lt TIMESTAMP_LTZ(3), " \
    "tm TIME(3), y BYTES, k INT NOT NULL"

static void test_bind_types(void **state)
{
    (void)state;
    assert_string_equal(bind_type(S_ALL, "a + 1"), "BIGINT");
    assert_string_equal(bind_type(S_ALL, "t * t"), "BIGINT");
    assert_string_equal(bind_type(S_ALL, "k + 1"), "BIGINT NOT NULL");
    assert_string_equal(bind_type(S_ALL, "a + d"), "DOUBLE");
    assert_string_equal(bind_type(S_ALL, "f + 1"), "DOUBLE");
    assert_string_equal(bind_type(S_ALL, "-f"), "DOUBLE");
    assert_string_equal(bind_type(S_ALL, "-a"), "BIGINT");
    assert_string_equal(bind_type(S_ALL, "-m"), "DECIMAL(10, 2)");
    assert_string_equal(bind_type(S_ALL, "m + n"), "DECIMAL(12, 3)");
    assert_string_equal(bind_type(S_ALL, "m - a"), "DECIMAL(13, 2)");
    assert_string_equal(bind_type(S_ALL, "m * n"), "DECIMAL(16, 5)");
    assert_string_equal(bind_type(S_ALL, "m / a"), "DECIMAL(21, 13)");
    assert_string_equal(bind_type(S_ALL, "m % n"), "DECIMAL(5, 3)");
    assert_string_equal(bind_type(S_ALL, "m * m * m * m * m"), "DECIMAL(38, 6)");
    assert_string_equal(bind_type(S_ALL, "m + 1.5e0"), "DOUBLE");
    assert_string_equal(bind_type(S_ALL, "dt + 1"), "DATE");
    assert_string_equal(bind_type(S_ALL, "1 + dt"), "DATE");
    assert_string_equal(bind_type(S_ALL, "dt - dt"), "INT");
    assert_string_equal(bind_type(S_ALL, "s || v"), "STRING");
    assert_string_equal(bind_type(S_ALL, "y || y"), "BYTES");
    assert_string_equal(bind_type(S_ALL, "a = 1"), "BOOLEAN");
    assert_string_equal(bind_type(S_ALL, "k = 1"), "BOOLEAN NOT NULL");
    assert_string_equal(bind_type(S_ALL, "a IS NULL"), "BOOLEAN NOT NULL");
    assert_string_equal(bind_type(S_ALL, "k IN (1, NULL)"), "BOOLEAN");
    assert_string_equal(bind_type(S_ALL, "s LIKE 'x%'"), "BOOLEAN");
    assert_string_equal(bind_type(S_ALL, "CAST(a AS DECIMAL(5, 1))"), "DECIMAL(5, 1)");
    assert_string_equal(bind_type(S_ALL, "CAST(k AS STRING)"), "STRING NOT NULL");
    assert_string_equal(bind_type(S_ALL, "NULL + 1"), "BIGINT");
    assert_string_equal(bind_type(S_ALL, "A + B"), "BIGINT"); /* names are case-insensitive */
    assert_string_equal(bind_type(S_ALL, "dt = '2026-01-01'"), "BOOLEAN");
    assert_string_equal(bind_type(S_ALL, "k = 'x' || 'y'"), "error ETYPE: line 1, column 1: cannot compare INT with STRING");
}

static void test_bind_errors(void **state)
{
    (void)state;
    assert_string_equal(bind_type(S_ALL, "x + 1"), "error ENOTFOUND: line 1, column 1: unknown column 'x'");
    assert_string_equal(bind_type(S_ALL, "a = 1 AND zz > 2"),
                        "error ENOTFOUND: line 1, column 11: unknown column 'zz'");
    assert_string_equal(bind_type(S_ALL, "a > 0 OR s = 1"),
                        "error ETYPE: line 1, column 10: cannot compare STRING with INT");
    assert_string_equal(bind_type(S_ALL, "'abc' + 1"),
                        "error ETYPE: line 1, column 1: cannot apply + to STRING and INT");
    assert_string_equal(bind_type(S_ALL, "dt = 5"),
                        "error ETYPE: line 1, column 1: cannot compare DATE with INT");
    assert_string_equal(bind_type(S_ALL, "dt < lt"),
                        "error ETYPE: line 1, column 1: cannot compare DATE with TIMESTAMP_LTZ(3)");
    assert_string_equal(bind_type(S_ALL, "ts = lt"),
                        "error ETYPE: line 1, column 1: cannot compare TIMESTAMP(3) with TIMESTAMP_LTZ(3)");
    assert_string_equal(bind_type(S_ALL, "a IN (1, 'x')"),
                        "error ETYPE: line 1, column 1: cannot compare INT with STRING");
    assert_string_equal(bind_type(S_ALL, "y = 'x'"),
                        "error ETYPE: line 1, column 1: cannot compare BYTES with STRING");
    assert_string_equal(bind_type(S_ALL, "flag = 1"),
                        "error ETYPE: line 1, column 1: cannot compare BOOLEAN with INT");
    assert_string_equal(bind_type(S_ALL, "NOT a"),
                        "error ETYPE: line 1, column 1: NOT needs a BOOLEAN operand, not INT");
    assert_string_equal(bind_type(S_ALL, "a AND flag"),
                        "error ETYPE: line 1, column 1: AND needs BOOLEAN operands, not INT");
    assert_string_equal(bind_type(S_ALL, "-s"),
                        "error ETYPE: line 1, column 1: - needs a number, not STRING");
    assert_string_equal(bind_type(S_ALL, "a LIKE 'x'"),
                        "error ETYPE: line 1, column 1: LIKE needs strings, not INT");
    assert_string_equal(bind_type(S_ALL, "s || 1"),
                        "error ETYPE: line 1, column 1: cannot apply || to STRING and INT");
    assert_string_equal(bind_type(S_ALL, "dt - ts"),
                        "error ETYPE: line 1, column 1: cannot apply - to DATE and TIMESTAMP(3)");
    assert_string_equal(bind_type(S_ALL, "CAST(flag AS DATE)"),
                        "error ETYPE: line 1, column 1: cannot cast BOOLEAN to DATE");
    assert_string_equal(bind_type(S_ALL, "CAST(y AS INT)"),
                        "error ETYPE: line 1, column 1: cannot cast BYTES to INT");
    /* A string compared with a date is parsed while binding, and a bad one says where. */
    const char *r = bind_type(S_ALL, "a = 1 AND dt = '2026-13-01'");
    assert_non_null(strstr(r, "error EINVAL: line 1, column 16: "));
    assert_non_null(strstr(r, "2026-13-01"));
}

static void test_bind_depth_and_rebind(void **state)
{
    (void)state;
    fr_schema *s = tk_schema("p BOOLEAN");
    fr_arena *a = fr_arena_new(4096);
    fr_expr *e = fr_expr_column(a, "p");
    for (int i = 0; i < FR_EXPR_DEPTH_MAX + 10; i++)
        e = fr_expr_node(a, FR_EX_UNARY, FR_OP_NOT, 1, &e);
    fr_error err = {0};
    assert_int_equal(fr_expr_bind(e, s, &err), FR_ELIMIT);
    assert_non_null(strstr(err.msg, "nested deeper"));

    /* Binding twice (the string literal became a DATE the first time) gives the same. */
    fr_schema *s2 = tk_schema("dt DATE");
    fr_expr *c = tk_parse(a, "dt >= '2026-01-02'");
    assert_int_equal(fr_expr_bind(c, s2, &err), 0);
    assert_int_equal(c->args[1]->type.id, FR_T_DATE);
    assert_int_equal(fr_expr_bind(c, s2, &err), 0);
    assert_int_equal(c->args[1]->value.v.i, 20455);
    fr_batch *b = tk_batch(s2, "2026-01-01; 2026-01-02; NULL");
    assert_string_equal(run_on(s2, b, "dt >= '2026-01-02'"), "false,true,NULL");
    fr_batch_free(b);
    fr_arena_free(a);
    fr_schema_free(s);
    fr_schema_free(s2);
}

/* ---- arithmetic ------------------------------------------------------------------------ */

static void test_integer_arithmetic(void **state)
{
    (void)state;
    const char *S = "a INT, b BIGINT, t TINYINT";
    const char *R = "1|10|1; -7|3|-128; NULL|5|NULL; 2|NULL|127";
    EXPECT(S, R, "a + b", "11,-4,NULL,NULL");
    EXPECT(S, R, "a - b", "-9,-10,NULL,NULL");
    EXPECT(S, R, "a * b", "10,-21,NULL,NULL");
    EXPECT(S, R, "b / a", "10,0,NULL,NULL");
    EXPECT(S, R, "b % a", "0,3,NULL,NULL");
    EXPECT(S, R, "a / 2", "0,-3,NULL,1");
    EXPECT(S, R, "a % 2", "1,-1,NULL,0");
    EXPECT(S, R, "-a", "-1,7,NULL,-2");
    EXPECT(S, R, "t * t", "1,16384,NULL,16129");
    EXPECT(S, R, "t + 1", "2,-127,NULL,128"); /* BIGINT: no TINYINT wrap-around */
    EXPECT(S, R, "2 * 3 + a", "7,-1,NULL,8");
    EXPECT(S, R, "a + NULL", "NULL,NULL,NULL,NULL");
    EXPECT(S, R, "10 / (a + 8)", "1,10,NULL,1");
}

static void test_integer_errors(void **state)
{
    (void)state;
    const char *S = "b BIGINT, a INT";
    EXPECT(S, "9223372036854775807|0", "b + 1", "error ERANGE: line 1, column 1: BIGINT overflow in +");
    EXPECT(S, "9223372036854775807|0", "b * 2", "error ERANGE: line 1, column 1: BIGINT overflow in *");
    EXPECT(S, "-9223372036854775807|0", "b - 2", "error ERANGE: line 1, column 1: BIGINT overflow in -");
    EXPECT(S, "-9223372036854775807|0", "b - 1", "-9223372036854775808");
    EXPECT(S, "-9223372036854775808|0", "b / -1", "error ERANGE: line 1, column 1: BIGINT overflow in /");
    EXPECT(S, "-9223372036854775808|0", "b % -1", "0");
    EXPECT(S, "-9223372036854775808|0", "-b", "error ERANGE: line 1, column 1: BIGINT overflow in -");
    EXPECT(S, "1|0; 2|1", "b / a", "error EINVAL: line 1, column 1: division by zero");
    EXPECT(S, "1|0", "b % a", "error EINVAL: line 1, column 1: division by zero");
    EXPECT(S, "1|1", "a > 0 AND b / (a - 1) > 0", "error EINVAL: line 1, column 11: division by zero");
    /* Null rows compute nothing, so they raise nothing. */
    EXPECT(S, "NULL|0; 1|NULL", "b / a", "NULL,NULL");
    EXPECT(S, "9223372036854775807|NULL", "b * a", "NULL");
    /* The right side of AND matters only where the left is not FALSE; of OR, not TRUE. */
    EXPECT(S, "10|0; 10|5; 10|20", "a <> 0 AND b / a > 1", "false,true,false");
    EXPECT(S, "10|0; 10|5; 10|20", "a = 0 OR b / a > 1", "true,true,false");
    EXPECT(S, "9223372036854775807|0; 1|1", "a = 1 AND b + 1 > 0", "false,true");
    EXPECT(S, "10|0; 10|5", "NOT (a <> 0 AND b / a > 1)", "true,false");
}

static void test_double_arithmetic(void **state)
{
    (void)state;
    const char *S = "d DOUBLE, f FLOAT, a INT";
    const char *R = "1.5|0.5|2; -2.0|2.25|-3; NULL|1.0|NULL";
    EXPECT(S, R, "d + f", "2.0,0.25,NULL");
    EXPECT(S, R, "d * 2", "3.0,-4.0,NULL");
    EXPECT(S, R, "d / 4", "0.375,-0.5,NULL");
    EXPECT(S, R, "d % 1", "0.5,-0.0,NULL");
    EXPECT(S, R, "-f", "-0.5,-2.25,-1.0");
    EXPECT(S, R, "a + 0.5e0", "2.5,-2.5,NULL");
    EXPECT(S, R, "d / a", "0.75,0.6666666666666666,NULL");
    EXPECT(S, "1.0|1.0|0", "d / a", "error EINVAL: line 1, column 1: division by zero");
    EXPECT(S, "1.0|0.0|0", "d % f", "error EINVAL: line 1, column 1: division by zero");
}

static void test_decimal_arithmetic(void **state)
{
    (void)state;
    const char *S = "m DECIMAL(10, 2), n DECIMAL(5, 3), a INT";
    const char *R = "12.50|1.125|3; -0.05|0.001|-2; NULL|2.000|1";
    EXPECT(S, R, "m + n", "13.625,-0.049,NULL");
    EXPECT(S, R, "m - n", "11.375,-0.051,NULL");
    EXPECT(S, R, "m * n", "14.06250,-0.00005,NULL");
    EXPECT(S, R, "m / a", "4.1666666666667,0.0250000000000,NULL");
    EXPECT(S, R, "m + a", "15.50,-2.05,NULL");
    EXPECT(S, R, "m % a", "0.50,-0.05,NULL");
    EXPECT(S, R, "m * 1.5", "18.750,-0.075,NULL");
    EXPECT(S, R, "-m", "-12.50,0.05,NULL");
    EXPECT(S, R, "m + 0.5e0", "13.0,0.45,NULL");
    EXPECT(S, R, "n / 3", "0.37500000000000,0.00033333333333,0.66666666666667");
    EXPECT(S, R, "m / 0", "error EINVAL: line 1, column 1: division by zero");
    EXPECT(S, R, "m / 0.00", "error EINVAL: line 1, column 1: division by zero");
    /* Rounding half away from zero when a product's scale is cut. */
    EXPECT("x DECIMAL(38, 10), y DECIMAL(38, 10)", "0.0000005|1; -0.0000005|1; 0.0000004|1; 0.0000015|-1",
           "x * y", "0.000001,-0.000001,0.000000,-0.000002");
    EXPECT("x DECIMAL(38, 0)", "99999999999999999999999999999999999999", "x + 1",
           "error ERANGE: line 1, column 1: DECIMAL(38, 0) overflow in +");
    EXPECT("x DECIMAL(38, 0)", "99999999999999999999999999999999999999", "x * x",
           "error ERANGE: line 1, column 1: DECIMAL(38, 0) overflow in *");
    EXPECT("x DECIMAL(38, 0)", "-99999999999999999999999999999999999999", "x - 1",
           "error ERANGE: line 1, column 1: DECIMAL(38, 0) overflow in -");
}

static void test_date_arithmetic(void **state)
{
    (void)state;
    const char *S = "dt DATE, a INT";
    EXPECT(S, "2026-01-31|1; NULL|1; 2024-02-28|-1", "dt + a", "2026-02-01,NULL,2024-02-27");
    EXPECT(S, "2026-01-31|1; NULL|1", "dt - 31", "2025-12-31,NULL");
    EXPECT(S, "2026-01-31|1; NULL|1", "dt - DATE '2026-01-01'", "30,NULL");
    EXPECT(S, "2026-01-31|1; NULL|1", "dt + NULL", "NULL,NULL");
    EXPECT(S, "2026-01-31|1; NULL|1", "NULL + dt = dt", "NULL,NULL");
    assert_string_equal(bind_type("dt DATE", "NULL - dt"), "INT");
    assert_string_equal(bind_type("dt DATE", "dt - NULL"), "DATE");
    EXPECT(S, "2026-01-31|1", "dt + 9223372036854775807", "error ERANGE: line 1, column 1: BIGINT overflow in +");
    EXPECT(S, "2026-01-31|1", "dt + 3000000000", "error ERANGE: value 3000020484 is out of range for DATE");
}

/* ---- comparisons ----------------------------------------------------------------------- */

static void test_compare_integers(void **state)
{
    (void)state;
    const char *S = "a INT, b BIGINT, t TINYINT";
    const char *R = "1|2|1; 2|2|2; 3|2|-3; NULL|2|NULL; 1|NULL|1";
    EXPECT(S, R, "a < b", "true,false,false,NULL,NULL");
    EXPECT(S, R, "a <= b", "true,true,false,NULL,NULL");
    EXPECT(S, R, "a > b", "false,false,true,NULL,NULL");
    EXPECT(S, R, "a >= b", "false,true,true,NULL,NULL");
    EXPECT(S, R, "a = b", "false,true,false,NULL,NULL");
    EXPECT(S, R, "a <> b", "true,false,true,NULL,NULL");
    EXPECT(S, R, "a < 2", "true,false,false,NULL,true");
    EXPECT(S, R, "2 > a", "true,false,false,NULL,true");
    EXPECT(S, R, "2 <= a", "false,true,true,NULL,false");
    EXPECT(S, R, "a = 2.0", "false,true,false,NULL,false");
    EXPECT(S, R, "a < 2.5", "true,true,false,NULL,true");
    EXPECT(S, R, "a > 1.5e0", "false,true,true,NULL,false");
    EXPECT(S, R, "a = NULL", "NULL,NULL,NULL,NULL,NULL");
    EXPECT(S, R, "NULL <> a", "NULL,NULL,NULL,NULL,NULL");
    EXPECT(S, R, "a < 3000000000", "true,true,true,NULL,true");
    EXPECT(S, R, "t < 300", "true,true,true,NULL,true");
    EXPECT(S, R, "t > -300", "true,true,true,NULL,true");
    EXPECT(S, R, "t = a", "true,true,false,NULL,true");
    EXPECT(S, R, "a + 1 > b", "false,true,true,NULL,NULL");
    EXPECT(S, R, "1 < 2", "true,true,true,true,true");
}

static void test_compare_doubles(void **state)
{
    (void)state;
    const char *S = "d DOUBLE, f FLOAT, m DECIMAL(4, 1)";
    const char *R = "1.0|1.0|1.0; NaN|NaN|2.5; -Infinity|0.5|-0.1; NULL|NULL|NULL; -0.0|0.0|0.0";
    EXPECT(S, R, "d < 2", "true,false,true,NULL,true");
    EXPECT(S, R, "d > 2", "false,true,false,NULL,false");
    EXPECT(S, R, "d >= 2", "false,true,false,NULL,false");
    EXPECT(S, R, "d <= 2", "true,false,true,NULL,true");
    EXPECT(S, R, "d <> 1", "false,true,true,NULL,true");
    EXPECT(S, R, "d = 0", "false,false,false,NULL,true");
    EXPECT(S, R, "d = CAST('NaN' AS DOUBLE)", "false,true,false,NULL,false");
    EXPECT(S, R, "d < CAST('NaN' AS DOUBLE)", "true,false,true,NULL,true");
    EXPECT(S, R, "d >= CAST('NaN' AS DOUBLE)", "false,true,false,NULL,false");
    EXPECT(S, R, "d <= CAST('NaN' AS DOUBLE)", "true,true,true,NULL,true");
    EXPECT(S, R, "d > CAST('NaN' AS DOUBLE)", "false,false,false,NULL,false");
    EXPECT(S, R, "d <> CAST('NaN' AS DOUBLE)", "true,false,true,NULL,true");
    EXPECT(S, R, "d = f", "true,true,false,NULL,true");
    EXPECT(S, R, "d < f", "false,false,true,NULL,false");
    EXPECT(S, R, "f > d", "false,false,true,NULL,false");
    EXPECT(S, R, "f < 0.75e0", "false,false,true,NULL,true");
    EXPECT(S, R, "f = FLOAT 0.1", "false,false,false,NULL,false");
    EXPECT(S, R, "m > d", "false,false,true,NULL,false");
    EXPECT(S, R, "m = 2.50", "false,true,false,NULL,false");
    EXPECT(S, R, "m < 0", "false,false,true,NULL,false");
}

static void test_compare_strings_and_more(void **state)
{
    (void)state;
    const char *S = "s STRING, v VARCHAR(10)";
    const char *R = "abc|abd; ab|ab; NULL|x; b|NULL; |";
    EXPECT(S, R, "s < v", "true,false,NULL,NULL,false");
    EXPECT(S, R, "s = v", "false,true,NULL,NULL,true");
    EXPECT(S, R, "s = 'ab'", "false,true,NULL,false,false");
    EXPECT(S, R, "s > 'ab'", "true,false,NULL,true,false");
    EXPECT(S, R, "'abc' = s", "true,false,NULL,false,false");
    EXPECT(S, R, "s = ''", "false,false,NULL,false,true");
    EXPECT(S, R, "s >= 'b'", "false,false,NULL,true,false");
    EXPECT(S, "\xc3\xa9|e", "s > v", "true"); /* bytewise: UTF-8 sorts by code point */

    EXPECT("p BOOLEAN, q BOOLEAN", "true|false; false|false; NULL|true", "p > q", "true,false,NULL");
    EXPECT("p BOOLEAN, q BOOLEAN", "true|false; false|false; NULL|true", "p = TRUE", "true,false,NULL");
    EXPECT("y BYTES", "ab; a; NULL", "y > X'61'", "true,false,NULL");
    EXPECT("y BYTES", "ab; a; NULL", "y = X'6162'", "true,false,NULL");
}

static void test_compare_temporal(void **state)
{
    (void)state;
    const char *S = "dt DATE, ts TIMESTAMP(3), ts6 TIMESTAMP(6), tm TIME(3), t0 TIME(0)";
    const char *R = "2026-01-01|2026-01-01 00:00:00.000|2026-01-01 00:00:00.000001|10:00:00.500|10:00:00;"
                    "2026-01-02|2026-01-01 23:59:59.999|2026-01-01 23:59:59.999000|09:59:59.999|10:00:01;"
                    "NULL|NULL|NULL|NULL|NULL";
    EXPECT(S, R, "dt = '2026-01-01'", "true,false,NULL");
    EXPECT(S, R, "'2026-01-01' < dt", "false,true,NULL");
    EXPECT(S, R, "dt = DATE '2026-01-02'", "false,true,NULL");
    EXPECT(S, R, "dt <= ts", "true,false,NULL");
    EXPECT(S, R, "dt = ts", "true,false,NULL");
    EXPECT(S, R, "ts < ts6", "true,false,NULL");
    EXPECT(S, R, "ts = ts6", "false,true,NULL");
    EXPECT(S, R, "ts > '2026-01-01 12:00:00'", "false,true,NULL");
    EXPECT(S, R, "ts >= '2026-01-01'", "true,true,NULL");
    EXPECT(S, R, "ts6 > TIMESTAMP3 '2026-01-01 00:00:00.000'", "true,true,NULL");
    EXPECT(S, R, "tm > '10:00:00'", "true,false,NULL");
    EXPECT(S, R, "tm < t0", "false,true,NULL");
    EXPECT(S, R, "tm = TIME '10:00:00.500'", "true,false,NULL");
    EXPECT(S, R, "ts BETWEEN '2026-01-01' AND '2026-01-01 23:59:59.998'", "true,false,NULL");
    EXPECT(S, R, "dt IN ('2026-01-02', '2027-01-01')", "false,true,NULL");
}

/* ---- logic, IS NULL, IN, BETWEEN ------------------------------------------------------- */

#define S_PQ "p BOOLEAN, q BOOLEAN"
#define R_PQ "true|true; true|false; true|NULL; false|true; false|false; false|NULL; NULL|true; NULL|false; NULL|NULL"

static void test_kleene(void **state)
{
    (void)state;
    EXPECT(S_PQ, R_PQ, "p AND q", "true,false,NULL,false,false,false,NULL,false,NULL");
    EXPECT(S_PQ, R_PQ, "p OR q", "true,true,true,true,false,NULL,true,NULL,NULL");
    EXPECT(S_PQ, R_PQ, "NOT p", "false,false,false,true,true,true,NULL,NULL,NULL");
    EXPECT(S_PQ, R_PQ, "NOT (p AND q)", "false,true,NULL,true,true,true,NULL,true,NULL");
    EXPECT(S_PQ, R_PQ, "NOT p OR NOT q", "false,true,NULL,true,true,true,NULL,true,NULL");
    EXPECT(S_PQ, R_PQ, "p AND NULL", "NULL,NULL,NULL,false,false,false,NULL,NULL,NULL");
    EXPECT(S_PQ, R_PQ, "NULL AND q", "NULL,false,NULL,NULL,false,NULL,NULL,false,NULL");
    EXPECT(S_PQ, R_PQ, "p OR NULL", "true,true,true,NULL,NULL,NULL,NULL,NULL,NULL");
    EXPECT(S_PQ, R_PQ, "p AND TRUE", "true,true,true,false,false,false,NULL,NULL,NULL");
    EXPECT(S_PQ, R_PQ, "p OR FALSE", "true,true,true,false,false,false,NULL,NULL,NULL");
    EXPECT(S_PQ, R_PQ, "p AND FALSE", "false,false,false,false,false,false,false,false,false");
    EXPECT(S_PQ, R_PQ, "TRUE OR p", "true,true,true,true,true,true,true,true,true");
    EXPECT(S_PQ, R_PQ, "NULL OR NULL", "NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL");
    EXPECT(S_PQ, R_PQ, "NOT NULL", "NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL");
    EXPECT(S_PQ, R_PQ, "FALSE AND NULL", "false,false,false,false,false,false,false,false,false");
    EXPECT(S_PQ, R_PQ, "p = q", "true,false,NULL,false,true,NULL,NULL,NULL,NULL");
    EXPECT(S_PQ, R_PQ, "p <> q", "false,true,NULL,true,false,NULL,NULL,NULL,NULL");
    EXPECT(S_PQ, R_PQ, "p", "true,true,true,false,false,false,NULL,NULL,NULL");
    EXPECT(S_PQ, R_PQ, "(p OR q) AND NOT (p AND q)", "false,true,NULL,true,false,NULL,NULL,NULL,NULL");
}

static void test_is_null(void **state)
{
    (void)state;
    EXPECT(S_PQ, R_PQ, "p IS NULL", "false,false,false,false,false,false,true,true,true");
    EXPECT(S_PQ, R_PQ, "q IS NOT NULL", "true,true,false,true,true,false,true,true,false");
    EXPECT(S_PQ, R_PQ, "(p AND q) IS NULL", "false,false,true,false,false,false,true,false,true");
    EXPECT(S_PQ, R_PQ, "NOT p IS NULL", "true,true,true,true,true,true,false,false,false");
    EXPECT("a INT", "1; NULL", "NULL IS NULL", "true,true");
    EXPECT("a INT", "1; NULL", "1 IS NOT NULL", "true,true");
    EXPECT("a INT", "1; NULL", "a + 1 IS NULL", "false,true");
}

static void test_in(void **state)
{
    (void)state;
    const char *S = "a INT, s STRING, d DOUBLE";
    const char *R = "1|x|1.0; 2|y|NaN; NULL|NULL|NULL";
    EXPECT(S, R, "a IN (1, 3)", "true,false,NULL");
    EXPECT(S, R, "a IN (1, NULL)", "true,NULL,NULL");
    EXPECT(S, R, "a NOT IN (1, NULL)", "false,NULL,NULL");
    EXPECT(S, R, "a NOT IN (3, 4)", "true,true,NULL");
    EXPECT(S, R, "a IN (1.0, 2.5)", "true,false,NULL");
    EXPECT(S, R, "a IN (a, 5)", "true,true,NULL");
    EXPECT(S, R, "a IN (3)", "false,false,NULL");
    EXPECT(S, R, "NULL IN (1, 2)", "NULL,NULL,NULL");
    EXPECT(S, R, "3 IN (a, 3)", "true,true,true");
    EXPECT(S, R, "s IN ('x', 'z')", "true,false,NULL");
    EXPECT(S, R, "s NOT IN ('x', 'z')", "false,true,NULL");
    EXPECT(S, R, "d IN (CAST('NaN' AS DOUBLE))", "false,true,NULL");
    EXPECT(S, R, "a IN (10, 9, 8, 7, 6, 5, 4, 3, 2, 11, 12, 13, 14, 15, 16, 17, 18)", "false,true,NULL");
    /* Long lists of literals are searched in a sorted set; the same answers with NULLs. */
    EXPECT(S, R, "a IN (9, 8, 7, 6, 5, 4, 3, 1, NULL)", "true,NULL,NULL");
    EXPECT(S, R, "a NOT IN (9, 8, 7, 6, 5, 4, 3, 1, NULL)", "false,NULL,NULL");
    EXPECT(S, R, "a NOT IN (9, 8, 7, 6, 5, 4, 3, 2, 2.5)", "true,false,NULL");
    EXPECT(S, R, "s IN ('q', 'r', 's', 't', 'u', 'v', 'w', 'x')", "true,false,NULL");
    EXPECT(S, R, "d IN (1, 2, 3, 4, 5, 6, 7, 8, CAST('NaN' AS DOUBLE))", "true,true,NULL");
    EXPECT(S, R, "d IN (1, 2, 3, 4, 5, 6, 7, 8, 9)", "true,false,NULL");
}

static void test_between(void **state)
{
    (void)state;
    const char *S = "a INT, lo INT";
    const char *R = "1|1; 2|3; 3|NULL; NULL|1";
    EXPECT(S, R, "a BETWEEN 2 AND 3", "false,true,true,NULL");
    EXPECT(S, R, "a NOT BETWEEN 2 AND 3", "true,false,false,NULL");
    EXPECT(S, R, "a BETWEEN 3 AND 2", "false,false,false,NULL");
    EXPECT(S, R, "a BETWEEN NULL AND 2", "NULL,NULL,false,NULL");
    EXPECT(S, R, "a NOT BETWEEN NULL AND 2", "NULL,NULL,true,NULL");
    EXPECT(S, R, "a BETWEEN lo AND 2", "true,false,false,NULL");
    EXPECT(S, R, "a BETWEEN 1.5 AND 2.5e0", "false,true,false,NULL");
    EXPECT(S, R, "2 BETWEEN a AND 3", "true,true,false,NULL");
}

/* ---- strings: LIKE, || ----------------------------------------------------------------- */

#define S_S "s STRING"
/* abc, a.c, a*c, ab, '', naïve, 100%, x_y, NULL, [a], a+c, ^a$ */
#define R_S "abc; a.c; a*c; ab; ; na\xc3\xafve; 100%; x_y; NULL; [a]; a+c; ^a$"

static void test_like(void **state)
{
    (void)state;
    EXPECT(S_S, R_S, "s LIKE 'a_c'", "true,true,true,false,false,false,false,false,NULL,false,true,false");
    EXPECT(S_S, R_S, "s LIKE 'a.c'", "false,true,false,false,false,false,false,false,NULL,false,false,false");
    EXPECT(S_S, R_S, "s LIKE 'a*c'", "false,false,true,false,false,false,false,false,NULL,false,false,false");
    EXPECT(S_S, R_S, "s LIKE 'a+c'", "false,false,false,false,false,false,false,false,NULL,false,true,false");
    EXPECT(S_S, R_S, "s LIKE 'a%'", "true,true,true,true,false,false,false,false,NULL,false,true,false");
    EXPECT(S_S, R_S, "s LIKE '%c'", "true,true,true,false,false,false,false,false,NULL,false,true,false");
    EXPECT(S_S, R_S, "s LIKE '%.%'", "false,true,false,false,false,false,false,false,NULL,false,false,false");
    EXPECT(S_S, R_S, "s LIKE '%'", "true,true,true,true,true,true,true,true,NULL,true,true,true");
    EXPECT(S_S, R_S, "s LIKE '%%'", "true,true,true,true,true,true,true,true,NULL,true,true,true");
    EXPECT(S_S, R_S, "s LIKE ''", "false,false,false,false,true,false,false,false,NULL,false,false,false");
    EXPECT(S_S, R_S, "s LIKE 'na_ve'", "false,false,false,false,false,true,false,false,NULL,false,false,false");
    EXPECT(S_S, R_S, "s LIKE 'na__ve'", "false,false,false,false,false,false,false,false,NULL,false,false,false");
    EXPECT(S_S, R_S, "s LIKE '%\xc3\xaf%'", "false,false,false,false,false,true,false,false,NULL,false,false,false");
    EXPECT(S_S, R_S, "s LIKE '[a]'", "false,false,false,false,false,false,false,false,NULL,true,false,false");
    EXPECT(S_S, R_S, "s LIKE '%[%'", "false,false,false,false,false,false,false,false,NULL,true,false,false");
    EXPECT(S_S, R_S, "s LIKE '^a$'", "false,false,false,false,false,false,false,false,NULL,false,false,true");
    EXPECT(S_S, R_S, "s LIKE '100%'", "false,false,false,false,false,false,true,false,NULL,false,false,false");
    EXPECT(S_S, R_S, "s LIKE '%b%'", "true,false,false,true,false,false,false,false,NULL,false,false,false");
    EXPECT(S_S, R_S, "s LIKE 'a%c%'", "true,true,true,false,false,false,false,false,NULL,false,true,false");
    EXPECT(S_S, R_S, "s LIKE '%a%c'", "true,true,true,false,false,false,false,false,NULL,false,true,false");
    EXPECT(S_S, R_S, "s LIKE '_'", "false,false,false,false,false,false,false,false,NULL,false,false,false");
    EXPECT(S_S, R_S, "s LIKE '__'", "false,false,false,true,false,false,false,false,NULL,false,false,false");
    EXPECT(S_S, R_S, "s LIKE '_%_'", "true,true,true,true,false,true,true,true,NULL,true,true,true");
    EXPECT(S_S, R_S, "s LIKE 'x_y'", "false,false,false,false,false,false,false,true,NULL,false,false,false");
    EXPECT(S_S, R_S, "s LIKE '%a%b%c%'", "true,false,false,false,false,false,false,false,NULL,false,false,false");
    EXPECT(S_S, R_S, "s NOT LIKE 'a%'", "false,false,false,false,true,true,true,true,NULL,true,false,true");
    EXPECT(S_S, R_S, "s LIKE NULL", "NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL");
    /* A column as the pattern. */
    EXPECT(S_S, R_S, "'abc' LIKE s", "true,false,false,false,false,false,false,false,NULL,false,false,false");
    EXPECT(S_S, R_S, "'a.c' LIKE s", "false,true,false,false,false,false,false,false,NULL,false,false,false");
    EXPECT(S_S, R_S, "'100% sure' LIKE s || '%'", "false,false,false,false,true,false,true,false,NULL,false,false,false");
    /* Backtracking over several % finds a late match. */
    EXPECT(S_S, "aaaaaaaaaaaaaaaaaaab; aaaaaaaaaaaaaaaaaaaa", "s LIKE '%a%a%a%b'", "true,false");
    EXPECT(S_S, "mississippi", "s LIKE '%ss%ss%'", "true");
    EXPECT(S_S, "mississippi", "s LIKE '%ss%ss%ss%'", "false");
    EXPECT(S_S, "mississippi", "s LIKE 'm%i_pi'", "true");
}

static void test_concat(void **state)
{
    (void)state;
    const char *S = "s STRING, v VARCHAR(5), y BYTES";
    const char *R = "ab|cd|x; NULL|e|y; |f|z";
    EXPECT(S, R, "s || v", "abcd,NULL,f");
    EXPECT(S, R, "s || '-' || v", "ab-cd,NULL,-f");
    EXPECT(S, R, "v || NULL", "NULL,NULL,NULL");
    EXPECT(S, R, "'<' || v || '>'", "<cd>,<e>,<f>");
    EXPECT(S, R, "y || y", "\\x7878,\\x7979,\\x7a7a");
    EXPECT(S, R, "s || v = 'abcd'", "true,NULL,false");
}

/* ---- CAST ------------------------------------------------------------------------------ */

static void test_cast(void **state)
{
    (void)state;
    const char *S = "a INT, s STRING, m DECIMAL(6, 3)";
    EXPECT(S, "1|12|1.250; NULL|abc|NULL", "CAST(a AS STRING)", "1,NULL");
    EXPECT(S, "1|12|1.250; NULL|abc|NULL", "CAST(a AS DOUBLE)", "1.0,NULL");
    EXPECT(S, "1|12|1.250; NULL|abc|NULL", "CAST(a AS DECIMAL(5, 2))", "1.00,NULL");
    EXPECT(S, "1|12|1.250; NULL|abc|NULL", "CAST(a AS BIGINT)", "1,NULL");
    EXPECT(S, "1|12|1.250; NULL|abc|NULL", "CAST(m AS INT)", "1,NULL");
    EXPECT(S, "1|12|1.250; NULL|abc|NULL", "CAST(m AS DECIMAL(4, 1))", "1.3,NULL");
    EXPECT(S, "1|12|1.250; NULL|abc|NULL", "CAST(m AS STRING) || '!'", "1.250!,NULL");
    EXPECT(S, "1|12|1.250", "CAST(s AS INT) + a", "13");
    EXPECT(S, "300|12|1.250", "CAST(a AS TINYINT)", "error ERANGE: line 1, column 1: value 300 is out of range for TINYINT");
    const char *r = run(S, "1|12|1.0; 2|abc|1.0", "CAST(s AS INT)");
    assert_non_null(strstr(r, "error EINVAL: line 1, column 1: "));
    /* A failing CAST on a row whose outcome is already decided raises nothing. */
    EXPECT(S, "1|12|1.0; NULL|abc|1.0", "a IS NULL OR CAST(s AS INT) > 5", "true,true");
    EXPECT(S, "1|12|1.0; NULL|abc|1.0", "a IS NOT NULL AND CAST(s AS INT) > 5", "true,false");
    EXPECT(S, "1|12|1.0; NULL|abc|1.0", "CAST('2026-01-01' AS DATE)", "2026-01-01,2026-01-01");
    EXPECT(S, "1|12|1.0; NULL|abc|1.0", "CAST(NULL AS INT)", "NULL,NULL");
    EXPECT(S, "1|12|1.0; NULL|abc|1.0", "CAST(7 AS STRING)", "7,7");
    EXPECT(S, "1|12|1.0; NULL|abc|1.0", "CAST(a AS BOOLEAN)", "true,NULL");
    EXPECT("ts TIMESTAMP(3)", "2026-01-01 10:00:00.123; NULL", "CAST(ts AS DATE)", "2026-01-01,NULL");
}

/* ---- results of plain columns and literals --------------------------------------------- */

static void test_passthrough(void **state)
{
    (void)state;
    const char *S = "a INT, s STRING, t TINYINT, f FLOAT, m DECIMAL(5, 2), p BOOLEAN, tm TIME(6)";
    const char *R = "1|x|-1|0.5|1.25|true|10:00:00.000001; NULL|NULL|NULL|NULL|NULL|NULL|NULL; 3||7|-2.5|-0.01|false|23:59:59.999999";
    EXPECT(S, R, "a", "1,NULL,3");
    EXPECT(S, R, "s", "x,NULL,");
    EXPECT(S, R, "t", "-1,NULL,7");
    EXPECT(S, R, "f", "0.5,NULL,-2.5");
    EXPECT(S, R, "m", "1.25,NULL,-0.01");
    EXPECT(S, R, "p", "true,NULL,false");
    EXPECT(S, R, "tm", "10:00:00.000001,NULL,23:59:59.999999");
    EXPECT(S, R, "42", "42,42,42");
    EXPECT(S, R, "'lit'", "lit,lit,lit");
    EXPECT(S, R, "NULL", "NULL,NULL,NULL");
    EXPECT(S, R, "TRUE", "true,true,true");

    /* The result column is named after a plain column, "expr" otherwise. */
    fr_schema *s = tk_schema(S);
    fr_batch *b = tk_batch(s, R);
    fr_arena *a = fr_arena_new(1024);
    fr_expr *e = tk_parse(a, "S");
    fr_error err = {0};
    assert_int_equal(fr_expr_bind(e, s, &err), 0);
    fr_batch *out = NULL;
    assert_int_equal(fr_expr_eval(e, b, &out, &err), 0);
    assert_string_equal(fr_schema_field(fr_batch_schema(out), 0)->name, "s");
    fr_batch_free(out);
    e = tk_parse(a, "a + 1");
    assert_int_equal(fr_expr_bind(e, s, &err), 0);
    assert_int_equal(fr_expr_eval(e, b, &out, &err), 0);
    assert_string_equal(fr_schema_field(fr_batch_schema(out), 0)->name, "expr");
    fr_batch_free(out);
    fr_arena_free(a);
    fr_batch_free(b);
    fr_schema_free(s);
}

static void test_empty_and_large_batches(void **state)
{
    (void)state;
    fr_schema *s = tk_schema("a INT, s STRING");
    fr_batch *b = tk_batch(s, "");
    assert_string_equal(run_on(s, b, "a + 1 > 2 AND s LIKE 'x%'"), "");
    assert_string_equal(run_on(s, b, "s || 'x'"), "");
    fr_batch_free(b);

    /* 200 rows: full words and a tail; every third row null. */
    fr_builder *bld;
    fr_error err = {0};
    assert_int_equal(fr_builder_new(s, &bld, &err), 0);
    for (int i = 0; i < 200; i++) {
        fr_value v = i % 3 == 2 ? fr_value_null(fr_type_of(FR_T_INT)) : fr_value_int(fr_type_of(FR_T_INT), i);
        assert_int_equal(fr_builder_append(bld, 0, &v, &err), 0);
        fr_value t = fr_value_str(fr_type_of(FR_T_STRING), i % 2 ? "odd" : "even", i % 2 ? 3 : 4);
        assert_int_equal(fr_builder_append(bld, 1, &t, &err), 0);
    }
    assert_int_equal(fr_builder_finish(bld, &b, &err), 0);
    fr_builder_free(bld);
    fr_arena *a = fr_arena_new(1024);
    fr_expr *e = tk_parse(a, "a >= 100 AND (s = 'odd' OR a IS NULL)");
    assert_int_equal(fr_expr_bind(e, s, &err), 0);
    uint8_t keep[26] = {0};
    int64_t kept = 0;
    assert_int_equal(fr_expr_filter(e, b, keep, &kept, &err), 0);
    int64_t expect = 0;
    for (int i = 0; i < 200; i++) {
        bool t = i % 3 != 2 && i >= 100 && i % 2 == 1;
        expect += t;
        assert_int_equal((keep[i >> 3] >> (i & 7)) & 1, t);
    }
    assert_int_equal(kept, expect);
    run_on(s, b, "a >= 100 AND (s = 'odd' OR a IS NULL)"); /* checks eval against filter */
    run_on(s, b, "NOT (a < 150) OR a * 2 = 10");
    fr_arena_free(a);
    fr_batch_free(b);
    fr_schema_free(s);
}

static void test_filter_requires_boolean(void **state)
{
    (void)state;
    fr_schema *s = tk_schema("a INT");
    fr_batch *b = tk_batch(s, "1; 2");
    fr_arena *a = fr_arena_new(1024);
    fr_expr *e = tk_parse(a, "a + 1");
    fr_error err = {0};
    assert_int_equal(fr_expr_bind(e, s, &err), 0);
    uint8_t keep[1];
    int64_t kept;
    assert_int_equal(fr_expr_filter(e, b, keep, &kept, &err), FR_ETYPE);
    /* A batch whose column has another type than the schema bound to. */
    fr_schema *s2 = tk_schema("a STRING");
    fr_batch *b2 = tk_batch(s2, "x");
    e = tk_parse(a, "a > 1");
    assert_int_equal(fr_expr_bind(e, s, &err), 0);
    assert_int_equal(fr_expr_filter(e, b2, keep, &kept, &err), FR_ETYPE);
    assert_non_null(strstr(err.msg, "column 'a' is STRING in the batch"));
    fr_arena_free(a);
    fr_batch_free(b);
    fr_batch_free(b2);
    fr_schema_free(s);
    fr_schema_free(s2);
}

/* ---- format and columns ---------------------------------------------------------------- */

static void test_format(void **state)
{
    (void)state;
    assert_string_equal(format_of("a + 1 > 2 AND s LIKE 'it''s%'"), "(((a + 1) > 2) AND (s LIKE 'it''s%'))");
    assert_string_equal(format_of("x IS NOT NULL OR y IS NULL"), "((x IS NOT NULL) OR (y IS NULL))");
    assert_string_equal(format_of("a NOT IN (1, 2, NULL)"), "(a NOT IN (1, 2, NULL))");
    assert_string_equal(format_of("a NOT BETWEEN -1 AND 2.50"), "(a NOT BETWEEN -1 AND 2.50)");
    assert_string_equal(format_of("s NOT LIKE '%'"), "(s NOT LIKE '%')");
    assert_string_equal(format_of("CAST(a AS DECIMAL(5, 2))"), "CAST(a AS DECIMAL(5, 2))");
    assert_string_equal(format_of("-a - -1"), "((- a) - -1)");
    assert_string_equal(format_of("- -a"), "(- (- a))");
    assert_string_equal(format_of("NOT p"), "(NOT p)");
    assert_string_equal(format_of("a * (b + c) / d % e || f"), "((((a * (b + c)) / d) % e) || f)");
    assert_string_equal(format_of("DATE '2026-01-01' <= dt"), "(DATE '2026-01-01' <= dt)");
    assert_string_equal(format_of("TIMESTAMP3 '2026-01-01 10:00:00.5'"), "TIMESTAMP '2026-01-01 10:00:00.500'");
    assert_string_equal(format_of("TIME '10:00:00.5'"), "TIME '10:00:00.500'");
    assert_string_equal(format_of("1.5e0 + 1e20 + 2e0"), "((1.5E0 + 1e+20) + 2E0)");
    assert_string_equal(format_of("`my col` = `a``b`"), "(`my col` = `a``b`)");
    assert_string_equal(format_of("X'0a1b' = y"), "(X'0a1b' = y)");
    assert_string_equal(format_of("TRUE OR FALSE OR NULL"), "((TRUE OR FALSE) OR NULL)");
    assert_string_equal(format_of("CAST('NaN' AS DOUBLE)"), "CAST('NaN' AS DOUBLE)");
    assert_string_equal(format_of("9223372036854775807"), "9223372036854775807");
    assert_string_equal(format_of("'' = s"), "('' = s)");
    assert_string_equal(format_of("_x1 = 1"), "(_x1 = 1)");

    /* Bound trees format the same, a literal parsed while binding in its new type. */
    fr_schema *s = tk_schema("dt DATE");
    fr_arena *a = fr_arena_new(1024);
    fr_expr *e = tk_parse(a, "dt = '2026-01-01'");
    fr_error err = {0};
    assert_int_equal(fr_expr_bind(e, s, &err), 0);
    fr_buf b;
    fr_buf_init(&b);
    assert_int_equal(fr_expr_format(e, &b, &err), 0);
    assert_int_equal((int)b.len, (int)strlen("(dt = DATE '2026-01-01')"));
    assert_memory_equal(b.data, "(dt = DATE '2026-01-01')", b.len);
    fr_buf_free(&b);

    /* Literal values built directly: LTZ, doubles that look integral. */
    fr_value v = fr_value_double(fr_type_of(FR_T_DOUBLE), 3.0);
    fr_buf_init(&b);
    assert_int_equal(fr_expr_format(fr_expr_literal(a, &v), &b, &err), 0);
    assert_memory_equal(b.data, "3E0", 3);
    fr_buf_free(&b);
    fr_value ltz;
    fr_type lt = fr_type_time_like(FR_T_TIMESTAMP_LTZ, 3);
    assert_int_equal(fr_value_parse("2026-01-01 10:00:00Z", 20, &lt, &ltz, &err), 0);
    fr_buf_init(&b);
    assert_int_equal(fr_expr_format(fr_expr_literal(a, &ltz), &b, &err), 0);
    const char *want = "CAST('2026-01-01 10:00:00.000Z' AS TIMESTAMP_LTZ(3))";
    assert_int_equal((int)b.len, (int)strlen(want));
    assert_memory_equal(b.data, want, b.len);
    fr_buf_free(&b);
    fr_arena_free(a);
    fr_schema_free(s);
}

/* Column names that a bare word could not carry back are written in backquotes: reserved
 * words (any case), names with other characters or a leading digit; a backquote inside is
 * doubled. Plain names, and keywords that are not reserved, stay bare. */
static void expect_column_format(const char *name, const char *want)
{
    fr_arena *a = fr_arena_new(1024);
    fr_value one = fr_value_int(fr_type_of(FR_T_INT), 1);
    fr_expr *e = fr_expr_binary(a, FR_OP_EQ, fr_expr_column(a, name), fr_expr_literal(a, &one));
    assert_non_null(e);
    fr_buf b;
    fr_buf_init(&b);
    fr_error err = {0};
    assert_int_equal(fr_expr_format(e, &b, &err), 0);
    char got[256];
    snprintf(got, sizeof got, "%.*s", (int)b.len, (char *)b.data);
    if (strcmp(got, want) != 0) fail_msg("column '%s': got %s, want %s", name, got, want);
    fr_buf_free(&b);
    fr_arena_free(a);
}

static void test_format_names(void **state)
{
    (void)state;
    expect_column_format("price", "(price = 1)");
    expect_column_format("Unit_Price2", "(Unit_Price2 = 1)");
    expect_column_format("_x", "(_x = 1)");
    expect_column_format("date", "(date = 1)"); /* a keyword, not reserved */
    expect_column_format("key", "(key = 1)");
    expect_column_format("select", "(`select` = 1)");
    expect_column_format("From", "(`From` = 1)");
    expect_column_format("null", "(`null` = 1)");
    expect_column_format("TRUE", "(`TRUE` = 1)");
    expect_column_format("and", "(`and` = 1)");
    expect_column_format("unit price", "(`unit price` = 1)");
    expect_column_format("1st", "(`1st` = 1)");
    expect_column_format("a-b", "(`a-b` = 1)");
    expect_column_format("we`ird", "(`we``ird` = 1)");
    expect_column_format("``", "(`````` = 1)");
    expect_column_format("orders$changelog", "(`orders$changelog` = 1)");
    assert_true(fr_expr_word_reserved("where", 5));
    assert_true(fr_expr_word_reserved("LIMIT", 5));
    assert_false(fr_expr_word_reserved("limits", 6));
    assert_false(fr_expr_word_reserved("wher", 4));
    assert_false(fr_expr_word_reserved("type", 4));
}

static void test_columns(void **state)
{
    (void)state;
    fr_schema *s = tk_schema("a INT, b INT, c INT, d INT, e INT, f INT, g INT, h INT, i INT, j INT");
    fr_arena *a = fr_arena_new(1024);
    fr_expr *e = tk_parse(a, "(A + c > 1 OR j IS NULL) AND i IN (c, 1)");
    fr_error err = {0};
    assert_int_equal(fr_expr_bind(e, s, &err), 0);
    uint8_t used[2] = {0, 0};
    fr_expr_columns(e, used);
    assert_int_equal(used[0], 0x05);
    assert_int_equal(used[1], 0x03);
    uint8_t none[2] = {0, 0};
    fr_expr_columns(tk_parse(a, "1 + 2"), none);
    assert_int_equal(none[0] | none[1], 0);
    fr_arena_free(a);
    fr_schema_free(s);
}

/* ---- pruning over hand-made statistics -------------------------------------------------- */

static fr_column_stats int_stats(int64_t lo, int64_t hi, int64_t nulls)
{
    fr_column_stats st = {.null_count = nulls, .has_minmax = true};
    st.min = fr_value_int(fr_type_of(FR_T_INT), lo);
    st.max = fr_value_int(fr_type_of(FR_T_INT), hi);
    return st;
}

static bool may(const char *schema, const fr_column_stats *stats, int64_t rows, const char *text)
{
    fr_schema *s = tk_schema(schema);
    fr_arena *a = fr_arena_new(1024);
    fr_expr *e = tk_parse(a, text);
    fr_error err = {0};
    assert_int_equal(fr_expr_bind(e, s, &err), 0);
    bool r = fr_expr_may_match(e, stats, rows);
    fr_arena_free(a);
    fr_schema_free(s);
    return r;
}

static void test_may_match(void **state)
{
    (void)state;
    fr_column_stats st[2] = {int_stats(10, 20, 0), int_stats(5, 5, 3)};
    const char *S = "a INT, b INT";
    assert_false(may(S, st, 10, "a > 20"));
    assert_true(may(S, st, 10, "a >= 20"));
    assert_false(may(S, st, 10, "a < 10"));
    assert_true(may(S, st, 10, "a <= 10"));
    assert_false(may(S, st, 10, "20 < a"));
    assert_true(may(S, st, 10, "10 >= a"));
    assert_false(may(S, st, 10, "a = 9"));
    assert_true(may(S, st, 10, "a = 15"));
    assert_false(may(S, st, 10, "a = 20.5"));
    assert_true(may(S, st, 10, "a < 10.5"));
    assert_false(may(S, st, 10, "a > 20.0e0"));
    assert_false(may(S, st, 10, "b <> 5"));
    assert_true(may(S, st, 10, "a <> 5"));
    assert_false(may(S, st, 10, "a BETWEEN 21 AND 30"));
    assert_true(may(S, st, 10, "a BETWEEN 1 AND 10"));
    assert_false(may(S, st, 10, "a BETWEEN 15 AND 12"));
    assert_true(may(S, st, 10, "a NOT BETWEEN 12 AND 15"));
    assert_false(may(S, st, 10, "a NOT BETWEEN 0 AND 30"));
    assert_false(may(S, st, 10, "a IN (1, 2, 30)"));
    assert_true(may(S, st, 10, "a IN (1, 20)"));
    assert_false(may(S, st, 10, "a IN (1, NULL)"));
    assert_false(may(S, st, 10, "b NOT IN (5, 6)"));
    assert_false(may(S, st, 10, "b NOT IN (7, NULL)")); /* never TRUE */
    assert_true(may(S, st, 10, "b NOT IN (7, 8)"));
    assert_false(may(S, st, 10, "a IS NULL"));
    assert_true(may(S, st, 10, "b IS NULL"));
    assert_true(may(S, st, 10, "a IS NOT NULL"));
    assert_false(may(S, st, 3, "b IS NOT NULL"));     /* 3 rows, 3 nulls */
    assert_false(may(S, st, 3, "b = 5"));
    assert_false(may(S, st, 3, "NOT (b = 5)"));       /* NULL, not FALSE: NOT keeps it NULL */
    assert_false(may(S, st, 10, "a > 20 AND b = 5"));
    assert_true(may(S, st, 10, "a > 20 OR b = 5"));
    assert_false(may(S, st, 10, "a > 20 OR b = 6"));
    assert_false(may(S, st, 10, "NOT (a >= 10)"));
    assert_true(may(S, st, 10, "NOT (a > 10)"));
    assert_false(may(S, st, 10, "NOT (b = 5)"));
    assert_true(may(S, st, 10, "NOT (a = 15)"));
    assert_false(may(S, st, 10, "NOT (a < 30 OR b = 1)"));
    assert_true(may(S, st, 10, "NOT (a < 15 AND b = 5)"));
    assert_false(may(S, st, 10, "NOT NOT (a > 20)"));
    assert_false(may(S, st, 10, "a = NULL"));
    assert_false(may(S, st, 10, "NOT (a = NULL)"));
    assert_true(may(S, st, 10, "a + 0 > 100"));       /* not judged: true */
    assert_true(may(S, st, 10, "a > b"));
    assert_false(may(S, st, 10, "FALSE"));
    assert_false(may(S, st, 10, "a > 1 AND NULL"));
    assert_false(may(S, st, 0, "a > 1"));             /* no rows */
    assert_true(may(S, NULL, 10, "a > 100"));         /* no statistics */
    fr_column_stats unknown[2] = {{.null_count = 0, .has_minmax = false}, st[1]};
    assert_true(may(S, unknown, 10, "a > 100"));
    assert_false(may(S, unknown, 10, "a > 100 AND b > 5"));

    /* Strings, dates against string literals, booleans, doubles with NaN. */
    fr_column_stats ss = {.null_count = 1, .has_minmax = true};
    ss.min = fr_value_str(fr_type_of(FR_T_STRING), "apple", 5);
    ss.max = fr_value_str(fr_type_of(FR_T_STRING), "banana", 6);
    assert_false(may("s STRING", &ss, 5, "s > 'banana'"));
    assert_true(may("s STRING", &ss, 5, "s >= 'banana'"));
    assert_false(may("s STRING", &ss, 5, "s < 'apple'"));
    assert_true(may("s STRING", &ss, 5, "s LIKE 'b%'"));
    assert_true(may("s STRING", &ss, 5, "s LIKE 'app%'"));
    assert_true(may("s STRING", &ss, 5, "s LIKE 'apple'"));
    assert_false(may("s STRING", &ss, 5, "s LIKE 'c%'"));
    assert_true(may("s STRING", &ss, 5, "s LIKE 'a_'")); /* 'az' lies between */
    assert_false(may("s STRING", &ss, 5, "s LIKE 'bananas%'"));
    assert_false(may("s STRING", &ss, 5, "s LIKE 'aa%'"));
    assert_true(may("s STRING", &ss, 5, "s LIKE '%z'"));
    assert_true(may("s STRING", &ss, 5, "s NOT LIKE 'c%'"));

    fr_column_stats ds = {.null_count = 0, .has_minmax = true};
    ds.min = fr_value_int(fr_type_of(FR_T_DATE), 20454); /* 2026-01-01 */
    ds.max = fr_value_int(fr_type_of(FR_T_DATE), 20484); /* 2026-01-31 */
    assert_false(may("dt DATE", &ds, 5, "dt >= '2026-02-01'"));
    assert_true(may("dt DATE", &ds, 5, "dt >= '2026-01-31'"));
    assert_false(may("dt DATE", &ds, 5, "dt < TIMESTAMP '2026-01-01 00:00:00'"));
    assert_true(may("dt DATE", &ds, 5, "dt <= TIMESTAMP '2026-01-01 00:00:00'"));

    fr_column_stats bs = {.null_count = 0, .has_minmax = true};
    bs.min = fr_value_int(fr_type_of(FR_T_BOOLEAN), 0);
    bs.max = bs.min;
    bs.min.v.b = bs.max.v.b = false;
    assert_false(may("p BOOLEAN", &bs, 5, "p"));
    assert_true(may("p BOOLEAN", &bs, 5, "NOT p"));
    assert_false(may("p BOOLEAN", &bs, 5, "p = TRUE"));

    fr_column_stats fs = {.null_count = 0, .has_minmax = true};
    fs.min = fr_value_double(fr_type_of(FR_T_DOUBLE), 1.0);
    fs.max = fr_value_double(fr_type_of(FR_T_DOUBLE), 0.0 / 0.0);
    assert_true(may("d DOUBLE", &fs, 5, "d > 1e300"));   /* NaN is above everything */
    assert_true(may("d DOUBLE", &fs, 5, "d = CAST('NaN' AS DOUBLE)"));
    assert_false(may("d DOUBLE", &fs, 5, "d < 1"));
    fs.max = fr_value_double(fr_type_of(FR_T_DOUBLE), 2.0);
    assert_false(may("d DOUBLE", &fs, 5, "d = CAST('NaN' AS DOUBLE)"));
    assert_false(may("d DOUBLE", &fs, 5, "d > 2"));
    assert_true(may("d DOUBLE", &fs, 5, "d <> CAST('NaN' AS DOUBLE)"));
}

/* ---- failing allocations --------------------------------------------------------------- */

/* Every allocation of binding, evaluation and filtering fails once in turn: each run must
 * succeed with the right answer or fail with FR_ENOMEM, and leak nothing (ASan checks). */
static void test_allocation_failures(void **state)
{
    (void)state;
    static const char *const exprs[] = {
        "a + 1 > 2 AND s LIKE 'x%'", "m * 2 / a", "CAST(a AS STRING) || s", "dt = '2026-01-01' OR a IN (1, 2, NULL)",
        "a IN (1, 2, 3, 4, 5, 6, 7, 8, 9)", "NOT (d BETWEEN 0.5e0 AND a) OR s IS NULL", "-a % 3", "TRUE OR CAST(s AS INT) > 0",
    };
    check_allocation_failures(exprs, sizeof exprs / sizeof exprs[0]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bind_types),
        cmocka_unit_test(test_bind_errors),
        cmocka_unit_test(test_bind_depth_and_rebind),
        cmocka_unit_test(test_integer_arithmetic),
        cmocka_unit_test(test_integer_errors),
        cmocka_unit_test(test_double_arithmetic),
        cmocka_unit_test(test_decimal_arithmetic),
        cmocka_unit_test(test_date_arithmetic),
        cmocka_unit_test(test_compare_integers),
        cmocka_unit_test(test_compare_doubles),
        cmocka_unit_test(test_compare_strings_and_more),
        cmocka_unit_test(test_compare_temporal),
        cmocka_unit_test(test_kleene),
        cmocka_unit_test(test_is_null),
        cmocka_unit_test(test_in),
        cmocka_unit_test(test_between),
        cmocka_unit_test(test_like),
        cmocka_unit_test(test_concat),
        cmocka_unit_test(test_cast),
        cmocka_unit_test(test_passthrough),
        cmocka_unit_test(test_empty_and_large_batches),
        cmocka_unit_test(test_filter_requires_boolean),
        cmocka_unit_test(test_format),
        cmocka_unit_test(test_format_names),
        cmocka_unit_test(test_columns),
        cmocka_unit_test(test_may_match),
        cmocka_unit_test(test_allocation_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
