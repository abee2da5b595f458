/* test_engine_union.c — union reads (fr_table_scan_union) against reads without the lake.
 *
 * Randomized: for random workloads on lake-enabled tables — log tables (one unpartitioned,
 * one partitioned by a STRING column, with a partition dropped on the way) and primary-key
 * tables (upserts with repeated keys, partial updates, deletes; one partitioned) — every
 * few steps the union read of a set of queries (every column; projections in another
 * order; filters on the key, on a value column, on a string and on the partition column,
 * with projections) must return exactly the rows of the same read without the lake
 * (fr_table_scan from the earliest offset for log tables, fr_table_scan_state for
 * primary-key tables): before any tiering round, between rounds and after them. The columns
 * include TIMESTAMP(3), TIME(0), VARCHAR(8) and DECIMAL, whose lake types differ, so the
 * conversion back is checked too. For log tables, t$lake (lake_only) must hold exactly the
 * rows below the tiered offsets, with their __bucket and __offset.
 *
 * Concurrency: while a thread runs tiering rounds back to back and another appends, union
 * reads of a log table must never return a row twice nor lose one (each read holds every row
 * written before it started and only rows written before it ended); and while rounds run
 * on a primary-key table that nobody writes, union reads must equal the state.
 *
 * Retention: once tiered segments are removed, the union read still returns every row; and
 * when the lake then loses its snapshots, the read fails instead of returning the log alone.
 *
 * FIRTH_TEST_SEED replays a run; the seed is printed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/engine.h"

#define STEPS 36
#define CHECK_EVERY 4

#define CHECK(expr)                                                                          \
    do {                                                                                     \
        fr_error e_ = {0};                                                                   \
        int rc_ = (expr);                                                                    \
        (void)e_;                                                                            \
        if (rc_ < 0) fail_msg("seed %llu: %s failed: %d %s", (unsigned long long)run_seed,    \
                              #expr, rc_, err.msg);                                          \
    } while (0)

static char dir[1024];
static fr_engine *engine;
static uint64_t rng, run_seed;
static fr_error err;

static uint32_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}

static int pick(int n) { return (int)(next_rand() % (uint32_t)n); }

static void open_engine(void)
{
    fr_engine_options o;
    fr_engine_options_default(&o);
    o.data_dir = dir;
    o.flush = FR_FLUSH_NONE;
    o.retention_check_interval_ms = 0;
    o.auto_partition_check_interval_ms = 0;
    o.lake_tiering_threads = 0; /* rounds run when the test says */
    o.segment_bytes = 16 << 10; /* many segments, for the retention test */
    CHECK(fr_engine_open(&o, &engine, &err));
}

static int setup(void **state)
{
    (void)state;
    const char *base = getenv("FIRTH_TEST_TMP");
    if (!base || !*base) base = "/tmp";
    if (fr_mkdirs(base, &err) < 0) return -1;
    snprintf(dir, sizeof dir, "%s/test_engine_union.XXXXXX", base);
    if (!mkdtemp(dir)) return -1;
    const char *s = getenv("FIRTH_TEST_SEED");
    run_seed = s && *s ? strtoull(s, NULL, 10) : (uint64_t)time(NULL) ^ (uint64_t)clock();
    if (run_seed == 0) run_seed = 1;
    fprintf(stderr, "test_engine_union: seed %llu (FIRTH_TEST_SEED to replay)\n",
            (unsigned long long)run_seed);
    open_engine();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    fr_engine_close(engine);
    fr_error e2 = {0};
    fr_remove_tree(dir, &e2);
    return 0;
}

/* ---- tables ----------------------------------------------------------------------------- */

/* (k INT NOT NULL, p STRING, a BIGINT, s VARCHAR(8), ts TIMESTAMP(3), t TIME(0),
 *  d DECIMAL(10, 2)) */
enum { C_K, C_P, C_A, C_S, C_TS, C_T, C_D, NCOLS };

