/* bench_lake_read.c — union reads of a tiered table: rows per second of a full scan (all 20
 * columns) and of a 2-of-20-column projection, beside DuckDB reading the same Parquet files.
 *
 * A lake-enabled log table with one bucket is loaded (untimed) with --rows rows of the
 * 20-column benchmark table (about 1 KB a row), every row distinct (bk_random_load), and
 * tiered whole by one round (untimed), so that the union read finds every row in the lake and none in
 * the log after the snapshot. Timed: fr_table_scan_union on this thread, the batches counted
 * and freed, --reps times per shape. The projection reads bk_spread_columns(2) (i0, d0).
 * The peer, bench/peer_duckdb_read.mjs run with node, reads the table's Parquet data files
 * with read_parquet under SET threads=1, the same columns, streaming the result chunk by
 * chunk without converting values to JavaScript (DuckDB decodes every chunk, as firth
 * builds every batch). Targets: firth's median rows/s >= 0.5x DuckDB's for the full scan,
 * >= 1.0x for the projection. */
#include "benchkit.h"

#include <stdio.h>
#include <stdlib.h>

#define LR_TARGET_FULL 0.5
#define LR_TARGET_PROJECTION 1.0

typedef struct lr_config {
    const char *dir;
    const char *out;
    const char *peer_script; /* NULL: no peer */
    const char *node;
    int64_t rows;
    int64_t reps;
    int64_t batch_rows;
    int64_t seed;
} lr_config;

/* Loads and tiers the table (untimed). */
static int lr_load(const lr_config *cfg, fr_engine *e, fr_table **out, fr_error *err)
{
    bk_random_load load = {0};
    fr_table *t = NULL;
    int rc;
    FR_GOTO(bk_random_load_open(cfg->seed, cfg->rows, cfg->batch_rows, &load, err));
    const fr_option options[] = {{"bucket.num", "1"}, {"table.datalake.enabled", "true"}};
    fr_table_spec spec = {.db = "bench", .name = "read", .schema = load.schema, .options = options,
                          .noptions = 2};
    FR_GOTO(fr_engine_create_database(e, "bench", true, err));
    FR_GOTO(fr_engine_create_table(e, &spec, false, err));
    FR_GOTO(fr_engine_get_table(e, "bench", "read", &t, err));
    for (;;) {
        fr_batch *b = NULL;
        FR_GOTO(bk_random_load_next(&load, &b, err));
        if (!b) break;
        rc = fr_table_append(t, b, FR_NO_WRITER, -1, NULL, err);
        fr_batch_free(b);
        if (rc < 0) goto fail;
    }
    int64_t id = -1;
    FR_GOTO(fr_table_tier(t, &id, err));
    fr_lake_status st;
    FR_GOTO(fr_table_lake_status(t, &st, err));
    if (st.lag_records != 0 || id < 0) {
        rc = fr_fail(err, FR_ESTATE, "the round left %lld records untiered (snapshot %lld)",
                     (long long)st.lag_records, (long long)id);
        goto fail;
    }
    *out = t;
    t = NULL;
fail:
    if (t) fr_table_release(t);
    bk_random_load_close(&load);
    return rc;
}

typedef struct lr_count {
    int64_t rows;
    int64_t logical_bytes;
    const int *cols;
    int ncols;
} lr_count;

static int lr_on_batch(void *ctx, fr_batch *batch, fr_error *err)
{
    (void)err;
    lr_count *c = ctx;
    c->rows += fr_batch_num_rows(batch);
    fr_batch_free(batch);
    return 0;
}

typedef struct lr_run {
    double seconds, cpu_seconds, rows_per_s;
} lr_run;

static int lr_read_once(fr_table *t, const int *cols, int ncols, int64_t want, lr_run *run,
                        fr_error *err)
{
    lr_count c = {0};
    fr_union_spec spec = {.columns = cols, .ncolumns = ncols};
    int64_t t0 = fr_monotonic_ns(), c0 = bk_cpu_ns();
    FR_TRY(fr_table_scan_union(t, &spec, lr_on_batch, &c, err));
    run->seconds = (double)(fr_monotonic_ns() - t0) / 1e9;
    run->cpu_seconds = (double)(bk_cpu_ns() - c0) / 1e9;
    FR_CHECK(c.rows == want, FR_ESTATE, err, "the union read returned %lld rows, not %lld",
             (long long)c.rows, (long long)want);
    run->rows_per_s = (double)c.rows / run->seconds;
    return 0;
}

