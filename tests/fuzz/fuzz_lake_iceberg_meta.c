/* fuzz_lake_iceberg_meta.c — the Iceberg table metadata reader: any bytes parse into a
 * checked fr_ice_meta or fail with an error naming the file, and the snapshot summaries of
 * what parses (counters, tiered offsets) are read the same way. Whatever parses must keep
 * its invariants: the current snapshot is listed, partition and key columns exist. */
#include <stdint.h>
#include <stdlib.h>

#include "lake/lake_iceberg_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fr_ice_meta *m = NULL;
    fr_error err;
    if (fr_ice_meta_parse((const char *)data, size, "fuzz.metadata.json", &m, &err) < 0) {
        if (!strstr(err.msg, "fuzz.metadata.json")) abort();
        return 0;
    }
    int n = fr_schema_num_fields(m->schema);
    if (n < 1) abort();
    if (m->current_id >= 0 && !fr_ice_meta_snap(m, m->current_id)) abort();
    for (int i = 0; i < m->npart; i++)
        if (m->part_cols[i] < 0 || m->part_cols[i] >= n) abort();
    for (int i = 0; i < m->nkey; i++)
        if (m->key_cols[i] < 0 || m->key_cols[i] >= n) abort();
    for (int i = 0; i < m->nsnaps; i++) {
        fr_lake_snapshot s;
        if (fr_ice_snap_describe(&m->snaps[i], &s, &err) == 0) {
            if (s.snapshot_id != m->snaps[i].id || s.noffsets < 0) abort();
            fr_free(s.offsets);
        }
    }
    if (!fr_ice_meta_schema_json(m)) abort();
    fr_ice_meta_free(m);
    return 0;
}
