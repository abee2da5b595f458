/* bench_net_fetch.c — projected fetch over the network: rows/s of a scanner that reads a
 * table of the 20-column benchmark rows from a real `firth server` with 2, 4, 10 and 20 of
 * its columns, beside a peer that holds the same records (Redis Streams, measured by
 * peer_redis_streams, whose result file --peer names).
 *
 * A table with one bucket is loaded over the network (firth_produce, not timed), then read
 * once in full so that its files sit in the page cache. Each scan subscribes a scanner to the
 * bucket from the earliest offset and polls (long polls that never wait: records are there)
 * until every row has come back; the figure is rows per second of one scan, including the
 * server's reading and projecting of the stored batches, the transfer over loopback and the
 * client's decoding of the columns into batches. The columns of a k-column projection are
 * spread over the schema (i0, d0 for k = 2), as in bench_projection. A short scan is repeated
 * within a sample so that a sample lasts about 0.1 s; figures are medians over repetitions.
 * Every scan checks that it received every row with the columns asked for.
 *
 * The verdict compares rows/s with 2 of 20 columns with the peer's rows/s (which always
 * returns whole entries: a stream has no projection); the target is 10x. */
#include "benchkit.h"
#include "client/client_bridge.h"

#include <stdio.h>
#include <stdlib.h>

#define NF_CODECS_MAX 3
#define NF_SETS 4
#define NF_TARGET_VS_PEER 10.0
#define NF_SAMPLE_NS 100000000

typedef struct nf_config {
    const char *connect;
    const char *out;
    const char *peer; /* the peer's result file, or NULL */
    int64_t rows;
    int64_t reps;
    int64_t batch_rows;
    int64_t max_bytes; /* the scanner's bytes per poll (0: the client's default) */
    int64_t seed;
    int64_t server_pid;
    const char *codecs[NF_CODECS_MAX];
    int ncodecs;
} nf_config;

typedef struct nf_set {
    const char *label;
    int cols[BK_COLUMNS];
    int ncols;
    char text[160]; /* "i0, d0" */
} nf_set;

/* Everything measured for one codec. */
typedef struct nf_times {
    double wall[NF_SETS][BK_REPS_MAX]; /* seconds per scan */
    double cpu[NF_SETS][BK_REPS_MAX];  /* client CPU seconds per scan */
    double server_cpu[NF_SETS][BK_REPS_MAX];
    int inner[NF_SETS];
    int64_t polls[NF_SETS];            /* polls of one scan */
    double load_seconds;
    int64_t col_bytes[BK_COLUMNS];
} nf_times;

static void nf_sets_init(nf_set *sets)
{
    static const int ks[NF_SETS] = {2, 4, 10, 20};
    static const char *labels[NF_SETS] = {"2 of 20", "4 of 20", "10 of 20", "20 of 20"};
    for (int s = 0; s < NF_SETS; s++) {
        sets[s].label = labels[s];
        sets[s].ncols = ks[s];
        bk_spread_columns(ks[s], sets[s].cols);
        bk_columns_text(sets[s].cols, ks[s], sets[s].text, sizeof sets[s].text);
    }
}

/* One scan of every row from the earliest offset with the scanner's projection. */
static int nf_scan(const nf_config *cfg, firth_scanner *s, const nf_set *set, int64_t *polls,
                   fr_error *err)
{
    firth_error fe = {0};
    if (firth_scanner_subscribe(s, NULL, 0, FIRTH_START_EARLIEST, 0, &fe) != 0)
        return bk_firth_fail(&fe, "subscribe", err);
    int64_t rows = 0, n = 0;
    while (rows < cfg->rows) {
        firth_scan_result *r = NULL;
        if (firth_scanner_poll(s, 1000, &r, &fe) != 0) return bk_firth_fail(&fe, "poll", err);
        int64_t got = firth_scan_result_rows(r);
        bool bad = false;
        for (int i = 0; i < firth_scan_result_count(r); i++) {
            const fr_batch *b = firth_batch_unwrap(firth_scan_result_get(r, i)->batch);
            bad |= fr_batch_num_columns(b) != set->ncols;
        }
        firth_scan_result_free(r);
        FR_CHECK(!bad, FR_ESTATE, err, "a scan of %s returned batches of the wrong columns",
                 set->label);
        FR_CHECK(got > 0, FR_ESTATE, err, "a scan of %s stopped at %lld of %lld rows",
                 set->label, (long long)rows, (long long)cfg->rows);
        rows += got;
        n++;
    }
    FR_CHECK(rows == cfg->rows, FR_ESTATE, err,
             "a scan of %s returned %lld rows (expected %lld)", set->label, (long long)rows,
             (long long)cfg->rows);
    *polls = n;
    return 0;
}

