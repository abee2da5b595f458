/* sql_parser.c — the statement grammar: turns a text of ';'-separated statements into
 * sql_stmt trees in an arena, and the module's parse-only entry points.
 *
 *   script := [stmt] (';' [stmt])*
 *   stmt   := CREATE DATABASE [IF NOT EXISTS] name
 *           | CREATE TABLE [IF NOT EXISTS] table '(' element, ... ')' [COMMENT 'x']
 *                  [PARTITIONED BY '(' name, ... ')'] [WITH '(' 'k' = 'v', ... ')']
 *           | DROP DATABASE [IF EXISTS] name [CASCADE | RESTRICT]
 *           | DROP TABLE [IF EXISTS] table
 *           | SHOW DATABASES | SHOW TABLES [FROM | IN name] | SHOW CREATE TABLE table
 *           | DESCRIBE table | DESC table | USE name
 *           | SHOW PARTITIONS table [partition]
 *           | ALTER TABLE table ADD [IF NOT EXISTS] partition [[','] partition]...
 *           | ALTER TABLE table DROP [IF EXISTS] partition [[','] partition]...
 *           | INSERT INTO table ['(' name, ... ')'] VALUES '(' expr, ... ')', ...
 *           | [EXPLAIN] SELECT item, ... [FROM table [WHERE expr]] [LIMIT n]
 *           | [EXPLAIN] UPDATE table SET name = expr, ... [WHERE expr]
 *           | [EXPLAIN] DELETE FROM table [WHERE expr]
 *           | CALL name ['.' name] '(' [expr, ...] ')'
 *   element := name type [NOT NULL | NULL] [PRIMARY KEY NOT ENFORCED] [COMMENT 'x']
 *            | [CONSTRAINT name] PRIMARY KEY '(' name, ... ')' NOT ENFORCED
 *   partition := PARTITION '(' name = value, ... ')'   value: 'text', [-]123 or DATE 'text'
 *
 * A table name may end in a virtual table's suffix ($changelog, $lake, $lake_snapshots):
 * orders$changelog.
 *
 * Nothing here looks at the catalog: names are checked when a statement runs. */
#include <assert.h>
#include <stdio.h>
#include <strings.h>

#include "sql/sql_int.h"

/* Grows an arena array of `size`-byte elements to hold one more (n used, *cap allocated). */
static int grow(sql_parser *P, void **arr, int n, int *cap, size_t size)
{
    if (n < *cap) return 0;
    int ncap = *cap ? *cap * 2 : 4;
    void *bigger = sql_p_alloc(P, size * (size_t)ncap);
    if (!bigger) return P->rc;
    if (n) memcpy(bigger, *arr, size * (size_t)n);
    *arr = bigger;
    *cap = ncap;
    return 0;
}

static int p_if_not_exists(sql_parser *P, bool *out)
{
    *out = false;
    if (!sql_tok_is(&P->cur, "IF")) return 0;
    sql_p_advance(P);
    FR_TRY(sql_p_expect(P, "NOT"));
    FR_TRY(sql_p_expect(P, "EXISTS"));
    *out = true;
    return 0;
}

static int p_if_exists(sql_parser *P, bool *out)
{
    *out = false;
    if (!sql_tok_is(&P->cur, "IF")) return 0;
    sql_p_advance(P);
    FR_TRY(sql_p_expect(P, "EXISTS"));
    *out = true;
    return 0;
}

/* [db.]table, both lower-cased unless quoted. */
static int p_table_name(sql_parser *P, sql_table_name *out)
{
    sql_ident a;
    out->pos = P->cur.pos;
    FR_TRY(sql_p_name(P, "a table name", true, &a));
    if (sql_p_accept_tok(P, SQL_T_DOT)) {
        sql_ident b;
        FR_TRY(sql_p_name(P, "a table name after the '.'", true, &b));
        out->db = a.s;
        out->name = b.s;
    } else {
        out->db = NULL;
        out->name = a.s;
    }
    return 0;
}

/* '(' name, ... ')' */
static int p_name_list(sql_parser *P, const char *what, sql_ident **out, int *n)
{
    FR_TRY(sql_p_expect_tok(P, SQL_T_LPAREN, "'('"));
    int cap = 0;
    *n = 0;
    *out = NULL;
    do {
        FR_TRY(grow(P, (void **)out, *n, &cap, sizeof **out));
        if (*n >= FR_SCHEMA_COLUMNS_MAX)
            return sql_p_fail(P, FR_ELIMIT, P->cur.pos, "more than %d names in a list",
                              FR_SCHEMA_COLUMNS_MAX);
        FR_TRY(sql_p_name(P, what, false, &(*out)[(*n)++]));
    } while (sql_p_accept_tok(P, SQL_T_COMMA));
    return sql_p_expect_tok(P, SQL_T_RPAREN, "',' or ')'");
}

