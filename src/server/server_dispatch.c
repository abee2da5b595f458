/* server_dispatch.c — running one request: unpacking its body (src/rpc checks the api, the
 * version, the protobuf and the limits), calling the api's handler, and turning a failure
 * into an ERROR frame; plus what every handler shares (responses, tables by name, per-item
 * errors) and api_versions.
 *
 * A request that fails as a whole gets one ERROR frame and nothing else: a handler's
 * partial output is dropped. Bodies that cannot be read (malformed protobuf, unknown api,
 * unsupported version) are logged as warnings with the peer's address. */
#include "server/server_int.h"

#include <inttypes.h>
#include <stdio.h>

void *srv_zalloc(fr_arena *a, size_t n)
{
    void *p = fr_arena_alloc(a, n ? n : 1);
    if (p) memset(p, 0, n ? n : 1);
    return p;
}

char *srv_strdup(fr_arena *a, const char *s)
{
    return fr_arena_strndup(a, s, strlen(s));
}

int srv_respond(srv_job *j, fr_rpc_result result, const ProtobufCMessage *body, fr_error *err)
{
    return fr_rpc_write_response(&j->out, result, j->request_id, body,
                                 j->srv->opts.frame_bytes_max, err);
}

void srv_bufs_give(fr_server *s, fr_buf *bufs, int n)
{
    for (int i = 0; i < n; i++) fr_bufpool_give(s->bufs, &bufs[i]);
    fr_free(bufs);
}

void srv_job_drop_gather(srv_job *j)
{
    if (j->gout) fr_rpc_gather_free(j->gout);
    fr_free(j->gout);
    srv_bufs_give(j->srv, j->kept, j->nkept);
    j->gout = NULL;
    j->kept = NULL;
    j->nkept = 0;
}

/* Whether every piece g references lies in kept: other memory (a long string of the
 * request, say) may not outlive the job. */
static bool gather_within(const fr_rpc_gather *g, const fr_buf *kept, int nkept)
{
    for (int i = 0; i < g->nparts; i++) {
        const fr_rpc_gather_part_t *pt = &g->parts[i];
        bool in = !pt->ext;
        for (int k = 0; k < nkept && !in; k++)
            in = kept[k].data && pt->ext >= kept[k].data &&
                 pt->ext + pt->len <= kept[k].data + kept[k].len;
        if (!in) return false;
    }
    return true;
}

int srv_respond_gather(srv_job *j, const ProtobufCMessage *body, fr_buf *kept, int nkept,
                       fr_error *err)
{
    srv_job_drop_gather(j);
    j->kept = kept;
    j->nkept = nkept;
    j->gout = fr_malloc(sizeof *j->gout);
    FR_CHECK(j->gout, FR_ENOMEM, err, "out of memory writing a response");
    fr_rpc_gather_init(j->gout);
    int rc = fr_rpc_write_response_gather(j->gout, FR_RPC_SUCCESS, j->request_id, body,
                                          j->srv->opts.frame_bytes_max, err);
    if (rc == 0 && !gather_within(j->gout, kept, nkept)) {
        fr_rpc_gather_free(j->gout);
        fr_free(j->gout);
        j->gout = NULL;
        rc = srv_respond(j, FR_RPC_SUCCESS, body, err); /* copied whole instead */
    }
    if (rc < 0) srv_job_drop_gather(j);
    return rc;
}

static void respond_error(srv_job *j, Firth__ErrorCode code, const fr_error *failure)
{
    srv_job_drop_gather(j);
    fr_buf_reset(&j->out);
    fr_error e2;
    if (fr_rpc_write_error(&j->out, j->request_id, code, failure, &e2) < 0)
        FR_ERROR("request %d: cannot write its error frame: %s", (int)j->request_id, e2.msg);
    j->failed = true;
}

int srv_get_table(fr_server *s, const Firth__TablePath *path, int64_t table_id,
                  fr_table **out, fr_error *err)
{
    *out = NULL;
    FR_CHECK(path && path->database && path->table, FR_EINVAL, err, "no table named");
    fr_table *t = NULL;
    FR_TRY(fr_engine_get_table(s->engine, path->database, path->table, &t, err));
    if (table_id != 0 && fr_table_id(t) != table_id) {
        int64_t id = fr_table_id(t);
        fr_table_release(t);
        return fr_fail(err, FR_ENOTFOUND, "table %s.%s has id %" PRId64 ", not %" PRId64
                       ": it was dropped and created again; read its metadata again",
                       path->database, path->table, id, table_id);
    }
    *out = t;
    return FR_OK;
}

Firth__Error *srv_item_error(fr_arena *a, const fr_error *err)
{
    Firth__Error *e = srv_zalloc(a, sizeof *e);
    fr_error *copy = fr_arena_alloc(a, sizeof *copy);
    if (!e || !copy) return NULL;
    *copy = *err;
    firth__error__init(e);
    fr_rpc_error_set(e, copy);
    return e;
}

/* ---- api_versions ---------------------------------------------------------------------- */

