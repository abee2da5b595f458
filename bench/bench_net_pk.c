/* bench_net_pk.c — a primary-key table over the network: upserts per second in batches and
 * point lookups per second, against a real `firth server`, beside PostgreSQL doing the same
 * on the same rows (measured by peer_postgres, whose result file --peer names).
 *
 * The table has the 20 columns of the benchmark table with b0 as its primary key (NOT NULL)
 * and --buckets buckets. Upserts: --clients threads, each with its own client (connection)
 * and its own range of keys, call firth_upsert with --batch-rows rows at a time; a call
 * returns once its changes are durable (the server runs with log.flush = append: the
 * changelog is fsync'd). Two passes over the keys: the first inserts every key, the second
 * updates every row (other values). The figure is rows upserted per second over both.
 * A call's keys are neighbours (key0, key0 + 1, ...) unless --key-order scattered spreads
 * them over the client's range.
 * Lookups: each thread opens a lookuper (all columns) and looks up --lookup-batch random
 * existing keys per call (one request per call, batched per bucket), for --lookup-ms; the
 * figure is keys looked up per second, each found.
 *
 * The verdicts compare both figures with PostgreSQL's (INSERT ... ON CONFLICT DO UPDATE of
 * as many rows per statement with synchronous_commit on; pipelined prepared SELECTs by
 * primary key); the target is 3x for both. bench/run.sh runs a few rounds, each PostgreSQL
 * then firth, and `--combine` takes the median of the rounds' ratios. */
#include "benchkit.h"
#include "client/client_bridge.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#define PK_CLIENTS_MAX 64
#define PK_KEY_COLUMN 5 /* b0 */
#define PK_TARGET_VS_PEER 3.0
#define PK_TABLE "bench_net.pk"

typedef struct pk_config {
    const char *connect;
    const char *out;
    const char *peer;
    int64_t keys;
    int64_t clients;
    int64_t batch_rows;
    int64_t lookup_ms;
    int64_t lookup_batch;
    int64_t buckets;
    int64_t seed;
    bool scattered; /* --key-order scattered: each call's keys spread over the range */
    int64_t server_pid;
    const char *codec;
    const char *options[BK_TABLE_OPTIONS_MAX]; /* more table options, KEY=VALUE */
    int noptions;
} pk_config;

/* What the threads of one phase share. */
typedef struct pk_shared {
    const pk_config *cfg;
    firth_client *clients[PK_CLIENTS_MAX];
    fr_batch *rows[PK_CLIENTS_MAX][2]; /* per client, per pass: batch_rows rows (b0 set per call) */
    pthread_barrier_t start;
    atomic_int_fast64_t done;
    atomic_int_fast64_t changed;
    pthread_mutex_t lock;
    fr_error first_err;
} pk_shared;

typedef struct pk_thread {
    pk_shared *sh;
    int index;
    double *call_ms;
    int64_t ncalls, cap;
} pk_thread;

static void pk_fail_once(pk_shared *sh, const fr_error *e)
{
    pthread_mutex_lock(&sh->lock);
    if (sh->first_err.code == 0) sh->first_err = *e;
    pthread_mutex_unlock(&sh->lock);
}

/* The values of a BIGINT column that the benchmark owns (built by fr_builder, fr_malloc'd,
 * used by no call while they are written): keys are set in place rather than building a
 * batch per call. */
static int64_t *pk_i64_values(const fr_batch *b, int col)
{
    return (int64_t *)(uintptr_t)fr_batch_column(b, col)->values;
}

static void pk_record(pk_thread *t, int64_t t0)
{
    if (t->ncalls < t->cap) t->call_ms[t->ncalls++] = (double)(fr_monotonic_ns() - t0) / 1e6;
}

/* ---- upserts --------------------------------------------------------------------------- */

/* One call: n rows of batch with keys key0.. */
static int64_t pk_gcd(int64_t a, int64_t b)
{
    while (b) {
        int64_t r = a % b;
        a = b;
        b = r;
    }
    return a;
}

/* The step between the keys of neighbouring rows of a client's range of span keys: 1 in
 * order; scattered, a stride that shares no factor with span (so that a pass still writes
 * every key once, key lo + i * stride % span for row i), which puts a call's keys far apart
 * among the range's others. */
