/* bench_append.c — durable append throughput of one bucket, against the disk's own durable
 * sequential write speed measured in the same run.
 *
 * firth: several writer threads call fr_table_append on one table with one bucket, each
 * with a prebuilt batch of the 20-column benchmark table, under the flush policy
 * FR_FLUSH_EVERY_APPEND (an append returns once fsync'd; concurrent appends share fsyncs).
 * The timed span starts when all writers are released and ends when the last append has
 * returned, so it covers encoding (with the table's compression), writing and every fsync.
 *
 * The disk: `dd if=/dev/zero of=FILE bs=1M count=N conv=fdatasync` in the same directory,
 * its MB/s parsed from dd's report; and, for reference, write()+fdatasync of one batch-sized
 * chunk at a time (what a log without group commit would get at best).
 *
 * Repetitions interleave the disk and firth runs so that both see the same disk weather;
 * the figures reported are medians. The verdict compares firth's physical MB/s (log bytes
 * written per second) with dd's MB/s; the target is 60%. */
#include "benchkit.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define AP_CODECS_MAX 3
#define AP_TARGET_RATIO 0.60
#define AP_ENCODE_NS 300000000 /* CPU time spent measuring encoding alone, per codec */

typedef struct ap_config {
    const char *dir;
    const char *out;
    int64_t mb;          /* data per repetition, MiB: dd count, and rows of as many logical bytes */
    int64_t reps;
    int64_t writers;
    int64_t batch_rows;
    int64_t seed;
    bool skip_disk;
    const char *codecs[AP_CODECS_MAX];
    int ncodecs;
} ap_config;

/* One firth run's figures. */
typedef struct ap_result {
    double seconds;
    double cpu_seconds; /* CPU time of the whole process over the timed span */
    int64_t rows;
    int64_t logical_bytes;
    int64_t log_bytes;  /* what the log says it holds (segments) */
    int64_t disk_bytes; /* blocks allocated under DATA_DIR/log, indexes included */
    int64_t appends;
    int64_t fsyncs;     /* fdatasyncs of the segment during the run */
    double ack_p50_ms;
    double ack_p99_ms;
} ap_result;

/* What the writer threads share during one run. */
typedef struct ap_shared {
    fr_table *table;
    fr_batch *const *batches; /* one per writer */
    int64_t appends;          /* appends to do in total */
    atomic_int_fast64_t next; /* the next append to claim */
    atomic_int_fast64_t rows_appended;
    pthread_barrier_t start;
    double *ack_ms; /* per append, indexed by claim */
    pthread_mutex_t lock;
    fr_error first_err; /* under lock */
} ap_shared;

typedef struct ap_writer {
    ap_shared *sh;
    int index;
} ap_writer;

static void *ap_writer_main(void *arg)
{
    ap_writer *w = arg;
    ap_shared *sh = w->sh;
    fr_error err = {0};
    pthread_barrier_wait(&sh->start);
    for (;;) {
        int64_t claim = atomic_fetch_add(&sh->next, 1);
        if (claim >= sh->appends) break;
        int64_t appended = 0;
        int64_t t0 = fr_monotonic_ns();
        int rc = fr_table_append(sh->table, sh->batches[w->index], FR_NO_WRITER, -1, &appended,
                                 &err);
        sh->ack_ms[claim] = (double)(fr_monotonic_ns() - t0) / 1e6;
        if (rc < 0) {
            pthread_mutex_lock(&sh->lock);
            if (sh->first_err.code == 0) sh->first_err = err;
            pthread_mutex_unlock(&sh->lock);
            atomic_store(&sh->next, sh->appends); /* stop the others too */
            break;
        }
        atomic_fetch_add(&sh->rows_appended, appended);
    }
    return NULL;
}

