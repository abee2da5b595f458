/* log_recover.c — bringing a log directory to a consistent state at open, and the scans of
 * batch headers that recovery, truncation and the idempotent writers' state need.
 *
 * What recovery guarantees when it returns: the segments have ascending base offsets and
 * each starts where the previous ends (offsets are dense); every segment holds whole batches
 * only, each with a valid header and consecutive offsets; every batch after the last index
 * entry that could be verified in the last segment (all batches of a segment whose index was
 * wrong, and of every later segment) has passed its CRC; both indexes of every segment name
 * batch starts only. What it drops is said in a WARN line: the segment, the byte position
 * and the number of bytes. */
#include "log/log_int.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define LOG_PATH_BYTES_MAX 4096
#define LOG_SEGMENT_NAME_DIGITS 20

/* What a walk over a segment's batches found. */
typedef struct log_scan {
    int64_t good_end;    /* byte position after the last good batch */
    int64_t next_offset; /* the offset after the last good batch */
    int64_t max_ts;      /* commit timestamp of the newest good batch */
    bool stopped;        /* a bad or torn batch starts at good_end */
    bool index_ok, time_ok;
    char why[FR_ERROR_MSG_MAX];
} log_scan;

/* Walks the batches of seg from byte 0 to file_size, checking each header (and, from byte
 * crc_from on, the whole batch with its CRC), that offsets continue, and that every index
 * entry names a batch start with the right offset (and every time entry a batch with its
 * timestamp). Records the idempotent writers' states when note_writers is set. */
static int scan_segment(fr_log *log, log_segment *seg, int64_t file_size, int64_t crc_from,
                        bool note_writers, log_scan *r, fr_error *err)
{
    memset(r, 0, sizeof *r);
    r->next_offset = seg->base;
    r->max_ts = INT64_MIN;
    r->index_ok = r->time_ok = true;
    size_t ix = 0, tx = 0;
    int64_t pos = 0;
    while (pos < file_size) {
        fr_rb_view v;
        fr_error e;
        fr_error_clear(&e);
        const uint8_t *p = seg->map + pos;
        size_t avail = (size_t)(file_size - pos);
        int rc = pos >= crc_from ? fr_rb_decode(p, avail, &v, &e)
                                 : fr_rb_parse_header(p, avail, &v, &e);
        if (rc == 0 && v.base_offset != r->next_offset) {
            snprintf(e.msg, sizeof e.msg, "batch with base offset %lld where %lld was expected",
                     (long long)v.base_offset, (long long)r->next_offset);
            rc = FR_ECORRUPT;
        }
        if (rc == 0 && v.base_offset + v.record_count - seg->base > (int64_t)UINT32_MAX) {
            snprintf(e.msg, sizeof e.msg, "more than 2^32 offsets in one segment");
            rc = FR_ECORRUPT;
        }
        if (rc < 0) {
            r->stopped = true;
            snprintf(r->why, sizeof r->why, "%s", e.msg);
            break;
        }
        uint32_t rel = (uint32_t)(v.base_offset - seg->base);
        for (; ix < seg->nindex && seg->index[ix].pos <= pos; ix++)
            if (seg->index[ix].pos < pos || seg->index[ix].rel != rel) r->index_ok = false;
        for (; tx < seg->ntimes && seg->times[tx].rel <= rel; tx++)
            if (seg->times[tx].rel < rel || seg->times[tx].ts != v.commit_timestamp)
                r->time_ok = false;
        if (note_writers && v.writer_id != FR_NO_WRITER && v.batch_sequence >= 0)
            FR_TRY(log_writer_note(log, v.writer_id, v.batch_sequence, v.base_offset, err));
        if (v.commit_timestamp > r->max_ts) r->max_ts = v.commit_timestamp;
        r->next_offset = v.base_offset + v.record_count;
        pos += v.length;
        r->good_end = pos;
    }
    /* Entries past the last good batch point at nothing. */
    if (ix < seg->nindex) r->index_ok = false;
    if (tx < seg->ntimes) r->time_ok = false;
    return FR_OK;
}

/* The byte position from which the batches of the last segment are checked with their CRC:
 * the newest offset-index entry whose batch is whole, valid and at the offset the entry
 * names. Batches before it were written before it and the index was written after them. */
