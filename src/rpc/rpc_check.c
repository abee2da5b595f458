/* rpc_check.c — what a request must satisfy beyond being well-formed protobuf: names present
 * and short, counts and byte sizes within the limits of rpc.h, ids and offsets in range,
 * enums known. The server's handlers can then trust the shape of what they get and check
 * only what needs the catalog (does the table exist, is bucket 7 < bucket.num).
 *
 * Every failure names the api, the item and the value: "fetch_log request: tables[0]:
 * buckets[3]: bucket -1 is negative". Limits that a well-meaning client may reach are
 * FR_ELIMIT; everything else is FR_EINVAL. */
#include "rpc/rpc.h"
#include "log/log.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>

_Static_assert(FR_RPC_RECORDS_BYTES_MAX == FR_RB_BYTES_MAX, "one record batch per item");
_Static_assert(FR_RPC_NAME_BYTES_MAX == FR_NAME_BYTES_MAX, "names as the catalog's");
_Static_assert(FR_RPC_COLUMNS_MAX == FR_SCHEMA_COLUMNS_MAX, "columns as a schema's");

/* Where in the request a check is: a chain from the request down to the item, formatted
 * only when a check fails ("produce_log request: buckets[2]"). */
typedef struct fr_rpc_at {
    const struct fr_rpc_at *up;
    const char *field; /* the api's name at the root */
    long index;        /* -1: not an element of a list */
} fr_rpc_at;

static fr_rpc_at fr_rpc_at_item(const fr_rpc_at *at, const char *field, long i)
{
    return (fr_rpc_at){ at, field, i };
}

/* Appends at's path to buf (cap bytes, NUL-terminated, cut short when full). */
static size_t fr_rpc_at_format(const fr_rpc_at *at, char *buf, size_t cap)
{
    size_t n = at->up ? fr_rpc_at_format(at->up, buf, cap) : 0;
    char part[96];
    int k = at->up ? snprintf(part, sizeof part, ": %.60s[%ld]", at->field, at->index)
                   : snprintf(part, sizeof part, "%.60s request", at->field);
    size_t len = k < 0 ? 0 : (size_t)k;
    if (len > cap - 1 - n) len = cap - 1 - n;
    memcpy(buf + n, part, len);
    buf[n + len] = 0;
    return n + len;
}

__attribute__((format(printf, 4, 5))) static int fr_rpc_fail_at(const fr_rpc_at *at, int code,
                                                                fr_error *err, const char *fmt, ...)
{
    char path[FR_ERROR_MSG_MAX], msg[FR_ERROR_MSG_MAX];
    fr_rpc_at_format(at, path, sizeof path);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return fr_fail(err, code, "%s: %s", path, msg);
}

/* Fails with the item's path and a message when cond does not hold. */
#define FR_RPC_CHECK(cond, code, at, err, ...)                                                     \
    do {                                                                                           \
        if (!(cond)) return fr_rpc_fail_at((at), (code), (err), __VA_ARGS__);                      \
    } while (0)

static int fr_rpc_check_string(const fr_rpc_at *at, const char *field, const char *s, bool required,
                               size_t max, fr_error *err)
{
    size_t n = s ? strlen(s) : 0;
    FR_RPC_CHECK(n > 0 || !required, FR_EINVAL, at, err, "%s is missing", field);
    /* A name too long is a bad name; a text too long (SQL, JSON) is over a limit. */
    FR_RPC_CHECK(n <= max, max > FR_RPC_NAME_BYTES_MAX ? FR_ELIMIT : FR_EINVAL, at, err,
                 "%s of %zu bytes is longer than %zu bytes", field, n, max);
    return 0;
}

static int fr_rpc_check_name(const fr_rpc_at *at, const char *field, const char *s, fr_error *err)
{
    return fr_rpc_check_string(at, field, s, true, FR_RPC_NAME_BYTES_MAX, err);
}

static int fr_rpc_check_count(const fr_rpc_at *at, const char *field, size_t n, bool required,
                              size_t max, fr_error *err)
{
    FR_RPC_CHECK(n > 0 || !required, FR_EINVAL, at, err, "%s is empty", field);
    FR_RPC_CHECK(n <= max, FR_ELIMIT, at, err, "%zu %s exceed the limit of %zu", n, field, max);
    return 0;
}

