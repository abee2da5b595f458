/* test_rpc_message.c — the bodies of the native protocol: the api table, every request and
 * every response packed into a frame and unpacked again, unknown apis and versions,
 * malformed protobuf, the checks each request must pass, the unpacking memory budget,
 * failing allocations, the error codes with their mapping to FR_E* statuses, and the bytes
 * of the worked example in docs/PROTOCOL.md.
 *
 * With FIRTH_RPC_WRITE_SEEDS=DIR set, the test also writes the seed corpora of fuzz_rpc_frame
 * and fuzz_rpc_message (DIR/rpc_frame, DIR/rpc_message) from the sample messages below. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <cmocka.h>

#include "rpc/rpc.h"

#define assert_msg_has(err, s)                                                                     \
    do {                                                                                           \
        if (!strstr((err).msg, (s))) fail_msg("message \"%s\" lacks \"%s\"", (err).msg, (s));     \
    } while (0)

/* ---- sample messages, one request and one response per api ------------------------------- */

static uint8_t tm_records[64]; /* stands for record batch bytes: the rpc layer does not look */
static Firth__TablePath tm_path = { PROTOBUF_C_MESSAGE_INIT(&firth__table_path__descriptor),
                                    "sales", "orders" };
static Firth__TablePath tm_path2 = { PROTOBUF_C_MESSAGE_INIT(&firth__table_path__descriptor),
                                     "sales", "gone" };

static ProtobufCBinaryData tm_bytes(void)
{
    for (size_t i = 0; i < sizeof tm_records; i++) tm_records[i] = (uint8_t)(i * 13 + 1);
    return (ProtobufCBinaryData){ sizeof tm_records, tm_records };
}

static ProtobufCMessage *tm_request_a(fr_rpc_api api)
{
    switch (api) {
    case FR_RPC_API_VERSIONS: {
        static Firth__ApiVersionsRequest m = FIRTH__API_VERSIONS_REQUEST__INIT;
        m.client_software = "libfirth 0.1.0";
        return &m.base;
    }
    case FR_RPC_METADATA: {
        static Firth__MetadataRequest m = FIRTH__METADATA_REQUEST__INIT;
        static Firth__TablePath *tables[2] = { &tm_path, &tm_path2 };
        m.n_tables = 2;
        m.tables = tables;
        m.skip_offsets = true;
        return &m.base;
    }
    case FR_RPC_CREATE_DATABASE: {
        static Firth__CreateDatabaseRequest m = FIRTH__CREATE_DATABASE_REQUEST__INIT;
        m.database = "sales";
        m.if_not_exists = true;
        return &m.base;
    }
    case FR_RPC_DROP_DATABASE: {
        static Firth__DropDatabaseRequest m = FIRTH__DROP_DATABASE_REQUEST__INIT;
        m.database = "sales";
        m.if_exists = true;
        m.cascade = true;
        return &m.base;
    }
    case FR_RPC_LIST_DATABASES: {
        static Firth__ListDatabasesRequest m = FIRTH__LIST_DATABASES_REQUEST__INIT;
        return &m.base;
    }
    case FR_RPC_CREATE_TABLE: {
        static Firth__CreateTableRequest m = FIRTH__CREATE_TABLE_REQUEST__INIT;
        static Firth__TableOption o1 = FIRTH__TABLE_OPTION__INIT, o2 = FIRTH__TABLE_OPTION__INIT;
        static Firth__TableOption *opts[2] = { &o1, &o2 };
        static char *pk[2] = { "id", "dt" };
        static char *parts[1] = { "dt" };
        pk[0] = "id";
        pk[1] = "dt";
        o1.key = "bucket.num";
        o1.value = "4";
        o2.key = "table.log.ttl";
        o2.value = "7d";
        m.path = &tm_path;
        m.schema_json = "{\"fields\": [{\"name\": \"id\", \"type\": \"BIGINT\", \"nullable\": "
                        "false}, {\"name\": \"dt\", \"type\": \"STRING\", \"nullable\": false}]}";
        m.n_primary_key = 2;
        m.primary_key = pk;
        m.n_partition_keys = 1;
        m.partition_keys = parts;
        m.n_options = 2;
        m.options = opts;
        m.if_not_exists = true;
        return &m.base;
    }
    default: return NULL;
    }
}

static ProtobufCMessage *tm_request_b(fr_rpc_api api)
{
    switch (api) {
    case FR_RPC_DROP_TABLE: {
        static Firth__DropTableRequest m = FIRTH__DROP_TABLE_REQUEST__INIT;
        m.path = &tm_path;
        m.if_exists = true;
        return &m.base;
    }
    case FR_RPC_LIST_TABLES: {
        static Firth__ListTablesRequest m = FIRTH__LIST_TABLES_REQUEST__INIT;
        m.database = "sales";
        return &m.base;
    }
    case FR_RPC_GET_TABLE_INFO: {
        static Firth__GetTableInfoRequest m = FIRTH__GET_TABLE_INFO_REQUEST__INIT;
        m.path = &tm_path;
        return &m.base;
    }
    case FR_RPC_PRODUCE_LOG: {
        static Firth__ProduceLogRequest m = FIRTH__PRODUCE_LOG_REQUEST__INIT;
        static Firth__ProduceBucket b1 = FIRTH__PRODUCE_BUCKET__INIT,
                                    b2 = FIRTH__PRODUCE_BUCKET__INIT;
        static Firth__ProduceBucket *bs[2] = { &b1, &b2 };
        b1.partition_id = -1;
        b1.bucket = 0;
        b1.records = tm_bytes();
        b2.partition_id = -1;
        b2.bucket = 3;
        b2.records = tm_bytes();
        m.path = &tm_path;
        m.table_id = 7;
        m.writer_id = 42;
        m.n_buckets = 2;
        m.buckets = bs;
        return &m.base;
    }
    case FR_RPC_PUT_KV: {
        static Firth__PutKvRequest m = FIRTH__PUT_KV_REQUEST__INIT;
        static Firth__PutKvBucket b = FIRTH__PUT_KV_BUCKET__INIT;
        static Firth__PutKvBucket *bs[1] = { &b };
        static int32_t targets[2] = { 0, 2 };
        targets[0] = 0;
        targets[1] = 2;
        b.partition_id = 5;
        b.bucket = 1;
        b.records = tm_bytes();
        m.path = &tm_path;
        m.table_id = 7;
        m.writer_id = -1;
        m.n_target_columns = 2;
        m.target_columns = targets;
        m.n_buckets = 1;
        m.buckets = bs;
        return &m.base;
    }
    case FR_RPC_FETCH_LOG: {
        static Firth__FetchLogRequest m = FIRTH__FETCH_LOG_REQUEST__INIT;
        static Firth__FetchTable t = FIRTH__FETCH_TABLE__INIT;
        static Firth__FetchTable *ts[1] = { &t };
        static Firth__FetchBucket b1 = FIRTH__FETCH_BUCKET__INIT, b2 = FIRTH__FETCH_BUCKET__INIT;
        static Firth__FetchBucket *bs[2] = { &b1, &b2 };
        static int32_t proj[2] = { 2, 0 };
        proj[0] = 2;
        proj[1] = 0;
        b1.partition_id = -1;
        b1.bucket = 0;
        b1.fetch_offset = 100;
        b2.partition_id = -1;
        b2.bucket = 1;
        b2.fetch_offset = 0;
        b2.max_bytes = 65536;
        t.path = &tm_path;
        t.table_id = 7;
        t.n_projection = 2;
        t.projection = proj;
        t.filter = "v > 10";
        t.n_buckets = 2;
        t.buckets = bs;
        m.n_tables = 1;
        m.tables = ts;
        m.max_wait_ms = 500;
        m.min_bytes = 1;
        m.max_bytes = 1 << 20;
        return &m.base;
    }
    default: return NULL;
    }
}

static ProtobufCMessage *tm_request_c(fr_rpc_api api)
{
    switch (api) {
    case FR_RPC_LOOKUP: {
        static Firth__LookupRequest m = FIRTH__LOOKUP_REQUEST__INIT;
        static Firth__LookupBucket b = FIRTH__LOOKUP_BUCKET__INIT;
        static Firth__LookupBucket *bs[1] = { &b };
        static int32_t proj[1] = { 1 };
        b.partition_id = -1;
        b.bucket = 2;
        b.keys = tm_bytes();
        m.path = &tm_path;
        m.table_id = 7;
        m.n_projection = 1;
        m.projection = proj;
        m.n_buckets = 1;
        m.buckets = bs;
        return &m.base;
    }
    case FR_RPC_PREFIX_LOOKUP: {
        static Firth__PrefixLookupRequest m = FIRTH__PREFIX_LOOKUP_REQUEST__INIT;
        static Firth__PrefixLookupBucket b = FIRTH__PREFIX_LOOKUP_BUCKET__INIT;
        static Firth__PrefixLookupBucket *bs[1] = { &b };
        b.partition_id = 3;
        b.bucket = 0;
        b.prefixes = tm_bytes();
        m.path = &tm_path;
        m.table_id = 7;
        m.n_buckets = 1;
        m.buckets = bs;
        return &m.base;
    }
    case FR_RPC_LIST_OFFSETS: {
        static Firth__ListOffsetsRequest m = FIRTH__LIST_OFFSETS_REQUEST__INIT;
        static Firth__BucketRef b1 = FIRTH__BUCKET_REF__INIT, b2 = FIRTH__BUCKET_REF__INIT;
        static Firth__BucketRef *bs[2] = { &b1, &b2 };
        b1.partition_id = -1;
        b2.partition_id = -1;
        b2.bucket = 1;
        m.path = &tm_path;
        m.table_id = 7;
        m.spec = FIRTH__OFFSET_SPEC__OFFSET_TIMESTAMP;
        m.timestamp_ms = 1764504000000;
        m.n_buckets = 2;
        m.buckets = bs;
        return &m.base;
    }
    case FR_RPC_EXECUTE_SQL: {
        static Firth__ExecuteSqlRequest m = FIRTH__EXECUTE_SQL_REQUEST__INIT;
        m.sql = "SELECT id, v FROM orders WHERE id = 1;";
        m.database = "sales";
        return &m.base;
    }
    case FR_RPC_AUTHENTICATE: {
        static Firth__AuthenticateRequest m = FIRTH__AUTHENTICATE_REQUEST__INIT;
        m.mechanism = "PLAIN";
        m.auth_bytes = (ProtobufCBinaryData){ 13, (uint8_t *)"\0alice\0secret" };
        return &m.base;
    }
    case FR_RPC_LAKE_SNAPSHOT: {
        static Firth__LakeSnapshotRequest m = FIRTH__LAKE_SNAPSHOT_REQUEST__INIT;
        m.path = &tm_path;
        m.table_id = 7;
        return &m.base;
    }
    default: return NULL;
    }
}

/* The sample request of api, with every field set afresh (tests change them). */
static ProtobufCMessage *tm_request(fr_rpc_api api)
{
    tm_path.database = tm_path2.database = "sales";
    tm_path.table = "orders";
    tm_path2.table = "gone";
    ProtobufCMessage *m = tm_request_a(api);
    if (!m) m = tm_request_b(api);
    if (!m) m = tm_request_c(api);
    assert_non_null(m);
    return m;
}

static Firth__Error *tm_error(Firth__ErrorCode code, const char *msg)
{
    static Firth__Error errors[4];
    static int next;
    Firth__Error *e = &errors[next++ % 4];
    firth__error__init(e);
    e->code = code;
    e->message = (char *)msg;
    return e;
}