static int p_string_value(sql_parser *P, const char *what, const char **out)
{
    if (P->cur.kind != SQL_T_STRING) return sql_p_expected(P, what);
    size_t n;
    FR_TRY(sql_p_string(P, &P->cur, out, &n));
    if (memchr(*out, '\0', n))
        return sql_p_fail(P, FR_ESYNTAX, P->cur.pos, "%s may not hold a NUL byte", what);
    sql_p_advance(P);
    return 0;
}

/* The text of a partition value: 'text', an integer with an optional sign, or DATE 'text'
 * (the engine parses it as the column's type). */
static int p_partition_value(sql_parser *P, const char **out)
{
    if (sql_tok_is(&P->cur, "DATE") && sql_p_peek2(P)->kind == SQL_T_STRING) sql_p_advance(P);
    if (P->cur.kind == SQL_T_STRING) return p_string_value(P, "a partition value", out);
    bool minus = false;
    sql_pos pos = P->cur.pos;
    if (P->cur.kind == SQL_T_MINUS || P->cur.kind == SQL_T_PLUS) {
        minus = P->cur.kind == SQL_T_MINUS;
        sql_p_advance(P);
    }
    if (P->cur.kind != SQL_T_INTEGER)
        return sql_p_fail(P, FR_ESYNTAX, pos,
                          "a partition value is a 'string', an integer or DATE 'yyyy-mm-dd'");
    char *text = sql_p_alloc(P, P->cur.n + 2);
    if (!text) return P->rc;
    text[0] = '-';
    memcpy(text + minus, P->cur.p, P->cur.n);
    text[P->cur.n + minus] = '\0';
    *out = text;
    sql_p_advance(P);
    return 0;
}

/* PARTITION '(' name '=' value, ... ')' */
static int p_partition_spec(sql_parser *P, sql_partition_spec *out)
{
    out->pos = P->cur.pos;
    FR_TRY(sql_p_expect(P, "PARTITION"));
    FR_TRY(sql_p_expect_tok(P, SQL_T_LPAREN, "'(' and the partition's values"));
    int cap = 0;
    do {
        if (out->nvalues >= FR_SCHEMA_COLUMNS_MAX)
            return sql_p_fail(P, FR_ELIMIT, P->cur.pos, "a partition has at most %d values",
                              FR_SCHEMA_COLUMNS_MAX);
        FR_TRY(grow(P, (void **)&out->values, out->nvalues, &cap, sizeof *out->values));
        sql_option *v = &out->values[out->nvalues];
        sql_ident col;
        v->pos = P->cur.pos;
        FR_TRY(sql_p_name(P, "a partition column name", false, &col));
        v->key = col.s;
        FR_TRY(sql_p_expect_tok(P, SQL_T_EQ, "'=' and the partition column's value"));
        FR_TRY(p_partition_value(P, &v->value));
        for (int i = 0; i < out->nvalues; i++)
            if (strcasecmp(out->values[i].key, v->key) == 0)
                return sql_p_fail(P, FR_ESYNTAX, v->pos, "partition column '%s' is given twice",
                                  v->key);
        out->nvalues++;
    } while (sql_p_accept_tok(P, SQL_T_COMMA));
    return sql_p_expect_tok(P, SQL_T_RPAREN, "',' or ')'");
}

/* ---- CREATE ---------------------------------------------------------------------------- */

/* PRIMARY KEY ... NOT ENFORCED, with the key columns already known. */
static int p_not_enforced(sql_parser *P)
{
    if (!sql_tok_is(&P->cur, "NOT"))
        return sql_p_expected(P, "NOT ENFORCED after PRIMARY KEY (firth does not check keys)");
    sql_p_advance(P);
    return sql_p_expect(P, "ENFORCED");
}

static int set_primary_key(sql_parser *P, sql_stmt *st, sql_pos pos, sql_ident *cols, int n)
{
    if (st->primary_key)
        return sql_p_fail(P, FR_ESYNTAX, pos, "a table has at most one PRIMARY KEY");
    st->primary_key = cols;
    st->nprimary_key = n;
    st->primary_key_pos = pos;
    return 0;
}

