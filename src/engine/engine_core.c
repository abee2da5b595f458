/* engine_core.c — opening and closing a data dir (marker, lock, catalog, cleanup of files
 * left by an interrupted DROP), the catalog operations (databases and tables), and the
 * retention pass with its background thread.
 *
 * Invariants: while an engine is open it holds an exclusive flock on meta/LOCK, so no other
 * engine (in this or another process) works on the same files; the catalog in memory and
 * meta/catalog.json agree after every successful catalog call (a failed write is rolled
 * back in memory); table ids are never reused within a data dir. */
#include "engine/engine_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#define FR_RETENTION_INTERVAL_DEFAULT_MS (5 * 60 * 1000)
#define FR_AUTO_PARTITION_INTERVAL_DEFAULT_MS (10 * 60 * 1000)
#define FR_KV_FLUSH_INTERVAL_DEFAULT_MS (10 * 60 * 1000)
#define FR_KV_FLUSH_RECORDS_DEFAULT 1000000
/* How often the background thread looks for KV stores whose flush is due, at most. */
#define FR_KV_FLUSH_CHECK_MS 5000

void fr_engine_options_default(fr_engine_options *o)
{
    memset(o, 0, sizeof *o);
    o->flush = FR_FLUSH_EVERY_APPEND;
    o->flush_interval_ms = 1000;
    o->segment_bytes = 1LL << 30;
    o->retention_check_interval_ms = FR_RETENTION_INTERVAL_DEFAULT_MS;
    o->auto_partition_check_interval_ms = FR_AUTO_PARTITION_INTERVAL_DEFAULT_MS;
    o->kv_flush_interval_ms = FR_KV_FLUSH_INTERVAL_DEFAULT_MS;
    o->kv_flush_records = FR_KV_FLUSH_RECORDS_DEFAULT;
    fr_kv_env_options kv;
    fr_kv_env_options_default(&kv);
    o->kv_block_cache_bytes = kv.block_cache_bytes;
    o->kv_row_cache_bytes = kv.row_cache_bytes;
    o->kv_write_buffer_bytes = kv.write_buffer_bytes;
    o->lake_tiering_threads = 2;
}

/* The period of the background KV flush check: often enough for the record limit, never
 * longer than the age limit; 0 when both are off. */
static int64_t kv_flush_check_ms(const fr_engine_options *o)
{
    if (o->kv_flush_interval_ms <= 0 && o->kv_flush_records <= 0) return 0;
    if (o->kv_flush_interval_ms > 0 && o->kv_flush_interval_ms < FR_KV_FLUSH_CHECK_MS)
        return o->kv_flush_interval_ms;
    return FR_KV_FLUSH_CHECK_MS;
}

const char *fr_engine_data_dir(const fr_engine *e) { return e->data_dir; }

static int path_join(char *out, size_t cap, const char *a, const char *b, fr_error *err)
{
    int n = snprintf(out, cap, "%s/%s", a, b);
    FR_CHECK(n > 0 && (size_t)n < cap, FR_EINVAL, err, "path too long: %s/%s", a, b);
    return FR_OK;
}

/* ---- opening: marker, lock, catalog ---------------------------------------------------- */

/* Whether dir holds nothing but what a start of firth may leave (meta/ with only LOCK). */
static int dir_is_fresh(const char *dir, bool *fresh, fr_error *err)
{
    DIR *d = opendir(dir);
    if (!d) return fr_fail_errno(err, errno, "open directory %s", dir);
    *fresh = true;
    struct dirent *de;
    while (*fresh && (de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
        if (strcmp(de->d_name, "meta") != 0) {
            *fresh = false;
            break;
        }
        char meta[FR_ENGINE_PATH_BYTES_MAX];
        snprintf(meta, sizeof meta, "%s/meta", dir);
        DIR *m = opendir(meta);
        struct dirent *me;
        while (m && (me = readdir(m)) != NULL)
            if (strcmp(me->d_name, ".") && strcmp(me->d_name, "..") && strcmp(me->d_name, "LOCK"))
                *fresh = false;
        if (m) closedir(m);
        else *fresh = false;
    }
    closedir(d);
    return FR_OK;
}

static int check_marker(const char *path, fr_error *err)
{
    uint8_t *data = NULL;
    size_t len = 0;
    FR_TRY(fr_read_file(path, 256, &data, &len, err));
    bool ok = len == strlen(FR_ENGINE_MARKER) && memcmp(data, FR_ENGINE_MARKER, len) == 0;
    char said[64];
    size_t n = len < sizeof said - 1 ? len : sizeof said - 1;
    for (size_t i = 0; i < n; i++) said[i] = (data[i] >= 32 && data[i] < 127) ? (char)data[i] : ' ';
    said[n] = '\0';
    while (n > 0 && said[n - 1] == ' ') said[--n] = '\0';
    fr_free(data);
    FR_CHECK(ok, FR_EINVAL, err, "%s says '%s' but this firth reads 'firth data dir v1': open "
             "the data dir with the firth version that wrote it", path, said);
    return FR_OK;
}

static int take_lock(fr_engine *e, fr_error *err)
{
    char path[FR_ENGINE_PATH_BYTES_MAX];
    FR_TRY(path_join(path, sizeof path, e->meta_dir, "LOCK", err));
    e->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (e->lock_fd < 0) return fr_fail_errno(err, errno, "open %s", path);
    if (flock(e->lock_fd, LOCK_EX | LOCK_NB) != 0) {
        int errnum = errno;
        if (errnum != EWOULDBLOCK) return fr_fail_errno(err, errnum, "lock %s", path);
        char buf[32] = {0};
        ssize_t n = pread(e->lock_fd, buf, sizeof buf - 1, 0);
        long long pid = 0;
        if (n > 0) {
            buf[n] = '\0';
            pid = strtoll(buf, NULL, 10);
        }
        return fr_fail(err, FR_ESTATE, "data dir %s is in use by another firth process "
                       "(pid %lld); stop it or use another data dir", e->data_dir, pid);
    }
    char pid[32];
    int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    if (ftruncate(e->lock_fd, 0) != 0 || pwrite(e->lock_fd, pid, (size_t)n, 0) != n)
        return fr_fail_errno(err, errno, "write %s", path);
    return FR_OK;
}

static bool dir_is_empty_or_missing(const char *path)
{
    DIR *d = opendir(path);
    if (!d) return true;
    bool empty = true;
    struct dirent *de;
    while (empty && (de = readdir(d)) != NULL)
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) empty = false;
    closedir(d);
    return empty;
}

