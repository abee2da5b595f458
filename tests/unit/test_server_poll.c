/* test_server_poll.c — long polling of fetch_log against an in-process server with the
 * default flush policy (an append is acknowledged after its fsync): a parked fetch answers
 * as soon as an append to one of its buckets is acknowledged (the latency from the
 * producer's acknowledgement to the consumer's receipt is measured and printed; the bound
 * asserted is loose, 100 ms, so that a loaded machine does not fail it), only appends to its
 * own buckets wake it, min_bytes keeps it waiting, max_wait_ms and server.fetch.wait.max end
 * the wait, many parked consumers wake together, and an upsert's changelog wakes a fetch of
 * a primary-key table. */
#include "server_testkit.h"

#include <stdlib.h>

static kit_server ks;

static int setup(void **state)
{
    (void)state;
    kit_server_options(&ks, "server-poll");
    fr_error err = {0};
    KIT_CHECK(fr_server_options_set(&ks.opts, "log.flush", "append", &err), err);
    KIT_CHECK(fr_server_options_set(&ks.opts, "server.fetch.wait.max", "2s", &err), err);
    kit_server_start(&ks);
    kit_conn c = kit_connect(fr_server_address(ks.srv));
    kit_sql(&c, "CREATE TABLE t (id BIGINT NOT NULL, name STRING, score DOUBLE) "
                "WITH ('bucket.num' = '2');"
                "CREATE TABLE u (id BIGINT NOT NULL, name STRING, score DOUBLE);"
                "CREATE TABLE kv (id BIGINT NOT NULL, name STRING, score DOUBLE, "
                "PRIMARY KEY (id) NOT ENFORCED)");
    kit_close(&c);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    kit_server_stop(&ks);
    return 0;
}

static int64_t end_of(const char *table, int bucket)
{
    fr_table *t = NULL;
    fr_error err = {0};
    KIT_CHECK(fr_engine_get_table(fr_server_engine(ks.srv), "default", table, &t, &err), err);
    int64_t end = fr_log_end_offset(fr_table_log(t, bucket));
    fr_table_release(t);
    return end;
}

typedef struct fetch_item {
    const char *table;
    int bucket;
    int64_t offset;
} fetch_item;

static int32_t send_fetch(kit_conn *c, const fetch_item *items, int n, int max_wait,
                          int min_bytes)
{
    Firth__FetchLogRequest req = FIRTH__FETCH_LOG_REQUEST__INIT;
    Firth__FetchTable ft[4];
    Firth__FetchTable *fts[4];
    Firth__FetchBucket fb[4];
    Firth__FetchBucket *fbs[4];
    Firth__TablePath path[4];
    assert_true(n <= 4);
    for (int i = 0; i < n; i++) {
        firth__fetch_table__init(&ft[i]);
        firth__fetch_bucket__init(&fb[i]);
        path[i] = kit_path_of("default", items[i].table);
        fb[i].partition_id = -1;
        fb[i].bucket = items[i].bucket;
        fb[i].fetch_offset = items[i].offset;
        fbs[i] = &fb[i];
        ft[i].path = &path[i];
        ft[i].buckets = &fbs[i];
        ft[i].n_buckets = 1;
        fts[i] = &ft[i];
    }
    req.tables = fts;
    req.n_tables = (size_t)n;
    req.max_wait_ms = max_wait;
    req.min_bytes = min_bytes;
    return kit_send(c, FR_RPC_FETCH_LOG, &req.base);
}

/* Appends rows [first, first + n) to bucket of table; returns when acknowledged. */
static void produce(kit_conn *c, const char *table, int bucket, int64_t first, int64_t n)
{
    fr_batch *b = kit_batch(first, n);
    fr_buf bytes;
    fr_buf_init(&bytes);
    kit_encode(b, 0, FR_NO_WRITER, -1, NULL, &bytes);
    fr_batch_free(b);
    Firth__ProduceLogRequest req = FIRTH__PRODUCE_LOG_REQUEST__INIT;
    Firth__TablePath path = kit_path_of("default", table);
    Firth__ProduceBucket pb = FIRTH__PRODUCE_BUCKET__INIT;
    Firth__ProduceBucket *pbs[1] = {&pb};
    pb.partition_id = -1;
    pb.bucket = bucket;
    pb.records.data = bytes.data;
    pb.records.len = bytes.len;
    req.path = &path;
    req.writer_id = -1;
    req.buckets = pbs;
    req.n_buckets = 1;
    Firth__ProduceLogResponse *r =
        (Firth__ProduceLogResponse *)kit_call(c, FR_RPC_PRODUCE_LOG, &req.base);
    assert_null(r->buckets[0]->error);
    fr_rpc_free(&r->base);
    fr_buf_free(&bytes);
}

