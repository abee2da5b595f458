/* test_client_pk.c — the public API of primary-key tables: firth_table_is_pk, firth_upsert
 * (upserts, deletes, partial updates by target column names, idempotent retries, errors)
 * and firth_scan_changelog (change types and commit times of a primary-key table's and a
 * log table's records). Batches are built with the arrow module and handed over through the
 * client's bridge; everything under test is firth.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "client/client_bridge.h"

#define OK(expr, err)                                                                        \
    do {                                                                                     \
        int ok_rc_ = (expr);                                                                 \
        if (ok_rc_ != 0) fail_msg("%s failed: %d %s", #expr, ok_rc_, (err).msg);             \
    } while (0)

static char dir[1024];
static firth_client *client;

static int setup(void **state)
{
    (void)state;
    const char *base = getenv("FIRTH_TEST_TMP");
    if (!base || !*base) base = "/tmp";
    fr_error e = {0};
    if (fr_mkdirs(base, &e) < 0) return -1;
    snprintf(dir, sizeof dir, "%s/test_client_pk.XXXXXX", base);
    if (!mkdtemp(dir)) return -1;
    firth_error err = {0};
    if (firth_open(dir, &client, &err) < 0) return -1;
    const char *sql = "CREATE TABLE u (id BIGINT, name STRING, n INT, PRIMARY KEY (id) NOT "
                      "ENFORCED) WITH ('bucket.num' = '2'); CREATE TABLE lg (id BIGINT, name "
                      "STRING, n INT)";
    return firth_execute(client, sql, NULL, &err) < 0 ? -1 : 0;
}

static int teardown(void **state)
{
    (void)state;
    firth_close(client);
    fr_error e = {0};
    fr_remove_tree(dir, &e);
    return 0;
}

/* A batch of (id, name, n) rows of table u's schema; name "" and n < 0 stand for NULL. */
typedef struct urow {
    int64_t id;
    const char *name;
    int n;
} urow;

static firth_batch *batch_of(const urow *rows, int count)
{
    const char *s = "{\"id\": 0, \"fields\": [{\"name\": \"id\", \"type\": \"BIGINT\", "
                    "\"nullable\": false}, {\"name\": \"name\", \"type\": \"STRING\", "
                    "\"nullable\": true}, {\"name\": \"n\", \"type\": \"INT\", \"nullable\": "
                    "true}]}";
    fr_schema *schema = NULL;
    fr_builder *bld = NULL;
    fr_batch *b = NULL;
    fr_error err = {0};
    assert_int_equal(fr_schema_from_json(s, strlen(s), &schema, &err), 0);
    assert_int_equal(fr_builder_new(schema, &bld, &err), 0);
    for (int i = 0; i < count; i++) {
        assert_int_equal(fr_builder_append_i64(bld, 0, rows[i].id, &err), 0);
        if (*rows[i].name)
            assert_int_equal(fr_builder_append_bytes(bld, 1, rows[i].name, strlen(rows[i].name),
                                                     &err), 0);
        else
            assert_int_equal(fr_builder_append_null(bld, 1, &err), 0);
        if (rows[i].n >= 0)
            assert_int_equal(fr_builder_append_i64(bld, 2, rows[i].n, &err), 0);
        else
            assert_int_equal(fr_builder_append_null(bld, 2, &err), 0);
    }
    assert_int_equal(fr_builder_finish(bld, &b, &err), 0);
    fr_builder_free(bld);
    fr_schema_free(schema);
    firth_batch *fb = firth_batch_wrap(b);
    assert_non_null(fb);
    return fb;
}

/* The table's state as "id|name|n" lines, sorted by id (the table has two buckets). */
typedef struct text {
    char s[4096];
    size_t n;
} text;

