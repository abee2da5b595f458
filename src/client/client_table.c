/* client_table.c — what the client knows of one table, embedded or remote: names, id,
 * current schema, buckets and keys, compression, and (remote, partitioned) the partitions
 * by name, refreshed from the server when a name is not known yet.
 *
 * Remote tables are described by GET_TABLE_INFO once, when opened: a writer or scanner that
 * outlives an ALTER keeps the description it opened with (the server refuses batches of a
 * schema it does not expect, which says so). One-shot calls take the descriptions from a
 * small cache per client (fr_ctable_get): entries are shared by reference count, most
 * recently used first, and forgotten when a call on them fails. */
#include "client/client_int.h"

#include <jansson.h>
#include <stdio.h>
#include <strings.h>

/* ---- names ------------------------------------------------------------------------------ */

/* One part of a table name: a bare name (lower-cased) or a `quoted` one. */
static int name_part(const char *p, size_t n, char *out, fr_error *err)
{
    if (n >= 2 && p[0] == '`' && p[n - 1] == '`') {
        p++;
        n -= 2;
        FR_CHECK(n > 0 && n <= FR_NAME_BYTES_MAX, FR_EINVAL, err,
                 "a quoted name of %zu bytes (1 to %d)", n, FR_NAME_BYTES_MAX);
        memcpy(out, p, n);
        out[n] = '\0';
        return FR_OK;
    }
    FR_CHECK(n > 0 && n <= FR_NAME_BYTES_MAX, FR_EINVAL, err,
             "a name of %zu bytes (1 to %d)", n, FR_NAME_BYTES_MAX);
    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '_';
        FR_CHECK(ok, FR_EINVAL, err, "'%.*s' is not a valid name (letters, digits and _)",
                 (int)(n < 80 ? n : 80), p);
        out[i] = (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
    }
    out[n] = '\0';
    return FR_OK;
}

void fr_client_database(firth_client *c, char *out)
{
    pthread_mutex_lock(&c->db_mu);
    snprintf(out, FR_NAME_BYTES_MAX + 1, "%s", c->database);
    pthread_mutex_unlock(&c->db_mu);
}

int fr_client_resolve(firth_client *c, const char *name, char *db, char *t, fr_error *err)
{
    FR_CHECK(name && *name, FR_EINVAL, err, "no table name given");
    if (!c->remote)
        return fr_sql_resolve_table(c->session, name, db, FR_NAME_BYTES_MAX + 1, t,
                                    FR_NAME_BYTES_MAX + 1, err);
    /* The dot that separates database and table, outside backquotes. */
    const char *dot = NULL;
    bool quoted = false;
    for (const char *p = name; *p; p++) {
        if (*p == '`') quoted = !quoted;
        else if (*p == '.' && !quoted && !dot) dot = p;
    }
    if (!dot) {
        fr_client_database(c, db);
        return name_part(name, strlen(name), t, err);
    }
    FR_TRY(name_part(name, (size_t)(dot - name), db, err));
    return name_part(dot + 1, strlen(dot + 1), t, err);
}

/* ---- columns ------------------------------------------------------------------------------ */

int fr_ctable_columns(const fr_ctable *t, const char *text, int *cols, int *ncols,
                      fr_error *err)
{
    int nf = fr_schema_num_fields(t->schema), n = 0;
    for (const char *p = text;;) {
        const char *comma = strchr(p, ',');
        const char *e = comma ? comma : p + strlen(p);
        while (p < e && (*p == ' ' || *p == '\t')) p++;
        while (e > p && (e[-1] == ' ' || e[-1] == '\t')) e--;
        FR_CHECK(e > p && e - p <= FR_NAME_BYTES_MAX, FR_EINVAL, err,
                 "the column list '%.100s' has an empty or too long name", text);
        char name[FR_NAME_BYTES_MAX + 1];
        memcpy(name, p, (size_t)(e - p));
        name[e - p] = '\0';
        int col = fr_schema_find(t->schema, name);
        FR_CHECK(col >= 0, FR_EINVAL, err, "table %s has no column '%s'", t->qname, name);
        for (int i = 0; i < n; i++)
            FR_CHECK(cols[i] != col, FR_EINVAL, err, "column '%s' is listed twice", name);
        FR_CHECK(n < nf, FR_EINVAL, err, "too many columns listed");
        cols[n++] = col;
        if (!comma) break;
        p = comma + 1;
    }
    *ncols = n;
    return FR_OK;
}

