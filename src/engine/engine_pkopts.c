/* engine_pkopts.c — the options and keys of primary-key and partitioned tables: the primary
 * key and partition keys named at CREATE TABLE, the merge engine and its options, delete
 * behaviour, changelog image, dynamic partition creation and auto-partitioning, checked one
 * by one as they are parsed and then together (fr_pkopt_finish), with the rules Apache Fluss
 * applies to the same options.
 *
 * Invariants after a successful finish: a primary-key table has a bucket key that is a
 * subset of its primary key without partition columns (the primary key minus the partition
 * columns when none was given); a log table has no merge-engine or delete options; every
 * aggregate function fits its column; a partitioned table has an auto-partition time format. */
#include "engine/engine_int.h"

#include <limits.h>
#include <stdio.h>
#include <strings.h>

#define OPT_MERGE "table.merge-engine"
#define OPT_VER_COLUMN "table.merge-engine.versioned.ver-column"
#define OPT_DELETE "table.delete.behavior"
#define OPT_IMAGE "table.changelog.image"
#define OPT_DYNAMIC "table.partition.dynamic-creation"
#define OPT_AUTO "table.auto-partition.enabled"
#define OPT_AUTO_KEY "table.auto-partition.key"
#define OPT_AUTO_UNIT "table.auto-partition.time-unit"
#define OPT_AUTO_FORMAT "table.auto-partition.time-format"
#define OPT_AUTO_ZONE "table.auto-partition.time-zone"
#define OPT_AUTO_PRECREATE "table.auto-partition.num-precreate"
#define OPT_AUTO_RETENTION "table.auto-partition.num-retention"

const char *fr_delete_behavior_name(fr_delete_behavior d)
{
    switch (d) {
    case FR_DELETE_ALLOW: return "allow";
    case FR_DELETE_IGNORE: return "ignore";
    case FR_DELETE_DISABLE: return "disable";
    }
    return "?";
}

const char *fr_changelog_image_name(fr_changelog_image i)
{
    return i == FR_CHANGELOG_WAL ? "WAL" : "FULL";
}

static const char *col_name(const fr_schema *s, int col)
{
    return fr_schema_field(s, col)->name;
}

static bool in_list(const int *cols, int n, int col)
{
    for (int i = 0; i < n; i++)
        if (cols[i] == col) return true;
    return false;
}

/* Appends "a, b, c" (the columns' names) to out, for messages. */
static void names_text(const fr_schema *s, const int *cols, int n, char *out, size_t cap)
{
    size_t used = 0;
    out[0] = '\0';
    for (int i = 0; i < n && used < cap; i++) {
        int w = snprintf(out + used, cap - used, "%s%s", i ? ", " : "", col_name(s, cols[i]));
        if (w < 0) break;
        used += (size_t)w;
    }
}

/* ---- keys ------------------------------------------------------------------------------ */

static int resolve_names(const fr_schema *s, const char *what, const char *const *names,
                         int n, int **out, fr_error *err)
{
    FR_CHECK(n >= 0 && n <= fr_schema_num_fields(s), FR_EINVAL, err,
             "the %s names %d columns but the table has %d", what, n, fr_schema_num_fields(s));
    if (n == 0) return FR_OK;
    int *cols = fr_calloc((size_t)n, sizeof *cols);
    FR_CHECK(cols, FR_ENOMEM, err, "out of memory reading the %s", what);
    *out = cols;
    for (int i = 0; i < n; i++) {
        const char *name = names[i];
        FR_CHECK(name && name[0], FR_EINVAL, err, "the %s has an empty column name", what);
        int col = fr_schema_find(s, name);
        FR_CHECK(col >= 0, FR_EINVAL, err, "the %s names '%.128s', which is not a column", what,
                 name);
        FR_CHECK(!in_list(cols, i, col), FR_EINVAL, err, "the %s names column '%s' twice",
                 what, col_name(s, col));
        cols[i] = col;
    }
    return FR_OK;
}

static bool partition_type_ok(fr_type_id id)
{
    return fr_type_is_string(id) || id == FR_T_INT || id == FR_T_BIGINT || id == FR_T_DATE;
}

