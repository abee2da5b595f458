/* rpc_frame.c — the frame header, byte by byte (docs/PROTOCOL.md, section 2): encoding,
 * decoding with every length checked, and whole frames written into a buffer.
 *
 * Invariants: a length field written or accepted is within header..frame_bytes_max; a
 * request id in a request is >= 0; a response's request id is >= 0, or -1 with ERROR. */
#include "rpc/rpc.h"

#include <assert.h>

_Static_assert(FR_RPC_REQUEST_HEADER_BYTES == 4 + 2 + 2 + 4, "request header layout");
_Static_assert(FR_RPC_RESPONSE_HEADER_BYTES == 4 + 1 + 4, "response header layout");
_Static_assert(FR_RPC_FRAME_BYTES_MAX_DEFAULT <= INT32_MAX, "the length field is an int32");

static void fr_put_be16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}
static void fr_put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}
static uint16_t fr_get_be16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}
static uint32_t fr_get_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static const char *fr_rpc_dir_name(fr_rpc_direction d)
{
    return d == FR_RPC_REQUEST ? "request" : "response";
}

int fr_rpc_check_frame_limit(int64_t frame_bytes_max, fr_error *err)
{
    FR_CHECK(frame_bytes_max >= FR_RPC_FRAME_BYTES_MIN && frame_bytes_max <= INT32_MAX, FR_EINVAL,
             err, "frame_bytes_max %lld is outside %d..%d", (long long)frame_bytes_max,
             FR_RPC_FRAME_BYTES_MIN, INT32_MAX);
    return 0;
}

/* The length field for body_len bytes of body after a header of hdr bytes. */
static int fr_rpc_length_for(fr_rpc_direction d, size_t body_len, int64_t frame_bytes_max,
                             int32_t *length, fr_error *err)
{
    size_t rest = fr_rpc_header_bytes(d) - 4;
    FR_CHECK(body_len <= (size_t)frame_bytes_max - rest, FR_ELIMIT, err,
             "a %s frame of %zu bytes exceeds frame_bytes_max (%lld bytes)", fr_rpc_dir_name(d),
             body_len + rest, (long long)frame_bytes_max);
    *length = (int32_t)(body_len + rest);
    return 0;
}

int fr_rpc_request_header_encode(uint8_t out[FR_RPC_REQUEST_HEADER_BYTES], int api_key,
                                 int api_version, int32_t request_id, size_t body_len,
                                 int64_t frame_bytes_max, fr_error *err)
{
    FR_TRY(fr_rpc_check_frame_limit(frame_bytes_max, err));
    FR_CHECK(api_key >= 0 && api_key <= INT16_MAX && api_version >= 0 && api_version <= INT16_MAX,
             FR_EINVAL, err, "api key %d or version %d is outside 0..32767", api_key, api_version);
    FR_CHECK(request_id >= 0, FR_EINVAL, err, "request id %d is negative", (int)request_id);
    int32_t length = 0;
    FR_TRY(fr_rpc_length_for(FR_RPC_REQUEST, body_len, frame_bytes_max, &length, err));
    fr_put_be32(out, (uint32_t)length);
    fr_put_be16(out + 4, (uint16_t)api_key);
    fr_put_be16(out + 6, (uint16_t)api_version);
    fr_put_be32(out + 8, (uint32_t)request_id);
    return 0;
}

/* code: FR_EINVAL when encoding (a caller's mistake), FR_ECORRUPT when decoding. */
static int fr_rpc_check_response(fr_rpc_result result, int32_t request_id, int code, fr_error *err)
{
    FR_CHECK(result == FR_RPC_SUCCESS || result == FR_RPC_ERROR || result == FR_RPC_PART, code, err,
             "response result type %d is not 0, 1 or 2", (int)result);
    FR_CHECK(request_id >= 0 ||
                 (request_id == FR_RPC_CONNECTION_REQUEST_ID && result == FR_RPC_ERROR),
             code, err, "response request id %d with result type %d", (int)request_id, (int)result);
    return 0;
}

