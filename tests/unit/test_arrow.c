/* test_arrow.c — batches and builders: every type with and without nulls, typed fast paths,
 * conversions on append, NOT NULL checks, rollback, projection, filter, slice, batches from
 * ready buffers, the C Data Interface round trip, and allocation failures. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "arrow_test_util.h"
#include "firth/firth.h"

static void test_builder_all_types(void **state)
{
    (void)state;
    tu_pick_seed("builder_all_types");
    for (int nullable = 0; nullable <= 1; nullable++) {
        fr_schema *s = tu_schema(tu_all_types, TU_NTYPES, nullable);
        int64_t sizes[] = {0, 1, 7, 8, 9, 100, 1000};
        for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
            tu_model m;
            tu_model_random(&m, s, sizes[k], 30);
            fr_batch *b = tu_build(s, &m);
            assert_int_equal(fr_batch_num_rows(b), sizes[k]);
            assert_true(fr_schema_equal(fr_batch_schema(b), s));
            assert_int_equal(tu_check(b, &m, NULL, 0, NULL), 0);
            /* Buffers are 64-byte aligned so that they can be used in place. */
            for (int c = 0; c < fr_batch_num_columns(b); c++) {
                const fr_column *col = fr_batch_column(b, c);
                assert_non_null(col->values);
                if (sizes[k] > 0) assert_int_equal((uintptr_t)col->values % 8, 0);
                if (col->validity) assert_int_equal((uintptr_t)col->validity % 64, 0);
            }
            fr_batch_free(b);
            tu_model_free(&m);
        }
        fr_schema_free(s);
    }
}

static void test_builder_all_null_and_no_null(void **state)
{
    (void)state;
    fr_schema *s = tu_schema(tu_all_types, TU_NTYPES, true);
    for (int pct = 0; pct <= 100; pct += 100) {
        tu_model m;
        tu_model_random(&m, s, 77, pct);
        fr_batch *b = tu_build(s, &m);
        assert_int_equal(tu_check(b, &m, NULL, 0, NULL), 0);
        for (int c = 0; c < fr_batch_num_columns(b); c++)
            assert_int_equal(fr_batch_column(b, c)->null_count, pct ? 77 : 0);
        fr_batch_free(b);
        tu_model_free(&m);
    }
    fr_schema_free(s);
}

static void test_builder_typed_paths(void **state)
{
    (void)state;
    static const tu_col cols[] = {{"a", "INT"}, {"b", "DOUBLE"}, {"c", "DECIMAL(10, 2)"},
                                  {"d", "BOOLEAN"}, {"e", "STRING"}, {"f", "FLOAT"}, {"g", "TIME(3)"}};
    fr_schema *s = tu_schema(cols, 7, true);
    fr_builder *bld;
    fr_error err;
    assert_int_equal(fr_builder_new(s, &bld, &err), 0);
    for (int round = 0; round < 2; round++) { /* the builder is reusable after finish */
        for (int r = 0; r < 20; r++) {
            if (r % 5 == 4) {
                for (int c = 0; c < 7; c++) assert_int_equal(fr_builder_append_null(bld, c, &err), 0);
                continue;
            }
            assert_int_equal(fr_builder_append_i64(bld, 0, r * 1000 + round, &err), 0);
            assert_int_equal(fr_builder_append_f64(bld, 1, r / 4.0, &err), 0);
            assert_int_equal(fr_builder_append_i128(bld, 2, (fr_i128)r * -12345, &err), 0);
            assert_int_equal(fr_builder_append_bool(bld, 3, r & 1, &err), 0);
            char text[16];
            int n = snprintf(text, sizeof text, "row%d", r);
            assert_int_equal(fr_builder_append_bytes(bld, 4, text, (size_t)n, &err), 0);
            assert_int_equal(fr_builder_append_f64(bld, 5, r / 2.0, &err), 0);
            assert_int_equal(fr_builder_append_i64(bld, 6, r * 1000, &err), 0);
        }
        assert_int_equal(fr_builder_num_rows(bld), 20);
        fr_batch *b;
        assert_int_equal(fr_builder_finish(bld, &b, &err), 0);
        assert_int_equal(fr_builder_num_rows(bld), 0);
        for (int r = 0; r < 20; r++) {
            fr_value v;
            fr_column_get(fr_batch_column(b, 0), r, &v);
            if (r % 5 == 4) {
                assert_true(v.is_null);
                continue;
            }
            assert_int_equal(v.v.i, r * 1000 + round);
            fr_column_get(fr_batch_column(b, 1), r, &v);
            assert_true(v.v.f == r / 4.0);
            fr_column_get(fr_batch_column(b, 2), r, &v);
            assert_true(v.v.d == (fr_i128)r * -12345);
            fr_column_get(fr_batch_column(b, 3), r, &v);
            assert_int_equal(v.v.b, r & 1);
            fr_column_get(fr_batch_column(b, 4), r, &v);
            char text[16];
            int n = snprintf(text, sizeof text, "row%d", r);
            assert_int_equal(v.v.s.len, n);
            assert_memory_equal(v.v.s.ptr, text, (size_t)n);
            fr_column_get(fr_batch_column(b, 5), r, &v);
            assert_true(v.v.f == r / 2.0);
            fr_column_get(fr_batch_column(b, 6), r, &v);
            assert_int_equal(v.v.i, r * 1000);
        }
        assert_int_equal(fr_batch_column(b, 0)->null_count, 4);
        fr_batch_free(b);
    }
    fr_builder_free(bld);
    fr_schema_free(s);
}

