/* sql_order.c — ORDER BY: the sort stage between a SELECT's rows and its sink.
 *
 * A sorter owns the batches it was given (or, with a LIMIT, batches gathered from the best
 * rows), one buffer holding a sort key per row it keeps, and an entry per such row that
 * points at the row's key and at the row (batch, row). A sort key is bytes that memcmp
 * orders as ORDER BY wants: per key column a marker byte that places NULLs (0x00 before
 * every value, 0x02 after) or says a value follows (0x01), then the value in the
 * order-preserving key encoding of primary keys (fr_key_encode), its bytes complemented for
 * DESC (the marker is not: NULLS FIRST/LAST means the same in both directions). Each
 * value's encoding is prefix-free and so is its complement, hence so is the concatenation:
 * memcmp decides at the first column whose values differ.
 *
 * Invariants:
 *   - entries[i] refers to batches[entries[i].batch], row entries[i].row, and to the key
 *     bytes keys_buf[key_off, key_off + key_len);
 *   - the order of (batch, row) is the order rows were added in, so ties on the key are
 *     broken by it and the sort is stable (compaction gathers the kept rows, in sorted
 *     order, into batches in front of any added later, which keeps this true);
 *   - with a limit, `bar` (once set) is the key of the limit-th best row kept: a row whose
 *     key is not below it can never be among the first `limit`, and is not kept;
 *   - held bytes (the batches' Arrow buffers, the keys, the entries) stay at most
 *     FR_SQL_SORT_BYTES_MAX after each call that succeeds. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>

#include "sql/sql_int.h"

/* A sort with a limit is cut back to its best `limit` rows when it holds at least twice
 * the limit and this many rows, or when the bytes it holds have doubled since it was last
 * cut back and are at least SORT_COMPACT_BYTES_MIN: each batch added may keep a few rows
 * alive, and with them the whole batch. Doubling makes the cost of compacting amortize. */
#define SORT_COMPACT_ROWS_MIN 4096
#define SORT_COMPACT_BYTES_MIN ((int64_t)64 << 20)
/* The batches a compaction gathers rows into, and those handed to the sink. */
#define SORT_GATHER_ROWS_MAX 65536
#define SORT_GATHER_BYTES_MAX ((int64_t)64 << 20)
#define SORT_EMIT_ROWS_MAX 4096
#define SORT_EMIT_BYTES_MAX ((int64_t)1 << 20)

/* Key markers: where a NULL goes, or that a value follows. */
enum { SORT_NULL_FIRST = 0x00, SORT_VALUE = 0x01, SORT_NULL_LAST = 0x02 };

/* A row kept: its key (head holds the first 8 bytes, big-endian and zero-padded, so that
 * most comparisons end without reading the key) and where the row is. */
typedef struct sort_entry {
    uint64_t head;
    uint64_t key_off; /* in keys_buf */
    uint32_t key_len;
    uint32_t batch;   /* index into batches */
    uint32_t row;
} sort_entry;

struct sql_sorter {
    const fr_schema *schema; /* borrowed */
    fr_schema *visible;      /* the first nvisible columns: the batches emit sends */
    int nvisible;
    sql_sort_key *keys;
    int nkeys;
    int64_t limit; /* -1: none */

    fr_batch **batches;
    uint32_t nbatches, batches_cap;
    int64_t batch_bytes; /* Arrow buffer bytes of batches */
    fr_buf keys_buf;
    sort_entry *entries;
    int64_t nentries, entries_cap;
    fr_buf bar;
    bool has_bar;
    int64_t compact_bytes; /* with a limit: compact once this many bytes are held */
};

/* ---- sizes ------------------------------------------------------------------------------ */

int64_t sql_batch_bytes(const fr_batch *b)
{
    int64_t rows = fr_batch_num_rows(b), bitmap = (rows + 7) / 8, bytes = 0;
    for (int i = 0; i < fr_batch_num_columns(b); i++) {
        const fr_column *c = fr_batch_column(b, i);
        if (c->validity) bytes += bitmap;
        if (fr_type_is_varwidth(&c->type)) {
            bytes += 4 * (rows + 1) + (c->offsets[rows] - c->offsets[0]);
        } else {
            int w = fr_type_width(&c->type);
            bytes += w > 0 ? w * rows : bitmap; /* BOOLEAN values are a bitmap */
        }
    }
    return bytes;
}

