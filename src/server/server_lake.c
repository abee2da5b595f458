/* server_lake.c — the lake_snapshot api: the newest snapshot of a lake-enabled table's lake,
 * with the tiered offset of every bucket it records, for a client that reads the lake and
 * then each bucket's log from where the lake ends.
 *
 * The handler runs on a worker, as every api but api_versions and authenticate does
 * (server_conn.c): reading the lake's metadata is file I/O (fr_table_lake_current, which
 * never waits for a tiering round in progress). The answer's offsets are sorted by partition
 * id, then bucket, each bucket once (the client checks it). */
#include "server/server_int.h"

int srv_handle_lake_snapshot(fr_server *s, srv_job *j, fr_error *err)
{
    Firth__LakeSnapshotRequest *req = (Firth__LakeSnapshotRequest *)j->request;
    fr_table *t = NULL;
    FR_TRY(srv_get_table(s, req->path, req->table_id, &t, err));
    fr_lake_snapshot *snap = NULL;
    Firth__LakeOffset *offs = NULL;
    Firth__LakeOffset **list = NULL;
    int rc;
    FR_GOTO(fr_table_lake_current(t, &snap, err));
    Firth__LakeSnapshotResponse resp = FIRTH__LAKE_SNAPSHOT_RESPONSE__INIT;
    resp.snapshot_id = -1;
    if (snap) {
        size_t n = (size_t)snap->noffsets;
        offs = fr_calloc(n + 1, sizeof *offs);
        list = fr_calloc(n + 1, sizeof *list);
        if (!offs || !list) FR_GOTO(fr_fail(err, FR_ENOMEM, "out of memory answering "
                                            "lake_snapshot of %zu buckets", n));
        for (size_t i = 0; i < n; i++) {
            firth__lake_offset__init(&offs[i]);
            offs[i].partition_id = snap->offsets[i].partition_id;
            offs[i].bucket = snap->offsets[i].bucket;
            offs[i].offset = snap->offsets[i].offset;
            list[i] = &offs[i];
        }
        resp.snapshot_id = snap->snapshot_id;
        resp.committed_at_ms = snap->timestamp_ms;
        resp.offsets = list;
        resp.n_offsets = n;
    }
    rc = srv_respond(j, FR_RPC_SUCCESS, &resp.base, err);
fail:
    fr_free(offs);
    fr_free(list);
    if (snap) fr_lake_snapshots_free(snap, 1);
    fr_table_release(t);
    return rc;
}
