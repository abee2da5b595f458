/* engine_config.c — the engine's configuration keys ("log.flush", "log.flush.interval",
 * "log.segment.bytes", "log.retention.check-interval", and the KV stores'
 * "kv.flush.interval", "kv.flush.records", "kv.block-cache.bytes", "kv.write-buffer.bytes",
 * and the lake's "lake.warehouse", "lake.tiering.threads"):
 * parsing one key's text value into fr_engine_options, for the command line, the public API
 * and later the server's config file. docs/CONFIGURATION.md lists the keys with their defaults and meanings; a key added
 * here is added there.
 *
 * A value is checked against the same limits the engine and the log apply when they open,
 * so a bad value is reported where the user typed it, naming the key. */
#include "engine/engine_int.h"

#include <strings.h>

/* The log's own limit: offset-index positions are 32-bit. */
#define FR_ENGINE_SEGMENT_BYTES_MAX ((int64_t)1 << 31)

static int set_flush(fr_engine_options *o, const char *key, const char *value, fr_error *err)
{
    if (strcasecmp(value, "append") == 0) o->flush = FR_FLUSH_EVERY_APPEND;
    else if (strcasecmp(value, "interval") == 0) o->flush = FR_FLUSH_INTERVAL;
    else if (strcasecmp(value, "none") == 0) o->flush = FR_FLUSH_NONE;
    else
        return fr_fail(err, FR_EINVAL, "%s: '%s' is not a flush policy; use append, interval "
                       "or none", key, value);
    return FR_OK;
}

static int set_duration(const char *key, const char *value, int64_t min, int64_t *out,
                        fr_error *err)
{
    int64_t ms;
    fr_error perr = {0};
    if (fr_parse_duration_ms(value, &ms, &perr) < 0)
        return fr_fail(err, FR_EINVAL, "%s: %s", key, perr.msg);
    FR_CHECK(ms >= min, FR_EINVAL, err, "%s: %s is too short; give at least %lld ms", key,
             value, (long long)min);
    *out = ms;
    return FR_OK;
}

static int set_flush_interval(fr_engine_options *o, const char *key, const char *value,
                              fr_error *err)
{
    return set_duration(key, value, 1, &o->flush_interval_ms, err);
}

static int set_segment_bytes(fr_engine_options *o, const char *key, const char *value,
                             fr_error *err)
{
    int64_t n;
    fr_error perr = {0};
    if (fr_parse_bytes(value, &n, &perr) < 0)
        return fr_fail(err, FR_EINVAL, "%s: %s", key, perr.msg);
    FR_CHECK(n >= 1 && n <= FR_ENGINE_SEGMENT_BYTES_MAX, FR_EINVAL, err,
             "%s: %s is outside 1 byte..2gb", key, value);
    o->segment_bytes = n;
    return FR_OK;
}

static int set_retention_check(fr_engine_options *o, const char *key, const char *value,
                               fr_error *err)
{
    /* 0 turns the background pass off (it still runs once at open). */
    return set_duration(key, value, 0, &o->retention_check_interval_ms, err);
}

static int set_kv_flush_interval(fr_engine_options *o, const char *key, const char *value,
                                 fr_error *err)
{
    /* 0 leaves the stores to the record count, RocksDB's own flushes and close. */
    return set_duration(key, value, 0, &o->kv_flush_interval_ms, err);
}

static int set_kv_flush_records(fr_engine_options *o, const char *key, const char *value,
                                fr_error *err)
{
    int64_t n;
    fr_error perr = {0};
    if (fr_parse_i64(value, &n, &perr) < 0)
        return fr_fail(err, FR_EINVAL, "%s: %s", key, perr.msg);
    FR_CHECK(n >= 0, FR_EINVAL, err, "%s: %s is negative; give a count of records, or 0 "
             "for no limit", key, value);
    o->kv_flush_records = n;
    return FR_OK;
}

static int set_size_at_least(const char *key, const char *value, int64_t min,
                             const char *min_text, int64_t *out, fr_error *err)
{
    int64_t n;
    fr_error perr = {0};
    if (fr_parse_bytes(value, &n, &perr) < 0)
        return fr_fail(err, FR_EINVAL, "%s: %s", key, perr.msg);
    FR_CHECK(n >= min, FR_EINVAL, err, "%s: %s is below the minimum of %s", key, value,
             min_text);
    *out = n;
    return FR_OK;
}

static int set_kv_block_cache(fr_engine_options *o, const char *key, const char *value,
                              fr_error *err)
{
    return set_size_at_least(key, value, 0, "0", &o->kv_block_cache_bytes, err);
}

static int set_kv_row_cache(fr_engine_options *o, const char *key, const char *value,
                            fr_error *err)
{
    return set_size_at_least(key, value, 0, "0", &o->kv_row_cache_bytes, err);
}

