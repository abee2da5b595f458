/* bench_lake_tier.c — tiering into the lake: rows per second of one tiering round, beside
 * DuckDB writing the same rows to Parquet; and freshness, the time from a write's
 * acknowledgement to its visibility in the lake.
 *
 * Throughput: a lake-enabled log table with one bucket is loaded (untimed) with --rows rows
 * of the 20-column benchmark table (about 1 KB a row), every row distinct
 * (bk_random_load: the same rows each round for a given --seed); then
 * one round of fr_table_tier on this thread reads the log (ZSTD record batches), converts
 * the rows, writes them as Parquet with ZSTD and commits the Iceberg snapshot: the timed
 * span. The background tiering threads are off (lake.tiering.threads = 0), so the round is
 * single-threaded. After each round the peer, bench/peer_duckdb_write.mjs run with node,
 * loads the round's Parquet files into an in-memory DuckDB table (untimed) and times
 * COPY t TO 'f.parquet' (FORMAT parquet, COMPRESSION zstd) under SET threads=1, so that both
 * see the same load of the machine. Target: firth's median rows/s >= 1.0x DuckDB's. Each
 * round also reports its CPU time and the time its thread waited for a core (other work on
 * the machine), which with the wall time tells what the round waited on the disk.
 *
 * Freshness: a table with 'table.datalake.freshness' = --freshness (10s) and one tiering
 * thread; a writer appends --fresh-rows rows every 100 ms for --fresh-seconds seconds and
 * notes when each append was acknowledged; a reader with its own handle on the lake table
 * looks at the newest snapshot every 50 ms and notes when each batch's offsets are below
 * the tiered offset. Target: p99 of (visible - acknowledged) <= 12 s. */
#include "benchkit.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define LT_TARGET_RATIO 1.0
#define LT_TARGET_FRESH_P99_S 12.0
#define LT_POLL_MS 50
#define LT_WRITE_EVERY_MS 100

typedef struct lt_config {
    const char *dir;
    const char *out;
    const char *peer_script; /* NULL: no peer */
    const char *node;
    int64_t rows;
    int64_t reps;
    int64_t batch_rows;
    int64_t seed;
    const char *freshness;
    int64_t fresh_seconds; /* 0: no freshness run */
    int64_t fresh_rows;
} lt_config;

/* ---- throughput -------------------------------------------------------------------------- */

static int lt_table(fr_engine *e, const fr_schema *schema, const char *freshness, fr_table **out,
                    fr_error *err)
{
    const fr_option options[] = {
        {"bucket.num", "1"},
        {"table.datalake.enabled", "true"},
        {"table.datalake.freshness", freshness},
    };
    fr_table_spec spec = {.db = "bench", .name = "tier", .schema = schema, .options = options,
                          .noptions = 3};
    FR_TRY(fr_engine_create_database(e, "bench", true, err));
    FR_TRY(fr_engine_create_table(e, &spec, false, err));
    return fr_engine_get_table(e, "bench", "tier", out, err);
}

static int lt_open(const char *data_dir, int threads, fr_engine **out, fr_error *err)
{
    FR_TRY(fr_remove_tree(data_dir, err));
    FR_TRY(fr_mkdirs(data_dir, err));
    fr_engine_options o;
    fr_engine_options_default(&o);
    o.data_dir = data_dir;
    o.flush = FR_FLUSH_NONE; /* loading is not what is measured */
    o.lake_tiering_threads = threads;
    return fr_engine_open(&o, out, err);
}

typedef struct lt_run {
    double seconds, cpu_seconds, rows_per_s, rows_per_cpu_s;
    double wait_core_seconds; /* the round's thread runnable but not running (-1: unknown) */
    int64_t lake_bytes;
} lt_run;

/* Nanoseconds this thread has spent runnable but waiting for a core (the second field of
 * /proc/thread-self/schedstat), or -1 when the kernel does not say. On a machine shared with
 * other work it tells how much of a round's wall time went to the others rather than to the
 * round's own CPU or its waits for the disk. */
