/* test_client_route.c — the client's internals that must agree with the engine or keep data
 * exact: bucket routing (random rows of every key type, checked against the engine's own
 * fr_table_bucket_of), partition names (against the engine's partitions), gathering rows of
 * several batches (against cell-by-cell reads), grouping rows by destination, and the
 * remote connection's reconnection (against a firth server beside this test, when there is
 * one). Randomized tests print their seed (FIRTH_TEST_SEED sets it). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <ftw.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "client/client_int.h"

static unsigned seed;

static char *tmpdir(const char *name)
{
    const char *base = getenv("FIRTH_TEST_TMP");
    if (!base || !*base) base = "/tmp";
    mkdir(base, 0755);
    char tmpl[1024];
    snprintf(tmpl, sizeof tmpl, "%s/%s.XXXXXX", base, name);
    assert_non_null(mkdtemp(tmpl));
    return strdup(tmpl);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static void rmtree(char *dir)
{
    nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    free(dir);
}

/* A random value of column c's type into the builder (NULL now and then when nullable). */
static void random_cell(fr_builder *bld, int c, const fr_type *t, fr_error *err)
{
    if (t->nullable && rand() % 7 == 0) {
        assert_int_equal(fr_builder_append_null(bld, c, err), 0);
        return;
    }
    char text[64];
    switch (t->id) {
    case FR_T_BOOLEAN: assert_int_equal(fr_builder_append_bool(bld, c, rand() & 1, err), 0); break;
    case FR_T_TINYINT: assert_int_equal(fr_builder_append_i64(bld, c, rand() % 256 - 128, err), 0); break;
    case FR_T_INT:
    case FR_T_DATE: assert_int_equal(fr_builder_append_i64(bld, c, rand() - RAND_MAX / 2, err), 0); break;
    case FR_T_BIGINT:
    case FR_T_TIMESTAMP:
        assert_int_equal(fr_builder_append_i64(bld, c, ((int64_t)rand() << 31) ^ rand(), err), 0);
        break;
    case FR_T_DOUBLE: {
        int k = rand() % 10;
        double v = k == 0 ? -0.0 : k == 1 ? 0.0 : (double)rand() / 3.0 - 1e6;
        assert_int_equal(fr_builder_append_f64(bld, c, v, err), 0);
        break;
    }
    case FR_T_DECIMAL:
        assert_int_equal(fr_builder_append_i128(bld, c, (fr_i128)rand() * 1000 - 77, err), 0);
        break;
    default: {
        int n = snprintf(text, sizeof text, "k%d", rand() % 1000);
        assert_int_equal(fr_builder_append_bytes(bld, c, text, (size_t)(rand() % 5 ? n : 0), err), 0);
        break;
    }
    }
}

static fr_batch *random_batch(const fr_schema *s, int rows)
{
    fr_builder *bld = NULL;
    fr_error err = {0};
    assert_int_equal(fr_builder_new(s, &bld, &err), 0);
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < fr_schema_num_fields(s); c++)
            random_cell(bld, c, &fr_schema_field(s, c)->type, &err);
    fr_batch *b = NULL;
    assert_int_equal(fr_builder_finish(bld, &b, &err), 0);
    fr_builder_free(bld);
    return b;
}

static const char *TYPES[] = {"BOOLEAN", "TINYINT", "INT", "BIGINT", "DOUBLE", "DECIMAL(12, 3)",
                              "STRING", "BYTES", "DATE", "TIMESTAMP(3)", "VARCHAR(10)"};

