/* engine_partition.c — the partitions of a table and the buckets in them: partition objects
 * (catalog entry, canonical values, the buckets' logs and KV stores opened on first use),
 * the table's sorted list of them, partition values (parsed, canonical text, the name rules
 * Apache Fluss applies), creation and dropping in the catalog (explicit, as rows arrive, or
 * by auto-partitioning), pruning by a filter, and the removal of files left by a crash.
 *
 * Layout: DATA_DIR/log/<table>/p<partition>/b<bucket>/ and DATA_DIR/kv/<table>/p<partition>/
 * b<bucket>/; a table without partitions keeps its buckets right under log/<table> and
 * kv/<table>. A partition is named after its values, "dt=2026-11-30/region=eu", in the
 * partition keys' order; the list is sorted by that name.
 *
 * Invariants: the list changes only under both the engine's mu and the table's parts_mu, so
 * holding either is enough to read it; each listed partition holds one reference from the
 * list; a dropped partition's directories are removed after the catalog without it is
 * durable, by whoever releases its last reference (a pinned one waits for the table). */
#include "engine/engine_int.h"

#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#define FR_PARTITION_VALUE_BYTES_MAX 200 /* Fluss's limit on a partition name part */
#define FR_TABLE_PARTITIONS_MAX 10000

/* ---- partition objects ----------------------------------------------------------------- */

void fr_tpart_retain(fr_tpart *p)
{
    atomic_fetch_add(&p->refs, 1);
}

static void tpart_close_buckets(fr_tpart *p)
{
    fr_buckets_close(p->kvs, p->logs, p->nbuckets, atomic_load(&p->dropped));
    if (p->kvs) memset(p->kvs, 0, (size_t)p->nbuckets * sizeof *p->kvs);
    if (p->logs) memset(p->logs, 0, (size_t)p->nbuckets * sizeof *p->logs);
}

static void tpart_destroy(fr_tpart *p)
{
    tpart_close_buckets(p);
    if (atomic_load(&p->dropped)) {
        const char *dirs[2] = {p->log_dir, p->kv_dir};
        for (int i = 0; i < 2; i++) {
            fr_error err = {0};
            if (dirs[i] && fr_remove_tree(dirs[i], &err) < 0)
                FR_WARN("partition %s was dropped but its files stay: %s",
                        p->info.name ? p->info.name : "?", err.msg);
        }
    }
    for (int i = 0; p->info.values && i < p->info.nvalues; i++) fr_free(p->info.values[i]);
    fr_free(p->info.values);
    fr_free(p->info.name);
    fr_free(p->keys);
    fr_free(p->log_dir);
    fr_free(p->kv_dir);
    fr_free(p->logs);
    fr_free(p->kvs);
    pthread_mutex_destroy(&p->mu);
    fr_free(p);
}

void fr_tpart_release(fr_tpart *p)
{
    if (p && atomic_fetch_sub(&p->refs, 1) == 1) tpart_destroy(p);
}

/* Appends "k1=v1/k2=v2" for the values. */
static int partition_name(const fr_table *t, char *const *values, fr_buf *out, fr_error *err)
{
    const fr_schema *s = fr_table_schema(t);
    for (int i = 0; i < t->conf.npart; i++)
        FR_TRY(fr_buf_printf(out, err, "%s%s=%s", i ? "/" : "",
                             fr_schema_field(s, t->conf.part[i])->name, values[i]));
    return fr_buf_append(out, "", 1, err);
}

static char *path_of(const char *dir, int64_t id)
{
    fr_buf b;
    fr_buf_init(&b);
    char *out = NULL;
    if (fr_buf_printf(&b, NULL, "%s/p%" PRId64 "%c", dir, id, '\0') == FR_OK)
        out = (char *)fr_buf_steal(&b, NULL);
    fr_buf_free(&b);
    return out;
}

