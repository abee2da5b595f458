/* lake_iceberg_commit.c — one Iceberg commit: data and equality-delete files written as rows
 * come (one Parquet writer per partition value tuple, rolled at the target size), then
 * manifests, a manifest list that carries every manifest of the parent snapshot, and the
 * new metadata version, published with an atomic create-if-absent, then the version hint.
 *
 * Invariants: nothing a commit writes is referenced by published metadata until the
 * metadata file is linked into place, so a crash at any step leaves the previous snapshot
 * the newest readable one; every file a failed commit created is removed (a crash leaves
 * them to fr_iceberg_remove_orphans). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "lake/lake_iceberg_int.h"

typedef struct ice_writer {
    fr_parquet_writer *w; /* NULL once rolled or closed */
    const char *uri, *path;
    fr_value *part;       /* the partition tuple (arena) */
} ice_writer;

/* The writers of one kind of file (data or deletes). */
typedef struct ice_side {
    int content;          /* 0 data, 2 equality deletes */
    const fr_schema *schema;
    const int32_t *ids;
    const int *part_pos;  /* position of each partition field in schema */
    fr_ice_map *by_part;  /* partition key -> index in writers */
    ice_writer *writers;
    int nwriters, cap;
    int64_t rows;
} ice_side;

struct fr_iceberg_commit {
    fr_iceberg_table *t;
    fr_ice_meta *meta;    /* a reference to the metadata the writers were set up from */
    fr_arena *arena;
    char uuid[37];
    int nfiles_named;
    ice_side data, del;
    fr_ice_file *files;   /* closed files */
    int nfiles, cap;
    const char **expired; /* manifest lists of snapshots this commit expires (URIs) */
    int nexpired;
    const char **created; /* local paths of every file created, for abort */
    int ncreated, created_cap;
    fr_buf key;           /* scratch */
};

static int side_init(ice_side *s, int content, const fr_schema *schema, const int32_t *ids,
                     const int *part_pos, fr_error *err)
{
    s->content = content;
    s->schema = schema;
    s->ids = ids;
    s->part_pos = part_pos;
    s->by_part = fr_ice_map_new();
    if (!s->by_part) return fr_fail(err, FR_ENOMEM, "out of memory beginning a commit");
    return 0;
}

int fr_iceberg_commit_begin(fr_iceberg_table *t, fr_iceberg_commit **out, fr_error *err)
{
    *out = NULL;
    FR_TRY(fr_ice_table_catch_up(t, err));
    fr_iceberg_commit *c = fr_calloc(1, sizeof *c);
    if (!c) return fr_fail(err, FR_ENOMEM, "out of memory beginning a commit");
    c->t = t;
    c->meta = fr_ice_meta_ref(t->meta);
    fr_buf_init(&c->key);
    int rc = 0;
    c->arena = fr_arena_new(64 << 10);
    if (!c->arena) {
        rc = fr_fail(err, FR_ENOMEM, "out of memory beginning a commit");
        goto fail;
    }
    FR_GOTO(fr_ice_uuid(c->uuid, err));
    FR_GOTO(side_init(&c->data, 0, t->schema, c->meta->field_ids, c->meta->part_cols, err));
    FR_GOTO(side_init(&c->del, 2, t->del_schema, t->del_ids, t->del_part_pos, err));
    *out = c;
    return 0;
fail:
    fr_iceberg_commit_abort(c);
    return rc;
}

static int remember(fr_iceberg_commit *c, const char *path, fr_error *err)
{
    if (c->ncreated == c->created_cap) {
        int cap = c->created_cap ? c->created_cap * 2 : 16;
        const char **v = fr_realloc(c->created, (size_t)cap * sizeof *v);
        if (!v) return fr_fail(err, FR_ENOMEM, "out of memory in a commit");
        c->created = v;
        c->created_cap = cap;
    }
    c->created[c->ncreated++] = path;
    return 0;
}

static fr_ice_file *new_file(fr_iceberg_commit *c, fr_error *err)
{
    if (c->nfiles == c->cap) {
        int cap = c->cap ? c->cap * 2 : 16;
        fr_ice_file *v = fr_realloc(c->files, (size_t)cap * sizeof *v);
        if (!v) {
            fr_fail(err, FR_ENOMEM, "out of memory in a commit");
            return NULL;
        }
        c->files = v;
        c->cap = cap;
    }
    fr_ice_file *f = &c->files[c->nfiles++];
    memset(f, 0, sizeof *f);
    return f;
}

static int copy_value(fr_arena *a, const fr_value *v, fr_value *out, fr_error *err)
{
    *out = *v;
    if (!v->is_null && (fr_type_is_string(v->type.id) || v->type.id == FR_T_BYTES)) {
        uint8_t *p = fr_arena_alloc(a, v->v.s.len ? v->v.s.len : 1);
        if (!p) return fr_fail(err, FR_ENOMEM, "out of memory in a commit");
        if (v->v.s.len) memcpy(p, v->v.s.ptr, v->v.s.len);
        out->v.s.ptr = p;
    }
    return 0;
}

/* Describes a closed Parquet file for the manifest. */
/* Encodes v as an Iceberg bound (single-value serialization) into the commit's arena:
 * *out and *len stay as they are (absent) when the bound is skipped (a string upper bound
 * that cannot be cut). scratch is the caller's buffer, reused across calls. */
