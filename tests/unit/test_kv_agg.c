/* test_kv_agg.c — the aggregation merge engine, function by function with its edge cases:
 * integer sums and products wrapping as Java's do, FLOAT in single precision, DECIMAL
 * results rounded half up or NULL when they outgrow the column, NULL inputs, max/min over
 * strings, dates and decimals, the value functions, listagg delimiters, bool_and/bool_or,
 * rbm32/rbm64 unions checked against CRoaring and against the exact portable bytes, every
 * kind of malformed bitmap refused with the column's name, and partial aggregation with
 * partial deletes. */
#include <roaring/roaring.h>

#include "kv_testkit.h"

static kt_bucket *agg_bucket(const char *name, int n, const char *const *cols,
                             const fr_agg_fn *aggs)
{
    kt_bucket *b = kt_bucket_new(name, kt_schema(n, cols), (const int[]){ 0 }, 1);
    b->spec.merge = FR_MERGE_AGGREGATION;
    b->spec.delete_behavior = fr_delete_behavior_default(FR_MERGE_AGGREGATION);
    for (int i = 0; i < n; i++) b->aggs[i] = aggs[i];
    return b;
}

static void test_sum(void **state)
{
    (void)state;
    kt_bucket *b = agg_bucket("kv-sum", 7,
                              (const char *[]){ "id INT NOT NULL", "t TINYINT", "i INT", "l BIGINT",
                                                "f FLOAT", "d DOUBLE", "m DECIMAL(5, 2)" },
                              (const fr_agg_fn[]){ 0, FR_AGG_SUM, FR_AGG_SUM, FR_AGG_SUM,
                                                   FR_AGG_SUM, FR_AGG_SUM, FR_AGG_SUM });
    kt_open(b);
    KT_UPSERT(b, "1|127|2147483647|9223372036854775807|0.1|0.1|999.98",
              "1|1|1|1|0.2|0.2|0.01");
    /* integers wrap around like Java's; FLOAT adds in single precision */
    kt_expect_state(b, "1|-128|-2147483648|-9223372036854775808|0.3|0.30000000000000004|999.99");
    /* NULL inputs are ignored; a DECIMAL past its precision becomes NULL */
    KT_UPSERT(b, "1|NULL|NULL|NULL|NULL|NULL|0.01");
    kt_expect_state(b, "1|-128|-2147483648|-9223372036854775808|0.3|0.30000000000000004|NULL");
    /* a NULL accumulator takes the input */
    KT_UPSERT(b, "1|-1|NULL|NULL|NULL|-0.5|-5.25");
    kt_expect_state(b, "1|127|-2147483648|-9223372036854775808|0.3|-0.19999999999999996|-5.25");
    /* adding 0 leaves the row as it is: no changelog */
    int64_t end = fr_log_end_offset(b->log);
    KT_UPSERT(b, "1|0|0|0|0.0|0.0|0.00");
    assert_int_equal(fr_log_end_offset(b->log), end);
    kt_bucket_free(b);
}

static void test_product(void **state)
{
    (void)state;
    kt_bucket *b = agg_bucket(
        "kv-product", 5,
        (const char *[]){ "id INT NOT NULL", "i INT", "m DECIMAL(10, 2)", "d DOUBLE",
                          "big DECIMAL(38, 18)" },
        (const fr_agg_fn[]){ 0, FR_AGG_PRODUCT, FR_AGG_PRODUCT, FR_AGG_PRODUCT, FR_AGG_PRODUCT });
    kt_open(b);
    KT_UPSERT(b, "1|65536|1.25|0.9|50000000000.5", "1|65536|1.25|0.8|2000.25",
              "2|-3|-0.05|NULL|99999999999999999999.999999999999999999",
              "2|5|0.10|2|10");
    /* 1.5625 rounds half up to 1.56; -0.005 to -0.01 (away from zero); a product whose
     * unscaled form needs more than 128 bits is still exact; one that outgrows the column
     * is NULL */
    kt_expect_state(b, "1|0|1.56|0.7200000000000001|100012500001000.125000000000000000",
                    "2|-15|-0.01|2.0|NULL");
    KT_UPSERT(b, "1|1|1.15|NULL|NULL");
    kt_expect_state(b, "1|0|1.79|0.7200000000000001|100012500001000.125000000000000000",
                    "2|-15|-0.01|2.0|NULL");
    KT_UPSERT(b, "1|1|99999999.99|1|1", "1|1|10.00|1|1");
    /* 1.79 * 99999999.99 outgrows DECIMAL(10, 2): NULL, which the next input replaces */
    kt_expect_state(b, "1|0|10.00|0.7200000000000001|100012500001000.125000000000000000",
                    "2|-15|-0.01|2.0|NULL");
    kt_bucket_free(b);
}

