/* log.h — the record-batch format and the log of one bucket: an ordered sequence of record
 * batches kept in segment files with offset and time indexes.
 *
 * Invariants: offsets are dense and increase by one per record, starting at 0; a batch is
 * visible to readers only after it is durable under the log's flush policy; a reader never
 * sees a torn batch; after open, every batch in the log has passed its CRC check.
 *
 * The byte layout of a record batch is documented in docs/FORMAT.md; record_batch.c
 * _Static_asserts it. */
#ifndef FIRTH_LOG_H
#define FIRTH_LOG_H

#include "expr/expr.h"

/* ---- the record batch ------------------------------------------------------------------ */

#define FR_RB_MAGIC 1
#define FR_RB_HEADER_BYTES 56
#define FR_RB_BYTES_MAX (64 << 20)
#define FR_RB_RECORDS_MAX (1 << 22)
#define FR_RB_STRING_STAT_BYTES_MAX 64

/* Change types of the records of a batch (log tables: all FR_CHANGE_APPEND). */
typedef enum fr_change_type {
    FR_CHANGE_APPEND = 0,        /* +A */
    FR_CHANGE_INSERT = 1,        /* +I */
    FR_CHANGE_UPDATE_BEFORE = 2, /* -U */
    FR_CHANGE_UPDATE_AFTER = 3,  /* +U */
    FR_CHANGE_DELETE = 4,        /* -D */
} fr_change_type;
const char *fr_change_type_name(fr_change_type t); /* "+A", "+I", "-U", "+U", "-D" */

#define FR_NO_WRITER (-1)

/* What the writer says of a batch it encodes. */
typedef struct fr_rb_params {
    int32_t schema_id;
    fr_compression compression;
    int64_t writer_id;      /* FR_NO_WRITER when not idempotent */
    int32_t batch_sequence; /* -1 when not idempotent */
    const uint8_t *change_types; /* one fr_change_type per row, or NULL for append-only */
    bool no_stats;          /* leave the statistics block out (stats_length 0): for batches
                               that no read prunes, such as the rows a lookup returns */
} fr_rb_params;

/* Encodes b as one record batch (header, column statistics, change types, Arrow IPC
 * RecordBatch message); base offset and commit timestamp are 0 until the log assigns them.
 * Appends to out; the batch's length is a multiple of 8. */
int fr_rb_encode(const fr_batch *b, const fr_rb_params *params, fr_buf *out, fr_error *err);

/* A decoded view of a record batch's header; pointers point into the batch bytes. */
typedef struct fr_rb_view {
    int64_t base_offset;
    int64_t commit_timestamp;
    int32_t length;        /* total bytes, header included */
    uint8_t attributes;
    int32_t schema_id;
    int32_t last_offset_delta;
    int32_t record_count;
    int64_t writer_id;
    int32_t batch_sequence;
    fr_compression compression;
    bool append_only;
    const uint8_t *stats;       int32_t stats_length;
    const uint8_t *change_types; /* NULL when append-only */
    const uint8_t *ipc;         int32_t ipc_length;
} fr_rb_view;

/* Validates and decodes the header at p (n bytes available): magic, lengths within n and the
 * limits, CRC-32C over the covered bytes, sections that add up. FR_ECORRUPT on any
 * mismatch, with the byte position; FR_ERANGE (not corrupt) when n is shorter than the
 * batch's declared length, so that a caller can tell a torn tail from a bad batch. */
int fr_rb_decode(const uint8_t *p, size_t n, fr_rb_view *out, fr_error *err);
/* Decodes and checks a batch's header and the layout of its sections (lengths, limits,
 * magic, attributes, counts) without reading the sections or checking the CRC: for bytes
 * that were checked when they were appended or recovered. The same errors as fr_rb_decode. */
int fr_rb_parse_header(const uint8_t *p, size_t n, fr_rb_view *out, fr_error *err);
/* Decodes the statistics block into stats[ncols] (one per column of schema, which must be
 * the schema the batch was written with; string values point into the batch). FR_ENOTFOUND
 * when the batch carries no statistics (then nothing may be pruned); FR_ECORRUPT when the
 * block does not match the schema or runs past its length. The block's layout is in
 * docs/FORMAT.md. */
int fr_rb_stats(const fr_rb_view *rb, const fr_schema *schema, fr_column_stats *stats,
                fr_error *err);
