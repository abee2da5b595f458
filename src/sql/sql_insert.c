/* sql_insert.c — INSERT INTO t [(cols)] VALUES (...), ...: evaluates every value (they are
 * constant expressions), converts it to its column's type, builds batches and appends them
 * to a log table or upserts them into a primary-key table. Into a primary-key table, a
 * column list that leaves columns out is a partial update: only the named columns are set
 * (the target columns), the others keep their stored values; the rules are Fluss's (the
 * key among the targets, every other column nullable, a merge engine that merges partial
 * rows).
 *
 * Invariant: every value of every row is checked before the first byte is written, so a
 * bad value (wrong type, out of range, NULL into NOT NULL) writes nothing. Rows are
 * appended in chunks of SQL_INSERT_CHUNK_ROWS so that one batch stays well under the record
 * batch limits; only an I/O failure between chunks can leave some chunks written. */
#include <math.h>
#include <stdio.h>

#include "sql/sql_int.h"

#define SQL_INSERT_CHUNK_ROWS 65536

/* Which kinds of values go into which columns without a CAST: numbers into numbers,
 * strings into strings, and a string into any column by parsing it ('2026-01-01' into a
 * DATE, '12.50' into a DECIMAL). Other pairs need an explicit CAST. */
static bool assignable(fr_type_id from, fr_type_id to)
{
    if (fr_type_is_string(from)) return true;
    if (fr_type_is_numeric(from)) return fr_type_is_numeric(to);
    if (fr_type_is_temporal(from)) return fr_type_is_temporal(to);
    return from == to; /* BOOLEAN, BYTES */
}

/* The value's text for a message, quoted when it is a string, shortened when long. */
static void value_text(const fr_value *v, char *out, size_t cap)
{
    fr_buf b;
    fr_buf_init(&b);
    fr_error e = {0};
    bool quote = fr_type_is_string(v->type.id);
    if (fr_value_format(v, &b, &e) < 0) {
        snprintf(out, cap, "(unprintable)");
    } else {
        int n = b.len > 64 ? 64 : (int)b.len;
        snprintf(out, cap, "%s%.*s%s%s", quote ? "'" : "", n, (const char *)b.data,
                 b.len > 64 ? "..." : "", quote ? "'" : "");
    }
    fr_buf_free(&b);
}

/* Converts one value to its column's type, with a message that names the value, the
 * column and the type. */
int sql_convert_value(const fr_value *v, const fr_field *f, sql_pos pos, fr_arena *arena,
                      fr_value *out, fr_error *err)
{
    char type[64], text[96];
    fr_type_format(&f->type, false, type, sizeof type);
    if (v->is_null) {
        if (!f->type.nullable)
            return sql_fail_at(err, FR_EINVAL, pos,
                               "NULL into NOT NULL column '%s'", f->name);
        *out = fr_value_null(f->type);
        return 0;
    }
    if (!assignable(v->type.id, f->type.id)) {
        char from[64];
        fr_type_format(&v->type, false, from, sizeof from);
        return sql_fail_at(err, FR_ETYPE, pos,
                           "cannot insert a %s value into %s column '%s' (use CAST)", from, type,
                           f->name);
    }
    fr_error e2 = {0};
    int rc = fr_value_cast(v, &f->type, arena, out, &e2);
    if (rc == 0 && f->type.id == FR_T_FLOAT && isinf(out->v.f)) {
        /* CAST lets a finite double overflow a FLOAT into infinity; a stored value must not. */
        fr_type dt = fr_type_of(FR_T_DOUBLE);
        fr_value wide;
        if (fr_value_cast(v, &dt, arena, &wide, &e2) == 0 && !isinf(wide.v.f)) rc = FR_ERANGE;
    }
    if (rc == 0) return 0;
    value_text(v, text, sizeof text);
    if (rc == FR_ERANGE && fr_type_is_string(f->type.id))
        return sql_fail_at(err, rc, pos, "value %s is too long for %s column '%s'", text, type,
                           f->name);
    if (rc == FR_ERANGE)
        return sql_fail_at(err, rc, pos, "value %s is out of range for %s column '%s'", text,
                           type, f->name);
    if (rc == FR_ENOMEM) return sql_fail_at(err, rc, pos, "%s", e2.msg);
    return sql_fail_at(err, rc, pos, "value %s cannot be converted to %s for column '%s': %s",
                       text, type, f->name, e2.msg);
}

