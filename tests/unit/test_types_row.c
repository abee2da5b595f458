/* test_types_row.c — the compact row encoding (fr_row_encode, fr_row_schema_id,
 * fr_row_decode).
 *
 * Exact bytes of a small row; the checks of decoding one by one (schema id, NOT NULL, value
 * ranges, lengths, canonical varints and NaNs, trailing bytes); then randomized rows of
 * every type with nulls (seed printed, FIRTH_TEST_SEED replays) that must round-trip to the
 * same values and bytes, whose every truncation is FR_ECORRUPT and whose flipped bytes
 * decode to a row that re-encodes to them or are FR_ECORRUPT. Also encoding errors, the
 * size limit and allocation failures. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "types_codec_testkit.h"

#define T(s) tk_type(s)

static fr_type not_null(fr_type t)
{
    t.nullable = false;
    return t;
}

static fr_schema *make_schema(const fr_type *types, int n, int32_t id)
{
    fr_field f[64];
    char names[64][16];
    assert_true(n <= 64);
    for (int i = 0; i < n; i++) {
        snprintf(names[i], sizeof names[i], "c%d", i);
        f[i].name = names[i];
        f[i].type = types[i];
    }
    fr_schema *s = NULL;
    fr_error err;
    int rc = fr_schema_new(f, n, id, &s, &err);
    if (rc < 0) print_error("fr_schema_new: %s\n", err.msg);
    assert_int_equal(rc, 0);
    return s;
}

static void encode_ok(const fr_schema *s, const fr_value *vals, fr_buf *out)
{
    fr_error err;
    int rc = fr_row_encode(s, vals, out, &err);
    if (rc < 0) print_error("fr_row_encode: %s\n", err.msg);
    assert_int_equal(rc, 0);
}

static void test_row_exact_bytes(void **state)
{
    (void)state;
    fr_type types[] = {not_null(T("INT")), T("STRING"), T("TINYINT"), T("DOUBLE"),
                       T("DECIMAL(5,2)"), T("DECIMAL(20,0)"), T("BOOLEAN"), T("FLOAT"),
                       T("DATE")};
    fr_schema *s = make_schema(types, 9, 300);
    fr_value v[9] = {
        fr_value_int(types[0], -2),          fr_value_str(types[1], "hi", 2),
        fr_value_null(types[2]),             fr_value_double(types[3], 1.0),
        fr_value_decimal(types[4], 1250),    fr_value_decimal(types[5], -1),
        fr_value_bool(types[6], true),       fr_value_null(types[7]),
        fr_value_null(types[8]),
    };
    fr_buf b;
    fr_buf_init(&b);
    encode_ok(s, v, &b);
    const uint8_t want[] = {
        0xac, 0x02,                         /* schema id 300 */
        0x84, 0x01,                         /* fields 2, 7 and 8 are NULL */
        0x03,                               /* -2 zigzag */
        0x02, 'h', 'i',                     /* "hi" */
        0, 0, 0, 0, 0, 0, 0xf0, 0x3f,       /* 1.0 */
        0xc4, 0x13,                         /* 1250 zigzag = 2500 */
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, /* -1 in 16 bytes */
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        0x01,                               /* true */
    };
    assert_int_equal(b.len, sizeof want);
    assert_memory_equal(b.data, want, sizeof want);
    int32_t id = 0;
    assert_int_equal(fr_row_schema_id(b.data, b.len, &id, NULL), 0);
    assert_int_equal(id, 300);
    fr_value back[9];
    fr_error err;
    assert_int_equal(fr_row_decode(b.data, b.len, s, back, &err), 0);
    for (int i = 0; i < 9; i++) assert_true(tk_same_value(&v[i], &back[i], true));
    assert_true(back[1].v.s.ptr == b.data + 6); /* text points into the row */
    fr_buf_free(&b);
    fr_schema_free(s);
}

static void expect_corrupt(const fr_schema *s, const uint8_t *p, size_t n, const char *words)
{
    fr_value v[8];
    fr_error err;
    int rc = fr_row_decode(p, n, s, v, &err);
    if (rc != FR_ECORRUPT || !strstr(err.msg, words))
        print_error("rc %d, message \"%s\", expected \"%s\"\n", rc, err.msg, words);
    assert_int_equal(rc, FR_ECORRUPT);
    assert_non_null(strstr(err.msg, words));
}

