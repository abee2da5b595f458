/* arrow_ipc_read.c — decoding Arrow IPC messages from untrusted bytes: the encapsulation
 * frame, the Message table, RecordBatch metadata checked against a schema, column buffers
 * (decompressed per buffer when the message says so) checked against the layout of each
 * type, some columns of a message without touching the others' buffers, and whole
 * streams.
 *
 * Tables and slots (format/Message.fbs): Message {version 0, header_type 1, header 2,
 * bodyLength 3, custom_metadata 4}; RecordBatch {length 0, nodes 1, buffers 2,
 * compression 3}; BodyCompression {codec 0 (LZ4_FRAME = 0, ZSTD = 1), method 1 (BUFFER)}.
 * FieldNode {length, null_count} and Buffer {offset, length} are structs of two int64. */
#include "arrow/arrow_internal.h"

/* ---- messages ---------------------------------------------------------------------------- */

int fr_ipc_parse_message(const uint8_t *p, size_t n, fr_ipc_msg *m, fr_error *err)
{
    memset(m, 0, sizeof *m);
    FR_CHECK(n >= 4, FR_ECORRUPT, err, "Arrow message truncated: %zu bytes left, the frame needs 8", n);
    size_t hdr = 4;
    uint32_t word = fr_get_u32le(p);
    if (word == FR_IPC_CONTINUATION) {
        FR_CHECK(n >= 8, FR_ECORRUPT, err, "Arrow message truncated: %zu bytes left, the frame needs 8", n);
        word = fr_get_u32le(p + 4);
        hdr = 8;
    }
    /* Without the continuation marker, the word is the metadata length (the format before
     * Arrow 0.15). */
    int32_t meta_len = (int32_t)word;
    if (meta_len == 0) {
        m->eos = true;
        m->used = hdr;
        return 0;
    }
    FR_CHECK(meta_len > 0 && meta_len <= FR_IPC_MESSAGE_BYTES_MAX, FR_ECORRUPT, err,
             "Arrow message metadata length %d is outside 1..%d", meta_len, FR_IPC_MESSAGE_BYTES_MAX);
    FR_CHECK((size_t)meta_len <= n - hdr, FR_ECORRUPT, err,
             "Arrow message truncated: metadata of %d bytes but only %zu bytes left", meta_len, n - hdr);
    fr_fbt msg;
    FR_TRY(fr_fbr_root(p + hdr, (size_t)meta_len, &msg, err));
    uint64_t version, type, body_length;
    FR_TRY(fr_fbt_scalar(&msg, 0, 2, 0, &version, err));
    FR_CHECK(version == FR_IPC_V4 || version == FR_IPC_V5, FR_EUNSUPPORTED, err,
             "Arrow metadata version V%llu is not supported (V4 and V5 are)", (unsigned long long)version + 1);
    FR_TRY(fr_fbt_scalar(&msg, 1, 1, 0, &type, err));
    FR_TRY(fr_fbt_scalar(&msg, 3, 8, 0, &body_length, err));
    FR_CHECK((int64_t)body_length >= 0 && (int64_t)body_length <= FR_IPC_MESSAGE_BYTES_MAX, FR_ECORRUPT,
             err, "Arrow message body length %lld is outside 0..%d", (long long)(int64_t)body_length,
             FR_IPC_MESSAGE_BYTES_MAX);
    size_t body_at = hdr + (size_t)meta_len;
    FR_CHECK(body_length <= n - body_at, FR_ECORRUPT, err,
             "Arrow message truncated: body of %llu bytes but only %zu bytes left",
             (unsigned long long)body_length, n - body_at);
    bool has_header;
    FR_TRY(fr_fbt_table(&msg, 2, &m->header, &has_header, err));
    FR_CHECK(has_header, FR_ECORRUPT, err, "Arrow message has no header");
    m->header_type = (int)type;
    m->body = p + body_at;
    m->body_length = (int64_t)body_length;
    m->used = body_at + (size_t)body_length;
    return 0;
}

