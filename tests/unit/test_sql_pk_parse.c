/* test_sql_pk_parse.c — the parser's statements for primary-key and partitioned tables:
 * PRIMARY KEY (table and column level), PARTITIONED BY, UPDATE, DELETE, ALTER TABLE
 * ADD/DROP PARTITION, SHOW PARTITIONS, EXPLAIN, virtual table names (t$changelog), and the
 * exact messages of malformed statements. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>

#include "sql/sql_int.h"

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

static sql_stmt *parse_one(const char *text)
{
    sql_script s = {0};
    fr_error err = {0};
    int rc = sql_parse_script(text, strlen(text), arena, &s, &err);
    if (rc < 0) fail_msg("parse of \"%s\" failed: %s", text, err.msg);
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

/* "a, b": the names of a list. */
static const char *names(const sql_ident *ids, int n)
{
    static char out[256];
    size_t used = 0;
    out[0] = '\0';
    for (int i = 0; i < n; i++)
        used += (size_t)snprintf(out + used, sizeof out - used, "%s%s", i ? ", " : "", ids[i].s);
    return out;
}

/* "dt=2026-11-30 region=eu": the values of a partition spec. */
static const char *spec(const sql_partition_spec *ps)
{
    static char out[256];
    size_t used = 0;
    out[0] = '\0';
    for (int i = 0; i < ps->nvalues; i++)
        used += (size_t)snprintf(out + used, sizeof out - used, "%s%s=%s", i ? " " : "",
                                 ps->values[i].key, ps->values[i].value);
    return out;
}

/* ---- CREATE TABLE -------------------------------------------------------------------- */

static void test_create_pk_table(void **state)
{
    (void)state;
    sql_stmt *st = parse_one("CREATE TABLE shop.orders (\n"
                             "  dt STRING, shop_id BIGINT, user_id BIGINT, total INT,\n"
                             "  PRIMARY KEY (dt, shop_id, user_id) NOT ENFORCED\n"
                             ") PARTITIONED BY (dt) WITH ('bucket.num' = '4')");
    assert_int_equal(st->kind, SQL_CREATE_TABLE);
    assert_int_equal(st->ncolumns, 4);
    assert_string_equal(names(st->primary_key, st->nprimary_key), "dt, shop_id, user_id");
    assert_int_equal(st->primary_key_pos.line, 3);
    assert_int_equal(st->primary_key_pos.col, 3);
    assert_string_equal(names(st->partition_keys, st->npartition_keys), "dt");
    assert_int_equal(st->partition_pos.line, 4);
    assert_int_equal(st->partition_pos.col, 3);
    assert_int_equal(st->noptions, 1);

    st = parse_one("CREATE TABLE t (id INT PRIMARY KEY NOT ENFORCED, v STRING)");
    assert_string_equal(names(st->primary_key, st->nprimary_key), "id");
    assert_null(st->partition_keys);
    st = parse_one("CREATE TABLE t (a INT, b INT, CONSTRAINT pk PRIMARY KEY (b, a) NOT ENFORCED)");
    assert_string_equal(names(st->primary_key, st->nprimary_key), "b, a");
    st = parse_one("CREATE TABLE t (a INT, dt DATE, r STRING) PARTITIONED BY (dt, r)");
    assert_null(st->primary_key);
    assert_string_equal(names(st->partition_keys, st->npartition_keys), "dt, r");
    /* Names keep their case (the catalog matches them case-insensitively). */
    st = parse_one("CREATE TABLE t (Id INT, PRIMARY KEY (Id) NOT ENFORCED)");
    assert_string_equal(st->primary_key[0].s, "Id");
}

static void test_create_pk_errors(void **state)
{
    (void)state;
    assert_parse_error("CREATE TABLE t (a INT, PRIMARY KEY (a))", FR_ESYNTAX,
                       "line 1, column 39: expected NOT ENFORCED after PRIMARY KEY (firth does "
                       "not check keys), found ')'");
    assert_parse_error("CREATE TABLE t (a INT PRIMARY KEY NOT ENFORCED, b INT, "
                       "PRIMARY KEY (b) NOT ENFORCED)",
                       FR_ESYNTAX, "line 1, column 56: a table has at most one PRIMARY KEY");
    assert_parse_error("CREATE TABLE t (a INT, PRIMARY KEY () NOT ENFORCED)", FR_ESYNTAX,
                       "line 1, column 37: expected a key column name, found ')'");
    assert_parse_error("CREATE TABLE t (a INT) PARTITIONED (a)", FR_ESYNTAX,
                       "line 1, column 36: expected BY, found '('");
    assert_parse_error("CREATE TABLE t (a INT) WITH ('x' = 'y') PARTITIONED BY (a)", FR_ESYNTAX,
                       "line 1, column 41: expected ';' or the end of the statement, found "
                       "'PARTITIONED'");
}

/* ---- UPDATE and DELETE ----------------------------------------------------------------- */

