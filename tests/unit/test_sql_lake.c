/* test_sql_lake.c — the SQL side of the lake: CALL sys.tier (parsing, results, errors),
 * SELECT from t$lake (the lake schema, the rows tiered), t$lake_snapshots (every column,
 * the tiered offsets as text, WHERE and projections on it), union reads of lake-enabled log
 * and primary-key tables (the same rows as before tiering, with projections, filters and
 * LIMIT), what EXPLAIN says of them, and the exact messages of mistakes, with positions. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>

#include "sql/sql_int.h"
#include "sql_testkit.h"

static char dir[1024];
static fr_engine *engine;
static fr_sql_session *session;
static fr_arena *arena;

static int setup(void **state)
{
    (void)state;
    if (sql_tk_open(dir, sizeof dir, "test_sql_lake", &engine, &session) < 0) return -1;
    arena = fr_arena_new(4096);
    return arena ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    fr_arena_free(arena);
    sql_tk_close(dir, engine, session);
    return 0;
}

/* ---- running statements ----------------------------------------------------------------- */

/* A result as text: "col1|col2\n" then one "v1|v2\n" line per row. */
typedef struct result {
    fr_buf text;
    int rows;
} result;

static int on_begin(void *ctx, const fr_schema *schema, fr_error *err)
{
    result *r = ctx;
    for (int i = 0; i < fr_schema_num_fields(schema); i++)
        FR_TRY(fr_buf_printf(&r->text, err, "%s%s", i ? "|" : "", fr_schema_field(schema, i)->name));
    return fr_buf_printf(&r->text, err, "\n");
}

static int on_rows(void *ctx, fr_batch *batch, fr_error *err)
{
    result *r = ctx;
    for (int64_t row = 0; row < fr_batch_num_rows(batch); row++, r->rows++) {
        for (int c = 0; c < fr_batch_num_columns(batch); c++) {
            fr_value v;
            fr_column_get(fr_batch_column(batch, c), row, &v);
            if (c) FR_TRY(fr_buf_printf(&r->text, err, "|"));
            if (v.is_null)
                FR_TRY(fr_buf_printf(&r->text, err, "NULL"));
            else
                FR_TRY(fr_value_format(&v, &r->text, err));
        }
        FR_TRY(fr_buf_printf(&r->text, err, "\n"));
    }
    fr_batch_free(batch);
    return 0;
}

/* Runs text and returns its result as text (static storage until the next call). */
static const char *run(const char *text)
{
    static result r;
    fr_buf_free(&r.text);
    fr_buf_init(&r.text);
    r.rows = 0;
    fr_sql_sink sink = {.ctx = &r, .begin = on_begin, .rows = on_rows};
    fr_error err = {0};
    if (fr_sql_execute(session, text, strlen(text), &sink, &err) < 0)
        fail_msg("%s: %s", text, err.msg);
    fr_buf_append(&r.text, "", 1, &err);
    return (const char *)r.text.data;
}

/* Runs text, whose result must be `want` exactly. */
static void expect(const char *text, const char *want)
{
    const char *got = run(text);
    if (strcmp(got, want) != 0) fail_msg("%s:\ngot:\n%s\nwant:\n%s", text, got, want);
}

/* Runs text, which must fail with code and message. */
static void expect_error(const char *text, int code, const char *msg)
{
    fr_error err = {0};
    int rc = fr_sql_execute(session, text, strlen(text), NULL, &err);
    if (rc != code || strcmp(err.msg, msg) != 0)
        fail_msg("%s: got %s \"%s\", want %s \"%s\"", text, fr_strcode(rc), err.msg,
                 fr_strcode(code), msg);
}

