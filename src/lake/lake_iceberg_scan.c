/* lake_iceberg_scan.c — reading one snapshot of an Iceberg table: planning from the manifest
 * list and manifests, pruning files by partition values and column bounds and row groups by
 * Parquet statistics, reading only the columns needed, and applying equality deletes.
 *
 * Equality deletes: a delete row removes the data rows of the same partition whose key is
 * equal and whose data sequence number is lower than the delete file's. Deletes are loaded
 * once per scan into a map from (partition key, encoded primary key) to the highest
 * sequence number that deletes it, only for partitions that hold a planned data file.
 *
 * Invariants: a batch returned has exactly the chosen columns, in order; no row of a data
 * file with a sequence number below a matching delete is ever returned. */
#include <stdio.h>

#include "lake/lake_iceberg_int.h"

typedef struct ice_plan_file {
    const fr_ice_file *f;
    const uint8_t *part_key; /* arena */
    size_t part_key_len;
} ice_plan_file;

struct fr_iceberg_scan {
    fr_iceberg_table *t;
    fr_ice_meta *meta;       /* a reference: commits on t may replace t->meta meanwhile */
    const fr_schema *schema; /* the lake schema */
    fr_arena *arena;
    int *cols;
    int ncols;
    const fr_expr *filter;
    void **owned;            /* fr_malloc'd file arrays from manifests */
    int nowned, owned_cap;
    ice_plan_file *plan;
    int nplan, plan_cap, next;
    fr_ice_map *deletes;     /* (part key, key) -> highest delete sequence number */
    fr_buf key;
    /* the file being read */
    fr_parquet_reader *r;
    const ice_plan_file *cur;
    int rg, nrg;
    int *read_cols;          /* file columns read: output columns, then key columns */
    int nread;
    int *key_pos;            /* position of each key column in the read batch */
    int *idx;                /* 0..ncols-1, to project read batches on the output */
    fr_type *key_types;      /* scratch of nkey entries */
    fr_value *key_vals;
    int *idx_scratch;        /* nkey entries */
    bool apply_deletes;
    int64_t files_read, files_skipped, rgs_skipped;
};

static int own(fr_iceberg_scan *s, void *p, fr_error *err)
{
    if (!p) return 0;
    if (s->nowned == s->owned_cap) {
        int cap = s->owned_cap ? s->owned_cap * 2 : 16;
        void **v = fr_realloc(s->owned, (size_t)cap * sizeof *v);
        if (!v) {
            fr_free(p);
            return fr_fail(err, FR_ENOMEM, "out of memory planning a scan");
        }
        s->owned = v;
        s->owned_cap = cap;
    }
    s->owned[s->nowned++] = p;
    return 0;
}

static int lake_col_of_id(const fr_ice_meta *m, int32_t id)
{
    for (int i = 0; i < fr_schema_num_fields(m->schema); i++)
        if (m->field_ids[i] == id) return i;
    return -1;
}

/* Whether a file may hold rows the filter keeps, from its partition values and bounds. */
static bool file_may_match(fr_iceberg_scan *s, const fr_ice_file *f)
{
    if (!s->filter) return true;
    const fr_ice_meta *m = s->meta;
    int n = fr_schema_num_fields(m->schema);
    fr_column_stats *st = fr_calloc((size_t)n, sizeof *st);
    if (!st) return true;
    for (int i = 0; i < n; i++) st[i].null_count = -1;
    for (int i = 0; i < f->nstats; i++) {
        const fr_ice_col_stat *cs = &f->stats[i];
        int c = lake_col_of_id(m, cs->field_id);
        if (c < 0) continue;
        const fr_type *t = &fr_schema_field(m->schema, c)->type;
        st[c].null_count = cs->nulls;
        if (cs->lower && cs->upper &&
            fr_ice_bound_decode(cs->lower, (size_t)cs->lower_len, t, &st[c].min, NULL) == 0 &&
            fr_ice_bound_decode(cs->upper, (size_t)cs->upper_len, t, &st[c].max, NULL) == 0)
            st[c].has_minmax = true;
    }
    /* Identity partition values are exact bounds. */
    for (int i = 0; i < f->npart && i < m->npart; i++) {
        int c = m->part_cols[i];
        if (f->part[i].is_null) {
            st[c].null_count = f->records;
            st[c].has_minmax = false;
        } else {
            st[c].null_count = 0;
            st[c].min = st[c].max = f->part[i];
            st[c].has_minmax = true;
        }
    }
    bool may = fr_expr_may_match(s->filter, st, f->records);
    fr_free(st);
    return may;
}

