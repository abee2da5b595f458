/* engine.h — the embedded storage engine: a catalog of databases and tables persisted under
 * DATA_DIR/meta, each table's buckets and their logs, writers (with bucket assignment and
 * idempotence) and readers (with projection and filter pushdown), and retention.
 *
 * Files:  DATA_DIR/meta/catalog.json        (written atomically: temp, fsync, rename, fsync dir)
 *         DATA_DIR/meta/FIRTH               (format marker: "firth data dir v1")
 *         DATA_DIR/log/<table_id>[/p<partition_id>]/b<bucket>/ (one fr_log per bucket)
 *         DATA_DIR/kv/<table_id>[/p<partition_id>]/b<bucket>/  (primary-key tables: one
 *                                           fr_kv per bucket, over that bucket's log)
 *
 * Thread: every function may be called from any thread. Catalog changes are serialized by
 * one lock; appends to different buckets proceed in parallel; reads never block appends.
 * Table handles (fr_table) are reference counted so that a DROP TABLE while a reader holds
 * the table is safe: the files go when the last handle is released. */
#ifndef FIRTH_ENGINE_H
#define FIRTH_ENGINE_H

#include "kv/kv.h"
#include "lake/lake.h"

#define FR_BUCKETS_MAX 1024

typedef struct fr_engine fr_engine;
typedef struct fr_table fr_table;
typedef struct fr_partition fr_partition; /* defined with the partition functions below */

typedef struct fr_engine_options {
    const char *data_dir;
    fr_flush_mode flush;          /* `log.flush`: default FR_FLUSH_EVERY_APPEND */
    int64_t flush_interval_ms;    /* for FR_FLUSH_INTERVAL */
    int64_t segment_bytes;        /* `log.segment.bytes`: default 1 GiB */
    int64_t retention_check_interval_ms; /* background retention pass; default 5 min, 0 off */
    /* Background auto-partitioning pass (creating coming partitions, dropping expired
     * ones); default 10 min, 0 off. It also runs once at open. */
    int64_t auto_partition_check_interval_ms;
    /* The KV stores of primary-key tables. Each store's state is flushed (made durable, so
     * that reopening replays a short tail of the changelog) by the background thread when
     * its oldest unflushed change is kv_flush_interval_ms old (`kv.flush.interval`, default
     * 10 min, 0 off) or kv_flush_records changelog records are unflushed (`kv.flush.records`,
     * default 1,000,000, 0 off); the thread looks every 5 s or interval, whichever is less. */
    int64_t kv_flush_interval_ms;
    int64_t kv_flush_records;
    int64_t kv_block_cache_bytes;  /* `kv.block-cache.bytes`: one LRU cache for every store;
                                      default 64 MiB */
    int64_t kv_row_cache_bytes;    /* `kv.row-cache.bytes`: the rows lookups found, for every
                                      store; default 128 MiB, 0 none */
    int64_t kv_write_buffer_bytes; /* `kv.write-buffer.bytes`: every store's memtables
                                      together; default 256 MiB, at least 1 MiB */
    const char *lake_warehouse;    /* `lake.warehouse`: NULL for DATA_DIR/lake */
    int lake_tiering_threads;      /* `lake.tiering.threads`: default 2, 0 no background
                                      tiering (CALL sys.tier still works) */
} fr_engine_options;

void fr_engine_options_default(fr_engine_options *o);
/* Sets one configuration key from its text (docs/CONFIGURATION.md): "log.flush" (append,
 * interval, none), "log.flush.interval" (a duration), "log.segment.bytes" (a size),
 * "log.retention.check-interval" (a duration, 0 off), "kv.flush.interval" (a duration, 0
 * off), "kv.flush.records" (a count, 0 off), "kv.block-cache.bytes",
 * "kv.row-cache.bytes" and "kv.write-buffer.bytes" (sizes), "lake.warehouse" (a directory; its text is copied into
 * storage that lives until the process ends) and "lake.tiering.threads" (0 to 64). An
 * unknown key or a bad value is FR_EINVAL with a message naming the key; o is then
 * unchanged. */
int fr_engine_options_set(fr_engine_options *o, const char *key, const char *value,
                          fr_error *err);
/* The i-th configuration key (0-based), or NULL past the last. */
const char *fr_engine_option_key(int i);

