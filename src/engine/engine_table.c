/* engine_table.c — table handles: their lifetime (reference counts, removal of a dropped
 * table's files by the last holder), what a handle says of itself, the lazy opening of
 * each bucket's log, and the table as JSON.
 *
 * Invariants: logs[b] goes from NULL to an open log once, under t->mu, and stays until the
 * table is destroyed; the catalog fields (schemas, conf, names) never change after
 * creation, so they are read without a lock. */
#include "engine/engine_int.h"

#include <assert.h>
#include <inttypes.h>
#include <stdlib.h>
#include <jansson.h>
#include <stdio.h>

int fr_table_create_obj(int64_t id, const char *db, const char *name, int64_t created_ms,
                        fr_schema **schemas, int nschemas, fr_table_conf *conf,
                        const char *data_dir, const fr_engine_options *eo, fr_kv_env *kv_env,
                        fr_table **out, fr_error *err)
{
    fr_table *t = fr_calloc(1, sizeof *t);
    if (!t) {
        for (int i = 0; i < nschemas; i++) fr_schema_free(schemas[i]);
        fr_free(schemas);
        fr_table_conf_free(conf);
        return fr_fail(err, FR_ENOMEM, "out of memory creating table %s.%s", db, name);
    }
    atomic_init(&t->refs, 1);
    atomic_init(&t->dropped, false);
    atomic_init(&t->round_robin, 0);
    pthread_mutex_init(&t->mu, NULL);
    t->id = id;
    t->created_ms = created_ms;
    t->schemas = schemas;
    t->nschemas = nschemas;
    t->conf = *conf;
    memset(conf, 0, sizeof *conf);
    fr_log_options_default(&t->log_base);
    t->log_base.flush = eo->flush;
    t->log_base.flush_interval_ms = eo->flush_interval_ms;
    if (eo->segment_bytes > 0) t->log_base.segment_bytes = eo->segment_bytes;
    t->log_base.retention_ms = t->conf.ttl_ms;
    t->log_base.retention_bytes = t->conf.retention_bytes;

    pthread_mutex_init(&t->parts_mu, NULL);
    fr_pkopt_kv_spec(schemas[nschemas - 1], &t->conf, &t->kv_spec);
    if (kv_env) fr_kv_env_retain(kv_env);
    t->kv_spec.env = kv_env;
    t->kv_spec.log_unsynced = eo->flush == FR_FLUSH_NONE;

    fr_buf path;
    fr_buf_init(&path);
    int rc = fr_buf_printf(&path, err, "%s/log/%" PRId64 "%c", data_dir, id, '\0');
    t->dir = rc == FR_OK ? (char *)fr_buf_steal(&path, NULL) : NULL;
    fr_buf_reset(&path);
    rc = fr_buf_printf(&path, err, "%s/kv/%" PRId64 "%c", data_dir, id, '\0');
    t->kv_dir = rc == FR_OK ? (char *)fr_buf_steal(&path, NULL) : NULL;
    fr_buf_free(&path);
    t->db = fr_strdup(db);
    t->name = fr_strdup(name);
    size_t qn = strlen(db) + strlen(name) + 2;
    t->qname = fr_malloc(qn);
    t->logs = fr_calloc((size_t)t->conf.nbuckets, sizeof(fr_log *));
    t->kvs = fr_calloc((size_t)t->conf.nbuckets, sizeof(fr_kv *));
    if (!t->dir || !t->kv_dir || !t->db || !t->name || !t->qname || !t->logs || !t->kvs) {
        t->nschemas = nschemas;
        fr_table_release(t);
        return fr_fail(err, FR_ENOMEM, "out of memory creating table %s.%s", db, name);
    }
    snprintf(t->qname, qn, "%s.%s", db, name);
    rc = fr_table_lake_init(t, data_dir, eo->lake_warehouse, err);
    if (rc < 0) {
        fr_table_release(t);
        return rc;
    }
    *out = t;
    return FR_OK;
}