int srv_api_versions(fr_server *s, srv_job *j, fr_error *err)
{
    Firth__ApiVersionRange ranges[FR_RPC_API_COUNT];
    Firth__ApiVersionRange *list[FR_RPC_API_COUNT];
    int n = 0;
    for (int k = 0; k < FR_RPC_API_COUNT; k++) {
        const fr_rpc_api_info *info = fr_rpc_api_lookup(k);
        if (!info) continue;
        firth__api_version_range__init(&ranges[n]);
        ranges[n].api_key = info->key;
        ranges[n].min_version = info->min_version;
        ranges[n].max_version = info->max_version;
        ranges[n].name = (char *)info->name;
        list[n] = &ranges[n];
        n++;
    }
    Firth__ApiVersionsResponse resp = FIRTH__API_VERSIONS_RESPONSE__INIT;
    resp.n_apis = (size_t)n;
    resp.apis = list;
    resp.server_software = (char *)SRV_SOFTWARE;
    resp.frame_bytes_max = s->opts.frame_bytes_max;
    resp.in_flight_max = (int32_t)s->opts.inflight_max;
    resp.authentication_required = s->opts.auth_required;
    resp.node_id = s->opts.node_id;
    Firth__ApiVersionsRequest *req = (Firth__ApiVersionsRequest *)j->request;
    if (req->client_software && req->client_software[0])
        FR_DEBUG("client software: %s", req->client_software);
    return srv_respond(j, FR_RPC_SUCCESS, &resp.base, err);
}

/* ---- running a job --------------------------------------------------------------------- */

static int run_handler(fr_server *s, srv_job *j, fr_error *err)
{
    switch ((fr_rpc_api)j->api) {
    case FR_RPC_API_VERSIONS: return srv_api_versions(s, j, err);
    case FR_RPC_METADATA: return srv_handle_metadata(s, j, err);
    case FR_RPC_CREATE_DATABASE: return srv_handle_create_database(s, j, err);
    case FR_RPC_DROP_DATABASE: return srv_handle_drop_database(s, j, err);
    case FR_RPC_LIST_DATABASES: return srv_handle_list_databases(s, j, err);
    case FR_RPC_CREATE_TABLE: return srv_handle_create_table(s, j, err);
    case FR_RPC_DROP_TABLE: return srv_handle_drop_table(s, j, err);
    case FR_RPC_LIST_TABLES: return srv_handle_list_tables(s, j, err);
    case FR_RPC_GET_TABLE_INFO: return srv_handle_get_table_info(s, j, err);
    case FR_RPC_PRODUCE_LOG: return srv_handle_produce_log(s, j, err);
    case FR_RPC_PUT_KV: return srv_handle_put_kv(s, j, err);
    case FR_RPC_FETCH_LOG: return srv_handle_fetch_log(s, j, err);
    case FR_RPC_LOOKUP: return srv_handle_lookup(s, j, err);
    case FR_RPC_PREFIX_LOOKUP: return srv_handle_prefix_lookup(s, j, err);
    case FR_RPC_LIST_OFFSETS: return srv_handle_list_offsets(s, j, err);
    case FR_RPC_EXECUTE_SQL: return srv_handle_execute_sql(s, j, err);
    case FR_RPC_AUTHENTICATE: return srv_handle_authenticate(s, j->conn, j, err);
    case FR_RPC_LAKE_SNAPSHOT: return srv_handle_lake_snapshot(s, j, err);
    case FR_RPC_API_COUNT: break;
    }
    return fr_fail(err, FR_EUNSUPPORTED, "api %d has no handler", (int)j->api);
}

void srv_job_run(srv_job *j)
{
    fr_server *s = j->srv;
    fr_error err = {0};
    j->kind = SRV_JOB_DONE;
    if (j->cancelled) { /* a parked fetch whose connection is gone */
        srv_fetch_release(j);
        return;
    }
    if (!j->request) {
        fr_rpc_frame f = {
            .direction = FR_RPC_REQUEST,
            .api_key = j->api,
            .api_version = j->version,
            .request_id = j->request_id,
            .body = j->body,
            .body_len = j->body_len,
        };
        Firth__ErrorCode code = FIRTH__ERROR_CODE__NONE;
        /* produce_log's and put_kv's record batches stay in the body (no copy): it lives
         * as long as the request. */
        bool in_place = fr_rpc_request_in_place(j->api);
        int rc = in_place ? fr_rpc_request_unpack_in_place(&f, &j->request, &code, &err)
                          : fr_rpc_request_unpack(&f, &j->request, &code, &err);
        if (rc < 0) {
            bool bad = code == FIRTH__ERROR_CODE__UNKNOWN_API ||
                       code == FIRTH__ERROR_CODE__UNSUPPORTED_VERSION || rc == FR_ECORRUPT;
            fr_logmsg(bad ? FR_LOG_WARN : FR_LOG_DEBUG, "connection from %s: request %d: %s",
                      srv_conn_peer(j->conn), (int)j->request_id, err.msg);
            if (bad) atomic_fetch_add(&s->metrics->bad_frames, 1);
            respond_error(j, code, &err);
            return;
        }
        if (!in_place) {
            fr_free(j->body_block);
            j->body_block = NULL;
            j->body = NULL;
            j->body_len = 0;
        }
    }
    int rc = run_handler(s, j, &err);
    if (rc == SRV_PARK) {
        fr_buf_reset(&j->out);
        j->kind = SRV_JOB_PARKED;
        return;
    }
    if (rc < 0) {
        if (rc == FR_EIO || rc == FR_ENOSPC || rc == FR_ENOMEM)
            FR_ERROR("%s request %d: %s", fr_rpc_api_name(j->api), (int)j->request_id, err.msg);
        respond_error(j, FIRTH__ERROR_CODE__NONE, &err);
    }
}