static int fr_rpc_check_path(const fr_rpc_at *at, const Firth__TablePath *p, fr_error *err)
{
    FR_RPC_CHECK(p, FR_EINVAL, at, err, "the table path is missing");
    FR_TRY(fr_rpc_check_name(at, "database", p->database, err));
    return fr_rpc_check_name(at, "table", p->table, err);
}

static int fr_rpc_check_table_ref(const fr_rpc_at *at, const Firth__TablePath *p, int64_t table_id,
                                  fr_error *err)
{
    FR_TRY(fr_rpc_check_path(at, p, err));
    FR_RPC_CHECK(table_id >= 0, FR_EINVAL, at, err, "table id %lld is negative",
                 (long long)table_id);
    return 0;
}

static int fr_rpc_check_bucket(const fr_rpc_at *at, int64_t partition_id, int32_t bucket,
                               fr_error *err)
{
    FR_RPC_CHECK(partition_id >= -1, FR_EINVAL, at, err,
                 "partition id %lld is neither -1 (no partitions) nor a partition's id",
                 (long long)partition_id);
    FR_RPC_CHECK(bucket >= 0, FR_EINVAL, at, err, "bucket %d is negative", (int)bucket);
    return 0;
}

static int fr_rpc_check_columns(const fr_rpc_at *at, const char *field, size_t n,
                                const int32_t *cols, fr_error *err)
{
    FR_TRY(fr_rpc_check_count(at, field, n, false, FR_RPC_COLUMNS_MAX, err));
    for (size_t i = 0; i < n; i++)
        FR_RPC_CHECK(cols[i] >= 0 && cols[i] < FR_RPC_COLUMNS_MAX, FR_EINVAL, at, err,
                     "%s[%zu] = %d is not a column index (0..%d)", field, i, (int)cols[i],
                     FR_RPC_COLUMNS_MAX - 1);
    return 0;
}

/* A bytes field that holds one record batch: present and within one batch's limit. */
static int fr_rpc_check_batch(const fr_rpc_at *at, const char *field, ProtobufCBinaryData b,
                              fr_error *err)
{
    FR_RPC_CHECK(b.len > 0, FR_EINVAL, at, err, "%s is empty (one record batch expected)", field);
    FR_RPC_CHECK(b.len <= FR_RPC_RECORDS_BYTES_MAX, FR_ELIMIT, at, err,
                 "%s of %zu bytes exceeds the record batch limit of %d bytes", field, b.len,
                 FR_RPC_RECORDS_BYTES_MAX);
    return 0;
}

static int fr_rpc_check_writer(const fr_rpc_at *at, int64_t writer_id, fr_error *err)
{
    FR_RPC_CHECK(writer_id >= -1, FR_EINVAL, at, err,
                 "writer id %lld is neither -1 (not idempotent) nor a writer's id",
                 (long long)writer_id);
    return 0;
}

/* ---- per api ---------------------------------------------------------------------------- */

static int fr_rpc_check_metadata(const fr_rpc_at *at, const Firth__MetadataRequest *r,
                                 fr_error *err)
{
    FR_TRY(fr_rpc_check_count(at, "tables", r->n_tables, false, FR_RPC_ITEMS_MAX, err));
    for (size_t i = 0; i < r->n_tables; i++) {
        fr_rpc_at sub = fr_rpc_at_item(at, "tables", (long)i);
        FR_TRY(fr_rpc_check_path(&sub, r->tables[i], err));
    }
    return 0;
}

static int fr_rpc_check_names(const fr_rpc_at *at, const char *field, size_t n, char *const *names,
                              fr_error *err)
{
    FR_TRY(fr_rpc_check_count(at, field, n, false, FR_RPC_COLUMNS_MAX, err));
    for (size_t i = 0; i < n; i++) {
        fr_rpc_at sub = fr_rpc_at_item(at, field, (long)i);
        FR_TRY(fr_rpc_check_name(&sub, "name", names[i], err));
    }
    return 0;
}

