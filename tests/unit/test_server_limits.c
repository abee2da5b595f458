/* test_server_limits.c — the server under bad input and load limits, through real sockets:
 * bad frames (negative, short and oversized lengths, negative request ids, unknown apis and
 * versions, malformed protobuf, bodies that break the rules, a frame cut short) each get an
 * error or a closed connection and the server keeps serving; the connection limit; the
 * in-flight limit (a parked fetch holds a connection's only slot); a consumer that does not
 * read (the server stops reading its requests); SQL results streamed in small parts; and the
 * graceful shutdown (a parked fetch is answered, connections close, the engine is closed and
 * its data dir can be opened again). */
#include "server_testkit.h"

#include <pthread.h>

static void raw_header(uint8_t *p, int32_t length, int16_t api, int16_t version, int32_t id)
{
    uint32_t l = (uint32_t)length;
    p[0] = (uint8_t)(l >> 24);
    p[1] = (uint8_t)(l >> 16);
    p[2] = (uint8_t)(l >> 8);
    p[3] = (uint8_t)l;
    p[4] = (uint8_t)((uint16_t)api >> 8);
    p[5] = (uint8_t)api;
    p[6] = (uint8_t)((uint16_t)version >> 8);
    p[7] = (uint8_t)version;
    uint32_t i = (uint32_t)id;
    p[8] = (uint8_t)(i >> 24);
    p[9] = (uint8_t)(i >> 16);
    p[10] = (uint8_t)(i >> 8);
    p[11] = (uint8_t)i;
}

/* Sends raw bytes and expects an ERROR frame with request id and code, then (when closes)
 * the end of the connection. */
static void expect_error(const char *addr, const uint8_t *bytes, size_t n, int32_t id,
                         int code, bool closes)
{
    kit_conn c = kit_connect(addr);
    kit_write_all(c.fd, bytes, n);
    fr_rpc_frame f;
    assert_int_equal(kit_next_frame(&c, &f, 5000), 1);
    assert_int_equal(f.result, FR_RPC_ERROR);
    assert_int_equal(f.request_id, id);
    ProtobufCMessage *m = NULL;
    fr_error err = {0};
    KIT_CHECK(fr_rpc_response_unpack(FR_RPC_LIST_DATABASES, &f, &m, &err), err);
    Firth__Error *e = (Firth__Error *)m;
    if ((int)e->code != code)
        fail_msg("expected code %s, got %s: %s", fr_rpc_code_name(code),
                 fr_rpc_code_name(e->code), e->message);
    assert_true(strlen(e->message) > 0);
    fr_rpc_free(m);
    if (closes) {
        assert_int_equal(kit_next_frame(&c, &f, 5000), 0);
    } else { /* the connection still serves */
        Firth__ListDatabasesRequest ld = FIRTH__LIST_DATABASES_REQUEST__INIT;
        fr_rpc_free(kit_call(&c, FR_RPC_LIST_DATABASES, &ld.base));
    }
    kit_close(&c);
}

static int64_t metric(const char *http, const char *line_prefix)
{
    char *m = kit_http_get(http, "/metrics");
    char want[256];
    snprintf(want, sizeof want, "\n%s", line_prefix); /* a sample line, not a HELP line */
    const char *p = strstr(m, want);
    if (!p) fail_msg("metric %s not found", line_prefix);
    int64_t v = strtoll(p + strlen(want), NULL, 10);
    fr_free(m);
    return v;
}

