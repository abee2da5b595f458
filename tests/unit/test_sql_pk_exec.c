/* test_sql_pk_exec.c — SQL on primary-key and partitioned tables against a real engine in a
 * scratch data dir: CREATE TABLE with keys and partitions, DESCRIBE and SHOW CREATE TABLE,
 * upserts and partial updates with Fluss's rules, UPDATE and DELETE, point and prefix
 * lookups (through EXPLAIN and their results), t$changelog, the partition statements and
 * pruning, the merge engines seen through SQL, and allocation failures on these paths. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "sql/sql.h"

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
    snprintf(fx.dir, sizeof fx.dir, "%s/test_sql_pk_exec.XXXXXX", base);
    if (!mkdtemp(fx.dir)) return -1;
    fr_engine_options o;
    fr_engine_options_default(&o);
    o.data_dir = fx.dir;
    o.flush = FR_FLUSH_NONE;
    o.retention_check_interval_ms = 0;
    o.auto_partition_check_interval_ms = 0;
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

/* begin prints "[name TYPE, ...]", each row "v1 | v2", end its message or "end". */
static int p_begin(void *ctx, const fr_schema *schema, fr_error *err)
{
    fr_buf *out = ctx;
    fr_buf_printf(out, err, "[");
    for (int i = 0; i < fr_schema_num_fields(schema); i++) {
        const fr_field *f = fr_schema_field(schema, i);
        char t[64];
        fr_type_format(&f->type, true, t, sizeof t);
        fr_buf_printf(out, err, "%s%s %s", i ? ", " : "", f->name, t);
    }
    fr_buf_printf(out, err, "]\n");
    return 0;
}

static int p_rows(void *ctx, fr_batch *batch, fr_error *err)
{
    fr_buf *out = ctx;
    for (int64_t r = 0; r < fr_batch_num_rows(batch); r++) {
        for (int c = 0; c < fr_batch_num_columns(batch); c++) {
            fr_value v;
            fr_column_get(fr_batch_column(batch, c), r, &v);
            if (c) fr_buf_printf(out, err, " | ");
            if (v.is_null)
                fr_buf_printf(out, err, "NULL");
            else
                fr_value_format(&v, out, err);
        }
        fr_buf_printf(out, err, "\n");
    }
    fr_batch_free(batch);
    return 0;
}

static int p_end(void *ctx, const char *message, fr_error *err)
{
    fr_buf_printf(ctx, err, "%s\n", message ? message : "end");
    return 0;
}

/* Runs text; returns what was printed (static storage) or "error CODE: message". */
static const char *run(const char *text)
{
    static char result[1 << 16];
    fr_buf out;
    fr_buf_init(&out);
    fr_sql_sink sink = {.ctx = &out, .begin = p_begin, .rows = p_rows, .end = p_end};
    fr_error err = {0};
    int rc = fr_sql_execute(fx.session, text, strlen(text), &sink, &err);
    if (rc < 0)
        snprintf(result, sizeof result, "%.*serror %s: %s", (int)out.len,
                 out.data ? (const char *)out.data : "", fr_strcode(rc), err.msg);
    else
        snprintf(result, sizeof result, "%.*s", (int)out.len,
                 out.data ? (const char *)out.data : "");
    fr_buf_free(&out);
    return result;
}

#define assert_run(text, want) assert_string_equal(run(text), want)

/* Runs text that must succeed, ignoring its output. */
static void ok(const char *text)
{
    const char *r = run(text);
    if (strncmp(r, "error ", 6) == 0 || strstr(r, "\nerror ")) fail_msg("%s: %s", text, r);
}

/* ---- tables, DESCRIBE, SHOW CREATE TABLE ------------------------------------------------ */

