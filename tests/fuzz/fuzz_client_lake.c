/* fuzz_client_lake.c — feeds arbitrary bytes to what a remote client takes from a server's
 * answer to lake_snapshot. The first byte describes the table the client knows: bits 0-5 its
 * buckets (1 to 64), bit 6 whether it is partitioned; the rest is the answer's protobuf,
 * unpacked as the client unpacks it (fr_rpc_unpack) and taken with fr_rlake_take. What is
 * taken must hold what the answer said and keep every promise of firth.h: offsets sorted by
 * partition and bucket, each bucket once and one of the table's, none without a snapshot;
 * what is refused must be refused as corrupt (or for memory), with a message and no result. */
#include <stdio.h>
#include <stdlib.h>

#include "client/client_int.h"

/* Whether s, taken from m, is what m says and what firth.h promises. */
static bool fz_taken_ok(const firth_lake_snapshot *s, const Firth__LakeSnapshotResponse *m,
                        int nbuckets, bool partitioned)
{
    if (s->snapshot_id != m->snapshot_id || s->committed_at_ms != m->committed_at_ms ||
        s->snapshot_id < -1 || s->committed_at_ms < 0 || s->noffsets < 0 ||
        (size_t)s->noffsets != m->n_offsets || (s->noffsets == 0) != (s->offsets == NULL))
        return false;
    if (s->snapshot_id == -1 && (s->noffsets != 0 || s->committed_at_ms != 0)) return false;
    for (int i = 0; i < s->noffsets; i++) {
        const firth_lake_offset *o = &s->offsets[i], *p = i ? &s->offsets[i - 1] : NULL;
        if (o->partition_id != m->offsets[i]->partition_id ||
            o->bucket != m->offsets[i]->bucket || o->offset != m->offsets[i]->offset)
            return false;
        if (o->bucket < 0 || o->bucket >= nbuckets || o->offset < 0 ||
            (partitioned ? o->partition_id < 0 : o->partition_id != -1))
            return false;
        if (p && (o->partition_id < p->partition_id ||
                  (o->partition_id == p->partition_id && o->bucket <= p->bucket)))
            return false;
    }
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    int nbuckets = 1 + (data[0] & 63);
    bool partitioned = data[0] & 64;
    ProtobufCMessage *m = NULL;
    fr_error err = {0};
    if (fr_rpc_unpack(&firth__lake_snapshot_response__descriptor, "lake_snapshot response",
                      data + 1, size - 1, &m, &err) < 0)
        return 0;
    const Firth__LakeSnapshotResponse *r = (const Firth__LakeSnapshotResponse *)m;
    firth_lake_snapshot *s = NULL;
    int rc = fr_rlake_take(r, "fz.t", nbuckets, partitioned, &s, &err);
    if (rc == 0 && !fz_taken_ok(s, r, nbuckets, partitioned)) {
        fprintf(stderr, "fuzz_client_lake: an answer taken that breaks a promise\n");
        abort();
    }
    if (rc < 0 && (s || !err.msg[0] || (rc != FR_ECORRUPT && rc != FR_ENOMEM))) {
        fprintf(stderr, "fuzz_client_lake: a refusal (%d) with a result or without a "
                        "message: %s\n", rc, err.msg);
        abort();
    }
    firth_lake_snapshot_free(s);
    fr_rpc_free(m);
    return 0;
}