static int64_t pk_stride(const pk_config *cfg, int64_t span)
{
    if (!cfg->scattered) return 1;
    int64_t stride = 7919; /* a prime: coprime with span unless it divides it */
    while (pk_gcd(span, stride) != 1) stride++;
    return stride;
}

static int pk_upsert_one(pk_thread *t, fr_batch *batch, int64_t lo, int64_t span, int64_t at,
                         int64_t n, fr_error *err)
{
    int64_t *keys = pk_i64_values(batch, PK_KEY_COLUMN);
    uint64_t stride = (uint64_t)pk_stride(t->sh->cfg, span);
    for (int64_t r = 0; r < n; r++)
        keys[r] = lo + (int64_t)((unsigned __int128)(at + r) * stride % (uint64_t)span);
    fr_batch *part = NULL;
    FR_TRY(bk_batch_head(batch, n, &part, err));
    firth_batch *fb = firth_batch_wrap(part);
    if (!fb) {
        fr_batch_free(part);
        return fr_fail(err, FR_ENOMEM, "out of memory wrapping a batch");
    }
    firth_error fe = {0};
    int64_t changed = 0, t0 = fr_monotonic_ns();
    int rc = firth_upsert(t->sh->clients[t->index], PK_TABLE, fb, NULL, NULL, -1, 0, &changed,
                          &fe);
    firth_batch_free(fb);
    if (rc != 0) return bk_firth_fail(&fe, "upsert", err);
    pk_record(t, t0);
    atomic_fetch_add(&t->sh->done, n);
    atomic_fetch_add(&t->sh->changed, changed);
    return 0;
}

static void pk_range(const pk_config *cfg, int i, int64_t *lo, int64_t *hi)
{
    *lo = cfg->keys * i / cfg->clients;
    *hi = cfg->keys * (i + 1) / cfg->clients;
}

static void *pk_upsert_main(void *arg)
{
    pk_thread *t = arg;
    const pk_config *cfg = t->sh->cfg;
    fr_error err = {0};
    int64_t lo, hi;
    int rc = 0;
    pk_range(cfg, t->index, &lo, &hi);
    pthread_barrier_wait(&t->sh->start);
    for (int pass = 0; pass < 2 && rc == 0; pass++)
        for (int64_t k = lo; k < hi && rc == 0; k += cfg->batch_rows) {
            int64_t n = hi - k < cfg->batch_rows ? hi - k : cfg->batch_rows;
            rc = pk_upsert_one(t, t->sh->rows[t->index][pass], lo, hi - lo, k - lo, n, &err);
        }
    if (rc < 0) pk_fail_once(t->sh, &err);
    return NULL;
}

/* ---- lookups --------------------------------------------------------------------------- */

/* A batch of n keys (one BIGINT column b0), to be filled in place per call. */
static int pk_keys_batch(int64_t n, fr_batch **out, fr_error *err)
{
    fr_field f = {.name = "b0", .type = fr_type_of(FR_T_BIGINT)};
    fr_schema *schema = NULL;
    fr_builder *bld = NULL;
    int rc;
    FR_GOTO(fr_schema_new(&f, 1, 0, &schema, err));
    FR_GOTO(fr_builder_new(schema, &bld, err));
    for (int64_t i = 0; i < n; i++) FR_GOTO(fr_builder_append_i64(bld, 0, i, err));
    FR_GOTO(fr_builder_finish(bld, out, err));
fail:
    if (bld) fr_builder_free(bld);
    if (schema) fr_schema_free(schema);
    return rc;
}

