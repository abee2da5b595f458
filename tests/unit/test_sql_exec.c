/* test_sql_exec.c — the SQL executor end to end against a real engine in a scratch data
 * dir: DDL and its messages, INSERT and SELECT with every type, WHERE, LIMIT, expressions
 * and result names, constant SELECTs, sinks that stop, and the exact error messages of
 * unknown tables and columns, wrong types, out-of-range values and malformed SQL. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "sql/sql.h"

/* ---- fixture: an engine in a scratch dir and a session --------------------------------- */

typedef struct fixture {
    char dir[1024];
    fr_engine *engine;
    fr_sql_session *session;
} fixture;

static fixture fx;

static int setup(void **state)
{
    (void)state;
    const char *base = getenv("FIRTH_TEST_TMP");
    if (!base || !*base) base = "/tmp";
    fr_error err = {0};
    if (fr_mkdirs(base, &err) < 0) return -1;
    snprintf(fx.dir, sizeof fx.dir, "%s/test_sql_exec.XXXXXX", base);
    if (!mkdtemp(fx.dir)) return -1;
    fr_engine_options o;
    fr_engine_options_default(&o);
    o.data_dir = fx.dir;
    o.flush = FR_FLUSH_NONE;
    if (fr_engine_open(&o, &fx.engine, &err) < 0) {
        fprintf(stderr, "engine open: %s\n", err.msg);
        return -1;
    }
    return fr_sql_session_new(fx.engine, &fx.session, &err);
}

static int teardown(void **state)
{
    (void)state;
    fr_sql_session_free(fx.session);
    fr_engine_close(fx.engine);
    fr_error err = {0};
    fr_remove_tree(fx.dir, &err);
    return 0;
}

/* ---- a sink that prints what it gets ---------------------------------------------------- */

/* Output format: begin prints "[name TYPE, ...]", each row "v1 | v2", end its message or
 * "end" when there is none. Every entry ends in a newline. */
typedef struct printer {
    fr_buf out;
    int stop_after_rows; /* rows() returns 1 after this many calls (0: never) */
    int rows_calls;
    int64_t batches;
} printer;

static int p_begin(void *ctx, const fr_schema *schema, fr_error *err)
{
    printer *p = ctx;
    fr_buf_printf(&p->out, err, "[");
    for (int i = 0; i < fr_schema_num_fields(schema); i++) {
        const fr_field *f = fr_schema_field(schema, i);
        char t[64];
        fr_type_format(&f->type, true, t, sizeof t);
        fr_buf_printf(&p->out, err, "%s%s %s", i ? ", " : "", f->name, t);
    }
    fr_buf_printf(&p->out, err, "]\n");
    return 0;
}

static int p_rows(void *ctx, fr_batch *batch, fr_error *err)
{
    printer *p = ctx;
    p->batches++;
    for (int64_t r = 0; r < fr_batch_num_rows(batch); r++) {
        for (int c = 0; c < fr_batch_num_columns(batch); c++) {
            fr_value v;
            fr_column_get(fr_batch_column(batch, c), r, &v);
            if (c) fr_buf_printf(&p->out, err, " | ");
            if (v.is_null)
                fr_buf_printf(&p->out, err, "NULL");
            else
                fr_value_format(&v, &p->out, err);
        }
        fr_buf_printf(&p->out, err, "\n");
    }
    fr_batch_free(batch);
    return p->stop_after_rows && ++p->rows_calls >= p->stop_after_rows ? 1 : 0;
}

static int p_end(void *ctx, const char *message, fr_error *err)
{
    printer *p = ctx;
    fr_buf_printf(&p->out, err, "%s\n", message ? message : "end");
    return 0;
}

/* Runs text; returns the printed output (static storage) or "error CODE: message". */
static const char *run_with(printer *p, const char *text)
{
    static char result[1 << 16];
    fr_sql_sink sink = {.ctx = p, .begin = p_begin, .rows = p_rows, .end = p_end};
    fr_error err = {0};
    int rc = fr_sql_execute(fx.session, text, strlen(text), &sink, &err);
    if (rc < 0)
        snprintf(result, sizeof result, "%.*serror %s: %s", (int)p->out.len,
                 p->out.data ? (const char *)p->out.data : "", fr_strcode(rc), err.msg);
    else
        snprintf(result, sizeof result, "%.*s", (int)p->out.len,
                 p->out.data ? (const char *)p->out.data : "");
    return result;
}

static const char *run(const char *text)
{
    printer p = {0};
    fr_buf_init(&p.out);
    const char *r = run_with(&p, text);
    fr_buf_free(&p.out);
    return r;
}

#define assert_run(text, want) assert_string_equal(run(text), want)

/* ---- DDL ------------------------------------------------------------------------------- */

static void test_databases(void **state)
{
    (void)state;
    assert_string_equal(fr_sql_session_database(fx.session), "default");
    assert_run("CREATE DATABASE shop", "database shop created\n");
    assert_run("CREATE DATABASE IF NOT EXISTS Shop", "database shop already exists\n");
    assert_run("CREATE DATABASE shop", "error EEXIST: line 1, column 17: database shop already exists");
    assert_run("SHOW DATABASES", "[database name STRING NOT NULL]\ndefault\nshop\nend\n");
    assert_run("USE shop; SHOW TABLES", "database changed to shop\n[table name STRING NOT NULL]\nend\n");
    assert_string_equal(fr_sql_session_database(fx.session), "shop");
    assert_run("USE nowhere", "error ENOTFOUND: line 1, column 5: database 'nowhere' does not exist");
    assert_string_equal(fr_sql_session_database(fx.session), "shop");
    assert_run("CREATE TABLE t (a INT); SHOW TABLES FROM shop; SHOW TABLES IN default",
               "table shop.t created\n[table name STRING NOT NULL]\nt\nend\n"
               "[table name STRING NOT NULL]\nend\n");
    assert_run("SHOW TABLES FROM nowhere",
               "error ENOTFOUND: line 1, column 18: database 'nowhere' does not exist");
    assert_run("DROP DATABASE shop",
               "error ESTATE: line 1, column 15: database shop holds 1 table: drop them first or "
               "use DROP DATABASE ... CASCADE");
    assert_run("DROP DATABASE shop RESTRICT",
               "error ESTATE: line 1, column 15: database shop holds 1 table: drop them first or "
               "use DROP DATABASE ... CASCADE");
    assert_run("DROP DATABASE shop CASCADE", "database shop dropped\n");
    assert_run("DROP DATABASE IF EXISTS shop", "database shop does not exist\n");
    assert_run("DROP DATABASE shop", "error ENOTFOUND: line 1, column 15: database shop does not exist");
    /* The session still names the dropped database: statements say what to do. */
    assert_run("SELECT * FROM t",
               "error ENOTFOUND: line 1, column 15: database 'shop' does not exist; CREATE "
               "DATABASE shop or name the table as db.t");
    assert_run("SHOW TABLES",
               "error ENOTFOUND: line 1, column 1: database 'shop' does not exist; CREATE it or "
               "name one with SHOW TABLES FROM db");
}