static int fr_rpc_check_create_table(const fr_rpc_at *at, const Firth__CreateTableRequest *r,
                                     fr_error *err)
{
    FR_TRY(fr_rpc_check_path(at, r->path, err));
    FR_TRY(
        fr_rpc_check_string(at, "schema_json", r->schema_json, true, FR_RPC_JSON_BYTES_MAX, err));
    FR_TRY(fr_rpc_check_names(at, "primary_key", r->n_primary_key, r->primary_key, err));
    FR_TRY(fr_rpc_check_names(at, "partition_keys", r->n_partition_keys, r->partition_keys, err));
    FR_TRY(fr_rpc_check_count(at, "options", r->n_options, false, FR_RPC_OPTIONS_MAX, err));
    for (size_t i = 0; i < r->n_options; i++) {
        fr_rpc_at sub = fr_rpc_at_item(at, "options", (long)i);
        FR_TRY(fr_rpc_check_string(&sub, "key", r->options[i]->key, true, FR_RPC_OPTION_BYTES_MAX,
                                   err));
        FR_TRY(fr_rpc_check_string(&sub, "value", r->options[i]->value, false,
                                   FR_RPC_OPTION_BYTES_MAX, err));
    }
    return 0;
}

static int fr_rpc_check_produce(const fr_rpc_at *at, const Firth__ProduceLogRequest *r,
                                fr_error *err)
{
    FR_TRY(fr_rpc_check_table_ref(at, r->path, r->table_id, err));
    FR_TRY(fr_rpc_check_writer(at, r->writer_id, err));
    FR_TRY(fr_rpc_check_count(at, "buckets", r->n_buckets, true, FR_RPC_ITEMS_MAX, err));
    for (size_t i = 0; i < r->n_buckets; i++) {
        fr_rpc_at sub = fr_rpc_at_item(at, "buckets", (long)i);
        const Firth__ProduceBucket *b = r->buckets[i];
        FR_TRY(fr_rpc_check_bucket(&sub, b->partition_id, b->bucket, err));
        FR_TRY(fr_rpc_check_batch(&sub, "records", b->records, err));
    }
    return 0;
}

static int fr_rpc_check_put_kv(const fr_rpc_at *at, const Firth__PutKvRequest *r, fr_error *err)
{
    FR_TRY(fr_rpc_check_table_ref(at, r->path, r->table_id, err));
    FR_TRY(fr_rpc_check_writer(at, r->writer_id, err));
    FR_TRY(fr_rpc_check_columns(at, "target_columns", r->n_target_columns, r->target_columns, err));
    FR_TRY(fr_rpc_check_count(at, "buckets", r->n_buckets, true, FR_RPC_ITEMS_MAX, err));
    for (size_t i = 0; i < r->n_buckets; i++) {
        fr_rpc_at sub = fr_rpc_at_item(at, "buckets", (long)i);
        const Firth__PutKvBucket *b = r->buckets[i];
        FR_TRY(fr_rpc_check_bucket(&sub, b->partition_id, b->bucket, err));
        FR_TRY(fr_rpc_check_batch(&sub, "records", b->records, err));
    }
    return 0;
}

static int fr_rpc_check_fetch_table(const fr_rpc_at *at, const Firth__FetchTable *t, fr_error *err)
{
    FR_TRY(fr_rpc_check_table_ref(at, t->path, t->table_id, err));
    FR_TRY(fr_rpc_check_columns(at, "projection", t->n_projection, t->projection, err));
    FR_TRY(fr_rpc_check_string(at, "filter", t->filter, false, FR_RPC_SQL_BYTES_MAX, err));
    FR_TRY(fr_rpc_check_count(at, "buckets", t->n_buckets, true, FR_RPC_ITEMS_MAX, err));
    for (size_t i = 0; i < t->n_buckets; i++) {
        fr_rpc_at sub = fr_rpc_at_item(at, "buckets", (long)i);
        const Firth__FetchBucket *b = t->buckets[i];
        FR_TRY(fr_rpc_check_bucket(&sub, b->partition_id, b->bucket, err));
        FR_RPC_CHECK(b->fetch_offset >= 0, FR_EINVAL, &sub, err, "fetch offset %lld is negative",
                     (long long)b->fetch_offset);
        FR_RPC_CHECK(b->max_bytes >= 0, FR_EINVAL, &sub, err, "max_bytes %d is negative",
                     (int)b->max_bytes);
    }
    return 0;
}

