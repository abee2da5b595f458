/* fuzz_engine_catalog.c — the catalog file reader (meta/catalog.json): any bytes must be
 * either loaded or refused with FR_EINVAL/FR_ENOMEM (leaving the catalog empty), never crash
 * or leak; every table of a catalog that loads must be consistent (buckets in range, bucket
 * key and partition key columns in the schema, primary key columns NOT NULL, partitions
 * with a value per key and sorted by name) and describe itself as JSON. No file is touched: the engine
 * struct is built here with a data dir that is never opened. */
#include <stdint.h>
#include <stdlib.h>

#include "engine/engine_int.h"

static void engine_init(fr_engine *e)
{
    memset(e, 0, sizeof *e);
    fr_engine_options_default(&e->opts);
    e->data_dir = "/nonexistent/firth-fuzz";
    e->opts.data_dir = e->data_dir;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fr_engine e;
    engine_init(&e);
    fr_error err;
    int rc = fr_catalog_parse(&e, "catalog.json", data, size, &err);
    if (rc < 0) {
        if (rc != FR_EINVAL && rc != FR_ENOMEM) abort();
        if (e.ntables != 0 || e.ndbs != 0) abort();
        return 0;
    }
    for (int i = 0; i < e.ntables; i++) {
        fr_table *t = e.tables[i];
        if (fr_table_num_buckets(t) < 1 || fr_table_num_buckets(t) > FR_BUCKETS_MAX) abort();
        int nk = 0;
        const int *key = fr_table_bucket_key(t, &nk);
        for (int k = 0; k < nk; k++)
            if (key[k] < 0 || key[k] >= fr_schema_num_fields(fr_table_schema(t))) abort();
        int npart = 0, npk = 0;
        const int *part = fr_table_partition_keys(t, &npart);
        const int *pk = fr_table_primary_key(t, &npk);
        for (int k = 0; k < npart; k++)
            if (part[k] < 0 || part[k] >= fr_schema_num_fields(fr_table_schema(t))) abort();
        for (int k = 0; k < npk; k++)
            if (fr_schema_field(fr_table_schema(t), pk[k])->type.nullable) abort();
        fr_partition *parts = NULL;
        int np = 0;
        if (fr_table_list_partitions(t, &parts, &np, &err) == 0) {
            for (int k = 0; k < np; k++)
                if (parts[k].nvalues != npart || (k > 0 && strcmp(parts[k - 1].name, parts[k].name) >= 0))
                    abort();
            fr_partitions_free(parts, np);
        }
        char *json = NULL;
        if (fr_table_to_json(t, &json, &err) == 0) fr_free(json);
    }
    fr_catalog_clear(&e);
    return 0;
}
