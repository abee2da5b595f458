/* bench_net_produce.c — produce over the network to a real `firth server`: durable
 * throughput against the disk's own durable sequential write speed, and end-to-end latency
 * from a produce call to a consumer's receipt at half that throughput.
 *
 * Throughput: producer threads, each with its own client (its own connection) and its own
 * firth_writer (or firth_produce calls with --api produce), append a prebuilt batch of the
 * 20-column benchmark table (about 1 KB a row) to one log table of --buckets buckets until
 * MIB MiB of rows are acknowledged. The server runs with log.flush = append, so an
 * acknowledgement means the rows are fsync'd. The timed span starts when the producers are
 * released and ends when the last acknowledgement arrives.
 * The disk: `dd ... conv=fdatasync` in the scratch dir (the server's data dir should be on
 * the same file system), interleaved with firth's runs. The verdict compares the log bytes
 * acknowledged per second (the encoded batches, what the server writes) with dd's MB/s.
 *
 * Latency: the producers are paced to half of the median maximum (in logical MB/s), each
 * sending its batch on a fixed schedule, while a consumer with its own client long-polls a
 * scanner subscribed to the table. The first --latency-warmup-ms of a run (1 s) are a
 * warm-up, as in other streaming benchmarks: a new table's first appends and the first
 * fetches of a new consumer meet memory and files not yet touched, and the consumer starts
 * behind; the quantiles count the calls sent after it (the p99 with it is printed too).
 * Each call stamps column b0 of its rows with the monotonic clock just before the call; the consumer subtracts it from the clock when a
 * poll returns the rows: the latency of the writer, the network, the append and its fsync,
 * the parked fetch's wake-up, the fetch and the decoding. One sample per record batch
 * received. Beside it, the disk alone at the same rate: a thread per producer appends its
 * calls' bytes to a file of its own on the same schedule and fdatasyncs each (what the run
 * would take if nothing but the fsyncs cost time); and the context switches of the whole
 * machine during the run, a measure of the wake-ups the run costs. */
#include "benchkit.h"
#include "client/client_bridge.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define NP_CODECS_MAX 3
#define NP_PRODUCERS_MAX 64
#define NP_TARGET_DISK 0.60
#define NP_TARGET_P99_MS 10.0
#define NP_QUEUE_RISE_MS 5.0          /* a rise of the e2e p50 through a run that says queue */
#define NP_STAMP_COLUMN 5             /* b0 holds the send time in the latency run */
#define NP_DRAIN_NS 10000000000       /* how long the consumer may lag at the end */
#define NP_RING 128                   /* distinct latency batches per producer (~8.6 MB) */
#define NP_DISK_PACED_S 3.0           /* the disk alone at the latency run's rate, per codec */
#define NP_SLOW_FSYNC_MS 8.0          /* a server fsync above this is counted as slow */

typedef struct np_config {
    const char *connect; /* HOST:PORT of the server */
    const char *dir;     /* scratch dir for dd */
    const char *out;
    const char *samples; /* --samples: every latency sample, in arrival order, as TSV */
    int64_t mb;
    int64_t reps;
    int64_t producers;
    int64_t batch_rows;
    int64_t latency_batch_rows;
    int64_t latency_ms;
    int64_t warmup_ms;          /* the latency run's warm-up, not counted */
    int64_t latency_rate_kb_s;  /* > 0: pace the latency run at this rate, not half the max */
    int64_t buckets;
    int64_t seed;
    int64_t server_pid;
    const char *server_http; /* HOST:PORT of the server's HTTP listener, or NULL */
    int64_t linger_ms;          /* the writers' linger.ms */
    int64_t max_in_flight;      /* the writers' max.in.flight */
    int64_t writer_batch_bytes; /* the writers' batch.size */
    int64_t writer_buffer_bytes; /* the writers' buffer: rows queued unsent, at most */
    bool writer_api;            /* firth_writer (default) or firth_produce */
    bool stamp_only;            /* the consumer reads column b0 alone, not every column */
    bool skip_disk;
    bool disk_probe;            /* --disk-probe: the disk alone at --latency-rate-kb, no server */
    struct {                    /* --neighbors N:BUSY_US:PERIOD_US beside the probe */
        int64_t n, busy_us, period_us; /* n 0: none */
    } neighbors;
    const char *codecs[NP_CODECS_MAX];
    int ncodecs;
} np_config;

/* What every run uses: one client and two batches (max and latency sizes) per producer. */
typedef struct np_env {
    const np_config *cfg;
    firth_client *admin;
    firth_client *clients[NP_PRODUCERS_MAX];
    firth_batch *batches[NP_PRODUCERS_MAX];     /* cfg->batch_rows rows */
    firth_batch *lat_batches[NP_PRODUCERS_MAX * NP_RING]; /* latency_batch_rows rows */
    int64_t batch_logical;                      /* mean logical bytes of a batch */
    int64_t lat_batch_logical;
} np_env;

/* One throughput run's figures. */
typedef struct np_max {
    double seconds, cpu_seconds, server_cpu_seconds;
    int64_t rows, appends, logical_bytes, log_bytes;
    double ack_p50_ms, ack_p99_ms;
} np_max;

/* One latency run's figures. */
typedef struct np_lat {
    double max_mb_s;     /* the maximum logical MB/s with calls of this size (0: not
                          * measured, --latency-rate-kb) */
    double target_mb_s;  /* logical MB/s asked for: half of max_mb_s, or the rate given */
    double achieved_mb_s;
    double seconds, cpu_seconds, server_cpu_seconds;
    int64_t rows, appends, samples;
    double e2e_p50_ms, e2e_p99_ms, e2e_max_ms;
    double e2e_p99_all_ms;  /* with the warm-up's samples */
    /* The e2e p50 of the batches sent in the run's first and last quarters: a rise says
     * the rate was more than the machine delivers, and the tail measures a queue. */
    double e2e_p50_first_ms, e2e_p50_last_ms;
    double ack_p50_ms, ack_p99_ms;
    double disk_p50_ms, disk_p99_ms; /* the disk alone at the same rate, just before */
    double ctxt_per_s;               /* the machine's context switches in the run, -1: unknown */
    double ctxt_per_call;            /* the same per produce call */
    /* The server's fdatasyncs of the table's logs during the run (from its /metrics, with
     * --server-http; srv_fsyncs -1 otherwise): how many, the upper bounds of the buckets
     * holding their p50 and p99, and how many took over NP_SLOW_FSYNC_MS. */
    int64_t srv_fsyncs, srv_fsync_slow;
    double srv_fsync_p50_ms, srv_fsync_p99_ms;
} np_lat;

/* What the threads of one run share. */
typedef struct np_shared {
    np_env *env;
    const char *table;
    firth_batch *const *batches; /* throughput: producer i's call k appends */
    int stride, ring;            /* batches[i * stride + k % ring] */
    int64_t appends;         /* throughput: calls to make in total */
    atomic_int_fast64_t next;
    int64_t calls_cap;       /* calls one producer may make, at most */
    /* latency run: calls from start_ns (the warm-up's start) to end_ns, counted from
     * measure_ns */
    int64_t start_ns, measure_ns, end_ns, period_ns;
    pthread_barrier_t start;
    pthread_mutex_t lock;
    fr_error first_err;      /* under lock */
} np_shared;

/* One producer: its client, its writer (--api writer), and the send time and acknowledgement
 * latency of each call, indexed by the call's number (the writer's token - 1). */
typedef struct np_producer {
    np_shared *sh;
    int index;
    firth_writer *w;
    int64_t *sent_ns;
    double *ack_ms;
    atomic_int_fast64_t calls;
    atomic_int_fast64_t acked;
    atomic_int_fast64_t rows_acked;
    fr_error ack_err;        /* the first failed acknowledgement (writer thread) */
} np_producer;

static void np_fail_once(np_shared *sh, const fr_error *e)
{
    pthread_mutex_lock(&sh->lock);
    if (sh->first_err.code == 0) sh->first_err = *e;
    pthread_mutex_unlock(&sh->lock);
}

static bool np_failed(np_shared *sh)
{
    pthread_mutex_lock(&sh->lock);
    bool failed = sh->first_err.code < 0;
    pthread_mutex_unlock(&sh->lock);
    return failed;
}

