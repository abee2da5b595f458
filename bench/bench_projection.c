/* bench_projection.c — how read speed follows the number of columns read: rows/s of a full
 * scan of one bucket that returns 2, 4, 10 or 20 of the 20 columns, from the page cache.
 *
 * A dedicated table is loaded (flush policy FR_FLUSH_NONE: loading is not what is measured),
 * scanned once in full to bring its files into the page cache, then scanned with each
 * projection in turn, repetition after repetition, with fr_table_scan (or, with --api log,
 * fr_log_read_batches on the bucket's log directly). The columns of a k-column projection
 * are spread evenly over the schema (column i * 20 / k), so they mix the types; since the
 * STRING columns carry 95% of a row's bytes, each projection's share of the row's bytes is
 * reported beside it, and one more projection reads the two widest columns (s0, s1). The
 * verdict compares rows/s with 2 spread columns against rows/s with all 20; the target is
 * 8x. Every scan checks that it returned every row with exactly the columns asked for. */
#include "benchkit.h"

#include <stdio.h>
#include <stdlib.h>

#define PJ_CODECS_MAX 3
#define PJ_SETS 5
#define PJ_TARGET_SPEEDUP 8.0
#define PJ_DISTINCT_BATCHES 8
#define PJ_SAMPLE_NS 100000000 /* aim for samples of at least 100 ms */

typedef struct pj_config {
    const char *dir;
    const char *out;
    int64_t rows;
    int64_t reps;
    int64_t batch_rows;
    int64_t seed;
    bool log_api; /* fr_log_read_batches instead of fr_table_scan */
    const char *codecs[PJ_CODECS_MAX];
    int ncodecs;
} pj_config;

/* One projection: its columns and its label. */
typedef struct pj_set {
    const char *label;
    int cols[BK_COLUMNS];
    int ncols;
} pj_set;

/* What a scan's callback checks and counts. */
typedef struct pj_count {
    int64_t rows;
    int want_cols;
    bool bad_shape;
} pj_count;

static int pj_count_batch(pj_count *c, fr_batch *batch)
{
    c->rows += fr_batch_num_rows(batch);
    if (fr_batch_num_columns(batch) != c->want_cols) c->bad_shape = true;
    fr_batch_free(batch);
    return 0;
}

static int pj_scan_fn(void *ctx, int bucket, fr_batch *batch, const int64_t *offsets,
                      const uint8_t *change_types, int64_t commit_ts, fr_error *err)
{
    return pj_count_batch(ctx, batch);
}

static int pj_log_fn(void *ctx, fr_batch *batch, const int64_t *offsets,
                     const uint8_t *change_types, int64_t commit_ts, fr_error *err)
{
    return pj_count_batch(ctx, batch);
}

/* Reads the whole bucket once with projection set, checking what comes back. */
static int pj_scan(const pj_config *cfg, fr_table *t, const pj_set *set, fr_error *err)
{
    pj_count count = {.want_cols = set->ncols};
    if (cfg->log_api) {
        fr_log_read r = {.from_offset = 0, .schema = fr_table_schema(t), .columns = set->cols,
                         .ncolumns = set->ncols, .max_bytes = INT64_MAX, .max_records = -1};
        int64_t next = 0;
        FR_TRY(fr_log_read_batches(fr_table_log(t, 0), &r, pj_log_fn, &count, &next, err));
    } else {
        fr_scan_spec spec = {.start = FR_START_EARLIEST, .columns = set->cols,
                             .ncolumns = set->ncols, .max_records = -1, .bucket = -1};
        FR_TRY(fr_table_scan(t, &spec, pj_scan_fn, &count, err));
    }
    FR_CHECK(count.rows == cfg->rows && !count.bad_shape, FR_ESTATE, err,
             "a scan of %s returned %lld rows (expected %lld)%s", set->label,
             (long long)count.rows, (long long)cfg->rows,
             count.bad_shape ? " and batches of the wrong number of columns" : "");
    return 0;
}

/* One sample: `inner` scans back to back; *wall and *cpu are seconds per scan. Repeating a
 * short scan within a sample keeps each sample near PJ_SAMPLE_NS, long enough that timer
 * resolution and a brief preemption do not decide the figure. */
static int pj_sample(const pj_config *cfg, fr_table *t, const pj_set *set, int inner,
                     double *wall, double *cpu, fr_error *err)
{
    int64_t w0 = fr_monotonic_ns(), c0 = bk_cpu_ns();
    for (int i = 0; i < inner; i++) FR_TRY(pj_scan(cfg, t, set, err));
    *wall = (double)(fr_monotonic_ns() - w0) / 1e9 / inner;
    *cpu = (double)(bk_cpu_ns() - c0) / 1e9 / inner;
    return 0;
}