static void test_create_describe(void **state)
{
    (void)state;
    assert_run("CREATE TABLE t (id INT, name STRING, PRIMARY KEY (id) NOT ENFORCED)",
               "table default.t created\n");
    /* Key columns become NOT NULL. */
    assert_run("DESCRIBE t", "[name STRING NOT NULL, type STRING NOT NULL, null BOOLEAN NOT NULL, "
                             "key STRING]\n"
                             "id | INT | false | PRI(id)\n"
                             "name | STRING | true | NULL\n"
                             "end\n");
    assert_run("CREATE TABLE c (a INT PRIMARY KEY NOT ENFORCED, b BIGINT)",
               "table default.c created\n");
    assert_run("DESCRIBE c", "[name STRING NOT NULL, type STRING NOT NULL, null BOOLEAN NOT NULL, "
                             "key STRING]\n"
                             "a | INT | false | PRI(a)\n"
                             "b | BIGINT | true | NULL\n"
                             "end\n");
    assert_run("CREATE TABLE p (dt STRING, shop INT, uid INT, n INT, "
               "PRIMARY KEY (dt, shop, uid) NOT ENFORCED) PARTITIONED BY (dt) "
               "WITH ('bucket.num' = '2', 'bucket.key' = 'shop')",
               "table default.p created\n");
    const char *want =
        "[create statement STRING NOT NULL]\n"
        "CREATE TABLE default.p (\n"
        "  dt STRING NOT NULL,\n"
        "  shop INT NOT NULL,\n"
        "  uid INT NOT NULL,\n"
        "  n INT,\n"
        "  PRIMARY KEY (dt, shop, uid) NOT ENFORCED\n"
        ") PARTITIONED BY (dt) WITH (\n"
        "  'bucket.num' = '2',\n"
        "  'bucket.key' = 'shop'\n"
        ")\n"
        "end\n";
    assert_run("SHOW CREATE TABLE p", want);
    assert_run("DESCRIBE p", "[name STRING NOT NULL, type STRING NOT NULL, null BOOLEAN NOT NULL, "
                             "key STRING]\n"
                             "dt | STRING | false | PRI(dt, shop, uid)\n"
                             "shop | INT | false | PRI(dt, shop, uid)\n"
                             "uid | INT | false | PRI(dt, shop, uid)\n"
                             "n | INT | true | NULL\n"
                             "end\n");
    /* What SHOW CREATE TABLE prints creates the same table again. */
    char text[1024];
    const char *start = strstr(want, "CREATE TABLE");
    snprintf(text, sizeof text, "DROP TABLE p; %.*s", (int)(strstr(want, ")\nend") + 1 - start),
             start);
    ok(text);
    assert_run("SHOW CREATE TABLE p", want);
    /* A partitioned log table. */
    assert_run("CREATE TABLE l (a INT, dt DATE) PARTITIONED BY (dt); SHOW CREATE TABLE l",
               "table default.l created\n[create statement STRING NOT NULL]\n"
               "CREATE TABLE default.l (\n  a INT,\n  dt DATE\n) PARTITIONED BY (dt)\nend\n");
}

static void test_create_errors(void **state)
{
    (void)state;
    assert_run("CREATE TABLE t (a INT, PRIMARY KEY (b) NOT ENFORCED)",
               "error EINVAL: line 1, column 37: primary key column 'b' is not a column of the "
               "table");
    assert_run("CREATE TABLE t (a INT, dt STRING) PARTITIONED BY (dt, dt)",
               "error EINVAL: line 1, column 55: partition key column 'dt' is named twice");
    /* The rules between keys are the engine's; its message comes with the position. */
    const char *r = run("CREATE TABLE t (a INT, dt STRING, PRIMARY KEY (a) NOT ENFORCED) "
                        "PARTITIONED BY (dt)");
    assert_true(strncmp(r, "error EINVAL: line 1, column 14: ", 33) == 0);
    assert_non_null(strstr(r, "dt"));
    r = run("CREATE TABLE t (a INT, d DOUBLE) PARTITIONED BY (d)");
    assert_true(strncmp(r, "error EINVAL: line 1, column 14: ", 33) == 0);
    assert_run("SHOW TABLES", "[table name STRING NOT NULL]\nend\n");
}

/* ---- writes --------------------------------------------------------------------------- */


static void test_upserts(void **state)
{
    (void)state;
    ok("CREATE TABLE o (id INT, name STRING, amount DECIMAL(10, 2), "
       "PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket.num' = '1')");
    assert_run("INSERT INTO o VALUES (1, 'Rhea', 100.00)", "1 row upserted\n");
    assert_run("INSERT INTO o VALUES (1, 'Rhea', 150.00), (2, 'Bo', 5)", "2 rows upserted\n");
    assert_run("INSERT INTO o (amount, name, id) VALUES (5, 'Bo', 2)", "1 row upserted\n");
    assert_run("DELETE FROM o WHERE id = 1", "1 row deleted\n");
    assert_run("SELECT * FROM o",
               "[id INT NOT NULL, name STRING, amount DECIMAL(10, 2)]\n2 | Bo | 5.00\nend\n");
    /* Fluss's example, and a row written again unchanged writes nothing. */
    /* The changelog without its commit times (they differ from run to run). */
    assert_run("SELECT _change_type, _log_offset, id, name, amount FROM o$changelog",
               "[_change_type STRING NOT NULL, _log_offset BIGINT NOT NULL, id INT NOT NULL, "
               "name STRING, amount DECIMAL(10, 2)]\n"
               "+I | 0 | 1 | Rhea | 100.00\n"
               "-U | 1 | 1 | Rhea | 100.00\n"
               "+U | 2 | 1 | Rhea | 150.00\n"
               "+I | 3 | 2 | Bo | 5.00\n"
               "-D | 4 | 1 | Rhea | 150.00\n"
               "end\n");
    assert_run("INSERT INTO o VALUES (NULL, 'x', 1)",
               "error EINVAL: line 1, column 23: NULL into NOT NULL column 'id'");
    /* A bad row anywhere writes nothing of the statement. */
    assert_run("INSERT INTO o VALUES (7, 'a', 1), (8, 'b', 'x')",
               "error EINVAL: line 1, column 44: value 'x' cannot be converted to DECIMAL(10, 2) "
               "for column 'amount': 'x' is not a valid DECIMAL(10, 2)");
    assert_run("SELECT count FROM o", "error ENOTFOUND: line 1, column 8: unknown column 'count'");
    assert_run("SELECT id FROM o", "[id INT NOT NULL]\n2\nend\n");
    ok("INSERT INTO o VALUES (3, 'c', 3), (4, 'd', 4)");
    assert_run("SELECT id FROM o LIMIT 2", "[id INT NOT NULL]\n2\n3\nend\n");
    assert_run("SELECT id FROM o WHERE id > 2 LIMIT 1", "[id INT NOT NULL]\n3\nend\n");
    assert_run("SELECT id FROM o LIMIT 0", "[id INT NOT NULL]\nend\n");
}

