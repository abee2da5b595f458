/* test_log.c — the record-batch format and the log's everyday paths: encode/decode, column
 * statistics, append and read with projection and filter, offsets across rolled segments,
 * offsets by time, retention, idempotent and in-order writers, truncation and raw reads. */
#include "log_testkit.h"

#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <time.h>

/* ---- record batch format ---------------------------------------------------------------- */

static void test_rb_layout(void **state)
{
    (void)state;
    fr_schema *s = lt_schema();
    fr_buf buf;
    fr_buf_init(&buf);
    uint8_t cts[10] = { 0, 1, 2, 3, 4, 0, 1, 2, 3, 4 };
    lt_encode(s, 100, 10, 42, 7, FR_COMPRESSION_ZSTD, cts, &buf);
    assert_int_equal(buf.len % 8, 0);
    fr_rb_view v;
    fr_error err;
    assert_int_equal(fr_rb_decode(buf.data, buf.len, &v, &err), 0);
    assert_int_equal(v.length, (int32_t)buf.len);
    assert_int_equal(v.base_offset, 0);
    assert_int_equal(v.commit_timestamp, 0);
    assert_int_equal(v.record_count, 10);
    assert_int_equal(v.last_offset_delta, 9);
    assert_int_equal(v.writer_id, 42);
    assert_int_equal(v.batch_sequence, 7);
    assert_int_equal(v.compression, FR_COMPRESSION_ZSTD);
    assert_false(v.append_only);
    assert_memory_equal(v.change_types, cts, 10);
    /* The documented byte positions. */
    assert_int_equal(buf.data[24], FR_RB_MAGIC);
    assert_int_equal(buf.data[25], FR_COMPRESSION_ZSTD << 1);
    assert_int_equal(fr_get_u32le(buf.data + 16), buf.len);
    assert_int_equal(fr_get_u32le(buf.data + 20), fr_crc32c(0, buf.data + 24, buf.len - 24));
    assert_int_equal((int32_t)fr_get_u32le(buf.data + 32), 10);
    assert_int_equal((int64_t)fr_get_u64le(buf.data + 40), 42);
    assert_int_equal(fr_get_u32le(buf.data + 48), (uint32_t)v.stats_length);
    assert_int_equal(v.stats, buf.data + 56);
    assert_int_equal(v.change_types, buf.data + 56 + v.stats_length);
    assert_int_equal(v.ipc, buf.data + 56 + v.stats_length + 16);
    assert_int_equal(fr_get_u32le(v.ipc), 0xFFFFFFFFu);
    /* The IPC message decodes to the rows. */
    fr_batch *b;
    size_t used;
    assert_int_equal(fr_ipc_read_batch(v.ipc, (size_t)v.ipc_length, s, &b, &used, &err), 0);
    assert_int_equal(fr_batch_num_rows(b), 10);
    for (int64_t i = 0; i < 10; i++) lt_check_row(b, i, 100 + i);
    fr_batch_free(b);
    /* Assigning offsets and timestamps keeps the CRC valid. */
    fr_rb_assign(buf.data, 12345, 678);
    assert_int_equal(fr_rb_decode(buf.data, buf.len, &v, &err), 0);
    assert_int_equal(v.base_offset, 12345);
    assert_int_equal(v.commit_timestamp, 678);
    /* Append-only batches carry no change types. */
    fr_buf_reset(&buf);
    lt_encode(s, 0, 3, FR_NO_WRITER, -1, FR_COMPRESSION_LZ4_FRAME, NULL, &buf);
    assert_int_equal(fr_rb_decode(buf.data, buf.len, &v, &err), 0);
    assert_true(v.append_only);
    assert_null(v.change_types);
    assert_int_equal(v.writer_id, FR_NO_WRITER);
    assert_int_equal(v.batch_sequence, -1);
    assert_int_equal(v.compression, FR_COMPRESSION_LZ4_FRAME);
    fr_buf_free(&buf);
    fr_schema_free(s);
    assert_string_equal(fr_change_type_name(FR_CHANGE_UPDATE_BEFORE), "-U");
}

static void test_rb_stats(void **state)
{
    (void)state;
    fr_schema *s = lt_schema();
    fr_buf buf;
    fr_buf_init(&buf);
    lt_encode(s, 10, 20, FR_NO_WRITER, -1, FR_COMPRESSION_NONE, NULL, &buf);
    fr_rb_view v;
    fr_error err;
    assert_int_equal(fr_rb_decode(buf.data, buf.len, &v, &err), 0);
    fr_column_stats st[LT_NCOLS];
    assert_int_equal(fr_rb_stats(&v, s, st, &err), 0);
    assert_int_equal(st[LT_ID].null_count, 0);
    assert_true(st[LT_ID].has_minmax);
    assert_int_equal(st[LT_ID].min.v.i, 10);
    assert_int_equal(st[LT_ID].max.v.i, 29);
    /* ids 10..29 with id % 7 == 3: 10, 17, 24. */
    assert_int_equal(st[LT_NAME].null_count, 3);
    assert_true(st[LT_NAME].has_minmax);
    assert_int_equal(st[LT_NAME].min.v.s.len, strlen("name-11"));
    assert_memory_equal(st[LT_NAME].min.v.s.ptr, "name-11", 7);
    assert_memory_equal(st[LT_NAME].max.v.s.ptr, "name-29", 7);
    assert_true(st[LT_SCORE].min.v.f == 5.0 && st[LT_SCORE].max.v.f == 14.5);
    assert_int_equal(st[LT_FLAG].min.v.b, false);
    assert_int_equal(st[LT_FLAG].max.v.b, true);
    assert_true(st[LT_AMOUNT].min.v.d == 1001 && st[LT_AMOUNT].max.v.d == 2901);
    assert_int_equal(st[LT_DAY].min.v.i, 10);
    assert_int_equal(st[LT_DAY].max.v.i, 29);
    /* Wrong schema: the block does not match. */
    fr_field one = { "x", fr_type_of(FR_T_INT) };
    fr_schema *s1;
    assert_int_equal(fr_schema_new(&one, 1, 0, &s1, &err), 0);
    assert_int_equal(fr_rb_stats(&v, s1, st, &err), FR_ECORRUPT);
    fr_schema_free(s1);
    /* Without statistics: the block is empty and the rows are the same. */
    fr_batch *b = lt_batch(s, 10, 20);
    fr_rb_params p = { .schema_id = fr_schema_id(s), .compression = FR_COMPRESSION_NONE,
                       .writer_id = FR_NO_WRITER, .batch_sequence = -1, .no_stats = true };
    fr_buf bare;
    fr_buf_init(&bare);
    assert_int_equal(fr_rb_encode(b, &p, &bare, &err), 0);
    fr_rb_view w;
    assert_int_equal(fr_rb_decode(bare.data, bare.len, &w, &err), 0);
    assert_int_equal(w.stats_length, 0);
    assert_true(bare.len < buf.len);
    assert_int_equal(fr_rb_stats(&w, s, st, &err), FR_ENOTFOUND);
    assert_int_equal(w.ipc_length, v.ipc_length);
    assert_memory_equal(w.ipc, v.ipc, (size_t)v.ipc_length);
    fr_buf_free(&bare);
    fr_batch_free(b);
    fr_buf_free(&buf);
    fr_schema_free(s);
}