/* Regression: a builder reused after finish sized its next buffers from the previous
 * batch's length, which need not be a multiple of 8, and broke the padding invariant. */
static void test_builder_reuse_odd_lengths(void **state)
{
    (void)state;
    static const tu_col cols[] = {{"s", "STRING"}, {"i", "INT"}};
    fr_schema *s = tu_schema(cols, 2, true);
    fr_builder *bld;
    fr_error err;
    assert_int_equal(fr_builder_new(s, &bld, &err), 0);
    for (int round = 0; round < 3; round++) {
        for (int r = 0; r < 2025; r++) { /* 2025 strings of 4 bytes: 8100 data bytes */
            assert_int_equal(fr_builder_append_bytes(bld, 0, "abcd", 4, &err), 0);
            assert_int_equal(fr_builder_append_i64(bld, 1, r, &err), 0);
        }
        fr_batch *b;
        assert_int_equal(fr_builder_finish(bld, &b, &err), 0);
        assert_int_equal(fr_batch_num_rows(b), 2025);
        fr_value v;
        fr_column_get(fr_batch_column(b, 1), 2024, &v);
        assert_int_equal(v.v.i, 2024);
        fr_batch_free(b);
    }
    fr_builder_free(bld);
    fr_schema_free(s);
}

static void test_builder_casts(void **state)
{
    (void)state;
    static const tu_col cols[] = {{"d", "DECIMAL(10, 2)"}, {"l", "BIGINT"}, {"s", "STRING"}, {"t", "TINYINT"}};
    fr_schema *s = tu_schema(cols, 4, true);
    fr_builder *bld;
    fr_error err;
    assert_int_equal(fr_builder_new(s, &bld, &err), 0);
    fr_value str = fr_value_str(fr_type_of(FR_T_STRING), "12.5", 4);
    fr_value i = fr_value_int(fr_type_of(FR_T_INT), 42);
    assert_int_equal(fr_builder_append(bld, 0, &str, &err), 0);
    assert_int_equal(fr_builder_append(bld, 1, &i, &err), 0);
    assert_int_equal(fr_builder_append(bld, 2, &i, &err), 0);
    assert_int_equal(fr_builder_append(bld, 3, &i, &err), 0);
    /* Out of range for TINYINT: an error naming the column, and the row can be rolled back. */
    fr_value big = fr_value_int(fr_type_of(FR_T_BIGINT), 1000);
    assert_int_equal(fr_builder_append(bld, 0, &str, &err), 0);
    assert_int_equal(fr_builder_append(bld, 1, &i, &err), 0);
    assert_int_equal(fr_builder_append(bld, 2, &i, &err), 0);
    assert_true(fr_builder_append(bld, 3, &big, &err) < 0);
    assert_non_null(strstr(err.msg, "t"));
    fr_builder_rollback_row(bld);
    assert_int_equal(fr_builder_num_rows(bld), 1);
    fr_batch *b;
    assert_int_equal(fr_builder_finish(bld, &b, &err), 0);
    assert_int_equal(fr_batch_num_rows(b), 1);
    fr_value v;
    fr_column_get(fr_batch_column(b, 0), 0, &v);
    assert_true(v.v.d == 1250);
    fr_column_get(fr_batch_column(b, 1), 0, &v);
    assert_int_equal(v.v.i, 42);
    fr_column_get(fr_batch_column(b, 2), 0, &v);
    assert_int_equal(v.v.s.len, 2);
    assert_memory_equal(v.v.s.ptr, "42", 2);
    fr_column_get(fr_batch_column(b, 3), 0, &v);
    assert_int_equal(v.v.i, 42);
    fr_batch_free(b);
    fr_builder_free(bld);
    fr_schema_free(s);
}

