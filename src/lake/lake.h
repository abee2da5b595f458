/* lake.h — the lake: Parquet files, and Apache Iceberg v2 tables in a filesystem catalog.
 *
 * Parquet (lake_parquet_*.c, lake_thrift.c): a writer of flat schemas of firth's types
 * (row groups, data pages v1, PLAIN and RLE_DICTIONARY encodings, RLE/bit-packed definition
 * levels, codecs ZSTD, SNAPPY, UNCOMPRESSED, statistics, logical types, Iceberg field ids)
 * and a reader of such files and of the flat files other engines write (DuckDB's defaults),
 * with column pruning and statistics per row group. The mapping of firth types to Parquet
 * types is in docs/LAKE.md.
 *
 * Iceberg (lake_iceberg_*.c, lake_avro.c): one table lives in a directory
 * `<warehouse>/<db>/<table>/` holding `metadata/v<N>.metadata.json`,
 * `metadata/version-hint.text`, manifest lists and manifests (Avro object container files
 * written with libavro, deflate codec) under `metadata/`, and data and delete files (Parquet)
 * under `data/`. A commit writes new files only, then publishes `v<N+1>.metadata.json` with
 * an atomic create-if-absent, then rewrites the version hint: a crash at any point leaves
 * the previous snapshot the newest readable one, and files of a commit that never published
 * are orphans that fr_iceberg_remove_orphans deletes. One process writes a table at a time
 * (the engine's data-dir lock sees to it); readers may run in other processes.
 *
 * Lake tables carry the table's columns followed by `__bucket` INT, `__offset` BIGINT and
 * `__timestamp` TIMESTAMP_LTZ(6) (fr_lake_schema builds it). Every snapshot's summary holds
 * the tiered offset of every bucket, so the lake commit and the tiered offsets are one
 * atomic step.
 *
 * Decoders of outside bytes here (Thrift compact, Parquet footer and pages, Avro, metadata
 * JSON) check every length against their input and the limits below and fail with
 * FR_ECORRUPT naming the file; they never crash. Thread: the objects below are not thread
 * safe; distinct objects may be used from distinct threads. */
#ifndef FIRTH_LAKE_H
#define FIRTH_LAKE_H

#include "expr/expr.h"

#define FR_LAKE_COL_BUCKET "__bucket"
#define FR_LAKE_COL_OFFSET "__offset"
#define FR_LAKE_COL_TIMESTAMP "__timestamp"
#define FR_LAKE_EXTRA_COLUMNS 3

#define FR_PARQUET_FOOTER_BYTES_MAX (64 << 20)
#define FR_PARQUET_PAGE_BYTES_MAX (256 << 20)
#define FR_PARQUET_ROW_GROUPS_MAX 1000000

/* ---- the lake schema ------------------------------------------------------------------- */

/* The lake schema of a table: its columns, then __bucket, __offset, __timestamp. Iceberg v2
 * keeps times and timestamps in microseconds, so TIME(p), TIMESTAMP(p) and TIMESTAMP_LTZ(p)
 * become precision 6 (values are scaled up losslessly when tiered and back when read);
 * p > 6 fails with FR_EUNSUPPORTED naming the column. CHAR(n) and VARCHAR(n) become STRING.
 * Field ids are column position + 1 (tables have no column evolution yet; when they get it,
 * ids will come from the catalog). *out is freed by the caller with fr_schema_free;
 * field_ids (may be NULL) gets ncols + 3 ids in a caller array of FR_SCHEMA_COLUMNS_MAX + 3
 * entries. */
int fr_lake_schema(const fr_schema *table, fr_schema **out, int32_t *field_ids,
                   fr_error *err);

/* ---- Parquet --------------------------------------------------------------------------- */

typedef enum fr_parquet_codec {
    FR_PARQUET_UNCOMPRESSED = 0, /* values as in parquet.thrift's CompressionCodec */
    FR_PARQUET_SNAPPY = 1,
    FR_PARQUET_ZSTD = 6,
} fr_parquet_codec;

