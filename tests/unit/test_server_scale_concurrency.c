/* test_server_scale_concurrency.c — no global lock on the server's data path, shown against an
 * in-process server (real sockets, log.flush = append: an append is acknowledged after its
 * fsync) whose fdatasync this program interposes: it defines fdatasync, which the log module
 * calls, so it can hold the fsync of chosen segment files at a gate, slow every fsync down,
 * and count how many run at once. Shown deterministically, without timing assertions:
 *   - while the fsync of bucket 0 is held, appends to the table's other buckets are
 *     acknowledged, a fetch of bucket 0 is answered at once (and does not see the batch not
 *     yet durable), and a long-poll fetch waiting on bucket 0 is woken by the held append
 *     once its fsync is let go;
 *   - group commit: appends to one bucket that arrive while its fsync runs share the next
 *     one (8 appends, at most 2 fsyncs);
 *   - with every fsync slowed to 20 ms, fsyncs of different buckets run at the same time
 *     (the most seen at once is printed; at least 2 required), and one bucket's fsyncs are
 *     shared by its concurrent producers; throughput of 8 producers on 1 bucket and on 4
 *     buckets is printed, not asserted;
 *   - more parked long-poll fetches than the server has workers leave appends unhindered;
 *   - no lost wake-ups: records appended one at a time, each a random few microseconds after
 *     its bucket's consumers sent their next long poll, reach every consumer long before the
 *     poll's deadline (30 s; 10 s allowed).
 * The gate matches the segment files of one bucket by path: DATA/log/<table id>/b<n>/. */
#include "server_testkit.h"

#include <pthread.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <time.h>

static kit_server ks;

/* ---- the interposed fdatasync ----------------------------------------------------------- */

static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static char gate_match[128];     /* "/log/<id>/b<n>/": held while gate_closed */
static bool gate_closed;
static int gate_waiting;         /* fsyncs held at the gate now */
static atomic_int slow_ms;       /* added to every segment fsync while > 0 */
static atomic_int syncs_now;     /* segment fsyncs running */
static int bucket_syncs[64];     /* of each bucket (gate_mu), by the bucket in the path */
static int max_buckets_at_once;  /* the most distinct buckets seen in fsync at once */
static atomic_long segment_syncs;

static int bucket_of_path(const char *path)
{
    const char *b = strstr(path, "/b");
    int bucket = -1;
    for (; b; b = strstr(b + 1, "/b"))
        if (b[2] >= '0' && b[2] <= '9') bucket = (int)strtol(b + 2, NULL, 10);
    return bucket >= 0 && bucket < 64 ? bucket : -1;
}

int fdatasync(int fd)
{
    char link[64], path[1024];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    path[n > 0 ? n : 0] = '\0';
    bool segment = n > 4 && strcmp(path + n - 4, ".log") == 0;
    if (!segment) return (int)syscall(SYS_fdatasync, fd);
    int bucket = bucket_of_path(path);
    atomic_fetch_add(&segment_syncs, 1);
    pthread_mutex_lock(&gate_mu);
    if (bucket >= 0) {
        bucket_syncs[bucket]++;
        int distinct = 0;
        for (int i = 0; i < 64; i++) distinct += bucket_syncs[i] > 0;
        if (distinct > max_buckets_at_once) max_buckets_at_once = distinct;
    }
    while (gate_closed && gate_match[0] && strstr(path, gate_match)) {
        gate_waiting++;
        pthread_cond_broadcast(&gate_cv);
        pthread_cond_wait(&gate_cv, &gate_mu);
        gate_waiting--;
    }
    pthread_mutex_unlock(&gate_mu);
    atomic_fetch_add(&syncs_now, 1);
    int ms = atomic_load(&slow_ms);
    if (ms > 0) usleep((useconds_t)ms * 1000);
    int rc = (int)syscall(SYS_fdatasync, fd);
    atomic_fetch_sub(&syncs_now, 1);
    pthread_mutex_lock(&gate_mu);
    if (bucket >= 0) bucket_syncs[bucket]--;
    pthread_mutex_unlock(&gate_mu);
    return rc;
}

