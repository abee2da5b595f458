/* fuzz_rpc_message.c — unpacking every message of the native protocol from arbitrary bytes.
 * The first byte chooses the message: its low 5 bits the api (modulo the number of apis),
 * bit 7 a response instead of a request, bit 6 (responses) an ERROR frame's Error body. The
 * rest is the body. A request goes through fr_rpc_request_unpack (protobuf and the api's
 * checks); whatever unpacks must pack again and unpack to the same bytes, and a request
 * that passed the checks must pass them again after the round trip. A produce_log or put_kv
 * request also goes through fr_rpc_request_unpack_in_place (records left in place), which
 * must accept only what fr_rpc_request_unpack accepts, with the same fields. A fetch_log
 * or lookup response goes through fr_rpc_fetch_unpack or fr_rpc_lookup_unpack too (records
 * or rows left in the frame's copy, which the message takes over), with the same rule
 * against fr_rpc_response_unpack. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rpc/rpc.h"

static void fz_same_after_round_trip(const ProtobufCMessage *m, bool is_request, fr_rpc_api api)
{
    fr_error err;
    fr_buf a, b;
    fr_buf_init(&a);
    fr_buf_init(&b);
    if (fr_rpc_pack(m, &a, &err) != 0) abort(); /* only out of memory, which never happens here */
    ProtobufCMessage *again = NULL;
    if (fr_rpc_unpack(m->descriptor, "again", a.data, a.len, &again, &err) != 0) {
        fprintf(stderr, "fuzz_rpc_message: a packed message does not unpack: %s\n", err.msg);
        abort();
    }
    if (fr_rpc_pack(again, &b, &err) != 0) abort();
    if (a.len != b.len || (a.len && memcmp(a.data, b.data, a.len) != 0)) {
        fprintf(stderr, "fuzz_rpc_message: %s packs differently after a round trip\n",
                m->descriptor->name);
        abort();
    }
    if (is_request && fr_rpc_request_check(api, again, &err) != 0) {
        fprintf(stderr, "fuzz_rpc_message: checks differ after a round trip: %s\n", err.msg);
        abort();
    }
    fr_rpc_free(again);
    fr_buf_free(&a);
    fr_buf_free(&b);
}

static bool fz_str_same(const char *a, const char *b)
{
    return strcmp(a ? a : "", b ? b : "") == 0;
}

/* The parts of a produce_log or put_kv request (both: path, ids, buckets of partition,
 * bucket and records; put_kv also target columns). */
typedef struct fz_req {
    const Firth__TablePath *path;
    int64_t table_id, writer_id;
    size_t n_buckets, n_targets;
    const int32_t *targets;
    bool in_order;
} fz_req;

static fz_req fz_req_of(const ProtobufCMessage *m)
{
    if (m->descriptor == &firth__produce_log_request__descriptor) {
        const Firth__ProduceLogRequest *q = (const Firth__ProduceLogRequest *)m;
        return (fz_req){q->path, q->table_id, q->writer_id, q->n_buckets, 0, NULL, q->in_order};
    }
    const Firth__PutKvRequest *q = (const Firth__PutKvRequest *)m;
    return (fz_req){q->path, q->table_id, q->writer_id, q->n_buckets, q->n_target_columns,
                    q->target_columns, false};
}

static void fz_bucket(const ProtobufCMessage *m, size_t i, int64_t *pid, int32_t *bucket,
                      ProtobufCBinaryData *records)
{
    if (m->descriptor == &firth__produce_log_request__descriptor) {
        const Firth__ProduceBucket *x = ((const Firth__ProduceLogRequest *)m)->buckets[i];
        *pid = x->partition_id, *bucket = x->bucket, *records = x->records;
    } else {
        const Firth__PutKvBucket *x = ((const Firth__PutKvRequest *)m)->buckets[i];
        *pid = x->partition_id, *bucket = x->bucket, *records = x->records;
    }
}

