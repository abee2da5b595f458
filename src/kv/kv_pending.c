/* kv_pending.c — the table of keys one write touches: a key's row as the write sees it
 * (the write's own earlier records first, then RocksDB), so that the same key appearing
 * several times in one batch merges with itself, and, at the end, the set of rows to put
 * into RocksDB. Open addressing with linear probing on murmur3 of the key; room for every
 * key of a write is reserved before the first is added, so entry pointers stay valid for
 * the whole write. The table is emptied after every write (keeping its slots when they are
 * few).
 *
 * The stored rows a write needs are read all at once, before its records are computed, in
 * sorted key order. First one iterator over the memtables walks along the keys: a key next
 * to the one before it (a batch of neighbouring keys, the rows a bulk update rewrites) is
 * one step away, where a point read searches the skip list from its top, a cache miss per
 * level. Keys the walk does not settle within a few steps, and keys not in the memtables,
 * go to batched MultiGets, whose bloom filters rule out most absent keys without a search
 * (the walk gives up after a run of keys whose steps found nothing, so scattered keys cost
 * a few steps more than before). A value read stays pinned in RocksDB's own memory (the
 * memtable, held by the iterator, or the block cache or a copy in a pinnable slice) until
 * the table is cleared or unpinned; keys and the rows the write sets live in its arena. */
#include "kv/kv_int.h"

#include <stdlib.h>

#define KV_PENDING_KEEP_SLOTS 4096
#define KV_PENDING_ARENA_BYTES (128 << 10)
/* Keys per MultiGet call: bounds the temporary arrays of one call. */
#define KV_MULTIGET_KEYS 1024
/* The memtable walk: steps tried towards one key, and keys in a row whose steps found no
 * row before the walk stops. */
#define KV_FINGER_STEPS 4
#define KV_FINGER_MISSES 8

static void entry_release(kv_entry *e)
{
    if (e->pin) rocksdb_pinnableslice_destroy(e->pin);
    memset(e, 0, sizeof *e);
}

static void finger_release(kv_pending *p)
{
    if (p->finger) rocksdb_iter_destroy(p->finger);
    p->finger = NULL;
}

void kv_pending_clear(kv_pending *p)
{
    finger_release(p);
    if (p->count > 0) {
        for (size_t i = 0; i < p->cap; i++)
            if (p->slots[i].key) entry_release(&p->slots[i]);
    }
    p->count = 0;
    if (p->arena) fr_arena_free(p->arena);
    p->arena = NULL;
    if (p->cap > KV_PENDING_KEEP_SLOTS) {
        fr_free(p->slots);
        p->slots = NULL;
        p->cap = 0;
    }
}

void kv_pending_unpin(kv_pending *p)
{
    for (size_t i = 0; p->count > 0 && i < p->cap; i++) {
        kv_entry *e = &p->slots[i];
        if (!e->key || e->dirty) continue;
        if (e->pin) rocksdb_pinnableslice_destroy(e->pin);
        e->pin = NULL;
        e->val = NULL;
        e->vlen = 0;
    }
    finger_release(p);
}

void kv_pending_free(kv_pending *p)
{
    kv_pending_clear(p);
    fr_free(p->slots);
    p->slots = NULL;
    p->cap = 0;
}

static kv_entry *pending_probe(const kv_pending *p, const uint8_t *key, size_t klen, uint32_t h)
{
    size_t mask = p->cap - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        kv_entry *e = &p->slots[i];
        if (!e->key) return e;
        if (e->hash == h && e->klen == klen && memcmp(e->key, key, klen) == 0) return e;
    }
}

kv_entry *kv_pending_find(const kv_pending *p, const uint8_t *key, size_t klen, uint32_t hash)
{
    if (p->count == 0) return NULL;
    kv_entry *e = pending_probe(p, key, klen, hash);
    return e->key ? e : NULL;
}

int kv_pending_reserve(kv_pending *p, size_t n, fr_error *err)
{
    FR_CHECK(n <= SIZE_MAX / 4 - p->count, FR_ELIMIT, err, "kv: %zu pending keys", n);
    size_t cap = p->cap ? p->cap : 64;
    while ((p->count + n) * 2 > cap) cap *= 2;
    if (!p->arena) {
        p->arena = fr_arena_new(KV_PENDING_ARENA_BYTES);
        FR_CHECK(p->arena, FR_ENOMEM, err, "kv: out of memory for pending keys");
    }
    if (cap == p->cap) return FR_OK;
    kv_entry *slots = fr_calloc(cap, sizeof *slots);
    FR_CHECK(slots, FR_ENOMEM, err, "kv: out of memory for %zu pending keys", cap);
    kv_entry *old = p->slots;
    size_t old_cap = p->cap;
    p->slots = slots;
    p->cap = cap;
    for (size_t i = 0; i < old_cap; i++) {
        if (!old[i].key) continue;
        *pending_probe(p, old[i].key, old[i].klen, old[i].hash) = old[i];
    }
    fr_free(old);
    return FR_OK;
}