typedef struct insert_plan {
    fr_table *table;
    const fr_schema *schema;
    int nfields;
    int *value_of;  /* per column: the index of its value in a row, or -1 */
    int nvalues;    /* values per row */
    bool pk;        /* a primary-key table: rows are upserted */
    int *targets;   /* partial update: the named columns, ascending; else NULL */
    int ntargets;
} insert_plan;

/* "[a, b]": names of columns by index, for messages (cut short when long). */
static void column_names(const fr_schema *s, const int *cols, int n, char *out, size_t cap)
{
    size_t used = 0;
    out[0] = '\0';
    for (int i = 0; i <= n && used + 1 < cap; i++) {
        int k = i == n ? snprintf(out + used, cap - used, "]")
                       : snprintf(out + used, cap - used, "%s%s", i ? ", " : "[",
                                  fr_schema_field(s, cols[i])->name);
        if (k < 0) break;
        used += (size_t)k;
    }
}

/* A column list into a primary-key table that leaves columns out: checks Fluss's rules of
 * partial updates and records the target columns. */
static int plan_partial_update(const sql_stmt *st, insert_plan *p, fr_error *err)
{
    const char *db = fr_table_db(p->table), *tn = fr_table_name(p->table);
    char merge[64], names[256], keys[256];
    sql_table_merge_engine(p->table, merge, sizeof merge);
    if (strcmp(merge, "first_row") == 0 || strcmp(merge, "versioned") == 0)
        return sql_fail_at(err, FR_EINVAL, st->table.pos,
                           "table %s.%s uses the '%s' merge engine, which does not support "
                           "partial updates: name every column in INSERT INTO", db, tn, merge);
    p->targets = fr_calloc((size_t)p->nfields + 1, sizeof *p->targets);
    if (!p->targets) return fr_fail(err, FR_ENOMEM, "out of memory for INSERT");
    for (int c = 0; c < p->nfields; c++)
        if (p->value_of[c] >= 0) p->targets[p->ntargets++] = c;
    int npk = 0;
    const int *pk = fr_table_primary_key(p->table, &npk);
    for (int i = 0; i < npk; i++) {
        if (p->value_of[pk[i]] >= 0) continue;
        column_names(p->schema, p->targets, p->ntargets, names, sizeof names);
        column_names(p->schema, pk, npk, keys, sizeof keys);
        return sql_fail_at(err, FR_EINVAL, st->table.pos,
                           "a partial update must name every primary key column: the insert "
                           "columns are %s, the primary key columns %s", names, keys);
    }
    /* A column left out keeps its value, or is NULL for a new key; as in Fluss, every
     * column outside the key must then be nullable. */
    for (int c = 0; c < p->nfields; c++) {
        const fr_field *f = fr_schema_field(p->schema, c);
        bool key = false;
        for (int i = 0; i < npk && !key; i++) key = pk[i] == c;
        if (!key && !f->type.nullable)
            return sql_fail_at(err, FR_EINVAL, st->table.pos,
                               "a partial update needs every column outside the primary key to "
                               "be nullable, and column '%s' is NOT NULL: name every column in "
                               "INSERT INTO", f->name);
    }
    return 0;
}

/* Maps the column list (or the whole schema) to value positions. */
static int plan_columns(const sql_stmt *st, insert_plan *p, fr_error *err)
{
    const char *db = fr_table_db(p->table), *tn = fr_table_name(p->table);
    for (int c = 0; c < p->nfields; c++) p->value_of[c] = st->insert_columns ? -1 : c;
    p->nvalues = st->insert_columns ? st->ninsert_columns : p->nfields;
    for (int j = 0; j < st->ninsert_columns; j++) {
        const sql_ident *id = &st->insert_columns[j];
        int c = fr_schema_find(p->schema, id->s);
        if (c < 0)
            return sql_fail_at(err, FR_ENOTFOUND, id->pos, "unknown column '%s' in table %s.%s",
                               id->s, db, tn);
        if (p->value_of[c] >= 0)
            return sql_fail_at(err, FR_EINVAL, id->pos, "column '%s' is named twice", id->s);
        p->value_of[c] = j;
    }
    if (p->pk && st->insert_columns && st->ninsert_columns < p->nfields)
        return plan_partial_update(st, p, err);
    for (int c = 0; c < p->nfields; c++) {
        const fr_field *f = fr_schema_field(p->schema, c);
        if (p->value_of[c] < 0 && !f->type.nullable)
            return sql_fail_at(err, FR_EINVAL, st->table.pos,
                               "column '%s' is NOT NULL and gets no value; add it to the column "
                               "list", f->name);
    }
    return 0;
}