/* Strings longer than the limit, NaN, all-null columns. */
static void test_rb_stats_edges(void **state)
{
    (void)state;
    fr_field f[3] = { { "s", fr_type_of(FR_T_STRING) }, { "d", fr_type_of(FR_T_DOUBLE) },
                      { "n", fr_type_of(FR_T_INT) } };
    fr_schema *s;
    fr_error err;
    assert_int_equal(fr_schema_new(f, 3, 5, &s, &err), 0);
    fr_builder *bld;
    assert_int_equal(fr_builder_new(s, &bld, &err), 0);
    char big[FR_RB_STRING_STAT_BYTES_MAX + 1];
    memset(big, 'z', sizeof big);
    assert_int_equal(fr_builder_append_bytes(bld, 0, "a", 1, &err), 0);
    assert_int_equal(fr_builder_append_bytes(bld, 0, big, sizeof big, &err), 0);
    assert_int_equal(fr_builder_append_f64(bld, 1, 1.5, &err), 0);
    assert_int_equal(fr_builder_append_f64(bld, 1, NAN, &err), 0);
    assert_int_equal(fr_builder_append_null(bld, 2, &err), 0);
    assert_int_equal(fr_builder_append_null(bld, 2, &err), 0);
    fr_batch *b;
    assert_int_equal(fr_builder_finish(bld, &b, &err), 0);
    fr_builder_free(bld);
    fr_buf buf;
    fr_buf_init(&buf);
    fr_rb_params p = { .schema_id = 5, .writer_id = FR_NO_WRITER, .batch_sequence = -1 };
    assert_int_equal(fr_rb_encode(b, &p, &buf, &err), 0);
    fr_rb_view v;
    assert_int_equal(fr_rb_decode(buf.data, buf.len, &v, &err), 0);
    assert_int_equal(v.schema_id, 5);
    fr_column_stats st[3];
    assert_int_equal(fr_rb_stats(&v, s, st, &err), 0);
    assert_false(st[0].has_minmax); /* the max would be 65 bytes */
    assert_true(st[1].has_minmax);
    assert_true(st[1].min.v.f == 1.5);
    assert_true(isnan(st[1].max.v.f)); /* NaN sorts above every number */
    assert_false(st[2].has_minmax);
    assert_int_equal(st[2].null_count, 2);
    /* Limits on the encoder's input. */
    p.schema_id = 70000;
    size_t before = buf.len;
    assert_int_equal(fr_rb_encode(b, &p, &buf, &err), FR_EINVAL);
    assert_int_equal(buf.len, before);
    fr_batch_free(b);
    fr_buf_free(&buf);
    fr_schema_free(s);
}

/* The string bounds of the statistics against a plain memcmp-then-length reference, over
 * strings built to tie in their first 8 bytes: short ones, ones with zero bytes, prefixes of
 * each other, empty ones and nulls. FR_TEST_SEED replays a run. */
static int ref_bytes_cmp(const uint8_t *a, size_t an, const uint8_t *b, size_t bn)
{
    int c = memcmp(a, b, an < bn ? an : bn);
    if (c != 0) return c;
    return an < bn ? -1 : (an > bn ? 1 : 0);
}

static void test_rb_stats_strings_random(void **state)
{
    (void)state;
    const char *env = getenv("FR_TEST_SEED");
    unsigned seed = env ? (unsigned)strtoul(env, NULL, 10) : (unsigned)time(NULL);
    printf("test_rb_stats_strings_random: seed %u (set FR_TEST_SEED to replay)\n", seed);
    srand(seed);
    fr_field f = { "s", fr_type_of(FR_T_STRING) };
    fr_schema *s;
    fr_error err;
    assert_int_equal(fr_schema_new(&f, 1, 0, &s, &err), 0);
    static const uint8_t alphabet[] = { 0, 1, 'a', 'b', 0xff };
    for (int round = 0; round < 200; round++) {
        fr_builder *bld;
        assert_int_equal(fr_builder_new(s, &bld, &err), 0);
        int rows = 1 + rand() % 40;
        uint8_t vals[40][20];
        size_t lens[40];
        bool null[40];
        int shared = rand() % 12; /* a common prefix makes the first 8 bytes tie */
        for (int r = 0; r < rows; r++) {
            null[r] = rand() % 6 == 0;
            lens[r] = (size_t)(rand() % 20);
            for (size_t j = 0; j < lens[r]; j++)
                vals[r][j] = (int)j < shared ? 'p' : alphabet[rand() % sizeof alphabet];
            if (null[r]) assert_int_equal(fr_builder_append_null(bld, 0, &err), 0);
            else assert_int_equal(fr_builder_append_bytes(bld, 0, vals[r], lens[r], &err), 0);
        }
        int mn = -1, mx = -1;
        for (int r = 0; r < rows; r++) {
            if (null[r]) continue;
            if (mn < 0 || ref_bytes_cmp(vals[r], lens[r], vals[mn], lens[mn]) < 0) mn = r;
            if (mx < 0 || ref_bytes_cmp(vals[r], lens[r], vals[mx], lens[mx]) > 0) mx = r;
        }
        fr_batch *b;
        assert_int_equal(fr_builder_finish(bld, &b, &err), 0);
        fr_builder_free(bld);
        fr_buf buf;
        fr_buf_init(&buf);
        fr_rb_params p = { .writer_id = FR_NO_WRITER, .batch_sequence = -1 };
        assert_int_equal(fr_rb_encode(b, &p, &buf, &err), 0);
        fr_rb_view v;
        assert_int_equal(fr_rb_decode(buf.data, buf.len, &v, &err), 0);
        fr_column_stats st;
        assert_int_equal(fr_rb_stats(&v, s, &st, &err), 0);
        assert_int_equal(st.has_minmax, mn >= 0);
        if (mn >= 0) {
            if (ref_bytes_cmp(st.min.v.s.ptr, st.min.v.s.len, vals[mn], lens[mn]) != 0 ||
                ref_bytes_cmp(st.max.v.s.ptr, st.max.v.s.len, vals[mx], lens[mx]) != 0)
                fail_msg("seed %u round %d: wrong string bounds", seed, round);
        }
        fr_buf_free(&buf);
        fr_batch_free(b);
    }
    fr_schema_free(s);
}

