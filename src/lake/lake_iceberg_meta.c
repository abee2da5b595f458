/* lake_iceberg_meta.c — Iceberg v2 table metadata: the JSON document of a new table, the
 * parser and checker of published documents, snapshot summaries, and the files of the
 * filesystem catalog (`metadata/v<N>.metadata.json`, `metadata/version-hint.text`).
 *
 * Invariants: a document is trusted only after every field used is checked for type and
 * range; a published version file is never replaced (it is linked into place from a synced
 * temporary file, and link() fails when the name exists); the version hint only ever names a
 * version that is already published. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "lake/lake_iceberg_int.h"

/* ---- types ----------------------------------------------------------------------------- */

int fr_ice_type_name(const fr_type *t, char *out, size_t cap, fr_error *err)
{
    const char *name = NULL;
    switch (t->id) {
    case FR_T_BOOLEAN: name = "boolean"; break;
    case FR_T_TINYINT: case FR_T_SMALLINT: case FR_T_INT: name = "int"; break;
    case FR_T_BIGINT: name = "long"; break;
    case FR_T_FLOAT: name = "float"; break;
    case FR_T_DOUBLE: name = "double"; break;
    case FR_T_CHAR: case FR_T_VARCHAR: case FR_T_STRING: name = "string"; break;
    case FR_T_BYTES: name = "binary"; break;
    case FR_T_DATE: name = "date"; break;
    case FR_T_TIME: name = "time"; break;
    case FR_T_TIMESTAMP: name = "timestamp"; break;
    case FR_T_TIMESTAMP_LTZ: name = "timestamptz"; break;
    case FR_T_DECIMAL:
        snprintf(out, cap, "decimal(%d, %d)", t->precision, t->scale);
        return 0;
    }
    FR_CHECK(name, FR_EINVAL, err, "type %d has no Iceberg type", (int)t->id);
    if (fr_type_is_temporal(t->id) && t->id != FR_T_DATE)
        FR_CHECK(t->precision == 6, FR_EINVAL, err,
                 "Iceberg keeps times in microseconds: precision %d is not 6", t->precision);
    snprintf(out, cap, "%s", name);
    return 0;
}

/* A small decimal number (at most 3 digits) at *s, with spaces around it. */
static bool parse_small(const char **s, int *out)
{
    while (**s == ' ') (*s)++;
    int v = 0, n = 0;
    while (**s >= '0' && **s <= '9' && n < 3) v = v * 10 + (*(*s)++ - '0'), n++;
    while (**s == ' ') (*s)++;
    *out = v;
    return n > 0;
}

/* "P, S)" after "decimal(". */
static bool parse_decimal_args(const char *s, int *p, int *sc)
{
    if (!parse_small(&s, p) || *s++ != ',') return false;
    if (!parse_small(&s, sc) || *s++ != ')') return false;
    return *s == 0;
}

/* The firth type of an Iceberg primitive type name, for tables firth did not create. */
static int type_from_name(const char *s, fr_type *out, fr_error *err)
{
    static const struct { const char *name; fr_type_id id; } simple[] = {
        {"boolean", FR_T_BOOLEAN}, {"int", FR_T_INT}, {"long", FR_T_BIGINT},
        {"float", FR_T_FLOAT}, {"double", FR_T_DOUBLE}, {"string", FR_T_STRING},
        {"binary", FR_T_BYTES}, {"date", FR_T_DATE},
    };
    for (size_t i = 0; i < sizeof simple / sizeof simple[0]; i++)
        if (strcmp(s, simple[i].name) == 0) {
            *out = fr_type_of(simple[i].id);
            return 0;
        }
    if (strcmp(s, "time") == 0) { *out = fr_type_time_like(FR_T_TIME, 6); return 0; }
    if (strcmp(s, "timestamp") == 0) { *out = fr_type_time_like(FR_T_TIMESTAMP, 6); return 0; }
    if (strcmp(s, "timestamptz") == 0) {
        *out = fr_type_time_like(FR_T_TIMESTAMP_LTZ, 6);
        return 0;
    }
    int p, sc;
    if (strncmp(s, "decimal(", 8) == 0 && parse_decimal_args(s + 8, &p, &sc) && p >= 1 &&
        p <= FR_DECIMAL_PRECISION_MAX && sc >= 0 && sc <= p) {
        *out = fr_type_decimal(p, sc);
        return 0;
    }
    return fr_fail(err, FR_EUNSUPPORTED, "Iceberg type \"%.40s\" is not supported", s);
}

/* ---- a new table's document ------------------------------------------------------------ */