/* Column indexes of names (from the server), each a column of the schema. */
static int columns_of(fr_ctable *t, char **names, size_t n, int **out, int *nout,
                      fr_error *err)
{
    *out = fr_calloc(n + 1, sizeof **out);
    FR_CHECK(*out, FR_ENOMEM, err, "out of memory describing table %s", t->qname);
    for (size_t i = 0; i < n; i++) {
        int col = fr_schema_find(t->schema, names[i]);
        FR_CHECK(col >= 0, FR_ECORRUPT, err, "table %s: the server names a key column '%s' "
                 "that its schema lacks", t->qname, names[i]);
        (*out)[i] = col;
    }
    *nout = (int)n;
    return FR_OK;
}

static int copy_columns(const int *in, int n, int **out, int *nout, fr_error *err)
{
    *out = fr_calloc((size_t)n + 1, sizeof **out);
    FR_CHECK(*out, FR_ENOMEM, err, "out of memory describing a table");
    if (n) memcpy(*out, in, sizeof **out * (size_t)n);
    *nout = n;
    return FR_OK;
}

/* ---- opening ------------------------------------------------------------------------------ */

static int open_local(fr_ctable *t, fr_error *err)
{
    FR_TRY(fr_engine_get_table(t->client->engine, t->db, t->name, &t->local, err));
    t->id = fr_table_id(t->local);
    t->schema = fr_schema_clone(fr_table_schema(t->local));
    FR_CHECK(t->schema, FR_ENOMEM, err, "out of memory describing table %s", t->qname);
    t->compression = fr_table_compression(t->local);
    t->nbuckets = fr_table_num_buckets(t->local);
    int n = 0;
    const int *k = fr_table_bucket_key(t->local, &n);
    FR_TRY(copy_columns(k, n, &t->bucket_key, &t->nbucket_key, err));
    k = fr_table_primary_key(t->local, &n);
    FR_TRY(copy_columns(k, n, &t->pk, &t->npk, err));
    k = fr_table_partition_keys(t->local, &n);
    FR_TRY(copy_columns(k, n, &t->part, &t->npart, err));
    t->dynamic_partitions = true;
    return FR_OK;
}

/* The schema of the JSON text, with the id the server gives (record batches carry it). */
static int schema_from(const char *json, int32_t id, fr_schema **out, fr_error *err)
{
    fr_schema *s = NULL;
    FR_TRY(fr_schema_from_json(json, strlen(json), &s, err));
    if (fr_schema_id(s) == id) {
        *out = s;
        return FR_OK;
    }
    int n = fr_schema_num_fields(s);
    fr_field *fields = fr_calloc((size_t)n + 1, sizeof *fields);
    int rc = fields ? FR_OK : fr_fail(err, FR_ENOMEM, "out of memory reading a schema");
    for (int i = 0; rc == 0 && i < n; i++) fields[i] = *fr_schema_field(s, i);
    if (rc == 0) rc = fr_schema_new(fields, n, id, out, err);
    fr_free(fields);
    fr_schema_free(s);
    return rc;
}

static int open_remote(fr_ctable *t, fr_error *err)
{
    Firth__GetTableInfoRequest req = FIRTH__GET_TABLE_INFO_REQUEST__INIT;
    Firth__TablePath path = FIRTH__TABLE_PATH__INIT;
    fr_ctable_path(t, &path);
    req.path = &path;
    ProtobufCMessage *m = NULL;
    FR_TRY(fr_cnet_call(t->client->net, FR_RPC_GET_TABLE_INFO, &req.base, 0, FR_CNET_RETRY,
                        NULL, NULL, &m, NULL, err));
    const Firth__GetTableInfoResponse *r = (const Firth__GetTableInfoResponse *)m;
    int rc = FR_OK;
    FR_GOTO(schema_from(r->schema_json ? r->schema_json : "", r->schema_id, &t->schema, err));
    t->id = r->table_id;
    if (r->num_buckets > FR_BUCKETS_MAX)
        FR_GOTO(fr_fail(err, FR_ECORRUPT, "the server says table %s has %d buckets (at most "
                        "%d)", t->qname, (int)r->num_buckets, FR_BUCKETS_MAX));
    t->nbuckets = r->num_buckets > 0 ? r->num_buckets : 1;
    FR_GOTO(columns_of(t, r->bucket_keys, r->n_bucket_keys, &t->bucket_key, &t->nbucket_key,
                       err));
    FR_GOTO(columns_of(t, r->primary_key, r->n_primary_key, &t->pk, &t->npk, err));
    FR_GOTO(columns_of(t, r->partition_keys, r->n_partition_keys, &t->part, &t->npart, err));
    t->compression = FR_COMPRESSION_ZSTD;
    t->dynamic_partitions = true;
    for (size_t i = 0; i < r->n_options; i++) {
        const char *k = r->options[i]->key, *v = r->options[i]->value;
        if (!k || !v) continue;
        if (strcasecmp(k, "table.partition.dynamic-creation") == 0)
            t->dynamic_partitions = strcasecmp(v, "false") != 0;
        if (strcasecmp(k, "table.log.arrow.compression.type") == 0)
            fr_compression_parse(v, &t->compression, NULL);
    }
fail:
    fr_rpc_free(m);
    return rc;
}

