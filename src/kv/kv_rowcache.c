/* kv_rowcache.c — the row cache of point lookups: the stored rows that lookups found, by
 * store and key, shared by every store of an environment and bounded in bytes.
 *
 * Why: a lookup of a key that is in a memtable searches RocksDB's skip list, about thirty
 * dependent cache misses for a few hundred thousand entries; that search was more than half
 * of the server's CPU in lookup-heavy loads (docs/BENCHMARKS.md). A hash probe costs one or
 * two. The cache is filled by lookups alone (writes only remove keys): until a lookup
 * fills it, a write pays nothing but a check that it is empty.
 *
 * How it stays right (the protocol is in kv_int.h, beside fr_kv.gen): a store's writes bump
 * its generation before and after they change RocksDB and remove their keys from the cache
 * in between; a lookup uses its hits only when the generation was even and unchanged from
 * before its probes to after its snapshot, and inserts what it read only while the
 * generation is still the one it began with, checked under the stripe's lock. A store
 * whose rows no lookup ever put here is marked so (fr_kv.cached): its writes skip the
 * removals, which cost a hash probe per key written.
 *
 * Layout: KV_ROWCACHE_STRIPES stripes, each a mutex, a chained hash table that doubles
 * when it holds more entries than slots, and an LRU list; each stripe keeps to its share of
 * the capacity by dropping its least recently used entries. An entry is one allocation
 * holding its key and its row. Stores are told apart by an id never reused within the
 * process, so the entries of a closed store are never found again and age out. */
#include "kv/kv_int.h"

#define KV_ROWCACHE_STRIPES 64
#define KV_ROWCACHE_SLOTS_MIN 64

typedef struct rc_entry {
    struct rc_entry *chain;            /* the next entry of the same slot */
    struct rc_entry *newer, *older;    /* the stripe's LRU list */
    uint64_t store;
    uint32_t hash;
    uint32_t klen;
    size_t vlen;
    uint8_t data[];                    /* the key, then the row */
} rc_entry;

typedef struct rc_stripe {
    pthread_mutex_t mu;
    rc_entry **slots;
    size_t nslots;   /* a power of two, or 0 before the first insert */
    size_t count;
    size_t bytes;
    rc_entry *newest, *oldest;
} rc_stripe;

struct kv_rowcache {
    size_t stripe_capacity;
    _Atomic int64_t bytes; /* every stripe's bytes together */
    rc_stripe stripes[KV_ROWCACHE_STRIPES];
};

static uint64_t rc_store_ids;

uint64_t kv_rowcache_store_id(void)
{
    return __atomic_add_fetch(&rc_store_ids, 1, __ATOMIC_RELAXED);
}

int kv_rowcache_new(int64_t capacity, kv_rowcache **out, fr_error *err)
{
    *out = NULL;
    if (capacity <= 0) return FR_OK; /* no cache */
    kv_rowcache *c = fr_calloc(1, sizeof *c);
    FR_CHECK(c, FR_ENOMEM, err, "kv: out of memory for the row cache");
    c->stripe_capacity = (size_t)capacity / KV_ROWCACHE_STRIPES;
    atomic_init(&c->bytes, 0);
    for (int i = 0; i < KV_ROWCACHE_STRIPES; i++) pthread_mutex_init(&c->stripes[i].mu, NULL);
    *out = c;
    return FR_OK;
}

void kv_rowcache_free(kv_rowcache *c)
{
    if (!c) return;
    for (int i = 0; i < KV_ROWCACHE_STRIPES; i++) {
        rc_stripe *s = &c->stripes[i];
        for (rc_entry *e = s->newest, *next; e; e = next) {
            next = e->older;
            fr_free(e);
        }
        fr_free(s->slots);
        pthread_mutex_destroy(&s->mu);
    }
    fr_free(c);
}

int64_t kv_rowcache_bytes(const kv_rowcache *c)
{
    return c ? atomic_load(&((kv_rowcache *)c)->bytes) : 0;
}

/* What an entry counts against the capacity: its allocation and its slot. */
static size_t rc_cost(size_t klen, size_t vlen)
{
    return sizeof(rc_entry) + klen + vlen + sizeof(rc_entry *);
}

static uint32_t rc_hash(uint64_t store, const uint8_t *key, size_t klen)
{
    return fr_murmur3_32(key, klen, (uint32_t)(store * 0x9e3779b97f4a7c15ull >> 32));
}

/* The stripe of a hash: its top bits (the slots use the low ones). */
static rc_stripe *rc_stripe_of(kv_rowcache *c, uint32_t h)
{
    return &c->stripes[h >> 26];
}

static rc_entry **rc_find(rc_stripe *s, uint64_t store, uint32_t h, const uint8_t *key,
                          size_t klen)
{
    if (s->nslots == 0) return NULL;
    rc_entry **p = &s->slots[h & (s->nslots - 1)];
    for (; *p; p = &(*p)->chain) {
        const rc_entry *e = *p;
        if (e->hash == h && e->store == store && e->klen == klen && !memcmp(e->data, key, klen))
            return p;
    }
    return NULL;
}

