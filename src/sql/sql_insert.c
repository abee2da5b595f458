/* sql_insert.c — INSERT INTO t [(cols)] VALUES (...), ... and INSERT INTO t [(cols)] SELECT:
 * evaluates every value (VALUES: constant expressions; SELECT: its result rows), converts
 * it to its column's type, builds batches and appends them to a log table or upserts them
 * into a primary-key table. Into a primary-key table, a
 * column list that leaves columns out is a partial update: only the named columns are set
 * (the target columns), the others keep their stored values; the rules are Fluss's (the
 * key among the targets, every other column nullable, a merge engine that merges partial
 * rows).
 *
 * Invariant (VALUES): every value of every row is checked before the first byte is
 * written, so a bad value (wrong type, out of range, NULL into NOT NULL) writes nothing.
 * Rows are appended in chunks of SQL_INSERT_CHUNK_ROWS so that one batch stays well under
 * the record batch limits; only an I/O failure between chunks can leave some chunks
 * written. A SELECT's rows are written chunk by chunk as they come, except when the SELECT
 * reads the table written: then all are converted first (never reading its own rows). */
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

/* Appends the batch to a log table or upserts it into a primary-key table. */
static int write_batch(const insert_plan *p, const sql_stmt *st, const fr_batch *b,
                       fr_error *err)
{
    int64_t appended = 0;
    int rc = p->pk ? fr_table_put(p->table, b, NULL, p->targets, p->ntargets, FR_NO_WRITER, -1,
                                  &appended, err)
                   : fr_table_append(p->table, b, FR_NO_WRITER, -1, &appended, err);
    return rc < 0 ? sql_wrap_at(err, st->table.pos) : 0;
}

static int insert_values(const insert_plan *p, const sql_stmt *st, int64_t *total,
                         fr_error *err)
{
    int nchunks = (st->nrows + SQL_INSERT_CHUNK_ROWS - 1) / SQL_INSERT_CHUNK_ROWS;
    fr_batch **batches = fr_calloc((size_t)nchunks + 1, sizeof *batches);
    if (!batches) return fr_fail(err, FR_ENOMEM, "out of memory for INSERT");
    int nbatches = 0, rc;
    FR_GOTO(build_batches(p, st, batches, &nbatches, err));
    for (int i = 0; i < nbatches; i++) {
        FR_GOTO(write_batch(p, st, batches[i], err));
        *total += fr_batch_num_rows(batches[i]);
    }
fail:
    for (int i = 0; i < nbatches; i++) fr_batch_free(batches[i]);
    fr_free(batches);
    return rc;
}

/* ---- INSERT ... SELECT ------------------------------------------------------------------ */

/* At most this many bytes of rows are held by an INSERT ... SELECT that reads the table it
 * writes (it writes only once the SELECT is done, so that it never reads its own rows). */
#define SQL_INSERT_HOLD_BYTES_MAX ((int64_t)1 << 30)

typedef struct insert_select {
    const insert_plan *p;
    const sql_stmt *st;
    bool hold;         /* the SELECT reads the table written: write when it is done */
    fr_builder *bld;   /* the chunk being converted, in the table's schema */
    fr_arena *arena;   /* converted strings of that chunk */
    fr_batch **held;   /* hold: the chunks converted */
    int nheld, cap;
    int64_t held_bytes;
    int64_t total;
} insert_select;

/* Whether result column j of the SELECT is a bare NULL, which goes into any column (its
 * type is only the one a NULL takes by default). */
static bool null_item(const sql_stmt *q, int j)
{
    for (int i = 0; i < q->nitems; i++)
        if (!q->items[i].expr) return false; /* a star: items are no longer columns */
    const fr_expr *e = j < q->nitems ? q->items[j].expr : NULL;
    return e && e->kind == FR_EX_LITERAL && e->value.is_null;
}

/* The SELECT's columns against the table's: as many as the values INSERT takes, each one
 * assignable to its column. */
static int is_begin(void *ctx, const fr_schema *schema, fr_error *err)
{
    insert_select *x = ctx;
    const insert_plan *p = x->p;
    sql_pos pos = x->st->query->pos;
    int n = fr_schema_num_fields(schema);
    if (n != p->nvalues)
        return sql_fail_at(err, FR_EINVAL, pos, "the SELECT returns %d column%s but %d %s "
                           "expected", n, n == 1 ? "" : "s", p->nvalues,
                           p->nvalues == 1 ? "is" : "are");
    for (int c = 0; c < p->nfields; c++) {
        int j = p->value_of[c];
        if (j < 0) continue;
        const fr_field *to = fr_schema_field(p->schema, c), *from = fr_schema_field(schema, j);
        if (assignable(from->type.id, to->type.id) || null_item(x->st->query, j)) continue;
        char ft[64], tt[64];
        fr_type_format(&from->type, false, ft, sizeof ft);
        fr_type_format(&to->type, false, tt, sizeof tt);
        return sql_fail_at(err, FR_ETYPE, pos, "cannot insert the %s column '%s' of the SELECT "
                           "into %s column '%s' (use CAST)", ft, from->name, tt, to->name);
    }
    x->arena = fr_arena_new(64 << 10);
    if (!x->arena) return fr_fail(err, FR_ENOMEM, "out of memory for INSERT");
    return fr_builder_new(p->schema, &x->bld, err);
}

