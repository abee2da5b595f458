/* test_arrow_ipc.c — the Arrow IPC stream format: schema and batch round trips for every type
 * and codec, with and without nulls, empty batches, streams, projection of encoded messages
 * (compared with the batch's own projection), and malformed input: every truncation of
 * valid messages, flipped bytes, and hand-made corruptions of each checked field. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "arrow_test_util.h"

static const fr_compression codecs[] = {FR_COMPRESSION_NONE, FR_COMPRESSION_LZ4_FRAME, FR_COMPRESSION_ZSTD};

static void test_compression_names(void **state)
{
    (void)state;
    fr_compression c;
    fr_error err;
    assert_int_equal(fr_compression_parse("zstd", &c, &err), 0);
    assert_int_equal(c, FR_COMPRESSION_ZSTD);
    assert_int_equal(fr_compression_parse("LZ4_frame", &c, &err), 0);
    assert_int_equal(c, FR_COMPRESSION_LZ4_FRAME);
    assert_int_equal(fr_compression_parse("None", &c, &err), 0);
    assert_int_equal(c, FR_COMPRESSION_NONE);
    assert_int_equal(fr_compression_parse("gzip", &c, &err), FR_EINVAL);
    assert_string_equal(fr_compression_name(FR_COMPRESSION_LZ4_FRAME), "LZ4_FRAME");
}

static void test_schema_round_trip(void **state)
{
    (void)state;
    for (int nullable = 0; nullable <= 1; nullable++) {
        fr_schema *s = tu_schema(tu_all_types, TU_NTYPES, nullable);
        fr_buf buf;
        fr_buf_init(&buf);
        fr_error err;
        assert_int_equal(fr_ipc_write_schema(s, &buf, &err), 0);
        assert_int_equal(fr_get_u32le(buf.data), 0xFFFFFFFFu);
        assert_int_equal(buf.len % 8, 0);
        assert_int_equal(fr_get_u32le(buf.data + 4), buf.len - 8);
        fr_schema *back;
        size_t used;
        assert_int_equal(fr_ipc_read_schema(buf.data, buf.len, 5, &back, &used, &err), 0);
        assert_int_equal(used, buf.len);
        assert_int_equal(fr_schema_id(back), 5);
        assert_true(fr_schema_equal(s, back));
        fr_schema_free(back);
        fr_schema_free(s);
        fr_buf_free(&buf);
    }
}

/* Writes a batch with codec and reads it back; returns the decoded batch. */
static fr_batch *round_trip(const fr_batch *b, fr_compression codec, fr_buf *buf)
{
    fr_error err;
    fr_buf_reset(buf);
    assert_int_equal(fr_ipc_write_batch(b, codec, buf, &err), 0);
    assert_int_equal(buf->len % 8, 0);
    int64_t rows;
    assert_int_equal(fr_ipc_batch_rows(buf->data, buf->len, &rows, &err), 0);
    assert_int_equal(rows, fr_batch_num_rows(b));
    fr_batch *back = NULL;
    size_t used;
    if (fr_ipc_read_batch(buf->data, buf->len, fr_batch_schema(b), &back, &used, &err) < 0)
        fail_msg("read back: %s", err.msg);
    assert_int_equal(used, buf->len);
    return back;
}

static void test_batch_round_trip(void **state)
{
    (void)state;
    tu_pick_seed("batch_round_trip");
    fr_buf buf;
    fr_buf_init(&buf);
    for (int nullable = 0; nullable <= 1; nullable++) {
        fr_schema *s = tu_schema(tu_all_types, TU_NTYPES, nullable);
        int64_t sizes[] = {0, 1, 9, 64, 1000};
        for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
            tu_model m;
            tu_model_random(&m, s, sizes[k], 25);
            fr_batch *b = tu_build(s, &m);
            for (size_t c = 0; c < 3; c++) {
                fr_batch *back = round_trip(b, codecs[c], &buf);
                assert_true(fr_schema_equal(fr_batch_schema(back), s));
                assert_int_equal(tu_check(back, &m, NULL, 0, NULL), 0);
                fr_batch_free(back);
            }
            fr_batch_free(b);
            tu_model_free(&m);
        }
        fr_schema_free(s);
    }
    fr_buf_free(&buf);
}