/* Starts the writers, times them from release to the last return, and joins them. */
static int ap_run_writers(ap_shared *sh, int writers, double *seconds, double *cpu_seconds,
                          fr_error *err)
{
    pthread_t tid[64];
    ap_writer w[64];
    FR_CHECK(writers <= 64, FR_ELIMIT, err, "at most 64 writers");
    pthread_barrier_init(&sh->start, NULL, (unsigned)writers + 1);
    int started = 0;
    for (; started < writers; started++) {
        w[started] = (ap_writer){.sh = sh, .index = started};
        if (pthread_create(&tid[started], NULL, ap_writer_main, &w[started]) != 0) break;
    }
    if (started < writers) {
        /* The barrier can never open; a benchmark that cannot start its threads stops. */
        fprintf(stderr, "bench_append: cannot start writer thread %d\n", started);
        exit(2);
    }
    pthread_barrier_wait(&sh->start);
    int64_t t0 = fr_monotonic_ns(), c0 = bk_cpu_ns();
    for (int i = 0; i < writers; i++) pthread_join(tid[i], NULL);
    *seconds = (double)(fr_monotonic_ns() - t0) / 1e9;
    *cpu_seconds = (double)(bk_cpu_ns() - c0) / 1e9;
    pthread_barrier_destroy(&sh->start);
    if (sh->first_err.code < 0) {
        *err = sh->first_err;
        return err->code;
    }
    return 0;
}

/* One timed run of firth into a fresh data dir, which is removed afterwards. */
static int ap_run_firth(const ap_config *cfg, const char *codec, int rep,
                        fr_batch *const *batches, int64_t batch_logical, ap_result *res,
                        fr_error *err)
{
    char data_dir[4096], log_dir[4096], name[64];
    snprintf(name, sizeof name, "append-%s-%d", codec, rep);
    FR_TRY(bk_path(data_dir, sizeof data_dir, cfg->dir, name, err));
    FR_TRY(bk_path(log_dir, sizeof log_dir, data_dir, "log", err));
    fr_engine *e = NULL;
    fr_table *t = NULL;
    ap_shared sh = {.batches = batches};
    sh.appends = ((cfg->mb << 20) + batch_logical - 1) / batch_logical;
    int rc;
    sh.ack_ms = fr_calloc((size_t)sh.appends, sizeof *sh.ack_ms);
    FR_CHECK(sh.ack_ms, FR_ENOMEM, err, "out of memory for %lld latencies",
             (long long)sh.appends);
    pthread_mutex_init(&sh.lock, NULL);
    FR_GOTO(bk_engine_open(data_dir, FR_FLUSH_EVERY_APPEND, &e, err));
    FR_GOTO(bk_table_create(e, "append", fr_batch_schema(batches[0]), codec, &t, err));
    sh.table = t;
    int64_t fsyncs0 = fr_log_fsync_count(fr_table_log(t, 0));
    FR_GOTO(ap_run_writers(&sh, (int)cfg->writers, &res->seconds, &res->cpu_seconds, err));
    res->rows = atomic_load(&sh.rows_appended);
    if (res->rows != sh.appends * cfg->batch_rows) {
        rc = fr_fail(err, FR_ESTATE, "the table acknowledged %lld rows, expected %lld",
                     (long long)res->rows, (long long)(sh.appends * cfg->batch_rows));
        goto fail;
    }
    res->logical_bytes = sh.appends * batch_logical;
    res->appends = sh.appends;
    res->fsyncs = fr_log_fsync_count(fr_table_log(t, 0)) - fsyncs0;
    res->log_bytes = fr_log_size_bytes(fr_table_log(t, 0));
    res->disk_bytes = bk_tree_disk_bytes(log_dir);
    res->ack_p50_ms = bk_quantile(sh.ack_ms, (int)sh.appends, 0.50);
    res->ack_p99_ms = bk_quantile(sh.ack_ms, (int)sh.appends, 0.99);
    rc = 0;
fail:
    if (t) fr_table_release(t);
    if (e) fr_engine_close(e);
    pthread_mutex_destroy(&sh.lock);
    fr_free(sh.ack_ms);
    fr_error scratch;
    fr_remove_tree(data_dir, &scratch);
    return rc;
}

/* write() of chunk-sized pieces with fdatasync after each, cfg->mb MiB in all. */
static int ap_run_fsync_chunks(const ap_config *cfg, size_t chunk, double *mb_s, fr_error *err)
{
    char file[4096];
    FR_TRY(bk_path(file, sizeof file, cfg->dir, "chunks.tmp", err));
    uint8_t *buf = fr_calloc(1, chunk);
    FR_CHECK(buf, FR_ENOMEM, err, "out of memory for a %zu-byte chunk", chunk);
    int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        fr_free(buf);
        return fr_fail_errno(err, errno, "open %s", file);
    }
    int64_t total = cfg->mb << 20, done = 0;
    int64_t t0 = fr_monotonic_ns();
    int rc = 0;
    while (done < total && rc == 0) {
        ssize_t n = write(fd, buf, chunk);
        if (n != (ssize_t)chunk || fdatasync(fd) != 0)
            rc = fr_fail_errno(err, errno, "write %s", file);
        done += (int64_t)chunk;
    }
    double secs = (double)(fr_monotonic_ns() - t0) / 1e9;
    close(fd);
    unlink(file);
    fr_free(buf);
    FR_TRY(rc);
    *mb_s = (double)done / secs / 1e6;
    return 0;
}

