/* engine_int.h — the engine's internals shared by its files: the engine and table structs,
 * the catalog's persistence, option parsing and bucketing.
 *
 * Ownership: the engine owns an array of the live tables of its catalog and holds one
 * reference on each; every fr_engine_get_table adds one. A table leaves the array when it
 * is dropped (its `dropped` flag is set then); its log files go when its last reference
 * is released. Nothing in a table points back to the engine, so a handle may outlive it. */
#ifndef FIRTH_ENGINE_INT_H
#define FIRTH_ENGINE_INT_H

#include "engine/engine.h"

#include <pthread.h>
#include <stdatomic.h>

#define FR_ENGINE_PATH_BYTES_MAX 4096
#define FR_CATALOG_BYTES_MAX (256 << 20)
#define FR_TABLE_OPTIONS_MAX 256
#define FR_OPTION_BYTES_MAX 4096
#define FR_ENGINE_MARKER "firth data dir v1\n"
#define FR_ENGINE_DEFAULT_DATABASE "default"

/* What the understood options of a table say, after validation. */
typedef struct fr_table_conf {
    int nbuckets;
    int *bucket_key; /* column indexes, fr_malloc'd; NULL when nbucket_key == 0 */
    int nbucket_key;
    fr_compression compression;
    int64_t ttl_ms;          /* -1: forever */
    int64_t retention_bytes; /* -1: no size limit */
    char **keys, **values;   /* the options as stored (known ones normalized) */
    int noptions;
} fr_table_conf;

void fr_table_conf_free(fr_table_conf *c);
/* Validates options against schema and fills *out (zeroed first). */
int fr_table_conf_parse(const fr_schema *schema, const fr_option *opts, int n,
                        fr_table_conf *out, fr_error *err);

struct fr_table {
    atomic_int refs;
    atomic_bool dropped;
    int64_t id;
    char *db, *name, *qname; /* qname: "db.name", for messages */
    int64_t created_ms;
    fr_schema **schemas;     /* versions by id: schemas[i] has id i; the last is current */
    int nschemas;
    fr_table_conf conf;
    char *dir;               /* DATA_DIR/log/<id> */
    fr_log_options log_base; /* flush and segment settings from the engine */
    pthread_mutex_t mu;      /* guards the lazy opening of logs[] */
    fr_log **logs;           /* [conf.nbuckets], NULL until first used */
    atomic_uint_fast64_t round_robin;
};

/* A table from its parts (takes ownership of schemas and conf, whatever happens). */
int fr_table_create_obj(int64_t id, const char *db, const char *name, int64_t created_ms,
                        fr_schema **schemas, int nschemas, fr_table_conf *conf,
                        const char *data_dir, const fr_engine_options *eo, fr_table **out,
                        fr_error *err);
void fr_table_retain(fr_table *t);
/* The log of a bucket, opened on first use. */
int fr_table_get_log(fr_table *t, int bucket, fr_log **out, fr_error *err);
/* Opens the log only when its directory exists (retention must not create empty logs);
 * *out is NULL when there is none. */
int fr_table_get_log_if_exists(fr_table *t, int bucket, fr_log **out, fr_error *err);
/* Checks that a batch's columns match the table's types and nullability. */
int fr_table_check_batch(const fr_table *t, const fr_batch *b, fr_error *err);

typedef struct fr_db_entry {
    char *name;
    int64_t created_ms;
} fr_db_entry;

struct fr_engine {
    fr_engine_options opts;
    char *data_dir;
    char *meta_dir;
    int lock_fd;

    pthread_mutex_t mu; /* the catalog: dbs, tables, next_table_id */
    fr_db_entry *dbs;
    int ndbs;
    fr_table **tables;
    int ntables;
    int64_t next_table_id;

    pthread_t retention_thread;
    bool retention_running;
    pthread_mutex_t stop_mu;
    pthread_cond_t stop_cv;
    bool stopping;
};

/* Catalog persistence (engine_catalog.c). Both run under e->mu (or before the engine is
 * shared). */
int fr_catalog_load(fr_engine *e, const char *path, fr_error *err);
int fr_catalog_save(fr_engine *e, fr_error *err);
/* Loads the catalog from the bytes of a catalog file (path names it in messages) into an
 * engine whose catalog is empty; on failure the catalog is left empty. The fuzz target's
 * entry point: it touches no file. */
int fr_catalog_parse(fr_engine *e, const char *path, const uint8_t *data, size_t len,
                     fr_error *err);
/* Releases the catalog's tables and databases (not their files). */
void fr_catalog_clear(fr_engine *e);

/* Names of databases and tables: checks and lower-cases into out (FR_NAME_BYTES_MAX + 1). */
int fr_name_normalize(const char *what, const char *name, char *out, fr_error *err);

/* A new batch of rows[0..n) of b, in that order (engine_take.c). */
int fr_engine_take(const fr_batch *b, const int64_t *rows, int64_t n, fr_batch **out,
                   fr_error *err);

/* Appends the canonical bytes of row's key values (engine_write.c; the layout is in the
 * comment at its top and in docs/ENGINE.md). */
int fr_bucket_key_bytes(const fr_batch *b, const int *key, int nkey, int64_t row, fr_buf *out,
                        fr_error *err);

#endif