static int bound_copy(fr_iceberg_commit *c, const fr_value *v, bool upper, fr_buf *scratch,
                      const uint8_t **out, int32_t *len, fr_error *err)
{
    bool skip;
    fr_buf_reset(scratch);
    FR_TRY(fr_ice_bound_encode(v, upper, scratch, &skip, err));
    if (skip) return 0;
    uint8_t *p = fr_arena_alloc(c->arena, scratch->len ? scratch->len : 1);
    FR_CHECK(p, FR_ENOMEM, err, "out of memory in a commit");
    if (scratch->len) memcpy(p, scratch->data, scratch->len);
    *out = p;
    *len = (int32_t)scratch->len;
    return 0;
}

static int describe_file(fr_iceberg_commit *c, const ice_side *s, const ice_writer *w,
                         const fr_parquet_file_info *info, fr_error *err)
{
    fr_ice_file *f = new_file(c, err);
    if (!f) return FR_ENOMEM;
    const fr_iceberg_table *t = c->t;
    f->status = 1;
    f->content = s->content;
    f->path = w->uri;
    f->records = info->rows;
    f->file_bytes = info->file_bytes;
    f->part = w->part;
    f->npart = t->ps.n;
    f->stats = fr_arena_alloc(c->arena, (size_t)(info->ncols ? info->ncols : 1) * sizeof *f->stats);
    f->splits = fr_arena_alloc(c->arena, (size_t)(info->nrow_groups ? info->nrow_groups : 1) *
                                             sizeof *f->splits);
    if (!f->stats || !f->splits) return fr_fail(err, FR_ENOMEM, "out of memory in a commit");
    fr_buf b;
    fr_buf_init(&b);
    int rc = 0;
    for (int i = 0; i < info->ncols; i++) {
        const fr_lake_col_stats *cs = &info->cols[i];
        fr_ice_col_stat *o = &f->stats[f->nstats++];
        *o = (fr_ice_col_stat){.field_id = s->ids[i], .size = cs->bytes, .values = cs->values,
                               .nulls = cs->nulls};
        if (!cs->has_minmax) continue;
        FR_GOTO(bound_copy(c, &cs->min, false, &b, &o->lower, &o->lower_len, err));
        FR_GOTO(bound_copy(c, &cs->max, true, &b, &o->upper, &o->upper_len, err));
    }
    for (int i = 0; i < info->nrow_groups; i++) f->splits[i] = info->row_group_offsets[i];
    f->nsplits = info->nrow_groups;
    if (s->content == 2) {
        f->neq = t->meta->nkey;
        f->eq_ids = fr_arena_alloc(c->arena, (size_t)f->neq * sizeof *f->eq_ids);
        if (!f->eq_ids) {
            rc = fr_fail(err, FR_ENOMEM, "out of memory in a commit");
            goto fail;
        }
        for (int i = 0; i < f->neq; i++) f->eq_ids[i] = t->meta->field_ids[t->meta->key_cols[i]];
    }
fail:
    fr_buf_free(&b);
    return rc;
}

static int close_writer(fr_iceberg_commit *c, ice_side *s, ice_writer *w, fr_error *err)
{
    if (!w->w) return 0;
    fr_parquet_file_info *info = NULL;
    int rc = fr_parquet_writer_close(w->w, &info, err);
    w->w = NULL;
    if (rc == 0) rc = describe_file(c, s, w, info, err);
    fr_parquet_file_info_free(info);
    return rc;
}

static int open_writer(fr_iceberg_commit *c, ice_side *s, ice_writer *w, fr_error *err)
{
    char name[96];
    snprintf(name, sizeof name, "%s-%05d%s.parquet", c->uuid, ++c->nfiles_named,
             s->content ? "-deletes" : "");
    FR_TRY(fr_ice_file_names(c->t, "data", name, c->arena, &w->uri, &w->path, err));
    FR_TRY(remember(c, w->path, err));
    return fr_parquet_writer_open(w->path, s->schema, s->ids,
                                  c->t->has_popts ? &c->t->popts : NULL, &w->w, err);
}

/* The writer of the partition of row `row` (writers[0] when unpartitioned). */
static int writer_of(fr_iceberg_commit *c, ice_side *s, const fr_batch *b, int64_t row,
                     int *out, fr_error *err)
{
    int np = c->t->ps.n;
    fr_value vals[FR_ICE_PARTITION_FIELDS_MAX];
    for (int i = 0; i < np; i++) fr_column_get(fr_batch_column(b, s->part_pos[i]), row, &vals[i]);
    fr_buf_reset(&c->key);
    FR_TRY(fr_ice_part_key(vals, np, &c->key, err));
    int64_t *slot;
    FR_TRY(fr_ice_map_put(s->by_part, c->key.data, c->key.len, -1, &slot, err));
    if (*slot < 0) {
        if (s->nwriters == s->cap) {
            int cap = s->cap ? s->cap * 2 : 8;
            ice_writer *v = fr_realloc(s->writers, (size_t)cap * sizeof *v);
            if (!v) return fr_fail(err, FR_ENOMEM, "out of memory in a commit");
            s->writers = v;
            s->cap = cap;
        }
        ice_writer *w = &s->writers[s->nwriters];
        memset(w, 0, sizeof *w);
        w->part = fr_arena_alloc(c->arena, (size_t)(np ? np : 1) * sizeof *w->part);
        if (!w->part) return fr_fail(err, FR_ENOMEM, "out of memory in a commit");
        for (int i = 0; i < np; i++) FR_TRY(copy_value(c->arena, &vals[i], &w->part[i], err));
        *slot = s->nwriters++;
    }
    *out = (int)*slot;
    return 0;
}

