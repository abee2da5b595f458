/* test_client_api.c — the client API of firth.h (admin, writers, scanners, lookupers, SQL,
 * one-call produce and scan) run the same way against an embedded data dir and against a
 * real `firth server` started on an ephemeral loopback port (the `firth` binary beside this
 * test; FIRTH names another). Every test checks exact contents: each row written is read
 * back exactly once, in offset order per bucket. Batches are built with the arrow module
 * through the client's bridge. Randomized parts print their seed (FIRTH_TEST_SEED sets it). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <ftw.h>
#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "client/client_bridge.h"

#define OK(expr, err)                                                                        \
    do {                                                                                     \
        int ok_rc_ = (expr);                                                                 \
        if (ok_rc_ != 0) fail_msg("%s failed: %d %s", #expr, ok_rc_, (err).msg);             \
    } while (0)

static char target[1400];      /* "file:DIR" or "firth://127.0.0.1:PORT" */
static char http_addr[256];    /* remote: the server's HTTP listener, HOST:PORT */
static bool remote;
static firth_client *client;
static unsigned seed;

/* ---- scratch dirs and the server -------------------------------------------------------- */

static char *tmpdir(const char *name)
{
    const char *base = getenv("FIRTH_TEST_TMP");
    if (!base || !*base) base = "/tmp";
    mkdir(base, 0755);
    char tmpl[1024];
    snprintf(tmpl, sizeof tmpl, "%s/%s.XXXXXX", base, name);
    if (!mkdtemp(tmpl)) return NULL;
    return strdup(tmpl);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static void rmtree(const char *dir) { nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS); }

static pid_t server_pid = -1;

/* The firth binary: $FIRTH, or `firth` beside this test. */
static bool firth_binary(char *out, size_t cap)
{
    const char *env = getenv("FIRTH");
    if (env && *env) {
        snprintf(out, cap, "%s", env);
        return access(out, X_OK) == 0;
    }
    char self[PATH_MAX];
    if (cap < sizeof self + 8) return false;
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) return false;
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    if (!slash) return false;
    *slash = '\0';
    if (snprintf(out, cap, "%.*s/firth", (int)(cap - 8), self) < 0) return false;
    return access(out, X_OK) == 0;
}

/* Starts `firth server` on ports chosen by the system; fills target. False when there is no
 * server to start (the remote half is then skipped, saying so). */
