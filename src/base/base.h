/* base.h — the ground floor every module stands on: status codes and error messages,
 * allocation (with fault injection for tests), growable buffers, arenas, CRC-32C, varints,
 * murmur3, clocks, logging, durable file helpers and the flat `key: value` config format.
 *
 * Conventions kept everywhere above this layer: a function returns 0 or a negative FR_E*
 * code and, on failure, fills the caller's fr_error with a message that says what went wrong
 * and where. Nothing here keeps global state except the allocator's fault-injection counter
 * and the logger's level. */
#ifndef FIRTH_BASE_H
#define FIRTH_BASE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* ---- status codes ---------------------------------------------------------------------- */

enum {
    FR_OK = 0,
    FR_EINVAL = -1,    /* bad argument or bad input from a user */
    FR_ENOMEM = -2,    /* allocation failed */
    FR_EIO = -3,       /* the operating system reported an I/O error */
    FR_ENOSPC = -4,    /* no space left on the device */
    FR_ECORRUPT = -5,  /* bytes that fail a check: CRC, length, magic, structure */
    FR_ENOTFOUND = -6, /* a named object does not exist */
    FR_EEXIST = -7,    /* a named object exists already */
    FR_ERANGE = -8,    /* a value or offset outside its allowed range */
    FR_ELIMIT = -9,    /* a configured limit was exceeded */
    FR_EUNSUPPORTED = -10, /* valid input that this version does not handle */
    FR_ESYNTAX = -11,  /* a SQL or expression syntax error */
    FR_ETYPE = -12,    /* a value of the wrong type */
    FR_ESTATE = -13,   /* the object is closed or in the wrong state */
    FR_EDUPLICATE = -14, /* an idempotent retry that was already applied */
    FR_ESEQUENCE = -15, /* a writer's batch arrived before the one it follows: send that one
                         * first (nothing was written) */
};

#define FR_ERROR_MSG_MAX 256

/* The caller owns an fr_error and passes it down; the callee fills it on failure. */
typedef struct fr_error {
    int code;
    char msg[FR_ERROR_MSG_MAX];
} fr_error;

