/* test_client.c — the public C API (firth/firth.h) used as an application would: open a
 * data dir, run SQL through a sink, describe a table, produce a batch imported through the
 * Arrow C Data Interface, and scan with columns, a predicate and start positions. Only
 * firth.h is used for the API under test (jansson reads the JSON it returns). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <ftw.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "firth/firth.h"

#define OK(expr, err)                                                                        \
    do {                                                                                     \
        int ok_rc_ = (expr);                                                                 \
        if (ok_rc_ != 0) fail_msg("%s failed: %d %s", #expr, ok_rc_, (err).msg);             \
    } while (0)

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
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void rmtree(char *dir)
{
    nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    free(dir);
}

/* ---- a sink that records what it was given --------------------------------------------- */

typedef struct capture {
    int begins, ends;
    int64_t rows;
    char last_schema[1024];
    char last_message[256];
    int stop_at_end; /* return non-zero from end() after this many statements (0: never) */
} capture;

static int cap_begin(void *ctx, const char *schema_json)
{
    capture *c = ctx;
    c->begins++;
    snprintf(c->last_schema, sizeof c->last_schema, "%s", schema_json);
    return 0;
}

static int cap_rows(void *ctx, firth_batch *b)
{
    capture *c = ctx;
    c->rows += firth_batch_num_rows(b);
    firth_batch_free(b);
    return 0;
}

static int cap_end(void *ctx, const char *message)
{
    capture *c = ctx;
    c->ends++;
    snprintf(c->last_message, sizeof c->last_message, "%s", message ? message : "(null)");
    return c->stop_at_end > 0 && c->ends >= c->stop_at_end ? 1 : 0;
}

static capture run(firth_client *c, const char *sql)
{
    capture cap = {0};
    firth_sink sink = {.ctx = &cap, .begin = cap_begin, .rows = cap_rows, .end = cap_end};
    firth_error err = {0};
    OK(firth_execute(c, sql, &sink, &err), err);
    return cap;
}

/* ---- opening --------------------------------------------------------------------------- */

static void test_open(void **state)
{
    (void)state;
    char *dir = tmpdir("client_open");
    firth_client *c = NULL, *c2 = NULL;
    firth_error err = {0};
    char target[1200];
    snprintf(target, sizeof target, "%s/data", dir);
    OK(firth_open(target, &c, &err), err); /* a plain path, created */
    assert_int_equal(firth_open(target, &c2, &err), FIRTH_ESTATE);
    assert_non_null(strstr(err.msg, "in use"));
    firth_close(c);
    snprintf(target, sizeof target, "file:%s/data", dir);
    OK(firth_open(target, &c, &err), err);
    firth_close(c);
    snprintf(target, sizeof target, "file://%s/data", dir);
    OK(firth_open(target, &c, &err), err);
    firth_close(c);

    /* Nothing listens on port 1: a remote open fails at once, saying where it tried. */
    assert_int_equal(firth_open("firth://127.0.0.1:1", &c, &err), FIRTH_EIO);
    assert_non_null(strstr(err.msg, "cannot connect to 127.0.0.1:1"));
    assert_int_equal(firth_open("firth://127.0.0.1:99999", &c, &err), FIRTH_EINVAL);
    assert_int_equal(firth_open("firth://", &c, &err), FIRTH_EINVAL);
    assert_int_equal(firth_open("s3://bucket/x", &c, &err), FIRTH_EUNSUPPORTED);
    assert_int_equal(firth_open("", &c, &err), FIRTH_EINVAL);
    assert_int_equal(firth_open("file:", &c, &err), FIRTH_EINVAL);
    /* A directory of other files is refused. */
    snprintf(target, sizeof target, "%s/other", dir);
    mkdir(target, 0755);
    char file[1300];
    snprintf(file, sizeof file, "%s/readme", target);
    FILE *f = fopen(file, "w");
    fputs("not firth\n", f);
    fclose(f);
    assert_int_equal(firth_open(target, &c, &err), FIRTH_EINVAL);
    assert_non_null(strstr(err.msg, "not a firth data dir"));
    rmtree(dir);
}

/* The number of segment files (*.log) under dir, at any depth. */
static int segments_found;
static int count_segment(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    size_t n = strlen(path);
    if (flag == FTW_F && n > 4 && strcmp(path + n - 4, ".log") == 0) segments_found++;
    return 0;
}

