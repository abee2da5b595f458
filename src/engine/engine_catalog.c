/* engine_catalog.c — the catalog file DATA_DIR/meta/catalog.json: writing it (atomically,
 * on every change) and reading it back with every field checked.
 *
 * The layout is documented in docs/ENGINE.md. A catalog that fails any check is refused as
 * a whole (FR_EINVAL naming the file and the problem): guessing at a damaged catalog could
 * attach logs to the wrong table. */
#include "engine/engine_int.h"

#include <assert.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#define FR_CATALOG_FORMAT "firth catalog v1"

/* ---- writing --------------------------------------------------------------------------- */

static json_t *schema_json(const fr_schema *s)
{
    char *text = NULL;
    fr_error err = {0};
    if (fr_schema_to_json(s, &text, &err) < 0) return NULL;
    json_t *j = json_loads(text, 0, NULL);
    fr_free(text);
    return j;
}

static json_t *whole(json_t *arr, size_t n)
{
    if (arr && json_array_size(arr) != n) {
        json_decref(arr);
        return NULL;
    }
    return arr;
}

static json_t *names_json(const fr_schema *s, const int *cols, int n)
{
    json_t *arr = json_array();
    for (int i = 0; arr && i < n; i++)
        json_array_append_new(arr, json_string(fr_schema_field(s, cols[i])->name));
    return whole(arr, (size_t)n);
}

static json_t *partition_json(const fr_tpart *p)
{
    json_t *values = json_array();
    for (int i = 0; values && i < p->info.nvalues; i++)
        json_array_append_new(values, json_string(p->info.values[i]));
    values = whole(values, (size_t)p->info.nvalues);
    return json_pack("{s:I, s:s, s:o, s:I}", "id", (json_int_t)p->info.id, "name", p->info.name,
                     "values", values, "created_ms", (json_int_t)p->info.created_ms);
}

/* The members of primary-key and partitioned tables, added to obj (which is returned, or
 * NULL when a member failed to build). Tables without them have none of these members. */
static json_t *table_keys_json(const fr_table *t, json_t *obj)
{
    if (!obj) return NULL;
    const fr_schema *cur = fr_table_schema(t);
    int bad = 0;
    if (t->conf.npk > 0)
        bad |= json_object_set_new(obj, "primary_key", names_json(cur, t->conf.pk, t->conf.npk));
    if (t->conf.npart > 0) {
        bad |= json_object_set_new(obj, "partition_keys",
                                   names_json(cur, t->conf.part, t->conf.npart));
        json_t *parts = json_array();
        for (int i = 0; parts && i < t->nparts; i++)
            json_array_append_new(parts, partition_json(t->parts[i]));
        bad |= json_object_set_new(obj, "partitions", whole(parts, (size_t)t->nparts));
    }
    if (bad) {
        json_decref(obj);
        return NULL;
    }
    return obj;
}

static json_t *table_json(const fr_table *t)
{
    json_t *schemas = json_array(), *opts = json_array(), *key = json_array();
    for (int i = 0; schemas && i < t->nschemas; i++)
        json_array_append_new(schemas, schema_json(t->schemas[i]));
    for (int i = 0; opts && i < t->conf.noptions; i++)
        json_array_append_new(opts, json_pack("{s:s, s:s}", "key", t->conf.keys[i], "value",
                                              t->conf.values[i]));
    const fr_schema *cur = fr_table_schema(t);
    for (int i = 0; key && i < t->conf.nbucket_key; i++)
        json_array_append_new(key,
                              json_string(fr_schema_field(cur, t->conf.bucket_key[i])->name));
    /* A member that failed to allocate leaves an array short: drop it, so that json_pack
     * fails and nothing half-built is ever written. */
    schemas = whole(schemas, (size_t)t->nschemas);
    opts = whole(opts, (size_t)t->conf.noptions);
    key = whole(key, (size_t)t->conf.nbucket_key);
    return table_keys_json(
        t, json_pack("{s:I, s:s, s:s, s:I, s:i, s:o, s:o, s:i, s:o}", "id", (json_int_t)t->id,
                     "database", t->db, "name", t->name, "created_ms",
                     (json_int_t)t->created_ms, "schema_id", t->nschemas - 1, "schemas",
                     schemas, "options", opts, "bucket_num", t->conf.nbuckets, "bucket_key",
                     key));
}

