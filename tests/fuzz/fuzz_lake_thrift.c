/* fuzz_lake_thrift.c — the Thrift compact decoder of Parquet's FileMetaData: any input must
 * decode or fail with an error, never read out of bounds, recurse without limit or leak. */
#include "lake/lake_parquet_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fr_arena *a = fr_arena_new(4096);
    if (!a) return 0;
    pq_file_meta m;
    fr_error err;
    if (pq_meta_decode(data, size, a, &m, "fuzz", &err) == 0) {
        /* Touch what was decoded: counts and pointers must be consistent. */
        size_t sum = 0;
        for (int32_t i = 0; i < m.nschema; i++) sum += m.schema[i].name_len;
        for (int32_t g = 0; g < m.nrgs; g++)
            for (int32_t c = 0; c < m.rgs[g].ncols; c++) sum += m.rgs[g].cols[c].stats.min_len;
        (void)sum;
    }
    pq_page_header h;
    size_t used;
    if (pq_page_header_decode(data, size, &h, &used, "fuzz", &err) == 0 && used > size) __builtin_trap();
    fr_arena_free(a);
    return 0;
}