static void test_builder_not_null(void **state)
{
    (void)state;
    static const tu_col cols[] = {{"id", "BIGINT"}, {"name", "STRING"}};
    fr_schema *s = tu_schema(cols, 2, false);
    fr_builder *bld;
    fr_error err;
    assert_int_equal(fr_builder_new(s, &bld, &err), 0);
    fr_value null = fr_value_null(fr_type_of(FR_T_BIGINT));
    assert_int_equal(fr_builder_append(bld, 0, &null, &err), FR_EINVAL);
    assert_non_null(strstr(err.msg, "id"));
    assert_int_equal(fr_builder_append_null(bld, 1, &err), FR_EINVAL);
    assert_non_null(strstr(err.msg, "name"));
    assert_int_equal(fr_builder_num_rows(bld), 0);
    /* Unequal columns cannot be finished. */
    assert_int_equal(fr_builder_append_i64(bld, 0, 1, &err), 0);
    fr_batch *b = NULL;
    assert_int_equal(fr_builder_finish(bld, &b, &err), FR_ESTATE);
    assert_null(b);
    fr_builder_free(bld);
    fr_schema_free(s);
}

static void test_builder_rollback(void **state)
{
    (void)state;
    tu_pick_seed("builder_rollback");
    fr_schema *s = tu_schema(tu_all_types, TU_NTYPES, true);
    tu_model m;
    tu_model_random(&m, s, 300, 25);
    fr_builder *bld;
    fr_error err;
    assert_int_equal(fr_builder_new(s, &bld, &err), 0);
    /* After every good row, append a random prefix of a junk row and roll it back. */
    for (int64_t r = 0; r < m.rows; r++) {
        for (int c = 0; c < m.ncols; c++) assert_int_equal(fr_builder_append(bld, c, tu_cell(&m, c, r), &err), 0);
        int partial = (int)tu_range(0, m.ncols - 1);
        for (int c = 0; c < partial; c++) {
            fr_value v = *tu_cell(&m, c, (r * 7 + 3) % m.rows);
            assert_int_equal(fr_builder_append(bld, c, &v, &err), 0);
        }
        fr_builder_rollback_row(bld);
        assert_int_equal(fr_builder_num_rows(bld), r + 1);
    }
    fr_builder_rollback_row(bld); /* complete rows: nothing to drop */
    fr_batch *b;
    assert_int_equal(fr_builder_finish(bld, &b, &err), 0);
    assert_int_equal(tu_check(b, &m, NULL, 0, NULL), 0);
    fr_batch_free(b);
    fr_builder_free(bld);
    tu_model_free(&m);
    fr_schema_free(s);
}