static fr_schema *table_schema(void)
{
    fr_field f[NCOLS] = {
        {.name = "k", .type = fr_type_of(FR_T_INT)},
        {.name = "p", .type = fr_type_of(FR_T_STRING)},
        {.name = "a", .type = fr_type_of(FR_T_BIGINT)},
        {.name = "s", .type = fr_type_of(FR_T_VARCHAR)},
        {.name = "ts", .type = fr_type_time_like(FR_T_TIMESTAMP, 3)},
        {.name = "t", .type = fr_type_time_like(FR_T_TIME, 0)},
        {.name = "d", .type = fr_type_decimal(10, 2)},
    };
    f[C_K].type.nullable = false; /* p becomes NOT NULL where it is in a primary key */
    f[C_S].type.length = 8;
    fr_schema *s = NULL;
    CHECK(fr_schema_new(f, NCOLS, 0, &s, &err));
    return s;
}

typedef struct table_kind {
    const char *name;
    bool pk;
    bool partitioned;
} table_kind;

static fr_table *create(const table_kind *k)
{
    fr_schema *s = table_schema();
    fr_option opts[] = {{"table.datalake.enabled", "true"}, {"bucket.num", "3"}};
    const char *pk_unpart[] = {"k"}, *pk_part[] = {"p", "k"}, *parts[] = {"p"};
    fr_table_spec spec = {.db = "default", .name = k->name, .schema = s, .options = opts,
                          .noptions = 2};
    if (k->pk) {
        spec.primary_key = k->partitioned ? pk_part : pk_unpart;
        spec.nprimary_key = k->partitioned ? 2 : 1;
    }
    if (k->partitioned) {
        spec.partition_keys = parts;
        spec.npartition_keys = 1;
    }
    CHECK(fr_engine_create_table(engine, &spec, false, &err));
    fr_schema_free(s);
    fr_table *t = NULL;
    CHECK(fr_engine_get_table(engine, "default", k->name, &t, &err));
    assert_true(fr_table_lake_enabled(t));
    return t;
}

/* ---- random rows ------------------------------------------------------------------------ */

static const char *const part_values[] = {"x", "y", "z"};

static void append_row(fr_builder *bld, int64_t k, const char *p, bool partial)
{
    fr_value v;
    const fr_schema *s = NULL;
    (void)s;
    CHECK(fr_builder_append_i64(bld, C_K, k, &err));
    CHECK(fr_builder_append_bytes(bld, C_P, p, strlen(p), &err));
    if (pick(8) == 0)
        CHECK(fr_builder_append_null(bld, C_A, &err));
    else
        CHECK(fr_builder_append_i64(bld, C_A, (int64_t)pick(2000) - 1000, &err));
    if (partial || pick(6) == 0) {
        CHECK(fr_builder_append_null(bld, C_S, &err));
    } else {
        char str[9];
        int n = 1 + pick(8);
        for (int i = 0; i < n; i++) str[i] = (char)('a' + pick(4));
        CHECK(fr_builder_append_bytes(bld, C_S, str, (size_t)n, &err));
    }
    if (partial || pick(7) == 0)
        CHECK(fr_builder_append_null(bld, C_TS, &err));
    else
        CHECK(fr_builder_append_i64(bld, C_TS, 1764460800000LL + (int64_t)pick(1 << 30), &err));
    if (partial || pick(7) == 0)
        CHECK(fr_builder_append_null(bld, C_T, &err));
    else
        CHECK(fr_builder_append_i64(bld, C_T, pick(86400), &err));
    if (partial || pick(7) == 0) {
        CHECK(fr_builder_append_null(bld, C_D, &err));
    } else {
        v = fr_value_decimal(fr_type_decimal(10, 2), (fr_i128)((int64_t)pick(1000000) - 500000));
        CHECK(fr_builder_append(bld, C_D, &v, &err));
    }
}

static int64_t next_log_key;

static void write_log(fr_table *t, bool partitioned, int rows)
{
    fr_builder *bld = NULL;
    CHECK(fr_builder_new(fr_table_schema(t), &bld, &err));
    for (int i = 0; i < rows; i++)
        append_row(bld, next_log_key++, partitioned ? part_values[pick(3)] : "-", false);
    fr_batch *b = NULL;
    CHECK(fr_builder_finish(bld, &b, &err));
    CHECK(fr_table_append(t, b, FR_NO_WRITER, -1, NULL, &err));
    fr_batch_free(b);
    fr_builder_free(bld);
}

