/* test_engine_write.c — the engine's write and read paths: bucketing, idempotent appends,
 * scans from every start kind with projection and filter, retention, dropping a table
 * while a handle is held, concurrent appenders.
 *
 * Randomized parts take their seed from FIRTH_TEST_SEED (default: the clock) and print it. */
#include "engine_testkit.h"

#include <pthread.h>

static unsigned seed_get(void)
{
    static unsigned seed;
    static bool set;
    if (!set) {
        const char *s = getenv("FIRTH_TEST_SEED");
        seed = s ? (unsigned)strtoul(s, NULL, 10) : (unsigned)fr_now_ms();
        printf("# FIRTH_TEST_SEED=%u\n", seed);
        set = true;
    }
    return seed;
}

static int64_t append(fr_table *t, fr_batch *b, int64_t writer, int32_t seq)
{
    int64_t n = -1;
    fr_error err = {0};
    KIT_CHECK(fr_table_append(t, b, writer, seq, &n, &err), err);
    return n;
}

static int64_t count_rows(fr_table *t)
{
    fr_scan_spec spec = kit_spec(FR_START_EARLIEST, 0);
    kit_rows r = kit_scan(t, &spec);
    int64_t n = r.n;
    kit_rows_free(&r);
    return n;
}

/* ---- appends and plain scans ----------------------------------------------------------- */

static void test_append_scan(void **state)
{
    (void)state;
    char *dir = kit_tmpdir("append");
    fr_engine *e = kit_open(dir);
    kit_create_table(e, "default", "t", NULL, 0);
    fr_table *t = kit_table(e, "default", "t");
    fr_batch *b = kit_batch(0, 100);
    assert_int_equal(append(t, b, FR_NO_WRITER, -1), 100);
    fr_batch_free(b);
    b = kit_batch(100, 50);
    assert_int_equal(append(t, b, FR_NO_WRITER, -1), 50);
    fr_batch_free(b);
    b = kit_batch(150, 0);
    assert_int_equal(append(t, b, FR_NO_WRITER, -1), 0);
    fr_batch_free(b);
    fr_scan_spec spec = kit_spec(FR_START_EARLIEST, 0);
    kit_rows r = kit_scan(t, &spec);
    assert_int_equal(r.n, 150);
    assert_int_equal(r.ncolumns, 3);
    for (int64_t i = 0; i < r.n; i++) {
        assert_int_equal(r.first[i], i);
        assert_int_equal(r.offset[i], i);
        assert_int_equal(r.bucket[i], 0);
    }
    kit_rows_free(&r);
    fr_table_release(t);
    fr_engine_close(e);
    /* And after reopening. */
    e = kit_open(dir);
    t = kit_table(e, "default", "t");
    assert_int_equal(count_rows(t), 150);
    fr_table_release(t);
    fr_engine_close(e);
    kit_rmdir(dir);
}

static void test_batch_must_match(void **state)
{
    (void)state;
    char *dir = kit_tmpdir("match");
    fr_engine *e = kit_open(dir);
    kit_create_table(e, "default", "t", NULL, 0);
    fr_table *t = kit_table(e, "default", "t");
    fr_error err = {0};
    /* (id BIGINT, name STRING, score INT): the third column differs. */
    fr_field f[3] = {{.name = "x", .type = fr_type_of(FR_T_BIGINT)},
                     {.name = "y", .type = fr_type_of(FR_T_STRING)},
                     {.name = "z", .type = fr_type_of(FR_T_INT)}};
    fr_schema *s = NULL;
    KIT_CHECK(fr_schema_new(f, 3, 0, &s, &err), err);
    fr_builder *bld = NULL;
    KIT_CHECK(fr_builder_new(s, &bld, &err), err);
    KIT_CHECK(fr_builder_append_i64(bld, 0, 1, &err), err);
    KIT_CHECK(fr_builder_append_bytes(bld, 1, "a", 1, &err), err);
    KIT_CHECK(fr_builder_append_i64(bld, 2, 1, &err), err);
    fr_batch *b = NULL;
    KIT_CHECK(fr_builder_finish(bld, &b, &err), err);
    int64_t n = -1;
    assert_int_equal(fr_table_append(t, b, FR_NO_WRITER, -1, &n, &err), FR_ETYPE);
    assert_non_null(strstr(err.msg, "'score'"));
    assert_int_equal(n, 0);
    fr_batch_free(b);
    fr_builder_free(bld);
    fr_schema_free(s);
    /* Same types but a NULL in the NOT NULL id column. */
    f[2].type = fr_type_of(FR_T_DOUBLE);
    KIT_CHECK(fr_schema_new(f, 3, 0, &s, &err), err);
    KIT_CHECK(fr_builder_new(s, &bld, &err), err);
    KIT_CHECK(fr_builder_append_null(bld, 0, &err), err);
    KIT_CHECK(fr_builder_append_bytes(bld, 1, "a", 1, &err), err);
    KIT_CHECK(fr_builder_append_f64(bld, 2, 1, &err), err);
    KIT_CHECK(fr_builder_finish(bld, &b, &err), err);
    assert_int_equal(fr_table_append(t, b, FR_NO_WRITER, -1, &n, &err), FR_EINVAL);
    assert_non_null(strstr(err.msg, "'id'"));
    fr_batch_free(b);
    fr_builder_free(bld);
    fr_schema_free(s);
    /* Two columns only. */
    f[0].type.nullable = false;
    KIT_CHECK(fr_schema_new(f, 2, 0, &s, &err), err);
    KIT_CHECK(fr_builder_new(s, &bld, &err), err);
    KIT_CHECK(fr_builder_finish(bld, &b, &err), err);
    assert_int_equal(fr_table_append(t, b, FR_NO_WRITER, -1, &n, &err), FR_ETYPE);
    assert_non_null(strstr(err.msg, "3 columns"));
    fr_batch_free(b);
    fr_builder_free(bld);
    fr_schema_free(s);
    assert_int_equal(count_rows(t), 0);
    fr_table_release(t);
    fr_engine_close(e);
    kit_rmdir(dir);
}

/* ---- bucketing ------------------------------------------------------------------------- */

/* The documented canonical bytes of a non-null BIGINT key: 0x01, then 8 bytes LE. */
static int expected_bucket(int64_t id, int nbuckets)
{
    uint8_t k[9];
    k[0] = 1;
    fr_put_u64le(k + 1, (uint64_t)id);
    return (int)(fr_murmur3_32(k, sizeof k, 0) % (uint32_t)nbuckets);
}

