/* server_options.c — the server's configuration keys: defaults, parsing one key's text
 * (the command line's --KEY VALUE and the config file's `KEY: VALUE` lines share it), the
 * config file, and listener addresses.
 *
 * docs/CONFIGURATION.md lists every key here with its default; a key added here is added
 * there. A value is checked where it is given, so a bad one names its key before anything
 * opens. */
#include "server/server_int.h"

#include <stdio.h>
#include <strings.h>

static int set_string(char **slot, const char *value, fr_error *err)
{
    char *v = fr_strdup(value);
    FR_CHECK(v, FR_ENOMEM, err, "out of memory");
    fr_free(*slot);
    *slot = v;
    return FR_OK;
}

int fr_server_options_default(fr_server_options *o, fr_error *err)
{
    memset(o, 0, sizeof *o);
    o->connections_max = 4096;
    o->frame_bytes_max = FR_RPC_FRAME_BYTES_MAX_DEFAULT;
    o->inflight_max = 64;
    o->inflight_bytes_max = (int64_t)1 << 30;
    o->write_buffer_bytes_max = 16 << 20;
    o->fetch_wait_max_ms = 60000;
    o->fetch_bytes_max = 16 << 20;
    o->fetch_bucket_bytes_max = 1 << 20;
    o->sql_part_bytes = 1 << 20;
    o->workers = 16;
    o->sql_workers = 4;
    o->shutdown_timeout_ms = 30000;
    o->node_id = 0;
    o->log_level = FR_LOG_INFO;
    fr_engine_options_default(&o->engine);
    int rc;
    FR_GOTO(set_string(&o->listen, FR_SERVER_DEFAULT_LISTEN, err));
    FR_GOTO(set_string(&o->http_listen, FR_SERVER_DEFAULT_HTTP_LISTEN, err));
    FR_GOTO(set_string(&o->data_dir, FR_SERVER_DEFAULT_DATA_DIR, err));
    return FR_OK;
fail:
    fr_server_options_free(o);
    return rc;
}

void fr_server_options_free(fr_server_options *o)
{
    fr_free(o->listen);
    fr_free(o->http_listen);
    fr_free(o->data_dir);
    fr_free(o->auth_users);
    o->listen = o->http_listen = o->data_dir = o->auth_users = NULL;
}

int fr_server_parse_address(const char *text, char *host, size_t hostcap, int *port,
                            fr_error *err)
{
    const char *colon = strrchr(text, ':');
    FR_CHECK(colon && colon != text, FR_EINVAL, err,
             "'%s' is not an address; give HOST:PORT, e.g. 127.0.0.1:9123", text);
    const char *h = text;
    size_t hlen = (size_t)(colon - text);
    if (h[0] == '[') { /* [::1]:9123 */
        FR_CHECK(hlen >= 2 && h[hlen - 1] == ']', FR_EINVAL, err,
                 "'%s': an IPv6 host goes in brackets: [::1]:9123", text);
        h++;
        hlen -= 2;
    }
    FR_CHECK(hlen > 0 && hlen < hostcap, FR_EINVAL, err, "'%s': the host is empty or too long",
             text);
    int64_t p;
    fr_error perr = {0};
    FR_CHECK(fr_parse_i64(colon + 1, &p, &perr) == FR_OK && p >= 0 && p <= 65535, FR_EINVAL,
             err, "'%s': the port must be a number in 0..65535 (0 picks a free one)", text);
    memcpy(host, h, hlen);
    host[hlen] = '\0';
    *port = (int)p;
    return FR_OK;
}

/* ---- one key --------------------------------------------------------------------------- */

typedef int (*key_setter)(fr_server_options *o, const char *key, const char *value,
                          fr_error *err);

static int set_listen(fr_server_options *o, const char *key, const char *value, fr_error *err)
{
    char host[FR_SERVER_ADDRESS_BYTES_MAX];
    int port;
    fr_error perr = {0};
    if (fr_server_parse_address(value, host, sizeof host, &port, &perr) < 0)
        return fr_fail(err, FR_EINVAL, "%s: %s", key, perr.msg);
    return set_string(&o->listen, value, err);
}

static int set_http_listen(fr_server_options *o, const char *key, const char *value,
                           fr_error *err)
{
    if (value[0] == '\0' || strcasecmp(value, "off") == 0) {
        fr_free(o->http_listen);
        o->http_listen = NULL;
        return FR_OK;
    }
    char host[FR_SERVER_ADDRESS_BYTES_MAX];
    int port;
    fr_error perr = {0};
    if (fr_server_parse_address(value, host, sizeof host, &port, &perr) < 0)
        return fr_fail(err, FR_EINVAL, "%s: %s (or off)", key, perr.msg);
    return set_string(&o->http_listen, value, err);
}

