/* test_server.c — every api of the native protocol against a real server started in-process
 * on an ephemeral loopback port, through real sockets: api versions, metadata, databases,
 * tables, table info, produce (good and bad batches, idempotent retries), fetch (offsets,
 * projection, filter pruning, errors), list offsets, put kv (upserts, deletes, partial
 * updates, rows in the wrong bucket), lookups and prefix lookups, streamed SQL (results,
 * syntax and runtime errors with their statement), authentication, lake snapshots (before
 * and after a tiering round, against the engine's own list; the table id guard; tables
 * without a lake), and HTTP /health and /metrics. */
#include "server_testkit.h"

/* ---- helpers --------------------------------------------------------------------------- */

static kit_server ks;
static kit_conn kc;

static int setup(void **state)
{
    (void)state;
    kit_server_options(&ks, "server");
    kit_server_start(&ks);
    kc = kit_connect(fr_server_address(ks.srv));
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    kit_close(&kc);
    kit_server_stop(&ks);
    return 0;
}

static char *schema_json(void)
{
    fr_schema *s = kit_schema();
    char *json = NULL;
    fr_error err = {0};
    KIT_CHECK(fr_schema_to_json(s, &json, &err), err);
    fr_schema_free(s);
    return json;
}

/* Creates db.name with kit_schema and bucket.num buckets; returns the table id. */
static int64_t create_table(const char *db, const char *name, const char *buckets)
{
    Firth__CreateTableRequest req = FIRTH__CREATE_TABLE_REQUEST__INIT;
    Firth__TablePath path = kit_path_of(db, name);
    Firth__TableOption opt = FIRTH__TABLE_OPTION__INIT;
    Firth__TableOption *opts[1] = {&opt};
    opt.key = "bucket.num";
    opt.value = (char *)buckets;
    req.path = &path;
    char *json = schema_json();
    req.schema_json = json;
    req.options = opts;
    req.n_options = 1;
    Firth__CreateTableResponse *resp =
        (Firth__CreateTableResponse *)kit_call(&kc, FR_RPC_CREATE_TABLE, &req.base);
    int64_t id = resp->table_id;
    assert_true(id > 0);
    fr_rpc_free(&resp->base);
    fr_free(json);
    return id;
}

/* One produce entry's result for a batch of rows [first, first + n) into a bucket. */
typedef struct produce_one {
    int code;
    int64_t base_offset;
    int64_t commit_ts;
} produce_one;

/* Produces several entries in one request: entry i is bytes[i] into bucket buckets[i]. */
static void produce(const char *db, const char *table, int64_t table_id, int64_t writer_id,
                    int n, const int *buckets, fr_buf *bytes, produce_one *out)
{
    Firth__ProduceLogRequest req = FIRTH__PRODUCE_LOG_REQUEST__INIT;
    Firth__TablePath path = kit_path_of(db, table);
    Firth__ProduceBucket entries[8];
    Firth__ProduceBucket *list[8];
    assert_true(n <= 8);
    for (int i = 0; i < n; i++) {
        firth__produce_bucket__init(&entries[i]);
        entries[i].partition_id = -1;
        entries[i].bucket = buckets[i];
        entries[i].records.data = bytes[i].data;
        entries[i].records.len = bytes[i].len;
        list[i] = &entries[i];
    }
    req.path = &path;
    req.table_id = table_id;
    req.writer_id = writer_id;
    req.buckets = list;
    req.n_buckets = (size_t)n;
    Firth__ProduceLogResponse *resp =
        (Firth__ProduceLogResponse *)kit_call(&kc, FR_RPC_PRODUCE_LOG, &req.base);
    assert_int_equal(resp->n_buckets, (size_t)n);
    for (int i = 0; i < n; i++) {
        Firth__ProduceBucketResult *r = resp->buckets[i];
        assert_int_equal(r->bucket, buckets[i]);
        assert_int_equal(r->partition_id, -1);
        out[i].code = r->error ? r->error->code : 0;
        out[i].base_offset = r->base_offset;
        out[i].commit_ts = r->commit_timestamp;
    }
    fr_rpc_free(&resp->base);
}

static void encode_rows(int64_t first, int64_t n, int64_t writer, int32_t seq, fr_buf *out)
{
    fr_buf_init(out);
    fr_batch *b = kit_batch(first, n);
    kit_encode(b, 0, writer, seq, NULL, out);
    fr_batch_free(b);
}

static int64_t end_offset(const char *db, const char *table, int bucket)
{
    Firth__ListOffsetsRequest req = FIRTH__LIST_OFFSETS_REQUEST__INIT;
    Firth__TablePath path = kit_path_of(db, table);
    Firth__BucketRef ref = FIRTH__BUCKET_REF__INIT;
    Firth__BucketRef *refs[1] = {&ref};
    ref.partition_id = -1;
    ref.bucket = bucket;
    req.path = &path;
    req.spec = FIRTH__OFFSET_SPEC__OFFSET_LATEST;
    req.buckets = refs;
    req.n_buckets = 1;
    Firth__ListOffsetsResponse *resp =
        (Firth__ListOffsetsResponse *)kit_call(&kc, FR_RPC_LIST_OFFSETS, &req.base);
    assert_int_equal(resp->n_buckets, 1);
    assert_null(resp->buckets[0]->error);
    int64_t off = resp->buckets[0]->offset;
    fr_rpc_free(&resp->base);
    return off;
}

/* Decodes fetched records (batches of the projected columns): the offsets and the BIGINT
 * values of column `id_col` of the projected schema, rows before `from` skipped. */
typedef struct fetched {
    int64_t offsets[4096];
    int64_t ids[4096];
    int n;
    int batches;
    bool has_change_types;
} fetched;

static void decode_records(const ProtobufCBinaryData *rec, const int *cols, int ncols,
                           int id_col, int64_t from, fetched *out)
{
    fr_schema *full = kit_schema();
    fr_schema *ps = NULL;
    fr_error err = {0};
    if (cols) KIT_CHECK(fr_schema_project(full, cols, ncols, &ps, &err), err);
    size_t pos = 0;
    while (pos < rec->len) {
        fr_rb_view v;
        KIT_CHECK(fr_rb_decode(rec->data + pos, rec->len - pos, &v, &err), err);
        if (cols) assert_int_equal(v.stats_length, 0); /* projected: statistics dropped */
        out->has_change_types |= v.change_types != NULL;
        fr_batch *b = NULL;
        size_t used = 0;
        KIT_CHECK(fr_ipc_read_batch(v.ipc, (size_t)v.ipc_length, cols ? ps : full, &b, &used,
                                    &err),
                  err);
        assert_int_equal(fr_batch_num_rows(b), v.record_count);
        for (int64_t r = 0; r < fr_batch_num_rows(b); r++) {
            int64_t off = v.base_offset + r;
            if (off < from) continue;
            fr_value val;
            fr_column_get(fr_batch_column(b, id_col), r, &val);
            assert_true(out->n < 4096);
            out->offsets[out->n] = off;
            out->ids[out->n] = val.v.i;
            out->n++;
        }
        fr_batch_free(b);
        out->batches++;
        pos += (size_t)v.length;
    }
    fr_schema_free(ps);
    fr_schema_free(full);
}

/* A fetch of one bucket; *resp is the caller's. */
static Firth__FetchLogResponse *fetch(const char *db, const char *table, int bucket,
                                      int64_t offset, const int32_t *proj, size_t nproj,
                                      const char *filter, int max_wait, int min_bytes)
{
    Firth__FetchLogRequest req = FIRTH__FETCH_LOG_REQUEST__INIT;
    Firth__FetchTable ft = FIRTH__FETCH_TABLE__INIT;
    Firth__FetchTable *fts[1] = {&ft};
    Firth__FetchBucket fb = FIRTH__FETCH_BUCKET__INIT;
    Firth__FetchBucket *fbs[1] = {&fb};
    Firth__TablePath path = kit_path_of(db, table);
    fb.partition_id = -1;
    fb.bucket = bucket;
    fb.fetch_offset = offset;
    ft.path = &path;
    ft.projection = (int32_t *)proj;
    ft.n_projection = nproj;
    ft.filter = (char *)(filter ? filter : "");
    ft.buckets = fbs;
    ft.n_buckets = 1;
    req.tables = fts;
    req.n_tables = 1;
    req.max_wait_ms = max_wait;
    req.min_bytes = min_bytes;
    return (Firth__FetchLogResponse *)kit_call(&kc, FR_RPC_FETCH_LOG, &req.base);
}

/* ---- catalog --------------------------------------------------------------------------- */