/* The table db.name (resolved names). */
static int open_resolved(firth_client *c, const char *db, const char *name, fr_ctable **out,
                         fr_error *err)
{
    fr_ctable *t = fr_calloc(1, sizeof *t);
    FR_CHECK(t, FR_ENOMEM, err, "out of memory opening table %s.%s", db, name);
    t->client = c;
    t->refs = 1;
    pthread_mutex_init(&t->parts_mu, NULL);
    snprintf(t->db, sizeof t->db, "%s", db);
    snprintf(t->name, sizeof t->name, "%s", name);
    snprintf(t->qname, sizeof t->qname, "%s.%s", t->db, t->name);
    int rc = c->remote ? open_remote(t, err) : open_local(t, err);
    if (rc < 0) {
        fr_ctable_free(t);
        return rc;
    }
    *out = t;
    return FR_OK;
}

int fr_ctable_open(firth_client *c, const char *name, fr_ctable **out, fr_error *err)
{
    char db[FR_NAME_BYTES_MAX + 1], t[FR_NAME_BYTES_MAX + 1];
    FR_TRY(fr_client_resolve(c, name, db, t, err));
    return open_resolved(c, db, t, out, err);
}

void fr_ctable_free(fr_ctable *t)
{
    if (!t) return;
    if (t->local) fr_table_release(t->local);
    fr_schema_free(t->schema);
    fr_free(t->bucket_key);
    fr_free(t->pk);
    fr_free(t->part);
    fr_cparts_free(t->parts, t->nparts);
    pthread_mutex_destroy(&t->parts_mu);
    fr_free(t);
}

/* ---- the cache of one-shot calls ------------------------------------------------------------ */

/* Enough for the tables one process writes to in turn; each entry is a few hundred bytes
 * and its schema. */
#define CTABLE_CACHE_MAX 64

/* Drops one reference (tables_mu held); frees t on the last. */
static void ctable_unref_locked(fr_ctable *t)
{
    if (--t->refs == 0) fr_ctable_free(t);
}

/* Where the cached entry named qname is linked, or NULL (tables_mu held). */
static fr_ctable **cache_slot_locked(firth_client *c, const char *qname)
{
    for (fr_ctable **p = &c->tables; *p; p = &(*p)->next)
        if (strcmp((*p)->qname, qname) == 0) return p;
    return NULL;
}

/* Unlinks the entry at *p, dropping the cache's reference (tables_mu held). */
static void cache_unlink_locked(firth_client *c, fr_ctable **p)
{
    fr_ctable *t = *p;
    *p = t->next;
    t->next = NULL;
    c->ntables--;
    ctable_unref_locked(t);
}

/* The cached entry named qname, moved to the front, with a reference for the caller. */
static fr_ctable *cache_find_locked(firth_client *c, const char *qname)
{
    fr_ctable **p = cache_slot_locked(c, qname);
    if (!p) return NULL;
    fr_ctable *t = *p;
    *p = t->next;
    t->next = c->tables;
    c->tables = t;
    t->refs++;
    return t;
}

/* Puts t at the front in place of any entry of its name; the least recently used entry
 * goes when the cache is full (tables_mu held). */
static void cache_insert_locked(firth_client *c, fr_ctable *t)
{
    fr_ctable **p = cache_slot_locked(c, t->qname);
    if (p) cache_unlink_locked(c, p);
    t->refs++;
    t->next = c->tables;
    c->tables = t;
    if (++c->ntables <= CTABLE_CACHE_MAX) return;
    p = &c->tables;
    while ((*p)->next) p = &(*p)->next;
    cache_unlink_locked(c, p);
}

