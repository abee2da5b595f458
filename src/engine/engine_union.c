/* engine_union.c — union reads: one read of a lake-enabled table from its newest lake
 * snapshot plus, per bucket, the log after the offset that snapshot records; and reads of
 * the lake alone ($lake).
 *
 * What is read, and why the result equals a read without the lake:
 *   - The snapshot S is taken first, then the partitions, then every bucket's log end E.
 *     Each bucket's log is read from S's tiered offset O to E. A tiering round that commits
 *     meanwhile changes nothing: S is read by its id, and the log holds [O, E) unless
 *     retention removed part of it, which it may only do for records a newer snapshot
 *     tiered; then the log starts after O and the read takes the newer snapshot and plans
 *     again. So every record below E is read exactly once, from the lake or from the log.
 *     A log that starts after every snapshot's offset (the lake lost snapshots) fails the
 *     read: returning the log alone would silently miss the records retention removed.
 *   - Log tables: lake rows, then log rows. Primary-key tables: the log tail is a
 *     changelog; the last +I/+U/-D of each key in it is that key's final state (-U only
 *     precedes a +U). Lake rows of keys the tail changed are dropped; the tail's final rows
 *     of keys it did not delete are added. The lake's rows are the state as of O (equality
 *     deletes applied by the scan), so the result is the state as of E.
 *   - Lake rows of partitions that no longer exist, or of a bucket the snapshot does not
 *     record for the partition, or committed before their partition was created (rows of
 *     a dropped partition whose values a new one took) are not returned: a read without
 *     the lake has no such rows.
 *   - The filter is pushed into the lake scan (for pruning, when the columns it reads have
 *     the same types in the lake schema) and applied exactly to the converted rows; for log
 *     tables it is pushed into the log reads, which apply it exactly. For primary-key tables
 *     the log tail is read unfiltered: a key whose final row fails the filter must still
 *     hide its lake row.
 *   - Lake rows come in the lake schema's types (times in microseconds, strings as STRING)
 *     and are converted back to the table's types.
 *
 * Invariants: batches handed to the caller are non-empty and owned by it; a caller's
 * non-zero return stops the read (negative: returned as the error). */
#include "engine/engine_int.h"

#include <stdio.h>
#include <stdlib.h>

#define UNION_READ_BYTES (8 << 20)
#define UNION_SNAPSHOT_TRIES 8

/* One bucket of one partition (or of the table, without partitions) to read from the log. */
typedef struct union_bucket {
    int part;        /* index into parts, -1 without partitions */
    int bucket;
    fr_log *log;
    int64_t from, end;
} union_bucket;

/* The final state of one key the log tail changed. */
typedef struct union_key {
    uint32_t hash;
    uint32_t len;
    size_t at;       /* the key's bytes in keys_buf */
    int32_t batch;   /* its final row: tail[batch], row; batch -1 when deleted */
    int64_t row;
    bool used;
} union_key;

typedef struct union_read {
    fr_table *t;
    const fr_union_spec *spec;
    fr_union_fn fn;
    void *ctx;
    const fr_schema *ts;      /* the table schema */
    const fr_schema *ls;      /* the lake schema */
    const fr_schema *src;     /* the schema spec's columns and filter refer to */
    bool pk;                  /* merge by key (a primary-key table, not lake_only) */
    int nb;                   /* buckets per partition */

    int *needed;              /* columns read, ascending (indexes into src) */
    int nneeded;
    int *final;               /* output columns as positions among needed */
    int nfinal;
    bool final_project;
    fr_arena *arena;
    const fr_expr *filter;    /* spec's filter remapped to needed positions, or NULL */
    const fr_expr *prune;     /* the filter given to the lake scan, or NULL */
    int *lake_cols;           /* the lake scan's columns: needed (then __bucket and
                               * __timestamp when partitions are checked) */
    int nlake;
    bool check_parts;         /* lake rows must belong to a current, tiered partition */
    bool same_types;          /* the lake types of the needed columns are the table's */
    int *key_pos;             /* primary key columns as positions among needed */
    int nkey;
    fr_value *key_vals;       /* [nkey]: a row's key values */
    fr_type *key_types;       /* [nkey] */

    fr_iceberg_table *ice;
    fr_lake_snapshot *snap;   /* NULL when the lake has no snapshot */
    fr_iceberg_scan *scan;    /* of snap; NULL without one */
    fr_tpart **parts;
    int nparts;
    bool *tiered;             /* [nparts * nb]: the snapshot records (partition, bucket) */
    int cached_part;          /* the partition of the last lake row checked, or -1 */
    union_bucket *buckets;
    int nbuckets;
    char gap[160];            /* the last bucket whose log starts after the snapshot */

    /* Primary-key tables: the log tail's batches and the final state of its keys. */
    fr_batch **tail;
    int ntail, captail;
    union_key *keys;
    int64_t nkeys, capkeys;
    fr_buf keys_buf;
    fr_buf scratch;

    int user_rc;              /* what fn returned when it stopped the read */
    bool stop;
    /* the bucket being read from the log */
    int64_t end;
    bool bucket_done;
} union_read;

