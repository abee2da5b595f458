/* client_admin.c — databases, tables and partitions through the public API, embedded (the
 * engine's catalog calls) or remote (the protocol's catalog apis; partitions are added and
 * dropped with ALTER TABLE, which the protocol runs as SQL).
 *
 * Lists handed to the caller are arrays of fr_strdup'd strings, freed with firth_names_free
 * (the engine's lists are made the same way). */
#include "client/client_int.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

static int from(const fr_error *e, firth_error *err) { return firth_error_from(e, err); }

void firth_names_free(char **names, int count) { fr_names_free(names, count); }

/* Copies a protocol string list into a caller's list. */
static int copy_names(char **in, size_t n, char ***names, int *count, fr_error *err)
{
    char **out = fr_calloc(n + 1, sizeof *out);
    FR_CHECK(out, FR_ENOMEM, err, "out of memory listing names");
    for (size_t i = 0; i < n; i++) {
        out[i] = fr_strdup(in[i] ? in[i] : "");
        if (!out[i]) {
            fr_names_free(out, (int)i);
            return fr_fail(err, FR_ENOMEM, "out of memory listing names");
        }
    }
    *names = out;
    *count = (int)n;
    return FR_OK;
}

static int call(firth_client *c, fr_rpc_api api, ProtobufCMessage *req, unsigned flags,
                ProtobufCMessage **resp, fr_error *err)
{
    return fr_cnet_call(c->net, api, req, 0, flags, NULL, NULL, resp, NULL, err);
}

/* ---- databases ----------------------------------------------------------------------------- */

int firth_create_database(firth_client *c, const char *db, bool if_not_exists,
                          firth_error *err)
{
    if (!c || !db) return fr_client_fail(err, FIRTH_EINVAL, "create database: no name");
    fr_error e = {0};
    int rc;
    if (c->remote) {
        Firth__CreateDatabaseRequest req = FIRTH__CREATE_DATABASE_REQUEST__INIT;
        req.database = (char *)db;
        req.if_not_exists = if_not_exists;
        rc = call(c, FR_RPC_CREATE_DATABASE, &req.base, 0, NULL, &e);
    } else {
        rc = fr_engine_create_database(c->engine, db, if_not_exists, &e);
    }
    return rc < 0 ? from(&e, err) : FIRTH_OK;
}

int firth_drop_database(firth_client *c, const char *db, bool if_exists, bool cascade,
                        firth_error *err)
{
    if (!c || !db) return fr_client_fail(err, FIRTH_EINVAL, "drop database: no name");
    fr_error e = {0};
    int rc;
    if (c->remote) {
        Firth__DropDatabaseRequest req = FIRTH__DROP_DATABASE_REQUEST__INIT;
        req.database = (char *)db;
        req.if_exists = if_exists;
        req.cascade = cascade;
        rc = call(c, FR_RPC_DROP_DATABASE, &req.base, 0, NULL, &e);
    } else {
        rc = fr_engine_drop_database(c->engine, db, if_exists, cascade, &e);
    }
    return rc < 0 ? from(&e, err) : FIRTH_OK;
}

int firth_list_databases(firth_client *c, char ***names, int *count, firth_error *err)
{
    if (!c || !names || !count)
        return fr_client_fail(err, FIRTH_EINVAL, "list databases: a NULL argument");
    fr_error e = {0};
    int rc;
    if (c->remote) {
        Firth__ListDatabasesRequest req = FIRTH__LIST_DATABASES_REQUEST__INIT;
        ProtobufCMessage *m = NULL;
        rc = call(c, FR_RPC_LIST_DATABASES, &req.base, FR_CNET_RETRY, &m, &e);
        if (rc == 0) {
            const Firth__ListDatabasesResponse *r = (const Firth__ListDatabasesResponse *)m;
            rc = copy_names(r->databases, r->n_databases, names, count, &e);
        }
        fr_rpc_free(m);
    } else {
        rc = fr_engine_list_databases(c->engine, names, count, &e);
    }
    return rc < 0 ? from(&e, err) : FIRTH_OK;
}

int firth_list_tables(firth_client *c, const char *db, char ***names, int *count,
                      firth_error *err)
{
    if (!c || !names || !count)
        return fr_client_fail(err, FIRTH_EINVAL, "list tables: a NULL argument");
    char current[FR_NAME_BYTES_MAX + 1];
    if (!db) {
        if (c->remote) fr_client_database(c, current);
        else snprintf(current, sizeof current, "%s", fr_sql_session_database(c->session));
        db = current;
    }
    fr_error e = {0};
    int rc;
    if (c->remote) {
        Firth__ListTablesRequest req = FIRTH__LIST_TABLES_REQUEST__INIT;
        req.database = (char *)db;
        ProtobufCMessage *m = NULL;
        rc = call(c, FR_RPC_LIST_TABLES, &req.base, FR_CNET_RETRY, &m, &e);
        if (rc == 0) {
            const Firth__ListTablesResponse *r = (const Firth__ListTablesResponse *)m;
            rc = copy_names(r->tables, r->n_tables, names, count, &e);
        }
        fr_rpc_free(m);
    } else {
        rc = fr_engine_list_tables(c->engine, db, names, count, &e);
    }
    return rc < 0 ? from(&e, err) : FIRTH_OK;
}