static void test_bad_frames(void **state)
{
    (void)state;
    kit_server k;
    kit_server_options(&k, "server-bad");
    fr_error err = {0};
    KIT_CHECK(fr_server_options_set(&k.opts, "server.frame.bytes.max", "1mb", &err), err);
    kit_server_start(&k);
    const char *addr = fr_server_address(k.srv);
    uint8_t h[64];

    raw_header(h, -1, 4, 0, 1);
    expect_error(addr, h, 12, FR_RPC_CONNECTION_REQUEST_ID, FIRTH__ERROR_CODE__CORRUPT, true);
    raw_header(h, 4, 4, 0, 1);
    expect_error(addr, h, 12, FR_RPC_CONNECTION_REQUEST_ID, FIRTH__ERROR_CODE__CORRUPT, true);
    raw_header(h, 2 << 20, 4, 0, 1); /* over server.frame.bytes.max: refused before the body */
    expect_error(addr, h, 12, FR_RPC_CONNECTION_REQUEST_ID,
                 FIRTH__ERROR_CODE__LIMIT_EXCEEDED, true);
    raw_header(h, 8, 4, 0, -5);
    expect_error(addr, h, 12, FR_RPC_CONNECTION_REQUEST_ID, FIRTH__ERROR_CODE__CORRUPT, true);
    raw_header(h, 8, 77, 0, 3);
    expect_error(addr, h, 12, 3, FIRTH__ERROR_CODE__UNKNOWN_API, false);
    raw_header(h, 8, FR_RPC_LIST_DATABASES, 9, 4);
    expect_error(addr, h, 12, 4, FIRTH__ERROR_CODE__UNSUPPORTED_VERSION, false);
    raw_header(h, 8 + 3, FR_RPC_LIST_TABLES, 0, 5);
    memcpy(h + 12, "\xff\xff\xff", 3);
    expect_error(addr, h, 15, 5, FIRTH__ERROR_CODE__CORRUPT, false);
    raw_header(h, 8 + 2, FR_RPC_LIST_TABLES, 0, 6); /* field number 0 */
    memcpy(h + 12, "\x02\x00", 2);
    expect_error(addr, h, 14, 6, FIRTH__ERROR_CODE__CORRUPT, false);
    raw_header(h, 8, FR_RPC_PRODUCE_LOG, 0, 7); /* a produce that names no table */
    expect_error(addr, h, 12, 7, FIRTH__ERROR_CODE__INVALID, false);

    /* Half a frame, then the client goes away; and a frame that stops in its header. */
    kit_conn c = kit_connect(addr);
    raw_header(h, 100, FR_RPC_LIST_TABLES, 0, 8);
    kit_write_all(c.fd, h, 20);
    kit_close(&c);
    c = kit_connect(addr);
    kit_write_all(c.fd, h, 6);
    kit_close(&c);

    /* The server still serves, and counted the bad frames. */
    c = kit_connect(addr);
    Firth__ListDatabasesRequest ld = FIRTH__LIST_DATABASES_REQUEST__INIT;
    fr_rpc_free(kit_call(&c, FR_RPC_LIST_DATABASES, &ld.base));
    kit_close(&c);
    int64_t bad = metric(fr_server_http_address(k.srv), "firth_bad_frames_total ");
    assert_true(bad >= 7);
    kit_server_stop(&k);
}