static int pk_lookup_loop(pk_thread *t, firth_lookuper *l, firth_batch *keys,
                          int64_t deadline_ns, fr_error *err)
{
    const pk_config *cfg = t->sh->cfg;
    int64_t *values = pk_i64_values(firth_batch_unwrap(keys), 0);
    bool *found = fr_calloc((size_t)cfg->lookup_batch, sizeof *found);
    FR_CHECK(found, FR_ENOMEM, err, "out of memory");
    bk_rng rng;
    bk_rng_seed(&rng, (uint64_t)cfg->seed * 977 + (uint64_t)t->index);
    int rc = 0;
    while (rc == 0 && fr_monotonic_ns() < deadline_ns) {
        for (int64_t i = 0; i < cfg->lookup_batch; i++)
            values[i] = (int64_t)(bk_rng_next(&rng) % (uint64_t)cfg->keys);
        firth_batch *rows = NULL;
        firth_error fe = {0};
        int64_t t0 = fr_monotonic_ns();
        if (firth_lookup(l, keys, found, &rows, &fe) != 0) {
            rc = bk_firth_fail(&fe, "lookup", err);
            break;
        }
        pk_record(t, t0);
        int64_t hits = 0;
        for (int64_t i = 0; i < cfg->lookup_batch; i++) hits += found[i];
        int64_t got = firth_batch_num_rows(rows);
        firth_batch_free(rows);
        if (hits != cfg->lookup_batch || got != hits)
            rc = fr_fail(err, FR_ESTATE, "a lookup of %lld existing keys found %lld (%lld rows)",
                         (long long)cfg->lookup_batch, (long long)hits, (long long)got);
        atomic_fetch_add(&t->sh->done, cfg->lookup_batch);
    }
    fr_free(found);
    return rc;
}

static void *pk_lookup_main(void *arg)
{
    pk_thread *t = arg;
    fr_error err = {0};
    firth_error fe = {0};
    firth_lookuper *l = NULL;
    fr_batch *kb = NULL;
    firth_batch *keys = NULL;
    int rc = pk_keys_batch(t->sh->cfg->lookup_batch, &kb, &err);
    if (rc == 0 && !(keys = firth_batch_wrap(kb))) {
        fr_batch_free(kb);
        rc = fr_fail(&err, FR_ENOMEM, "out of memory wrapping keys");
    }
    if (rc == 0 && firth_lookuper_open(t->sh->clients[t->index], PK_TABLE, NULL, &l, &fe) != 0)
        rc = bk_firth_fail(&fe, "lookuper", &err);
    pthread_barrier_wait(&t->sh->start);
    if (rc == 0) rc = pk_lookup_loop(t, l, keys, fr_monotonic_ns() + t->sh->cfg->lookup_ms *
                                                                         1000000, &err);
    if (rc < 0) pk_fail_once(t->sh, &err);
    firth_lookuper_close(l);
    firth_batch_free(keys);
    return NULL;
}

/* ---- phases ------------------------------------------------------------------------------ */

/* Runs fn on every client at once; *seconds from release to the last return; *cpu and
 * *server_cpu the client's and the server's CPU seconds over the same span (-1: unknown). */
static int pk_run(pk_shared *sh, void *(*fn)(void *), int64_t calls_cap, double *seconds,
                  double *cpu, double *server_cpu, double *p50, double *p99, fr_error *err)
{
    int n = (int)sh->cfg->clients;
    pthread_t tid[PK_CLIENTS_MAX];
    pk_thread th[PK_CLIENTS_MAX];
    atomic_store(&sh->done, 0);
    atomic_store(&sh->changed, 0);
    pthread_barrier_init(&sh->start, NULL, (unsigned)n + 1);
    for (int i = 0; i < n; i++) {
        th[i] = (pk_thread){.sh = sh, .index = i, .cap = calls_cap};
        th[i].call_ms = fr_calloc((size_t)calls_cap + 1, sizeof *th[i].call_ms);
        if (!th[i].call_ms || pthread_create(&tid[i], NULL, fn, &th[i]) != 0) {
            fprintf(stderr, "bench_net_pk: cannot start client thread %d\n", i);
            exit(2);
        }
    }
    pid_t spid = (pid_t)sh->cfg->server_pid;
    pthread_barrier_wait(&sh->start);
    int64_t t0 = fr_monotonic_ns(), c0 = bk_cpu_ns(), s0 = bk_pid_cpu_ns(spid);
    for (int i = 0; i < n; i++) pthread_join(tid[i], NULL);
    *seconds = (double)(fr_monotonic_ns() - t0) / 1e9;
    *cpu = (double)(bk_cpu_ns() - c0) / 1e9;
    int64_t s1 = bk_pid_cpu_ns(spid);
    *server_cpu = s0 >= 0 && s1 >= 0 ? (double)(s1 - s0) / 1e9 : -1;
    int64_t total = 0;
    for (int i = 0; i < n; i++) total += th[i].ncalls;
    double *all = fr_calloc((size_t)total + 1, sizeof *all);
    for (int i = 0, at = 0; all && i < n; i++) {
        memcpy(all + at, th[i].call_ms, sizeof *all * (size_t)th[i].ncalls);
        at += (int)th[i].ncalls;
    }
    *p50 = all && total ? bk_quantile(all, (int)total, 0.5) : 0;
    *p99 = all && total ? bk_quantile(all, (int)total, 0.99) : 0;
    fr_free(all);
    for (int i = 0; i < n; i++) fr_free(th[i].call_ms);
    pthread_barrier_destroy(&sh->start);
    if (sh->first_err.code < 0) {
        *err = sh->first_err;
        return err->code;
    }
    return 0;
}