/* For each key type, and a two-column key, the client's bucket is the engine's. */
static void test_bucket_matches_engine(void **state)
{
    (void)state;
    char *dir = tmpdir("client_route");
    char path[1100];
    snprintf(path, sizeof path, "%s/data", dir);
    fr_engine_options o;
    fr_engine_options_default(&o);
    o.data_dir = path;
    fr_engine *e = NULL;
    fr_error err = {0};
    assert_int_equal(fr_engine_open(&o, &e, &err), 0);
    int ntypes = (int)(sizeof TYPES / sizeof TYPES[0]);
    for (int k = 0; k <= ntypes; k++) {
        /* Columns a (the key's first type), b (the next type), v; the key is a, or a and b
         * for the last round. */
        fr_field f[3] = {{"a", {0}}, {"b", {0}}, {"v", {0}}};
        const char *ta = TYPES[k % ntypes], *tb = TYPES[(k + 3) % ntypes];
        assert_int_equal(fr_type_parse(ta, &f[0].type, &err), 0);
        assert_int_equal(fr_type_parse(tb, &f[1].type, &err), 0);
        assert_int_equal(fr_type_parse("INT", &f[2].type, &err), 0);
        fr_schema *s = NULL;
        assert_int_equal(fr_schema_new(f, 3, 0, &s, &err), 0);
        char name[16];
        snprintf(name, sizeof name, "t%d", k);
        bool two = k == ntypes;
        fr_option opts[] = {{"bucket.num", "7"}, {"bucket.key", two ? "a,b" : "a"}};
        fr_table_spec spec = {.db = "default", .name = name, .schema = s, .options = opts,
                              .noptions = 2};
        assert_int_equal(fr_engine_create_table(e, &spec, false, &err), 0);
        fr_table *t = NULL;
        assert_int_equal(fr_engine_get_table(e, "default", name, &t, &err), 0);
        fr_batch *b = random_batch(s, 300);
        int key[2] = {0, 1};
        fr_buf scratch;
        fr_buf_init(&scratch);
        for (int64_t r = 0; r < 300; r++) {
            int mine = -1;
            assert_int_equal(fr_route_bucket(b, key, two ? 2 : 1, 7, r, &scratch, &mine, &err), 0);
            int theirs = fr_table_bucket_of(t, b, r);
            if (mine != theirs)
                fail_msg("seed %u, key %s%s%s, row %lld: client bucket %d, engine %d", seed, ta,
                         two ? ", " : "", two ? tb : "", (long long)r, mine, theirs);
        }
        /* Writer buckets of a table without a bucket key. */
        assert_int_equal(fr_route_writer_bucket(42, 7, 1), 0);
        fr_buf_free(&scratch);
        fr_batch_free(b);
        fr_table_release(t);
        fr_schema_free(s);
    }
    fr_engine_close(e);
    rmtree(dir);
}

/* Partition names are the engine's: "k=v/k2=v2" with canonical values. */
static void test_partition_name(void **state)
{
    (void)state;
    fr_field f[3] = {{"dt", {0}}, {"n", {0}}, {"v", {0}}};
    fr_error err = {0};
    assert_int_equal(fr_type_parse("DATE", &f[0].type, &err), 0);
    assert_int_equal(fr_type_parse("INT", &f[1].type, &err), 0);
    assert_int_equal(fr_type_parse("STRING", &f[2].type, &err), 0);
    fr_schema *s = NULL;
    assert_int_equal(fr_schema_new(f, 3, 0, &s, &err), 0);
    fr_builder *bld = NULL;
    assert_int_equal(fr_builder_new(s, &bld, &err), 0);
    fr_value d;
    assert_int_equal(fr_value_parse("2026-11-30", 10, &f[0].type, &d, &err), 0);
    assert_int_equal(fr_builder_append(bld, 0, &d, &err), 0);
    assert_int_equal(fr_builder_append_i64(bld, 1, 7, &err), 0);
    assert_int_equal(fr_builder_append_null(bld, 2, &err), 0);
    assert_int_equal(fr_builder_append(bld, 0, &d, &err), 0);
    assert_int_equal(fr_builder_append_null(bld, 1, &err), 0);
    assert_int_equal(fr_builder_append_null(bld, 2, &err), 0);
    fr_batch *b = NULL;
    assert_int_equal(fr_builder_finish(bld, &b, &err), 0);
    fr_builder_free(bld);
    int part[] = {0, 1};
    const char *names[] = {"dt", "n"};
    fr_buf out;
    fr_buf_init(&out);
    assert_int_equal(fr_route_partition_name(b, part, names, 2, 0, &out, &err), 0);
    assert_string_equal((const char *)out.data, "dt=2026-11-30/n=7");
    fr_buf_reset(&out);
    assert_int_equal(fr_route_partition_name(b, part, names, 2, 1, &out, &err), FR_EINVAL);
    assert_non_null(strstr(err.msg, "'n' is NULL"));
    fr_buf_free(&out);
    fr_batch_free(b);
    fr_schema_free(s);
}

static void expect_same_cell(const fr_batch *a, int64_t ra, const fr_batch *b, int64_t rb)
{
    for (int c = 0; c < fr_batch_num_columns(a); c++) {
        const fr_column *ca = fr_batch_column(a, c), *cb = fr_batch_column(b, c);
        assert_int_equal(fr_column_is_null(ca, ra), fr_column_is_null(cb, rb));
        if (fr_column_is_null(ca, ra)) continue;
        fr_value va, vb;
        fr_column_get(ca, ra, &va);
        fr_column_get(cb, rb, &vb);
        fr_buf ta, tb;
        fr_buf_init(&ta);
        fr_buf_init(&tb);
        fr_error err = {0};
        assert_int_equal(fr_value_format(&va, &ta, &err), 0);
        assert_int_equal(fr_value_format(&vb, &tb, &err), 0);
        assert_int_equal(ta.len, tb.len);
        assert_memory_equal(ta.data, tb.data, ta.len);
        fr_buf_free(&ta);
        fr_buf_free(&tb);
    }
}