static void test_connection_limit(void **state)
{
    (void)state;
    kit_server k;
    kit_server_options(&k, "server-conns");
    fr_error err = {0};
    KIT_CHECK(fr_server_options_set(&k.opts, "server.connections.max", "3", &err), err);
    kit_server_start(&k);
    const char *addr = fr_server_address(k.srv);
    kit_conn c[3];
    Firth__ListDatabasesRequest ld = FIRTH__LIST_DATABASES_REQUEST__INIT;
    for (int i = 0; i < 3; i++) {
        c[i] = kit_connect(addr);
        fr_rpc_free(kit_call(&c[i], FR_RPC_LIST_DATABASES, &ld.base));
    }
    /* The fourth is told why and closed. */
    kit_conn extra = kit_connect(addr);
    fr_rpc_frame f;
    assert_int_equal(kit_next_frame(&extra, &f, 5000), 1);
    assert_int_equal(f.request_id, FR_RPC_CONNECTION_REQUEST_ID);
    ProtobufCMessage *m = NULL;
    KIT_CHECK(fr_rpc_response_unpack(FR_RPC_LIST_DATABASES, &f, &m, &err), err);
    assert_int_equal(((Firth__Error *)m)->code, FIRTH__ERROR_CODE__LIMIT_EXCEEDED);
    assert_non_null(strstr(((Firth__Error *)m)->message, "server.connections.max"));
    fr_rpc_free(m);
    assert_int_equal(kit_next_frame(&extra, &f, 5000), 0);
    kit_close(&extra);
    assert_int_equal(metric(fr_server_http_address(k.srv), "firth_connections_refused_total "), 1);
    /* Once one closes, a new one is served (the close reaches the server a moment later). */
    kit_close(&c[0]);
    bool served = false;
    for (int attempt = 0; attempt < 100 && !served; attempt++) {
        kit_conn n = kit_connect(addr);
        kit_send(&n, FR_RPC_LIST_DATABASES, &ld.base);
        served = kit_next_frame(&n, &f, 5000) == 1 && f.request_id >= 0;
        kit_close(&n);
        if (!served) usleep(20000);
    }
    assert_true(served);
    kit_close(&c[1]);
    kit_close(&c[2]);
    kit_server_stop(&k);
}

/* A long-polling fetch of bucket 0 of default.t from offset 0. */
static int32_t send_parked_fetch(kit_conn *c, int max_wait_ms)
{
    Firth__FetchLogRequest req = FIRTH__FETCH_LOG_REQUEST__INIT;
    Firth__FetchTable ft = FIRTH__FETCH_TABLE__INIT;
    Firth__FetchTable *fts[1] = {&ft};
    Firth__FetchBucket fb = FIRTH__FETCH_BUCKET__INIT;
    Firth__FetchBucket *fbs[1] = {&fb};
    Firth__TablePath path = kit_path_of("default", "t");
    fb.partition_id = -1;
    ft.path = &path;
    ft.buckets = fbs;
    ft.n_buckets = 1;
    req.tables = fts;
    req.n_tables = 1;
    req.max_wait_ms = max_wait_ms;
    req.min_bytes = 1;
    return kit_send(c, FR_RPC_FETCH_LOG, &req.base);
}

static void test_inflight_limit(void **state)
{
    (void)state;
    for (int limit = 1; limit <= 4; limit += 3) {
        kit_server k;
        kit_server_options(&k, "server-inflight");
        fr_error err = {0};
        char v[8];
        snprintf(v, sizeof v, "%d", limit);
        KIT_CHECK(fr_server_options_set(&k.opts, "server.inflight.max", v, &err), err);
        kit_server_start(&k);
        kit_conn c = kit_connect(fr_server_address(k.srv));
        kit_sql(&c, "CREATE TABLE t (id BIGINT)");
        int64_t t0 = fr_monotonic_ns();
        int32_t fid = send_parked_fetch(&c, 400);
        Firth__ListDatabasesRequest ld = FIRTH__LIST_DATABASES_REQUEST__INIT;
        int32_t lid = kit_send(&c, FR_RPC_LIST_DATABASES, &ld.base);
        fr_rpc_frame f;
        assert_int_equal(kit_next_frame(&c, &f, 5000), 1);
        int32_t first = f.request_id;
        int64_t first_ms = (fr_monotonic_ns() - t0) / 1000000;
        assert_int_equal(kit_next_frame(&c, &f, 5000), 1);
        int32_t second = f.request_id;
        if (limit == 1) {
            /* The parked fetch holds the only slot: the next request waits for it. */
            assert_int_equal(first, fid);
            assert_int_equal(second, lid);
            assert_true(first_ms >= 300);
        } else {
            /* Other requests are answered while the fetch waits: out of order. */
            assert_int_equal(first, lid);
            assert_int_equal(second, fid);
            assert_true(first_ms < 300);
        }
        kit_close(&c);
        kit_server_stop(&k);
    }
}