static void test_bucketing(void **state)
{
    (void)state;
    char *dir = kit_tmpdir("bucketing");
    fr_engine *e = kit_open(dir);
    fr_option opts[] = {{"bucket.num", "8"}, {"bucket.key", "id"}};
    kit_create_table(e, "default", "t", opts, 2);
    fr_table *t = kit_table(e, "default", "t");
    /* Distribution: ids drawn at random spread about evenly over the buckets. */
    srand(seed_get());
    int64_t first = rand() % 1000000;
    const int64_t n = 8000;
    fr_batch *b = kit_batch(first, n);
    int counts[8] = {0};
    for (int64_t i = 0; i < n; i++) {
        int bucket = fr_table_bucket_of(t, b, i);
        assert_int_equal(bucket, expected_bucket(first + i, 8)); /* the documented hash */
        counts[bucket]++;
    }
    for (int k = 0; k < 8; k++)
        if (counts[k] < 800 || counts[k] > 1200)
            fail_msg("bucket %d got %d of %lld rows (seed %u)", k, counts[k], (long long)n,
                     seed_get());
    assert_int_equal(append(t, b, FR_NO_WRITER, -1), n);
    /* The same key lands in the same bucket in another batch. */
    fr_batch *again = kit_batch(first + 10, 1);
    assert_int_equal(fr_table_bucket_of(t, again, 0), fr_table_bucket_of(t, b, 10));
    fr_batch_free(again);
    fr_batch_free(b);
    /* The scan finds each row in its bucket, buckets in order, offsets dense per bucket. */
    fr_scan_spec spec = kit_spec(FR_START_EARLIEST, 0);
    kit_rows r = kit_scan(t, &spec);
    assert_int_equal(r.n, n);
    int64_t next_offset[8] = {0};
    for (int64_t i = 0; i < r.n; i++) {
        assert_int_equal(r.bucket[i], expected_bucket(r.first[i], 8));
        if (i > 0) assert_true(r.bucket[i] >= r.bucket[i - 1]);
        assert_int_equal(r.offset[i], next_offset[r.bucket[i]]++);
    }
    for (int k = 0; k < 8; k++) assert_int_equal(next_offset[k], counts[k]);
    kit_rows_free(&r);
    /* Known values pin the layout across versions: data on disk depends on them, so they
     * must never change. (MurmurHash3_x86_32 of "hello", seed 0, is 0x248bfa47.) */
    assert_int_equal(fr_murmur3_32("hello", 5, 0), 0x248bfa47u);
    fr_table_release(t);
    fr_option opts1[] = {{"bucket.num", "1024"}, {"bucket.key", "id"}};
    kit_create_table(e, "default", "wide", opts1, 2);
    t = kit_table(e, "default", "wide");
    b = kit_batch(0, 43);
    assert_int_equal(fr_table_bucket_of(t, b, 0), 105);
    assert_int_equal(fr_table_bucket_of(t, b, 1), 328);
    assert_int_equal(fr_table_bucket_of(t, b, 42), 86);
    fr_batch_free(b);
    b = kit_batch(-7, 1);
    assert_int_equal(fr_table_bucket_of(t, b, 0), 410);
    fr_batch_free(b);
    fr_table_release(t);
    fr_engine_close(e);
    kit_rmdir(dir);
}

static void test_bucket_key_kinds(void **state)
{
    (void)state;
    char *dir = kit_tmpdir("keykinds");
    fr_engine *e = kit_open(dir);
    fr_option opts[] = {{"bucket.num", "16"}, {"bucket.key", "name,score"}};
    kit_create_table(e, "default", "t", opts, 2);
    fr_table *t = kit_table(e, "default", "t");
    fr_batch *b = kit_batch(0, 20);
    /* Row 3 has a NULL name: 0x00, then score 1.5 as 0x01 + double LE. */
    uint8_t k[10];
    k[0] = 0;
    k[1] = 1;
    double d = 1.5;
    uint64_t bits;
    memcpy(&bits, &d, 8);
    fr_put_u64le(k + 2, bits);
    assert_int_equal(fr_table_bucket_of(t, b, 3),
                     (int)(fr_murmur3_32(k, 10, 0) % 16u));
    /* Row 5: name "n5" as 0x01, length 2 LE, bytes; then score 2.5. */
    uint8_t k5[16] = {1, 2, 0, 0, 0, 'n', '5', 1};
    d = 2.5;
    memcpy(&bits, &d, 8);
    fr_put_u64le(k5 + 8, bits);
    assert_int_equal(fr_table_bucket_of(t, b, 5), (int)(fr_murmur3_32(k5, 16, 0) % 16u));
    assert_int_equal(append(t, b, FR_NO_WRITER, -1), 20);
    fr_batch_free(b);
    assert_int_equal(count_rows(t), 20);
    fr_table_release(t);
    fr_engine_close(e);
    kit_rmdir(dir);
}

/* Every type through the split-by-bucket path, with the key over several types: each row
 * comes back whole, in the bucket its key hashes to. */
