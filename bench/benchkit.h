/* benchkit.h — what the benchmark programs share: the 20-column benchmark table (its schema
 * and random rows), an engine and table set up in a scratch directory, statistics over
 * repetitions, sizes of files on disk, the command line, and the JSON result files.
 *
 * The benchmark table has 5 INT, 5 BIGINT, 5 DOUBLE and 5 STRING columns, in that order
 * (i0..i4, b0..b4, d0..d4, s0..s4); each string holds 180..200 random printable ASCII bytes,
 * so a row carries about 1 KB of values. "Logical bytes" of a row are the bytes of its
 * values: 4 per INT, 8 per BIGINT and DOUBLE, the string's length per STRING (no offsets,
 * no validity). Everything is deterministic for a given seed. */
#ifndef FIRTH_BENCHKIT_H
#define FIRTH_BENCHKIT_H

#include <jansson.h>
#include <sys/types.h>

#include "engine/engine.h"
#include "firth/firth.h"

#define BK_COLUMNS 20
#define BK_STRING_BYTES_MIN 180
#define BK_STRING_BYTES_MAX 200
#define BK_REPS_MAX 64

/* For the network benchmarks and their peers' clients, first thing in main: a client
 * moving hundreds of MB/s does what docs/CLIENT.md ("Threads and memory") advises such a
 * program to do, as the firth command does (its allocator keeps freed memory), and the
 * peers' clients do the same, so that both sides run alike. */
void bk_client_process_init(void);

/* xorshift64*: a small deterministic generator (not for anything but test data). */
typedef struct bk_rng {
    uint64_t state;
} bk_rng;

void bk_rng_seed(bk_rng *r, uint64_t seed);
uint64_t bk_rng_next(bk_rng *r);

/* The benchmark table's schema; the caller frees it with fr_schema_free. */
int bk_schema_new(fr_schema **out, fr_error *err);

/* Builds a batch of `rows` random rows of the benchmark schema with bld (whose schema it
 * must be). *out is the caller's to free. */
int bk_batch_random(fr_builder *bld, int64_t rows, bk_rng *rng, fr_batch **out, fr_error *err);

/* The rows of a loaded table that peers must hold too: a load of N rows appends batch i
 * (0-based) = the first min(batch_rows, rows left) rows of distinct batch i % BK_DISTINCT,
 * and the BK_DISTINCT batches of batch_rows random rows each are built from seed in order.
 * out[] gets them (the caller frees each with fr_batch_free). */
#define BK_DISTINCT 8
int bk_distinct_batches(int64_t seed, int64_t batch_rows, fr_batch **out, fr_error *err);
/* Batch i of a load of `rows` rows (see above): *out is the distinct batch itself or a
 * slice of it; *owned says whether the caller must free *out. *n gets its rows (0 past
 * the end). */
int bk_load_batch(fr_batch *const *distinct, int64_t batch_rows, int64_t rows, int64_t i,
                  fr_batch **out, bool *owned, int64_t *n, fr_error *err);

/* A load of `rows` rows in which every row is distinct (the lake benchmarks: repeated rows
 * would let Parquet's dictionaries flatter writers and readers alike). Batch i holds rows
 * i * batch_rows .. of one stream of random rows drawn from seed in order, so the same seed
 * gives the same rows; batches are built one at a time (one batch in memory, not the load).
 * Open, call next until *out is NULL, close (also after a failure). */
typedef struct bk_random_load {
    fr_schema *schema;
    fr_builder *bld;
    bk_rng rng;
    int64_t rows, batch_rows, done;
} bk_random_load;

int bk_random_load_open(int64_t seed, int64_t rows, int64_t batch_rows, bk_random_load *out,
                        fr_error *err);
/* The next batch (the caller's to free), or *out = NULL past the last row. */
int bk_random_load_next(bk_random_load *l, fr_batch **out, fr_error *err);
void bk_random_load_close(bk_random_load *l);

/* A batch of the first n rows of b: sharing b's buffers when n is all of them (no copy, as
 * a timed call must not pay for the benchmark's own bookkeeping), a copy otherwise. *out is
 * the caller's; b may be freed before it. */
int bk_batch_head(const fr_batch *b, int64_t n, fr_batch **out, fr_error *err);

/* The logical bytes of the chosen columns of b (all columns when cols is NULL). */
int64_t bk_batch_logical_bytes(const fr_batch *b, const int *cols, int ncols);