static void union_free(union_read *u)
{
    fr_free(u->needed);
    fr_free(u->final);
    fr_arena_free(u->arena);
    fr_free(u->lake_cols);
    fr_free(u->key_pos);
    fr_free(u->key_vals);
    fr_free(u->key_types);
    if (u->scan) fr_iceberg_scan_close(u->scan);
    if (u->snap) fr_lake_snapshots_free(u->snap, 1);
    if (u->ice) fr_iceberg_close(u->ice);
    fr_tparts_release(u->parts, u->nparts);
    fr_free(u->tiered);
    fr_free(u->buckets);
    for (int i = 0; i < u->ntail; i++) fr_batch_free(u->tail[i]);
    fr_free(u->tail);
    fr_free(u->keys);
    fr_buf_free(&u->keys_buf);
    fr_buf_free(&u->scratch);
}

/* ---- planning the columns --------------------------------------------------------------- */

static int check_projection(const union_read *u, fr_error *err)
{
    const fr_union_spec *spec = u->spec;
    if (!spec->columns) return FR_OK;
    int nf = fr_schema_num_fields(u->src);
    FR_CHECK(spec->ncolumns >= 1 && spec->ncolumns <= nf, FR_EINVAL, err,
             "table %s: a projection of %d columns; give 1 to %d", u->t->qname,
             spec->ncolumns, nf);
    for (int i = 0; i < spec->ncolumns; i++) {
        int c = spec->columns[i];
        FR_CHECK(c >= 0 && c < nf, FR_EINVAL, err, "table %s has columns 0 to %d, not %d",
                 u->t->qname, nf - 1, c);
        for (int j = 0; j < i; j++)
            FR_CHECK(spec->columns[j] != c, FR_EINVAL, err,
                     "table %s: column '%s' is projected twice", u->t->qname,
                     fr_schema_field(u->src, c)->name);
    }
    return FR_OK;
}

static void mark(uint8_t *used, int c)
{
    used[c >> 3] |= (uint8_t)(1u << (c & 7));
}

static bool marked(const uint8_t *used, int c)
{
    return (used[c >> 3] >> (c & 7)) & 1;
}

/* Whether every column the filter reads has the same type in the lake schema, so that the
 * bound filter may prune the lake scan as it is. */
static bool filter_fits_lake(const union_read *u, const uint8_t *fcols)
{
    int nf = fr_schema_num_fields(u->ts);
    for (int c = 0; c < nf; c++) {
        if (!marked(fcols, c)) continue;
        const fr_type *a = &fr_schema_field(u->ts, c)->type, *b = &fr_schema_field(u->ls, c)->type;
        if (!fr_type_equal(a, b)) return false;
    }
    return true;
}

static bool columns_named(const fr_expr *e, int depth)
{
    if (depth > FR_EXPR_DEPTH_MAX || (e->kind == FR_EX_COLUMN && !e->name)) return false;
    for (int i = 0; i < e->nargs; i++)
        if (!columns_named(e->args[i], depth + 1)) return false;
    return true;
}

/* The filter the lake scan prunes with: the caller's, when its columns have the same types
 * in the lake schema; else a copy bound to the lake schema (TIMESTAMP(3) is TIMESTAMP(6)
 * there, and comparisons take the finer unit), or none when it does not bind. Pruning only
 * skips what cannot match; the rows are filtered exactly afterwards either way. */
static const fr_expr *lake_prune_filter(union_read *u, const uint8_t *fcols, const int *ident)
{
    const fr_expr *f = u->spec->filter;
    if (u->spec->lake_only || filter_fits_lake(u, fcols)) return f;
    if (!columns_named(f, 0)) return NULL;
    int nf = fr_schema_num_fields(u->ts);
    fr_expr *copy = fr_expr_remap_columns(u->arena, f, ident, nf);
    fr_error ignored = {0};
    return copy && fr_expr_bind(copy, u->ls, &ignored) == FR_OK ? copy : NULL;
}

/* The columns to read: the projection, the filter's columns, the primary key (merging) and
 * the partition keys (checking lake rows' partitions), in schema order. */
