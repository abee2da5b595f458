/* client_gather.c — building one batch out of rows of others: the writer joins the rows of
 * many small appends into one record batch per bucket, and lookups put the rows found in
 * several buckets back in the order of the keys.
 *
 * Every buffer of the new batch is copied (the sources may be freed afterwards); runs of
 * rows are copied with one memcpy per run for fixed-width values and data bytes, bit by bit
 * for bitmaps. */
#include "client/client_int.h"

static inline bool bit_get(const uint8_t *bits, int64_t i)
{
    return (bits[i >> 3] >> (i & 7)) & 1;
}

static inline void bit_set(uint8_t *bits, int64_t i)
{
    bits[i >> 3] |= (uint8_t)(1u << (i & 7));
}

/* The validity of the gathered rows into bufs[0], and their null count. */
static int gather_validity(const fr_column *const *cols, const fr_gather_run *runs, int nruns,
                           int64_t rows, uint8_t **bufs, int64_t *null_count, fr_error *err)
{
    size_t bitmap = (size_t)(rows + 7) / 8 + 1;
    uint8_t *validity = fr_calloc(bitmap, 1);
    FR_CHECK(validity, FR_ENOMEM, err, "out of memory gathering %lld rows", (long long)rows);
    bufs[0] = validity;
    int64_t nulls = 0, at = 0;
    for (int r = 0; r < nruns; r++) {
        const fr_column *c = cols[r];
        for (int64_t i = 0; i < runs[r].count; i++, at++) {
            if (fr_column_is_null(c, runs[r].row + i)) nulls++;
            else bit_set(validity, at);
        }
    }
    *null_count = nulls;
    return FR_OK;
}

/* Copies one column of every run (cols[r] is run r's) into bufs[0..3) (validity, offsets,
 * values). */
static int gather_column(const fr_type *type, const fr_column *const *cols,
                         const fr_gather_run *runs, int nruns, int64_t rows, uint8_t **bufs,
                         int64_t *null_count, fr_error *err)
{
    size_t bitmap = (size_t)(rows + 7) / 8 + 1;
    int64_t at = 0;
    FR_TRY(gather_validity(cols, runs, nruns, rows, bufs, null_count, err));
    if (type->id == FR_T_BOOLEAN) {
        uint8_t *v = fr_calloc(bitmap, 1);
        FR_CHECK(v, FR_ENOMEM, err, "out of memory gathering %lld rows", (long long)rows);
        bufs[2] = v;
        at = 0;
        for (int r = 0; r < nruns; r++) {
            const fr_column *c = cols[r];
            for (int64_t i = 0; i < runs[r].count; i++, at++)
                if (bit_get(c->values, runs[r].row + i)) bit_set(v, at);
        }
        return FR_OK;
    }
    if (!fr_type_is_varwidth(type)) {
        size_t w = (size_t)fr_type_width(type);
        uint8_t *v = fr_malloc(w * (size_t)rows + 8);
        FR_CHECK(v, FR_ENOMEM, err, "out of memory gathering %lld rows", (long long)rows);
        bufs[2] = v;
        for (int r = 0; r < nruns; r++) {
            const fr_column *c = cols[r];
            size_t n = w * (size_t)runs[r].count;
            if (n) memcpy(v, c->values + w * (size_t)runs[r].row, n);
            v += n;
        }
        return FR_OK;
    }
    int64_t data = 0;
    for (int r = 0; r < nruns; r++) {
        const fr_column *c = cols[r];
        data += (int64_t)c->offsets[runs[r].row + runs[r].count] - c->offsets[runs[r].row];
    }
    FR_CHECK(data <= INT32_MAX, FR_ELIMIT, err,
             "gathering %lld bytes into one column: more than a batch holds", (long long)data);
    int32_t *off = fr_malloc(sizeof *off * (size_t)(rows + 1));
    uint8_t *v = fr_malloc((size_t)data + 8);
    bufs[1] = (uint8_t *)off;
    bufs[2] = v;
    FR_CHECK(off && v, FR_ENOMEM, err, "out of memory gathering %lld bytes", (long long)data);
    int32_t pos = 0;
    at = 0;
    off[0] = 0;
    for (int r = 0; r < nruns; r++) {
        const fr_column *c = cols[r];
        int32_t base = c->offsets[runs[r].row];
        int32_t len = c->offsets[runs[r].row + runs[r].count] - base;
        if (len) memcpy(v + pos, c->values + base, (size_t)len);
        for (int64_t i = 1; i <= runs[r].count; i++)
            off[at + i] = pos + (c->offsets[runs[r].row + i] - base);
        at += runs[r].count;
        pos += len;
    }
    return FR_OK;
}

