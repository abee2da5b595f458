/* lake_parquet_read.c — the Parquet reader (lake.h): footer, schema mapping, row-group
 * statistics, and reading the chosen columns of a row group into one batch.
 *
 * Invariants: the footer is checked (magic at both ends, its length against the file and
 * FR_PARQUET_FOOTER_BYTES_MAX) and decoded once at open; the decoded metadata and the
 * statistics values point into the footer bytes the reader keeps. Every column chunk's byte
 * range is checked against the file before it is read, and only the chunks of the chosen
 * columns are read (pread, or pointers into the caller's memory). Pages are decoded in
 * lake_parquet_page.c. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lake/lake_parquet_page.h"
#include "lake/lake_thrift.h"

struct fr_parquet_reader {
    char *path;            /* for messages: the file's path or "<memory>" */
    int fd;                /* -1 over memory */
    const uint8_t *mem;    /* the whole file, when opened over memory */
    int64_t file_len;
    int64_t data_end;      /* where the footer starts: chunks must end before it */
    uint8_t *footer;       /* owned when read from a file */
    fr_arena *arena;
    pq_file_meta meta;
    fr_schema *schema;
    pq_colr *cols;
    int ncols;
    fr_buf chunk;          /* chunk bytes read from a file */
    pq_scratch scratch;
};

/* ---- schema ------------------------------------------------------------------------------ */

static int build_schema(fr_parquet_reader *r, fr_error *err)
{
    const pq_file_meta *m = &r->meta;
    FR_CHECK(m->nschema >= 1, FR_ECORRUPT, err, "%s: empty Parquet schema", r->path);
    const pq_schema_elem *root = &m->schema[0];
    for (int32_t i = 1; i < m->nschema; i++) {
        const pq_schema_elem *e = &m->schema[i];
        if (e->num_children > 0 || e->type < 0)
            return fr_fail(err, FR_EUNSUPPORTED, "%s: Parquet column %.*s is nested (a group); "
                           "firth reads flat files only", r->path,
                           (int)(e->name_len > 200 ? 200 : e->name_len),
                           (const char *)e->name);
    }
    FR_CHECK(root->num_children == m->nschema - 1, FR_ECORRUPT, err,
             "%s: the Parquet schema root has %d children but %d elements follow", r->path,
             root->num_children, m->nschema - 1);
    int n = m->nschema - 1;
    FR_CHECK(n >= 1 && n <= FR_SCHEMA_COLUMNS_MAX, FR_EUNSUPPORTED, err,
             "%s: %d columns (firth reads 1 to %d)", r->path, n, FR_SCHEMA_COLUMNS_MAX);
    fr_field *fields = fr_calloc((size_t)n, sizeof *fields);
    r->cols = fr_calloc((size_t)n, sizeof *r->cols);
    if (!fields || !r->cols) {
        fr_free(fields);
        return fr_fail(err, FR_ENOMEM, "out of memory");
    }
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        const pq_schema_elem *e = &m->schema[i + 1];
        if (e->name_len == 0 || e->name_len > FR_NAME_BYTES_MAX || memchr(e->name, 0, e->name_len)) {
            rc = fr_fail(err, FR_EUNSUPPORTED, "%s: Parquet column %d has a name firth cannot use",
                         r->path, i);
            break;
        }
        fields[i].name = fr_arena_strndup(r->arena, (const char *)e->name, e->name_len);
        if (!fields[i].name) {
            rc = fr_fail(err, FR_ENOMEM, "out of memory");
            break;
        }
        rc = pq_type_from_elem(e, fields[i].name, &fields[i].type, err);
        if (rc == 0) pq_colr_init(&r->cols[i], e, &fields[i].type);
    }
    if (rc == 0) {
        rc = fr_schema_new(fields, n, 0, &r->schema, err);
        if (rc == FR_EINVAL) { /* e.g. names equal but for case */
            rc = FR_EUNSUPPORTED;
            if (err) err->code = rc;
        }
        if (rc < 0) fr_error_wrap(err, "%s: Parquet schema", r->path);
    }
    fr_free(fields);
    r->ncols = n;
    return rc;
}

