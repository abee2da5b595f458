/* lake_iceberg_table.c — opening and creating Iceberg tables in the filesystem catalog,
 * their snapshots, and the removal of orphan files.
 *
 * Invariants: t->meta is the newest published metadata seen by the last open or refresh,
 * and the derived views (partition spec, delete schema) always describe it. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lake/lake_iceberg_int.h"

static void views_free(fr_iceberg_table *t)
{
    fr_free(t->part_types);
    fr_free(t->part_names);
    fr_schema_free(t->del_schema);
    fr_schema_free(t->schema);
    fr_free(t->del_cols);
    fr_free(t->del_ids);
    fr_free(t->del_part_pos);
    t->part_types = NULL;
    t->part_names = NULL;
    t->del_schema = NULL;
    t->schema = NULL;
    t->del_cols = NULL;
    t->del_ids = NULL;
    t->del_part_pos = NULL;
}

/* Derives the views of the table's metadata that stay fixed while it is open. */
static int derive(fr_iceberg_table *t, fr_error *err)
{
    views_free(t);
    const fr_ice_meta *m = t->meta;
    t->schema = fr_schema_clone(m->schema);
    if (!t->schema) return fr_fail(err, FR_ENOMEM, "out of memory opening table %s", t->dir);
    int n = fr_schema_num_fields(m->schema);
    int np = m->npart;
    t->part_types = fr_calloc((size_t)(np ? np : 1), sizeof *t->part_types);
    t->part_names = fr_calloc((size_t)(np ? np : 1), sizeof *t->part_names);
    t->del_cols = fr_calloc((size_t)n, sizeof *t->del_cols);
    t->del_ids = fr_calloc((size_t)n, sizeof *t->del_ids);
    t->del_part_pos = fr_calloc((size_t)(np ? np : 1), sizeof *t->del_part_pos);
    fr_field *ff = fr_calloc((size_t)n, sizeof *ff);
    int rc = 0;
    if (!t->part_types || !t->part_names || !t->del_cols || !t->del_ids || !t->del_part_pos ||
        !ff) {
        rc = fr_fail(err, FR_ENOMEM, "out of memory opening table %s", t->dir);
        goto done;
    }
    for (int i = 0; i < np; i++) {
        const fr_field *f = fr_schema_field(t->schema, m->part_cols[i]);
        t->part_types[i] = f->type;
        t->part_names[i] = f->name;
    }
    t->ps = (fr_ice_part_spec){np, t->part_types, m->part_ids, t->part_names};
    /* The delete schema: the key, then the partition columns outside it, so that a delete
     * row carries the partition it applies to. */
    int nd = 0;
    for (int i = 0; i < m->nkey; i++) t->del_cols[nd++] = m->key_cols[i];
    for (int i = 0; i < np; i++) {
        int pos = -1;
        for (int j = 0; j < nd; j++)
            if (t->del_cols[j] == m->part_cols[i]) pos = j;
        if (pos < 0) {
            pos = nd;
            t->del_cols[nd++] = m->part_cols[i];
        }
        t->del_part_pos[i] = pos;
    }
    for (int i = 0; i < nd; i++) {
        ff[i] = *fr_schema_field(m->schema, t->del_cols[i]);
        t->del_ids[i] = m->field_ids[t->del_cols[i]];
    }
    if (m->nkey > 0) rc = fr_schema_new(ff, nd, 0, &t->del_schema, err);
done:
    fr_free(ff);
    return rc;
}

void fr_iceberg_close(fr_iceberg_table *t)
{
    if (!t) return;
    views_free(t);
    fr_ice_meta_free(t->meta);
    fr_free(t->dir);
    fr_free(t->meta_dir);
    fr_free(t->data_dir);
    fr_free(t->uri);
    fr_free(t);
}

static int join(const char *a, const char *b, char **out, fr_error *err)
{
    fr_buf buf;
    fr_buf_init(&buf);
    int rc = fr_buf_printf(&buf, err, "%s/%s", a, b);
    if (rc == 0) rc = fr_buf_append(&buf, "", 1, err);
    if (rc < 0) {
        fr_buf_free(&buf);
        return rc;
    }
    *out = (char *)fr_buf_steal(&buf, NULL);
    return 0;
}