static void test_update(void **state)
{
    (void)state;
    sql_stmt *st = parse_one("UPDATE shop.orders SET total = total + 1, note = 'x' "
                             "WHERE id = 3 AND dt = '2026-01-01'");
    assert_int_equal(st->kind, SQL_UPDATE);
    assert_false(st->explain);
    assert_string_equal(st->table.db, "shop");
    assert_string_equal(st->table.name, "orders");
    assert_int_equal(st->nsets, 2);
    assert_string_equal(st->sets[0].column.s, "total");
    assert_int_equal(st->sets[0].value->kind, FR_EX_BINARY);
    assert_string_equal(st->sets[1].column.s, "note");
    assert_int_equal(st->sets[1].value->kind, FR_EX_LITERAL);
    assert_non_null(st->where);
    assert_int_equal(st->where_pos.col, 60);
    st = parse_one("update T set `key` = null");
    assert_string_equal(st->table.name, "t");
    assert_string_equal(st->sets[0].column.s, "key");
    assert_null(st->where);
}

static void test_delete(void **state)
{
    (void)state;
    sql_stmt *st = parse_one("DELETE FROM orders WHERE id IN (1, 2)");
    assert_int_equal(st->kind, SQL_DELETE);
    assert_string_equal(st->table.name, "orders");
    assert_int_equal(st->where->kind, FR_EX_IN);
    st = parse_one("delete from db.t");
    assert_null(st->where);
    assert_string_equal(st->table.db, "db");
}

static void test_update_delete_errors(void **state)
{
    (void)state;
    assert_parse_error("UPDATE t WHERE a = 1", FR_ESYNTAX,
                       "line 1, column 10: expected SET, found 'WHERE'");
    assert_parse_error("UPDATE t SET a = 1, a = 2", FR_ESYNTAX,
                       "line 1, column 21: column 'a' is set twice");
    assert_parse_error("UPDATE t SET a 1", FR_ESYNTAX,
                       "line 1, column 16: expected '=' and the column's new value, found '1'");
    assert_parse_error("UPDATE t SET a = 1 LIMIT 3", FR_ESYNTAX,
                       "line 1, column 20: expected ';' or the end of the statement, found "
                       "'LIMIT'");
    assert_parse_error("DELETE t WHERE a = 1", FR_ESYNTAX,
                       "line 1, column 8: expected FROM, found 't'");
    assert_parse_error("DELETE FROM t WHERE", FR_ESYNTAX,
                       "line 1, column 20: expected an expression, found end of input");
}

/* ---- partitions ------------------------------------------------------------------------- */

static void test_alter_partitions(void **state)
{
    (void)state;
    sql_stmt *st = parse_one("ALTER TABLE db.t ADD PARTITION (dt = '2026-11-30', region='eu')");
    assert_int_equal(st->kind, SQL_ADD_PARTITION);
    assert_false(st->if_not_exists);
    assert_int_equal(st->npartitions, 1);
    assert_string_equal(spec(&st->partitions[0]), "dt=2026-11-30 region=eu");
    assert_int_equal(st->partitions[0].pos.col, 22);
    assert_int_equal(st->partitions[0].values[1].pos.col, 52);

    st = parse_one("alter table t add if not exists partition (n = 7) partition (n = -3), "
                   "PARTITION (n = +4)");
    assert_true(st->if_not_exists);
    assert_int_equal(st->npartitions, 3);
    assert_string_equal(spec(&st->partitions[0]), "n=7");
    assert_string_equal(spec(&st->partitions[1]), "n=-3");
    assert_string_equal(spec(&st->partitions[2]), "n=4");

    st = parse_one("ALTER TABLE t DROP IF EXISTS PARTITION (d = DATE '2026-01-05'), "
                   "PARTITION (d = 'it''s')");
    assert_int_equal(st->kind, SQL_DROP_PARTITION);
    assert_true(st->if_exists);
    assert_string_equal(spec(&st->partitions[0]), "d=2026-01-05");
    assert_string_equal(spec(&st->partitions[1]), "d=it's");
}

static void test_show_partitions(void **state)
{
    (void)state;
    sql_stmt *st = parse_one("SHOW PARTITIONS db.t");
    assert_int_equal(st->kind, SQL_SHOW_PARTITIONS);
    assert_string_equal(st->table.name, "t");
    assert_int_equal(st->npartitions, 0);
    st = parse_one("show partitions t partition (dt = '2026-01-01')");
    assert_int_equal(st->npartitions, 1);
    assert_string_equal(spec(&st->partitions[0]), "dt=2026-01-01");
}

