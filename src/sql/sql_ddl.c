/* sql_ddl.c — statements about the catalog: CREATE/DROP DATABASE and TABLE (with PRIMARY
 * KEY and PARTITIONED BY), SHOW DATABASES, SHOW TABLES, SHOW CREATE TABLE, DESCRIBE and
 * USE; the partition statements are in sql_partition.c. Each runs through engine.h
 * and tells the sink what it did: a message, or a small result of rows.
 *
 * Invariant: the session's current database changes only by a USE of a database that
 * exists at that moment. */
#include <ctype.h>
#include <stdio.h>

#include "sql/sql_int.h"

/* ---- small results --------------------------------------------------------------------- */

int sql_emit_result(const fr_sql_sink *sink, const fr_schema *schema, fr_builder *bld,
                    fr_error *err)
{
    fr_batch *b = NULL;
    FR_TRY(fr_builder_finish(bld, &b, err));
    int rc = sql_sink_begin(sink, schema, err);
    if (rc != 0) {
        fr_batch_free(b);
        return rc;
    }
    FR_TRY(sql_sink_rows(sink, b, err));
    return sql_sink_end(sink, NULL, err);
}

static int new_result(const fr_field *fields, int n, fr_schema **schema, fr_builder **bld,
                      fr_error *err)
{
    FR_TRY(fr_schema_new(fields, n, 0, schema, err));
    int rc = fr_builder_new(*schema, bld, err);
    if (rc < 0) {
        fr_schema_free(*schema);
        *schema = NULL;
    }
    return rc;
}

static fr_field string_field(const char *name, bool nullable)
{
    fr_field f = {.name = (char *)name, .type = fr_type_of(FR_T_STRING)};
    f.type.nullable = nullable;
    return f;
}

/* One STRING column holding names. */
int sql_emit_names(const fr_sql_sink *sink, const char *column, char **names, int n,
                   fr_error *err)
{
    fr_field f = string_field(column, false);
    fr_schema *schema = NULL;
    fr_builder *bld = NULL;
    int rc;
    FR_GOTO(new_result(&f, 1, &schema, &bld, err));
    for (int i = 0; i < n; i++)
        FR_GOTO(fr_builder_append_bytes(bld, 0, names[i], strlen(names[i]), err));
    rc = sql_emit_result(sink, schema, bld, err);
fail:
    fr_builder_free(bld);
    fr_schema_free(schema);
    return rc;
}

