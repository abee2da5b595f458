/* sql_session.c — sessions, the execute loop, the module's small entry points (parse an
 * expression, resolve a table name), and helpers shared by the executors: sinks, table
 * lookup with clear messages, constant evaluation and column copies.
 *
 * A text is parsed whole before anything runs, so that a syntax error anywhere runs
 * nothing; then its statements run in order and the first failure stops the rest (the
 * statements before it stay done). */
#include <ctype.h>
#include <stdio.h>
#include <strings.h>

#include "sql/sql_int.h"

/* ---- sessions -------------------------------------------------------------------------- */

int fr_sql_session_new(fr_engine *engine, fr_sql_session **out, fr_error *err)
{
    fr_sql_session *s = fr_calloc(1, sizeof *s);
    if (!s) return fr_fail(err, FR_ENOMEM, "out of memory creating a SQL session");
    s->engine = engine;
    snprintf(s->database, sizeof s->database, "default");
    *out = s;
    return 0;
}

void fr_sql_session_free(fr_sql_session *s)
{
    fr_free(s);
}

const char *fr_sql_session_database(const fr_sql_session *s)
{
    return s->database;
}

/* ---- sinks ----------------------------------------------------------------------------- */

/* A callback that returned non-zero: an error when it set one, else a quiet stop (1). */
static int sink_stopped(int rc, fr_error *err)
{
    if (rc == 0) return 0;
    if (rc < 0 && err && err->code == rc) return rc;
    if (rc < 0) return fr_fail(err, rc, "the result receiver failed (%s)", fr_strcode(rc));
    return 1;
}

int sql_sink_begin(const fr_sql_sink *sink, const fr_schema *schema, fr_error *err)
{
    if (!sink || !sink->begin) return 0;
    return sink_stopped(sink->begin(sink->ctx, schema, err), err);
}

int sql_sink_rows(const fr_sql_sink *sink, fr_batch *batch, fr_error *err)
{
    if (!sink || !sink->rows) {
        fr_batch_free(batch);
        return 0;
    }
    return sink_stopped(sink->rows(sink->ctx, batch, err), err);
}

int sql_sink_end(const fr_sql_sink *sink, const char *message, fr_error *err)
{
    if (!sink || !sink->end) return 0;
    return sink_stopped(sink->end(sink->ctx, message, err), err);
}

/* ---- tables ---------------------------------------------------------------------------- */

const char *sql_table_db(const fr_sql_session *s, const sql_table_name *name)
{
    return name->db ? name->db : s->database;
}

bool sql_database_exists(fr_sql_session *s, const char *db)
{
    char **names = NULL;
    int n = 0;
    fr_error e2 = {0};
    if (fr_engine_list_databases(s->engine, &names, &n, &e2) < 0) return true;
    bool found = false;
    for (int i = 0; i < n && !found; i++) found = strcasecmp(names[i], db) == 0;
    fr_names_free(names, n);
    return found;
}

bool sql_is_key_column(const fr_table *t, int col)
{
    int n = 0;
    const int *pk = fr_table_primary_key(t, &n);
    for (int i = 0; i < n; i++)
        if (pk[i] == col) return true;
    return false;
}

int sql_virtual_split(const sql_table_name *name, sql_table_name *base, char *buf,
                      size_t cap, sql_virtual *kind, fr_error *err)
{
    *base = *name;
    *kind = SQL_VIRTUAL_NONE;
    const char *dollar = strchr(name->name, '$');
    if (!dollar) return 0;
    size_t n = (size_t)(dollar - name->name);
    sql_virtual k = SQL_VIRTUAL_NONE;
    if (strcasecmp(dollar + 1, "changelog") == 0) k = SQL_VIRTUAL_CHANGELOG;
    else if (strcasecmp(dollar + 1, "lake") == 0) k = SQL_VIRTUAL_LAKE;
    else if (strcasecmp(dollar + 1, "lake_snapshots") == 0) k = SQL_VIRTUAL_LAKE_SNAPSHOTS;
    if (k == SQL_VIRTUAL_NONE || n == 0)
        return sql_fail_at(err, FR_EINVAL, name->pos,
                           "'%s' names no table: the virtual tables of a table t are "
                           "t$changelog, t$lake and t$lake_snapshots", name->name);
    if (n >= cap) return sql_fail_at(err, FR_ELIMIT, name->pos, "table name too long");
    memcpy(buf, name->name, n);
    buf[n] = '\0';
    base->name = buf;
    *kind = k;
    return 0;
}