/* Receives a fetch response (within timeout_ms, else fails) and returns the records of
 * every bucket together. */
static size_t recv_fetch(kit_conn *c, int32_t id, int timeout_ms)
{
    fr_rpc_frame f;
    int rc = kit_next_frame(c, &f, timeout_ms);
    if (rc != 1) fail_msg("no fetch response within %d ms", timeout_ms);
    assert_int_equal(f.request_id, id);
    ProtobufCMessage *m = NULL;
    fr_error err = {0};
    KIT_CHECK(fr_rpc_response_unpack(FR_RPC_FETCH_LOG, &f, &m, &err), err);
    assert_int_equal(f.result, FR_RPC_SUCCESS);
    Firth__FetchLogResponse *r = (Firth__FetchLogResponse *)m;
    size_t bytes = 0;
    for (size_t i = 0; i < r->n_tables; i++) {
        assert_null(r->tables[i]->error);
        for (size_t k = 0; k < r->tables[i]->n_buckets; k++) {
            assert_null(r->tables[i]->buckets[k]->error);
            bytes += r->tables[i]->buckets[k]->records.len;
        }
    }
    fr_rpc_free(m);
    return bytes;
}

/* Nothing arrives within ms. */
static void expect_quiet(kit_conn *c, int ms)
{
    fr_rpc_frame f;
    assert_int_equal(kit_next_frame(c, &f, ms), -1);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static void test_latency(void **state)
{
    (void)state;
    const char *addr = fr_server_address(ks.srv);
    kit_conn consumer = kit_connect(addr), producer = kit_connect(addr);
    enum { ROUNDS = 40 };
    int64_t lat_us[ROUNDS];
    int64_t next = end_of("t", 0);
    for (int i = 0; i < ROUNDS; i++) {
        fetch_item it = {"t", 0, next};
        int32_t id = send_fetch(&consumer, &it, 1, 10000, 1);
        usleep(20000); /* parked by now */
        produce(&producer, "t", 0, i, 1);
        int64_t ack = fr_monotonic_ns();
        size_t bytes = recv_fetch(&consumer, id, 5000);
        int64_t got = fr_monotonic_ns();
        assert_true(bytes > 0);
        lat_us[i] = (got - ack) / 1000;
        next++;
    }
    qsort(lat_us, ROUNDS, sizeof lat_us[0], cmp_i64);
    print_message("long polling, acknowledgement to receipt over %d rounds: median %lld us, "
                  "p90 %lld us, max %lld us\n", ROUNDS, (long long)lat_us[ROUNDS / 2],
                  (long long)lat_us[ROUNDS * 9 / 10], (long long)lat_us[ROUNDS - 1]);
    assert_true(lat_us[ROUNDS * 9 / 10] < 100000);
    assert_true(lat_us[ROUNDS - 1] < 1000000);
    kit_close(&consumer);
    kit_close(&producer);
}

static void test_wakes_only_its_buckets(void **state)
{
    (void)state;
    const char *addr = fr_server_address(ks.srv);
    kit_conn consumer = kit_connect(addr), producer = kit_connect(addr);
    fetch_item items[2] = {{"t", 0, end_of("t", 0)}, {"u", 0, end_of("u", 0)}};
    int32_t id = send_fetch(&consumer, items, 2, 10000, 1);
    usleep(20000);
    produce(&producer, "t", 1, 0, 3); /* another bucket of the same table */
    expect_quiet(&consumer, 150);
    produce(&producer, "u", 0, 0, 3); /* the second table of the fetch */
    assert_true(recv_fetch(&consumer, id, 2000) > 0);
    kit_close(&consumer);
    kit_close(&producer);
}

static void test_waits_end(void **state)
{
    (void)state;
    const char *addr = fr_server_address(ks.srv);
    kit_conn consumer = kit_connect(addr), producer = kit_connect(addr);
    /* Nothing comes: the answer comes at max_wait_ms, empty. */
    fetch_item it = {"t", 0, end_of("t", 0)};
    int64_t t0 = fr_monotonic_ns();
    int32_t id = send_fetch(&consumer, &it, 1, 200, 1);
    assert_int_equal(recv_fetch(&consumer, id, 3000), 0);
    int64_t waited = (fr_monotonic_ns() - t0) / 1000000;
    print_message("an empty fetch with max_wait_ms 200 answered after %lld ms\n",
                  (long long)waited);
    assert_true(waited >= 190 && waited < 2000);
    /* A longer wait than server.fetch.wait.max (2s) is cut to it. */
    t0 = fr_monotonic_ns();
    id = send_fetch(&consumer, &it, 1, 600000, 1);
    assert_int_equal(recv_fetch(&consumer, id, 10000), 0);
    waited = (fr_monotonic_ns() - t0) / 1000000;
    assert_true(waited >= 1900 && waited < 8000);
    /* min_bytes above what comes: the fetch waits for its deadline, then gives what is
     * there. */
    t0 = fr_monotonic_ns();
    id = send_fetch(&consumer, &it, 1, 400, 1 << 20);
    usleep(20000);
    produce(&producer, "t", 0, 0, 2);
    expect_quiet(&consumer, 100);
    assert_true(recv_fetch(&consumer, id, 3000) > 0);
    waited = (fr_monotonic_ns() - t0) / 1000000;
    assert_true(waited >= 380);
    /* min_bytes 0 never waits; data already there answers at once. */
    t0 = fr_monotonic_ns();
    it.offset = end_of("t", 0);
    id = send_fetch(&consumer, &it, 1, 5000, 0);
    assert_int_equal(recv_fetch(&consumer, id, 3000), 0);
    id = send_fetch(&consumer, &(fetch_item){"t", 0, 0}, 1, 5000, 1);
    assert_true(recv_fetch(&consumer, id, 3000) > 0);
    assert_true((fr_monotonic_ns() - t0) / 1000000 < 1000);
    kit_close(&consumer);
    kit_close(&producer);
}

static void test_many_consumers(void **state)
{
    (void)state;
    const char *addr = fr_server_address(ks.srv);
    enum { N = 50 };
    kit_conn consumers[N];
    int32_t ids[N];
    fetch_item it = {"u", 0, end_of("u", 0)};
    for (int i = 0; i < N; i++) {
        consumers[i] = kit_connect(addr);
        ids[i] = send_fetch(&consumers[i], &it, 1, 10000, 1);
    }
    usleep(50000);
    kit_conn producer = kit_connect(addr);
    produce(&producer, "u", 0, 0, 1);
    int64_t ack = fr_monotonic_ns();
    for (int i = 0; i < N; i++) assert_true(recv_fetch(&consumers[i], ids[i], 5000) > 0);
    print_message("%d parked consumers all received the record %lld us after its "
                  "acknowledgement\n", N, (long long)(fr_monotonic_ns() - ack) / 1000);
    for (int i = 0; i < N; i++) kit_close(&consumers[i]);
    kit_close(&producer);
}

static void test_changelog_wakes(void **state)
{
    (void)state;
    const char *addr = fr_server_address(ks.srv);
    kit_conn consumer = kit_connect(addr), writer = kit_connect(addr);
    fetch_item it = {"kv", 0, end_of("kv", 0)};
    int32_t id = send_fetch(&consumer, &it, 1, 10000, 1);
    usleep(20000);
    kit_sql(&writer, "INSERT INTO kv VALUES (1, 'a', 1.0)");
    assert_true(recv_fetch(&consumer, id, 3000) > 0);
    kit_close(&consumer);
    kit_close(&writer);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_latency, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wakes_only_its_buckets, setup, teardown),
        cmocka_unit_test_setup_teardown(test_waits_end, setup, teardown),
        cmocka_unit_test_setup_teardown(test_many_consumers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_changelog_wakes, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
