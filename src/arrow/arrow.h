/* arrow.h — columnar batches in the Apache Arrow memory layout, their builders, the Arrow IPC
 * stream format (Schema and RecordBatch messages, metadata version V5, with per-buffer
 * BodyCompression ZSTD or LZ4_FRAME), projection of an encoded RecordBatch message without
 * decoding values, and export through the Arrow C Data Interface.
 *
 * Memory layout of one column (fr_column), exactly Arrow's:
 *   validity  bitmap, bit i (LSB first) set when row i is valid; NULL when no row is null
 *   offsets   int32[length + 1] for strings and bytes (Utf8 / Binary); else NULL
 *   values    fixed-width values (BOOLEAN: a bitmap), or the var-width data bytes
 * Arrow types used: Bool, Int(8/16/32/64, signed), FloatingPoint(SINGLE/DOUBLE),
 * Decimal(p, s, 128), Utf8 (CHAR/VARCHAR/STRING), Binary, Date(DAY),
 * Time(SECOND|MILLISECOND: 32 bit, MICROSECOND|NANOSECOND: 64 bit),
 * Timestamp(unit, timezone null) for TIMESTAMP and Timestamp(unit, "UTC") for TIMESTAMP_LTZ.
 * Field custom_metadata "firth.type" keeps CHAR(n)/VARCHAR(n) lengths across IPC.
 *
 * A batch owns its columns' memory (reference counted inside: projections and C Data exports
 * share it). Batches are immutable once built and may be read from any thread; buffers the
 * module allocates start on 64-byte boundaries and are zero-padded to a multiple of 8.
 * Decoding checks NOT NULL: a batch never holds nulls in a column whose type is NOT NULL. */
#ifndef FIRTH_ARROW_H
#define FIRTH_ARROW_H

#include "types/types.h"

#define FR_BATCH_ROWS_MAX (1 << 24)
#define FR_IPC_MESSAGE_BYTES_MAX (256 << 20)
#define FR_IPC_BUFFERS_MAX (3 * FR_SCHEMA_COLUMNS_MAX)

typedef struct fr_column {
    fr_type type;
    int64_t length;
    int64_t null_count;
    const uint8_t *validity; /* NULL when null_count == 0 */
    const int32_t *offsets;  /* var-width only */
    const uint8_t *values;
} fr_column;

typedef struct fr_batch fr_batch;

/* ---- batches --------------------------------------------------------------------------- */

/* The schema lives as long as the batch (the batch holds its own copy). */
const fr_schema *fr_batch_schema(const fr_batch *b);
int64_t fr_batch_num_rows(const fr_batch *b);
int fr_batch_num_columns(const fr_batch *b);
/* The i-th column; lives as long as the batch. */
const fr_column *fr_batch_column(const fr_batch *b, int i);
void fr_batch_free(fr_batch *b);

/* Reads one cell. String values point into the batch. */
void fr_column_get(const fr_column *c, int64_t row, fr_value *out);
static inline bool fr_column_is_null(const fr_column *c, int64_t row)
{
    return c->validity && !((c->validity[row >> 3] >> (row & 7)) & 1);
}

/* A new batch with the chosen columns of b, in the given order. It shares b's buffers (no
 * copy) and keeps them alive on its own: b may be freed first. */
int fr_batch_project(const fr_batch *b, const int *cols, int ncols, fr_batch **out,
                     fr_error *err);
/* A new batch with the rows whose bit is set in `keep` (a bitmap of b's length). */
int fr_batch_filter(const fr_batch *b, const uint8_t *keep, fr_batch **out, fr_error *err);
/* A new batch of rows [offset, offset + length). */
int fr_batch_slice(const fr_batch *b, int64_t offset, int64_t length, fr_batch **out,
                   fr_error *err);
/* Builds a batch from ready columns: takes ownership of the buffers in `bufs` (fr_malloc'd,
 * three per column: validity, offsets, values; any may be NULL) whether it succeeds or not.
 * Var-width offsets must start at 0; a validity buffer is ignored when the null count is 0.
 * The IPC writer copies exact lengths, so these buffers need no alignment or padding. */
int fr_batch_from_buffers(const fr_schema *schema, int64_t rows, uint8_t **bufs,
                          const int64_t *null_counts, fr_batch **out, fr_error *err);

/* ---- builders -------------------------------------------------------------------------- */

/* Builds a batch row by row or column by column. Not thread-safe. */
typedef struct fr_builder fr_builder;

int fr_builder_new(const fr_schema *schema, fr_builder **out, fr_error *err);
void fr_builder_free(fr_builder *bld);
/* Appends one cell to column col. The value is converted to the column's type with
 * fr_value_cast (so a string "12.5" or an INT literal fits a DECIMAL column); a NULL into a
 * NOT NULL column is FR_EINVAL naming the column. */
int fr_builder_append(fr_builder *bld, int col, const fr_value *v, fr_error *err);
/* Typed fast paths: no conversion; the caller guarantees the column's physical type. */
int fr_builder_append_null(fr_builder *bld, int col, fr_error *err);
int fr_builder_append_i64(fr_builder *bld, int col, int64_t v, fr_error *err);
int fr_builder_append_f64(fr_builder *bld, int col, double v, fr_error *err);
int fr_builder_append_i128(fr_builder *bld, int col, fr_i128 v, fr_error *err);
int fr_builder_append_bool(fr_builder *bld, int col, bool v, fr_error *err);
int fr_builder_append_bytes(fr_builder *bld, int col, const void *p, size_t n, fr_error *err);
/* Rows appended so far (the length of column 0). */
int64_t fr_builder_num_rows(const fr_builder *bld);
/* Drops the cells of the current, unfinished row so that every column has the same length
 * again (used when one field of a row fails to parse). */
