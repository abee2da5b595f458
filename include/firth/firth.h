/* firth.h — the public C API of firth, a lakehouse-native streaming storage server.
 *
 * One API, embedded or remote: firth_open("file:/path/to/data") opens the storage engine in
 * this process; "firth://host:port" speaks the native protocol (docs/PROTOCOL.md) to a
 * `firth server`, over one TCP connection per client on which the calls of all threads are
 * pipelined. Tables hold typed rows; results and inputs travel as columnar batches that can
 * be exported through the Arrow C Data Interface
 * (https://arrow.apache.org/docs/format/CDataInterface.html). docs/CLIENT.md is the guide.
 *
 * Parts: clients and configuration; batches; SQL; admin (databases, tables, partitions);
 * one-call produce, upsert and scan; writers (batching, acknowledgements, idempotent
 * retries); scanners (subscriptions polled for new records); lookupers (point and prefix
 * lookups of primary-key tables); the lake (where tiering of a lake-enabled table stands).
 *
 * Errors: every function returns 0 or a negative code (FIRTH_E*) and fills the caller's
 * firth_error (may be NULL) with a message. A remote client reports a lost connection, after
 * its retries, as FIRTH_EIO.
 * Ownership: each declaration says who frees what; a pointer argument is only read during
 * the call unless it says otherwise.
 * Thread safety: a firth_client may be used from several threads at once, except
 * firth_execute, whose session state (USE) belongs to one thread at a time. A writer, a
 * scanner and a lookuper each say below what they allow. */
#ifndef FIRTH_FIRTH_H
#define FIRTH_FIRTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FIRTH_VERSION "0.1.0"

/* ---- Arrow C Data Interface (the ABI fixed by the Arrow specification) ------------------ */
#ifndef ARROW_C_DATA_INTERFACE
#define ARROW_C_DATA_INTERFACE
#define ARROW_FLAG_DICTIONARY_ORDERED 1
#define ARROW_FLAG_NULLABLE 2
#define ARROW_FLAG_MAP_KEYS_SORTED 4
struct ArrowSchema {
    const char *format;
    const char *name;
    const char *metadata;
    int64_t flags;
    int64_t n_children;
    struct ArrowSchema **children;
    struct ArrowSchema *dictionary;
    void (*release)(struct ArrowSchema *);
    void *private_data;
};
struct ArrowArray {
    int64_t length;
    int64_t null_count;
    int64_t offset;
    int64_t n_buffers;
    int64_t n_children;
    const void **buffers;
    struct ArrowArray **children;
    struct ArrowArray *dictionary;
    void (*release)(struct ArrowArray *);
    void *private_data;
};
#endif

/* ---- errors ---------------------------------------------------------------------------- */

/* The codes match the engine's: 0 is success. */
enum {
    FIRTH_OK = 0,
    FIRTH_EINVAL = -1,
    FIRTH_ENOMEM = -2,
    FIRTH_EIO = -3,
    FIRTH_ENOSPC = -4,
    FIRTH_ECORRUPT = -5,
    FIRTH_ENOTFOUND = -6,
    FIRTH_EEXIST = -7,
    FIRTH_ERANGE = -8,
    FIRTH_ELIMIT = -9,
    FIRTH_EUNSUPPORTED = -10,
    FIRTH_ESYNTAX = -11,
    FIRTH_ETYPE = -12,
    FIRTH_ESTATE = -13,
};

typedef struct firth_error {
    int code;
    char msg[256];
} firth_error;

/* ---- clients --------------------------------------------------------------------------- */

typedef struct firth_client firth_client;

/* Opens a client. target: "file:DIR" or a plain directory path (embedded engine, created
 * when missing), or "firth://HOST:PORT" ("firth://[::1]:9123"; the port defaults to 9123):
 * connects at once, so that an unreachable server fails here (FIRTH_EIO, naming the
 * address). A remote client reconnects by itself after a lost connection, with a pause that
 * doubles up to 2 s, and sends again the requests that are safe to repeat (reads, and writes
 * with a writer id). The caller closes it with firth_close. */
int firth_open(const char *target, firth_client **out, firth_error *err);
/* Closes the client. Every writer, scanner and lookuper of it must be closed before, and no
 * other thread may be inside a call on it. NULL is fine. */
void firth_close(firth_client *c);

/* Configuration: the keys of docs/CONFIGURATION.md ("log.flush" = "interval", ...), the
 * same keys a server reads from its config file. A firth_config collects keys checked as
 * they are set; firth_open_config opens with them. */
