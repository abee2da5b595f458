/* kv_cols.c — column buffers filled row by row from decoded values, for the two places
 * where the store turns rows into a batch in bulk: the rows a lookup found and the
 * changelog of a write. Every value there already has its column's type (decoded from a
 * stored row of the schema, taken from a write checked against it, or encoded with
 * fr_row_encode, which checks it), so each cell is stored as its physical form straight into
 * the buffers, without the builder's per-cell conversion and checks; a value of another
 * type (an aggregate computed in a wider form) goes through fr_value_cast first.
 *
 * Invariants: every column holds `rows` cells; var-width offsets start at 0 and stay within
 * INT32_MAX bytes; validity bits are kept for every row (all set until a NULL comes), and
 * handed over only for columns that have a NULL. */
#include "kv/kv_int.h"

#define KV_COLS_FIRST_ROWS 64

static void col_free(kv_col *c)
{
    fr_free(c->validity);
    fr_free(c->offsets);
    fr_free(c->values);
    c->validity = c->values = NULL;
    c->offsets = NULL;
    c->vlen = c->vcap = 0;
    c->nulls = 0;
}

void kv_cols_free(kv_cols *k)
{
    for (int i = 0; k->cols && i < k->ncols; i++) col_free(&k->cols[i]);
    fr_free(k->cols);
    if (k->arena) fr_arena_free(k->arena);
    memset(k, 0, sizeof *k);
}

int kv_cols_init(kv_cols *k, const fr_schema *schema, fr_error *err)
{
    memset(k, 0, sizeof *k);
    k->schema = schema;
    k->ncols = fr_schema_num_fields(schema);
    k->cols = fr_calloc((size_t)k->ncols + 1, sizeof *k->cols);
    FR_CHECK(k->cols, FR_ENOMEM, err, "out of memory for %d columns", k->ncols);
    for (int i = 0; i < k->ncols; i++) {
        const fr_type *t = &fr_schema_field(schema, i)->type;
        k->cols[i].type = *t;
        k->cols[i].width = fr_type_width(t);
        k->cols[i].var = fr_type_is_varwidth(t);
    }
    return FR_OK;
}

static int grow(void *pp, size_t *cap, size_t need, fr_error *err)
{
    uint8_t **p = pp;
    if (need <= *cap) return FR_OK;
    size_t ncap = *cap ? *cap * 2 : 256;
    if (ncap < need) ncap = need;
    uint8_t *n = fr_realloc(*p, ncap);
    FR_CHECK(n, FR_ENOMEM, err, "out of memory for %zu bytes of a column", ncap);
    *p = n;
    *cap = ncap;
    return FR_OK;
}

/* Room for ncap rows in every column's validity, offsets and fixed values. */
static int grow_rows(kv_cols *k, int64_t ncap, fr_error *err)
{
    FR_CHECK(ncap <= FR_BATCH_ROWS_MAX, FR_ELIMIT, err, "a batch holds at most %d rows",
             FR_BATCH_ROWS_MAX);
    for (int i = 0; i < k->ncols; i++) {
        kv_col *c = &k->cols[i];
        uint8_t *v = fr_realloc(c->validity, (size_t)(ncap + 7) / 8);
        FR_CHECK(v, FR_ENOMEM, err, "out of memory for %lld rows", (long long)ncap);
        memset(v + (k->cap + 7) / 8, 0xff, (size_t)((ncap + 7) / 8 - (k->cap + 7) / 8));
        c->validity = v;
        if (c->var) {
            int32_t *o = fr_realloc(c->offsets, (size_t)(ncap + 1) * sizeof *o);
            FR_CHECK(o, FR_ENOMEM, err, "out of memory for %lld rows", (long long)ncap);
            if (k->cap == 0) o[0] = 0;
            c->offsets = o;
        } else {
            size_t bytes = c->width ? (size_t)ncap * (size_t)c->width : (size_t)(ncap + 7) / 8;
            uint8_t *x = fr_realloc(c->values, bytes);
            FR_CHECK(x, FR_ENOMEM, err, "out of memory for %lld rows", (long long)ncap);
            c->values = x;
            c->vcap = bytes;
        }
    }
    k->cap = ncap;
    return FR_OK;
}

static int reserve_row(kv_cols *k, fr_error *err)
{
    if (k->rows < k->cap) return FR_OK;
    return grow_rows(k, k->cap ? k->cap * 2 : KV_COLS_FIRST_ROWS, err);
}

int kv_cols_reserve(kv_cols *k, int64_t rows, fr_error *err)
{
    if (rows > FR_BATCH_ROWS_MAX) rows = FR_BATCH_ROWS_MAX;
    k->hint = rows;
    return rows > k->cap ? grow_rows(k, rows, err) : FR_OK;
}

/* A value of the column's physical form: v itself, or v cast into the arena. */
static int physical(kv_cols *k, const kv_col *c, const fr_value *v, fr_value *tmp,
                    const fr_value **out, fr_error *err)
{
    if (fr_type_equal(&v->type, &c->type) ||
        (c->type.id == FR_T_STRING && fr_type_is_string(v->type.id))) {
        *out = v;
        return FR_OK;
    }
    if (!k->arena) {
        k->arena = fr_arena_new(4096);
        FR_CHECK(k->arena, FR_ENOMEM, err, "out of memory");
    }
    FR_TRY(fr_value_cast(v, &c->type, k->arena, tmp, err));
    *out = tmp;
    return FR_OK;
}

