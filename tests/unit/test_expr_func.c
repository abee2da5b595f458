/* test_expr_func.c — CASE and the scalar functions (COALESCE, NULLIF, ABS, LOWER, UPPER,
 * CHAR_LENGTH) in the expression module: their types and errors when binding, evaluation
 * over every physical type with NULLs, constants and columns mixed, the masks that keep a
 * branch's errors to the rows it is chosen for, formatting, pruning (which must stay
 * conservative) and failing allocations.
 *
 * As in test_expr.c, every BOOLEAN result is also run as a filter and checked against the
 * evaluated values (expr_run_testkit.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "expr_run_testkit.h"

#define S_ALL                                                                                \
    "a INT, b BIGINT, t TINYINT, d DOUBLE, f FLOAT, m DECIMAL(10, 2), n DECIMAL(5, 3), "     \
    "s STRING, v VARCHAR(10), flag BOOLEAN, dt DATE, ts TIMESTAMP(3), lt TIMESTAMP_LTZ(3), " \
    "tm TIME(3), y BYTES, k INT NOT NULL"

/* ---- binding --------------------------------------------------------------------------- */

static void test_bind_case_types(void **state)
{
    (void)state;
    assert_string_equal(bind_type(S_ALL, "CASE WHEN flag THEN a ELSE 0 END"), "INT");
    assert_string_equal(bind_type(S_ALL, "CASE WHEN flag THEN k ELSE 0 END"), "INT NOT NULL");
    assert_string_equal(bind_type(S_ALL, "CASE WHEN flag THEN k END"), "INT"); /* no ELSE */
    assert_string_equal(bind_type(S_ALL, "CASE WHEN flag THEN t ELSE k END"), "INT");
    assert_string_equal(bind_type(S_ALL, "CASE WHEN flag THEN k WHEN a > 1 THEN b ELSE t END"), "BIGINT");
    assert_string_equal(bind_type(S_ALL, "CASE WHEN flag THEN m ELSE n END"), "DECIMAL(11, 3)");
    assert_string_equal(bind_type(S_ALL, "CASE WHEN flag THEN m ELSE a END"), "DECIMAL(12, 2)");
    assert_string_equal(bind_type(S_ALL, "CASE WHEN flag THEN b ELSE m END"), "DECIMAL(21, 2)");
    assert_string_equal(bind_type(S_ALL, "CASE WHEN flag THEN m ELSE 1.5 END"), "DECIMAL(10, 2)");
    assert_string_equal(bind_type(S_ALL, "CASE WHEN flag THEN d ELSE m END"), "DOUBLE");
    assert_string_equal(bind_type(S_ALL, "CASE WHEN flag THEN f ELSE f END"), "FLOAT");
    assert_string_equal(bind_type(S_ALL, "CASE WHEN flag THEN f ELSE a END"), "DOUBLE");
    assert_string_equal(bind_type(S_ALL, "CASE WHEN flag THEN s ELSE v END"), "STRING");
    assert_string_equal(bind_type(S_ALL, "CASE WHEN flag THEN v ELSE v END"), "VARCHAR(10)");
    assert_string_equal(bind_type(S_ALL, "CASE WHEN flag THEN 'x' ELSE 'y' END"), "STRING NOT NULL");
    assert_string_equal(bind_type(S_ALL, "CASE WHEN flag THEN y ELSE X'00' END"), "BYTES");
    assert_string_equal(bind_type(S_ALL, "CASE WHEN flag THEN dt ELSE ts END"), "TIMESTAMP(3)");
    assert_string_equal(bind_type(S_ALL, "CASE WHEN flag THEN ts ELSE TIMESTAMP '2026-01-01 00:00:00' END"),
                        "TIMESTAMP(6)");
    assert_string_equal(bind_type(S_ALL, "CASE WHEN flag THEN tm ELSE TIME '10:00:00' END"), "TIME(3)");
    assert_string_equal(bind_type(S_ALL, "CASE WHEN flag THEN flag ELSE a > 1 END"), "BOOLEAN");
    /* A NULL branch takes the others' type; NULL conditions are allowed (never TRUE). */
    assert_string_equal(bind_type(S_ALL, "CASE WHEN flag THEN NULL ELSE k END"), "INT");
    assert_string_equal(bind_type(S_ALL, "CASE WHEN NULL THEN 1 ELSE 2 END"), "INT NOT NULL");
    assert_string_equal(bind_type(S_ALL, "CASE WHEN flag THEN NULL END"), "STRING");
    /* The simple form compares as IN does; a string is parsed as the operand's date. */
    assert_string_equal(bind_type(S_ALL, "CASE a WHEN 1 THEN 'x' WHEN 2.5 THEN 'y' END"), "STRING");
    assert_string_equal(bind_type(S_ALL, "CASE dt WHEN '2026-01-01' THEN 1 ELSE 0 END"), "INT NOT NULL");
    assert_string_equal(bind_type(S_ALL, "CASE NULL WHEN 1 THEN 1 ELSE 0 END"), "INT NOT NULL");

    assert_string_equal(bind_type(S_ALL, "COALESCE(a, 0)"), "INT NOT NULL");
    assert_string_equal(bind_type(S_ALL, "COALESCE(a, b)"), "BIGINT");
    assert_string_equal(bind_type(S_ALL, "COALESCE(a, NULL)"), "INT");
    assert_string_equal(bind_type(S_ALL, "COALESCE(k)"), "INT NOT NULL");
    assert_string_equal(bind_type(S_ALL, "COALESCE(NULL, s, 'x')"), "STRING NOT NULL");
    assert_string_equal(bind_type(S_ALL, "COALESCE(m, n, 0)"), "DECIMAL(13, 3) NOT NULL");
    assert_string_equal(bind_type(S_ALL, "NULLIF(a, 0)"), "INT");
    assert_string_equal(bind_type(S_ALL, "NULLIF(k, 0)"), "INT");
    assert_string_equal(bind_type(S_ALL, "NULLIF(k, 0.5)"), "INT");
    assert_string_equal(bind_type(S_ALL, "NULLIF(v, s)"), "VARCHAR(10)");
    assert_string_equal(bind_type(S_ALL, "NULLIF(dt, '2026-01-01')"), "DATE");
    assert_string_equal(bind_type(S_ALL, "NULLIF(NULL, a)"), "INT");
    assert_string_equal(bind_type(S_ALL, "ABS(a)"), "BIGINT");
    assert_string_equal(bind_type(S_ALL, "ABS(k)"), "BIGINT NOT NULL");
    assert_string_equal(bind_type(S_ALL, "ABS(m)"), "DECIMAL(10, 2)");
    assert_string_equal(bind_type(S_ALL, "ABS(f)"), "DOUBLE");
    assert_string_equal(bind_type(S_ALL, "ABS(d)"), "DOUBLE");
    assert_string_equal(bind_type(S_ALL, "ABS(NULL)"), "BIGINT");
    assert_string_equal(bind_type(S_ALL, "LOWER(s)"), "STRING");
    assert_string_equal(bind_type(S_ALL, "UPPER(v)"), "VARCHAR(10)");
    assert_string_equal(bind_type(S_ALL, "LOWER('X')"), "STRING NOT NULL");
    assert_string_equal(bind_type(S_ALL, "UPPER(NULL)"), "STRING");
    assert_string_equal(bind_type(S_ALL, "CHAR_LENGTH(s)"), "INT");
    assert_string_equal(bind_type(S_ALL, "CHARACTER_LENGTH('abc')"), "INT NOT NULL");
}