typedef struct firth_config firth_config;

int firth_config_new(firth_config **out, firth_error *err);
/* Sets key to value (both copied as needed; a key set again takes the new value). An
 * unknown key or a bad value is FIRTH_EINVAL, with a message naming the key, and leaves c
 * as it was. */
int firth_config_set(firth_config *c, const char *key, const char *value, firth_error *err);
void firth_config_free(firth_config *c);
/* The i-th configuration key (0-based), or NULL past the last: to list or accept them. */
const char *firth_config_key(int i);
/* firth_open with a configuration (NULL: the defaults). c is only read; it may be freed
 * once the call returns. The keys configure the embedded engine; a remote client checks
 * them and leaves them to the server, which reads its own configuration. */
int firth_open_config(const char *target, const firth_config *c, firth_client **out,
                      firth_error *err);
/* firth_open with n key/value pairs, set in order as by firth_config_set: an unknown key or
 * a bad value fails the open, naming the key. */
int firth_open_opts(const char *target, const char *const *keys, const char *const *values,
                    int n, firth_client **out, firth_error *err);

/* ---- batches --------------------------------------------------------------------------- */

/* A columnar batch of rows. Owned by whoever receives it; free with firth_batch_free. */
typedef struct firth_batch firth_batch;

int64_t firth_batch_num_rows(const firth_batch *b);
/* Exports the batch as a struct array; the outputs are the caller's to release and stay
 * valid after the batch is freed. */
int firth_batch_export(const firth_batch *b, struct ArrowSchema *schema,
                       struct ArrowArray *array, firth_error *err);
/* Imports a struct array described by schema. The array is moved: its release callback is
 * called when the batch is freed (or at once when the import fails). The schema is only
 * read: it stays the caller's to release. */
int firth_batch_import(struct ArrowSchema *schema, struct ArrowArray *array,
                       firth_batch **out, firth_error *err);
void firth_batch_free(firth_batch *b);

/* ---- SQL ------------------------------------------------------------------------------- */

/* Receives what firth_execute produces, statement by statement:
 *   begin(schema_json)  for a statement returning rows: its schema as JSON
 *   rows(batch)         for each result batch (the callee owns and frees it)
 *   end(message)        when the statement is done: a message such as "table db.t created"
 *                       or NULL for a query
 * A callback returning non-zero stops execution. Any of them may be NULL. */
typedef struct firth_sink {
    void *ctx;
    int (*begin)(void *ctx, const char *schema_json);
    int (*rows)(void *ctx, firth_batch *batch);
    int (*end)(void *ctx, const char *message);
} firth_sink;

/* Executes one or more ';'-separated statements, stopping at the first error, whose message
 * names the line and column. The session's current database (USE) persists between calls
 * on the same client. */
int firth_execute(firth_client *c, const char *sql, const firth_sink *sink, firth_error *err);

/* ---- tables: schema, produce, consume --------------------------------------------------- */

/* The table's description as JSON (schema, options, buckets). *json is the caller's to free
 * with firth_free. table is "db.t" or "t" in the current database. */
int firth_table_info(firth_client *c, const char *table, char **json, firth_error *err);
void firth_free(void *p);

/* Appends the rows of batch to a table. writer_id and seq make the call idempotent: a
 * retried (writer_id, seq) is not appended twice (use writer_id = -1 to opt out). Returns
 * when the rows are durable; *appended counts the rows written by this call. */
int firth_produce(firth_client *c, const char *table, const firth_batch *batch,
                  int64_t writer_id, int32_t seq, int64_t *appended, firth_error *err);

typedef enum firth_start {
    FIRTH_START_EARLIEST,
    FIRTH_START_LATEST,
    FIRTH_START_OFFSET,
    FIRTH_START_TIMESTAMP,
} firth_start;

typedef struct firth_scan_options {
    firth_start start;
    int64_t start_value;     /* the offset, or the timestamp in ms */
    const char *columns;     /* "a,b" or NULL for all */
    const char *where;       /* a SQL predicate or NULL */
    int64_t max_records;     /* -1: no limit */
} firth_scan_options;

/* Called for each batch read: the bucket, the rows (the callee frees the batch), the
 * offset of each row. Non-zero stops. */
typedef int (*firth_scan_fn)(void *ctx, int bucket, firth_batch *batch,
                             const int64_t *offsets);

