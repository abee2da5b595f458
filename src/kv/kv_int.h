/* kv_int.h — what the files of the kv module share: the in-memory form of a bucket's KV
 * store, the key layout inside RocksDB, the write-local table of pending rows, the merge
 * engines' row functions and the aggregate functions.
 *
 * Key layout in the single RocksDB column family: data keys are KV_DATA_PREFIX followed by
 * fr_key_encode of the primary key; the meta key (KV_META_KEY) sorts before every data key
 * and holds the applied log offset and the key count. One column family keeps a write batch
 * (rows + meta) inside one memtable, so whatever RocksDB persists is a consistent prefix of
 * the write batches even with its WAL off.
 *
 * Locking: fr_kv.mu serializes the first half of writes (computing the records, the
 * append to the log) and everything it touches: the pending table, the in-flight list,
 * the writer table, written and written_nkeys. A write then waits for its changelog's
 * durability with no lock held and applies its rows to RocksDB under apply_mu, in the
 * order of its turn (the order of the appends); apply_mu also covers mem_reported. Reads
 * take no lock and use RocksDB snapshots. flush_mu serializes flushes. Lock order: mu,
 * then flush_mu or apply_mu; an applier takes no other lock. applied, persisted, nkeys,
 * failed and dirty_since_ms are atomics so that readers may look at them without a lock. */
#ifndef FIRTH_KV_INT_H
#define FIRTH_KV_INT_H

#include <assert.h>
#include <pthread.h>
#include <rocksdb/c.h>
#include <stdatomic.h>

#include "kv/kv.h"

#define KV_DATA_PREFIX 0x01
#define KV_META_KEY "\x00" "applied"
#define KV_META_KEY_LEN 8
#define KV_META_VALUE_LEN 16
/* Rows per batch handed to a lookup or scan callback when the caller does not say. */
#define KV_BATCH_ROWS_DEFAULT 4096
/* Writers whose last sequence the store remembers for batches that changed nothing. */
#define KV_WRITERS_MAX 1024
/* A store's write batch and changelog buffer are kept for the next write up to this size. */
#define KV_WRITE_BATCH_KEEP_BYTES (4 << 20)
/* Bytes of changelog read per step of the replay at open. */
#define KV_REPLAY_READ_BYTES (8 << 20)

/* ---- the pending table: rows changed by the write in progress --------------------------- */

/* One key touched by the current write: its value as the write sees it now (NULL when the
 * key is absent). The key and a value set by the write live in the table's arena; a value
 * read from RocksDB is held by its pinnable slice. */
typedef struct kv_entry {
    const uint8_t *key;
    size_t klen;
    const uint8_t *val;
    size_t vlen;
    rocksdb_pinnableslice_t *pin; /* owns val when it was read from RocksDB, else NULL */
    uint32_t hash;
    bool load;  /* the stored row is still to be read (kv_pending_load) */
    bool dirty; /* changed by this write (to be written to RocksDB) */
} kv_entry;

/* Open addressing with linear probing; cleared after every write. */
typedef struct kv_pending {
    kv_entry *slots;
    size_t cap; /* a power of two, or 0 */
    size_t count;
    fr_arena *arena; /* keys and values of the write in progress, or NULL */
    rocksdb_iterator_t *finger; /* holds the memtable rows kv_pending_load found, or NULL */
} kv_pending;

void kv_pending_free(kv_pending *p);
void kv_pending_clear(kv_pending *p);
/* Forgets the values of the entries the write did not change (read from RocksDB or from
 * another write in flight), so that a table kept past its write holds no memtable or block
 * of RocksDB's and no pointer into another write's memory; its changed rows stay. */
void kv_pending_unpin(kv_pending *p);
/* Makes room for n more keys, so that no entry moves while they are added. */
int kv_pending_reserve(kv_pending *p, size_t n, fr_error *err);
/* The entry of key; a new one (room reserved) starts absent and, when load, marked to be
 * read from RocksDB by kv_pending_load. Valid until the table is cleared. */