static ProtobufCMessage *tm_response_a(fr_rpc_api api)
{
    switch (api) {
    case FR_RPC_API_VERSIONS: {
        static Firth__ApiVersionsResponse m = FIRTH__API_VERSIONS_RESPONSE__INIT;
        static Firth__ApiVersionRange r[FR_RPC_API_COUNT];
        static Firth__ApiVersionRange *rs[FR_RPC_API_COUNT];
        for (int i = 0; i < FR_RPC_API_COUNT; i++) {
            const fr_rpc_api_info *info = fr_rpc_api_lookup(i);
            firth__api_version_range__init(&r[i]);
            r[i].api_key = i;
            r[i].min_version = info->min_version;
            r[i].max_version = info->max_version;
            r[i].name = (char *)info->name;
            rs[i] = &r[i];
        }
        m.n_apis = FR_RPC_API_COUNT;
        m.apis = rs;
        m.server_software = "firth 0.1.0";
        m.frame_bytes_max = FR_RPC_FRAME_BYTES_MAX_DEFAULT;
        m.in_flight_max = 64;
        m.node_id = 1;
        return &m.base;
    }
    case FR_RPC_METADATA: {
        static Firth__MetadataResponse m = FIRTH__METADATA_RESPONSE__INIT;
        static Firth__Node node = FIRTH__NODE__INIT;
        static Firth__Node *nodes[1] = { &node };
        static Firth__BucketMetadata b0 = FIRTH__BUCKET_METADATA__INIT,
                                     b1 = FIRTH__BUCKET_METADATA__INIT;
        static Firth__BucketMetadata *bs[2] = { &b0, &b1 };
        static Firth__PartitionMetadata p = FIRTH__PARTITION_METADATA__INIT;
        static Firth__PartitionMetadata *ps[1] = { &p };
        static char *values[1] = { "2026-11-30" };
        static char *pkeys[1] = { "dt" };
        static Firth__TableMetadata t1 = FIRTH__TABLE_METADATA__INIT,
                                    t2 = FIRTH__TABLE_METADATA__INIT;
        static Firth__TableMetadata *ts[2] = { &t1, &t2 };
        node.node_id = 1;
        node.host = "127.0.0.1";
        node.port = 9123;
        b0.leader = 1;
        b0.log_end_offset = 120;
        b1.bucket = 1;
        b1.leader = 1;
        b1.log_start_offset = 5;
        b1.log_end_offset = 99;
        p.partition_id = 11;
        p.name = "dt=2026-11-30";
        p.n_values = 1;
        p.values = values;
        p.n_buckets = 2;
        p.buckets = bs;
        t1.path = &tm_path;
        t1.table_id = 7;
        t1.num_buckets = 2;
        t1.has_primary_key = true;
        t1.n_partition_keys = 1;
        t1.partition_keys = pkeys;
        t1.n_partitions = 1;
        t1.partitions = ps;
        t2.path = &tm_path2;
        t2.error = tm_error(FIRTH__ERROR_CODE__NOT_FOUND, "table sales.gone does not exist");
        m.n_nodes = 1;
        m.nodes = nodes;
        m.n_tables = 2;
        m.tables = ts;
        return &m.base;
    }
    case FR_RPC_CREATE_DATABASE: {
        static Firth__CreateDatabaseResponse m = FIRTH__CREATE_DATABASE_RESPONSE__INIT;
        return &m.base;
    }
    case FR_RPC_DROP_DATABASE: {
        static Firth__DropDatabaseResponse m = FIRTH__DROP_DATABASE_RESPONSE__INIT;
        return &m.base;
    }
    case FR_RPC_LIST_DATABASES: {
        static Firth__ListDatabasesResponse m = FIRTH__LIST_DATABASES_RESPONSE__INIT;
        static char *names[2] = { "default", "sales" };
        m.n_databases = 2;
        m.databases = names;
        return &m.base;
    }
    case FR_RPC_CREATE_TABLE: {
        static Firth__CreateTableResponse m = FIRTH__CREATE_TABLE_RESPONSE__INIT;
        m.table_id = 7;
        return &m.base;
    }
    case FR_RPC_DROP_TABLE: {
        static Firth__DropTableResponse m = FIRTH__DROP_TABLE_RESPONSE__INIT;
        return &m.base;
    }
    case FR_RPC_LIST_TABLES: {
        static Firth__ListTablesResponse m = FIRTH__LIST_TABLES_RESPONSE__INIT;
        static char *names[1] = { "orders" };
        m.n_tables = 1;
        m.tables = names;
        return &m.base;
    }
    default: return NULL;
    }
}

static ProtobufCMessage *tm_response_b(fr_rpc_api api)
{
    switch (api) {
    case FR_RPC_GET_TABLE_INFO: {
        static Firth__GetTableInfoResponse m = FIRTH__GET_TABLE_INFO_RESPONSE__INIT;
        static char *pk[1] = { "id" };
        static char *bk[1] = { "id" };
        static Firth__TableOption o = FIRTH__TABLE_OPTION__INIT;
        static Firth__TableOption *opts[1] = { &o };
        o.key = "bucket.num";
        o.value = "4";
        m.path = &tm_path;
        m.table_id = 7;
        m.schema_json = "{\"id\": 0, \"fields\": []}";
        m.table_json = "{\"id\": 7, \"name\": \"orders\"}";
        m.n_primary_key = 1;
        m.primary_key = pk;
        m.n_bucket_keys = 1;
        m.bucket_keys = bk;
        m.num_buckets = 4;
        m.n_options = 1;
        m.options = opts;
        m.created_ms = 1764504000000;
        return &m.base;
    }
    case FR_RPC_PRODUCE_LOG: {
        static Firth__ProduceLogResponse m = FIRTH__PRODUCE_LOG_RESPONSE__INIT;
        static Firth__ProduceBucketResult r1 = FIRTH__PRODUCE_BUCKET_RESULT__INIT,
                                          r2 = FIRTH__PRODUCE_BUCKET_RESULT__INIT;
        static Firth__ProduceBucketResult *rs[2] = { &r1, &r2 };
        r1.partition_id = -1;
        r1.base_offset = 100;
        r1.commit_timestamp = 1764504000123;
        r2.partition_id = -1;
        r2.bucket = 3;
        r2.error = tm_error(FIRTH__ERROR_CODE__DUPLICATE, "batch 5 of writer 42 is appended");
        r2.base_offset = 90;
        m.n_buckets = 2;
        m.buckets = rs;
        return &m.base;
    }
    case FR_RPC_PUT_KV: {
        static Firth__PutKvResponse m = FIRTH__PUT_KV_RESPONSE__INIT;
        static Firth__PutKvBucketResult r = FIRTH__PUT_KV_BUCKET_RESULT__INIT;
        static Firth__PutKvBucketResult *rs[1] = { &r };
        r.partition_id = 5;
        r.bucket = 1;
        r.rows_changed = 2;
        r.changelog_records = 3;
        r.base_offset = 17;
        m.n_buckets = 1;
        m.buckets = rs;
        return &m.base;
    }
    case FR_RPC_FETCH_LOG: {
        static Firth__FetchLogResponse m = FIRTH__FETCH_LOG_RESPONSE__INIT;
        static Firth__FetchTableResult t = FIRTH__FETCH_TABLE_RESULT__INIT;
        static Firth__FetchTableResult *ts[1] = { &t };
        static Firth__FetchBucketResult r1 = FIRTH__FETCH_BUCKET_RESULT__INIT,
                                        r2 = FIRTH__FETCH_BUCKET_RESULT__INIT;
        static Firth__FetchBucketResult *rs[2] = { &r1, &r2 };
        r1.partition_id = -1;
        r1.high_watermark = 120;
        r1.records = tm_bytes();
        r1.next_offset = 120;
        r2.partition_id = -1;
        r2.bucket = 1;
        r2.error = tm_error(FIRTH__ERROR_CODE__OUT_OF_RANGE, "offset 900 is past the end 40");
        r2.high_watermark = 40;
        r2.log_start_offset = 10;
        t.path = &tm_path;
        t.n_buckets = 2;
        t.buckets = rs;
        m.n_tables = 1;
        m.tables = ts;
        return &m.base;
    }
    default: return NULL;
    }
}

static ProtobufCMessage *tm_response_c(fr_rpc_api api)
{
    switch (api) {
    case FR_RPC_LOOKUP: {
        static Firth__LookupResponse m = FIRTH__LOOKUP_RESPONSE__INIT;
        static Firth__LookupBucketResult r = FIRTH__LOOKUP_BUCKET_RESULT__INIT;
        static Firth__LookupBucketResult *rs[1] = { &r };
        static protobuf_c_boolean found[3] = { 1, 0, 1 };
        r.partition_id = -1;
        r.bucket = 2;
        r.n_found = 3;
        r.found = found;
        r.rows = tm_bytes();
        m.n_buckets = 1;
        m.buckets = rs;
        return &m.base;
    }
    case FR_RPC_PREFIX_LOOKUP: {
        static Firth__PrefixLookupResponse m = FIRTH__PREFIX_LOOKUP_RESPONSE__INIT;
        static Firth__PrefixLookupBucketResult r = FIRTH__PREFIX_LOOKUP_BUCKET_RESULT__INIT;
        static Firth__PrefixLookupBucketResult *rs[1] = { &r };
        static int64_t counts[2] = { 2, 0 };
        r.partition_id = 3;
        r.n_row_counts = 2;
        r.row_counts = counts;
        r.rows = tm_bytes();
        m.n_buckets = 1;
        m.buckets = rs;
        return &m.base;
    }
    case FR_RPC_LIST_OFFSETS: {
        static Firth__ListOffsetsResponse m = FIRTH__LIST_OFFSETS_RESPONSE__INIT;
        static Firth__BucketOffset o1 = FIRTH__BUCKET_OFFSET__INIT, o2 = FIRTH__BUCKET_OFFSET__INIT;
        static Firth__BucketOffset *os[2] = { &o1, &o2 };
        o1.partition_id = -1;
        o1.offset = 57;
        o2.partition_id = -1;
        o2.bucket = 1;
        m.n_buckets = 2;
        m.buckets = os;
        return &m.base;
    }
    case FR_RPC_EXECUTE_SQL: {
        static Firth__ExecuteSqlResponse m = FIRTH__EXECUTE_SQL_RESPONSE__INIT;
        m.statement = 1;
        m.arrow_ipc = tm_bytes();
        m.statement_done = true;
        m.message = "";
        m.rows = 3;
        m.database = "sales";
        return &m.base;
    }
    case FR_RPC_AUTHENTICATE: {
        static Firth__AuthenticateResponse m = FIRTH__AUTHENTICATE_RESPONSE__INIT;
        m.principal = "alice";
        m.session_lifetime_ms = 3600000;
        return &m.base;
    }
    case FR_RPC_LAKE_SNAPSHOT: {
        static Firth__LakeSnapshotResponse m = FIRTH__LAKE_SNAPSHOT_RESPONSE__INIT;
        static Firth__LakeOffset o1 = FIRTH__LAKE_OFFSET__INIT, o2 = FIRTH__LAKE_OFFSET__INIT;
        static Firth__LakeOffset *os[2] = { &o1, &o2 };
        o1.partition_id = -1;
        o1.offset = 120;
        o2.partition_id = -1;
        o2.bucket = 1;
        o2.offset = 98;
        m.snapshot_id = 4215730518211150001;
        m.committed_at_ms = 1764504000000;
        m.n_offsets = 2;
        m.offsets = os;
        return &m.base;
    }
    default: return NULL;
    }
}

static ProtobufCMessage *tm_response(fr_rpc_api api)
{
    ProtobufCMessage *m = tm_response_a(api);
    if (!m) m = tm_response_b(api);
    if (!m) m = tm_response_c(api);
    assert_non_null(m);
    return m;
}

/* Packs m into a fresh buffer (the caller frees it). */
static fr_buf tm_pack(const ProtobufCMessage *m)
{
    fr_buf b;
    fr_buf_init(&b);
    fr_error err;
    assert_int_equal(fr_rpc_pack(m, &b, &err), 0);
    return b;
}

static void tm_assert_same(const ProtobufCMessage *a, const ProtobufCMessage *b)
{
    assert_ptr_equal(a->descriptor, b->descriptor);
    fr_buf pa = tm_pack(a), pb = tm_pack(b);
    assert_int_equal(pa.len, pb.len);
    if (pa.len) assert_memory_equal(pa.data, pb.data, pa.len);
    fr_buf_free(&pa);
    fr_buf_free(&pb);
}

/* ---- the api table ------------------------------------------------------------------------- */

