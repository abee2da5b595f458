/* peer_redis_streams.c — the peer of bench_net_fetch: how fast Redis Streams hand a consumer
 * the same records, read in pages. Built only when hiredis is found (bench/CMakeLists.txt);
 * bench/run.sh starts the Redis server it talks to, on loopback in a temporary dir.
 *
 * The stream holds the rows bench_net_fetch loads into firth (the same --rows, --batch-rows
 * and --seed give the same rows, see bk_load_batch) as entries of 20 fields named like the
 * columns, whose values are the columns' values as text (numbers in decimal, DOUBLE with 17
 * significant digits, strings as they are). Loading is pipelined XADD (one round trip per
 * batch of entries) and is reported but not part of the figure. A scan reads the whole
 * stream with XRANGE in pages (COUNT --page, each page starting after the last id of the
 * one before, as a consumer catching up does) and checks that every entry came back with its
 * 20 fields. The figure is entries (rows) per second of a scan, the median over --reps. */
#include "benchkit.h"

#include <hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>

#define RS_KEY "firth-bench-stream"
#define RS_ARGS (3 + 2 * BK_COLUMNS) /* XADD key * field value ... */

typedef struct rs_config {
    const char *host;
    int64_t port;
    const char *out;
    int64_t rows;
    int64_t batch_rows;
    int64_t seed;
    int64_t reps;
    int64_t page;
    int64_t server_pid;
} rs_config;

/* A reply that is not what was expected fails with its text. */
static int rs_reply_fail(redisContext *redis, redisReply *r, const char *what, fr_error *err)
{
    if (!r) return fr_fail(err, FR_EIO, "redis %s: %s", what, redis->errstr);
    int code = fr_fail(err, FR_EIO, "redis %s: unexpected reply (type %d) %.200s", what,
                       r->type, r->type == REDIS_REPLY_ERROR ? r->str : "");
    freeReplyObject(r);
    return code;
}

static int rs_command(redisContext *redis, const char *what, int argc, const char **argv,
                      fr_error *err)
{
    redisReply *r = NULL;
    if (redisAppendCommandArgv(redis, argc, argv, NULL) != REDIS_OK ||
        redisGetReply(redis, (void **)&r) != REDIS_OK || !r || r->type == REDIS_REPLY_ERROR)
        return rs_reply_fail(redis, r, what, err);
    freeReplyObject(r);
    return 0;
}

/* Pipelines the XADD of the n first rows of rows, then reads their replies. */
static int rs_add(redisContext *redis, const bk_text_rows *rows, int64_t n, fr_error *err)
{
    const char *argv[RS_ARGS];
    size_t argvlen[RS_ARGS];
    argv[0] = "XADD", argv[1] = RS_KEY, argv[2] = "*";
    argvlen[0] = 4, argvlen[1] = strlen(RS_KEY), argvlen[2] = 1;
    for (int64_t r = 0; r < n; r++) {
        for (int c = 0; c < BK_COLUMNS; c++) {
            argv[3 + 2 * c] = bk_column_name(c);
            argvlen[3 + 2 * c] = strlen(argv[3 + 2 * c]);
            argv[4 + 2 * c] = bk_text(rows, r, c);
            argvlen[4 + 2 * c] = rows->len[r * BK_COLUMNS + c];
        }
        if (redisAppendCommandArgv(redis, RS_ARGS, argv, argvlen) != REDIS_OK)
            return fr_fail(err, FR_EIO, "redis XADD: %s", redis->errstr);
    }
    for (int64_t r = 0; r < n; r++) {
        redisReply *reply = NULL;
        if (redisGetReply(redis, (void **)&reply) != REDIS_OK || !reply ||
            reply->type != REDIS_REPLY_STRING)
            return rs_reply_fail(redis, reply, "XADD", err);
        freeReplyObject(reply);
    }
    return 0;
}

/* Loads the stream (deleted first) with the rows of bench_net_fetch's load. */
static int rs_load(const rs_config *cfg, redisContext *redis, fr_error *err)
{
    fr_batch *distinct[BK_DISTINCT];
    bk_text_rows rows[BK_DISTINCT] = {{0}};
    FR_TRY(bk_distinct_batches(cfg->seed, cfg->batch_rows, distinct, err));
    int rc = 0;
    for (int i = 0; i < BK_DISTINCT && rc == 0; i++)
        rc = bk_text_rows_build(distinct[i], &rows[i], err);
    const char *del[] = {"DEL", RS_KEY};
    if (rc == 0) rc = rs_command(redis, "DEL", 2, del, err);
    for (int64_t i = 0; rc == 0; i++) {
        int64_t left = cfg->rows - i * cfg->batch_rows;
        if (left <= 0) break;
        int64_t n = left < cfg->batch_rows ? left : cfg->batch_rows;
        rc = rs_add(redis, &rows[i % BK_DISTINCT], n, err);
    }
    for (int i = 0; i < BK_DISTINCT; i++) {
        bk_text_rows_free(&rows[i]);
        fr_batch_free(distinct[i]);
    }
    return rc;
}

