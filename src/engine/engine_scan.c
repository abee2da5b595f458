/* engine_scan.c — the read path of a table: resolving where each bucket's read starts,
 * reading each bucket's log (with the projection and filter pushed down to it) up to the
 * end it had when the scan began, and handing the batches to the caller.
 *
 * Invariants: the caller sees only non-empty batches; rows at or past a bucket's end as of
 * the scan's start are never delivered (so a scan ends even while writers keep appending);
 * max_records counts rows delivered over all buckets. */
#include "engine/engine_int.h"

#include <inttypes.h>

#define FR_SCAN_READ_BYTES (8 << 20)

typedef struct scan_state {
    fr_scan_fn fn;
    void *ctx;
    int bucket;
    int64_t end;       /* the bucket's end offset when the scan began */
    int64_t remaining; /* rows the caller still wants; -1: no limit */
    int user_rc;       /* what the caller's function returned when it stopped the scan */
    bool stop;         /* the caller stopped the scan or the limit was reached */
    bool bucket_done;  /* a row at or past end was seen */
} scan_state;

static int on_batch(void *arg, fr_batch *batch, const int64_t *offsets,
                    const uint8_t *change_types, int64_t commit_ts, fr_error *err)
{
    scan_state *s = arg;
    int64_t rows = fr_batch_num_rows(batch), n = rows;
    while (n > 0 && offsets[n - 1] >= s->end) n--; /* offsets ascend */
    if (n < rows) s->bucket_done = true;
    if (s->remaining >= 0 && n > s->remaining) n = s->remaining;
    if (n < rows && n > 0) {
        fr_batch *head = NULL;
        int rc = fr_batch_slice(batch, 0, n, &head, err);
        fr_batch_free(batch);
        if (rc < 0) {
            s->user_rc = rc;
            s->stop = true;
            return rc;
        }
        batch = head;
    }
    if (n == 0) {
        fr_batch_free(batch);
    } else {
        if (s->remaining >= 0) s->remaining -= n;
        int rc = s->fn(s->ctx, s->bucket, batch, offsets, change_types, commit_ts, err);
        if (rc != 0) {
            s->user_rc = rc;
            s->stop = true;
        }
    }
    if (s->remaining == 0) s->stop = true;
    return s->stop || s->bucket_done ? 1 : 0;
}

static int check_columns(const fr_table *t, const fr_scan_spec *spec, fr_error *err)
{
    if (!spec->columns) return FR_OK;
    int nf = fr_schema_num_fields(fr_table_schema(t));
    FR_CHECK(spec->ncolumns >= 1 && spec->ncolumns <= nf, FR_EINVAL, err,
             "table %s: a projection of %d columns; give 1 to %d", t->qname, spec->ncolumns, nf);
    for (int i = 0; i < spec->ncolumns; i++) {
        int c = spec->columns[i];
        FR_CHECK(c >= 0 && c < nf, FR_EINVAL, err, "table %s has columns 0 to %d, not %d",
                 t->qname, nf - 1, c);
        for (int j = 0; j < i; j++)
            FR_CHECK(spec->columns[j] != c, FR_EINVAL, err,
                     "table %s: column '%s' is projected twice", t->qname,
                     fr_schema_field(fr_table_schema(t), c)->name);
    }
    return FR_OK;
}

/* Where a bucket's read starts, in [start, end]. */
static int resolve_start(fr_log *log, const fr_scan_spec *spec, int64_t start, int64_t end,
                         int64_t *from, fr_error *err)
{
    int64_t at = start;
    switch (spec->start) {
    case FR_START_EARLIEST: at = start; break;
    case FR_START_LATEST: at = end; break;
    case FR_START_OFFSET: at = spec->start_value; break;
    case FR_START_TIMESTAMP: FR_TRY(fr_log_offset_for_time(log, spec->start_value, &at, err)); break;
    default: return fr_fail(err, FR_EINVAL, "unknown scan start kind %d", (int)spec->start);
    }
    *from = at < start ? start : at > end ? end : at;
    return FR_OK;
}

static int scan_bucket(fr_table *t, fr_log *log, const fr_scan_spec *spec, int64_t from,
                       scan_state *s, fr_error *err)
{
    while (from < s->end && !s->stop && !s->bucket_done) {
        fr_log_read r = {
            .from_offset = from,
            .schema = fr_table_schema(t),
            .columns = spec->columns,
            .ncolumns = spec->columns ? spec->ncolumns : 0,
            .filter = spec->filter,
            .max_bytes = FR_SCAN_READ_BYTES,
            .max_records = s->remaining,
        };
        int64_t next = from;
        int rc = fr_log_read_batches(log, &r, on_batch, s, &next, err);
        if (s->user_rc < 0) return s->user_rc;
        if (s->stop || s->bucket_done) break;
        if (rc < 0) {
            fr_error_wrap(err, "table %s, bucket %d", t->qname, s->bucket);
            return rc;
        }
        if (next <= from) break; /* nothing more to read */
        from = next;
    }
    return FR_OK;
}