static void test_api_table(void **state)
{
    (void)state;
    for (int i = 0; i < FR_RPC_API_COUNT; i++) {
        const fr_rpc_api_info *a = fr_rpc_api_lookup(i);
        assert_non_null(a);
        assert_int_equal(a->key, i);
        assert_true(a->name && a->name[0]);
        assert_string_equal(fr_rpc_api_name(i), a->name);
        assert_true(a->min_version <= a->max_version);
        assert_true(a->min_version >= 0);
        /* The descriptors are XRequest and XResponse of one stem. */
        const char *rq = a->request->short_name, *rs = a->response->short_name;
        size_t stem = strlen(rq) - strlen("Request");
        assert_string_equal(rq + stem, "Request");
        assert_int_equal(strncmp(rq, rs, stem), 0);
        assert_string_equal(rs + stem, "Response");
        /* The proto enum names the same key. */
        const ProtobufCEnumValue *v =
            protobuf_c_enum_descriptor_get_value(&firth__api_key__descriptor, i);
        assert_non_null(v);
        assert_int_equal(a->streams, i == FR_RPC_EXECUTE_SQL);
        for (int j = 0; j < i; j++) assert_string_not_equal(fr_rpc_api_lookup(j)->name, a->name);
    }
    assert_int_equal(firth__api_key__descriptor.n_values, FR_RPC_API_COUNT);
    assert_null(fr_rpc_api_lookup(-1));
    assert_null(fr_rpc_api_lookup(FR_RPC_API_COUNT));
    assert_null(fr_rpc_api_lookup(INT16_MAX));
    assert_string_equal(fr_rpc_api_name(77), "api 77");
    assert_string_equal(fr_rpc_api_name(FR_RPC_FETCH_LOG), "fetch_log");
}

/* ---- every message through a frame and back ------------------------------------------------ */

static void test_every_request(void **state)
{
    (void)state;
    for (int api = 0; api < FR_RPC_API_COUNT; api++) {
        ProtobufCMessage *req = tm_request((fr_rpc_api)api);
        fr_error err;
        assert_int_equal(fr_rpc_request_check((fr_rpc_api)api, req, &err), 0);
        fr_buf out;
        fr_buf_init(&out);
        assert_int_equal(fr_rpc_write_request(&out, (fr_rpc_api)api, 0, 1000 + api, req,
                                              FR_RPC_FRAME_BYTES_MAX_DEFAULT, &err),
                         0);
        fr_rpc_frame f;
        assert_int_equal(fr_rpc_frame_decode(FR_RPC_REQUEST, out.data, out.len,
                                             FR_RPC_FRAME_BYTES_MAX_DEFAULT, &f, &err),
                         0);
        assert_int_equal(f.api_key, api);
        assert_int_equal(f.request_id, 1000 + api);
        ProtobufCMessage *got = NULL;
        Firth__ErrorCode code = FIRTH__ERROR_CODE__UNKNOWN_ERROR;
        if (fr_rpc_request_unpack(&f, &got, &code, &err) != 0)
            fail_msg("%s: %s", fr_rpc_api_name(api), err.msg);
        assert_int_equal(code, FIRTH__ERROR_CODE__NONE);
        tm_assert_same(req, got);
        fr_rpc_free(got);
        fr_buf_free(&out);
    }
    /* A few fields read back, beyond the bytes being equal. */
    fr_buf b = tm_pack(tm_request(FR_RPC_FETCH_LOG));
    ProtobufCMessage *m;
    fr_error err;
    assert_int_equal(
        fr_rpc_unpack(&firth__fetch_log_request__descriptor, "fetch", b.data, b.len, &m, &err), 0);
    Firth__FetchLogRequest *fr = (Firth__FetchLogRequest *)m;
    assert_int_equal(fr->n_tables, 1);
    assert_string_equal(fr->tables[0]->path->table, "orders");
    assert_string_equal(fr->tables[0]->filter, "v > 10");
    assert_int_equal(fr->tables[0]->projection[0], 2);
    assert_int_equal(fr->tables[0]->buckets[0]->partition_id, -1);
    assert_int_equal(fr->tables[0]->buckets[0]->fetch_offset, 100);
    assert_int_equal(fr->max_wait_ms, 500);
    fr_rpc_free(m);
    fr_buf_free(&b);
}

/* The bytes of a gathered frame, joined. */
static fr_buf tm_join_gather(const fr_rpc_gather *g)
{
    fr_buf b;
    fr_buf_init(&b);
    fr_error err;
    for (int i = 0; i < g->niov; i++)
        assert_int_equal(fr_buf_append(&b, g->iov[i].iov_base, g->iov[i].iov_len, &err), 0);
    assert_int_equal(b.len, g->total);
    return b;
}

/* fr_rpc_write_request_gather writes the same bytes as fr_rpc_write_request for every
 * request, and references large record batches instead of copying them. */
static void test_request_gather(void **state)
{
    (void)state;
    fr_error err;
    for (int api = 0; api < FR_RPC_API_COUNT; api++) {
        ProtobufCMessage *req = tm_request((fr_rpc_api)api);
        fr_buf flat;
        fr_buf_init(&flat);
        assert_int_equal(fr_rpc_write_request(&flat, (fr_rpc_api)api, 0, 7, req,
                                              FR_RPC_FRAME_BYTES_MAX_DEFAULT, &err), 0);
        fr_rpc_gather g;
        fr_rpc_gather_init(&g);
        assert_int_equal(fr_rpc_write_request_gather(&g, (fr_rpc_api)api, 0, 7, req,
                                                     FR_RPC_FRAME_BYTES_MAX_DEFAULT, &err), 0);
        fr_buf joined = tm_join_gather(&g);
        assert_int_equal(joined.len, flat.len);
        assert_memory_equal(joined.data, flat.data, flat.len);
        fr_buf_free(&joined);
        fr_rpc_gather_free(&g);
        fr_buf_free(&flat);
    }
    /* Three large batches and a small one: the large ones are referenced in place. */
    enum { BIG = 100000 };
    uint8_t *big = malloc(3 * BIG);
    assert_non_null(big);
    for (size_t i = 0; i < 3 * BIG; i++) big[i] = (uint8_t)(i * 7 + 3);
    Firth__ProduceBucket bk[4], *bks[4];
    for (int i = 0; i < 4; i++) {
        firth__produce_bucket__init(&bk[i]);
        bk[i].partition_id = i - 1;
        bk[i].bucket = i;
        bk[i].records.data = i < 3 ? big + (size_t)i * BIG : tm_records;
        bk[i].records.len = i < 3 ? BIG : sizeof tm_records;
        bks[i] = &bk[i];
    }
    Firth__ProduceLogRequest req = FIRTH__PRODUCE_LOG_REQUEST__INIT;
    req.path = &tm_path;
    req.writer_id = 42;
    req.buckets = bks;
    req.n_buckets = 4;
    fr_buf flat;
    fr_buf_init(&flat);
    assert_int_equal(fr_rpc_write_request(&flat, FR_RPC_PRODUCE_LOG, 0, 9, &req.base,
                                          FR_RPC_FRAME_BYTES_MAX_DEFAULT, &err), 0);
    fr_rpc_gather g;
    fr_rpc_gather_init(&g);
    assert_int_equal(fr_rpc_write_request_gather(&g, FR_RPC_PRODUCE_LOG, 0, 9, &req.base,
                                                 FR_RPC_FRAME_BYTES_MAX_DEFAULT, &err), 0);
    int refs = 0;
    for (int i = 0; i < g.niov; i++)
        if ((uint8_t *)g.iov[i].iov_base >= big && (uint8_t *)g.iov[i].iov_base < big + 3 * BIG)
            refs++;
    assert_int_equal(refs, 3);
    assert_true(g.copied.len < 1000);
    fr_buf joined = tm_join_gather(&g);
    assert_int_equal(joined.len, flat.len);
    assert_memory_equal(joined.data, flat.data, flat.len);
    fr_buf_free(&joined);
    fr_rpc_gather_free(&g);
    /* Beyond the frame limit: refused as fr_rpc_write_request refuses it. */
    fr_rpc_gather_init(&g);
    assert_int_equal(fr_rpc_write_request_gather(&g, FR_RPC_PRODUCE_LOG, 0, 9, &req.base,
                                                 FR_RPC_FRAME_BYTES_MIN, &err), FR_ELIMIT);
    fr_rpc_gather_free(&g);
    fr_buf_free(&flat);
    free(big);
}

static void test_every_response(void **state)
{
    (void)state;
    for (int api = 0; api < FR_RPC_API_COUNT; api++) {
        ProtobufCMessage *resp = tm_response((fr_rpc_api)api);
        const fr_rpc_result results[] = { FR_RPC_SUCCESS, FR_RPC_PART };
        for (int k = 0; k < 2; k++) {
            if (results[k] == FR_RPC_PART && !fr_rpc_api_lookup(api)->streams) continue;
            fr_error err;
            fr_buf out;
            fr_buf_init(&out);
            assert_int_equal(fr_rpc_write_response(&out, results[k], api, resp,
                                                   FR_RPC_FRAME_BYTES_MAX_DEFAULT, &err),
                             0);
            fr_rpc_frame f;
            assert_int_equal(fr_rpc_frame_decode(FR_RPC_RESPONSE, out.data, out.len,
                                                 FR_RPC_FRAME_BYTES_MAX_DEFAULT, &f, &err),
                             0);
            assert_int_equal(f.result, results[k]);
            ProtobufCMessage *got = NULL;
            if (fr_rpc_response_unpack((fr_rpc_api)api, &f, &got, &err) != 0)
                fail_msg("%s: %s", fr_rpc_api_name(api), err.msg);
            tm_assert_same(resp, got);
            fr_rpc_free(got);
            fr_buf_free(&out);
        }
    }
    fr_buf b = tm_pack(tm_response(FR_RPC_LOOKUP));
    ProtobufCMessage *m;
    fr_error err;
    assert_int_equal(
        fr_rpc_unpack(&firth__lookup_response__descriptor, "lookup", b.data, b.len, &m, &err), 0);
    Firth__LookupResponse *lr = (Firth__LookupResponse *)m;
    assert_int_equal(lr->buckets[0]->n_found, 3);
    assert_true(lr->buckets[0]->found[0] && !lr->buckets[0]->found[1]);
    assert_int_equal(lr->buckets[0]->rows.len, sizeof tm_records);
    assert_memory_equal(lr->buckets[0]->rows.data, tm_records, sizeof tm_records);
    fr_rpc_free(m);
    fr_buf_free(&b);
}

/* ---- what the server refuses --------------------------------------------------------------- */

/* Unpacks body as a request of api (version 0) and returns the status. */
static int tm_unpack_request(int api, int version, const uint8_t *body, size_t len,
                             Firth__ErrorCode *code, fr_error *err)
{
    fr_rpc_frame f = { .direction = FR_RPC_REQUEST,
                       .api_key = (int16_t)api,
                       .api_version = (int16_t)version,
                       .request_id = 1,
                       .body = body,
                       .body_len = len };
    ProtobufCMessage *m = NULL;
    int rc = fr_rpc_request_unpack(&f, &m, code, err);
    assert_true((rc == 0) == (m != NULL));
    fr_rpc_free(m);
    return rc;
}

