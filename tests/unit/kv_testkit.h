/* kv_testkit.h — shared by the kv unit tests: a bucket (log + KV store) in a scratch
 * directory that can be closed, crashed and reopened, rows written as text ("1|a|NULL"),
 * and the state and the changelog read back as text so that tests compare lists of lines.
 *
 * Text form of a row: the cells joined by '|', each as fr_value_format writes it (NULL as
 * "NULL"); a changelog record is its change type, a space and its row ("+I 1|a|NULL"). */
#ifndef FIRTH_KV_TESTKIT_H
#define FIRTH_KV_TESTKIT_H

#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "kv/kv.h"

#define KT_COLS_MAX 16

/* ---- scratch directories ---------------------------------------------------------------- */

static inline char *kt_tmpdir(const char *name)
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

/* ---- schemas ---------------------------------------------------------------------------- */

/* A schema from "name TYPE" strings (types as fr_type_parse reads them). */
static inline fr_schema *kt_schema(int n, const char *const *cols)
{
    fr_field f[KT_COLS_MAX];
    char names[KT_COLS_MAX][64];
    assert_true(n <= KT_COLS_MAX);
    fr_error err;
    for (int i = 0; i < n; i++) {
        const char *sp = strchr(cols[i], ' ');
        assert_non_null(sp);
        snprintf(names[i], sizeof names[i], "%.*s", (int)(sp - cols[i]), cols[i]);
        f[i].name = names[i];
        if (fr_type_parse(sp + 1, &f[i].type, &err) < 0) fail_msg("type %s: %s", sp + 1, err.msg);
    }
    fr_schema *s;
    if (fr_schema_new(f, n, 1, &s, &err) < 0) fail_msg("schema: %s", err.msg);
    return s;
}

/* ---- a bucket: log and KV store ----------------------------------------------------------- */

typedef struct kt_bucket {
    char *root;
    char logdir[4200], kvdir[4200];
    fr_schema *schema;
    fr_kv_spec spec;
    int pk[KT_COLS_MAX];
    fr_agg_fn aggs[KT_COLS_MAX];
    const char *delims[KT_COLS_MAX];
    fr_log *log;
    fr_kv *kv;
} kt_bucket;

/* A bucket of schema (taken) with primary key pk[npk]; the spec is last_row, FULL image,
 * ZSTD, deletes allowed, until the test changes b->spec before kt_open. */
static inline kt_bucket *kt_bucket_new(const char *name, fr_schema *schema, const int *pk,
                                       int npk)
{
    kt_bucket *b = calloc(1, sizeof *b);
    b->root = kt_tmpdir(name);
    snprintf(b->logdir, sizeof b->logdir, "%s/log", b->root);
    snprintf(b->kvdir, sizeof b->kvdir, "%s/kv", b->root);
    b->schema = schema;
    memcpy(b->pk, pk, (size_t)npk * sizeof *pk);
    for (int i = 0; i < KT_COLS_MAX; i++) b->aggs[i] = FR_AGG_LAST_VALUE_IGNORE_NULLS;
    b->spec = (fr_kv_spec){ .schema = schema, .pk = b->pk, .npk = npk,
                            .merge = FR_MERGE_LAST_ROW, .version_column = -1,
                            .aggs = b->aggs, .listagg_delimiters = b->delims,
                            .delete_behavior = FR_DELETE_ALLOW,
                            .image = FR_CHANGELOG_FULL,
                            .compression = FR_COMPRESSION_ZSTD, .name = "db.t bucket 0" };
    return b;
}

static inline int kt_try_open(kt_bucket *b, fr_error *err)
{
    if (!b->log) {
        fr_log_options o;
        fr_log_options_default(&o);
        o.flush = FR_FLUSH_NONE;
        o.name = "db.t bucket 0";
        int rc = fr_log_open(b->logdir, &o, &b->log, err);
        if (rc < 0) return rc;
    }
    return fr_kv_open(b->kvdir, b->log, &b->spec, &b->kv, err);
}

static inline void kt_open(kt_bucket *b)
{
    fr_error err;
    if (kt_try_open(b, &err) < 0) fail_msg("open: %s", err.msg);
}

/* Closes the store (flushing, or as a crash would) and the log with it. */
static inline void kt_close(kt_bucket *b, bool flush)
{
    if (flush) fr_kv_close(b->kv);
    else fr_kv_close_noflush(b->kv);
    b->kv = NULL;
    fr_log_close(b->log);
    b->log = NULL;
}

