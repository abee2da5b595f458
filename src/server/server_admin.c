/* server_admin.c — the handlers of the catalog and of the small apis: metadata, create,
 * drop and list of databases and tables, table info, list offsets, and authenticate.
 *
 * Each builds its response message in an arena freed once the message is packed, so a
 * handler has one cleanup path whatever it allocated. */
#include "server/server_int.h"

#include <inttypes.h>
#include <strings.h>

#define NEW(a, T) ((T *)srv_zalloc((a), sizeof(T)))
#define NEW_N(a, T, n) ((T *)srv_zalloc((a), sizeof(T) * (size_t)(n)))

static int oom(fr_error *err) { return fr_fail(err, FR_ENOMEM, "out of memory"); }

/* ---- metadata -------------------------------------------------------------------------- */

static int bucket_md(fr_server *s, fr_arena *a, fr_table *t, int64_t pid, int nb, bool skip,
                     Firth__BucketMetadata ***out, fr_error *err)
{
    Firth__BucketMetadata **list = NEW_N(a, Firth__BucketMetadata *, nb);
    if (!list) return oom(err);
    for (int b = 0; b < nb; b++) {
        Firth__BucketMetadata *m = NEW(a, Firth__BucketMetadata);
        if (!m) return oom(err);
        firth__bucket_metadata__init(m);
        m->bucket = b;
        m->leader = s->opts.node_id;
        if (!skip) {
            fr_bucket_stats st;
            FR_TRY(fr_table_bucket_stats(t, pid, b, &st, err));
            m->log_start_offset = st.has_log ? st.log_start_offset : 0;
            m->log_end_offset = st.has_log ? st.log_end_offset : 0;
        }
        list[b] = m;
    }
    *out = list;
    return FR_OK;
}

/* Column names of a list of column indexes. */
static int column_names(fr_arena *a, const fr_schema *schema, const int *cols, int n,
                        char ***out, size_t *count, fr_error *err)
{
    char **names = NEW_N(a, char *, n);
    if (!names) return oom(err);
    for (int i = 0; i < n; i++) {
        names[i] = srv_strdup(a, fr_schema_field(schema, cols[i])->name);
        if (!names[i]) return oom(err);
    }
    *out = names;
    *count = (size_t)n;
    return FR_OK;
}

static int table_md(fr_server *s, fr_arena *a, fr_table *t, bool skip,
                    Firth__TableMetadata *m, fr_error *err)
{
    const fr_schema *schema = fr_table_schema(t);
    m->table_id = fr_table_id(t);
    m->schema_id = fr_schema_id(schema);
    m->num_buckets = fr_table_num_buckets(t);
    m->has_primary_key = fr_table_is_pk(t);
    int npart = 0;
    const int *part = fr_table_partition_keys(t, &npart);
    FR_TRY(column_names(a, schema, part, npart, &m->partition_keys, &m->n_partition_keys, err));
    if (npart == 0) {
        m->n_buckets = (size_t)m->num_buckets;
        return bucket_md(s, a, t, -1, m->num_buckets, skip, &m->buckets, err);
    }
    fr_partition *parts = NULL;
    int n = 0;
    FR_TRY(fr_table_list_partitions(t, &parts, &n, err));
    int rc = FR_OK;
    m->partitions = NEW_N(a, Firth__PartitionMetadata *, n);
    if (!m->partitions) rc = oom(err);
    for (int i = 0; rc == FR_OK && i < n; i++) {
        Firth__PartitionMetadata *pm = NEW(a, Firth__PartitionMetadata);
        char **values = NEW_N(a, char *, parts[i].nvalues);
        if (!pm || !values) {
            rc = oom(err);
            break;
        }
        firth__partition_metadata__init(pm);
        pm->partition_id = parts[i].id;
        pm->name = srv_strdup(a, parts[i].name);
        for (int k = 0; k < parts[i].nvalues; k++) {
            values[k] = srv_strdup(a, parts[i].values[k]);
            if (!values[k]) rc = oom(err);
        }
        pm->values = values;
        pm->n_values = (size_t)parts[i].nvalues;
        if (rc == FR_OK && !pm->name) rc = oom(err);
        if (rc == FR_OK)
            rc = bucket_md(s, a, t, parts[i].id, m->num_buckets, skip, &pm->buckets, err);
        pm->n_buckets = (size_t)m->num_buckets;
        m->partitions[i] = pm;
        m->n_partitions = (size_t)i + 1;
    }
    fr_partitions_free(parts, n);
    return rc;
}