/* Parses "zstd", "snappy", "uncompressed" (any case). */
int fr_parquet_codec_parse(const char *s, fr_parquet_codec *out, fr_error *err);

typedef struct fr_parquet_options {
    int64_t row_group_bytes; /* target uncompressed bytes of a row group (128 MiB) */
    int64_t page_bytes;      /* target uncompressed bytes of a data page (1 MiB) */
    int64_t dict_bytes_max;  /* a column chunk's dictionary beyond this falls back to PLAIN
                              * for the rest of the chunk (1 MiB) */
    fr_parquet_codec codec;  /* ZSTD */
    int zstd_level;          /* 3 */
} fr_parquet_options;
void fr_parquet_options_default(fr_parquet_options *o);

/* Statistics of one column of a Parquet file or of an Iceberg data file. min and max have
 * the column's type (strings and bytes point into the object that returned them, and live as
 * long as it); they are taken over non-null values and are absent for all-null columns. */
typedef struct fr_lake_col_stats {
    int32_t field_id;
    int64_t values; /* rows, nulls included */
    int64_t nulls;
    int64_t bytes;  /* compressed bytes of the column's chunks, headers included */
    bool has_minmax;
    fr_value min, max;
} fr_lake_col_stats;

/* What a finished Parquet file holds, for manifests. Owned by the caller:
 * fr_parquet_file_info_free. */
typedef struct fr_parquet_file_info {
    int64_t rows;
    int64_t file_bytes;
    int ncols;
    fr_lake_col_stats *cols;     /* one per schema column */
    int nrow_groups;
    int64_t *row_group_offsets;  /* file offset of each row group (Iceberg split_offsets) */
} fr_parquet_file_info;
void fr_parquet_file_info_free(fr_parquet_file_info *info);

typedef struct fr_parquet_writer fr_parquet_writer;

/* Creates the file at path (it must not exist) for rows of schema (flat; every firth type),
 * with field_ids[i] as the Parquet field_id of column i (NULL: none). opts NULL: defaults.
 * The schema is copied. Errors: FR_EEXIST, FR_EIO, FR_EINVAL (bad options). */
int fr_parquet_writer_open(const char *path, const fr_schema *schema, const int32_t *field_ids,
                           const fr_parquet_options *opts, fr_parquet_writer **out,
                           fr_error *err);
/* Adds the rows of b (its schema must equal the writer's). Row groups are cut when their
 * buffered uncompressed size reaches the target. Errors: FR_EINVAL, FR_EIO, FR_ENOSPC. */
int fr_parquet_writer_write(fr_parquet_writer *w, const fr_batch *b, fr_error *err);
/* The same for rows given as two batches side by side, as many rows each: a's columns are
 * the file's first ones, b's the rest (names, types and nullability as the file's), so that
 * a caller adds columns to rows it holds without copying them. */
int fr_parquet_writer_write2(fr_parquet_writer *w, const fr_batch *a, const fr_batch *b,
                             fr_error *err);
/* Uncompressed bytes written or buffered so far (to roll files at a target size). */
int64_t fr_parquet_writer_bytes(const fr_parquet_writer *w);
/* Writes the last row group and the footer, fsyncs the file, and frees w in every case.
 * On success *info (may be NULL) describes the file; on failure the file is removed. */
int fr_parquet_writer_close(fr_parquet_writer *w, fr_parquet_file_info **info, fr_error *err);
/* Frees w and removes its file. */
void fr_parquet_writer_abort(fr_parquet_writer *w);

typedef struct fr_parquet_reader fr_parquet_reader;

/* Opens a Parquet file and decodes its footer. The schema must be flat with types firth
 * maps (docs/LAKE.md); other files fail with FR_EUNSUPPORTED naming the column.
 * Errors: FR_ENOTFOUND, FR_EIO, FR_ECORRUPT, FR_EUNSUPPORTED. */
int fr_parquet_open(const char *path, fr_parquet_reader **out, fr_error *err);
/* The same over bytes in memory, which the caller keeps alive and unchanged until close. */
int fr_parquet_open_mem(const uint8_t *p, size_t n, fr_parquet_reader **out, fr_error *err);
void fr_parquet_close(fr_parquet_reader *r);