int kv_pending_add(kv_pending *p, const uint8_t *key, size_t klen, bool load, kv_entry **out,
                   fr_error *err)
{
    assert(p->arena && (p->count + 1) * 2 <= p->cap);
    uint32_t h = fr_murmur3_32(key, klen, 0x6b76);
    kv_entry *e = pending_probe(p, key, klen, h);
    if (!e->key) {
        uint8_t *k = fr_arena_alloc(p->arena, klen ? klen : 1);
        FR_CHECK(k, FR_ENOMEM, err, "kv: out of memory for a %zu-byte key", klen);
        memcpy(k, key, klen);
        *e = (kv_entry){ .key = k, .klen = klen, .hash = h, .load = load };
        p->count++;
    }
    *out = e;
    return FR_OK;
}

int kv_key_cmp(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
    int c = memcmp(a, b, alen < blen ? alen : blen);
    if (c != 0) return c;
    return alen < blen ? -1 : alen > blen;
}

static int entry_cmp(const void *a, const void *b)
{
    const kv_entry *x = *(kv_entry *const *)a, *y = *(kv_entry *const *)b;
    return kv_key_cmp(x->key, x->klen, y->key, y->klen);
}

/* The dirty entries (or, !dirty, those still to be read), sorted by key, in a new array
 * (NULL when none). */
static int pending_sorted(kv_pending *p, bool dirty, kv_entry ***out, size_t *n,
                          fr_error *err)
{
    *out = NULL;
    *n = 0;
    size_t k = 0;
    for (size_t i = 0; i < p->cap; i++) {
        const kv_entry *e = &p->slots[i];
        if (e->key && (dirty ? e->dirty : e->load)) k++;
    }
    if (k == 0) return FR_OK;
    kv_entry **v = fr_malloc(k * sizeof *v);
    FR_CHECK(v, FR_ENOMEM, err, "kv: out of memory sorting %zu keys", k);
    k = 0;
    for (size_t i = 0; i < p->cap; i++) {
        kv_entry *e = &p->slots[i];
        if (e->key && (dirty ? e->dirty : e->load)) v[k++] = e;
    }
    qsort(v, k, sizeof *v, entry_cmp);
    *out = v;
    *n = k;
    return FR_OK;
}

int kv_pending_dirty_sorted(kv_pending *p, kv_entry ***out, size_t *n, fr_error *err)
{
    return pending_sorted(p, true, out, n, err);
}

/* One MultiGet of n entries (sorted): values are pinned into the entries. */
static int pending_multiget(kv_entry **v, size_t n, rocksdb_t *db,
                            rocksdb_column_family_handle_t *cf, const rocksdb_readoptions_t *ro,
                            const char **keys, size_t *sizes, rocksdb_pinnableslice_t **vals,
                            char **errs, fr_error *err)
{
    for (size_t i = 0; i < n; i++) {
        keys[i] = (const char *)v[i]->key;
        sizes[i] = v[i]->klen;
    }
    rocksdb_batched_multi_get_cf(db, ro, cf, n, keys, sizes, vals, errs, true);
    int rc = FR_OK;
    for (size_t i = 0; i < n; i++) {
        if (errs[i]) {
            if (rc == FR_OK) rc = fr_fail(err, FR_EIO, "kv: RocksDB read failed: %s", errs[i]);
            rocksdb_free(errs[i]);
        }
        kv_entry *e = v[i];
        e->load = false;
        e->pin = vals[i];
        if (vals[i]) e->val = (const uint8_t *)rocksdb_pinnableslice_value(vals[i], &e->vlen);
    }
    return rc;
}

/* Moves the walk to the first memtable key at or after e's key, in at most KV_FINGER_STEPS
 * steps (*steps gets how many): 0 when it holds e's key (its newest version is a row, not a
 * deletion), 1 when it is past it or at the end (no memtable row of e's key: the walk only
 * ever passes keys that are not there), -1 when e's key is still ahead. */