/* The writer's acknowledgement of call `token`: its latency from the call. */
static void np_on_ack(void *ctx, uint64_t token, int status, const char *message)
{
    np_producer *p = ctx;
    int64_t now = fr_monotonic_ns(), k = (int64_t)token - 1;
    if (status != 0 && p->ack_err.code == 0)
        fr_fail(&p->ack_err, status, "produce: %s", message ? message : "failed");
    if (k >= 0 && k < p->sh->calls_cap) p->ack_ms[k] = (double)(now - p->sent_ns[k]) / 1e6;
    atomic_fetch_add(&p->acked, 1);
}

/* Call number k with batch: firth_produce, which returns once the rows are durable, or
 * firth_writer_append, which queues them (acknowledged later through np_on_ack). *token gets
 * the writer's token (0 for firth_produce). */
static int np_call(np_producer *p, firth_batch *batch, uint64_t *token, fr_error *err)
{
    firth_error fe = {0};
    int64_t k = atomic_load(&p->calls), t0 = fr_monotonic_ns(), appended = 0;
    FR_CHECK(k < p->sh->calls_cap, FR_ELIMIT, err, "more calls than planned (%lld)",
             (long long)p->sh->calls_cap);
    p->sent_ns[k] = t0;
    atomic_fetch_add(&p->calls, 1);
    *token = 0;
    if (p->w) {
        if (firth_writer_append(p->w, batch, token, &fe) != 0)
            return bk_firth_fail(&fe, "writer append", err);
        FR_CHECK(*token == (uint64_t)k + 1, FR_ESTATE, err, "writer token %llu for call %lld",
                 (unsigned long long)*token, (long long)k);
        return 0;
    }
    firth_client *c = p->sh->env->clients[p->index];
    if (firth_produce(c, p->sh->table, batch, -1, 0, &appended, &fe) != 0)
        return bk_firth_fail(&fe, "produce", err);
    p->ack_ms[k] = (double)(fr_monotonic_ns() - t0) / 1e6;
    atomic_fetch_add(&p->acked, 1);
    atomic_fetch_add(&p->rows_acked, appended);
    return 0;
}

/* Waits for every queued call of a writer (nothing to do for firth_produce). */
static int np_drain(np_producer *p, fr_error *err)
{
    firth_error fe = {0};
    if (p->w && firth_writer_flush(p->w, &fe) != 0)
        return bk_firth_fail(&fe, "writer flush", err);
    if (p->ack_err.code < 0) {
        *err = p->ack_err;
        return err->code;
    }
    return 0;
}

static void *np_max_main(void *arg)
{
    np_producer *p = arg;
    np_shared *sh = p->sh;
    fr_error err = {0};
    uint64_t token;
    int rc = 0;
    pthread_barrier_wait(&sh->start);
    for (int64_t k = 0; rc == 0 && atomic_fetch_add(&sh->next, 1) < sh->appends; k++)
        rc = np_call(p, sh->batches[p->index * sh->stride + k % sh->ring], &token, &err);
    if (rc == 0) rc = np_drain(p, &err);
    if (rc < 0) np_fail_once(sh, &err);
    return NULL;
}

/* Stamps every row of batch with now in column b0. The benchmark owns the batch's buffers
 * (fr_malloc'd by the builder), and no call still uses this batch (see np_paced_main):
 * stamping spares building a new batch per call. */
static void np_stamp(firth_batch *batch, int64_t now)
{
    const fr_column *col = fr_batch_column(firth_batch_unwrap(batch), NP_STAMP_COLUMN);
    int64_t *stamp = (int64_t *)(uintptr_t)col->values;
    for (int64_t r = 0; r < col->length; r++) stamp[r] = now;
}

/* A paced producer: one call per period, from its own phase in the period, until the end
 * of the run. A call that starts late (the previous one took longer than a period) starts
 * at once; the schedule does not slip, so the rate asked for is kept when the server can.
 * A writer shares the caller's batch until it is sent, so the producer cycles through
 * NP_RING batches and waits for the acknowledgement of a batch's previous call before
 * stamping it again. */
static void *np_paced_main(void *arg)
{
    np_producer *p = arg;
    np_shared *sh = p->sh;
    fr_error err = {0};
    firth_error fe = {0};
    uint64_t tokens[NP_RING] = {0};
    int64_t nproducers = sh->env->cfg->producers;
    int rc = 0;
    pthread_barrier_wait(&sh->start);
    for (int64_t k = 0; rc == 0; k++) {
        int64_t due = sh->start_ns + k * sh->period_ns + p->index * sh->period_ns / nproducers;
        if (due >= sh->end_ns || np_failed(sh)) break;
        bk_sleep_until(due);
        int slot = (int)(k % NP_RING);
        if (p->w && tokens[slot] && firth_writer_wait(p->w, tokens[slot], &fe) != 0) {
            rc = bk_firth_fail(&fe, "writer wait", &err);
            break;
        }
        firth_batch *batch = sh->env->lat_batches[p->index * NP_RING + slot];
        np_stamp(batch, fr_monotonic_ns());
        rc = np_call(p, batch, &tokens[slot], &err);
    }
    if (rc == 0) rc = np_drain(p, &err);
    if (rc < 0) np_fail_once(sh, &err);
    return NULL;
}

/* Opens the producers' writers (--api writer) on table, and their latency arrays. */
static int np_producers_open(np_shared *sh, np_producer *p, fr_error *err)
{
    const np_config *cfg = sh->env->cfg;
    for (int i = 0; i < cfg->producers; i++) {
        p[i] = (np_producer){.sh = sh, .index = i};
        p[i].sent_ns = fr_calloc((size_t)sh->calls_cap + 1, sizeof *p[i].sent_ns);
        p[i].ack_ms = fr_calloc((size_t)sh->calls_cap + 1, sizeof *p[i].ack_ms);
        FR_CHECK(p[i].sent_ns && p[i].ack_ms, FR_ENOMEM, err, "out of memory for latencies");
        if (!cfg->writer_api) continue;
        firth_writer_options o;
        firth_writer_options_init(&o);
        o.linger_ms = cfg->linger_ms;
        o.max_in_flight = (int)cfg->max_in_flight;
        o.batch_bytes = cfg->writer_batch_bytes;
        o.buffer_bytes = cfg->writer_buffer_bytes;
        o.on_ack = np_on_ack;
        o.ack_ctx = &p[i];
        firth_error fe = {0};
        if (firth_writer_open(sh->env->clients[i], sh->table, &o, &p[i].w, &fe) != 0)
            return bk_firth_fail(&fe, "writer open", err);
    }
    return 0;
}

static void np_producers_close(np_producer *p, int n)
{
    for (int i = 0; i < n; i++) {
        firth_error fe;
        if (p[i].w) firth_writer_close(p[i].w, &fe);
        fr_free(p[i].sent_ns);
        fr_free(p[i].ack_ms);
    }
}

/* The acknowledgement latencies of every call of the producers, gathered into one array
 * (the caller's: fr_free); *n gets their number and *rows the rows acknowledged. */
static double *np_gather_acks(np_producer *p, int nproducers, int64_t from_ns, int64_t *n,
                              int64_t *rows)
{
    int64_t total = 0;
    *rows = 0;
    for (int i = 0; i < nproducers; i++) total += atomic_load(&p[i].calls);
    double *all = fr_calloc((size_t)total + 1, sizeof *all);
    *n = 0;
    for (int i = 0; all && i < nproducers; i++) {
        int64_t calls = atomic_load(&p[i].calls);
        for (int64_t k = 0; k < calls; k++)
            if (p[i].sent_ns[k] >= from_ns) all[(*n)++] = p[i].ack_ms[k];
        int64_t acked = 0;
        if (p[i].w) firth_writer_stats(p[i].w, &acked, NULL, NULL);
        else acked = atomic_load(&p[i].rows_acked);
        *rows += acked;
    }
    return all;
}

/* Starts a thread per producer on fn, releases them together and joins them; *seconds
 * from release to the last return (every call acknowledged). */
