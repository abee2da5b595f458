/* engine_options.c — validation of database and table names and of table options.
 *
 * Options come from users (WITH ('k' = 'v')) and from the catalog file; both pass through
 * fr_table_conf_parse, so a hand-edited catalog is checked as strictly as a CREATE TABLE.
 * The keys firth understands are stored with normalized values; the others are kept as
 * given (they may belong to a later version or to an outside tool). */
#include "engine/engine_int.h"

#include <ctype.h>
#include <strings.h>

#define OPT_BUCKET_NUM "bucket.num"
#define OPT_BUCKET_KEY "bucket.key"
#define OPT_LOG_TTL "table.log.ttl"
#define OPT_COMPRESSION "table.log.arrow.compression.type"
#define OPT_RETENTION_BYTES "table.log.retention.bytes"
#define OPT_KNOWN_LIST                                                                        \
    OPT_BUCKET_NUM ", " OPT_BUCKET_KEY ", " OPT_LOG_TTL ", " OPT_COMPRESSION ", "            \
        OPT_RETENTION_BYTES ", table.merge-engine, table.merge-engine.versioned.ver-column, " \
        "table.delete.behavior, table.changelog.image, table.partition.dynamic-creation, "   \
        "table.auto-partition.enabled, table.auto-partition.key, "                            \
        "table.auto-partition.time-unit, table.auto-partition.time-format, "                  \
        "table.auto-partition.time-zone, table.auto-partition.num-precreate, "                \
        "table.auto-partition.num-retention, table.datalake.enabled, "                       \
        "table.datalake.format, table.datalake.freshness"
#define FR_DEFAULT_TTL_MS (7LL * 24 * 3600 * 1000)

int fr_name_normalize(const char *what, const char *name, char *out, fr_error *err)
{
    FR_CHECK(name != NULL && name[0] != '\0', FR_EINVAL, err, "%s name is empty", what);
    size_t n = strlen(name);
    FR_CHECK(n <= FR_NAME_BYTES_MAX, FR_EINVAL, err,
             "%s name of %zu characters is longer than the limit of %d", what, n,
             FR_NAME_BYTES_MAX);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)name[i];
        FR_CHECK(isascii(c) && (isalnum(c) || c == '_'), FR_EINVAL, err,
                 "%s name '%.64s' has the character '%c' at position %zu; names use only "
                 "letters, digits and '_'",
                 what, name, isprint(c) ? c : '?', i + 1);
        out[i] = (char)tolower(c);
    }
    out[n] = '\0';
    return FR_OK;
}

void fr_table_conf_free(fr_table_conf *c)
{
    if (!c) return;
    fr_free(c->bucket_key);
    for (int i = 0; i < c->noptions; i++) {
        fr_free(c->keys[i]);
        fr_free(c->values[i]);
    }
    fr_free(c->keys);
    fr_free(c->values);
    fr_free(c->pk);
    fr_free(c->part);
    fr_free(c->aggs);
    fr_free(c->agg_given);
    for (int i = 0; c->delimiters && i < c->ncolumns; i++) fr_free(c->delimiters[i]);
    fr_free(c->delimiters);
    fr_free(c->autop.format);
    fr_free(c->autop.zone);
    memset(c, 0, sizeof *c);
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t') s++;
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t')) s[--n] = '\0';
    return s;
}

/* bucket.key: comma-separated column names, each once. *norm gets the schema's spelling. */
static int parse_bucket_key(const fr_schema *schema, const char *value, fr_table_conf *c,
                            fr_buf *norm, fr_error *err)
{
    int rc = FR_OK;
    char *copy = fr_strdup(value);
    int ncols = fr_schema_num_fields(schema);
    c->bucket_key = fr_calloc((size_t)ncols, sizeof(int));
    if (!copy || !c->bucket_key) {
        rc = fr_fail(err, FR_ENOMEM, "out of memory parsing %s", OPT_BUCKET_KEY);
        goto fail;
    }
    char *p = copy;
    for (;;) {
        char *comma = strchr(p, ',');
        if (comma) *comma = '\0';
        char *name = trim(p);
        if (name[0] == '\0') {
            rc = fr_fail(err, FR_EINVAL, "option %s = '%s' has an empty column name",
                         OPT_BUCKET_KEY, value);
            goto fail;
        }
        int col = fr_schema_find(schema, name);
        if (col < 0) {
            rc = fr_fail(err, FR_EINVAL, "option %s names '%s', which is not a column",
                         OPT_BUCKET_KEY, name);
            goto fail;
        }
        for (int i = 0; i < c->nbucket_key; i++) {
            if (c->bucket_key[i] == col) {
                rc = fr_fail(err, FR_EINVAL, "option %s names column '%s' twice",
                             OPT_BUCKET_KEY, name);
                goto fail;
            }
        }
        c->bucket_key[c->nbucket_key++] = col;
        FR_GOTO(fr_buf_printf(norm, err, "%s%s", c->nbucket_key > 1 ? "," : "",
                              fr_schema_field(schema, col)->name));
        if (!comma) break;
        p = comma + 1;
    }
fail:
    fr_free(copy);
    return rc;
}

static bool is_forever(const char *v)
{
    return strcmp(v, "-1") == 0 || strcasecmp(v, "inf") == 0 ||
           strcasecmp(v, "infinite") == 0 || strcasecmp(v, "forever") == 0;
}

/* Parses one understood option into c; *norm gets its normalized value (empty: as given).
 * Returns 1 when the key is not one firth understands but may be kept. */