/* Reads the table's records from the start position to the current end of every bucket. */
int firth_scan(firth_client *c, const char *table, const firth_scan_options *opts,
               firth_scan_fn fn, void *ctx, firth_error *err);

/* ---- primary-key tables and changelogs ---------------------------------------------- */

/* Whether a table has a primary key (upserts, deletes, lookups, a changelog). */
int firth_table_is_pk(firth_client *c, const char *table, bool *is_pk, firth_error *err);

/* What one row of firth_upsert does. */
enum {
    FIRTH_OP_UPSERT = 0, /* insert the row, or merge it into the stored one */
    FIRTH_OP_DELETE = 1, /* delete the row with this key (only the key columns are read) */
};

/* Upserts (and deletes) the rows of batch, which has the table's columns in the table's
 * order, into a primary-key table; the table's merge engine decides each new row, and
 * every change goes to the table's changelog. ops (NULL: all upserts) gives one FIRTH_OP_*
 * per row. target_columns ("a,b" or NULL for all) makes the upserts partial: only those
 * columns are set, the others keep their stored values (they must include the key; see
 * docs/TABLES.md). writer_id and seq as for firth_produce. Returns when the changes are
 * durable; *changed (may be NULL) counts the keys whose stored row changed. Errors:
 * FIRTH_EINVAL for a log table, a NULL key, a delete the table's delete behaviour
 * forbids, target columns the merge engine does not allow. */
int firth_upsert(firth_client *c, const char *table, const firth_batch *batch,
                 const uint8_t *ops, const char *target_columns, int64_t writer_id,
                 int32_t seq, int64_t *changed, firth_error *err);

/* The change type of each record of a table's log: all appends in a log table; inserts,
 * update-befores, update-afters and deletes in a primary-key table's changelog. */
typedef enum firth_change {
    FIRTH_CHANGE_APPEND = 0,        /* +A */
    FIRTH_CHANGE_INSERT = 1,        /* +I */
    FIRTH_CHANGE_UPDATE_BEFORE = 2, /* -U */
    FIRTH_CHANGE_UPDATE_AFTER = 3,  /* +U */
    FIRTH_CHANGE_DELETE = 4,        /* -D */
} firth_change;

/* "+A", "+I", "-U", "+U", "-D"; "?" for any other number. */
const char *firth_change_name(int change);

/* Called for each batch of a changelog read: as firth_scan_fn, with each row's change type
 * (firth_change; NULL when the batch holds appends only) and the batch's commit time in
 * milliseconds since the epoch. Non-zero stops. */
typedef int (*firth_changelog_fn)(void *ctx, int bucket, firth_batch *batch,
                                  const int64_t *offsets, const uint8_t *changes,
                                  int64_t commit_ms);

/* Reads the table's log as firth_scan does, with the change type of every record: for a
 * primary-key table its changelog. */
int firth_scan_changelog(firth_client *c, const char *table, const firth_scan_options *opts,
                         firth_changelog_fn fn, void *ctx, firth_error *err);

/* ---- admin: databases, tables, partitions ------------------------------------------------ */

/* Databases. Names are 1..255 characters of letters, digits and _, case-insensitive. */
int firth_create_database(firth_client *c, const char *db, bool if_not_exists,
                          firth_error *err);
/* cascade drops the tables too; without it a database that has tables is FIRTH_ESTATE. */
int firth_drop_database(firth_client *c, const char *db, bool if_exists, bool cascade,
                        firth_error *err);
/* Names, sorted: *names is an array of *count strings, all the caller's (firth_names_free).
 * firth_list_tables lists db (NULL: the client's current database). */
int firth_list_databases(firth_client *c, char ***names, int *count, firth_error *err);
int firth_list_tables(firth_client *c, const char *db, char ***names, int *count,
                      firth_error *err);
void firth_names_free(char **names, int count);

/* A table to create. Every pointer is only read during firth_create_table. */
typedef struct firth_table_def {
    const char *table;           /* "db.t" or "t" (the current database) */
    /* The columns as JSON: {"fields": [{"name": "id", "type": "BIGINT", "nullable": false},
     * {"name": "v", "type": "STRING"}]}; types as in SQL (docs/SQL.md). */
    const char *schema_json;
    const char *primary_key;     /* "id" or "a, b": a primary-key table; NULL: a log table */
    const char *partition_keys;  /* "dt" or NULL: PARTITIONED BY */
    const char *const *option_keys;   /* WITH ('bucket.num' = '4', ...): noptions pairs */
    const char *const *option_values;
    int noptions;
    bool if_not_exists;
} firth_table_def;