/* Whether rows a and b of the batch have equal partition values. */
static bool same_partition(const fr_iceberg_commit *c, const ice_side *s, const fr_batch *b,
                           int64_t ra, int64_t rb)
{
    for (int i = 0; i < c->t->ps.n; i++) {
        const fr_column *col = fr_batch_column(b, s->part_pos[i]);
        bool na = fr_column_is_null(col, ra), nb = fr_column_is_null(col, rb);
        if (na != nb) return false;
        if (na) continue;
        if (fr_type_is_varwidth(&col->type)) {
            int32_t la = col->offsets[ra + 1] - col->offsets[ra];
            int32_t lb = col->offsets[rb + 1] - col->offsets[rb];
            if (la != lb ||
                memcmp(col->values + col->offsets[ra], col->values + col->offsets[rb], (size_t)la))
                return false;
        } else if (col->type.id == FR_T_BOOLEAN) {
            if (((col->values[ra >> 3] >> (ra & 7)) & 1) != ((col->values[rb >> 3] >> (rb & 7)) & 1))
                return false;
        } else {
            int w = fr_type_width(&col->type);
            if (memcmp(col->values + ra * w, col->values + rb * w, (size_t)w) != 0) return false;
        }
    }
    return true;
}

/* Writes b's rows (with b2's columns beside them, when b2 is not NULL) to writer wi. */
static int write_part(fr_iceberg_commit *c, ice_side *s, int wi, const fr_batch *b,
                      const fr_batch *b2, fr_error *err)
{
    ice_writer *w = &s->writers[wi];
    if (!w->w) FR_TRY(open_writer(c, s, w, err));
    if (b2) FR_TRY(fr_parquet_writer_write2(w->w, b, b2, err));
    else FR_TRY(fr_parquet_writer_write(w->w, b, err));
    s->rows += fr_batch_num_rows(b);
    if (fr_parquet_writer_bytes(w->w) >= c->t->target_file_bytes) FR_TRY(close_writer(c, s, w, err));
    return 0;
}

static int add_batch(fr_iceberg_commit *c, ice_side *s, const fr_batch *b, fr_error *err)
{
    FR_CHECK(s->schema, FR_EINVAL, err, "table %s has no primary key: no equality deletes",
             c->t->dir);
    FR_CHECK(fr_schema_equal(fr_batch_schema(b), s->schema), FR_EINVAL, err,
             "table %s: rows do not have the %s schema", c->t->dir,
             s->content ? "delete" : "lake");
    int64_t n = fr_batch_num_rows(b);
    if (n == 0) return 0;
    int *wi = fr_malloc((size_t)n * sizeof *wi);
    uint8_t *keep = fr_malloc((size_t)(n + 7) / 8);
    int rc = 0;
    if (!wi || !keep) {
        rc = fr_fail(err, FR_ENOMEM, "out of memory in a commit");
        goto fail;
    }
    bool one = true;
    if (c->t->ps.n == 0) {
        /* Unpartitioned: every row goes to the one writer. */
        FR_GOTO(writer_of(c, s, b, 0, &wi[0], err));
    } else {
        /* Rows of a batch mostly share their partition (tiering reads one bucket at a
         * time): a row equal to the previous one in its partition columns skips the map. */
        for (int64_t r = 0; r < n; r++) {
            if (r > 0 && same_partition(c, s, b, r - 1, r)) wi[r] = wi[r - 1];
            else FR_GOTO(writer_of(c, s, b, r, &wi[r], err));
            one = one && wi[r] == wi[0];
        }
    }
    if (one) {
        FR_GOTO(write_part(c, s, wi[0], b, NULL, err));
        goto fail;
    }
    /* Rows of several partitions: one filtered batch per partition present. */
    for (int64_t first = 0; first < n; first++) {
        int target = wi[first];
        if (target < 0) continue;
        memset(keep, 0, (size_t)(n + 7) / 8);
        for (int64_t r = first; r < n; r++)
            if (wi[r] == target) {
                keep[r >> 3] |= (uint8_t)(1u << (r & 7));
                wi[r] = -1;
            }
        fr_batch *part = NULL;
        FR_GOTO(fr_batch_filter(b, keep, &part, err));
        rc = write_part(c, s, target, part, NULL, err);
        fr_batch_free(part);
        if (rc < 0) goto fail;
    }
fail:
    fr_free(wi);
    fr_free(keep);
    return rc;
}

int fr_iceberg_commit_add_rows(fr_iceberg_commit *c, const fr_batch *rows, fr_error *err)
{
    return add_batch(c, &c->data, rows, err);
}

int fr_iceberg_commit_add_rows2(fr_iceberg_commit *c, const fr_batch *a, const fr_batch *b,
                                fr_error *err)
{
    FR_CHECK(c->t->ps.n == 0, FR_EINVAL, err,
             "table %s is partitioned: its rows go in as one batch", c->t->dir);
    if (fr_batch_num_rows(a) == 0) return 0;
    int wi = 0;
    FR_TRY(writer_of(c, &c->data, a, 0, &wi, err));
    return write_part(c, &c->data, wi, a, b, err);
}

