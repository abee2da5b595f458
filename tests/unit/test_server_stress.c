/* test_server_stress.c — concurrent producers and long-polling consumers against one
 * in-process server, each on its own connection and thread: every acknowledged record is
 * read back exactly once by every consumer, at dense offsets in increasing order per bucket,
 * and each producer's records appear in its own order within a bucket. Producers are
 * idempotent writers, and every producer also retries one batch it already wrote, which
 * must come back DUPLICATE and appear once.
 *
 * Sizes are kept small for a shared 2-core machine; FIRTH_STRESS_SCALE multiplies the
 * batches per producer. The seed of the batch sizes is printed. */
#include "server_testkit.h"

#include <pthread.h>
#include <stdatomic.h>

enum { PRODUCERS = 8, CONSUMERS = 8, BUCKETS = 4, ROWS_MAX = 20 };

static kit_server ks;
static int batches_per_producer = 60;
static unsigned seed;

/* Rows of producer p's batch seq: ids p * 10^9 + seq * 1000 + i, i < rows_of(p, seq). */
static int rows_of(int p, int seq)
{
    uint32_t h = fr_murmur3_32(&seq, sizeof seq, seed + (uint32_t)p);
    return 1 + (int)(h % ROWS_MAX);
}

static int64_t id_of(int p, int seq, int i) { return (int64_t)p * 1000000000 + seq * 1000 + i; }

typedef struct producer {
    int p;
    atomic_int failures;
    char why[256];
} producer;

static void *produce_main(void *arg)
{
    producer *pr = arg;
    kit_conn c = kit_connect(fr_server_address(ks.srv));
    fr_schema *s = kit_schema();
    fr_error err = {0};
    int64_t writer = 1000 + pr->p;
    for (int seq = 0; seq < batches_per_producer + 1; seq++) {
        /* The last round retries the first batch: a duplicate. */
        int real = seq < batches_per_producer ? seq : 0;
        int bucket = (pr->p + real) % BUCKETS;
        fr_builder *bld = NULL;
        fr_builder_new(s, &bld, &err);
        for (int i = 0; i < rows_of(pr->p, real); i++) {
            fr_builder_append_i64(bld, 0, id_of(pr->p, real, i), &err);
            fr_builder_append_null(bld, 1, &err);
            fr_builder_append_f64(bld, 2, i, &err);
        }
        fr_batch *b = NULL;
        fr_builder_finish(bld, &b, &err);
        fr_builder_free(bld);
        fr_buf bytes;
        fr_buf_init(&bytes);
        fr_rb_params params = {.schema_id = 0, .compression = FR_COMPRESSION_LZ4_FRAME,
                               .writer_id = writer, .batch_sequence = real};
        fr_rb_encode(b, &params, &bytes, &err);
        fr_batch_free(b);
        Firth__ProduceLogRequest req = FIRTH__PRODUCE_LOG_REQUEST__INIT;
        Firth__TablePath path = kit_path_of("default", "s");
        Firth__ProduceBucket pb = FIRTH__PRODUCE_BUCKET__INIT;
        Firth__ProduceBucket *pbs[1] = {&pb};
        pb.partition_id = -1;
        pb.bucket = bucket;
        pb.records.data = bytes.data;
        pb.records.len = bytes.len;
        req.path = &path;
        req.writer_id = writer;
        req.buckets = pbs;
        req.n_buckets = 1;
        int32_t id = kit_send(&c, FR_RPC_PRODUCE_LOG, &req.base);
        fr_rpc_frame f;
        int rc = kit_next_frame(&c, &f, 30000);
        ProtobufCMessage *m = NULL;
        if (rc == 1 && f.request_id == id && f.result == FR_RPC_SUCCESS &&
            fr_rpc_response_unpack(FR_RPC_PRODUCE_LOG, &f, &m, &err) == FR_OK) {
            Firth__ProduceLogResponse *r = (Firth__ProduceLogResponse *)m;
            int code = r->buckets[0]->error ? r->buckets[0]->error->code : 0;
            int want = seq < batches_per_producer ? 0 : FIRTH__ERROR_CODE__DUPLICATE;
            if (code != want && atomic_fetch_add(&pr->failures, 1) == 0)
                snprintf(pr->why, sizeof pr->why, "batch %d: code %d", seq, code);
        } else if (atomic_fetch_add(&pr->failures, 1) == 0) {
            snprintf(pr->why, sizeof pr->why, "batch %d: no answer (%d)", seq, rc);
        }
        fr_rpc_free(m);
        fr_buf_free(&bytes);
    }
    fr_schema_free(s);
    kit_close(&c);
    return NULL;
}