/* Checks nodes and buffers of a RecordBatch header against the schema and the body. */
static int fr_ipc_check_layout(const fr_ipc_batch_msg *m, const fr_schema *schema, fr_error *err)
{
    int nfields = fr_schema_num_fields(schema), want = 0;
    for (int i = 0; i < nfields; i++) want += fr_arrow_nbuffers(&fr_schema_field(schema, i)->type);
    FR_CHECK(m->nnodes == nfields, FR_ECORRUPT, err,
             "Arrow record batch has %d field nodes but the schema has %d fields", m->nnodes, nfields);
    FR_CHECK(m->nbuffers == want, FR_ECORRUPT, err,
             "Arrow record batch has %d buffers but the schema needs %d", m->nbuffers, want);
    for (int i = 0; i < nfields; i++) {
        fr_ipc_node node = fr_ipc_node_at(m, i);
        FR_CHECK(node.length == m->rows, FR_ECORRUPT, err,
                 "Arrow record batch: column %s has %lld values in a batch of %lld rows",
                 fr_schema_field(schema, i)->name, (long long)node.length, (long long)m->rows);
        FR_CHECK(node.null_count >= 0 && node.null_count <= node.length, FR_ECORRUPT, err,
                 "Arrow record batch: column %s has a null count of %lld for %lld values",
                 fr_schema_field(schema, i)->name, (long long)node.null_count, (long long)node.length);
    }
    for (int i = 0; i < m->nbuffers; i++) {
        fr_ipc_buffer b = fr_ipc_buffer_at(m, i);
        FR_CHECK(b.offset >= 0 && b.length >= 0 && b.offset <= m->body_length &&
                 b.length <= m->body_length - b.offset, FR_ECORRUPT, err,
                 "Arrow record batch: buffer %d [%lld, +%lld) lies outside the body of %lld bytes", i,
                 (long long)b.offset, (long long)b.length, (long long)m->body_length);
    }
    return 0;
}

int fr_ipc_parse_batch(const uint8_t *p, size_t n, const fr_schema *schema,
                       fr_ipc_batch_msg *m, fr_error *err)
{
    fr_ipc_msg msg;
    memset(m, 0, sizeof *m);
    FR_TRY(fr_ipc_parse_message(p, n, &msg, err));
    FR_CHECK(!msg.eos, FR_ECORRUPT, err, "expected an Arrow RecordBatch message but found the end of the stream");
    FR_CHECK(msg.header_type != FR_IPC_HDR_DICTIONARY, FR_EUNSUPPORTED, err,
             "Arrow dictionary batches are not supported");
    FR_CHECK(msg.header_type == FR_IPC_HDR_RECORD_BATCH, FR_ECORRUPT, err,
             "expected an Arrow RecordBatch message but found message type %d", msg.header_type);
    const fr_fbt *rb = &msg.header;
    uint64_t rows;
    FR_TRY(fr_fbt_scalar(rb, 0, 8, 0, &rows, err));
    FR_CHECK((int64_t)rows >= 0 && (int64_t)rows <= FR_BATCH_ROWS_MAX, FR_ELIMIT, err,
             "Arrow record batch of %lld rows is outside 0..%d", (long long)(int64_t)rows, FR_BATCH_ROWS_MAX);
    uint32_t nnodes, nbuffers;
    FR_TRY(fr_fbt_vector(rb, 1, 16, &m->nodes, &nnodes, err));
    FR_TRY(fr_fbt_vector(rb, 2, 16, &m->buffers, &nbuffers, err));
    FR_CHECK(nnodes <= FR_SCHEMA_COLUMNS_MAX && nbuffers <= FR_IPC_BUFFERS_MAX, FR_ELIMIT, err,
             "Arrow record batch of %u nodes and %u buffers exceeds the limits", nnodes, nbuffers);
    fr_fbt comp;
    bool compressed;
    FR_TRY(fr_fbt_table(rb, 3, &comp, &compressed, err));
    m->codec = FR_COMPRESSION_NONE;
    if (compressed) {
        uint64_t codec, method;
        FR_TRY(fr_fbt_scalar(&comp, 0, 1, 0, &codec, err));
        FR_TRY(fr_fbt_scalar(&comp, 1, 1, 0, &method, err));
        FR_CHECK(codec <= 1, FR_EUNSUPPORTED, err, "Arrow compression codec %llu is not supported",
                 (unsigned long long)codec);
        FR_CHECK(method == 0, FR_EUNSUPPORTED, err, "Arrow body compression method %llu is not supported",
                 (unsigned long long)method);
        m->codec = codec == 0 ? FR_COMPRESSION_LZ4_FRAME : FR_COMPRESSION_ZSTD;
    }
    m->rows = (int64_t)rows;
    m->nnodes = (int)nnodes;
    m->nbuffers = (int)nbuffers;
    m->body = msg.body;
    m->body_length = msg.body_length;
    m->used = msg.used;
    return fr_ipc_check_layout(m, schema, err);
}

