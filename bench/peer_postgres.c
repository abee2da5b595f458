/* peer_postgres.c — the peer of bench_net_pk: upserts and point lookups by primary key in
 * PostgreSQL, on the same rows. Built only when libpq is found (bench/CMakeLists.txt);
 * bench/run.sh starts the PostgreSQL server it talks to (initdb in a temporary dir, loopback,
 * fsync and synchronous_commit on).
 *
 * The table has the benchmark table's 20 columns (integer, bigint, double precision, text)
 * with b0 as the primary key. Upserts: --clients connections, each over its own range of
 * keys, run `INSERT INTO bench VALUES (...), ... ON CONFLICT (b0) DO UPDATE SET` every other
 * column `= EXCLUDED.` column, --batch-rows rows per statement (a prepared statement with
 * text parameters), each statement its own transaction, so every batch waits for its commit
 * to be flushed (synchronous_commit = on). Two passes over the keys: the first inserts, the
 * second updates every row. The figure is rows upserted per second over both passes.
 * Lookups: each connection, in pipeline mode (libpq, PostgreSQL 14+), sends --lookup-batch
 * executions of the prepared `SELECT * FROM bench WHERE b0 = $1` with random keys, then a
 * sync, then reads every result; for --lookup-ms. The figure is lookups per second (every
 * key exists; each result is checked to hold one row of 20 columns). */
#include "benchkit.h"

#include <libpq-fe.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#define PG_CLIENTS_MAX 64
#define PG_KEY_COLUMN 5 /* b0 */

typedef struct pg_config {
    const char *conninfo;
    const char *out;
    int64_t keys;
    int64_t clients;
    int64_t batch_rows;
    int64_t lookup_ms;
    int64_t lookup_batch;
    int64_t seed;
} pg_config;

/* What the client threads of one phase share. */
typedef struct pg_shared {
    const pg_config *cfg;
    const bk_text_rows *rows; /* BK_DISTINCT batches of batch_rows rows as text */
    char *upsert_sql;
    pthread_barrier_t start;
    atomic_int_fast64_t done; /* rows upserted, or lookups answered */
    pthread_mutex_t lock;
    fr_error first_err;
} pg_shared;

typedef struct pg_client {
    pg_shared *sh;
    int index;
    PGconn *conn;
    double *stmt_ms; /* upserts: per statement */
    int64_t nstmt;
} pg_client;

static void pg_fail_once(pg_shared *sh, const fr_error *e)
{
    pthread_mutex_lock(&sh->lock);
    if (sh->first_err.code == 0) sh->first_err = *e;
    pthread_mutex_unlock(&sh->lock);
}

static int pg_fail_res(PGconn *conn, PGresult *res, const char *what, fr_error *err)
{
    int rc = fr_fail(err, FR_EIO, "postgres %s: %s", what,
                     res ? PQresultErrorMessage(res) : PQerrorMessage(conn));
    if (res) PQclear(res);
    return rc;
}

static int pg_exec(PGconn *conn, const char *sql, fr_error *err)
{
    PGresult *res = PQexec(conn, sql);
    ExecStatusType st = PQresultStatus(res);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) return pg_fail_res(conn, res, sql, err);
    PQclear(res);
    return 0;
}

static int pg_connect(const pg_config *cfg, PGconn **out, fr_error *err)
{
    *out = PQconnectdb(cfg->conninfo);
    if (PQstatus(*out) != CONNECTION_OK) {
        int rc = fr_fail(err, FR_EIO, "postgres: cannot connect (%s): %s", cfg->conninfo,
                         PQerrorMessage(*out));
        PQfinish(*out);
        *out = NULL;
        return rc;
    }
    return 0;
}

/* CREATE TABLE of the benchmark table with b0 as the primary key. */
static int pg_create(PGconn *conn, fr_error *err)
{
    static const char *types[4] = {"integer", "bigint", "double precision", "text"};
    char sql[2048];
    size_t len = (size_t)snprintf(sql, sizeof sql, "DROP TABLE IF EXISTS bench; CREATE TABLE "
                                  "bench (");
    for (int c = 0; c < BK_COLUMNS; c++)
        len += (size_t)snprintf(sql + len, sizeof sql - len, "%s%s %s%s", c ? ", " : "",
                                bk_column_name(c), types[c / 5],
                                c == PG_KEY_COLUMN ? " NOT NULL PRIMARY KEY" : "");
    snprintf(sql + len, sizeof sql - len, ")");
    return pg_exec(conn, sql, err);
}