/* ---- tables -------------------------------------------------------------------------------- */

/* "a, b" split into trimmed names (pointing into *store, which the caller frees). */
static int split_names(const char *text, char **store, char ***names, int *n, fr_error *err)
{
    *store = NULL;
    *names = NULL;
    *n = 0;
    if (!text || !*text) return FR_OK;
    size_t len = strlen(text);
    *store = fr_malloc(len + 1);
    *names = fr_calloc(len / 2 + 2, sizeof **names);
    FR_CHECK(*store && *names, FR_ENOMEM, err, "out of memory reading names");
    memcpy(*store, text, len + 1);
    for (char *p = *store;;) {
        char *comma = strchr(p, ',');
        if (comma) *comma = '\0';
        while (*p == ' ' || *p == '\t') p++;
        char *e = p + strlen(p);
        while (e > p && (e[-1] == ' ' || e[-1] == '\t')) *--e = '\0';
        FR_CHECK(*p, FR_EINVAL, err, "the column list '%.100s' has an empty name", text);
        (*names)[(*n)++] = p;
        if (!comma) break;
        p = comma + 1;
    }
    return FR_OK;
}

/* The schema JSON with an "id" (the catalog's form needs one; it is replaced anyway). */
static int schema_json_with_id(const char *json, char **out, fr_error *err)
{
    json_error_t jerr;
    json_t *root = json_loads(json, JSON_REJECT_DUPLICATES, &jerr);
    FR_CHECK(root && json_is_object(root), FR_EINVAL, err,
             "the schema JSON does not parse: %s at line %d column %d", root ? "not an object"
             : jerr.text, jerr.line, jerr.column);
    if (!json_object_get(root, "id")) json_object_set_new(root, "id", json_integer(0));
    char *text = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    FR_CHECK(text, FR_ENOMEM, err, "out of memory reading the schema JSON");
    *out = fr_strdup(text);
    free(text); /* jansson's allocation */
    FR_CHECK(*out, FR_ENOMEM, err, "out of memory reading the schema JSON");
    return FR_OK;
}

typedef struct table_parts {
    char db[FR_NAME_BYTES_MAX + 1], name[FR_NAME_BYTES_MAX + 1];
    char *json;
    char *pk_store, **pk;
    int npk;
    char *part_store, **part;
    int npart;
} table_parts;

static void table_parts_free(table_parts *p)
{
    fr_free(p->json);
    fr_free(p->pk_store);
    fr_free(p->pk);
    fr_free(p->part_store);
    fr_free(p->part);
}

static int create_local(firth_client *c, const firth_table_def *d, table_parts *p,
                        fr_error *err)
{
    fr_schema *schema = NULL;
    int rc = fr_schema_from_json(p->json, strlen(p->json), &schema, err);
    if (rc < 0) {
        /* A bad schema is the user's input, not a corrupt file. */
        if (rc != FR_ENOMEM) rc = err->code = FR_EINVAL;
        return rc;
    }
    fr_option *opts = fr_calloc((size_t)d->noptions + 1, sizeof *opts);
    if (!opts) {
        fr_schema_free(schema);
        return fr_fail(err, FR_ENOMEM, "out of memory creating a table");
    }
    for (int i = 0; i < d->noptions; i++) opts[i] = (fr_option){d->option_keys[i], d->option_values[i]};
    fr_table_spec spec = {
        .db = p->db, .name = p->name, .schema = schema, .options = opts,
        .noptions = d->noptions, .primary_key = (const char *const *)p->pk,
        .nprimary_key = p->npk, .partition_keys = (const char *const *)p->part,
        .npartition_keys = p->npart,
    };
    rc = fr_engine_create_table(c->engine, &spec, d->if_not_exists, err);
    fr_free(opts);
    fr_schema_free(schema);
    return rc;
}