static int64_t lt_wait_core_ns(void)
{
    char line[256];
    FILE *f = fopen("/proc/thread-self/schedstat", "r");
    if (!f) return -1;
    bool ok = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    if (!ok) return -1;
    char *end = NULL;
    (void)strtoull(line, &end, 10);
    if (end == line || *end != ' ') return -1;
    char *p = end;
    unsigned long long v = strtoull(p, &end, 10);
    return end == p ? -1 : (int64_t)v;
}

/* One load and one timed round into data_dir (kept: the peer reads the last one's files). */
static int lt_tier_once(const lt_config *cfg, const char *data_dir, lt_run *run, fr_error *err)
{
    fr_engine *e = NULL;
    fr_table *t = NULL;
    bk_random_load load = {0};
    int rc;
    FR_GOTO(bk_random_load_open(cfg->seed, cfg->rows, cfg->batch_rows, &load, err));
    FR_GOTO(lt_open(data_dir, 0, &e, err));
    FR_GOTO(lt_table(e, load.schema, "3min", &t, err));
    for (;;) {
        fr_batch *b = NULL;
        FR_GOTO(bk_random_load_next(&load, &b, err));
        if (!b) break;
        rc = fr_table_append(t, b, FR_NO_WRITER, -1, NULL, err);
        fr_batch_free(b);
        if (rc < 0) goto fail;
    }
    /* The load left the log's bytes to the operating system (FR_FLUSH_NONE): written out
     * now, so that the round's fsyncs do not pay for them. */
    sync();
    int64_t id = -1, w0 = lt_wait_core_ns(), t0 = fr_monotonic_ns(), c0 = bk_cpu_ns();
    FR_GOTO(fr_table_tier(t, &id, err));
    run->seconds = (double)(fr_monotonic_ns() - t0) / 1e9;
    run->cpu_seconds = (double)(bk_cpu_ns() - c0) / 1e9;
    int64_t w1 = lt_wait_core_ns();
    run->wait_core_seconds = w0 >= 0 && w1 >= w0 ? (double)(w1 - w0) / 1e9 : -1;
    run->rows_per_s = (double)cfg->rows / run->seconds;
    run->rows_per_cpu_s = (double)cfg->rows / run->cpu_seconds;
    fr_lake_status st;
    FR_GOTO(fr_table_lake_status(t, &st, err));
    if (st.lag_records != 0 || id < 0) {
        rc = fr_fail(err, FR_ESTATE, "the round left %lld records untiered (snapshot %lld)",
                     (long long)st.lag_records, (long long)id);
        goto fail;
    }
    char lake[4200];
    snprintf(lake, sizeof lake, "%s/lake/bench/tier/data", data_dir);
    run->lake_bytes = bk_tree_file_bytes(lake);
fail:
    if (t) fr_table_release(t);
    if (e) fr_engine_close(e);
    bk_random_load_close(&load);
    return rc;
}

/* Runs the peer script once (one timed COPY) on the Parquet files of data_dir, and reads its
 * JSON back into *out. */
static int lt_run_peer(const lt_config *cfg, const char *data_dir, int rep, json_t **out,
                       fr_error *err)
{
    char input[4200], path[4200], extra[8600];
    int cols[BK_COLUMNS];
    for (int i = 0; i < BK_COLUMNS; i++) cols[i] = i;
    snprintf(input, sizeof input, "%s/lake/bench/tier/data/**/*.parquet", data_dir);
    snprintf(path, sizeof path, "%s/duckdb_write_%d.json", cfg->dir, rep);
    snprintf(extra, sizeof extra, "--reps 1 --dir '%s/duckdb' --out '%s'", cfg->dir, path);
    FR_TRY(bk_run_duckdb_peer(cfg->node, cfg->peer_script, input, cols, BK_COLUMNS, extra, err));
    *out = bk_json_read(path, err);
    return *out ? FR_OK : (err->code < 0 ? err->code : FR_EIO);
}

static json_t *lt_run_json(const lt_run *r)
{
    return json_pack("{s:f, s:f, s:f, s:f, s:I, s:f}", "seconds", r->seconds, "cpu_seconds",
                     r->cpu_seconds, "rows_per_s", r->rows_per_s, "rows_per_cpu_s",
                     r->rows_per_cpu_s, "lake_bytes", (json_int_t)r->lake_bytes,
                     "wait_core_seconds", r->wait_core_seconds);
}