int kv_pending_add(kv_pending *p, const uint8_t *key, size_t klen, bool load, kv_entry **out,
                   fr_error *err);
/* The entry of key in p (hash: as kv_pending_add computes it), or NULL. */
kv_entry *kv_pending_find(const kv_pending *p, const uint8_t *key, size_t klen, uint32_t hash);
/* Reads the stored row of every entry marked to be read, in key order: first by walking
 * the memtables with one iterator through mem_ro (memtables alone, data pinned), then by
 * batched MultiGets through ro for the keys that walk did not settle (both the latest
 * state: writes are serialized). FR_EIO when RocksDB fails. */
int kv_pending_load(kv_pending *p, rocksdb_t *db, rocksdb_column_family_handle_t *cf,
                    const rocksdb_readoptions_t *ro, const rocksdb_readoptions_t *mem_ro,
                    fr_error *err);
/* Replaces the entry's value with a copy of val (NULL: the key is deleted); marks it dirty. */
int kv_pending_set(kv_pending *p, kv_entry *e, const uint8_t *val, size_t vlen, fr_error *err);
/* RocksDB's bytewise order of two keys: the common prefix, then the shorter first. */
int kv_key_cmp(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen);
/* The dirty entries sorted by key, in a new array (fr_free it; NULL when none): a write
 * batch in key order inserts into the memtable's skip list faster. */
int kv_pending_dirty_sorted(kv_pending *p, kv_entry ***out, size_t *n, fr_error *err);

/* ---- column buffers filled row by row (kv_cols.c) ----------------------------------------- */

typedef struct kv_col {
    fr_type type;
    int width;          /* bytes per fixed-width value; 0: BOOLEAN bits or var-width */
    bool var;
    uint8_t *validity;  /* a bit per row, set unless NULL */
    int32_t *offsets;   /* var-width: rows + 1 */
    uint8_t *values;
    size_t vlen, vcap;  /* var-width: bytes used and allocated; fixed: vcap only */
    int64_t nulls;
} kv_col;

/* Rows of a schema gathered column by column; the schema is borrowed. */
typedef struct kv_cols {
    const fr_schema *schema;
    int ncols;
    kv_col *cols;
    int64_t rows, cap;
    int64_t hint;    /* rows expected (kv_cols_reserve), or 0 */
    fr_arena *arena; /* for the rare value that must be cast first */
} kv_cols;

int kv_cols_init(kv_cols *k, const fr_schema *schema, fr_error *err);
void kv_cols_free(kv_cols *k);
/* Makes room for `rows` rows up front (and sizes var-width columns by their first value),
 * when the caller knows about how many will come. */
int kv_cols_reserve(kv_cols *k, int64_t rows, fr_error *err);
/* Appends one row: a value per column, of the column's type (another type is cast, as the
 * builder would). The row is all or nothing: on error nothing of it stays. */
int kv_cols_append(kv_cols *k, const fr_value *row, fr_error *err);
/* The rows gathered so far as a batch of the schema; the buffers go to the batch and k is
 * empty again, ready for more rows. */
int kv_cols_finish(kv_cols *k, fr_batch **out, fr_error *err);

/* ---- the environment (kv_env.c) --------------------------------------------------------- */

/* Sizes of an environment a store makes for itself (spec.env NULL): RocksDB's default
 * block cache, and a budget that lets the memtable grow to 32 MiB. */
#define KV_PRIVATE_CACHE_BYTES (8 << 20)
#define KV_PRIVATE_BUFFER_BYTES (64 << 20)
#define KV_MEMTABLE_BYTES_MAX (64 << 20)
#define KV_BUFFER_BYTES_MIN (1 << 20)
/* Memtables per store (the active one and those being flushed), and RocksDB's background
 * threads for flushes and compactions. */
#define KV_WRITE_BUFFERS 3
/* A memtable grows by arena blocks, and its reported size counts whole blocks: RocksDB's
 * default (1 MiB here) would make a memtable holding one row look like 1 MiB to the
 * budget. */