int fr_ipc_batch_rows(const uint8_t *p, size_t n, int64_t *rows, fr_error *err)
{
    fr_ipc_msg msg;
    FR_TRY(fr_ipc_parse_message(p, n, &msg, err));
    FR_CHECK(!msg.eos && msg.header_type == FR_IPC_HDR_RECORD_BATCH, FR_ECORRUPT, err,
             "expected an Arrow RecordBatch message");
    uint64_t v;
    FR_TRY(fr_fbt_scalar(&msg.header, 0, 8, 0, &v, err));
    FR_CHECK((int64_t)v >= 0 && (int64_t)v <= FR_BATCH_ROWS_MAX, FR_ELIMIT, err,
             "Arrow record batch of %lld rows is outside 0..%d", (long long)(int64_t)v, FR_BATCH_ROWS_MAX);
    *rows = (int64_t)v;
    return 0;
}

/* ---- buffers ----------------------------------------------------------------------------- */

typedef struct fr_ipc_decoder {
    const fr_ipc_batch_msg *m;
    fr_batch *b;
    const uint8_t *body_copy; /* an aligned copy of an uncompressed body, else NULL */
    uint8_t *pack;            /* else, for some columns: their buffers copied one after */
    size_t pack_pos;          /* another, each 8-aligned, in the order they are decoded */
    int64_t inflated;         /* bytes decompressed so far */
} fr_ipc_decoder;

/* Makes buffer i available as aligned memory owned by the batch: *data, *len. */
static int fr_ipc_buffer_get(fr_ipc_decoder *d, int i, const uint8_t **data, int64_t *len,
                             fr_error *err)
{
    fr_ipc_buffer buf = fr_ipc_buffer_at(d->m, i);
    *data = fr_arrow_empty;
    *len = 0;
    if (buf.length == 0) return 0;
    if (d->m->codec == FR_COMPRESSION_NONE && d->pack) {
        uint8_t *q = d->pack + d->pack_pos;
        memcpy(q, d->m->body + buf.offset, (size_t)buf.length);
        d->pack_pos += fr_pad8((size_t)buf.length);
        *data = q;
        *len = buf.length;
        return 0;
    }
    if (d->m->codec == FR_COMPRESSION_NONE) {
        const uint8_t *q = d->body_copy + buf.offset;
        *len = buf.length;
        if (((uintptr_t)q & 7) == 0) {
            *data = q;
            return 0;
        }
        /* A writer that did not align its buffers: copy so values can be read in place. */
        void *raw;
        uint8_t *copy = fr_arrow_alloc((size_t)buf.length, &raw);
        if (!copy) return fr_fail(err, FR_ENOMEM, "out of memory copying an Arrow buffer");
        memcpy(copy, q, (size_t)buf.length);
        *data = copy;
        return fr_batch_own(d->b, raw, err);
    }
    const uint8_t *src = d->m->body + buf.offset;
    FR_CHECK(buf.length >= 8, FR_ECORRUPT, err,
             "Arrow compressed buffer %d of %lld bytes lacks its 8-byte length prefix", i, (long long)buf.length);
    int64_t want = (int64_t)fr_get_u64le(src);
    src += 8;
    size_t src_len = (size_t)buf.length - 8;
    if (want == -1) want = (int64_t)src_len; /* stored uncompressed */
    FR_CHECK(want >= 0 && want <= FR_IPC_MESSAGE_BYTES_MAX - d->inflated, FR_ELIMIT, err,
             "Arrow compressed buffer %d declares %lld bytes, beyond the %d-byte message limit", i,
             (long long)want, FR_IPC_MESSAGE_BYTES_MAX);
    d->inflated += want;
    void *raw;
    uint8_t *out = fr_arrow_alloc((size_t)want, &raw);
    if (!out) return fr_fail(err, FR_ENOMEM, "out of memory decompressing an Arrow buffer of %lld bytes", (long long)want);
    int rc = fr_batch_own(d->b, raw, err);
    if (rc < 0) return rc;
    if ((int64_t)fr_get_u64le(src - 8) == -1) memcpy(out, src, src_len);
    else FR_TRY(fr_codec_decompress(d->m->codec, src, src_len, out, (size_t)want, err));
    *data = out;
    *len = want;
    return 0;
}

