/* test_server_options.c — the server's configuration: defaults, every key set from text and
 * read back, bad values and unknown keys refused with the key named (and the options left
 * unchanged), the engine's keys passed through, the key list, addresses, and config files
 * (comments, later lines winning, errors naming the file). Also that a server refuses to
 * start on an address in use and on a data dir another server holds. */
#include "server_testkit.h"

static void test_defaults(void **state)
{
    (void)state;
    fr_server_options o;
    fr_error err = {0};
    KIT_CHECK(fr_server_options_default(&o, &err), err);
    assert_string_equal(o.listen, "127.0.0.1:9123");
    assert_string_equal(o.http_listen, "127.0.0.1:9249");
    assert_string_equal(o.data_dir, "./firth-data");
    assert_int_equal(o.frame_bytes_max, 100 << 20);
    assert_int_equal(o.connections_max, 4096);
    assert_int_equal(o.inflight_max, 64);
    assert_int_equal(o.fetch_wait_max_ms, 60000);
    assert_int_equal(o.workers, 16);
    assert_false(o.auth_required);
    assert_null(o.auth_users);
    assert_int_equal(o.log_level, FR_LOG_INFO);
    assert_false(o.log_level_given);
    assert_int_equal(o.engine.flush, FR_FLUSH_EVERY_APPEND);
    fr_server_options_free(&o);
}

