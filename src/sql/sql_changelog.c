/* sql_changelog.c — the $changelog virtual table: a table's log read as a log table, each
 * record with its change type (+I, -U, +U, -D for a primary-key table; +A for a log
 * table), its offset and its commit time in front of the table's columns, as Fluss shows
 * it. This file owns the virtual schema and the assembly of its batches from what a scan
 * of the log returns; SELECT (sql_select.c) plans and runs the read.
 *
 * Invariant: the metadata columns come first, in this order, and are never NULL. */
#include <stdio.h>

#include "sql/sql_int.h"

static const char *const meta_names[SQL_CHANGELOG_META_COLUMNS] = {
    "_change_type", "_log_offset", "_commit_timestamp"};

int sql_changelog_schema(const fr_table *t, fr_schema **out, fr_error *err)
{
    const fr_schema *ts = fr_table_schema(t);
    int n = fr_schema_num_fields(ts), m = SQL_CHANGELOG_META_COLUMNS;
    for (int i = 0; i < m; i++)
        if (fr_schema_find(ts, meta_names[i]) >= 0)
            return fr_fail(err, FR_EINVAL, "table %s.%s has a column named %s, which its "
                           "$changelog adds: rename the column to read the changelog",
                           fr_table_db(t), fr_table_name(t), meta_names[i]);
    FR_CHECK(n + m <= FR_SCHEMA_COLUMNS_MAX, FR_ELIMIT, err,
             "table %s.%s has too many columns for its $changelog", fr_table_db(t),
             fr_table_name(t));
    fr_field *f = fr_calloc((size_t)(n + m), sizeof *f);
    FR_CHECK(f, FR_ENOMEM, err, "out of memory for the changelog schema");
    f[0] = (fr_field){.name = (char *)meta_names[0], .type = fr_type_of(FR_T_STRING)};
    f[1] = (fr_field){.name = (char *)meta_names[1], .type = fr_type_of(FR_T_BIGINT)};
    f[2] = (fr_field){.name = (char *)meta_names[2],
                      .type = fr_type_time_like(FR_T_TIMESTAMP_LTZ, 3)};
    for (int i = 0; i < m; i++) f[i].type.nullable = false;
    for (int i = 0; i < n; i++) f[m + i] = *fr_schema_field(ts, i);
    int rc = fr_schema_new(f, n + m, 0, out, err);
    fr_free(f);
    return rc;
}

/* The buffers of one metadata column (validity, offsets, values) for rows rows. */
static int meta_column(int which, int64_t rows, const int64_t *offsets,
                       const uint8_t *change_types, int64_t commit_ts, uint8_t **bufs,
                       fr_error *err)
{
    bufs[0] = bufs[1] = bufs[2] = NULL;
    if (which == 0) {
        int32_t *offs = fr_malloc(sizeof *offs * (size_t)(rows + 1));
        uint8_t *text = fr_malloc((size_t)rows * 2 + 1);
        if (!offs || !text) {
            fr_free(offs);
            fr_free(text);
            return fr_fail(err, FR_ENOMEM, "out of memory building change types");
        }
        for (int64_t r = 0; r < rows; r++) {
            fr_change_type ct = change_types ? (fr_change_type)change_types[r] : FR_CHANGE_APPEND;
            memcpy(text + 2 * r, fr_change_type_name(ct), 2);
            offs[r] = (int32_t)(2 * r);
        }
        offs[rows] = (int32_t)(2 * rows);
        bufs[1] = (uint8_t *)offs;
        bufs[2] = text;
        return 0;
    }
    int64_t *v = fr_malloc(sizeof *v * (size_t)(rows + 1));
    FR_CHECK(v, FR_ENOMEM, err, "out of memory building offsets");
    for (int64_t r = 0; r < rows; r++) v[r] = which == 1 ? offsets[r] : commit_ts;
    bufs[2] = (uint8_t *)v;
    return 0;
}

int sql_changelog_batch(const fr_schema *schema, const int *cols, int ncols,
                        const int *scan_of, const fr_batch *scanned, const int64_t *offsets,
                        const uint8_t *change_types, int64_t commit_ts, fr_batch **out,
                        fr_error *err)
{
    int64_t rows = fr_batch_num_rows(scanned);
    FR_CHECK(rows < INT32_MAX / 2, FR_ELIMIT, err, "a changelog batch of %lld rows is too long",
             (long long)rows);
    uint8_t **bufs = fr_calloc((size_t)ncols * 3 + 1, sizeof *bufs);
    int64_t *nulls = fr_calloc((size_t)ncols + 1, sizeof *nulls);
    int rc = 0;
    if (!bufs || !nulls) {
        rc = fr_fail(err, FR_ENOMEM, "out of memory building a changelog batch");
        goto fail;
    }
    for (int i = 0; i < ncols; i++) {
        if (cols[i] < SQL_CHANGELOG_META_COLUMNS)
            rc = meta_column(cols[i], rows, offsets, change_types, commit_ts, &bufs[3 * i], err);
        else
            rc = sql_column_copy(fr_batch_column(scanned, scan_of[i]), &bufs[3 * i], &nulls[i],
                                 err);
        if (rc < 0) goto fail;
    }
    rc = fr_batch_from_buffers(schema, rows, bufs, nulls, out, err);
    fr_free(bufs);
    fr_free(nulls);
    return rc;
fail:
    for (int i = 0; bufs && i < 3 * ncols; i++) fr_free(bufs[i]);
    fr_free(bufs);
    fr_free(nulls);
    return rc;
}