/* Whether a data manifest may hold files the filter keeps, from its partition summaries. */
static bool manifest_may_match(fr_iceberg_scan *s, const fr_ice_manifest *man)
{
    const fr_ice_meta *m = s->meta;
    if (!s->filter || !man->parts || man->nparts != m->npart || m->npart == 0) return true;
    int n = fr_schema_num_fields(m->schema);
    fr_column_stats *st = fr_calloc((size_t)n, sizeof *st);
    if (!st) return true;
    for (int i = 0; i < n; i++) st[i].null_count = -1;
    for (int i = 0; i < m->npart; i++) {
        const fr_ice_field_summary *fs = &man->parts[i];
        int c = m->part_cols[i];
        const fr_type *t = &fr_schema_field(m->schema, c)->type;
        if (!fs->contains_null) st[c].null_count = 0;
        /* Bounds leave NaN out, which filters order above every number. */
        bool nan = (t->id == FR_T_FLOAT || t->id == FR_T_DOUBLE) && fs->contains_nan != 0;
        if (!nan && fs->lower && fs->upper &&
            fr_ice_bound_decode(fs->lower, (size_t)fs->lower_len, t, &st[c].min, NULL) == 0 &&
            fr_ice_bound_decode(fs->upper, (size_t)fs->upper_len, t, &st[c].max, NULL) == 0)
            st[c].has_minmax = true;
    }
    int64_t rows = man->added_rows + man->existing_rows;
    bool may = fr_expr_may_match(s->filter, st, rows > 0 ? rows : 1);
    fr_free(st);
    return may;
}

static int part_key(fr_iceberg_scan *s, const fr_ice_file *f, const uint8_t **out, size_t *len,
                    fr_error *err)
{
    fr_buf_reset(&s->key);
    FR_TRY(fr_ice_part_key(f->part, f->npart, &s->key, err));
    uint8_t *p = fr_arena_alloc(s->arena, s->key.len ? s->key.len : 1);
    FR_CHECK(p, FR_ENOMEM, err, "out of memory planning a scan");
    if (s->key.len) memcpy(p, s->key.data, s->key.len);
    *out = p;
    *len = s->key.len;
    return 0;
}

static int add_plan(fr_iceberg_scan *s, const fr_ice_file *f, fr_error *err)
{
    if (s->nplan == s->plan_cap) {
        int cap = s->plan_cap ? s->plan_cap * 2 : 64;
        ice_plan_file *v = fr_realloc(s->plan, (size_t)cap * sizeof *v);
        FR_CHECK(v, FR_ENOMEM, err, "out of memory planning a scan");
        s->plan = v;
        s->plan_cap = cap;
    }
    ice_plan_file *p = &s->plan[s->nplan];
    p->f = f;
    FR_TRY(part_key(s, f, &p->part_key, &p->part_key_len, err));
    s->nplan++;
    return 0;
}