/* Opens or creates a data dir. A dir that exists but holds something other than a firth
 * data dir (no meta/FIRTH marker and not empty), or a catalog that does not parse, is
 * FR_EINVAL with a message saying which file and what to do. A new data dir starts with one
 * database, "default". The data dir is locked (flock on meta/LOCK) while open: a second
 * open, from this or another process, is FR_ESTATE naming the holder's pid. Open runs one
 * retention pass and starts the background thread (retention, auto-partitioning, and the
 * timed flush under FR_FLUSH_INTERVAL). */
int fr_engine_open(const fr_engine_options *opts, fr_engine **out, fr_error *err);
/* Stops the background thread, flushes every open log (unless `log.flush` is none),
 * releases the catalog's table handles and the lock. Every
 * handle from fr_engine_get_table should be released before; one that is not keeps its
 * logs open until released, but the data dir is no longer locked for it. */
void fr_engine_close(fr_engine *e);
const char *fr_engine_data_dir(const fr_engine *e);

/* ---- catalog --------------------------------------------------------------------------- */

int fr_engine_create_database(fr_engine *e, const char *db, bool if_not_exists, fr_error *err);
/* Drops a database; with cascade=false a non-empty database is FR_ESTATE. */
int fr_engine_drop_database(fr_engine *e, const char *db, bool if_exists, bool cascade,
                            fr_error *err);
/* The memory every primary-key table's KV store shares: bytes in the active memtables, the
 * block cache and the row cache of lookups (kv.h, fr_kv_env). */
typedef struct fr_engine_kv_memory {
    int64_t memtable_bytes;
    int64_t block_cache_bytes;
    int64_t row_cache_bytes;
} fr_engine_kv_memory;
void fr_engine_kv_memory_get(fr_engine *e, fr_engine_kv_memory *out);
/* Names of databases (sorted). *names is an array of strings, all owned by the caller:
 * free with fr_names_free. */
int fr_engine_list_databases(fr_engine *e, char ***names, int *count, fr_error *err);
int fr_engine_list_tables(fr_engine *e, const char *db, char ***names, int *count,
                          fr_error *err);
void fr_names_free(char **names, int count);

/* A table option given in WITH ('key' = 'value'). */
typedef struct fr_option {
    const char *key;
    const char *value;
} fr_option;

typedef struct fr_table_spec {
    const char *db;
    const char *name;
    const fr_schema *schema;     /* copied; its id is replaced by 0 */
    const fr_option *options;
    int noptions;
    /* Primary-key tables: the key's column names (NULL/0 for a log table). Key columns are
     * NOT NULL (the engine makes them so). */
    const char *const *primary_key;
    int nprimary_key;
    /* Partitioned tables: PARTITIONED BY column names (STRING, INT, BIGINT or DATE); for a
     * primary-key table they must be part of the key. NULL/0 when not partitioned. */
    const char *const *partition_keys;
    int npartition_keys;
} fr_table_spec;

/* Creates a table. Options understood now: bucket.num (default 1, 1..1024), bucket.key
 * (comma-separated column names), table.log.ttl (duration, default 7d; "-1" or "inf" keeps
 * forever), table.log.arrow.compression.type (ZSTD default, LZ4_FRAME, NONE),
 * table.log.retention.bytes (a size; default none). Unknown keys starting with "table." or
 * "bucket." are FR_EINVAL; other keys are kept as given. Known values are stored
 * normalized ("zstd" -> "ZSTD", bucket.key with the schema's column names).
 * Primary-key and partitioned tables also take table.merge-engine (and its
 * versioned.ver-column, fields.<col>.agg, fields.<col>.listagg-delimiter),
 * table.delete.behavior, table.changelog.image, table.partition.dynamic-creation and the
 * table.auto-partition.* options, checked as Apache Fluss checks them (docs/ENGINE.md lists
 * them with their defaults); the keys are checked too (partition keys STRING, INT, BIGINT
 * or DATE and in the primary key; the bucket key without partition columns and, for a
 * primary-key table, within the primary key, which it defaults to minus the partition
 * keys). An auto-partitioned table gets its current partitions at once.
 * Names of databases and tables: 1..FR_NAME_BYTES_MAX characters of [A-Za-z0-9_],
 * case-insensitive, stored lower-case. Errors: FR_EINVAL (names, options), FR_ENOTFOUND (no
 * such database), FR_EEXIST (the table exists and !if_not_exists). */
int fr_engine_create_table(fr_engine *e, const fr_table_spec *spec, bool if_not_exists,
                           fr_error *err);
