/* engine_lake.c — what the engine knows of a lake-enabled table's lake: the 'table.datalake.*'
 * options, the lake spec (lake schema with field ids, partition columns, key columns), the
 * lake directory `<warehouse>/<db>/<table>`, opening the lake table, and the conversion of
 * rows between the table's types and the lake's (both ways).
 *
 * Invariants: t->lake is set when the table is made and never changes until it is freed, so
 * its spec is read without a lock; the lake table is opened for writing only under
 * lake->tier_mu (engine_tier.c), and the first such open removes the files of commits that
 * never published, which is safe then because no commit of this table is in progress.
 *
 * Rows: the lake keeps times and timestamps in microseconds (Iceberg v2), so a TIME(p),
 * TIMESTAMP(p) or TIMESTAMP_LTZ(p) column with p < 6 is multiplied by 10^(6 - p) on its way
 * in and divided on its way out, exactly; CHAR(n) and VARCHAR(n) are STRING in the lake with
 * the same bytes. Conversion copies each column's buffers once (no per-value work for the
 * other types). */
#include <stdlib.h>

#include "engine/engine_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <strings.h>

#define OPT_LAKE_ENABLED "table.datalake.enabled"
#define OPT_LAKE_FORMAT "table.datalake.format"
#define OPT_LAKE_FRESHNESS "table.datalake.freshness"
#define FR_LAKE_FRESHNESS_DEFAULT_MS (3 * 60 * 1000)

/* ---- options --------------------------------------------------------------------------- */

int fr_lake_opt_parse(const char *key, const char *value, fr_table_conf *c, fr_buf *norm,
                      fr_error *err)
{
    if (c->lake_freshness_ms == 0) c->lake_freshness_ms = FR_LAKE_FRESHNESS_DEFAULT_MS;
    if (strcmp(key, OPT_LAKE_ENABLED) == 0) {
        if (strcasecmp(value, "true") == 0) c->lake_enabled = true;
        else if (strcasecmp(value, "false") == 0) c->lake_enabled = false;
        else
            return fr_fail(err, FR_EINVAL, "option %s = '%.64s': give 'true' or 'false'",
                           OPT_LAKE_ENABLED, value);
        return fr_buf_printf(norm, err, "%s", c->lake_enabled ? "true" : "false");
    }
    if (strcmp(key, OPT_LAKE_FORMAT) == 0) {
        if (strcasecmp(value, "iceberg") == 0) return fr_buf_printf(norm, err, "iceberg");
        if (strcasecmp(value, "paimon") == 0)
            return fr_fail(err, FR_EUNSUPPORTED, "option %s = 'paimon': Paimon lake tables "
                           "are not yet supported; use 'iceberg'", OPT_LAKE_FORMAT);
        return fr_fail(err, FR_EINVAL, "option %s = '%.64s': the lake formats are 'iceberg' "
                       "(and 'paimon', not yet supported)", OPT_LAKE_FORMAT, value);
    }
    if (strcmp(key, OPT_LAKE_FRESHNESS) == 0) {
        int64_t ms = 0;
        fr_error perr = {0};
        if (fr_parse_duration_ms(value, &ms, &perr) < 0 || ms <= 0)
            return fr_fail(err, FR_EINVAL, "option %s = '%.64s': give a positive duration "
                           "such as '3min' or '30s'", OPT_LAKE_FRESHNESS, value);
        c->lake_freshness_ms = ms;
        return FR_OK;
    }
    return 1;
}

int fr_lake_opt_finish(const fr_schema *schema, fr_table_conf *c, fr_error *err)
{
    if (c->lake_freshness_ms == 0) c->lake_freshness_ms = FR_LAKE_FRESHNESS_DEFAULT_MS;
    if (!c->lake_enabled) return FR_OK;
    FR_CHECK(c->retention_bytes < 0, FR_EINVAL, err, "option table.log.retention.bytes cannot "
             "be used with %s = 'true': a lake-enabled table keeps each log segment until it "
             "is tiered; use table.log.ttl", OPT_LAKE_ENABLED);
    fr_schema *lake = NULL;
    fr_error lerr = {0};
    int rc = fr_lake_schema(schema, &lake, NULL, &lerr);
    fr_schema_free(lake);
    if (rc < 0)
        return fr_fail(err, rc, "%s = 'true': %s (the lake keeps times in microseconds: "
                       "declare time columns with a precision of at most 6, or leave the "
                       "table out of the lake)", OPT_LAKE_ENABLED, lerr.msg);
    return FR_OK;
}