static int plan_columns(union_read *u, fr_error *err)
{
    const fr_union_spec *spec = u->spec;
    int nf = fr_schema_num_fields(u->src);
    size_t bytes = (size_t)(nf + 7) / 8 + 1;
    uint8_t *used = fr_calloc(bytes, 1), *fcols = fr_calloc(bytes, 1);
    int *map = fr_malloc(sizeof *map * (size_t)(nf + 1));
    u->needed = fr_malloc(sizeof *u->needed * (size_t)(nf + 1));
    u->final = fr_malloc(sizeof *u->final * (size_t)(nf + 1));
    u->lake_cols = fr_malloc(sizeof *u->lake_cols * (size_t)(nf + 3));
    int rc = FR_OK;
    if (!used || !fcols || !map || !u->needed || !u->final || !u->lake_cols) {
        rc = fr_fail(err, FR_ENOMEM, "out of memory planning a read of %s", u->t->qname);
        goto fail;
    }
    int nproj = spec->columns ? spec->ncolumns : nf;
    for (int i = 0; i < nproj; i++) mark(used, spec->columns ? spec->columns[i] : i);
    if (spec->filter) {
        fr_expr_columns(spec->filter, fcols);
        for (int c = 0; c < nf; c++)
            if (marked(fcols, c)) mark(used, c);
    }
    int npk = 0, npart = 0;
    const int *pk = fr_table_primary_key(u->t, &npk);
    const int *part = fr_table_partition_keys(u->t, &npart);
    if (u->pk)
        for (int i = 0; i < npk; i++) mark(used, pk[i]);
    u->check_parts = !spec->lake_only && npart > 0;
    if (u->check_parts)
        for (int i = 0; i < npart; i++) mark(used, part[i]);
    for (int c = 0; c < nf; c++) {
        map[c] = -1;
        if (marked(used, c)) {
            map[c] = u->nneeded;
            u->needed[u->nneeded++] = c;
        }
    }
    for (int i = 0; i < nproj; i++) {
        u->final[i] = map[spec->columns ? spec->columns[i] : i];
        if (u->final[i] != i) u->final_project = true;
    }
    u->nfinal = nproj;
    if (u->nfinal != u->nneeded) u->final_project = true;
    memcpy(u->lake_cols, u->needed, sizeof *u->needed * (size_t)u->nneeded);
    u->nlake = u->nneeded;
    if (u->check_parts) { /* __bucket and __timestamp follow, and are not returned */
        u->lake_cols[u->nlake++] = nf;
        u->lake_cols[u->nlake++] = nf + 2;
        u->final_project = true;
    }
    if (spec->filter) {
        u->arena = fr_arena_new(4096);
        u->filter = u->arena ? fr_expr_remap_columns(u->arena, spec->filter, map, nf) : NULL;
        if (!u->filter) {
            rc = fr_fail(err, u->arena ? FR_EINVAL : FR_ENOMEM,
                         "read of %s: cannot copy the filter (out of memory, or not bound to "
                         "the table's schema)", u->t->qname);
            goto fail;
        }
    }
    if (u->pk) {
        u->key_pos = fr_malloc(sizeof *u->key_pos * (size_t)(npk + 1));
        u->key_vals = fr_calloc((size_t)npk + 1, sizeof *u->key_vals);
        u->key_types = fr_calloc((size_t)npk + 1, sizeof *u->key_types);
        if (!u->key_pos || !u->key_vals || !u->key_types) {
            rc = fr_fail(err, FR_ENOMEM, "out of memory planning a read of %s", u->t->qname);
            goto fail;
        }
        for (int i = 0; i < npk; i++) u->key_pos[i] = map[pk[i]];
        u->nkey = npk;
    }
    u->same_types = true;
    for (int i = 0; i < u->nneeded && !spec->lake_only; i++) {
        const fr_type *a = &fr_schema_field(u->ts, u->needed[i])->type;
        const fr_type *b = &fr_schema_field(u->ls, u->needed[i])->type;
        if (!fr_type_equal(a, b) || a->nullable != b->nullable) u->same_types = false;
    }
    if (spec->filter) { /* map is the identity from here on */
        for (int c = 0; c < nf; c++) map[c] = c;
        u->prune = lake_prune_filter(u, fcols, map);
    }
fail:
    fr_free(used);
    fr_free(fcols);
    fr_free(map);
    return rc;
}

/* ---- lake values back in the table's types --------------------------------------------- */

/* A lake batch (taken) in the table's types: as it is when the lake types of its columns are
 * the table's, else converted (fr_lake_rows_to_table). Its columns stay those of the lake
 * scan (lake_cols). */
static int to_table_types(union_read *u, fr_batch *lb, fr_batch **out, fr_error *err)
{
    *out = NULL;
    if (u->same_types) {
        *out = lb;
        return FR_OK;
    }
    int rc = fr_lake_rows_to_table(u->t, lb, u->lake_cols, u->nlake, out, err);
    fr_batch_free(lb);
    return rc;
}

/* ---- handing rows to the caller ---------------------------------------------------------- */

