/* fuzz_server_request.c — the server's request handlers on any bytes: the first byte picks
 * an api, the rest is the request body; it is unpacked and checked (src/rpc) and run by the
 * handler against a real server (started once, over a scratch data dir with a log table, a
 * primary-key table and a partitioned table), the way a worker runs it. Whatever the bytes,
 * the handler must answer with one frame (a response or an ERROR) or park a fetch, and
 * never crash, leak, or append a batch that does not decode.
 *
 * The apis that change the catalog (create, drop), execute_sql and authenticate (which need
 * a connection and the loop) are left out. With FIRTH_FUZZ_WRITE_SEEDS=DIR set, the target
 * writes its seed requests (well-formed ones of each api) to DIR first. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "server/server_int.h"

static fr_server *fz_srv;
static char fz_dir[256];

static void fz_stop(void)
{
    fr_server_free(fz_srv);
    fz_srv = NULL;
    fr_error err;
    fr_remove_tree(fz_dir, &err);
}

/* Runs a job on the calling thread as a worker would, and checks what it left. */
static void fz_run(int api, const uint8_t *body, size_t n)
{
    srv_job *j = fr_calloc(1, sizeof *j);
    if (!j) return;
    j->srv = fz_srv;
    j->api = (int16_t)api;
    j->request_id = 1;
    j->received_ns = fr_monotonic_ns();
    fr_buf_init(&j->out);
    if (n > 0) {
        j->body_block = fr_malloc(n);
        if (!j->body_block) {
            fr_free(j);
            return;
        }
        memcpy(j->body_block, body, n);
        j->body = j->body_block;
        j->body_len = n;
    }
    srv_job_run(j);
    if (j->kind == SRV_JOB_PARKED) {
        if (j->out.len != 0) abort();
        srv_fetch_release(j);
    } else {
        fr_rpc_frame f;
        fr_error err;
        /* A response in pieces (a fetch's) is checked as the bytes it puts on the wire. */
        if (j->gout) {
            if (j->out.len != 0) abort();
            for (int i = 0; i < j->gout->niov; i++)
                if (fr_buf_append(&j->out, j->gout->iov[i].iov_base, j->gout->iov[i].iov_len,
                                  &err) < 0)
                    abort();
            if (j->out.len != j->gout->total) abort();
        }
        if (j->kind != SRV_JOB_DONE ||
            fr_rpc_frame_decode(FR_RPC_RESPONSE, j->out.data, j->out.len,
                                FR_RPC_FRAME_BYTES_MAX_DEFAULT, &f, &err) < 0 ||
            f.request_id != 1)
            abort();
        ProtobufCMessage *m = NULL;
        if (fr_rpc_response_unpack((fr_rpc_api)api, &f, &m, &err) < 0) abort();
        if ((f.result == FR_RPC_ERROR) != j->failed) abort();
        fr_rpc_free(m);
    }
    srv_job_free(j);
}

/* ---- the scratch server and its tables --------------------------------------------------- */

static void fz_sql(const char *text)
{
    fr_sql_session *s = NULL;
    fr_error err;
    if (fr_sql_session_new(fr_server_engine(fz_srv), &s, &err) < 0 ||
        fr_sql_execute(s, text, strlen(text), NULL, &err) < 0) {
        fprintf(stderr, "fuzz_server_request: %s\n", err.msg);
        abort();
    }
    fr_sql_session_free(s);
}