/* Checks offsets and, when they do not start at 0, replaces them by rebased copies. */
static int fr_ipc_check_offsets(fr_ipc_decoder *d, fr_column *c, const char *name, int64_t data_len,
                                fr_error *err)
{
    const int32_t *o = c->offsets;
    int64_t rows = c->length;
    FR_CHECK(o[0] >= 0, FR_ECORRUPT, err, "column %s: negative first offset %d", name, o[0]);
    for (int64_t i = 0; i < rows; i++)
        FR_CHECK(o[i + 1] >= o[i], FR_ECORRUPT, err, "column %s: offsets decrease at row %lld", name, (long long)i);
    FR_CHECK(o[rows] <= data_len, FR_ECORRUPT, err,
             "column %s: offsets reach byte %d of a %lld-byte data buffer", name, o[rows], (long long)data_len);
    if (o[0] == 0) return 0;
    void *raw;
    int32_t *copy = (int32_t *)fr_arrow_alloc(4 * (size_t)(rows + 1), &raw);
    if (!copy) return fr_fail(err, FR_ENOMEM, "out of memory rebasing offsets of column %s", name);
    FR_TRY(fr_batch_own(d->b, raw, err));
    for (int64_t i = 0; i <= rows; i++) copy[i] = o[i] - o[0];
    c->values += o[0];
    c->offsets = copy;
    return 0;
}

/* Decodes column `node` of the message (whose buffers start at first_buffer) into column
 * col of the batch. */
static int fr_ipc_decode_column(fr_ipc_decoder *d, int col, int node_index, int first_buffer,
                                fr_error *err)
{
    fr_column *c = &d->b->cols[col];
    const char *name = fr_schema_field(d->b->schema, col)->name;
    fr_ipc_node node = fr_ipc_node_at(d->m, node_index);
    int64_t rows = d->b->rows, len;
    const uint8_t *data;
    c->null_count = node.null_count;
    FR_CHECK(node.null_count == 0 || c->type.nullable, FR_ECORRUPT, err,
             "column %s is NOT NULL but the record batch has %lld nulls in it", name,
             (long long)node.null_count);
    if (node.null_count > 0) {
        FR_TRY(fr_ipc_buffer_get(d, first_buffer, &data, &len, err));
        FR_CHECK(len >= fr_bitmap_bytes(rows), FR_ECORRUPT, err,
                 "column %s: validity buffer of %lld bytes for %lld rows", name, (long long)len, (long long)rows);
        int64_t nulls = rows - fr_bits_count(data, 0, rows);
        FR_CHECK(nulls == node.null_count, FR_ECORRUPT, err,
                 "column %s: validity bitmap has %lld nulls but the null count is %lld", name,
                 (long long)nulls, (long long)node.null_count);
        c->validity = data;
    }
    int vi = first_buffer + 1;
    switch (fr_arrow_phys(&c->type)) {
    case FR_PHYS_BOOL:
    case FR_PHYS_FIXED: {
        int64_t need = c->type.id == FR_T_BOOLEAN ? fr_bitmap_bytes(rows) : rows * fr_arrow_width(&c->type);
        FR_TRY(fr_ipc_buffer_get(d, vi, &data, &len, err));
        FR_CHECK(len >= need, FR_ECORRUPT, err, "column %s: values buffer of %lld bytes, %lld needed",
                 name, (long long)len, (long long)need);
        c->values = data;
        return 0;
    }
    case FR_PHYS_VAR: {
        FR_TRY(fr_ipc_buffer_get(d, vi, &data, &len, err));
        if (rows == 0 && len == 0) data = fr_arrow_empty; /* writers may omit the lone 0 */
        else FR_CHECK(len >= 4 * (rows + 1), FR_ECORRUPT, err,
                      "column %s: offsets buffer of %lld bytes for %lld rows", name, (long long)len, (long long)rows);
        c->offsets = (const int32_t *)data;
        FR_TRY(fr_ipc_buffer_get(d, vi + 1, &data, &len, err));
        c->values = data;
        return fr_ipc_check_offsets(d, c, name, len, err);
    }
    }
    return 0;
}

