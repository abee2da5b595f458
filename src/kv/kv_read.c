/* kv_read.c — reads of a bucket's state: point lookups, prefix lookups and full scans.
 *
 * Every read works on one RocksDB snapshot, so it sees the state as of the last completed
 * write and never a write half applied, and takes no lock of the store: writes go on
 * beside it. Rows are decoded from their stored form and gathered into Arrow batches (a
 * point lookup's straight into column buffers); scans filter them with the caller's
 * predicate and project them. */
#include "kv/kv_int.h"

/* Bytes of the next stored row a lookup asks the cache for while it decodes one. */
#define KV_PREFETCH_BYTES 2048

/* Where decoded rows go: a builder, flushed as a batch to the callback every batch_rows. */
typedef struct kv_sink {
    fr_kv *kv;
    const int *columns;
    int ncolumns;
    const fr_expr *filter;
    int64_t batch_rows;
    bool full;          /* the builder holds every column (a filter needs them) */
    fr_schema *proj;    /* the projected schema, when !full and columns are given */
    fr_builder *bld;
    fr_value *values;
    fr_kv_rows_fn fn;
    void *ctx;
    bool stopped;
} kv_sink;

static int sink_init(kv_sink *s, fr_kv *kv, const int *columns, int ncolumns,
                     const fr_expr *filter, int64_t batch_rows, fr_kv_rows_fn fn, void *ctx,
                     fr_error *err)
{
    memset(s, 0, sizeof *s);
    *s = (kv_sink){ .kv = kv, .columns = columns, .ncolumns = columns ? ncolumns : 0,
                    .filter = filter, .fn = fn, .ctx = ctx,
                    .batch_rows = batch_rows > 0 ? batch_rows : KV_BATCH_ROWS_DEFAULT };
    if (s->batch_rows > FR_BATCH_ROWS_MAX) s->batch_rows = FR_BATCH_ROWS_MAX;
    FR_CHECK(!columns || ncolumns >= 1, FR_EINVAL, err, "%s: a projection needs columns",
             kv->name);
    for (int i = 0; i < s->ncolumns; i++)
        FR_CHECK(columns[i] >= 0 && columns[i] < kv->ncols, FR_EINVAL, err,
                 "%s: projected column %d is out of range", kv->name, columns[i]);
    s->values = fr_calloc((size_t)kv->ncols, sizeof *s->values);
    if (!s->values) return fr_fail(err, FR_ENOMEM, "%s: out of memory for a read", kv->name);
    s->full = filter || !columns;
    if (!s->full) FR_TRY(fr_schema_project(kv->schema, columns, ncolumns, &s->proj, err));
    return fr_builder_new(s->full ? kv->schema : s->proj, &s->bld, err);
}

static void sink_free(kv_sink *s)
{
    fr_builder_free(s->bld);
    if (s->proj) fr_schema_free(s->proj);
    fr_free(s->values);
}

/* Filters and projects a full batch; *out may have no rows. Takes b. */
static int sink_shape(kv_sink *s, fr_batch *b, fr_batch **out, fr_error *err)
{
    int rc = FR_OK;
    if (s->filter) {
        int64_t rows = fr_batch_num_rows(b);
        uint8_t *keep = fr_calloc((size_t)(rows + 7) / 8 + 1, 1);
        int64_t kept = 0;
        fr_batch *f = NULL;
        rc = keep ? fr_expr_filter(s->filter, b, keep, &kept, err)
                  : fr_fail(err, FR_ENOMEM, "%s: out of memory for a filter", s->kv->name);
        if (rc == FR_OK && kept < rows) rc = fr_batch_filter(b, keep, &f, err);
        fr_free(keep);
        if (f) {
            fr_batch_free(b);
            b = f;
        }
    }
    if (rc == FR_OK && s->filter && s->columns) {
        fr_batch *p = NULL;
        rc = fr_batch_project(b, s->columns, s->ncolumns, &p, err);
        if (rc == FR_OK) {
            fr_batch_free(b);
            b = p;
        }
    }
    if (rc < 0) {
        fr_batch_free(b);
        return rc;
    }
    *out = b;
    return FR_OK;
}