/* Finishes the chunk being converted: written now, or held until the SELECT is done. */
static int is_flush(insert_select *x, fr_error *err)
{
    if (!x->bld || fr_builder_num_rows(x->bld) == 0) return 0;
    fr_batch *b = NULL;
    FR_TRY(fr_builder_finish(x->bld, &b, err));
    fr_arena_free(x->arena);
    x->arena = fr_arena_new(64 << 10);
    int rc = x->arena ? 0 : fr_fail(err, FR_ENOMEM, "out of memory for INSERT");
    if (rc == 0 && !x->hold) {
        rc = write_batch(x->p, x->st, b, err);
        if (rc == 0) x->total += fr_batch_num_rows(b);
        fr_batch_free(b);
        return rc;
    }
    if (rc == 0 && x->nheld == x->cap) {
        int cap = x->cap ? 2 * x->cap : 16;
        fr_batch **more = fr_realloc(x->held, (size_t)cap * sizeof *more);
        if (more) x->held = more, x->cap = cap;
        else rc = fr_fail(err, FR_ENOMEM, "out of memory for INSERT");
    }
    if (rc < 0) {
        fr_batch_free(b);
        return rc;
    }
    x->held[x->nheld++] = b;
    x->held_bytes += sql_batch_bytes(b);
    if (x->held_bytes <= SQL_INSERT_HOLD_BYTES_MAX) return 0;
    return sql_fail_at(err, FR_ELIMIT, x->st->query->pos, "an INSERT ... SELECT that reads the "
                       "table it writes holds its rows until the SELECT is done, at most %lld "
                       "bytes: select fewer rows at a time (WHERE)",
                       (long long)SQL_INSERT_HOLD_BYTES_MAX);
}

/* Converts the SELECT's rows into the table's columns, a chunk at a time. */
static int is_rows(void *ctx, fr_batch *batch, fr_error *err)
{
    insert_select *x = ctx;
    const insert_plan *p = x->p;
    sql_pos pos = x->st->query->pos;
    int rc = 0;
    for (int64_t r = 0; r < fr_batch_num_rows(batch) && rc == 0; r++) {
        for (int c = 0; c < p->nfields && rc == 0; c++) {
            int j = p->value_of[c];
            fr_value v, out;
            if (j < 0) {
                rc = fr_builder_append_null(x->bld, c, err);
                continue;
            }
            fr_column_get(fr_batch_column(batch, j), r, &v);
            rc = sql_convert_value(&v, fr_schema_field(p->schema, c), pos, x->arena, &out, err);
            if (rc == 0) rc = fr_builder_append(x->bld, c, &out, err);
        }
        if (rc < 0) fr_builder_rollback_row(x->bld);
        else if (fr_builder_num_rows(x->bld) == SQL_INSERT_CHUNK_ROWS) rc = is_flush(x, err);
    }
    fr_batch_free(batch);
    return rc;
}

/* Whether the SELECT reads the table the INSERT writes (itself or one of its views). */
static int reads_target(fr_sql_session *s, const sql_stmt *q, const fr_table *t, bool *out,
                        fr_error *err)
{
    *out = false;
    if (!q->has_from) return 0;
    sql_table_name base;
    char buf[FR_NAME_BYTES_MAX + 1];
    sql_virtual kind;
    FR_TRY(sql_virtual_split(&q->table, &base, buf, sizeof buf, &kind, err));
    *out = strcmp(base.name, fr_table_name(t)) == 0 &&
           strcmp(sql_table_db(s, &base), fr_table_db(t)) == 0;
    return 0;
}

static int insert_select_rows(fr_sql_session *s, const insert_plan *p, const sql_stmt *st,
                              int64_t *total, fr_error *err)
{
    insert_select x = {.p = p, .st = st};
    fr_sql_sink sink = {.ctx = &x, .begin = is_begin, .rows = is_rows};
    int rc;
    FR_GOTO(reads_target(s, st->query, p->table, &x.hold, err));
    FR_GOTO(sql_exec_select(s, st->query, &sink, err));
    FR_GOTO(is_flush(&x, err));
    for (int i = 0; i < x.nheld; i++) {
        FR_GOTO(write_batch(p, st, x.held[i], err));
        x.total += fr_batch_num_rows(x.held[i]);
    }
fail:
    *total = x.total;
    for (int i = 0; i < x.nheld; i++) fr_batch_free(x.held[i]);
    fr_free(x.held);
    fr_builder_free(x.bld);
    fr_arena_free(x.arena);
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
    p.value_of = fr_calloc((size_t)p.nfields, sizeof *p.value_of);
    int64_t total = 0;
    int rc = 0;
    if (!p.value_of) {
        rc = fr_fail(err, FR_ENOMEM, "out of memory for INSERT");
        goto fail;
    }
    FR_GOTO(plan_columns(st, &p, err));
    if (st->query) rc = insert_select_rows(s, &p, st, &total, err);
    else rc = insert_values(&p, st, &total, err);
    if (rc == 0)
        rc = sql_end_message(sink, err, "%lld row%s %s", (long long)total, total == 1 ? "" : "s",
                             p.pk ? "upserted" : "inserted");
fail:
    fr_free(p.value_of);
    fr_free(p.targets);
    fr_table_release(p.table);
    return rc;
}