static int tpart_fill(fr_table *t, fr_tpart *p, char *const *values, fr_error *err)
{
    int n = t->conf.npart;
    p->info.values = fr_calloc((size_t)n, sizeof(char *));
    p->keys = fr_calloc((size_t)n, sizeof *p->keys);
    p->logs = fr_calloc((size_t)p->nbuckets, sizeof *p->logs);
    p->kvs = fr_calloc((size_t)p->nbuckets, sizeof *p->kvs);
    p->log_dir = path_of(t->dir, p->info.id);
    p->kv_dir = path_of(t->kv_dir, p->info.id);
    FR_CHECK(p->info.values && p->keys && p->logs && p->kvs && p->log_dir && p->kv_dir,
             FR_ENOMEM, err, "out of memory creating a partition of %s", t->qname);
    const fr_schema *s = fr_table_schema(t);
    for (int i = 0; i < n; i++) {
        p->info.values[i] = fr_strdup(values[i]);
        p->info.nvalues = i + 1;
        FR_CHECK(p->info.values[i], FR_ENOMEM, err, "out of memory creating a partition");
        const fr_type *ty = &fr_schema_field(s, t->conf.part[i])->type;
        FR_TRY(fr_value_parse(p->info.values[i], strlen(p->info.values[i]), ty, &p->keys[i],
                              err));
    }
    fr_buf name;
    fr_buf_init(&name);
    int rc = partition_name(t, values, &name, err);
    if (rc == FR_OK) p->info.name = (char *)fr_buf_steal(&name, NULL);
    fr_buf_free(&name);
    return rc;
}

int fr_tpart_new(fr_table *t, int64_t id, char *const *values, int64_t created_ms,
                 fr_tpart **out, fr_error *err)
{
    fr_tpart *p = fr_calloc(1, sizeof *p);
    FR_CHECK(p, FR_ENOMEM, err, "out of memory creating a partition of %s", t->qname);
    atomic_init(&p->refs, 1);
    atomic_init(&p->dropped, false);
    atomic_init(&p->pinned, false);
    pthread_mutex_init(&p->mu, NULL);
    p->info.id = id;
    p->info.created_ms = created_ms;
    p->nbuckets = t->conf.nbuckets;
    int rc = tpart_fill(t, p, values, err);
    if (rc < 0) {
        tpart_destroy(p);
        return rc;
    }
    *out = p;
    return FR_OK;
}

/* ---- buckets --------------------------------------------------------------------------- */

/* Where the buckets of p (NULL: the table's own) live. */
typedef struct bucket_set {
    pthread_mutex_t *mu;
    fr_log **logs;
    fr_kv **kvs;
    const char *log_dir, *kv_dir;
    const char *part_name; /* NULL for the table's own buckets */
} bucket_set;

static int bucket_set_of(fr_table *t, fr_tpart *p, int bucket, bucket_set *s, fr_error *err)
{
    FR_CHECK(bucket >= 0 && bucket < t->conf.nbuckets, FR_ERANGE, err,
             "table %s has buckets 0 to %d, not %d", t->qname, t->conf.nbuckets - 1, bucket);
    if (p) {
        *s = (bucket_set){&p->mu, p->logs, p->kvs, p->log_dir, p->kv_dir, p->info.name};
        return FR_OK;
    }
    FR_CHECK(t->conf.npart == 0, FR_EINVAL, err,
             "table %s is partitioned: its buckets are in its partitions", t->qname);
    *s = (bucket_set){&t->mu, t->logs, t->kvs, t->dir, t->kv_dir, NULL};
    return FR_OK;
}

static void bucket_label(const fr_table *t, const bucket_set *s, int bucket, char *out,
                         size_t cap)
{
    if (s->part_name)
        snprintf(out, cap, "%s partition %s bucket %d", t->qname, s->part_name, bucket);
    else snprintf(out, cap, "%s bucket %d", t->qname, bucket);
}

static int open_log_locked(fr_table *t, const bucket_set *s, int bucket, fr_error *err)
{
    char dir[FR_ENGINE_PATH_BYTES_MAX], name[1024];
    int n = snprintf(dir, sizeof dir, "%s/b%d", s->log_dir, bucket);
    FR_CHECK(n > 0 && (size_t)n < sizeof dir, FR_EINVAL, err, "path too long: %s/b%d",
             s->log_dir, bucket);
    bucket_label(t, s, bucket, name, sizeof name);
    fr_log_options o = t->log_base;
    o.name = name;
    int rc = fr_log_open(dir, &o, &s->logs[bucket], err);
    if (rc < 0) {
        s->logs[bucket] = NULL;
        fr_error_wrap(err, "%s", name);
    }
    return rc;
}