static void expect_decode(uint8_t *p, size_t n, int code)
{
    fr_rb_view v;
    fr_error err;
    int rc = fr_rb_decode(p, n, &v, &err);
    if (rc != code) fail_msg("decode gave %d (%s), expected %d", rc, err.msg, code);
}

static void test_rb_decode_rejects(void **state)
{
    (void)state;
    fr_schema *s = lt_schema();
    fr_buf buf;
    fr_buf_init(&buf);
    lt_encode(s, 0, 5, FR_NO_WRITER, -1, FR_COMPRESSION_NONE, NULL, &buf);
    size_t n = buf.len;
    uint8_t *copy = malloc(n);
    expect_decode(buf.data, n, 0);
    /* Short input is FR_ERANGE (a torn tail), at every length. */
    for (size_t k = 0; k < n; k++) expect_decode(buf.data, k, FR_ERANGE);
    /* Any flipped byte from the length on is caught. */
    for (size_t i = 16; i < n; i++) {
        memcpy(copy, buf.data, n);
        copy[i] ^= 0x40;
        fr_rb_view v;
        fr_error err;
        int rc = fr_rb_decode(copy, n, &v, &err);
        if (rc == 0) fail_msg("flip at byte %zu not detected", i);
        assert_true(rc == FR_ECORRUPT || rc == FR_ERANGE);
    }
    /* A bad field with a matching CRC is still rejected. */
    memcpy(copy, buf.data, n);
    fr_put_u32le(copy + 32, 6); /* record count */
    fr_put_u32le(copy + 20, fr_crc32c(0, copy + 24, n - 24));
    expect_decode(copy, n, FR_ECORRUPT);
    fr_put_u32le(copy + 28, 5); /* last offset delta to match: the IPC rows still differ */
    fr_put_u32le(copy + 20, fr_crc32c(0, copy + 24, n - 24));
    expect_decode(copy, n, FR_ECORRUPT);
    memcpy(copy, buf.data, n);
    copy[25] = 0x80; /* unknown attribute */
    fr_put_u32le(copy + 20, fr_crc32c(0, copy + 24, n - 24));
    expect_decode(copy, n, FR_ECORRUPT);
    memcpy(copy, buf.data, n);
    fr_put_u32le(copy + 48, (uint32_t)n); /* statistics longer than the batch */
    fr_put_u32le(copy + 20, fr_crc32c(0, copy + 24, n - 24));
    expect_decode(copy, n, FR_ECORRUPT);
    memcpy(copy, buf.data, n);
    fr_put_u32le(copy + 16, FR_RB_BYTES_MAX + 8); /* length over the limit */
    expect_decode(copy, n, FR_ECORRUPT);
    free(copy);
    fr_buf_free(&buf);
    fr_schema_free(s);
}

/* ---- append and read -------------------------------------------------------------------- */