static int set_new(json_t *obj, const char *key, json_t *v, fr_error *err)
{
    if (!v || json_object_set_new(obj, key, v) != 0)
        return fr_fail(err, FR_ENOMEM, "out of memory building table metadata");
    return 0;
}

static int append_new(json_t *arr, json_t *v, fr_error *err)
{
    if (!v || json_array_append_new(arr, v) != 0)
        return fr_fail(err, FR_ENOMEM, "out of memory building table metadata");
    return 0;
}

static int schema_json(const fr_lake_spec *spec, json_t **out, fr_error *err)
{
    int rc = 0;
    json_t *s = json_object(), *fields = json_array(), *ids = json_array();
    if (!s || !fields || !ids) {
        json_decref(s), json_decref(fields), json_decref(ids);
        return fr_fail(err, FR_ENOMEM, "out of memory building table metadata");
    }
    FR_GOTO(set_new(s, "type", json_string("struct"), err));
    FR_GOTO(set_new(s, "schema-id", json_integer(0), err));
    for (int i = 0; i < spec->nkey_cols; i++)
        FR_GOTO(append_new(ids, json_integer(spec->field_ids[spec->key_cols[i]]), err));
    FR_GOTO(set_new(s, "identifier-field-ids", ids, err));
    ids = NULL;
    for (int i = 0; i < fr_schema_num_fields(spec->schema); i++) {
        const fr_field *f = fr_schema_field(spec->schema, i);
        char tname[48];
        FR_GOTO(fr_ice_type_name(&f->type, tname, sizeof tname, err));
        json_t *jf = json_object();
        FR_GOTO(append_new(fields, jf, err));
        FR_GOTO(set_new(jf, "id", json_integer(spec->field_ids[i]), err));
        FR_GOTO(set_new(jf, "name", json_string(f->name), err));
        FR_GOTO(set_new(jf, "required", json_boolean(!f->type.nullable), err));
        FR_GOTO(set_new(jf, "type", json_string(tname), err));
    }
    FR_GOTO(set_new(s, "fields", fields, err));
    *out = s;
    return 0;
fail:
    json_decref(ids);
    json_decref(fields);
    json_decref(s);
    return rc;
}

static int check_spec(const fr_lake_spec *spec, fr_error *err)
{
    int n = fr_schema_num_fields(spec->schema);
    FR_CHECK(spec->field_ids, FR_EINVAL, err, "lake spec without field ids");
    for (int i = 0; i < n; i++) {
        FR_CHECK(spec->field_ids[i] > 0 && spec->field_ids[i] < FR_ICE_FIRST_PARTITION_FIELD_ID,
                 FR_EINVAL, err, "column %s: field id %d out of range 1..999",
                 fr_schema_field(spec->schema, i)->name, (int)spec->field_ids[i]);
        for (int j = 0; j < i; j++)
            FR_CHECK(spec->field_ids[i] != spec->field_ids[j], FR_EINVAL, err,
                     "field id %d used twice", (int)spec->field_ids[i]);
    }
    FR_CHECK(spec->npartition_cols >= 0 && spec->npartition_cols <= FR_ICE_PARTITION_FIELDS_MAX,
             FR_EINVAL, err, "%d partition columns", spec->npartition_cols);
    for (int i = 0; i < spec->npartition_cols; i++)
        FR_CHECK(spec->partition_cols[i] >= 0 && spec->partition_cols[i] < n, FR_EINVAL, err,
                 "partition column %d out of range", spec->partition_cols[i]);
    FR_CHECK(spec->nkey_cols >= 0 && spec->nkey_cols <= n, FR_EINVAL, err, "%d key columns",
             spec->nkey_cols);
    for (int i = 0; i < spec->nkey_cols; i++) {
        FR_CHECK(spec->key_cols[i] >= 0 && spec->key_cols[i] < n, FR_EINVAL, err,
                 "key column %d out of range", spec->key_cols[i]);
        const fr_field *f = fr_schema_field(spec->schema, spec->key_cols[i]);
        FR_CHECK(!f->type.nullable, FR_EINVAL, err,
                 "key column %s must be NOT NULL (an Iceberg identifier field)", f->name);
    }
    return 0;
}