int fr_gather(const fr_schema *schema, const fr_gather_run *runs, int nruns, fr_batch **out,
              fr_error *err)
{
    int ncols = fr_schema_num_fields(schema);
    int64_t rows = 0;
    for (int r = 0; r < nruns; r++) rows += runs[r].count;
    FR_CHECK(rows <= FR_BATCH_ROWS_MAX, FR_ELIMIT, err,
             "gathering %lld rows: more than the %d rows of a batch", (long long)rows,
             FR_BATCH_ROWS_MAX);
    uint8_t **bufs = fr_calloc((size_t)ncols * 3 + 1, sizeof *bufs);
    int64_t *nulls = fr_calloc((size_t)ncols + 1, sizeof *nulls);
    /* Each run's column, looked up once per column for all the passes over it. */
    const fr_column **cols = fr_malloc(((size_t)nruns + 1) * sizeof *cols);
    int rc = FR_OK;
    if (!bufs || !nulls || !cols) {
        rc = fr_fail(err, FR_ENOMEM, "out of memory gathering rows");
        goto fail;
    }
    for (int c = 0; c < ncols; c++) {
        for (int r = 0; r < nruns; r++) cols[r] = fr_batch_column(runs[r].src, c);
        FR_GOTO(gather_column(&fr_schema_field(schema, c)->type, cols, runs, nruns, rows,
                              bufs + 3 * c, &nulls[c], err));
    }
    fr_free(cols);
    rc = fr_batch_from_buffers(schema, rows, bufs, nulls, out, err);
    fr_free(bufs); /* the buffers are the batch's now, whatever happened */
    fr_free(nulls);
    return rc;
fail:
    if (bufs)
        for (int i = 0; i < ncols * 3; i++) fr_free(bufs[i]);
    fr_free(bufs);
    fr_free(nulls);
    fr_free(cols);
    return rc;
}

int fr_gather_rows(const fr_batch *b, const int64_t *rows, int64_t n, fr_batch **out,
                   fr_error *err)
{
    /* Consecutive rows make one run, so that a sorted selection copies in blocks. */
    int64_t nruns = 0;
    for (int64_t i = 0; i < n; i++)
        if (i == 0 || rows[i] != rows[i - 1] + 1) nruns++;
    FR_CHECK(nruns <= INT32_MAX, FR_ELIMIT, err, "too many rows to gather");
    fr_gather_run *runs = fr_calloc((size_t)nruns + 1, sizeof *runs);
    FR_CHECK(runs, FR_ENOMEM, err, "out of memory gathering rows");
    int64_t k = -1;
    for (int64_t i = 0; i < n; i++) {
        if (i == 0 || rows[i] != rows[i - 1] + 1) runs[++k] = (fr_gather_run){b, rows[i], 0};
        runs[k].count++;
    }
    int rc = fr_gather(fr_batch_schema(b), runs, (int)nruns, out, err);
    fr_free(runs);
    return rc;
}

int64_t fr_gather_bytes(const fr_batch *b)
{
    int64_t rows = fr_batch_num_rows(b), bytes = 0;
    for (int i = 0; i < fr_batch_num_columns(b); i++) {
        const fr_column *c = fr_batch_column(b, i);
        if (c->validity) bytes += (rows + 7) / 8;
        if (c->type.id == FR_T_BOOLEAN) bytes += (rows + 7) / 8;
        else if (fr_type_is_varwidth(&c->type))
            bytes += 4 * rows + (rows ? c->offsets[rows] - c->offsets[0] : 0);
        else bytes += (int64_t)fr_type_width(&c->type) * rows;
    }
    return bytes;
}
