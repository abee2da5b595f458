/* log.c — the log of one bucket: open and close, append with group commit, rolling segments,
 * retention, truncation and the sizes.
 *
 * Appends are serialized by write_mu: a batch is checked, given its base offset and commit
 * timestamp, and written with one pwrite at the end of the active segment. Under
 * FR_FLUSH_EVERY_APPEND the fdatasync happens after write_mu is released: an appender whose
 * bytes are written but not durable either becomes the flusher (one fdatasync covers every
 * batch written so far) or waits on flush_cond for the running flush to cover it, so N
 * concurrent appenders share few fsyncs. fr_log_append_nowait stops before that wait and
 * fr_log_wait_durable does it, so that a caller can write its next batch while the fsync of
 * the previous one runs. Readers see batches below visible_offset: the durable end under
 * FR_FLUSH_EVERY_APPEND, the written end otherwise.
 *
 * Segments before the active one are durable: a roll fsyncs the old segment before the new
 * one becomes active, so a flusher only ever needs to fsync the active segment. */
#include "log/log_int.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

/* Positions in an offset-index entry are 32-bit: a segment stays below 2^31 bytes plus one
 * batch. */
#define LOG_SEGMENT_BYTES_MAX ((int64_t)1 << 31)
/* How long an in-order batch waits for the writer's batch before it (FR_LOG_APPEND_IN_ORDER):
 * long enough for a batch sent just before it on the same connection to be appended. */
#define LOG_SEQUENCE_WAIT_NS ((int64_t)100 * 1000000)

void fr_log_options_default(fr_log_options *o)
{
    memset(o, 0, sizeof *o);
    o->flush = FR_FLUSH_EVERY_APPEND;
    o->flush_interval_ms = 1000;
    o->segment_bytes = (int64_t)1 << 30;
    o->index_interval_bytes = 4096;
    o->retention_ms = -1;
    o->retention_bytes = -1;
    o->name = NULL;
}

static int check_options(const fr_log_options *o, fr_error *err)
{
    FR_CHECK(o->flush == FR_FLUSH_EVERY_APPEND || o->flush == FR_FLUSH_INTERVAL ||
                 o->flush == FR_FLUSH_NONE,
             FR_EINVAL, err, "log: unknown flush mode %d", (int)o->flush);
    FR_CHECK(o->flush != FR_FLUSH_INTERVAL || o->flush_interval_ms > 0, FR_EINVAL, err,
             "log: flush interval of %lld ms must be positive", (long long)o->flush_interval_ms);
    FR_CHECK(o->segment_bytes >= 1 && o->segment_bytes <= LOG_SEGMENT_BYTES_MAX, FR_EINVAL, err,
             "log: segment size of %lld bytes is outside 1..%lld", (long long)o->segment_bytes,
             (long long)LOG_SEGMENT_BYTES_MAX);
    FR_CHECK(o->index_interval_bytes >= 0, FR_EINVAL, err,
             "log: index interval of %lld bytes is negative", (long long)o->index_interval_bytes);
    return FR_OK;
}

static void log_free(fr_log *log)
{
    for (int i = 0; i < log->nsegs; i++) log_segment_unref_locked(log->segs[i]);
    fr_free(log->segs);
    fr_free(log->writers);
    pthread_cond_destroy(&log->flush_cond);
    pthread_cond_destroy(&log->seq_cond);
    pthread_mutex_destroy(&log->mu);
    pthread_mutex_destroy(&log->write_mu);
    fr_free(log->name);
    fr_free(log->dir);
    fr_free(log);
}

int fr_log_open(const char *dir, const fr_log_options *opts, fr_log **out, fr_error *err)
{
    fr_log_options defaults;
    if (!opts) {
        fr_log_options_default(&defaults);
        opts = &defaults;
    }
    FR_TRY(check_options(opts, err));
    fr_log *log = fr_calloc(1, sizeof *log);
    if (!log) return fr_fail(err, FR_ENOMEM, "log %s: out of memory", dir);
    pthread_mutex_init(&log->write_mu, NULL);
    pthread_mutex_init(&log->mu, NULL);
    pthread_cond_init(&log->flush_cond, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&log->seq_cond, &ca);
    pthread_condattr_destroy(&ca);
    atomic_init(&log->fsync_us, 0);
    for (int b = 0; b < FR_LOG_FSYNC_BUCKETS; b++) atomic_init(&log->fsync_hist[b], 0);
    log->opts = *opts;
    log->dir = fr_strdup(dir);
    log->name = fr_strdup(opts->name ? opts->name : dir);
    int rc;
    if (!log->dir || !log->name) {
        rc = fr_fail(err, FR_ENOMEM, "log %s: out of memory", dir);
        goto fail;
    }
    log->opts.name = log->name;
    FR_GOTO(fr_mkdirs(dir, err));
    FR_GOTO(log_recover(log, err));
    log->last_flush_ms = fr_now_ms();
    *out = log;
    return FR_OK;
fail:
    log_free(log);
    return rc;
}