static inline void kt_bucket_free(kt_bucket *b)
{
    if (b->kv) kt_close(b, true);
    if (b->log) fr_log_close(b->log); /* an open that failed after the log */
    fr_error err;
    fr_remove_tree(b->root, &err);
    free(b->root);
    fr_schema_free(b->schema);
    free(b);
}

/* ---- rows as text ------------------------------------------------------------------------- */

/* Splits "1|a|NULL" into cells of the schema's types; strings point into a copy kept in
 * *keep (free it). */
static inline void kt_parse_row(const fr_schema *s, const char *text, fr_value *out,
                                char **keep)
{
    int n = fr_schema_num_fields(s);
    char *copy = strdup(text);
    *keep = copy;
    char *p = copy;
    for (int c = 0; c < n; c++) {
        char *bar = strchr(p, '|');
        if (c < n - 1) assert_non_null(bar);
        if (bar) *bar = '\0';
        const fr_type *t = &fr_schema_field(s, c)->type;
        fr_error err;
        if (strcmp(p, "NULL") == 0) {
            out[c] = fr_value_null(*t);
        } else if (fr_value_parse(p, strlen(p), t, &out[c], &err) < 0) {
            fail_msg("cell '%s' of '%s': %s", p, text, err.msg);
        }
        p = bar ? bar + 1 : p + strlen(p);
    }
}

/* A batch of the schema from text rows. */
static inline fr_batch *kt_batch(const fr_schema *s, int nrows, const char *const *rows)
{
    fr_builder *bld;
    fr_error err;
    assert_int_equal(fr_builder_new(s, &bld, &err), 0);
    fr_value v[KT_COLS_MAX];
    for (int r = 0; r < nrows; r++) {
        char *keep;
        kt_parse_row(s, rows[r], v, &keep);
        for (int c = 0; c < fr_schema_num_fields(s); c++)
            if (fr_builder_append(bld, c, &v[c], &err) < 0) fail_msg("append: %s", err.msg);
        free(keep);
    }
    fr_batch *b;
    assert_int_equal(fr_builder_finish(bld, &b, &err), 0);
    fr_builder_free(bld);
    return b;
}

/* Writes text rows with ops ("u" upsert / "d" delete per row, or NULL for all upserts). */
static inline int kt_write_ex(kt_bucket *b, int n, const char *const *rows, const char *ops,
                              const int *targets, int ntargets, int64_t writer, int32_t seq,
                              fr_kv_write_result *res, fr_error *err)
{
    fr_batch *batch = kt_batch(b->schema, n, rows);
    uint8_t opv[256];
    assert_true(n <= 256);
    for (int i = 0; ops && i < n; i++) opv[i] = ops[i] == 'd' ? FR_KV_DELETE : FR_KV_UPSERT;
    fr_kv_write_result r;
    int rc = fr_kv_write(b->kv, batch, ops ? opv : NULL, targets, ntargets, writer, seq, &r,
                         err);
    if (res) *res = r;
    fr_batch_free(batch);
    return rc;
}

static inline fr_kv_write_result kt_write(kt_bucket *b, int n, const char *const *rows,
                                          const char *ops)
{
    fr_kv_write_result r;
    fr_error err;
    if (kt_write_ex(b, n, rows, ops, NULL, 0, FR_NO_WRITER, -1, &r, &err) < 0)
        fail_msg("write: %s", err.msg);
    return r;
}

/* A list of text lines, compared as a whole. */
typedef struct kt_lines {
    char **v;
    int n, cap;
} kt_lines;

static inline void kt_lines_add(kt_lines *l, const char *s)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 16;
        l->v = realloc(l->v, (size_t)l->cap * sizeof *l->v);
    }
    l->v[l->n++] = strdup(s);
}

static inline void kt_lines_free(kt_lines *l)
{
    for (int i = 0; i < l->n; i++) free(l->v[i]);
    free(l->v);
    memset(l, 0, sizeof *l);
}

static inline void kt_fmt_cells(const fr_value *v, int n, fr_buf *out)
{
    fr_error err;
    for (int c = 0; c < n; c++) {
        if (c) fr_buf_append(out, "|", 1, &err);
        assert_int_equal(fr_value_format(&v[c], out, &err), 0);
    }
    fr_buf_append(out, "", 1, &err); /* NUL */
}