/* Hands the rows gathered so far to the callback. */
static int sink_flush(kv_sink *s, fr_error *err)
{
    if (s->stopped || fr_builder_num_rows(s->bld) == 0) return FR_OK;
    fr_batch *b = NULL;
    FR_TRY(fr_builder_finish(s->bld, &b, err));
    FR_TRY(sink_shape(s, b, &b, err));
    if (fr_batch_num_rows(b) == 0) {
        fr_batch_free(b);
        return FR_OK;
    }
    int rc = s->fn(s->ctx, b, err);
    if (rc < 0) return rc;
    if (rc > 0) s->stopped = true;
    return FR_OK;
}

/* Appends the cells of a decoded row (s->values) that the builder holds. */
static int sink_append_values(kv_sink *s, fr_builder *bld, bool full, fr_error *err)
{
    int n = full ? s->kv->ncols : s->ncolumns;
    for (int j = 0; j < n; j++) {
        int c = full ? j : s->columns[j];
        FR_TRY(fr_builder_append(bld, j, &s->values[c], err));
    }
    return FR_OK;
}

static int sink_add(kv_sink *s, const uint8_t *val, size_t vlen, fr_error *err)
{
    FR_TRY(kv_row_decode(s->kv, val, vlen, s->values, err));
    FR_TRY(sink_append_values(s, s->bld, s->full, err));
    if (fr_builder_num_rows(s->bld) >= s->batch_rows) return sink_flush(s, err);
    return FR_OK;
}

/* Walks the data keys from `from` while they start with `prefix` (or up to the end of the
 * data keys), feeding the sink. */
static int kv_iterate(fr_kv *kv, const uint8_t *prefix, size_t plen, kv_sink *s,
                      fr_error *err)
{
    const rocksdb_snapshot_t *snap = rocksdb_create_snapshot(kv->db);
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    rocksdb_readoptions_set_snapshot(ro, snap);
    static const char upper = KV_DATA_PREFIX + 1;
    rocksdb_readoptions_set_iterate_upper_bound(ro, &upper, 1);
    rocksdb_iterator_t *it = rocksdb_create_iterator(kv->db, ro);
    int rc = FR_OK;
    for (rocksdb_iter_seek(it, (const char *)prefix, plen); rc == FR_OK && !s->stopped &&
                                                            rocksdb_iter_valid(it);
         rocksdb_iter_next(it)) {
        size_t klen, vlen;
        const char *k = rocksdb_iter_key(it, &klen);
        if (klen < plen || memcmp(k, prefix, plen) != 0) break;
        const char *v = rocksdb_iter_value(it, &vlen);
        rc = sink_add(s, (const uint8_t *)v, vlen, err);
    }
    if (rc == FR_OK) {
        char *errptr = NULL;
        rocksdb_iter_get_error(it, &errptr);
        if (errptr) rc = kv_rocks_fail(kv, errptr, "iteration", err);
    }
    if (rc == FR_OK) rc = sink_flush(s, err);
    rocksdb_iter_destroy(it);
    rocksdb_readoptions_destroy(ro);
    rocksdb_release_snapshot(kv->db, snap);
    return rc;
}

int fr_kv_scan(fr_kv *kv, const int *columns, int ncolumns, const fr_expr *filter,
               int64_t batch_rows, fr_kv_rows_fn fn, void *ctx, fr_error *err)
{
    kv_sink s;
    int rc = sink_init(&s, kv, columns, ncolumns, filter, batch_rows, fn, ctx, err);
    if (rc == FR_OK) {
        uint8_t prefix = KV_DATA_PREFIX;
        rc = kv_iterate(kv, &prefix, 1, &s, err);
    }
    sink_free(&s);
    return rc;
}