static fr_batch *all_types_batch(int64_t n, unsigned seed)
{
    fr_field f[] = {
        {.name = "id", .type = fr_type_of(FR_T_INT)},
        {.name = "b", .type = fr_type_of(FR_T_BOOLEAN)},
        {.name = "i8", .type = fr_type_of(FR_T_TINYINT)},
        {.name = "i16", .type = fr_type_of(FR_T_SMALLINT)},
        {.name = "f32", .type = fr_type_of(FR_T_FLOAT)},
        {.name = "f64", .type = fr_type_of(FR_T_DOUBLE)},
        {.name = "dec", .type = fr_type_decimal(30, 4)},
        {.name = "vc", .type = fr_type_of(FR_T_VARCHAR)},
        {.name = "raw", .type = fr_type_of(FR_T_BYTES)},
        {.name = "day", .type = fr_type_of(FR_T_DATE)},
        {.name = "ts", .type = fr_type_time_like(FR_T_TIMESTAMP_LTZ, 6)},
    };
    f[0].type.nullable = false;
    f[7].type.length = 40;
    fr_schema *s = NULL;
    fr_error err = {0};
    KIT_CHECK(fr_schema_new(f, 11, 0, &s, &err), err);
    fr_builder *bld = NULL;
    KIT_CHECK(fr_builder_new(s, &bld, &err), err);
    srand(seed);
    for (int64_t r = 0; r < n; r++) {
        KIT_CHECK(fr_builder_append_i64(bld, 0, r, &err), err);
        for (int c = 1; c < 11; c++) {
            if (rand() % 5 == 0) {
                KIT_CHECK(fr_builder_append_null(bld, c, &err), err);
                continue;
            }
            int64_t v = rand() % 2000 - 1000;
            char text[32];
            int len = snprintf(text, sizeof text, "v%lld", (long long)(v * v));
            switch (c) {
            case 1: KIT_CHECK(fr_builder_append_bool(bld, c, v & 1, &err), err); break;
            case 2: KIT_CHECK(fr_builder_append_i64(bld, c, v % 100, &err), err); break;
            case 4: case 5: KIT_CHECK(fr_builder_append_f64(bld, c, (double)v / 8, &err), err); break;
            case 6: KIT_CHECK(fr_builder_append_i128(bld, c, (fr_i128)v * 1000000007, &err), err); break;
            case 7: case 8: KIT_CHECK(fr_builder_append_bytes(bld, c, text, (size_t)(v & 1 ? len : 0), &err), err); break;
            case 10: KIT_CHECK(fr_builder_append_i64(bld, c, v * 86400000000LL, &err), err); break;
            default: KIT_CHECK(fr_builder_append_i64(bld, c, v, &err), err); break;
            }
        }
    }
    fr_batch *b = NULL;
    KIT_CHECK(fr_builder_finish(bld, &b, &err), err);
    fr_builder_free(bld);
    fr_schema_free(s);
    return b;
}

static bool cell_equal(const fr_column *a, int64_t ra, const fr_column *b, int64_t rb)
{
    fr_value x, y;
    fr_column_get(a, ra, &x);
    fr_column_get(b, rb, &y);
    if (x.is_null || y.is_null) return x.is_null == y.is_null;
    switch (a->type.id) {
    case FR_T_BOOLEAN: return x.v.b == y.v.b;
    case FR_T_FLOAT: case FR_T_DOUBLE: return memcmp(&x.v.f, &y.v.f, sizeof x.v.f) == 0;
    case FR_T_DECIMAL: return x.v.d == y.v.d;
    case FR_T_VARCHAR: case FR_T_BYTES:
        return x.v.s.len == y.v.s.len && (x.v.s.len == 0 || memcmp(x.v.s.ptr, y.v.s.ptr, x.v.s.len) == 0);
    default: return x.v.i == y.v.i;
    }
}

typedef struct typed_rows {
    const fr_batch *orig;
    const fr_table *t;
    int64_t seen;
} typed_rows;

static int check_typed(void *ctx, int bucket, fr_batch *batch, const int64_t *offsets,
                       const uint8_t *ct, int64_t ts, fr_error *err)
{
    typed_rows *tr = ctx;
    for (int64_t r = 0; r < fr_batch_num_rows(batch); r++) {
        fr_value id;
        fr_column_get(fr_batch_column(batch, 0), r, &id);
        assert_int_equal(fr_table_bucket_of(tr->t, tr->orig, id.v.i), bucket);
        for (int c = 0; c < fr_batch_num_columns(batch); c++)
            if (!cell_equal(fr_batch_column(tr->orig, c), id.v.i, fr_batch_column(batch, c), r))
                fail_msg("row %lld, column %d differs after the split", (long long)id.v.i, c);
        tr->seen++;
    }
    fr_batch_free(batch);
    return 0;
}

static void test_split_all_types(void **state)
{
    (void)state;
    char *dir = kit_tmpdir("alltypes");
    fr_engine *e = kit_open(dir);
    fr_batch *b = all_types_batch(3000, seed_get());
    fr_option opts[] = {{"bucket.num", "7"}, {"bucket.key", "b,i8,f32,dec,vc,raw,ts"}};
    fr_table_spec spec = {.db = "default", .name = "t", .schema = fr_batch_schema(b),
                          .options = opts, .noptions = 2};
    fr_error err = {0};
    KIT_CHECK(fr_engine_create_table(e, &spec, false, &err), err);
    fr_table *t = kit_table(e, "default", "t");
    int used[7] = {0};
    for (int64_t r = 0; r < 3000; r++) used[fr_table_bucket_of(t, b, r)]++;
    for (int k = 0; k < 7; k++) assert_true(used[k] > 0);
    assert_int_equal(append(t, b, FR_NO_WRITER, -1), 3000);
    typed_rows tr = {.orig = b, .t = t};
    fr_scan_spec scan = kit_spec(FR_START_EARLIEST, 0);
    KIT_CHECK(fr_table_scan(t, &scan, check_typed, &tr, &err), err);
    assert_int_equal(tr.seen, 3000);
    fr_batch_free(b);
    fr_table_release(t);
    fr_engine_close(e);
    kit_rmdir(dir);
}

static void test_round_robin(void **state)
{
    (void)state;
    char *dir = kit_tmpdir("rr");
    fr_engine *e = kit_open(dir);
    fr_option opts[] = {{"bucket.num", "4"}};
    kit_create_table(e, "default", "t", opts, 1);
    fr_table *t = kit_table(e, "default", "t");
    fr_batch *b = kit_batch(0, 10);
    assert_int_equal(fr_table_bucket_of(t, b, 0), -1);
    for (int i = 0; i < 8; i++) assert_int_equal(append(t, b, FR_NO_WRITER, -1), 10);
    fr_batch_free(b);
    fr_scan_spec spec = kit_spec(FR_START_EARLIEST, 0);
    kit_rows r = kit_scan(t, &spec);
    int per[4] = {0};
    for (int64_t i = 0; i < r.n; i++) per[r.bucket[i]]++;
    for (int k = 0; k < 4; k++) assert_int_equal(per[k], 20); /* 2 calls of 10 rows each */
    kit_rows_free(&r);
    fr_table_release(t);
    fr_engine_close(e);
    kit_rmdir(dir);
}

/* ---- idempotence ----------------------------------------------------------------------- */