static int64_t table_id(const char *table)
{
    fr_table *t = NULL;
    fr_error err = {0};
    KIT_CHECK(fr_engine_get_table(fr_server_engine(ks.srv), "default", table, &t, &err), err);
    int64_t id = fr_table_id(t);
    fr_table_release(t);
    return id;
}

static int64_t fsyncs_of(const char *table, int bucket)
{
    fr_table *t = NULL;
    fr_error err = {0};
    KIT_CHECK(fr_engine_get_table(fr_server_engine(ks.srv), "default", table, &t, &err), err);
    int64_t n = fr_log_fsync_count(fr_table_log(t, bucket));
    fr_table_release(t);
    return n;
}

static void gate_close(const char *table, int bucket)
{
    pthread_mutex_lock(&gate_mu);
    snprintf(gate_match, sizeof gate_match, "/log/%lld/b%d/", (long long)table_id(table),
             bucket);
    gate_closed = true;
    pthread_mutex_unlock(&gate_mu);
}

static void gate_open(void)
{
    pthread_mutex_lock(&gate_mu);
    gate_closed = false;
    pthread_cond_broadcast(&gate_cv);
    pthread_mutex_unlock(&gate_mu);
}

/* Waits until n fsyncs are held at the gate (10 s at most). */
static void gate_wait_for(int n)
{
    pthread_mutex_lock(&gate_mu);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 10;
    while (gate_waiting < n)
        if (pthread_cond_timedwait(&gate_cv, &gate_mu, &ts) != 0) break;
    int got = gate_waiting;
    pthread_mutex_unlock(&gate_mu);
    if (got < n) fail_msg("%d fsyncs held at the gate after 10 s, expected %d", got, n);
}

/* ---- requests --------------------------------------------------------------------------- */

/* Sends one batch of rows [first, first + n) to bucket of table; returns the request id. */
static int32_t send_produce(kit_conn *c, const char *table, int bucket, int64_t first,
                            int64_t n, size_t *bytes_out)
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
    int32_t id = kit_send(c, FR_RPC_PRODUCE_LOG, &req.base);
    if (bytes_out) *bytes_out = bytes.len;
    fr_buf_free(&bytes);
    return id;
}

/* Receives a produce response within timeout_ms: its base offset, or a negative code (-1000
 * when nothing came). Safe in any thread: it reports instead of failing the test. */
static int64_t recv_produce(kit_conn *c, int32_t id, int timeout_ms, char *why, size_t cap)
{
    fr_rpc_frame f;
    int rc = kit_next_frame(c, &f, timeout_ms);
    if (rc != 1) {
        snprintf(why, cap, "%s", rc == 0 ? "the connection closed" : "no answer in time");
        return -1000;
    }
    ProtobufCMessage *m = NULL;
    fr_error err = {0};
    if (f.request_id != id || fr_rpc_response_unpack(FR_RPC_PRODUCE_LOG, &f, &m, &err) < 0) {
        snprintf(why, cap, "a bad response (id %d for %d): %.150s", f.request_id, id, err.msg);
        return -1001;
    }
    int64_t out;
    if (f.result != FR_RPC_SUCCESS) {
        snprintf(why, cap, "error: %s", ((Firth__Error *)m)->message);
        out = -1002;
    } else {
        Firth__ProduceLogResponse *r = (Firth__ProduceLogResponse *)m;
        if (r->n_buckets != 1 || r->buckets[0]->error) {
            snprintf(why, cap, "bucket error: %s",
                     r->n_buckets == 1 ? r->buckets[0]->error->message : "no bucket result");
            out = -1003;
        } else {
            out = r->buckets[0]->base_offset;
        }
    }
    fr_rpc_free(m);
    return out;
}

static int64_t produce(kit_conn *c, const char *table, int bucket, int64_t first, int64_t n)
{
    int32_t id = send_produce(c, table, bucket, first, n, NULL);
    char why[256] = "";
    int64_t base = recv_produce(c, id, 20000, why, sizeof why);
    if (base < 0) fail_msg("produce to %s bucket %d: %s", table, bucket, why);
    return base;
}

