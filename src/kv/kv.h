/* kv.h — the key-value state of one bucket of a primary-key table: a RocksDB instance that
 * holds the latest row per primary key, the merge engines that combine a new row with the
 * stored one, and the changelog each write produces.
 *
 * Write path (DESIGN.md §5): for each record the old row is looked up (a write-batch-local
 * cache first, then RocksDB: the stored rows of all the keys of a write are read up front
 * with batched MultiGets in key order), the merge engine decides the new row, the resulting
 * changelog records (+I, -U, +U, -D) are appended to the bucket's log as one record batch —
 * the log is the write-ahead log — and only then is RocksDB updated, in one write batch in
 * key order. An unchanged row writes nothing. RocksDB has whole-key bloom filters in its
 * SST files and memtables, so a new key is not searched for. Point lookups read all their
 * keys with batched MultiGets in key order from one snapshot.
 *
 * Invariants: RocksDB's own WAL is off; every RocksDB write batch also stores the log offset
 * up to which the state is applied (meta key), so at open the state is brought up to date by
 * replaying the log's changelog from that offset; after open the state equals the changelog
 * replayed from offset 0. Log segments go (retention) only once the state up to their end
 * is on disk (fr_kv_enforce_log_retention), so the log never starts after the offset the
 * state on disk is applied to; a log that does is FR_ECORRUPT at open. RocksDB keys are a one-byte data prefix followed by fr_key_encode
 * of the primary key columns in declared order (the meta key sorts before them); values are
 * fr_row_encode of the whole row. The merge rules, defaults and every
 * changelog each engine writes are documented in docs/TABLES.md ("Merge engines",
 * "Changelog").
 *
 * Thread: any. Writes to one fr_kv compute their records and append them to the log one
 * at a time, then wait for the log's fsync without the store's lock (the next write
 * computes and appends meanwhile, and one fsync covers several) and apply their rows to
 * RocksDB in the order of their appends; reads (lookups, scans) run concurrently with
 * writes and see the state as of the last applied write, never a change that is not yet
 * durable. */
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
/* Whether fn can aggregate a column of type t (sum, product: numerics; bool_and, bool_or:
 * BOOLEAN; listagg: strings; rbm32/rbm64: BYTES; max/min: numerics, strings and temporal
 * types; last/first: any). */
bool fr_agg_fn_accepts(fr_agg_fn fn, const fr_type *t);
/* The delete behavior a table has when 'table.delete.behavior' is not set: ignore for
 * first_row, versioned and aggregation, allow for last_row (as Fluss). */
fr_delete_behavior fr_delete_behavior_default(fr_merge_engine m);

/* ---- resources shared by the stores of an engine ---------------------------------------- */

/* One LRU block cache for every store, and a budget for their memtables together. RocksDB
 * 7.8's C API has no write buffer manager, so the budget is kept here: each store's
 * memtable may grow to half the budget (at most 64 MiB), and after a write, when the active
 * memtables of all stores together pass 7/8 of the budget, the store written to switches
 * its memtable and has it flushed in the background (if it holds at least 1/128 of the
 * budget, and 256 KiB), as RocksDB's write buffer manager does. Memtables being flushed
 * (at most two per store) are not counted. Idle stores keep theirs until their
 * next flush (fr_kv_flush, the engine's periodic flush or close). Reference counted: every
 * store holds one reference, so the environment lives as long as its last store. */
typedef struct fr_kv_env fr_kv_env;

typedef struct fr_kv_env_options {
    int64_t block_cache_bytes;  /* capacity of the shared block cache; default 64 MiB */
    int64_t write_buffer_bytes; /* the memtables of every store together; default 256 MiB,
                                   at least 1 MiB */
    int64_t row_cache_bytes;    /* the rows point lookups found, for the next lookups of
                                   the same keys; default 128 MiB, 0 none */
} fr_kv_env_options;

void fr_kv_env_options_default(fr_kv_env_options *o);
/* A new environment (one reference, the caller's). FR_EINVAL for sizes out of range. */
int fr_kv_env_new(const fr_kv_env_options *o, fr_kv_env **out, fr_error *err);
void fr_kv_env_retain(fr_kv_env *env);
/* Drops a reference; the last one frees the environment. NULL is a no-op. */
void fr_kv_env_release(fr_kv_env *env);
/* Bytes in the active memtables of the environment's open stores (as last seen after each
 * store's writes), and the block cache's usage. For metrics and tests. */
