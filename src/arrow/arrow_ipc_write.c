/* arrow_ipc_write.c — encoding RecordBatch messages and the end-of-stream marker, and the
 * frame and Message table every message starts with (the Schema message uses them too).
 *
 * A message is written in one pass into the caller's buffer: the metadata first, with the
 * buffer table left to patch (its size does not depend on the buffers' lengths), then each
 * column buffer compressed straight into place after it, then the buffer table and body
 * length patched. Body buffers start on 8-byte boundaries, as the IPC format requires. */
#include "arrow/arrow_internal.h"

/* The 8-byte frame of a message: the continuation marker and a metadata length of 0, which
 * is the end-of-stream marker as it stands and a placeholder in front of a message. */
static int fr_ipc_put_frame(fr_buf *out, fr_error *err)
{
    uint8_t frame[8];
    fr_put_u32le(frame, FR_IPC_CONTINUATION);
    fr_put_u32le(frame + 4, 0);
    return fr_buf_append(out, frame, 8, err);
}

int fr_ipc_message_begin(fr_buf *out, fr_fbw *w, uint8_t header_type, int64_t body_length,
                         size_t msg_at[4], fr_error *err)
{
    FR_TRY(fr_ipc_put_frame(out, err));
    fr_fbw_init(w, out, err);
    fr_fbf msg[4] = {{0, 2, FR_IPC_V5}, {1, 1, header_type}, {2, 0, 0},
                     {3, 8, (uint64_t)body_length}};
    fr_fbw_patch(w, 0, fr_fbw_table(w, msg, 4, msg_at));
    return 0;
}

int fr_ipc_message_end(fr_buf *out, size_t start, fr_fbw *w)
{
    int rc = fr_fbw_finish(w);
    if (rc < 0) {
        out->len = start;
        return rc;
    }
    fr_put_u32le(out->data + start + 4, (uint32_t)(out->len - start - 8));
    return 0;
}

int fr_ipc_write_batch_header(fr_buf *out, int64_t rows, const fr_ipc_node *nodes, int nnodes,
                              const fr_ipc_buffer *buffers, int nbuffers, int64_t body_length,
                              fr_compression codec, size_t *nodes_at, size_t *buffers_at,
                              size_t *body_length_at, fr_error *err)
{
    size_t start = out->len;
    fr_fbw w;
    size_t msg_at[4];
    FR_TRY(fr_ipc_message_begin(out, &w, FR_IPC_HDR_RECORD_BATCH, body_length, msg_at, err));
    fr_fbf rb[4] = {{0, 8, (uint64_t)rows}, {1, 0, 0}, {2, 0, 0}, {3, 0, 0}};
    size_t rb_at[4];
    fr_fbw_patch(&w, msg_at[2], fr_fbw_table(&w, rb, codec == FR_COMPRESSION_NONE ? 3 : 4, rb_at));
    /* FieldNode and Buffer are structs of two little-endian int64, like fr_ipc_node and
     * fr_ipc_buffer on the (little-endian) hosts firth supports. */
    _Static_assert(sizeof(fr_ipc_node) == 16 && sizeof(fr_ipc_buffer) == 16, "IPC structs are 16 bytes");
    size_t nodes_pos = fr_fbw_vector(&w, (size_t)nnodes, 16, 8, nodes);
    fr_fbw_patch(&w, rb_at[1], nodes_pos);
    size_t bufs = fr_fbw_vector(&w, (size_t)nbuffers, 16, 8, buffers);
    fr_fbw_patch(&w, rb_at[2], bufs);
    if (codec != FR_COMPRESSION_NONE) {
        fr_fbf bc[2] = {{0, 1, codec == FR_COMPRESSION_LZ4_FRAME ? 0 : 1}, {1, 1, 0 /* BUFFER */}};
        fr_fbw_patch(&w, rb_at[3], fr_fbw_table(&w, bc, 2, NULL));
    }
    FR_TRY(fr_ipc_message_end(out, start, &w));
    if (nodes_at) *nodes_at = w.base + nodes_pos + 4;
    if (buffers_at) *buffers_at = w.base + bufs + 4;
    if (body_length_at) *body_length_at = w.base + msg_at[3];
    return 0;
}

/* Appends one body buffer (compressed when codec says so) and records it in the buffer
 * table at buffers_at + 16 * index. */
static int fr_ipc_put_buffer(fr_buf *out, size_t body_at, size_t buffers_at, int index,
                             const uint8_t *data, size_t n, fr_compression codec, fr_error *err)
{
    size_t offset = out->len - body_at, length = n;
    if (n > 0 && codec == FR_COMPRESSION_NONE) {
        FR_TRY(fr_buf_append(out, data, n, err));
    } else if (n > 0) {
        size_t bound = fr_codec_bound(codec, n);
        FR_TRY(fr_buf_reserve(out, 8 + (bound > n ? bound : n) + 8, err));
        uint8_t *dst = out->data + out->len;
        size_t clen;
        FR_TRY(fr_codec_compress(codec, data, n, dst + 8, bound, &clen, err));
        if (clen < n) {
            fr_put_u64le(dst, (uint64_t)n);
            length = 8 + clen;
        } else {
            /* Compression did not help: store the bytes as they are, marked by length -1. */
            fr_put_u64le(dst, UINT64_MAX);
            memcpy(dst + 8, data, n);
            length = 8 + n;
        }
        out->len += length;
    }
    FR_TRY(fr_buf_pad(out, 8, err));
    uint8_t *entry = out->data + buffers_at + 16 * (size_t)index;
    fr_put_u64le(entry, offset);
    fr_put_u64le(entry + 8, length);
    return 0;
}