static int32_t send_fetch(kit_conn *c, const char *table, int bucket, int64_t offset,
                          int max_wait, int min_bytes)
{
    Firth__FetchLogRequest req = FIRTH__FETCH_LOG_REQUEST__INIT;
    Firth__FetchTable ft = FIRTH__FETCH_TABLE__INIT;
    Firth__FetchTable *fts[1] = {&ft};
    Firth__FetchBucket fb = FIRTH__FETCH_BUCKET__INIT;
    Firth__FetchBucket *fbs[1] = {&fb};
    Firth__TablePath path = kit_path_of("default", table);
    fb.partition_id = -1;
    fb.bucket = bucket;
    fb.fetch_offset = offset;
    ft.path = &path;
    ft.buckets = fbs;
    ft.n_buckets = 1;
    req.tables = fts;
    req.n_tables = 1;
    req.max_wait_ms = max_wait;
    req.min_bytes = min_bytes;
    return kit_send(c, FR_RPC_FETCH_LOG, &req.base);
}

/* A fetch response for id within timeout_ms (fails the test otherwise): the bucket's
 * records bytes and its high watermark. */
static size_t recv_fetch(kit_conn *c, int32_t id, int timeout_ms, int64_t *high_watermark)
{
    fr_rpc_frame f;
    int rc = kit_next_frame(c, &f, timeout_ms);
    if (rc != 1) fail_msg("no fetch response within %d ms (%s)", timeout_ms,
                          rc == 0 ? "closed" : "timeout");
    assert_int_equal(f.request_id, id);
    ProtobufCMessage *m = NULL;
    fr_error err = {0};
    KIT_CHECK(fr_rpc_response_unpack(FR_RPC_FETCH_LOG, &f, &m, &err), err);
    assert_int_equal(f.result, FR_RPC_SUCCESS);
    Firth__FetchLogResponse *r = (Firth__FetchLogResponse *)m;
    assert_int_equal(r->n_tables, 1);
    assert_null(r->tables[0]->error);
    assert_int_equal(r->tables[0]->n_buckets, 1);
    Firth__FetchBucketResult *b = r->tables[0]->buckets[0];
    if (b->error) fail_msg("fetch: %s", b->error->message);
    size_t bytes = b->records.len;
    if (high_watermark) *high_watermark = b->high_watermark;
    fr_rpc_free(m);
    return bytes;
}

/* Nothing arrives on c within ms. */
static void expect_quiet(kit_conn *c, int ms, const char *what)
{
    fr_rpc_frame f;
    if (kit_next_frame(c, &f, ms) != -1) fail_msg("%s: a response arrived too early", what);
}

/* ---- setup ------------------------------------------------------------------------------ */

static int setup(void **state)
{
    (void)state;
    kit_server_options(&ks, "server-scale-concurrency");
    fr_error err = {0};
    KIT_CHECK(fr_server_options_set(&ks.opts, "log.flush", "append", &err), err);
    KIT_CHECK(fr_server_options_set(&ks.opts, "server.workers", "16", &err), err);
    kit_server_start(&ks);
    kit_conn c = kit_connect(fr_server_address(ks.srv));
    kit_sql(&c, "CREATE TABLE par (id BIGINT NOT NULL, name STRING, score DOUBLE) "
                "WITH ('bucket.num' = '4');"
                "CREATE TABLE grp (id BIGINT NOT NULL, name STRING, score DOUBLE);"
                "CREATE TABLE fe (id BIGINT NOT NULL, name STRING, score DOUBLE);"
                "CREATE TABLE one (id BIGINT NOT NULL, name STRING, score DOUBLE);"
                "CREATE TABLE four (id BIGINT NOT NULL, name STRING, score DOUBLE) "
                "WITH ('bucket.num' = '4')");
    kit_close(&c);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    gate_open();
    atomic_store(&slow_ms, 0);
    kit_server_stop(&ks);
    return 0;
}

