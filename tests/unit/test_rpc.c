/* test_rpc.c — frames of the native protocol: headers byte by byte, lengths at and past the
 * limits, whole frames written and decoded, and the incremental reader fed one byte at a
 * time, in random chunks (the seed is printed; FIRTH_TEST_SEED replays one), straight into
 * its buffer, with frames left waiting, and with bad lengths. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "rpc/rpc.h"

static const uint8_t *tr_find(const char *hay, const char *needle)
{
    return (const uint8_t *)strstr(hay, needle);
}
#define assert_msg_has(err, s)                                                                     \
    do {                                                                                           \
        if (!tr_find((err).msg, (s))) fail_msg("message \"%s\" lacks \"%s\"", (err).msg, (s));    \
    } while (0)

/* ---- headers ------------------------------------------------------------------------------- */

static void test_request_header_bytes(void **state)
{
    (void)state;
    uint8_t h[FR_RPC_REQUEST_HEADER_BYTES];
    fr_error err;
    assert_int_equal(fr_rpc_request_header_encode(h, FR_RPC_PRODUCE_LOG, 3, 0x01020304, 5,
                                                  FR_RPC_FRAME_BYTES_MAX_DEFAULT, &err),
                     0);
    /* length = 8 header bytes after the length field + 5 body bytes, big-endian. */
    const uint8_t want[] = { 0, 0, 0, 13, 0, 9, 0, 3, 1, 2, 3, 4 };
    assert_memory_equal(h, want, sizeof want);

    uint8_t frame[17];
    memcpy(frame, h, sizeof h);
    memcpy(frame + 12, "hello", 5);
    fr_rpc_frame f;
    assert_int_equal(
        fr_rpc_frame_decode(FR_RPC_REQUEST, frame, sizeof frame, FR_RPC_FRAME_BYTES_MAX_DEFAULT,
                            &f, &err),
        0);
    assert_int_equal(f.direction, FR_RPC_REQUEST);
    assert_int_equal(f.api_key, FR_RPC_PRODUCE_LOG);
    assert_int_equal(f.api_version, 3);
    assert_int_equal(f.request_id, 0x01020304);
    assert_int_equal(f.body_len, 5);
    assert_ptr_equal(f.body, frame + 12);

    /* The largest values each field holds. */
    assert_int_equal(fr_rpc_request_header_encode(h, INT16_MAX, INT16_MAX, INT32_MAX, 0,
                                                  FR_RPC_FRAME_BYTES_MIN, &err),
                     0);
    assert_int_equal(
        fr_rpc_frame_decode(FR_RPC_REQUEST, h, sizeof h, FR_RPC_FRAME_BYTES_MIN, &f, &err), 0);
    assert_int_equal(f.api_key, INT16_MAX);
    assert_int_equal(f.api_version, INT16_MAX);
    assert_int_equal(f.request_id, INT32_MAX);
    assert_int_equal(f.body_len, 0);
}

static void test_response_header_bytes(void **state)
{
    (void)state;
    uint8_t h[FR_RPC_RESPONSE_HEADER_BYTES];
    fr_error err;
    assert_int_equal(fr_rpc_response_header_encode(h, FR_RPC_PART, 258, 3,
                                                   FR_RPC_FRAME_BYTES_MAX_DEFAULT, &err),
                     0);
    const uint8_t want[] = { 0, 0, 0, 8, 2, 0, 0, 1, 2 };
    assert_memory_equal(h, want, sizeof want);

    for (int r = 0; r <= 2; r++) {
        uint8_t frame[FR_RPC_RESPONSE_HEADER_BYTES + 1];
        assert_int_equal(fr_rpc_response_header_encode(frame, (fr_rpc_result)r, 7, 1, 4096, &err),
                         0);
        frame[9] = 0xAB;
        fr_rpc_frame f;
        assert_int_equal(fr_rpc_frame_decode(FR_RPC_RESPONSE, frame, sizeof frame, 4096, &f, &err),
                         0);
        assert_int_equal(f.result, r);
        assert_int_equal(f.request_id, 7);
        assert_int_equal(f.body_len, 1);
        assert_int_equal(f.body[0], 0xAB);
    }
    /* Request id -1 is a connection error: ERROR only. */
    assert_int_equal(fr_rpc_response_header_encode(h, FR_RPC_ERROR, -1, 0, 4096, &err), 0);
    fr_rpc_frame f;
    assert_int_equal(fr_rpc_frame_decode(FR_RPC_RESPONSE, h, sizeof h, 4096, &f, &err), 0);
    assert_int_equal(f.request_id, -1);
    assert_int_equal(fr_rpc_response_header_encode(h, FR_RPC_SUCCESS, -1, 0, 4096, &err),
                     FR_EINVAL);
    assert_int_equal(fr_rpc_response_header_encode(h, FR_RPC_ERROR, -2, 0, 4096, &err), FR_EINVAL);
    assert_int_equal(fr_rpc_response_header_encode(h, (fr_rpc_result)3, 1, 0, 4096, &err),
                     FR_EINVAL);
}

