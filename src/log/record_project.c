/* record_project.c — projection of an encoded record batch to some of its columns without
 * decoding values, for fetches that ask for a few columns of a wide table.
 *
 * The result is a record batch in the layout of docs/FORMAT.md: the header of the source
 * (base offset, commit timestamp, counts, schema id, writer and sequence, compression),
 * no statistics block (the statistics describe the source's columns, and a reader decodes
 * the projected message against the projected schema), the change types as they were, and
 * the RecordBatch message rewritten by fr_ipc_project, which copies the chosen columns'
 * (possibly compressed) buffers as they are. The CRC is computed over the new bytes. */
#include "log/log_int.h"

int fr_rb_project(const fr_rb_view *rb, const fr_schema *schema, const int *cols, int ncols,
                  fr_buf *out, fr_error *err)
{
    size_t start = out->len;
    int rc;
    FR_GOTO(fr_buf_append_zeros(out, FR_RB_HEADER_BYTES, err));
    if (rb->change_types) {
        FR_GOTO(fr_buf_append(out, rb->change_types, (size_t)rb->record_count, err));
        FR_GOTO(fr_buf_pad(out, 8, err));
    }
    FR_GOTO(fr_ipc_project(rb->ipc, (size_t)rb->ipc_length, schema, cols, ncols, out, err));
    FR_GOTO(fr_buf_pad(out, 8, err));
    size_t len = out->len - start;
    /* A projection never grows the message by more than its metadata, which is bounded by
     * the column count; the limit still holds the result to what a reader accepts. */
    if (len > FR_RB_BYTES_MAX) {
        rc = fr_fail(err, FR_ELIMIT, "record batch: projection of %zu bytes exceeds the "
                     "%d-byte limit", len, FR_RB_BYTES_MAX);
        goto fail;
    }
    uint8_t *h = out->data + start;
    fr_put_u64le(h + FR_RB_OFF_BASE_OFFSET, (uint64_t)rb->base_offset);
    fr_put_u64le(h + FR_RB_OFF_COMMIT_TS, (uint64_t)rb->commit_timestamp);
    fr_put_u32le(h + FR_RB_OFF_LENGTH, (uint32_t)len);
    h[FR_RB_OFF_MAGIC] = FR_RB_MAGIC;
    h[FR_RB_OFF_ATTRIBUTES] = rb->attributes;
    fr_put_u16le(h + FR_RB_OFF_SCHEMA_ID, (uint16_t)rb->schema_id);
    fr_put_u32le(h + FR_RB_OFF_LAST_DELTA, (uint32_t)rb->last_offset_delta);
    fr_put_u32le(h + FR_RB_OFF_RECORD_COUNT, (uint32_t)rb->record_count);
    fr_put_u32le(h + FR_RB_OFF_SEQUENCE, (uint32_t)rb->batch_sequence);
    fr_put_u64le(h + FR_RB_OFF_WRITER_ID, (uint64_t)rb->writer_id);
    fr_put_u32le(h + FR_RB_OFF_STATS_LENGTH, 0);
    fr_put_u32le(h + FR_RB_OFF_CRC, fr_crc32c(0, h + FR_RB_CRC_START, len - FR_RB_CRC_START));
    return FR_OK;
fail:
    out->len = start;
    return rc;
}