static void test_compression_shrinks_or_stores(void **state)
{
    (void)state;
    static const tu_col cols[] = {{"x", "BIGINT"}, {"r", "BYTES"}};
    fr_schema *s = tu_schema(cols, 2, false);
    fr_builder *bld;
    fr_error err;
    assert_int_equal(fr_builder_new(s, &bld, &err), 0);
    tu_seed(3);
    for (int i = 0; i < 4000; i++) {
        uint8_t noise[16];
        for (int j = 0; j < 16; j++) noise[j] = (uint8_t)tu_next();
        assert_int_equal(fr_builder_append_i64(bld, 0, 42, &err), 0); /* compresses well */
        assert_int_equal(fr_builder_append_bytes(bld, 1, noise, sizeof noise, &err), 0); /* does not */
    }
    fr_batch *b;
    assert_int_equal(fr_builder_finish(bld, &b, &err), 0);
    fr_buf plain, packed;
    fr_buf_init(&plain);
    fr_buf_init(&packed);
    assert_int_equal(fr_ipc_write_batch(b, FR_COMPRESSION_NONE, &plain, &err), 0);
    for (size_t c = 1; c < 3; c++) {
        fr_batch *back = round_trip(b, codecs[c], &packed);
        assert_true(packed.len < plain.len - 4000 * 8 / 2);
        const fr_column *r = fr_batch_column(back, 1);
        assert_memory_equal(r->values, fr_batch_column(b, 1)->values, 4000 * 16);
        fr_batch_free(back);
    }
    fr_buf_free(&plain);
    fr_buf_free(&packed);
    fr_batch_free(b);
    fr_builder_free(bld);
    fr_schema_free(s);
}

typedef struct collected {
    fr_batch *batches[16];
    int n;
    int stop_after;
} collected;

static int collect(void *ctx, const fr_schema *schema, fr_batch *batch, fr_error *err)
{
    collected *c = ctx;
    (void)schema;
    if (c->n == c->stop_after) {
        fr_batch_free(batch);
        return fr_fail(err, FR_EINVAL, "stop requested");
    }
    c->batches[c->n++] = batch;
    return 0;
}

static void collected_free(collected *c)
{
    for (int i = 0; i < c->n; i++) fr_batch_free(c->batches[i]);
    c->n = 0;
}

/* A stream of 3 batches of the model's rows [0,100), [100,100), [100,250). */
static void write_stream(const fr_schema *s, tu_model *m, fr_compression codec, bool eos, fr_buf *out)
{
    fr_error err;
    fr_batch *b = tu_build(s, m);
    assert_int_equal(fr_ipc_write_schema(s, out, &err), 0);
    int64_t cuts[][2] = {{0, 100}, {100, 0}, {100, 150}};
    for (int i = 0; i < 3; i++) {
        fr_batch *sl;
        assert_int_equal(fr_batch_slice(b, cuts[i][0], cuts[i][1], &sl, &err), 0);
        assert_int_equal(fr_ipc_write_batch(sl, codec, out, &err), 0);
        fr_batch_free(sl);
    }
    if (eos) assert_int_equal(fr_ipc_write_eos(out, &err), 0);
    fr_batch_free(b);
}