static int64_t held_bytes(const sql_sorter *s)
{
    return s->batch_bytes + (int64_t)s->keys_buf.len + s->nentries * (int64_t)sizeof(sort_entry);
}

/* What a value adds to an output batch, near enough to cut batches by size. */
static int64_t value_bytes(const fr_value *v)
{
    if (v->is_null) return 1;
    if (fr_type_is_varwidth(&v->type)) return 4 + (int64_t)v->v.s.len;
    int w = fr_type_width(&v->type);
    return w > 0 ? w : 1;
}

/* ---- keys ------------------------------------------------------------------------------- */

/* The type a key column is encoded as. Every string kind encodes alike, and CHAR(n) and
 * VARCHAR(n) would have each value's length checked again: encode them as STRING. A
 * DECIMAL's precision does not change its encoding, only which values fr_key_encode takes:
 * take every value a DECIMAL can hold. */
static fr_type key_type_of(const fr_type *t)
{
    fr_type k = *t;
    if (fr_type_is_string(k.id)) k = fr_type_of(FR_T_STRING);
    if (k.id == FR_T_DECIMAL) k.precision = FR_DECIMAL_PRECISION_MAX;
    k.nullable = false;
    return k;
}

static uint64_t key_head(const uint8_t *p, size_t n)
{
    uint64_t h = 0;
    for (size_t i = 0; i < 8; i++) h = (h << 8) | (i < n ? p[i] : 0);
    return h;
}

/* memcmp order, the shorter first on a common prefix (which prefix-free keys never share). */
static int key_cmp(const uint8_t *a, size_t na, const uint8_t *b, size_t nb)
{
    size_t n = na < nb ? na : nb;
    int c = n ? memcmp(a, b, n) : 0;
    if (c != 0) return c;
    return (na > nb) - (na < nb);
}

static int entry_cmp(const void *pa, const void *pb, void *ctx)
{
    const sort_entry *a = pa, *b = pb;
    const uint8_t *keys = ctx;
    if (a->head != b->head) return a->head < b->head ? -1 : 1;
    /* Equal heads of keys of at most 8 bytes are equal keys (being prefix-free, neither is
     * the other padded with zeros): no need to read the keys. */
    if (a->key_len > 8 || b->key_len > 8) {
        int c = key_cmp(keys + a->key_off, a->key_len, keys + b->key_off, b->key_len);
        if (c != 0) return c;
    }
    if (a->batch != b->batch) return a->batch < b->batch ? -1 : 1;
    return (a->row > b->row) - (a->row < b->row);
}

static void sort_entries(sql_sorter *s)
{
    if (s->nentries > 1)
        qsort_r(s->entries, (size_t)s->nentries, sizeof *s->entries, entry_cmp, s->keys_buf.data);
}

int sql_key_append(fr_buf *out, const fr_column *c, int64_t row, bool desc, bool nulls_first,
                   fr_error *err)
{
    fr_value v;
    fr_column_get(c, row, &v);
    uint8_t marker = v.is_null ? (nulls_first ? SORT_NULL_FIRST : SORT_NULL_LAST) : SORT_VALUE;
    FR_TRY(fr_buf_append(out, &marker, 1, err));
    if (v.is_null) return 0;
    size_t at = out->len;
    fr_type t = key_type_of(&c->type);
    v.type = t;
    int rc = fr_key_encode(&t, &v, 1, out, err);
    if (rc == FR_ELIMIT)
        return fr_fail(err, rc, "a value is longer than the %d bytes a sort or group key may "
                       "hold", FR_KEY_BYTES_MAX);
    FR_TRY(rc);
    if (desc)
        for (size_t i = at; i < out->len; i++) out->data[i] = (uint8_t)~out->data[i];
    return 0;
}

/* Appends the sort key of one row to keys_buf. On failure keys_buf may hold part of it. */
static int encode_key(sql_sorter *s, const fr_batch *b, int64_t row, fr_error *err)
{
    for (int k = 0; k < s->nkeys; k++) {
        const sql_sort_key *key = &s->keys[k];
        int rc = sql_key_append(&s->keys_buf, fr_batch_column(b, key->column), row, key->desc,
                                key->nulls_first, err);
        if (rc < 0) {
            fr_error_wrap(err, "ORDER BY %s", fr_schema_field(s->schema, key->column)->name);
            return rc;
        }
    }
    return 0;
}