static int init_catalog(fr_engine *e, fr_error *err)
{
    e->dbs = fr_calloc(1, sizeof *e->dbs);
    FR_CHECK(e->dbs, FR_ENOMEM, err, "out of memory creating the catalog");
    e->dbs[0].name = fr_strdup(FR_ENGINE_DEFAULT_DATABASE);
    e->dbs[0].created_ms = fr_now_ms();
    FR_CHECK(e->dbs[0].name, FR_ENOMEM, err, "out of memory creating the catalog");
    e->ndbs = 1;
    e->next_table_id = 1;
    return fr_catalog_save(e, err);
}

static int open_catalog(fr_engine *e, fr_error *err)
{
    char marker[FR_ENGINE_PATH_BYTES_MAX], catalog[FR_ENGINE_PATH_BYTES_MAX],
        logdir[FR_ENGINE_PATH_BYTES_MAX];
    FR_TRY(path_join(marker, sizeof marker, e->meta_dir, "FIRTH", err));
    FR_TRY(path_join(catalog, sizeof catalog, e->meta_dir, "catalog.json", err));
    FR_TRY(path_join(logdir, sizeof logdir, e->data_dir, "log", err));
    /* The marker is written before the catalog, so a crash in between leaves a marker
     * without a catalog, which is a new data dir as long as no table data exists. */
    if (!fr_path_exists(marker))
        FR_TRY(fr_write_file_atomic(marker, FR_ENGINE_MARKER, strlen(FR_ENGINE_MARKER), err));
    FR_TRY(check_marker(marker, err));
    if (fr_path_exists(catalog)) FR_TRY(fr_catalog_load(e, catalog, err));
    else if (dir_is_empty_or_missing(logdir)) FR_TRY(init_catalog(e, err));
    else
        return fr_fail(err, FR_EINVAL, "%s is missing but %s holds table data: restore "
                       "catalog.json from a backup", catalog, logdir);
    return fr_mkdirs(logdir, err);
}

/* Removes the log and KV directories of tables that are not in the catalog, and those of
 * partitions that are not: a DROP removes the catalog entry first and the files after, so a
 * crash in between leaves them. */
static void remove_orphans_in(fr_engine *e, const char *sub)
{
    char logdir[FR_ENGINE_PATH_BYTES_MAX];
    snprintf(logdir, sizeof logdir, "%s/%s", e->data_dir, sub);
    DIR *d = opendir(logdir);
    if (!d) return;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        int64_t id;
        fr_error err = {0};
        if (de->d_name[0] < '0' || de->d_name[0] > '9' || fr_parse_i64(de->d_name, &id, &err) < 0)
            continue;
        bool known = false;
        for (int i = 0; i < e->ntables && !known; i++) known = e->tables[i]->id == id;
        if (known) continue;
        char path[FR_ENGINE_PATH_BYTES_MAX];
        if (path_join(path, sizeof path, logdir, de->d_name, &err) < 0) continue;
        FR_INFO("removing %s: files of a dropped table", path);
        if (fr_remove_tree(path, &err) < 0) FR_WARN("%s", err.msg);
    }
    closedir(d);
}