static int spec_json(const fr_lake_spec *spec, json_t **out, fr_error *err)
{
    int rc = 0;
    json_t *ps = json_object(), *fields = json_array();
    if (!ps || !fields) {
        json_decref(ps), json_decref(fields);
        return fr_fail(err, FR_ENOMEM, "out of memory building table metadata");
    }
    FR_GOTO(set_new(ps, "spec-id", json_integer(0), err));
    for (int i = 0; i < spec->npartition_cols; i++) {
        int c = spec->partition_cols[i];
        json_t *pf = json_object();
        FR_GOTO(append_new(fields, pf, err));
        FR_GOTO(set_new(pf, "name", json_string(fr_schema_field(spec->schema, c)->name), err));
        FR_GOTO(set_new(pf, "transform", json_string("identity"), err));
        FR_GOTO(set_new(pf, "source-id", json_integer(spec->field_ids[c]), err));
        FR_GOTO(set_new(pf, "field-id", json_integer(FR_ICE_FIRST_PARTITION_FIELD_ID + i), err));
    }
    FR_GOTO(set_new(ps, "fields", fields, err));
    *out = ps;
    return 0;
fail:
    json_decref(fields);
    json_decref(ps);
    return rc;
}

int fr_ice_meta_create_json(const fr_lake_spec *spec, const char *location, json_t **out,
                            fr_error *err)
{
    FR_TRY(check_spec(spec, err));
    int rc = 0;
    char uuid[37];
    char *firth_schema = NULL;
    json_t *m = json_object(), *sub = NULL;
    if (!m) return fr_fail(err, FR_ENOMEM, "out of memory building table metadata");
    FR_GOTO(fr_ice_uuid(uuid, err));
    int32_t last_col = 0;
    for (int i = 0; i < fr_schema_num_fields(spec->schema); i++)
        if (spec->field_ids[i] > last_col) last_col = spec->field_ids[i];
    FR_GOTO(set_new(m, "format-version", json_integer(2), err));
    FR_GOTO(set_new(m, "table-uuid", json_string(uuid), err));
    FR_GOTO(set_new(m, "location", json_string(location), err));
    FR_GOTO(set_new(m, "last-sequence-number", json_integer(0), err));
    FR_GOTO(set_new(m, "last-updated-ms", json_integer(fr_now_ms()), err));
    FR_GOTO(set_new(m, "last-column-id", json_integer(last_col), err));
    FR_GOTO(set_new(m, "current-schema-id", json_integer(0), err));
    FR_GOTO(schema_json(spec, &sub, err));
    FR_GOTO(set_new(m, "schemas", json_pack("[o]", sub), err));
    sub = NULL;
    FR_GOTO(set_new(m, "default-spec-id", json_integer(0), err));
    FR_GOTO(spec_json(spec, &sub, err));
    FR_GOTO(set_new(m, "partition-specs", json_pack("[o]", sub), err));
    sub = NULL;
    FR_GOTO(set_new(m, "last-partition-id",
                    json_integer(FR_ICE_FIRST_PARTITION_FIELD_ID - 1 + spec->npartition_cols),
                    err));
    FR_GOTO(set_new(m, "default-sort-order-id", json_integer(0), err));
    FR_GOTO(set_new(m, "sort-orders", json_pack("[{s:i,s:[]}]", "order-id", 0, "fields"), err));
    FR_GOTO(fr_schema_to_json(spec->schema, &firth_schema, err));
    FR_GOTO(set_new(m, "properties",
                    json_pack("{s:s,s:s}", "write.format.default", "parquet",
                              FR_ICE_PROP_SCHEMA, firth_schema),
                    err));
    FR_GOTO(set_new(m, "current-snapshot-id", json_integer(-1), err));
    FR_GOTO(set_new(m, "refs", json_object(), err));
    FR_GOTO(set_new(m, "snapshots", json_array(), err));
    FR_GOTO(set_new(m, "snapshot-log", json_array(), err));
    FR_GOTO(set_new(m, "metadata-log", json_array(), err));
    fr_free(firth_schema);
    *out = m;
    return 0;
fail:
    fr_free(firth_schema);
    json_decref(sub);
    json_decref(m);
    return rc;
}

/* ---- parsing --------------------------------------------------------------------------- */

#define BAD(...) fr_fail(err, FR_ECORRUPT, __VA_ARGS__)

static int get_int(json_t *obj, const char *key, bool required, int64_t lo, int64_t hi,
                   int64_t def, int64_t *out, fr_error *err)
{
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v)) {
        if (required) return BAD("\"%s\" is missing", key);
        *out = def;
        return 0;
    }
    if (!json_is_integer(v)) return BAD("\"%s\" is not an integer", key);
    int64_t i = json_integer_value(v);
    if (i < lo || i > hi) return BAD("\"%s\" = %lld is out of range", key, (long long)i);
    *out = i;
    return 0;
}

static int get_str(json_t *obj, const char *key, const char **out, fr_error *err)
{
    json_t *v = json_object_get(obj, key);
    if (!json_is_string(v)) return BAD("\"%s\" is missing or not a string", key);
    *out = json_string_value(v);
    return 0;
}