/* One sample: `inner` scans back to back; seconds per scan. */
static int nf_sample(const nf_config *cfg, firth_scanner *s, const nf_set *set, int inner,
                     double *wall, double *cpu, double *server_cpu, int64_t *polls,
                     fr_error *err)
{
    pid_t spid = (pid_t)cfg->server_pid;
    int64_t w0 = fr_monotonic_ns(), c0 = bk_cpu_ns(), s0 = bk_pid_cpu_ns(spid);
    for (int i = 0; i < inner; i++) FR_TRY(nf_scan(cfg, s, set, polls, err));
    int64_t s1 = bk_pid_cpu_ns(spid);
    *wall = (double)(fr_monotonic_ns() - w0) / 1e9 / inner;
    *cpu = (double)(bk_cpu_ns() - c0) / 1e9 / inner;
    *server_cpu = s0 >= 0 && s1 >= 0 ? (double)(s1 - s0) / 1e9 / inner : -1;
    return 0;
}

/* Loads cfg->rows rows (the load peers hold too, see bk_load_batch) with firth_produce. */
static int nf_load(const nf_config *cfg, firth_client *c, const char *table,
                   int64_t *col_bytes, fr_error *err)
{
    fr_batch *distinct[BK_DISTINCT];
    FR_TRY(bk_distinct_batches(cfg->seed, cfg->batch_rows, distinct, err));
    int rc = 0;
    for (int64_t i = 0; rc == 0; i++) {
        fr_batch *b = NULL;
        bool owned = false;
        int64_t n = 0, appended = 0;
        rc = bk_load_batch(distinct, cfg->batch_rows, cfg->rows, i, &b, &owned, &n, err);
        if (rc < 0 || n == 0) break;
        for (int col = 0; col < BK_COLUMNS; col++)
            col_bytes[col] += bk_batch_logical_bytes(b, &col, 1);
        /* The wrapper owns what it wraps: a slice is handed over, a distinct batch is
         * shared so that it stays ours. */
        fr_batch *mine = b;
        if (!owned) rc = bk_batch_head(b, n, &mine, err);
        firth_batch *fb = rc == 0 ? firth_batch_wrap(mine) : NULL;
        if (rc == 0 && !fb) {
            fr_batch_free(mine);
            rc = fr_fail(err, FR_ENOMEM, "out of memory wrapping a batch");
        }
        firth_error fe = {0};
        if (rc == 0 && firth_produce(c, table, fb, -1, 0, &appended, &fe) != 0)
            rc = bk_firth_fail(&fe, "produce", err);
        firth_batch_free(fb);
    }
    for (int i = 0; i < BK_DISTINCT; i++) fr_batch_free(distinct[i]);
    return rc;
}

/* Loads a fresh table with codec, warms the cache, sizes the samples and times every
 * projection reps times (interleaved, so that drift affects them alike). */