static void remove_orphans(fr_engine *e)
{
    remove_orphans_in(e, "log");
    remove_orphans_in(e, "kv");
    for (int i = 0; i < e->ntables; i++) fr_partition_remove_orphans(e->tables[i]);
}

static void *retention_main(void *arg);

static void init_stop_signal(fr_engine *e)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&e->stop_cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&e->stop_mu, NULL);
}

static int start_retention(fr_engine *e, fr_error *err)
{
    if (e->opts.retention_check_interval_ms <= 0 && e->opts.auto_partition_check_interval_ms <= 0 &&
        e->opts.flush != FR_FLUSH_INTERVAL && kv_flush_check_ms(&e->opts) == 0)
        return FR_OK;
    int rc = pthread_create(&e->retention_thread, NULL, retention_main, e);
    FR_CHECK(rc == 0, FR_EIO, err, "start the retention thread: %s", strerror(rc));
    e->retention_running = true;
    return FR_OK;
}

int fr_engine_open(const fr_engine_options *opts, fr_engine **out, fr_error *err)
{
    FR_CHECK(opts && opts->data_dir && opts->data_dir[0], FR_EINVAL, err,
             "no data dir given");
    FR_CHECK(opts->flush != FR_FLUSH_INTERVAL || opts->flush_interval_ms > 0, FR_EINVAL, err,
             "log.flush.interval of %lld ms must be positive", (long long)opts->flush_interval_ms);
    FR_CHECK(opts->kv_write_buffer_bytes >= (1 << 20), FR_EINVAL, err,
             "kv.write-buffer.bytes of %lld bytes is below the minimum of 1mb",
             (long long)opts->kv_write_buffer_bytes);
    FR_CHECK(opts->kv_block_cache_bytes >= 0, FR_EINVAL, err,
             "kv.block-cache.bytes of %lld bytes is negative",
             (long long)opts->kv_block_cache_bytes);
    FR_CHECK(opts->kv_row_cache_bytes >= 0, FR_EINVAL, err,
             "kv.row-cache.bytes of %lld bytes is negative", (long long)opts->kv_row_cache_bytes);
    size_t dl = strlen(opts->data_dir);
    while (dl > 1 && opts->data_dir[dl - 1] == '/') dl--;
    FR_CHECK(dl < FR_ENGINE_PATH_BYTES_MAX - 512, FR_EINVAL, err, "data dir path too long");
    fr_engine *e = fr_calloc(1, sizeof *e);
    FR_CHECK(e, FR_ENOMEM, err, "out of memory opening the engine");
    e->lock_fd = -1;
    e->opts = *opts;
    e->next_partition_id = 1;
    pthread_mutex_init(&e->mu, NULL);
    init_stop_signal(e);
    int rc = FR_OK;
    e->link = fr_calloc(1, sizeof *e->link);
    if (!e->link) {
        rc = fr_fail(err, FR_ENOMEM, "out of memory opening the engine");
        goto fail;
    }
    atomic_init(&e->link->refs, 1);
    pthread_mutex_init(&e->link->mu, NULL);
    e->link->e = e;
    e->data_dir = fr_strndup(opts->data_dir, dl);
    e->meta_dir = e->data_dir ? fr_malloc(dl + 6) : NULL;
    if (!e->meta_dir) {
        rc = fr_fail(err, FR_ENOMEM, "out of memory opening the engine");
        goto fail;
    }
    snprintf(e->meta_dir, dl + 6, "%s/meta", e->data_dir);
    e->opts.data_dir = e->data_dir;
    fr_kv_env_options kvo = {.block_cache_bytes = opts->kv_block_cache_bytes,
                             .write_buffer_bytes = opts->kv_write_buffer_bytes,
                             .row_cache_bytes = opts->kv_row_cache_bytes};
    FR_GOTO(fr_kv_env_new(&kvo, &e->kv_env, err));
    FR_GOTO(fr_mkdirs(e->data_dir, err));
    char marker[FR_ENGINE_PATH_BYTES_MAX];
    snprintf(marker, sizeof marker, "%s/FIRTH", e->meta_dir);
    if (!fr_path_exists(marker)) {
        bool fresh = false;
        FR_GOTO(dir_is_fresh(e->data_dir, &fresh, err));
        if (!fresh) {
            rc = fr_fail(err, FR_EINVAL, "%s is not empty and is not a firth data dir (it has "
                         "no meta/FIRTH): give an empty or new directory", e->data_dir);
            goto fail;
        }
    }
    FR_GOTO(fr_mkdirs(e->meta_dir, err));
    FR_GOTO(take_lock(e, err));
    FR_GOTO(open_catalog(e, err));
    remove_orphans(e);
    fr_error rerr = {0};
    if (fr_engine_enforce_retention(e, &rerr) < 0) FR_WARN("retention at open: %s", rerr.msg);
    if (fr_engine_auto_partition_pass(e, fr_now_ms(), &rerr) < 0)
        FR_WARN("auto-partitioning at open: %s", rerr.msg);
    FR_GOTO(start_retention(e, err));
    FR_GOTO(fr_tier_pool_start(e, err));
    *out = e;
    return FR_OK;
fail:
    fr_engine_close(e);
    return rc;
}