static void idempotent_on(const char *dir, const fr_option *opts, int nopts)
{
    fr_engine *e = kit_open(dir);
    kit_create_table(e, "default", "t", opts, nopts);
    fr_table *t = kit_table(e, "default", "t");
    fr_batch *b0 = kit_batch(0, 40), *b1 = kit_batch(40, 40), *b2 = kit_batch(80, 40);
    assert_int_equal(append(t, b0, 7, 0), 40);
    assert_int_equal(append(t, b0, 7, 0), 0); /* a retry */
    assert_int_equal(append(t, b1, 7, 1), 40);
    assert_int_equal(append(t, b1, 7, 1), 0);
    assert_int_equal(append(t, b0, 7, 0), 0); /* an older one */
    assert_int_equal(append(t, b1, 8, 0), 40); /* another writer has its own sequence */
    assert_int_equal(count_rows(t), 120);
    fr_table_release(t);
    fr_engine_close(e);
    /* The writers' state survives a reopen. */
    e = kit_open(dir);
    t = kit_table(e, "default", "t");
    assert_int_equal(append(t, b1, 7, 1), 0);
    assert_int_equal(append(t, b1, 8, 0), 0);
    assert_int_equal(append(t, b2, 7, 2), 40);
    assert_int_equal(append(t, b2, 7, 2), 0);
    assert_int_equal(count_rows(t), 160);
    fr_batch_free(b0);
    fr_batch_free(b1);
    fr_batch_free(b2);
    fr_table_release(t);
    fr_error err = {0};
    KIT_CHECK(fr_engine_drop_table(e, "default", "t", false, &err), err);
    fr_engine_close(e);
}

static void test_idempotent(void **state)
{
    (void)state;
    char *dir = kit_tmpdir("idem");
    idempotent_on(dir, NULL, 0);
    fr_option rr[] = {{"bucket.num", "5"}};
    idempotent_on(dir, rr, 1);
    fr_option keyed[] = {{"bucket.num", "3"}, {"bucket.key", "id"}};
    idempotent_on(dir, keyed, 2);
    /* A writer id needs a sequence. */
    fr_engine *e = kit_open(dir);
    kit_create_table(e, "default", "t", NULL, 0);
    fr_table *t = kit_table(e, "default", "t");
    fr_batch *b = kit_batch(0, 1);
    fr_error err = {0};
    assert_int_equal(fr_table_append(t, b, 3, -1, NULL, &err), FR_EINVAL);
    fr_batch_free(b);
    fr_table_release(t);
    fr_engine_close(e);
    kit_rmdir(dir);
}

/* ---- scans ----------------------------------------------------------------------------- */

/* Four batches of 25 rows in a two-bucket table keyed by id. */
static fr_table *scan_fixture(fr_engine *e)
{
    fr_option opts[] = {{"bucket.num", "2"}, {"bucket.key", "id"}};
    kit_create_table(e, "default", "t", opts, 2);
    fr_table *t = kit_table(e, "default", "t");
    for (int i = 0; i < 4; i++) {
        fr_batch *b = kit_batch(i * 25, 25);
        assert_int_equal(append(t, b, FR_NO_WRITER, -1), 25);
        fr_batch_free(b);
    }
    return t;
}

static void test_scan_starts(void **state)
{
    (void)state;
    char *dir = kit_tmpdir("starts");
    fr_engine *e = kit_open(dir);
    fr_table *t = scan_fixture(e);
    int64_t end[2] = {fr_log_end_offset(fr_table_log(t, 0)), fr_log_end_offset(fr_table_log(t, 1))};
    assert_int_equal(end[0] + end[1], 100);

    fr_scan_spec spec = kit_spec(FR_START_LATEST, 0);
    kit_rows r = kit_scan(t, &spec);
    assert_int_equal(r.n, 0);
    kit_rows_free(&r);

    /* An offset applies to every bucket; past the end it reads nothing; below the start
     * it reads from the start. */
    spec = kit_spec(FR_START_OFFSET, 10);
    r = kit_scan(t, &spec);
    assert_int_equal(r.n, end[0] - 10 + end[1] - 10);
    for (int64_t i = 0; i < r.n; i++) assert_true(r.offset[i] >= 10);
    kit_rows_free(&r);
    spec = kit_spec(FR_START_OFFSET, 1000);
    r = kit_scan(t, &spec);
    assert_int_equal(r.n, 0);
    kit_rows_free(&r);
    spec = kit_spec(FR_START_OFFSET, -5);
    r = kit_scan(t, &spec);
    assert_int_equal(r.n, 100);
    kit_rows_free(&r);

    /* One bucket only. */
    spec = kit_spec(FR_START_EARLIEST, 0);
    spec.bucket = 1;
    r = kit_scan(t, &spec);
    assert_int_equal(r.n, end[1]);
    for (int64_t i = 0; i < r.n; i++) assert_int_equal(r.bucket[i], 1);
    kit_rows_free(&r);
    spec.bucket = 2;
    fr_error err = {0};
    assert_int_equal(fr_table_scan(t, &spec, kit_collect, &r, &err), FR_ERANGE);

    /* Timestamps: from the commit time of the rows seen at offset k of bucket 0, the scan
     * starts at the first batch committed at or after it. */
    spec = kit_spec(FR_START_EARLIEST, 0);
    spec.bucket = 0;
    kit_rows all = kit_scan(t, &spec);
    for (int64_t k = 0; k < all.n; k += 7) {
        spec = kit_spec(FR_START_TIMESTAMP, all.ts[k]);
        spec.bucket = 0;
        r = kit_scan(t, &spec);
        int64_t firstat = 0;
        while (all.ts[firstat] < all.ts[k]) firstat++;
        assert_int_equal(r.n, all.n - firstat);
        assert_int_equal(r.offset[0], all.offset[firstat]);
        kit_rows_free(&r);
    }
    /* After the last commit of any bucket (bucket 1's may come after bucket 0's). */
    spec = kit_spec(FR_START_EARLIEST, 0);
    r = kit_scan(t, &spec);
    int64_t last_ts = 0;
    for (int64_t i = 0; i < r.n; i++)
        if (r.ts[i] > last_ts) last_ts = r.ts[i];
    kit_rows_free(&r);
    spec = kit_spec(FR_START_TIMESTAMP, last_ts + 1);
    r = kit_scan(t, &spec);
    assert_int_equal(r.n, 0);
    kit_rows_free(&r);
    spec = kit_spec(FR_START_TIMESTAMP, 0);
    r = kit_scan(t, &spec);
    assert_int_equal(r.n, 100);
    kit_rows_free(&r);
    kit_rows_free(&all);

    /* max_records counts over all buckets; a callee returning non-zero stops the scan. */
    spec = kit_spec(FR_START_EARLIEST, 0);
    spec.max_records = 7;
    r = kit_scan(t, &spec);
    assert_int_equal(r.n, 7);
    kit_rows_free(&r);
    spec.max_records = end[0] + 3;
    r = kit_scan(t, &spec);
    assert_int_equal(r.n, end[0] + 3);
    assert_int_equal(r.bucket[r.n - 1], 1);
    kit_rows_free(&r);
    spec.max_records = 0;
    r = kit_scan(t, &spec);
    assert_int_equal(r.n, 0);
    kit_rows_free(&r);
    spec.max_records = -1;
    r = (kit_rows){.stop_after = 1};
    KIT_CHECK(fr_table_scan(t, &spec, kit_collect, &r, &err), err);
    assert_int_equal(r.batches, 1);
    kit_rows_free(&r);
    fr_table_release(t);
    fr_engine_close(e);
    kit_rmdir(dir);
}