/* Every table of every database, as paths. */
static int all_tables(fr_server *s, fr_arena *a, Firth__TablePath ***out, size_t *count,
                      fr_error *err)
{
    char **dbs = NULL;
    int ndbs = 0;
    FR_TRY(fr_engine_list_databases(s->engine, &dbs, &ndbs, err));
    size_t n = 0, cap = 0;
    Firth__TablePath **paths = NULL;
    int rc = FR_OK;
    for (int d = 0; rc == FR_OK && d < ndbs; d++) {
        char **names = NULL;
        int nt = 0;
        rc = fr_engine_list_tables(s->engine, dbs[d], &names, &nt, err);
        if (rc == FR_ENOTFOUND) { /* dropped meanwhile */
            rc = FR_OK;
            continue;
        }
        for (int i = 0; rc == FR_OK && i < nt; i++) {
            if (n == cap) {
                size_t ncap = cap ? cap * 2 : 16;
                Firth__TablePath **np = NEW_N(a, Firth__TablePath *, ncap);
                if (!np) {
                    rc = oom(err);
                    break;
                }
                if (n) memcpy(np, paths, n * sizeof *np);
                paths = np;
                cap = ncap;
            }
            Firth__TablePath *p = NEW(a, Firth__TablePath);
            if (!p) {
                rc = oom(err);
                break;
            }
            firth__table_path__init(p);
            p->database = srv_strdup(a, dbs[d]);
            p->table = srv_strdup(a, names[i]);
            if (!p->database || !p->table) rc = oom(err);
            paths[n++] = p;
        }
        fr_names_free(names, nt);
    }
    fr_names_free(dbs, ndbs);
    *out = paths;
    *count = n;
    return rc;
}

static int node_of(fr_server *s, fr_arena *a, Firth__Node *node, fr_error *err)
{
    char host[FR_SERVER_ADDRESS_BYTES_MAX];
    int port = 0;
    FR_TRY(fr_server_parse_address(s->address, host, sizeof host, &port, err));
    firth__node__init(node);
    node->node_id = s->opts.node_id;
    node->host = srv_strdup(a, host);
    node->port = port;
    return node->host ? FR_OK : oom(err);
}

int srv_handle_metadata(fr_server *s, srv_job *j, fr_error *err)
{
    Firth__MetadataRequest *req = (Firth__MetadataRequest *)j->request;
    fr_arena *a = fr_arena_new(64 << 10);
    if (!a) return oom(err);
    Firth__MetadataResponse resp = FIRTH__METADATA_RESPONSE__INIT;
    Firth__Node node;
    Firth__Node *nodes[1] = {&node};
    Firth__TablePath **paths = req->tables;
    size_t npaths = req->n_tables;
    int rc;
    FR_GOTO(node_of(s, a, &node, err));
    resp.nodes = nodes;
    resp.n_nodes = 1;
    if (npaths == 0) FR_GOTO(all_tables(s, a, &paths, &npaths, err));
    resp.tables = NEW_N(a, Firth__TableMetadata *, npaths);
    if (!resp.tables) FR_GOTO(oom(err));
    for (size_t i = 0; i < npaths; i++) {
        Firth__TableMetadata *m = NEW(a, Firth__TableMetadata);
        if (!m) FR_GOTO(oom(err));
        firth__table_metadata__init(m);
        m->path = paths[i];
        resp.tables[i] = m;
        resp.n_tables = i + 1;
        fr_table *t = NULL;
        fr_error terr = {0};
        int trc = srv_get_table(s, paths[i], 0, &t, &terr);
        if (trc == FR_OK) trc = table_md(s, a, t, req->skip_offsets, m, &terr);
        fr_table_release(t);
        if (trc == FR_ENOMEM) FR_GOTO(oom(err));
        if (trc < 0) {
            /* Only the error: a table half described would mislead. */
            firth__table_metadata__init(m);
            m->path = paths[i];
            m->error = srv_item_error(a, &terr);
            if (!m->error) FR_GOTO(oom(err));
        }
    }
    rc = srv_respond(j, FR_RPC_SUCCESS, &resp.base, err);
fail:
    fr_arena_free(a);
    return rc;
}