static void test_api_versions(void **state)
{
    (void)state;
    Firth__ApiVersionsRequest req = FIRTH__API_VERSIONS_REQUEST__INIT;
    req.client_software = "test_server";
    Firth__ApiVersionsResponse *r =
        (Firth__ApiVersionsResponse *)kit_call(&kc, FR_RPC_API_VERSIONS, &req.base);
    assert_int_equal(r->n_apis, FR_RPC_API_COUNT);
    for (size_t i = 0; i < r->n_apis; i++) {
        assert_int_equal(r->apis[i]->api_key, (int)i);
        assert_string_equal(r->apis[i]->name, fr_rpc_api_name((int)i));
    }
    assert_string_equal(r->server_software, "firth 0.1.0");
    assert_int_equal(r->frame_bytes_max, FR_RPC_FRAME_BYTES_MAX_DEFAULT);
    assert_int_equal(r->in_flight_max, 64);
    assert_false(r->authentication_required);
    fr_rpc_free(&r->base);
}

static void test_databases_and_tables(void **state)
{
    (void)state;
    Firth__CreateDatabaseRequest cd = FIRTH__CREATE_DATABASE_REQUEST__INIT;
    cd.database = "shop";
    fr_rpc_free(kit_call(&kc, FR_RPC_CREATE_DATABASE, &cd.base));
    Firth__Error *e = kit_call_error(&kc, FR_RPC_CREATE_DATABASE, &cd.base);
    assert_int_equal(e->code, FIRTH__ERROR_CODE__ALREADY_EXISTS);
    fr_rpc_free(&e->base);
    cd.if_not_exists = true;
    fr_rpc_free(kit_call(&kc, FR_RPC_CREATE_DATABASE, &cd.base));
    cd.database = "bad-name";
    e = kit_call_error(&kc, FR_RPC_CREATE_DATABASE, &cd.base);
    assert_int_equal(e->code, FIRTH__ERROR_CODE__INVALID);
    fr_rpc_free(&e->base);

    Firth__ListDatabasesRequest ld = FIRTH__LIST_DATABASES_REQUEST__INIT;
    Firth__ListDatabasesResponse *dbs =
        (Firth__ListDatabasesResponse *)kit_call(&kc, FR_RPC_LIST_DATABASES, &ld.base);
    assert_int_equal(dbs->n_databases, 2);
    assert_string_equal(dbs->databases[0], "default");
    assert_string_equal(dbs->databases[1], "shop");
    fr_rpc_free(&dbs->base);

    int64_t id = create_table("shop", "orders", "2");
    Firth__GetTableInfoRequest gi = FIRTH__GET_TABLE_INFO_REQUEST__INIT;
    Firth__TablePath path = kit_path_of("shop", "orders");
    gi.path = &path;
    Firth__GetTableInfoResponse *info =
        (Firth__GetTableInfoResponse *)kit_call(&kc, FR_RPC_GET_TABLE_INFO, &gi.base);
    assert_int_equal(info->table_id, id);
    assert_int_equal(info->num_buckets, 2);
    assert_int_equal(info->schema_id, 0);
    assert_true(info->created_ms > 1600000000000LL);
    assert_non_null(strstr(info->schema_json, "\"score\""));
    assert_non_null(strstr(info->table_json, "\"orders\""));
    assert_int_equal(info->n_primary_key, 0);
    bool found = false;
    for (size_t i = 0; i < info->n_options; i++)
        found |= strcmp(info->options[i]->key, "bucket.num") == 0 &&
                 strcmp(info->options[i]->value, "2") == 0;
    assert_true(found);
    fr_rpc_free(&info->base);

    Firth__ListTablesRequest lt = FIRTH__LIST_TABLES_REQUEST__INIT;
    lt.database = "shop";
    Firth__ListTablesResponse *tables =
        (Firth__ListTablesResponse *)kit_call(&kc, FR_RPC_LIST_TABLES, &lt.base);
    assert_int_equal(tables->n_tables, 1);
    assert_string_equal(tables->tables[0], "orders");
    fr_rpc_free(&tables->base);

    /* Metadata of everything, and of a table that does not exist. */
    Firth__MetadataRequest md = FIRTH__METADATA_REQUEST__INIT;
    Firth__MetadataResponse *m = (Firth__MetadataResponse *)kit_call(&kc, FR_RPC_METADATA, &md.base);
    assert_int_equal(m->n_nodes, 1);
    assert_int_equal(m->nodes[0]->node_id, 0);
    assert_string_equal(m->nodes[0]->host, "127.0.0.1");
    assert_int_equal(m->n_tables, 1);
    assert_string_equal(m->tables[0]->path->table, "orders");
    assert_int_equal(m->tables[0]->table_id, id);
    assert_int_equal(m->tables[0]->n_buckets, 2);
    assert_int_equal(m->tables[0]->buckets[1]->bucket, 1);
    fr_rpc_free(&m->base);
    Firth__TablePath nope = kit_path_of("shop", "nope");
    Firth__TablePath *paths[2] = {&path, &nope};
    md.tables = paths;
    md.n_tables = 2;
    m = (Firth__MetadataResponse *)kit_call(&kc, FR_RPC_METADATA, &md.base);
    assert_int_equal(m->n_tables, 2);
    assert_null(m->tables[0]->error);
    assert_non_null(m->tables[1]->error);
    assert_int_equal(m->tables[1]->error->code, FIRTH__ERROR_CODE__NOT_FOUND);
    fr_rpc_free(&m->base);

    /* A non-empty database is dropped only with cascade. */
    Firth__DropDatabaseRequest dd = FIRTH__DROP_DATABASE_REQUEST__INIT;
    dd.database = "shop";
    e = kit_call_error(&kc, FR_RPC_DROP_DATABASE, &dd.base);
    assert_int_equal(e->code, FIRTH__ERROR_CODE__BAD_STATE);
    fr_rpc_free(&e->base);
    Firth__DropTableRequest dt = FIRTH__DROP_TABLE_REQUEST__INIT;
    dt.path = &path;
    fr_rpc_free(kit_call(&kc, FR_RPC_DROP_TABLE, &dt.base));
    e = kit_call_error(&kc, FR_RPC_DROP_TABLE, &dt.base);
    assert_int_equal(e->code, FIRTH__ERROR_CODE__NOT_FOUND);
    fr_rpc_free(&e->base);
    fr_rpc_free(kit_call(&kc, FR_RPC_DROP_DATABASE, &dd.base));
}

/* ---- produce, fetch, list offsets ------------------------------------------------------ */