/* Gives d an aligned copy of the whole uncompressed body, owned by the batch. */
static int fr_ipc_copy_body(fr_ipc_decoder *d, fr_error *err)
{
    void *raw;
    uint8_t *copy = fr_arrow_alloc((size_t)d->m->body_length, &raw);
    if (!copy)
        return fr_fail(err, FR_ENOMEM, "out of memory copying an Arrow body of %lld bytes",
                       (long long)d->m->body_length);
    FR_TRY(fr_batch_own(d->b, raw, err));
    memcpy(copy, d->m->body, (size_t)d->m->body_length);
    d->body_copy = copy;
    return 0;
}

/* For an uncompressed body of which only some columns are decoded: room for their buffers
 * alone, so that the others are never copied. Buffers that overlap (no writer makes them,
 * but the format does not forbid them) could add up to more than the body: then the whole
 * body is copied, as for a full read. */
static int fr_ipc_pack_columns(fr_ipc_decoder *d, const int *first, const int *cols, int ncols,
                               fr_error *err)
{
    size_t total = 0;
    for (int j = 0; j < ncols; j++)
        for (int k = first[cols[j]]; k < first[cols[j] + 1]; k++)
            total += fr_pad8((size_t)fr_ipc_buffer_at(d->m, k).length);
    if (total > (size_t)d->m->body_length) return fr_ipc_copy_body(d, err);
    if (total == 0) return 0;
    void *raw;
    d->pack = fr_arrow_alloc(total, &raw);
    if (!d->pack)
        return fr_fail(err, FR_ENOMEM, "out of memory copying %zu bytes of Arrow buffers", total);
    return fr_batch_own(d->b, raw, err);
}

int fr_ipc_read_batch(const uint8_t *p, size_t n, const fr_schema *schema, fr_batch **out,
                      size_t *used, fr_error *err)
{
    fr_ipc_batch_msg m;
    FR_TRY(fr_ipc_parse_batch(p, n, schema, &m, err));
    fr_batch *b = NULL;
    FR_TRY(fr_batch_alloc(schema, m.rows, &b, err));
    fr_ipc_decoder d = {.m = &m, .b = b};
    int rc = 0;
    if (m.codec == FR_COMPRESSION_NONE && m.body_length > 0) FR_GOTO(fr_ipc_copy_body(&d, err));
    for (int i = 0, buf = 0; i < b->ncols; i++) {
        FR_GOTO(fr_ipc_decode_column(&d, i, i, buf, err));
        buf += fr_arrow_nbuffers(&b->cols[i].type);
    }
    fr_batch_seal(b);
    *out = b;
    if (used) *used = m.used;
    return 0;
fail:
    fr_batch_free(b);
    return rc;
}

/* ---- checking without decoding ---------------------------------------------------------- */

/* What buffer i of m holds once decompressed: *len, the length it declares (counted into
 * *inflated against the message limit, as decoding counts it), and *raw, its bytes when
 * they are stored uncompressed (NULL when they are compressed). */
static int fr_ipc_buffer_declared(const fr_ipc_batch_msg *m, int i, int64_t *inflated,
                                  int64_t *len, const uint8_t **raw, fr_error *err)
{
    fr_ipc_buffer buf = fr_ipc_buffer_at(m, i);
    const uint8_t *src = m->body + buf.offset;
    *len = 0;
    *raw = fr_arrow_empty;
    if (buf.length == 0) return 0;
    if (m->codec == FR_COMPRESSION_NONE) {
        *len = buf.length;
        *raw = src;
        return 0;
    }
    FR_CHECK(buf.length >= 8, FR_ECORRUPT, err,
             "Arrow compressed buffer %d of %lld bytes lacks its 8-byte length prefix", i,
             (long long)buf.length);
    int64_t want = (int64_t)fr_get_u64le(src);
    *raw = NULL;
    if (want == -1) { /* stored uncompressed */
        want = buf.length - 8;
        *raw = src + 8;
    }
    FR_CHECK(want >= 0 && want <= FR_IPC_MESSAGE_BYTES_MAX - *inflated, FR_ELIMIT, err,
             "Arrow compressed buffer %d declares %lld bytes, beyond the %d-byte message limit",
             i, (long long)want, FR_IPC_MESSAGE_BYTES_MAX);
    *inflated += want;
    *len = want;
    return 0;
}