/* The firth and DuckDB figures, compared. */
static void lt_compare(const lt_config *cfg, double med, double cpu_med, double *peer_rates,
                       double *peer_cpu_rates, json_t *doc, json_t *targets)
{
    double peer = bk_median(peer_rates, (int)cfg->reps);
    double peer_cpu = bk_median(peer_cpu_rates, (int)cfg->reps);
    json_object_set_new(doc, "peer_median", json_pack("{s:f, s:f}", "rows_per_s", peer,
                                                      "rows_per_cpu_s", peer_cpu));
    json_object_set_new(doc, "cpu_ratio", json_real(peer_cpu > 0 ? cpu_med / peer_cpu : 0));
    bk_target t = {.name = "lake_tier_vs_duckdb",
                   .what = "rows/s tiering 20-column 1 KB rows to Parquet (ZSTD), committed, "
                           "1 thread / DuckDB COPY TO parquet (zstd), threads=1",
                   .figure = peer > 0 ? med / peer : 0,
                   .target = LT_TARGET_RATIO};
    json_array_append_new(targets, bk_target_json(&t));
    printf("  DuckDB: median %.0f rows/s (%.0f rows per CPU-second)\n", peer, peer_cpu);
    printf("  firth / DuckDB = %.2f in rows/s (target >= %.1f): %s; %.2f in rows per "
           "CPU-second\n", t.figure, t.target, bk_verdict(&t),
           peer_cpu > 0 ? cpu_med / peer_cpu : 0);
}

/* Each repetition: a firth round, then DuckDB on the files it wrote, so that both see the
 * same load of the machine. */
static int lt_throughput(const lt_config *cfg, json_t *doc, json_t *targets, fr_error *err)
{
    lt_run runs[BK_REPS_MAX];
    double rates[BK_REPS_MAX], cpu_rates[BK_REPS_MAX];
    double peer_rates[BK_REPS_MAX], peer_cpu_rates[BK_REPS_MAX];
    char data_dir[4096];
    int rc;
    FR_GOTO(bk_path(data_dir, sizeof data_dir, cfg->dir, "tier", err));
    json_t *jruns = json_array(), *jpeer = json_array();
    json_object_set_new(doc, "runs", jruns);
    json_object_set_new(doc, "peer", jpeer);
    for (int r = 0; r < cfg->reps; r++) {
        FR_GOTO(lt_tier_once(cfg, data_dir, &runs[r], err));
        rates[r] = runs[r].rows_per_s;
        cpu_rates[r] = runs[r].rows_per_cpu_s;
        json_array_append_new(jruns, lt_run_json(&runs[r]));
        printf("  firth round %d: %lld rows in %.3f s (%.3f s CPU, %.3f s waiting for a core): "
               "%.0f rows/s, %.1f MB of Parquet\n", r + 1, (long long)cfg->rows, runs[r].seconds,
               runs[r].cpu_seconds, runs[r].wait_core_seconds, runs[r].rows_per_s,
               (double)runs[r].lake_bytes / 1e6);
        if (!cfg->peer_script) continue;
        json_t *peer = NULL;
        FR_GOTO(lt_run_peer(cfg, data_dir, r, &peer, err));
        peer_rates[r] = bk_json_number(peer, "median.rows_per_s");
        peer_cpu_rates[r] = bk_json_number(peer, "median.rows_per_cpu_s");
        json_array_append_new(jpeer, peer);
    }
    double med = bk_median(rates, (int)cfg->reps), cpu_med = bk_median(cpu_rates, (int)cfg->reps);
    json_object_set_new(doc, "median", json_pack("{s:f, s:f}", "rows_per_s", med,
                                                 "rows_per_cpu_s", cpu_med));
    printf("  firth: median %.0f rows/s (%.0f rows per CPU-second)\n", med, cpu_med);
    if (cfg->peer_script) lt_compare(cfg, med, cpu_med, peer_rates, peer_cpu_rates, doc, targets);
    rc = 0;
fail:;
    fr_error scratch; /* a label takes a statement before a declaration, until C23 */
    fr_remove_tree(data_dir, &scratch);
    return rc;
}

