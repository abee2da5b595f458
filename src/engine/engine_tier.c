/* engine_tier.c — tiering: one round of a lake-enabled table (fr_table_tier), the status and
 * snapshots it leaves, and the clock retention uses so that it never removes an untiered
 * segment.
 *
 * A round, under the table's tiering mutex: open the lake table (the first time, removing
 * the files of rounds that never committed), read the current snapshot's tiered offsets,
 * fix every bucket's end offset, then read each bucket's log from its tiered offset (the
 * log's start when it has none) to that end and write it to one commit: a log table's rows
 * as they are; a primary-key table's changelog as the final state of every changed key (the
 * last change of a key wins): one equality delete per changed key and the key's final row
 * unless it was deleted. The commit publishes the new offset of every bucket read together
 * with the rows, so a crash anywhere leaves the previous snapshot and its offsets, and the
 * next round starts again from them. Nothing new: no commit. A primary-key range longer
 * than fr_tier_pk_rows_max records is cut into several commits, each a consistent state.
 *
 * Invariants: rounds of one table never overlap (tier_mu); the status (lake->st_mu) holds
 * the offsets of the snapshot last read or committed. */
#include "engine/engine_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <time.h>

#define FR_TIER_READ_BYTES (8 << 20)

int64_t fr_tier_pk_rows_max = 1 << 20;

/* ---- the status -------------------------------------------------------------------------- */

/* Records the current snapshot s (NULL: none) as the table's tiered position. */
static void status_set_snapshot(fr_table_lake *l, const fr_lake_snapshot *s)
{
    fr_lake_offset *copy = NULL;
    int n = s ? s->noffsets : 0;
    if (n > 0) {
        copy = fr_malloc((size_t)n * sizeof *copy);
        if (!copy) return; /* the status stays as it was, behind: the next round retries */
        memcpy(copy, s->offsets, (size_t)n * sizeof *copy);
    }
    pthread_mutex_lock(&l->st_mu);
    fr_free(l->offsets);
    l->offsets = copy;
    l->noffsets = n;
    l->offsets_known = true;
    l->snapshot_id = s ? s->snapshot_id : -1;
    l->snapshot_ms = s ? s->timestamp_ms : 0;
    pthread_mutex_unlock(&l->st_mu);
}

static void status_round(fr_table_lake *l, int rc, const fr_error *err)
{
    pthread_mutex_lock(&l->st_mu);
    l->rounds++;
    if (rc < 0) {
        l->failures++;
        snprintf(l->last_error, sizeof l->last_error, "%s", err->msg);
    } else {
        l->last_error[0] = '\0';
    }
    pthread_mutex_unlock(&l->st_mu);
}

/* The tiered offset of one bucket in offs, or -1 when it has none. */
static int64_t offset_of(const fr_lake_offset *offs, int n, int64_t pid, int bucket)
{
    for (int i = 0; i < n; i++)
        if (offs[i].partition_id == pid && offs[i].bucket == bucket) return offs[i].offset;
    return -1;
}

/* Re-reads the lake's current snapshot into the status. tier_mu held. A lake that fails to
 * read is closed, so that the next round opens it again. */
static int load_current_locked(fr_table *t, fr_lake_snapshot **cur, fr_error *err)
{
    fr_table_lake *l = t->lake;
    *cur = NULL;
    bool fresh = l->ice == NULL;
    FR_TRY(fr_table_lake_ensure_locked(t, err));
    int rc = fresh ? FR_OK : fr_iceberg_refresh(l->ice, err);
    if (rc == FR_OK) rc = fr_iceberg_current(l->ice, cur, err);
    if (rc < 0) {
        fr_iceberg_close(l->ice);
        l->ice = NULL;
        fr_error_wrap(err, "the lake of table %s at %s", t->qname, l->dir);
        return rc;
    }
    status_set_snapshot(l, *cur);
    return FR_OK;
}

/* ---- the buckets of a round ------------------------------------------------------------- */

typedef struct tier_bucket {
    fr_tpart *part;       /* NULL for a table without partitions */
    int64_t pid;          /* -1 then */
    int bucket;
    fr_log *log;
    int64_t from, end;
} tier_bucket;

typedef struct tier_plan {
    fr_tpart **parts;
    int nparts;
    tier_bucket *b;
    int n;
} tier_plan;