/* INSERT INTO bench VALUES ($1, ..., $20), ... (rows rows) ON CONFLICT (b0) DO UPDATE SET
 * every other column = EXCLUDED's. The caller frees it (fr_free). */
static char *pg_upsert_sql(int64_t rows)
{
    size_t cap = (size_t)rows * BK_COLUMNS * 10 + 1024, len = 0;
    char *sql = fr_malloc(cap);
    if (!sql) return NULL;
    len += (size_t)snprintf(sql + len, cap - len, "INSERT INTO bench VALUES ");
    for (int64_t r = 0; r < rows; r++)
        for (int c = 0; c < BK_COLUMNS; c++)
            len += (size_t)snprintf(sql + len, cap - len, "%s$%lld%s",
                                    c == 0 ? (r ? ", (" : "(") : ", ",
                                    (long long)(r * BK_COLUMNS + c + 1),
                                    c == BK_COLUMNS - 1 ? ")" : "");
    len += (size_t)snprintf(sql + len, cap - len, " ON CONFLICT (b0) DO UPDATE SET ");
    for (int c = 0, first = 1; c < BK_COLUMNS; c++) {
        if (c == PG_KEY_COLUMN) continue;
        len += (size_t)snprintf(sql + len, cap - len, "%s%s = EXCLUDED.%s", first ? "" : ", ",
                                bk_column_name(c), bk_column_name(c));
        first = 0;
    }
    return sql;
}

/* ---- upserts --------------------------------------------------------------------------- */

/* One statement: rows of distinct batch `which` with keys from key0 on. */
static int pg_upsert_one(pg_client *cl, const bk_text_rows *rows, int64_t key0, int64_t n,
                         const char **values, char (*keys)[24], fr_error *err)
{
    for (int64_t r = 0; r < n; r++) {
        snprintf(keys[r], sizeof keys[r], "%lld", (long long)(key0 + r));
        for (int c = 0; c < BK_COLUMNS; c++)
            values[r * BK_COLUMNS + c] = c == PG_KEY_COLUMN ? keys[r] : bk_text(rows, r, c);
    }
    int64_t t0 = fr_monotonic_ns();
    PGresult *res = NULL;
    if (n == cl->sh->cfg->batch_rows) {
        res = PQexecPrepared(cl->conn, "upsert", (int)(n * BK_COLUMNS), values, NULL, NULL, 0);
    } else { /* the last, short batch of a range */
        char *sql = pg_upsert_sql(n);
        FR_CHECK(sql, FR_ENOMEM, err, "out of memory for a statement");
        res = PQexecParams(cl->conn, sql, (int)(n * BK_COLUMNS), NULL, values, NULL, NULL, 0);
        fr_free(sql);
    }
    if (PQresultStatus(res) != PGRES_COMMAND_OK) return pg_fail_res(cl->conn, res, "upsert", err);
    PQclear(res);
    cl->stmt_ms[cl->nstmt++] = (double)(fr_monotonic_ns() - t0) / 1e6;
    atomic_fetch_add(&cl->sh->done, n);
    return 0;
}

/* The keys of client i: [lo, hi). */
static void pg_range(const pg_config *cfg, int i, int64_t *lo, int64_t *hi)
{
    *lo = cfg->keys * i / cfg->clients;
    *hi = cfg->keys * (i + 1) / cfg->clients;
}

static void *pg_upsert_main(void *arg)
{
    pg_client *cl = arg;
    const pg_config *cfg = cl->sh->cfg;
    fr_error err = {0};
    int64_t lo, hi;
    pg_range(cfg, cl->index, &lo, &hi);
    const char **values = fr_calloc((size_t)(cfg->batch_rows * BK_COLUMNS), sizeof *values);
    char (*keys)[24] = fr_calloc((size_t)cfg->batch_rows, sizeof *keys);
    int rc = values && keys ? 0 : fr_fail(&err, FR_ENOMEM, "out of memory for parameters");
    pthread_barrier_wait(&cl->sh->start);
    for (int pass = 0; pass < 2 && rc == 0; pass++)
        for (int64_t k = lo, b = 0; k < hi && rc == 0; k += cfg->batch_rows, b++) {
            int64_t n = hi - k < cfg->batch_rows ? hi - k : cfg->batch_rows;
            /* The second pass writes other rows than the first, so every row changes. */
            const bk_text_rows *rows = &cl->sh->rows[(cl->index + b + pass) % BK_DISTINCT];
            rc = pg_upsert_one(cl, rows, k, n, values, keys, &err);
        }
    if (rc < 0) pg_fail_once(cl->sh, &err);
    fr_free(values);
    fr_free(keys);
    return NULL;
}

