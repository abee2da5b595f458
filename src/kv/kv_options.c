/* kv_options.c — the names of merge engines, aggregate functions, delete behaviors and
 * changelog images, which aggregate fits which column type, and the check of a whole table
 * spec. The rules follow Apache Fluss's (docs/TABLES.md, "Merge engines"). */
#include <stdio.h>
#include <strings.h>

#include "kv/kv_int.h"

typedef struct kv_name {
    const char *name;
    int value;
} kv_name;

static const kv_name merge_names[] = {
    { "last_row", FR_MERGE_LAST_ROW },
    { "first_row", FR_MERGE_FIRST_ROW },
    { "versioned", FR_MERGE_VERSIONED },
    { "aggregation", FR_MERGE_AGGREGATION },
};

static const kv_name agg_names[] = {
    { "last_value_ignore_nulls", FR_AGG_LAST_VALUE_IGNORE_NULLS },
    { "last_value", FR_AGG_LAST_VALUE },
    { "first_value", FR_AGG_FIRST_VALUE },
    { "first_value_ignore_nulls", FR_AGG_FIRST_VALUE_IGNORE_NULLS },
    { "sum", FR_AGG_SUM },
    { "product", FR_AGG_PRODUCT },
    { "max", FR_AGG_MAX },
    { "min", FR_AGG_MIN },
    { "listagg", FR_AGG_LISTAGG },
    { "string_agg", FR_AGG_LISTAGG },
    { "bool_and", FR_AGG_BOOL_AND },
    { "bool_or", FR_AGG_BOOL_OR },
    { "rbm32", FR_AGG_RBM32 },
    { "rbm64", FR_AGG_RBM64 },
};

static const kv_name delete_names[] = {
    { "allow", FR_DELETE_ALLOW },
    { "ignore", FR_DELETE_IGNORE },
    { "disable", FR_DELETE_DISABLE },
};

static const kv_name image_names[] = {
    { "FULL", FR_CHANGELOG_FULL },
    { "WAL", FR_CHANGELOG_WAL },
};

#define KV_COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* Finds s (case-insensitively) in names; else FR_EINVAL listing the accepted names. */
static int kv_name_parse(const kv_name *names, int n, const char *what, const char *s,
                         int *out, fr_error *err)
{
    for (int i = 0; s && i < n; i++) {
        if (strcasecmp(s, names[i].name) == 0) {
            *out = names[i].value;
            return FR_OK;
        }
    }
    char list[200];
    size_t len = 0;
    list[0] = '\0';
    for (int i = 0; i < n && len < sizeof list; i++) {
        int w = snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "", names[i].name);
        if (w < 0) break;
        len += (size_t)w;
    }
    return fr_fail(err, FR_EINVAL, "unknown %s '%s' (expected one of: %s)", what,
                   s ? s : "(null)", list);
}

int fr_merge_engine_parse(const char *s, fr_merge_engine *out, fr_error *err)
{
    int v = 0;
    FR_TRY(kv_name_parse(merge_names, KV_COUNT(merge_names), "merge engine", s, &v, err));
    *out = (fr_merge_engine)v;
    return FR_OK;
}

int fr_agg_fn_parse(const char *s, fr_agg_fn *out, fr_error *err)
{
    int v = 0;
    FR_TRY(kv_name_parse(agg_names, KV_COUNT(agg_names), "aggregate function", s, &v, err));
    *out = (fr_agg_fn)v;
    return FR_OK;
}

int fr_delete_behavior_parse(const char *s, fr_delete_behavior *out, fr_error *err)
{
    int v = 0;
    FR_TRY(kv_name_parse(delete_names, KV_COUNT(delete_names), "delete behavior", s, &v, err));
    *out = (fr_delete_behavior)v;
    return FR_OK;
}

int fr_changelog_image_parse(const char *s, fr_changelog_image *out, fr_error *err)
{
    int v = 0;
    FR_TRY(kv_name_parse(image_names, KV_COUNT(image_names), "changelog image", s, &v, err));
    *out = (fr_changelog_image)v;
    return FR_OK;
}

const char *fr_merge_engine_name(fr_merge_engine m)
{
    for (int i = 0; i < KV_COUNT(merge_names); i++)
        if (merge_names[i].value == (int)m) return merge_names[i].name;
    return "?";
}

const char *fr_agg_fn_name(fr_agg_fn f)
{
    for (int i = 0; i < KV_COUNT(agg_names); i++)
        if (agg_names[i].value == (int)f) return agg_names[i].name;
    return "?";
}

bool fr_agg_fn_accepts(fr_agg_fn fn, const fr_type *t)
{
    switch (fn) {
    case FR_AGG_LAST_VALUE_IGNORE_NULLS:
    case FR_AGG_LAST_VALUE:
    case FR_AGG_FIRST_VALUE:
    case FR_AGG_FIRST_VALUE_IGNORE_NULLS: return true;
    case FR_AGG_SUM:
    case FR_AGG_PRODUCT: return fr_type_is_numeric(t->id);
    case FR_AGG_MAX:
    case FR_AGG_MIN:
        return fr_type_is_numeric(t->id) || fr_type_is_string(t->id) ||
               fr_type_is_temporal(t->id);
    case FR_AGG_LISTAGG: return fr_type_is_string(t->id);
    case FR_AGG_BOOL_AND:
    case FR_AGG_BOOL_OR: return t->id == FR_T_BOOLEAN;
    case FR_AGG_RBM32:
    case FR_AGG_RBM64: return t->id == FR_T_BYTES;
    }
    return false;
}