static void test_stream(void **state)
{
    (void)state;
    tu_pick_seed("stream");
    fr_schema *s = tu_schema(tu_all_types, TU_NTYPES, true);
    tu_model m;
    tu_model_random(&m, s, 250, 20);
    for (size_t c = 0; c < 3; c++) {
        for (int eos = 0; eos <= 1; eos++) {
            fr_buf buf;
            fr_buf_init(&buf);
            write_stream(s, &m, codecs[c], eos, &buf);
            collected got = {.stop_after = -1};
            fr_error err;
            assert_int_equal(fr_ipc_read_stream(buf.data, buf.len, collect, &got, &err), 0);
            assert_int_equal(got.n, 3);
            assert_int_equal(fr_batch_num_rows(got.batches[0]), 100);
            assert_int_equal(fr_batch_num_rows(got.batches[1]), 0);
            assert_int_equal(fr_batch_num_rows(got.batches[2]), 150);
            uint8_t keep[32] = {0};
            for (int r = 100; r < 250; r++) keep[r >> 3] |= (uint8_t)(1u << (r & 7));
            assert_int_equal(tu_check(got.batches[2], &m, NULL, 0, keep), 0);
            collected_free(&got);
            /* A callback error stops the stream and is returned. */
            collected stop = {.stop_after = 1};
            assert_int_equal(fr_ipc_read_stream(buf.data, buf.len, collect, &stop, &err), FR_EINVAL);
            assert_int_equal(stop.n, 1);
            collected_free(&stop);
            fr_buf_free(&buf);
        }
    }
    tu_model_free(&m);
    fr_schema_free(s);
}

static void test_project(void **state)
{
    (void)state;
    tu_pick_seed("project");
    fr_schema *s = tu_schema(tu_all_types, TU_NTYPES, true);
    tu_model m;
    tu_model_random(&m, s, 500, 20);
    fr_batch *b = tu_build(s, &m);
    int sets[][6] = {{1, 12}, {2, 29, 0}, {3, 7, 8, 9}, {5, 13, 11, 10, 0, 1}, {1, 0}, {0}};
    fr_buf whole, proj;
    fr_buf_init(&whole);
    fr_buf_init(&proj);
    for (size_t c = 0; c < 3; c++) {
        fr_buf_reset(&whole);
        fr_error err;
        assert_int_equal(fr_ipc_write_batch(b, codecs[c], &whole, &err), 0);
        for (size_t k = 0; k < sizeof sets / sizeof sets[0]; k++) {
            int n = sets[k][0];
            const int *cols = &sets[k][1];
            fr_buf_reset(&proj);
            assert_int_equal(fr_ipc_project(whole.data, whole.len, s, cols, n, &proj, &err), 0);
            assert_true(proj.len < whole.len);
            fr_schema *ps;
            assert_int_equal(fr_schema_project(s, cols, n, &ps, &err), 0);
            fr_batch *decoded, *expect;
            size_t used;
            if (fr_ipc_read_batch(proj.data, proj.len, ps, &decoded, &used, &err) < 0)
                fail_msg("projected message: %s", err.msg);
            assert_int_equal(used, proj.len);
            assert_int_equal(fr_batch_project(b, cols, n, &expect, &err), 0);
            assert_int_equal(tu_check(decoded, &m, cols, n, NULL), 0);
            assert_int_equal(fr_batch_num_rows(expect), fr_batch_num_rows(decoded));
            fr_batch_free(decoded);
            /* The same columns decoded straight from the whole message. */
            if (fr_ipc_read_batch_columns(whole.data, whole.len, s, cols, n, ps, &decoded, &err) < 0)
                fail_msg("columns of the whole message: %s", err.msg);
            assert_int_equal(tu_check(decoded, &m, cols, n, NULL), 0);
            assert_int_equal(fr_batch_num_rows(decoded), fr_batch_num_rows(expect));
            fr_batch_free(decoded);
            fr_batch_free(expect);
            fr_schema_free(ps);
        }
        int bad = 30, twice[2] = {4, 4};
        size_t before = proj.len;
        assert_int_equal(fr_ipc_project(whole.data, whole.len, s, &bad, 1, &proj, &err), FR_EINVAL);
        assert_int_equal(fr_ipc_project(whole.data, whole.len, s, twice, 2, &proj, &err), FR_EINVAL);
        assert_int_equal(proj.len, before);
        /* Columns outside the schema, twice, or an output schema that is not the projection. */
        fr_schema *ps;
        fr_batch *none = NULL;
        int pair[2] = {4, 5};
        assert_int_equal(fr_schema_project(s, pair, 2, &ps, &err), 0);
        assert_int_equal(fr_ipc_read_batch_columns(whole.data, whole.len, s, twice, 2, ps, &none, &err),
                         FR_EINVAL);
        int swapped[2] = {5, 4};
        assert_int_equal(fr_ipc_read_batch_columns(whole.data, whole.len, s, swapped, 2, ps, &none, &err),
                         FR_EINVAL);
        assert_int_equal(fr_ipc_read_batch_columns(whole.data, whole.len, s, pair, 1, ps, &none, &err),
                         FR_EINVAL);
        int outside[2] = {4, 30};
        assert_int_equal(fr_ipc_read_batch_columns(whole.data, whole.len, s, outside, 2, ps, &none, &err),
                         FR_EINVAL);
        /* A truncated message is corrupt, as for a full read. */
        assert_int_equal(fr_ipc_read_batch_columns(whole.data, whole.len / 2, s, pair, 2, ps, &none, &err),
                         FR_ECORRUPT);
        assert_null(none);
        fr_schema_free(ps);
    }
    fr_buf_free(&whole);
    fr_buf_free(&proj);
    fr_batch_free(b);
    tu_model_free(&m);
    fr_schema_free(s);
}