static int64_t trusted_position(log_segment *seg, int64_t file_size)
{
    for (size_t i = seg->nindex; i-- > 0;) {
        int64_t pos = seg->index[i].pos;
        if (pos >= file_size || pos % 8 != 0) continue;
        fr_rb_view v;
        fr_error e;
        if (fr_rb_decode(seg->map + pos, (size_t)(file_size - pos), &v, &e) == 0 &&
            v.base_offset == seg->base + (int64_t)seg->index[i].rel)
            return pos;
    }
    return 0;
}

/* Rebuilds both indexes of seg from its (already checked) batches and rewrites the files. */
static int rebuild_indexes(fr_log *log, log_segment *seg, int64_t end, fr_error *err)
{
    seg->nindex = seg->ntimes = seg->index_written = seg->times_written = 0;
    seg->index_since = 0;
    for (int64_t pos = 0; pos < end;) {
        fr_rb_view v;
        FR_TRY(fr_rb_parse_header(seg->map + pos, (size_t)(end - pos), &v, err));
        FR_TRY(log_segment_note_batch(log, seg, pos, &v, false, err));
        pos += v.length;
    }
    seg->index_damaged = false;
    return log_segment_write_indexes(log, seg, err);
}

/* Adds the index entries of the batches after the newest entry, which the files may lack
 * (entries are written a few dozen at a time: log_segment_write_pending), and writes them. */
static int extend_indexes(fr_log *log, log_segment *seg, fr_error *err)
{
    int64_t pos = 0;
    seg->index_since = 0;
    if (seg->nindex > 0) {
        fr_rb_view v;
        pos = seg->index[seg->nindex - 1].pos;
        FR_TRY(fr_rb_parse_header(seg->map + pos, (size_t)(seg->size - pos), &v, err));
        seg->index_since = v.length;
        pos += v.length;
    }
    while (pos < seg->size) {
        fr_rb_view v;
        FR_TRY(fr_rb_parse_header(seg->map + pos, (size_t)(seg->size - pos), &v, err));
        FR_TRY(log_segment_note_batch(log, seg, pos, &v, false, err));
        pos += v.length;
    }
    log_segment_write_pending(log, seg);
    return FR_OK;
}

static int truncate_file(fr_log *log, log_segment *seg, int64_t file_size, const log_scan *r,
                         fr_error *err)
{
    FR_WARN("log %s: segment %020lld: %s at byte %lld; truncating the segment there, dropping "
            "%lld bytes",
            log->name, (long long)seg->base, r->why, (long long)r->good_end,
            (long long)(file_size - r->good_end));
    /* Not fsynced: until the next fsync of an append makes the new size durable, a crash
     * leaves the same bad tail for the next open to cut. */
    if (ftruncate(seg->log_fd, (off_t)r->good_end) != 0)
        return fr_fail_errno(err, errno, "log %s: truncate segment %020lld to %lld bytes",
                             log->name, (long long)seg->base, (long long)r->good_end);
    return FR_OK;
}

/* Drops segments [from, nsegs): their offsets no longer follow the previous segment's. */
static void drop_segments(fr_log *log, int from, const char *why)
{
    for (int i = from; i < log->nsegs; i++) {
        log_segment *seg = log->segs[i];
        FR_WARN("log %s: removing segment %020lld (%lld bytes): %s", log->name,
                (long long)seg->base, (long long)seg->size, why);
        log_segment_unlink(log, seg);
        log_segment_unref_locked(seg);
    }
    log->nsegs = from;
}

/* Recovers one segment; *truncated says whether bytes were dropped. *full is set from here
 * on once an index was wrong: every later segment is then checked batch by batch. */
static int recover_segment(fr_log *log, log_segment *seg, bool last, bool *full,
                           bool *truncated, bool *writers_dirty, fr_error *err)
{
    int64_t file_size = seg->size;
    int64_t crc_from = *full ? 0 : (last ? trusted_position(seg, file_size) : INT64_MAX);
    log_scan r;
    FR_TRY(scan_segment(log, seg, file_size, crc_from, true, &r, err));
    bool index_bad = !r.index_ok || !r.time_ok || seg->index_damaged;
    /* A problem found where the index or the segment's place said all was well: trust
     * nothing of this segment and check every batch. */
    if (crc_from > 0 && (index_bad || (r.stopped && r.good_end < crc_from))) {
        *writers_dirty = true;
        FR_TRY(scan_segment(log, seg, file_size, 0, false, &r, err));
    }
    *truncated = r.stopped;
    if (r.stopped) {
        FR_TRY(truncate_file(log, seg, file_size, &r, err));
        *writers_dirty = true;
    }
    seg->size = r.good_end;
    seg->next_offset = r.next_offset;
    seg->max_ts = r.max_ts;
    if (index_bad || r.stopped) {
        if (index_bad) {
            FR_WARN("log %s: segment %020lld: its index files do not match the log; "
                    "rebuilding them",
                    log->name, (long long)seg->base);
            *full = true;
        }
        return rebuild_indexes(log, seg, seg->size, err);
    }
    return extend_indexes(log, seg, err);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : (x > y ? 1 : 0);
}

