/* fuzz_lake_parquet_page.c — reading every row group of a Parquet file from memory: page
 * headers, decompression, definition levels, dictionaries and every value decoder. Also
 * reads a pruned projection (the last column alone) of each row group. */
#include <stdlib.h>

#include "lake/lake.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fr_parquet_reader *r = NULL;
    fr_error err;
    if (fr_parquet_open_mem(data, size, &r, &err) < 0) return 0;
    int ncols = fr_schema_num_fields(fr_parquet_schema(r));
    int *cols = malloc(sizeof(int) * (size_t)ncols);
    for (int i = 0; cols && i < ncols; i++) cols[i] = i;
    for (int g = 0; cols && g < fr_parquet_num_row_groups(r) && g < 64; g++) {
        /* Row groups that claim millions of rows would only test the allocator. */
        if (fr_parquet_row_group_rows(r, g) > 100000) continue;
        fr_batch *b = NULL;
        if (fr_parquet_read_row_group(r, g, cols, ncols, &b, &err) == 0) {
            for (int c = 0; c < fr_batch_num_columns(b); c++) {
                const fr_column *col = fr_batch_column(b, c);
                for (int64_t i = 0; i < col->length; i++) {
                    fr_value v;
                    fr_column_get(col, i, &v);
                }
            }
            fr_batch_free(b);
        }
        b = NULL;
        if (fr_parquet_read_row_group(r, g, &cols[ncols - 1], 1, &b, &err) == 0) fr_batch_free(b);
    }
    free(cols);
    fr_parquet_close(r);
    return 0;
}