/* Projects a batch of needed columns (taken) to the output columns and hands it on. */
static int deliver(union_read *u, fr_batch *b, fr_error *err)
{
    if (fr_batch_num_rows(b) == 0) {
        fr_batch_free(b);
        return FR_OK;
    }
    if (u->final_project) {
        fr_batch *p = NULL;
        int rc = fr_batch_project(b, u->final, u->nfinal, &p, err);
        fr_batch_free(b);
        FR_TRY(rc);
        b = p;
    }
    int rc = u->fn(u->ctx, b, err);
    if (rc != 0) {
        u->user_rc = rc;
        u->stop = true;
    }
    return rc < 0 ? rc : FR_OK;
}

/* Keeps the rows of b (taken) whose bit is set in keep (kept of them), then delivers. */
static int deliver_kept(union_read *u, fr_batch *b, const uint8_t *keep, int64_t kept,
                        fr_error *err)
{
    if (kept == 0) {
        fr_batch_free(b);
        return FR_OK;
    }
    if (kept < fr_batch_num_rows(b)) {
        fr_batch *f = NULL;
        int rc = fr_batch_filter(b, keep, &f, err);
        fr_batch_free(b);
        FR_TRY(rc);
        b = f;
    }
    return deliver(u, b, err);
}

/* ---- the keys a primary-key table's log tail changed ------------------------------------ */

/* The key of row `row` of b (needed columns) in u->scratch. */
static int key_bytes(union_read *u, const fr_batch *b, int64_t row, fr_error *err)
{
    for (int i = 0; i < u->nkey; i++) {
        const fr_column *c = fr_batch_column(b, u->key_pos[i]);
        fr_column_get(c, row, &u->key_vals[i]);
        u->key_types[i] = c->type;
    }
    fr_buf_reset(&u->scratch);
    return fr_key_encode(u->key_types, u->key_vals, u->nkey, &u->scratch, err);
}

static uint32_t hash_bytes(const uint8_t *p, size_t n)
{
    return fr_murmur3_32(p, n, 0x5eed) | 1u; /* never 0 */
}

/* The slot of the key in u->scratch: its entry, or the empty slot it would go in. */
static union_key *key_slot(union_read *u, uint32_t h)
{
    uint64_t mask = (uint64_t)u->capkeys - 1;
    for (uint64_t i = h & mask;; i = (i + 1) & mask) {
        union_key *k = &u->keys[i];
        if (!k->used) return k;
        if (k->hash == h && k->len == u->scratch.len &&
            memcmp(u->keys_buf.data + k->at, u->scratch.data, k->len) == 0)
            return k;
    }
}

static int keys_grow(union_read *u, fr_error *err)
{
    if (u->nkeys * 2 < u->capkeys) return FR_OK;
    int64_t ncap = u->capkeys ? u->capkeys * 2 : 1024;
    union_key *old = u->keys;
    int64_t ocap = u->capkeys;
    u->keys = fr_calloc((size_t)ncap, sizeof *u->keys);
    FR_CHECK(u->keys, FR_ENOMEM, err, "out of memory merging the log of %s", u->t->qname);
    u->capkeys = ncap;
    for (int64_t i = 0; i < ocap; i++) {
        if (!old[i].used) continue;
        uint64_t mask = (uint64_t)ncap - 1;
        uint64_t j = old[i].hash & mask;
        while (u->keys[j].used) j = (j + 1) & mask;
        u->keys[j] = old[i];
    }
    fr_free(old);
    return FR_OK;
}

/* Records the final state of the keys of one tail batch (taken: it is kept). */
static int ingest_tail(union_read *u, fr_batch *b, const uint8_t *change_types,
                       fr_error *err)
{
    if (u->ntail == u->captail) {
        int ncap = u->captail ? u->captail * 2 : 16;
        fr_batch **bigger = fr_realloc(u->tail, sizeof *bigger * (size_t)ncap);
        if (!bigger) {
            fr_batch_free(b);
            return fr_fail(err, FR_ENOMEM, "out of memory merging the log of %s", u->t->qname);
        }
        u->tail = bigger;
        u->captail = ncap;
    }
    int32_t bi = u->ntail;
    u->tail[u->ntail++] = b;
    int64_t rows = fr_batch_num_rows(b);
    for (int64_t r = 0; r < rows; r++) {
        fr_change_type ct = change_types ? (fr_change_type)change_types[r] : FR_CHANGE_APPEND;
        if (ct == FR_CHANGE_UPDATE_BEFORE) continue; /* the +U after it says what stays */
        FR_TRY(keys_grow(u, err));
        FR_TRY(key_bytes(u, b, r, err));
        uint32_t h = hash_bytes(u->scratch.data, u->scratch.len);
        union_key *k = key_slot(u, h);
        if (!k->used) {
            *k = (union_key){.hash = h, .len = (uint32_t)u->scratch.len,
                             .at = u->keys_buf.len, .used = true};
            FR_TRY(fr_buf_append(&u->keys_buf, u->scratch.data, u->scratch.len, err));
            u->nkeys++;
        }
        k->batch = ct == FR_CHANGE_DELETE ? -1 : bi;
        k->row = r;
    }
    return FR_OK;
}