int fr_pkopt_keys(const fr_schema *s, const fr_table_keys *keys, fr_table_conf *c,
                  fr_error *err)
{
    int ncols = fr_schema_num_fields(s);
    c->version_column = -1;
    c->autop.key = -1;
    c->autop.unit = FR_UNIT_DAY;
    c->autop.num_precreate = 2;
    c->autop.num_retention = 7;
    c->dynamic_partitions = true;
    c->aggs = fr_calloc((size_t)ncols, sizeof *c->aggs);
    c->agg_given = fr_calloc((size_t)ncols, sizeof *c->agg_given);
    c->delimiters = fr_calloc((size_t)ncols, sizeof *c->delimiters);
    FR_CHECK(c->aggs && c->agg_given && c->delimiters, FR_ENOMEM, err,
             "out of memory reading table keys");
    if (!keys) return FR_OK;
    FR_TRY(resolve_names(s, "primary key", keys->pk, keys->npk, &c->pk, err));
    c->npk = keys->npk;
    FR_CHECK(keys->npart <= FR_PARTITION_KEYS_MAX, FR_EINVAL, err,
             "%d partition keys exceed the limit of %d", keys->npart, FR_PARTITION_KEYS_MAX);
    FR_TRY(resolve_names(s, "partition key list", keys->part, keys->npart, &c->part, err));
    c->npart = keys->npart;
    for (int i = 0; i < c->npart; i++) {
        const fr_field *f = fr_schema_field(s, c->part[i]);
        if (!partition_type_ok(f->type.id)) {
            char tn[64];
            fr_type_format(&f->type, false, tn, sizeof tn);
            return fr_fail(err, FR_EINVAL, "partition key '%s' is %s; partition keys are "
                           "STRING, INT, BIGINT or DATE columns", f->name, tn);
        }
        if (c->npk > 0 && !in_list(c->pk, c->npk, c->part[i])) {
            char pk[512];
            names_text(s, c->pk, c->npk, pk, sizeof pk);
            return fr_fail(err, FR_EINVAL, "partition key '%s' is not in the primary key (%s): "
                           "a partitioned primary-key table has its partition keys in its "
                           "primary key", f->name, pk);
        }
    }
    if (c->npk > 0) {
        int rest = 0;
        for (int i = 0; i < c->npk; i++) rest += !in_list(c->part, c->npart, c->pk[i]);
        FR_CHECK(rest > 0, FR_EINVAL, err, "the primary key is the same as the partition keys: "
                 "add a column to the primary key that is not a partition key");
    }
    return FR_OK;
}

/* ---- one option ------------------------------------------------------------------------ */

static int parse_bool(const char *key, const char *value, bool *out, fr_buf *norm,
                      fr_error *err)
{
    if (strcasecmp(value, "true") == 0) *out = true;
    else if (strcasecmp(value, "false") == 0) *out = false;
    else return fr_fail(err, FR_EINVAL, "option %s = '%.64s': give true or false", key, value);
    return fr_buf_printf(norm, err, "%s", *out ? "true" : "false");
}

static int parse_int(const char *key, const char *value, int *out, fr_buf *norm,
                     fr_error *err)
{
    int64_t v = 0;
    fr_error e2 = {0};
    if (fr_parse_i64(value, &v, &e2) < 0 || v < INT_MIN || v > INT_MAX)
        return fr_fail(err, FR_EINVAL, "option %s = '%.64s': give a whole number", key, value);
    *out = (int)v;
    return fr_buf_printf(norm, err, "%d", *out);
}

static int find_column(const fr_schema *s, const char *key, const char *name, int *out,
                       fr_error *err)
{
    int col = fr_schema_find(s, name);
    FR_CHECK(col >= 0, FR_EINVAL, err, "option %s names '%.128s', which is not a column", key,
             name);
    *out = col;
    return FR_OK;
}

static int replace_str(char **slot, const char *value, fr_error *err)
{
    char *copy = fr_strdup(value);
    FR_CHECK(copy, FR_ENOMEM, err, "out of memory copying an option");
    fr_free(*slot);
    *slot = copy;
    return FR_OK;
}