/* Rows of a query, sorted (static storage until the next call). */
static const char *sorted(const char *text)
{
    static char out[65536];
    const char *all = run(text);
    const char *body = strchr(all, '\n');
    body = body ? body + 1 : all;
    char *copy = strdup(body);
    char *lines[2048];
    int n = 0;
    for (char *save = NULL, *l = strtok_r(copy, "\n", &save); l && n < 2048;
         l = strtok_r(NULL, "\n", &save))
        lines[n++] = l;
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && strcmp(lines[j - 1], lines[j]) > 0; j--) {
            char *t = lines[j];
            lines[j] = lines[j - 1];
            lines[j - 1] = t;
        }
    size_t used = 0;
    out[0] = '\0';
    for (int i = 0; i < n; i++)
        used += (size_t)snprintf(out + used, sizeof out - used, "%s\n", lines[i]);
    free(copy);
    return out;
}

/* The snapshot id CALL sys.tier returns. */
static int64_t tier(const char *text)
{
    const char *got = run(text);
    const char *nl = strchr(got, '\n');
    assert_non_null(nl);
    assert_memory_equal(got, "snapshot_id\n", 12);
    return strtoll(nl + 1, NULL, 10);
}

/* ---- parsing ---------------------------------------------------------------------------- */

static sql_stmt *parse_one(const char *text)
{
    sql_script s = {0};
    fr_error err = {0};
    if (sql_parse_script(text, strlen(text), arena, &s, &err) < 0)
        fail_msg("parse of \"%s\" failed: %s", text, err.msg);
    assert_int_equal(s.nstmts, 1);
    return s.stmts[0];
}

static void assert_parse_error(const char *text, int code, const char *msg)
{
    fr_error err = {0};
    int rc = fr_sql_parse_only(text, strlen(text), &err);
    if (rc != code || strcmp(err.msg, msg) != 0)
        fail_msg("parse of \"%s\": got %s \"%s\", want %s \"%s\"", text, fr_strcode(rc),
                 err.msg, fr_strcode(code), msg);
}

static void test_parse_call(void **state)
{
    (void)state;
    sql_stmt *st = parse_one("CALL sys.tier('db.t')");
    assert_int_equal(st->kind, SQL_CALL);
    assert_string_equal(st->procedure, "sys.tier");
    assert_int_equal(st->procedure_pos.col, 6);
    assert_int_equal(st->nargs, 1);
    assert_int_equal(st->args[0]->kind, FR_EX_LITERAL);
    st = parse_one("  call SYS.Tier ( 't' ) ");
    assert_string_equal(st->procedure, "sys.tier");
    assert_int_equal(st->nargs, 1);
    st = parse_one("CALL `Sys`.tier()");
    assert_string_equal(st->procedure, "Sys.tier");
    assert_int_equal(st->nargs, 0);
    st = parse_one("CALL refresh('a', 1 + 2)");
    assert_string_equal(st->procedure, "refresh");
    assert_int_equal(st->nargs, 2);
    st = parse_one("SELECT * FROM db.orders$lake WHERE __bucket = 1");
    assert_string_equal(st->table.name, "orders$lake");
    st = parse_one("SELECT * FROM orders$lake_snapshots");
    assert_string_equal(st->table.name, "orders$lake_snapshots");

    assert_parse_error("CALL", FR_ESYNTAX,
                       "line 1, column 5: expected a procedure name (sys.tier), found end of input");
    assert_parse_error("CALL sys.tier", FR_ESYNTAX, "line 1, column 14: expected '(' and the "
                       "procedure's arguments, found end of input");
    assert_parse_error("CALL sys.tier('t'", FR_ESYNTAX,
                       "line 1, column 18: expected ',' or ')', found end of input");
    assert_parse_error("CALL sys.tier('t') x", FR_ESYNTAX,
                       "line 1, column 20: expected ';' or the end of the statement, found 'x'");
    assert_parse_error("CALL sys.('t')", FR_ESYNTAX,
                       "line 1, column 10: expected a procedure name after the '.', found '('");
    assert_parse_error("EXPLAIN CALL sys.tier('t')", FR_ESYNTAX,
                       "line 1, column 9: expected SELECT, UPDATE or DELETE after EXPLAIN, found "
                       "'CALL'");
}

/* ---- log tables ------------------------------------------------------------------------- */

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

