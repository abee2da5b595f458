/* sql_group.c — the grouping stage of SELECT: GROUP BY, DISTINCT and the aggregate functions
 * COUNT, SUM, MIN, MAX and AVG (each also over DISTINCT values).
 *
 * Rows come in batches whose first columns are the group values and whose other columns are
 * the aggregates' arguments. A group is found by the memcmp-ordered encoding of its values
 * (sql_key_append: a NULL marker, then the primary-key encoding), so values that compare
 * equal in SQL fall in one group (-0.0 with 0.0, every NaN with every NaN) and NULLs form a
 * group of their own. The first row of a group gives its values (appended to the output
 * builder as the group is made); each aggregate keeps one cell per group, and a DISTINCT
 * aggregate a set of (group, value) keys that tells whether a value was seen in its group.
 *
 * Invariants: group ids are dense, in the order groups were first seen; the builder's group
 * columns hold exactly one row per group; what the stage holds (keys, tables, cells, copied
 * MIN/MAX bytes) stays at most FR_SQL_GROUP_BYTES_MAX after each batch. The builder's copy
 * of the group values is not counted apart: it is about as large as their keys, which are. */
#include "sql/sql_int.h"

/* ---- a hash table of byte keys -------------------------------------------------------- */

typedef struct gh_slot {
    uint32_t hash;
    uint32_t len;
    int64_t off; /* of the key in keys; -1: empty */
    int64_t id;
} gh_slot;

typedef struct gh_table {
    fr_buf keys;
    gh_slot *slots;
    size_t cap; /* a power of two, at least twice the entries */
    int64_t n;
} gh_table;

static void gh_free(gh_table *t)
{
    fr_buf_free(&t->keys);
    fr_free(t->slots);
}

static int gh_grow(gh_table *t, fr_error *err)
{
    size_t cap = t->cap ? t->cap * 2 : 1024;
    gh_slot *slots = fr_malloc(cap * sizeof *slots);
    if (!slots) return fr_fail(err, FR_ENOMEM, "out of memory grouping rows");
    for (size_t i = 0; i < cap; i++) slots[i].off = -1;
    for (size_t i = 0; i < t->cap; i++) {
        if (t->slots[i].off < 0) continue;
        size_t j = t->slots[i].hash & (cap - 1);
        while (slots[j].off >= 0) j = (j + 1) & (cap - 1);
        slots[j] = t->slots[i];
    }
    fr_free(t->slots);
    t->slots = slots;
    t->cap = cap;
    return 0;
}

/* Finds key k[0..n) or adds it with id `fresh`. *id gets the key's id; *added whether it
 * was new (its bytes are then kept). */
static int gh_find_or_add(gh_table *t, const uint8_t *k, size_t n, int64_t fresh, int64_t *id,
                          bool *added, fr_error *err)
{
    if ((size_t)(t->n + 1) * 2 > t->cap) FR_TRY(gh_grow(t, err));
    uint32_t h = fr_murmur3_32(k, n, 0x9e3779b9u);
    size_t j = h & (t->cap - 1);
    for (; t->slots[j].off >= 0; j = (j + 1) & (t->cap - 1)) {
        const gh_slot *s = &t->slots[j];
        if (s->hash == h && s->len == n && memcmp(t->keys.data + s->off, k, n) == 0) {
            *id = s->id;
            *added = false;
            return 0;
        }
    }
    if (n > UINT32_MAX) return fr_fail(err, FR_ELIMIT, "a group key is too long");
    t->slots[j] = (gh_slot){.hash = h, .len = (uint32_t)n, .off = (int64_t)t->keys.len,
                            .id = fresh};
    FR_TRY(fr_buf_append(&t->keys, k, n, err));
    t->n++;
    *id = fresh;
    *added = true;
    return 0;
}

static int64_t gh_bytes(const gh_table *t)
{
    return (int64_t)(t->keys.cap + t->cap * sizeof(gh_slot));
}

/* ---- result types ----------------------------------------------------------------------- */

