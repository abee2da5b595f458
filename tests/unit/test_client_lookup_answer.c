/* test_client_lookup_answer.c — how the client takes one bucket of a server's answer to a
 * lookup or a prefix lookup (fr_rlookup_take): the rows it accepts, and each answer it must
 * refuse as corrupt rather than trust: too few flags, rows the flags or counts do not account
 * for, a negative count, a count that would overflow the sum; a bucket's error comes back as
 * that error, and an error entry of code NONE is no error. fuzz_client_lookup feeds it
 * arbitrary answers; this says what each kind of answer gives. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "client/client_int.h"

static const char *SCHEMA_JSON =
    "{\"id\": 0, \"fields\": [{\"name\": \"id\", \"type\": \"BIGINT\", \"nullable\": false},"
    " {\"name\": \"s\", \"type\": \"STRING\", \"nullable\": true}]}";

static fr_schema *schema;

/* Record batches of n rows (ids from 100), appended to out; nothing when n is 0. */
static void encode_rows(int64_t n, fr_buf *out)
{
    if (n == 0) return;
    fr_error err;
    fr_builder *b = NULL;
    assert_int_equal(fr_builder_new(schema, &b, &err), 0);
    for (int64_t r = 0; r < n; r++) {
        assert_int_equal(fr_builder_append_i64(b, 0, 100 + r, &err), 0);
        assert_int_equal(fr_builder_append_bytes(b, 1, "row", 3, &err), 0);
    }
    fr_batch *batch = NULL;
    assert_int_equal(fr_builder_finish(b, &batch, &err), 0);
    fr_rb_params p = {.schema_id = 0, .compression = FR_COMPRESSION_ZSTD,
                      .writer_id = FR_NO_WRITER, .batch_sequence = -1, .no_stats = true};
    assert_int_equal(fr_rb_encode(batch, &p, out, &err), 0);
    fr_batch_free(batch);
    fr_builder_free(b);
}

/* Takes a lookup answer of one bucket: nflags flags (the first nset true), nrows rows. */
static int take_lookup(int64_t nkeys, int nflags, int nset, int64_t nrows, Firth__Error *e,
                       fr_rlookup_part *part, fr_error *err)
{
    fr_buf rows;
    fr_buf_init(&rows);
    encode_rows(nrows, &rows);
    protobuf_c_boolean found[16] = {0};
    for (int i = 0; i < nset; i++) found[i] = 1;
    Firth__LookupBucketResult b = FIRTH__LOOKUP_BUCKET_RESULT__INIT;
    b.found = found;
    b.n_found = (size_t)nflags;
    b.rows = (ProtobufCBinaryData){.data = rows.data, .len = rows.len};
    b.error = e;
    Firth__LookupBucketResult *bs[1] = {&b};
    Firth__LookupResponse m = FIRTH__LOOKUP_RESPONSE__INIT;
    m.buckets = bs;
    m.n_buckets = 1;
    *part = (fr_rlookup_part){.n = nkeys};
    int rc = fr_rlookup_take(&m.base, false, 0, schema, part, err);
    fr_buf_free(&rows);
    return rc;
}

/* Takes a prefix lookup answer of one bucket: the counts given, nrows rows. */
static int take_prefix(int64_t nkeys, int64_t *counts, int ncounts, int64_t nrows,
                       fr_rlookup_part *part, fr_error *err)
{
    fr_buf rows;
    fr_buf_init(&rows);
    encode_rows(nrows, &rows);
    Firth__PrefixLookupBucketResult b = FIRTH__PREFIX_LOOKUP_BUCKET_RESULT__INIT;
    b.row_counts = counts;
    b.n_row_counts = (size_t)ncounts;
    b.rows = (ProtobufCBinaryData){.data = rows.data, .len = rows.len};
    Firth__PrefixLookupBucketResult *bs[1] = {&b};
    Firth__PrefixLookupResponse m = FIRTH__PREFIX_LOOKUP_RESPONSE__INIT;
    m.buckets = bs;
    m.n_buckets = 1;
    *part = (fr_rlookup_part){.n = nkeys};
    int rc = fr_rlookup_take(&m.base, true, 0, schema, part, err);
    fr_buf_free(&rows);
    return rc;
}

