/* fuzz_client_lookup.c — feeds arbitrary bytes to what a remote client decodes from a
 * server's answer to a lookup or a prefix lookup. The first byte picks the kind (bit 0) and
 * the keys asked of each bucket (bits 1-4: 1 to 16); the rest is the answer's protobuf,
 * unpacked as the client unpacks it, and each of its buckets is checked and decoded as a
 * lookuper does (fr_rlookup_take). Whatever a bucket gives is read cell by cell, and its
 * rows must be as many as its flags or counts say. */
#include <stdio.h>
#include <stdlib.h>

#include "client/client_int.h"
#include "fuzz_touch.h"

static const char *SCHEMA_JSON =
    "{\"id\": 0, \"fields\": [{\"name\": \"id\", \"type\": \"BIGINT\", \"nullable\": false},"
    " {\"name\": \"s\", \"type\": \"STRING\", \"nullable\": true},"
    " {\"name\": \"v\", \"type\": \"DOUBLE\", \"nullable\": true}]}";

/* The rows bucket i's flags or counts promise (a taken answer has them all >= 0). */
static int64_t promised(const fr_rlookup_part *part, bool prefix)
{
    int64_t n = 0;
    for (int64_t q = 0; q < part->n; q++) n += prefix ? part->counts[q] : part->hit[q];
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    static fr_schema *schema;
    if (!schema) {
        fr_error err = {0};
        if (fr_schema_from_json(SCHEMA_JSON, strlen(SCHEMA_JSON), &schema, &err) < 0) {
            fprintf(stderr, "fuzz_client_lookup: setup: %s\n", err.msg);
            abort();
        }
    }
    bool prefix = data[0] & 1;
    int64_t nkeys = 1 + ((data[0] >> 1) & 15);
    ProtobufCMessage *m =
        prefix ? (ProtobufCMessage *)firth__prefix_lookup_response__unpack(NULL, size - 1, data + 1)
               : (ProtobufCMessage *)firth__lookup_response__unpack(NULL, size - 1, data + 1);
    if (!m) return 0;
    size_t nbuckets = prefix ? ((Firth__PrefixLookupResponse *)m)->n_buckets
                             : ((Firth__LookupResponse *)m)->n_buckets;
    volatile uint64_t sink = 0;
    for (size_t i = 0; i < nbuckets; i++) {
        fr_rlookup_part part = {.n = nkeys};
        fr_error err = {0};
        if (fr_rlookup_take(m, prefix, (int)i, schema, &part, &err) == 0) {
            for (int b = 0; b < part.found.n; b++) sink += fuzz_touch(part.found.batches[b]);
            if (promised(&part, prefix) != part.found.rows) abort();
        }
        fr_rlookup_part_free(&part);
    }
    (void)sink;
    protobuf_c_message_free_unpacked(m, NULL);
    return 0;
}