/* Appends while the scan runs: the scan still ends where the table ended when it began. */
typedef struct grow_ctx {
    fr_table *t;
    kit_rows rows;
    int appended;
} grow_ctx;

static int grow_collect(void *ctx, int bucket, fr_batch *batch, const int64_t *offsets,
                        const uint8_t *ct, int64_t ts, fr_error *err)
{
    grow_ctx *g = ctx;
    if (g->appended < 5) {
        fr_batch *more = kit_batch(1000 + g->appended * 10, 10);
        int rc = fr_table_append(g->t, more, FR_NO_WRITER, -1, NULL, err);
        fr_batch_free(more);
        if (rc < 0) return rc;
        g->appended++;
    }
    return kit_collect(&g->rows, bucket, batch, offsets, ct, ts, err);
}

static void test_scan_ends_at_start_end(void **state)
{
    (void)state;
    char *dir = kit_tmpdir("growing");
    fr_engine *e = kit_open(dir);
    fr_table *t = scan_fixture(e);
    grow_ctx g = {.t = t};
    fr_scan_spec spec = kit_spec(FR_START_EARLIEST, 0);
    fr_error err = {0};
    KIT_CHECK(fr_table_scan(t, &spec, grow_collect, &g, &err), err);
    assert_int_equal(g.rows.n, 100);
    for (int64_t i = 0; i < g.rows.n; i++) assert_true(g.rows.first[i] < 1000);
    assert_true(g.appended > 0);
    kit_rows_free(&g.rows);
    assert_int_equal(count_rows(t), 100 + g.appended * 10);
    fr_table_release(t);
    fr_engine_close(e);
    kit_rmdir(dir);
}

static void test_projection_filter(void **state)
{
    (void)state;
    char *dir = kit_tmpdir("projfilter");
    fr_engine *e = kit_open(dir);
    fr_table *t = scan_fixture(e);
    fr_error err = {0};
    /* score, id: the first column delivered is score, a DOUBLE: check through the batch. */
    int cols[] = {2, 0};
    fr_scan_spec spec = kit_spec(FR_START_EARLIEST, 0);
    spec.columns = cols;
    spec.ncolumns = 2;
    kit_rows r = kit_scan(t, &spec);
    assert_int_equal(r.n, 100);
    assert_int_equal(r.ncolumns, 2);
    kit_rows_free(&r);
    int bad[] = {0, 0};
    spec.columns = bad;
    assert_int_equal(fr_table_scan(t, &spec, kit_collect, &r, &err), FR_EINVAL);
    bad[1] = 3;
    assert_int_equal(fr_table_scan(t, &spec, kit_collect, &r, &err), FR_EINVAL);

    /* id >= 60 AND name IS NOT NULL, projected to id. */
    fr_arena *a = fr_arena_new(4096);
    fr_value sixty = fr_value_int(fr_type_of(FR_T_BIGINT), 60);
    fr_expr *ge_args[] = {fr_expr_column(a, "id"), fr_expr_literal(a, &sixty)};
    fr_expr *ge = fr_expr_node(a, FR_EX_BINARY, FR_OP_GE, 2, ge_args);
    fr_expr *nn_args[] = {fr_expr_column(a, "name")};
    fr_expr *nn = fr_expr_node(a, FR_EX_IS_NULL, FR_OP_NONE, 1, nn_args);
    nn->negated = true;
    fr_expr *and_args[] = {ge, nn};
    fr_expr *pred = fr_expr_node(a, FR_EX_BINARY, FR_OP_AND, 2, and_args);
    KIT_CHECK(fr_expr_bind(pred, fr_table_schema(t), &err), err);
    int idcol[] = {0};
    spec = kit_spec(FR_START_EARLIEST, 0);
    spec.columns = idcol;
    spec.ncolumns = 1;
    spec.filter = pred;
    r = kit_scan(t, &spec);
    int64_t want = 0;
    for (int64_t id = 60; id < 100; id++) want += id % 7 != 3;
    assert_int_equal(r.n, want);
    assert_int_equal(r.ncolumns, 1);
    for (int64_t i = 0; i < r.n; i++) {
        assert_true(r.first[i] >= 60);
        assert_true(r.first[i] % 7 != 3);
        assert_int_equal(r.bucket[i], expected_bucket(r.first[i], 2));
    }
    kit_rows_free(&r);
    /* With a limit too. */
    spec.max_records = 5;
    r = kit_scan(t, &spec);
    assert_int_equal(r.n, 5);
    kit_rows_free(&r);
    fr_arena_free(a);
    fr_table_release(t);
    fr_engine_close(e);
    kit_rmdir(dir);
}

/* ---- encoded appends ------------------------------------------------------------------- */