static int count_segments(const char *dir)
{
    segments_found = 0;
    nftw(dir, count_segment, 16, FTW_PHYS);
    return segments_found;
}

static void fill(firth_client *c)
{
    run(c, "CREATE TABLE t (id BIGINT, s STRING) WITH ('table.log.arrow.compression.type' = 'NONE')");
    for (int i = 0; i < 6; i++)
        run(c, "INSERT INTO t VALUES (1, 'a string of some length'), (2, 'another string')");
}

/* Configuration keys: checked as set, naming the key; applied to the engine. */
static void test_open_config(void **state)
{
    (void)state;
    char *dir = tmpdir("client_config");
    firth_error err = {0};
    firth_client *c = NULL;
    char target[1200];

    firth_config *cfg = NULL;
    OK(firth_config_new(&cfg, &err), err);
    assert_int_equal(firth_config_set(cfg, "log.flushes", "none", &err), FIRTH_EINVAL);
    assert_non_null(strstr(err.msg, "'log.flushes'"));
    assert_int_equal(firth_config_set(cfg, "log.flush", "never", &err), FIRTH_EINVAL);
    assert_non_null(strstr(err.msg, "log.flush"));
    OK(firth_config_set(cfg, "log.flush", "none", &err), err);
    OK(firth_config_set(cfg, "log.segment.bytes", "1kb", &err), err);
    snprintf(target, sizeof target, "%s/small", dir);
    OK(firth_open_config(target, cfg, &c, &err), err);
    firth_config_free(cfg);
    fill(c);
    firth_close(c);
    assert_true(count_segments(target) >= 3); /* 6 batches of ~400 bytes, rolled at 1 KiB */

    snprintf(target, sizeof target, "%s/default", dir);
    OK(firth_open_config(target, NULL, &c, &err), err);
    fill(c);
    firth_close(c);
    assert_int_equal(count_segments(target), 1);

    const char *keys[] = {"log.flush", "log.flush.interval", "log.segment.bytes"};
    const char *values[] = {"interval", "50ms", "1kb"};
    snprintf(target, sizeof target, "%s/opts", dir);
    OK(firth_open_opts(target, keys, values, 3, &c, &err), err);
    fill(c);
    firth_close(c);
    assert_true(count_segments(target) >= 3);
    const char *bad_values[] = {"interval", "0", "1kb"};
    assert_int_equal(firth_open_opts(target, keys, bad_values, 3, &c, &err), FIRTH_EINVAL);
    assert_non_null(strstr(err.msg, "log.flush.interval"));
    const char *unknown[] = {"log.flush", "table.flush"};
    assert_int_equal(firth_open_opts(target, unknown, values, 2, &c, &err), FIRTH_EINVAL);
    assert_non_null(strstr(err.msg, "'table.flush'"));

    int nkeys = 0;
    while (firth_config_key(nkeys)) nkeys++;
    assert_int_equal(nkeys, 11);
    assert_string_equal(firth_config_key(3), "log.retention.check-interval");
    assert_string_equal(firth_config_key(7), "kv.write-buffer.bytes");
    rmtree(dir);
}

/* ---- SQL ------------------------------------------------------------------------------- */