static void test_partial_updates(void **state)
{
    (void)state;
    ok("CREATE TABLE u (id INT, a STRING, b INT, c INT NOT NULL, "
       "PRIMARY KEY (id) NOT ENFORCED)");
    ok("CREATE TABLE v (id INT, a STRING, b INT, PRIMARY KEY (id) NOT ENFORCED)");
    ok("INSERT INTO v VALUES (1, 'one', 10), (2, 'two', 20)");
    assert_run("INSERT INTO v (id, b) VALUES (1, 11), (3, 33)", "2 rows upserted\n");
    assert_run("INSERT INTO v (a, id) VALUES ('TWO', 2)", "1 row upserted\n");
    assert_run("SELECT * FROM v", "[id INT NOT NULL, a STRING, b INT]\n"
                                  "1 | one | 11\n2 | TWO | 20\n3 | NULL | 33\nend\n");
    assert_run("INSERT INTO v (a) VALUES ('x')",
               "error EINVAL: line 1, column 13: a partial update must name every primary key "
               "column: the insert columns are [a], the primary key columns [id]");
    assert_run("INSERT INTO u (id, a) VALUES (1, 'x')",
               "error EINVAL: line 1, column 13: a partial update needs every column outside the "
               "primary key to be nullable, and column 'c' is NOT NULL: name every column in "
               "INSERT INTO");
    assert_run("INSERT INTO u (id, a, c) VALUES (1, 'x', 1)",
               "error EINVAL: line 1, column 13: a partial update needs every column outside the "
               "primary key to be nullable, and column 'c' is NOT NULL: name every column in "
               "INSERT INTO");
    ok("CREATE TABLE f (id INT, a STRING, PRIMARY KEY (id) NOT ENFORCED) "
       "WITH ('table.merge-engine' = 'first_row')");
    assert_run("INSERT INTO f (id) VALUES (1)",
               "error EINVAL: line 1, column 13: table default.f uses the 'first_row' merge "
               "engine, which does not support partial updates: name every column in INSERT INTO");
    /* Naming every column, in any order, is a whole-row upsert. */
    assert_run("INSERT INTO f (a, id) VALUES ('x', 1)", "1 row upserted\n");
}

static void test_update_delete(void **state)
{
    (void)state;
    ok("CREATE TABLE s (id INT, name STRING, n INT NOT NULL, PRIMARY KEY (id) NOT ENFORCED) "
       "WITH ('bucket.num' = '3')");
    ok("INSERT INTO s VALUES (1, 'a', 10), (2, 'b', 20), (3, 'c', 30), (4, 'd', 40)");
    assert_run("UPDATE s SET n = n + 1, name = upper WHERE id = 1",
               "error ENOTFOUND: line 1, column 32: unknown column 'upper'");
    assert_run("UPDATE s SET n = n + 1, name = name || '!' WHERE n >= 20 AND n < 40",
               "2 rows updated\n");
    assert_run("UPDATE s SET n = n * 10 WHERE id IN (1, 4)", "2 rows updated\n");
    assert_run("UPDATE s SET name = name WHERE id = 1",
               "0 rows updated (1 matched; a row the last_row merge engine leaves as it is "
               "changes nothing)\n");
    assert_run("UPDATE s SET n = 1 WHERE id = 99", "0 rows updated\n");
    assert_run("SELECT * FROM s WHERE id IN (1, 2, 3, 4)",
               "[id INT NOT NULL, name STRING, n INT NOT NULL]\n"
               "1 | a | 100\n2 | b! | 21\n3 | c! | 31\n4 | d | 400\nend\n");
    /* A bad new value anywhere writes nothing. */
    assert_run("UPDATE s SET n = CASE_ WHERE id = 1",
               "error ENOTFOUND: line 1, column 18: unknown column 'CASE_'");
    assert_run("UPDATE s SET n = NULL WHERE id > 2",
               "error EINVAL: line 1, column 14: NULL into NOT NULL column 'n'");
    assert_run("UPDATE s SET n = 10 / (n - 100) WHERE id < 3",
               "error EINVAL: line 1, column 21: division by zero");
    assert_run("UPDATE s SET name = 5 WHERE id = 1",
               "error ETYPE: line 1, column 14: cannot insert a INT value into STRING column "
               "'name' (use CAST)");
    assert_run("SELECT n FROM s WHERE id IN (1, 2, 3, 4)",
               "[n INT NOT NULL]\n100\n21\n31\n400\nend\n");
    assert_run("UPDATE s SET id = 5 WHERE id = 1",
               "error EINVAL: line 1, column 14: UPDATE cannot change primary key column 'id': the "
               "key names the row (DELETE it and INSERT the row under its new key)");
    assert_run("UPDATE s SET nope = 1", "error ENOTFOUND: line 1, column 14: unknown column 'nope' "
                                        "in table default.s");
    assert_run("UPDATE s SET n = 1 WHERE n",
               "error ETYPE: line 1, column 26: WHERE needs a BOOLEAN condition, not INT");
    assert_run("DELETE FROM s WHERE name LIKE '%!'", "2 rows deleted\n");
    assert_run("DELETE FROM s WHERE id = 2", "0 rows deleted\n");
    assert_run("SELECT id FROM s WHERE id IN (1, 2, 3, 4)", "[id INT NOT NULL]\n1\n4\nend\n");
    assert_run("DELETE FROM s", "2 rows deleted\n");
    assert_run("SELECT * FROM s", "[id INT NOT NULL, name STRING, n INT NOT NULL]\nend\n");
    /* Log tables are append-only; virtual tables are read-only. */
    ok("CREATE TABLE lg (a INT)");
    assert_run("UPDATE lg SET a = 1",
               "error EINVAL: line 1, column 8: table default.lg is a log table, which is "
               "append-only: UPDATE needs a primary-key table");
    assert_run("DELETE FROM lg", "error EINVAL: line 1, column 13: table default.lg is a log "
                                 "table, which is append-only: DELETE needs a primary-key table");
    assert_run("DELETE FROM s$changelog",
               "error EINVAL: line 1, column 13: s$changelog is a virtual table: only SELECT "
               "reads it");
    assert_run("INSERT INTO s$changelog VALUES (1)",
               "error EINVAL: line 1, column 13: s$changelog is a virtual table: only SELECT "
               "reads it");
    /* Delete behaviours. */
    ok("CREATE TABLE nd (id INT, PRIMARY KEY (id) NOT ENFORCED) "
       "WITH ('table.delete.behavior' = 'disable'); INSERT INTO nd VALUES (1)");
    assert_run("DELETE FROM nd WHERE id = 1",
               "error EINVAL: line 1, column 13: table default.nd has 'table.delete.behavior' = "
               "'disable', which rejects deletes");
    ok("CREATE TABLE ig (id INT, PRIMARY KEY (id) NOT ENFORCED) "
       "WITH ('table.delete.behavior' = 'ignore'); INSERT INTO ig VALUES (1)");
    assert_run("DELETE FROM ig", "0 rows deleted (1 matched; the table ignores deletes: "
                                 "'table.delete.behavior' is 'ignore')\n");
    assert_run("SELECT * FROM ig", "[id INT NOT NULL]\n1\nend\n");
}

