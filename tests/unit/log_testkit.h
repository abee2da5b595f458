/* log_testkit.h — shared by the log unit tests: scratch directories, a table schema whose
 * every cell is a function of the row's id (so any read can be checked), encoding and
 * appending batches, and a read callback that collects what a read returned. */
#ifndef FIRTH_LOG_TESTKIT_H
#define FIRTH_LOG_TESTKIT_H

#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log/log.h"

/* ---- scratch directories ---------------------------------------------------------------- */

/* A new empty directory for one test; the caller frees the path with free(). */
static inline char *lt_tmpdir(const char *name)
{
    const char *root = getenv("FIRTH_TEST_TMP");
    if (!root || !*root) root = "/tmp";
    fr_error err;
    assert_int_equal(fr_mkdirs(root, &err), 0);
    char *path = malloc(4096);
    snprintf(path, 4096, "%s/%s-XXXXXX", root, name);
    assert_non_null(mkdtemp(path));
    return path;
}

static inline void lt_rmdir(char *path)
{
    fr_error err;
    fr_remove_tree(path, &err);
    free(path);
}

static inline void lt_path(char *out, size_t cap, const char *dir, int64_t base, const char *ext)
{
    snprintf(out, cap, "%s/%020" PRId64 "%s", dir, base, ext);
}

static inline int64_t lt_file_size(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) return -1;
    return st.st_size;
}

/* ---- the schema and its rows ------------------------------------------------------------ */

enum { LT_ID, LT_NAME, LT_SCORE, LT_FLAG, LT_AMOUNT, LT_DAY, LT_NCOLS };

static inline fr_schema *lt_schema(void)
{
    fr_field f[LT_NCOLS] = {
        { "id", fr_type_of(FR_T_BIGINT) },      { "name", fr_type_of(FR_T_STRING) },
        { "score", fr_type_of(FR_T_DOUBLE) },   { "flag", fr_type_of(FR_T_BOOLEAN) },
        { "amount", fr_type_decimal(12, 2) },   { "day", fr_type_of(FR_T_DATE) },
    };
    f[LT_ID].type.nullable = false;
    fr_schema *s;
    fr_error err;
    assert_int_equal(fr_schema_new(f, LT_NCOLS, 0, &s, &err), 0);
    return s;
}

static inline bool lt_name_null(int64_t id) { return id % 7 == 3; }
static inline int lt_name(int64_t id, char *out) { return snprintf(out, 32, "name-%" PRId64, id); }
static inline double lt_score(int64_t id) { return (double)id * 0.5; }
static inline bool lt_flag(int64_t id) { return id % 2 == 1; }
static inline fr_i128 lt_amount(int64_t id) { return (fr_i128)id * 100 + 1; }
static inline int64_t lt_day(int64_t id) { return id % 1000; }

/* Rows with ids first_id .. first_id + rows - 1. */
static inline fr_batch *lt_batch(const fr_schema *s, int64_t first_id, int64_t rows)
{
    fr_builder *bld;
    fr_error err;
    assert_int_equal(fr_builder_new(s, &bld, &err), 0);
    for (int64_t id = first_id; id < first_id + rows; id++) {
        char name[32];
        int n = lt_name(id, name);
        assert_int_equal(fr_builder_append_i64(bld, LT_ID, id, &err), 0);
        if (lt_name_null(id)) assert_int_equal(fr_builder_append_null(bld, LT_NAME, &err), 0);
        else assert_int_equal(fr_builder_append_bytes(bld, LT_NAME, name, (size_t)n, &err), 0);
        assert_int_equal(fr_builder_append_f64(bld, LT_SCORE, lt_score(id), &err), 0);
        assert_int_equal(fr_builder_append_bool(bld, LT_FLAG, lt_flag(id), &err), 0);
        assert_int_equal(fr_builder_append_i128(bld, LT_AMOUNT, lt_amount(id), &err), 0);
        assert_int_equal(fr_builder_append_i64(bld, LT_DAY, lt_day(id), &err), 0);
    }
    fr_batch *b;
    assert_int_equal(fr_builder_finish(bld, &b, &err), 0);
    fr_builder_free(bld);
    return b;
}

