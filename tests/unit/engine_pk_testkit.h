/* engine_pk_testkit.h — helpers shared by the engine's tests of primary-key and partitioned
 * tables: the table shape (dt STRING, id BIGINT, name STRING, score DOUBLE), batches of it
 * from row literals, table creation with keys and options, and collectors for KV reads and
 * partition lists. Header-only, on top of engine_testkit.h. */
#ifndef FIRTH_ENGINE_PK_TESTKIT_H
#define FIRTH_ENGINE_PK_TESTKIT_H

#include "engine_testkit.h"

#include <inttypes.h>
#include <stdbool.h>

/* One row of the test shape; name NULL is a NULL. */
typedef struct pk_row {
    const char *dt;
    int64_t id;
    const char *name;
    double score;
} pk_row;

/* (dt STRING, id BIGINT, name STRING, score DOUBLE), all nullable (the engine makes key
 * columns NOT NULL). */
static inline fr_schema *pk_schema(void)
{
    fr_field f[4] = {
        {.name = "dt", .type = fr_type_of(FR_T_STRING)},
        {.name = "id", .type = fr_type_of(FR_T_BIGINT)},
        {.name = "name", .type = fr_type_of(FR_T_STRING)},
        {.name = "score", .type = fr_type_of(FR_T_DOUBLE)},
    };
    fr_schema *s = NULL;
    fr_error err = {0};
    KIT_CHECK(fr_schema_new(f, 4, 0, &s, &err), err);
    return s;
}

/* A batch of rows in schema s (the test shape, nullability as s says). */
static inline fr_batch *pk_batch_of(const fr_schema *s, const pk_row *rows, int n)
{
    fr_builder *bld = NULL;
    fr_error err = {0};
    KIT_CHECK(fr_builder_new(s, &bld, &err), err);
    for (int i = 0; i < n; i++) {
        const char *dt = rows[i].dt, *name = rows[i].name;
        if (dt) KIT_CHECK(fr_builder_append_bytes(bld, 0, dt, strlen(dt), &err), err);
        else KIT_CHECK(fr_builder_append_null(bld, 0, &err), err);
        KIT_CHECK(fr_builder_append_i64(bld, 1, rows[i].id, &err), err);
        if (name) KIT_CHECK(fr_builder_append_bytes(bld, 2, name, strlen(name), &err), err);
        else KIT_CHECK(fr_builder_append_null(bld, 2, &err), err);
        KIT_CHECK(fr_builder_append_f64(bld, 3, rows[i].score, &err), err);
    }
    fr_batch *b = NULL;
    KIT_CHECK(fr_builder_finish(bld, &b, &err), err);
    fr_builder_free(bld);
    return b;
}

static inline fr_batch *pk_batch(fr_table *t, const pk_row *rows, int n)
{
    return pk_batch_of(fr_table_schema(t), rows, n);
}

/* Creates db.name with the test shape; returns what create returns (err filled). */
static inline int pk_create(fr_engine *e, const char *name, const char *const *pk, int npk,
                            const char *const *part, int npart, const fr_option *opts,
                            int nopts, fr_error *err)
{
    fr_schema *s = pk_schema();
    fr_table_spec spec = {.db = "default", .name = name, .schema = s, .options = opts,
                          .noptions = nopts, .primary_key = pk, .nprimary_key = npk,
                          .partition_keys = part, .npartition_keys = npart};
    int rc = fr_engine_create_table(e, &spec, false, err);
    fr_schema_free(s);
    return rc;
}

/* PK_CREATE_OK(e, name, pk, npk, part, npart, opts, nopts) */
#define PK_CREATE_OK(e, name, pk, npk, part, npart, ...)                                       \
    do {                                                                                       \
        fr_error pk_err_ = {0};                                                                \
        KIT_CHECK(pk_create(e, name, pk, npk, part, npart, __VA_ARGS__, &pk_err_), pk_err_);   \
    } while (0)

/* Expects creation to fail with code and a message containing what. */
static inline void pk_create_fails(fr_engine *e, const char *const *pk, int npk,
                                   const char *const *part, int npart, const fr_option *opts,
                                   int nopts, int code, const char *what)
{
    fr_error err = {0};
    int rc = pk_create(e, "bad", pk, npk, part, npart, opts, nopts, &err);
    if (rc != code || !strstr(err.msg, what))
        fail_msg("expected %d with '%s', got %d: %s", code, what, rc, err.msg);
}

/* Keys (dt, id) as a batch, for lookups of a (dt, id) primary key. */
static inline fr_batch *pk_keys_dt_id(const pk_row *rows, int n)
{
    fr_field f[2] = {{.name = "dt", .type = fr_type_of(FR_T_STRING)},
                     {.name = "id", .type = fr_type_of(FR_T_BIGINT)}};
    f[0].type.nullable = f[1].type.nullable = false;
    fr_schema *s = NULL;
    fr_error err = {0};
    KIT_CHECK(fr_schema_new(f, 2, 0, &s, &err), err);
    fr_builder *bld = NULL;
    KIT_CHECK(fr_builder_new(s, &bld, &err), err);
    for (int i = 0; i < n; i++) {
        KIT_CHECK(fr_builder_append_bytes(bld, 0, rows[i].dt, strlen(rows[i].dt), &err), err);
        KIT_CHECK(fr_builder_append_i64(bld, 1, rows[i].id, &err), err);
    }
    fr_batch *b = NULL;
    KIT_CHECK(fr_builder_finish(bld, &b, &err), err);
    fr_builder_free(bld);
    fr_schema_free(s);
    return b;
}