/* ---- lookups --------------------------------------------------------------------------- */

/* One pipeline: n lookups of random keys, then a sync; reads and checks every result. */
static int pg_lookup_batch(pg_client *cl, bk_rng *rng, int64_t n, fr_error *err)
{
    const pg_config *cfg = cl->sh->cfg;
    for (int64_t i = 0; i < n; i++) {
        char key[24];
        snprintf(key, sizeof key, "%lld", (long long)(bk_rng_next(rng) % (uint64_t)cfg->keys));
        const char *values[1] = {key};
        if (!PQsendQueryPrepared(cl->conn, "get", 1, values, NULL, NULL, 0))
            return pg_fail_res(cl->conn, NULL, "lookup", err);
    }
    if (!PQpipelineSync(cl->conn)) return pg_fail_res(cl->conn, NULL, "pipeline sync", err);
    for (int64_t i = 0; i < n; i++) {
        PGresult *res = PQgetResult(cl->conn);
        if (PQresultStatus(res) != PGRES_TUPLES_OK) return pg_fail_res(cl->conn, res, "get", err);
        bool one = PQntuples(res) == 1 && PQnfields(res) == BK_COLUMNS;
        PQclear(res);
        FR_CHECK(one, FR_ESTATE, err, "postgres: a lookup of an existing key found no row");
        FR_CHECK(PQgetResult(cl->conn) == NULL, FR_ESTATE, err, "postgres: a lookup's "
                 "results did not end");
    }
    PGresult *res = PQgetResult(cl->conn);
    if (PQresultStatus(res) != PGRES_PIPELINE_SYNC)
        return pg_fail_res(cl->conn, res, "pipeline sync", err);
    PQclear(res);
    atomic_fetch_add(&cl->sh->done, n);
    return 0;
}

static void *pg_lookup_main(void *arg)
{
    pg_client *cl = arg;
    fr_error err = {0};
    bk_rng rng;
    bk_rng_seed(&rng, (uint64_t)cl->sh->cfg->seed * 131 + (uint64_t)cl->index);
    int rc = 0;
    if (!PQenterPipelineMode(cl->conn)) rc = pg_fail_res(cl->conn, NULL, "pipeline", &err);
    pthread_barrier_wait(&cl->sh->start);
    int64_t deadline = fr_monotonic_ns() + cl->sh->cfg->lookup_ms * 1000000;
    while (rc == 0 && fr_monotonic_ns() < deadline)
        rc = pg_lookup_batch(cl, &rng, cl->sh->cfg->lookup_batch, &err);
    if (rc == 0 && !PQexitPipelineMode(cl->conn))
        rc = pg_fail_res(cl->conn, NULL, "pipeline end", &err);
    if (rc < 0) pg_fail_once(cl->sh, &err);
    return NULL;
}

/* ---- running the phases ------------------------------------------------------------------ */

/* Runs fn on every client at once; *seconds from release to the last return. */
static int pg_run(pg_shared *sh, pg_client *cl, void *(*fn)(void *), double *seconds,
                  fr_error *err)
{
    int n = (int)sh->cfg->clients;
    pthread_t tid[PG_CLIENTS_MAX];
    atomic_store(&sh->done, 0);
    pthread_barrier_init(&sh->start, NULL, (unsigned)n + 1);
    for (int i = 0; i < n; i++)
        if (pthread_create(&tid[i], NULL, fn, &cl[i]) != 0) {
            fprintf(stderr, "peer_postgres: cannot start client thread %d\n", i);
            exit(2);
        }
    pthread_barrier_wait(&sh->start);
    int64_t t0 = fr_monotonic_ns();
    for (int i = 0; i < n; i++) pthread_join(tid[i], NULL);
    *seconds = (double)(fr_monotonic_ns() - t0) / 1e9;
    pthread_barrier_destroy(&sh->start);
    if (sh->first_err.code < 0) {
        *err = sh->first_err;
        return err->code;
    }
    return 0;
}