static void test_execute(void **state)
{
    (void)state;
    char *dir = tmpdir("client_sql");
    firth_client *c = NULL;
    firth_error err = {0};
    OK(firth_open(dir, &c, &err), err);
    capture cap = run(c, "CREATE DATABASE shop; "
                         "CREATE TABLE shop.items (id BIGINT NOT NULL, name STRING) "
                         "WITH ('bucket.num' = '2', 'bucket.key' = 'id');"
                         "INSERT INTO shop.items VALUES (1, 'a'), (2, 'b'), (3, NULL)");
    assert_int_equal(cap.ends, 3);
    assert_int_equal(cap.begins, 0);
    cap = run(c, "SELECT * FROM shop.items WHERE id >= 2");
    assert_int_equal(cap.begins, 1);
    assert_int_equal(cap.rows, 2);
    json_t *schema = json_loads(cap.last_schema, 0, NULL);
    assert_non_null(schema);
    json_t *fields = json_object_get(schema, "fields");
    assert_int_equal(json_array_size(fields), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(fields, 0), "name")),
                        "id");
    json_decref(schema);
    /* USE persists between calls. */
    run(c, "USE shop");
    cap = run(c, "SELECT name FROM items");
    assert_int_equal(cap.rows, 3);
    /* Errors name the position; execution stops at the first error. */
    capture bad = {0};
    firth_sink sink = {.ctx = &bad, .begin = cap_begin, .rows = cap_rows, .end = cap_end};
    assert_int_equal(firth_execute(c, "SELECT id FROM items;\n  SELEC 1", &sink, &err),
                     FIRTH_ESYNTAX);
    assert_non_null(strstr(err.msg, "line 2"));
    assert_true(firth_execute(c, "INSERT INTO items VALUES (4, 'd'); "
                                 "INSERT INTO nope VALUES (1); "
                                 "INSERT INTO items VALUES (5, 'e')", &sink, &err) < 0);
    assert_non_null(strstr(err.msg, "nope"));
    cap = run(c, "SELECT id FROM items");
    assert_int_equal(cap.rows, 4);
    /* A sink asking to stop is not an error, and what follows does not run. */
    capture stop = {.stop_at_end = 1};
    sink.ctx = &stop;
    OK(firth_execute(c, "INSERT INTO items VALUES (6, 'f'); INSERT INTO items VALUES (7, 'g')",
                     &sink, &err), err);
    assert_int_equal(stop.ends, 1);
    cap = run(c, "SELECT id FROM items");
    assert_int_equal(cap.rows, 5);
    /* No sink at all. */
    OK(firth_execute(c, "SELECT * FROM items", NULL, &err), err);
    firth_close(c);
    rmtree(dir);
}

/* ---- a batch built by hand through the C Data Interface -------------------------------- */

typedef struct hand {
    struct ArrowSchema schema, sid, sname;
    struct ArrowSchema *schildren[2];
    struct ArrowArray array, aid, aname;
    struct ArrowArray *achildren[2];
    const void *bufs_struct[1], *bufs_id[2], *bufs_name[3];
    int64_t ids[3];
    int32_t offsets[4];
    char chars[8];
    uint8_t validity[1];
    int releases;
} hand;

static void release_schema(struct ArrowSchema *s)
{
    for (int64_t i = 0; i < s->n_children; i++)
        if (s->children[i]->release) s->children[i]->release(s->children[i]);
    hand *h = s->private_data;
    if (h) h->releases++;
    s->release = NULL;
}

static void release_array(struct ArrowArray *a)
{
    for (int64_t i = 0; i < a->n_children; i++)
        if (a->children[i]->release) a->children[i]->release(a->children[i]);
    hand *h = a->private_data;
    if (h) h->releases++;
    a->release = NULL;
}

/* (id BIGINT NOT NULL, name STRING): (first, "x"), (first + 1, NULL), (first + 2, "yz") */
static void hand_build(hand *h, int64_t first)
{
    memset(h, 0, sizeof *h);
    h->sid = (struct ArrowSchema){.format = "l", .name = "id", .release = release_schema};
    h->sname = (struct ArrowSchema){.format = "u", .name = "name", .flags = ARROW_FLAG_NULLABLE,
                                    .release = release_schema};
    h->schildren[0] = &h->sid;
    h->schildren[1] = &h->sname;
    h->schema = (struct ArrowSchema){.format = "+s", .name = "", .n_children = 2,
                                     .children = h->schildren, .release = release_schema,
                                     .private_data = h};
    for (int i = 0; i < 3; i++) h->ids[i] = first + i;
    memcpy(h->chars, "xyz", 3);
    h->offsets[0] = 0;
    h->offsets[1] = 1;
    h->offsets[2] = 1;
    h->offsets[3] = 3;
    h->validity[0] = 0x5; /* rows 0 and 2 */
    h->bufs_id[1] = h->ids;
    h->bufs_name[0] = h->validity;
    h->bufs_name[1] = h->offsets;
    h->bufs_name[2] = h->chars;
    h->aid = (struct ArrowArray){.length = 3, .n_buffers = 2, .buffers = h->bufs_id,
                                 .release = release_array};
    h->aname = (struct ArrowArray){.length = 3, .null_count = 1, .n_buffers = 3,
                                   .buffers = h->bufs_name, .release = release_array};
    h->achildren[0] = &h->aid;
    h->achildren[1] = &h->aname;
    h->array = (struct ArrowArray){.length = 3, .n_buffers = 1, .buffers = h->bufs_struct,
                                   .n_children = 2, .children = h->achildren,
                                   .release = release_array, .private_data = h};
}