/* Opens an engine on a new data dir (removed first if it exists) with the flush policy. */
int bk_engine_open(const char *data_dir, fr_flush_mode flush, fr_engine **out,
                   fr_error *err);
/* Creates bench.<name> with one bucket and the given log compression ("ZSTD", "NONE",
 * ...), and returns a handle the caller releases with fr_table_release. */
int bk_table_create(fr_engine *e, const char *name, const fr_schema *schema,
                    const char *compression, fr_table **out, fr_error *err);

/* CPU time used by the whole process (every thread), in nanoseconds. Printed beside wall
 * time because on a busy machine CPU time varies less than wall time does. */
int64_t bk_cpu_ns(void);
/* CPU time used by the calling thread, in nanoseconds. */
int64_t bk_thread_cpu_ns(void);

/* The median of n values (n >= 1); sorts v in place. */
double bk_median(double *v, int n);
/* The q-quantile (0..1) of n values by nearest rank; sorts v in place. */
double bk_quantile(double *v, int n, double q);

/* Bytes allocated on disk by the files under path (st_blocks * 512), or -1 on error. */
int64_t bk_tree_disk_bytes(const char *path);
/* Sum of the sizes (st_size) of the files under path, or -1 on error. */
int64_t bk_tree_file_bytes(const char *path);

/* Joins dir and name into out (of cap bytes); FR_ELIMIT when it does not fit. */
int bk_path(char *out, size_t cap, const char *dir, const char *name, fr_error *err);

/* Command-line values: "--name value" pairs. */
int bk_arg_i64(const char *name, const char *value, int64_t lo, int64_t hi, int64_t *out,
               fr_error *err);

/* A PASS/MISS verdict: a figure against a target (higher is better, unless
 * lower_is_better: a latency). */
typedef struct bk_target {
    const char *name;   /* "append_vs_disk" */
    const char *what;   /* one line: what is compared */
    double figure;      /* the measured ratio (or latency) */
    double target;      /* the ratio to reach (or the latency not to exceed) */
    bool lower_is_better;
} bk_target;

const char *bk_verdict(const bk_target *t);
/* {"name":..., "what":..., "figure":..., "target":..., "better": "higher"|"lower",
 *  "status": "PASS"|"MISS"} */
json_t *bk_target_json(const bk_target *t);
/* Writes the JSON document to path (pretty, with a trailing newline). */
int bk_json_write(json_t *doc, const char *path, fr_error *err);
/* A small description of the machine for the result files: cpus, kernel. */
json_t *bk_host_json(void);
/* Reads a result file written by another program (NULL with err filled when it cannot). */
json_t *bk_json_read(const char *path, fr_error *err);
/* A number of a JSON document by a dotted path ("median.rows_per_s"); 0 when absent. */
double bk_json_number(json_t *doc, const char *path);

/* `dd if=/dev/zero of=DIR/dd.tmp bs=1M count=MIB conv=fdatasync`: the disk's durable
 * sequential write speed in MB/s (10^6 bytes) from the bytes and seconds dd reports, and
 * dd's own rounded rate as text. The file is removed afterwards. */
int bk_run_dd(const char *dir, int64_t mib, double *mb_s, char *rate, size_t rate_cap,
              fr_error *err);

/* GET path from the HTTP server at HOST:PORT (HTTP/1.0, so the server closes when done);
 * *out gets the whole response, NUL-terminated, fr_malloc'd, the caller's. */
int bk_http_get(const char *hostport, const char *path, char **out, fr_error *err);

/* A table's log fsync histogram (firth_log_fsync_duration_seconds) from a server's /metrics
 * text: the cumulative count of each bucket, upper bounds ascending (the last +Inf). */
typedef struct bk_fsync_hist {
    int n;
    double le_ms[FR_LOG_FSYNC_BUCKETS]; /* the +Inf bucket's is INFINITY */
    int64_t cum[FR_LOG_FSYNC_BUCKETS];
} bk_fsync_hist;
/* Reads it for db.table; FR_ENOTFOUND when the text has no such histogram. */
int bk_fsync_hist_parse(const char *metrics, const char *db, const char *table,
                        bk_fsync_hist *out, fr_error *err);
/* after - before: the fsyncs counted between two readings (before may be empty, n 0: the
 * table had no log yet). */
void bk_fsync_hist_since(const bk_fsync_hist *before, const bk_fsync_hist *after,
                         bk_fsync_hist *out);