static bool log_dir_exists(const bucket_set *s, int bucket)
{
    char dir[FR_ENGINE_PATH_BYTES_MAX];
    snprintf(dir, sizeof dir, "%s/b%d", s->log_dir, bucket);
    return fr_path_exists(dir);
}

int fr_tpart_log(fr_table *t, fr_tpart *p, int bucket, bool if_exists, fr_log **out,
                 fr_error *err)
{
    bucket_set s = {0};
    *out = NULL;
    FR_TRY(bucket_set_of(t, p, bucket, &s, err));
    int rc = FR_OK;
    pthread_mutex_lock(s.mu);
    if (!s.logs[bucket] && (!if_exists || log_dir_exists(&s, bucket)))
        rc = open_log_locked(t, &s, bucket, err);
    *out = s.logs[bucket];
    pthread_mutex_unlock(s.mu);
    return rc;
}

static int open_kv_locked(fr_table *t, const bucket_set *s, int bucket, fr_error *err)
{
    if (!s->logs[bucket]) FR_TRY(open_log_locked(t, s, bucket, err));
    char dir[FR_ENGINE_PATH_BYTES_MAX], name[1024];
    int n = snprintf(dir, sizeof dir, "%s/b%d", s->kv_dir, bucket);
    FR_CHECK(n > 0 && (size_t)n < sizeof dir, FR_EINVAL, err, "path too long: %s/b%d",
             s->kv_dir, bucket);
    FR_TRY(fr_mkdirs(s->kv_dir, err));
    bucket_label(t, s, bucket, name, sizeof name);
    fr_kv_spec spec = t->kv_spec;
    spec.name = name;
    int rc = fr_kv_open(dir, s->logs[bucket], &spec, &s->kvs[bucket], err);
    if (rc < 0) {
        s->kvs[bucket] = NULL;
        fr_error_wrap(err, "%s", name);
    }
    return rc;
}

int fr_tpart_kv(fr_table *t, fr_tpart *p, int bucket, bool if_exists, fr_kv **out,
                fr_error *err)
{
    *out = NULL;
    FR_CHECK(t->conf.npk > 0, FR_EINVAL, err, "table %s has no primary key", t->qname);
    bucket_set s = {0};
    FR_TRY(bucket_set_of(t, p, bucket, &s, err));
    int rc = FR_OK;
    pthread_mutex_lock(s.mu);
    if (!s.kvs[bucket] && (!if_exists || s.logs[bucket] || log_dir_exists(&s, bucket)))
        rc = open_kv_locked(t, &s, bucket, err);
    *out = s.kvs[bucket];
    pthread_mutex_unlock(s.mu);
    return rc;
}

/* ---- the list -------------------------------------------------------------------------- */

void fr_table_attach(fr_table *t, fr_engine_link *link)
{
    if (!link) return; /* a catalog parsed without an engine (the fuzz target) */
    atomic_fetch_add(&link->refs, 1);
    t->link = link;
}

void fr_table_parts_clear(fr_table *t)
{
    for (int i = 0; i < t->nparts; i++) fr_tpart_release(t->parts[i]);
    for (int i = 0; i < t->ngraveyard; i++) fr_tpart_release(t->graveyard[i]);
    fr_free(t->parts);
    fr_free(t->graveyard);
    t->parts = t->graveyard = NULL;
    t->nparts = t->ngraveyard = 0;
}

int fr_table_parts_snapshot(fr_table *t, fr_tpart ***out, int *count, fr_error *err)
{
    pthread_mutex_lock(&t->parts_mu);
    int n = t->nparts;
    fr_tpart **snap = fr_calloc((size_t)n + 1, sizeof *snap);
    for (int i = 0; snap && i < n; i++) {
        snap[i] = t->parts[i];
        fr_tpart_retain(snap[i]);
    }
    pthread_mutex_unlock(&t->parts_mu);
    FR_CHECK(snap, FR_ENOMEM, err, "out of memory listing the partitions of %s", t->qname);
    *out = snap;
    *count = n;
    return FR_OK;
}