/* Key values given by a caller, cast to the key columns' types where they differ. */
static int kv_cast_key(fr_kv *kv, const fr_value *in, int n, fr_arena *arena, fr_value *out,
                       fr_error *err)
{
    for (int i = 0; i < n; i++) {
        if (in[i].is_null || fr_type_equal(&in[i].type, &kv->pk_types[i])) {
            out[i] = in[i];
            out[i].type = kv->pk_types[i];
            continue;
        }
        int rc = fr_value_cast(&in[i], &kv->pk_types[i], arena, &out[i], err);
        if (rc < 0)
            return fr_error_wrap(err, "%s: key column %s", kv->name,
                                 fr_schema_field(kv->schema, kv->pk[i])->name);
    }
    return FR_OK;
}

static bool kv_any_null(const fr_value *v, int n)
{
    for (int i = 0; i < n; i++)
        if (v[i].is_null) return true;
    return false;
}

int fr_kv_prefix_lookup(fr_kv *kv, const fr_value *prefix, int nprefix, const int *columns,
                        int ncolumns, fr_kv_rows_fn fn, void *ctx, fr_error *err)
{
    FR_CHECK(nprefix >= 1 && nprefix <= kv->npk, FR_EINVAL, err,
             "%s: a prefix lookup takes 1..%d key values, not %d", kv->name, kv->npk, nprefix);
    if (kv_any_null(prefix, nprefix)) return FR_OK; /* a NULL matches no key */
    kv_sink s;
    fr_buf key;
    fr_buf_init(&key);
    fr_arena *arena = fr_arena_new(4096);
    fr_value *vals = fr_calloc((size_t)nprefix, sizeof *vals);
    int rc = arena && vals ? FR_OK : fr_fail(err, FR_ENOMEM, "%s: out of memory", kv->name);
    if (rc == FR_OK) rc = sink_init(&s, kv, columns, ncolumns, NULL, 0, fn, ctx, err);
    else memset(&s, 0, sizeof s);
    if (rc == FR_OK) rc = kv_cast_key(kv, prefix, nprefix, arena, vals, err);
    if (rc == FR_OK) rc = kv_key_of_values(kv, vals, nprefix, &key, err);
    if (rc == FR_OK) rc = kv_iterate(kv, key.data, key.len, &s, err);
    sink_free(&s);
    fr_free(vals);
    if (arena) fr_arena_free(arena);
    fr_buf_free(&key);
    return rc;
}

/* The keys of a lookup: each row's encoded key (or none for a key with a NULL), and the
 * rows that have one sorted by key for the batched MultiGet. */
typedef struct kv_keyset {
    fr_buf bytes;     /* the encoded keys, one after another */
    size_t *at;       /* per row: offset in bytes, or SIZE_MAX for no key */
    size_t *len;      /* per row */
    int64_t *order;   /* the rows with a key, sorted by key */
    int64_t nordered;
} kv_keyset;

static void keyset_free(kv_keyset *ks)
{
    fr_buf_free(&ks->bytes);
    fr_free(ks->at);
    fr_free(ks->len);
    fr_free(ks->order);
}

static int keyset_cmp(const kv_keyset *ks, int64_t a, int64_t b)
{
    size_t la = ks->len[a], lb = ks->len[b];
    int c = memcmp(ks->bytes.data + ks->at[a], ks->bytes.data + ks->at[b], la < lb ? la : lb);
    if (c != 0) return c;
    return la < lb ? -1 : la > lb;
}

/* qsort has no context argument in C17: a small merge sort of row numbers by key. */
static void keyset_sort(const kv_keyset *ks, int64_t *v, int64_t *tmp, int64_t n)
{
    if (n < 2) return;
    int64_t h = n / 2;
    keyset_sort(ks, v, tmp, h);
    keyset_sort(ks, v + h, tmp, n - h);
    if (keyset_cmp(ks, v[h - 1], v[h]) <= 0) return; /* already in order */
    int64_t i = 0, j = h, k = 0;
    while (i < h && j < n) tmp[k++] = keyset_cmp(ks, v[j], v[i]) < 0 ? v[j++] : v[i++];
    while (i < h) tmp[k++] = v[i++];
    while (j < n) tmp[k++] = v[j++];
    memcpy(v, tmp, (size_t)n * sizeof *v);
}