int fr_iceberg_commit_add_deletes(fr_iceberg_commit *c, const fr_batch *keys, fr_error *err)
{
    return add_batch(c, &c->del, keys, err);
}

static void side_free(ice_side *s)
{
    for (int i = 0; i < s->nwriters; i++)
        if (s->writers[i].w) fr_parquet_writer_abort(s->writers[i].w);
    fr_free(s->writers);
    fr_ice_map_free(s->by_part);
}

static void commit_free(fr_iceberg_commit *c, bool remove_files)
{
    side_free(&c->data);
    side_free(&c->del);
    if (remove_files)
        for (int i = 0; i < c->ncreated; i++) unlink(c->created[i]);
    fr_free(c->created);
    fr_free(c->files);
    fr_buf_free(&c->key);
    fr_arena_free(c->arena);
    fr_ice_meta_free(c->meta);
    fr_free(c);
}

void fr_iceberg_commit_abort(fr_iceberg_commit *c)
{
    if (c) commit_free(c, true);
}

/* ---- finishing ------------------------------------------------------------------------- */

typedef struct ice_totals {
    int64_t data_files, delete_files, eq_delete_files, records, eq_deletes, files_size;
    int64_t added_data_files, added_delete_files, added_records, added_eq_deletes, added_size;
    int changed_partitions;
} ice_totals;

static int64_t summary_count(json_t *sum, const char *key)
{
    int64_t v = 0;
    const char *s = json_string_value(json_object_get(sum, key));
    if (s && fr_parse_i64(s, &v, NULL) == 0 && v >= 0) return v;
    return 0;
}

/* The partition field summaries of files v[0..n) (manifest list field 507). */
static int summarize(fr_iceberg_commit *c, const fr_ice_file *v, int n, fr_ice_manifest *out,
                     fr_error *err)
{
    int np = c->t->ps.n;
    out->nparts = np;
    out->parts = fr_arena_alloc(c->arena, (size_t)(np ? np : 1) * sizeof *out->parts);
    FR_CHECK(out->parts, FR_ENOMEM, err, "out of memory in a commit");
    fr_buf b;
    fr_buf_init(&b);
    int rc = 0;
    for (int i = 0; i < np; i++) {
        fr_ice_field_summary *fs = &out->parts[i];
        memset(fs, 0, sizeof *fs);
        const fr_value *lo = NULL, *hi = NULL;
        for (int k = 0; k < n; k++) {
            const fr_value *x = &v[k].part[i];
            if (x->is_null) {
                fs->contains_null = true;
                continue;
            }
            if ((x->type.id == FR_T_FLOAT || x->type.id == FR_T_DOUBLE) && x->v.f != x->v.f) {
                fs->contains_nan = 1;
                continue;
            }
            int cmp;
            if (!lo || (fr_value_compare(x, lo, &cmp, NULL) == 0 && cmp < 0)) lo = x;
            if (!hi || (fr_value_compare(x, hi, &cmp, NULL) == 0 && cmp > 0)) hi = x;
        }
        if (!lo) continue;
        FR_GOTO(bound_copy(c, lo, false, &b, &fs->lower, &fs->lower_len, err));
        FR_GOTO(bound_copy(c, hi, true, &b, &fs->upper, &fs->upper_len, err));
    }
fail:
    fr_buf_free(&b);
    return rc;
}

static int write_manifest(fr_iceberg_commit *c, int content, int64_t snap_id, int64_t seq,
                          fr_ice_manifest *out, bool *written, fr_error *err)
{
    *written = false;
    fr_ice_file *v = fr_malloc((size_t)(c->nfiles ? c->nfiles : 1) * sizeof *v);
    if (!v) return fr_fail(err, FR_ENOMEM, "out of memory in a commit");
    int n = 0;
    int64_t rows = 0;
    for (int i = 0; i < c->nfiles; i++)
        if ((c->files[i].content != 0) == (content != 0)) {
            v[n] = c->files[i];
            v[n].snapshot_id = snap_id;
            v[n].seq = v[n].file_seq = seq;
            rows += v[n].records;
            n++;
        }
    int rc = 0;
    if (n > 0) {
        char name[96];
        const char *uri, *path;
        snprintf(name, sizeof name, "%s-m%d.avro", c->uuid, content ? 1 : 0);
        FR_GOTO(fr_ice_file_names(c->t, "metadata", name, c->arena, &uri, &path, err));
        FR_GOTO(remember(c, path, err));
        *out = (fr_ice_manifest){.path = uri, .spec_id = c->t->meta->spec_id,
                                 .content = content ? 1 : 0, .seq = seq, .min_seq = seq,
                                 .added_snapshot_id = snap_id, .added_files = n,
                                 .added_rows = rows};
        FR_GOTO(summarize(c, v, n, out, err));
        FR_GOTO(fr_avro_write_manifest(path, c->t->meta, &c->t->ps, content, v, n, &out->length,
                                       err));
        *written = true;
    }
fail:
    fr_free(v);
    return rc;
}

static int cmp_offset(const void *a, const void *b)
{
    const fr_lake_offset *x = a, *y = b;
    if (x->partition_id != y->partition_id) return x->partition_id < y->partition_id ? -1 : 1;
    return (x->bucket > y->bucket) - (x->bucket < y->bucket);
}