void fr_tparts_release(fr_tpart **parts, int count)
{
    for (int i = 0; parts && i < count; i++) fr_tpart_release(parts[i]);
    fr_free(parts);
}

int fr_table_each_part(fr_table *t, int (*fn)(void *ctx, fr_tpart *p, fr_error *err),
                       void *ctx, fr_error *err)
{
    fr_tpart **parts = NULL;
    int n = 0;
    FR_TRY(fr_table_parts_snapshot(t, &parts, &n, err));
    int rc = FR_OK;
    for (int i = 0; i < n; i++) {
        fr_error e2 = {0};
        int r = fn(ctx, parts[i], &e2);
        if (r < 0 && rc == FR_OK) {
            rc = r;
            if (err) *err = e2;
        }
    }
    fr_tparts_release(parts, n);
    return rc;
}

/* Index of the first partition whose name is >= name (parts_mu or the engine's mu held). */
static int lower_bound(const fr_table *t, const char *name)
{
    int lo = 0, hi = t->nparts;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (strcmp(t->parts[mid]->info.name, name) < 0) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* Compares one piece of the name values make (s) with name at *at, as strcmp would;
 * advances *at while they agree. */
static int cmp_piece(const char *name, size_t *at, const char *s)
{
    for (; *s; s++, (*at)++) {
        unsigned char a = (unsigned char)name[*at], b = (unsigned char)*s;
        if (a != b) return a < b ? -1 : 1;
    }
    return 0;
}

/* strcmp(name, the name the values make), without building that name: lookups of rows
 * must not fail for want of memory. */
static int cmp_name_values(const fr_table *t, const char *name, char *const *values)
{
    const fr_schema *s = fr_table_schema(t);
    size_t at = 0;
    for (int i = 0; i < t->conf.npart; i++) {
        int c = cmp_piece(name, &at, i ? "/" : "");
        if (c == 0) c = cmp_piece(name, &at, fr_schema_field(s, t->conf.part[i])->name);
        if (c == 0) c = cmp_piece(name, &at, "=");
        if (c == 0) c = cmp_piece(name, &at, values[i]);
        if (c != 0) return c;
    }
    return name[at] ? 1 : 0;
}

fr_tpart *fr_table_find_part(fr_table *t, char *const *values)
{
    fr_tpart *found = NULL;
    pthread_mutex_lock(&t->parts_mu);
    int lo = 0, hi = t->nparts;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (cmp_name_values(t, t->parts[mid]->info.name, values) < 0) lo = mid + 1;
        else hi = mid;
    }
    if (lo < t->nparts && cmp_name_values(t, t->parts[lo]->info.name, values) == 0) {
        found = t->parts[lo];
        fr_tpart_retain(found);
    }
    pthread_mutex_unlock(&t->parts_mu);
    return found;
}

fr_tpart *fr_table_find_part_id(fr_table *t, int64_t id)
{
    fr_tpart *found = NULL;
    pthread_mutex_lock(&t->parts_mu);
    for (int i = 0; i < t->nparts && !found; i++) {
        if (t->parts[i]->info.id == id) {
            found = t->parts[i];
            fr_tpart_retain(found);
        }
    }
    pthread_mutex_unlock(&t->parts_mu);
    return found;
}

int fr_table_insert_part(fr_table *t, fr_tpart *p, fr_error *err)
{
    int rc = FR_OK;
    pthread_mutex_lock(&t->parts_mu);
    int i = lower_bound(t, p->info.name);
    if (i < t->nparts && strcmp(t->parts[i]->info.name, p->info.name) == 0) {
        rc = fr_fail(err, FR_EEXIST, "partition %s of table %s already exists", p->info.name,
                     t->qname);
    } else if (t->nparts >= FR_TABLE_PARTITIONS_MAX) {
        rc = fr_fail(err, FR_ELIMIT, "table %s has %d partitions, the limit: drop some first",
                     t->qname, t->nparts);
    } else {
        fr_tpart **parts = fr_realloc(t->parts, (size_t)(t->nparts + 1) * sizeof *parts);
        if (!parts) {
            rc = fr_fail(err, FR_ENOMEM, "out of memory adding a partition to %s", t->qname);
        } else {
            t->parts = parts;
            memmove(&parts[i + 1], &parts[i], (size_t)(t->nparts - i) * sizeof *parts);
            parts[i] = p;
            t->nparts++;
        }
    }
    pthread_mutex_unlock(&t->parts_mu);
    return rc;
}