int fr_rpc_response_header_encode(uint8_t out[FR_RPC_RESPONSE_HEADER_BYTES], fr_rpc_result result,
                                  int32_t request_id, size_t body_len, int64_t frame_bytes_max,
                                  fr_error *err)
{
    FR_TRY(fr_rpc_check_frame_limit(frame_bytes_max, err));
    FR_TRY(fr_rpc_check_response(result, request_id, FR_EINVAL, err));
    int32_t length = 0;
    FR_TRY(fr_rpc_length_for(FR_RPC_RESPONSE, body_len, frame_bytes_max, &length, err));
    fr_put_be32(out, (uint32_t)length);
    out[4] = (uint8_t)result;
    fr_put_be32(out + 5, (uint32_t)request_id);
    return 0;
}

int fr_rpc_frame_length(fr_rpc_direction d, const uint8_t p[4], int64_t frame_bytes_max,
                        int32_t *length, fr_error *err)
{
    int32_t len = (int32_t)fr_get_be32(p);
    int32_t least = (int32_t)fr_rpc_header_bytes(d) - 4;
    FR_CHECK(len >= 0, FR_ECORRUPT, err,
             "%s frame length %d is negative (length bytes %02x %02x %02x %02x)",
             fr_rpc_dir_name(d), (int)len, p[0], p[1], p[2], p[3]);
    FR_CHECK(len >= least, FR_ECORRUPT, err,
             "%s frame length %d is shorter than the %d header bytes after it", fr_rpc_dir_name(d),
             (int)len, (int)least);
    FR_CHECK(len <= frame_bytes_max, FR_ELIMIT, err,
             "%s frame length %d exceeds frame_bytes_max (%lld bytes)", fr_rpc_dir_name(d),
             (int)len, (long long)frame_bytes_max);
    *length = len;
    return 0;
}

int fr_rpc_frame_decode(fr_rpc_direction d, const uint8_t *p, size_t n, int64_t frame_bytes_max,
                        fr_rpc_frame *out, fr_error *err)
{
    FR_CHECK(n >= 4, FR_ECORRUPT, err, "%s frame of %zu bytes has no length", fr_rpc_dir_name(d),
             n);
    int32_t length;
    FR_TRY(fr_rpc_frame_length(d, p, frame_bytes_max, &length, err));
    FR_CHECK((size_t)length + 4 == n, FR_ECORRUPT, err,
             "%s frame length %d does not match the %zu bytes given", fr_rpc_dir_name(d),
             (int)length, n);
    memset(out, 0, sizeof *out);
    out->direction = d;
    if (d == FR_RPC_REQUEST) {
        out->api_key = (int16_t)fr_get_be16(p + 4);
        out->api_version = (int16_t)fr_get_be16(p + 6);
        out->request_id = (int32_t)fr_get_be32(p + 8);
        FR_CHECK(out->request_id >= 0, FR_ECORRUPT, err, "request id %d is negative",
                 (int)out->request_id);
    } else {
        out->result = (fr_rpc_result)(int8_t)p[4];
        out->request_id = (int32_t)fr_get_be32(p + 5);
        FR_TRY(fr_rpc_check_response(out->result, out->request_id, FR_ECORRUPT, err));
    }
    out->body = p + fr_rpc_header_bytes(d);
    out->body_len = n - fr_rpc_header_bytes(d);
    return 0;
}

/* Appends a header of hdr_len bytes (already encoded) and m packed. */
static int fr_rpc_append_frame(fr_buf *out, const uint8_t *hdr, size_t hdr_len,
                               const ProtobufCMessage *m, size_t body_len, fr_error *err)
{
    FR_TRY(fr_buf_reserve(out, hdr_len + body_len, err));
    memcpy(out->data + out->len, hdr, hdr_len);
    size_t packed = protobuf_c_message_pack(m, out->data + out->len + hdr_len);
    assert(packed == body_len);
    out->len += hdr_len + packed;
    return 0;
}