static void test_append_encoded(void **state)
{
    (void)state;
    char *dir = kit_tmpdir("encoded");
    fr_engine *e = kit_open(dir);
    fr_option opts[] = {{"bucket.num", "3"}};
    kit_create_table(e, "default", "t", opts, 1);
    fr_table *t = kit_table(e, "default", "t");
    fr_batch *b = kit_batch(0, 12);
    fr_rb_params p = {.schema_id = 0, .compression = FR_COMPRESSION_NONE,
                      .writer_id = 5, .batch_sequence = 0};
    fr_buf enc;
    fr_buf_init(&enc);
    fr_error err = {0};
    KIT_CHECK(fr_rb_encode(b, &p, &enc, &err), err);
    int64_t base = -1;
    KIT_CHECK(fr_table_append_encoded(t, 2, enc.data, enc.len, &base, &err), err);
    assert_int_equal(base, 0);
    assert_int_equal(fr_table_append_encoded(t, 2, enc.data, enc.len, &base, &err),
                     FR_EDUPLICATE);
    assert_int_equal(fr_table_append_encoded(t, 3, enc.data, enc.len, &base, &err), FR_ERANGE);
    /* A batch naming a schema the table does not have. */
    fr_buf other;
    fr_buf_init(&other);
    p.schema_id = 4;
    p.writer_id = FR_NO_WRITER;
    p.batch_sequence = -1;
    KIT_CHECK(fr_rb_encode(b, &p, &other, &err), err);
    assert_int_equal(fr_table_append_encoded(t, 0, other.data, other.len, &base, &err),
                     FR_EINVAL);
    assert_non_null(strstr(err.msg, "schema 4"));
    /* Damaged bytes. */
    enc.data[enc.len - 1] ^= 0x5a;
    assert_true(fr_table_append_encoded(t, 1, enc.data, enc.len, &base, &err) < 0);
    fr_scan_spec spec = kit_spec(FR_START_EARLIEST, 0);
    kit_rows r = kit_scan(t, &spec);
    assert_int_equal(r.n, 12);
    for (int64_t i = 0; i < r.n; i++) assert_int_equal(r.bucket[i], 2);
    kit_rows_free(&r);
    fr_buf_free(&enc);
    fr_buf_free(&other);
    fr_batch_free(b);
    fr_table_release(t);
    fr_engine_close(e);
    kit_rmdir(dir);
}

/* ---- retention ------------------------------------------------------------------------- */

static void test_retention(void **state)
{
    (void)state;
    char *dir = kit_tmpdir("retention");
    fr_engine *e = kit_open_with(dir, 512); /* tiny segments: one per batch or so */
    fr_option opts[] = {{"table.log.ttl", "1h"}, {"table.log.arrow.compression.type", "NONE"}};
    kit_create_table(e, "default", "t", opts, 2);
    fr_option keep[] = {{"table.log.ttl", "-1"}};
    kit_create_table(e, "default", "kept", keep, 1);
    fr_table *t = kit_table(e, "default", "t"), *k = kit_table(e, "default", "kept");
    for (int i = 0; i < 6; i++) {
        fr_batch *b = kit_batch(i * 20, 20);
        assert_int_equal(append(t, b, FR_NO_WRITER, -1), 20);
        assert_int_equal(append(k, b, FR_NO_WRITER, -1), 20);
        fr_batch_free(b);
    }
    fr_log *log = fr_table_log(t, 0);
    assert_true(fr_log_num_segments(log) > 1);
    fr_error err = {0};
    int removed = -1;
    /* Now nothing is older than an hour. */
    KIT_CHECK(fr_engine_enforce_retention_at(e, fr_now_ms(), &removed, &err), err);
    assert_int_equal(removed, 0);
    assert_int_equal(count_rows(t), 120);
    /* Two hours later everything but the active segment goes; "kept" keeps all. */
    KIT_CHECK(fr_engine_enforce_retention_at(e, fr_now_ms() + 2 * 3600 * 1000, &removed, &err),
              err);
    assert_true(removed > 0);
    assert_int_equal(fr_log_num_segments(log), 1);
    int64_t start = fr_log_start_offset(log);
    assert_true(start > 0);
    fr_scan_spec spec = kit_spec(FR_START_EARLIEST, 0);
    kit_rows r = kit_scan(t, &spec);
    assert_int_equal(r.n, 120 - start);
    if (r.n > 0) assert_int_equal(r.offset[0], start);
    kit_rows_free(&r);
    assert_int_equal(count_rows(k), 120);
    fr_table_release(t);
    fr_table_release(k);
    fr_engine_close(e);
    kit_rmdir(dir);
}

static void test_retention_thread(void **state)
{
    (void)state;
    char *dir = kit_tmpdir("retthread");
    fr_engine_options o;
    fr_engine_options_default(&o);
    o.data_dir = dir;
    o.flush = FR_FLUSH_NONE;
    o.segment_bytes = 512;
    o.retention_check_interval_ms = 20;
    fr_engine *e = NULL;
    fr_error err = {0};
    KIT_CHECK(fr_engine_open(&o, &e, &err), err);
    fr_option opts[] = {{"table.log.ttl", "1ms"}, {"table.log.arrow.compression.type", "NONE"}};
    kit_create_table(e, "default", "t", opts, 2);
    fr_table *t = kit_table(e, "default", "t");
    for (int i = 0; i < 4; i++) {
        fr_batch *b = kit_batch(i * 20, 20);
        append(t, b, FR_NO_WRITER, -1);
        fr_batch_free(b);
    }
    /* The thread runs every 20 ms; allow it a generous 10 s on a busy machine. */
    fr_log *log = fr_table_log(t, 0);
    for (int i = 0; i < 1000 && fr_log_start_offset(log) == 0; i++) usleep(10000);
    assert_true(fr_log_start_offset(log) > 0);
    fr_table_release(t);
    fr_engine_close(e); /* joins the thread */
    kit_rmdir(dir);
}

/* ---- flush policy and configuration keys ------------------------------------------------ */

static fr_engine *open_flush(const char *dir, fr_flush_mode mode, int64_t interval_ms)
{
    fr_engine_options o;
    fr_engine_options_default(&o);
    o.data_dir = dir;
    o.flush = mode;
    o.flush_interval_ms = interval_ms;
    o.retention_check_interval_ms = 0;
    fr_engine *e = NULL;
    fr_error err = {0};
    KIT_CHECK(fr_engine_open(&o, &e, &err), err);
    return e;
}

/* Under log.flush = interval an idle log's last append is fsync'd by the engine's timer,
 * without a further append; with a long interval nothing is, until close. */
