/* test_client_lake_answer.c — how a remote client takes a server's answer to lake_snapshot
 * (fr_rlake_take): the answers it accepts (a snapshot with its offsets, no snapshot yet), and
 * each answer it must refuse as corrupt rather than hand to the caller: a snapshot id below
 * -1, a negative commit time, offsets or a commit time without a snapshot, a bucket the table
 * does not have, a partition id that does not fit the table's partitioning, a negative offset,
 * offsets out of order or named twice, more offsets than a lake snapshot holds. Every refusal
 * names the table. fuzz_client_lake feeds it arbitrary answers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "client/client_int.h"

#define MAX_OFFSETS 8

/* An answer of n offsets (pid, bucket, offset) triples. */
typedef struct answer {
    Firth__LakeSnapshotResponse m;
    Firth__LakeOffset o[MAX_OFFSETS];
    Firth__LakeOffset *list[MAX_OFFSETS];
} answer;

static void answer_init(answer *a, int64_t snapshot_id, int64_t committed_at_ms,
                        const int64_t (*offs)[3], int n)
{
    assert_true(n <= MAX_OFFSETS);
    firth__lake_snapshot_response__init(&a->m);
    a->m.snapshot_id = snapshot_id;
    a->m.committed_at_ms = committed_at_ms;
    for (int i = 0; i < n; i++) {
        firth__lake_offset__init(&a->o[i]);
        a->o[i].partition_id = offs[i][0];
        a->o[i].bucket = (int32_t)offs[i][1];
        a->o[i].offset = offs[i][2];
        a->list[i] = &a->o[i];
    }
    a->m.offsets = n ? a->list : NULL;
    a->m.n_offsets = (size_t)n;
}

/* fr_rlake_take of a for table shop.orders (4 buckets, partitioned or not) must fail as
 * corrupt, saying part. */
static void expect_corrupt(const answer *a, bool partitioned, const char *part)
{
    firth_lake_snapshot *s = (firth_lake_snapshot *)&s; /* must be reset to NULL */
    fr_error err = {0};
    int rc = fr_rlake_take(&a->m, "shop.orders", 4, partitioned, &s, &err);
    if (rc != FR_ECORRUPT) fail_msg("%d, not FR_ECORRUPT (%s)", rc, err.msg);
    assert_null(s);
    assert_non_null(strstr(err.msg, "lake_snapshot answer for shop.orders"));
    if (!strstr(err.msg, part)) fail_msg("\"%s\" lacks \"%s\"", err.msg, part);
}

static void test_snapshot_taken(void **state)
{
    (void)state;
    static const int64_t offs[3][3] = {{-1, 0, 120}, {-1, 1, 0}, {-1, 3, 98}};
    answer a;
    answer_init(&a, 4215730518211150001, 1764504000000, offs, 3);
    firth_lake_snapshot *s = NULL;
    fr_error err = {0};
    assert_int_equal(fr_rlake_take(&a.m, "shop.orders", 4, false, &s, &err), 0);
    assert_int_equal(s->snapshot_id, 4215730518211150001);
    assert_int_equal(s->committed_at_ms, 1764504000000);
    assert_int_equal(s->noffsets, 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(s->offsets[i].partition_id, offs[i][0]);
        assert_int_equal(s->offsets[i].bucket, offs[i][1]);
        assert_int_equal(s->offsets[i].offset, offs[i][2]);
    }
    firth_lake_snapshot_free(s);

    /* Partitioned: ids >= 0, ordered by partition, then bucket. */
    static const int64_t parts[4][3] = {{0, 3, 5}, {1, 0, 7}, {1, 2, 0}, {9, 1, 1}};
    answer_init(&a, 1, 2, parts, 4);
    assert_int_equal(fr_rlake_take(&a.m, "shop.orders", 4, true, &s, &err), 0);
    assert_int_equal(s->noffsets, 4);
    assert_int_equal(s->offsets[3].partition_id, 9);
    firth_lake_snapshot_free(s);
}