/* Checks the row groups against the schema and the file. */
static int check_row_groups(fr_parquet_reader *r, fr_error *err)
{
    int64_t total = 0;
    for (int32_t g = 0; g < r->meta.nrgs; g++) {
        const pq_row_group *rg = &r->meta.rgs[g];
        FR_CHECK(rg->ncols == r->ncols, FR_ECORRUPT, err, "%s: row group %d has %d columns, the schema %d",
                 r->path, g, rg->ncols, r->ncols);
        FR_CHECK(rg->num_rows >= 0 && rg->num_rows <= INT64_MAX - total, FR_ECORRUPT, err,
                 "%s: row group %d has a bad row count", r->path, g);
        total += rg->num_rows;
        for (int i = 0; i < r->ncols; i++) {
            const pq_chunk *c = &rg->cols[i];
            FR_CHECK(c->has_meta, FR_EUNSUPPORTED, err,
                     "%s: row group %d, column %s: no column metadata (encrypted or external?)", r->path, g,
                     fr_schema_field(r->schema, i)->name);
            FR_CHECK(c->type == r->cols[i].physical, FR_ECORRUPT, err,
                     "%s: row group %d, column %s: physical type %d differs from the schema's",
                     r->path, g, fr_schema_field(r->schema, i)->name, c->type);
            FR_CHECK(c->num_values == rg->num_rows, FR_ECORRUPT, err,
                     "%s: row group %d, column %s: %lld values for %lld rows", r->path, g,
                     fr_schema_field(r->schema, i)->name, (long long)c->num_values, (long long)rg->num_rows);
        }
    }
    FR_CHECK(total == r->meta.num_rows, FR_ECORRUPT, err,
             "%s: the row groups hold %lld rows, the footer says %lld", r->path, (long long)total,
             (long long)r->meta.num_rows);
    return 0;
}

/* ---- open -------------------------------------------------------------------------------- */

static int open_common(fr_parquet_reader *r, const uint8_t *footer, uint32_t flen, fr_error *err)
{
    r->data_end = r->file_len - 8 - (int64_t)flen;
    r->arena = fr_arena_new(16384);
    if (!r->arena) return fr_fail(err, FR_ENOMEM, "out of memory");
    FR_TRY(pq_meta_decode(footer, flen, r->arena, &r->meta, r->path, err));
    FR_CHECK(!r->meta.encrypted, FR_EUNSUPPORTED, err,
             "%s: encrypted Parquet files are not supported", r->path);
    FR_TRY(build_schema(r, err));
    return check_row_groups(r, err);
}

/* Checks the tail (footer length, magic) of a file of len bytes. */
static int check_tail(const char *path, const uint8_t *head, const uint8_t *tail, int64_t len,
                      uint32_t *flen, fr_error *err)
{
    FR_CHECK(memcmp(tail + 4, "PARE", 4) != 0, FR_EUNSUPPORTED, err,
             "%s: encrypted Parquet files are not supported", path);
    FR_CHECK(memcmp(head, PQ_MAGIC, 4) == 0 && memcmp(tail + 4, PQ_MAGIC, 4) == 0, FR_ECORRUPT, err,
             "%s: not a Parquet file (no PAR1 magic at both ends)", path);
    *flen = fr_get_u32le(tail);
    FR_CHECK(*flen <= FR_PARQUET_FOOTER_BYTES_MAX, FR_ECORRUPT, err,
             "%s: footer of %u bytes exceeds the %d-byte limit", path, *flen, FR_PARQUET_FOOTER_BYTES_MAX);
    FR_CHECK((int64_t)*flen + 12 <= len, FR_ECORRUPT, err,
             "%s: footer of %u bytes does not fit a file of %lld bytes", path, *flen, (long long)len);
    return 0;
}