fr_tpart *fr_table_take_part(fr_table *t, int64_t id)
{
    fr_tpart *p = NULL;
    pthread_mutex_lock(&t->parts_mu);
    for (int i = 0; i < t->nparts; i++) {
        if (t->parts[i]->info.id != id) continue;
        p = t->parts[i];
        memmove(&t->parts[i], &t->parts[i + 1], (size_t)(t->nparts - i - 1) * sizeof p);
        t->nparts--;
        break;
    }
    pthread_mutex_unlock(&t->parts_mu);
    return p;
}

/* ---- values ---------------------------------------------------------------------------- */

/* Fluss's rules for a partition value: 1 to 200 characters of [A-Za-z0-9_-], not "." or
 * "..", and, for a new partition, not starting with "__" (kept for internal use). */
static int check_value_text(const fr_table *t, const char *col, const char *s, size_t n,
                            bool creating, fr_error *err)
{
    FR_CHECK(n > 0, FR_EINVAL, err, "table %s: partition column '%s' has an empty value, "
             "which is not a partition value", t->qname, col);
    FR_CHECK(n <= FR_PARTITION_VALUE_BYTES_MAX, FR_EINVAL, err,
             "table %s: a value of %zu characters in partition column '%s' is longer than "
             "the limit of %d", t->qname, n, col, FR_PARTITION_VALUE_BYTES_MAX);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '_' || c == '-';
        FR_CHECK(ok, FR_EINVAL, err, "table %s: partition value '%.*s' of column '%s' has a "
                 "character other than ASCII letters, digits, '_' and '-'", t->qname,
                 (int)(n < 64 ? n : 64), s, col);
    }
    FR_CHECK(!creating || n < 2 || s[0] != '_' || s[1] != '_', FR_EINVAL, err,
             "table %s: partition value '%.*s' of column '%s' starts with '__', which is "
             "kept for internal partitions", t->qname, (int)(n < 64 ? n : 64), s, col);
    return FR_OK;
}

int fr_partition_value_text(const fr_table *t, int key, const fr_value *v, bool creating,
                            fr_buf *out, fr_error *err)
{
    const char *col = fr_schema_field(fr_table_schema(t), t->conf.part[key])->name;
    size_t start = out->len;
    FR_TRY(fr_value_format(v, out, err));
    FR_TRY(check_value_text(t, col, (const char *)out->data + start, out->len - start,
                            creating, err));
    return fr_buf_append(out, "", 1, err);
}

int fr_partition_value_canon(const fr_table *t, int key, const char *text, size_t len,
                             bool creating, fr_buf *out, fr_error *err)
{
    const fr_field *f = fr_schema_field(fr_table_schema(t), t->conf.part[key]);
    fr_value v;
    fr_error e2 = {0};
    if (fr_value_parse(text, len, &f->type, &v, &e2) < 0) {
        char tn[64];
        fr_type_format(&f->type, false, tn, sizeof tn);
        return fr_fail(err, FR_EINVAL, "table %s: '%.*s' is not a value of type %s for "
                       "partition column '%s': %s", t->qname, (int)(len < 64 ? len : 64), text,
                       tn, f->name, e2.msg);
    }
    return fr_partition_value_text(t, key, &v, creating, out, err);
}

bool fr_tpart_may_match(const fr_table *t, const fr_tpart *p, const fr_expr *filter)
{
    if (!filter) return true;
    int n = fr_schema_num_fields(fr_table_schema(t));
    fr_column_stats *stats = fr_calloc((size_t)n, sizeof *stats);
    if (!stats) return true; /* unsure: read it */
    for (int i = 0; i < n; i++) stats[i].null_count = -1;
    for (int k = 0; k < t->conf.npart; k++) {
        fr_column_stats *s = &stats[t->conf.part[k]];
        s->null_count = 0;
        s->has_minmax = true;
        s->min = s->max = p->keys[k];
    }
    bool may = fr_expr_may_match(filter, stats, 1);
    fr_free(stats);
    return may;
}