static void test_append_read(void **state)
{
    (void)state;
    char *dir = lt_tmpdir("log-rw");
    fr_schema *s = lt_schema();
    fr_log *log = lt_open(dir, NULL);
    assert_int_equal(fr_log_end_offset(log), 0);
    assert_int_equal(lt_append(log, s, 0, 10), 0);
    assert_int_equal(lt_append(log, s, 10, 1), 10);
    assert_int_equal(lt_append(log, s, 11, 30), 11);
    assert_int_equal(fr_log_end_offset(log), 41);
    assert_int_equal(fr_log_start_offset(log), 0);
    lt_check_dense(log, s, 0);
    lt_check_dense(log, s, 5);  /* inside the first batch */
    lt_check_dense(log, s, 40); /* the last record */

    /* Projection in another order than the schema's. */
    lt_rows rows = { 0 };
    fr_error err;
    int cols[2] = { LT_SCORE, LT_ID };
    int64_t next;
    assert_int_equal(lt_read(log, s, 3, cols, 2, NULL, &rows, &next, &err), 0);
    assert_int_equal(rows.n, 38);
    assert_int_equal(rows.ncols, 2);
    assert_int_equal(next, 41);
    for (int64_t i = 0; i < rows.n; i++) assert_int_equal(rows.ids[i], 3 + i);
    lt_rows_free(&rows);

    /* A filter on a column that is not returned. */
    fr_arena *a = fr_arena_new(1024);
    fr_expr *f = lt_filter_int(a, s, "day", FR_OP_GE, 35);
    int name_only[1] = { LT_NAME };
    assert_int_equal(lt_read(log, s, 0, name_only, 1, f, &rows, &next, &err), 0);
    assert_int_equal(rows.n, 6);
    assert_int_equal(rows.ncols, 1);
    for (int64_t i = 0; i < rows.n; i++) assert_int_equal(rows.offsets[i], 35 + i);
    lt_rows_free(&rows);
    /* The same with the filter column returned, from inside a batch. */
    f = lt_filter_int(a, s, "id", FR_OP_LT, 13);
    assert_int_equal(lt_read(log, s, 5, NULL, 0, f, &rows, &next, &err), 0);
    assert_int_equal(rows.n, 8);
    for (int64_t i = 0; i < rows.n; i++) assert_int_equal(rows.ids[i], 5 + i);
    lt_rows_free(&rows);

    /* Limits: max_records cuts inside a batch; next_offset follows the last row. */
    fr_log_read r = { .from_offset = 2, .schema = s, .max_records = 5 };
    assert_int_equal(fr_log_read_batches(log, &r, lt_collect, &rows, &next, &err), 0);
    assert_int_equal(rows.n, 5);
    assert_int_equal(next, 7);
    lt_rows_free(&rows);
    r.from_offset = 0;
    r.max_records = -1;
    r.max_bytes = 1; /* one batch */
    assert_int_equal(fr_log_read_batches(log, &r, lt_collect, &rows, &next, &err), 0);
    assert_int_equal(rows.batches, 1);
    assert_int_equal(next, 10);
    lt_rows_free(&rows);
    /* The callback stops the read. */
    rows.stop_after = 2;
    r.max_bytes = 0;
    assert_int_equal(fr_log_read_batches(log, &r, lt_collect, &rows, &next, &err), 0);
    assert_int_equal(rows.batches, 2);
    assert_int_equal(next, 11);
    lt_rows_free(&rows);

    /* Out of range and bad columns. */
    assert_int_equal(lt_read(log, s, 42, NULL, 0, NULL, &rows, &next, &err), FR_ERANGE);
    assert_int_equal(lt_read(log, s, 41, NULL, 0, NULL, &rows, &next, &err), 0);
    assert_int_equal(rows.n, 0);
    int dup[2] = { 1, 1 };
    assert_int_equal(lt_read(log, s, 0, dup, 2, NULL, &rows, &next, &err), FR_EINVAL);
    int bad[1] = { LT_NCOLS };
    assert_int_equal(lt_read(log, s, 0, bad, 1, NULL, &rows, &next, &err), FR_EINVAL);
    lt_rows_free(&rows);

    /* A batch that is not a batch is refused and nothing is written. */
    uint8_t junk[64] = { 0 };
    int64_t base;
    assert_int_equal(fr_log_append(log, junk, sizeof junk, &base, &err), FR_ECORRUPT);
    assert_int_equal(fr_log_end_offset(log), 41);

    fr_arena_free(a);
    fr_log_close(log);
    /* Reopen: the same data. */
    log = lt_open(dir, NULL);
    assert_int_equal(fr_log_end_offset(log), 41);
    lt_check_dense(log, s, 0);
    fr_log_close(log);
    fr_schema_free(s);
    lt_rmdir(dir);
}

typedef struct count_ctx {
    int batches;
    int64_t rows;
} count_ctx;

static int count_batches(void *ctx, fr_batch *b, const int64_t *offsets, const uint8_t *cts,
                         int64_t ts, fr_error *err)
{
    count_ctx *c = ctx;
    c->batches++;
    c->rows += fr_batch_num_rows(b);
    fr_batch_free(b);
    return 0;
}

/* Batches whose statistics rule the filter out are skipped without a callback. */
/* fr_log_append2: a verified append skips the CRC but not the layout checks; the default
 * still checks the CRC. Batches of every codec read back. */
static void test_append_verified(void **state)
{
    (void)state;
    char *dir = lt_tmpdir("log-verified");
    fr_schema *s = lt_schema();
    fr_log *log;
    fr_error err;
    assert_int_equal(fr_log_open(dir, NULL, &log, &err), 0);
    const fr_compression codecs[] = { FR_COMPRESSION_NONE, FR_COMPRESSION_LZ4_FRAME,
                                      FR_COMPRESSION_ZSTD };
    int64_t next = 0;
    for (int i = 0; i < 3; i++) {
        fr_buf buf;
        fr_buf_init(&buf);
        lt_encode(s, next, 100, FR_NO_WRITER, -1, codecs[i], NULL, &buf);
        int64_t base = -1;
        assert_int_equal(
            fr_log_append2(log, buf.data, buf.len, FR_LOG_APPEND_VERIFIED, &base, &err), 0);
        assert_int_equal(base, next);
        next += 100;
        /* A wrong length is caught even for a verified batch. */
        assert_int_equal(
            fr_log_append2(log, buf.data, buf.len - 8, FR_LOG_APPEND_VERIFIED, &base, &err),
            FR_ECORRUPT);
        /* A flipped bit in the body is caught by the default check. */
        buf.data[buf.len - 16] ^= 1;
        assert_int_equal(fr_log_append2(log, buf.data, buf.len, 0, &base, &err), FR_ECORRUPT);
        assert_non_null(strstr(err.msg, "CRC"));
        fr_buf_free(&buf);
    }
    assert_int_equal(fr_log_end_offset(log), next);
    lt_check_dense(log, s, 0);
    fr_log_close(log);
    fr_schema_free(s);
    lt_rmdir(dir);
}

static void test_stats_pruning(void **state)
{
    (void)state;
    char *dir = lt_tmpdir("log-prune");
    fr_schema *s = lt_schema();
    fr_log *log = lt_open(dir, NULL);
    for (int i = 0; i < 10; i++) lt_append(log, s, i * 100, 100);
    fr_arena *a = fr_arena_new(1024);
    fr_error err;
    int64_t next;
    count_ctx c = { 0 };
    fr_log_read r = { .from_offset = 0, .schema = s, .max_records = -1 };
    r.filter = lt_filter_int(a, s, "id", FR_OP_GE, 750);
    assert_int_equal(fr_log_read_batches(log, &r, count_batches, &c, &next, &err), 0);
    assert_int_equal(c.batches, 3); /* 700.., 800.., 900.. */
    assert_int_equal(c.rows, 250);
    assert_int_equal(next, 1000);
    /* A filter no batch can match: no callback, the read still advances. */
    c = (count_ctx){ 0 };
    r.filter = lt_filter_int(a, s, "id", FR_OP_GT, 5000);
    assert_int_equal(fr_log_read_batches(log, &r, count_batches, &c, &next, &err), 0);
    assert_int_equal(c.batches, 0);
    assert_int_equal(next, 1000);
    /* Within a batch, zero rows may pass: the callback gets an empty batch. */
    c = (count_ctx){ 0 };
    r.filter = lt_filter_int(a, s, "day", FR_OP_EQ, 150);
    r.from_offset = 151;
    assert_int_equal(fr_log_read_batches(log, &r, count_batches, &c, &next, &err), 0);
    assert_int_equal(c.rows, 0);
    fr_arena_free(a);
    fr_log_close(log);
    fr_schema_free(s);
    lt_rmdir(dir);
}