/* Encoding alone, on this thread: logical MB per CPU-second of fr_rb_encode with codec,
 * the work each append does before it reaches the log. Measured in CPU time, so it says
 * what one core can feed the log even when other work shares the machine. */
static int ap_encode_rate(fr_batch *const *batches, int nbatches, const char *codec,
                          double *mb_per_cpu_s, fr_error *err)
{
    fr_compression comp;
    FR_TRY(fr_compression_parse(codec, &comp, err));
    fr_rb_params p = {.schema_id = 0, .compression = comp, .writer_id = FR_NO_WRITER,
                      .batch_sequence = -1, .change_types = NULL};
    fr_buf out;
    fr_buf_init(&out);
    int64_t bytes = 0, used = 0, c0 = bk_thread_cpu_ns();
    int rc = 0;
    for (int i = 0; used < AP_ENCODE_NS && rc == 0; i++) {
        fr_buf_reset(&out);
        rc = fr_rb_encode(batches[i % nbatches], &p, &out, err);
        bytes += bk_batch_logical_bytes(batches[i % nbatches], NULL, 0);
        used = bk_thread_cpu_ns() - c0;
    }
    fr_buf_free(&out);
    FR_TRY(rc);
    *mb_per_cpu_s = (double)bytes / ((double)used / 1e9) / 1e6;
    return 0;
}

static void ap_usage(void)
{
    fprintf(stderr,
            "usage: bench_append --dir SCRATCH_DIR [--out FILE.json] [--mb MIB] [--reps N]\n"
            "                    [--writers N] [--batch-rows N] [--seed N] [--codec NAME]...\n"
            "                    [--skip-disk]\n"
            "  Appends MIB MiB of 20-column rows per repetition to one bucket with fsync'd group\n"
            "  commit, and measures dd's fdatasync'd write speed in SCRATCH_DIR alongside.\n"
            "  --codec may be repeated (default: ZSTD and NONE).\n");
}

static int ap_parse_args(int argc, char **argv, ap_config *cfg, fr_error *err)
{
    *cfg = (ap_config){.mb = 192, .reps = 3, .writers = 4, .batch_rows = 512, .seed = 42};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        bool takes_value = true;
        if (!strcmp(a, "--dir")) cfg->dir = v;
        else if (!strcmp(a, "--out")) cfg->out = v;
        else if (!strcmp(a, "--mb")) FR_TRY(bk_arg_i64(a, v, 1, 1 << 20, &cfg->mb, err));
        else if (!strcmp(a, "--reps")) FR_TRY(bk_arg_i64(a, v, 1, BK_REPS_MAX, &cfg->reps, err));
        else if (!strcmp(a, "--writers")) FR_TRY(bk_arg_i64(a, v, 1, 64, &cfg->writers, err));
        else if (!strcmp(a, "--batch-rows"))
            FR_TRY(bk_arg_i64(a, v, 1, FR_BATCH_ROWS_MAX, &cfg->batch_rows, err));
        else if (!strcmp(a, "--seed")) FR_TRY(bk_arg_i64(a, v, 0, INT64_MAX, &cfg->seed, err));
        else if (!strcmp(a, "--codec")) {
            FR_CHECK(cfg->ncodecs < AP_CODECS_MAX, FR_ELIMIT, err, "at most %d codecs",
                     AP_CODECS_MAX);
            cfg->codecs[cfg->ncodecs++] = v;
        } else if (!strcmp(a, "--skip-disk")) {
            cfg->skip_disk = true;
            takes_value = false;
        } else
            return fr_fail(err, FR_EINVAL, "unknown option %s", a);
        FR_CHECK(!takes_value || v, FR_EINVAL, err, "%s needs a value", a);
        i += takes_value;
    }
    FR_CHECK(cfg->dir, FR_EINVAL, err, "--dir is required");
    if (cfg->ncodecs == 0) {
        cfg->codecs[cfg->ncodecs++] = "ZSTD";
        cfg->codecs[cfg->ncodecs++] = "NONE";
    }
    return 0;
}