static void test_project_filter_slice(void **state)
{
    (void)state;
    tu_pick_seed("project_filter_slice");
    fr_schema *s = tu_schema(tu_all_types, TU_NTYPES, true);
    tu_model m;
    tu_model_random(&m, s, 333, 20);
    fr_batch *b = tu_build(s, &m);
    fr_error err;

    int cols[] = {12, 0, 7, 29, 3};
    fr_batch *p;
    assert_int_equal(fr_batch_project(b, cols, 5, &p, &err), 0);
    assert_string_equal(fr_schema_field(fr_batch_schema(p), 0)->name, "s");
    fr_batch_free(b); /* the projection keeps the shared memory alive */
    b = NULL;
    assert_int_equal(tu_check(p, &m, cols, 5, NULL), 0);
    /* A projection of a projection, outliving both. */
    int again[] = {4, 2};
    int again_model[] = {3, 7};
    fr_batch *pp;
    assert_int_equal(fr_batch_project(p, again, 2, &pp, &err), 0);
    fr_batch_free(p);
    assert_int_equal(tu_check(pp, &m, again_model, 2, NULL), 0);
    fr_batch_free(pp);
    b = tu_build(s, &m);
    assert_int_equal(fr_batch_project(b, cols, 5, &p, &err), 0);

    uint8_t keep[(333 + 7) / 8];
    for (int pattern = 0; pattern < 4; pattern++) {
        for (size_t i = 0; i < sizeof keep; i++)
            keep[i] = pattern == 0 ? 0 : pattern == 1 ? 0xff : pattern == 2 ? 0x5a : (uint8_t)tu_next();
        fr_batch *f;
        assert_int_equal(fr_batch_filter(b, keep, &f, &err), 0);
        assert_int_equal(tu_check(f, &m, NULL, 0, keep), 0);
        fr_batch_free(f);
    }
    int64_t ranges[][2] = {{0, 0}, {0, 333}, {1, 5}, {8, 16}, {13, 300}, {332, 1}, {333, 0}};
    for (size_t k = 0; k < sizeof ranges / sizeof ranges[0]; k++) {
        fr_batch *sl;
        assert_int_equal(fr_batch_slice(b, ranges[k][0], ranges[k][1], &sl, &err), 0);
        memset(keep, 0, sizeof keep);
        for (int64_t r = ranges[k][0]; r < ranges[k][0] + ranges[k][1]; r++) keep[r >> 3] |= (uint8_t)(1u << (r & 7));
        assert_int_equal(tu_check(sl, &m, NULL, 0, keep), 0);
        fr_batch_free(sl);
    }
    fr_batch *sl = NULL;
    assert_int_equal(fr_batch_slice(b, 300, 34, &sl, &err), FR_ERANGE);
    assert_null(sl);
    fr_batch_free(p);
    fr_batch_free(b);
    tu_model_free(&m);
    fr_schema_free(s);
}

static void test_from_buffers(void **state)
{
    (void)state;
    static const tu_col cols[] = {{"n", "INT"}, {"s", "STRING"}};
    fr_schema *s = tu_schema(cols, 2, true);
    uint8_t *bufs[6] = {0};
    bufs[0] = fr_malloc(1);
    bufs[0][0] = 0x5; /* rows 0 and 2 valid */
    bufs[2] = fr_malloc(12);
    int32_t ints[3] = {7, 0, 9};
    memcpy(bufs[2], ints, 12);
    bufs[4] = fr_malloc(16);
    int32_t offs[4] = {0, 2, 2, 5};
    memcpy(bufs[4], offs, 16);
    bufs[5] = fr_malloc(5);
    memcpy(bufs[5], "abcde", 5);
    int64_t nulls[2] = {1, 0};
    fr_batch *b;
    fr_error err;
    assert_int_equal(fr_batch_from_buffers(s, 3, bufs, nulls, &b, &err), 0);
    fr_value v;
    fr_column_get(fr_batch_column(b, 0), 1, &v);
    assert_true(v.is_null);
    fr_column_get(fr_batch_column(b, 0), 2, &v);
    assert_int_equal(v.v.i, 9);
    fr_column_get(fr_batch_column(b, 1), 2, &v);
    assert_int_equal(v.v.s.len, 3);
    assert_memory_equal(v.v.s.ptr, "cde", 3);
    fr_batch_free(b);

    /* Nulls without a validity buffer: rejected, and the buffers are still freed. */
    uint8_t *bad[6] = {0};
    bad[2] = fr_malloc(12);
    assert_int_equal(fr_batch_from_buffers(s, 3, bad, nulls, &b, &err), FR_EINVAL);
    fr_schema_free(s);
}