int fr_parquet_open_mem(const uint8_t *p, size_t n, fr_parquet_reader **out, fr_error *err)
{
    FR_CHECK(n >= 12, FR_ECORRUPT, err, "<memory>: %zu bytes are too short for a Parquet file", n);
    fr_parquet_reader *r = fr_calloc(1, sizeof *r);
    if (!r) return fr_fail(err, FR_ENOMEM, "out of memory");
    r->fd = -1;
    r->mem = p;
    r->file_len = (int64_t)n;
    r->path = fr_strdup("<memory>");
    int rc = 0;
    uint32_t flen;
    if (!r->path) {
        rc = fr_fail(err, FR_ENOMEM, "out of memory");
        goto fail;
    }
    FR_GOTO(check_tail(r->path, p, p + n - 8, (int64_t)n, &flen, err));
    FR_GOTO(open_common(r, p + n - 8 - flen, flen, err));
    *out = r;
    return 0;
fail:
    fr_parquet_close(r);
    return rc;
}

static int pread_all(int fd, void *buf, size_t n, int64_t off, const char *path, fr_error *err)
{
    uint8_t *b = buf;
    while (n > 0) {
        ssize_t k = pread(fd, b, n, (off_t)off);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) return fr_fail_errno(err, errno, "read %s", path);
        if (k == 0)
            return fr_fail(err, FR_ECORRUPT, "%s: file shorter than expected (read at %lld)", path,
                           (long long)off);
        b += k;
        n -= (size_t)k;
        off += k;
    }
    return 0;
}

int fr_parquet_open(const char *path, fr_parquet_reader **out, fr_error *err)
{
    fr_parquet_reader *r = fr_calloc(1, sizeof *r);
    if (!r) return fr_fail(err, FR_ENOMEM, "out of memory");
    int rc = 0;
    r->fd = open(path, O_RDONLY | O_CLOEXEC);
    r->path = fr_strdup(path);
    if (r->fd < 0) {
        rc = fr_fail_errno(err, errno, "open %s", path);
        goto fail;
    }
    if (!r->path) {
        rc = fr_fail(err, FR_ENOMEM, "out of memory");
        goto fail;
    }
    struct stat st;
    if (fstat(r->fd, &st) < 0) {
        rc = fr_fail_errno(err, errno, "stat %s", path);
        goto fail;
    }
    r->file_len = st.st_size;
    if (r->file_len < 12) {
        rc = fr_fail(err, FR_ECORRUPT, "%s: %lld bytes are too short for a Parquet file", path,
                     (long long)r->file_len);
        goto fail;
    }
    uint8_t head[4], tail[8];
    FR_GOTO(pread_all(r->fd, head, 4, 0, path, err));
    FR_GOTO(pread_all(r->fd, tail, 8, r->file_len - 8, path, err));
    uint32_t flen;
    FR_GOTO(check_tail(path, head, tail, r->file_len, &flen, err));
    r->footer = fr_malloc(flen ? flen : 1);
    if (!r->footer) {
        rc = fr_fail(err, FR_ENOMEM, "out of memory reading a footer of %u bytes", flen);
        goto fail;
    }
    FR_GOTO(pread_all(r->fd, r->footer, flen, r->file_len - 8 - flen, path, err));
    FR_GOTO(open_common(r, r->footer, flen, err));
    *out = r;
    return 0;
fail:
    fr_parquet_close(r);
    return rc;
}

void fr_parquet_close(fr_parquet_reader *r)
{
    if (!r) return;
    if (r->fd >= 0) close(r->fd);
    fr_schema_free(r->schema);
    fr_free(r->cols);
    fr_arena_free(r->arena);
    fr_free(r->footer);
    fr_buf_free(&r->chunk);
    pq_scratch_free(&r->scratch);
    fr_free(r->path);
    fr_free(r);
}