/* The most bytes one body buffer of n bytes takes: the length prefix and the larger of the
 * compressed bound and the raw bytes (stored when compression does not help), padded. */
static size_t fr_ipc_buffer_bound(size_t n, fr_compression codec)
{
    if (n == 0) return 0;
    if (codec == FR_COMPRESSION_NONE) return n + 7;
    size_t bound = fr_codec_bound(codec, n);
    return 8 + (bound > n ? bound : n) + 8;
}

/* The most bytes the body of b takes (an upper bound, used to reserve it at once). */
static size_t fr_ipc_body_bound(const fr_batch *b, fr_compression codec)
{
    size_t total = 0;
    for (int i = 0; i < b->ncols; i++) {
        const fr_column *c = &b->cols[i];
        int64_t rows = b->rows;
        total += fr_ipc_buffer_bound(c->null_count > 0 ? (size_t)fr_bitmap_bytes(rows) : 0, codec);
        switch (fr_arrow_phys(&c->type)) {
        case FR_PHYS_BOOL: total += fr_ipc_buffer_bound((size_t)fr_bitmap_bytes(rows), codec); break;
        case FR_PHYS_FIXED:
            total += fr_ipc_buffer_bound((size_t)rows * (size_t)fr_arrow_width(&c->type), codec);
            break;
        case FR_PHYS_VAR:
            total += fr_ipc_buffer_bound(4 * (size_t)(rows + 1), codec);
            total += fr_ipc_buffer_bound((size_t)c->offsets[rows], codec);
            break;
        }
    }
    return total;
}

int fr_ipc_write_batch(const fr_batch *b, fr_compression codec, fr_buf *out, fr_error *err)
{
    size_t start = out->len, nodes_at, buffers_at, body_length_at;
    int nbuffers = 0;
    for (int i = 0; i < b->ncols; i++) nbuffers += fr_arrow_nbuffers(&b->cols[i].type);
    int rc = fr_ipc_write_batch_header(out, b->rows, NULL, b->ncols, NULL, nbuffers, 0, codec,
                                       &nodes_at, &buffers_at, &body_length_at, err);
    if (rc < 0) return rc;
    for (int i = 0; i < b->ncols; i++) {
        fr_put_u64le(out->data + nodes_at + 16 * (size_t)i, (uint64_t)b->rows);
        fr_put_u64le(out->data + nodes_at + 16 * (size_t)i + 8, (uint64_t)b->cols[i].null_count);
    }
    /* One reservation for the whole body, so that the buffer does not grow (and copy what
     * it holds) once per column buffer. */
    FR_GOTO(fr_buf_reserve(out, fr_ipc_body_bound(b, codec), err));
    size_t body_at = out->len;
    for (int i = 0, k = 0; i < b->ncols; i++) {
        const fr_column *c = &b->cols[i];
        int64_t rows = b->rows;
        size_t validity = c->null_count > 0 ? (size_t)fr_bitmap_bytes(rows) : 0;
        FR_GOTO(fr_ipc_put_buffer(out, body_at, buffers_at, k++, c->validity, validity, codec, err));
        switch (fr_arrow_phys(&c->type)) {
        case FR_PHYS_BOOL:
            FR_GOTO(fr_ipc_put_buffer(out, body_at, buffers_at, k++, c->values,
                                      (size_t)fr_bitmap_bytes(rows), codec, err));
            break;
        case FR_PHYS_FIXED:
            FR_GOTO(fr_ipc_put_buffer(out, body_at, buffers_at, k++, c->values,
                                      (size_t)rows * (size_t)fr_arrow_width(&c->type), codec, err));
            break;
        case FR_PHYS_VAR:
            FR_GOTO(fr_ipc_put_buffer(out, body_at, buffers_at, k++, (const uint8_t *)c->offsets,
                                      4 * (size_t)(rows + 1), codec, err));
            FR_GOTO(fr_ipc_put_buffer(out, body_at, buffers_at, k++, c->values,
                                      (size_t)c->offsets[rows], codec, err));
            break;
        }
    }
    fr_put_u64le(out->data + body_length_at, (uint64_t)(out->len - body_at));
    return 0;
fail:
    out->len = start;
    return rc;
}

int fr_ipc_write_eos(fr_buf *out, fr_error *err)
{
    return fr_ipc_put_frame(out, err);
}
