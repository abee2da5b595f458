/* log_segment.c — one segment of a log: its three files (<base>.log, .index, .timeindex),
 * the read-only mapping of the .log file that readers use, and the offset and time indexes
 * kept in memory and appended to their files.
 *
 * Invariants: the mapping covers every byte a reader may be told about (map_len >= size);
 * the in-memory index entries are sorted by relative offset and by position and each names
 * the start of a batch; the time entries are sorted by relative offset with non-decreasing
 * timestamps. The index files are a cache of the in-memory entries: they are checked at
 * open and rebuilt when they do not match, so a failed write to them is only a warning.
 * They trail the entries by up to LOG_INDEX_WRITE_ENTRIES (written together, not two small
 * writes per append); sealing and closing write the rest, recovery adds what a crash lost. */
#include "log/log_int.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define LOG_PATH_BYTES_MAX 4096

void log_segment_path(const fr_log *log, int64_t base, const char *ext, char *out, size_t cap)
{
    snprintf(out, cap, "%s/%020lld%s", log->dir, (long long)base, ext);
}

static log_segment *seg_alloc(int64_t base)
{
    log_segment *seg = fr_calloc(1, sizeof *seg);
    if (!seg) return NULL;
    seg->base = base;
    seg->next_offset = base;
    seg->max_ts = INT64_MIN;
    seg->log_fd = seg->index_fd = seg->time_fd = -1;
    seg->refs = 1;
    return seg;
}

void log_segment_close_files(log_segment *seg)
{
    if (seg->log_fd >= 0) close(seg->log_fd);
    if (seg->index_fd >= 0) close(seg->index_fd);
    if (seg->time_fd >= 0) close(seg->time_fd);
    seg->log_fd = seg->index_fd = seg->time_fd = -1;
}

static void seg_free(log_segment *seg)
{
    if (seg->map) munmap((void *)seg->map, seg->map_len);
    log_segment_close_files(seg);
    fr_free(seg->index);
    fr_free(seg->times);
    fr_free(seg);
}

void log_segment_unref_locked(log_segment *seg)
{
    assert(seg->refs > 0);
    if (--seg->refs == 0) seg_free(seg);
}

void log_segment_unlink(fr_log *log, log_segment *seg)
{
    static const char *const exts[] = { ".log", ".index", ".timeindex" };
    char path[LOG_PATH_BYTES_MAX];
    for (size_t i = 0; i < sizeof exts / sizeof exts[0]; i++) {
        log_segment_path(log, seg->base, exts[i], path, sizeof path);
        if (unlink(path) != 0 && errno != ENOENT)
            FR_WARN("log %s: cannot remove %s: %s", log->name, path, strerror(errno));
    }
}

static int seg_open_file(const fr_log *log, int64_t base, const char *ext, int flags, int *fd,
                         fr_error *err)
{
    char path[LOG_PATH_BYTES_MAX];
    log_segment_path(log, base, ext, path, sizeof path);
    *fd = open(path, O_RDWR | O_CLOEXEC | flags, 0644);
    if (*fd < 0) return fr_fail_errno(err, errno, "log %s: open %s", log->name, path);
    return FR_OK;
}

int log_segment_map(fr_log *log, log_segment *seg, int64_t need, fr_error *err)
{
    if (seg->map && seg->map_len >= (size_t)need) return FR_OK;
    long page = sysconf(_SC_PAGESIZE);
    size_t len = ((size_t)need + (size_t)page - 1) & ~((size_t)page - 1);
    if (len == 0) len = (size_t)page;
    void *m = mmap(NULL, len, PROT_READ, MAP_SHARED, seg->log_fd, 0);
    if (m == MAP_FAILED)
        return fr_fail_errno(err, errno, "log %s: mmap of segment %020lld (%zu bytes)",
                             log->name, (long long)seg->base, len);
    if (seg->map) munmap((void *)seg->map, seg->map_len);
    seg->map = m;
    seg->map_len = len;
    return FR_OK;
}

/* The mapping an active segment needs: room for everything it may grow to before it rolls
 * (a non-empty segment rolls before it would pass segment_bytes; one batch is at most
 * FR_RB_BYTES_MAX). Pages past the end of the file are never touched. */