/* ---- malformed input --------------------------------------------------------------------- */

static int discard(void *ctx, const fr_schema *schema, fr_batch *batch, fr_error *err)
{
    (void)ctx;
    (void)schema;
    (void)err;
    fr_batch_free(batch);
    return 0;
}

/* Runs every decoder over p[0, n); returns how many of them succeeded. */
static int decode_all(const uint8_t *p, size_t n, const fr_schema *s)
{
    fr_error err;
    int ok = 0;
    /* Copy into an exact-size heap block so that ASan sees any read past the end. */
    uint8_t *q = malloc(n ? n : 1);
    memcpy(q, p, n);
    ok += fr_ipc_read_stream(q, n, discard, NULL, &err) == 0;
    fr_batch *b = NULL;
    size_t used;
    if (fr_ipc_read_batch(q, n, s, &b, &used, &err) == 0) {
        ok++;
        fr_batch_free(b);
    }
    fr_buf out;
    fr_buf_init(&out);
    int cols[] = {12, 3};
    ok += fr_ipc_project(q, n, s, cols, 2, &out, &err) == 0;
    fr_buf_free(&out);
    int64_t rows;
    ok += fr_ipc_batch_rows(q, n, &rows, &err) == 0;
    fr_schema *rs = NULL;
    if (fr_ipc_read_schema(q, n, 0, &rs, &used, &err) == 0) {
        ok++;
        fr_schema_free(rs);
    }
    free(q);
    return ok;
}

static void test_truncations(void **state)
{
    (void)state;
    static const tu_col cols[] = {{"b", "BOOLEAN"}, {"i", "INT"}, {"d", "DECIMAL(12, 3)"}, {"s", "STRING"},
                                  {"ts", "TIMESTAMP_LTZ(6)"}, {"c", "CHAR(3)"}, {"x", "BYTES"},
                                  {"t", "TIME(3)"}, {"f", "DOUBLE"}, {"g", "SMALLINT"}, {"h", "DATE"},
                                  {"v", "VARCHAR(4)"}, {"w", "STRING"}};
    fr_schema *s = tu_schema(cols, 13, true);
    tu_seed(99);
    tu_model m;
    tu_model_random(&m, s, 20, 30);
    fr_batch *b = tu_build(s, &m);
    for (size_t c = 0; c < 3; c++) {
        fr_buf stream, batch;
        fr_buf_init(&stream);
        fr_buf_init(&batch);
        fr_error err;
        assert_int_equal(fr_ipc_write_schema(s, &stream, &err), 0);
        size_t schema_len = stream.len;
        assert_int_equal(fr_ipc_write_batch(b, codecs[c], &batch, &err), 0);
        assert_int_equal(fr_buf_append(&stream, batch.data, batch.len, &err), 0);
        /* Every strict prefix of a message fails: the schema, the batch. */
        for (size_t n = 0; n < schema_len; n++) assert_int_equal(decode_all(stream.data, n, s), 0);
        for (size_t n = 0; n < batch.len; n++) {
            fr_batch *out = NULL;
            size_t used;
            assert_true(fr_ipc_read_batch(batch.data, n, s, &out, &used, &err) < 0);
            decode_all(batch.data, n, s);
            decode_all(stream.data, schema_len + n, s);
        }
        /* The whole stream and the whole batch decode. */
        assert_true(decode_all(stream.data, stream.len, s) >= 2);
        assert_true(decode_all(batch.data, batch.len, s) >= 3);
        fr_buf_free(&stream);
        fr_buf_free(&batch);
    }
    fr_batch_free(b);
    tu_model_free(&m);
    fr_schema_free(s);
}