static int collect(void *ctx, firth_batch *batch)
{
    text *t = ctx;
    const fr_batch *b = firth_batch_unwrap(batch);
    for (int64_t r = 0; r < fr_batch_num_rows(b); r++) {
        for (int c = 0; c < fr_batch_num_columns(b); c++) {
            fr_value v;
            fr_column_get(fr_batch_column(b, c), r, &v);
            fr_buf out;
            fr_buf_init(&out);
            fr_error err = {0};
            if (v.is_null)
                fr_buf_printf(&out, &err, "NULL");
            else
                fr_value_format(&v, &out, &err);
            t->n += (size_t)snprintf(t->s + t->n, sizeof t->s - t->n, "%s%.*s", c ? "|" : "",
                                     (int)out.len, (const char *)out.data);
            fr_buf_free(&out);
        }
        t->n += (size_t)snprintf(t->s + t->n, sizeof t->s - t->n, "\n");
    }
    firth_batch_free(batch);
    return 0;
}

static const char *query(const char *sql)
{
    static text t;
    t.n = 0;
    t.s[0] = '\0';
    firth_sink sink = {.ctx = &t, .rows = collect};
    firth_error err = {0};
    OK(firth_execute(client, sql, &sink, &err), err);
    return t.s;
}

static void test_is_pk(void **state)
{
    (void)state;
    bool pk = false;
    firth_error err = {0};
    OK(firth_table_is_pk(client, "u", &pk, &err), err);
    assert_true(pk);
    OK(firth_table_is_pk(client, "default.lg", &pk, &err), err);
    assert_false(pk);
    assert_int_equal(firth_table_is_pk(client, "nope", &pk, &err), FIRTH_ENOTFOUND);
    assert_int_equal(firth_table_is_pk(client, "u", NULL, &err), FIRTH_EINVAL);
}

static void test_upsert(void **state)
{
    (void)state;
    firth_error err = {0};
    int64_t changed = -1;
    urow r1[] = {{1, "ann", 10}, {2, "bob", 20}, {1, "ann", 11}};
    firth_batch *b = batch_of(r1, 3);
    OK(firth_upsert(client, "u", b, NULL, NULL, 7, 0, &changed, &err), err);
    assert_int_equal(changed, 2);
    /* A retry of the same (writer, sequence) succeeds and applies nothing. */
    OK(firth_upsert(client, "u", b, NULL, NULL, 7, 0, &changed, &err), err);
    assert_int_equal(changed, 0);
    assert_string_equal(query("SELECT _change_type, id FROM u$changelog WHERE id = 1"),
                        "+I|1\n-U|1\n+U|1\n");
    firth_batch_free(b);
    assert_string_equal(query("SELECT * FROM u WHERE id IN (1, 2)"), "1|ann|11\n2|bob|20\n");

    /* Partial: only n, by name, in any case and order. */
    urow r2[] = {{1, "", 99}, {3, "ignored", 30}};
    b = batch_of(r2, 2);
    OK(firth_upsert(client, "u", b, NULL, " N ,id", -1, 0, &changed, &err), err);
    assert_int_equal(changed, 2);
    assert_string_equal(query("SELECT * FROM u WHERE id IN (1, 2, 3)"),
                        "1|ann|99\n2|bob|20\n3|NULL|30\n");
    assert_int_equal(firth_upsert(client, "u", b, NULL, "name", -1, 0, &changed, &err),
                     FIRTH_EINVAL);
    assert_non_null(strstr(err.msg, "id"));
    assert_int_equal(firth_upsert(client, "u", b, NULL, "id,zz", -1, 0, &changed, &err),
                     FIRTH_EINVAL);
    assert_string_equal(err.msg, "table u has no column 'zz'");
    assert_int_equal(firth_upsert(client, "u", b, NULL, "id,n,N", -1, 0, &changed, &err),
                     FIRTH_EINVAL);
    assert_int_equal(firth_upsert(client, "u", b, NULL, "id,,n", -1, 0, &changed, &err),
                     FIRTH_EINVAL);
    firth_batch_free(b);

    /* Deletes need the key only; one batch mixes them with upserts. */
    urow r3[] = {{2, "", -1}, {4, "dan", 40}, {9, "", -1}};
    uint8_t ops[] = {FIRTH_OP_DELETE, FIRTH_OP_UPSERT, FIRTH_OP_DELETE};
    b = batch_of(r3, 3);
    OK(firth_upsert(client, "u", b, ops, NULL, -1, 0, &changed, &err), err);
    assert_int_equal(changed, 2);
    assert_int_equal(firth_upsert(client, "lg", b, NULL, NULL, -1, 0, &changed, &err),
                     FIRTH_EINVAL);
    assert_int_equal(firth_upsert(client, "nope", b, NULL, NULL, -1, 0, &changed, &err),
                     FIRTH_ENOTFOUND);
    assert_int_equal(firth_upsert(client, "u", NULL, NULL, NULL, -1, 0, &changed, &err),
                     FIRTH_EINVAL);
    firth_batch_free(b);
    assert_string_equal(query("SELECT id FROM u WHERE id IN (1, 2, 3, 4, 9)"), "1\n3\n4\n");
}