/* Checks one page of XRANGE and counts its entries; *last gets the last entry's id. */
static int rs_page(redisContext *redis, redisReply *r, int64_t *entries, char *last, size_t cap,
                   fr_error *err)
{
    if (!r || r->type != REDIS_REPLY_ARRAY) return rs_reply_fail(redis, r, "XRANGE", err);
    for (size_t i = 0; i < r->elements; i++) {
        redisReply *e = r->element[i];
        bool ok = e->type == REDIS_REPLY_ARRAY && e->elements == 2 &&
                  e->element[0]->type == REDIS_REPLY_STRING &&
                  e->element[1]->type == REDIS_REPLY_ARRAY &&
                  e->element[1]->elements == 2 * BK_COLUMNS;
        if (!ok) {
            freeReplyObject(r);
            return fr_fail(err, FR_ECORRUPT, "redis XRANGE: an entry without its %d fields",
                           BK_COLUMNS);
        }
    }
    *entries = (int64_t)r->elements;
    if (r->elements > 0) {
        redisReply *id = r->element[r->elements - 1]->element[0];
        snprintf(last, cap, "(%.*s", (int)id->len, id->str);
    }
    freeReplyObject(r);
    return 0;
}

/* Reads the whole stream in pages; checks the count. */
static int rs_scan(const rs_config *cfg, redisContext *redis, fr_error *err)
{
    char start[64] = "-", count[32];
    snprintf(count, sizeof count, "%lld", (long long)cfg->page);
    int64_t total = 0;
    for (;;) {
        const char *argv[] = {"XRANGE", RS_KEY, start, "+", "COUNT", count};
        redisReply *r = NULL;
        if (redisAppendCommandArgv(redis, 6, argv, NULL) != REDIS_OK ||
            redisGetReply(redis, (void **)&r) != REDIS_OK)
            return rs_reply_fail(redis, NULL, "XRANGE", err);
        int64_t n = 0;
        FR_TRY(rs_page(redis, r, &n, start, sizeof start, err));
        total += n;
        if (n < cfg->page) break;
    }
    FR_CHECK(total == cfg->rows, FR_ESTATE, err, "redis XRANGE returned %lld entries of %lld",
             (long long)total, (long long)cfg->rows);
    return 0;
}

/* Redis's used_memory from INFO memory, or -1. */
static int64_t rs_used_memory(redisContext *redis)
{
    const char *argv[] = {"INFO", "memory"};
    redisReply *r = NULL;
    if (redisAppendCommandArgv(redis, 2, argv, NULL) != REDIS_OK ||
        redisGetReply(redis, (void **)&r) != REDIS_OK || !r)
        return -1;
    int64_t bytes = -1;
    const char *p = r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS
                        ? strstr(r->str, "used_memory:") : NULL;
    if (p) bytes = strtoll(p + strlen("used_memory:"), NULL, 10);
    freeReplyObject(r);
    return bytes;
}

static void rs_usage(void)
{
    fprintf(stderr,
            "usage: peer_redis_streams --port P [--host H] [--out FILE.json] [--rows N]\n"
            "          [--batch-rows N] [--seed N] [--reps N] [--page N] [--server-pid PID]\n"
            "  Loads N rows of the 20-column benchmark table into a Redis stream as 20-field\n"
            "  entries and times reading them back with XRANGE in pages.\n");
}

static int rs_parse_args(int argc, char **argv, rs_config *cfg, fr_error *err)
{
    *cfg = (rs_config){.host = "127.0.0.1", .rows = 131072, .batch_rows = 512, .seed = 7,
                       .reps = 3, .page = 1000};
    for (int i = 1; i < argc; i += 2) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        FR_CHECK(v, FR_EINVAL, err, "%s needs a value", a);
        if (!strcmp(a, "--host")) cfg->host = v;
        else if (!strcmp(a, "--port")) FR_TRY(bk_arg_i64(a, v, 1, 65535, &cfg->port, err));
        else if (!strcmp(a, "--out")) cfg->out = v;
        else if (!strcmp(a, "--rows")) FR_TRY(bk_arg_i64(a, v, 1, INT32_MAX, &cfg->rows, err));
        else if (!strcmp(a, "--batch-rows"))
            FR_TRY(bk_arg_i64(a, v, 1, FR_BATCH_ROWS_MAX, &cfg->batch_rows, err));
        else if (!strcmp(a, "--seed")) FR_TRY(bk_arg_i64(a, v, 0, INT64_MAX, &cfg->seed, err));
        else if (!strcmp(a, "--reps")) FR_TRY(bk_arg_i64(a, v, 1, BK_REPS_MAX, &cfg->reps, err));
        else if (!strcmp(a, "--page")) FR_TRY(bk_arg_i64(a, v, 1, 1000000, &cfg->page, err));
        else if (!strcmp(a, "--server-pid"))
            FR_TRY(bk_arg_i64(a, v, 0, INT32_MAX, &cfg->server_pid, err));
        else
            return fr_fail(err, FR_EINVAL, "unknown option %s", a);
    }
    FR_CHECK(cfg->port > 0, FR_EINVAL, err, "--port is required");
    return 0;
}

