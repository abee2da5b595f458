/* log_int.h — what the files of the log module share: the byte positions of the record-batch
 * header, the header-only parser, and the in-memory form of a segment and of the log.
 *
 * Locking (see log.c): fr_log.write_mu serializes everything that writes (appends, rolls,
 * truncation, retention); fr_log.mu guards the shared state that readers look at (the
 * segment list, segment sizes and in-memory indexes, the offsets, segment reference counts
 * and the flush state). Lock order: write_mu before mu. Neither is held during an fsync of
 * the group commit, and no lock is held while a reader decodes a batch or runs its callback:
 * a reader holds a reference on the segment it reads instead. */
#ifndef FIRTH_LOG_INT_H
#define FIRTH_LOG_INT_H

#include <pthread.h>
#include <stdatomic.h>

#include "log/log.h"

/* ---- record batch header ---------------------------------------------------------------- */

enum {
    FR_RB_OFF_BASE_OFFSET = 0,
    FR_RB_OFF_COMMIT_TS = 8,
    FR_RB_OFF_LENGTH = 16,
    FR_RB_OFF_CRC = 20,
    FR_RB_OFF_MAGIC = 24,
    FR_RB_OFF_ATTRIBUTES = 25,
    FR_RB_OFF_SCHEMA_ID = 26,
    FR_RB_OFF_LAST_DELTA = 28,
    FR_RB_OFF_RECORD_COUNT = 32,
    FR_RB_OFF_SEQUENCE = 36,
    FR_RB_OFF_WRITER_ID = 40,
    FR_RB_OFF_STATS_LENGTH = 48,
    FR_RB_OFF_RESERVED = 52,
};
/* The CRC covers the bytes from the magic to the end of the batch. */
#define FR_RB_CRC_START FR_RB_OFF_MAGIC

#define FR_RB_ATTR_APPEND_ONLY 0x01u
#define FR_RB_ATTR_COMPRESSION_SHIFT 1
#define FR_RB_ATTR_COMPRESSION_MASK 0x06u
#define FR_RB_ATTR_KNOWN (FR_RB_ATTR_APPEND_ONLY | FR_RB_ATTR_COMPRESSION_MASK)

#define FR_RB_STATS_VERSION 1
/* Statistics flags of one column. */
#define FR_RB_STAT_HAS_MINMAX 0x01u

/* fr_rb_parse_header is declared in log.h. */

/* ---- segments --------------------------------------------------------------------------- */

/* One entry of the offset index (.index): offset relative to the segment's base, and the
 * byte position of the batch with that base offset in the .log file. */
typedef struct log_index_entry {
    uint32_t rel;
    uint32_t pos;
} log_index_entry;
#define LOG_INDEX_ENTRY_BYTES 8

/* One entry of the time index (.timeindex): a batch's commit timestamp and its relative base
 * offset. */
typedef struct log_time_entry {
    int64_t ts;
    uint32_t rel;
} log_time_entry;
#define LOG_TIME_ENTRY_BYTES 12

/* A segment: the three files of one base offset, the read-only mapping of its .log file and
 * its indexes in memory. The log's list holds one reference; a reader or a flusher holds
 * another while it uses the segment, so that retention or truncation can drop the segment
 * from the list (and unlink its files) while it is read: the memory and descriptors go with
 * the last reference. Fields marked (mu) change only under fr_log.mu; the others are fixed
 * once the segment is in the list, except the files, which only the writer touches. */
typedef struct log_segment {
    int64_t base;          /* base offset: the file names */
    int64_t size;          /* (mu) bytes of whole batches in the .log file */
    int64_t next_offset;   /* (mu) the offset after the last batch */
    int64_t max_ts;        /* (mu) commit timestamp of the newest batch; INT64_MIN if empty */
    int log_fd, index_fd, time_fd; /* -1 once sealed (writer; a flusher reads log_fd) */
    const uint8_t *map;    /* read-only shared mapping of the .log file */
    size_t map_len;        /* bytes mapped; never less than size */
    log_index_entry *index; /* (mu) sorted by rel and by pos */
    size_t nindex, index_cap;
    log_time_entry *times;  /* (mu) sorted by rel; ts non-decreasing */
    size_t ntimes, times_cap;
    int64_t index_since;   /* bytes appended since the last offset-index entry (writer) */
    size_t index_written;  /* entries already in the .index file (writer) */
    size_t times_written;  /* entries already in the .timeindex file (writer) */
    bool index_damaged;    /* an index file was torn when opened: recovery rebuilds it */
    int refs;              /* (mu) */
    bool deleted;          /* (mu) dropped from the list */
} log_segment;

/* The state of one idempotent writer: its last sequence and where that batch went. */
typedef struct log_writer_state {
    int64_t writer_id; /* FR_NO_WRITER for an empty slot */
    int32_t seq;
    int64_t base_offset;
} log_writer_state;

struct fr_log {
    char *dir;
    char *name; /* for messages */
    fr_log_options opts;