static int np_run_threads(np_shared *sh, np_producer *p, void *(*fn)(void *),
                          double *seconds, double *cpu_seconds, double *server_cpu_seconds,
                          fr_error *err)
{
    int n = (int)sh->env->cfg->producers;
    pthread_t tid[NP_PRODUCERS_MAX];
    pthread_barrier_init(&sh->start, NULL, (unsigned)n + 1);
    for (int i = 0; i < n; i++) {
        if (pthread_create(&tid[i], NULL, fn, &p[i]) != 0) {
            /* The barrier can never open; a benchmark that cannot start its threads stops. */
            fprintf(stderr, "bench_net_produce: cannot start producer thread %d\n", i);
            exit(2);
        }
    }
    pid_t spid = (pid_t)sh->env->cfg->server_pid;
    int64_t s0 = bk_pid_cpu_ns(spid);
    pthread_barrier_wait(&sh->start);
    int64_t t0 = fr_monotonic_ns(), c0 = bk_cpu_ns();
    for (int i = 0; i < n; i++) pthread_join(tid[i], NULL);
    *seconds = (double)(fr_monotonic_ns() - t0) / 1e9;
    *cpu_seconds = (double)(bk_cpu_ns() - c0) / 1e9;
    int64_t s1 = bk_pid_cpu_ns(spid);
    *server_cpu_seconds = s0 >= 0 && s1 >= 0 ? (double)(s1 - s0) / 1e9 : -1;
    pthread_barrier_destroy(&sh->start);
    if (sh->first_err.code < 0) {
        *err = sh->first_err;
        return err->code;
    }
    return 0;
}

/* The encoded size of a batch under a compression: the bytes the client sends and the
 * server's log stores for it (a log table without a bucket key sends a batch whole). */
static int np_encoded_bytes(firth_batch *b, const char *codec, int64_t *out, fr_error *err)
{
    fr_compression comp;
    FR_TRY(fr_compression_parse(codec, &comp, err));
    fr_rb_params p = {.schema_id = 0, .compression = comp, .writer_id = FR_NO_WRITER,
                      .batch_sequence = -1, .change_types = NULL};
    fr_buf buf;
    fr_buf_init(&buf);
    int rc = fr_rb_encode(firth_batch_unwrap(b), &p, &buf, err);
    *out = (int64_t)buf.len;
    fr_buf_free(&buf);
    return rc;
}

static void np_table_name(char *out, size_t cap, const char *what, const char *codec, int rep)
{
    snprintf(out, cap, "produce_%s_%s_%d", what, codec, rep);
    for (char *p = out; *p; p++)
        if (*p >= 'A' && *p <= 'Z') *p = (char)(*p - 'A' + 'a');
}

static int np_drop(np_env *env, const char *qname, fr_error *err)
{
    firth_error fe = {0};
    if (firth_drop_table(env->admin, qname, true, &fe) != 0)
        return bk_firth_fail(&fe, qname, err);
    return 0;
}

/* The calls of a throughput run: producer i's call k appends batches[i * stride + k % ring],
 * of `rows` rows and `logical` logical bytes (the mean), until `mib` MiB are acknowledged.
 * Small calls cycle through distinct batches: a writer joins the calls queued behind a batch
 * in flight into one batch, and repeated rows would compress (ZSTD) far better than the
 * benchmark's random rows are meant to. */
typedef struct np_calls {
    firth_batch *const *batches;
    int stride, ring;
    int64_t rows, logical, mib;
} np_calls;

/* One throughput run into a fresh table, which is dropped afterwards. */
static int np_run_max(np_env *env, const char *codec, int rep, const np_calls *calls,
                      np_max *res, fr_error *err)
{
    const np_config *cfg = env->cfg;
    char name[64], qname[96];
    np_table_name(name, sizeof name, "max", codec, rep);
    snprintf(qname, sizeof qname, "bench_net.%s", name);
    FR_TRY(bk_remote_table_create(env->admin, "bench_net", name, -1, (int)cfg->buckets, codec,
                                  NULL, 0, err));
    int64_t encoded = 0;
    FR_TRY(np_encoded_bytes(calls->batches[0], codec, &encoded, err));
    np_shared sh = {.env = env, .table = qname, .batches = calls->batches,
                    .stride = calls->stride, .ring = calls->ring};
    sh.appends = ((calls->mib << 20) + calls->logical - 1) / calls->logical;
    sh.calls_cap = sh.appends;
    np_producer p[NP_PRODUCERS_MAX];
    double *acks = NULL;
    pthread_mutex_init(&sh.lock, NULL);
    int rc = np_producers_open(&sh, p, err);
    if (rc == 0)
        rc = np_run_threads(&sh, p, np_max_main, &res->seconds, &res->cpu_seconds,
                            &res->server_cpu_seconds, err);
    if (rc == 0) {
        int64_t n = 0;
        acks = np_gather_acks(p, (int)cfg->producers, INT64_MIN, &n, &res->rows);
        FR_CHECK(acks && n == sh.appends, FR_ESTATE, err, "%lld calls, expected %lld",
                 (long long)n, (long long)sh.appends);
        res->appends = sh.appends;
        res->logical_bytes = sh.appends * calls->logical;
        /* The writer may join several calls into one batch: its log bytes are then a little
         * less than the calls' batches encoded one by one, which is what is counted. */
        res->log_bytes = sh.appends * encoded;
        res->ack_p50_ms = bk_quantile(acks, (int)n, 0.50);
        res->ack_p99_ms = bk_quantile(acks, (int)n, 0.99);
        if (res->rows != sh.appends * calls->rows)
            rc = fr_fail(err, FR_ESTATE, "the server acknowledged %lld rows, expected %lld",
                         (long long)res->rows, (long long)(sh.appends * calls->rows));
    }
    np_producers_close(p, (int)cfg->producers);
    pthread_mutex_destroy(&sh.lock);
    fr_free(acks);
    if (rc == 0) rc = np_drop(env, qname, err);
    return rc;
}

/* ---- the consumer of the latency run ------------------------------------------------------ */

typedef struct np_consumer {
    firth_client *client;
    const char *table;
    bool stamp_only;         /* read column b0 alone (--consumer-columns stamp) */
    atomic_bool stop;        /* set once every row was received, or at the drain deadline */
    int64_t expect_rows;     /* set before stop; -1 while the producers run */
    int64_t rows;
    double *e2e_ms;
    int64_t *sent_ns;        /* each sample's send time (for --samples) */
    int64_t cap, n;
    fr_error err;
    pthread_mutex_t lock;    /* guards expect_rows */
} np_consumer;

static int np_consume_result(np_consumer *c, firth_scan_result *r, fr_error *err)
{
    int64_t now = fr_monotonic_ns();
    for (int i = 0; i < firth_scan_result_count(r); i++) {
        const fr_batch *b = firth_batch_unwrap(firth_scan_result_get(r, i)->batch);
        const fr_column *col = fr_batch_column(b, c->stamp_only ? 0 : NP_STAMP_COLUMN);
        FR_CHECK(col && col->length > 0, FR_ECORRUPT, err, "a polled batch without rows");
        int64_t sent = ((const int64_t *)(const void *)col->values)[0];
        if (c->n < c->cap) {
            c->sent_ns[c->n] = sent;
            c->e2e_ms[c->n++] = (double)(now - sent) / 1e6;
        }
        c->rows += col->length;
    }
    return 0;
}

static void *np_consumer_main(void *arg)
{
    np_consumer *c = arg;
    firth_error fe = {0};
    firth_scanner *s = NULL;
    int rc = 0;
    firth_scanner_options o = {.columns = c->stamp_only ? "b0" : NULL};
    if (firth_scanner_open(c->client, c->table, &o, &s, &fe) != 0 ||
        firth_scanner_subscribe(s, NULL, -1, FIRTH_START_EARLIEST, 0, &fe) != 0)
        rc = bk_firth_fail(&fe, "consumer", &c->err);
    while (rc == 0 && !atomic_load(&c->stop)) {
        firth_scan_result *r = NULL;
        if (firth_scanner_poll(s, 100, &r, &fe) != 0) {
            rc = bk_firth_fail(&fe, "poll", &c->err);
            break;
        }
        rc = np_consume_result(c, r, &c->err);
        firth_scan_result_free(r);
        pthread_mutex_lock(&c->lock);
        if (c->expect_rows >= 0 && c->rows >= c->expect_rows) atomic_store(&c->stop, true);
        pthread_mutex_unlock(&c->lock);
    }
    firth_scanner_close(s);
    return NULL;
}

/* Waits until the consumer has every row or the drain deadline passed. */
static int np_consumer_finish(np_consumer *c, pthread_t tid, int64_t rows, fr_error *err)
{
    pthread_mutex_lock(&c->lock);
    c->expect_rows = rows;
    pthread_mutex_unlock(&c->lock);
    int64_t deadline = fr_monotonic_ns() + NP_DRAIN_NS;
    while (!atomic_load(&c->stop) && fr_monotonic_ns() < deadline && c->err.code == 0)
        bk_sleep_until(fr_monotonic_ns() + 1000000);
    atomic_store(&c->stop, true);
    pthread_join(tid, NULL);
    if (c->err.code < 0) {
        *err = c->err;
        return err->code;
    }
    FR_CHECK(c->rows == rows, FR_ESTATE, err, "the consumer received %lld of %lld rows",
             (long long)c->rows, (long long)rows);
    return 0;
}

