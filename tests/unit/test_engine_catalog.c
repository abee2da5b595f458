/* test_engine_catalog.c — the engine's catalog: databases and tables created, listed,
 * dropped and persisted across reopen; names; table options; data dirs that must be
 * refused (foreign, other version, corrupt catalog, locked by another engine). */
#include "engine_testkit.h"

#include <jansson.h>

static void write_text(const char *path, const char *text)
{
    fr_error err = {0};
    KIT_CHECK(fr_write_file_atomic(path, text, strlen(text), &err), err);
}

static char *read_text(const char *path)
{
    uint8_t *data = NULL;
    size_t len = 0;
    fr_error err = {0};
    KIT_CHECK(fr_read_file(path, 1 << 20, &data, &len, &err), err);
    char *s = fr_malloc(len + 1);
    memcpy(s, data, len);
    s[len] = '\0';
    fr_free(data);
    return s;
}

static int open_err(const char *dir, fr_error *err)
{
    fr_engine_options o;
    fr_engine_options_default(&o);
    o.data_dir = dir;
    o.retention_check_interval_ms = 0;
    fr_engine *e = NULL;
    int rc = fr_engine_open(&o, &e, err);
    if (rc == 0) fr_engine_close(e);
    return rc;
}

static void assert_names(char **names, int n, const char *const *want, int nwant)
{
    assert_int_equal(n, nwant);
    for (int i = 0; i < n; i++) assert_string_equal(names[i], want[i]);
}

static void test_fresh_dir(void **state)
{
    (void)state;
    char *dir = kit_tmpdir("fresh");
    fr_engine *e = kit_open(dir);
    char *marker = read_text(kit_path(dir, "meta/FIRTH"));
    assert_string_equal(marker, "firth data dir v1\n");
    fr_free(marker);
    assert_true(fr_path_exists(kit_path(dir, "meta/catalog.json")));
    assert_string_equal(fr_engine_data_dir(e), dir);
    char **names = NULL;
    int n = 0;
    fr_error err = {0};
    KIT_CHECK(fr_engine_list_databases(e, &names, &n, &err), err);
    assert_names(names, n, (const char *const[]){"default"}, 1);
    fr_names_free(names, n);
    fr_engine_close(e);
    /* A dir that does not exist yet is created, parents included. */
    char sub[1200];
    snprintf(sub, sizeof sub, "%s/a/b/c/", dir);
    e = kit_open(sub);
    fr_engine_close(e);
    assert_true(fr_path_exists(kit_path(dir, "a/b/c/meta/FIRTH")));
    kit_rmdir(dir);
}