#define KV_ARENA_BLOCK_BYTES (64 << 10)
/* Bloom filters: bits per key of the SST files' whole-key filters (about 1% false
 * positives), and the share of a memtable's size given to its own whole-key filter. */
#define KV_BLOOM_BITS 10
#define KV_MEMTABLE_BLOOM_RATIO 0.02
#define KV_BACKGROUND_FLUSHES 4
#define KV_BACKGROUND_COMPACTIONS 2

/* ---- the row cache (kv_rowcache.c) ----------------------------------------------------- */

/* Stored rows found by lookups, by store id and key; bounded in bytes, least recently used
 * first out, safe from any thread. NULL when the environment has none. */
typedef struct kv_rowcache kv_rowcache;

/* A new cache of capacity bytes; *out is NULL (no cache) when capacity is 0. */
int kv_rowcache_new(int64_t capacity, kv_rowcache **out, fr_error *err);
void kv_rowcache_free(kv_rowcache *c);
/* An id for a newly opened store, never given out before in this process. */
uint64_t kv_rowcache_store_id(void);
/* Appends the row of (store, key) to out when the cache has it: true, with its place in
 * out in *at and *len. False when it has not (or out could not grow). */
bool kv_rowcache_get(kv_rowcache *c, uint64_t store, const uint8_t *key, size_t klen,
                     fr_buf *out, size_t *at, size_t *len);
/* Puts a copy of the row of (store, key), read from a snapshot taken while the store's
 * generation was `expect`, unless the generation has changed since (fr_kv.gen). Sets
 * *cached (the store's fr_kv.cached) first. */
void kv_rowcache_put(kv_rowcache *c, uint64_t store, const uint8_t *key, size_t klen,
                     const uint8_t *val, size_t vlen, const _Atomic uint64_t *gen,
                     uint64_t expect, atomic_bool *cached);
void kv_rowcache_erase(kv_rowcache *c, uint64_t store, const uint8_t *key, size_t klen);
/* The bytes the cache holds (0 for NULL). */
int64_t kv_rowcache_bytes(const kv_rowcache *c);

struct fr_kv_env {
    atomic_int refs;
    rocksdb_cache_t *cache;
    kv_rowcache *rows;     /* NULL: no row cache */
    size_t memtable_bytes; /* each store's write_buffer_size */
    int64_t flush_trigger; /* active memtables past this: the writing store flushes */
    int64_t flush_min;     /* ... when its own active memtable holds at least this */
    _Atomic int64_t active_bytes;
};

/* Sets the environment's cache and memtable size on a store's options. */
void kv_env_apply(const fr_kv_env *env, rocksdb_options_t *opts);

/* ---- the store -------------------------------------------------------------------------- */

typedef struct kv_writer {
    int64_t id;
    int32_t seq;
    int64_t base;  /* the offset of that batch's changelog, or -1 */
    uint64_t used; /* a clock for evicting the least recently used writer */
} kv_writer;

/* A write whose changelog is in the log and whose rows are not yet in RocksDB: it waits
 * for the log's fsync, then applies them in its turn. Its pending table stays with it
 * so that the writes computed meanwhile find its rows (the dirty entries) before RocksDB's.
 * The list holds the in-flight writes of a store oldest first; done ones (applied or
 * failed: their owner no longer touches them) are freed by the next write under mu. */
typedef struct kv_inflight {
    struct kv_inflight *next;
    kv_pending rows;          /* the write's pending table */
    rocksdb_writebatch_t *wb; /* its rows and the meta key, in key order */
    const kv_entry *kmin, *kmax; /* its smallest and largest changed keys (in rows) */
    fr_log_ticket ticket;
    int64_t applied;          /* the log's end after its changelog */
    int64_t nkeys;            /* the key count after it (-1: unknown) */
    uint64_t turn;            /* its place in the order of applies */
    atomic_bool done;
} kv_inflight;

/* Done in-flight writes kept for reuse (their slots and write batch), per store, and the
 * largest write batch a spare keeps: an idle store holds little more than one write's
 * buffers. */