/* Runs the peer script for one shape; its JSON lands in path. */
static int lr_run_peer(const lr_config *cfg, const char *data_dir, const int *cols, int ncols,
                       const char *path, fr_error *err)
{
    char input[4200], extra[4300];
    snprintf(input, sizeof input, "%s/lake/bench/read/data/**/*.parquet", data_dir);
    snprintf(extra, sizeof extra, "--reps %lld --out '%s'", (long long)cfg->reps, path);
    return bk_run_duckdb_peer(cfg->node, cfg->peer_script, input, cols, ncols, extra, err);
}

typedef struct lr_shape {
    const char *name;   /* "full", "projection" */
    const char *target; /* lake_read_full_vs_duckdb */
    const char *what;
    double goal;
    int cols[BK_COLUMNS];
    int ncols;
} lr_shape;

static int lr_shape_run(const lr_config *cfg, fr_table *t, const char *data_dir,
                        const lr_shape *s, json_t *jruns, json_t *targets, fr_error *err)
{
    lr_run runs[BK_REPS_MAX];
    double rates[BK_REPS_MAX];
    json_t *jr = json_array();
    for (int r = 0; r < cfg->reps; r++) {
        int rc = lr_read_once(t, s->cols, s->ncols, cfg->rows, &runs[r], err);
        if (rc < 0) {
            json_decref(jr);
            return rc;
        }
        rates[r] = runs[r].rows_per_s;
        json_array_append_new(jr, json_pack("{s:f, s:f, s:f}", "seconds", runs[r].seconds,
                                            "cpu_seconds", runs[r].cpu_seconds, "rows_per_s",
                                            runs[r].rows_per_s));
    }
    double med = bk_median(rates, (int)cfg->reps);
    char names[512];
    bk_columns_text(s->cols, s->ncols, names, sizeof names);
    json_t *run = json_pack("{s:s, s:s, s:o, s:{s:f}}", "shape", s->name, "columns", names,
                            "firth", jr, "median", "rows_per_s", med);
    json_array_append_new(jruns, run);
    printf("  %s (%d columns): firth union read median %.0f rows/s\n", s->name, s->ncols, med);
    if (!cfg->peer_script) return 0;
    char path[4096], file[64];
    snprintf(file, sizeof file, "duckdb_read_%s.json", s->name);
    FR_TRY(bk_path(path, sizeof path, cfg->dir, file, err));
    FR_TRY(lr_run_peer(cfg, data_dir, s->cols, s->ncols, path, err));
    json_t *peer = bk_json_read(path, err);
    if (!peer) return err->code < 0 ? err->code : FR_EIO;
    double peer_rate = bk_json_number(peer, "median.rows_per_s");
    json_object_set_new(run, "peer", peer);
    bk_target tg = {.name = s->target, .what = s->what,
                    .figure = peer_rate > 0 ? med / peer_rate : 0, .target = s->goal};
    json_array_append_new(targets, bk_target_json(&tg));
    printf("  %s: DuckDB median %.0f rows/s; firth / DuckDB = %.2f (target >= %.1f): %s\n",
           s->name, peer_rate, tg.figure, tg.target, bk_verdict(&tg));
    return 0;
}

static int lr_bench(const lr_config *cfg, json_t *doc, json_t *targets, fr_error *err)
{
    char data_dir[4096];
    fr_engine *e = NULL;
    fr_table *t = NULL;
    int rc;
    FR_GOTO(bk_path(data_dir, sizeof data_dir, cfg->dir, "read", err));
    FR_GOTO(fr_remove_tree(data_dir, err));
    FR_GOTO(fr_mkdirs(data_dir, err));
    fr_engine_options o;
    fr_engine_options_default(&o);
    o.data_dir = data_dir;
    o.flush = FR_FLUSH_NONE; /* loading is not what is measured */
    o.lake_tiering_threads = 0;
    FR_GOTO(fr_engine_open(&o, &e, err));
    FR_GOTO(lr_load(cfg, e, &t, err));
    char lake[4096];
    FR_GOTO(bk_path(lake, sizeof lake, data_dir, "lake/bench/read/data", err));
    json_object_set_new(doc, "lake_bytes", json_integer(bk_tree_file_bytes(lake)));
    printf("  %lld rows tiered: %.1f MB of Parquet\n", (long long)cfg->rows,
           (double)bk_tree_file_bytes(lake) / 1e6);
    lr_shape shapes[2] = {
        {.name = "full", .target = "lake_read_full_vs_duckdb",
         .what = "rows/s of a union read of all 20 columns of a tiered table, 1 thread / "
                 "DuckDB read_parquet of the same files, threads=1",
         .goal = LR_TARGET_FULL, .ncols = BK_COLUMNS},
        {.name = "projection", .target = "lake_read_projection_vs_duckdb",
         .what = "rows/s of a union read of 2 of 20 columns (i0, d0) of a tiered table, "
                 "1 thread / DuckDB read_parquet of the same columns, threads=1",
         .goal = LR_TARGET_PROJECTION, .ncols = 2},
    };
    for (int i = 0; i < BK_COLUMNS; i++) shapes[0].cols[i] = i;
    bk_spread_columns(2, shapes[1].cols);
    json_t *jruns = json_array();
    json_object_set_new(doc, "runs", jruns);
    for (int i = 0; i < 2; i++) FR_GOTO(lr_shape_run(cfg, t, data_dir, &shapes[i], jruns, targets, err));
    rc = 0;
fail:
    if (t) fr_table_release(t);
    if (e) fr_engine_close(e);
    fr_error scratch;
    fr_remove_tree(data_dir, &scratch);
    return rc;
}