/* ---- durability ------------------------------------------------------------------------- */

const int64_t fr_log_fsync_bounds_us[FR_LOG_FSYNC_BUCKETS - 1] = {
    100, 250, 500, 1000, 2000, 4000, 8000, 16000, 32000, 64000, 128000,
};

/* fdatasync(fd), counted and timed into the log's figures. */
static int log_fdatasync(fr_log *log, int fd)
{
    int64_t t0 = fr_monotonic_ns();
    int rc = fdatasync(fd);
    int e = errno;
    int64_t us = (fr_monotonic_ns() - t0) / 1000;
    int b = 0;
    while (b < FR_LOG_FSYNC_BUCKETS - 1 && us > fr_log_fsync_bounds_us[b]) b++;
    atomic_fetch_add_explicit(&log->fsync_hist[b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&log->fsync_us, us, memory_order_relaxed);
    errno = e;
    return rc;
}

void fr_log_fsync_stats_sum(fr_log_fsync_stats *acc, const fr_log_fsync_stats *x)
{
    for (int b = 0; b < FR_LOG_FSYNC_BUCKETS; b++) acc->buckets[b] += x->buckets[b];
    acc->count += x->count;
    acc->sum_us += x->sum_us;
}

void fr_log_fsync_stats_add(fr_log *log, fr_log_fsync_stats *acc)
{
    fr_log_fsync_stats mine = {0};
    for (int b = 0; b < FR_LOG_FSYNC_BUCKETS; b++) {
        mine.buckets[b] = atomic_load_explicit(&log->fsync_hist[b], memory_order_relaxed);
        mine.count += mine.buckets[b];
    }
    mine.sum_us = atomic_load_explicit(&log->fsync_us, memory_order_relaxed);
    fr_log_fsync_stats_sum(acc, &mine);
}

/* Runs one fdatasync of the active segment with mu released, covering every batch written
 * before it starts. Called and returns with mu held; the caller saw !flushing. */
static void flush_as_leader(fr_log *log)
{
    assert(!log->flushing);
    log->flushing = true;
    int64_t target = log->next_offset;
    log_segment *seg = log->segs[log->nsegs - 1];
    seg->refs++;
    /* A roll seals (closes) the segment's files only once this flush is done. */
    log->flush_seg = seg;
    int fd = seg->log_fd;
    pthread_mutex_unlock(&log->mu);
    int rc = log_fdatasync(log, fd);
    int e = errno;
    pthread_mutex_lock(&log->mu);
    log->flushing = false;
    log->flush_seg = NULL;
    if (rc != 0) {
        /* After a failed fsync the page cache may have dropped the dirty pages: nothing
         * written since the last good fsync can be trusted, so writes stop. */
        FR_ERROR("log %s: fdatasync of segment %020lld failed: %s; the log stops accepting "
                 "writes until it is reopened",
                 log->name, (long long)seg->base, strerror(e));
        log->failed = e == ENOSPC ? FR_ENOSPC : FR_EIO;
    } else if (target > log->durable_offset) {
        log->durable_offset = target;
        if (log->opts.flush == FR_FLUSH_EVERY_APPEND) log->visible_offset = target;
    }
    log->last_flush_ms = fr_now_ms();
    log_segment_unref_locked(seg);
    pthread_cond_broadcast(&log->flush_cond);
}

static int failed_error(fr_log *log, fr_error *err)
{
    return fr_fail(err, log->failed,
                   "log %s: stopped accepting writes after an I/O error; check the disk and "
                   "reopen the log",
                   log->name);
}

/* Waits until offsets below `end` are durable (mu held). */
static int wait_durable_locked(fr_log *log, int64_t end, int64_t truncations, fr_error *err)
{
    while (log->durable_offset < end && !log->failed && log->truncations == truncations) {
        if (!log->flushing) flush_as_leader(log);
        else pthread_cond_wait(&log->flush_cond, &log->mu);
    }
    if (log->truncations != truncations)
        return fr_fail(err, FR_ESTATE, "log %s: truncated while the append was being flushed",
                       log->name);
    if (log->durable_offset < end) return failed_error(log, err);
    return FR_OK;
}

static int after_write(fr_log *log, int64_t end, int64_t truncations, fr_error *err)
{
    if (log->opts.flush == FR_FLUSH_NONE) return FR_OK;
    pthread_mutex_lock(&log->mu);
    int rc = FR_OK;
    if (log->opts.flush == FR_FLUSH_EVERY_APPEND) {
        rc = wait_durable_locked(log, end, truncations, err);
    } else if (!log->flushing && log->durable_offset < log->next_offset &&
               fr_now_ms() - log->last_flush_ms >= log->opts.flush_interval_ms) {
        /* FR_FLUSH_INTERVAL flushes lazily: the first append after the interval does it. */
        flush_as_leader(log);
        if (log->failed) rc = failed_error(log, err);
    }
    pthread_mutex_unlock(&log->mu);
    return rc;
}

int fr_log_flush(fr_log *log, fr_error *err)
{
    pthread_mutex_lock(&log->mu);
    int rc = wait_durable_locked(log, log->next_offset, log->truncations, err);
    pthread_mutex_unlock(&log->mu);
    return rc;
}

void fr_log_close(fr_log *log)
{
    if (!log) return;
    fr_error err;
    log_segment *active = log->segs[log->nsegs - 1];
    log_segment_write_pending(log, active);
    if (log->opts.flush != FR_FLUSH_NONE) {
        if (fr_log_flush(log, &err) < 0) FR_WARN("log %s: closing: %s", log->name, err.msg);
        /* The indexes are checked at open anyway; syncing them spares a rebuild after a
         * crash. */
        if (fdatasync(active->index_fd) != 0 || fdatasync(active->time_fd) != 0)
            FR_WARN("log %s: closing: cannot fsync the indexes: %s", log->name, strerror(errno));
    }
    log_free(log);
}

void fr_log_close_noflush(fr_log *log)
{
    if (log) log_free(log);
}

int64_t fr_log_fsync_count(fr_log *log)
{
    fr_log_fsync_stats st = {0};
    fr_log_fsync_stats_add(log, &st);
    return st.count;
}

/* ---- append ----------------------------------------------------------------------------- */

static int write_all(int fd, const uint8_t *p, size_t n, int64_t at)
{
    while (n > 0) {
        ssize_t w = pwrite(fd, p, n, (off_t)at);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) return errno;
        if (w == 0) return EIO;
        p += w;
        n -= (size_t)w;
        at += w;
    }
    return 0;
}