/* Projects a decoded batch (rb, from fr_rb_decode or a read of the log) to columns
 * cols[0..ncols) of schema, the schema it was written with, without decoding values: the
 * header is kept, the statistics block is left out (stats_length 0), the change types are
 * kept, the IPC message holds the chosen columns in the order given (fr_ipc_project) and
 * the CRC is recomputed. Appends the new batch to out (unchanged on failure). */
int fr_rb_project(const fr_rb_view *rb, const fr_schema *schema, const int *cols, int ncols,
                  fr_buf *out, fr_error *err);
/* Sets base offset and commit timestamp in an encoded batch (outside the CRC). */
void fr_rb_assign(uint8_t *batch, int64_t base_offset, int64_t commit_timestamp);

/* ---- the log of one bucket ------------------------------------------------------------- */

typedef enum fr_flush_mode {
    FR_FLUSH_EVERY_APPEND, /* fsync before acknowledging; concurrent appends share one */
    FR_FLUSH_INTERVAL,     /* fsync every flush_interval_ms; acknowledge at write */
    FR_FLUSH_NONE,         /* leave it to the OS */
} fr_flush_mode;

typedef struct fr_log_options {
    fr_flush_mode flush;
    int64_t flush_interval_ms;
    int64_t segment_bytes;       /* roll a segment past this size; default 1 GiB */
    int64_t index_interval_bytes; /* an offset-index entry every so many bytes; default 4096 */
    int64_t retention_ms;        /* -1: keep forever */
    int64_t retention_bytes;     /* -1: no size limit */
    const char *name;            /* for messages: "db.t bucket 3" */
} fr_log_options;

void fr_log_options_default(fr_log_options *o);

typedef struct fr_log fr_log;

/* Opens (creating dir if needed) the log in dir, recovering from a crash: the last
 * segment's tail is checked batch by batch and anything after the last good batch (a bad
 * CRC, a short batch, a bad index) is truncated, with a WARN log line saying what and how
 * many bytes. Indexes that do not match their segment are rebuilt. The rules are in
 * docs/FORMAT.md, section 5. opts may be NULL for the defaults. Each segment read keeps a
 * read-only mapping of its file; the active segment keeps three open descriptors. */
int fr_log_open(const char *dir, const fr_log_options *opts, fr_log **out, fr_error *err);
/* Closes the log, flushing what is unflushed unless the mode is FR_FLUSH_NONE. No other call
 * may be running. */
void fr_log_close(fr_log *log);
/* Closes without flushing: for a log whose files are removed next (a dropped table's). */
void fr_log_close_noflush(fr_log *log);
/* Makes every batch written so far durable (one fdatasync shared with concurrent appenders).
 * With FR_FLUSH_INTERVAL, appends flush lazily once the interval has passed; a caller that
 * wants a bound on an idle log's unflushed tail calls this on a timer. Thread: any. */
int fr_log_flush(fr_log *log, fr_error *err);
/* The number of fdatasync calls made on segment files since open (for tests and metrics). */
int64_t fr_log_fsync_count(fr_log *log);

/* How long those fdatasyncs took: a count per duration bucket (the upper bounds, in
 * microseconds, are fr_log_fsync_bounds_us; the last bucket counts the longer ones), their
 * number and the sum of their durations. An append under FR_FLUSH_EVERY_APPEND waits for up
 * to two of them, so these are the first place to look when acknowledgements are slow. */
#define FR_LOG_FSYNC_BUCKETS 12
extern const int64_t fr_log_fsync_bounds_us[FR_LOG_FSYNC_BUCKETS - 1];
typedef struct fr_log_fsync_stats {
    int64_t count, sum_us;
    int64_t buckets[FR_LOG_FSYNC_BUCKETS];
} fr_log_fsync_stats;
/* Adds the log's figures since open to *acc, so that a caller can sum several logs.
 * Thread: any (each figure is read on its own, not all at one instant). */
void fr_log_fsync_stats_add(fr_log *log, fr_log_fsync_stats *acc);
/* Adds x's figures to *acc. */
void fr_log_fsync_stats_sum(fr_log_fsync_stats *acc, const fr_log_fsync_stats *x);