/* ---- catalog changes ------------------------------------------------------------------- */

int fr_engine_add_part_locked(fr_engine *e, fr_table *t, char *const *values,
                              bool if_not_exists, const char *why, fr_error *err)
{
    FR_CHECK(!atomic_load(&t->dropped), FR_ENOTFOUND, err, "table %s was dropped", t->qname);
    fr_tpart *old = fr_table_find_part(t, values);
    if (old) {
        int rc = if_not_exists ? FR_OK
                               : fr_fail(err, FR_EEXIST, "partition %s of table %s already "
                                         "exists", old->info.name, t->qname);
        fr_tpart_release(old);
        return rc;
    }
    fr_tpart *p = NULL;
    FR_TRY(fr_tpart_new(t, e->next_partition_id, values, fr_now_ms(), &p, err));
    int rc = fr_table_insert_part(t, p, err);
    if (rc < 0) {
        fr_tpart_release(p);
        return rc;
    }
    e->next_partition_id++;
    rc = fr_catalog_save(e, err);
    if (rc < 0) {
        e->next_partition_id--;
        fr_tpart_release(fr_table_take_part(t, p->info.id));
        return rc;
    }
    FR_INFO("%s partition %s (id %" PRId64 ") of table %s", why, p->info.name, p->info.id,
            t->qname);
    return FR_OK;
}

int fr_engine_drop_part_locked(fr_engine *e, fr_table *t, int64_t id, const char *why,
                               fr_error *err)
{
    fr_tpart *p = fr_table_take_part(t, id);
    FR_CHECK(p, FR_ENOTFOUND, err, "table %s has no partition with id %" PRId64, t->qname, id);
    int rc = fr_catalog_save(e, err);
    if (rc < 0) {
        fr_error ignore = {0};
        if (fr_table_insert_part(t, p, &ignore) < 0) fr_tpart_release(p);
        return rc;
    }
    FR_INFO("%s partition %s (id %" PRId64 ") of table %s", why, p->info.name, p->info.id,
            t->qname);
    atomic_store(&p->dropped, true);
    if (atomic_load(&p->pinned)) { /* its log is out there: keep it as long as the table */
        pthread_mutex_lock(&t->parts_mu);
        fr_tpart **g = fr_realloc(t->graveyard, (size_t)(t->ngraveyard + 1) * sizeof *g);
        if (g) {
            t->graveyard = g;
            g[t->ngraveyard++] = p;
            p = NULL;
        }
        pthread_mutex_unlock(&t->parts_mu);
        if (p) FR_WARN("out of memory keeping dropped partition %s of %s", p->info.name,
                       t->qname);
    }
    fr_tpart_release(p);
    return FR_OK;
}

/* Canonical values, in partition key order, from a {column, value} spec in any order. */
static int spec_values(const fr_table *t, const fr_option *spec, int nspec, bool creating,
                       fr_buf *texts, char **values, fr_error *err)
{
    int n = t->conf.npart;
    const fr_schema *s = fr_table_schema(t);
    FR_CHECK(nspec == n, FR_EINVAL, err, "table %s has %d partition key%s but %d value%s %s "
             "given", t->qname, n, n == 1 ? "" : "s", nspec, nspec == 1 ? "" : "s",
             nspec == 1 ? "was" : "were");
    size_t at[FR_PARTITION_KEYS_MAX];
    for (int k = 0; k < n; k++) {
        const char *col = fr_schema_field(s, t->conf.part[k])->name;
        int found = -1;
        for (int i = 0; i < nspec; i++) {
            int c = spec[i].key ? fr_schema_find(s, spec[i].key) : -1;
            if (c == t->conf.part[k]) {
                FR_CHECK(found < 0, FR_EINVAL, err, "table %s: partition column '%s' is given "
                         "twice", t->qname, col);
                found = i;
            }
        }
        FR_CHECK(found >= 0, FR_EINVAL, err, "table %s: no value for partition column '%s' "
                 "(the partition keys are given in full)", t->qname, col);
        FR_CHECK(spec[found].value, FR_EINVAL, err, "table %s: no value for partition column "
                 "'%s'", t->qname, col);
        at[k] = texts->len;
        FR_TRY(fr_partition_value_canon(t, k, spec[found].value, strlen(spec[found].value),
                                        creating, texts, err));
    }
    for (int k = 0; k < n; k++) values[k] = (char *)texts->data + at[k];
    return FR_OK;
}