int log_push_segment(fr_log *log, log_segment *seg, fr_error *err)
{
    if (log->nsegs == log->segs_cap) {
        int ncap = log->segs_cap ? log->segs_cap * 2 : 16;
        log_segment **p = fr_realloc(log->segs, (size_t)ncap * sizeof *p);
        if (!p) return fr_fail(err, FR_ENOMEM, "log %s: out of memory", log->name);
        log->segs = p;
        log->segs_cap = ncap;
    }
    log->segs[log->nsegs++] = seg;
    return FR_OK;
}

/* Seals the active segment (fsynced, so that flushers need only look at the active one) and
 * starts a new one at the next offset. write_mu held. */
static int roll(fr_log *log, fr_error *err)
{
    log_segment *old = log->segs[log->nsegs - 1];
    int rc = log_fdatasync(log, old->log_fd);
    if (rc != 0) {
        int e = errno;
        pthread_mutex_lock(&log->mu);
        log->failed = e == ENOSPC ? FR_ENOSPC : FR_EIO;
        pthread_mutex_unlock(&log->mu);
        return fr_fail_errno(err, e, "log %s: fsync of segment %020lld", log->name,
                             (long long)old->base);
    }
    log_segment_write_pending(log, old);
    if (fdatasync(old->index_fd) != 0 || fdatasync(old->time_fd) != 0)
        FR_WARN("log %s: cannot fsync the indexes of segment %020lld: %s", log->name,
                (long long)old->base, strerror(errno));
    log_segment *seg;
    FR_TRY(log_segment_create(log, log->next_offset, &seg, err));
    pthread_mutex_lock(&log->mu);
    rc = log_push_segment(log, seg, err);
    if (rc == 0 && log->next_offset > log->durable_offset) {
        log->durable_offset = log->next_offset;
        if (log->opts.flush == FR_FLUSH_EVERY_APPEND) log->visible_offset = log->durable_offset;
        pthread_cond_broadcast(&log->flush_cond);
    }
    pthread_mutex_unlock(&log->mu);
    if (rc < 0) {
        log_segment_unlink(log, seg);
        log_segment_unref_locked(seg);
        return rc;
    }
    /* A flush that began before the new segment became active may still use old's
     * descriptor. */
    pthread_mutex_lock(&log->mu);
    while (log->flush_seg == old) pthread_cond_wait(&log->flush_cond, &log->mu);
    pthread_mutex_unlock(&log->mu);
    log_segment_close_files(old);
    return FR_OK;
}