/* Encodes every key of `keys` (cast to the key columns' types) and sorts them. */
static int keyset_build(fr_kv *kv, const fr_batch *keys, kv_keyset *ks, fr_error *err)
{
    int64_t n = fr_batch_num_rows(keys);
    size_t slots = (size_t)n + 1;
    ks->at = fr_malloc(slots * sizeof *ks->at);
    ks->len = fr_malloc(slots * sizeof *ks->len);
    ks->order = fr_malloc(slots * sizeof *ks->order);
    int64_t *tmp = fr_malloc(slots * sizeof *tmp);
    fr_value *kvals = fr_calloc((size_t)kv->npk * 2, sizeof *kvals); /* read, then cast */
    fr_arena *arena = fr_arena_new(4096);
    int rc = ks->at && ks->len && ks->order && tmp && kvals && arena
                 ? FR_OK
                 : fr_fail(err, FR_ENOMEM, "%s: out of memory for a lookup", kv->name);
    fr_value *cast = kvals + kv->npk;
    for (int64_t i = 0; rc == FR_OK && i < n; i++) {
        ks->at[i] = SIZE_MAX;
        ks->len[i] = 0;
        for (int j = 0; j < kv->npk; j++) fr_column_get(fr_batch_column(keys, j), i, &kvals[j]);
        if (kv_any_null(kvals, kv->npk)) continue;
        rc = kv_cast_key(kv, kvals, kv->npk, arena, cast, err);
        size_t before = ks->bytes.len;
        if (rc == FR_OK) rc = kv_key_of_values(kv, cast, kv->npk, &ks->bytes, err);
        if (rc < 0) break;
        ks->at[i] = before;
        ks->len[i] = ks->bytes.len - before;
        ks->order[ks->nordered++] = i;
    }
    if (rc == FR_OK) keyset_sort(ks, ks->order, tmp, ks->nordered);
    if (arena) fr_arena_free(arena);
    fr_free(kvals);
    fr_free(tmp);
    return rc;
}

/* The values of a lookup's keys in key order (ks->order): each from the row cache (in
 * hits) or from RocksDB (held by its pinnable slice), or none. A key equal to the one
 * before it shares that one's value (dup). */
typedef struct kv_found {
    const uint8_t **val;
    size_t *vlen;
    bool *dup;
    rocksdb_pinnableslice_t **pins;
    fr_buf hits;
    size_t *hit_at; /* per key: its place in hits, or SIZE_MAX */
} kv_found;

static int found_init(fr_kv *kv, const kv_keyset *ks, kv_found *f, size_t m, fr_error *err)
{
    memset(f, 0, sizeof *f);
    fr_buf_init(&f->hits);
    f->val = fr_calloc(m + 1, sizeof *f->val);
    f->vlen = fr_calloc(m + 1, sizeof *f->vlen);
    f->dup = fr_calloc(m + 1, sizeof *f->dup);
    f->pins = fr_calloc(m + 1, sizeof *f->pins);
    f->hit_at = fr_malloc((m + 1) * sizeof *f->hit_at);
    FR_CHECK(f->val && f->vlen && f->dup && f->pins && f->hit_at, FR_ENOMEM, err,
             "%s: out of memory for a lookup", kv->name);
    for (size_t k = 0; k < m; k++) {
        f->hit_at[k] = SIZE_MAX;
        f->dup[k] = k > 0 && keyset_cmp(ks, ks->order[k - 1], ks->order[k]) == 0;
    }
    return FR_OK;
}

static void found_free(kv_found *f, size_t m)
{
    for (size_t k = 0; f->pins && k < m; k++)
        if (f->pins[k]) rocksdb_pinnableslice_destroy(f->pins[k]);
    fr_free(f->val);
    fr_free(f->vlen);
    fr_free(f->dup);
    fr_free(f->pins);
    fr_free(f->hit_at);
    fr_buf_free(&f->hits);
}

/* Probes the row cache for every key (not for repeats); false, with nothing kept, when any
 * write changed the store between the two readings of its generation. */