/* ---- produce and scan ------------------------------------------------------------------ */

typedef struct seen {
    int64_t rows;
    int64_t ids[64];
    int64_t offsets[64];
    int buckets[64];
    int64_t ncols;
    int64_t nulls_in_last_col;
} seen;

/* Reads the rows through the exported C Data arrays, as an application would. */
static int on_scan(void *ctx, int bucket, firth_batch *b, const int64_t *offsets)
{
    seen *s = ctx;
    struct ArrowSchema schema;
    struct ArrowArray array;
    firth_error err = {0};
    OK(firth_batch_export(b, &schema, &array, &err), err);
    firth_batch_free(b); /* the export outlives the batch */
    s->ncols = array.n_children;
    int id_col = -1;
    for (int64_t i = 0; i < schema.n_children; i++)
        if (strcmp(schema.children[i]->name, "id") == 0) id_col = (int)i;
    const struct ArrowArray *last = array.children[array.n_children - 1];
    s->nulls_in_last_col += last->null_count;
    for (int64_t r = 0; r < array.length && s->rows < 64; r++) {
        s->ids[s->rows] = id_col >= 0
                              ? ((const int64_t *)array.children[id_col]->buffers[1])
                                    [array.children[id_col]->offset + r]
                              : -1;
        s->offsets[s->rows] = offsets[r];
        s->buckets[s->rows] = bucket;
        s->rows++;
    }
    array.release(&array);
    schema.release(&schema);
    return 0;
}

static seen scan(firth_client *c, const char *table, const firth_scan_options *o)
{
    seen s = {0};
    firth_error err = {0};
    OK(firth_scan(c, table, o, on_scan, &s, &err), err);
    return s;
}