/* Upserts (keys repeat within a batch and across), partial updates or deletes. */
static void write_pk(fr_table *t, bool partitioned, int rows)
{
    int kind = pick(4); /* 0, 1: upserts; 2: partial updates; 3: mixed with deletes */
    fr_builder *bld = NULL;
    CHECK(fr_builder_new(fr_table_schema(t), &bld, &err));
    uint8_t *ops = calloc((size_t)rows, 1);
    for (int i = 0; i < rows; i++) {
        append_row(bld, pick(40), partitioned ? part_values[pick(3)] : "-", kind == 2);
        if (kind == 3 && pick(3) == 0) ops[i] = FR_KV_DELETE;
    }
    fr_batch *b = NULL;
    CHECK(fr_builder_finish(bld, &b, &err));
    int target[] = {C_K, C_P, C_A};
    CHECK(fr_table_put(t, b, kind == 3 ? ops : NULL, kind == 2 ? target : NULL,
                       kind == 2 ? 3 : 0, FR_NO_WRITER, -1, NULL, &err));
    fr_batch_free(b);
    fr_builder_free(bld);
    free(ops);
}

/* ---- collecting rows as sorted text ----------------------------------------------------- */

typedef struct rows_text {
    char **lines;
    int64_t n, cap;
    int ncols;
} rows_text;

static void rows_add(rows_text *r, const fr_batch *b)
{
    fr_buf line;
    fr_buf_init(&line);
    r->ncols = fr_batch_num_columns(b);
    for (int64_t row = 0; row < fr_batch_num_rows(b); row++) {
        fr_buf_reset(&line);
        for (int c = 0; c < fr_batch_num_columns(b); c++) {
            fr_value v;
            fr_column_get(fr_batch_column(b, c), row, &v);
            if (c) CHECK(fr_buf_printf(&line, &err, "|"));
            if (v.is_null)
                CHECK(fr_buf_printf(&line, &err, "NULL"));
            else
                CHECK(fr_value_format(&v, &line, &err));
        }
        CHECK(fr_buf_append(&line, "", 1, &err));
        if (r->n == r->cap) {
            r->cap = r->cap * 2 + 64;
            r->lines = realloc(r->lines, sizeof *r->lines * (size_t)r->cap);
            assert_non_null(r->lines);
        }
        r->lines[r->n++] = strdup((const char *)line.data);
    }
    fr_buf_free(&line);
}

static void rows_free(rows_text *r)
{
    for (int64_t i = 0; i < r->n; i++) free(r->lines[i]);
    free(r->lines);
    memset(r, 0, sizeof *r);
}

static int line_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void rows_sort(rows_text *r)
{
    if (r->n > 1) qsort(r->lines, (size_t)r->n, sizeof *r->lines, line_cmp);
}

static int on_union(void *ctx, fr_batch *batch, fr_error *e)
{
    (void)e;
    assert_true(fr_batch_num_rows(batch) > 0);
    rows_add(ctx, batch);
    fr_batch_free(batch);
    return 0;
}

static int on_scan(void *ctx, int bucket, fr_batch *batch, const int64_t *offsets,
                   const uint8_t *change_types, int64_t commit_ts, fr_error *e)
{
    (void)bucket, (void)offsets, (void)change_types, (void)commit_ts;
    return on_union(ctx, batch, e);
}

static void expect_same(rows_text *got, rows_text *want, const char *what, const char *table)
{
    rows_sort(got);
    rows_sort(want);
    for (int64_t i = 0; i < got->n && i < want->n; i++)
        if (strcmp(got->lines[i], want->lines[i]) != 0)
            fail_msg("seed %llu: table %s, %s: row %lld of %lld differs: union read '%s', "
                     "without the lake '%s'", (unsigned long long)run_seed, table, what,
                     (long long)i, (long long)want->n, got->lines[i], want->lines[i]);
    if (got->n != want->n)
        fail_msg("seed %llu: table %s, %s: the union read returns %lld rows, the read without "
                 "the lake %lld", (unsigned long long)run_seed, table, what, (long long)got->n,
                 (long long)want->n);
}