/* ---- the table's lake state ------------------------------------------------------------- */

static int lake_spec_init(fr_table *t, fr_table_lake *l, fr_error *err)
{
    const fr_schema *ts = fr_table_schema(t);
    int n = fr_schema_num_fields(ts);
    l->field_ids = fr_calloc((size_t)FR_SCHEMA_COLUMNS_MAX + FR_LAKE_EXTRA_COLUMNS,
                             sizeof *l->field_ids);
    l->part_cols = fr_calloc((size_t)t->conf.npart + 1, sizeof *l->part_cols);
    l->key_cols = fr_calloc((size_t)t->conf.npk + 1, sizeof *l->key_cols);
    l->to_micros = fr_calloc((size_t)n, sizeof *l->to_micros);
    FR_CHECK(l->field_ids && l->part_cols && l->key_cols && l->to_micros, FR_ENOMEM, err,
             "out of memory making the lake spec of %s", t->qname);
    FR_TRY(fr_lake_schema(ts, &l->schema, l->field_ids, err));
    for (int i = 0; i < t->conf.npart; i++) l->part_cols[l->npart_cols++] = t->conf.part[i];
    /* A primary-key table's buckets hold disjoint keys, and its equality deletes are scoped
     * to one bucket's partition: deletes of one round never touch another bucket's rows. */
    if (t->conf.npk > 0) l->part_cols[l->npart_cols++] = n; /* __bucket */
    for (int i = 0; i < t->conf.npk; i++) l->key_cols[l->nkey_cols++] = t->conf.pk[i];
    for (int i = 0; i < n; i++) {
        const fr_type *ty = &fr_schema_field(ts, i)->type;
        if (ty->id == FR_T_TIME || ty->id == FR_T_TIMESTAMP || ty->id == FR_T_TIMESTAMP_LTZ)
            l->to_micros[i] = 1000000 / fr_type_time_units(ty->precision);
    }
    /* The writer's defaults: pages of 1 MiB, ZSTD level 3 (DuckDB's level for COMPRESSION
     * zstd). Pages of 4 MiB would keep the dictionary of a string column that repeats a few
     * thousand distinct values, which a 1 MiB first page judges not worth it; but values
     * that are nearly all distinct lose their dictionary after 1024 values whatever the
     * page size, and there larger pages only make every page buffer, the writer's and the
     * readers', four times larger for no gain in time (measured with bench_lake_tier). */
    fr_parquet_options_default(&l->parquet);
    l->spec = (fr_lake_spec){
        .schema = l->schema,
        .field_ids = l->field_ids,
        .partition_cols = l->part_cols,
        .npartition_cols = l->npart_cols,
        .key_cols = l->key_cols,
        .nkey_cols = l->nkey_cols,
        .parquet = &l->parquet,
        .target_file_bytes = 0,
    };
    return FR_OK;
}

int fr_table_lake_init(fr_table *t, const char *data_dir, const char *warehouse,
                       fr_error *err)
{
    if (!t->conf.lake_enabled) return FR_OK;
    fr_table_lake *l = fr_calloc(1, sizeof *l);
    FR_CHECK(l, FR_ENOMEM, err, "out of memory opening the lake of %s", t->qname);
    pthread_mutex_init(&l->tier_mu, NULL);
    pthread_mutex_init(&l->st_mu, NULL);
    atomic_init(&l->opened, false);
    atomic_init(&l->next_due_ms, 0);
    atomic_init(&l->claimed, false);
    l->snapshot_id = -1;
    t->lake = l;
    fr_buf path;
    fr_buf_init(&path);
    int rc = warehouse && warehouse[0]
                 ? fr_buf_printf(&path, err, "%s/%s/%s%c", warehouse, t->db, t->name, '\0')
                 : fr_buf_printf(&path, err, "%s/lake/%s/%s%c", data_dir, t->db, t->name, '\0');
    if (rc == FR_OK) l->dir = (char *)fr_buf_steal(&path, NULL);
    fr_buf_free(&path);
    if (rc == FR_OK) rc = lake_spec_init(t, l, err);
    if (rc < 0) fr_error_wrap(err, "table %s", t->qname);
    return rc; /* on failure the table's destruction frees what was made */
}

/* Whether the engine's catalog holds a table named as t (a table created again after t was
 * dropped, whose lake directory is the same). */