/* Evaluates, converts and appends one row to the builder. */
static int build_row(const insert_plan *p, const sql_values_row *row, int rowno,
                     sql_const_ctx *cc, fr_arena *arena, fr_builder *bld, fr_error *err)
{
    if (row->nvalues != p->nvalues)
        return sql_fail_at(err, FR_EINVAL, row->pos, "row %d has %d value%s but %d %s expected",
                           rowno, row->nvalues, row->nvalues == 1 ? "" : "s", p->nvalues,
                           p->nvalues == 1 ? "is" : "are");
    for (int c = 0; c < p->nfields; c++) {
        int j = p->value_of[c];
        int rc;
        if (j < 0) {
            rc = fr_builder_append_null(bld, c, err);
        } else {
            fr_expr *e = row->values[j];
            sql_pos pos = {e->line, e->col};
            fr_value v, out;
            rc = sql_const_eval(cc, e, arena, &v, err);
            if (rc == 0)
                rc = sql_convert_value(&v, fr_schema_field(p->schema, c), pos, arena, &out, err);
            if (rc == 0) rc = fr_builder_append(bld, c, &out, err);
            if (rc < 0) sql_wrap_at(err, pos);
        }
        if (rc < 0) {
            fr_builder_rollback_row(bld);
            return rc;
        }
    }
    return 0;
}

/* Builds every chunk's batch; nothing is written here. */
static int build_batches(const insert_plan *p, const sql_stmt *st, fr_batch **batches,
                         int *nbatches, fr_error *err)
{
    sql_const_ctx cc = {0};
    fr_builder *bld = NULL;
    fr_arena *arena = fr_arena_new(64 << 10);
    int rc = 0;
    if (!arena) {
        rc = fr_fail(err, FR_ENOMEM, "out of memory for INSERT");
        goto fail;
    }
    FR_GOTO(fr_builder_new(p->schema, &bld, err));
    for (int r = 0; r < st->nrows; r++) {
        FR_GOTO(build_row(p, &st->rows[r], r + 1, &cc, arena, bld, err));
        if (fr_builder_num_rows(bld) == SQL_INSERT_CHUNK_ROWS || r + 1 == st->nrows) {
            FR_GOTO(fr_builder_finish(bld, &batches[(*nbatches)++], err));
            /* Converted strings of a finished chunk are in its batch now. */
            fr_arena_free(arena);
            arena = fr_arena_new(64 << 10);
            if (!arena) {
                rc = fr_fail(err, FR_ENOMEM, "out of memory for INSERT");
                goto fail;
            }
        }
    }
fail:
    fr_builder_free(bld);
    fr_arena_free(arena);
    sql_const_ctx_free(&cc);
    return rc;
}

int sql_exec_insert(fr_sql_session *s, const sql_stmt *st, const fr_sql_sink *sink,
                    fr_error *err)
{
    insert_plan p = {0};
    FR_TRY(sql_open_table(s, &st->table, &p.table, err));
    p.schema = fr_table_schema(p.table);
    p.nfields = fr_schema_num_fields(p.schema);
    p.pk = fr_table_is_pk(p.table);
    int nchunks = (st->nrows + SQL_INSERT_CHUNK_ROWS - 1) / SQL_INSERT_CHUNK_ROWS;
    fr_batch **batches = fr_calloc((size_t)nchunks + 1, sizeof *batches);
    p.value_of = fr_calloc((size_t)p.nfields, sizeof *p.value_of);
    int nbatches = 0, rc = 0;
    int64_t total = 0;
    if (!batches || !p.value_of) {
        rc = fr_fail(err, FR_ENOMEM, "out of memory for INSERT");
        goto fail;
    }
    FR_GOTO(plan_columns(st, &p, err));
    FR_GOTO(build_batches(&p, st, batches, &nbatches, err));
    for (int i = 0; i < nbatches; i++) {
        int64_t appended = 0;
        if (p.pk)
            rc = fr_table_put(p.table, batches[i], NULL, p.targets, p.ntargets, FR_NO_WRITER,
                              -1, &appended, err);
        else
            rc = fr_table_append(p.table, batches[i], FR_NO_WRITER, -1, &appended, err);
        if (rc < 0) {
            sql_wrap_at(err, st->table.pos);
            goto fail;
        }
        total += fr_batch_num_rows(batches[i]);
    }
    rc = sql_end_message(sink, err, "%lld row%s %s", (long long)total, total == 1 ? "" : "s",
                         p.pk ? "upserted" : "inserted");
fail:
    for (int i = 0; i < nbatches; i++) fr_batch_free(batches[i]);
    fr_free(batches);
    fr_free(p.value_of);
    fr_free(p.targets);
    fr_table_release(p.table);
    return rc;
}
