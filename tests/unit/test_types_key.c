/* test_types_key.c — the order-preserving key encoding (fr_key_encode, fr_key_decode).
 *
 * Exact bytes for a few values of each kind; then randomized properties over keys of 1 to 4
 * columns of every key type (seed printed, FIRTH_TEST_SEED replays): memcmp of two
 * encodings has the sign of the column-by-column comparison of the values, the encoding of
 * the first k columns is a byte prefix of the whole, decoding gives back the values and
 * re-encodes to the same bytes, every truncation is FR_ECORRUPT and flipped bytes either
 * decode to a key that re-encodes to them or are FR_ECORRUPT. Also the errors of encoding
 * (NULL, wrong type, out of range, too long) and allocation failures. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "types_codec_testkit.h"

#define T(s) tk_type(s)

static void encode_ok(const fr_type *types, const fr_value *vals, int n, fr_buf *out)
{
    fr_error err;
    int rc = fr_key_encode(types, vals, n, out, &err);
    if (rc < 0) print_error("fr_key_encode: %s\n", err.msg);
    assert_int_equal(rc, 0);
}

static void assert_bytes(const fr_buf *b, const uint8_t *want, size_t n)
{
    assert_int_equal(b->len, n);
    assert_memory_equal(b->data, want, n);
}

static void test_key_exact_bytes(void **state)
{
    (void)state;
    fr_buf b;
    fr_buf_init(&b);
    fr_type ti = T("INT"), tt = T("TINYINT"), tb = T("BOOLEAN"), ts = T("STRING");
    fr_type td = T("DOUBLE"), tf = T("FLOAT"), tdec = T("DECIMAL(10,2)"), tbig = T("BIGINT");

    fr_value v = fr_value_int(ti, 1);
    encode_ok(&ti, &v, 1, &b);
    assert_bytes(&b, (const uint8_t[]){0x80, 0, 0, 1}, 4);
    fr_buf_reset(&b);
    v = fr_value_int(ti, -1);
    encode_ok(&ti, &v, 1, &b);
    assert_bytes(&b, (const uint8_t[]){0x7f, 0xff, 0xff, 0xff}, 4);
    fr_buf_reset(&b);
    v = fr_value_int(tt, -128);
    encode_ok(&tt, &v, 1, &b);
    assert_bytes(&b, (const uint8_t[]){0x00}, 1);
    fr_buf_reset(&b);
    v = fr_value_int(tbig, INT64_MAX);
    encode_ok(&tbig, &v, 1, &b);
    assert_bytes(&b, (const uint8_t[]){0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, 8);
    fr_buf_reset(&b);
    v = fr_value_bool(tb, true);
    encode_ok(&tb, &v, 1, &b);
    assert_bytes(&b, (const uint8_t[]){1}, 1);
    fr_buf_reset(&b);
    v = fr_value_str(ts, "a\0b", 3);
    encode_ok(&ts, &v, 1, &b);
    assert_bytes(&b, (const uint8_t[]){'a', 0, 0xff, 'b', 0, 0}, 6);
    fr_buf_reset(&b);
    v = fr_value_str(ts, "", 0);
    encode_ok(&ts, &v, 1, &b);
    assert_bytes(&b, (const uint8_t[]){0, 0}, 2);
    fr_buf_reset(&b);
    v = fr_value_double(td, 1.0);
    encode_ok(&td, &v, 1, &b);
    assert_bytes(&b, (const uint8_t[]){0xbf, 0xf0, 0, 0, 0, 0, 0, 0}, 8);
    fr_buf_reset(&b);
    v = fr_value_double(td, -0.0); /* -0.0 is written as 0.0 */
    encode_ok(&td, &v, 1, &b);
    assert_bytes(&b, (const uint8_t[]){0x80, 0, 0, 0, 0, 0, 0, 0}, 8);
    fr_buf_reset(&b);
    v = fr_value_double(td, -NAN); /* every NaN is one NaN, after +Infinity */
    encode_ok(&td, &v, 1, &b);
    assert_bytes(&b, (const uint8_t[]){0xff, 0xf8, 0, 0, 0, 0, 0, 0}, 8);
    fr_buf_reset(&b);
    v = fr_value_double(tf, -1.0);
    encode_ok(&tf, &v, 1, &b);
    assert_bytes(&b, (const uint8_t[]){0x40, 0x7f, 0xff, 0xff}, 4);
    fr_buf_reset(&b);
    v = fr_value_decimal(tdec, -1);
    encode_ok(&tdec, &v, 1, &b);
    uint8_t want[16];
    memset(want, 0xff, 16);
    want[0] = 0x7f;
    assert_bytes(&b, want, 16);
    fr_buf_free(&b);
}

