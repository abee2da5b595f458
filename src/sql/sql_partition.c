/* sql_partition.c — the statements about a table's partitions: ALTER TABLE t ADD [IF NOT
 * EXISTS] PARTITION (...), ALTER TABLE t DROP [IF EXISTS] PARTITION (...) and SHOW
 * PARTITIONS t [PARTITION (...)]. Partitions themselves (names, value parsing, data) are
 * the engine's; this file turns the statements into engine calls and says what happened.
 *
 * One statement may name several partitions: they are added (dropped) one by one in the
 * order written, and the first failure stops the rest (those before it stay done). */
#include <stdio.h>
#include <strings.h>

#include "sql/sql_int.h"

/* The partition keys of t, or an error naming the table when it has none. */
static int partition_keys(const fr_table *t, const sql_stmt *st, const int **keys, int *n,
                          fr_error *err)
{
    *keys = fr_table_partition_keys(t, n);
    if (*n > 0) return 0;
    return sql_fail_at(err, FR_EINVAL, st->table.pos,
                       "table %s.%s is not partitioned (it has no PARTITIONED BY)",
                       fr_table_db(t), fr_table_name(t));
}

/* "dt, region": the partition key names, for messages. */
static void key_list(const fr_table *t, const int *keys, int n, char *out, size_t cap)
{
    size_t used = 0;
    out[0] = '\0';
    for (int i = 0; i < n && used + 1 < cap; i++) {
        int k = snprintf(out + used, cap - used, "%s%s", i ? ", " : "",
                         fr_schema_field(fr_table_schema(t), keys[i])->name);
        if (k < 0) break;
        used += (size_t)k;
    }
}

/* Checks that every column of a spec is a partition key; *key_of[i] gets the position of
 * spec value i among the partition keys. */
static int spec_keys(const fr_table *t, const int *keys, int nkeys, const sql_partition_spec *ps,
                     int *key_of, fr_error *err)
{
    for (int i = 0; i < ps->nvalues; i++) {
        int c = fr_schema_find(fr_table_schema(t), ps->values[i].key);
        key_of[i] = -1;
        for (int k = 0; k < nkeys && c >= 0; k++)
            if (keys[k] == c) key_of[i] = k;
        if (key_of[i] < 0) {
            char list[256];
            key_list(t, keys, nkeys, list, sizeof list);
            return sql_fail_at(err, FR_EINVAL, ps->values[i].pos,
                               "'%s' is not a partition key of table %s.%s (its partition keys: "
                               "%s)", ps->values[i].key, fr_table_db(t), fr_table_name(t), list);
        }
    }
    return 0;
}

/* ---- ADD and DROP ---------------------------------------------------------------------- */

static int change_one(fr_sql_session *s, const sql_stmt *st, const fr_table *t,
                      const sql_partition_spec *ps, bool *skipped, fr_error *err)
{
    fr_option *spec = fr_calloc((size_t)ps->nvalues + 1, sizeof *spec);
    if (!spec) return fr_fail(err, FR_ENOMEM, "out of memory for a partition statement");
    for (int i = 0; i < ps->nvalues; i++)
        spec[i] = (fr_option){.key = ps->values[i].key, .value = ps->values[i].value};
    const char *db = fr_table_db(t), *name = fr_table_name(t);
    bool add = st->kind == SQL_ADD_PARTITION;
    int rc = add ? fr_engine_add_partition(s->engine, db, name, spec, ps->nvalues, false, err)
                 : fr_engine_drop_partition(s->engine, db, name, spec, ps->nvalues, false, err);
    fr_free(spec);
    *skipped = false;
    if ((add && rc == FR_EEXIST && st->if_not_exists) ||
        (!add && rc == FR_ENOTFOUND && st->if_exists)) {
        *skipped = true;
        return 0;
    }
    return rc < 0 ? sql_wrap_at(err, ps->pos) : 0;
}