/* Builds one distinct batch per writer (untimed). */
static int ap_build_batches(const ap_config *cfg, fr_batch **batches, int64_t *logical,
                            fr_error *err)
{
    fr_schema *schema = NULL;
    fr_builder *bld = NULL;
    bk_rng rng;
    bk_rng_seed(&rng, (uint64_t)cfg->seed);
    int rc;
    FR_GOTO(bk_schema_new(&schema, err));
    FR_GOTO(fr_builder_new(schema, &bld, err));
    *logical = 0;
    for (int i = 0; i < cfg->writers; i++) {
        FR_GOTO(bk_batch_random(bld, cfg->batch_rows, &rng, &batches[i], err));
        *logical += bk_batch_logical_bytes(batches[i], NULL, 0);
    }
    /* Writers append their own batch, and claims spread evenly, so the mean is the figure. */
    *logical /= cfg->writers;
fail:
    if (bld) fr_builder_free(bld);
    if (schema) fr_schema_free(schema);
    return rc;
}

/* The medians of one codec's runs, as JSON, and its physical MB/s for the verdict. */
static json_t *ap_codec_json(const char *codec, const ap_result *r, int reps, double encode,
                             double *phys_med)
{
    double rows_s[BK_REPS_MAX], log_mb[BK_REPS_MAX], phys_mb[BK_REPS_MAX], disk_mb[BK_REPS_MAX];
    double p50[BK_REPS_MAX], p99[BK_REPS_MAX], ratio[BK_REPS_MAX], cores[BK_REPS_MAX];
    double per_fsync[BK_REPS_MAX], per_cpu[BK_REPS_MAX];
    json_t *each = json_array();
    for (int i = 0; i < reps; i++) {
        rows_s[i] = (double)r[i].rows / r[i].seconds;
        log_mb[i] = (double)r[i].logical_bytes / r[i].seconds / 1e6;
        phys_mb[i] = (double)r[i].log_bytes / r[i].seconds / 1e6;
        disk_mb[i] = (double)r[i].disk_bytes / r[i].seconds / 1e6;
        ratio[i] = (double)r[i].log_bytes / (double)r[i].logical_bytes;
        cores[i] = r[i].cpu_seconds / r[i].seconds;
        per_cpu[i] = (double)r[i].logical_bytes / r[i].cpu_seconds / 1e6;
        per_fsync[i] = r[i].fsyncs > 0 ? (double)r[i].appends / (double)r[i].fsyncs : 0;
        p50[i] = r[i].ack_p50_ms;
        p99[i] = r[i].ack_p99_ms;
        json_array_append_new(each, json_pack("{s:f, s:f, s:I, s:I, s:I, s:I, s:I, s:I, s:f, s:f}",
            "seconds", r[i].seconds, "cpu_seconds", r[i].cpu_seconds, "rows",
            (json_int_t)r[i].rows, "logical_bytes",
            (json_int_t)r[i].logical_bytes, "log_bytes", (json_int_t)r[i].log_bytes,
            "disk_bytes", (json_int_t)r[i].disk_bytes, "appends", (json_int_t)r[i].appends,
            "fsyncs", (json_int_t)r[i].fsyncs, "ack_p50_ms", p50[i], "ack_p99_ms", p99[i]));
    }
    *phys_med = bk_median(phys_mb, reps);
    return json_pack("{s:s, s:f, s:o, s:{s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f}}",
                     "compression", codec, "encode_only_logical_mb_per_cpu_s", encode,
                     "reps", each, "median", "rows_per_s", bk_median(rows_s, reps),
                     "logical_mb_per_s", bk_median(log_mb, reps), "physical_mb_per_s", *phys_med,
                     "disk_mb_per_s", bk_median(disk_mb, reps), "log_bytes_per_logical_byte",
                     bk_median(ratio, reps), "cpu_cores", bk_median(cores, reps),
                     "logical_mb_per_cpu_s", bk_median(per_cpu, reps),
                     "appends_per_fsync", bk_median(per_fsync, reps), "ack_p50_ms",
                     bk_median(p50, reps), "ack_p99_ms", bk_median(p99, reps));
}