/* ---- lookups -------------------------------------------------------------------------- */

static void test_lookups(void **state)
{
    (void)state;
    ok("CREATE TABLE k (a INT, b STRING, c BIGINT, v INT, PRIMARY KEY (a, b, c) NOT ENFORCED) "
       "WITH ('bucket.num' = '4', 'bucket.key' = 'a')");
    ok("INSERT INTO k VALUES (1, 'x', 1, 11), (1, 'x', 2, 12), (1, 'y', 1, 13), (2, 'x', 1, 21), "
       "(2, 'y', 5, 25), (3, 'z', 9, 39)");
    assert_run("EXPLAIN SELECT v FROM k WHERE a = 1 AND b = 'x' AND c = 2",
               "[plan STRING NOT NULL]\n"
               "point lookup of 1 key on (a, b, c): reads the KV store, scans nothing\n"
               "then filter: ((a = 1) AND ((b = 'x') AND (c = 2)))\nend\n");
    assert_run("SELECT v FROM k WHERE a = 1 AND b = 'x' AND c = 2", "[v INT]\n12\nend\n");
    /* Keys in IN lists, repeated, out of order, in either order of the operands. */
    assert_run("EXPLAIN SELECT v FROM k WHERE c IN (1, 2, 1) AND 'x' = b AND a IN (2, 1) "
               "AND v > 0 LIMIT 5",
               "[plan STRING NOT NULL]\n"
               "point lookup of 4 keys on (a, b, c): reads the KV store, scans nothing\n"
               "then filter: (((c IN (1, 2, 1)) AND ('x' = b)) AND ((a IN (2, 1)) AND (v > 0)))\n"
               "limit: 5\nend\n");
    assert_run("SELECT a, b, c, v FROM k WHERE c IN (1, 2, 1) AND 'x' = b AND a IN (2, 1)",
               "[a INT NOT NULL, b STRING NOT NULL, c BIGINT NOT NULL, v INT]\n"
               "1 | x | 1 | 11\n1 | x | 2 | 12\n2 | x | 1 | 21\nend\n");
    assert_run("SELECT v FROM k WHERE c IN (1, 2) AND b = 'x' AND a IN (2, 1) LIMIT 2",
               "[v INT]\n11\n12\nend\n");
    /* Values that no key can hold: not looked up at all. */
    assert_run("EXPLAIN SELECT v FROM k WHERE a = 1.5 AND b = 'x' AND c = 1",
               "[plan STRING NOT NULL]\n"
               "point lookup of 0 keys on (a, b, c): reads the KV store, scans nothing\n"
               "then filter: ((a = 1.5) AND ((b = 'x') AND (c = 1)))\nend\n");
    assert_run("SELECT v FROM k WHERE a = 1.0 AND b = 'x' AND c = 1", "[v INT]\n11\nend\n");
    assert_run("SELECT v FROM k WHERE a = 9999999999 AND b = 'x' AND c = 1", "[v INT]\nend\n");
    assert_run("SELECT v FROM k WHERE a = NULL AND b = 'x' AND c = 1", "[v INT]\nend\n");
    assert_run("SELECT v FROM k WHERE a = 1 + 1 AND b = 'x' AND c = -(-1)", "[v INT]\n21\nend\n");
    /* Leading key columns that cover the bucket key: a prefix lookup. */
    assert_run("EXPLAIN SELECT v FROM k WHERE a = 1 AND c = 1",
               "[plan STRING NOT NULL]\n"
               "prefix lookup of 1 prefix on (a) of the key (a, b, c): one bucket each\n"
               "then filter: ((a = 1) AND (c = 1))\nend\n");
    assert_run("SELECT v FROM k WHERE a = 1 LIMIT 2", "[v INT]\n11\n12\nend\n");
    assert_run("SELECT b, c, v FROM k WHERE a = 1 AND c = 1",
               "[b STRING NOT NULL, c BIGINT NOT NULL, v INT]\nx | 1 | 11\ny | 1 | 13\nend\n");
    assert_run("EXPLAIN SELECT v FROM k WHERE a IN (1, 2) AND b = 'y'",
               "[plan STRING NOT NULL]\n"
               "prefix lookup of 2 prefixes on (a, b) of the key (a, b, c): one bucket each\n"
               "then filter: ((a IN (1, 2)) AND (b = 'y'))\nend\n");
    assert_run("SELECT v FROM k WHERE a IN (1, 2) AND b = 'y'", "[v INT]\n13\n25\nend\n");
    /* Without the bucket key fixed, or under OR: the current state is scanned. */
    assert_run("EXPLAIN SELECT v FROM k WHERE b = 'x' AND c = 1",
               "[plan STRING NOT NULL]\n"
               "scan of the current state (the KV store of every bucket)\n"
               "filter pushed down: ((b = 'x') AND (c = 1))\nend\n");
    assert_run("EXPLAIN SELECT v FROM k WHERE a = 1 OR a = 2",
               "[plan STRING NOT NULL]\n"
               "scan of the current state (the KV store of every bucket)\n"
               "filter pushed down: ((a = 1) OR (a = 2))\nend\n");
    assert_run("EXPLAIN SELECT * FROM k",
               "[plan STRING NOT NULL]\nscan of the current state (the KV store of every "
               "bucket)\nend\n");
    assert_run("SELECT v FROM k WHERE b = 'x' AND c = 1", "[v INT]\n11\n21\nend\n");
    /* UPDATE and DELETE find their rows the same way. */
    assert_run("EXPLAIN UPDATE k SET v = v + 1 WHERE a = 2 AND b = 'y' AND c = 5",
               "[plan STRING NOT NULL]\n"
               "point lookup of 1 key on (a, b, c): reads the KV store, scans nothing\n"
               "then filter: ((a = 2) AND ((b = 'y') AND (c = 5)))\n"
               "then upserts each row found with its new values\n"
               "end\n");
    assert_run("EXPLAIN DELETE FROM k WHERE a = 3",
               "[plan STRING NOT NULL]\n"
               "prefix lookup of 1 prefix on (a) of the key (a, b, c): one bucket each\n"
               "then filter: (a = 3)\nthen deletes each row found\nend\n");
    assert_run("UPDATE k SET v = v + 1 WHERE a = 2 AND b = 'y' AND c = 5", "1 row updated\n");
    ok("CREATE TABLE w (id INT, x INT, y INT, PRIMARY KEY (id) NOT ENFORCED); "
       "INSERT INTO w VALUES (1, 1, 1)");
    assert_run("EXPLAIN UPDATE w SET y = 2 WHERE id = 1",
               "[plan STRING NOT NULL]\n"
               "point lookup of 1 key on (id): reads the KV store, scans nothing\n"
               "then filter: (id = 1)\n"
               "then upserts each row found with its new values (target columns: id, y)\nend\n");
    assert_run("UPDATE w SET y = 2 WHERE id = 1; SELECT * FROM w",
               "1 row updated\n[id INT NOT NULL, x INT, y INT]\n1 | 1 | 2\nend\n");
    assert_run("DELETE FROM k WHERE a = 3", "1 row deleted\n");
    assert_run("SELECT a, v FROM k WHERE a IN (2, 3)", "[a INT NOT NULL, v INT]\n2 | 21\n2 | 26\n"
                                                      "end\n");
    assert_run("EXPLAIN SELECT 1", "[plan STRING NOT NULL]\none row of constants: no table is "
                                   "read\nend\n");
}

