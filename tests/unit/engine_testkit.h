/* engine_testkit.h — helpers shared by the engine's unit tests: scratch data dirs, a
 * standard schema and batches of it, and a scan collector. Header-only (static functions)
 * so that every test binary stays one source file. */
#ifndef FIRTH_ENGINE_TESTKIT_H
#define FIRTH_ENGINE_TESTKIT_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/engine.h"

#define KIT_CHECK(expr, err)                                                                 \
    do {                                                                                     \
        int kit_rc_ = (expr);                                                                \
        if (kit_rc_ < 0) fail_msg("%s failed: %d %s", #expr, kit_rc_, (err).msg);             \
    } while (0)

/* A new empty directory under $FIRTH_TEST_TMP (or /tmp); the caller frees the string and
 * removes the tree with kit_rmdir. */
static inline char *kit_tmpdir(const char *name)
{
    const char *base = getenv("FIRTH_TEST_TMP");
    if (!base || !*base) base = "/tmp";
    fr_error err = {0};
    KIT_CHECK(fr_mkdirs(base, &err), err);
    char tmpl[1024];
    snprintf(tmpl, sizeof tmpl, "%s/%s.XXXXXX", base, name);
    assert_non_null(mkdtemp(tmpl));
    return fr_strdup(tmpl);
}

static inline void kit_rmdir(char *dir)
{
    fr_error err = {0};
    KIT_CHECK(fr_remove_tree(dir, &err), err);
    fr_free(dir);
}

/* A path inside dir; static storage, valid until the next call. */
static inline const char *kit_path(const char *dir, const char *rel)
{
    static char buf[2048];
    snprintf(buf, sizeof buf, "%s/%s", dir, rel);
    return buf;
}

static inline fr_engine *kit_open_with(const char *dir, int64_t segment_bytes)
{
    fr_engine_options o;
    fr_engine_options_default(&o);
    o.data_dir = dir;
    o.flush = FR_FLUSH_NONE; /* durability is the log's test; these test the engine */
    o.retention_check_interval_ms = 0;
    if (segment_bytes > 0) o.segment_bytes = segment_bytes;
    fr_engine *e = NULL;
    fr_error err = {0};
    KIT_CHECK(fr_engine_open(&o, &e, &err), err);
    return e;
}

static inline fr_engine *kit_open(const char *dir) { return kit_open_with(dir, 0); }

/* (id BIGINT NOT NULL, name STRING, score DOUBLE) */
static inline fr_schema *kit_schema(void)
{
    fr_field f[3] = {
        {.name = "id", .type = fr_type_of(FR_T_BIGINT)},
        {.name = "name", .type = fr_type_of(FR_T_STRING)},
        {.name = "score", .type = fr_type_of(FR_T_DOUBLE)},
    };
    f[0].type.nullable = false;
    fr_schema *s = NULL;
    fr_error err = {0};
    KIT_CHECK(fr_schema_new(f, 3, 0, &s, &err), err);
    return s;
}

/* Rows id = first .. first + n - 1, name "n<id>" (NULL when id % 7 == 3), score id / 2. */
static inline fr_batch *kit_batch(int64_t first, int64_t n)
{
    fr_schema *s = kit_schema();
    fr_builder *bld = NULL;
    fr_error err = {0};
    KIT_CHECK(fr_builder_new(s, &bld, &err), err);
    for (int64_t i = 0; i < n; i++) {
        int64_t id = first + i;
        char name[32];
        int len = snprintf(name, sizeof name, "n%lld", (long long)id);
        KIT_CHECK(fr_builder_append_i64(bld, 0, id, &err), err);
        if (id % 7 == 3) KIT_CHECK(fr_builder_append_null(bld, 1, &err), err);
        else KIT_CHECK(fr_builder_append_bytes(bld, 1, name, (size_t)len, &err), err);
        KIT_CHECK(fr_builder_append_f64(bld, 2, (double)id / 2, &err), err);
    }
    fr_batch *b = NULL;
    KIT_CHECK(fr_builder_finish(bld, &b, &err), err);
    fr_builder_free(bld);
    fr_schema_free(s);
    return b;
}

static inline void kit_create_table(fr_engine *e, const char *db, const char *name,
                                    const fr_option *opts, int nopts)
{
    fr_schema *s = kit_schema();
    fr_table_spec spec = {.db = db, .name = name, .schema = s, .options = opts,
                          .noptions = nopts};
    fr_error err = {0};
    KIT_CHECK(fr_engine_create_table(e, &spec, false, &err), err);
    fr_schema_free(s);
}

static inline fr_table *kit_table(fr_engine *e, const char *db, const char *name)
{
    fr_table *t = NULL;
    fr_error err = {0};
    KIT_CHECK(fr_engine_get_table(e, db, name, &t, &err), err);
    return t;
}

/* Collects what a scan delivers: the first column as int64 (when it is an integer), each
 * row's bucket and offset, and the commit timestamps and columns seen. */
typedef struct kit_rows {
    int64_t n, cap;
    int64_t *first;  /* value of column 0 per row (INT64_MIN when NULL) */
    int *bucket;
    int64_t *offset;
    int64_t *ts;
    int batches;
    int ncolumns;    /* of the last batch */
    int stop_after;  /* stop the scan after this many batches (0: never) */
} kit_rows;

static inline int kit_collect(void *ctx, int bucket, fr_batch *batch, const int64_t *offsets,
                              const uint8_t *change_types, int64_t commit_ts, fr_error *err)
{
    (void)change_types;
    (void)err;
    kit_rows *r = ctx;
    int64_t rows = fr_batch_num_rows(batch);
    if (r->n + rows > r->cap) {
        /* Plain realloc: the fault-injection tests fail the engine's allocations, not ours. */
        int64_t cap = (r->n + rows) * 2 + 16;
        r->first = realloc(r->first, (size_t)cap * sizeof *r->first);
        r->bucket = realloc(r->bucket, (size_t)cap * sizeof *r->bucket);
        r->offset = realloc(r->offset, (size_t)cap * sizeof *r->offset);
        r->ts = realloc(r->ts, (size_t)cap * sizeof *r->ts);
        assert_true(r->first && r->bucket && r->offset && r->ts);
        r->cap = cap;
    }
    const fr_column *c = fr_batch_column(batch, 0);
    for (int64_t i = 0; i < rows; i++) {
        fr_value v;
        fr_column_get(c, i, &v);
        r->first[r->n] = v.is_null ? INT64_MIN : v.v.i;
        r->bucket[r->n] = bucket;
        r->offset[r->n] = offsets[i];
        r->ts[r->n] = commit_ts;
        r->n++;
    }
    r->ncolumns = fr_batch_num_columns(batch);
    r->batches++;
    fr_batch_free(batch);
    return r->stop_after > 0 && r->batches >= r->stop_after ? 1 : 0;
}

static inline void kit_rows_free(kit_rows *r)
{
    free(r->first);
    free(r->bucket);
    free(r->offset);
    free(r->ts);
    memset(r, 0, sizeof *r);
}

static inline kit_rows kit_scan(fr_table *t, const fr_scan_spec *spec)
{
    kit_rows r = {0};
    fr_error err = {0};
    KIT_CHECK(fr_table_scan(t, spec, kit_collect, &r, &err), err);
    return r;
}

static inline fr_scan_spec kit_spec(fr_start_kind start, int64_t value)
{
    fr_scan_spec s = {.start = start, .start_value = value, .max_records = -1, .bucket = -1};
    return s;
}

#endif
