/* log_read.c — reading a log: batches with projection and filter, raw batches, and the
 * offset for a time.
 *
 * A read walks the batches of one segment at a time through the segment's read-only
 * mapping, holding a reference on the segment (so retention may drop it meanwhile) and a
 * snapshot of what is visible (the segment's size and the log's visible end) taken under mu.
 * No lock is held while a batch is decoded or handed to the caller. The bytes read were
 * checked (CRC included) when they were appended or recovered, so only the header is checked
 * again here, which keeps a read of 2 of 20 columns from touching the other 18.
 *
 * The filter is bound to the table schema, but the batch decoded holds only the columns the
 * read needs (the projection and the filter's columns, in schema order). The simplest
 * correct way to evaluate it there is a copy of the filter tree, made once per read, whose
 * column references are renumbered to positions in that reduced batch; the types the binder
 * set stay valid because the columns are the same. */
#include "log/log_int.h"

#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

/* ---- segment cursors -------------------------------------------------------------------- */

/* What a reader may see of one segment. */
typedef struct log_cursor {
    log_segment *seg; /* referenced; NULL when offset is the visible end */
    int64_t size;     /* bytes of the segment that hold visible or written batches */
    int64_t visible;  /* offsets below this may be returned */
    int64_t pos;      /* where to start walking: an indexed batch at or before the offset */
} log_cursor;

static int cursor_open(fr_log *log, int64_t offset, log_cursor *c, fr_error *err)
{
    memset(c, 0, sizeof *c);
    pthread_mutex_lock(&log->mu);
    int64_t start = log->segs[0]->base;
    c->visible = log->visible_offset;
    if (offset < start || offset > c->visible) {
        pthread_mutex_unlock(&log->mu);
        return fr_fail(err, FR_ERANGE, "log %s: offset %lld is outside the log's %lld..%lld",
                       log->name, (long long)offset, (long long)start, (long long)c->visible);
    }
    if (offset == c->visible) {
        pthread_mutex_unlock(&log->mu);
        return FR_OK;
    }
    int lo = 0, hi = log->nsegs; /* the last segment whose base is <= offset */
    while (hi - lo > 1) {
        int mid = lo + (hi - lo) / 2;
        if (log->segs[mid]->base <= offset) lo = mid;
        else hi = mid;
    }
    c->seg = log->segs[lo];
    c->seg->refs++;
    c->size = c->seg->size;
    c->pos = log_segment_lookup(c->seg, offset);
    pthread_mutex_unlock(&log->mu);
    return FR_OK;
}

static void cursor_close(fr_log *log, log_cursor *c)
{
    if (!c->seg) return;
    pthread_mutex_lock(&log->mu);
    log_segment_unref_locked(c->seg);
    pthread_mutex_unlock(&log->mu);
    c->seg = NULL;
}

/* Reads the header of the batch at c->pos into v. Returns 1 when the walk is at the end of
 * what is visible. */
static int cursor_header(fr_log *log, const log_cursor *c, fr_rb_view *v, fr_error *err)
{
    if (c->pos >= c->size) return 1;
    int rc = fr_rb_parse_header(c->seg->map + c->pos, (size_t)(c->size - c->pos), v, err);
    if (rc < 0) {
        fr_error_wrap(err, "log %s: segment %020lld at byte %lld", log->name,
                      (long long)c->seg->base, (long long)c->pos);
        return FR_ECORRUPT;
    }
    return v->base_offset >= c->visible ? 1 : 0;
}

/* ---- projection and filter set-up ------------------------------------------------------- */

typedef struct log_reader {
    fr_log *log;
    const fr_log_read *r;
    fr_log_batch_fn fn;
    void *ctx;
    int ncols;
    int *needed; /* schema columns to decode, ascending */
    int nneeded;
    bool project_ipc;        /* nneeded < ncols: project the IPC message before decoding */
    fr_schema *proj_schema;  /* the schema of the needed columns (when project_ipc) */
    int *final_cols;         /* requested columns as positions among the needed ones */
    int nfinal;
    bool final_project;
    fr_arena *arena;
    const fr_expr *filter;   /* bound to the decoded batch's columns */
    fr_column_stats *stats;
    uint8_t *keep;
    int64_t *offsets;
    uint8_t *change_types;
    int64_t rows_cap;
    int64_t returned, bytes;
    bool delivered;
    bool stop;
} log_reader;