int fr_engine_drop_table(fr_engine *e, const char *db, const char *name, bool if_exists,
                         fr_error *err);

/* Looks a table up and returns a handle the caller releases with fr_table_release. */
int fr_engine_get_table(fr_engine *e, const char *db, const char *name, fr_table **out,
                        fr_error *err);
void fr_table_release(fr_table *t);
/* True once the table was dropped: appends through the handle fail with FR_ENOTFOUND,
 * reads still work until the handle is released. */
bool fr_table_dropped(const fr_table *t);

/* What a table handle says of itself; pointers live as long as the handle. */
const char *fr_table_db(const fr_table *t);
const char *fr_table_name(const fr_table *t);
int64_t fr_table_id(const fr_table *t);
/* When the table was created, in ms since the epoch. */
int64_t fr_table_created_ms(const fr_table *t);
const fr_schema *fr_table_schema(const fr_table *t);
int fr_table_num_buckets(const fr_table *t);
/* Bucket-key column indexes; *n = 0 when the table has none. */
const int *fr_table_bucket_key(const fr_table *t, int *n);
fr_compression fr_table_compression(const fr_table *t);
int fr_table_num_options(const fr_table *t);
void fr_table_option(const fr_table *t, int i, const char **key, const char **value);
/* The table as JSON (id, name, schema, options, buckets): for DESCRIBE and the protocol. */
int fr_table_to_json(const fr_table *t, char **out, fr_error *err);

/* ---- writes ---------------------------------------------------------------------------- */

/* Appends the rows of b (whose schema must equal the table's, by types; names may differ)
 * to the table: rows are split by bucket (hash of the bucket key, murmur3 over the key's
 * canonical bytes, mod bucket.num; without a bucket key the whole batch goes to one bucket,
 * derived from (writer_id, seq) for an idempotent writer so that a retry lands in the same
 * bucket, else chosen round-robin per call), encoded and appended. Returns when every part
 * is durable. When one part fails, the parts before it stay written: retry the call with
 * the same (writer_id, seq) to complete it exactly once. The layout of the canonical key
 * bytes is in docs/ENGINE.md.
 * writer_id/seq: FR_NO_WRITER/-1, or the idempotent writer's id and this batch's sequence
 * number; a retried (writer, seq) is not appended twice (*appended then counts 0 rows for
 * the buckets that had it). */
int fr_table_append(fr_table *t, const fr_batch *b, int64_t writer_id, int32_t seq,
                    int64_t *appended, fr_error *err);
/* Appends one already-encoded record batch to bucket (the remote produce path). The batch
 * must carry the table's schema id and a RecordBatch message that decodes against it.
 * A retried (writer, sequence) is FR_EDUPLICATE, with *base_offset the offset of the
 * earlier append when the log knows it. */
int fr_table_append_encoded(fr_table *t, int bucket, uint8_t *rb, size_t len,
                            int64_t *base_offset, fr_error *err);
/* Which bucket row `row` of b goes to (for tests and clients that pre-split): 0 for a
 * one-bucket table, -1 for a table without a bucket key (its bucket is chosen per call),
 * a negative FR_E* code when out of memory for a long key. */
int fr_table_bucket_of(const fr_table *t, const fr_batch *b, int64_t row);

/* ---- reads ----------------------------------------------------------------------------- */

typedef enum fr_start_kind {
    FR_START_EARLIEST,
    FR_START_LATEST,
    FR_START_OFFSET,    /* the same offset in every bucket */
    FR_START_TIMESTAMP, /* the first record committed at or after value (ms) */
} fr_start_kind;

typedef struct fr_scan_spec {
    fr_start_kind start;
    int64_t start_value;
    const int *columns;    /* projection, NULL for all */
    int ncolumns;
    const fr_expr *filter; /* bound to the table schema, or NULL */
    int64_t max_records;   /* -1: no limit */
    int bucket;            /* -1: all buckets */
    /* Partitioned tables: called before the buckets of each partition that is read (in
     * partition name order); partitions whose values rule `filter` out are skipped. May be
     * NULL. Non-zero stops. */
    int (*on_partition)(void *ctx, const fr_partition *partition, fr_error *err);
} fr_scan_spec;

/* Called for each batch: bucket, the rows (projected, filtered; owned by the callee), the
 * offset of each row, change types or NULL, the batch's commit timestamp. Non-zero stops. */
