/* rpc_fetch.c — unpacking a fetch_log response without copying its record batches.
 *
 * A consumer's fetch answers carry every record it reads; protobuf-c would copy each
 * bucket's `records` out of the frame, about a quarter of an uncompressed consumer's CPU.
 * This file reads FetchLogResponse (proto/firth.proto) from the wire itself (rpc_wire.h)
 * and leaves `records` pointing into the frame's memory, which the message takes over:
 * it hangs on the message as its one unknown field, with field number 0, which no
 * protobuf unpack yields (field 0 is malformed). fr_rpc_free knows the mark: it clears the
 * records, and protobuf-c then frees the rest, the frame's memory with it. */
#include "rpc/rpc_wire.h"

static int error_field(fr_wire *w, uint32_t field, int type, void *m, fr_error *err)
{
    Firth__Error *e = m;
    int32_t code;
    switch (field) {
    case 1:
        FR_TRY(fr_wire_int32(w, type, &code, err));
        e->code = (Firth__ErrorCode)code;
        return 0;
    case 2: return fr_wire_string(w, type, &e->message, err);
    case 3: return fr_wire_int32(w, type, &e->line, err);
    case 4: return fr_wire_int32(w, type, &e->column, err);
    case 5: return fr_wire_int32(w, type, &e->statement, err);
    default: return FR_WIRE_UNKNOWN;
    }
}

/* An Error field into *out. A second occurrence replaces the first as protobuf-c merges
 * them: its numbers win (proto3 numbers carry no presence), the first's message stays when
 * it has none. */
static int parse_error(fr_wire *w, int type, Firth__Error **out, fr_error *err)
{
    fr_wire sub;
    FR_TRY(fr_wire_want(w, type, FR_WT_LEN, err));
    FR_TRY(fr_wire_len(w, &sub, err));
    Firth__Error *e;
    FR_TRY(fr_wire_alloc(w, sizeof *e, &e, err));
    firth__error__init(e);
    int rc = fr_wire_fields(sub, error_field, e, err);
    if (rc < 0) {
        fr_rpc_free(&e->base);
        return rc;
    }
    if (*out && e->message == protobuf_c_empty_string) {
        e->message = (*out)->message;
        (*out)->message = (char *)protobuf_c_empty_string;
    }
    fr_rpc_free(*out ? &(*out)->base : NULL);
    *out = e;
    return 0;
}

static int bucket_field(fr_wire *w, uint32_t field, int type, void *m, fr_error *err)
{
    Firth__FetchBucketResult *b = m;
    switch (field) {
    case 1: return fr_wire_int64(w, type, &b->partition_id, err);
    case 2: return fr_wire_int32(w, type, &b->bucket, err);
    case 3: return parse_error(w, type, &b->error, err);
    case 4: return fr_wire_int64(w, type, &b->high_watermark, err);
    case 5: return fr_wire_int64(w, type, &b->log_start_offset, err);
    case 6: return fr_wire_bytes_in_place(w, type, &b->records, err);
    case 7: return fr_wire_int64(w, type, &b->next_offset, err);
    default: return FR_WIRE_UNKNOWN;
    }
}

/* A FetchTableResult being read, with its buckets array's capacity. */
typedef struct table_read {
    Firth__FetchTableResult *t;
    size_t cap;
} table_read;

static int table_field(fr_wire *w, uint32_t field, int type, void *m, fr_error *err)
{
    table_read *r = m;
    fr_wire sub;
    void *b = NULL;
    switch (field) {
    case 1: return fr_wire_path(w, type, &r->t->path, err);
    case 2: return parse_error(w, type, &r->t->error, err);
    case 3:
        FR_TRY(fr_wire_element(w, type, &firth__fetch_bucket_result__descriptor,
                               (void ***)&r->t->buckets, &r->t->n_buckets, &r->cap, &sub, &b,
                               err));
        return fr_wire_fields(sub, bucket_field, b, err);
    default: return FR_WIRE_UNKNOWN;
    }
}

/* The response being read, with its tables array's capacity. */
typedef struct response_read {
    Firth__FetchLogResponse *m;
    size_t cap;
} response_read;

static int response_field(fr_wire *w, uint32_t field, int type, void *m, fr_error *err)
{
    response_read *r = m;
    fr_wire sub;
    void *t = NULL;
    if (field != 1) return FR_WIRE_UNKNOWN;
    FR_TRY(fr_wire_element(w, type, &firth__fetch_table_result__descriptor,
                           (void ***)&r->m->tables, &r->m->n_tables, &r->cap, &sub, &t, err));
    return fr_wire_fields(sub, table_field, &(table_read){.t = t}, err);
}

bool fr_rpc_fetch_is_kept(const ProtobufCMessage *m)
{
    return m->descriptor == &firth__fetch_log_response__descriptor && m->n_unknown_fields == 1 &&
           m->unknown_fields[0].tag == 0;
}

void fr_rpc_fetch_release(ProtobufCMessage *m)
{
    Firth__FetchLogResponse *r = (Firth__FetchLogResponse *)m;
    for (size_t i = 0; i < r->n_tables; i++)
        for (size_t k = 0; r->tables[i] && k < r->tables[i]->n_buckets; k++) {
            Firth__FetchBucketResult *b = r->tables[i]->buckets[k];
            if (b) b->records = (ProtobufCBinaryData){0, NULL};
        }
}

int fr_rpc_fetch_unpack(const fr_rpc_frame *f, uint8_t *block, Firth__FetchLogResponse **out,
                        fr_error *err)
{
    *out = NULL;
    Firth__FetchLogResponse *m = fr_malloc(sizeof *m);
    ProtobufCMessageUnknownField *mark = fr_calloc(1, sizeof *mark);
    if (!m || !mark) {
        fr_free(m);
        fr_free(mark);
        fr_free(block);
        return fr_fail(err, FR_ENOMEM, "fetch_log response: out of memory");
    }
    firth__fetch_log_response__init(m);
    /* From here the message holds the frame's memory: fr_rpc_free frees both. */
    mark->tag = 0;
    mark->wire_type = PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED;
    mark->data = block;
    m->base.unknown_fields = mark;
    m->base.n_unknown_fields = 1;
    fr_wire_budget budget;
    int rc = fr_wire_fields(fr_wire_start(f->body, f->body_len, "fetch_log response", &budget),
                            response_field, &(response_read){.m = m}, err);
    if (rc < 0) {
        fr_rpc_free(&m->base);
        return rc;
    }
    *out = m;
    return 0;
}