fr_delete_behavior fr_delete_behavior_default(fr_merge_engine m)
{
    return m == FR_MERGE_LAST_ROW ? FR_DELETE_ALLOW : FR_DELETE_IGNORE;
}

/* The primary key: distinct columns in range. Their types may be nullable (a NULL key value
 * is refused by each write instead), so that a schema need not restate NOT NULL. */
static int kv_check_pk(const fr_kv_spec *spec, int ncols, fr_error *err)
{
    FR_CHECK(spec->pk && spec->npk >= 1 && spec->npk <= ncols, FR_EINVAL, err,
             "%s: a primary-key table needs 1..%d primary key columns, not %d",
             spec->name ? spec->name : "table", ncols, spec->npk);
    for (int i = 0; i < spec->npk; i++) {
        int c = spec->pk[i];
        FR_CHECK(c >= 0 && c < ncols, FR_EINVAL, err, "primary key column %d is out of range",
                 c);
        for (int j = 0; j < i; j++)
            FR_CHECK(spec->pk[j] != c, FR_EINVAL, err,
                     "primary key column %s is named twice",
                     fr_schema_field(spec->schema, c)->name);
    }
    return FR_OK;
}

static bool kv_is_pk(const fr_kv_spec *spec, int col)
{
    for (int i = 0; i < spec->npk; i++)
        if (spec->pk[i] == col) return true;
    return false;
}

static int kv_check_engine(const fr_kv_spec *spec, int ncols, fr_error *err)
{
    if (spec->merge == FR_MERGE_VERSIONED) {
        int c = spec->version_column;
        FR_CHECK(c >= 0 && c < ncols, FR_EINVAL, err,
                 "the versioned merge engine needs a version column "
                 "('table.merge-engine.versioned.ver-column')");
        const fr_field *f = fr_schema_field(spec->schema, c);
        fr_type_id id = f->type.id;
        char tn[64];
        fr_type_format(&f->type, false, tn, sizeof tn);
        FR_CHECK(id == FR_T_INT || id == FR_T_BIGINT || id == FR_T_TIMESTAMP ||
                     id == FR_T_TIMESTAMP_LTZ,
                 FR_EINVAL, err,
                 "the version column '%s' must be one of INT, BIGINT, TIMESTAMP, "
                 "TIMESTAMP_LTZ, not %s", f->name, tn);
    }
    if (spec->merge == FR_MERGE_AGGREGATION && spec->aggs) {
        for (int c = 0; c < ncols; c++) {
            if (kv_is_pk(spec, c)) continue;
            const fr_field *f = fr_schema_field(spec->schema, c);
            char tn[64];
            fr_type_format(&f->type, false, tn, sizeof tn);
            FR_CHECK(spec->aggs[c] >= FR_AGG_LAST_VALUE_IGNORE_NULLS &&
                         spec->aggs[c] <= FR_AGG_RBM64,
                     FR_EINVAL, err, "column %s: unknown aggregate function %d", f->name,
                     (int)spec->aggs[c]);
            FR_CHECK(fr_agg_fn_accepts(spec->aggs[c], &f->type), FR_EINVAL, err,
                     "column %s: the aggregate function %s does not accept %s", f->name,
                     fr_agg_fn_name(spec->aggs[c]), tn);
        }
    }
    FR_CHECK(spec->delete_behavior != FR_DELETE_ALLOW ||
                 (spec->merge != FR_MERGE_FIRST_ROW && spec->merge != FR_MERGE_VERSIONED),
             FR_EINVAL, err,
             "'table.delete.behavior' = 'allow' is not supported by the %s merge engine "
             "(use ignore or disable)", fr_merge_engine_name(spec->merge));
    return FR_OK;
}

int fr_kv_spec_check(const fr_kv_spec *spec, fr_error *err)
{
    FR_CHECK(spec && spec->schema, FR_EINVAL, err, "a KV store needs a table schema");
    int ncols = fr_schema_num_fields(spec->schema);
    FR_CHECK(spec->merge >= FR_MERGE_LAST_ROW && spec->merge <= FR_MERGE_AGGREGATION,
             FR_EINVAL, err, "unknown merge engine %d", (int)spec->merge);
    FR_CHECK(spec->delete_behavior >= FR_DELETE_ALLOW &&
                 spec->delete_behavior <= FR_DELETE_DISABLE,
             FR_EINVAL, err, "unknown delete behavior %d", (int)spec->delete_behavior);
    FR_CHECK(spec->image == FR_CHANGELOG_FULL || spec->image == FR_CHANGELOG_WAL, FR_EINVAL,
             err, "unknown changelog image %d", (int)spec->image);
    FR_CHECK(spec->compression >= FR_COMPRESSION_NONE &&
                 spec->compression <= FR_COMPRESSION_ZSTD,
             FR_EINVAL, err, "unknown compression %d", (int)spec->compression);
    FR_TRY(kv_check_pk(spec, ncols, err));
    return kv_check_engine(spec, ncols, err);
}