static int p_column_def(sql_parser *P, sql_stmt *st, sql_column_def *c)
{
    FR_TRY(sql_p_name(P, "a column name", false, &c->name));
    c->type_pos = P->cur.pos;
    FR_TRY(sql_p_type(P, &c->type));
    for (;;) {
        sql_pos pos = P->cur.pos;
        if (sql_tok_is(&P->cur, "NOT") && sql_tok_is(sql_p_peek2(P), "NULL")) {
            sql_p_advance(P);
            sql_p_advance(P);
            c->type.nullable = false;
        } else if (sql_p_accept(P, "NULL")) {
            c->type.nullable = true;
        } else if (sql_p_accept(P, "PRIMARY")) {
            FR_TRY(sql_p_expect(P, "KEY"));
            FR_TRY(p_not_enforced(P));
            sql_ident *key = sql_p_alloc(P, sizeof *key);
            if (!key) return P->rc;
            *key = c->name;
            FR_TRY(set_primary_key(P, st, pos, key, 1));
        } else if (sql_p_accept(P, "COMMENT")) {
            FR_TRY(p_string_value(P, "a comment string", &c->comment));
        } else {
            return 0;
        }
    }
}

static int p_table_element(sql_parser *P, sql_stmt *st, int *cap)
{
    sql_pos pos = P->cur.pos;
    if (sql_p_accept(P, "CONSTRAINT")) {
        sql_ident ignored;
        FR_TRY(sql_p_name(P, "a constraint name", false, &ignored));
        if (!sql_tok_is(&P->cur, "PRIMARY")) return sql_p_expected(P, "PRIMARY KEY");
    }
    if (sql_tok_is(&P->cur, "PRIMARY") && sql_tok_is(sql_p_peek2(P), "KEY")) {
        sql_p_advance(P);
        sql_p_advance(P);
        sql_ident *cols;
        int n;
        FR_TRY(p_name_list(P, "a key column name", &cols, &n));
        FR_TRY(p_not_enforced(P));
        return set_primary_key(P, st, pos, cols, n);
    }
    if (st->ncolumns >= FR_SCHEMA_COLUMNS_MAX)
        return sql_p_fail(P, FR_ELIMIT, pos, "a table has at most %d columns",
                          FR_SCHEMA_COLUMNS_MAX);
    FR_TRY(grow(P, (void **)&st->columns, st->ncolumns, cap, sizeof *st->columns));
    return p_column_def(P, st, &st->columns[st->ncolumns++]);
}

static int p_options(sql_parser *P, sql_stmt *st)
{
    FR_TRY(sql_p_expect_tok(P, SQL_T_LPAREN, "'(' after WITH"));
    int cap = 0;
    do {
        FR_TRY(grow(P, (void **)&st->options, st->noptions, &cap, sizeof *st->options));
        sql_option *o = &st->options[st->noptions];
        o->pos = P->cur.pos;
        FR_TRY(p_string_value(P, "an option name in quotes ('bucket.num')", &o->key));
        FR_TRY(sql_p_expect_tok(P, SQL_T_EQ, "'='"));
        FR_TRY(p_string_value(P, "an option value in quotes ('4')", &o->value));
        for (int i = 0; i < st->noptions; i++)
            if (strcmp(st->options[i].key, o->key) == 0)
                return sql_p_fail(P, FR_ESYNTAX, o->pos, "option '%s' is given twice", o->key);
        st->noptions++;
    } while (sql_p_accept_tok(P, SQL_T_COMMA));
    return sql_p_expect_tok(P, SQL_T_RPAREN, "',' or ')'");
}

static int p_create_table(sql_parser *P, sql_stmt *st)
{
    st->kind = SQL_CREATE_TABLE;
    FR_TRY(p_if_not_exists(P, &st->if_not_exists));
    FR_TRY(p_table_name(P, &st->table));
    FR_TRY(sql_p_expect_tok(P, SQL_T_LPAREN, "'(' and the columns"));
    int cap = 0;
    do {
        FR_TRY(p_table_element(P, st, &cap));
    } while (sql_p_accept_tok(P, SQL_T_COMMA));
    FR_TRY(sql_p_expect_tok(P, SQL_T_RPAREN, "',' or ')'"));
    if (st->ncolumns == 0)
        return sql_p_fail(P, FR_ESYNTAX, st->table.pos, "a table needs at least one column");
    if (sql_p_accept(P, "COMMENT")) FR_TRY(p_string_value(P, "a comment string", &st->comment));
    if (sql_tok_is(&P->cur, "PARTITIONED")) {
        st->partition_pos = P->cur.pos;
        sql_p_advance(P);
        FR_TRY(sql_p_expect(P, "BY"));
        FR_TRY(p_name_list(P, "a partition column name", &st->partition_keys,
                           &st->npartition_keys));
    }
    if (sql_p_accept(P, "WITH")) FR_TRY(p_options(P, st));
    return 0;
}