#define KV_INFLIGHT_SPARES 2
#define KV_INFLIGHT_WB_KEEP_BYTES (1 << 20)

struct fr_kv {
    char *name;
    char *dir;
    fr_log *log;

    fr_schema *schema; /* our own copy */
    int ncols;
    int *pk;
    int npk;
    fr_type *pk_types;
    bool *is_pk; /* per column */
    fr_merge_engine merge;
    int version_column;
    fr_agg_fn *aggs;   /* per column (aggregation only) */
    char **delims;     /* per column: listagg delimiter, or NULL */
    fr_delete_behavior delete_behavior;
    fr_changelog_image image;
    fr_compression compression;

    rocksdb_t *db;
    rocksdb_column_family_handle_t *cf; /* the default column family, for MultiGet */
    rocksdb_options_t *opts;
    rocksdb_writeoptions_t *wopts;
    rocksdb_readoptions_t *ropts;
    rocksdb_readoptions_t *mem_ropts; /* the memtables alone, data pinned (kv_pending_load) */
    fr_buf enc;               /* the encoded changelog of every write (mu) */

    fr_kv_env *env;    /* a reference */
    bool log_unsynced;

    pthread_mutex_t mu;
    pthread_mutex_t flush_mu; /* serializes flushes; taken after mu when both are held */
    pthread_mutex_t apply_mu; /* the applies to RocksDB, one at a time in turn order */
    pthread_cond_t apply_cond; /* signalled after every apply */
    uint64_t apply_turn;      /* the turn of the next apply (apply_mu) */
    uint64_t next_turn;       /* the turn of the next append (mu) */
    kv_inflight *inflight, *inflight_last; /* oldest first (mu) */
    kv_inflight *spares;      /* done ones kept for reuse (mu) */
    int nspares;
    int64_t written;          /* the log's end after the last write appended (mu) */
    int64_t written_nkeys;    /* the key count after it (mu) */
    _Atomic int64_t applied;
    _Atomic int64_t persisted;      /* see fr_kv_persisted_offset */
    _Atomic int64_t dirty_since_ms; /* monotonic ms of the first write since the flush
                                       began that last cleared it; 0: none */
    int64_t mem_reported;           /* this store's part of env->active_bytes (apply_mu) */
    _Atomic int64_t nkeys; /* exact for FULL images; -1 when unknown */
    /* The row cache's view of the store (kv_rowcache.c). gen is odd while a write changes
     * RocksDB: an apply bumps it, writes its batch, removes its keys from the cache when
     * `cached` says the cache may hold some, and bumps it again. A lookup reads gen, takes its snapshot,
     * probes the cache and reads gen again: its hits are used only when both readings are
     * the same even number (no write changed anything in between, so the hits and the
     * snapshot agree); the rows it then reads from the snapshot are put into the cache
     * only while gen is still that number. */
    uint64_t cache_id;
    _Atomic uint64_t gen;
    atomic_bool cached;    /* a lookup put rows of this store into the row cache (for good) */
    atomic_int failed;     /* an FR_E* code once a write failed after its append (its fsync
                              or its RocksDB write): the state is behind the log */
    kv_pending pending;
    kv_writer *writers;
    int nwriters;
    uint64_t writer_clock;
};

/* kv_write.c: waits (mu held) until every write appended so far is applied or failed, so
 * that the log holds nothing the state lacks; FR_ESTATE when one failed. */
int kv_drain_locked(fr_kv *kv, fr_error *err);
/* Frees the in-flight writes and their spares (no write may be running). */
void kv_inflight_free_all(fr_kv *kv);

/* kv_flush.c: what a successful write does for durability and the memtable budget
 * (apply_mu held): notes the first unflushed change's time, and flushes this store's memtable in the
 * background when the environment's memtables are past their budget. */
void kv_after_write(fr_kv *kv);
/* Monotonic milliseconds (never 0). */
int64_t kv_now_ms(void);
/* Flushes with flush_mu held: the log up to upto, then RocksDB, waiting; persisted := upto. */
int kv_flush_locked(fr_kv *kv, int64_t upto, fr_error *err);