/* Where a writer's batch stands against what the log has seen of the writer. */
typedef enum { SEQ_NEXT, SEQ_SEEN, SEQ_EARLY } seq_verdict;

/* In order, a writer the log does not know starts at 0: a later first batch may have
 * overtaken the writer's first, which would then pass for a duplicate. */
static seq_verdict sequence_verdict(fr_log *log, const fr_rb_view *v, unsigned flags)
{
    bool in_order = flags & FR_LOG_APPEND_IN_ORDER;
    const log_writer_state *w = log_writer_find(log, v->writer_id);
    if (!w) return !in_order || v->batch_sequence == 0 ? SEQ_NEXT : SEQ_EARLY;
    if (v->batch_sequence <= w->seq) return SEQ_SEEN;
    return !in_order || v->batch_sequence - 1 == w->seq ? SEQ_NEXT : SEQ_EARLY;
}

/* The idempotence check: FR_EDUPLICATE when this writer's sequence was seen. With
 * FR_LOG_APPEND_IN_ORDER a batch that came before the one it follows waits a little for
 * it (both were most likely sent back to back and are being appended by two threads right
 * now), then is refused with FR_ESEQUENCE. write_mu held (released while waiting). */
static int check_sequence(fr_log *log, const fr_rb_view *v, unsigned flags,
                          int64_t *base_offset, fr_error *err)
{
    if (v->writer_id == FR_NO_WRITER || v->batch_sequence < 0) return FR_OK;
    seq_verdict s = sequence_verdict(log, v, flags);
    int64_t deadline = 0;
    while (s == SEQ_EARLY) {
        int64_t now = fr_monotonic_ns();
        if (deadline == 0) deadline = now + LOG_SEQUENCE_WAIT_NS;
        if (now >= deadline) break;
        struct timespec ts = {.tv_sec = (time_t)(deadline / 1000000000),
                              .tv_nsec = (long)(deadline % 1000000000)};
        log->seq_waiters++;
        pthread_cond_timedwait(&log->seq_cond, &log->write_mu, &ts);
        log->seq_waiters--;
        s = sequence_verdict(log, v, flags);
    }
    if (s == SEQ_NEXT) return FR_OK;
    const log_writer_state *w = log_writer_find(log, v->writer_id);
    if (s == SEQ_EARLY)
        return fr_fail(err, FR_ESEQUENCE,
                       "log %s: writer %lld sent sequence %d before %d; nothing was written",
                       log->name, (long long)v->writer_id, (int)v->batch_sequence,
                       w ? (int)w->seq + 1 : 0);
    *base_offset = v->batch_sequence == w->seq ? w->base_offset : -1;
    return fr_fail(err, FR_EDUPLICATE,
                   "log %s: writer %lld sent sequence %d again (the last appended is %d)",
                   log->name, (long long)v->writer_id, (int)v->batch_sequence, (int)w->seq);
}

