/* fuzz_lake_parquet_page.c — reading every row group of a Parquet file from memory: page
 * headers, decompression, definition levels, dictionaries and every value decoder. Also
 * reads a pruned projection (the last column alone) of each row group. Inputs that are no
 * Parquet file are decoded as one column chunk: byte 0 picks the column's type and
 * nullability, byte 1 the codec, byte 2 the row count, the rest are the chunk's pages, so
 * the page decoders are reached without a footer. */
#include <stdlib.h>

#include "lake/lake.h"
#include "lake/lake_parquet_page.h"
#include "fuzz_touch.h"

static const struct {
    int physical, type_length, logical, converted;
    const char *type;
} kinds[] = {
    {PQ_BOOLEAN, 0, PQ_LT_NONE, -1, "BOOLEAN"},
    {PQ_INT32, 0, PQ_LT_NONE, PQ_CT_INT_8, "TINYINT"},
    {PQ_INT32, 0, PQ_LT_NONE, -1, "INT"},
    {PQ_INT64, 0, PQ_LT_NONE, -1, "BIGINT"},
    {PQ_FLOAT, 0, PQ_LT_NONE, -1, "FLOAT"},
    {PQ_DOUBLE, 0, PQ_LT_NONE, -1, "DOUBLE"},
    {PQ_INT32, 0, PQ_LT_NONE, PQ_CT_DECIMAL, "DECIMAL(9, 2)"},
    {PQ_INT64, 0, PQ_LT_NONE, PQ_CT_DECIMAL, "DECIMAL(18, 2)"},
    {PQ_FLBA, 5, PQ_LT_NONE, PQ_CT_DECIMAL, "DECIMAL(12, 2)"},
    {PQ_FLBA, 3, PQ_LT_NONE, -1, "BYTES"},
    {PQ_BYTE_ARRAY, 0, PQ_LT_NONE, -1, "BYTES"},
    {PQ_BYTE_ARRAY, 0, PQ_LT_STRING, PQ_CT_UTF8, "STRING"},
};

static void fuzz_chunk(const uint8_t *data, size_t size)
{
    if (size < 3) return;
    int k = data[0] % (int)(sizeof kinds / sizeof kinds[0]);
    static const int codecs[] = {FR_PARQUET_UNCOMPRESSED, FR_PARQUET_SNAPPY, FR_PARQUET_ZSTD, PQ_CODEC_LZ4_RAW};
    int codec = codecs[data[1] % 4];
    int64_t rows = 1 + data[2];
    fr_error err;
    fr_type t;
    if (fr_type_parse(kinds[k].type, &t, &err) < 0) return;
    t.nullable = (data[0] / 16) & 1;
    pq_schema_elem e = {.type = kinds[k].physical, .type_length = kinds[k].type_length,
                        .repetition = t.nullable ? PQ_OPTIONAL : PQ_REQUIRED,
                        .converted = kinds[k].converted, .field_id = -1, .logical = kinds[k].logical};
    pq_colr c;
    pq_colr_init(&c, &e, &t);
    pq_scratch s = {0};
    uint8_t *bufs[3] = {0};
    int64_t nulls = 0;
    if (pq_read_chunk(&c, codec, data + 3, size - 3, rows, &s, bufs, &nulls, &err) == 0) {
        fr_schema *schema = NULL;
        fr_field f = {.name = "c", .type = t};
        fr_batch *b = NULL;
        if (fr_schema_new(&f, 1, 0, &schema, &err) < 0) {
            for (int i = 0; i < 3; i++) fr_free(bufs[i]);
        } else if (fr_batch_from_buffers(schema, rows, bufs, &nulls, &b, &err) == 0) {
            volatile uint64_t sink = fuzz_touch(b);
            (void)sink;
            fr_batch_free(b);
        }
        fr_schema_free(schema);
    } else {
        for (int i = 0; i < 3; i++) fr_free(bufs[i]);
    }
    pq_scratch_free(&s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fr_parquet_reader *r = NULL;
    fr_error err;
    if (fr_parquet_open_mem(data, size, &r, &err) < 0) {
        fuzz_chunk(data, size);
        return 0;
    }
    int ncols = fr_schema_num_fields(fr_parquet_schema(r));
    int *cols = malloc(sizeof(int) * (size_t)ncols);
    for (int i = 0; cols && i < ncols; i++) cols[i] = i;
    for (int g = 0; cols && g < fr_parquet_num_row_groups(r) && g < 64; g++) {
        /* Row groups that claim millions of rows would only test the allocator. */
        if (fr_parquet_row_group_rows(r, g) > 100000) continue;
        fr_batch *b = NULL;
        if (fr_parquet_read_row_group(r, g, cols, ncols, &b, &err) == 0) {
            volatile uint64_t sink = fuzz_touch(b);
            (void)sink;
            fr_batch_free(b);
        }
        b = NULL;
        if (fr_parquet_read_row_group(r, g, &cols[ncols - 1], 1, &b, &err) == 0) fr_batch_free(b);
    }
    free(cols);
    fr_parquet_close(r);
    return 0;
}
