/* rpc_fetch.c — unpacking fetch_log and lookup responses without copying their record
 * batches.
 *
 * A consumer's fetch answers carry every record it reads, and a lookup's answer every row
 * found; protobuf-c would copy each bucket's `records` (or `rows`) out of the frame, about
 * a quarter of an uncompressed consumer's CPU and of a lookup client's. This file reads
 * FetchLogResponse and LookupResponse (proto/firth.proto) from the wire itself
 * (rpc_wire.h) and leaves those bytes pointing into the frame's memory, which the message
 * takes over: it hangs on the message as its one unknown field, with field number 0, which
 * no protobuf unpack yields (field 0 is malformed). fr_rpc_free knows the mark: it clears
 * the fields that point into the frame, and protobuf-c then frees the rest, the frame's
 * memory with it; fr_rpc_kept_take hands the frame's memory back instead, for reuse. */
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

/* A response being read (fetch_log or lookup), with its one repeated field's capacity. */
typedef struct kept_read {
    ProtobufCMessage *m;
    size_t cap;
} kept_read;

static int response_field(fr_wire *w, uint32_t field, int type, void *m, fr_error *err)
{
    kept_read *r = m;
    Firth__FetchLogResponse *resp = (Firth__FetchLogResponse *)r->m;
    fr_wire sub;
    void *t = NULL;
    if (field != 1) return FR_WIRE_UNKNOWN;
    FR_TRY(fr_wire_element(w, type, &firth__fetch_table_result__descriptor,
                           (void ***)&resp->tables, &resp->n_tables, &r->cap, &sub, &t, err));
    return fr_wire_fields(sub, table_field, &(table_read){.t = t}, err);
}

/* ---- lookup ------------------------------------------------------------------------------ */

/* A LookupBucketResult being read, with its found array's capacity. */
typedef struct lookup_bucket_read {
    Firth__LookupBucketResult *b;
    size_t cap;
} lookup_bucket_read;

static int lookup_bucket_field(fr_wire *w, uint32_t field, int type, void *m, fr_error *err)
{
    lookup_bucket_read *r = m;
    Firth__LookupBucketResult *b = r->b;
    switch (field) {
    case 1: return fr_wire_int64(w, type, &b->partition_id, err);
    case 2: return fr_wire_int32(w, type, &b->bucket, err);
    case 3: return parse_error(w, type, &b->error, err);
    case 4: return fr_wire_bools(w, type, &b->found, &b->n_found, &r->cap, err);
    case 5: return fr_wire_bytes_in_place(w, type, &b->rows, err);
    default: return FR_WIRE_UNKNOWN;
    }
}

static int lookup_field(fr_wire *w, uint32_t field, int type, void *m, fr_error *err)
{
    kept_read *r = m;
    Firth__LookupResponse *resp = (Firth__LookupResponse *)r->m;
    fr_wire sub;
    void *b = NULL;
    if (field != 1) return FR_WIRE_UNKNOWN;
    FR_TRY(fr_wire_element(w, type, &firth__lookup_bucket_result__descriptor,
                           (void ***)&resp->buckets, &resp->n_buckets, &r->cap, &sub, &b, err));
    return fr_wire_fields(sub, lookup_bucket_field, &(lookup_bucket_read){.b = b}, err);
}

/* ---- messages that hold their frame ----------------------------------------------------- */

bool fr_rpc_kept(const ProtobufCMessage *m)
{
    return (m->descriptor == &firth__fetch_log_response__descriptor ||
            m->descriptor == &firth__lookup_response__descriptor) &&
           m->n_unknown_fields == 1 && m->unknown_fields[0].tag == 0;
}

void fr_rpc_kept_release(ProtobufCMessage *m)
{
    if (m->descriptor == &firth__lookup_response__descriptor) {
        Firth__LookupResponse *r = (Firth__LookupResponse *)m;
        for (size_t i = 0; i < r->n_buckets; i++)
            if (r->buckets[i]) r->buckets[i]->rows = (ProtobufCBinaryData){0, NULL};
        return;
    }
    Firth__FetchLogResponse *r = (Firth__FetchLogResponse *)m;
    for (size_t i = 0; i < r->n_tables; i++)
        for (size_t k = 0; r->tables[i] && k < r->tables[i]->n_buckets; k++) {
            Firth__FetchBucketResult *b = r->tables[i]->buckets[k];
            if (b) b->records = (ProtobufCBinaryData){0, NULL};
        }
}

uint8_t *fr_rpc_kept_take(ProtobufCMessage *m, size_t *cap)
{
    *cap = 0;
    if (!m || !fr_rpc_kept(m)) return NULL;
    fr_rpc_kept_release(m);
    ProtobufCMessageUnknownField *mark = &m->unknown_fields[0];
    uint8_t *block = mark->data;
    *cap = block ? mark->len : 0;
    mark->data = NULL;
    mark->len = 0;
    return block;
}

/* Reads a response of descriptor d from f's body with read, into a message that holds
 * block, of cap bytes (freed with it by fr_rpc_free, whatever the outcome). */
static int unpack_kept(const ProtobufCMessageDescriptor *d, const char *what,
                       fr_wire_field_fn read, const fr_rpc_frame *f, uint8_t *block,
                       size_t cap, ProtobufCMessage **out, fr_error *err)
{
    *out = NULL;
    ProtobufCMessage *m = fr_malloc(d->sizeof_message);
    ProtobufCMessageUnknownField *mark = fr_calloc(1, sizeof *mark);
    if (!m || !mark) {
        fr_free(m);
        fr_free(mark);
        fr_free(block);
        return fr_fail(err, FR_ENOMEM, "%s: out of memory", what);
    }
    protobuf_c_message_init(d, m);
    /* From here the message holds the frame's memory: fr_rpc_free frees both. */
    mark->tag = 0;
    mark->wire_type = PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED;
    mark->data = block;
    mark->len = cap;
    m->unknown_fields = mark;
    m->n_unknown_fields = 1;
    fr_wire_budget budget;
    int rc = fr_wire_fields(fr_wire_start(f->body, f->body_len, what, &budget), read,
                            &(kept_read){.m = m}, err);
    if (rc < 0) {
        fr_rpc_free(m);
        return rc;
    }
    *out = m;
    return 0;
}

int fr_rpc_fetch_unpack(const fr_rpc_frame *f, uint8_t *block, size_t cap,
                        Firth__FetchLogResponse **out, fr_error *err)
{
    return unpack_kept(&firth__fetch_log_response__descriptor, "fetch_log response",
                       response_field, f, block, cap, (ProtobufCMessage **)out, err);
}

int fr_rpc_lookup_unpack(const fr_rpc_frame *f, uint8_t *block, size_t cap,
                         Firth__LookupResponse **out, fr_error *err)
{
    return unpack_kept(&firth__lookup_response__descriptor, "lookup response", lookup_field,
                       f, block, cap, (ProtobufCMessage **)out, err);
}