/* ---- freshness ------------------------------------------------------------------------- */

typedef struct lt_fresh_batch {
    int64_t last_offset;
    int64_t ack_ns;
    int64_t visible_ns; /* 0 until seen */
} lt_fresh_batch;

typedef struct lt_fresh {
    fr_table *t;
    lt_fresh_batch *b;
    int64_t cap;
    int64_t rows;          /* per batch */
    atomic_int_fast64_t n; /* batches acknowledged */
    atomic_bool writing;
    fr_error err;
    int rc;
} lt_fresh;

static void *lt_writer(void *arg)
{
    lt_fresh *f = arg;
    fr_schema *schema = NULL;
    fr_builder *bld = NULL;
    fr_batch *batch = NULL;
    bk_rng rng;
    bk_rng_seed(&rng, 7);
    /* One batch appended again and again: building distinct rows would only slow the
     * writer, and the lake does not care. */
    f->rc = bk_schema_new(&schema, &f->err);
    if (f->rc == 0) f->rc = fr_builder_new(schema, &bld, &f->err);
    if (f->rc == 0) f->rc = bk_batch_random(bld, f->rows, &rng, &batch, &f->err);
    int64_t next = fr_monotonic_ns();
    while (f->rc == 0 && atomic_load(&f->writing) && atomic_load(&f->n) < f->cap) {
        int64_t now = fr_monotonic_ns();
        if (now < next) {
            usleep((useconds_t)((next - now) / 1000));
            continue;
        }
        next += (int64_t)LT_WRITE_EVERY_MS * 1000000;
        int64_t i = atomic_load(&f->n);
        f->rc = fr_table_append(f->t, batch, FR_NO_WRITER, -1, NULL, &f->err);
        if (f->rc < 0) break;
        f->b[i].ack_ns = fr_monotonic_ns();
        f->b[i].last_offset = fr_log_end_offset(fr_table_log(f->t, 0)) - 1;
        atomic_store(&f->n, i + 1);
    }
    fr_batch_free(batch);
    if (bld) fr_builder_free(bld);
    fr_schema_free(schema);
    return NULL;
}

/* Marks the batches whose last offset is below the lake's tiered offset as visible now;
 * returns how many are visible in all. */
static int64_t lt_mark_visible(lt_fresh *f, fr_iceberg_table *ice, fr_error *err)
{
    fr_lake_snapshot *cur = NULL;
    if (fr_iceberg_refresh(ice, err) < 0 || fr_iceberg_current(ice, &cur, err) < 0 || !cur)
        return -1;
    int64_t tiered = -1, seen = 0, now = fr_monotonic_ns(), n = atomic_load(&f->n);
    for (int i = 0; i < cur->noffsets; i++)
        if (cur->offsets[i].bucket == 0) tiered = cur->offsets[i].offset;
    fr_lake_snapshots_free(cur, 1);
    for (int64_t i = 0; i < n; i++) {
        if (!f->b[i].visible_ns && f->b[i].last_offset < tiered) f->b[i].visible_ns = now;
        seen += f->b[i].visible_ns != 0;
    }
    return seen;
}

