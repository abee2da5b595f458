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

/* Time units of auto-partitioning, smallest first. */
typedef enum fr_time_unit {
    FR_UNIT_HOUR = 0,
    FR_UNIT_DAY,
    FR_UNIT_MONTH,
    FR_UNIT_QUARTER,
    FR_UNIT_YEAR,
} fr_time_unit;

#define FR_TIME_FORMAT_BYTES_MAX 64
#define FR_PARTITION_KEYS_MAX 16

/* The auto-partitioning options of a table (engine_autopart.c). */
typedef struct fr_auto_partition {
    bool enabled;
    int key;             /* the column that holds the time (-1 until known) */
    fr_time_unit unit;   /* default DAY */
    char *format;        /* the value's pattern ("yyyyMMdd"); always set for a partitioned table */
    bool format_given;   /* 'table.auto-partition.time-format' was given */
    int num_precreate;   /* default 2 (0 with several partition keys) */
    bool precreate_given;
    int num_retention;   /* default 7; negative: never drop */
    char *zone;          /* 'table.auto-partition.time-zone', NULL for the system's */
} fr_auto_partition;

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
    int ncolumns;            /* of the schema the options were parsed against */

    /* Primary key and partition keys (column indexes; NULL when none). */
    int *pk;
    int npk;
    int *part;
    int npart;
    /* Primary-key tables (engine_pkopts.c). */
    fr_merge_engine merge;
    bool merge_given;          /* 'table.merge-engine' was given */
    int version_column;        /* -1 unless versioned */
    fr_agg_fn *aggs;           /* [ncols] when aggregation, else NULL */
    bool *agg_given;           /* [ncols]: which columns had 'fields.<col>.agg' */
    char **delimiters;         /* [ncols]: listagg delimiters, NULL entries for "," */
    fr_delete_behavior delete_behavior;
    bool delete_given;
    fr_changelog_image image;
    /* Partitioned tables. */
    bool dynamic_partitions;   /* 'table.partition.dynamic-creation', default true */
    fr_auto_partition autop;
    /* The lake (engine_lake.c): 'table.datalake.enabled' (default false) and
     * 'table.datalake.freshness' (default 3 min); 'table.datalake.format' is iceberg. */
    bool lake_enabled;
    int64_t lake_freshness_ms;
} fr_table_conf;

/* The keys a table is created with (names as the user gave them). */
typedef struct fr_table_keys {
    const char *const *pk;
    int npk;
    const char *const *part;
    int npart;
} fr_table_keys;

void fr_table_conf_free(fr_table_conf *c);
/* Validates options against schema and keys (NULL: none) and fills *out (zeroed first). */
int fr_table_conf_parse(const fr_schema *schema, const fr_table_keys *keys,
                        const fr_option *opts, int n, fr_table_conf *out, fr_error *err);

/* engine_pkopts.c: the options of primary-key and partitioned tables. parse returns 1 when
 * key is none of them; finish checks what options say together, after all are parsed. */
int fr_pkopt_parse(const fr_schema *schema, const char *key, const char *value,
                   fr_table_conf *c, fr_buf *norm, fr_error *err);
int fr_pkopt_keys(const fr_schema *schema, const fr_table_keys *keys, fr_table_conf *c,
                  fr_error *err);
int fr_pkopt_finish(const fr_schema *schema, fr_table_conf *c, fr_error *err);
/* The KV spec of a primary-key table (pointers into conf; name left NULL). */
void fr_pkopt_kv_spec(const fr_schema *schema, const fr_table_conf *c, fr_kv_spec *out);
const char *fr_delete_behavior_name(fr_delete_behavior d);
const char *fr_changelog_image_name(fr_changelog_image i);

