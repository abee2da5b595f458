/* types_schema_json.c — the catalog's JSON form of a schema:
 *   {"id": 0, "fields": [{"name": "a", "type": "INT", "nullable": false}, ...]}
 *
 * The reader treats the JSON as outside input: every member is checked for presence and
 * type, and errors name the field by position. Unknown members are ignored so that a newer
 * catalog (say, with column comments) stays readable. A "NOT NULL" inside "type" and the
 * "nullable" member must agree when both are present. */
#include "types/types.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#define FR_SCHEMA_JSON_BYTES_MAX (16u << 20)

static int fr_schema_json_field(const fr_field *f, json_t *arr, fr_error *err)
{
    char tname[64];
    fr_type_format(&f->type, false, tname, sizeof tname);
    json_t *o = json_pack("{s:s, s:s, s:b}", "name", f->name, "type", tname, "nullable",
                          f->type.nullable);
    FR_CHECK(o != NULL, FR_ENOMEM, err, "out of memory writing schema JSON");
    FR_CHECK(json_array_append_new(arr, o) == 0, FR_ENOMEM, err,
             "out of memory writing schema JSON");
    return FR_OK;
}

int fr_schema_to_json(const fr_schema *s, char **out, fr_error *err)
{
    int rc = FR_OK;
    char *text = NULL;
    json_t *arr = json_array();
    json_t *root = json_object();
    if (!arr || !root) {
        rc = fr_fail(err, FR_ENOMEM, "out of memory writing schema JSON");
        goto fail;
    }
    int n = fr_schema_num_fields(s);
    for (int i = 0; i < n; i++) FR_GOTO(fr_schema_json_field(fr_schema_field(s, i), arr, err));
    if (json_object_set_new(root, "id", json_integer(fr_schema_id(s))) != 0 ||
        json_object_set(root, "fields", arr) != 0) {
        rc = fr_fail(err, FR_ENOMEM, "out of memory writing schema JSON");
        goto fail;
    }
    text = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (!text) {
        rc = fr_fail(err, FR_ENOMEM, "out of memory writing schema JSON");
        goto fail;
    }
    /* jansson allocates with malloc; the caller frees with fr_free, so copy. */
    *out = fr_strdup(text);
    if (!*out) rc = fr_fail(err, FR_ENOMEM, "out of memory writing schema JSON");
fail:
    free(text);
    json_decref(arr);
    json_decref(root);
    return rc;
}

/* Turns an error from a checker into FR_ECORRUPT (the bytes came from the catalog) with
 * context in front of the message. */
static int fr_schema_json_corrupt(fr_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int fr_schema_json_corrupt(fr_error *err, const char *fmt, ...)
{
    if (!err) return FR_ECORRUPT;
    char prefix[FR_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    fr_error_wrap(err, "%s", prefix);
    err->code = FR_ECORRUPT;
    return FR_ECORRUPT;
}

static int fr_schema_json_read_field(json_t *o, int i, fr_field *f, fr_error *err)
{
    FR_CHECK(json_is_object(o), FR_ECORRUPT, err, "schema JSON: field %d is not an object", i);
    json_t *name = json_object_get(o, "name");
    json_t *type = json_object_get(o, "type");
    json_t *nullable = json_object_get(o, "nullable");
    FR_CHECK(json_is_string(name), FR_ECORRUPT, err,
             "schema JSON: field %d has no string member \"name\"", i);
    FR_CHECK(json_is_string(type), FR_ECORRUPT, err,
             "schema JSON: field %d has no string member \"type\"", i);
    FR_CHECK(nullable == NULL || json_is_boolean(nullable), FR_ECORRUPT, err,
             "schema JSON: field %d: \"nullable\" must be true or false", i);
    const char *nm = json_string_value(name);
    FR_CHECK(strlen(nm) == json_string_length(name), FR_ECORRUPT, err,
             "schema JSON: field %d: name contains a NUL character", i);
    if (fr_type_parse(json_string_value(type), &f->type, err) < 0)
        return fr_schema_json_corrupt(err, "schema JSON: field %d (%.64s)", i, nm);
    if (nullable) {
        bool nb = json_is_true(nullable);
        FR_CHECK(!(nb && !f->type.nullable), FR_ECORRUPT, err,
                 "schema JSON: field %d (%.64s): type says NOT NULL but \"nullable\" is true", i,
                 nm);
        f->type.nullable = nb;
    }
    f->name = (char *)nm;
    return FR_OK;
}

int fr_schema_from_json(const char *json, size_t len, fr_schema **out, fr_error *err)
{
    FR_CHECK(len <= FR_SCHEMA_JSON_BYTES_MAX, FR_ELIMIT, err,
             "schema JSON of %zu bytes exceeds the limit of %u bytes", len,
             FR_SCHEMA_JSON_BYTES_MAX);
    json_error_t jerr;
    json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
    FR_CHECK(root != NULL, FR_ECORRUPT, err, "schema JSON: %s at line %d column %d", jerr.text,
             jerr.line, jerr.column);
    int rc = FR_OK;
    fr_field *fields = NULL;
    json_t *id = json_object_get(root, "id");
    json_t *arr = json_object_get(root, "fields");
    if (!json_is_object(root)) {
        rc = fr_fail(err, FR_ECORRUPT, "schema JSON: the top level is not an object");
        goto fail;
    }
    if (!json_is_integer(id) || json_integer_value(id) < INT32_MIN ||
        json_integer_value(id) > INT32_MAX) {
        rc = fr_fail(err, FR_ECORRUPT, "schema JSON: \"id\" must be a 32-bit integer");
        goto fail;
    }
    if (!json_is_array(arr)) {
        rc = fr_fail(err, FR_ECORRUPT, "schema JSON: \"fields\" must be an array");
        goto fail;
    }
    size_t n = json_array_size(arr);
    if (n > FR_SCHEMA_COLUMNS_MAX) {
        rc = fr_fail(err, FR_ECORRUPT, "schema JSON: %zu fields exceed the limit of %d", n,
                     FR_SCHEMA_COLUMNS_MAX);
        goto fail;
    }
    fields = fr_calloc(n ? n : 1, sizeof *fields);
    if (!fields) {
        rc = fr_fail(err, FR_ENOMEM, "out of memory reading schema JSON");
        goto fail;
    }
    for (size_t i = 0; i < n; i++)
        FR_GOTO(fr_schema_json_read_field(json_array_get(arr, i), (int)i, &fields[i], err));
    rc = fr_schema_new(fields, (int)n, (int32_t)json_integer_value(id), out, err);
    if (rc < 0 && rc != FR_ENOMEM) rc = fr_schema_json_corrupt(err, "schema JSON");
fail:
    fr_free(fields);
    json_decref(root);
    return rc;
}