static void test_no_snapshot(void **state)
{
    (void)state;
    answer a;
    answer_init(&a, -1, 0, NULL, 0);
    firth_lake_snapshot *s = NULL;
    fr_error err = {0};
    assert_int_equal(fr_rlake_take(&a.m, "shop.orders", 4, false, &s, &err), 0);
    assert_int_equal(s->snapshot_id, -1);
    assert_int_equal(s->committed_at_ms, 0);
    assert_int_equal(s->noffsets, 0);
    assert_null(s->offsets);
    firth_lake_snapshot_free(s);
    /* A snapshot with no offsets (a lake tiered from empty logs) is one too. */
    answer_init(&a, 0, 5, NULL, 0);
    assert_int_equal(fr_rlake_take(&a.m, "shop.orders", 4, false, &s, &err), 0);
    assert_int_equal(s->snapshot_id, 0);
    assert_null(s->offsets);
    firth_lake_snapshot_free(s);
}

static void test_snapshot_fields_refused(void **state)
{
    (void)state;
    static const int64_t one[1][3] = {{-1, 0, 1}};
    answer a;
    answer_init(&a, -2, 0, NULL, 0);
    expect_corrupt(&a, false, "snapshot id -2 is neither an id nor -1");
    answer_init(&a, 7, -1, NULL, 0);
    expect_corrupt(&a, false, "commit time -1 is negative");
    answer_init(&a, -1, 0, one, 1);
    expect_corrupt(&a, false, "no snapshot, yet 1 offsets");
    answer_init(&a, -1, 1764504000000, NULL, 0);
    expect_corrupt(&a, false, "commit time 1764504000000");
    /* Only the count is looked at before the offsets: no memory for a million of them. */
    answer_init(&a, 7, 1, one, 1);
    a.m.n_offsets = FR_RPC_LAKE_OFFSETS_MAX + 1;
    expect_corrupt(&a, false, "1000001 offsets, more than a lake snapshot holds");
}

static void test_offsets_refused(void **state)
{
    (void)state;
    answer a;
    static const int64_t bucket_high[1][3] = {{-1, 4, 1}};
    answer_init(&a, 7, 1, bucket_high, 1);
    expect_corrupt(&a, false, "offsets[0]: bucket 4 is not one of the table's 4 buckets");
    static const int64_t bucket_neg[2][3] = {{-1, 0, 1}, {-1, -1, 1}};
    answer_init(&a, 7, 1, bucket_neg, 2);
    expect_corrupt(&a, false, "offsets[1]: bucket -1 is not one");
    static const int64_t pid_unpart[1][3] = {{3, 0, 1}};
    answer_init(&a, 7, 1, pid_unpart, 1);
    expect_corrupt(&a, false, "partition id 3 for a table without partitions");
    static const int64_t pid_part[1][3] = {{-1, 0, 1}};
    answer_init(&a, 7, 1, pid_part, 1);
    expect_corrupt(&a, true, "partition id -1 for a table with partitions");
    static const int64_t off_neg[1][3] = {{-1, 2, -5}};
    answer_init(&a, 7, 1, off_neg, 1);
    expect_corrupt(&a, false, "offset -5 is negative");
    static const int64_t twice[2][3] = {{-1, 1, 5}, {-1, 1, 6}};
    answer_init(&a, 7, 1, twice, 2);
    expect_corrupt(&a, false, "offsets[1]: partition -1 bucket 1 comes after partition -1 "
                              "bucket 1");
    static const int64_t disorder[2][3] = {{-1, 2, 5}, {-1, 0, 6}};
    answer_init(&a, 7, 1, disorder, 2);
    expect_corrupt(&a, false, "each bucket once, in order");
    static const int64_t part_disorder[2][3] = {{4, 0, 5}, {2, 3, 6}};
    answer_init(&a, 7, 1, part_disorder, 2);
    expect_corrupt(&a, true, "partition 2 bucket 3 comes after partition 4 bucket 0");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_snapshot_taken),
        cmocka_unit_test(test_no_snapshot),
        cmocka_unit_test(test_snapshot_fields_refused),
        cmocka_unit_test(test_offsets_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