static void test_bind_case_errors(void **state)
{
    (void)state;
    assert_string_equal(bind_type(S_ALL, "CASE WHEN a THEN 1 END"),
                        "error ETYPE: line 1, column 11: WHEN needs a BOOLEAN condition, not INT");
    assert_string_equal(bind_type(S_ALL, "CASE WHEN flag THEN 1 ELSE 'x' END"),
                        "error ETYPE: line 1, column 28: CASE results have incompatible types INT and STRING "
                        "(CAST one of them)");
    assert_string_equal(bind_type(S_ALL, "CASE WHEN flag THEN 1 WHEN flag THEN 2.5 ELSE s END"),
                        "error ETYPE: line 1, column 47: CASE results have incompatible types DECIMAL(11, 1) and "
                        "STRING (CAST one of them)");
    assert_string_equal(bind_type(S_ALL, "CASE WHEN flag THEN dt ELSE lt END"),
                        "error ETYPE: line 1, column 29: CASE results have incompatible types DATE and "
                        "TIMESTAMP_LTZ(3) (CAST one of them)");
    assert_string_equal(bind_type(S_ALL, "CASE WHEN flag THEN y ELSE s END"),
                        "error ETYPE: line 1, column 28: CASE results have incompatible types BYTES and STRING "
                        "(CAST one of them)");
    assert_string_equal(bind_type(S_ALL, "CASE WHEN flag THEN dt ELSE '2026-01-01' END"),
                        "error ETYPE: line 1, column 29: CASE results have incompatible types DATE and STRING "
                        "(CAST one of them)");
    assert_string_equal(bind_type(S_ALL, "CASE a WHEN 'x' THEN 1 END"),
                        "error ETYPE: line 1, column 1: cannot compare INT with STRING");
    assert_string_equal(bind_type(S_ALL, "COALESCE(a, s)"),
                        "error ETYPE: line 1, column 13: COALESCE arguments have incompatible types INT and "
                        "STRING (CAST one of them)");
    assert_string_equal(bind_type(S_ALL, "COALESCE(a, zz)"), "error ENOTFOUND: line 1, column 13: unknown column 'zz'");
    assert_string_equal(bind_type(S_ALL, "NULLIF(a, s)"), "error ETYPE: line 1, column 1: cannot compare INT with STRING");
    assert_string_equal(bind_type(S_ALL, "ABS(s)"), "error ETYPE: line 1, column 1: ABS needs a number, not STRING");
    assert_string_equal(bind_type(S_ALL, "ABS(dt)"), "error ETYPE: line 1, column 1: ABS needs a number, not DATE");
    assert_string_equal(bind_type(S_ALL, "LOWER(a)"), "error ETYPE: line 1, column 1: LOWER needs a string, not INT");
    assert_string_equal(bind_type(S_ALL, "UPPER(y)"), "error ETYPE: line 1, column 1: UPPER needs a string, not BYTES");
    assert_string_equal(bind_type(S_ALL, "a + CHAR_LENGTH(flag)"),
                        "error ETYPE: line 1, column 5: CHAR_LENGTH needs a string, not BOOLEAN");
    assert_string_equal(bind_type(S_ALL, "CASE WHEN flag THEN 1 ELSE 2 END + 'x'"),
                        "error ETYPE: line 1, column 1: cannot apply + to INT and STRING");

    /* Trees built by hand with the wrong number of operands. */
    fr_schema *s = tk_schema(S_ALL);
    fr_arena *a = fr_arena_new(1024);
    fr_error err = {0};
    fr_expr *none = fr_expr_call(a, FR_FN_COALESCE, 0, NULL);
    assert_int_equal(fr_expr_bind(none, s, &err), FR_EINVAL);
    assert_string_equal(err.msg, "COALESCE needs at least one argument");
    fr_expr *x = fr_expr_column(a, "a");
    fr_expr *two = fr_expr_call(a, FR_FN_ABS, 2, (fr_expr *[]){x, x});
    assert_int_equal(fr_expr_bind(two, s, &err), FR_EINVAL);
    assert_string_equal(err.msg, "ABS needs 1 argument, not 2");
    fr_expr *bare = fr_expr_node(a, FR_EX_CASE, FR_OP_NONE, 1, &x);
    bare->case_else = true;
    assert_int_equal(fr_expr_bind(bare, s, &err), FR_EINVAL);
    fr_expr *odd = fr_expr_node(a, FR_EX_CASE, FR_OP_NONE, 3, (fr_expr *[]){x, x, x});
    assert_int_equal(fr_expr_bind(odd, s, &err), FR_EINVAL);
    fr_arena_free(a);
    fr_schema_free(s);
}

