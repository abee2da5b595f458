/* fuzz_rpc_frame.c — the incremental frame reader on an arbitrary byte stream. The first
 * byte chooses: bit 7 the direction (response frames), bits 0-6 the frame limit (1 KiB
 * plus that many KiB) and the seed of the chunk sizes the stream is cut into; with bit 6
 * set the reader takes its buffers from a pool, and each frame's body is kept and given
 * back to it, as a client does. Bytes go in
 * through feed and through space/commit in turn; every frame taken must lie inside what
 * was given, match its length, and, decoded again on its own, give the same header; its
 * body is unpacked as the message its header names. The reader must never hold more than
 * 4 + frame_bytes_max bytes, and once it fails it must stay failed. */
#include <stdio.h>
#include <stdlib.h>

#include "rpc/rpc.h"

static void fz_check_frame(const fr_rpc_frame *f, int64_t max)
{
    fr_error err;
    size_t hdr = fr_rpc_header_bytes(f->direction);
    if (f->body_len + hdr - 4 > (size_t)max) abort();
    /* The header bytes sit just before the body: decode the whole frame again from them. */
    fr_rpc_frame again;
    if (fr_rpc_frame_decode(f->direction, f->body - hdr, f->body_len + hdr, max, &again, &err) != 0 ||
        again.request_id != f->request_id || again.body != f->body ||
        again.api_key != f->api_key || again.result != f->result)
        abort();
    ProtobufCMessage *m = NULL;
    if (f->direction == FR_RPC_REQUEST) {
        if (fr_rpc_request_unpack(f, &m, NULL, &err) == 0) fr_rpc_free(m);
    } else {
        fr_rpc_api api = (fr_rpc_api)((uint32_t)f->request_id % FR_RPC_API_COUNT);
        if (fr_rpc_response_unpack(api, f, &m, &err) == 0) fr_rpc_free(m);
    }
}

/* Keeps the frame's body, as a client does with an answer, checks it, and gives its block
 * back to the pool the reader takes its buffers from. */
static void fz_keep_and_give(fr_rpc_reader *r, fr_bufpool *pool, const fr_rpc_frame *f)
{
    uint8_t first = f->body[0], last = f->body[f->body_len - 1];
    uint8_t *body = NULL;
    uint8_t *block = fr_rpc_reader_keep(r, f, &body);
    if (!block) return; /* out of memory for a copy */
    if (body < block || body[0] != first || body[f->body_len - 1] != last) abort();
    fr_buf b = {.data = block, .len = 0, .cap = fr_rpc_reader_kept_cap(r)};
    if (b.cap < (size_t)(body - block) + f->body_len) abort();
    fr_bufpool_give(pool, &b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    fr_rpc_direction dir = (data[0] & 0x80) ? FR_RPC_RESPONSE : FR_RPC_REQUEST;
    int64_t max = FR_RPC_FRAME_BYTES_MIN + (int64_t)(data[0] & 0x7f) * 1024;
    unsigned seed = data[0];
    data++;
    size--;
    fr_error err;
    fr_rpc_reader *r;
    if (fr_rpc_reader_new(dir, max, &r, &err) != 0) abort();
    fr_bufpool *pool = (seed & 0x40) ? fr_bufpool_new(4 * ((size_t)max + 4)) : NULL;
    fr_rpc_reader_set_pool(r, pool);
    size_t at = 0;
    int failed = 0;
    bool via_space = false;
    while (at < size && !failed) {
        seed = seed * 1103515245u + 12345u;
        size_t chunk = 1 + (seed >> 16) % 300;
        if (chunk > size - at) chunk = size - at;
        if (via_space) {
            uint8_t *p;
            size_t room;
            failed = fr_rpc_reader_space(r, &p, &room, &err);
            if (!failed) {
                if (chunk > room) chunk = room;
                memcpy(p, data + at, chunk);
                fr_rpc_reader_commit(r, chunk);
                at += chunk;
            }
        } else {
            size_t used;
            failed = fr_rpc_reader_feed(r, data + at, chunk, &used, &err);
            at += used;
        }
        via_space = !via_space;
        if (fr_rpc_reader_capacity(r) > (size_t)max + 4) abort();
        fr_rpc_frame f;
        int rc;
        while (!failed && (rc = fr_rpc_reader_next(r, &f, &err)) == 1) {
            fz_check_frame(&f, max);
            if (pool && f.body_len > 0) fz_keep_and_give(r, pool, &f);
        }
        if (!failed && rc < 0) failed = rc;
    }
    if (failed) {
        /* Failed for good: the same error again, whatever comes. */
        fr_rpc_frame f;
        size_t used;
        if (fr_rpc_reader_next(r, &f, &err) != failed) abort();
        if (fr_rpc_reader_feed(r, data, size, &used, &err) != failed) abort();
    }
    fr_rpc_reader_free(r);
    fr_bufpool_free(pool);
    return 0;
}