int fr_catalog_save(fr_engine *e, fr_error *err)
{
    json_t *dbs = json_array(), *tables = json_array();
    for (int i = 0; dbs && i < e->ndbs; i++)
        json_array_append_new(dbs, json_pack("{s:s, s:I}", "name", e->dbs[i].name,
                                             "created_ms", (json_int_t)e->dbs[i].created_ms));
    for (int i = 0; tables && i < e->ntables; i++)
        json_array_append_new(tables, table_json(e->tables[i]));
    bool complete = dbs && tables && json_array_size(dbs) == (size_t)e->ndbs &&
                    json_array_size(tables) == (size_t)e->ntables;
    json_t *root = NULL;
    if (complete)
        root = json_pack("{s:s, s:I, s:I, s:O, s:O}", "format", FR_CATALOG_FORMAT,
                         "next_table_id", (json_int_t)e->next_table_id, "next_partition_id",
                         (json_int_t)e->next_partition_id, "databases", dbs, "tables", tables);
    json_decref(dbs);
    json_decref(tables);
    char *text = root ? json_dumps(root, JSON_INDENT(2)) : NULL;
    json_decref(root);
    FR_CHECK(text, FR_ENOMEM, err, "out of memory writing the catalog");
    char path[FR_ENGINE_PATH_BYTES_MAX];
    snprintf(path, sizeof path, "%s/catalog.json", e->meta_dir);
    size_t len = strlen(text);
    int rc = fr_write_file_atomic(path, text, len, err);
    free(text); /* jansson's allocator */
    return rc;
}

/* ---- reading --------------------------------------------------------------------------- */

typedef struct loader {
    const char *path;
    fr_engine *e;
    fr_error *err;
    int64_t *part_ids; /* every partition id seen, to find one used twice */
    int64_t nids, capids;
} loader;