static int lt_freshness(const lt_config *cfg, json_t *doc, json_t *targets, fr_error *err)
{
    char data_dir[4096];
    FR_TRY(bk_path(data_dir, sizeof data_dir, cfg->dir, "fresh", err));
    fr_engine *e = NULL;
    fr_iceberg_table *ice = NULL;
    fr_schema *schema = NULL;
    lt_fresh f = {0};
    pthread_t writer;
    bool started = false;
    double *lat = NULL;
    int rc;
    f.cap = cfg->fresh_seconds * 1000 / LT_WRITE_EVERY_MS + 16;
    f.b = fr_calloc((size_t)f.cap, sizeof *f.b);
    lat = fr_calloc((size_t)f.cap, sizeof *lat);
    if (!f.b || !lat) {
        rc = fr_fail(err, FR_ENOMEM, "out of memory");
        goto fail;
    }
    f.rows = cfg->fresh_rows;
    FR_GOTO(bk_schema_new(&schema, err));
    FR_GOTO(lt_open(data_dir, 1, &e, err));
    FR_GOTO(lt_table(e, schema, cfg->freshness, &f.t, err));
    FR_GOTO(fr_table_lake_open(f.t, &ice, err));
    atomic_store(&f.writing, true);
    FR_GOTO(pthread_create(&writer, NULL, lt_writer, &f) == 0 ? 0
            : fr_fail(err, FR_EIO, "cannot start the writer"));
    started = true;
    int64_t t0 = fr_monotonic_ns(), stop_at = t0 + cfg->fresh_seconds * 1000000000LL;
    int64_t fresh_ms = 0;
    FR_GOTO(fr_parse_duration_ms(cfg->freshness, &fresh_ms, err));
    int64_t give_up = stop_at + (3 * fresh_ms + 10000) * 1000000LL;
    for (;;) {
        usleep(LT_POLL_MS * 1000);
        int64_t now = fr_monotonic_ns();
        if (now >= stop_at && atomic_load(&f.writing)) {
            atomic_store(&f.writing, false);
            pthread_join(writer, NULL);
            started = false;
        }
        fr_error perr = {0};
        int64_t seen = lt_mark_visible(&f, ice, &perr);
        if (!atomic_load(&f.writing) && seen == atomic_load(&f.n)) break;
        if (now > give_up) {
            rc = fr_fail(err, FR_ESTATE, "%lld of %lld batches not in the lake %lld s after "
                         "the last write", (long long)(atomic_load(&f.n) - seen),
                         (long long)atomic_load(&f.n), (long long)((now - stop_at) / 1000000000));
            goto fail;
        }
    }
    if (f.rc < 0) {
        *err = f.err;
        rc = f.rc;
        goto fail;
    }
    int64_t n = atomic_load(&f.n);
    for (int64_t i = 0; i < n; i++) lat[i] = (double)(f.b[i].visible_ns - f.b[i].ack_ns) / 1e9;
    double p50 = bk_quantile(lat, (int)n, 0.50), p99 = bk_quantile(lat, (int)n, 0.99);
    double max = bk_quantile(lat, (int)n, 1.0);
    fr_lake_status st;
    FR_GOTO(fr_table_lake_status(f.t, &st, err));
    json_object_set_new(doc, "freshness",
                        json_pack("{s:s, s:I, s:I, s:I, s:f, s:f, s:f, s:I}", "freshness",
                                  cfg->freshness, "seconds", (json_int_t)cfg->fresh_seconds,
                                  "batches", (json_int_t)n, "rows_per_batch",
                                  (json_int_t)cfg->fresh_rows, "p50_s", p50, "p99_s", p99,
                                  "max_s", max, "rounds", (json_int_t)st.rounds));
    bk_target t = {.name = "lake_freshness_p99_s",
                   .what = "seconds from acknowledgement to visibility in the lake, p99, "
                           "'table.datalake.freshness' = '10s'",
                   .figure = p99, .target = LT_TARGET_FRESH_P99_S, .lower_is_better = true};
    json_array_append_new(targets, bk_target_json(&t));
    printf("  freshness %s: %lld batches of %lld rows over %lld s, %lld rounds: "
           "p50 %.2f s, p99 %.2f s, max %.2f s (target p99 <= %.0f s): %s\n", cfg->freshness,
           (long long)n, (long long)cfg->fresh_rows, (long long)cfg->fresh_seconds,
           (long long)st.rounds, p50, p99, max, t.target, bk_verdict(&t));
    rc = 0;
fail:
    if (started) {
        atomic_store(&f.writing, false);
        pthread_join(writer, NULL);
    }
    if (ice) fr_iceberg_close(ice);
    if (f.t) fr_table_release(f.t);
    if (e) fr_engine_close(e);
    fr_schema_free(schema);
    fr_free(f.b);
    fr_free(lat);
    fr_error scratch;
    fr_remove_tree(data_dir, &scratch);
    return rc;
}

/* ---- main ------------------------------------------------------------------------------ */