/* The table db.name, retained, checked to be partitioned; e->mu is held. */
static int partitioned_table(fr_engine *e, const char *db, const char *name, fr_table **out,
                             fr_error *err)
{
    FR_TRY(fr_engine_get_table_locked(e, db, name, out, err));
    if ((*out)->conf.npart == 0) {
        int rc = fr_fail(err, FR_EINVAL, "table %s is not partitioned", (*out)->qname);
        fr_table_release(*out);
        *out = NULL;
        return rc;
    }
    return FR_OK;
}

int fr_engine_add_partition(fr_engine *e, const char *db, const char *table,
                            const fr_option *spec, int nspec, bool if_not_exists,
                            fr_error *err)
{
    fr_buf texts;
    fr_buf_init(&texts);
    char *values[FR_PARTITION_KEYS_MAX];
    fr_table *t = NULL;
    pthread_mutex_lock(&e->mu);
    int rc = partitioned_table(e, db, table, &t, err);
    if (rc == FR_OK) rc = spec_values(t, spec, nspec, true, &texts, values, err);
    if (rc == FR_OK) rc = fr_autop_check_new(t, values, fr_now_ms(), err);
    if (rc == FR_OK) rc = fr_engine_add_part_locked(e, t, values, if_not_exists, "created", err);
    pthread_mutex_unlock(&e->mu);
    fr_table_release(t);
    fr_buf_free(&texts);
    return rc;
}

int fr_engine_drop_partition(fr_engine *e, const char *db, const char *table,
                             const fr_option *spec, int nspec, bool if_exists, fr_error *err)
{
    fr_buf texts;
    fr_buf_init(&texts);
    char *values[FR_PARTITION_KEYS_MAX];
    fr_table *t = NULL;
    pthread_mutex_lock(&e->mu);
    int rc = partitioned_table(e, db, table, &t, err);
    if (rc == FR_OK) rc = spec_values(t, spec, nspec, false, &texts, values, err);
    fr_tpart *p = rc == FR_OK ? fr_table_find_part(t, values) : NULL;
    if (rc == FR_OK && !p) {
        fr_buf name;
        fr_buf_init(&name);
        if (!if_exists && partition_name(t, values, &name, err) == FR_OK)
            rc = fr_fail(err, FR_ENOTFOUND, "table %s has no partition %s", t->qname,
                         (const char *)name.data);
        fr_buf_free(&name);
    }
    if (p) {
        int64_t id = p->info.id;
        fr_tpart_release(p);
        rc = fr_engine_drop_part_locked(e, t, id, "dropped", err);
    }
    pthread_mutex_unlock(&e->mu);
    fr_table_release(t);
    fr_buf_free(&texts);
    return rc;
}