/* A table of about `bytes` bytes in bucket 0 of default.big, in incompressible batches. */
static void fill_big(kit_conn *c, int batches, int rows_per_batch)
{
    kit_sql(c, "CREATE TABLE big (id BIGINT NOT NULL, name STRING, score DOUBLE)");
    fr_schema *s = kit_schema();
    fr_error err = {0};
    uint64_t x = 88172645463325252ull;
    for (int b = 0; b < batches; b++) {
        fr_builder *bld = NULL;
        KIT_CHECK(fr_builder_new(s, &bld, &err), err);
        for (int r = 0; r < rows_per_batch; r++) {
            char name[100];
            for (size_t i = 0; i < sizeof name; i++) {
                x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                name[i] = (char)(33 + x % 90);
            }
            KIT_CHECK(fr_builder_append_i64(bld, 0, (int64_t)b * rows_per_batch + r, &err), err);
            KIT_CHECK(fr_builder_append_bytes(bld, 1, name, sizeof name, &err), err);
            KIT_CHECK(fr_builder_append_f64(bld, 2, r, &err), err);
        }
        fr_batch *batch = NULL;
        KIT_CHECK(fr_builder_finish(bld, &batch, &err), err);
        fr_builder_free(bld);
        fr_buf bytes;
        fr_buf_init(&bytes);
        kit_encode(batch, 0, FR_NO_WRITER, -1, NULL, &bytes);
        fr_batch_free(batch);
        Firth__ProduceLogRequest req = FIRTH__PRODUCE_LOG_REQUEST__INIT;
        Firth__TablePath path = kit_path_of("default", "big");
        Firth__ProduceBucket pb = FIRTH__PRODUCE_BUCKET__INIT;
        Firth__ProduceBucket *pbs[1] = {&pb};
        pb.partition_id = -1;
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
    fr_schema_free(s);
}

static void test_slow_consumer(void **state)
{
    (void)state;
    kit_server k;
    kit_server_options(&k, "server-slow");
    fr_error err = {0};
    KIT_CHECK(fr_server_options_set(&k.opts, "server.inflight.max", "2", &err), err);
    KIT_CHECK(fr_server_options_set(&k.opts, "server.connection.write.bytes.max", "64kb", &err),
              err);
    kit_server_start(&k);
    kit_conn c = kit_connect(fr_server_address(k.srv));
    fill_big(&c, 8, 1000); /* about 8 x 80 KB */
    /* 200 fetches of the whole bucket (~700 KB each, 140 MB in all), not read. */
    enum { N = 200 };
    Firth__FetchLogRequest req = FIRTH__FETCH_LOG_REQUEST__INIT;
    Firth__FetchTable ft = FIRTH__FETCH_TABLE__INIT;
    Firth__FetchTable *fts[1] = {&ft};
    Firth__FetchBucket fb = FIRTH__FETCH_BUCKET__INIT;
    Firth__FetchBucket *fbs[1] = {&fb};
    Firth__TablePath path = kit_path_of("default", "big");
    fb.partition_id = -1;
    fb.max_bytes = 4 << 20;
    ft.path = &path;
    ft.buckets = fbs;
    ft.n_buckets = 1;
    req.tables = fts;
    req.n_tables = 1;
    int32_t first_id = c.next_id;
    for (int i = 0; i < N; i++) kit_send(&c, FR_RPC_FETCH_LOG, &req.base);
    usleep(500000);
    int64_t answered = metric(fr_server_http_address(k.srv), "firth_requests_total{api=\"fetch_log\"} ");
    print_message("fetches answered while the client did not read: %lld of %d\n",
                  (long long)answered, N);
    /* What the kernel's socket buffers hold, plus the write queue and the two in flight. */
    assert_true(answered < N / 2);
    /* Reading now drains everything, in order of completion, nothing lost. */
    bool seen[N + 2] = {0};
    for (int i = 0; i < N; i++) {
        int32_t id = -2;
        fr_rpc_result result;
        ProtobufCMessage *m = kit_recv(&c, FR_RPC_FETCH_LOG, &result, &id);
        assert_int_equal(result, FR_RPC_SUCCESS);
        Firth__FetchLogResponse *r = (Firth__FetchLogResponse *)m;
        assert_int_equal(r->tables[0]->buckets[0]->next_offset, 8000);
        id -= first_id;
        assert_true(id >= 0 && id < N && !seen[id]);
        seen[id] = true;
        fr_rpc_free(m);
    }
    kit_close(&c);
    kit_server_stop(&k);
}

static void test_sql_parts(void **state)
{
    (void)state;
    kit_server k;
    kit_server_options(&k, "server-sqlparts");
    fr_error err = {0};
    KIT_CHECK(fr_server_options_set(&k.opts, "server.sql.part.bytes", "4kb", &err), err);
    kit_server_start(&k);
    kit_conn c = kit_connect(fr_server_address(k.srv));
    fill_big(&c, 12, 100);
    Firth__ExecuteSqlRequest req = FIRTH__EXECUTE_SQL_REQUEST__INIT;
    req.sql = "SELECT id, name FROM big";
    int32_t id = kit_send(&c, FR_RPC_EXECUTE_SQL, &req.base);
    int parts = 0;
    int64_t rows = 0;
    fr_buf ipc;
    fr_buf_init(&ipc);
    for (;;) {
        fr_rpc_result result;
        int32_t got;
        ProtobufCMessage *m = kit_recv(&c, FR_RPC_EXECUTE_SQL, &result, &got);
        assert_int_equal(got, id);
        assert_int_not_equal(result, FR_RPC_ERROR);
        Firth__ExecuteSqlResponse *r = (Firth__ExecuteSqlResponse *)m;
        rows += r->rows;
        KIT_CHECK(fr_buf_append(&ipc, r->arrow_ipc.data, r->arrow_ipc.len, &err), err);
        fr_rpc_free(m);
        if (result == FR_RPC_SUCCESS) break;
        parts++;
        usleep(1000); /* a slow reader */
    }
    assert_int_equal(rows, 1200);
    assert_true(parts >= 10);
    /* The pieces laid end to end are one Arrow IPC stream ending with the EOS marker. */
    assert_true(ipc.len > 8);
    assert_memory_equal(ipc.data + ipc.len - 8, "\xff\xff\xff\xff\x00\x00\x00\x00", 8);
    fr_buf_free(&ipc);
    kit_close(&c);
    kit_server_stop(&k);
}

static void test_shutdown(void **state)
{
    (void)state;
    kit_server k;
    kit_server_options(&k, "server-stop");
    kit_server_start(&k);
    const char *addr = fr_server_address(k.srv);
    kit_conn a = kit_connect(addr), idle = kit_connect(addr);
    kit_sql(&a, "CREATE TABLE t (id BIGINT); INSERT INTO t VALUES (1), (2), (3)");
    /* A fetch parked at the end with a long wait, then the shutdown. */
    Firth__FetchLogRequest req = FIRTH__FETCH_LOG_REQUEST__INIT;
    Firth__FetchTable ft = FIRTH__FETCH_TABLE__INIT;
    Firth__FetchTable *fts[1] = {&ft};
    Firth__FetchBucket fb = FIRTH__FETCH_BUCKET__INIT;
    Firth__FetchBucket *fbs[1] = {&fb};
    Firth__TablePath path = kit_path_of("default", "t");
    fb.partition_id = -1;
    fb.fetch_offset = 3;
    ft.path = &path;
    ft.buckets = fbs;
    ft.n_buckets = 1;
    req.tables = fts;
    req.n_tables = 1;
    req.max_wait_ms = 60000;
    req.min_bytes = 1;
    int32_t fid = kit_send(&a, FR_RPC_FETCH_LOG, &req.base);
    usleep(100000);
    int64_t t0 = fr_monotonic_ns();
    fr_server_shutdown(k.srv);
    fr_rpc_result result;
    int32_t got = -2;
    Firth__FetchLogResponse *r =
        (Firth__FetchLogResponse *)kit_recv(&a, FR_RPC_FETCH_LOG, &result, &got);
    assert_int_equal(got, fid);
    assert_int_equal(result, FR_RPC_SUCCESS);
    assert_int_equal(r->tables[0]->buckets[0]->records.len, 0);
    assert_int_equal(r->tables[0]->buckets[0]->next_offset, 3);
    fr_rpc_free(&r->base);
    assert_true((fr_monotonic_ns() - t0) / 1000000 < 5000);
    fr_rpc_frame f;
    assert_int_equal(kit_next_frame(&a, &f, 5000), 0);    /* then closed */
    assert_int_equal(kit_next_frame(&idle, &f, 5000), 0); /* idle ones too */
    fr_error err = {0};
    assert_int_equal(fr_server_wait(k.srv, &err), 0);
    /* Nothing listens anymore, and the data dir is free and whole. */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    char host[64];
    int port = 0;
    KIT_CHECK(fr_server_parse_address(addr, host, sizeof host, &port, &err), err);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, host, &sa.sin_addr);
    assert_int_not_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    close(fd);
    kit_close(&a);
    kit_close(&idle);
    fr_server_free(k.srv);
    k.srv = NULL;
    fr_engine *e = kit_open(k.dir);
    fr_table *t = kit_table(e, "default", "t");
    assert_int_equal(fr_log_end_offset(fr_table_log(t, 0)), 3);
    fr_table_release(t);
    fr_engine_close(e);
    fr_server_options_free(&k.opts);
    kit_rmdir(k.dir);
}