static void test_header_decode_rejects(void **state)
{
    (void)state;
    fr_error err;
    fr_rpc_frame f;
    /* A response with result type 3, and one with -1 and SUCCESS. */
    uint8_t r[9] = { 0, 0, 0, 5, 3, 0, 0, 0, 1 };
    assert_int_equal(fr_rpc_frame_decode(FR_RPC_RESPONSE, r, 9, 4096, &f, &err), FR_ECORRUPT);
    assert_msg_has(err, "result type 3");
    uint8_t r2[9] = { 0, 0, 0, 5, 0, 0xff, 0xff, 0xff, 0xff };
    assert_int_equal(fr_rpc_frame_decode(FR_RPC_RESPONSE, r2, 9, 4096, &f, &err), FR_ECORRUPT);
    r2[4] = 0xff; /* result -1 as int8 */
    assert_int_equal(fr_rpc_frame_decode(FR_RPC_RESPONSE, r2, 9, 4096, &f, &err), FR_ECORRUPT);
    /* A request with a negative request id. */
    uint8_t q[12] = { 0, 0, 0, 8, 0, 1, 0, 0, 0x80, 0, 0, 0 };
    assert_int_equal(fr_rpc_frame_decode(FR_RPC_REQUEST, q, 12, 4096, &f, &err), FR_ECORRUPT);
    assert_msg_has(err, "request id -2147483648 is negative");
    /* The bytes given must be exactly the frame. */
    q[8] = 0;
    assert_int_equal(fr_rpc_frame_decode(FR_RPC_REQUEST, q, 12, 4096, &f, &err), 0);
    assert_int_equal(fr_rpc_frame_decode(FR_RPC_REQUEST, q, 11, 4096, &f, &err), FR_ECORRUPT);
    assert_int_equal(fr_rpc_frame_decode(FR_RPC_REQUEST, q, 3, 4096, &f, &err), FR_ECORRUPT);
    /* Unknown api keys and versions are framing-wise fine: the server answers them. */
    q[4] = 0x7f;
    q[6] = 0x7f;
    assert_int_equal(fr_rpc_frame_decode(FR_RPC_REQUEST, q, 12, 4096, &f, &err), 0);
    assert_int_equal(f.api_key, 0x7f01);
    assert_int_equal(f.api_version, 0x7f00);
}

static void test_frame_length_limits(void **state)
{
    (void)state;
    fr_error err;
    int32_t len;
    uint8_t p[4];
    /* Negative. */
    memcpy(p, "\xff\xff\xff\xfe", 4);
    assert_int_equal(fr_rpc_frame_length(FR_RPC_REQUEST, p, 4096, &len, &err), FR_ECORRUPT);
    assert_msg_has(err, "length -2 is negative");
    /* Shorter than the header after the length field: 8 for requests, 5 for responses. */
    memcpy(p, "\0\0\0\x07", 4);
    assert_int_equal(fr_rpc_frame_length(FR_RPC_REQUEST, p, 4096, &len, &err), FR_ECORRUPT);
    assert_msg_has(err, "shorter than the 8 header bytes");
    assert_int_equal(fr_rpc_frame_length(FR_RPC_RESPONSE, p, 4096, &len, &err), 0);
    assert_int_equal(len, 7);
    memcpy(p, "\0\0\0\x04", 4);
    assert_int_equal(fr_rpc_frame_length(FR_RPC_RESPONSE, p, 4096, &len, &err), FR_ECORRUPT);
    /* At the limit and one past it. */
    memcpy(p, "\0\0\x10\0", 4);
    assert_int_equal(fr_rpc_frame_length(FR_RPC_REQUEST, p, 4096, &len, &err), 0);
    assert_int_equal(len, 4096);
    memcpy(p, "\0\0\x10\x01", 4);
    assert_int_equal(fr_rpc_frame_length(FR_RPC_REQUEST, p, 4096, &len, &err), FR_ELIMIT);
    assert_msg_has(err, "length 4097 exceeds frame_bytes_max (4096 bytes)");
    /* The default limit: 100 MiB is accepted, 100 MiB + 1 is not; INT32_MAX neither. */
    memcpy(p, "\x06\x40\0\0", 4);
    assert_int_equal(
        fr_rpc_frame_length(FR_RPC_REQUEST, p, FR_RPC_FRAME_BYTES_MAX_DEFAULT, &len, &err), 0);
    memcpy(p, "\x06\x40\0\x01", 4);
    assert_int_equal(
        fr_rpc_frame_length(FR_RPC_REQUEST, p, FR_RPC_FRAME_BYTES_MAX_DEFAULT, &len, &err),
        FR_ELIMIT);
    memcpy(p, "\x7f\xff\xff\xff", 4);
    assert_int_equal(
        fr_rpc_frame_length(FR_RPC_REQUEST, p, FR_RPC_FRAME_BYTES_MAX_DEFAULT, &len, &err),
        FR_ELIMIT);
    /* Encoding refuses what decoding would. */
    uint8_t h[FR_RPC_REQUEST_HEADER_BYTES];
    assert_int_equal(fr_rpc_request_header_encode(h, 0, 0, 0, 4096 - 8, 4096, &err), 0);
    assert_int_equal(fr_rpc_request_header_encode(h, 0, 0, 0, 4096 - 7, 4096, &err), FR_ELIMIT);
    assert_int_equal(fr_rpc_request_header_encode(h, 0, 0, -1, 0, 4096, &err), FR_EINVAL);
    assert_int_equal(fr_rpc_request_header_encode(h, -1, 0, 0, 0, 4096, &err), FR_EINVAL);
    assert_int_equal(fr_rpc_request_header_encode(h, 0, 40000, 0, 0, 4096, &err), FR_EINVAL);
    /* Limits themselves. */
    assert_int_equal(fr_rpc_check_frame_limit(FR_RPC_FRAME_BYTES_MIN - 1, &err), FR_EINVAL);
    assert_int_equal(fr_rpc_check_frame_limit((int64_t)INT32_MAX + 1, &err), FR_EINVAL);
    assert_int_equal(fr_rpc_check_frame_limit(INT32_MAX, &err), 0);
    fr_rpc_reader *r;
    assert_int_equal(fr_rpc_reader_new(FR_RPC_REQUEST, 100, &r, &err), FR_EINVAL);
}