/* Writes the batch at the end of the active segment and publishes it. write_mu held. */
static int append_locked(fr_log *log, uint8_t *batch, fr_rb_view *v, unsigned flags,
                         int64_t *base_offset, int64_t *end, int64_t *truncations,
                         fr_error *err)
{
    /* First: an in-order batch may wait here, with write_mu released. */
    FR_TRY(check_sequence(log, v, flags, base_offset, err));
    pthread_mutex_lock(&log->mu);
    int failed = log->failed;
    *truncations = log->truncations;
    pthread_mutex_unlock(&log->mu);
    if (failed) return failed_error(log, err);

    log_segment *seg = log->segs[log->nsegs - 1];
    int64_t len = v->length;
    if (seg->size > 0 && (seg->size + len > log->opts.segment_bytes ||
                          log->next_offset + v->record_count - seg->base > (int64_t)UINT32_MAX)) {
        FR_TRY(roll(log, err));
        seg = log->segs[log->nsegs - 1];
    }
    assert((size_t)(seg->size + len) <= seg->map_len);
    int64_t base = log->next_offset;
    int64_t ts = fr_now_ms();
    if (ts < log->last_ts) ts = log->last_ts;
    fr_rb_assign(batch, base, ts);
    v->base_offset = base;
    v->commit_timestamp = ts;

    int e = write_all(seg->log_fd, batch, (size_t)len, seg->size);
    if (e != 0) {
        /* Undo a partial write so that the next batch starts at a batch boundary. */
        if (ftruncate(seg->log_fd, (off_t)seg->size) != 0) {
            pthread_mutex_lock(&log->mu);
            log->failed = FR_EIO;
            pthread_mutex_unlock(&log->mu);
        }
        return fr_fail_errno(err, e, "log %s: write of %lld bytes to segment %020lld", log->name,
                             (long long)len, (long long)seg->base);
    }
    fr_error ierr;
    if (log_segment_note_batch(log, seg, seg->size, v, true, &ierr) < 0)
        FR_WARN("log %s: index entry skipped: %s", log->name, ierr.msg);
    if (v->writer_id != FR_NO_WRITER && v->batch_sequence >= 0 &&
        log_writer_note(log, v->writer_id, v->batch_sequence, base, &ierr) < 0)
        FR_WARN("log %s: writer %lld not recorded: %s", log->name, (long long)v->writer_id,
                ierr.msg);
    if (log->seq_waiters > 0) pthread_cond_broadcast(&log->seq_cond);
    log->last_ts = ts;
    pthread_mutex_lock(&log->mu);
    seg->size += len;
    seg->next_offset = base + v->record_count;
    seg->max_ts = ts;
    log->next_offset = base + v->record_count;
    if (log->opts.flush != FR_FLUSH_EVERY_APPEND) log->visible_offset = log->next_offset;
    pthread_mutex_unlock(&log->mu);
    *base_offset = base;
    *end = base + v->record_count;
    return FR_OK;
}

int fr_log_append(fr_log *log, uint8_t *batch, size_t len, int64_t *base_offset, fr_error *err)
{
    return fr_log_append2(log, batch, len, 0, base_offset, err);
}

int fr_log_append_nowait(fr_log *log, uint8_t *batch, size_t len, unsigned flags,
                         int64_t *base_offset, fr_log_ticket *ticket, fr_error *err)
{
    assert((flags & ~(FR_LOG_APPEND_VERIFIED | FR_LOG_APPEND_IN_ORDER)) == 0);
    fr_rb_view v;
    int rc;
    if (flags & FR_LOG_APPEND_VERIFIED) {
        /* The layout is still checked (it is cheap and the write path relies on it); the
         * CRC was computed over these bytes by fr_rb_encode in this process. */
        rc = fr_rb_parse_header(batch, len, &v, err);
        assert(rc < 0 || fr_rb_decode(batch, len, &v, NULL) == FR_OK);
    } else {
        rc = fr_rb_decode(batch, len, &v, err);
    }
    if (rc == FR_ERANGE) {
        /* A short batch is a bad batch here: the caller gave all it has. */
        rc = FR_ECORRUPT;
        if (err) err->code = rc;
    }
    if (rc < 0) {
        fr_error_wrap(err, "log %s: append", log->name);
        return rc;
    }
    FR_CHECK((size_t)v.length == len, FR_ECORRUPT, err,
             "log %s: append of %zu bytes holding a batch of %d bytes", log->name, len,
             (int)v.length);
    int64_t end = 0, truncations = 0;
    pthread_mutex_lock(&log->write_mu);
    rc = append_locked(log, batch, &v, flags, base_offset, &end, &truncations, err);
    pthread_mutex_unlock(&log->write_mu);
    if (rc < 0) return rc;
    *ticket = (fr_log_ticket){ .end = end, .truncations = truncations };
    return FR_OK;
}