static void test_flush_interval(void **state)
{
    (void)state;
    char *dir = kit_tmpdir("flushint");
    fr_engine *e = open_flush(dir, FR_FLUSH_INTERVAL, 20);
    kit_create_table(e, "default", "t", NULL, 0);
    fr_table *t = kit_table(e, "default", "t");
    fr_batch *b = kit_batch(0, 10);
    append(t, b, FR_NO_WRITER, -1);
    fr_log *log = fr_table_log(t, 0);
    int64_t before = fr_log_fsync_count(log);
    /* The timer runs every 20 ms; allow it a generous 10 s on a busy machine. */
    for (int i = 0; i < 1000 && fr_log_fsync_count(log) == before; i++) usleep(10000);
    assert_true(fr_log_fsync_count(log) > before);
    fr_table_release(t);
    fr_engine_close(e);

    /* The same with an interval of an hour: no fsync on the timer, one at close, even
     * while a handle keeps the log open. */
    e = open_flush(dir, FR_FLUSH_INTERVAL, 3600 * 1000);
    t = kit_table(e, "default", "t");
    append(t, b, FR_NO_WRITER, -1);
    log = fr_table_log(t, 0);
    before = fr_log_fsync_count(log);
    usleep(100 * 1000);
    assert_int_equal(fr_log_fsync_count(log), before);
    fr_engine_close(e);
    assert_true(fr_log_fsync_count(log) > before);
    fr_table_release(t);

    /* log.flush = none: close leaves it to the OS. */
    e = open_flush(dir, FR_FLUSH_NONE, 1000);
    t = kit_table(e, "default", "t");
    append(t, b, FR_NO_WRITER, -1);
    log = fr_table_log(t, 0);
    before = fr_log_fsync_count(log);
    fr_engine_close(e);
    assert_int_equal(fr_log_fsync_count(log), before);
    fr_table_release(t);
    fr_batch_free(b);
    kit_rmdir(dir);
}

static void expect_option_error(const char *key, const char *value, const char *says)
{
    fr_engine_options o, before;
    fr_engine_options_default(&o);
    before = o;
    fr_error err = {0};
    assert_int_equal(fr_engine_options_set(&o, key, value, &err), FR_EINVAL);
    if (!strstr(err.msg, says)) fail_msg("%s = %s: '%s' lacks '%s'", key, value, err.msg, says);
    assert_int_equal(o.flush, before.flush);
    assert_int_equal(o.flush_interval_ms, before.flush_interval_ms);
    assert_int_equal(o.segment_bytes, before.segment_bytes);
    assert_int_equal(o.retention_check_interval_ms, before.retention_check_interval_ms);
    assert_int_equal(o.kv_flush_interval_ms, before.kv_flush_interval_ms);
    assert_int_equal(o.kv_flush_records, before.kv_flush_records);
    assert_int_equal(o.kv_block_cache_bytes, before.kv_block_cache_bytes);
    assert_int_equal(o.kv_write_buffer_bytes, before.kv_write_buffer_bytes);
}

static void test_options_set(void **state)
{
    (void)state;
    fr_engine_options o;
    fr_engine_options_default(&o);
    assert_int_equal(o.flush, FR_FLUSH_EVERY_APPEND);
    fr_error err = {0};
    KIT_CHECK(fr_engine_options_set(&o, "log.flush", "none", &err), err);
    assert_int_equal(o.flush, FR_FLUSH_NONE);
    KIT_CHECK(fr_engine_options_set(&o, "log.flush", "INTERVAL", &err), err);
    assert_int_equal(o.flush, FR_FLUSH_INTERVAL);
    KIT_CHECK(fr_engine_options_set(&o, "log.flush", "append", &err), err);
    assert_int_equal(o.flush, FR_FLUSH_EVERY_APPEND);
    KIT_CHECK(fr_engine_options_set(&o, "log.flush.interval", "250ms", &err), err);
    assert_int_equal(o.flush_interval_ms, 250);
    KIT_CHECK(fr_engine_options_set(&o, "log.flush.interval", "2s", &err), err);
    assert_int_equal(o.flush_interval_ms, 2000);
    KIT_CHECK(fr_engine_options_set(&o, "log.segment.bytes", "64mb", &err), err);
    assert_int_equal(o.segment_bytes, 64LL << 20);
    KIT_CHECK(fr_engine_options_set(&o, "log.retention.check-interval", "1min", &err), err);
    assert_int_equal(o.retention_check_interval_ms, 60000);
    KIT_CHECK(fr_engine_options_set(&o, "log.retention.check-interval", "0", &err), err);
    assert_int_equal(o.retention_check_interval_ms, 0);
    /* The KV stores' keys and their defaults. */
    assert_int_equal(o.kv_flush_interval_ms, 10 * 60 * 1000);
    assert_int_equal(o.kv_flush_records, 1000000);
    assert_int_equal(o.kv_block_cache_bytes, 64LL << 20);
    assert_int_equal(o.kv_write_buffer_bytes, 256LL << 20);
    KIT_CHECK(fr_engine_options_set(&o, "kv.flush.interval", "30s", &err), err);
    assert_int_equal(o.kv_flush_interval_ms, 30000);
    KIT_CHECK(fr_engine_options_set(&o, "kv.flush.interval", "0", &err), err);
    assert_int_equal(o.kv_flush_interval_ms, 0);
    KIT_CHECK(fr_engine_options_set(&o, "kv.flush.records", "5000", &err), err);
    assert_int_equal(o.kv_flush_records, 5000);
    KIT_CHECK(fr_engine_options_set(&o, "kv.block-cache.bytes", "256mb", &err), err);
    assert_int_equal(o.kv_block_cache_bytes, 256LL << 20);
    KIT_CHECK(fr_engine_options_set(&o, "kv.block-cache.bytes", "0", &err), err);
    assert_int_equal(o.kv_block_cache_bytes, 0);
    assert_int_equal(o.kv_row_cache_bytes, 128LL << 20);
    KIT_CHECK(fr_engine_options_set(&o, "kv.row-cache.bytes", "0", &err), err);
    assert_int_equal(o.kv_row_cache_bytes, 0);
    KIT_CHECK(fr_engine_options_set(&o, "kv.write-buffer.bytes", "1mb", &err), err);
    assert_int_equal(o.kv_write_buffer_bytes, 1LL << 20);

    expect_option_error("log.flush", "sometimes", "log.flush: 'sometimes' is not a flush policy");
    expect_option_error("log.flush.interval", "0", "log.flush.interval");
    expect_option_error("log.flush.interval", "soon", "log.flush.interval");
    expect_option_error("log.segment.bytes", "3gb", "log.segment.bytes");
    expect_option_error("log.segment.bytes", "0", "log.segment.bytes");
    expect_option_error("log.retention.check-interval", "-5s", "log.retention.check-interval");
    expect_option_error("kv.flush.interval", "-1s", "kv.flush.interval");
    expect_option_error("kv.flush.records", "-1", "kv.flush.records: -1 is negative");
    expect_option_error("kv.flush.records", "many", "kv.flush.records");
    expect_option_error("kv.block-cache.bytes", "lots", "kv.block-cache.bytes");
    expect_option_error("kv.row-cache.bytes", "-1mb", "kv.row-cache.bytes");
    expect_option_error("kv.write-buffer.bytes", "512kb",
                        "kv.write-buffer.bytes: 512kb is below the minimum of 1mb");
    expect_option_error("log.flushes", "none", "unknown configuration key 'log.flushes'");
    const char *keys[] = {"log.flush", "log.flush.interval", "log.segment.bytes",
                          "log.retention.check-interval", "kv.flush.interval",
                          "kv.flush.records", "kv.block-cache.bytes", "kv.write-buffer.bytes",
                          "lake.warehouse", "lake.tiering.threads", "kv.row-cache.bytes"};
    int nkeys = (int)(sizeof keys / sizeof *keys);
    for (int i = 0; i < nkeys; i++) assert_string_equal(fr_engine_option_key(i), keys[i]);
    assert_null(fr_engine_option_key(nkeys));

    /* The engine refuses an interval policy without a positive interval. */
    char *dir = kit_tmpdir("flushopt");
    fr_engine_options_default(&o);
    o.data_dir = dir;
    o.flush = FR_FLUSH_INTERVAL;
    o.flush_interval_ms = 0;
    fr_engine *e = NULL;
    assert_int_equal(fr_engine_open(&o, &e, &err), FR_EINVAL);
    assert_null(e);
    /* ... and a KV write buffer below its minimum, naming the key. */
    fr_engine_options_default(&o);
    o.data_dir = dir;
    o.kv_write_buffer_bytes = 1000;
    assert_int_equal(fr_engine_open(&o, &e, &err), FR_EINVAL);
    assert_null(e);
    assert_non_null(strstr(err.msg, "kv.write-buffer.bytes"));
    kit_rmdir(dir);
}