static int get_array(json_t *obj, const char *key, bool required, size_t max, json_t **out,
                     fr_error *err)
{
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v)) {
        if (required) return BAD("\"%s\" is missing", key);
        *out = NULL;
        return 0;
    }
    if (!json_is_array(v)) return BAD("\"%s\" is not an array", key);
    if (json_array_size(v) > max) return BAD("\"%s\" has too many entries", key);
    *out = v;
    return 0;
}

/* The object in arr whose key equals id. */
static json_t *find_by_id(json_t *arr, const char *key, int64_t id)
{
    size_t i;
    json_t *e;
    json_array_foreach(arr, i, e) {
        json_t *v = json_object_get(e, key);
        if (json_is_integer(v) && json_integer_value(v) == id) return e;
    }
    return NULL;
}

static int parse_schema(fr_ice_meta *m, json_t *root, fr_error *err)
{
    int64_t sid = 0;
    json_t *schemas = NULL, *fields = NULL;
    FR_TRY(get_int(root, "current-schema-id", true, 0, INT32_MAX, 0, &sid, err));
    FR_TRY(get_array(root, "schemas", true, 1 << 20, &schemas, err));
    json_t *s = find_by_id(schemas, "schema-id", sid);
    if (!json_is_object(s)) return BAD("current schema %lld is not in \"schemas\"", (long long)sid);
    m->schema_id = (int32_t)sid;
    FR_TRY(get_array(s, "fields", true, FR_SCHEMA_COLUMNS_MAX, &fields, err));
    size_t n = json_array_size(fields);
    if (n == 0) return BAD("the schema has no fields");
    fr_field *ff = fr_calloc(n, sizeof *ff);
    m->field_ids = fr_calloc(n, sizeof *m->field_ids);
    if (!ff || !m->field_ids) {
        fr_free(ff);
        return fr_fail(err, FR_ENOMEM, "out of memory reading a schema");
    }
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *f = json_array_get(fields, i);
        const char *name = NULL, *tname;
        int64_t id = 0;
        json_t *req = json_object_get(f, "required");
        if (!json_is_object(f)) { rc = BAD("schema field %zu is not an object", i); goto fail; }
        FR_GOTO(get_int(f, "id", true, 0, INT32_MAX, 0, &id, err));
        FR_GOTO(get_str(f, "name", &name, err));
        if (!json_is_string(json_object_get(f, "type"))) {
            rc = fr_fail(err, FR_EUNSUPPORTED, "field %.60s: nested types are not supported",
                         name);
            goto fail;
        }
        tname = json_string_value(json_object_get(f, "type"));
        if (!json_is_boolean(req)) { rc = BAD("field %.60s: \"required\" is missing", name); goto fail; }
        FR_GOTO(type_from_name(tname, &ff[i].type, err));
        ff[i].type.nullable = !json_is_true(req);
        ff[i].name = (char *)name;
        m->field_ids[i] = (int32_t)id;
    }
    rc = fr_schema_new(ff, (int)n, 0, &m->schema, err);
    if (rc < 0) rc = fr_fail(err, FR_ECORRUPT, "bad schema: %s", err ? err->msg : "");
fail:
    fr_free(ff);
    if (rc < 0) return rc;
    /* firth keeps its own types (TINYINT, CHAR(n), ...) beside Iceberg's, which map them
     * many-to-one; they are used when they agree with the Iceberg schema. */
    json_t *props = json_object_get(root, "properties");
    json_t *fs = json_is_object(props) ? json_object_get(props, FR_ICE_PROP_SCHEMA) : NULL;
    if (json_is_string(fs)) {
        fr_schema *own = NULL;
        const char *txt = json_string_value(fs);
        if (fr_schema_from_json(txt, strlen(txt), &own, err) < 0)
            return BAD("bad \"%s\" property: %s", FR_ICE_PROP_SCHEMA, err ? err->msg : "");
        bool same = fr_schema_num_fields(own) == (int)n;
        for (int i = 0; same && i < (int)n; i++) {
            const fr_field *a = fr_schema_field(own, i), *b = fr_schema_field(m->schema, i);
            char ta[48], tb[48];
            same = strcmp(a->name, b->name) == 0 && a->type.nullable == b->type.nullable &&
                   fr_ice_type_name(&a->type, ta, sizeof ta, NULL) == 0 &&
                   fr_ice_type_name(&b->type, tb, sizeof tb, NULL) == 0 && strcmp(ta, tb) == 0;
        }
        if (!same) {
            fr_schema_free(own);
            return BAD("the \"%s\" property disagrees with the Iceberg schema",
                       FR_ICE_PROP_SCHEMA);
        }
        fr_schema_free(m->schema);
        m->schema = own;
    }
    return 0;
}