static void test_flipped_bytes(void **state)
{
    (void)state;
    uint64_t seed = tu_pick_seed("flipped_bytes");
    static const tu_col cols[] = {{"b", "BOOLEAN"}, {"i", "INT"}, {"d", "DECIMAL(12, 3)"}, {"s", "STRING"},
                                  {"ts", "TIMESTAMP(6)"}, {"c", "CHAR(3)"}, {"x", "BYTES"},
                                  {"t", "TIME(3)"}, {"f", "DOUBLE"}, {"g", "SMALLINT"}, {"h", "DATE"},
                                  {"v", "VARCHAR(4)"}, {"w", "STRING"}};
    fr_schema *s = tu_schema(cols, 13, true);
    tu_model m;
    tu_model_random(&m, s, 30, 30);
    fr_batch *b = tu_build(s, &m);
    tu_seed(seed);
    for (size_t c = 0; c < 3; c++) {
        fr_buf stream;
        fr_buf_init(&stream);
        fr_error err;
        assert_int_equal(fr_ipc_write_schema(s, &stream, &err), 0);
        assert_int_equal(fr_ipc_write_batch(b, codecs[c], &stream, &err), 0);
        assert_int_equal(fr_ipc_write_eos(&stream, &err), 0);
        uint8_t *copy = malloc(stream.len);
        /* Every byte, each with one random bit flipped, then random multi-byte damage. */
        for (size_t i = 0; i < stream.len; i++) {
            memcpy(copy, stream.data, stream.len);
            copy[i] ^= (uint8_t)(1u << (tu_next() & 7));
            decode_all(copy, stream.len, s);
            copy[i] = 0xff;
            decode_all(copy, stream.len, s);
        }
        for (int round = 0; round < 300; round++) {
            memcpy(copy, stream.data, stream.len);
            for (int k = 0; k < 4; k++) copy[tu_next() % stream.len] = (uint8_t)tu_next();
            decode_all(copy, stream.len, s);
        }
        free(copy);
        fr_buf_free(&stream);
    }
    fr_batch_free(b);
    tu_model_free(&m);
    fr_schema_free(s);
}

/* fr_ipc_check_batch against fr_ipc_read_batch over damaged messages: without compression
 * it must accept exactly what decoding accepts (it checks everything decoding checks, with
 * the same codes); with compression it may accept more (what hides in compressed bytes),
 * never less. */