static void test_unknown_api_and_version(void **state)
{
    (void)state;
    fr_error err;
    Firth__ErrorCode code;
    assert_int_equal(tm_unpack_request(FR_RPC_API_COUNT, 0, NULL, 0, &code, &err),
                     FR_EUNSUPPORTED);
    assert_int_equal(code, FIRTH__ERROR_CODE__UNKNOWN_API);
    char unknown[64];
    snprintf(unknown, sizeof unknown, "unknown api key %d", FR_RPC_API_COUNT);
    assert_msg_has(err, unknown);
    /* The answer carries that code, not the status's (UNSUPPORTED). */
    fr_buf out;
    fr_buf_init(&out);
    fr_error e2;
    assert_int_equal(fr_rpc_write_error(&out, 5, code, &err, &e2), 0);
    fr_rpc_frame f;
    assert_int_equal(fr_rpc_frame_decode(FR_RPC_RESPONSE, out.data, out.len, 4096, &f, &e2), 0);
    ProtobufCMessage *m;
    assert_int_equal(fr_rpc_response_unpack(FR_RPC_API_VERSIONS, &f, &m, &e2), 0);
    assert_int_equal(((Firth__Error *)m)->code, FIRTH__ERROR_CODE__UNKNOWN_API);
    assert_int_equal(fr_rpc_error_get((Firth__Error *)m, "request 5", &e2), FR_EUNSUPPORTED);
    snprintf(unknown, sizeof unknown, "request 5: unknown api key %d", FR_RPC_API_COUNT);
    assert_msg_has(e2, unknown);
    fr_rpc_free(m);
    fr_buf_free(&out);
    assert_int_equal(tm_unpack_request(-5, 0, NULL, 0, &code, &err), FR_EUNSUPPORTED);
    assert_int_equal(code, FIRTH__ERROR_CODE__UNKNOWN_API);
    assert_int_equal(tm_unpack_request(FR_RPC_PRODUCE_LOG, 1, NULL, 0, &code, &err),
                     FR_EUNSUPPORTED);
    assert_int_equal(code, FIRTH__ERROR_CODE__UNSUPPORTED_VERSION);
    assert_msg_has(err, "produce_log version 1 is not supported (this server speaks 0..0)");
    assert_int_equal(tm_unpack_request(FR_RPC_PRODUCE_LOG, -1, NULL, 0, &code, &err),
                     FR_EUNSUPPORTED);
    /* api_versions is answered at any version: it is how a client learns them. */
    assert_int_equal(tm_unpack_request(FR_RPC_API_VERSIONS, 9, NULL, 0, &code, &err), 0);
    assert_int_equal(tm_unpack_request(FR_RPC_API_VERSIONS, -1, NULL, 0, &code, &err),
                     FR_EUNSUPPORTED);
    /* An empty body is a valid message of every type; list_databases needs nothing else. */
    assert_int_equal(tm_unpack_request(FR_RPC_LIST_DATABASES, 0, NULL, 0, &code, &err), 0);
    assert_int_equal(code, FIRTH__ERROR_CODE__NONE);
}

static void test_malformed_bodies(void **state)
{
    (void)state;
    static const struct {
        const char *bytes;
        size_t len;
    } bad[] = {
        { "\x0a\x05" "ab", 4 },                                  /* field 1 runs past the end */
        { "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 11 }, /* an 11-byte key */
        { "\x0f", 1 },                                           /* wire type 7 */
        { "\x08\x80", 2 },                                       /* a varint cut short */
        { "\x0a\xff\xff\xff\xff\x0f", 6 },                       /* a length of 4 GiB */
        { "\x0d\x01\x02", 3 },                                   /* a fixed32 cut short */
    };
    for (int api = 0; api < FR_RPC_API_COUNT; api++) {
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            fr_error err;
            Firth__ErrorCode code;
            int rc = tm_unpack_request(api, 0, (const uint8_t *)bad[i].bytes, bad[i].len, &code,
                                       &err);
            if (rc != FR_ECORRUPT)
                fail_msg("%s, input %zu: %d (%s)", fr_rpc_api_name(api), i, rc, err.msg);
            assert_int_equal(code, FIRTH__ERROR_CODE__CORRUPT);
            char want[64];
            snprintf(want, sizeof want, "%s request: malformed protobuf body of %zu bytes",
                     fr_rpc_api_name(api), bad[i].len);
            assert_msg_has(err, want);
        }
    }
    /* Field number 0, which protobuf-c keeps when its tag takes two bytes (found by fuzzing):
     * at the top and inside a bucket of a produce request. */
    {
        fr_error e2;
        Firth__ErrorCode c2;
        assert_int_equal(tm_unpack_request(FR_RPC_METADATA, 0, (const uint8_t *)"\x82\x00\x00", 3,
                                           &c2, &e2),
                         FR_ECORRUPT);
        assert_msg_has(e2, "metadata request: malformed protobuf body of 3 bytes (a field numbered 0)");
        assert_int_equal(tm_unpack_request(FR_RPC_PRODUCE_LOG, 0,
                                           (const uint8_t *)"\x22\x03\x82\x00\x00", 5, &c2, &e2),
                         FR_ECORRUPT);
        /* Other unknown fields are kept and ignored: a newer client's fields. */
        assert_int_equal(tm_unpack_request(FR_RPC_LIST_DATABASES, 0,
                                           (const uint8_t *)"\xf8\x07\x01\x82\x01\x00", 6, &c2,
                                           &e2),
                         0);
    }
    /* A known field with the wrong wire type: produce_log's buckets (4) as a varint. */
    fr_error err;
    Firth__ErrorCode code;
    assert_int_equal(tm_unpack_request(FR_RPC_PRODUCE_LOG, 0, (const uint8_t *)"\x20\x01", 2,
                                       &code, &err),
                     FR_ECORRUPT);
    /* Every proper prefix of a good produce request either fails or is a valid message. */
    fr_buf b = tm_pack(tm_request(FR_RPC_PRODUCE_LOG));
    int failed = 0;
    for (size_t n = 0; n < b.len; n++) {
        ProtobufCMessage *m = NULL;
        int rc = fr_rpc_unpack(&firth__produce_log_request__descriptor, "produce_log request",
                               b.data, n, &m, &err);
        assert_true(rc == 0 || rc == FR_ECORRUPT);
        failed += rc != 0;
        fr_rpc_free(m);
    }
    assert_true(failed > 0);
    fr_buf_free(&b);
    /* A response body that does not parse. */
    fr_rpc_frame f = { .direction = FR_RPC_RESPONSE,
                       .result = FR_RPC_ERROR,
                       .request_id = 3,
                       .body = (const uint8_t *)"\x12\x09x",
                       .body_len = 3 };
    ProtobufCMessage *m;
    assert_int_equal(fr_rpc_response_unpack(FR_RPC_METADATA, &f, &m, &err), FR_ECORRUPT);
    assert_msg_has(err, "metadata response: malformed protobuf");
}

/* Checks m (a sample the caller changed) and expects code and a message part. */
static void tm_expect_msg(fr_rpc_api api, const ProtobufCMessage *m, int code, const char *part)
{
    fr_error err;
    int rc = fr_rpc_request_check(api, m, &err);
    if (rc != code) fail_msg("%s: %d, not %d (%s)", fr_rpc_api_name(api), rc, code, err.msg);
    assert_msg_has(err, part);
}

/* A fresh sample request of api as type T, in variable v. */
#define TM_SAMPLE(T, v, api) T *v = (T *)tm_request(api)
#define tm_expect(api, v, code, part) tm_expect_msg((api), &(v)->base, (code), (part))

static void test_request_checks_tables(void **state)
{
    (void)state;
    {
        TM_SAMPLE(Firth__CreateDatabaseRequest, m, FR_RPC_CREATE_DATABASE);
        m->database = "";
        tm_expect(FR_RPC_CREATE_DATABASE, m, FR_EINVAL,
                  "create_database request: database is missing");
        char longname[257];
        memset(longname, 'a', 256);
        longname[256] = 0;
        m->database = longname;
        tm_expect(FR_RPC_CREATE_DATABASE, m, FR_EINVAL,
                  "database of 256 bytes is longer than 255 bytes");
        longname[255] = 0;
        assert_int_equal(fr_rpc_request_check(FR_RPC_CREATE_DATABASE, &m->base, NULL), 0);
    }
    {
        TM_SAMPLE(Firth__MetadataRequest, m, FR_RPC_METADATA);
        tm_path2.table = "";
        tm_expect(FR_RPC_METADATA, m, FR_EINVAL, "metadata request: tables[1]: table is missing");
    }
    {
        TM_SAMPLE(Firth__CreateTableRequest, m, FR_RPC_CREATE_TABLE);
        m->options[1]->key = NULL;
        tm_expect(FR_RPC_CREATE_TABLE, m, FR_EINVAL,
                  "create_table request: options[1]: key is missing");
    }
    {
        TM_SAMPLE(Firth__CreateTableRequest, m, FR_RPC_CREATE_TABLE);
        m->schema_json = NULL;
        tm_expect(FR_RPC_CREATE_TABLE, m, FR_EINVAL, "create_table request: schema_json is missing");
    }
    {
        TM_SAMPLE(Firth__CreateTableRequest, m, FR_RPC_CREATE_TABLE);
        m->primary_key[1] = "";
        tm_expect(FR_RPC_CREATE_TABLE, m, FR_EINVAL, "primary_key[1]: name is missing");
    }
    {
        TM_SAMPLE(Firth__CreateTableRequest, m, FR_RPC_CREATE_TABLE);
        m->path = NULL;
        tm_expect(FR_RPC_CREATE_TABLE, m, FR_EINVAL, "the table path is missing");
    }
    {
        TM_SAMPLE(Firth__ListOffsetsRequest, m, FR_RPC_LIST_OFFSETS);
        m->spec = 7;
        tm_expect(FR_RPC_LIST_OFFSETS, m, FR_EINVAL, "offset spec 7 is not");
    }
    {
        TM_SAMPLE(Firth__ListOffsetsRequest, m, FR_RPC_LIST_OFFSETS);
        m->timestamp_ms = -1;
        tm_expect(FR_RPC_LIST_OFFSETS, m, FR_EINVAL, "timestamp -1 is negative");
        m->spec = FIRTH__OFFSET_SPEC__OFFSET_LATEST; /* the timestamp is not looked at then */
        assert_int_equal(fr_rpc_request_check(FR_RPC_LIST_OFFSETS, &m->base, NULL), 0);
    }
    {
        TM_SAMPLE(Firth__ListOffsetsRequest, m, FR_RPC_LIST_OFFSETS);
        m->table_id = -3;
        tm_expect(FR_RPC_LIST_OFFSETS, m, FR_EINVAL, "table id -3 is negative");
    }
    {
        TM_SAMPLE(Firth__ExecuteSqlRequest, m, FR_RPC_EXECUTE_SQL);
        m->sql = "";
        tm_expect(FR_RPC_EXECUTE_SQL, m, FR_EINVAL, "execute_sql request: sql is missing");
    }
    {
        TM_SAMPLE(Firth__AuthenticateRequest, m, FR_RPC_AUTHENTICATE);
        m->auth_bytes.len = FR_RPC_AUTH_BYTES_MAX + 1;
        tm_expect(FR_RPC_AUTHENTICATE, m, FR_ELIMIT, "auth_bytes of 65537 bytes");
    }
    {
        TM_SAMPLE(Firth__LakeSnapshotRequest, m, FR_RPC_LAKE_SNAPSHOT);
        m->path = NULL;
        tm_expect(FR_RPC_LAKE_SNAPSHOT, m, FR_EINVAL,
                  "lake_snapshot request: the table path is missing");
    }
    {
        TM_SAMPLE(Firth__LakeSnapshotRequest, m, FR_RPC_LAKE_SNAPSHOT);
        tm_path.database = "";
        tm_expect(FR_RPC_LAKE_SNAPSHOT, m, FR_EINVAL, "lake_snapshot request: database is missing");
    }
    {
        TM_SAMPLE(Firth__LakeSnapshotRequest, m, FR_RPC_LAKE_SNAPSHOT);
        m->table_id = -1;
        tm_expect(FR_RPC_LAKE_SNAPSHOT, m, FR_EINVAL, "table id -1 is negative");
        m->table_id = 0; /* any table of the name */
        assert_int_equal(fr_rpc_request_check(FR_RPC_LAKE_SNAPSHOT, &m->base, NULL), 0);
    }
}