/* Loads cfg->rows random rows, cycling through a few distinct prebuilt batches. */
static int pj_load(const pj_config *cfg, fr_table *t, int64_t *col_bytes, fr_error *err)
{
    fr_builder *bld = NULL;
    fr_batch *batches[PJ_DISTINCT_BATCHES] = {0};
    bk_rng rng;
    bk_rng_seed(&rng, (uint64_t)cfg->seed);
    int rc;
    FR_GOTO(fr_builder_new(fr_table_schema(t), &bld, err));
    for (int64_t done = 0, i = 0; done < cfg->rows; i++) {
        int k = (int)(i % PJ_DISTINCT_BATCHES);
        int64_t n = cfg->rows - done < cfg->batch_rows ? cfg->rows - done : cfg->batch_rows;
        if (!batches[k] || n != fr_batch_num_rows(batches[k])) {
            if (batches[k]) fr_batch_free(batches[k]);
            batches[k] = NULL;
            FR_GOTO(bk_batch_random(bld, n, &rng, &batches[k], err));
        }
        int64_t appended = 0;
        FR_GOTO(fr_table_append(t, batches[k], FR_NO_WRITER, -1, &appended, err));
        for (int c = 0; c < BK_COLUMNS; c++)
            col_bytes[c] += bk_batch_logical_bytes(batches[k], &c, 1);
        done += n;
    }
fail:
    for (int k = 0; k < PJ_DISTINCT_BATCHES; k++)
        if (batches[k]) fr_batch_free(batches[k]);
    if (bld) fr_builder_free(bld);
    return rc;
}

static void pj_sets_init(pj_set *sets)
{
    static const int ks[4] = {2, 4, 10, 20};
    static const char *labels[4] = {"2 of 20", "4 of 20", "10 of 20", "20 of 20"};
    for (int s = 0; s < 4; s++) {
        sets[s].label = labels[s];
        sets[s].ncols = ks[s];
        for (int i = 0; i < ks[s]; i++) sets[s].cols[i] = i * BK_COLUMNS / ks[s];
    }
    sets[4] = (pj_set){.label = "2 widest (s0, s1)", .cols = {15, 16}, .ncols = 2};
}

/* Everything measured for one codec. */
typedef struct pj_times {
    double wall[PJ_SETS][BK_REPS_MAX]; /* seconds per scan, per repetition */
    double cpu[PJ_SETS][BK_REPS_MAX];
    int inner[PJ_SETS];                /* scans per sample */
    double load_seconds;
    int64_t col_bytes[BK_COLUMNS];     /* logical bytes of each column, all rows */
    int64_t log_bytes;
} pj_times;

/* Warms the cache with a full scan, then sizes each projection's samples from one scan. */
static int pj_calibrate(const pj_config *cfg, fr_table *t, const pj_set *sets, pj_times *tm,
                        fr_error *err)
{
    FR_TRY(pj_scan(cfg, t, &sets[3], err));
    for (int s = 0; s < PJ_SETS; s++) {
        double wall, cpu;
        FR_TRY(pj_sample(cfg, t, &sets[s], 1, &wall, &cpu, err));
        double n = (double)PJ_SAMPLE_NS / 1e9 / (wall > 1e-6 ? wall : 1e-6);
        tm->inner[s] = n < 1 ? 1 : n > 1000 ? 1000 : (int)n;
    }
    return 0;
}

/* Loads a fresh table with codec, warms the cache, and times every projection reps times
 * (interleaved, so that drift affects them alike). */
static int pj_run_codec(const pj_config *cfg, const char *codec, const pj_set *sets,
                        pj_times *tm, fr_error *err)
{
    char data_dir[4096], name[64];
    snprintf(name, sizeof name, "projection-%s", codec);
    FR_TRY(bk_path(data_dir, sizeof data_dir, cfg->dir, name, err));
    fr_schema *schema = NULL;
    fr_engine *e = NULL;
    fr_table *t = NULL;
    int rc;
    FR_GOTO(bk_schema_new(&schema, err));
    FR_GOTO(bk_engine_open(data_dir, FR_FLUSH_NONE, &e, err));
    FR_GOTO(bk_table_create(e, "projection", schema, codec, &t, err));
    int64_t t0 = fr_monotonic_ns();
    FR_GOTO(pj_load(cfg, t, tm->col_bytes, err));
    tm->load_seconds = (double)(fr_monotonic_ns() - t0) / 1e9;
    tm->log_bytes = fr_log_size_bytes(fr_table_log(t, 0));
    FR_GOTO(pj_calibrate(cfg, t, sets, tm, err));
    for (int rep = 0; rep < cfg->reps; rep++)
        for (int s = 0; s < PJ_SETS; s++)
            FR_GOTO(pj_sample(cfg, t, &sets[s], tm->inner[s], &tm->wall[s][rep],
                              &tm->cpu[s][rep], err));
    rc = 0;
fail:
    if (t) fr_table_release(t);
    if (e) fr_engine_close(e);
    if (schema) fr_schema_free(schema);
    fr_error scratch;
    fr_remove_tree(data_dir, &scratch);
    return rc;
}