static bool key_changed(union_read *u)
{
    if (u->nkeys == 0) return false;
    return key_slot(u, hash_bytes(u->scratch.data, u->scratch.len))->used;
}

typedef struct tail_row {
    int32_t batch;
    int64_t row;
} tail_row;

static int tail_row_cmp(const void *a, const void *b)
{
    const tail_row *x = a, *y = b;
    if (x->batch != y->batch) return x->batch < y->batch ? -1 : 1;
    return x->row < y->row ? -1 : x->row > y->row;
}

/* Filters one batch of needed columns (taken) exactly and delivers what passes. */
static int deliver_filtered(union_read *u, fr_batch *b, fr_error *err)
{
    int64_t rows = fr_batch_num_rows(b), kept = rows;
    if (!u->filter || rows == 0) return deliver(u, b, err);
    uint8_t *keep = fr_calloc((size_t)(rows + 7) / 8 + 1, 1);
    int rc = keep ? fr_expr_filter(u->filter, b, keep, &kept, err)
                  : fr_fail(err, FR_ENOMEM, "out of memory filtering rows of %s", u->t->qname);
    if (rc == FR_OK) {
        rc = deliver_kept(u, b, keep, kept, err);
        b = NULL;
    }
    fr_batch_free(b);
    fr_free(keep);
    return rc;
}

/* Delivers the final rows of the keys the tail changed and did not delete. */
static int deliver_tail(union_read *u, fr_error *err)
{
    int64_t n = 0;
    for (int64_t i = 0; i < u->capkeys; i++) n += u->keys[i].used && u->keys[i].batch >= 0;
    if (n == 0) return FR_OK;
    tail_row *rows = fr_malloc(sizeof *rows * (size_t)n);
    int64_t *pick = fr_malloc(sizeof *pick * (size_t)n);
    int rc = FR_OK;
    if (!rows || !pick) {
        rc = fr_fail(err, FR_ENOMEM, "out of memory merging the log of %s", u->t->qname);
        goto fail;
    }
    n = 0;
    for (int64_t i = 0; i < u->capkeys; i++)
        if (u->keys[i].used && u->keys[i].batch >= 0)
            rows[n++] = (tail_row){u->keys[i].batch, u->keys[i].row};
    qsort(rows, (size_t)n, sizeof *rows, tail_row_cmp);
    for (int64_t i = 0; i < n && !u->stop;) {
        int64_t j = i;
        while (j < n && rows[j].batch == rows[i].batch) {
            pick[j - i] = rows[j].row;
            j++;
        }
        fr_batch *b = NULL;
        FR_GOTO(fr_engine_take(u->tail[rows[i].batch], pick, j - i, &b, err));
        FR_GOTO(deliver_filtered(u, b, err));
        i = j;
    }
fail:
    fr_free(rows);
    fr_free(pick);
    return rc;
}

/* ---- where each bucket's log is read from ----------------------------------------------- */

/* The snapshot's tiered offset of (partition_id, bucket), or -1 when it records none. */
static int64_t tiered_offset(const fr_lake_snapshot *s, int64_t partition_id, int bucket)
{
    for (int i = 0; s && i < s->noffsets; i++)
        if (s->offsets[i].partition_id == partition_id && s->offsets[i].bucket == bucket)
            return s->offsets[i].offset;
    return -1;
}

static void plan_clear(union_read *u)
{
    if (u->snap) fr_lake_snapshots_free(u->snap, 1);
    u->snap = NULL;
    fr_tparts_release(u->parts, u->nparts);
    u->parts = NULL;
    u->nparts = 0;
    fr_free(u->tiered);
    u->tiered = NULL;
    fr_free(u->buckets);
    u->buckets = NULL;
    u->nbuckets = 0;
}

/* Plans the log reads against the snapshot in u->snap. *stale is set when a bucket's log
 * starts after the snapshot's offset (retention removed records a newer snapshot holds). */