static int parse_one(const fr_schema *schema, const char *key, const char *value,
                     fr_table_conf *c, fr_buf *norm, fr_error *err)
{
    if (strcmp(key, OPT_BUCKET_NUM) == 0) {
        int64_t n;
        if (fr_parse_i64(value, &n, err) < 0 || n < 1 || n > FR_BUCKETS_MAX)
            return fr_fail(err, FR_EINVAL, "option %s = '%s': give a whole number of buckets "
                           "from 1 to %d", OPT_BUCKET_NUM, value, FR_BUCKETS_MAX);
        c->nbuckets = (int)n;
        return fr_buf_printf(norm, err, "%d", c->nbuckets);
    }
    if (strcmp(key, OPT_BUCKET_KEY) == 0) return parse_bucket_key(schema, value, c, norm, err);
    if (strcmp(key, OPT_LOG_TTL) == 0) {
        if (is_forever(value)) {
            c->ttl_ms = -1;
            return fr_buf_printf(norm, err, "-1");
        }
        int64_t ms;
        if (fr_parse_duration_ms(value, &ms, err) < 0 || ms <= 0)
            return fr_fail(err, FR_EINVAL, "option %s = '%s': give a positive duration such "
                           "as '7d' or '12h', or '-1' to keep the log forever", OPT_LOG_TTL,
                           value);
        c->ttl_ms = ms;
        return FR_OK;
    }
    if (strcmp(key, OPT_COMPRESSION) == 0) {
        if (fr_compression_parse(value, &c->compression, err) < 0)
            return fr_fail(err, FR_EINVAL, "option %s = '%s': give ZSTD, LZ4_FRAME or NONE",
                           OPT_COMPRESSION, value);
        return fr_buf_printf(norm, err, "%s", fr_compression_name(c->compression));
    }
    if (strcmp(key, OPT_RETENTION_BYTES) == 0) {
        if (is_forever(value)) {
            c->retention_bytes = -1;
            return fr_buf_printf(norm, err, "-1");
        }
        int64_t n;
        if (fr_parse_bytes(value, &n, err) < 0 || n <= 0)
            return fr_fail(err, FR_EINVAL, "option %s = '%s': give a positive size such as "
                           "'10gb', or '-1' for no size limit", OPT_RETENTION_BYTES, value);
        c->retention_bytes = n;
        return FR_OK;
    }
    int rc = fr_pkopt_parse(schema, key, value, c, norm, err);
    if (rc != 1) return rc;
    rc = fr_lake_opt_parse(key, value, c, norm, err);
    if (rc != 1) return rc;
    if (strncmp(key, "table.", 6) == 0 || strncmp(key, "bucket.", 7) == 0)
        return fr_fail(err, FR_EINVAL, "unknown table option '%.128s'; the options firth "
                       "knows are " OPT_KNOWN_LIST, key);
    return 1;
}

static int conf_add(fr_table_conf *c, const char *key, const char *value, fr_error *err)
{
    c->keys[c->noptions] = fr_strdup(key);
    c->values[c->noptions] = fr_strdup(value);
    c->noptions++;
    FR_CHECK(c->keys[c->noptions - 1] && c->values[c->noptions - 1], FR_ENOMEM, err,
             "out of memory copying table options");
    return FR_OK;
}

int fr_table_conf_parse(const fr_schema *schema, const fr_table_keys *keys,
                        const fr_option *opts, int n, fr_table_conf *out, fr_error *err)
{
    memset(out, 0, sizeof *out);
    out->nbuckets = 1;
    out->compression = FR_COMPRESSION_ZSTD;
    out->ttl_ms = FR_DEFAULT_TTL_MS;
    out->retention_bytes = -1;
    out->ncolumns = fr_schema_num_fields(schema);
    FR_CHECK(n >= 0 && n <= FR_TABLE_OPTIONS_MAX, FR_ELIMIT, err,
             "%d table options exceed the limit of %d", n, FR_TABLE_OPTIONS_MAX);
    int rc = FR_OK;
    fr_buf norm;
    fr_buf_init(&norm);
    FR_GOTO(fr_pkopt_keys(schema, keys, out, err));
    out->keys = fr_calloc((size_t)n + 1, sizeof(char *));
    out->values = fr_calloc((size_t)n + 1, sizeof(char *));
    if (!out->keys || !out->values) {
        rc = fr_fail(err, FR_ENOMEM, "out of memory parsing table options");
        goto fail;
    }
    for (int i = 0; i < n; i++) {
        const char *key = opts[i].key, *value = opts[i].value;
        if (!key || !value || key[0] == '\0' || strlen(key) > FR_OPTION_BYTES_MAX ||
            strlen(value) > FR_OPTION_BYTES_MAX) {
            rc = fr_fail(err, FR_EINVAL, "table option %d has an empty key, no value, or "
                         "more than %d bytes", i + 1, FR_OPTION_BYTES_MAX);
            goto fail;
        }
        for (int j = 0; j < i; j++) {
            if (strcmp(opts[j].key, key) == 0) {
                rc = fr_fail(err, FR_EINVAL, "table option '%.128s' is given twice", key);
                goto fail;
            }
        }
        fr_buf_reset(&norm);
        FR_GOTO(parse_one(schema, key, value, out, &norm, err));
        FR_GOTO(fr_buf_append(&norm, "", 1, err));
        FR_GOTO(conf_add(out, key, norm.len > 1 ? (const char *)norm.data : value, err));
    }
    FR_GOTO(fr_pkopt_finish(schema, out, err));
    FR_GOTO(fr_lake_opt_finish(schema, out, err));
    fr_buf_free(&norm);
    return FR_OK;
fail:
    fr_buf_free(&norm);
    fr_table_conf_free(out);
    return rc;
}