/* The parent's tiered offsets with the given ones replacing those of the same bucket, as
 * the JSON text of the summary key. */
static int merge_offsets(const fr_ice_snap *parent, const fr_lake_offset *offs, int n,
                         char **out, fr_error *err)
{
    fr_lake_snapshot ps;
    memset(&ps, 0, sizeof ps);
    if (parent) FR_TRY(fr_ice_snap_describe(parent, &ps, err));
    fr_lake_offset *all = fr_malloc((size_t)(ps.noffsets + n + 1) * sizeof *all);
    json_t *arr = json_array();
    int rc = 0, na = 0;
    if (!all || !arr) {
        rc = fr_fail(err, FR_ENOMEM, "out of memory in a commit");
        goto fail;
    }
    for (int i = 0; i < ps.noffsets; i++) all[na++] = ps.offsets[i];
    for (int i = 0; i < n; i++) {
        int j = 0;
        while (j < na && cmp_offset(&all[j], &offs[i]) != 0) j++;
        all[j] = offs[i];
        if (j == na) na++;
    }
    qsort(all, (size_t)na, sizeof *all, cmp_offset);
    for (int i = 0; i < na; i++) {
        json_t *o = json_pack("{s:I,s:i,s:I}", "partition_id", (json_int_t)all[i].partition_id,
                              "bucket", (int)all[i].bucket, "offset", (json_int_t)all[i].offset);
        if (!o || json_array_append_new(arr, o) != 0) {
            rc = fr_fail(err, FR_ENOMEM, "out of memory in a commit");
            goto fail;
        }
    }
    *out = json_dumps(arr, JSON_COMPACT);
    if (!*out) rc = fr_fail(err, FR_ENOMEM, "out of memory in a commit");
fail:
    json_decref(arr);
    fr_free(all);
    fr_free(ps.offsets);
    return rc;
}

static int count_partitions(const fr_iceberg_commit *c, int *out, fr_error *err)
{
    fr_ice_map *m = fr_ice_map_new();
    fr_buf b;
    fr_buf_init(&b);
    int rc = m ? 0 : fr_fail(err, FR_ENOMEM, "out of memory in a commit");
    for (int i = 0; rc == 0 && i < c->nfiles; i++) {
        int64_t *slot;
        fr_buf_reset(&b);
        rc = fr_ice_part_key(c->files[i].part, c->files[i].npart, &b, err);
        if (rc == 0) rc = fr_ice_map_put(m, b.data, b.len, 0, &slot, err);
    }
    *out = m ? (int)fr_ice_map_count(m) : 0;
    fr_ice_map_free(m);
    fr_buf_free(&b);
    return rc;
}

static json_t *summary_json(const ice_totals *tt, const char *op, const char *offsets)
{
    json_t *s = json_object();
    if (!s) return NULL;
    char v[32];
#define PUT(key, val)                                                                        \
    do {                                                                                     \
        snprintf(v, sizeof v, "%lld", (long long)(val));                                     \
        if (json_object_set_new(s, key, json_string(v)) != 0) goto fail;                     \
    } while (0)
    if (json_object_set_new(s, "operation", json_string(op)) != 0) goto fail;
    PUT("added-data-files", tt->added_data_files);
    PUT("added-delete-files", tt->added_delete_files);
    PUT("added-equality-delete-files", tt->added_delete_files);
    PUT("added-records", tt->added_records);
    PUT("added-equality-deletes", tt->added_eq_deletes);
    PUT("added-files-size", tt->added_size);
    PUT("changed-partition-count", tt->changed_partitions);
    PUT("total-records", tt->records);
    PUT("total-files-size", tt->files_size);
    PUT("total-data-files", tt->data_files);
    PUT("total-delete-files", tt->delete_files);
    PUT("total-position-deletes", 0);
    PUT("total-equality-deletes", tt->eq_deletes);
#undef PUT
    if (json_object_set_new(s, FR_ICE_SUMMARY_OFFSETS_KEY, json_string(offsets)) != 0) goto fail;
    return s;
fail:
    json_decref(s);
    return NULL;
}

static int totals(const fr_iceberg_commit *c, const fr_ice_snap *parent, ice_totals *tt,
                  fr_error *err)
{
    memset(tt, 0, sizeof *tt);
    for (int i = 0; i < c->nfiles; i++) {
        const fr_ice_file *f = &c->files[i];
        if (f->content == 0) {
            tt->added_data_files++;
            tt->added_records += f->records;
        } else {
            tt->added_delete_files++;
            tt->added_eq_deletes += f->records;
        }
        tt->added_size += f->file_bytes;
    }
    FR_TRY(count_partitions(c, &tt->changed_partitions, err));
    json_t *ps = parent ? parent->summary : NULL;
    tt->data_files = summary_count(ps, "total-data-files") + tt->added_data_files;
    tt->delete_files = summary_count(ps, "total-delete-files") + tt->added_delete_files;
    tt->records = summary_count(ps, "total-records") + tt->added_records;
    tt->eq_deletes = summary_count(ps, "total-equality-deletes") + tt->added_eq_deletes;
    tt->files_size = summary_count(ps, "total-files-size") + tt->added_size;
    return 0;
}

#define SETJ(obj, key, val)                                                                  \
    do {                                                                                     \
        if (json_object_set_new((obj), (key), (val)) != 0) goto nomem;                       \
    } while (0)