static int plan_buckets(union_read *u, bool *stale, fr_error *err)
{
    fr_table *t = u->t;
    *stale = false;
    if (t->conf.npart > 0) FR_TRY(fr_table_parts_snapshot(t, &u->parts, &u->nparts, err));
    int nparts = t->conf.npart > 0 ? u->nparts : 1;
    u->buckets = fr_calloc((size_t)nparts * (size_t)u->nb + 1, sizeof *u->buckets);
    u->tiered = fr_calloc((size_t)nparts * (size_t)u->nb + 1, sizeof *u->tiered);
    FR_CHECK(u->buckets && u->tiered, FR_ENOMEM, err, "out of memory planning a read of %s",
             t->qname);
    for (int p = 0; p < nparts; p++) {
        fr_tpart *part = t->conf.npart > 0 ? u->parts[p] : NULL;
        int64_t pid = part ? part->info.id : -1;
        for (int b = 0; b < u->nb; b++) {
            int64_t tiered = tiered_offset(u->snap, pid, b);
            u->tiered[p * u->nb + b] = tiered >= 0;
            if (part && !fr_tpart_may_match(t, part, u->spec->filter)) continue;
            fr_log *log = NULL;
            FR_TRY(fr_tpart_log(t, part, b, true, &log, err));
            if (!log) continue; /* never written */
            int64_t start = fr_log_start_offset(log), end = fr_log_end_offset(log);
            /* Retention removes only tiered records, so a log that starts after the
             * snapshot's offset (0 when it records none) lost records to a newer snapshot. */
            int64_t from = tiered >= 0 ? tiered : 0;
            if (from < start) {
                *stale = true;
                snprintf(u->gap, sizeof u->gap, "%s%sbucket %d holds offsets from %lld on, "
                         "the lake up to %lld", part ? part->info.name : "", part ? ", " : "",
                         b, (long long)start, (long long)from);
                return FR_OK;
            }
            /* A log that lost a tail the lake holds (FR_FLUSH_NONE and a crash) reads as
             * its end: the lake's rows stand. */
            if (from > end) from = end;
            if (from < end)
                u->buckets[u->nbuckets++] =
                    (union_bucket){.part = part ? p : -1, .bucket = b, .log = log,
                                   .from = from, .end = end};
        }
    }
    return FR_OK;
}

/* Takes the newest snapshot and plans the log reads after it, taking a newer snapshot when
 * retention removed records the one taken does not hold. */
static int plan_read(union_read *u, fr_error *err)
{
    FR_TRY(fr_table_lake_open(u->t, &u->ice, err));
    for (int attempt = 1;; attempt++) {
        if (attempt > 1) FR_TRY(fr_iceberg_refresh(u->ice, err));
        FR_TRY(fr_iceberg_current(u->ice, &u->snap, err));
        if (u->spec->lake_only) return FR_OK;
        bool stale = false;
        FR_TRY(plan_buckets(u, &stale, err));
        if (!stale) return FR_OK;
        FR_CHECK(attempt < UNION_SNAPSHOT_TRIES, FR_ESTATE, err,
                 "table %s: records are in neither the lake nor the log (%s): the lake lost "
                 "snapshots, or retention kept removing records during the read (retry it)",
                 u->t->qname, u->gap);
        plan_clear(u);
    }
}

/* ---- lake rows of partitions that are gone ---------------------------------------------- */

static bool values_equal(const fr_value *a, const fr_value *b)
{
    int cmp = 1;
    fr_error ignored = {0};
    return fr_value_compare(a, b, &cmp, &ignored) == FR_OK && cmp == 0;
}

/* The index of the current partition holding row `row` of lake batch lb, or -1. */
static int row_partition(union_read *u, const fr_batch *lb, int64_t row)
{
    int npart = 0;
    const int *part = fr_table_partition_keys(u->t, &npart);
    fr_value v[FR_PARTITION_KEYS_MAX];
    for (int k = 0; k < npart && k < FR_PARTITION_KEYS_MAX; k++) {
        int pos = 0;
        while (u->needed[pos] != part[k]) pos++;
        const fr_column *c = fr_batch_column(lb, pos);
        if (fr_column_is_null(c, row)) return -1;
        fr_column_get(c, row, &v[k]);
    }
    for (int tries = 0; tries <= u->nparts; tries++) {
        int p = tries == 0 ? u->cached_part : tries - 1;
        if (p < 0 || (tries > 0 && p == u->cached_part)) continue;
        bool same = true;
        for (int k = 0; k < npart && same; k++) same = values_equal(&v[k], &u->parts[p]->keys[k]);
        if (same) return u->cached_part = p;
    }
    return -1;
}

/* Clears the bits of keep for lake rows of a partition that is gone or whose bucket the
 * snapshot does not record, and for rows committed before their partition was created: rows
 * of an earlier partition of the same values, dropped since (the lake keeps them; the
 * partition's identity in the lake is its values). */
static void check_partitions(union_read *u, const fr_batch *lb, uint8_t *keep, int64_t *kept)
{
    const fr_column *bc = fr_batch_column(lb, u->nneeded);
    const fr_column *tc = fr_batch_column(lb, u->nneeded + 1);
    int64_t rows = fr_batch_num_rows(lb);
    for (int64_t r = 0; r < rows; r++) {
        if (!((keep[r >> 3] >> (r & 7)) & 1)) continue;
        int p = row_partition(u, lb, r);
        fr_value bv, tv;
        fr_column_get(bc, r, &bv);
        fr_column_get(tc, r, &tv);
        bool ok = p >= 0 && !bv.is_null && bv.v.i >= 0 && bv.v.i < u->nb &&
                  u->tiered[p * u->nb + (int)bv.v.i] && !tv.is_null &&
                  tv.v.i / 1000 >= u->parts[p]->info.created_ms;
        if (!ok) {
            keep[r >> 3] &= (uint8_t)~(1u << (r & 7));
            (*kept)--;
        }
    }
}