/* ---- main ------------------------------------------------------------------------------ */

static void lr_usage(void)
{
    fprintf(stderr,
            "usage: bench_lake_read --dir SCRATCH_DIR [--out FILE.json] [--rows N] [--reps N]\n"
            "                       [--batch-rows N] [--seed N] [--peer-script FILE.mjs]\n"
            "                       [--node PATH]\n"
            "  Times union reads (all 20 columns, and 2 of them) of N tiered rows beside DuckDB\n"
            "  reading the same Parquet files (with --peer-script).\n");
}

static int lr_parse_args(int argc, char **argv, lr_config *cfg, fr_error *err)
{
    *cfg = (lr_config){.rows = 200000, .reps = 3, .batch_rows = 512, .seed = 42,
                       .node = "node"};
    for (int i = 1; i < argc; i += 2) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        FR_CHECK(v, FR_EINVAL, err, "%s needs a value", a);
        if (!strcmp(a, "--dir")) cfg->dir = v;
        else if (!strcmp(a, "--out")) cfg->out = v;
        else if (!strcmp(a, "--peer-script")) cfg->peer_script = v;
        else if (!strcmp(a, "--node")) cfg->node = v;
        else if (!strcmp(a, "--rows")) FR_TRY(bk_arg_i64(a, v, 1, 1LL << 32, &cfg->rows, err));
        else if (!strcmp(a, "--reps")) FR_TRY(bk_arg_i64(a, v, 1, BK_REPS_MAX, &cfg->reps, err));
        else if (!strcmp(a, "--batch-rows"))
            FR_TRY(bk_arg_i64(a, v, 1, FR_BATCH_ROWS_MAX, &cfg->batch_rows, err));
        else if (!strcmp(a, "--seed")) FR_TRY(bk_arg_i64(a, v, 0, INT64_MAX, &cfg->seed, err));
        else
            return fr_fail(err, FR_EINVAL, "unknown option %s", a);
    }
    FR_CHECK(cfg->dir, FR_EINVAL, err, "--dir is required");
    return 0;
}

int main(int argc, char **argv)
{
    lr_config cfg;
    fr_error err = {0};
    if (lr_parse_args(argc, argv, &cfg, &err) < 0) {
        fprintf(stderr, "bench_lake_read: %s\n", err.msg);
        lr_usage();
        return 2;
    }
    fr_log_set_default_level(FR_LOG_WARN);
    json_t *targets = json_array();
    json_t *doc = json_pack("{s:s, s:o, s:{s:I, s:I, s:I, s:I}}", "benchmark", "lake_read",
                            "host", bk_host_json(), "config", "rows", (json_int_t)cfg.rows,
                            "reps", (json_int_t)cfg.reps, "batch_rows",
                            (json_int_t)cfg.batch_rows, "seed", (json_int_t)cfg.seed);
    printf("lake_read: %lld rows of %d columns (about 1 KB each), 1 bucket, tiered whole; "
           "union reads on one thread, %lld repetitions:\n", (long long)cfg.rows, BK_COLUMNS,
           (long long)cfg.reps);
    int rc = fr_mkdirs(cfg.dir, &err);
    if (rc == 0) rc = lr_bench(&cfg, doc, targets, &err);
    json_object_set_new(doc, "targets", targets);
    if (rc == 0 && cfg.out) rc = bk_json_write(doc, cfg.out, &err);
    json_decref(doc);
    if (rc < 0) {
        fprintf(stderr, "bench_lake_read: %s\n", err.msg);
        return 1;
    }
    return 0;
}