/* Runs of several batches, of every type, with nulls, at odd offsets: every cell is where
 * it should be; a gather of rows picks exactly those rows. */
static void test_gather(void **state)
{
    (void)state;
    int ntypes = (int)(sizeof TYPES / sizeof TYPES[0]);
    fr_field f[16];
    char names[16][8];
    fr_error err = {0};
    for (int i = 0; i < ntypes; i++) {
        snprintf(names[i], sizeof names[i], "c%d", i);
        f[i].name = names[i];
        assert_int_equal(fr_type_parse(TYPES[i], &f[i].type, &err), 0);
    }
    fr_schema *s = NULL;
    assert_int_equal(fr_schema_new(f, ntypes, 0, &s, &err), 0);
    fr_batch *src[3] = {random_batch(s, 13), random_batch(s, 0), random_batch(s, 70)};
    fr_gather_run runs[] = {{src[0], 3, 7}, {src[1], 0, 0}, {src[2], 1, 69}, {src[0], 0, 1},
                            {src[2], 0, 1}};
    fr_batch *out = NULL;
    assert_int_equal(fr_gather(s, runs, 5, &out, &err), 0);
    assert_int_equal(fr_batch_num_rows(out), 78);
    int64_t at = 0;
    for (int r = 0; r < 5; r++)
        for (int64_t i = 0; i < runs[r].count; i++) expect_same_cell(runs[r].src, runs[r].row + i, out, at++);
    assert_true(fr_gather_bytes(out) > 0);
    int64_t rows[] = {69, 0, 5, 6, 7, 33};
    fr_batch *picked = NULL;
    assert_int_equal(fr_gather_rows(src[2], rows, 6, &picked, &err), 0);
    for (int i = 0; i < 6; i++) expect_same_cell(src[2], rows[i], picked, i);
    fr_batch_free(picked);
    fr_batch_free(out);
    for (int i = 0; i < 3; i++) fr_batch_free(src[i]);
    fr_schema_free(s);
}

static void test_group(void **state)
{
    (void)state;
    int32_t dest[] = {2, 0, 2, 1, 0, 2};
    int64_t rows[6], start[4];
    fr_error err = {0};
    assert_int_equal(fr_route_group(dest, 6, 3, rows, start, &err), 0);
    int64_t want_rows[] = {1, 4, 3, 0, 2, 5}, want_start[] = {0, 2, 3, 6};
    assert_memory_equal(rows, want_rows, sizeof rows);
    assert_memory_equal(start, want_start, sizeof start);
}

/* ---- the connection against a real server ---------------------------------------------------- */

static bool firth_binary(char *out, size_t cap)
{
    const char *env = getenv("FIRTH");
    if (env && *env) return snprintf(out, cap, "%s", env) > 0 && access(out, X_OK) == 0;
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) return false;
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    if (!slash) return false;
    *slash = '\0';
    return snprintf(out, cap, "%.*s/firth", (int)(cap - 8), self) > 0 && access(out, X_OK) == 0;
}

/* Breaking the connection under a client: the next calls reconnect, a writer's rows all
 * arrive once. */
static pid_t server_pid = -1;
static char *server_dir;

static int stop_server(void **state)
{
    (void)state;
    if (server_pid > 0) {
        kill(server_pid, SIGTERM);
        waitpid(server_pid, NULL, 0);
        server_pid = -1;
    }
    if (server_dir) rmtree(server_dir);
    server_dir = NULL;
    return 0;
}

