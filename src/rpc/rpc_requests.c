/* rpc_requests.c — unpacking produce_log and put_kv requests without copying their record
 * batches.
 *
 * protobuf-c copies every bytes field out of the body it unpacks; for these two requests
 * that is every record batch, the bulk of the write path's bytes. This file reads the
 * protobuf wire format of ProduceLogRequest and PutKvRequest (proto/firth.proto) itself
 * (rpc_wire.h) and leaves each bucket's `records` pointing into the body, which the caller
 * keeps until it frees the message. Everything else is built as protobuf-c would build it,
 * and the request passes the same checks (fr_rpc_request_check).
 *
 * The two messages share their shape: path (1), table_id (2), writer_id (3), then the
 * buckets (4 in produce_log, whose 5 is in_order; 5 in put_kv, whose 4 is target_columns),
 * each bucket a partition_id (1), a bucket (2) and records (3). */
#include "rpc/rpc_wire.h"

#include <assert.h>
#include <stdio.h>

/* The fields of one bucket entry, whichever message it belongs to. */
typedef struct bucket_ref {
    int64_t *partition_id;
    int32_t *bucket;
    ProtobufCBinaryData *records;
} bucket_ref;

static bucket_ref bucket_of(void *b)
{
    const ProtobufCMessage *m = b;
    if (m->descriptor == &firth__produce_bucket__descriptor) {
        Firth__ProduceBucket *x = b;
        return (bucket_ref){&x->partition_id, &x->bucket, &x->records};
    }
    assert(m->descriptor == &firth__put_kv_bucket__descriptor);
    Firth__PutKvBucket *x = b;
    return (bucket_ref){&x->partition_id, &x->bucket, &x->records};
}

static int bucket_field(fr_wire *w, uint32_t field, int type, void *m, fr_error *err)
{
    bucket_ref *b = m;
    switch (field) {
    case 1: return fr_wire_int64(w, type, b->partition_id, err);
    case 2: return fr_wire_int32(w, type, b->bucket, err);
    case 3: return fr_wire_bytes_in_place(w, type, b->records, err);
    default: return FR_WIRE_UNKNOWN;
    }
}

/* The request being read: where its fields go, and its arrays' capacities. */
typedef struct request_read {
    Firth__TablePath **path;
    int64_t *table_id, *writer_id;
    uint32_t buckets_field;
    const ProtobufCMessageDescriptor *bucket;
    void ***buckets;
    size_t *n_buckets, cap;
    int32_t **targets; /* put_kv's target_columns, or NULL */
    size_t *n_targets, targets_cap;
    protobuf_c_boolean *in_order; /* produce_log's, or NULL */
} request_read;

static int request_field(fr_wire *w, uint32_t field, int type, void *m, fr_error *err)
{
    request_read *r = m;
    if (field == 1) return fr_wire_path(w, type, r->path, err);
    if (field == 2) return fr_wire_int64(w, type, r->table_id, err);
    if (field == 3) return fr_wire_int64(w, type, r->writer_id, err);
    if (field == 4 && r->targets)
        return fr_wire_int32s(w, type, r->targets, r->n_targets, &r->targets_cap, err);
    if (field == 5 && r->in_order) return fr_wire_bool(w, type, r->in_order, err);
    if (field != r->buckets_field) return FR_WIRE_UNKNOWN;
    fr_wire sub;
    void *b = NULL;
    FR_TRY(fr_wire_element(w, type, r->bucket, r->buckets, r->n_buckets, &r->cap, &sub, &b,
                           err));
    bucket_ref ref = bucket_of(b);
    return fr_wire_fields(sub, bucket_field, &ref, err);
}

/* Where the fields of m (a new request of either kind) go. */
static request_read request_of(ProtobufCMessage *m)
{
    if (m->descriptor == &firth__produce_log_request__descriptor) {
        Firth__ProduceLogRequest *q = (Firth__ProduceLogRequest *)m;
        return (request_read){.path = &q->path, .table_id = &q->table_id,
                              .writer_id = &q->writer_id, .buckets_field = 4,
                              .bucket = &firth__produce_bucket__descriptor,
                              .buckets = (void ***)&q->buckets, .n_buckets = &q->n_buckets,
                              .in_order = &q->in_order};
    }
    Firth__PutKvRequest *q = (Firth__PutKvRequest *)m;
    return (request_read){.path = &q->path, .table_id = &q->table_id,
                          .writer_id = &q->writer_id, .buckets_field = 5,
                          .bucket = &firth__put_kv_bucket__descriptor,
                          .buckets = (void ***)&q->buckets, .n_buckets = &q->n_buckets,
                          .targets = &q->target_columns, .n_targets = &q->n_target_columns};
}

bool fr_rpc_request_in_place(fr_rpc_api api)
{
    return api == FR_RPC_PRODUCE_LOG || api == FR_RPC_PUT_KV;
}

void fr_rpc_request_free_in_place(ProtobufCMessage *m)
{
    if (!m) return;
    /* The records point into the body: not the message's to free. */
    request_read r = request_of(m);
    for (size_t i = 0; i < *r.n_buckets; i++)
        if ((*r.buckets)[i]) *bucket_of((*r.buckets)[i]).records = (ProtobufCBinaryData){0};
    fr_rpc_free(m);
}

int fr_rpc_request_unpack_in_place(const fr_rpc_frame *f, ProtobufCMessage **out,
                                   Firth__ErrorCode *code, fr_error *err)
{
    assert(fr_rpc_request_in_place(f->api_key));
    Firth__ErrorCode local;
    if (!code) code = &local;
    const fr_rpc_api_info *info = fr_rpc_request_api(f, code, err);
    if (!info) return FR_EUNSUPPORTED;
    ProtobufCMessage *m = fr_malloc(info->request->sizeof_message);
    if (!m) {
        *code = fr_rpc_code_from_status(FR_ENOMEM);
        return fr_fail(err, FR_ENOMEM, "%s request: out of memory", info->name);
    }
    protobuf_c_message_init(info->request, m);
    char what[48];
    snprintf(what, sizeof what, "%s request", info->name);
    fr_wire_budget budget;
    request_read r = request_of(m);
    int rc = fr_wire_fields(fr_wire_start(f->body, f->body_len, what, &budget), request_field,
                            &r, err);
    if (rc == 0) rc = fr_rpc_request_check(f->api_key, m, err);
    if (rc < 0) {
        fr_rpc_request_free_in_place(m);
        *code = fr_rpc_code_from_status(rc);
        return rc;
    }
    *out = m;
    return 0;
}