typedef struct consumer {
    int64_t total;               /* rows to read */
    atomic_int failures;
    char why[256];
    int64_t *seen;               /* per producer and batch: rows seen */
    int last_seq[PRODUCERS][BUCKETS];
} consumer;

static void consumer_fail(consumer *co, const char *what, int64_t a, int64_t b)
{
    if (atomic_fetch_add(&co->failures, 1) == 0)
        snprintf(co->why, sizeof co->why, "%s (%lld, %lld)", what, (long long)a, (long long)b);
}

/* Takes the rows of one bucket's records from offset *next on. */
static int64_t take_records(consumer *co, const fr_schema *ps, int bucket,
                            const ProtobufCBinaryData *rec, int64_t *next)
{
    int64_t got = 0;
    size_t pos = 0;
    fr_error err = {0};
    while (pos < rec->len) {
        fr_rb_view v;
        fr_batch *b = NULL;
        size_t used;
        if (fr_rb_decode(rec->data + pos, rec->len - pos, &v, &err) < 0 ||
            fr_ipc_read_batch(v.ipc, (size_t)v.ipc_length, ps, &b, &used, &err) < 0) {
            consumer_fail(co, "undecodable records", bucket, (int64_t)pos);
            return got;
        }
        for (int64_t r = 0; r < fr_batch_num_rows(b); r++) {
            int64_t off = v.base_offset + r;
            if (off < *next) continue;
            if (off != *next) consumer_fail(co, "offset gap", off, *next);
            fr_value val;
            fr_column_get(fr_batch_column(b, 0), r, &val);
            int p = (int)(val.v.i / 1000000000), seq = (int)(val.v.i / 1000 % 1000000);
            if (p < 0 || p >= PRODUCERS || seq >= batches_per_producer) {
                consumer_fail(co, "unknown id", val.v.i, 0);
            } else {
                if (seq < co->last_seq[p][bucket]) consumer_fail(co, "producer order", p, seq);
                co->last_seq[p][bucket] = seq;
                co->seen[p * batches_per_producer + seq]++;
            }
            *next = off + 1;
            got++;
        }
        fr_batch_free(b);
        pos += (size_t)v.length;
    }
    return got;
}

static void *consume_main(void *arg)
{
    consumer *co = arg;
    kit_conn c = kit_connect(fr_server_address(ks.srv));
    fr_schema *full = kit_schema(), *ps = NULL;
    int col = 0;
    fr_error err = {0};
    fr_schema_project(full, &col, 1, &ps, &err);
    int64_t next[BUCKETS] = {0}, read = 0;
    int64_t deadline = fr_monotonic_ns() + (int64_t)120 * 1000000000;
    while (read < co->total && fr_monotonic_ns() < deadline && !atomic_load(&co->failures)) {
        Firth__FetchLogRequest req = FIRTH__FETCH_LOG_REQUEST__INIT;
        Firth__FetchTable ft = FIRTH__FETCH_TABLE__INIT;
        Firth__FetchTable *fts[1] = {&ft};
        Firth__FetchBucket fb[BUCKETS];
        Firth__FetchBucket *fbs[BUCKETS];
        Firth__TablePath path = kit_path_of("default", "s");
        int32_t proj[1] = {0};
        for (int b = 0; b < BUCKETS; b++) {
            firth__fetch_bucket__init(&fb[b]);
            fb[b].partition_id = -1;
            fb[b].bucket = b;
            fb[b].fetch_offset = next[b];
            fb[b].max_bytes = 8192;
            fbs[b] = &fb[b];
        }
        ft.path = &path;
        ft.projection = proj;
        ft.n_projection = 1;
        ft.buckets = fbs;
        ft.n_buckets = BUCKETS;
        req.tables = fts;
        req.n_tables = 1;
        req.max_wait_ms = 500;
        req.min_bytes = 1;
        int32_t id = kit_send(&c, FR_RPC_FETCH_LOG, &req.base);
        fr_rpc_frame f;
        ProtobufCMessage *m = NULL;
        if (kit_next_frame(&c, &f, 30000) != 1 || f.request_id != id ||
            f.result != FR_RPC_SUCCESS ||
            fr_rpc_response_unpack(FR_RPC_FETCH_LOG, &f, &m, &err) < 0) {
            consumer_fail(co, "fetch failed", id, 0);
            break;
        }
        Firth__FetchLogResponse *r = (Firth__FetchLogResponse *)m;
        for (int b = 0; b < BUCKETS; b++) {
            Firth__FetchBucketResult *br = r->tables[0]->buckets[b];
            if (br->error) consumer_fail(co, "bucket error", b, br->error->code);
            read += take_records(co, ps, b, &br->records, &next[b]);
            if (br->next_offset != next[b]) consumer_fail(co, "next offset", br->next_offset, next[b]);
        }
        fr_rpc_free(m);
    }
    if (read != co->total) consumer_fail(co, "rows read", read, co->total);
    fr_schema_free(ps);
    fr_schema_free(full);
    kit_close(&c);
    return NULL;
}