/* engine_autopart.c: auto-partition options and time values. */
int fr_autop_parse_unit(const char *s, fr_time_unit *out);
const char *fr_autop_unit_name(fr_time_unit u);
const char *fr_autop_default_format(fr_time_unit u);
/* Checks a time format against the unit (fields in order, fixed widths). */
int fr_autop_check_format(const char *format, fr_time_unit unit, fr_error *err);
/* Checks a zone ('UTC', '+08:00', 'Asia/Shanghai'); with must_exist a name must also have
 * a readable zoneinfo file (CREATE TABLE), without it only its spelling is checked (a
 * catalog opened where the zone files are missing still loads; the pass then warns). */
int fr_autop_check_zone(const char *zone, bool must_exist, fr_error *err);
/* The partition time value `offset` units from now_ms (negative: back), as text. */
int fr_autop_value_at(const fr_auto_partition *a, int64_t now_ms, int offset, fr_buf *out,
                      fr_error *err);
/* The UTC offset at utc_s that the bytes of a zoneinfo (TZif) file give; false when they
 * are not a valid file (the fuzz target's entry point). */
bool fr_tzif_offset(const uint8_t *p, size_t len, int64_t utc_s, int32_t *out);
/* The UTC offset of zone (NULL: the system's) at utc_s (engine_tz.c). */
int fr_tz_offset(const char *zone, int64_t utc_s, int32_t *offset_s, fr_error *err);
/* Whether text matches the format of a (digits where fields are, literals elsewhere). */
bool fr_autop_matches(const fr_auto_partition *a, const char *text);

/* The engine as seen from its tables, for creating partitions as rows arrive: shared by
 * the engine and its tables (reference counted), e is NULL once the engine closed. Lock
 * order: link->mu, then the engine's mu, then a table's parts_mu. */
typedef struct fr_engine_link {
    atomic_int refs;
    pthread_mutex_t mu;
    fr_engine *e;
} fr_engine_link;

/* One partition of a partitioned table: its catalog entry and its buckets' logs and KV
 * stores (engine_partition.c). Reference counted: the table's list holds one reference,
 * every user one more; a dropped partition's files go with the last reference. */
typedef struct fr_tpart {
    atomic_int refs;
    atomic_bool dropped;
    atomic_bool pinned;      /* its log was handed out by fr_table_partition_log */
    fr_partition info;       /* id, name, values (canonical text), created_ms */
    fr_value *keys;          /* info.values parsed as the partition columns' types */
    char *log_dir, *kv_dir;  /* DATA_DIR/log/<table>/p<id>, DATA_DIR/kv/<table>/p<id> */
    pthread_mutex_t mu;      /* guards the lazy opening of logs[] and kvs[] */
    int nbuckets;
    fr_log **logs;
    fr_kv **kvs;
} fr_tpart;

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
    char *kv_dir;            /* DATA_DIR/kv/<id> */
    fr_log_options log_base; /* flush and segment settings from the engine */
    pthread_mutex_t mu;      /* guards the lazy opening of logs[] and kvs[] */
    fr_log **logs;           /* [conf.nbuckets], NULL until first used (unpartitioned) */
    fr_kv **kvs;             /* [conf.nbuckets] for an unpartitioned primary-key table */
    fr_kv_spec kv_spec;      /* points into conf and the current schema */
    atomic_uint_fast64_t round_robin;

    /* Partitions, sorted by name. parts changes under parts_mu (and the engine's mu, as
     * it is catalog state); readers take a reference on what they use. */
    pthread_mutex_t parts_mu;
    fr_tpart **parts;
    int nparts;
    fr_tpart **graveyard;    /* dropped pinned partitions, kept until the table goes */
    int ngraveyard;
    fr_engine_link *link;    /* NULL until the table is in a catalog */
    struct fr_table_lake *lake; /* lake-enabled tables: the lake's state (engine_lake.c);
                                 * NULL otherwise */
};

/* A table from its parts (takes ownership of schemas and conf, whatever happens). kv_env
 * (may be NULL: each store makes its own) is shared by its KV stores; the table holds a
 * reference. */