static int create_remote(firth_client *c, const firth_table_def *d, table_parts *p,
                         fr_error *err)
{
    Firth__CreateTableRequest req = FIRTH__CREATE_TABLE_REQUEST__INIT;
    Firth__TablePath path = FIRTH__TABLE_PATH__INIT;
    path.database = p->db;
    path.table = p->name;
    req.path = &path;
    req.schema_json = p->json;
    req.primary_key = p->pk;
    req.n_primary_key = (size_t)p->npk;
    req.partition_keys = p->part;
    req.n_partition_keys = (size_t)p->npart;
    req.if_not_exists = d->if_not_exists;
    Firth__TableOption *opts = fr_calloc((size_t)d->noptions + 1, sizeof *opts);
    Firth__TableOption **ptrs = fr_calloc((size_t)d->noptions + 1, sizeof *ptrs);
    int rc = FR_OK;
    if (!opts || !ptrs) {
        rc = fr_fail(err, FR_ENOMEM, "out of memory creating a table");
    } else {
        for (int i = 0; i < d->noptions; i++) {
            firth__table_option__init(&opts[i]);
            opts[i].key = (char *)d->option_keys[i];
            opts[i].value = (char *)d->option_values[i];
            ptrs[i] = &opts[i];
        }
        req.options = ptrs;
        req.n_options = (size_t)d->noptions;
        rc = call(c, FR_RPC_CREATE_TABLE, &req.base, 0, NULL, err);
    }
    fr_free(opts);
    fr_free(ptrs);
    return rc;
}

int firth_create_table(firth_client *c, const firth_table_def *d, firth_error *err)
{
    if (!c || !d || !d->table || !d->schema_json)
        return fr_client_fail(err, FIRTH_EINVAL, "create table: no table name or no schema");
    if (d->noptions < 0 || (d->noptions > 0 && (!d->option_keys || !d->option_values)))
        return fr_client_fail(err, FIRTH_EINVAL, "create table: %d options but no arrays",
                              d->noptions);
    for (int i = 0; i < d->noptions; i++)
        if (!d->option_keys[i] || !d->option_values[i])
            return fr_client_fail(err, FIRTH_EINVAL, "create table: option %d is NULL", i + 1);
    table_parts p = {0};
    fr_error e = {0};
    int rc = fr_client_resolve(c, d->table, p.db, p.name, &e);
    if (rc == 0) rc = schema_json_with_id(d->schema_json, &p.json, &e);
    if (rc == 0) rc = split_names(d->primary_key, &p.pk_store, &p.pk, &p.npk, &e);
    if (rc == 0) rc = split_names(d->partition_keys, &p.part_store, &p.part, &p.npart, &e);
    if (rc == 0) rc = c->remote ? create_remote(c, d, &p, &e) : create_local(c, d, &p, &e);
    table_parts_free(&p);
    return rc < 0 ? from(&e, err) : FIRTH_OK;
}

int firth_drop_table(firth_client *c, const char *table, bool if_exists, firth_error *err)
{
    if (!c || !table) return fr_client_fail(err, FIRTH_EINVAL, "drop table: no name");
    char db[FR_NAME_BYTES_MAX + 1], t[FR_NAME_BYTES_MAX + 1];
    fr_error e = {0};
    int rc = fr_client_resolve(c, table, db, t, &e);
    if (rc == 0 && c->remote) {
        Firth__DropTableRequest req = FIRTH__DROP_TABLE_REQUEST__INIT;
        Firth__TablePath path = FIRTH__TABLE_PATH__INIT;
        path.database = db;
        path.table = t;
        req.path = &path;
        req.if_exists = if_exists;
        rc = call(c, FR_RPC_DROP_TABLE, &req.base, 0, NULL, &e);
    } else if (rc == 0) {
        rc = fr_engine_drop_table(c->engine, db, t, if_exists, &e);
    }
    return rc < 0 ? from(&e, err) : FIRTH_OK;
}

/* ---- partitions ---------------------------------------------------------------------------- */

int firth_list_partitions(firth_client *c, const char *table, char ***names, int64_t **ids,
                          int *count, firth_error *err)
{
    if (!c || !table || !names || !ids || !count)
        return fr_client_fail(err, FIRTH_EINVAL, "list partitions: a NULL argument");
    fr_ctable *t = NULL;
    fr_error e = {0};
    fr_cpart *parts = NULL;
    fr_partition *lparts = NULL;
    int n = 0;
    int rc = fr_ctable_open(c, table, &t, &e);
    if (rc == 0 && t->npart) {
        rc = c->remote ? fr_ctable_partitions(t, true, &parts, &n, &e)
                       : fr_table_list_partitions(t->local, &lparts, &n, &e);
    }
    if (rc == 0) {
        *names = fr_calloc((size_t)n + 1, sizeof **names);
        *ids = fr_calloc((size_t)n + 1, sizeof **ids);
        if (!*names || !*ids) rc = fr_fail(&e, FR_ENOMEM, "out of memory listing partitions");
        for (int i = 0; rc == 0 && i < n; i++) {
            (*ids)[i] = parts ? parts[i].id : lparts[i].id;
            (*names)[i] = fr_strdup(parts ? parts[i].name : lparts[i].name);
            if (!(*names)[i]) rc = fr_fail(&e, FR_ENOMEM, "out of memory listing partitions");
        }
        if (rc < 0) {
            fr_names_free(*names, n);
            fr_free(*ids);
            *names = NULL;
            *ids = NULL;
        } else {
            *count = n;
        }
    }
    if (parts) fr_cparts_free(parts, n);
    if (lparts) fr_partitions_free(lparts, n);
    fr_ctable_free(t);
    return rc < 0 ? from(&e, err) : FIRTH_OK;
}