/* ---- queries ---------------------------------------------------------------------------- */

typedef struct query {
    const char *what;
    int cols[NCOLS];
    int ncols;           /* 0: every column */
    int fcol;            /* filter column, -1 for none */
    fr_expr_op op;
    int64_t ival;        /* an integer to compare with */
    const char *sval;    /* or a string */
} query;

static const query queries[] = {
    {"every column", {0}, 0, -1, 0, 0, NULL},
    {"a, k", {C_A, C_K}, 2, -1, 0, 0, NULL},
    {"d, ts, t where a > 100", {C_D, C_TS, C_T}, 3, C_A, FR_OP_GT, 100, NULL},
    {"every column where k < 20", {0}, 0, C_K, FR_OP_LT, 20, NULL},
    {"k, s where s >= 'b'", {C_K, C_S}, 2, C_S, FR_OP_GE, 0, "b"},
    {"every column where p = 'y'", {0}, 0, C_P, FR_OP_EQ, 0, "y"},
    {"s where ts > 2026-12-01", {C_S}, 1, C_TS, FR_OP_GT, 0, "2026-12-01 00:00:00"},
};

static fr_expr *make_filter(fr_arena *a, const fr_schema *s, const query *q)
{
    if (q->fcol < 0) return NULL;
    fr_value v = q->sval ? fr_value_str(fr_type_of(FR_T_STRING), q->sval, strlen(q->sval))
                         : fr_value_int(fr_type_of(FR_T_BIGINT), q->ival);
    fr_expr *e = fr_expr_binary(a, q->op, fr_expr_column(a, fr_schema_field(s, q->fcol)->name),
                                fr_expr_literal(a, &v));
    assert_non_null(e);
    CHECK(fr_expr_bind(e, s, &err));
    return e;
}

static void read_union(fr_table *t, const query *q, const fr_expr *f, rows_text *out)
{
    fr_union_spec spec = {.columns = q->ncols ? q->cols : NULL, .ncolumns = q->ncols,
                          .filter = f};
    CHECK(fr_table_scan_union(t, &spec, on_union, out, &err));
}

static void read_plain(fr_table *t, const query *q, const fr_expr *f, rows_text *out)
{
    if (fr_table_is_pk(t)) {
        CHECK(fr_table_scan_state(t, q->ncols ? q->cols : NULL, q->ncols, f, on_union, out,
                                  &err));
        return;
    }
    fr_scan_spec spec = {.start = FR_START_EARLIEST, .columns = q->ncols ? q->cols : NULL,
                         .ncolumns = q->ncols, .filter = f, .max_records = -1, .bucket = -1};
    CHECK(fr_table_scan(t, &spec, on_scan, out, &err));
}

static void check_queries(fr_table *t, const char *when)
{
    fr_arena *a = fr_arena_new(4096);
    for (size_t i = 0; i < sizeof queries / sizeof *queries; i++) {
        fr_expr *f = make_filter(a, fr_table_schema(t), &queries[i]);
        rows_text got = {0}, want = {0};
        read_plain(t, &queries[i], f, &want);
        read_union(t, &queries[i], f, &got);
        char what[256];
        snprintf(what, sizeof what, "%s, %s", queries[i].what, when);
        expect_same(&got, &want, what, fr_table_name(t));
        rows_free(&got);
        rows_free(&want);
    }
    fr_arena_free(a);
}

/* ---- t$lake of a log table: exactly the rows below the tiered offsets ------------------- */

typedef struct below_ctx {
    rows_text *out;
    const fr_lake_snapshot *snap;
    fr_table *t;
    int64_t partition_id;
} below_ctx;

static int on_partition(void *ctx, const fr_partition *p, fr_error *e)
{
    (void)e;
    ((below_ctx *)ctx)->partition_id = p->id;
    return 0;
}