static void test_log_table(void **state)
{
    (void)state;
    run("CREATE DATABASE lk");
    run("CREATE TABLE lk.events (id BIGINT NOT NULL, name VARCHAR(10), at TIMESTAMP(3)) "
        "WITH ('table.datalake.enabled' = 'true', 'bucket.num' = '2', 'bucket.key' = 'id')");
    /* No snapshot yet: the lake is empty, the union read is the log. */
    expect("SELECT * FROM lk.events$lake_snapshots", "snapshot_id|parent_id|sequence_number|"
           "committed_at|operation|added_data_files|added_delete_files|added_records|"
           "total_records|tiered_offsets\n");
    expect("SELECT * FROM lk.events$lake", "id|name|at|__bucket|__offset|__timestamp\n");
    expect("CALL sys.tier('lk.events')", "snapshot_id\nNULL\n");
    run("INSERT INTO lk.events VALUES (1, 'one', TIMESTAMP '2026-11-30 10:00:00.123'), "
        "(2, 'two', NULL), (3, NULL, TIMESTAMP '2026-11-30 10:00:01')");
    char *before = strdup(sorted("SELECT * FROM lk.events"));
    assert_string_equal(before, "1|one|2026-11-30 10:00:00.123\n2|two|NULL\n"
                                "3|NULL|2026-11-30 10:00:01.000\n");
    run("USE lk");
    int64_t s1 = tier("CALL sys.tier('events')");
    assert_true(s1 >= 0);
    /* Tiered: the union read is unchanged; the lake holds the rows in microseconds. */
    assert_string_equal(sorted("SELECT * FROM lk.events"), before);
    free(before);
    assert_string_equal(sorted("SELECT id, name, at FROM lk.events$lake"),
                        "1|one|2026-11-30 10:00:00.123000\n2|two|NULL\n"
                        "3|NULL|2026-11-30 10:00:01.000000\n");
    /* Conditions on the lake's own columns. */
    assert_int_equal(count_lines(run("SELECT id FROM events$lake WHERE __offset >= 0 AND "
                                     "__timestamp > '2020-01-01 00:00:00Z'")), 4);
    /* The snapshot: its offsets add up to the rows, per bucket as t$lake says. */
    expect("SELECT parent_id, operation, added_data_files >= 1, added_delete_files, "
           "added_records, total_records FROM lk.events$lake_snapshots",
           "parent_id|operation|added_data_files >= 1|added_delete_files|added_records|"
           "total_records\nNULL|append|true|0|3|3\n");
    int n0 = count_lines(run("SELECT __offset FROM events$lake WHERE __bucket = 0")) - 1;
    char want[1024], text[256];
    snprintf(want, sizeof want, "tiered_offsets\np-1/b0:%d,p-1/b1:%d\n", n0, 3 - n0);
    expect("SELECT tiered_offsets FROM lk.events$lake_snapshots", want);
    /* More rows: in the union read, not in the lake. */
    run("INSERT INTO events VALUES (4, 'four', NULL), (5, 'five', NULL)");
    assert_string_equal(sorted("SELECT id FROM events"), "1\n2\n3\n4\n5\n");
    assert_string_equal(sorted("SELECT id FROM events$lake"), "1\n2\n3\n");
    assert_string_equal(sorted("SELECT name, id * 10 FROM events WHERE id >= 2 AND id <> 4"),
                        "NULL|30\nfive|50\ntwo|20\n");
    assert_string_equal(sorted("SELECT id FROM events WHERE name LIKE 'f%'"), "4\n5\n");
    assert_int_equal(count_lines(run("SELECT id FROM events LIMIT 2")), 3);
    expect("SELECT id FROM events LIMIT 0", "id\n");
    /* A second round: its parent is the first. */
    int64_t s2 = tier("CALL sys.tier('lk.events')");
    assert_true(s2 != s1);
    snprintf(text, sizeof text, "SELECT parent_id, added_records, total_records FROM "
             "events$lake_snapshots WHERE snapshot_id = %lld", (long long)s2);
    snprintf(want, sizeof want, "parent_id|added_records|total_records\n%lld|2|5\n",
             (long long)s1);
    expect(text, want);
    assert_int_equal(count_lines(run("SELECT * FROM events$lake_snapshots")), 3);
    assert_string_equal(sorted("SELECT id FROM events$lake"), "1\n2\n3\n4\n5\n");
    /* Nothing new: the current snapshot again. */
    assert_int_equal(tier("CALL sys.tier('lk.events')"), s2);
    /* EXPLAIN says it is a union read, and of which snapshot. */
    snprintf(want, sizeof want,
             "plan\n"
             "union read: the newest lake snapshot, then the log of every bucket after the "
             "offsets it records\n"
             "lake snapshot: %lld\n"
             "projection: name\n"
             "filter pushed down to the lake (files and row groups its statistics rule out are "
             "skipped) and to the log: (id > 1)\n"
             "limit: 3\n", (long long)s2);
    expect("EXPLAIN SELECT name FROM events WHERE id > 1 LIMIT 3", want);
    snprintf(want, sizeof want,
             "plan\n"
             "scan of the lake alone (the newest lake snapshot)\n"
             "lake snapshot: %lld\n"
             "projection: __bucket, id\n", (long long)s2);
    expect("EXPLAIN SELECT __bucket, id FROM events$lake", want);
    expect("EXPLAIN SELECT * FROM events$lake_snapshots WHERE total_records > 1",
           "plan\nlist of the lake's snapshots (table metadata)\n"
           "then filter: (total_records > 1)\n");
}