int64_t fr_kv_env_memtable_bytes(fr_kv_env *env);
int64_t fr_kv_env_block_cache_bytes(fr_kv_env *env);
int64_t fr_kv_env_row_cache_bytes(fr_kv_env *env);

/* How a table's rows merge; the arrays are owned by the caller and copied by fr_kv_open. */
typedef struct fr_kv_spec {
    const fr_schema *schema;        /* the table schema (rows written and stored) */
    const int *pk;                  /* primary key columns, in key order */
    int npk;
    fr_merge_engine merge;
    int version_column;             /* FR_MERGE_VERSIONED: the version column's index (INT,
                                       BIGINT, TIMESTAMP or TIMESTAMP_LTZ); else ignored */
    const fr_agg_fn *aggs;          /* FR_MERGE_AGGREGATION: one per schema column (pk ignored),
                                       or NULL for last_value_ignore_nulls everywhere */
    const char *const *listagg_delimiters; /* per column (array or entries may be NULL: the
                                       default ","); listagg/string_agg columns only */
    fr_delete_behavior delete_behavior; /* see fr_delete_behavior_default; allow is refused
                                       for first_row and versioned (as Fluss) */
    fr_changelog_image image;
    fr_compression compression;     /* of the changelog record batches */
    const char *name;               /* for messages: "db.t bucket 3" */
    fr_kv_env *env;                 /* shared cache and memtable budget (the store takes a
                                       reference), or NULL for an environment of its own
                                       with an 8 MiB cache and a 64 MiB budget */
    bool log_unsynced;              /* the log is never fsynced (FR_FLUSH_NONE): flushes of
                                       the state do not fsync it first */
} fr_kv_spec;

typedef struct fr_kv fr_kv;

/* Checks a spec without opening anything (for CREATE TABLE): the primary key (distinct
 * columns of the schema; a NULL key value is refused by each write), the version column's
 * type, each aggregate function against its column's type, the delete behavior against
 * the engine. FR_EINVAL with a message naming the column or option. */
int fr_kv_spec_check(const fr_kv_spec *spec, fr_error *err);

/* Opens (creating) the KV store in dir for the bucket whose log is `log` (borrowed: it must
 * outlive the fr_kv), and recovers: reads the persisted applied offset and replays the log's
 * changelog from there to the log's end. A state ahead of the log (the log lost a tail that
 * was not flushed) is rebuilt from offset 0 when the log still starts at 0; a state that
 * needs changelog the log no longer holds is FR_ECORRUPT. Errors: those of
 * fr_kv_spec_check, FR_EIO (RocksDB), FR_ECORRUPT, FR_ENOMEM. */
int fr_kv_open(const char *dir, fr_log *log, const fr_kv_spec *spec, fr_kv **out,
               fr_error *err);
/* Flushes (as fr_kv_flush, so the next open replays nothing) and closes. NULL is a no-op.
 * No other call may be running. */
void fr_kv_close(fr_kv *kv);
/* Closes without flushing, so the writes since the last flush are lost from RocksDB as in
 * a crash (the log still holds them and the next open replays them): for tests, and for a
 * dropped table's stores, whose files are removed next. */
void fr_kv_close_noflush(fr_kv *kv);

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
 * stored value, and a delete clears only the target columns (the row goes when every other
 * column is NULL). Partial writes are for last_row and aggregation (as Fluss); the targets
 * must include the whole primary key and every non-key column must be nullable. Targets
 * naming every column are a full write. writer_id/seq: idempotent retries (see
 * fr_log_append); a duplicate is FR_EDUPLICATE with nothing applied (also for a batch that
 * changed nothing, while the fr_kv stays open). Returns once the changelog is durable and
 * the state applied. The whole batch is checked before anything is applied. Errors:
 * FR_EINVAL (a NULL key, a delete on a table whose delete behavior is disable, target
 * columns not allowed, a malformed bitmap for rbm32/rbm64, a schema other than the
 * table's), FR_ERANGE (an aggregate that does not fit its column: listagg past a
 * VARCHAR(n)), FR_ELIMIT (a changelog past the record batch limits), FR_EIO; FR_ESTATE
 * after a failed RocksDB write (the state is behind the log: reopen to recover). */