/* Binding a tree again gives the same types (NULL literals adopted the first time). */
static void test_rebind(void **state)
{
    (void)state;
    static const char *const texts[] = {
        "CASE WHEN flag THEN NULL WHEN a > 0 THEN m ELSE 1 END", "COALESCE(NULL, a, NULL, 2)",
        "CASE dt WHEN '2026-01-01' THEN NULL ELSE ts END", "NULLIF(NULL, m)", "ABS(NULL) + LOWER(NULL) IS NULL",
    };
    fr_schema *s = tk_schema(S_ALL);
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        fr_arena *a = fr_arena_new(1024);
        fr_expr *e = tk_parse(a, texts[i]);
        fr_error err = {0};
        if (fr_expr_bind(e, s, &err) < 0 && !strstr(texts[i], "LOWER")) fail_msg("%s: %s", texts[i], err.msg);
        fr_type first = e->type;
        int rc = fr_expr_bind(e, s, &err);
        if (rc == 0) {
            assert_true(fr_type_equal(&first, &e->type));
            assert_int_equal(first.nullable, e->type.nullable);
        }
        fr_arena_free(a);
    }
    fr_schema_free(s);
}

/* ---- CASE ------------------------------------------------------------------------------ */

static void test_case_eval(void **state)
{
    (void)state;
    const char *S = "a INT, b INT, s STRING, p BOOLEAN";
    const char *R = "5|0|x|true; 1|2|y|false; -3|NULL|NULL|NULL; NULL|4|z|true";
    EXPECT(S, R, "CASE WHEN a > 1 THEN 'big' WHEN a = 1 THEN 'one' ELSE 'small' END", "big,one,small,small");
    EXPECT(S, R, "CASE WHEN a > 1 THEN 'big' WHEN a = 1 THEN 'one' END", "big,one,NULL,NULL");
    /* The first WHEN that is TRUE wins; a NULL condition is not TRUE. */
    EXPECT(S, R, "CASE WHEN p THEN a WHEN a < 100 THEN b END", "5,2,NULL,NULL");
    EXPECT(S, R, "CASE WHEN p THEN 1 WHEN NOT p THEN 0 ELSE -1 END", "1,0,-1,1");
    EXPECT(S, R, "CASE WHEN NULL THEN 1 ELSE 2 END", "2,2,2,2");
    EXPECT(S, R, "CASE WHEN TRUE THEN s END", "x,y,NULL,z");
    /* The simple form: NULL matches nothing, not even NULL. */
    EXPECT(S, R, "CASE a WHEN 5 THEN 'five' WHEN 1 THEN 'one' ELSE 'other' END", "five,one,other,other");
    EXPECT(S, R, "CASE b WHEN NULL THEN 'null' ELSE 'not' END", "not,not,not,not");
    EXPECT(S, R, "CASE a + b WHEN 5 THEN 'five' WHEN b + 1 THEN 'b+1' END", "five,b+1,NULL,NULL");
    EXPECT(S, R, "CASE s WHEN 'x' THEN 1 WHEN 'z' THEN 26 END", "1,NULL,NULL,26");
    EXPECT(S, R, "CASE p WHEN TRUE THEN 'yes' WHEN FALSE THEN 'no' END", "yes,no,NULL,yes");
    EXPECT(S, R, "CASE 5 WHEN a THEN 'a' WHEN b THEN 'b' END", "a,NULL,NULL,NULL");
    /* Constants and columns mixed; results nested in operators. */
    EXPECT(S, R, "CASE WHEN p THEN 10 ELSE a END * 2", "20,2,-6,20");
    EXPECT(S, R, "CASE WHEN a IS NULL THEN 0 ELSE a END + CASE b WHEN 0 THEN 100 ELSE 0 END", "105,1,-3,0");
    EXPECT(S, R, "CASE WHEN a > 0 THEN p ELSE NOT p END", "true,false,NULL,false");
    EXPECT(S, R, "CASE WHEN a > 0 THEN CASE WHEN b > 0 THEN 'both' ELSE 'a' END ELSE 'none' END",
           "a,both,none,none");
}