/* ---- reading the lake ------------------------------------------------------------------- */

/* One batch of the lake scan (taken): rows of gone partitions and of keys the log tail
 * changed dropped, converted to the table's types, filtered exactly, delivered. */
static int lake_batch(union_read *u, fr_batch *lb, fr_error *err)
{
    int64_t rows = fr_batch_num_rows(lb), kept = rows;
    if (rows == 0) {
        fr_batch_free(lb);
        return FR_OK;
    }
    uint8_t *keep = fr_malloc((size_t)(rows + 7) / 8 + 1);
    uint8_t *fkeep = u->filter ? fr_calloc((size_t)(rows + 7) / 8 + 1, 1) : NULL;
    fr_batch *b = NULL;
    int rc = FR_OK;
    if (!keep || (u->filter && !fkeep)) {
        fr_batch_free(lb);
        rc = fr_fail(err, FR_ENOMEM, "out of memory reading the lake of %s", u->t->qname);
        goto fail;
    }
    memset(keep, 0xFF, (size_t)(rows + 7) / 8 + 1);
    if (u->check_parts) check_partitions(u, lb, keep, &kept);
    rc = u->spec->lake_only ? (b = lb, FR_OK) : to_table_types(u, lb, &b, err);
    if (rc < 0) goto fail;
    for (int64_t r = 0; u->pk && r < rows; r++) {
        if (!((keep[r >> 3] >> (r & 7)) & 1)) continue;
        FR_GOTO(key_bytes(u, b, r, err));
        if (key_changed(u)) {
            keep[r >> 3] &= (uint8_t)~(1u << (r & 7));
            kept--;
        }
    }
    if (u->filter && kept > 0) {
        int64_t fk = 0;
        FR_GOTO(fr_expr_filter(u->filter, b, fkeep, &fk, err));
        kept = 0;
        for (int64_t i = 0; i < (rows + 7) / 8; i++) keep[i] &= fkeep[i];
        for (int64_t r = 0; r < rows; r++) kept += (keep[r >> 3] >> (r & 7)) & 1;
    }
    rc = deliver_kept(u, b, keep, kept, err);
    b = NULL;
fail:
    fr_batch_free(b);
    fr_free(keep);
    fr_free(fkeep);
    return rc;
}

/* Opens the scan of the snapshot taken (its data files are planned from its manifests
 * now, before the logs are read, while the snapshot is surely kept). */
static int open_lake(union_read *u, fr_error *err)
{
    if (!u->snap) return FR_OK;
    return fr_iceberg_scan_open(u->ice, u->snap->snapshot_id, u->lake_cols, u->nlake, u->prune,
                                &u->scan, err);
}

/* The lake's messages name the table's directory and the file; nothing is added to them,
 * so that the file's name fits the message. */
static int read_lake(union_read *u, fr_error *err)
{
    while (u->scan && !u->stop) {
        fr_batch *lb = NULL;
        FR_TRY(fr_iceberg_scan_next(u->scan, &lb, err));
        if (!lb) break;
        FR_TRY(lake_batch(u, lb, err));
    }
    return FR_OK;
}

/* ---- reading the logs after the snapshot ------------------------------------------------- */

static int on_log_batch(void *arg, fr_batch *batch, const int64_t *offsets,
                        const uint8_t *change_types, int64_t commit_ts, fr_error *err)
{
    (void)commit_ts;
    union_read *u = arg;
    int64_t rows = fr_batch_num_rows(batch), n = rows;
    while (n > 0 && offsets[n - 1] >= u->end) n--; /* offsets ascend */
    if (n < rows) u->bucket_done = true;
    if (n < rows && n > 0) {
        fr_batch *head = NULL;
        int rc = fr_batch_slice(batch, 0, n, &head, err);
        fr_batch_free(batch);
        if (rc < 0) {
            u->user_rc = rc;
            u->stop = true;
            return rc;
        }
        batch = head;
    }
    int rc = FR_OK;
    if (n == 0)
        fr_batch_free(batch);
    else if (u->pk)
        rc = ingest_tail(u, batch, change_types, err);
    else
        rc = deliver(u, batch, err);
    if (rc < 0 && !u->stop) {
        u->user_rc = rc;
        u->stop = true;
    }
    return u->stop || u->bucket_done ? 1 : 0;
}