/* Reads the key columns of one equality-delete file into the delete map. */
static int load_delete_file(fr_iceberg_scan *s, const fr_ice_file *f, const uint8_t *pk,
                            size_t pklen, fr_error *err)
{
    const fr_ice_meta *m = s->meta;
    FR_CHECK(f->neq == m->nkey, FR_EUNSUPPORTED, err,
             "%s: equality deletes on other columns than the primary key", f->path);
    for (int i = 0; i < f->neq; i++)
        FR_CHECK(f->eq_ids[i] == m->field_ids[m->key_cols[i]], FR_EUNSUPPORTED, err,
                 "%s: equality deletes on other columns than the primary key", f->path);
    const char *path = fr_ice_local_path(f->path);
    FR_CHECK(path, FR_EUNSUPPORTED, err, "%s: not a local file", f->path);
    fr_parquet_reader *r = NULL;
    FR_TRY(fr_parquet_open(path, &r, err));
    int *cols = s->idx_scratch;
    int rc = 0;
    fr_batch *b = NULL;
    fr_type *types = s->key_types;
    fr_value *vals = s->key_vals;
    const fr_schema *fs = fr_parquet_schema(r);
    for (int i = 0; i < f->neq; i++) {
        cols[i] = -1;
        for (int j = 0; j < fr_schema_num_fields(fs); j++)
            if (fr_parquet_field_id(r, j) == f->eq_ids[i]) cols[i] = j;
        if (cols[i] < 0) {
            rc = fr_fail(err, FR_ECORRUPT, "%s: no column with field id %d", path, (int)f->eq_ids[i]);
            goto fail;
        }
    }
    for (int g = 0; g < fr_parquet_num_row_groups(r); g++) {
        FR_GOTO(fr_parquet_read_row_group(r, g, cols, f->neq, &b, err));
        for (int i = 0; i < f->neq; i++) types[i] = fr_batch_column(b, i)->type;
        for (int64_t row = 0; row < fr_batch_num_rows(b); row++) {
            fr_buf_reset(&s->key);
            FR_GOTO(fr_buf_append(&s->key, pk, pklen, err));
            for (int i = 0; i < f->neq; i++) fr_column_get(fr_batch_column(b, i), row, &vals[i]);
            FR_GOTO(fr_key_encode(types, vals, f->neq, &s->key, err));
            int64_t *slot;
            FR_GOTO(fr_ice_map_put(s->deletes, s->key.data, s->key.len, -1, &slot, err));
            if (f->seq > *slot) *slot = f->seq;
        }
        fr_batch_free(b);
        b = NULL;
    }
fail:
    fr_batch_free(b);
    fr_parquet_close(r);
    if (rc < 0) fr_error_wrap(err, "delete file %s", path);
    return rc;
}

static int plan(fr_iceberg_scan *s, const fr_ice_snap *snap, fr_error *err)
{
    fr_iceberg_table *t = s->t;
    fr_ice_manifest *mans = NULL;
    int nm = 0, rc = 0;
    fr_ice_map *parts = NULL; /* partitions with planned data files */
    FR_TRY(fr_ice_snap_manifests(snap, s->arena, &mans, &nm, err));
    FR_GOTO(own(s, mans, err));
    parts = fr_ice_map_new();
    if (!parts) {
        rc = fr_fail(err, FR_ENOMEM, "out of memory planning a scan");
        goto fail;
    }
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < nm; i++) {
            if (mans[i].content != pass) continue;
            if (pass == 0 && !manifest_may_match(s, &mans[i])) {
                s->files_skipped += mans[i].added_files + mans[i].existing_files;
                continue;
            }
            fr_ice_file *files = NULL;
            int nf = 0;
            FR_GOTO(fr_avro_load_manifest(mans[i].path, &t->ps, &mans[i], s->arena, &files, &nf, err));
            FR_GOTO(own(s, files, err));
            for (int j = 0; j < nf; j++) {
                const fr_ice_file *f = &files[j];
                if (f->status == 2) continue;
                if (pass == 0) {
                    if (!file_may_match(s, f)) {
                        s->files_skipped++;
                        continue;
                    }
                    FR_GOTO(add_plan(s, f, err));
                    int64_t *slot;
                    const ice_plan_file *p = &s->plan[s->nplan - 1];
                    FR_GOTO(fr_ice_map_put(parts, p->part_key, p->part_key_len, 0, &slot, err));
                    continue;
                }
                if (f->content == 1) {
                    rc = fr_fail(err, FR_EUNSUPPORTED, "%s: position deletes are not supported",
                                 f->path);
                    goto fail;
                }
                const uint8_t *pk = NULL;
                size_t pklen = 0;
                FR_GOTO(part_key(s, f, &pk, &pklen, err));
                if (!fr_ice_map_get(parts, pk, pklen)) continue;
                FR_GOTO(load_delete_file(s, f, pk, pklen, err));
            }
        }
    }