typedef int (*fr_scan_fn)(void *ctx, int bucket, fr_batch *batch, const int64_t *offsets,
                          const uint8_t *change_types, int64_t commit_ts, fr_error *err);

/* Reads what is in the table now, bucket by bucket in bucket order, from the start
 * position to each bucket's current end. */
int fr_table_scan(fr_table *t, const fr_scan_spec *spec, fr_scan_fn fn, void *ctx,
                  fr_error *err);
/* The log of one bucket, opened on first use (owned by the table; lives as long as the
 * handle). NULL when the bucket is out of range or its log fails to open (the reason is
 * logged as a warning). */
fr_log *fr_table_log(fr_table *t, int bucket);

/* Makes every batch appended so far durable: one flush of each open log. With `log.flush`
 * = interval the engine's background thread runs this every flush interval (an idle log
 * would otherwise keep its unflushed tail), and close runs it once more. */
int fr_engine_flush(fr_engine *e, fr_error *err);

/* Flushes every open KV store now (fr_kv_flush): afterwards reopening the data dir replays
 * no changelog written before the call. The background thread flushes the stores that are
 * due (fr_engine_options.kv_flush_*); close flushes them all. */
int fr_engine_flush_kv(fr_engine *e, fr_error *err);

/* Runs retention on every table now (the server also runs it on a timer). For a
 * primary-key table a bucket's segments go only once its KV state up to them is on disk:
 * when something may be removed, the store is flushed first (fr_kv_enforce_log_retention),
 * so recovery never needs a removed segment. */
int fr_engine_enforce_retention(fr_engine *e, fr_error *err);
/* The same as of now_ms (tests use a clock of their own); *removed (may be NULL) gets the
 * number of segments deleted. */
int fr_engine_enforce_retention_at(fr_engine *e, int64_t now_ms, int *removed,
                                   fr_error *err);

/* ---- primary-key tables and partitions -------------------------------------------------- */

bool fr_table_is_pk(const fr_table *t);
/* Primary key and partition key column indexes (*n = 0 when none); live as the handle. */
const int *fr_table_primary_key(const fr_table *t, int *n);
const int *fr_table_partition_keys(const fr_table *t, int *n);

/* A partition: its id, its name ("dt=2026-11-30/region=eu") and its values as text, one
 * per partition key in key order. */
struct fr_partition {
    int64_t id;
    char *name;
    char **values;
    int nvalues;
    int64_t created_ms;
};

/* Creates or drops a partition named by its values (spec: one {column, value text} per
 * partition key, any order). Dropping removes its data. Errors: FR_EINVAL (not a
 * partitioned table, a missing or unknown column, a value that does not parse as the
 * column's type), FR_EEXIST / FR_ENOTFOUND unless if_not_exists / if_exists. */
int fr_engine_add_partition(fr_engine *e, const char *db, const char *table,
                            const fr_option *spec, int nspec, bool if_not_exists,
                            fr_error *err);
int fr_engine_drop_partition(fr_engine *e, const char *db, const char *table,
                             const fr_option *spec, int nspec, bool if_exists, fr_error *err);
/* The table's partitions sorted by name. The array is the caller's (fr_partitions_free). */
int fr_table_list_partitions(fr_table *t, fr_partition **out, int *count, fr_error *err);
void fr_partitions_free(fr_partition *p, int count);

/* Upserts and deletes into a primary-key table: row i of rows (the table schema) is routed
 * by its partition (created on the fly when 'table.partition.dynamic-creation' is true,
 * else FR_ENOTFOUND naming the partition) and bucket, then applied with fr_kv_write (ops,
 * target_columns, idempotence: see kv.h). *changed (may be NULL) counts keys whose stored
 * row changed. FR_EINVAL on a log table. */
int fr_table_put(fr_table *t, const fr_batch *rows, const uint8_t *ops,
                 const int *target_columns, int ntarget, int64_t writer_id, int32_t seq,
                 int64_t *changed, fr_error *err);

/* Point lookups by full primary key: keys holds the key columns in key order (partition
 * columns included); see fr_kv_lookup for found/out. Reads the KV stores, never scans. */
int fr_table_lookup(fr_table *t, const fr_batch *keys, bool *found, fr_batch **out,
                    fr_error *err);
/* Prefix lookup: values of the first nprefix primary key columns, which must cover the
 * partition keys and the bucket key (FR_EINVAL otherwise, saying which columns are
 * needed): one partition, one bucket, a RocksDB prefix scan. */