/* The upper bound (ms) of the bucket holding quantile q of h's fsyncs, INFINITY when past
 * the last bound, 0 when h counts none. */
double bk_fsync_hist_quantile(const bk_fsync_hist *h, double q);

/* Sleeps until the monotonic clock (fr_monotonic_ns) reads ns. */
void bk_sleep_until(int64_t ns);

/* The disk's own latency for durable appends at a rate: `writers` threads, each appending
 * `bytes` bytes to a file of its own in dir and fdatasyncing it, one batch every
 * writers * bytes / rate seconds, for `seconds`. A writer behind schedule writes every batch
 * due and fdatasyncs once (a group commit). A batch's latency runs from when it was due to
 * the end of the fdatasync covering it; *p50 and *p99 in milliseconds. The files are
 * removed. */
#define BK_PACED_WRITERS_MAX 64
#define BK_PACED_CALLS_MAX (1 << 24)
int bk_fsync_paced(const char *dir, size_t bytes, int writers, double rate_mb_s,
                   double seconds, double *p50, double *p99, fr_error *err);
/* Threads that stand for other work on the machine: each is busy (spinning) for busy_us of
 * every period_us and asleep the rest, until stopped; for measuring what such neighbors do
 * to the disk's latency. */
typedef struct bk_neighbors bk_neighbors;
int bk_neighbors_start(int n, int64_t busy_us, int64_t period_us, bk_neighbors **out,
                       fr_error *err);
void bk_neighbors_stop(bk_neighbors *nbs); /* NULL is nothing to do */
/* The context switches of the whole machine so far (/proc/stat), -1 when not known. */
int64_t bk_context_switches(void);

/* ---- over the network: a firth server, and peers ---------------------------------------- */

/* The values of a batch of the benchmark table as text, for peers that take text: numbers
 * in decimal (DOUBLE with 17 significant digits, so that they read back exactly), strings
 * as they are. Each value is NUL-terminated (the terminator is not in its length). */
typedef struct bk_text_rows {
    int64_t n;
    char *text;    /* the values end to end (fr_malloc) */
    size_t *off;   /* per row and column (row * BK_COLUMNS + column): where its text starts */
    size_t *len;
} bk_text_rows;

int bk_text_rows_build(const fr_batch *b, bk_text_rows *out, fr_error *err);
void bk_text_rows_free(bk_text_rows *r);
static inline const char *bk_text(const bk_text_rows *r, int64_t row, int col)
{
    return r->text + r->off[row * BK_COLUMNS + col];
}

/* The name of column i of the benchmark table ("i0" .. "s4"). */
const char *bk_column_name(int i);
/* Runs a DuckDB peer script of the lake benchmarks with node: `NODE SCRIPT --input GLOB
 * --columns NAMES` (the benchmark columns cols[0..ncols), by name) and then `extra` (its own
 * options, already quoted). Fails unless it exits 0. */
int bk_run_duckdb_peer(const char *node, const char *script, const char *input,
                       const int *cols, int ncols, const char *extra, fr_error *err);
/* The k columns spread over the schema (column i * 20 / k for i < k), so that a projection
 * mixes the types: k = 2 is i0, d0. */
void bk_spread_columns(int k, int *cols);
/* "i0, d0": the names of cols, for a scanner's or lookuper's column list. */
void bk_columns_text(const int *cols, int n, char *out, size_t cap);

/* Copies a client error into err, prefixed with what failed; returns the (negative) code. */
int bk_firth_fail(const firth_error *fe, const char *what, fr_error *err);
/* Opens a client of the server at "HOST:PORT". *out is the caller's (firth_close). */
int bk_connect(const char *hostport, firth_client **out, fr_error *err);
/* Creates db.name (dropping it first) as the benchmark table over a client, with the given
 * buckets and log compression and the `nextra` more table options "KEY=VALUE" of extra
 * (may be NULL); with key_col >= 0 that column is NOT NULL and the primary key (a
 * primary-key table), else a log table. */
#define BK_TABLE_OPTIONS_MAX 16
int bk_remote_table_create(firth_client *c, const char *db, const char *name, int key_col,
                           int buckets, const char *compression, const char *const *extra,
                           int nextra, fr_error *err);

/* CPU time (user + system) a process has used so far, in nanoseconds; -1 when it cannot be
 * read (pid <= 0, no /proc). For a server in another process. */
int64_t bk_pid_cpu_ns(pid_t pid);

#endif