static void test_tables(void **state)
{
    (void)state;
    assert_run("CREATE TABLE t (a INT NOT NULL, b STRING COMMENT 'ignored', c DECIMAL(10, 2)) "
               "WITH ('bucket.num' = '4', 'bucket.key' = 'a', 'table.log.ttl' = '7d', "
               "'table.log.arrow.compression.type' = 'lz4_frame')",
               "table default.t created\n");
    assert_run("CREATE TABLE IF NOT EXISTS default.t (x INT)", "table default.t already exists\n");
    assert_run("CREATE TABLE t (x INT)",
               "error EEXIST: line 1, column 14: table default.t already exists");
    assert_run("DESCRIBE t",
               "[name STRING NOT NULL, type STRING NOT NULL, null BOOLEAN NOT NULL, key STRING]\n"
               "a | INT | false | NULL\n"
               "b | STRING | true | NULL\n"
               "c | DECIMAL(10, 2) | true | NULL\n"
               "end\n");
    const char *r = run("SHOW CREATE TABLE t");
    assert_non_null(strstr(r, "[create statement STRING NOT NULL]\nCREATE TABLE default.t (\n"
                              "  a INT NOT NULL,\n  b STRING,\n  c DECIMAL(10, 2)\n) WITH (\n"));
    assert_non_null(strstr(r, "'bucket.num' = '4'"));
    assert_non_null(strstr(r, "'table.log.arrow.compression.type' = 'LZ4_FRAME'"));
    assert_run("DESC default.nope", "error ENOTFOUND: line 1, column 6: table default.nope does not exist");
    assert_run("DROP TABLE t", "table default.t dropped\n");
    assert_run("DROP TABLE t", "error ENOTFOUND: line 1, column 12: table default.t does not exist");
    assert_run("DROP TABLE IF EXISTS t", "table default.t does not exist\n");
    assert_run("CREATE TABLE nodb.t (a INT)",
               "error ENOTFOUND: line 1, column 14: database 'nodb' does not exist");
    assert_run("CREATE TABLE t (a INT, A STRING)",
               "error EINVAL: line 1, column 24: column 'A' is defined twice");
    assert_run("CREATE TABLE t (a INT, PRIMARY KEY (b) NOT ENFORCED)",
               "error EINVAL: line 1, column 37: primary key column 'b' is not a column of the "
               "table");
    assert_run("CREATE TABLE t (a INT, PRIMARY KEY (a, A) NOT ENFORCED)",
               "error EINVAL: line 1, column 40: primary key column 'A' is named twice");
    assert_run("CREATE TABLE t (a INT, dt STRING) PARTITIONED BY (d)",
               "error EINVAL: line 1, column 51: partition key column 'd' is not a column of the "
               "table");
    r = run("CREATE TABLE t (a INT) WITH ('bucket.nums' = '4')");
    assert_true(strncmp(r, "error EINVAL: line 1, column 14: ", 33) == 0);
    assert_non_null(strstr(r, "bucket.nums"));
    assert_run("SHOW TABLES", "[table name STRING NOT NULL]\nend\n");
    /* Quoted names the catalog refuses are reported with the position. */
    r = run("CREATE TABLE `a-b` (a INT)");
    assert_true(strncmp(r, "error EINVAL: line 1, column 14: ", 33) == 0);
}

/* ---- INSERT and SELECT ----------------------------------------------------------------- */

static const char *all_types_table =
    "CREATE TABLE every (bo BOOLEAN, ti TINYINT, si SMALLINT, i INT NOT NULL, bi BIGINT,\n"
    "  f FLOAT, d DOUBLE, de DECIMAL(10, 2), ch CHAR(3), vc VARCHAR(5), s STRING, byt BYTES,\n"
    "  da DATE, tm TIME(3), ts TIMESTAMP(3), tz TIMESTAMP_LTZ(6))";

static void test_every_type(void **state)
{
    (void)state;
    assert_run(all_types_table, "table default.every created\n");
    assert_run("INSERT INTO every VALUES\n"
               "(TRUE, -128, 32767, 1, 9223372036854775807, 1.5, 2.5e10, 12.5, 'abc', 'hé',\n"
               " 'it''s', X'0A1B', DATE '2026-01-01', TIME '10:00:00.123',\n"
               " TIMESTAMP '2026-01-01 10:00:00.123', TIMESTAMP_LTZ '2026-01-01 10:00:00.123456'),\n"
               "(NULL, NULL, NULL, 2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,"
               " NULL, NULL),\n"
               "(false, 7, -7, -3, 2147483648, -0.25, 1, -0.01, 'x', '', '', X'', '1970-01-01',"
               " '23:59:59', '2026-03-01 00:00:00', '2026-03-01 00:00:00Z')",
               "3 rows inserted\n");
    assert_run("SELECT * FROM every",
               "[bo BOOLEAN, ti TINYINT, si SMALLINT, i INT NOT NULL, bi BIGINT, f FLOAT, "
               "d DOUBLE, de DECIMAL(10, 2), ch CHAR(3), vc VARCHAR(5), s STRING, byt BYTES, "
               "da DATE, tm TIME(3), ts TIMESTAMP(3), tz TIMESTAMP_LTZ(6)]\n"
               "true | -128 | 32767 | 1 | 9223372036854775807 | 1.5 | 2.5E10 | 12.50 | abc | "
               "hé | it's | \\x0a1b | 2026-01-01 | 10:00:00.123 | 2026-01-01 10:00:00.123 | "
               "2026-01-01 10:00:00.123456Z\n"
               "NULL | NULL | NULL | 2 | NULL | NULL | NULL | NULL | NULL | NULL | NULL | NULL | "
               "NULL | NULL | NULL | NULL\n"
               "false | 7 | -7 | -3 | 2147483648 | -0.25 | 1.0 | -0.01 | x | "
               " |  | \\x | 1970-01-01 | 23:59:59.000 | 2026-03-01 00:00:00.000 | "
               "2026-03-01 00:00:00.000000Z\n"
               "end\n");
    /* Named columns; the others get NULL. */
    assert_run("INSERT INTO every (i, s) VALUES (10, 'only')", "1 row inserted\n");
    assert_run("SELECT i, s, bo FROM every WHERE i = 10",
               "[i INT NOT NULL, s STRING, bo BOOLEAN]\n10 | only | NULL\nend\n");
}