/* Whether the stored table is the one spec describes; FR_EINVAL naming the difference. */
static int check_same(const fr_ice_meta *m, const fr_lake_spec *spec, const char *dir,
                      fr_error *err)
{
    int n = fr_schema_num_fields(spec->schema);
    FR_CHECK(fr_schema_num_fields(m->schema) == n, FR_EINVAL, err,
             "lake table %s has %d columns, the table's lake schema %d", dir,
             fr_schema_num_fields(m->schema), n);
    for (int i = 0; i < n; i++) {
        const fr_field *a = fr_schema_field(m->schema, i), *b = fr_schema_field(spec->schema, i);
        char ta[64], tb[64];
        fr_type_format(&a->type, true, ta, sizeof ta);
        fr_type_format(&b->type, true, tb, sizeof tb);
        FR_CHECK(strcmp(a->name, b->name) == 0 && fr_type_equal(&a->type, &b->type) &&
                     a->type.nullable == b->type.nullable,
                 FR_EINVAL, err, "lake table %s: column %d is %s %s, the table's lake schema has %s %s",
                 dir, i + 1, a->name, ta, b->name, tb);
    }
    FR_CHECK(fr_schema_equal(m->schema, spec->schema), FR_EINVAL, err,
             "lake table %s: its schema differs from the table's lake schema", dir);
    for (int i = 0; i < n; i++)
        FR_CHECK(m->field_ids[i] == spec->field_ids[i], FR_EINVAL, err,
                 "lake table %s: column %s has field id %d, not %d", dir,
                 fr_schema_field(spec->schema, i)->name, (int)m->field_ids[i],
                 (int)spec->field_ids[i]);
    bool same = m->npart == spec->npartition_cols && m->nkey == spec->nkey_cols;
    for (int i = 0; same && i < m->npart; i++) same = m->part_cols[i] == spec->partition_cols[i];
    for (int i = 0; same && i < m->nkey; i++) same = m->key_cols[i] == spec->key_cols[i];
    FR_CHECK(same, FR_EINVAL, err,
             "lake table %s: its partition or key columns differ from the table's", dir);
    return 0;
}

static int create_table(fr_iceberg_table *t, const fr_lake_spec *spec, fr_error *err)
{
    FR_TRY(fr_mkdirs(t->meta_dir, err));
    FR_TRY(fr_mkdirs(t->data_dir, err));
    char real[PATH_MAX];
    if (!realpath(t->dir, real)) return fr_fail_errno(err, errno, "realpath %s", t->dir);
    fr_buf loc;
    fr_buf_init(&loc);
    json_t *doc = NULL;
    char *text = NULL;
    int rc = 0;
    /* An absolute file URI: engines on Hadoop file systems (Spark, Trino, Flink) would take
     * a bare path relative to their default file system; file:// names the local one. */
    FR_GOTO(fr_buf_printf(&loc, err, "file://%s", real));
    FR_GOTO(fr_buf_append(&loc, "", 1, err));
    FR_GOTO(fr_ice_meta_create_json(spec, (const char *)loc.data, &doc, err));
    text = json_dumps(doc, JSON_INDENT(2));
    if (!text) {
        rc = fr_fail(err, FR_ENOMEM, "out of memory creating table %s", t->dir);
        goto fail;
    }
    rc = fr_ice_publish_metadata(t->meta_dir, 1, text, strlen(text), err);
    if (rc == FR_ESTATE) rc = 0; /* created meanwhile by another process: read theirs */
    if (rc == 0) rc = fr_ice_write_version_hint(t->meta_dir, 1, err);
fail:
    free(text);
    json_decref(doc);
    fr_buf_free(&loc);
    return rc;
}

static int base_uri(fr_iceberg_table *t, fr_error *err)
{
    char real[PATH_MAX];
    if (!realpath(t->dir, real)) return fr_fail_errno(err, errno, "realpath %s", t->dir);
    fr_buf b;
    fr_buf_init(&b);
    int rc = fr_buf_printf(&b, err, "file://%s%c", real, 0);
    if (rc < 0) {
        fr_buf_free(&b);
        return rc;
    }
    t->uri = (char *)fr_buf_steal(&b, NULL);
    return 0;
}