/* "a" < "a\0" < "ab" < "b", and a two-column key orders by its first column first. */
static void test_key_string_order(void **state)
{
    (void)state;
    fr_type ts[2] = {T("BYTES"), T("INT")};
    const char *texts[] = {"", "\0", "\0\0", "a", "a\0", "a\0\0", "a\x01", "ab", "b"};
    size_t lens[] = {0, 1, 2, 1, 2, 3, 2, 2, 1};
    fr_buf prev, cur;
    fr_buf_init(&prev);
    fr_buf_init(&cur);
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        fr_value v[2] = {fr_value_str(ts[0], texts[i], lens[i]), fr_value_int(ts[1], -5)};
        fr_buf_reset(&cur);
        encode_ok(ts, v, 2, &cur);
        if (i > 0) {
            size_t n = prev.len < cur.len ? prev.len : cur.len;
            int c = memcmp(prev.data, cur.data, n);
            assert_true(c < 0 || (c == 0 && prev.len < cur.len));
        }
        fr_buf_reset(&prev);
        assert_int_equal(fr_buf_append(&prev, cur.data, cur.len, NULL), 0);
    }
    fr_buf_free(&prev);
    fr_buf_free(&cur);
}

static void test_key_encode_errors(void **state)
{
    (void)state;
    fr_buf b;
    fr_buf_init(&b);
    fr_error err;
    fr_type types[2] = {T("INT"), T("TINYINT")};
    fr_value v[2] = {fr_value_int(types[0], 7), fr_value_null(types[1])};
    assert_int_equal(fr_key_encode(types, v, 2, &b, &err), FR_EINVAL);
    assert_non_null(strstr(err.msg, "key column 2"));
    assert_non_null(strstr(err.msg, "NULL"));
    assert_int_equal(b.len, 0); /* nothing is left behind */
    v[1] = fr_value_int(types[1], 200);
    assert_int_equal(fr_key_encode(types, v, 2, &b, &err), FR_EINVAL);
    assert_int_equal(b.len, 0);
    v[1] = fr_value_int(T("SMALLINT"), 2);
    assert_int_equal(fr_key_encode(types, v, 2, &b, &err), FR_EINVAL);
    fr_type dec = T("DECIMAL(4,2)");
    fr_value d = fr_value_decimal(T("DECIMAL(4,1)"), 5);
    assert_int_equal(fr_key_encode(&dec, &d, 1, &b, &err), FR_EINVAL);
    d = fr_value_decimal(dec, 10000);
    assert_int_equal(fr_key_encode(&dec, &d, 1, &b, &err), FR_EINVAL);
    fr_type tf = T("FLOAT");
    fr_value f = fr_value_double(T("FLOAT"), 0.1);
    f.v.f = 0.1; /* not a float value */
    assert_int_equal(fr_key_encode(&tf, &f, 1, &b, &err), FR_EINVAL);
    fr_type ts = T("TIMESTAMP(3)");
    fr_value t6 = fr_value_int(T("TIMESTAMP(6)"), 1);
    assert_int_equal(fr_key_encode(&ts, &t6, 1, &b, &err), FR_EINVAL);
    fr_type tc = T("VARCHAR(2)");
    fr_value c = fr_value_str(tc, "abc", 3);
    assert_true(fr_key_encode(&tc, &c, 1, &b, &err) < 0);
    assert_int_equal(b.len, 0);
    fr_buf_free(&b);
}