static void test_partition_errors(void **state)
{
    (void)state;
    assert_parse_error("ALTER TABLE t ADD COLUMN c INT", FR_ESYNTAX,
                       "line 1, column 19: expected PARTITION (column = value, ...), found "
                       "'COLUMN'");
    assert_parse_error("ALTER TABLE t RENAME TO u", FR_ESYNTAX,
                       "line 1, column 15: expected ADD PARTITION or DROP PARTITION after ALTER "
                       "TABLE name, found 'RENAME'");
    assert_parse_error("ALTER TABLE t ADD PARTITION (dt)", FR_ESYNTAX,
                       "line 1, column 32: expected '=' and the partition column's value, found "
                       "')'");
    assert_parse_error("ALTER TABLE t ADD PARTITION (dt = x)", FR_ESYNTAX,
                       "line 1, column 35: a partition value is a 'string', an integer or DATE "
                       "'yyyy-mm-dd'");
    assert_parse_error("ALTER TABLE t ADD PARTITION (dt = 1.5)", FR_ESYNTAX,
                       "line 1, column 35: a partition value is a 'string', an integer or DATE "
                       "'yyyy-mm-dd'");
    assert_parse_error("ALTER TABLE t ADD PARTITION (a = '1', A = '2')", FR_ESYNTAX,
                       "line 1, column 39: partition column 'A' is given twice");
    assert_parse_error("ALTER TABLE t ADD PARTITION ()", FR_ESYNTAX,
                       "line 1, column 30: expected a partition column name, found ')'");
    assert_parse_error("SHOW PARTITIONS", FR_ESYNTAX,
                       "line 1, column 16: expected a table name, found end of input");
    assert_parse_error("SHOW PARTITION t", FR_ESYNTAX,
                       "line 1, column 6: expected DATABASES, TABLES, PARTITIONS or CREATE TABLE "
                       "after SHOW, found 'PARTITION'");
}

static void test_partition_limit(void **state)
{
    (void)state;
    fr_buf b;
    fr_buf_init(&b);
    fr_buf_printf(&b, NULL, "ALTER TABLE t ADD");
    for (int i = 0; i <= FR_SQL_PARTITIONS_MAX; i++)
        fr_buf_printf(&b, NULL, " PARTITION (n = %d)", i);
    fr_error err = {0};
    assert_int_equal(fr_sql_parse_only((const char *)b.data, b.len, &err), FR_ELIMIT);
    assert_non_null(strstr(err.msg, "more than 1024 partitions in one statement"));
    fr_buf_free(&b);
}

/* ---- EXPLAIN and virtual tables ---------------------------------------------------------- */

static void test_explain(void **state)
{
    (void)state;
    sql_stmt *st = parse_one("EXPLAIN SELECT * FROM t WHERE id = 1");
    assert_int_equal(st->kind, SQL_SELECT);
    assert_true(st->explain);
    st = parse_one("explain update t set a = 1");
    assert_int_equal(st->kind, SQL_UPDATE);
    assert_true(st->explain);
    st = parse_one("EXPLAIN DELETE FROM t");
    assert_int_equal(st->kind, SQL_DELETE);
    assert_true(st->explain);
    st = parse_one("SELECT 1");
    assert_false(st->explain);
    assert_parse_error("EXPLAIN INSERT INTO t VALUES (1)", FR_ESYNTAX,
                       "line 1, column 9: expected SELECT, UPDATE or DELETE after EXPLAIN, found "
                       "'INSERT'");
}

static void test_changelog_names(void **state)
{
    (void)state;
    sql_stmt *st = parse_one("SELECT * FROM shop.orders$changelog WHERE _change_type = '+I'");
    assert_string_equal(st->table.db, "shop");
    assert_string_equal(st->table.name, "orders$changelog");
    st = parse_one("SELECT * FROM `orders$changelog`");
    assert_string_equal(st->table.name, "orders$changelog");
    st = parse_one("SELECT * FROM Orders$Changelog");
    assert_string_equal(st->table.name, "orders$changelog");

    sql_table_name base;
    char buf[64];
    sql_virtual kind;
    fr_error err = {0};
    assert_int_equal(sql_virtual_split(&st->table, &base, buf, sizeof buf, &kind, &err), 0);
    assert_int_equal(kind, SQL_VIRTUAL_CHANGELOG);
    assert_string_equal(base.name, "orders");
    st = parse_one("SELECT * FROM orders");
    assert_int_equal(sql_virtual_split(&st->table, &base, buf, sizeof buf, &kind, &err), 0);
    assert_int_equal(kind, SQL_VIRTUAL_NONE);
    assert_string_equal(base.name, "orders");
    st = parse_one("SELECT * FROM orders$lake2");
    assert_int_equal(sql_virtual_split(&st->table, &base, buf, sizeof buf, &kind, &err),
                     FR_EINVAL);
    assert_string_equal(err.msg, "line 1, column 15: 'orders$lake2' names no table: the virtual "
                                 "tables of a table t are t$changelog, t$lake and "
                                 "t$lake_snapshots");
    st = parse_one("SELECT * FROM `$changelog`");
    assert_int_equal(sql_virtual_split(&st->table, &base, buf, sizeof buf, &kind, &err),
                     FR_EINVAL);
    /* '$' never starts a word. */
    assert_parse_error("SELECT * FROM $changelog", FR_ESYNTAX,
                       "line 1, column 15: unexpected character '$'");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_pk_table),
        cmocka_unit_test(test_create_pk_errors),
        cmocka_unit_test(test_update),
        cmocka_unit_test(test_delete),
        cmocka_unit_test(test_update_delete_errors),
        cmocka_unit_test(test_alter_partitions),
        cmocka_unit_test(test_show_partitions),
        cmocka_unit_test(test_partition_errors),
        cmocka_unit_test(test_partition_limit),
        cmocka_unit_test(test_explain),
        cmocka_unit_test(test_changelog_names),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