static int set_data_dir(fr_server_options *o, const char *key, const char *value,
                        fr_error *err)
{
    FR_CHECK(value[0] != '\0', FR_EINVAL, err, "%s: give a directory", key);
    return set_string(&o->data_dir, value, err);
}

static int parse_count(const char *key, const char *value, int64_t min, int64_t max,
                       int64_t *out, fr_error *err)
{
    int64_t v;
    fr_error perr = {0};
    FR_CHECK(fr_parse_i64(value, &v, &perr) == FR_OK && v >= min && v <= max, FR_EINVAL, err,
             "%s: '%s' is not a whole number in %lld..%lld", key, value, (long long)min,
             (long long)max);
    *out = v;
    return FR_OK;
}

static int parse_size(const char *key, const char *value, int64_t min, int64_t max,
                      int64_t *out, fr_error *err)
{
    int64_t v;
    fr_error perr = {0};
    if (fr_parse_bytes(value, &v, &perr) < 0) return fr_fail(err, FR_EINVAL, "%s: %s", key, perr.msg);
    FR_CHECK(v >= min && v <= max, FR_EINVAL, err, "%s: %s is outside %lld..%lld bytes", key,
             value, (long long)min, (long long)max);
    *out = v;
    return FR_OK;
}

static int parse_duration(const char *key, const char *value, int64_t min, int64_t max,
                          int64_t *out, fr_error *err)
{
    int64_t v;
    fr_error perr = {0};
    if (fr_parse_duration_ms(value, &v, &perr) < 0)
        return fr_fail(err, FR_EINVAL, "%s: %s", key, perr.msg);
    FR_CHECK(v >= min && v <= max, FR_EINVAL, err, "%s: %s is outside %lld..%lld ms", key,
             value, (long long)min, (long long)max);
    *out = v;
    return FR_OK;
}

static int set_connections_max(fr_server_options *o, const char *key, const char *value,
                               fr_error *err)
{
    return parse_count(key, value, 1, 1000000, &o->connections_max, err);
}

static int set_frame_bytes_max(fr_server_options *o, const char *key, const char *value,
                               fr_error *err)
{
    int64_t v;
    FR_TRY(parse_size(key, value, FR_RPC_FRAME_BYTES_MIN, INT32_MAX, &v, err));
    o->frame_bytes_max = v;
    return FR_OK;
}

static int set_inflight_max(fr_server_options *o, const char *key, const char *value,
                            fr_error *err)
{
    return parse_count(key, value, 1, 65536, &o->inflight_max, err);
}

static int set_inflight_bytes_max(fr_server_options *o, const char *key, const char *value,
                                  fr_error *err)
{
    return parse_size(key, value, 1 << 20, (int64_t)1 << 40, &o->inflight_bytes_max, err);
}

static int set_write_bytes_max(fr_server_options *o, const char *key, const char *value,
                               fr_error *err)
{
    return parse_size(key, value, 1024, (int64_t)1 << 40, &o->write_buffer_bytes_max, err);
}

static int set_fetch_wait_max(fr_server_options *o, const char *key, const char *value,
                              fr_error *err)
{
    return parse_duration(key, value, 0, FR_RPC_WAIT_MS_MAX, &o->fetch_wait_max_ms, err);
}

static int set_fetch_bytes_max(fr_server_options *o, const char *key, const char *value,
                               fr_error *err)
{
    return parse_size(key, value, 1, INT32_MAX, &o->fetch_bytes_max, err);
}

static int set_fetch_bucket_bytes_max(fr_server_options *o, const char *key,
                                      const char *value, fr_error *err)
{
    return parse_size(key, value, 1, INT32_MAX, &o->fetch_bucket_bytes_max, err);
}

static int set_sql_part_bytes(fr_server_options *o, const char *key, const char *value,
                              fr_error *err)
{
    return parse_size(key, value, 1024, 64 << 20, &o->sql_part_bytes, err);
}

static int set_workers(fr_server_options *o, const char *key, const char *value,
                       fr_error *err)
{
    int64_t v;
    FR_TRY(parse_count(key, value, 1, FR_SERVER_WORKERS_MAX, &v, err));
    o->workers = (int)v;
    return FR_OK;
}

static int set_sql_workers(fr_server_options *o, const char *key, const char *value,
                           fr_error *err)
{
    int64_t v;
    FR_TRY(parse_count(key, value, 1, FR_SERVER_WORKERS_MAX, &v, err));
    o->sql_workers = (int)v;
    return FR_OK;
}

static int set_shutdown_timeout(fr_server_options *o, const char *key, const char *value,
                                fr_error *err)
{
    return parse_duration(key, value, 0, 3600000, &o->shutdown_timeout_ms, err);
}

