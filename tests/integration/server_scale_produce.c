/* server_scale_produce.c — 64 concurrent producers and 8 concurrent consumers on one real
 * `firth server` process (ephemeral loopback ports, default flush policy: an acknowledgement
 * means fsynced), with exact verification (scale_model.h says precisely what is checked).
 *
 * Producers: 64 threads on three tables, 32 with a client (a connection) each, 32 sharing 4:
 * idempotent writers (batching by size and linger, per-call acknowledgements) appending to
 * two log tables and upserting and deleting in a primary-key table; every eighth producer
 * makes one-call firth_produce / firth_upsert requests with its own writer id and sequence.
 * Consumers: 8 threads, each with its own client, follow one table each from its earliest
 * record with a scanner while the producers run, until they have read every bucket up to
 * the end offsets the table had once all producers were acknowledged; each checks order,
 * density and content as it reads. One of them asks for the columns in another order and
 * a filter (r % 2 = 0 AND p < 40): it must read exactly the acknowledged rows that pass,
 * in increasing offsets, each once. No failure is injected here, so every call must be
 * acknowledged with success. Figures printed: rows and calls, throughput, consumer polls.
 * FIRTH_SCALE_CALLS sets the calls per producer (default 100), FIRTH_SCALE_PRODUCERS the
 * producers (default 64). */
#include "scale_model.h"

#define CONSUMERS 8

static sm_world world;
static int64_t ends[SM_TABLES][SM_BUCKETS_MAX];
static atomic_bool ends_known;

typedef struct consumer {
    sm_reader r;
    pthread_t thread;
    int64_t polls, batches;
    int64_t deadline_ms;
} consumer;

static bool positions_at(const int64_t *pos, int table)
{
    for (int b = 0; b < SM_NBUCKETS[table]; b++)
        if (pos[b] < ends[table][b]) return false;
    return true;
}

static void *consumer_main(void *arg)
{
    consumer *k = arg;
    firth_client *client = NULL;
    firth_error err = {0};
    IK_OK(firth_open(world.target, &client, &err), err);
    firth_scanner *s = NULL;
    firth_scanner_options o = {.max_bytes = 256 << 10}; /* many small polls */
    if (k->r.filtered) {
        o.columns = SM_FILTER_COLUMNS;
        o.where = SM_FILTER_WHERE;
    }
    IK_OK(firth_scanner_open(client, SM_TABLE[k->r.table], &o, &s, &err), err);
    IK_OK(firth_scanner_subscribe(s, NULL, -1, FIRTH_START_EARLIEST, 0, &err), err);
    /* Where the scanner is: a filtered reader's rows end before the log does. */
    int64_t pos[SM_BUCKETS_MAX] = {0};
    for (;;) {
        /* ends[] is read only once ends_known says it is set. */
        if (atomic_load(&ends_known) &&
            (k->r.filtered ? positions_at(pos, k->r.table)
                           : sm_reader_at(&k->r, ends[k->r.table])))
            break;
        if (ik_now_ms() > k->deadline_ms) {
            ik_fail("%s: not done before the deadline", k->r.name);
            break;
        }
        firth_scan_result *res = NULL;
        int rc = firth_scanner_poll(s, 200, &res, &err);
        if (rc != 0) IK_FATAL("%s: poll failed: %d %s", k->r.name, rc, err.msg);
        k->polls++;
        for (int i = 0; i < firth_scan_result_count(res); i++) {
            const firth_scan_batch *sb = firth_scan_result_get(res, i);
            if (sb->partition || sb->partition_id != -1)
                ik_fail("%s: a batch of partition %s in a table without partitions", k->r.name,
                        sb->partition ? sb->partition : "?");
            sm_reader_batch(&k->r, sb->bucket, sb->batch, sb->offsets, sb->changes);
            k->batches++;
        }
        firth_scan_result_free(res);
        for (int b = 0; b < SM_NBUCKETS[k->r.table]; b++)
            IK_OK(firth_scanner_position(s, NULL, b, &pos[b], &err), err);
    }
    /* The scanner's positions are where the reads ended: past the last row returned, or,
     * filtered, at the end of the log. */
    for (int b = 0; b < SM_NBUCKETS[k->r.table]; b++) {
        if (k->r.filtered ? pos[b] < k->r.next[b] : pos[b] != k->r.next[b])
            ik_fail("%s: bucket %d: the scanner's position is %lld after reading up to %lld",
                    k->r.name, b, (long long)pos[b], (long long)k->r.next[b]);
        if (k->r.filtered && pos[b] == ends[k->r.table][b]) k->r.next[b] = pos[b];
    }
    firth_scanner_close(s);
    firth_close(client);
    return NULL;
}