void fr_table_retain(fr_table *t)
{
    atomic_fetch_add(&t->refs, 1);
}

static void table_destroy(fr_table *t)
{
    fr_table_lake_free(t);
    fr_table_parts_clear(t);
    fr_buckets_close(t->kvs, t->logs, t->conf.nbuckets, atomic_load(&t->dropped));
    fr_kv_env_release(t->kv_spec.env);
    const char *dirs[2] = {t->dir, t->kv_dir};
    for (int i = 0; i < 2 && atomic_load(&t->dropped); i++) {
        fr_error err = {0};
        if (dirs[i] && fr_remove_tree(dirs[i], &err) < 0)
            FR_WARN("table %s was dropped but its files stay: %s", t->qname, err.msg);
    }
    if (t->link && atomic_fetch_sub(&t->link->refs, 1) == 1) {
        pthread_mutex_destroy(&t->link->mu);
        fr_free(t->link);
    }
    pthread_mutex_destroy(&t->parts_mu);
    fr_free(t->kvs);
    fr_free(t->kv_dir);
    for (int i = 0; i < t->nschemas; i++) fr_schema_free(t->schemas[i]);
    fr_free(t->schemas);
    fr_table_conf_free(&t->conf);
    pthread_mutex_destroy(&t->mu);
    fr_free(t->logs);
    fr_free(t->dir);
    fr_free(t->db);
    fr_free(t->name);
    fr_free(t->qname);
    fr_free(t);
}

void fr_table_release(fr_table *t)
{
    if (!t) return;
    int before = atomic_fetch_sub(&t->refs, 1);
    assert(before > 0);
    if (before == 1) table_destroy(t);
}

bool fr_table_dropped(const fr_table *t) { return atomic_load(&t->dropped); }
const char *fr_table_db(const fr_table *t) { return t->db; }
const char *fr_table_name(const fr_table *t) { return t->name; }
int64_t fr_table_id(const fr_table *t) { return t->id; }
int64_t fr_table_created_ms(const fr_table *t) { return t->created_ms; }
const fr_schema *fr_table_schema(const fr_table *t) { return t->schemas[t->nschemas - 1]; }
int fr_table_num_buckets(const fr_table *t) { return t->conf.nbuckets; }
fr_compression fr_table_compression(const fr_table *t) { return t->conf.compression; }
int fr_table_num_options(const fr_table *t) { return t->conf.noptions; }

const int *fr_table_bucket_key(const fr_table *t, int *n)
{
    *n = t->conf.nbucket_key;
    return t->conf.nbucket_key > 0 ? t->conf.bucket_key : NULL;
}

void fr_table_option(const fr_table *t, int i, const char **key, const char **value)
{
    assert(i >= 0 && i < t->conf.noptions);
    *key = t->conf.keys[i];
    *value = t->conf.values[i];
}

int fr_table_get_log(fr_table *t, int bucket, fr_log **out, fr_error *err)
{
    return fr_tpart_log(t, NULL, bucket, false, out, err);
}

int fr_table_get_log_if_exists(fr_table *t, int bucket, fr_log **out, fr_error *err)
{
    return fr_tpart_log(t, NULL, bucket, true, out, err);
}

bool fr_table_is_pk(const fr_table *t) { return t->conf.npk > 0; }

const int *fr_table_primary_key(const fr_table *t, int *n)
{
    *n = t->conf.npk;
    return t->conf.npk > 0 ? t->conf.pk : NULL;
}

const int *fr_table_partition_keys(const fr_table *t, int *n)
{
    *n = t->conf.npart;
    return t->conf.npart > 0 ? t->conf.part : NULL;
}

fr_log *fr_table_log(fr_table *t, int bucket)
{
    fr_log *log = NULL;
    fr_error err = {0};
    if (fr_table_get_log(t, bucket, &log, &err) < 0) {
        FR_WARN("%s", err.msg);
        return NULL;
    }
    return log;
}