/* Rows collected from KV reads, as (dt, id, name, score); strings copied. */
typedef struct pk_got {
    int n, cap;
    char **dt, **name;
    int64_t *id;
    double *score;
    int batches;
    int stop_after; /* rows: return 1 once this many were seen (0: never) */
} pk_got;

static inline char *pk_str(const fr_column *c, int64_t row)
{
    if (fr_column_is_null(c, row)) return NULL;
    fr_value v;
    fr_column_get(c, row, &v);
    char *s = malloc(v.v.s.len + 1);
    memcpy(s, v.v.s.ptr, v.v.s.len);
    s[v.v.s.len] = '\0';
    return s;
}

/* Collects batches of the whole test shape. */
static inline int pk_collect(void *ctx, fr_batch *batch, fr_error *err)
{
    (void)err;
    pk_got *g = ctx;
    int64_t rows = fr_batch_num_rows(batch);
    g->batches++;
    for (int64_t r = 0; r < rows; r++) {
        if (g->n == g->cap) {
            g->cap = g->cap * 2 + 16;
            g->dt = realloc(g->dt, (size_t)g->cap * sizeof *g->dt);
            g->name = realloc(g->name, (size_t)g->cap * sizeof *g->name);
            g->id = realloc(g->id, (size_t)g->cap * sizeof *g->id);
            g->score = realloc(g->score, (size_t)g->cap * sizeof *g->score);
        }
        fr_value v;
        g->dt[g->n] = pk_str(fr_batch_column(batch, 0), r);
        fr_column_get(fr_batch_column(batch, 1), r, &v);
        g->id[g->n] = v.v.i;
        g->name[g->n] = pk_str(fr_batch_column(batch, 2), r);
        fr_column_get(fr_batch_column(batch, 3), r, &v);
        g->score[g->n] = v.v.f;
        g->n++;
    }
    fr_batch_free(batch);
    return g->stop_after > 0 && g->n >= g->stop_after ? 1 : 0;
}

static inline void pk_got_free(pk_got *g)
{
    for (int i = 0; i < g->n; i++) {
        free(g->dt[i]);
        free(g->name[i]);
    }
    free(g->dt);
    free(g->name);
    free(g->id);
    free(g->score);
    memset(g, 0, sizeof *g);
}

/* Index of the row with (dt, id) in g, or -1. */
static inline int pk_got_find(const pk_got *g, const char *dt, int64_t id)
{
    for (int i = 0; i < g->n; i++)
        if (g->id[i] == id && ((!dt && !g->dt[i]) || (dt && g->dt[i] && !strcmp(dt, g->dt[i]))))
            return i;
    return -1;
}

static inline void pk_put(fr_table *t, const pk_row *rows, int n, const uint8_t *ops)
{
    fr_batch *b = pk_batch(t, rows, n);
    fr_error err = {0};
    KIT_CHECK(fr_table_put(t, b, ops, NULL, 0, FR_NO_WRITER, -1, NULL, &err), err);
    fr_batch_free(b);
}

static inline pk_got pk_state(fr_table *t, const fr_expr *filter)
{
    pk_got g = {0};
    fr_error err = {0};
    KIT_CHECK(fr_table_scan_state(t, NULL, 0, filter, pk_collect, &g, &err), err);
    return g;
}

/* The names of a table's partitions, joined with ' ' (static storage). */
static inline const char *pk_partitions(fr_table *t)
{
    static char buf[4096];
    fr_partition *p = NULL;
    int n = 0;
    fr_error err = {0};
    KIT_CHECK(fr_table_list_partitions(t, &p, &n, &err), err);
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && used < sizeof buf; i++)
        used += (size_t)snprintf(buf + used, sizeof buf - used, "%s%s", i ? " " : "", p[i].name);
    fr_partitions_free(p, n);
    return buf;
}

/* The id of the partition named name, or -1. */
static inline int64_t pk_partition_id(fr_table *t, const char *name)
{
    fr_partition *p = NULL;
    int n = 0;
    fr_error err = {0};
    KIT_CHECK(fr_table_list_partitions(t, &p, &n, &err), err);
    int64_t id = -1;
    for (int i = 0; i < n; i++)
        if (strcmp(p[i].name, name) == 0) id = p[i].id;
    fr_partitions_free(p, n);
    return id;
}

/* A bound filter "col op literal" over the table's schema, in arena a. */
static inline fr_expr *pk_filter(fr_arena *a, fr_table *t, const char *col, fr_expr_op op,
                                 const fr_value *lit)
{
    fr_expr *e = fr_expr_binary(a, op, fr_expr_column(a, col), fr_expr_literal(a, lit));
    fr_error err = {0};
    KIT_CHECK(fr_expr_bind(e, fr_table_schema(t), &err), err);
    return e;
}

#endif