int fr_table_prefix_lookup(fr_table *t, const fr_value *prefix, int nprefix,
                           const int *columns, int ncolumns, fr_kv_rows_fn fn, void *ctx,
                           fr_error *err);
/* Reads the current state of a primary-key table (every partition and bucket), projecting
 * and filtering; partitions whose values rule the filter out are skipped. */
int fr_table_scan_state(fr_table *t, const int *columns, int ncolumns, const fr_expr *filter,
                        fr_kv_rows_fn fn, void *ctx, fr_error *err);
/* The log of one bucket of one partition (partition_id -1 for a table without partitions),
 * opened on first use. NULL when there is no such partition or bucket or the log fails to
 * open (logged as a warning). The log lives as long as the table: a partition dropped
 * after its log was handed out keeps its files until the table is released. */
fr_log *fr_table_partition_log(fr_table *t, int64_t partition_id, int bucket);

/* ---- bucket-level access (the server) --------------------------------------------------- */

/* A batch appended and not yet durable: fr_log_wait_durable(log, &ticket) says when it is,
 * and until then it must not be acknowledged. The log lives as long as the table. */
typedef struct fr_table_pending {
    fr_log *log;
    fr_log_ticket ticket;
} fr_table_pending;

/* fr_table_append_encoded into one bucket of one partition (partition_id -1 for a table
 * without partitions, which is fr_table_append_encoded), with log_flags 0 or
 * FR_LOG_APPEND_IN_ORDER (a writer with several batches in flight: see log.h). With
 * pending NULL it returns once the batch is durable; otherwise at once, with *pending to
 * wait on (so that a caller can append its next batches meanwhile). For a partition, the
 * batch must be in the table's current schema (FR_ETYPE otherwise) and every row must hold the
 * partition's values (FR_EINVAL naming the row); FR_ENOTFOUND when there is no partition
 * with that id. Nothing is appended when a check fails. */
int fr_table_append_encoded_to(fr_table *t, int64_t partition_id, int bucket, uint8_t *rb,
                               size_t len, unsigned log_flags, int64_t *base_offset,
                               fr_table_pending *pending, fr_error *err);
/* fr_table_put of rows that all belong in one bucket of one partition (partition_id -1 for
 * a table without partitions): every row is checked to belong there (partition values; the
 * bucket-key hash), FR_EINVAL naming the first that does not, before anything is written;
 * then fr_kv_write, whose result (changelog records, base offset, rows changed) is given
 * back. FR_EDUPLICATE for an idempotent retry, as fr_kv_write. The partition must exist. */
int fr_table_put_bucket(fr_table *t, int64_t partition_id, int bucket, const fr_batch *rows,
                        const uint8_t *ops, const int *target_columns, int ntarget,
                        int64_t writer_id, int32_t seq, fr_kv_write_result *result,
                        fr_error *err);

/* Sizes of one bucket for metrics. A log is reported when it exists on disk (it is opened
 * then), a KV store only when it is open already: a metrics scrape never creates a log nor
 * opens RocksDB. */
typedef struct fr_bucket_stats {
    bool has_log;
    int64_t log_start_offset, log_end_offset; /* -1 without a log */
    int64_t log_bytes;
    fr_log_fsync_stats fsync; /* the log's fdatasyncs since it was opened */
    bool has_kv;
    int64_t kv_bytes, kv_keys;                /* fr_kv_size_bytes, fr_kv_num_keys */
    int64_t kv_applied_offset;                /* fr_kv_applied_offset, -1 without a store */
    int64_t kv_persisted_offset;              /* fr_kv_persisted_offset, -1 without one */
} fr_bucket_stats;
int fr_table_bucket_stats(fr_table *t, int64_t partition_id, int bucket, fr_bucket_stats *out,
                          fr_error *err);

/* Runs the auto-partitioning pass now as of now_ms (tests use a clock of their own): for
 * each auto-partitioned table, drops the partitions past 'table.auto-partition.num-retention'
 * and creates those of the current and coming time units ('num-precreate'). Failures on one
 * table do not stop the others; the first is returned. */
int fr_engine_run_auto_partition_at(fr_engine *e, int64_t now_ms, fr_error *err);