const fr_schema *fr_parquet_schema(const fr_parquet_reader *r) { return r->schema; }

int32_t fr_parquet_field_id(const fr_parquet_reader *r, int col)
{
    return col >= 0 && col < r->ncols ? r->cols[col].field_id : -1;
}

int64_t fr_parquet_num_rows(const fr_parquet_reader *r) { return r->meta.num_rows; }
int fr_parquet_num_row_groups(const fr_parquet_reader *r) { return r->meta.nrgs; }

int64_t fr_parquet_row_group_rows(const fr_parquet_reader *r, int rg)
{
    return rg >= 0 && rg < r->meta.nrgs ? r->meta.rgs[rg].num_rows : -1;
}

/* ---- statistics -------------------------------------------------------------------------- */

/* Decodes one PLAIN statistics value of column c; false when it does not fit the type. */
static bool stat_value(const pq_colr *c, const uint8_t *p, size_t n, fr_value *out)
{
    fr_type t = c->type;
    switch (c->physical) {
    case PQ_BOOLEAN:
        if (n < 1) return false;
        *out = fr_value_bool(t, p[0] & 1);
        return true;
    case PQ_INT32:
        if (n != 4) return false;
        if (t.id == FR_T_DECIMAL) *out = fr_value_decimal(t, (int32_t)fr_get_u32le(p));
        else *out = fr_value_int(t, (int32_t)fr_get_u32le(p));
        return true;
    case PQ_INT64:
        if (n != 8) return false;
        if (t.id == FR_T_DECIMAL) *out = fr_value_decimal(t, (int64_t)fr_get_u64le(p));
        else *out = fr_value_int(t, (int64_t)fr_get_u64le(p));
        return true;
    case PQ_FLOAT: {
        if (n != 4) return false;
        float f;
        memcpy(&f, p, 4);
        if (isnan(f)) return false;
        *out = fr_value_double(t, f);
        return true;
    }
    case PQ_DOUBLE: {
        if (n != 8) return false;
        double d;
        memcpy(&d, p, 8);
        if (isnan(d)) return false;
        *out = fr_value_double(t, d);
        return true;
    }
    case PQ_FLBA:
        if (t.id == FR_T_DECIMAL) {
            if (n != (size_t)c->type_length || n == 0 || n > 16) return false;
            *out = fr_value_decimal(t, pq_be_to_i128(p, n));
            return true;
        }
        *out = fr_value_str(t, p, n);
        return true;
    default:
        *out = fr_value_str(t, p, n);
        return true;
    }
}

int fr_parquet_row_group_stats(const fr_parquet_reader *r, int rg, fr_column_stats *stats,
                               fr_error *err)
{
    FR_CHECK(rg >= 0 && rg < r->meta.nrgs, FR_ERANGE, err, "%s: no row group %d", r->path, rg);
    for (int i = 0; i < r->ncols; i++) {
        const pq_colr *c = &r->cols[i];
        const pq_stats *s = &r->meta.rgs[rg].cols[i].stats;
        fr_column_stats *o = &stats[i];
        memset(o, 0, sizeof *o);
        o->null_count = s->null_count;
        o->has_minmax = false;
        /* The deprecated min/max were compared as signed bytes by old writers: they are
         * trusted only where that order is the type's (numbers, dates and times). */
        bool trusted = !s->deprecated || c->physical == PQ_INT32 || c->physical == PQ_INT64 ||
                       c->physical == PQ_FLOAT || c->physical == PQ_DOUBLE || c->physical == PQ_BOOLEAN;
        if (s->has_min && s->has_max && trusted && stat_value(c, s->min, s->min_len, &o->min) &&
            stat_value(c, s->max, s->max_len, &o->max))
            o->has_minmax = true;
        if (!o->has_minmax) o->min = o->max = fr_value_null(c->type);
    }
    return 0;
}

/* ---- reading row groups ------------------------------------------------------------------ */