/* Keeps the newest snapshots and metadata-log entries of doc within the table's limits.
 * The manifest lists of the expired snapshots are noted for removal once the commit is
 * published (no other snapshot refers to them; their manifests and data files may still
 * be in use and are left to fr_iceberg_remove_orphans). */
static int trim_history(fr_iceberg_commit *c, json_t *doc, fr_error *err)
{
    json_t *snaps = json_object_get(doc, "snapshots");
    size_t n = json_array_size(snaps), keep = (size_t)c->t->snapshots_keep;
    if (n > keep) {
        size_t drop = n - keep;
        c->expired = fr_arena_alloc(c->arena, drop * sizeof *c->expired);
        FR_CHECK(c->expired, FR_ENOMEM, err, "out of memory in a commit");
        fr_ice_map *gone = fr_ice_map_new();
        FR_CHECK(gone, FR_ENOMEM, err, "out of memory in a commit");
        int rc = 0;
        for (size_t i = 0; rc == 0 && i < drop; i++) {
            json_t *s0 = json_array_get(snaps, 0);
            json_int_t id = json_integer_value(json_object_get(s0, "snapshot-id"));
            const char *ml = json_string_value(json_object_get(s0, "manifest-list"));
            char *copy = ml ? fr_arena_strndup(c->arena, ml, strlen(ml)) : NULL;
            if (copy) c->expired[c->nexpired++] = copy;
            int64_t *slot;
            rc = fr_ice_map_put(gone, &id, sizeof id, 1, &slot, err);
            json_array_remove(snaps, 0);
        }
        json_t *slog = json_object_get(doc, "snapshot-log");
        for (size_t i = json_array_size(slog); rc == 0 && i-- > 0;) {
            json_int_t id = json_integer_value(json_object_get(json_array_get(slog, i), "snapshot-id"));
            if (fr_ice_map_get(gone, &id, sizeof id)) json_array_remove(slog, i);
        }
        fr_ice_map_free(gone);
        FR_TRY(rc);
    }
    json_t *mlog = json_object_get(doc, "metadata-log");
    while (json_array_size(mlog) > (size_t)c->t->metadata_keep) json_array_remove(mlog, 0);
    return 0;
}

/* Removes what the published commit made unreferenced: manifest lists of expired
 * snapshots, and the metadata file that left the metadata log. Best effort: what stays is
 * removed by fr_iceberg_remove_orphans. */
static void remove_expired(fr_iceberg_commit *c, int64_t version)
{
    for (int i = 0; i < c->nexpired; i++) {
        const char *p = fr_ice_local_path(c->expired[i]);
        if (p) unlink(p);
    }
    int64_t old = version - 1 - c->t->metadata_keep;
    if (old >= 1) {
        char path[4096];
        snprintf(path, sizeof path, "%s/v%lld.metadata.json", c->t->meta_dir, (long long)old);
        unlink(path);
    }
}

/* The next metadata document: the current one with the new snapshot appended and made
 * current. *out is the JSON text (free()). */
static int next_metadata(fr_iceberg_commit *c, int64_t snap_id, int64_t seq, const char *list_uri,
                         const fr_lake_offset *offs, int noffs, char **out, fr_error *err)
{
    const fr_ice_meta *m = c->t->meta;
    const fr_ice_snap *parent = m->current_id >= 0 ? fr_ice_meta_snap(m, m->current_id) : NULL;
    ice_totals tt;
    char *offsets = NULL;
    FR_TRY(totals(c, parent, &tt, err));
    FR_TRY(merge_offsets(parent, offs, noffs, &offsets, err));
    const char *op = tt.added_delete_files == 0 ? "append"
                     : tt.added_data_files ? "overwrite" : "delete";
    int64_t now = fr_now_ms();
    json_t *doc = json_deep_copy(m->root), *snap = NULL, *sum = summary_json(&tt, op, offsets);
    free(offsets);
    if (!doc || !sum) goto nomem;
    int64_t prev_ms = json_integer_value(json_object_get(doc, "last-updated-ms"));
    snap = json_object();
    if (!snap) goto nomem;
    SETJ(snap, "snapshot-id", json_integer(snap_id));
    if (parent) SETJ(snap, "parent-snapshot-id", json_integer(parent->id));
    SETJ(snap, "sequence-number", json_integer(seq));
    SETJ(snap, "timestamp-ms", json_integer(now));
    SETJ(snap, "manifest-list", json_string(list_uri));
    SETJ(snap, "summary", sum);
    sum = NULL;
    SETJ(snap, "schema-id", json_integer(m->schema_id));
    json_t *snaps = json_object_get(doc, "snapshots");
    if (!json_is_array(snaps)) {
        SETJ(doc, "snapshots", json_array());
        snaps = json_object_get(doc, "snapshots");
    }
    if (json_array_append_new(snaps, snap) != 0) { snap = NULL; goto nomem; }
    snap = NULL;
    SETJ(doc, "last-sequence-number", json_integer(seq));
    SETJ(doc, "last-updated-ms", json_integer(now));
    SETJ(doc, "current-snapshot-id", json_integer(snap_id));
    SETJ(doc, "refs", json_pack("{s:{s:I,s:s}}", "main", "snapshot-id", (json_int_t)snap_id,
                                "type", "branch"));
    json_t *slog = json_object_get(doc, "snapshot-log");
    if (!json_is_array(slog)) {
        SETJ(doc, "snapshot-log", json_array());
        slog = json_object_get(doc, "snapshot-log");
    }
    if (json_array_append_new(slog, json_pack("{s:I,s:I}", "timestamp-ms", (json_int_t)now,
                                              "snapshot-id", (json_int_t)snap_id)) != 0)
        goto nomem;
    json_t *mlog = json_object_get(doc, "metadata-log");
    if (!json_is_array(mlog)) {
        SETJ(doc, "metadata-log", json_array());
        mlog = json_object_get(doc, "metadata-log");
    }
    char prev[4096];
    snprintf(prev, sizeof prev, "%s/metadata/v%lld.metadata.json", c->t->uri,
             (long long)m->version);
    if (json_array_append_new(mlog, json_pack("{s:I,s:s}", "timestamp-ms", (json_int_t)prev_ms,
                                              "metadata-file", prev)) != 0)
        goto nomem;
    int rc = trim_history(c, doc, err);
    if (rc < 0) {
        json_decref(doc);
        return rc;
    }
    *out = json_dumps(doc, JSON_INDENT(2));
    json_decref(doc);
    if (!*out) return fr_fail(err, FR_ENOMEM, "out of memory in a commit");
    return 0;
nomem:
    json_decref(snap);
    json_decref(sum);
    json_decref(doc);
    return fr_fail(err, FR_ENOMEM, "out of memory building the metadata of a commit");
}