static int nf_run_codec(const nf_config *cfg, firth_client *c, const char *codec,
                        const nf_set *sets, nf_times *tm, fr_error *err)
{
    char name[64], qname[96];
    snprintf(name, sizeof name, "fetch_%s", codec);
    for (char *p = name; *p; p++)
        if (*p >= 'A' && *p <= 'Z') *p = (char)(*p - 'A' + 'a');
    snprintf(qname, sizeof qname, "bench_net.%s", name);
    FR_TRY(bk_remote_table_create(c, "bench_net", name, -1, 1, codec, NULL, 0, err));
    int64_t t0 = fr_monotonic_ns();
    FR_TRY(nf_load(cfg, c, qname, tm->col_bytes, err));
    tm->load_seconds = (double)(fr_monotonic_ns() - t0) / 1e9;
    firth_scanner *sc[NF_SETS] = {0};
    int rc = 0;
    for (int s = 0; s < NF_SETS && rc == 0; s++) {
        firth_scanner_options o = {.columns = sets[s].text, .max_bytes = cfg->max_bytes};
        firth_error fe = {0};
        if (firth_scanner_open(c, qname, &o, &sc[s], &fe) != 0)
            rc = bk_firth_fail(&fe, "scanner", err);
    }
    int64_t polls;
    if (rc == 0) rc = nf_scan(cfg, sc[NF_SETS - 1], &sets[NF_SETS - 1], &polls, err);
    for (int s = 0; s < NF_SETS && rc == 0; s++) {
        double wall = 0, cpu = 0, scpu = 0;
        rc = nf_sample(cfg, sc[s], &sets[s], 1, &wall, &cpu, &scpu, &tm->polls[s], err);
        double n = (double)NF_SAMPLE_NS / 1e9 / (wall > 1e-6 ? wall : 1e-6);
        tm->inner[s] = n < 1 ? 1 : n > 1000 ? 1000 : (int)n;
    }
    for (int rep = 0; rep < cfg->reps && rc == 0; rep++)
        for (int s = 0; s < NF_SETS && rc == 0; s++)
            rc = nf_sample(cfg, sc[s], &sets[s], tm->inner[s], &tm->wall[s][rep],
                           &tm->cpu[s][rep], &tm->server_cpu[s][rep], &polls, err);
    for (int s = 0; s < NF_SETS; s++) firth_scanner_close(sc[s]);
    firth_error fe = {0};
    if (firth_drop_table(c, qname, true, &fe) != 0 && rc == 0)
        rc = bk_firth_fail(&fe, "drop", err);
    return rc;
}

/* ---- reporting ----------------------------------------------------------------------------- */

static double nf_cores(const double *cpu, const double *wall, int reps)
{
    double v[BK_REPS_MAX];
    for (int i = 0; i < reps; i++) v[i] = cpu[i] >= 0 ? cpu[i] / wall[i] : -1;
    return bk_median(v, reps);
}

static json_t *nf_set_json(const nf_config *cfg, const nf_set *set, const nf_times *tm, int s,
                           double rows_s, double all_rows_s, double peer_rows_s,
                           int64_t row_bytes)
{
    int reps = (int)cfg->reps;
    int64_t bytes = 0;
    json_t *cols = json_array(), *walls = json_array();
    for (int i = 0; i < set->ncols; i++) {
        bytes += tm->col_bytes[set->cols[i]];
        json_array_append_new(cols, json_string(bk_column_name(set->cols[i])));
    }
    for (int r = 0; r < reps; r++) json_array_append_new(walls, json_real(tm->wall[s][r]));
    double share = (double)bytes / (double)row_bytes;
    double mb_s = rows_s * (double)bytes / (double)cfg->rows / 1e6;
    double ccores = nf_cores(tm->cpu[s], tm->wall[s], reps);
    double scores = nf_cores(tm->server_cpu[s], tm->wall[s], reps);
    printf("    %-10s %5.1f%%  %12.0f %7.2fx  %8.1f  %6.2f  %6.2f  %5lld", set->label,
           100 * share, rows_s, rows_s / all_rows_s, mb_s, ccores, scores,
           (long long)tm->polls[s]);
    if (peer_rows_s > 0) printf("  %7.2fx", rows_s / peer_rows_s);
    printf("\n");
    return json_pack("{s:s, s:o, s:f, s:i, s:I, s:o, s:f, s:f, s:f, s:f, s:f, s:f}", "label",
                     set->label, "columns", cols, "share_of_row_bytes", share,
                     "scans_per_sample", tm->inner[s], "polls_per_scan",
                     (json_int_t)tm->polls[s], "seconds_per_scan", walls, "rows_per_s",
                     rows_s, "column_mb_per_s", mb_s, "speedup_vs_all", rows_s / all_rows_s,
                     "vs_peer", peer_rows_s > 0 ? rows_s / peer_rows_s : 0.0, "client_cores",
                     ccores, "server_cores", scores);
}