/* ---- setup, reporting -------------------------------------------------------------------- */

/* Two batches of random rows per client (one per pass; keys are written into them per
 * call), the clients, and the table. */
static int pk_setup(const pk_config *cfg, pk_shared *sh, fr_error *err)
{
    fr_schema *schema = NULL;
    fr_builder *bld = NULL;
    bk_rng rng;
    bk_rng_seed(&rng, (uint64_t)cfg->seed);
    int rc;
    FR_GOTO(bk_schema_new(&schema, err));
    FR_GOTO(fr_builder_new(schema, &bld, err));
    for (int i = 0; i < cfg->clients; i++)
        for (int pass = 0; pass < 2; pass++)
            FR_GOTO(bk_batch_random(bld, cfg->batch_rows, &rng, &sh->rows[i][pass], err));
    for (int i = 0; i < cfg->clients; i++)
        FR_GOTO(bk_connect(cfg->connect, &sh->clients[i], err));
    FR_GOTO(bk_remote_table_create(sh->clients[0], "bench_net", "pk", PK_KEY_COLUMN,
                                   (int)cfg->buckets, cfg->codec, cfg->options, cfg->noptions,
                                   err));
fail:
    if (bld) fr_builder_free(bld);
    if (schema) fr_schema_free(schema);
    return rc;
}

static void pk_teardown(const pk_config *cfg, pk_shared *sh)
{
    if (sh->clients[0]) {
        firth_error fe;
        firth_drop_table(sh->clients[0], PK_TABLE, true, &fe);
    }
    for (int i = 0; i < PK_CLIENTS_MAX; i++) {
        firth_close(sh->clients[i]);
        for (int pass = 0; pass < 2; pass++)
            if (sh->rows[i][pass]) fr_batch_free(sh->rows[i][pass]);
    }
}

/* One phase's figures. */
typedef struct pk_phase {
    double seconds, cpu, server_cpu, p50, p99;
    int64_t count, changed;
} pk_phase;

static json_t *pk_phase_json(const char *rate_name, const pk_phase *p)
{
    return json_pack("{s:f, s:I, s:f, s:f, s:f, s:f, s:f}", rate_name,
                     (double)p->count / p->seconds, "count", (json_int_t)p->count, "seconds",
                     p->seconds, "call_p50_ms", p->p50, "call_p99_ms", p->p99, "client_cores",
                     p->cpu / p->seconds, "server_cores",
                     p->server_cpu >= 0 ? p->server_cpu / p->seconds : -1.0);
}

#define PK_UPSERTS_WHAT                                                                    \
    "firth upserts/s (batches of rows over firth://, durable) / PostgreSQL INSERT ... ON "  \
    "CONFLICT DO UPDATE rows/s (synchronous_commit on)"
#define PK_LOOKUPS_WHAT                                                                    \
    "firth point lookups/s (batched) / PostgreSQL pipelined prepared SELECT by primary key /s"