int fr_log_wait_durable(fr_log *log, const fr_log_ticket *ticket, fr_error *err)
{
    FR_TRY(after_write(log, ticket->end, ticket->truncations, err));
    const fr_log_watcher *w = atomic_load_explicit(&log->watcher, memory_order_acquire);
    if (w) w->appended(w->ctx, log, fr_log_end_offset(log));
    return FR_OK;
}

int fr_log_append2(fr_log *log, uint8_t *batch, size_t len, unsigned flags,
                   int64_t *base_offset, fr_error *err)
{
    fr_log_ticket ticket;
    FR_TRY(fr_log_append_nowait(log, batch, len, flags, base_offset, &ticket, err));
    return fr_log_wait_durable(log, &ticket, err);
}

void fr_log_set_watcher(fr_log *log, const fr_log_watcher *w)
{
    atomic_store_explicit(&log->watcher, w, memory_order_release);
}

/* ---- offsets and sizes ------------------------------------------------------------------ */

int64_t fr_log_start_offset(fr_log *log)
{
    pthread_mutex_lock(&log->mu);
    int64_t v = log->segs[0]->base;
    pthread_mutex_unlock(&log->mu);
    return v;
}

int64_t fr_log_end_offset(fr_log *log)
{
    pthread_mutex_lock(&log->mu);
    int64_t v = log->visible_offset;
    pthread_mutex_unlock(&log->mu);
    return v;
}

int64_t fr_log_size_bytes(fr_log *log)
{
    pthread_mutex_lock(&log->mu);
    int64_t total = 0;
    for (int i = 0; i < log->nsegs; i++) total += log->segs[i]->size;
    pthread_mutex_unlock(&log->mu);
    return total;
}

int fr_log_num_segments(fr_log *log)
{
    pthread_mutex_lock(&log->mu);
    int n = log->nsegs;
    pthread_mutex_unlock(&log->mu);
    return n;
}

/* ---- retention -------------------------------------------------------------------------- */

/* Drops segs[i] from the list and unlinks its files; readers holding it keep it. mu held. */
static void remove_segment_locked(fr_log *log, int i)
{
    log_segment *seg = log->segs[i];
    log_segment_unlink(log, seg);
    seg->deleted = true;
    memmove(log->segs + i, log->segs + i + 1, (size_t)(log->nsegs - i - 1) * sizeof *log->segs);
    log->nsegs--;
    log_segment_unref_locked(seg);
}

int fr_log_enforce_retention(fr_log *log, int64_t now_ms, int *removed, fr_error *err)
{
    int n = 0;
    pthread_mutex_lock(&log->write_mu);
    pthread_mutex_lock(&log->mu);
    int64_t total = 0;
    for (int i = 0; i < log->nsegs; i++) total += log->segs[i]->size;
    /* Only the oldest segments go, never the active one, so offsets stay dense. Time: the
     * newest batch of the segment is older than the retention. Size: the log would still
     * hold at least retention_bytes without the segment (as Kafka's retention.bytes). */
    while (log->nsegs > 1) {
        log_segment *seg = log->segs[0];
        bool old = log->opts.retention_ms >= 0 && seg->max_ts < now_ms - log->opts.retention_ms;
        bool big = log->opts.retention_bytes >= 0 &&
                   total - seg->size >= log->opts.retention_bytes;
        if (!old && !big) break;
        FR_INFO("log %s: retention removes segment %020lld (%lld bytes, offsets %lld..%lld)",
                log->name, (long long)seg->base, (long long)seg->size, (long long)seg->base,
                (long long)seg->next_offset - 1);
        total -= seg->size;
        remove_segment_locked(log, 0);
        n++;
    }
    pthread_mutex_unlock(&log->mu);
    int rc = n > 0 ? fr_fsync_dir(log->dir, err) : FR_OK;
    pthread_mutex_unlock(&log->write_mu);
    if (removed) *removed = n;
    return rc;
}

/* ---- truncation ------------------------------------------------------------------------- */

/* Finds the byte position of the batch starting at `offset` in seg, and the commit timestamp
 * of the batch before it. write_mu held (the indexes change only under it). */