static void test_create_list_drop_persist(void **state)
{
    (void)state;
    char *dir = kit_tmpdir("catalog");
    fr_engine *e = kit_open(dir);
    fr_error err = {0};
    KIT_CHECK(fr_engine_create_database(e, "Sales", false, &err), err);
    assert_int_equal(fr_engine_create_database(e, "sales", false, &err), FR_EEXIST);
    KIT_CHECK(fr_engine_create_database(e, "SALES", true, &err), err);
    KIT_CHECK(fr_engine_create_database(e, "aaa", false, &err), err);
    fr_option opts[] = {{"bucket.num", "4"}, {"bucket.key", "ID"}, {"owner", "Team X"}};
    kit_create_table(e, "sales", "Orders", opts, 3);
    kit_create_table(e, "sales", "b_table", NULL, 0);
    kit_create_table(e, "default", "t", NULL, 0);
    fr_schema *s = kit_schema();
    fr_table_spec spec = {.db = "sales", .name = "orders", .schema = s};
    assert_int_equal(fr_engine_create_table(e, &spec, false, &err), FR_EEXIST);
    KIT_CHECK(fr_engine_create_table(e, &spec, true, &err), err);
    spec.db = "nope";
    assert_int_equal(fr_engine_create_table(e, &spec, false, &err), FR_ENOTFOUND);
    assert_non_null(strstr(err.msg, "nope"));
    fr_engine_close(e);

    /* Everything is back after reopening. */
    e = kit_open(dir);
    char **names = NULL;
    int n = 0;
    KIT_CHECK(fr_engine_list_databases(e, &names, &n, &err), err);
    assert_names(names, n, (const char *const[]){"aaa", "default", "sales"}, 3);
    fr_names_free(names, n);
    KIT_CHECK(fr_engine_list_tables(e, "Sales", &names, &n, &err), err);
    assert_names(names, n, (const char *const[]){"b_table", "orders"}, 2);
    fr_names_free(names, n);
    assert_int_equal(fr_engine_list_tables(e, "zzz", &names, &n, &err), FR_ENOTFOUND);

    fr_table *t = kit_table(e, "SALES", "ORDERS");
    assert_string_equal(fr_table_db(t), "sales");
    assert_string_equal(fr_table_name(t), "orders");
    assert_int_equal(fr_table_num_buckets(t), 4);
    int nk = 0;
    const int *key = fr_table_bucket_key(t, &nk);
    assert_int_equal(nk, 1);
    assert_int_equal(key[0], 0);
    assert_int_equal(fr_table_compression(t), FR_COMPRESSION_ZSTD);
    assert_true(fr_schema_equal(fr_table_schema(t), s));
    assert_int_equal(fr_schema_id(fr_table_schema(t)), 0);
    assert_int_equal(fr_table_num_options(t), 3);
    const char *k, *v;
    fr_table_option(t, 1, &k, &v);
    assert_string_equal(k, "bucket.key");
    assert_string_equal(v, "id"); /* normalized to the schema's spelling */
    fr_table_option(t, 2, &k, &v);
    assert_string_equal(k, "owner");
    assert_string_equal(v, "Team X"); /* kept verbatim */
    int64_t id_orders = fr_table_id(t);
    fr_table *t2 = kit_table(e, "default", "t");
    assert_true(fr_table_id(t2) != id_orders);
    assert_int_equal(fr_table_num_buckets(t2), 1);
    assert_null(fr_table_bucket_key(t2, &nk));
    assert_int_equal(nk, 0);
    fr_table_release(t2);
    fr_table_release(t);

    /* Drops: a non-empty database needs cascade; ids are not reused. */
    assert_int_equal(fr_engine_drop_database(e, "sales", false, false, &err), FR_ESTATE);
    assert_non_null(strstr(err.msg, "CASCADE"));
    KIT_CHECK(fr_engine_drop_table(e, "sales", "b_table", false, &err), err);
    assert_int_equal(fr_engine_drop_table(e, "sales", "b_table", false, &err), FR_ENOTFOUND);
    KIT_CHECK(fr_engine_drop_table(e, "sales", "b_table", true, &err), err);
    assert_int_equal(fr_engine_get_table(e, "sales", "b_table", &t, &err), FR_ENOTFOUND);
    KIT_CHECK(fr_engine_drop_database(e, "aaa", false, false, &err), err);
    KIT_CHECK(fr_engine_drop_database(e, "sales", false, true, &err), err);
    assert_int_equal(fr_engine_drop_database(e, "sales", false, true, &err), FR_ENOTFOUND);
    KIT_CHECK(fr_engine_drop_database(e, "sales", true, true, &err), err);
    KIT_CHECK(fr_engine_create_database(e, "sales", false, &err), err);
    spec.db = "sales";
    KIT_CHECK(fr_engine_create_table(e, &spec, false, &err), err);
    t = kit_table(e, "sales", "orders");
    assert_true(fr_table_id(t) > id_orders);
    assert_int_equal(fr_table_num_buckets(t), 1); /* a new table, not the old one */
    fr_table_release(t);
    fr_engine_close(e);

    e = kit_open(dir);
    KIT_CHECK(fr_engine_list_databases(e, &names, &n, &err), err);
    assert_names(names, n, (const char *const[]){"default", "sales"}, 2);
    fr_names_free(names, n);
    KIT_CHECK(fr_engine_list_tables(e, "sales", &names, &n, &err), err);
    assert_names(names, n, (const char *const[]){"orders"}, 1);
    fr_names_free(names, n);
    fr_engine_close(e);
    fr_schema_free(s);
    kit_rmdir(dir);
}