/* The file's schema (lives as long as r); nullability from the repetition of each field. */
const fr_schema *fr_parquet_schema(const fr_parquet_reader *r);
/* The Parquet field_id of column i, or -1 when the file has none. */
int32_t fr_parquet_field_id(const fr_parquet_reader *r, int col);
int64_t fr_parquet_num_rows(const fr_parquet_reader *r);
int fr_parquet_num_row_groups(const fr_parquet_reader *r);
int64_t fr_parquet_row_group_rows(const fr_parquet_reader *r, int rg);
/* Statistics of row group rg, one entry per schema column, in the form filter pruning
 * takes (fr_expr_may_match). Values point into r. Where the file gives no statistics,
 * has_minmax is false and null_count is -1 (unknown). */
int fr_parquet_row_group_stats(const fr_parquet_reader *r, int rg, fr_column_stats *stats,
                               fr_error *err);
/* Reads columns cols[0..ncols) of row group rg as one batch whose schema is the file schema
 * projected on cols. Only the chosen columns' bytes are read. Errors: FR_ECORRUPT (bad
 * pages, CRC of pages when present, counts that disagree), FR_EIO, FR_ELIMIT (a row group
 * of more than FR_BATCH_ROWS_MAX rows). */
int fr_parquet_read_row_group(fr_parquet_reader *r, int rg, const int *cols, int ncols,
                              fr_batch **out, fr_error *err);

/* ---- Iceberg tables -------------------------------------------------------------------- */

/* What a lake table is made of. Everything is copied by fr_iceberg_open. */
typedef struct fr_lake_spec {
    const fr_schema *schema;     /* the lake schema (fr_lake_schema) */
    const int32_t *field_ids;    /* one per schema column */
    const int *partition_cols;   /* identity-partition source columns, indexes into schema;
                                  * PK tables add __bucket last */
    int npartition_cols;
    const int *key_cols;         /* primary-key columns (PK tables; else nkey_cols = 0): the
                                  * identifier fields and the equality-delete fields */
    int nkey_cols;
    const fr_parquet_options *parquet; /* NULL: defaults */
    int64_t target_file_bytes;   /* roll data files at this uncompressed size (0: 512 MiB) */
} fr_lake_spec;

/* The tiered position of one bucket: every record below `offset` is in the lake. */
typedef struct fr_lake_offset {
    int64_t partition_id; /* -1 for unpartitioned tables */
    int32_t bucket;
    int64_t offset;
} fr_lake_offset;

/* One snapshot, as its metadata and summary say. */
typedef struct fr_lake_snapshot {
    int64_t snapshot_id;
    int64_t parent_id;       /* -1 for the first */
    int64_t sequence_number;
    int64_t timestamp_ms;
    char operation[16];      /* "append", "overwrite" */
    int64_t added_data_files, added_delete_files, added_records, added_deletes;
    int64_t total_records, total_data_files;
    fr_lake_offset *offsets; /* tiered offsets of every bucket tiered so far */
    int noffsets;
} fr_lake_snapshot;
void fr_lake_snapshots_free(fr_lake_snapshot *s, int n);

typedef struct fr_iceberg_table fr_iceberg_table;

/* Opens the table in dir (`<warehouse>/<db>/<table>`), reading its newest committed
 * metadata. When dir holds no table and spec is not NULL, creates it (v1.metadata.json with
 * the schema, partition spec, identifier fields, no snapshot). When it exists and spec is
 * given, the schemas must agree (FR_EINVAL otherwise, naming the difference).
 * Errors: FR_ENOTFOUND (no table, spec NULL), FR_ECORRUPT (unreadable metadata, naming the
 * file), FR_EIO. */
int fr_iceberg_open(const char *dir, const fr_lake_spec *spec, fr_iceberg_table **out,
                    fr_error *err);