static void test_max_min(void **state)
{
    (void)state;
    kt_bucket *b = agg_bucket(
        "kv-maxmin", 7,
        (const char *[]){ "id INT NOT NULL", "s STRING", "t STRING", "dt DATE", "m DECIMAL(6, 2)",
                          "f DOUBLE", "ts TIMESTAMP(6)" },
        (const fr_agg_fn[]){ 0, FR_AGG_MAX, FR_AGG_MIN, FR_AGG_MAX, FR_AGG_MIN, FR_AGG_MAX,
                             FR_AGG_MIN });
    kt_open(b);
    KT_UPSERT(b, "1|b|b|2024-02-01|99.99|1.5|2024-01-01 10:00:00.000001",
              "1|ab|ab|2024-01-31|-1.00|NaN|2024-01-01 10:00:00",
              "1|bb|NULL|NULL|NULL|Infinity|NULL", "1|NULL|c|2023-12-31|79.99|-1|NULL");
    kt_expect_state(b, "1|bb|ab|2024-02-01|-1.00|NaN|2024-01-01 10:00:00.000000");
    kt_bucket_free(b);
}

static void test_value_functions(void **state)
{
    (void)state;
    kt_bucket *b = agg_bucket(
        "kv-values", 5,
        (const char *[]){ "id INT NOT NULL", "lv STRING", "lvn STRING", "fv STRING", "fvn STRING" },
        (const fr_agg_fn[]){ 0, FR_AGG_LAST_VALUE, FR_AGG_LAST_VALUE_IGNORE_NULLS,
                             FR_AGG_FIRST_VALUE, FR_AGG_FIRST_VALUE_IGNORE_NULLS });
    kt_open(b);
    KT_UPSERT(b, "1|a|a|NULL|NULL", "1|NULL|NULL|b|b", "1|c|c|c|c");
    /* last_value takes NULL; last_value_ignore_nulls does not; first_value keeps a NULL
     * that came first; first_value_ignore_nulls waits for a value */
    kt_expect_state(b, "1|c|c|NULL|b");
    KT_UPSERT(b, "1|NULL|NULL|d|d");
    kt_expect_state(b, "1|NULL|c|NULL|b");
    kt_bucket_free(b);
}

static void test_listagg(void **state)
{
    (void)state;
    kt_bucket *b = agg_bucket(
        "kv-listagg", 5,
        (const char *[]){ "id INT NOT NULL", "a STRING", "b STRING", "c STRING", "v VARCHAR(5)" },
        (const fr_agg_fn[]){ 0, FR_AGG_LISTAGG, FR_AGG_LISTAGG, FR_AGG_LISTAGG, FR_AGG_LISTAGG });
    b->delims[2] = ";";
    b->delims[3] = " -- ";
    kt_open(b);
    KT_UPSERT(b, "1|developer|developer|x|ab", "1|java|java|NULL|NULL", "1|flink|flink||cd");
    kt_expect_state(b, "1|developer,java,flink|developer;java;flink|x -- |ab,cd");
    /* past VARCHAR(5): the write fails as a whole */
    fr_error err;
    fr_kv_write_result r;
    int64_t end = fr_log_end_offset(b->log);
    int rc = kt_write_ex(b, 2, KT_ROWS("2|a|a|a|a", "1|x|x|x|e"), NULL, NULL, 0, FR_NO_WRITER,
                         -1, &r, &err);
    assert_int_equal(rc, FR_ERANGE);
    assert_non_null(strstr(err.msg, "row 1"));
    assert_non_null(strstr(err.msg, "longer than VARCHAR(5)"));
    assert_int_equal(fr_log_end_offset(b->log), end);
    kt_expect_state(b, "1|developer,java,flink|developer;java;flink|x -- |ab,cd");
    kt_bucket_free(b);
}