/* The table's fsync histogram on the server, when its HTTP address is known. */
static int np_fsync_hist(const np_config *cfg, const char *name, bk_fsync_hist *out,
                         fr_error *err)
{
    char *text = NULL;
    FR_TRY(bk_http_get(cfg->server_http, "/metrics", &text, err));
    int rc = bk_fsync_hist_parse(text, "bench_net", name, out, err);
    fr_free(text);
    return rc;
}

/* The server's fsyncs between two readings of the histogram, into res. */
static void np_fsync_figures(const bk_fsync_hist *a, const bk_fsync_hist *b, np_lat *res)
{
    bk_fsync_hist d;
    bk_fsync_hist_since(a, b, &d);
    int64_t upto_slow = 0;
    for (int k = 0; k < d.n && d.le_ms[k] <= NP_SLOW_FSYNC_MS; k++) upto_slow = d.cum[k];
    res->srv_fsyncs = d.cum[d.n - 1];
    res->srv_fsync_slow = res->srv_fsyncs - upto_slow;
    res->srv_fsync_p50_ms = bk_fsync_hist_quantile(&d, 0.50);
    res->srv_fsync_p99_ms = bk_fsync_hist_quantile(&d, 0.99);
}

/* Appends the run's samples to path as TSV: "e2e" lines in the consumer's arrival order
 * and "ack" lines per producer, each with its send time from the end of the warm-up (ms,
 * negative during it). */
static int np_samples_write(const char *path, const char *codec, const np_shared *sh,
                            np_producer *p, const np_consumer *c, fr_error *err)
{
    FILE *f = fopen(path, "a");
    FR_CHECK(f, FR_EIO, err, "cannot open %s: %s", path, strerror(errno));
    for (int64_t i = 0; i < c->n; i++)
        fprintf(f, "%s\te2e\t%.3f\t%.3f\n", codec,
                (double)(c->sent_ns[i] - sh->measure_ns) / 1e6, c->e2e_ms[i]);
    for (int i = 0; i < (int)sh->env->cfg->producers; i++)
        for (int64_t k = 0; k < atomic_load(&p[i].calls); k++)
            fprintf(f, "%s\tack\t%.3f\t%.3f\n", codec,
                    (double)(p[i].sent_ns[k] - sh->measure_ns) / 1e6, p[i].ack_ms[k]);
    return fclose(f) == 0 ? 0 : fr_fail(err, FR_EIO, "cannot write %s", path);
}

/* The e2e p50 of the samples sent in [from, to) ns after the start (0 when none). */
static double np_p50_between(const np_consumer *c, int64_t start_ns, int64_t from,
                             int64_t to)
{
    double *v = fr_malloc(sizeof *v * ((size_t)c->n + 1));
    int n = 0;
    for (int64_t i = 0; v && i < c->n; i++) {
        int64_t at = c->sent_ns[i] - start_ns;
        if (at >= from && at < to) v[n++] = c->e2e_ms[i];
    }
    double p50 = n > 0 ? bk_quantile(v, n, 0.50) : 0;
    fr_free(v);
    return p50;
}

/* The e2e quantiles of the samples sent from measure_ns on, and the p99 of all (sorts
 * c's latencies: the samples were written before). */
static int np_latency_quantiles(np_consumer *c, int64_t measure_ns, np_lat *res, fr_error *err)
{
    double *counted = fr_malloc(sizeof *counted * ((size_t)c->n + 1));
    FR_CHECK(counted, FR_ENOMEM, err, "out of memory for latencies");
    int n = 0;
    for (int64_t i = 0; i < c->n; i++)
        if (c->sent_ns[i] >= measure_ns) counted[n++] = c->e2e_ms[i];
    int rc = n > 0 ? 0 : fr_fail(err, FR_ESTATE, "no record sent after the warm-up arrived");
    if (rc == 0) {
        res->samples = n;
        res->e2e_p50_ms = bk_quantile(counted, n, 0.50);
        res->e2e_p99_ms = bk_quantile(counted, n, 0.99);
        res->e2e_max_ms = bk_quantile(counted, n, 1.0);
        res->e2e_p99_all_ms = bk_quantile(c->e2e_ms, (int)c->n, 0.99);
    }
    fr_free(counted);
    return rc;
}

/* One latency run at rate_mb_s logical MB/s into a fresh table, dropped afterwards. */
static int np_run_latency(np_env *env, const char *codec, double rate_mb_s, np_lat *res,
                          fr_error *err)
{
    const np_config *cfg = env->cfg;
    char name[64], qname[96];
    res->srv_fsyncs = -1;
    np_table_name(name, sizeof name, "latency", codec, 0);
    snprintf(qname, sizeof qname, "bench_net.%s", name);
    FR_TRY(bk_remote_table_create(env->admin, "bench_net", name, -1, (int)cfg->buckets, codec,
                                  NULL, 0, err));
    bk_fsync_hist fs_before = {0}, fs_after = {0};
    fr_error ferr = {0}; /* the fsync figures are a diagnostic: the run counts without them */
    /* A table not yet written to has no log, and so no histogram yet: none counted. */
    int hrc = cfg->server_http ? np_fsync_hist(cfg, name, &fs_before, &ferr) : FR_EINVAL;
    bool fsyncs = hrc == 0 || hrc == FR_ENOTFOUND;
    np_shared sh = {.env = env, .table = qname};
    /* Each producer makes one call per period: producers * batch / period = the rate. */
    sh.period_ns = (int64_t)((double)cfg->producers * (double)env->lat_batch_logical /
                             (rate_mb_s * 1e6) * 1e9);
    if (sh.period_ns < 1) sh.period_ns = 1;
    sh.calls_cap = (cfg->warmup_ms + cfg->latency_ms) * 1000000 / sh.period_ns + 2;
    np_producer p[NP_PRODUCERS_MAX];
    np_consumer c = {.table = qname, .expect_rows = -1, .stamp_only = cfg->stamp_only,
                     .cap = sh.calls_cap * cfg->producers * cfg->buckets};
    c.e2e_ms = fr_calloc((size_t)c.cap + 1, sizeof *c.e2e_ms);
    c.sent_ns = fr_calloc((size_t)c.cap + 1, sizeof *c.sent_ns);
    double *acks = NULL;
    pthread_t ctid;
    pthread_mutex_init(&sh.lock, NULL);
    pthread_mutex_init(&c.lock, NULL);
    int rc = c.e2e_ms && c.sent_ns ? 0 : fr_fail(err, FR_ENOMEM, "out of memory for latencies");
    if (rc == 0) rc = np_producers_open(&sh, p, err);
    if (rc == 0) rc = bk_connect(cfg->connect, &c.client, err);
    if (rc == 0 && pthread_create(&ctid, NULL, np_consumer_main, &c) != 0)
        rc = fr_fail(err, FR_ESTATE, "cannot start the consumer thread");
    if (rc == 0) {
        /* Let the consumer subscribe and park its first poll before the clock starts. */
        bk_sleep_until(fr_monotonic_ns() + 200000000);
        sh.start_ns = fr_monotonic_ns() + 1000000;
        sh.measure_ns = sh.start_ns + cfg->warmup_ms * 1000000;
        sh.end_ns = sh.measure_ns + cfg->latency_ms * 1000000;
        int64_t ctxt = bk_context_switches();
        rc = np_run_threads(&sh, p, np_paced_main, &res->seconds, &res->cpu_seconds,
                            &res->server_cpu_seconds, err);
        int64_t ctxt_after = bk_context_switches();
        res->ctxt_per_s = ctxt >= 0 && ctxt_after >= ctxt && res->seconds > 0
                              ? (double)(ctxt_after - ctxt) / res->seconds
                              : -1;
        int64_t nacks = 0;
        acks = np_gather_acks(p, (int)cfg->producers, sh.measure_ns, &nacks, &res->rows);
        fr_error scratch = {0};
        int frc = np_consumer_finish(&c, ctid, res->rows, rc == 0 ? err : &scratch);
        if (rc == 0) rc = frc;
        res->appends = nacks;
        if (rc == 0 && (!acks || nacks == 0 || c.n == 0))
            rc = fr_fail(err, FR_ESTATE, "no record reached the consumer");
    }
    /* Before the quantiles, which sort the latencies in place. */
    if (rc == 0 && cfg->samples) rc = np_samples_write(cfg->samples, codec, &sh, p, &c, err);
    if (rc == 0) {
        int64_t quarter = cfg->latency_ms * 1000000 / 4;
        res->e2e_p50_first_ms = np_p50_between(&c, sh.measure_ns, 0, quarter);
        res->e2e_p50_last_ms = np_p50_between(&c, sh.measure_ns, 3 * quarter, 4 * quarter);
    }
    if (rc == 0) rc = np_latency_quantiles(&c, sh.measure_ns, res, err);
    if (rc == 0) {
        res->target_mb_s = rate_mb_s;
        res->achieved_mb_s = (double)res->appends * (double)env->lat_batch_logical /
                             ((double)cfg->latency_ms / 1e3) / 1e6;
        res->ack_p50_ms = bk_quantile(acks, (int)res->appends, 0.50);
        res->ack_p99_ms = bk_quantile(acks, (int)res->appends, 0.99);
        double calls_per_s = (double)res->appends / ((double)cfg->latency_ms / 1e3);
        res->ctxt_per_call = res->ctxt_per_s >= 0 ? res->ctxt_per_s / calls_per_s : -1;
    }
    if (rc == 0 && fsyncs) fsyncs = np_fsync_hist(cfg, name, &fs_after, &ferr) == 0;
    if (rc == 0 && fsyncs) np_fsync_figures(&fs_before, &fs_after, res);
    else if (rc == 0 && cfg->server_http)
        fprintf(stderr, "bench: no fsync figures from %s: %s\n", cfg->server_http, ferr.msg);
    np_producers_close(p, (int)cfg->producers);
    firth_close(c.client);
    pthread_mutex_destroy(&sh.lock);
    pthread_mutex_destroy(&c.lock);
    fr_free(acks);
    fr_free(c.e2e_ms);
    fr_free(c.sent_ns);
    if (rc == 0) rc = np_drop(env, qname, err);
    return rc;
}