static bool lookup_cached(fr_kv *kv, const kv_keyset *ks, size_t m, kv_found *f, uint64_t gen)
{
    for (size_t k = 0; k < m; k++) {
        int64_t i = ks->order[k];
        size_t at, len;
        if (!f->dup[k] && kv_rowcache_get(kv->env->rows, kv->cache_id, ks->bytes.data + ks->at[i],
                                          ks->len[i], &f->hits, &at, &len)) {
            f->hit_at[k] = at;
            f->vlen[k] = len;
        }
    }
    if (atomic_load(&kv->gen) == gen) return true;
    for (size_t k = 0; k < m; k++) f->hit_at[k] = SIZE_MAX;
    fr_buf_reset(&f->hits);
    return false;
}

/* Reads the keys the cache did not answer with one batched MultiGet over the snapshot ro
 * reads; with `gen` (>= 0), puts what it found into the row cache. */
static int lookup_multiget(fr_kv *kv, const kv_keyset *ks, size_t n,
                           const rocksdb_readoptions_t *ro, kv_found *f, int64_t gen,
                           fr_error *err)
{
    const char **kp = fr_malloc((n + 1) * sizeof *kp);
    size_t *kl = fr_malloc((n + 1) * sizeof *kl);
    rocksdb_pinnableslice_t **got = fr_calloc(n + 1, sizeof *got);
    char **errs = fr_calloc(n + 1, sizeof *errs);
    size_t *slot = fr_malloc((n + 1) * sizeof *slot);
    int rc = kp && kl && got && errs && slot
                 ? FR_OK
                 : fr_fail(err, FR_ENOMEM, "%s: out of memory for a lookup", kv->name);
    size_t m = 0;
    for (size_t k = 0; rc == FR_OK && k < n; k++) {
        int64_t i = ks->order[k];
        if (f->dup[k] || f->hit_at[k] != SIZE_MAX) continue;
        kp[m] = (const char *)ks->bytes.data + ks->at[i];
        kl[m] = ks->len[i];
        slot[m++] = k;
    }
    if (rc == FR_OK && m > 0)
        rocksdb_batched_multi_get_cf(kv->db, ro, kv->cf, m, kp, kl, got, errs, true);
    for (size_t j = 0; rc == FR_OK && j < m; j++) {
        size_t k = slot[j];
        f->pins[k] = got[j];
        if (!got[j]) continue;
        f->val[k] = (const uint8_t *)rocksdb_pinnableslice_value(got[j], &f->vlen[k]);
        if (gen >= 0)
            kv_rowcache_put(kv->env->rows, kv->cache_id, (const uint8_t *)kp[j], kl[j],
                            f->val[k], f->vlen[k], &kv->gen, (uint64_t)gen, &kv->cached);
    }
    for (size_t j = 0; errs && j < m; j++) {
        if (errs[j] && rc == FR_OK) rc = kv_rocks_fail(kv, errs[j], "lookup", err);
        else if (errs[j]) rocksdb_free(errs[j]);
    }
    fr_free(kp);
    fr_free(kl);
    fr_free(got);
    fr_free(errs);
    fr_free(slot);
    return rc;
}

/* The value of row i of the keys (NULL when it has no key or was not found). */
static const uint8_t *lookup_value(const int64_t *pos, const kv_found *f, int64_t i,
                                   size_t *vlen)
{
    int64_t k = pos[i];
    if (k < 0) return NULL;
    while (f->dup[k]) k--; /* the first of equal keys holds the value */
    *vlen = f->vlen[k];
    if (f->hit_at[k] != SIZE_MAX) return f->hits.data + f->hit_at[k];
    return f->val[k];
}

/* Asks the cache for a stored row before it is decoded: rows pinned in the block cache
 * are cold, and decoding a row stalled on its first bytes. */
static void lookup_prefetch(const uint8_t *v, size_t vlen)
{
    for (size_t at = 0; at < vlen && at < KV_PREFETCH_BYTES; at += 64)
        __builtin_prefetch(v + at, 0, 0);
}

/* Found rows, decoded into the sink's builder in the order of the keys. f is in key order
 * (ks->order); pos maps a row to its place there. */
