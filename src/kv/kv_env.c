/* kv_env.c — what the KV stores of one engine share: one LRU block cache, the row cache of
 * lookups (kv_rowcache.c), and the budget of their memtables (kv.h, fr_kv_env, says how it
 * is kept without a write buffer manager).
 *
 * Invariants: the cache is RocksDB's and reference counted on its side too (every store's
 * table options hold it), so freeing the environment's handle never pulls it from under
 * an open store; active_bytes is the sum of the open stores' mem_reported. */
#include "kv/kv_int.h"

void fr_kv_env_options_default(fr_kv_env_options *o)
{
    o->block_cache_bytes = 64 << 20;
    o->write_buffer_bytes = 256 << 20;
    o->row_cache_bytes = 128 << 20;
}

int fr_kv_env_new(const fr_kv_env_options *o, fr_kv_env **out, fr_error *err)
{
    *out = NULL;
    fr_kv_env_options d;
    if (!o) {
        fr_kv_env_options_default(&d);
        o = &d;
    }
    FR_CHECK(o->block_cache_bytes >= 0, FR_EINVAL, err,
             "kv: a block cache of %lld bytes is negative", (long long)o->block_cache_bytes);
    FR_CHECK(o->write_buffer_bytes >= KV_BUFFER_BYTES_MIN, FR_EINVAL, err,
             "kv: a write buffer budget of %lld bytes is below the minimum of 1 MiB",
             (long long)o->write_buffer_bytes);
    FR_CHECK(o->row_cache_bytes >= 0, FR_EINVAL, err,
             "kv: a row cache of %lld bytes is negative", (long long)o->row_cache_bytes);
    fr_kv_env *env = fr_calloc(1, sizeof *env);
    FR_CHECK(env, FR_ENOMEM, err, "kv: out of memory for the shared KV environment");
    env->cache = rocksdb_cache_create_lru((size_t)o->block_cache_bytes);
    if (!env->cache) {
        fr_free(env);
        return fr_fail(err, FR_ENOMEM, "kv: out of memory for a block cache");
    }
    int rc = kv_rowcache_new(o->row_cache_bytes, &env->rows, err);
    if (rc < 0) {
        rocksdb_cache_destroy(env->cache);
        fr_free(env);
        return rc;
    }
    atomic_init(&env->refs, 1);
    atomic_init(&env->active_bytes, 0);
    int64_t half = o->write_buffer_bytes / 2;
    env->memtable_bytes = (size_t)(half < KV_MEMTABLE_BYTES_MAX ? half : KV_MEMTABLE_BYTES_MAX);
    env->flush_trigger = o->write_buffer_bytes / 8 * 7;
    env->flush_min = o->write_buffer_bytes / 128;
    if (env->flush_min < 4 * KV_ARENA_BLOCK_BYTES) env->flush_min = 4 * KV_ARENA_BLOCK_BYTES;
    *out = env;
    return FR_OK;
}

void fr_kv_env_retain(fr_kv_env *env)
{
    atomic_fetch_add(&env->refs, 1);
}

void fr_kv_env_release(fr_kv_env *env)
{
    if (!env || atomic_fetch_sub(&env->refs, 1) != 1) return;
    rocksdb_cache_destroy(env->cache);
    kv_rowcache_free(env->rows);
    fr_free(env);
}

int64_t fr_kv_env_memtable_bytes(fr_kv_env *env)
{
    return atomic_load(&env->active_bytes);
}

int64_t fr_kv_env_block_cache_bytes(fr_kv_env *env)
{
    return (int64_t)rocksdb_cache_get_usage(env->cache);
}

int64_t fr_kv_env_row_cache_bytes(fr_kv_env *env)
{
    return kv_rowcache_bytes(env->rows);
}

/* Besides the cache and the memtable size: with many stores flushing small memtables for
 * the budget, one store may hold two sealed memtables while it writes a third, and the
 * background threads (process-wide in RocksDB's default environment) are raised so that the
 * flushes of many stores overlap their fsyncs instead of queuing behind one thread. */
void kv_env_apply(const fr_kv_env *env, rocksdb_options_t *opts)
{
    rocksdb_options_set_max_write_buffer_number(opts, KV_WRITE_BUFFERS);
    rocksdb_options_set_arena_block_size(opts, KV_ARENA_BLOCK_BYTES);
    rocksdb_options_set_max_background_flushes(opts, KV_BACKGROUND_FLUSHES);
    rocksdb_options_set_max_background_compactions(opts, KV_BACKGROUND_COMPACTIONS);
    rocksdb_block_based_table_options_t *bbto = rocksdb_block_based_options_create();
    rocksdb_block_based_options_set_block_cache(bbto, env->cache);
    /* Whole-key bloom filters: a write reads the stored row of every key it touches, and
     * a new key would otherwise be searched for in the memtable and in every level's
     * index and data blocks. The policy belongs to the table options once set. */
    rocksdb_block_based_options_set_filter_policy(bbto,
                                                  rocksdb_filterpolicy_create_bloom_full(KV_BLOOM_BITS));
    rocksdb_block_based_options_set_whole_key_filtering(bbto, 1);
    /* A hash index inside each data block answers a point read without its binary search. */
    rocksdb_block_based_options_set_data_block_index_type(
        bbto, rocksdb_block_based_table_data_block_index_type_binary_search_and_hash);
    rocksdb_block_based_options_set_data_block_hash_ratio(bbto, 0.75);
    rocksdb_options_set_block_based_table_factory(opts, bbto);
    rocksdb_block_based_options_destroy(bbto);
    rocksdb_options_set_write_buffer_size(opts, env->memtable_bytes);
    rocksdb_options_set_memtable_whole_key_filtering(opts, 1);
    rocksdb_options_set_memtable_prefix_bloom_size_ratio(opts, KV_MEMTABLE_BLOOM_RATIO);
    /* Flushes and compactions hand their files to the disk a MiB at a time instead of
     * syncing a whole file at its end: that burst stalled the changelogs' fsyncs, on
     * which every primary-key write waits. */
    rocksdb_options_set_bytes_per_sync(opts, 1 << 20);
}