static int p_create(sql_parser *P, sql_stmt *st)
{
    if (sql_p_accept(P, "DATABASE")) {
        st->kind = SQL_CREATE_DATABASE;
        FR_TRY(p_if_not_exists(P, &st->if_not_exists));
        return sql_p_name(P, "a database name", true, &st->db);
    }
    if (sql_p_accept(P, "TABLE")) return p_create_table(P, st);
    return sql_p_expected(P, "DATABASE or TABLE after CREATE");
}

/* ---- DROP, SHOW, DESCRIBE, USE --------------------------------------------------------- */

static int p_drop(sql_parser *P, sql_stmt *st)
{
    if (sql_p_accept(P, "DATABASE")) {
        st->kind = SQL_DROP_DATABASE;
        FR_TRY(p_if_exists(P, &st->if_exists));
        FR_TRY(sql_p_name(P, "a database name", true, &st->db));
        if (sql_p_accept(P, "CASCADE"))
            st->cascade = true;
        else
            sql_p_accept(P, "RESTRICT");
        return 0;
    }
    if (sql_p_accept(P, "TABLE")) {
        st->kind = SQL_DROP_TABLE;
        FR_TRY(p_if_exists(P, &st->if_exists));
        return p_table_name(P, &st->table);
    }
    return sql_p_expected(P, "DATABASE or TABLE after DROP");
}

static int p_show(sql_parser *P, sql_stmt *st)
{
    if (sql_p_accept(P, "DATABASES")) {
        st->kind = SQL_SHOW_DATABASES;
        return 0;
    }
    if (sql_p_accept(P, "TABLES")) {
        st->kind = SQL_SHOW_TABLES;
        if (sql_p_accept(P, "FROM") || sql_p_accept(P, "IN"))
            return sql_p_name(P, "a database name", true, &st->db);
        return 0;
    }
    if (sql_p_accept(P, "CREATE")) {
        st->kind = SQL_SHOW_CREATE_TABLE;
        FR_TRY(sql_p_expect(P, "TABLE"));
        return p_table_name(P, &st->table);
    }
    if (sql_p_accept(P, "PARTITIONS")) {
        st->kind = SQL_SHOW_PARTITIONS;
        FR_TRY(p_table_name(P, &st->table));
        if (!sql_tok_is(&P->cur, "PARTITION")) return 0;
        st->partitions = sql_p_alloc(P, sizeof *st->partitions);
        if (!st->partitions) return P->rc;
        st->npartitions = 1;
        return p_partition_spec(P, st->partitions);
    }
    return sql_p_expected(P, "DATABASES, TABLES, PARTITIONS or CREATE TABLE after SHOW");
}

/* ---- ALTER TABLE ... ADD / DROP PARTITION ---------------------------------------------- */

/* One ALTER TABLE names one or more partitions, separated by blanks or commas. */
static int p_partition_list(sql_parser *P, sql_stmt *st)
{
    int cap = 0;
    do {
        if (st->npartitions >= FR_SQL_PARTITIONS_MAX)
            return sql_p_fail(P, FR_ELIMIT, P->cur.pos,
                              "more than %d partitions in one statement", FR_SQL_PARTITIONS_MAX);
        FR_TRY(grow(P, (void **)&st->partitions, st->npartitions, &cap, sizeof *st->partitions));
        st->partitions[st->npartitions] = (sql_partition_spec){0};
        FR_TRY(p_partition_spec(P, &st->partitions[st->npartitions++]));
        sql_p_accept_tok(P, SQL_T_COMMA);
    } while (sql_tok_is(&P->cur, "PARTITION"));
    return 0;
}