/* A branch is evaluated only where it is chosen, and a WHEN only where no earlier one was
 * TRUE: errors of the other rows never surface. */
static void test_case_masks(void **state)
{
    (void)state;
    const char *S = "a INT, b INT";
    const char *R = "10|0; 10|5; NULL|0; 7|NULL";
    EXPECT(S, R, "a / b", "error EINVAL: line 1, column 1: division by zero");
    EXPECT(S, R, "CASE WHEN b <> 0 THEN a / b ELSE 0 END", "0,2,0,0");
    EXPECT(S, R, "CASE WHEN b = 0 THEN -1 WHEN a / b > 1 THEN 1 ELSE 0 END", "-1,1,-1,0");
    EXPECT(S, R, "CASE b WHEN 0 THEN NULL ELSE a / b END", "NULL,2,NULL,NULL");
    EXPECT(S, R, "CASE WHEN b = 0 THEN 0 ELSE a / b END", "0,2,0,NULL");
    /* The chosen branch does fail, and says where. */
    EXPECT(S, R, "CASE WHEN b = 0 THEN a / b END", "error EINVAL: line 1, column 22: division by zero");
    EXPECT(S, R, "CASE WHEN a > 0 THEN 1 ELSE a / b END", "1,1,NULL,1");
    EXPECT(S, "10|0", "CASE WHEN a > 100 THEN 1 ELSE a / b END", "error EINVAL: line 1, column 31: division by zero");
    /* Under AND and OR, which mask their right side. */
    EXPECT(S, R, "b <> 0 AND CASE WHEN a / b > 1 THEN TRUE END", "false,true,false,NULL");
    EXPECT(S, R, "b = 0 OR CASE WHEN a / b > 100 THEN TRUE ELSE FALSE END", "true,false,true,NULL");
    /* COALESCE evaluates an argument only where the ones before it are NULL. */
    EXPECT(S, R, "COALESCE(CASE WHEN b <> 0 THEN a / b END, 10 / (b - b), 0)", "error EINVAL: line 1, column 43: division by zero");
    EXPECT(S, R, "COALESCE(b, a / b)", "0,5,0,NULL");
    EXPECT(S, R, "COALESCE(NULLIF(b, 0), 1)", "1,5,1,1");
    EXPECT(S, R, "a / COALESCE(NULLIF(b, 0), 1)", "10,2,NULL,7");
    /* NULLIF evaluates y only where x is not NULL. */
    EXPECT(S, "NULL|0; 4|2", "NULLIF(a, 8 / b)", "NULL,NULL");
    /* ABS overflow only where chosen. */
    EXPECT("x BIGINT", "-9223372036854775808; 5; -5",
           "CASE WHEN x > -9223372036854775807 THEN ABS(x) ELSE 0 END", "0,5,5");
}