static void ap_print_codec(json_t *run, double dd_med)
{
    json_t *m = json_object_get(run, "median");
    double phys = json_real_value(json_object_get(m, "physical_mb_per_s"));
    printf("  firth %-5s %10.0f rows/s  %7.1f MB/s logical  %7.1f MB/s physical (%.2f of "
           "logical)  %5.1f%% of dd\n"
           "               ack p50 %.1f ms p99 %.1f ms, %.2f appends per fsync, %.2f cores busy\n"
           "               CPU: %.0f logical MB per CPU-second (encoding alone: %.0f)\n",
           json_string_value(json_object_get(run, "compression")),
           json_real_value(json_object_get(m, "rows_per_s")),
           json_real_value(json_object_get(m, "logical_mb_per_s")), phys,
           json_real_value(json_object_get(m, "log_bytes_per_logical_byte")),
           dd_med > 0 ? 100 * phys / dd_med : 0.0,
           json_real_value(json_object_get(m, "ack_p50_ms")),
           json_real_value(json_object_get(m, "ack_p99_ms")),
           json_real_value(json_object_get(m, "appends_per_fsync")),
           json_real_value(json_object_get(m, "cpu_cores")),
           json_real_value(json_object_get(m, "logical_mb_per_cpu_s")),
           json_real_value(json_object_get(run, "encode_only_logical_mb_per_cpu_s")));
}

/* All repetitions: dd, the chunked-fsync reference, then firth with each codec. */
static int ap_run_reps(const ap_config *cfg, fr_batch *const *batches, int64_t batch_logical,
                       double *dd, char (*dd_rate)[32], double *chunks,
                       ap_result (*res)[BK_REPS_MAX], fr_error *err)
{
    for (int rep = 0; rep < cfg->reps; rep++) {
        printf("  rep %d/%lld:", rep + 1, (long long)cfg->reps);
        if (!cfg->skip_disk) {
            FR_TRY(bk_run_dd(cfg->dir, cfg->mb, &dd[rep], dd_rate[rep], sizeof dd_rate[rep], err));
            FR_TRY(ap_run_fsync_chunks(cfg, (size_t)batch_logical, &chunks[rep], err));
            printf(" dd %.1f MB/s, fsync per batch %.1f MB/s", dd[rep], chunks[rep]);
        }
        for (int c = 0; c < cfg->ncodecs; c++) {
            ap_result *r = &res[c][rep];
            FR_TRY(ap_run_firth(cfg, cfg->codecs[c], rep, batches, batch_logical, r, err));
            printf(", %s %.1f MB/s physical", cfg->codecs[c],
                   (double)r->log_bytes / r->seconds / 1e6);
        }
        printf("\n");
        fflush(stdout);
    }
    return 0;
}

static json_t *ap_disk_json(const ap_config *cfg, double *dd, char (*dd_rate)[32],
                            double *chunks, double *dd_med)
{
    if (cfg->skip_disk) return json_null();
    json_t *a = json_array(), *rates = json_array(), *b = json_array();
    for (int i = 0; i < cfg->reps; i++) {
        json_array_append_new(a, json_real(dd[i]));
        json_array_append_new(rates, json_string(dd_rate[i]));
        json_array_append_new(b, json_real(chunks[i]));
    }
    *dd_med = bk_median(dd, (int)cfg->reps);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "dd if=/dev/zero of=<scratch dir>/dd.tmp bs=1M count=%lld "
             "conv=fdatasync", (long long)cfg->mb);
    return json_pack("{s:s, s:o, s:o, s:f, s:o, s:f}", "dd_command", cmd, "dd_mb_per_s", a,
                     "dd_reported", rates, "dd_mb_per_s_median", *dd_med,
                     "fsync_per_batch_mb_per_s", b, "fsync_per_batch_mb_per_s_median",
                     bk_median(chunks, (int)cfg->reps));
}

