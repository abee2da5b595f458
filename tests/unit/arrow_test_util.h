/* arrow_test_util.h — shared by the arrow unit tests: a schema with every firth type, a
 * seeded generator of random cells, a model of the expected cells, and comparison of a
 * batch against the model. Test bookkeeping uses the C allocator so that allocation
 * failure injection (fr_alloc_fail_after) only hits the code under test. */
#ifndef FIRTH_ARROW_TEST_UTIL_H
#define FIRTH_ARROW_TEST_UTIL_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "arrow/arrow.h"

/* xorshift64*: small, seedable, the same on every platform. */
static uint64_t tu_rng_state = 88172645463325252ull;
static void tu_seed(uint64_t seed) { tu_rng_state = seed ? seed : 88172645463325252ull; }
static uint64_t tu_next(void)
{
    uint64_t x = tu_rng_state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    tu_rng_state = x;
    return x * 2685821657736338717ull;
}
static int64_t tu_range(int64_t lo, int64_t hi) { return lo + (int64_t)(tu_next() % (uint64_t)(hi - lo + 1)); }

/* Seed from FIRTH_TEST_SEED or the clock, printed so that a failure can be replayed. */
static uint64_t tu_pick_seed(const char *test)
{
    const char *env = getenv("FIRTH_TEST_SEED");
    uint64_t seed = env ? strtoull(env, NULL, 10) : (uint64_t)fr_monotonic_ns();
    printf("%s: seed %" PRIu64 " (set FIRTH_TEST_SEED to replay)\n", test, seed);
    tu_seed(seed);
    return seed;
}

typedef struct tu_col {
    const char *name;
    const char *type;
} tu_col;

/* Every type, with the precisions that map to each Arrow unit and some that need the
 * firth.type metadata to survive. */
static const tu_col tu_all_types[] = {
    {"b", "BOOLEAN"}, {"i8", "TINYINT"}, {"i16", "SMALLINT"}, {"i32", "INT"}, {"i64", "BIGINT"},
    {"f32", "FLOAT"}, {"f64", "DOUBLE"}, {"dec", "DECIMAL(20, 4)"}, {"dec38", "DECIMAL(38, 0)"},
    {"dec1", "DECIMAL(1, 1)"}, {"ch", "CHAR(5)"}, {"vc", "VARCHAR(10)"}, {"s", "STRING"},
    {"by", "BYTES"}, {"d", "DATE"}, {"t0", "TIME(0)"}, {"t3", "TIME(3)"}, {"t6", "TIME(6)"},
    {"t9", "TIME(9)"}, {"t2", "TIME(2)"}, {"ts", "TIMESTAMP(6)"}, {"ts0", "TIMESTAMP(0)"},
    {"ts3", "TIMESTAMP(3)"}, {"ts9", "TIMESTAMP(9)"}, {"ts5", "TIMESTAMP(5)"},
    {"ltz", "TIMESTAMP_LTZ(3)"}, {"ltz6", "TIMESTAMP_LTZ(6)"}, {"ltz9", "TIMESTAMP_LTZ(9)"},
    {"ltz0", "TIMESTAMP_LTZ(0)"}, {"ltz1", "TIMESTAMP_LTZ(1)"},
};
#define TU_NTYPES ((int)(sizeof tu_all_types / sizeof tu_all_types[0]))

/* A schema of the given columns; nullable decides every column's nullability. */
static fr_schema *tu_schema(const tu_col *cols, int n, bool nullable)
{
    fr_field *f = calloc((size_t)n, sizeof *f);
    fr_error err;
    for (int i = 0; i < n; i++) {
        f[i].name = (char *)cols[i].name;
        if (fr_type_parse(cols[i].type, &f[i].type, &err) < 0) {
            fprintf(stderr, "type %s: %s\n", cols[i].type, err.msg);
            abort();
        }
        f[i].type.nullable = nullable;
    }
    fr_schema *s = NULL;
    if (fr_schema_new(f, n, 1, &s, &err) < 0) {
        fprintf(stderr, "schema: %s\n", err.msg);
        abort();
    }
    free(f);
    return s;
}