/* A request read but not started when the shutdown begins is answered SHUTTING_DOWN. */
static void test_shutdown_pending(void **state)
{
    (void)state;
    kit_server k;
    kit_server_options(&k, "server-stop2");
    fr_error err = {0};
    KIT_CHECK(fr_server_options_set(&k.opts, "server.inflight.max", "1", &err), err);
    kit_server_start(&k);
    kit_conn c = kit_connect(fr_server_address(k.srv));
    kit_sql(&c, "CREATE TABLE t (id BIGINT)");
    /* The fetch takes the only slot; the list_databases behind it, sent in the same write,
     * waits in the server's frame reader. */
    Firth__FetchLogRequest req = FIRTH__FETCH_LOG_REQUEST__INIT;
    Firth__FetchTable ft = FIRTH__FETCH_TABLE__INIT;
    Firth__FetchTable *fts[1] = {&ft};
    Firth__FetchBucket fb = FIRTH__FETCH_BUCKET__INIT;
    Firth__FetchBucket *fbs[1] = {&fb};
    Firth__TablePath path = kit_path_of("default", "t");
    fb.partition_id = -1;
    ft.path = &path;
    ft.buckets = fbs;
    ft.n_buckets = 1;
    req.tables = fts;
    req.n_tables = 1;
    req.max_wait_ms = 60000;
    req.min_bytes = 1;
    Firth__ListDatabasesRequest ld = FIRTH__LIST_DATABASES_REQUEST__INIT;
    fr_buf both;
    fr_buf_init(&both);
    KIT_CHECK(fr_rpc_write_request(&both, FR_RPC_FETCH_LOG, 0, 100, &req.base, 1 << 20, &err),
              err);
    KIT_CHECK(fr_rpc_write_request(&both, FR_RPC_LIST_DATABASES, 0, 101, &ld.base, 1 << 20,
                                   &err),
              err);
    kit_write_all(c.fd, both.data, both.len);
    fr_buf_free(&both);
    usleep(200000);
    fr_server_shutdown(k.srv);
    bool fetch_answered = false, list_refused = false;
    fr_rpc_frame f;
    while (kit_next_frame(&c, &f, 5000) == 1) {
        if (f.request_id == 100) {
            assert_int_equal(f.result, FR_RPC_SUCCESS);
            fetch_answered = true;
        } else {
            assert_int_equal(f.request_id, 101);
            assert_int_equal(f.result, FR_RPC_ERROR);
            ProtobufCMessage *m = NULL;
            KIT_CHECK(fr_rpc_response_unpack(FR_RPC_LIST_DATABASES, &f, &m, &err), err);
            assert_int_equal(((Firth__Error *)m)->code, FIRTH__ERROR_CODE__SHUTTING_DOWN);
            fr_rpc_free(m);
            list_refused = true;
        }
    }
    assert_true(fetch_answered);
    assert_true(list_refused);
    kit_close(&c);
    kit_server_stop(&k);
}