static json_t *nf_codec_json(const nf_config *cfg, const char *codec, const nf_set *sets,
                             nf_times *tm, double peer_rows_s, double *two_rows_s)
{
    int64_t row_bytes = 0;
    for (int c = 0; c < BK_COLUMNS; c++) row_bytes += tm->col_bytes[c];
    double rows_s[NF_SETS];
    for (int s = 0; s < NF_SETS; s++)
        rows_s[s] = (double)cfg->rows / bk_median(tm->wall[s], (int)cfg->reps);
    *two_rows_s = rows_s[0];
    printf("  %s: %lld rows (%.1f MB logical) loaded over the network in %.2f s\n", codec,
           (long long)cfg->rows, (double)row_bytes / 1e6, tm->load_seconds);
    printf("    %-10s %6s  %12s %8s  %8s  %6s  %6s  %5s%s\n", "columns", "bytes", "rows/s",
           "vs 20", "col MB/s", "client", "server", "polls", peer_rows_s > 0 ? "  vs peer" : "");
    json_t *list = json_array();
    for (int s = 0; s < NF_SETS; s++)
        json_array_append_new(list, nf_set_json(cfg, &sets[s], tm, s, rows_s[s], rows_s[3],
                                                peer_rows_s, row_bytes));
    return json_pack("{s:s, s:I, s:f, s:o}", "compression", codec, "logical_bytes",
                     (json_int_t)row_bytes, "load_seconds", tm->load_seconds, "projections",
                     list);
}

/* The peer's rows/s and its name from its result file; 0 when there is none. */
static double nf_peer(const nf_config *cfg, json_t **peer_doc)
{
    *peer_doc = NULL;
    if (!cfg->peer) return 0;
    fr_error err = {0};
    *peer_doc = bk_json_read(cfg->peer, &err);
    if (!*peer_doc) {
        printf("  peer: not available (%s)\n", err.msg);
        return 0;
    }
    double rows_s = bk_json_number(*peer_doc, "median.rows_per_s");
    json_int_t rows = (json_int_t)bk_json_number(*peer_doc, "config.rows");
    printf("  peer: %s, %lld entries of 20 fields, %.0f rows/s (whole entries, XRANGE pages "
           "of %.0f)\n", json_string_value(json_object_get(*peer_doc, "peer")),
           (long long)rows, rows_s, bk_json_number(*peer_doc, "config.page"));
    if (rows != cfg->rows) printf("  peer: warning: it held %lld rows, firth %lld\n",
                                  (long long)rows, (long long)cfg->rows);
    return rows_s;
}

static int nf_report(const nf_config *cfg, const nf_set *sets, nf_times *tms, fr_error *err)
{
    json_t *peer_doc = NULL, *runs = json_array(), *targets = json_array();
    printf("net fetch (medians of %lld; client and server: cores busy):\n",
           (long long)cfg->reps);
    double peer_rows_s = nf_peer(cfg, &peer_doc);
    for (int c = 0; c < cfg->ncodecs; c++) {
        double two = 0;
        json_array_append_new(runs, nf_codec_json(cfg, cfg->codecs[c], sets, &tms[c],
                                                  peer_rows_s, &two));
        if (peer_rows_s <= 0) continue;
        char name[64], what[256];
        snprintf(name, sizeof name, "net_fetch_%s_2_vs_redis", cfg->codecs[c]);
        snprintf(what, sizeof what, "firth rows/s fetching 2 of 20 columns over firth:// (%s) "
                 "/ Redis Streams rows/s (XRANGE pages of whole 20-field entries)",
                 cfg->codecs[c]);
        bk_target t = {.name = name, .what = what, .figure = two / peer_rows_s,
                       .target = NF_TARGET_VS_PEER};
        json_array_append_new(targets, bk_target_json(&t));
    }
    json_t *doc = json_pack("{s:s, s:o, s:{s:I, s:I, s:I, s:I, s:I, s:i}, s:o, s:o, s:o}",
                            "benchmark", "net_fetch", "host", bk_host_json(), "config", "rows",
                            (json_int_t)cfg->rows, "reps", (json_int_t)cfg->reps, "batch_rows",
                            (json_int_t)cfg->batch_rows, "max_bytes",
                            (json_int_t)cfg->max_bytes, "seed", (json_int_t)cfg->seed,
                            "buckets", 1, "peer", peer_doc ? peer_doc : json_null(), "runs",
                            runs, "targets", targets);
    int rc = cfg->out ? bk_json_write(doc, cfg->out, err) : 0;
    json_decref(doc);
    return rc;
}