void fr_builder_rollback_row(fr_builder *bld);
/* Finishes the batch (all columns must have the same length) and resets the builder so it
 * can build the next batch. */
int fr_builder_finish(fr_builder *bld, fr_batch **out, fr_error *err);

/* ---- Arrow IPC ------------------------------------------------------------------------- */

typedef enum fr_compression {
    FR_COMPRESSION_NONE = 0,
    FR_COMPRESSION_LZ4_FRAME = 1,
    FR_COMPRESSION_ZSTD = 2,
} fr_compression;

/* Parses "NONE", "LZ4_FRAME", "ZSTD" (case-insensitive). */
int fr_compression_parse(const char *s, fr_compression *out, fr_error *err);
const char *fr_compression_name(fr_compression c);

/* Appends an encapsulated Schema message (0xFFFFFFFF, int32 metadata length, flatbuffer
 * Message padded to 8 bytes, no body). */
int fr_ipc_write_schema(const fr_schema *s, fr_buf *out, fr_error *err);
/* Appends an encapsulated RecordBatch message for b, compressing each buffer on its own
 * with codec (a buffer that does not shrink is stored uncompressed with length -1, as the
 * spec allows). */
int fr_ipc_write_batch(const fr_batch *b, fr_compression codec, fr_buf *out, fr_error *err);
/* Appends the end-of-stream marker (0xFFFFFFFF 0x00000000). */
int fr_ipc_write_eos(fr_buf *out, fr_error *err);

/* Decodes an encapsulated Schema message at the start of p; *used is its full size. */
int fr_ipc_read_schema(const uint8_t *p, size_t n, int32_t schema_id, fr_schema **out,
                       size_t *used, fr_error *err);
/* Decodes an encapsulated RecordBatch message at the start of p against schema (the
 * message must match it: number of fields, buffers, lengths). Every length, offset and
 * count is checked against n and the limits above; bad input is FR_ECORRUPT, a declared size
 * beyond a limit FR_ELIMIT, valid Arrow that firth does not handle (dictionaries, other
 * metadata versions, codecs) FR_EUNSUPPORTED. Never reads outside p[0, n). */
int fr_ipc_read_batch(const uint8_t *p, size_t n, const fr_schema *schema, fr_batch **out,
                      size_t *used, fr_error *err);
/* Decodes only columns cols[0..ncols) (any order, distinct; none gives the rows alone) of
 * a RecordBatch message written with `schema`, as a batch of out_schema, which must be
 * schema projected to cols (fr_schema_project; FR_EINVAL otherwise). The message's metadata
 * is checked as by fr_ipc_read_batch, but only the chosen columns' buffers are copied
 * (uncompressed) or decompressed, straight from p: what fr_ipc_project followed by
 * fr_ipc_read_batch gives, without the projected message in between. *out is the caller's;
 * it does not point into p. */
int fr_ipc_read_batch_columns(const uint8_t *p, size_t n, const fr_schema *schema,
                              const int *cols, int ncols, const fr_schema *out_schema,
                              fr_batch **out, fr_error *err);
/* Checks an encapsulated RecordBatch message against schema without decoding values: the
 * metadata and layout as fr_ipc_read_batch checks them, NOT NULL columns without nulls, every
 * buffer long enough for the rows (for a compressed buffer, the uncompressed length it
 * declares), and the offsets of uncompressed variable-width columns. What it cannot see
 * without decompressing (the compressed bytes themselves, the offsets and validity bits in
 * them) a reader still checks when it decodes. *rows is the message's row count; *used its
 * size. Costs a pass over the metadata and the offsets, not over the values. */
int fr_ipc_check_batch(const uint8_t *p, size_t n, const fr_schema *schema, int64_t *rows,
                       size_t *used, fr_error *err);
/* Reads the row count of an encapsulated RecordBatch message without decoding it. */
int fr_ipc_batch_rows(const uint8_t *p, size_t n, int64_t *rows, fr_error *err);

/* Projection without decoding values: rewrites the RecordBatch message of a batch with
 * `schema` so that it holds only columns `cols` (ascending or any order, no duplicates),
 * copying their (possibly compressed) buffers as they are. Appends to out. */
int fr_ipc_project(const uint8_t *p, size_t n, const fr_schema *schema, const int *cols,
                   int ncols, fr_buf *out, fr_error *err);

/* Reads a whole IPC stream (schema, batches, optional EOS): calls fn for each batch; the
 * batch is the callee's to free. Used by tests and `firth produce --format arrow`. */
typedef int (*fr_ipc_batch_fn)(void *ctx, const fr_schema *schema, fr_batch *batch,
                               fr_error *err);
int fr_ipc_read_stream(const uint8_t *p, size_t n, fr_ipc_batch_fn fn, void *ctx,
                       fr_error *err);

/* ---- Arrow C Data Interface ------------------------------------------------------------ */

struct ArrowSchema;
struct ArrowArray;
/* Exports b as a struct array (one child per column). Both outputs are owned by the caller
 * and released with their release callbacks; they keep the batch's memory alive on their
 * own (b may be freed right after). */
int fr_batch_export(const fr_batch *b, struct ArrowSchema *schema, struct ArrowArray *array,
                    fr_error *err);
/* Imports a struct array of the types above; moves array whether it succeeds or not (its
 * release is called when the returned batch is freed, or before returning an error; either
 * way array->release is NULL on return). The schema stays the caller's. Buffers are shared,
 * not copied, except bitmaps at offsets that are not a multiple of 8, offsets that do not
 * start at 0, and misaligned values. Top-level (struct) nulls are FR_EUNSUPPORTED. */
int fr_batch_import(struct ArrowSchema *schema, struct ArrowArray *array, fr_batch **out,
                    fr_error *err);

#endif