/* ---- whole frames -------------------------------------------------------------------------- */

static void test_write_frames(void **state)
{
    (void)state;
    fr_error err;
    fr_buf out;
    fr_buf_init(&out);
    Firth__CreateDatabaseRequest req = FIRTH__CREATE_DATABASE_REQUEST__INIT;
    req.database = "sales";
    req.if_not_exists = true;
    assert_int_equal(fr_rpc_write_request(&out, FR_RPC_CREATE_DATABASE, 0, 42, &req.base,
                                          FR_RPC_FRAME_BYTES_MAX_DEFAULT, &err),
                     0);
    /* 12 header bytes, then field 1 (tag 0x0a, length 5, "sales") and field 2 (0x10, 1). */
    const uint8_t want[] = { 0,    0,   0,   17,  0,   2,   0,    0,   0, 0,
                             0,    42,  0x0a, 5,  's', 'a', 'l', 'e', 's', 0x10, 1 };
    assert_int_equal(out.len, sizeof want);
    assert_memory_equal(out.data, want, sizeof want);

    fr_rpc_frame f;
    assert_int_equal(fr_rpc_frame_decode(FR_RPC_REQUEST, out.data, out.len,
                                         FR_RPC_FRAME_BYTES_MAX_DEFAULT, &f, &err),
                     0);
    ProtobufCMessage *m;
    Firth__ErrorCode code;
    assert_int_equal(fr_rpc_request_unpack(&f, &m, &code, &err), 0);
    assert_int_equal(code, FIRTH__ERROR_CODE__NONE);
    Firth__CreateDatabaseRequest *got = (Firth__CreateDatabaseRequest *)m;
    assert_string_equal(got->database, "sales");
    assert_true(got->if_not_exists);
    fr_rpc_free(m);

    /* A frame too big for the limit is refused whole: nothing is appended. */
    fr_buf_reset(&out);
    char big[2000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = 0;
    req.database = big;
    assert_int_equal(fr_rpc_write_request(&out, FR_RPC_CREATE_DATABASE, 0, 1, &req.base,
                                          FR_RPC_FRAME_BYTES_MIN, &err),
                     FR_ELIMIT);
    assert_int_equal(out.len, 0);

    /* An error frame from a failure. */
    fr_error failure;
    fr_fail(&failure, FR_ENOTFOUND, "table db.t does not exist");
    assert_int_equal(fr_rpc_write_error(&out, 9, FIRTH__ERROR_CODE__NONE, &failure, &err), 0);
    assert_int_equal(fr_rpc_frame_decode(FR_RPC_RESPONSE, out.data, out.len, 4096, &f, &err), 0);
    assert_int_equal(f.result, FR_RPC_ERROR);
    assert_int_equal(f.request_id, 9);
    assert_int_equal(fr_rpc_response_unpack(FR_RPC_DROP_TABLE, &f, &m, &err), 0);
    Firth__Error *e = (Firth__Error *)m;
    assert_int_equal(e->code, FIRTH__ERROR_CODE__NOT_FOUND);
    assert_string_equal(e->message, "table db.t does not exist");
    fr_rpc_free(m);
    fr_buf_free(&out);
}

/* ---- the reader ---------------------------------------------------------------------------- */

/* A stream of n request frames with bodies of pseudo-random sizes and bytes; frame i has
 * request id i, api key i % 17, version i % 3, and body bytes (i * 7 + j) & 0xff. */
typedef struct tr_stream {
    fr_buf bytes;
    int n;
    size_t *body_len;
} tr_stream;

static size_t tr_body_len(unsigned *seed, size_t max_body)
{
    unsigned r = (unsigned)rand_r(seed);
    switch (r % 8) {
    case 0: return 0;
    case 1: return max_body;                      /* a frame exactly at the limit */
    case 2: return (r >> 3) % (max_body + 1);     /* anything */
    default: return (r >> 3) % 64;                /* mostly small */
    }
}

static void tr_stream_make(tr_stream *s, int n, size_t max_body, int64_t limit, unsigned seed)
{
    fr_error err;
    fr_buf_init(&s->bytes);
    s->n = n;
    s->body_len = calloc((size_t)n, sizeof *s->body_len);
    for (int i = 0; i < n; i++) {
        size_t len = tr_body_len(&seed, max_body);
        s->body_len[i] = len;
        uint8_t h[FR_RPC_REQUEST_HEADER_BYTES];
        assert_int_equal(fr_rpc_request_header_encode(h, i % 17, i % 3, i, len, limit, &err), 0);
        assert_int_equal(fr_buf_append(&s->bytes, h, sizeof h, &err), 0);
        assert_int_equal(fr_buf_reserve(&s->bytes, len, &err), 0);
        for (size_t j = 0; j < len; j++) s->bytes.data[s->bytes.len++] = (uint8_t)(i * 7 + (int)j);
    }
}

static void tr_stream_free(tr_stream *s)
{
    fr_buf_free(&s->bytes);
    free(s->body_len);
}

static void tr_check_frame(const tr_stream *s, int i, const fr_rpc_frame *f)
{
    assert_true(i < s->n);
    assert_int_equal(f->request_id, i);
    assert_int_equal(f->api_key, i % 17);
    assert_int_equal(f->api_version, i % 3);
    assert_int_equal(f->body_len, s->body_len[i]);
    for (size_t j = 0; j < f->body_len; j++)
        if (f->body[j] != (uint8_t)(i * 7 + (int)j))
            fail_msg("frame %d body byte %zu: %u", i, j, f->body[j]);
}

/* Takes every whole frame waiting; returns how many frames have been seen in all. */
static int tr_drain(fr_rpc_reader *r, const tr_stream *s, int seen, int64_t max)
{
    fr_error err;
    fr_rpc_frame f;
    int rc;
    while ((rc = fr_rpc_reader_next(r, &f, &err)) == 1) tr_check_frame(s, seen++, &f);
    assert_int_equal(rc, 0);
    assert_true(fr_rpc_reader_capacity(r) <= (size_t)max + 4);
    return seen;
}

static unsigned tr_seed(void)
{
    const char *env = getenv("FIRTH_TEST_SEED");
    unsigned seed = env ? (unsigned)strtoul(env, NULL, 10) : (unsigned)fr_monotonic_ns();
    printf("test_rpc: seed %u (FIRTH_TEST_SEED=%u replays it)\n", seed, seed);
    return seed;
}

static void test_reader_byte_by_byte(void **state)
{
    (void)state;
    const int64_t max = 2048;
    tr_stream s;
    tr_stream_make(&s, 60, (size_t)max - 8, max, 1234);
    fr_error err;
    fr_rpc_reader *r;
    assert_int_equal(fr_rpc_reader_new(FR_RPC_REQUEST, max, &r, &err), 0);
    int seen = 0;
    for (size_t i = 0; i < s.bytes.len; i++) {
        size_t used;
        assert_int_equal(fr_rpc_reader_feed(r, s.bytes.data + i, 1, &used, &err), 0);
        assert_int_equal(used, 1);
        seen = tr_drain(r, &s, seen, max);
    }
    assert_int_equal(seen, s.n);
    assert_int_equal(fr_rpc_reader_buffered(r), 0);
    fr_rpc_reader_trim(r);
    assert_int_equal(fr_rpc_reader_capacity(r), 0);
    fr_rpc_reader_free(r);
    tr_stream_free(&s);
}

static void test_reader_random_chunks(void **state)
{
    (void)state;
    unsigned seed = tr_seed();
    for (int round = 0; round < 20; round++) {
        unsigned rs = seed + (unsigned)round;
        /* Limits from the least to a few hundred KiB, so that frames outgrow the read chunk. */
        int64_t max = FR_RPC_FRAME_BYTES_MIN + (int64_t)(rand_r(&rs) % (300 << 10));
        tr_stream s;
        tr_stream_make(&s, 40, (size_t)max - 8, max, rs);
        fr_error err;
        fr_rpc_reader *r;
        assert_int_equal(fr_rpc_reader_new(FR_RPC_REQUEST, max, &r, &err), 0);
        int seen = 0;
        size_t at = 0;
        while (at < s.bytes.len) {
            size_t chunk = 1 + (size_t)rand_r(&rs) % (size_t)(rand_r(&rs) % 2 ? 100 : 200000);
            if (chunk > s.bytes.len - at) chunk = s.bytes.len - at;
            if (rand_r(&rs) % 2) {
                size_t used;
                assert_int_equal(fr_rpc_reader_feed(r, s.bytes.data + at, chunk, &used, &err), 0);
                at += used;
            } else {
                uint8_t *p;
                size_t room;
                assert_int_equal(fr_rpc_reader_space(r, &p, &room, &err), 0);
                if (chunk > room) chunk = room;
                memcpy(p, s.bytes.data + at, chunk);
                fr_rpc_reader_commit(r, chunk);
                at += chunk;
            }
            seen = tr_drain(r, &s, seen, max);
        }
        if (seen != s.n) fail_msg("seed %u round %d: %d of %d frames", seed, round, seen, s.n);
        fr_rpc_reader_free(r);
        tr_stream_free(&s);
    }
}

static void test_reader_waiting_frames(void **state)
{
    (void)state;
    /* With frames left untaken the reader fills up and then takes no more bytes. */
    const int64_t max = FR_RPC_FRAME_BYTES_MIN;
    tr_stream s;
    tr_stream_make(&s, 400, 40, max, 99);
    fr_error err;
    fr_rpc_reader *r;
    assert_int_equal(fr_rpc_reader_new(FR_RPC_REQUEST, max, &r, &err), 0);
    size_t used;
    assert_int_equal(fr_rpc_reader_feed(r, s.bytes.data, s.bytes.len, &used, &err), 0);
    assert_true(used < s.bytes.len);
    assert_int_equal(used, fr_rpc_reader_capacity(r));
    assert_true(fr_rpc_reader_capacity(r) <= (size_t)max + 4);
    uint8_t *p;
    size_t room;
    assert_int_equal(fr_rpc_reader_space(r, &p, &room, &err), 0);
    assert_int_equal(room, 0);
    /* Taking the frames lets the rest in. */
    int seen = 0;
    size_t at = used;
    while (at < s.bytes.len) {
        seen = tr_drain(r, &s, seen, max);
        assert_int_equal(fr_rpc_reader_feed(r, s.bytes.data + at, s.bytes.len - at, &used, &err),
                         0);
        assert_true(used > 0);
        at += used;
    }
    seen = tr_drain(r, &s, seen, max);
    assert_int_equal(seen, s.n);
    fr_rpc_reader_free(r);
    tr_stream_free(&s);
}

static void test_reader_memory(void **state)
{
    (void)state;
    const int64_t max = 8 << 20;
    fr_error err;
    fr_rpc_reader *r;
    assert_int_equal(fr_rpc_reader_new(FR_RPC_REQUEST, max, &r, &err), 0);
    /* A header announcing 8 MiB, and 10 bytes of body: the buffer stays one read chunk. */
    uint8_t h[FR_RPC_REQUEST_HEADER_BYTES];
    assert_int_equal(fr_rpc_request_header_encode(h, 1, 0, 1, (size_t)max - 8, max, &err), 0);
    size_t used;
    assert_int_equal(fr_rpc_reader_feed(r, h, sizeof h, &used, &err), 0);
    uint8_t zeros[4096] = { 0 };
    assert_int_equal(fr_rpc_reader_feed(r, zeros, 10, &used, &err), 0);
    fr_rpc_frame f;
    assert_int_equal(fr_rpc_reader_next(r, &f, &err), 0);
    assert_int_equal(fr_rpc_reader_capacity(r), FR_RPC_READ_CHUNK_BYTES);
    /* It grows with what arrives, never past twice what is buffered, up to the frame. */
    size_t sent = sizeof h + 10;
    while (sent < (size_t)max + 4) {
        size_t k = (size_t)max + 4 - sent < sizeof zeros ? (size_t)max + 4 - sent : sizeof zeros;
        assert_int_equal(fr_rpc_reader_feed(r, zeros, k, &used, &err), 0);
        assert_int_equal(used, k);
        sent += k;
        assert_true(fr_rpc_reader_capacity(r) <= 2 * fr_rpc_reader_buffered(r) ||
                    fr_rpc_reader_capacity(r) == FR_RPC_READ_CHUNK_BYTES);
    }
    assert_int_equal(fr_rpc_reader_capacity(r), (size_t)max + 4);
    assert_int_equal(fr_rpc_reader_next(r, &f, &err), 1);
    assert_int_equal(f.body_len, (size_t)max - 8);
    assert_int_equal(fr_rpc_reader_next(r, &f, &err), 0);
    /* Once it is taken, the big buffer goes back at the next read, which is offered the
     * last frame's size, up to FR_RPC_READ_LEARN_BYTES. */
    uint8_t *p;
    size_t room;
    assert_int_equal(fr_rpc_reader_space(r, &p, &room, &err), 0);
    assert_int_equal(fr_rpc_reader_capacity(r), FR_RPC_READ_LEARN_BYTES);
    fr_rpc_reader_trim(r);
    assert_int_equal(fr_rpc_reader_capacity(r), 0);
    fr_rpc_reader_free(r);
}

/* Frames of one size, larger than a read chunk: from the second on, the reader offers a
 * buffer that holds the frame whole, and keep hands that buffer over rather than a copy. */
static void test_reader_learns_frame_size(void **state)
{
    (void)state;
    const size_t body = 3 * FR_RPC_READ_CHUNK_BYTES + 100;
    fr_error err;
    fr_rpc_reader *r;
    assert_int_equal(fr_rpc_reader_new(FR_RPC_REQUEST, 8 << 20, &r, &err), 0);
    uint8_t *frame = fr_calloc(1, FR_RPC_REQUEST_HEADER_BYTES + body);
    assert_non_null(frame);
    size_t total = FR_RPC_REQUEST_HEADER_BYTES + body;
    for (int i = 0; i < 3; i++) {
        assert_int_equal(fr_rpc_request_header_encode(frame, i + 1, 0, 1, body, 8 << 20, &err), 0);
        frame[total - 1] = (uint8_t)(i + 1);
        uint8_t *p;
        size_t room;
        assert_int_equal(fr_rpc_reader_space(r, &p, &room, &err), 0);
        assert_int_equal(room, i == 0 ? FR_RPC_READ_CHUNK_BYTES : total);
        size_t used;
        assert_int_equal(fr_rpc_reader_feed(r, frame, total, &used, &err), 0);
        assert_int_equal(used, total);
        fr_rpc_frame f;
        assert_int_equal(fr_rpc_reader_next(r, &f, &err), 1);
        assert_int_equal(f.body_len, body);
        uint8_t *kept_body = NULL;
        uint8_t *block = fr_rpc_reader_keep(r, &f, &kept_body);
        assert_non_null(block);
        assert_ptr_equal(kept_body, f.body); /* the buffer itself, not a copy */
        assert_int_equal(kept_body[body - 1], i + 1);
        assert_int_equal(fr_rpc_reader_capacity(r), 0);
        fr_free(block);
    }
    fr_free(frame);
    fr_rpc_reader_free(r);
}

/* A reader with a pool receives into the buffers given back to it: a large frame's buffer,
 * kept and given back, holds the next frame, at the same address. Frames still come out
 * whole and in order, and small frames are copied out, their copies' sizes told. */
static void test_reader_pool(void **state)
{
    (void)state;
    const size_t body = 2 * FR_RPC_READ_CHUNK_BYTES;
    const size_t total = FR_RPC_REQUEST_HEADER_BYTES + body;
    fr_error err;
    fr_bufpool *pool = fr_bufpool_new(4 * total);
    fr_rpc_reader *r;
    assert_int_equal(fr_rpc_reader_new(FR_RPC_REQUEST, 8 << 20, &r, &err), 0);
    fr_rpc_reader_set_pool(r, pool);
    uint8_t *frame = fr_calloc(1, total);
    assert_non_null(frame);
    uint8_t *last = NULL;
    for (int i = 0; i < 4; i++) {
        assert_int_equal(fr_rpc_request_header_encode(frame, i + 1, 0, 1, body, 8 << 20, &err), 0);
        frame[total - 1] = (uint8_t)(i + 1);
        size_t used;
        assert_int_equal(fr_rpc_reader_feed(r, frame, total, &used, &err), 0);
        assert_int_equal(used, total);
        fr_rpc_frame f;
        assert_int_equal(fr_rpc_reader_next(r, &f, &err), 1);
        uint8_t *kept_body = NULL;
        uint8_t *block = fr_rpc_reader_keep(r, &f, &kept_body);
        assert_non_null(block);
        assert_int_equal(kept_body[body - 1], i + 1);
        if (i >= 2) assert_ptr_equal(block, last); /* the buffer given back the time before */
        last = block;
        fr_buf b = {.data = block, .len = 0, .cap = fr_rpc_reader_kept_cap(r)};
        assert_true(b.cap >= total);
        fr_bufpool_give(pool, &b);
    }
    /* A small frame after a large one is copied out of the pooled buffer. */
    assert_int_equal(fr_rpc_request_header_encode(frame, 9, 0, 1, 10, 8 << 20, &err), 0);
    size_t used;
    assert_int_equal(fr_rpc_reader_feed(r, frame, FR_RPC_REQUEST_HEADER_BYTES + 10, &used, &err),
                     0);
    fr_rpc_frame f;
    assert_int_equal(fr_rpc_reader_next(r, &f, &err), 1);
    uint8_t *kept_body = NULL;
    uint8_t *block = fr_rpc_reader_keep(r, &f, &kept_body);
    assert_ptr_equal(block, kept_body);
    assert_int_equal(fr_rpc_reader_kept_cap(r), 10);
    fr_free(block);
    fr_rpc_reader_trim(r);
    assert_int_equal(fr_rpc_reader_capacity(r), 0);
    assert_true(fr_bufpool_kept_bytes(pool) >= total);
    fr_rpc_reader_free(r);
    fr_bufpool_free(pool);
    fr_free(frame);
}

/* A reader of responses grows to a frame's size as soon as its length is known, into a
 * pooled buffer when one is large enough, keeping the bytes it had, and not again after. */
static void test_reader_response_growth(void **state)
{
    (void)state;
    const size_t body = 40 * FR_RPC_READ_CHUNK_BYTES + 5;
    const size_t total = FR_RPC_RESPONSE_HEADER_BYTES + body;
    fr_error err;
    fr_bufpool *pool = fr_bufpool_new(2 * total);
    fr_buf spare = {.data = fr_malloc(total + 100), .len = 0, .cap = total + 100};
    uint8_t *spare_data = spare.data;
    assert_non_null(spare_data);
    fr_bufpool_give(pool, &spare);
    fr_rpc_reader *r;
    assert_int_equal(fr_rpc_reader_new(FR_RPC_RESPONSE, 8 << 20, &r, &err), 0);
    uint8_t *frame = fr_calloc(1, total);
    assert_non_null(frame);
    assert_int_equal(fr_rpc_response_header_encode(frame, FR_RPC_SUCCESS, 5, body, 8 << 20, &err),
                     0);
    for (size_t i = 0; i < body; i++) frame[FR_RPC_RESPONSE_HEADER_BYTES + i] = (uint8_t)(i * 7);
    /* The first read, before the pool is set: a chunk. */
    size_t used;
    assert_int_equal(fr_rpc_reader_feed(r, frame, 1000, &used, &err), 0);
    assert_int_equal(fr_rpc_reader_capacity(r), FR_RPC_READ_CHUNK_BYTES);
    fr_rpc_reader_set_pool(r, pool);
    uint8_t *p;
    size_t room;
    assert_int_equal(fr_rpc_reader_space(r, &p, &room, &err), 0);
    assert_int_equal(fr_rpc_reader_capacity(r), total + 100); /* the pool's buffer */
    assert_ptr_equal(p, spare_data + 1000);
    assert_int_equal(fr_rpc_reader_feed(r, frame + 1000, total - 1000, &used, &err), 0);
    assert_int_equal(used, total - 1000);
    assert_int_equal(fr_rpc_reader_capacity(r), total + 100);
    fr_rpc_frame f;
    assert_int_equal(fr_rpc_reader_next(r, &f, &err), 1);
    assert_int_equal(f.body_len, body);
    assert_memory_equal(f.body, frame + FR_RPC_RESPONSE_HEADER_BYTES, body);
    /* Without a pooled buffer: grown once, to the frame, by realloc. */
    fr_rpc_reader_trim(r);
    fr_rpc_reader_set_pool(r, NULL);
    assert_int_equal(fr_rpc_reader_feed(r, frame, 1000, &used, &err), 0);
    assert_int_equal(fr_rpc_reader_space(r, &p, &room, &err), 0);
    assert_int_equal(fr_rpc_reader_capacity(r), total);
    assert_int_equal(fr_rpc_reader_feed(r, frame + 1000, total - 1000, &used, &err), 0);
    assert_int_equal(fr_rpc_reader_next(r, &f, &err), 1);
    assert_memory_equal(f.body, frame + FR_RPC_RESPONSE_HEADER_BYTES, body);
    fr_rpc_reader_free(r);
    fr_bufpool_free(pool);
    fr_free(frame);
}

static void test_reader_bad_lengths(void **state)
{
    (void)state;
    const uint8_t *bad[] = {
        (const uint8_t *)"\x00\x00\x10\x01", /* 4097 > 4096: over the limit */
        (const uint8_t *)"\xff\xff\xff\xff", /* -1 */
        (const uint8_t *)"\x80\x00\x00\x00", /* INT32_MIN */
        (const uint8_t *)"\x00\x00\x00\x03", /* shorter than a header */
    };
    const int codes[] = { FR_ELIMIT, FR_ECORRUPT, FR_ECORRUPT, FR_ECORRUPT };
    for (int i = 0; i < 4; i++) {
        fr_error err;
        fr_rpc_reader *r;
        assert_int_equal(fr_rpc_reader_new(FR_RPC_REQUEST, 4096, &r, &err), 0);
        /* A good frame first: it is delivered before the bad length is seen. */
        uint8_t good[FR_RPC_REQUEST_HEADER_BYTES];
        assert_int_equal(fr_rpc_request_header_encode(good, 0, 0, 5, 0, 4096, &err), 0);
        size_t used;
        assert_int_equal(fr_rpc_reader_feed(r, good, sizeof good, &used, &err), 0);
        assert_int_equal(fr_rpc_reader_feed(r, bad[i], 3, &used, &err), 0);
        fr_rpc_frame f;
        assert_int_equal(fr_rpc_reader_next(r, &f, &err), 1);
        assert_int_equal(f.request_id, 5);
        assert_int_equal(fr_rpc_reader_next(r, &f, &err), 0);
        /* The fourth length byte makes it bad: space refuses before any body is read. */
        assert_int_equal(fr_rpc_reader_feed(r, bad[i] + 3, 1, &used, &err), 0);
        uint8_t *p;
        size_t room;
        assert_int_equal(fr_rpc_reader_space(r, &p, &room, &err), codes[i]);
        assert_int_equal(fr_rpc_reader_next(r, &f, &err), codes[i]);
        assert_msg_has(err, "request frame length");
        /* And stays failed. */
        assert_int_equal(fr_rpc_reader_feed(r, good, sizeof good, &used, &err), codes[i]);
        assert_int_equal(fr_rpc_reader_next(r, &f, NULL), codes[i]);
        assert_true(fr_rpc_reader_capacity(r) <= 4096 + 4);
        fr_rpc_reader_free(r);
    }
    /* A whole frame whose header is bad (negative request id) fails the reader too. */
    fr_error err;
    fr_rpc_reader *r;
    assert_int_equal(fr_rpc_reader_new(FR_RPC_REQUEST, 4096, &r, &err), 0);
    size_t used;
    assert_int_equal(fr_rpc_reader_feed(r, (const uint8_t *)"\0\0\0\x08\0\0\0\0\xff\xff\xff\xf0",
                                        12, &used, &err),
                     0);
    fr_rpc_frame f;
    assert_int_equal(fr_rpc_reader_next(r, &f, &err), FR_ECORRUPT);
    assert_int_equal(fr_rpc_reader_next(r, &f, &err), FR_ECORRUPT);
    fr_rpc_reader_free(r);
}

static void test_reader_responses(void **state)
{
    (void)state;
    fr_error err;
    fr_buf out;
    fr_buf_init(&out);
    Firth__ExecuteSqlResponse part = FIRTH__EXECUTE_SQL_RESPONSE__INIT;
    uint8_t ipc[300];
    for (size_t i = 0; i < sizeof ipc; i++) ipc[i] = (uint8_t)i;
    part.arrow_ipc.data = ipc;
    part.arrow_ipc.len = sizeof ipc;
    part.rows = 3;
    for (int i = 0; i < 5; i++)
        assert_int_equal(fr_rpc_write_response(&out, FR_RPC_PART, 77, &part.base, 4096, &err), 0);
    Firth__ExecuteSqlResponse last = FIRTH__EXECUTE_SQL_RESPONSE__INIT;
    last.statement_done = true;
    last.database = "default";
    assert_int_equal(fr_rpc_write_response(&out, FR_RPC_SUCCESS, 77, &last.base, 4096, &err), 0);

    fr_rpc_reader *r;
    assert_int_equal(fr_rpc_reader_new(FR_RPC_RESPONSE, 4096, &r, &err), 0);
    size_t used;
    assert_int_equal(fr_rpc_reader_feed(r, out.data, out.len, &used, &err), 0);
    assert_int_equal(used, out.len);
    fr_rpc_frame f;
    for (int i = 0; i < 6; i++) {
        assert_int_equal(fr_rpc_reader_next(r, &f, &err), 1);
        assert_int_equal(f.request_id, 77);
        assert_int_equal(f.result, i < 5 ? FR_RPC_PART : FR_RPC_SUCCESS);
        ProtobufCMessage *m;
        assert_int_equal(fr_rpc_response_unpack(FR_RPC_EXECUTE_SQL, &f, &m, &err), 0);
        Firth__ExecuteSqlResponse *got = (Firth__ExecuteSqlResponse *)m;
        if (i < 5) {
            assert_int_equal(got->arrow_ipc.len, sizeof ipc);
            assert_memory_equal(got->arrow_ipc.data, ipc, sizeof ipc);
            assert_int_equal(got->rows, 3);
        } else {
            assert_true(got->statement_done);
            assert_string_equal(got->database, "default");
        }
        fr_rpc_free(m);
        /* PART is for streaming apis only. */
        if (i == 0) assert_int_equal(fr_rpc_response_unpack(FR_RPC_LOOKUP, &f, &m, &err), FR_ECORRUPT);
    }
    assert_int_equal(fr_rpc_reader_next(r, &f, &err), 0);
    fr_rpc_reader_free(r);
    fr_buf_free(&out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_request_header_bytes), cmocka_unit_test(test_response_header_bytes),
        cmocka_unit_test(test_header_decode_rejects), cmocka_unit_test(test_frame_length_limits),
        cmocka_unit_test(test_write_frames),          cmocka_unit_test(test_reader_byte_by_byte),
        cmocka_unit_test(test_reader_random_chunks),  cmocka_unit_test(test_reader_waiting_frames),
        cmocka_unit_test(test_reader_memory),         cmocka_unit_test(test_reader_learns_frame_size),
        cmocka_unit_test(test_reader_bad_lengths),    cmocka_unit_test(test_reader_pool),
        cmocka_unit_test(test_reader_responses),      cmocka_unit_test(test_reader_response_growth),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