static void test_key_limit(void **state)
{
    (void)state;
    size_t n = FR_KEY_BYTES_MAX - 2;
    uint8_t *big = fr_calloc(1, n + 1);
    assert_non_null(big);
    memset(big, 'x', n + 1);
    fr_type t[2] = {T("BYTES"), T("BOOLEAN")};
    fr_value v[2] = {fr_value_str(t[0], big, n), fr_value_bool(t[1], true)};
    fr_buf b;
    fr_buf_init(&b);
    fr_error err;
    encode_ok(t, v, 1, &b); /* exactly the limit */
    assert_int_equal(b.len, FR_KEY_BYTES_MAX);
    fr_buf_reset(&b);
    assert_int_equal(fr_key_encode(t, v, 2, &b, &err), FR_ELIMIT);
    assert_int_equal(b.len, 0);
    v[0].v.s.len = n + 1;
    assert_int_equal(fr_key_encode(t, v, 1, &b, &err), FR_ELIMIT);
    big[0] = 0; /* escaping makes it longer */
    v[0].v.s.len = n;
    assert_int_equal(fr_key_encode(t, v, 1, &b, &err), FR_ELIMIT);
    fr_buf_free(&b);
    fr_free(big);
}

static void test_key_decode_zero_bytes(void **state)
{
    (void)state;
    fr_type t[2] = {T("BYTES"), T("STRING")};
    fr_value v[2] = {fr_value_str(t[0], "x\0y", 3), fr_value_str(t[1], "plain", 5)};
    fr_buf b;
    fr_buf_init(&b);
    encode_ok(t, v, 2, &b);
    fr_value out[2];
    fr_error err;
    size_t used = 0;
    /* Without an arena the unescaped text has nowhere to go. */
    assert_int_equal(fr_key_decode(b.data, b.len, t, 2, out, &used, &err), FR_EUNSUPPORTED);
    fr_arena *a = fr_arena_new(64);
    assert_non_null(a);
    assert_int_equal(fr_key_decode_arena(b.data, b.len, t, 2, a, out, &used, &err), 0);
    assert_int_equal(used, b.len);
    assert_int_equal(out[0].v.s.len, 3);
    assert_memory_equal(out[0].v.s.ptr, "x\0y", 3);
    /* Text without zero bytes points into the key. */
    assert_true(out[1].v.s.ptr >= b.data && out[1].v.s.ptr < b.data + b.len);
    assert_int_equal(fr_key_decode(b.data + 6, b.len - 6, t + 1, 1, out, &used, &err), 0);
    assert_memory_equal(out[0].v.s.ptr, "plain", 5);
    fr_arena_free(a);
    fr_buf_free(&b);
}

static void expect_corrupt(const uint8_t *p, size_t n, const char *type)
{
    fr_type t = T(type);
    fr_value v;
    fr_error err;
    int rc = fr_key_decode(p, n, &t, 1, &v, NULL, &err);
    if (rc != FR_ECORRUPT) print_error("%s: rc %d\n", type, rc);
    assert_int_equal(rc, FR_ECORRUPT);
    assert_int_equal(err.code, FR_ECORRUPT);
}