fail:
    fr_ice_map_free(parts);
    return rc;
}

int fr_iceberg_scan_open(fr_iceberg_table *t, int64_t snapshot_id, const int *cols, int ncols,
                         const fr_expr *filter, fr_iceberg_scan **out, fr_error *err)
{
    *out = NULL;
    FR_TRY(fr_ice_table_catch_up(t, err));
    int n = fr_schema_num_fields(t->meta->schema);
    FR_CHECK(ncols >= 0 && ncols <= n, FR_EINVAL, err, "%d columns chosen of %d", ncols, n);
    for (int i = 0; i < ncols; i++)
        FR_CHECK(cols[i] >= 0 && cols[i] < n, FR_EINVAL, err, "column %d out of range", cols[i]);
    fr_iceberg_scan *s = fr_calloc(1, sizeof *s);
    FR_CHECK(s, FR_ENOMEM, err, "out of memory opening a scan");
    s->t = t;
    s->meta = fr_ice_meta_ref(t->meta);
    s->schema = s->meta->schema;
    s->filter = filter;
    fr_buf_init(&s->key);
    int rc = 0;
    s->arena = fr_arena_new(64 << 10);
    s->cols = fr_malloc((size_t)(ncols ? ncols : 1) * sizeof *s->cols);
    s->read_cols = fr_malloc((size_t)(n + 1) * sizeof *s->read_cols);
    s->deletes = fr_ice_map_new();
    size_t nk = (size_t)s->meta->nkey + 1;
    s->key_pos = fr_calloc(nk, sizeof *s->key_pos);
    s->key_types = fr_calloc(nk, sizeof *s->key_types);
    s->key_vals = fr_calloc(nk, sizeof *s->key_vals);
    s->idx_scratch = fr_calloc(nk, sizeof *s->idx_scratch);
    s->idx = fr_calloc((size_t)ncols + 1, sizeof *s->idx);
    if (!s->arena || !s->cols || !s->read_cols || !s->deletes || !s->key_pos || !s->key_types ||
        !s->key_vals || !s->idx_scratch || !s->idx) {
        rc = fr_fail(err, FR_ENOMEM, "out of memory opening a scan");
        goto fail;
    }
    if (ncols) memcpy(s->cols, cols, (size_t)ncols * sizeof *cols);
    for (int i = 0; i < ncols; i++) s->idx[i] = i;
    s->ncols = ncols;
    const fr_ice_meta *m = s->meta;
    if (snapshot_id < 0) snapshot_id = m->current_id;
    if (snapshot_id >= 0) {
        const fr_ice_snap *snap = fr_ice_meta_snap(m, snapshot_id);
        if (!snap) {
            rc = fr_fail(err, FR_ENOTFOUND, "table %s has no snapshot %lld", t->dir,
                         (long long)snapshot_id);
            goto fail;
        }
        FR_GOTO(plan(s, snap, err));
    }
    *out = s;
    return 0;
fail:
    if (rc < 0) fr_error_wrap(err, "table %s: scan", t->dir);
    fr_iceberg_scan_close(s);
    return rc;
}