static void test_produce_fetch(void **state)
{
    (void)state;
    int64_t id = create_table("default", "events", "2");
    fr_buf bytes[3];
    encode_rows(0, 100, FR_NO_WRITER, -1, &bytes[0]);
    encode_rows(100, 50, FR_NO_WRITER, -1, &bytes[1]);
    encode_rows(200, 10, FR_NO_WRITER, -1, &bytes[2]);
    int buckets[3] = {0, 1, 0};
    produce_one res[3];
    int64_t before = fr_now_ms();
    produce("default", "events", id, FR_NO_WRITER, 3, buckets, bytes, res);
    assert_int_equal(res[0].code, 0);
    assert_int_equal(res[1].code, 0);
    assert_int_equal(res[2].code, 0);
    assert_int_equal(res[0].base_offset, 0);
    assert_int_equal(res[1].base_offset, 0);
    assert_int_equal(res[2].base_offset, 100); /* the same bucket, in request order */
    assert_true(res[0].commit_ts >= before && res[2].commit_ts >= res[0].commit_ts);
    assert_int_equal(end_offset("default", "events", 0), 110);
    assert_int_equal(end_offset("default", "events", 1), 50);

    /* Everything of bucket 0, every column. */
    Firth__FetchLogResponse *r = fetch("default", "events", 0, 0, NULL, 0, NULL, 0, 0);
    Firth__FetchBucketResult *b = r->tables[0]->buckets[0];
    assert_null(b->error);
    assert_int_equal(b->high_watermark, 110);
    assert_int_equal(b->log_start_offset, 0);
    assert_int_equal(b->next_offset, 110);
    fetched f = {0};
    decode_records(&b->records, NULL, 0, 0, 0, &f);
    assert_int_equal(f.n, 110);
    assert_int_equal(f.batches, 2);
    assert_int_equal(f.ids[0], 0);
    assert_int_equal(f.ids[99], 99);
    assert_int_equal(f.ids[100], 200);
    assert_int_equal(f.offsets[109], 109);
    assert_false(f.has_change_types);
    fr_rpc_free(&r->base);

    /* Projected (score, id) from the middle of the first batch: the batch comes whole. */
    int32_t proj[2] = {2, 0};
    int cols[2] = {2, 0};
    r = fetch("default", "events", 0, 50, proj, 2, NULL, 0, 0);
    b = r->tables[0]->buckets[0];
    assert_null(b->error);
    memset(&f, 0, sizeof f);
    decode_records(&b->records, cols, 2, 1, 50, &f);
    assert_int_equal(f.n, 60);
    assert_int_equal(f.ids[0], 50);
    assert_int_equal(f.offsets[0], 50);
    assert_int_equal(b->next_offset, 110);
    fr_rpc_free(&r->base);

    /* A filter leaves out the batch whose statistics rule it out. */
    r = fetch("default", "events", 0, 0, proj, 2, "id >= 200", 0, 0);
    b = r->tables[0]->buckets[0];
    assert_null(r->tables[0]->error);
    memset(&f, 0, sizeof f);
    decode_records(&b->records, cols, 2, 1, 0, &f);
    assert_int_equal(f.batches, 1);
    assert_int_equal(f.n, 10);
    assert_int_equal(f.ids[0], 200);
    assert_int_equal(b->next_offset, 110);
    fr_rpc_free(&r->base);

    /* At the end: nothing, the same offset. Past it: OUT_OF_RANGE. */
    r = fetch("default", "events", 0, 110, NULL, 0, NULL, 0, 0);
    b = r->tables[0]->buckets[0];
    assert_null(b->error);
    assert_int_equal(b->records.len, 0);
    assert_int_equal(b->next_offset, 110);
    fr_rpc_free(&r->base);
    r = fetch("default", "events", 0, 111, NULL, 0, NULL, 0, 0);
    assert_non_null(r->tables[0]->buckets[0]->error);
    assert_int_equal(r->tables[0]->buckets[0]->error->code, FIRTH__ERROR_CODE__OUT_OF_RANGE);
    fr_rpc_free(&r->base);

    /* Table-level errors: a bad filter, a bad projection, a missing table, a bad bucket. */
    r = fetch("default", "events", 0, 0, NULL, 0, "nope > 1", 0, 0);
    assert_non_null(r->tables[0]->error);
    assert_int_equal(r->tables[0]->n_buckets, 0);
    fr_rpc_free(&r->base);
    int32_t twice[2] = {1, 1};
    r = fetch("default", "events", 0, 0, twice, 2, NULL, 0, 0);
    assert_non_null(r->tables[0]->error);
    assert_int_equal(r->tables[0]->error->code, FIRTH__ERROR_CODE__INVALID);
    fr_rpc_free(&r->base);
    r = fetch("default", "gone", 0, 0, NULL, 0, NULL, 0, 0);
    assert_int_equal(r->tables[0]->error->code, FIRTH__ERROR_CODE__NOT_FOUND);
    fr_rpc_free(&r->base);
    r = fetch("default", "events", 5, 0, NULL, 0, NULL, 0, 0);
    assert_int_equal(r->tables[0]->buckets[0]->error->code, FIRTH__ERROR_CODE__OUT_OF_RANGE);
    fr_rpc_free(&r->base);

    /* Every bucket's offsets, earliest and by time. */
    Firth__ListOffsetsRequest lo = FIRTH__LIST_OFFSETS_REQUEST__INIT;
    Firth__TablePath path = kit_path_of("default", "events");
    lo.path = &path;
    lo.spec = FIRTH__OFFSET_SPEC__OFFSET_TIMESTAMP;
    lo.timestamp_ms = fr_now_ms() + 60000;
    Firth__ListOffsetsResponse *lr =
        (Firth__ListOffsetsResponse *)kit_call(&kc, FR_RPC_LIST_OFFSETS, &lo.base);
    assert_int_equal(lr->n_buckets, 2);
    assert_int_equal(lr->buckets[0]->offset, 110);
    assert_int_equal(lr->buckets[1]->offset, 50);
    fr_rpc_free(&lr->base);

    /* A request naming the table by an id it no longer has fails whole. */
    Firth__ProduceLogRequest req = FIRTH__PRODUCE_LOG_REQUEST__INIT;
    Firth__ProduceBucket pb = FIRTH__PRODUCE_BUCKET__INIT;
    Firth__ProduceBucket *pbs[1] = {&pb};
    pb.partition_id = -1;
    pb.records.data = bytes[0].data;
    pb.records.len = bytes[0].len;
    req.path = &path;
    req.table_id = id + 1000;
    req.writer_id = -1;
    req.buckets = pbs;
    req.n_buckets = 1;
    Firth__Error *e = kit_call_error(&kc, FR_RPC_PRODUCE_LOG, &req.base);
    assert_int_equal(e->code, FIRTH__ERROR_CODE__NOT_FOUND);
    assert_non_null(strstr(e->message, "dropped and created again"));
    fr_rpc_free(&e->base);
    for (int i = 0; i < 3; i++) fr_buf_free(&bytes[i]);
}

/* A fetch of one bucket with its own byte budget; *resp is the caller's. */
static Firth__FetchLogResponse *fetch_budget(const char *table, int64_t offset,
                                             const int32_t *proj, size_t nproj,
                                             int64_t bucket_max)
{
    Firth__FetchLogRequest req = FIRTH__FETCH_LOG_REQUEST__INIT;
    Firth__FetchTable ft = FIRTH__FETCH_TABLE__INIT;
    Firth__FetchTable *fts[1] = {&ft};
    Firth__FetchBucket fb = FIRTH__FETCH_BUCKET__INIT;
    Firth__FetchBucket *fbs[1] = {&fb};
    Firth__TablePath path = kit_path_of("default", table);
    fb.partition_id = -1;
    fb.fetch_offset = offset;
    fb.max_bytes = bucket_max;
    ft.path = &path;
    ft.projection = (int32_t *)proj;
    ft.n_projection = nproj;
    ft.filter = "";
    ft.buckets = fbs;
    ft.n_buckets = 1;
    req.tables = fts;
    req.n_tables = 1;
    return (Firth__FetchLogResponse *)kit_call(&kc, FR_RPC_FETCH_LOG, &req.base);
}

/* A bucket's max_bytes counts the bytes returned: stored batches fill it as they are, and a
 * projection's smaller batches fill it with more of them, read on past the stored bytes the
 * budget would hold; the first batch goes whatever its size. */
static void test_fetch_budget_projected(void **state)
{
    (void)state;
    int64_t id = create_table("default", "wide", "1");
    int bucket0[1] = {0};
    fr_buf bytes;
    produce_one res;
    size_t stored = 0;
    for (int i = 0; i < 16; i++) {
        encode_rows(i * 100, 100, FR_NO_WRITER, -1, &bytes);
        stored = bytes.len;
        produce("default", "wide", id, FR_NO_WRITER, 1, bucket0, &bytes, &res);
        assert_int_equal(res.code, 0);
        fr_buf_free(&bytes);
    }
    int64_t budget = (int64_t)stored * 3 + (int64_t)stored / 2;
    /* As stored: three batches fit, the fourth does not. */
    Firth__FetchLogResponse *r = fetch_budget("wide", 0, NULL, 0, budget);
    Firth__FetchBucketResult *b = r->tables[0]->buckets[0];
    fetched f = {0};
    decode_records(&b->records, NULL, 0, 0, 0, &f);
    assert_int_equal(f.batches, 3);
    assert_int_equal(b->next_offset, 300);
    assert_true((int64_t)b->records.len <= budget);
    fr_rpc_free(&r->base);
    /* Projected to (id): more batches, still within the budget, in order from the offset. */
    int32_t proj[1] = {0};
    int cols[1] = {0};
    r = fetch_budget("wide", 150, proj, 1, budget);
    b = r->tables[0]->buckets[0];
    memset(&f, 0, sizeof f);
    decode_records(&b->records, cols, 1, 0, 150, &f);
    assert_true(f.batches > 3);
    assert_true((int64_t)b->records.len <= budget);
    assert_int_equal(b->next_offset, 100 + f.batches * 100);
    assert_int_equal(f.n, f.batches * 100 - 50);
    for (int i = 0; i < f.n; i++) assert_int_equal(f.ids[i], 150 + i);
    size_t per_batch = b->records.len / (size_t)f.batches;
    /* Everything, when the budget holds every projected batch. */
    fr_rpc_free(&r->base);
    r = fetch_budget("wide", 0, proj, 1, (int64_t)(per_batch * 20));
    b = r->tables[0]->buckets[0];
    memset(&f, 0, sizeof f);
    decode_records(&b->records, cols, 1, 0, 0, &f);
    assert_int_equal(f.batches, 16);
    assert_int_equal(b->next_offset, 1600);
    fr_rpc_free(&r->base);
    /* A budget smaller than one batch still returns the first one, and only it. */
    r = fetch_budget("wide", 0, proj, 1, 1);
    b = r->tables[0]->buckets[0];
    memset(&f, 0, sizeof f);
    decode_records(&b->records, cols, 1, 0, 0, &f);
    assert_int_equal(f.batches, 1);
    assert_int_equal(b->next_offset, 100);
    fr_rpc_free(&r->base);
}