static int set_auth_required(fr_server_options *o, const char *key, const char *value,
                             fr_error *err)
{
    if (strcasecmp(value, "true") == 0) o->auth_required = true;
    else if (strcasecmp(value, "false") == 0) o->auth_required = false;
    else return fr_fail(err, FR_EINVAL, "%s: '%s' is not true or false", key, value);
    return FR_OK;
}

/* "name:password,name2:password2": each entry needs a name and a colon. */
static int set_auth_users(fr_server_options *o, const char *key, const char *value,
                          fr_error *err)
{
    if (value[0] == '\0') {
        fr_free(o->auth_users);
        o->auth_users = NULL;
        return FR_OK;
    }
    const char *p = value;
    while (*p) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        const char *colon = memchr(p, ':', n);
        FR_CHECK(colon && colon != p, FR_EINVAL, err, "%s: entry %d of '%s' is not "
                 "NAME:PASSWORD", key, (int)(p - value), value);
        p += n;
        if (*p == ',') p++;
    }
    return set_string(&o->auth_users, value, err);
}

static int set_node_id(fr_server_options *o, const char *key, const char *value,
                       fr_error *err)
{
    int64_t v;
    FR_TRY(parse_count(key, value, 0, INT32_MAX, &v, err));
    o->node_id = (int)v;
    return FR_OK;
}

static int set_log_level(fr_server_options *o, const char *key, const char *value,
                         fr_error *err)
{
    FR_CHECK(fr_log_level_parse(value, &o->log_level) == FR_OK, FR_EINVAL, err,
             "%s: '%s' is not a level; use debug, info, warn, error or off", key, value);
    o->log_level_given = true;
    return FR_OK;
}

typedef struct server_key {
    const char *key;
    key_setter set;
} server_key;

static const server_key SERVER_KEYS[] = {
    {"server.listen", set_listen},
    {"server.http.listen", set_http_listen},
    {"data.dir", set_data_dir},
    {"server.connections.max", set_connections_max},
    {"server.frame.bytes.max", set_frame_bytes_max},
    {"server.inflight.max", set_inflight_max},
    {"server.inflight.bytes.max", set_inflight_bytes_max},
    {"server.connection.write.bytes.max", set_write_bytes_max},
    {"server.fetch.wait.max", set_fetch_wait_max},
    {"server.fetch.bytes.max", set_fetch_bytes_max},
    {"server.fetch.bucket.bytes.max", set_fetch_bucket_bytes_max},
    {"server.sql.part.bytes", set_sql_part_bytes},
    {"server.workers", set_workers},
    {"server.sql.workers", set_sql_workers},
    {"server.shutdown.timeout", set_shutdown_timeout},
    {"server.auth.required", set_auth_required},
    {"server.auth.users", set_auth_users},
    {"server.node.id", set_node_id},
    {"log.level", set_log_level},
};
#define SERVER_NKEYS ((int)(sizeof SERVER_KEYS / sizeof SERVER_KEYS[0]))

int fr_server_options_set(fr_server_options *o, const char *key, const char *value,
                          fr_error *err)
{
    FR_CHECK(key && value, FR_EINVAL, err, "configuration: a NULL key or value");
    for (int i = 0; i < SERVER_NKEYS; i++)
        if (strcmp(SERVER_KEYS[i].key, key) == 0) return SERVER_KEYS[i].set(o, key, value, err);
    for (int i = 0; fr_engine_option_key(i); i++)
        if (strcmp(fr_engine_option_key(i), key) == 0)
            return fr_engine_options_set(&o->engine, key, value, err);
    return fr_fail(err, FR_EINVAL, "unknown configuration key '%s' (docs/CONFIGURATION.md "
                   "lists the keys)", key);
}

const char *fr_server_option_key(int i)
{
    if (i < 0) return NULL;
    if (i < SERVER_NKEYS) return SERVER_KEYS[i].key;
    return fr_engine_option_key(i - SERVER_NKEYS);
}

int fr_server_options_load(fr_server_options *o, const char *path, fr_error *err)
{
    uint8_t *text = NULL;
    size_t len = 0;
    fr_config *c = NULL;
    int rc;
    FR_GOTO(fr_read_file(path, 1 << 20, &text, &len, err));
    c = fr_config_new();
    FR_GOTO(c ? FR_OK : fr_fail(err, FR_ENOMEM, "out of memory"));
    FR_GOTO(fr_config_parse(c, (const char *)text, len, path, err));
    for (size_t i = 0; i < fr_config_count(c); i++) {
        const char *k, *v;
        fr_config_entry(c, i, &k, &v);
        rc = fr_server_options_set(o, k, v, err);
        if (rc < 0) {
            fr_error_wrap(err, "%s", path);
            goto fail;
        }
    }
    rc = FR_OK;
fail:
    fr_config_free(c);
    fr_free(text);
    return rc;
}