    pthread_mutex_t write_mu;
    pthread_mutex_t mu;
    pthread_cond_t flush_cond;
    pthread_cond_t seq_cond; /* (write_mu) a writer's sequence moved on, for in-order waits */
    int seq_waiters;         /* (write_mu) appends waiting on seq_cond */

    log_segment **segs; /* (mu) ascending base offsets; the last is the active segment */
    int nsegs, segs_cap;

    int64_t next_offset;    /* (mu) the written end: the offset the next batch gets */
    int64_t visible_offset; /* (mu) readers see batches below this offset */
    int64_t durable_offset; /* (mu) batches below this offset have been fsynced */
    int64_t last_ts;        /* (write_mu) newest commit timestamp given */
    bool flushing;          /* (mu) a flusher is in fdatasync right now */
    log_segment *flush_seg; /* (mu) the segment it syncs, whose files a roll leaves open */
    int failed;             /* (mu) 0, or the FR_E* code of an I/O failure that stops writes */
    int64_t last_flush_ms;  /* (mu) for FR_FLUSH_INTERVAL */
    int64_t truncations;    /* (mu) counts fr_log_truncate calls, for waiting appenders */
    atomic_llong fsync_us;                          /* the segments' fdatasyncs, summed */
    atomic_llong fsync_hist[FR_LOG_FSYNC_BUCKETS]; /* and counted by fr_log_fsync_bounds_us */

    _Atomic(const fr_log_watcher *) watcher; /* fr_log_set_watcher; NULL when none */
    log_writer_state *writers; /* (write_mu) open addressing, capacity a power of two */
    size_t nwriters, writers_cap;
};

/* log.c */
/* Appends seg (taken on success) to log->segs, growing the array. mu held, or the log not
 * shared yet (recovery at open). Errors: FR_ENOMEM, and seg stays the caller's. */
int log_push_segment(fr_log *log, log_segment *seg, fr_error *err);

/* log_segment.c */
int log_segment_create(fr_log *log, int64_t base, log_segment **out, fr_error *err);
int log_segment_open(fr_log *log, int64_t base, log_segment **out, fr_error *err);
void log_segment_unref_locked(log_segment *seg);
/* Sealed segments keep only their mapping and in-memory indexes: their files are closed so
 * that a log of many segments holds three descriptors, not three per segment. The writer
 * reopens them when a truncation makes the segment active again. */
void log_segment_close_files(log_segment *seg);
int log_segment_open_files(fr_log *log, log_segment *seg, fr_error *err);
void log_segment_path(const fr_log *log, int64_t base, const char *ext, char *out, size_t cap);
/* Maps the .log file for reading bytes up to at least `need`. */
int log_segment_map(fr_log *log, log_segment *seg, int64_t need, fr_error *err);
/* The bytes to map for an active segment of `size` bytes: all it may grow to. */
int64_t log_segment_active_map_bytes(const fr_log *log, int64_t size);
/* Replaces a segment whose readers still use its mapping: writes its first `size` bytes to a
 * new file that takes the segment's name, and opens that as *out (indexes filtered). */
int log_segment_copy_prefix(fr_log *log, log_segment *old, int64_t size, int64_t next_offset,
                            log_segment **out, fr_error *err);
/* Drops index entries at or past byte `size` / offset `next_offset` and rewrites the files. */
int log_segment_cut_indexes(fr_log *log, log_segment *seg, int64_t size, int64_t next_offset,
                            fr_error *err);
/* Byte position of the indexed batch at or before offset (0 when none). Under mu. */
int64_t log_segment_lookup(const log_segment *seg, int64_t offset);
/* Relative offset to start a time search from: the last time entry older than ts. */
int64_t log_segment_time_lookup(const log_segment *seg, int64_t ts);
/* Adds index entries for a batch just written at pos (writer; takes mu for the memory). */
int log_segment_note_batch(fr_log *log, log_segment *seg, int64_t pos, const fr_rb_view *v,
                           bool write_files, fr_error *err);
/* Rewrites both index files from the in-memory entries. */
int log_segment_write_indexes(fr_log *log, log_segment *seg, fr_error *err);
/* Appends to the index files the entries not yet in them (writer). The entries of appended
 * batches are written a few dozen at a time, not two small writes per append: before a
 * segment is sealed or closed this writes the rest, and after a crash recovery adds the
 * entries of the batches past the last one written (log_recover.c). A failed write is a
 * warning: the files are checked and rebuilt at open. */
void log_segment_write_pending(fr_log *log, log_segment *seg);
/* Recovers every segment at open (see log_recover.c). */
int log_recover(fr_log *log, fr_error *err);
/* Forgets and rebuilds the idempotent writers' states from the batch headers. */
int log_rebuild_writers(fr_log *log, fr_error *err);
int log_writer_note(fr_log *log, int64_t writer_id, int32_t seq, int64_t base, fr_error *err);
log_writer_state *log_writer_find(fr_log *log, int64_t writer_id);
/* Unlinks a segment's files. */
void log_segment_unlink(fr_log *log, log_segment *seg);

#endif