static void test_row_decode_corrupt(void **state)
{
    (void)state;
    fr_type types[] = {not_null(T("TINYINT")), T("VARCHAR(3)"), T("FLOAT")};
    fr_schema *s = make_schema(types, 3, 2);
    fr_value v[3];
    fr_error err;
    /* The good row: id 2, no nulls, 5, "ab", 1.0f. */
    const uint8_t good[] = {2, 0, 10, 2, 'a', 'b', 0, 0, 0x80, 0x3f};
    assert_int_equal(fr_row_decode(good, sizeof good, s, v, &err), 0);
    assert_int_equal(v[0].v.i, 5);

    expect_corrupt(s, (const uint8_t[]){3, 0, 10, 2, 'a', 'b', 0, 0, 0x80, 0x3f}, 10,
                   "row written with schema 3, expected 2");
    expect_corrupt(s, (const uint8_t[]){2, 0, 0x90, 0x03, 2, 'a', 'b', 0, 0, 0x80, 0x3f}, 11,
                   "200 is out of TINYINT");
    expect_corrupt(s, (const uint8_t[]){2, 1, 2, 'a', 'b', 0, 0, 0x80, 0x3f}, 9,
                   "field 'c0': NULL in a NOT NULL field");
    expect_corrupt(s, (const uint8_t[]){2, 0x08, 10, 2, 'a', 'b', 0, 0, 0x80, 0x3f}, 10,
                   "bitmap bits set");
    expect_corrupt(s, (const uint8_t[]){2, 0, 10, 2, 'a', 'b', 0, 0, 0x80, 0x3f, 0}, 11,
                   "1 trailing byte(s) after the last field");
    expect_corrupt(s, (const uint8_t[]){2, 0, 10, 9, 'a', 'b', 0, 0, 0x80, 0x3f}, 10,
                   "9 bytes needed");
    expect_corrupt(s, (const uint8_t[]){2, 0, 10, 4, 'a', 'b', 'c', 'd', 0, 0, 0x80, 0x3f}, 12,
                   "longer than VARCHAR(3)");
    expect_corrupt(s, (const uint8_t[]){2, 0, 0x8a, 0x00, 2, 'a', 'b', 0, 0, 0x80, 0x3f}, 11,
                   "bad or truncated varint"); /* 5 spelled in two bytes */
    expect_corrupt(s, (const uint8_t[]){2, 0, 10, 0xff, 0xff, 0xff, 0xff, 0x0f}, 8,
                   "string");
    expect_corrupt(s, (const uint8_t[]){2, 0, 10, 2, 'a', 'b', 1, 0, 0xc0, 0x7f}, 10,
                   "NaN not in canonical form");
    expect_corrupt(s, (const uint8_t[]){0xff, 0xff, 0xff, 0xff, 0x7f}, 5, "schema id");
    expect_corrupt(s, (const uint8_t[]){}, 0, "varint");
    fr_type b = T("BOOLEAN");
    fr_schema *sb = make_schema(&b, 1, 0);
    expect_corrupt(sb, (const uint8_t[]){0, 0, 2}, 3, "BOOLEAN byte of 2");
    fr_type d = T("DECIMAL(2,1)");
    fr_schema *sd = make_schema(&d, 1, 0);
    expect_corrupt(sd, (const uint8_t[]){0, 0, 0xc8, 0x01}, 4, "more than 2 digits");
    fr_schema_free(sd);
    fr_schema_free(sb);
    fr_schema_free(s);
}

static void test_row_encode_errors(void **state)
{
    (void)state;
    fr_type types[] = {not_null(T("INT")), T("SMALLINT")};
    fr_schema *s = make_schema(types, 2, 1);
    fr_buf b;
    fr_buf_init(&b);
    assert_int_equal(fr_buf_append(&b, "x", 1, NULL), 0);
    fr_error err;
    fr_value v[2] = {fr_value_null(types[0]), fr_value_int(types[1], 1)};
    assert_int_equal(fr_row_encode(s, v, &b, &err), FR_EINVAL);
    assert_non_null(strstr(err.msg, "field 'c0'"));
    assert_int_equal(b.len, 1); /* what was there stays, nothing is added */
    v[0] = fr_value_int(types[0], 1);
    v[1] = fr_value_int(types[1], 40000);
    assert_int_equal(fr_row_encode(s, v, &b, &err), FR_EINVAL);
    assert_non_null(strstr(err.msg, "field 'c1'"));
    v[1] = fr_value_int(T("INT"), 1);
    assert_int_equal(fr_row_encode(s, v, &b, &err), FR_EINVAL);
    assert_int_equal(b.len, 1);
    v[1] = fr_value_null(types[1]);
    encode_ok(s, v, &b);
    assert_int_equal(b.len, 1 + 3);
    fr_buf_free(&b);
    fr_schema_free(s);
}

static void test_row_limit(void **state)
{
    (void)state;
    fr_type types[] = {T("BYTES"), T("BYTES")};
    fr_schema *s = make_schema(types, 2, 0);
    size_t n = (size_t)FR_ROW_BYTES_MAX / 2 + 1;
    uint8_t *big = fr_calloc(1, n);
    assert_non_null(big);
    fr_value v[2] = {fr_value_str(types[0], big, n), fr_value_null(types[1])};
    fr_buf b;
    fr_buf_init(&b);
    encode_ok(s, v, &b);
    fr_buf_reset(&b);
    v[1] = v[0];
    fr_error err;
    assert_int_equal(fr_row_encode(s, v, &b, &err), FR_ELIMIT);
    assert_int_equal(b.len, 0);
    fr_buf_free(&b);
    fr_free(big);
    fr_schema_free(s);
}