static int count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d) return -1;
    int n = 0;
    while (readdir(d)) n++;
    closedir(d);
    return n;
}

/* What a raw scan saw, checked against a raw read of the whole log (raw). */
typedef struct scan_seen {
    const fr_buf *raw;
    size_t bytes;         /* of the batches seen so far */
    int batches;
    int stop_after;       /* > 0: stop after this many */
    int fail_after;       /* > 0: fail after this many */
} scan_seen;

static int scan_check(void *ctx, const uint8_t *batch, const fr_rb_view *v, fr_error *err)
{
    scan_seen *sc = ctx;
    /* The same bytes as the copying read, in the same order. */
    assert_true(sc->bytes + (size_t)v->length <= sc->raw->len);
    assert_memory_equal(batch, sc->raw->data + sc->bytes, (size_t)v->length);
    sc->bytes += (size_t)v->length;
    sc->batches++;
    if (sc->fail_after > 0 && sc->batches == sc->fail_after)
        return fr_fail(err, FR_EIO, "the callback failed");
    return sc->stop_after > 0 && sc->batches == sc->stop_after;
}

/* Offsets stay dense across rolled segments and reopen; the index is used at every offset. */
static void test_segments_roll(void **state)
{
    (void)state;
    char *dir = lt_tmpdir("log-roll");
    fr_schema *s = lt_schema();
    fr_log_options o;
    fr_log_options_default(&o);
    o.segment_bytes = 4096;
    o.index_interval_bytes = 512;
    o.flush = FR_FLUSH_NONE;
    fr_log *log = lt_open(dir, &o);
    int64_t id = 0;
    for (int i = 0; i < 60; i++) {
        int rows = 1 + i % 9;
        assert_int_equal(lt_append(log, s, id, rows), id);
        id += rows;
    }
    assert_true(fr_log_num_segments(log) > 3);
    assert_int_equal(fr_log_end_offset(log), id);
    for (int64_t from = 0; from < id; from += 7) lt_check_dense(log, s, from);
    int64_t size = fr_log_size_bytes(log);
    int nseg = fr_log_num_segments(log);
    fr_log_close(log);
    /* Sealed segments keep no descriptors: the active segment's three files only. */
    int fds = count_fds();
    log = lt_open(dir, &o);
    if (fds >= 0) assert_int_equal(count_fds() - fds, 3);
    assert_int_equal(fr_log_end_offset(log), id);
    assert_int_equal(fr_log_size_bytes(log), size);
    assert_int_equal(fr_log_num_segments(log), nseg);
    assert_int_equal(lt_append(log, s, id, 3), id);
    lt_check_dense(log, s, 0);
    /* Raw reads start at the batch holding the offset and stop near max_bytes. */
    fr_buf raw;
    fr_buf_init(&raw);
    fr_error err;
    assert_int_equal(fr_log_read_raw(log, 5, 1, &raw, &err), 0);
    fr_rb_view v;
    assert_int_equal(fr_rb_decode(raw.data, raw.len, &v, &err), 0);
    assert_true(v.base_offset <= 5 && v.base_offset + v.record_count > 5);
    assert_int_equal((size_t)v.length, raw.len);
    fr_buf_reset(&raw);
    assert_int_equal(fr_log_read_raw(log, 0, 1 << 30, &raw, &err), 0);
    assert_int_equal((int64_t)raw.len, fr_log_size_bytes(log));
    int64_t expect = 0;
    int nbatches = 0;
    for (size_t pos = 0; pos < raw.len; pos += (size_t)v.length, nbatches++) {
        assert_int_equal(fr_rb_decode(raw.data + pos, raw.len - pos, &v, &err), 0);
        assert_int_equal(v.base_offset, expect);
        expect += v.record_count;
    }
    assert_int_equal(expect, id + 3);
    assert_int_equal(nbatches, 61);
    /* A scan hands the same batches over in place, across the segments, and stops when its
     * callback says so or fails as it fails. */
    scan_seen seen = {.raw = &raw};
    assert_int_equal(fr_log_scan_raw(log, 0, 1 << 30, scan_check, &seen, &err), 0);
    assert_int_equal(seen.batches, nbatches);
    assert_int_equal((int64_t)seen.bytes, (int64_t)raw.len);
    seen = (scan_seen){.raw = &raw, .stop_after = 5};
    assert_int_equal(fr_log_scan_raw(log, 0, 1 << 30, scan_check, &seen, &err), 0);
    assert_int_equal(seen.batches, 5);
    seen = (scan_seen){.raw = &raw, .fail_after = 3};
    assert_int_equal(fr_log_scan_raw(log, 0, 1 << 30, scan_check, &seen, &err), FR_EIO);
    assert_int_equal(seen.batches, 3);
    assert_string_equal(err.msg, "the callback failed");
    fr_buf_free(&raw);
    fr_log_close(log);
    fr_schema_free(s);
    lt_rmdir(dir);
}

static void sleep_ms(int ms)
{
    struct timespec t = { 0, ms * 1000000L };
    nanosleep(&t, NULL);
}