static void fz_request_in_place(const fr_rpc_frame *f, int rc, const ProtobufCMessage *theirs)
{
    ProtobufCMessage *mine = NULL;
    fr_error err;
    if (fr_rpc_request_unpack_in_place(f, &mine, NULL, &err) != 0) return;
    bool same = rc == 0;
    fz_req a = fz_req_of(mine), b = same ? fz_req_of(theirs) : a;
    same = same && (a.path == NULL) == (b.path == NULL) && a.table_id == b.table_id &&
           a.writer_id == b.writer_id && a.n_buckets == b.n_buckets &&
           a.in_order == b.in_order &&
           a.n_targets == b.n_targets &&
           (a.n_targets == 0 || memcmp(a.targets, b.targets, a.n_targets * sizeof *a.targets) == 0);
    if (same && a.path)
        same = fz_str_same(a.path->database, b.path->database) &&
               fz_str_same(a.path->table, b.path->table);
    for (size_t i = 0; same && i < a.n_buckets; i++) {
        int64_t px, py;
        int32_t bx, by;
        ProtobufCBinaryData x, y;
        fz_bucket(mine, i, &px, &bx, &x);
        fz_bucket(theirs, i, &py, &by, &y);
        same = px == py && bx == by && x.len == y.len &&
               (x.len == 0 || memcmp(x.data, y.data, x.len) == 0) &&
               (x.len == 0 || (x.data >= f->body && x.data + x.len <= f->body + f->body_len));
    }
    if (!same) {
        fprintf(stderr, "fuzz_rpc_message: %s unpacked in place differs (protobuf-c: %d)\n",
                fr_rpc_api_name(f->api_key), rc);
        abort();
    }
    fr_rpc_request_free_in_place(mine);
}

static bool fz_error_same(const Firth__Error *a, const Firth__Error *b)
{
    if (!a || !b) return a == b;
    return a->code == b->code && fz_str_same(a->message, b->message) && a->line == b->line &&
           a->column == b->column && a->statement == b->statement;
}

static bool fz_fetch_bucket_same(const Firth__FetchBucketResult *x,
                                 const Firth__FetchBucketResult *y, const uint8_t *block,
                                 size_t n)
{
    return x->partition_id == y->partition_id && x->bucket == y->bucket &&
           fz_error_same(x->error, y->error) && x->high_watermark == y->high_watermark &&
           x->log_start_offset == y->log_start_offset && x->next_offset == y->next_offset &&
           x->records.len == y->records.len &&
           (x->records.len == 0 ||
            (memcmp(x->records.data, y->records.data, x->records.len) == 0 &&
             x->records.data >= block && x->records.data + x->records.len <= block + n));
}

/* A copy of f's body in memory of its own (NULL for an empty body), and *copy, f over it:
 * what the client's reader hands an answer unpacked in place. */
static uint8_t *fz_block_copy(const fr_rpc_frame *f, fr_rpc_frame *copy)
{
    uint8_t *block = f->body_len ? fr_malloc(f->body_len) : NULL;
    if (f->body_len && !block) abort();
    if (f->body_len) memcpy(block, f->body, f->body_len);
    *copy = *f;
    copy->body = block;
    return block;
}

static void fz_fetch_in_place(const fr_rpc_frame *f, int rc, const ProtobufCMessage *m)
{
    fr_rpc_frame mine_f;
    uint8_t *block = fz_block_copy(f, &mine_f);
    Firth__FetchLogResponse *mine = NULL;
    fr_error err;
    if (fr_rpc_fetch_unpack(&mine_f, block, f->body_len, &mine, &err) != 0) return;
    const Firth__FetchLogResponse *theirs = (const Firth__FetchLogResponse *)m;
    bool same = rc == 0 && mine->n_tables == theirs->n_tables;
    for (size_t i = 0; same && i < mine->n_tables; i++) {
        const Firth__FetchTableResult *x = mine->tables[i], *y = theirs->tables[i];
        same = (x->path == NULL) == (y->path == NULL) && fz_error_same(x->error, y->error) &&
               x->n_buckets == y->n_buckets;
        if (same && x->path)
            same = fz_str_same(x->path->database, y->path->database) &&
                   fz_str_same(x->path->table, y->path->table);
        for (size_t k = 0; same && k < x->n_buckets; k++)
            same = fz_fetch_bucket_same(x->buckets[k], y->buckets[k], block, f->body_len);
    }
    if (!same) {
        fprintf(stderr, "fuzz_rpc_message: fetch_log unpacked in place differs (protobuf-c: %d)\n", rc);
        abort();
    }
    fr_rpc_free(&mine->base);
}