/* The header of a request frame carrying body, whose packed size goes to *body_len. */
static int request_head(fr_rpc_api api, int api_version, int32_t request_id,
                        const ProtobufCMessage *body, int64_t frame_bytes_max,
                        uint8_t hdr[FR_RPC_REQUEST_HEADER_BYTES], size_t *body_len,
                        fr_error *err)
{
    const fr_rpc_api_info *info = fr_rpc_api_lookup((int)api);
    assert(info && body->descriptor == info->request);
    (void)info;
    *body_len = protobuf_c_message_get_packed_size(body);
    return fr_rpc_request_header_encode(hdr, (int)api, api_version, request_id, *body_len,
                                        frame_bytes_max, err);
}

/* The header of a response frame carrying body, whose packed size goes to *body_len. */
static int response_head(fr_rpc_result result, int32_t request_id, const ProtobufCMessage *body,
                         int64_t frame_bytes_max, uint8_t hdr[FR_RPC_RESPONSE_HEADER_BYTES],
                         size_t *body_len, fr_error *err)
{
    assert((result == FR_RPC_ERROR) == (body->descriptor == &firth__error__descriptor));
    *body_len = protobuf_c_message_get_packed_size(body);
    return fr_rpc_response_header_encode(hdr, result, request_id, *body_len, frame_bytes_max,
                                         err);
}

int fr_rpc_write_request(fr_buf *out, fr_rpc_api api, int api_version, int32_t request_id,
                         const ProtobufCMessage *body, int64_t frame_bytes_max, fr_error *err)
{
    size_t body_len;
    uint8_t hdr[FR_RPC_REQUEST_HEADER_BYTES];
    FR_TRY(request_head(api, api_version, request_id, body, frame_bytes_max, hdr, &body_len, err));
    return fr_rpc_append_frame(out, hdr, sizeof hdr, body, body_len, err);
}

/* ---- request frames that reference their large bytes -------------------------------------- */

/* protobuf-c hands a bytes field's data to the buffer's append in one piece: a piece of at
 * least this many bytes is referenced, smaller ones are copied. */
#define FR_RPC_GATHER_REF_BYTES 4096

typedef struct fr_rpc_gather_sink {
    ProtobufCBuffer base; /* first: protobuf-c calls append with its address */
    fr_rpc_gather *g;
    int failed;
} fr_rpc_gather_sink;

static int fr_rpc_gather_part(fr_rpc_gather *g, size_t off, const uint8_t *ext, size_t len)
{
    if (g->nparts == g->cap) {
        int ncap = g->cap ? 2 * g->cap : 8;
        fr_rpc_gather_part_t *np = fr_realloc(g->parts, (size_t)ncap * sizeof *np);
        if (!np) return FR_ENOMEM;
        g->parts = np;
        g->cap = ncap;
    }
    g->parts[g->nparts++] = (fr_rpc_gather_part_t){off, ext, len};
    return FR_OK;
}

static void fr_rpc_gather_append(ProtobufCBuffer *b, size_t len, const uint8_t *data)
{
    fr_rpc_gather_sink *sink = (fr_rpc_gather_sink *)b;
    fr_rpc_gather *g = sink->g;
    if (sink->failed || len == 0) return;
    int rc;
    if (len >= FR_RPC_GATHER_REF_BYTES) {
        rc = fr_rpc_gather_part(g, 0, data, len);
    } else {
        /* Extends the last copied part, or starts one. */
        size_t off = g->copied.len;
        rc = fr_buf_append(&g->copied, data, len, NULL);
        if (rc == FR_OK) {
            fr_rpc_gather_part_t *last = g->nparts ? &g->parts[g->nparts - 1] : NULL;
            if (last && !last->ext && last->off + last->len == off) last->len += len;
            else rc = fr_rpc_gather_part(g, off, NULL, len);
        }
    }
    if (rc < 0) sink->failed = rc;
    else g->total += len;
}