int64_t log_segment_active_map_bytes(const fr_log *log, int64_t size)
{
    int64_t s = size > log->opts.segment_bytes ? size : log->opts.segment_bytes;
    return s + FR_RB_BYTES_MAX;
}

int log_segment_create(fr_log *log, int64_t base, log_segment **out, fr_error *err)
{
    log_segment *seg = seg_alloc(base);
    if (!seg) return fr_fail(err, FR_ENOMEM, "log %s: out of memory", log->name);
    int rc;
    FR_GOTO(seg_open_file(log, base, ".log", O_CREAT | O_TRUNC, &seg->log_fd, err));
    FR_GOTO(seg_open_file(log, base, ".index", O_CREAT | O_TRUNC, &seg->index_fd, err));
    FR_GOTO(seg_open_file(log, base, ".timeindex", O_CREAT | O_TRUNC, &seg->time_fd, err));
    FR_GOTO(log_segment_map(log, seg, log_segment_active_map_bytes(log, 0), err));
    /* The new names must survive a crash before any batch in them is acknowledged. */
    FR_GOTO(fr_fsync_dir(log->dir, err));
    *out = seg;
    return FR_OK;
fail:
    seg_free(seg);
    return rc;
}

/* Reads a whole index file into memory; *torn is set when its size is not a whole number of
 * entries (the trailing partial entry is ignored). */
static int seg_read_file(const fr_log *log, int fd, size_t entry_bytes, int64_t log_size,
                         uint8_t **data, size_t *count, bool *torn, fr_error *err)
{
    struct stat st;
    if (fstat(fd, &st) != 0) return fr_fail_errno(err, errno, "log %s: fstat index", log->name);
    *data = NULL;
    *count = 0;
    *torn = st.st_size % (off_t)entry_bytes != 0;
    size_t n = (size_t)st.st_size / entry_bytes;
    /* An index never needs more than one entry per 8 bytes of log: more is damage. */
    if (n > (size_t)(log_size / 8) + 1) {
        *torn = true;
        return FR_OK;
    }
    if (n == 0) return FR_OK;
    uint8_t *buf = fr_malloc(n * entry_bytes);
    if (!buf) return fr_fail(err, FR_ENOMEM, "log %s: out of memory", log->name);
    size_t got = 0;
    while (got < n * entry_bytes) {
        ssize_t r = pread(fd, buf + got, n * entry_bytes - got, (off_t)got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            int e = r < 0 ? errno : EIO;
            fr_free(buf);
            return fr_fail_errno(err, e, "log %s: read index", log->name);
        }
        got += (size_t)r;
    }
    *data = buf;
    *count = n;
    return FR_OK;
}

static int seg_reserve(void **arr, size_t *cap, size_t need, size_t elem, fr_error *err)
{
    if (need <= *cap) return FR_OK;
    size_t ncap = *cap ? *cap * 2 : 64;
    while (ncap < need) ncap *= 2;
    void *p = fr_realloc(*arr, ncap * elem);
    if (!p) return fr_fail(err, FR_ENOMEM, "log: out of memory for an index");
    *arr = p;
    *cap = ncap;
    return FR_OK;
}

/* Loads both index files into memory as they are; recovery checks them against the log. */
static int seg_load_indexes(fr_log *log, log_segment *seg, int64_t log_size, bool *index_torn,
                            bool *time_torn, fr_error *err)
{
    uint8_t *data;
    size_t n;
    FR_TRY(seg_read_file(log, seg->index_fd, LOG_INDEX_ENTRY_BYTES, log_size, &data, &n,
                         index_torn, err));
    int rc = seg_reserve((void **)&seg->index, &seg->index_cap, n, sizeof *seg->index, err);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        seg->index[i].rel = fr_get_u32le(data + i * 8);
        seg->index[i].pos = fr_get_u32le(data + i * 8 + 4);
    }
    if (rc == 0) seg->nindex = seg->index_written = n;
    fr_free(data);
    FR_TRY(rc);
    FR_TRY(seg_read_file(log, seg->time_fd, LOG_TIME_ENTRY_BYTES, log_size, &data, &n,
                         time_torn, err));
    rc = seg_reserve((void **)&seg->times, &seg->times_cap, n, sizeof *seg->times, err);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        seg->times[i].ts = (int64_t)fr_get_u64le(data + i * 12);
        seg->times[i].rel = fr_get_u32le(data + i * 12 + 8);
    }
    if (rc == 0) seg->ntimes = seg->times_written = n;
    fr_free(data);
    return rc;
}