/* ---- the tests -------------------------------------------------------------------------- */

static void test_held_fsync_blocks_only_its_bucket(void **state)
{
    (void)state;
    const char *addr = fr_server_address(ks.srv);
    kit_conn held = kit_connect(addr), other = kit_connect(addr), reader = kit_connect(addr),
             poller = kit_connect(addr);
    produce(&other, "par", 0, 0, 5); /* offsets 0..4, durable */
    gate_close("par", 0);
    int32_t held_id = send_produce(&held, "par", 0, 100, 3, NULL);
    gate_wait_for(1);
    /* A long poll waiting for bucket 0's next record. */
    int32_t poll_id = send_fetch(&poller, "par", 0, 5, 30000, 1);

    /* The other buckets take appends while bucket 0 waits for its fsync. */
    for (int round = 0; round < 3; round++)
        for (int b = 1; b < 4; b++) produce(&other, "par", b, round * 10, 10);
    /* Bucket 0 is read at once, and shows only what is durable. */
    int64_t hw = -1;
    int32_t fid = send_fetch(&reader, "par", 0, 0, 0, 0);
    assert_true(recv_fetch(&reader, fid, 10000, &hw) > 0);
    if (hw != 5) fail_msg("a fetch of bucket 0 during its held fsync has high watermark %lld, "
                          "not 5: a batch was visible before it was durable", (long long)hw);
    expect_quiet(&held, 50, "the append whose fsync is held");
    expect_quiet(&poller, 50, "the long poll on the held bucket");

    gate_open();
    char why[256] = "";
    int64_t base = recv_produce(&held, held_id, 20000, why, sizeof why);
    if (base != 5) fail_msg("the held append: base offset %lld (%s)", (long long)base, why);
    assert_true(recv_fetch(&poller, poll_id, 20000, &hw) > 0);
    assert_int_equal(hw, 8);
    kit_close(&held);
    kit_close(&other);
    kit_close(&reader);
    kit_close(&poller);
}

/* The size of bucket 0's first segment file of a table. */
static int64_t segment_size(const char *table)
{
    char path[2048];
    snprintf(path, sizeof path, "%s/log/%lld/b0/%020d.log", ks.dir, (long long)table_id(table),
             0);
    struct stat st;
    return stat(path, &st) == 0 ? (int64_t)st.st_size : -1;
}

static void test_group_commit(void **state)
{
    (void)state;
    enum { N = 8 };
    const char *addr = fr_server_address(ks.srv);
    kit_conn conns[N];
    int32_t ids[N];
    for (int i = 0; i < N; i++) conns[i] = kit_connect(addr);
    produce(&conns[0], "grp", 0, 0, 1); /* the segment exists */
    int64_t size0 = segment_size("grp");
    assert_true(size0 > 0);
    int64_t syncs0 = fsyncs_of("grp", 0);
    gate_close("grp", 0);
    size_t bytes = 0, total = 0;
    ids[0] = send_produce(&conns[0], "grp", 0, 10, 4, &bytes);
    total += bytes;
    gate_wait_for(1); /* the first append's fsync is held; the others come meanwhile */
    for (int i = 1; i < N; i++) {
        ids[i] = send_produce(&conns[i], "grp", 0, 10 * (i + 1), 4, &bytes);
        total += bytes;
    }
    /* Wait until all eight batches are written to the segment (not yet durable). */
    for (int i = 0; i < 1000 && segment_size("grp") < size0 + (int64_t)total; i++) usleep(10000);
    if (segment_size("grp") < size0 + (int64_t)total)
        fail_msg("the segment holds %lld bytes, not the %lld of all %d batches, after 10 s",
                 (long long)segment_size("grp"), (long long)(size0 + (int64_t)total), N);
    gate_open();
    for (int i = 0; i < N; i++) {
        char why[256] = "";
        if (recv_produce(&conns[i], ids[i], 20000, why, sizeof why) < 0)
            fail_msg("append %d: %s", i, why);
    }
    int64_t syncs = fsyncs_of("grp", 0) - syncs0;
    print_message("group commit: %d appends to one bucket acknowledged after %lld fsyncs\n", N,
                  (long long)syncs);
    if (syncs > 2)
        fail_msg("%d appends that waited for one fsync took %lld fsyncs: they did not share one",
                 N, (long long)syncs);
    for (int i = 0; i < N; i++) kit_close(&conns[i]);
}