/* ---- $changelog ----------------------------------------------------------------------- */

static void test_changelog(void **state)
{
    (void)state;
    ok("CREATE TABLE o (id INT, v STRING, PRIMARY KEY (id) NOT ENFORCED)");
    ok("INSERT INTO o VALUES (1, 'a'), (2, 'b'); INSERT INTO o VALUES (1, 'c'); "
       "DELETE FROM o WHERE id = 2");
    const char *r = run("SELECT * FROM o$changelog LIMIT 1");
    assert_true(strncmp(r, "[_change_type STRING NOT NULL, _log_offset BIGINT NOT NULL, "
                           "_commit_timestamp TIMESTAMP_LTZ(3) NOT NULL, id INT NOT NULL, "
                           "v STRING]\n+I | 0 | ", 138) == 0);
    assert_run("SELECT _change_type, id, v FROM `o$changelog`",
               "[_change_type STRING NOT NULL, id INT NOT NULL, v STRING]\n"
               "+I | 1 | a\n+I | 2 | b\n-U | 1 | a\n+U | 1 | c\n-D | 2 | b\nend\n");
    /* Conditions on the metadata columns apply after the read, the others are pushed down;
     * both may mix in one conjunct. */
    assert_run("SELECT _log_offset, v FROM default.o$changelog WHERE _change_type IN ('-U', '-D') "
               "AND id = 2",
               "[_log_offset BIGINT NOT NULL, v STRING]\n4 | b\nend\n");
    assert_run("EXPLAIN SELECT v FROM o$changelog WHERE _change_type = '+I' AND v > 'a' "
               "AND (_log_offset > 1 OR id = 1)",
               "[plan STRING NOT NULL]\n"
               "scan of the changelog (the log of every bucket, from the earliest offset)\n"
               "filter pushed down: (v > 'a')\n"
               "then filter: ((_change_type = '+I') AND ((_log_offset > 1) OR (id = 1)))\nend\n");
    assert_run("SELECT _log_offset + 1 AS next, upper FROM o$changelog",
               "error ENOTFOUND: line 1, column 33: unknown column 'upper'");
    assert_run("SELECT _log_offset + 1 AS next FROM o$changelog WHERE _log_offset >= 3 LIMIT 1",
               "[next BIGINT NOT NULL]\n4\nend\n");
    assert_run("SELECT COUNT FROM o$changelog WHERE _commit_timestamp < TIMESTAMP '2000-01-01 "
               "00:00:00'",
               "error ENOTFOUND: line 1, column 8: unknown column 'COUNT'");
    assert_run("SELECT id FROM o$changelog WHERE _commit_timestamp < TIMESTAMP_LTZ '2000-01-01 "
               "00:00:00'",
               "[id INT NOT NULL]\nend\n");
    assert_run("SELECT _change_type FROM o$changelog WHERE _log_offset = 2",
               "[_change_type STRING NOT NULL]\n-U\nend\n");
    /* A log table's changelog: appends. */
    ok("CREATE TABLE lg (a INT); INSERT INTO lg VALUES (7), (8)");
    assert_run("SELECT _change_type, _log_offset, a FROM lg$changelog",
               "[_change_type STRING NOT NULL, _log_offset BIGINT NOT NULL, a INT]\n"
               "+A | 0 | 7\n+A | 1 | 8\nend\n");
    assert_run("SELECT * FROM o$binlog",
               "error EINVAL: line 1, column 15: 'o$binlog' names no table: the virtual tables "
               "of a table t are t$changelog, t$lake and t$lake_snapshots");
    assert_run("SELECT * FROM nope$changelog",
               "error ENOTFOUND: line 1, column 15: table default.nope does not exist");
    /* A table cannot have a column named like a metadata column and a changelog. */
    ok("CREATE TABLE odd (_log_offset INT)");
    assert_run("SELECT * FROM odd$changelog",
               "error EINVAL: table default.odd has a column named _log_offset, which its "
               "$changelog adds: rename the column to read the changelog");
}