static void fz_start(void)
{
    const char *base = getenv("TMPDIR");
    snprintf(fz_dir, sizeof fz_dir, "%s/fuzz-server.XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(fz_dir)) abort();
    fr_server_options o;
    fr_error err;
    if (fr_server_options_default(&o, &err) < 0 ||
        fr_server_options_set(&o, "data.dir", fz_dir, &err) < 0 ||
        fr_server_options_set(&o, "server.listen", "127.0.0.1:0", &err) < 0 ||
        fr_server_options_set(&o, "server.http.listen", "off", &err) < 0 ||
        fr_server_options_set(&o, "server.workers", "2", &err) < 0 ||
        fr_server_options_set(&o, "log.flush", "none", &err) < 0 ||
        fr_server_options_set(&o, "log.level", "off", &err) < 0 ||
        fr_server_start(&o, &fz_srv, &err) < 0) {
        fprintf(stderr, "fuzz_server_request: %s\n", err.msg);
        abort();
    }
    fr_server_options_free(&o);
    fz_sql("CREATE TABLE t (id BIGINT NOT NULL, name STRING, score DOUBLE) "
           "WITH ('bucket.num' = '2');"
           "CREATE TABLE kv (id BIGINT NOT NULL, name STRING, score DOUBLE, "
           "PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket.num' = '2');"
           "CREATE TABLE p (id BIGINT NOT NULL, dt STRING NOT NULL) PARTITIONED BY (dt);"
           "ALTER TABLE p ADD PARTITION (dt = 'a');"
           "INSERT INTO t VALUES (1, 'a', 1.5), (2, NULL, 2.5);"
           "INSERT INTO kv VALUES (1, 'a', 1.5), (2, 'b', 2.5);"
           "SELECT * FROM kv WHERE id = 1");
    /* Registered after RocksDB's own static objects came to life (they are destroyed at
     * exit in the reverse order of their creation), so that the server closes its stores
     * before RocksDB tears down what they use. */
    atexit(fz_stop);
}

/* ---- seeds --------------------------------------------------------------------------- */

static const uint8_t FZ_APIS[] = {
    FR_RPC_API_VERSIONS, FR_RPC_METADATA, FR_RPC_LIST_DATABASES, FR_RPC_LIST_TABLES,
    FR_RPC_GET_TABLE_INFO, FR_RPC_PRODUCE_LOG, FR_RPC_PUT_KV, FR_RPC_FETCH_LOG, FR_RPC_LOOKUP,
    FR_RPC_PREFIX_LOOKUP, FR_RPC_LIST_OFFSETS,
};

/* One record batch of rows (id, name, score) or of the key column alone. */
static void fz_batch(bool keys_only, const uint8_t *change_types, fr_buf *out)
{
    fr_field f[3] = {{.name = "id", .type = fr_type_of(FR_T_BIGINT)},
                     {.name = "name", .type = fr_type_of(FR_T_STRING)},
                     {.name = "score", .type = fr_type_of(FR_T_DOUBLE)}};
    f[0].type.nullable = false;
    fr_schema *s = NULL;
    fr_builder *bld = NULL;
    fr_batch *b = NULL;
    fr_error err;
    int ncols = keys_only ? 1 : 3;
    if (fr_schema_new(f, ncols, 0, &s, &err) < 0 || fr_builder_new(s, &bld, &err) < 0) abort();
    for (int64_t i = 1; i <= 3; i++) {
        fr_builder_append_i64(bld, 0, i, &err);
        if (!keys_only) {
            fr_builder_append_bytes(bld, 1, "xy", 2, &err);
            fr_builder_append_f64(bld, 2, (double)i, &err);
        }
    }
    fr_rb_params p = {.schema_id = 0, .compression = FR_COMPRESSION_NONE,
                      .writer_id = FR_NO_WRITER, .batch_sequence = -1,
                      .change_types = change_types};
    if (fr_builder_finish(bld, &b, &err) < 0 || fr_rb_encode(b, &p, out, &err) < 0) abort();
    fr_batch_free(b);
    fr_builder_free(bld);
    fr_schema_free(s);
}

static void fz_write_seed(const char *dir, int i, int api, const ProtobufCMessage *m)
{
    fr_buf b;
    fr_buf_init(&b);
    fr_error err;
    uint8_t a = 0; /* the index of the api in FZ_APIS, which the first byte selects */
    while (FZ_APIS[a] != api) a++;
    if (fr_buf_append(&b, &a, 1, &err) < 0 || fr_rpc_pack(m, &b, &err) < 0) abort();
    char path[1024];
    snprintf(path, sizeof path, "%s/seed_%02d_%s", dir, i, fr_rpc_api_name(api));
    if (fr_write_file_atomic(path, b.data, b.len, &err) < 0) abort();
    fr_buf_free(&b);
}

static void fz_write_seeds(const char *dir)
{
    int i = 0;
    Firth__TablePath t = FIRTH__TABLE_PATH__INIT, kv = FIRTH__TABLE_PATH__INIT;
    t.database = kv.database = "default";
    t.table = "t";
    kv.table = "kv";
    fr_buf rows, keys, cts;
    fr_buf_init(&rows);
    fr_buf_init(&keys);
    fr_buf_init(&cts);
    fz_batch(false, NULL, &rows);
    fz_batch(true, NULL, &keys);
    static const uint8_t ops[3] = {FR_CHANGE_INSERT, FR_CHANGE_DELETE, FR_CHANGE_UPDATE_AFTER};
    fz_batch(false, ops, &cts);

    Firth__MetadataRequest md = FIRTH__METADATA_REQUEST__INIT;
    fz_write_seed(dir, i++, FR_RPC_METADATA, &md.base);
    Firth__GetTableInfoRequest gi = FIRTH__GET_TABLE_INFO_REQUEST__INIT;
    gi.path = &kv;
    fz_write_seed(dir, i++, FR_RPC_GET_TABLE_INFO, &gi.base);

    Firth__ProduceBucket pb = FIRTH__PRODUCE_BUCKET__INIT;
    Firth__ProduceBucket *pbs[1] = {&pb};
    pb.partition_id = -1;
    pb.bucket = 1;
    pb.records.data = rows.data;
    pb.records.len = rows.len;
    Firth__ProduceLogRequest pr = FIRTH__PRODUCE_LOG_REQUEST__INIT;
    pr.path = &t;
    pr.writer_id = -1;
    pr.buckets = pbs;
    pr.n_buckets = 1;
    fz_write_seed(dir, i++, FR_RPC_PRODUCE_LOG, &pr.base);

    Firth__PutKvBucket kb = FIRTH__PUT_KV_BUCKET__INIT;
    Firth__PutKvBucket *kbs[1] = {&kb};
    kb.partition_id = -1;
    kb.records.data = cts.data;
    kb.records.len = cts.len;
    int32_t targets[2] = {0, 2};
    Firth__PutKvRequest pk = FIRTH__PUT_KV_REQUEST__INIT;
    pk.path = &kv;
    pk.writer_id = -1;
    pk.target_columns = targets;
    pk.n_target_columns = 2;
    pk.buckets = kbs;
    pk.n_buckets = 1;
    fz_write_seed(dir, i++, FR_RPC_PUT_KV, &pk.base);

    Firth__FetchBucket fb = FIRTH__FETCH_BUCKET__INIT;
    Firth__FetchBucket *fbs[1] = {&fb};
    fb.partition_id = -1;
    int32_t proj[2] = {2, 0};
    Firth__FetchTable ft = FIRTH__FETCH_TABLE__INIT;
    Firth__FetchTable *fts[1] = {&ft};
    ft.path = &t;
    ft.projection = proj;
    ft.n_projection = 2;
    ft.filter = "id > 1 AND name = 'a'";
    ft.buckets = fbs;
    ft.n_buckets = 1;
    Firth__FetchLogRequest fr = FIRTH__FETCH_LOG_REQUEST__INIT;
    fr.tables = fts;
    fr.n_tables = 1;
    fz_write_seed(dir, i++, FR_RPC_FETCH_LOG, &fr.base);

    Firth__LookupBucket lb = FIRTH__LOOKUP_BUCKET__INIT;
    Firth__LookupBucket *lbs[1] = {&lb};
    lb.partition_id = -1;
    lb.keys.data = keys.data;
    lb.keys.len = keys.len;
    Firth__LookupRequest lr = FIRTH__LOOKUP_REQUEST__INIT;
    lr.path = &kv;
    lr.projection = proj;
    lr.n_projection = 1;
    lr.buckets = lbs;
    lr.n_buckets = 1;
    fz_write_seed(dir, i++, FR_RPC_LOOKUP, &lr.base);

    Firth__PrefixLookupBucket xb = FIRTH__PREFIX_LOOKUP_BUCKET__INIT;
    Firth__PrefixLookupBucket *xbs[1] = {&xb};
    xb.partition_id = -1;
    xb.prefixes.data = keys.data;
    xb.prefixes.len = keys.len;
    Firth__PrefixLookupRequest xr = FIRTH__PREFIX_LOOKUP_REQUEST__INIT;
    xr.path = &kv;
    xr.buckets = xbs;
    xr.n_buckets = 1;
    fz_write_seed(dir, i++, FR_RPC_PREFIX_LOOKUP, &xr.base);

    Firth__ListOffsetsRequest lo = FIRTH__LIST_OFFSETS_REQUEST__INIT;
    lo.path = &t;
    lo.spec = FIRTH__OFFSET_SPEC__OFFSET_TIMESTAMP;
    lo.timestamp_ms = 1;
    fz_write_seed(dir, i++, FR_RPC_LIST_OFFSETS, &lo.base);
    fr_buf_free(&rows);
    fr_buf_free(&keys);
    fr_buf_free(&cts);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!fz_srv) {
        fz_start();
        const char *seeds = getenv("FIRTH_FUZZ_WRITE_SEEDS");
        if (seeds) fz_write_seeds(seeds);
    }
    if (size < 1) return 0;
    int api = FZ_APIS[data[0] % sizeof FZ_APIS];
    fz_run(api, data + 1, size - 1);
    return 0;
}