static void test_bool(void **state)
{
    (void)state;
    kt_bucket *b = agg_bucket("kv-bool", 3,
                              (const char *[]){ "id INT NOT NULL", "a BOOLEAN", "o BOOLEAN" },
                              (const fr_agg_fn[]){ 0, FR_AGG_BOOL_AND, FR_AGG_BOOL_OR });
    kt_open(b);
    KT_UPSERT(b, "1|true|false", "1|NULL|NULL", "1|true|false", "2|NULL|NULL", "2|false|true",
              "2|true|false");
    kt_expect_state(b, "1|true|false", "2|false|true");
    KT_UPSERT(b, "1|false|true");
    kt_expect_state(b, "1|false|true", "2|false|true");
    kt_bucket_free(b);
}

/* ---- bitmaps ------------------------------------------------------------------------------ */

/* id INT, b32 BYTES rbm32, b64 BYTES rbm64 */
static kt_bucket *rbm_bucket(const char *name)
{
    return agg_bucket(name, 3, (const char *[]){ "id INT NOT NULL", "b32 BYTES", "b64 BYTES" },
                      (const fr_agg_fn[]){ 0, FR_AGG_RBM32, FR_AGG_RBM64 });
}

static int rbm_write(kt_bucket *b, int id, const void *p32, size_t n32, const void *p64,
                     size_t n64, fr_error *err)
{
    fr_builder *bld;
    assert_int_equal(fr_builder_new(b->schema, &bld, err), 0);
    fr_value v[3] = { fr_value_int(fr_type_of(FR_T_INT), id),
                      p32 ? fr_value_str(fr_type_of(FR_T_BYTES), p32, n32)
                          : fr_value_null(fr_type_of(FR_T_BYTES)),
                      p64 ? fr_value_str(fr_type_of(FR_T_BYTES), p64, n64)
                          : fr_value_null(fr_type_of(FR_T_BYTES)) };
    for (int c = 0; c < 3; c++) assert_int_equal(fr_builder_append(bld, c, &v[c], err), 0);
    fr_batch *batch;
    assert_int_equal(fr_builder_finish(bld, &batch, err), 0);
    fr_builder_free(bld);
    int rc = fr_kv_write(b->kv, batch, NULL, NULL, 0, FR_NO_WRITER, -1, NULL, err);
    fr_batch_free(batch);
    return rc;
}

/* The stored cell of column col of key id (copied into *out, malloc'd); false if NULL. */
static bool rbm_read(kt_bucket *b, int id, int col, uint8_t **out, size_t *n)
{
    fr_schema *ks = kt_schema(1, (const char *[]){ "id INT" });
    char text[16];
    snprintf(text, sizeof text, "%d", id);
    fr_batch *keys = kt_batch(ks, 1, KT_ROWS(text));
    bool found;
    fr_batch *rows;
    fr_error err;
    assert_int_equal(fr_kv_lookup(b->kv, keys, &found, &rows, &err), 0);
    assert_true(found);
    fr_value v;
    fr_column_get(fr_batch_column(rows, col), 0, &v);
    bool present = !v.is_null;
    if (present) {
        *out = malloc(v.v.s.len + 1);
        memcpy(*out, v.v.s.ptr, v.v.s.len);
        *n = v.v.s.len;
    }
    fr_batch_free(rows);
    fr_batch_free(keys);
    fr_schema_free(ks);
    return present;
}

static uint8_t *rbm32_bytes(const roaring_bitmap_t *r, size_t *n)
{
    *n = roaring_bitmap_portable_size_in_bytes(r);
    uint8_t *p = malloc(*n);
    assert_int_equal(roaring_bitmap_portable_serialize(r, (char *)p), *n);
    return p;
}

static uint8_t *rbm32_of(size_t *n, int count, const uint32_t *vals)
{
    roaring_bitmap_t *r = roaring_bitmap_of_ptr((size_t)count, vals);
    uint8_t *p = rbm32_bytes(r, n);
    roaring_bitmap_free(r);
    return p;
}

/* The portable 64-bit form of sorted values. */
static uint8_t *rbm64_of(size_t *n, int count, const uint64_t *vals)
{
    fr_buf out;
    fr_buf_init(&out);
    fr_error err;
    fr_buf_append_zeros(&out, 8, &err);
    uint64_t buckets = 0;
    for (int i = 0; i < count;) {
        uint32_t high = (uint32_t)(vals[i] >> 32);
        roaring_bitmap_t *r = roaring_bitmap_create();
        for (; i < count && (uint32_t)(vals[i] >> 32) == high; i++)
            roaring_bitmap_add(r, (uint32_t)vals[i]);
        uint8_t h[4];
        fr_put_u32le(h, high);
        fr_buf_append(&out, h, 4, &err);
        size_t len;
        uint8_t *p = rbm32_bytes(r, &len);
        fr_buf_append(&out, p, len, &err);
        free(p);
        roaring_bitmap_free(r);
        buckets++;
    }
    fr_put_u64le(out.data, buckets);
    *n = out.len;
    uint8_t *p = malloc(out.len);
    memcpy(p, out.data, out.len);
    fr_buf_free(&out);
    return p;
}