int sql_open_table(fr_sql_session *s, const sql_table_name *name, fr_table **out,
                   fr_error *err)
{
    if (strchr(name->name, '$')) {
        sql_table_name base;
        char buf[FR_NAME_BYTES_MAX + 1];
        sql_virtual kind;
        FR_TRY(sql_virtual_split(name, &base, buf, sizeof buf, &kind, err));
        return sql_fail_at(err, FR_EINVAL, name->pos,
                           "%s is a virtual table: only SELECT reads it", name->name);
    }
    const char *db = sql_table_db(s, name);
    int rc = fr_engine_get_table(s->engine, db, name->name, out, err);
    if (rc == FR_ENOTFOUND && !sql_database_exists(s, db)) {
        if (!name->db)
            return sql_fail_at(err, FR_ENOTFOUND, name->pos,
                               "database '%s' does not exist; CREATE DATABASE %s or name the "
                               "table as db.t", db, db);
        return sql_fail_at(err, FR_ENOTFOUND, name->pos, "database '%s' does not exist", db);
    }
    if (rc == FR_ENOTFOUND)
        return sql_fail_at(err, FR_ENOTFOUND, name->pos, "table %s.%s does not exist", db,
                           name->name);
    if (rc < 0) return sql_wrap_at(err, name->pos);
    return 0;
}

const char *sql_table_option(const fr_table *t, const char *key)
{
    for (int i = 0; i < fr_table_num_options(t); i++) {
        const char *k, *v;
        fr_table_option(t, i, &k, &v);
        if (strcasecmp(k, key) == 0) return v;
    }
    return NULL;
}

void sql_table_merge_engine(const fr_table *t, char *out, size_t cap)
{
    const char *m = sql_table_option(t, "table.merge-engine");
    snprintf(out, cap, "%s", m && *m ? m : "last_row");
    for (char *c = out; *c; c++) *c = (char)tolower((unsigned char)*c);
}

/* ---- constants ------------------------------------------------------------------------- */

void sql_const_ctx_free(sql_const_ctx *c)
{
    fr_schema_free(c->empty);
    fr_batch_free(c->one_row);
    c->empty = NULL;
    c->one_row = NULL;
}

static int const_ready(sql_const_ctx *c, fr_error *err)
{
    if (!c->empty) FR_TRY(fr_schema_new(NULL, 0, 0, &c->empty, err));
    if (!c->one_row) FR_TRY(fr_batch_from_buffers(c->empty, 1, NULL, NULL, &c->one_row, err));
    return 0;
}

int sql_const_batch(sql_const_ctx *c, const fr_batch **out, fr_error *err)
{
    FR_TRY(const_ready(c, err));
    *out = c->one_row;
    return 0;
}

int sql_const_bind(sql_const_ctx *c, fr_expr *e, fr_error *err)
{
    FR_TRY(const_ready(c, err));
    int rc = fr_expr_bind(e, c->empty, err);
    if (rc < 0) return sql_wrap_at(err, (sql_pos){e->line, e->col});
    return 0;
}

/* Copies the string or bytes a value points at into arena. */
static int value_own(fr_value *v, fr_arena *arena, fr_error *err)
{
    if (v->is_null || !fr_type_is_varwidth(&v->type)) return 0;
    void *p = fr_arena_alloc(arena, v->v.s.len ? v->v.s.len : 1);
    if (!p) return fr_fail(err, FR_ENOMEM, "out of memory evaluating a constant");
    if (v->v.s.len) memcpy(p, v->v.s.ptr, v->v.s.len);
    v->v.s.ptr = p;
    return 0;
}

int sql_const_eval(sql_const_ctx *c, fr_expr *e, fr_arena *arena, fr_value *out,
                   fr_error *err)
{
    if (e->kind == FR_EX_LITERAL) { /* the common case of VALUES: no binding needed */
        *out = e->value;
        return 0;
    }
    FR_TRY(sql_const_bind(c, e, err));
    fr_batch *b = NULL;
    int rc = fr_expr_eval(e, c->one_row, &b, err);
    if (rc < 0) return sql_wrap_at(err, (sql_pos){e->line, e->col});
    fr_column_get(fr_batch_column(b, 0), 0, out);
    out->type = e->type;
    rc = value_own(out, arena, err);
    fr_batch_free(b);
    return rc;
}

/* ---- columns --------------------------------------------------------------------------- */

static uint8_t *dup_bytes(const void *p, size_t n)
{
    uint8_t *d = fr_malloc(n ? n : 1);
    if (d && n) memcpy(d, p, n);
    return d;
}