void fr_engine_close(fr_engine *e)
{
    if (!e) return;
    fr_tier_pool_stop(e); /* rounds in progress give up: the next open resumes them */
    if (e->retention_running) {
        pthread_mutex_lock(&e->stop_mu);
        e->stopping = true;
        pthread_cond_signal(&e->stop_cv);
        pthread_mutex_unlock(&e->stop_mu);
        pthread_join(e->retention_thread, NULL);
    }
    /* Logs close (and flush) with their last handle, which a caller may still hold: what
     * was appended is made durable here all the same. */
    fr_error ferr = {0};
    if (e->opts.flush != FR_FLUSH_NONE && e->tables && fr_engine_flush(e, &ferr) < 0)
        FR_WARN("closing the engine: %s", ferr.msg);
    /* The KV stores close (and flush) with their tables; flushing them here too makes the
     * state durable even for a table a caller still holds. */
    if (e->tables && fr_engine_kv_flush_pass(e, true, &ferr) < 0)
        FR_WARN("closing the engine: %s", ferr.msg);
    if (e->link) { /* tables still held can no longer reach the catalog */
        pthread_mutex_lock(&e->link->mu);
        e->link->e = NULL;
        pthread_mutex_unlock(&e->link->mu);
    }
    for (int i = 0; i < e->ntables; i++)
        if (atomic_load(&e->tables[i]->refs) > 1)
            FR_WARN("closing the engine while table %s is still held", e->tables[i]->qname);
    fr_catalog_clear(e);
    if (e->link && atomic_fetch_sub(&e->link->refs, 1) == 1) {
        pthread_mutex_destroy(&e->link->mu);
        fr_free(e->link);
    }
    fr_kv_env_release(e->kv_env); /* stores still open keep it */
    if (e->lock_fd >= 0) close(e->lock_fd);
    pthread_mutex_destroy(&e->mu);
    pthread_mutex_destroy(&e->stop_mu);
    pthread_cond_destroy(&e->stop_cv);
    fr_free(e->data_dir);
    fr_free(e->meta_dir);
    fr_free(e);
}

/* ---- databases ------------------------------------------------------------------------- */

static int find_db(const fr_engine *e, const char *db)
{
    for (int i = 0; i < e->ndbs; i++)
        if (strcmp(e->dbs[i].name, db) == 0) return i;
    return -1;
}

static int find_table(const fr_engine *e, const char *db, const char *name)
{
    for (int i = 0; i < e->ntables; i++)
        if (strcmp(e->tables[i]->db, db) == 0 && strcmp(e->tables[i]->name, name) == 0) return i;
    return -1;
}

int fr_engine_get_table_locked(fr_engine *e, const char *db, const char *name, fr_table **out,
                               fr_error *err)
{
    char d[FR_NAME_BYTES_MAX + 1], n[FR_NAME_BYTES_MAX + 1];
    FR_TRY(fr_name_normalize("database", db, d, err));
    FR_TRY(fr_name_normalize("table", name, n, err));
    int i = find_table(e, d, n);
    if (i >= 0) {
        fr_table_retain(e->tables[i]);
        *out = e->tables[i];
        return FR_OK;
    }
    if (find_db(e, d) < 0) return fr_fail(err, FR_ENOTFOUND, "database %s does not exist", d);
    return fr_fail(err, FR_ENOTFOUND, "table %s.%s does not exist", d, n);
}

int fr_engine_create_database(fr_engine *e, const char *db, bool if_not_exists, fr_error *err)
{
    char name[FR_NAME_BYTES_MAX + 1];
    FR_TRY(fr_name_normalize("database", db, name, err));
    int rc = FR_OK;
    pthread_mutex_lock(&e->mu);
    if (find_db(e, name) >= 0) {
        if (!if_not_exists) rc = fr_fail(err, FR_EEXIST, "database %s already exists", name);
        goto fail;
    }
    fr_db_entry *dbs = fr_realloc(e->dbs, (size_t)(e->ndbs + 1) * sizeof *dbs);
    char *copy = fr_strdup(name);
    if (dbs) e->dbs = dbs;
    if (!dbs || !copy) {
        fr_free(copy);
        rc = fr_fail(err, FR_ENOMEM, "out of memory creating database %s", name);
        goto fail;
    }
    e->dbs[e->ndbs].name = copy;
    e->dbs[e->ndbs].created_ms = fr_now_ms();
    e->ndbs++;
    rc = fr_catalog_save(e, err);
    if (rc < 0) fr_free(e->dbs[--e->ndbs].name);
fail:
    pthread_mutex_unlock(&e->mu);
    return rc;
}