static void test_names(void **state)
{
    (void)state;
    char *dir = kit_tmpdir("names");
    fr_engine *e = kit_open(dir);
    fr_error err = {0};
    const char *bad[] = {"", "a-b", "a b", "db.t", "é", "x;drop"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(fr_engine_create_database(e, bad[i], false, &err), FR_EINVAL);
        assert_non_null(strstr(err.msg, "database name"));
    }
    char longname[FR_NAME_BYTES_MAX + 2];
    memset(longname, 'a', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    assert_int_equal(fr_engine_create_database(e, longname, false, &err), FR_EINVAL);
    longname[FR_NAME_BYTES_MAX] = '\0';
    KIT_CHECK(fr_engine_create_database(e, longname, false, &err), err);
    KIT_CHECK(fr_engine_create_database(e, "_9Z", false, &err), err);
    fr_schema *s = kit_schema();
    fr_table_spec spec = {.db = "_9z", .name = "bad-name", .schema = s};
    assert_int_equal(fr_engine_create_table(e, &spec, false, &err), FR_EINVAL);
    assert_non_null(strstr(err.msg, "table name"));
    fr_schema_free(s);
    fr_engine_close(e);
    kit_rmdir(dir);
}

static int create_with(fr_engine *e, const fr_option *opts, int n, fr_error *err)
{
    fr_schema *s = kit_schema();
    fr_table_spec spec = {.db = "default", .name = "t", .schema = s, .options = opts,
                          .noptions = n};
    int rc = fr_engine_create_table(e, &spec, false, err);
    fr_schema_free(s);
    if (rc == 0) {
        fr_error e2 = {0};
        KIT_CHECK(fr_engine_drop_table(e, "default", "t", false, &e2), e2);
    }
    return rc;
}

static void expect_bad_option(fr_engine *e, const char *key, const char *value,
                              const char *in_msg)
{
    fr_option o = {key, value};
    fr_error err = {0};
    int rc = create_with(e, &o, 1, &err);
    if (rc != FR_EINVAL) fail_msg("%s = '%s' gave %d, not EINVAL", key, value, rc);
    if (!strstr(err.msg, in_msg))
        fail_msg("%s = '%s': message '%s' lacks '%s'", key, value, err.msg, in_msg);
}

static void test_options(void **state)
{
    (void)state;
    char *dir = kit_tmpdir("options");
    fr_engine *e = kit_open(dir);
    expect_bad_option(e, "bucket.num", "0", "bucket.num");
    expect_bad_option(e, "bucket.num", "1025", "1024");
    expect_bad_option(e, "bucket.num", "four", "bucket.num");
    expect_bad_option(e, "bucket.key", "nope", "'nope'");
    expect_bad_option(e, "bucket.key", "id,id", "twice");
    expect_bad_option(e, "bucket.key", "id,", "empty");
    expect_bad_option(e, "table.log.ttl", "soon", "table.log.ttl");
    expect_bad_option(e, "table.log.ttl", "0", "positive");
    expect_bad_option(e, "table.log.arrow.compression.type", "gzip", "ZSTD");
    expect_bad_option(e, "table.log.retention.bytes", "lots", "retention.bytes");
    expect_bad_option(e, "table.colour", "red", "table.log.ttl"); /* lists the known keys */
    expect_bad_option(e, "bucket.count", "4", "unknown table option 'bucket.count'");

    fr_error err = {0};
    fr_option dup[] = {{"bucket.num", "2"}, {"bucket.num", "3"}};
    assert_int_equal(create_with(e, dup, 2, &err), FR_EINVAL);
    assert_non_null(strstr(err.msg, "twice"));

    fr_option good[] = {
        {"bucket.num", "1024"},
        {"bucket.key", " score , NAME "},
        {"table.log.ttl", "inf"},
        {"table.log.arrow.compression.type", "lz4_frame"},
        {"table.log.retention.bytes", "1mb"},
        {"client.id", "x"},
    };
    fr_schema *s = kit_schema();
    fr_table_spec spec = {.db = "default", .name = "good", .schema = s, .options = good,
                          .noptions = 6};
    KIT_CHECK(fr_engine_create_table(e, &spec, false, &err), err);
    fr_table *t = kit_table(e, "default", "good");
    assert_int_equal(fr_table_num_buckets(t), 1024);
    int nk = 0;
    const int *key = fr_table_bucket_key(t, &nk);
    assert_int_equal(nk, 2);
    assert_int_equal(key[0], 2);
    assert_int_equal(key[1], 1);
    assert_int_equal(fr_table_compression(t), FR_COMPRESSION_LZ4_FRAME);
    const char *want[][2] = {{"bucket.num", "1024"},
                             {"bucket.key", "score,name"},
                             {"table.log.ttl", "-1"},
                             {"table.log.arrow.compression.type", "LZ4_FRAME"},
                             {"table.log.retention.bytes", "1mb"},
                             {"client.id", "x"}};
    assert_int_equal(fr_table_num_options(t), 6);
    for (int i = 0; i < 6; i++) {
        const char *k, *v;
        fr_table_option(t, i, &k, &v);
        assert_string_equal(k, want[i][0]);
        assert_string_equal(v, want[i][1]);
    }
    /* The description as JSON. */
    char *json = NULL;
    KIT_CHECK(fr_table_to_json(t, &json, &err), err);
    json_t *root = json_loads(json, 0, NULL);
    assert_non_null(root);
    assert_int_equal(json_integer_value(json_object_get(root, "bucket_num")), 1024);
    assert_string_equal(json_string_value(json_object_get(root, "name")), "good");
    assert_string_equal(json_string_value(json_object_get(root, "database")), "default");
    assert_string_equal(json_string_value(json_object_get(root, "compression")), "LZ4_FRAME");
    assert_int_equal(json_integer_value(json_object_get(root, "log_ttl_ms")), -1);
    assert_int_equal(json_integer_value(json_object_get(root, "log_retention_bytes")), 1 << 20);
    json_t *fields = json_object_get(json_object_get(root, "schema"), "fields");
    assert_int_equal(json_array_size(fields), 3);
    assert_string_equal(json_string_value(json_array_get(json_object_get(root, "bucket_key"), 1)),
                        "name");
    assert_string_equal(json_string_value(json_object_get(json_object_get(root, "options"),
                                                          "client.id")),
                        "x");
    assert_int_equal(json_array_size(json_object_get(root, "buckets")), 1024);
    json_decref(root);
    fr_free(json);
    fr_table_release(t);
    fr_engine_close(e);
    /* Options survive a reopen. */
    e = kit_open(dir);
    t = kit_table(e, "default", "good");
    assert_int_equal(fr_table_num_buckets(t), 1024);
    assert_int_equal(fr_table_compression(t), FR_COMPRESSION_LZ4_FRAME);
    fr_table_release(t);
    fr_engine_close(e);
    fr_schema_free(s);
    kit_rmdir(dir);
}

static void test_foreign_dir(void **state)
{
    (void)state;
    char *dir = kit_tmpdir("foreign");
    write_text(kit_path(dir, "notes.txt"), "my files\n");
    fr_error err = {0};
    assert_int_equal(open_err(dir, &err), FR_EINVAL);
    assert_non_null(strstr(err.msg, "not a firth data dir"));
    assert_non_null(strstr(err.msg, dir));
    assert_false(fr_path_exists(kit_path(dir, "meta"))); /* nothing written there */
    kit_rmdir(dir);
}

static void test_other_version(void **state)
{
    (void)state;
    char *dir = kit_tmpdir("version");
    fr_engine_close(kit_open(dir));
    write_text(kit_path(dir, "meta/FIRTH"), "firth data dir v2\n");
    fr_error err = {0};
    assert_int_equal(open_err(dir, &err), FR_EINVAL);
    assert_non_null(strstr(err.msg, "meta/FIRTH"));
    assert_non_null(strstr(err.msg, "firth data dir v2"));
    kit_rmdir(dir);
}

static void test_corrupt_catalog(void **state)
{
    (void)state;
    char *dir = kit_tmpdir("corrupt");
    fr_engine *e = kit_open(dir);
    kit_create_table(e, "default", "t", NULL, 0);
    fr_engine_close(e);
    char *good = read_text(kit_path(dir, "meta/catalog.json"));
    fr_error err = {0};

    write_text(kit_path(dir, "meta/catalog.json"), "{\"format\": \"firth catalog v1\", ");
    assert_int_equal(open_err(dir, &err), FR_EINVAL);
    assert_non_null(strstr(err.msg, "catalog.json"));
    assert_non_null(strstr(err.msg, "backup"));

    /* Valid JSON with a table in a database that does not exist. */
    json_t *root = json_loads(good, 0, NULL);
    json_array_clear(json_object_get(root, "databases"));
    char *text = json_dumps(root, 0);
    write_text(kit_path(dir, "meta/catalog.json"), text);
    free(text);
    assert_int_equal(open_err(dir, &err), FR_EINVAL);
    assert_non_null(strstr(err.msg, "default.t"));
    json_decref(root);

    /* A bad option in the file is refused as in CREATE TABLE. */
    root = json_loads(good, 0, NULL);
    json_t *t0 = json_array_get(json_object_get(root, "tables"), 0);
    json_array_append_new(json_object_get(t0, "options"),
                          json_pack("{s:s, s:s}", "key", "bucket.num", "value", "0"));
    text = json_dumps(root, 0);
    write_text(kit_path(dir, "meta/catalog.json"), text);
    free(text);
    assert_int_equal(open_err(dir, &err), FR_EINVAL);
    assert_non_null(strstr(err.msg, "bucket.num"));
    json_decref(root);

    /* Restored, it opens again. */
    write_text(kit_path(dir, "meta/catalog.json"), good);
    assert_int_equal(open_err(dir, &err), 0);
    fr_free(good);
    kit_rmdir(dir);
}

static void test_missing_catalog(void **state)
{
    (void)state;
    char *dir = kit_tmpdir("missing");
    fr_engine_close(kit_open(dir));
    fr_error err = {0};
    /* A marker without a catalog and without table data is a new data dir... */
    assert_int_equal(unlink(kit_path(dir, "meta/catalog.json")), 0);
    assert_int_equal(open_err(dir, &err), 0);
    /* ... but with table data it is refused, so the data is not taken for orphans. */
    assert_int_equal(unlink(kit_path(dir, "meta/catalog.json")), 0);
    KIT_CHECK(fr_mkdirs(kit_path(dir, "log/1/b0"), &err), err);
    assert_int_equal(open_err(dir, &err), FR_EINVAL);
    assert_non_null(strstr(err.msg, "catalog.json is missing"));
    assert_true(fr_path_exists(kit_path(dir, "log/1/b0")));
    kit_rmdir(dir);
}

static void test_locked(void **state)
{
    (void)state;
    char *dir = kit_tmpdir("locked");
    fr_engine *e = kit_open(dir);
    fr_error err = {0};
    assert_int_equal(open_err(dir, &err), FR_ESTATE);
    char want[128];
    snprintf(want, sizeof want, "in use by another firth process (pid %ld)", (long)getpid());
    assert_non_null(strstr(err.msg, want));
    assert_non_null(strstr(err.msg, dir));
    fr_engine_close(e);
    assert_int_equal(open_err(dir, &err), 0);
    kit_rmdir(dir);
}

static void test_orphans_removed(void **state)
{
    (void)state;
    char *dir = kit_tmpdir("orphans");
    fr_engine *e = kit_open(dir);
    kit_create_table(e, "default", "t", NULL, 0);
    fr_table *t = kit_table(e, "default", "t");
    char live[64];
    snprintf(live, sizeof live, "log/%lld/b0", (long long)fr_table_id(t));
    fr_table_release(t);
    fr_engine_close(e);
    fr_error err = {0};
    KIT_CHECK(fr_mkdirs(kit_path(dir, "log/999/b0"), &err), err);
    KIT_CHECK(fr_mkdirs(kit_path(dir, live), &err), err);
    KIT_CHECK(fr_mkdirs(kit_path(dir, "log/keep-me"), &err), err);
    e = kit_open(dir);
    assert_false(fr_path_exists(kit_path(dir, "log/999")));
    assert_true(fr_path_exists(kit_path(dir, live)));
    assert_true(fr_path_exists(kit_path(dir, "log/keep-me")));
    fr_engine_close(e);
    kit_rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fresh_dir),
        cmocka_unit_test(test_create_list_drop_persist),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_options),
        cmocka_unit_test(test_foreign_dir),
        cmocka_unit_test(test_other_version),
        cmocka_unit_test(test_corrupt_catalog),
        cmocka_unit_test(test_missing_catalog),
        cmocka_unit_test(test_locked),
        cmocka_unit_test(test_orphans_removed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