static void test_insert_errors(void **state)
{
    (void)state;
    assert_run("CREATE TABLE t (a TINYINT, b INT NOT NULL, c VARCHAR(3), d DATE, e DECIMAL(4, 2))",
               "table default.t created\n");
    assert_run("INSERT INTO t VALUES (1, 1, 'a', NULL, 1),\n  (300, 2, 'b', NULL, 1)",
               "error ERANGE: line 2, column 4: value 300 is out of range for TINYINT column 'a'");
    assert_run("INSERT INTO t VALUES (1, NULL, 'a', NULL, 1)",
               "error EINVAL: line 1, column 26: NULL into NOT NULL column 'b'");
    assert_run("INSERT INTO t (a) VALUES (1)",
               "error EINVAL: line 1, column 13: column 'b' is NOT NULL and gets no value; add it "
               "to the column list");
    assert_run("INSERT INTO t VALUES (1, 2, 'abcd', NULL, 1)",
               "error ERANGE: line 1, column 29: value 'abcd' is too long for VARCHAR(3) column 'c'");
    assert_run("INSERT INTO t VALUES (1, 2, 3, NULL, 1)",
               "error ETYPE: line 1, column 29: cannot insert a INT value into VARCHAR(3) column "
               "'c' (use CAST)");
    assert_run("INSERT INTO t VALUES (TRUE, 2, 'a', NULL, 1)",
               "error ETYPE: line 1, column 23: cannot insert a BOOLEAN value into TINYINT column "
               "'a' (use CAST)");
    assert_run("INSERT INTO t VALUES (1, 2, 'a', 'someday', 1)",
               "error EINVAL: line 1, column 34: value 'someday' cannot be converted to DATE for "
               "column 'd': 'someday' is not a valid DATE: expected yyyy-mm-dd");
    assert_run("INSERT INTO t VALUES (1, 2, 'a', NULL, 123.456)",
               "error ERANGE: line 1, column 40: value 123.456 is out of range for DECIMAL(4, 2) "
               "column 'e'");
    assert_run("INSERT INTO t VALUES (1, 2)",
               "error EINVAL: line 1, column 22: row 1 has 2 values but 5 are expected");
    assert_run("CREATE TABLE fl (f FLOAT)", "table default.fl created\n");
    assert_run("INSERT INTO fl VALUES (1e40)",
               "error ERANGE: line 1, column 24: value 1.0E40 is out of range for FLOAT column 'f'");
    assert_run("INSERT INTO fl VALUES ('-1e39')",
               "error ERANGE: line 1, column 24: value '-1e39' is out of range for FLOAT column 'f'");
    assert_run("INSERT INTO fl VALUES (CAST('Infinity' AS DOUBLE)), (3.4e38), ('-Infinity')",
               "3 rows inserted\n");
    assert_run("SELECT * FROM fl", "[f FLOAT]\nInfinity\n3.4E38\n-Infinity\nend\n");
    assert_run("INSERT INTO t (a, b) VALUES (1, 2), (3)",
               "error EINVAL: line 1, column 37: row 2 has 1 value but 2 are expected");
    assert_run("INSERT INTO t (a, x) VALUES (1, 2)",
               "error ENOTFOUND: line 1, column 19: unknown column 'x' in table default.t");
    assert_run("INSERT INTO t (b, B) VALUES (1, 2)",
               "error EINVAL: line 1, column 19: column 'B' is named twice");
    assert_run("INSERT INTO nope VALUES (1)",
               "error ENOTFOUND: line 1, column 13: table default.nope does not exist");
    assert_run("INSERT INTO t (b) VALUES (1 / 0)",
               "error EINVAL: line 1, column 29: division by zero");
    /* None of the failed statements wrote anything. */
    assert_run("SELECT * FROM t", "[a TINYINT, b INT NOT NULL, c VARCHAR(3), d DATE, "
                                  "e DECIMAL(4, 2)]\nend\n");
    /* Expressions and casts as values. */
    assert_run("INSERT INTO t VALUES (CAST('12' AS TINYINT), 2 * 21, 'x' || 'y', "
               "DATE '2026-01-01', -1.5 + 1)",
               "1 row inserted\n");
    /* More digits after the point than the column keeps are rounded, as CAST does. */
    assert_run("INSERT INTO t (b, e) VALUES (1, 12.345), (2, '-0.005')", "2 rows inserted\n");
    assert_run("SELECT * FROM t", "[a TINYINT, b INT NOT NULL, c VARCHAR(3), d DATE, "
                                  "e DECIMAL(4, 2)]\n12 | 42 | xy | 2026-01-01 | -0.50\n"
                                  "NULL | 1 | NULL | NULL | 12.35\nNULL | 2 | NULL | NULL | -0.01\n"
                                  "end\n");
}

static void setup_orders(int buckets, int rows)
{
    char sql[512];
    snprintf(sql, sizeof sql,
             "CREATE TABLE orders (id BIGINT NOT NULL, name STRING, amount DECIMAL(10, 2), "
             "qty INT, ts TIMESTAMP(3)) WITH ('bucket.num' = '%d'%s)",
             buckets, buckets > 1 ? ", 'bucket.key' = 'id'" : "");
    assert_run(sql, "table default.orders created\n");
    /* Several INSERTs, so the log holds several batches. */
    for (int i = 0; i < rows; i += 10) {
        fr_buf b;
        fr_buf_init(&b);
        fr_buf_printf(&b, NULL, "INSERT INTO orders VALUES ");
        for (int k = i; k < i + 10 && k < rows; k++)
            fr_buf_printf(&b, NULL, "%s(%d, %s, %d.%02d, %d, TIMESTAMP '2026-01-01 00:00:%02d')",
                          k > i ? ", " : "", k, k % 7 == 0 ? "NULL" : k % 2 ? "'odd'" : "'even'",
                          k, k % 100, k % 5, k % 60);
        fr_buf_append(&b, "", 1, NULL);
        char want[64];
        int n = rows - i < 10 ? rows - i : 10;
        snprintf(want, sizeof want, "%d row%s inserted\n", n, n == 1 ? "" : "s");
        assert_run((char *)b.data, want);
        fr_buf_free(&b);
    }
}

static void test_where(void **state)
{
    (void)state;
    setup_orders(1, 40);
    assert_run("SELECT id FROM orders WHERE id < 3",
               "[id BIGINT NOT NULL]\n0\n1\n2\nend\n");
    assert_run("SELECT id, name FROM orders WHERE name IS NULL AND id > 0",
               "[id BIGINT NOT NULL, name STRING]\n7 | NULL\n14 | NULL\n21 | NULL\n28 | NULL\n"
               "35 | NULL\nend\n");
    assert_run("SELECT id FROM orders WHERE id IN (5, 15, 99) OR id BETWEEN 38 AND 100",
               "[id BIGINT NOT NULL]\n5\n15\n38\n39\nend\n");
    assert_run("SELECT id FROM orders WHERE NOT id NOT BETWEEN 2 AND 3",
               "[id BIGINT NOT NULL]\n2\n3\nend\n");
    assert_run("SELECT id FROM orders WHERE name LIKE 'ev%' AND id >= 30 AND qty <> 0",
               "[id BIGINT NOT NULL]\n32\n34\n36\n38\nend\n");
    assert_run("SELECT id FROM orders WHERE name NOT LIKE '%d' AND id < 10",
               "[id BIGINT NOT NULL]\n2\n4\n6\n8\nend\n");
    assert_run("SELECT id FROM orders WHERE amount > 35.5",
               "[id BIGINT NOT NULL]\n36\n37\n38\n39\nend\n");
    assert_run("SELECT id FROM orders WHERE ts = TIMESTAMP '2026-01-01 00:00:04'",
               "[id BIGINT NOT NULL]\n4\nend\n");
    assert_run("SELECT id FROM orders WHERE ts > '2026-01-01 00:00:37'",
               "[id BIGINT NOT NULL]\n38\n39\nend\n");
    assert_run("SELECT id FROM orders WHERE id % 13 = 0 AND id != 0",
               "[id BIGINT NOT NULL]\n13\n26\n39\nend\n");
    assert_run("SELECT id FROM orders WHERE id = -1", "[id BIGINT NOT NULL]\nend\n");
    assert_run("SELECT id FROM orders WHERE qty IS NOT NULL AND id * 2 + 1 = 9 OR CAST(id AS STRING) || '' = '12'",
               "[id BIGINT NOT NULL]\n4\n12\nend\n");
    /* Errors in WHERE. */
    assert_run("SELECT id FROM orders WHERE nope = 1",
               "error ENOTFOUND: line 1, column 29: unknown column 'nope'");
    assert_run("SELECT id FROM orders WHERE id + 1",
               "error ETYPE: line 1, column 29: WHERE needs a BOOLEAN condition, not BIGINT");
    const char *r = run("SELECT id FROM orders WHERE name = 1");
    assert_true(strncmp(r, "error ETYPE: line 1, column 34: ", 32) == 0);
}