static int p_alter(sql_parser *P, sql_stmt *st)
{
    FR_TRY(sql_p_expect(P, "TABLE"));
    FR_TRY(p_table_name(P, &st->table));
    if (sql_p_accept(P, "ADD")) {
        st->kind = SQL_ADD_PARTITION;
        FR_TRY(p_if_not_exists(P, &st->if_not_exists));
    } else if (sql_p_accept(P, "DROP")) {
        st->kind = SQL_DROP_PARTITION;
        FR_TRY(p_if_exists(P, &st->if_exists));
    } else {
        return sql_p_expected(P, "ADD PARTITION or DROP PARTITION after ALTER TABLE name");
    }
    if (!sql_tok_is(&P->cur, "PARTITION"))
        return sql_p_expected(P, "PARTITION (column = value, ...)");
    return p_partition_list(P, st);
}

/* ---- INSERT ---------------------------------------------------------------------------- */

static int p_values_row(sql_parser *P, sql_values_row *row)
{
    row->pos = P->cur.pos;
    FR_TRY(sql_p_expect_tok(P, SQL_T_LPAREN, "'(' and a row of values"));
    int cap = 0;
    do {
        if (row->nvalues >= FR_SCHEMA_COLUMNS_MAX)
            return sql_p_fail(P, FR_ELIMIT, P->cur.pos, "a row has at most %d values",
                              FR_SCHEMA_COLUMNS_MAX);
        FR_TRY(grow(P, (void **)&row->values, row->nvalues, &cap, sizeof *row->values));
        FR_TRY(sql_p_expr(P, &row->values[row->nvalues++]));
    } while (sql_p_accept_tok(P, SQL_T_COMMA));
    return sql_p_expect_tok(P, SQL_T_RPAREN, "',' or ')'");
}

static int p_select(sql_parser *P, sql_stmt *st);

static int p_insert(sql_parser *P, sql_stmt *st)
{
    st->kind = SQL_INSERT;
    FR_TRY(sql_p_expect(P, "INTO"));
    FR_TRY(p_table_name(P, &st->table));
    if (P->cur.kind == SQL_T_LPAREN)
        FR_TRY(p_name_list(P, "a column name", &st->insert_columns, &st->ninsert_columns));
    if (sql_tok_is(&P->cur, "SELECT")) {
        st->query = sql_p_alloc(P, sizeof *st->query);
        if (!st->query) return P->rc;
        st->query->pos = P->cur.pos;
        sql_p_advance(P);
        return p_select(P, st->query);
    }
    if (!sql_tok_is(&P->cur, "VALUES")) return sql_p_expected(P, "VALUES or SELECT");
    sql_p_advance(P);
    int cap = 0;
    do {
        if (st->nrows >= FR_SQL_VALUES_ROWS_MAX)
            return sql_p_fail(P, FR_ELIMIT, P->cur.pos,
                              "more than %d rows in one VALUES list; split the INSERT",
                              FR_SQL_VALUES_ROWS_MAX);
        FR_TRY(grow(P, (void **)&st->rows, st->nrows, &cap, sizeof *st->rows));
        st->rows[st->nrows] = (sql_values_row){0};
        FR_TRY(p_values_row(P, &st->rows[st->nrows++]));
    } while (sql_p_accept_tok(P, SQL_T_COMMA));
    return 0;
}

/* ---- SELECT ---------------------------------------------------------------------------- */

/* The item's text with runs of blanks outside quotes turned into one space. */
static const char *item_text(sql_parser *P, size_t start, size_t end)
{
    const char *src = P->lx.text + start;
    size_t n = end - start;
    char *out = sql_p_alloc(P, n + 1);
    if (!out) return NULL;
    size_t k = 0;
    char quote = 0;
    for (size_t i = 0; i < n; i++) {
        char c = src[i];
        bool blank = c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
        if (quote) {
            if (c == quote) quote = 0;
        } else if (c == '\'' || c == '`') {
            quote = c;
        } else if (blank) {
            if (k > 0 && out[k - 1] != ' ') out[k++] = ' ';
            continue;
        }
        /* Control characters inside quotes ('a<newline>b') cannot be in a column name. */
        out[k++] = (unsigned char)c < 0x20 || c == 0x7f ? '?' : c;
    }
    while (k > 0 && out[k - 1] == ' ') k--;
    out[k] = '\0';
    return out;
}