int fr_table_check_types(const fr_table *t, const fr_batch *b, fr_error *err)
{
    const fr_schema *ts = fr_table_schema(t);
    const fr_schema *bs = fr_batch_schema(b);
    int n = fr_schema_num_fields(ts);
    FR_CHECK(fr_schema_num_fields(bs) == n, FR_ETYPE, err,
             "table %s has %d columns but the batch has %d", t->qname, n,
             fr_schema_num_fields(bs));
    for (int i = 0; i < n; i++) {
        const fr_field *tf = fr_schema_field(ts, i), *bf = fr_schema_field(bs, i);
        if (!fr_type_equal(&tf->type, &bf->type)) {
            char want[64], got[64];
            fr_type_format(&tf->type, false, want, sizeof want);
            fr_type_format(&bf->type, false, got, sizeof got);
            return fr_fail(err, FR_ETYPE, "table %s: column %d '%s' is %s but the batch's "
                           "column '%s' is %s", t->qname, i + 1, tf->name, want, bf->name, got);
        }
    }
    return FR_OK;
}

int fr_table_check_batch(const fr_table *t, const fr_batch *b, fr_error *err)
{
    const fr_schema *ts = fr_table_schema(t);
    const fr_schema *bs = fr_batch_schema(b);
    int n = fr_schema_num_fields(ts);
    FR_CHECK(fr_schema_num_fields(bs) == n, FR_ETYPE, err,
             "table %s has %d columns but the batch has %d", t->qname, n,
             fr_schema_num_fields(bs));
    for (int i = 0; i < n; i++) {
        const fr_field *tf = fr_schema_field(ts, i), *bf = fr_schema_field(bs, i);
        if (!fr_type_equal(&tf->type, &bf->type)) {
            char want[64], got[64];
            fr_type_format(&tf->type, false, want, sizeof want);
            fr_type_format(&bf->type, false, got, sizeof got);
            return fr_fail(err, FR_ETYPE, "table %s: column %d '%s' is %s but the batch's "
                           "column '%s' is %s", t->qname, i + 1, tf->name, want, bf->name, got);
        }
        const fr_column *c = fr_batch_column(b, i);
        FR_CHECK(tf->type.nullable || c->null_count == 0, FR_EINVAL, err,
                 "table %s: column '%s' is NOT NULL but the batch has %" PRId64 " nulls in it",
                 t->qname, tf->name, c->null_count);
    }
    return FR_OK;
}

/* ---- JSON ------------------------------------------------------------------------------ */

static int json_fail(fr_error *err, const char *what)
{
    return fr_fail(err, FR_ENOMEM, "out of memory building %s", what);
}

static json_t *buckets_json(fr_table *t, fr_tpart *p)
{
    json_t *arr = json_array();
    for (int b = 0; arr && b < t->conf.nbuckets && (p || t->conf.npart == 0); b++) {
        fr_log *log = NULL;
        fr_error err = {0};
        int64_t start = 0, end = 0, bytes = 0;
        if (fr_tpart_log(t, p, b, true, &log, &err) == FR_OK && log) {
            start = fr_log_start_offset(log);
            end = fr_log_end_offset(log);
            bytes = fr_log_size_bytes(log);
        }
        json_t *o = json_pack("{s:i, s:I, s:I, s:I}", "bucket", b, "start_offset",
                              (json_int_t)start, "end_offset", (json_int_t)end,
                              "size_bytes", (json_int_t)bytes);
        if (!o || json_array_append_new(arr, o) < 0) {
            json_decref(arr);
            return NULL;
        }
    }
    return arr;
}

static json_t *columns_json(const fr_table *t, const int *cols, int n)
{
    json_t *arr = json_array();
    for (int i = 0; arr && i < n; i++)
        json_array_append_new(arr, json_string(fr_schema_field(fr_table_schema(t), cols[i])->name));
    return arr;
}