static int reader_columns(log_reader *rd, uint8_t *used, fr_error *err)
{
    const fr_log_read *r = rd->r;
    int n = r->columns ? r->ncolumns : rd->ncols;
    FR_CHECK(n >= 1, FR_EINVAL, err, "log read: at least one column must be read");
    rd->final_cols = fr_malloc((size_t)n * sizeof *rd->final_cols);
    FR_CHECK(rd->final_cols, FR_ENOMEM, err, "log read: out of memory");
    rd->nfinal = n;
    for (int k = 0; k < n; k++) {
        int c = r->columns ? r->columns[k] : k;
        FR_CHECK(c >= 0 && c < rd->ncols, FR_EINVAL, err,
                 "log read: column %d is outside the schema's %d columns", c, rd->ncols);
        FR_CHECK(!((used[c >> 3] >> (c & 7)) & 1), FR_EINVAL, err,
                 "log read: column %d is requested twice", c);
        used[c >> 3] |= (uint8_t)(1u << (c & 7));
        rd->final_cols[k] = c;
    }
    return FR_OK;
}

static int reader_setup(log_reader *rd, fr_error *err)
{
    const fr_log_read *r = rd->r;
    rd->ncols = fr_schema_num_fields(r->schema);
    uint8_t *used = fr_calloc((size_t)(rd->ncols + 7) / 8 + 1, 1);
    int *map = fr_malloc((size_t)rd->ncols * sizeof *map + 1);
    rd->needed = fr_malloc((size_t)rd->ncols * sizeof *rd->needed + 1);
    rd->stats = fr_calloc((size_t)rd->ncols + 1, sizeof *rd->stats);
    int rc = FR_OK;
    if (!used || !map || !rd->needed || !rd->stats) {
        rc = fr_fail(err, FR_ENOMEM, "log read: out of memory");
        goto done;
    }
    FR_GOTO(reader_columns(rd, used, err));
    if (r->filter) fr_expr_columns(r->filter, used);
    for (int c = 0; c < rd->ncols; c++) {
        map[c] = -1;
        if ((used[c >> 3] >> (c & 7)) & 1) {
            map[c] = rd->nneeded;
            rd->needed[rd->nneeded++] = c;
        }
    }
    rd->project_ipc = rd->nneeded < rd->ncols;
    rd->final_project = rd->nfinal != rd->nneeded;
    for (int k = 0; k < rd->nfinal; k++) {
        rd->final_cols[k] = map[rd->final_cols[k]];
        if (rd->final_cols[k] != k) rd->final_project = true;
    }
    rd->filter = r->filter;
    if (rd->project_ipc) {
        FR_GOTO(fr_schema_project(r->schema, rd->needed, rd->nneeded, &rd->proj_schema, err));
        if (r->filter) {
            rd->arena = fr_arena_new(4096);
            fr_expr *e = rd->arena ? fr_expr_remap_columns(rd->arena, r->filter, map,
                                                           rd->ncols)
                                   : NULL;
            if (!e) {
                rc = fr_fail(err, rd->arena ? FR_EINVAL : FR_ENOMEM,
                             "log read: cannot copy the filter (out of memory, or not bound "
                             "to the read's schema)");
                goto done;
            }
            rd->filter = e;
        }
    }
done:
fail:
    fr_free(used);
    fr_free(map);
    return rc;
}

static void reader_free(log_reader *rd)
{
    fr_free(rd->needed);
    fr_free(rd->final_cols);
    fr_free(rd->stats);
    fr_schema_free(rd->proj_schema);
    if (rd->arena) fr_arena_free(rd->arena);
    fr_free(rd->keep);
    fr_free(rd->offsets);
    fr_free(rd->change_types);
}

static int reader_reserve(log_reader *rd, int64_t rows, fr_error *err)
{
    if (rows <= rd->rows_cap) return FR_OK;
    int64_t cap = rd->rows_cap ? rd->rows_cap : 1024;
    while (cap < rows) cap *= 2;
    uint8_t *keep = fr_realloc(rd->keep, (size_t)(cap + 7) / 8);
    if (keep) rd->keep = keep;
    int64_t *offsets = fr_realloc(rd->offsets, (size_t)cap * sizeof *offsets);
    if (offsets) rd->offsets = offsets;
    uint8_t *cts = fr_realloc(rd->change_types, (size_t)cap);
    if (cts) rd->change_types = cts;
    FR_CHECK(keep && offsets && cts, FR_ENOMEM, err, "log read: out of memory");
    rd->rows_cap = cap;
    return FR_OK;
}