int log_segment_open_files(fr_log *log, log_segment *seg, fr_error *err)
{
    if (seg->log_fd < 0) FR_TRY(seg_open_file(log, seg->base, ".log", 0, &seg->log_fd, err));
    if (seg->index_fd < 0)
        FR_TRY(seg_open_file(log, seg->base, ".index", O_CREAT, &seg->index_fd, err));
    if (seg->time_fd < 0)
        FR_TRY(seg_open_file(log, seg->base, ".timeindex", O_CREAT, &seg->time_fd, err));
    return FR_OK;
}

int log_segment_open(fr_log *log, int64_t base, log_segment **out, fr_error *err)
{
    log_segment *seg = seg_alloc(base);
    if (!seg) return fr_fail(err, FR_ENOMEM, "log %s: out of memory", log->name);
    int rc;
    FR_GOTO(seg_open_file(log, base, ".log", 0, &seg->log_fd, err));
    FR_GOTO(seg_open_file(log, base, ".index", O_CREAT, &seg->index_fd, err));
    FR_GOTO(seg_open_file(log, base, ".timeindex", O_CREAT, &seg->time_fd, err));
    struct stat st;
    if (fstat(seg->log_fd, &st) != 0) {
        rc = fr_fail_errno(err, errno, "log %s: fstat segment %020lld", log->name,
                           (long long)base);
        goto fail;
    }
    seg->size = st.st_size;
    /* Sealed segments are mapped as they are; recovery maps the active one for growth. */
    FR_GOTO(log_segment_map(log, seg, st.st_size, err));
    bool itorn, ttorn;
    FR_GOTO(seg_load_indexes(log, seg, st.st_size, &itorn, &ttorn, err));
    /* A torn index file is dropped here; recovery sees an empty index and rebuilds it. */
    if (itorn) seg->nindex = seg->index_written = 0;
    if (ttorn) seg->ntimes = seg->times_written = 0;
    seg->index_damaged = itorn || ttorn;
    *out = seg;
    return FR_OK;
fail:
    seg_free(seg);
    return rc;
}

int64_t log_segment_lookup(const log_segment *seg, int64_t offset)
{
    int64_t rel = offset - seg->base;
    size_t lo = 0, hi = seg->nindex; /* the answer is the last entry with rel <= target */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if ((int64_t)seg->index[mid].rel <= rel) lo = mid + 1;
        else hi = mid;
    }
    return lo == 0 ? 0 : (int64_t)seg->index[lo - 1].pos;
}

int64_t log_segment_time_lookup(const log_segment *seg, int64_t ts)
{
    size_t lo = 0, hi = seg->ntimes; /* the last entry with a timestamp below ts */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (seg->times[mid].ts < ts) lo = mid + 1;
        else hi = mid;
    }
    return lo == 0 ? 0 : (int64_t)seg->times[lo - 1].rel;
}

/* Entries written to the index files together (see log_segment_write_pending). */
#define LOG_INDEX_WRITE_ENTRIES 64

static void seg_pwrite_entries(fr_log *log, log_segment *seg, int fd, const uint8_t *p, size_t n,
                               int64_t at, const char *what)
{
    ssize_t w;
    do {
        w = pwrite(fd, p, n, (off_t)at);
    } while (w < 0 && errno == EINTR);
    if (w != (ssize_t)n)
        FR_WARN("log %s: segment %020lld: cannot write its %s (%s); it is rebuilt at the next "
                "open",
                log->name, (long long)seg->base, what, w < 0 ? strerror(errno) : "short write");
}