/* ---- partitions ----------------------------------------------------------------------- */

static void test_partitions(void **state)
{
    (void)state;
    ok("CREATE TABLE pl (id INT, dt STRING, v INT) PARTITIONED BY (dt)");
    assert_run("SHOW PARTITIONS pl", "[partition name STRING NOT NULL]\nend\n");
    ok("INSERT INTO pl VALUES (1, '2026-01-01', 1), (2, '2026-01-02', 2), (3, '2026-01-01', 3)");
    assert_run("SHOW PARTITIONS pl", "[partition name STRING NOT NULL]\n"
                                     "dt=2026-01-01\ndt=2026-01-02\nend\n");
    assert_run("SELECT id FROM pl WHERE dt = '2026-01-01'", "[id INT]\n1\n3\nend\n");
    assert_run("EXPLAIN SELECT id FROM pl WHERE dt = '2026-01-01'",
               "[plan STRING NOT NULL]\n"
               "scan of the log (the log of every partition and bucket, from the earliest "
               "offset)\n"
               "filter pushed down: (dt = '2026-01-01')\n"
               "partitions the filter rules out are skipped\nend\n");
    assert_run("ALTER TABLE pl ADD PARTITION (dt = '2026-01-05') PARTITION (dt = '2026-01-06')",
               "2 partitions added to table default.pl\n");
    assert_run("ALTER TABLE pl ADD PARTITION (dt = '2026-01-05')",
               "error EEXIST: line 1, column 20: partition dt=2026-01-05 of table default.pl "
               "already exists");
    assert_run("ALTER TABLE pl ADD IF NOT EXISTS PARTITION (dt = '2026-01-05'), "
               "PARTITION (dt = '2026-01-07')",
               "1 partition added to table default.pl (1 already exists)\n");
    assert_run("SHOW PARTITIONS pl PARTITION (dt = '2026-01-06')",
               "[partition name STRING NOT NULL]\ndt=2026-01-06\nend\n");
    assert_run("ALTER TABLE pl DROP PARTITION (dt = '2026-01-01')",
               "1 partition dropped from table default.pl\n");
    assert_run("ALTER TABLE pl DROP IF EXISTS PARTITION (dt = '2026-01-01'), "
               "PARTITION (dt = '2026-01-09')",
               "0 partitions dropped from table default.pl (2 do not exist)\n");
    assert_run("SELECT id FROM pl", "[id INT]\n2\nend\n");
    assert_run("SHOW PARTITIONS pl", "[partition name STRING NOT NULL]\ndt=2026-01-02\n"
                                     "dt=2026-01-05\ndt=2026-01-06\ndt=2026-01-07\nend\n");
    assert_run("ALTER TABLE pl ADD PARTITION (id = 1)",
               "error EINVAL: line 1, column 31: 'id' is not a partition key of table default.pl "
               "(its partition keys: dt)");
    assert_run("SHOW PARTITIONS pl PARTITION (v = 1)",
               "error EINVAL: line 1, column 31: 'v' is not a partition key of table default.pl "
               "(its partition keys: dt)");
    ok("CREATE TABLE flat (a INT)");
    assert_run("SHOW PARTITIONS flat", "error EINVAL: line 1, column 17: table default.flat is not "
                                       "partitioned (it has no PARTITIONED BY)");
    assert_run("ALTER TABLE flat ADD PARTITION (a = 1)",
               "error EINVAL: line 1, column 13: table default.flat is not partitioned (it has no "
               "PARTITIONED BY)");

    /* Two partition keys of other types; values compare as their types. */
    ok("CREATE TABLE pk2 (d DATE, n INT, id BIGINT, v STRING, PRIMARY KEY (d, n, id) NOT "
       "ENFORCED) PARTITIONED BY (d, n) WITH ('table.partition.dynamic-creation' = 'false')");
    const char *r = run("INSERT INTO pk2 VALUES (DATE '2026-11-30', 1, 1, 'a')");
    assert_true(strncmp(r, "error ENOTFOUND: line 1, column 13: ", 36) == 0);
    assert_run("ALTER TABLE pk2 ADD PARTITION (n = 1, d = '2026-11-30') PARTITION (d = DATE "
               "'2026-12-01', n = -2)",
               "2 partitions added to table default.pk2\n");
    assert_run("SHOW PARTITIONS pk2", "[partition name STRING NOT NULL]\n"
                                      "d=2026-11-30/n=1\nd=2026-12-01/n=-2\nend\n");
    assert_run("SHOW PARTITIONS pk2 PARTITION (n = -2)",
               "[partition name STRING NOT NULL]\nd=2026-12-01/n=-2\nend\n");
    assert_run("SHOW PARTITIONS pk2 PARTITION (n = 'x')",
               "error EINVAL: line 1, column 32: partition value 'x' is not a valid INT: 'x' is "
               "not a valid INT");
    ok("INSERT INTO pk2 VALUES (DATE '2026-11-30', 1, 1, 'a'), (DATE '2026-11-30', 1, 2, 'b'), "
       "(DATE '2026-12-01', -2, 1, 'c')");
    /* The bucket key is the key outside the partition keys (id): without it no prefix
     * lookup, but the partitions the condition rules out are not read. */
    assert_run("EXPLAIN SELECT v FROM pk2 WHERE d = DATE '2026-11-30' AND n = 1",
               "[plan STRING NOT NULL]\n"
               "scan of the current state (the KV store of every partition and bucket)\n"
               "filter pushed down: ((d = DATE '2026-11-30') AND (n = 1))\n"
               "partitions the filter rules out are skipped\nend\n");
    assert_run("EXPLAIN SELECT v FROM pk2 WHERE d = DATE '2026-11-30' AND n = 1 AND id = 2",
               "[plan STRING NOT NULL]\n"
               "point lookup of 1 key on (d, n, id): reads the KV store, scans nothing\n"
               "then filter: ((d = DATE '2026-11-30') AND ((n = 1) AND (id = 2)))\nend\n");
    assert_run("SELECT v FROM pk2 WHERE d = '2026-11-30' AND n = 1 AND id = 2",
               "[v STRING]\nb\nend\n");
    assert_run("SELECT v FROM pk2 WHERE d = '2026-11-30' AND n = 1", "[v STRING]\na\nb\nend\n");
    assert_run("SELECT v FROM pk2 WHERE n = -2", "[v STRING]\nc\nend\n");
    assert_run("SELECT _change_type, v FROM pk2$changelog WHERE d > '2026-11-30'",
               "[_change_type STRING NOT NULL, v STRING]\n+I | c\nend\n");
    assert_run("ALTER TABLE pk2 DROP PARTITION (d = '2026-11-30', n = 1)",
               "1 partition dropped from table default.pk2\n");
    assert_run("SELECT v FROM pk2", "[v STRING]\nc\nend\n");
}