typedef struct producer_arg {
    const char *addr, *table;
    int bucket, appends;
    atomic_int *failures;
    char why[256];
} producer_arg;

static void *producer_main(void *arg)
{
    producer_arg *p = arg;
    kit_conn c = kit_connect(p->addr);
    for (int i = 0; i < p->appends; i++) {
        int32_t id = send_produce(&c, p->table, p->bucket, i * 10, 10, NULL);
        if (recv_produce(&c, id, 30000, p->why, sizeof p->why) < 0) {
            atomic_fetch_add(p->failures, 1);
            break;
        }
    }
    kit_close(&c);
    return NULL;
}

/* Runs 8 producers of `appends` appends each, spread over the table's nbuckets buckets; returns
 * the seconds taken. */
static double run_producers(const char *table, int nbuckets, int appends)
{
    enum { N = 8 };
    pthread_t th[N];
    producer_arg args[N];
    atomic_int failures = 0;
    int64_t t0 = fr_monotonic_ns();
    for (int i = 0; i < N; i++) {
        args[i] = (producer_arg){.addr = fr_server_address(ks.srv), .table = table,
                                 .bucket = i % nbuckets, .appends = appends,
                                 .failures = &failures};
        assert_int_equal(pthread_create(&th[i], NULL, producer_main, &args[i]), 0);
    }
    for (int i = 0; i < N; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < N; i++)
        if (args[i].why[0]) fail_msg("producer %d on %s: %s", i, table, args[i].why);
    assert_int_equal(atomic_load(&failures), 0);
    return (double)(fr_monotonic_ns() - t0) / 1e9;
}

static void test_parallel_fsyncs(void **state)
{
    (void)state;
    enum { APPENDS = 15 };
    atomic_store(&slow_ms, 20);
    pthread_mutex_lock(&gate_mu);
    max_buckets_at_once = 0;
    pthread_mutex_unlock(&gate_mu);
    long s0 = atomic_load(&segment_syncs);
    double one = run_producers("one", 1, APPENDS);
    int64_t one_syncs = fsyncs_of("one", 0);
    long s1 = atomic_load(&segment_syncs);
    double four = run_producers("four", 4, APPENDS);
    long s2 = atomic_load(&segment_syncs);
    atomic_store(&slow_ms, 0);
    pthread_mutex_lock(&gate_mu);
    int most = max_buckets_at_once;
    pthread_mutex_unlock(&gate_mu);
    print_message("8 producers x %d appends, fsync slowed to 20 ms: 1 bucket %.2f s (%ld fsyncs, "
                  "%.0f appends/s), 4 buckets %.2f s (%ld fsyncs, %.0f appends/s); at most %d "
                  "buckets in fsync at once\n", APPENDS, one, s1 - s0, 8 * APPENDS / one, four,
                  s2 - s1, 8 * APPENDS / four, most);
    if (most < 2)
        fail_msg("the fsyncs of 4 buckets never ran at the same time: appends to different "
                 "buckets are serialized");
    /* 8 producers on one bucket: their appends share fsyncs. */
    if (one_syncs >= 8 * APPENDS)
        fail_msg("8 concurrent producers' %d appends to one bucket took %lld fsyncs: none "
                 "shared", 8 * APPENDS, (long long)one_syncs);
}