static void test_case_types(void **state)
{
    (void)state;
    const char *S = "p BOOLEAN, i INT, t TINYINT, b BIGINT, d DOUBLE, f FLOAT, m DECIMAL(10, 2), "
                    "n DECIMAL(5, 3), s STRING, v VARCHAR(5), y BYTES, dt DATE, ts TIMESTAMP(3)";
    const char *R = "true|1|-1|100|0.5|1.5|1.25|0.125|abc|vv|ab|2026-01-01|2026-01-02 03:04:05.678;"
                    "false|NULL|2|NULL|NaN|NULL|-2.50|NULL|NULL|w|NULL|NULL|2026-01-03 00:00:00.001;"
                    "NULL|3|NULL|-7|NULL|-0.25|NULL|9.999|ç|NULL|z|2024-02-29|NULL";
    EXPECT(S, R, "CASE WHEN p THEN i > 0 ELSE FALSE END", "true,false,false");
    EXPECT(S, R, "CASE WHEN p THEN t ELSE i END", "-1,NULL,3");
    EXPECT(S, R, "CASE WHEN p THEN b ELSE 1 END", "100,1,1");
    EXPECT(S, R, "COALESCE(b, i, t, 0)", "100,2,-7");
    EXPECT(S, R, "CASE WHEN p THEN d ELSE i END", "0.5,NULL,3.0");
    EXPECT(S, R, "COALESCE(d, f, -1.5e0)", "0.5,NaN,-0.25");
    EXPECT(S, R, "COALESCE(f, FLOAT 2.5)", "1.5,2.5,-0.25");
    EXPECT(S, R, "CASE WHEN p THEN m ELSE n END", "1.250,NULL,9.999");
    EXPECT(S, R, "COALESCE(m, n, 0)", "1.250,-2.500,9.999");
    EXPECT(S, R, "COALESCE(m, i, 0.5)", "1.25,-2.50,3.00");
    EXPECT(S, R, "CASE WHEN p THEN s ELSE v END", "abc,w,NULL");
    EXPECT(S, R, "COALESCE(s, v, 'none')", "abc,w,ç");
    EXPECT(S, R, "CASE WHEN p IS NULL THEN '' ELSE s END", "abc,NULL,");
    EXPECT(S, R, "COALESCE(y, X'ff00')", "\\x6162,\\xff00,\\x7a");
    EXPECT(S, R, "CASE WHEN p THEN dt ELSE ts END", "2026-01-01 00:00:00.000,2026-01-03 00:00:00.001,NULL");
    EXPECT(S, R, "COALESCE(dt, DATE '2000-01-01')", "2026-01-01,2000-01-01,2024-02-29");
    EXPECT(S, R, "COALESCE(ts, TIMESTAMP '2000-01-01 00:00:00')",
           "2026-01-02 03:04:05.678000,2026-01-03 00:00:00.001000,2000-01-01 00:00:00.000000");
    /* A DECIMAL common type capped at 38 digits: a value past it fails where chosen. */
    const char *W = "p BOOLEAN, w DECIMAL(38, 0), z DECIMAL(10, 5)";
    assert_string_equal(bind_type(W, "CASE WHEN p THEN w ELSE z END"), "DECIMAL(38, 5)");
    EXPECT(W, "true|12|1.5; false|99999999999999999999999999999999999999|2.25", "CASE WHEN p THEN w ELSE z END",
           "12.00000,2.25000");
    EXPECT(W, "false|12|1.5; true|99999999999999999999999999999999999999|2.25", "CASE WHEN p THEN w ELSE z END",
           "error ERANGE: line 1, column 18: numeric overflow: value does not fit DECIMAL(38, 5)");
    /* A DATE past the nanosecond range of TIMESTAMP(9), likewise. */
    const char *T = "p BOOLEAN, dt DATE, ts TIMESTAMP(9)";
    EXPECT(T, "false|9999-12-31|2026-01-01 00:00:00; true|2026-01-01|NULL", "CASE WHEN p THEN dt ELSE ts END",
           "2026-01-01 00:00:00.000000000,2026-01-01 00:00:00.000000000");
    EXPECT(T, "true|9999-12-31|2026-01-01 00:00:00", "CASE WHEN p THEN dt ELSE ts END",
           "error ERANGE: line 1, column 18: numeric overflow: value does not fit TIMESTAMP(9)");
}