static void test_produce_bad_batches(void **state)
{
    (void)state;
    int64_t id = create_table("default", "strict", "2");
    fr_buf bytes[6];
    encode_rows(0, 10, FR_NO_WRITER, -1, &bytes[0]);
    encode_rows(10, 10, FR_NO_WRITER, -1, &bytes[1]);
    bytes[1].data[bytes[1].len - 9] ^= 0x5a; /* a bad CRC */
    /* A batch of another schema (one INT column) that names the table's schema id. */
    fr_buf_init(&bytes[2]);
    fr_field f = {.name = "x", .type = fr_type_of(FR_T_INT)};
    fr_schema *other = NULL;
    fr_error err = {0};
    KIT_CHECK(fr_schema_new(&f, 1, 0, &other, &err), err);
    fr_builder *bld = NULL;
    KIT_CHECK(fr_builder_new(other, &bld, &err), err);
    KIT_CHECK(fr_builder_append_i64(bld, 0, 7, &err), err);
    fr_batch *ob = NULL;
    KIT_CHECK(fr_builder_finish(bld, &ob, &err), err);
    kit_encode(ob, 0, FR_NO_WRITER, -1, NULL, &bytes[2]);
    fr_batch_free(ob);
    fr_builder_free(bld);
    fr_schema_free(other);
    encode_rows(30, 10, 77, 0, &bytes[3]);        /* a writer id the request does not name */
    encode_rows(40, 10, FR_NO_WRITER, -1, &bytes[4]); /* into bucket 9: no such bucket */
    fr_buf_init(&bytes[5]);
    KIT_CHECK(fr_buf_append(&bytes[5], "not a batch", 11, &err), err);
    int buckets[6] = {0, 0, 1, 1, 9, 1};
    produce_one res[6];
    produce("default", "strict", id, FR_NO_WRITER, 6, buckets, bytes, res);
    assert_int_equal(res[0].code, 0);
    assert_int_equal(res[1].code, FIRTH__ERROR_CODE__CORRUPT);
    assert_int_equal(res[1].base_offset, -1);
    assert_true(res[2].code == FIRTH__ERROR_CODE__CORRUPT ||
                res[2].code == FIRTH__ERROR_CODE__TYPE_MISMATCH);
    assert_int_equal(res[3].code, FIRTH__ERROR_CODE__INVALID);
    assert_int_equal(res[4].code, FIRTH__ERROR_CODE__OUT_OF_RANGE);
    assert_int_equal(res[5].code, FIRTH__ERROR_CODE__CORRUPT);
    /* Only the good batch was appended. */
    assert_int_equal(end_offset("default", "strict", 0), 10);
    assert_int_equal(end_offset("default", "strict", 1), 0);

    /* An idempotent writer: a retry of the same sequence is DUPLICATE with the earlier
     * offset, and nothing is appended twice. */
    fr_buf w[2];
    encode_rows(100, 5, 42, 0, &w[0]);
    encode_rows(100, 5, 42, 0, &w[1]);
    int b0[1] = {1};
    produce("default", "strict", id, 42, 1, b0, &w[0], res);
    assert_int_equal(res[0].code, 0);
    assert_int_equal(res[0].base_offset, 0);
    produce("default", "strict", id, 42, 1, b0, &w[1], res);
    assert_int_equal(res[0].code, FIRTH__ERROR_CODE__DUPLICATE);
    assert_int_equal(res[0].base_offset, 0);
    assert_int_equal(end_offset("default", "strict", 1), 5);
    for (int i = 0; i < 6; i++) fr_buf_free(&bytes[i]);
    fr_buf_free(&w[0]);
    fr_buf_free(&w[1]);
}

/* ---- primary-key tables ---------------------------------------------------------------- */

/* Puts rows [first, first + n) split by bucket; ops per row (NULL: upserts), targets. */
static void put_rows(fr_table *t, int64_t table_id, const fr_batch *rows, const uint8_t *cts,
                     const int32_t *targets, size_t ntargets, int expect_code,
                     int64_t *changed)
{
    fr_error err = {0};
    int nb = fr_table_num_buckets(t);
    Firth__PutKvRequest req = FIRTH__PUT_KV_REQUEST__INIT;
    Firth__TablePath path = kit_path_of(fr_table_db(t), fr_table_name(t));
    Firth__PutKvBucket entries[8];
    Firth__PutKvBucket *list[8];
    fr_buf bytes[8];
    int n = 0;
    for (int b = 0; b < nb; b++) {
        int64_t idx[1024], m = 0;
        uint8_t ct[1024];
        for (int64_t r = 0; r < fr_batch_num_rows(rows); r++) {
            if (fr_table_bucket_of(t, rows, r) != b) continue;
            ct[m] = cts ? cts[r] : FR_CHANGE_UPDATE_AFTER;
            idx[m++] = r;
        }
        if (m == 0) continue;
        fr_builder *bld = NULL;
        KIT_CHECK(fr_builder_new(fr_batch_schema(rows), &bld, &err), err);
        for (int64_t k = 0; k < m; k++) {
            for (int c = 0; c < fr_batch_num_columns(rows); c++) {
                const fr_column *col = fr_batch_column(rows, c);
                if (fr_column_is_null(col, idx[k])) {
                    KIT_CHECK(fr_builder_append_null(bld, c, &err), err);
                    continue;
                }
                fr_value v;
                fr_column_get(col, idx[k], &v);
                KIT_CHECK(fr_builder_append(bld, c, &v, &err), err);
            }
        }
        fr_batch *part = NULL;
        KIT_CHECK(fr_builder_finish(bld, &part, &err), err);
        fr_builder_free(bld);
        fr_buf_init(&bytes[n]);
        kit_encode(part, 0, FR_NO_WRITER, -1, ct, &bytes[n]);
        fr_batch_free(part);
        firth__put_kv_bucket__init(&entries[n]);
        entries[n].partition_id = -1;
        entries[n].bucket = b;
        entries[n].records.data = bytes[n].data;
        entries[n].records.len = bytes[n].len;
        list[n] = &entries[n];
        n++;
    }
    req.path = &path;
    req.table_id = table_id;
    req.writer_id = -1;
    req.target_columns = (int32_t *)targets;
    req.n_target_columns = ntargets;
    req.buckets = list;
    req.n_buckets = (size_t)n;
    Firth__PutKvResponse *resp = (Firth__PutKvResponse *)kit_call(&kc, FR_RPC_PUT_KV, &req.base);
    assert_int_equal(resp->n_buckets, (size_t)n);
    *changed = 0;
    for (int i = 0; i < n; i++) {
        int code = resp->buckets[i]->error ? resp->buckets[i]->error->code : 0;
        if (code != expect_code)
            fail_msg("put_kv bucket %d: code %d (%s), expected %d", resp->buckets[i]->bucket,
                     code, resp->buckets[i]->error ? resp->buckets[i]->error->message : "",
                     expect_code);
        *changed += resp->buckets[i]->rows_changed;
        if (code == 0 && resp->buckets[i]->rows_changed > 0)
            assert_true(resp->buckets[i]->base_offset >= 0 &&
                        resp->buckets[i]->changelog_records > 0);
        fr_buf_free(&bytes[i]);
    }
    fr_rpc_free(&resp->base);
}

/* Keys (the id column) as a record batch. */
static void encode_keys(const int64_t *ids, int n, fr_buf *out)
{
    fr_schema *full = kit_schema(), *key_schema = NULL;
    int col = 0;
    fr_error err = {0};
    KIT_CHECK(fr_schema_project(full, &col, 1, &key_schema, &err), err);
    fr_builder *bld = NULL;
    KIT_CHECK(fr_builder_new(key_schema, &bld, &err), err);
    for (int i = 0; i < n; i++) KIT_CHECK(fr_builder_append_i64(bld, 0, ids[i], &err), err);
    fr_batch *b = NULL;
    KIT_CHECK(fr_builder_finish(bld, &b, &err), err);
    fr_buf_init(out);
    kit_encode(b, 0, FR_NO_WRITER, -1, NULL, out);
    fr_batch_free(b);
    fr_builder_free(bld);
    fr_schema_free(key_schema);
    fr_schema_free(full);
}