static int rs_report(const rs_config *cfg, double load_s, int64_t mem, double *secs,
                     double *cpu, double *server_cpu, fr_error *err)
{
    int reps = (int)cfg->reps;
    double rows_s[BK_REPS_MAX], ccores[BK_REPS_MAX], scores[BK_REPS_MAX];
    json_t *each = json_array();
    for (int i = 0; i < reps; i++) {
        rows_s[i] = (double)cfg->rows / secs[i];
        ccores[i] = cpu[i] / secs[i];
        scores[i] = server_cpu[i] >= 0 ? server_cpu[i] / secs[i] : -1;
        json_array_append_new(each, json_real(secs[i]));
    }
    double med = bk_median(rows_s, reps);
    printf("redis streams (median of %d): %.0f entries/s reading whole 20-field entries "
           "(XRANGE COUNT %lld); cores busy: client %.2f, redis %.2f\n"
           "  loaded %lld entries with pipelined XADD in %.2f s (%.0f entries/s); "
           "used_memory %.1f MB\n", reps, med, (long long)cfg->page, bk_median(ccores, reps),
           bk_median(scores, reps), (long long)cfg->rows, load_s,
           (double)cfg->rows / load_s, (double)mem / 1e6);
    json_t *doc = json_pack("{s:s, s:s, s:o, s:{s:I, s:I, s:I, s:I, s:I}, s:f, s:I, s:o,"
                            " s:{s:f, s:f, s:f}}",
                            "benchmark", "redis_streams", "peer", "Redis Streams", "host",
                            bk_host_json(), "config", "rows", (json_int_t)cfg->rows,
                            "batch_rows", (json_int_t)cfg->batch_rows, "seed",
                            (json_int_t)cfg->seed, "reps", (json_int_t)cfg->reps, "page",
                            (json_int_t)cfg->page, "load_seconds", load_s, "used_memory",
                            (json_int_t)mem, "seconds_per_scan", each, "median",
                            "rows_per_s", med, "client_cores", bk_median(ccores, reps),
                            "server_cores", bk_median(scores, reps));
    int rc = cfg->out ? bk_json_write(doc, cfg->out, err) : 0;
    json_decref(doc);
    return rc;
}

int main(int argc, char **argv)
{
    rs_config cfg;
    fr_error err = {0};
    redisContext *redis = NULL;
    double secs[BK_REPS_MAX], cpu[BK_REPS_MAX], scpu[BK_REPS_MAX];
    int code;
    bk_client_process_init();
    if (rs_parse_args(argc, argv, &cfg, &err) < 0) {
        fprintf(stderr, "peer_redis_streams: %s\n", err.msg);
        rs_usage();
        return 2;
    }
    redis = redisConnectWithTimeout(cfg.host, (int)cfg.port, (struct timeval){.tv_sec = 5});
    if (!redis || redis->err) {
        fprintf(stderr, "peer_redis_streams: cannot connect to %s:%lld: %s\n", cfg.host,
                (long long)cfg.port, redis ? redis->errstr : "out of memory");
        if (redis) redisFree(redis);
        return 1;
    }
    int64_t t0 = fr_monotonic_ns();
    code = rs_load(&cfg, redis, &err);
    double load_s = (double)(fr_monotonic_ns() - t0) / 1e9;
    if (code == 0) code = rs_scan(&cfg, redis, &err); /* warm-up, unmeasured */
    for (int i = 0; code == 0 && i < cfg.reps; i++) {
        pid_t spid = (pid_t)cfg.server_pid;
        int64_t w0 = fr_monotonic_ns(), c0 = bk_cpu_ns(), s0 = bk_pid_cpu_ns(spid);
        code = rs_scan(&cfg, redis, &err);
        int64_t s1 = bk_pid_cpu_ns(spid);
        secs[i] = (double)(fr_monotonic_ns() - w0) / 1e9;
        cpu[i] = (double)(bk_cpu_ns() - c0) / 1e9;
        scpu[i] = s0 >= 0 && s1 >= 0 ? (double)(s1 - s0) / 1e9 : -1;
    }
    if (code == 0) code = rs_report(&cfg, load_s, rs_used_memory(redis), secs, cpu, scpu, &err);
    redisFree(redis);
    if (code < 0) fprintf(stderr, "peer_redis_streams: %s (%s)\n", err.msg, fr_strcode(code));
    return code < 0 ? 1 : 0;
}