/* ---- gathering rows --------------------------------------------------------------------- */

/* Builds one batch of bld's schema from the first ncols columns of the rows of e[0..n), in
 * that order, stopping once the batch holds about bytes_max bytes. *used: the rows taken. */
static int gather(const sql_sorter *s, fr_builder *bld, int ncols, const sort_entry *e,
                  int64_t n, int64_t bytes_max, int64_t *used, fr_batch **out, fr_error *err)
{
    int64_t bytes = 0, i = 0;
    for (; i < n && bytes < bytes_max; i++) {
        const fr_batch *b = s->batches[e[i].batch];
        for (int c = 0; c < ncols; c++) {
            fr_value v;
            fr_column_get(fr_batch_column(b, c), e[i].row, &v);
            FR_TRY(fr_builder_append(bld, c, &v, err));
            bytes += value_bytes(&v);
        }
    }
    *used = i;
    return fr_builder_finish(bld, out, err);
}

static void free_batches(fr_batch **batches, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) fr_batch_free(batches[i]);
    fr_free(batches);
}

/* Gathers the first keep rows of the sorted entries into new batches of every column. */
static int gather_kept(sql_sorter *s, int64_t keep, fr_batch ***out, uint32_t *nout,
                       fr_error *err)
{
    int64_t cap = keep / SORT_GATHER_ROWS_MAX + 1;
    fr_batch **batches = fr_calloc((size_t)cap, sizeof *batches);
    fr_builder *bld = NULL;
    uint32_t n = 0;
    int rc = 0;
    if (!batches) {
        rc = fr_fail(err, FR_ENOMEM, "out of memory sorting rows");
        goto fail;
    }
    FR_GOTO(fr_builder_new(s->schema, &bld, err));
    for (int64_t at = 0, used; at < keep; at += used) {
        int64_t rows = keep - at < SORT_GATHER_ROWS_MAX ? keep - at : SORT_GATHER_ROWS_MAX;
        if ((int64_t)n == cap) { /* batches cut short by bytes: more of them */
            fr_batch **more = fr_realloc(batches, (size_t)(2 * cap) * sizeof *batches);
            if (!more) {
                rc = fr_fail(err, FR_ENOMEM, "out of memory sorting rows");
                goto fail;
            }
            batches = more;
            cap *= 2;
        }
        FR_GOTO(gather(s, bld, fr_schema_num_fields(s->schema), s->entries + at, rows,
                       SORT_GATHER_BYTES_MAX, &used, &batches[n], err));
        n++;
    }
    fr_builder_free(bld);
    *out = batches;
    *nout = n;
    return 0;
fail:
    fr_builder_free(bld);
    free_batches(batches, n);
    return rc;
}

/* ---- compaction ------------------------------------------------------------------------- */

/* With a limit: sorts, keeps the best `limit` rows in batches of their own, frees the rest
 * and sets the bar. Builds everything new before touching the sorter, so that a failure
 * leaves it as it was (but sorted). */