/* 200 rows: whole 64-row words and a tail, branches chosen in interleaved patterns. */
static void test_case_large(void **state)
{
    (void)state;
    fr_buf rows, want;
    fr_buf_init(&rows);
    fr_buf_init(&want);
    for (int i = 0; i < 200; i++) {
        if (i % 7 == 6) fr_buf_printf(&rows, NULL, "%sNULL", i ? ";" : "");
        else fr_buf_printf(&rows, NULL, "%s%d", i ? ";" : "", i);
        const char *w = i % 7 == 6 ? "n" : i % 3 == 0 ? "three" : i % 2 == 0 ? "two" : "0";
        fr_buf_printf(&want, NULL, "%s%s", i ? "," : "", w);
    }
    EXPECT("a INT", (char *)rows.data,
           "CASE WHEN a % 3 = 0 THEN 'three' WHEN a % 2 = 0 THEN 'two' "
           "ELSE COALESCE(CAST(a * 0 AS STRING), 'n') END", (char *)want.data);
    /* The same as a filter over the words. */
    fr_buf_reset(&want);
    for (int i = 0; i < 200; i++)
        fr_buf_printf(&want, NULL, "%s%s", i ? "," : "", i % 7 == 6 || i % 3 == 0 ? "true" : "false");
    EXPECT("a INT", (char *)rows.data, "COALESCE(CASE a % 3 WHEN 0 THEN TRUE WHEN 1 THEN FALSE ELSE a > 1000 END, TRUE)",
           (char *)want.data);
    fr_buf_free(&rows);
    fr_buf_free(&want);
    /* No rows at all. */
    EXPECT("a INT", "", "CASE WHEN a > 0 THEN 'x' END", "");
    EXPECT("a INT", "", "COALESCE(a, 1)", "");
}

/* ---- functions ------------------------------------------------------------------------- */

static void test_coalesce_nullif(void **state)
{
    (void)state;
    const char *S = "a INT, b INT, s STRING";
    const char *R = "1|10|x; NULL|20|NULL; NULL|NULL|z; 4|4|";
    EXPECT(S, R, "COALESCE(a, b)", "1,20,NULL,4");
    EXPECT(S, R, "COALESCE(a, b, -1)", "1,20,-1,4");
    EXPECT(S, R, "COALESCE(a)", "1,NULL,NULL,4");
    EXPECT(S, R, "COALESCE(NULL, a, NULL)", "1,NULL,NULL,4");
    EXPECT(S, R, "COALESCE(NULL, NULL)", "NULL,NULL,NULL,NULL");
    EXPECT(S, R, "COALESCE(7, a)", "7,7,7,7");
    EXPECT(S, R, "COALESCE(s, 'none')", "x,none,z,");
    EXPECT(S, R, "COALESCE(a, b) > 3", "false,true,NULL,true");
    EXPECT(S, R, "NULLIF(a, b)", "1,NULL,NULL,NULL");
    EXPECT(S, R, "NULLIF(b, 20)", "10,NULL,NULL,4");
    EXPECT(S, R, "NULLIF(s, '')", "x,NULL,z,NULL");
    EXPECT(S, R, "NULLIF(a, NULL)", "1,NULL,NULL,4");
    EXPECT(S, R, "NULLIF(NULL, a)", "NULL,NULL,NULL,NULL");
    EXPECT(S, R, "NULLIF(4, a)", "4,4,4,NULL");
    EXPECT(S, R, "NULLIF(4, 4)", "NULL,NULL,NULL,NULL");
    EXPECT(S, R, "NULLIF(4, 5)", "4,4,4,4");
    /* Compared in the common type, returned in x's own. */
    EXPECT(S, R, "NULLIF(a, 1.0)", "NULL,NULL,NULL,4");
    EXPECT(S, R, "NULLIF(a, 1.5e0)", "1,NULL,NULL,4");
    EXPECT("x DECIMAL(5, 2), dt DATE", "1.50|2026-01-01; 2.00|2026-01-02", "NULLIF(x, 2)", "1.50,NULL");
    EXPECT("x DECIMAL(5, 2), dt DATE", "1.50|2026-01-01; 2.00|2026-01-02", "NULLIF(dt, '2026-01-02')",
           "2026-01-01,NULL");
    EXPECT("d DOUBLE", "NaN; 1.0; -0.0", "NULLIF(d, CAST('NaN' AS DOUBLE))", "NULL,1.0,-0.0");
}