static void plan_free(tier_plan *p)
{
    fr_tparts_release(p->parts, p->nparts);
    fr_free(p->b);
    memset(p, 0, sizeof *p);
}

/* Every bucket's log that exists, with the range to tier: from the tiered offset (or the
 * log's start) to the end as of now. */
static int plan_round(fr_table *t, const fr_lake_snapshot *cur, tier_plan *p, fr_error *err)
{
    memset(p, 0, sizeof *p);
    int nb = t->conf.nbuckets;
    if (t->conf.npart > 0) FR_TRY(fr_table_parts_snapshot(t, &p->parts, &p->nparts, err));
    int nsets = t->conf.npart > 0 ? p->nparts : 1;
    p->b = fr_calloc((size_t)nsets * (size_t)nb + 1, sizeof *p->b);
    FR_CHECK(p->b, FR_ENOMEM, err, "out of memory planning a tiering round of %s", t->qname);
    for (int s = 0; s < nsets; s++) {
        fr_tpart *part = t->conf.npart > 0 ? p->parts[s] : NULL;
        for (int b = 0; b < nb; b++) {
            fr_log *log = NULL;
            FR_TRY(fr_tpart_log(t, part, b, true, &log, err));
            if (!log) continue; /* never written */
            tier_bucket *tb = &p->b[p->n++];
            tb->part = part;
            tb->pid = part ? part->info.id : -1;
            tb->bucket = b;
            tb->log = log;
            tb->end = fr_log_end_offset(log);
            int64_t start = fr_log_start_offset(log);
            int64_t at = cur ? offset_of(cur->offsets, cur->noffsets, tb->pid, b) : -1;
            if (at >= 0 && at < start)
                FR_WARN("tiering %s bucket %d%s: the lake is tiered to offset %" PRId64
                        " but the log starts at %" PRId64 "; the records between are lost "
                        "to the lake", t->qname, b, part ? " of a partition" : "", at, start);
            tb->from = at < start ? start : at;
            if (tb->from > tb->end) tb->from = tb->end;
        }
    }
    return FR_OK;
}

/* ---- reading a bucket's range ----------------------------------------------------------- */

/* What the log read hands to a round. */
typedef struct tier_read {
    fr_table *t;
    const tier_bucket *tb;
    fr_iceberg_commit *commit;
    const atomic_bool *stop;
    int (*on_rows)(struct tier_read *r, fr_batch *rows, const int64_t *offsets,
                   const uint8_t *types, int64_t commit_ts, fr_error *err);
    void *pk;             /* the primary-key state (pk_state) */
    int64_t rows;         /* rows tiered so far in the round */
    int64_t reached;      /* the offset after the last record read */
    int rc;
    bool done;            /* a row at or past the end was seen, or the budget is spent */
} tier_read;

static int on_tier_batch(void *ctx, fr_batch *batch, const int64_t *offsets,
                         const uint8_t *change_types, int64_t commit_ts, fr_error *err)
{
    tier_read *r = ctx;
    int64_t rows = fr_batch_num_rows(batch), n = rows, skip = 0;
    while (n > 0 && offsets[n - 1] >= r->tb->end) n--; /* offsets ascend */
    if (n < rows) r->done = true;
    /* A read starts with the batch holding from_offset; tiered offsets are batch ends, so
     * this skips nothing unless a lake was written by something else. */
    while (skip < n && offsets[skip] < r->tb->from) skip++;
    int rc = FR_OK;
    if (skip > 0 || (n > 0 && n < rows)) {
        fr_batch *part = NULL;
        rc = fr_batch_slice(batch, skip, n - skip, &part, err);
        fr_batch_free(batch);
        batch = part;
    }
    if (rc == FR_OK && n > skip) {
        r->reached = offsets[n - 1] + 1;
        rc = r->on_rows(r, batch, offsets + skip, change_types ? change_types + skip : NULL,
                        commit_ts, err);
        batch = NULL; /* on_rows owns it */
    }
    fr_batch_free(batch);
    r->rc = rc;
    return rc < 0 || r->done ? 1 : 0;
}