/* The writer is the only one to change the entries, so it reads them without mu. */
void log_segment_write_pending(fr_log *log, log_segment *seg)
{
    uint8_t buf[LOG_INDEX_WRITE_ENTRIES * LOG_TIME_ENTRY_BYTES];
    while (seg->index_written < seg->nindex) {
        size_t first = seg->index_written, n = seg->nindex - first;
        if (n > LOG_INDEX_WRITE_ENTRIES) n = LOG_INDEX_WRITE_ENTRIES;
        for (size_t i = 0; i < n; i++) {
            fr_put_u32le(buf + i * 8, seg->index[first + i].rel);
            fr_put_u32le(buf + i * 8 + 4, seg->index[first + i].pos);
        }
        seg_pwrite_entries(log, seg, seg->index_fd, buf, n * LOG_INDEX_ENTRY_BYTES,
                           (int64_t)first * LOG_INDEX_ENTRY_BYTES, "offset index");
        seg->index_written += n;
    }
    while (seg->times_written < seg->ntimes) {
        size_t first = seg->times_written, n = seg->ntimes - first;
        if (n > LOG_INDEX_WRITE_ENTRIES) n = LOG_INDEX_WRITE_ENTRIES;
        for (size_t i = 0; i < n; i++) {
            fr_put_u64le(buf + i * 12, (uint64_t)seg->times[first + i].ts);
            fr_put_u32le(buf + i * 12 + 8, seg->times[first + i].rel);
        }
        seg_pwrite_entries(log, seg, seg->time_fd, buf, n * LOG_TIME_ENTRY_BYTES,
                           (int64_t)first * LOG_TIME_ENTRY_BYTES, "time index");
        seg->times_written += n;
    }
}

int log_segment_note_batch(fr_log *log, log_segment *seg, int64_t pos, const fr_rb_view *v,
                           bool write_files, fr_error *err)
{
    /* The first batch of a segment needs no entry: position 0 is implied. */
    if (pos == 0 || seg->index_since < log->opts.index_interval_bytes) {
        seg->index_since += v->length;
        return FR_OK;
    }
    uint32_t rel = (uint32_t)(v->base_offset - seg->base);
    bool add_time = seg->ntimes == 0 || v->commit_timestamp > seg->times[seg->ntimes - 1].ts;
    pthread_mutex_lock(&log->mu);
    int rc = seg_reserve((void **)&seg->index, &seg->index_cap, seg->nindex + 1,
                         sizeof *seg->index, err);
    if (rc == 0 && add_time)
        rc = seg_reserve((void **)&seg->times, &seg->times_cap, seg->ntimes + 1,
                         sizeof *seg->times, err);
    if (rc == 0) {
        seg->index[seg->nindex++] = (log_index_entry){ rel, (uint32_t)pos };
        if (add_time) seg->times[seg->ntimes++] = (log_time_entry){ v->commit_timestamp, rel };
    }
    pthread_mutex_unlock(&log->mu);
    FR_TRY(rc);
    seg->index_since = v->length;
    if (write_files && seg->nindex - seg->index_written >= LOG_INDEX_WRITE_ENTRIES)
        log_segment_write_pending(log, seg);
    return FR_OK;
}

static int seg_rewrite(fr_log *log, log_segment *seg, int fd, const uint8_t *data, size_t n,
                       const char *what, fr_error *err)
{
    /* Entries first, then the length: cheaper than emptying the file on ext4, and a crash in
     * between leaves a file that open checks and rebuilds anyway. */
    size_t done = 0;
    while (done < n) {
        ssize_t w = pwrite(fd, data + done, n - done, (off_t)done);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0)
            return fr_fail_errno(err, errno, "log %s: segment %020lld: write %s", log->name,
                                 (long long)seg->base, what);
        done += (size_t)w;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || (st.st_size != (off_t)n && ftruncate(fd, (off_t)n) != 0))
        return fr_fail_errno(err, errno, "log %s: segment %020lld: truncate %s", log->name,
                             (long long)seg->base, what);
    /* No fsync: an index that did not reach the disk is found and rebuilt at open. */
    return FR_OK;
}