static void test_check_without_decoding(void **state)
{
    (void)state;
    uint64_t seed = tu_pick_seed("check_without_decoding");
    static const tu_col cols[] = {{"b", "BOOLEAN"}, {"i", "INT"}, {"s", "STRING"},
                                  {"d", "DECIMAL(12, 3)"}, {"x", "BYTES"}, {"f", "DOUBLE"}};
    fr_schema *s = tu_schema(cols, 6, true);
    tu_model m;
    tu_model_random(&m, s, 40, 40);
    fr_batch *b = tu_build(s, &m);
    tu_seed(seed);
    for (size_t c = 0; c < 3; c++) {
        fr_buf msg;
        fr_buf_init(&msg);
        fr_error err;
        assert_int_equal(fr_ipc_write_batch(b, codecs[c], &msg, &err), 0);
        int64_t rows = -1;
        size_t used = 0;
        assert_int_equal(fr_ipc_check_batch(msg.data, msg.len, s, &rows, &used, &err), 0);
        assert_int_equal(rows, fr_batch_num_rows(b));
        assert_int_equal(used, msg.len);
        uint8_t *copy = malloc(msg.len);
        int accepted_more = 0;
        for (int round = 0; round < 3000; round++) {
            memcpy(copy, msg.data, msg.len);
            int k = 1 + (int)(tu_next() % 3);
            for (int j = 0; j < k; j++) {
                size_t at = tu_next() % msg.len;
                if (tu_next() & 1) copy[at] ^= (uint8_t)(1u << (tu_next() & 7));
                else copy[at] = (uint8_t)tu_next();
            }
            fr_error e1 = {0}, e2 = {0};
            fr_batch *out = NULL;
            int read_rc = fr_ipc_read_batch(copy, msg.len, s, &out, NULL, &e1);
            fr_batch_free(out);
            int check_rc = fr_ipc_check_batch(copy, msg.len, s, NULL, NULL, &e2);
            if (codecs[c] == FR_COMPRESSION_NONE) {
                if (read_rc != check_rc)
                    fail_msg("seed %llu round %d: decoding says %d (%s), the check %d (%s)",
                             (unsigned long long)seed, round, read_rc, e1.msg, check_rc, e2.msg);
            } else if (read_rc == 0 && check_rc != 0) {
                fail_msg("seed %llu round %d: decodes but the check refuses it: %s",
                         (unsigned long long)seed, round, e2.msg);
            } else if (read_rc != 0 && check_rc == 0) {
                accepted_more++;
            }
        }
        if (codecs[c] != FR_COMPRESSION_NONE)
            print_message("%s: the check passed %d damaged messages that decoding refused\n",
                          fr_compression_name(codecs[c]), accepted_more);
        free(copy);
        fr_buf_free(&msg);
    }
    fr_batch_free(b);
    tu_model_free(&m);
    fr_schema_free(s);
}

/* Locates buffer i's entry (offset, length) in an uncompressed message written by firth. */
static uint8_t *buffer_entry(fr_buf *msg, const fr_schema *s, int i)
{
    int nbuf = 0;
    for (int c = 0; c < fr_schema_num_fields(s); c++)
        nbuf += fr_schema_field(s, c)->type.id == FR_T_STRING ? 3 : 2;
    /* The buffer vector is the last 8-aligned run of nbuf 16-byte entries whose offsets
     * ascend from 0: find it by scanning the metadata for its count. */
    uint32_t meta = fr_get_u32le(msg->data + 4);
    for (size_t at = 8; at + 4 + 16 * (size_t)nbuf <= 8 + meta; at += 4) {
        if (fr_get_u32le(msg->data + at) != (uint32_t)nbuf) continue;
        if (fr_get_u64le(msg->data + at + 4) != 0) continue;
        return msg->data + at + 4 + 16 * (size_t)i;
    }
    return NULL;
}