/* Request bytes in flight over all connections: past server.inflight.bytes.max a connection
 * that has requests in flight starts no more until the bytes fall, while a connection with
 * nothing in flight still gets one through. */
static void test_inflight_bytes(void **state)
{
    (void)state;
    kit_server k;
    kit_server_options(&k, "server-bytes");
    fr_error err = {0};
    KIT_CHECK(fr_server_options_set(&k.opts, "server.inflight.bytes.max", "1mb", &err), err);
    kit_server_start(&k);
    kit_conn a = kit_connect(fr_server_address(k.srv)), b = kit_connect(fr_server_address(k.srv));
    kit_sql(&a, "CREATE TABLE t (id BIGINT)");
    /* A parked fetch whose filter is 1.5 MB long (mostly blanks). */
    size_t n = (size_t)3 << 19;
    char *filter = fr_malloc(n + 1);
    memset(filter, ' ', n);
    memcpy(filter, "id >= 0", 7);
    filter[n] = '\0';
    Firth__FetchLogRequest req = FIRTH__FETCH_LOG_REQUEST__INIT;
    Firth__FetchTable ft = FIRTH__FETCH_TABLE__INIT;
    Firth__FetchTable *fts[1] = {&ft};
    Firth__FetchBucket fb = FIRTH__FETCH_BUCKET__INIT;
    Firth__FetchBucket *fbs[1] = {&fb};
    Firth__TablePath path = kit_path_of("default", "t");
    fb.partition_id = -1;
    ft.path = &path;
    ft.filter = filter;
    ft.buckets = fbs;
    ft.n_buckets = 1;
    req.tables = fts;
    req.n_tables = 1;
    req.max_wait_ms = 400;
    req.min_bytes = 1;
    int64_t t0 = fr_monotonic_ns();
    int32_t fetch_id = kit_send(&a, FR_RPC_FETCH_LOG, &req.base);
    usleep(100000);
    /* Behind it on the same connection: waits for the bytes to fall. */
    Firth__ListDatabasesRequest ld = FIRTH__LIST_DATABASES_REQUEST__INIT;
    int32_t list_id = kit_send(&a, FR_RPC_LIST_DATABASES, &ld.base);
    /* Another connection, nothing in flight: answered at once. */
    fr_rpc_free(kit_call(&b, FR_RPC_LIST_DATABASES, &ld.base));
    int64_t other = (fr_monotonic_ns() - t0) / 1000000;
    fr_rpc_frame f;
    assert_int_equal(kit_next_frame(&a, &f, 5000), 1);
    assert_int_equal(f.request_id, fetch_id);
    assert_int_equal(f.result, FR_RPC_SUCCESS);
    assert_int_equal(kit_next_frame(&a, &f, 5000), 1);
    assert_int_equal(f.request_id, list_id);
    int64_t behind = (fr_monotonic_ns() - t0) / 1000000;
    print_message("with 1.5 MB in flight (limit 1 MB): another connection's request answered "
                  "after %lld ms, the same connection's after %lld ms\n", (long long)other,
                  (long long)behind);
    assert_true(other < 300);
    assert_true(behind >= 300);
    fr_free(filter);
    kit_close(&a);
    kit_close(&b);
    kit_server_stop(&k);
}