static void rc_lru_unlink(rc_stripe *s, rc_entry *e)
{
    if (e->newer) e->newer->older = e->older;
    else s->newest = e->older;
    if (e->older) e->older->newer = e->newer;
    else s->oldest = e->newer;
}

static void rc_lru_push(rc_stripe *s, rc_entry *e)
{
    e->newer = NULL;
    e->older = s->newest;
    if (s->newest) s->newest->newer = e;
    s->newest = e;
    if (!s->oldest) s->oldest = e;
}

/* Unlinks the entry *p points to from its slot and the LRU list and frees it. */
static void rc_remove(kv_rowcache *c, rc_stripe *s, rc_entry **p)
{
    rc_entry *e = *p;
    *p = e->chain;
    rc_lru_unlink(s, e);
    size_t cost = rc_cost(e->klen, e->vlen);
    s->count--;
    s->bytes -= cost;
    atomic_fetch_sub(&c->bytes, (int64_t)cost);
    fr_free(e);
}

/* Doubles the slots when the stripe holds more entries than slots. Without memory the
 * chains just grow longer. */
static void rc_grow(rc_stripe *s)
{
    if (s->count < s->nslots) return;
    size_t n = s->nslots ? s->nslots * 2 : KV_ROWCACHE_SLOTS_MIN;
    rc_entry **slots = fr_calloc(n, sizeof *slots);
    if (!slots) return;
    for (size_t i = 0; i < s->nslots; i++) {
        for (rc_entry *e = s->slots[i], *next; e; e = next) {
            next = e->chain;
            e->chain = slots[e->hash & (n - 1)];
            slots[e->hash & (n - 1)] = e;
        }
    }
    fr_free(s->slots);
    s->slots = slots;
    s->nslots = n;
}

bool kv_rowcache_get(kv_rowcache *c, uint64_t store, const uint8_t *key, size_t klen,
                     fr_buf *out, size_t *at, size_t *len)
{
    uint32_t h = rc_hash(store, key, klen);
    rc_stripe *s = rc_stripe_of(c, h);
    pthread_mutex_lock(&s->mu);
    rc_entry **p = rc_find(s, store, h, key, klen);
    bool hit = p && fr_buf_append(out, (*p)->data + klen, (*p)->vlen, NULL) == FR_OK;
    if (hit) {
        *at = out->len - (*p)->vlen;
        *len = (*p)->vlen;
        rc_lru_unlink(s, *p);
        rc_lru_push(s, *p);
    }
    pthread_mutex_unlock(&s->mu);
    return hit;
}

void kv_rowcache_put(kv_rowcache *c, uint64_t store, const uint8_t *key, size_t klen,
                     const uint8_t *val, size_t vlen, const _Atomic uint64_t *gen,
                     uint64_t expect, atomic_bool *cached)
{
    size_t cost = rc_cost(klen, vlen);
    uint32_t h = rc_hash(store, key, klen);
    rc_stripe *s = rc_stripe_of(c, h);
    if (cost > c->stripe_capacity) return;
    rc_entry *e = fr_malloc(sizeof *e + klen + vlen);
    if (!e) return; /* a cache may forget */
    e->store = store;
    e->hash = h;
    e->klen = (uint32_t)klen;
    e->vlen = vlen;
    memcpy(e->data, key, klen);
    memcpy(e->data + klen, val, vlen);
    pthread_mutex_lock(&s->mu);
    /* The store is marked before the generation is looked at: a write that has bumped
     * the generation after that look then finds the mark and removes its keys (under this
     * lock, so after this insert). A write that began before the look has changed the
     * generation, and the row, read before it, stays out. */
    atomic_store(cached, true);
    atomic_fetch_add(&c->bytes, (int64_t)cost);
    bool stale = atomic_load(gen) != expect;
    if (!stale) rc_grow(s);
    if (stale || s->nslots == 0 || rc_find(s, store, h, key, klen)) {
        atomic_fetch_sub(&c->bytes, (int64_t)cost);
        pthread_mutex_unlock(&s->mu);
        fr_free(e);
        return;
    }
    while (s->oldest && s->bytes + cost > c->stripe_capacity) {
        rc_entry **victim = rc_find(s, s->oldest->store, s->oldest->hash, s->oldest->data,
                                    s->oldest->klen);
        rc_remove(c, s, victim);
    }
    rc_entry **slot = &s->slots[h & (s->nslots - 1)];
    e->chain = *slot;
    *slot = e;
    rc_lru_push(s, e);
    s->count++;
    s->bytes += cost;
    pthread_mutex_unlock(&s->mu);
}

void kv_rowcache_erase(kv_rowcache *c, uint64_t store, const uint8_t *key, size_t klen)
{
    uint32_t h = rc_hash(store, key, klen);
    rc_stripe *s = rc_stripe_of(c, h);
    pthread_mutex_lock(&s->mu);
    rc_entry **p = rc_find(s, store, h, key, klen);
    if (p) rc_remove(c, s, p);
    pthread_mutex_unlock(&s->mu);
}