static int ap_report(const ap_config *cfg, int64_t batch_logical, const double *encode,
                     double *dd, char (*dd_rate)[32], double *chunks,
                     ap_result (*res)[BK_REPS_MAX], fr_error *err)
{
    double dd_med = 0;
    json_t *runs = json_array(), *targets = json_array();
    json_t *disk = ap_disk_json(cfg, dd, dd_rate, chunks, &dd_med);
    printf("append (medians of %lld, MB = 10^6 bytes):\n", (long long)cfg->reps);
    if (!cfg->skip_disk)
        printf("  disk  dd bs=1M conv=fdatasync %.1f MB/s; write+fdatasync per %lld-byte "
               "chunk %.1f MB/s\n", dd_med, (long long)batch_logical,
               json_real_value(json_object_get(disk, "fsync_per_batch_mb_per_s_median")));
    for (int c = 0; c < cfg->ncodecs; c++) {
        double phys = 0;
        json_t *run = ap_codec_json(cfg->codecs[c], res[c], (int)cfg->reps, encode[c], &phys);
        ap_print_codec(run, dd_med);
        json_array_append_new(runs, run);
        if (cfg->skip_disk) continue;
        char name[64], what[256];
        snprintf(name, sizeof name, "append_%s_vs_disk", cfg->codecs[c]);
        snprintf(what, sizeof what, "firth physical MB/s (log bytes/s, %s, %lld writers, fsync "
                 "per append) / dd conv=fdatasync MB/s", cfg->codecs[c], (long long)cfg->writers);
        bk_target t = {.name = name, .what = what, .figure = phys / dd_med,
                       .target = AP_TARGET_RATIO};
        json_array_append_new(targets, bk_target_json(&t));
    }
    json_t *doc = json_pack("{s:s, s:o, s:{s:I, s:I, s:I, s:I, s:I, s:s, s:i, s:I}, s:o, s:o, s:o}",
        "benchmark", "append", "host", bk_host_json(), "config", "mib_per_rep",
        (json_int_t)cfg->mb, "reps", (json_int_t)cfg->reps, "writers", (json_int_t)cfg->writers,
        "batch_rows", (json_int_t)cfg->batch_rows, "batch_logical_bytes",
        (json_int_t)batch_logical, "flush", "EVERY_APPEND", "buckets", 1, "seed",
        (json_int_t)cfg->seed, "disk", disk, "runs", runs, "targets", targets);
    int rc = cfg->out ? bk_json_write(doc, cfg->out, err) : 0;
    json_decref(doc);
    return rc;
}

int main(int argc, char **argv)
{
    ap_config cfg;
    fr_error err = {0};
    fr_batch *batches[64] = {0};
    static ap_result res[AP_CODECS_MAX][BK_REPS_MAX];
    double dd[BK_REPS_MAX] = {0}, chunks[BK_REPS_MAX] = {0}, encode[AP_CODECS_MAX] = {0};
    char dd_rate[BK_REPS_MAX][32] = {{0}};
    int64_t batch_logical = 0;
    int rc;
    setenv("LC_ALL", "C", 1); /* dd's report must use '.' decimals to parse */
    if (ap_parse_args(argc, argv, &cfg, &err) < 0) {
        fprintf(stderr, "bench_append: %s\n", err.msg);
        ap_usage();
        return 2;
    }
    FR_GOTO(fr_mkdirs(cfg.dir, &err));
    FR_GOTO(ap_build_batches(&cfg, batches, &batch_logical, &err));
    printf("append: %d columns, %lld logical bytes/row, %lld writers x %lld-row batches, "
           "%lld MiB per run, 1 bucket, fsync per append\n", BK_COLUMNS,
           (long long)(batch_logical / cfg.batch_rows), (long long)cfg.writers,
           (long long)cfg.batch_rows, (long long)cfg.mb);
    for (int c = 0; c < cfg.ncodecs; c++)
        FR_GOTO(ap_encode_rate(batches, (int)cfg.writers, cfg.codecs[c], &encode[c], &err));
    FR_GOTO(ap_run_reps(&cfg, batches, batch_logical, dd, dd_rate, chunks, res, &err));
    FR_GOTO(ap_report(&cfg, batch_logical, encode, dd, dd_rate, chunks, res, &err));
fail:
    for (int i = 0; i < 64; i++)
        if (batches[i]) fr_batch_free(batches[i]);
    if (rc < 0) fprintf(stderr, "bench_append: %s (%s)\n", err.msg, fr_strcode(rc));
    return rc < 0 ? 1 : 0;
}