/* 'fields.<col>.agg' and the delimiter options of listagg columns. */
static int parse_field_option(const fr_schema *s, const char *key, const char *value,
                              fr_table_conf *c, fr_buf *norm, fr_error *err)
{
    static const char *const delim_suffixes[] = {".listagg-delimiter", ".listagg.delimiter",
                                                 ".string_agg.delimiter"};
    const char *rest = key + strlen("fields.");
    size_t n = strlen(rest);
    size_t agg = strlen(".agg");
    char col[FR_NAME_BYTES_MAX + 1];
    if (n > agg && strcmp(rest + n - agg, ".agg") == 0 && n - agg <= FR_NAME_BYTES_MAX) {
        memcpy(col, rest, n - agg);
        col[n - agg] = '\0';
        int i = 0;
        FR_TRY(find_column(s, key, col, &i, err));
        fr_agg_fn fn;
        fr_error e2 = {0};
        if (fr_agg_fn_parse(value, &fn, &e2) < 0)
            return fr_fail(err, FR_EINVAL, "option %s = '%.64s': %s", key, value, e2.msg);
        c->aggs[i] = fn;
        c->agg_given[i] = true;
        return fr_buf_printf(norm, err, "%s", fr_agg_fn_name(fn));
    }
    for (size_t k = 0; k < sizeof delim_suffixes / sizeof *delim_suffixes; k++) {
        size_t sl = strlen(delim_suffixes[k]);
        if (n <= sl || strcmp(rest + n - sl, delim_suffixes[k]) != 0 ||
            n - sl > FR_NAME_BYTES_MAX)
            continue;
        memcpy(col, rest, n - sl);
        col[n - sl] = '\0';
        int i = 0;
        FR_TRY(find_column(s, key, col, &i, err));
        return replace_str(&c->delimiters[i], value, err);
    }
    return 1; /* another fields.* option: kept as given */
}

static int parse_merge_option(const fr_schema *s, const char *key, const char *value,
                              fr_table_conf *c, fr_buf *norm, fr_error *err)
{
    fr_error e2 = {0};
    if (strcmp(key, OPT_MERGE) == 0) {
        if (fr_merge_engine_parse(value, &c->merge, &e2) < 0)
            return fr_fail(err, FR_EINVAL, "option %s = '%.64s': give last_row, first_row, "
                           "versioned or aggregation", key, value);
        c->merge_given = true;
        return fr_buf_printf(norm, err, "%s", fr_merge_engine_name(c->merge));
    }
    if (strcmp(key, OPT_VER_COLUMN) == 0) {
        int col = fr_schema_find(s, value);
        FR_CHECK(col >= 0, FR_EINVAL, err, "option %s: the version column '%.128s' of the "
                 "versioned merge engine is not a column", key, value);
        c->version_column = col;
        return fr_buf_printf(norm, err, "%s", col_name(s, col));
    }
    if (strcmp(key, OPT_DELETE) == 0) {
        if (fr_delete_behavior_parse(value, &c->delete_behavior, &e2) < 0)
            return fr_fail(err, FR_EINVAL, "option %s = '%.64s': give allow, ignore or disable",
                           key, value);
        c->delete_given = true;
        return fr_buf_printf(norm, err, "%s", fr_delete_behavior_name(c->delete_behavior));
    }
    if (strcmp(key, OPT_IMAGE) == 0) {
        if (fr_changelog_image_parse(value, &c->image, &e2) < 0)
            return fr_fail(err, FR_EINVAL, "option %s = '%.64s': give FULL or WAL", key, value);
        return fr_buf_printf(norm, err, "%s", fr_changelog_image_name(c->image));
    }
    return 1;
}