static void test_where_buckets(void **state)
{
    (void)state;
    setup_orders(4, 40);
    /* Rows come bucket by bucket, so compare the set through a count. */
    printer p = {0};
    fr_buf_init(&p.out);
    const char *r = run_with(&p, "SELECT id FROM orders WHERE qty = 3");
    int lines = 0;
    for (const char *c = r; *c; c++) lines += *c == '\n';
    assert_int_equal(lines, 1 + 8 + 1);
    for (int k = 3; k < 40; k += 5) {
        char want[16];
        snprintf(want, sizeof want, "\n%d\n", k);
        assert_non_null(strstr(r, want));
    }
    fr_buf_free(&p.out);
}

static void test_limit(void **state)
{
    (void)state;
    setup_orders(1, 40);
    assert_run("SELECT id FROM orders LIMIT 0", "[id BIGINT NOT NULL]\nend\n");
    assert_run("SELECT id FROM orders LIMIT 3", "[id BIGINT NOT NULL]\n0\n1\n2\nend\n");
    /* The limit crosses batches (10 rows each). */
    printer p = {0};
    fr_buf_init(&p.out);
    const char *r = run_with(&p, "SELECT id FROM orders WHERE id >= 5 LIMIT 12");
    assert_true(strncmp(r, "[id BIGINT NOT NULL]\n5\n6\n", 25) == 0);
    assert_non_null(strstr(r, "\n16\nend\n"));
    assert_null(strstr(r, "\n17\n"));
    assert_int_equal(p.batches, 2);
    fr_buf_free(&p.out);
    assert_run("SELECT id FROM orders WHERE id > 37 LIMIT 100", "[id BIGINT NOT NULL]\n38\n39\nend\n");
    assert_run("SELECT id + 1 AS n FROM orders LIMIT 2", "[n BIGINT NOT NULL]\n1\n2\nend\n");
}

static void test_select_expressions(void **state)
{
    (void)state;
    setup_orders(1, 3);
    assert_run("SELECT name, id, amount * 2 AS twice, id + qty, `ID` FROM orders",
               "[name STRING, id BIGINT NOT NULL, twice DECIMAL(21, 2), id + qty BIGINT, "
               "id$1 BIGINT NOT NULL]\n"
               "NULL | 0 | 0.00 | 0 | 0\n"
               "odd | 1 | 2.02 | 2 | 1\n"
               "even | 2 | 4.04 | 4 | 2\n"
               "end\n");
    assert_run("SELECT qty AS q, -id, CAST(id AS STRING) || '!' s, amount FROM orders WHERE id = 2",
               "[q INT, -id BIGINT NOT NULL, s STRING NOT NULL, amount DECIMAL(10, 2)]\n"
               "2 | -2 | 2! | 2.02\nend\n");
    assert_run("SELECT *, id FROM orders WHERE id = 1",
               "[id BIGINT NOT NULL, name STRING, amount DECIMAL(10, 2), qty INT, ts TIMESTAMP(3), "
               "id$1 BIGINT NOT NULL]\n1 | odd | 1.01 | 1 | 2026-01-01 00:00:01.000 | 1\nend\n");
    assert_run("SELECT 1 AS one FROM orders", "[one INT NOT NULL]\n1\n1\n1\nend\n");
    assert_run("SELECT id IS NULL, name IS NULL FROM orders LIMIT 1",
               "[id IS NULL BOOLEAN NOT NULL, name IS NULL BOOLEAN NOT NULL]\nfalse | true\nend\n");
    assert_run("SELECT nope FROM orders", "error ENOTFOUND: line 1, column 8: unknown column 'nope'");
    assert_run("SELECT id FROM nope", "error ENOTFOUND: line 1, column 16: table default.nope does not exist");
    assert_run("SELECT id / 0 FROM orders",
               "[id / 0 BIGINT NOT NULL]\nerror EINVAL: line 1, column 11: division by zero");
}

static void test_select_constants(void **state)
{
    (void)state;
    assert_run("SELECT 1 + 2, 'a' || 'b' AS ab, 12.50, 1.5e3, NULL IS NULL, X'0A', "
               "DATE '2026-01-01' + 1",
               "[1 + 2 BIGINT NOT NULL, ab STRING NOT NULL, 12.50 DECIMAL(4, 2) NOT NULL, "
               "1.5e3 DOUBLE NOT NULL, NULL IS NULL BOOLEAN NOT NULL, X'0A' BYTES NOT NULL, "
               "DATE '2026-01-01' + 1 DATE NOT NULL]\n"
               "3 | ab | 12.50 | 1500.0 | true | \\x0a | 2026-01-02\nend\n");
    assert_run("SELECT 1 LIMIT 0", "[1 INT NOT NULL]\nend\n");
    assert_run("SELECT x", "error ENOTFOUND: line 1, column 8: unknown column 'x'");
    assert_run("SELECT 1, 1", "[1 INT NOT NULL, 1$1 INT NOT NULL]\n1 | 1\nend\n");
    /* A column name never holds a control character: one in a string becomes '?', one in
     * an alias is an error at the statement. */
    assert_run("SELECT 'a\nb', 'c\x01'", "['a?b' STRING NOT NULL, 'c?' STRING NOT NULL]\n"
               "a\nb | c\x01\nend\n");
    assert_run("SELECT 1 AS `a\tb`",
               "error EINVAL: line 1, column 8: column 1: name contains the control character "
               "0x09");
}

/* ---- CASE and scalar functions ---------------------------------------------------------- */