static int read_bucket(union_read *u, const union_bucket *ub, fr_error *err)
{
    u->end = ub->end;
    u->bucket_done = false;
    for (int64_t from = ub->from; from < ub->end && !u->stop && !u->bucket_done;) {
        fr_log_read r = {
            .from_offset = from,
            .schema = u->ts,
            .columns = u->needed,
            .ncolumns = u->nneeded,
            .filter = u->pk ? NULL : u->spec->filter,
            .max_bytes = UNION_READ_BYTES,
            .max_records = -1,
        };
        int64_t next = from;
        int rc = fr_log_read_batches(ub->log, &r, on_log_batch, u, &next, err);
        if (u->user_rc < 0) return u->user_rc;
        if (u->stop || u->bucket_done) break;
        if (rc < 0) {
            if (ub->part >= 0)
                fr_error_wrap(err, "table %s, partition %s, bucket %d", u->t->qname,
                              u->parts[ub->part]->info.name, ub->bucket);
            else
                fr_error_wrap(err, "table %s, bucket %d", u->t->qname, ub->bucket);
            return rc;
        }
        if (next <= from) break;
        from = next;
    }
    return FR_OK;
}

static int read_logs(union_read *u, fr_error *err)
{
    for (int i = 0; i < u->nbuckets && !u->stop; i++) FR_TRY(read_bucket(u, &u->buckets[i], err));
    return FR_OK;
}

/* ---- tables without a lake -------------------------------------------------------------- */

typedef struct plain_ctx {
    fr_union_fn fn;
    void *ctx;
} plain_ctx;

static int plain_scan_fn(void *ctx, int bucket, fr_batch *batch, const int64_t *offsets,
                         const uint8_t *change_types, int64_t commit_ts, fr_error *err)
{
    (void)bucket, (void)offsets, (void)change_types, (void)commit_ts;
    plain_ctx *p = ctx;
    return p->fn(p->ctx, batch, err);
}

static int plain_state_fn(void *ctx, fr_batch *batch, fr_error *err)
{
    plain_ctx *p = ctx;
    return p->fn(p->ctx, batch, err);
}

/* A table without a lake reads as it is: its log, or its primary-key state. */
static int read_plain(fr_table *t, const fr_union_spec *spec, fr_union_fn fn, void *ctx,
                      fr_error *err)
{
    plain_ctx p = {.fn = fn, .ctx = ctx};
    if (fr_table_is_pk(t))
        return fr_table_scan_state(t, spec->columns, spec->columns ? spec->ncolumns : 0,
                                   spec->filter, plain_state_fn, &p, err);
    fr_scan_spec s = {.start = FR_START_EARLIEST, .columns = spec->columns,
                      .ncolumns = spec->ncolumns, .filter = spec->filter, .max_records = -1,
                      .bucket = -1};
    return fr_table_scan(t, &s, plain_scan_fn, &p, err);
}

/* ---- the entry point -------------------------------------------------------------------- */

int fr_table_scan_union(fr_table *t, const fr_union_spec *spec, fr_union_fn fn, void *ctx,
                        fr_error *err)
{
    if (!fr_table_lake_enabled(t)) {
        FR_CHECK(!spec->lake_only, FR_EINVAL, err,
                 "table %s has no lake: create it with 'table.datalake.enabled' = 'true'",
                 t->qname);
        return read_plain(t, spec, fn, ctx, err);
    }
    union_read u = {.t = t, .spec = spec, .fn = fn, .ctx = ctx, .ts = fr_table_schema(t),
                    .ls = fr_table_lake_schema(t), .nb = t->conf.nbuckets,
                    .cached_part = -1};
    u.pk = fr_table_is_pk(t) && !spec->lake_only;
    u.src = spec->lake_only ? u.ls : u.ts;
    fr_buf_init(&u.keys_buf);
    fr_buf_init(&u.scratch);
    int rc = FR_OK;
    FR_CHECK(u.ls, FR_ESTATE, err, "table %s: its lake schema is unknown", t->qname);
    FR_GOTO(check_projection(&u, err));
    FR_GOTO(plan_columns(&u, err));
    FR_GOTO(plan_read(&u, err));
    FR_GOTO(open_lake(&u, err));
    if (u.pk) {
        /* The tail first: the keys it changed hide their lake rows. */
        FR_GOTO(read_logs(&u, err));
        if (!u.stop) FR_GOTO(read_lake(&u, err));
        if (!u.stop) FR_GOTO(deliver_tail(&u, err));
    } else {
        FR_GOTO(read_lake(&u, err));
        if (!u.stop && !spec->lake_only) FR_GOTO(read_logs(&u, err));
    }
fail:
    union_free(&u);
    if (u.user_rc != 0) return u.user_rc < 0 ? u.user_rc : FR_OK;
    return rc;
}
