/* client_lake.c — firth_latest_lake_snapshot: where tiering of a lake-enabled table stands,
 * embedded (the table's lake, read through a handle of its own as union reads do, so that a
 * tiering round in progress is not waited for) or remote (the LAKE_SNAPSHOT api).
 *
 * Remote, the request names the table by the description the client keeps for one-shot
 * calls (client_table.c) and carries its table id, so that the answer is about the table
 * described; the answer is then checked against that description (fr_rlake_take) before the
 * caller sees it. A description outdated by a DROP and CREATE under the same name is refused
 * by the server (NOT_FOUND): the call is made once more on a fresh one.
 *
 * A result is one allocation, the struct followed by its offsets, sorted by partition id,
 * then bucket (fr_table_lake_current sorts them; the server sends them so). */
#include "client/client_int.h"

#include <inttypes.h>
#include <stdlib.h>

void firth_lake_snapshot_free(firth_lake_snapshot *s) { fr_free(s); }

/* A zeroed result with room for n offsets; NULL when out of memory. */
static firth_lake_snapshot *result_new(size_t n, firth_lake_offset **offsets)
{
    _Static_assert(sizeof(firth_lake_snapshot) % _Alignof(firth_lake_offset) == 0,
                   "the offsets follow the struct, aligned");
    firth_lake_snapshot *s = fr_calloc(1, sizeof *s + n * sizeof **offsets);
    *offsets = s ? (firth_lake_offset *)(s + 1) : NULL;
    if (s && n) s->offsets = *offsets;
    return s;
}

/* ---- embedded ------------------------------------------------------------------------------ */

/* The result of the table's current snapshot (NULL: the lake has none yet). */
static int local_result(const fr_lake_snapshot *snap, firth_lake_snapshot **out,
                        fr_error *err)
{
    size_t n = snap ? (size_t)snap->noffsets : 0;
    firth_lake_offset *offs = NULL;
    firth_lake_snapshot *s = result_new(n, &offs);
    FR_CHECK(s, FR_ENOMEM, err, "out of memory reading a lake snapshot of %zu buckets", n);
    s->snapshot_id = snap ? snap->snapshot_id : -1;
    s->committed_at_ms = snap ? snap->timestamp_ms : 0;
    s->noffsets = (int)n;
    for (size_t i = 0; i < n; i++)
        offs[i] = (firth_lake_offset){snap->offsets[i].partition_id, snap->offsets[i].bucket,
                                      snap->offsets[i].offset};
    *out = s;
    return FR_OK;
}

static int local_latest(firth_client *c, const char *table, firth_lake_snapshot **out,
                        fr_error *err)
{
    char db[FR_NAME_BYTES_MAX + 1], name[FR_NAME_BYTES_MAX + 1];
    FR_TRY(fr_client_resolve(c, table, db, name, err));
    fr_table *t = NULL;
    FR_TRY(fr_engine_get_table(c->engine, db, name, &t, err));
    fr_lake_snapshot *snap = NULL;
    int rc = fr_table_lake_current(t, &snap, err);
    if (rc < 0) goto fail;
    rc = local_result(snap, out, err);
fail:
    if (snap) fr_lake_snapshots_free(snap, 1);
    fr_table_release(t);
    return rc;
}

/* ---- remote -------------------------------------------------------------------------------- */

/* Offset i of an answer (after prev, NULL for the first) fits a table of nbuckets buckets,
 * partitioned or not. */
static int check_offset(const Firth__LakeOffset *o, const Firth__LakeOffset *prev, size_t i,
                        const char *qname, int nbuckets, bool partitioned, fr_error *err)
{
    FR_CHECK(o->bucket >= 0 && o->bucket < nbuckets, FR_ECORRUPT, err,
             "lake_snapshot answer for %s: offsets[%zu]: bucket %d is not one of the table's "
             "%d buckets", qname, i, (int)o->bucket, nbuckets);
    FR_CHECK(partitioned ? o->partition_id >= 0 : o->partition_id == -1, FR_ECORRUPT, err,
             "lake_snapshot answer for %s: offsets[%zu]: partition id %" PRId64 " for a table "
             "%s partitions", qname, i, o->partition_id, partitioned ? "with" : "without");
    FR_CHECK(o->offset >= 0, FR_ECORRUPT, err, "lake_snapshot answer for %s: offsets[%zu]: "
             "offset %" PRId64 " is negative", qname, i, o->offset);
    bool after = !prev || o->partition_id > prev->partition_id ||
                 (o->partition_id == prev->partition_id && o->bucket > prev->bucket);
    FR_CHECK(after, FR_ECORRUPT, err, "lake_snapshot answer for %s: offsets[%zu]: partition "
             "%" PRId64 " bucket %d comes after partition %" PRId64 " bucket %d (each bucket "
             "once, in order)", qname, i, o->partition_id, (int)o->bucket, prev->partition_id,
             (int)prev->bucket);
    return FR_OK;
}

