/* fuzz_types_key.c — the key decoder (fr_key_decode, fr_key_decode_arena) on arbitrary
 * bytes. The first byte chooses one of a few fixed lists of key column types; the rest is
 * the key. When decoding succeeds, the values must re-encode to exactly the bytes consumed,
 * every shorter prefix of the columns must decode from a byte prefix, and the decoder
 * without an arena must agree (or refuse text holding a zero byte). When the bytes after the
 * first key hold a second key, memcmp of the two must order them like their values. */
#include <stdio.h>
#include <stdlib.h>

#include "types/types.h"

#define FZ_COLS_MAX 4

static const char *const fz_key_types[][FZ_COLS_MAX] = {
    {"INT"},
    {"BIGINT", "STRING"},
    {"BOOLEAN", "TINYINT", "SMALLINT", "DATE"},
    {"FLOAT", "DOUBLE"},
    {"DECIMAL(10,2)", "DECIMAL(38,0)", "DECIMAL(1,0)"},
    {"BYTES", "VARCHAR(3)", "CHAR(2)"},
    {"TIME(0)", "TIME(9)", "TIMESTAMP(3)", "TIMESTAMP_LTZ(6)"},
    {"STRING", "STRING", "INT"},
};
#define FZ_NLISTS (sizeof fz_key_types / sizeof fz_key_types[0])

static int fz_types(size_t which, fr_type *out)
{
    int n = 0;
    for (; n < FZ_COLS_MAX && fz_key_types[which][n]; n++) {
        fr_error err;
        if (fr_type_parse(fz_key_types[which][n], &out[n], &err) < 0) abort();
        out[n].nullable = false;
    }
    return n;
}

static void fz_check_same(const uint8_t *p, size_t used, const fr_type *t, int n,
                          const fr_value *v)
{
    fr_buf b;
    fr_buf_init(&b);
    fr_error err;
    if (fr_key_encode(t, v, n, &b, &err) < 0) {
        fprintf(stderr, "re-encoding a decoded key failed: %s\n", err.msg);
        abort();
    }
    if (b.len != used || (used && memcmp(b.data, p, used) != 0)) abort();
    fr_buf_free(&b);
}

/* The sign of the column-by-column comparison of two keys' values. */
static int fz_compare(const fr_value *a, const fr_value *b, int n)
{
    for (int i = 0; i < n; i++) {
        int c = 0;
        fr_error err;
        if (fr_value_compare(&a[i], &b[i], &c, &err) < 0) abort();
        if (c != 0) return c < 0 ? -1 : 1;
    }
    return 0;
}

static void fz_check_order(const uint8_t *p, size_t len, size_t used, const fr_type *t, int n,
                           const fr_value *first, fr_arena *a)
{
    fr_value second[FZ_COLS_MAX];
    size_t used2 = 0;
    if (fr_key_decode_arena(p + used, len - used, t, n, a, second, &used2, NULL) < 0) return;
    size_t m = used < used2 ? used : used2;
    int c = m ? memcmp(p, p + used, m) : 0;
    c = c != 0 ? (c < 0 ? -1 : 1) : (used > used2) - (used < used2);
    if (c != fz_compare(first, second, n)) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    fr_type t[FZ_COLS_MAX];
    int n = fz_types(data[0] % FZ_NLISTS, t);
    const uint8_t *p = data + 1;
    size_t len = size - 1;
    fr_arena *a = fr_arena_new(256);
    if (!a) return 0;
    fr_value v[FZ_COLS_MAX];
    fr_error err;
    size_t used = 0;
    int rc = fr_key_decode_arena(p, len, t, n, a, v, &used, &err);
    if (rc < 0) {
        if (rc != FR_ECORRUPT && rc != FR_ENOMEM) abort();
        if (err.code != rc) abort();
        fr_arena_free(a);
        return 0;
    }
    if (used > len) abort();
    fz_check_same(p, used, t, n, v);
    for (int k = 0; k < n; k++) {
        size_t u = 0;
        if (fr_key_decode_arena(p, len, t, k, a, v, &u, &err) < 0 || u > used) abort();
        fz_check_same(p, u, t, k, v);
    }
    if (fr_key_decode_arena(p, len, t, n, a, v, &used, &err) < 0) abort();
    fz_check_order(p, len, used, t, n, v, a);
    fr_value plain[FZ_COLS_MAX];
    size_t used_plain = 0;
    rc = fr_key_decode(p, len, t, n, plain, &used_plain, &err);
    if (rc < 0 && rc != FR_EUNSUPPORTED) abort();
    if (rc == 0 && (used_plain != used || fz_compare(plain, v, n) != 0)) abort();
    fr_arena_free(a);
    return 0;
}