/* Connects every client and prepares its statements. */
static int pg_clients_open(pg_shared *sh, pg_client *cl, fr_error *err)
{
    const pg_config *cfg = sh->cfg;
    int64_t stmts = (cfg->keys / cfg->clients / cfg->batch_rows + 2) * 2;
    for (int i = 0; i < cfg->clients; i++) {
        cl[i] = (pg_client){.sh = sh, .index = i};
        cl[i].stmt_ms = fr_calloc((size_t)stmts, sizeof *cl[i].stmt_ms);
        FR_CHECK(cl[i].stmt_ms, FR_ENOMEM, err, "out of memory for latencies");
        FR_TRY(pg_connect(cfg, &cl[i].conn, err));
        PGresult *res = PQprepare(cl[i].conn, "upsert", sh->upsert_sql,
                                  (int)(cfg->batch_rows * BK_COLUMNS), NULL);
        if (PQresultStatus(res) != PGRES_COMMAND_OK)
            return pg_fail_res(cl[i].conn, res, "prepare upsert", err);
        PQclear(res);
        res = PQprepare(cl[i].conn, "get", "SELECT * FROM bench WHERE b0 = $1", 1, NULL);
        if (PQresultStatus(res) != PGRES_COMMAND_OK)
            return pg_fail_res(cl[i].conn, res, "prepare get", err);
        PQclear(res);
    }
    return 0;
}

static void pg_clients_close(pg_client *cl, int n)
{
    for (int i = 0; i < n; i++) {
        if (cl[i].conn) PQfinish(cl[i].conn);
        fr_free(cl[i].stmt_ms);
    }
}

static int pg_report(const pg_config *cfg, pg_client *cl, double up_s, double look_s,
                     int64_t lookups, const char *version, fr_error *err)
{
    int64_t nstmt = 0;
    for (int i = 0; i < cfg->clients; i++) nstmt += cl[i].nstmt;
    double *all = fr_calloc((size_t)nstmt + 1, sizeof *all);
    FR_CHECK(all, FR_ENOMEM, err, "out of memory");
    for (int i = 0, at = 0; i < cfg->clients; i++) {
        memcpy(all + at, cl[i].stmt_ms, sizeof *all * (size_t)cl[i].nstmt);
        at += (int)cl[i].nstmt;
    }
    double p50 = bk_quantile(all, (int)nstmt, 0.5), p99 = bk_quantile(all, (int)nstmt, 0.99);
    fr_free(all);
    double ups = (double)(2 * cfg->keys) / up_s, looks = (double)lookups / look_s;
    printf("postgres %s: %.0f upserts/s (%lld rows, %lld-row statements, synchronous_commit "
           "on; statement p50 %.1f ms p99 %.1f ms); %.0f lookups/s (pipelines of %lld)\n",
           version, ups, (long long)(2 * cfg->keys), (long long)cfg->batch_rows, p50, p99,
           looks, (long long)cfg->lookup_batch);
    json_t *doc = json_pack("{s:s, s:s, s:s, s:o, s:{s:I, s:I, s:I, s:I, s:I}, s:{s:f, s:f,"
                            " s:f, s:f, s:f, s:I}}",
                            "benchmark", "postgres", "peer", "PostgreSQL", "version", version,
                            "host", bk_host_json(), "config", "keys", (json_int_t)cfg->keys,
                            "clients", (json_int_t)cfg->clients, "batch_rows",
                            (json_int_t)cfg->batch_rows, "lookup_ms",
                            (json_int_t)cfg->lookup_ms, "lookup_batch",
                            (json_int_t)cfg->lookup_batch, "median", "upserts_per_s", ups,
                            "upsert_statement_p50_ms", p50, "upsert_statement_p99_ms", p99,
                            "lookups_per_s", looks, "upsert_seconds", up_s, "lookups",
                            (json_int_t)lookups);
    int rc = cfg->out ? bk_json_write(doc, cfg->out, err) : 0;
    json_decref(doc);
    return rc;
}

static void pg_usage(void)
{
    fprintf(stderr,
            "usage: peer_postgres --conninfo 'host=127.0.0.1 port=P dbname=postgres user=U'\n"
            "          [--out FILE.json] [--keys N] [--clients N] [--batch-rows N]\n"
            "          [--lookup-ms MS] [--lookup-batch N] [--seed N]\n"
            "  Upserts N keys twice in statements of --batch-rows rows, then looks keys up\n"
            "  in pipelines, in a PostgreSQL table of the 20-column benchmark rows.\n");
}

