/* arrow_fuzz_schema.h — the fixed schema the Arrow IPC fuzz target decodes bare RecordBatch
 * messages against; the interop tool writes seed messages of it. Every physical layout
 * appears: bitmap, 1/2/4/8/16-byte values, offsets + data. */
#ifndef FIRTH_ARROW_FUZZ_SCHEMA_H
#define FIRTH_ARROW_FUZZ_SCHEMA_H

#include "arrow/arrow.h"

static const struct {
    const char *name, *type;
} fr_fuzz_arrow_fields[] = {
    {"b", "BOOLEAN"}, {"i8", "TINYINT"}, {"i16", "SMALLINT"}, {"i32", "INT"}, {"i64", "BIGINT NOT NULL"},
    {"f", "DOUBLE"}, {"dec", "DECIMAL(20, 4)"}, {"s", "STRING"}, {"vc", "VARCHAR(8)"}, {"by", "BYTES"},
    {"d", "DATE"}, {"t", "TIME(3)"}, {"ts", "TIMESTAMP_LTZ(6)"},
};
#define FR_FUZZ_ARROW_NFIELDS ((int)(sizeof fr_fuzz_arrow_fields / sizeof fr_fuzz_arrow_fields[0]))

/* Builds the fixed schema; NULL on failure. */
static inline fr_schema *fr_fuzz_arrow_schema(void)
{
    fr_field fields[FR_FUZZ_ARROW_NFIELDS];
    fr_error err;
    for (int i = 0; i < FR_FUZZ_ARROW_NFIELDS; i++) {
        fields[i].name = (char *)fr_fuzz_arrow_fields[i].name;
        if (fr_type_parse(fr_fuzz_arrow_fields[i].type, &fields[i].type, &err) < 0) return NULL;
    }
    fr_schema *s = NULL;
    return fr_schema_new(fields, FR_FUZZ_ARROW_NFIELDS, 0, &s, &err) < 0 ? NULL : s;
}

#endif
