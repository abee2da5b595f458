/* kv.h — the key-value state of one bucket of a primary-key table: a RocksDB instance that
 * holds the latest row per primary key, the merge engines that combine a new row with the
 * stored one, and the changelog each write produces.
 *
 * Write path (DESIGN.md §5): for each record the old row is looked up (a write-batch-local
 * cache first, then RocksDB), the merge engine decides the new row, the resulting changelog
 * records (+I, -U, +U, -D) are appended to the bucket's log as one record batch — the log
 * is the write-ahead log — and only then is RocksDB updated. An unchanged row writes nothing.
 *
 * Invariants: RocksDB's own WAL is off; every RocksDB write batch also stores the log offset
 * up to which the state is applied (meta key), so at open the state is brought up to date by
 * replaying the log's changelog from that offset; after open the state equals the changelog
 * replayed from offset 0. Keys are fr_key_encode of the primary key columns in declared
 * order; values are fr_row_encode of the whole row.
 *
 * Thread: any. Writes to one fr_kv are serialized inside (the log append included); reads
 * (lookups, scans) run concurrently with writes and see the state as of the last completed
 * write. */
#ifndef FIRTH_KV_H
#define FIRTH_KV_H

#include "log/log.h"

typedef enum fr_merge_engine {
    FR_MERGE_LAST_ROW = 0,  /* default; partial update when a write names target columns */
    FR_MERGE_FIRST_ROW,     /* the first row per key wins; changelog holds only +I */
    FR_MERGE_VERSIONED,     /* a row replaces the stored one when version >= stored version */
    FR_MERGE_AGGREGATION,   /* per-column aggregate functions */
} fr_merge_engine;

typedef enum fr_agg_fn {
    FR_AGG_LAST_VALUE_IGNORE_NULLS = 0, /* the default for non-key columns */
    FR_AGG_LAST_VALUE,
    FR_AGG_FIRST_VALUE,
    FR_AGG_FIRST_VALUE_IGNORE_NULLS,
    FR_AGG_SUM,
    FR_AGG_PRODUCT,
    FR_AGG_MAX,
    FR_AGG_MIN,
    FR_AGG_LISTAGG,    /* also spelled string_agg */
    FR_AGG_BOOL_AND,
    FR_AGG_BOOL_OR,
    FR_AGG_RBM32,      /* a serialized 32-bit RoaringBitmap in a BYTES column, merged by union */
    FR_AGG_RBM64,      /* a serialized 64-bit RoaringBitmap (portable format), by union */
} fr_agg_fn;

typedef enum fr_delete_behavior {
    FR_DELETE_ALLOW = 0,
    FR_DELETE_IGNORE,   /* a delete is dropped silently */
    FR_DELETE_DISABLE,  /* a delete is an error */
} fr_delete_behavior;

typedef enum fr_changelog_image {
    FR_CHANGELOG_FULL = 0, /* an update writes -U (old row) then +U (new row) */
    FR_CHANGELOG_WAL,      /* an update writes +U only */
} fr_changelog_image;

/* Parsers of the option values, case-insensitive ("last_row", "first_row", "versioned",
 * "aggregation"; "sum", ..., "string_agg"; "allow", "ignore", "disable"; "FULL", "WAL"). */
int fr_merge_engine_parse(const char *s, fr_merge_engine *out, fr_error *err);
int fr_agg_fn_parse(const char *s, fr_agg_fn *out, fr_error *err);
int fr_delete_behavior_parse(const char *s, fr_delete_behavior *out, fr_error *err);
int fr_changelog_image_parse(const char *s, fr_changelog_image *out, fr_error *err);
const char *fr_merge_engine_name(fr_merge_engine m);
const char *fr_agg_fn_name(fr_agg_fn f);
/* Whether fn can aggregate a column of type t (sum: numerics; bool_and: BOOLEAN; listagg:
 * strings; rbm32/rbm64: BYTES; max/min: comparable types; last/first: any). */
bool fr_agg_fn_accepts(fr_agg_fn fn, const fr_type *t);