static void test_parked_fetches_leave_appends_alone(void **state)
{
    (void)state;
    enum { CONNS = 4, PER_CONN = 8 }; /* 32 parked fetches, twice the server's 16 workers */
    const char *addr = fr_server_address(ks.srv);
    kit_conn consumers[CONNS];
    int32_t ids[CONNS][PER_CONN];
    for (int i = 0; i < CONNS; i++) {
        consumers[i] = kit_connect(addr);
        for (int k = 0; k < PER_CONN; k++) ids[i][k] = send_fetch(&consumers[i], "fe", 0, 0,
                                                                  30000, 1);
    }
    /* Wait until the server has parked them all. */
    double parked = 0;
    for (int i = 0; i < 200 && parked < CONNS * PER_CONN; i++) {
        char *text = kit_http_get(fr_server_http_address(ks.srv), "/metrics");
        const char *line = strstr(text, "\nfirth_fetches_parked ");
        parked = line ? strtod(line + 22, NULL) : 0;
        fr_free(text);
        if (parked < CONNS * PER_CONN) usleep(50000);
    }
    if (parked < CONNS * PER_CONN)
        fail_msg("%.0f fetches parked, expected %d", parked, CONNS * PER_CONN);
    kit_conn producer = kit_connect(addr);
    for (int i = 0; i < 20; i++) produce(&producer, "par", 2, 1000 + i * 5, 5);
    for (int i = 0; i < CONNS; i++) expect_quiet(&consumers[i], 10, "a parked fetch");
    produce(&producer, "fe", 0, 0, 2); /* wakes them all */
    for (int i = 0; i < CONNS; i++)
        for (int k = 0; k < PER_CONN; k++) {
            fr_rpc_frame f;
            if (kit_next_frame(&consumers[i], &f, 20000) != 1)
                fail_msg("parked fetch %d of connection %d: no answer after the append", k, i);
            bool known = false;
            for (int j = 0; j < PER_CONN; j++) known = known || f.request_id == ids[i][j];
            assert_true(known);
            assert_int_equal(f.result, FR_RPC_SUCCESS);
        }
    for (int i = 0; i < CONNS; i++) kit_close(&consumers[i]);
    kit_close(&producer);
}

/* ---- no lost wake-ups ------------------------------------------------------------------- */

/* A fetch of one bucket, safe in any thread: 0 with *next (its next offset), or -1 with why. */
static int fetch_once(kit_conn *c, const char *table, int bucket, int64_t offset, int max_wait,
                      int64_t *next, char *why, size_t cap)
{
    int32_t id = send_fetch(c, table, bucket, offset, max_wait, 1);
    fr_rpc_frame f;
    int rc = kit_next_frame(c, &f, max_wait + 30000);
    if (rc != 1) {
        snprintf(why, cap, "fetch at %lld: %s", (long long)offset,
                 rc == 0 ? "the connection closed" : "no answer");
        return -1;
    }
    ProtobufCMessage *m = NULL;
    fr_error err = {0};
    if (f.request_id != id || f.result != FR_RPC_SUCCESS ||
        fr_rpc_response_unpack(FR_RPC_FETCH_LOG, &f, &m, &err) < 0) {
        snprintf(why, cap, "fetch at %lld: a bad or failed response %.150s", (long long)offset,
                 err.msg);
        return -1;
    }
    Firth__FetchLogResponse *r = (Firth__FetchLogResponse *)m;
    rc = 0;
    if (r->n_tables != 1 || r->tables[0]->n_buckets != 1 || r->tables[0]->buckets[0]->error) {
        snprintf(why, cap, "fetch at %lld: an error in the response", (long long)offset);
        rc = -1;
    } else {
        *next = r->tables[0]->buckets[0]->next_offset;
    }
    fr_rpc_free(m);
    return rc;
}

enum { WAKE_BUCKETS = 4, WAKE_CONSUMERS = 8 };

typedef struct waker {
    int bucket;
    atomic_llong next;        /* where the consumer's next fetch starts */
    atomic_llong stop_at;     /* INT64_MAX while the test runs */
    int64_t fetches;
    char why[256];
} waker;

static void *waker_main(void *arg)
{
    waker *w = arg;
    kit_conn c = kit_connect(fr_server_address(ks.srv));
    int64_t next = atomic_load(&w->next);
    while (next < atomic_load(&w->stop_at)) {
        if (fetch_once(&c, "wk", w->bucket, next, 30000, &next, w->why, sizeof w->why) < 0) break;
        w->fetches++;
        atomic_store(&w->next, next);
    }
    kit_close(&c);
    return NULL;
}