/* A connection whose receive window is tiny and that never reads. */
static kit_conn non_reader_connect(const char *addr)
{
    char host[256];
    int port = 0;
    fr_error err = {0};
    KIT_CHECK(fr_server_parse_address(addr, host, sizeof host, &port, &err), err);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    int small = 4096;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    assert_int_equal(inet_pton(AF_INET, host, &sa.sin_addr), 1);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0)
        fail_msg("connect %s: %s", addr, strerror(errno));
    kit_conn c = {.fd = fd, .next_id = 1};
    KIT_CHECK(fr_rpc_reader_new(FR_RPC_RESPONSE, FR_RPC_FRAME_BYTES_MAX_DEFAULT, &c.r, &err),
              err);
    return c;
}

/* Regression: a client that sends a 1.2 MB statement (a SELECT and a long comment) whose
 * large result it never reads keeps its request in flight for ever, above
 * server.inflight.bytes.max (1 MB). The server stopped reading every connection then, new
 * ones included; a connection with nothing in flight must still be served. */
static void test_inflight_bytes_stuck(void **state)
{
    (void)state;
    kit_server k;
    kit_server_options(&k, "server-bytes-stuck");
    fr_error err = {0};
    KIT_CHECK(fr_server_options_set(&k.opts, "server.inflight.bytes.max", "1mb", &err), err);
    kit_server_start(&k);
    const char *addr = fr_server_address(k.srv);
    kit_conn c = kit_connect(addr);
    fill_big(&c, 10, 10000); /* about 10 MB: more than the socket buffers hold */
    size_t n = (size_t)12 << 17; /* 1.5 MiB */
    char *sql = fr_malloc(n + 1);
    memset(sql, 'x', n);
    const char *head = "SELECT * FROM big -- ";
    memcpy(sql, head, strlen(head));
    sql[n] = '\0';
    kit_conn stuck = non_reader_connect(addr);
    Firth__ExecuteSqlRequest req = FIRTH__EXECUTE_SQL_REQUEST__INIT;
    req.sql = sql;
    kit_send(&stuck, FR_RPC_EXECUTE_SQL, &req.base);
    usleep(500000); /* its statement runs, fills the socket and waits */
    for (int i = 0; i < 2; i++) {
        /* A new connection, and the old one with nothing in flight: both served. */
        kit_conn fresh = kit_connect(addr);
        kit_conn *who[2] = {&fresh, &c};
        for (int w = 0; w < 2; w++) {
            Firth__ListDatabasesRequest ld = FIRTH__LIST_DATABASES_REQUEST__INIT;
            int64_t t0 = fr_monotonic_ns();
            kit_send(who[w], FR_RPC_LIST_DATABASES, &ld.base);
            fr_rpc_frame f;
            if (kit_next_frame(who[w], &f, 10000) != 1)
                fail_msg("a %s connection got no answer in 10 s while another holds 1.5 MB of "
                         "requests in flight (limit 1 MB)", w == 0 ? "new" : "idle");
            assert_int_equal(f.result, FR_RPC_SUCCESS);
            print_message("%s connection answered in %lld ms\n", w == 0 ? "a new" : "an idle",
                          (long long)((fr_monotonic_ns() - t0) / 1000000));
        }
        kit_sql(&fresh, "SELECT id FROM big WHERE id = 7");
        kit_close(&fresh);
    }
    kit_close(&stuck);
    fr_free(sql);
    kit_close(&c);
    kit_server_stop(&k);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_frames),
        cmocka_unit_test(test_connection_limit),
        cmocka_unit_test(test_inflight_limit),
        cmocka_unit_test(test_inflight_bytes),
        cmocka_unit_test(test_inflight_bytes_stuck),
        cmocka_unit_test(test_slow_consumer),
        cmocka_unit_test(test_sql_parts),
        cmocka_unit_test(test_shutdown),
        cmocka_unit_test(test_shutdown_pending),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
