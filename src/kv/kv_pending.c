/* kv_pending.c — the table of keys one write touches: a key's row as the write sees it
 * (the write's own earlier records first, then RocksDB), so that the same key appearing
 * several times in one batch merges with itself, and, at the end, the set of rows to put
 * into RocksDB. Open addressing with linear probing on murmur3 of the key; it grows at
 * 1/2 load and is emptied after every write (keeping its slots when they are few). */
#include "kv/kv_int.h"

#define KV_PENDING_KEEP_SLOTS 4096

static void entry_release(kv_entry *e)
{
    fr_free(e->key);
    fr_free(e->val);
    memset(e, 0, sizeof *e);
}

void kv_pending_clear(kv_pending *p)
{
    if (p->count > 0) {
        for (size_t i = 0; i < p->cap; i++)
            if (p->slots[i].key) entry_release(&p->slots[i]);
    }
    p->count = 0;
    if (p->cap > KV_PENDING_KEEP_SLOTS) {
        fr_free(p->slots);
        p->slots = NULL;
        p->cap = 0;
    }
}

void kv_pending_free(kv_pending *p)
{
    kv_pending_clear(p);
    fr_free(p->slots);
    p->slots = NULL;
    p->cap = 0;
}

static kv_entry *pending_probe(kv_pending *p, const uint8_t *key, size_t klen, uint32_t h)
{
    size_t mask = p->cap - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        kv_entry *e = &p->slots[i];
        if (!e->key) return e;
        if (e->hash == h && e->klen == klen && memcmp(e->key, key, klen) == 0) return e;
    }
}

static int pending_grow(kv_pending *p, fr_error *err)
{
    size_t cap = p->cap ? p->cap * 2 : 64;
    kv_entry *slots = fr_calloc(cap, sizeof *slots);
    if (!slots) return fr_fail(err, FR_ENOMEM, "kv: out of memory for %zu pending keys", cap);
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

/* Fetches key from RocksDB (db NULL: takes it as absent, unread) into a fresh entry. */
static int pending_load(kv_entry *e, rocksdb_t *db, const rocksdb_readoptions_t *ropts,
                        const uint8_t *key, size_t klen, uint32_t h, fr_error *err)
{
    char *errptr = NULL;
    size_t vlen = 0;
    char *v = db ? rocksdb_get(db, ropts, (const char *)key, klen, &vlen, &errptr) : NULL;
    if (errptr) {
        int rc = fr_fail(err, FR_EIO, "kv: RocksDB read failed: %s", errptr);
        rocksdb_free(errptr);
        return rc;
    }
    uint8_t *k = fr_malloc(klen);
    uint8_t *val = v ? fr_malloc(vlen ? vlen : 1) : NULL;
    if (!k || (v && !val)) {
        fr_free(k);
        fr_free(val);
        if (v) rocksdb_free(v);
        return fr_fail(err, FR_ENOMEM, "kv: out of memory for a %zu-byte row", vlen);
    }
    memcpy(k, key, klen);
    if (v) {
        if (vlen) memcpy(val, v, vlen);
        rocksdb_free(v);
    }
    *e = (kv_entry){ .key = k, .klen = klen, .val = val, .vlen = vlen, .hash = h };
    return FR_OK;
}

int kv_pending_get(kv_pending *p, rocksdb_t *db, const rocksdb_readoptions_t *ropts,
                   const uint8_t *key, size_t klen, bool load, kv_entry **out, fr_error *err)
{
    if ((p->count + 1) * 2 > p->cap) FR_TRY(pending_grow(p, err));
    uint32_t h = fr_murmur3_32(key, klen, 0x6b76);
    kv_entry *e = pending_probe(p, key, klen, h);
    if (!e->key) {
        FR_TRY(pending_load(e, load ? db : NULL, ropts, key, klen, h, err));
        p->count++;
    }
    *out = e;
    return FR_OK;
}

int kv_pending_set(kv_entry *e, const uint8_t *val, size_t vlen, fr_error *err)
{
    uint8_t *copy = NULL;
    if (val) {
        copy = fr_malloc(vlen ? vlen : 1);
        if (!copy) return fr_fail(err, FR_ENOMEM, "kv: out of memory for a %zu-byte row", vlen);
        if (vlen) memcpy(copy, val, vlen);
    }
    fr_free(e->val);
    e->val = copy;
    e->vlen = val ? vlen : 0;
    e->dirty = true;
    return FR_OK;
}