/* The byte range of a column chunk, checked against the file. */
static int chunk_range(const fr_parquet_reader *r, int rg, int col, int64_t *start, int64_t *len,
                       fr_error *err)
{
    const pq_chunk *c = &r->meta.rgs[rg].cols[col];
    int64_t s = c->data_page_offset;
    /* Some writers record a dictionary offset of 0 for chunks without one. */
    if (c->dictionary_page_offset >= 4 && c->dictionary_page_offset < s) s = c->dictionary_page_offset;
    int64_t n = c->total_compressed;
    FR_CHECK(s >= 4 && n > 0 && s < r->data_end && n <= r->data_end - s, FR_ECORRUPT, err,
             "%s: row group %d, column %s: chunk at %lld of %lld bytes lies outside the data",
             r->path, rg, fr_schema_field(r->schema, col)->name, (long long)s, (long long)n);
    *start = s;
    *len = n;
    return 0;
}

int fr_parquet_read_row_group(fr_parquet_reader *r, int rg, const int *cols, int ncols,
                              fr_batch **out, fr_error *err)
{
    FR_CHECK(rg >= 0 && rg < r->meta.nrgs, FR_ERANGE, err, "%s: no row group %d", r->path, rg);
    int64_t rows = r->meta.rgs[rg].num_rows;
    FR_CHECK(rows <= FR_BATCH_ROWS_MAX, FR_ELIMIT, err,
             "%s: row group %d has %lld rows, more than a batch holds (%d)", r->path, rg,
             (long long)rows, FR_BATCH_ROWS_MAX);
    for (int k = 0; k < ncols; k++)
        FR_CHECK(cols[k] >= 0 && cols[k] < r->ncols, FR_EINVAL, err, "%s: no column %d", r->path, cols[k]);
    fr_schema *ps = NULL;
    FR_TRY(fr_schema_project(r->schema, cols, ncols, &ps, err));
    uint8_t **bufs = fr_calloc((size_t)(3 * ncols + 1), sizeof *bufs);
    int64_t *nulls = fr_calloc((size_t)ncols + 1, sizeof *nulls);
    int rc = 0;
    if (!bufs || !nulls) {
        rc = fr_fail(err, FR_ENOMEM, "out of memory");
        goto fail;
    }
    for (int k = 0; k < ncols; k++) {
        int col = cols[k];
        int64_t start = 0, len = 0;
        FR_GOTO(chunk_range(r, rg, col, &start, &len, err));
        const uint8_t *bytes;
        if (r->mem) {
            bytes = r->mem + start;
        } else {
            fr_buf_reset(&r->chunk);
            FR_GOTO(fr_buf_reserve(&r->chunk, (size_t)len, err));
            FR_GOTO(pread_all(r->fd, r->chunk.data, (size_t)len, start, r->path, err));
            bytes = r->chunk.data;
        }
        const pq_chunk *c = &r->meta.rgs[rg].cols[col];
        /* The chunk's uncompressed size bounds its PLAIN values; dictionary pages expand. */
        r->scratch.data_hint = c->total_uncompressed > 0 ? (size_t)c->total_uncompressed : 0;
        rc = pq_read_chunk(&r->cols[col], c->codec, bytes, (size_t)len, rows, &r->scratch, &bufs[3 * k],
                           &nulls[k], err);
        if (rc < 0) {
            fr_error_wrap(err, "%s: row group %d, column %s", r->path, rg,
                          fr_schema_field(r->schema, col)->name);
            goto fail;
        }
    }
    rc = fr_batch_from_buffers(ps, rows, bufs, nulls, out, err);
    fr_free(bufs);
    bufs = NULL;
    if (rc < 0) goto fail;
    fr_free(nulls);
    fr_schema_free(ps);
    return 0;
fail:
    if (bufs)
        for (int i = 0; i < 3 * ncols; i++) fr_free(bufs[i]);
    fr_free(bufs);
    fr_free(nulls);
    fr_schema_free(ps);
    return rc;
}