static bool name_taken(const fr_table *t)
{
    if (!t->link) return false;
    bool taken = false;
    pthread_mutex_lock(&t->link->mu);
    fr_engine *e = t->link->e;
    if (e) {
        pthread_mutex_lock(&e->mu);
        for (int i = 0; i < e->ntables && !taken; i++)
            taken = e->tables[i] != t && strcmp(e->tables[i]->db, t->db) == 0 &&
                    strcmp(e->tables[i]->name, t->name) == 0;
        pthread_mutex_unlock(&e->mu);
    }
    pthread_mutex_unlock(&t->link->mu);
    return taken;
}

void fr_table_lake_created(fr_table *t)
{
    if (!t->lake || !fr_path_exists(t->lake->dir)) return;
    /* What is there belongs to a table of the same name dropped before (its removal was
     * cut short): the new table starts with an empty lake. */
    FR_WARN("table %s is new but its lake directory %s exists: removing it", t->qname,
            t->lake->dir);
    fr_error err = {0};
    if (fr_remove_tree(t->lake->dir, &err) < 0) FR_WARN("%s", err.msg);
}

void fr_table_lake_free(fr_table *t)
{
    fr_table_lake *l = t->lake;
    if (!l) return;
    if (l->ice) fr_iceberg_close(l->ice);
    if (atomic_load(&t->dropped) && l->dir && !name_taken(t)) {
        fr_error err = {0};
        if (fr_remove_tree(l->dir, &err) < 0)
            FR_WARN("table %s was dropped but its lake stays: %s", t->qname, err.msg);
    }
    fr_schema_free(l->schema);
    fr_free(l->field_ids);
    fr_free(l->part_cols);
    fr_free(l->key_cols);
    fr_free(l->to_micros);
    fr_free(l->offsets);
    fr_free(l->dir);
    pthread_mutex_destroy(&l->tier_mu);
    pthread_mutex_destroy(&l->st_mu);
    fr_free(l);
    t->lake = NULL;
}

bool fr_table_lake_enabled(const fr_table *t) { return t->lake != NULL; }

const fr_schema *fr_table_lake_schema(const fr_table *t)
{
    return t->lake ? t->lake->schema : NULL;
}

const char *fr_table_lake_dir(const fr_table *t) { return t->lake ? t->lake->dir : NULL; }

const fr_lake_spec *fr_table_lake_spec(const fr_table *t)
{
    return t->lake ? &t->lake->spec : NULL;
}

int fr_table_lake_open(fr_table *t, fr_iceberg_table **out, fr_error *err)
{
    *out = NULL;
    FR_CHECK(t->lake, FR_EINVAL, err, "table %s is not lake-enabled (create it with "
             "'table.datalake.enabled' = 'true')", t->qname);
    fr_table_lake *l = t->lake;
    /* The first open goes through the tiering mutex: it creates the lake table and removes
     * orphans, neither of which may race a round. */
    if (!atomic_load(&l->opened)) {
        pthread_mutex_lock(&l->tier_mu);
        int rc = fr_table_lake_ensure_locked(t, err);
        pthread_mutex_unlock(&l->tier_mu);
        FR_TRY(rc);
    }
    int rc = fr_iceberg_open(l->dir, &l->spec, out, err);
    if (rc < 0) fr_error_wrap(err, "the lake of table %s", t->qname);
    return rc;
}

static int lake_offset_order(const void *a, const void *b)
{
    const fr_lake_offset *x = a, *y = b;
    if (x->partition_id != y->partition_id) return x->partition_id < y->partition_id ? -1 : 1;
    return (x->bucket > y->bucket) - (x->bucket < y->bucket);
}

int fr_table_lake_current(fr_table *t, fr_lake_snapshot **out, fr_error *err)
{
    *out = NULL;
    FR_CHECK(t->lake, FR_EINVAL, err, "table %s has no lake: create it with "
             "'table.datalake.enabled' = 'true'", t->qname);
    fr_iceberg_table *ice = NULL;
    FR_TRY(fr_table_lake_open(t, &ice, err));
    int rc = fr_iceberg_current(ice, out, err);
    fr_iceberg_close(ice);
    if (rc < 0) return fr_error_wrap(err, "the lake of table %s", t->qname);
    if (*out)
        qsort((*out)->offsets, (size_t)(*out)->noffsets, sizeof *(*out)->offsets,
              lake_offset_order);
    return FR_OK;
}