/* Encodes rows first_id.. as a record batch appended to out. */
static inline void lt_encode(const fr_schema *s, int64_t first_id, int64_t rows, int64_t writer,
                      int32_t seq, fr_compression codec, const uint8_t *change_types,
                      fr_buf *out)
{
    fr_batch *b = lt_batch(s, first_id, rows);
    fr_rb_params p = { .schema_id = fr_schema_id(s), .compression = codec, .writer_id = writer,
                       .batch_sequence = seq, .change_types = change_types };
    fr_error err;
    int rc = fr_rb_encode(b, &p, out, &err);
    if (rc != 0) fail_msg("fr_rb_encode: %s", err.msg);
    fr_batch_free(b);
}

/* Appends rows first_id.. and returns fr_log_append's code; *base gets the base offset. */
static inline int lt_append_ex(fr_log *log, const fr_schema *s, int64_t first_id, int64_t rows,
                        int64_t writer, int32_t seq, int64_t *base, fr_error *err)
{
    fr_buf buf;
    fr_buf_init(&buf);
    lt_encode(s, first_id, rows, writer, seq, FR_COMPRESSION_NONE, NULL, &buf);
    int rc = fr_log_append(log, buf.data, buf.len, base, err);
    fr_buf_free(&buf);
    return rc;
}

static inline int64_t lt_append(fr_log *log, const fr_schema *s, int64_t first_id, int64_t rows)
{
    int64_t base = -1;
    fr_error err;
    int rc = lt_append_ex(log, s, first_id, rows, FR_NO_WRITER, -1, &base, &err);
    if (rc != 0) fail_msg("fr_log_append: %s", err.msg);
    return base;
}

/* ---- collecting reads ------------------------------------------------------------------- */

typedef struct lt_rows {
    int64_t *offsets;
    int64_t *ids; /* from the "id" column when it was read, else -1 */
    uint8_t *change_types;
    int64_t *commit_ts;
    int64_t n, cap;
    int batches;
    int ncols;             /* columns of the last batch */
    const fr_schema *full; /* to check cells by name */
    int stop_after;        /* stop after this many batches (0: never) */
} lt_rows;

static inline void lt_rows_free(lt_rows *r)
{
    free(r->offsets);
    free(r->ids);
    free(r->change_types);
    free(r->commit_ts);
    memset(r, 0, sizeof *r);
}

/* Checks every cell of row `row` of b against the row's id, by column name. */
static inline void lt_check_row(const fr_batch *b, int64_t row, int64_t id)
{
    const fr_schema *s = fr_batch_schema(b);
    for (int c = 0; c < fr_batch_num_columns(b); c++) {
        const char *name = fr_schema_field(s, c)->name;
        fr_value v;
        fr_column_get(fr_batch_column(b, c), row, &v);
        if (strcmp(name, "id") == 0) {
            assert_int_equal(v.v.i, id);
        } else if (strcmp(name, "name") == 0) {
            assert_int_equal(v.is_null, lt_name_null(id));
            if (!v.is_null) {
                char buf[32];
                int n = lt_name(id, buf);
                assert_int_equal(v.v.s.len, n);
                assert_memory_equal(v.v.s.ptr, buf, (size_t)n);
            }
        } else if (strcmp(name, "score") == 0) {
            assert_true(v.v.f == lt_score(id));
        } else if (strcmp(name, "flag") == 0) {
            assert_int_equal(v.v.b, lt_flag(id));
        } else if (strcmp(name, "amount") == 0) {
            assert_true(v.v.d == lt_amount(id));
        } else if (strcmp(name, "day") == 0) {
            assert_int_equal(v.v.i, lt_day(id));
        }
    }
}

