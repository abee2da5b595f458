/* lake_iceberg_testkit.h — helpers of the Iceberg table tests: a sample table (id BIGINT NOT
 * NULL, name STRING, v DOUBLE, region STRING, then the lake columns), batches of rows, and
 * scans collected as sorted row texts to compare with a model. */
#ifndef FIRTH_LAKE_ICEBERG_TESTKIT_H
#define FIRTH_LAKE_ICEBERG_TESTKIT_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "lake/lake.h"
#include "lake/lake_iceberg_int.h"

#define IK_CHECK(expr, err)                                                                  \
    do {                                                                                     \
        int ik_rc_ = (expr);                                                                 \
        if (ik_rc_ < 0) fail_msg("%s failed: %d %s", #expr, ik_rc_, (err).msg);               \
    } while (0)

enum { IK_ID, IK_NAME, IK_V, IK_REGION, IK_BUCKET, IK_OFFSET, IK_TS, IK_NCOLS };

static inline char *ik_tmpdir(const char *name)
{
    const char *base = getenv("FIRTH_TEST_TMP");
    if (!base || !*base) base = "/tmp";
    fr_error err = {0};
    IK_CHECK(fr_mkdirs(base, &err), err);
    char tmpl[1024];
    snprintf(tmpl, sizeof tmpl, "%s/%s.XXXXXX", base, name);
    assert_non_null(mkdtemp(tmpl));
    return fr_strdup(tmpl);
}

static inline void ik_rmdir(char *dir)
{
    fr_error err = {0};
    IK_CHECK(fr_remove_tree(dir, &err), err);
    fr_free(dir);
}

/* The sample table's lake spec. kind: 0 log table, 1 log table partitioned by region,
 * 2 PK table (key id) partitioned by __bucket. */
typedef struct ik_table {
    fr_schema *lake;
    int32_t ids[FR_SCHEMA_COLUMNS_MAX + 3];
    int part[2];
    int key[1];
    fr_lake_spec spec;
} ik_table;

static inline void ik_table_init(ik_table *k, int kind, int64_t target_file_bytes)
{
    fr_error err = {0};
    fr_field f[4] = {
        {"id", fr_type_of(FR_T_BIGINT)},
        {"name", fr_type_of(FR_T_STRING)},
        {"v", fr_type_of(FR_T_DOUBLE)},
        {"region", fr_type_of(FR_T_STRING)},
    };
    f[0].type.nullable = false;
    fr_schema *t;
    IK_CHECK(fr_schema_new(f, 4, 0, &t, &err), err);
    IK_CHECK(fr_lake_schema(t, &k->lake, k->ids, &err), err);
    fr_schema_free(t);
    memset(&k->spec, 0, sizeof k->spec);
    k->spec.schema = k->lake;
    k->spec.field_ids = k->ids;
    k->spec.target_file_bytes = target_file_bytes;
    if (kind == 1) {
        k->part[0] = IK_REGION;
        k->spec.partition_cols = k->part;
        k->spec.npartition_cols = 1;
    } else if (kind == 2) {
        k->part[0] = IK_BUCKET;
        k->key[0] = IK_ID;
        k->spec.partition_cols = k->part;
        k->spec.npartition_cols = 1;
        k->spec.key_cols = k->key;
        k->spec.nkey_cols = 1;
    }
}

static inline void ik_table_free(ik_table *k) { fr_schema_free(k->lake); }

/* One row of the sample table. name NULL: a null name. */
typedef struct ik_row {
    int64_t id;
    const char *name;
    double v;
    const char *region;
    int32_t bucket;
    int64_t offset;
} ik_row;

static inline fr_batch *ik_batch(const fr_schema *lake, const ik_row *rows, int n)
{
    fr_error err = {0};
    fr_builder *b;
    IK_CHECK(fr_builder_new(lake, &b, &err), err);
    for (int i = 0; i < n; i++) {
        const ik_row *r = &rows[i];
        IK_CHECK(fr_builder_append_i64(b, IK_ID, r->id, &err), err);
        if (r->name) IK_CHECK(fr_builder_append_bytes(b, IK_NAME, r->name, strlen(r->name), &err), err);
        else IK_CHECK(fr_builder_append_null(b, IK_NAME, &err), err);
        IK_CHECK(fr_builder_append_f64(b, IK_V, r->v, &err), err);
        IK_CHECK(fr_builder_append_bytes(b, IK_REGION, r->region, strlen(r->region), &err), err);
        IK_CHECK(fr_builder_append_i64(b, IK_BUCKET, r->bucket, &err), err);
        IK_CHECK(fr_builder_append_i64(b, IK_OFFSET, r->offset, &err), err);
        IK_CHECK(fr_builder_append_i64(b, IK_TS, 1700000000000000 + r->offset, &err), err);
    }
    fr_batch *out;
    IK_CHECK(fr_builder_finish(b, &out, &err), err);
    fr_builder_free(b);
    return out;
}

/* Delete keys (id, __bucket) in the delete schema. */
static inline fr_batch *ik_delete_batch(const fr_schema *ds, const int64_t *ids,
                                        const int32_t *buckets, int n)
{
    fr_error err = {0};
    fr_builder *b;
    IK_CHECK(fr_builder_new(ds, &b, &err), err);
    for (int i = 0; i < n; i++) {
        IK_CHECK(fr_builder_append_i64(b, 0, ids[i], &err), err);
        IK_CHECK(fr_builder_append_i64(b, 1, buckets[i], &err), err);
    }
    fr_batch *out;
    IK_CHECK(fr_builder_finish(b, &out, &err), err);
    fr_builder_free(b);
    return out;
}

/* A sorted list of row texts. */
typedef struct ik_rows {
    char **v;
    int n, cap;
} ik_rows;

static inline void ik_rows_add(ik_rows *r, const char *s)
{
    if (r->n == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 64;
        r->v = realloc(r->v, (size_t)r->cap * sizeof *r->v);
        assert_non_null(r->v);
    }
    r->v[r->n++] = strdup(s);
}

static inline int ik_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static inline void ik_rows_sort(ik_rows *r) { qsort(r->v, (size_t)r->n, sizeof *r->v, ik_cmp); }

static inline void ik_rows_free(ik_rows *r)
{
    for (int i = 0; i < r->n; i++) free(r->v[i]);
    free(r->v);
    memset(r, 0, sizeof *r);
}

static inline void ik_rows_equal(ik_rows *a, ik_rows *b)
{
    ik_rows_sort(a);
    ik_rows_sort(b);
    int n = a->n < b->n ? a->n : b->n;
    for (int i = 0; i < n; i++)
        if (strcmp(a->v[i], b->v[i]) != 0)
            fail_msg("row %d differs: got %s, expected %s", i, a->v[i], b->v[i]);
    if (a->n != b->n) fail_msg("got %d rows, expected %d", a->n, b->n);
}

/* The text of row i of b: its cells joined by '|'. */
static inline void ik_row_text(const fr_batch *b, int64_t row, fr_buf *out)
{
    fr_error err = {0};
    fr_buf_reset(out);
    for (int c = 0; c < fr_batch_num_columns(b); c++) {
        fr_value v;
        fr_column_get(fr_batch_column(b, c), row, &v);
        if (c) IK_CHECK(fr_buf_append(out, "|", 1, &err), err);
        if (v.is_null) IK_CHECK(fr_buf_append(out, "NULL", 4, &err), err);
        else IK_CHECK(fr_value_format(&v, out, &err), err);
    }
    IK_CHECK(fr_buf_append(out, "", 1, &err), err);
}

static inline void ik_batch_rows(const fr_batch *b, ik_rows *out)
{
    fr_buf t;
    fr_buf_init(&t);
    for (int64_t r = 0; r < fr_batch_num_rows(b); r++) {
        ik_row_text(b, r, &t);
        ik_rows_add(out, (const char *)t.data);
    }
    fr_buf_free(&t);
}

/* Scans snapshot snap (-1: current) of every column into out. */
static inline int ik_scan(fr_iceberg_table *t, int64_t snap, const int *cols, int ncols,
                          const fr_expr *filter, ik_rows *out, int64_t *skipped,
                          fr_error *err)
{
    int all[IK_NCOLS];
    for (int i = 0; i < IK_NCOLS; i++) all[i] = i;
    if (!cols) {
        cols = all;
        ncols = fr_schema_num_fields(fr_iceberg_schema(t));
    }
    fr_iceberg_scan *s;
    int rc = fr_iceberg_scan_open(t, snap, cols, ncols, filter, &s, err);
    if (rc < 0) return rc;
    for (;;) {
        fr_batch *b;
        rc = fr_iceberg_scan_next(s, &b, err);
        if (rc < 0 || !b) break;
        assert_int_equal(fr_batch_num_columns(b), ncols);
        ik_batch_rows(b, out);
        fr_batch_free(b);
    }
    if (skipped) fr_iceberg_scan_counts(s, NULL, skipped, NULL);
    fr_iceberg_scan_close(s);
    return rc;
}

/* Number of regular files in a directory. */
static inline int ik_count_files(const char *dir)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "find '%s' -maxdepth 1 -type f | wc -l", dir);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    int n = -1;
    assert_int_equal(fscanf(p, "%d", &n), 1);
    pclose(p);
    return n;
}

#endif