int fr_table_lake_ensure_locked(fr_table *t, fr_error *err)
{
    fr_table_lake *l = t->lake;
    if (l->ice) return FR_OK;
    int rc = fr_mkdirs(l->dir, err);
    if (rc == FR_OK) rc = fr_iceberg_open(l->dir, &l->spec, &l->ice, err);
    if (rc < 0) {
        l->ice = NULL;
        fr_error_wrap(err, "the lake of table %s at %s", t->qname, l->dir);
        return rc;
    }
    int removed = 0;
    fr_error oerr = {0};
    if (fr_iceberg_remove_orphans(l->ice, &removed, &oerr) < 0)
        FR_WARN("the lake of table %s: removing files of rounds that never committed: %s",
                t->qname, oerr.msg);
    else if (removed > 0)
        FR_INFO("the lake of table %s: removed %d files of rounds that never committed",
                t->qname, removed);
    atomic_store(&l->opened, true);
    return FR_OK;
}

/* ---- rows: table <-> lake --------------------------------------------------------------- */

static size_t bitmap_bytes(int64_t rows) { return (size_t)((rows + 7) / 8); }

/* A copy of n bytes (at least one byte allocated, so that an empty batch has buffers). */
static uint8_t *dup_bytes(const void *p, size_t n)
{
    uint8_t *out = fr_malloc(n ? n : 1);
    if (out && n) memcpy(out, p, n);
    return out;
}

static int64_t get_int(const uint8_t *values, int width, int64_t row)
{
    if (width == 4) {
        int32_t v;
        memcpy(&v, values + 4 * row, 4);
        return v;
    }
    int64_t v;
    memcpy(&v, values + 8 * row, 8);
    return v;
}

static void put_int(uint8_t *values, int width, int64_t row, int64_t v)
{
    if (width == 4) {
        int32_t w = (int32_t)v;
        memcpy(values + 4 * row, &w, 4);
    } else {
        memcpy(values + 8 * row, &v, 8);
    }
}

/* Copies column c (rows rows, of type from) into bufs[0..3) as type to. A time-like column
 * is multiplied by mul (> 1: to microseconds) or divided by div (> 1: back); nulls are 0. */
static int column_copy(const fr_column *c, int64_t rows, const fr_type *from, const fr_type *to,
                       int64_t mul, int64_t div, uint8_t **bufs, fr_error *err)
{
    if (c->null_count > 0) {
        bufs[0] = dup_bytes(c->validity, bitmap_bytes(rows));
        FR_CHECK(bufs[0], FR_ENOMEM, err, "out of memory converting lake rows");
    }
    if (fr_type_is_varwidth(from)) {
        int32_t base = rows > 0 ? c->offsets[0] : 0;
        int32_t *off = fr_malloc((size_t)(rows + 1) * sizeof *off);
        FR_CHECK(off, FR_ENOMEM, err, "out of memory converting lake rows");
        bufs[1] = (uint8_t *)off;
        off[0] = 0;
        for (int64_t i = 1; i <= rows; i++) off[i] = c->offsets[i] - base;
        bufs[2] = dup_bytes(c->values ? c->values + base : NULL, (size_t)off[rows]);
        FR_CHECK(bufs[2], FR_ENOMEM, err, "out of memory converting lake rows");
        return FR_OK;
    }
    if (from->id == FR_T_BOOLEAN) {
        bufs[2] = dup_bytes(c->values, bitmap_bytes(rows));
        FR_CHECK(bufs[2], FR_ENOMEM, err, "out of memory converting lake rows");
        return FR_OK;
    }
    int wf = fr_type_width(from), wt = fr_type_width(to);
    if (wf == wt && mul <= 1 && div <= 1) {
        bufs[2] = dup_bytes(c->values, (size_t)wf * (size_t)rows);
        FR_CHECK(bufs[2], FR_ENOMEM, err, "out of memory converting lake rows");
        return FR_OK;
    }
    bufs[2] = fr_malloc((size_t)wt * (size_t)(rows ? rows : 1));
    FR_CHECK(bufs[2], FR_ENOMEM, err, "out of memory converting lake rows");
    for (int64_t i = 0; i < rows; i++) {
        int64_t v = fr_column_is_null(c, i) ? 0 : get_int(c->values, wf, i);
        /* Unsigned arithmetic: a value out of range wraps rather than being undefined (the
         * range of valid times is far inside int64 microseconds). */
        if (mul > 1) v = (int64_t)((uint64_t)v * (uint64_t)mul);
        if (div > 1) v /= div;
        put_int(bufs[2], wt, i, v);
    }
    return FR_OK;
}

static void bufs_free(uint8_t **bufs, int n)
{
    for (int i = 0; i < n; i++) fr_free(bufs[i]);
}