static void test_empty_batches(void **state)
{
    (void)state;
    fr_schema *s = tu_schema(tu_all_types, TU_NTYPES, true);
    fr_builder *bld;
    fr_error err;
    assert_int_equal(fr_builder_new(s, &bld, &err), 0);
    fr_batch *b;
    assert_int_equal(fr_builder_finish(bld, &b, &err), 0);
    assert_int_equal(fr_batch_num_rows(b), 0);
    for (int c = 0; c < fr_batch_num_columns(b); c++) {
        const fr_column *col = fr_batch_column(b, c);
        assert_non_null(col->values);
        assert_null(col->validity);
        if (col->type.id == FR_T_STRING) assert_int_equal(col->offsets[0], 0);
    }
    struct ArrowSchema as;
    struct ArrowArray aa;
    assert_int_equal(fr_batch_export(b, &as, &aa, &err), 0);
    fr_batch *back;
    assert_int_equal(fr_batch_import(&as, &aa, &back, &err), 0);
    assert_int_equal(fr_batch_num_rows(back), 0);
    assert_true(fr_schema_equal(fr_batch_schema(back), s));
    as.release(&as);
    fr_batch_free(back);
    fr_batch_free(b);
    fr_builder_free(bld);
    fr_schema_free(s);
}

/* ---- C Data Interface -------------------------------------------------------------------- */

static void test_cdata_round_trip(void **state)
{
    (void)state;
    tu_pick_seed("cdata_round_trip");
    for (int nullable = 0; nullable <= 1; nullable++) {
        fr_schema *s = tu_schema(tu_all_types, TU_NTYPES, nullable);
        tu_model m;
        tu_model_random(&m, s, 211, 30);
        fr_batch *b = tu_build(s, &m);
        struct ArrowSchema as;
        struct ArrowArray aa;
        fr_error err;
        assert_int_equal(fr_batch_export(b, &as, &aa, &err), 0);
        fr_batch_free(b); /* the export holds the memory */
        assert_string_equal(as.format, "+s");
        assert_int_equal(as.n_children, TU_NTYPES);
        assert_string_equal(as.children[0]->format, "b");
        assert_string_equal(as.children[7]->format, "d:20,4");
        assert_string_equal(as.children[12]->format, "u");
        assert_string_equal(as.children[13]->format, "z");
        assert_string_equal(as.children[14]->format, "tdD");
        assert_string_equal(as.children[15]->format, "tts");
        assert_string_equal(as.children[18]->format, "ttn");
        assert_string_equal(as.children[20]->format, "tsu:");
        assert_string_equal(as.children[25]->format, "tsm:UTC");
        assert_int_equal(as.children[0]->flags & ARROW_FLAG_NULLABLE, nullable ? ARROW_FLAG_NULLABLE : 0);
        assert_non_null(as.children[10]->metadata); /* CHAR(5) keeps its length */
        assert_null(as.children[12]->metadata);
        assert_int_equal(aa.length, 211);
        fr_batch *back;
        assert_int_equal(fr_batch_import(&as, &aa, &back, &err), 0);
        assert_null(aa.release);
        assert_true(fr_schema_equal(fr_batch_schema(back), s));
        assert_int_equal(tu_check(back, &m, NULL, 0, NULL), 0);
        as.release(&as);
        assert_null(as.release);
        fr_batch_free(back);
        tu_model_free(&m);
        fr_schema_free(s);
    }
}