/* One projection's figures, printed and as JSON. */
static json_t *pj_set_json(const pj_config *cfg, const pj_set *set, const pj_times *tm, int s,
                           double rows_s, double cpu_rows_s, double all_rows_s,
                           double all_cpu_rows_s, int64_t row_bytes)
{
    int64_t bytes = 0;
    json_t *cols = json_array(), *walls = json_array(), *cpus = json_array();
    for (int i = 0; i < set->ncols; i++) {
        bytes += tm->col_bytes[set->cols[i]];
        json_array_append_new(cols, json_integer(set->cols[i]));
    }
    for (int r = 0; r < cfg->reps; r++) {
        json_array_append_new(walls, json_real(tm->wall[s][r]));
        json_array_append_new(cpus, json_real(tm->cpu[s][r]));
    }
    double share = (double)bytes / (double)row_bytes;
    double mb_s = rows_s * (double)bytes / (double)cfg->rows / 1e6;
    printf("    %-18s %5.1f%%  %12.0f %7.2fx  %12.0f %7.2fx  %8.1f\n", set->label, 100 * share,
           rows_s, rows_s / all_rows_s, cpu_rows_s, cpu_rows_s / all_cpu_rows_s, mb_s);
    return json_pack("{s:s, s:o, s:f, s:i, s:o, s:o, s:f, s:f, s:f, s:f, s:f}", "label",
                     set->label, "columns", cols, "share_of_row_bytes", share,
                     "scans_per_sample", tm->inner[s], "seconds_per_scan", walls,
                     "cpu_seconds_per_scan", cpus, "rows_per_s", rows_s, "rows_per_cpu_s",
                     cpu_rows_s, "column_mb_per_s", mb_s, "speedup_vs_all",
                     rows_s / all_rows_s, "cpu_speedup_vs_all", cpu_rows_s / all_cpu_rows_s);
}

/* One codec's figures as JSON (and printed); *speedup is rows/s of set 0 over set 3. */
static json_t *pj_codec_json(const pj_config *cfg, const char *codec, const pj_set *sets,
                             pj_times *tm, double *speedup)
{
    int64_t row_bytes = 0;
    for (int c = 0; c < BK_COLUMNS; c++) row_bytes += tm->col_bytes[c];
    double rows_s[PJ_SETS], cpu_rows_s[PJ_SETS];
    for (int s = 0; s < PJ_SETS; s++) {
        rows_s[s] = (double)cfg->rows / bk_median(tm->wall[s], (int)cfg->reps);
        cpu_rows_s[s] = (double)cfg->rows / bk_median(tm->cpu[s], (int)cfg->reps);
    }
    *speedup = rows_s[0] / rows_s[3];
    printf("  %s: %.1f MB in the log (%.2f of logical), loaded in %.2f s\n", codec,
           (double)tm->log_bytes / 1e6, (double)tm->log_bytes / (double)row_bytes,
           tm->load_seconds);
    printf("    %-18s %6s  %12s %8s  %12s %8s  %8s\n", "columns", "bytes", "rows/s", "vs 20",
           "rows/cpu-s", "vs 20", "col MB/s");
    json_t *list = json_array();
    for (int s = 0; s < PJ_SETS; s++)
        json_array_append_new(list, pj_set_json(cfg, &sets[s], tm, s, rows_s[s], cpu_rows_s[s],
                                                rows_s[3], cpu_rows_s[3], row_bytes));
    return json_pack("{s:s, s:I, s:I, s:f, s:o}", "compression", codec, "log_bytes",
                     (json_int_t)tm->log_bytes, "logical_bytes", (json_int_t)row_bytes,
                     "load_seconds", tm->load_seconds, "projections", list);
}

static void pj_usage(void)
{
    fprintf(stderr,
            "usage: bench_projection --dir SCRATCH_DIR [--out FILE.json] [--rows N] [--reps N]\n"
            "                        [--batch-rows N] [--seed N] [--codec NAME]...\n"
            "                        [--api table|log]\n"
            "  Loads N rows of the 20-column table, then times scans of 2, 4, 10 and 20 columns\n"
            "  from the page cache. --codec may be repeated (default: ZSTD and NONE).\n");
}