int fr_iceberg_open(const char *dir, const fr_lake_spec *spec, fr_iceberg_table **out,
                    fr_error *err)
{
    *out = NULL;
    fr_iceberg_table *t = fr_calloc(1, sizeof *t);
    if (!t) return fr_fail(err, FR_ENOMEM, "out of memory opening table %s", dir);
    int rc = 0;
    t->dir = fr_strdup(dir);
    if (!t->dir) {
        rc = fr_fail(err, FR_ENOMEM, "out of memory opening table %s", dir);
        goto fail;
    }
    FR_GOTO(join(dir, "metadata", &t->meta_dir, err));
    FR_GOTO(join(dir, "data", &t->data_dir, err));
    FR_GOTO(fr_ice_read_newest(t->meta_dir, &t->meta, err));
    if (!t->meta) {
        if (!spec) {
            rc = fr_fail(err, FR_ENOTFOUND, "no Iceberg table in %s (no metadata/v<N>.metadata.json)",
                         dir);
            goto fail;
        }
        FR_GOTO(create_table(t, spec, err));
        FR_GOTO(fr_ice_read_newest(t->meta_dir, &t->meta, err));
        if (!t->meta) {
            rc = fr_fail(err, FR_EIO, "table %s: the metadata just written is missing", dir);
            goto fail;
        }
    }
    /* New files are named from where the table is, which is also its location unless the
     * directory was moved or copied since it was created. */
    FR_GOTO(base_uri(t, err));
    if (spec) {
        FR_GOTO(check_same(t->meta, spec, dir, err));
        if (spec->parquet) {
            t->popts = *spec->parquet;
            t->has_popts = true;
        }
        t->target_file_bytes = spec->target_file_bytes;
    }
    if (t->target_file_bytes <= 0) t->target_file_bytes = (int64_t)512 << 20;
    t->merge_min = FR_ICE_MANIFESTS_MERGE_MIN;
    t->snapshots_keep = FR_ICE_SNAPSHOTS_KEEP;
    t->metadata_keep = FR_ICE_METADATA_KEEP;
    FR_GOTO(derive(t, err));
    *out = t;
    return 0;
fail:
    fr_iceberg_close(t);
    return rc;
}

int fr_ice_table_adopt(fr_iceberg_table *t, fr_ice_meta *m, fr_error *err)
{
    const fr_ice_meta *o = t->meta;
    if (strcmp(m->uuid, o->uuid) != 0) {
        fr_ice_meta_free(m);
        return fr_fail(err, FR_ESTATE, "table %s was replaced by another table (uuid %.40s, was "
                       "%.40s); reopen it", t->dir, m->uuid, o->uuid);
    }
    bool same = fr_schema_equal(m->schema, t->schema) && m->npart == o->npart &&
                m->nkey == o->nkey &&
                fr_schema_num_fields(m->schema) == fr_schema_num_fields(t->schema);
    for (int i = 0; same && i < fr_schema_num_fields(m->schema); i++)
        same = m->field_ids[i] == o->field_ids[i];
    for (int i = 0; same && i < m->npart; i++)
        same = m->part_cols[i] == o->part_cols[i] && m->part_ids[i] == o->part_ids[i];
    for (int i = 0; same && i < m->nkey; i++) same = m->key_cols[i] == o->key_cols[i];
    if (!same) {
        fr_ice_meta_free(m);
        return fr_fail(err, FR_EUNSUPPORTED,
                       "table %s: its schema, partition spec or key changed while open; reopen it",
                       t->dir);
    }
    /* The views point into the old metadata (partition ids): move them to the new one. */
    t->ps.field_ids = m->part_ids;
    fr_ice_meta_free(t->meta);
    t->meta = m;
    return 0;
}