/* A target on a ratio to PostgreSQL's figure. */
static void pk_target(json_t *targets, const char *name, const char *what, double ratio)
{
    bk_target t = {.name = name, .what = what, .figure = ratio, .target = PK_TARGET_VS_PEER};
    json_array_append_new(targets, bk_target_json(&t));
}

static int pk_report(const pk_config *cfg, const pk_phase *up, const pk_phase *look,
                     fr_error *err)
{
    json_t *peer = NULL, *targets = json_array();
    double pu = 0, pl = 0;
    if (cfg->peer) {
        fr_error perr = {0};
        peer = bk_json_read(cfg->peer, &perr);
        if (!peer) printf("  peer: not available (%s)\n", perr.msg);
        pu = bk_json_number(peer, "median.upserts_per_s");
        pl = bk_json_number(peer, "median.lookups_per_s");
    }
    double ups = (double)up->count / up->seconds, looks = (double)look->count / look->seconds;
    printf("net pk (%lld keys, %lld clients, %lld bucket(s)", (long long)cfg->keys,
           (long long)cfg->clients, (long long)cfg->buckets);
    for (int i = 0; i < cfg->noptions; i++) printf(", %s", cfg->options[i]);
    printf("):\n");
    printf("  firth upserts  %10.0f rows/s  (%lld-row calls: p50 %.1f ms p99 %.1f ms; cores "
           "busy: client %.2f, server %.2f)", ups, (long long)cfg->batch_rows, up->p50, up->p99,
           up->cpu / up->seconds, up->server_cpu / up->seconds);
    if (pu > 0) printf("  postgres %.0f: %.2fx", pu, ups / pu);
    printf("\n  firth lookups  %10.0f keys/s  (%lld-key calls: p50 %.2f ms p99 %.2f ms; cores "
           "busy: client %.2f, server %.2f)", looks, (long long)cfg->lookup_batch, look->p50,
           look->p99, look->cpu / look->seconds, look->server_cpu / look->seconds);
    if (pl > 0) printf("  postgres %.0f: %.2fx", pl, looks / pl);
    printf("\n");
    if (pu > 0)
        pk_target(targets, "net_pk_upserts_vs_postgres", PK_UPSERTS_WHAT, ups / pu);
    if (pl > 0)
        pk_target(targets, "net_pk_lookups_vs_postgres", PK_LOOKUPS_WHAT, looks / pl);
    json_t *opts = json_array();
    for (int i = 0; i < cfg->noptions; i++)
        json_array_append_new(opts, json_string(cfg->options[i]));
    json_t *doc = json_pack("{s:s, s:o, s:{s:I, s:I, s:I, s:I, s:I, s:I, s:s, s:o, s:I, s:s},"
                            " s:o, s:o, s:o, s:o}",
                            "benchmark", "net_pk", "host", bk_host_json(), "config", "keys",
                            (json_int_t)cfg->keys, "clients", (json_int_t)cfg->clients,
                            "batch_rows", (json_int_t)cfg->batch_rows, "lookup_ms",
                            (json_int_t)cfg->lookup_ms, "lookup_batch",
                            (json_int_t)cfg->lookup_batch, "buckets",
                            (json_int_t)cfg->buckets, "compression", cfg->codec, "options",
                            opts, "seed", (json_int_t)cfg->seed, "key_order",
                            cfg->scattered ? "scattered" : "sequential", "upserts",
                            pk_phase_json("rows_per_s", up), "lookups",
                            pk_phase_json("keys_per_s", look), "peer",
                            peer ? peer : json_null(), "targets", targets);
    int rc = cfg->out ? bk_json_write(doc, cfg->out, err) : 0;
    json_decref(doc);
    return rc;
}

/* ---- rounds ---------------------------------------------------------------------------- */

#define PK_ROUNDS_MAX 16

/* The figures of a round, and their medians over the rounds. */
enum { PK_UPS, PK_PG_UPS, PK_UP_RATIO, PK_LOOKS, PK_PG_LOOKS, PK_LOOK_RATIO, PK_FIGURES };

static double pk_ratio(double firth, double peer) { return peer > 0 ? firth / peer : 0; }