static int bad(loader *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int bad(loader *l, const char *fmt, ...)
{
    char what[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return fr_fail(l->err, FR_EINVAL, "%s: %s; fix the file or restore it from a backup",
                   l->path, what);
}

static int get_name(loader *l, json_t *obj, const char *field, const char *what, char *out)
{
    const char *s = json_string_value(json_object_get(obj, field));
    if (!s) return bad(l, "a %s has no \"%s\" string", what, field);
    fr_error e2 = {0};
    if (fr_name_normalize(what, s, out, &e2) < 0) return bad(l, "%s", e2.msg);
    if (strcmp(out, s) != 0) return bad(l, "%s name '%.64s' is not lower-case", what, s);
    return FR_OK;
}

static int get_int(loader *l, json_t *obj, const char *field, const char *what, int64_t *out)
{
    json_t *v = json_object_get(obj, field);
    if (!json_is_integer(v)) return bad(l, "%s has no integer \"%s\"", what, field);
    *out = json_integer_value(v);
    return FR_OK;
}

static int load_databases(loader *l, json_t *arr)
{
    fr_engine *e = l->e;
    if (!json_is_array(arr)) return bad(l, "\"databases\" is not an array");
    size_t n = json_array_size(arr);
    e->dbs = fr_calloc(n + 1, sizeof *e->dbs);
    FR_CHECK(e->dbs, FR_ENOMEM, l->err, "out of memory loading the catalog");
    for (size_t i = 0; i < n; i++) {
        json_t *o = json_array_get(arr, i);
        char name[FR_NAME_BYTES_MAX + 1];
        int64_t created = 0;
        FR_TRY(get_name(l, o, "name", "database", name));
        FR_TRY(get_int(l, o, "created_ms", "a database", &created));
        for (int j = 0; j < e->ndbs; j++)
            if (strcmp(e->dbs[j].name, name) == 0) return bad(l, "database %s appears twice", name);
        e->dbs[e->ndbs].name = fr_strdup(name);
        e->dbs[e->ndbs].created_ms = created;
        FR_CHECK(e->dbs[e->ndbs].name, FR_ENOMEM, l->err, "out of memory loading the catalog");
        e->ndbs++;
    }
    return FR_OK;
}

static bool has_db(const fr_engine *e, const char *db)
{
    for (int i = 0; i < e->ndbs; i++)
        if (strcmp(e->dbs[i].name, db) == 0) return true;
    return false;
}

static int load_schemas(loader *l, json_t *t, const char *qname, fr_schema ***out, int *n)
{
    json_t *arr = json_object_get(t, "schemas");
    size_t ns = json_array_size(arr);
    if (ns == 0 || ns > 65536) return bad(l, "table %s has no \"schemas\" versions", qname);
    int64_t sid = 0;
    FR_TRY(get_int(l, t, "schema_id", qname, &sid));
    if (sid != (int64_t)ns - 1)
        return bad(l, "table %s: schema_id %" PRId64 " is not its last schema version", qname,
                   sid);
    fr_schema **schemas = fr_calloc(ns, sizeof *schemas);
    FR_CHECK(schemas, FR_ENOMEM, l->err, "out of memory loading the catalog");
    int rc = FR_OK;
    for (size_t i = 0; i < ns; i++) {
        char *text = json_dumps(json_array_get(arr, i), 0);
        fr_error e2 = {0};
        rc = text ? fr_schema_from_json(text, strlen(text), &schemas[i], &e2) : FR_ENOMEM;
        free(text);
        if (rc < 0) {
            rc = bad(l, "table %s, schema version %zu: %s", qname, i, e2.msg);
            break;
        }
        if (fr_schema_id(schemas[i]) != (int32_t)i) {
            rc = bad(l, "table %s: schema version %zu has id %d", qname, i,
                     fr_schema_id(schemas[i]));
            break;
        }
    }
    if (rc < 0) {
        for (size_t i = 0; i < ns; i++) fr_schema_free(schemas[i]);
        fr_free(schemas);
        return rc;
    }
    *out = schemas;
    *n = (int)ns;
    return FR_OK;
}

/* Column names of a key member (absent: none). *names points into the JSON. */
static int load_key_names(loader *l, json_t *t, const char *field, const char *qname,
                          const char **names, int *n)
{
    json_t *arr = json_object_get(t, field);
    *n = 0;
    if (!arr) return FR_OK;
    if (!json_is_array(arr) || json_array_size(arr) > FR_SCHEMA_COLUMNS_MAX)
        return bad(l, "table %s: \"%s\" is not an array of column names", qname, field);
    for (size_t i = 0; i < json_array_size(arr); i++) {
        names[i] = json_string_value(json_array_get(arr, i));
        if (!names[i]) return bad(l, "table %s: \"%s\" holds a non-string", qname, field);
    }
    *n = (int)json_array_size(arr);
    return FR_OK;
}

static int load_conf(loader *l, json_t *t, const char *qname, const fr_schema *schema,
                     fr_table_conf *conf)
{
    json_t *arr = json_object_get(t, "options");
    if (!json_is_array(arr)) return bad(l, "table %s has no \"options\" array", qname);
    size_t n = json_array_size(arr);
    if (n > FR_TABLE_OPTIONS_MAX) return bad(l, "table %s has %zu options", qname, n);
    fr_option opts[FR_TABLE_OPTIONS_MAX];
    for (size_t i = 0; i < n; i++) {
        json_t *o = json_array_get(arr, i);
        opts[i].key = json_string_value(json_object_get(o, "key"));
        opts[i].value = json_string_value(json_object_get(o, "value"));
        if (!opts[i].key || !opts[i].value)
            return bad(l, "table %s: option %zu needs \"key\" and \"value\" strings", qname, i);
    }
    const char **pk = fr_calloc(FR_SCHEMA_COLUMNS_MAX, sizeof *pk);
    const char **part = fr_calloc(FR_SCHEMA_COLUMNS_MAX, sizeof *part);
    int npk = 0, npart = 0;
    int rc = pk && part ? FR_OK : fr_fail(l->err, FR_ENOMEM, "out of memory loading the catalog");
    if (rc == FR_OK) rc = load_key_names(l, t, "primary_key", qname, pk, &npk);
    if (rc == FR_OK) rc = load_key_names(l, t, "partition_keys", qname, part, &npart);
    fr_table_keys keys = {pk, npk, part, npart};
    fr_error e2 = {0};
    if (rc == FR_OK && fr_table_conf_parse(schema, &keys, opts, (int)n, conf, &e2) < 0)
        rc = bad(l, "table %s: %s", qname, e2.msg);
    fr_free(pk);
    fr_free(part);
    FR_TRY(rc);
    for (int i = 0; i < conf->npk && rc == FR_OK; i++) {
        const fr_field *f = fr_schema_field(schema, conf->pk[i]);
        if (f->type.nullable)
            rc = bad(l, "table %s: primary key column '%s' is nullable", qname, f->name);
    }
    int64_t nb = 0;
    if (rc == FR_OK) rc = get_int(l, t, "bucket_num", qname, &nb);
    if (rc == FR_OK && nb != conf->nbuckets)
        rc = bad(l, "table %s: bucket_num %" PRId64 " does not match its options (%d)", qname,
                 nb, conf->nbuckets);
    json_t *key = json_object_get(t, "bucket_key");
    if (rc == FR_OK && json_array_size(key) != (size_t)conf->nbucket_key)
        rc = bad(l, "table %s: bucket_key does not match its options", qname);
    for (int i = 0; rc == FR_OK && i < conf->nbucket_key; i++) {
        const char *name = json_string_value(json_array_get(key, (size_t)i));
        if (!name || fr_schema_find(schema, name) != conf->bucket_key[i])
            rc = bad(l, "table %s: bucket_key does not match its options", qname);
    }
    if (rc < 0) fr_table_conf_free(conf);
    return rc;
}

static int note_partition_id(loader *l, int64_t id)
{
    if (l->nids == l->capids) {
        int64_t cap = l->capids * 2 + 64;
        int64_t *ids = fr_realloc(l->part_ids, (size_t)cap * sizeof *ids);
        FR_CHECK(ids, FR_ENOMEM, l->err, "out of memory loading the catalog");
        l->part_ids = ids;
        l->capids = cap;
    }
    l->part_ids[l->nids++] = id;
    return FR_OK;
}

/* One entry of a table's "partitions": its values must be canonical and its name theirs. */
static int load_partition(loader *l, json_t *p, fr_table *t)
{
    int64_t id = 0, created = 0;
    FR_TRY(get_int(l, p, "id", "a partition", &id));
    FR_TRY(get_int(l, p, "created_ms", "a partition", &created));
    if (id < 1) return bad(l, "table %s: partition id %" PRId64 " is below 1", t->qname, id);
    json_t *vals = json_object_get(p, "values");
    const char *name = json_string_value(json_object_get(p, "name"));
    if (!json_is_array(vals) || json_array_size(vals) != (size_t)t->conf.npart || !name)
        return bad(l, "table %s: partition %" PRId64 " needs a \"name\" and %d \"values\"",
                   t->qname, id, t->conf.npart);
    char *values[FR_PARTITION_KEYS_MAX];
    fr_buf canon;
    fr_buf_init(&canon);
    int rc = FR_OK;
    for (int k = 0; rc == FR_OK && k < t->conf.npart; k++) {
        const char *v = json_string_value(json_array_get(vals, (size_t)k));
        fr_error e2 = {0};
        fr_buf_reset(&canon);
        if (!v || fr_partition_value_canon(t, k, v, strlen(v), false, &canon, &e2) < 0 ||
            strcmp((const char *)canon.data, v) != 0)
            rc = bad(l, "table %s: partition %" PRId64 " has a bad value %d%s%s", t->qname, id,
                     k + 1, e2.msg[0] ? ": " : "", e2.msg);
        values[k] = (char *)v;
    }
    fr_buf_free(&canon);
    fr_tpart *obj = NULL;
    if (rc == FR_OK) rc = fr_tpart_new(t, id, values, created, &obj, l->err);
    if (rc == FR_OK && strcmp(obj->info.name, name) != 0)
        rc = bad(l, "table %s: partition %" PRId64 " is named '%.64s' but its values make '%s'",
                 t->qname, id, name, obj->info.name);
    fr_error e2 = {0};
    if (rc == FR_OK && fr_table_insert_part(t, obj, &e2) < 0) {
        rc = bad(l, "%s", e2.msg);
    } else if (rc == FR_OK) {
        obj = NULL;
        rc = note_partition_id(l, id);
    }
    fr_tpart_release(obj);
    return rc;
}

static int load_partitions(loader *l, json_t *t, fr_table *obj)
{
    json_t *arr = json_object_get(t, "partitions");
    if (!arr) return FR_OK;
    if (obj->conf.npart == 0 || !json_is_array(arr))
        return bad(l, "table %s: \"partitions\" without partition keys, or not an array",
                   obj->qname);
    for (size_t i = 0; i < json_array_size(arr); i++)
        FR_TRY(load_partition(l, json_array_get(arr, i), obj));
    return FR_OK;
}

static int id_cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* Partition ids are unique in the catalog and below next_partition_id (which an older
 * catalog lacks: then it follows the largest id). */
static int check_partition_ids(loader *l, json_t *root)
{
    fr_engine *e = l->e;
    if (l->nids > 1) qsort(l->part_ids, (size_t)l->nids, sizeof *l->part_ids, id_cmp);
    for (int64_t i = 1; i < l->nids; i++)
        if (l->part_ids[i] == l->part_ids[i - 1])
            return bad(l, "partition id %" PRId64 " is used twice", l->part_ids[i]);
    int64_t max = l->nids > 0 ? l->part_ids[l->nids - 1] : 0;
    if (!json_object_get(root, "next_partition_id")) {
        e->next_partition_id = max + 1;
        return FR_OK;
    }
    FR_TRY(get_int(l, root, "next_partition_id", "the catalog", &e->next_partition_id));
    if (e->next_partition_id <= max || e->next_partition_id < 1)
        return bad(l, "next_partition_id %" PRId64 " is not above every partition id",
                   e->next_partition_id);
    return FR_OK;
}

static int load_table(loader *l, json_t *t)
{
    fr_engine *e = l->e;
    char db[FR_NAME_BYTES_MAX + 1], name[FR_NAME_BYTES_MAX + 1], qname[2 * FR_NAME_BYTES_MAX + 2];
    int64_t id = 0, created = 0;
    if (!json_is_object(t)) return bad(l, "an entry of \"tables\" is not an object");
    FR_TRY(get_name(l, t, "database", "database", db));
    FR_TRY(get_name(l, t, "name", "table", name));
    snprintf(qname, sizeof qname, "%s.%s", db, name);
    FR_TRY(get_int(l, t, "id", qname, &id));
    FR_TRY(get_int(l, t, "created_ms", qname, &created));
    if (!has_db(e, db)) return bad(l, "table %s is in a database that is not listed", qname);
    if (id < 1 || id >= e->next_table_id)
        return bad(l, "table %s has id %" PRId64 ", outside 1..next_table_id-1", qname, id);
    for (int i = 0; i < e->ntables; i++) {
        const fr_table *o = e->tables[i];
        if (o->id == id) return bad(l, "tables %s and %s share id %" PRId64, o->qname, qname, id);
        if (strcmp(o->db, db) == 0 && strcmp(o->name, name) == 0)
            return bad(l, "table %s appears twice", qname);
    }
    fr_schema **schemas = NULL;
    int ns = 0;
    FR_TRY(load_schemas(l, t, qname, &schemas, &ns));
    fr_table_conf conf;
    int rc = load_conf(l, t, qname, schemas[ns - 1], &conf);
    if (rc < 0) {
        for (int i = 0; i < ns; i++) fr_schema_free(schemas[i]);
        fr_free(schemas);
        return rc;
    }
    fr_table *obj = NULL;
    FR_TRY(fr_table_create_obj(id, db, name, created, schemas, ns, &conf, e->data_dir, &e->opts,
                               e->kv_env, &obj, l->err));
    fr_table_attach(obj, e->link);
    e->tables[e->ntables++] = obj;
    return load_partitions(l, t, obj);
}

int fr_catalog_parse(fr_engine *e, const char *path, const uint8_t *data, size_t len,
                     fr_error *err)
{
    assert(e->ndbs == 0 && e->ntables == 0);
    loader l = {.path = path, .e = e, .err = err};
    json_error_t jerr;
    json_t *root = json_loadb((const char *)data, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return fr_fail(err, FR_EINVAL, "%s does not parse as JSON (line %d: %s); fix the file "
                       "or restore it from a backup", path, jerr.line, jerr.text);
    int rc = FR_OK;
    const char *format = json_string_value(json_object_get(root, "format"));
    if (!format || strcmp(format, FR_CATALOG_FORMAT) != 0) {
        rc = bad(&l, "\"format\" is not \"" FR_CATALOG_FORMAT "\"");
        goto fail;
    }
    FR_GOTO(get_int(&l, root, "next_table_id", "the catalog", &e->next_table_id));
    if (e->next_table_id < 1) {
        rc = bad(&l, "next_table_id is below 1");
        goto fail;
    }
    FR_GOTO(load_databases(&l, json_object_get(root, "databases")));
    json_t *tables = json_object_get(root, "tables");
    if (!json_is_array(tables)) {
        rc = bad(&l, "\"tables\" is not an array");
        goto fail;
    }
    e->tables = fr_calloc(json_array_size(tables) + 1, sizeof *e->tables);
    if (!e->tables) {
        rc = fr_fail(err, FR_ENOMEM, "out of memory loading the catalog");
        goto fail;
    }
    for (size_t i = 0; i < json_array_size(tables); i++)
        FR_GOTO(load_table(&l, json_array_get(tables, i)));
    FR_GOTO(check_partition_ids(&l, root));
fail:
    fr_free(l.part_ids);
    json_decref(root);
    if (rc < 0) fr_catalog_clear(e);
    return rc;
}

int fr_catalog_load(fr_engine *e, const char *path, fr_error *err)
{
    uint8_t *data = NULL;
    size_t len = 0;
    FR_TRY(fr_read_file(path, FR_CATALOG_BYTES_MAX, &data, &len, err));
    int rc = fr_catalog_parse(e, path, data, len, err);
    fr_free(data);
    return rc;
}

void fr_catalog_clear(fr_engine *e)
{
    for (int i = 0; i < e->ntables; i++) fr_table_release(e->tables[i]);
    fr_free(e->tables);
    for (int i = 0; i < e->ndbs; i++) fr_free(e->dbs[i].name);
    fr_free(e->dbs);
    e->tables = NULL;
    e->dbs = NULL;
    e->ntables = e->ndbs = 0;
}