/* Mistakes, each with its position. */
static void test_errors(void **state)
{
    (void)state;
    run("CREATE TABLE lk.plain (id INT)");
    expect_error("CALL sys.tier('lk.nope')", FR_ENOTFOUND,
                 "line 1, column 15: table lk.nope does not exist");
    expect_error("CALL sys.tier('nodb.t')", FR_ENOTFOUND,
                 "line 1, column 15: database 'nodb' does not exist");
    expect_error("CALL sys.tier('lk.plain')", FR_EINVAL,
                 "line 1, column 15: table lk.plain has no lake: create it with "
                 "'table.datalake.enabled' = 'true'");
    expect_error("CALL sys.tier('a.b.c')", FR_EINVAL,
                 "line 1, column 15: bad table name 'a.b.c': line 1, column 4: expected the end "
                 "of the table name, found '.'");
    expect_error("CALL sys.nope('lk.events')", FR_ENOTFOUND,
                 "line 1, column 6: unknown procedure 'sys.nope'; the procedures are: "
                 "sys.tier('db.t')");
    expect_error("CALL sys.tier()", FR_EINVAL,
                 "line 1, column 6: sys.tier takes one argument, the table ('db.t'), not 0");
    expect_error("CALL sys.tier('a', 'b')", FR_EINVAL,
                 "line 1, column 6: sys.tier takes one argument, the table ('db.t'), not 2");
    expect_error("CALL sys.tier(42)", FR_ETYPE,
                 "line 1, column 15: sys.tier takes a table name as a string ('db.t')");
    expect_error("CALL sys.tier(NULL)", FR_ETYPE,
                 "line 1, column 15: sys.tier takes a table name as a string ('db.t')");
    expect_error("SELECT * FROM lk.plain$lake", FR_EINVAL,
                 "line 1, column 15: table lk.plain has no lake: create it with "
                 "'table.datalake.enabled' = 'true'");
    expect_error("SELECT * FROM lk.plain$lake_snapshots", FR_EINVAL,
                 "line 1, column 15: table lk.plain has no lake: create it with "
                 "'table.datalake.enabled' = 'true'");
    expect_error("SELECT * FROM lk.events$lakes", FR_EINVAL,
                 "line 1, column 15: 'events$lakes' names no table: the virtual tables of a "
                 "table t are t$changelog, t$lake and t$lake_snapshots");
    expect_error("SELECT nope FROM lk.events$lake", FR_ENOTFOUND,
                 "line 1, column 8: unknown column 'nope'");
    expect_error("SELECT snapshot FROM lk.events$lake_snapshots", FR_ENOTFOUND,
                 "line 1, column 8: unknown column 'snapshot'");
    expect_error("INSERT INTO lk.events$lake VALUES (1, 'x', NULL)", FR_EINVAL,
                 "line 1, column 13: events$lake is a virtual table: only SELECT reads it");
    expect_error("DELETE FROM lk.events$lake_snapshots", FR_EINVAL,
                 "line 1, column 13: events$lake_snapshots is a virtual table: only SELECT "
                 "reads it");
}