/* Appends one encoded record batch (see fr_rb_encode). Assigns the base offset and the
 * commit timestamp (never lower than the previous batch's), writes, and returns once the
 * batch is durable under the flush policy. The base offset and commit timestamp are written
 * into the caller's bytes (outside the CRC) and then copied; the caller keeps the buffer.
 * Thread: any; appends are serialized inside and concurrent appenders share one fsync.
 * Idempotence: when the batch has a writer id and its sequence is not greater than the
 * last one seen from that writer in this log, nothing is written, *base_offset is the
 * offset of the earlier append when known, and FR_EDUPLICATE is returned.
 * The log checks the batch's layout and CRC, not its contents against a schema (it knows
 * none): the caller makes sure the IPC message and the statistics match the table's schema
 * (a batch from outside should be decoded, or re-encoded, before it is appended), since
 * reads trust the statistics to skip batches.
 * Errors: FR_ECORRUPT (bad CRC or layout), FR_EIO, FR_ENOSPC; FR_ESTATE when the log was
 * truncated while the append waited for its fsync; FR_ESEQUENCE (fr_log_append2 with
 * FR_LOG_APPEND_IN_ORDER) when the writer's batch before it did not come in time. */
int fr_log_append(fr_log *log, uint8_t *batch, size_t len, int64_t *base_offset,
                  fr_error *err);

/* Flags of fr_log_append2. */
#define FR_LOG_APPEND_VERIFIED 0x1u /* the caller encoded the batch in this process with
                                     * fr_rb_encode, or checked it whole with fr_rb_decode,
                                     * and has not changed it since: the log checks its
                                     * header and layout but skips the CRC-32C and the IPC
                                     * message (checked by assert in debug builds) */
#define FR_LOG_APPEND_IN_ORDER 0x2u /* a writer the log knows must send its next sequence
                                     * (the last appended plus one): a later one is refused
                                     * with FR_ESEQUENCE and nothing written, so a writer
                                     * with several batches in flight never has one appended
                                     * before a batch it follows; a writer it does not know
                                     * must start at 0 (FR_ESEQUENCE otherwise) */

/* fr_log_append with flags (0 is fr_log_append). FR_LOG_APPEND_VERIFIED is only for trusted
 * in-process callers, such as the engine appending what it just encoded, or a batch from a
 * client whose CRC it has just checked in a buffer no one else writes: it spares a second
 * CRC pass over every batch. Bytes from outside the process (a client, a file) that were
 * not checked so must go through the full check, flags 0. */
int fr_log_append2(fr_log *log, uint8_t *batch, size_t len, unsigned flags,
                   int64_t *base_offset, fr_error *err);

/* What fr_log_append_nowait hands back: enough to wait for that batch's durability. */
typedef struct fr_log_ticket {
    int64_t end;         /* the offset after the batch */
    int64_t truncations; /* the log's count of truncations when the batch was written */
} fr_log_ticket;

/* fr_log_append2 split in two, so that a caller may compute and write its next batch
 * while this one waits for the disk: the append checks and writes the batch (assigning its
 * base offset) and returns without waiting for durability; *ticket says what
 * fr_log_wait_durable must wait for. Until then the batch must not be acknowledged to
 * anyone: under FR_FLUSH_EVERY_APPEND it is not visible to readers, and a crash of the
 * machine may lose it (with every batch written after it, never a batch before it: the log
 * is made durable in offset order). The watcher runs in fr_log_wait_durable. The errors
 * of the append are fr_log_append2's, those of the wait its wait's: FR_EIO or FR_ENOSPC
 * after a failed fsync (the log then refuses further appends), FR_ESTATE when the log was
 * truncated before the batch became durable. Every ticket should be waited for. */
int fr_log_append_nowait(fr_log *log, uint8_t *batch, size_t len, unsigned flags,
                         int64_t *base_offset, fr_log_ticket *ticket, fr_error *err);
/* Returns once the batch of ticket is durable under the flush policy (at once for
 * FR_FLUSH_NONE; FR_FLUSH_INTERVAL flushes lazily, as an append does), sharing one
 * fdatasync with concurrent appenders and waiters. Thread: any. */
int fr_log_wait_durable(fr_log *log, const fr_log_ticket *ticket, fr_error *err);

/* Watching appends, for long polling: a watcher's function runs on the appending thread
 * after each successful append, once the batch is visible to readers (end_offset is the
 * log's visible end then), with none of the log's locks held. It must be quick and must not
 * append to the log. One watcher per log; setting another replaces it and NULL removes it.
 * The watcher is the caller's and must stay valid while set (an append may be calling it
 * while it is replaced): keep it alive as long as the log. Thread: any. */
typedef struct fr_log_watcher {
    void (*appended)(void *ctx, fr_log *log, int64_t end_offset);
    void *ctx;
} fr_log_watcher;
void fr_log_set_watcher(fr_log *log, const fr_log_watcher *w);