/* ---- databases ------------------------------------------------------------------------- */

int srv_handle_create_database(fr_server *s, srv_job *j, fr_error *err)
{
    Firth__CreateDatabaseRequest *req = (Firth__CreateDatabaseRequest *)j->request;
    FR_TRY(fr_engine_create_database(s->engine, req->database, req->if_not_exists, err));
    Firth__CreateDatabaseResponse resp = FIRTH__CREATE_DATABASE_RESPONSE__INIT;
    return srv_respond(j, FR_RPC_SUCCESS, &resp.base, err);
}

int srv_handle_drop_database(fr_server *s, srv_job *j, fr_error *err)
{
    Firth__DropDatabaseRequest *req = (Firth__DropDatabaseRequest *)j->request;
    FR_TRY(fr_engine_drop_database(s->engine, req->database, req->if_exists, req->cascade, err));
    Firth__DropDatabaseResponse resp = FIRTH__DROP_DATABASE_RESPONSE__INIT;
    return srv_respond(j, FR_RPC_SUCCESS, &resp.base, err);
}

int srv_handle_list_databases(fr_server *s, srv_job *j, fr_error *err)
{
    char **names = NULL;
    int n = 0;
    FR_TRY(fr_engine_list_databases(s->engine, &names, &n, err));
    Firth__ListDatabasesResponse resp = FIRTH__LIST_DATABASES_RESPONSE__INIT;
    resp.databases = names;
    resp.n_databases = (size_t)n;
    int rc = srv_respond(j, FR_RPC_SUCCESS, &resp.base, err);
    fr_names_free(names, n);
    return rc;
}

/* ---- tables ---------------------------------------------------------------------------- */

int srv_handle_create_table(fr_server *s, srv_job *j, fr_error *err)
{
    Firth__CreateTableRequest *req = (Firth__CreateTableRequest *)j->request;
    FR_CHECK(req->path && req->schema_json, FR_EINVAL, err, "create_table: no table or schema");
    fr_schema *schema = NULL;
    FR_TRY(fr_schema_from_json(req->schema_json, strlen(req->schema_json), &schema, err));
    fr_option *opts = fr_calloc(req->n_options + 1, sizeof *opts);
    int rc;
    if (!opts) FR_GOTO(oom(err));
    for (size_t i = 0; i < req->n_options; i++) {
        opts[i].key = req->options[i]->key;
        opts[i].value = req->options[i]->value ? req->options[i]->value : "";
    }
    fr_table_spec spec = {
        .db = req->path->database,
        .name = req->path->table,
        .schema = schema,
        .options = opts,
        .noptions = (int)req->n_options,
        .primary_key = (const char *const *)req->primary_key,
        .nprimary_key = (int)req->n_primary_key,
        .partition_keys = (const char *const *)req->partition_keys,
        .npartition_keys = (int)req->n_partition_keys,
    };
    FR_GOTO(fr_engine_create_table(s->engine, &spec, req->if_not_exists, err));
    fr_table *t = NULL;
    FR_GOTO(fr_engine_get_table(s->engine, req->path->database, req->path->table, &t, err));
    Firth__CreateTableResponse resp = FIRTH__CREATE_TABLE_RESPONSE__INIT;
    resp.table_id = fr_table_id(t);
    fr_table_release(t);
    rc = srv_respond(j, FR_RPC_SUCCESS, &resp.base, err);
fail:
    fr_free(opts);
    fr_schema_free(schema);
    return rc;
}

int srv_handle_drop_table(fr_server *s, srv_job *j, fr_error *err)
{
    Firth__DropTableRequest *req = (Firth__DropTableRequest *)j->request;
    FR_CHECK(req->path, FR_EINVAL, err, "drop_table: no table named");
    FR_TRY(fr_engine_drop_table(s->engine, req->path->database, req->path->table,
                                req->if_exists, err));
    Firth__DropTableResponse resp = FIRTH__DROP_TABLE_RESPONSE__INIT;
    return srv_respond(j, FR_RPC_SUCCESS, &resp.base, err);
}