static void test_key_decode_corrupt(void **state)
{
    (void)state;
    expect_corrupt((const uint8_t[]){2}, 1, "BOOLEAN");
    expect_corrupt((const uint8_t[]){0x80, 0}, 2, "INT");
    expect_corrupt((const uint8_t[]){'a', 0, 1, 0, 0}, 5, "STRING");
    expect_corrupt((const uint8_t[]){'a', 0}, 2, "STRING");
    expect_corrupt((const uint8_t[]){'a', 'b', 'c', 0, 0}, 5, "VARCHAR(2)");
    expect_corrupt((const uint8_t[]){0x7f, 0xff, 0xff, 0xff}, 4, "FLOAT");      /* -0.0 */
    expect_corrupt((const uint8_t[]){0xff, 0xc0, 0, 1}, 4, "FLOAT");            /* a NaN */
    expect_corrupt((const uint8_t[]){0x00, 0x07, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, 8,
                   "DOUBLE"); /* a negative NaN */
    uint8_t dec[16] = {0x80};
    dec[15] = 100; /* 100 does not fit DECIMAL(2, 0) */
    expect_corrupt(dec, 16, "DECIMAL(2,0)");
    dec[15] = 99;
    fr_type t = T("DECIMAL(2,0)");
    fr_value v;
    assert_int_equal(fr_key_decode(dec, 16, &t, 1, &v, NULL, NULL), 0);
    assert_true(v.v.d == 99);
}

/* Compares two random keys of the same types, column by column. */
static int lexicographic(const fr_value *a, const fr_value *b, int n)
{
    for (int i = 0; i < n; i++) {
        int c;
        fr_error err;
        assert_int_equal(fr_value_compare(&a[i], &b[i], &c, &err), 0);
        if (c != 0) return c < 0 ? -1 : 1;
    }
    return 0;
}

static int bytewise(const fr_buf *a, const fr_buf *b)
{
    size_t n = a->len < b->len ? a->len : b->len;
    int c = n ? memcmp(a->data, b->data, n) : 0;
    if (c != 0) return c < 0 ? -1 : 1;
    return (a->len > b->len) - (a->len < b->len);
}

static void random_key(const fr_type *types, int n, fr_value *out, const fr_value *like,
                       fr_arena *a)
{
    for (int i = 0; i < n; i++)
        out[i] = like && tk_int(0, 2) == 0 ? like[i] : tk_random_value(&types[i], a);
}

static void check_decode(const fr_buf *enc, const fr_type *types, int n, const fr_value *vals,
                         fr_arena *a)
{
    fr_value back[4];
    fr_error err;
    size_t used = 0;
    int rc = fr_key_decode_arena(enc->data, enc->len, types, n, a, back, &used, &err);
    if (rc < 0) print_error("decode: %s\n", err.msg);
    assert_int_equal(rc, 0);
    assert_int_equal(used, enc->len);
    for (int i = 0; i < n; i++) assert_true(tk_same_value(&vals[i], &back[i], false));
    fr_buf again;
    fr_buf_init(&again);
    encode_ok(types, back, n, &again);
    assert_int_equal(again.len, enc->len);
    assert_memory_equal(again.data, enc->data, enc->len);
    fr_buf_free(&again);
    /* A prefix of the columns decodes from a prefix of the bytes. */
    for (int k = 0; k < n; k++) {
        assert_int_equal(fr_key_decode_arena(enc->data, enc->len, types, k, a, back, &used, &err),
                         0);
        fr_buf pre;
        fr_buf_init(&pre);
        encode_ok(types, vals, k, &pre);
        assert_int_equal(used, pre.len);
        assert_true(pre.len <= enc->len);
        if (pre.len) assert_memory_equal(pre.data, enc->data, pre.len);
        fr_buf_free(&pre);
    }
}

/* Every truncation is corrupt; flipped bytes decode to something that re-encodes to the
 * same bytes, or are corrupt. */
static void check_malformed(const fr_buf *enc, const fr_type *types, int n, fr_arena *a)
{
    fr_value back[4];
    fr_error err;
    size_t used;
    for (size_t cut = 0; cut < enc->len && cut < 64; cut++) {
        int rc = fr_key_decode_arena(enc->data, cut, types, n, a, back, &used, &err);
        assert_int_equal(rc, FR_ECORRUPT);
    }
    if (enc->len > 64) {
        size_t cut = enc->len - 1 - (size_t)tk_int(0, 63);
        assert_int_equal(fr_key_decode_arena(enc->data, cut, types, n, a, back, &used, &err),
                         FR_ECORRUPT);
    }
    uint8_t *copy = fr_malloc(enc->len);
    assert_non_null(copy);
    for (int k = 0; k < 8; k++) {
        memcpy(copy, enc->data, enc->len);
        size_t at = (size_t)tk_rnd() % enc->len;
        copy[at] ^= (uint8_t)(1u << tk_int(0, 7));
        if (tk_int(0, 3) == 0) copy[at] = (uint8_t)tk_int(0, 1) * 0xff;
        int rc = fr_key_decode_arena(copy, enc->len, types, n, a, back, &used, &err);
        if (rc < 0) {
            assert_int_equal(rc, FR_ECORRUPT);
            continue;
        }
        fr_buf again;
        fr_buf_init(&again);
        encode_ok(types, back, n, &again);
        assert_int_equal(again.len, used);
        assert_memory_equal(again.data, copy, used);
        fr_buf_free(&again);
    }
    fr_free(copy);
}

static void test_key_random(void **state)
{
    (void)state;
    tk_seed("test_key_random");
    fr_buf ea, eb;
    fr_buf_init(&ea);
    fr_buf_init(&eb);
    int orders[3] = {0, 0, 0};
    for (int iter = 0; iter < 3000; iter++) {
        int n = tk_int(1, 4);
        fr_type types[4];
        for (int i = 0; i < n; i++) types[i] = T(tk_type_names[tk_int(0, TK_NTYPES - 1)]);
        fr_arena *a = fr_arena_new(4096);
        assert_non_null(a);
        fr_value va[4], vb[4];
        random_key(types, n, va, NULL, a);
        random_key(types, n, vb, va, a);
        fr_buf_reset(&ea);
        fr_buf_reset(&eb);
        encode_ok(types, va, n, &ea);
        encode_ok(types, vb, n, &eb);
        int want = lexicographic(va, vb, n), got = bytewise(&ea, &eb);
        if (want != got) print_error("iteration %d: values compare %d, keys %d\n", iter, want, got);
        assert_int_equal(want, got);
        orders[want + 1]++;
        check_decode(&ea, types, n, va, a);
        check_decode(&eb, types, n, vb, a);
        check_malformed(&ea, types, n, a);
        fr_arena_free(a);
    }
    /* The values are drawn so that all three outcomes occur often. */
    assert_true(orders[0] > 100 && orders[1] > 100 && orders[2] > 100);
    fr_buf_free(&ea);
    fr_buf_free(&eb);
}

static void test_key_alloc_failure(void **state)
{
    (void)state;
    fr_type t[2] = {T("BIGINT"), T("BYTES")};
    fr_value v[2] = {fr_value_int(t[0], 42), fr_value_str(t[1], "k\0v", 3)};
    fr_buf b;
    fr_error err;
    bool succeeded = false;
    for (long n = 1; n < 10 && !succeeded; n++) {
        fr_buf_init(&b);
        fr_alloc_fail_after(n);
        int rc = fr_key_encode(t, v, 2, &b, &err);
        fr_alloc_fail_after(0);
        if (rc == 0) {
            succeeded = true;
            assert_int_equal(b.len, 8 + 6);
        } else {
            assert_int_equal(rc, FR_ENOMEM);
            assert_int_equal(b.len, 0);
        }
        fr_buf_free(&b);
    }
    assert_true(succeeded);
    fr_buf_init(&b);
    encode_ok(t, v, 2, &b);
    succeeded = false;
    for (long n = 1; n < 10 && !succeeded; n++) {
        fr_arena *a = fr_arena_new(16);
        assert_non_null(a);
        fr_value out[2];
        fr_alloc_fail_after(n);
        int rc = fr_key_decode_arena(b.data, b.len, t, 2, a, out, NULL, &err);
        fr_alloc_fail_after(0);
        if (rc == 0) {
            succeeded = true;
            assert_memory_equal(out[1].v.s.ptr, "k\0v", 3);
        } else {
            assert_int_equal(rc, FR_ENOMEM);
        }
        fr_arena_free(a);
    }
    assert_true(succeeded);
    fr_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_key_exact_bytes),
        cmocka_unit_test(test_key_string_order),
        cmocka_unit_test(test_key_encode_errors),
        cmocka_unit_test(test_key_limit),
        cmocka_unit_test(test_key_decode_zero_bytes),
        cmocka_unit_test(test_key_decode_corrupt),
        cmocka_unit_test(test_key_random),
        cmocka_unit_test(test_key_alloc_failure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