static int read_range(tier_read *r, fr_error *err)
{
    const tier_bucket *tb = r->tb;
    int64_t from = tb->from;
    while (from < tb->end && !r->done) {
        if (r->stop && atomic_load(r->stop))
            return fr_fail(err, FR_ESTATE, "tiering of %s stopped: the engine is closing",
                           r->t->qname);
        fr_log_read rd = {
            .from_offset = from,
            .schema = fr_table_schema(r->t),
            .max_bytes = FR_TIER_READ_BYTES,
            .max_records = -1,
        };
        int64_t next = from;
        int rc = fr_log_read_batches(tb->log, &rd, on_tier_batch, r, &next, err);
        if (r->rc < 0) return r->rc;
        if (rc < 0) {
            fr_error_wrap(err, "reading bucket %d of %s from offset %" PRId64, tb->bucket,
                          r->t->qname, from);
            return rc;
        }
        if (next <= from) break;
        from = next;
    }
    return FR_OK;
}

/* ---- log tables: appends ---------------------------------------------------------------- */

static int log_rows(tier_read *r, fr_batch *rows, const int64_t *offsets, const uint8_t *types,
                    int64_t commit_ts, fr_error *err)
{
    int rc = fr_lake_commit_rows(r->t, r->commit, rows, r->tb->bucket, offsets, commit_ts, err);
    if (rc == FR_OK) r->rows += fr_batch_num_rows(rows);
    fr_batch_free(rows);
    return rc;
}

/* ---- primary-key tables: the final state of each changed key ---------------------------- */

typedef struct pk_batch {
    fr_batch *rows;
    int64_t *offsets;
    int64_t commit_ts;
} pk_batch;

typedef struct pk_slot {
    uint32_t hash;
    bool used;
    bool deleted;     /* the key's last change is a delete */
    size_t key_off;   /* into keys */
    uint32_t key_len;
    int32_t batch;    /* where the key's last change is */
    int32_t row;
} pk_slot;

typedef struct pk_state {
    pk_batch *batches;
    int nbatches, cap;
    int64_t nrows;    /* rows held in batches */
    pk_slot *slots;
    size_t nslots, used;
    fr_buf keys;
    fr_buf scratch;
} pk_state;

static void pk_state_free(pk_state *s)
{
    for (int i = 0; i < s->nbatches; i++) {
        fr_batch_free(s->batches[i].rows);
        fr_free(s->batches[i].offsets);
    }
    fr_free(s->batches);
    fr_free(s->slots);
    fr_buf_free(&s->keys);
    fr_buf_free(&s->scratch);
    memset(s, 0, sizeof *s);
}

static int pk_grow(pk_state *s, fr_error *err)
{
    size_t n = s->nslots ? s->nslots * 2 : 1024;
    pk_slot *slots = fr_calloc(n, sizeof *slots);
    FR_CHECK(slots, FR_ENOMEM, err, "out of memory tiering the changes of a primary-key table");
    for (size_t i = 0; i < s->nslots; i++) {
        if (!s->slots[i].used) continue;
        size_t j = s->slots[i].hash & (n - 1);
        while (slots[j].used) j = (j + 1) & (n - 1);
        slots[j] = s->slots[i];
    }
    fr_free(s->slots);
    s->slots = slots;
    s->nslots = n;
    return FR_OK;
}

/* Records that the key of row `row` of batch bi changed last there (deleted or not). */
static int pk_note(pk_state *s, const fr_table *t, int bi, int64_t row, bool deleted,
                   fr_error *err)
{
    const fr_batch *b = s->batches[bi].rows;
    fr_buf_reset(&s->scratch);
    FR_TRY(fr_bucket_key_bytes(b, t->conf.pk, t->conf.npk, row, &s->scratch, err));
    if (2 * (s->used + 1) > s->nslots) FR_TRY(pk_grow(s, err));
    uint32_t h = fr_murmur3_32(s->scratch.data, s->scratch.len, 0x5eed);
    size_t j = h & (s->nslots - 1);
    while (s->slots[j].used) {
        pk_slot *e = &s->slots[j];
        if (e->hash == h && e->key_len == s->scratch.len &&
            memcmp(s->keys.data + e->key_off, s->scratch.data, s->scratch.len) == 0) {
            e->batch = bi;
            e->row = (int32_t)row;
            e->deleted = deleted;
            return FR_OK;
        }
        j = (j + 1) & (s->nslots - 1);
    }
    pk_slot *e = &s->slots[j];
    *e = (pk_slot){.hash = h, .used = true, .deleted = deleted, .key_off = s->keys.len,
                   .key_len = (uint32_t)s->scratch.len, .batch = bi, .row = (int32_t)row};
    s->used++;
    return fr_buf_append(&s->keys, s->scratch.data, s->scratch.len, err);
}