static int compact(sql_sorter *s, fr_error *err)
{
    assert(s->limit > 0 && s->nentries >= s->limit);
    sort_entries(s);
    int64_t keep = s->limit;
    fr_batch **batches = NULL;
    uint32_t nbatches = 0;
    fr_buf keys, bar;
    fr_buf_init(&keys);
    fr_buf_init(&bar);
    int rc = 0;
    FR_GOTO(gather_kept(s, keep, &batches, &nbatches, err));
    size_t key_bytes = 0;
    for (int64_t i = 0; i < keep; i++) key_bytes += s->entries[i].key_len;
    FR_GOTO(fr_buf_reserve(&keys, key_bytes ? key_bytes : 1, err));
    const sort_entry *worst = &s->entries[keep - 1];
    FR_GOTO(fr_buf_append(&bar, s->keys_buf.data + worst->key_off, worst->key_len, err));

    /* Nothing fails from here on. */
    uint32_t i = 0, row = 0;
    for (int64_t at = 0; at < keep; at++, row++) {
        sort_entry *e = &s->entries[at];
        if (row == (uint32_t)fr_batch_num_rows(batches[i])) i++, row = 0;
        if (e->key_len) memcpy(keys.data + keys.len, s->keys_buf.data + e->key_off, e->key_len);
        e->key_off = keys.len;
        e->batch = i;
        e->row = row;
        keys.len += e->key_len;
    }
    int64_t bytes = 0;
    for (uint32_t b = 0; b < nbatches; b++) bytes += sql_batch_bytes(batches[b]);
    free_batches(s->batches, s->nbatches);
    s->batches = batches;
    s->nbatches = s->batches_cap = nbatches;
    s->batch_bytes = bytes;
    s->nentries = keep;
    fr_buf_free(&s->keys_buf);
    s->keys_buf = keys;
    fr_buf_free(&s->bar);
    s->bar = bar;
    s->has_bar = true;
    s->compact_bytes = 2 * held_bytes(s);
    if (s->compact_bytes < SORT_COMPACT_BYTES_MIN) s->compact_bytes = SORT_COMPACT_BYTES_MIN;
    return 0;
fail:
    free_batches(batches, nbatches);
    fr_buf_free(&keys);
    fr_buf_free(&bar);
    return rc;
}

/* After an add: cuts a limited sort back to its best rows when it holds many, and checks
 * the bytes held. */
static int settle(sql_sorter *s, fr_error *err)
{
    if (s->limit >= 0 && s->nentries > s->limit) {
        int64_t rows = s->limit > INT64_MAX / 2 ? INT64_MAX : 2 * s->limit;
        if (rows < SORT_COMPACT_ROWS_MIN) rows = SORT_COMPACT_ROWS_MIN;
        int64_t held = held_bytes(s);
        if (s->nentries >= rows || held >= s->compact_bytes || held > FR_SQL_SORT_BYTES_MAX)
            FR_TRY(compact(s, err));
    }
    if (held_bytes(s) <= FR_SQL_SORT_BYTES_MAX) return 0;
    if (s->limit < 0)
        return fr_fail(err, FR_ELIMIT, "ORDER BY holds at most %lld bytes of rows: add a "
                       "LIMIT, or select fewer columns or rows",
                       (long long)FR_SQL_SORT_BYTES_MAX);
    return fr_fail(err, FR_ELIMIT, "ORDER BY ... LIMIT %lld: the best %lld rows take more "
                   "than the %lld bytes a sort may hold: lower the LIMIT, or select fewer "
                   "columns", (long long)s->limit, (long long)s->limit,
                   (long long)FR_SQL_SORT_BYTES_MAX);
}

/* ---- the interface ---------------------------------------------------------------------- */

int sql_sorter_new(const fr_schema *schema, const sql_sort_key *keys, int nkeys, int64_t limit,
                   int nvisible, sql_sorter **out, fr_error *err)
{
    assert(nkeys >= 0 && limit >= -1 && nvisible >= 1);
    assert(nvisible <= fr_schema_num_fields(schema));
    sql_sorter *s = fr_calloc(1, sizeof *s);
    int *cols = fr_calloc((size_t)nvisible, sizeof *cols);
    int rc = 0;
    if (!s || !cols) {
        rc = fr_fail(err, FR_ENOMEM, "out of memory starting a sort");
        goto fail;
    }
    s->schema = schema;
    s->nvisible = nvisible;
    s->nkeys = nkeys;
    s->limit = limit;
    s->compact_bytes = SORT_COMPACT_BYTES_MIN;
    fr_buf_init(&s->keys_buf);
    fr_buf_init(&s->bar);
    /* Key pointers are keys_buf.data plus an offset, so data must not be NULL even when
     * every key is empty (a sort without keys). */
    FR_GOTO(fr_buf_reserve(&s->keys_buf, 1, err));
    s->keys = fr_calloc(nkeys ? (size_t)nkeys : 1, sizeof *s->keys);
    if (!s->keys) {
        rc = fr_fail(err, FR_ENOMEM, "out of memory starting a sort");
        goto fail;
    }
    for (int k = 0; k < nkeys; k++) {
        assert(keys[k].column >= 0 && keys[k].column < fr_schema_num_fields(schema));
        s->keys[k] = keys[k];
    }
    for (int i = 0; i < nvisible; i++) cols[i] = i;
    FR_GOTO(fr_schema_project(schema, cols, nvisible, &s->visible, err));
    fr_free(cols);
    *out = s;
    return 0;
fail:
    fr_free(cols);
    sql_sorter_free(s);
    return rc;
}