static void nf_usage(void)
{
    fprintf(stderr,
            "usage: bench_net_fetch --connect HOST:PORT [--out FILE.json] [--peer FILE.json]\n"
            "          [--rows N] [--reps N] [--batch-rows N] [--max-bytes N] [--seed N]\n"
            "          [--codec NAME]... [--server-pid PID]\n"
            "  Loads N rows of the 20-column table into a firth server, then times scans of 2,\n"
            "  4, 10 and 20 columns over the network; --peer is the result file of\n"
            "  peer_redis_streams run with the same --rows, --batch-rows and --seed.\n"
            "  --codec may be repeated (default: NONE).\n");
}

static int nf_parse_args(int argc, char **argv, nf_config *cfg, fr_error *err)
{
    *cfg = (nf_config){.rows = 131072, .reps = 3, .batch_rows = 512, .seed = 7};
    for (int i = 1; i < argc; i += 2) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        FR_CHECK(v, FR_EINVAL, err, "%s needs a value", a);
        if (!strcmp(a, "--connect")) cfg->connect = v;
        else if (!strcmp(a, "--out")) cfg->out = v;
        else if (!strcmp(a, "--peer")) cfg->peer = v;
        else if (!strcmp(a, "--rows")) FR_TRY(bk_arg_i64(a, v, 1, INT32_MAX, &cfg->rows, err));
        else if (!strcmp(a, "--reps")) FR_TRY(bk_arg_i64(a, v, 1, BK_REPS_MAX, &cfg->reps, err));
        else if (!strcmp(a, "--batch-rows"))
            FR_TRY(bk_arg_i64(a, v, 1, FR_BATCH_ROWS_MAX, &cfg->batch_rows, err));
        else if (!strcmp(a, "--max-bytes"))
            FR_TRY(bk_arg_i64(a, v, 0, INT32_MAX, &cfg->max_bytes, err));
        else if (!strcmp(a, "--seed")) FR_TRY(bk_arg_i64(a, v, 0, INT64_MAX, &cfg->seed, err));
        else if (!strcmp(a, "--server-pid"))
            FR_TRY(bk_arg_i64(a, v, 0, INT32_MAX, &cfg->server_pid, err));
        else if (!strcmp(a, "--codec")) {
            FR_CHECK(cfg->ncodecs < NF_CODECS_MAX, FR_ELIMIT, err, "at most %d codecs",
                     NF_CODECS_MAX);
            cfg->codecs[cfg->ncodecs++] = v;
        } else
            return fr_fail(err, FR_EINVAL, "unknown option %s", a);
    }
    FR_CHECK(cfg->connect, FR_EINVAL, err, "--connect is required");
    if (cfg->ncodecs == 0) cfg->codecs[cfg->ncodecs++] = "NONE";
    return 0;
}

int main(int argc, char **argv)
{
    nf_config cfg;
    fr_error err = {0};
    nf_set sets[NF_SETS];
    static nf_times tms[NF_CODECS_MAX];
    firth_client *c = NULL;
    int rc;
    bk_client_process_init();
    if (nf_parse_args(argc, argv, &cfg, &err) < 0) {
        fprintf(stderr, "bench_net_fetch: %s\n", err.msg);
        nf_usage();
        return 2;
    }
    nf_sets_init(sets);
    FR_GOTO(bk_connect(cfg.connect, &c, &err));
    printf("net fetch: %s, %lld rows of %d columns in %lld-row batches, 1 bucket\n",
           cfg.connect, (long long)cfg.rows, BK_COLUMNS, (long long)cfg.batch_rows);
    for (int i = 0; i < cfg.ncodecs; i++)
        FR_GOTO(nf_run_codec(&cfg, c, cfg.codecs[i], sets, &tms[i], &err));
    FR_GOTO(nf_report(&cfg, sets, tms, &err));
fail:
    firth_close(c);
    if (rc < 0) fprintf(stderr, "bench_net_fetch: %s (%s)\n", err.msg, fr_strcode(rc));
    return rc < 0 ? 1 : 0;
}