/* Takes table i out of the catalog array (the caller holds e->mu). */
static fr_table *take_table(fr_engine *e, int i)
{
    fr_table *t = e->tables[i];
    memmove(&e->tables[i], &e->tables[i + 1], (size_t)(e->ntables - i - 1) * sizeof t);
    e->ntables--;
    return t;
}

int fr_engine_drop_database(fr_engine *e, const char *db, bool if_exists, bool cascade,
                            fr_error *err)
{
    char name[FR_NAME_BYTES_MAX + 1];
    FR_TRY(fr_name_normalize("database", db, name, err));
    int rc = FR_OK;
    pthread_mutex_lock(&e->mu);
    int di = find_db(e, name);
    if (di < 0) {
        if (!if_exists) rc = fr_fail(err, FR_ENOTFOUND, "database %s does not exist", name);
        pthread_mutex_unlock(&e->mu);
        return rc;
    }
    int ntab = 0;
    for (int i = 0; i < e->ntables; i++) ntab += strcmp(e->tables[i]->db, name) == 0;
    if (ntab > 0 && !cascade) {
        pthread_mutex_unlock(&e->mu);
        return fr_fail(err, FR_ESTATE, "database %s holds %d table%s: drop them first or "
                       "use DROP DATABASE ... CASCADE", name, ntab, ntab == 1 ? "" : "s");
    }
    /* Save a catalog without the database and its tables; then take them out for good. */
    fr_table **all = e->tables, **kept = fr_calloc((size_t)e->ntables + 1, sizeof *kept);
    fr_table **gone = fr_calloc((size_t)ntab + 1, sizeof *gone);
    if (!kept || !gone) {
        fr_free(kept);
        fr_free(gone);
        pthread_mutex_unlock(&e->mu);
        return fr_fail(err, FR_ENOMEM, "out of memory dropping database %s", name);
    }
    int nall = e->ntables, nkept = 0, ngone = 0;
    for (int i = 0; i < nall; i++) {
        if (strcmp(all[i]->db, name) == 0) gone[ngone++] = all[i];
        else kept[nkept++] = all[i];
    }
    fr_db_entry dbe = e->dbs[di];
    e->tables = kept;
    e->ntables = nkept;
    memmove(&e->dbs[di], &e->dbs[di + 1], (size_t)(e->ndbs - di - 1) * sizeof dbe);
    e->ndbs--;
    rc = fr_catalog_save(e, err);
    if (rc < 0) { /* put everything back as it was */
        memmove(&e->dbs[di + 1], &e->dbs[di], (size_t)(e->ndbs - di) * sizeof dbe);
        e->dbs[di] = dbe;
        e->ndbs++;
        e->tables = all;
        e->ntables = nall;
        fr_free(kept);
        fr_free(gone);
        pthread_mutex_unlock(&e->mu);
        return rc;
    }
    fr_free(all);
    fr_free(dbe.name);
    pthread_mutex_unlock(&e->mu);
    for (int i = 0; i < ngone; i++) {
        atomic_store(&gone[i]->dropped, true);
        fr_table_release(gone[i]);
    }
    fr_free(gone);
    return FR_OK;
}

static int names_sorted_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void fr_names_free(char **names, int count)
{
    if (!names) return;
    for (int i = 0; i < count; i++) fr_free(names[i]);
    fr_free(names);
}

/* Copies the selected names (db == NULL: the databases) into a sorted array. */
static int list_names(fr_engine *e, const char *db, char ***names, int *count, fr_error *err)
{
    int n = db ? e->ntables : e->ndbs, k = 0;
    char **out = fr_calloc((size_t)n + 1, sizeof *out);
    FR_CHECK(out, FR_ENOMEM, err, "out of memory listing names");
    for (int i = 0; i < n; i++) {
        if (db && strcmp(e->tables[i]->db, db) != 0) continue;
        out[k] = fr_strdup(db ? e->tables[i]->name : e->dbs[i].name);
        if (!out[k]) {
            fr_names_free(out, k);
            return fr_fail(err, FR_ENOMEM, "out of memory listing names");
        }
        k++;
    }
    qsort(out, (size_t)k, sizeof *out, names_sorted_cmp);
    *names = out;
    *count = k;
    return FR_OK;
}

void fr_engine_kv_memory_get(fr_engine *e, fr_engine_kv_memory *out)
{
    out->memtable_bytes = fr_kv_env_memtable_bytes(e->kv_env);
    out->block_cache_bytes = fr_kv_env_block_cache_bytes(e->kv_env);
    out->row_cache_bytes = fr_kv_env_row_cache_bytes(e->kv_env);
}

int fr_engine_list_databases(fr_engine *e, char ***names, int *count, fr_error *err)
{
    pthread_mutex_lock(&e->mu);
    int rc = list_names(e, NULL, names, count, err);
    pthread_mutex_unlock(&e->mu);
    return rc;
}