/* One record at a time to a random bucket, each appended a random few microseconds after the
 * bucket's consumers sent their next long poll (so that appends land while the server reads
 * and parks them): each must reach every consumer of its bucket well before the long poll's
 * 30 s. A wake-up lost between a fetch's read and its parking would leave one waiting. */
static void test_no_lost_wakeups(void **state)
{
    (void)state;
    enum { APPENDS = 400 };
    kit_conn setup_conn = kit_connect(fr_server_address(ks.srv));
    kit_sql(&setup_conn, "CREATE TABLE wk (id BIGINT NOT NULL, name STRING, score DOUBLE) "
                         "WITH ('bucket.num' = '4')");
    kit_close(&setup_conn);
    const char *env = getenv("FIRTH_TEST_SEED");
    unsigned seed = env ? (unsigned)strtoul(env, NULL, 10) : (unsigned)time(NULL);
    print_message("no lost wake-ups: seed %u\n", seed);
    srand(seed);
    waker w[WAKE_CONSUMERS];
    pthread_t th[WAKE_CONSUMERS];
    for (int i = 0; i < WAKE_CONSUMERS; i++) {
        w[i] = (waker){.bucket = i % WAKE_BUCKETS};
        atomic_store(&w[i].next, 0);
        atomic_store(&w[i].stop_at, INT64_MAX);
        assert_int_equal(pthread_create(&th[i], NULL, waker_main, &w[i]), 0);
    }
    kit_conn producer = kit_connect(fr_server_address(ks.srv));
    int64_t ends[WAKE_BUCKETS] = {0}, slowest_us = 0;
    for (int i = 0; i < APPENDS; i++) {
        int b = rand() % WAKE_BUCKETS;
        usleep((useconds_t)(rand() % 400));
        int64_t t0 = fr_monotonic_ns();
        int64_t base = produce(&producer, "wk", b, i, 1);
        assert_int_equal(base, ends[b]);
        ends[b]++;
        for (int k = b; k < WAKE_CONSUMERS; k += WAKE_BUCKETS) {
            while (atomic_load(&w[k].next) < ends[b] && !w[k].why[0] &&
                   fr_monotonic_ns() - t0 < 10 * 1000000000LL)
                usleep(100);
            if (w[k].why[0]) fail_msg("consumer %d: %s", k, w[k].why);
            if (atomic_load(&w[k].next) < ends[b])
                fail_msg("append %d (bucket %d, offset %lld, seed %u): consumer %d, parked at "
                         "offset %lld, did not receive it within 10 s: a lost wake-up", i, b,
                         (long long)base, seed, k, (long long)atomic_load(&w[k].next));
        }
        int64_t us = (fr_monotonic_ns() - t0) / 1000;
        if (us > slowest_us) slowest_us = us;
    }
    /* Release the consumers: one more record per bucket, their stop. */
    for (int k = 0; k < WAKE_CONSUMERS; k++)
        atomic_store(&w[k].stop_at, ends[k % WAKE_BUCKETS] + 1);
    for (int b = 0; b < WAKE_BUCKETS; b++) produce(&producer, "wk", b, 0, 1);
    int64_t fetches = 0;
    for (int k = 0; k < WAKE_CONSUMERS; k++) {
        pthread_join(th[k], NULL);
        if (w[k].why[0]) fail_msg("consumer %d: %s", k, w[k].why);
        fetches += w[k].fetches;
    }
    print_message("no lost wake-ups: %d appends, each received by its bucket's consumers "
                  "(%lld fetches); the slowest append-to-all-received took %lld us\n", APPENDS,
                  (long long)fetches, (long long)slowest_us);
    kit_close(&producer);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_held_fsync_blocks_only_its_bucket, setup, teardown),
        cmocka_unit_test_setup_teardown(test_group_commit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_parallel_fsyncs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_parked_fetches_leave_appends_alone, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_no_lost_wakeups, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