static int parse_partition_option(const fr_schema *s, const char *key, const char *value,
                                  fr_table_conf *c, fr_buf *norm, fr_error *err)
{
    fr_auto_partition *a = &c->autop;
    if (strcmp(key, OPT_DYNAMIC) == 0)
        return parse_bool(key, value, &c->dynamic_partitions, norm, err);
    if (strcmp(key, OPT_AUTO) == 0) return parse_bool(key, value, &a->enabled, norm, err);
    if (strcmp(key, OPT_AUTO_KEY) == 0) {
        FR_TRY(find_column(s, key, value, &a->key, err));
        return fr_buf_printf(norm, err, "%s", col_name(s, a->key));
    }
    if (strcmp(key, OPT_AUTO_UNIT) == 0) {
        if (fr_autop_parse_unit(value, &a->unit) < 0)
            return fr_fail(err, FR_EINVAL, "option %s = '%.64s': give HOUR, DAY, MONTH, QUARTER "
                           "or YEAR", key, value);
        return fr_buf_printf(norm, err, "%s", fr_autop_unit_name(a->unit));
    }
    if (strcmp(key, OPT_AUTO_FORMAT) == 0) {
        FR_CHECK(strlen(value) <= FR_TIME_FORMAT_BYTES_MAX, FR_EINVAL, err,
                 "option %s: a format of more than %d characters", key, FR_TIME_FORMAT_BYTES_MAX);
        a->format_given = true;
        return replace_str(&a->format, value, err);
    }
    if (strcmp(key, OPT_AUTO_ZONE) == 0) {
        fr_error e2 = {0};
        if (fr_autop_check_zone(value, false, &e2) < 0)
            return fr_fail(err, FR_EINVAL, "option %s = '%.64s': %s", key, value, e2.msg);
        return replace_str(&a->zone, value, err);
    }
    if (strcmp(key, OPT_AUTO_PRECREATE) == 0) {
        a->precreate_given = true;
        return parse_int(key, value, &a->num_precreate, norm, err);
    }
    if (strcmp(key, OPT_AUTO_RETENTION) == 0)
        return parse_int(key, value, &a->num_retention, norm, err);
    return 1;
}

int fr_pkopt_parse(const fr_schema *s, const char *key, const char *value, fr_table_conf *c,
                   fr_buf *norm, fr_error *err)
{
    if (strncmp(key, "fields.", 7) == 0) return parse_field_option(s, key, value, c, norm, err);
    int rc = parse_merge_option(s, key, value, c, norm, err);
    if (rc != 1) return rc;
    return parse_partition_option(s, key, value, c, norm, err);
}

/* ---- the options together -------------------------------------------------------------- */

static int finish_bucket_key(const fr_schema *s, fr_table_conf *c, fr_error *err)
{
    char pk[512], given[512];
    for (int i = 0; i < c->nbucket_key; i++) {
        int col = c->bucket_key[i];
        FR_CHECK(!in_list(c->part, c->npart, col), FR_EINVAL, err,
                 "option bucket.key names '%s', a partition key: a bucket key holds no "
                 "partition column", col_name(s, col));
        if (c->npk > 0 && !in_list(c->pk, c->npk, col)) {
            names_text(s, c->pk, c->npk, pk, sizeof pk);
            names_text(s, c->bucket_key, c->nbucket_key, given, sizeof given);
            return fr_fail(err, FR_EINVAL, "option bucket.key = '%s': the bucket key of a "
                           "primary-key table is a subset of its primary key (%s) without the "
                           "partition keys", given, pk);
        }
    }
    if (c->npk == 0 || c->nbucket_key > 0) return FR_OK;
    fr_free(c->bucket_key);
    c->bucket_key = fr_calloc((size_t)c->npk, sizeof(int));
    FR_CHECK(c->bucket_key, FR_ENOMEM, err, "out of memory choosing the bucket key");
    for (int i = 0; i < c->npk; i++)
        if (!in_list(c->part, c->npart, c->pk[i])) c->bucket_key[c->nbucket_key++] = c->pk[i];
    return FR_OK;
}

static int finish_versioned(const fr_schema *s, fr_table_conf *c, fr_error *err)
{
    FR_CHECK(c->version_column >= 0, FR_EINVAL, err,
             "option '" OPT_VER_COLUMN "' must be set for the versioned merge engine");
    const fr_field *f = fr_schema_field(s, c->version_column);
    fr_type_id id = f->type.id;
    if (id != FR_T_INT && id != FR_T_BIGINT && id != FR_T_TIMESTAMP && id != FR_T_TIMESTAMP_LTZ) {
        char tn[64];
        fr_type_format(&f->type, false, tn, sizeof tn);
        return fr_fail(err, FR_EINVAL, "the version column '%s' of the versioned merge engine "
                       "is %s; give an INT, BIGINT, TIMESTAMP or TIMESTAMP_LTZ column", f->name,
                       tn);
    }
    return FR_OK;
}