/* Parses "<20 digits><ext>"; returns the extension or NULL. */
static const char *parse_segment_name(const char *name, int64_t *base)
{
    int64_t v = 0;
    for (int i = 0; i < LOG_SEGMENT_NAME_DIGITS; i++) {
        if (name[i] < '0' || name[i] > '9') return NULL;
        if (v > (INT64_MAX - (name[i] - '0')) / 10) return NULL;
        v = v * 10 + (name[i] - '0');
    }
    *base = v;
    return name + LOG_SEGMENT_NAME_DIGITS;
}

static int push_base(int64_t **bases, int *n, int *cap, int64_t base, fr_error *err)
{
    if (*n == *cap) {
        int ncap = *cap ? *cap * 2 : 16;
        int64_t *p = fr_realloc(*bases, (size_t)ncap * sizeof *p);
        if (!p) return fr_fail(err, FR_ENOMEM, "log: out of memory listing segments");
        *bases = p;
        *cap = ncap;
    }
    (*bases)[(*n)++] = base;
    return FR_OK;
}

/* Lists the base offsets of the .log files in the directory, removing leftovers of an
 * interrupted truncation (*.tmp) and index files whose .log file is gone. */
static int list_segments(fr_log *log, int64_t **bases, int *n, fr_error *err)
{
    DIR *d = opendir(log->dir);
    if (!d) return fr_fail_errno(err, errno, "log %s: open directory %s", log->name, log->dir);
    int cap = 0, rc = FR_OK;
    *bases = NULL;
    *n = 0;
    struct dirent *e;
    char path[LOG_PATH_BYTES_MAX];
    while (rc == FR_OK && (e = readdir(d)) != NULL) {
        int64_t base;
        const char *ext = parse_segment_name(e->d_name, &base);
        if (e->d_name[0] == '.') continue;
        size_t len = strlen(e->d_name);
        bool tmp = len > 4 && strcmp(e->d_name + len - 4, ".tmp") == 0;
        if (ext && strcmp(ext, ".log") == 0) {
            rc = push_base(bases, n, &cap, base, err);
        } else if (ext && (tmp || strcmp(ext, ".index") == 0 || strcmp(ext, ".timeindex") == 0)) {
            char logname[LOG_PATH_BYTES_MAX];
            log_segment_path(log, base, ".log", logname, sizeof logname);
            if (tmp || !fr_path_exists(logname)) {
                snprintf(path, sizeof path, "%s/%s", log->dir, e->d_name);
                FR_WARN("log %s: removing leftover file %s", log->name, path);
                unlink(path);
            }
        }
    }
    closedir(d);
    if (rc == FR_OK && *n > 1) qsort(*bases, (size_t)*n, sizeof **bases, cmp_i64);
    return rc;
}

static int open_segments(fr_log *log, fr_error *err)
{
    int64_t *bases;
    int n;
    FR_TRY(list_segments(log, &bases, &n, err));
    int rc = FR_OK;
    for (int i = 0; i < n && rc == FR_OK; i++) {
        log_segment *seg;
        rc = log_segment_open(log, bases[i], &seg, err);
        if (rc == FR_OK) {
            rc = log_push_segment(log, seg, err);
            if (rc < 0) log_segment_unref_locked(seg);
        }
    }
    fr_free(bases);
    return rc;
}