int fr_iceberg_refresh(fr_iceberg_table *t, fr_error *err)
{
    fr_ice_meta *m = NULL;
    FR_TRY(fr_ice_read_newest(t->meta_dir, &m, err));
    if (!m) return fr_fail(err, FR_ENOTFOUND, "table %s: its metadata disappeared", t->dir);
    FR_TRY(fr_ice_table_adopt(t, m, err));
    t->stale = false;
    return 0;
}

int fr_ice_table_catch_up(fr_iceberg_table *t, fr_error *err)
{
    return t->stale ? fr_iceberg_refresh(t, err) : 0;
}

const fr_schema *fr_iceberg_schema(const fr_iceberg_table *t) { return t->schema; }

const fr_schema *fr_iceberg_delete_schema(const fr_iceberg_table *t) { return t->del_schema; }

int fr_iceberg_current(fr_iceberg_table *t, fr_lake_snapshot **out, fr_error *err)
{
    *out = NULL;
    FR_TRY(fr_ice_table_catch_up(t, err));
    const fr_ice_snap *s = t->meta->current_id >= 0 ? fr_ice_meta_snap(t->meta, t->meta->current_id)
                                                   : NULL;
    if (!s) return 0;
    fr_lake_snapshot *o = fr_calloc(1, sizeof *o);
    if (!o) return fr_fail(err, FR_ENOMEM, "out of memory");
    int rc = fr_ice_snap_describe(s, o, err);
    if (rc < 0) {
        fr_free(o);
        return fr_error_wrap(err, "table %s", t->dir);
    }
    *out = o;
    return 0;
}

int fr_iceberg_snapshots(fr_iceberg_table *t, fr_lake_snapshot **out, int *n, fr_error *err)
{
    *out = NULL;
    *n = 0;
    FR_TRY(fr_ice_table_catch_up(t, err));
    int ns = t->meta->nsnaps;
    if (ns == 0) return 0;
    fr_lake_snapshot *o = fr_calloc((size_t)ns, sizeof *o);
    if (!o) return fr_fail(err, FR_ENOMEM, "out of memory");
    for (int i = 0; i < ns; i++) {
        int rc = fr_ice_snap_describe(&t->meta->snaps[i], &o[i], err);
        if (rc < 0) {
            fr_lake_snapshots_free(o, i);
            return fr_error_wrap(err, "table %s", t->dir);
        }
    }
    *out = o;
    *n = ns;
    return 0;
}

int fr_ice_snap_manifests(const fr_ice_snap *s, fr_arena *arena, fr_ice_manifest **out,
                          int *n, fr_error *err)
{
    return fr_avro_load_manifest_list(s->manifest_list, arena, out, n, err);
}

int fr_ice_file_names(const fr_iceberg_table *t, const char *sub, const char *name,
                      fr_arena *arena, const char **uri, const char **path, fr_error *err)
{
    fr_buf b;
    fr_buf_init(&b);
    int rc = fr_buf_printf(&b, err, "%s/%s/%s", t->uri, sub, name);
    char *u = rc == 0 ? fr_arena_strndup(arena, (const char *)b.data, b.len) : NULL;
    fr_buf_reset(&b);
    if (rc == 0) rc = fr_buf_printf(&b, err, "%s/%s/%s", t->dir, sub, name);
    char *p = rc == 0 ? fr_arena_strndup(arena, (const char *)b.data, b.len) : NULL;
    fr_buf_free(&b);
    if (rc < 0) return rc;
    if (!u || !p) return fr_fail(err, FR_ENOMEM, "out of memory naming a file");
    *uri = u;
    *path = p;
    return 0;
}

void fr_iceberg_test_crash_after(fr_iceberg_table *t, int step) { t->crash_after = step; }

void fr_iceberg_test_merge_min(fr_iceberg_table *t, int n) { t->merge_min = n; }

void fr_iceberg_test_history(fr_iceberg_table *t, int snapshots_keep, int metadata_keep)
{
    t->snapshots_keep = snapshots_keep;
    t->metadata_keep = metadata_keep;
}

/* ---- orphans --------------------------------------------------------------------------- */

/* The base name of a local path or URI. */
static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

static int mark(fr_ice_map *keep, const char *uri, fr_error *err)
{
    int64_t *slot;
    const char *b = base_name(uri);
    return fr_ice_map_put(keep, b, strlen(b), 1, &slot, err);
}