static int p_select_item(sql_parser *P, sql_select_item *it)
{
    it->pos = P->cur.pos;
    if (sql_p_accept_tok(P, SQL_T_STAR)) return 0;
    size_t start = P->cur.off;
    FR_TRY(sql_p_expr(P, &it->expr));
    it->text = item_text(P, start, P->prev_end);
    if (!it->text) return P->rc;
    sql_ident alias;
    if (sql_p_accept(P, "AS")) {
        FR_TRY(sql_p_name(P, "a column alias", false, &alias));
        it->alias = alias.s;
    } else if (P->cur.kind == SQL_T_QIDENT ||
               (P->cur.kind == SQL_T_IDENT && !fr_expr_word_reserved(P->cur.p, P->cur.n))) {
        FR_TRY(sql_p_name(P, "a column alias", false, &alias));
        it->alias = alias.s;
    }
    return 0;
}

static int p_limit(sql_parser *P, sql_stmt *st)
{
    st->limit_pos = P->cur.pos;
    if (P->cur.kind != SQL_T_INTEGER) return sql_p_expected(P, "a row count after LIMIT");
    int64_t v = 0;
    for (size_t i = 0; i < P->cur.n; i++) {
        if (v > (INT64_MAX - 9) / 10)
            return sql_p_fail(P, FR_ERANGE, P->cur.pos, "LIMIT is too large");
        v = v * 10 + (P->cur.p[i] - '0');
    }
    st->limit = v;
    sql_p_advance(P);
    return 0;
}

/* GROUP BY expr, ... */
static int p_group_by(sql_parser *P, sql_stmt *st)
{
    int cap = 0;
    do {
        if (st->ngroup_by >= FR_SCHEMA_COLUMNS_MAX)
            return sql_p_fail(P, FR_ELIMIT, P->cur.pos, "GROUP BY takes at most %d expressions",
                              FR_SCHEMA_COLUMNS_MAX);
        FR_TRY(grow(P, (void **)&st->group_by, st->ngroup_by, &cap, sizeof *st->group_by));
        FR_TRY(sql_p_expr(P, &st->group_by[st->ngroup_by++]));
    } while (sql_p_accept_tok(P, SQL_T_COMMA));
    return 0;
}

/* ORDER BY expr [ASC|DESC] [NULLS FIRST|LAST], ... */
static int p_order_by(sql_parser *P, sql_stmt *st)
{
    int cap = 0;
    do {
        if (st->norder_by >= FR_SCHEMA_COLUMNS_MAX)
            return sql_p_fail(P, FR_ELIMIT, P->cur.pos, "ORDER BY takes at most %d keys",
                              FR_SCHEMA_COLUMNS_MAX);
        FR_TRY(grow(P, (void **)&st->order_by, st->norder_by, &cap, sizeof *st->order_by));
        sql_order_item *o = &st->order_by[st->norder_by++];
        *o = (sql_order_item){.pos = P->cur.pos};
        FR_TRY(sql_p_expr(P, &o->expr));
        if (sql_p_accept(P, "DESC")) o->desc = true;
        else sql_p_accept(P, "ASC");
        o->nulls_first = o->desc;
        if (sql_p_accept(P, "NULLS")) {
            if (sql_p_accept(P, "FIRST")) o->nulls_first = true;
            else if (sql_p_accept(P, "LAST")) o->nulls_first = false;
            else return sql_p_expected(P, "FIRST or LAST after NULLS");
        }
    } while (sql_p_accept_tok(P, SQL_T_COMMA));
    return 0;
}

/* What may follow the table (or the items, without FROM): GROUP BY, HAVING, ORDER BY,
 * LIMIT, in that order. */
static int p_select_tail(sql_parser *P, sql_stmt *st)
{
    if (sql_p_accept(P, "GROUP")) {
        FR_TRY(sql_p_expect(P, "BY"));
        FR_TRY(p_group_by(P, st));
    }
    if (sql_p_accept(P, "HAVING")) {
        st->having_pos = P->cur.pos;
        FR_TRY(sql_p_expr(P, &st->having));
    }
    if (sql_p_accept(P, "ORDER")) {
        FR_TRY(sql_p_expect(P, "BY"));
        FR_TRY(p_order_by(P, st));
    }
    if (sql_p_accept(P, "LIMIT")) FR_TRY(p_limit(P, st));
    return 0;
}