static int find_batch_start(fr_log *log, log_segment *seg, int64_t offset, int64_t *pos_out,
                            int64_t *prev_ts, fr_error *err)
{
    *prev_ts = INT64_MIN;
    int64_t pos = offset > seg->base ? log_segment_lookup(seg, offset - 1) : 0;
    while (pos < seg->size) {
        fr_rb_view v;
        FR_TRY(fr_rb_parse_header(seg->map + pos, (size_t)(seg->size - pos), &v, err));
        if (v.base_offset == offset) break;
        FR_CHECK(v.base_offset + v.record_count <= offset, FR_EINVAL, err,
                 "log %s: cannot truncate at offset %lld inside the batch of offsets "
                 "%lld..%lld; truncate at %lld",
                 log->name, (long long)offset, (long long)v.base_offset,
                 (long long)(v.base_offset + v.record_count - 1), (long long)v.base_offset);
        *prev_ts = v.commit_timestamp;
        pos += v.length;
    }
    *pos_out = pos;
    return FR_OK;
}

/* Cuts segs[i] at pos (mu not held; write_mu held). In place when no reader holds the
 * segment; otherwise the kept bytes are copied to a new file that replaces it, so that the
 * readers' mapping never loses the pages it may touch. */
static int cut_segment(fr_log *log, int i, int64_t pos, int64_t offset, int64_t prev_ts,
                       fr_error *err)
{
    log_segment *seg = log->segs[i];
    FR_TRY(log_segment_open_files(log, seg, err));
    pthread_mutex_lock(&log->mu);
    while (log->flushing) pthread_cond_wait(&log->flush_cond, &log->mu);
    while (log->nsegs > i + 1) remove_segment_locked(log, log->nsegs - 1);
    log->next_offset = offset;
    if (log->visible_offset > offset) log->visible_offset = offset;
    if (log->durable_offset > offset) log->durable_offset = offset;
    log->truncations++;
    pthread_cond_broadcast(&log->flush_cond);
    bool in_place = seg->refs == 1;
    int rc = FR_OK;
    if (in_place) {
        seg->size = pos;
        seg->next_offset = offset;
        seg->max_ts = prev_ts;
        rc = log_segment_map(log, seg, log_segment_active_map_bytes(log, pos), err);
    }
    pthread_mutex_unlock(&log->mu);
    FR_TRY(rc);
    if (in_place) {
        if (ftruncate(seg->log_fd, (off_t)pos) != 0 || fdatasync(seg->log_fd) != 0)
            return fr_fail_errno(err, errno, "log %s: truncate segment %020lld", log->name,
                                 (long long)seg->base);
        return log_segment_cut_indexes(log, seg, pos, offset, err);
    }
    log_segment *copy;
    FR_TRY(log_segment_copy_prefix(log, seg, pos, offset, &copy, err));
    copy->max_ts = prev_ts;
    pthread_mutex_lock(&log->mu);
    log->segs[i] = copy;
    seg->deleted = true;
    log_segment_unref_locked(seg);
    pthread_mutex_unlock(&log->mu);
    return FR_OK;
}

int fr_log_truncate(fr_log *log, int64_t offset, fr_error *err)
{
    pthread_mutex_lock(&log->write_mu);
    int rc = FR_OK;
    if (offset >= log->next_offset) goto done;
    if (offset < log->segs[0]->base) {
        rc = fr_fail(err, FR_ERANGE, "log %s: cannot truncate at offset %lld before the start %lld",
                     log->name, (long long)offset, (long long)log->segs[0]->base);
        goto done;
    }
    int i = log->nsegs - 1;
    while (log->segs[i]->base > offset) i--;
    /* A cut at a segment's first offset keeps the (then empty) segment as the active one. */
    int64_t pos = 0, prev_ts = INT64_MIN;
    rc = find_batch_start(log, log->segs[i], offset, &pos, &prev_ts, err);
    if (rc < 0) goto done;
    rc = cut_segment(log, i, pos, offset, prev_ts, err);
    if (rc == 0) rc = log_rebuild_writers(log, err);
    if (rc == 0) rc = fr_fsync_dir(log->dir, err);
    if (rc < 0) {
        pthread_mutex_lock(&log->mu);
        log->failed = rc == FR_ENOSPC ? FR_ENOSPC : FR_EIO;
        pthread_mutex_unlock(&log->mu);
    }
done:
    pthread_mutex_unlock(&log->write_mu);
    return rc;
}