static void test_case_and_functions(void **state)
{
    (void)state;
    setup_orders(1, 40);
    assert_run("SELECT id, CASE WHEN qty = 0 THEN 'none' WHEN qty < 3 THEN 'few' ELSE 'many' END AS q, "
               "COALESCE(name, '?') AS n FROM orders WHERE id < 8",
               "[id BIGINT NOT NULL, q STRING NOT NULL, n STRING NOT NULL]\n"
               "0 | none | ?\n1 | few | odd\n2 | few | even\n3 | many | odd\n4 | many | even\n"
               "5 | none | odd\n6 | few | even\n7 | few | ?\nend\n");
    /* A branch runs only where it is chosen: no division by zero where qty = 0. */
    assert_run("SELECT id, CASE WHEN qty <> 0 THEN id / qty ELSE -1 END AS r FROM orders WHERE id < 6",
               "[id BIGINT NOT NULL, r BIGINT]\n0 | -1\n1 | 1\n2 | 1\n3 | 1\n4 | 1\n5 | -1\nend\n");
    assert_run("SELECT id, CASE qty WHEN 0 THEN 'zero' END, NULLIF(qty, 1), ABS(qty - 2) FROM orders "
               "WHERE id BETWEEN 4 AND 6",
               "[id BIGINT NOT NULL, CASE qty WHEN 0 THEN 'zero' END STRING, NULLIF(qty, 1) INT, "
               "ABS(qty - 2) BIGINT]\n4 | NULL | 4 | 2\n5 | zero | 0 | 2\n6 | NULL | NULL | 1\nend\n");
    assert_run("SELECT UPPER(name), lower('AbC'), CHAR_LENGTH(name) AS len FROM orders WHERE id IN (0, 1, 2)",
               "[UPPER(name) STRING, lower('AbC') STRING NOT NULL, len INT]\n"
               "NULL | abc | NULL\nODD | abc | 3\nEVEN | abc | 4\nend\n");
    /* Aggregates over CASE, grouped; the group key a CASE or a function, matched as written. */
    assert_run("SELECT name, SUM(CASE WHEN qty >= 3 THEN 1 ELSE 0 END) AS big, COUNT(*) FROM orders "
               "GROUP BY name ORDER BY name",
               "[name STRING, big BIGINT, COUNT(*) BIGINT NOT NULL]\n"
               "even | 6 | 17\nodd | 8 | 17\nNULL | 2 | 6\nend\n");
    assert_run("SELECT CASE WHEN qty < 2 THEN 'low' ELSE 'high' END AS lvl, COUNT(*) FROM orders "
               "GROUP BY CASE WHEN qty < 2 THEN 'low' ELSE 'high' END ORDER BY lvl",
               "[lvl STRING NOT NULL, COUNT(*) BIGINT NOT NULL]\nhigh | 24\nlow | 16\nend\n");
    assert_run("SELECT ABS(qty - 2) AS dist, MAX(id) FROM orders GROUP BY ABS(qty - 2) ORDER BY 1",
               "[dist BIGINT, MAX(id) BIGINT]\n0 | 37\n1 | 38\n2 | 39\nend\n");
    assert_run("SELECT CASE WHEN qty < 3 THEN 'low' ELSE 'high' END FROM orders "
               "GROUP BY CASE WHEN qty < 2 THEN 'low' ELSE 'high' END",
               "error EINVAL: line 1, column 18: column 'qty' must be in GROUP BY or inside an "
               "aggregate function");
    assert_run("SELECT LOWER(name) FROM orders GROUP BY UPPER(name)",
               "error EINVAL: line 1, column 14: column 'name' must be in GROUP BY or inside an "
               "aggregate function");
    /* In ORDER BY. */
    assert_run("SELECT id, name FROM orders WHERE id < 8 ORDER BY COALESCE(name, 'zzz'), id DESC",
               "[id BIGINT NOT NULL, name STRING]\n6 | even\n4 | even\n2 | even\n5 | odd\n"
               "3 | odd\n1 | odd\n7 | NULL\n0 | NULL\nend\n");
    /* In WHERE, pushed down to the log. */
    assert_run("SELECT id FROM orders WHERE COALESCE(name, 'none') = 'none'",
               "[id BIGINT NOT NULL]\n0\n7\n14\n21\n28\n35\nend\n");
    assert_run("SELECT id FROM orders WHERE id >= 30 AND COALESCE(name, 'x') <> 'odd'",
               "[id BIGINT NOT NULL]\n30\n32\n34\n35\n36\n38\nend\n");
    assert_run("SELECT id FROM orders WHERE CASE WHEN qty = 0 THEN id > 30 ELSE FALSE END",
               "[id BIGINT NOT NULL]\n35\nend\n");
    /* Errors say where and what. */
    assert_run("SELECT COALESCE(id, name) FROM orders",
               "error ETYPE: line 1, column 21: COALESCE arguments have incompatible types BIGINT "
               "and STRING (CAST one of them)");
    assert_run("SELECT ABS(name) FROM orders", "error ETYPE: line 1, column 8: ABS needs a number, not STRING");
    assert_run("SELECT id FROM orders WHERE CASE WHEN qty THEN TRUE END",
               "error ETYPE: line 1, column 39: WHEN needs a BOOLEAN condition, not INT");
    assert_run("SELECT NULLIF(id) FROM orders", "error ESYNTAX: line 1, column 8: NULLIF needs 2 arguments, not 1");
    assert_run("SELECT sqrt(id) FROM orders", "error EUNSUPPORTED: line 1, column 8: unknown function 'sqrt'");
    /* Constants, and names that are also functions. */
    assert_run("SELECT COALESCE(NULL, 2), NULLIF(1, 1), CHARACTER_LENGTH('h\xc3\xa9llo') AS n, "
               "CASE 1 WHEN 1 THEN 'one' END AS c",
               "[COALESCE(NULL, 2) INT NOT NULL, NULLIF(1, 1) INT, n INT NOT NULL, c STRING]\n"
               "2 | NULL | 5 | one\nend\n");
    assert_run("CREATE TABLE fn (lower INT, abs STRING); INSERT INTO fn VALUES (-1, 'X');"
               "SELECT lower, abs, LOWER(abs), ABS(lower) FROM fn WHERE abs = 'X'",
               "table default.fn created\n1 row inserted\n"
               "[lower INT, abs STRING, LOWER(abs) STRING, ABS(lower) BIGINT]\n-1 | X | x | 1\nend\n");
}

/* A WHERE with CASE or functions returns, through the log's pruning, exactly the rows the
 * same predicate selects when evaluated as a column over every row. */
static void expect_where_as_evaluated(const char *pred)
{
    char sql[512];
    snprintf(sql, sizeof sql, "SELECT id FROM orders WHERE %s", pred);
    char filtered[1 << 12];
    snprintf(filtered, sizeof filtered, "%s", run(sql));
    snprintf(sql, sizeof sql, "SELECT id, (%s) FROM orders", pred);
    const char *all = run(sql);
    if (strstr(all, "error") || strstr(filtered, "error")) fail_msg("%s: %s%s", pred, all, filtered);
    fr_buf want;
    fr_buf_init(&want);
    fr_buf_printf(&want, NULL, "[id BIGINT NOT NULL]\n");
    for (const char *line = strchr(all, '\n') + 1; *line && strncmp(line, "end", 3) != 0;
         line = strchr(line, '\n') + 1) {
        long id = strtol(line, NULL, 10);
        if (strncmp(strchr(line, '|') + 2, "true", 4) == 0) fr_buf_printf(&want, NULL, "%ld\n", id);
    }
    fr_buf_printf(&want, NULL, "end\n");
    if (strlen(filtered) != want.len || memcmp(filtered, want.data, want.len) != 0)
        fail_msg("WHERE %s:\n%s\nbut evaluated:\n%.*s", pred, filtered, (int)want.len, (char *)want.data);
    fr_buf_free(&want);
}

static void test_where_functions_pruning(void **state)
{
    (void)state;
    setup_orders(1, 40); /* four batches of ten rows, with tight id ranges */
    static const char *const preds[] = {
        "COALESCE(name, 'none') = 'none'",
        "CASE WHEN id > 100 THEN TRUE ELSE id < 5 END",
        "NOT (COALESCE(qty, 0) > 1)",
        "COALESCE(NULLIF(id, 3), 0) < 5",
        "ABS(id - 20) < 3",
        "CASE id WHEN 15 THEN TRUE END OR id > 38",
        "id > 35 AND CASE WHEN name IS NULL THEN TRUE ELSE FALSE END",
        "NOT CASE WHEN id < 30 THEN TRUE END",
        "CASE WHEN id < 10 THEN NULL ELSE id > 33 END",
        "COALESCE(CASE WHEN qty > 2 THEN id END, 100) < 12",
        "UPPER(name) = 'ODD' AND id BETWEEN 10 AND 19",
        "CHAR_LENGTH(COALESCE(name, '')) = 0 OR id = 39",
    };
    for (size_t i = 0; i < sizeof preds / sizeof preds[0]; i++) expect_where_as_evaluated(preds[i]);
}

/* ---- GROUP BY, aggregates, HAVING, DISTINCT and ORDER BY --------------------------------- */