static int p_select(sql_parser *P, sql_stmt *st)
{
    st->kind = SQL_SELECT;
    st->limit = -1;
    if (sql_p_accept(P, "DISTINCT")) st->distinct = true;
    else sql_p_accept(P, "ALL");
    int cap = 0;
    do {
        if (st->nitems >= FR_SCHEMA_COLUMNS_MAX)
            return sql_p_fail(P, FR_ELIMIT, P->cur.pos, "a SELECT list has at most %d items",
                              FR_SCHEMA_COLUMNS_MAX);
        FR_TRY(grow(P, (void **)&st->items, st->nitems, &cap, sizeof *st->items));
        st->items[st->nitems] = (sql_select_item){0};
        FR_TRY(p_select_item(P, &st->items[st->nitems++]));
    } while (sql_p_accept_tok(P, SQL_T_COMMA));
    if (sql_p_accept(P, "FROM")) {
        st->has_from = true;
        FR_TRY(p_table_name(P, &st->table));
        if (sql_p_accept(P, "WHERE")) {
            st->where_pos = P->cur.pos;
            FR_TRY(sql_p_expr(P, &st->where));
        }
    } else {
        for (int i = 0; i < st->nitems; i++)
            if (!st->items[i].expr)
                return sql_p_fail(P, FR_ESYNTAX, st->items[i].pos, "SELECT * needs a FROM clause");
        if (sql_tok_is(&P->cur, "WHERE"))
            return sql_p_fail(P, FR_ESYNTAX, P->cur.pos, "WHERE needs a FROM clause");
    }
    return p_select_tail(P, st);
}

/* ---- UPDATE and DELETE ------------------------------------------------------------------ */

static int p_where(sql_parser *P, sql_stmt *st)
{
    if (!sql_p_accept(P, "WHERE")) return 0;
    st->where_pos = P->cur.pos;
    return sql_p_expr(P, &st->where);
}

static int p_update(sql_parser *P, sql_stmt *st)
{
    st->kind = SQL_UPDATE;
    FR_TRY(p_table_name(P, &st->table));
    FR_TRY(sql_p_expect(P, "SET"));
    int cap = 0;
    do {
        if (st->nsets >= FR_SCHEMA_COLUMNS_MAX)
            return sql_p_fail(P, FR_ELIMIT, P->cur.pos, "a SET list has at most %d columns",
                              FR_SCHEMA_COLUMNS_MAX);
        FR_TRY(grow(P, (void **)&st->sets, st->nsets, &cap, sizeof *st->sets));
        sql_assignment *a = &st->sets[st->nsets];
        FR_TRY(sql_p_name(P, "a column name", false, &a->column));
        FR_TRY(sql_p_expect_tok(P, SQL_T_EQ, "'=' and the column's new value"));
        FR_TRY(sql_p_expr(P, &a->value));
        for (int i = 0; i < st->nsets; i++)
            if (strcasecmp(st->sets[i].column.s, a->column.s) == 0)
                return sql_p_fail(P, FR_ESYNTAX, a->column.pos, "column '%s' is set twice",
                                  a->column.s);
        st->nsets++;
    } while (sql_p_accept_tok(P, SQL_T_COMMA));
    return p_where(P, st);
}

static int p_delete(sql_parser *P, sql_stmt *st)
{
    st->kind = SQL_DELETE;
    FR_TRY(sql_p_expect(P, "FROM"));
    FR_TRY(p_table_name(P, &st->table));
    return p_where(P, st);
}

/* ---- CALL ------------------------------------------------------------------------------ */

#define SQL_CALL_ARGS_MAX 64

/* CALL [namespace.]procedure '(' [expr, ...] ')' */
static int p_call(sql_parser *P, sql_stmt *st)
{
    st->kind = SQL_CALL;
    st->procedure_pos = P->cur.pos;
    sql_ident a, b = {0};
    FR_TRY(sql_p_name(P, "a procedure name (sys.tier)", true, &a));
    if (sql_p_accept_tok(P, SQL_T_DOT))
        FR_TRY(sql_p_name(P, "a procedure name after the '.'", true, &b));
    size_t na = strlen(a.s), nb = b.s ? strlen(b.s) : 0;
    char *name = sql_p_alloc(P, na + nb + 2);
    if (!name) return P->rc;
    memcpy(name, a.s, na);
    if (b.s) {
        name[na] = '.';
        memcpy(name + na + 1, b.s, nb);
    }
    st->procedure = name;
    FR_TRY(sql_p_expect_tok(P, SQL_T_LPAREN, "'(' and the procedure's arguments"));
    if (sql_p_accept_tok(P, SQL_T_RPAREN)) return 0;
    int cap = 0;
    do {
        if (st->nargs >= SQL_CALL_ARGS_MAX)
            return sql_p_fail(P, FR_ELIMIT, P->cur.pos, "a CALL has at most %d arguments",
                              SQL_CALL_ARGS_MAX);
        FR_TRY(grow(P, (void **)&st->args, st->nargs, &cap, sizeof *st->args));
        FR_TRY(sql_p_expr(P, &st->args[st->nargs++]));
    } while (sql_p_accept_tok(P, SQL_T_COMMA));
    return sql_p_expect_tok(P, SQL_T_RPAREN, "',' or ')'");
}

