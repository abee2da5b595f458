/* firth.h — the public C API of firth, a lakehouse-native streaming storage server.
 *
 * One API, embedded or remote: firth_open("file:/path/to/data") opens the storage engine in
 * this process; "firth://host:port" (a later release) speaks the native protocol to a
 * server. Tables hold typed rows; results and inputs travel as columnar batches that can be
 * exported through the Arrow C Data Interface (https://arrow.apache.org/docs/format/CDataInterface.html).
 *
 * Errors: every function returns 0 or a negative code (FIRTH_E*) and fills the caller's
 * firth_error with a message. Thread safety: a firth_client may be used from several
 * threads at once, except firth_execute, whose session state (USE) belongs to one thread. */
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
 * when missing). The caller closes it with firth_close. */
int firth_open(const char *target, firth_client **out, firth_error *err);
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
 * once the call returns. */
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

#ifdef __cplusplus
}
#endif
#endif