static void test_cdata_moved_child(void **state)
{
    (void)state;
    static const tu_col cols[] = {{"a", "BIGINT"}, {"s", "STRING"}};
    fr_schema *s = tu_schema(cols, 2, true);
    tu_model m;
    tu_seed(7);
    tu_model_random(&m, s, 50, 10);
    fr_batch *b = tu_build(s, &m);
    struct ArrowSchema as;
    struct ArrowArray aa;
    fr_error err;
    assert_int_equal(fr_batch_export(b, &as, &aa, &err), 0);
    fr_batch_free(b);
    /* A consumer may move a child out and release the parent first. */
    struct ArrowArray child = *aa.children[1];
    aa.children[1]->release = NULL;
    aa.release(&aa);
    const int32_t *offsets = child.buffers[1];
    const uint8_t *data = child.buffers[2];
    fr_value want = *tu_cell(&m, 1, 49);
    if (!want.is_null) {
        assert_int_equal((size_t)(offsets[50] - offsets[49]), want.v.s.len);
        assert_memory_equal(data + offsets[49], want.v.s.ptr, want.v.s.len);
    }
    child.release(&child);
    as.release(&as);
    tu_model_free(&m);
    fr_schema_free(s);
}

/* A hand-made producer: a struct array with one INT child and one STRING child, both read
 * through offsets that are not multiples of 8, with offsets not starting at 0. */
typedef struct hand_array {
    int released;
} hand_array;
static void hand_release(struct ArrowArray *a)
{
    hand_array *h = a->private_data;
    if (h) h->released++;
    a->release = NULL;
}
static void hand_child_release(struct ArrowArray *a) { a->release = NULL; }
static void hand_schema_release(struct ArrowSchema *s) { s->release = NULL; }

static void test_cdata_import_offsets(void **state)
{
    (void)state;
    static int32_t ints[16];
    for (int i = 0; i < 16; i++) ints[i] = i * 10;
    static uint8_t validity[2] = {0xff, 0xfb}; /* bit 10 is null */
    static int32_t offsets[17];
    static char chars[64];
    for (int i = 0; i <= 16; i++) offsets[i] = 3 * i;
    for (int i = 0; i < 48; i++) chars[i] = (char)('A' + i % 26);
    const void *int_bufs[2] = {validity, ints};
    const void *str_bufs[3] = {NULL, offsets, chars};
    struct ArrowArray c0 = {.length = 14, .offset = 1, .n_buffers = 2, .buffers = int_bufs, .release = hand_child_release};
    struct ArrowArray c1 = {.length = 13, .offset = 3, .n_buffers = 3, .buffers = str_bufs, .release = hand_child_release};
    struct ArrowArray *children[2] = {&c0, &c1};
    const void *parent_bufs[1] = {NULL};
    hand_array h = {0};
    struct ArrowArray parent = {.length = 10, .offset = 2, .n_buffers = 1, .n_children = 2, .buffers = parent_bufs,
                                .children = children, .release = hand_release, .private_data = &h};
    struct ArrowSchema s0 = {.format = "i", .name = "n", .flags = ARROW_FLAG_NULLABLE, .release = hand_schema_release};
    struct ArrowSchema s1 = {.format = "u", .name = "s", .flags = 0, .release = hand_schema_release};
    struct ArrowSchema *schildren[2] = {&s0, &s1};
    struct ArrowSchema ps = {.format = "+s", .name = "", .n_children = 2, .children = schildren, .release = hand_schema_release};
    fr_batch *b;
    fr_error err;
    assert_int_equal(fr_batch_import(&ps, &parent, &b, &err), 0);
    assert_int_equal(fr_batch_num_rows(b), 10);
    const fr_column *n = fr_batch_column(b, 0);
    assert_int_equal(n->null_count, 1);
    for (int r = 0; r < 10; r++) {
        fr_value v;
        fr_column_get(n, r, &v);
        /* parent row r = child element r + 2 = buffer index r + 3 */
        if (r + 3 == 10) {
            assert_true(v.is_null);
        } else {
            assert_false(v.is_null);
            assert_int_equal(v.v.i, (r + 3) * 10);
        }
        fr_column_get(fr_batch_column(b, 1), r, &v);
        assert_int_equal(v.v.s.len, 3);
        assert_memory_equal(v.v.s.ptr, chars + 3 * (r + 5), 3);
    }
    assert_int_equal(fr_batch_column(b, 1)->offsets[0], 0);
    assert_int_equal(h.released, 0);
    fr_batch_free(b);
    assert_int_equal(h.released, 1);

    /* A child too short for the parent: rejected, and the array is released anyway. */
    c0.length = 5;
    parent.release = hand_release;
    assert_int_equal(fr_batch_import(&ps, &parent, &b, &err), FR_EINVAL);
    assert_int_equal(h.released, 2);
    assert_null(parent.release);
    /* Unsupported formats are named. */
    c0.length = 14;
    s0.format = "+l";
    parent.release = hand_release;
    assert_int_equal(fr_batch_import(&ps, &parent, &b, &err), FR_EUNSUPPORTED);
    assert_non_null(strstr(err.msg, "+l"));
}