static const char *group_rows =
    "CREATE TABLE g (k STRING, v INT, d DOUBLE, m DECIMAL(10, 2)) WITH ('bucket.num' = '3');"
    "INSERT INTO g VALUES ('a', 1, 1.5, 1.00), ('b', 2, NULL, 2.50), ('a', 3, 2.5, NULL),"
    " (NULL, 4, -1.0, 0.10), ('b', NULL, 0.5, 2.50)";

static void test_group_by(void **state)
{
    (void)state;
    assert_run(group_rows, "table default.g created\n5 rows inserted\n");
    assert_run("SELECT k, COUNT(*), COUNT(v), SUM(v), MIN(d), MAX(d), AVG(m), "
               "COUNT(DISTINCT m) FROM g GROUP BY k ORDER BY k",
               "[k STRING, COUNT(*) BIGINT NOT NULL, COUNT(v) BIGINT NOT NULL, SUM(v) BIGINT, "
               "MIN(d) DOUBLE, MAX(d) DOUBLE, AVG(m) DECIMAL(38, 6), COUNT(DISTINCT m) BIGINT "
               "NOT NULL]\n"
               "a | 2 | 2 | 4 | 1.5 | 2.5 | 1.000000 | 1\n"
               "b | 2 | 1 | 2 | 0.5 | 0.5 | 2.500000 | 1\n"
               "NULL | 1 | 1 | 4 | -1.0 | -1.0 | 0.100000 | 1\n"
               "end\n");
    /* Without GROUP BY: one group, also over no rows. */
    assert_run("SELECT COUNT(*) AS n, SUM(m), AVG(v), MIN(k), MAX(k) FROM g",
               "[n BIGINT NOT NULL, SUM(m) DECIMAL(38, 2), AVG(v) DOUBLE, MIN(k) STRING, "
               "MAX(k) STRING]\n5 | 6.10 | 2.5 | a | b\nend\n");
    assert_run("SELECT COUNT(*), SUM(v), MAX(k) FROM g WHERE v > 100",
               "[COUNT(*) BIGINT NOT NULL, SUM(v) BIGINT, MAX(k) STRING]\n0 | NULL | NULL\nend\n");
    /* Expressions over groups and aggregates; GROUP BY an expression. */
    assert_run("SELECT v % 2 AS odd, SUM(v) * 10 + COUNT(*) FROM g WHERE v IS NOT NULL "
               "GROUP BY v % 2 ORDER BY odd",
               "[odd BIGINT, SUM(v) * 10 + COUNT(*) BIGINT]\n0 | 62\n1 | 42\nend\n");
    assert_run("SELECT k, SUM(DISTINCT m), COUNT(DISTINCT m) FROM g GROUP BY k HAVING "
               "COUNT(*) > 1 ORDER BY SUM(v) DESC",
               "[k STRING, SUM(DISTINCT m) DECIMAL(38, 2), COUNT(DISTINCT m) BIGINT NOT NULL]\n"
               "a | 1.00 | 1\nb | 2.50 | 1\nend\n");
    assert_run("SELECT COUNT(*) FROM g GROUP BY k HAVING MAX(v) >= 3 ORDER BY 1",
               "[COUNT(*) BIGINT NOT NULL]\n1\n2\nend\n");
    /* A script without FROM aggregates its one row. */
    assert_run("SELECT COUNT(*), SUM(2)", "[COUNT(*) BIGINT NOT NULL, SUM(2) BIGINT]\n1 | 2\nend\n");
    /* HAVING without GROUP BY or any aggregate: one group, kept or not (found by
     * fuzz_sql_select: the group had no column to carry its row). */
    assert_run("SELECT 0, 'x' FROM g HAVING 1 < 2", "[0 INT NOT NULL, 'x' STRING NOT NULL]\n0 | x\nend\n");
    assert_run("SELECT 0 FROM g HAVING 1 > 2", "[0 INT NOT NULL]\nend\n");
    assert_run("SELECT 0, 5 HAVING 1 < 2 ORDER BY 1", "[0 INT NOT NULL, 5 INT NOT NULL]\n0 | 5\nend\n");
    assert_run("SELECT 1 FROM g WHERE v > 100 HAVING TRUE", "[1 INT NOT NULL]\n1\nend\n");
}

static void test_order_by(void **state)
{
    (void)state;
    assert_run(group_rows, "table default.g created\n5 rows inserted\n");
    assert_run("SELECT k, v FROM g ORDER BY v DESC",
               "[k STRING, v INT]\nb | NULL\nNULL | 4\na | 3\nb | 2\na | 1\nend\n");
    assert_run("SELECT k, v FROM g ORDER BY v NULLS FIRST LIMIT 2",
               "[k STRING, v INT]\nb | NULL\na | 1\nend\n");
    assert_run("SELECT v FROM g ORDER BY k DESC NULLS LAST, d",
               "[v INT]\nNULL\n2\n1\n3\n4\nend\n");
    /* By alias, by position, by a column not selected, by an expression. */
    assert_run("SELECT v * -1 AS neg FROM g WHERE v IS NOT NULL ORDER BY neg",
               "[neg BIGINT]\n-4\n-3\n-2\n-1\nend\n");
    assert_run("SELECT k, v FROM g WHERE v IS NOT NULL ORDER BY 2 DESC LIMIT 1",
               "[k STRING, v INT]\nNULL | 4\nend\n");
    assert_run("SELECT k FROM g WHERE d IS NOT NULL ORDER BY d", "[k STRING]\nNULL\nb\na\na\nend\n");
    assert_run("SELECT *, v AS w FROM g WHERE v < 3 ORDER BY w DESC",
               "[k STRING, v INT, d DOUBLE, m DECIMAL(10, 2), w INT]\n"
               "b | 2 | NULL | 2.50 | 2\na | 1 | 1.5 | 1.00 | 1\nend\n");
    assert_run("SELECT v FROM g ORDER BY -v LIMIT 0", "[v INT]\nend\n");
}

static void test_distinct(void **state)
{
    (void)state;
    assert_run(group_rows, "table default.g created\n5 rows inserted\n");
    assert_run("SELECT DISTINCT k FROM g ORDER BY k DESC",
               "[k STRING]\nNULL\nb\na\nend\n");
    assert_run("SELECT DISTINCT k, m FROM g ORDER BY 1, m",
               "[k STRING, m DECIMAL(10, 2)]\na | 1.00\na | NULL\nb | 2.50\nNULL | 0.10\nend\n");
    assert_run("SELECT DISTINCT m FROM g LIMIT 2", "[m DECIMAL(10, 2)]\n1.00\n2.50\nend\n");
}