static void test_set_keys(void **state)
{
    (void)state;
    fr_server_options o;
    fr_error err = {0};
    KIT_CHECK(fr_server_options_default(&o, &err), err);
    struct {
        const char *key, *value;
    } good[] = {
        {"server.listen", "0.0.0.0:0"},
        {"server.http.listen", "[::1]:8080"},
        {"data.dir", "/tmp/x"},
        {"server.connections.max", "10"},
        {"server.frame.bytes.max", "2mb"},
        {"server.inflight.max", "3"},
        {"server.inflight.bytes.max", "64mb"},
        {"server.connection.write.bytes.max", "1mb"},
        {"server.fetch.wait.max", "5s"},
        {"server.fetch.bytes.max", "4mb"},
        {"server.fetch.bucket.bytes.max", "256kb"},
        {"server.sql.part.bytes", "64kb"},
        {"server.workers", "2"},
        {"server.sql.workers", "3"},
        {"server.shutdown.timeout", "1min"},
        {"server.auth.required", "TRUE"},
        {"server.auth.users", "a:b,c:d:e"},
        {"server.node.id", "7"},
        {"log.level", "warn"},
        {"log.flush", "interval"},
        {"log.flush.interval", "250ms"},
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        KIT_CHECK(fr_server_options_set(&o, good[i].key, good[i].value, &err), err);
    assert_string_equal(o.listen, "0.0.0.0:0");
    assert_string_equal(o.http_listen, "[::1]:8080");
    assert_string_equal(o.data_dir, "/tmp/x");
    assert_int_equal(o.connections_max, 10);
    assert_int_equal(o.frame_bytes_max, 2 << 20);
    assert_int_equal(o.inflight_max, 3);
    assert_int_equal(o.inflight_bytes_max, 64 << 20);
    assert_int_equal(o.write_buffer_bytes_max, 1 << 20);
    assert_int_equal(o.fetch_wait_max_ms, 5000);
    assert_int_equal(o.fetch_bytes_max, 4 << 20);
    assert_int_equal(o.fetch_bucket_bytes_max, 256 << 10);
    assert_int_equal(o.sql_part_bytes, 64 << 10);
    assert_int_equal(o.workers, 2);
    assert_int_equal(o.sql_workers, 3);
    assert_int_equal(o.shutdown_timeout_ms, 60000);
    assert_true(o.auth_required);
    assert_string_equal(o.auth_users, "a:b,c:d:e");
    assert_int_equal(o.node_id, 7);
    assert_int_equal(o.log_level, FR_LOG_WARN);
    assert_true(o.log_level_given);
    assert_int_equal(o.engine.flush, FR_FLUSH_INTERVAL);
    assert_int_equal(o.engine.flush_interval_ms, 250);
    KIT_CHECK(fr_server_options_set(&o, "server.http.listen", "off", &err), err);
    assert_null(o.http_listen);

    /* Bad values name the key and change nothing. */
    struct {
        const char *key, *value;
    } bad[] = {
        {"server.listen", "9123"},
        {"server.listen", "localhost:99999"},
        {"server.listen", ":80"},
        {"server.http.listen", "[::1:80"},
        {"data.dir", ""},
        {"server.connections.max", "0"},
        {"server.connections.max", "12abc"},
        {"server.frame.bytes.max", "100"},
        {"server.frame.bytes.max", "3gb"},
        {"server.inflight.max", "-1"},
        {"server.fetch.wait.max", "11min"},
        {"server.workers", "0"},
        {"server.auth.required", "yes"},
        {"server.auth.users", "nocolon"},
        {"server.auth.users", ":pw"},
        {"server.node.id", "-3"},
        {"log.level", "loud"},
        {"log.flush", "sometimes"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        fr_error e = {0};
        int rc = fr_server_options_set(&o, bad[i].key, bad[i].value, &e);
        if (rc != FR_EINVAL) fail_msg("%s = '%s' was accepted", bad[i].key, bad[i].value);
        assert_non_null(strstr(e.msg, bad[i].key));
    }
    assert_string_equal(o.listen, "0.0.0.0:0");
    assert_int_equal(o.connections_max, 10);
    assert_int_equal(o.engine.flush, FR_FLUSH_INTERVAL);
    fr_error e = {0};
    assert_int_equal(fr_server_options_set(&o, "server.nope", "1", &e), FR_EINVAL);
    assert_non_null(strstr(e.msg, "server.nope"));
    fr_server_options_free(&o);
}

static void test_key_list(void **state)
{
    (void)state;
    int n = 0;
    bool engine_key = false, server_key = false;
    for (; fr_server_option_key(n); n++) {
        engine_key |= strcmp(fr_server_option_key(n), "log.flush") == 0;
        server_key |= strcmp(fr_server_option_key(n), "server.inflight.max") == 0;
        /* Every listed key is accepted by the setter (with some value it takes). */
        fr_server_options o;
        fr_error err = {0};
        KIT_CHECK(fr_server_options_default(&o, &err), err);
        int rc = fr_server_options_set(&o, fr_server_option_key(n), "1", &err);
        if (rc < 0) assert_null(strstr(err.msg, "unknown configuration key"));
        fr_server_options_free(&o);
    }
    assert_true(n >= 20);
    assert_true(engine_key && server_key);
    assert_null(fr_server_option_key(-1));
}

static void test_addresses(void **state)
{
    (void)state;
    char host[64];
    int port = -1;
    fr_error err = {0};
    KIT_CHECK(fr_server_parse_address("127.0.0.1:9123", host, sizeof host, &port, &err), err);
    assert_string_equal(host, "127.0.0.1");
    assert_int_equal(port, 9123);
    KIT_CHECK(fr_server_parse_address("[::1]:0", host, sizeof host, &port, &err), err);
    assert_string_equal(host, "::1");
    assert_int_equal(port, 0);
    KIT_CHECK(fr_server_parse_address("localhost:80", host, sizeof host, &port, &err), err);
    assert_string_equal(host, "localhost");
    assert_int_equal(fr_server_parse_address("[::1]", host, sizeof host, &port, &err), FR_EINVAL);
    assert_int_equal(fr_server_parse_address("a:b", host, sizeof host, &port, &err), FR_EINVAL);
    assert_int_equal(fr_server_parse_address("a:", host, sizeof host, &port, &err), FR_EINVAL);
    assert_int_equal(fr_server_parse_address("abcdef:1", host, 4, &port, &err), FR_EINVAL);
}

static void test_config_file(void **state)
{
    (void)state;
    char *dir = kit_tmpdir("server-conf");
    char path[1024];
    snprintf(path, sizeof path, "%s/firth.conf", dir);
    const char text[] = "# a comment\n"
                        "server.listen: 127.0.0.1:7000\n"
                        "server.inflight.max: 5   # trailing comment\n"
                        "log.flush: none\n"
                        "server.inflight.max: 6\n"
                        "\n";
    fr_error err = {0};
    KIT_CHECK(fr_write_file_atomic(path, text, sizeof text - 1, &err), err);
    fr_server_options o;
    KIT_CHECK(fr_server_options_default(&o, &err), err);
    KIT_CHECK(fr_server_options_load(&o, path, &err), err);
    assert_string_equal(o.listen, "127.0.0.1:7000");
    assert_int_equal(o.inflight_max, 6);
    assert_int_equal(o.engine.flush, FR_FLUSH_NONE);
    const char bad[] = "server.workers: many\n";
    KIT_CHECK(fr_write_file_atomic(path, bad, sizeof bad - 1, &err), err);
    fr_error e = {0};
    assert_int_equal(fr_server_options_load(&o, path, &e), FR_EINVAL);
    assert_non_null(strstr(e.msg, "firth.conf"));
    assert_non_null(strstr(e.msg, "server.workers"));
    const char unknown[] = "server.colour: blue\n";
    KIT_CHECK(fr_write_file_atomic(path, unknown, sizeof unknown - 1, &err), err);
    assert_int_equal(fr_server_options_load(&o, path, &e), FR_EINVAL);
    assert_non_null(strstr(e.msg, "server.colour"));
    snprintf(path, sizeof path, "%s/missing.conf", dir);
    assert_true(fr_server_options_load(&o, path, &e) < 0);
    assert_non_null(strstr(e.msg, "missing.conf"));
    fr_server_options_free(&o);
    kit_rmdir(dir);
}

static void test_start_errors(void **state)
{
    (void)state;
    kit_server a;
    kit_server_options(&a, "server-start");
    kit_server_start(&a);
    /* A second server on the same data dir: the engine's lock says who holds it. */
    fr_server_options o;
    fr_error err = {0};
    KIT_CHECK(fr_server_options_default(&o, &err), err);
    KIT_CHECK(fr_server_options_set(&o, "data.dir", a.dir, &err), err);
    KIT_CHECK(fr_server_options_set(&o, "server.listen", "127.0.0.1:0", &err), err);
    KIT_CHECK(fr_server_options_set(&o, "server.http.listen", "off", &err), err);
    KIT_CHECK(fr_server_options_set(&o, "log.level", "off", &err), err);
    fr_server *b = NULL;
    fr_error e = {0};
    assert_int_equal(fr_server_start(&o, &b, &e), FR_ESTATE);
    assert_null(b);
    /* A free data dir, but the native address is taken. */
    char *dir2 = kit_tmpdir("server-start2");
    KIT_CHECK(fr_server_options_set(&o, "data.dir", dir2, &err), err);
    KIT_CHECK(fr_server_options_set(&o, "server.listen", fr_server_address(a.srv), &err), err);
    assert_int_equal(fr_server_start(&o, &b, &e), FR_EIO);
    assert_non_null(strstr(e.msg, "server.listen"));
    /* And the HTTP address. */
    KIT_CHECK(fr_server_options_set(&o, "server.listen", "127.0.0.1:0", &err), err);
    KIT_CHECK(fr_server_options_set(&o, "server.http.listen", fr_server_http_address(a.srv),
                                    &err),
              err);
    assert_int_equal(fr_server_start(&o, &b, &e), FR_EIO);
    assert_non_null(strstr(e.msg, "server.http.listen"));
    /* After those failures the data dir is free again: a server starts on it. */
    KIT_CHECK(fr_server_options_set(&o, "server.http.listen", "off", &err), err);
    KIT_CHECK(fr_server_start(&o, &b, &err), err);
    assert_null(fr_server_http_address(b));
    fr_server_free(b);
    fr_server_options_free(&o);
    kit_rmdir(dir2);
    kit_server_stop(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_set_keys),
        cmocka_unit_test(test_key_list),
        cmocka_unit_test(test_addresses),
        cmocka_unit_test(test_config_file),
        cmocka_unit_test(test_start_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