/* kv_store.c: the meta value, and a RocksDB error turned into an fr_error (frees errptr). */
void kv_meta_encode(uint8_t out[KV_META_VALUE_LEN], int64_t applied, int64_t nkeys);
int kv_rocks_fail(fr_kv *kv, char *errptr, const char *what, fr_error *err);

/* Encodes the data key of a row (values: one per column; only the key columns are read),
 * or of a prefix of nkey key values given in key order (key_values). Appends to out, the
 * data prefix first. NULL key values are FR_EINVAL. */
int kv_key_of_row(const fr_kv *kv, const fr_value *row, fr_buf *out, fr_error *err);
int kv_key_of_values(const fr_kv *kv, const fr_value *key_values, int nkey, fr_buf *out,
                     fr_error *err);
/* The cells of row `row` of b (the table schema) into values[ncols]. */
void kv_row_values(const fr_batch *b, int64_t row, int ncols, fr_value *values);
/* Decodes a stored value into values[ncols] (strings point into p). */
int kv_row_decode(const fr_kv *kv, const uint8_t *p, size_t n, fr_value *values,
                  fr_error *err);

/* ---- merge engines (kv_merge.c) ---------------------------------------------------------- */

/* The row an upsert leaves when the key holds `old` (never NULL here): last_row (partial
 * when targets is set: a per-column flag array), first_row, versioned, aggregation. out has
 * ncols values; strings may point into old, in or arena memory. */
int kv_merge_upsert(const fr_kv *kv, const fr_value *old, const fr_value *in,
                    const bool *targets, fr_arena *arena, fr_value *out, fr_error *err);
/* A delete with target columns: *remove when every non-target column of old is NULL, else
 * out is old with the non-key target columns set to NULL. */
void kv_merge_partial_delete(const fr_kv *kv, const fr_value *old, const bool *targets,
                             fr_value *out, bool *remove);

/* ---- aggregate functions (kv_agg.c) ------------------------------------------------------ */

/* Combines the stored accumulator acc with the input in (both of type t, either may be
 * NULL) into out (type t). Memory of new strings and bitmaps comes from arena. Errors:
 * FR_EINVAL for a malformed bitmap; the caller names the column. */
int kv_agg_apply(fr_agg_fn fn, const fr_type *t, const char *delim, const fr_value *acc,
                 const fr_value *in, fr_arena *arena, fr_value *out, fr_error *err);
/* Checks an input value of an rbm32/rbm64 column (others: nothing to check). */
int kv_agg_check_input(fr_agg_fn fn, const fr_value *in, fr_error *err);

/* ---- serialized RoaringBitmaps (kv_roaring.c) --------------------------------------------- */

#define KV_RBM_BYTES_MAX FR_ROW_BYTES_MAX

/* Checks that p starts with a well-formed 32-bit RoaringBitmap in the portable format
 * (cookie, container headers, offsets, container contents sorted and consistent with their
 * cardinalities); *used gets its size. FR_EINVAL with the byte position otherwise. */
int kv_rbm32_check(const uint8_t *p, size_t n, size_t *used, fr_error *err);
/* The same for the portable 64-bit format: uint64 count of buckets, then per bucket the
 * uint32 high 32 bits (strictly ascending) and a portable 32-bit bitmap of the low bits. */
int kv_rbm64_check(const uint8_t *p, size_t n, size_t *used, fr_error *err);
/* Unions two serialized bitmaps (checked here) into a new serialized bitmap in arena. */
int kv_rbm32_union(const uint8_t *a, size_t an, const uint8_t *b, size_t bn, fr_arena *arena,
                   const uint8_t **out, size_t *outn, fr_error *err);
int kv_rbm64_union(const uint8_t *a, size_t an, const uint8_t *b, size_t bn, fr_arena *arena,
                   const uint8_t **out, size_t *outn, fr_error *err);

#endif