static void test_pk_table(void **state)
{
    (void)state;
    run("CREATE TABLE lk.users (id INT PRIMARY KEY NOT ENFORCED, name STRING, n BIGINT) "
        "WITH ('table.datalake.enabled' = 'true', 'bucket.num' = '2')");
    run("INSERT INTO lk.users VALUES (1, 'a', 10), (2, 'b', 20), (3, 'c', 30)");
    int64_t s1 = tier("CALL sys.tier('lk.users')");
    assert_true(s1 >= 0);
    assert_string_equal(sorted("SELECT * FROM lk.users"), "1|a|10\n2|b|20\n3|c|30\n");
    /* After the round: an update, a delete, an insert, a partial update. */
    run("UPDATE lk.users SET n = n + 1 WHERE id = 1");
    run("DELETE FROM lk.users WHERE id = 2");
    run("INSERT INTO lk.users VALUES (4, 'd', 40)");
    run("INSERT INTO lk.users (id, n) VALUES (3, 1)");
    assert_string_equal(sorted("SELECT * FROM lk.users"), "1|a|11\n3|c|1\n4|d|40\n");
    assert_string_equal(sorted("SELECT id, name, n FROM lk.users$lake"),
                        "1|a|10\n2|b|20\n3|c|30\n");
    /* The lake row of key 3 passes the filter; its newer row does not: not returned. */
    assert_string_equal(sorted("SELECT name FROM lk.users WHERE n > 20"), "d\n");
    assert_string_equal(sorted("SELECT n, id FROM lk.users WHERE name IS NOT NULL"),
                        "11|1\n1|3\n40|4\n");
    /* Point lookups read the KV store. */
    expect("SELECT * FROM lk.users WHERE id = 2", "id|name|n\n");
    expect("SELECT n FROM lk.users WHERE id = 1", "n\n11\n");
    expect("EXPLAIN SELECT * FROM lk.users WHERE id = 1",
           "plan\npoint lookup of 1 key on (id): reads the KV store, scans nothing\n"
           "then filter: (id = 1)\n");
    char want[1024];
    snprintf(want, sizeof want,
             "plan\nunion read: the newest lake snapshot merged by key with the changelog of "
             "every bucket after the offsets it records (the log wins, deletes remove)\n"
             "lake snapshot: %lld\nprojection: id, name, n\n", (long long)s1);
    expect("EXPLAIN SELECT * FROM lk.users", want);
    /* A second round: the lake holds the state, with an equality delete. */
    int64_t s2 = tier("CALL sys.tier('lk.users')");
    assert_true(s2 != s1);
    assert_string_equal(sorted("SELECT id, name, n FROM lk.users$lake"),
                        "1|a|11\n3|c|1\n4|d|40\n");
    assert_string_equal(sorted("SELECT * FROM lk.users"), "1|a|11\n3|c|1\n4|d|40\n");
    char text[256];
    snprintf(text, sizeof text, "SELECT added_delete_files >= 1, total_records FROM "
             "lk.users$lake_snapshots WHERE snapshot_id = %lld", (long long)s2);
    const char *got = run(text);
    assert_non_null(strstr(got, "\ntrue|"));
    run("DELETE FROM lk.users WHERE id = 4");
    assert_string_equal(sorted("SELECT * FROM lk.users"), "1|a|11\n3|c|1\n");
    assert_string_equal(sorted("SELECT id FROM lk.users$lake"), "1\n3\n4\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_call),
        cmocka_unit_test(test_log_table),
        cmocka_unit_test(test_pk_table),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