static int pj_parse_args(int argc, char **argv, pj_config *cfg, fr_error *err)
{
    *cfg = (pj_config){.rows = 131072, .reps = 5, .batch_rows = 512, .seed = 7};
    for (int i = 1; i < argc; i += 2) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        FR_CHECK(v, FR_EINVAL, err, "%s needs a value", a);
        if (!strcmp(a, "--dir")) cfg->dir = v;
        else if (!strcmp(a, "--out")) cfg->out = v;
        else if (!strcmp(a, "--rows")) FR_TRY(bk_arg_i64(a, v, 1, INT32_MAX, &cfg->rows, err));
        else if (!strcmp(a, "--reps")) FR_TRY(bk_arg_i64(a, v, 1, BK_REPS_MAX, &cfg->reps, err));
        else if (!strcmp(a, "--batch-rows"))
            FR_TRY(bk_arg_i64(a, v, 1, FR_BATCH_ROWS_MAX, &cfg->batch_rows, err));
        else if (!strcmp(a, "--seed")) FR_TRY(bk_arg_i64(a, v, 0, INT64_MAX, &cfg->seed, err));
        else if (!strcmp(a, "--api")) {
            FR_CHECK(!strcmp(v, "table") || !strcmp(v, "log"), FR_EINVAL, err,
                     "--api is table or log, not %s", v);
            cfg->log_api = !strcmp(v, "log");
        } else if (!strcmp(a, "--codec")) {
            FR_CHECK(cfg->ncodecs < PJ_CODECS_MAX, FR_ELIMIT, err, "at most %d codecs",
                     PJ_CODECS_MAX);
            cfg->codecs[cfg->ncodecs++] = v;
        } else
            return fr_fail(err, FR_EINVAL, "unknown option %s", a);
    }
    FR_CHECK(cfg->dir, FR_EINVAL, err, "--dir is required");
    if (cfg->ncodecs == 0) {
        cfg->codecs[cfg->ncodecs++] = "ZSTD";
        cfg->codecs[cfg->ncodecs++] = "NONE";
    }
    return 0;
}

static int pj_run_all(const pj_config *cfg, fr_error *err)
{
    pj_set sets[PJ_SETS];
    pj_sets_init(sets);
    static pj_times tm;
    json_t *runs = json_array(), *targets = json_array();
    int rc = 0;
    printf("projection: %lld rows of %d columns, %lld-row batches, 1 bucket, %s, from the page "
           "cache; medians of %lld samples of >= 0.1 s (MB = 10^6 bytes):\n", (long long)cfg->rows,
           BK_COLUMNS, (long long)cfg->batch_rows,
           cfg->log_api ? "fr_log_read_batches" : "fr_table_scan", (long long)cfg->reps);
    for (int c = 0; c < cfg->ncodecs && rc == 0; c++) {
        double speedup = 0;
        memset(&tm, 0, sizeof tm);
        rc = pj_run_codec(cfg, cfg->codecs[c], sets, &tm, err);
        if (rc < 0) break;
        json_array_append_new(runs, pj_codec_json(cfg, cfg->codecs[c], sets, &tm, &speedup));
        char name[64], what[160];
        snprintf(name, sizeof name, "projection_%s_2_vs_20", cfg->codecs[c]);
        snprintf(what, sizeof what, "rows/s reading 2 of 20 columns / rows/s reading all 20 "
                 "(%s, page cache)", cfg->codecs[c]);
        bk_target t = {.name = name, .what = what, .figure = speedup, .target = PJ_TARGET_SPEEDUP};
        json_array_append_new(targets, bk_target_json(&t));
    }
    json_t *doc = json_pack("{s:s, s:o, s:{s:I, s:I, s:I, s:s, s:I}, s:o, s:o}", "benchmark",
        "projection", "host", bk_host_json(), "config", "rows", (json_int_t)cfg->rows, "reps",
        (json_int_t)cfg->reps, "batch_rows", (json_int_t)cfg->batch_rows, "api",
        cfg->log_api ? "fr_log_read_batches" : "fr_table_scan", "seed", (json_int_t)cfg->seed,
        "runs", runs, "targets", targets);
    if (rc == 0 && cfg->out) rc = bk_json_write(doc, cfg->out, err);
    json_decref(doc);
    return rc;
}

int main(int argc, char **argv)
{
    pj_config cfg;
    fr_error err = {0};
    if (pj_parse_args(argc, argv, &cfg, &err) < 0) {
        fprintf(stderr, "bench_projection: %s\n", err.msg);
        pj_usage();
        return 2;
    }
    int rc = fr_mkdirs(cfg.dir, &err);
    if (rc == 0) rc = pj_run_all(&cfg, &err);
    if (rc < 0) fprintf(stderr, "bench_projection: %s (%s)\n", err.msg, fr_strcode(rc));
    return rc < 0 ? 1 : 0;
}