static int finish_aggregation(const fr_schema *s, fr_table_conf *c, fr_error *err)
{
    FR_CHECK(c->image != FR_CHANGELOG_WAL, FR_EINVAL, err,
             "the aggregation merge engine needs the FULL changelog image: set "
             "'" OPT_IMAGE "' to FULL or leave it out");
    for (int i = 0; i < fr_schema_num_fields(s); i++) {
        const fr_field *f = fr_schema_field(s, i);
        if (c->agg_given[i] && in_list(c->pk, c->npk, i))
            return fr_fail(err, FR_EINVAL, "option fields.%s.agg: '%s' is a primary key column, "
                           "which is not aggregated", f->name, f->name);
        if (!in_list(c->pk, c->npk, i) && !fr_agg_fn_accepts(c->aggs[i], &f->type)) {
            char tn[64];
            fr_type_format(&f->type, false, tn, sizeof tn);
            return fr_fail(err, FR_EINVAL, "option fields.%s.agg = '%s' does not fit column "
                           "'%s' of type %s", f->name, fr_agg_fn_name(c->aggs[i]), f->name, tn);
        }
        if (c->delimiters[i] && c->aggs[i] != FR_AGG_LISTAGG)
            return fr_fail(err, FR_EINVAL, "a listagg delimiter is given for column '%s', which "
                           "aggregates with %s", f->name, fr_agg_fn_name(c->aggs[i]));
    }
    return FR_OK;
}

static int finish_merge(const fr_schema *s, fr_table_conf *c, fr_error *err)
{
    if (c->merge_given && c->npk == 0)
        return fr_fail(err, FR_EINVAL, "option '" OPT_MERGE "' is for primary-key tables; "
                       "this table has no primary key");
    if (c->delete_given && c->npk == 0)
        return fr_fail(err, FR_EINVAL, "option '" OPT_DELETE "' is for primary-key tables; "
                       "this table has no primary key");
    if (c->merge != FR_MERGE_AGGREGATION) {
        for (int i = 0; i < fr_schema_num_fields(s); i++) {
            if (c->agg_given[i])
                return fr_fail(err, FR_EINVAL, "option fields.%s.agg is for the aggregation "
                               "merge engine; set '" OPT_MERGE "' = 'aggregation'",
                               col_name(s, i));
            if (c->delimiters[i])
                return fr_fail(err, FR_EINVAL, "a listagg delimiter is given for column '%s' "
                               "but the table does not use the aggregation merge engine",
                               col_name(s, i));
        }
    }
    if (c->merge == FR_MERGE_VERSIONED) FR_TRY(finish_versioned(s, c, err));
    if (c->merge == FR_MERGE_AGGREGATION) FR_TRY(finish_aggregation(s, c, err));
    bool keeps_rows = c->merge == FR_MERGE_FIRST_ROW || c->merge == FR_MERGE_VERSIONED;
    if (!c->delete_given)
        c->delete_behavior = c->merge == FR_MERGE_LAST_ROW ? FR_DELETE_ALLOW : FR_DELETE_IGNORE;
    else if (keeps_rows && c->delete_behavior == FR_DELETE_ALLOW)
        return fr_fail(err, FR_EINVAL, "a table with the %s merge engine does not support "
                       "deletes: set '" OPT_DELETE "' to ignore or disable, not allow",
                       fr_merge_engine_name(c->merge));
    return FR_OK;
}

/* The representative time Fluss checks formats with: 2024-11-11 11:00 in the zone. */
#define FR_AUTOP_SAMPLE_MS 1731322800000LL