static void test_request_checks_data(void **state)
{
    (void)state;
    {
        TM_SAMPLE(Firth__ProduceLogRequest, m, FR_RPC_PRODUCE_LOG);
        m->buckets[1]->partition_id = -2;
        tm_expect(FR_RPC_PRODUCE_LOG, m, FR_EINVAL,
                  "produce_log request: buckets[1]: partition id -2");
    }
    {
        TM_SAMPLE(Firth__ProduceLogRequest, m, FR_RPC_PRODUCE_LOG);
        m->buckets[1]->bucket = -1;
        tm_expect(FR_RPC_PRODUCE_LOG, m, FR_EINVAL, "buckets[1]: bucket -1 is negative");
    }
    {
        TM_SAMPLE(Firth__ProduceLogRequest, m, FR_RPC_PRODUCE_LOG);
        m->buckets[1]->records.len = 0;
        tm_expect(FR_RPC_PRODUCE_LOG, m, FR_EINVAL, "buckets[1]: records is empty");
        /* Only the length is looked at by the check: no need for 64 MiB of memory. */
        m->buckets[1]->records.len = FR_RPC_RECORDS_BYTES_MAX + 1;
        tm_expect(FR_RPC_PRODUCE_LOG, m, FR_ELIMIT,
                  "exceeds the record batch limit of 67108864 bytes");
        m->buckets[1]->records.len = FR_RPC_RECORDS_BYTES_MAX;
        assert_int_equal(fr_rpc_request_check(FR_RPC_PRODUCE_LOG, &m->base, NULL), 0);
    }
    {
        TM_SAMPLE(Firth__ProduceLogRequest, m, FR_RPC_PRODUCE_LOG);
        m->writer_id = -2;
        tm_expect(FR_RPC_PRODUCE_LOG, m, FR_EINVAL, "writer id -2");
    }
    {
        TM_SAMPLE(Firth__ProduceLogRequest, m, FR_RPC_PRODUCE_LOG);
        m->n_buckets = 0;
        tm_expect(FR_RPC_PRODUCE_LOG, m, FR_EINVAL, "produce_log request: buckets is empty");
    }
    {
        TM_SAMPLE(Firth__PutKvRequest, m, FR_RPC_PUT_KV);
        m->target_columns[1] = FR_RPC_COLUMNS_MAX;
        tm_expect(FR_RPC_PUT_KV, m, FR_EINVAL, "target_columns[1] = 4096 is not a column index");
    }
    {
        TM_SAMPLE(Firth__PutKvRequest, m, FR_RPC_PUT_KV);
        m->buckets[0]->records.len = 0;
        tm_expect(FR_RPC_PUT_KV, m, FR_EINVAL, "put_kv request: buckets[0]: records is empty");
    }
    {
        TM_SAMPLE(Firth__FetchLogRequest, m, FR_RPC_FETCH_LOG);
        m->max_wait_ms = FR_RPC_WAIT_MS_MAX + 1;
        tm_expect(FR_RPC_FETCH_LOG, m, FR_EINVAL, "max_wait_ms 600001 is outside 0..600000");
    }
    {
        TM_SAMPLE(Firth__FetchLogRequest, m, FR_RPC_FETCH_LOG);
        m->min_bytes = -1;
        tm_expect(FR_RPC_FETCH_LOG, m, FR_EINVAL, "min_bytes -1 is negative");
    }
    {
        TM_SAMPLE(Firth__FetchLogRequest, m, FR_RPC_FETCH_LOG);
        m->tables[0]->buckets[1]->fetch_offset = -5;
        tm_expect(FR_RPC_FETCH_LOG, m, FR_EINVAL,
                  "fetch_log request: tables[0]: buckets[1]: fetch offset -5 is negative");
    }
    {
        TM_SAMPLE(Firth__FetchLogRequest, m, FR_RPC_FETCH_LOG);
        m->tables[0]->projection[0] = -1;
        tm_expect(FR_RPC_FETCH_LOG, m, FR_EINVAL, "tables[0]: projection[0] = -1");
    }
    {
        TM_SAMPLE(Firth__FetchLogRequest, m, FR_RPC_FETCH_LOG);
        m->n_tables = 0;
        tm_expect(FR_RPC_FETCH_LOG, m, FR_EINVAL, "fetch_log request: tables is empty");
    }
    {
        /* 40,000 buckets in each of two tables: each table is fine, the request is not. */
        TM_SAMPLE(Firth__FetchLogRequest, m, FR_RPC_FETCH_LOG);
        Firth__FetchBucket **many = calloc(40000, sizeof *many);
        for (int i = 0; i < 40000; i++) many[i] = m->tables[0]->buckets[0];
        Firth__FetchTable t2 = *m->tables[0];
        t2.n_buckets = 40000;
        t2.buckets = many;
        Firth__FetchTable *ts[2] = { &t2, &t2 };
        m->tables = ts;
        m->n_tables = 2;
        tm_expect(FR_RPC_FETCH_LOG, m, FR_ELIMIT,
                  "80000 buckets in all tables exceed the limit of 65536");
        m->n_tables = 1;
        assert_int_equal(fr_rpc_request_check(FR_RPC_FETCH_LOG, &m->base, NULL), 0);
        free(many);
    }
    {
        TM_SAMPLE(Firth__LookupRequest, m, FR_RPC_LOOKUP);
        m->buckets[0]->keys.len = 0;
        tm_expect(FR_RPC_LOOKUP, m, FR_EINVAL, "lookup request: buckets[0]: keys is empty");
    }
    {
        TM_SAMPLE(Firth__PrefixLookupRequest, m, FR_RPC_PREFIX_LOOKUP);
        m->buckets[0]->bucket = -7;
        tm_expect(FR_RPC_PREFIX_LOOKUP, m, FR_EINVAL,
                  "prefix_lookup request: buckets[0]: bucket -7");
    }
    /* The samples are whole again for the tests after this one. */
    for (int api = 0; api < FR_RPC_API_COUNT; api++)
        assert_int_equal(fr_rpc_request_check((fr_rpc_api)api, tm_request(api), NULL), 0);
}

static void test_request_check_on_the_wire(void **state)
{
    (void)state;
    /* A produce request whose bucket is negative arrives and is answered INVALID. */
    Firth__ProduceLogRequest m = FIRTH__PRODUCE_LOG_REQUEST__INIT;
    Firth__ProduceBucket b = FIRTH__PRODUCE_BUCKET__INIT;
    Firth__ProduceBucket *bs[1] = { &b };
    b.partition_id = -1;
    b.bucket = -4;
    b.records = tm_bytes();
    m.path = &tm_path;
    m.writer_id = -1;
    m.n_buckets = 1;
    m.buckets = bs;
    fr_buf body = tm_pack(&m.base);
    fr_error err;
    Firth__ErrorCode code;
    assert_int_equal(tm_unpack_request(FR_RPC_PRODUCE_LOG, 0, body.data, body.len, &code, &err),
                     FR_EINVAL);
    assert_int_equal(code, FIRTH__ERROR_CODE__INVALID);
    assert_msg_has(err, "produce_log request: buckets[0]: bucket -4 is negative");
    fr_buf_free(&body);
}

static void test_unpack_memory_budget(void **state)
{
    (void)state;
    /* 2 bytes on the wire per empty FetchTable, ~80 bytes each in memory: over 8x. */
    size_t n = 1 << 20;
    uint8_t *body = malloc(n);
    for (size_t i = 0; i < n; i += 2) {
        body[i] = 0x0a;
        body[i + 1] = 0;
    }
    fr_error err;
    Firth__ErrorCode code;
    assert_int_equal(tm_unpack_request(FR_RPC_FETCH_LOG, 0, body, n, &code, &err), FR_ELIMIT);
    assert_int_equal(code, FIRTH__ERROR_CODE__LIMIT_EXCEEDED);
    assert_msg_has(err, "fetch_log request: unpacking 1048576 bytes needs more than 9437184 bytes");
    /* A few of them fit the budget, and fail the checks instead (no table path). */
    assert_int_equal(tm_unpack_request(FR_RPC_FETCH_LOG, 0, body, 200, &code, &err), FR_EINVAL);
    assert_msg_has(err, "tables[0]: the table path is missing");
    free(body);
}

static void test_unpack_alloc_failures(void **state)
{
    (void)state;
    fr_buf b = tm_pack(tm_request(FR_RPC_FETCH_LOG));
    int nomem = 0, ok = 0;
    for (long k = 1; k < 60; k++) {
        fr_error err;
        ProtobufCMessage *m = NULL;
        fr_alloc_fail_after(k);
        int rc = fr_rpc_unpack(&firth__fetch_log_request__descriptor, "fetch_log request", b.data,
                               b.len, &m, &err);
        fr_alloc_fail_after(0);
        if (rc == FR_ENOMEM) {
            assert_null(m);
            assert_msg_has(err, "fetch_log request: out of memory");
            nomem++;
        } else {
            assert_int_equal(rc, 0);
            tm_assert_same(m, tm_request(FR_RPC_FETCH_LOG));
            ok++;
        }
        fr_rpc_free(m);
    }
    assert_true(nomem >= 5); /* the message, its table, path, buckets... */
    assert_true(ok > 0);
    fr_buf_free(&b);
}

/* ---- error codes --------------------------------------------------------------------------- */

static void test_error_codes(void **state)
{
    (void)state;
    assert_int_equal(fr_rpc_code_from_status(0), FIRTH__ERROR_CODE__NONE);
    for (int s = FR_EINVAL; s >= FR_EDUPLICATE; s--) {
        Firth__ErrorCode c = fr_rpc_code_from_status(s);
        assert_int_equal((int)c, -s);
        assert_int_equal(fr_rpc_status_from_code(c), s);
        /* The names say the same thing: EINVAL and INVALID, ENOTFOUND and NOT_FOUND. */
        assert_non_null(protobuf_c_enum_descriptor_get_value(&firth__error_code__descriptor, c));
    }
    assert_string_equal(fr_rpc_code_name(FIRTH__ERROR_CODE__INVALID), "INVALID");
    assert_string_equal(fr_rpc_code_name(FIRTH__ERROR_CODE__NOT_FOUND), "NOT_FOUND");
    assert_string_equal(fr_rpc_code_name(FIRTH__ERROR_CODE__DUPLICATE), "DUPLICATE");
    assert_string_equal(fr_rpc_code_name(FIRTH__ERROR_CODE__UNKNOWN_API), "UNKNOWN_API");
    assert_string_equal(fr_rpc_code_name(55), "UNKNOWN_ERROR");
    assert_int_equal(fr_rpc_code_from_status(-99), FIRTH__ERROR_CODE__UNKNOWN_ERROR);
    assert_int_equal(fr_rpc_status_from_code(FIRTH__ERROR_CODE__UNKNOWN_ERROR), FR_EIO);
    assert_int_equal(fr_rpc_status_from_code(FIRTH__ERROR_CODE__UNKNOWN_API), FR_EUNSUPPORTED);
    assert_int_equal(fr_rpc_status_from_code(FIRTH__ERROR_CODE__UNSUPPORTED_VERSION),
                     FR_EUNSUPPORTED);
    assert_int_equal(fr_rpc_status_from_code(FIRTH__ERROR_CODE__NOT_AUTHENTICATED), FR_ESTATE);
    assert_int_equal(fr_rpc_status_from_code(FIRTH__ERROR_CODE__SHUTTING_DOWN), FR_ESTATE);
    assert_int_equal(fr_rpc_status_from_code(FIRTH__ERROR_CODE__AUTHENTICATION_FAILED),
                     FR_EINVAL);
    assert_int_equal(fr_rpc_status_from_code(12345), FR_EIO);
    assert_int_equal(fr_rpc_status_from_code(-3), FR_EIO);
    assert_int_equal(fr_rpc_status_from_code(0), 0);
}