int firth_create_table(firth_client *c, const firth_table_def *def, firth_error *err);
int firth_drop_table(firth_client *c, const char *table, bool if_exists, firth_error *err);

/* A table's partitions, sorted by name: *names ("dt=2026-11-30/region=eu") and *ids (both
 * arrays of *count, the caller's: firth_names_free and firth_free). A table without
 * partitions has none. */
int firth_list_partitions(firth_client *c, const char *table, char ***names, int64_t **ids,
                          int *count, firth_error *err);
/* Adds or drops the partition named "k=v" or "k1=v1/k2=v2" (every partition key once;
 * values as text of the column's type). Dropping removes its data. */
int firth_add_partition(firth_client *c, const char *table, const char *partition,
                        bool if_not_exists, firth_error *err);
int firth_drop_partition(firth_client *c, const char *table, const char *partition,
                         bool if_exists, firth_error *err);

/* ---- writers: batching, acknowledgements, idempotent retries ------------------------------ */

/* A writer collects the rows of many calls and sends them in batches: the rows for one
 * bucket (remote; embedded: for the table) wait until they reach batch_bytes or the oldest
 * has waited linger_ms, then go as one record batch. A background thread sends them and
 * acknowledges each call once all its rows are durable, by the callback and by
 * firth_writer_wait. Every batch carries the writer's id and a sequence number per bucket,
 * so that a batch sent again after a lost connection or a retriable error is applied once
 * (docs/CLIENT.md). A bucket's rows are written in call order: a remote writer to a log
 * table keeps up to max_in_flight batches of a bucket in flight, numbered in order, and the
 * server refuses one that overtakes another (it is sent again after it); elsewhere one batch
 * per bucket is in flight. Acknowledgements of one bucket may then come back out of call
 * order. */
typedef struct firth_writer firth_writer;

/* Called once per call (token) when its rows are durable (status 0) or when it failed for
 * good (status < 0, message says why; the message lives during the call only). Runs on
 * the writer's thread, or in firth_writer_flush/close: it must not block on the writer. */
typedef void (*firth_ack_fn)(void *ctx, uint64_t token, int status, const char *message);

typedef struct firth_writer_options {
    int64_t batch_bytes;     /* "batch.size": send a bucket's rows at this many bytes */
    int64_t linger_ms;       /* "linger.ms": or when the oldest has waited this long; 0: at once */
    int64_t buffer_bytes;    /* rows held unsent at most; a call waits for room beyond it */
    int retries;             /* sends of a batch after the first, on retriable errors */
    int64_t retry_backoff_ms; /* pause before the first retry, doubling */
    int64_t writer_id;       /* -1: a random id (the default); else this id (>= 0). A
                              * bucket whose batch failed for good goes on under a new
                              * random id, so that its sequence starts again at 0; its
                              * batches that were in flight behind the failed one (which
                              * the server refused) go again under it, so only the calls
                              * of the failed batch fail */
    int max_in_flight;       /* "max.in.flight": a bucket's batches sent and not answered at
                              * most (1..64; remote writers to log tables, else 1). More
                              * than 1 helps over links with a long round trip; at 1 the
                              * rows that queue while a batch is out go as the next one */
    const char *target_columns; /* primary-key tables: upserts set only these ("a, b") */
    firth_ack_fn on_ack;     /* may be NULL */
    void *ack_ctx;
} firth_writer_options;

/* The defaults: batch_bytes 1 MiB, linger_ms 5, buffer_bytes 64 MiB, retries 10,
 * retry_backoff_ms 100, writer_id -1, max_in_flight 1, no target columns, no callback. */
void firth_writer_options_init(firth_writer_options *o);

/* Opens a writer on a table (o NULL: the defaults; o is copied, target_columns too). *out
 * is the caller's: firth_writer_close. */
int firth_writer_open(firth_client *c, const char *table, const firth_writer_options *o,
                      firth_writer **out, firth_error *err);
/* Queues the rows of batch (the table's columns in order) and returns at once, unless the
 * buffer is full. The batch stays the caller's (its buffers are shared, not copied: free it
 * when you like). *token (may be NULL) identifies the call for the acknowledgement; tokens
 * count up from 1. firth_writer_append appends to a log table and upserts into a
 * primary-key table; firth_writer_delete deletes by key (only the key columns are read);
 * firth_writer_write takes one FIRTH_OP_* per row (ops is copied). Errors found at once
 * (a batch of the wrong columns, a delete on a log table, a closed writer) are returned;
 * the rest come with the acknowledgement. Thread: any; calls from several threads are
 * queued in the order they take the writer's lock. */