/* Rows of the log below the snapshot's offsets, as "<table columns>|bucket|offset". */
static int on_below(void *ctx, int bucket, fr_batch *batch, const int64_t *offsets,
                    const uint8_t *change_types, int64_t commit_ts, fr_error *e)
{
    (void)change_types, (void)commit_ts, (void)e;
    below_ctx *c = ctx;
    int64_t tiered = 0;
    for (int i = 0; c->snap && i < c->snap->noffsets; i++)
        if (c->snap->offsets[i].partition_id == c->partition_id &&
            c->snap->offsets[i].bucket == bucket)
            tiered = c->snap->offsets[i].offset;
    rows_text part = {0};
    rows_add(&part, batch);
    for (int64_t r = 0; r < part.n; r++) {
        if (offsets[r] < tiered) {
            char line[4096];
            snprintf(line, sizeof line, "%s|%d|%lld", part.lines[r], bucket,
                     (long long)offsets[r]);
            if (c->out->n == c->out->cap) {
                c->out->cap = c->out->cap * 2 + 64;
                c->out->lines = realloc(c->out->lines, sizeof *c->out->lines * (size_t)c->out->cap);
            }
            c->out->lines[c->out->n++] = strdup(line);
        }
    }
    rows_free(&part);
    fr_batch_free(batch);
    return 0;
}

/* t$lake (the lake alone) of a log table holds exactly the log's rows below the tiered
 * offsets, with their bucket and offset in __bucket and __offset. Columns whose lake type is
 * the table's (k, a, s as text, d) are compared by value. */
static void check_lake_only(fr_table *t)
{
    fr_lake_snapshot *snaps = NULL;
    int n = 0;
    CHECK(fr_table_lake_snapshots(t, &snaps, &n, &err));
    rows_text want = {0}, got = {0};
    below_ctx c = {.out = &want, .snap = n ? &snaps[n - 1] : NULL, .t = t, .partition_id = -1};
    int cols[] = {C_K, C_A, C_S, C_D};
    fr_scan_spec spec = {.start = FR_START_EARLIEST, .columns = cols, .ncolumns = 4,
                         .max_records = -1, .bucket = -1, .on_partition = on_partition};
    CHECK(fr_table_scan(t, &spec, on_below, &c, &err));
    int lcols[] = {C_K, C_A, C_S, C_D, NCOLS, NCOLS + 1}; /* ..., __bucket, __offset */
    fr_union_spec us = {.columns = lcols, .ncolumns = 6, .lake_only = true};
    CHECK(fr_table_scan_union(t, &us, on_union, &got, &err));
    expect_same(&got, &want, "t$lake against the log below the tiered offsets",
                fr_table_name(t));
    rows_free(&got);
    rows_free(&want);
    if (snaps) fr_lake_snapshots_free(snaps, n);
}

/* ---- the randomized run ----------------------------------------------------------------- */

static void run_random(const table_kind *k)
{
    rng = run_seed * 0x9E3779B97F4A7C15ULL + (uint64_t)strlen(k->name);
    if (!rng) rng = 1;
    fr_table *t = create(k);
    check_queries(t, "empty, before any tiering");
    int rounds = 0;
    bool dropped = false, written = false;
    for (int step = 1; step <= STEPS; step++) {
        int action = pick(10);
        if (action < 7) {
            int rows = 1 + pick(60);
            if (k->pk) write_pk(t, k->partitioned, rows);
            else write_log(t, k->partitioned, rows);
            written = true;
        } else {
            int64_t id = -2;
            CHECK(fr_table_tier(t, &id, &err));
            assert_true(written ? id >= 0 : id == -1); /* no snapshot without rows */
            rounds++;
        }
        if (k->partitioned && !dropped && step == STEPS / 2 && rounds > 0) {
            /* The lake keeps rows of a dropped partition: the union read must not. */
            fr_option spec = {"p", "z"};
            CHECK(fr_engine_drop_partition(engine, "default", k->name, &spec, 1, true, &err));
            dropped = true;
        }
        if (step % CHECK_EVERY == 0) {
            char when[64];
            snprintf(when, sizeof when, "step %d, after %d tiering rounds", step, rounds);
            check_queries(t, when);
            if (!k->pk && !k->partitioned) check_lake_only(t);
        }
    }
    int64_t id = -1;
    CHECK(fr_table_tier(t, &id, &err));
    check_queries(t, "after the last round (everything tiered)");
    if (!k->pk && !k->partitioned) check_lake_only(t);
    /* Nothing new: the round commits nothing and gives the current snapshot. */
    int64_t again = -1;
    CHECK(fr_table_tier(t, &again, &err));
    assert_int_equal(again, id);
    fr_table_release(t);
}