/* The extra columns: __bucket, __offset, __timestamp. */
static int extra_columns(int64_t rows, int32_t bucket, const int64_t *offsets,
                         int64_t commit_ts_ms, uint8_t **bufs, fr_error *err)
{
    int32_t *b = fr_malloc((size_t)(rows ? rows : 1) * sizeof *b);
    int64_t *o = fr_malloc((size_t)(rows ? rows : 1) * sizeof *o);
    int64_t *ts = fr_malloc((size_t)(rows ? rows : 1) * sizeof *ts);
    bufs[2] = (uint8_t *)b;
    bufs[5] = (uint8_t *)o;
    bufs[8] = (uint8_t *)ts;
    FR_CHECK(b && o && ts, FR_ENOMEM, err, "out of memory converting lake rows");
    int64_t us = commit_ts_ms * 1000;
    for (int64_t i = 0; i < rows; i++) {
        b[i] = bucket;
        o[i] = offsets[i];
        ts[i] = us;
    }
    return FR_OK;
}

int fr_lake_rows_from_table(const fr_table *t, const fr_batch *rows, int32_t bucket,
                            const int64_t *offsets, int64_t commit_ts_ms, fr_batch **out,
                            fr_error *err)
{
    *out = NULL;
    const fr_table_lake *l = t->lake;
    FR_CHECK(l, FR_EINVAL, err, "table %s is not lake-enabled", t->qname);
    const fr_schema *ts = fr_table_schema(t);
    int n = fr_schema_num_fields(ts), nl = n + FR_LAKE_EXTRA_COLUMNS;
    FR_CHECK(fr_batch_num_columns(rows) == n, FR_EINVAL, err, "table %s has %d columns but "
             "the rows to tier have %d", t->qname, n, fr_batch_num_columns(rows));
    int64_t nrows = fr_batch_num_rows(rows);
    uint8_t **bufs = fr_calloc((size_t)nl * 3, sizeof *bufs);
    int64_t *nulls = fr_calloc((size_t)nl, sizeof *nulls);
    int rc = bufs && nulls ? FR_OK : fr_fail(err, FR_ENOMEM, "out of memory converting rows");
    for (int i = 0; rc == FR_OK && i < n; i++) {
        const fr_column *c = fr_batch_column(rows, i);
        nulls[i] = c->null_count;
        rc = column_copy(c, nrows, &fr_schema_field(ts, i)->type,
                         &fr_schema_field(l->schema, i)->type, l->to_micros[i], 1, &bufs[3 * i],
                         err);
    }
    if (rc == FR_OK) rc = extra_columns(nrows, bucket, offsets, commit_ts_ms, &bufs[3 * n], err);
    if (rc == FR_OK) {
        rc = fr_batch_from_buffers(l->schema, nrows, bufs, nulls, out, err);
    } else if (bufs) {
        bufs_free(bufs, 3 * nl);
    }
    fr_free(bufs);
    fr_free(nulls);
    return rc;
}

/* Whether rows of the table are the lake's first columns as they are (same names, types and
 * nullability, no time to scale) and the lake has no partitions, so that they go to the lake
 * beside the three added columns without being copied. */
static bool rows_as_they_are(const fr_table *t)
{
    const fr_table_lake *l = t->lake;
    if (l->npart_cols > 0) return false;
    const fr_schema *ts = fr_table_schema(t);
    for (int i = 0; i < fr_schema_num_fields(ts); i++) {
        const fr_field *a = fr_schema_field(ts, i), *b = fr_schema_field(l->schema, i);
        if (l->to_micros[i] > 1 || !fr_type_equal(&a->type, &b->type) ||
            a->type.nullable != b->type.nullable || strcmp(a->name, b->name) != 0)
            return false;
    }
    return true;
}

/* The batch of __bucket, __offset and __timestamp for rows rows. */
static int extra_batch(const fr_table *t, int64_t rows, int32_t bucket, const int64_t *offsets,
                       int64_t commit_ts_ms, fr_batch **out, fr_error *err)
{
    const fr_schema *ls = t->lake->schema;
    int n = fr_schema_num_fields(ls) - FR_LAKE_EXTRA_COLUMNS;
    int cols[FR_LAKE_EXTRA_COLUMNS];
    for (int i = 0; i < FR_LAKE_EXTRA_COLUMNS; i++) cols[i] = n + i;
    fr_schema *schema = NULL;
    FR_TRY(fr_schema_project(ls, cols, FR_LAKE_EXTRA_COLUMNS, &schema, err));
    uint8_t *bufs[3 * FR_LAKE_EXTRA_COLUMNS] = {0};
    int64_t nulls[FR_LAKE_EXTRA_COLUMNS] = {0};
    int rc = extra_columns(rows, bucket, offsets, commit_ts_ms, bufs, err);
    if (rc == FR_OK) rc = fr_batch_from_buffers(schema, rows, bufs, nulls, out, err);
    else bufs_free(bufs, 3 * FR_LAKE_EXTRA_COLUMNS);
    fr_schema_free(schema);
    return rc;
}

