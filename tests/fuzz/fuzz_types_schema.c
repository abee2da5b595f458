/* fuzz_types_schema.c — the catalog's schema JSON reader and the type-name parser.
 * Whatever parses must write back to JSON that parses to an equal schema, and every type
 * name that parses must format to a name that parses to the same type. */
#include <stdint.h>
#include <stdlib.h>

#include "types/types.h"

static void check_type_name(const uint8_t *data, size_t size)
{
    char name[256];
    size_t n = size < sizeof name - 1 ? size : sizeof name - 1;
    memcpy(name, data, n);
    name[n] = '\0';
    fr_type t, u;
    fr_error err;
    if (fr_type_parse(name, &t, &err) < 0) return;
    if (fr_type_validate(&t, &err) < 0) abort();
    char out[128];
    fr_type_format(&t, true, out, sizeof out);
    if (fr_type_parse(out, &u, &err) < 0) abort();
    if (!fr_type_equal(&t, &u) || t.nullable != u.nullable) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_type_name(data, size);
    fr_schema *s = NULL;
    fr_error err;
    if (fr_schema_from_json((const char *)data, size, &s, &err) < 0) {
        if (err.code != FR_ECORRUPT && err.code != FR_ENOMEM && err.code != FR_ELIMIT) abort();
        return 0;
    }
    char *json = NULL;
    if (fr_schema_to_json(s, &json, &err) < 0) abort();
    fr_schema *r = NULL;
    if (fr_schema_from_json(json, strlen(json), &r, &err) < 0) abort();
    if (!fr_schema_equal(s, r) || fr_schema_id(s) != fr_schema_id(r)) abort();
    for (int i = 0; i < fr_schema_num_fields(s); i++)
        if (fr_schema_find(r, fr_schema_field(s, i)->name) != i) abort();
    fr_free(json);
    fr_schema_free(r);
    fr_schema_free(s);
    return 0;
}