/* The expected cells of a batch, column-major; string bytes live in `pool`. */
typedef struct tu_model {
    int ncols;
    int64_t rows;
    fr_value *cells;
    uint8_t *pool;
    size_t pool_len, pool_cap;
} tu_model;

static fr_value *tu_cell(tu_model *m, int col, int64_t row) { return &m->cells[(size_t)col * (size_t)m->rows + (size_t)row]; }

static void tu_model_free(tu_model *m)
{
    free(m->cells);
    free(m->pool);
    memset(m, 0, sizeof *m);
}

/* A random value of type t (never NULL). Strings go into the pool, which must not move:
 * it is sized up front. */
static fr_value tu_random_value(const fr_type *t, tu_model *m)
{
    fr_value v;
    memset(&v, 0, sizeof v);
    v.type = *t;
    switch (t->id) {
    case FR_T_BOOLEAN: v.v.b = tu_next() & 1; break;
    case FR_T_TINYINT: v.v.i = tu_range(INT8_MIN, INT8_MAX); break;
    case FR_T_SMALLINT: v.v.i = tu_range(INT16_MIN, INT16_MAX); break;
    case FR_T_INT: v.v.i = tu_range(INT32_MIN, INT32_MAX); break;
    case FR_T_BIGINT: v.v.i = (int64_t)tu_next(); break;
    case FR_T_FLOAT: v.v.f = (float)tu_range(-1000000, 1000000) / 64.0f; break;
    case FR_T_DOUBLE: v.v.f = (double)(int64_t)tu_next() / 3.0; break;
    case FR_T_DECIMAL: {
        fr_i128 lim = fr_i128_pow10(t->precision);
        fr_i128 r = (fr_i128)((((unsigned __int128)tu_next() << 64) | tu_next()) & (((unsigned __int128)1 << 126) - 1));
        v.v.d = r % lim;
        if (tu_next() & 1) v.v.d = -v.v.d;
        break;
    }
    case FR_T_CHAR: case FR_T_VARCHAR: case FR_T_STRING: case FR_T_BYTES: {
        size_t max = t->length > 0 ? (size_t)t->length : 24;
        size_t n = (size_t)tu_range(0, (int64_t)max);
        if (t->id == FR_T_CHAR) n = (size_t)t->length; /* CHAR(n) holds exactly n characters */
        if (m->pool_len + n > m->pool_cap) abort();
        uint8_t *p = m->pool + m->pool_len;
        for (size_t i = 0; i < n; i++)
            p[i] = t->id == FR_T_BYTES ? (uint8_t)tu_next() : (uint8_t)('a' + tu_next() % 26);
        m->pool_len += n;
        v.v.s.ptr = p;
        v.v.s.len = n;
        break;
    }
    case FR_T_DATE: v.v.i = tu_range(-719162, 2932896); break;
    case FR_T_TIME: v.v.i = tu_range(0, 86400 * fr_type_time_units(t->precision) - 1); break;
    case FR_T_TIMESTAMP: case FR_T_TIMESTAMP_LTZ:
        v.v.i = tu_range(-4000000000ll, 4000000000ll) * fr_type_time_units(t->precision) / 1000;
        break;
    }
    return v;
}

/* A random model for schema s: null_pct percent of cells in nullable columns are NULL. */
static void tu_model_random(tu_model *m, const fr_schema *s, int64_t rows, int null_pct)
{
    memset(m, 0, sizeof *m);
    m->ncols = fr_schema_num_fields(s);
    m->rows = rows;
    m->cells = calloc((size_t)m->ncols * (size_t)(rows ? rows : 1), sizeof *m->cells);
    m->pool_cap = (size_t)m->ncols * (size_t)rows * 24 + 1;
    m->pool = malloc(m->pool_cap);
    for (int c = 0; c < m->ncols; c++) {
        const fr_type *t = &fr_schema_field(s, c)->type;
        for (int64_t r = 0; r < rows; r++) {
            if (t->nullable && tu_range(0, 99) < null_pct) *tu_cell(m, c, r) = fr_value_null(*t);
            else *tu_cell(m, c, r) = tu_random_value(t, m);
        }
    }
}