int firth_writer_append(firth_writer *w, const firth_batch *batch, uint64_t *token,
                        firth_error *err);
int firth_writer_upsert(firth_writer *w, const firth_batch *batch, uint64_t *token,
                        firth_error *err);
int firth_writer_delete(firth_writer *w, const firth_batch *batch, uint64_t *token,
                        firth_error *err);
int firth_writer_write(firth_writer *w, const firth_batch *batch, const uint8_t *ops,
                       uint64_t *token, firth_error *err);
/* firth_writer_append of an Arrow struct array (moved, as firth_batch_import). */
int firth_writer_append_arrow(firth_writer *w, struct ArrowSchema *schema,
                              struct ArrowArray *array, uint64_t *token, firth_error *err);
/* Waits until the call of token is acknowledged; returns its status (and message). A token
 * acknowledged long ago with success returns 0. Thread: any, not from the callback. */
int firth_writer_wait(firth_writer *w, uint64_t token, firth_error *err);
/* Sends everything queued now and waits for its acknowledgement. Returns the first failure
 * acknowledged since the last flush (or 0). Thread: any, not from the callback. */
int firth_writer_flush(firth_writer *w, firth_error *err);
/* Counts so far: rows acknowledged, rows changed (primary-key tables: keys whose stored row
 * changed), calls failed. Any pointer may be NULL. */
void firth_writer_stats(firth_writer *w, int64_t *rows_acked, int64_t *rows_changed,
                        int64_t *calls_failed);
/* The writer's idempotent writer id (the one it started with: see writer_id). */
int64_t firth_writer_id(const firth_writer *w);
/* Flushes, stops the writer's thread and frees it; returns what the flush returned. NULL is
 * fine. No other call on w may be running. */
int firth_writer_close(firth_writer *w, firth_error *err);

/* ---- scanners: subscriptions to a table's log -------------------------------------------- */

/* A scanner reads the records of the buckets it subscribes to, each from its own position,
 * and keeps following them: firth_scanner_poll returns what arrived since the last poll,
 * waiting up to a timeout when nothing has (remote: one long poll on the server; embedded:
 * checking the logs every few milliseconds). Thread: one thread at a time per scanner. */
typedef struct firth_scanner firth_scanner;

typedef struct firth_scanner_options {
    const char *columns;     /* "a, b": the columns returned, in this order; NULL: all */
    const char *where;       /* a SQL predicate rows must pass; NULL: every row */
    int64_t max_bytes;       /* of records one poll reads, about; 0: 4 MiB */
} firth_scanner_options;

/* Opens a scanner on a table (o may be NULL; it is copied). No subscription yet. */
int firth_scanner_open(firth_client *c, const char *table, const firth_scanner_options *o,
                       firth_scanner **out, firth_error *err);
/* Subscribes to bucket (-1: every bucket) of partition ("k=v", or NULL: every partition,
 * including those created later, which are read from their start) from a start position:
 * FIRTH_START_EARLIEST, FIRTH_START_LATEST (only what comes next), FIRTH_START_OFFSET (value:
 * the offset, clamped to what the log holds) or FIRTH_START_TIMESTAMP (value: ms since the
 * epoch: the first record committed then or later). Subscribing to a bucket again moves
 * it. A table without partitions takes NULL. */
int firth_scanner_subscribe(firth_scanner *s, const char *partition, int bucket,
                            firth_start start, int64_t value, firth_error *err);
/* Stops reading bucket (-1: all) of partition (NULL: all). */
int firth_scanner_unsubscribe(firth_scanner *s, const char *partition, int bucket,
                              firth_error *err);

/* One batch a poll returned: the rows of one record batch of one bucket. */
typedef struct firth_scan_batch {
    const char *partition;   /* "k=v", or NULL for a table without partitions */
    int64_t partition_id;    /* -1 without partitions */
    int bucket;
    const firth_batch *batch; /* the rows; owned by the result (export it to keep it) */
    const int64_t *offsets;  /* one per row */
    const uint8_t *changes;  /* one firth_change per row, or NULL: all appends */
    int64_t commit_ms;       /* when the batch was committed */
} firth_scan_batch;

/* The result of a poll: zero or more batches, in offset order per bucket. */
typedef struct firth_scan_result firth_scan_result;