int log_segment_write_indexes(fr_log *log, log_segment *seg, fr_error *err)
{
    size_t n = seg->nindex * LOG_INDEX_ENTRY_BYTES;
    size_t m = seg->ntimes * LOG_TIME_ENTRY_BYTES;
    uint8_t *buf = fr_malloc((n > m ? n : m) + 1);
    if (!buf) return fr_fail(err, FR_ENOMEM, "log %s: out of memory", log->name);
    for (size_t i = 0; i < seg->nindex; i++) {
        fr_put_u32le(buf + i * 8, seg->index[i].rel);
        fr_put_u32le(buf + i * 8 + 4, seg->index[i].pos);
    }
    int rc = seg_rewrite(log, seg, seg->index_fd, buf, n, "offset index", err);
    if (rc == 0) {
        for (size_t i = 0; i < seg->ntimes; i++) {
            fr_put_u64le(buf + i * 12, (uint64_t)seg->times[i].ts);
            fr_put_u32le(buf + i * 12 + 8, seg->times[i].rel);
        }
        rc = seg_rewrite(log, seg, seg->time_fd, buf, m, "time index", err);
    }
    fr_free(buf);
    if (rc == 0) {
        seg->index_written = seg->nindex;
        seg->times_written = seg->ntimes;
    }
    return rc;
}

int log_segment_cut_indexes(fr_log *log, log_segment *seg, int64_t size, int64_t next_offset,
                            fr_error *err)
{
    int64_t rel_end = next_offset - seg->base;
    pthread_mutex_lock(&log->mu);
    while (seg->nindex > 0 && (int64_t)seg->index[seg->nindex - 1].pos >= size) seg->nindex--;
    while (seg->ntimes > 0 && (int64_t)seg->times[seg->ntimes - 1].rel >= rel_end) seg->ntimes--;
    pthread_mutex_unlock(&log->mu);
    if (seg->index_written > seg->nindex) seg->index_written = seg->nindex;
    if (seg->times_written > seg->ntimes) seg->times_written = seg->ntimes;
    seg->index_since = size - (seg->nindex ? (int64_t)seg->index[seg->nindex - 1].pos : 0);
    return log_segment_write_indexes(log, seg, err);
}

static int seg_write_all(int fd, const uint8_t *p, size_t n, const char *path, fr_error *err)
{
    size_t done = 0;
    while (done < n) {
        ssize_t w = pwrite(fd, p + done, n - done, (off_t)done);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) return fr_fail_errno(err, errno, "write %s", path);
        done += (size_t)w;
    }
    return FR_OK;
}

int log_segment_copy_prefix(fr_log *log, log_segment *old, int64_t size, int64_t next_offset,
                            log_segment **out, fr_error *err)
{
    char tmp[LOG_PATH_BYTES_MAX], path[LOG_PATH_BYTES_MAX];
    log_segment_path(log, old->base, ".log.tmp", tmp, sizeof tmp);
    log_segment_path(log, old->base, ".log", path, sizeof path);
    int fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return fr_fail_errno(err, errno, "log %s: open %s", log->name, tmp);
    int rc = seg_write_all(fd, old->map, (size_t)size, tmp, err);
    if (rc == 0 && fdatasync(fd) != 0) rc = fr_fail_errno(err, errno, "fsync %s", tmp);
    close(fd);
    if (rc == 0 && rename(tmp, path) != 0) rc = fr_fail_errno(err, errno, "rename %s", tmp);
    if (rc < 0) {
        unlink(tmp);
        return rc;
    }
    log_segment *seg;
    FR_TRY(log_segment_open(log, old->base, &seg, err));
    pthread_mutex_lock(&log->mu);
    rc = seg_reserve((void **)&seg->index, &seg->index_cap, old->nindex, sizeof *seg->index, err);
    if (rc == 0)
        rc = seg_reserve((void **)&seg->times, &seg->times_cap, old->ntimes, sizeof *seg->times,
                         err);
    if (rc == 0) {
        if (old->nindex) memcpy(seg->index, old->index, old->nindex * sizeof *seg->index);
        if (old->ntimes) memcpy(seg->times, old->times, old->ntimes * sizeof *seg->times);
        seg->nindex = old->nindex;
        seg->ntimes = old->ntimes;
    }
    pthread_mutex_unlock(&log->mu);
    seg->size = size;
    seg->next_offset = next_offset;
    if (rc == 0) rc = log_segment_map(log, seg, log_segment_active_map_bytes(log, size), err);
    if (rc == 0) rc = log_segment_cut_indexes(log, seg, size, next_offset, err);
    if (rc < 0) {
        seg_free(seg);
        return rc;
    }
    *out = seg;
    return FR_OK;
}