int fr_table_create_obj(int64_t id, const char *db, const char *name, int64_t created_ms,
                        fr_schema **schemas, int nschemas, fr_table_conf *conf,
                        const char *data_dir, const fr_engine_options *eo, fr_kv_env *kv_env,
                        fr_table **out, fr_error *err);
void fr_table_retain(fr_table *t);
/* The log of a bucket, opened on first use. */
int fr_table_get_log(fr_table *t, int bucket, fr_log **out, fr_error *err);
/* Opens the log only when its directory exists (retention must not create empty logs);
 * *out is NULL when there is none. */
int fr_table_get_log_if_exists(fr_table *t, int bucket, fr_log **out, fr_error *err);
/* fr_table_append_encoded with log flags (FR_LOG_APPEND_IN_ORDER) for the log's append and
 * pending as fr_table_append_encoded_to takes it. */
int fr_table_append_encoded_flags(fr_table *t, int bucket, uint8_t *rb, size_t len,
                                  unsigned log_flags, int64_t *base_offset,
                                  fr_table_pending *pending, fr_error *err);
/* The append of a checked batch to log: durable on return, or pending (see engine.h). */
int fr_table_log_append(fr_log *log, uint8_t *rb, size_t len, unsigned log_flags,
                        int64_t *base_offset, fr_table_pending *pending, fr_error *err);
/* Checks that a batch's columns match the table's types and nullability. */
int fr_table_check_batch(const fr_table *t, const fr_batch *b, fr_error *err);
/* Checks the types only (nulls are judged per row by the caller). */
int fr_table_check_types(const fr_table *t, const fr_batch *b, fr_error *err);

/* ---- partitions and buckets (engine_partition.c) ---- */

/* The log or KV store of a bucket of partition p (NULL: the table's own buckets), opened on
 * first use; with if_exists, only when the bucket's log directory exists (*out NULL else). */
int fr_tpart_log(fr_table *t, fr_tpart *p, int bucket, bool if_exists, fr_log **out,
                 fr_error *err);
int fr_tpart_kv(fr_table *t, fr_tpart *p, int bucket, bool if_exists, fr_kv **out,
                fr_error *err);
void fr_tpart_retain(fr_tpart *p);
void fr_tpart_release(fr_tpart *p);
/* A new partition object (not in any list); values are canonical texts, one per key. */
int fr_tpart_new(fr_table *t, int64_t id, char *const *values, int64_t created_ms,
                 fr_tpart **out, fr_error *err);
/* Closes and frees every partition of the table (at table destruction). */
void fr_table_parts_clear(fr_table *t);
/* Closes the KV stores, then the logs they use, of n buckets (NULL entries skipped). A
 * dropped set's files are removed next, so nothing is flushed or synced first: a store's
 * flush would write its memtables out only to delete them. */
void fr_buckets_close(fr_kv **kvs, fr_log **logs, int n, bool dropped);
/* A snapshot of the partitions (each retained), in name order; free with
 * fr_tparts_release. */
int fr_table_parts_snapshot(fr_table *t, fr_tpart ***out, int *count, fr_error *err);
void fr_tparts_release(fr_tpart **parts, int count);
/* Runs fn over every partition of such a snapshot; keeps going past a failure, and returns
 * the first error (in err, which may be NULL). */
int fr_table_each_part(fr_table *t, int (*fn)(void *ctx, fr_tpart *p, fr_error *err),
                       void *ctx, fr_error *err);