static inline int lt_collect(void *ctx, fr_batch *b, const int64_t *offsets, const uint8_t *cts,
                      int64_t commit_ts, fr_error *err)
{
    lt_rows *r = ctx;
    int64_t rows = fr_batch_num_rows(b);
    if (r->n + rows > r->cap) {
        r->cap = (r->n + rows) * 2 + 16;
        r->offsets = realloc(r->offsets, (size_t)r->cap * sizeof *r->offsets);
        r->ids = realloc(r->ids, (size_t)r->cap * sizeof *r->ids);
        r->change_types = realloc(r->change_types, (size_t)r->cap);
        r->commit_ts = realloc(r->commit_ts, (size_t)r->cap * sizeof *r->commit_ts);
    }
    const fr_schema *s = fr_batch_schema(b);
    int idcol = fr_schema_find(s, "id");
    r->ncols = fr_batch_num_columns(b);
    for (int64_t i = 0; i < rows; i++) {
        r->offsets[r->n] = offsets[i];
        r->change_types[r->n] = cts ? cts[i] : 0;
        r->commit_ts[r->n] = commit_ts;
        int64_t id = -1;
        if (idcol >= 0) {
            fr_value v;
            fr_column_get(fr_batch_column(b, idcol), i, &v);
            id = v.v.i;
            lt_check_row(b, i, id);
        }
        r->ids[r->n++] = id;
    }
    r->batches++;
    fr_batch_free(b);
    (void)err;
    return r->stop_after && r->batches >= r->stop_after ? 1 : 0;
}

/* Reads everything from `from` with the given columns and filter. */
static inline int lt_read(fr_log *log, const fr_schema *s, int64_t from, const int *cols, int ncols,
                   const fr_expr *filter, lt_rows *out, int64_t *next, fr_error *err)
{
    fr_log_read r = { .from_offset = from, .schema = s, .columns = cols, .ncolumns = ncols,
                      .filter = filter, .max_bytes = 0, .max_records = -1 };
    int64_t nx;
    return fr_log_read_batches(log, &r, lt_collect, out, next ? next : &nx, err);
}

/* Asserts that the whole log from `from` to the end holds ids == offsets (the tests append
 * row ids equal to their offsets unless they say otherwise). */
static inline void lt_check_dense(fr_log *log, const fr_schema *s, int64_t from)
{
    lt_rows rows = { 0 };
    fr_error err;
    int64_t next;
    int rc = lt_read(log, s, from, NULL, 0, NULL, &rows, &next, &err);
    if (rc != 0) fail_msg("read from %" PRId64 ": %s", from, err.msg);
    int64_t end = fr_log_end_offset(log);
    assert_int_equal(rows.n, end - from);
    assert_int_equal(next, end);
    for (int64_t i = 0; i < rows.n; i++) {
        assert_int_equal(rows.offsets[i], from + i);
        assert_int_equal(rows.ids[i], from + i);
    }
    lt_rows_free(&rows);
}

/* A bound filter `column op value` over an integer-like column. */
static inline fr_expr *lt_filter_int(fr_arena *a, const fr_schema *s, const char *col, fr_expr_op op,
                              int64_t value)
{
    int c = fr_schema_find(s, col);
    assert_true(c >= 0);
    fr_value v = fr_value_int(fr_schema_field(s, c)->type, value);
    fr_expr *e = fr_expr_binary(a, op, fr_expr_column(a, col), fr_expr_literal(a, &v));
    fr_error err;
    int rc = fr_expr_bind(e, s, &err);
    if (rc != 0) fail_msg("bind: %s", err.msg);
    return e;
}

static inline fr_log *lt_open(const char *dir, const fr_log_options *o)
{
    fr_log *log;
    fr_error err;
    int rc = fr_log_open(dir, o, &log, &err);
    if (rc != 0) fail_msg("fr_log_open %s: %s", dir, err.msg);
    return log;
}

#endif