/* ---- setup, reporting ---------------------------------------------------------------------- */

static void np_usage(void)
{
    fprintf(stderr,
            "usage: bench_net_produce --connect HOST:PORT --dir SCRATCH_DIR [--out FILE.json]\n"
            "          [--mb MIB] [--reps N] [--producers N] [--batch-rows N]\n"
            "          [--latency-batch-rows N] [--latency-ms MS] [--latency-warmup-ms MS]\n"
            "          [--buckets N] [--seed N]\n"
            "          [--codec NAME]... [--server-pid PID] [--server-http HOST:PORT]\n"
            "          [--skip-disk]\n"
            "          [--api writer|produce] [--linger-ms MS] [--writer-batch-bytes N]\n"
            "          [--writer-max-in-flight N]\n"
            "          [--writer-buffer-bytes N] [--consumer-columns all|stamp]\n"
            "          [--latency-rate-kb KB_PER_S] [--samples FILE.tsv]\n"
            "       bench_net_produce --disk-probe --dir SCRATCH_DIR --latency-rate-kb KB_PER_S\n"
            "          [--producers N] [--latency-batch-rows N] [--latency-ms MS]\n"
            "          [--neighbors N:BUSY_US:PERIOD_US]\n"
            "  Produces MIB MiB of 20-column rows per repetition to a firth server (which\n"
            "  should run with log.flush = append and its data dir on SCRATCH_DIR's file\n"
            "  system) and measures dd's fdatasync'd write speed in SCRATCH_DIR alongside;\n"
            "  then end-to-end latency to a long-polling consumer at half the throughput.\n"
            "  --codec may be repeated (default: ZSTD and NONE). --latency-rate-kb paces\n"
            "  the latency run at that many logical kB/s instead, to compare builds at one\n"
            "  rate (no maximum is measured and no end-to-end target reported then).\n"
            "  A latency run's first --latency-warmup-ms (1000) are sent but not counted.\n"
            "  --server-http names the server's HTTP listener: its fsync histogram\n"
            "  (/metrics) is read around each latency run and reported beside it.\n"
            "  --samples appends every latency sample to FILE.tsv: codec, e2e or ack, the\n"
            "  send time from the warm-up's end (negative within it) and the latency, in ms.\n"
            "  --disk-probe measures the disk alone at that rate, as before each latency\n"
            "  run, for --latency-ms (no server); --neighbors runs N threads beside it, each\n"
            "  busy BUSY_US of every PERIOD_US, to see what other work does to the fsyncs.\n");
}

static int np_parse_args(int argc, char **argv, np_config *cfg, fr_error *err)
{
    *cfg = (np_config){.mb = 192, .reps = 3, .producers = 4, .batch_rows = 512,
                       .latency_batch_rows = 64, .latency_ms = 4000, .warmup_ms = 1000,
                       .buckets = 4,
                       .seed = 43, .linger_ms = 0, .max_in_flight = 1, .writer_batch_bytes = 1 << 20,
                       .writer_buffer_bytes = 8 << 20,
                       .writer_api = true};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        bool takes_value = true;
        if (!strcmp(a, "--connect")) cfg->connect = v;
        else if (!strcmp(a, "--dir")) cfg->dir = v;
        else if (!strcmp(a, "--out")) cfg->out = v;
        else if (!strcmp(a, "--samples")) cfg->samples = v;
        else if (!strcmp(a, "--mb")) FR_TRY(bk_arg_i64(a, v, 1, 1 << 20, &cfg->mb, err));
        else if (!strcmp(a, "--reps")) FR_TRY(bk_arg_i64(a, v, 1, BK_REPS_MAX, &cfg->reps, err));
        else if (!strcmp(a, "--producers"))
            FR_TRY(bk_arg_i64(a, v, 1, NP_PRODUCERS_MAX, &cfg->producers, err));
        else if (!strcmp(a, "--batch-rows"))
            FR_TRY(bk_arg_i64(a, v, 1, FR_BATCH_ROWS_MAX, &cfg->batch_rows, err));
        else if (!strcmp(a, "--latency-batch-rows"))
            FR_TRY(bk_arg_i64(a, v, 1, FR_BATCH_ROWS_MAX, &cfg->latency_batch_rows, err));
        else if (!strcmp(a, "--latency-rate-kb"))
            FR_TRY(bk_arg_i64(a, v, 1, INT32_MAX, &cfg->latency_rate_kb_s, err));
        else if (!strcmp(a, "--latency-ms"))
            FR_TRY(bk_arg_i64(a, v, 100, 3600000, &cfg->latency_ms, err));
        else if (!strcmp(a, "--writer-max-in-flight"))
            FR_TRY(bk_arg_i64(a, v, 1, 64, &cfg->max_in_flight, err));
        else if (!strcmp(a, "--latency-warmup-ms"))
            FR_TRY(bk_arg_i64(a, v, 0, 3600000, &cfg->warmup_ms, err));
        else if (!strcmp(a, "--buckets")) FR_TRY(bk_arg_i64(a, v, 1, 1024, &cfg->buckets, err));
        else if (!strcmp(a, "--seed")) FR_TRY(bk_arg_i64(a, v, 0, INT64_MAX, &cfg->seed, err));
        else if (!strcmp(a, "--server-http")) cfg->server_http = v;
        else if (!strcmp(a, "--server-pid"))
            FR_TRY(bk_arg_i64(a, v, 0, INT32_MAX, &cfg->server_pid, err));
        else if (!strcmp(a, "--linger-ms"))
            FR_TRY(bk_arg_i64(a, v, 0, 60000, &cfg->linger_ms, err));
        else if (!strcmp(a, "--writer-batch-bytes"))
            FR_TRY(bk_arg_i64(a, v, 1, INT32_MAX, &cfg->writer_batch_bytes, err));
        else if (!strcmp(a, "--writer-buffer-bytes"))
            FR_TRY(bk_arg_i64(a, v, 1, INT64_MAX, &cfg->writer_buffer_bytes, err));
        else if (!strcmp(a, "--consumer-columns")) {
            FR_CHECK(v && (!strcmp(v, "all") || !strcmp(v, "stamp")), FR_EINVAL, err,
                     "--consumer-columns takes all or stamp");
            cfg->stamp_only = !strcmp(v, "stamp");
        } else if (!strcmp(a, "--api")) {
            FR_CHECK(v && (!strcmp(v, "writer") || !strcmp(v, "produce")), FR_EINVAL, err,
                     "--api takes writer or produce");
            cfg->writer_api = !strcmp(v, "writer");
        } else if (!strcmp(a, "--codec")) {
            FR_CHECK(cfg->ncodecs < NP_CODECS_MAX, FR_ELIMIT, err, "at most %d codecs",
                     NP_CODECS_MAX);
            cfg->codecs[cfg->ncodecs++] = v;
        } else if (!strcmp(a, "--skip-disk")) {
            cfg->skip_disk = true;
            takes_value = false;
        } else if (!strcmp(a, "--disk-probe")) {
            cfg->disk_probe = true;
            takes_value = false;
        } else if (!strcmp(a, "--neighbors")) {
            long long n = 0, busy = 0, period = 0;
            char end = 0;
            FR_CHECK(v && sscanf(v, "%lld:%lld:%lld%c", &n, &busy, &period, &end) == 3 &&
                         n >= 1 && n <= 256 && busy >= 0 && period > busy,
                     FR_EINVAL, err, "--neighbors takes N:BUSY_US:PERIOD_US (N 1 to 256, "
                     "BUSY_US below PERIOD_US), not '%s'", v ? v : "");
            cfg->neighbors.n = n;
            cfg->neighbors.busy_us = busy;
            cfg->neighbors.period_us = period;
        } else
            return fr_fail(err, FR_EINVAL, "unknown option %s", a);
        FR_CHECK(!takes_value || v, FR_EINVAL, err, "%s needs a value", a);
        i += takes_value;
    }
    if (cfg->disk_probe) {
        FR_CHECK(cfg->dir && cfg->latency_rate_kb_s > 0, FR_EINVAL, err,
                 "--disk-probe needs --dir and --latency-rate-kb");
        return 0;
    }
    FR_CHECK(cfg->neighbors.n == 0, FR_EINVAL, err, "--neighbors goes with --disk-probe");
    FR_CHECK(cfg->connect, FR_EINVAL, err, "--connect is required");
    FR_CHECK(cfg->dir || cfg->skip_disk, FR_EINVAL, err, "--dir is required (or --skip-disk)");
    if (cfg->ncodecs == 0) {
        cfg->codecs[cfg->ncodecs++] = "ZSTD";
        cfg->codecs[cfg->ncodecs++] = "NONE";
    }
    return 0;
}