static void test_aggregate_errors(void **state)
{
    (void)state;
    assert_run(group_rows, "table default.g created\n5 rows inserted\n");
    assert_run("SELECT d FROM g GROUP BY k",
               "error EINVAL: line 1, column 8: column 'd' must be in GROUP BY or inside an "
               "aggregate function");
    assert_run("SELECT nope FROM g GROUP BY k",
               "error ENOTFOUND: line 1, column 8: unknown column 'nope'");
    assert_run("SELECT v FROM g GROUP BY v + 1",
               "error EINVAL: line 1, column 8: column 'v' must be in GROUP BY or inside an "
               "aggregate function");
    assert_run("SELECT SUM(k) FROM g", "error ETYPE: line 1, column 8: SUM needs numbers, not STRING");
    assert_run("SELECT AVG(*) FROM g",
               "error ESYNTAX: line 1, column 12: AVG(*) is not allowed: only COUNT(*) counts rows");
    assert_run("SELECT * FROM g GROUP BY k",
               "error ESYNTAX: line 1, column 8: SELECT * cannot be used with GROUP BY or "
               "aggregate functions: name the columns");
    assert_run("SELECT k FROM g WHERE COUNT(*) > 1",
               "error ESYNTAX: line 1, column 23: aggregate function COUNT is not allowed here "
               "(only in a SELECT list, HAVING and ORDER BY, and not inside another aggregate)");
    assert_run("SELECT COUNT(SUM(v)) FROM g",
               "error ESYNTAX: line 1, column 8: aggregate functions cannot be nested");
    assert_run("SELECT k FROM g GROUP BY COUNT(*)",
               "error ESYNTAX: line 1, column 26: GROUP BY cannot hold an aggregate function");
    assert_run("SELECT k FROM g GROUP BY k HAVING k",
               "error ETYPE: line 1, column 35: HAVING needs a BOOLEAN condition");
    assert_run("SELECT k FROM g ORDER BY 3",
               "error EINVAL: line 1, column 26: ORDER BY position 3 is not in the result (1 to 1)");
    assert_run("SELECT k FROM g ORDER BY SUM(v)",
               "error ESYNTAX: line 1, column 26: ORDER BY holds an aggregate function, but the "
               "SELECT does not aggregate");
    assert_run("SELECT DISTINCT k FROM g ORDER BY v",
               "error EINVAL: line 1, column 35: with SELECT DISTINCT, ORDER BY takes columns of "
               "the result: 'v' is not one");
    assert_run("SELECT DISTINCT k, COUNT(*) FROM g GROUP BY k",
               "error EUNSUPPORTED: line 1, column 1: SELECT DISTINCT with GROUP BY or aggregate "
               "functions is not supported: group by the items instead");
    assert_run("SELECT k FROM g ORDER BY k NULLS",
               "error ESYNTAX: line 1, column 33: expected FIRST or LAST after NULLS, found end of "
               "input");
    /* A sum past BIGINT says what to do. */
    assert_run("CREATE TABLE big (x BIGINT); INSERT INTO big VALUES (9223372036854775807), (1)",
               "table default.big created\n2 rows inserted\n");
    assert_run("SELECT SUM(x) FROM big",
               "error ERANGE: line 1, column 8: SUM: the sum of a group does not fit BIGINT (cast "
               "the argument to DECIMAL(38, 0))");
    assert_run("SELECT SUM(CAST(x AS DECIMAL(38, 0))), AVG(x) FROM big",
               "[SUM(CAST(x AS DECIMAL(38, 0))) DECIMAL(38, 0), AVG(x) DOUBLE]\n"
               "9223372036854775808 | 4.611686018427388E18\nend\n");
}

static void test_insert_select(void **state)
{
    (void)state;
    assert_run(group_rows, "table default.g created\n5 rows inserted\n");
    assert_run("CREATE TABLE totals (k STRING NOT NULL, n BIGINT, s DECIMAL(10, 2), "
               "PRIMARY KEY (k) NOT ENFORCED)", "table default.totals created\n");
    assert_run("INSERT INTO totals SELECT k, COUNT(*), SUM(m) FROM g WHERE k IS NOT NULL "
               "GROUP BY k", "2 rows upserted\n");
    assert_run("INSERT INTO totals (k, n) SELECT 'c', 7", "1 row upserted\n");
    assert_run("SELECT * FROM totals ORDER BY k",
               "[k STRING NOT NULL, n BIGINT, s DECIMAL(10, 2)]\n"
               "a | 2 | 1.00\nb | 2 | 5.00\nc | 7 | NULL\nend\n");
    /* Into the table read: the SELECT sees the rows before the INSERT only. */
    assert_run("INSERT INTO g (k, v) SELECT k || '2', v * 10 FROM g WHERE v IS NOT NULL",
               "4 rows inserted\n");
    assert_run("SELECT COUNT(*), SUM(v) FROM g", "[COUNT(*) BIGINT NOT NULL, SUM(v) BIGINT]\n"
               "9 | 110\nend\n");
    /* Strings convert as in VALUES; the values are checked as they are converted. */
    assert_run("CREATE TABLE small (x TINYINT, y DATE)", "table default.small created\n");
    assert_run("INSERT INTO small SELECT v, '2026-01-0' || CAST(v AS STRING) FROM g WHERE v < 5",
               "4 rows inserted\n");
    assert_run("SELECT * FROM small ORDER BY y DESC LIMIT 1",
               "[x TINYINT, y DATE]\n4 | 2026-01-04\nend\n");
    assert_run("INSERT INTO small SELECT v * 100, NULL FROM g WHERE v = 3",
               "error ERANGE: line 1, column 19: value 300 is out of range for TINYINT "
               "column 'x'");
    assert_run("SELECT COUNT(*) FROM small", "[COUNT(*) BIGINT NOT NULL]\n4\nend\n");
    assert_run("INSERT INTO small SELECT v FROM g",
               "error EINVAL: line 1, column 19: the SELECT returns 1 column but 2 are expected");
    assert_run("INSERT INTO small (y) SELECT d FROM g",
               "error ETYPE: line 1, column 23: cannot insert the DOUBLE column 'd' of the "
               "SELECT into DATE column 'y' (use CAST)");
    assert_run("INSERT INTO small SELECT nope FROM g",
               "error ENOTFOUND: line 1, column 26: unknown column 'nope'");
    assert_run("INSERT INTO small VALUE (1)",
               "error ESYNTAX: line 1, column 19: expected VALUES or SELECT, found 'VALUE'");
}

static void test_explain_stages(void **state)
{
    (void)state;
    assert_run(group_rows, "table default.g created\n5 rows inserted\n");
    assert_run("EXPLAIN SELECT k, COUNT(*) FROM g WHERE v > 1 GROUP BY k HAVING COUNT(*) > 1 "
               "ORDER BY 2 DESC LIMIT 3",
               "[plan STRING NOT NULL]\n"
               "scan of the log (the log of every bucket, from the earliest offset)\n"
               "filter pushed down: (v > 1)\n"
               "then group by: k\n"
               "aggregates: COUNT(*)\n"
               "then filter (HAVING): (COUNT(*) > 1)\n"
               "then sort by: 2 DESC NULLS FIRST (only the first rows are kept)\n"
               "limit: 3\n"
               "end\n");
    assert_run("EXPLAIN SELECT DISTINCT k FROM g",
               "[plan STRING NOT NULL]\n"
               "scan of the log (the log of every bucket, from the earliest offset)\n"
               "then distinct rows\nend\n");
}

/* ---- scripts, sinks -------------------------------------------------------------------- */

static void test_scripts(void **state)
{
    (void)state;
    /* A syntax error anywhere runs nothing. */
    assert_run("CREATE DATABASE a; CREATE DATABASE b; SELEC",
               "error ESYNTAX: line 1, column 39: expected a statement (SELECT, INSERT, UPDATE, "
               "DELETE, CREATE, ALTER, DROP, SHOW, DESCRIBE, USE, CALL), found 'SELEC'");
    assert_run("SHOW DATABASES", "[database name STRING NOT NULL]\ndefault\nend\n");
    /* An execution error stops the rest; earlier statements stay done. */
    assert_run("CREATE DATABASE a;\nSELECT * FROM nope;\nCREATE DATABASE b",
               "database a created\nerror ENOTFOUND: line 2, column 15: table default.nope does "
               "not exist");
    assert_run("SHOW DATABASES", "[database name STRING NOT NULL]\na\ndefault\nend\n");
    assert_run(";;", "");
    assert_run("-- nothing", "");
}

