/* arrow_ipc_project.c — column projection of an encoded RecordBatch message without decoding
 * it: the metadata is rewritten with the chosen columns' field nodes and buffers, and only
 * their body bytes are copied, still compressed. The values are never looked at (the reader
 * of the projected message checks them), so this costs a metadata parse plus the copy. */
#include "arrow/arrow_internal.h"

int fr_ipc_project(const uint8_t *p, size_t n, const fr_schema *schema, const int *cols,
                   int ncols, fr_buf *out, fr_error *err)
{
    fr_ipc_batch_msg m;
    FR_TRY(fr_ipc_parse_batch(p, n, schema, &m, err));
    int nfields = fr_schema_num_fields(schema);
    FR_CHECK(ncols >= 0 && ncols <= nfields, FR_EINVAL, err,
             "projection of %d columns from a schema of %d", ncols, nfields);
    /* first[i]: index of column i's first buffer in the message; seen[i]: column i chosen. */
    int *first = fr_malloc(((size_t)nfields + 1) * sizeof *first);
    uint8_t *seen = fr_calloc((size_t)nfields + 1, 1);
    if (!first || !seen) {
        fr_free(first);
        fr_free(seen);
        return fr_fail(err, FR_ENOMEM, "out of memory projecting a record batch");
    }
    first[0] = 0;
    for (int i = 0; i < nfields; i++) first[i + 1] = first[i] + fr_arrow_nbuffers(&fr_schema_field(schema, i)->type);
    size_t start = out->len, nodes_at, buffers_at, body_length_at;
    int rc = 0, nbuffers = 0;
    for (int j = 0; j < ncols; j++) {
        if (cols[j] < 0 || cols[j] >= nfields || seen[cols[j]]) {
            rc = fr_fail(err, FR_EINVAL, "projection names column %d %s", cols[j],
                         cols[j] < 0 || cols[j] >= nfields ? "outside the schema" : "twice");
            goto fail;
        }
        seen[cols[j]] = 1;
        nbuffers += first[cols[j] + 1] - first[cols[j]];
    }
    FR_GOTO(fr_ipc_write_batch_header(out, m.rows, NULL, ncols, NULL, nbuffers, 0, m.codec, &nodes_at,
                                      &buffers_at, &body_length_at, err));
    /* Reserve the whole body up front so the loop below only copies. */
    size_t body_bytes = 0;
    for (int j = 0; j < ncols; j++)
        for (int k = first[cols[j]]; k < first[cols[j] + 1]; k++)
            body_bytes += fr_pad8((size_t)fr_ipc_buffer_at(&m, k).length);
    FR_GOTO(fr_buf_reserve(out, body_bytes, err));
    size_t body_at = out->len;
    for (int j = 0, b = 0; j < ncols; j++) {
        memcpy(out->data + nodes_at + 16 * (size_t)j, m.nodes + 16 * (size_t)cols[j], 16);
        for (int k = first[cols[j]]; k < first[cols[j] + 1]; k++, b++) {
            fr_ipc_buffer src = fr_ipc_buffer_at(&m, k);
            uint8_t *entry = out->data + buffers_at + 16 * (size_t)b;
            fr_put_u64le(entry, (uint64_t)(out->len - body_at));
            fr_put_u64le(entry + 8, (uint64_t)src.length);
            memcpy(out->data + out->len, m.body + src.offset, (size_t)src.length);
            size_t padded = fr_pad8((size_t)src.length);
            memset(out->data + out->len + src.length, 0, padded - (size_t)src.length);
            out->len += padded;
        }
    }
    fr_put_u64le(out->data + body_length_at, (uint64_t)(out->len - body_at));
    fr_free(first);
    fr_free(seen);
    return 0;
fail:
    out->len = start;
    fr_free(first);
    fr_free(seen);
    return rc;
}