static int pk_rows(tier_read *r, fr_batch *rows, const int64_t *offsets, const uint8_t *types,
                   int64_t commit_ts, fr_error *err)
{
    pk_state *s = r->pk;
    int64_t n = fr_batch_num_rows(rows);
    if (s->nbatches == s->cap) {
        int cap = s->cap ? s->cap * 2 : 16;
        pk_batch *nb = fr_realloc(s->batches, (size_t)cap * sizeof *nb);
        if (!nb) {
            fr_batch_free(rows);
            return fr_fail(err, FR_ENOMEM, "out of memory tiering %s", r->t->qname);
        }
        s->batches = nb;
        s->cap = cap;
    }
    int64_t *offs = fr_malloc((size_t)n * sizeof *offs);
    if (!offs) {
        fr_batch_free(rows);
        return fr_fail(err, FR_ENOMEM, "out of memory tiering %s", r->t->qname);
    }
    memcpy(offs, offsets, (size_t)n * sizeof *offs);
    int bi = s->nbatches++;
    s->batches[bi] = (pk_batch){.rows = rows, .offsets = offs, .commit_ts = commit_ts};
    s->nrows += n;
    /* Past the budget the range ends after this batch: the commit takes what was read, and
     * the next commit of the round goes on from there. */
    if (s->nrows >= fr_tier_pk_rows_max) r->done = true;
    for (int64_t i = 0; i < n; i++) {
        uint8_t ct = types ? types[i] : FR_CHANGE_APPEND;
        if (ct == FR_CHANGE_UPDATE_BEFORE) continue; /* an +U follows with the new row */
        FR_TRY(pk_note(s, r->t, bi, i, ct == FR_CHANGE_DELETE, err));
    }
    return FR_OK;
}

/* The indexes of the delete schema's columns in the lake schema. */
static int delete_columns(const fr_table *t, const fr_schema *del, int *cols, fr_error *err)
{
    int n = fr_schema_num_fields(del);
    for (int i = 0; i < n; i++) {
        cols[i] = fr_schema_find(t->lake->schema, fr_schema_field(del, i)->name);
        FR_CHECK(cols[i] >= 0, FR_EINVAL, err, "the lake of %s deletes by column '%s', which "
                 "its schema does not have", t->qname, fr_schema_field(del, i)->name);
    }
    return FR_OK;
}

/* Writes the final state of the keys whose last change is in batch bi: their delete keys and
 * the rows of those not deleted. */
static int pk_flush_batch(tier_read *r, int bi, const int64_t *rows, int64_t n,
                          const uint8_t *keep, const int *dcols, int ndcols, fr_error *err)
{
    pk_state *s = r->pk;
    const pk_batch *pb = &s->batches[bi];
    fr_batch *picked = NULL, *lake = NULL, *keys = NULL, *kept = NULL;
    int64_t *offs = fr_malloc((size_t)n * sizeof *offs);
    int rc = offs ? FR_OK : fr_fail(err, FR_ENOMEM, "out of memory tiering %s", r->t->qname);
    for (int64_t i = 0; rc == FR_OK && i < n; i++) offs[i] = pb->offsets[rows[i]];
    if (rc == FR_OK) rc = fr_engine_take(pb->rows, rows, n, &picked, err);
    if (rc == FR_OK)
        rc = fr_lake_rows_from_table(r->t, picked, r->tb->bucket, offs, pb->commit_ts, &lake,
                                     err);
    if (rc == FR_OK) rc = fr_batch_project(lake, dcols, ndcols, &keys, err);
    if (rc == FR_OK) rc = fr_iceberg_commit_add_deletes(r->commit, keys, err);
    if (rc == FR_OK) rc = fr_batch_filter(lake, keep, &kept, err);
    if (rc == FR_OK && fr_batch_num_rows(kept) > 0)
        rc = fr_iceberg_commit_add_rows(r->commit, kept, err);
    if (rc == FR_OK) r->rows += n;
    fr_free(offs);
    fr_batch_free(picked);
    fr_batch_free(lake);
    fr_batch_free(keys);
    fr_batch_free(kept);
    return rc;
}