/* Looks ids up (one entry; the server routes the keys); found flags and names. */
static void lookup(const int64_t *ids, int n, bool *found, char names[][16])
{
    fr_buf keys;
    encode_keys(ids, n, &keys);
    Firth__LookupRequest req = FIRTH__LOOKUP_REQUEST__INIT;
    Firth__TablePath path = kit_path_of("default", "kv");
    Firth__LookupBucket lb = FIRTH__LOOKUP_BUCKET__INIT;
    Firth__LookupBucket *lbs[1] = {&lb};
    int32_t proj[2] = {0, 1};
    lb.partition_id = -1;
    lb.keys.data = keys.data;
    lb.keys.len = keys.len;
    req.path = &path;
    req.projection = proj;
    req.n_projection = 2;
    req.buckets = lbs;
    req.n_buckets = 1;
    Firth__LookupResponse *r = (Firth__LookupResponse *)kit_call(&kc, FR_RPC_LOOKUP, &req.base);
    assert_null(r->buckets[0]->error);
    assert_int_equal(r->buckets[0]->n_found, (size_t)n);
    int cols[2] = {0, 1};
    fr_schema *full = kit_schema(), *ps = NULL;
    fr_error err = {0};
    KIT_CHECK(fr_schema_project(full, cols, 2, &ps, &err), err);
    int k = 0;
    const ProtobufCBinaryData *rows = &r->buckets[0]->rows;
    fr_batch *b = NULL;
    if (rows->len > 0) {
        fr_rb_view v;
        KIT_CHECK(fr_rb_decode(rows->data, rows->len, &v, &err), err);
        size_t used;
        KIT_CHECK(fr_ipc_read_batch(v.ipc, (size_t)v.ipc_length, ps, &b, &used, &err), err);
    }
    for (int i = 0; i < n; i++) {
        found[i] = r->buckets[0]->found[i];
        names[i][0] = '\0';
        if (!found[i]) continue;
        assert_non_null(b);
        fr_value id, name;
        fr_column_get(fr_batch_column(b, 0), k, &id);
        assert_int_equal(id.v.i, ids[i]);
        if (!fr_column_is_null(fr_batch_column(b, 1), k)) {
            fr_column_get(fr_batch_column(b, 1), k, &name);
            snprintf(names[i], 16, "%.*s", (int)name.v.s.len, (const char *)name.v.s.ptr);
        }
        k++;
    }
    if (b) assert_int_equal(fr_batch_num_rows(b), k);
    fr_batch_free(b);
    fr_schema_free(ps);
    fr_schema_free(full);
    fr_rpc_free(&r->base);
    fr_buf_free(&keys);
}

static void test_put_lookup(void **state)
{
    (void)state;
    kit_sql(&kc, "CREATE TABLE kv (id BIGINT NOT NULL, name STRING, score DOUBLE, "
                 "PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket.num' = '3')");
    fr_table *t = NULL;
    fr_error err = {0};
    KIT_CHECK(fr_engine_get_table(fr_server_engine(ks.srv), "default", "kv", &t, &err), err);
    int64_t id = fr_table_id(t);
    fr_batch *rows = kit_batch(1, 20); /* ids 1..20, name n<id> (NULL for 3, 10, 17) */
    int64_t changed = 0;
    put_rows(t, id, rows, NULL, NULL, 0, 0, &changed);
    assert_int_equal(changed, 20);
    put_rows(t, id, rows, NULL, NULL, 0, 0, &changed); /* the same rows change nothing */
    assert_int_equal(changed, 0);

    int64_t keys[4] = {1, 2, 21, 20};
    bool found[4];
    char names[4][16];
    lookup(keys, 4, found, names);
    assert_true(found[0] && found[1] && !found[2] && found[3]);
    assert_string_equal(names[0], "n1");
    assert_string_equal(names[3], "n20");

    /* Deletes by change type, and a partial update of score alone. */
    uint8_t cts[20];
    for (int i = 0; i < 20; i++) cts[i] = i < 2 ? FR_CHANGE_DELETE : FR_CHANGE_APPEND;
    fr_batch *del = kit_batch(1, 2);
    put_rows(t, id, del, cts, NULL, 0, 0, &changed);
    assert_int_equal(changed, 2);
    fr_batch_free(del);
    lookup(keys, 4, found, names);
    assert_true(!found[0] && !found[1] && found[3]);
    fr_schema *schema = kit_schema();
    fr_builder *bld = NULL;
    KIT_CHECK(fr_builder_new(schema, &bld, &err), err);
    KIT_CHECK(fr_builder_append_i64(bld, 0, 20, &err), err);
    KIT_CHECK(fr_builder_append_bytes(bld, 1, "zzz", 3, &err), err);
    KIT_CHECK(fr_builder_append_f64(bld, 2, 99.5, &err), err);
    fr_batch *upd = NULL;
    KIT_CHECK(fr_builder_finish(bld, &upd, &err), err);
    fr_builder_free(bld);
    fr_schema_free(schema);
    int32_t targets[2] = {0, 2};
    put_rows(t, id, upd, NULL, targets, 2, 0, &changed);
    assert_int_equal(changed, 1);
    fr_batch_free(upd);
    lookup(keys, 4, found, names);
    assert_string_equal(names[3], "n20"); /* name kept */

    /* -U is not an operation; rows in the wrong bucket are refused whole. */
    cts[0] = FR_CHANGE_UPDATE_BEFORE;
    fr_batch *one = kit_batch(5, 1);
    put_rows(t, id, one, cts, NULL, 0, FIRTH__ERROR_CODE__INVALID, &changed);
    fr_batch_free(one);

    fr_buf wrong;
    fr_buf_init(&wrong);
    kit_encode(rows, 0, FR_NO_WRITER, -1, NULL, &wrong);
    Firth__PutKvRequest req = FIRTH__PUT_KV_REQUEST__INIT;
    Firth__TablePath path = kit_path_of("default", "kv");
    Firth__PutKvBucket pb = FIRTH__PUT_KV_BUCKET__INIT;
    Firth__PutKvBucket *pbs[1] = {&pb};
    pb.partition_id = -1;
    pb.bucket = 0;
    pb.records.data = wrong.data;
    pb.records.len = wrong.len;
    req.path = &path;
    req.writer_id = -1;
    req.buckets = pbs;
    req.n_buckets = 1;
    Firth__PutKvResponse *pr = (Firth__PutKvResponse *)kit_call(&kc, FR_RPC_PUT_KV, &req.base);
    assert_non_null(pr->buckets[0]->error);
    assert_int_equal(pr->buckets[0]->error->code, FIRTH__ERROR_CODE__INVALID);
    assert_non_null(strstr(pr->buckets[0]->error->message, "belongs in bucket"));
    fr_rpc_free(&pr->base);
    fr_buf_free(&wrong);

    /* The changelog is in the buckets' logs, with change types. */
    int64_t total = 0;
    for (int b = 0; b < 3; b++) {
        Firth__FetchLogResponse *r = fetch("default", "kv", b, 0, NULL, 0, NULL, 0, 0);
        fetched f = {0};
        decode_records(&r->tables[0]->buckets[0]->records, NULL, 0, 0, 0, &f);
        if (f.n > 0) assert_true(f.has_change_types);
        total += f.n;
        fr_rpc_free(&r->base);
    }
    assert_int_equal(total, 20 + 2 + 2); /* 20 inserts, 2 deletes, -U/+U of the update */

    /* A produce into a primary-key table is refused per bucket. */
    fr_buf pbytes;
    encode_rows(1, 1, FR_NO_WRITER, -1, &pbytes);
    int b0[1] = {0};
    produce_one res[1];
    produce("default", "kv", 0, FR_NO_WRITER, 1, b0, &pbytes, res);
    assert_int_equal(res[0].code, FIRTH__ERROR_CODE__INVALID);
    fr_buf_free(&pbytes);
    fr_batch_free(rows);
    fr_table_release(t);
}