int fr_table_partition_for_write(fr_table *t, char *const *values, fr_tpart **out,
                                 fr_error *err)
{
    *out = fr_table_find_part(t, values);
    if (*out) return FR_OK;
    if (!t->conf.dynamic_partitions) {
        fr_buf name;
        fr_buf_init(&name);
        int rc = partition_name(t, values, &name, err);
        if (rc == FR_OK)
            rc = fr_fail(err, FR_ENOTFOUND, "table %s has no partition %s and does not create "
                         "partitions as rows arrive ('table.partition.dynamic-creation' is "
                         "false): add it with ALTER TABLE ... ADD PARTITION", t->qname,
                         (const char *)name.data);
        fr_buf_free(&name);
        return rc;
    }
    FR_TRY(fr_autop_check_new(t, values, fr_now_ms(), err));
    FR_CHECK(t->link, FR_ESTATE, err, "table %s is in no catalog", t->qname);
    int rc = FR_OK;
    pthread_mutex_lock(&t->link->mu);
    fr_engine *e = t->link->e;
    if (!e) {
        rc = fr_fail(err, FR_ESTATE, "the engine of table %s was closed", t->qname);
    } else {
        pthread_mutex_lock(&e->mu);
        rc = fr_engine_add_part_locked(e, t, values, true, "created (as rows arrived)", err);
        pthread_mutex_unlock(&e->mu);
    }
    pthread_mutex_unlock(&t->link->mu);
    FR_TRY(rc);
    *out = fr_table_find_part(t, values);
    FR_CHECK(*out, FR_ENOTFOUND, err, "table %s: a partition was dropped as it was created",
             t->qname);
    return FR_OK;
}

/* ---- listing --------------------------------------------------------------------------- */

void fr_partitions_free(fr_partition *p, int count)
{
    for (int i = 0; p && i < count; i++) {
        for (int k = 0; p[i].values && k < p[i].nvalues; k++) fr_free(p[i].values[k]);
        fr_free(p[i].values);
        fr_free(p[i].name);
    }
    fr_free(p);
}

static int copy_partition(const fr_partition *from, fr_partition *to)
{
    to->id = from->id;
    to->created_ms = from->created_ms;
    to->name = fr_strdup(from->name);
    to->values = fr_calloc((size_t)from->nvalues + 1, sizeof(char *));
    if (!to->name || !to->values) return FR_ENOMEM;
    for (int k = 0; k < from->nvalues; k++) {
        to->values[k] = fr_strdup(from->values[k]);
        to->nvalues = k + 1;
        if (!to->values[k]) return FR_ENOMEM;
    }
    return FR_OK;
}

int fr_table_list_partitions(fr_table *t, fr_partition **out, int *count, fr_error *err)
{
    fr_tpart **snap = NULL;
    int n = 0;
    FR_TRY(fr_table_parts_snapshot(t, &snap, &n, err));
    fr_partition *list = fr_calloc((size_t)n + 1, sizeof *list);
    int rc = list ? FR_OK : FR_ENOMEM;
    for (int i = 0; rc == FR_OK && i < n; i++) rc = copy_partition(&snap[i]->info, &list[i]);
    fr_tparts_release(snap, n);
    if (rc < 0) {
        fr_partitions_free(list, n);
        return fr_fail(err, FR_ENOMEM, "out of memory listing the partitions of %s", t->qname);
    }
    *out = list;
    *count = n;
    return FR_OK;
}

fr_log *fr_table_partition_log(fr_table *t, int64_t partition_id, int bucket)
{
    if (partition_id < 0) return fr_table_log(t, bucket);
    fr_tpart *p = fr_table_find_part_id(t, partition_id);
    if (!p) return NULL;
    fr_log *log = NULL;
    fr_error err = {0};
    atomic_store(&p->pinned, true);
    if (fr_tpart_log(t, p, bucket, false, &log, &err) < 0) FR_WARN("%s", err.msg);
    fr_tpart_release(p);
    return log;
}

/* ---- files left by a crash ------------------------------------------------------------- */

static void remove_orphans_in(fr_table *t, const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        int64_t id;
        fr_error err = {0};
        if (de->d_name[0] != 'p' || de->d_name[1] < '0' || de->d_name[1] > '9' ||
            fr_parse_i64(de->d_name + 1, &id, &err) < 0)
            continue;
        fr_tpart *p = fr_table_find_part_id(t, id);
        if (p) {
            fr_tpart_release(p);
            continue;
        }
        char path[FR_ENGINE_PATH_BYTES_MAX];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        FR_INFO("removing %s: files of a dropped partition of %s", path, t->qname);
        if (fr_remove_tree(path, &err) < 0) FR_WARN("%s", err.msg);
    }
    closedir(d);
}

void fr_partition_remove_orphans(fr_table *t)
{
    if (t->conf.npart == 0) return;
    remove_orphans_in(t, t->dir);
    remove_orphans_in(t, t->kv_dir);
}