/* ---- statements and scripts ------------------------------------------------------------ */

static int p_statement(sql_parser *P, sql_stmt **out)
{
    sql_stmt *st = sql_p_alloc(P, sizeof *st);
    if (!st) return P->rc;
    st->pos = P->cur.pos;
    st->limit = -1;
    *out = st;
    if (sql_p_accept(P, "CREATE")) return p_create(P, st);
    if (sql_p_accept(P, "DROP")) return p_drop(P, st);
    if (sql_p_accept(P, "SHOW")) return p_show(P, st);
    if (sql_p_accept(P, "DESCRIBE") || sql_p_accept(P, "DESC")) {
        st->kind = SQL_DESCRIBE;
        return p_table_name(P, &st->table);
    }
    if (sql_p_accept(P, "USE")) {
        st->kind = SQL_USE;
        return sql_p_name(P, "a database name", true, &st->db);
    }
    if (sql_p_accept(P, "INSERT")) return p_insert(P, st);
    if (sql_p_accept(P, "ALTER")) return p_alter(P, st);
    if (sql_p_accept(P, "CALL")) return p_call(P, st);
    if (sql_p_accept(P, "EXPLAIN")) {
        st->explain = true;
        if (sql_p_accept(P, "SELECT")) return p_select(P, st);
        if (sql_p_accept(P, "UPDATE")) return p_update(P, st);
        if (sql_p_accept(P, "DELETE")) return p_delete(P, st);
        return sql_p_expected(P, "SELECT, UPDATE or DELETE after EXPLAIN");
    }
    if (sql_p_accept(P, "SELECT")) return p_select(P, st);
    if (sql_p_accept(P, "UPDATE")) return p_update(P, st);
    if (sql_p_accept(P, "DELETE")) return p_delete(P, st);
    return sql_p_expected(P, "a statement (SELECT, INSERT, UPDATE, DELETE, CREATE, ALTER, DROP, "
                             "SHOW, DESCRIBE, USE, CALL)");
}

static int check_text(const char *text, size_t len, fr_error *err)
{
    if (len > FR_SQL_TEXT_BYTES_MAX)
        return fr_fail(err, FR_ELIMIT, "line 1, column 1: SQL text of %zu bytes exceeds the "
                       "%d-byte limit", len, FR_SQL_TEXT_BYTES_MAX);
    assert(text || len == 0);
    return 0;
}

int sql_parse_script(const char *text, size_t len, fr_arena *arena, sql_script *out,
                     fr_error *err)
{
    FR_TRY(check_text(text, len, err));
    sql_parser P;
    sql_p_init(&P, text ? text : "", len, arena, err);
    out->stmts = NULL;
    out->nstmts = 0;
    int cap = 0;
    for (;;) {
        while (sql_p_accept_tok(&P, SQL_T_SEMI)) {
        }
        if (P.cur.kind == SQL_T_EOF) break;
        if (grow(&P, (void **)&out->stmts, out->nstmts, &cap, sizeof *out->stmts) < 0) break;
        if (p_statement(&P, &out->stmts[out->nstmts++]) < 0) break;
        if (P.cur.kind != SQL_T_SEMI && P.cur.kind != SQL_T_EOF) {
            sql_p_expected(&P, "';' or the end of the statement");
            break;
        }
    }
    return P.rc;
}

int sql_parse_expression(const char *text, size_t len, fr_arena *arena, fr_expr **out,
                         fr_error *err)
{
    FR_TRY(check_text(text, len, err));
    sql_parser P;
    sql_p_init(&P, text ? text : "", len, arena, err);
    if (sql_p_expr(&P, out) < 0) return P.rc;
    if (P.cur.kind != SQL_T_EOF) sql_p_expected(&P, "the end of the expression");
    return P.rc;
}

int fr_sql_parse_only(const char *text, size_t len, fr_error *err)
{
    fr_arena *arena = fr_arena_new(64 << 10);
    if (!arena) return fr_fail(err, FR_ENOMEM, "out of memory for the SQL parser");
    sql_script script;
    int rc = sql_parse_script(text, len, arena, &script, err);
    fr_arena_free(arena);
    return rc;
}