static void test_produce_scan(void **state)
{
    (void)state;
    char *dir = tmpdir("client_produce");
    firth_client *c = NULL;
    firth_error err = {0};
    OK(firth_open(dir, &c, &err), err);
    run(c, "CREATE TABLE t (id BIGINT NOT NULL, name STRING) "
           "WITH ('bucket.num' = '3', 'bucket.key' = 'id')");
    char *info = NULL;
    OK(firth_table_info(c, "default.t", &info, &err), err);
    json_t *j = json_loads(info, 0, NULL);
    assert_int_equal(json_integer_value(json_object_get(j, "bucket_num")), 3);
    assert_string_equal(json_string_value(json_array_get(json_object_get(j, "bucket_key"), 0)),
                        "id");
    assert_int_equal(json_array_size(json_object_get(json_object_get(j, "schema"), "fields")), 2);
    json_decref(j);
    firth_free(info);
    assert_int_equal(firth_table_info(c, "nope", &info, &err), FIRTH_ENOTFOUND);

    /* Produce two hand-built batches, the second one twice (a retry). */
    hand h;
    hand_build(&h, 10);
    firth_batch *b = NULL;
    OK(firth_batch_import(&h.schema, &h.array, &b, &err), err);
    assert_null(h.array.release); /* moved into the batch */
    assert_non_null(h.schema.release); /* still ours */
    h.schema.release(&h.schema);
    assert_int_equal(h.releases, 1);
    assert_int_equal(firth_batch_num_rows(b), 3);
    int64_t appended = -1;
    OK(firth_produce(c, "t", b, 1, 0, &appended, &err), err);
    assert_int_equal(appended, 3);
    OK(firth_produce(c, "t", b, 1, 0, &appended, &err), err);
    assert_int_equal(appended, 0);
    firth_batch_free(b);
    assert_int_equal(h.releases, 2); /* the imported schema and array went back to us */
    hand_build(&h, 20);
    OK(firth_batch_import(&h.schema, &h.array, &b, &err), err);
    h.schema.release(&h.schema);
    OK(firth_produce(c, "default.t", b, -1, 0, &appended, &err), err);
    assert_int_equal(appended, 3);
    assert_int_equal(firth_produce(c, "missing", b, -1, 0, &appended, &err), FIRTH_ENOTFOUND);
    firth_batch_free(b);

    /* Everything, every row once, each in the bucket it hashes to. */
    seen s = scan(c, "t", NULL);
    assert_int_equal(s.rows, 6);
    int64_t sum = 0;
    for (int i = 0; i < s.rows; i++) sum += s.ids[i];
    assert_int_equal(sum, 10 + 11 + 12 + 20 + 21 + 22);
    assert_int_equal(s.ncols, 2);
    assert_int_equal(s.nulls_in_last_col, 2);

    /* Columns and a predicate. */
    firth_scan_options o = {.start = FIRTH_START_EARLIEST, .columns = " name , id",
                            .where = "id > 11 AND name IS NOT NULL", .max_records = -1};
    s = scan(c, "t", &o);
    assert_int_equal(s.ncols, 2);
    assert_int_equal(s.rows, 3); /* 12 'yz', 20 'x', 22 'yz' */
    for (int i = 0; i < s.rows; i++) assert_true(s.ids[i] == 12 || s.ids[i] == 20 || s.ids[i] == 22);
    o.columns = "name";
    s = scan(c, "t", &o);
    assert_int_equal(s.ncols, 1);
    assert_int_equal(s.rows, 3);
    o.max_records = 2;
    s = scan(c, "t", &o);
    assert_int_equal(s.rows, 2);

    /* Start positions. */
    firth_scan_options latest = {.start = FIRTH_START_LATEST, .max_records = -1};
    s = scan(c, "t", &latest);
    assert_int_equal(s.rows, 0);
    firth_scan_options from1 = {.start = FIRTH_START_OFFSET, .start_value = 1, .max_records = -1};
    s = scan(c, "t", &from1);
    for (int i = 0; i < s.rows; i++) assert_true(s.offsets[i] >= 1);
    assert_true(s.rows < 6);
    firth_scan_options ts = {.start = FIRTH_START_TIMESTAMP, .start_value = 0, .max_records = -1};
    s = scan(c, "t", &ts);
    assert_int_equal(s.rows, 6);

    /* Clear errors for bad columns and predicates. */
    o = (firth_scan_options){.columns = "id,zz", .max_records = -1};
    seen none = {0};
    assert_int_equal(firth_scan(c, "t", &o, on_scan, &none, &err), FIRTH_EINVAL);
    assert_non_null(strstr(err.msg, "no column 'zz'"));
    assert_non_null(strstr(err.msg, "id, name"));
    o.columns = "id,,name";
    assert_int_equal(firth_scan(c, "t", &o, on_scan, &none, &err), FIRTH_EINVAL);
    o.columns = "id,ID";
    assert_int_equal(firth_scan(c, "t", &o, on_scan, &none, &err), FIRTH_EINVAL);
    o.columns = NULL;
    o.where = "id >";
    assert_true(firth_scan(c, "t", &o, on_scan, &none, &err) < 0);
    o.where = "id + 1";
    assert_int_equal(firth_scan(c, "t", &o, on_scan, &none, &err), FIRTH_ETYPE);
    o.where = "nope = 1";
    assert_true(firth_scan(c, "t", &o, on_scan, &none, &err) < 0);
    assert_non_null(strstr(err.msg, "nope"));
    assert_int_equal(none.rows, 0);
    firth_close(c);
    rmtree(dir);
}

static void test_batch_round_trip(void **state)
{
    (void)state;
    hand h;
    hand_build(&h, 5);
    firth_batch *b = NULL;
    firth_error err = {0};
    OK(firth_batch_import(&h.schema, &h.array, &b, &err), err);
    h.schema.release(&h.schema);
    struct ArrowSchema s;
    struct ArrowArray a;
    OK(firth_batch_export(b, &s, &a, &err), err);
    firth_batch_free(b);
    assert_int_equal(a.length, 3);
    assert_int_equal(a.n_children, 2);
    assert_string_equal(s.children[1]->name, "name");
    firth_batch *again = NULL;
    OK(firth_batch_import(&s, &a, &again, &err), err);
    s.release(&s);
    assert_int_equal(firth_batch_num_rows(again), 3);
    firth_batch_free(again);
    assert_int_equal(h.releases, 2);
    assert_int_equal(firth_batch_export(NULL, &s, &a, &err), FIRTH_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_open),
        cmocka_unit_test(test_open_config),
        cmocka_unit_test(test_execute),
        cmocka_unit_test(test_produce_scan),
        cmocka_unit_test(test_batch_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