static void test_abs(void **state)
{
    (void)state;
    EXPECT("a INT, t TINYINT", "-5|-128; 0|127; NULL|NULL; 2147483647|-1", "ABS(a)", "5,0,NULL,2147483647");
    EXPECT("a INT, t TINYINT", "-5|-128; 0|127; NULL|NULL; 2147483647|-1", "ABS(t)", "128,127,NULL,1");
    EXPECT("a INT", "-2147483648", "ABS(a)", "2147483648");
    EXPECT("b BIGINT", "-9223372036854775807; 9223372036854775807", "ABS(b)",
           "9223372036854775807,9223372036854775807");
    EXPECT("b BIGINT", "1; -9223372036854775808", "ABS(b)", "error ERANGE: line 1, column 1: BIGINT overflow in ABS");
    EXPECT("b BIGINT", "1; NULL", "ABS(-9223372036854775807 - 1)", "error ERANGE: line 1, column 1: BIGINT overflow in ABS");
    EXPECT("m DECIMAL(5, 2)", "-1.25; 0.00; 999.99; -999.99; NULL", "ABS(m)", "1.25,0.00,999.99,999.99,NULL");
    EXPECT("m DECIMAL(38, 0)", "-99999999999999999999999999999999999999", "ABS(m)",
           "99999999999999999999999999999999999999");
    EXPECT("d DOUBLE", "-1.5; -0.0; NaN; -Infinity; 2.0", "ABS(d)", "1.5,0.0,NaN,Infinity,2.0");
    EXPECT("f FLOAT", "-1.5; NULL", "ABS(f)", "1.5,NULL");
    EXPECT("a INT", "1; 2", "ABS(-3) + ABS(NULL)", "NULL,NULL");
    EXPECT("a INT", "1; 2", "ABS(-3.5)", "3.5,3.5");
    EXPECT("a INT", "-1; 2", "ABS(a) = 1", "true,false");
}

static void test_strings(void **state)
{
    (void)state;
    const char *S = "s STRING, v VARCHAR(8)";
    const char *R = "AbC-xyZ|Hello; |NULL; ÄÖü ßé|naïve; NULL|日本語; 12 _%|  ";
    EXPECT(S, R, "LOWER(s)", "abc-xyz,,ÄÖü ßé,NULL,12 _%");
    EXPECT(S, R, "UPPER(s)", "ABC-XYZ,,ÄÖü ßé,NULL,12 _%");
    EXPECT(S, R, "UPPER(v)", "HELLO,NULL,NAïVE,日本語,");
    EXPECT(S, R, "CHAR_LENGTH(s)", "7,0,6,NULL,5");
    EXPECT(S, R, "CHARACTER_LENGTH(v)", "5,NULL,5,3,0");
    EXPECT(S, R, "LOWER('MiXeD')", "mixed,mixed,mixed,mixed,mixed");
    EXPECT(S, R, "UPPER(NULL)", "NULL,NULL,NULL,NULL,NULL");
    EXPECT(S, R, "CHAR_LENGTH('日本')", "2,2,2,2,2");
    EXPECT(S, R, "CHAR_LENGTH(NULL)", "NULL,NULL,NULL,NULL,NULL");
    EXPECT(S, R, "LOWER(s) LIKE 'abc%'", "true,false,false,NULL,false");
    EXPECT(S, R, "UPPER(LOWER(s) || v)", "ABC-XYZHELLO,NULL,ÄÖü ßéNAïVE,NULL,12 _%");
    /* Bytes that are not UTF-8 count one each, as LIKE's _ takes them. */
    EXPECT("s STRING", "x", "CHAR_LENGTH(CAST(X'ff80c3' AS STRING))", "3");
}

/* ---- formatting, pruning, allocation failures ------------------------------------------ */