static int col_of_id(const fr_ice_meta *m, int64_t id)
{
    for (int i = 0; i < fr_schema_num_fields(m->schema); i++)
        if (m->field_ids[i] == id) return i;
    return -1;
}

static int parse_keys(fr_ice_meta *m, json_t *root, fr_error *err)
{
    json_t *s = find_by_id(json_object_get(root, "schemas"), "schema-id", m->schema_id);
    json_t *ids;
    FR_TRY(get_array(s, "identifier-field-ids", false, FR_SCHEMA_COLUMNS_MAX, &ids, err));
    if (!ids || json_array_size(ids) == 0) return 0;
    m->key_cols = fr_calloc(json_array_size(ids), sizeof *m->key_cols);
    if (!m->key_cols) return fr_fail(err, FR_ENOMEM, "out of memory reading a schema");
    size_t i;
    json_t *e;
    json_array_foreach(ids, i, e) {
        int c = json_is_integer(e) ? col_of_id(m, json_integer_value(e)) : -1;
        if (c < 0) return BAD("identifier field %zu names no column", i);
        m->key_cols[m->nkey++] = c;
    }
    return 0;
}

static int parse_spec(fr_ice_meta *m, json_t *root, fr_error *err)
{
    int64_t sid = 0, last = 0;
    json_t *specs, *fields;
    FR_TRY(get_int(root, "default-spec-id", true, 0, INT32_MAX, 0, &sid, err));
    FR_TRY(get_int(root, "last-partition-id", true, 0, INT32_MAX, 0, &last, err));
    m->last_partition_id = (int32_t)last;
    FR_TRY(get_array(root, "partition-specs", true, 1 << 20, &specs, err));
    json_t *ps = find_by_id(specs, "spec-id", sid);
    if (!json_is_object(ps)) return BAD("default partition spec %lld is missing", (long long)sid);
    m->spec_id = (int32_t)sid;
    FR_TRY(get_array(ps, "fields", true, FR_ICE_PARTITION_FIELDS_MAX, &fields, err));
    size_t n = json_array_size(fields);
    if (n == 0) return 0;
    m->part_cols = fr_calloc(n, sizeof *m->part_cols);
    m->part_ids = fr_calloc(n, sizeof *m->part_ids);
    if (!m->part_cols || !m->part_ids)
        return fr_fail(err, FR_ENOMEM, "out of memory reading a partition spec");
    for (size_t i = 0; i < n; i++) {
        json_t *f = json_array_get(fields, i);
        const char *tr = NULL;
        int64_t src, fid;
        if (!json_is_object(f)) return BAD("partition field %zu is not an object", i);
        FR_TRY(get_str(f, "transform", &tr, err));
        FR_TRY(get_int(f, "source-id", true, 0, INT32_MAX, 0, &src, err));
        FR_TRY(get_int(f, "field-id", true, 0, INT32_MAX, 0, &fid, err));
        if (strcmp(tr, "identity") != 0)
            return fr_fail(err, FR_EUNSUPPORTED, "partition transform \"%.40s\" is not supported",
                           tr);
        int c = col_of_id(m, src);
        if (c < 0) return BAD("partition field %zu: source %lld names no column", i, (long long)src);
        m->part_cols[i] = c;
        m->part_ids[i] = (int32_t)fid;
        m->npart = (int)i + 1;
    }
    return 0;
}

static int parse_snapshot(const fr_ice_meta *m, json_t *s, size_t i, fr_ice_snap *o,
                          fr_error *err)
{
    if (!json_is_object(s)) return BAD("snapshot %zu is not an object", i);
    FR_TRY(get_int(s, "snapshot-id", true, 0, INT64_MAX, 0, &o->id, err));
    FR_TRY(get_int(s, "parent-snapshot-id", false, 0, INT64_MAX, -1, &o->parent_id, err));
    FR_TRY(get_int(s, "sequence-number", true, 0, m->last_seq, 0, &o->seq, err));
    FR_TRY(get_int(s, "timestamp-ms", true, INT64_MIN, INT64_MAX, 0, &o->ts_ms, err));
    FR_TRY(get_str(s, "manifest-list", &o->manifest_list, err));
    o->summary = json_object_get(s, "summary");
    const char *op;
    if (!json_is_object(o->summary)) return BAD("snapshot %lld has no summary", (long long)o->id);
    return get_str(o->summary, "operation", &op, err);
}