static bool fz_lookup_same(const Firth__LookupResponse *x, const Firth__LookupResponse *y,
                           const uint8_t *block, size_t n)
{
    bool same = x->n_buckets == y->n_buckets;
    for (size_t k = 0; same && k < x->n_buckets; k++) {
        const Firth__LookupBucketResult *a = x->buckets[k], *b = y->buckets[k];
        same = a->partition_id == b->partition_id && a->bucket == b->bucket &&
               fz_error_same(a->error, b->error) && a->n_found == b->n_found &&
               a->rows.len == b->rows.len &&
               (a->rows.len == 0 ||
                (memcmp(a->rows.data, b->rows.data, a->rows.len) == 0 &&
                 a->rows.data >= block && a->rows.data + a->rows.len <= block + n));
        for (size_t j = 0; same && j < a->n_found; j++)
            same = (a->found[j] != 0) == (b->found[j] != 0);
    }
    return same;
}

static void fz_lookup_in_place(const fr_rpc_frame *f, int rc, const ProtobufCMessage *m)
{
    fr_rpc_frame mine_f;
    uint8_t *block = fz_block_copy(f, &mine_f);
    Firth__LookupResponse *mine = NULL;
    fr_error err;
    if (fr_rpc_lookup_unpack(&mine_f, block, f->body_len, &mine, &err) != 0) return;
    if (rc != 0 || !fz_lookup_same(mine, (const Firth__LookupResponse *)m, block, f->body_len)) {
        fprintf(stderr, "fuzz_rpc_message: lookup unpacked in place differs (protobuf-c: %d)\n",
                rc);
        abort();
    }
    size_t cap;
    uint8_t *back = fr_rpc_kept_take(&mine->base, &cap);
    if (back != block || cap != (block ? f->body_len : 0)) abort();
    fr_free(back);
    fr_rpc_free(&mine->base);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    fr_rpc_api api = (fr_rpc_api)((data[0] & 0x1f) % FR_RPC_API_COUNT);
    bool response = data[0] & 0x80;
    fr_rpc_frame f = { .direction = response ? FR_RPC_RESPONSE : FR_RPC_REQUEST,
                       .api_key = (int16_t)api,
                       .result = (data[0] & 0x40) ? FR_RPC_ERROR : FR_RPC_SUCCESS,
                       .request_id = 1,
                       .body = data + 1,
                       .body_len = size - 1 };
    ProtobufCMessage *m = NULL;
    fr_error err;
    int rc = response ? fr_rpc_response_unpack(api, &f, &m, &err)
                      : fr_rpc_request_unpack(&f, &m, NULL, &err);
    if (!response && fr_rpc_request_in_place(api)) fz_request_in_place(&f, rc, m);
    if (response && api == FR_RPC_FETCH_LOG && f.result == FR_RPC_SUCCESS)
        fz_fetch_in_place(&f, rc, m);
    if (response && api == FR_RPC_LOOKUP && f.result == FR_RPC_SUCCESS)
        fz_lookup_in_place(&f, rc, m);
    if (rc == 0) {
        fz_same_after_round_trip(m, !response, api);
        fr_rpc_free(m);
    } else if (m || rc >= 0 || !err.msg[0]) {
        fprintf(stderr, "fuzz_rpc_message: a failure without a message or with a result\n");
        abort();
    }
    return 0;
}