static bool start_server(const char *dir)
{
    char bin[PATH_MAX + 64], data[1200], ready[1200];
    if (!firth_binary(bin, sizeof bin)) return false;
    snprintf(data, sizeof data, "%s/server-data", dir);
    snprintf(ready, sizeof ready, "%s/ready.json", dir);
    pid_t pid = fork();
    if (pid < 0) return false;
    if (pid == 0) {
        freopen("/dev/null", "w", stdout);
        /* A frame limit small enough for test_writer_after_failure to exceed. */
        execl(bin, bin, "server", "--data-dir", data, "--listen", "127.0.0.1:0",
              "--http-listen", "127.0.0.1:0", "--ready-file", ready,
              "--server.frame.bytes.max", "4mb", (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 400; i++) { /* up to 20 s */
        int status;
        if (waitpid(pid, &status, WNOHANG) == pid) return false;
        json_error_t jerr;
        json_t *root = json_load_file(ready, 0, &jerr);
        const char *native = root ? json_string_value(json_object_get(root, "native")) : NULL;
        const char *http = root ? json_string_value(json_object_get(root, "http")) : NULL;
        if (native && http) {
            snprintf(target, sizeof target, "firth://%s", native);
            snprintf(http_addr, sizeof http_addr, "%s", http);
            json_decref(root);
            server_pid = pid;
            return true;
        }
        json_decref(root);
        struct timespec ts = {.tv_nsec = 50 * 1000000};
        nanosleep(&ts, NULL);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    return false;
}

static void stop_server(void)
{
    if (server_pid <= 0) return;
    kill(server_pid, SIGTERM);
    int status = 0;
    waitpid(server_pid, &status, 0);
    server_pid = -1;
}

static int setup(void **state)
{
    (void)state;
    firth_error err = {0};
    OK(firth_open(target, &client, &err), err);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    firth_close(client);
    client = NULL;
    return 0;
}

/* ---- batches ---------------------------------------------------------------------------------- */

/* A schema from "name TYPE, ..." text: "id BIGINT NOT NULL, s STRING". */
static fr_schema *schema_of(const char *cols)
{
    fr_field f[16];
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", cols);
    int n = 0;
    for (char *part = buf; part;) {
        char *comma = strchr(part, ',');
        if (comma) *comma = '\0';
        while (*part == ' ') part++;
        char *sp = strchr(part, ' ');
        assert_non_null(sp);
        *sp = '\0';
        f[n].name = part;
        fr_error err = {0};
        assert_int_equal(fr_type_parse(sp + 1, &f[n].type, &err), 0);
        n++;
        part = comma ? comma + 1 : NULL;
    }
    fr_schema *s = NULL;
    fr_error err = {0};
    assert_int_equal(fr_schema_new(f, n, 0, &s, &err), 0);
    return s;
}

/* Rows (id, s, v) = (ids[i], "s<id>", id * 0.5) of schema "id BIGINT NOT NULL, s STRING,
 * v DOUBLE". */
static firth_batch *rows_of(const int64_t *ids, int n)
{
    fr_schema *schema = schema_of("id BIGINT NOT NULL, s STRING, v DOUBLE");
    fr_builder *bld = NULL;
    fr_error err = {0};
    assert_int_equal(fr_builder_new(schema, &bld, &err), 0);
    for (int i = 0; i < n; i++) {
        char s[32];
        int len = snprintf(s, sizeof s, "s%lld", (long long)ids[i]);
        assert_int_equal(fr_builder_append_i64(bld, 0, ids[i], &err), 0);
        assert_int_equal(fr_builder_append_bytes(bld, 1, s, (size_t)len, &err), 0);
        assert_int_equal(fr_builder_append_f64(bld, 2, (double)ids[i] * 0.5, &err), 0);
    }
    fr_batch *b = NULL;
    assert_int_equal(fr_builder_finish(bld, &b, &err), 0);
    fr_builder_free(bld);
    fr_schema_free(schema);
    firth_batch *fb = firth_batch_wrap(b);
    assert_non_null(fb);
    return fb;
}

static firth_batch *range_of(int64_t from, int n)
{
    int64_t *ids = malloc(sizeof *ids * (size_t)(n + 1));
    for (int i = 0; i < n; i++) ids[i] = from + i;
    firth_batch *b = rows_of(ids, n);
    free(ids);
    return b;
}

static int64_t cell_i64(const firth_batch *b, int col, int64_t row)
{
    fr_value v;
    fr_column_get(fr_batch_column(firth_batch_unwrap(b), col), row, &v);
    return v.v.i;
}

static void create_table_on(firth_client *c, const char *name, const char *pk,
                            const char *buckets)
{
    const char *keys[] = {"bucket.num"};
    const char *vals[] = {buckets};
    firth_table_def def = {
        .table = name,
        .schema_json = "{\"fields\": [{\"name\": \"id\", \"type\": \"BIGINT\", \"nullable\": "
                       "false}, {\"name\": \"s\", \"type\": \"STRING\"}, {\"name\": \"v\", "
                       "\"type\": \"DOUBLE\"}]}",
        .primary_key = pk,
        .option_keys = keys,
        .option_values = vals,
        .noptions = 1,
    };
    firth_error err = {0};
    OK(firth_create_table(c, &def, &err), err);
}

static void create_table(const char *name, const char *pk, const char *buckets)
{
    create_table_on(client, name, pk, buckets);
}

/* ---- admin ------------------------------------------------------------------------------------- */

static bool has_name(char **names, int n, const char *want)
{
    for (int i = 0; i < n; i++)
        if (strcmp(names[i], want) == 0) return true;
    return false;
}

static void test_admin(void **state)
{
    (void)state;
    firth_error err = {0};
    OK(firth_create_database(client, "shop", false, &err), err);
    assert_int_equal(firth_create_database(client, "shop", false, &err), FIRTH_EEXIST);
    OK(firth_create_database(client, "shop", true, &err), err);
    char **names = NULL;
    int n = 0;
    OK(firth_list_databases(client, &names, &n, &err), err);
    assert_true(has_name(names, n, "shop") && has_name(names, n, "default"));
    firth_names_free(names, n);

    create_table("shop.orders", NULL, "4");
    assert_int_equal(firth_drop_database(client, "shop", false, false, &err), FIRTH_ESTATE);
    OK(firth_list_tables(client, "shop", &names, &n, &err), err);
    assert_int_equal(n, 1);
    assert_string_equal(names[0], "orders");
    firth_names_free(names, n);
    char *json = NULL;
    OK(firth_table_info(client, "shop.orders", &json, &err), err);
    json_error_t jerr;
    json_t *root = json_loads(json, 0, &jerr);
    assert_non_null(root);
    assert_int_equal(json_integer_value(json_object_get(root, "bucket_num")), 4);
    json_decref(root);
    firth_free(json);
    bool pk = true;
    OK(firth_table_is_pk(client, "shop.orders", &pk, &err), err);
    assert_false(pk);

    /* A bad schema and a missing database are the caller's errors, named. */
    firth_table_def bad = {.table = "shop.x", .schema_json = "{\"fields\": 3}"};
    assert_int_not_equal(firth_create_table(client, &bad, &err), 0);
    bad.table = "nodb.x";
    bad.schema_json = "{\"fields\": [{\"name\": \"a\", \"type\": \"INT\"}]}";
    assert_int_equal(firth_create_table(client, &bad, &err), FIRTH_ENOTFOUND);

    OK(firth_drop_table(client, "shop.orders", false, &err), err);
    assert_int_equal(firth_drop_table(client, "shop.orders", false, &err), FIRTH_ENOTFOUND);
    OK(firth_drop_table(client, "shop.orders", true, &err), err);
    OK(firth_drop_database(client, "shop", false, true, &err), err);
    OK(firth_list_databases(client, &names, &n, &err), err);
    assert_false(has_name(names, n, "shop"));
    firth_names_free(names, n);
}

/* ---- writer and scan ----------------------------------------------------------------------------- */

typedef struct acks {
    int calls, failed;
    uint64_t max_token;
} acks;

static void on_ack(void *ctx, uint64_t token, int status, const char *msg)
{
    (void)msg;
    acks *a = ctx;
    a->calls++;
    if (status) a->failed++;
    if (token > a->max_token) a->max_token = token;
}

/* Checks a whole-table read: ids 0..n-1 each once, offsets increasing per bucket. */
typedef struct seen {
    int64_t n;
    uint8_t *count;
    int64_t last[64];
    int64_t rows;
    bool order_ok;
} seen;

static void seen_init(seen *s, int64_t n)
{
    s->n = n;
    s->count = calloc((size_t)n + 1, 1);
    for (int i = 0; i < 64; i++) s->last[i] = -1;
    s->rows = 0;
    s->order_ok = true;
}

static void seen_rows(seen *s, int bucket, const firth_batch *b, const int64_t *offsets)
{
    for (int64_t r = 0; r < firth_batch_num_rows(b); r++) {
        int64_t id = cell_i64(b, 0, r);
        assert_true(id >= 0 && id < s->n);
        s->count[id]++;
        if (offsets[r] <= s->last[bucket]) s->order_ok = false;
        s->last[bucket] = offsets[r];
        s->rows++;
    }
}

static void seen_check(seen *s)
{
    assert_true(s->order_ok);
    for (int64_t i = 0; i < s->n; i++)
        if (s->count[i] != 1) fail_msg("id %lld read %d times", (long long)i, s->count[i]);
    free(s->count);
}

static int scan_fn(void *ctx, int bucket, firth_batch *batch, const int64_t *offsets)
{
    seen_rows(ctx, bucket, batch, offsets);
    firth_batch_free(batch);
    return 0;
}

static void test_writer_log(void **state)
{
    (void)state;
    create_table("events", NULL, "4");
    /* A bucket key spreads rows over the buckets by id. */
    firth_error err = {0};
    acks a = {0};
    firth_writer_options o;
    firth_writer_options_init(&o);
    o.linger_ms = 20;
    o.batch_bytes = 4096;
    o.max_in_flight = 4; /* remote: a bucket's batches pipelined, applied in order */
    o.on_ack = on_ack;
    o.ack_ctx = &a;
    firth_writer *w = NULL;
    OK(firth_writer_open(client, "events", &o, &w, &err), err);
    uint64_t tokens[50];
    for (int i = 0; i < 50; i++) {
        firth_batch *b = range_of(i * 40, 40);
        OK(firth_writer_append(w, b, &tokens[i], &err), err);
        firth_batch_free(b); /* the writer keeps what it needs */
    }
    OK(firth_writer_wait(w, tokens[7], &err), err);
    OK(firth_writer_flush(w, &err), err);
    int64_t acked = 0, failed = 0;
    firth_writer_stats(w, &acked, NULL, &failed);
    assert_int_equal(acked, 2000);
    assert_int_equal(failed, 0);
    assert_int_equal(a.calls, 50);
    assert_int_equal(a.max_token, tokens[49]);
    assert_int_equal(firth_writer_wait(w, 9999, &err), FIRTH_EINVAL);
    /* Deletes need a primary key. */
    firth_batch *b = range_of(0, 1);
    assert_int_equal(firth_writer_delete(w, b, NULL, &err), FIRTH_EINVAL);
    firth_batch_free(b);
    OK(firth_writer_close(w, &err), err);

    seen s;
    seen_init(&s, 2000);
    OK(firth_scan(client, "events", NULL, scan_fn, &s, &err), err);
    seen_check(&s);
    /* With columns, a predicate and a start offset. */
    firth_scan_options so = {.start = FIRTH_START_OFFSET, .start_value = 0, .columns = "id",
                             .where = "id >= 1000 AND v < 750", .max_records = -1};
    seen_init(&s, 2000);
    OK(firth_scan(client, "events", &so, scan_fn, &s, &err), err);
    assert_int_equal(s.rows, 500);
    free(s.count);
}

/* Counts the record batches of a scan, the most rows in one, and checks the ids run
 * 0, 1, 2, ... in order. */
typedef struct batch_sizes {
    int batches;
    int64_t max_rows, rows;
    bool order_ok;
} batch_sizes;

static int batch_sizes_fn(void *ctx, int bucket, firth_batch *batch, const int64_t *offsets)
{
    (void)bucket, (void)offsets;
    batch_sizes *z = ctx;
    int64_t n = firth_batch_num_rows(batch);
    z->batches++;
    if (n > z->max_rows) z->max_rows = n;
    for (int64_t r = 0; r < n; r++)
        if (cell_i64(batch, 0, r) != z->rows++) z->order_ok = false;
    firth_batch_free(batch);
    return 0;
}

/* A writer sends at most batch_bytes of rows per batch (one call's rows when they alone are
 * more): the calls that queue up while a batch is in flight go as several bounded batches,
 * in call order, not as the whole queue at once. */
static void test_writer_batch_bound(void **state)
{
    (void)state;
    create_table("bounded", NULL, "1");
    firth_error err = {0};
    firth_writer_options o;
    firth_writer_options_init(&o);
    o.linger_ms = 60000; /* only size and flush send */
    o.batch_bytes = 1;   /* every call's rows are more than a batch: one call per batch */
    o.max_in_flight = 8; /* remote: up to 8 of them on the way, appended in call order */
    firth_writer *w = NULL;
    OK(firth_writer_open(client, "bounded", &o, &w, &err), err);
    o.max_in_flight = 0;
    firth_writer *bad = NULL;
    assert_int_equal(firth_writer_open(client, "bounded", &o, &bad, &err), FIRTH_EINVAL);
    assert_null(bad);
    for (int i = 0; i < 20; i++) {
        firth_batch *b = range_of(i * 40, 40);
        OK(firth_writer_append(w, b, NULL, &err), err);
        firth_batch_free(b);
    }
    OK(firth_writer_flush(w, &err), err);
    OK(firth_writer_close(w, &err), err);
    batch_sizes z = {.order_ok = true};
    OK(firth_scan(client, "bounded", NULL, batch_sizes_fn, &z, &err), err);
    assert_int_equal(z.rows, 800);
    assert_true(z.order_ok);
    assert_int_equal(z.max_rows, 40);
    assert_int_equal(z.batches, 20);
}

/* The calls whose acknowledgements said they failed (the first 8), and the first message. */
typedef struct fail_acks {
    int failed;
    uint64_t tokens[8];
    char message[512];
} fail_acks;

static void on_fail_ack(void *ctx, uint64_t token, int status, const char *message)
{
    fail_acks *a = ctx;
    if (status == 0) return;
    if (a->failed == 0) snprintf(a->message, sizeof a->message, "%s", message);
    if (a->failed < 8) a->tokens[a->failed] = token;
    a->failed++;
}

static bool acked_failed(const fail_acks *a, uint64_t token)
{
    for (int i = 0; i < a->failed && i < 8; i++)
        if (a->tokens[i] == token) return true;
    return false;
}

/* Rows whose ids are random: a record batch that compression cannot shrink. */
static firth_batch *random_rows(int n)
{
    int64_t *ids = malloc(sizeof *ids * (size_t)(n + 1));
    for (int i = 0; i < n; i++) ids[i] = (int64_t)rand() << 31 ^ rand();
    firth_batch *b = rows_of(ids, n);
    free(ids);
    return b;
}

/* Checks that ids come in increasing order within each bucket (call order) and counts them
 * into a seen. */
typedef struct call_order {
    seen s;
    int64_t last_id[64];
} call_order;

static int call_order_fn(void *ctx, int bucket, firth_batch *batch, const int64_t *offsets)
{
    call_order *o = ctx;
    for (int64_t r = 0; r < firth_batch_num_rows(batch); r++) {
        int64_t id = cell_i64(batch, 0, r);
        if (id <= o->last_id[bucket]) o->s.order_ok = false;
        o->last_id[bucket] = id;
    }
    seen_rows(&o->s, bucket, batch, offsets);
    firth_batch_free(batch);
    return 0;
}

/* A batch that fails for good fails alone. Remote, two calls (at random places among 40)
 * are larger than the server's frame limit (the test's server runs with 4 MB) and fail;
 * the batches of their buckets that were already on the way behind them are refused by the
 * log after the gap, and go again under the bucket's new writer id: every other call is
 * acknowledged, and its rows are there once, in call order within each bucket. */
static void test_writer_after_failure(void **state)
{
    (void)state;
    enum { CALLS = 40, ROWS = 40, BIG = 2 };
    create_table("gap", NULL, "4");
    firth_error err = {0};
    fail_acks a = {0};
    firth_writer_options o;
    firth_writer_options_init(&o);
    o.linger_ms = 60000;
    o.batch_bytes = 1;                        /* one call per batch */
    o.max_in_flight = 2 + rand() % 7;         /* calls behind a big one are on the way */
    o.on_ack = on_fail_ack;
    o.ack_ctx = &a;
    firth_writer *w = NULL;
    OK(firth_writer_open(client, "gap", &o, &w, &err), err);
    int big_at[BIG] = {rand() % CALLS, rand() % CALLS};
    uint64_t big_tokens[BIG] = {0};
    for (int i = 0; i < CALLS; i++) {
        for (int k = 0; k < BIG && remote; k++) {
            if (big_at[k] != i) continue;
            firth_batch *big = random_rows(700000); /* 5.6 MB of ids alone */
            OK(firth_writer_append(w, big, &big_tokens[k], &err), err);
            firth_batch_free(big);
        }
        firth_batch *b = range_of(i * ROWS, ROWS);
        OK(firth_writer_append(w, b, NULL, &err), err);
        firth_batch_free(b);
    }
    int rc = firth_writer_flush(w, &err);
    int64_t acked = 0, failed = 0;
    firth_writer_stats(w, &acked, NULL, &failed);
    OK(firth_writer_close(w, &err), err);
    assert_int_equal(acked, CALLS * ROWS);
    assert_int_equal(failed, remote ? BIG : 0);
    assert_int_equal(a.failed, remote ? BIG : 0);
    for (int k = 0; k < BIG && remote; k++) assert_true(acked_failed(&a, big_tokens[k]));
    /* The failure says what to do about it. */
    if (remote) assert_non_null(strstr(a.message, "server.frame.bytes.max"));
    assert_int_equal(rc, remote ? FIRTH_ELIMIT : 0);
    call_order co;
    seen_init(&co.s, CALLS * ROWS);
    for (int i = 0; i < 64; i++) co.last_id[i] = -1;
    OK(firth_scan(client, "gap", NULL, call_order_fn, &co, &err), err);
    assert_int_equal(co.s.rows, CALLS * ROWS);
    seen_check(&co.s);
}

/* A batch of the wrong shape fails at once, and a writer acknowledges nothing for it. */
static void test_writer_errors(void **state)
{
    (void)state;
    create_table("narrow", NULL, "1");
    firth_error err = {0};
    firth_writer *w = NULL;
    OK(firth_writer_open(client, "narrow", NULL, &w, &err), err);
    fr_schema *schema = schema_of("id INT NOT NULL");
    fr_builder *bld = NULL;
    fr_error e = {0};
    fr_batch *raw = NULL;
    assert_int_equal(fr_builder_new(schema, &bld, &e), 0);
    assert_int_equal(fr_builder_append_i64(bld, 0, 1, &e), 0);
    assert_int_equal(fr_builder_finish(bld, &raw, &e), 0);
    fr_builder_free(bld);
    fr_schema_free(schema);
    firth_batch *b = firth_batch_wrap(raw);
    assert_int_equal(firth_writer_append(w, b, NULL, &err), FIRTH_ETYPE);
    firth_batch_free(b);
    OK(firth_writer_close(w, &err), err);
    firth_writer_options o;
    firth_writer_options_init(&o);
    o.batch_bytes = 0;
    assert_int_equal(firth_writer_open(client, "narrow", &o, &w, &err), FIRTH_EINVAL);
    assert_int_equal(firth_writer_open(client, "nope", NULL, &w, &err), FIRTH_ENOTFOUND);
}

/* ---- scanner ------------------------------------------------------------------------------------ */

static void poll_into(firth_scanner *sc, seen *s, int64_t want, int64_t timeout_ms)
{
    firth_error err = {0};
    int64_t deadline_rounds = 200;
    while (s->rows < want && deadline_rounds-- > 0) {
        firth_scan_result *r = NULL;
        OK(firth_scanner_poll(sc, timeout_ms, &r, &err), err);
        for (int i = 0; i < firth_scan_result_count(r); i++) {
            const firth_scan_batch *b = firth_scan_result_get(r, i);
            seen_rows(s, b->bucket, b->batch, b->offsets);
            assert_true(b->commit_ms > 0);
        }
        firth_scan_result_free(r);
    }
    assert_int_equal(s->rows, want);
}

static void produce_range(const char *table, int64_t from, int n)
{
    firth_batch *b = range_of(from, n);
    firth_error err = {0};
    int64_t appended = 0;
    OK(firth_produce(client, table, b, -1, 0, &appended, &err), err);
    assert_int_equal(appended, n);
    firth_batch_free(b);
}

static void test_scanner(void **state)
{
    (void)state;
    create_table("stream", NULL, "3");
    produce_range("stream", 0, 300);
    firth_error err = {0};
    firth_scanner *sc = NULL;
    OK(firth_scanner_open(client, "stream", NULL, &sc, &err), err);
    OK(firth_scanner_subscribe(sc, NULL, -1, FIRTH_START_EARLIEST, 0, &err), err);
    seen s;
    seen_init(&s, 600);
    poll_into(sc, &s, 300, 100);
    /* Nothing new: a short poll returns empty. */
    firth_scan_result *r = NULL;
    OK(firth_scanner_poll(sc, 20, &r, &err), err);
    assert_int_equal(firth_scan_result_rows(r), 0);
    firth_scan_result_free(r);
    /* New records arrive through the waiting poll. */
    produce_range("stream", 300, 300);
    poll_into(sc, &s, 600, 2000);
    seen_check(&s);
    int64_t pos = 0, total = 0;
    for (int b = 0; b < 3; b++) {
        OK(firth_scanner_position(sc, NULL, b, &pos, &err), err);
        total += pos;
    }
    assert_int_equal(total, 600);
    /* Moved back after polls that returned records (remote: with a fetch sent ahead from
     * the ends, which the records appended next answer): the next polls read every bucket
     * again from offset 0, in order, then the new records. */
    OK(firth_scanner_subscribe(sc, NULL, -1, FIRTH_START_OFFSET, 0, &err), err);
    produce_range("stream", 600, 30);
    int64_t next[3] = {0}, again = 0;
    for (int round = 0; round < 100 && again < 630; round++) {
        OK(firth_scanner_poll(sc, 100, &r, &err), err);
        for (int i = 0; i < firth_scan_result_count(r); i++) {
            const firth_scan_batch *b = firth_scan_result_get(r, i);
            assert_int_equal(b->offsets[0], next[b->bucket]);
            next[b->bucket] += firth_batch_num_rows(b->batch);
            again += firth_batch_num_rows(b->batch);
        }
        firth_scan_result_free(r);
    }
    assert_int_equal(again, 630);
    assert_int_equal(firth_scanner_subscribe(sc, "p=1", 0, FIRTH_START_EARLIEST, 0, &err),
                     FIRTH_EINVAL);
    assert_int_equal(firth_scanner_subscribe(sc, NULL, 3, FIRTH_START_EARLIEST, 0, &err),
                     FIRTH_EINVAL);
    firth_scanner_close(sc);

    /* From the latest, with a projection and a filter: only what comes next, filtered. */
    firth_scanner_options so = {.columns = "v, id", .where = "id % 2 = 0"};
    OK(firth_scanner_open(client, "stream", &so, &sc, &err), err);
    OK(firth_scanner_subscribe(sc, NULL, -1, FIRTH_START_LATEST, 0, &err), err);
    produce_range("stream", 600, 100);
    int64_t rows = 0;
    for (int round = 0; round < 100 && rows < 50; round++) {
        OK(firth_scanner_poll(sc, 500, &r, &err), err);
        for (int i = 0; i < firth_scan_result_count(r); i++) {
            const firth_scan_batch *b = firth_scan_result_get(r, i);
            const fr_batch *fb = firth_batch_unwrap(b->batch);
            assert_int_equal(fr_batch_num_columns(fb), 2);
            assert_string_equal(fr_schema_field(fr_batch_schema(fb), 0)->name, "v");
            for (int64_t k = 0; k < firth_batch_num_rows(b->batch); k++) {
                int64_t id = cell_i64(b->batch, 1, k);
                assert_true(id >= 600 && id < 700 && id % 2 == 0);
                assert_null(b->changes);
            }
            /* The batch exports through the C Data Interface. */
            struct ArrowSchema as;
            struct ArrowArray aa;
            OK(firth_batch_export(b->batch, &as, &aa, &err), err);
            assert_int_equal(aa.length, firth_batch_num_rows(b->batch));
            assert_int_equal(as.n_children, 2);
            aa.release(&aa);
            as.release(&as);
            rows += firth_batch_num_rows(b->batch);
        }
        firth_scan_result_free(r);
    }
    assert_int_equal(rows, 50);
    firth_scanner_close(sc);

    /* From a timestamp in the future: nothing; from one in the past: everything. */
    OK(firth_scanner_open(client, "stream", NULL, &sc, &err), err);
    OK(firth_scanner_subscribe(sc, NULL, 1, FIRTH_START_TIMESTAMP, INT64_MAX / 2, &err), err);
    OK(firth_scanner_poll(sc, 0, &r, &err), err);
    assert_int_equal(firth_scan_result_rows(r), 0);
    firth_scan_result_free(r);
    OK(firth_scanner_subscribe(sc, NULL, 1, FIRTH_START_TIMESTAMP, 0, &err), err);
    OK(firth_scanner_position(sc, NULL, 1, &pos, &err), err);
    assert_int_equal(pos, 0);
    firth_scanner_close(sc);
}

/* ---- primary-key tables ---------------------------------------------------------------------- */

static void test_pk_writer_lookup(void **state)
{
    (void)state;
    create_table("users", "id", "4");
    firth_error err = {0};
    firth_writer *w = NULL;
    OK(firth_writer_open(client, "users", NULL, &w, &err), err);
    firth_batch *b = range_of(0, 100);
    uint64_t first = 0;
    OK(firth_writer_upsert(w, b, &first, &err), err);
    firth_batch_free(b);
    /* Acknowledged before the deletes are queued, so that they are not batched with the
     * inserts (which would change fewer keys than two batches do). */
    OK(firth_writer_wait(w, first, &err), err);
    int64_t del_ids[] = {3, 50, 99};
    b = rows_of(del_ids, 3);
    uint64_t tok = 0;
    OK(firth_writer_delete(w, b, &tok, &err), err);
    firth_batch_free(b);
    OK(firth_writer_wait(w, tok, &err), err);
    OK(firth_writer_flush(w, &err), err);
    int64_t changed = 0;
    firth_writer_stats(w, NULL, &changed, NULL);
    assert_int_equal(changed, 103);
    OK(firth_writer_close(w, &err), err);

    firth_lookuper *l = NULL;
    assert_int_equal(firth_lookuper_open(client, "stream_nope", NULL, &l, &err),
                     FIRTH_ENOTFOUND);
    OK(firth_lookuper_open(client, "users", "s, id", &l, &err), err);
    /* Keys in an order of their own, some missing: rows come back in key order. */
    fr_schema *ks = schema_of("id BIGINT NOT NULL");
    fr_builder *bld = NULL;
    fr_error e = {0};
    int64_t keys[] = {42, 3, 7, 1000, 0, 99, 51};
    assert_int_equal(fr_builder_new(ks, &bld, &e), 0);
    for (int i = 0; i < 7; i++) assert_int_equal(fr_builder_append_i64(bld, 0, keys[i], &e), 0);
    fr_batch *kb = NULL;
    assert_int_equal(fr_builder_finish(bld, &kb, &e), 0);
    fr_builder_free(bld);
    fr_schema_free(ks);
    firth_batch *kfb = firth_batch_wrap(kb);
    bool found[7];
    firth_batch *rows = NULL;
    OK(firth_lookup(l, kfb, found, &rows, &err), err);
    bool want[] = {true, false, true, false, true, false, true};
    for (int i = 0; i < 7; i++) assert_int_equal(found[i], want[i]);
    assert_int_equal(firth_batch_num_rows(rows), 4);
    int64_t got[] = {42, 7, 0, 51};
    for (int i = 0; i < 4; i++) assert_int_equal(cell_i64(rows, 1, i), got[i]);
    firth_batch_free(rows);
    /* A prefix of the whole key is a point lookup by prefix. */
    int64_t counts[7];
    OK(firth_prefix_lookup(l, kfb, counts, &rows, &err), err);
    for (int i = 0; i < 7; i++) assert_int_equal(counts[i], want[i] ? 1 : 0);
    assert_int_equal(firth_batch_num_rows(rows), 4);
    firth_batch_free(rows);
    firth_batch_free(kfb);
    firth_lookuper_close(l);

    /* The changelog: 100 inserts, 3 deletes. */
    firth_scanner *sc = NULL;
    OK(firth_scanner_open(client, "users", NULL, &sc, &err), err);
    OK(firth_scanner_subscribe(sc, NULL, -1, FIRTH_START_EARLIEST, 0, &err), err);
    int inserts = 0, deletes = 0;
    for (int round = 0; round < 50 && inserts + deletes < 103; round++) {
        firth_scan_result *r = NULL;
        OK(firth_scanner_poll(sc, 200, &r, &err), err);
        for (int i = 0; i < firth_scan_result_count(r); i++) {
            const firth_scan_batch *sb = firth_scan_result_get(r, i);
            assert_non_null(sb->changes);
            for (int64_t k = 0; k < firth_batch_num_rows(sb->batch); k++) {
                inserts += sb->changes[k] == FIRTH_CHANGE_INSERT;
                deletes += sb->changes[k] == FIRTH_CHANGE_DELETE;
            }
        }
        firth_scan_result_free(r);
    }
    assert_int_equal(inserts, 100);
    assert_int_equal(deletes, 3);
    firth_scanner_close(sc);
}

/* n rows (id from, from + 1, ...; region eu, us, apac in turn) of a table partitioned by
 * region. */
static firth_batch *region_rows(int64_t from, int n)
{
    static const char *regions[] = {"eu", "us", "apac"};
    fr_schema *schema = schema_of("id BIGINT NOT NULL, region STRING NOT NULL");
    fr_builder *bld = NULL;
    fr_error e = {0};
    assert_int_equal(fr_builder_new(schema, &bld, &e), 0);
    for (int i = 0; i < n; i++) {
        assert_int_equal(fr_builder_append_i64(bld, 0, from + i, &e), 0);
        assert_int_equal(fr_builder_append_bytes(bld, 1, regions[i % 3],
                                                 strlen(regions[i % 3]), &e), 0);
    }
    fr_batch *raw = NULL;
    assert_int_equal(fr_builder_finish(bld, &raw, &e), 0);
    fr_builder_free(bld);
    fr_schema_free(schema);
    return firth_batch_wrap(raw);
}

static void create_regions(firth_client *c, const char *name, const char *dynamic)
{
    const char *keys[] = {"bucket.num", "table.partition.dynamic-creation"};
    const char *vals[] = {"2", dynamic};
    firth_table_def def = {
        .table = name,
        .schema_json = "{\"fields\": [{\"name\": \"id\", \"type\": \"BIGINT\", \"nullable\": "
                       "false}, {\"name\": \"region\", \"type\": \"STRING\", \"nullable\": "
                       "false}]}",
        .partition_keys = "region",
        .option_keys = keys,
        .option_values = vals,
        .noptions = 2,
    };
    firth_error err = {0};
    OK(firth_create_table(c, &def, &err), err);
}

/* ---- partitions ------------------------------------------------------------------------------- */

static void test_partitions(void **state)
{
    (void)state;
    firth_error err = {0};
    create_regions(client, "clicks", "true");
    OK(firth_add_partition(client, "clicks", "region=eu", false, &err), err);
    assert_int_equal(firth_add_partition(client, "clicks", "region=eu", false, &err),
                     FIRTH_EEXIST);
    firth_scanner *sc = NULL;
    OK(firth_scanner_open(client, "clicks", NULL, &sc, &err), err);
    OK(firth_scanner_subscribe(sc, NULL, -1, FIRTH_START_EARLIEST, 0, &err), err);

    /* The writer creates the partitions its rows name. */
    const char *regions[] = {"eu", "us", "apac"};
    firth_batch *b = region_rows(0, 90);
    firth_writer *w = NULL;
    OK(firth_writer_open(client, "clicks", NULL, &w, &err), err);
    OK(firth_writer_append(w, b, NULL, &err), err);
    OK(firth_writer_close(w, &err), err);
    firth_batch_free(b);

    char **names = NULL;
    int64_t *ids = NULL;
    int n = 0;
    OK(firth_list_partitions(client, "clicks", &names, &ids, &n, &err), err);
    assert_int_equal(n, 3);
    assert_string_equal(names[0], "region=apac");
    assert_string_equal(names[2], "region=us");
    firth_names_free(names, n);
    firth_free(ids);

    /* The scanner follows the partitions created after it subscribed. */
    int64_t rows = 0, per[3] = {0};
    for (int round = 0; round < 60 && rows < 90; round++) {
        firth_scan_result *r = NULL;
        OK(firth_scanner_poll(sc, 200, &r, &err), err);
        for (int i = 0; i < firth_scan_result_count(r); i++) {
            const firth_scan_batch *sb = firth_scan_result_get(r, i);
            assert_non_null(sb->partition);
            for (int k = 0; k < 3; k++)
                if (strcmp(sb->partition + 7, regions[k]) == 0)
                    per[k] += firth_batch_num_rows(sb->batch);
            rows += firth_batch_num_rows(sb->batch);
        }
        firth_scan_result_free(r);
    }
    assert_int_equal(rows, 90);
    for (int k = 0; k < 3; k++) assert_int_equal(per[k], 30);
    firth_scanner_close(sc);

    OK(firth_drop_partition(client, "clicks", "region=us", false, &err), err);
    OK(firth_drop_partition(client, "clicks", "region=us", true, &err), err);
    assert_int_equal(firth_drop_partition(client, "clicks", "region=us", false, &err),
                     FIRTH_ENOTFOUND);
    OK(firth_list_partitions(client, "clicks", &names, &ids, &n, &err), err);
    assert_int_equal(n, 2);
    firth_names_free(names, n);
    firth_free(ids);
}

/* ---- SQL -------------------------------------------------------------------------------------- */

typedef struct sqlcap {
    int begins, ends;
    int64_t rows, sum;
    char message[256];
} sqlcap;

static int cap_begin(void *ctx, const char *schema_json)
{
    ((sqlcap *)ctx)->begins++;
    assert_non_null(strstr(schema_json, "fields"));
    return 0;
}

static int cap_rows(void *ctx, firth_batch *b)
{
    sqlcap *c = ctx;
    for (int64_t r = 0; r < firth_batch_num_rows(b); r++) c->sum += cell_i64(b, 0, r);
    c->rows += firth_batch_num_rows(b);
    firth_batch_free(b);
    return 0;
}

static int cap_end(void *ctx, const char *message)
{
    sqlcap *c = ctx;
    c->ends++;
    snprintf(c->message, sizeof c->message, "%s", message ? message : "(null)");
    return 0;
}

static void test_sql(void **state)
{
    (void)state;
    sqlcap c = {0};
    firth_sink sink = {.ctx = &c, .begin = cap_begin, .rows = cap_rows, .end = cap_end};
    firth_error err = {0};
    OK(firth_execute(client, "CREATE DATABASE q; USE q; CREATE TABLE t (a BIGINT); "
                             "INSERT INTO t VALUES (1), (2), (3)", &sink, &err), err);
    assert_int_equal(c.ends, 4);
    assert_non_null(strstr(c.message, "3"));
    /* USE stays in force for the next call, as embedded. */
    memset(&c, 0, sizeof c);
    OK(firth_execute(client, "SELECT a FROM t", &sink, &err), err);
    assert_int_equal(c.begins, 1);
    assert_int_equal(c.rows, 3);
    assert_int_equal(c.sum, 6);
    assert_string_equal(c.message, "(null)");
    assert_int_not_equal(firth_execute(client, "SELECT nope FROM t", &sink, &err), 0);
    assert_non_null(strstr(err.msg, "nope"));
    assert_int_equal(firth_execute(client, "SELEC 1", &sink, &err), FIRTH_ESYNTAX);
    assert_non_null(strstr(err.msg, "line 1, column 1"));
    char **names = NULL;
    int n = 0;
    OK(firth_list_tables(client, NULL, &names, &n, &err), err);
    assert_int_equal(n, 1);
    firth_names_free(names, n);
}

/* ---- idempotence ------------------------------------------------------------------------------- */

/* The same (writer, sequence) sent twice is applied once. */
static void test_idempotent_produce(void **state)
{
    (void)state;
    create_table("once", NULL, "2");
    firth_batch *b = range_of(0, 10);
    firth_error err = {0};
    int64_t n = 0;
    OK(firth_produce(client, "once", b, 77, 0, &n, &err), err);
    assert_int_equal(n, 10);
    OK(firth_produce(client, "once", b, 77, 0, &n, &err), err);
    assert_int_equal(n, 0);
    OK(firth_produce(client, "once", b, 77, 1, &n, &err), err);
    assert_int_equal(n, 10);
    firth_batch_free(b);
    seen s;
    seen_init(&s, 10);
    int64_t count[10] = {0};
    (void)count;
    firth_scan_options so = {.start = FIRTH_START_EARLIEST, .max_records = -1};
    OK(firth_scan(client, "once", &so, scan_fn, &s, &err), err);
    assert_int_equal(s.rows, 20);
    free(s.count);
}

/* ---- one-shot calls on a table created again ------------------------------------------ */

/* The server's count of GET_TABLE_INFO requests, from its /metrics. */
static int64_t table_info_requests(void)
{
    char host[256], req[512], buf[1 << 16];
    snprintf(host, sizeof host, "%s", http_addr);
    char *colon = strrchr(host, ':');
    assert_non_null(colon);
    *colon = '\0';
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(colon + 1))};
    assert_int_equal(inet_pton(AF_INET, host, &a.sin_addr), 1);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    int n = snprintf(req, sizeof req, "GET /metrics HTTP/1.0\r\nHost: %s\r\n\r\n", http_addr);
    assert_int_equal(write(fd, req, (size_t)n), n);
    size_t len = 0;
    for (ssize_t r; len < sizeof buf - 1 && (r = read(fd, buf + len, sizeof buf - 1 - len)) > 0;)
        len += (size_t)r;
    close(fd);
    buf[len] = '\0';
    const char *key = "firth_requests_total{api=\"get_table_info\"} ";
    const char *at = strstr(buf, key);
    assert_non_null(at);
    return strtoll(at + strlen(key), NULL, 10);
}

static int64_t count_rows(const char *table)
{
    seen s;
    seen_init(&s, 1000);
    firth_error err = {0};
    firth_scan_options so = {.start = FIRTH_START_EARLIEST, .max_records = -1};
    OK(firth_scan(client, table, &so, scan_fn, &s, &err), err);
    free(s.count);
    return s.rows;
}

/* Another client drops the table and creates it again under the same name: this client's
 * one-shot calls land in the new table whatever its keys, as they would without the
 * description a remote client keeps between calls (it asks the server once, not per call). */
static void test_recreated_table(void **state)
{
    (void)state;
    firth_error err = {0};
    firth_client *other = client; /* an embedded data dir has one client */
    if (remote) OK(firth_open(target, &other, &err), err);
    create_table("again", NULL, "2");
    firth_batch *b = range_of(0, 5);
    int64_t n = 0, asked = remote ? table_info_requests() : 0;
    for (int i = 0; i < 3; i++) OK(firth_produce(client, "again", b, -1, 0, &n, &err), err);
    if (remote) assert_int_equal(table_info_requests() - asked, 1);
    assert_int_equal(count_rows("again"), 15);

    /* The same columns, another table id: the server refuses the old one, the call is
     * tried again on a fresh description. */
    OK(firth_drop_table(other, "again", false, &err), err);
    create_table_on(other, "again", NULL, "3");
    OK(firth_produce(client, "again", b, -1, 0, &n, &err), err);
    assert_int_equal(n, 5);
    assert_int_equal(count_rows("again"), 5);

    /* Now with a primary key: the kept description says there is none. */
    OK(firth_drop_table(other, "again", false, &err), err);
    create_table_on(other, "again", "id", "2");
    OK(firth_upsert(client, "again", b, NULL, NULL, -1, 0, &n, &err), err);
    assert_int_equal(n, 5);
    assert_int_equal(firth_produce(client, "again", b, -1, 0, &n, &err), FIRTH_EINVAL);
    assert_non_null(strstr(err.msg, "has a primary key"));

    /* Gone for good. */
    OK(firth_drop_table(other, "again", false, &err), err);
    assert_int_equal(firth_upsert(client, "again", b, NULL, NULL, -1, 0, &n, &err),
                     FIRTH_ENOTFOUND);
    firth_batch_free(b);
    if (other != client) firth_close(other);
}

/* Another client drops a partition between this client's one-shot calls: the rows for it
 * land in the partition created again, as they would without the description kept
 * between calls; without dynamic creation, the call says the partition is missing. */
static void test_dropped_partition(void **state)
{
    (void)state;
    firth_error err = {0};
    firth_client *other = client;
    if (remote) OK(firth_open(target, &other, &err), err);
    create_regions(client, "visits", "true");
    int64_t n = 0, asked = remote ? table_info_requests() : 0;
    for (int i = 0; i < 3; i++) {
        firth_batch *b = region_rows(30 * i, 30);
        OK(firth_produce(client, "visits", b, -1, 0, &n, &err), err);
        firth_batch_free(b);
        assert_int_equal(n, 30);
    }
    if (remote) assert_int_equal(table_info_requests() - asked, 1);
    OK(firth_drop_partition(other, "visits", "region=us", false, &err), err);
    firth_batch *b = region_rows(90, 30);
    OK(firth_produce(client, "visits", b, -1, 0, &n, &err), err);
    firth_batch_free(b);
    assert_int_equal(n, 30);
    assert_int_equal(count_rows("visits"), 90 - 30 + 30);

    create_regions(client, "fixed", "false");
    const char *regions[] = {"region=eu", "region=us", "region=apac"};
    for (int i = 0; i < 3; i++) OK(firth_add_partition(client, "fixed", regions[i], false, &err), err);
    b = region_rows(0, 30);
    OK(firth_produce(client, "fixed", b, -1, 0, &n, &err), err);
    OK(firth_drop_partition(other, "fixed", "region=apac", false, &err), err);
    assert_int_equal(firth_produce(client, "fixed", b, -1, 0, &n, &err), FIRTH_ENOTFOUND);
    assert_non_null(strstr(err.msg, "region=apac"));
    firth_batch_free(b);
    if (other != client) firth_close(other);
}

/* Threads sharing one client make one-shot calls at once, the first of them racing to
 * describe the table: every row lands once, and (remote) the table is described at most
 * once per thread. */
#define SHARED_THREADS 8
#define SHARED_CALLS 25
#define SHARED_ROWS 4

static void *shared_producer(void *arg)
{
    int64_t first = (int64_t)(intptr_t)arg * SHARED_CALLS * SHARED_ROWS;
    for (int k = 0; k < SHARED_CALLS; k++) {
        firth_batch *b = range_of(first + k * SHARED_ROWS, SHARED_ROWS);
        firth_error err = {0};
        int64_t n = 0;
        int rc = firth_produce(client, "shared", b, -1, 0, &n, &err);
        firth_batch_free(b);
        if (rc != 0 || n != SHARED_ROWS) return (void *)(intptr_t)1;
    }
    return NULL;
}

static void test_shared_client(void **state)
{
    (void)state;
    create_table("shared", NULL, "4");
    int64_t asked = remote ? table_info_requests() : 0;
    pthread_t tid[SHARED_THREADS];
    for (intptr_t i = 0; i < SHARED_THREADS; i++)
        assert_int_equal(pthread_create(&tid[i], NULL, shared_producer, (void *)i), 0);
    for (int i = 0; i < SHARED_THREADS; i++) {
        void *failed = NULL;
        pthread_join(tid[i], &failed);
        assert_null(failed);
    }
    if (remote) assert_true(table_info_requests() - asked <= SHARED_THREADS);
    seen s;
    seen_init(&s, SHARED_THREADS * SHARED_CALLS * SHARED_ROWS);
    firth_error err = {0};
    firth_scan_options so = {.start = FIRTH_START_EARLIEST, .max_records = -1};
    OK(firth_scan(client, "shared", &so, scan_fn, &s, &err), err);
    assert_int_equal(s.rows, s.n);
    seen_check(&s);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_admin, setup, teardown),
    cmocka_unit_test_setup_teardown(test_writer_log, setup, teardown),
    cmocka_unit_test_setup_teardown(test_writer_batch_bound, setup, teardown),
    cmocka_unit_test_setup_teardown(test_writer_after_failure, setup, teardown),
    cmocka_unit_test_setup_teardown(test_writer_errors, setup, teardown),
    cmocka_unit_test_setup_teardown(test_scanner, setup, teardown),
    cmocka_unit_test_setup_teardown(test_pk_writer_lookup, setup, teardown),
    cmocka_unit_test_setup_teardown(test_partitions, setup, teardown),
    cmocka_unit_test_setup_teardown(test_sql, setup, teardown),
    cmocka_unit_test_setup_teardown(test_idempotent_produce, setup, teardown),
    cmocka_unit_test_setup_teardown(test_recreated_table, setup, teardown),
    cmocka_unit_test_setup_teardown(test_shared_client, setup, teardown),
    cmocka_unit_test_setup_teardown(test_dropped_partition, setup, teardown),
};

int main(void)
{
    const char *env = getenv("FIRTH_TEST_SEED");
    seed = env ? (unsigned)strtoul(env, NULL, 10) : (unsigned)time(NULL);
    printf("seed %u\n", seed);
    srand(seed);
    char *dir = tmpdir("client_api");
    assert_non_null(dir);
    snprintf(target, sizeof target, "file:%s/data", dir);
    remote = false;
    int failed = _cmocka_run_group_tests("client_api_embedded", tests,
                                         sizeof tests / sizeof tests[0], NULL, NULL);
    char *sdir = tmpdir("client_api_server");
    if (start_server(sdir)) {
        remote = true;
        printf("remote: %s\n", target);
        failed += _cmocka_run_group_tests("client_api_remote", tests,
                                          sizeof tests / sizeof tests[0], NULL, NULL);
        stop_server();
    } else {
        printf("remote: skipped (no `firth server` to start)\n");
    }
    rmtree(dir);
    rmtree(sdir);
    free(dir);
    free(sdir);
    return failed ? 1 : 0;
}