int sql_agg_type(fr_expr_agg fn, const fr_type *arg, sql_pos pos, fr_type *out, fr_error *err)
{
    if (fn == FR_AGGFN_COUNT) {
        *out = fr_type_of(FR_T_BIGINT);
        out->nullable = false;
        return 0;
    }
    fr_type_id id = arg->id;
    if (fn == FR_AGGFN_MIN || fn == FR_AGGFN_MAX) {
        *out = *arg;
    } else if (!fr_type_is_numeric(id)) {
        char tn[64];
        fr_type_format(arg, false, tn, sizeof tn);
        return sql_fail_at(err, FR_ETYPE, pos, "%s needs numbers, not %s",
                           fr_expr_agg_name(fn), tn);
    } else if (id == FR_T_DECIMAL) {
        int scale = fn == FR_AGGFN_AVG && arg->scale < 6 ? 6 : arg->scale;
        *out = fr_type_decimal(FR_DECIMAL_PRECISION_MAX, scale);
    } else if (fn == FR_AGGFN_SUM && fr_type_is_integer(id)) {
        *out = fr_type_of(FR_T_BIGINT);
    } else {
        *out = fr_type_of(FR_T_DOUBLE);
    }
    out->nullable = true;
    return 0;
}

/* ---- the stage -------------------------------------------------------------------------- */

typedef struct agg_cell {
    int64_t n;    /* rows (COUNT(*)) or non-null values seen */
    fr_i128 isum; /* SUM and AVG of integers and decimals */
    double fsum;  /* SUM and AVG of FLOAT and DOUBLE */
    fr_value best; /* MIN, MAX; var-width bytes in `owned` */
    uint8_t *owned;
    size_t owned_cap;
} agg_cell;

typedef struct agg_state {
    sql_agg_spec spec;
    fr_type arg_type; /* the argument's (COUNT(*): unset) */
    fr_type type;     /* the result's */
    agg_cell *cells;  /* one per group */
    gh_table seen;    /* DISTINCT: (group id, value) keys */
} agg_state;

struct sql_grouper {
    const fr_schema *input;
    const fr_schema *output;
    int ngroup;
    agg_state *aggs;
    int naggs;
    gh_table groups;
    int64_t ngroups, cells_cap;
    fr_builder *bld; /* the output: group columns as groups are made, aggregates at the end */
    fr_buf key;      /* scratch */
    int64_t bytes;   /* held apart from the tables: cells and copied bytes */
};

void sql_grouper_free(sql_grouper *g)
{
    if (!g) return;
    for (int a = 0; a < g->naggs; a++) {
        agg_state *s = &g->aggs[a];
        for (int64_t i = 0; s->cells && i < g->ngroups; i++) fr_free(s->cells[i].owned);
        fr_free(s->cells);
        gh_free(&s->seen);
    }
    fr_free(g->aggs);
    gh_free(&g->groups);
    fr_builder_free(g->bld);
    fr_buf_free(&g->key);
    fr_free(g);
}

static int64_t held_bytes(const sql_grouper *g)
{
    int64_t n = g->bytes + gh_bytes(&g->groups);
    for (int a = 0; a < g->naggs; a++) n += gh_bytes(&g->aggs[a].seen);
    return n;
}

static int check_bytes(const sql_grouper *g, fr_error *err)
{
    if (held_bytes(g) <= FR_SQL_GROUP_BYTES_MAX) return 0;
    return fr_fail(err, FR_ELIMIT, "GROUP BY holds at most %lld bytes of groups (%lld groups "
                   "so far): group by fewer values, or filter rows with WHERE",
                   (long long)FR_SQL_GROUP_BYTES_MAX, (long long)g->ngroups);
}

/* Makes room for one more group's cells. */
static int grow_cells(sql_grouper *g, fr_error *err)
{
    if (g->ngroups < g->cells_cap) return 0;
    int64_t cap = g->cells_cap ? g->cells_cap * 2 : 256;
    for (int a = 0; a < g->naggs; a++) {
        agg_cell *c = fr_realloc(g->aggs[a].cells, (size_t)cap * sizeof *c);
        if (!c) return fr_fail(err, FR_ENOMEM, "out of memory grouping rows");
        memset(c + g->cells_cap, 0, (size_t)(cap - g->cells_cap) * sizeof *c);
        g->aggs[a].cells = c;
    }
    g->bytes += (cap - g->cells_cap) * g->naggs * (int64_t)sizeof(agg_cell);
    g->cells_cap = cap;
    return 0;
}

int sql_grouper_new(const fr_schema *input, int ngroup, const sql_agg_spec *aggs, int naggs,
                    const fr_schema *output, sql_grouper **out, fr_error *err)
{
    sql_grouper *g = fr_calloc(1, sizeof *g);
    if (!g || !(g->aggs = fr_calloc((size_t)naggs + 1, sizeof *g->aggs))) {
        fr_free(g);
        return fr_fail(err, FR_ENOMEM, "out of memory grouping rows");
    }
    g->input = input;
    g->output = output;
    g->ngroup = ngroup;
    g->naggs = naggs;
    fr_buf_init(&g->key);
    for (int a = 0; a < naggs; a++) {
        g->aggs[a].spec = aggs[a];
        g->aggs[a].type = fr_schema_field(output, ngroup + a)->type;
        if (aggs[a].arg >= 0) g->aggs[a].arg_type = fr_schema_field(input, aggs[a].arg)->type;
    }
    int rc = fr_builder_new(output, &g->bld, err);
    if (rc == 0 && ngroup == 0) rc = grow_cells(g, err); /* the one group, rows or not */
    if (rc == 0 && ngroup == 0) g->ngroups = 1;
    if (rc < 0) {
        sql_grouper_free(g);
        return rc;
    }
    *out = g;
    return 0;
}