int64_t fr_log_start_offset(fr_log *log); /* earliest offset still kept */
int64_t fr_log_end_offset(fr_log *log);   /* next offset to be assigned (visible end) */
/* The first offset whose batch's commit timestamp is >= ts, or the end offset. Commit
 * timestamps never decrease along the log, so this is a search through the time indexes. */
int fr_log_offset_for_time(fr_log *log, int64_t ts_ms, int64_t *offset, fr_error *err);

/* A read: from an offset, projecting columns and filtering rows. */
typedef struct fr_log_read {
    int64_t from_offset;
    const fr_schema *schema;  /* the table schema the batches were written with */
    const int *columns;       /* columns to return, or NULL for all */
    int ncolumns;
    const fr_expr *filter;    /* bound to schema, or NULL */
    int64_t max_bytes;        /* stop after about this many bytes of batches read */
    int64_t max_records;      /* stop after this many records returned (-1: no limit) */
} fr_log_read;

/* Called once per batch read, in offset order. `batch` holds the projected columns of the
 * rows that passed the filter (possibly zero rows when all were filtered), `offsets` the
 * offset of each of its rows, `change_types` their change types (or NULL when append-only),
 * commit_ts the batch's commit timestamp. Ownership of batch passes to the callee. Return
 * non-zero to stop. */
typedef int (*fr_log_batch_fn)(void *ctx, fr_batch *batch, const int64_t *offsets,
                               const uint8_t *change_types, int64_t commit_ts, fr_error *err);

/* Reads from r->from_offset to the end (or the limits): batches whose statistics rule the
 * filter out are skipped without decoding (and without a callback); of the others only the
 * columns that the projection and the filter need are decoded (their buffers copied or
 * decompressed straight from the segment), then filtered and projected. *next_offset is where the next read should start.
 * max_bytes <= 0 means no byte limit; max_records 0 reads nothing. Columns must be distinct
 * and in range (FR_EINVAL). A from_offset outside start..end is FR_ERANGE. A batch written
 * with another schema id than r->schema's ends the read before it; when it is the first
 * batch, the read fails with FR_ETYPE (read it with its own schema).
 * Thread: any, concurrently with appends, retention and truncation (a concurrent truncation
 * may let the read return batches it removes). */
int fr_log_read_batches(fr_log *log, const fr_log_read *r, fr_log_batch_fn fn, void *ctx,
                        int64_t *next_offset, fr_error *err);

/* Reads raw record batches (as stored) from an offset, up to max_bytes (at least one
 * batch): the first batch returned is the one containing from_offset. *out is owned by the
 * caller. Used by replication, tiering and remote fetches. */
int fr_log_read_raw(fr_log *log, int64_t from_offset, int64_t max_bytes, fr_buf *out,
                    fr_error *err);

/* Called by fr_log_scan_raw for each stored batch, in offset order: its bytes where they lie
 * in the segment's mapping (valid only during the call) and its parsed header. Return 0 to
 * go on, > 0 to stop after this batch, < 0 (an FR_ code, err set) to fail the scan. */
typedef int (*fr_log_raw_fn)(void *ctx, const uint8_t *batch, const fr_rb_view *v,
                             fr_error *err);
/* fr_log_read_raw without the copy: the batches it would return are handed to fn in place,
 * for a reader that only takes part of each (a projection). Same limits and errors; those
 * of fn are returned as they are. Thread: as fr_log_read_raw. */
int fr_log_scan_raw(fr_log *log, int64_t from_offset, int64_t max_bytes, fr_log_raw_fn fn,
                    void *ctx, fr_error *err);

/* Deletes whole segments, oldest first, never the active one: a segment whose newest batch
 * is older than now_ms - retention_ms, and a segment without which the log would still hold
 * at least retention_bytes (Kafka's retention.bytes). Readers that hold a deleted segment
 * finish their read. Returns the number of segments removed in *removed (may be NULL). */
int fr_log_enforce_retention(fr_log *log, int64_t now_ms, int *removed, fr_error *err);

/* Removes all data at and after offset (used by tests and by KV recovery). offset must be
 * the first offset of a batch (FR_EINVAL otherwise, naming the batch) and not before the
 * start (FR_ERANGE); an offset at or past the end is a no-op. Appends waiting for their
 * flush when a truncation happens fail with FR_ESTATE. */
int fr_log_truncate(fr_log *log, int64_t offset, fr_error *err);

/* Sizes for metrics and DESCRIBE. */
int64_t fr_log_size_bytes(fr_log *log);
int fr_log_num_segments(fr_log *log);

#endif