static void put_fixed(kv_col *c, int64_t row, const fr_value *v)
{
    uint8_t *p = c->values + (size_t)row * (size_t)c->width;
    switch (c->type.id) {
    case FR_T_FLOAT: {
        float f = (float)v->v.f;
        memcpy(p, &f, 4);
        return;
    }
    case FR_T_DOUBLE: memcpy(p, &v->v.f, 8); return;
    case FR_T_DECIMAL: memcpy(p, &v->v.d, 16); return;
    default: break;
    }
    uint64_t u = (uint64_t)v->v.i;
    switch (c->width) {
    case 1: p[0] = (uint8_t)u; return;
    case 2: fr_put_u16le(p, (uint16_t)u); return;
    case 4: fr_put_u32le(p, (uint32_t)u); return;
    default: fr_put_u64le(p, u); return;
    }
}

static int put_cell(kv_cols *k, kv_col *c, int64_t row, const fr_value *v, fr_error *err)
{
    if (v->is_null) {
        FR_CHECK(c->type.nullable, FR_EINVAL, err, "NULL in NOT NULL column %s",
                 fr_schema_field(k->schema, (int)(c - k->cols))->name);
        c->validity[row >> 3] &= (uint8_t)~(1u << (row & 7));
        c->nulls++;
        if (c->var) c->offsets[row + 1] = (int32_t)c->vlen;
        else if (c->width) memset(c->values + (size_t)row * (size_t)c->width, 0, (size_t)c->width);
        else c->values[row >> 3] &= (uint8_t)~(1u << (row & 7));
        return FR_OK;
    }
    fr_value tmp;
    const fr_value *x = v;
    FR_TRY(physical(k, c, v, &tmp, &x, err));
    if (c->var) {
        size_t n = x->v.s.len;
        FR_CHECK(n <= (size_t)INT32_MAX - c->vlen, FR_ELIMIT, err,
                 "a batch holds at most %d bytes of strings per column", INT32_MAX);
        /* The first value says how long the others may be: room for the rows expected. */
        size_t need = c->vlen + n;
        if (c->vcap == 0 && k->hint > row && n <= (size_t)INT32_MAX / (size_t)k->hint)
            need = n * (size_t)(k->hint - row) + n / 4 * (size_t)(k->hint - row);
        if (need < c->vlen + n) need = c->vlen + n;
        FR_TRY(grow(&c->values, &c->vcap, need, err));
        if (n) memcpy(c->values + c->vlen, x->v.s.ptr, n);
        c->vlen += n;
        c->offsets[row + 1] = (int32_t)c->vlen;
    } else if (c->width) {
        put_fixed(c, row, x);
    } else if (x->v.b) {
        c->values[row >> 3] |= (uint8_t)(1u << (row & 7));
    } else {
        c->values[row >> 3] &= (uint8_t)~(1u << (row & 7));
    }
    return FR_OK;
}

int kv_cols_append(kv_cols *k, const fr_value *row, fr_error *err)
{
    FR_TRY(reserve_row(k, err));
    for (int i = 0; i < k->ncols; i++) {
        int rc = put_cell(k, &k->cols[i], k->rows, &row[i], err);
        if (rc < 0) {
            /* Undo the cells of this row already stored: their nulls and string bytes. */
            for (int j = 0; j < i; j++) {
                kv_col *c = &k->cols[j];
                if (row[j].is_null) c->nulls--;
                c->validity[k->rows >> 3] |= (uint8_t)(1u << (k->rows & 7));
                if (c->var) c->vlen = (size_t)c->offsets[k->rows];
            }
            return rc;
        }
    }
    k->rows++;
    return FR_OK;
}

int kv_cols_finish(kv_cols *k, fr_batch **out, fr_error *err)
{
    *out = NULL;
    uint8_t **bufs = fr_calloc((size_t)k->ncols * 3 + 1, sizeof *bufs);
    int64_t *nulls = fr_calloc((size_t)k->ncols + 1, sizeof *nulls);
    if (!bufs || !nulls) {
        fr_free(bufs);
        fr_free(nulls);
        return fr_fail(err, FR_ENOMEM, "out of memory finishing a batch");
    }
    for (int i = 0; i < k->ncols; i++) {
        kv_col *c = &k->cols[i];
        nulls[i] = c->nulls;
        if (c->nulls > 0) bufs[3 * i] = c->validity;
        else fr_free(c->validity);
        bufs[3 * i + 1] = (uint8_t *)c->offsets;
        bufs[3 * i + 2] = c->values;
        if (c->var && !c->values && k->rows > 0) bufs[3 * i + 2] = fr_malloc(1); /* no bytes */
        c->validity = c->values = NULL;
        c->offsets = NULL;
        c->vlen = c->vcap = 0;
        c->nulls = 0;
    }
    int64_t rows = k->rows;
    k->rows = k->cap = k->hint = 0;
    int rc = fr_batch_from_buffers(k->schema, rows, bufs, nulls, out, err);
    fr_free(bufs);
    fr_free(nulls);
    return rc;
}