/* After a bucket's range is read: one pass per batch holding last changes. */
static int pk_finish(tier_read *r, fr_error *err)
{
    pk_state *s = r->pk;
    if (s->used == 0) return FR_OK;
    const fr_schema *del = fr_iceberg_delete_schema(r->t->lake->ice);
    int ndcols = fr_schema_num_fields(del);
    int *dcols = fr_calloc((size_t)ndcols + 1, sizeof *dcols);
    int64_t *count = fr_calloc((size_t)s->nbatches + 1, sizeof *count);
    int64_t *rows = fr_malloc(s->used * sizeof *rows);
    uint8_t *keep = fr_calloc((s->used + 7) / 8 + 1, 1);
    int rc = dcols && count && rows && keep
                 ? delete_columns(r->t, del, dcols, err)
                 : fr_fail(err, FR_ENOMEM, "out of memory tiering %s", r->t->qname);
    for (size_t i = 0; rc == FR_OK && i < s->nslots; i++)
        if (s->slots[i].used) count[s->slots[i].batch]++;
    for (int bi = 0; rc == FR_OK && bi < s->nbatches; bi++) {
        if (count[bi] == 0) continue;
        /* Rows in offset order, so that a data file reads like the log. */
        const pk_batch *pb = &s->batches[bi];
        int64_t nrows = fr_batch_num_rows(pb->rows), n = 0;
        uint8_t *last = fr_calloc((size_t)nrows + 1, 1); /* 1: last, 2: last and deleted */
        if (!last) {
            rc = fr_fail(err, FR_ENOMEM, "out of memory tiering %s", r->t->qname);
            break;
        }
        for (size_t i = 0; i < s->nslots; i++)
            if (s->slots[i].used && s->slots[i].batch == bi)
                last[s->slots[i].row] = s->slots[i].deleted ? 2 : 1;
        memset(keep, 0, (size_t)(count[bi] + 7) / 8);
        for (int64_t row = 0; row < nrows; row++) {
            if (!last[row]) continue;
            if (last[row] == 1) keep[n >> 3] |= (uint8_t)(1u << (n & 7));
            rows[n++] = row;
        }
        fr_free(last);
        rc = pk_flush_batch(r, bi, rows, n, keep, dcols, ndcols, err);
    }
    fr_free(dcols);
    fr_free(count);
    fr_free(rows);
    fr_free(keep);
    return rc;
}

/* ---- one round --------------------------------------------------------------------------- */

/* Tiers tb's range into commit, or its head when a primary-key range is past the budget:
 * tb->from moves to where the read stopped. */
static int tier_bucket_range(fr_table *t, tier_bucket *tb, fr_iceberg_commit *commit,
                             const atomic_bool *stop, int64_t *rows, fr_error *err)
{
    pk_state pk = {0};
    tier_read r = {.t = t, .tb = tb, .commit = commit, .stop = stop,
                   .on_rows = t->conf.npk > 0 ? pk_rows : log_rows, .pk = &pk,
                   .reached = tb->end};
    fr_buf_init(&pk.keys);
    fr_buf_init(&pk.scratch);
    int rc = read_range(&r, err);
    if (rc == FR_OK && t->conf.npk > 0) rc = pk_finish(&r, err);
    pk_state_free(&pk);
    *rows += r.rows;
    /* A read that saw the end, or read nothing more, reached the end. */
    if (rc == FR_OK) tb->from = r.done && r.reached < tb->end ? r.reached : tb->end;
    return rc;
}

/* One commit: every bucket's range (or, for primary-key buckets past the budget, its head)
 * and the offsets reached. *committed is false when there was nothing to tier. */
static int commit_once(fr_table *t, tier_plan *plan, fr_lake_offset *offs,
                       const atomic_bool *stop, int64_t *snapshot_id, bool *committed,
                       fr_error *err)
{
    fr_table_lake *l = t->lake;
    fr_iceberg_commit *commit = NULL;
    int noffs = 0, rc = FR_OK;
    int64_t rows = 0, t0 = fr_monotonic_ns();
    *committed = false;
    for (int i = 0; i < plan->n; i++) {
        tier_bucket *tb = &plan->b[i];
        if (tb->from >= tb->end) continue;
        if (!commit) FR_GOTO(fr_iceberg_commit_begin(l->ice, &commit, err));
        FR_GOTO(tier_bucket_range(t, tb, commit, stop, &rows, err));
        offs[noffs++] = (fr_lake_offset){.partition_id = tb->pid, .bucket = tb->bucket,
                                         .offset = tb->from};
    }
    if (!commit) return FR_OK;
    int64_t id = -1;
    rc = fr_iceberg_commit_finish(commit, offs, noffs, &id, err);
    commit = NULL;
    if (rc < 0) return rc;
    *snapshot_id = id;
    *committed = true;
    FR_DEBUG("tiered %" PRId64 " records of %s in %d buckets in %.3f s: snapshot %" PRId64, rows,
             t->qname, noffs, (double)(fr_monotonic_ns() - t0) / 1e9, id);
    fr_error cerr = {0};
    fr_lake_snapshot *now = NULL;
    if (fr_iceberg_current(l->ice, &now, &cerr) == FR_OK) status_set_snapshot(l, now);
    fr_lake_snapshots_free(now, now ? 1 : 0);
    return FR_OK;
fail:
    if (commit) fr_iceberg_commit_abort(commit);
    return rc;
}

