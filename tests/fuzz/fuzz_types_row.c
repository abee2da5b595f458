/* fuzz_types_row.c — the row decoder (fr_row_decode, fr_row_schema_id) on arbitrary
 * bytes. The first byte chooses one of a few fixed schemas; the rest is the row. When
 * decoding succeeds, the schema id must read back alone and the values must re-encode to
 * exactly the input. */
#include <stdio.h>
#include <stdlib.h>

#include "types/types.h"

#define FZ_FIELDS_MAX 32

typedef struct fz_schema_def {
    int32_t id;
    const char *types[FZ_FIELDS_MAX];
} fz_schema_def;

/* A type name ending in '!' is NOT NULL. */
static const fz_schema_def fz_defs[] = {
    {0, {"INT!", "STRING"}},
    {1, {"BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE",
         "DECIMAL(10,2)", "DECIMAL(18,0)", "DECIMAL(19,3)", "DECIMAL(38,10)", "CHAR(4)",
         "VARCHAR(6)", "STRING", "BYTES", "DATE", "TIME(0)", "TIME(3)", "TIME(9)",
         "TIMESTAMP(0)", "TIMESTAMP(6)", "TIMESTAMP_LTZ(3)"}},
    {2, {"BOOLEAN!", "TINYINT!", "DECIMAL(18,2)!", "DECIMAL(19,2)", "VARCHAR(3)!", "FLOAT",
         "DOUBLE!", "BYTES"}},
    {300, {"INT!", "STRING", "TINYINT", "DOUBLE", "DECIMAL(5,2)", "DECIMAL(20,0)", "BOOLEAN",
           "FLOAT", "DATE"}},
};
#define FZ_NSCHEMAS (sizeof fz_defs / sizeof fz_defs[0])

static fr_schema *fz_schemas[FZ_NSCHEMAS];

static fr_schema *fz_make(const fz_schema_def *d)
{
    fr_field f[FZ_FIELDS_MAX];
    char names[FZ_FIELDS_MAX][16], tname[32];
    int n = 0;
    for (; n < FZ_FIELDS_MAX && d->types[n]; n++) {
        size_t tl = strlen(d->types[n]);
        bool not_null = d->types[n][tl - 1] == '!';
        snprintf(tname, sizeof tname, "%.*s", (int)(tl - not_null), d->types[n]);
        fr_error err;
        if (fr_type_parse(tname, &f[n].type, &err) < 0) abort();
        f[n].type.nullable = !not_null;
        snprintf(names[n], sizeof names[n], "f%d", n);
        f[n].name = names[n];
    }
    fr_schema *s = NULL;
    fr_error err;
    if (fr_schema_new(f, n, d->id, &s, &err) < 0) abort();
    return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    size_t which = data[0] % FZ_NSCHEMAS;
    if (!fz_schemas[which]) fz_schemas[which] = fz_make(&fz_defs[which]);
    const fr_schema *s = fz_schemas[which];
    const uint8_t *p = data + 1;
    size_t len = size - 1;
    fr_value v[FZ_FIELDS_MAX];
    fr_error err;
    int rc = fr_row_decode(p, len, s, v, &err);
    if (rc < 0) {
        if (rc != FR_ECORRUPT || err.code != rc) abort();
        return 0;
    }
    int32_t id = -1;
    if (fr_row_schema_id(p, len, &id, &err) < 0 || id != fr_schema_id(s)) abort();
    fr_buf b;
    fr_buf_init(&b);
    if (fr_row_encode(s, v, &b, &err) < 0) {
        fprintf(stderr, "re-encoding a decoded row failed: %s\n", err.msg);
        abort();
    }
    if (b.len != len || memcmp(b.data, p, len) != 0) abort();
    fr_buf_free(&b);
    return 0;
}