static void test_prefix_lookup(void **state)
{
    (void)state;
    kit_sql(&kc, "CREATE TABLE pk2 (a BIGINT NOT NULL, b BIGINT NOT NULL, v STRING, "
                 "PRIMARY KEY (a, b) NOT ENFORCED) WITH ('bucket.num' = '2', 'bucket.key' = 'a');"
                 "INSERT INTO pk2 VALUES (1, 1, 'x'), (1, 2, 'y'), (1, 3, 'z'), (2, 1, 'w')");
    fr_field f = {.name = "a", .type = fr_type_of(FR_T_BIGINT)};
    f.type.nullable = false;
    fr_schema *s = NULL;
    fr_error err = {0};
    KIT_CHECK(fr_schema_new(&f, 1, 0, &s, &err), err);
    fr_builder *bld = NULL;
    KIT_CHECK(fr_builder_new(s, &bld, &err), err);
    int64_t as[3] = {1, 3, 2};
    for (int i = 0; i < 3; i++) KIT_CHECK(fr_builder_append_i64(bld, 0, as[i], &err), err);
    fr_batch *b = NULL;
    KIT_CHECK(fr_builder_finish(bld, &b, &err), err);
    fr_buf bytes;
    fr_buf_init(&bytes);
    kit_encode(b, 0, FR_NO_WRITER, -1, NULL, &bytes);
    Firth__PrefixLookupRequest req = FIRTH__PREFIX_LOOKUP_REQUEST__INIT;
    Firth__TablePath path = kit_path_of("default", "pk2");
    Firth__PrefixLookupBucket pb = FIRTH__PREFIX_LOOKUP_BUCKET__INIT;
    Firth__PrefixLookupBucket *pbs[1] = {&pb};
    int32_t proj[1] = {2};
    pb.partition_id = -1;
    pb.prefixes.data = bytes.data;
    pb.prefixes.len = bytes.len;
    req.path = &path;
    req.projection = proj;
    req.n_projection = 1;
    req.buckets = pbs;
    req.n_buckets = 1;
    Firth__PrefixLookupResponse *r =
        (Firth__PrefixLookupResponse *)kit_call(&kc, FR_RPC_PREFIX_LOOKUP, &req.base);
    assert_null(r->buckets[0]->error);
    assert_int_equal(r->buckets[0]->n_row_counts, 3);
    assert_int_equal(r->buckets[0]->row_counts[0], 3);
    assert_int_equal(r->buckets[0]->row_counts[1], 0);
    assert_int_equal(r->buckets[0]->row_counts[2], 1);
    assert_true(r->buckets[0]->rows.len > 0);
    fr_rpc_free(&r->base);
    fr_buf_free(&bytes);
    fr_batch_free(b);
    fr_builder_free(bld);
    fr_schema_free(s);
}

/* ---- partitions ------------------------------------------------------------------------ */

/* Rows (id, dt) with ids first.. and the same dt. */
static fr_batch *dt_batch(const fr_schema *s, int64_t first, int n, const char *dt)
{
    fr_builder *bld = NULL;
    fr_error err = {0};
    KIT_CHECK(fr_builder_new(s, &bld, &err), err);
    for (int i = 0; i < n; i++) {
        KIT_CHECK(fr_builder_append_i64(bld, 0, first + i, &err), err);
        KIT_CHECK(fr_builder_append_bytes(bld, 1, dt, strlen(dt), &err), err);
    }
    fr_batch *b = NULL;
    KIT_CHECK(fr_builder_finish(bld, &b, &err), err);
    fr_builder_free(bld);
    return b;
}

static int produce_part(int64_t pid, const fr_buf *bytes, int64_t *base)
{
    Firth__ProduceLogRequest req = FIRTH__PRODUCE_LOG_REQUEST__INIT;
    Firth__TablePath path = kit_path_of("default", "p");
    Firth__ProduceBucket pb = FIRTH__PRODUCE_BUCKET__INIT;
    Firth__ProduceBucket *pbs[1] = {&pb};
    pb.partition_id = pid;
    pb.records.data = bytes->data;
    pb.records.len = bytes->len;
    req.path = &path;
    req.writer_id = -1;
    req.buckets = pbs;
    req.n_buckets = 1;
    Firth__ProduceLogResponse *r =
        (Firth__ProduceLogResponse *)kit_call(&kc, FR_RPC_PRODUCE_LOG, &req.base);
    int code = r->buckets[0]->error ? r->buckets[0]->error->code : 0;
    if (base) *base = r->buckets[0]->base_offset;
    fr_rpc_free(&r->base);
    return code;
}

static void test_partitions(void **state)
{
    (void)state;
    kit_sql(&kc, "CREATE TABLE p (id BIGINT NOT NULL, dt STRING NOT NULL) PARTITIONED BY (dt) "
                 "WITH ('bucket.num' = '2');"
                 "ALTER TABLE p ADD PARTITION (dt = 'a'), PARTITION (dt = 'b')");
    Firth__MetadataRequest md = FIRTH__METADATA_REQUEST__INIT;
    Firth__TablePath path = kit_path_of("default", "p");
    Firth__TablePath *paths[1] = {&path};
    md.tables = paths;
    md.n_tables = 1;
    Firth__MetadataResponse *m = (Firth__MetadataResponse *)kit_call(&kc, FR_RPC_METADATA, &md.base);
    Firth__TableMetadata *tm = m->tables[0];
    assert_null(tm->error);
    assert_int_equal(tm->n_partition_keys, 1);
    assert_string_equal(tm->partition_keys[0], "dt");
    assert_int_equal(tm->n_buckets, 0);
    assert_int_equal(tm->n_partitions, 2);
    assert_string_equal(tm->partitions[0]->name, "dt=a");
    assert_string_equal(tm->partitions[0]->values[0], "a");
    assert_int_equal(tm->partitions[0]->n_buckets, 2);
    int64_t pa = tm->partitions[0]->partition_id, pbid = tm->partitions[1]->partition_id;
    fr_rpc_free(&m->base);

    fr_field f[2] = {{.name = "id", .type = fr_type_of(FR_T_BIGINT)},
                     {.name = "dt", .type = fr_type_of(FR_T_STRING)}};
    f[0].type.nullable = false;
    f[1].type.nullable = false;
    fr_schema *s = NULL;
    fr_error err = {0};
    KIT_CHECK(fr_schema_new(f, 2, 0, &s, &err), err);
    fr_batch *ba = dt_batch(s, 1, 5, "a"), *bb = dt_batch(s, 10, 3, "b");
    fr_buf xa, xb;
    fr_buf_init(&xa);
    fr_buf_init(&xb);
    kit_encode(ba, 0, FR_NO_WRITER, -1, NULL, &xa);
    kit_encode(bb, 0, FR_NO_WRITER, -1, NULL, &xb);
    int64_t base = -2;
    assert_int_equal(produce_part(pa, &xa, &base), 0);
    assert_int_equal(base, 0);
    assert_int_equal(produce_part(pbid, &xb, &base), 0);
    /* Rows of b into a, a partition id of a table without them, an unknown partition. */
    assert_int_equal(produce_part(pa, &xb, NULL), FIRTH__ERROR_CODE__INVALID);
    assert_int_equal(produce_part(-1, &xa, NULL), FIRTH__ERROR_CODE__INVALID);
    assert_int_equal(produce_part(pbid + 100, &xa, NULL), FIRTH__ERROR_CODE__NOT_FOUND);

    /* Every bucket of every partition, and a fetch from one. */
    Firth__ListOffsetsRequest lo = FIRTH__LIST_OFFSETS_REQUEST__INIT;
    lo.path = &path;
    lo.spec = FIRTH__OFFSET_SPEC__OFFSET_LATEST;
    Firth__ListOffsetsResponse *lr =
        (Firth__ListOffsetsResponse *)kit_call(&kc, FR_RPC_LIST_OFFSETS, &lo.base);
    assert_int_equal(lr->n_buckets, 4);
    assert_int_equal(lr->buckets[0]->partition_id, pa);
    assert_int_equal(lr->buckets[0]->offset, 5);
    assert_int_equal(lr->buckets[2]->partition_id, pbid);
    assert_int_equal(lr->buckets[2]->offset, 3);
    fr_rpc_free(&lr->base);

    Firth__FetchLogRequest req = FIRTH__FETCH_LOG_REQUEST__INIT;
    Firth__FetchTable ft = FIRTH__FETCH_TABLE__INIT;
    Firth__FetchTable *fts[1] = {&ft};
    Firth__FetchBucket fb = FIRTH__FETCH_BUCKET__INIT;
    Firth__FetchBucket *fbs[1] = {&fb};
    fb.partition_id = pbid;
    ft.path = &path;
    ft.buckets = fbs;
    ft.n_buckets = 1;
    req.tables = fts;
    req.n_tables = 1;
    Firth__FetchLogResponse *r = (Firth__FetchLogResponse *)kit_call(&kc, FR_RPC_FETCH_LOG, &req.base);
    assert_null(r->tables[0]->buckets[0]->error);
    assert_int_equal(r->tables[0]->buckets[0]->next_offset, 3);
    fr_rb_view v;
    KIT_CHECK(fr_rb_decode(r->tables[0]->buckets[0]->records.data,
                           r->tables[0]->buckets[0]->records.len, &v, &err),
              err);
    assert_int_equal(v.record_count, 3);
    fr_rpc_free(&r->base);

    /* The metrics name the partition of each bucket. */
    char *mtext = kit_http_get(fr_server_http_address(ks.srv), "/metrics");
    assert_non_null(strstr(mtext, "firth_log_end_offset{database=\"default\",table=\"p\","
                                  "partition=\"dt=b\",bucket=\"0\"} 3\n"));
    fr_free(mtext);
    fr_buf_free(&xa);
    fr_buf_free(&xb);
    fr_batch_free(ba);
    fr_batch_free(bb);
    fr_schema_free(s);
}