/* How a table's rows merge; the arrays are owned by the caller and copied by fr_kv_open. */
typedef struct fr_kv_spec {
    const fr_schema *schema;        /* the table schema (rows written and stored) */
    const int *pk;                  /* primary key columns, in key order */
    int npk;
    fr_merge_engine merge;
    int version_column;             /* FR_MERGE_VERSIONED: the version column's index */
    const fr_agg_fn *aggs;          /* FR_MERGE_AGGREGATION: one per schema column (pk ignored) */
    const char *const *listagg_delimiters; /* per column, NULL for the default "," */
    fr_delete_behavior delete_behavior;
    fr_changelog_image image;
    fr_compression compression;     /* of the changelog record batches */
    const char *name;               /* for messages: "db.t bucket 3" */
} fr_kv_spec;

typedef struct fr_kv fr_kv;

/* Opens (creating) the KV store in dir for the bucket whose log is `log` (borrowed: it must
 * outlive the fr_kv), and recovers: reads the persisted applied offset and replays the log's
 * changelog from there to the log's end. */
int fr_kv_open(const char *dir, fr_log *log, const fr_kv_spec *spec, fr_kv **out,
               fr_error *err);
/* Flushes RocksDB's memtable (so the next open replays less) and closes. */
void fr_kv_close(fr_kv *kv);

typedef enum fr_kv_op {
    FR_KV_UPSERT = 0,
    FR_KV_DELETE = 1,
} fr_kv_op;

typedef struct fr_kv_write_result {
    int64_t changelog_records; /* records appended to the log (0 when nothing changed) */
    int64_t base_offset;       /* offset of the first, or -1 */
    int64_t rows_changed;      /* keys whose stored row changed */
} fr_kv_write_result;

/* Applies a batch of writes: row i of `rows` (the table schema) is an upsert or a delete
 * (ops[i]; NULL means all upserts). A delete needs only the key columns. target_columns
 * (NULL for all) makes upserts partial: only those columns are set, the others keep the
 * stored value (last_row only; the targets must include the whole primary key and the other
 * columns must be nullable). writer_id/seq: idempotent retries (see fr_log_append);
 * a duplicate is FR_EDUPLICATE with nothing applied. Returns once the changelog is durable
 * and the state applied. Errors: FR_EINVAL (a NULL key, a delete on a table whose
 * delete behavior is disable, target columns not allowed), FR_EIO. */
int fr_kv_write(fr_kv *kv, const fr_batch *rows, const uint8_t *ops,
                const int *target_columns, int ntarget, int64_t writer_id, int32_t seq,
                fr_kv_write_result *result, fr_error *err);

/* Point lookups: row i of `keys` (its columns are the primary key columns, in key order)
 * looks up one key. *out is a new batch in the table schema with one row per key found,
 * and found[i] (caller-allocated, keys rows) says whether key i was found; rows come in key
 * order of the input, found ones only. */
int fr_kv_lookup(fr_kv *kv, const fr_batch *keys, bool *found, fr_batch **out,
                 fr_error *err);

/* Prefix lookup: `prefix` holds the values of the first nprefix primary key columns; every
 * stored row whose key starts with them is returned, in key order, in batches of the
 * projected columns (NULL for all) through fn (the batch is the callee's). A RocksDB prefix
 * scan. */
typedef int (*fr_kv_rows_fn)(void *ctx, fr_batch *batch, fr_error *err);
int fr_kv_prefix_lookup(fr_kv *kv, const fr_value *prefix, int nprefix, const int *columns,
                        int ncolumns, fr_kv_rows_fn fn, void *ctx, fr_error *err);

/* Scans the current state (a RocksDB snapshot), in key order, projecting columns and
 * filtering rows with a predicate bound to the table schema (or NULL). Batches of up to
 * batch_rows rows go to fn. */
int fr_kv_scan(fr_kv *kv, const int *columns, int ncolumns, const fr_expr *filter,
               int64_t batch_rows, fr_kv_rows_fn fn, void *ctx, fr_error *err);

/* The log offset up to which the state is applied, and an estimate of the stored bytes and
 * keys (for metrics and DESCRIBE). */
int64_t fr_kv_applied_offset(fr_kv *kv);
int64_t fr_kv_size_bytes(fr_kv *kv);
int64_t fr_kv_num_keys(fr_kv *kv);

#endif