int fr_engine_list_tables(fr_engine *e, const char *db, char ***names, int *count,
                          fr_error *err)
{
    char name[FR_NAME_BYTES_MAX + 1];
    FR_TRY(fr_name_normalize("database", db, name, err));
    pthread_mutex_lock(&e->mu);
    int rc = find_db(e, name) < 0
                 ? fr_fail(err, FR_ENOTFOUND, "database %s does not exist", name)
                 : list_names(e, name, names, count, err);
    pthread_mutex_unlock(&e->mu);
    return rc;
}

/* ---- tables ---------------------------------------------------------------------------- */

/* Whether name is among names (case-insensitively, as columns are found). */
static bool names_have(const char *const *names, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (names[i] && strcasecmp(names[i], name) == 0) return true;
    return false;
}

/* A copy of the spec's schema with id 0: the first version of the new table. Primary key
 * columns become NOT NULL. */
static int first_schema(const fr_table_spec *spec, fr_schema ***out, fr_error *err)
{
    const fr_schema *s = spec->schema;
    int n = fr_schema_num_fields(s);
    FR_CHECK(n >= 1, FR_EINVAL, err, "a table needs at least one column");
    fr_field *fields = fr_calloc((size_t)n, sizeof *fields);
    fr_schema **arr = fr_calloc(1, sizeof *arr);
    int rc = fields && arr ? FR_OK : fr_fail(err, FR_ENOMEM, "out of memory copying a schema");
    for (int i = 0; rc == FR_OK && i < n; i++) {
        fields[i] = *fr_schema_field(s, i);
        if (names_have(spec->primary_key, spec->nprimary_key, fields[i].name))
            fields[i].type.nullable = false;
    }
    if (rc == FR_OK) rc = fr_schema_new(fields, n, 0, &arr[0], err);
    fr_free(fields);
    if (rc < 0) {
        fr_free(arr);
        return rc;
    }
    *out = arr;
    return FR_OK;
}

static int add_table_locked(fr_engine *e, const char *db, const char *name,
                            fr_schema **schemas, fr_table_conf *conf, fr_error *err)
{
    fr_table **tables = fr_realloc(e->tables, (size_t)(e->ntables + 1) * sizeof *tables);
    if (!tables) {
        fr_schema_free(schemas[0]);
        fr_free(schemas);
        fr_table_conf_free(conf);
        return fr_fail(err, FR_ENOMEM, "out of memory creating table %s.%s", db, name);
    }
    e->tables = tables;
    fr_table *t = NULL;
    FR_TRY(fr_table_create_obj(e->next_table_id, db, name, fr_now_ms(), schemas, 1, conf,
                               e->data_dir, &e->opts, e->kv_env, &t, err));
    fr_table_attach(t, e->link);
    e->tables[e->ntables++] = t;
    e->next_table_id++;
    int rc = fr_catalog_save(e, err);
    if (rc < 0) {
        e->next_table_id--;
        fr_table_release(take_table(e, e->ntables - 1));
        return rc;
    }
    fr_table_lake_created(t);
    /* As Fluss, an auto-partitioned table gets its partitions at once. */
    fr_error aerr = {0};
    fr_autop_table_locked(e, t, fr_now_ms(), &aerr);
    return FR_OK;
}

int fr_engine_create_table(fr_engine *e, const fr_table_spec *spec, bool if_not_exists,
                           fr_error *err)
{
    char db[FR_NAME_BYTES_MAX + 1], name[FR_NAME_BYTES_MAX + 1];
    FR_TRY(fr_name_normalize("database", spec->db, db, err));
    FR_TRY(fr_name_normalize("table", spec->name, name, err));
    FR_CHECK(spec->schema, FR_EINVAL, err, "table %s.%s has no schema", db, name);
    FR_CHECK(spec->nprimary_key >= 0 && spec->npartition_keys >= 0 &&
             (spec->nprimary_key == 0 || spec->primary_key) &&
             (spec->npartition_keys == 0 || spec->partition_keys), FR_EINVAL, err,
             "table %s.%s: key lists and their lengths disagree", db, name);
    fr_schema **schemas = NULL;
    FR_TRY(first_schema(spec, &schemas, err));
    fr_table_conf conf;
    fr_table_keys keys = {spec->primary_key, spec->nprimary_key, spec->partition_keys,
                          spec->npartition_keys};
    int rc = fr_table_conf_parse(schemas[0], &keys, spec->options, spec->noptions, &conf, err);
    fr_error zerr = {0};
    if (rc == FR_OK && conf.autop.zone && fr_autop_check_zone(conf.autop.zone, true, &zerr) < 0) {
        rc = fr_fail(err, FR_EINVAL, "option table.auto-partition.time-zone = '%.64s': %s",
                     conf.autop.zone, zerr.msg);
        fr_table_conf_free(&conf);
    }
    if (rc < 0) {
        fr_error_wrap(err, "table %s.%s", db, name);
        fr_schema_free(schemas[0]);
        fr_free(schemas);
        return rc;
    }
    pthread_mutex_lock(&e->mu);
    if (find_db(e, db) < 0) rc = fr_fail(err, FR_ENOTFOUND, "database %s does not exist", db);
    else if (find_table(e, db, name) >= 0)
        rc = if_not_exists ? 1 : fr_fail(err, FR_EEXIST, "table %s.%s already exists", db, name);
    if (rc == FR_OK) {
        rc = add_table_locked(e, db, name, schemas, &conf, err);
    } else {
        fr_schema_free(schemas[0]);
        fr_free(schemas);
        fr_table_conf_free(&conf);
    }
    pthread_mutex_unlock(&e->mu);
    return rc < 0 ? rc : FR_OK;
}