/* ---- SQL ------------------------------------------------------------------------------- */

typedef struct sql_result {
    int parts;
    int done_statements;
    int64_t rows;
    fr_buf ipc[4]; /* per statement */
    char database[64];
    Firth__Error *error;
} sql_result;

static void run_sql(const char *sql, const char *db, sql_result *out)
{
    memset(out, 0, sizeof *out);
    for (int i = 0; i < 4; i++) fr_buf_init(&out->ipc[i]);
    Firth__ExecuteSqlRequest req = FIRTH__EXECUTE_SQL_REQUEST__INIT;
    req.sql = (char *)sql;
    req.database = (char *)(db ? db : "");
    int32_t id = kit_send(&kc, FR_RPC_EXECUTE_SQL, &req.base);
    fr_error err = {0};
    for (;;) {
        fr_rpc_result result;
        int32_t got;
        ProtobufCMessage *m = kit_recv(&kc, FR_RPC_EXECUTE_SQL, &result, &got);
        assert_int_equal(got, id);
        if (result == FR_RPC_ERROR) {
            out->error = (Firth__Error *)m;
            return;
        }
        Firth__ExecuteSqlResponse *r = (Firth__ExecuteSqlResponse *)m;
        if (r->arrow_ipc.len > 0) {
            assert_true(r->statement >= 0 && r->statement < 4);
            KIT_CHECK(fr_buf_append(&out->ipc[r->statement], r->arrow_ipc.data, r->arrow_ipc.len,
                                    &err),
                      err);
        }
        out->rows += r->rows;
        if (r->statement_done) out->done_statements++;
        if (result == FR_RPC_PART) {
            out->parts++;
            fr_rpc_free(m);
            continue;
        }
        snprintf(out->database, sizeof out->database, "%s", r->database);
        fr_rpc_free(m);
        return;
    }
}

static void sql_result_free(sql_result *r)
{
    for (int i = 0; i < 4; i++) fr_buf_free(&r->ipc[i]);
    fr_rpc_free(r->error ? &r->error->base : NULL);
}

static int count_rows(void *ctx, const fr_schema *schema, fr_batch *batch, fr_error *err)
{
    (void)schema;
    (void)err;
    *(int64_t *)ctx += fr_batch_num_rows(batch);
    fr_batch_free(batch);
    return 0;
}

static void test_sql(void **state)
{
    (void)state;
    sql_result r;
    run_sql("CREATE DATABASE q; CREATE TABLE q.t (id BIGINT, name STRING);"
            "INSERT INTO q.t VALUES (1, 'a'), (2, 'b'), (3, 'c');"
            "SELECT id, name FROM q.t WHERE id >= 2",
            NULL, &r);
    assert_null(r.error);
    assert_int_equal(r.done_statements, 4);
    assert_string_equal(r.database, "default");
    assert_int_equal(r.rows, 2);
    int64_t rows = 0;
    fr_error err = {0};
    KIT_CHECK(fr_ipc_read_stream(r.ipc[3].data, r.ipc[3].len, count_rows, &rows, &err), err);
    assert_int_equal(rows, 2);
    assert_int_equal(r.ipc[0].len, 0); /* DDL has no rows */
    sql_result_free(&r);

    /* The session database: the request's, then USE. */
    run_sql("SELECT * FROM t", "q", &r);
    assert_null(r.error);
    assert_int_equal(r.rows, 3);
    sql_result_free(&r);
    run_sql("USE q; SELECT id FROM t LIMIT 1", NULL, &r);
    assert_null(r.error);
    assert_string_equal(r.database, "q");
    sql_result_free(&r);

    /* A syntax error runs nothing and names its statement, line and column. */
    run_sql("SELECT 1;\nSELEC 2", NULL, &r);
    assert_non_null(r.error);
    assert_int_equal(r.error->code, FIRTH__ERROR_CODE__SYNTAX_ERROR);
    assert_int_equal(r.error->line, 2);
    assert_int_equal(r.error->column, 1);
    assert_int_equal(r.error->statement, 1);
    assert_int_equal(r.parts, 0);
    sql_result_free(&r);

    /* A runtime error after a statement that ran: its frames came first. */
    run_sql("SELECT 1; SELECT * FROM nope", NULL, &r);
    assert_non_null(r.error);
    assert_int_equal(r.error->statement, 1);
    assert_int_equal(r.done_statements, 1);
    assert_int_equal(r.error->code, FIRTH__ERROR_CODE__NOT_FOUND);
    sql_result_free(&r);
    run_sql("SELECT 1", "no_such_db", &r);
    assert_non_null(r.error);
    sql_result_free(&r);
}

/* ---- HTTP ------------------------------------------------------------------------------ */

static void test_http(void **state)
{
    (void)state;
    create_table("default", "m", "1");
    fr_buf bytes;
    encode_rows(0, 7, FR_NO_WRITER, -1, &bytes);
    int b0[1] = {0};
    produce_one res[1];
    produce("default", "m", 0, FR_NO_WRITER, 1, b0, &bytes, res);
    fr_buf_free(&bytes);
    const char *http = fr_server_http_address(ks.srv);
    assert_non_null(http);
    char *h = kit_http_get(http, "/health");
    assert_non_null(strstr(h, "200 OK"));
    assert_non_null(strstr(h, "\"status\": \"ok\""));
    assert_non_null(strstr(h, "uptime_seconds"));
    fr_free(h);
    char *m = kit_http_get(http, "/metrics");
    assert_non_null(strstr(m, "200 OK"));
    assert_non_null(strstr(m, "text/plain; version=0.0.4"));
    assert_non_null(strstr(m, "firth_requests_total{api=\"produce_log\"} 1\n"));
    assert_non_null(strstr(m, "firth_request_duration_seconds_bucket{api=\"produce_log\",le=\"+Inf\"} 1\n"));
    assert_non_null(strstr(m, "firth_log_end_offset{database=\"default\",table=\"m\","
                              "partition=\"\",bucket=\"0\"} 7\n"));
    assert_non_null(strstr(m, "firth_table_appended_records_total{database=\"default\","
                              "table=\"m\""));
    assert_non_null(strstr(m, "firth_connections 1\n"));
    assert_non_null(strstr(m, "firth_received_bytes_total"));
    /* The table's fsync histogram (this server runs with log.flush none, so it may count
     * none; the log's tests check the counting): its +Inf bucket holds every one. */
    assert_non_null(strstr(m, "# TYPE firth_log_fsync_duration_seconds histogram\n"));
    const char *count = "firth_log_fsync_duration_seconds_count{database=\"default\",table=\"m\"} ";
    const char *inf = "firth_log_fsync_duration_seconds_bucket{database=\"default\",table=\"m\","
                      "le=\"+Inf\"} ";
    const char *c = strstr(m, count), *i = strstr(m, inf);
    assert_non_null(c);
    assert_non_null(i);
    assert_int_equal(strtol(i + strlen(inf), NULL, 10), strtol(c + strlen(count), NULL, 10));
    assert_non_null(strstr(m, "firth_log_fsync_duration_seconds_sum{database=\"default\",table=\"m\"} "));
    fr_free(m);
    char *nf = kit_http_get(http, "/nope");
    assert_non_null(strstr(nf, "404"));
    fr_free(nf);
}

/* ---- authentication -------------------------------------------------------------------- */