/* Room for one more batch and `rows` more entries. */
static int reserve(sql_sorter *s, int64_t rows, fr_error *err)
{
    if (s->nbatches == s->batches_cap) {
        uint32_t cap = s->batches_cap ? 2 * s->batches_cap : 16;
        fr_batch **b = fr_realloc(s->batches, (size_t)cap * sizeof *b);
        FR_CHECK(b, FR_ENOMEM, err, "out of memory sorting rows");
        s->batches = b;
        s->batches_cap = cap;
    }
    if (s->nentries + rows > s->entries_cap) {
        int64_t cap = s->entries_cap ? 2 * s->entries_cap : 1024;
        while (cap < s->nentries + rows) cap *= 2;
        sort_entry *e = fr_realloc(s->entries, (size_t)cap * sizeof *e);
        FR_CHECK(e, FR_ENOMEM, err, "out of memory sorting rows");
        s->entries = e;
        s->entries_cap = cap;
    }
    return 0;
}

int sql_sorter_add(sql_sorter *s, fr_batch *batch, fr_error *err)
{
    int64_t rows = fr_batch_num_rows(batch);
    size_t keys_start = s->keys_buf.len;
    int64_t entries_start = s->nentries;
    int rc = 0;
    assert(fr_batch_num_columns(batch) == fr_schema_num_fields(s->schema));
    if (s->limit == 0 || rows == 0) {
        fr_batch_free(batch);
        return 0;
    }
    FR_GOTO(reserve(s, rows, err));
    for (int64_t row = 0; row < rows; row++) {
        size_t at = s->keys_buf.len;
        FR_GOTO(encode_key(s, batch, row, err));
        const uint8_t *key = s->keys_buf.data + at;
        size_t len = s->keys_buf.len - at;
        if (s->has_bar && key_cmp(key, len, s->bar.data, s->bar.len) >= 0) {
            s->keys_buf.len = at; /* not among the best: a later row loses a tie */
            continue;
        }
        s->entries[s->nentries++] = (sort_entry){.head = key_head(key, len), .key_off = at,
                                                 .key_len = (uint32_t)len,
                                                 .batch = s->nbatches, .row = (uint32_t)row};
    }
    if (s->nentries == entries_start) {
        fr_batch_free(batch);
        return 0;
    }
    s->batches[s->nbatches++] = batch;
    s->batch_bytes += sql_batch_bytes(batch);
    return settle(s, err);
fail:
    /* Drop this batch's rows, so that the sorter stays whole. */
    s->keys_buf.len = keys_start;
    s->nentries = entries_start;
    fr_batch_free(batch);
    return rc;
}

int sql_sorter_emit(sql_sorter *s, const fr_sql_sink *sink, fr_error *err)
{
    sort_entries(s);
    int64_t n = s->limit >= 0 && s->limit < s->nentries ? s->limit : s->nentries;
    fr_builder *bld = NULL;
    int rc = 0;
    FR_GOTO(fr_builder_new(s->visible, &bld, err));
    for (int64_t at = 0, used; at < n && rc == 0; at += used) {
        int64_t rows = n - at < SORT_EMIT_ROWS_MAX ? n - at : SORT_EMIT_ROWS_MAX;
        fr_batch *out;
        FR_GOTO(gather(s, bld, s->nvisible, s->entries + at, rows, SORT_EMIT_BYTES_MAX, &used,
                       &out, err));
        rc = sql_sink_rows(sink, out, err);
    }
fail:
    fr_builder_free(bld);
    return rc;
}

void sql_sorter_free(sql_sorter *s)
{
    if (!s) return;
    fr_schema_free(s->visible);
    fr_free(s->keys);
    free_batches(s->batches, s->nbatches);
    fr_buf_free(&s->keys_buf);
    fr_free(s->entries);
    fr_buf_free(&s->bar);
    fr_free(s);
}