static void test_corruptions(void **state)
{
    (void)state;
    static const tu_col cols[] = {{"i", "INT"}, {"s", "STRING"}};
    fr_schema *s = tu_schema(cols, 2, true);
    fr_builder *bld;
    fr_error err;
    assert_int_equal(fr_builder_new(s, &bld, &err), 0);
    for (int r = 0; r < 10; r++) {
        if (r == 3) {
            assert_int_equal(fr_builder_append_null(bld, 0, &err), 0);
        } else {
            assert_int_equal(fr_builder_append_i64(bld, 0, r, &err), 0);
        }
        assert_int_equal(fr_builder_append_bytes(bld, 1, "abcdef", (size_t)r % 6, &err), 0);
    }
    fr_batch *b;
    assert_int_equal(fr_builder_finish(bld, &b, &err), 0);
    fr_buf msg;
    fr_buf_init(&msg);
    assert_int_equal(fr_ipc_write_batch(b, FR_COMPRESSION_NONE, &msg, &err), 0);
    fr_batch *out = NULL;
    size_t used;
    uint8_t *body = msg.data + 8 + fr_get_u32le(msg.data + 4);

    /* Offsets that decrease. */
    uint8_t *offs_entry = buffer_entry(&msg, s, 3);
    assert_non_null(offs_entry);
    int32_t *offs = (int32_t *)(body + fr_get_u64le(offs_entry));
    int32_t saved = offs[5];
    offs[5] = offs[4] - 1;
    assert_int_equal(fr_ipc_read_batch(msg.data, msg.len, s, &out, &used, &err), FR_ECORRUPT);
    assert_non_null(strstr(err.msg, "offsets"));
    offs[5] = saved;
    /* Offsets past the data buffer. */
    saved = offs[10];
    offs[10] = 1000;
    assert_int_equal(fr_ipc_read_batch(msg.data, msg.len, s, &out, &used, &err), FR_ECORRUPT);
    offs[10] = saved;
    /* A buffer that runs past the body. */
    uint8_t *vals_entry = buffer_entry(&msg, s, 1);
    uint64_t saved_len = fr_get_u64le(vals_entry + 8);
    fr_put_u64le(vals_entry + 8, 1u << 20);
    assert_int_equal(fr_ipc_read_batch(msg.data, msg.len, s, &out, &used, &err), FR_ECORRUPT);
    fr_buf pout;
    fr_buf_init(&pout);
    assert_int_equal(fr_ipc_project(msg.data, msg.len, s, (int[]){0}, 1, &pout, &err), FR_ECORRUPT);
    assert_int_equal(pout.len, 0);
    fr_buf_free(&pout);
    fr_put_u64le(vals_entry + 8, saved_len);
    /* A validity bitmap that disagrees with the null count. */
    uint8_t *val_entry = buffer_entry(&msg, s, 0);
    uint8_t *bits = body + fr_get_u64le(val_entry);
    bits[0] ^= 0x01;
    assert_int_equal(fr_ipc_read_batch(msg.data, msg.len, s, &out, &used, &err), FR_ECORRUPT);
    bits[0] ^= 0x01;
    /* Nulls in a column the schema says is NOT NULL (found by fuzzing: such a batch could not
     * be exported and imported again). */
    fr_schema *strict = tu_schema(cols, 2, false);
    assert_int_equal(fr_ipc_read_batch(msg.data, msg.len, strict, &out, &used, &err), FR_ECORRUPT);
    assert_non_null(strstr(err.msg, "NOT NULL"));
    fr_schema_free(strict);
    /* A schema with a different number of fields. */
    static const tu_col three[] = {{"i", "INT"}, {"s", "STRING"}, {"x", "INT"}};
    fr_schema *s3 = tu_schema(three, 3, true);
    assert_int_equal(fr_ipc_read_batch(msg.data, msg.len, s3, &out, &used, &err), FR_ECORRUPT);
    fr_schema_free(s3);
    /* Another metadata version: the 16-bit version is the first field of the Message table. */
    assert_int_equal(fr_ipc_read_batch(msg.data, msg.len, s, &out, &used, &err), 0);
    fr_batch_free(out);
    uint8_t *root = msg.data + 8 + fr_get_u32le(msg.data + 8);
    uint8_t *vt = root - (int32_t)fr_get_u32le(root);
    uint8_t *version = root + fr_get_u16le(vt + 4);
    assert_int_equal(fr_get_u16le(version), 4);
    fr_put_u16le(version, 2);
    assert_int_equal(fr_ipc_read_batch(msg.data, msg.len, s, &out, &used, &err), FR_EUNSUPPORTED);
    fr_put_u16le(version, 4);
    /* A compressed buffer whose prefix lies about its size. */
    fr_buf z;
    fr_buf_init(&z);
    assert_int_equal(fr_ipc_write_batch(b, FR_COMPRESSION_ZSTD, &z, &err), 0);
    bool found = false;
    uint8_t *zbody = z.data + 8 + fr_get_u32le(z.data + 4);
    for (int i = 0; i < 5 && !found; i++) {
        uint8_t *e = buffer_entry(&z, s, i);
        if (!e || fr_get_u64le(e + 8) == 0) continue;
        uint8_t *prefix = zbody + fr_get_u64le(e);
        int64_t declared = (int64_t)fr_get_u64le(prefix);
        if (declared < 0) continue;
        fr_put_u64le(prefix, (uint64_t)declared + 1);
        assert_int_equal(fr_ipc_read_batch(z.data, z.len, s, &out, &used, &err), FR_ECORRUPT);
        fr_put_u64le(prefix, (uint64_t)FR_IPC_MESSAGE_BYTES_MAX + 1);
        assert_int_equal(fr_ipc_read_batch(z.data, z.len, s, &out, &used, &err), FR_ELIMIT);
        fr_put_u64le(prefix, (uint64_t)declared);
        found = true;
    }
    assert_int_equal(fr_ipc_read_batch(z.data, z.len, s, &out, &used, &err), 0);
    fr_batch_free(out);
    fr_buf_free(&z);
    /* A schema message where a batch is expected, and the reverse. */
    fr_buf sm;
    fr_buf_init(&sm);
    assert_int_equal(fr_ipc_write_schema(s, &sm, &err), 0);
    assert_int_equal(fr_ipc_read_batch(sm.data, sm.len, s, &out, &used, &err), FR_ECORRUPT);
    fr_schema *rs;
    assert_int_equal(fr_ipc_read_schema(msg.data, msg.len, 0, &rs, &used, &err), FR_ECORRUPT);
    /* A stream of only a schema and EOS, with trailing junk after the EOS ignored. */
    assert_int_equal(fr_ipc_write_eos(&sm, &err), 0);
    assert_int_equal(fr_ipc_read_stream(sm.data, sm.len, discard, NULL, &err), 0);
    fr_buf_free(&sm);
    fr_buf_free(&msg);
    fr_batch_free(b);
    fr_builder_free(bld);
    fr_schema_free(s);
}