/* Decodes a portable 64-bit bitmap (known good) into its sorted values. */
static int rbm64_values(const uint8_t *p, size_t n, uint64_t *vals, int cap)
{
    uint64_t count = fr_get_u64le(p);
    size_t pos = 8;
    int k = 0;
    for (uint64_t i = 0; i < count; i++) {
        uint64_t high = fr_get_u32le(p + pos);
        pos += 4;
        roaring_bitmap_t *r = roaring_bitmap_portable_deserialize_safe((const char *)p + pos,
                                                                        n - pos);
        assert_non_null(r);
        pos += roaring_bitmap_portable_size_in_bytes(r);
        roaring_uint32_iterator_t *it = roaring_create_iterator(r);
        for (; it->has_value; roaring_advance_uint32_iterator(it)) {
            assert_true(k < cap);
            vals[k++] = high << 32 | it->current_value;
        }
        roaring_free_uint32_iterator(it);
        roaring_bitmap_free(r);
    }
    assert_int_equal(pos, n);
    return k;
}

static void test_rbm32_union(void **state)
{
    (void)state;
    kt_bucket *b = rbm_bucket("kv-rbm32");
    kt_open(b);
    fr_error err;
    size_t n1, n2;
    uint8_t *a = rbm32_of(&n1, 2, (const uint32_t[]){ 1, 3 });
    uint8_t *c = rbm32_of(&n2, 2, (const uint32_t[]){ 3, 5 });
    assert_int_equal(rbm_write(b, 1, a, n1, NULL, 0, &err), 0);
    assert_int_equal(rbm_write(b, 1, NULL, 0, NULL, 0, &err), 0); /* NULL is ignored */
    assert_int_equal(rbm_write(b, 1, c, n2, NULL, 0, &err), 0);
    uint8_t *got;
    size_t n;
    assert_true(rbm_read(b, 1, 1, &got, &n));
    /* {1, 3, 5} byte for byte as Java's RoaringBitmap.serialize writes it: cookie 12346, one
     * container (key 0, cardinality 3), its offset 16, the values */
    static const uint8_t want[] = { 0x3a, 0x30, 0, 0, 1, 0, 0, 0, 0, 0, 2, 0,
                                    16, 0, 0, 0, 1, 0, 3, 0, 5, 0 };
    assert_int_equal(n, sizeof want);
    assert_memory_equal(got, want, sizeof want);
    free(got);
    free(a);
    free(c);

    /* a run container and a bitset container: union checked by CRoaring */
    roaring_bitmap_t *r1 = roaring_bitmap_from_range(0, 100000, 1);
    roaring_bitmap_run_optimize(r1);
    roaring_bitmap_t *r2 = roaring_bitmap_create();
    for (uint32_t v = 65536 * 3; v < 65536 * 3 + 20000; v += 3) roaring_bitmap_add(r2, v);
    roaring_bitmap_add(r2, 7);
    a = rbm32_bytes(r1, &n1);
    c = rbm32_bytes(r2, &n2);
    assert_int_equal(rbm_write(b, 2, c, n2, NULL, 0, &err), 0);
    assert_int_equal(rbm_write(b, 2, a, n1, NULL, 0, &err), 0);
    assert_true(rbm_read(b, 2, 1, &got, &n));
    roaring_bitmap_t *u = roaring_bitmap_portable_deserialize_safe((const char *)got, n);
    assert_non_null(u);
    roaring_bitmap_or_inplace(r1, r2);
    assert_true(roaring_bitmap_equals(u, r1));
    assert_int_equal(roaring_bitmap_get_cardinality(u), 100000 + 6667);
    roaring_bitmap_free(u);
    roaring_bitmap_free(r1);
    roaring_bitmap_free(r2);
    free(got);
    free(a);
    free(c);
    kt_bucket_free(b);
}