/* Sets err (may be NULL) and returns code, so that `return fr_fail(err, FR_EINVAL, ...)`. */
int fr_fail(fr_error *err, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Sets err from errno with a prefix: "open /x/y: No such file or directory". Maps ENOSPC to
 * FR_ENOSPC, ENOENT to FR_ENOTFOUND, EEXIST to FR_EEXIST, the rest to FR_EIO. */
int fr_fail_errno(fr_error *err, int errnum, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Prepends context to an error message already set: "table db.t: <old message>". */
int fr_error_wrap(fr_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void fr_error_clear(fr_error *err);
/* A short name of a code: "EINVAL". */
const char *fr_strcode(int code);

/* Returns from the enclosing function when expr fails (the callee has filled err). */
#define FR_TRY(expr)                                                                         \
    do {                                                                                     \
        int fr_try_rc_ = (expr);                                                             \
        if (fr_try_rc_ < 0) return fr_try_rc_;                                               \
    } while (0)
/* Fails with code and a message when cond does not hold. */
#define FR_CHECK(cond, code, err, ...)                                                       \
    do {                                                                                     \
        if (!(cond)) return fr_fail((err), (code), __VA_ARGS__);                             \
    } while (0)
/* Inside a function with `int rc` and a `fail:` label: jumps to fail when expr fails. */
#define FR_GOTO(expr)                                                                        \
    do {                                                                                     \
        rc = (expr);                                                                         \
        if (rc < 0) goto fail;                                                               \
    } while (0)

/* ---- memory ---------------------------------------------------------------------------- */

/* Every allocation in firth goes through these so that tests can fail the N-th one.
 * fr_malloc and friends return NULL on failure (never abort). fr_free(NULL) is a no-op. */
void *fr_malloc(size_t n);
void *fr_calloc(size_t count, size_t size);
void *fr_realloc(void *p, size_t n);
void fr_free(void *p);
char *fr_strdup(const char *s);
char *fr_strndup(const char *s, size_t n);
/* Tests: make the calling thread's n-th allocation from now fail (0 turns injection off);
 * other threads' allocations are not counted. */
void fr_alloc_fail_after(long n);
/* For a program that moves large buffers at a high rate (the server, the command): asks the
 * C library's allocator to serve blocks of up to 32 MiB from its heaps and to keep up to
 * 128 MiB freed at the top of a heap for the next blocks, instead of mapping
 * each large block afresh and giving it back when freed. Every page of a fresh mapping
 * costs a page fault when first written, and on virtual machines a fault can cost more than
 * ten microseconds: a 4 MiB fetch response then spends over ten milliseconds faulting.
 * Leaves the allocator alone when GLIBC_TUNABLES names any malloc tunable (the user's
 * settings win), and does nothing with a C library other than glibc. Call it before any
 * thread starts; libraries never call it. */
void fr_alloc_tune_for_throughput(void);

/* A growable byte buffer. The buffer owns data; fr_buf_free releases it. */
typedef struct fr_buf {
    uint8_t *data;
    size_t len;
    size_t cap;
} fr_buf;

void fr_buf_init(fr_buf *b);
void fr_buf_free(fr_buf *b);
void fr_buf_reset(fr_buf *b); /* len = 0, keeps the memory */
int fr_buf_reserve(fr_buf *b, size_t extra, fr_error *err);
int fr_buf_append(fr_buf *b, const void *p, size_t n, fr_error *err);
int fr_buf_append_zeros(fr_buf *b, size_t n, fr_error *err);
int fr_buf_printf(fr_buf *b, fr_error *err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Pads with zero bytes to a multiple of align (a power of two). */
int fr_buf_pad(fr_buf *b, size_t align, fr_error *err);
/* Hands the memory to the caller (who frees it with fr_free) and empties b. */
uint8_t *fr_buf_steal(fr_buf *b, size_t *len);

/* Buffers kept for reuse. A caller that encodes about the same amount on every call (a
 * client's requests) takes an empty buffer and gives it back: the next call writes into
 * memory already mapped, where a fresh buffer of a megabyte or so, mapped anew and given
 * back to the kernel when freed, costs a page fault per 4 KiB on every call. The pool keeps
 * at most `keep_bytes` of capacity and FR_BUFPOOL_SLOTS buffers; a buffer given back beyond
 * that is freed. NULL is a valid pool that keeps nothing. Thread-safe. */
#define FR_BUFPOOL_SLOTS 16
typedef struct fr_bufpool fr_bufpool;
fr_bufpool *fr_bufpool_new(size_t keep_bytes); /* NULL when out of memory */
void fr_bufpool_free(fr_bufpool *p);
void fr_bufpool_take(fr_bufpool *p, fr_buf *out); /* out: empty, the largest kept, if any */
void fr_bufpool_give(fr_bufpool *p, fr_buf *b);   /* b is empty afterwards */
size_t fr_bufpool_kept_bytes(fr_bufpool *p);      /* the capacity held now */

/* An arena: many allocations freed in one call. Memory is 16-byte aligned. */
typedef struct fr_arena fr_arena;
fr_arena *fr_arena_new(size_t block_bytes);
void *fr_arena_alloc(fr_arena *a, size_t n); /* NULL on failure */
char *fr_arena_strndup(fr_arena *a, const char *s, size_t n);
void fr_arena_free(fr_arena *a);

/* ---- checksums, hashes, varints, little-endian access ----------------------------------- */

/* CRC-32C (Castagnoli), as Kafka and Fluss use for record batches. Start with crc = 0. */
uint32_t fr_crc32c(uint32_t crc, const void *data, size_t n);
/* MurmurHash3 x86_32, as Fluss hashes bucket keys. */
uint32_t fr_murmur3_32(const void *data, size_t n, uint32_t seed);

/* Unsigned LEB128 varints. Decode returns bytes consumed, or 0 when input is short or the
 * varint is longer than 10 bytes. */
size_t fr_varint_put(uint8_t *out, uint64_t v); /* out needs 10 bytes */
size_t fr_varint_get(const uint8_t *p, size_t n, uint64_t *v);
static inline uint64_t fr_zigzag_enc(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }
static inline int64_t fr_zigzag_dec(uint64_t v) { return (int64_t)(v >> 1) ^ -(int64_t)(v & 1); }

static inline uint16_t fr_get_u16le(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return v; }
static inline uint32_t fr_get_u32le(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static inline uint64_t fr_get_u64le(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }
static inline void fr_put_u16le(uint8_t *p, uint16_t v) { memcpy(p, &v, 2); }
static inline void fr_put_u32le(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static inline void fr_put_u64le(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "firth's formats assume a little-endian host");

/* ---- clocks ---------------------------------------------------------------------------- */

int64_t fr_now_ms(void);        /* wall clock, milliseconds since the Unix epoch */
int64_t fr_monotonic_ns(void);  /* monotonic clock, nanoseconds */

/* ---- logging --------------------------------------------------------------------------- */

typedef enum { FR_LOG_DEBUG, FR_LOG_INFO, FR_LOG_WARN, FR_LOG_ERROR, FR_LOG_OFF } fr_log_level;

/* Writes "2026-11-30T12:00:00.123Z WARN  message" to stderr when level is enabled.
 * Thread: any. */
void fr_logmsg(fr_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void fr_log_set_level(fr_log_level level);
/* The level used until fr_log_set_level is called when FIRTH_LOG_LEVEL does not name one
 * (INFO unless this is called). The level is decided at the first line logged, so a
 * program calls this before it logs anything. */
void fr_log_set_default_level(fr_log_level level);
/* Parses "debug", "info", "warn", "error", "off". */
int fr_log_level_parse(const char *s, fr_log_level *out);
#define FR_DEBUG(...) fr_logmsg(FR_LOG_DEBUG, __VA_ARGS__)
#define FR_INFO(...) fr_logmsg(FR_LOG_INFO, __VA_ARGS__)
#define FR_WARN(...) fr_logmsg(FR_LOG_WARN, __VA_ARGS__)
#define FR_ERROR(...) fr_logmsg(FR_LOG_ERROR, __VA_ARGS__)

/* ---- files ----------------------------------------------------------------------------- */

/* Creates a directory and its parents (mode 0755). Existing directories are fine. */
int fr_mkdirs(const char *path, fr_error *err);
/* Writes data to path atomically and durably: temp file, fsync, rename, fsync the
 * directory. A crash leaves either the old or the new content, never a mix. */
int fr_write_file_atomic(const char *path, const void *data, size_t n, fr_error *err);
/* Reads a whole file of at most max_bytes. *out is owned by the caller (fr_free). */
int fr_read_file(const char *path, size_t max_bytes, uint8_t **out, size_t *len, fr_error *err);
int fr_fsync_dir(const char *dir, fr_error *err);
struct iovec;
/* After a writev or sendmsg of *n pieces that wrote `done` bytes: *iov and *n move past the
 * pieces written whole, and a piece written in part keeps only its rest. */
void fr_iov_advance(struct iovec **iov, int *n, size_t done);
/* Removes a directory tree. A missing path is fine. */
int fr_remove_tree(const char *path, fr_error *err);
bool fr_path_exists(const char *path);

/* ---- parsing helpers ------------------------------------------------------------------- */

/* Strict integer parse: the whole string, in range, no trailing bytes. */
int fr_parse_i64(const char *s, int64_t *out, fr_error *err);
/* Durations "500ms", "30s", "10min", "2h", "7d" (and "7 d", "7days"); a bare number is
 * milliseconds. */
int fr_parse_duration_ms(const char *s, int64_t *out, fr_error *err);
/* Sizes "1024", "64kb", "1 mb", "2gb" (binary units) to bytes. */
int fr_parse_bytes(const char *s, int64_t *out, fr_error *err);

/* ---- flat configuration: `key: value` lines, '#' comments ------------------------------- */

typedef struct fr_config fr_config;
fr_config *fr_config_new(void);
void fr_config_free(fr_config *c);
/* Parses the text of a config file; later keys override earlier ones. Errors name the line. */
int fr_config_parse(fr_config *c, const char *text, size_t len, const char *origin, fr_error *err);
int fr_config_set(fr_config *c, const char *key, const char *value, fr_error *err);
/* Returns the value or NULL. The pointer lives until the key is set again or c is freed. */
const char *fr_config_get(const fr_config *c, const char *key);
size_t fr_config_count(const fr_config *c);
/* The i-th entry in insertion order. */
void fr_config_entry(const fr_config *c, size_t i, const char **key, const char **value);

#endif