int fr_engine_drop_table(fr_engine *e, const char *db, const char *name, bool if_exists,
                         fr_error *err)
{
    char d[FR_NAME_BYTES_MAX + 1], n[FR_NAME_BYTES_MAX + 1];
    FR_TRY(fr_name_normalize("database", db, d, err));
    FR_TRY(fr_name_normalize("table", name, n, err));
    pthread_mutex_lock(&e->mu);
    int i = find_table(e, d, n);
    if (i < 0) {
        int rc = if_exists ? FR_OK
                 : find_db(e, d) < 0
                     ? fr_fail(err, FR_ENOTFOUND, "database %s does not exist", d)
                     : fr_fail(err, FR_ENOTFOUND, "table %s.%s does not exist", d, n);
        pthread_mutex_unlock(&e->mu);
        return rc;
    }
    fr_table *t = take_table(e, i);
    int rc = fr_catalog_save(e, err);
    if (rc < 0) { /* put it back where it was */
        memmove(&e->tables[i + 1], &e->tables[i], (size_t)(e->ntables - i) * sizeof t);
        e->tables[i] = t;
        e->ntables++;
        pthread_mutex_unlock(&e->mu);
        return rc;
    }
    atomic_store(&t->dropped, true);
    pthread_mutex_unlock(&e->mu);
    fr_table_release(t); /* the files go with the last handle */
    return FR_OK;
}

int fr_engine_get_table(fr_engine *e, const char *db, const char *name, fr_table **out,
                        fr_error *err)
{
    pthread_mutex_lock(&e->mu);
    int rc = fr_engine_get_table_locked(e, db, name, out, err);
    pthread_mutex_unlock(&e->mu);
    return rc;
}

/* ---- retention ------------------------------------------------------------------------- */

/* Whether the log's retention may remove a segment as of now_ms: it has more than one, and
 * its first batch is past table.log.ttl or it holds more than table.log.retention.bytes. A
 * cheap test that spares the flush of a primary-key bucket when nothing can go. */
static bool retention_may_remove(const fr_table *t, fr_log *log, int64_t now_ms)
{
    if (fr_log_num_segments(log) < 2) return false;
    if (t->conf.retention_bytes >= 0 && fr_log_size_bytes(log) > t->conf.retention_bytes)
        return true;
    if (t->conf.ttl_ms < 0) return false;
    int64_t first_kept = 0;
    fr_error err = {0};
    if (fr_log_offset_for_time(log, now_ms - t->conf.ttl_ms, &first_kept, &err) < 0)
        return true; /* let the retention itself look */
    return first_kept > fr_log_start_offset(log);
}

/* A primary-key bucket: its segments go through its KV store, which keeps what recovery
 * needs. The store is opened for it (a recovery) only when something may go. */
static int pk_bucket_retention(fr_table *t, fr_tpart *p, int b, fr_log *log, int64_t now_ms,
                               int *removed, fr_error *err)
{
    if (!retention_may_remove(t, log, now_ms)) return FR_OK;
    fr_kv *kv = NULL;
    FR_TRY(fr_tpart_kv(t, p, b, true, &kv, err));
    return kv ? fr_kv_enforce_log_retention(kv, now_ms, removed, err) : FR_OK;
}

static int part_retention(fr_table *t, fr_tpart *p, int64_t now_ms, int *removed,
                          fr_error *err)
{
    int rc = FR_OK;
    for (int b = 0; b < t->conf.nbuckets; b++) {
        fr_log *log = NULL;
        fr_error e2 = {0};
        int r = fr_tpart_log(t, p, b, true, &log, &e2);
        int n = 0;
        /* A lake-enabled table keeps every segment that holds an untiered record. */
        int64_t clock = r == FR_OK && log ? fr_lake_retention_clock(t, p, b, log, now_ms) : now_ms;
        if (r == FR_OK && log && t->conf.npk > 0)
            r = pk_bucket_retention(t, p, b, log, clock, &n, &e2);
        else if (r == FR_OK && log)
            r = fr_log_enforce_retention(log, clock, &n, &e2);
        *removed += n;
        if (r < 0 && rc == FR_OK) { /* keep going: one bad bucket must not stop the rest */
            rc = r;
            *err = e2;
        }
    }
    return rc;
}