/* Appends every row of a batch as text (with a prefix per row, may be NULL). */
static inline void kt_lines_of_batch(kt_lines *l, const fr_batch *b, const uint8_t *cts)
{
    int nc = fr_batch_num_columns(b);
    fr_value v[KT_COLS_MAX];
    for (int64_t r = 0; r < fr_batch_num_rows(b); r++) {
        for (int c = 0; c < nc; c++) fr_column_get(fr_batch_column(b, c), r, &v[c]);
        fr_buf t;
        fr_buf_init(&t);
        fr_error err;
        if (cts) {
            fr_buf_append(&t, fr_change_type_name((fr_change_type)cts[r]), 2, &err);
            fr_buf_append(&t, " ", 1, &err);
        }
        kt_fmt_cells(v, nc, &t);
        kt_lines_add(l, (const char *)t.data);
        fr_buf_free(&t);
    }
}

static inline int kt_collect_rows(void *ctx, fr_batch *batch, fr_error *err)
{
    (void)err;
    kt_lines_of_batch(ctx, batch, NULL);
    fr_batch_free(batch);
    return 0;
}

/* The whole state, in key order. */
static inline kt_lines kt_state(kt_bucket *b)
{
    kt_lines l = { 0 };
    fr_error err;
    if (fr_kv_scan(b->kv, NULL, 0, NULL, 0, kt_collect_rows, &l, &err) < 0)
        fail_msg("scan: %s", err.msg);
    return l;
}

static inline int kt_collect_changes(void *ctx, fr_batch *batch, const int64_t *offsets,
                                     const uint8_t *cts, int64_t ts, fr_error *err)
{
    (void)offsets;
    (void)ts;
    (void)err;
    kt_lines_of_batch(ctx, batch, cts);
    fr_batch_free(batch);
    return 0;
}

/* The changelog from an offset to the end of the log. */
static inline kt_lines kt_changes(kt_bucket *b, int64_t from)
{
    kt_lines l = { 0 };
    fr_log_read r = { .from_offset = from, .schema = b->schema, .max_records = -1 };
    int64_t next;
    fr_error err;
    if (fr_log_read_batches(b->log, &r, kt_collect_changes, &l, &next, &err) < 0)
        fail_msg("changelog read: %s", err.msg);
    return l;
}

/* Fails with both lists printed unless they are equal. */
static inline void kt_expect_lines(const char *what, kt_lines *got, int n,
                                   const char *const *want)
{
    bool same = got->n == n;
    for (int i = 0; same && i < n; i++) same = strcmp(got->v[i], want[i]) == 0;
    if (!same) {
        print_error("%s differs:\n  got (%d):\n", what, got->n);
        for (int i = 0; i < got->n; i++) print_error("    %s\n", got->v[i]);
        print_error("  want (%d):\n", n);
        for (int i = 0; i < n; i++) print_error("    %s\n", want[i]);
        fail_msg("%s differs", what);
    }
    kt_lines_free(got);
}

#define KT_N(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define KT_ROWS(...) ((const char *const[]){ __VA_ARGS__ })
#define KT_COUNT(...) KT_N(KT_ROWS(__VA_ARGS__))

/* kt_expect_state(b, "1|a", "2|b") and kt_expect_changes(b, from, "+I 1|a"). */
#define kt_expect_state(b, ...)                                                              \
    do {                                                                                     \
        kt_lines got_ = kt_state(b);                                                         \
        kt_expect_lines("state", &got_, KT_COUNT(__VA_ARGS__), KT_ROWS(__VA_ARGS__));        \
    } while (0)
#define kt_expect_empty_state(b)                                                             \
    do {                                                                                     \
        kt_lines got_ = kt_state(b);                                                         \
        kt_expect_lines("state", &got_, 0, NULL);                                            \
    } while (0)
#define kt_expect_changes(b, from, ...)                                                      \
    do {                                                                                     \
        kt_lines got_ = kt_changes(b, from);                                                 \
        kt_expect_lines("changelog", &got_, KT_COUNT(__VA_ARGS__), KT_ROWS(__VA_ARGS__));    \
    } while (0)
#define kt_expect_no_changes(b, from)                                                        \
    do {                                                                                     \
        kt_lines got_ = kt_changes(b, from);                                                 \
        kt_expect_lines("changelog", &got_, 0, NULL);                                        \
    } while (0)
/* Writes rows (all upserts). */
#define KT_UPSERT(b, ...) kt_write(b, KT_COUNT(__VA_ARGS__), KT_ROWS(__VA_ARGS__), NULL)

#endif