/* Waits up to timeout_ms (0: not at all) for records of the subscribed buckets and returns
 * what there is in *out (the caller's: firth_scan_result_free; it may hold no batch). Each
 * record is returned once, in offset order per bucket: the scanner's position moves past
 * what it returns. A bucket whose records before the position were removed by retention
 * goes on from its earliest record. */
int firth_scanner_poll(firth_scanner *s, int64_t timeout_ms, firth_scan_result **out,
                       firth_error *err);
int firth_scan_result_count(const firth_scan_result *r);
/* The i-th batch (0-based); lives as long as r. */
const firth_scan_batch *firth_scan_result_get(const firth_scan_result *r, int i);
int64_t firth_scan_result_rows(const firth_scan_result *r);
void firth_scan_result_free(firth_scan_result *r);
/* Where the scanner reads bucket of partition next (FIRTH_ENOTFOUND when not subscribed). */
int firth_scanner_position(firth_scanner *s, const char *partition, int bucket,
                           int64_t *offset, firth_error *err);
void firth_scanner_close(firth_scanner *s);

/* ---- lookupers: point and prefix lookups of primary-key tables ---------------------------- */

typedef struct firth_lookuper firth_lookuper;

/* Opens a lookuper on a primary-key table; columns ("a, b" or NULL: all) are the columns of
 * the rows returned. Thread: any number of threads at once. */
int firth_lookuper_open(firth_client *c, const char *table, const char *columns,
                        firth_lookuper **out, firth_error *err);
/* Looks up a batch of keys: keys holds the primary key columns in key order (partition
 * columns included), one row per key (values of other types are cast). found[i] (caller-
 * allocated, one per key) says whether key i is there; *rows (the caller's) holds the rows
 * found, in key order. Keys are batched per bucket into one request. */
int firth_lookup(firth_lookuper *l, const firth_batch *keys, bool *found, firth_batch **rows,
                 firth_error *err);
/* Looks up rows by a prefix of the primary key: prefixes holds the first n key columns
 * (n = its column count; they must cover the partition and bucket keys), one row per
 * prefix. counts[i] (caller-allocated) gets the rows found for prefix i; *rows holds them
 * all, prefix by prefix, in key order within one. */
int firth_prefix_lookup(firth_lookuper *l, const firth_batch *prefixes, int64_t *counts,
                        firth_batch **rows, firth_error *err);
void firth_lookuper_close(firth_lookuper *l);

/* ---- the lake: tables tiered into Iceberg ------------------------------------------------ */

/* How far one bucket is tiered: every record of its log below offset is in the lake. */
typedef struct firth_lake_offset {
    int64_t partition_id;    /* -1 for a table without partitions */
    int bucket;
    int64_t offset;
} firth_lake_offset;

/* A lake snapshot of a table created with 'table.datalake.enabled' = 'true'. A reader that
 * reads the snapshot (the Iceberg table under the warehouse, docs/LAKE.md) and then each
 * bucket's log from its offset here reads every record once. */
typedef struct firth_lake_snapshot {
    int64_t snapshot_id;     /* the Iceberg snapshot id; -1: the lake has no snapshot yet */
    int64_t committed_at_ms; /* its commit time, ms since the epoch; 0 when none */
    int noffsets;
    /* Every bucket tiered so far (of every partition), sorted by partition id, then bucket,
     * each once; a bucket not listed has nothing in the lake. NULL when noffsets is 0. */
    const firth_lake_offset *offsets;
} firth_lake_snapshot;

/* The newest lake snapshot of table ("db.t" or "t" in the current database) with its tiered
 * offsets. *out is the caller's, freed with firth_lake_snapshot_free; the offsets live as
 * long as it. A lake-enabled table that was never tiered gives snapshot_id -1 and no
 * offsets. Errors: FIRTH_ENOTFOUND (no such table), FIRTH_EINVAL (a table without a lake:
 * the message says how to create one), FIRTH_ECORRUPT (remote: an answer that does not fit
 * the table, such as a bucket it does not have; or an unreadable lake). Thread: any. */
int firth_latest_lake_snapshot(firth_client *c, const char *table, firth_lake_snapshot **out,
                               firth_error *err);
/* Frees a result of firth_latest_lake_snapshot, its offsets with it. NULL is fine. */
void firth_lake_snapshot_free(firth_lake_snapshot *s);

#ifdef __cplusplus
}
#endif
#endif