static void lt_usage(void)
{
    fprintf(stderr,
            "usage: bench_lake_tier --dir SCRATCH_DIR [--out FILE.json] [--rows N] [--reps N]\n"
            "                       [--batch-rows N] [--seed N] [--peer-script FILE.mjs]\n"
            "                       [--node PATH] [--freshness DURATION] [--fresh-seconds N]\n"
            "                       [--fresh-rows N]\n"
            "  Times tiering rounds of N 20-column rows into Parquet (ZSTD) beside DuckDB's COPY\n"
            "  (with --peer-script), and the freshness of a table tiered every DURATION\n"
            "  (--fresh-seconds 0: no freshness run).\n");
}

static int lt_parse_args(int argc, char **argv, lt_config *cfg, fr_error *err)
{
    *cfg = (lt_config){.rows = 200000, .reps = 3, .batch_rows = 512, .seed = 42,
                       .node = "node", .freshness = "10s", .fresh_seconds = 45,
                       .fresh_rows = 200};
    for (int i = 1; i < argc; i += 2) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        FR_CHECK(v, FR_EINVAL, err, "%s needs a value", a);
        if (!strcmp(a, "--dir")) cfg->dir = v;
        else if (!strcmp(a, "--out")) cfg->out = v;
        else if (!strcmp(a, "--peer-script")) cfg->peer_script = v;
        else if (!strcmp(a, "--node")) cfg->node = v;
        else if (!strcmp(a, "--freshness")) cfg->freshness = v;
        else if (!strcmp(a, "--rows")) FR_TRY(bk_arg_i64(a, v, 1, 1LL << 32, &cfg->rows, err));
        else if (!strcmp(a, "--reps")) FR_TRY(bk_arg_i64(a, v, 1, BK_REPS_MAX, &cfg->reps, err));
        else if (!strcmp(a, "--batch-rows"))
            FR_TRY(bk_arg_i64(a, v, 1, FR_BATCH_ROWS_MAX, &cfg->batch_rows, err));
        else if (!strcmp(a, "--seed")) FR_TRY(bk_arg_i64(a, v, 0, INT64_MAX, &cfg->seed, err));
        else if (!strcmp(a, "--fresh-seconds"))
            FR_TRY(bk_arg_i64(a, v, 0, 3600, &cfg->fresh_seconds, err));
        else if (!strcmp(a, "--fresh-rows"))
            FR_TRY(bk_arg_i64(a, v, 1, 1 << 20, &cfg->fresh_rows, err));
        else
            return fr_fail(err, FR_EINVAL, "unknown option %s", a);
    }
    FR_CHECK(cfg->dir, FR_EINVAL, err, "--dir is required");
    return 0;
}

int main(int argc, char **argv)
{
    lt_config cfg;
    fr_error err = {0};
    if (lt_parse_args(argc, argv, &cfg, &err) < 0) {
        fprintf(stderr, "bench_lake_tier: %s\n", err.msg);
        lt_usage();
        return 2;
    }
    fr_log_set_default_level(FR_LOG_WARN);
    json_t *targets = json_array();
    json_t *doc = json_pack("{s:s, s:o, s:{s:I, s:I, s:I, s:I, s:s}}", "benchmark", "lake_tier",
                            "host", bk_host_json(), "config", "rows", (json_int_t)cfg.rows,
                            "reps", (json_int_t)cfg.reps, "batch_rows",
                            (json_int_t)cfg.batch_rows, "seed", (json_int_t)cfg.seed,
                            "parquet", "ZSTD level 3");
    printf("lake_tier: %lld rows of %d columns (about 1 KB each) per round, 1 bucket, one "
           "tiering round on one thread, %lld repetitions:\n", (long long)cfg.rows, BK_COLUMNS,
           (long long)cfg.reps);
    int rc = fr_mkdirs(cfg.dir, &err);
    if (rc == 0) rc = lt_throughput(&cfg, doc, targets, &err);
    if (rc == 0 && cfg.fresh_seconds > 0) rc = lt_freshness(&cfg, doc, targets, &err);
    json_object_set_new(doc, "targets", targets);
    if (rc == 0 && cfg.out) rc = bk_json_write(doc, cfg.out, &err);
    json_decref(doc);
    if (rc < 0) {
        fprintf(stderr, "bench_lake_tier: %s\n", err.msg);
        return 1;
    }
    return 0;
}
