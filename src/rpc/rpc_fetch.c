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

static int parse_error_fields(fr_wire sub, Firth__Error *e, fr_error *err)
{
    while (sub.at < sub.n) {
        uint32_t field;
        int t;
        int32_t code;
        FR_TRY(fr_wire_key(&sub, &field, &t, err));
        switch (field) {
        case 1:
            FR_TRY(fr_wire_int32(&sub, t, &code, err));
            e->code = (Firth__ErrorCode)code;
            break;
        case 2: FR_TRY(fr_wire_string(&sub, t, &e->message, err)); break;
        case 3: FR_TRY(fr_wire_int32(&sub, t, &e->line, err)); break;
        case 4: FR_TRY(fr_wire_int32(&sub, t, &e->column, err)); break;
        case 5: FR_TRY(fr_wire_int32(&sub, t, &e->statement, err)); break;
        default: FR_TRY(fr_wire_skip(&sub, t, err));
        }
    }
    return 0;
}

/* An Error field into *out. A second occurrence replaces the first as protobuf-c merges
 * them: its numbers win (proto3 numbers carry no presence), the first's message stays when
 * it has none. */
static int parse_error(fr_wire *w, int type, Firth__Error **out, fr_error *err)
{
    fr_wire sub;
    FR_TRY(fr_wire_want(w, type, FR_WT_LEN, err));
    FR_TRY(fr_wire_len(w, &sub, err));
    Firth__Error *e = fr_malloc(sizeof *e);
    FR_CHECK(e, FR_ENOMEM, err, "%s: out of memory", w->what);
    firth__error__init(e);
    int rc = parse_error_fields(sub, e, err);
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

static int parse_bucket(fr_wire w, Firth__FetchBucketResult *b, fr_error *err)
{
    while (w.at < w.n) {
        uint32_t field;
        int type;
        FR_TRY(fr_wire_key(&w, &field, &type, err));
        switch (field) {
        case 1: FR_TRY(fr_wire_int64(&w, type, &b->partition_id, err)); break;
        case 2: FR_TRY(fr_wire_int32(&w, type, &b->bucket, err)); break;
        case 3: FR_TRY(parse_error(&w, type, &b->error, err)); break;
        case 4: FR_TRY(fr_wire_int64(&w, type, &b->high_watermark, err)); break;
        case 5: FR_TRY(fr_wire_int64(&w, type, &b->log_start_offset, err)); break;
        case 6: FR_TRY(fr_wire_bytes_in_place(&w, type, &b->records, err)); break;
        case 7: FR_TRY(fr_wire_int64(&w, type, &b->next_offset, err)); break;
        default: FR_TRY(fr_wire_skip(&w, type, err));
        }
    }
    return 0;
}

static int parse_table(fr_wire w, Firth__FetchTableResult *t, fr_error *err)
{
    size_t cap = 0;
    while (w.at < w.n) {
        uint32_t field;
        int type;
        fr_wire sub;
        FR_TRY(fr_wire_key(&w, &field, &type, err));
        switch (field) {
        case 1: FR_TRY(fr_wire_path(&w, type, &t->path, err)); break;
        case 2: FR_TRY(parse_error(&w, type, &t->error, err)); break;
        case 3: {
            FR_TRY(fr_wire_want(&w, type, FR_WT_LEN, err));
            FR_TRY(fr_wire_len(&w, &sub, err));
            FR_TRY(fr_wire_grow((void **)&t->buckets, t->n_buckets, &cap, &w, err));
            Firth__FetchBucketResult *b = fr_malloc(sizeof *b);
            FR_CHECK(b, FR_ENOMEM, err, "%s: out of memory", w.what);
            firth__fetch_bucket_result__init(b);
            t->buckets[t->n_buckets++] = b;
            FR_TRY(parse_bucket(sub, b, err));
            break;
        }
        default: FR_TRY(fr_wire_skip(&w, type, err));
        }
    }
    return 0;
}

static int parse_response(fr_wire w, Firth__FetchLogResponse *m, fr_error *err)
{
    size_t cap = 0;
    while (w.at < w.n) {
        uint32_t field;
        int type;
        fr_wire sub;
        FR_TRY(fr_wire_key(&w, &field, &type, err));
        if (field != 1) {
            FR_TRY(fr_wire_skip(&w, type, err));
            continue;
        }
        FR_TRY(fr_wire_want(&w, type, FR_WT_LEN, err));
        FR_TRY(fr_wire_len(&w, &sub, err));
        FR_TRY(fr_wire_grow((void **)&m->tables, m->n_tables, &cap, &w, err));
        Firth__FetchTableResult *t = fr_malloc(sizeof *t);
        FR_CHECK(t, FR_ENOMEM, err, "%s: out of memory", w.what);
        firth__fetch_table_result__init(t);
        m->tables[m->n_tables++] = t;
        FR_TRY(parse_table(sub, t, err));
    }
    return 0;
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
    int rc = parse_response((fr_wire){f->body, f->body_len, 0, "fetch_log response"}, m, err);
    if (rc < 0) {
        fr_rpc_free(&m->base);
        return rc;
    }
    *out = m;
    return 0;
}