int sql_end_message(const fr_sql_sink *sink, fr_error *err, const char *fmt, ...)
{
    char msg[2 * FR_NAME_BYTES_MAX + 128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return sql_sink_end(sink, msg, err);
}

/* ---- databases ------------------------------------------------------------------------- */

static int exec_create_database(fr_sql_session *s, const sql_stmt *st, const fr_sql_sink *sink,
                                fr_error *err)
{
    const char *db = st->db.s;
    bool existed = st->if_not_exists && sql_database_exists(s, db);
    if (fr_engine_create_database(s->engine, db, st->if_not_exists, err) < 0)
        return sql_wrap_at(err, st->db.pos);
    if (existed) return sql_end_message(sink, err, "database %s already exists", db);
    return sql_end_message(sink, err, "database %s created", db);
}

static int exec_drop_database(fr_sql_session *s, const sql_stmt *st, const fr_sql_sink *sink,
                              fr_error *err)
{
    const char *db = st->db.s;
    bool missing = st->if_exists && !sql_database_exists(s, db);
    if (fr_engine_drop_database(s->engine, db, st->if_exists, st->cascade, err) < 0)
        return sql_wrap_at(err, st->db.pos);
    if (missing) return sql_end_message(sink, err, "database %s does not exist", db);
    return sql_end_message(sink, err, "database %s dropped", db);
}

static int exec_use(fr_sql_session *s, const sql_stmt *st, const fr_sql_sink *sink,
                    fr_error *err)
{
    const char *db = st->db.s;
    if (!sql_database_exists(s, db))
        return sql_fail_at(err, FR_ENOTFOUND, st->db.pos, "database '%s' does not exist", db);
    snprintf(s->database, sizeof s->database, "%s", db);
    return sql_end_message(sink, err, "database changed to %s", db);
}

static int exec_show_databases(fr_sql_session *s, const sql_stmt *st, const fr_sql_sink *sink,
                               fr_error *err)
{
    char **names = NULL;
    int n = 0;
    if (fr_engine_list_databases(s->engine, &names, &n, err) < 0) return sql_wrap_at(err, st->pos);
    int rc = sql_emit_names(sink, "database name", names, n, err);
    fr_names_free(names, n);
    return rc;
}

static int exec_show_tables(fr_sql_session *s, const sql_stmt *st, const fr_sql_sink *sink,
                            fr_error *err)
{
    const char *db = st->db.s ? st->db.s : s->database;
    sql_pos pos = st->db.s ? st->db.pos : st->pos;
    char **names = NULL;
    int n = 0;
    int rc = fr_engine_list_tables(s->engine, db, &names, &n, err);
    if (rc == FR_ENOTFOUND)
        return sql_fail_at(err, rc, pos, "database '%s' does not exist%s", db,
                           st->db.s ? "" : "; CREATE it or name one with SHOW TABLES FROM db");
    if (rc < 0) return sql_wrap_at(err, pos);
    rc = sql_emit_names(sink, "table name", names, n, err);
    fr_names_free(names, n);
    return rc;
}

/* ---- tables ---------------------------------------------------------------------------- */

/* Checks that each name of a key list (PRIMARY KEY, PARTITIONED BY) is a column, once.
 * The rules between the lists (partition keys inside the primary key, their types) are the
 * engine's. */
static int check_key_list(const sql_stmt *st, const sql_ident *names, int n, const char *what,
                          fr_error *err)
{
    for (int i = 0; i < n; i++) {
        bool found = false;
        for (int c = 0; c < st->ncolumns && !found; c++)
            found = strcasecmp(st->columns[c].name.s, names[i].s) == 0;
        if (!found)
            return sql_fail_at(err, FR_EINVAL, names[i].pos, "%s column '%s' is not a column of "
                               "the table", what, names[i].s);
        for (int j = 0; j < i; j++)
            if (strcasecmp(names[i].s, names[j].s) == 0)
                return sql_fail_at(err, FR_EINVAL, names[i].pos, "%s column '%s' is named twice",
                                   what, names[i].s);
    }
    return 0;
}

static int check_create_table(const sql_stmt *st, fr_error *err)
{
    for (int i = 0; i < st->ncolumns; i++)
        for (int j = 0; j < i; j++)
            if (strcasecmp(st->columns[i].name.s, st->columns[j].name.s) == 0)
                return sql_fail_at(err, FR_EINVAL, st->columns[i].name.pos,
                                   "column '%s' is defined twice", st->columns[i].name.s);
    FR_TRY(check_key_list(st, st->primary_key, st->nprimary_key, "primary key", err));
    return check_key_list(st, st->partition_keys, st->npartition_keys, "partition key", err);
}

/* The names of a key list as the engine takes them; NULL when the list is empty. */
static const char **key_names(const sql_ident *names, int n)
{
    const char **out = fr_calloc((size_t)n + 1, sizeof *out);
    for (int i = 0; out && i < n; i++) out[i] = names[i].s;
    return out;
}

static int exec_create_table(fr_sql_session *s, const sql_stmt *st, const fr_sql_sink *sink,
                             fr_error *err)
{
    FR_TRY(check_create_table(st, err));
    const char *db = sql_table_db(s, &st->table);
    if (!sql_database_exists(s, db)) {
        if (st->table.db)
            return sql_fail_at(err, FR_ENOTFOUND, st->table.pos, "database '%s' does not exist", db);
        return sql_fail_at(err, FR_ENOTFOUND, st->table.pos,
                           "database '%s' does not exist; CREATE DATABASE %s or name the table "
                           "as db.t", db, db);
    }
    fr_field *fields = fr_calloc((size_t)st->ncolumns, sizeof *fields);
    fr_option *options = fr_calloc((size_t)st->noptions + 1, sizeof *options);
    const char **pk = key_names(st->primary_key, st->nprimary_key);
    const char **parts = key_names(st->partition_keys, st->npartition_keys);
    fr_schema *schema = NULL;
    fr_table *existing = NULL;
    int rc = 0;
    if (!fields || !options || !pk || !parts) {
        rc = fr_fail(err, FR_ENOMEM, "out of memory creating table %s.%s", db, st->table.name);
        goto fail;
    }
    for (int i = 0; i < st->ncolumns; i++) {
        fields[i].name = (char *)st->columns[i].name.s;
        fields[i].type = st->columns[i].type;
    }
    for (int i = 0; i < st->noptions; i++) {
        options[i].key = st->options[i].key;
        options[i].value = st->options[i].value;
    }
    rc = fr_schema_new(fields, st->ncolumns, 0, &schema, err);
    if (rc < 0) {
        sql_wrap_at(err, st->table.pos);
        goto fail;
    }
    bool existed = false;
    if (st->if_not_exists) {
        fr_error e2 = {0};
        existed = fr_engine_get_table(s->engine, db, st->table.name, &existing, &e2) == 0;
    }
    fr_table_spec spec = {.db = db, .name = st->table.name, .schema = schema,
                          .options = options, .noptions = st->noptions,
                          .primary_key = st->nprimary_key ? pk : NULL,
                          .nprimary_key = st->nprimary_key,
                          .partition_keys = st->npartition_keys ? parts : NULL,
                          .npartition_keys = st->npartition_keys};
    rc = fr_engine_create_table(s->engine, &spec, st->if_not_exists, err);
    if (rc < 0) {
        sql_wrap_at(err, st->table.pos);
        goto fail;
    }
    rc = sql_end_message(sink, err, existed ? "table %s.%s already exists" : "table %s.%s created",
                     db, st->table.name);
fail:
    if (existing) fr_table_release(existing);
    fr_schema_free(schema);
    fr_free(fields);
    fr_free(options);
    fr_free(pk);
    fr_free(parts);
    return rc;
}

static int exec_drop_table(fr_sql_session *s, const sql_stmt *st, const fr_sql_sink *sink,
                           fr_error *err)
{
    const char *db = sql_table_db(s, &st->table);
    fr_table *t = NULL;
    int rc = sql_open_table(s, &st->table, &t, err);
    if (rc == FR_ENOTFOUND && st->if_exists)
        return sql_end_message(sink, err, "table %s.%s does not exist", db, st->table.name);
    if (rc < 0) return rc;
    fr_table_release(t);
    if (fr_engine_drop_table(s->engine, db, st->table.name, st->if_exists, err) < 0)
        return sql_wrap_at(err, st->table.pos);
    return sql_end_message(sink, err, "table %s.%s dropped", db, st->table.name);
}

/* DESCRIBE's key cell of a primary-key column, as Flink shows it: "PRI(a, b)". */
static int key_text(const fr_table *t, fr_buf *out, fr_error *err)
{
    int n = 0;
    const int *pk = fr_table_primary_key(t, &n);
    if (n == 0) return 0;
    FR_TRY(fr_buf_append(out, "PRI(", 4, err));
    for (int i = 0; i < n; i++)
        FR_TRY(fr_buf_printf(out, err, "%s%s", i ? ", " : "",
                             fr_schema_field(fr_table_schema(t), pk[i])->name));
    return fr_buf_append(out, ")", 1, err);
}

static int exec_describe(fr_sql_session *s, const sql_stmt *st, const fr_sql_sink *sink,
                         fr_error *err)
{
    fr_table *t = NULL;
    FR_TRY(sql_open_table(s, &st->table, &t, err));
    fr_field fields[4] = {string_field("name", false), string_field("type", false),
                          {.name = "null", .type = fr_type_of(FR_T_BOOLEAN)},
                          string_field("key", true)};
    fields[2].type.nullable = false;
    fr_schema *schema = NULL;
    fr_builder *bld = NULL;
    fr_buf key;
    fr_buf_init(&key);
    int rc;
    FR_GOTO(new_result(fields, 4, &schema, &bld, err));
    const fr_schema *ts = fr_table_schema(t);
    FR_GOTO(key_text(t, &key, err));
    for (int i = 0; i < fr_schema_num_fields(ts); i++) {
        const fr_field *f = fr_schema_field(ts, i);
        char type[64];
        fr_type_format(&f->type, false, type, sizeof type);
        FR_GOTO(fr_builder_append_bytes(bld, 0, f->name, strlen(f->name), err));
        FR_GOTO(fr_builder_append_bytes(bld, 1, type, strlen(type), err));
        FR_GOTO(fr_builder_append_bool(bld, 2, f->type.nullable, err));
        if (sql_is_key_column(t, i))
            FR_GOTO(fr_builder_append_bytes(bld, 3, key.data, key.len, err));
        else
            FR_GOTO(fr_builder_append_null(bld, 3, err));
    }
    rc = sql_emit_result(sink, schema, bld, err);
fail:
    fr_buf_free(&key);
    fr_builder_free(bld);
    fr_schema_free(schema);
    fr_table_release(t);
    return rc;
}

/* ---- SHOW CREATE TABLE ----------------------------------------------------------------- */

/* A name as SQL: bare when it is a plain lower-case word that is not reserved, else in
 * backquotes. */
static int append_name(fr_buf *out, const char *name, fr_error *err)
{
    bool plain = (isalpha((unsigned char)name[0]) || name[0] == '_') &&
                 !fr_expr_word_reserved(name, strlen(name));
    for (const char *c = name; *c && plain; c++)
        plain = isalnum((unsigned char)*c) || *c == '_';
    if (plain) return fr_buf_append(out, name, strlen(name), err);
    FR_TRY(fr_buf_append(out, "`", 1, err));
    for (const char *c = name; *c; c++) {
        if (*c == '`')
            FR_TRY(fr_buf_append(out, "``", 2, err));
        else
            FR_TRY(fr_buf_append(out, c, 1, err));
    }
    return fr_buf_append(out, "`", 1, err);
}

static int append_quoted(fr_buf *out, const char *s, fr_error *err)
{
    FR_TRY(fr_buf_append(out, "'", 1, err));
    for (const char *c = s; *c; c++)
        FR_TRY(fr_buf_append(out, *c == '\'' ? "''" : c, *c == '\'' ? 2 : 1, err));
    return fr_buf_append(out, "'", 1, err);
}

/* "(a, b)": columns of the table by index. */
static int append_column_list(fr_buf *out, const fr_schema *ts, const int *cols, int n,
                              fr_error *err)
{
    FR_TRY(fr_buf_append(out, "(", 1, err));
    for (int i = 0; i < n; i++) {
        if (i) FR_TRY(fr_buf_append(out, ", ", 2, err));
        FR_TRY(append_name(out, fr_schema_field(ts, cols[i])->name, err));
    }
    return fr_buf_append(out, ")", 1, err);
}

static int format_create_table(fr_table *t, fr_buf *out, fr_error *err)
{
    const fr_schema *ts = fr_table_schema(t);
    int npk = 0, nparts = 0;
    const int *pk = fr_table_primary_key(t, &npk);
    const int *parts = fr_table_partition_keys(t, &nparts);
    FR_TRY(fr_buf_printf(out, err, "CREATE TABLE "));
    FR_TRY(append_name(out, fr_table_db(t), err));
    FR_TRY(fr_buf_append(out, ".", 1, err));
    FR_TRY(append_name(out, fr_table_name(t), err));
    FR_TRY(fr_buf_printf(out, err, " (\n"));
    for (int i = 0; i < fr_schema_num_fields(ts); i++) {
        const fr_field *f = fr_schema_field(ts, i);
        char type[64];
        fr_type_format(&f->type, true, type, sizeof type);
        FR_TRY(fr_buf_printf(out, err, "  "));
        FR_TRY(append_name(out, f->name, err));
        FR_TRY(fr_buf_printf(out, err, " %s%s\n", type,
                             i + 1 < fr_schema_num_fields(ts) || npk > 0 ? "," : ""));
    }
    if (npk > 0) {
        FR_TRY(fr_buf_printf(out, err, "  PRIMARY KEY "));
        FR_TRY(append_column_list(out, ts, pk, npk, err));
        FR_TRY(fr_buf_printf(out, err, " NOT ENFORCED\n"));
    }
    FR_TRY(fr_buf_printf(out, err, ")"));
    if (nparts > 0) {
        FR_TRY(fr_buf_printf(out, err, " PARTITIONED BY "));
        FR_TRY(append_column_list(out, ts, parts, nparts, err));
    }
    int n = fr_table_num_options(t);
    for (int i = 0; i < n; i++) {
        const char *k, *v;
        fr_table_option(t, i, &k, &v);
        FR_TRY(fr_buf_printf(out, err, i == 0 ? " WITH (\n  " : ",\n  "));
        FR_TRY(append_quoted(out, k, err));
        FR_TRY(fr_buf_printf(out, err, " = "));
        FR_TRY(append_quoted(out, v, err));
    }
    if (n > 0) FR_TRY(fr_buf_printf(out, err, "\n)"));
    return 0;
}

static int exec_show_create_table(fr_sql_session *s, const sql_stmt *st,
                                  const fr_sql_sink *sink, fr_error *err)
{
    fr_table *t = NULL;
    FR_TRY(sql_open_table(s, &st->table, &t, err));
    fr_field f = string_field("create statement", false);
    fr_schema *schema = NULL;
    fr_builder *bld = NULL;
    fr_buf text;
    fr_buf_init(&text);
    int rc;
    FR_GOTO(format_create_table(t, &text, err));
    FR_GOTO(new_result(&f, 1, &schema, &bld, err));
    FR_GOTO(fr_builder_append_bytes(bld, 0, text.data, text.len, err));
    rc = sql_emit_result(sink, schema, bld, err);
fail:
    fr_buf_free(&text);
    fr_builder_free(bld);
    fr_schema_free(schema);
    fr_table_release(t);
    return rc;
}

int sql_exec_ddl(fr_sql_session *s, const sql_stmt *st, const fr_sql_sink *sink, fr_error *err)
{
    switch (st->kind) {
    case SQL_CREATE_DATABASE: return exec_create_database(s, st, sink, err);
    case SQL_DROP_DATABASE: return exec_drop_database(s, st, sink, err);
    case SQL_USE: return exec_use(s, st, sink, err);
    case SQL_SHOW_DATABASES: return exec_show_databases(s, st, sink, err);
    case SQL_SHOW_TABLES: return exec_show_tables(s, st, sink, err);
    case SQL_CREATE_TABLE: return exec_create_table(s, st, sink, err);
    case SQL_DROP_TABLE: return exec_drop_table(s, st, sink, err);
    case SQL_DESCRIBE: return exec_describe(s, st, sink, err);
    case SQL_SHOW_CREATE_TABLE: return exec_show_create_table(s, st, sink, err);
    default: return sql_fail_at(err, FR_EUNSUPPORTED, st->pos, "statement not supported");
    }
}