static void test_error_messages(void **state)
{
    (void)state;
    fr_error failure, err;
    Firth__Error e = FIRTH__ERROR__INIT;
    fr_fail(&failure, FR_ESYNTAX, "line 3, column 14: unknown column 'x'");
    fr_rpc_error_set(&e, &failure);
    assert_int_equal(e.code, FIRTH__ERROR_CODE__SYNTAX_ERROR);
    assert_int_equal(e.line, 3);
    assert_int_equal(e.column, 14);
    assert_string_equal(e.message, "line 3, column 14: unknown column 'x'");
    /* Context in front of the position is fine; a malformed position is not one. */
    const struct {
        const char *msg;
        int line, column;
    } cases[] = {
        { "statement 2: line 12, column 5: bad", 12, 5 },
        { "pipeline 3, line x, column 5: no; line 1, column 2: yes", 1, 2 },
        { "line 2, column 3 without a colon", 0, 0 },
        { "line 0, column 3: zero", 0, 0 },
        { "line 99999999999, column 3: too big", 0, 0 },
        { "deadline 2, column 4: close", 2, 4 },
        { "no position here", 0, 0 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        firth__error__init(&e);
        fr_fail(&failure, FR_EINVAL, "%s", cases[i].msg);
        fr_rpc_error_set(&e, &failure);
        if (e.line != cases[i].line || e.column != cases[i].column)
            fail_msg("\"%s\": %d, %d", cases[i].msg, e.line, e.column);
    }
    /* A failure without a negative code still goes out as an error. */
    failure.code = 0;
    fr_rpc_error_set(&e, &failure);
    assert_int_equal(e.code, FIRTH__ERROR_CODE__IO_ERROR);

    /* And back: the status of the code, the message after what. */
    firth__error__init(&e);
    e.code = FIRTH__ERROR_CODE__NOT_FOUND;
    e.message = "table sales.t does not exist";
    assert_int_equal(fr_rpc_error_get(&e, "drop_table", &err), FR_ENOTFOUND);
    assert_string_equal(err.msg, "drop_table: table sales.t does not exist");
    e.message = "";
    assert_int_equal(fr_rpc_error_get(&e, "drop_table", &err), FR_ENOTFOUND);
    assert_string_equal(err.msg, "drop_table: NOT_FOUND");
    e.code = FIRTH__ERROR_CODE__NONE;
    e.message = "odd";
    assert_int_equal(fr_rpc_error_get(&e, "x", &err), FR_EIO);
    assert_msg_has(err, "an error without a code");
}

/* ---- the worked example of docs/PROTOCOL.md, section 11 ---------------------------------- */

static void tm_assert_bytes(fr_buf *b, const char *hex)
{
    uint8_t want[256];
    size_t n = 0;
    for (const char *p = hex; *p;) {
        if (*p == ' ') {
            p++;
            continue;
        }
        unsigned v;
        assert_int_equal(sscanf(p, "%2x", &v), 1);
        want[n++] = (uint8_t)v;
        p += 2;
    }
    assert_int_equal(b->len, n);
    assert_memory_equal(b->data, want, n);
    fr_buf_reset(b);
}

static void test_worked_example(void **state)
{
    (void)state;
    fr_error err, failure;
    fr_buf b;
    fr_buf_init(&b);
    Firth__ListTablesRequest rq = FIRTH__LIST_TABLES_REQUEST__INIT;
    rq.database = "sales";
    assert_int_equal(fr_rpc_write_request(&b, FR_RPC_LIST_TABLES, 0, 7, &rq.base,
                                          FR_RPC_FRAME_BYTES_MAX_DEFAULT, &err),
                     0);
    tm_assert_bytes(&b, "00 00 00 0f 00 07 00 00 00 00 00 07 0a 05 73 61 6c 65 73");
    Firth__ListTablesResponse rs = FIRTH__LIST_TABLES_RESPONSE__INIT;
    char *tables[2] = { "clicks", "orders" };
    rs.n_tables = 2;
    rs.tables = tables;
    assert_int_equal(fr_rpc_write_response(&b, FR_RPC_SUCCESS, 7, &rs.base,
                                           FR_RPC_FRAME_BYTES_MAX_DEFAULT, &err),
                     0);
    tm_assert_bytes(&b, "00 00 00 15 00 00 00 00 07 0a 06 63 6c 69 63 6b 73 0a 06 6f 72 64 65 72 "
                        "73");
    rq.database = "nope";
    assert_int_equal(fr_rpc_write_request(&b, FR_RPC_LIST_TABLES, 0, 8, &rq.base,
                                          FR_RPC_FRAME_BYTES_MAX_DEFAULT, &err),
                     0);
    tm_assert_bytes(&b, "00 00 00 0e 00 07 00 00 00 00 00 08 0a 04 6e 6f 70 65");
    fr_fail(&failure, FR_ENOTFOUND, "database nope does not exist");
    assert_int_equal(fr_rpc_write_error(&b, 8, FIRTH__ERROR_CODE__NONE, &failure, &err), 0);
    tm_assert_bytes(&b, "00 00 00 25 01 00 00 00 08 08 06 12 1c 64 61 74 61 62 61 73 65 20 6e 6f "
                        "70 65 20 64 6f 65 73 20 6e 6f 74 20 65 78 69 73 74");
    Firth__ExecuteSqlRequest sq = FIRTH__EXECUTE_SQL_REQUEST__INIT;
    sq.sql = "SELEC 1";
    assert_int_equal(fr_rpc_write_request(&b, FR_RPC_EXECUTE_SQL, 0, 9, &sq.base,
                                          FR_RPC_FRAME_BYTES_MAX_DEFAULT, &err),
                     0);
    tm_assert_bytes(&b, "00 00 00 11 00 0f 00 00 00 00 00 09 0a 07 53 45 4c 45 43 20 31");
    fr_fail(&failure, FR_ESYNTAX, "line 1, column 1: unknown statement 'SELEC'");
    assert_int_equal(fr_rpc_write_error(&b, 9, FIRTH__ERROR_CODE__NONE, &failure, &err), 0);
    tm_assert_bytes(&b, "00 00 00 38 01 00 00 00 09 08 0b 12 2b 6c 69 6e 65 20 31 2c 20 63 6f 6c "
                        "75 6d 6e 20 31 3a 20 75 6e 6b 6e 6f 77 6e 20 73 74 61 74 65 6d 65 6e 74 "
                        "20 27 53 45 4c 45 43 27 18 01 20 01");
    fr_buf_free(&b);
}

/* ---- produce_log and put_kv without copying the records -------------------------------------- */

static uint64_t tm_rng;
static uint64_t tm_next(void)
{
    tm_rng ^= tm_rng << 13;
    tm_rng ^= tm_rng >> 7;
    tm_rng ^= tm_rng << 17;
    return tm_rng;
}

/* The seed of a randomized test (FIRTH_TEST_SEED, else the time), printed for replay; it
 * seeds tm_next, salted per test. */
static uint64_t tm_seed(const char *test, uint64_t salt)
{
    const char *env = getenv("FIRTH_TEST_SEED");
    uint64_t seed = env ? strtoull(env, NULL, 10) : (uint64_t)time(NULL);
    print_message("%s: seed %llu (set FIRTH_TEST_SEED to replay)\n", test,
                  (unsigned long long)seed);
    tm_rng = seed * 2654435761u + salt;
    return seed;
}

static char *tm_random_name(char *buf, size_t cap)
{
    size_t n = tm_next() % (cap - 1);
    for (size_t i = 0; i < n; i++) buf[i] = (char)('a' + tm_next() % 26);
    buf[n] = '\0';
    return buf;
}

/* The parts of an unpacked produce_log or put_kv request, to compare them. */
typedef struct tm_req {
    const Firth__TablePath *path;
    int64_t table_id, writer_id;
    size_t n_buckets, n_targets;
    const int32_t *targets;
    const ProtobufCMessage *const *buckets;
    bool in_order;
} tm_req;

static tm_req tm_req_of(const ProtobufCMessage *m)
{
    if (m->descriptor == &firth__produce_log_request__descriptor) {
        const Firth__ProduceLogRequest *q = (const Firth__ProduceLogRequest *)m;
        return (tm_req){q->path, q->table_id, q->writer_id, q->n_buckets, 0, NULL,
                        (const ProtobufCMessage *const *)q->buckets, q->in_order};
    }
    const Firth__PutKvRequest *q = (const Firth__PutKvRequest *)m;
    return (tm_req){q->path, q->table_id, q->writer_id, q->n_buckets, q->n_target_columns,
                    q->target_columns, (const ProtobufCMessage *const *)q->buckets, false};
}

/* A bucket entry of either request: both are partition_id, bucket, records. */
static void tm_bucket_of(const ProtobufCMessage *b, int64_t *pid, int32_t *bucket,
                         ProtobufCBinaryData *records)
{
    if (b->descriptor == &firth__produce_bucket__descriptor) {
        const Firth__ProduceBucket *x = (const Firth__ProduceBucket *)b;
        *pid = x->partition_id, *bucket = x->bucket, *records = x->records;
    } else {
        const Firth__PutKvBucket *x = (const Firth__PutKvBucket *)b;
        *pid = x->partition_id, *bucket = x->bucket, *records = x->records;
    }
}

/* Whether two unpacked requests of one kind say the same (unknown fields aside). */
static bool tm_same_request(const ProtobufCMessage *ma, const ProtobufCMessage *mb)
{
    tm_req a = tm_req_of(ma), b = tm_req_of(mb);
    if ((a.path == NULL) != (b.path == NULL)) return false;
    if (a.path) {
        const char *x[] = {a.path->database, a.path->table}, *y[] = {b.path->database, b.path->table};
        for (int i = 0; i < 2; i++)
            if (strcmp(x[i] ? x[i] : "", y[i] ? y[i] : "") != 0) return false;
    }
    if (a.table_id != b.table_id || a.writer_id != b.writer_id || a.n_buckets != b.n_buckets ||
        a.n_targets != b.n_targets || a.in_order != b.in_order)
        return false;
    if (a.n_targets && memcmp(a.targets, b.targets, a.n_targets * sizeof *a.targets) != 0)
        return false;
    for (size_t i = 0; i < a.n_buckets; i++) {
        int64_t px, py;
        int32_t bx, by;
        ProtobufCBinaryData rx, ry;
        tm_bucket_of(a.buckets[i], &px, &bx, &rx);
        tm_bucket_of(b.buckets[i], &py, &by, &ry);
        if (px != py || bx != by || rx.len != ry.len) return false;
        if (rx.len && memcmp(rx.data, ry.data, rx.len) != 0) return false;
    }
    return true;
}

/* One body unpacked both ways: what the in-place unpack (rc2) accepts protobuf-c (rc1)
 * must accept, with the same fields (same); counted in *both, or in *refused_more when
 * only protobuf-c took it. */
static void tm_in_place_verdict(uint64_t seed, int round, int rc1, int rc2, const fr_error *e1,
                                const fr_error *e2, bool same, int *both, int *refused_more)
{
    if (rc2 == 0) {
        if (rc1 != 0)
            fail_msg("seed %llu round %d: accepted what protobuf-c refuses (%s)",
                     (unsigned long long)seed, round, e1->msg);
        if (!same)
            fail_msg("seed %llu round %d: unpacked differently", (unsigned long long)seed, round);
        (*both)++;
        return;
    }
    assert_true(rc2 == FR_ECORRUPT || rc2 == FR_EINVAL || rc2 == FR_ELIMIT);
    if (rc1 == 0) {
        (*refused_more)++;
        print_message("refused what protobuf-c took: %s\n", e2->msg);
    }
}

/* Appends field 4 (target_columns) of put_kv unpacked: one varint per value, the form
 * protobuf-c takes beside the packed one it writes. */
static void tm_append_unpacked_targets(fr_buf *body, const int32_t *v, size_t n)
{
    fr_error err;
    for (size_t i = 0; i < n; i++) {
        uint8_t tmp[11] = {0x20};
        size_t k = 1;
        for (uint64_t u = (uint64_t)(int64_t)v[i];; u >>= 7) {
            tmp[k++] = (uint8_t)((u & 0x7f) | (u >= 0x80 ? 0x80 : 0));
            if (u < 0x80) break;
        }
        assert_int_equal(fr_buf_append(body, tmp, k, &err), 0);
    }
}

/* A random produce_log or put_kv request, packed (records and names in the caller's
 * buffers). */
static fr_buf tm_random_request(bool put, uint8_t (*records)[80], char *db, char *tb)
{
    Firth__ProduceBucket pb[5], *pbs[5];
    Firth__PutKvBucket kb[5], *kbs[5];
    Firth__TablePath path = FIRTH__TABLE_PATH__INIT;
    path.database = tm_random_name(db, 12);
    path.table = tm_random_name(tb, 12);
    Firth__ProduceLogRequest produce = FIRTH__PRODUCE_LOG_REQUEST__INIT;
    Firth__PutKvRequest pkv = FIRTH__PUT_KV_REQUEST__INIT;
    int32_t targets[6];
    size_t nt = put ? tm_next() % 7 : 0;
    for (size_t i = 0; i < nt; i++) targets[i] = (int32_t)(tm_next() % 8) - (tm_next() % 5 == 0);
    bool unpacked = nt && tm_next() % 2;
    size_t nb = tm_next() % 5;
    for (size_t i = 0; i < nb; i++) {
        ProtobufCBinaryData r = {tm_next() % 80, records[i]};
        for (size_t k = 0; k < r.len; k++) records[i][k] = (uint8_t)tm_next();
        int64_t pid = (int64_t)(tm_next() % 4) - 1;
        int32_t bucket = (int32_t)(tm_next() % 8);
        firth__produce_bucket__init(&pb[i]);
        firth__put_kv_bucket__init(&kb[i]);
        pb[i].partition_id = kb[i].partition_id = pid;
        pb[i].bucket = kb[i].bucket = bucket;
        pb[i].records = kb[i].records = r;
        pbs[i] = &pb[i];
        kbs[i] = &kb[i];
    }
    Firth__TablePath *pp = (tm_next() % 8) ? &path : NULL;
    int64_t table_id = (int64_t)(tm_next() % 3) - 1;
    int64_t writer_id = (tm_next() & 1) ? -1 : (int64_t)(tm_next() >> 1);
    produce.path = pkv.path = pp;
    produce.table_id = pkv.table_id = table_id;
    produce.writer_id = pkv.writer_id = writer_id;
    produce.n_buckets = pkv.n_buckets = nb;
    produce.buckets = pbs;
    pkv.buckets = kbs;
    pkv.n_target_columns = unpacked ? 0 : nt;
    pkv.target_columns = targets;
    fr_buf body = tm_pack(put ? &pkv.base : &produce.base);
    if (unpacked) tm_append_unpacked_targets(&body, targets, nt);
    return body;
}

/* fr_rpc_request_unpack_in_place against protobuf-c's unpack of the same bodies: random
 * produce_log and put_kv requests (put_kv's target columns packed or not) and random damage
 * to them. What it accepts protobuf-c accepts, with the same fields, and the records point
 * into the body. */
static void test_requests_in_place(void **state)
{
    (void)state;
    uint64_t seed = tm_seed("requests_in_place", 1);
    int both = 0, refused_more = 0;
    for (int round = 0; round < 600; round++) {
        char db[12], tb[12];
        uint8_t records[5][80];
        bool put = round % 2;
        fr_buf body = tm_random_request(put, records, db, tb);
        for (int damage = 0; damage < 40; damage++) {
            uint8_t copy[1024];
            assert_true(body.len <= sizeof copy);
            if (body.len) memcpy(copy, body.data, body.len);
            for (int k = damage == 0 || body.len == 0 ? 0 : 1 + (int)(tm_next() % 3); k > 0; k--)
                copy[tm_next() % body.len] = (uint8_t)tm_next();
            fr_rpc_frame f = {.direction = FR_RPC_REQUEST,
                              .api_key = put ? FR_RPC_PUT_KV : FR_RPC_PRODUCE_LOG,
                              .api_version = 0, .request_id = 1, .body = copy,
                              .body_len = body.len};
            ProtobufCMessage *theirs = NULL, *mine = NULL;
            fr_error e1 = {0}, e2 = {0};
            int rc1 = fr_rpc_request_unpack(&f, &theirs, NULL, &e1);
            int rc2 = fr_rpc_request_unpack_in_place(&f, &mine, NULL, &e2);
            bool same = rc1 == 0 && rc2 == 0 && tm_same_request(theirs, mine);
            tm_in_place_verdict(seed, round, rc1, rc2, &e1, &e2, same, &both, &refused_more);
            for (size_t i = 0; rc2 == 0 && i < tm_req_of(mine).n_buckets; i++) {
                int64_t pid;
                int32_t bucket;
                ProtobufCBinaryData r;
                tm_bucket_of(tm_req_of(mine).buckets[i], &pid, &bucket, &r);
                if (r.len) assert_true(r.data >= copy && r.data < copy + body.len);
            }
            if (damage == 0) assert_int_equal(rc2, rc1);
            fr_rpc_free(theirs);
            fr_rpc_request_free_in_place(mine);
        }
        fr_buf_free(&body);
    }
    print_message("requests_in_place: %d bodies unpacked alike, %d refused that protobuf-c "
                  "took\n", both, refused_more);
    assert_int_equal(refused_more, 0);
}

/* ---- fetch_log responses without copying the records ---------------------------------------- */

static bool tm_same_str(const char *a, const char *b)
{
    return strcmp(a ? a : "", b ? b : "") == 0;
}

static bool tm_same_error(const Firth__Error *a, const Firth__Error *b)
{
    if (!a || !b) return a == b;
    return a->code == b->code && tm_same_str(a->message, b->message) && a->line == b->line &&
           a->column == b->column && a->statement == b->statement;
}

/* Whether two unpacked fetch_log responses say the same (unknown fields aside). */
static bool tm_same_fetch(const Firth__FetchLogResponse *a, const Firth__FetchLogResponse *b)
{
    if (a->n_tables != b->n_tables) return false;
    for (size_t i = 0; i < a->n_tables; i++) {
        const Firth__FetchTableResult *x = a->tables[i], *y = b->tables[i];
        if ((x->path == NULL) != (y->path == NULL) || !tm_same_error(x->error, y->error) ||
            x->n_buckets != y->n_buckets)
            return false;
        if (x->path && (!tm_same_str(x->path->database, y->path->database) ||
                        !tm_same_str(x->path->table, y->path->table)))
            return false;
        for (size_t k = 0; k < x->n_buckets; k++) {
            const Firth__FetchBucketResult *u = x->buckets[k], *v = y->buckets[k];
            if (u->partition_id != v->partition_id || u->bucket != v->bucket ||
                !tm_same_error(u->error, v->error) || u->high_watermark != v->high_watermark ||
                u->log_start_offset != v->log_start_offset || u->next_offset != v->next_offset ||
                u->records.len != v->records.len)
                return false;
            if (u->records.len && memcmp(u->records.data, v->records.data, u->records.len) != 0)
                return false;
        }
    }
    return true;
}

/* A random fetch_log response of up to 3 tables of up to 4 buckets, in caller storage. */
typedef struct tm_fetch {
    Firth__FetchLogResponse m;
    Firth__FetchTableResult t[3], *tp[3];
    Firth__TablePath path[3];
    Firth__Error err[3][5];
    Firth__FetchBucketResult b[3][4], *bp[3][4];
    char names[3][2][12], msg[3][5][16];
    uint8_t records[3][4][80];
} tm_fetch;

static Firth__Error *tm_random_error(Firth__Error *e, char *msg, size_t cap)
{
    if (tm_next() % 3) return NULL;
    firth__error__init(e);
    e->code = (Firth__ErrorCode)(tm_next() % 12);
    e->message = tm_random_name(msg, cap);
    e->line = (int32_t)(tm_next() % 5);
    e->column = (int32_t)(tm_next() % 5) - 1;
    e->statement = (int32_t)(tm_next() % 3);
    return e;
}

static void tm_random_fetch(tm_fetch *f)
{
    firth__fetch_log_response__init(&f->m);
    f->m.n_tables = tm_next() % 4;
    f->m.tables = f->tp;
    for (size_t i = 0; i < f->m.n_tables; i++) {
        Firth__FetchTableResult *t = &f->t[i];
        firth__fetch_table_result__init(t);
        f->tp[i] = t;
        firth__table_path__init(&f->path[i]);
        f->path[i].database = tm_random_name(f->names[i][0], sizeof f->names[i][0]);
        f->path[i].table = tm_random_name(f->names[i][1], sizeof f->names[i][1]);
        t->path = (tm_next() % 6) ? &f->path[i] : NULL;
        t->error = tm_random_error(&f->err[i][4], f->msg[i][4], sizeof f->msg[i][4]);
        t->n_buckets = tm_next() % 5;
        t->buckets = f->bp[i];
        for (size_t k = 0; k < t->n_buckets; k++) {
            Firth__FetchBucketResult *b = &f->b[i][k];
            firth__fetch_bucket_result__init(b);
            f->bp[i][k] = b;
            b->partition_id = (int64_t)(tm_next() % 4) - 1;
            b->bucket = (int32_t)(tm_next() % 8);
            b->error = tm_random_error(&f->err[i][k], f->msg[i][k], sizeof f->msg[i][k]);
            b->high_watermark = (int64_t)(tm_next() >> 2);
            b->log_start_offset = (int64_t)(tm_next() % 100);
            b->next_offset = (int64_t)(tm_next() % 1000);
            b->records.len = tm_next() % sizeof f->records[i][k];
            for (size_t j = 0; j < b->records.len; j++) f->records[i][k][j] = (uint8_t)tm_next();
            b->records.data = f->records[i][k];
        }
    }
}

/* A copy of body in a block of body->len + extra bytes (NULL for an empty body), with one
 * to three random bytes changed unless damage is 0, and a SUCCESS response frame of it. */
static uint8_t *tm_damaged_copy(const fr_buf *body, int damage, size_t extra, fr_rpc_frame *f)
{
    uint8_t *block = body->len ? fr_malloc(body->len + extra) : NULL;
    assert_true(body->len == 0 || block);
    if (body->len) memcpy(block, body->data, body->len);
    for (int k = damage == 0 || body->len == 0 ? 0 : 1 + (int)(tm_next() % 3); k > 0; k--)
        block[tm_next() % body->len] = (uint8_t)tm_next();
    *f = (fr_rpc_frame){.direction = FR_RPC_RESPONSE, .result = FR_RPC_SUCCESS,
                        .request_id = 1, .body = block, .body_len = body->len};
    return block;
}

/* fr_rpc_fetch_unpack against protobuf-c's unpack of the same bodies: random responses and
 * random damage to them. What it accepts protobuf-c accepts, with the same fields; the
 * records point into the frame's block, which fr_rpc_free frees with the message. */
static void test_fetch_in_place(void **state)
{
    (void)state;
    uint64_t seed = tm_seed("fetch_in_place", 7);
    int both = 0, refused_more = 0;
    tm_fetch *rf = fr_malloc(sizeof *rf);
    assert_non_null(rf);
    for (int round = 0; round < 300; round++) {
        tm_random_fetch(rf);
        fr_buf body = tm_pack(&rf->m.base);
        for (int damage = 0; damage < 40; damage++) {
            fr_rpc_frame f;
            uint8_t *block = tm_damaged_copy(&body, damage, 0, &f);
            ProtobufCMessage *theirs = NULL;
            Firth__FetchLogResponse *mine = NULL;
            fr_error e1 = {0}, e2 = {0};
            int rc1 = fr_rpc_response_unpack(FR_RPC_FETCH_LOG, &f, &theirs, &e1);
            int rc2 = fr_rpc_fetch_unpack(&f, block, body.len, &mine, &e2); /* takes the block */
            bool same = rc1 == 0 && rc2 == 0 && tm_same_fetch((Firth__FetchLogResponse *)theirs, mine);
            tm_in_place_verdict(seed, round, rc1, rc2, &e1, &e2, same, &both, &refused_more);
            if (rc2 != 0) assert_null(mine);
            for (size_t i = 0; rc2 == 0 && i < mine->n_tables; i++)
                for (size_t k = 0; k < mine->tables[i]->n_buckets; k++) {
                    const ProtobufCBinaryData *r = &mine->tables[i]->buckets[k]->records;
                    if (r->len) assert_true(r->data >= block && r->data + r->len <= block + body.len);
                }
            if (damage == 0) {
                assert_int_equal(rc2, 0);
                assert_int_equal(rc1, 0);
            }
            fr_rpc_free(theirs);
            fr_rpc_free(mine ? &mine->base : NULL);
        }
        fr_buf_free(&body);
    }
    fr_free(rf);
    print_message("fetch_in_place: %d bodies unpacked alike, %d refused that protobuf-c took\n",
                  both, refused_more);
    assert_int_equal(refused_more, 0);
}

/* ---- lookup responses without copying the rows ------------------------------------------- */

/* A random lookup response of up to 4 buckets with up to 9 found flags each, some of them
 * written one varint per flag (as protobuf-c also reads them) with values other than 1. */
typedef struct tm_lookup {
    Firth__LookupResponse m;
    Firth__LookupBucketResult b[4], *bp[4];
    Firth__Error err[4];
    protobuf_c_boolean found[4][9];
    char msg[4][16];
    uint8_t rows[4][80];
} tm_lookup;

static void tm_random_lookup(tm_lookup *l)
{
    firth__lookup_response__init(&l->m);
    l->m.n_buckets = tm_next() % 5;
    l->m.buckets = l->bp;
    for (size_t k = 0; k < l->m.n_buckets; k++) {
        Firth__LookupBucketResult *b = &l->b[k];
        firth__lookup_bucket_result__init(b);
        l->bp[k] = b;
        b->partition_id = (int64_t)(tm_next() % 4) - 1;
        b->bucket = (int32_t)(tm_next() % 8);
        b->error = tm_random_error(&l->err[k], l->msg[k], sizeof l->msg[k]);
        b->n_found = tm_next() % 10;
        b->found = l->found[k];
        for (size_t j = 0; j < b->n_found; j++)
            l->found[k][j] = (protobuf_c_boolean)(tm_next() % 2);
        b->rows.len = tm_next() % sizeof l->rows[k];
        for (size_t j = 0; j < b->rows.len; j++) l->rows[k][j] = (uint8_t)tm_next();
        b->rows.data = l->rows[k];
    }
}

static bool tm_same_lookup(const Firth__LookupResponse *a, const Firth__LookupResponse *b)
{
    if (a->n_buckets != b->n_buckets) return false;
    for (size_t k = 0; k < a->n_buckets; k++) {
        const Firth__LookupBucketResult *u = a->buckets[k], *v = b->buckets[k];
        if (u->partition_id != v->partition_id || u->bucket != v->bucket ||
            !tm_same_error(u->error, v->error) || u->n_found != v->n_found ||
            u->rows.len != v->rows.len)
            return false;
        for (size_t j = 0; j < u->n_found; j++)
            if ((u->found[j] != 0) != (v->found[j] != 0)) return false;
        if (u->rows.len && memcmp(u->rows.data, v->rows.data, u->rows.len) != 0) return false;
    }
    return true;
}

/* A bucket result (field 1 of the response) whose found flags are written unpacked: field
 * 4, one varint per flag, 1 or a larger true value. */
static void tm_append_unpacked_found(fr_buf *body)
{
    static const uint8_t bucket[] = {0x0a, 9,    0x10, 3,    0x20, 0x01, 0x20, 0x00,
                                     0x20, 0x80, 0x01};
    fr_error err;
    assert_int_equal(fr_buf_append(body, bucket, sizeof bucket, &err), 0);
}

/* fr_rpc_lookup_unpack against protobuf-c's unpack of the same bodies, as for fetch_log;
 * fr_rpc_kept_take hands the block back with the capacity it was given. */
static void test_lookup_in_place(void **state)
{
    (void)state;
    uint64_t seed = tm_seed("lookup_in_place", 11);
    int both = 0, refused_more = 0;
    tm_lookup *rl = fr_malloc(sizeof *rl);
    assert_non_null(rl);
    for (int round = 0; round < 300; round++) {
        tm_random_lookup(rl);
        fr_buf body = tm_pack(&rl->m.base);
        if (round % 5 == 0) tm_append_unpacked_found(&body);
        for (int damage = 0; damage < 40; damage++) {
            fr_rpc_frame f;
            uint8_t *block = tm_damaged_copy(&body, damage, 16, &f);
            ProtobufCMessage *theirs = NULL;
            Firth__LookupResponse *mine = NULL;
            fr_error e1 = {0}, e2 = {0};
            int rc1 = fr_rpc_response_unpack(FR_RPC_LOOKUP, &f, &theirs, &e1);
            int rc2 = fr_rpc_lookup_unpack(&f, block, body.len ? body.len + 16 : 0, &mine, &e2);
            bool same = rc1 == 0 && rc2 == 0 &&
                        tm_same_lookup((Firth__LookupResponse *)theirs, mine);
            tm_in_place_verdict(seed, round, rc1, rc2, &e1, &e2, same, &both, &refused_more);
            if (rc2 != 0) assert_null(mine);
            for (size_t k = 0; rc2 == 0 && k < mine->n_buckets; k++) {
                const ProtobufCBinaryData *r = &mine->buckets[k]->rows;
                if (r->len) assert_true(r->data >= block && r->data + r->len <= block + body.len);
            }
            if (damage == 0) {
                assert_int_equal(rc2, 0);
                assert_int_equal(rc1, 0);
            }
            if (rc2 == 0 && damage % 2) { /* the block back, the rows gone with it */
                size_t cap = 0;
                uint8_t *back = fr_rpc_kept_take(&mine->base, &cap);
                assert_ptr_equal(back, block);
                assert_int_equal(cap, block ? body.len + 16 : 0);
                for (size_t k = 0; k < mine->n_buckets; k++)
                    assert_int_equal(mine->buckets[k]->rows.len, 0);
                fr_free(back);
            }
            fr_rpc_free(theirs);
            fr_rpc_free(mine ? &mine->base : NULL);
        }
        fr_buf_free(&body);
    }
    fr_free(rl);
    print_message("lookup_in_place: %d bodies unpacked alike, %d refused that protobuf-c took\n",
                  both, refused_more);
    assert_int_equal(refused_more, 0);
}

/* A body of 300,000 empty repeated elements (2 bytes each on the wire, a struct of tens of
 * bytes in memory) is over the unpack's memory budget for both in-place unpackers, as for
 * protobuf-c: FR_ELIMIT, nothing allocated past the budget. */
static void test_in_place_memory_budget(void **state)
{
    (void)state;
    const size_t n = 300000;
    /* field 4 of produce_log, 5 of put_kv (buckets), 1 of fetch_log (tables); length 0 */
    static const uint8_t keys[3] = {0x22, 0x2a, 0x0a};
    static const fr_rpc_api apis[3] = {FR_RPC_PRODUCE_LOG, FR_RPC_PUT_KV, FR_RPC_FETCH_LOG};
    for (int kind = 0; kind < 3; kind++) {
        bool fetch = apis[kind] == FR_RPC_FETCH_LOG;
        uint8_t *body = fr_malloc(2 * n);
        assert_non_null(body);
        for (size_t i = 0; i < n; i++) {
            body[2 * i] = keys[kind];
            body[2 * i + 1] = 0;
        }
        fr_rpc_frame f = {.direction = fetch ? FR_RPC_RESPONSE : FR_RPC_REQUEST,
                          .api_key = apis[kind], .result = FR_RPC_SUCCESS, .request_id = 1,
                          .body = body, .body_len = 2 * n};
        ProtobufCMessage *theirs = NULL;
        fr_error e1 = {0}, e2 = {0};
        int rc1 = fetch ? fr_rpc_response_unpack(FR_RPC_FETCH_LOG, &f, &theirs, &e1)
                        : fr_rpc_request_unpack(&f, &theirs, NULL, &e1);
        assert_int_equal(rc1, FR_ELIMIT);
        int rc2;
        if (fetch) {
            Firth__FetchLogResponse *mine = NULL;
            rc2 = fr_rpc_fetch_unpack(&f, body, 2 * n, &mine, &e2); /* takes the body */
            assert_null(mine);
        } else {
            ProtobufCMessage *mine = NULL;
            rc2 = fr_rpc_request_unpack_in_place(&f, &mine, NULL, &e2);
            assert_null(mine);
            fr_free(body);
        }
        assert_int_equal(rc2, FR_ELIMIT);
        assert_non_null(strstr(e2.msg, "bytes of memory"));
    }
}

/* ---- seed corpora -------------------------------------------------------------------------- */

static void tm_write_file(const char *dir, const char *name, const uint8_t *p, size_t n)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(p, 1, n, f), n);
    fclose(f);
}