void fr_iceberg_close(fr_iceberg_table *t);
/* Re-reads the newest committed metadata. */
int fr_iceberg_refresh(fr_iceberg_table *t, fr_error *err);
/* The lake schema (lives as long as t) and its field ids. */
const fr_schema *fr_iceberg_schema(const fr_iceberg_table *t);
/* The current snapshot (*out NULL when the table has none yet), or every snapshot oldest
 * first. The caller frees with fr_lake_snapshots_free. */
int fr_iceberg_current(fr_iceberg_table *t, fr_lake_snapshot **out, fr_error *err);
int fr_iceberg_snapshots(fr_iceberg_table *t, fr_lake_snapshot **out, int *n, fr_error *err);
/* Deletes files under data/ and metadata/ that no published metadata references (left by
 * commits that never published). *removed (may be NULL) counts them. */
int fr_iceberg_remove_orphans(fr_iceberg_table *t, int *removed, fr_error *err);

/* One commit in progress: files are written as rows come; nothing is visible until finish. */
typedef struct fr_iceberg_commit fr_iceberg_commit;
int fr_iceberg_commit_begin(fr_iceberg_table *t, fr_iceberg_commit **out, fr_error *err);
/* Adds rows (schema: the lake schema) as data; rows go to the data file of their partition
 * values. */
int fr_iceberg_commit_add_rows(fr_iceberg_commit *c, const fr_batch *rows, fr_error *err);
/* The same for rows given as two batches side by side (fr_parquet_writer_write2): a holds
 * the first columns of the lake schema, b the rest. Tables without partitions only
 * (FR_EINVAL otherwise). */
int fr_iceberg_commit_add_rows2(fr_iceberg_commit *c, const fr_batch *a, const fr_batch *b,
                                fr_error *err);
/* The schema of equality-delete rows: the key columns, then the partition columns that are
 * not key columns (__bucket for PK tables). Lives as long as t. */
const fr_schema *fr_iceberg_delete_schema(const fr_iceberg_table *t);
/* Adds equality deletes: every older row (lower sequence number) of the same partition whose
 * key equals a row of keys is deleted. keys has fr_iceberg_delete_schema's schema. */
int fr_iceberg_commit_add_deletes(fr_iceberg_commit *c, const fr_batch *keys, fr_error *err);
/* Publishes the commit: manifests, manifest list, a new snapshot whose summary holds the
 * tiered offsets (offsets given here replace those of the same bucket; the others are kept
 * from the parent), then the new metadata. *snapshot_id gets its id. Frees c in every case;
 * on failure nothing is visible and the commit's files are removed. Errors: FR_EIO,
 * FR_ENOSPC, FR_ESTATE (another writer published first). */
int fr_iceberg_commit_finish(fr_iceberg_commit *c, const fr_lake_offset *offsets, int noffsets,
                             int64_t *snapshot_id, fr_error *err);
/* Frees c and removes the files it wrote. */
void fr_iceberg_commit_abort(fr_iceberg_commit *c);

/* A read of one snapshot: data files planned from the manifests, pruned by partition
 * values, file bounds and row-group statistics against filter; equality deletes applied. */
typedef struct fr_iceberg_scan fr_iceberg_scan;
/* snapshot_id -1: the current one (a table without snapshots scans empty). cols (indexes
 * into the lake schema) choose the output columns; filter (may be NULL) is bound to the
 * lake schema and only prunes: rows that fail it may still be returned, the caller filters.
 * filter must outlive the scan. */
int fr_iceberg_scan_open(fr_iceberg_table *t, int64_t snapshot_id, const int *cols, int ncols,
                         const fr_expr *filter, fr_iceberg_scan **out, fr_error *err);
/* The next batch (schema: the lake schema projected on cols), or *out NULL at the end. The
 * caller frees it. */
int fr_iceberg_scan_next(fr_iceberg_scan *s, fr_batch **out, fr_error *err);
/* Files and row groups read and skipped so far (for EXPLAIN and tests). */
void fr_iceberg_scan_counts(const fr_iceberg_scan *s, int64_t *files_read,
                            int64_t *files_skipped, int64_t *row_groups_skipped);
void fr_iceberg_scan_close(fr_iceberg_scan *s);

#endif