static void test_offset_for_time(void **state)
{
    (void)state;
    char *dir = lt_tmpdir("log-time");
    fr_schema *s = lt_schema();
    fr_log_options o;
    fr_log_options_default(&o);
    o.segment_bytes = 3000;
    o.index_interval_bytes = 0; /* an index entry per batch */
    o.flush = FR_FLUSH_NONE;
    fr_log *log = lt_open(dir, &o);
    for (int i = 0; i < 40; i++) {
        lt_append(log, s, i * 2, 2);
        if (i % 4 == 0) sleep_ms(2);
    }
    lt_rows rows = { 0 };
    fr_error err;
    assert_int_equal(lt_read(log, s, 0, NULL, 0, NULL, &rows, NULL, &err), 0);
    assert_int_equal(rows.n, 80);
    for (int pass = 0; pass < 2; pass++) {
        for (int64_t i = 0; i < rows.n; i++) {
            if (i > 0) assert_true(rows.commit_ts[i] >= rows.commit_ts[i - 1]);
            /* The first offset with a timestamp >= this one's. */
            int64_t want = i;
            while (want > 0 && rows.commit_ts[want - 1] >= rows.commit_ts[i]) want--;
            int64_t got;
            assert_int_equal(fr_log_offset_for_time(log, rows.commit_ts[i], &got, &err), 0);
            assert_int_equal(got, want);
            assert_int_equal(fr_log_offset_for_time(log, rows.commit_ts[i] + 1, &got, &err), 0);
            int64_t after = i;
            while (after < rows.n && rows.commit_ts[after] <= rows.commit_ts[i]) after++;
            assert_int_equal(got, after);
        }
        int64_t got;
        assert_int_equal(fr_log_offset_for_time(log, 0, &got, &err), 0);
        assert_int_equal(got, 0);
        assert_int_equal(fr_log_offset_for_time(log, INT64_MAX, &got, &err), 0);
        assert_int_equal(got, 80);
        fr_log_close(log);
        log = lt_open(dir, &o); /* the same through the time indexes read back */
    }
    lt_rows_free(&rows);
    fr_log_close(log);
    fr_schema_free(s);
    lt_rmdir(dir);
}

static void test_retention(void **state)
{
    (void)state;
    char *dir = lt_tmpdir("log-retention");
    fr_schema *s = lt_schema();
    fr_log_options o;
    fr_log_options_default(&o);
    o.segment_bytes = 2048;
    o.flush = FR_FLUSH_NONE;
    o.retention_ms = 60 * 1000;
    fr_log *log = lt_open(dir, &o);
    for (int i = 0; i < 30; i++) lt_append(log, s, i * 5, 5);
    int nseg = fr_log_num_segments(log);
    assert_true(nseg >= 4);
    int removed = -1;
    fr_error err;
    /* Nothing is old yet. */
    assert_int_equal(fr_log_enforce_retention(log, fr_now_ms(), &removed, &err), 0);
    assert_int_equal(removed, 0);
    /* An hour later every segment but the active one is past the retention. */
    assert_int_equal(fr_log_enforce_retention(log, fr_now_ms() + 3600 * 1000, &removed, &err), 0);
    assert_int_equal(removed, nseg - 1);
    assert_int_equal(fr_log_num_segments(log), 1);
    int64_t start = fr_log_start_offset(log);
    assert_true(start > 0 && start < 150);
    assert_int_equal(fr_log_end_offset(log), 150);
    lt_check_dense(log, s, start);
    lt_rows rows = { 0 };
    assert_int_equal(lt_read(log, s, 0, NULL, 0, NULL, &rows, NULL, &err), FR_ERANGE);
    assert_int_equal(lt_append(log, s, 150, 5), 150);
    fr_log_close(log);
    log = lt_open(dir, &o);
    assert_int_equal(fr_log_start_offset(log), start);
    lt_check_dense(log, s, start);
    fr_log_close(log);

    /* By size: keep at least retention_bytes. */
    o.retention_ms = -1;
    o.retention_bytes = 5000;
    log = lt_open(dir, &o);
    for (int i = 31; i < 80; i++) lt_append(log, s, i * 5, 5);
    assert_int_equal(fr_log_enforce_retention(log, fr_now_ms(), &removed, &err), 0);
    assert_true(removed > 0);
    int64_t size = fr_log_size_bytes(log);
    assert_true(size >= 5000);
    assert_true(size < 5000 + 2 * 2048 + 4096);
    lt_check_dense(log, s, fr_log_start_offset(log));
    assert_int_equal(fr_log_enforce_retention(log, fr_now_ms(), &removed, &err), 0);
    assert_int_equal(removed, 0);
    fr_log_close(log);
    fr_schema_free(s);
    lt_rmdir(dir);
}

static void test_idempotent_writer(void **state)
{
    (void)state;
    char *dir = lt_tmpdir("log-idem");
    fr_schema *s = lt_schema();
    fr_log *log = lt_open(dir, NULL);
    fr_error err;
    int64_t base;
    assert_int_equal(lt_append_ex(log, s, 0, 4, 77, 0, &base, &err), 0);
    assert_int_equal(base, 0);
    assert_int_equal(lt_append_ex(log, s, 4, 3, 78, 0, &base, &err), 0); /* another writer */
    assert_int_equal(lt_append_ex(log, s, 7, 2, 77, 1, &base, &err), 0);
    assert_int_equal(base, 7);
    /* Retries are not written again. */
    base = -5;
    assert_int_equal(lt_append_ex(log, s, 7, 2, 77, 1, &base, &err), FR_EDUPLICATE);
    assert_int_equal(base, 7);
    assert_int_equal(lt_append_ex(log, s, 0, 4, 77, 0, &base, &err), FR_EDUPLICATE);
    assert_int_equal(base, -1); /* older than the last: offset unknown */
    assert_int_equal(lt_append_ex(log, s, 4, 3, 78, 0, &base, &err), FR_EDUPLICATE);
    assert_int_equal(base, 4);
    assert_int_equal(fr_log_end_offset(log), 9);
    /* Non-idempotent batches are never duplicates. */
    assert_int_equal(lt_append(log, s, 9, 1), 9);
    fr_log_close(log);
    /* The writers' states come back from the batch headers. */
    log = lt_open(dir, NULL);
    assert_int_equal(lt_append_ex(log, s, 7, 2, 77, 1, &base, &err), FR_EDUPLICATE);
    assert_int_equal(base, 7);
    assert_int_equal(lt_append_ex(log, s, 10, 2, 77, 2, &base, &err), 0);
    assert_int_equal(base, 10);
    assert_int_equal(fr_log_end_offset(log), 12);
    lt_check_dense(log, s, 0);
    /* After truncating the writer's last batch, its sequence may be appended again. */
    assert_int_equal(fr_log_truncate(log, 10, &err), 0);
    assert_int_equal(lt_append_ex(log, s, 10, 2, 77, 2, &base, &err), 0);
    assert_int_equal(base, 10);
    fr_log_close(log);
    fr_schema_free(s);
    lt_rmdir(dir);
}