static void test_log_random(void **state)
{
    (void)state;
    table_kind k = {"log_plain", false, false};
    run_random(&k);
}

static void test_log_partitioned_random(void **state)
{
    (void)state;
    table_kind k = {"log_parts", false, true};
    run_random(&k);
}

static void test_pk_random(void **state)
{
    (void)state;
    table_kind k = {"pk_plain", true, false};
    run_random(&k);
}

static void test_pk_partitioned_random(void **state)
{
    (void)state;
    table_kind k = {"pk_parts", true, true};
    run_random(&k);
}

/* ---- concurrent tiering ----------------------------------------------------------------- */

typedef struct bg {
    fr_table *t;
    volatile bool stop;
    int rounds;
    int writes;
    char error[512];
} bg;

static void *tier_loop(void *arg)
{
    bg *b = arg;
    while (!b->stop) {
        fr_error e = {0};
        int64_t id;
        if (fr_table_tier(b->t, &id, &e) < 0) {
            snprintf(b->error, sizeof b->error, "tiering: %s", e.msg);
            break;
        }
        b->rounds++;
    }
    return NULL;
}

/* The k values of every row of a log table (column 0), sorted. */
typedef struct keys {
    int64_t *v;
    int64_t n, cap;
} keys;

static int on_keys(void *ctx, fr_batch *batch, fr_error *e)
{
    (void)e;
    keys *k = ctx;
    const fr_column *c = fr_batch_column(batch, 0);
    for (int64_t r = 0; r < fr_batch_num_rows(batch); r++) {
        if (k->n == k->cap) {
            k->cap = k->cap * 2 + 256;
            k->v = realloc(k->v, sizeof *k->v * (size_t)k->cap);
        }
        fr_value v;
        fr_column_get(c, r, &v);
        k->v[k->n++] = v.v.i;
    }
    fr_batch_free(batch);
    return 0;
}

static int key_cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Appends batches of increasing keys until stopped: keys below `acked` are acknowledged,
 * keys from `started` on are not written yet. */
typedef struct writer {
    fr_table *t;
    atomic_bool stop;
    atomic_llong started, acked;
    char error[512];
} writer;

static void *write_loop(void *arg)
{
    writer *w = arg;
    fr_builder *bld = NULL;
    fr_error e = {0};
    if (fr_builder_new(fr_table_schema(w->t), &bld, &e) < 0) goto fail;
    while (!atomic_load(&w->stop)) {
        int64_t first = atomic_load(&w->started), n = 1 + pick(40);
        for (int64_t k = first; k < first + n; k++) append_row(bld, k, "-", false);
        fr_batch *b = NULL;
        if (fr_builder_finish(bld, &b, &e) < 0) goto fail;
        atomic_store(&w->started, first + n);
        int rc = fr_table_append(w->t, b, FR_NO_WRITER, -1, NULL, &e);
        fr_batch_free(b);
        if (rc < 0) goto fail;
        atomic_store(&w->acked, first + n);
    }
    fr_builder_free(bld);
    return NULL;
fail:
    snprintf(w->error, sizeof w->error, "writer: %s", e.msg);
    fr_builder_free(bld);
    return NULL;
}

/* Keys of one union read (sorted): none twice, every key acknowledged before the read
 * began, none written after it ended. */
