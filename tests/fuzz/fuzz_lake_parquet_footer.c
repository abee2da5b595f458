/* fuzz_lake_parquet_footer.c — opening a Parquet file from memory: the footer checks, the
 * FileMetaData decoder, the schema mapping and the row-group statistics. */
#include <stdlib.h>

#include "lake/lake.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fr_parquet_reader *r = NULL;
    fr_error err;
    if (fr_parquet_open_mem(data, size, &r, &err) < 0) return 0;
    int ncols = fr_schema_num_fields(fr_parquet_schema(r));
    fr_column_stats *st = calloc((size_t)ncols, sizeof *st);
    for (int g = 0; st && g < fr_parquet_num_row_groups(r); g++) {
        if (fr_parquet_row_group_stats(r, g, st, &err) < 0) break;
        for (int c = 0; c < ncols; c++) {
            int cmp;
            if (st[c].has_minmax) (void)fr_value_compare(&st[c].min, &st[c].max, &cmp, &err);
        }
    }
    free(st);
    fr_parquet_close(r);
    return 0;
}