/* ---- merge engines -------------------------------------------------------------------- */

static void test_merge_engines(void **state)
{
    (void)state;
    ok("CREATE TABLE fr (id INT, v STRING, PRIMARY KEY (id) NOT ENFORCED) "
       "WITH ('table.merge-engine' = 'first_row')");
    ok("INSERT INTO fr VALUES (1, 'a'), (1, 'b'), (2, 'c'); UPDATE fr SET v = 'z' WHERE id = 1");
    assert_run("SELECT * FROM fr", "[id INT NOT NULL, v STRING]\n1 | a\n2 | c\nend\n");
    assert_run("DELETE FROM fr WHERE id = 2",
               "0 rows deleted (1 matched; the table ignores deletes: 'table.delete.behavior' is "
               "'ignore' by default with this merge engine)\n");
    assert_run("SELECT _change_type, id, v FROM fr$changelog",
               "[_change_type STRING NOT NULL, id INT NOT NULL, v STRING]\n"
               "+I | 1 | a\n+I | 2 | c\nend\n");

    ok("CREATE TABLE ve (id INT, ver BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) "
       "WITH ('table.merge-engine' = 'versioned', "
       "'table.merge-engine.versioned.ver-column' = 'ver')");
    ok("INSERT INTO ve VALUES (1, 5, 'a'), (1, 3, 'b'), (1, 5, 'c')");
    assert_run("UPDATE ve SET ver = ver - 1, v = 'old' WHERE id = 1",
               "0 rows updated (1 matched; a row the versioned merge engine leaves as it is "
               "changes nothing)\n");
    assert_run("UPDATE ve SET ver = ver + 1, v = 'new' WHERE id = 1", "1 row updated\n");
    assert_run("SELECT _change_type, ver, v FROM ve$changelog",
               "[_change_type STRING NOT NULL, ver BIGINT, v STRING]\n"
               "+I | 5 | a\n-U | 5 | a\n+U | 5 | c\n-U | 5 | c\n+U | 6 | new\nend\n");

    ok("CREATE TABLE ag (id INT, total BIGINT, mx INT, names STRING, "
       "PRIMARY KEY (id) NOT ENFORCED) WITH ('table.merge-engine' = 'aggregation', "
       "'fields.total.agg' = 'sum', 'fields.mx.agg' = 'max', 'fields.names.agg' = 'listagg')");
    ok("INSERT INTO ag VALUES (1, 10, 3, 'a'), (1, 5, 7, 'b')");
    assert_run("SELECT * FROM ag", "[id INT NOT NULL, total BIGINT, mx INT, names STRING]\n"
                                   "1 | 15 | 7 | a,b\nend\n");
    /* UPDATE writes the key and the SET columns, merged as any write is: sum adds. */
    assert_run("UPDATE ag SET total = 100 WHERE id = 1", "1 row updated\n");
    assert_run("INSERT INTO ag (id, mx) VALUES (1, 5)", "1 row upserted\n");
    assert_run("SELECT * FROM ag", "[id INT NOT NULL, total BIGINT, mx INT, names STRING]\n"
                                   "1 | 115 | 7 | a,b\nend\n");
}