/* ---- allocation failures ----------------------------------------------------------------- */

static void test_alloc_failures(void **state)
{
    (void)state;
    fr_schema *s = tu_schema(tu_all_types, TU_NTYPES, true);
    tu_seed(11);
    tu_model m;
    tu_model_random(&m, s, 40, 30);
    int failures = 0;
    for (long n = 1; n < 100000; n++) {
        fr_error err;
        fr_builder *bld = NULL;
        fr_batch *b = NULL, *f = NULL, *p = NULL, *back = NULL;
        struct ArrowSchema as = {0};
        struct ArrowArray aa = {0};
        int rc;
        fr_alloc_fail_after(n);
        rc = fr_builder_new(s, &bld, &err);
        for (int64_t r = 0; rc == 0 && r < m.rows; r++)
            for (int c = 0; rc == 0 && c < m.ncols; c++) rc = fr_builder_append(bld, c, tu_cell(&m, c, r), &err);
        if (rc == 0) rc = fr_builder_finish(bld, &b, &err);
        uint8_t keep[5] = {0x0f, 0xf0, 0x33, 0x00, 0xff};
        int cols[3] = {2, 12, 20};
        if (rc == 0) rc = fr_batch_filter(b, keep, &f, &err);
        if (rc == 0) rc = fr_batch_project(b, cols, 3, &p, &err);
        if (rc == 0) rc = fr_batch_export(b, &as, &aa, &err);
        if (rc == 0) rc = fr_batch_import(&as, &aa, &back, &err);
        fr_alloc_fail_after(0);
        if (rc == 0) assert_int_equal(tu_check(back, &m, NULL, 0, NULL), 0);
        if (as.release) as.release(&as);
        if (aa.release) aa.release(&aa);
        fr_batch_free(back);
        fr_batch_free(p);
        fr_batch_free(f);
        fr_batch_free(b);
        fr_builder_free(bld);
        if (rc == 0) break;
        assert_int_equal(rc, FR_ENOMEM);
        failures++;
    }
    assert_true(failures > 10);
    tu_model_free(&m);
    fr_schema_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_builder_all_types),
        cmocka_unit_test(test_builder_all_null_and_no_null),
        cmocka_unit_test(test_builder_typed_paths),
        cmocka_unit_test(test_builder_reuse_odd_lengths),
        cmocka_unit_test(test_builder_casts),
        cmocka_unit_test(test_builder_not_null),
        cmocka_unit_test(test_builder_rollback),
        cmocka_unit_test(test_project_filter_slice),
        cmocka_unit_test(test_from_buffers),
        cmocka_unit_test(test_empty_batches),
        cmocka_unit_test(test_cdata_round_trip),
        cmocka_unit_test(test_cdata_moved_child),
        cmocka_unit_test(test_cdata_import_offsets),
        cmocka_unit_test(test_alloc_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