/* fuzz_rpc_message: the first byte is the api (bit 7: a response), the rest the body.
 * fuzz_rpc_frame: the first byte chooses the direction and the chunking, the rest is a
 * stream of frames. */
static void test_write_seeds(void **state)
{
    (void)state;
    const char *dir = getenv("FIRTH_RPC_WRITE_SEEDS");
    if (!dir) return; /* only when asked to */
    char sub[400];
    fr_error err;
    fr_buf stream_req, stream_resp;
    fr_buf_init(&stream_req);
    fr_buf_init(&stream_resp);
    uint8_t dir_byte = 0;
    assert_int_equal(fr_buf_append(&stream_req, &dir_byte, 1, &err), 0);
    dir_byte = 0x81;
    assert_int_equal(fr_buf_append(&stream_resp, &dir_byte, 1, &err), 0);
    for (int api = 0; api < FR_RPC_API_COUNT; api++) {
        for (int resp = 0; resp < 2; resp++) {
            ProtobufCMessage *m = resp ? tm_response(api) : tm_request(api);
            fr_buf b;
            fr_buf_init(&b);
            uint8_t first = (uint8_t)(api | (resp ? 0x80 : 0));
            assert_int_equal(fr_buf_append(&b, &first, 1, &err), 0);
            assert_int_equal(fr_rpc_pack(m, &b, &err), 0);
            snprintf(sub, sizeof sub, "%s/rpc_message", dir);
            char name[64];
            snprintf(name, sizeof name, "%s_%s", fr_rpc_api_name(api), resp ? "response" : "request");
            tm_write_file(sub, name, b.data, b.len);
            fr_buf_free(&b);
            if (resp)
                assert_int_equal(fr_rpc_write_response(&stream_resp, FR_RPC_SUCCESS, api, m,
                                                       FR_RPC_FRAME_BYTES_MAX_DEFAULT, &err),
                                 0);
            else
                assert_int_equal(fr_rpc_write_request(&stream_req, api, 0, api, m,
                                                      FR_RPC_FRAME_BYTES_MAX_DEFAULT, &err),
                                 0);
        }
    }
    snprintf(sub, sizeof sub, "%s/rpc_frame", dir);
    tm_write_file(sub, "requests", stream_req.data, stream_req.len);
    tm_write_file(sub, "responses", stream_resp.data, stream_resp.len);
    /* Bad frames: a length over the limit, a negative one, a request id < 0, a PART frame
     * for an api that does not stream. */
    tm_write_file(sub, "oversized", (const uint8_t *)"\x00\x7f\xff\xff\xff\x00\x01", 7);
    tm_write_file(sub, "negative", (const uint8_t *)"\x02\xff\xff\xff\xf0\x00\x00\x00\x00", 9);
    tm_write_file(sub, "bad_request_id",
                  (const uint8_t *)"\x00\x00\x00\x00\x08\x00\x01\x00\x00\xff\xff\xff\xff", 13);
    tm_write_file(sub, "part_not_streaming",
                  (const uint8_t *)"\x81\x00\x00\x00\x05\x02\x00\x00\x00\x0c", 10);
    fr_buf_free(&stream_req);
    fr_buf_free(&stream_resp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_api_table),
        cmocka_unit_test(test_every_request),
        cmocka_unit_test(test_request_gather),
        cmocka_unit_test(test_every_response),
        cmocka_unit_test(test_write_seeds),
        cmocka_unit_test(test_unknown_api_and_version),
        cmocka_unit_test(test_malformed_bodies),
        cmocka_unit_test(test_request_checks_tables),
        cmocka_unit_test(test_request_checks_data),
        cmocka_unit_test(test_request_check_on_the_wire),
        cmocka_unit_test(test_unpack_memory_budget),
        cmocka_unit_test(test_unpack_alloc_failures),
        cmocka_unit_test(test_error_codes),
        cmocka_unit_test(test_error_messages),
        cmocka_unit_test(test_worked_example),
        cmocka_unit_test(test_requests_in_place),
        cmocka_unit_test(test_fetch_in_place),
        cmocka_unit_test(test_lookup_in_place),
        cmocka_unit_test(test_in_place_memory_budget),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