static void pk_round_print(const char *label, const double *f)
{
    printf("  %-7s %12.0f %10.0f %6.2fx %14.0f %10.0f %6.2fx\n", label, f[PK_UPS], f[PK_PG_UPS],
           f[PK_UP_RATIO], f[PK_LOOKS], f[PK_PG_LOOKS], f[PK_LOOK_RATIO]);
}

/* Reads one round's result file into fig[][round]: the round's doc goes to rounds without
 * its peer (which goes to peers) and its own single-pair targets. */
static int pk_round_read(const char *file, int round, double fig[][PK_ROUNDS_MAX],
                         json_t *rounds, json_t *peers, json_t **config, fr_error *err)
{
    json_t *doc = bk_json_read(file, err);
    if (!doc) return fr_error_wrap(err, "round %d", round + 1);
    json_t *peer = json_object_get(doc, "peer");
    double f[PK_FIGURES] = {
        [PK_UPS] = bk_json_number(doc, "upserts.rows_per_s"),
        [PK_PG_UPS] = bk_json_number(peer, "median.upserts_per_s"),
        [PK_LOOKS] = bk_json_number(doc, "lookups.keys_per_s"),
        [PK_PG_LOOKS] = bk_json_number(peer, "median.lookups_per_s"),
    };
    f[PK_UP_RATIO] = pk_ratio(f[PK_UPS], f[PK_PG_UPS]);
    f[PK_LOOK_RATIO] = pk_ratio(f[PK_LOOKS], f[PK_PG_LOOKS]);
    char label[16];
    snprintf(label, sizeof label, "%d", round + 1);
    pk_round_print(label, f);
    for (int k = 0; k < PK_FIGURES; k++) fig[k][round] = f[k];
    if (!*config) *config = json_incref(json_object_get(doc, "config"));
    if (json_is_object(peer)) json_array_append(peers, peer);
    json_object_del(doc, "peer");
    json_object_del(doc, "targets");
    json_array_append_new(rounds, doc);
    return FR_OK;
}

/* --combine: the result files of rounds that each ran peer_postgres and then this program
 * (with that round's --peer) into one result, whose verdicts take the median of the rounds'
 * ratios. On a shared machine both systems' rates drift by a third within minutes; the ratio
 * of one pair run back to back moves with that drift, the median of a few pairs much less.
 * peer_out gets PostgreSQL's medians and its rounds. */
static int pk_combine(const char *out, const char *peer_out, char **files, int n,
                      fr_error *err)
{
    FR_CHECK(n >= 1 && n <= PK_ROUNDS_MAX, FR_EINVAL, err,
             "--combine takes 1 to %d result files", PK_ROUNDS_MAX);
    double fig[PK_FIGURES][PK_ROUNDS_MAX], med[PK_FIGURES];
    json_t *rounds = json_array(), *peers = json_array(), *config = NULL;
    int rc = FR_OK;
    printf("net pk, %d round(s), PostgreSQL then firth in each:\n", n);
    printf("  %-7s %12s %10s %7s %14s %10s %7s\n", "round", "upserts/s", "postgres", "ratio",
           "lookups/s", "postgres", "ratio");
    for (int i = 0; rc == FR_OK && i < n; i++)
        rc = pk_round_read(files[i], i, fig, rounds, peers, &config, err);
    if (rc < 0) goto done;
    for (int k = 0; k < PK_FIGURES; k++) med[k] = bk_median(fig[k], n);
    pk_round_print("median", med);
    printf("  (each verdict takes the median of the rounds' ratios)\n");
    json_t *targets = json_array();
    bool peered = json_array_size(peers) == (size_t)n;
    if (peered) {
        pk_target(targets, "net_pk_upserts_vs_postgres",
                  PK_UPSERTS_WHAT ", median of the rounds", med[PK_UP_RATIO]);
        pk_target(targets, "net_pk_lookups_vs_postgres",
                  PK_LOOKUPS_WHAT ", median of the rounds", med[PK_LOOK_RATIO]);
    }
    json_t *doc = json_pack(
        "{s:s, s:o, s:o, s:{s:f, s:f, s:f}, s:{s:f, s:f, s:f}, s:O, s:o}", "benchmark", "net_pk",
        "host", bk_host_json(), "config", config ? config : json_null(), "upserts", "rows_per_s",
        med[PK_UPS], "postgres_rows_per_s", med[PK_PG_UPS], "vs_postgres", med[PK_UP_RATIO],
        "lookups", "keys_per_s", med[PK_LOOKS], "postgres_keys_per_s", med[PK_PG_LOOKS],
        "vs_postgres", med[PK_LOOK_RATIO], "rounds", rounds, "targets", targets);
    config = NULL; /* the document holds it */
    rc = out ? bk_json_write(doc, out, err) : FR_OK;
    json_decref(doc);
    if (rc == FR_OK && peer_out && peered) {
        json_t *pg = json_pack("{s:s, s:o, s:{s:f, s:f}, s:O}", "benchmark", "postgres", "host",
                               bk_host_json(), "median", "upserts_per_s", med[PK_PG_UPS],
                               "lookups_per_s", med[PK_PG_LOOKS], "rounds", peers);
        rc = bk_json_write(pg, peer_out, err);
        json_decref(pg);
    }
done:
    json_decref(rounds);
    json_decref(peers);
    json_decref(config);
    return rc;
}