/* Builds n batches of rows rows each (distinct random rows) into out, wrapped for the
 * client; *logical gets the mean logical bytes of one. */
static int np_build(int n, bk_rng *rng, int64_t rows, firth_batch **out, int64_t *logical,
                    fr_error *err)
{
    fr_schema *schema = NULL;
    fr_builder *bld = NULL;
    int rc;
    FR_GOTO(bk_schema_new(&schema, err));
    FR_GOTO(fr_builder_new(schema, &bld, err));
    *logical = 0;
    for (int i = 0; i < n; i++) {
        fr_batch *b = NULL;
        FR_GOTO(bk_batch_random(bld, rows, rng, &b, err));
        *logical += bk_batch_logical_bytes(b, NULL, 0);
        out[i] = firth_batch_wrap(b);
        if (!out[i]) {
            fr_batch_free(b);
            rc = fr_fail(err, FR_ENOMEM, "out of memory wrapping a batch");
            goto fail;
        }
    }
    *logical /= n;
fail:
    if (bld) fr_builder_free(bld);
    if (schema) fr_schema_free(schema);
    return rc;
}

static int np_env_open(const np_config *cfg, np_env *env, fr_error *err)
{
    *env = (np_env){.cfg = cfg};
    bk_rng rng;
    bk_rng_seed(&rng, (uint64_t)cfg->seed);
    FR_TRY(np_build((int)cfg->producers, &rng, cfg->batch_rows, env->batches,
                    &env->batch_logical, err));
    FR_TRY(np_build((int)cfg->producers * NP_RING, &rng, cfg->latency_batch_rows,
                    env->lat_batches, &env->lat_batch_logical, err));
    FR_TRY(bk_connect(cfg->connect, &env->admin, err));
    for (int i = 0; i < cfg->producers; i++)
        FR_TRY(bk_connect(cfg->connect, &env->clients[i], err));
    return 0;
}

static void np_env_close(np_env *env)
{
    for (int i = 0; i < NP_PRODUCERS_MAX; i++) {
        firth_close(env->clients[i]);
        firth_batch_free(env->batches[i]);
    }
    for (int i = 0; i < NP_PRODUCERS_MAX * NP_RING; i++) firth_batch_free(env->lat_batches[i]);
    if (env->admin) {
        firth_error fe;
        firth_drop_database(env->admin, "bench_net", true, true, &fe);
    }
    firth_close(env->admin);
}

/* Everything measured for one codec. */
typedef struct np_codec_runs {
    np_max max[BK_REPS_MAX];
    np_lat lat;
} np_codec_runs;

static double np_cores(double cpu, double secs) { return cpu >= 0 ? cpu / secs : -1; }

static json_t *np_max_json(const np_config *cfg, const char *codec, const np_max *r,
                           double *phys_med, double *logical_med)
{
    int reps = (int)cfg->reps;
    double rows_s[BK_REPS_MAX], log_mb[BK_REPS_MAX], phys[BK_REPS_MAX], p50[BK_REPS_MAX];
    double p99[BK_REPS_MAX], cores[BK_REPS_MAX], score[BK_REPS_MAX], per_cpu[BK_REPS_MAX];
    json_t *each = json_array();
    for (int i = 0; i < reps; i++) {
        rows_s[i] = (double)r[i].rows / r[i].seconds;
        log_mb[i] = (double)r[i].logical_bytes / r[i].seconds / 1e6;
        phys[i] = (double)r[i].log_bytes / r[i].seconds / 1e6;
        p50[i] = r[i].ack_p50_ms;
        p99[i] = r[i].ack_p99_ms;
        cores[i] = np_cores(r[i].cpu_seconds, r[i].seconds);
        score[i] = np_cores(r[i].server_cpu_seconds, r[i].seconds);
        /* Logical MB per CPU-second of client and server together: what a byte costs,
         * whatever share of the machine the run got. */
        double cpu = r[i].cpu_seconds + (r[i].server_cpu_seconds > 0 ? r[i].server_cpu_seconds
                                                                      : 0);
        per_cpu[i] = (double)r[i].logical_bytes / 1e6 / cpu;
        json_array_append_new(each, json_pack("{s:f, s:f, s:f, s:I, s:I, s:I, s:I, s:f, s:f}",
            "seconds", r[i].seconds, "client_cpu_seconds", r[i].cpu_seconds,
            "server_cpu_seconds", r[i].server_cpu_seconds, "rows", (json_int_t)r[i].rows,
            "appends", (json_int_t)r[i].appends, "logical_bytes",
            (json_int_t)r[i].logical_bytes, "log_bytes", (json_int_t)r[i].log_bytes,
            "ack_p50_ms", p50[i], "ack_p99_ms", p99[i]));
    }
    *phys_med = bk_median(phys, reps);
    *logical_med = bk_median(log_mb, reps);
    return json_pack("{s:o, s:{s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f}}", "reps", each, "median",
                     "rows_per_s", bk_median(rows_s, reps), "logical_mb_per_s", *logical_med,
                     "physical_mb_per_s", *phys_med, "ack_p50_ms", bk_median(p50, reps),
                     "ack_p99_ms", bk_median(p99, reps), "client_cores",
                     bk_median(cores, reps), "server_cores", bk_median(score, reps),
                     "logical_mb_per_cpu_s", bk_median(per_cpu, reps));
}

/* The JSON of a latency run; the server's fsync figures, when read, as bucket bounds ("at
 * most"), null past the last bound. */