int log_recover(fr_log *log, fr_error *err)
{
    FR_TRY(open_segments(log, err));
    bool full = false, writers_dirty = false;
    for (int i = 0; i < log->nsegs; i++) {
        log_segment *seg = log->segs[i];
        if (i > 0 && seg->base != log->segs[i - 1]->next_offset) {
            char why[128];
            snprintf(why, sizeof why, "the previous segment ends at offset %lld",
                     (long long)log->segs[i - 1]->next_offset);
            drop_segments(log, i, why);
            writers_dirty = true;
            break;
        }
        bool truncated;
        FR_TRY(recover_segment(log, seg, i == log->nsegs - 1, &full, &truncated,
                               &writers_dirty, err));
        if (truncated && i + 1 < log->nsegs)
            drop_segments(log, i + 1, "an earlier segment was truncated");
    }
    if (log->nsegs == 0) {
        log_segment *seg;
        FR_TRY(log_segment_create(log, 0, &seg, err));
        int rc = log_push_segment(log, seg, err);
        if (rc < 0) {
            log_segment_unref_locked(seg);
            return rc;
        }
    }
    log_segment *active = log->segs[log->nsegs - 1];
    FR_TRY(log_segment_map(log, active, log_segment_active_map_bytes(log, active->size), err));
    log->next_offset = log->visible_offset = log->durable_offset = active->next_offset;
    log->last_ts = INT64_MIN;
    for (int i = log->nsegs; i-- > 0;)
        if (log->segs[i]->max_ts != INT64_MIN) {
            log->last_ts = log->segs[i]->max_ts;
            break;
        }
    if (writers_dirty) FR_TRY(log_rebuild_writers(log, err));
    for (int i = 0; i < log->nsegs - 1; i++) log_segment_close_files(log->segs[i]);
    return FR_OK;
}

/* ---- idempotent writers ----------------------------------------------------------------- */

static size_t writer_slot(int64_t id, size_t cap)
{
    uint64_t h = (uint64_t)id * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 32) & (cap - 1);
}

log_writer_state *log_writer_find(fr_log *log, int64_t writer_id)
{
    if (log->writers_cap == 0) return NULL;
    for (size_t i = writer_slot(writer_id, log->writers_cap);; i = (i + 1) & (log->writers_cap - 1)) {
        log_writer_state *w = &log->writers[i];
        if (w->writer_id == writer_id) return w;
        if (w->writer_id == FR_NO_WRITER) return NULL;
    }
}

static int writers_grow(fr_log *log, fr_error *err)
{
    size_t ncap = log->writers_cap ? log->writers_cap * 2 : 16;
    log_writer_state *n = fr_malloc(ncap * sizeof *n);
    if (!n) return fr_fail(err, FR_ENOMEM, "log %s: out of memory for writer states", log->name);
    for (size_t i = 0; i < ncap; i++) n[i].writer_id = FR_NO_WRITER;
    for (size_t i = 0; i < log->writers_cap; i++) {
        log_writer_state *w = &log->writers[i];
        if (w->writer_id == FR_NO_WRITER) continue;
        size_t j = writer_slot(w->writer_id, ncap);
        while (n[j].writer_id != FR_NO_WRITER) j = (j + 1) & (ncap - 1);
        n[j] = *w;
    }
    fr_free(log->writers);
    log->writers = n;
    log->writers_cap = ncap;
    return FR_OK;
}

int log_writer_note(fr_log *log, int64_t writer_id, int32_t seq, int64_t base, fr_error *err)
{
    assert(writer_id != FR_NO_WRITER);
    log_writer_state *w = log_writer_find(log, writer_id);
    if (!w) {
        if ((log->nwriters + 1) * 4 > log->writers_cap * 3) FR_TRY(writers_grow(log, err));
        size_t j = writer_slot(writer_id, log->writers_cap);
        while (log->writers[j].writer_id != FR_NO_WRITER) j = (j + 1) & (log->writers_cap - 1);
        w = &log->writers[j];
        w->writer_id = writer_id;
        log->nwriters++;
    }
    w->seq = seq;
    w->base_offset = base;
    return FR_OK;
}

int log_rebuild_writers(fr_log *log, fr_error *err)
{
    fr_free(log->writers);
    log->writers = NULL;
    log->writers_cap = log->nwriters = 0;
    for (int i = 0; i < log->nsegs; i++) {
        log_segment *seg = log->segs[i];
        for (int64_t pos = 0; pos < seg->size;) {
            fr_rb_view v;
            FR_TRY(fr_rb_parse_header(seg->map + pos, (size_t)(seg->size - pos), &v, err));
            if (v.writer_id != FR_NO_WRITER && v.batch_sequence >= 0)
                FR_TRY(log_writer_note(log, v.writer_id, v.batch_sequence, v.base_offset, err));
            pos += v.length;
        }
    }
    return FR_OK;
}