static void test_format(void **state)
{
    (void)state;
    assert_string_equal(format_of("CASE WHEN a > 1 THEN 'x' ELSE NULL END"), "CASE WHEN (a > 1) THEN 'x' ELSE NULL END");
    assert_string_equal(format_of("CASE WHEN p THEN 1 WHEN q THEN 2 END + 1"), "(CASE WHEN p THEN 1 WHEN q THEN 2 END + 1)");
    assert_string_equal(format_of("CASE a + 1 WHEN 1 THEN s END"), "CASE (a + 1) WHEN 1 THEN s END");
    assert_string_equal(format_of("COALESCE(a, b, 0)"), "COALESCE(a, b, 0)");
    assert_string_equal(format_of("nullif(a, 'x')"), "NULLIF(a, 'x')");
    assert_string_equal(format_of("abs(-a)"), "ABS((- a))");
    assert_string_equal(format_of("character_length(lower(s)) = upper"), "(CHAR_LENGTH(LOWER(s)) = upper)");
    assert_string_equal(format_of("COALESCE(CASE a WHEN 1 THEN TRUE END, `end`)"),
                        "COALESCE(CASE a WHEN 1 THEN TRUE END, `end`)");
}

static bool may(const char *schema, const fr_column_stats *st, int64_t rows, const char *text)
{
    fr_schema *s = tk_schema(schema);
    fr_arena *a = fr_arena_new(1024);
    fr_expr *e = tk_parse(a, text);
    fr_error err = {0};
    if (fr_expr_bind(e, s, &err) < 0) fail_msg("%s: %s", text, err.msg);
    bool r = fr_expr_may_match(e, st, rows);
    fr_arena_free(a);
    fr_schema_free(s);
    return r;
}

/* Pruning does not look into CASE and functions: it must answer "may match" for them,
 * also under NOT, and still prune what the rest of the predicate rules out. */
static void test_may_match(void **state)
{
    (void)state;
    fr_column_stats st[2] = {{.null_count = 0, .has_minmax = true}, {.null_count = 10, .has_minmax = false}};
    st[0].min = fr_value_int(fr_type_of(FR_T_INT), 10);
    st[0].max = fr_value_int(fr_type_of(FR_T_INT), 20);
    const char *S = "a INT, b INT";
    assert_true(may(S, st, 10, "COALESCE(b, a) = 15"));
    assert_true(may(S, st, 10, "COALESCE(b, 100) = 100"));
    assert_true(may(S, st, 10, "NOT (COALESCE(b, 0) > 1)"));
    assert_true(may(S, st, 10, "CASE WHEN a > 100 THEN TRUE ELSE FALSE END"));
    assert_true(may(S, st, 10, "NOT CASE WHEN a < 100 THEN TRUE END"));
    assert_true(may(S, st, 10, "CASE a WHEN 15 THEN TRUE END"));
    assert_true(may(S, st, 10, "CASE WHEN a > 0 THEN NULL END IS NULL"));
    assert_true(may(S, st, 10, "NULLIF(a, 15) IS NULL"));
    assert_true(may(S, st, 10, "ABS(a) = 15 OR CHAR_LENGTH('x') = 1"));
    assert_true(may(S, st, 10, "a = COALESCE(NULL, 15)"));
    assert_false(may(S, st, 10, "a > 20 AND COALESCE(b, 0) = 0"));
    assert_false(may(S, st, 10, "b = 1 AND CASE WHEN a > 0 THEN TRUE END"));
}

/* Every allocation fails once in turn: each run gives the right answer or FR_ENOMEM, and
 * leaks nothing (ASan checks). */
static void test_allocation_failures(void **state)
{
    (void)state;
    static const char *const exprs[] = {
        "CASE WHEN a > 1 THEN s WHEN a IS NULL THEN 'null' ELSE LOWER(s) END",
        "CASE a WHEN 1 THEN m WHEN 3 THEN 2 END", "COALESCE(s, UPPER(s), 'z') || 'x'", "NULLIF(a, 3) + ABS(m)",
        "CHAR_LENGTH(s) > 1 OR CASE WHEN d > 0 THEN TRUE END", "COALESCE(dt, DATE '2000-01-01') < dt",
    };
    check_allocation_failures(exprs, sizeof exprs / sizeof exprs[0]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bind_case_types),
        cmocka_unit_test(test_bind_case_errors),
        cmocka_unit_test(test_rebind),
        cmocka_unit_test(test_case_eval),
        cmocka_unit_test(test_case_masks),
        cmocka_unit_test(test_case_types),
        cmocka_unit_test(test_case_large),
        cmocka_unit_test(test_coalesce_nullif),
        cmocka_unit_test(test_abs),
        cmocka_unit_test(test_strings),
        cmocka_unit_test(test_format),
        cmocka_unit_test(test_may_match),
        cmocka_unit_test(test_allocation_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