static int parse_snapshots(fr_ice_meta *m, json_t *root, fr_error *err)
{
    json_t *snaps;
    FR_TRY(get_int(root, "current-snapshot-id", false, -1, INT64_MAX, -1, &m->current_id, err));
    FR_TRY(get_array(root, "snapshots", false, FR_ICE_SNAPSHOTS_MAX, &snaps, err));
    size_t n = snaps ? json_array_size(snaps) : 0;
    if (n) {
        m->snaps = fr_calloc(n, sizeof *m->snaps);
        if (!m->snaps) return fr_fail(err, FR_ENOMEM, "out of memory reading snapshots");
    }
    /* Snapshot ids must be unique; a map keeps the check linear. */
    fr_ice_map *ids = fr_ice_map_new();
    if (!ids) return fr_fail(err, FR_ENOMEM, "out of memory reading snapshots");
    for (size_t i = 0; i < n; i++) {
        json_t *s = json_array_get(snaps, i);
        fr_ice_snap *o = &m->snaps[i];
        int rc = parse_snapshot(m, s, i, o, err);
        if (rc < 0) {
            fr_ice_map_free(ids);
            return rc;
        }
        int64_t *slot;
        rc = fr_ice_map_put(ids, &o->id, sizeof o->id, 0, &slot, err);
        if (rc < 0) {
            fr_ice_map_free(ids);
            return rc;
        }
        if ((*slot)++ > 0) {
            fr_ice_map_free(ids);
            return BAD("snapshot id %lld repeats", (long long)o->id);
        }
        m->nsnaps = (int)i + 1;
    }
    fr_ice_map_free(ids);
    if (m->current_id >= 0 && !fr_ice_meta_snap(m, m->current_id))
        return BAD("current snapshot %lld is not in \"snapshots\"", (long long)m->current_id);
    return 0;
}

static int parse_root(fr_ice_meta *m, json_t *root, fr_error *err)
{
    int64_t v = 0, col = 0;
    if (!json_is_object(root)) return BAD("not a JSON object");
    FR_TRY(get_int(root, "format-version", true, 1, 3, 0, &v, err));
    if (v != 2)
        return fr_fail(err, FR_EUNSUPPORTED, "Iceberg format version %lld (firth reads 2)",
                       (long long)v);
    FR_TRY(get_str(root, "table-uuid", &m->uuid, err));
    FR_TRY(get_str(root, "location", &m->location, err));
    FR_TRY(get_int(root, "last-sequence-number", true, 0, INT64_MAX, 0, &m->last_seq, err));
    FR_TRY(get_int(root, "last-updated-ms", true, INT64_MIN, INT64_MAX, 0, &v, err));
    FR_TRY(get_int(root, "last-column-id", true, 0, INT32_MAX, 0, &col, err));
    m->last_column_id = (int32_t)col;
    FR_TRY(parse_schema(m, root, err));
    FR_TRY(parse_keys(m, root, err));
    FR_TRY(parse_spec(m, root, err));
    FR_TRY(parse_snapshots(m, root, err));
    return 0;
}

int fr_ice_meta_parse(const char *text, size_t len, const char *name, fr_ice_meta **out,
                      fr_error *err)
{
    *out = NULL;
    json_error_t jerr;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return fr_fail(err, FR_ECORRUPT, "%s: bad JSON at line %d: %s", name, jerr.line,
                       jerr.text);
    fr_ice_meta *m = fr_calloc(1, sizeof *m);
    if (!m) {
        json_decref(root);
        return fr_fail(err, FR_ENOMEM, "out of memory reading %s", name);
    }
    m->root = root;
    m->refs = 1;
    m->current_id = -1;
    m->file = fr_strdup(name);
    int rc = m->file ? parse_root(m, root, err)
                     : fr_fail(err, FR_ENOMEM, "out of memory reading %s", name);
    if (rc < 0) {
        fr_error_wrap(err, "%s", name);
        fr_ice_meta_free(m);
        return rc;
    }
    *out = m;
    return 0;
}

void fr_ice_meta_free(fr_ice_meta *m)
{
    if (!m || --m->refs > 0) return;
    json_decref(m->root);
    fr_free(m->file);
    fr_schema_free(m->schema);
    fr_free(m->field_ids);
    fr_free(m->part_cols);
    fr_free(m->part_ids);
    fr_free(m->key_cols);
    fr_free(m->snaps);
    fr_free(m);
}

const fr_ice_snap *fr_ice_meta_snap(const fr_ice_meta *m, int64_t id)
{
    for (int i = 0; i < m->nsnaps; i++)
        if (m->snaps[i].id == id) return &m->snaps[i];
    return NULL;
}