static void test_reconnect(void **state)
{
    (void)state;
    char bin[PATH_MAX + 64];
    if (!firth_binary(bin, sizeof bin)) {
        printf("reconnect: skipped (no firth binary)\n");
        return;
    }
    char *dir = server_dir = tmpdir("client_reconnect");
    char data[1200], ready[1200];
    snprintf(data, sizeof data, "%s/data", dir);
    snprintf(ready, sizeof ready, "%s/ready.json", dir);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        execl(bin, bin, "server", "--data-dir", data, "--listen", "127.0.0.1:0",
              "--http-listen", "off", "--ready-file", ready, (char *)NULL);
        _exit(127);
    }
    server_pid = pid;
    char target[300] = "";
    for (int i = 0; i < 400 && !*target; i++) {
        json_error_t jerr;
        json_t *root = json_load_file(ready, 0, &jerr);
        const char *native = root ? json_string_value(json_object_get(root, "native")) : NULL;
        if (native) snprintf(target, sizeof target, "firth://%s", native);
        json_decref(root);
        struct timespec ts = {.tv_nsec = 50 * 1000000};
        if (!*target) nanosleep(&ts, NULL);
    }
    assert_true(*target);
    firth_client *c = NULL;
    firth_error ferr = {0};
    assert_int_equal(firth_open(target, &c, &ferr), 0);
    assert_int_equal(firth_execute(c, "CREATE TABLE t (id BIGINT) WITH ('bucket.num' = '2')",
                                   NULL, &ferr), 0);
    assert_int_equal(fr_cnet_connects(c->net), 1);
    fr_cnet_break(c->net);
    char **names = NULL;
    int n = 0;
    /* The break is seen by the reader thread; a read is retried on a new connection. */
    for (int i = 0; i < 3; i++) {
        if (firth_list_tables(c, NULL, &names, &n, &ferr) != 0) fail_msg("list: %s", ferr.msg);
        firth_names_free(names, n);
    }
    assert_int_equal(fr_cnet_connects(c->net), 2);

    /* A writer across breaks: every row once. */
    firth_writer *w = NULL;
    firth_writer_options o;
    firth_writer_options_init(&o);
    o.linger_ms = 1;
    assert_int_equal(firth_writer_open(c, "t", &o, &w, &ferr), 0);
    fr_schema *s = NULL;
    fr_field f = {"id", fr_type_of(FR_T_BIGINT)};
    fr_error err = {0};
    assert_int_equal(fr_schema_new(&f, 1, 0, &s, &err), 0);
    for (int k = 0; k < 20; k++) {
        fr_builder *bld = NULL;
        assert_int_equal(fr_builder_new(s, &bld, &err), 0);
        for (int i = 0; i < 50; i++) assert_int_equal(fr_builder_append_i64(bld, 0, k * 50 + i, &err), 0);
        fr_batch *b = NULL;
        assert_int_equal(fr_builder_finish(bld, &b, &err), 0);
        fr_builder_free(bld);
        firth_batch *fb = firth_batch_wrap(b);
        assert_int_equal(firth_writer_append(w, fb, NULL, &ferr), 0);
        firth_batch_free(fb);
        if (k % 5 == 2) fr_cnet_break(c->net);
    }
    if (firth_writer_close(w, &ferr) != 0) fail_msg("writer: %s", ferr.msg);
    fr_schema_free(s);
    int64_t seen[1000] = {0}, total = 0;
    firth_scanner *sc = NULL;
    assert_int_equal(firth_scanner_open(c, "t", NULL, &sc, &ferr), 0);
    assert_int_equal(firth_scanner_subscribe(sc, NULL, -1, FIRTH_START_EARLIEST, 0, &ferr), 0);
    for (int round = 0; round < 50 && total < 1000; round++) {
        firth_scan_result *r = NULL;
        assert_int_equal(firth_scanner_poll(sc, 200, &r, &ferr), 0);
        for (int i = 0; i < firth_scan_result_count(r); i++) {
            const fr_batch *b = firth_batch_unwrap(firth_scan_result_get(r, i)->batch);
            for (int64_t k = 0; k < fr_batch_num_rows(b); k++) {
                fr_value v;
                fr_column_get(fr_batch_column(b, 0), k, &v);
                assert_true(v.v.i >= 0 && v.v.i < 1000);
                seen[v.v.i]++;
                total++;
            }
        }
        firth_scan_result_free(r);
    }
    firth_scanner_close(sc);
    for (int i = 0; i < 1000; i++)
        if (seen[i] != 1) fail_msg("row %d arrived %lld times", i, (long long)seen[i]);
    assert_true(fr_cnet_connects(c->net) >= 3);
    firth_close(c);
}

int main(void)
{
    const char *env = getenv("FIRTH_TEST_SEED");
    seed = env ? (unsigned)strtoul(env, NULL, 10) : (unsigned)time(NULL);
    printf("seed %u\n", seed);
    srand(seed);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bucket_matches_engine),
        cmocka_unit_test(test_partition_name),
        cmocka_unit_test(test_gather),
        cmocka_unit_test(test_group),
        cmocka_unit_test_teardown(test_reconnect, stop_server),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