/* The partition whose canonical values are `values` (retained), or NULL. */
fr_tpart *fr_table_find_part(fr_table *t, char *const *values);
fr_tpart *fr_table_find_part_id(fr_table *t, int64_t id);
/* Inserts p (taking its reference) into the sorted list; FR_EEXIST if its name is there. */
int fr_table_insert_part(fr_table *t, fr_tpart *p, fr_error *err);
/* Takes the partition with this id out of the list; the caller gets the list's reference. */
fr_tpart *fr_table_take_part(fr_table *t, int64_t id);
/* Whether the partition's values may match the filter (NULL filter: true). */
bool fr_tpart_may_match(const fr_table *t, const fr_tpart *p, const fr_expr *filter);
/* The canonical text of a partition value: parses text as the column's type and formats it
 * back; checks it as a partition name part (creating: also no "__" prefix). */
int fr_partition_value_canon(const fr_table *t, int key, const char *text, size_t len,
                             bool creating, fr_buf *out, fr_error *err);
/* The same from a non-NULL value of the column's type. Appends the text and a NUL. */
int fr_partition_value_text(const fr_table *t, int key, const fr_value *v, bool creating,
                            fr_buf *out, fr_error *err);
/* The partition for canonical values, created when missing and the table creates
 * partitions as rows arrive (FR_ENOTFOUND otherwise). Retained. */
int fr_table_partition_for_write(fr_table *t, char *const *values, fr_tpart **out,
                                 fr_error *err);
/* Removes p<id> directories of partitions that are not in the catalog (a crash between a
 * DROP PARTITION's catalog write and its file removal). */
void fr_partition_remove_orphans(fr_table *t);
/* Puts the table in the engine's catalog for dynamic partition creation. */
void fr_table_attach(fr_table *t, fr_engine_link *link);

/* Catalog changes on partitions (engine_partition.c), e->mu held by the caller.
 * add: values canonical; auto_created marks who created it for the log line. */
int fr_engine_add_part_locked(fr_engine *e, fr_table *t, char *const *values,
                              bool if_not_exists, const char *why, fr_error *err);
int fr_engine_drop_part_locked(fr_engine *e, fr_table *t, int64_t id, const char *why,
                               fr_error *err);

/* The auto-partition pass of one table (e->mu held), run when the table is created. */
int fr_autop_table_locked(fr_engine *e, fr_table *t, int64_t now_ms, fr_error *err);
/* The auto-partition pass over every table as of now_ms (engine_autopart.c). */
int fr_engine_auto_partition_pass(fr_engine *e, int64_t now_ms, fr_error *err);
/* Checks a new partition's time value against the auto-partition rules (format; not older
 * than the retention) as of now_ms. */
int fr_autop_check_new(const fr_table *t, char *const *values, int64_t now_ms,
                       fr_error *err);

/* The canonical bytes of one value for bucket hashing (engine_write.c; the layout of
 * fr_bucket_key_bytes). */
int fr_bucket_value_bytes(const fr_value *v, bool is_null, fr_buf *out, fr_error *err);
/* Routes the rows of b to their partitions, creating missing ones as the table allows
 * (engine_put.c): *parts (each retained; release with fr_tparts_release) and part_of[row]
 * (fr_malloc'd), an index into *parts. */
int fr_table_route_partitions(fr_table *t, const fr_batch *b, fr_tpart ***parts,
                              int *nparts, int32_t **part_of, fr_error *err);

typedef struct fr_db_entry {
    char *name;
    int64_t created_ms;
} fr_db_entry;

struct fr_engine {
    fr_engine_options opts;
    char *data_dir;
    char *meta_dir;
    int lock_fd;

    pthread_mutex_t mu; /* the catalog: dbs, tables, next_table_id, partitions */
    fr_db_entry *dbs;
    int ndbs;
    fr_table **tables;
    int ntables;
    int64_t next_table_id;
    int64_t next_partition_id;
    fr_engine_link *link;

    fr_kv_env *kv_env; /* shared by the KV stores of its tables (each holds a reference) */

