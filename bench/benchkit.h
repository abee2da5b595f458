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

#include "engine/engine.h"

#define BK_COLUMNS 20
#define BK_STRING_BYTES_MIN 180
#define BK_STRING_BYTES_MAX 200
#define BK_REPS_MAX 64

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

/* A PASS/MISS verdict: a figure against a target (higher is better). */
typedef struct bk_target {
    const char *name;   /* "append_vs_disk" */
    const char *what;   /* one line: what is compared */
    double figure;      /* the measured ratio */
    double target;      /* the ratio to reach */
} bk_target;

const char *bk_verdict(const bk_target *t);
/* {"name":..., "what":..., "figure":..., "target":..., "status": "PASS"|"MISS"} */
json_t *bk_target_json(const bk_target *t);
/* Writes the JSON document to path (pretty, with a trailing newline). */
int bk_json_write(json_t *doc, const char *path, fr_error *err);
/* A small description of the machine for the result files: cpus, kernel. */
json_t *bk_host_json(void);

#endif