int fr_ctable_get(firth_client *c, const char *name, bool fresh, fr_ctable **out,
                  bool *cached, fr_error *err)
{
    *cached = false;
    char db[FR_NAME_BYTES_MAX + 1], tn[FR_NAME_BYTES_MAX + 1], qname[sizeof db + sizeof tn];
    FR_TRY(fr_client_resolve(c, name, db, tn, err));
    if (!c->remote) return open_resolved(c, db, tn, out, err);
    snprintf(qname, sizeof qname, "%s.%s", db, tn);
    pthread_mutex_lock(&c->tables_mu);
    fr_ctable *t = fresh ? NULL : cache_find_locked(c, qname);
    pthread_mutex_unlock(&c->tables_mu);
    if (t) {
        *cached = true;
        *out = t;
        return FR_OK;
    }
    FR_TRY(open_resolved(c, db, tn, &t, err));
    pthread_mutex_lock(&c->tables_mu);
    cache_insert_locked(c, t);
    pthread_mutex_unlock(&c->tables_mu);
    *out = t;
    return FR_OK;
}

void fr_ctable_put(fr_ctable *t)
{
    if (!t) return;
    firth_client *c = t->client;
    pthread_mutex_lock(&c->tables_mu);
    ctable_unref_locked(t);
    pthread_mutex_unlock(&c->tables_mu);
}

void fr_ctable_forget(fr_ctable *t)
{
    firth_client *c = t->client;
    pthread_mutex_lock(&c->tables_mu);
    fr_ctable **p = cache_slot_locked(c, t->qname);
    if (p && *p == t) cache_unlink_locked(c, p);
    pthread_mutex_unlock(&c->tables_mu);
}

void fr_ctable_cache_free(firth_client *c)
{
    while (c->tables) cache_unlink_locked(c, &c->tables);
}

void fr_ctable_path(const fr_ctable *t, Firth__TablePath *path)
{
    path->database = (char *)t->db;
    path->table = (char *)t->name;
}

/* ---- partitions ---------------------------------------------------------------------------- */

void fr_cparts_free(fr_cpart *p, int count)
{
    for (int i = 0; p && i < count; i++) fr_free(p[i].name);
    fr_free(p);
}

static int copy_parts(const fr_cpart *in, int n, fr_cpart **out, fr_error *err)
{
    *out = fr_calloc((size_t)n + 1, sizeof **out);
    FR_CHECK(*out, FR_ENOMEM, err, "out of memory listing partitions");
    for (int i = 0; i < n; i++) {
        (*out)[i].id = in[i].id;
        (*out)[i].name = fr_strdup(in[i].name);
        if (!(*out)[i].name) {
            fr_cparts_free(*out, i);
            *out = NULL;
            return fr_fail(err, FR_ENOMEM, "out of memory listing partitions");
        }
    }
    return FR_OK;
}

/* Replaces t->parts with the server's list (parts_mu held). */
static int refresh_parts(fr_ctable *t, fr_error *err)
{
    Firth__MetadataRequest req = FIRTH__METADATA_REQUEST__INIT;
    Firth__TablePath path = FIRTH__TABLE_PATH__INIT, *paths[1] = {&path};
    fr_ctable_path(t, &path);
    req.tables = paths;
    req.n_tables = 1;
    req.skip_offsets = true;
    ProtobufCMessage *m = NULL;
    FR_TRY(fr_cnet_call(t->client->net, FR_RPC_METADATA, &req.base, 0, FR_CNET_RETRY, NULL,
                        NULL, &m, NULL, err));
    const Firth__MetadataResponse *r = (const Firth__MetadataResponse *)m;
    int rc = FR_OK;
    if (r->n_tables != 1) {
        rc = fr_fail(err, FR_ECORRUPT, "metadata of %s: %zu tables in the answer", t->qname,
                     r->n_tables);
        goto done;
    }
    const Firth__TableMetadata *tm = r->tables[0];
    if (tm->error && tm->error->code) {
        rc = fr_rpc_error_get(tm->error, "metadata", err);
        goto done;
    }
    fr_cpart *parts = fr_calloc(tm->n_partitions + 1, sizeof *parts);
    if (!parts) {
        rc = fr_fail(err, FR_ENOMEM, "out of memory listing partitions");
        goto done;
    }
    for (size_t i = 0; i < tm->n_partitions; i++) {
        parts[i].id = tm->partitions[i]->partition_id;
        parts[i].name = fr_strdup(tm->partitions[i]->name ? tm->partitions[i]->name : "");
        if (!parts[i].name) {
            fr_cparts_free(parts, (int)i);
            rc = fr_fail(err, FR_ENOMEM, "out of memory listing partitions");
            goto done;
        }
    }
    fr_cparts_free(t->parts, t->nparts);
    t->parts = parts;
    t->nparts = (int)tm->n_partitions;
done:
    fr_rpc_free(m);
    return rc;
}