typedef struct changes {
    char s[4096];
    size_t n;
    int64_t min_ts, max_ts;
    int batches_without_types;
} changes;

static int on_changes(void *ctx, int bucket, firth_batch *batch, const int64_t *offsets,
                      const uint8_t *types, int64_t commit_ms)
{
    (void)bucket, (void)offsets;
    changes *c = ctx;
    const fr_batch *b = firth_batch_unwrap(batch);
    if (!types) c->batches_without_types++;
    if (!c->min_ts || commit_ms < c->min_ts) c->min_ts = commit_ms;
    if (commit_ms > c->max_ts) c->max_ts = commit_ms;
    for (int64_t r = 0; r < fr_batch_num_rows(b); r++) {
        fr_value v;
        fr_column_get(fr_batch_column(b, 0), r, &v);
        c->n += (size_t)snprintf(c->s + c->n, sizeof c->s - c->n, "%s %lld\n",
                                 firth_change_name(types ? types[r] : FIRTH_CHANGE_APPEND),
                                 (long long)v.v.i);
    }
    firth_batch_free(batch);
    return 0;
}

static void test_scan_changelog(void **state)
{
    (void)state;
    query("INSERT INTO u VALUES (1, 'a', 1), (1, 'b', 2); DELETE FROM u WHERE id = 1; "
          "INSERT INTO lg VALUES (5, 'x', 1)");
    firth_error err = {0};
    changes c = {0};
    firth_scan_options o = {.start = FIRTH_START_EARLIEST, .columns = "id", .where = "id = 1",
                            .max_records = -1};
    int64_t before = (int64_t)time(NULL) * 1000 - 60000;
    OK(firth_scan_changelog(client, "u", &o, on_changes, &c, &err), err);
    assert_string_equal(c.s, "+I 1\n-U 1\n+U 1\n-D 1\n");
    assert_int_equal(c.batches_without_types, 0);
    assert_true(c.min_ts > before && c.max_ts >= c.min_ts);
    changes l = {0};
    OK(firth_scan_changelog(client, "lg", NULL, on_changes, &l, &err), err);
    assert_string_equal(l.s, "+A 5\n");
    assert_int_equal(l.batches_without_types, 1);
    assert_string_equal(firth_change_name(FIRTH_CHANGE_UPDATE_BEFORE), "-U");
    assert_string_equal(firth_change_name(9), "?");
    assert_string_equal(firth_change_name(-1), "?");
    assert_int_equal(firth_scan_changelog(client, "u", NULL, NULL, NULL, &err), FIRTH_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_is_pk, setup, teardown),
        cmocka_unit_test_setup_teardown(test_upsert, setup, teardown),
        cmocka_unit_test_setup_teardown(test_scan_changelog, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