static int fr_rpc_check_fetch(const fr_rpc_at *at, const Firth__FetchLogRequest *r, fr_error *err)
{
    FR_TRY(fr_rpc_check_count(at, "tables", r->n_tables, true, FR_RPC_ITEMS_MAX, err));
    size_t buckets = 0;
    for (size_t i = 0; i < r->n_tables; i++) {
        fr_rpc_at sub = fr_rpc_at_item(at, "tables", (long)i);
        FR_TRY(fr_rpc_check_fetch_table(&sub, r->tables[i], err));
        buckets += r->tables[i]->n_buckets;
    }
    FR_TRY(fr_rpc_check_count(at, "buckets in all tables", buckets, true, FR_RPC_ITEMS_MAX, err));
    FR_RPC_CHECK(r->max_wait_ms >= 0 && r->max_wait_ms <= FR_RPC_WAIT_MS_MAX, FR_EINVAL, at, err,
                 "max_wait_ms %d is outside 0..%d", (int)r->max_wait_ms, FR_RPC_WAIT_MS_MAX);
    FR_RPC_CHECK(r->min_bytes >= 0, FR_EINVAL, at, err, "min_bytes %d is negative",
                 (int)r->min_bytes);
    FR_RPC_CHECK(r->max_bytes >= 0, FR_EINVAL, at, err, "max_bytes %d is negative",
                 (int)r->max_bytes);
    return 0;
}

/* Lookup and prefix lookup start alike: the table and the projection. */
static int fr_rpc_check_keyed(const fr_rpc_at *at, const Firth__TablePath *path, int64_t table_id,
                              size_t nproj, const int32_t *proj, fr_error *err)
{
    FR_TRY(fr_rpc_check_table_ref(at, path, table_id, err));
    return fr_rpc_check_columns(at, "projection", nproj, proj, err);
}

static int fr_rpc_check_lookup(const fr_rpc_at *at, const Firth__LookupRequest *r, fr_error *err)
{
    FR_TRY(fr_rpc_check_keyed(at, r->path, r->table_id, r->n_projection, r->projection, err));
    FR_TRY(fr_rpc_check_count(at, "buckets", r->n_buckets, true, FR_RPC_ITEMS_MAX, err));
    for (size_t i = 0; i < r->n_buckets; i++) {
        fr_rpc_at sub = fr_rpc_at_item(at, "buckets", (long)i);
        const Firth__LookupBucket *b = r->buckets[i];
        FR_TRY(fr_rpc_check_bucket(&sub, b->partition_id, b->bucket, err));
        FR_TRY(fr_rpc_check_batch(&sub, "keys", b->keys, err));
    }
    return 0;
}

static int fr_rpc_check_prefix_lookup(const fr_rpc_at *at, const Firth__PrefixLookupRequest *r,
                                      fr_error *err)
{
    FR_TRY(fr_rpc_check_keyed(at, r->path, r->table_id, r->n_projection, r->projection, err));
    FR_TRY(fr_rpc_check_count(at, "buckets", r->n_buckets, true, FR_RPC_ITEMS_MAX, err));
    for (size_t i = 0; i < r->n_buckets; i++) {
        fr_rpc_at sub = fr_rpc_at_item(at, "buckets", (long)i);
        const Firth__PrefixLookupBucket *b = r->buckets[i];
        FR_TRY(fr_rpc_check_bucket(&sub, b->partition_id, b->bucket, err));
        FR_TRY(fr_rpc_check_batch(&sub, "prefixes", b->prefixes, err));
    }
    return 0;
}

static int fr_rpc_check_list_offsets(const fr_rpc_at *at, const Firth__ListOffsetsRequest *r,
                                     fr_error *err)
{
    FR_TRY(fr_rpc_check_table_ref(at, r->path, r->table_id, err));
    FR_RPC_CHECK(r->spec == FIRTH__OFFSET_SPEC__OFFSET_EARLIEST ||
                     r->spec == FIRTH__OFFSET_SPEC__OFFSET_LATEST ||
                     r->spec == FIRTH__OFFSET_SPEC__OFFSET_TIMESTAMP,
                 FR_EINVAL, at, err,
                 "offset spec %d is not EARLIEST (0), LATEST (1) or TIMESTAMP (2)", (int)r->spec);
    FR_RPC_CHECK(r->spec != FIRTH__OFFSET_SPEC__OFFSET_TIMESTAMP || r->timestamp_ms >= 0, FR_EINVAL,
                 at, err, "timestamp %lld is negative", (long long)r->timestamp_ms);
    FR_TRY(fr_rpc_check_count(at, "buckets", r->n_buckets, false, FR_RPC_ITEMS_MAX, err));
    for (size_t i = 0; i < r->n_buckets; i++) {
        fr_rpc_at sub = fr_rpc_at_item(at, "buckets", (long)i);
        FR_TRY(fr_rpc_check_bucket(&sub, r->buckets[i]->partition_id, r->buckets[i]->bucket, err));
    }
    return 0;
}