static int finger_step(rocksdb_iterator_t *it, const kv_entry *e, int *steps)
{
    for (*steps = 0;; ++*steps) {
        if (!rocksdb_iter_valid(it)) return 1;
        size_t klen;
        const char *k = rocksdb_iter_key(it, &klen);
        int c = kv_key_cmp((const uint8_t *)k, klen, e->key, e->klen);
        if (c >= 0) return c > 0;
        if (*steps == KV_FINGER_STEPS) return -1;
        rocksdb_iter_next(it);
    }
}

/* Settles what it can of v[0..*n) (sorted) from the memtables; *n becomes the number of
 * entries left to read, moved to the front of v. The iterator stays in p while entries
 * point into the memtable through it. */
static int pending_walk(kv_pending *p, kv_entry **v, size_t *n, rocksdb_t *db,
                        rocksdb_column_family_handle_t *cf, const rocksdb_readoptions_t *ro,
                        fr_error *err)
{
    rocksdb_iterator_t *it = rocksdb_create_iterator_cf(db, ro, cf);
    rocksdb_iter_seek(it, (const char *)v[0]->key, v[0]->klen);
    size_t left = 0, found = 0;
    int misses = 0;
    for (size_t i = 0; i < *n; i++) {
        kv_entry *e = v[i];
        /* Steps that found nothing are a miss: new keys scattered among stored ones would
         * otherwise cost steps forever without the walk finding a row. */
        int steps = 0;
        int r = misses < KV_FINGER_MISSES ? finger_step(it, e, &steps) : -1;
        misses = r == 0 ? 0 : misses + (r < 0 || steps > 0);
        if (r != 0) {
            v[left++] = e;
            continue;
        }
        e->val = (const uint8_t *)rocksdb_iter_value(it, &e->vlen);
        e->load = false;
        found++;
    }
    char *errptr = NULL;
    rocksdb_iter_get_error(it, &errptr);
    if (errptr) {
        rocksdb_iter_destroy(it);
        int rc = fr_fail(err, FR_EIO, "kv: RocksDB read failed: %s", errptr);
        rocksdb_free(errptr);
        return rc;
    }
    if (found) p->finger = it;
    else rocksdb_iter_destroy(it);
    *n = left;
    return FR_OK;
}

int kv_pending_load(kv_pending *p, rocksdb_t *db, rocksdb_column_family_handle_t *cf,
                    const rocksdb_readoptions_t *ro, const rocksdb_readoptions_t *mem_ro,
                    fr_error *err)
{
    kv_entry **v = NULL;
    size_t n = 0;
    FR_TRY(pending_sorted(p, false, &v, &n, err));
    if (n == 0) return FR_OK;
    assert(!p->finger); /* one load per write: the table is cleared or unpinned after it */
    int walked = pending_walk(p, v, &n, db, cf, mem_ro, err);
    if (walked < 0 || n == 0) {
        fr_free(v);
        return walked;
    }
    size_t chunk = n < KV_MULTIGET_KEYS ? n : KV_MULTIGET_KEYS;
    const char **keys = fr_malloc(chunk * sizeof *keys);
    size_t *sizes = fr_malloc(chunk * sizeof *sizes);
    rocksdb_pinnableslice_t **vals = fr_malloc(chunk * sizeof *vals);
    char **errs = fr_malloc(chunk * sizeof *errs);
    int rc = keys && sizes && vals && errs
                 ? FR_OK
                 : fr_fail(err, FR_ENOMEM, "kv: out of memory reading %zu keys", n);
    for (size_t at = 0; rc == FR_OK && at < n; at += chunk) {
        size_t m = n - at < chunk ? n - at : chunk;
        rc = pending_multiget(v + at, m, db, cf, ro, keys, sizes, vals, errs, err);
    }
    fr_free(keys);
    fr_free(sizes);
    fr_free(vals);
    fr_free(errs);
    fr_free(v);
    return rc;
}

int kv_pending_set(kv_pending *p, kv_entry *e, const uint8_t *val, size_t vlen, fr_error *err)
{
    uint8_t *copy = NULL;
    if (val) {
        copy = fr_arena_alloc(p->arena, vlen ? vlen : 1);
        FR_CHECK(copy, FR_ENOMEM, err, "kv: out of memory for a %zu-byte row", vlen);
        if (vlen) memcpy(copy, val, vlen);
    }
    if (e->pin) rocksdb_pinnableslice_destroy(e->pin);
    e->pin = NULL;
    e->val = copy;
    e->vlen = val ? vlen : 0;
    e->dirty = true;
    return FR_OK;
}