/* Marks every file the table's snapshots reference, by base name (names are unique: they
 * hold a UUID or a snapshot id). */
static int mark_referenced(fr_iceberg_table *t, fr_ice_map *keep, fr_error *err)
{
    int rc = 0;
    fr_arena *arena = fr_arena_new(64 << 10);
    if (!arena) return fr_fail(err, FR_ENOMEM, "out of memory");
    for (int i = 0; i < t->meta->nsnaps && rc == 0; i++) {
        const fr_ice_snap *s = &t->meta->snaps[i];
        fr_ice_manifest *mans = NULL;
        int nm = 0;
        FR_GOTO(mark(keep, s->manifest_list, err));
        FR_GOTO(fr_ice_snap_manifests(s, arena, &mans, &nm, err));
        for (int j = 0; j < nm && rc == 0; j++) {
            fr_ice_file *files = NULL;
            int nf = 0;
            /* Manifests carry over from snapshot to snapshot: read each once. */
            const char *b = base_name(mans[j].path);
            if (fr_ice_map_get(keep, b, strlen(b))) continue;
            rc = mark(keep, mans[j].path, err);
            if (rc == 0)
                rc = fr_avro_load_manifest(mans[j].path, &t->ps, &mans[j], arena, &files, &nf, err);
            for (int k = 0; k < nf && rc == 0; k++) rc = mark(keep, files[k].path, err);
            fr_free(files);
        }
        fr_free(mans);
    }
fail:
    fr_arena_free(arena);
    return rc;
}

static bool is_metadata_name(const char *s)
{
    size_t n = strlen(s);
    if (strcmp(s, "version-hint.text") == 0) return true;
    return s[0] == 'v' && n > 15 && strcmp(s + n - 14, ".metadata.json") == 0;
}

/* Whether s is v<N>.metadata.json with N below oldest (beyond the metadata history). */
static bool old_version(const char *s, int64_t oldest)
{
    if (s[0] != 'v') return false;
    char num[32];
    size_t k = strlen(s) - 15;
    if (k == 0 || k >= sizeof num) return false;
    memcpy(num, s + 1, k);
    num[k] = 0;
    int64_t v;
    return fr_parse_i64(num, &v, NULL) == 0 && v < oldest;
}

static int sweep(const char *dir, const fr_ice_map *keep, bool metadata, int64_t oldest,
                 int *removed, fr_error *err)
{
    DIR *d = opendir(dir);
    if (!d) {
        if (errno == ENOENT) return 0;
        return fr_fail_errno(err, errno, "open directory %s", dir);
    }
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d))) {
        const char *s = e->d_name;
        if (strcmp(s, ".") == 0 || strcmp(s, "..") == 0) continue;
        if (metadata && is_metadata_name(s) && !old_version(s, oldest)) continue;
        if (fr_ice_map_get(keep, s, strlen(s))) continue;
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", dir, s);
        struct stat st;
        if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode)) continue;
        if (unlink(path) != 0 && errno != ENOENT) rc = fr_fail_errno(err, errno, "unlink %s", path);
        else (*removed)++;
    }
    closedir(d);
    return rc;
}

int fr_iceberg_remove_orphans(fr_iceberg_table *t, int *removed, fr_error *err)
{
    int count = 0;
    if (removed) *removed = 0;
    /* Decide from the newest metadata, not from what this handle saw last. */
    FR_TRY(fr_iceberg_refresh(t, err));
    fr_ice_map *keep = fr_ice_map_new();
    if (!keep) return fr_fail(err, FR_ENOMEM, "out of memory");
    int rc = mark_referenced(t, keep, err);
    int64_t oldest = t->meta->version - t->metadata_keep;
    if (rc == 0) rc = sweep(t->data_dir, keep, false, 0, &count, err);
    if (rc == 0) rc = sweep(t->meta_dir, keep, true, oldest, &count, err);
    fr_ice_map_free(keep);
    if (removed) *removed = count;
    if (rc < 0) return fr_error_wrap(err, "table %s: removing orphans", t->dir);
    return 0;
}