/* The offsets of a variable-width column, read from unaligned bytes: as decoding checks them. */
static int fr_ipc_check_raw_offsets(const uint8_t *o, int64_t rows, const char *name,
                                    int64_t data_len, fr_error *err)
{
    int32_t prev = (int32_t)fr_get_u32le(o);
    FR_CHECK(prev >= 0, FR_ECORRUPT, err, "column %s: negative first offset %d", name, prev);
    for (int64_t i = 1; i <= rows; i++) {
        int32_t cur = (int32_t)fr_get_u32le(o + 4 * i);
        FR_CHECK(cur >= prev, FR_ECORRUPT, err, "column %s: offsets decrease at row %lld", name,
                 (long long)(i - 1));
        prev = cur;
    }
    FR_CHECK(prev <= data_len, FR_ECORRUPT, err,
             "column %s: offsets reach byte %d of a %lld-byte data buffer", name, prev,
             (long long)data_len);
    return 0;
}

/* Column node_index of m (its buffers from first_buffer), as fr_ipc_decode_column checks it,
 * minus what only decompressing would show. */
static int fr_ipc_check_column(const fr_ipc_batch_msg *m, const fr_field *f, int node_index,
                               int first_buffer, int64_t *inflated, fr_error *err)
{
    fr_ipc_node node = fr_ipc_node_at(m, node_index);
    int64_t rows = m->rows, len, data_len;
    const uint8_t *raw, *data_raw;
    FR_CHECK(node.null_count == 0 || f->type.nullable, FR_ECORRUPT, err,
             "column %s is NOT NULL but the record batch has %lld nulls in it", f->name,
             (long long)node.null_count);
    if (node.null_count > 0) {
        FR_TRY(fr_ipc_buffer_declared(m, first_buffer, inflated, &len, &raw, err));
        FR_CHECK(len >= fr_bitmap_bytes(rows), FR_ECORRUPT, err,
                 "column %s: validity buffer of %lld bytes for %lld rows", f->name,
                 (long long)len, (long long)rows);
        int64_t nulls = raw ? rows - fr_bits_count(raw, 0, rows) : node.null_count;
        FR_CHECK(nulls == node.null_count, FR_ECORRUPT, err,
                 "column %s: validity bitmap has %lld nulls but the null count is %lld",
                 f->name, (long long)nulls, (long long)node.null_count);
    }
    int vi = first_buffer + 1;
    FR_TRY(fr_ipc_buffer_declared(m, vi, inflated, &len, &raw, err));
    if (fr_arrow_phys(&f->type) != FR_PHYS_VAR) {
        int64_t need = f->type.id == FR_T_BOOLEAN ? fr_bitmap_bytes(rows)
                                                  : rows * fr_arrow_width(&f->type);
        FR_CHECK(len >= need, FR_ECORRUPT, err, "column %s: values buffer of %lld bytes, %lld "
                 "needed", f->name, (long long)len, (long long)need);
        return 0;
    }
    FR_TRY(fr_ipc_buffer_declared(m, vi + 1, inflated, &data_len, &data_raw, err));
    if (rows == 0 && len == 0) return 0; /* writers may omit the lone 0 */
    FR_CHECK(len >= 4 * (rows + 1), FR_ECORRUPT, err,
             "column %s: offsets buffer of %lld bytes for %lld rows", f->name, (long long)len,
             (long long)rows);
    return raw ? fr_ipc_check_raw_offsets(raw, rows, f->name, data_len, err) : 0;
}

int fr_ipc_check_batch(const uint8_t *p, size_t n, const fr_schema *schema, int64_t *rows,
                       size_t *used, fr_error *err)
{
    fr_ipc_batch_msg m;
    FR_TRY(fr_ipc_parse_batch(p, n, schema, &m, err));
    int64_t inflated = 0;
    for (int i = 0, buf = 0; i < fr_schema_num_fields(schema); i++) {
        const fr_field *f = fr_schema_field(schema, i);
        FR_TRY(fr_ipc_check_column(&m, f, i, buf, &inflated, err));
        buf += fr_arrow_nbuffers(&f->type);
    }
    if (rows) *rows = m.rows;
    if (used) *used = m.used;
    return 0;
}

/* Checks that out_schema is schema projected to cols; seen is zeroed scratch of one int per
 * column of schema. */