static void check_roundtrip(const fr_schema *s, const fr_value *vals, const fr_buf *enc)
{
    int nf = fr_schema_num_fields(s);
    fr_value back[64];
    fr_error err;
    int rc = fr_row_decode(enc->data, enc->len, s, back, &err);
    if (rc < 0) print_error("decode: %s\n", err.msg);
    assert_int_equal(rc, 0);
    for (int i = 0; i < nf; i++) assert_true(tk_same_value(&vals[i], &back[i], true));
    fr_buf again;
    fr_buf_init(&again);
    encode_ok(s, back, &again);
    assert_int_equal(again.len, enc->len);
    assert_memory_equal(again.data, enc->data, enc->len);
    fr_buf_free(&again);
    int32_t id = -1;
    assert_int_equal(fr_row_schema_id(enc->data, enc->len, &id, &err), 0);
    assert_int_equal(id, fr_schema_id(s));
}

static void check_malformed(const fr_schema *s, const fr_buf *enc)
{
    fr_value back[64];
    fr_error err;
    for (size_t cut = 0; cut < enc->len; cut += cut < 64 ? 1 : (size_t)tk_int(1, 200))
        assert_int_equal(fr_row_decode(enc->data, cut, s, back, &err), FR_ECORRUPT);
    uint8_t *copy = fr_malloc(enc->len + 1);
    assert_non_null(copy);
    for (int k = 0; k < 8; k++) {
        memcpy(copy, enc->data, enc->len);
        size_t at = (size_t)tk_rnd() % enc->len;
        copy[at] ^= (uint8_t)(1u << tk_int(0, 7));
        int rc = fr_row_decode(copy, enc->len, s, back, &err);
        if (rc < 0) {
            assert_int_equal(rc, FR_ECORRUPT);
            continue;
        }
        fr_buf again;
        fr_buf_init(&again);
        encode_ok(s, back, &again);
        assert_int_equal(again.len, enc->len);
        assert_memory_equal(again.data, copy, enc->len);
        fr_buf_free(&again);
    }
    copy[enc->len] = 0; /* one byte too many */
    memcpy(copy, enc->data, enc->len);
    assert_int_equal(fr_row_decode(copy, enc->len + 1, s, back, &err), FR_ECORRUPT);
    fr_free(copy);
}

static void test_row_random(void **state)
{
    (void)state;
    tk_seed("test_row_random");
    fr_buf b;
    fr_buf_init(&b);
    long nulls = 0, values = 0;
    for (int iter = 0; iter < 1500; iter++) {
        int nf = tk_int(0, 3) == 0 ? tk_int(1, 64) : tk_int(1, 10);
        fr_type types[64];
        for (int i = 0; i < nf; i++) {
            types[i] = T(tk_type_names[tk_int(0, TK_NTYPES - 1)]);
            types[i].nullable = tk_int(0, 2) != 0;
        }
        int32_t id = tk_int(0, 3) == 0 ? (int32_t)(tk_rnd() >> 33) : tk_int(0, 200);
        fr_schema *s = make_schema(types, nf, id);
        fr_arena *a = fr_arena_new(4096);
        assert_non_null(a);
        fr_value v[64];
        int null_percent = tk_int(0, 4) * 25;
        for (int i = 0; i < nf; i++) {
            bool null = types[i].nullable && tk_int(1, 100) <= null_percent;
            v[i] = null ? fr_value_null(types[i]) : tk_random_value(&types[i], a);
            nulls += null;
            values += !null;
        }
        fr_buf_reset(&b);
        encode_ok(s, v, &b);
        check_roundtrip(s, v, &b);
        check_malformed(s, &b);
        fr_arena_free(a);
        fr_schema_free(s);
    }
    assert_true(nulls > 1000 && values > 1000);
    fr_buf_free(&b);
}

static void test_row_alloc_failure(void **state)
{
    (void)state;
    fr_type types[] = {T("BIGINT"), T("STRING"), T("DECIMAL(30,2)")};
    fr_schema *s = make_schema(types, 3, 7);
    char text[300];
    memset(text, 'q', sizeof text);
    fr_value v[3] = {fr_value_int(types[0], 1), fr_value_str(types[1], text, sizeof text),
                     fr_value_decimal(types[2], 123)};
    bool succeeded = false;
    for (long n = 1; n < 10 && !succeeded; n++) {
        fr_buf b;
        fr_buf_init(&b);
        fr_error err;
        fr_alloc_fail_after(n);
        int rc = fr_row_encode(s, v, &b, &err);
        fr_alloc_fail_after(0);
        if (rc == 0) {
            succeeded = true;
            check_roundtrip(s, v, &b);
        } else {
            assert_int_equal(rc, FR_ENOMEM);
            assert_int_equal(b.len, 0);
        }
        fr_buf_free(&b);
    }
    assert_true(succeeded);
    fr_schema_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_row_exact_bytes),
        cmocka_unit_test(test_row_decode_corrupt),
        cmocka_unit_test(test_row_encode_errors),
        cmocka_unit_test(test_row_limit),
        cmocka_unit_test(test_row_random),
        cmocka_unit_test(test_row_alloc_failure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