static void check_keys(const keys *got, int64_t before, int64_t after, const char *when, int i)
{
    for (int64_t j = 0; j < got->n; j++) {
        if (j > 0 && got->v[j] == got->v[j - 1])
            fail_msg("seed %llu: union read %d %s: key %lld read twice",
                     (unsigned long long)run_seed, i, when, (long long)got->v[j]);
        if (j < before && got->v[j] != j)
            fail_msg("seed %llu: union read %d %s: key %lld, written before the read, is lost",
                     (unsigned long long)run_seed, i, when, (long long)j);
        if (got->v[j] >= after)
            fail_msg("seed %llu: union read %d %s: key %lld was not written when it ended",
                     (unsigned long long)run_seed, i, when, (long long)got->v[j]);
    }
    if (got->n < before)
        fail_msg("seed %llu: union read %d %s returned %lld rows; %lld were written before it",
                 (unsigned long long)run_seed, i, when, (long long)got->n, (long long)before);
}

static void test_log_concurrent_tiering(void **state)
{
    (void)state;
    rng = run_seed ^ 0xC0FFEE;
    table_kind k = {"log_conc", false, false};
    fr_table *t = create(&k);
    next_log_key = 0;
    write_log(t, false, 50);
    bg b = {.t = t};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, tier_loop, &b), 0);
    int cols[] = {C_K};
    fr_union_spec spec = {.columns = cols, .ncolumns = 1};
    /* Reads and writes in turn, rounds running all along: exactly the rows written. */
    for (int i = 0; i < 40 && !b.error[0]; i++) {
        keys got = {0};
        CHECK(fr_table_scan_union(t, &spec, on_keys, &got, &err));
        qsort(got.v, (size_t)got.n, sizeof *got.v, key_cmp);
        check_keys(&got, next_log_key, next_log_key, "during tiering", i);
        free(got.v);
        write_log(t, false, 1 + pick(40));
    }
    /* Reads while another thread appends and rounds run. */
    writer w = {.t = t};
    atomic_init(&w.started, next_log_key);
    atomic_init(&w.acked, next_log_key);
    pthread_t wt;
    assert_int_equal(pthread_create(&wt, NULL, write_loop, &w), 0);
    for (int i = 0; i < 40 && !b.error[0] && !w.error[0]; i++) {
        int64_t before = atomic_load(&w.acked);
        keys got = {0};
        CHECK(fr_table_scan_union(t, &spec, on_keys, &got, &err));
        int64_t after = atomic_load(&w.started);
        qsort(got.v, (size_t)got.n, sizeof *got.v, key_cmp);
        check_keys(&got, before, after, "during tiering and appends", i);
        free(got.v);
    }
    atomic_store(&w.stop, true);
    pthread_join(wt, NULL);
    b.stop = true;
    pthread_join(th, NULL);
    if (b.error[0]) fail_msg("seed %llu: %s", (unsigned long long)run_seed, b.error);
    if (w.error[0]) fail_msg("seed %llu: %s", (unsigned long long)run_seed, w.error);
    fprintf(stderr, "test_engine_union: %d tiering rounds ran during the reads\n", b.rounds);
    fr_table_release(t);
}

static void test_pk_concurrent_tiering(void **state)
{
    (void)state;
    rng = run_seed ^ 0xBEEF;
    table_kind k = {"pk_conc", true, false};
    fr_table *t = create(&k);
    for (int r = 0; r < 8; r++) {
        for (int i = 0; i < 5; i++) write_pk(t, false, 1 + pick(30));
        bg b = {.t = t};
        pthread_t th;
        assert_int_equal(pthread_create(&th, NULL, tier_loop, &b), 0);
        check_queries(t, "while tiering rounds run");
        b.stop = true;
        pthread_join(th, NULL);
        if (b.error[0]) fail_msg("seed %llu: %s", (unsigned long long)run_seed, b.error);
    }
    fr_table_release(t);
}

/* ---- retention after tiering ------------------------------------------------------------ */