json_t *fr_ice_meta_schema_json(const fr_ice_meta *m)
{
    return find_by_id(json_object_get(m->root, "schemas"), "schema-id", m->schema_id);
}

json_t *fr_ice_meta_spec_fields_json(const fr_ice_meta *m)
{
    json_t *ps = find_by_id(json_object_get(m->root, "partition-specs"), "spec-id", m->spec_id);
    return json_object_get(ps, "fields");
}

/* ---- summaries ------------------------------------------------------------------------- */

static int summary_i64(json_t *sum, const char *key, int64_t *out, fr_error *err)
{
    json_t *v = json_object_get(sum, key);
    *out = 0;
    if (!v) return 0;
    if (!json_is_string(v)) return BAD("summary \"%s\" is not a string", key);
    if (fr_parse_i64(json_string_value(v), out, NULL) < 0 || *out < 0)
        return BAD("summary \"%s\" is not a count", key);
    return 0;
}

static int parse_offsets(const char *text, fr_lake_snapshot *out, fr_error *err)
{
    json_error_t jerr;
    json_t *arr = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
    int rc = 0;
    if (!json_is_array(arr) || json_array_size(arr) > FR_ICE_OFFSETS_MAX) {
        rc = BAD("summary \"%s\" is not an array of offsets", FR_ICE_SUMMARY_OFFSETS_KEY);
        goto done;
    }
    size_t n = json_array_size(arr);
    if (n) {
        out->offsets = fr_calloc(n, sizeof *out->offsets);
        if (!out->offsets) { rc = fr_fail(err, FR_ENOMEM, "out of memory reading offsets"); goto done; }
    }
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(arr, i);
        int64_t pid = 0, b = 0, off = 0;
        if (!json_is_object(e)) { rc = BAD("tiered offset %zu is not an object", i); goto done; }
        FR_GOTO(get_int(e, "partition_id", true, -1, INT64_MAX, 0, &pid, err));
        FR_GOTO(get_int(e, "bucket", true, 0, INT32_MAX, 0, &b, err));
        FR_GOTO(get_int(e, "offset", true, 0, INT64_MAX, 0, &off, err));
        out->offsets[i] = (fr_lake_offset){.partition_id = pid, .bucket = (int32_t)b, .offset = off};
        out->noffsets = (int)i + 1;
    }
done:
fail:
    json_decref(arr);
    return rc;
}

int fr_ice_snap_describe(const fr_ice_snap *s, fr_lake_snapshot *out, fr_error *err)
{
    memset(out, 0, sizeof *out);
    out->snapshot_id = s->id;
    out->parent_id = s->parent_id;
    out->sequence_number = s->seq;
    out->timestamp_ms = s->ts_ms;
    const char *op = json_string_value(json_object_get(s->summary, "operation"));
    snprintf(out->operation, sizeof out->operation, "%s", op ? op : "");
    int rc = 0;
    FR_GOTO(summary_i64(s->summary, "added-data-files", &out->added_data_files, err));
    FR_GOTO(summary_i64(s->summary, "added-delete-files", &out->added_delete_files, err));
    FR_GOTO(summary_i64(s->summary, "added-records", &out->added_records, err));
    FR_GOTO(summary_i64(s->summary, "added-equality-deletes", &out->added_deletes, err));
    FR_GOTO(summary_i64(s->summary, "total-records", &out->total_records, err));
    FR_GOTO(summary_i64(s->summary, "total-data-files", &out->total_data_files, err));
    json_t *offs = json_object_get(s->summary, FR_ICE_SUMMARY_OFFSETS_KEY);
    if (offs) {
        if (!json_is_string(offs)) {
            rc = BAD("summary \"%s\" is not a string", FR_ICE_SUMMARY_OFFSETS_KEY);
            goto fail;
        }
        FR_GOTO(parse_offsets(json_string_value(offs), out, err));
    }
    return 0;
fail:
    fr_free(out->offsets);
    out->offsets = NULL;
    out->noffsets = 0;
    return fr_error_wrap(err, "snapshot %lld", (long long)s->id);
}

void fr_lake_snapshots_free(fr_lake_snapshot *s, int n)
{
    if (!s) return;
    for (int i = 0; i < n; i++) fr_free(s[i].offsets);
    fr_free(s);
}

/* ---- catalog files --------------------------------------------------------------------- */