void fr_iceberg_scan_close(fr_iceberg_scan *s)
{
    if (!s) return;
    fr_parquet_close(s->r);
    fr_ice_meta_free(s->meta);
    for (int i = 0; i < s->nowned; i++) fr_free(s->owned[i]);
    fr_free(s->owned);
    fr_free(s->plan);
    fr_free(s->cols);
    fr_free(s->read_cols);
    fr_free(s->key_pos);
    fr_free(s->key_types);
    fr_free(s->key_vals);
    fr_free(s->idx_scratch);
    fr_free(s->idx);
    fr_ice_map_free(s->deletes);
    fr_buf_free(&s->key);
    fr_arena_free(s->arena);
    fr_free(s);
}

void fr_iceberg_scan_counts(const fr_iceberg_scan *s, int64_t *files_read,
                            int64_t *files_skipped, int64_t *row_groups_skipped)
{
    if (files_read) *files_read = s->files_read;
    if (files_skipped) *files_skipped = s->files_skipped;
    if (row_groups_skipped) *row_groups_skipped = s->rgs_skipped;
}

/* ---- reading files --------------------------------------------------------------------- */

/* The file column holding lake column c: by field id, else by name; -1 when absent. */
static int file_col(const fr_parquet_reader *r, const fr_ice_meta *m, int c)
{
    const fr_schema *fs = fr_parquet_schema(r);
    for (int j = 0; j < fr_schema_num_fields(fs); j++)
        if (fr_parquet_field_id(r, j) == m->field_ids[c]) return j;
    for (int j = 0; j < fr_schema_num_fields(fs); j++)
        if (fr_parquet_field_id(r, j) < 0 &&
            strcmp(fr_schema_field(fs, j)->name, fr_schema_field(m->schema, c)->name) == 0)
            return j;
    return -1;
}

static int open_file(fr_iceberg_scan *s, const ice_plan_file *p, fr_error *err)
{
    const fr_ice_meta *m = s->meta;
    const char *path = fr_ice_local_path(p->f->path);
    FR_CHECK(path, FR_EUNSUPPORTED, err, "%s: not a local file", p->f->path);
    FR_TRY(fr_parquet_open(path, &s->r, err));
    s->cur = p;
    s->rg = 0;
    s->nrg = fr_parquet_num_row_groups(s->r);
    s->files_read++;
    /* Deletes matter only when some delete is newer than this file. */
    s->apply_deletes = fr_ice_map_count(s->deletes) > 0;
    s->nread = 0;
    for (int i = 0; i < s->ncols; i++) {
        int fc = file_col(s->r, m, s->cols[i]);
        FR_CHECK(fc >= 0, FR_EUNSUPPORTED, err, "%s: column %s is missing", path,
                 fr_schema_field(m->schema, s->cols[i])->name);
        s->read_cols[s->nread++] = fc;
    }
    if (s->apply_deletes)
        for (int k = 0; k < m->nkey; k++) {
            int fc = file_col(s->r, m, m->key_cols[k]);
            FR_CHECK(fc >= 0, FR_ECORRUPT, err, "%s: key column %s is missing", path,
                     fr_schema_field(m->schema, m->key_cols[k])->name);
            int pos = -1;
            for (int i = 0; i < s->nread; i++)
                if (s->read_cols[i] == fc) pos = i;
            if (pos < 0) {
                pos = s->nread;
                s->read_cols[s->nread++] = fc;
            }
            s->key_pos[k] = pos;
        }
    return 0;
}