static int set_kv_write_buffer(fr_engine_options *o, const char *key, const char *value,
                               fr_error *err)
{
    return set_size_at_least(key, value, 1 << 20, "1mb", &o->kv_write_buffer_bytes, err);
}

/* The texts of lake.warehouse: the options keep a pointer, but the text they are set from
 * (a config file's buffer, an argument) may not outlive them, so each distinct path is
 * copied once into this list, which lives until the process ends (a handful of paths). */
typedef struct interned_path {
    struct interned_path *next;
    char text[];
} interned_path;
static interned_path *g_paths;
static pthread_mutex_t g_paths_mu = PTHREAD_MUTEX_INITIALIZER;

static const char *intern_path(const char *value)
{
    pthread_mutex_lock(&g_paths_mu);
    interned_path *p = g_paths;
    while (p && strcmp(p->text, value) != 0) p = p->next;
    if (!p) {
        size_t n = strlen(value);
        p = fr_malloc(sizeof *p + n + 1);
        if (p) {
            memcpy(p->text, value, n + 1);
            p->next = g_paths;
            g_paths = p;
        }
    }
    pthread_mutex_unlock(&g_paths_mu);
    return p ? p->text : NULL;
}

static int set_lake_warehouse(fr_engine_options *o, const char *key, const char *value,
                              fr_error *err)
{
    FR_CHECK(value[0] != '\0', FR_EINVAL, err, "%s: give a directory (the default is "
             "DATA_DIR/lake)", key);
    FR_CHECK(strlen(value) < FR_ENGINE_PATH_BYTES_MAX - 2 * FR_NAME_BYTES_MAX - 512,
             FR_EINVAL, err, "%s: the path of %zu bytes is too long", key, strlen(value));
    const char *copy = intern_path(value);
    FR_CHECK(copy, FR_ENOMEM, err, "%s: out of memory", key);
    o->lake_warehouse = copy;
    return FR_OK;
}

#define FR_LAKE_TIERING_THREADS_MAX 64

static int set_lake_tiering_threads(fr_engine_options *o, const char *key, const char *value,
                                    fr_error *err)
{
    int64_t n;
    fr_error perr = {0};
    if (fr_parse_i64(value, &n, &perr) < 0)
        return fr_fail(err, FR_EINVAL, "%s: %s", key, perr.msg);
    FR_CHECK(n >= 0 && n <= FR_LAKE_TIERING_THREADS_MAX, FR_EINVAL, err,
             "%s: %s is outside 0..%d (0: no background tiering)", key, value,
             FR_LAKE_TIERING_THREADS_MAX);
    o->lake_tiering_threads = (int)n;
    return FR_OK;
}

typedef struct engine_key {
    const char *key;
    int (*set)(fr_engine_options *o, const char *key, const char *value, fr_error *err);
} engine_key;

static const engine_key ENGINE_KEYS[] = {
    {"log.flush", set_flush},
    {"log.flush.interval", set_flush_interval},
    {"log.segment.bytes", set_segment_bytes},
    {"log.retention.check-interval", set_retention_check},
    {"kv.flush.interval", set_kv_flush_interval},
    {"kv.flush.records", set_kv_flush_records},
    {"kv.block-cache.bytes", set_kv_block_cache},
    {"kv.write-buffer.bytes", set_kv_write_buffer},
    {"lake.warehouse", set_lake_warehouse},
    {"lake.tiering.threads", set_lake_tiering_threads},
    {"kv.row-cache.bytes", set_kv_row_cache}, /* last: the keys keep their indexes */
};
#define ENGINE_NKEYS ((int)(sizeof ENGINE_KEYS / sizeof ENGINE_KEYS[0]))

int fr_engine_options_set(fr_engine_options *o, const char *key, const char *value,
                          fr_error *err)
{
    FR_CHECK(key != NULL && value != NULL, FR_EINVAL, err, "configuration: a NULL key or value");
    for (int i = 0; i < ENGINE_NKEYS; i++)
        if (strcmp(ENGINE_KEYS[i].key, key) == 0) return ENGINE_KEYS[i].set(o, key, value, err);
    return fr_fail(err, FR_EINVAL,
                   "unknown configuration key '%s'; the keys are log.flush, log.flush.interval, "
                   "log.segment.bytes, log.retention.check-interval, kv.flush.interval, "
                   "kv.flush.records, kv.block-cache.bytes, kv.row-cache.bytes, "
                   "kv.write-buffer.bytes, lake.warehouse and lake.tiering.threads",
                   key);
}

const char *fr_engine_option_key(int i)
{
    return i >= 0 && i < ENGINE_NKEYS ? ENGINE_KEYS[i].key : NULL;
}