static void test_rbm64_union(void **state)
{
    (void)state;
    kt_bucket *b = rbm_bucket("kv-rbm64");
    kt_open(b);
    fr_error err;
    size_t n1, n2;
    uint64_t hi1 = (uint64_t)1 << 32, hi3 = (uint64_t)3 << 32;
    uint8_t *a = rbm64_of(&n1, 4, (const uint64_t[]){ 10, 20, hi1 | 5, hi3 | 9 });
    uint8_t *c = rbm64_of(&n2, 4, (const uint64_t[]){ 20, 30, hi1 | 6, UINT64_MAX });
    assert_int_equal(rbm_write(b, 1, NULL, 0, a, n1, &err), 0);
    assert_int_equal(rbm_write(b, 1, NULL, 0, c, n2, &err), 0);
    uint8_t *got;
    size_t n;
    assert_true(rbm_read(b, 1, 2, &got, &n));
    uint64_t vals[16];
    int k = rbm64_values(got, n, vals, 16);
    uint64_t want[] = { 10, 20, 30, hi1 | 5, hi1 | 6, hi3 | 9, UINT64_MAX };
    assert_int_equal(k, 7);
    assert_memory_equal(vals, want, sizeof want);
    free(got);
    free(a);
    free(c);

    /* {10, 20} | {20, 30} is exactly the portable form of {10, 20, 30} */
    a = rbm64_of(&n1, 2, (const uint64_t[]){ 10, 20 });
    c = rbm64_of(&n2, 2, (const uint64_t[]){ 20, 30 });
    assert_int_equal(rbm_write(b, 2, NULL, 0, a, n1, &err), 0);
    assert_int_equal(rbm_write(b, 2, NULL, 0, c, n2, &err), 0);
    free(a);
    free(c);
    a = rbm64_of(&n1, 3, (const uint64_t[]){ 10, 20, 30 });
    assert_true(rbm_read(b, 2, 2, &got, &n));
    assert_int_equal(n, n1);
    assert_memory_equal(got, a, n);
    free(a);
    free(got);
    /* the empty bitmap */
    static const uint8_t empty[8] = { 0 };
    assert_int_equal(rbm_write(b, 2, NULL, 0, empty, 8, &err), 0);
    kt_bucket_free(b);
}

/* Expects a write of the bitmap (in column col) to key id to fail as malformed. */
static void expect_malformed(kt_bucket *b, int id, int col, const uint8_t *p, size_t n,
                             const char *why)
{
    fr_error err;
    int64_t end = fr_log_end_offset(b->log);
    int rc = col == 1 ? rbm_write(b, id, p, n, NULL, 0, &err)
                      : rbm_write(b, id, NULL, 0, p, n, &err);
    if (rc != FR_EINVAL) fail_msg("%s: expected FR_EINVAL, got %d (%s)", why, rc, err.msg);
    const char *name = col == 1 ? "column b32 (rbm32)" : "column b64 (rbm64)";
    if (!strstr(err.msg, name)) fail_msg("%s: message does not name the column: %s", why, err.msg);
    assert_int_equal(fr_log_end_offset(b->log), end);
}