static int fr_rpc_check_sql(const fr_rpc_at *at, const Firth__ExecuteSqlRequest *r, fr_error *err)
{
    FR_TRY(fr_rpc_check_string(at, "sql", r->sql, true, FR_RPC_SQL_BYTES_MAX, err));
    return fr_rpc_check_string(at, "database", r->database, false, FR_RPC_NAME_BYTES_MAX, err);
}

static int fr_rpc_check_auth(const fr_rpc_at *at, const Firth__AuthenticateRequest *r,
                             fr_error *err)
{
    FR_TRY(fr_rpc_check_name(at, "mechanism", r->mechanism, err));
    FR_RPC_CHECK(r->auth_bytes.len <= FR_RPC_AUTH_BYTES_MAX, FR_ELIMIT, at, err,
                 "auth_bytes of %zu bytes exceed %d bytes", r->auth_bytes.len,
                 FR_RPC_AUTH_BYTES_MAX);
    return 0;
}

int fr_rpc_request_check(fr_rpc_api api, const ProtobufCMessage *m, fr_error *err)
{
    const fr_rpc_api_info *info = fr_rpc_api_lookup((int)api);
    assert(info && m->descriptor == info->request);
    fr_rpc_at at = { NULL, info->name, -1 };
    switch (api) {
    case FR_RPC_API_VERSIONS:
        return fr_rpc_check_string(&at, "client_software",
                                   ((const Firth__ApiVersionsRequest *)m)->client_software, false,
                                   FR_RPC_NAME_BYTES_MAX, err);
    case FR_RPC_METADATA: return fr_rpc_check_metadata(&at, (const Firth__MetadataRequest *)m, err);
    case FR_RPC_CREATE_DATABASE:
        return fr_rpc_check_name(&at, "database",
                                 ((const Firth__CreateDatabaseRequest *)m)->database, err);
    case FR_RPC_DROP_DATABASE:
        return fr_rpc_check_name(&at, "database", ((const Firth__DropDatabaseRequest *)m)->database,
                                 err);
    case FR_RPC_LIST_DATABASES: return 0;
    case FR_RPC_CREATE_TABLE:
        return fr_rpc_check_create_table(&at, (const Firth__CreateTableRequest *)m, err);
    case FR_RPC_DROP_TABLE:
        return fr_rpc_check_path(&at, ((const Firth__DropTableRequest *)m)->path, err);
    case FR_RPC_LIST_TABLES:
        return fr_rpc_check_name(&at, "database", ((const Firth__ListTablesRequest *)m)->database,
                                 err);
    case FR_RPC_GET_TABLE_INFO:
        return fr_rpc_check_path(&at, ((const Firth__GetTableInfoRequest *)m)->path, err);
    case FR_RPC_PRODUCE_LOG:
        return fr_rpc_check_produce(&at, (const Firth__ProduceLogRequest *)m, err);
    case FR_RPC_PUT_KV: return fr_rpc_check_put_kv(&at, (const Firth__PutKvRequest *)m, err);
    case FR_RPC_FETCH_LOG: return fr_rpc_check_fetch(&at, (const Firth__FetchLogRequest *)m, err);
    case FR_RPC_LOOKUP: return fr_rpc_check_lookup(&at, (const Firth__LookupRequest *)m, err);
    case FR_RPC_PREFIX_LOOKUP:
        return fr_rpc_check_prefix_lookup(&at, (const Firth__PrefixLookupRequest *)m, err);
    case FR_RPC_LIST_OFFSETS:
        return fr_rpc_check_list_offsets(&at, (const Firth__ListOffsetsRequest *)m, err);
    case FR_RPC_EXECUTE_SQL: return fr_rpc_check_sql(&at, (const Firth__ExecuteSqlRequest *)m, err);
    case FR_RPC_AUTHENTICATE:
        return fr_rpc_check_auth(&at, (const Firth__AuthenticateRequest *)m, err);
    case FR_RPC_LAKE_SNAPSHOT: {
        const Firth__LakeSnapshotRequest *r = (const Firth__LakeSnapshotRequest *)m;
        return fr_rpc_check_table_ref(&at, r->path, r->table_id, err);
    }
    case FR_RPC_API_COUNT: break;
    }
    assert(!"an api without checks");
    return fr_rpc_fail_at(&at, FR_EINVAL, err, "no checks for this api");
}