static int round_locked(fr_table *t, const atomic_bool *stop, int64_t *snapshot_id,
                        fr_error *err)
{
    fr_lake_snapshot *cur = NULL;
    FR_TRY(load_current_locked(t, &cur, err));
    *snapshot_id = cur ? cur->snapshot_id : -1;
    tier_plan plan;
    fr_lake_offset *offs = NULL;
    int rc = plan_round(t, cur, &plan, err);
    fr_lake_snapshots_free(cur, cur ? 1 : 0);
    if (rc == FR_OK) {
        offs = fr_calloc((size_t)plan.n + 1, sizeof *offs);
        if (!offs) rc = fr_fail(err, FR_ENOMEM, "out of memory tiering %s", t->qname);
    }
    /* Commits until every bucket reached the end fixed by the plan: one, unless a
     * primary-key range was past the budget. */
    bool committed = rc == FR_OK;
    while (rc == FR_OK && committed)
        rc = commit_once(t, &plan, offs, stop, snapshot_id, &committed, err);
    fr_free(offs);
    plan_free(&plan);
    if (rc < 0) fr_error_wrap(err, "tiering %s", t->qname);
    return rc;
}

int fr_table_tier_stoppable(fr_table *t, const atomic_bool *stop, int64_t *snapshot_id,
                            fr_error *err)
{
    *snapshot_id = -1;
    FR_CHECK(t->lake, FR_EINVAL, err, "table %s is not lake-enabled (create it with "
             "'table.datalake.enabled' = 'true')", t->qname);
    fr_table_lake *l = t->lake;
    pthread_mutex_lock(&l->tier_mu);
    int rc = round_locked(t, stop, snapshot_id, err);
    pthread_mutex_unlock(&l->tier_mu);
    status_round(l, rc, err);
    return rc;
}

int fr_table_tier(fr_table *t, int64_t *snapshot_id, fr_error *err)
{
    return fr_table_tier_stoppable(t, NULL, snapshot_id, err);
}

/* ---- status and snapshots ---------------------------------------------------------------- */

/* The commit time (ms) of the record at offset in log, or -1 when it cannot be read. */
static int64_t commit_time_at(fr_log *log, int64_t offset)
{
    fr_buf raw;
    fr_buf_init(&raw);
    fr_error err = {0};
    int64_t ts = -1;
    fr_rb_view v;
    if (fr_log_read_raw(log, offset, 1, &raw, &err) == FR_OK && raw.len > 0 &&
        fr_rb_decode(raw.data, raw.len, &v, &err) == FR_OK)
        ts = v.commit_timestamp;
    fr_buf_free(&raw);
    return ts;
}

/* Makes the status hold the current snapshot's offsets when no round has read them yet.
 * A round in progress holds the mutex: then the status is left as it is. */
static void status_ensure_offsets(fr_table *t)
{
    fr_table_lake *l = t->lake;
    pthread_mutex_lock(&l->st_mu);
    bool known = l->offsets_known;
    pthread_mutex_unlock(&l->st_mu);
    if (known || pthread_mutex_trylock(&l->tier_mu) != 0) return;
    fr_lake_snapshot *cur = NULL;
    fr_error err = {0};
    if (load_current_locked(t, &cur, &err) < 0)
        FR_DEBUG("the tiered offsets of %s: %s", t->qname, err.msg);
    fr_lake_snapshots_free(cur, cur ? 1 : 0);
    pthread_mutex_unlock(&l->tier_mu);
}