static int lookup_emit(fr_kv *kv, const kv_keyset *ks, int64_t n, const kv_found *f,
                       kv_cols *cols, fr_value *values, bool *found, fr_error *err)
{
    int64_t *pos = fr_malloc(((size_t)n + 1) * sizeof *pos);
    FR_CHECK(pos, FR_ENOMEM, err, "%s: out of memory for a lookup", kv->name);
    for (int64_t i = 0; i < n; i++) pos[i] = -1;
    for (int64_t k = 0; k < ks->nordered; k++) pos[ks->order[k]] = k;
    int rc = FR_OK;
    size_t vlen = 0, nlen = 0;
    const uint8_t *next = n > 0 ? lookup_value(pos, f, 0, &nlen) : NULL;
    for (int64_t i = 0; rc == FR_OK && i < n; i++) {
        found[i] = false;
        const uint8_t *v = next;
        vlen = nlen;
        next = i + 1 < n ? lookup_value(pos, f, i + 1, &nlen) : NULL;
        if (next) lookup_prefetch(next, nlen);
        if (!v) continue;
        rc = kv_row_decode(kv, v, vlen, values, err);
        if (rc == FR_OK) rc = kv_cols_append(cols, values, err);
        found[i] = rc == FR_OK;
    }
    fr_free(pos);
    return rc;
}

/* Looks the keys of ks up as of one state of the store, rows into cols: the row cache's
 * hits when no write came between (fr_kv.gen), the rest from one snapshot. */
static int lookup_all(fr_kv *kv, const kv_keyset *ks, int64_t n, kv_cols *cols,
                      fr_value *values, bool *found, fr_error *err)
{
    size_t m = (size_t)ks->nordered;
    kv_found f;
    int rc = found_init(kv, ks, &f, m, err);
    uint64_t gen = atomic_load(&kv->gen);
    bool cached = kv->env->rows && gen % 2 == 0;
    const rocksdb_snapshot_t *snap = rocksdb_create_snapshot(kv->db);
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    rocksdb_readoptions_set_snapshot(ro, snap);
    if (rc == FR_OK && cached) cached = lookup_cached(kv, ks, m, &f, gen);
    if (rc == FR_OK) rc = lookup_multiget(kv, ks, m, ro, &f, cached ? (int64_t)gen : -1, err);
    if (rc == FR_OK) rc = lookup_emit(kv, ks, n, &f, cols, values, found, err);
    found_free(&f, m);
    rocksdb_readoptions_destroy(ro);
    rocksdb_release_snapshot(kv->db, snap);
    return rc;
}

int fr_kv_lookup(fr_kv *kv, const fr_batch *keys, bool *found, fr_batch **out, fr_error *err)
{
    *out = NULL;
    FR_CHECK(fr_batch_num_columns(keys) == kv->npk, FR_EINVAL, err,
             "%s: a lookup needs the %d primary key columns, not %d columns", kv->name, kv->npk,
             fr_batch_num_columns(keys));
    int64_t n = fr_batch_num_rows(keys);
    for (int64_t i = 0; i < n; i++) found[i] = false;
    /* The found rows are decoded straight into column buffers (kv_cols.c), not through a
     * builder: every value has its column's type already. */
    kv_cols cols;
    kv_keyset ks;
    memset(&ks, 0, sizeof ks);
    fr_buf_init(&ks.bytes);
    fr_value *values = fr_calloc((size_t)kv->ncols, sizeof *values);
    int rc = values ? kv_cols_init(&cols, kv->schema, err)
                    : fr_fail(err, FR_ENOMEM, "%s: out of memory for a lookup", kv->name);
    if (!values) memset(&cols, 0, sizeof cols);
    if (rc == FR_OK) rc = keyset_build(kv, keys, &ks, err);
    if (rc == FR_OK) rc = kv_cols_reserve(&cols, ks.nordered, err);
    if (rc == FR_OK) rc = lookup_all(kv, &ks, n, &cols, values, found, err);
    if (rc == FR_OK) rc = kv_cols_finish(&cols, out, err);
    keyset_free(&ks);
    kv_cols_free(&cols);
    fr_free(values);
    return rc;
}