/* ---- one batch -------------------------------------------------------------------------- */

/* Decodes the needed columns of the batch. */
static int decode_batch(log_reader *rd, const fr_rb_view *v, fr_batch **out, fr_error *err)
{
    const fr_log_read *r = rd->r;
    size_t used;
    if (rd->project_ipc) {
        /* Only the needed columns' buffers are copied or decompressed, straight from the
         * mapped segment. */
        FR_TRY(fr_ipc_read_batch_columns(v->ipc, (size_t)v->ipc_length, r->schema, rd->needed,
                                         rd->nneeded, rd->proj_schema, out, err));
    } else {
        FR_TRY(fr_ipc_read_batch(v->ipc, (size_t)v->ipc_length, r->schema, out, &used, err));
    }
    if (fr_batch_num_rows(*out) != v->record_count) {
        int64_t rows = fr_batch_num_rows(*out);
        fr_batch_free(*out);
        *out = NULL;
        return fr_fail(err, FR_ECORRUPT, "batch at offset %lld holds %lld rows, its header %d",
                       (long long)v->base_offset, (long long)rows, (int)v->record_count);
    }
    return FR_OK;
}

/* Fills rd->keep with the rows to return: those that pass the filter, from `from` on, at
 * most the records still allowed. Returns the number kept; *last is the last kept row. */
static int select_rows(log_reader *rd, const fr_batch *b, const fr_rb_view *v, int64_t from,
                       int64_t *kept_out, int64_t *last, bool *limited, fr_error *err)
{
    int64_t rows = v->record_count;
    size_t nbytes = (size_t)(rows + 7) / 8;
    int64_t kept;
    int64_t allowed = rd->r->max_records >= 0 ? rd->r->max_records - rd->returned : INT64_MAX;
    if (!rd->filter && from <= v->base_offset && allowed >= rows) {
        /* The whole batch: no bitmap to build or walk (the caller does not filter when
         * every row is kept), and the offsets follow from the base offset. */
        for (int64_t i = 0; i < rows; i++) rd->offsets[i] = v->base_offset + i;
        *kept_out = rows;
        *last = rows - 1;
        *limited = false;
        return FR_OK;
    }
    if (rd->filter) {
        memset(rd->keep, 0, nbytes);
        FR_TRY(fr_expr_filter(rd->filter, b, rd->keep, &kept, err));
    } else {
        memset(rd->keep, 0xff, nbytes);
    }
    int64_t skip = from > v->base_offset ? from - v->base_offset : 0;
    for (int64_t i = 0; i < skip; i++) rd->keep[i >> 3] &= (uint8_t) ~(1u << (i & 7));
    kept = 0;
    *last = -1;
    *limited = false;
    for (int64_t i = skip; i < rows; i++) {
        if (!((rd->keep[i >> 3] >> (i & 7)) & 1)) continue;
        if (kept == allowed) {
            *limited = true;
            for (int64_t j = i; j < rows; j++) rd->keep[j >> 3] &= (uint8_t) ~(1u << (j & 7));
            break;
        }
        rd->offsets[kept] = v->base_offset + i;
        if (v->change_types) rd->change_types[kept] = v->change_types[i];
        kept++;
        *last = i;
    }
    *kept_out = kept;
    return FR_OK;
}