static json_t *np_lat_json(const np_lat *l)
{
    json_t *j = json_pack(
        "{s:f, s:f, s:f, s:f, s:I, s:I, s:I, s:f, s:f, s:f, s:f, s:f, s:f, s:f}",
        "max_logical_mb_per_s", l->max_mb_s, "target_logical_mb_per_s", l->target_mb_s,
        "achieved_logical_mb_per_s", l->achieved_mb_s, "seconds", l->seconds, "rows",
        (json_int_t)l->rows, "appends", (json_int_t)l->appends, "samples",
        (json_int_t)l->samples, "e2e_p50_ms", l->e2e_p50_ms, "e2e_p99_ms", l->e2e_p99_ms,
        "e2e_max_ms", l->e2e_max_ms, "ack_p50_ms", l->ack_p50_ms, "ack_p99_ms", l->ack_p99_ms,
        "client_cores", np_cores(l->cpu_seconds, l->seconds), "server_cores",
        np_cores(l->server_cpu_seconds, l->seconds));
    if (j) {
        json_object_set_new(j, "e2e_p99_with_warmup_ms", json_real(l->e2e_p99_all_ms));
        json_object_set_new(j, "e2e_p50_first_quarter_ms", json_real(l->e2e_p50_first_ms));
        json_object_set_new(j, "e2e_p50_last_quarter_ms", json_real(l->e2e_p50_last_ms));
        bool disk = l->disk_p99_ms > 0; /* not measured with --skip-disk */
        json_object_set_new(j, "disk_paced_p50_ms", disk ? json_real(l->disk_p50_ms) : json_null());
        json_object_set_new(j, "disk_paced_p99_ms", disk ? json_real(l->disk_p99_ms) : json_null());
        json_object_set_new(j, "machine_context_switches_per_s",
                            l->ctxt_per_s >= 0 ? json_real(l->ctxt_per_s) : json_null());
        json_object_set_new(j, "machine_context_switches_per_call",
                            l->ctxt_per_call >= 0 ? json_real(l->ctxt_per_call) : json_null());
    }
    if (j && l->srv_fsyncs >= 0) {
        double p50 = l->srv_fsync_p50_ms, p99 = l->srv_fsync_p99_ms;
        json_object_set_new(j, "server_fsyncs", json_integer(l->srv_fsyncs));
        json_object_set_new(j, "server_fsyncs_over_8ms", json_integer(l->srv_fsync_slow));
        json_object_set_new(j, "server_fsync_p50_ms_at_most",
                            isinf(p50) ? json_null() : json_real(p50));
        json_object_set_new(j, "server_fsync_p99_ms_at_most",
                            isinf(p99) ? json_null() : json_real(p99));
    }
    return j;
}

/* "at most X MB/s", or that the maximum was not measured (--latency-rate-kb). */
static void np_most(const np_lat *l, char *out, size_t cap)
{
    if (l->max_mb_s > 0) snprintf(out, cap, "at most %.1f MB/s", l->max_mb_s);
    else snprintf(out, cap, "maximum not measured");
}

/* The e2e p50 early and late in the run, and whether it rose like a queue's. */
static void np_print_queue(const np_lat *l)
{
    bool rising = l->e2e_p50_last_ms > 1.5 * l->e2e_p50_first_ms &&
                  l->e2e_p50_last_ms - l->e2e_p50_first_ms > NP_QUEUE_RISE_MS;
    printf("        end-to-end p50 of the run's first quarter %.2f ms, of its last %.2f ms%s\n",
           l->e2e_p50_first_ms, l->e2e_p50_last_ms,
           rising ? ": rising, so the machine did not deliver this rate and the tail"
                    " measures a queue" : "");
}

static void np_print_codec(const char *codec, json_t *max, const np_lat *l, double dd_med,
                           int64_t latency_rows, int64_t warmup_ms)
{
    char most[48];
    np_most(l, most, sizeof most);
    json_t *m = json_object_get(max, "median");
    double phys = bk_json_number(m, "physical_mb_per_s");
    printf("  firth %-5s %10.0f rows/s  %7.1f MB/s logical  %7.1f MB/s physical  %5.1f%% of dd\n"
           "               ack p50 %.1f ms p99 %.1f ms; cores busy: client %.2f, server %.2f;"
           " %.0f logical MB per CPU-second of both\n"
           "        %lld-row calls, %s; at %.1f MB/s (asked %.1f): end-to-end"
           " p50 %.2f ms p99 %.2f ms max %.2f ms"
           " (%lld samples); ack p50 %.2f ms p99 %.2f ms\n",
           codec, bk_json_number(m, "rows_per_s"), bk_json_number(m, "logical_mb_per_s"), phys,
           dd_med > 0 ? 100 * phys / dd_med : 0.0, bk_json_number(m, "ack_p50_ms"),
           bk_json_number(m, "ack_p99_ms"), bk_json_number(m, "client_cores"),
           bk_json_number(m, "server_cores"), bk_json_number(m, "logical_mb_per_cpu_s"),
           (long long)latency_rows, most, l->achieved_mb_s, l->target_mb_s, l->e2e_p50_ms,
           l->e2e_p99_ms, l->e2e_max_ms, (long long)l->samples, l->ack_p50_ms, l->ack_p99_ms);
    if (l->disk_p99_ms > 0) /* measured (not --skip-disk) */
        printf("        the disk alone at that rate (a writer per producer, each write +"
               " fdatasync of its calls' bytes on their schedule): p50 %.2f ms p99 %.2f ms\n",
               l->disk_p50_ms, l->disk_p99_ms);
    printf("        after a warm-up of %lld ms, not counted; with it the end-to-end p99 is"
           " %.2f ms\n", (long long)warmup_ms, l->e2e_p99_all_ms);
    np_print_queue(l);
    if (l->ctxt_per_s >= 0)
        printf("        context switches of the whole machine meanwhile: %.0f a second, %.1f per"
               " call\n", l->ctxt_per_s, l->ctxt_per_call);
    if (l->srv_fsyncs >= 0)
        printf("        the server's fdatasyncs of the table meanwhile: %lld, p50 <= %g ms,"
               " p99 <= %g ms, %lld over %g ms\n",
               (long long)l->srv_fsyncs, l->srv_fsync_p50_ms, l->srv_fsync_p99_ms,
               (long long)l->srv_fsync_slow, NP_SLOW_FSYNC_MS);
}

static void np_targets(const np_config *cfg, const char *codec, double phys, double dd_med,
                       const np_lat *l, json_t *targets)
{
    char name[64], what[256];
    if (!cfg->skip_disk) {
        snprintf(name, sizeof name, "net_produce_%s_vs_disk", codec);
        snprintf(what, sizeof what, "firth server physical MB/s (%s, %lld producers over "
                 "firth://, acks after fsync) / dd conv=fdatasync MB/s", codec,
                 (long long)cfg->producers);
        bk_target t = {.name = name, .what = what, .figure = phys / dd_med,
                       .target = NP_TARGET_DISK};
        json_array_append_new(targets, bk_target_json(&t));
    }
    if (cfg->latency_rate_kb_s > 0) return; /* a rate of one's own is not the target's */
    snprintf(name, sizeof name, "net_produce_%s_e2e_p99_ms", codec);
    snprintf(what, sizeof what, "end-to-end p99 ms, produce call to consumer receipt (%s, "
             "long poll) at half the maximum throughput, after a %lld ms warm-up", codec,
             (long long)cfg->warmup_ms);
    bk_target t = {.name = name, .what = what, .figure = l->e2e_p99_ms,
                   .target = NP_TARGET_P99_MS, .lower_is_better = true};
    json_array_append_new(targets, bk_target_json(&t));
}