static void test_retention_keeps_union(void **state)
{
    (void)state;
    rng = run_seed ^ 0x5EED;
    fr_schema *s = table_schema();
    fr_option opts[] = {{"table.datalake.enabled", "true"}, {"bucket.num", "1"},
                        {"table.log.ttl", "1ms"}};
    fr_table_spec spec = {.db = "default", .name = "log_ret", .schema = s, .options = opts,
                          .noptions = 3};
    CHECK(fr_engine_create_table(engine, &spec, false, &err));
    fr_schema_free(s);
    fr_table *t = NULL;
    CHECK(fr_engine_get_table(engine, "default", "log_ret", &t, &err));
    next_log_key = 0;
    for (int i = 0; i < 40; i++) write_log(t, false, 50);
    int64_t id;
    CHECK(fr_table_tier(t, &id, &err));
    for (int i = 0; i < 4; i++) write_log(t, false, 50); /* untiered rows */
    int removed = 0;
    CHECK(fr_engine_enforce_retention_at(engine, fr_now_ms() + 3600 * 1000, &removed, &err));
    assert_true(removed > 0);
    fr_log *log = fr_table_log(t, 0);
    assert_non_null(log);
    assert_true(fr_log_start_offset(log) > 0);
    int cols[] = {C_K};
    fr_union_spec us = {.columns = cols, .ncolumns = 1};
    keys got = {0};
    CHECK(fr_table_scan_union(t, &us, on_keys, &got, &err));
    qsort(got.v, (size_t)got.n, sizeof *got.v, key_cmp);
    assert_int_equal(got.n, next_log_key);
    for (int64_t j = 0; j < got.n; j++) assert_int_equal(got.v[j], j);
    free(got.v);
    /* A lake that lost its snapshots cannot stand in for the removed segments: the read
     * fails rather than return the log's rows alone. */
    char lake[2048];
    snprintf(lake, sizeof lake, "%s/lake/default/log_ret", dir);
    CHECK(fr_remove_tree(lake, &err));
    keys none = {0};
    fr_error e = {0};
    assert_int_equal(fr_table_scan_union(t, &us, on_keys, &none, &e), FR_ESTATE);
    assert_non_null(strstr(e.msg, "records are in neither the lake nor the log (bucket 0 "
                                  "holds offsets from "));
    assert_int_equal(none.n, 0);
    fr_table_release(t);
}

/* ---- a table without a lake, and bad calls ---------------------------------------------- */

static void test_without_lake(void **state)
{
    (void)state;
    fr_schema *s = table_schema();
    fr_table_spec spec = {.db = "default", .name = "plain", .schema = s};
    CHECK(fr_engine_create_table(engine, &spec, false, &err));
    fr_schema_free(s);
    fr_table *t = NULL;
    CHECK(fr_engine_get_table(engine, "default", "plain", &t, &err));
    assert_false(fr_table_lake_enabled(t));
    next_log_key = 0;
    write_log(t, false, 10);
    rows_text got = {0};
    fr_union_spec us = {0};
    CHECK(fr_table_scan_union(t, &us, on_union, &got, &err));
    assert_int_equal(got.n, 10);
    rows_free(&got);
    us.lake_only = true;
    fr_error e = {0};
    assert_int_equal(fr_table_scan_union(t, &us, on_union, &got, &e), FR_EINVAL);
    assert_non_null(strstr(e.msg, "table.datalake.enabled"));
    fr_table_release(t);

    table_kind k = {"log_bad", false, false};
    t = create(&k);
    int bad[] = {0, 0};
    fr_union_spec dup = {.columns = bad, .ncolumns = 2};
    assert_int_equal(fr_table_scan_union(t, &dup, on_union, &got, &e), FR_EINVAL);
    int out_of_range[] = {NCOLS};
    fr_union_spec oor = {.columns = out_of_range, .ncolumns = 1};
    assert_int_equal(fr_table_scan_union(t, &oor, on_union, &got, &e), FR_EINVAL);
    fr_table_release(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_log_random),
        cmocka_unit_test(test_log_partitioned_random),
        cmocka_unit_test(test_pk_random),
        cmocka_unit_test(test_pk_partitioned_random),
        cmocka_unit_test(test_log_concurrent_tiering),
        cmocka_unit_test(test_pk_concurrent_tiering),
        cmocka_unit_test(test_retention_keeps_union),
        cmocka_unit_test(test_without_lake),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