static void test_rbm_malformed(void **state)
{
    (void)state;
    kt_bucket *b = rbm_bucket("kv-rbmbad");
    kt_open(b);
    size_t n;
    uint8_t *good = rbm32_of(&n, 3, (const uint32_t[]){ 1, 2, 3 });
    fr_error err;
    assert_int_equal(rbm_write(b, 1, good, n, NULL, 0, &err), 0);
    for (int id = 1; id <= 2; id++) { /* an existing key and a new one */
        expect_malformed(b, id, 1, (const uint8_t *)"\x01\x02", 2, "garbage");
        expect_malformed(b, id, 1, good, n - 1, "truncated");
        expect_malformed(b, id, 1, good, 0, "empty");
        uint8_t bad[32];
        memcpy(bad, good, n);
        bad[n] = 0;
        expect_malformed(b, id, 1, bad, n + 1, "trailing byte");
        memcpy(bad, good, n);
        fr_put_u16le(bad + 16, 3); /* values 3, 2, 3 */
        expect_malformed(b, id, 1, bad, n, "unsorted array");
        memcpy(bad, good, n);
        fr_put_u32le(bad + 12, 15); /* a wrong container offset */
        expect_malformed(b, id, 1, bad, n, "offset");
        memcpy(bad, good, n);
        fr_put_u32le(bad + 4, 70000); /* too many containers */
        expect_malformed(b, id, 1, bad, n, "container count");
        /* a run container whose runs overlap: cookie with runs, 1 container */
        static const uint8_t runs[] = { 0x3b, 0x30, 0, 0, 1, 0, 0, 9, 0, 2, 0,
                                        0, 0, 4, 0, 3, 0, 4, 0 };
        expect_malformed(b, id, 1, runs, sizeof runs, "overlapping runs");
        /* a 64-bit bitmap: count too large, keys descending, a bad inner bitmap */
        uint8_t b64[64];
        memset(b64, 0, sizeof b64);
        fr_put_u64le(b64, 1000);
        expect_malformed(b, id, 2, b64, sizeof b64, "bucket count");
        size_t n64;
        uint8_t *two = rbm64_of(&n64, 2, (const uint64_t[]){ 1, (uint64_t)5 << 32 });
        assert_true(n64 <= sizeof b64);
        memcpy(b64, two, n64);
        fr_put_u32le(b64 + 8 + 4 + 18, 0); /* the second bucket's high bits: 5 -> 0 */
        expect_malformed(b, id, 2, b64, n64, "descending buckets");
        memcpy(b64, two, n64);
        b64[12] = 0x99; /* the first bucket's cookie */
        expect_malformed(b, id, 2, b64, n64, "bad inner bitmap");
        expect_malformed(b, id, 2, two, n64 - 2, "truncated 64");
        free(two);
    }
    /* a bitset container whose bits disagree with its cardinality */
    roaring_bitmap_t *r = roaring_bitmap_create();
    for (uint32_t v = 0; v < 10000; v += 2) roaring_bitmap_add(r, v);
    size_t nb;
    uint8_t *bits = rbm32_bytes(r, &nb);
    roaring_bitmap_free(r);
    bits[nb - 1] ^= 0x80;
    expect_malformed(b, 1, 1, bits, nb, "bitset cardinality");
    free(bits);
    free(good);
    assert_int_equal(fr_kv_num_keys(b->kv), 1);
    kt_bucket_free(b);
}

/* ---- partial aggregation ------------------------------------------------------------------- */

static void test_partial_aggregation(void **state)
{
    (void)state;
    kt_bucket *b = agg_bucket(
        "kv-aggpart", 5,
        (const char *[]){ "id INT NOT NULL", "count1 BIGINT", "sum1 BIGINT", "count2 BIGINT",
                          "sum2 BIGINT" },
        (const fr_agg_fn[]){ 0, FR_AGG_SUM, FR_AGG_SUM, FR_AGG_SUM, FR_AGG_SUM });
    b->spec.delete_behavior = FR_DELETE_ALLOW;
    kt_open(b);
    int t1[] = { 0, 1, 2 }, t2[] = { 0, 3, 4 };
    fr_error err;
    fr_kv_write_result r;
    assert_int_equal(kt_write_ex(b, 2, KT_ROWS("1|1|10|7|7", "1|1|5|7|7"), NULL, t1, 3,
                                 FR_NO_WRITER, -1, &r, &err), 0);
    kt_expect_changes(b, 0, "+I 1|1|10|NULL|NULL", "-U 1|1|10|NULL|NULL", "+U 1|2|15|NULL|NULL");
    assert_int_equal(kt_write_ex(b, 1, KT_ROWS("1|9|9|1|100"), NULL, t2, 3, FR_NO_WRITER, -1,
                                 &r, &err), 0);
    kt_expect_state(b, "1|2|15|1|100");
    /* a partial delete clears the targets and keeps the rest... */
    assert_int_equal(kt_write_ex(b, 1, KT_ROWS("1|NULL|NULL|NULL|NULL"), "d", t1, 3,
                                 FR_NO_WRITER, -1, &r, &err), 0);
    kt_expect_state(b, "1|NULL|NULL|1|100");
    /* ...until nothing outside the targets is left */
    assert_int_equal(kt_write_ex(b, 1, KT_ROWS("1|NULL|NULL|NULL|NULL"), "d", t2, 3,
                                 FR_NO_WRITER, -1, &r, &err), 0);
    kt_expect_changes(b, 5, "-U 1|2|15|1|100", "+U 1|NULL|NULL|1|100", "-D 1|NULL|NULL|1|100");
    kt_expect_empty_state(b);
    kt_bucket_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sum),
        cmocka_unit_test(test_product),
        cmocka_unit_test(test_max_min),
        cmocka_unit_test(test_value_functions),
        cmocka_unit_test(test_listagg),
        cmocka_unit_test(test_bool),
        cmocka_unit_test(test_rbm32_union),
        cmocka_unit_test(test_rbm64_union),
        cmocka_unit_test(test_rbm_malformed),
        cmocka_unit_test(test_partial_aggregation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