static json_t *partitions_json(fr_table *t)
{
    fr_tpart **parts = NULL;
    int n = 0;
    fr_error err = {0};
    if (fr_table_parts_snapshot(t, &parts, &n, &err) < 0) return NULL;
    json_t *arr = json_array();
    for (int i = 0; arr && i < n; i++) {
        json_t *values = json_array();
        for (int k = 0; values && k < parts[i]->info.nvalues; k++)
            json_array_append_new(values, json_string(parts[i]->info.values[k]));
        json_t *o = json_pack("{s:I, s:s, s:o*, s:I, s:o*}", "id",
                              (json_int_t)parts[i]->info.id, "name", parts[i]->info.name,
                              "values", values, "created_ms",
                              (json_int_t)parts[i]->info.created_ms, "buckets",
                              buckets_json(t, parts[i]));
        if (!o || json_array_append_new(arr, o) < 0) {
            json_decref(arr);
            arr = NULL;
        }
    }
    fr_tparts_release(parts, n);
    return arr;
}

/* The members of primary-key and partitioned tables, added to root. */
static int keys_json(fr_table *t, json_t *root)
{
    int bad = 0;
    bad |= json_object_set_new(root, "primary_key", columns_json(t, t->conf.pk, t->conf.npk));
    bad |= json_object_set_new(root, "partition_keys",
                               columns_json(t, t->conf.part, t->conf.npart));
    if (t->conf.npk > 0) {
        bad |= json_object_set_new(root, "merge_engine",
                                   json_string(fr_merge_engine_name(t->conf.merge)));
        bad |= json_object_set_new(root, "delete_behavior",
                                   json_string(fr_delete_behavior_name(t->conf.delete_behavior)));
        bad |= json_object_set_new(root, "changelog_image",
                                   json_string(fr_changelog_image_name(t->conf.image)));
    }
    if (t->conf.npart > 0) bad |= json_object_set_new(root, "partitions", partitions_json(t));
    return bad ? FR_ENOMEM : FR_OK;
}

int fr_table_to_json(const fr_table *ct, char **out, fr_error *err)
{
    fr_table *t = (fr_table *)ct; /* lazily opening logs does not change what t says */
    char *schema_text = NULL;
    FR_TRY(fr_schema_to_json(fr_table_schema(t), &schema_text, err));
    json_error_t jerr;
    json_t *schema = json_loads(schema_text, 0, &jerr);
    fr_free(schema_text);
    if (!schema) return fr_fail(err, FR_EINVAL, "schema JSON does not parse: %s", jerr.text);
    json_t *opts = json_object();
    json_t *key = json_array();
    for (int i = 0; opts && i < t->conf.noptions; i++)
        json_object_set_new(opts, t->conf.keys[i], json_string(t->conf.values[i]));
    for (int i = 0; key && i < t->conf.nbucket_key; i++)
        json_array_append_new(
            key, json_string(fr_schema_field(fr_table_schema(t), t->conf.bucket_key[i])->name));
    json_t *root = json_pack(
        "{s:I, s:s, s:s, s:I, s:o, s:o, s:i, s:o, s:s, s:I, s:I, s:o*}", "id",
        (json_int_t)t->id, "database", t->db, "name", t->name, "created_ms",
        (json_int_t)t->created_ms, "schema", schema, "options", opts ? opts : json_null(),
        "bucket_num", t->conf.nbuckets, "bucket_key", key ? key : json_null(), "compression",
        fr_compression_name(t->conf.compression), "log_ttl_ms", (json_int_t)t->conf.ttl_ms,
        "log_retention_bytes", (json_int_t)t->conf.retention_bytes, "buckets",
        buckets_json(t, NULL));
    if (!root || keys_json(t, root) < 0) {
        json_decref(root);
        return json_fail(err, "table JSON");
    }
    char *text = json_dumps(root, JSON_INDENT(2));
    json_decref(root);
    if (!text) return json_fail(err, "table JSON");
    *out = fr_strdup(text);
    free(text); /* jansson's allocator, not ours */
    FR_CHECK(*out, FR_ENOMEM, err, "out of memory copying table JSON");
    return FR_OK;
}