static int fr_ipc_check_columns(const fr_schema *schema, const int *cols, int ncols,
                                const fr_schema *out_schema, int *seen, fr_error *err)
{
    int nfields = fr_schema_num_fields(schema);
    FR_CHECK(ncols >= 0 && ncols == fr_schema_num_fields(out_schema), FR_EINVAL, err,
             "decoding %d columns into a schema of %d", ncols, fr_schema_num_fields(out_schema));
    for (int j = 0; j < ncols; j++) {
        FR_CHECK(cols[j] >= 0 && cols[j] < nfields, FR_EINVAL, err,
                 "decoding column %d of a schema of %d", cols[j], nfields);
        FR_CHECK(!seen[cols[j]], FR_EINVAL, err, "decoding column %d twice", cols[j]);
        seen[cols[j]] = 1;
        const fr_type *a = &fr_schema_field(schema, cols[j])->type;
        const fr_type *b = &fr_schema_field(out_schema, j)->type;
        FR_CHECK(fr_type_equal(a, b) && a->nullable == b->nullable, FR_EINVAL, err,
                 "decoding column %d: the output schema's column %d has another type", cols[j], j);
    }
    return 0;
}

int fr_ipc_read_batch_columns(const uint8_t *p, size_t n, const fr_schema *schema,
                              const int *cols, int ncols, const fr_schema *out_schema,
                              fr_batch **out, fr_error *err)
{
    int nfields = fr_schema_num_fields(schema);
    /* first[i]: index of the message's first buffer of column i (first a scratch marking the
     * columns chosen). */
    int *first = fr_calloc((size_t)nfields + 1, sizeof *first);
    FR_CHECK(first, FR_ENOMEM, err, "out of memory decoding a record batch");
    fr_ipc_batch_msg m;
    int rc = fr_ipc_check_columns(schema, cols, ncols, out_schema, first, err);
    if (rc == 0) rc = fr_ipc_parse_batch(p, n, schema, &m, err);
    if (rc < 0) {
        fr_free(first);
        return rc;
    }
    first[0] = 0;
    for (int i = 0; i < nfields; i++)
        first[i + 1] = first[i] + fr_arrow_nbuffers(&fr_schema_field(schema, i)->type);
    fr_batch *b = NULL;
    rc = fr_batch_alloc(out_schema, m.rows, &b, err);
    if (rc < 0) {
        fr_free(first);
        return rc;
    }
    fr_ipc_decoder d = {.m = &m, .b = b};
    if (m.codec == FR_COMPRESSION_NONE) FR_GOTO(fr_ipc_pack_columns(&d, first, cols, ncols, err));
    for (int j = 0; j < ncols; j++) FR_GOTO(fr_ipc_decode_column(&d, j, cols[j], first[cols[j]], err));
    fr_free(first);
    fr_batch_seal(b);
    *out = b;
    return 0;
fail:
    fr_free(first);
    fr_batch_free(b);
    return rc;
}

/* ---- streams ----------------------------------------------------------------------------- */

int fr_ipc_read_stream(const uint8_t *p, size_t n, fr_ipc_batch_fn fn, void *ctx, fr_error *err)
{
    fr_schema *schema = NULL;
    size_t pos = 0, used;
    int rc = fr_ipc_read_schema(p, n, 0, &schema, &used, err);
    if (rc < 0) {
        fr_error_wrap(err, "Arrow stream, first message");
        return rc;
    }
    pos += used;
    for (int index = 1; pos < n; index++) {
        fr_ipc_msg m;
        FR_GOTO(fr_ipc_parse_message(p + pos, n - pos, &m, err));
        if (m.eos) break;
        if (m.header_type != FR_IPC_HDR_RECORD_BATCH) {
            rc = fr_fail(err, m.header_type == FR_IPC_HDR_DICTIONARY ? FR_EUNSUPPORTED : FR_ECORRUPT,
                         "Arrow stream, message %d: type %d where a record batch was expected%s", index,
                         m.header_type, m.header_type == FR_IPC_HDR_DICTIONARY ? " (dictionaries are not supported)" : "");
            goto fail;
        }
        fr_batch *b = NULL;
        rc = fr_ipc_read_batch(p + pos, n - pos, schema, &b, &used, err);
        if (rc < 0) {
            fr_error_wrap(err, "Arrow stream, message %d", index);
            goto fail;
        }
        pos += used;
        FR_GOTO(fn(ctx, schema, b, err));
    }
fail:
    fr_schema_free(schema);
    return rc;
}