/* The group of row r: found, or made (its values appended to the builder). */
static int group_of(sql_grouper *g, const fr_batch *b, int64_t r, int64_t *id, fr_error *err)
{
    if (g->ngroup == 0) {
        *id = 0;
        return 0;
    }
    fr_buf_reset(&g->key);
    for (int c = 0; c < g->ngroup; c++)
        FR_TRY(sql_key_append(&g->key, fr_batch_column(b, c), r, false, false, err));
    bool added;
    FR_TRY(gh_find_or_add(&g->groups, g->key.data, g->key.len, g->ngroups, id, &added, err));
    if (!added) return 0;
    FR_CHECK(g->ngroups < FR_BATCH_ROWS_MAX, FR_ELIMIT, err,
             "GROUP BY makes at most %d groups", FR_BATCH_ROWS_MAX);
    FR_TRY(grow_cells(g, err));
    for (int c = 0; c < g->ngroup; c++) {
        fr_value v;
        fr_column_get(fr_batch_column(b, c), r, &v);
        FR_TRY(fr_builder_append(g->bld, c, &v, err));
    }
    g->ngroups++;
    return 0;
}

/* Keeps v in the cell as its MIN or MAX when it wins (var-width bytes copied). */
static int keep_best(sql_grouper *g, agg_state *s, agg_cell *cell, const fr_value *v,
                     fr_error *err)
{
    if (cell->n > 0) {
        int cmp = 0;
        if (v->type.id == FR_T_BOOLEAN) /* which fr_value_compare does not order */
            cmp = (int)v->v.b - (int)cell->best.v.b;
        else
            FR_TRY(fr_value_compare(v, &cell->best, &cmp, err));
        if (s->spec.fn == FR_AGGFN_MIN ? cmp >= 0 : cmp <= 0) return 0;
    }
    cell->best = *v;
    if (!fr_type_is_varwidth(&v->type)) return 0;
    size_t n = v->v.s.len;
    if (n > cell->owned_cap) {
        uint8_t *p = fr_realloc(cell->owned, n);
        if (!p) return fr_fail(err, FR_ENOMEM, "out of memory computing %s",
                               fr_expr_agg_name(s->spec.fn));
        g->bytes += (int64_t)(n - cell->owned_cap);
        cell->owned = p;
        cell->owned_cap = n;
    }
    if (n) memcpy(cell->owned, v->v.s.ptr, n);
    cell->best.v.s.ptr = cell->owned;
    return 0;
}

/* Whether the value of row r counts for a DISTINCT aggregate in group id: the first time. */
static int first_seen(sql_grouper *g, agg_state *s, const fr_column *c, int64_t r, int64_t id,
                      bool *first, fr_error *err)
{
    fr_buf_reset(&g->key);
    FR_TRY(fr_buf_append(&g->key, &id, sizeof id, err));
    FR_TRY(sql_key_append(&g->key, c, r, false, false, err));
    int64_t ignored;
    return gh_find_or_add(&s->seen, g->key.data, g->key.len, s->seen.n, &ignored, first, err);
}

/* Folds row r's argument into group id's cell of aggregate s. */
static int fold(sql_grouper *g, agg_state *s, const fr_batch *b, int64_t r, int64_t id,
                fr_error *err)
{
    agg_cell *cell = &s->cells[id];
    if (s->spec.arg < 0) {
        cell->n++;
        return 0;
    }
    const fr_column *c = fr_batch_column(b, s->spec.arg);
    if (fr_column_is_null(c, r)) return 0;
    if (s->spec.distinct) {
        bool first;
        FR_TRY(first_seen(g, s, c, r, id, &first, err));
        if (!first) return 0;
    }
    fr_value v;
    fr_column_get(c, r, &v);
    switch (s->spec.fn) {
    case FR_AGGFN_MIN:
    case FR_AGGFN_MAX: FR_TRY(keep_best(g, s, cell, &v, err)); break;
    case FR_AGGFN_SUM:
    case FR_AGGFN_AVG:
        if (v.type.id == FR_T_FLOAT || v.type.id == FR_T_DOUBLE) cell->fsum += v.v.f;
        else if (v.type.id == FR_T_DECIMAL) cell->isum += v.v.d;
        else cell->isum += v.v.i;
        break;
    default: break;
    }
    cell->n++;
    return 0;
}

