/* fuzz_types_value.c — literal parsing, formatting, casting and comparison of values.
 * The first byte chooses the type; the rest is the text. A value that parses must format
 * to text that parses back to an equal value (for every type whose text form is exact),
 * and casts to other types must either succeed or fail with a range or type error. */
#include <stdint.h>
#include <stdlib.h>

#include "types/types.h"

static const char *const fuzz_types[] = {
    "BOOLEAN",       "TINYINT",      "SMALLINT",     "INT",          "BIGINT",
    "FLOAT",         "DOUBLE",       "DECIMAL(10,2)", "DECIMAL(38,0)", "DECIMAL(38,38)",
    "DECIMAL(5,5)",  "CHAR(3)",      "VARCHAR(5)",   "STRING",       "BYTES",
    "DATE",          "TIME(0)",      "TIME(3)",      "TIME(9)",      "TIMESTAMP(0)",
    "TIMESTAMP(3)",  "TIMESTAMP(9)", "TIMESTAMP_LTZ(3)", "TIMESTAMP_LTZ(6)", "DECIMAL(19,4)",
};
#define FUZZ_NTYPES (sizeof fuzz_types / sizeof fuzz_types[0])

static fr_type fuzz_type(size_t i)
{
    fr_type t;
    fr_error err;
    if (fr_type_parse(fuzz_types[i % FUZZ_NTYPES], &t, &err) < 0) abort();
    return t;
}

static void check_roundtrip(const fr_value *v)
{
    fr_buf b;
    fr_buf_init(&b);
    fr_error err;
    if (fr_value_format(v, &b, &err) < 0) abort();
    if (v->type.id == FR_T_BYTES) {
        fr_buf_free(&b);
        return;
    }
    fr_value back;
    if (fr_value_parse(b.len ? (const char *)b.data : "", b.len, &v->type, &back, &err) < 0)
        abort();
    int c = 1;
    bool is_nan = (v->type.id == FR_T_FLOAT || v->type.id == FR_T_DOUBLE) && v->v.f != v->v.f;
    if (fr_value_compare(v, &back, &c, &err) < 0) abort();
    if (c != 0 && !is_nan) abort();
    fr_buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2) return 0;
    fr_type t = fuzz_type(data[0]);
    fr_type to = fuzz_type(data[1]);
    const char *text = (const char *)data + 2;
    size_t n = size - 2;
    fr_value v;
    fr_error err;
    if (fr_value_parse(text, n, &t, &v, &err) < 0) {
        if (err.code != FR_EINVAL && err.code != FR_ERANGE) abort();
        return 0;
    }
    check_roundtrip(&v);
    fr_arena *a = fr_arena_new(1024);
    if (!a) return 0;
    fr_value out;
    int rc = fr_value_cast(&v, &to, a, &out, &err);
    if (rc == 0) {
        if (out.type.id != to.id) abort();
        check_roundtrip(&out);
        int c;
        (void)fr_value_compare(&v, &out, &c, &err);
    } else if (rc != FR_ERANGE && rc != FR_ETYPE && rc != FR_EINVAL) {
        abort();
    }
    fr_arena_free(a);
    return 0;
}