static void test_alloc_failures(void **state)
{
    (void)state;
    fr_schema *s = tu_schema(tu_all_types, TU_NTYPES, true);
    tu_seed(5);
    tu_model m;
    tu_model_random(&m, s, 30, 30);
    fr_batch *b = tu_build(s, &m);
    for (size_t c = 0; c < 3; c++) {
        int failures = 0;
        for (long n = 1; n < 100000; n++) {
            fr_error err;
            fr_buf buf, proj;
            fr_buf_init(&buf);
            fr_buf_init(&proj);
            collected got = {.stop_after = -1};
            int cols[] = {3, 12};
            fr_alloc_fail_after(n);
            int rc = fr_ipc_write_schema(s, &buf, &err);
            if (rc == 0) rc = fr_ipc_write_batch(b, codecs[c], &buf, &err);
            if (rc == 0) rc = fr_ipc_write_eos(&buf, &err);
            if (rc == 0) rc = fr_ipc_read_stream(buf.data, buf.len, collect, &got, &err);
            size_t schema_len = rc == 0 ? 8 + fr_get_u32le(buf.data + 4) : 0;
            if (rc == 0) rc = fr_ipc_project(buf.data + schema_len, buf.len - schema_len, s, cols, 2, &proj, &err);
            fr_alloc_fail_after(0);
            if (rc == 0) assert_int_equal(tu_check(got.batches[0], &m, NULL, 0, NULL), 0);
            collected_free(&got);
            fr_buf_free(&buf);
            fr_buf_free(&proj);
            if (rc == 0) break;
            assert_int_equal(rc, FR_ENOMEM);
            failures++;
        }
        assert_true(failures > 5);
    }
    fr_batch_free(b);
    tu_model_free(&m);
    fr_schema_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_compression_names),
        cmocka_unit_test(test_schema_round_trip),
        cmocka_unit_test(test_batch_round_trip),
        cmocka_unit_test(test_compression_shrinks_or_stores),
        cmocka_unit_test(test_stream),
        cmocka_unit_test(test_project),
        cmocka_unit_test(test_truncations),
        cmocka_unit_test(test_flipped_bytes),
        cmocka_unit_test(test_corruptions),
        cmocka_unit_test(test_check_without_decoding),
        cmocka_unit_test(test_alloc_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