static void pk_usage(void)
{
    fprintf(stderr,
            "usage: bench_net_pk --connect HOST:PORT [--out FILE.json] [--peer FILE.json]\n"
            "          [--keys N] [--clients N] [--batch-rows N] [--lookup-ms MS]\n"
            "          [--lookup-batch N] [--buckets N] [--codec NAME] [--seed N]\n"
            "          [--server-pid PID] [--option KEY=VALUE]...\n"
            "          [--key-order sequential|scattered]\n"
            "  Upserts N keys twice in batches, then looks keys up in batches, in a\n"
            "  primary-key table of the 20-column benchmark rows on a firth server; --peer is\n"
            "  the result file of peer_postgres run with the same keys and batch sizes.\n"
            "  --key-order scattered spreads each call's keys over its client's range (every\n"
            "  key is still written once per pass); the default writes neighbouring keys.\n"
            "   or: bench_net_pk --combine [--out FILE.json] [--peer-out FILE.json] ROUND.json...\n"
            "  Combines the result files of rounds (each peer_postgres, then bench_net_pk with\n"
            "  that round's --peer) into one, whose verdicts take the median of the rounds'\n"
            "  ratios; --peer-out gets PostgreSQL's medians.\n");
}

/* bench_net_pk --combine [--out F] [--peer-out F] ROUND.json... */
static int pk_combine_main(int argc, char **argv)
{
    const char *out = NULL, *peer_out = NULL;
    int i = 2;
    for (; i + 1 < argc && argv[i][0] == '-'; i += 2) {
        if (!strcmp(argv[i], "--out")) out = argv[i + 1];
        else if (!strcmp(argv[i], "--peer-out")) peer_out = argv[i + 1];
        else break;
    }
    fr_error err = {0};
    if (i >= argc || argv[i][0] == '-') {
        fprintf(stderr, "bench_net_pk: --combine needs round result files%s%s\n",
                i < argc ? ", not " : "", i < argc ? argv[i] : "");
        pk_usage();
        return 2;
    }
    if (pk_combine(out, peer_out, argv + i, argc - i, &err) < 0) {
        fprintf(stderr, "bench_net_pk: %s (%s)\n", err.msg, fr_strcode(err.code));
        return 1;
    }
    return 0;
}