static void test_authenticate(void **state)
{
    (void)state;
    kit_server k2;
    kit_server_options(&k2, "server-auth");
    fr_error err = {0};
    KIT_CHECK(fr_server_options_set(&k2.opts, "server.auth.required", "true", &err), err);
    KIT_CHECK(fr_server_options_set(&k2.opts, "server.auth.users", "alice:secret,bob:pw", &err),
              err);
    kit_server_start(&k2);
    kit_conn c = kit_connect(fr_server_address(k2.srv));
    Firth__ListDatabasesRequest ld = FIRTH__LIST_DATABASES_REQUEST__INIT;
    Firth__Error *e = kit_call_error(&c, FR_RPC_LIST_DATABASES, &ld.base);
    assert_int_equal(e->code, FIRTH__ERROR_CODE__NOT_AUTHENTICATED);
    fr_rpc_free(&e->base);
    Firth__ApiVersionsRequest av = FIRTH__API_VERSIONS_REQUEST__INIT;
    Firth__ApiVersionsResponse *v =
        (Firth__ApiVersionsResponse *)kit_call(&c, FR_RPC_API_VERSIONS, &av.base);
    assert_true(v->authentication_required);
    fr_rpc_free(&v->base);

    Firth__AuthenticateRequest ar = FIRTH__AUTHENTICATE_REQUEST__INIT;
    ar.mechanism = "PLAIN";
    static const uint8_t wrong[] = "\0alice\0nope";
    ar.auth_bytes.data = (uint8_t *)wrong;
    ar.auth_bytes.len = sizeof wrong - 1;
    e = kit_call_error(&c, FR_RPC_AUTHENTICATE, &ar.base);
    assert_int_equal(e->code, FIRTH__ERROR_CODE__AUTHENTICATION_FAILED);
    fr_rpc_free(&e->base);
    ar.mechanism = "SCRAM-SHA-256";
    e = kit_call_error(&c, FR_RPC_AUTHENTICATE, &ar.base);
    assert_int_equal(e->code, FIRTH__ERROR_CODE__UNSUPPORTED);
    fr_rpc_free(&e->base);
    ar.mechanism = "PLAIN";
    static const uint8_t right[] = "\0alice\0secret";
    ar.auth_bytes.data = (uint8_t *)right;
    ar.auth_bytes.len = sizeof right - 1;
    Firth__AuthenticateResponse *a =
        (Firth__AuthenticateResponse *)kit_call(&c, FR_RPC_AUTHENTICATE, &ar.base);
    assert_string_equal(a->principal, "alice");
    fr_rpc_free(&a->base);
    fr_rpc_free(kit_call(&c, FR_RPC_LIST_DATABASES, &ld.base));
    kit_close(&c);
    kit_server_stop(&k2);

    /* Without users configured, PLAIN takes anyone (the placeholder). */
    ar.auth_bytes.data = (uint8_t *)wrong;
    ar.auth_bytes.len = sizeof wrong - 1;
    Firth__AuthenticateResponse *any =
        (Firth__AuthenticateResponse *)kit_call(&kc, FR_RPC_AUTHENTICATE, &ar.base);
    assert_string_equal(any->principal, "alice");
    fr_rpc_free(&any->base);
}

/* ---- lake snapshot --------------------------------------------------------------------- */

/* A server without background tiering: lake snapshots come from CALL sys.tier alone. */
static int setup_lake(void **state)
{
    (void)state;
    kit_server_options(&ks, "server_lake");
    fr_error err = {0};
    KIT_CHECK(fr_server_options_set(&ks.opts, "lake.tiering.threads", "0", &err), err);
    kit_server_start(&ks);
    kc = kit_connect(fr_server_address(ks.srv));
    return 0;
}

static void lake_request(const char *db, const char *table, int64_t table_id,
                         Firth__LakeSnapshotRequest *req, Firth__TablePath *path)
{
    *path = kit_path_of(db, table);
    firth__lake_snapshot_request__init(req);
    req->path = path;
    req->table_id = table_id;
}

static Firth__LakeSnapshotResponse *lake_snapshot(const char *db, const char *table,
                                                  int64_t table_id)
{
    Firth__LakeSnapshotRequest req;
    Firth__TablePath path;
    lake_request(db, table, table_id, &req, &path);
    return (Firth__LakeSnapshotResponse *)kit_call(&kc, FR_RPC_LAKE_SNAPSHOT, &req.base);
}

/* The ERROR answer to a lake_snapshot request: its code, and its message holds part. */
static void lake_snapshot_fails(const char *db, const char *table, int64_t table_id, int code,
                                const char *part)
{
    Firth__LakeSnapshotRequest req;
    Firth__TablePath path;
    lake_request(db, table, table_id, &req, &path);
    Firth__Error *e = kit_call_error(&kc, FR_RPC_LAKE_SNAPSHOT, &req.base);
    assert_int_equal(e->code, code);
    if (!strstr(e->message, part)) fail_msg("\"%s\" lacks \"%s\"", e->message, part);
    fr_rpc_free(&e->base);
}

static void test_lake_snapshot(void **state)
{
    (void)state;
    kit_sql(&kc, "CREATE TABLE lk (id INT NOT NULL, dt STRING NOT NULL) PARTITIONED BY (dt) "
                 "WITH ('table.datalake.enabled' = 'true', 'bucket.num' = '3', "
                 "'bucket.key' = 'id');"
                 "CREATE TABLE plain (id INT NOT NULL);"
                 "INSERT INTO lk VALUES (1, 'c'), (2, 'a'), (3, 'b'), (4, 'a'), (5, 'c'), "
                 "(6, 'a'), (7, 'b')");
    /* No round yet: no snapshot, said with -1. */
    Firth__LakeSnapshotResponse *r = lake_snapshot("default", "lk", 0);
    assert_int_equal(r->snapshot_id, -1);
    assert_int_equal(r->committed_at_ms, 0);
    assert_int_equal(r->n_offsets, 0);
    fr_rpc_free(&r->base);

    /* After a round: the newest of the engine's snapshots (they come oldest first), every
     * bucket it records in order, the records of all of them counted. */
    kit_sql(&kc, "CALL sys.tier('default.lk')");
    fr_table *t = NULL;
    fr_error err = {0};
    KIT_CHECK(fr_engine_get_table(fr_server_engine(ks.srv), "default", "lk", &t, &err), err);
    fr_lake_snapshot *snaps = NULL;
    int n = 0;
    KIT_CHECK(fr_table_lake_snapshots(t, &snaps, &n, &err), err);
    assert_int_equal(n, 1);
    const fr_lake_snapshot *newest = &snaps[n - 1];
    r = lake_snapshot("default", "lk", fr_table_id(t));
    assert_int_equal(r->snapshot_id, newest->snapshot_id);
    assert_int_equal(r->committed_at_ms, newest->timestamp_ms);
    assert_int_equal(r->n_offsets, (size_t)newest->noffsets);
    int64_t records = 0;
    for (size_t i = 0; i < r->n_offsets; i++) {
        const Firth__LakeOffset *o = r->offsets[i];
        if (i > 0) {
            const Firth__LakeOffset *p = r->offsets[i - 1];
            assert_true(o->partition_id > p->partition_id ||
                        (o->partition_id == p->partition_id && o->bucket > p->bucket));
        }
        bool found = false;
        for (int k = 0; k < newest->noffsets; k++)
            found = found || (newest->offsets[k].partition_id == o->partition_id &&
                              newest->offsets[k].bucket == o->bucket &&
                              newest->offsets[k].offset == o->offset);
        assert_true(found);
        assert_true(o->partition_id >= 0 && o->bucket >= 0 && o->bucket < 3);
        records += o->offset;
    }
    assert_int_equal(records, 7);
    fr_rpc_free(&r->base);

    /* A table id other than the table's: it was dropped and created again since. */
    lake_snapshot_fails("default", "lk", fr_table_id(t) + 100, FIRTH__ERROR_CODE__NOT_FOUND,
                        "dropped and created again");
    fr_lake_snapshots_free(snaps, n);
    fr_table_release(t);
    lake_snapshot_fails("default", "plain", 0, FIRTH__ERROR_CODE__INVALID,
                        "table default.plain has no lake: create it with "
                        "'table.datalake.enabled' = 'true'");
    lake_snapshot_fails("default", "nope", 0, FIRTH__ERROR_CODE__NOT_FOUND, "nope");
    lake_snapshot_fails("nodb", "lk", 0, FIRTH__ERROR_CODE__NOT_FOUND, "nodb");

    /* Lake metadata that does not parse: CORRUPT, naming the file; the server goes on. */
    char path[1200];
    snprintf(path, sizeof path, "%s/lake/default/lk/metadata/v2.metadata.json", ks.dir);
    KIT_CHECK(fr_write_file_atomic(path, "{", 1, &err), err);
    lake_snapshot_fails("default", "lk", 0, FIRTH__ERROR_CODE__CORRUPT, "v2.metadata.json");
    kit_sql(&kc, "CREATE TABLE lk2 (id INT NOT NULL) WITH ('table.datalake.enabled' = 'true')");
    r = lake_snapshot("default", "lk2", 0);
    assert_int_equal(r->snapshot_id, -1);
    fr_rpc_free(&r->base);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_api_versions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_databases_and_tables, setup, teardown),
        cmocka_unit_test_setup_teardown(test_produce_fetch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fetch_budget_projected, setup, teardown),
        cmocka_unit_test_setup_teardown(test_produce_bad_batches, setup, teardown),
        cmocka_unit_test_setup_teardown(test_put_lookup, setup, teardown),
        cmocka_unit_test_setup_teardown(test_prefix_lookup, setup, teardown),
        cmocka_unit_test_setup_teardown(test_partitions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sql, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http, setup, teardown),
        cmocka_unit_test_setup_teardown(test_authenticate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lake_snapshot, setup_lake, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