void fr_rpc_gather_init(fr_rpc_gather *g)
{
    memset(g, 0, sizeof *g);
    fr_buf_init(&g->copied);
}

void fr_rpc_gather_free(fr_rpc_gather *g)
{
    fr_buf_free(&g->copied);
    fr_free(g->parts);
    fr_free(g->iov);
    memset(g, 0, sizeof *g);
}

/* The frame hdr + body into an empty g, large bytes fields referenced. */
static int gather_frame(fr_rpc_gather *g, const uint8_t *hdr, size_t hdr_len,
                        const ProtobufCMessage *body, size_t body_len, fr_error *err)
{
    fr_rpc_gather_sink sink = {.base = {.append = fr_rpc_gather_append}, .g = g};
    fr_rpc_gather_append(&sink.base, hdr_len, hdr);
    size_t packed = protobuf_c_message_pack_to_buffer(body, &sink.base);
    FR_CHECK(!sink.failed, FR_ENOMEM, err, "out of memory writing a frame of %zu bytes",
             body_len);
    assert(packed == body_len);
    (void)packed;
    /* The iovecs, now that the copied bytes no longer move. */
    fr_free(g->iov);
    g->iov = fr_malloc(((size_t)g->nparts + 1) * sizeof *g->iov);
    FR_CHECK(g->iov, FR_ENOMEM, err, "out of memory writing a frame of %zu bytes", body_len);
    for (int i = 0; i < g->nparts; i++) {
        const fr_rpc_gather_part_t *pt = &g->parts[i];
        g->iov[i].iov_base = (void *)(pt->ext ? pt->ext : g->copied.data + pt->off);
        g->iov[i].iov_len = pt->len;
    }
    g->niov = g->nparts;
    return 0;
}

int fr_rpc_write_request_gather(fr_rpc_gather *g, fr_rpc_api api, int api_version,
                                int32_t request_id, const ProtobufCMessage *body,
                                int64_t frame_bytes_max, fr_error *err)
{
    size_t body_len;
    uint8_t hdr[FR_RPC_REQUEST_HEADER_BYTES];
    FR_TRY(request_head(api, api_version, request_id, body, frame_bytes_max, hdr, &body_len, err));
    return gather_frame(g, hdr, sizeof hdr, body, body_len, err);
}

int fr_rpc_write_response_gather(fr_rpc_gather *g, fr_rpc_result result, int32_t request_id,
                                 const ProtobufCMessage *body, int64_t frame_bytes_max,
                                 fr_error *err)
{
    size_t body_len;
    uint8_t hdr[FR_RPC_RESPONSE_HEADER_BYTES];
    FR_TRY(response_head(result, request_id, body, frame_bytes_max, hdr, &body_len, err));
    return gather_frame(g, hdr, sizeof hdr, body, body_len, err);
}

int fr_rpc_write_response(fr_buf *out, fr_rpc_result result, int32_t request_id,
                          const ProtobufCMessage *body, int64_t frame_bytes_max, fr_error *err)
{
    size_t body_len;
    uint8_t hdr[FR_RPC_RESPONSE_HEADER_BYTES];
    FR_TRY(response_head(result, request_id, body, frame_bytes_max, hdr, &body_len, err));
    return fr_rpc_append_frame(out, hdr, sizeof hdr, body, body_len, err);
}

int fr_rpc_write_error(fr_buf *out, int32_t request_id, Firth__ErrorCode code,
                       const fr_error *failure, fr_error *err)
{
    Firth__Error e = FIRTH__ERROR__INIT;
    fr_rpc_error_set(&e, failure);
    if (code != FIRTH__ERROR_CODE__NONE) e.code = code;
    /* The message is at most FR_ERROR_MSG_MAX bytes, far below FR_RPC_FRAME_BYTES_MIN. */
    return fr_rpc_write_response(out, FR_RPC_ERROR, request_id, &e.base, FR_RPC_FRAME_BYTES_MIN,
                                 err);
}