int srv_handle_list_tables(fr_server *s, srv_job *j, fr_error *err)
{
    Firth__ListTablesRequest *req = (Firth__ListTablesRequest *)j->request;
    char **names = NULL;
    int n = 0;
    FR_TRY(fr_engine_list_tables(s->engine, req->database, &names, &n, err));
    Firth__ListTablesResponse resp = FIRTH__LIST_TABLES_RESPONSE__INIT;
    resp.tables = names;
    resp.n_tables = (size_t)n;
    int rc = srv_respond(j, FR_RPC_SUCCESS, &resp.base, err);
    fr_names_free(names, n);
    return rc;
}

/* created_ms from the table's JSON (the engine keeps it there). */
int srv_handle_get_table_info(fr_server *s, srv_job *j, fr_error *err)
{
    Firth__GetTableInfoRequest *req = (Firth__GetTableInfoRequest *)j->request;
    fr_table *t = NULL;
    FR_TRY(srv_get_table(s, req->path, 0, &t, err));
    fr_arena *a = fr_arena_new(16 << 10);
    char *schema_json = NULL, *table_json = NULL;
    int rc;
    if (!a) FR_GOTO(oom(err));
    const fr_schema *schema = fr_table_schema(t);
    FR_GOTO(fr_schema_to_json(schema, &schema_json, err));
    FR_GOTO(fr_table_to_json(t, &table_json, err));
    Firth__GetTableInfoResponse resp = FIRTH__GET_TABLE_INFO_RESPONSE__INIT;
    Firth__TablePath path = FIRTH__TABLE_PATH__INIT;
    path.database = (char *)fr_table_db(t);
    path.table = (char *)fr_table_name(t);
    resp.path = &path;
    resp.table_id = fr_table_id(t);
    resp.schema_id = fr_schema_id(schema);
    resp.schema_json = schema_json;
    resp.table_json = table_json;
    int n = 0;
    const int *cols = fr_table_primary_key(t, &n);
    FR_GOTO(column_names(a, schema, cols, n, &resp.primary_key, &resp.n_primary_key, err));
    cols = fr_table_partition_keys(t, &n);
    FR_GOTO(column_names(a, schema, cols, n, &resp.partition_keys, &resp.n_partition_keys, err));
    cols = fr_table_bucket_key(t, &n);
    FR_GOTO(column_names(a, schema, cols, n, &resp.bucket_keys, &resp.n_bucket_keys, err));
    resp.num_buckets = fr_table_num_buckets(t);
    int nopt = fr_table_num_options(t);
    resp.options = NEW_N(a, Firth__TableOption *, nopt);
    if (!resp.options) FR_GOTO(oom(err));
    for (int i = 0; i < nopt; i++) {
        Firth__TableOption *o = NEW(a, Firth__TableOption);
        if (!o) FR_GOTO(oom(err));
        firth__table_option__init(o);
        const char *k, *v;
        fr_table_option(t, i, &k, &v);
        o->key = (char *)k;
        o->value = (char *)v;
        resp.options[i] = o;
    }
    resp.n_options = (size_t)nopt;
    resp.created_ms = fr_table_created_ms(t);
    rc = srv_respond(j, FR_RPC_SUCCESS, &resp.base, err);
fail:
    fr_free(schema_json);
    fr_free(table_json);
    fr_arena_free(a);
    fr_table_release(t);
    return rc;
}

/* ---- list offsets ---------------------------------------------------------------------- */

/* The log of a bucket named by a request: checks the bucket against the table and the
 * partition id against its partitioning first, so the error says which is wrong. */