/* The metrics agree with the end offsets the scanners saw. */
static void check_metrics(const ik_server *srv)
{
    char *text = ik_http_get(srv->http, "/metrics");
    if (!text) {
        ik_fail("GET /metrics from %s failed", srv->http);
        return;
    }
    for (int t = 0; t < SM_TABLES; t++)
        for (int b = 0; b < SM_NBUCKETS[t]; b++) {
            char name[256];
            snprintf(name, sizeof name,
                     "firth_log_end_offset{database=\"scale\",table=\"%s\",partition=\"\","
                     "bucket=\"%d\"}", SM_TABLE[t] + 6, b);
            double v = ik_metric(text, name);
            if (v != (double)ends[t][b])
                ik_fail("/metrics: %s is %.0f, the log ends at %lld", name, v,
                        (long long)ends[t][b]);
        }
    free(text);
}

int main(void)
{
    const char *program = "server_scale_produce";
    uint64_t seed = ik_seed(program);
    ik_scratch(program);
    const char *calls_env = getenv("FIRTH_SCALE_CALLS");
    int calls = calls_env ? (int)strtol(calls_env, NULL, 10) : 100;
    if (calls < 1 || calls > 10000) calls = 100;
    const char *producers_env = getenv("FIRTH_SCALE_PRODUCERS");
    int producers = producers_env ? (int)strtol(producers_env, NULL, 10) : 64;
    if (producers < 8 || producers > 2048) producers = 64;

    ik_server srv;
    ik_server_init(&srv, "server");
    ik_server_start_ok(&srv, "127.0.0.1:0", NULL);
    ik_log("%s: server pid %d on %s", program, (int)srv.pid, srv.native);

    firth_client *admin = NULL;
    firth_error err = {0};
    IK_OK(firth_open(srv.target, &admin, &err), err);
    ik_sql(admin, SM_CREATE);

    const int tables[] = {SM_KEYED, SM_SPREAD, SM_KV};
    sm_world_init(&world, program, srv.target, producers, tables, 3, calls, 1, seed);
    world.pause_max_ms = 3;
    /* Producers 32..63 share 4 clients, 8 on each connection: their writers' and one-call
     * requests are pipelined on it together. */
    firth_client *shared[4];
    for (int i = 0; i < 4; i++) IK_OK(firth_open(srv.target, &shared[i], &err), err);
    for (int i = producers / 2; i < producers; i++) world.producers[i].shared = shared[i % 4];

    /* Consumers first, so that they follow the tables as they grow. */
    static const int consumer_table[CONSUMERS] = {SM_KEYED, SM_KEYED, SM_KEYED, SM_SPREAD,
                                                  SM_SPREAD, SM_KV, SM_KV, SM_KV};
    consumer *cons = calloc(CONSUMERS, sizeof *cons);
    int64_t started = ik_now_ms();
    for (int i = 0; i < CONSUMERS; i++) {
        char name[64];
        snprintf(name, sizeof name, "consumer %d of %s", i, SM_TABLE[consumer_table[i]]);
        sm_reader_init(&cons[i].r, &world, consumer_table[i], name);
        if (i == 2) { /* one reads a projection in another order, filtered */
            sm_reader_filter(&cons[i].r);
            snprintf(cons[i].r.name, sizeof cons[i].r.name, "filtered consumer %d of %s", i,
                     SM_TABLE[consumer_table[i]]);
        }
        cons[i].deadline_ms = started + 240000;
        if (pthread_create(&cons[i].thread, NULL, consumer_main, &cons[i]))
            IK_FATAL("cannot start consumer thread %d", i);
    }
    sm_producers_start(&world);
    sm_producers_join(&world);
    int64_t produced_ms = ik_now_ms() - started;

    for (int t = 0; t < SM_TABLES; t++) sm_end_offsets(admin, t, ends[t]);
    atomic_store(&ends_known, true);
    for (int i = 0; i < CONSUMERS; i++) pthread_join(cons[i].thread, NULL);
    int64_t consumed_ms = ik_now_ms() - started;

    /* Every call acknowledged with success: nothing was injected to fail. */
    int64_t ncalls = 0, failed = 0, rows = 0;
    for (int i = 0; i < world.nproducers; i++) {
        sm_producer *p = &world.producers[i];
        for (int c = 0; c < atomic_load(&p->ncalls); c++) {
            ncalls++;
            int st = atomic_load(&p->calls[c].status);
            if (st != 0 && failed++ < 10)
                ik_fail("producer %d (%s): call %d failed with %d", i, SM_TABLE[p->table], c,
                        st);
        }
        rows += p->rows_acked;
    }
    if (failed > 10) ik_fail("%lld calls failed in all", (long long)failed);

    sm_kv_model *models[CONSUMERS] = {0};
    for (int i = 0; i < CONSUMERS; i++) {
        sm_reader_report_position(&cons[i].r, ends[cons[i].r.table]);
        if (cons[i].r.table == SM_KV) {
            models[i] = calloc((size_t)world.slots[SM_KV], sizeof *models[i]);
            sm_check_kv(&cons[i].r, models[i]);
        } else {
            sm_check_log(&cons[i].r);
        }
    }
    /* Every kv consumer replayed the same state, and lookups return it. */
    int first_kv = -1;
    for (int i = 0; i < CONSUMERS; i++) {
        if (!models[i]) continue;
        if (first_kv < 0) first_kv = i;
        else if (memcmp(models[i], models[first_kv],
                        (size_t)world.slots[SM_KV] * sizeof *models[i]) != 0)
            ik_fail("consumers %d and %d of scale.kv replayed different states", first_kv, i);
    }
    if (first_kv >= 0) sm_check_lookups(&world, admin, models[first_kv]);
    check_metrics(&srv);

    int64_t log_rows[SM_TABLES] = {0};
    for (int t = 0; t < SM_TABLES; t++)
        for (int b = 0; b < SM_NBUCKETS[t]; b++) log_rows[t] += ends[t][b];
    ik_log("%s: %d producers made %lld calls of %lld rows (all acknowledged: %s) in %.1f s: "
           "%.0f rows/s acknowledged",
           program, producers, (long long)ncalls, (long long)rows, failed ? "no" : "yes",
           (double)produced_ms / 1e3, (double)rows * 1e3 / (double)(produced_ms ? produced_ms : 1));
    ik_log("%s: logs hold %lld (keyed), %lld (spread) records and %lld changelog records (kv)",
           program, (long long)log_rows[0], (long long)log_rows[1], (long long)log_rows[2]);
    for (int i = 0; i < CONSUMERS; i++)
        ik_log("%s: %s read %lld records in %lld polls (%lld batches)", program, cons[i].r.name,
               (long long)cons[i].r.rows, (long long)cons[i].polls,
               (long long)cons[i].batches);
    ik_log("%s: the consumers were done %.1f s after the start", program,
           (double)consumed_ms / 1e3);

    for (int i = 0; i < 4; i++) firth_close(shared[i]);
    firth_close(admin);
    ik_server_stop(&srv);
    for (int i = 0; i < CONSUMERS; i++) {
        sm_reader_free(&cons[i].r);
        free(models[i]);
    }
    free(cons);
    sm_world_free(&world);
    return ik_finish(program);
}