static void lag_of_set(fr_table *t, fr_tpart *p, const fr_lake_offset *offs, int noffs,
                       int64_t now_ms, fr_lake_status *out)
{
    for (int b = 0; b < t->conf.nbuckets; b++) {
        fr_log *log = NULL;
        fr_error err = {0};
        if (fr_tpart_log(t, p, b, true, &log, &err) < 0 || !log) continue;
        int64_t start = fr_log_start_offset(log), end = fr_log_end_offset(log);
        int64_t at = offset_of(offs, noffs, p ? p->info.id : -1, b);
        if (at < start) at = start;
        if (at >= end) continue;
        out->lag_records += end - at;
        int64_t ts = commit_time_at(log, at);
        if (ts >= 0 && now_ms - ts > out->lag_ms) out->lag_ms = now_ms - ts;
    }
}

int fr_table_lake_status(fr_table *t, fr_lake_status *out, fr_error *err)
{
    memset(out, 0, sizeof *out);
    out->snapshot_id = -1;
    FR_CHECK(t->lake, FR_EINVAL, err, "table %s is not lake-enabled", t->qname);
    fr_table_lake *l = t->lake;
    status_ensure_offsets(t);
    pthread_mutex_lock(&l->st_mu);
    int noffs = l->noffsets;
    fr_lake_offset *offs = fr_malloc((size_t)(noffs + 1) * sizeof *offs);
    if (offs && noffs > 0) memcpy(offs, l->offsets, (size_t)noffs * sizeof *offs);
    out->snapshot_id = l->snapshot_id;
    out->snapshot_ms = l->snapshot_ms;
    out->rounds = l->rounds;
    out->failures = l->failures;
    snprintf(out->last_error, sizeof out->last_error, "%s", l->last_error);
    pthread_mutex_unlock(&l->st_mu);
    FR_CHECK(offs, FR_ENOMEM, err, "out of memory reading the tiering status of %s", t->qname);
    int64_t now = fr_now_ms();
    int rc = FR_OK;
    if (t->conf.npart == 0) {
        lag_of_set(t, NULL, offs, noffs, now, out);
    } else {
        fr_tpart **parts = NULL;
        int n = 0;
        rc = fr_table_parts_snapshot(t, &parts, &n, err);
        for (int i = 0; rc == FR_OK && i < n; i++) lag_of_set(t, parts[i], offs, noffs, now, out);
        fr_tparts_release(parts, n);
    }
    fr_free(offs);
    return rc;
}

int fr_table_lake_snapshots(fr_table *t, fr_lake_snapshot **out, int *n, fr_error *err)
{
    *out = NULL;
    *n = 0;
    /* A handle of its own, so that a listing does not wait for a round in progress: it sees
     * the snapshots committed so far. */
    fr_iceberg_table *ice = NULL;
    FR_TRY(fr_table_lake_open(t, &ice, err));
    int rc = fr_iceberg_snapshots(ice, out, n, err);
    if (rc < 0) fr_error_wrap(err, "the lake of table %s", t->qname);
    fr_iceberg_close(ice);
    return rc;
}

/* ---- retention ----------------------------------------------------------------------------- */

int64_t fr_lake_retention_clock(fr_table *t, fr_tpart *p, int bucket, fr_log *log,
                                int64_t now_ms)
{
    if (!t->lake || t->conf.ttl_ms < 0) return now_ms;
    /* With this clock, time retention removes segments whose newest batch is below 0 ms:
     * none. */
    int64_t keep_all = t->conf.ttl_ms;
    fr_table_lake *l = t->lake;
    status_ensure_offsets(t);
    pthread_mutex_lock(&l->st_mu);
    bool known = l->offsets_known;
    int64_t at = known ? offset_of(l->offsets, l->noffsets, p ? p->info.id : -1, bucket) : -1;
    pthread_mutex_unlock(&l->st_mu);
    if (!known || at < 0) return keep_all;
    if (at >= fr_log_end_offset(log)) return now_ms;
    if (at < fr_log_start_offset(log)) at = fr_log_start_offset(log);
    int64_t ts = commit_time_at(log, at);
    if (ts < 0) return keep_all;
    /* Segments holding `at` or later have a newest batch at ts or later: not below
     * clock - ttl. Those before it are tiered and go when older than ttl. */
    return ts + t->conf.ttl_ms < now_ms ? ts + t->conf.ttl_ms : now_ms;
}