/* "k=v/k2=v2" into {column, value} pairs pointing into *store. */
static int parse_partition(const char *text, char **store, fr_option *spec, int *n,
                           fr_error *err)
{
    *n = 0;
    *store = fr_strdup(text);
    FR_CHECK(*store, FR_ENOMEM, err, "out of memory reading a partition name");
    for (char *p = *store; *p;) {
        char *slash = strchr(p, '/');
        if (slash) *slash = '\0';
        char *eq = strchr(p, '=');
        FR_CHECK(eq && eq > p && eq[1], FR_EINVAL, err,
                 "partition '%.100s': each part must be key=value", text);
        FR_CHECK(*n < 64, FR_ELIMIT, err, "partition '%.100s' has too many keys", text);
        *eq = '\0';
        spec[(*n)++] = (fr_option){p, eq + 1};
        if (!slash) break;
        p = slash + 1;
    }
    FR_CHECK(*n > 0, FR_EINVAL, err, "an empty partition name");
    return FR_OK;
}

/* ALTER TABLE `db`.`t` ADD|DROP [IF [NOT] EXISTS] PARTITION (`k` = 'v', ...) on the server. */
static int partition_sql(firth_client *c, const char *db, const char *t, bool add, bool if_x,
                         const fr_option *spec, int n, fr_error *err)
{
    fr_buf sql;
    fr_buf_init(&sql);
    int rc = fr_buf_printf(&sql, err, "ALTER TABLE `%s`.`%s` %s %sPARTITION (", db, t,
                           add ? "ADD" : "DROP",
                           if_x ? (add ? "IF NOT EXISTS " : "IF EXISTS ") : "");
    for (int i = 0; rc == 0 && i < n; i++) {
        rc = fr_buf_printf(&sql, err, "%s`%s` = '", i ? ", " : "", spec[i].key);
        for (const char *v = spec[i].value; rc == 0 && *v; v++) /* ' is written '' */
            rc = *v == '\'' ? fr_buf_append(&sql, "''", 2, err) : fr_buf_append(&sql, v, 1, err);
        if (rc == 0) rc = fr_buf_append(&sql, "'", 1, err);
    }
    if (rc == 0) rc = fr_buf_append(&sql, ")", 2, err);
    if (rc == 0) {
        Firth__ExecuteSqlRequest req = FIRTH__EXECUTE_SQL_REQUEST__INIT;
        req.sql = (char *)sql.data;
        req.database = (char *)db;
        rc = call(c, FR_RPC_EXECUTE_SQL, &req.base, 0, NULL, err);
    }
    fr_buf_free(&sql);
    return rc;
}

static int change_partition(firth_client *c, const char *table, const char *partition,
                            bool add, bool if_x, firth_error *err)
{
    if (!c || !table || !partition)
        return fr_client_fail(err, FIRTH_EINVAL, "%s partition: a NULL argument",
                              add ? "add" : "drop");
    char db[FR_NAME_BYTES_MAX + 1], t[FR_NAME_BYTES_MAX + 1], *store = NULL;
    fr_option spec[64];
    int n = 0;
    fr_error e = {0};
    int rc = fr_client_resolve(c, table, db, t, &e);
    if (rc == 0) rc = parse_partition(partition, &store, spec, &n, &e);
    if (rc == 0 && c->remote) rc = partition_sql(c, db, t, add, if_x, spec, n, &e);
    else if (rc == 0 && add) rc = fr_engine_add_partition(c->engine, db, t, spec, n, if_x, &e);
    else if (rc == 0) rc = fr_engine_drop_partition(c->engine, db, t, spec, n, if_x, &e);
    fr_free(store);
    return rc < 0 ? from(&e, err) : FIRTH_OK;
}

int firth_add_partition(firth_client *c, const char *table, const char *partition,
                        bool if_not_exists, firth_error *err)
{
    return change_partition(c, table, partition, true, if_not_exists, err);
}

int firth_drop_partition(firth_client *c, const char *table, const char *partition,
                         bool if_exists, firth_error *err)
{
    return change_partition(c, table, partition, false, if_exists, err);
}
