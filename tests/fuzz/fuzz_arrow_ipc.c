/* fuzz_arrow_ipc.c — feeds arbitrary bytes to the Arrow IPC decoders: as a whole stream
 * (schema from the stream), as a bare RecordBatch message of a fixed schema, through
 * projection of such a message, and some of its columns alone (which must agree with the
 * projection). Whatever decodes is then used the way the engine uses it:
 * every cell read, the batch re-encoded and decoded again (it must give the same cells),
 * exported and imported through the C Data Interface. */
#include <stdio.h>
#include <stdlib.h>

#include "arrow/arrow.h"
#include "arrow_fuzz_schema.h"
#include "fuzz_touch.h"
#include "firth/firth.h"

static void fuzz_fail(const char *what, const fr_error *err)
{
    fprintf(stderr, "fuzz_arrow_ipc: %s: %s\n", what, err ? err->msg : "values changed");
    abort();
}

/* Re-encodes b, decodes it again and checks that nothing changed. */
static void fuzz_reencode(const fr_batch *b)
{
    fr_error err;
    fr_buf buf;
    fr_buf_init(&buf);
    uint64_t before = fuzz_touch(b);
    if (fr_ipc_write_batch(b, FR_COMPRESSION_LZ4_FRAME, &buf, &err) == 0) {
        fr_batch *again = NULL;
        size_t used;
        if (fr_ipc_read_batch(buf.data, buf.len, fr_batch_schema(b), &again, &used, &err) != 0)
            fuzz_fail("decoding a re-encoded batch", &err);
        if (fuzz_touch(again) != before || fr_batch_num_rows(again) != fr_batch_num_rows(b))
            fuzz_fail("re-encoded batch", NULL);
        fr_batch_free(again);
    }
    fr_buf_free(&buf);
    struct ArrowSchema as;
    struct ArrowArray aa;
    if (fr_batch_export(b, &as, &aa, &err) == 0) {
        fr_batch *imported = NULL;
        if (fr_batch_import(&as, &aa, &imported, &err) != 0) fuzz_fail("importing an exported batch", &err);
        if (fuzz_touch(imported) != before) fuzz_fail("imported batch", NULL);
        fr_batch_free(imported);
        as.release(&as);
    }
}

static int fuzz_on_batch(void *ctx, const fr_schema *schema, fr_batch *batch, fr_error *err)
{
    (void)ctx;
    (void)schema;
    (void)err;
    fuzz_reencode(batch);
    fr_batch_free(batch);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static fr_schema *fixed;
    if (!fixed && !(fixed = fr_fuzz_arrow_schema())) abort();
    fr_error err;
    fr_ipc_read_stream(data, size, fuzz_on_batch, NULL, &err);

    fr_batch *b = NULL;
    size_t used;
    if (fr_ipc_read_batch(data, size, fixed, &b, &used, &err) == 0) {
        if (used > size) abort();
        fuzz_reencode(b);
        fr_batch_free(b);
    }
    int64_t rows;
    fr_ipc_batch_rows(data, size, &rows, &err);

    /* Project two columns (one var-width) and decode the result when projection accepts. */
    static const int cols[] = {7, 3};
    fr_buf out;
    fr_buf_init(&out);
    fr_schema *ps = NULL;
    if (fr_schema_project(fixed, cols, 2, &ps, &err) != 0) fuzz_fail("projecting the schema", &err);
    /* Decoding the two columns straight from the message must agree with decoding the
     * projected message: both or neither succeed, with the same cells. */
    fr_batch *direct = NULL;
    int direct_rc = fr_ipc_read_batch_columns(data, size, fixed, cols, 2, ps, &direct, &err);
    if (fr_ipc_project(data, size, fixed, cols, 2, &out, &err) == 0) {
        fr_batch *pb = NULL;
        if (fr_ipc_read_batch(out.data, out.len, ps, &pb, &used, &err) == 0) {
            if (direct_rc != 0 || fuzz_touch(pb) != fuzz_touch(direct))
                fuzz_fail("columns decoded from the whole message", direct_rc ? &err : NULL);
            fr_batch_free(pb);
        } else if (direct_rc == 0) {
            fuzz_fail("columns decoded from the whole message where the projection fails", NULL);
        }
    } else if (direct_rc == 0) {
        fuzz_fail("columns decoded from a message that does not project", NULL);
    }
    fr_batch_free(direct);
    fr_schema_free(ps);
    fr_buf_free(&out);
    return 0;
}
