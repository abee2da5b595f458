/* sql_lake.c — the SQL side of the lake: CALL sys.tier('db.t') (one tiering round now), and
 * the rows of t$lake_snapshots (every lake snapshot of a table, with its tiered offsets).
 * SELECT (sql_select.c) plans and runs the reads: t$lake, t$lake_snapshots and union reads
 * of lake-enabled tables.
 *
 * Invariant: a procedure's arguments are constant expressions, evaluated once before it
 * runs; every error names the position of what is wrong. */
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "sql/sql_int.h"

/* ---- CALL ------------------------------------------------------------------------------ */

/* The text of a constant STRING argument, NUL-terminated in arena. */
static int string_arg(const sql_stmt *st, int i, fr_arena *arena, const char **out,
                      fr_error *err)
{
    sql_const_ctx cc = {0};
    fr_expr *e = st->args[i];
    sql_pos pos = {e->line, e->col};
    fr_value v;
    int rc = sql_const_eval(&cc, e, arena, &v, err);
    sql_const_ctx_free(&cc);
    if (rc < 0) return sql_wrap_at(err, pos);
    if (v.is_null || !fr_type_is_string(v.type.id))
        return sql_fail_at(err, FR_ETYPE, pos, "%s takes a table name as a string ('db.t')",
                           st->procedure);
    char *s = fr_arena_strndup(arena, (const char *)v.v.s.ptr, v.v.s.len);
    if (!s) return fr_fail(err, FR_ENOMEM, "out of memory running a CALL");
    if (strlen(s) != v.v.s.len)
        return sql_fail_at(err, FR_EINVAL, pos, "a table name may not hold a NUL byte");
    *out = s;
    return 0;
}

/* Opens the lake-enabled table an argument names ('db.t' or 't' in the current database). */
static int open_lake_table(fr_sql_session *s, const sql_stmt *st, const char *name,
                           fr_table **out, fr_error *err)
{
    sql_pos pos = {st->args[0]->line, st->args[0]->col};
    char db[FR_NAME_BYTES_MAX + 1], table[FR_NAME_BYTES_MAX + 1];
    if (fr_sql_resolve_table(s, name, db, sizeof db, table, sizeof table, err) < 0)
        return sql_wrap_at(err, pos);
    sql_table_name tn = {.db = db, .name = table, .pos = pos};
    FR_TRY(sql_open_table(s, &tn, out, err));
    if (!fr_table_lake_enabled(*out)) {
        fr_table_release(*out);
        *out = NULL;
        return sql_fail_at(err, FR_EINVAL, pos, "table %s.%s has no lake: create it with "
                           "'table.datalake.enabled' = 'true'", db, table);
    }
    return 0;
}

/* One row of one BIGINT column `snapshot_id` (NULL for -1). */
static int emit_snapshot_id(const fr_sql_sink *sink, int64_t id, fr_error *err)
{
    fr_field f = {.name = "snapshot_id", .type = fr_type_of(FR_T_BIGINT)};
    fr_schema *schema = NULL;
    fr_builder *bld = NULL;
    int rc;
    FR_GOTO(fr_schema_new(&f, 1, 0, &schema, err));
    FR_GOTO(fr_builder_new(schema, &bld, err));
    if (id < 0)
        FR_GOTO(fr_builder_append_null(bld, 0, err));
    else
        FR_GOTO(fr_builder_append_i64(bld, 0, id, err));
    rc = sql_emit_result(sink, schema, bld, err);
fail:
    fr_builder_free(bld);
    fr_schema_free(schema);
    return rc;
}

static int call_tier(fr_sql_session *s, const sql_stmt *st, fr_arena *arena,
                     const fr_sql_sink *sink, fr_error *err)
{
    if (st->nargs != 1)
        return sql_fail_at(err, FR_EINVAL, st->procedure_pos,
                           "sys.tier takes one argument, the table ('db.t'), not %d", st->nargs);
    const char *name = NULL;
    FR_TRY(string_arg(st, 0, arena, &name, err));
    fr_table *t = NULL;
    FR_TRY(open_lake_table(s, st, name, &t, err));
    int64_t id = -1;
    int rc = fr_table_tier(t, &id, err);
    fr_table_release(t);
    if (rc < 0) return sql_wrap_at(err, st->pos);
    return emit_snapshot_id(sink, id, err);
}

int sql_exec_call(fr_sql_session *s, const sql_stmt *st, const fr_sql_sink *sink,
                  fr_error *err)
{
    if (st->explain)
        return sql_fail_at(err, FR_EUNSUPPORTED, st->pos, "EXPLAIN does not take a CALL");
    fr_arena *arena = fr_arena_new(4096);
    if (!arena) return fr_fail(err, FR_ENOMEM, "out of memory running a CALL");
    int rc;
    if (strcmp(st->procedure, "sys.tier") == 0)
        rc = call_tier(s, st, arena, sink, err);
    else
        rc = sql_fail_at(err, FR_ENOTFOUND, st->procedure_pos,
                         "unknown procedure '%s'; the procedures are: sys.tier('db.t')",
                         st->procedure);
    fr_arena_free(arena);
    return rc;
}