/* Reads one batch that holds offsets at or after `from`; *next is where the read goes on. */
static int read_one(log_reader *rd, const fr_rb_view *v, int64_t from, int64_t *next,
                    fr_error *err)
{
    const fr_log_read *r = rd->r;
    *next = v->base_offset + v->record_count;
    rd->bytes += v->length;
    if (r->filter && v->stats_length > 0) {
        FR_TRY(fr_rb_stats(v, r->schema, rd->stats, err));
        if (!fr_expr_may_match(r->filter, rd->stats, v->record_count)) return FR_OK;
    }
    FR_TRY(reader_reserve(rd, v->record_count, err));
    fr_batch *b = NULL, *nb = NULL;
    int64_t kept, last;
    bool limited;
    int rc;
    FR_GOTO(decode_batch(rd, v, &b, err));
    FR_GOTO(select_rows(rd, b, v, from, &kept, &last, &limited, err));
    if (kept < v->record_count) {
        FR_GOTO(fr_batch_filter(b, rd->keep, &nb, err));
        fr_batch_free(b);
        b = nb;
        nb = NULL;
    }
    if (rd->final_project) {
        FR_GOTO(fr_batch_project(b, rd->final_cols, rd->nfinal, &nb, err));
        fr_batch_free(b);
        b = nb;
        nb = NULL;
    }
    if (limited) {
        *next = v->base_offset + last + 1;
        rd->stop = true;
    }
    rd->returned += kept;
    rd->delivered = true;
    fr_batch *give = b;
    b = NULL;
    /* When every row is kept, the batch's own change-type vector (in the mapped segment,
     * which the read holds) serves as it is. */
    const uint8_t *cts = !v->change_types ? NULL
                         : kept == v->record_count ? v->change_types
                                                   : rd->change_types;
    rc = rd->fn(rd->ctx, give, rd->offsets, cts, v->commit_timestamp, err);
    if (rc < 0) {
        if (err && err->code == 0) fr_fail(err, rc, "log read: the batch callback failed");
        return rc;
    }
    if (rc > 0) rd->stop = true;
    if (r->max_records >= 0 && rd->returned >= r->max_records) rd->stop = true;
    return FR_OK;
fail:
    fr_batch_free(b);
    fr_batch_free(nb);
    return rc;
}

/* Walks one segment from the cursor; *offset advances past what was read. */
static int read_segment(log_reader *rd, log_cursor *c, int64_t *offset, fr_error *err)
{
    const fr_log_read *r = rd->r;
    int32_t schema_id = fr_schema_id(r->schema);
    for (;;) {
        fr_rb_view v;
        int rc = cursor_header(rd->log, c, &v, err);
        if (rc != 0) return rc < 0 ? rc : FR_OK;
        if (v.base_offset + v.record_count <= *offset) {
            c->pos += v.length;
            continue;
        }
        if (v.schema_id != schema_id) {
            /* The caller reads with the schema of the batches; at a change it stops here and
             * reads on with the next schema. */
            rd->stop = true;
            if (rd->delivered) return FR_OK;
            return fr_fail(err, FR_ETYPE,
                           "log %s: the batch at offset %lld has schema id %d, the read gave "
                           "schema id %d",
                           rd->log->name, (long long)v.base_offset, (int)v.schema_id,
                           (int)schema_id);
        }
        int64_t next;
        rc = read_one(rd, &v, *offset, &next, err);
        if (rc < 0) {
            fr_error_wrap(err, "log %s: batch at offset %lld", rd->log->name,
                          (long long)v.base_offset);
            return rc;
        }
        *offset = next;
        c->pos += v.length;
        if (rd->stop || (r->max_bytes > 0 && rd->bytes >= r->max_bytes)) {
            rd->stop = true;
            return FR_OK;
        }
    }
}

int fr_log_read_batches(fr_log *log, const fr_log_read *r, fr_log_batch_fn fn, void *ctx,
                        int64_t *next_offset, fr_error *err)
{
    log_reader rd = { .log = log, .r = r, .fn = fn, .ctx = ctx };
    int64_t offset = r->from_offset;
    *next_offset = offset;
    int rc = reader_setup(&rd, err);
    while (rc == FR_OK && !rd.stop && r->max_records != 0) {
        log_cursor c;
        rc = cursor_open(log, offset, &c, err);
        if (rc == FR_ERANGE && offset != r->from_offset) {
            /* Retention or truncation removed what follows what this read returned: the
             * read ends here and the next one reports the range. */
            rc = FR_OK;
            break;
        }
        if (rc < 0 || !c.seg) break;
        int64_t before = offset;
        rc = read_segment(&rd, &c, &offset, err);
        *next_offset = offset;
        cursor_close(log, &c);
        if (rc == FR_OK && offset == before && !rd.stop) {
            /* Nothing visible past `offset` in the segment that should hold it. */
            break;
        }
    }
    reader_free(&rd);
    return rc;
}

/* ---- raw reads -------------------------------------------------------------------------- */

/* Maps the segment's pages from the cursor on, up to max_bytes, with one call instead of a
 * page fault every few pages (a fault costs over ten microseconds on some virtual machines,
 * and a fetch reads megabytes); returns where they end. Best effort: a kernel without
 * MADV_POPULATE_READ (before Linux 5.14) leaves them to be faulted in as they are read. */