static void test_concurrent(void **state)
{
    (void)state;
    const char *scale = getenv("FIRTH_STRESS_SCALE");
    if (scale && atoi(scale) > 0) batches_per_producer *= atoi(scale);
    seed = (unsigned)fr_now_ms();
    print_message("seed %u, %d producers x %d batches, %d consumers\n", seed, PRODUCERS,
                  batches_per_producer, CONSUMERS);
    kit_server_options(&ks, "server-stress");
    fr_error err = {0};
    KIT_CHECK(fr_server_options_set(&ks.opts, "log.flush", "append", &err), err);
    KIT_CHECK(fr_server_options_set(&ks.opts, "server.workers", "8", &err), err);
    kit_server_start(&ks);
    kit_conn c = kit_connect(fr_server_address(ks.srv));
    kit_sql(&c, "CREATE TABLE s (id BIGINT NOT NULL, name STRING, score DOUBLE) "
                "WITH ('bucket.num' = '4')");
    kit_close(&c);
    int64_t total = 0;
    for (int p = 0; p < PRODUCERS; p++)
        for (int s = 0; s < batches_per_producer; s++) total += rows_of(p, s);

    static producer prs[PRODUCERS];
    static consumer cos[CONSUMERS];
    pthread_t pt[PRODUCERS], ct[CONSUMERS];
    for (int i = 0; i < CONSUMERS; i++) {
        memset(&cos[i], 0, sizeof cos[i]);
        cos[i].total = total;
        cos[i].seen = fr_calloc((size_t)PRODUCERS * (size_t)batches_per_producer, sizeof(int64_t));
        pthread_create(&ct[i], NULL, consume_main, &cos[i]);
    }
    int64_t t0 = fr_monotonic_ns();
    for (int i = 0; i < PRODUCERS; i++) {
        memset(&prs[i], 0, sizeof prs[i]);
        prs[i].p = i;
        pthread_create(&pt[i], NULL, produce_main, &prs[i]);
    }
    for (int i = 0; i < PRODUCERS; i++) pthread_join(pt[i], NULL);
    for (int i = 0; i < CONSUMERS; i++) pthread_join(ct[i], NULL);
    print_message("%lld rows produced and read by %d consumers in %lld ms\n", (long long)total,
                  CONSUMERS, (long long)((fr_monotonic_ns() - t0) / 1000000));
    for (int i = 0; i < PRODUCERS; i++)
        if (atomic_load(&prs[i].failures)) fail_msg("producer %d: %s", i, prs[i].why);
    for (int i = 0; i < CONSUMERS; i++) {
        if (atomic_load(&cos[i].failures)) fail_msg("consumer %d: %s", i, cos[i].why);
        for (int p = 0; p < PRODUCERS; p++)
            for (int s = 0; s < batches_per_producer; s++)
                if (cos[i].seen[p * batches_per_producer + s] != rows_of(p, s))
                    fail_msg("consumer %d saw %lld rows of producer %d batch %d, not %d", i,
                             (long long)cos[i].seen[p * batches_per_producer + s], p, s,
                             rows_of(p, s));
        fr_free(cos[i].seen);
    }
    kit_server_stop(&ks);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_concurrent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