int sql_grouper_add(sql_grouper *g, const fr_batch *batch, fr_error *err)
{
    int64_t rows = fr_batch_num_rows(batch);
    for (int64_t r = 0; r < rows; r++) {
        int64_t id;
        FR_TRY(group_of(g, batch, r, &id, err));
        for (int a = 0; a < g->naggs; a++) FR_TRY(fold(g, &g->aggs[a], batch, r, id, err));
    }
    return check_bytes(g, err);
}

/* 10^n as a 128-bit integer, n <= 38. */
static fr_i128 pow10_i128(int n)
{
    fr_i128 p = 1;
    while (n-- > 0) p *= 10;
    return p;
}

/* AVG of a DECIMAL(p, s) cell, in the result's scale, rounded half away from zero. */
static int decimal_avg(const agg_state *s, const agg_cell *cell, fr_i128 *out, fr_error *err)
{
    fr_i128 limit = pow10_i128(FR_DECIMAL_PRECISION_MAX);
    fr_i128 up = pow10_i128(s->type.scale - s->arg_type.scale), sum = cell->isum;
    if (sum >= limit / up || sum <= -limit / up)
        return sql_fail_at(err, FR_ERANGE, s->spec.pos, "AVG: the sum of a group does not "
                           "fit DECIMAL(38, %d)", s->type.scale);
    fr_i128 scaled = sum * up, q = scaled / cell->n, rem = scaled % cell->n;
    if ((rem < 0 ? -rem : rem) * 2 >= cell->n) q += scaled < 0 ? -1 : 1;
    *out = q;
    return 0;
}

/* Appends aggregate s's value of one group's cell to output column col. */
static int emit_cell(sql_grouper *g, const agg_state *s, const agg_cell *cell, int col,
                     fr_error *err)
{
    const char *fn = fr_expr_agg_name(s->spec.fn);
    if (s->spec.fn == FR_AGGFN_COUNT) return fr_builder_append_i64(g->bld, col, cell->n, err);
    if (cell->n == 0) return fr_builder_append_null(g->bld, col, err);
    if (s->spec.fn == FR_AGGFN_MIN || s->spec.fn == FR_AGGFN_MAX)
        return fr_builder_append(g->bld, col, &cell->best, err);
    bool floating = s->arg_type.id == FR_T_FLOAT || s->arg_type.id == FR_T_DOUBLE;
    if (s->spec.fn == FR_AGGFN_AVG && s->arg_type.id == FR_T_DECIMAL) {
        fr_i128 avg = 0;
        FR_TRY(decimal_avg(s, cell, &avg, err));
        return fr_builder_append_i128(g->bld, col, avg, err);
    }
    if (s->spec.fn == FR_AGGFN_AVG)
        return fr_builder_append_f64(g->bld, col, floating ? cell->fsum / (double)cell->n
                                                           : (double)cell->isum / (double)cell->n,
                                     err);
    if (floating) return fr_builder_append_f64(g->bld, col, cell->fsum, err);
    if (s->arg_type.id == FR_T_DECIMAL) {
        fr_i128 limit = pow10_i128(FR_DECIMAL_PRECISION_MAX);
        if (cell->isum >= limit || cell->isum <= -limit)
            return sql_fail_at(err, FR_ERANGE, s->spec.pos, "%s: the sum of a group does not "
                               "fit DECIMAL(38, %d)", fn, s->type.scale);
        return fr_builder_append_i128(g->bld, col, cell->isum, err);
    }
    if (cell->isum > INT64_MAX || cell->isum < INT64_MIN)
        return sql_fail_at(err, FR_ERANGE, s->spec.pos, "%s: the sum of a group does not fit "
                           "BIGINT (cast the argument to DECIMAL(38, 0))", fn);
    return fr_builder_append_i64(g->bld, col, (int64_t)cell->isum, err);
}

int sql_grouper_finish(sql_grouper *g, fr_batch **out, fr_error *err)
{
    for (int a = 0; a < g->naggs; a++)
        for (int64_t i = 0; i < g->ngroups; i++)
            FR_TRY(emit_cell(g, &g->aggs[a], &g->aggs[a].cells[i], g->ngroup + a, err));
    return fr_builder_finish(g->bld, out, err);
}