int fr_ctable_partitions(fr_ctable *t, bool refresh, fr_cpart **out, int *count,
                         fr_error *err)
{
    pthread_mutex_lock(&t->parts_mu);
    int rc = FR_OK;
    if (refresh || !t->parts) rc = refresh_parts(t, err);
    if (rc == 0) rc = copy_parts(t->parts, t->nparts, out, err);
    if (rc == 0) *count = t->nparts;
    pthread_mutex_unlock(&t->parts_mu);
    return rc;
}

static bool find_part(const fr_ctable *t, const char *name, int64_t *id)
{
    for (int i = 0; i < t->nparts; i++) {
        if (strcmp(t->parts[i].name, name) == 0) {
            *id = t->parts[i].id;
            return true;
        }
    }
    return false;
}

/* ALTER TABLE ... ADD IF NOT EXISTS PARTITION (k = 'v', ...) for a name "k=v/k2=v2". */
static int create_part(fr_ctable *t, const char *name, fr_error *err)
{
    fr_buf sql;
    fr_buf_init(&sql);
    int rc = fr_buf_printf(&sql, err, "ALTER TABLE `%s`.`%s` ADD IF NOT EXISTS PARTITION (",
                           t->db, t->name);
    for (const char *p = name; rc == 0 && *p;) {
        const char *slash = strchr(p, '/');
        const char *end = slash ? slash : p + strlen(p);
        const char *eq = memchr(p, '=', (size_t)(end - p));
        if (!eq) {
            rc = fr_fail(err, FR_EINVAL, "bad partition name '%s'", name);
            break;
        }
        rc = fr_buf_printf(&sql, err, "%s`%.*s` = '%.*s'", p == name ? "" : ", ",
                           (int)(eq - p), p, (int)(end - eq - 1), eq + 1);
        p = slash ? slash + 1 : end;
    }
    if (rc == 0) rc = fr_buf_append(&sql, ")", 2, err);
    if (rc == 0) {
        /* ADD IF NOT EXISTS is idempotent: sent again after a lost connection, it creates the
         * partition or finds it made, so the call is retried like a read. Sent once, a
         * connection lost under it failed the writer's call though nothing was at risk. */
        Firth__ExecuteSqlRequest req = FIRTH__EXECUTE_SQL_REQUEST__INIT;
        req.sql = (char *)sql.data;
        req.database = t->db;
        rc = fr_cnet_call(t->client->net, FR_RPC_EXECUTE_SQL, &req.base, 0, FR_CNET_RETRY, NULL,
                          NULL, NULL, NULL, err);
    }
    fr_buf_free(&sql);
    return rc;
}

/* The id of the partition named name from the server's list, created when the table
 * creates partitions as rows arrive; refresh: read the list again first (parts_mu held). */
static int part_id_locked(fr_ctable *t, const char *name, bool refresh, int64_t *id,
                          fr_error *err)
{
    if (!refresh && find_part(t, name, id)) return FR_OK;
    FR_TRY(refresh_parts(t, err));
    if (find_part(t, name, id)) return FR_OK;
    FR_CHECK(t->dynamic_partitions, FR_ENOTFOUND, err,
             "table %s has no partition %s, and 'table.partition.dynamic-creation' is false: "
             "add it first", t->qname, name);
    FR_TRY(create_part(t, name, err));
    FR_TRY(refresh_parts(t, err));
    FR_CHECK(find_part(t, name, id), FR_ENOTFOUND, err,
             "table %s: partition %s was created but is not listed", t->qname, name);
    return FR_OK;
}

int fr_ctable_partition_id(fr_ctable *t, const char *name, int64_t *id, fr_error *err)
{
    pthread_mutex_lock(&t->parts_mu);
    int rc = part_id_locked(t, name, false, id, err);
    pthread_mutex_unlock(&t->parts_mu);
    return rc;
}

int fr_ctable_partition_renew(fr_ctable *t, int64_t old_id, int64_t *id, fr_error *err)
{
    pthread_mutex_lock(&t->parts_mu);
    int i = 0;
    while (i < t->nparts && t->parts[i].id != old_id) i++;
    char *name = i < t->nparts ? fr_strdup(t->parts[i].name) : NULL;
    int rc = name ? part_id_locked(t, name, true, id, err)
             : i < t->nparts ? fr_fail(err, FR_ENOMEM, "out of memory renewing a partition")
                             : fr_fail(err, FR_ENOTFOUND, "table %s has no partition with id "
                                       "%lld", t->qname, (long long)old_id);
    pthread_mutex_unlock(&t->parts_mu);
    fr_free(name);
    return rc;
}
