/* rpc_produce.c — unpacking a produce_log request without copying its record batches.
 *
 * protobuf-c copies every bytes field out of the body it unpacks; for produce_log that is
 * every record batch, the bulk of the data path's bytes. This file reads the protobuf wire
 * format of ProduceLogRequest (proto/firth.proto) itself (rpc_wire.h) and leaves each
 * ProduceBucket's `records` pointing into the body, which the caller keeps until it frees
 * the message. Everything else is built as protobuf-c would build it, and the request
 * passes the same checks (fr_rpc_request_check). */
#include "rpc/rpc_wire.h"

#include <assert.h>

static int bucket_field(fr_wire *w, uint32_t field, int type, void *m, fr_error *err)
{
    Firth__ProduceBucket *b = m;
    switch (field) {
    case 1: return fr_wire_int64(w, type, &b->partition_id, err);
    case 2: return fr_wire_int32(w, type, &b->bucket, err);
    case 3: return fr_wire_bytes_in_place(w, type, &b->records, err);
    default: return FR_WIRE_UNKNOWN;
    }
}

/* The request being read, with its buckets array's capacity. */
typedef struct request_read {
    Firth__ProduceLogRequest *m;
    size_t cap;
} request_read;

static int request_field(fr_wire *w, uint32_t field, int type, void *m, fr_error *err)
{
    request_read *r = m;
    fr_wire sub;
    void *b = NULL;
    switch (field) {
    case 1: return fr_wire_path(w, type, &r->m->path, err);
    case 2: return fr_wire_int64(w, type, &r->m->table_id, err);
    case 3: return fr_wire_int64(w, type, &r->m->writer_id, err);
    case 4:
        FR_TRY(fr_wire_element(w, type, &firth__produce_bucket__descriptor,
                               (void ***)&r->m->buckets, &r->m->n_buckets, &r->cap, &sub, &b,
                               err));
        return fr_wire_fields(sub, bucket_field, b, err);
    default: return FR_WIRE_UNKNOWN;
    }
}

void fr_rpc_produce_free(Firth__ProduceLogRequest *m)
{
    if (!m) return;
    /* The records point into the body: not the message's to free. */
    for (size_t i = 0; i < m->n_buckets; i++) {
        if (!m->buckets[i]) continue;
        m->buckets[i]->records.data = NULL;
        m->buckets[i]->records.len = 0;
    }
    fr_rpc_free(&m->base);
}

int fr_rpc_produce_unpack(const fr_rpc_frame *f, Firth__ProduceLogRequest **out,
                          Firth__ErrorCode *code, fr_error *err)
{
    assert(f->direction == FR_RPC_REQUEST && f->api_key == FR_RPC_PRODUCE_LOG);
    Firth__ErrorCode local;
    if (!code) code = &local;
    *code = FIRTH__ERROR_CODE__NONE;
    const fr_rpc_api_info *info = fr_rpc_api_lookup(FR_RPC_PRODUCE_LOG);
    if (f->api_version < info->min_version || f->api_version > info->max_version) {
        *code = FIRTH__ERROR_CODE__UNSUPPORTED_VERSION;
        return fr_fail(err, FR_EUNSUPPORTED,
                       "%s version %d is not supported (this server speaks %d..%d)", info->name,
                       f->api_version, info->min_version, info->max_version);
    }
    Firth__ProduceLogRequest *m = fr_malloc(sizeof *m);
    if (!m) {
        *code = fr_rpc_code_from_status(FR_ENOMEM);
        return fr_fail(err, FR_ENOMEM, "produce_log request: out of memory");
    }
    firth__produce_log_request__init(m);
    fr_wire_budget budget;
    int rc = fr_wire_fields(fr_wire_start(f->body, f->body_len, "produce_log request", &budget),
                            request_field, &(request_read){.m = m}, err);
    if (rc == 0) rc = fr_rpc_request_check(FR_RPC_PRODUCE_LOG, &m->base, err);
    if (rc < 0) {
        fr_rpc_produce_free(m);
        *code = fr_rpc_code_from_status(rc);
        return rc;
    }
    *out = m;
    return 0;
}