/* An in-order append of one row (first_id) of writer with sequence seq. */
static int append_in_order(fr_log *log, const fr_schema *s, int64_t first_id, int64_t writer,
                           int32_t seq, int64_t *base, fr_error *err)
{
    fr_buf buf;
    fr_buf_init(&buf);
    lt_encode(s, first_id, 1, writer, seq, FR_COMPRESSION_NONE, NULL, &buf);
    int rc = fr_log_append2(log, buf.data, buf.len, FR_LOG_APPEND_IN_ORDER, base, err);
    fr_buf_free(&buf);
    return rc;
}

/* Writer 91's sequence 1, appended in order on a thread of its own. */
typedef struct in_order_arg {
    fr_log *log;
    const fr_schema *s;
    int rc;
    int64_t base;
} in_order_arg;

static void *append_seq1(void *p)
{
    in_order_arg *a = p;
    fr_error err;
    a->rc = append_in_order(a->log, a->s, 100, 91, 1, &a->base, &err);
    return NULL;
}

/* In order, a writer's batch is appended only after the one it follows: one that overtook it
 * waits for it, and one whose predecessor never comes is refused without being written. */
static void test_in_order_writer(void **state)
{
    (void)state;
    char *dir = lt_tmpdir("log-in-order");
    fr_schema *s = lt_schema();
    fr_log *log = lt_open(dir, NULL);
    fr_error err;
    int64_t base;
    /* A writer the log does not know starts at 0. */
    assert_int_equal(append_in_order(log, s, 0, 90, 1, &base, &err), FR_ESEQUENCE);
    assert_non_null(strstr(err.msg, "before 0"));
    assert_int_equal(append_in_order(log, s, 0, 90, 0, &base, &err), 0);
    assert_int_equal(append_in_order(log, s, 1, 90, 1, &base, &err), 0);
    /* A gap is refused, and nothing of it written. */
    assert_int_equal(append_in_order(log, s, 2, 90, 3, &base, &err), FR_ESEQUENCE);
    assert_non_null(strstr(err.msg, "sent sequence 3 before 2"));
    assert_int_equal(fr_log_end_offset(log), 2);
    /* Retries of what was appended are still duplicates; without the flag, gaps pass. */
    assert_int_equal(append_in_order(log, s, 1, 90, 1, &base, &err), FR_EDUPLICATE);
    assert_int_equal(lt_append_ex(log, s, 2, 1, 90, 5, &base, &err), 0);
    /* Writer 91's sequence 1 overtakes its 0: it waits, and is appended right after it. */
    in_order_arg a = {.log = log, .s = s, .rc = -99};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, append_seq1, &a), 0);
    struct timespec pause = {.tv_nsec = 20 * 1000000};
    nanosleep(&pause, NULL);
    assert_int_equal(fr_log_end_offset(log), 3); /* still waiting */
    assert_int_equal(append_in_order(log, s, 3, 91, 0, &base, &err), 0);
    assert_int_equal(base, 3);
    pthread_join(t, NULL);
    assert_int_equal(a.rc, 0);
    assert_int_equal(a.base, 4);
    assert_int_equal(fr_log_end_offset(log), 5);
    fr_log_close(log);
    fr_schema_free(s);
    lt_rmdir(dir);
}

static void test_truncate(void **state)
{
    (void)state;
    char *dir = lt_tmpdir("log-trunc");
    fr_schema *s = lt_schema();
    fr_log_options o;
    fr_log_options_default(&o);
    o.segment_bytes = 2048;
    o.index_interval_bytes = 256;
    fr_log *log = lt_open(dir, &o);
    int64_t bases[40];
    for (int i = 0; i < 40; i++) bases[i] = lt_append(log, s, i * 3, 3);
    int nseg = fr_log_num_segments(log);
    assert_true(nseg > 3);
    fr_error err;
    assert_int_equal(fr_log_truncate(log, 31, &err), FR_EINVAL); /* inside a batch */
    assert_int_equal(fr_log_truncate(log, 500, &err), 0);       /* past the end: no-op */
    assert_int_equal(fr_log_end_offset(log), 120);
    assert_int_equal(fr_log_truncate(log, bases[25], &err), 0);
    assert_int_equal(fr_log_end_offset(log), 75);
    assert_true(fr_log_num_segments(log) < nseg);
    lt_check_dense(log, s, 0);
    assert_int_equal(lt_append(log, s, 75, 3), 75);
    lt_check_dense(log, s, 60);
    fr_log_close(log);
    log = lt_open(dir, &o);
    assert_int_equal(fr_log_end_offset(log), 78);
    lt_check_dense(log, s, 0);
    /* Truncating at the start of a segment leaves it empty and active. */
    char path[4096];
    int64_t seg2 = -1;
    for (int64_t off = 3; off < 78 && seg2 < 0; off += 3) {
        lt_path(path, sizeof path, dir, off, ".log");
        if (lt_file_size(path) >= 0) seg2 = off;
    }
    assert_true(seg2 > 0);
    assert_int_equal(fr_log_truncate(log, seg2, &err), 0);
    assert_int_equal(fr_log_end_offset(log), seg2);
    assert_int_equal(lt_append(log, s, seg2, 3), seg2);
    lt_check_dense(log, s, 0);
    /* Truncating everything. */
    assert_int_equal(fr_log_truncate(log, 0, &err), 0);
    assert_int_equal(fr_log_end_offset(log), 0);
    assert_int_equal(fr_log_num_segments(log), 1);
    assert_int_equal(lt_append(log, s, 0, 3), 0);
    lt_check_dense(log, s, 0);
    fr_log_close(log);
    fr_schema_free(s);
    lt_rmdir(dir);
}