/* ---- the lake: tiering and union reads (engine_lake*.c, engine_tier*.c, engine_union*.c) --
 *
 * A table created with 'table.datalake.enabled' = 'true' has a lake table (Iceberg, the
 * only 'table.datalake.format' so far) under the warehouse: `lake.warehouse`, default
 * DATA_DIR/lake, holding `<warehouse>/<db>/<table>/`. The engine's tiering pool (threads:
 * `lake.tiering.threads`) runs a round for each such table every
 * 'table.datalake.freshness' (default 3 min): for every bucket of every partition it reads
 * the log from the offset the current lake snapshot records to the log's end as of the
 * round's start, writes it to the lake (log tables as appends; primary-key tables as one
 * equality delete per changed key plus the key's final row unless it was deleted), and
 * commits a snapshot recording the new offsets. After a crash tiering resumes from the
 * offsets of the last committed snapshot; files of rounds that never committed are removed
 * when the table's lake is opened. On lake-enabled tables, retention deletes a segment only
 * once it is tiered (and older than table.log.ttl). */

bool fr_table_lake_enabled(const fr_table *t);
/* The table's lake schema (fr_lake_schema of its schema); lives as long as the handle. NULL
 * when the table is not lake-enabled. */
const fr_schema *fr_table_lake_schema(const fr_table *t);
/* Opens the table's lake table, creating it when absent. The caller closes it with
 * fr_iceberg_close. Errors: FR_EINVAL (not lake-enabled), those of fr_iceberg_open. */
int fr_table_lake_open(fr_table *t, fr_iceberg_table **out, fr_error *err);
/* The table's current lake snapshot, with the tiered offset of every bucket sorted by
 * partition id, then bucket (*out NULL when the lake has no snapshot yet). It is read
 * through a lake handle of its own, as union reads do, so a tiering round in progress is not
 * waited for. The caller frees it with fr_lake_snapshots_free(*out, 1). FR_EINVAL for a
 * table without a lake, saying how to make one; errors reading the metadata name the
 * table and the file. */
int fr_table_lake_current(fr_table *t, fr_lake_snapshot **out, fr_error *err);

/* Runs one tiering round of t now, on the caller's thread (CALL sys.tier): *snapshot_id gets
 * the id of the snapshot it committed, or of the current one when there was nothing new to
 * tier (-1 when the lake has no snapshot). Serialized with the background rounds of t. */
int fr_table_tier(fr_table *t, int64_t *snapshot_id, fr_error *err);

/* Where tiering of a table stands (for /metrics and tests). */
typedef struct fr_lake_status {
    int64_t snapshot_id;        /* current lake snapshot, -1 when none */
    int64_t snapshot_ms;        /* its commit time, 0 when none */
    int64_t lag_records;        /* records in the logs after the tiered offsets */
    int64_t lag_ms;             /* age of the oldest untiered record, 0 when none */
    int64_t rounds, failures;   /* rounds run (background and CALL) and rounds that failed */
    char last_error[FR_ERROR_MSG_MAX]; /* the last failure's message, "" when none */
} fr_lake_status;
int fr_table_lake_status(fr_table *t, fr_lake_status *out, fr_error *err);
/* Every lake snapshot of the table, oldest first (for $lake_snapshots); the caller frees
 * with fr_lake_snapshots_free. */
int fr_table_lake_snapshots(fr_table *t, fr_lake_snapshot **out, int *n, fr_error *err);

/* A union read: the newest lake snapshot (projection and filter pushed into the Parquet
 * reader) plus, per bucket, the log after the offset that snapshot records; primary-key
 * tables are merged by key (the log wins, deletes remove). The rows equal those of reading
 * the table without the lake at the same moment (fr_table_scan from the earliest offset for
 * log tables, fr_table_scan_state for primary-key tables). With lake_only the lake alone is
 * read ($lake): columns then index into fr_table_lake_schema and rows carry its types. */
typedef struct fr_union_spec {
    const int *columns;    /* projection (table schema, or lake schema with lake_only); NULL
                            * for all */
    int ncolumns;
    const fr_expr *filter; /* bound to the same schema as columns, or NULL; rows are
                            * filtered exactly */
    bool lake_only;
} fr_union_spec;
/* Called for each batch (owned by the callee). Non-zero stops. */
typedef int (*fr_union_fn)(void *ctx, fr_batch *batch, fr_error *err);
int fr_table_scan_union(fr_table *t, const fr_union_spec *spec, fr_union_fn fn, void *ctx,
                        fr_error *err);

#endif