static int pk_parse_args(int argc, char **argv, pk_config *cfg, fr_error *err)
{
    *cfg = (pk_config){.keys = 65536, .clients = 4, .batch_rows = 1000, .lookup_ms = 3000,
                       .lookup_batch = 1000, .buckets = 4, .seed = 11, .codec = "NONE"};
    for (int i = 1; i < argc; i += 2) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        FR_CHECK(v, FR_EINVAL, err, "%s needs a value", a);
        if (!strcmp(a, "--connect")) cfg->connect = v;
        else if (!strcmp(a, "--out")) cfg->out = v;
        else if (!strcmp(a, "--peer")) cfg->peer = v;
        else if (!strcmp(a, "--keys")) FR_TRY(bk_arg_i64(a, v, 1, INT32_MAX, &cfg->keys, err));
        else if (!strcmp(a, "--clients"))
            FR_TRY(bk_arg_i64(a, v, 1, PK_CLIENTS_MAX, &cfg->clients, err));
        else if (!strcmp(a, "--batch-rows"))
            FR_TRY(bk_arg_i64(a, v, 1, FR_BATCH_ROWS_MAX, &cfg->batch_rows, err));
        else if (!strcmp(a, "--lookup-ms"))
            FR_TRY(bk_arg_i64(a, v, 1, 3600000, &cfg->lookup_ms, err));
        else if (!strcmp(a, "--lookup-batch"))
            FR_TRY(bk_arg_i64(a, v, 1, FR_BATCH_ROWS_MAX, &cfg->lookup_batch, err));
        else if (!strcmp(a, "--buckets")) FR_TRY(bk_arg_i64(a, v, 1, 1024, &cfg->buckets, err));
        else if (!strcmp(a, "--codec")) cfg->codec = v;
        else if (!strcmp(a, "--option")) {
            FR_CHECK(cfg->noptions < BK_TABLE_OPTIONS_MAX, FR_ELIMIT, err,
                     "at most %d --option", BK_TABLE_OPTIONS_MAX);
            cfg->options[cfg->noptions++] = v;
        }
        else if (!strcmp(a, "--seed")) FR_TRY(bk_arg_i64(a, v, 0, INT64_MAX, &cfg->seed, err));
        else if (!strcmp(a, "--key-order")) {
            FR_CHECK(!strcmp(v, "sequential") || !strcmp(v, "scattered"), FR_EINVAL, err,
                     "--key-order takes sequential or scattered, not '%s'", v);
            cfg->scattered = !strcmp(v, "scattered");
        } else if (!strcmp(a, "--server-pid"))
            FR_TRY(bk_arg_i64(a, v, 0, INT32_MAX, &cfg->server_pid, err));
        else
            return fr_fail(err, FR_EINVAL, "unknown option %s", a);
    }
    FR_CHECK(cfg->connect, FR_EINVAL, err, "--connect is required");
    FR_CHECK(cfg->keys >= cfg->clients, FR_EINVAL, err, "fewer keys than clients");
    return 0;
}

int main(int argc, char **argv)
{
    pk_config cfg;
    fr_error err = {0};
    static pk_shared sh;
    pk_phase up = {0}, look = {0};
    int rc;
    bk_client_process_init();
    if (argc > 1 && !strcmp(argv[1], "--combine")) return pk_combine_main(argc, argv);
    if (pk_parse_args(argc, argv, &cfg, &err) < 0) {
        fprintf(stderr, "bench_net_pk: %s\n", err.msg);
        pk_usage();
        return 2;
    }
    sh.cfg = &cfg;
    pthread_mutex_init(&sh.lock, NULL);
    FR_GOTO(pk_setup(&cfg, &sh, &err));
    int64_t calls = (cfg.keys / cfg.clients / cfg.batch_rows + 2) * 2;
    FR_GOTO(pk_run(&sh, pk_upsert_main, calls, &up.seconds, &up.cpu, &up.server_cpu, &up.p50,
                   &up.p99, &err));
    up.count = atomic_load(&sh.done);
    up.changed = atomic_load(&sh.changed);
    if (up.count != 2 * cfg.keys)
        FR_GOTO(fr_fail(&err, FR_ESTATE, "upserted %lld rows of %lld", (long long)up.count,
                        (long long)(2 * cfg.keys)));
    FR_GOTO(pk_run(&sh, pk_lookup_main, 1 << 20, &look.seconds, &look.cpu, &look.server_cpu,
                   &look.p50, &look.p99, &err));
    look.count = atomic_load(&sh.done);
    FR_GOTO(pk_report(&cfg, &up, &look, &err));
fail:
    pk_teardown(&cfg, &sh);
    pthread_mutex_destroy(&sh.lock);
    if (rc < 0) fprintf(stderr, "bench_net_pk: %s (%s)\n", err.msg, fr_strcode(rc));
    return rc < 0 ? 1 : 0;
}