int fr_kv_write(fr_kv *kv, const fr_batch *rows, const uint8_t *ops,
                const int *target_columns, int ntarget, int64_t writer_id, int32_t seq,
                fr_kv_write_result *result, fr_error *err);

/* Point lookups: row i of `keys` (its columns are the primary key columns, in key order;
 * values of another type are cast to the key column's type) looks up one key. *out is a new
 * batch in the table schema with one row per key found, and found[i] (caller-allocated,
 * keys rows) says whether key i was found; rows come in the order of the input, found ones
 * only. A key with a NULL is not found. All keys are read from one snapshot. */
int fr_kv_lookup(fr_kv *kv, const fr_batch *keys, bool *found, fr_batch **out,
                 fr_error *err);

/* Callbacks of lookups and scans: the batch is the callee's to free. A negative return is
 * an error (fill err) that the read returns; a positive return stops the read early (the
 * read then returns 0). */
typedef int (*fr_kv_rows_fn)(void *ctx, fr_batch *batch, fr_error *err);

/* Prefix lookup: `prefix` holds the values of the first nprefix (1..npk) primary key
 * columns (cast to their types when they differ; a NULL matches nothing); every stored row
 * whose key starts with them is returned, in key order, in batches of up to 4096 rows of the
 * projected columns (NULL for all) through fn. A RocksDB prefix scan over one snapshot. */
int fr_kv_prefix_lookup(fr_kv *kv, const fr_value *prefix, int nprefix, const int *columns,
                        int ncolumns, fr_kv_rows_fn fn, void *ctx, fr_error *err);

/* Scans the current state (a RocksDB snapshot), in key order, projecting columns and
 * filtering rows with a predicate bound to the table schema (or NULL). Batches of up to
 * batch_rows rows (<= 0: 4096) go to fn; batches left empty by the filter are not passed. */
int fr_kv_scan(fr_kv *kv, const int *columns, int ncolumns, const fr_expr *filter,
               int64_t batch_rows, fr_kv_rows_fn fn, void *ctx, fr_error *err);

/* The log offset up to which the state is applied, and an estimate of the stored bytes and
 * keys (for metrics and DESCRIBE; the key count is exact for FULL changelog images, RocksDB's
 * estimate for WAL images, where upserts are not looked up). */
int64_t fr_kv_applied_offset(fr_kv *kv);

/* ---- durability of the state ------------------------------------------------------------ */

/* Makes the state durable: first the log up to the applied offset (fr_log_flush; skipped
 * when spec.log_unsynced), so that the state on disk is never ahead of a durable log, then
 * RocksDB's memtables, waiting for the flush to finish. Afterwards the persisted offset is
 * at least the applied offset as of the call. Writes and reads go on meanwhile; concurrent
 * flushes are serialized. FR_EIO when RocksDB or the log fails. */
int fr_kv_flush(fr_kv *kv, fr_error *err);
/* The applied offset known to be on disk: recovery replays the changelog from at most here
 * (RocksDB may have flushed more on its own). At open it is the offset read from disk;
 * fr_kv_flush raises it. Always <= fr_kv_applied_offset. */
int64_t fr_kv_persisted_offset(fr_kv *kv);
/* Whether the unflushed tail is past a limit: at least max_records changelog records past
 * the persisted offset (<= 0: no limit), or a change not persisted for max_age_ms or more
 * (<= 0: no limit). For a periodic flush that bounds what the next open replays. */
bool fr_kv_flush_due(fr_kv *kv, int64_t max_records, int64_t max_age_ms);
/* Applies the log's retention (fr_log_enforce_retention, with the log's retention options)
 * without removing changelog that recovery needs: a segment may go only when it ends at or
 * below the persisted offset. The log API does not say where segments end, so the store
 * makes the persisted offset reach the log's end: it flushes (writes going on), then
 * pauses writes, flushes what they added meanwhile, and enforces the retention before
 * writes resume; every segment but the active one then ends at or below the persisted
 * offset. Call it only when the retention may remove something (it flushes every time).
 * *removed (may be NULL) gets the number of segments removed. FR_ESTATE after a failed
 * write (reopen first), FR_EIO. */
int fr_kv_enforce_log_retention(fr_kv *kv, int64_t now_ms, int *removed, fr_error *err);
int64_t fr_kv_size_bytes(fr_kv *kv);
int64_t fr_kv_num_keys(fr_kv *kv);

#endif