/* Merges the manifests of one kind (0 data, 1 deletes) among old[0..nold) into one
 * manifest of their live entries, marked EXISTING with their sequence numbers, when the
 * list would otherwise hold more than the table's limit; *merged is set when it did. Fast
 * appends add a manifest per commit, and scans read every manifest of the list. */
static int merge_kind(fr_iceberg_commit *c, int kind, int nnew_kind, const fr_ice_manifest *old,
                      int nold, int64_t snap_id, int64_t seq, fr_ice_manifest *out,
                      bool *merged, fr_error *err)
{
    *merged = false;
    int nk = 0;
    for (int i = 0; i < nold; i++) nk += old[i].content == kind;
    if (nk < 2 || nk + nnew_kind <= c->t->merge_min) return 0;
    fr_ice_file *all = NULL;
    int n = 0, cap = 0, rc = 0;
    int64_t rows = 0, min_seq = seq;
    for (int i = 0; i < nold; i++) {
        if (old[i].content != kind) continue;
        fr_ice_file *files = NULL;
        int nf = 0;
        FR_GOTO(fr_avro_load_manifest(old[i].path, &c->t->ps, &old[i], c->arena, &files, &nf, err));
        for (int j = 0; j < nf; j++) {
            if (files[j].status == 2) continue;
            if (n == cap) {
                cap = cap ? cap * 2 : 64;
                fr_ice_file *v = fr_realloc(all, (size_t)cap * sizeof *v);
                if (!v) {
                    fr_free(files);
                    rc = fr_fail(err, FR_ENOMEM, "out of memory merging manifests");
                    goto fail;
                }
                all = v;
            }
            all[n] = files[j];
            all[n].status = 0;
            rows += files[j].records;
            if (files[j].seq < min_seq) min_seq = files[j].seq;
            n++;
        }
        fr_free(files);
    }
    char name[96];
    const char *uri, *path;
    snprintf(name, sizeof name, "%s-m%d.avro", c->uuid, 2 + kind);
    FR_GOTO(fr_ice_file_names(c->t, "metadata", name, c->arena, &uri, &path, err));
    FR_GOTO(remember(c, path, err));
    *out = (fr_ice_manifest){.path = uri, .spec_id = c->t->meta->spec_id, .content = kind,
                             .seq = seq, .min_seq = min_seq, .added_snapshot_id = snap_id,
                             .existing_files = n, .existing_rows = rows};
    FR_GOTO(summarize(c, all, n, out, err));
    FR_GOTO(fr_avro_write_manifest(path, c->t->meta, &c->t->ps, kind ? 2 : 0, all, n,
                                   &out->length, err));
    *merged = true;
fail:
    fr_free(all);
    return rc;
}

/* The manifest list of the new snapshot: the commit's manifests, then the parent's, with
 * each kind merged when there are too many. *out is fr_malloc'd. */
static int list_manifests(fr_iceberg_commit *c, const fr_ice_manifest *news, int nnew,
                          const fr_ice_manifest *old, int nold, int64_t snap_id, int64_t seq,
                          fr_ice_manifest **out, int *n, fr_error *err)
{
    fr_ice_manifest *all = fr_malloc((size_t)(nnew + nold + 2) * sizeof *all);
    FR_CHECK(all, FR_ENOMEM, err, "out of memory in a commit");
    int k = 0;
    for (int i = 0; i < nnew; i++) all[k++] = news[i];
    for (int kind = 0; kind < 2; kind++) {
        int nnew_kind = 0;
        for (int i = 0; i < nnew; i++) nnew_kind += news[i].content == kind;
        bool merged;
        int rc = merge_kind(c, kind, nnew_kind, old, nold, snap_id, seq, &all[k], &merged, err);
        if (rc < 0) {
            fr_free(all);
            return rc;
        }
        if (merged) k++;
        else
            for (int i = 0; i < nold; i++)
                if (old[i].content == kind) all[k++] = old[i];
    }
    *out = all;
    *n = k;
    return 0;
}

