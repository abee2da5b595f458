/* cli_produce_arrow.c — `firth produce --format arrow`: appends the record batches of an
 * Arrow IPC stream (what `firth consume --format arrow` writes, or any Arrow library) to a
 * table.
 *
 * The stream's columns are matched to the table's by name, case-insensitively; every table
 * column must be there and no other. Batches whose types equal the table's pass through
 * as they are (reordered if needed); otherwise each value is converted with the SQL cast
 * rules (INT64 into INT with a range check, Utf8 into VARCHAR(n) with a length check, ...).
 * Input batches are cut into pieces of at most --batch-rows rows, each appended as one
 * batch. Records are numbered from 1 across the stream for messages and acknowledgements.
 *
 * The whole stream is read into memory first (at most CLI_ARROW_INPUT_BYTES_MAX). */
#include <errno.h>
#include <string.h>

#include "cli/cli.h"

#define CLI_ARROW_INPUT_BYTES_MAX ((size_t)1 << 30)

typedef struct arrow_in {
    cli_writer *w;
    const fr_schema *table;
    int64_t batch_rows;
    int ncols;
    int *cols;          /* per table column: its index in the stream */
    bool mapped;
    bool convert;       /* a type differs: convert cell by cell */
    fr_builder *bld;
    int64_t records;    /* records taken so far */
    bool stopped;       /* bad input was reported: nothing more to do */
    int rc;             /* the exit code once stopped */
} arrow_in;

/* Matches the stream's columns to the table's, once, from the first batch's schema. */
static int arrow_map(arrow_in *a, const fr_schema *stream, fr_error *err)
{
    int n = fr_schema_num_fields(stream);
    for (int k = 0; k < n; k++)
        FR_CHECK(fr_schema_find(a->table, fr_schema_field(stream, k)->name) >= 0, FR_EINVAL, err,
                 "the stream's column '%s' is not a column of %s",
                 fr_schema_field(stream, k)->name, a->w->table);
    for (int c = 0; c < a->ncols; c++) {
        const fr_field *f = fr_schema_field(a->table, c);
        int k = fr_schema_find(stream, f->name);
        FR_CHECK(k >= 0, FR_EINVAL, err, "the stream has no column '%s' (an Arrow stream for %s "
                                         "holds all of its columns)", f->name, a->w->table);
        a->cols[c] = k;
        if (!fr_type_equal(&fr_schema_field(stream, k)->type, &f->type)) a->convert = true;
    }
    a->mapped = true;
    if (a->convert) return fr_builder_new(a->table, &a->bld, err);
    return 0;
}

/* The first row (0-based) of column c that is NULL, or -1. */
static int64_t arrow_first_null(const fr_column *c)
{
    for (int64_t r = 0; c->null_count > 0 && r < c->length; r++)
        if (fr_column_is_null(c, r)) return r;
    return -1;
}

/* Rows [from, from + n) of the stream batch b, as a batch of the table's columns and types.
 * *bad_row gets the row a value failed on. */
static int arrow_piece(arrow_in *a, const fr_batch *b, int64_t from, int64_t n,
                       fr_batch **out, int64_t *bad_row, fr_error *err)
{
    *bad_row = from;
    if (!a->convert) {
        fr_batch *slice = NULL;
        FR_TRY(fr_batch_slice(b, from, n, &slice, err));
        int rc = fr_batch_project(slice, a->cols, a->ncols, out, err);
        fr_batch_free(slice);
        FR_TRY(rc);
        /* Equal types say nothing of NULLs: a NOT NULL column must not receive one. */
        for (int c = 0; c < a->ncols; c++) {
            const fr_field *f = fr_schema_field(a->table, c);
            int64_t r = f->type.nullable ? -1 : arrow_first_null(fr_batch_column(*out, c));
            if (r < 0) continue;
            fr_batch_free(*out);
            *bad_row = from + r;
            return fr_fail(err, FR_EINVAL, "column %s is NOT NULL but got a NULL value", f->name);
        }
        return 0;
    }
    for (int64_t r = from; r < from + n; r++) {
        *bad_row = r;
        for (int c = 0; c < a->ncols; c++) {
            fr_value v;
            fr_column_get(fr_batch_column(b, a->cols[c]), r, &v);
            FR_TRY(fr_builder_append(a->bld, c, &v, err));
        }
    }
    return fr_builder_finish(a->bld, out, err);
}

static int arrow_on_batch(void *ctx, const fr_schema *schema, fr_batch *b, fr_error *err)
{
    arrow_in *a = ctx;
    int rc = 0;
    if (!a->mapped && arrow_map(a, schema, err) < 0) {
        a->rc = cli_writer_stop(a->w, a->records + 1, err->msg);
        rc = -1;
    }
    for (int64_t from = 0; rc == 0 && from < fr_batch_num_rows(b); from += a->batch_rows) {
        int64_t n = fr_batch_num_rows(b) - from;
        if (n > a->batch_rows) n = a->batch_rows;
        fr_batch *piece = NULL;
        int64_t bad_row = 0;
        if (arrow_piece(a, b, from, n, &piece, &bad_row, err) < 0) {
            a->rc = cli_writer_stop(a->w, a->records + bad_row + 1, err->msg);
            rc = -1;
        } else if ((a->rc = cli_writer_append(a->w, piece, a->records + from + n)) != 0) {
            rc = -1;
        }
    }
    a->records += fr_batch_num_rows(b);
    fr_batch_free(b);
    /* Stopping the stream read: the reason is reported already. */
    if (rc < 0) {
        a->stopped = true;
        return fr_fail(err, FR_ESTATE, "stopped");
    }
    return 0;
}

static int arrow_read_all(FILE *in, fr_buf *out, fr_error *err)
{
    char chunk[1 << 16];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, in)) > 0) {
        FR_CHECK(out->len + n <= CLI_ARROW_INPUT_BYTES_MAX, FR_ELIMIT, err,
                 "the Arrow stream is larger than the limit of %zu bytes",
                 CLI_ARROW_INPUT_BYTES_MAX);
        FR_TRY(fr_buf_append(out, chunk, n, err));
    }
    if (ferror(in)) return fr_fail_errno(err, errno, "reading stdin");
    return 0;
}

int cli_produce_arrow(cli_writer *w, const fr_schema *table, int64_t batch_rows, FILE *in)
{
    arrow_in a = {.w = w, .table = table, .batch_rows = batch_rows,
                  .ncols = fr_schema_num_fields(table)};
    fr_buf data;
    fr_buf_init(&data);
    fr_error err = {0};
    int rc = CLI_EXIT_FAILED;
    a.cols = fr_calloc((size_t)a.ncols + 1, sizeof *a.cols);
    if (!a.cols) {
        cli_error("out of memory");
    } else if (arrow_read_all(in, &data, &err) < 0) {
        cli_error("%s", err.msg);
    } else if (data.len == 0) {
        cli_error("stdin is empty: --format arrow reads an Arrow IPC stream");
    } else if (fr_ipc_read_stream(data.data, data.len, arrow_on_batch, &a, &err) < 0) {
        rc = a.stopped ? a.rc
                       : cli_writer_stop(w, a.records + 1, err.msg[0] ? err.msg : "bad stream");
    } else {
        cli_writer_summary(w);
        rc = CLI_EXIT_OK;
    }
    fr_builder_free(a.bld);
    fr_free(a.cols);
    fr_buf_free(&data);
    return rc;
}