typedef struct retention_ctx {
    fr_table *t;
    int64_t now_ms;
    int *removed;
} retention_ctx;

static int part_retention_of(void *ctx, fr_tpart *p, fr_error *err)
{
    const retention_ctx *r = ctx;
    return part_retention(r->t, p, r->now_ms, r->removed, err);
}

static int table_retention(fr_table *t, int64_t now_ms, int *removed, fr_error *err)
{
    if (t->conf.npart == 0) return part_retention(t, NULL, now_ms, removed, err);
    retention_ctx r = {t, now_ms, removed};
    return fr_table_each_part(t, part_retention_of, &r, err);
}

int fr_engine_tables_snapshot(fr_engine *e, fr_table ***out, int *count, fr_error *err)
{
    pthread_mutex_lock(&e->mu);
    int n = e->ntables;
    fr_table **snap = fr_calloc((size_t)n + 1, sizeof *snap);
    for (int i = 0; snap && i < n; i++) {
        snap[i] = e->tables[i];
        fr_table_retain(snap[i]);
    }
    pthread_mutex_unlock(&e->mu);
    FR_CHECK(snap, FR_ENOMEM, err, "out of memory listing the tables");
    *out = snap;
    *count = n;
    return FR_OK;
}

int fr_engine_enforce_retention_at(fr_engine *e, int64_t now_ms, int *removed, fr_error *err)
{
    fr_table **snap = NULL;
    int n = 0;
    FR_TRY(fr_engine_tables_snapshot(e, &snap, &n, err));
    int rc = FR_OK, total = 0;
    for (int i = 0; i < n; i++) {
        fr_error e2 = {0};
        int r = table_retention(snap[i], now_ms, &total, &e2);
        if (r < 0 && rc == FR_OK) {
            rc = r;
            if (err) *err = e2;
        }
        fr_table_release(snap[i]);
    }
    fr_free(snap);
    if (removed) *removed = total;
    return rc;
}

int fr_engine_enforce_retention(fr_engine *e, fr_error *err)
{
    return fr_engine_enforce_retention_at(e, fr_now_ms(), NULL, err);
}

/* The background jobs: each runs every `interval` ms (0: never), first one interval after
 * open (open has run each once already). */
typedef struct bg_job {
    const char *name;
    int64_t interval;
    int64_t due; /* monotonic ms */
    int (*run)(fr_engine *e, fr_error *err);
} bg_job;

static int run_retention(fr_engine *e, fr_error *err)
{
    return fr_engine_enforce_retention(e, err);
}

static int run_flush(fr_engine *e, fr_error *err) { return fr_engine_flush(e, err); }

static int run_kv_flush(fr_engine *e, fr_error *err)
{
    return fr_engine_kv_flush_pass(e, false, err);
}

static int run_auto_partition(fr_engine *e, fr_error *err)
{
    return fr_engine_auto_partition_pass(e, fr_now_ms(), err);
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void *retention_main(void *arg)
{
    fr_engine *e = arg;
    pthread_setname_np(pthread_self(), "firth-jobs");
    bg_job jobs[] = {
        {"retention", e->opts.retention_check_interval_ms, 0, run_retention},
        {"auto-partitioning", e->opts.auto_partition_check_interval_ms, 0, run_auto_partition},
        {"log flush", e->opts.flush == FR_FLUSH_INTERVAL ? e->opts.flush_interval_ms : 0, 0,
         run_flush},
        {"KV flush", kv_flush_check_ms(&e->opts), 0, run_kv_flush},
    };
    int njobs = (int)(sizeof jobs / sizeof *jobs);
    int64_t now = mono_ms();
    for (int i = 0; i < njobs; i++) jobs[i].due = now + jobs[i].interval;
    pthread_mutex_lock(&e->stop_mu);
    while (!e->stopping) {
        int64_t next = INT64_MAX;
        for (int i = 0; i < njobs; i++)
            if (jobs[i].interval > 0 && jobs[i].due < next) next = jobs[i].due;
        struct timespec until = {.tv_sec = next / 1000, .tv_nsec = (next % 1000) * 1000000};
        while (!e->stopping && mono_ms() < next &&
               pthread_cond_timedwait(&e->stop_cv, &e->stop_mu, &until) == 0) {
        }
        if (e->stopping) break;
        pthread_mutex_unlock(&e->stop_mu);
        now = mono_ms();
        for (int i = 0; i < njobs; i++) {
            if (jobs[i].interval <= 0 || jobs[i].due > now) continue;
            fr_error err = {0};
            if (jobs[i].run(e, &err) < 0) FR_WARN("%s: %s", jobs[i].name, err.msg);
            jobs[i].due = mono_ms() + jobs[i].interval;
        }
        pthread_mutex_lock(&e->stop_mu);
    }
    pthread_mutex_unlock(&e->stop_mu);
    return NULL;
}