static int pg_parse_args(int argc, char **argv, pg_config *cfg, fr_error *err)
{
    *cfg = (pg_config){.keys = 65536, .clients = 4, .batch_rows = 1000, .lookup_ms = 3000,
                       .lookup_batch = 1000, .seed = 11};
    for (int i = 1; i < argc; i += 2) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        FR_CHECK(v, FR_EINVAL, err, "%s needs a value", a);
        if (!strcmp(a, "--conninfo")) cfg->conninfo = v;
        else if (!strcmp(a, "--out")) cfg->out = v;
        else if (!strcmp(a, "--keys")) FR_TRY(bk_arg_i64(a, v, 1, INT32_MAX, &cfg->keys, err));
        else if (!strcmp(a, "--clients"))
            FR_TRY(bk_arg_i64(a, v, 1, PG_CLIENTS_MAX, &cfg->clients, err));
        else if (!strcmp(a, "--batch-rows"))
            FR_TRY(bk_arg_i64(a, v, 1, 65535 / BK_COLUMNS, &cfg->batch_rows, err));
        else if (!strcmp(a, "--lookup-ms"))
            FR_TRY(bk_arg_i64(a, v, 1, 3600000, &cfg->lookup_ms, err));
        else if (!strcmp(a, "--lookup-batch"))
            FR_TRY(bk_arg_i64(a, v, 1, 1000000, &cfg->lookup_batch, err));
        else if (!strcmp(a, "--seed")) FR_TRY(bk_arg_i64(a, v, 0, INT64_MAX, &cfg->seed, err));
        else
            return fr_fail(err, FR_EINVAL, "unknown option %s", a);
    }
    FR_CHECK(cfg->conninfo, FR_EINVAL, err, "--conninfo is required");
    FR_CHECK(cfg->keys >= cfg->clients, FR_EINVAL, err, "fewer keys than clients");
    return 0;
}

int main(int argc, char **argv)
{
    pg_config cfg;
    fr_error err = {0};
    fr_batch *distinct[BK_DISTINCT] = {0};
    bk_text_rows rows[BK_DISTINCT] = {{0}};
    pg_client cl[PG_CLIENTS_MAX] = {{0}};
    pg_shared sh = {0};
    PGconn *admin = NULL;
    double up_s = 0, look_s = 0;
    char version[64] = "?";
    int rc;
    bk_client_process_init();
    if (pg_parse_args(argc, argv, &cfg, &err) < 0) {
        fprintf(stderr, "peer_postgres: %s\n", err.msg);
        pg_usage();
        return 2;
    }
    sh.cfg = &cfg;
    sh.rows = rows;
    pthread_mutex_init(&sh.lock, NULL);
    FR_GOTO(bk_distinct_batches(cfg.seed, cfg.batch_rows, distinct, &err));
    for (int i = 0; i < BK_DISTINCT; i++)
        FR_GOTO(bk_text_rows_build(distinct[i], &rows[i], &err));
    FR_GOTO(pg_connect(&cfg, &admin, &err));
    snprintf(version, sizeof version, "%d.%d", PQserverVersion(admin) / 10000,
             PQserverVersion(admin) % 10000);
    FR_GOTO(pg_create(admin, &err));
    sh.upsert_sql = pg_upsert_sql(cfg.batch_rows);
    if (!sh.upsert_sql) FR_GOTO(fr_fail(&err, FR_ENOMEM, "out of memory for the statement"));
    FR_GOTO(pg_clients_open(&sh, cl, &err));
    FR_GOTO(pg_run(&sh, cl, pg_upsert_main, &up_s, &err));
    if (atomic_load(&sh.done) != 2 * cfg.keys)
        FR_GOTO(fr_fail(&err, FR_ESTATE, "upserted %lld rows of %lld",
                        (long long)atomic_load(&sh.done), (long long)(2 * cfg.keys)));
    FR_GOTO(pg_exec(admin, "VACUUM ANALYZE bench", &err));
    FR_GOTO(pg_run(&sh, cl, pg_lookup_main, &look_s, &err));
    FR_GOTO(pg_report(&cfg, cl, up_s, look_s, atomic_load(&sh.done), version, &err));
fail:
    pg_clients_close(cl, (int)cfg.clients);
    if (admin) PQfinish(admin);
    fr_free(sh.upsert_sql);
    for (int i = 0; i < BK_DISTINCT; i++) {
        bk_text_rows_free(&rows[i]);
        if (distinct[i]) fr_batch_free(distinct[i]);
    }
    pthread_mutex_destroy(&sh.lock);
    if (rc < 0) fprintf(stderr, "peer_postgres: %s (%s)\n", err.msg, fr_strcode(rc));
    return rc < 0 ? 1 : 0;
}