int sql_column_copy(const fr_column *c, uint8_t **bufs, int64_t *null_count, fr_error *err)
{
    int64_t rows = c->length;
    size_t bitmap = (size_t)(rows + 7) / 8;
    bufs[0] = bufs[1] = bufs[2] = NULL;
    *null_count = c->null_count;
    if (c->null_count > 0 && c->validity && !(bufs[0] = dup_bytes(c->validity, bitmap)))
        goto nomem;
    if (fr_type_is_varwidth(&c->type)) {
        int32_t base = rows > 0 ? c->offsets[0] : 0;
        size_t data = rows > 0 ? (size_t)(c->offsets[rows] - base) : 0;
        int32_t *offs = fr_malloc(sizeof *offs * (size_t)(rows + 1));
        if (!offs) goto nomem;
        bufs[1] = (uint8_t *)offs;
        for (int64_t i = 0; i <= rows; i++) offs[i] = rows > 0 ? c->offsets[i] - base : 0;
        if (!(bufs[2] = dup_bytes(c->values + base, data))) goto nomem;
    } else {
        int w = fr_type_width(&c->type);
        size_t n = w > 0 ? (size_t)w * (size_t)rows : bitmap;
        if (!(bufs[2] = dup_bytes(c->values, n))) goto nomem;
    }
    return 0;
nomem:
    for (int i = 0; i < 3; i++) {
        fr_free(bufs[i]);
        bufs[i] = NULL;
    }
    return fr_fail(err, FR_ENOMEM, "out of memory copying a result column");
}

/* ---- entry points ---------------------------------------------------------------------- */

static int exec_statement(fr_sql_session *s, const sql_stmt *st, const fr_sql_sink *sink,
                          fr_error *err)
{
    switch (st->kind) {
    case SQL_INSERT: return sql_exec_insert(s, st, sink, err);
    case SQL_SELECT: return sql_exec_select(s, st, sink, err);
    case SQL_UPDATE:
    case SQL_DELETE: return sql_exec_dml(s, st, sink, err);
    case SQL_ADD_PARTITION:
    case SQL_DROP_PARTITION:
    case SQL_SHOW_PARTITIONS: return sql_exec_partition(s, st, sink, err);
    case SQL_CALL: return sql_exec_call(s, st, sink, err);
    default: return sql_exec_ddl(s, st, sink, err);
    }
}

int fr_sql_execute(fr_sql_session *s, const char *text, size_t len, const fr_sql_sink *sink,
                   fr_error *err)
{
    fr_arena *arena = fr_arena_new(64 << 10);
    if (!arena) return fr_fail(err, FR_ENOMEM, "out of memory for the SQL parser");
    sql_script script;
    int rc = sql_parse_script(text, len, arena, &script, err);
    for (int i = 0; rc == 0 && i < script.nstmts; i++) rc = exec_statement(s, script.stmts[i], sink, err);
    fr_arena_free(arena);
    return rc < 0 ? rc : 0;
}

int fr_sql_parse_expr(const char *text, size_t len, const fr_schema *schema, fr_arena *arena,
                      fr_expr **out, fr_error *err)
{
    fr_expr *e;
    FR_TRY(sql_parse_expression(text, len, arena, &e, err));
    int rc = fr_expr_bind(e, schema, err);
    if (rc < 0) return sql_wrap_at(err, (sql_pos){e->line, e->col});
    *out = e;
    return 0;
}

int fr_sql_resolve_table(const fr_sql_session *s, const char *name, char *db, size_t dbcap,
                         char *table, size_t tcap, fr_error *err)
{
    fr_arena *arena = fr_arena_new(4096);
    if (!arena) return fr_fail(err, FR_ENOMEM, "out of memory resolving a table name");
    fr_error e2 = {0};
    sql_parser P;
    size_t len = name ? strlen(name) : 0;
    sql_p_init(&P, name ? name : "", len, arena, &e2);
    sql_ident a = {0}, b = {0};
    int rc = sql_p_name(&P, "a table name", true, &a);
    if (rc == 0 && sql_p_accept_tok(&P, SQL_T_DOT)) rc = sql_p_name(&P, "a table name", true, &b);
    if (rc == 0 && P.cur.kind != SQL_T_EOF) rc = sql_p_expected(&P, "the end of the table name");
    if (rc == 0) rc = P.rc;
    if (rc < 0) {
        rc = fr_fail(err, FR_EINVAL, "bad table name '%.*s': %s", 64, name ? name : "", e2.msg);
    } else {
        const char *d = b.s ? a.s : s->database, *t = b.s ? b.s : a.s;
        if (strlen(d) >= dbcap || strlen(t) >= tcap) {
            rc = fr_fail(err, FR_ELIMIT, "table name '%.*s' is too long", 64, name);
        } else {
            snprintf(db, dbcap, "%s", d);
            snprintf(table, tcap, "%s", t);
        }
    }
    fr_arena_free(arena);
    return rc;
}