/* ---- allocation failures -------------------------------------------------------------- */

static void test_alloc_failures(void **state)
{
    (void)state;
    ok("CREATE TABLE a (k INT, p STRING, v INT, PRIMARY KEY (p, k) NOT ENFORCED) "
       "PARTITIONED BY (p) WITH ('bucket.key' = 'k')");
    ok("INSERT INTO a VALUES (1, 'x', 1), (2, 'x', 2), (3, 'y', 3)");
    const char *texts[] = {
        "SELECT * FROM a WHERE p = 'x' AND k IN (1, 2)",
        "SELECT v FROM a WHERE p = 'x'",
        "SELECT _change_type, v FROM a$changelog WHERE _log_offset >= 0 AND v > 0",
        "UPDATE a SET v = v + 1 WHERE k = 1 AND p = 'x'",
        "INSERT INTO a (k, p) VALUES (9, 'y')",
        "SHOW PARTITIONS a PARTITION (p = 'x')",
        "EXPLAIN SELECT * FROM a WHERE p = 'x' AND v = 1",
    };
    for (size_t t = 0; t < sizeof texts / sizeof texts[0]; t++) {
        int failures = 0;
        for (long n = 1;; n++) {
            fr_buf out;
            fr_buf_init(&out);
            fr_sql_sink sink = {.ctx = &out, .begin = p_begin, .rows = p_rows, .end = p_end};
            fr_error err = {0};
            fr_alloc_fail_after(n);
            int rc = fr_sql_execute(fx.session, texts[t], strlen(texts[t]), &sink, &err);
            fr_alloc_fail_after(0);
            fr_buf_free(&out);
            if (rc == 0) break;
            assert_int_equal(err.code, rc);
            assert_true(err.msg[0] != '\0');
            failures++;
            assert_true(n < 100000);
        }
        assert_true(failures > 3);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_create_describe, setup, teardown),
        cmocka_unit_test_setup_teardown(test_create_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_upserts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_partial_updates, setup, teardown),
        cmocka_unit_test_setup_teardown(test_update_delete, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lookups, setup, teardown),
        cmocka_unit_test_setup_teardown(test_changelog, setup, teardown),
        cmocka_unit_test_setup_teardown(test_partitions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_merge_engines, setup, teardown),
        cmocka_unit_test_setup_teardown(test_alloc_failures, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