int fr_rlake_take(const Firth__LakeSnapshotResponse *m, const char *qname, int nbuckets,
                  bool partitioned, firth_lake_snapshot **out, fr_error *err)
{
    *out = NULL;
    size_t n = m->n_offsets;
    FR_CHECK(m->snapshot_id >= -1, FR_ECORRUPT, err, "lake_snapshot answer for %s: snapshot "
             "id %" PRId64 " is neither an id nor -1 (none)", qname, m->snapshot_id);
    FR_CHECK(m->committed_at_ms >= 0, FR_ECORRUPT, err, "lake_snapshot answer for %s: commit "
             "time %" PRId64 " is negative", qname, m->committed_at_ms);
    FR_CHECK(m->snapshot_id >= 0 || (n == 0 && m->committed_at_ms == 0), FR_ECORRUPT, err,
             "lake_snapshot answer for %s: no snapshot, yet %zu offsets and commit time %"
             PRId64, qname, n, m->committed_at_ms);
    FR_CHECK(n <= FR_RPC_LAKE_OFFSETS_MAX, FR_ECORRUPT, err, "lake_snapshot answer for %s: "
             "%zu offsets, more than a lake snapshot holds (%d)", qname, n,
             FR_RPC_LAKE_OFFSETS_MAX);
    for (size_t i = 0; i < n; i++)
        FR_TRY(check_offset(m->offsets[i], i ? m->offsets[i - 1] : NULL, i, qname, nbuckets,
                            partitioned, err));
    firth_lake_offset *offs = NULL;
    firth_lake_snapshot *s = result_new(n, &offs);
    FR_CHECK(s, FR_ENOMEM, err, "out of memory reading a lake snapshot of %zu buckets", n);
    s->snapshot_id = m->snapshot_id;
    s->committed_at_ms = m->committed_at_ms;
    s->noffsets = (int)n;
    for (size_t i = 0; i < n; i++)
        offs[i] = (firth_lake_offset){m->offsets[i]->partition_id, m->offsets[i]->bucket,
                                      m->offsets[i]->offset};
    *out = s;
    return FR_OK;
}

/* One LAKE_SNAPSHOT request about the table t describes, its answer checked against t. */
static int remote_call(fr_ctable *t, firth_lake_snapshot **out, fr_error *err)
{
    Firth__LakeSnapshotRequest req = FIRTH__LAKE_SNAPSHOT_REQUEST__INIT;
    Firth__TablePath path = FIRTH__TABLE_PATH__INIT;
    fr_ctable_path(t, &path);
    req.path = &path;
    req.table_id = t->id;
    ProtobufCMessage *m = NULL;
    FR_TRY(fr_cnet_call(t->client->net, FR_RPC_LAKE_SNAPSHOT, &req.base, 0, FR_CNET_RETRY,
                        NULL, NULL, &m, NULL, err));
    int rc = fr_rlake_take((const Firth__LakeSnapshotResponse *)m, t->qname, t->nbuckets,
                           t->npart > 0, out, err);
    fr_rpc_free(m);
    return rc;
}

static int remote_latest(firth_client *c, const char *table, firth_lake_snapshot **out,
                         fr_error *err)
{
    for (bool fresh = false;; fresh = true) {
        fr_ctable *t = NULL;
        bool cached = false;
        int rc = fr_ctable_get(c, table, fresh, &t, &cached, err);
        if (rc == FR_OK) rc = remote_call(t, out, err);
        /* The server refuses the id of a table dropped (and perhaps created again) since the
         * description was kept: forget it, and ask about the table of that name now. */
        bool stale = rc == FR_ENOTFOUND && cached;
        if (stale) fr_ctable_forget(t);
        fr_ctable_put(t);
        if (!stale) return rc;
        fr_error_clear(err);
    }
}

/* ---- the public call ----------------------------------------------------------------------- */

int firth_latest_lake_snapshot(firth_client *c, const char *table, firth_lake_snapshot **out,
                               firth_error *err)
{
    if (!c || !table || !out)
        return fr_client_fail(err, FIRTH_EINVAL, "latest lake snapshot: a NULL argument");
    *out = NULL;
    fr_error e = {0};
    int rc = c->remote ? remote_latest(c, table, out, &e) : local_latest(c, table, out, &e);
    return rc < 0 ? firth_error_from(&e, err) : FIRTH_OK;
}