/* Builds a batch from the model with fr_builder_append, row by row. */
static fr_batch *tu_build(const fr_schema *s, tu_model *m)
{
    fr_builder *bld = NULL;
    fr_error err;
    if (fr_builder_new(s, &bld, &err) < 0) abort();
    for (int64_t r = 0; r < m->rows; r++)
        for (int c = 0; c < m->ncols; c++)
            if (fr_builder_append(bld, c, tu_cell(m, c, r), &err) < 0) {
                fprintf(stderr, "append col %d row %" PRId64 ": %s\n", c, r, err.msg);
                abort();
            }
    fr_batch *b = NULL;
    if (fr_builder_finish(bld, &b, &err) < 0) abort();
    fr_builder_free(bld);
    return b;
}

/* Compares two cells exactly (floats by bits). Returns true when equal. */
static bool tu_value_eq(const fr_value *a, const fr_value *b)
{
    if (a->is_null || b->is_null) return a->is_null == b->is_null;
    switch (a->type.id) {
    case FR_T_BOOLEAN: return a->v.b == b->v.b;
    case FR_T_FLOAT: case FR_T_DOUBLE: return memcmp(&a->v.f, &b->v.f, sizeof a->v.f) == 0;
    case FR_T_DECIMAL: return a->v.d == b->v.d;
    case FR_T_CHAR: case FR_T_VARCHAR: case FR_T_STRING: case FR_T_BYTES:
        return a->v.s.len == b->v.s.len && (a->v.s.len == 0 || memcmp(a->v.s.ptr, b->v.s.ptr, a->v.s.len) == 0);
    default: return a->v.i == b->v.i;
    }
}

/* Checks batch b against model columns cols[] (NULL: all) and rows [row0, row0 + rows) of
 * the model, or the rows whose bit is set in keep. Returns the number of mismatches. */
static int tu_check(const fr_batch *b, tu_model *m, const int *cols, int ncols, const uint8_t *keep)
{
    int bad = 0;
    if (!cols) ncols = m->ncols;
    if (fr_batch_num_columns(b) != ncols) {
        fprintf(stderr, "batch has %d columns, expected %d\n", fr_batch_num_columns(b), ncols);
        return 1;
    }
    int64_t out_row = 0;
    for (int64_t r = 0; r < m->rows; r++) {
        if (keep && !((keep[r >> 3] >> (r & 7)) & 1)) continue;
        if (out_row >= fr_batch_num_rows(b)) {
            fprintf(stderr, "batch has only %" PRId64 " rows\n", fr_batch_num_rows(b));
            return bad + 1;
        }
        for (int j = 0; j < ncols; j++) {
            int c = cols ? cols[j] : j;
            fr_value got;
            fr_column_get(fr_batch_column(b, j), out_row, &got);
            if (!tu_value_eq(&got, tu_cell(m, c, r))) {
                if (bad < 10)
                    fprintf(stderr, "column %d (%s) row %" PRId64 " differs\n", c,
                            fr_schema_field(fr_batch_schema(b), j)->name, r);
                bad++;
            }
        }
        out_row++;
    }
    if (out_row != fr_batch_num_rows(b)) {
        fprintf(stderr, "batch has %" PRId64 " rows, expected %" PRId64 "\n", fr_batch_num_rows(b), out_row);
        bad++;
    }
    /* The null counts must agree with the bitmaps. */
    for (int j = 0; j < ncols; j++) {
        const fr_column *c = fr_batch_column(b, j);
        int64_t nulls = 0;
        for (int64_t r = 0; r < c->length; r++) nulls += fr_column_is_null(c, r);
        if (nulls != c->null_count || (c->null_count == 0) != (c->validity == NULL)) {
            fprintf(stderr, "column %d: null count %" PRId64 " but %" PRId64 " nulls\n", j, c->null_count, nulls);
            bad++;
        }
    }
    return bad;
}

#endif