static int exec_change_partitions(fr_sql_session *s, const sql_stmt *st,
                                  const fr_sql_sink *sink, fr_error *err)
{
    fr_table *t = NULL;
    FR_TRY(sql_open_table(s, &st->table, &t, err));
    const int *keys;
    int nkeys, done = 0, skipped = 0, rc;
    int *key_of = NULL;
    FR_GOTO(partition_keys(t, st, &keys, &nkeys, err));
    for (int i = 0; i < st->npartitions; i++) {
        const sql_partition_spec *ps = &st->partitions[i];
        fr_free(key_of);
        key_of = fr_calloc((size_t)ps->nvalues + 1, sizeof *key_of);
        if (!key_of) {
            rc = fr_fail(err, FR_ENOMEM, "out of memory for a partition statement");
            goto fail;
        }
        FR_GOTO(spec_keys(t, keys, nkeys, ps, key_of, err));
        bool was_skipped;
        FR_GOTO(change_one(s, st, t, ps, &was_skipped, err));
        if (was_skipped)
            skipped++;
        else
            done++;
    }
    bool add = st->kind == SQL_ADD_PARTITION;
    char tail[96] = "";
    if (skipped)
        snprintf(tail, sizeof tail, " (%d %s)", skipped,
                 add ? (skipped == 1 ? "already exists" : "already exist")
                     : (skipped == 1 ? "does not exist" : "do not exist"));
    rc = sql_end_message(sink, err, "%d partition%s %s %s table %s.%s%s", done,
                         done == 1 ? "" : "s", add ? "added" : "dropped", add ? "to" : "from",
                         fr_table_db(t), fr_table_name(t), tail);
fail:
    fr_free(key_of);
    fr_table_release(t);
    return rc;
}

/* ---- SHOW PARTITIONS ------------------------------------------------------------------- */

/* Whether a partition value (text) equals a spec value (text), both read as the column's
 * type, so that '2026-1-5' and '2026-01-05' name the same DATE partition. A spec value that
 * does not parse is an error. */
static int value_matches(const fr_type *type, const char *stored, const sql_option *given,
                         bool *match, fr_error *err)
{
    fr_value a, b;
    fr_error e2 = {0};
    char tn[64];
    fr_type_format(type, false, tn, sizeof tn);
    if (fr_value_parse(given->value, strlen(given->value), type, &b, &e2) < 0)
        return sql_fail_at(err, FR_EINVAL, given->pos, "partition value '%s' is not a valid %s: "
                           "%s", given->value, tn, e2.msg);
    if (fr_value_parse(stored, strlen(stored), type, &a, &e2) < 0) {
        *match = strcmp(stored, given->value) == 0;
        return 0;
    }
    int cmp = 1;
    if (fr_value_compare(&a, &b, &cmp, &e2) < 0) cmp = strcmp(stored, given->value);
    *match = cmp == 0;
    return 0;
}

static int exec_show_partitions(fr_sql_session *s, const sql_stmt *st, const fr_sql_sink *sink,
                                fr_error *err)
{
    fr_table *t = NULL;
    FR_TRY(sql_open_table(s, &st->table, &t, err));
    fr_partition *parts = NULL;
    int nparts = 0, nkeys, nnames = 0, rc;
    const int *keys;
    int *key_of = NULL;
    char **names = NULL;
    const sql_partition_spec *ps = st->npartitions ? &st->partitions[0] : NULL;
    FR_GOTO(partition_keys(t, st, &keys, &nkeys, err));
    if (ps) {
        key_of = fr_calloc((size_t)ps->nvalues + 1, sizeof *key_of);
        if (!key_of) {
            rc = fr_fail(err, FR_ENOMEM, "out of memory listing partitions");
            goto fail;
        }
        FR_GOTO(spec_keys(t, keys, nkeys, ps, key_of, err));
    }
    rc = fr_table_list_partitions(t, &parts, &nparts, err);
    if (rc < 0) {
        sql_wrap_at(err, st->table.pos);
        goto fail;
    }
    names = fr_calloc((size_t)nparts + 1, sizeof *names);
    if (!names) {
        rc = fr_fail(err, FR_ENOMEM, "out of memory listing partitions");
        goto fail;
    }
    for (int p = 0; p < nparts; p++) {
        bool keep = true;
        for (int i = 0; ps && keep && i < ps->nvalues; i++) {
            int k = key_of[i];
            const fr_type *type = &fr_schema_field(fr_table_schema(t), keys[k])->type;
            if (k >= parts[p].nvalues) {
                keep = false;
                break;
            }
            FR_GOTO(value_matches(type, parts[p].values[k], &ps->values[i], &keep, err));
        }
        if (keep) names[nnames++] = parts[p].name;
    }
    rc = sql_emit_names(sink, "partition name", names, nnames, err);
fail:
    fr_free(key_of);
    fr_free(names);
    fr_partitions_free(parts, nparts);
    fr_table_release(t);
    return rc;
}

int sql_exec_partition(fr_sql_session *s, const sql_stmt *st, const fr_sql_sink *sink,
                       fr_error *err)
{
    if (st->kind == SQL_SHOW_PARTITIONS) return exec_show_partitions(s, st, sink, err);
    return exec_change_partitions(s, st, sink, err);
}