/* ---- t$lake_snapshots ------------------------------------------------------------------ */

enum {
    SNAP_ID, SNAP_PARENT, SNAP_SEQ, SNAP_COMMITTED, SNAP_OP, SNAP_ADDED_FILES,
    SNAP_ADDED_DELETE_FILES, SNAP_ADDED_RECORDS, SNAP_TOTAL_RECORDS, SNAP_OFFSETS, SNAP_NCOLS
};

int sql_lake_snapshots_schema(fr_schema **out, fr_error *err)
{
    static const char *const names[SNAP_NCOLS] = {
        "snapshot_id", "parent_id", "sequence_number", "committed_at", "operation",
        "added_data_files", "added_delete_files", "added_records", "total_records",
        "tiered_offsets"};
    fr_field f[SNAP_NCOLS];
    for (int i = 0; i < SNAP_NCOLS; i++) {
        f[i] = (fr_field){.name = (char *)names[i], .type = fr_type_of(FR_T_BIGINT)};
        f[i].type.nullable = i == SNAP_PARENT;
    }
    f[SNAP_COMMITTED].type = fr_type_time_like(FR_T_TIMESTAMP_LTZ, 3);
    f[SNAP_COMMITTED].type.nullable = false;
    f[SNAP_OP].type = fr_type_of(FR_T_STRING);
    f[SNAP_OP].type.nullable = false;
    f[SNAP_OFFSETS].type = fr_type_of(FR_T_STRING);
    f[SNAP_OFFSETS].type.nullable = false;
    return fr_schema_new(f, SNAP_NCOLS, 0, out, err);
}

static int offset_cmp(const void *a, const void *b)
{
    const fr_lake_offset *x = a, *y = b;
    if (x->partition_id != y->partition_id) return x->partition_id < y->partition_id ? -1 : 1;
    return (x->bucket > y->bucket) - (x->bucket < y->bucket);
}

/* "p-1/b0:120,p-1/b1:98": partition id, bucket and tiered offset of every bucket. */
static int format_offsets(fr_lake_snapshot *sn, fr_buf *out, fr_error *err)
{
    fr_buf_reset(out);
    qsort(sn->offsets, (size_t)sn->noffsets, sizeof *sn->offsets, offset_cmp);
    for (int i = 0; i < sn->noffsets; i++)
        FR_TRY(fr_buf_printf(out, err, "%sp%lld/b%d:%lld", i ? "," : "",
                             (long long)sn->offsets[i].partition_id, (int)sn->offsets[i].bucket,
                             (long long)sn->offsets[i].offset));
    return 0;
}

static int append_snapshot(fr_builder *bld, fr_lake_snapshot *sn, fr_buf *text, fr_error *err)
{
    FR_TRY(fr_builder_append_i64(bld, SNAP_ID, sn->snapshot_id, err));
    if (sn->parent_id < 0)
        FR_TRY(fr_builder_append_null(bld, SNAP_PARENT, err));
    else
        FR_TRY(fr_builder_append_i64(bld, SNAP_PARENT, sn->parent_id, err));
    FR_TRY(fr_builder_append_i64(bld, SNAP_SEQ, sn->sequence_number, err));
    FR_TRY(fr_builder_append_i64(bld, SNAP_COMMITTED, sn->timestamp_ms, err));
    FR_TRY(fr_builder_append_bytes(bld, SNAP_OP, sn->operation,
                                   strnlen(sn->operation, sizeof sn->operation), err));
    FR_TRY(fr_builder_append_i64(bld, SNAP_ADDED_FILES, sn->added_data_files, err));
    FR_TRY(fr_builder_append_i64(bld, SNAP_ADDED_DELETE_FILES, sn->added_delete_files, err));
    FR_TRY(fr_builder_append_i64(bld, SNAP_ADDED_RECORDS, sn->added_records, err));
    FR_TRY(fr_builder_append_i64(bld, SNAP_TOTAL_RECORDS, sn->total_records, err));
    FR_TRY(format_offsets(sn, text, err));
    return fr_builder_append_bytes(bld, SNAP_OFFSETS, text->data, text->len, err);
}

int sql_lake_snapshots_batch(fr_table *t, const fr_schema *schema, fr_batch **out,
                             fr_error *err)
{
    fr_lake_snapshot *snaps = NULL;
    int n = 0;
    FR_TRY(fr_table_lake_snapshots(t, &snaps, &n, err));
    fr_builder *bld = NULL;
    fr_buf text;
    fr_buf_init(&text);
    int rc;
    FR_GOTO(fr_builder_new(schema, &bld, err));
    for (int i = 0; i < n; i++) FR_GOTO(append_snapshot(bld, &snaps[i], &text, err));
    rc = fr_builder_finish(bld, out, err);
fail:
    fr_buf_free(&text);
    fr_builder_free(bld);
    if (snaps) fr_lake_snapshots_free(snaps, n);
    return rc;
}
