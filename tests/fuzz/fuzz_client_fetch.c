/* fuzz_client_fetch.c — feeds arbitrary bytes to what a remote client decodes from a
 * server's fetch answer: the record batches of one bucket (fr_rfetch_decode), read with a
 * projection and a filter, from an offset taken from the input's first byte. Whatever
 * decodes is read cell by cell; every row's offset must be at or past the offset asked for
 * and increase within a batch. */
#include <stdio.h>
#include <stdlib.h>

#include "client/client_int.h"
#include "fuzz_touch.h"

static const char *SCHEMA_JSON =
    "{\"id\": 0, \"fields\": [{\"name\": \"id\", \"type\": \"BIGINT\", \"nullable\": false},"
    " {\"name\": \"s\", \"type\": \"STRING\", \"nullable\": true},"
    " {\"name\": \"v\", \"type\": \"DOUBLE\", \"nullable\": true}]}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    static fr_ctable t;
    static fr_rfetch plans[2];
    if (!t.schema) {
        fr_error err = {0};
        if (fr_schema_from_json(SCHEMA_JSON, strlen(SCHEMA_JSON), &t.schema, &err) < 0 ||
            fr_rfetch_init(&plans[0], &t, NULL, NULL, &err) < 0 ||
            fr_rfetch_init(&plans[1], &t, "s", "v > 1.5 AND id % 2 = 0", &err) < 0) {
            fprintf(stderr, "fuzz_client_fetch: setup: %s\n", err.msg);
            abort();
        }
        snprintf(t.qname, sizeof t.qname, "fuzz.t");
    }
    int64_t from = data[0] & 0x3f;
    volatile uint64_t sink = 0;
    for (int p = 0; p < 2; p++) {
        fr_rdecoded *d = NULL;
        int n = 0, cap = 0;
        fr_error err = {0};
        fr_rfetch_decode(&plans[p], &t, data + 1, size - 1, from, &d, &n, &cap, &err);
        for (int i = 0; i < n; i++) {
            sink += fuzz_touch(d[i].batch);
            for (int64_t r = 0; r < fr_batch_num_rows(d[i].batch); r++) {
                if (d[i].offsets[r] < from || (r > 0 && d[i].offsets[r] <= d[i].offsets[r - 1]))
                    abort();
            }
        }
        fr_rdecoded_free(d, n);
    }
    (void)sink;
    return 0;
}