static void test_lookup_answers(void **state)
{
    (void)state;
    fr_rlookup_part part;
    fr_error err = {0};
    /* Two of three keys found, two rows: taken. */
    assert_int_equal(take_lookup(3, 3, 2, 2, NULL, &part, &err), 0);
    assert_int_equal(part.found.rows, 2);
    assert_true(part.hit[0] && part.hit[1] && !part.hit[2]);
    fr_rlookup_part_free(&part);
    /* An error entry of code NONE is no error. */
    Firth__Error none = FIRTH__ERROR__INIT;
    assert_int_equal(take_lookup(3, 3, 2, 2, &none, &part, &err), 0);
    assert_int_equal(part.found.rows, 2);
    fr_rlookup_part_free(&part);
    /* The bucket's own error comes back as that error. */
    Firth__Error gone = FIRTH__ERROR__INIT;
    gone.code = FIRTH__ERROR_CODE__NOT_FOUND;
    gone.message = "table shop.t does not exist";
    assert_int_equal(take_lookup(3, 3, 2, 2, &gone, &part, &err), FR_ENOTFOUND);
    assert_non_null(strstr(err.msg, "table shop.t does not exist"));
    fr_rlookup_part_free(&part);
    /* Too few flags, or rows the flags do not account for: corrupt. */
    assert_int_equal(take_lookup(4, 3, 2, 2, NULL, &part, &err), FR_ECORRUPT);
    assert_string_equal(err.msg, "a lookup answer of 3 flags for 4 keys");
    fr_rlookup_part_free(&part);
    assert_int_equal(take_lookup(3, 3, 2, 1, NULL, &part, &err), FR_ECORRUPT);
    assert_string_equal(err.msg, "a lookup answer counts 1 rows for key 1, of 1 rows in all");
    fr_rlookup_part_free(&part);
    assert_int_equal(take_lookup(3, 3, 1, 2, NULL, &part, &err), FR_ECORRUPT);
    assert_string_equal(err.msg, "a lookup answer with 2 rows for 1 found");
    fr_rlookup_part_free(&part);
}

static void test_prefix_answers(void **state)
{
    (void)state;
    fr_rlookup_part part;
    fr_error err = {0};
    int64_t good[3] = {2, 0, 3};
    assert_int_equal(take_prefix(3, good, 3, 5, &part, &err), 0);
    assert_int_equal(part.found.rows, 5);
    assert_int_equal(part.counts[2], 3);
    fr_rlookup_part_free(&part);
    /* A negative count, or one that would overflow the sum, is refused before it is added. */
    int64_t negative[3] = {-1, 2, 1};
    assert_int_equal(take_prefix(3, negative, 3, 2, &part, &err), FR_ECORRUPT);
    assert_string_equal(err.msg, "a lookup answer counts -1 rows for key 0, of 2 rows in all");
    fr_rlookup_part_free(&part);
    int64_t huge[3] = {2, INT64_MAX, 2};
    assert_int_equal(take_prefix(3, huge, 3, 2, &part, &err), FR_ECORRUPT);
    assert_non_null(strstr(err.msg, "for key 1, of 2 rows in all"));
    fr_rlookup_part_free(&part);
    /* More rows than the counts say. */
    assert_int_equal(take_prefix(3, good, 3, 6, &part, &err), FR_ECORRUPT);
    assert_string_equal(err.msg, "a lookup answer with 6 rows for 5 found");
    fr_rlookup_part_free(&part);
}

int main(void)
{
    fr_error err;
    if (fr_schema_from_json(SCHEMA_JSON, strlen(SCHEMA_JSON), &schema, &err) < 0) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lookup_answers),
        cmocka_unit_test(test_prefix_answers),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    fr_schema_free(schema);
    return rc;
}