    struct fr_tier_pool *tier_pool; /* background tiering (engine_tier.c); NULL when off */

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

/* A snapshot of the engine's tables, each retained (release each, free the array). */
int fr_engine_tables_snapshot(fr_engine *e, fr_table ***out, int *count, fr_error *err);
/* The KV flush pass (engine_flush.c): flushes each open store of every table when `all`, or
 * when fr_kv_flush_due says so under the engine's kv_flush_* options. */
int fr_engine_kv_flush_pass(fr_engine *e, bool all, fr_error *err);

/* The table db.name, retained, with e->mu held by the caller (names as users give them). */
int fr_engine_get_table_locked(fr_engine *e, const char *db, const char *name, fr_table **out,
                               fr_error *err);

/* Names of databases and tables: checks and lower-cases into out (FR_NAME_BYTES_MAX + 1). */
int fr_name_normalize(const char *what, const char *name, char *out, fr_error *err);

/* A new batch of rows[0..n) of b, in that order (engine_take.c). */
int fr_engine_take(const fr_batch *b, const int64_t *rows, int64_t n, fr_batch **out,
                   fr_error *err);

/* Appends the canonical bytes of row's key values (engine_write.c; the layout is in the
 * comment at its top and in docs/ENGINE.md). */
int fr_bucket_key_bytes(const fr_batch *b, const int *key, int nkey, int64_t row, fr_buf *out,
                        fr_error *err);

/* ---- the lake: tiering and lake rows (engine_lake.c, engine_tier.c) ----
 *
 * A lake-enabled table owns one fr_table_lake, made with the table and freed with it: the
 * lake spec (lake schema, field ids, partition and key columns), the lake directory, the
 * tiering mutex that serializes rounds (background and CALL sys.tier), the lake table
 * tiering writes through, and the status /metrics reads. */
typedef struct fr_table_lake {
    char *dir;                  /* <warehouse>/<db>/<table> */
    fr_schema *schema;          /* the lake schema (fr_lake_schema of the table's) */
    int32_t *field_ids;         /* one per lake column */
    int *part_cols, npart_cols; /* partition keys, then __bucket for primary-key tables */
    int *key_cols, nkey_cols;   /* the primary key (primary-key tables) */
    fr_parquet_options parquet;
    fr_lake_spec spec;          /* points into the members above */
    int64_t *to_micros;         /* [table columns]: the factor that takes a time-like column
                                 * to microseconds (1 for TIME(6)...); 0 for other types */

    pthread_mutex_t tier_mu;    /* one round at a time; guards ice */
    fr_iceberg_table *ice;      /* the lake table rounds write through; NULL until the first
                                 * round opens it (and removes the orphans of rounds that
                                 * never committed) */
    atomic_bool opened;         /* the lake table was opened (so it exists) at least once */

    pthread_mutex_t st_mu;      /* guards what follows: the status */
    bool offsets_known;         /* offsets are those of the current snapshot */
    fr_lake_offset *offsets;    /* tiered offsets of the current snapshot */
    int noffsets;
    int64_t snapshot_id, snapshot_ms;
    int64_t rounds, failures;
    char last_error[FR_ERROR_MSG_MAX];

    atomic_int_fast64_t next_due_ms; /* the pool's schedule (monotonic ms; 0: not yet set) */
    atomic_bool claimed;        /* a pool thread runs (or is about to run) the table's round */
} fr_table_lake;

/* Parses the table options 'table.datalake.*' into c (returns 1 when key is none of them),
 * and checks at the end that a lake-enabled table has a lake schema (fr_lake_schema: time
 * precisions up to 6) and no 'table.log.retention.bytes'. */
int fr_lake_opt_parse(const char *key, const char *value, fr_table_conf *c, fr_buf *norm,
                      fr_error *err);
int fr_lake_opt_finish(const fr_schema *schema, fr_table_conf *c, fr_error *err);

/* Makes t->lake for a lake-enabled table (t->lake stays NULL otherwise): warehouse NULL is
 * DATA_DIR/lake. Called by fr_table_create_obj. */
int fr_table_lake_init(fr_table *t, const char *data_dir, const char *warehouse,
                       fr_error *err);
/* Opens t->lake->ice (creating the lake table when absent) unless it is open, removing the
 * files of commits that never published the first time. lake->tier_mu held. */
int fr_table_lake_ensure_locked(fr_table *t, fr_error *err);
/* Called when t was just created (not loaded) with e->mu held: removes a lake directory
 * left by a dropped table of the same name. */
void fr_table_lake_created(fr_table *t);
/* Frees t->lake; for a dropped table, also removes its lake directory (unless a table of the
 * same name was created since, which owns it now). Takes the engine's mu: never call it
 * with that held. */
void fr_table_lake_free(fr_table *t);
/* The lake directory of a lake-enabled table (NULL otherwise). */
const char *fr_table_lake_dir(const fr_table *t);
/* The lake spec of a lake-enabled table: lives as long as the handle. */
const fr_lake_spec *fr_table_lake_spec(const fr_table *t);

/* Table rows -> lake rows: rows (the table schema) become a batch of the lake schema, with
 * time-like columns scaled to microseconds, CHAR/VARCHAR as STRING, then __bucket = bucket,
 * __offset = offsets[i] and __timestamp = commit_ts_ms * 1000 (the batch's commit time, in
 * microseconds). *out is the caller's. */
int fr_lake_rows_from_table(const fr_table *t, const fr_batch *rows, int32_t bucket,
                            const int64_t *offsets, int64_t commit_ts_ms, fr_batch **out,
                            fr_error *err);
/* Adds rows of the table (the table schema) to a commit as lake rows, as
 * fr_lake_rows_from_table makes them; when the table's columns need no conversion and the
 * lake no partitions, without copying them (fr_iceberg_commit_add_rows2). */
int fr_lake_commit_rows(const fr_table *t, fr_iceberg_commit *commit, const fr_batch *rows,
                        int32_t bucket, const int64_t *offsets, int64_t commit_ts_ms,
                        fr_error *err);
/* Lake rows -> table types: lake is a batch whose column i is lake-schema column
 * lake_cols[i] (as fr_iceberg_scan_next returns it); the result has the same columns, the
 * table's columns back in the table's types (times scaled down from microseconds, STRING
 * back to CHAR/VARCHAR), named as in the table; __bucket, __offset and __timestamp stay as
 * they are. *out is the caller's. */
int fr_lake_rows_to_table(const fr_table *t, const fr_batch *lake, const int *lake_cols,
                          int ncols, fr_batch **out, fr_error *err);

/* The tiering pool (engine_tier.c): e->opts.lake_tiering_threads threads that run a round
 * of each lake-enabled table every 'table.datalake.freshness'. start is a no-op with 0
 * threads; stop ends the rounds in progress (uncommitted) and joins the threads. */
int fr_tier_pool_start(fr_engine *e, fr_error *err);
/* The changelog records a round of a primary-key table holds in memory per bucket (default
 * 1M): past it, the round commits what it read and goes on in another commit (each commit
 * is a consistent state: later deletes apply to earlier commits' rows). Tests lower it. */
extern int64_t fr_tier_pk_rows_max;
/* fr_table_tier that gives up (FR_ESTATE, nothing committed) once *stop is set. */
int fr_table_tier_stoppable(fr_table *t, const atomic_bool *stop, int64_t *snapshot_id,
                            fr_error *err);
void fr_tier_pool_stop(fr_engine *e);
/* The clock retention should use for one bucket of a lake-enabled table (now_ms for other
 * tables): no later than the commit time of the first untiered record plus table.log.ttl,
 * so that time retention (which removes segments whose newest batch is older than
 * clock - ttl) never removes a segment holding an untiered record. When the tiered offsets
 * cannot be read, a clock that removes nothing. */
int64_t fr_lake_retention_clock(fr_table *t, fr_tpart *p, int bucket, fr_log *log,
                                int64_t now_ms);

#endif
