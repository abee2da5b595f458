/* test_server_scale_slow.c — clients that stop reading their SQL results must not hold up
 * everyone else's SQL. An in-process server with server.sql.workers = 2 gets, on 4
 * connections whose receive windows are tiny and that never read, a query whose result
 * (about 16 MB) is far larger than the socket buffers: each statement's worker waits for a
 * part to be written that never drains. Another connection's SQL must still be answered
 * (within a generous 20 s; it came back in milliseconds once fixed), and, once the slow
 * connections close, the server must wind their statements down and keep serving.
 * Regression: the SQL pool had a fixed number of threads, each held by a statement waiting
 * for a slow reader, so as many non-reading clients as workers stopped all SQL. */
#include "server_testkit.h"

#include <time.h>

static kit_server ks;

enum { SLOW = 4, ROWS = 80000, NAME_BYTES = 200 };

static int setup(void **state)
{
    (void)state;
    kit_server_options(&ks, "server-scale-slow");
    fr_error err = {0};
    KIT_CHECK(fr_server_options_set(&ks.opts, "server.sql.workers", "2", &err), err);
    kit_server_start(&ks);
    kit_conn c = kit_connect(fr_server_address(ks.srv));
    kit_sql(&c, "CREATE TABLE big (id BIGINT NOT NULL, name STRING, score DOUBLE)");
    kit_close(&c);
    /* 80,000 rows of 200-byte names, appended behind the protocol's back: fast. */
    fr_table *t = NULL;
    KIT_CHECK(fr_engine_get_table(fr_server_engine(ks.srv), "default", "big", &t, &err), err);
    fr_schema *s = kit_schema();
    char name[NAME_BYTES];
    memset(name, 'n', sizeof name);
    for (int done = 0; done < ROWS; done += 10000) {
        fr_builder *bld = NULL;
        KIT_CHECK(fr_builder_new(s, &bld, &err), err);
        for (int i = 0; i < 10000; i++) {
            KIT_CHECK(fr_builder_append_i64(bld, 0, done + i, &err), err);
            KIT_CHECK(fr_builder_append_bytes(bld, 1, name, sizeof name, &err), err);
            KIT_CHECK(fr_builder_append_f64(bld, 2, i, &err), err);
        }
        fr_batch *b = NULL;
        KIT_CHECK(fr_builder_finish(bld, &b, &err), err);
        fr_builder_free(bld);
        int64_t n = 0;
        KIT_CHECK(fr_table_append(t, b, FR_NO_WRITER, -1, &n, &err), err);
        fr_batch_free(b);
    }
    fr_schema_free(s);
    fr_table_release(t);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    kit_server_stop(&ks);
    return 0;
}

/* A connection that will not read: a tiny receive buffer, set before connecting. */
static kit_conn slow_connect(const char *addr)
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

/* Sends SQL on c and waits up to timeout_ms for its final frame; returns the ms taken, or
 * fails the test saying what. */
static int64_t sql_within(kit_conn *c, const char *sql, int timeout_ms, const char *what)
{
    Firth__ExecuteSqlRequest req = FIRTH__EXECUTE_SQL_REQUEST__INIT;
    req.sql = (char *)sql;
    int64_t t0 = fr_monotonic_ns();
    int32_t id = kit_send(c, FR_RPC_EXECUTE_SQL, &req.base);
    for (;;) {
        fr_rpc_frame f;
        int left = timeout_ms - (int)((fr_monotonic_ns() - t0) / 1000000);
        int rc = left > 0 ? kit_next_frame(c, &f, left) : -1;
        if (rc != 1)
            fail_msg("%s: '%s' not answered within %d ms (%s)", what, sql, timeout_ms,
                     rc == 0 ? "connection closed" : "timeout");
        assert_int_equal(f.request_id, id);
        if (f.result == FR_RPC_ERROR) fail_msg("%s: '%s' failed", what, sql);
        if (f.result == FR_RPC_SUCCESS) return (fr_monotonic_ns() - t0) / 1000000;
    }
}

static void test_slow_readers_leave_sql_alone(void **state)
{
    (void)state;
    const char *addr = fr_server_address(ks.srv);
    kit_conn slow[SLOW];
    for (int i = 0; i < SLOW; i++) {
        slow[i] = slow_connect(addr);
        Firth__ExecuteSqlRequest req = FIRTH__EXECUTE_SQL_REQUEST__INIT;
        req.sql = "SELECT * FROM big";
        kit_send(&slow[i], FR_RPC_EXECUTE_SQL, &req.base);
    }
    /* Let their statements start and fill the sockets. */
    struct timespec ts = {.tv_nsec = 500 * 1000000};
    nanosleep(&ts, NULL);

    kit_conn other = kit_connect(addr);
    int64_t ms = sql_within(&other, "SELECT id FROM big WHERE id = 7", 20000,
                            "another connection's query while 4 readers stall");
    int64_t ms2 = sql_within(&other, "CREATE TABLE other (a BIGINT); SHOW TABLES", 20000,
                             "another connection's DDL while 4 readers stall");
    print_message("with %d connections not reading their results (%d SQL workers), another "
                  "connection's query took %lld ms, its DDL %lld ms\n", SLOW, 2, (long long)ms,
                  (long long)ms2);
    for (int i = 0; i < SLOW; i++) kit_close(&slow[i]);
    /* Their statements end with their connections; SQL goes on. */
    for (int i = 0; i < 3; i++)
        sql_within(&other, "SELECT id FROM big WHERE id < 3", 20000, "SQL after they closed");
    kit_close(&other);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_slow_readers_leave_sql_alone, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