int srv_bucket_log(fr_table *t, int64_t pid, int bucket, fr_log **out, fr_error *err)
{
    *out = NULL;
    int npart = 0;
    fr_table_partition_keys(t, &npart);
    int nb = fr_table_num_buckets(t);
    FR_CHECK(bucket >= 0 && bucket < nb, FR_ERANGE, err, "table %s.%s has buckets 0 to %d, "
             "not %d", fr_table_db(t), fr_table_name(t), nb - 1, bucket);
    FR_CHECK(npart > 0 || pid == -1, FR_EINVAL, err, "table %s.%s has no partitions: give "
             "partition id -1, not %" PRId64, fr_table_db(t), fr_table_name(t), pid);
    FR_CHECK(npart == 0 || pid >= 0, FR_EINVAL, err, "table %s.%s is partitioned: give a "
             "partition id, not -1", fr_table_db(t), fr_table_name(t));
    *out = fr_table_partition_log(t, pid, bucket);
    FR_CHECK(*out, FR_ENOTFOUND, err, "table %s.%s: partition %" PRId64 " bucket %d does "
             "not exist or its log cannot be opened", fr_table_db(t), fr_table_name(t), pid,
             bucket);
    return FR_OK;
}

static int offset_of(fr_log *log, Firth__OffsetSpec spec, int64_t ts, int64_t *out,
                     fr_error *err)
{
    switch (spec) {
    case FIRTH__OFFSET_SPEC__OFFSET_EARLIEST: *out = fr_log_start_offset(log); return FR_OK;
    case FIRTH__OFFSET_SPEC__OFFSET_LATEST: *out = fr_log_end_offset(log); return FR_OK;
    case FIRTH__OFFSET_SPEC__OFFSET_TIMESTAMP: return fr_log_offset_for_time(log, ts, out, err);
    default: break;
    }
    return fr_fail(err, FR_EINVAL, "list_offsets: unknown offset spec %d", (int)spec);
}

/* Every bucket of every partition (or of the table), as refs in the arena. */
static int all_buckets(fr_arena *a, fr_table *t, Firth__BucketRef ***out, size_t *count,
                       fr_error *err)
{
    int nb = fr_table_num_buckets(t), npart = 0;
    fr_table_partition_keys(t, &npart);
    fr_partition *parts = NULL;
    int np = 0;
    if (npart > 0) FR_TRY(fr_table_list_partitions(t, &parts, &np, err));
    int groups = npart > 0 ? np : 1;
    size_t n = (size_t)groups * (size_t)nb;
    Firth__BucketRef **refs = NEW_N(a, Firth__BucketRef *, n);
    int rc = refs ? FR_OK : oom(err);
    for (int g = 0; rc == FR_OK && g < groups; g++) {
        for (int b = 0; b < nb; b++) {
            Firth__BucketRef *r = NEW(a, Firth__BucketRef);
            if (!r) {
                rc = oom(err);
                break;
            }
            firth__bucket_ref__init(r);
            r->partition_id = npart > 0 ? parts[g].id : -1;
            r->bucket = b;
            refs[(size_t)g * (size_t)nb + (size_t)b] = r;
        }
    }
    fr_partitions_free(parts, np);
    *out = refs;
    *count = n;
    return rc;
}

int srv_handle_list_offsets(fr_server *s, srv_job *j, fr_error *err)
{
    Firth__ListOffsetsRequest *req = (Firth__ListOffsetsRequest *)j->request;
    fr_table *t = NULL;
    FR_TRY(srv_get_table(s, req->path, req->table_id, &t, err));
    fr_arena *a = fr_arena_new(16 << 10);
    int rc;
    if (!a) FR_GOTO(oom(err));
    Firth__BucketRef **refs = req->buckets;
    size_t n = req->n_buckets;
    if (n == 0) FR_GOTO(all_buckets(a, t, &refs, &n, err));
    Firth__ListOffsetsResponse resp = FIRTH__LIST_OFFSETS_RESPONSE__INIT;
    resp.buckets = NEW_N(a, Firth__BucketOffset *, n);
    if (!resp.buckets) FR_GOTO(oom(err));
    for (size_t i = 0; i < n; i++) {
        Firth__BucketOffset *o = NEW(a, Firth__BucketOffset);
        if (!o) FR_GOTO(oom(err));
        firth__bucket_offset__init(o);
        o->partition_id = refs[i]->partition_id;
        o->bucket = refs[i]->bucket;
        fr_error berr = {0};
        fr_log *log = NULL;
        int brc = srv_bucket_log(t, o->partition_id, o->bucket, &log, &berr);
        if (brc == FR_OK) brc = offset_of(log, req->spec, req->timestamp_ms, &o->offset, &berr);
        if (brc < 0) {
            o->offset = -1;
            o->error = srv_item_error(a, &berr);
            if (!o->error) FR_GOTO(oom(err));
        }
        resp.buckets[i] = o;
    }
    resp.n_buckets = n;
    rc = srv_respond(j, FR_RPC_SUCCESS, &resp.base, err);
fail:
    fr_arena_free(a);
    fr_table_release(t);
    return rc;
}