int fr_ice_publish_metadata(const char *meta_dir, int64_t version, const char *text,
                            size_t len, fr_error *err)
{
    char uuid[37], tmp[4096], final[4096];
    FR_TRY(fr_ice_uuid(uuid, err));
    snprintf(tmp, sizeof tmp, "%s/.v%lld.metadata.json.%s.tmp", meta_dir, (long long)version, uuid);
    snprintf(final, sizeof final, "%s/v%lld.metadata.json", meta_dir, (long long)version);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) return fr_fail_errno(err, errno, "create %s", tmp);
    int rc = 0;
    size_t done = 0;
    while (rc == 0 && done < len) {
        ssize_t w = write(fd, text + done, len - done);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) rc = fr_fail_errno(err, errno, "write %s", tmp);
        else done += (size_t)w;
    }
    if (rc == 0 && fsync(fd) != 0) rc = fr_fail_errno(err, errno, "fsync %s", tmp);
    close(fd);
    /* link() never replaces an existing name: two writers cannot both publish version N. */
    if (rc == 0 && link(tmp, final) != 0) {
        if (errno == EEXIST)
            rc = fr_fail(err, FR_ESTATE, "%s exists: another writer committed first", final);
        else
            rc = fr_fail_errno(err, errno, "link %s to %s", tmp, final);
    }
    unlink(tmp);
    if (rc == 0) rc = fr_fsync_dir(meta_dir, err);
    return rc;
}

int fr_ice_write_version_hint(const char *meta_dir, int64_t version, fr_error *err)
{
    char path[4096], text[32];
    snprintf(path, sizeof path, "%s/version-hint.text", meta_dir);
    int n = snprintf(text, sizeof text, "%lld", (long long)version);
    return fr_write_file_atomic(path, text, (size_t)n, err);
}

static bool version_exists(const char *meta_dir, int64_t v)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/v%lld.metadata.json", meta_dir, (long long)v);
    return fr_path_exists(path);
}

/* The version the hint names, or 0 when it is missing or unreadable. */
static int64_t read_hint(const char *meta_dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/version-hint.text", meta_dir);
    uint8_t *p = NULL;
    size_t n = 0;
    if (fr_read_file(path, 64, &p, &n, NULL) < 0) return 0;
    char text[65];
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (p[i] != ' ' && p[i] != '\n' && p[i] != '\r' && p[i] != '\t') text[k++] = (char)p[i];
    text[k] = 0;
    fr_free(p);
    int64_t v;
    if (fr_parse_i64(text, &v, NULL) < 0 || v < 1 || v > FR_ICE_VERSION_MAX) return 0;
    return v;
}

/* The highest N of the v<N>.metadata.json files in meta_dir (0: none). */
static int list_newest(const char *meta_dir, int64_t *out, fr_error *err)
{
    *out = 0;
    DIR *d = opendir(meta_dir);
    if (!d) {
        if (errno == ENOENT) return 0;
        return fr_fail_errno(err, errno, "open directory %s", meta_dir);
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *s = e->d_name;
        size_t n = strlen(s);
        if (s[0] != 'v' || n < 16 || strcmp(s + n - 14, ".metadata.json") != 0) continue;
        char num[32];
        size_t k = n - 15;
        if (k == 0 || k >= sizeof num) continue;
        memcpy(num, s + 1, k);
        num[k] = 0;
        int64_t v;
        if (num[0] == '0' || fr_parse_i64(num, &v, NULL) < 0 || v < 1 || v > FR_ICE_VERSION_MAX)
            continue;
        if (v > *out) *out = v;
    }
    closedir(d);
    return 0;
}

int fr_ice_read_newest(const char *meta_dir, fr_ice_meta **out, fr_error *err)
{
    *out = NULL;
    int64_t v = read_hint(meta_dir);
    if (v > 0 && version_exists(meta_dir, v)) {
        /* A crash between publishing and the hint leaves the hint one behind. */
        while (v < FR_ICE_VERSION_MAX && version_exists(meta_dir, v + 1)) v++;
    } else {
        FR_TRY(list_newest(meta_dir, &v, err));
    }
    if (v == 0) return 0;
    char path[4096];
    snprintf(path, sizeof path, "%s/v%lld.metadata.json", meta_dir, (long long)v);
    uint8_t *text = NULL;
    size_t len = 0;
    int rc = fr_read_file(path, FR_ICE_META_BYTES_MAX, &text, &len, err);
    if (rc < 0) {
        if (rc == FR_ELIMIT || rc == FR_ERANGE) rc = err ? (err->code = FR_ECORRUPT) : FR_ECORRUPT;
        return rc;
    }
    rc = fr_ice_meta_parse((const char *)text, len, path, out, err);
    fr_free(text);
    if (rc == 0) (*out)->version = v;
    return rc;
}