static int finish_auto_partition(const fr_schema *s, fr_table_conf *c, fr_error *err)
{
    fr_auto_partition *a = &c->autop;
    if (c->npart == 0) {
        FR_CHECK(!a->enabled, FR_EINVAL, err, "auto-partitioning is for partitioned tables: "
                 "add PARTITIONED BY or set '" OPT_AUTO "' to false");
        return FR_OK;
    }
    if (c->npart > 1 && a->enabled) {
        FR_CHECK(a->key >= 0, FR_EINVAL, err, "an auto-partitioned table with several partition "
                 "keys names the one that holds the time: set '" OPT_AUTO_KEY "'");
        if (!a->precreate_given) a->num_precreate = 0;
        FR_CHECK(a->num_precreate <= 0, FR_EINVAL, err, "an auto-partitioned table with several "
                 "partition keys cannot pre-create partitions: '" OPT_AUTO_PRECREATE "' must "
                 "be 0, not %d", a->num_precreate);
    }
    if (a->key < 0) a->key = c->part[0];
    FR_CHECK(in_list(c->part, c->npart, a->key), FR_EINVAL, err,
             "option '" OPT_AUTO_KEY "' names '%s', which is not a partition key",
             col_name(s, a->key));
    if (!a->format) FR_TRY(replace_str(&a->format, fr_autop_default_format(a->unit), err));
    if (a->format_given) {
        fr_error e2 = {0};
        if (fr_autop_check_format(a->format, a->unit, &e2) < 0)
            return fr_fail(err, FR_EINVAL, "option '" OPT_AUTO_FORMAT "': %s", e2.msg);
    }
    const fr_field *f = fr_schema_field(s, a->key);
    if (a->enabled && f->type.id == FR_T_DATE) {
        FR_CHECK(a->unit == FR_UNIT_DAY, FR_EINVAL, err, "option '" OPT_AUTO_UNIT "' must be DAY "
                 "when the auto-partition key '%s' is a DATE", f->name);
        FR_CHECK(strcmp(a->format, "yyyy-MM-dd") == 0, FR_EINVAL, err, "option '"
                 OPT_AUTO_FORMAT "' must be 'yyyy-MM-dd' when the auto-partition key '%s' is "
                 "a DATE", f->name);
    }
    if (!a->enabled && !a->format_given) return FR_OK;
    /* The values the format makes must be partition values of the key's type. */
    fr_buf sample;
    fr_buf_init(&sample);
    fr_auto_partition utc = *a;
    utc.zone = "UTC";
    int rc = fr_autop_value_at(&utc, FR_AUTOP_SAMPLE_MS, 0, &sample, err);
    fr_value v;
    fr_error e2 = {0};
    if (rc == FR_OK && fr_value_parse((const char *)sample.data, sample.len, &f->type, &v,
                                      &e2) < 0)
        rc = fr_fail(err, FR_EINVAL, "auto-partition values such as '%.*s' (format '%s') do not "
                     "parse as column '%s': %s", (int)sample.len, (const char *)sample.data,
                     a->format, f->name, e2.msg);
    fr_buf_free(&sample);
    return rc;
}

int fr_pkopt_finish(const fr_schema *s, fr_table_conf *c, fr_error *err)
{
    FR_TRY(finish_bucket_key(s, c, err));
    FR_TRY(finish_merge(s, c, err));
    FR_TRY(finish_auto_partition(s, c, err));
    if (c->npk == 0) return FR_OK;
    /* The KV store's own check, so that what CREATE TABLE accepts always opens. */
    fr_kv_spec spec;
    fr_pkopt_kv_spec(s, c, &spec);
    return fr_kv_spec_check(&spec, err);
}

void fr_pkopt_kv_spec(const fr_schema *s, const fr_table_conf *c, fr_kv_spec *out)
{
    memset(out, 0, sizeof *out);
    out->schema = s;
    out->pk = c->pk;
    out->npk = c->npk;
    out->merge = c->merge;
    out->version_column = c->version_column;
    out->aggs = c->merge == FR_MERGE_AGGREGATION ? c->aggs : NULL;
    out->listagg_delimiters = (const char *const *)c->delimiters;
    out->delete_behavior = c->delete_behavior;
    out->image = c->image;
    out->compression = c->compression;
}