/* ---- drop while held ------------------------------------------------------------------- */

static void test_drop_while_held(void **state)
{
    (void)state;
    char *dir = kit_tmpdir("drop");
    fr_engine *e = kit_open(dir);
    kit_create_table(e, "default", "t", NULL, 0);
    fr_table *t = kit_table(e, "default", "t");
    fr_batch *b = kit_batch(0, 10);
    assert_int_equal(append(t, b, FR_NO_WRITER, -1), 10);
    char tdir[64];
    snprintf(tdir, sizeof tdir, "log/%lld", (long long)fr_table_id(t));
    assert_true(fr_path_exists(kit_path(dir, tdir)));
    fr_error err = {0};
    KIT_CHECK(fr_engine_drop_table(e, "default", "t", false, &err), err);
    assert_true(fr_table_dropped(t));
    fr_table *gone = NULL;
    assert_int_equal(fr_engine_get_table(e, "default", "t", &gone, &err), FR_ENOTFOUND);
    /* The handle still reads; it no longer writes; the files stay while it is held. */
    assert_int_equal(count_rows(t), 10);
    assert_int_equal(fr_table_append(t, b, FR_NO_WRITER, -1, NULL, &err), FR_ENOTFOUND);
    assert_true(fr_path_exists(kit_path(dir, tdir)));
    /* A new table of the same name is a different table. */
    kit_create_table(e, "default", "t", NULL, 0);
    fr_table *t2 = kit_table(e, "default", "t");
    assert_true(fr_table_id(t2) != fr_table_id(t));
    assert_int_equal(count_rows(t2), 0);
    fr_table_release(t2);
    fr_table_release(t);
    assert_false(fr_path_exists(kit_path(dir, tdir)));
    /* Dropping a database with cascade removes its tables' files. */
    KIT_CHECK(fr_engine_create_database(e, "d", false, &err), err);
    kit_create_table(e, "d", "x", NULL, 0);
    t = kit_table(e, "d", "x");
    assert_int_equal(append(t, b, FR_NO_WRITER, -1), 10);
    snprintf(tdir, sizeof tdir, "log/%lld", (long long)fr_table_id(t));
    fr_table_release(t);
    assert_true(fr_path_exists(kit_path(dir, tdir)));
    KIT_CHECK(fr_engine_drop_database(e, "d", false, true, &err), err);
    assert_false(fr_path_exists(kit_path(dir, tdir)));
    fr_batch_free(b);
    fr_engine_close(e);
    kit_rmdir(dir);
}

/* ---- concurrency ----------------------------------------------------------------------- */

typedef struct writer_arg {
    fr_table *t;
    int id;
    int rc;
} writer_arg;

static void *writer_main(void *p)
{
    writer_arg *w = p;
    for (int i = 0; i < 20 && w->rc == 0; i++) {
        fr_batch *b = kit_batch(w->id * 100000 + i * 50, 50);
        fr_error err = {0};
        int64_t n = 0;
        w->rc = fr_table_append(w->t, b, w->id, i, &n, &err);
        if (w->rc == 0 && n != 50) w->rc = -100;
        fr_batch_free(b);
    }
    return NULL;
}

static void test_concurrent_appends(void **state)
{
    (void)state;
    char *dir = kit_tmpdir("concurrent");
    fr_engine *e = kit_open(dir);
    fr_option opts[] = {{"bucket.num", "4"}, {"bucket.key", "id"}};
    kit_create_table(e, "default", "t", opts, 2);
    fr_table *t = kit_table(e, "default", "t");
    pthread_t th[4];
    writer_arg args[4];
    for (int i = 0; i < 4; i++) {
        args[i] = (writer_arg){.t = t, .id = i + 1};
        assert_int_equal(pthread_create(&th[i], NULL, writer_main, &args[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(args[i].rc, 0);
    }
    assert_int_equal(count_rows(t), 4 * 20 * 50);
    fr_table_release(t);
    fr_engine_close(e);
    kit_rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_append_scan),
        cmocka_unit_test(test_batch_must_match),
        cmocka_unit_test(test_bucketing),
        cmocka_unit_test(test_bucket_key_kinds),
        cmocka_unit_test(test_split_all_types),
        cmocka_unit_test(test_round_robin),
        cmocka_unit_test(test_idempotent),
        cmocka_unit_test(test_scan_starts),
        cmocka_unit_test(test_scan_ends_at_start_end),
        cmocka_unit_test(test_projection_filter),
        cmocka_unit_test(test_append_encoded),
        cmocka_unit_test(test_retention),
        cmocka_unit_test(test_retention_thread),
        cmocka_unit_test(test_flush_interval),
        cmocka_unit_test(test_options_set),
        cmocka_unit_test(test_drop_while_held),
        cmocka_unit_test(test_concurrent_appends),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