static void test_sink_stop(void **state)
{
    (void)state;
    setup_orders(1, 40);
    printer p = {.stop_after_rows = 1};
    fr_buf_init(&p.out);
    const char *r = run_with(&p, "SELECT id FROM orders; CREATE DATABASE never");
    assert_int_equal(p.batches, 1);
    assert_null(strstr(r, "never"));
    fr_buf_free(&p.out);
    assert_run("SHOW DATABASES", "[database name STRING NOT NULL]\ndefault\nend\n");
    /* A NULL sink and NULL callbacks are fine. */
    fr_error err = {0};
    const char *text = "SELECT * FROM orders; INSERT INTO orders (id) VALUES (100)";
    assert_int_equal(fr_sql_execute(fx.session, text, strlen(text), NULL, &err), 0);
    fr_sql_sink empty = {0};
    assert_int_equal(fr_sql_execute(fx.session, text, strlen(text), &empty, &err), 0);
    assert_run("SELECT id FROM orders WHERE id >= 100", "[id BIGINT NOT NULL]\n100\n100\nend\n");
}

/* ---- entry points ---------------------------------------------------------------------- */

static void test_parse_expr(void **state)
{
    (void)state;
    fr_field fields[] = {{.name = "a", .type = fr_type_of(FR_T_INT)},
                         {.name = "s", .type = fr_type_of(FR_T_STRING)}};
    fr_schema *schema = NULL;
    fr_error err = {0};
    assert_int_equal(fr_schema_new(fields, 2, 0, &schema, &err), 0);
    fr_arena *arena = fr_arena_new(4096);
    fr_expr *e = NULL;
    const char *t = "a > 1 AND s LIKE 'x%'";
    assert_int_equal(fr_sql_parse_expr(t, strlen(t), schema, arena, &e, &err), 0);
    assert_int_equal(e->type.id, FR_T_BOOLEAN);
    assert_int_equal(e->args[0]->args[0]->column, 0);
    t = "a > ";
    assert_int_equal(fr_sql_parse_expr(t, strlen(t), schema, arena, &e, &err), FR_ESYNTAX);
    assert_string_equal(err.msg, "line 1, column 5: expected an expression, found end of input");
    t = "b = 1";
    assert_int_equal(fr_sql_parse_expr(t, strlen(t), schema, arena, &e, &err), FR_ENOTFOUND);
    assert_string_equal(err.msg, "line 1, column 1: unknown column 'b'");
    t = "a = 1 a";
    assert_int_equal(fr_sql_parse_expr(t, strlen(t), schema, arena, &e, &err), FR_ESYNTAX);
    assert_string_equal(err.msg, "line 1, column 7: expected the end of the expression, found 'a'");
    fr_arena_free(arena);
    fr_schema_free(schema);
}

static void test_resolve_table(void **state)
{
    (void)state;
    char db[FR_NAME_BYTES_MAX + 1], t[FR_NAME_BYTES_MAX + 1];
    fr_error err = {0};
    assert_int_equal(fr_sql_resolve_table(fx.session, "Shop.Orders", db, sizeof db, t, sizeof t, &err), 0);
    assert_string_equal(db, "shop");
    assert_string_equal(t, "orders");
    assert_int_equal(fr_sql_resolve_table(fx.session, "orders", db, sizeof db, t, sizeof t, &err), 0);
    assert_string_equal(db, "default");
    assert_int_equal(fr_sql_resolve_table(fx.session, "`x`.`Y`", db, sizeof db, t, sizeof t, &err), 0);
    assert_string_equal(t, "Y");
    assert_int_equal(fr_sql_resolve_table(fx.session, "a.b.c", db, sizeof db, t, sizeof t, &err),
                     FR_EINVAL);
    assert_string_equal(err.msg, "bad table name 'a.b.c': line 1, column 4: expected the end of "
                                 "the table name, found '.'");
    assert_int_equal(fr_sql_resolve_table(fx.session, "", db, sizeof db, t, sizeof t, &err), FR_EINVAL);
    char small[4];
    assert_int_equal(fr_sql_resolve_table(fx.session, "abcdef", db, sizeof db, small, sizeof small,
                                          &err), FR_ELIMIT);
}

/* Failing the n-th allocation anywhere in a run of statements never crashes nor leaks
 * (under ASan), and a failure is reported as an error with a message. */
static void test_alloc_failures(void **state)
{
    (void)state;
    setup_orders(2, 20);
    const char *text = "INSERT INTO orders (id, name) VALUES (100, 'x'), (101, 'y');"
                       "SELECT id, name || '!' AS n, amount * 2 FROM orders WHERE id >= 5 LIMIT 7;"
                       "SELECT * FROM orders; DESCRIBE orders; SHOW TABLES; SELECT 1 + 2;"
                       "SELECT name, COUNT(*), SUM(amount) FROM orders GROUP BY name HAVING "
                       "COUNT(*) > 0 ORDER BY 2 DESC, name LIMIT 3;"
                       "SELECT DISTINCT name FROM orders ORDER BY name DESC;"
                       "SELECT COUNT(DISTINCT id), MIN(name), AVG(amount) FROM orders;"
                       "EXPLAIN SELECT id FROM orders ORDER BY amount;"
                       "INSERT INTO orders (id, name) SELECT id + 1000, name FROM orders "
                       "WHERE id < 3";
    int failures = 0;
    for (long n = 1;; n++) {
        printer p = {0};
        fr_buf_init(&p.out);
        fr_sql_sink sink = {.ctx = &p, .begin = p_begin, .rows = p_rows, .end = p_end};
        fr_error err = {0};
        fr_alloc_fail_after(n);
        int rc = fr_sql_execute(fx.session, text, strlen(text), &sink, &err);
        fr_alloc_fail_after(0);
        fr_buf_free(&p.out);
        if (rc == 0) break;
        assert_int_equal(err.code, rc);
        assert_true(err.msg[0] != '\0');
        failures++;
        assert_true(n < 100000);
    }
    assert_true(failures > 10);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_databases, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tables, setup, teardown),
        cmocka_unit_test_setup_teardown(test_every_type, setup, teardown),
        cmocka_unit_test_setup_teardown(test_insert_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_where, setup, teardown),
        cmocka_unit_test_setup_teardown(test_where_buckets, setup, teardown),
        cmocka_unit_test_setup_teardown(test_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_select_expressions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_select_constants, setup, teardown),
        cmocka_unit_test_setup_teardown(test_case_and_functions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_where_functions_pruning, setup, teardown),
        cmocka_unit_test_setup_teardown(test_group_by, setup, teardown),
        cmocka_unit_test_setup_teardown(test_order_by, setup, teardown),
        cmocka_unit_test_setup_teardown(test_distinct, setup, teardown),
        cmocka_unit_test_setup_teardown(test_aggregate_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_explain_stages, setup, teardown),
        cmocka_unit_test_setup_teardown(test_insert_select, setup, teardown),
        cmocka_unit_test_setup_teardown(test_scripts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sink_stop, setup, teardown),
        cmocka_unit_test_setup_teardown(test_parse_expr, setup, teardown),
        cmocka_unit_test_setup_teardown(test_resolve_table, setup, teardown),
        cmocka_unit_test_setup_teardown(test_alloc_failures, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