/* Makes the metadata text just published (version) the table's. */
static int adopt_published(fr_iceberg_table *t, const char *text, int64_t version,
                           fr_error *err)
{
    fr_ice_meta *nm = NULL;
    char path[4096];
    snprintf(path, sizeof path, "%s/v%lld.metadata.json", t->meta_dir, (long long)version);
    FR_TRY(fr_ice_meta_parse(text, strlen(text), path, &nm, err));
    nm->version = version;
    return fr_ice_table_adopt(t, nm, err);
}

static int close_all(fr_iceberg_commit *c, fr_error *err)
{
    ice_side *sides[] = {&c->data, &c->del};
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < sides[k]->nwriters; i++)
            FR_TRY(close_writer(c, sides[k], &sides[k]->writers[i], err));
    return 0;
}

/* Returns true when the test hook says to stop after `step`. */
static bool crash_here(fr_iceberg_commit *c, int step)
{
    return c->t->crash_after == step;
}

static int finish(fr_iceberg_commit *c, const fr_lake_offset *offsets, int noffsets,
                  int64_t *snapshot_id, bool *crashed, fr_error *err)
{
    fr_iceberg_table *t = c->t;
    FR_TRY(close_all(c, err));
    if (c->nfiles > 0) FR_TRY(fr_fsync_dir(t->data_dir, err));
    if ((*crashed = crash_here(c, 1))) return fr_fail(err, FR_EIO, "test crash after step 1");
    int64_t snap_id, seq = t->meta->last_seq + 1;
    FR_TRY(fr_ice_random_id(&snap_id, err));
    fr_ice_manifest news[2];
    int nnew = 0;
    bool written;
    FR_TRY(write_manifest(c, 0, snap_id, seq, &news[nnew], &written, err));
    nnew += written;
    FR_TRY(write_manifest(c, 2, snap_id, seq, &news[nnew], &written, err));
    nnew += written;
    if ((*crashed = crash_here(c, 2))) return fr_fail(err, FR_EIO, "test crash after step 2");
    /* The new manifests first, then every manifest of the parent (a fast append). */
    const fr_ice_snap *parent = t->meta->current_id >= 0
                                    ? fr_ice_meta_snap(t->meta, t->meta->current_id) : NULL;
    fr_ice_manifest *old = NULL, *all = NULL;
    int nold = 0, rc = 0;
    char *text = NULL;
    if (parent) FR_GOTO(fr_ice_snap_manifests(parent, c->arena, &old, &nold, err));
    int nall = 0;
    FR_GOTO(list_manifests(c, news, nnew, old, nold, snap_id, seq, &all, &nall, err));
    char name[96];
    const char *list_uri, *list_path;
    snprintf(name, sizeof name, "snap-%lld-1-%s.avro", (long long)snap_id, c->uuid);
    FR_GOTO(fr_ice_file_names(t, "metadata", name, c->arena, &list_uri, &list_path, err));
    FR_GOTO(remember(c, list_path, err));
    FR_GOTO(fr_avro_write_manifest_list(list_path, snap_id, parent ? parent->id : -1, seq, all,
                                        nall, err));
    if ((*crashed = crash_here(c, 3))) {
        rc = fr_fail(err, FR_EIO, "test crash after step 3");
        goto fail;
    }
    FR_GOTO(next_metadata(c, snap_id, seq, list_uri, offsets, noffsets, &text, err));
    int64_t version = t->meta->version + 1;
    FR_GOTO(fr_ice_publish_metadata(t->meta_dir, version, text, strlen(text), err));
    /* Published: from here on the commit is visible, its files must stay, and it succeeds
     * (a caller told otherwise would commit the same rows again). */
    c->ncreated = 0;
    *snapshot_id = snap_id;
    fr_error aerr = {0};
    if (adopt_published(t, text, version, &aerr) < 0) {
        t->stale = true; /* the next call on the handle refreshes it first */
        FR_WARN("table %s: committed v%lld, but the handle reads v%lld until it is refreshed: "
                "%s", t->dir, (long long)version, (long long)t->meta->version, aerr.msg);
    }
    if ((*crashed = crash_here(c, 4))) {
        rc = fr_fail(err, FR_EIO, "test crash after step 4");
        goto fail;
    }
    /* A reader that finds an old hint probes the versions after it, so a failed hint
     * rewrite loses nothing. */
    fr_error herr = {0};
    if (fr_ice_write_version_hint(t->meta_dir, version, &herr) < 0)
        FR_WARN("table %s: version hint not updated: %s", t->dir, herr.msg);
    remove_expired(c, version);
fail:
    free(text);
    fr_free(all);
    fr_free(old);
    return rc;
}

int fr_iceberg_commit_finish(fr_iceberg_commit *c, const fr_lake_offset *offsets, int noffsets,
                             int64_t *snapshot_id, fr_error *err)
{
    bool crashed = false;
    int rc = finish(c, offsets, noffsets, snapshot_id, &crashed, err);
    if (rc < 0) fr_error_wrap(err, "table %s: commit", c->t->dir);
    if (crashed) c->t->crash_after = 0;
    /* A simulated crash leaves its files behind, as a real one would. */
    commit_free(c, rc < 0 && !crashed);
    return rc;
}