/* Retention and truncation while a read holds a segment: the read goes on safely. */
typedef struct hold_ctx {
    fr_log *log;
    int64_t truncate_at; /* -1: run retention instead */
    int calls;
    lt_rows rows;
} hold_ctx;

static int hold_cb(void *ctx, fr_batch *b, const int64_t *offsets, const uint8_t *cts,
                   int64_t ts, fr_error *err)
{
    hold_ctx *h = ctx;
    if (h->calls++ == 0) {
        fr_error e;
        int removed;
        if (h->truncate_at < 0)
            assert_int_equal(fr_log_enforce_retention(h->log, INT64_MAX / 2, &removed, &e), 0);
        else
            assert_int_equal(fr_log_truncate(h->log, h->truncate_at, &e), 0);
    }
    return lt_collect(&h->rows, b, offsets, cts, ts, err);
}

static void test_read_while_removed(void **state)
{
    (void)state;
    char *dir = lt_tmpdir("log-hold");
    fr_schema *s = lt_schema();
    fr_log_options o;
    fr_log_options_default(&o);
    o.segment_bytes = 2048;
    o.flush = FR_FLUSH_NONE;
    o.retention_ms = 1000;
    fr_log *log = lt_open(dir, &o);
    for (int i = 0; i < 30; i++) lt_append(log, s, i * 4, 4);
    hold_ctx h = { .log = log, .truncate_at = -1 };
    fr_log_read r = { .from_offset = 0, .schema = s, .max_records = -1 };
    int64_t next;
    fr_error err;
    /* Retention removes the segment being read: its batches are still returned and the
     * read ends at the end of that segment (the next offsets are gone); reading on from
     * there is out of range. */
    assert_int_equal(fr_log_read_batches(log, &r, hold_cb, &h, &next, &err), 0);
    assert_true(h.rows.n > 0);
    assert_int_equal(next, h.rows.n);
    for (int64_t i = 0; i < h.rows.n; i++) assert_int_equal(h.rows.ids[i], i);
    lt_rows_free(&h.rows);
    int64_t start = fr_log_start_offset(log);
    assert_true(start > next);
    assert_int_equal(lt_read(log, s, next, NULL, 0, NULL, &h.rows, NULL, &err), FR_ERANGE);
    /* Truncation of the segment being read: the reader keeps the old bytes. */
    h = (hold_ctx){ .log = log, .truncate_at = start + 4 };
    r.from_offset = start;
    assert_int_equal(fr_log_read_batches(log, &r, hold_cb, &h, &next, &err), 0);
    assert_true(h.rows.n >= 4);
    for (int64_t i = 0; i < h.rows.n; i++) assert_int_equal(h.rows.ids[i], start + i);
    lt_rows_free(&h.rows);
    assert_int_equal(fr_log_end_offset(log), start + 4);
    assert_int_equal(lt_append(log, s, start + 4, 4), start + 4);
    lt_check_dense(log, s, start);
    fr_log_close(log);
    log = lt_open(dir, &o);
    assert_int_equal(fr_log_end_offset(log), start + 8);
    lt_check_dense(log, s, start);
    fr_log_close(log);
    fr_schema_free(s);
    lt_rmdir(dir);
}

static void test_change_types(void **state)
{
    (void)state;
    char *dir = lt_tmpdir("log-ct");
    fr_schema *s = lt_schema();
    fr_log *log = lt_open(dir, NULL);
    uint8_t cts[5] = { FR_CHANGE_INSERT, FR_CHANGE_UPDATE_BEFORE, FR_CHANGE_UPDATE_AFTER,
                       FR_CHANGE_DELETE, FR_CHANGE_INSERT };
    fr_buf buf;
    fr_buf_init(&buf);
    lt_encode(s, 0, 5, FR_NO_WRITER, -1, FR_COMPRESSION_ZSTD, cts, &buf);
    int64_t base;
    fr_error err;
    assert_int_equal(fr_log_append(log, buf.data, buf.len, &base, &err), 0);
    lt_rows rows = { 0 };
    fr_arena *a = fr_arena_new(512);
    fr_expr *f = lt_filter_int(a, s, "id", FR_OP_NE, 2);
    int cols[1] = { LT_NAME };
    assert_int_equal(lt_read(log, s, 1, cols, 1, f, &rows, NULL, &err), 0);
    assert_int_equal(rows.n, 3);
    assert_int_equal(rows.offsets[0], 1);
    assert_int_equal(rows.change_types[0], FR_CHANGE_UPDATE_BEFORE);
    assert_int_equal(rows.offsets[1], 3);
    assert_int_equal(rows.change_types[1], FR_CHANGE_DELETE);
    assert_int_equal(rows.change_types[2], FR_CHANGE_INSERT);
    lt_rows_free(&rows);
    /* An unknown change type is refused by the encoder. */
    cts[2] = 9;
    fr_batch *b = lt_batch(s, 0, 5);
    fr_rb_params p = { .schema_id = 0, .writer_id = FR_NO_WRITER, .batch_sequence = -1,
                       .change_types = cts };
    assert_int_equal(fr_rb_encode(b, &p, &buf, &err), FR_EINVAL);
    fr_batch_free(b);
    fr_arena_free(a);
    fr_buf_free(&buf);
    fr_log_close(log);
    fr_schema_free(s);
    lt_rmdir(dir);
}

int main(void)
{
    fr_log_set_level(FR_LOG_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rb_layout),
        cmocka_unit_test(test_rb_stats),
        cmocka_unit_test(test_rb_stats_edges),
        cmocka_unit_test(test_rb_stats_strings_random),
        cmocka_unit_test(test_rb_decode_rejects),
        cmocka_unit_test(test_append_read),
        cmocka_unit_test(test_append_verified),
        cmocka_unit_test(test_stats_pruning),
        cmocka_unit_test(test_segments_roll),
        cmocka_unit_test(test_offset_for_time),
        cmocka_unit_test(test_retention),
        cmocka_unit_test(test_idempotent_writer),
        cmocka_unit_test(test_in_order_writer),
        cmocka_unit_test(test_truncate),
        cmocka_unit_test(test_read_while_removed),
        cmocka_unit_test(test_change_types),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