/* ---- authenticate ---------------------------------------------------------------------- */

/* Compares without stopping at the first difference, so that timing tells nothing. */
static bool same_secret(const char *a, size_t an, const char *b, size_t bn)
{
    unsigned char diff = an != bn;
    size_t n = an < bn ? an : bn;
    for (size_t i = 0; i < n; i++) diff |= (unsigned char)(a[i] ^ b[i]);
    return diff == 0;
}

/* Whether name:password is in "name:password,..." */
static bool user_ok(const char *users, const char *name, size_t nlen, const char *pw,
                    size_t pwlen)
{
    const char *p = users;
    bool ok = false;
    while (*p) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        const char *colon = memchr(p, ':', n);
        if (colon) {
            size_t ul = (size_t)(colon - p);
            if (ul == nlen && memcmp(p, name, nlen) == 0 &&
                same_secret(colon + 1, n - ul - 1, pw, pwlen))
                ok = true;
        }
        p += n;
        if (*p == ',') p++;
    }
    return ok;
}

int srv_handle_authenticate(fr_server *s, srv_conn *c, srv_job *j, fr_error *err)
{
    Firth__AuthenticateRequest *req = (Firth__AuthenticateRequest *)j->request;
    FR_CHECK(req->mechanism && strcasecmp(req->mechanism, "PLAIN") == 0, FR_EUNSUPPORTED, err,
             "authenticate: mechanism '%s' is not offered; use PLAIN",
             req->mechanism ? req->mechanism : "");
    /* PLAIN (RFC 4616): authzid NUL authcid NUL password. */
    const char *p = (const char *)req->auth_bytes.data;
    size_t n = req->auth_bytes.len;
    const char *nul1 = n ? memchr(p, '\0', n) : NULL;
    const char *nul2 = nul1 ? memchr(nul1 + 1, '\0', n - (size_t)(nul1 + 1 - p)) : NULL;
    fr_error why = {0};
    if (!nul2) {
        fr_fail(&why, FR_EINVAL, "authenticate: PLAIN bytes must be authzid NUL authcid NUL "
                "password");
    } else {
        const char *name = nul1 + 1;
        size_t nlen = (size_t)(nul2 - name);
        const char *pw = nul2 + 1;
        size_t pwlen = n - (size_t)(pw - p);
        if (nlen == 0 || nlen > FR_RPC_NAME_BYTES_MAX) {
            fr_fail(&why, FR_EINVAL, "authenticate: the user name is empty or too long");
        } else if (s->opts.auth_users && !user_ok(s->opts.auth_users, name, nlen, pw, pwlen)) {
            fr_fail(&why, FR_EINVAL, "authenticate: wrong user name or password");
        } else {
            char principal[FR_RPC_NAME_BYTES_MAX + 1];
            memcpy(principal, name, nlen);
            principal[nlen] = '\0';
            srv_conn_set_principal(c, principal);
            Firth__AuthenticateResponse resp = FIRTH__AUTHENTICATE_RESPONSE__INIT;
            resp.principal = principal;
            return srv_respond(j, FR_RPC_SUCCESS, &resp.base, err);
        }
    }
    FR_WARN("connection from %s: authentication failed: %s", srv_conn_peer(c), why.msg);
    fr_error e2;
    FR_TRY(fr_rpc_write_error(&j->out, j->request_id, FIRTH__ERROR_CODE__AUTHENTICATION_FAILED,
                              &why, &e2) == FR_OK ? FR_OK : fr_fail(err, e2.code, "%s", e2.msg));
    j->failed = true;
    return FR_OK;
}
