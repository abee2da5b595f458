/* fuzz_lake_avro.c — the readers of Iceberg manifest lists and manifests (Avro object
 * container files): any bytes are read or refused with FR_ECORRUPT/FR_EUNSUPPORTED naming
 * the file, never read out of bounds. The first input byte chooses the reader and the
 * table's partition fields (none; a string; __bucket INT; a decimal, a date and a
 * timestamp), and whether sequence numbers may be inherited from a manifest-list entry; the
 * rest is the file. */
#include <stdint.h>
#include <stdlib.h>

#include "lake/lake_iceberg_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    uint8_t mode = data[0];
    const uint8_t *p = data + 1;
    size_t n = size - 1;
    fr_arena *arena = fr_arena_new(4096);
    if (!arena) return 0;
    fr_error err;
    if ((mode & 3) == 0) {
        fr_ice_manifest *mans = NULL;
        int count = 0;
        if (fr_avro_read_manifest_list(p, n, "fuzz.avro", arena, &mans, &count, &err) == 0) {
            for (int i = 0; i < count; i++)
                if (!mans[i].path || mans[i].content < 0 || mans[i].content > 1) abort();
            fr_free(mans);
        } else if (!strstr(err.msg, "fuzz.avro")) {
            abort();
        }
        fr_arena_free(arena);
        return 0;
    }
    static const char *const names[] = {"region", "__bucket", "price", "day", "ts"};
    static const int32_t ids[] = {1000, 1001, 1002, 1003, 1004};
    fr_type types[5] = {fr_type_of(FR_T_STRING), fr_type_of(FR_T_INT), fr_type_decimal(12, 2),
                        fr_type_of(FR_T_DATE), fr_type_time_like(FR_T_TIMESTAMP_LTZ, 6)};
    fr_ice_part_spec ps = {0, types, ids, names};
    switch ((mode >> 2) & 3) {
    case 1: ps = (fr_ice_part_spec){1, types, ids, names}; break;
    case 2: ps = (fr_ice_part_spec){1, types + 1, ids + 1, names + 1}; break;
    case 3: ps = (fr_ice_part_spec){3, types + 2, ids + 2, names + 2}; break;
    default: break;
    }
    fr_ice_manifest man = {.path = "m.avro", .content = (mode & 3) == 2 ? 1 : 0, .seq = 7,
                           .min_seq = 7, .added_snapshot_id = 42};
    const fr_ice_manifest *inherit = (mode & 16) ? &man : NULL;
    fr_ice_file *files = NULL;
    int count = 0;
    if (fr_avro_read_manifest(p, n, "fuzz.avro", &ps, inherit, arena, &files, &count, &err) == 0) {
        for (int i = 0; i < count; i++) {
            const fr_ice_file *f = &files[i];
            if (!f->path || f->npart != ps.n || f->records < 0 || f->seq < 0) abort();
            for (int j = 0; j < f->nstats; j++) {
                const fr_ice_col_stat *s = &f->stats[j];
                fr_value v;
                /* Bounds of any length decode or fail cleanly for every type. */
                for (int t = 0; t < 5; t++) {
                    if (s->lower) (void)fr_ice_bound_decode(s->lower, (size_t)s->lower_len, &types[t], &v, NULL);
                    if (s->upper) (void)fr_ice_bound_decode(s->upper, (size_t)s->upper_len, &types[t], &v, NULL);
                }
            }
        }
        fr_free(files);
    } else if (!strstr(err.msg, "fuzz.avro")) {
        abort();
    }
    fr_arena_free(arena);
    return 0;
}