static int np_report(const np_config *cfg, const np_env *env, double *dd, char (*dd_rate)[32],
                     np_codec_runs *runs, fr_error *err)
{
    double dd_med = cfg->skip_disk ? 0 : bk_median(dd, (int)cfg->reps);
    json_t *jruns = json_array(), *targets = json_array(), *jdd = json_array();
    json_t *jrates = json_array();
    for (int i = 0; !cfg->skip_disk && i < cfg->reps; i++) {
        json_array_append_new(jdd, json_real(dd[i]));
        json_array_append_new(jrates, json_string(dd_rate[i]));
    }
    printf("net produce (medians of %lld, MB = 10^6 bytes):\n", (long long)cfg->reps);
    if (!cfg->skip_disk) printf("  disk  dd bs=1M conv=fdatasync %.1f MB/s\n", dd_med);
    for (int c = 0; c < cfg->ncodecs; c++) {
        double phys = 0, logical = 0;
        json_t *max = np_max_json(cfg, cfg->codecs[c], runs[c].max, &phys, &logical);
        np_print_codec(cfg->codecs[c], max, &runs[c].lat, dd_med, cfg->latency_batch_rows,
                       cfg->warmup_ms);
        np_targets(cfg, cfg->codecs[c], phys, dd_med, &runs[c].lat, targets);
        json_array_append_new(jruns, json_pack("{s:s, s:o, s:o}", "compression",
            cfg->codecs[c], "max", max, "latency",
            np_lat_json(&runs[c].lat)));
    }
    json_t *doc = json_pack(
        "{s:s, s:o, s:{s:s, s:I, s:I, s:I, s:I, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I,"
        " s:I, s:s, s:I}, s:{s:o, s:o, s:f}, s:o, s:o}",
        "benchmark", "net_produce", "host", bk_host_json(), "config", "api",
        cfg->writer_api ? "firth_writer" : "firth_produce", "linger_ms",
        (json_int_t)cfg->linger_ms, "writer_max_in_flight", (json_int_t)cfg->max_in_flight,
        "writer_batch_bytes", (json_int_t)cfg->writer_batch_bytes,
        "writer_buffer_bytes", (json_int_t)cfg->writer_buffer_bytes, "consumer_columns",
        cfg->stamp_only ? "b0" : "all", "mib_per_rep", (json_int_t)cfg->mb, "reps", (json_int_t)cfg->reps, "producers",
        (json_int_t)cfg->producers, "batch_rows", (json_int_t)cfg->batch_rows,
        "batch_logical_bytes", (json_int_t)env->batch_logical, "latency_batch_rows",
        (json_int_t)cfg->latency_batch_rows, "latency_ms", (json_int_t)cfg->latency_ms,
        "latency_warmup_ms", (json_int_t)cfg->warmup_ms,
        "buckets", (json_int_t)cfg->buckets, "flush", "append (server)", "seed",
        (json_int_t)cfg->seed, "disk", "dd_mb_per_s", jdd, "dd_reported", jrates,
        "dd_mb_per_s_median", dd_med, "runs", jruns, "targets", targets);
    int rc = cfg->out ? bk_json_write(doc, cfg->out, err) : 0;
    json_decref(doc);
    return rc;
}

/* The latency run of one codec: the maximum with latency-sized calls first, then the
 * disk alone at half that maximum, then the paced run at it. */
static int np_latency_phase(const np_config *cfg, np_env *env, const char *codec, np_lat *l,
                            fr_error *err)
{
    np_calls calls = {.batches = env->lat_batches, .stride = NP_RING, .ring = NP_RING,
                      .rows = cfg->latency_batch_rows, .logical = env->lat_batch_logical,
                      .mib = cfg->mb};
    double rate_mb_s = (double)cfg->latency_rate_kb_s / 1e3;
    if (cfg->latency_rate_kb_s == 0) { /* half the measured maximum; 0 stays "not measured" */
        np_max m = {0};
        FR_TRY(np_run_max(env, codec, 99, &calls, &m, err));
        l->max_mb_s = (double)m.logical_bytes / m.seconds / 1e6;
        rate_mb_s = l->max_mb_s / 2;
    }
    if (!cfg->skip_disk)
        FR_TRY(bk_fsync_paced(cfg->dir, (size_t)env->lat_batch_logical, (int)cfg->producers,
                              rate_mb_s, NP_DISK_PACED_S, &l->disk_p50_ms, &l->disk_p99_ms,
                              err));
    FR_TRY(np_run_latency(env, codec, rate_mb_s, l, err));
    char most[48];
    np_most(l, most, sizeof most);
    printf("  %s with %lld-row calls: %s; at %.1f MB/s end-to-end p50 %.2f ms, p99 %.2f ms\n",
           codec, (long long)cfg->latency_batch_rows, most, l->achieved_mb_s, l->e2e_p50_ms,
           l->e2e_p99_ms);
    fflush(stdout);
    return 0;
}

static int np_run_all(const np_config *cfg, np_env *env, double *dd, char (*dd_rate)[32],
                      np_codec_runs *runs, fr_error *err)
{
    np_calls calls = {.batches = env->batches, .stride = 1, .ring = 1, .rows = cfg->batch_rows,
                      .logical = env->batch_logical, .mib = cfg->mb};
    for (int rep = 0; rep < cfg->reps; rep++) {
        printf("  rep %d/%lld:", rep + 1, (long long)cfg->reps);
        if (!cfg->skip_disk) {
            FR_TRY(bk_run_dd(cfg->dir, cfg->mb, &dd[rep], dd_rate[rep], sizeof dd_rate[rep],
                             err));
            printf(" dd %.1f MB/s", dd[rep]);
        }
        for (int c = 0; c < cfg->ncodecs; c++) {
            np_max *r = &runs[c].max[rep];
            FR_TRY(np_run_max(env, cfg->codecs[c], rep, &calls, r, err));
            printf(", %s %.1f MB/s physical", cfg->codecs[c],
                   (double)r->log_bytes / r->seconds / 1e6);
        }
        printf("\n");
        fflush(stdout);
    }
    for (int c = 0; c < cfg->ncodecs; c++)
        FR_TRY(np_latency_phase(cfg, env, cfg->codecs[c], &runs[c].lat, err));
    return 0;
}

/* --disk-probe: the disk alone at the latency rate, as before each latency run, beside the
 * --neighbors threads if any, with the machine's context switches meanwhile. */
static int np_disk_probe(const np_config *cfg, fr_error *err)
{
    bk_rng rng;
    bk_rng_seed(&rng, (uint64_t)cfg->seed);
    firth_batch *one[1] = {NULL};
    int64_t bytes = 0;
    FR_TRY(np_build(1, &rng, cfg->latency_batch_rows, one, &bytes, err));
    firth_batch_free(one[0]);
    bk_neighbors *nbs = NULL;
    if (cfg->neighbors.n > 0)
        FR_TRY(bk_neighbors_start((int)cfg->neighbors.n, cfg->neighbors.busy_us,
                                  cfg->neighbors.period_us, &nbs, err));
    double rate = (double)cfg->latency_rate_kb_s / 1e3, p50 = 0, p99 = 0;
    double secs = (double)cfg->latency_ms / 1e3;
    int64_t c0 = bk_context_switches();
    int rc = bk_fsync_paced(cfg->dir, (size_t)bytes, (int)cfg->producers, rate, secs, &p50,
                            &p99, err);
    int64_t c1 = bk_context_switches();
    bk_neighbors_stop(nbs);
    if (rc < 0) return rc;
    printf("disk alone at %.1f MB/s: %lld writers, %lld bytes a call, write + fdatasync on "
           "schedule", rate, (long long)cfg->producers, (long long)bytes);
    if (cfg->neighbors.n > 0) /* nbs is freed by now */
        printf(", beside %lld threads busy %lld us of every %lld us",
               (long long)cfg->neighbors.n, (long long)cfg->neighbors.busy_us,
               (long long)cfg->neighbors.period_us);
    printf(": p50 %.2f ms p99 %.2f ms", p50, p99);
    if (c0 >= 0 && c1 >= c0) printf("; %.0f context switches a second", (double)(c1 - c0) / secs);
    printf("\n");
    return 0;
}

int main(int argc, char **argv)
{
    np_config cfg;
    np_env env = {0};
    fr_error err = {0};
    static np_codec_runs runs[NP_CODECS_MAX];
    double dd[BK_REPS_MAX] = {0};
    char dd_rate[BK_REPS_MAX][32] = {{0}};
    int rc;
    bk_client_process_init();
    if (np_parse_args(argc, argv, &cfg, &err) < 0) {
        fprintf(stderr, "bench_net_produce: %s\n", err.msg);
        np_usage();
        return 2;
    }
    if (cfg.dir) FR_GOTO(fr_mkdirs(cfg.dir, &err));
    if (cfg.disk_probe) {
        FR_GOTO(np_disk_probe(&cfg, &err));
        goto fail; /* done: nothing opened */
    }
    FR_GOTO(np_env_open(&cfg, &env, &err));
    printf("net produce: %s, %d columns, %lld logical bytes/row, %lld producers (%s) x %lld-row "
           "batches, %lld MiB per run, %lld bucket(s), acks after fsync\n", cfg.connect,
           BK_COLUMNS, (long long)(env.batch_logical / cfg.batch_rows),
           (long long)cfg.producers, cfg.writer_api ? "firth_writer" : "firth_produce",
           (long long)cfg.batch_rows, (long long)cfg.mb, (long long)cfg.buckets);
    FR_GOTO(np_run_all(&cfg, &env, dd, dd_rate, runs, &err));
    FR_GOTO(np_report(&cfg, &env, dd, dd_rate, runs, &err));
fail:
    np_env_close(&env);
    if (rc < 0) fprintf(stderr, "bench_net_produce: %s (%s)\n", err.msg, fr_strcode(rc));
    return rc < 0 ? 1 : 0;
}