int fr_lake_commit_rows(const fr_table *t, fr_iceberg_commit *commit, const fr_batch *rows,
                        int32_t bucket, const int64_t *offsets, int64_t commit_ts_ms,
                        fr_error *err)
{
    fr_batch *more = NULL;
    int rc;
    if (rows_as_they_are(t)) {
        rc = extra_batch(t, fr_batch_num_rows(rows), bucket, offsets, commit_ts_ms, &more, err);
        if (rc == FR_OK) rc = fr_iceberg_commit_add_rows2(commit, rows, more, err);
    } else {
        rc = fr_lake_rows_from_table(t, rows, bucket, offsets, commit_ts_ms, &more, err);
        if (rc == FR_OK) rc = fr_iceberg_commit_add_rows(commit, more, err);
    }
    fr_batch_free(more);
    return rc;
}

/* The schema of fr_lake_rows_to_table's result. */
static int to_table_schema(const fr_table *t, const int *lake_cols, int ncols, fr_schema **out,
                           fr_error *err)
{
    const fr_schema *ts = fr_table_schema(t);
    int n = fr_schema_num_fields(ts);
    fr_field *fields = fr_calloc((size_t)ncols + 1, sizeof *fields);
    FR_CHECK(fields, FR_ENOMEM, err, "out of memory converting lake rows");
    for (int i = 0; i < ncols; i++)
        fields[i] = lake_cols[i] < n ? *fr_schema_field(ts, lake_cols[i])
                                     : *fr_schema_field(t->lake->schema, lake_cols[i]);
    int rc = fr_schema_new(fields, ncols, fr_schema_id(ts), out, err);
    fr_free(fields);
    return rc;
}

int fr_lake_rows_to_table(const fr_table *t, const fr_batch *lake, const int *lake_cols,
                          int ncols, fr_batch **out, fr_error *err)
{
    *out = NULL;
    const fr_table_lake *l = t->lake;
    FR_CHECK(l, FR_EINVAL, err, "table %s is not lake-enabled", t->qname);
    int n = fr_schema_num_fields(fr_table_schema(t)), nl = n + FR_LAKE_EXTRA_COLUMNS;
    FR_CHECK(fr_batch_num_columns(lake) == ncols, FR_EINVAL, err, "lake rows of table %s have "
             "%d columns but %d were named", t->qname, fr_batch_num_columns(lake), ncols);
    for (int i = 0; i < ncols; i++)
        FR_CHECK(lake_cols[i] >= 0 && lake_cols[i] < nl, FR_EINVAL, err,
                 "the lake of table %s has columns 0 to %d, not %d", t->qname, nl - 1,
                 lake_cols[i]);
    fr_schema *schema = NULL;
    FR_TRY(to_table_schema(t, lake_cols, ncols, &schema, err));
    int64_t nrows = fr_batch_num_rows(lake);
    uint8_t **bufs = fr_calloc((size_t)ncols * 3 + 1, sizeof *bufs);
    int64_t *nulls = fr_calloc((size_t)ncols + 1, sizeof *nulls);
    int rc = bufs && nulls ? FR_OK : fr_fail(err, FR_ENOMEM, "out of memory converting rows");
    for (int i = 0; rc == FR_OK && i < ncols; i++) {
        const fr_column *c = fr_batch_column(lake, i);
        const fr_type *want = &fr_schema_field(schema, i)->type;
        int k = lake_cols[i];
        nulls[i] = c->null_count;
        rc = column_copy(c, nrows, &c->type, want, 1, k < n ? l->to_micros[k] : 1,
                         &bufs[3 * i], err);
    }
    if (rc == FR_OK) rc = fr_batch_from_buffers(schema, nrows, bufs, nulls, out, err);
    else if (bufs) bufs_free(bufs, 3 * ncols);
    fr_free(bufs);
    fr_free(nulls);
    fr_schema_free(schema);
    return rc;
}