/* Where each bucket of one partition (NULL: the table's own buckets) is read from and to. */
typedef struct part_plan {
    fr_tpart *part;
    fr_log **logs;
    int64_t *from, *end;
} part_plan;

static void plans_free(part_plan *plans, int n)
{
    for (int i = 0; plans && i < n; i++) {
        fr_free(plans[i].logs);
        fr_free(plans[i].from);
        fr_free(plans[i].end);
    }
    fr_free(plans);
}

static int plan_part(fr_table *t, const fr_scan_spec *spec, int lo, int hi, part_plan *pl,
                     fr_error *err)
{
    int nb = t->conf.nbuckets;
    pl->logs = fr_calloc((size_t)nb, sizeof *pl->logs);
    pl->from = fr_calloc((size_t)nb, sizeof *pl->from);
    pl->end = fr_calloc((size_t)nb, sizeof *pl->end);
    FR_CHECK(pl->logs && pl->from && pl->end, FR_ENOMEM, err,
             "out of memory starting a scan of %s", t->qname);
    for (int b = lo; b <= hi; b++) {
        FR_TRY(fr_tpart_log(t, pl->part, b, true, &pl->logs[b], err));
        if (!pl->logs[b]) continue; /* never written */
        pl->end[b] = fr_log_end_offset(pl->logs[b]);
        FR_TRY(resolve_start(pl->logs[b], spec, fr_log_start_offset(pl->logs[b]), pl->end[b],
                             &pl->from[b], err));
    }
    return FR_OK;
}

/* The partitions a scan reads, in name order, without those the filter rules out (one
 * NULL entry for a table without partitions). *parts holds the references. */
static int scan_parts(fr_table *t, const fr_scan_spec *spec, fr_tpart ***parts, int *nall,
                      part_plan **plans, int *nplans, fr_error *err)
{
    *nall = 0;
    if (t->conf.npart > 0) FR_TRY(fr_table_parts_snapshot(t, parts, nall, err));
    int n = t->conf.npart > 0 ? *nall : 1;
    *plans = fr_calloc((size_t)n + 1, sizeof **plans);
    FR_CHECK(*plans, FR_ENOMEM, err, "out of memory starting a scan of %s", t->qname);
    *nplans = 0;
    for (int i = 0; i < n; i++) {
        fr_tpart *p = t->conf.npart > 0 ? (*parts)[i] : NULL;
        if (p && !fr_tpart_may_match(t, p, spec->filter)) continue;
        (*plans)[(*nplans)++].part = p;
    }
    return FR_OK;
}

int fr_table_scan(fr_table *t, const fr_scan_spec *spec, fr_scan_fn fn, void *ctx,
                  fr_error *err)
{
    int nb = t->conf.nbuckets;
    FR_CHECK(spec->bucket >= -1 && spec->bucket < nb, FR_ERANGE, err,
             "table %s has buckets 0 to %d, not %d", t->qname, nb - 1, spec->bucket);
    FR_TRY(check_columns(t, spec, err));
    int lo = spec->bucket < 0 ? 0 : spec->bucket, hi = spec->bucket < 0 ? nb - 1 : spec->bucket;
    scan_state s = {.fn = fn, .ctx = ctx, .remaining = spec->max_records < 0 ? -1 : spec->max_records};
    fr_tpart **parts = NULL;
    part_plan *plans = NULL;
    int nall = 0, nplans = 0;
    int rc = scan_parts(t, spec, &parts, &nall, &plans, &nplans, err);
    /* Every bucket's end is fixed before any is read: the scan is of what was there. */
    for (int i = 0; rc == FR_OK && i < nplans; i++) rc = plan_part(t, spec, lo, hi, &plans[i], err);
    if (rc < 0 || s.remaining == 0) goto fail;
    for (int i = 0; i < nplans && !s.stop; i++) {
        part_plan *pl = &plans[i];
        if (pl->part && spec->on_partition) {
            int r = spec->on_partition(ctx, &pl->part->info, err);
            if (r < 0) {
                rc = r;
                goto fail;
            }
            if (r > 0) break;
        }
        for (int b = lo; b <= hi && !s.stop; b++) {
            if (!pl->logs[b] || pl->from[b] >= pl->end[b]) continue;
            s.bucket = b;
            s.end = pl->end[b];
            s.bucket_done = false;
            FR_GOTO(scan_bucket(t, pl->logs[b], spec, pl->from[b], &s, err));
        }
    }
fail:
    plans_free(plans, nplans);
    fr_tparts_release(parts, nall);
    return rc;
}