static int64_t cursor_populate(const log_cursor *c, int64_t max_bytes)
{
    int64_t end = c->size - c->pos > max_bytes ? c->pos + max_bytes : c->size;
#ifdef MADV_POPULATE_READ
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t from = (uintptr_t)(c->seg->map + c->pos) & ~(page - 1);
    uintptr_t to = (uintptr_t)(c->seg->map + end);
    if (to > from) (void)madvise((void *)from, to - from, MADV_POPULATE_READ);
#endif
    return end;
}

/* A scan maps the pages ahead of it in steps that double from SCAN_POPULATE_BYTES (and a
 * batch larger than the step whole): it may stop long before its max_bytes, when a
 * projection's budget is full, and one that goes far makes few calls. */
#define SCAN_POPULATE_BYTES (1 << 20)

static int64_t scan_step(int64_t *step, int64_t left)
{
    int64_t n = *step < left ? *step : left;
    if (*step < INT64_MAX / 2) *step *= 2;
    return n > 0 ? n : 1;
}

int fr_log_scan_raw(fr_log *log, int64_t from_offset, int64_t max_bytes, fr_log_raw_fn fn,
                    void *ctx, fr_error *err)
{
    int64_t offset = from_offset, total = 0;
    for (;;) {
        log_cursor c;
        FR_TRY(cursor_open(log, offset, &c, err));
        if (!c.seg) return FR_OK;
        int64_t before = offset, populated = c.pos, step = SCAN_POPULATE_BYTES;
        int rc = FR_OK;
        bool stop = false;
        for (;;) {
            if (c.pos >= populated && c.pos < c.size)
                populated = cursor_populate(&c, scan_step(&step, max_bytes - total));
            fr_rb_view v;
            rc = cursor_header(log, &c, &v, err);
            if (rc != 0) break;
            if (c.pos + v.length > populated) populated = cursor_populate(&c, v.length);
            if (v.base_offset + v.record_count > offset) {
                if (total > 0 && total + v.length > max_bytes) {
                    stop = true;
                    break;
                }
                rc = fn(ctx, c.seg->map + c.pos, &v, err);
                if (rc < 0) break;
                total += v.length;
                offset = v.base_offset + v.record_count;
                if (rc > 0) {
                    rc = FR_OK;
                    stop = true;
                    break;
                }
            }
            c.pos += v.length;
        }
        cursor_close(log, &c);
        if (rc < 0) return rc;
        if (stop || offset == before || total >= max_bytes) return FR_OK;
    }
}

static int append_raw(void *ctx, const uint8_t *batch, const fr_rb_view *v, fr_error *err)
{
    return fr_buf_append(ctx, batch, (size_t)v->length, err);
}

int fr_log_read_raw(fr_log *log, int64_t from_offset, int64_t max_bytes, fr_buf *out,
                    fr_error *err)
{
    return fr_log_scan_raw(log, from_offset, max_bytes, append_raw, out, err);
}

/* ---- offsets by time -------------------------------------------------------------------- */

int fr_log_offset_for_time(fr_log *log, int64_t ts_ms, int64_t *offset, fr_error *err)
{
    log_cursor c = { 0 };
    pthread_mutex_lock(&log->mu);
    c.visible = log->visible_offset;
    *offset = c.visible;
    /* Commit timestamps never decrease, so the first segment whose newest batch is recent
     * enough holds the answer, after its last time-index entry older than ts_ms. */
    for (int i = 0; i < log->nsegs; i++) {
        log_segment *seg = log->segs[i];
        if (seg->max_ts == INT64_MIN || seg->max_ts < ts_ms) continue;
        c.seg = seg;
        seg->refs++;
        c.size = seg->size;
        c.pos = log_segment_lookup(seg, seg->base + log_segment_time_lookup(seg, ts_ms));
        break;
    }
    pthread_mutex_unlock(&log->mu);
    if (!c.seg) return FR_OK;
    int rc;
    for (;;) {
        fr_rb_view v;
        rc = cursor_header(log, &c, &v, err);
        if (rc != 0) break;
        if (v.commit_timestamp >= ts_ms) {
            *offset = v.base_offset;
            break;
        }
        c.pos += v.length;
    }
    cursor_close(log, &c);
    return rc < 0 ? rc : FR_OK;
}