static bool row_group_may_match(fr_iceberg_scan *s, int rg, fr_error *err)
{
    if (!s->filter) return true;
    const fr_ice_meta *m = s->meta;
    int n = fr_schema_num_fields(m->schema);
    const fr_schema *fs = fr_parquet_schema(s->r);
    int nf = fr_schema_num_fields(fs);
    fr_column_stats *fst = fr_calloc((size_t)nf, sizeof *fst);
    fr_column_stats *st = fr_calloc((size_t)n, sizeof *st);
    bool may = true;
    if (fst && st && fr_parquet_row_group_stats(s->r, rg, fst, err) == 0) {
        for (int c = 0; c < n; c++) {
            int fc = file_col(s->r, m, c);
            if (fc >= 0) st[c] = fst[fc];
            else st[c].null_count = -1;
        }
        may = fr_expr_may_match(s->filter, st, fr_parquet_row_group_rows(s->r, rg));
    }
    fr_free(fst);
    fr_free(st);
    return may;
}

/* Drops the rows of b deleted by newer equality deletes; *out is b itself (kept) or a new
 * batch. */
static int apply_deletes(fr_iceberg_scan *s, fr_batch *b, fr_batch **out, fr_error *err)
{
    const fr_ice_meta *m = s->meta;
    int64_t n = fr_batch_num_rows(b);
    uint8_t *keep = fr_malloc((size_t)(n + 7) / 8 + 1);
    FR_CHECK(keep, FR_ENOMEM, err, "out of memory applying deletes");
    memset(keep, 0xff, (size_t)(n + 7) / 8 + 1);
    fr_type *types = s->key_types;
    fr_value *vals = s->key_vals;
    for (int k = 0; k < m->nkey; k++) types[k] = fr_batch_column(b, s->key_pos[k])->type;
    int64_t dropped = 0;
    int rc = 0;
    for (int64_t r = 0; r < n; r++) {
        fr_buf_reset(&s->key);
        FR_GOTO(fr_buf_append(&s->key, s->cur->part_key, s->cur->part_key_len, err));
        for (int k = 0; k < m->nkey; k++)
            fr_column_get(fr_batch_column(b, s->key_pos[k]), r, &vals[k]);
        FR_GOTO(fr_key_encode(types, vals, m->nkey, &s->key, err));
        int64_t *seq = fr_ice_map_get(s->deletes, s->key.data, s->key.len);
        if (seq && *seq > s->cur->f->seq) {
            keep[r >> 3] &= (uint8_t)~(1u << (r & 7));
            dropped++;
        }
    }
    if (dropped == 0) *out = b;
    else rc = fr_batch_filter(b, keep, out, err);
fail:
    fr_free(keep);
    return rc;
}

int fr_iceberg_scan_next(fr_iceberg_scan *s, fr_batch **out, fr_error *err)
{
    *out = NULL;
    for (;;) {
        if (!s->r) {
            if (s->next >= s->nplan) return 0;
            int rc = open_file(s, &s->plan[s->next++], err);
            if (rc < 0) return fr_error_wrap(err, "table %s: scan", s->t->dir);
            continue;
        }
        if (s->rg >= s->nrg) {
            fr_parquet_close(s->r);
            s->r = NULL;
            continue;
        }
        int rg = s->rg++;
        if (!row_group_may_match(s, rg, err)) {
            s->rgs_skipped++;
            continue;
        }
        fr_batch *b = NULL, *kept = NULL;
        int rc = fr_parquet_read_row_group(s->r, rg, s->read_cols, s->nread, &b, err);
        if (rc == 0 && s->apply_deletes) rc = apply_deletes(s, b, &kept, err);
        else kept = b;
        if (rc == 0 && fr_batch_num_rows(kept) == 0) {
            if (kept != b) fr_batch_free(kept);
            fr_batch_free(b);
            continue;
        }
        if (rc == 0 && s->nread != s->ncols) {
            rc = fr_batch_project(kept, s->idx, s->ncols, out, err);
        } else if (rc == 0) {
            *out = kept;
            kept = NULL;
            if (*out == b) b = NULL;
        }
        if (kept && kept != b) fr_batch_free(kept);
        fr_batch_free(b);
        if (rc < 0) return fr_error_wrap(err, "table %s: scan", s->t->dir);
        return 0;
    }
}
